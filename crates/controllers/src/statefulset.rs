//! The StatefulSet controller (upstream's `pkg/controller/statefulset`): the pure logic
//! over a StatefulSet, its pods, claims and revisions, then the loop that feeds it from
//! the shared informers and carries its actions out as the `statefulset-controller`
//! service account.
//!
//! - [`claim_pods`]: the set's pods (adopting orphans that match its selector and are
//!   named after it, releasing the others);
//! - [`revisions`]: the current and update ControllerRevisions (`getStatefulSetRevisions`:
//!   an equal revision is re-used, bumped when it is not the latest, else a new one is
//!   made);
//! - [`new_pod`]: `<set>-<ordinal>` from the template at a revision, with its identity
//!   (hostname, subdomain, the pod-name and pod-index labels), its claims' volumes and the
//!   `controller-revision-hash` label;
//! - [`update_set`]: upstream's `updateStatefulSet` — failed or succeeded pods deleted and
//!   re-created, missing pods created (claims first) in ordinal order, one at a time and
//!   only once their predecessors are Running, Ready and available under `OrderedReady`,
//!   all at once under `Parallel`; pods beyond the replicas deleted from the highest
//!   ordinal; claims' owner references kept to the `persistentVolumeClaimRetentionPolicy`;
//!   then `RollingUpdate` (from the highest ordinal down to the partition, one pod at a
//!   time, or `maxUnavailable` at a time) — and the status.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use api::selector::LabelSelector;
use k8s_openapi::api::apps::v1::{ControllerRevision, StatefulSet};
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, Recorder};
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::cachedpod::CachedPod;
use crate::history;
use crate::informers::{self, Informer, Next};
use crate::pods::{self, PodView};
use crate::util::{api_message, claimable};

/// Upstream's `StatefulSetPodNameLabel`.
pub const POD_NAME_LABEL: &str = "statefulset.kubernetes.io/pod-name";
/// Upstream's `PodIndexLabel`.
pub const POD_INDEX_LABEL: &str = "apps.kubernetes.io/pod-index";
/// Upstream's `StatefulSetRevisionLabel`.
pub const REVISION_LABEL: &str = "controller-revision-hash";

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

/// `getParentNameAndOrdinal`: `<parent>-<ordinal>`.
pub fn parent_and_ordinal(pod_name: &str) -> Option<(&str, i64)> {
    let (parent, ord) = pod_name.rsplit_once('-')?;
    if ord.is_empty() || !ord.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((parent, ord.parse().ok()?))
}

/// The pod's ordinal (`None`: not `<name>-<n>`).
pub fn ordinal(pod: &Value) -> Option<i64> {
    parent_and_ordinal(name(pod)).map(|(_, o)| o)
}

/// `spec.ordinals.start` (0 by default).
pub fn start_ordinal(set: &Value) -> i64 {
    set["spec"]["ordinals"]["start"]
        .as_i64()
        .unwrap_or(0)
        .max(0)
}

/// `spec.replicas` (1 by default).
pub fn replicas(set: &Value) -> i64 {
    set["spec"]["replicas"].as_i64().unwrap_or(1).max(0)
}

/// `podInOrdinalRange`.
pub fn in_range(pod: &Value, set: &Value) -> bool {
    ordinal(pod).is_some_and(|o| o >= start_ordinal(set) && o < start_ordinal(set) + replicas(set))
}

/// `isMemberOf`: the pod is named after the set.
pub fn is_member(set: &Value, pod: &Value) -> bool {
    parent_and_ordinal(name(pod)).is_some_and(|(p, _)| p == name(set))
}

/// `<set>-<ordinal>`.
pub fn pod_name(set: &Value, ordinal: i64) -> String {
    format!("{}-{ordinal}", name(set))
}

fn deleting(obj: &Value) -> bool {
    !obj["metadata"]["deletionTimestamp"].is_null()
}

fn phase(pod: &Value) -> &str {
    pod["status"]["phase"].as_str().unwrap_or_default()
}

/// `isCreated`: the API server has it (a phase is set).
fn is_created(pod: &Value) -> bool {
    !phase(pod).is_empty()
}

fn running_and_ready(pod: &Value) -> bool {
    phase(pod) == "Running" && pods::is_ready(pod)
}

fn healthy(pod: &Value) -> bool {
    running_and_ready(pod) && !deleting(pod)
}

fn min_ready(set: &Value) -> i64 {
    set["spec"]["minReadySeconds"].as_i64().unwrap_or(0)
}

fn pod_revision(pod: &Value) -> &str {
    pod["metadata"]["labels"][REVISION_LABEL]
        .as_str()
        .unwrap_or_default()
}

/// Upstream's `ClaimPods` with the `isMemberOf` filter.
pub fn claim_pods<'a>(set: &Value, all: &'a [Value]) -> crate::replicaset::Claim<'a> {
    let selector = LabelSelector::from_label_selector(&set["spec"]["selector"])
        .unwrap_or_else(|_| LabelSelector::nothing());
    let set_deleting = deleting(set);
    let mut c = crate::replicaset::Claim::default();
    for pod in all {
        let matches = !selector.is_empty() && selector.matches_object(pod) && is_member(set, pod);
        match pods::controller_of(pod) {
            Some(owner) if owner["uid"] == uid(set) => {
                if matches {
                    c.owned.push(pod);
                } else if !set_deleting {
                    c.release.push(pod);
                }
            }
            Some(_) => {}
            None => {
                if matches && !set_deleting && !deleting(pod) {
                    c.owned.push(pod);
                    c.adopt.push(pod);
                }
            }
        }
    }
    c
}

// ---------------------------------------------------------------------------------------
// Claims

/// `getPersistentVolumeClaimName`: `<claim>-<set>-<ordinal>`.
pub fn claim_name(template: &str, set: &Value, ordinal: i64) -> String {
    format!("{template}-{}-{ordinal}", name(set))
}

/// `getPersistentVolumeClaims`: (template name, claim) for the pod of `ordinal`, labelled
/// with the set's `matchLabels`.
pub fn claims_for(set: &Value, ordinal: i64) -> Vec<(String, Value)> {
    set["spec"]["volumeClaimTemplates"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|t| {
            let template_name = name(t).to_string();
            let mut claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": t["metadata"].clone(), "spec": t["spec"].clone()});
            if !claim["metadata"].is_object() {
                claim["metadata"] = json!({});
            }
            claim["metadata"]["name"] = json!(claim_name(&template_name, set, ordinal));
            claim["metadata"]["namespace"] = set["metadata"]["namespace"].clone();
            let mut labels = claim["metadata"]["labels"].clone();
            if !labels.is_object() {
                labels = json!({});
            }
            if let Some(m) = set["spec"]["selector"]["matchLabels"].as_object() {
                for (k, v) in m {
                    labels[k.as_str()] = v.clone();
                }
            }
            claim["metadata"]["labels"] = labels;
            if let Some(m) = claim["metadata"].as_object_mut() {
                for k in [
                    "uid",
                    "resourceVersion",
                    "creationTimestamp",
                    "ownerReferences",
                ] {
                    m.remove(k);
                }
            }
            (template_name, claim)
        })
        .collect()
}

/// The retention policy (`Retain`/`Retain` by default): (whenDeleted, whenScaled).
fn policy(set: &Value) -> (&str, &str) {
    let p = &set["spec"]["persistentVolumeClaimRetentionPolicy"];
    (
        p["whenDeleted"].as_str().unwrap_or("Retain"),
        p["whenScaled"].as_str().unwrap_or("Retain"),
    )
}

