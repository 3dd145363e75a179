//! The node lifecycle controller, as upstream's `pkg/controller/nodelifecycle` with its
//! taint manager:
//!
//! - health: a node whose kubelet neither posted status nor renewed its Lease within the
//!   grace period (measured on this controller's clock from when it last saw either
//!   change) gets every condition `Unknown` ("Kubelet stopped posting node status.") and
//!   its pods are marked not Ready;
//! - NoSchedule taints follow the conditions (`not-ready`, `unreachable`,
//!   `memory-pressure`, `disk-pressure`, `pid-pressure`, `network-unavailable`) and
//!   `spec.unschedulable` (`unschedulable`), so a node that became Ready loses the
//!   `not-ready` taint `TaintNodesByCondition` put on it at registration;
//! - NoExecute taints `not-ready` / `unreachable` while Ready is False / Unknown, and the
//!   taint manager evicts the pods that do not tolerate them, at once or after their
//!   `tolerationSeconds`.
//!
//! The decisions are pure functions; [`run_node_lifecycle`] carries them out.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, NodeCondition, Pod, Taint, Toleration};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::runtime::reflector::ObjectRef;
use serde_json::json;

use crate::cachedpod::CachedPod;
use crate::informers::Informer;

pub const NOT_READY: &str = "node.kubernetes.io/not-ready";
pub const UNREACHABLE: &str = "node.kubernetes.io/unreachable";
pub const UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";
pub const MEMORY_PRESSURE: &str = "node.kubernetes.io/memory-pressure";
pub const DISK_PRESSURE: &str = "node.kubernetes.io/disk-pressure";
pub const PID_PRESSURE: &str = "node.kubernetes.io/pid-pressure";
pub const NETWORK_UNAVAILABLE: &str = "node.kubernetes.io/network-unavailable";

/// The taint keys this controller owns.
const MANAGED: &[&str] = &[
    NOT_READY,
    UNREACHABLE,
    UNSCHEDULABLE,
    MEMORY_PRESSURE,
    DISK_PRESSURE,
    PID_PRESSURE,
    NETWORK_UNAVAILABLE,
];

/// The controller's timing (upstream's flags).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// `--node-monitor-period`.
    pub monitor_period: Duration,
    /// `--node-monitor-grace-period` (upstream 1.33: 50 s).
    pub grace_period: Duration,
    /// How long a node that never posted status is given after it appears.
    pub startup_grace_period: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            monitor_period: Duration::from_secs(5),
            grace_period: Duration::from_secs(50),
            startup_grace_period: Duration::from_secs(60),
        }
    }
}

fn condition<'a>(node: &'a Node, kind: &str) -> Option<&'a NodeCondition> {
    node.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == kind)
}

fn taint(key: &str, effect: &str) -> Taint {
    Taint {
        key: key.into(),
        effect: effect.into(),
        value: None,
        time_added: None,
    }
}

/// The NoSchedule taints the node's conditions and schedulability call for.
pub fn desired_no_schedule(node: &Node) -> Vec<Taint> {
    let mut out = Vec::new();
    match condition(node, "Ready").map(|c| c.status.as_str()) {
        Some("False") => out.push(taint(NOT_READY, "NoSchedule")),
        Some("Unknown") => out.push(taint(UNREACHABLE, "NoSchedule")),
        // No status yet: the registration taint stays until the kubelet reports.
        None => out.extend(
            node.spec
                .iter()
                .flat_map(|s| s.taints.iter().flatten())
                .filter(|t| {
                    t.effect == "NoSchedule" && (t.key == NOT_READY || t.key == UNREACHABLE)
                })
                .cloned(),
        ),
        _ => {}
    }
    for (kind, key) in [
        ("MemoryPressure", MEMORY_PRESSURE),
        ("DiskPressure", DISK_PRESSURE),
        ("PIDPressure", PID_PRESSURE),
        ("NetworkUnavailable", NETWORK_UNAVAILABLE),
    ] {
        if condition(node, kind).is_some_and(|c| c.status == "True") {
            out.push(taint(key, "NoSchedule"));
        }
    }
    if node.spec.as_ref().and_then(|s| s.unschedulable) == Some(true) {
        out.push(taint(UNSCHEDULABLE, "NoSchedule"));
    }
    out
}

