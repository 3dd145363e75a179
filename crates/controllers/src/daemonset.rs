//! The DaemonSet controller (upstream's `pkg/controller/daemon`): the pure logic over a
//! DaemonSet, the nodes and its pods and revisions, then the loop that feeds it from the
//! shared informers and carries its actions out as the `daemon-set-controller` service
//! account.
//!
//! - [`should_run`]: upstream's `NodeShouldRunDaemonPod` (template `nodeName`, node
//!   selector and required node affinity, taints against the pod's tolerations plus the
//!   ones every daemon pod gets);
//! - [`manage`]: pods to create (one per node that should run one and has none) and to
//!   delete (on nodes that should not run one, failed pods with a back-off, succeeded
//!   pods, all but the oldest when there are several, unscheduled pods of vanished
//!   nodes);
//! - [`rolling_update`]: the `RollingUpdate` strategy with `maxUnavailable` (old pods
//!   deleted within the budget) or `maxSurge` (new pods created beside old ones, which go
//!   once the new one is available);
//! - [`new_pod`]: the pod for a node (the template with the daemon tolerations, the
//!   `controller-revision-hash` and `pod-template-generation` labels, a required node
//!   affinity `metadata.name In [node]`, the DaemonSet as controller);
//! - [`construct_history`] / [`snapshot`] / [`cleanup_history`]: ControllerRevisions
//!   `<name>-<hash>` holding the template, for `kubectl rollout history|undo`;
//! - [`status`]: the counts of the status.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{ControllerRevision, DaemonSet};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, Recorder};
use runtime::expectations::Expectations;
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::cachedpod::CachedPod;
use crate::history;
use crate::informers::{self, Informer, Next, Observed};
use crate::pods::{self, PodView};
use crate::util::{api_message, claimable, lock};

/// Upstream's `BurstReplicas` of the DaemonSet controller.
pub const BURST_REPLICAS: usize = 250;
/// Upstream's `DefaultDaemonSetUniqueLabelKey` (`ControllerRevisionHashLabelKey`).
pub const REVISION_LABEL: &str = "controller-revision-hash";
/// Upstream's `DaemonSetTemplateGenerationKey` (deprecated, still set).
pub const GENERATION_LABEL: &str = "pod-template-generation";
/// Upstream's `DeprecatedTemplateGeneration` annotation, kept by the API server.
pub const GENERATION_ANNOTATION: &str = "deprecated.daemonset.template.generation";

/// Failed-pod deletion back-off: upstream's `flowcontrol.NewBackOff(1s, 15min)`.
const BACKOFF_INITIAL_MS: i64 = 1_000;
const BACKOFF_MAX_MS: i64 = 15 * 60 * 1_000;

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

fn labels_of(obj: &Value) -> &Value {
    &obj["metadata"]["labels"]
}

// ---------------------------------------------------------------------------------------
// Node fitness

/// `ToleratesTaint`.
pub fn tolerates(t: &Value, taint: &Value) -> bool {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let (t_effect, t_key) = (s(&t["effect"]), s(&t["key"]));
    if !t_effect.is_empty() && t_effect != s(&taint["effect"]) {
        return false;
    }
    if !t_key.is_empty() && t_key != s(&taint["key"]) {
        return false;
    }
    match t["operator"].as_str().unwrap_or_default() {
        "" | "Equal" => s(&t["value"]) == s(&taint["value"]),
        "Exists" => true,
        _ => false,
    }
}

/// Whether some taint with an effect `effects` accepts is not tolerated
/// (`FindMatchingUntoleratedTaint`).
fn has_untolerated(taints: &Value, tolerations: &Value, effects: &[&str]) -> bool {
    let tolerations: &[Value] = tolerations.as_array().map_or(&[], Vec::as_slice);
    taints
        .as_array()
        .into_iter()
        .flatten()
        .filter(|t| effects.contains(&t["effect"].as_str().unwrap_or_default()))
        .any(|taint| !tolerations.iter().any(|t| tolerates(t, taint)))
}

/// `AddOrUpdateTolerationInPodSpec`: replaces a toleration with the same key, operator,
/// value and effect, else appends.
fn add_or_update_toleration(spec: &mut Value, toleration: Value) {
    let same = |a: &Value, b: &Value| {
        ["key", "operator", "value", "effect"]
            .iter()
            .all(|k| a[*k].as_str().unwrap_or_default() == b[*k].as_str().unwrap_or_default())
    };
    let mut list: Vec<Value> = spec["tolerations"].as_array().cloned().unwrap_or_default();
    let mut updated = false;
    for t in &mut list {
        if same(t, &toleration) {
            if *t == toleration {
                return;
            }
            *t = toleration.clone();
            updated = true;
        }
    }
    if !updated {
        list.push(toleration);
    }
    spec["tolerations"] = Value::Array(list);
}

/// `AddOrUpdateDaemonPodTolerations`: daemon pods survive not-ready and unreachable
/// nodes and ignore the pressure, unschedulable and (with host networking)
/// network-unavailable taints.
pub fn add_daemon_tolerations(spec: &mut Value) {
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        add_or_update_toleration(
            spec,
            json!({"key": key, "operator": "Exists", "effect": "NoExecute"}),
        );
    }
    for key in [
        "node.kubernetes.io/disk-pressure",
        "node.kubernetes.io/memory-pressure",
        "node.kubernetes.io/pid-pressure",
        "node.kubernetes.io/unschedulable",
    ] {
        add_or_update_toleration(
            spec,
            json!({"key": key, "operator": "Exists", "effect": "NoSchedule"}),
        );
    }
    if spec["hostNetwork"] == true {
        add_or_update_toleration(
            spec,
            json!({"key": "node.kubernetes.io/network-unavailable", "operator": "Exists",
                "effect": "NoSchedule"}),
        );
    }
}

/// One `NodeSelectorRequirement` against a value (`None`: absent).
fn requirement_matches(r: &Value, value: Option<&str>) -> Option<bool> {
    let values: Vec<&str> = r["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    let int = |s: &str| s.parse::<i64>().ok();
    Some(match r["operator"].as_str()? {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let [bound] = values.as_slice() else {
                return None;
            };
            let bound = int(bound)?;
            match value.and_then(int) {
                None => false,
                Some(v) if r["operator"] == "Gt" => v > bound,
                Some(v) => v < bound,
            }
        }
        _ => return None,
    })
}

/// A `NodeSelectorTerm` (an empty or invalid term matches nothing).
fn term_matches(term: &Value, node: &Value) -> bool {
    let exprs: &[Value] = term["matchExpressions"]
        .as_array()
        .map_or(&[], Vec::as_slice);
    let fields: &[Value] = term["matchFields"].as_array().map_or(&[], Vec::as_slice);
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    let labels = labels_of(node);
    exprs.iter().all(|r| {
        let key = r["key"].as_str().unwrap_or_default();
        requirement_matches(r, labels[key].as_str()) == Some(true)
    }) && fields.iter().all(|r| {
        r["key"] == "metadata.name" && requirement_matches(r, Some(name(node))) == Some(true)
    })
}

/// `GetRequiredNodeAffinity(pod).Match(node)`: the node selector and the required node
/// affinity terms (ORed).
pub fn node_affinity_matches(spec: &Value, node: &Value) -> bool {
    if let Some(sel) = spec["nodeSelector"].as_object() {
        let labels = labels_of(node);
        if !sel.iter().all(|(k, v)| labels[k.as_str()] == *v) {
            return false;
        }
    }
    let required =
        &spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"];
    if required.is_null() {
        return true;
    }
    required["nodeSelectorTerms"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| term_matches(t, node))
}

