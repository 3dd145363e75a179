//! The Job controller (upstream's `pkg/controller/job`, batch/v1 as of 1.33): pods made
//! from the template with the `batch.kubernetes.io/job-tracking` finalizer, counted into
//! `status.uncountedTerminatedPods` before their finalizer goes and then into
//! `succeeded`/`failed`; parallelism and completions (NonIndexed and Indexed), the
//! interim `SuccessCriteriaMet`/`FailureTarget` conditions then `Complete`/`Failed` once no
//! pod is terminating, `backoffLimit`, `activeDeadlineSeconds`, `suspend`, the pod failure
//! policy (FailJob / Ignore / Count), and the exponential back-off between re-creations.
//!
//! A sync is three pure steps around the writes, as upstream's `syncJob`:
//! [`plan`] (what to create or delete, the finished condition), [`track`] (given how
//! many creations and deletions succeeded: the status to flush, the finalizers to remove)
//! and [`finish`] (given which finalizers went: the counters and the final condition).
//! [`run_jobs`] carries them out as the `kube-system/job-controller` service account.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, Recorder};
use runtime::expectations::Expectations;
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next, Observed};
use crate::pods::{self, PodView};
use crate::run::{key_of, now_ms};
use crate::util::{api_message, claimable, lock, rfc3339};

/// The finalizer that keeps a pod until its completion is counted in the Job's status.
pub const TRACKING_FINALIZER: &str = "batch.kubernetes.io/job-tracking";
/// The completion index annotation (and label) of an Indexed Job's pods.
pub const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// `DefaultJobPodFailureBackOff`.
pub const DEFAULT_BACKOFF_MS: i64 = 10_000;
/// `MaxJobPodFailureBackOff`.
pub const MAX_BACKOFF_MS: i64 = 360_000;
/// `MaxUncountedPods`: how many pods one sync moves through `uncountedTerminatedPods`.
pub const MAX_UNCOUNTED_PODS: usize = 500;
/// `MaxPodCreateDeletePerSync`.
pub const MAX_POD_CREATE_DELETE_PER_SYNC: usize = 500;

pub(crate) fn s<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_str().unwrap_or_default()
}

pub(crate) fn name(v: &Value) -> &str {
    s(v, &["metadata", "name"])
}

pub(crate) fn uid(v: &Value) -> &str {
    s(v, &["metadata", "uid"])
}

/// The Complete or Failed condition that is True, if the Job finished (`IsJobFinished`).
pub fn finished_condition(job: &Value) -> Option<&'static str> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .filter(|c| c["status"] == "True")
        .find_map(|c| match c["type"].as_str() {
            Some("Complete") => Some("Complete"),
            Some("Failed") => Some("Failed"),
            _ => None,
        })
}

fn condition<'a>(job: &'a Value, type_: &str) -> Option<&'a Value> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

pub fn is_indexed(job: &Value) -> bool {
    job["spec"]["completionMode"] == "Indexed"
}

fn completions(job: &Value) -> Option<i64> {
    job["spec"]["completions"].as_i64()
}

fn suspended(job: &Value) -> bool {
    job["spec"]["suspend"] == true
}

pub fn has_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|f| f.iter().any(|x| x == TRACKING_FINALIZER))
}

/// [`has_finalizer`], read off typed metadata.
fn tracked_by_job(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.finalizers
        .iter()
        .flatten()
        .any(|f| f == TRACKING_FINALIZER)
}

/// The pod's completion index (`getCompletionIndex`), if valid.
pub fn completion_index(pod: &Value) -> Option<i64> {
    pod["metadata"]["annotations"][COMPLETION_INDEX]
        .as_str()?
        .parse::<i64>()
        .ok()
        .filter(|i| *i >= 0)
}

fn valid_index(job: &Value, pod: &Value) -> Option<i64> {
    completion_index(pod).filter(|i| *i < completions(job).unwrap_or(0))
}

/// `managedByExternalController`: `spec.managedBy` names another controller, which
/// then owns the Job's pods and status.
pub fn managed_elsewhere(job: &Value) -> bool {
    job["spec"]["managedBy"]
        .as_str()
        .is_some_and(|m| m != "kubernetes.io/job-controller")
}

/// `onlyReplaceFailedPods`.
fn only_replace_failed(job: &Value) -> bool {
    job["spec"]["podReplacementPolicy"] == "Failed" || !job["spec"]["podFailurePolicy"].is_null()
}

fn phase(pod: &Value) -> &str {
    s(pod, &["status", "phase"])
}

/// `isPodFailed`: Failed, or (unless only failed pods are replaced) being deleted
/// without having succeeded.
pub fn is_pod_failed(pod: &Value, job: &Value) -> bool {
    if phase(pod) == "Failed" {
        return true;
    }
    if only_replace_failed(job) {
        return false;
    }
    !pod["metadata"]["deletionTimestamp"].is_null() && phase(pod) != "Succeeded"
}

/// `IsPodTerminating`: being deleted and not yet Succeeded or Failed.
fn is_terminating(pod: &Value) -> bool {
    !pod["metadata"]["deletionTimestamp"].is_null() && !matches!(phase(pod), "Succeeded" | "Failed")
}

/// When a pod finished (`getFinishedTime`): its containers' last `finishedAt`, else the
/// Ready=False transition, else its deletion time, else its creation.
pub fn finished_time_ms(pod: &Value) -> i64 {
    let statuses = ["containerStatuses", "initContainerStatuses"];
    let finished = statuses
        .iter()
        .flat_map(|k| pod["status"][*k].as_array().into_iter().flatten())
        .filter_map(|c| pods::time_ms(&c["state"]["terminated"]["finishedAt"]))
        .max();
    if let Some(t) = finished {
        return t;
    }
    let ready_false = pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready" && c["status"] == "False")
        .and_then(|c| pods::time_ms(&c["lastTransitionTime"]));
    ready_false
        .or_else(|| pods::time_ms(&pod["metadata"]["deletionTimestamp"]))
        .or_else(|| pods::time_ms(&pod["metadata"]["creationTimestamp"]))
        .unwrap_or(0)
}

/// The back-off state of one Job (upstream's `backoffRecord`), kept in memory by the loop.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    pub failures_after_last_success: i64,
    pub last_failure_ms: Option<i64>,
}

impl BackoffRecord {
    /// `newBackoffRecord`: the record after the newly finished pods.
    pub fn next(&self, new_succeeded: &[&Value], new_failed: &[&Value]) -> BackoffRecord {
        let mut failed: Vec<i64> = new_failed.iter().map(|p| finished_time_ms(p)).collect();
        failed.sort_unstable();
        let last_success = new_succeeded.iter().map(|p| finished_time_ms(p)).max();
        match last_success {
            None => {
                let Some(last) = failed.last() else {
                    return self.clone();
                };
                BackoffRecord {
                    failures_after_last_success: self.failures_after_last_success
                        + i64::try_from(failed.len()).unwrap_or(0),
                    last_failure_ms: Some(*last),
                }
            }
            Some(success) => {
                let after: Vec<i64> = failed.into_iter().filter(|t| *t > success).collect();
                BackoffRecord {
                    failures_after_last_success: i64::try_from(after.len()).unwrap_or(0),
                    last_failure_ms: after.last().copied(),
                }
            }
        }
    }

    /// `getRemainingTime`: 10 s doubling per failure after the last success, capped at
    /// 6 min, counted from the last failure.
    pub fn remaining_ms(&self, now_ms: i64) -> i64 {
        if self.failures_after_last_success == 0 {
            return 0;
        }
        let mut backoff = DEFAULT_BACKOFF_MS;
        for _ in 1..self.failures_after_last_success {
            backoff = backoff.saturating_mul(2);
            if backoff >= MAX_BACKOFF_MS {
                backoff = MAX_BACKOFF_MS;
                break;
            }
        }
        let elapsed = now_ms - self.last_failure_ms.unwrap_or(now_ms);
        if backoff < elapsed {
            0
        } else {
            backoff - elapsed
        }
    }
}

/// What the pod failure policy makes of a failed pod (`matchPodFailurePolicy`): a message
/// when it fails the Job, whether it counts towards `backoffLimit`, the matched action.
pub fn match_failure_policy(job: &Value, pod: &Value) -> (Option<String>, bool, Option<String>) {
    let Some(rules) = job["spec"]["podFailurePolicy"]["rules"].as_array() else {
        return (None, true, None);
    };
    let ns = s(pod, &["metadata", "namespace"]);
    let pname = name(pod);
    for (index, rule) in rules.iter().enumerate() {
        let action = rule["action"].as_str().unwrap_or_default();
        let matched: Option<String> = if !rule["onExitCodes"].is_null() {
            matching_container(pod, &rule["onExitCodes"]).map(|(c, code)| {
                format!(
                    "Container {c} for pod {ns}/{pname} failed with exit code {code} matching {action} rule at index {index}"
                )
            })
        } else if let Some(patterns) = rule["onPodConditions"].as_array() {
            pod["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| {
                    patterns.iter().any(|p| {
                        p["type"] == c["type"]
                            && c["status"] == p["status"].as_str().unwrap_or("True")
                    })
                })
                .map(|c| {
                    format!(
                        "Pod {ns}/{pname} has condition {} matching {action} rule at index {index}",
                        s(c, &["type"])
                    )
                })
        } else {
            None
        };
        let Some(message) = matched else { continue };
        match action {
            "Ignore" => return (None, false, Some(action.into())),
            "Count" => return (None, true, Some(action.into())),
            "FailJob" => return (Some(message), true, Some(action.into())),
            // FailIndex needs backoffLimitPerIndex, which is not implemented.
            _ => {}
        }
    }
    (None, true, None)
}

