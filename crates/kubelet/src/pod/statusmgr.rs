//! The status manager (upstream's `status/status_manager.go`): pod workers hand it the
//! statuses they generate; one task writes each pod's status to the API server only when
//! it differs from what was last written (a merge patch of the changed fields with the
//! pod's uid as precondition), retries failures, never moves a terminal phase back, and
//! performs the kubelet's final `DELETE` (grace period 0, uid precondition) once a
//! deleted pod has terminated. It also observes pod start durations.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, PodStatus};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::{Map, Value, json};
use tokio::sync::mpsc;

use super::metrics::Metrics;

/// The fields of `new` that differ from `old`, as a JSON merge patch (removed keys are
/// `null`, lists are replaced whole). `None` when they are equal.
pub fn merge_diff(old: &Value, new: &Value) -> Option<Value> {
    if old == new {
        return None;
    }
    match (old, new) {
        (Value::Object(o), Value::Object(n)) => {
            let mut out = Map::new();
            for (k, nv) in n {
                match o.get(k) {
                    Some(ov) => {
                        if let Some(d) = merge_diff(ov, nv) {
                            out.insert(k.clone(), d);
                        }
                    }
                    None => {
                        if !nv.is_null() {
                            out.insert(k.clone(), nv.clone());
                        }
                    }
                }
            }
            for k in o.keys() {
                if !n.contains_key(k) {
                    out.insert(k.clone(), Value::Null);
                }
            }
            if out.is_empty() {
                None
            } else {
                Some(Value::Object(out))
            }
        }
        _ => Some(new.clone()),
    }
}

fn is_terminal(phase: Option<&str>) -> bool {
    matches!(phase, Some("Succeeded" | "Failed"))
}

/// Whether every regular container of a status is running (the pod has started).
fn all_running(pod: &Pod, status: &PodStatus) -> bool {
    let n = pod.spec.as_ref().map_or(0, |s| s.containers.len());
    let running = status
        .container_statuses
        .iter()
        .flatten()
        .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
        .count();
    n > 0 && running == n
}

enum Command {
    Set {
        pod: Box<Pod>,
        status: Box<PodStatus>,
    },
    Delete {
        uid: String,
    },
    Forget {
        uid: String,
    },
}

/// The handle workers use. Cheap to clone.
#[derive(Clone)]
pub struct StatusManager {
    tx: mpsc::UnboundedSender<Command>,
    /// The latest status set per pod uid (the `old` status of the next generation).
    latest: Arc<Mutex<HashMap<String, PodStatus>>>,
}

impl StatusManager {
    /// The manager and its writer task.
    pub fn start(
        client: Client,
        metrics: Arc<Metrics>,
    ) -> (StatusManager, tokio::task::JoinHandle<()>) {
        let (tx, rx) = mpsc::unbounded_channel();
        let latest = Arc::new(Mutex::new(HashMap::new()));
        let handle = tokio::spawn(writer(client, rx, metrics));
        (StatusManager { tx, latest }, handle)
    }

    /// The status last set for pod `uid`.
    pub fn get(&self, uid: &str) -> Option<PodStatus> {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(uid)
            .cloned()
    }

    /// Records `status` for `pod` (written asynchronously when it changed). A terminal
    /// phase already set is kept.
    pub fn set(&self, pod: &Pod, mut status: PodStatus) {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        {
            let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
            let prev = latest.get(&uid).and_then(|s| s.phase.clone());
            let api = pod.status.as_ref().and_then(|s| s.phase.clone());
            for p in [prev, api] {
                if is_terminal(p.as_deref()) && status.phase != p {
                    status.phase = p;
                }
            }
            latest.insert(uid, status.clone());
        }
        let _ = self.tx.send(Command::Set {
            pod: Box::new(pod.clone()),
            status: Box::new(status),
        });
    }

    /// Deletes the pod object for good once its pending status is written.
    pub fn delete(&self, pod: &Pod) {
        let _ = self.tx.send(Command::Delete {
            uid: pod.metadata.uid.clone().unwrap_or_default(),
        });
    }

