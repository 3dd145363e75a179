//! The ReplicaSet controller's logic (upstream's `pkg/controller/replicaset`), as pure
//! functions over a ReplicaSet and the pods of its namespace:
//!
//! - [`claim`]: upstream's `ControllerRefManager` — the pods it controls, orphans that match
//!   its selector to adopt, controlled pods that no longer match to release;
//! - [`manage`]: how many pods to create (at most `burstReplicas` at a time, in slow-start
//!   batches of 1, 2, 4, …) or which to delete (upstream's ranking: unassigned, pending,
//!   not ready, cheap to delete, doubled up on a node, recently ready, restarting, newest
//!   first);
//! - [`new_pod`]: the pod a ReplicaSet creates from its template;
//! - [`status`]: replicas, fully labeled, ready and available counts, observedGeneration
//!   and the `ReplicaFailure` condition.

use std::cmp::Ordering;
use std::collections::HashMap;

use api::selector::LabelSelector;
use serde_json::{Value, json};

use crate::pods::{Claimable, PodView};

/// Upstream's `BurstReplicas`: the most pods created or deleted in one sync.
pub const BURST_REPLICAS: usize = 500;

/// The batch sizes of upstream's `slowStartBatch` for `count` creations starting at
/// `initial` (1 for ReplicaSets): 1, 2, 4, … until `count` is reached. A batch with a
/// failure stops the rest.
pub fn slow_start_batches(count: usize, initial: usize) -> Vec<usize> {
    let mut out = Vec::new();
    let mut remaining = count;
    let mut size = initial.max(1);
    while remaining > 0 {
        let batch = size.min(remaining);
        out.push(batch);
        remaining -= batch;
        size = size.saturating_mul(2);
    }
    out
}

fn uid(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

fn name(obj: &Value) -> &str {
    obj["metadata"]["name"].as_str().unwrap_or_default()
}

/// What a ReplicaSet does with the pods of its namespace (or any owner with the objects
/// it may own).
#[derive(Debug)]
pub struct Claim<'a, T: ?Sized = Value> {
    /// Pods it controls that match its selector (adopted ones included).
    pub owned: Vec<&'a T>,
    /// Orphans matching its selector: to be adopted (an ownerReferences patch with the
    /// pod's uid and resourceVersion as preconditions).
    pub adopt: Vec<&'a T>,
    /// Pods it controls that no longer match: to be released.
    pub release: Vec<&'a T>,
}

impl<T: ?Sized> Default for Claim<'_, T> {
    fn default() -> Self {
        Claim {
            owned: Vec::new(),
            adopt: Vec::new(),
            release: Vec::new(),
        }
    }
}

/// Upstream's `ClaimPods`. A ReplicaSet being deleted adopts nothing (but keeps what it
/// owns); pods being deleted are never adopted.
pub fn claim<'a, P: Claimable>(rs: &Value, pods: &'a [P]) -> Claim<'a, P> {
    let selector =
        LabelSelector::from_label_selector(&rs["spec"]["selector"]).unwrap_or_else(|_| {
            // An invalid selector matches nothing.
            LabelSelector::nothing()
        });
    let deleting = !rs["metadata"]["deletionTimestamp"].is_null();
    let mut c = Claim::default();
    let owner_uid = uid(rs);
    for pod in pods {
        let matches = !selector.is_empty() && selector.matches(|k| pod.label(k));
        match pod.controller_uid() {
            Some(owner) if owner == owner_uid => {
                if matches {
                    c.owned.push(pod);
                } else if !deleting {
                    c.release.push(pod);
                }
            }
            Some(_) => {}
            None => {
                if matches && !deleting && !pod.being_deleted() {
                    c.owned.push(pod);
                    c.adopt.push(pod);
                }
            }
        }
    }
    c
}

/// What to do about the replica count.
#[derive(Debug, PartialEq, Eq)]
pub enum Manage {
    Nothing,
    /// Create this many pods (slow-start batches of [`slow_start_batches`]).
    Create(usize),
    /// Delete these pods (names), the best candidates first.
    Delete(Vec<String>),
}