/// The first terminated container (then init container) with a non-zero exit code the
/// `onExitCodes` requirement matches.
fn matching_container(pod: &Value, req: &Value) -> Option<(String, i64)> {
    let values: Vec<i64> = req["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_i64)
        .collect();
    let container = req["containerName"].as_str();
    let op_in = req["operator"] == "In";
    ["containerStatuses", "initContainerStatuses"]
        .iter()
        .flat_map(|k| pod["status"][*k].as_array().into_iter().flatten())
        .find_map(|c| {
            let code = c["state"]["terminated"]["exitCode"].as_i64()?;
            if container.is_some_and(|n| c["name"] != n) || code == 0 {
                return None;
            }
            (values.contains(&code) == op_in).then(|| (s(c, &["name"]).to_string(), code))
        })
}

/// Ordered completion indexes, rendered as upstream's intervals (`1,3-5`).
pub fn format_indexes(set: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = set.iter().copied().peekable();
    while let Some(first) = iter.next() {
        let mut last = first;
        while iter.peek() == Some(&(last + 1)) {
            last += 1;
            iter.next();
        }
        out.push(if first == last {
            first.to_string()
        } else {
            format!("{first}-{last}")
        });
    }
    out.join(",")
}

/// `parseIndexesFromString`: the indexes below `completions` (bad parts are skipped).
pub fn parse_indexes(text: &str, completions: i64) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in text.split(',').filter(|p| !p.is_empty()) {
        let (a, b) = part.split_once('-').unwrap_or((part, part));
        let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) else {
            continue;
        };
        for i in a.max(0)..=b.min(completions - 1) {
            out.insert(i);
        }
    }
    out
}

/// `controller.ActivePods` order: the pods to delete first come first (unassigned,
/// pending, not ready, ready for less time, more restarts, newer).
fn active_pods_order(a: &&Value, b: &&Value) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let assigned = |p: &Value| !s(p, &["spec", "nodeName"]).is_empty();
    let rank = |p: &Value| match phase(p) {
        "Pending" | "" => 0,
        "Unknown" => 1,
        _ => 2,
    };
    let key = |p: &Value| (assigned(p), rank(p), pods::is_ready(p));
    match key(a).cmp(&key(b)) {
        Ordering::Equal => {}
        o => return o,
    }
    if pods::is_ready(a) {
        match pods::ready_since_ms(b).cmp(&pods::ready_since_ms(a)) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    match pods::max_restarts(b).cmp(&pods::max_restarts(a)) {
        Ordering::Equal => {}
        o => return o,
    }
    let created = |p: &Value| pods::time_ms(&p["metadata"]["creationTimestamp"]);
    created(b).cmp(&created(a))
}

/// The condition object upstream's `newCondition` makes.
fn new_condition(type_: &str, status: &str, reason: &str, message: &str, now_ms: i64) -> Value {
    let t = rfc3339(now_ms);
    json!({"type": type_, "status": status, "reason": reason, "message": message,
        "lastProbeTime": t, "lastTransitionTime": t})
}

/// `ensureJobConditionStatus`: whether the list changed.
fn ensure_condition(
    status: &mut Value,
    type_: &str,
    cstatus: &str,
    reason: &str,
    message: &str,
    now_ms: i64,
) -> bool {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    let Some(list) = status["conditions"].as_array_mut() else {
        return false;
    };
    if let Some(c) = list.iter_mut().find(|c| c["type"] == type_) {
        if c["status"] != cstatus || c["reason"] != reason || c["message"] != message {
            *c = new_condition(type_, cstatus, reason, message, now_ms);
            return true;
        }
        return false;
    }
    if cstatus != "False" {
        list.push(new_condition(type_, cstatus, reason, message, now_ms));
        return true;
    }
    false
}

/// A condition the sync is about to reach (`jobCtx.finishedCondition`).
#[derive(Clone, Debug, PartialEq)]
pub struct Finished {
    pub type_: String,
    pub reason: String,
    pub message: String,
}

impl Finished {
    fn new(type_: &str, reason: &str, message: &str) -> Finished {
        Finished {
            type_: type_.into(),
            reason: reason.into(),
            message: message.into(),
        }
    }
}

/// What [`plan`] decides to do with pods.
#[derive(Clone, Debug, PartialEq)]
pub enum Manage {
    Nothing,
    /// Create these pods (full objects with `generateName`).
    Create(Vec<Value>),
    /// Delete these pods; `remove_finalizer` first when the Job keeps running
    /// (`deleteJobPods`), not when it is finishing (`deleteActivePods`).
    Delete {
        pods: Vec<String>,
        remove_finalizer: bool,
    },
}

/// What a sync needs from outside: the cached Job and its pods, the expectations, the
/// back-off record and the time.
pub struct Input<'a> {
    pub job: &'a Value,
    /// Every pod of the Job's namespace (claimed here).
    pub pods: &'a [Value],
    pub expectations_satisfied: bool,
    /// Pods whose finalizer removal is expected (`finalizerExpectations`).
    pub expected_rm_finalizers: &'a HashSet<String>,
    pub backoff: &'a BackoffRecord,
    pub now_ms: i64,
}

/// [`plan`]'s result: the decision plus what [`track`] needs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// Orphans to adopt and pods to release (names).
    pub adopt: Vec<String>,
    pub release: Vec<String>,
    pub manage: Manage,
    /// Sync again after this long (active deadline, back-off).
    pub requeue_after_ms: Option<i64>,
    /// The record to keep once the status with the newly finished pods is written.
    pub new_backoff: BackoffRecord,
    /// Events to emit now (suspend / resume).
    pub events: Vec<(EventType, String, String)>,
    job: Value,
    status: Value,
    pods: Vec<Value>,
    active: i64,
    ready: i64,
    terminating: i64,
    satisfied: bool,
    finished: Option<Finished>,
    suspend_changed: bool,
    prev_succeeded_indexes: BTreeSet<i64>,
    succeeded_indexes: BTreeSet<i64>,
    expected_rm: HashSet<String>,
    now: i64,
}

/// The pod a Job creates (`GetPodFromTemplate` with the tracking finalizer, and for
/// Indexed Jobs the index annotation, label, hostname and `JOB_COMPLETION_INDEX`).
pub fn new_pod(job: &Value, index: Option<i64>) -> Value {
    let template = &job["spec"]["template"];
    let jname = name(job);
    let mut meta = json!({
        "generateName": format!("{jname}-"),
        "namespace": job["metadata"]["namespace"].clone(),
        "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "Job", "name": jname, "uid": uid(job),
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    for k in ["labels", "annotations", "finalizers"] {
        if let Some(v) = template["metadata"].get(k).filter(|v| !v.is_null()) {
            meta[k] = v.clone();
        }
    }
    let mut finalizers: Vec<Value> = meta["finalizers"].as_array().cloned().unwrap_or_default();
    if !finalizers.iter().any(|f| f == TRACKING_FINALIZER) {
        finalizers.push(json!(TRACKING_FINALIZER));
    }
    meta["finalizers"] = json!(finalizers);
    let mut spec = template["spec"].clone();
    if is_indexed(job) {
        for k in ["containers", "initContainers"] {
            if let Some(cs) = spec[k].as_array_mut() {
                for c in cs {
                    let has = c["env"]
                        .as_array()
                        .is_some_and(|e| e.iter().any(|v| v["name"] == "JOB_COMPLETION_INDEX"));
                    if !has {
                        if !c["env"].is_array() {
                            c["env"] = json!([]);
                        }
                        if let Some(env) = c["env"].as_array_mut() {
                            env.push(json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {
                                "fieldRef": {"fieldPath": format!("metadata.annotations['{COMPLETION_INDEX}']")}}}));
                        }
                    }
                }
            }
        }
    }
    if let Some(ix) = index {
        if !meta["annotations"].is_object() {
            meta["annotations"] = json!({});
        }
        meta["annotations"][COMPLETION_INDEX] = json!(ix.to_string());
        if !meta["labels"].is_object() {
            meta["labels"] = json!({});
        }
        meta["labels"][COMPLETION_INDEX] = json!(ix.to_string());
        spec["hostname"] = json!(format!("{jname}-{ix}"));
        meta["generateName"] = json!(generate_name_with_index(jname, ix));
    }
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

/// `podGenerateNameWithIndex`: `<job>-<index>-`, the Job's name cut so the generated
/// name fits in 63 characters.
fn generate_name_with_index(job: &str, index: i64) -> String {
    let appendix = format!("-{index}-");
    let max = 63 - 5 - appendix.len();
    let base: String = job.chars().take(max).collect();
    format!("{base}{appendix}")
}

/// The first `count` indexes below `completions` that neither succeeded nor have an
/// active (or, when only failed pods are replaced, terminating) pod
/// (`firstPendingIndexes`).
fn first_pending_indexes(
    job: &Value,
    succeeded: &BTreeSet<i64>,
    active: &[&Value],
    pods: &[&Value],
    count: usize,
) -> Vec<i64> {
    let mut non_pending: BTreeSet<i64> = succeeded.clone();
    non_pending.extend(active.iter().filter_map(|p| completion_index(p)));
    if only_replace_failed(job) {
        non_pending.extend(
            pods.iter()
                .filter(|p| is_terminating(p))
                .filter_map(|p| completion_index(p)),
        );
    }
    (0..completions(job).unwrap_or(0))
        .filter(|i| !non_pending.contains(i))
        .take(count)
        .collect()
}

/// `activePodsForRemoval`: for Indexed Jobs the pods with a bad or repeated index first,
/// then the others in `ActivePods` order, at least `at_least` of them.
fn active_pods_for_removal<'a>(
    job: &Value,
    active: &[&'a Value],
    at_least: usize,
) -> Vec<&'a Value> {
    let mut rm: Vec<&Value> = Vec::new();
    let mut left: Vec<&Value> = Vec::new();
    if is_indexed(job) {
        let mut by_index: HashMap<i64, Vec<&Value>> = HashMap::new();
        for p in active {
            match valid_index(job, p) {
                None => rm.push(p),
                Some(i) => by_index.entry(i).or_default().push(p),
            }
        }
        let mut indexes: Vec<i64> = by_index.keys().copied().collect();
        indexes.sort_unstable();
        for i in indexes {
            let mut group = by_index.remove(&i).unwrap_or_default();
            // Keep the most advanced pod of the index.
            group.sort_by(active_pods_order);
            if let Some(keep) = group.pop() {
                left.push(keep);
            }
            rm.extend(group);
        }
    } else {
        left = active.to_vec();
    }
    if rm.len() < at_least {
        left.sort_by(active_pods_order);
        let n = at_least - rm.len();
        rm.extend(left.into_iter().take(n));
    }
    rm
}