/// `NodeShouldRunDaemonPod`: (should run, should continue running).
pub fn should_run(node: &Value, ds: &Value) -> (bool, bool) {
    let template_spec = &ds["spec"]["template"]["spec"];
    let node_name = template_spec["nodeName"].as_str().unwrap_or_default();
    if !node_name.is_empty() && node_name != name(node) {
        return (false, false);
    }
    let mut spec = template_spec.clone();
    add_daemon_tolerations(&mut spec);
    if !node_affinity_matches(&spec, node) {
        return (false, false);
    }
    let taints = &node["spec"]["taints"];
    if has_untolerated(taints, &spec["tolerations"], &["NoExecute", "NoSchedule"]) {
        return (
            false,
            !has_untolerated(taints, &spec["tolerations"], &["NoExecute"]),
        );
    }
    (true, true)
}

// ---------------------------------------------------------------------------------------
// Pods

/// `GetTargetNodeName`: `spec.nodeName`, else the `metadata.name In [node]` field of the
/// required node affinity.
pub fn target_node(pod: &Value) -> Option<String> {
    if let Some(n) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
        return Some(n.to_string());
    }
    pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"]
        .as_array()?
        .iter()
        .flat_map(|t| t["matchFields"].as_array().into_iter().flatten())
        .find(|r| r["key"] == "metadata.name" && r["operator"] == "In")
        .and_then(|r| match r["values"].as_array().map(Vec::as_slice) {
            Some([v]) => v.as_str().map(str::to_string),
            _ => None,
        })
}

fn is_terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

fn deleting(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null()
}

/// `getNodesToDaemonPods`: the DaemonSet's pods by target node; pods that are both
/// terminal and being deleted count only when `include_deleted_terminal`.
pub fn nodes_to_pods<'a>(
    owned: &[&'a Value],
    include_deleted_terminal: bool,
) -> BTreeMap<String, Vec<&'a Value>> {
    let mut out: BTreeMap<String, Vec<&'a Value>> = BTreeMap::new();
    for pod in owned {
        if !include_deleted_terminal && is_terminal(pod) && deleting(pod) {
            continue;
        }
        if let Some(node) = target_node(pod) {
            out.entry(node).or_default().push(pod);
        }
    }
    out
}

