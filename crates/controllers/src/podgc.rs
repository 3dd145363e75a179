//! The pod garbage collector (upstream's `pkg/controller/podgc`), every 20 s:
//!
//! - terminated pods (Succeeded or Failed) beyond `--terminated-pod-gc-threshold`
//!   (12,500; 0 turns this off) are deleted, oldest first;
//! - pods bound to a node that no longer exists — missing from the cache for the 40 s
//!   quarantine, then confirmed absent by the API server — are marked Failed with the
//!   `DisruptionTarget` condition (`DeletionByPodGC`) and force-deleted;
//! - pods being deleted that were never scheduled are force-deleted.
//!
//! The choices are pure functions of the cached pods and nodes; the loop carries them out
//! as the `pod-garbage-collector` service account.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use serde_json::json;

use crate::cachedpod::CachedPod;
use crate::informers::Informer;

/// upstream's `gcCheckPeriod`.
pub const CHECK_PERIOD: Duration = Duration::from_secs(20);
/// upstream's `quarantineTime`.
pub const QUARANTINE: Duration = Duration::from_secs(40);
/// upstream's default `--terminated-pod-gc-threshold`.
pub const DEFAULT_THRESHOLD: usize = 12_500;

fn terminated(p: &CachedPod) -> bool {
    matches!(
        p.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    )
}

fn node_of(p: &CachedPod) -> Option<&str> {
    p.spec
        .as_ref()
        .and_then(|s| s.node_name.as_deref())
        .filter(|n| !n.is_empty())
}

/// `gcTerminated`: the terminated pods beyond `threshold`, oldest first (none when the
/// threshold is 0).
pub fn terminated_to_delete(pods: &[Arc<CachedPod>], threshold: usize) -> Vec<Arc<CachedPod>> {
    if threshold == 0 {
        return Vec::new();
    }
    let mut done: Vec<&Arc<CachedPod>> = pods
        .iter()
        .filter(|p| terminated(p) && p.metadata.deletion_timestamp.is_none())
        .collect();
    if done.len() <= threshold {
        return Vec::new();
    }
    done.sort_by(|a, b| {
        a.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0)
            .cmp(&b.metadata.creation_timestamp.as_ref().map(|t| t.0))
    });
    let excess = done.len() - threshold;
    done.into_iter().take(excess).cloned().collect()
}

/// `gcUnscheduledTerminating`: pods being deleted that no node will ever finish.
pub fn unscheduled_terminating(pods: &[Arc<CachedPod>]) -> Vec<Arc<CachedPod>> {
    pods.iter()
        .filter(|p| p.metadata.deletion_timestamp.is_some() && node_of(p).is_none())
        .cloned()
        .collect()
}

/// `gcOrphaned`'s quarantine: records since when each node named by a pod has been
/// missing from `nodes` (forgetting nodes that came back) and returns those missing for
/// at least `QUARANTINE` at `now`, to confirm with the API server.
pub fn quarantined_nodes(
    pods: &[Arc<CachedPod>],
    nodes: &HashSet<String>,
    missing_since: &mut HashMap<String, Instant>,
    now: Instant,
) -> Vec<String> {
    let referenced: HashSet<&str> = pods.iter().filter_map(|p| node_of(p)).collect();
    missing_since.retain(|n, _| referenced.contains(n.as_str()) && !nodes.contains(n));
    for n in referenced {
        if !nodes.contains(n) {
            missing_since.entry(n.to_string()).or_insert(now);
        }
    }
    let mut due: Vec<String> = missing_since
        .iter()
        .filter(|(_, since)| now.duration_since(**since) >= QUARANTINE)
        .map(|(n, _)| n.clone())
        .collect();
    due.sort();
    due
}

/// Runs the pod garbage collector until the process ends.
pub async fn run_pod_gc(
    pods: Arc<Informer<CachedPod>>,
    nodes: Arc<Informer<Node>>,
    writer: Client,
    threshold: usize,
) {
    pods.synced().await;
    nodes.synced().await;
    let mut missing_since: HashMap<String, Instant> = HashMap::new();
    let mut tick = tokio::time::interval(CHECK_PERIOD);
    loop {
        tick.tick().await;
        let span = tracing::debug_span!("reconcile", controller = "podgc");
        let _guard = span.enter();
        let all = pods.store.state();
        for p in terminated_to_delete(&all, threshold) {
            delete(&writer, &p, false).await;
        }
        let present: HashSet<String> = nodes
            .store
            .state()
            .iter()
            .filter_map(|n| n.metadata.name.clone())
            .collect();
        for node in quarantined_nodes(&all, &present, &mut missing_since, Instant::now()) {
            let api: Api<Node> = Api::all(writer.clone());
            match api.get_opt(&node).await {
                Ok(None) => {
                    missing_since.remove(&node);
                    for p in pods.by_index("node", &node) {
                        tracing::info!(pod = ?p.metadata.name, %node, "deleting a pod bound to a node that no longer exists");
                        delete(&writer, &p, true).await;
                    }
                }
                Ok(Some(_)) => {
                    missing_since.remove(&node);
                }
                Err(e) => tracing::debug!(%node, error = %e, "cannot confirm the node is gone"),
            }
        }
        for p in unscheduled_terminating(&all) {
            delete(&writer, &p, false).await;
        }
    }
}