/// Step 1 of a sync (`syncJob` up to `manageJob`): claims the pods, counts them, decides
/// the finished condition, and what to create or delete.
pub fn plan(input: &Input<'_>) -> Option<Plan> {
    let job = input.job;
    if finished_condition(job).is_some() || managed_elsewhere(job) {
        return None;
    }
    let mode = job["spec"]["completionMode"]
        .as_str()
        .unwrap_or("NonIndexed");
    if mode != "NonIndexed" && mode != "Indexed" {
        return None;
    }
    let now = input.now_ms;
    let claim = crate::replicaset::claim(job, input.pods);
    // Adopted pods count as having the finalizer (it is added when adopting).
    let adopt_names: HashSet<&str> = claim.adopt.iter().map(|p| name(p)).collect();
    let owned: Vec<Value> = claim
        .owned
        .iter()
        .map(|p| {
            let mut p = (*p).clone();
            if adopt_names.contains(name(&p)) && !has_finalizer(&p) {
                let mut f: Vec<Value> = p["metadata"]["finalizers"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default();
                f.push(json!(TRACKING_FINALIZER));
                p["metadata"]["finalizers"] = json!(f);
            }
            p
        })
        .collect();
    let pods: Vec<&Value> = owned.iter().collect();
    let active_pods: Vec<&Value> = pods.iter().copied().filter(|p| p.is_active()).collect();
    let mut status = job["status"].clone();
    if !status.is_object() {
        status = json!({});
    }
    if !status["uncountedTerminatedPods"].is_object() {
        status["uncountedTerminatedPods"] = json!({});
    }
    let uncounted = |k: &str| -> HashSet<String> {
        status["uncountedTerminatedPods"][k]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    };
    let (unc_succeeded, unc_failed) = (uncounted("succeeded"), uncounted("failed"));
    let ready =
        i64::try_from(active_pods.iter().filter(|p| pods::is_ready(p)).count()).unwrap_or(0);
    let terminating = i64::try_from(pods.iter().filter(|p| is_terminating(p)).count()).unwrap_or(0);
    let active = i64::try_from(active_pods.len()).unwrap_or(0);
    // getNewFinishedPods: pods with the finalizer not yet in the uncounted lists.
    let valid = |p: &Value, unc: &HashSet<String>| {
        has_finalizer(p)
            && !unc.contains(uid(p))
            && !input.expected_rm_finalizers.contains(uid(p))
            && (!is_indexed(job) || valid_index(job, p).is_some())
    };
    let new_succeeded: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|p| valid(p, &unc_succeeded) && phase(p) == "Succeeded")
        .collect();
    let new_failed: Vec<&Value> = pods
        .iter()
        .copied()
        .filter(|p| valid(p, &unc_failed) && is_pod_failed(p, job))
        .collect();
    let counted_failed = new_failed
        .iter()
        .filter(|p| match_failure_policy(job, p).1)
        .count();
    let n = |x: usize| i64::try_from(x).unwrap_or(0);
    let mut succeeded =
        status["succeeded"].as_i64().unwrap_or(0) + n(new_succeeded.len()) + n(unc_succeeded.len());
    let failed = status["failed"].as_i64().unwrap_or(0) + n(counted_failed) + n(unc_failed.len());
    if status["startTime"].is_null() && !suspended(job) {
        status["startTime"] = json!(rfc3339(now));
    }
    let new_backoff = input.backoff.next(&new_succeeded, &new_failed);
    let backoff_limit = job["spec"]["backoffLimit"].as_i64().unwrap_or(6);
    let mut requeue_after_ms: Option<i64> = None;
    let mut finished: Option<Finished> = condition(job, "SuccessCriteriaMet")
        .filter(|c| c["status"] == "True")
        .map(|c| Finished::new("SuccessCriteriaMet", s(c, &["reason"]), s(c, &["message"])));
    if finished.is_none() {
        if let Some(c) = condition(job, "FailureTarget").filter(|c| c["status"] == "True") {
            finished = Some(Finished::new(
                "Failed",
                s(c, &["reason"]),
                s(c, &["message"]),
            ));
        } else if let Some(msg) = pods
            .iter()
            .filter(|p| is_pod_failed(p, job))
            .find_map(|p| match_failure_policy(job, p).0)
        {
            finished = Some(Finished::new("FailureTarget", "PodFailurePolicy", &msg));
        }
    }
    if finished.is_none() {
        let start = pods::time_ms(&status["startTime"]);
        let deadline = job["spec"]["activeDeadlineSeconds"].as_i64();
        if failed > backoff_limit || past_backoff_limit_on_failure(job, &pods, backoff_limit) {
            finished = Some(Finished::new(
                "FailureTarget",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            ));
        } else if let (Some(d), Some(start), false) = (deadline, start, suspended(job)) {
            let left = d.saturating_mul(1000) - (now - start);
            if left <= 0 {
                finished = Some(Finished::new(
                    "FailureTarget",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                ));
            } else {
                requeue_after_ms = Some(left);
            }
        }
    }
    let mut prev_succeeded_indexes = BTreeSet::new();
    let mut succeeded_indexes = BTreeSet::new();
    if is_indexed(job) {
        let c = completions(job).unwrap_or(0);
        prev_succeeded_indexes = parse_indexes(s(&status, &["completedIndexes"]), c);
        succeeded_indexes = prev_succeeded_indexes.clone();
        for p in &pods {
            if phase(p) == "Succeeded"
                && has_finalizer(p)
                && let Some(i) = valid_index(job, p)
            {
                succeeded_indexes.insert(i);
            }
        }
        succeeded = n(succeeded_indexes.len());
    }
    let mut manage = Manage::Nothing;
    let mut manage_called = false;
    let mut events = Vec::new();
    let mut suspend_changed = false;
    if finished.is_some() {
        if !active_pods.is_empty() {
            manage = Manage::Delete {
                pods: active_pods.iter().map(|p| name(p).to_string()).collect(),
                remove_finalizer: false,
            };
        }
    } else if input.expectations_satisfied && job["metadata"]["deletionTimestamp"].is_null() {
        manage_called = true;
        let parallelism = job["spec"]["parallelism"].as_i64().unwrap_or(1);
        if suspended(job) {
            let rm = active_pods_for_removal(job, &active_pods, active_pods.len());
            if !rm.is_empty() {
                manage = Manage::Delete {
                    pods: rm.iter().map(|p| name(p).to_string()).collect(),
                    remove_finalizer: true,
                };
            }
        } else {
            let want = match completions(job) {
                None if succeeded > 0 => active,
                None => parallelism,
                Some(c) => (c - succeeded).min(parallelism).max(0),
            };
            let rm_at_least = usize::try_from((active - want).max(0)).unwrap_or(0);
            let mut rm = active_pods_for_removal(job, &active_pods, rm_at_least);
            rm.truncate(MAX_POD_CREATE_DELETE_PER_SYNC);
            let waiting = if only_replace_failed(job) {
                terminating
            } else {
                0
            };
            if !rm.is_empty() {
                manage = Manage::Delete {
                    pods: rm.iter().map(|p| name(p).to_string()).collect(),
                    remove_finalizer: true,
                };
            } else if want - waiting - active > 0 {
                let remaining = new_backoff.remaining_ms(now);
                if remaining > 0 {
                    requeue_after_ms =
                        Some(requeue_after_ms.map_or(remaining, |r| r.min(remaining)));
                } else {
                    let diff = usize::try_from(want - waiting - active)
                        .unwrap_or(0)
                        .min(MAX_POD_CREATE_DELETE_PER_SYNC);
                    let templates: Vec<Value> = if is_indexed(job) {
                        first_pending_indexes(job, &succeeded_indexes, &active_pods, &pods, diff)
                            .into_iter()
                            .map(|i| new_pod(job, Some(i)))
                            .collect()
                    } else {
                        (0..diff).map(|_| new_pod(job, None)).collect()
                    };
                    if !templates.is_empty() {
                        manage = Manage::Create(templates);
                    }
                }
            }
        }
    }
    if finished.is_none() && manage_called {
        // The suspend condition only moves when the sync could act (as upstream).
        let complete_now = is_complete(job, succeeded, active_after(&manage, active));
        if !complete_now {
            if suspended(job) {
                if ensure_condition(
                    &mut status,
                    "Suspended",
                    "True",
                    "JobSuspended",
                    "Job suspended",
                    now,
                ) {
                    suspend_changed = true;
                    events.push((
                        EventType::Normal,
                        "Suspended".into(),
                        "Job suspended".into(),
                    ));
                }
            } else if ensure_condition(
                &mut status,
                "Suspended",
                "False",
                "JobResumed",
                "Job resumed",
                now,
            ) {
                suspend_changed = true;
                events.push((EventType::Normal, "Resumed".into(), "Job resumed".into()));
                status["startTime"] = json!(rfc3339(now));
            }
        }
    }
    Some(Plan {
        adopt: claim.adopt.iter().map(|p| name(p).to_string()).collect(),
        release: claim.release.iter().map(|p| name(p).to_string()).collect(),
        manage,
        requeue_after_ms,
        new_backoff,
        events,
        job: job.clone(),
        status,
        pods: owned.clone(),
        active,
        ready,
        terminating,
        satisfied: input.expectations_satisfied,
        finished,
        suspend_changed,
        prev_succeeded_indexes,
        succeeded_indexes,
        expected_rm: input.expected_rm_finalizers.clone(),
        now,
    })
}

