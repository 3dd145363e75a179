//! What controllers read off pods (upstream's `podutil` and `controller_utils` helpers).

use crate::cachedpod::CachedPod;
use serde_json::Value;

/// An RFC 3339 timestamp as milliseconds since the epoch.
pub fn time_ms(v: &Value) -> Option<i64> {
    v.as_str()?
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

fn ready_condition(pod: &Value) -> Option<&Value> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")
}

/// `IsPodReady`: the `Ready` condition is `True`.
pub fn is_ready(pod: &Value) -> bool {
    ready_condition(pod).is_some_and(|c| c["status"] == "True")
}

/// When the pod became ready (the `Ready` condition's last transition), if it is.
pub fn ready_since_ms(pod: &Value) -> Option<i64> {
    ready_condition(pod)
        .filter(|c| c["status"] == "True")
        .and_then(|c| time_ms(&c["lastTransitionTime"]))
}

/// The highest restart count of the pod's containers.
pub fn max_restarts(pod: &Value) -> i64 {
    pod["status"]["containerStatuses"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|c| c["restartCount"].as_i64())
        .max()
        .unwrap_or(0)
}

/// The controller reference of an object's metadata (the first with `controller: true`),
/// read in place.
pub fn controller_ref(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> Option<&k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true))
}

/// The owner reference with `controller: true`, if any.
pub fn controller_of(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
}

/// The `controller.kubernetes.io/pod-deletion-cost` annotation (0 when absent or bad).
pub fn deletion_cost(pod: &Value) -> i32 {
    pod["metadata"]["annotations"][DELETION_COST]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// What ownership logic reads off an object (upstream's `ControllerRefManager`): a
/// pod's JSON, any object's JSON, or a [`CachedPod`].
pub trait Claimable {
    fn name(&self) -> &str;
    fn uid(&self) -> &str;
    /// The value of label `key`.
    fn label(&self, key: &str) -> Option<&str>;
    /// The uid of the owner reference with `controller: true`.
    fn controller_uid(&self) -> Option<&str>;
    /// Whether `deletionTimestamp` is set.
    fn being_deleted(&self) -> bool;
    /// `metadata.ownerReferences`, as JSON (for adoption and release patches).
    fn owner_references(&self) -> Vec<Value>;
}

/// What the ReplicaSet logic reads off a pod (its deletion ranking, its status counts).
pub trait PodView: Claimable {
    /// `spec.nodeName` (empty while unassigned).
    fn node_name(&self) -> &str;
    fn phase(&self) -> Option<&str>;
    /// `Some(since)` when the `Ready` condition is `True` (`since`: its last transition).
    fn ready(&self) -> Option<Option<i64>>;
    /// The `controller.kubernetes.io/pod-deletion-cost` annotation (0 when absent or bad).
    fn deletion_cost(&self) -> i32;
    /// The highest restart count of its containers.
    fn max_restarts(&self) -> i64;
    /// `metadata.creationTimestamp`.
    fn created_ms(&self) -> Option<i64>;

    /// `IsPodActive`: not Succeeded, not Failed, not being deleted.
    fn is_active(&self) -> bool {
        !matches!(self.phase(), Some("Succeeded" | "Failed")) && !self.being_deleted()
    }

    /// `IsPodAvailable`: ready for at least `min_ready_seconds` at `now_ms`.
    fn is_available(&self, min_ready_seconds: i64, now_ms: i64) -> bool {
        match self.ready() {
            None => false,
            Some(_) if min_ready_seconds <= 0 => true,
            Some(since) => since
                .is_some_and(|t| t.saturating_add(min_ready_seconds.saturating_mul(1000)) < now_ms),
        }
    }
}

impl<T: Claimable + ?Sized> Claimable for std::sync::Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }

    fn uid(&self) -> &str {
        (**self).uid()
    }

    fn label(&self, key: &str) -> Option<&str> {
        (**self).label(key)
    }

    fn controller_uid(&self) -> Option<&str> {
        (**self).controller_uid()
    }

    fn being_deleted(&self) -> bool {
        (**self).being_deleted()
    }

    fn owner_references(&self) -> Vec<Value> {
        (**self).owner_references()
    }
}

impl<T: PodView + ?Sized> PodView for std::sync::Arc<T> {
    fn node_name(&self) -> &str {
        (**self).node_name()
    }

    fn phase(&self) -> Option<&str> {
        (**self).phase()
    }

    fn ready(&self) -> Option<Option<i64>> {
        (**self).ready()
    }

    fn deletion_cost(&self) -> i32 {
        (**self).deletion_cost()
    }

    fn max_restarts(&self) -> i64 {
        (**self).max_restarts()
    }

    fn created_ms(&self) -> Option<i64> {
        (**self).created_ms()
    }
}

impl Claimable for Value {
    fn name(&self) -> &str {
        self["metadata"]["name"].as_str().unwrap_or_default()
    }

    fn uid(&self) -> &str {
        self["metadata"]["uid"].as_str().unwrap_or_default()
    }

    fn label(&self, key: &str) -> Option<&str> {
        self["metadata"]["labels"].get(key).and_then(Value::as_str)
    }

    fn controller_uid(&self) -> Option<&str> {
        controller_of(self).map(|o| o["uid"].as_str().unwrap_or_default())
    }

    fn being_deleted(&self) -> bool {
        !self["metadata"]["deletionTimestamp"].is_null()
    }