/// `matchesRef`: same apiVersion, kind and name.
fn matches_ref(r: &Value, obj_name: &str, api_version: &str, kind: &str) -> bool {
    r["apiVersion"] == api_version && r["kind"] == kind && r["name"] == obj_name
}

fn refs(claim: &Value) -> Vec<Value> {
    claim["metadata"]["ownerReferences"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

fn has_owner(claim: &Value, owner_uid: &str) -> bool {
    !owner_uid.is_empty() && refs(claim).iter().any(|r| r["uid"] == owner_uid)
}

/// `hasStaleOwnerRef`: a reference to an object of that name and kind with another uid.
fn has_stale_ref(claim: &Value, obj: &Value, api_version: &str, kind: &str) -> bool {
    refs(claim)
        .iter()
        .find(|r| matches_ref(r, name(obj), api_version, kind))
        .is_some_and(|r| r["uid"].as_str().unwrap_or_default() != uid(obj))
}

/// `hasUnexpectedController`.
fn has_unexpected_controller(claim: &Value, set: &Value, pod: &Value) -> bool {
    if policy(set) == ("Retain", "Retain") {
        return false;
    }
    for r in refs(claim) {
        if matches_ref(&r, name(set), "apps/v1", "StatefulSet") {
            if r["uid"].as_str().unwrap_or_default() != uid(set) {
                return true;
            }
            continue;
        }
        if matches_ref(&r, name(pod), "v1", "Pod") {
            if r["uid"].as_str().unwrap_or_default() != uid(pod) {
                return true;
            }
            continue;
        }
        if r["controller"] == true {
            return true;
        }
    }
    false
}

/// `isClaimOwnerUpToDate`: the claim's owner references follow the retention policy
/// (no refs for Retain/Retain, the set for whenDeleted=Delete, the pod for a scaled-down
/// pod with whenScaled=Delete).
pub fn claim_owner_up_to_date(claim: &Value, set: &Value, pod: &Value) -> bool {
    if has_stale_ref(claim, set, "apps/v1", "StatefulSet") || has_stale_ref(claim, pod, "v1", "Pod")
    {
        return true;
    }
    let (set_ref, pod_ref) = (has_owner(claim, uid(set)), has_owner(claim, uid(pod)));
    if has_unexpected_controller(claim, set, pod) {
        return !(set_ref || pod_ref);
    }
    // Some resource of ours is an owner but not controller.
    if refs(claim).iter().any(|r| {
        (r["uid"] == uid(set) || (!uid(pod).is_empty() && r["uid"] == uid(pod)))
            && r["controller"] != true
    }) {
        return false;
    }
    let scaled_down = !in_range(pod, set);
    match policy(set) {
        ("Delete", "Retain") => set_ref && !pod_ref,
        ("Retain", "Delete") => !set_ref && scaled_down == pod_ref,
        ("Delete", "Delete") => scaled_down != set_ref && scaled_down == pod_ref,
        _ => !set_ref && !pod_ref,
    }
}

/// `updateClaimOwnerRefForSetAndPod`: the claim's owner references as the policy wants
/// them (ours scrubbed, then the set and/or pod added as controllers).
pub fn claim_owner_refs(claim: &Value, set: &Value, pod: &Value) -> Vec<Value> {
    let unexpected = has_unexpected_controller(claim, set, pod);
    let mut out: Vec<Value> = refs(claim)
        .into_iter()
        .filter(|r| {
            !matches_ref(r, name(set), "apps/v1", "StatefulSet")
                && !matches_ref(r, name(pod), "v1", "Pod")
        })
        .collect();
    if unexpected {
        return out;
    }
    let scaled_down = !in_range(pod, set);
    let (with_set, with_pod) = match policy(set) {
        ("Delete", "Retain") => (true, false),
        ("Retain", "Delete") => (false, scaled_down),
        ("Delete", "Delete") => (!scaled_down, scaled_down),
        _ => (false, false),
    };
    if with_set && !out.iter().any(|r| r["uid"] == uid(set)) {
        out.push(history::controller_ref(set, "apps/v1", "StatefulSet"));
    }
    if with_pod && !uid(pod).is_empty() && !out.iter().any(|r| r["uid"] == uid(pod)) {
        out.push(history::controller_ref(pod, "v1", "Pod"));
    }
    out
}

// ---------------------------------------------------------------------------------------
// Pods

/// `newStatefulSetPod`: the template (labels, annotations, finalizers, spec), the set as
/// controller, `<set>-<ordinal>` with its identity, the claims' volumes first.
pub fn new_pod(set: &Value, ordinal: i64) -> Value {
    let template = &set["spec"]["template"];
    let pod_name = pod_name(set, ordinal);
    let mut meta = json!({
        "name": pod_name,
        "namespace": set["metadata"]["namespace"],
        "ownerReferences": [history::controller_ref(set, "apps/v1", "StatefulSet")],
    });
    for k in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template["metadata"].get(k).filter(|v| !v.is_null()) {
            meta[k] = v.clone();
        }
    }
    if !meta["labels"].is_object() {
        meta["labels"] = json!({});
    }
    meta["labels"][POD_NAME_LABEL] = json!(pod_name);
    meta["labels"][POD_INDEX_LABEL] = json!(ordinal.to_string());
    let mut spec = template["spec"].clone();
    if !spec.is_object() {
        spec = json!({});
    }
    spec["hostname"] = json!(pod_name);
    if let Some(svc) = set["spec"]["serviceName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        spec["subdomain"] = json!(svc);
    }
    let claims = claims_for(set, ordinal);
    let claimed: HashSet<&str> = claims.iter().map(|(t, _)| t.as_str()).collect();
    let mut volumes: Vec<Value> = claims
        .iter()
        .map(|(t, c)| json!({"name": t, "persistentVolumeClaim": {"claimName": name(c)}}))
        .collect();
    volumes.extend(
        spec["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|v| !claimed.contains(v["name"].as_str().unwrap_or_default()))
            .cloned(),
    );
    if !volumes.is_empty() {
        spec["volumes"] = Value::Array(volumes);
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

fn rolling(set: &Value) -> bool {
    set["spec"]["updateStrategy"]["type"]
        .as_str()
        .unwrap_or("RollingUpdate")
        == "RollingUpdate"
}

fn partition(set: &Value) -> Option<i64> {
    let ru = &set["spec"]["updateStrategy"]["rollingUpdate"];
    if ru.is_object() {
        Some(ru["partition"].as_i64().unwrap_or(0))
    } else {
        None
    }
}

/// `newVersionedStatefulSetPod`: ordinals below the partition (or, without a
/// `rollingUpdate`, below the current replicas) get the current revision, the others
/// the update revision.
pub fn new_versioned_pod(
    current_set: &Value,
    update_set: &Value,
    current_revision: &str,
    update_revision: &str,
    ordinal: i64,
) -> Value {
    let start = start_ordinal(current_set);
    let current_replicas = current_set["status"]["currentReplicas"]
        .as_i64()
        .unwrap_or(0);
    let use_current = match partition(current_set) {
        None => rolling(current_set) && ordinal < start + current_replicas,
        Some(p) => ordinal < start + p,
    };
    let (set, revision) = if use_current {
        (current_set, current_revision)
    } else {
        (update_set, update_revision)
    };
    let mut pod = new_pod(set, ordinal);
    pod["metadata"]["labels"][REVISION_LABEL] = json!(revision);
    pod
}

/// `identityMatches`.
fn identity_matches(set: &Value, pod: &Value) -> bool {
    let Some((parent, ord)) = parent_and_ordinal(name(pod)) else {
        return false;
    };
    parent == name(set)
        && pod["metadata"]["namespace"] == set["metadata"]["namespace"]
        && pod["metadata"]["labels"][POD_NAME_LABEL].as_str() == Some(name(pod))
        && pod["metadata"]["labels"][POD_INDEX_LABEL].as_str() == Some(ord.to_string().as_str())
}

/// `storageMatches`.
fn storage_matches(set: &Value, pod: &Value) -> bool {
    let Some(ord) = ordinal(pod) else {
        return false;
    };
    let volumes: HashMap<&str, &Value> = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (v["name"].as_str().unwrap_or_default(), v))
        .collect();
    claims_for(set, ord).iter().all(|(t, c)| {
        volumes
            .get(t.as_str())
            .is_some_and(|v| v["persistentVolumeClaim"]["claimName"].as_str() == Some(name(c)))
    })
}

// ---------------------------------------------------------------------------------------
// Revisions

/// What `getStatefulSetRevisions` settled on.
#[derive(Debug, Clone)]
pub struct Revisions {
    pub current: Value,
    pub update: Value,
    pub collision_count: i64,
    pub write: RevisionWrite,
}

/// The revision write needed first.
#[derive(Debug, Clone, PartialEq)]
pub enum RevisionWrite {
    None,
    /// Create `update` (on a name clash with other data: bump the collision count and
    /// make it again).
    Create,
    /// An older revision equal to the template becomes the latest (a rollback).
    Bump {
        name: String,
        revision: i64,
    },
}

/// Upstream's `getStatefulSetRevisions` over the set's revisions sorted by
/// [`history::sort_revisions`].
pub fn revisions(set: &Value, sorted: &[&Value]) -> Revisions {
    let collision_count = set["status"]["collisionCount"].as_i64().unwrap_or(0);
    let candidate = history::new_revision(
        set,
        "StatefulSet",
        history::template_patch(set),
        history::next_revision(sorted),
        Some(collision_count),
    );
    let equal = history::find_equal(sorted, &candidate);
    let (update, write) = match (equal.last(), sorted.last()) {
        (Some(eq), Some(last)) if history::equal_revision(last, eq) => {
            ((*last).clone(), RevisionWrite::None)
        }
        (Some(eq), _) => {
            let mut bumped = (*eq).clone();
            bumped["revision"] = candidate["revision"].clone();
            let write = RevisionWrite::Bump {
                name: name(eq).to_string(),
                revision: history::revision_number(&candidate),
            };
            (bumped, write)
        }
        (None, _) => (candidate, RevisionWrite::Create),
    };
    let current_name = set["status"]["currentRevision"]
        .as_str()
        .unwrap_or_default();
    let current = sorted
        .iter()
        .find(|r| !current_name.is_empty() && name(r) == current_name)
        .map_or_else(|| update.clone(), |r| (*r).clone());
    Revisions {
        current,
        update,
        collision_count,
        write,
    }
}

/// The revisions to delete (`truncateHistory`): beyond `revisionHistoryLimit`, the
/// oldest first, sparing the current and update revisions and those of live pods.
pub fn truncate_history(
    set: &Value,
    sorted: &[&Value],
    pods: &[&Value],
    current: &str,
    update: &str,
) -> Vec<String> {
    let mut live: HashSet<&str> = pods.iter().map(|p| pod_revision(p)).collect();
    live.insert(current);
    live.insert(update);
    history::truncate(
        sorted,
        |r| live.contains(name(r)),
        history::history_limit(set),
    )
}

// ---------------------------------------------------------------------------------------
// The update

/// One thing to do, in order; the loop stops at the first that fails.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create a claim for `pod` (already there: fine).
    CreateClaim { claim: Value, pod: String },
    /// Create the pod (its claims were listed just before).
    CreatePod(Value),
    /// Delete the pod.
    DeletePod(String),
    /// Give the pod these labels back (identity) and record an update.
    UpdatePod { pod: String, labels: Value },
    /// Set a claim's owner references (retention policy).
    SetClaimOwners {
        claim: String,
        owner_refs: Vec<Value>,
    },
    /// Stop here: this pod cannot be created now (its claim is being deleted).
    Blocked { pod: String, reason: String },
}

/// What one `updateStatefulSet` decided.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub actions: Vec<Action>,
    pub status: Value,
}

/// The claims a pod needs that the cache lacks (and an error for one being deleted).
fn claim_actions(set: &Value, pod: &Value, claims: &HashMap<String, &Value>) -> Vec<Action> {
    let Some(ord) = ordinal(pod) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for (_, claim) in claims_for(set, ord) {
        match claims.get(name(&claim)) {
            None => out.push(Action::CreateClaim {
                claim,
                pod: name(pod).to_string(),
            }),
            Some(existing) if deleting(existing) => {
                out.push(Action::Blocked {
                    pod: name(pod).to_string(),
                    reason: format!("pvc {} is being deleted", name(&claim)),
                });
                return out;
            }
            Some(_) => {}
        }
    }
    out
}

/// `ClaimsMatchRetentionPolicy` + `UpdatePodClaimForRetentionPolicy`: owner-reference
/// fixes of the pod's existing claims.
fn retention_actions(set: &Value, pod: &Value, claims: &HashMap<String, &Value>) -> Vec<Action> {
    let Some(ord) = ordinal(pod) else {
        return Vec::new();
    };
    claims_for(set, ord)
        .iter()
        .filter_map(|(_, c)| claims.get(name(c)))
        .filter(|c| !claim_owner_up_to_date(c, set, pod))
        .map(|c| Action::SetClaimOwners {
            claim: name(c).to_string(),
            owner_refs: claim_owner_refs(c, set, pod),
        })
        .collect()
}

/// `PodClaimIsStale`: with `whenScaled: Delete`, a claim still owned by an earlier pod
/// of the same name must be collected before the pod is made again.
fn claim_is_stale(set: &Value, pod: &Value, claims: &HashMap<String, &Value>) -> bool {
    if policy(set).1 == "Retain" {
        return false;
    }
    let Some(ord) = ordinal(pod) else {
        return false;
    };
    claims_for(set, ord)
        .iter()
        .filter_map(|(_, c)| claims.get(name(c)))
        .any(|c| has_stale_ref(c, pod, "v1", "Pod"))
}

/// The replica counts (`computeReplicaStatus`) over pods.
fn count(
    status: &mut Value,
    pods: &[&Value],
    min_ready: i64,
    now_ms: i64,
    current: &str,
    update: &str,
) {
    let mut add = |k: &str| {
        status[k] = json!(status[k].as_i64().unwrap_or(0) + 1);
    };
    for pod in pods {
        if is_created(pod) {
            add("replicas");
        }
        if running_and_ready(pod) {
            add("readyReplicas");
            if pod.is_available(min_ready, now_ms) {
                add("availableReplicas");
            }
        }
        if is_created(pod) && !deleting(pod) {
            if pod_revision(pod) == current {
                add("currentReplicas");
            }
            if pod_revision(pod) == update {
                add("updatedReplicas");
            }
        }
    }
}

/// Upstream's `updateStatefulSet` + `completeRollingUpdate`: the actions, in order, and
/// the new status. `pods` are the set's pods, `claims` the namespace's claims by name.
pub fn update_set(
    set: &Value,
    revs: &Revisions,
    pods: &[&Value],
    claims: &HashMap<String, &Value>,
    now_ms: i64,
) -> Outcome {
    let current_set = history::apply_revision(set, &revs.current);
    let update_set = history::apply_revision(set, &revs.update);
    let (current_name, update_name) = (
        name(&revs.current).to_string(),
        name(&revs.update).to_string(),
    );
    let min_ready = min_ready(set);
    let start = start_ordinal(set);
    let count_replicas = usize::try_from(replicas(set)).unwrap_or(0);
    // The replicas by ordinal (missing ones made at the right revision) and the
    // condemned pods beyond them, highest ordinal first.
    let mut slots: Vec<Option<&Value>> = vec![None; count_replicas];
    let mut condemned: Vec<&Value> = Vec::new();
    for pod in pods {
        let Some(ord) = ordinal(pod) else { continue };
        if in_range(pod, set) {
            if let Some(slot) = usize::try_from(ord - start)
                .ok()
                .and_then(|i| slots.get_mut(i))
            {
                *slot = Some(pod);
            }
        } else if ord >= 0 {
            condemned.push(pod);
        }
    }
    condemned.sort_by_key(|p| std::cmp::Reverse(ordinal(p).unwrap_or(0)));
    let made: Vec<Option<Value>> = slots
        .iter()
        .enumerate()
        .map(|(i, s)| {
            s.is_none().then(|| {
                let ord = start + i64::try_from(i).unwrap_or(0);
                new_versioned_pod(&current_set, &update_set, &current_name, &update_name, ord)
            })
        })
        .collect();
    let replicas_list: Vec<&Value> = slots
        .iter()
        .zip(&made)
        .filter_map(|(s, m)| s.or(m.as_ref()))
        .collect();
    let status_of = |current_delta: i64| {
        let mut st = json!({
            "observedGeneration": set["metadata"]["generation"],
            "currentRevision": current_name, "updateRevision": update_name,
            "collisionCount": revs.collision_count,
            "replicas": 0, "readyReplicas": 0, "availableReplicas": 0,
            "currentReplicas": 0, "updatedReplicas": 0,
        });
        count(
            &mut st,
            &replicas_list,
            min_ready,
            now_ms,
            &current_name,
            &update_name,
        );
        count(
            &mut st,
            &condemned,
            min_ready,
            now_ms,
            &current_name,
            &update_name,
        );
        st["currentReplicas"] = json!(st["currentReplicas"].as_i64().unwrap_or(0) + current_delta);
        // `completeRollingUpdate`.
        if rolling(set)
            && st["updatedReplicas"] == st["replicas"]
            && st["readyReplicas"] == st["replicas"]
        {
            st["currentReplicas"] = st["updatedReplicas"].clone();
            st["currentRevision"] = st["updateRevision"].clone();
        }
        st
    };
    let mut actions: Vec<Action> = Vec::new();
    let finish = |actions: Vec<Action>, delta: i64| Outcome {
        actions,
        status: status_of(delta),
    };
    let first_unhealthy: Option<&Value> = replicas_list
        .iter()
        .copied()
        .find(|p| !healthy(p))
        .or_else(|| condemned.iter().rev().copied().find(|p| !healthy(p)));
    if deleting(set) {
        return finish(actions, 0);
    }
    let monotonic = set["spec"]["podManagementPolicy"].as_str() != Some("Parallel");
    // Each replica (`processReplica`).
    let mut exit = false;
    for pod in &replicas_list {
        let pod_name = name(pod).to_string();
        if matches!(phase(pod), "Failed" | "Succeeded") {
            if !deleting(pod) {
                actions.push(Action::DeletePod(pod_name));
            }
            if monotonic {
                exit = true;
                break;
            }
            continue;
        }
        if !is_created(pod) {
            if claim_is_stale(set, pod, claims) {
                if monotonic {
                    exit = true;
                    break;
                }
                continue;
            }
            let claim_steps = claim_actions(set, pod, claims);
            let blocked = claim_steps
                .iter()
                .any(|a| matches!(a, Action::Blocked { .. }));
            actions.extend(claim_steps);
            if blocked {
                exit = true;
                break;
            }
            actions.push(Action::CreatePod((*pod).clone()));
            if monotonic {
                exit = true;
                break;
            }
            continue;
        }
        if phase(pod) == "Pending" {
            actions.extend(
                claim_actions(set, pod, claims)
                    .into_iter()
                    .filter(|a| matches!(a, Action::CreateClaim { .. })),
            );
        }
        if monotonic && (!running_and_ready(pod) || !pod.is_available(min_ready, now_ms)) {
            exit = true;
            break;
        }
        let retention = retention_actions(set, pod, claims);
        if identity_matches(set, pod) && storage_matches(set, pod) && retention.is_empty() {
            continue;
        }
        if !storage_matches(set, pod) {
            actions.extend(
                claim_actions(set, pod, claims)
                    .into_iter()
                    .filter(|a| matches!(a, Action::CreateClaim { .. })),
            );
        }
        actions.extend(retention);
        let ord = ordinal(pod).unwrap_or(0);
        let mut labels = pod["metadata"]["labels"].clone();
        if !labels.is_object() {
            labels = json!({});
        }
        labels[POD_NAME_LABEL] = json!(pod_name);
        labels[POD_INDEX_LABEL] = json!(ord.to_string());
        actions.push(Action::UpdatePod {
            pod: pod_name,
            labels,
        });
    }
    if exit {
        return finish(actions, 0);
    }
    // Claims of condemned pods follow the retention policy before the pods go.
    for pod in &condemned {
        let fixes = retention_actions(&update_set, pod, claims);
        actions.extend(fixes);
    }
    // Scale down (`processCondemned`), from the highest ordinal.
    for pod in &condemned {
        if deleting(pod) {
            if monotonic {
                return finish(actions, 0);
            }
            continue;
        }
        let first = first_unhealthy.is_some_and(|f| name(f) == name(pod));
        if monotonic && !first && (!running_and_ready(pod) || !pod.is_available(min_ready, now_ms))
        {
            return finish(actions, 0);
        }
        actions.push(Action::DeletePod(name(pod).to_string()));
        if monotonic {
            return finish(actions, 0);
        }
    }
    if !rolling(set) {
        return finish(actions, 0);
    }
    // The rolling update, from the highest ordinal down to the partition.
    let update_min = usize::try_from(partition(set).unwrap_or(0).max(0)).unwrap_or(0);
    let max_unavailable = set["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"].clone();
    if !max_unavailable.is_null() {
        // `updateStatefulSetAfterInvariantEstablished` (the MaxUnavailableStatefulSet
        // gate): up to maxUnavailable pods down at once.
        let allowed = crate::deployment::scaled(&max_unavailable, replicas(set), true)
            .unwrap_or(1)
            .max(1);
        // Unhealthy replicas (anywhere) use up the budget; the rest goes to the highest
        // ordinals above the partition that are not at the update revision.
        let unhealthy =
            i64::try_from(replicas_list.iter().filter(|p| !healthy(p)).count()).unwrap_or(i64::MAX);
        let mut budget = allowed - unhealthy;
        let mut delta = 0;
        for pod in replicas_list.iter().skip(update_min).rev() {
            if budget <= 0 {
                break;
            }
            if pod_revision(pod) != update_name && !deleting(pod) {
                actions.push(Action::DeletePod(name(pod).to_string()));
                delta -= 1;
                budget -= 1;
            }
        }
        return finish(actions, delta);
    }
    for pod in replicas_list.iter().skip(update_min).rev() {
        if pod_revision(pod) != update_name && !deleting(pod) {
            actions.push(Action::DeletePod(name(pod).to_string()));
            return finish(actions, -1);
        }
        if !healthy(pod) {
            return finish(actions, 0);
        }
    }
    finish(actions, 0)
}

/// `inconsistentStatus`: the status must be written.
pub fn status_changed(set: &Value, status: &Value) -> bool {
    let n = |v: &Value| v.as_i64().unwrap_or(0);
    let old = &set["status"];
    n(&status["observedGeneration"]) > n(&old["observedGeneration"])
        || [
            "replicas",
            "currentReplicas",
            "readyReplicas",
            "updatedReplicas",
            "availableReplicas",
        ]
        .iter()
        .any(|k| n(&old[*k]) != n(&status[*k]))
        || ["currentRevision", "updateRevision"].iter().any(|k| {
            old[*k].as_str().unwrap_or_default() != status[*k].as_str().unwrap_or_default()
        })
}

// ---------------------------------------------------------------------------------------
// The loop

struct Shared {
    sets: Store<StatefulSet>,
    pods: Store<CachedPod>,
    revisions: Store<ControllerRevision>,
    claims: Store<PersistentVolumeClaim>,
    queue: WorkQueue<String>,
    writer: Client,
    events: Recorder,
}

impl Shared {
    fn enqueue_all(&self) {
        for s in self.sets.state() {
            self.queue.add(crate::run::object_key(&s.metadata));
        }
    }
}

/// Enqueues the set controlling (or, for an orphan, matching) each changed object.
fn follow_owned<K>(shared: &Arc<Shared>, mut rx: informers::Subscription<K>)
where
    K: kube::Resource + serde::Serialize + Send + Sync + 'static,
{
    let s = Arc::clone(shared);
    tokio::spawn(async move {
        loop {
            let obj = match informers::next(&mut rx).await {
                Next::Apply(o) | Next::Delete(o) => o,
                Next::Other => continue,
                Next::Resync => {
                    s.enqueue_all();
                    continue;
                }
                Next::Closed => break,
            };
            for owner in crate::run::owned_keys(obj.as_ref(), "StatefulSet", &s.sets.state()) {
                s.queue.add(owner);
            }
        }
    });
}

/// Runs the StatefulSet controller with `workers` workers until the process ends.
pub async fn run_statefulsets(
    sets: Arc<Informer<StatefulSet>>,
    pods: Arc<Informer<CachedPod>>,
    revisions: Arc<Informer<ControllerRevision>>,
    claims: Arc<Informer<PersistentVolumeClaim>>,
    writer: Client,
    workers: usize,
) {
    let mut set_events = sets.subscribe();
    let pod_events = pods.subscribe();
    let rev_events = revisions.subscribe();
    let shared = Arc::new(Shared {
        sets: sets.store.clone(),
        pods: pods.store.clone(),
        revisions: revisions.store.clone(),
        claims: claims.store.clone(),
        queue: WorkQueue::named("statefulset"),
        events: crate::run::recorder(&writer, "statefulset-controller"),
        writer,
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut set_events).await {
                Next::Apply(set) => s.queue.add(crate::run::object_key(&set.metadata)),
                Next::Delete(_) | Next::Other => {}
                Next::Resync => s.enqueue_all(),
                Next::Closed => break,
            }
        }
    });
    follow_owned(&shared, pod_events);
    follow_owned(&shared, rev_events);
    sets.synced().await;
    pods.synced().await;
    revisions.synced().await;
    claims.synced().await;
    shared.enqueue_all();
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "statefulset",
        |s, key| async move { sync(&s, &key).await },
    );
}

