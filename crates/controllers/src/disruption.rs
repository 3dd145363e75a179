//! The disruption controller (upstream's `pkg/controller/disruption`): the status of every
//! PodDisruptionBudget — the pods its selector picks in its namespace, how many are
//! expected (`minAvailable` as a number: the pods found; a percentage, or any
//! `maxUnavailable`: the summed scale of the pods' controllers, found through owner
//! references — a Deployment through its ReplicaSet, a ReplicaSet, and otherwise the
//! controller's `/scale` subresource, as for StatefulSets and ReplicationControllers),
//! how many are healthy (Ready, not being deleted, not recently evicted), how many must
//! be (`desiredHealthy`, percentages rounded up), and so how many disruptions are
//! allowed, with the `DisruptionAllowed` condition (`SufficientPods`,
//! `InsufficientPods`, or `SyncFailed` when the status cannot be computed). Entries of
//! `disruptedPods` (written by evictions) are dropped once their pod is being deleted or
//! after [`DELETION_TIMEOUT_MS`], and the budget is checked again when the next one
//! expires.
//!
//! A pod not being deleted whose `DisruptionTarget=True` condition is older than
//! [`STALE_POD_DISRUPTION_TIMEOUT_MS`] (a disruption that never happened) has it reset to
//! `False`.
//!
//! [`reconcile`], [`fail_safe`], [`stale_disruption_in`] and [`clear_disruption_target`]
//! are pure; [`run_disruption`] feeds them from the PodDisruptionBudget, pod, ReplicaSet
//! and Deployment informers and writes `poddisruptionbudgets/status` (and `pods/status`)
//! as the `disruption-controller` service account.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, Recorder};
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next};
use crate::util::rfc3339;

/// How long an evicted pod may stay in `disruptedPods` without being deleted (upstream's
/// `DeletionTimeout`, 2 min).
pub const DELETION_TIMEOUT_MS: i64 = 2 * 60 * 1000;

/// The condition type and its reasons.
pub const DISRUPTION_ALLOWED: &str = "DisruptionAllowed";
pub const SUFFICIENT_PODS: &str = "SufficientPods";
pub const INSUFFICIENT_PODS: &str = "InsufficientPods";
pub const SYNC_FAILED: &str = "SyncFailed";

/// A controller found for a pod: its uid and desired scale (`None`: not found).
pub type Found = Result<Option<(String, i64)>, String>;

/// An event to record: on the budget, or on a pod (by name).
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub pod: Option<String>,
    pub type_: EventType,
    pub reason: &'static str,
    pub message: String,
}

/// What one sync decided.
#[derive(Debug, Default)]
pub struct Outcome {
    /// The budget with its new status, `None` when it is up to date.
    pub update: Option<Value>,
    pub events: Vec<Event>,
    /// Check again after this many milliseconds (the next `disruptedPods` expiry).
    pub recheck_ms: Option<i64>,
}

/// A failed sync: the error and the events recorded on the way.
#[derive(Debug)]
pub struct Failure {
    pub message: String,
    pub events: Vec<Event>,
}

/// `getPodsForPdb`: the pods of `pods` (the budget's namespace) its selector picks (a
/// missing selector picks none, an empty one all).
pub fn pods_for(pdb: &Value, pods: &[Value]) -> Result<Vec<Value>, String> {
    let selector = api::selector::LabelSelector::from_label_selector(&pdb["spec"]["selector"])
        .map_err(|e| e.to_string())?;
    Ok(pods
        .iter()
        .filter(|p| selector.matches_object(p))
        .cloned()
        .collect())
}

/// `GetScaledValueFromIntOrPercent` rounding up.
fn scaled(v: &Value, total: i64) -> Result<i64, String> {
    match v {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("invalid value for IntOrString: invalid value {n}")),
        Value::String(s) => {
            let Some(p) = s.strip_suffix('%') else {
                return Err(
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .into(),
                );
            };
            let p: i64 = p
                .parse()
                .map_err(|e| format!("invalid value for IntOrString: invalid value {s:?}: {e}"))?;
            Ok((p.saturating_mul(total) + 99).div_euclid(100))
        }
        _ => Err("nil value for IntOrString".into()),
    }
}

fn api_group(api_version: &str) -> &str {
    api_version.split_once('/').map_or("", |(g, _)| g)
}