    fn owner_references(&self) -> Vec<Value> {
        self["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }
}

impl PodView for Value {
    fn node_name(&self) -> &str {
        self["spec"]["nodeName"].as_str().unwrap_or_default()
    }

    fn phase(&self) -> Option<&str> {
        self["status"]["phase"].as_str()
    }

    fn ready(&self) -> Option<Option<i64>> {
        is_ready(self).then(|| ready_since_ms(self))
    }

    fn deletion_cost(&self) -> i32 {
        deletion_cost(self)
    }

    fn max_restarts(&self) -> i64 {
        max_restarts(self)
    }

    fn created_ms(&self) -> Option<i64> {
        time_ms(&self["metadata"]["creationTimestamp"])
    }
}

/// The cached pod answers as its JSON does, read in place (the ReplicaSet controller's
/// syncs read every pod of their ReplicaSet this way, with no conversion or copy).
impl Claimable for CachedPod {
    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }

    fn uid(&self) -> &str {
        self.metadata.uid.as_deref().unwrap_or_default()
    }

    fn label(&self, key: &str) -> Option<&str> {
        self.metadata.labels.as_ref()?.get(key).map(String::as_str)
    }

    fn controller_uid(&self) -> Option<&str> {
        self.metadata
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .map(|o| o.uid.as_str())
    }

    fn being_deleted(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    fn owner_references(&self) -> Vec<Value> {
        self.metadata
            .owner_references
            .iter()
            .flatten()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect()
    }
}

impl PodView for CachedPod {
    fn node_name(&self) -> &str {
        self.spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default()
    }

    fn phase(&self) -> Option<&str> {
        self.status.as_ref()?.phase.as_deref()
    }

    fn ready(&self) -> Option<Option<i64>> {
        self.status
            .as_ref()?
            .conditions
            .as_ref()?
            .iter()
            .find(|c| c.type_ == "Ready")
            .filter(|c| c.status == "True")
            .map(|c| {
                c.last_transition_time
                    .as_ref()
                    .map(|t| t.0.as_millisecond())
            })
    }

    fn deletion_cost(&self) -> i32 {
        self.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(DELETION_COST))
            .and_then(|c| c.parse().ok())
            .unwrap_or(0)
    }

    fn max_restarts(&self) -> i64 {
        self.status
            .as_ref()
            .and_then(|s| s.container_statuses.as_ref())
            .into_iter()
            .flatten()
            .map(|c| i64::from(c.restart_count))
            .max()
            .unwrap_or(0)
    }

    fn created_ms(&self) -> Option<i64> {
        self.metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.as_millisecond())
    }
}

const DELETION_COST: &str = "controller.kubernetes.io/pod-deletion-cost";

#[cfg(test)]
mod cached_pod_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use serde_json::json;

    use super::*;

    /// The cached pod answers every question as the pod's JSON does.
    fn same_answers(full: &Value) {
        let s: CachedPod = serde_json::from_value(full.clone()).unwrap();
        assert_eq!(s.name(), full.name());
        assert_eq!(s.uid(), full.uid());
        for key in ["app", "pod-template-hash", "missing"] {
            assert_eq!(s.label(key), full.label(key), "label {key}");
        }
        assert_eq!(s.controller_uid(), full.controller_uid());
        assert_eq!(s.being_deleted(), full.being_deleted());
        assert_eq!(s.owner_references(), full.owner_references());
        assert_eq!(s.node_name(), full.node_name());
        assert_eq!(s.phase(), full.phase());
        assert_eq!(s.ready(), full.ready());
        assert_eq!(s.deletion_cost(), full.deletion_cost());
        assert_eq!(s.max_restarts(), full.max_restarts());
        assert_eq!(s.created_ms(), full.created_ms());
        assert_eq!(s.is_active(), full.is_active());
        for (min_ready, now) in [(0, 0), (10, 1_767_225_600_000), (10, 1_767_225_700_000)] {
            assert_eq!(
                s.is_available(min_ready, now),
                full.is_available(min_ready, now)
            );
        }
    }

    #[test]
    fn cached_pod_answers_as_its_json_does() {
        let full = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "web", "pod-template-hash": "abc"},
                "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionTimestamp": "2026-01-01T00:01:00Z",
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "5", "other": "x"},
                "ownerReferences": [
                    {"apiVersion": "v1", "kind": "ConfigMap", "name": "c", "uid": "c1"},
                    {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                        "uid": "r", "controller": true, "blockOwnerDeletion": true}],
                "managedFields": [{"manager": "m"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:05Z"}],
                "containerStatuses": [{"name": "c", "restartCount": 3, "image": "i", "imageID": "",
                    "ready": true}, {"name": "d", "restartCount": 1, "image": "i", "imageID": "",
                    "ready": true}]},
        });
        same_answers(&full);
        // Bare: no labels, owners, node, status or times.
        same_answers(&json!({"metadata": {"name": "bare"}, "spec": {"containers": []}}));
        // Not ready, a bad cost, a pending unassigned pod.
        same_answers(&json!({
            "metadata": {"name": "q", "uid": "v",
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "x"}},
            "spec": {"containers": []},
            "status": {"phase": "Pending", "conditions": [{"type": "Ready", "status": "False",
                "lastTransitionTime": "2026-01-01T00:00:05Z"}]},
        }));
    }
}