/// Makes sure the update revision exists (creating it, with collision handling, or
/// bumping an older equal one); returns the revisions with the stored update revision.
async fn settle_revisions(
    api: &Api<ControllerRevision>,
    set: &Value,
    mut revs: Revisions,
) -> Result<Revisions, kube::Error> {
    match revs.write.clone() {
        RevisionWrite::None => {}
        RevisionWrite::Bump { name: n, revision } => {
            let patch = json!({"revision": revision});
            let r = api
                .patch(&n, &PatchParams::default(), &Patch::Merge(&patch))
                .await?;
            revs.update = serde_json::to_value(&r).map_err(kube::Error::SerdeError)?;
        }
        RevisionWrite::Create => {
            let mut tries = 0;
            loop {
                tries += 1;
                let body: ControllerRevision =
                    serde_json::from_value(revs.update.clone()).map_err(kube::Error::SerdeError)?;
                match api.create(&PostParams::default(), &body).await {
                    Ok(r) => {
                        revs.update = serde_json::to_value(&r).map_err(kube::Error::SerdeError)?;
                        break;
                    }
                    Err(kube::Error::Api(e)) if e.code == 409 && tries < 10 => {
                        let existing = api.get(name(&revs.update)).await?;
                        let existing =
                            serde_json::to_value(&existing).map_err(kube::Error::SerdeError)?;
                        if existing["data"] == revs.update["data"] {
                            revs.update = existing;
                            break;
                        }
                        revs.collision_count += 1;
                        revs.update = history::new_revision(
                            set,
                            "StatefulSet",
                            history::template_patch(set),
                            history::revision_number(&revs.update),
                            Some(revs.collision_count),
                        );
                    }
                    Err(e) => return Err(e),
                }
            }
            if set["status"]["currentRevision"]
                .as_str()
                .unwrap_or_default()
                .is_empty()
                || revs.current["metadata"]["uid"].is_null()
            {
                revs.current = revs.update.clone();
            }
        }
    }
    Ok(revs)
}