/// `getPodDeployment` then `getPodReplicaSet` over the cached ReplicaSets and
/// Deployments: the Deployment controlling the pod's ReplicaSet, else the ReplicaSet
/// itself unless a Deployment controls it. `None` when `owner` is no ReplicaSet found.
pub fn find_through_replicaset(
    owner: &Value,
    replicaset: &dyn Fn(&str) -> Option<Value>,
    deployment: &dyn Fn(&str) -> Option<Value>,
) -> Option<(String, i64)> {
    let is = |r: &Value, kind: &str| {
        r["kind"] == kind
            && matches!(
                api_group(r["apiVersion"].as_str().unwrap_or_default()),
                "apps" | "extensions"
            )
    };
    if !is(owner, "ReplicaSet") {
        return None;
    }
    let rs = replicaset(owner["name"].as_str().unwrap_or_default())?;
    if rs["metadata"]["uid"] != owner["uid"] {
        return None;
    }
    match crate::pods::controller_of(&rs) {
        Some(d) if is(d, "Deployment") => {
            let dep = deployment(d["name"].as_str().unwrap_or_default())?;
            if dep["metadata"]["uid"] != d["uid"] {
                return None;
            }
            Some((
                dep["metadata"]["uid"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                dep["spec"]["replicas"].as_i64().unwrap_or(1),
            ))
        }
        // A ReplicaSet a Deployment controls is left to the Deployment.
        Some(d) if d["kind"] == "Deployment" => None,
        _ => Some((
            rs["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            rs["spec"]["replicas"].as_i64().unwrap_or(1),
        )),
    }
}

/// `getExpectedScale`: the summed scale of the pods' controllers, and the unmanaged pods.
fn expected_scale(
    pods: &[Value],
    find: &dyn Fn(&Value) -> Found,
) -> Result<(i64, Vec<String>), String> {
    let mut scales: BTreeMap<String, i64> = BTreeMap::new();
    let mut unmanaged = Vec::new();
    for pod in pods {
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let Some(owner) = crate::pods::controller_of(pod) else {
            unmanaged.push(name.to_string());
            continue;
        };
        if owner["uid"]
            .as_str()
            .is_some_and(|u| scales.contains_key(u))
        {
            continue;
        }
        match find(owner)? {
            Some((uid, scale)) => {
                scales.insert(uid, scale);
            }
            None => return Err(format!("found no controllers for pod {name:?}")),
        }
    }
    Ok((scales.values().sum(), unmanaged))
}

/// `getExpectedPodCount`: (expectedCount, desiredHealthy, unmanaged pods).
fn expected_pod_count(
    pdb: &Value,
    pods: &[Value],
    find: &dyn Fn(&Value) -> Found,
) -> Result<(i64, i64, Vec<String>), String> {
    let spec = &pdb["spec"];
    if !spec["maxUnavailable"].is_null() {
        let (expected, unmanaged) = expected_scale(pods, find)?;
        let max = scaled(&spec["maxUnavailable"], expected)?;
        return Ok((expected, (expected - max).max(0), unmanaged));
    }
    match &spec["minAvailable"] {
        Value::Number(_) => Ok((
            i64::try_from(pods.len()).unwrap_or(i64::MAX),
            scaled(&spec["minAvailable"], 0)?,
            Vec::new(),
        )),
        Value::String(_) => {
            let (expected, unmanaged) = expected_scale(pods, find)?;
            Ok((
                expected,
                scaled(&spec["minAvailable"], expected)?,
                unmanaged,
            ))
        }
        _ => Ok((0, 0, Vec::new())),
    }
}

/// `buildDisruptedPodMap`: the entries still pending (their pod not yet being deleted,
/// younger than the timeout), the events for overdue ones, and the next expiry.
fn disrupted_pods(
    pdb: &Value,
    pods: &[Value],
    now_ms: i64,
    events: &mut Vec<Event>,
) -> (BTreeMap<String, String>, Option<i64>) {
    let mut kept = BTreeMap::new();
    let mut recheck: Option<i64> = None;
    let Some(listed) = pdb["status"]["disruptedPods"].as_object() else {
        return (kept, recheck);
    };
    let ns = pdb["metadata"]["namespace"].as_str().unwrap_or_default();
    for pod in pods {
        if !pod["metadata"]["deletionTimestamp"].is_null() {
            continue;
        }
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        let Some(at) = listed.get(name) else { continue };
        let Some(at_ms) = crate::pods::time_ms(at) else {
            continue;
        };
        let expected_deletion = at_ms.saturating_add(DELETION_TIMEOUT_MS);
        if expected_deletion < now_ms {
            events.push(Event {
                pod: Some(name.to_string()),
                type_: EventType::Warning,
                reason: "NotDeleted",
                // (Upstream prints the namespace twice.)
                message: format!("Pod was expected by PDB {ns}/{ns} to be deleted but it wasn't"),
            });
        } else {
            if recheck.is_none_or(|r| expected_deletion < r) {
                recheck = Some(expected_deletion);
            }
            kept.insert(
                name.to_string(),
                at.as_str().unwrap_or_default().to_string(),
            );
        }
    }
    (kept, recheck)
}

/// `countHealthyPods`: Ready pods neither being deleted nor recently evicted.
fn count_healthy(pods: &[Value], disrupted: &BTreeMap<String, String>, now_ms: i64) -> i64 {
    let healthy = pods.iter().filter(|pod| {
        if !pod["metadata"]["deletionTimestamp"].is_null() {
            return false;
        }
        let name = pod["metadata"]["name"].as_str().unwrap_or_default();
        if let Some(at) = disrupted
            .get(name)
            .and_then(|t| crate::pods::time_ms(&json!(t)))
            && at.saturating_add(DELETION_TIMEOUT_MS) > now_ms
        {
            return false;
        }
        crate::pods::is_ready(pod)
    });
    i64::try_from(healthy.count()).unwrap_or(i64::MAX)
}

/// `apimeta.SetStatusCondition` of the `DisruptionAllowed` condition.
fn set_condition(status: &mut Value, state: &str, reason: &str, message: &str, now_ms: i64) {
    let generation = status["observedGeneration"].clone();
    let conditions = status["conditions"].as_array().cloned().unwrap_or_default();
    let mut out = Vec::with_capacity(conditions.len() + 1);
    let mut found = false;
    for mut c in conditions {
        if c["type"] == DISRUPTION_ALLOWED {
            found = true;
            if c["status"] != state {
                c["status"] = json!(state);
                c["lastTransitionTime"] = json!(rfc3339(now_ms));
            }
            c["reason"] = json!(reason);
            c["message"] = json!(message);
            c["observedGeneration"] = generation.clone();
        }
        out.push(c);
    }
    if !found {
        out.push(json!({
            "type": DISRUPTION_ALLOWED, "status": state, "reason": reason, "message": message,
            "observedGeneration": generation, "lastTransitionTime": rfc3339(now_ms),
        }));
    }
    status["conditions"] = Value::Array(out);
}

/// `ConditionsAreUpToDate`.
fn conditions_up_to_date(pdb: &Value) -> bool {
    let status = &pdb["status"];
    let Some(c) = status["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == DISRUPTION_ALLOWED))
    else {
        return false;
    };
    if status["observedGeneration"].as_i64().unwrap_or(0) != generation(pdb) {
        return false;
    }
    if status["disruptionsAllowed"].as_i64().unwrap_or(0) > 0 {
        c["status"] == "True" && c["reason"] == SUFFICIENT_PODS
    } else {
        c["status"] == "False" && c["reason"] == INSUFFICIENT_PODS
    }
}

fn generation(pdb: &Value) -> i64 {
    pdb["metadata"]["generation"].as_i64().unwrap_or(0)
}

fn string_map(v: &Value) -> BTreeMap<String, String> {
    v.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect()
}

/// `trySync` and `updatePdbStatus` for one budget over the pods of its namespace.
/// `find` resolves a pod's controller reference to its controller's uid and scale.
pub fn reconcile(
    pdb: &Value,
    namespace_pods: &[Value],
    find: &dyn Fn(&Value) -> Found,
    now_ms: i64,
) -> Result<Outcome, Failure> {
    let mut events = Vec::new();
    let pods = match pods_for(pdb, namespace_pods) {
        Ok(p) => p,
        Err(e) => {
            events.push(Event {
                pod: None,
                type_: EventType::Warning,
                reason: "NoPods",
                message: format!("Failed to get pods: {e}"),
            });
            return Err(Failure { message: e, events });
        }
    };
    if pods.is_empty() {
        events.push(Event {
            pod: None,
            type_: EventType::Normal,
            reason: "NoPods",
            message: "No matching pods found".into(),
        });
    }
    let (expected, desired, unmanaged) = match expected_pod_count(pdb, &pods, find) {
        Ok(v) => v,
        Err(e) => {
            events.push(Event {
                pod: None,
                type_: EventType::Warning,
                reason: "CalculateExpectedPodCountFailed",
                message: format!("Failed to calculate the number of expected pods: {e}"),
            });
            return Err(Failure { message: e, events });
        }
    };
    if !unmanaged.is_empty() {
        let selector = api::selector::LabelSelector::from_label_selector(&pdb["spec"]["selector"])
            .map(|s| s.to_string())
            .unwrap_or_default();
        events.push(Event {
            pod: None,
            type_: EventType::Warning,
            reason: "UnmanagedPods",
            message: format!(
                "Pods selected by this PodDisruptionBudget (selector: {selector}) were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value."
            ),
        });
    }
    let (disrupted, recheck_at) = disrupted_pods(pdb, &pods, now_ms, &mut events);
    let healthy = count_healthy(&pods, &disrupted, now_ms);
    let mut allowed = healthy - desired;
    if expected <= 0 || allowed <= 0 {
        allowed = 0;
    }
    let status = &pdb["status"];
    let same = status["currentHealthy"].as_i64().unwrap_or(0) == healthy
        && status["desiredHealthy"].as_i64().unwrap_or(0) == desired
        && status["expectedPods"].as_i64().unwrap_or(0) == expected
        && status["disruptionsAllowed"].as_i64().unwrap_or(0) == allowed
        && string_map(&status["disruptedPods"]) == disrupted
        && status["observedGeneration"].as_i64().unwrap_or(0) == generation(pdb)
        && conditions_up_to_date(pdb);
    let update = (!same).then(|| {
        let mut new_status = json!({
            "currentHealthy": healthy,
            "desiredHealthy": desired,
            "expectedPods": expected,
            "disruptionsAllowed": allowed,
            "observedGeneration": generation(pdb),
            "conditions": status["conditions"].as_array().cloned().unwrap_or_default(),
        });
        if !disrupted.is_empty() {
            new_status["disruptedPods"] = json!(disrupted);
        }
        if allowed > 0 {
            set_condition(&mut new_status, "True", SUFFICIENT_PODS, "", now_ms);
        } else {
            set_condition(&mut new_status, "False", INSUFFICIENT_PODS, "", now_ms);
        }
        let mut updated = pdb.clone();
        updated["status"] = new_status;
        updated
    });
    Ok(Outcome {
        update,
        events,
        recheck_ms: recheck_at.map(|t| (t - now_ms).max(0)),
    })
}

/// `failSafe`: no disruptions allowed and the condition `False`/`SyncFailed` with the
/// error, the rest of the status kept.
pub fn fail_safe(pdb: &Value, message: &str, now_ms: i64) -> Value {
    let mut updated = pdb.clone();
    let mut status = if pdb["status"].is_object() {
        pdb["status"].clone()
    } else {
        json!({})
    };
    status["disruptionsAllowed"] = json!(0);
    if status["observedGeneration"].is_null() {
        status["observedGeneration"] = json!(0);
    }
    set_condition(&mut status, "False", SYNC_FAILED, message, now_ms);
    updated["status"] = status;
    updated
}

/// How long a pod not being deleted may keep a `DisruptionTarget=True` condition (upstream's
/// `stalePodDisruptionTimeout`, 2 min).
pub const STALE_POD_DISRUPTION_TIMEOUT_MS: i64 = 2 * 60 * 1000;

/// `nonTerminatingPodHasStaleDisruptionCondition`: `Some(wait)` when the pod has a
/// `DisruptionTarget=True` condition that will be stale in `wait` ms (0: already), `None`
/// when it has none to clear (being deleted, terminal, no such condition, or set by the
/// kubelet).
pub fn stale_disruption_in(pod: &Value, now_ms: i64) -> Option<i64> {
    if !pod["metadata"]["deletionTimestamp"].is_null()
        || matches!(
            pod["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        )
    {
        return None;
    }
    let cond = pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")?;
    if cond["status"] != "True" || cond["reason"] == "TerminationByKubelet" {
        return None;
    }
    let since = crate::pods::time_ms(&cond["lastTransitionTime"]).unwrap_or(0);
    Some((since.saturating_add(STALE_POD_DISRUPTION_TIMEOUT_MS) - now_ms).max(0))
}

/// The strategic merge patch of a pod's status that resets its stale `DisruptionTarget`
/// condition to `False` (upstream's `UpdatePodCondition` of a bare condition: reason,
/// message and probe time cleared, the transition time now), with the pod's
/// resourceVersion as a precondition. A patch rather than the whole status, because the
/// cached pod holds only what controllers read.
pub fn clear_disruption_target(pod: &Value, now_ms: i64) -> Value {
    json!({
        "metadata": {"resourceVersion": pod["metadata"]["resourceVersion"]},
        "status": {"conditions": [{"type": "DisruptionTarget", "status": "False",
            "lastTransitionTime": rfc3339(now_ms), "reason": null, "message": null,
            "lastProbeTime": null}]},
    })
}

/// The budgets of `ns` whose selectors pick a pod with these labels.
fn budgets_for(pdbs: &Store<PodDisruptionBudget>, pod: &Value) -> Vec<String> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    pdbs.state()
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
        .filter_map(|p| serde_json::to_value(p.as_ref()).ok())
        .filter(|p| {
            api::selector::LabelSelector::from_label_selector(&p["spec"]["selector"])
                .is_ok_and(|s| s.matches_object(pod))
        })
        .map(|p| {
            format!(
                "{ns}/{}",
                p["metadata"]["name"].as_str().unwrap_or_default()
            )
        })
        .collect()
}

struct Shared {
    pdbs: Store<PodDisruptionBudget>,
    pods: Store<CachedPod>,
    replicasets: Store<ReplicaSet>,
    deployments: Store<Deployment>,
    queue: WorkQueue<String>,
    /// Pods whose `DisruptionTarget` condition is to be reset once stale.
    stale: WorkQueue<String>,
    writer: Client,
    events: Recorder,
}

fn value_of<K: serde::Serialize>(o: &K) -> Option<Value> {
    serde_json::to_value(o).ok()
}

impl Shared {
    /// The `/scale` of a controller other than a ReplicaSet (upstream's
    /// `getPodReplicationController`, `getPodStatefulSet` and `getScaleController`).
    async fn scale_of(&self, owner: &Value, ns: &str) -> Found {
        let api_version = owner["apiVersion"].as_str().unwrap_or_default();
        let kind = owner["kind"].as_str().unwrap_or_default();
        let name = owner["name"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let gvk = kube::api::GroupVersionKind::gvk(group, version, kind);
        let (ar, caps) = match kube::discovery::pinned_kind(&self.writer, &gvk).await {
            Ok(found) => found,
            Err(_) => {
                return Err(format!(
                    "no matches for kind {kind:?} in version {api_version:?}"
                ));
            }
        };
        let prefix = if group.is_empty() {
            format!("/api/{version}")
        } else {
            format!("/apis/{group}/{version}")
        };
        let path = format!("{prefix}/namespaces/{ns}/{}/{name}/scale", ar.plural);
        let req = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| e.to_string())?;
        match self.writer.request::<Value>(req).await {
            Ok(scale) => {
                if scale["metadata"]["uid"] != owner["uid"] {
                    return Ok(None);
                }
                Ok(Some((
                    scale["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    scale["spec"]["replicas"].as_i64().unwrap_or(0),
                )))
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                let scalable = caps.subresources.iter().any(|(s, _)| s.plural == "scale");
                if scalable {
                    Ok(None)
                } else {
                    let gr = if group.is_empty() {
                        ar.plural.clone()
                    } else {
                        format!("{}.{group}", ar.plural)
                    };
                    Err(format!("{gr} does not implement the scale subresource"))
                }
            }
            Err(e) => Err(e.to_string()),
        }
    }

    fn record(&self, pdb: &Value, events: &[Event]) {
        for e in events {
            let reference = match &e.pod {
                None => crate::run::reference(pdb, "PodDisruptionBudget", "policy/v1"),
                Some(pod) => {
                    let ns = pdb["metadata"]["namespace"].as_str().unwrap_or_default();
                    match self
                        .pods
                        .get(&ObjectRef::new(pod).within(ns))
                        .and_then(|p| value_of(p.as_ref()))
                    {
                        Some(p) => crate::run::reference(&p, "Pod", "v1"),
                        None => continue,
                    }
                }
            };
            self.events.event(&reference, e.type_, e.reason, &e.message);
        }
    }
}

async fn sync(s: Arc<Shared>, key: String) -> Result<(), kube::Error> {
    let (ns, name) = key.split_once('/').unwrap_or(("", &key));
    let Some(pdb) = s.pdbs.get(&ObjectRef::new(name).within(ns)) else {
        return Ok(());
    };
    let pdb = serde_json::to_value(pdb.as_ref()).map_err(kube::Error::SerdeError)?;
    let pods: Vec<Value> = s
        .pods
        .state()
        .iter()
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
        .filter_map(|p| value_of(p.as_ref()))
        .collect();
    // Controllers other than ReplicaSets are read through /scale first (only when the
    // expected count needs them).
    let needs_scale =
        !pdb["spec"]["maxUnavailable"].is_null() || pdb["spec"]["minAvailable"].is_string();
    let mut scales: HashMap<String, Found> = HashMap::new();
    if needs_scale && let Ok(selected) = pods_for(&pdb, &pods) {
        for pod in &selected {
            let Some(owner) = crate::pods::controller_of(pod) else {
                continue;
            };
            let uid = owner["uid"].as_str().unwrap_or_default().to_string();
            let is_rs = owner["kind"] == "ReplicaSet"
                && matches!(
                    api_group(owner["apiVersion"].as_str().unwrap_or_default()),
                    "apps" | "extensions"
                );
            if is_rs || scales.contains_key(&uid) {
                continue;
            }
            let found = s.scale_of(owner, ns).await;
            scales.insert(uid, found);
        }
    }
    let replicaset = |n: &str| {
        s.replicasets
            .get(&ObjectRef::new(n).within(ns))
            .and_then(|o| value_of(o.as_ref()))
    };
    let deployment = |n: &str| {
        s.deployments
            .get(&ObjectRef::new(n).within(ns))
            .and_then(|o| value_of(o.as_ref()))
    };
    let find = |owner: &Value| -> Found {
        if let Some(found) = find_through_replicaset(owner, &replicaset, &deployment) {
            return Ok(Some(found));
        }
        let uid = owner["uid"].as_str().unwrap_or_default();
        scales.get(uid).cloned().unwrap_or(Ok(None))
    };
    let now = crate::run::now_ms();
    let api: Api<PodDisruptionBudget> = Api::namespaced(s.writer.clone(), ns);
    let write = |updated: Value| {
        let api = api.clone();
        async move {
            let body: PodDisruptionBudget =
                serde_json::from_value(updated).map_err(kube::Error::SerdeError)?;
            api.replace_status(name, &PostParams::default(), &body)
                .await
                .map(drop)
        }
    };
    match reconcile(&pdb, &pods, &find, now) {
        Ok(outcome) => {
            s.record(&pdb, &outcome.events);
            if let Some(updated) = outcome.update {
                tracing::debug!(pdb = %key, status = %updated["status"], "updating budget status");
                write(updated).await?;
            }
            if let Some(ms) = outcome.recheck_ms {
                let wait = Duration::from_millis(u64::try_from(ms).unwrap_or(0));
                s.queue.add_after(key.clone(), wait);
            }
            Ok(())
        }
        Err(failure) => {
            s.record(&pdb, &failure.events);
            tracing::info!(pdb = %key, error = %failure.message, "failed to sync budget");
            write(fail_safe(&pdb, &failure.message, now)).await
        }
    }
}

/// `syncStalePodDisruption`: resets a pod's stale `DisruptionTarget` condition.
async fn sync_stale(s: Arc<Shared>, key: String) -> Result<(), kube::Error> {
    let (ns, name) = key.split_once('/').unwrap_or(("", &key));
    let Some(pod) = s.pods.get(&ObjectRef::new(name).within(ns)) else {
        return Ok(());
    };
    let pod = serde_json::to_value(pod.as_ref()).map_err(kube::Error::SerdeError)?;
    let now = crate::run::now_ms();
    match stale_disruption_in(&pod, now) {
        None => Ok(()),
        Some(wait) if wait > 0 => {
            let wait = Duration::from_millis(u64::try_from(wait).unwrap_or(0));
            s.stale.add_after(key.clone(), wait);
            Ok(())
        }
        Some(_) => {
            Api::<Pod>::namespaced(s.writer.clone(), ns)
                .patch_status(
                    name,
                    &PatchParams::default(),
                    &Patch::Strategic(clear_disruption_target(&pod, now)),
                )
                .await?;
            tracing::info!(pod = %key, "reset stale DisruptionTarget condition to False");
            Ok(())
        }
    }
}

/// Runs the controller with `workers` workers until the informers stop.
pub async fn run_disruption(
    pdbs: Arc<Informer<PodDisruptionBudget>>,
    pods: Arc<Informer<CachedPod>>,
    replicasets: Arc<Informer<ReplicaSet>>,
    deployments: Arc<Informer<Deployment>>,
    writer: Client,
    workers: usize,
) {
    let shared = Arc::new(Shared {
        pdbs: pdbs.store.clone(),
        pods: pods.store.clone(),
        replicasets: replicasets.store.clone(),
        deployments: deployments.store.clone(),
        queue: WorkQueue::named("disruption"),
        stale: WorkQueue::named("stale_pod_disruption"),
        events: crate::run::recorder(&writer, "controllermanager"),
        writer,
    });
    let mut pdb_events = pdbs.subscribe();
    let mut pod_events = pods.subscribe();
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        // The budgets each pod was last seen under, so a pod whose labels change also
        // updates the budget it left.
        let matched: Mutex<HashMap<String, Vec<String>>> = Mutex::new(HashMap::new());
        let pod_changed = |pod: &CachedPod, gone: bool| {
            let key = crate::run::object_key(&pod.metadata);
            let disruption_target = pod
                .status
                .as_ref()
                .and_then(|st| st.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "DisruptionTarget"));
            if !gone
                && disruption_target
                && let Some(v) = value_of(pod)
                && let Some(wait) = stale_disruption_in(&v, crate::run::now_ms())
            {
                let wait = Duration::from_millis(u64::try_from(wait).unwrap_or(0));
                s.stale.add_after(key.clone(), wait);
            }
            // Pods of namespaces without budgets are not even serialized.
            let budgeted = s
                .pdbs
                .state()
                .iter()
                .any(|p| p.metadata.namespace == pod.metadata.namespace);
            let now = if budgeted {
                value_of(pod)
                    .map(|v| budgets_for(&s.pdbs, &v))
                    .unwrap_or_default()
            } else {
                Vec::new()
            };
            let mut m = matched
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let before = if gone || now.is_empty() {
                m.remove(&key)
            } else {
                m.insert(key, now.clone())
            };
            for k in now.into_iter().chain(before.into_iter().flatten()) {
                s.queue.add(k);
            }
        };
        let all = |s: &Shared| {
            for p in s.pdbs.state() {
                s.queue.add(crate::run::object_key(&p.metadata));
            }
        };
        loop {
            tokio::select! {
                e = informers::next(&mut pdb_events) => match e {
                    Next::Apply(p) | Next::Delete(p) => s.queue.add(crate::run::object_key(&p.metadata)),
                    Next::Resync => all(&s),
                    Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut pod_events) => match e {
                    Next::Apply(p) => pod_changed(&p, false),
                    Next::Delete(p) => pod_changed(&p, true),
                    Next::Resync => all(&s),
                    Next::Other => {}
                    Next::Closed => break,
                },
            }
        }
    });
    pdbs.synced().await;
    pods.synced().await;
    replicasets.synced().await;
    deployments.synced().await;
    for p in shared.pdbs.state() {
        shared.queue.add(crate::run::object_key(&p.metadata));
    }
    crate::run::spawn_workers(&shared, &shared.queue, workers, "disruption", sync);
    crate::run::spawn_workers(
        &shared,
        &shared.stale,
        workers,
        "disruption-stale-pod",
        sync_stale,
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    const NOW: i64 = 1_700_000_000_000;

    fn pod(name: &str, ready: bool, owner: Option<(&str, &str, &str)>) -> Value {
        let mut p = json!({
            "metadata": {"name": name, "namespace": "dev", "labels": {"app": "web"}},
            "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        });
        if let Some((api_version, kind, uid)) = owner {
            p["metadata"]["ownerReferences"] = json!([{"apiVersion": api_version, "kind": kind,
                "name": uid, "uid": uid, "controller": true}]);
        }
        p
    }

    fn pdb(spec: Value) -> Value {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"app": "web"}});
        json!({"metadata": {"name": "web", "namespace": "dev", "generation": 1}, "spec": spec})
    }

    fn rs_pods(n: usize, ready: usize) -> Vec<Value> {
        (0..n)
            .map(|i| {
                pod(
                    &format!("p{i}"),
                    i < ready,
                    Some(("apps/v1", "ReplicaSet", "rs1")),
                )
            })
            .collect()
    }

    /// A Deployment `d1` of `replicas` controlling ReplicaSet `rs1`.
    fn finder(replicas: i64) -> impl Fn(&Value) -> Found {
        move |owner: &Value| {
            let rs = |n: &str| {
                (n == "rs1").then(|| json!({"metadata": {"name": "rs1", "uid": "rs1", "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "Deployment", "name": "d1", "uid": "d1", "controller": true}]},
                    "spec": {"replicas": replicas}}))
            };
            let d = |n: &str| {
                (n == "d1").then(|| json!({"metadata": {"name": "d1", "uid": "d1"}, "spec": {"replicas": replicas}}))
            };
            Ok(find_through_replicaset(owner, &rs, &d))
        }
    }

    fn status(o: &Outcome) -> &Value {
        &o.update.as_ref().unwrap()["status"]
    }

    #[test]
    fn min_available_number_counts_the_pods_found() {
        let out = reconcile(
            &pdb(json!({"minAvailable": 2})),
            &rs_pods(3, 3),
            &finder(3),
            NOW,
        )
        .unwrap();
        let st = status(&out);
        assert_eq!(st["expectedPods"], 3);
        assert_eq!(st["currentHealthy"], 3);
        assert_eq!(st["desiredHealthy"], 2);
        assert_eq!(st["disruptionsAllowed"], 1);
        assert_eq!(st["observedGeneration"], 1);
        let c = &st["conditions"][0];
        assert_eq!(c["type"], DISRUPTION_ALLOWED);
        assert_eq!(c["status"], "True");
        assert_eq!(c["reason"], SUFFICIENT_PODS);
        // Written once: nothing more to do.
        let mut written = pdb(json!({"minAvailable": 2}));
        written["status"] = st.clone();
        let again = reconcile(&written, &rs_pods(3, 3), &finder(3), NOW + 1000).unwrap();
        assert!(again.update.is_none());
        // One pod stops being ready: no disruption allowed, the condition flips.
        let out = reconcile(&written, &rs_pods(3, 2), &finder(3), NOW + 2000).unwrap();
        let st = status(&out);
        assert_eq!(st["disruptionsAllowed"], 0);
        assert_eq!(st["conditions"][0]["status"], "False");
        assert_eq!(st["conditions"][0]["reason"], INSUFFICIENT_PODS);
        assert_eq!(
            st["conditions"][0]["lastTransitionTime"],
            rfc3339(NOW + 2000)
        );
    }

    #[test]
    fn percentages_and_max_unavailable_use_the_controllers_scale() {
        // 50% of a Deployment of 4 (3 pods exist, all ready): 2 must stay.
        let out = reconcile(
            &pdb(json!({"minAvailable": "50%"})),
            &rs_pods(3, 3),
            &finder(4),
            NOW,
        )
        .unwrap();
        let st = status(&out);
        assert_eq!(
            (st["expectedPods"].as_i64(), st["desiredHealthy"].as_i64()),
            (Some(4), Some(2))
        );
        assert_eq!(st["disruptionsAllowed"], 1);
        // maxUnavailable 50% of 3 rounds up to 2: 1 must stay, 2 may go.
        let out = reconcile(
            &pdb(json!({"maxUnavailable": "50%"})),
            &rs_pods(3, 3),
            &finder(3),
            NOW,
        )
        .unwrap();
        let st = status(&out);
        assert_eq!(st["expectedPods"], 3);
        assert_eq!(st["desiredHealthy"], 1);
        assert_eq!(st["disruptionsAllowed"], 2);
        // maxUnavailable as a number.
        let out = reconcile(
            &pdb(json!({"maxUnavailable": 1})),
            &rs_pods(3, 3),
            &finder(3),
            NOW,
        )
        .unwrap();
        assert_eq!(status(&out)["disruptionsAllowed"], 1);
        // minAvailable 0%: everything may go.
        let out = reconcile(
            &pdb(json!({"minAvailable": "0%"})),
            &rs_pods(3, 3),
            &finder(3),
            NOW,
        )
        .unwrap();
        assert_eq!(status(&out)["disruptionsAllowed"], 3);
    }

    #[test]
    fn a_bare_replicaset_and_other_controllers() {
        let bare = |owner: &Value| -> Found {
            let rs = |n: &str| {
                (n == "rs1").then(
                    || json!({"metadata": {"name": "rs1", "uid": "rs1"}, "spec": {"replicas": 5}}),
                )
            };
            if let Some(f) = find_through_replicaset(owner, &rs, &|_| None) {
                return Ok(Some(f));
            }
            // A StatefulSet through /scale.
            Ok((owner["kind"] == "StatefulSet").then(|| ("ss1".to_string(), 2)))
        };
        let mut pods = rs_pods(2, 2);
        pods.push(pod("s0", true, Some(("apps/v1", "StatefulSet", "ss1"))));
        let out = reconcile(&pdb(json!({"maxUnavailable": 0})), &pods, &bare, NOW).unwrap();
        let st = status(&out);
        assert_eq!(
            st["expectedPods"], 7,
            "5 of the ReplicaSet + 2 of the StatefulSet"
        );
        assert_eq!(st["desiredHealthy"], 7);
        assert_eq!(st["disruptionsAllowed"], 0);
        // A ReplicaSet whose Deployment is not cached is no controller found.
        let e = reconcile(&pdb(json!({"maxUnavailable": 1})), &rs_pods(1, 1), &|o: &Value| {
            Ok(find_through_replicaset(o, &|_| Some(json!({"metadata": {"uid": "rs1", "ownerReferences": [
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "gone", "uid": "gone", "controller": true}]}})), &|_| None))
        }, NOW)
        .unwrap_err();
        assert_eq!(e.message, "found no controllers for pod \"p0\"");
        assert_eq!(e.events[0].reason, "CalculateExpectedPodCountFailed");
        let failed = fail_safe(&pdb(json!({"maxUnavailable": 1})), &e.message, NOW);
        assert_eq!(failed["status"]["disruptionsAllowed"], 0);
        let c = &failed["status"]["conditions"][0];
        assert_eq!(
            (c["status"].as_str(), c["reason"].as_str()),
            (Some("False"), Some(SYNC_FAILED))
        );
        assert_eq!(c["message"], "found no controllers for pod \"p0\"");
    }

    #[test]
    fn unmanaged_pods_and_no_pods() {
        let pods = vec![pod("bare", true, None)];
        let out = reconcile(&pdb(json!({"maxUnavailable": 1})), &pods, &finder(3), NOW).unwrap();
        assert!(out.events.iter().any(|e| e.reason == "UnmanagedPods"));
        assert_eq!(status(&out)["expectedPods"], 0);
        assert_eq!(
            status(&out)["disruptionsAllowed"],
            0,
            "nothing expected: no disruptions"
        );
        let out = reconcile(&pdb(json!({"minAvailable": 1})), &[], &finder(3), NOW).unwrap();
        assert_eq!(out.events[0].reason, "NoPods");
        assert_eq!(out.events[0].message, "No matching pods found");
        // Another namespace's or another app's pods are not picked.
        let mut other = pod("x", true, None);
        other["metadata"]["labels"] = json!({"app": "db"});
        assert!(pods_for(&pdb(json!({})), &[other]).unwrap().is_empty());
        // An empty selector picks everything; none picks nothing.
        let everything =
            json!({"metadata": {"name": "all", "namespace": "dev"}, "spec": {"selector": {}}});
        assert_eq!(pods_for(&everything, &rs_pods(2, 0)).unwrap().len(), 2);
        let nothing = json!({"metadata": {"name": "none", "namespace": "dev"}, "spec": {}});
        assert!(pods_for(&nothing, &rs_pods(2, 0)).unwrap().is_empty());
    }

    #[test]
    fn disrupted_pods_are_unhealthy_until_deleted_or_expired() {
        let mut budget = pdb(json!({"minAvailable": 1}));
        let evicted_at = rfc3339(NOW - 30_000);
        let old = rfc3339(NOW - 3 * 60_000);
        budget["status"] =
            json!({"disruptedPods": {"p0": evicted_at, "p1": old, "gone": evicted_at}});
        let mut pods = rs_pods(3, 3);
        pods[2]["metadata"]["deletionTimestamp"] = json!(rfc3339(NOW));
        let out = reconcile(&budget, &pods, &finder(3), NOW).unwrap();
        let st = status(&out);
        // p0 recently evicted, p2 being deleted: only p1 is healthy.
        assert_eq!(st["currentHealthy"], 1);
        assert_eq!(st["disruptionsAllowed"], 0);
        // Only p0 stays in the map; p1 overdue, `gone` no longer exists.
        assert_eq!(st["disruptedPods"], json!({"p0": evicted_at}));
        assert!(
            out.events
                .iter()
                .any(|e| e.reason == "NotDeleted" && e.pod.as_deref() == Some("p1"))
        );
        // Checked again when p0's entry expires.
        assert_eq!(out.recheck_ms, Some(DELETION_TIMEOUT_MS - 30_000));
        // Once it expires, the map empties and the field goes.
        let mut later = budget.clone();
        later["status"] = st.clone();
        let out = reconcile(&later, &pods, &finder(3), NOW + DELETION_TIMEOUT_MS).unwrap();
        let st = status(&out);
        assert!(st.get("disruptedPods").is_none());
        assert_eq!(st["currentHealthy"], 2);
        assert_eq!(st["disruptionsAllowed"], 1);
    }

    #[test]
    fn stale_disruption_targets_are_reset_after_two_minutes() {
        let mut p = pod("p", true, None);
        p["status"]["conditions"] = json!([{"type": "DisruptionTarget", "status": "True",
            "reason": "PreemptionByScheduler", "message": "preempted",
            "lastTransitionTime": rfc3339(NOW - 30_000)}]);
        assert_eq!(stale_disruption_in(&p, NOW), Some(90_000));
        assert_eq!(stale_disruption_in(&p, NOW + 200_000), Some(0));
        p["metadata"]["resourceVersion"] = json!("42");
        let patch = clear_disruption_target(&p, NOW + 200_000);
        assert_eq!(
            patch,
            json!({"metadata": {"resourceVersion": "42"},
                "status": {"conditions": [{"type": "DisruptionTarget", "status": "False",
                    "lastTransitionTime": rfc3339(NOW + 200_000), "reason": null,
                    "message": null, "lastProbeTime": null}]}})
        );
        let mut cleared = p.clone();
        cleared["status"]["conditions"][0] = json!({"type": "DisruptionTarget",
            "status": "False", "lastTransitionTime": rfc3339(NOW + 200_000)});
        assert_eq!(stale_disruption_in(&cleared, NOW + 200_000), None);
        // Being deleted, terminal, or set by the kubelet: never stale.
        let mut deleting = p.clone();
        deleting["metadata"]["deletionTimestamp"] = json!(rfc3339(NOW));
        assert_eq!(stale_disruption_in(&deleting, NOW), None);
        let mut done = p.clone();
        done["status"]["phase"] = json!("Failed");
        assert_eq!(stale_disruption_in(&done, NOW), None);
        let mut kubelet = p.clone();
        kubelet["status"]["conditions"][0]["reason"] = json!("TerminationByKubelet");
        assert_eq!(stale_disruption_in(&kubelet, NOW), None);
    }

    #[test]
    fn a_new_generation_is_observed() {
        let mut budget = pdb(json!({"minAvailable": 2}));
        let out = reconcile(&budget, &rs_pods(3, 3), &finder(3), NOW).unwrap();
        budget["status"] = status(&out).clone();
        budget["metadata"]["generation"] = json!(2);
        budget["spec"]["minAvailable"] = json!(3);
        let out = reconcile(&budget, &rs_pods(3, 3), &finder(3), NOW).unwrap();
        let st = status(&out);
        assert_eq!(st["observedGeneration"], 2);
        assert_eq!(st["conditions"][0]["observedGeneration"], 2);
        assert_eq!(st["disruptionsAllowed"], 0);
        assert_eq!(st["conditions"].as_array().unwrap().len(), 1);
    }
}