/// The active count if every planned action succeeds (used to decide completion before
/// the outcome is known only for the suspend condition; `track` recomputes it).
fn active_after(manage: &Manage, active: i64) -> i64 {
    match manage {
        Manage::Nothing => active,
        Manage::Create(t) => active + i64::try_from(t.len()).unwrap_or(0),
        Manage::Delete { pods, .. } => active - i64::try_from(pods.len()).unwrap_or(0),
    }
}

fn is_complete(job: &Value, succeeded: i64, active: i64) -> bool {
    match completions(job) {
        None => succeeded > 0 && active == 0,
        Some(c) => succeeded >= c && active == 0,
    }
}

/// `pastBackoffLimitOnFailure`: with `restartPolicy: OnFailure`, the restarts of the
/// running and pending pods reach `backoffLimit`.
fn past_backoff_limit_on_failure(job: &Value, pods: &[&Value], limit: i64) -> bool {
    if job["spec"]["template"]["spec"]["restartPolicy"] != "OnFailure" {
        return false;
    }
    let restarts: i64 = pods
        .iter()
        .filter(|p| matches!(phase(p), "Running" | "Pending"))
        .flat_map(|p| {
            ["containerStatuses", "initContainerStatuses"]
                .iter()
                .flat_map(|k| p["status"][*k].as_array().cloned().unwrap_or_default())
                .collect::<Vec<_>>()
        })
        .filter_map(|c| c["restartCount"].as_i64())
        .sum();
    if limit == 0 {
        restarts > 0
    } else {
        restarts >= limit
    }
}

/// How the planned pod actions went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// Pods created.
    pub created: usize,
    /// Pods deleted (or already gone).
    pub deleted: usize,
    /// Of those, how many were ready.
    pub deleted_ready: usize,
}

/// Step 2 (`trackJobStatusAndRemoveFinalizers` up to the finalizer removals).
#[derive(Clone, Debug)]
pub struct Tracking {
    /// The status to write before removing finalizers (when `flush`).
    pub status: Value,
    pub flush: bool,
    /// Pods whose finalizer goes now (name, uid).
    pub remove_finalizers: Vec<(String, String)>,
    uids_with_finalizer: HashSet<String>,
    finished: Option<Finished>,
    reached_max: bool,
    terminating: i64,
}

/// Step 2 of a sync: given the outcome of the pod actions, the status to flush and the
/// finalizers to remove.
pub fn track(plan: &Plan, outcome: Outcome) -> Tracking {
    let job = &plan.job;
    let mut status = plan.status.clone();
    let mut finished = plan.finished.clone();
    let mut active = plan.active;
    let mut ready = plan.ready;
    let mut terminating = plan.terminating;
    let created = i64::try_from(outcome.created).unwrap_or(0);
    let deleted = i64::try_from(outcome.deleted).unwrap_or(0);
    let deleted_ready = i64::try_from(outcome.deleted_ready).unwrap_or(0);
    if finished.is_some() {
        if deleted != active || !plan.satisfied {
            finished = None;
        }
        active -= deleted;
        terminating += deleted;
        ready -= deleted_ready;
    } else {
        match &plan.manage {
            Manage::Create(_) => active += created,
            Manage::Delete { .. } => {
                active -= deleted;
                terminating += deleted;
                ready -= deleted_ready;
            }
            Manage::Nothing => {}
        }
        let succeeded = if is_indexed(job) {
            i64::try_from(plan.succeeded_indexes.len()).unwrap_or(0)
        } else {
            let unc = status["uncountedTerminatedPods"]["succeeded"]
                .as_array()
                .map_or(0, Vec::len);
            let new = plan
                .pods
                .iter()
                .filter(|p| {
                    has_finalizer(p)
                        && phase(p) == "Succeeded"
                        && !plan.expected_rm.contains(uid(p))
                        && !status["uncountedTerminatedPods"]["succeeded"]
                            .as_array()
                            .is_some_and(|a| a.iter().any(|u| u == uid(p)))
                })
                .count();
            status["succeeded"].as_i64().unwrap_or(0) + i64::try_from(unc + new).unwrap_or(0)
        };
        if is_complete(job, succeeded, active) {
            finished = Some(Finished::new(
                "SuccessCriteriaMet",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            ));
        }
    }
    let mut needs_flush = plan.suspend_changed
        || active != status["active"].as_i64().unwrap_or(0)
        || status["ready"].as_i64() != Some(ready)
        || status["terminating"].as_i64() != Some(terminating);
    status["active"] = json!(active);
    status["ready"] = json!(ready);
    status["terminating"] = json!(terminating);
    // The status as it was, to compare the counters with.
    let uids_with_finalizer: HashSet<String> = plan
        .pods
        .iter()
        .filter(|p| has_finalizer(p) && !plan.expected_rm.contains(uid(p)))
        .map(|p| uid(p).to_string())
        .collect();
    if clean_uncounted(&mut status, &uids_with_finalizer) {
        needs_flush = true;
    }
    let in_list = |status: &Value, k: &str, u: &str| {
        status["uncountedTerminatedPods"][k]
            .as_array()
            .is_some_and(|a| a.iter().any(|x| x == u))
    };
    let mut pods_sorted: Vec<&Value> = plan.pods.iter().collect();
    if is_indexed(job) {
        pods_sorted.sort_by_key(|p| completion_index(p).unwrap_or(i64::MAX));
    }
    let mut remove: Vec<(String, String)> = Vec::new();
    let mut new_succeeded_indexes: Vec<i64> = Vec::new();
    let mut reached_max = false;
    let job_finishing = finished.is_some();
    let failing = finished
        .as_ref()
        .is_some_and(|f| f.type_ != "SuccessCriteriaMet");
    for pod in pods_sorted {
        let puid = uid(pod).to_string();
        if !has_finalizer(pod) || plan.expected_rm.contains(&puid) {
            continue;
        }
        let considered_failed = is_pod_failed(pod, job);
        let can_remove = !job["metadata"]["deletionTimestamp"].is_null()
            || job_finishing
            || phase(pod) == "Succeeded"
            || considered_failed;
        if !can_remove {
            continue;
        }
        remove.push((name(pod).to_string(), puid.clone()));
        if phase(pod) == "Succeeded" && !in_list(&status, "failed", &puid) {
            if is_indexed(job) {
                if let Some(ix) = valid_index(job, pod)
                    && !plan.prev_succeeded_indexes.contains(&ix)
                {
                    new_succeeded_indexes.push(ix);
                    needs_flush = true;
                }
            } else if !in_list(&status, "succeeded", &puid) {
                push_uncounted(&mut status, "succeeded", &puid);
                needs_flush = true;
            }
        } else if considered_failed || failing {
            let index_ok = !is_indexed(job) || valid_index(job, pod).is_some();
            if !in_list(&status, "failed", &puid) && index_ok && match_failure_policy(job, pod).1 {
                push_uncounted(&mut status, "failed", &puid);
                needs_flush = true;
            }
        }
        let unc = status["uncountedTerminatedPods"]["succeeded"]
            .as_array()
            .map_or(0, Vec::len)
            + status["uncountedTerminatedPods"]["failed"]
                .as_array()
                .map_or(0, Vec::len);
        if new_succeeded_indexes.len() + unc >= MAX_UNCOUNTED_PODS {
            reached_max = true;
            break;
        }
    }
    if is_indexed(job) {
        let mut all = plan.prev_succeeded_indexes.clone();
        all.extend(new_succeeded_indexes.iter().copied());
        let text = format_indexes(&all);
        if status["completedIndexes"].as_str().unwrap_or_default() != text {
            needs_flush = true;
        }
        status["succeeded"] = json!(all.len());
        status["completedIndexes"] = json!(text);
    }
    if let Some(f) = finished.clone() {
        if f.type_ == "FailureTarget" {
            push_condition(
                &mut status,
                new_condition("FailureTarget", "True", &f.reason, &f.message, plan.now),
            );
            needs_flush = true;
            finished = Some(Finished::new("Failed", &f.reason, &f.message));
        } else if f.type_ == "SuccessCriteriaMet" {
            if condition(&json!({"status": status.clone()}), "SuccessCriteriaMet").is_none() {
                push_condition(
                    &mut status,
                    new_condition(
                        "SuccessCriteriaMet",
                        "True",
                        &f.reason,
                        &f.message,
                        plan.now,
                    ),
                );
                needs_flush = true;
            }
            finished = Some(Finished::new("Complete", &f.reason, &f.message));
        }
    }
    Tracking {
        status,
        flush: needs_flush,
        remove_finalizers: remove,
        uids_with_finalizer,
        finished,
        reached_max,
        terminating,
    }
}

fn push_uncounted(status: &mut Value, k: &str, u: &str) {
    if !status["uncountedTerminatedPods"][k].is_array() {
        status["uncountedTerminatedPods"][k] = json!([]);
    }
    if let Some(a) = status["uncountedTerminatedPods"][k].as_array_mut() {
        a.push(json!(u));
    }
}

fn push_condition(status: &mut Value, c: Value) {
    if !status["conditions"].is_array() {
        status["conditions"] = json!([]);
    }
    if let Some(a) = status["conditions"].as_array_mut() {
        a.push(c);
    }
}

/// `cleanUncountedPodsWithoutFinalizers`: the uncounted pods whose finalizer is gone
/// move into the counters. Whether anything changed.
fn clean_uncounted(status: &mut Value, with_finalizer: &HashSet<String>) -> bool {
    let mut changed = false;
    for (k, counter) in [("succeeded", "succeeded"), ("failed", "failed")] {
        let list: Vec<Value> = status["uncountedTerminatedPods"][k]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let keep: Vec<Value> = list
            .iter()
            .filter(|u| u.as_str().is_some_and(|u| with_finalizer.contains(u)))
            .cloned()
            .collect();
        if keep.len() != list.len() {
            changed = true;
            let moved = i64::try_from(list.len() - keep.len()).unwrap_or(0);
            status[counter] = json!(status[counter].as_i64().unwrap_or(0) + moved);
            status["uncountedTerminatedPods"][k] = json!(keep);
        }
    }
    changed
}