/// One `syncStatefulSet`.
async fn sync(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, set_name) = key.split_once('/').unwrap_or(("", key));
    let Some(set) = s.sets.get(&ObjectRef::new(set_name).within(ns)) else {
        return Ok(());
    };
    let set_uid = set.metadata.uid.clone().unwrap_or_default();
    let Ok(set) = serde_json::to_value(set.as_ref()) else {
        return Ok(());
    };
    let selector_empty = LabelSelector::from_label_selector(&set["spec"]["selector"])
        .map_or(true, |sel| sel.is_empty());
    if selector_empty {
        return Ok(());
    }
    let set_ref = crate::run::reference(&set, "StatefulSet", "apps/v1");
    let mine = |meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta| {
        claimable(meta, ns, &set_uid)
    };
    let all_pods: Vec<Value> = s
        .pods
        .state()
        .iter()
        .filter(|p| mine(&p.metadata))
        .filter_map(|p| serde_json::to_value(p.as_ref()).ok())
        .collect();
    let pods_api: Api<Pod> = Api::namespaced(s.writer.clone(), ns);
    let claim = claim_pods(&set, &all_pods);
    crate::run::adopt_and_release(&pods_api, &set, "StatefulSet", &claim).await;
    let owned = claim.owned;
    let all_revs: Vec<Value> = s
        .revisions
        .state()
        .iter()
        .filter(|r| mine(&r.metadata))
        .filter_map(|r| serde_json::to_value(r.as_ref()).ok())
        .collect();
    let rev_claim = history::claim(&set, &all_revs);
    let rev_api: Api<ControllerRevision> = Api::namespaced(s.writer.clone(), ns);
    crate::run::adopt_and_release(&rev_api, &set, "StatefulSet", &rev_claim).await;
    let mut sorted = rev_claim.owned.clone();
    history::sort_revisions(&mut sorted);
    let revs = revisions(&set, &sorted);
    let revs = settle_revisions(&rev_api, &set, revs).await?;
    let claim_values: Vec<Value> = s
        .claims
        .state()
        .iter()
        .filter(|c| c.metadata.namespace.as_deref() == Some(ns))
        .filter_map(|c| serde_json::to_value(c.as_ref()).ok())
        .collect();
    let claims: HashMap<String, &Value> = claim_values
        .iter()
        .map(|c| (name(c).to_string(), c))
        .collect();
    let now = crate::run::now_ms();
    let outcome = update_set(&set, &revs, &owned, &claims, now);
    let result = carry_out(s, &set, &set_ref, &outcome.actions, &pods_api).await;
    // The status, even after a failure.
    let status_result = if status_changed(&set, &outcome.status) {
        let api: Api<StatefulSet> = Api::namespaced(s.writer.clone(), ns);
        let mut body = set.clone();
        body["status"] = outcome.status.clone();
        match serde_json::from_value::<StatefulSet>(body) {
            Ok(body) => match api
                .replace_status(set_name, &PostParams::default(), &body)
                .await
            {
                Ok(_) => Ok(()),
                Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
                Err(e) => Err(e),
            },
            Err(_) => Ok(()),
        }
    } else {
        Ok(())
    };
    // History beyond the limit.
    for r in truncate_history(
        &set,
        &sorted,
        &owned,
        name(&revs.current),
        name(&revs.update),
    ) {
        match rev_api.delete(&r, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let min_ready = min_ready(&set);
    if min_ready > 0 && outcome.status["availableReplicas"].as_i64() != Some(replicas(&set)) {
        s.queue.add_after(
            key.to_string(),
            Duration::from_secs(u64::try_from(min_ready).unwrap_or(1)),
        );
    }
    result.and(status_result)
}

/// Carries out the actions in order, with upstream's events; stops at the first failure.
async fn carry_out(
    s: &Shared,
    set: &Value,
    set_ref: &k8s_openapi::api::core::v1::ObjectReference,
    actions: &[Action],
    pods_api: &Api<Pod>,
) -> Result<(), kube::Error> {
    let ns = set["metadata"]["namespace"].as_str().unwrap_or_default();
    let set_name = name(set);
    let claims_api: Api<PersistentVolumeClaim> = Api::namespaced(s.writer.clone(), ns);
    let pod_event = |verb: &str, pod: &str, err: Option<&kube::Error>| {
        let title = format!("{}{}", verb[..1].to_uppercase(), &verb[1..]);
        match err {
            None => s.events.event(
                set_ref,
                EventType::Normal,
                &format!("Successful{title}"),
                &format!("{verb} Pod {pod} in StatefulSet {set_name} successful"),
            ),
            Some(e) => s.events.event(
                set_ref,
                EventType::Warning,
                &format!("Failed{title}"),
                &format!(
                    "{verb} Pod {pod} in StatefulSet {set_name} failed error: {}",
                    api_message(e)
                ),
            ),
        }
    };
    for action in actions {
        match action {
            Action::CreateClaim { claim, pod } => {
                let body: PersistentVolumeClaim =
                    serde_json::from_value(claim.clone()).map_err(kube::Error::SerdeError)?;
                match claims_api.create(&PostParams::default(), &body).await {
                    Ok(_) => s.events.event(
                        set_ref,
                        EventType::Normal,
                        "SuccessfulCreate",
                        &format!(
                            "create Claim {} Pod {pod} in StatefulSet {set_name} success",
                            name(claim)
                        ),
                    ),
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => {
                        s.events.event(
                            set_ref,
                            EventType::Warning,
                            "FailedCreate",
                            &format!(
                                "create Claim {} for Pod {pod} in StatefulSet {set_name} failed error: {}",
                                name(claim),
                                api_message(&e)
                            ),
                        );
                        pod_event("create", pod, Some(&e));
                        return Err(e);
                    }
                }
            }
            Action::Blocked { pod, reason } => {
                s.events.event(
                    set_ref,
                    EventType::Warning,
                    "FailedCreate",
                    &format!("create Pod {pod} in StatefulSet {set_name} failed error: {reason}"),
                );
                s.queue
                    .add_after(format!("{ns}/{set_name}"), Duration::from_secs(1));
                return Ok(());
            }
            Action::CreatePod(pod) => {
                let body: Pod =
                    serde_json::from_value(pod.clone()).map_err(kube::Error::SerdeError)?;
                match pods_api.create(&PostParams::default(), &body).await {
                    Ok(_) => pod_event("create", name(pod), None),
                    // The cache lags: it shows up with the next event.
                    Err(kube::Error::Api(e)) if e.code == 409 => return Ok(()),
                    Err(e) => {
                        pod_event("create", name(pod), Some(&e));
                        return Err(e);
                    }
                }
            }
            Action::DeletePod(pod) => match pods_api.delete(pod, &DeleteParams::default()).await {
                Ok(_) => pod_event("delete", pod, None),
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => {
                    pod_event("delete", pod, Some(&e));
                    return Err(e);
                }
            },
            Action::UpdatePod { pod, labels } => {
                let patch = json!({"metadata": {"labels": labels}});
                match pods_api
                    .patch(pod, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => pod_event("update", pod, None),
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => {
                        pod_event("update", pod, Some(&e));
                        return Err(e);
                    }
                }
            }
            Action::SetClaimOwners { claim, owner_refs } => {
                let patch = json!({"metadata": {"ownerReferences": owner_refs}});
                match claims_api
                    .patch(claim, &PatchParams::default(), &Patch::Merge(&patch))
                    .await
                {
                    Ok(_) => {}
                    Err(kube::Error::Api(e)) if e.code == 404 => {}
                    Err(e) => return Err(e),
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const NOW: i64 = 1_800_000_000_000;

    fn set(replicas: i64, image: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
            "metadata": {"name": "web", "namespace": "default", "uid": "set-uid", "generation": 1},
            "spec": {"replicas": replicas, "serviceName": "nginx",
                "selector": {"matchLabels": {"app": "web"}},
                "podManagementPolicy": "OrderedReady",
                "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "c", "image": image,
                        "volumeMounts": [{"name": "www", "mountPath": "/www"}]}]}},
                "volumeClaimTemplates": [{"metadata": {"name": "www"},
                    "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]},
            "status": {}})
    }

    fn revs_for(s: &Value) -> Revisions {
        let r = revisions(s, &[]);
        assert_eq!(r.write, RevisionWrite::Create);
        r
    }

    fn running(s: &Value, ord: i64, revision: &str, ready: bool) -> Value {
        let mut p = new_pod(s, ord);
        p["metadata"]["uid"] = json!(format!("pod-uid-{ord}"));
        p["metadata"]["labels"][REVISION_LABEL] = json!(revision);
        p["status"] = json!({"phase": "Running", "conditions": [{"type": "Ready",
            "status": if ready { "True" } else { "False" }, "lastTransitionTime": "2024-01-01T00:00:00Z"}]});
        p
    }

    fn claims_of(list: &[Value]) -> HashMap<String, &Value> {
        list.iter().map(|c| (name(c).to_string(), c)).collect()
    }

    #[test]
    fn names_ordinals_and_identity() {
        assert_eq!(parent_and_ordinal("web-12"), Some(("web", 12)));
        assert_eq!(parent_and_ordinal("my-web-0"), Some(("my-web", 0)));
        assert_eq!(parent_and_ordinal("web"), None);
        assert_eq!(parent_and_ordinal("web-x"), None);
        let s = set(3, "nginx:1");
        let p = new_pod(&s, 1);
        assert_eq!(p["metadata"]["name"], "web-1");
        assert_eq!(p["metadata"]["labels"][POD_NAME_LABEL], "web-1");
        assert_eq!(p["metadata"]["labels"][POD_INDEX_LABEL], "1");
        assert_eq!(p["metadata"]["labels"]["app"], "web");
        assert_eq!(p["spec"]["hostname"], "web-1");
        assert_eq!(p["spec"]["subdomain"], "nginx");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "StatefulSet");
        assert_eq!(
            p["spec"]["volumes"],
            json!([{"name": "www", "persistentVolumeClaim": {"claimName": "www-web-1"}}])
        );
        let claims = claims_for(&s, 1);
        assert_eq!(claims[0].1["metadata"]["name"], "www-web-1");
        assert_eq!(claims[0].1["metadata"]["labels"]["app"], "web");
        assert!(identity_matches(&s, &p));
        assert!(storage_matches(&s, &p));
        // spec.ordinals.start shifts the names.
        let mut shifted = s.clone();
        shifted["spec"]["ordinals"] = json!({"start": 5});
        let revs = revs_for(&shifted);
        let out = update_set(&shifted, &revs, &[], &HashMap::new(), NOW);
        assert!(
            matches!(&out.actions[1], Action::CreatePod(p) if p["metadata"]["name"] == "web-5")
        );
    }

    #[test]
    fn ordered_ready_creates_one_at_a_time_claims_first() {
        let s = set(3, "nginx:1");
        let revs = revs_for(&s);
        let rev = name(&revs.update).to_string();
        let out = update_set(&s, &revs, &[], &HashMap::new(), NOW);
        assert_eq!(out.actions.len(), 2, "{:?}", out.actions);
        assert!(
            matches!(&out.actions[0], Action::CreateClaim { claim, pod } if name(claim) == "www-web-0" && pod == "web-0")
        );
        let Action::CreatePod(p) = &out.actions[1] else {
            panic!()
        };
        assert_eq!(p["metadata"]["name"], "web-0");
        assert_eq!(p["metadata"]["labels"][REVISION_LABEL], rev.as_str());
        // web-0 not ready yet: nothing more.
        let claims = vec![claims_for(&s, 0)[0].1.clone()];
        let w0 = running(&s, 0, &rev, false);
        let out = update_set(&s, &revs, &[&w0], &claims_of(&claims), NOW);
        assert!(out.actions.is_empty());
        assert_eq!(out.status["replicas"], 1);
        assert_eq!(out.status["readyReplicas"], 0);
        // Ready: web-1 next.
        let w0 = running(&s, 0, &rev, true);
        let out = update_set(&s, &revs, &[&w0], &claims_of(&claims), NOW);
        assert!(
            matches!(&out.actions[1], Action::CreatePod(p) if p["metadata"]["name"] == "web-1")
        );
        assert_eq!(out.status["readyReplicas"], 1);
        assert_eq!(out.status["updateRevision"], rev.as_str());
    }

    #[test]
    fn parallel_creates_all_and_failed_pods_are_replaced() {
        let mut s = set(3, "nginx:1");
        s["spec"]["podManagementPolicy"] = json!("Parallel");
        let revs = revs_for(&s);
        let out = update_set(&s, &revs, &[], &HashMap::new(), NOW);
        let created: Vec<&Value> = out
            .actions
            .iter()
            .filter_map(|a| match a {
                Action::CreatePod(p) => Some(&p["metadata"]["name"]),
                _ => None,
            })
            .collect();
        assert_eq!(created, [&json!("web-0"), &json!("web-1"), &json!("web-2")]);
        // A failed pod is deleted (and made again on a later pass).
        let rev = name(&revs.update).to_string();
        let mut w0 = running(&s, 0, &rev, false);
        w0["status"]["phase"] = json!("Failed");
        let s2 = set(1, "nginx:1");
        let out = update_set(&s2, &revs, &[&w0], &HashMap::new(), NOW);
        assert_eq!(out.actions, [Action::DeletePod("web-0".into())]);
    }

    #[test]
    fn scale_down_goes_from_the_highest_ordinal_one_at_a_time() {
        let s = set(1, "nginx:1");
        let revs = revs_for(&s);
        let rev = name(&revs.update).to_string();
        let pods: Vec<Value> = (0..3).map(|i| running(&s, i, &rev, true)).collect();
        let refs: Vec<&Value> = pods.iter().collect();
        let claims: Vec<Value> = (0..3).map(|i| claims_for(&s, i)[0].1.clone()).collect();
        let out = update_set(&s, &revs, &refs, &claims_of(&claims), NOW);
        assert_eq!(out.actions, [Action::DeletePod("web-2".into())]);
        // web-2 terminating: wait for it.
        let mut dying = pods[2].clone();
        dying["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let out = update_set(
            &s,
            &revs,
            &[&pods[0], &pods[1], &dying],
            &claims_of(&claims),
            NOW,
        );
        assert!(out.actions.is_empty());
        let out = update_set(&s, &revs, &[&pods[0], &pods[1]], &claims_of(&claims), NOW);
        assert_eq!(out.actions, [Action::DeletePod("web-1".into())]);
        // An unhealthy replica halts scale-down under OrderedReady.
        let sick = running(&s, 0, &rev, false);
        let out = update_set(&s, &revs, &[&sick, &pods[1]], &claims_of(&claims), NOW);
        assert!(out.actions.is_empty());
    }

    #[test]
    fn rolling_update_goes_in_reverse_ordinal_order_above_the_partition() {
        let s1 = set(3, "nginx:1");
        let r1 = revs_for(&s1);
        let old = name(&r1.update).to_string();
        let mut stored1 = r1.update.clone();
        stored1["metadata"]["creationTimestamp"] = json!("2024-01-01T00:00:00Z");
        let mut s2 = set(3, "nginx:2");
        s2["status"] = json!({"currentRevision": old, "currentReplicas": 3});
        let r2 = revisions(&s2, &[&stored1]);
        assert_eq!(r2.write, RevisionWrite::Create);
        assert_eq!(r2.update["revision"], 2);
        assert_eq!(name(&r2.current), old);
        let new = name(&r2.update).to_string();
        assert_ne!(new, old);
        let pods: Vec<Value> = (0..3).map(|i| running(&s1, i, &old, true)).collect();
        let refs: Vec<&Value> = pods.iter().collect();
        let claims: Vec<Value> = (0..3).map(|i| claims_for(&s1, i)[0].1.clone()).collect();
        let out = update_set(&s2, &r2, &refs, &claims_of(&claims), NOW);
        assert_eq!(out.actions, [Action::DeletePod("web-2".into())]);
        assert_eq!(out.status["currentReplicas"], 2);
        assert_eq!(out.status["currentRevision"], old.as_str());
        // web-2 re-made at the new revision (it is above the partition).
        let out = update_set(&s2, &r2, &refs[..2], &claims_of(&claims), NOW);
        let Action::CreatePod(p) = &out.actions[0] else {
            panic!("{:?}", out.actions)
        };
        assert_eq!(p["metadata"]["labels"][REVISION_LABEL], new.as_str());
        assert_eq!(p["spec"]["containers"][0]["image"], "nginx:2");
        // With a partition of 2, only web-2 is updated; then the rollout stops.
        let mut part = s2.clone();
        part["spec"]["updateStrategy"]["rollingUpdate"]["partition"] = json!(2);
        let new2 = running(&s2, 2, &new, true);
        let out = update_set(
            &part,
            &r2,
            &[&pods[0], &pods[1], &new2],
            &claims_of(&claims),
            NOW,
        );
        assert!(out.actions.is_empty());
        // All updated and ready: the rollout completes.
        let all_new: Vec<Value> = (0..3).map(|i| running(&s2, i, &new, true)).collect();
        let refs: Vec<&Value> = all_new.iter().collect();
        let out = update_set(&s2, &r2, &refs, &claims_of(&claims), NOW);
        assert!(out.actions.is_empty());
        assert_eq!(out.status["currentRevision"], new.as_str());
        assert_eq!(out.status["currentReplicas"], 3);
        assert_eq!(out.status["updatedReplicas"], 3);
        // OnDelete: nothing is deleted for the update.
        let mut on_delete = s2.clone();
        on_delete["spec"]["updateStrategy"] = json!({"type": "OnDelete"});
        let refs: Vec<&Value> = pods.iter().collect();
        assert!(
            update_set(&on_delete, &r2, &refs, &claims_of(&claims), NOW)
                .actions
                .is_empty()
        );
        // maxUnavailable 2: two at once.
        let mut mu = s2.clone();
        mu["spec"]["updateStrategy"]["rollingUpdate"]["maxUnavailable"] = json!(2);
        let out = update_set(&mu, &r2, &refs, &claims_of(&claims), NOW);
        assert_eq!(
            out.actions,
            [
                Action::DeletePod("web-2".into()),
                Action::DeletePod("web-1".into())
            ]
        );
    }

    #[test]
    fn rollback_bumps_the_equal_revision() {
        let s1 = set(1, "nginx:1");
        let mut r1 = revs_for(&s1).update;
        r1["metadata"]["uid"] = json!("r1");
        let s2 = set(1, "nginx:2");
        let mut r2 = revisions(&s2, &[&r1]).update;
        r2["metadata"]["uid"] = json!("r2");
        // Back to nginx:1: revision 1 becomes 3.
        let back = revisions(&s1, &[&r1, &r2]);
        assert_eq!(
            back.write,
            RevisionWrite::Bump {
                name: name(&r1).to_string(),
                revision: 3
            }
        );
        assert_eq!(name(&back.update), name(&r1));
        // Unchanged: the latest is re-used.
        let same = revisions(&s2, &[&r1, &r2]);
        assert_eq!(same.write, RevisionWrite::None);
        assert_eq!(name(&same.update), name(&r2));
        // History: only non-live revisions beyond the limit go.
        let mut limited = s2.clone();
        limited["spec"]["revisionHistoryLimit"] = json!(0);
        let gone = truncate_history(&limited, &[&r1, &r2], &[], name(&r2), name(&r2));
        assert_eq!(gone, [name(&r1).to_string()]);
    }

    #[test]
    fn retention_policy_sets_claim_owners() {
        let mut s = set(1, "nginx:1");
        s["spec"]["persistentVolumeClaimRetentionPolicy"] =
            json!({"whenDeleted": "Delete", "whenScaled": "Delete"});
        let revs = revs_for(&s);
        let rev = name(&revs.update).to_string();
        let w0 = running(&s, 0, &rev, true);
        let w1 = running(&s, 1, &rev, true);
        let c0 = claims_for(&s, 0)[0].1.clone();
        let c1 = claims_for(&s, 1)[0].1.clone();
        let claims = vec![c0.clone(), c1.clone()];
        let out = update_set(&s, &revs, &[&w0, &w1], &claims_of(&claims), NOW);
        // web-0's claim gets the set as controller (pod updated), web-1's (condemned)
        // its pod, then web-1 goes.
        assert!(out.actions.contains(&Action::SetClaimOwners {
            claim: "www-web-0".into(),
            owner_refs: vec![history::controller_ref(&s, "apps/v1", "StatefulSet")],
        }));
        assert!(out.actions.contains(&Action::SetClaimOwners {
            claim: "www-web-1".into(),
            owner_refs: vec![history::controller_ref(&w1, "v1", "Pod")],
        }));
        assert_eq!(out.actions.last(), Some(&Action::DeletePod("web-1".into())));
        // Up to date once set.
        let mut owned0 = c0.clone();
        owned0["metadata"]["ownerReferences"] =
            json!([history::controller_ref(&s, "apps/v1", "StatefulSet")]);
        assert!(claim_owner_up_to_date(&owned0, &s, &w0));
        // Retain/Retain wants no references of ours.
        let r = set(1, "nginx:1");
        assert!(!claim_owner_up_to_date(&owned0, &r, &w0));
        assert!(claim_owner_refs(&owned0, &r, &w0).is_empty());
        // A claim owned by an earlier web-1 is stale: web-1 waits for the collector.
        let mut stale = c1.clone();
        stale["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod", "name": "web-1", "uid": "old", "controller": true}]);
        let mut two = s.clone();
        two["spec"]["replicas"] = json!(2);
        let claims = vec![owned0.clone(), stale];
        let out = update_set(&two, &revs, &[&w0], &claims_of(&claims), NOW);
        assert!(
            !out.actions
                .iter()
                .any(|a| matches!(a, Action::CreatePod(_))),
            "{:?}",
            out.actions
        );
    }

    #[test]
    fn a_claim_being_deleted_blocks_its_pod() {
        let s = set(1, "nginx:1");
        let revs = revs_for(&s);
        let mut c0 = claims_for(&s, 0)[0].1.clone();
        c0["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        let claims = vec![c0];
        let out = update_set(&s, &revs, &[], &claims_of(&claims), NOW);
        assert!(matches!(&out.actions[..], [Action::Blocked { pod, .. }] if pod == "web-0"));
    }

    #[test]
    fn claims_only_members() {
        let s = set(1, "nginx:1");
        let mut member = new_pod(&s, 0);
        member["metadata"]["ownerReferences"] = json!([]);
        let mut stranger = member.clone();
        stranger["metadata"]["name"] = json!("other-0");
        let all = vec![member, stranger];
        let c = claim_pods(&s, &all);
        assert_eq!(c.adopt.len(), 1);
        assert_eq!(name(c.adopt[0]), "web-0");
    }

    #[test]
    fn status_is_written_only_when_inconsistent() {
        let s = set(0, "nginx:1");
        let revs = revs_for(&s);
        let out = update_set(&s, &revs, &[], &HashMap::new(), NOW);
        assert!(status_changed(&s, &out.status));
        let mut written = s.clone();
        written["status"] = out.status.clone();
        assert!(!status_changed(&written, &out.status));
    }
}
