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

async fn write(client: &Client, uid: &str, e: &mut Entry) -> Result<(), kube::Error> {
    let ns = e.pod.metadata.namespace.clone().unwrap_or_default();
    let name = e.pod.metadata.name.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(client.clone(), &ns);
    let base = e.written.clone().unwrap_or_else(|| {
        e.pod
            .status
            .as_ref()
            .and_then(|s| serde_json::to_value(s).ok())
            .unwrap_or_else(|| json!({}))
    });
    if let Some(diff) = merge_diff(&base, &e.wanted) {
        let body = json!({"metadata": {"uid": uid}, "status": diff});
        match api
            .patch_status(&name, &PatchParams::default(), &Patch::Merge(&body))
            .await
        {
            Ok(p) => {
                e.written = p.status.as_ref().and_then(|s| serde_json::to_value(s).ok());
                tracing::debug!(pod = %format!("{ns}/{name}"), "status written");
            }
            Err(err) if matches!(api_code(&err), Some(404 | 409)) => {
                // Gone, or another pod of that name now.
                e.written = Some(e.wanted.clone());
                e.delete = false;
                return Ok(());
            }
            Err(err) => return Err(err),
        }
    }
    if e.delete {
        let params = DeleteParams {
            grace_period_seconds: Some(0),
            preconditions: Some(Preconditions {
                uid: Some(uid.to_string()),
                resource_version: None,
            }),
            ..DeleteParams::default()
        };
        match api.delete(&name, &params).await {
            Ok(_) => tracing::info!(pod = %format!("{ns}/{name}"), "pod deleted"),
            Err(err) if matches!(api_code(&err), Some(404 | 409)) => {}
            Err(err) => return Err(err),
        }
        e.delete = false;
    }
    Ok(())
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

async fn writer(client: Client, mut rx: mpsc::UnboundedReceiver<Command>, metrics: Arc<Metrics>) {
    let mut w = Writer {
        entries: HashMap::new(),
        dirty: Vec::new(),
        metrics,
    };
    let mut retry_at: Option<tokio::time::Instant> = None;
    loop {
        loop {
            match rx.try_recv() {
                Ok(cmd) => w.handle(cmd),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return,
            }
        }
        let now = tokio::time::Instant::now();
        if !w.dirty.is_empty() && retry_at.is_none_or(|t| t <= now) {
            let batch = std::mem::take(&mut w.dirty);
            let mut failed = false;
            for uid in batch {
                let Some(e) = w.entries.get_mut(&uid) else {
                    continue;
                };
                if let Err(err) = write(&client, &uid, e).await {
                    tracing::warn!(pod = %uid, error = %err, "writing pod status failed; retrying");
                    if !w.dirty.contains(&uid) {
                        w.dirty.push(uid);
                    }
                    failed = true;
                }
            }
            retry_at = failed.then(|| tokio::time::Instant::now() + Duration::from_secs(1));
            continue;
        }
        let wake = if w.dirty.is_empty() { None } else { retry_at };
        tokio::select! {
            cmd = rx.recv() => match cmd {
                Some(cmd) => w.handle(cmd),
                None => return,
            },
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