/// Step 3's result: the status to write (if any) and the finished condition to report.
#[derive(Clone, Debug, PartialEq)]
pub struct Final {
    pub status: Option<Value>,
    /// The Job finished now: its condition (for the events).
    pub finished: Option<Finished>,
}

/// Step 3 of a sync: `removed` are the pods whose finalizer is gone now (or that are
/// gone); `rm_failed` when some removal failed. Moves them into the counters and, when
/// nothing is uncounted or terminating any more, adds `Complete` or `Failed`.
pub fn finish(plan: &Plan, t: &Tracking, removed: &HashSet<String>, rm_failed: bool) -> Final {
    let mut status = t.status.clone();
    let mut with_finalizer = t.uids_with_finalizer.clone();
    with_finalizer.retain(|u| !removed.contains(u));
    let mut needs_flush = clean_uncounted(&mut status, &with_finalizer);
    if rm_failed {
        return Final {
            status: needs_flush.then_some(status),
            finished: None,
        };
    }
    let mut finished_now = None;
    if !t.reached_max
        && let Some(f) = &t.finished
    {
        let uncounted = status["uncountedTerminatedPods"]["succeeded"]
            .as_array()
            .map_or(0, Vec::len)
            + status["uncountedTerminatedPods"]["failed"]
                .as_array()
                .map_or(0, Vec::len);
        if uncounted == 0 && t.terminating == 0 {
            ensure_condition(
                &mut status,
                &f.type_,
                "True",
                &f.reason,
                &f.message,
                plan.now,
            );
            if f.type_ == "Complete" {
                status["completionTime"] = json!(rfc3339(plan.now));
            }
            needs_flush = true;
            finished_now = Some(f.clone());
        }
    }
    Final {
        status: needs_flush.then_some(status),
        finished: finished_now,
    }
}

/// An orphan pod whose tracking finalizer must go (`syncOrphanPod`): it has the
/// finalizer, and no controller, or a controller Job that is gone or finished.
/// `job_of(uid)` looks the controller up in the cache.
pub fn orphan_needs_cleanup(pod: &Value, job_of: impl Fn(&str) -> Option<Value>) -> bool {
    if !has_finalizer(pod) {
        return false;
    }
    match pods::controller_of(pod) {
        None => true,
        Some(r) if r["kind"] != "Job" || r["apiVersion"] != "batch/v1" => false,
        Some(r) => match job_of(s(r, &["uid"])) {
            None => true,
            Some(job) => !managed_elsewhere(&job) && finished_condition(&job).is_some(),
        },
    }
}

/// The loop's shared state.
struct Shared {
    jobs: Store<Job>,
    pods: Store<CachedPod>,
    pod_informer: Arc<Informer<CachedPod>>,
    queue: WorkQueue<String>,
    orphans: WorkQueue<String>,
    expectations: Mutex<Expectations>,
    /// Pods (uids) whose finalizer removal this controller waits to see, by Job key.
    finalizers: Mutex<HashMap<String, HashSet<String>>>,
    backoff: Mutex<HashMap<String, BackoffRecord>>,
    writer: Client,
    events: Recorder,
}

impl Shared {
    /// Queues every cached Job.
    fn enqueue_all(&self) {
        for j in self.jobs.state() {
            self.queue.add(key_of(
                j.metadata.namespace.as_deref().unwrap_or_default(),
                j.metadata.name.as_deref().unwrap_or_default(),
            ));
        }
    }

    fn job_by_uid(&self, ns: &str, job_uid: &str) -> Option<Value> {
        self.jobs
            .state()
            .iter()
            .find(|j| {
                j.metadata.namespace.as_deref() == Some(ns)
                    && j.metadata.uid.as_deref() == Some(job_uid)
            })
            .and_then(|j| serde_json::to_value(j.as_ref()).ok())
    }

    /// The Jobs of `ns` whose selector matches an orphan pod.
    fn matching_jobs(&self, pod: &Value, ns: &str) -> Vec<String> {
        self.jobs
            .state()
            .iter()
            .filter(|j| j.metadata.namespace.as_deref() == Some(ns))
            .filter_map(|j| serde_json::to_value(j.as_ref()).ok())
            .filter(|j| {
                api::selector::LabelSelector::from_label_selector(&j["spec"]["selector"])
                    .is_ok_and(|sel| !sel.is_empty() && sel.matches_object(pod))
            })
            .map(|j| key_of(ns, name(&j)))
            .collect()
    }
}

/// Runs the Job controller with `workers` workers until the process ends.
pub async fn run_jobs(
    jobs: Arc<Informer<Job>>,
    pod_informer: Arc<Informer<CachedPod>>,
    writer: Client,
    workers: usize,
) {
    let mut job_events = jobs.subscribe();
    let mut pod_events = pod_informer.subscribe_tracked();
    let shared = Arc::new(Shared {
        jobs: jobs.store.clone(),
        pods: pod_informer.store.clone(),
        pod_informer: Arc::clone(&pod_informer),
        queue: WorkQueue::named("job"),
        orphans: WorkQueue::named("job_orphan_pod"),
        expectations: Mutex::new(Expectations::default()),
        finalizers: Mutex::new(HashMap::new()),
        backoff: Mutex::new(HashMap::new()),
        events: crate::run::recorder(&writer, "job-controller"),
        writer,
    });
    let sh = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut job_events).await {
                Next::Apply(j) => {
                    let key = key_of(
                        j.metadata.namespace.as_deref().unwrap_or_default(),
                        j.metadata.name.as_deref().unwrap_or_default(),
                    );
                    sh.queue.add(key);
                }
                Next::Delete(j) => {
                    let ns = j.metadata.namespace.clone().unwrap_or_default();
                    let key = key_of(&ns, j.metadata.name.as_deref().unwrap_or_default());
                    lock(&sh.expectations).delete(&key);
                    lock(&sh.finalizers).remove(&key);
                    lock(&sh.backoff).remove(&key);
                    // Its pods' finalizers go (they are orphans now).
                    let juid = j.metadata.uid.clone().unwrap_or_default();
                    for p in sh.pod_informer.by_index("controller", &juid) {
                        let owned = p
                            .metadata
                            .owner_references
                            .iter()
                            .flatten()
                            .any(|o| o.controller == Some(true) && o.uid == juid);
                        if owned {
                            sh.orphans
                                .add(key_of(&ns, p.metadata.name.as_deref().unwrap_or_default()));
                        }
                    }
                    sh.queue.add(key);
                }
                Next::Other => {}
                Next::Resync => sh.enqueue_all(),
                Next::Closed => break,
            }
        }
    });
    let sh = Arc::clone(&shared);
    tokio::spawn(async move {
        // A relist's unseen changes are replayed after its resync, for the expectations
        // and the finalizer tracking.
        while let Some(Observed {
            obj: pod,
            deleted,
            first: first_seen,
        }) = pod_events.next(|| sh.enqueue_all()).await
        {
            let ns = pod.metadata.namespace.clone().unwrap_or_default();
            let pname = pod.metadata.name.clone().unwrap_or_default();
            let puid = pod.metadata.uid.clone().unwrap_or_default();
            let pod_key = key_of(&ns, &pname);
            // A pod another kind of controller owns concerns no Job (upstream's
            // resolveControllerRef), unless it carries the Job tracking finalizer.
            let tracked = tracked_by_job(&pod.metadata);
            if !tracked && pods::controller_ref(&pod.metadata).is_some_and(|o| o.kind != "Job") {
                continue;
            }
            let Ok(value) = serde_json::to_value(pod.as_ref()) else {
                continue;
            };
            let controller = pods::controller_of(&value).cloned();
            let job = controller
                .as_ref()
                .filter(|r| r["kind"] == "Job")
                .and_then(|r| sh.job_by_uid(&ns, s(r, &["uid"])));
            if !deleted && orphan_needs_cleanup(&value, |u| sh.job_by_uid(&ns, u)) {
                sh.orphans.add(pod_key.clone());
            }
            let Some(job) = job else {
                if controller.is_none() && !deleted {
                    for k in sh.matching_jobs(&value, &ns) {
                        sh.queue.add(k);
                    }
                }
                continue;
            };
            let key = key_of(&ns, name(&job));
            {
                let mut exp = lock(&sh.expectations);
                if deleted || pod.metadata.deletion_timestamp.is_some() {
                    exp.deletion_observed(&key, &pod_key);
                }
                if !deleted && first_seen {
                    exp.creation_observed(&key);
                }
            }
            if (deleted || !tracked)
                && let Some(set) = lock(&sh.finalizers).get_mut(&key)
            {
                set.remove(&puid);
            }
            sh.queue.add(key);
        }
    });
    jobs.synced().await;
    pod_informer.synced().await;
    shared.enqueue_all();
    // Only pods still carrying the tracking finalizer can need it removed.
    let tracked = shared
        .pods
        .state()
        .into_iter()
        .filter(|p| tracked_by_job(&p.metadata));
    for p in tracked {
        if let Ok(v) = serde_json::to_value(p.as_ref()) {
            let ns = p.metadata.namespace.clone().unwrap_or_default();
            if orphan_needs_cleanup(&v, |u| shared.job_by_uid(&ns, u)) {
                shared.orphans.add(key_of(&ns, name(&v)));
            }
        }
    }
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "job",
        |s, key| async move { sync_job(&s, &key).await },
    );
    crate::run::spawn_workers(
        &shared,
        &shared.orphans,
        1,
        "job-orphan-pod",
        |s, key| async move { sync_orphan_pod(&s, &key).await },
    );
}