/// The NoExecute taint Ready calls for.
pub fn desired_no_execute(node: &Node) -> Option<Taint> {
    match condition(node, "Ready").map(|c| c.status.as_str()) {
        Some("False") => Some(taint(NOT_READY, "NoExecute")),
        Some("Unknown") => Some(taint(UNREACHABLE, "NoExecute")),
        _ => None,
    }
}

/// The node's taints with the managed ones made to match the conditions (`None`: no
/// change). Taints that stay keep their `timeAdded`; new NoExecute taints get `now`.
pub fn reconcile_taints(node: &Node, now: Timestamp) -> Option<Vec<Taint>> {
    let current: Vec<Taint> = node
        .spec
        .as_ref()
        .and_then(|s| s.taints.clone())
        .unwrap_or_default();
    let mut wanted = desired_no_schedule(node);
    wanted.extend(desired_no_execute(node));
    let managed = |t: &Taint| {
        MANAGED.contains(&t.key.as_str()) && matches!(t.effect.as_str(), "NoSchedule" | "NoExecute")
    };
    let same = |a: &Taint, b: &Taint| a.key == b.key && a.effect == b.effect;
    let mut out: Vec<Taint> = current
        .iter()
        .filter(|t| !managed(t) || wanted.iter().any(|w| same(w, t)))
        .cloned()
        .collect();
    for w in wanted {
        if !out.iter().any(|t| same(t, &w)) {
            let mut t = w;
            if t.effect == "NoExecute" {
                t.time_added = Some(Time(now));
            }
            out.push(t);
        }
    }
    let unchanged =
        out.len() == current.len() && out.iter().all(|t| current.iter().any(|c| same(c, t)));
    (!unchanged).then_some(out)
}

/// The conditions a silent node gets: each of the kubelet's conditions `Unknown`.
pub fn unknown_conditions(node: &Node, now: Timestamp) -> Option<Vec<NodeCondition>> {
    let mut conditions = node
        .status
        .as_ref()
        .and_then(|s| s.conditions.clone())
        .unwrap_or_default();
    let mut changed = false;
    for kind in ["Ready", "MemoryPressure", "DiskPressure", "PIDPressure"] {
        match conditions.iter_mut().find(|c| c.type_ == kind) {
            Some(c) => {
                if c.status != "Unknown" {
                    c.status = "Unknown".into();
                    c.reason = Some("NodeStatusUnknown".into());
                    c.message = Some("Kubelet stopped posting node status.".into());
                    c.last_transition_time = Some(Time(now));
                    changed = true;
                }
            }
            None => {
                conditions.push(NodeCondition {
                    type_: kind.into(),
                    status: "Unknown".into(),
                    reason: Some("NodeStatusNeverUpdated".into()),
                    message: Some("Kubelet never posted node status.".into()),
                    last_heartbeat_time: Some(Time(now)),
                    last_transition_time: Some(Time(now)),
                });
                changed = true;
            }
        }
    }
    changed.then_some(conditions)
}

fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    if t.effect
        .as_deref()
        .is_some_and(|e| !e.is_empty() && e != taint.effect)
    {
        return false;
    }
    if t.key
        .as_deref()
        .is_some_and(|k| !k.is_empty() && k != taint.key)
    {
        return false;
    }
    match t.operator.as_deref() {
        Some("Exists") => true,
        _ => t.value.as_deref().unwrap_or_default() == taint.value.as_deref().unwrap_or_default(),
    }
}