/// `podByCreationTimestampAndPhase`: scheduled pods first, then the oldest, then by name.
fn oldest_first(a: &&Value, b: &&Value) -> std::cmp::Ordering {
    let scheduled = |p: &Value| {
        !p["spec"]["nodeName"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
    };
    let created = |p: &Value| pods::time_ms(&p["metadata"]["creationTimestamp"]);
    scheduled(b)
        .cmp(&scheduled(a))
        .then_with(|| created(a).cmp(&created(b)))
        .then_with(|| name(a).cmp(name(b)))
}

/// The DaemonSet's template generation (the deprecated annotation).
pub fn template_generation(ds: &Value) -> Option<i64> {
    ds["metadata"]["annotations"][GENERATION_ANNOTATION]
        .as_str()
        .and_then(|s| s.parse().ok())
}

/// `IsPodUpdated`: the pod carries the current revision's hash. (Upstream also compares
/// the template generation, but formats a pointer there, so only the hash ever matches.)
pub fn is_updated(pod: &Value, hash: &str) -> bool {
    !hash.is_empty() && labels_of(pod)[REVISION_LABEL].as_str() == Some(hash)
}

/// The pod for `node` (`CreatePodTemplate` + `ReplaceDaemonSetPodNodeNameNodeAffinity`).
pub fn new_pod(ds: &Value, node: &str, hash: &str) -> Value {
    let template = &ds["spec"]["template"];
    let mut spec = template["spec"].clone();
    add_daemon_tolerations(&mut spec);
    let term =
        json!({"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]});
    let selector = json!({"nodeSelectorTerms": [term]});
    if !spec["affinity"].is_object() {
        spec["affinity"] = json!({});
    }
    if !spec["affinity"]["nodeAffinity"].is_object() {
        spec["affinity"]["nodeAffinity"] = json!({});
    }
    let na = &mut spec["affinity"]["nodeAffinity"];
    if na["requiredDuringSchedulingIgnoredDuringExecution"].is_object() {
        na["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = json!([term]);
    } else {
        na["requiredDuringSchedulingIgnoredDuringExecution"] = selector;
    }
    let mut labels = template["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    if let Some(g) = template_generation(ds) {
        labels[GENERATION_LABEL] = json!(g.to_string());
    }
    if !hash.is_empty() {
        labels[REVISION_LABEL] = json!(hash);
    }
    let mut meta = json!({
        "generateName": format!("{}-", name(ds)),
        "namespace": ds["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [history::controller_ref(ds, "apps/v1", "DaemonSet")],
    });
    for k in ["annotations", "finalizers"] {
        if let Some(v) = template["metadata"].get(k).filter(|v| !v.is_null()) {
            meta[k] = v.clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

// ---------------------------------------------------------------------------------------
// Manage and rolling update

/// An event to record on the DaemonSet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    pub warning: bool,
    pub reason: &'static str,
    pub message: String,
}

/// What one pass decided.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Plan {
    /// Nodes to create a pod on.
    pub create: Vec<String>,
    /// Pods (names) to delete.
    pub delete: Vec<String>,
    pub events: Vec<Event>,
    /// Look again after this long (a failed pod in back-off).
    pub requeue_after_ms: Option<i64>,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.delete.is_empty()
    }
}

/// Upstream's `failedPodsBackoff` (a `flowcontrol.Backoff` of 1 s doubling to 15 min),
/// keyed by DaemonSet uid, observed generation and node; pure, the caller gives the time.
#[derive(Debug, Default)]
pub struct FailedPodBackoff {
    entries: HashMap<String, (i64, i64)>,
}

impl FailedPodBackoff {
    /// The delay still to wait for `key` at `now_ms`, if in back-off
    /// (`IsInBackOffSinceUpdate`).
    pub fn in_backoff(&self, key: &str, now_ms: i64) -> Option<i64> {
        let (last, backoff) = *self.entries.get(key)?;
        (now_ms - last < backoff).then_some(backoff)
    }

    /// Records an attempt at `now_ms` (`Next`): the back-off doubles, or starts again
    /// after a long quiet period.
    pub fn next(&mut self, key: &str, now_ms: i64) {
        let e = self.entries.entry(key.to_string()).or_insert((now_ms, 0));
        if e.1 == 0 || now_ms - e.0 > 2 * BACKOFF_MAX_MS {
            *e = (now_ms, BACKOFF_INITIAL_MS);
        } else {
            *e = (now_ms, (e.1 * 2).min(BACKOFF_MAX_MS));
        }
    }

    /// Forgets entries untouched for long (`GC`).
    pub fn gc(&mut self, now_ms: i64) {
        self.entries
            .retain(|_, (last, _)| now_ms - *last <= 2 * BACKOFF_MAX_MS);
    }
}

fn rolling(ds: &Value) -> bool {
    ds["spec"]["updateStrategy"]["type"]
        .as_str()
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

/// `SurgeCount`: `maxSurge` of `number` (0 unless RollingUpdate with a surge).
pub fn surge_count(ds: &Value, number: i64) -> i64 {
    let v = &ds["spec"]["updateStrategy"]["rollingUpdate"]["maxSurge"];
    if !rolling(ds) || v.is_null() {
        return 0;
    }
    crate::deployment::scaled(v, number, true).unwrap_or(0)
}

/// `UnavailableCount`: `maxUnavailable` of `number` (0 unless RollingUpdate).
pub fn unavailable_count(ds: &Value, number: i64) -> i64 {
    let v = &ds["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"];
    if !rolling(ds) || v.is_null() {
        return 0;
    }
    crate::deployment::scaled(v, number, true).unwrap_or(0)
}

fn allows_surge(ds: &Value) -> bool {
    surge_count(ds, 1) > 0
}

fn min_ready(ds: &Value) -> i64 {
    ds["spec"]["minReadySeconds"].as_i64().unwrap_or(0)
}

/// `podsShouldBeOnNode` for every node plus `getUnscheduledPodsWithoutNode`: upstream's
/// `manage`. `backoff` throttles the deletion of failed pods.
pub fn manage(
    ds: &Value,
    nodes: &[Value],
    owned: &[&Value],
    hash: &str,
    now_ms: i64,
    backoff: &mut FailedPodBackoff,
) -> Plan {
    let by_node = nodes_to_pods(owned, false);
    let mut plan = Plan::default();
    let ns = ds["metadata"]["namespace"].as_str().unwrap_or_default();
    for node in nodes {
        let node_name = name(node);
        let (run, keep) = should_run(node, ds);
        let daemon_pods = by_node.get(node_name);
        match daemon_pods {
            None if run => plan.create.push(node_name.to_string()),
            Some(list) if keep => {
                let mut running: Vec<&Value> = Vec::new();
                for pod in list {
                    if deleting(pod) {
                        continue;
                    }
                    match pod["status"]["phase"].as_str() {
                        Some("Failed") => {
                            let key = format!(
                                "{}/{}/{}",
                                ds["metadata"]["uid"].as_str().unwrap_or_default(),
                                ds["status"]["observedGeneration"].as_i64().unwrap_or(0),
                                node_name
                            );
                            if let Some(delay) = backoff.in_backoff(&key, now_ms) {
                                plan.requeue_after_ms =
                                    Some(plan.requeue_after_ms.map_or(delay, |d| d.min(delay)));
                                continue;
                            }
                            backoff.next(&key, now_ms);
                            plan.events.push(Event {
                                warning: true,
                                reason: "FailedDaemonPod",
                                message: format!(
                                    "Found failed daemon pod {ns}/{} on node {node_name}, will try to kill it",
                                    name(pod)
                                ),
                            });
                            plan.delete.push(name(pod).to_string());
                        }
                        Some("Succeeded") => {
                            plan.events.push(Event {
                                warning: false,
                                reason: "SucceededDaemonPod",
                                message: format!(
                                    "Found succeeded daemon pod {ns}/{} on node {node_name}, will try to delete it",
                                    name(pod)
                                ),
                            });
                            plan.delete.push(name(pod).to_string());
                        }
                        _ => running.push(pod),
                    }
                }
                running.sort_by(oldest_first);
                if !allows_surge(ds) {
                    plan.delete
                        .extend(running.iter().skip(1).map(|p| name(p).to_string()));
                    continue;
                }
                if running.len() <= 1 {
                    if running.is_empty() && run {
                        plan.create.push(node_name.to_string());
                    }
                    continue;
                }
                // Surging: keep the oldest new pod and the oldest old pod, and the old
                // one only while it is ready and the new one not yet available.
                let (mut oldest_new, mut oldest_old): (Option<&Value>, Option<&Value>) =
                    (None, None);
                for pod in &running {
                    let slot = if is_updated(pod, hash) {
                        &mut oldest_new
                    } else {
                        &mut oldest_old
                    };
                    if slot.is_none() {
                        *slot = Some(pod);
                    } else {
                        plan.delete.push(name(pod).to_string());
                    }
                }
                if let (Some(new), Some(old)) = (oldest_new, oldest_old)
                    && (!pods::is_ready(old) || new.is_available(min_ready(ds), now_ms))
                {
                    plan.delete.push(name(old).to_string());
                }
            }
            Some(list) if !keep => {
                plan.delete.extend(
                    list.iter()
                        .filter(|p| !deleting(p))
                        .map(|p| name(p).to_string()),
                );
            }
            _ => {}
        }
    }
    // Unscheduled pods meant for nodes that no longer exist.
    let known: HashSet<&str> = nodes.iter().map(name).collect();
    for (node, list) in &by_node {
        if known.contains(node.as_str()) {
            continue;
        }
        plan.delete.extend(
            list.iter()
                .filter(|p| {
                    p["spec"]["nodeName"]
                        .as_str()
                        .unwrap_or_default()
                        .is_empty()
                        && !deleting(p)
                })
                .map(|p| name(p).to_string()),
        );
    }
    plan.create.truncate(BURST_REPLICAS);
    plan.delete.truncate(BURST_REPLICAS);
    plan
}

/// `findUpdatedPodsOnNode`: the node's new and old pod, or `None` when it has more than
/// one of either (the manage pass cleans that up first).
fn updated_on_node<'a>(
    list: &[&'a Value],
    hash: &str,
) -> Option<(Option<&'a Value>, Option<&'a Value>)> {
    let (mut new, mut old) = (None, None);
    for pod in list {
        if deleting(pod) {
            continue;
        }
        let slot = if is_updated(pod, hash) {
            &mut new
        } else {
            &mut old
        };
        if slot.is_some() {
            return None;
        }
        *slot = Some(*pod);
    }
    Some((new, old))
}

/// Upstream's `rollingUpdate`: with no surge, old pods are deleted (unavailable ones at
/// once, available ones within `maxUnavailable`) and the manage pass creates their
/// replacements; with a surge, new pods are created beside old ones (at once where the
/// old one is unavailable, else within `maxSurge`) and old pods go when their
/// replacement is available.
pub fn rolling_update(
    ds: &Value,
    nodes: &[Value],
    owned: &[&Value],
    hash: &str,
    now_ms: i64,
) -> Plan {
    let mut by_node = nodes_to_pods(owned, false);
    let mut desired = 0;
    let mut node_by_name: HashMap<&str, &Value> = HashMap::new();
    for node in nodes {
        node_by_name.insert(name(node), node);
        if should_run(node, ds).0 {
            desired += 1;
            by_node.entry(name(node).to_string()).or_default();
        }
    }
    let mut max_unavailable = unavailable_count(ds, desired);
    let max_surge = surge_count(ds, desired);
    if desired > 0 && max_unavailable == 0 && max_surge == 0 {
        max_unavailable = 1;
    }
    let min_ready = min_ready(ds);
    let available = |p: &Value| p.is_available(min_ready, now_ms);
    let mut plan = Plan::default();
    if max_surge == 0 {
        let mut unavailable = 0;
        let mut allowed: Vec<String> = Vec::new();
        let mut candidates: Vec<String> = Vec::new();
        for list in by_node.values() {
            let Some((new, old)) = updated_on_node(list, hash) else {
                unavailable += 1;
                continue;
            };
            match (new, old) {
                (None, None) | (Some(_), Some(_)) => unavailable += 1,
                (Some(new), None) => {
                    if !available(new) {
                        unavailable += 1;
                    }
                }
                (None, Some(old)) => {
                    if !available(old) {
                        allowed.push(name(old).to_string());
                        unavailable += 1;
                    } else if unavailable < max_unavailable {
                        candidates.push(name(old).to_string());
                    }
                }
            }
        }
        let remaining = usize::try_from((max_unavailable - unavailable).max(0))
            .unwrap_or(0)
            .min(candidates.len());
        plan.delete = allowed;
        plan.delete.extend(candidates.into_iter().take(remaining));
        plan.delete.truncate(BURST_REPLICAS);
        return plan;
    }
    let mut should_not_run: Vec<&Value> = Vec::new();
    let mut candidates: Vec<String> = Vec::new();
    let mut allowed: Vec<String> = Vec::new();
    let (mut surging, mut num_available) = (0, 0);
    for (node_name, list) in &by_node {
        let Some((new, old)) = updated_on_node(list, hash) else {
            surging += 1;
            continue;
        };
        if let Some(p) = old.or(new)
            && available(p)
        {
            num_available += 1;
        }
        let node_runs = || {
            node_by_name
                .get(node_name.as_str())
                .is_some_and(|n| should_run(n, ds).0)
        };
        match (new, old) {
            (_, None) => {}
            (None, Some(old)) => {
                if !available(old) {
                    if node_runs() {
                        allowed.push(node_name.clone());
                    } else {
                        plan.delete.push(name(old).to_string());
                    }
                } else if !node_runs() {
                    should_not_run.push(old);
                } else if surging < max_surge {
                    candidates.push(node_name.clone());
                }
            }
            (Some(new), Some(old)) => {
                if available(new) {
                    plan.delete.push(name(old).to_string());
                } else {
                    surging += 1;
                }
            }
        }
    }
    let deletable = usize::try_from((num_available - desired).max(0)).unwrap_or(0);
    plan.delete.extend(
        should_not_run
            .iter()
            .take(deletable)
            .filter(|p| !deleting(p))
            .map(|p| name(p).to_string()),
    );
    let remaining = usize::try_from((max_surge - surging).max(0))
        .unwrap_or(0)
        .min(candidates.len());
    plan.create = allowed;
    plan.create.extend(candidates.into_iter().take(remaining));
    plan.create.truncate(BURST_REPLICAS);
    plan.delete.truncate(BURST_REPLICAS);
    plan
}

// ---------------------------------------------------------------------------------------
// Status

/// The status counts (`updateDaemonSetStatus`), with `observedGeneration` raised only
/// when `observe` (the controller acted on this generation).
pub fn status(
    ds: &Value,
    nodes: &[Value],
    owned: &[&Value],
    hash: &str,
    now_ms: i64,
    observe: bool,
) -> Value {
    let by_node = nodes_to_pods(owned, false);
    let (mut desired, mut current, mut misscheduled, mut ready, mut updated, mut available) =
        (0i64, 0i64, 0i64, 0i64, 0i64, 0i64);
    for node in nodes {
        let (run, _) = should_run(node, ds);
        let list = by_node.get(name(node)).filter(|l| !l.is_empty());
        if run {
            desired += 1;
            let Some(list) = list else { continue };
            current += 1;
            let mut sorted = list.clone();
            sorted.sort_by(oldest_first);
            let pod = sorted[0];
            if pods::is_ready(pod) {
                ready += 1;
                if pod.is_available(min_ready(ds), now_ms) {
                    available += 1;
                }
            }
            if is_updated(pod, hash) {
                updated += 1;
            }
        } else if list.is_some() {
            misscheduled += 1;
        }
    }
    let mut out = ds["status"].clone();
    if !out.is_object() {
        out = json!({});
    }
    out["desiredNumberScheduled"] = json!(desired);
    out["currentNumberScheduled"] = json!(current);
    out["numberMisscheduled"] = json!(misscheduled);
    out["numberReady"] = json!(ready);
    out["updatedNumberScheduled"] = json!(updated);
    out["numberAvailable"] = json!(available);
    out["numberUnavailable"] = json!(desired - available);
    if observe {
        out["observedGeneration"] = ds["metadata"]["generation"].clone();
    }
    out
}

/// Whether `status` must be written (`storeDaemonSetStatus`): a count changed, or the
/// observed generation is behind.
pub fn status_changed(ds: &Value, status: &Value) -> bool {
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    [
        "desiredNumberScheduled",
        "currentNumberScheduled",
        "numberMisscheduled",
        "numberReady",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
    ]
    .iter()
    .any(|k| n(&ds["status"][*k]) != n(&status[*k]))
        || n(&ds["status"]["observedGeneration"]) < n(&ds["metadata"]["generation"])
            && n(&status["observedGeneration"]) != n(&ds["status"]["observedGeneration"])
}

// ---------------------------------------------------------------------------------------
// History

/// The hash of the DaemonSet's current template (`ComputeHash` with the collision
/// count).
pub fn template_hash(ds: &Value) -> String {
    let collision = ds["status"]["collisionCount"]
        .as_i64()
        .and_then(|c| u32::try_from(c).ok());
    crate::deployment::template_hash(&ds["spec"]["template"], collision)
}

/// Upstream's `snapshot`: the revision `<name>-<hash>` of the current template.
pub fn snapshot(ds: &Value, revision: i64) -> Value {
    let hash = template_hash(ds);
    let mut labels = ds["spec"]["template"]["metadata"]["labels"].clone();
    if !labels.is_object() {
        labels = json!({});
    }
    labels[REVISION_LABEL] = json!(hash);
    let mut meta = json!({
        "name": format!("{}-{hash}", name(ds)),
        "namespace": ds["metadata"]["namespace"],
        "labels": labels,
        "ownerReferences": [history::controller_ref(ds, "apps/v1", "DaemonSet")],
    });
    if let Some(a) = ds["metadata"]["annotations"].as_object() {
        meta["annotations"] = Value::Object(a.clone());
    }
    json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "metadata": meta,
        "data": history::template_patch(ds), "revision": revision})
}

/// Upstream's `Match`: the revision holds the DaemonSet's current template.
pub fn matches_revision(ds: &Value, revision: &Value) -> bool {
    revision["data"] == history::template_patch(ds)
}

/// What `constructHistory` found.
#[derive(Debug)]
pub enum Current<'a> {
    /// The revision of the current template, with the revision number it must be given
    /// if it is behind the others (a rollback), and duplicates to fold into it.
    Existing {
        revision: &'a Value,
        bump_to: Option<i64>,
        duplicates: Vec<&'a Value>,
    },
    /// No revision holds the current template: create this one.
    Create(Value),
}

/// Upstream's `constructHistory` over the DaemonSet's revisions: the current one (or
/// the one to create) and the old ones.
pub fn construct_history<'a>(ds: &Value, revisions: &[&'a Value]) -> (Current<'a>, Vec<&'a Value>) {
    let (mut current, mut old): (Vec<&Value>, Vec<&Value>) = (Vec::new(), Vec::new());
    for r in revisions {
        if matches_revision(ds, r) {
            current.push(r);
        } else {
            old.push(r);
        }
    }
    let next = history::max_revision(&old) + 1;
    if current.is_empty() {
        return (Current::Create(snapshot(ds, next)), old);
    }
    // `dedupCurHistories`: keep the highest revision.
    current.sort_by_key(|r| std::cmp::Reverse(history::revision_number(r)));
    let keep = current[0];
    let duplicates = current[1..].to_vec();
    let bump_to = (history::revision_number(keep) < next).then_some(next);
    (
        Current::Existing {
            revision: keep,
            bump_to,
            duplicates,
        },
        old,
    )
}

/// The hash a revision gives its pods (its `controller-revision-hash` label, else its
/// name as upstream labels old revisions).
pub fn revision_hash(revision: &Value) -> String {
    labels_of(revision)[REVISION_LABEL]
        .as_str()
        .map_or_else(|| name(revision).to_string(), str::to_string)
}

/// Upstream's `cleanupHistory`: old revisions beyond `revisionHistoryLimit`, oldest
/// first, sparing those some pod (deleted terminal ones included) still runs.
pub fn cleanup_history(ds: &Value, old: &[&Value], owned: &[&Value]) -> Vec<String> {
    let live: HashSet<&str> = owned
        .iter()
        .filter_map(|p| labels_of(p)[REVISION_LABEL].as_str())
        .collect();
    let limit = history::history_limit(ds);
    let excess = i64::try_from(old.len()).unwrap_or(0) - limit;
    if excess <= 0 {
        return Vec::new();
    }
    let mut sorted = old.to_vec();
    history::sort_revisions(&mut sorted);
    sorted
        .iter()
        .filter(|r| !live.contains(revision_hash(r).as_str()))
        .take(usize::try_from(excess).unwrap_or(0))
        .map(|r| name(r).to_string())
        .collect()
}

// ---------------------------------------------------------------------------------------
// The loop

/// The controller's shared state.
struct Shared {
    daemonsets: Store<DaemonSet>,
    pods: Store<CachedPod>,
    nodes: Store<Node>,
    revisions: Store<ControllerRevision>,
    queue: WorkQueue<String>,
    /// Creations under `c:<key>`, deletions under `d:<key>` (so both can be pending).
    expectations: Mutex<Expectations>,
    backoff: Mutex<FailedPodBackoff>,
    writer: Client,
    events: Recorder,
}

fn values<K: serde::Serialize>(items: &[Arc<K>]) -> Vec<Value> {
    items
        .iter()
        .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
        .collect()
}

impl Shared {
    fn satisfied(&self, key: &str) -> bool {
        let e = lock(&self.expectations);
        let now = Instant::now();
        e.satisfied(&format!("c:{key}"), now) && e.satisfied(&format!("d:{key}"), now)
    }

    fn enqueue_all(&self) {
        for ds in self.daemonsets.state() {
            self.queue.add(crate::run::object_key(&ds.metadata));
        }
    }
}

/// The labels, taints and schedulability of a node: what decides where daemons run.
fn node_signature(node: &Node) -> String {
    format!(
        "{:?}|{:?}|{:?}",
        node.metadata.labels,
        node.spec.as_ref().map(|s| &s.taints),
        node.spec.as_ref().map(|s| s.unschedulable)
    )
}

/// Runs the DaemonSet controller with `workers` workers until the process ends.
pub async fn run_daemonsets(
    daemonsets: Arc<Informer<DaemonSet>>,
    pods: Arc<Informer<CachedPod>>,
    nodes: Arc<Informer<Node>>,
    revisions: Arc<Informer<ControllerRevision>>,
    writer: Client,
    workers: usize,
) {
    let mut ds_events = daemonsets.subscribe();
    let mut pod_events = pods.subscribe_tracked();
    let mut node_events = nodes.subscribe();
    let mut rev_events = revisions.subscribe();
    let shared = Arc::new(Shared {
        daemonsets: daemonsets.store.clone(),
        pods: pods.store.clone(),
        nodes: nodes.store.clone(),
        revisions: revisions.store.clone(),
        queue: WorkQueue::named("daemonset"),
        expectations: Mutex::new(Expectations::default()),
        backoff: Mutex::new(FailedPodBackoff::default()),
        events: crate::run::recorder(&writer, "daemonset-controller"),
        writer,
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut ds_events).await {
                Next::Apply(ds) => s.queue.add(crate::run::object_key(&ds.metadata)),
                Next::Delete(ds) => {
                    let key = crate::run::object_key(&ds.metadata);
                    let mut e = lock(&s.expectations);
                    e.delete(&format!("c:{key}"));
                    e.delete(&format!("d:{key}"));
                }
                Next::Other => {}
                Next::Resync => s.enqueue_all(),
                Next::Closed => break,
            }
        }
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        // A relist's unseen changes are replayed after its resync, for the expectations.
        while let Some(Observed {
            obj: pod,
            deleted,
            first: first_seen,
        }) = pod_events.next(|| s.enqueue_all()).await
        {
            let owners = crate::run::owned_keys(pod.as_ref(), "DaemonSet", &s.daemonsets.state());
            let pod_key = crate::run::object_key(&pod.metadata);
            {
                let mut e = lock(&s.expectations);
                for owner in &owners {
                    if deleted || pod.metadata.deletion_timestamp.is_some() {
                        e.deletion_observed(&format!("d:{owner}"), &pod_key);
                    }
                    if first_seen {
                        e.creation_observed(&format!("c:{owner}"));
                    }
                }
            }
            for owner in owners {
                s.queue.add(owner);
            }
        }
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut last: HashMap<String, String> = HashMap::new();
        loop {
            match informers::next(&mut node_events).await {
                Next::Apply(n) => {
                    let sig = node_signature(&n);
                    let node = n.metadata.name.clone().unwrap_or_default();
                    if last.insert(node, sig.clone()).as_ref() != Some(&sig) {
                        s.enqueue_all();
                    }
                }
                Next::Delete(n) => {
                    last.remove(n.metadata.name.as_deref().unwrap_or_default());
                    s.enqueue_all();
                }
                Next::Other => {}
                Next::Resync => {
                    last.clear();
                    s.enqueue_all();
                }
                Next::Closed => break,
            }
        }
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut rev_events).await {
                Next::Apply(r) | Next::Delete(r) => {
                    if let Ok(v) = serde_json::to_value(r.as_ref()) {
                        for owner in crate::run::owner_keys(&v, "DaemonSet", &s.daemonsets.state())
                        {
                            s.queue.add(owner);
                        }
                    }
                }
                Next::Other => {}
                Next::Resync => s.enqueue_all(),
                Next::Closed => break,
            }
        }
    });
    daemonsets.synced().await;
    pods.synced().await;
    nodes.synced().await;
    revisions.synced().await;
    shared.enqueue_all();
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "daemonset",
        |s, key| async move { sync(&s, &key).await },
    );
}