fn remove_finalizer_patch() -> Value {
    json!({"metadata": {"$deleteFromPrimitiveList/finalizers": [TRACKING_FINALIZER]}})
}

async fn sync_orphan_pod(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, pname) = key.split_once('/').unwrap_or(("", key));
    let Some(pod) = s.pods.get(&ObjectRef::new(pname).within(ns)) else {
        return Ok(());
    };
    let Ok(pod) = serde_json::to_value(pod.as_ref()) else {
        return Ok(());
    };
    if !orphan_needs_cleanup(&pod, |u| s.job_by_uid(ns, u)) {
        return Ok(());
    }
    let api: Api<Pod> = Api::namespaced(s.writer.clone(), ns);
    match api
        .patch(
            pname,
            &PatchParams::default(),
            &Patch::Strategic(remove_finalizer_patch()),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e),
    }
}

/// Writes the Job's status (PUT with its resourceVersion, as upstream's `UpdateStatus`),
/// returning the Job as stored.
async fn write_status(api: &Api<Job>, job: &Value, status: &Value) -> Result<Value, kube::Error> {
    let mut body = job.clone();
    body["status"] = status.clone();
    let typed: Job = serde_json::from_value(body).map_err(kube::Error::SerdeError)?;
    let stored = api
        .replace_status(name(job), &PostParams::default(), &typed)
        .await?;
    serde_json::to_value(&stored).map_err(kube::Error::SerdeError)
}