    /// Forgets pod `uid` (it is gone from the API).
    pub fn forget(&self, uid: &str) {
        self.latest
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
        let _ = self.tx.send(Command::Forget {
            uid: uid.to_string(),
        });
    }
}

struct Entry {
    pod: Box<Pod>,
    /// What the API server has, as far as we know.
    written: Option<Value>,
    /// What it should have.
    wanted: Value,
    delete: bool,
    started_observed: bool,
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// One write of one pod, carried out while the writer goes on with other pods.
struct Job {
    uid: String,
    namespace: String,
    name: String,
    /// What the API server has, as far as we know.
    base: Value,
    wanted: Value,
    delete: bool,
}

/// What a [`Job`] did.
struct JobResult {
    uid: String,
    wanted: Value,
    /// The status the API server returned after the patch (`Some` when patched).
    written: Option<Option<Value>>,
    /// The pod is gone, or another pod has its name now: nothing more to write.
    gone: bool,
    deleted: bool,
    error: Option<kube::Error>,
}

impl Job {
    fn of(uid: &str, e: &Entry) -> Job {
        Job {
            uid: uid.to_string(),
            namespace: e.pod.metadata.namespace.clone().unwrap_or_default(),
            name: e.pod.metadata.name.clone().unwrap_or_default(),
            base: e.written.clone().unwrap_or_else(|| {
                e.pod
                    .status
                    .as_ref()
                    .and_then(|s| serde_json::to_value(s).ok())
                    .unwrap_or_else(|| json!({}))
            }),
            wanted: e.wanted.clone(),
            delete: e.delete,
        }
    }
}

/// Patches the status when it differs from what the server has, then deletes the pod
/// when asked to (grace period 0, uid precondition).
async fn write(client: Client, job: Job, metrics: Arc<Metrics>) -> JobResult {
    let Job {
        uid,
        namespace: ns,
        name,
        base,
        wanted,
        delete,
    } = job;
    let mut out = JobResult {
        uid,
        wanted,
        written: None,
        gone: false,
        deleted: false,
        error: None,
    };
    let api: Api<Pod> = Api::namespaced(client, &ns);
    if let Some(diff) = merge_diff(&base, &out.wanted) {
        let body = json!({"metadata": {"uid": out.uid}, "status": diff});
        let started = std::time::Instant::now();
        let result = api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await;
        metrics.observe_stage("status_write", started.elapsed());
        match result {
            Ok(p) => {
                out.written = Some(p.status.as_ref().and_then(|s| serde_json::to_value(s).ok()));
                tracing::debug!(pod = %format!("{ns}/{name}"), "status written");
            }
            Err(err) if matches!(api_code(&err), Some(404 | 409)) => {
                out.gone = true;
                return out;
            }
            Err(err) => {
                out.error = Some(err);
                return out;
            }
        }
    }
    if delete {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(out.uid.clone()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => tracing::info!(pod = %format!("{ns}/{name}"), "pod deleted"),
            Err(err) if matches!(api_code(&err), Some(404 | 409)) => {}
            Err(err) => {
                out.error = Some(err);
                return out;
            }
        }
        out.deleted = true;
    }
    out
}

struct Writer {
    entries: HashMap<String, Entry>,
    dirty: Vec<String>,
    metrics: Arc<Metrics>,
}

impl Writer {
    fn handle(&mut self, cmd: Command) {
        match cmd {
            Command::Set { pod, status } => {
                let uid = pod.metadata.uid.clone().unwrap_or_default();
                let wanted = serde_json::to_value(&*status).unwrap_or_else(|_| json!({}));
                let e = self.entries.entry(uid.clone()).or_insert_with(|| Entry {
                    pod: pod.clone(),
                    written: None,
                    wanted: wanted.clone(),
                    delete: false,
                    started_observed: false,
                });
                if !e.started_observed && all_running(&pod, &status) {
                    e.started_observed = true;
                    let already = pod.status.as_ref().is_some_and(|s| all_running(&pod, s));
                    if !already && let Some(created) = pod.metadata.creation_timestamp.as_ref() {
                        let secs = jiff::Timestamp::now()
                            .duration_since(created.0)
                            .as_secs_f64();
                        self.metrics.observe_pod_start(secs.max(0.0));
                    }
                }
                e.pod = pod;
                e.wanted = wanted;
                if !self.dirty.contains(&uid) {
                    self.dirty.push(uid);
                }
            }
            Command::Delete { uid } => {
                if let Some(e) = self.entries.get_mut(&uid) {
                    e.delete = true;
                    if !self.dirty.contains(&uid) {
                        self.dirty.push(uid);
                    }
                }
            }
            Command::Forget { uid } => {
                self.entries.remove(&uid);
                self.dirty.retain(|u| *u != uid);
            }
        }
    }
}

/// Writes of different pods in flight at once (each pod has at most one).
const MAX_IN_FLIGHT: usize = 16;

async fn writer(client: Client, mut rx: mpsc::UnboundedReceiver<Command>, metrics: Arc<Metrics>) {
    let mut w = Writer {
        entries: HashMap::new(),
        dirty: Vec::new(),
        metrics,
    };
    let mut in_flight: std::collections::HashSet<String> = std::collections::HashSet::new();
    let mut tasks: tokio::task::JoinSet<JobResult> = tokio::task::JoinSet::new();
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        loop {
            match rx.try_recv() {
                Ok(cmd) => w.handle(cmd),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        if retry_at.is_some_and(|t| t <= tokio::time::Instant::now()) {
            retry_at = None;
        }
        if retry_at.is_none() && !w.dirty.is_empty() {
            // Every pod's write starts at once (upstream's status manager writes pods
            // one after the other; a pod's own writes stay in order here too).
            let mut waiting = Vec::new();
            for uid in std::mem::take(&mut w.dirty) {
                if in_flight.contains(&uid) || in_flight.len() >= MAX_IN_FLIGHT {
                    waiting.push(uid);
                    continue;
                }
                let Some(e) = w.entries.get(&uid) else {
                    continue;
                };
                in_flight.insert(uid.clone());
                tasks.spawn(write(
                    client.clone(),
                    Job::of(&uid, e),
                    Arc::clone(&w.metrics),
                ));
            }
            w.dirty = waiting;
        }
        let wake = if w.dirty.is_empty() { None } else { retry_at };
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(cmd) => w.handle(cmd),
                None => return,
            },
            Some(done) = tasks.join_next(), if !tasks.is_empty() => {
                let Ok(r) = done else { continue };
                in_flight.remove(&r.uid);
                if let Some(e) = w.entries.get_mut(&r.uid) {
                    if r.gone {
                        e.written = Some(r.wanted);
                        e.delete = false;
                    } else if let Some(written) = r.written {
                        e.written = written;
                    }
                    if r.deleted {
                        e.delete = false;
                    }
                }
                if let Some(err) = r.error {
                    tracing::warn!(pod = %r.uid, error = %err, "writing pod status failed; retrying");
                    if !w.dirty.contains(&r.uid) {
                        w.dirty.push(r.uid);
                    }
                    retry_at = Some(tokio::time::Instant::now() + Duration::from_secs(1));
                }
            }
            _ = async { if let Some(t) = wake { tokio::time::sleep_until(t).await } }, if wake.is_some() => {}
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn diffs() {
        let old = json!({"phase": "Pending", "containerStatuses": [{"name": "a", "state": {"waiting": {}}}], "x": 1});
        let new = json!({"phase": "Running", "containerStatuses": [{"name": "a", "state": {"running": {}}}]});
        assert_eq!(
            merge_diff(&old, &new).unwrap(),
            json!({"phase": "Running", "containerStatuses": [{"name": "a", "state": {"running": {}}}], "x": null})
        );
        assert_eq!(merge_diff(&new, &new), None);
        assert_eq!(
            merge_diff(
                &json!({"a": {"b": 1, "c": 2}}),
                &json!({"a": {"b": 1, "c": 3}})
            )
            .unwrap(),
            json!({"a": {"c": 3}})
        );
    }
}
