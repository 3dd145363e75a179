//! What controllers read off pods (upstream's `podutil` and `controller_utils` helpers).

use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};

/// An RFC 3339 timestamp as milliseconds since the epoch.
pub fn time_ms(v: &Value) -> Option<i64> {
    v.as_str()?
        .parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// `IsPodActive`: not Succeeded, not Failed, not being deleted.
pub fn is_active(pod: &Value) -> bool {
    !matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) && pod["metadata"]["deletionTimestamp"].is_null()
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

/// `IsPodAvailable`: ready for at least `min_ready_seconds` at `now_ms`.
pub fn is_available(pod: &Value, min_ready_seconds: i64, now_ms: i64) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    ready_since_ms(pod)
        .is_some_and(|t| t.saturating_add(min_ready_seconds.saturating_mul(1000)) < now_ms)
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

/// The owner reference with `controller: true`, if any.
pub fn controller_of(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|o| o["controller"] == true)
}

/// The `controller.kubernetes.io/pod-deletion-cost` annotation (0 when absent or bad).
pub fn deletion_cost(pod: &Value) -> i32 {
    pod["metadata"]["annotations"]["controller.kubernetes.io/pod-deletion-cost"]
        .as_str()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// The parts of a pod the ReplicaSet controller reads (ownership, labels, deletion cost,
/// node, phase, conditions, restart counts), as JSON. Much cheaper than the whole pod:
/// a sync looks at every pod of its ReplicaSet.
pub fn projection(pod: &Pod) -> Value {
    let m = &pod.metadata;
    let mut meta = Map::new();
    let mut put = |k: &str, v: Option<Value>| {
        if let Some(v) = v {
            meta.insert(k.to_string(), v);
        }
    };
    put("name", m.name.clone().map(Value::String));
    put("namespace", m.namespace.clone().map(Value::String));
    put("uid", m.uid.clone().map(Value::String));
    put(
        "resourceVersion",
        m.resource_version.clone().map(Value::String),
    );
    put(
        "labels",
        m.labels.as_ref().and_then(|l| serde_json::to_value(l).ok()),
    );
    put(
        "ownerReferences",
        m.owner_references
            .as_ref()
            .and_then(|o| serde_json::to_value(o).ok()),
    );
    put(
        "creationTimestamp",
        m.creation_timestamp
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok()),
    );
    put(
        "deletionTimestamp",
        m.deletion_timestamp
            .as_ref()
            .and_then(|t| serde_json::to_value(t).ok()),
    );
    const COST: &str = "controller.kubernetes.io/pod-deletion-cost";
    put(
        "annotations",
        m.annotations
            .as_ref()
            .and_then(|a| a.get(COST))
            .map(|c| json!({ COST: c })),
    );
    let mut out = json!({ "metadata": meta });
    if let Some(node) = pod.spec.as_ref().and_then(|s| s.node_name.as_ref()) {
        out["spec"] = json!({ "nodeName": node });
    }
    if let Some(st) = &pod.status {
        let mut status = Map::new();
        if let Some(phase) = &st.phase {
            status.insert("phase".into(), Value::String(phase.clone()));
        }
        if let Some(c) = st
            .conditions
            .as_ref()
            .and_then(|c| serde_json::to_value(c).ok())
        {
            status.insert("conditions".into(), c);
        }
        if let Some(cs) = &st.container_statuses {
            let restarts: Vec<Value> = cs
                .iter()
                .map(|c| json!({"name": c.name, "restartCount": c.restart_count}))
                .collect();
            status.insert("containerStatuses".into(), Value::Array(restarts));
        }
        out["status"] = Value::Object(status);
    }
    out
}

#[cfg(test)]
mod projection_tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn projection_keeps_what_the_replicaset_logic_reads() {
        let full = json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
                "labels": {"app": "web"}, "creationTimestamp": "2026-01-01T00:00:00Z",
                "deletionTimestamp": "2026-01-01T00:01:00Z",
                "annotations": {"controller.kubernetes.io/pod-deletion-cost": "5", "other": "x"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                    "uid": "r", "controller": true}],
                "managedFields": [{"manager": "m"}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:05Z"}],
                "containerStatuses": [{"name": "c", "restartCount": 3, "image": "i", "imageID": "",
                    "ready": true}]},
        });
        let pod: Pod = serde_json::from_value(full.clone()).unwrap();
        let p = projection(&pod);
        assert_eq!(controller_of(&p), controller_of(&full));
        assert_eq!(deletion_cost(&p), 5);
        assert_eq!(max_restarts(&p), 3);
        assert!(is_ready(&p));
        assert_eq!(ready_since_ms(&p), ready_since_ms(&full));
        assert_eq!(is_active(&p), is_active(&full));
        assert_eq!(p["spec"]["nodeName"], "n1");
        assert_eq!(p["metadata"]["labels"], full["metadata"]["labels"]);
        assert_eq!(p["metadata"]["resourceVersion"], "7");
        assert_eq!(
            p["metadata"]["creationTimestamp"],
            full["metadata"]["creationTimestamp"]
        );
        assert!(p["metadata"].get("managedFields").is_none());
        assert!(p["spec"].get("containers").is_none());
    }
}