/// One `syncJob`.
async fn sync_job(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, jname) = key.split_once('/').unwrap_or(("", key));
    let Some(job) = s.jobs.get(&ObjectRef::new(jname).within(ns)) else {
        lock(&s.expectations).delete(key);
        lock(&s.finalizers).remove(key);
        lock(&s.backoff).remove(key);
        return Ok(());
    };
    let Ok(job) = serde_json::to_value(job.as_ref()) else {
        return Ok(());
    };
    if finished_condition(&job).is_some() {
        lock(&s.backoff).remove(key);
        return Ok(());
    }
    let satisfied = lock(&s.expectations).satisfied(key, Instant::now());
    // Only this Job's pods and the orphans it might adopt are looked at closely.
    let job_uid = job["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let pods: Vec<Value> = s
        .pods
        .state()
        .iter()
        .filter(|p| claimable(&p.metadata, ns, &job_uid))
        .filter_map(|p| serde_json::to_value(p.as_ref()).ok())
        .collect();
    let expected_rm = lock(&s.finalizers).get(key).cloned().unwrap_or_default();
    let backoff = lock(&s.backoff).get(key).cloned().unwrap_or_default();
    let now = now_ms();
    let Some(plan) = plan(&Input {
        job: &job,
        pods: &pods,
        expectations_satisfied: satisfied,
        expected_rm_finalizers: &expected_rm,
        backoff: &backoff,
        now_ms: now,
    }) else {
        return Ok(());
    };
    let job_ref = crate::run::reference(&job, "Job", "batch/v1");
    let pods_api: Api<Pod> = Api::namespaced(s.writer.clone(), ns);
    adopt_and_release(&pods_api, &job, &pods, &plan).await;
    for (t, reason, msg) in &plan.events {
        s.events.event(&job_ref, *t, reason, msg);
    }
    let mut outcome = Outcome::default();
    let mut manage_error: Option<kube::Error> = None;
    match &plan.manage {
        Manage::Nothing => {}
        Manage::Create(templates) => {
            let n = templates.len();
            lock(&s.expectations).expect_creations(key, n, Instant::now());
            let mut queue = templates.iter();
            let post = PostParams::default();
            for batch in crate::replicaset::slow_start_batches(n, 1) {
                let chunk: Vec<Pod> = queue
                    .by_ref()
                    .take(batch)
                    .filter_map(|t| serde_json::from_value(t.clone()).ok())
                    .collect();
                let results =
                    futures::future::join_all(chunk.iter().map(|p| pods_api.create(&post, p)))
                        .await;
                let mut failed = 0;
                for r in results {
                    match r {
                        Ok(p) => {
                            outcome.created += 1;
                            s.events.event(
                                &job_ref,
                                EventType::Normal,
                                "SuccessfulCreate",
                                &format!(
                                    "Created pod: {}",
                                    p.metadata.name.as_deref().unwrap_or_default()
                                ),
                            );
                        }
                        Err(e) => {
                            failed += 1;
                            let msg = api_message(&e);
                            s.events.event(
                                &job_ref,
                                EventType::Warning,
                                "FailedCreate",
                                &format!("Error creating: {msg}"),
                            );
                            manage_error.get_or_insert(e);
                        }
                    }
                }
                if failed > 0 {
                    // The failed and the skipped creations will never be seen.
                    lock(&s.expectations).lower_creations(key, n - outcome.created);
                    break;
                }
            }
        }
        Manage::Delete {
            pods: names,
            remove_finalizer,
        } => {
            let keys: Vec<String> = names.iter().map(|n| key_of(ns, n)).collect();
            if *remove_finalizer {
                lock(&s.expectations).expect_deletions(key, &keys, Instant::now());
            }
            let dp = DeleteParams::default();
            let dp = &dp;
            let results = futures::future::join_all(names.iter().map(|n| {
                let api = pods_api.clone();
                async move {
                    if *remove_finalizer {
                        match api
                            .patch(
                                n,
                                &PatchParams::default(),
                                &Patch::Strategic(remove_finalizer_patch()),
                            )
                            .await
                        {
                            Ok(_) => {}
                            Err(kube::Error::Api(e)) if e.code == 404 => {}
                            Err(e) => return Err(e),
                        }
                    }
                    match api.delete(n, dp).await {
                        Ok(_) => Ok(true),
                        Err(kube::Error::Api(e)) if e.code == 404 => Ok(false),
                        Err(e) => Err(e),
                    }
                }
            }))
            .await;
            for (n, r) in names.iter().zip(results) {
                let ready = pods
                    .iter()
                    .find(|p| name(p) == n.as_str())
                    .is_some_and(pods::is_ready);
                match r {
                    Ok(existed) => {
                        outcome.deleted += 1;
                        if ready {
                            outcome.deleted_ready += 1;
                        }
                        if existed {
                            s.events.event(
                                &job_ref,
                                EventType::Normal,
                                "SuccessfulDelete",
                                &format!("Deleted pod: {n}"),
                            );
                        } else {
                            lock(&s.expectations).deletion_observed(key, &key_of(ns, n));
                        }
                    }
                    Err(e) => {
                        lock(&s.expectations).deletion_observed(key, &key_of(ns, n));
                        s.events.event(
                            &job_ref,
                            EventType::Warning,
                            "FailedDelete",
                            &format!("Error deleting: {e}"),
                        );
                        manage_error.get_or_insert(e);
                    }
                }
            }
        }
    }
    let tracking = track(&plan, outcome);
    let jobs_api: Api<Job> = Api::namespaced(s.writer.clone(), ns);
    let mut current = job.clone();
    if tracking.flush {
        current = write_status(&jobs_api, &current, &tracking.status).await?;
        lock(&s.backoff).insert(key.to_string(), plan.new_backoff.clone());
    }
    let mut removed: HashSet<String> = HashSet::new();
    let mut rm_failed = false;
    if !tracking.remove_finalizers.is_empty() {
        {
            let mut f = lock(&s.finalizers);
            let set = f.entry(key.to_string()).or_default();
            for (_, u) in &tracking.remove_finalizers {
                set.insert(u.clone());
            }
        }
        let patch = Patch::Strategic(remove_finalizer_patch());
        let pp = PatchParams::default();
        let results = futures::future::join_all(
            tracking
                .remove_finalizers
                .iter()
                .map(|(n, _)| pods_api.patch(n, &pp, &patch)),
        )
        .await;
        for ((n, u), r) in tracking.remove_finalizers.iter().zip(results) {
            match r {
                Ok(_) => {
                    removed.insert(u.clone());
                }
                Err(kube::Error::Api(e)) if e.code == 404 => {
                    removed.insert(u.clone());
                    if let Some(set) = lock(&s.finalizers).get_mut(key) {
                        set.remove(u);
                    }
                }
                Err(e) => {
                    tracing::info!(pod = n, error = %e, "removing the tracking finalizer failed");
                    rm_failed = true;
                    if let Some(set) = lock(&s.finalizers).get_mut(key) {
                        set.remove(u);
                    }
                }
            }
        }
    }
    let fin = finish(&plan, &tracking, &removed, rm_failed);
    if let Some(status) = &fin.status {
        current = write_status(&jobs_api, &current, status).await?;
    }
    if let Some(f) = &fin.finished {
        if f.type_ == "Complete" {
            let succeeded = current["status"]["succeeded"].as_i64().unwrap_or(0);
            if completions(&current).is_some_and(|c| succeeded > c) {
                s.events.event(
                    &job_ref,
                    EventType::Warning,
                    "TooManySucceededPods",
                    "Too many succeeded pods running after completion count reached",
                );
            }
            s.events
                .event(&job_ref, EventType::Normal, "Completed", "Job completed");
        } else {
            s.events
                .event(&job_ref, EventType::Warning, &f.reason, &f.message);
        }
    }
    if let Some(ms) = plan.requeue_after_ms {
        s.queue.add_after(
            key.to_string(),
            Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(0)),
        );
    }
    if rm_failed {
        s.queue.add_after(key.to_string(), Duration::from_secs(1));
    }
    match manage_error {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

/// Adopts the orphans `plan` claimed (controller reference and tracking finalizer) and
/// releases the pods that no longer match (both, as upstream's `PodControllerRefManager`
/// with the finalizer).
async fn adopt_and_release(api: &Api<Pod>, job: &Value, pods: &[Value], plan: &Plan) {
    let changes = plan
        .adopt
        .iter()
        .map(|n| (n, true))
        .chain(plan.release.iter().map(|n| (n, false)));
    for (pname, adopt) in changes {
        let Some(pod) = pods.iter().find(|p| name(p) == pname.as_str()) else {
            continue;
        };
        let mut refs: Vec<Value> = pod["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|o| o["uid"] != uid(job))
            .cloned()
            .collect();
        let mut finalizers: Vec<Value> = pod["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|f| *f != TRACKING_FINALIZER)
            .cloned()
            .collect();
        if adopt {
            refs.push(
                json!({"apiVersion": "batch/v1", "kind": "Job", "name": name(job),
                "uid": uid(job), "controller": true, "blockOwnerDeletion": true}),
            );
            finalizers.push(json!(TRACKING_FINALIZER));
        }
        let patch = json!({"metadata": {"ownerReferences": refs, "finalizers": finalizers,
            "uid": uid(pod)}});
        if let Err(e) = api
            .patch(pname, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::info!(pod = %pname, adopt, error = %e, "adoption or release failed");
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const T0: i64 = 1_700_000_000_000;

    fn job(spec: Value) -> Value {
        let mut spec = spec;
        spec["selector"] = json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}});
        spec["template"] = json!({"metadata": {"labels": {
            "batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1",
            "batch.kubernetes.io/job-name": "j", "job-name": "j"}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}});
        json!({"metadata": {"name": "j", "namespace": "d", "uid": "u1", "resourceVersion": "1"},
            "spec": spec, "status": {}})
    }

    fn pod(name: &str, phase: &str, index: Option<i64>) -> Value {
        let mut p = json!({"metadata": {"name": name, "namespace": "d", "uid": format!("uid-{name}"),
            "labels": {"batch.kubernetes.io/controller-uid": "u1"},
            "finalizers": [TRACKING_FINALIZER],
            "creationTimestamp": rfc3339(T0),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "j", "uid": "u1", "controller": true}]},
            "spec": {"nodeName": "n1"},
            "status": {"phase": phase}});
        if let Some(i) = index {
            p["metadata"]["annotations"] = json!({COMPLETION_INDEX: i.to_string()});
        }
        p
    }

    fn exited(mut p: Value, code: i64, at: i64) -> Value {
        p["status"]["containerStatuses"] = json!([{"name": "c", "state": {"terminated": {
            "exitCode": code, "finishedAt": rfc3339(at)}}}]);
        p
    }

    struct Run {
        plan: Plan,
        tracking: Tracking,
        fin: Final,
    }

    /// One sync where every action succeeds.
    fn sync(job: &Value, pods: &[Value], backoff: &BackoffRecord, now: i64) -> Option<Run> {
        let none = HashSet::new();
        let plan = plan(&Input {
            job,
            pods,
            expectations_satisfied: true,
            expected_rm_finalizers: &none,
            backoff,
            now_ms: now,
        })?;
        let outcome = match &plan.manage {
            Manage::Nothing => Outcome::default(),
            Manage::Create(t) => Outcome {
                created: t.len(),
                ..Default::default()
            },
            Manage::Delete { pods: names, .. } => Outcome {
                deleted: names.len(),
                deleted_ready: 0,
                created: 0,
            },
        };
        let tracking = track(&plan, outcome);
        let removed: HashSet<String> = tracking
            .remove_finalizers
            .iter()
            .map(|(_, u)| u.clone())
            .collect();
        let fin = finish(&plan, &tracking, &removed, false);
        Some(Run {
            plan,
            tracking,
            fin,
        })
    }

    fn final_status(r: &Run) -> Value {
        r.fin
            .status
            .clone()
            .unwrap_or_else(|| r.tracking.status.clone())
    }

    fn cond<'a>(status: &'a Value, t: &str) -> Option<&'a Value> {
        status["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == t)
    }

    #[test]
    fn new_job_creates_parallelism_pods_from_the_template() {
        let j = job(json!({"parallelism": 2, "completions": 5}));
        let r = sync(&j, &[], &BackoffRecord::default(), T0).unwrap();
        let Manage::Create(pods) = &r.plan.manage else {
            panic!("{:?}", r.plan.manage)
        };
        assert_eq!(pods.len(), 2);
        let m = &pods[0]["metadata"];
        assert_eq!(m["generateName"], "j-");
        assert_eq!(m["finalizers"], json!([TRACKING_FINALIZER]));
        assert_eq!(m["labels"]["batch.kubernetes.io/job-name"], "j");
        assert_eq!(m["ownerReferences"][0]["kind"], "Job");
        assert_eq!(m["ownerReferences"][0]["controller"], true);
        assert_eq!(m["ownerReferences"][0]["blockOwnerDeletion"], true);
        let st = &r.tracking.status;
        assert_eq!(st["active"], 2);
        assert_eq!(st["startTime"], rfc3339(T0));
        assert!(r.tracking.flush);
        // Completions cap the pods: one left to succeed.
        let mut j = job(json!({"parallelism": 4, "completions": 3}));
        j["status"]["succeeded"] = json!(2);
        let r = sync(&j, &[], &BackoffRecord::default(), T0).unwrap();
        let Manage::Create(pods) = &r.plan.manage else {
            panic!()
        };
        assert_eq!(pods.len(), 1);
    }

    #[test]
    fn lagging_cache_never_double_creates() {
        let j = job(json!({"parallelism": 2}));
        let none = HashSet::new();
        let p = plan(&Input {
            job: &j,
            pods: &[],
            expectations_satisfied: false,
            expected_rm_finalizers: &none,
            backoff: &BackoffRecord::default(),
            now_ms: T0,
        })
        .unwrap();
        assert_eq!(p.manage, Manage::Nothing);
    }

    #[test]
    fn success_is_counted_through_uncounted_then_complete() {
        let j = job(json!({"parallelism": 1, "completions": 1}));
        let pods = vec![exited(pod("a", "Succeeded", None), 0, T0)];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0 + 1000).unwrap();
        // First flush: the pod's uid is uncounted, SuccessCriteriaMet is there.
        assert!(r.tracking.flush);
        assert_eq!(
            r.tracking.status["uncountedTerminatedPods"]["succeeded"],
            json!(["uid-a"])
        );
        let scm = cond(&r.tracking.status, "SuccessCriteriaMet").unwrap();
        assert_eq!(scm["reason"], "CompletionsReached");
        assert_eq!(scm["message"], "Reached expected number of succeeded pods");
        assert_eq!(
            r.tracking.remove_finalizers,
            vec![("a".to_string(), "uid-a".to_string())]
        );
        // Then the counter, Complete and the completion time.
        let st = final_status(&r);
        assert_eq!(st["succeeded"], 1);
        assert_eq!(st["uncountedTerminatedPods"]["succeeded"], json!([]));
        assert_eq!(cond(&st, "Complete").unwrap()["status"], "True");
        assert_eq!(st["completionTime"], rfc3339(T0 + 1000));
        assert_eq!(r.fin.finished.as_ref().unwrap().type_, "Complete");
        // A finished Job is left alone.
        let mut done = j.clone();
        done["status"] = st;
        assert!(sync(&done, &pods, &BackoffRecord::default(), T0).is_none());
    }

    #[test]
    fn without_completions_one_success_ends_once_others_finish() {
        let j = job(json!({"parallelism": 2}));
        let pods = vec![pod("a", "Succeeded", None), pod("b", "Running", None)];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0).unwrap();
        assert_eq!(
            r.plan.manage,
            Manage::Nothing,
            "the running pod is left running"
        );
        assert!(r.fin.finished.is_none());
        assert_eq!(final_status(&r)["succeeded"], 1);
    }

    #[test]
    fn backoff_limit_fails_the_job_after_pods_terminate() {
        let j = job(json!({"parallelism": 2, "backoffLimit": 1}));
        let pods = vec![
            exited(pod("a", "Failed", None), 1, T0),
            exited(pod("b", "Failed", None), 1, T0),
            pod("c", "Running", None),
        ];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0 + 1000).unwrap();
        assert_eq!(
            r.plan.manage,
            Manage::Delete {
                pods: vec!["c".into()],
                remove_finalizer: false
            }
        );
        let ft = cond(&r.tracking.status, "FailureTarget").unwrap();
        assert_eq!(ft["reason"], "BackoffLimitExceeded");
        assert_eq!(ft["message"], "Job has reached the specified backoff limit");
        // The deleted pod is terminating: no Failed yet.
        assert!(r.fin.finished.is_none());
        let st = final_status(&r);
        assert!(cond(&st, "Failed").is_none());
        assert_eq!(st["terminating"], 1);
        assert_eq!(
            st["failed"], 3,
            "every pod of a failing Job counts as failed"
        );
        // Next sync: nothing terminating any more → Failed.
        let mut j2 = j.clone();
        j2["status"] = st;
        let r = sync(&j2, &[], &BackoffRecord::default(), T0 + 2000).unwrap();
        let st = final_status(&r);
        let f = cond(&st, "Failed").unwrap();
        assert_eq!(f["reason"], "BackoffLimitExceeded");
        assert_eq!(
            r.fin.finished.as_ref().unwrap().reason,
            "BackoffLimitExceeded"
        );
        assert!(st["completionTime"].is_null());
    }

    #[test]
    fn backoff_between_recreations() {
        let b = BackoffRecord::default();
        let f1 = exited(pod("a", "Failed", None), 1, T0);
        let rec = b.next(&[], &[&f1]);
        assert_eq!(rec.failures_after_last_success, 1);
        assert_eq!(rec.last_failure_ms, Some(T0));
        assert_eq!(rec.remaining_ms(T0 + 4000), 6000);
        assert_eq!(rec.remaining_ms(T0 + 11_000), 0);
        let two = BackoffRecord {
            failures_after_last_success: 2,
            last_failure_ms: Some(T0),
        };
        assert_eq!(two.remaining_ms(T0), 20_000);
        let many = BackoffRecord {
            failures_after_last_success: 10,
            last_failure_ms: Some(T0),
        };
        assert_eq!(many.remaining_ms(T0), MAX_BACKOFF_MS);
        // A success after the failures resets.
        let ok = exited(pod("b", "Succeeded", None), 0, T0 + 5);
        assert_eq!(rec.next(&[&ok], &[&f1]).failures_after_last_success, 0);
        // The replacement waits for the back-off.
        let j = job(json!({"parallelism": 1, "backoffLimit": 6}));
        let r = sync(
            &j,
            std::slice::from_ref(&f1),
            &BackoffRecord::default(),
            T0 + 3000,
        )
        .unwrap();
        assert_eq!(r.plan.manage, Manage::Nothing);
        assert_eq!(r.plan.requeue_after_ms, Some(7000));
        assert_eq!(r.plan.new_backoff, rec);
        // Once counted (no finalizer, failed=1) and the time has passed: re-created.
        let mut j2 = j.clone();
        j2["status"]["failed"] = json!(1);
        let mut counted = f1.clone();
        counted["metadata"]["finalizers"] = Value::Null;
        let r = sync(&j2, &[counted], &rec, T0 + 10_001).unwrap();
        assert!(matches!(r.plan.manage, Manage::Create(ref t) if t.len() == 1));
    }

    #[test]
    fn active_deadline() {
        let mut j = job(json!({"parallelism": 1, "activeDeadlineSeconds": 10}));
        j["status"]["startTime"] = json!(rfc3339(T0));
        let pods = vec![pod("a", "Running", None)];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0 + 4000).unwrap();
        assert_eq!(r.plan.requeue_after_ms, Some(6000));
        let r = sync(&j, &pods, &BackoffRecord::default(), T0 + 10_000).unwrap();
        assert_eq!(
            r.plan.manage,
            Manage::Delete {
                pods: vec!["a".into()],
                remove_finalizer: false
            }
        );
        let ft = cond(&r.tracking.status, "FailureTarget").unwrap();
        assert_eq!(ft["reason"], "DeadlineExceeded");
        assert_eq!(
            ft["message"],
            "Job was active longer than specified deadline"
        );
    }

    #[test]
    fn suspend_deletes_active_pods_and_resume_resets_start_time() {
        let mut j = job(json!({"parallelism": 2, "suspend": true}));
        j["status"]["startTime"] = json!(rfc3339(T0));
        let pods = vec![pod("a", "Running", None), pod("b", "Pending", None)];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0 + 1000).unwrap();
        let Manage::Delete {
            pods: names,
            remove_finalizer,
        } = &r.plan.manage
        else {
            panic!()
        };
        assert_eq!(names.len(), 2);
        assert!(remove_finalizer);
        let s = cond(&r.tracking.status, "Suspended").unwrap();
        assert_eq!(
            (s["status"].as_str(), s["reason"].as_str()),
            (Some("True"), Some("JobSuspended"))
        );
        assert_eq!(r.plan.events[0].1, "Suspended");
        // Resumed: condition False, new start time.
        let mut resumed = j.clone();
        resumed["spec"]["suspend"] = json!(false);
        resumed["status"] = r.tracking.status.clone();
        let r = sync(&resumed, &[], &BackoffRecord::default(), T0 + 5000).unwrap();
        let s = cond(&r.tracking.status, "Suspended").unwrap();
        assert_eq!(
            (s["status"].as_str(), s["reason"].as_str()),
            (Some("False"), Some("JobResumed"))
        );
        assert_eq!(r.tracking.status["startTime"], rfc3339(T0 + 5000));
        assert!(matches!(r.plan.manage, Manage::Create(ref t) if t.len() == 2));
        // Created suspended: no start time.
        let j = job(json!({"parallelism": 1, "suspend": true}));
        let r = sync(&j, &[], &BackoffRecord::default(), T0).unwrap();
        assert!(r.tracking.status["startTime"].is_null());
    }

    #[test]
    fn indexed_jobs() {
        let j = job(json!({"parallelism": 3, "completions": 4, "completionMode": "Indexed"}));
        let pods = vec![pod("j-0-x", "Running", Some(0))];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0).unwrap();
        let Manage::Create(ps) = &r.plan.manage else {
            panic!()
        };
        let idx: Vec<&str> = ps
            .iter()
            .map(|p| {
                p["metadata"]["annotations"][COMPLETION_INDEX]
                    .as_str()
                    .unwrap()
            })
            .collect();
        assert_eq!(idx, ["1", "2"]);
        let p = &ps[0];
        assert_eq!(p["metadata"]["generateName"], "j-1-");
        assert_eq!(p["metadata"]["labels"][COMPLETION_INDEX], "1");
        assert_eq!(p["spec"]["hostname"], "j-1");
        assert_eq!(
            p["spec"]["containers"][0]["env"][0],
            json!({"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
                "fieldPath": "metadata.annotations['batch.kubernetes.io/job-completion-index']"}}})
        );
        // Succeeded indexes are recorded as intervals.
        let pods = vec![
            pod("a", "Succeeded", Some(0)),
            pod("b", "Succeeded", Some(1)),
            pod("c", "Succeeded", Some(3)),
            pod("d", "Running", Some(2)),
        ];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0).unwrap();
        let st = final_status(&r);
        assert_eq!(st["completedIndexes"], "0-1,3");
        assert_eq!(st["succeeded"], 3);
        // A duplicated index is removed.
        let pods = vec![pod("a", "Running", Some(1)), pod("b", "Pending", Some(1))];
        let r = sync(&j, &pods, &BackoffRecord::default(), T0).unwrap();
        assert_eq!(
            r.plan.manage,
            Manage::Delete {
                pods: vec!["b".into()],
                remove_finalizer: true
            }
        );
    }

    #[test]
    fn indexes_format_and_parse() {
        let set: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(format_indexes(&set), "0-2,4,6-7");
        assert_eq!(parse_indexes("0-2,4,6-7", 8), set);
        assert_eq!(
            parse_indexes("0-2,4,6-7", 5),
            [0, 1, 2, 4].into_iter().collect()
        );
        assert_eq!(format_indexes(&BTreeSet::new()), "");
    }

    #[test]
    fn pod_failure_policy() {
        let j = job(
            json!({"parallelism": 1, "backoffLimit": 6, "podFailurePolicy": {"rules": [
                {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
                {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}},
                {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [42]}},
            ]}}),
        );
        let failed = exited(pod("a", "Failed", None), 42, T0);
        let (msg, count, action) = match_failure_policy(&j, &failed);
        assert_eq!(
            msg.as_deref(),
            Some(
                "Container c for pod d/a failed with exit code 42 matching FailJob rule at index 1"
            )
        );
        assert!(count);
        assert_eq!(action.as_deref(), Some("FailJob"));
        let r = sync(&j, &[failed], &BackoffRecord::default(), T0).unwrap();
        let ft = cond(&r.tracking.status, "FailureTarget").unwrap();
        assert_eq!(ft["reason"], "PodFailurePolicy");
        // Disrupted pods are ignored: not counted.
        let mut disrupted = exited(pod("b", "Failed", None), 137, T0);
        disrupted["status"]["conditions"] = json!([{"type": "DisruptionTarget", "status": "True"}]);
        assert_eq!(
            match_failure_policy(&j, &disrupted),
            (None, false, Some("Ignore".into()))
        );
        let r = sync(&j, &[disrupted], &BackoffRecord::default(), T0).unwrap();
        assert_eq!(final_status(&r)["failed"].as_i64().unwrap_or(0), 0);
        // Exit code 1: counted.
        let one = exited(pod("c", "Failed", None), 1, T0);
        assert_eq!(
            match_failure_policy(&j, &one),
            (None, true, Some("Count".into()))
        );
        // With a pod failure policy a terminating pod is not failed yet.
        let mut term = pod("d", "Running", None);
        term["metadata"]["deletionTimestamp"] = json!(rfc3339(T0));
        assert!(!is_pod_failed(&term, &j));
        assert!(is_pod_failed(&term, &job(json!({}))));
    }

    #[test]
    fn jobs_managed_elsewhere_are_skipped() {
        let j = job(json!({"parallelism": 1, "managedBy": "example.com/queue"}));
        assert!(sync(&j, &[], &BackoffRecord::default(), T0).is_none());
        let j = job(json!({"parallelism": 1, "managedBy": "kubernetes.io/job-controller"}));
        assert!(sync(&j, &[], &BackoffRecord::default(), T0).is_some());
    }

    #[test]
    fn orphan_pods_lose_their_finalizer() {
        let p = pod("a", "Succeeded", None);
        assert!(orphan_needs_cleanup(&p, |_| None));
        let running = job(json!({}));
        assert!(!orphan_needs_cleanup(&p, |_| Some(running.clone())));
        let mut done = job(json!({}));
        done["status"]["conditions"] = json!([{"type": "Complete", "status": "True"}]);
        assert!(orphan_needs_cleanup(&p, |_| Some(done.clone())));
        let mut other = p.clone();
        other["metadata"]["ownerReferences"][0]["kind"] = json!("ReplicaSet");
        assert!(!orphan_needs_cleanup(&other, |_| None));
        let mut bare = p.clone();
        bare["metadata"]["finalizers"] = Value::Null;
        assert!(!orphan_needs_cleanup(&bare, |_| None));
    }

    #[test]
    fn orphans_matching_the_selector_are_adopted_with_the_finalizer() {
        let j = job(json!({"parallelism": 1}));
        let mut orphan = pod("o", "Running", None);
        orphan["metadata"]["ownerReferences"] = Value::Null;
        orphan["metadata"]["finalizers"] = Value::Null;
        let r = sync(&j, &[orphan], &BackoffRecord::default(), T0).unwrap();
        assert_eq!(r.plan.adopt, vec!["o".to_string()]);
        assert_eq!(r.plan.manage, Manage::Nothing);
        assert_eq!(r.tracking.status["active"], 1);
    }
}