/// When a pod on a node with these NoExecute taints must be evicted, counted from the
/// taints' `timeAdded`: `Some(ZERO)` at once, `Some(d)` after `d`, `None` never (as the
/// taint manager's `getMinTolerationTime`).
pub fn eviction_delay(tolerations: &[Toleration], taints: &[Taint]) -> Option<Duration> {
    let no_execute: Vec<&Taint> = taints.iter().filter(|t| t.effect == "NoExecute").collect();
    if no_execute.is_empty() {
        return None;
    }
    let mut min: Option<Duration> = None;
    for t in no_execute {
        let used: Vec<&Toleration> = tolerations.iter().filter(|tol| tolerates(tol, t)).collect();
        if used.is_empty() {
            return Some(Duration::ZERO);
        }
        for tol in used {
            if let Some(s) = tol.toleration_seconds {
                let d = Duration::from_secs(u64::try_from(s.max(0)).unwrap_or(0));
                min = Some(min.map_or(d, |m| m.min(d)));
            }
        }
    }
    min
}

/// What the controller last saw of a node's heartbeats, on its own clock.
#[derive(Clone, Debug)]
struct Health {
    heartbeat: Option<Timestamp>,
    lease_renew: Option<Timestamp>,
    probed: Instant,
}

/// Runs the node lifecycle controller until the process ends.
pub async fn run_node_lifecycle(
    nodes: Arc<Informer<Node>>,
    pods: Arc<Informer<CachedPod>>,
    leases: Arc<Informer<Lease>>,
    writer: Client,
    options: Options,
) {
    nodes.synced().await;
    leases.synced().await;
    pods.synced().await;
    let started = Instant::now();
    let mut health: HashMap<String, Health> = HashMap::new();
    let mut marked_not_ready: HashSet<String> = HashSet::new();
    let mut tick = tokio::time::interval(options.monitor_period.min(Duration::from_secs(1)));
    let mut last_monitor = Instant::now() - options.monitor_period;
    loop {
        tick.tick().await;
        let now = Instant::now();
        let ts = Timestamp::now();
        let monitor = now.duration_since(last_monitor) >= options.monitor_period;
        if monitor {
            last_monitor = now;
        }
        let mut tainted: HashMap<String, Vec<Taint>> = HashMap::new();
        for node in nodes.store.state() {
            let name = node.metadata.name.clone().unwrap_or_default();
            if monitor {
                let heartbeat = condition(&node, "Ready")
                    .and_then(|c| c.last_heartbeat_time.as_ref())
                    .map(|t| t.0);
                let lease_renew = leases
                    .store
                    .get(&ObjectRef::new(&name).within("kube-node-lease"))
                    .and_then(|l| l.spec.as_ref()?.renew_time.as_ref().map(|t| t.0));
                let h = health.entry(name.clone()).or_insert(Health {
                    heartbeat,
                    lease_renew,
                    probed: now,
                });
                if h.heartbeat != heartbeat || h.lease_renew != lease_renew {
                    h.heartbeat = heartbeat;
                    h.lease_renew = lease_renew;
                    h.probed = now;
                }
                let grace = if heartbeat.is_none() {
                    options.startup_grace_period
                } else {
                    options.grace_period
                };
                let silent = now.duration_since(h.probed.max(started)) > grace;
                if silent && let Some(conditions) = unknown_conditions(&node, ts) {
                    tracing::info!(node = %name, "node stopped posting status; conditions set to Unknown");
                    let api: Api<Node> = Api::all(writer.clone());
                    let patch = json!({"status": {"conditions": conditions}});
                    if let Err(e) = api
                        .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
                        .await
                    {
                        tracing::info!(node = %name, error = %e, "could not mark the node Unknown");
                    }
                    continue;
                }
            }
            if let Some(taints) = reconcile_taints(&node, ts) {
                let api: Api<Node> = Api::all(writer.clone());
                let patch = json!({"metadata": {"resourceVersion": node.metadata.resource_version},
                    "spec": {"taints": taints}});
                match api
                    .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => tracing::debug!(node = %name, "node taints updated"),
                    Err(e) => {
                        tracing::debug!(node = %name, error = %e, "node taints not updated; retrying")
                    }
                }
            }
            let taints = node
                .spec
                .as_ref()
                .and_then(|s| s.taints.clone())
                .unwrap_or_default();
            if taints.iter().any(|t| t.effect == "NoExecute") {
                tainted.insert(name.clone(), taints);
            }
            let ready = condition(&node, "Ready").map(|c| c.status.as_str());
            if ready == Some("Unknown") {
                if marked_not_ready.insert(name.clone()) {
                    mark_pods_not_ready(&pods, &writer, &name).await;
                }
            } else {
                marked_not_ready.remove(&name);
            }
        }
        let known: HashSet<String> = nodes
            .store
            .state()
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        health.retain(|k, _| known.contains(k));
        if !tainted.is_empty() {
            evict(&pods, &writer, &tainted, ts).await;
        }
    }
}