/// The ranking key of a pod for deletion (`ActivePodsWithRanks.Less`): smaller is deleted
/// first.
fn deletion_order<P: PodView + ?Sized>(a: &P, b: &P, rank: &HashMap<&str, usize>) -> Ordering {
    let (na, nb) = (a.node_name(), b.node_name());
    // 1. Unassigned before assigned.
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return if na.is_empty() {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    // 2. Pending < Unknown < Running.
    let phase = |p: &P| match p.phase() {
        Some("Pending") | None => 0,
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 3,
    };
    let by_phase = phase(a).cmp(&phase(b));
    if by_phase != Ordering::Equal {
        return by_phase;
    }
    // 3. Not ready before ready.
    let (ra, rb) = (a.ready(), b.ready());
    if ra.is_some() != rb.is_some() {
        return if ra.is_some() {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    // 4. Lower deletion cost first.
    let by_cost = a.deletion_cost().cmp(&b.deletion_cost());
    if by_cost != Ordering::Equal {
        return by_cost;
    }
    // 5. More related pods on the same node first.
    let r = |n: &str| rank.get(n).copied().unwrap_or(0);
    let by_rank = r(nb).cmp(&r(na));
    if by_rank != Ordering::Equal {
        return by_rank;
    }
    // 6. Both ready: the most recently ready first (no ready time: first).
    if let (Some(since_a), Some(since_b)) = (ra, rb) {
        let by_ready = later_or_none(since_a, since_b);
        if by_ready != Ordering::Equal {
            return by_ready;
        }
    }
    // 7. More restarts first.
    let by_restarts = b.max_restarts().cmp(&a.max_restarts());
    if by_restarts != Ordering::Equal {
        return by_restarts;
    }
    // 8. Newest first (no creation time: first).
    later_or_none(a.created_ms(), b.created_ms())
}

/// `afterOrZero`: a missing time sorts first, then the later one.
fn later_or_none(a: Option<i64>, b: Option<i64>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => y.cmp(&x),
    }
}

/// Upstream's `manageReplicas` decision for `rs` with its active owned pods `owned`
/// (`related`: the active pods of the ReplicaSet and its siblings under one Deployment, for
/// the doubled-up ranking).
pub fn manage<P: PodView + ?Sized>(rs: &Value, owned: &[&P], related: &[&P]) -> Manage {
    let want = rs["spec"]["replicas"].as_i64().unwrap_or(1).max(0);
    let active: Vec<&P> = owned.iter().copied().filter(|p| p.is_active()).collect();
    let have = i64::try_from(active.len()).unwrap_or(i64::MAX);
    let diff = have - want;
    if diff < 0 {
        let n = usize::try_from(-diff)
            .unwrap_or(usize::MAX)
            .min(BURST_REPLICAS);
        return Manage::Create(n);
    }
    if diff == 0 {
        return Manage::Nothing;
    }
    let n = usize::try_from(diff)
        .unwrap_or(usize::MAX)
        .min(BURST_REPLICAS);
    let mut rank: HashMap<&str, usize> = HashMap::new();
    for p in related.iter().filter(|p| p.is_active()) {
        *rank.entry(p.node_name()).or_default() += 1;
    }
    let mut candidates = active;
    candidates.sort_by(|a, b| deletion_order(*a, *b, &rank));
    Manage::Delete(
        candidates
            .iter()
            .take(n)
            .map(|p| p.name().to_string())
            .collect(),
    )
}

/// The pod `rs` creates (`GetPodFromTemplate`): the template's labels, annotations,
/// finalizers and spec, `generateName: <rs>-`, and `rs` as its controller.
pub fn new_pod(rs: &Value) -> Value {
    let template = &rs["spec"]["template"];
    let mut meta = json!({
        "generateName": format!("{}-", name(rs)),
        "namespace": rs["metadata"]["namespace"].clone(),
        "ownerReferences": [{
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": name(rs), "uid": uid(rs),
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    for k in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template["metadata"].get(k).filter(|v| !v.is_null()) {
            meta[k] = v.clone();
        }
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": template["spec"].clone()})
}

/// The ReplicaSet's new `status` (`calculateStatus`) from its active owned pods at
/// `now_ms`; `manage_error` is why the last create or delete failed, if it did.
pub fn status<P: PodView + ?Sized>(
    rs: &Value,
    owned: &[&P],
    now_ms: i64,
    manage_error: Option<&str>,
) -> Value {
    let active: Vec<&P> = owned.iter().copied().filter(|p| p.is_active()).collect();
    let template_labels = rs["spec"]["template"]["metadata"]["labels"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let min_ready = rs["spec"]["minReadySeconds"].as_i64().unwrap_or(0);
    let fully_labeled = active
        .iter()
        .filter(|p| {
            template_labels
                .iter()
                .all(|(k, v)| v.as_str().is_some_and(|v| p.label(k) == Some(v)))
        })
        .count();
    let ready = active.iter().filter(|p| p.ready().is_some()).count();
    let available = active
        .iter()
        .filter(|p| p.is_available(min_ready, now_ms))
        .count();
    let mut conditions: Vec<Value> = rs["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let failure = conditions
        .iter()
        .position(|c| c["type"] == "ReplicaFailure");
    match (manage_error, failure) {
        (Some(err), None) => {
            let want = rs["spec"]["replicas"].as_i64().unwrap_or(1);
            let have = i64::try_from(active.len()).unwrap_or(i64::MAX);
            let reason = match have.cmp(&want) {
                Ordering::Less => "FailedCreate",
                Ordering::Greater => "FailedDelete",
                Ordering::Equal => "",
            };
            let ts = jiff::Timestamp::from_millisecond(now_ms)
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                .unwrap_or_default();
            conditions.push(json!({
                "type": "ReplicaFailure", "status": "True", "lastTransitionTime": ts,
                "reason": reason, "message": err,
            }));
        }
        (None, Some(i)) => {
            conditions.remove(i);
        }
        _ => {}
    }
    let mut st = json!({
        "replicas": active.len(),
        "fullyLabeledReplicas": fully_labeled,
        "readyReplicas": ready,
        "availableReplicas": available,
        "observedGeneration": rs["metadata"]["generation"].clone(),
    });
    if !conditions.is_empty() {
        st["conditions"] = Value::Array(conditions);
    }
    st
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::cachedpod::CachedPod;

    fn rs(replicas: i64) -> Value {
        json!({"metadata": {"name": "web-abc", "namespace": "default", "uid": "rs-uid", "generation": 3},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "pod-template-hash": "abc"}},
                    "spec": {"containers": [{"name": "c", "image": "web:1"}]}}}})
    }

    fn cached(pod: &Value) -> CachedPod {
        let mut pod = pod.clone();
        if pod["spec"].get("containers").is_none() {
            pod["spec"]["containers"] = json!([]);
        }
        serde_json::from_value(pod).unwrap()
    }

    fn pod(name: &str, node: &str, phase: &str, ready: Option<&str>, created: &str) -> Value {
        let mut p = json!({"metadata": {"name": name, "namespace": "default", "labels": {"app": "web", "pod-template-hash": "abc"},
                "creationTimestamp": created,
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-abc", "uid": "rs-uid", "controller": true}]},
            "spec": {"nodeName": node}, "status": {"phase": phase}});
        if let Some(t) = ready {
            p["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]);
        }
        p
    }

    #[test]
    fn slow_start() {
        assert_eq!(slow_start_batches(0, 1), Vec::<usize>::new());
        assert_eq!(slow_start_batches(1, 1), vec![1]);
        assert_eq!(slow_start_batches(10, 1), vec![1, 2, 4, 3]);
        assert_eq!(
            slow_start_batches(500, 1),
            vec![1, 2, 4, 8, 16, 32, 64, 128, 245]
        );
    }

    #[test]
    fn scale_up_is_capped_by_burst() {
        assert_eq!(manage::<Value>(&rs(3), &[], &[]), Manage::Create(3));
        assert_eq!(
            manage::<Value>(&rs(2000), &[], &[]),
            Manage::Create(BURST_REPLICAS)
        );
        let p = pod("a", "n1", "Running", None, "2026-01-01T00:00:00Z");
        assert_eq!(manage(&rs(1), &[&p], &[&p]), Manage::Nothing);
        // Terminal and terminating pods do not count.
        let done = pod("b", "n1", "Succeeded", None, "2026-01-01T00:00:00Z");
        assert_eq!(manage(&rs(2), &[&p, &done], &[]), Manage::Create(1));
    }

    #[test]
    fn scale_down_deletes_in_upstreams_order() {
        let t = "2026-01-01T00:00:00Z";
        let unassigned = pod("unassigned", "", "Pending", None, t);
        let pending = pod("pending", "n1", "Pending", None, t);
        let not_ready = pod("not-ready", "n1", "Running", None, t);
        let ready_old = pod(
            "ready-old",
            "n2",
            "Running",
            Some("2026-01-01T00:00:00Z"),
            t,
        );
        let ready_new = pod(
            "ready-new",
            "n3",
            "Running",
            Some("2026-01-02T00:00:00Z"),
            t,
        );
        let mut restarting = pod(
            "restarting",
            "n4",
            "Running",
            Some("2026-01-01T00:00:00Z"),
            t,
        );
        restarting["status"]["containerStatuses"] = json!([{"restartCount": 5}]);
        let all = [
            &ready_old,
            &not_ready,
            &ready_new,
            &unassigned,
            &restarting,
            &pending,
        ];
        let Manage::Delete(order) = manage(&rs(0), &all, &all) else {
            panic!("expected deletions");
        };
        // The controller's compact summaries rank as the pods' JSON does.
        let summaries: Vec<CachedPod> = all.iter().map(|p| cached(p)).collect();
        let refs: Vec<&CachedPod> = summaries.iter().collect();
        assert_eq!(manage(&rs(0), &refs, &refs), Manage::Delete(order.clone()));
        assert_eq!(
            order,
            vec![
                "unassigned",
                "pending",
                "not-ready",
                "ready-new",
                "restarting",
                "ready-old"
            ]
        );
        // Doubled-up pods go before lone ones; a high deletion cost protects a pod.
        let a = pod("a", "crowded", "Running", Some(t), t);
        let b = pod("b", "crowded", "Running", Some(t), t);
        let c = pod("c", "alone", "Running", Some(t), t);
        let three = [&c, &a, &b];
        assert_eq!(
            manage(&rs(2), &three, &three),
            Manage::Delete(vec!["a".into()])
        );
        let mut precious = a.clone();
        precious["metadata"]["annotations"] =
            json!({"controller.kubernetes.io/pod-deletion-cost": "100"});
        let three = [&c, &precious, &b];
        assert_eq!(
            manage(&rs(2), &three, &three),
            Manage::Delete(vec!["b".into()])
        );
    }

    #[test]
    fn claims_adopt_and_release() {
        let t = "2026-01-01T00:00:00Z";
        let mine = pod("mine", "n1", "Running", None, t);
        let mut orphan = pod("orphan", "n1", "Running", None, t);
        orphan["metadata"]["ownerReferences"] = json!([]);
        let mut other = pod("other", "n1", "Running", None, t);
        other["metadata"]["ownerReferences"][0]["uid"] = json!("someone-else");
        let mut relabelled = pod("relabelled", "n1", "Running", None, t);
        relabelled["metadata"]["labels"] = json!({"app": "debug"});
        let mut dying_orphan = orphan.clone();
        dying_orphan["metadata"]["name"] = json!("dying");
        dying_orphan["metadata"]["deletionTimestamp"] = json!(t);
        let all = vec![mine, orphan, other, relabelled, dying_orphan];
        let c = claim(&rs(3), &all);
        let names = |v: &[&Value]| v.iter().map(|p| name(p).to_string()).collect::<Vec<_>>();
        assert_eq!(names(&c.owned), vec!["mine", "orphan"]);
        assert_eq!(names(&c.adopt), vec!["orphan"]);
        assert_eq!(names(&c.release), vec!["relabelled"]);
        let summaries: Vec<CachedPod> = all.iter().map(cached).collect();
        let s = claim(&rs(3), &summaries);
        let summary_names =
            |v: &[&CachedPod]| v.iter().map(|p| p.name().to_string()).collect::<Vec<_>>();
        assert_eq!(summary_names(&s.owned), vec!["mine", "orphan"]);
        assert_eq!(summary_names(&s.adopt), vec!["orphan"]);
        assert_eq!(summary_names(&s.release), vec!["relabelled"]);
        // A ReplicaSet being deleted adopts and releases nothing.
        let mut deleting = rs(3);
        deleting["metadata"]["deletionTimestamp"] = json!(t);
        let c = claim(&deleting, &all);
        assert_eq!(names(&c.owned), vec!["mine"]);
        assert!(c.adopt.is_empty() && c.release.is_empty());
    }

    #[test]
    fn new_pods_come_from_the_template() {
        let p = new_pod(&rs(1));
        assert_eq!(p["metadata"]["generateName"], "web-abc-");
        assert_eq!(p["metadata"]["labels"]["pod-template-hash"], "abc");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(
            p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"],
            true
        );
        assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], "rs-uid");
        assert_eq!(p["spec"]["containers"][0]["image"], "web:1");
    }

    #[test]
    fn status_counts_and_failure_condition() {
        let now = crate::pods::time_ms(&json!("2026-01-01T00:01:00Z")).unwrap();
        let ready = pod(
            "a",
            "n1",
            "Running",
            Some("2026-01-01T00:00:00Z"),
            "2026-01-01T00:00:00Z",
        );
        let just_ready = pod(
            "b",
            "n1",
            "Running",
            Some("2026-01-01T00:00:50Z"),
            "2026-01-01T00:00:00Z",
        );
        let mut unlabeled = pod("c", "n1", "Pending", None, "2026-01-01T00:00:00Z");
        unlabeled["metadata"]["labels"] = json!({"app": "web"});
        let mut r = rs(4);
        r["spec"]["minReadySeconds"] = json!(30);
        let st = status(&r, &[&ready, &just_ready, &unlabeled], now, None);
        let summaries = [cached(&ready), cached(&just_ready), cached(&unlabeled)];
        assert_eq!(
            status(&r, &summaries.iter().collect::<Vec<_>>(), now, None),
            st
        );
        assert_eq!(
            st,
            json!({"replicas": 3, "fullyLabeledReplicas": 2, "readyReplicas": 2, "availableReplicas": 1, "observedGeneration": 3})
        );
        let st = status(
            &r,
            &[&ready],
            now,
            Some("pods \"web-abc-x\" is forbidden: exceeded quota"),
        );
        assert_eq!(st["conditions"][0]["type"], "ReplicaFailure");
        assert_eq!(st["conditions"][0]["reason"], "FailedCreate");
        // Cleared once creates work again.
        r["status"] = st;
        let st = status(&r, &[&ready], now, None);
        assert!(st.get("conditions").is_none(), "{st}");
    }
}