fn ignore_gone(r: Result<(), kube::Error>) -> Result<(), kube::Error> {
    match r {
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        other => other,
    }
}

/// Settles the DaemonSet's revisions; returns the current hash and the old revisions'
/// names... as values.
async fn sync_history(
    s: &Shared,
    ds: &Value,
    owned_revisions: &[&Value],
    pods_api: &Api<Pod>,
    owned_pods: &[&Value],
) -> Result<(String, Vec<Value>), kube::Error> {
    let ns = ds["metadata"]["namespace"].as_str().unwrap_or_default();
    let api: Api<ControllerRevision> = Api::namespaced(s.writer.clone(), ns);
    // Old revisions without the hash label get their name as one (upstream).
    for r in owned_revisions {
        if labels_of(r)[REVISION_LABEL].is_null() {
            let patch = json!({"metadata": {"labels": {REVISION_LABEL: name(r)}}});
            api.patch(name(r), &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
        }
    }
    let (current, old) = construct_history(ds, owned_revisions);
    let old: Vec<Value> = old.into_iter().cloned().collect();
    match current {
        Current::Existing {
            revision,
            bump_to,
            duplicates,
        } => {
            let hash = revision_hash(revision);
            for dup in duplicates {
                let dup_hash = revision_hash(dup);
                for pod in owned_pods
                    .iter()
                    .filter(|p| labels_of(p)[REVISION_LABEL].as_str() == Some(dup_hash.as_str()))
                {
                    let patch = json!({"metadata": {"labels": {REVISION_LABEL: hash}}});
                    ignore_gone(
                        pods_api
                            .patch(name(pod), &PatchParams::default(), &Patch::Merge(&patch))
                            .await
                            .map(|_| ()),
                    )?;
                }
                ignore_gone(
                    api.delete(name(dup), &DeleteParams::default())
                        .await
                        .map(|_| ()),
                )?;
            }
            if let Some(n) = bump_to {
                let patch = json!({"revision": n});
                api.patch(
                    name(revision),
                    &PatchParams::default(),
                    &Patch::Merge(&patch),
                )
                .await?;
            }
            Ok((hash, old))
        }
        Current::Create(rev) => {
            let hash = revision_hash(&rev);
            let body: ControllerRevision =
                serde_json::from_value(rev.clone()).map_err(kube::Error::SerdeError)?;
            match api.create(&PostParams::default(), &body).await {
                Ok(_) => Ok((hash, old)),
                Err(kube::Error::Api(e)) if e.code == 409 => {
                    let existing = api.get(name(&rev)).await?;
                    let existing =
                        serde_json::to_value(&existing).map_err(kube::Error::SerdeError)?;
                    if matches_revision(ds, &existing) {
                        return Ok((hash, old));
                    }
                    // A hash collision: bump the collision count (from the live object)
                    // and try again with a new hash.
                    let ds_api: Api<DaemonSet> = Api::namespaced(s.writer.clone(), ns);
                    let live = ds_api.get(name(ds)).await?;
                    let live_count = live.status.as_ref().and_then(|st| st.collision_count);
                    if live_count.map(i64::from) == ds["status"]["collisionCount"].as_i64() {
                        let patch = json!({"metadata": {"resourceVersion": live.metadata.resource_version},
                            "status": {"collisionCount": live_count.unwrap_or(0) + 1}});
                        ds_api
                            .patch_status(name(ds), &PatchParams::default(), &Patch::Merge(&patch))
                            .await?;
                    }
                    Err(kube::Error::Api(e))
                }
                Err(e) => Err(e),
            }
        }
    }
}

/// Carries out `plan`'s creations and deletions (`syncNodes`), with expectations.
async fn sync_nodes(
    s: &Shared,
    key: &str,
    ds: &Value,
    hash: &str,
    plan: &Plan,
    pods_api: &Api<Pod>,
) -> Result<(), kube::Error> {
    let ds_ref = crate::run::reference(ds, "DaemonSet", "apps/v1");
    let ns = ds["metadata"]["namespace"].as_str().unwrap_or_default();
    let now = Instant::now();
    {
        let mut e = lock(&s.expectations);
        e.expect_creations(&format!("c:{key}"), plan.create.len(), now);
        let keys: Vec<String> = plan
            .delete
            .iter()
            .map(|n| crate::run::key_of(ns, n))
            .collect();
        e.expect_deletions(&format!("d:{key}"), &keys, now);
    }
    let mut first_error: Option<kube::Error> = None;
    let mut pos = 0;
    for batch in crate::replicaset::slow_start_batches(plan.create.len(), 1) {
        let nodes = &plan.create[pos..pos + batch];
        pos += batch;
        let results = futures::future::join_all(nodes.iter().map(|node| async move {
            let pod: Pod =
                serde_json::from_value(new_pod(ds, node, hash)).map_err(kube::Error::SerdeError)?;
            pods_api.create(&PostParams::default(), &pod).await
        }))
        .await;
        let mut failed = false;
        for r in results {
            match r {
                Ok(p) => s.events.event(
                    &ds_ref,
                    EventType::Normal,
                    "SuccessfulCreate",
                    &format!(
                        "Created pod: {}",
                        p.metadata.name.as_deref().unwrap_or_default()
                    ),
                ),
                Err(e) => {
                    lock(&s.expectations).creation_observed(&format!("c:{key}"));
                    let msg = api_message(&e);
                    s.events.event(
                        &ds_ref,
                        EventType::Warning,
                        "FailedCreate",
                        &format!("Error creating: {msg}"),
                    );
                    failed = true;
                    first_error.get_or_insert(e);
                }
            }
        }
        if failed {
            let skipped = plan.create.len() - pos;
            lock(&s.expectations).lower_creations(&format!("c:{key}"), skipped);
            break;
        }
    }
    let dp = DeleteParams::default();
    let results =
        futures::future::join_all(plan.delete.iter().map(|n| pods_api.delete(n, &dp))).await;
    for (n, r) in plan.delete.iter().zip(results) {
        match r {
            Ok(_) => s.events.event(
                &ds_ref,
                EventType::Normal,
                "SuccessfulDelete",
                &format!("Deleted pod: {n}"),
            ),
            Err(e) => {
                lock(&s.expectations)
                    .deletion_observed(&format!("d:{key}"), &crate::run::key_of(ns, n));
                if matches!(&e, kube::Error::Api(st) if st.code == 404) {
                    continue;
                }
                s.events.event(
                    &ds_ref,
                    EventType::Warning,
                    "FailedDelete",
                    &format!("Error deleting: {e}"),
                );
                first_error.get_or_insert(e);
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// One `syncDaemonSet`.
async fn sync(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, ds_name) = key.split_once('/').unwrap_or(("", key));
    let Some(ds) = s.daemonsets.get(&ObjectRef::new(ds_name).within(ns)) else {
        let mut e = lock(&s.expectations);
        e.delete(&format!("c:{key}"));
        e.delete(&format!("d:{key}"));
        return Ok(());
    };
    let uid = ds.metadata.uid.clone().unwrap_or_default();
    let Ok(ds) = serde_json::to_value(ds.as_ref()) else {
        return Ok(());
    };
    let ds_ref = crate::run::reference(&ds, "DaemonSet", "apps/v1");
    let selector = &ds["spec"]["selector"];
    if selector.as_object().is_none_or(|m| {
        m.values().all(|v| {
            v.is_null()
                || v.as_object().is_some_and(|o| o.is_empty())
                || v.as_array().is_some_and(|a| a.is_empty())
        })
    }) {
        s.events.event(
            &ds_ref,
            EventType::Warning,
            "SelectingAll",
            "This daemon set is selecting all pods. A non-empty selector is required.",
        );
        return Ok(());
    }
    if !ds["metadata"]["deletionTimestamp"].is_null() {
        return Ok(());
    }
    let in_ns_or_mine = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        claimable(meta, ns, &uid)
    };
    let all_pods: Vec<Value> = s
        .pods
        .state()
        .iter()
        .filter(|p| in_ns_or_mine(&p.metadata))
        .filter_map(|p| serde_json::to_value(p.as_ref()).ok())
        .collect();
    let pods_api: Api<Pod> = Api::namespaced(s.writer.clone(), ns);
    let claim = crate::replicaset::claim(&ds, &all_pods);
    crate::run::adopt_and_release(&pods_api, &ds, "DaemonSet", &claim).await;
    let owned = claim.owned;
    let revisions: Vec<Value> = s
        .revisions
        .state()
        .iter()
        .filter(|r| in_ns_or_mine(&r.metadata))
        .filter_map(|r| serde_json::to_value(r.as_ref()).ok())
        .collect();
    let rev_claim = history::claim(&ds, &revisions);
    let rev_api: Api<ControllerRevision> = Api::namespaced(s.writer.clone(), ns);
    crate::run::adopt_and_release(&rev_api, &ds, "DaemonSet", &rev_claim).await;
    let (hash, old) = sync_history(s, &ds, &rev_claim.owned, &pods_api, &owned).await?;
    let nodes = values(&s.nodes.state());
    let now = crate::run::now_ms();
    if !s.satisfied(key) {
        let st = status(&ds, &nodes, &owned, &hash, now, false);
        return write_status(s, &ds, st, key).await;
    }
    let plan = {
        let mut backoff = lock(&s.backoff);
        backoff.gc(now);
        manage(&ds, &nodes, &owned, &hash, now, &mut backoff)
    };
    for ev in &plan.events {
        let t = if ev.warning {
            EventType::Warning
        } else {
            EventType::Normal
        };
        s.events.event(&ds_ref, t, ev.reason, &ev.message);
    }
    if let Some(ms) = plan.requeue_after_ms {
        s.queue.add_after(
            key.to_string(),
            Duration::from_millis(u64::try_from(ms).unwrap_or(1000)),
        );
    }
    let mut result = sync_nodes(s, key, &ds, &hash, &plan, &pods_api).await;
    if result.is_ok() && plan.is_empty() && rolling(&ds) {
        let update = rolling_update(&ds, &nodes, &owned, &hash, now);
        if !update.is_empty() {
            tracing::debug!(%key, create = update.create.len(), delete = update.delete.len(), "rolling update");
            result = sync_nodes(s, key, &ds, &hash, &update, &pods_api).await;
        }
    }
    if result.is_ok() {
        // Terminal pods being deleted still pin their revisions.
        let old_refs: Vec<&Value> = old.iter().collect();
        for r in cleanup_history(&ds, &old_refs, &owned) {
            ignore_gone(
                rev_api
                    .delete(&r, &DeleteParams::default())
                    .await
                    .map(|_| ()),
            )?;
        }
    }
    let st = status(&ds, &nodes, &owned, &hash, now, true);
    let status_result = write_status(s, &ds, st, key).await;
    result.and(status_result)
}

async fn write_status(s: &Shared, ds: &Value, st: Value, key: &str) -> Result<(), kube::Error> {
    let min_ready = min_ready(ds);
    if min_ready > 0 && st["numberReady"] != st["numberAvailable"] {
        s.queue.add_after(
            key.to_string(),
            Duration::from_secs(u64::try_from(min_ready).unwrap_or(1)),
        );
    }
    if !status_changed(ds, &st) {
        return Ok(());
    }
    let ns = ds["metadata"]["namespace"].as_str().unwrap_or_default();
    let api: Api<DaemonSet> = Api::namespaced(s.writer.clone(), ns);
    let mut body = ds.clone();
    body["status"] = st;
    let Ok(body) = serde_json::from_value::<DaemonSet>(body) else {
        return Ok(());
    };
    match api
        .replace_status(name(ds), &PostParams::default(), &body)
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn ds() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": "agent", "namespace": "default", "uid": "ds-uid", "generation": 2,
                "annotations": {GENERATION_ANNOTATION: "2"}},
            "spec": {"selector": {"matchLabels": {"app": "agent"}},
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
                "template": {"metadata": {"labels": {"app": "agent"}},
                    "spec": {"containers": [{"name": "a", "image": "agent:1"}]}}},
            "status": {}})
    }

    fn node(n: &str) -> Value {
        json!({"metadata": {"name": n, "labels": {"kubernetes.io/hostname": n}}, "spec": {}})
    }

    fn pod(n: &str, node: &str, hash: &str, created: &str, ready: bool) -> Value {
        json!({"metadata": {"name": n, "namespace": "default", "creationTimestamp": created,
                "labels": {"app": "agent", REVISION_LABEL: hash},
                "ownerReferences": [{"kind": "DaemonSet", "name": "agent", "uid": "ds-uid", "controller": true}]},
            "spec": {"nodeName": node},
            "status": {"phase": "Running", "conditions": [{"type": "Ready",
                "status": if ready { "True" } else { "False" },
                "lastTransitionTime": "2024-01-01T00:00:00Z"}]}})
    }

    const NOW: i64 = 1_800_000_000_000;

    #[test]
    fn taints_tolerations_selectors_and_affinity_decide_where_daemons_run() {
        let d = ds();
        assert_eq!(should_run(&node("a"), &d), (true, true));
        let mut tainted = node("b");
        tainted["spec"]["taints"] =
            json!([{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]);
        assert_eq!(should_run(&tainted, &d), (false, true));
        tainted["spec"]["taints"] =
            json!([{"key": "dedicated", "value": "db", "effect": "NoExecute"}]);
        assert_eq!(should_run(&tainted, &d), (false, false));
        let mut tolerant = d.clone();
        tolerant["spec"]["template"]["spec"]["tolerations"] =
            json!([{"key": "dedicated", "operator": "Equal", "value": "db"}]);
        assert_eq!(should_run(&tainted, &tolerant), (true, true));
        // The automatic tolerations: unschedulable and pressure taints are ignored.
        let mut cordoned = node("c");
        cordoned["spec"]["taints"] = json!([{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"},
            {"key": "node.kubernetes.io/memory-pressure", "effect": "NoSchedule"}]);
        assert_eq!(should_run(&cordoned, &d), (true, true));
        // network-unavailable only with host networking.
        let mut net = node("n");
        net["spec"]["taints"] =
            json!([{"key": "node.kubernetes.io/network-unavailable", "effect": "NoSchedule"}]);
        assert!(!should_run(&net, &d).0);
        let mut host = d.clone();
        host["spec"]["template"]["spec"]["hostNetwork"] = json!(true);
        assert!(should_run(&net, &host).0);
        // nodeSelector.
        let mut sel = d.clone();
        sel["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
        assert_eq!(should_run(&node("a"), &sel), (false, false));
        let mut ssd = node("a");
        ssd["metadata"]["labels"]["disk"] = json!("ssd");
        assert!(should_run(&ssd, &sel).0);
        // Required node affinity.
        let mut aff = d.clone();
        aff["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}});
        assert!(!should_run(&node("a"), &aff).0);
        assert!(should_run(&ssd, &aff).0);
        // Template nodeName.
        let mut named = d.clone();
        named["spec"]["template"]["spec"]["nodeName"] = json!("a");
        assert!(should_run(&node("a"), &named).0);
        assert_eq!(should_run(&node("b"), &named), (false, false));
    }

    #[test]
    fn new_pods_carry_labels_tolerations_affinity_and_owner() {
        let mut d = ds();
        d["spec"]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchExpressions": [{"key": "disk", "operator": "In", "values": ["ssd"]}]}]}}});
        d["spec"]["template"]["spec"]["tolerations"] = json!([{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]);
        let p = new_pod(&d, "node-1", "abc");
        assert_eq!(p["metadata"]["generateName"], "agent-");
        assert_eq!(p["metadata"]["labels"][REVISION_LABEL], "abc");
        assert_eq!(p["metadata"]["labels"][GENERATION_LABEL], "2");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        let terms = &p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
            ["nodeSelectorTerms"];
        assert_eq!(
            terms,
            &json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}])
        );
        let tol = p["spec"]["tolerations"].as_array().unwrap();
        // The user's not-ready toleration is replaced by the infinite one.
        let not_ready: Vec<&Value> = tol
            .iter()
            .filter(|t| t["key"] == "node.kubernetes.io/not-ready")
            .collect();
        assert_eq!(not_ready.len(), 1);
        assert!(not_ready[0].get("tolerationSeconds").is_none());
        assert_eq!(tol.len(), 6);
        assert!(
            !tol.iter()
                .any(|t| t["key"] == "node.kubernetes.io/network-unavailable")
        );
        assert_eq!(target_node(&p).as_deref(), Some("node-1"));
    }

    #[test]
    fn manage_creates_deletes_and_keeps_the_oldest() {
        let d = ds();
        let nodes = vec![node("a"), node("b"), node("c")];
        let pa1 = pod("p-a1", "a", "h", "2024-01-01T00:00:00Z", true);
        let pa2 = pod("p-a2", "a", "h", "2024-01-01T00:01:00Z", true);
        let mut failed = pod("p-b", "b", "h", "2024-01-01T00:00:00Z", false);
        failed["status"]["phase"] = json!("Failed");
        let gone = pod("p-x", "x", "h", "2024-01-01T00:00:00Z", true);
        let mut unscheduled = pod("p-y", "", "h", "2024-01-01T00:00:00Z", false);
        unscheduled["spec"] = json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
            {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["y"]}]}]}}}});
        let owned = vec![&pa1, &pa2, &failed, &gone, &unscheduled];
        let mut backoff = FailedPodBackoff::default();
        let plan = manage(&d, &nodes, &owned, "h", NOW, &mut backoff);
        assert_eq!(plan.create, ["c"]);
        assert_eq!(plan.delete, ["p-a2", "p-b", "p-y"]);
        assert_eq!(plan.events.len(), 1);
        assert_eq!(plan.events[0].reason, "FailedDaemonPod");
        assert_eq!(
            plan.events[0].message,
            "Found failed daemon pod default/p-b on node b, will try to kill it"
        );
        // The failed pod is in back-off for a second now.
        let again = manage(&d, &nodes, &owned, "h", NOW + 10, &mut backoff);
        assert!(!again.delete.contains(&"p-b".to_string()));
        assert!(again.requeue_after_ms.is_some());
        let later = manage(&d, &nodes, &owned, "h", NOW + 2_000, &mut backoff);
        assert!(later.delete.contains(&"p-b".to_string()));
        // A node tainted NoExecute loses its pod; NoSchedule keeps it.
        let mut tainted = vec![node("a")];
        tainted[0]["spec"]["taints"] = json!([{"key": "k", "effect": "NoSchedule"}]);
        let only = vec![&pa1];
        assert!(manage(&d, &tainted, &only, "h", NOW, &mut backoff).is_empty());
        tainted[0]["spec"]["taints"] = json!([{"key": "k", "effect": "NoExecute"}]);
        assert_eq!(
            manage(&d, &tainted, &only, "h", NOW, &mut backoff).delete,
            ["p-a1"]
        );
        // A terminal pod being deleted does not block its replacement.
        let mut dying = failed.clone();
        dying["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let plan = manage(&d, &[node("b")], &[&dying], "h", NOW, &mut backoff);
        assert_eq!(plan.create, ["b"]);
    }

    #[test]
    fn rolling_update_respects_max_unavailable() {
        let d = ds();
        let nodes = vec![node("a"), node("b"), node("c")];
        let pa = pod("p-a", "a", "old", "2024-01-01T00:00:00Z", true);
        let pb = pod("p-b", "b", "old", "2024-01-01T00:00:00Z", true);
        let pc = pod("p-c", "c", "old", "2024-01-01T00:00:00Z", true);
        let plan = rolling_update(&d, &nodes, &[&pa, &pb, &pc], "new", NOW);
        assert_eq!(plan.delete.len(), 1);
        assert!(plan.create.is_empty());
        // One node already has an unavailable new pod: nothing more goes.
        let na = pod("n-a", "a", "new", "2024-01-01T00:00:00Z", false);
        let plan = rolling_update(&d, &nodes, &[&na, &pb, &pc], "new", NOW);
        assert!(plan.is_empty());
        // An unavailable old pod is replaced regardless.
        let sick = pod("p-b", "b", "old", "2024-01-01T00:00:00Z", false);
        let plan = rolling_update(&d, &nodes, &[&na, &sick, &pc], "new", NOW);
        assert_eq!(plan.delete, ["p-b"]);
        // Everything new and available: done.
        let nb = pod("n-b", "b", "new", "2024-01-01T00:00:00Z", true);
        let nc = pod("n-c", "c", "new", "2024-01-01T00:00:00Z", true);
        let na = pod("n-a", "a", "new", "2024-01-01T00:00:00Z", true);
        assert!(rolling_update(&d, &nodes, &[&na, &nb, &nc], "new", NOW).is_empty());
        // 50% of 3 rounds up to 2.
        let mut half = d.clone();
        half["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!("50%");
        assert_eq!(
            rolling_update(&half, &nodes, &[&pa, &pb, &pc], "new", NOW)
                .delete
                .len(),
            2
        );
    }

    #[test]
    fn rolling_update_with_surge_creates_beside_then_deletes() {
        let mut d = ds();
        d["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": 0, "maxSurge": 1});
        let nodes = vec![node("a"), node("b")];
        let pa = pod("p-a", "a", "old", "2024-01-01T00:00:00Z", true);
        let pb = pod("p-b", "b", "old", "2024-01-01T00:00:00Z", true);
        let plan = rolling_update(&d, &nodes, &[&pa, &pb], "new", NOW);
        assert_eq!(plan.create, ["a"]);
        assert!(plan.delete.is_empty());
        // The new pod on a is not available yet: wait.
        let na = pod("n-a", "a", "new", "2024-01-01T00:01:00Z", false);
        assert!(rolling_update(&d, &nodes, &[&pa, &na, &pb], "new", NOW).is_empty());
        // Manage keeps both pods on a meanwhile (old ready, new not available).
        let mut backoff = FailedPodBackoff::default();
        assert!(manage(&d, &nodes, &[&pa, &na, &pb], "new", NOW, &mut backoff).is_empty());
        // Available: the old one goes and the next node surges.
        let na = pod("n-a", "a", "new", "2024-01-01T00:01:00Z", true);
        let plan = rolling_update(&d, &nodes, &[&pa, &na, &pb], "new", NOW);
        assert_eq!(plan.delete, ["p-a"]);
        assert_eq!(plan.create, ["b"]);
    }

    #[test]
    fn status_counts() {
        let mut d = ds();
        d["spec"]["template"]["spec"]["nodeSelector"] = json!({"run": "yes"});
        let mut a = node("a");
        a["metadata"]["labels"]["run"] = json!("yes");
        let mut b = node("b");
        b["metadata"]["labels"]["run"] = json!("yes");
        let c = node("c");
        let pa = pod("p-a", "a", "h", "2024-01-01T00:00:00Z", true);
        let pb = pod("p-b", "b", "old", "2024-01-01T00:00:00Z", false);
        let pc = pod("p-c", "c", "h", "2024-01-01T00:00:00Z", true);
        let st = status(&d, &[a, b, c], &[&pa, &pb, &pc], "h", NOW, true);
        assert_eq!(st["desiredNumberScheduled"], 2);
        assert_eq!(st["currentNumberScheduled"], 2);
        assert_eq!(st["numberMisscheduled"], 1);
        assert_eq!(st["numberReady"], 1);
        assert_eq!(st["numberAvailable"], 1);
        assert_eq!(st["numberUnavailable"], 1);
        assert_eq!(st["updatedNumberScheduled"], 1);
        assert_eq!(st["observedGeneration"], 2);
        assert!(status_changed(&d, &st));
        let mut written = d.clone();
        written["status"] = st.clone();
        assert!(!status_changed(&written, &st));
    }

    #[test]
    fn history_is_created_reused_bumped_and_truncated() {
        let d = ds();
        let (cur, old) = construct_history(&d, &[]);
        let Current::Create(rev) = cur else { panic!() };
        assert!(old.is_empty());
        assert_eq!(rev["revision"], 1);
        let hash = rev["metadata"]["labels"][REVISION_LABEL]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(rev["metadata"]["name"], format!("agent-{hash}"));
        assert_eq!(rev["data"]["spec"]["template"]["$patch"], "replace");
        // A new template: the old revision is old, a new one is revision 2.
        let mut d2 = d.clone();
        d2["spec"]["template"]["spec"]["containers"][0]["image"] = json!("agent:2");
        let (cur, old) = construct_history(&d2, &[&rev]);
        let Current::Create(rev2) = cur else { panic!() };
        assert_eq!(old.len(), 1);
        assert_eq!(rev2["revision"], 2);
        assert_ne!(rev2["metadata"]["name"], rev["metadata"]["name"]);
        // Rolling back to the first template re-uses revision 1, bumped to 3.
        let (cur, old) = construct_history(&d, &[&rev, &rev2]);
        let Current::Existing {
            revision,
            bump_to,
            duplicates,
        } = cur
        else {
            panic!()
        };
        assert_eq!(revision["metadata"]["name"], rev["metadata"]["name"]);
        assert_eq!(bump_to, Some(3));
        assert!(duplicates.is_empty());
        assert_eq!(old.len(), 1);
        // Cleanup: beyond the limit, oldest first, live hashes spared.
        let mut limited = d.clone();
        limited["spec"]["revisionHistoryLimit"] = json!(1);
        let revs: Vec<Value> = (1..=4)
            .map(|i| json!({"metadata": {"name": format!("agent-{i}"), "labels": {REVISION_LABEL: format!("h{i}")}}, "revision": i}))
            .collect();
        let refs: Vec<&Value> = revs.iter().collect();
        let live = pod("p", "a", "h1", "2024-01-01T00:00:00Z", true);
        assert_eq!(
            cleanup_history(&limited, &refs, &[&live]),
            ["agent-2", "agent-3", "agent-4"]
        );
    }
}