/// Sets `Ready=False` on the pods of a node that went silent (upstream's
/// `MarkPodsNotReady`).
async fn mark_pods_not_ready(pods: &Informer<CachedPod>, writer: &Client, node: &str) {
    for pod in pods.by_index("node", node) {
        if pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) != Some(node) {
            continue;
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        let api: Api<Pod> = Api::namespaced(writer.clone(), &ns);
        let patch = json!({"status": {"conditions": [{"type": "Ready", "status": "False",
            "lastTransitionTime": Timestamp::now().to_string()}]}});
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            tracing::debug!(pod = %name, error = %e, "could not mark the pod not ready");
        }
    }
}

/// The taint manager: deletes the pods that do not tolerate their node's NoExecute
/// taints (long enough).
async fn evict(
    pods: &Informer<CachedPod>,
    writer: &Client,
    tainted: &HashMap<String, Vec<Taint>>,
    now: Timestamp,
) {
    // Only the pods of tainted nodes (the informer's node index).
    let on_tainted = tainted.keys().flat_map(|node| pods.by_index("node", node));
    for pod in on_tainted {
        let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_deref()) else {
            continue;
        };
        let Some(taints) = tainted.get(node) else {
            continue;
        };
        if pod.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let tolerations = pod
            .spec
            .as_ref()
            .and_then(|s| s.tolerations.clone())
            .unwrap_or_default();
        let Some(delay) = eviction_delay(&tolerations, taints) else {
            continue;
        };
        let since = taints
            .iter()
            .filter(|t| t.effect == "NoExecute")
            .filter_map(|t| t.time_added.as_ref().map(|t| t.0))
            .min()
            .unwrap_or(now);
        let due = since
            .checked_add(jiff::SignedDuration::try_from(delay).unwrap_or_default())
            .unwrap_or(since);
        if due > now {
            continue;
        }
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let name = pod.metadata.name.clone().unwrap_or_default();
        tracing::info!(pod = %format!("{ns}/{name}"), node, "taint manager: evicting the pod");
        let api: Api<Pod> = Api::namespaced(writer.clone(), &ns);
        let dp = DeleteParams {
            preconditions: Some(Preconditions {
                uid: pod.metadata.uid.clone(),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        if let Err(e) = api.delete(&name, &dp).await {
            tracing::debug!(pod = %name, error = %e, "eviction failed; retrying");
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn node(v: serde_json::Value) -> Node {
        serde_json::from_value(v).unwrap()
    }

    fn with_ready(status: &str, taints: serde_json::Value) -> Node {
        node(
            json!({"metadata": {"name": "n"}, "spec": {"taints": taints},
            "status": {"conditions": [{"type": "Ready", "status": status}]}}),
        )
    }

    fn keys(t: &[Taint]) -> Vec<String> {
        let mut k: Vec<String> = t
            .iter()
            .map(|t| format!("{}:{}", t.key, t.effect))
            .collect();
        k.sort();
        k
    }

    #[test]
    fn a_ready_node_loses_the_registration_taint() {
        let n = with_ready(
            "True",
            json!([{"key": NOT_READY, "effect": "NoSchedule"},
            {"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        );
        let t = reconcile_taints(&n, Timestamp::now()).unwrap();
        assert_eq!(keys(&t), ["dedicated:NoSchedule"]);
        let settled = with_ready(
            "True",
            json!([{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]),
        );
        assert!(reconcile_taints(&settled, Timestamp::now()).is_none());
    }

    #[test]
    fn unready_and_unknown_nodes_get_both_effects() {
        let now = Timestamp::now();
        let t = reconcile_taints(&with_ready("False", json!([])), now).unwrap();
        assert_eq!(
            keys(&t),
            [
                format!("{NOT_READY}:NoExecute"),
                format!("{NOT_READY}:NoSchedule")
            ]
        );
        assert!(
            t.iter()
                .any(|t| t.effect == "NoExecute" && t.time_added.is_some())
        );
        let t = reconcile_taints(&with_ready("Unknown", json!([])), now).unwrap();
        assert_eq!(
            keys(&t),
            [
                format!("{UNREACHABLE}:NoExecute"),
                format!("{UNREACHABLE}:NoSchedule")
            ]
        );
    }

    #[test]
    fn a_node_without_status_keeps_its_registration_taint() {
        let n = node(json!({"metadata": {"name": "n"},
            "spec": {"taints": [{"key": NOT_READY, "effect": "NoSchedule"}]}}));
        assert!(reconcile_taints(&n, Timestamp::now()).is_none());
    }

    #[test]
    fn pressure_and_cordon_taints() {
        let n = node(
            json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"},
                {"type": "DiskPressure", "status": "True"}]}}),
        );
        let t = reconcile_taints(&n, Timestamp::now()).unwrap();
        assert_eq!(
            keys(&t),
            [
                format!("{DISK_PRESSURE}:NoSchedule"),
                format!("{UNSCHEDULABLE}:NoSchedule")
            ]
        );
    }

    #[test]
    fn silent_nodes_get_unknown_conditions() {
        let n = with_ready("True", json!([]));
        let c = unknown_conditions(&n, Timestamp::now()).unwrap();
        let ready = c.iter().find(|c| c.type_ == "Ready").unwrap();
        assert_eq!(ready.status, "Unknown");
        assert_eq!(ready.reason.as_deref(), Some("NodeStatusUnknown"));
        let missing = c.iter().find(|c| c.type_ == "MemoryPressure").unwrap();
        assert_eq!(missing.reason.as_deref(), Some("NodeStatusNeverUpdated"));
        let mut again = n.clone();
        again.status.as_mut().unwrap().conditions = Some(c);
        assert!(unknown_conditions(&again, Timestamp::now()).is_none());
    }

    #[test]
    fn eviction_honours_toleration_seconds() {
        let taints = vec![taint(UNREACHABLE, "NoExecute")];
        assert_eq!(eviction_delay(&[], &taints), Some(Duration::ZERO));
        let tol = |secs: Option<i64>| Toleration {
            key: Some(UNREACHABLE.into()),
            operator: Some("Exists".into()),
            effect: Some("NoExecute".into()),
            toleration_seconds: secs,
            value: None,
        };
        assert_eq!(
            eviction_delay(&[tol(Some(300))], &taints),
            Some(Duration::from_secs(300))
        );
        assert_eq!(
            eviction_delay(&[tol(Some(300)), tol(Some(5))], &taints),
            Some(Duration::from_secs(5))
        );
        assert_eq!(eviction_delay(&[tol(None)], &taints), None);
        assert_eq!(
            eviction_delay(&[], &[taint(UNREACHABLE, "NoSchedule")]),
            None
        );
    }
}