/// Force-deletes a pod (grace 0, uid precondition); an orphaned pod not yet terminal is
/// first marked Failed with the `DisruptionTarget` condition, as upstream.
async fn delete(writer: &Client, pod: &CachedPod, mark_failed: bool) {
    let ns = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    let api: Api<Pod> = Api::namespaced(writer.clone(), &ns);
    if mark_failed && !terminated(pod) {
        let now = jiff::Timestamp::now().to_string();
        let patch = json!({"status": {"phase": "Failed", "conditions": [{
            "type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
            "message": "PodGC: node no longer exists", "lastTransitionTime": now}]}});
        if let Err(e) = api
            .patch_status(&name, &PatchParams::default(), &Patch::Strategic(&patch))
            .await
        {
            tracing::debug!(pod = %name, error = %e, "cannot mark the pod failed");
        }
    }
    let dp = DeleteParams {
        grace_period_seconds: Some(0),
        preconditions: Some(Preconditions {
            uid: pod.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    match api.delete(&name, &dp).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => {}
        Err(e) => tracing::info!(pod = %name, error = %e, "pod garbage collection failed"),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pod(
        name: &str,
        phase: &str,
        node: Option<&str>,
        created: &str,
        deleting: bool,
    ) -> Arc<CachedPod> {
        let mut p = json!({"metadata": {"name": name, "namespace": "default", "uid": name,
                "creationTimestamp": created},
            "spec": {"containers": []}, "status": {"phase": phase}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        if deleting {
            p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        }
        Arc::new(serde_json::from_value(p).unwrap())
    }

    fn names(pods: &[Arc<CachedPod>]) -> Vec<String> {
        pods.iter()
            .map(|p| p.metadata.name.clone().unwrap())
            .collect()
    }

    #[test]
    fn terminated_pods_beyond_the_threshold_go_oldest_first() {
        let pods = vec![
            pod("new", "Succeeded", Some("n"), "2026-01-03T00:00:00Z", false),
            pod("old", "Failed", Some("n"), "2026-01-01T00:00:00Z", false),
            pod("mid", "Succeeded", Some("n"), "2026-01-02T00:00:00Z", false),
            pod(
                "running",
                "Running",
                Some("n"),
                "2025-01-01T00:00:00Z",
                false,
            ),
        ];
        assert_eq!(names(&terminated_to_delete(&pods, 1)), vec!["old", "mid"]);
        assert!(terminated_to_delete(&pods, 3).is_empty());
        assert!(terminated_to_delete(&pods, 0).is_empty());
    }

    #[test]
    fn unscheduled_pods_being_deleted_are_forced() {
        let pods = vec![
            pod("pending", "Pending", None, "2026-01-01T00:00:00Z", true),
            pod("bound", "Running", Some("n"), "2026-01-01T00:00:00Z", true),
            pod("alive", "Pending", None, "2026-01-01T00:00:00Z", false),
        ];
        assert_eq!(names(&unscheduled_terminating(&pods)), vec!["pending"]);
    }

    #[test]
    fn missing_nodes_are_quarantined_before_their_pods_go() {
        let pods = vec![
            pod("a", "Running", Some("gone"), "2026-01-01T00:00:00Z", false),
            pod("b", "Running", Some("here"), "2026-01-01T00:00:00Z", false),
        ];
        let nodes: HashSet<String> = ["here".to_string()].into();
        let mut since = HashMap::new();
        let t0 = Instant::now();
        assert!(quarantined_nodes(&pods, &nodes, &mut since, t0).is_empty());
        assert!(
            quarantined_nodes(&pods, &nodes, &mut since, t0 + Duration::from_secs(20)).is_empty()
        );
        assert_eq!(
            quarantined_nodes(&pods, &nodes, &mut since, t0 + QUARANTINE),
            vec!["gone"]
        );
        // The node came back: forgotten.
        let back: HashSet<String> = ["here".to_string(), "gone".to_string()].into();
        assert!(quarantined_nodes(&pods, &back, &mut since, t0 + QUARANTINE).is_empty());
        assert!(since.is_empty());
    }
}
