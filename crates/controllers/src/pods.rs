//! What controllers read off pods (upstream's `podutil` and `controller_utils` helpers).

use serde_json::Value;

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
