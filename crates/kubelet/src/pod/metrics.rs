//! The pod lifecycle's metrics: `kubelet_pod_start_duration_seconds` (upstream's
//! buckets) and `kubelet_pod_start_stage_duration_seconds{stage}` (ours: where a pod
//! start's time goes inside the kubelet), rendered in the Prometheus text format for the
//! kubelet's `/metrics`.

use std::collections::BTreeMap;
use std::sync::Mutex;

use runtime::metrics::Histogram;

/// Upstream's buckets of `kubelet_pod_start_duration_seconds`.
pub const POD_START_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

/// Buckets of the per-stage histogram (upstream's runtime operation buckets).
pub const STAGE_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The stages of a pod start the kubelet times (`stage` label):
/// - `admit`: the pod seen by the watch → its worker started (admission, runtime check);
/// - `setup`: pod directory, cgroup and volumes (incl. the service account token);
/// - `sandbox`: `RunPodSandbox` (pause container, CNI) and its status;
/// - `image`: `EnsureImageExists` (the pull, when the policy asks for one);
/// - `create`, `start`: `CreateContainer`, `StartContainer`;
/// - `sync`: a whole sync that created the sandbox;
/// - `status_write`: the status manager's PATCH of a status.
pub const STAGES: &[&str] = &[
    "admit",
    "setup",
    "sandbox",
    "image",
    "create",
    "start",
    "sync",
    "status_write",
];

/// The pod metrics. Shared as an `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    start: Mutex<Histogram>,
    stages: Mutex<BTreeMap<&'static str, Histogram>>,
}

impl Metrics {
    pub fn new() -> Self {
        Metrics::default()
    }

    /// Records one pod's start duration (creation → all containers first seen running).
    pub fn observe_pod_start(&self, seconds: f64) {
        self.start
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .observe(POD_START_BUCKETS, seconds);
    }

    /// Records one stage of a pod start (see [`STAGES`]).
    pub fn observe_stage(&self, stage: &'static str, d: std::time::Duration) {
        self.stages
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(stage)
            .or_default()
            .observe(STAGE_BUCKETS, d.as_secs_f64());
    }

    /// How many pod starts were observed.
    pub fn pod_starts(&self) -> u64 {
        self.start.lock().unwrap_or_else(|e| e.into_inner()).count()
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let h = self.start.lock().unwrap_or_else(|e| e.into_inner());
        let name = "kubelet_pod_start_duration_seconds";
        let mut out = format!(
            "# HELP {name} [ALPHA] Duration in seconds from the pod's creation to it starting to run\n# TYPE {name} histogram\n"
        );
        h.render(&mut out, name, "", POD_START_BUCKETS);
        drop(h);
        let stages = self.stages.lock().unwrap_or_else(|e| e.into_inner());
        if !stages.is_empty() {
            let name = "kubelet_pod_start_stage_duration_seconds";
            out.push_str(&format!(
                "# HELP {name} [ALPHA] Duration in seconds of each stage of starting a pod in the kubelet\n# TYPE {name} histogram\n"
            ));
            for (stage, h) in stages.iter() {
                h.render(&mut out, name, &format!("stage=\"{stage}\""), STAGE_BUCKETS);
            }
        }
        out
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn histogram() {
        let m = Metrics::new();
        m.observe_pod_start(0.7);
        m.observe_pod_start(12.0);
        let text = m.render();
        assert!(text.contains("kubelet_pod_start_duration_seconds_bucket{le=\"0.5\"} 0\n"));
        assert!(text.contains("kubelet_pod_start_duration_seconds_bucket{le=\"1\"} 1\n"));
        assert!(text.contains("kubelet_pod_start_duration_seconds_bucket{le=\"20\"} 2\n"));
        assert!(text.contains("kubelet_pod_start_duration_seconds_count 2\n"));
        assert_eq!(m.pod_starts(), 2);
        assert!(!text.contains("kubelet_pod_start_stage_duration_seconds"));
    }

    #[test]
    fn stages() {
        let m = Metrics::new();
        m.observe_stage("sandbox", std::time::Duration::from_millis(150));
        m.observe_stage("sandbox", std::time::Duration::from_millis(350));
        let text = m.render();
        let name = "kubelet_pod_start_stage_duration_seconds";
        assert!(text.contains(&format!(
            "{name}_bucket{{stage=\"sandbox\",le=\"0.25\"}} 1\n"
        )));
        assert!(text.contains(&format!(
            "{name}_bucket{{stage=\"sandbox\",le=\"+Inf\"}} 2\n"
        )));
        assert!(text.contains(&format!("{name}_count{{stage=\"sandbox\"}} 2\n")));
        assert!(text.contains("kubelet_pod_start_duration_seconds_count 0\n"));
    }
}
