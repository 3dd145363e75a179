//! The pod lifecycle's metrics: `kubelet_pod_start_duration_seconds` (upstream's
//! buckets), rendered in the Prometheus text format for the kubelet's `/metrics`.

use std::sync::Mutex;

/// Upstream's buckets of `kubelet_pod_start_duration_seconds`.
pub const POD_START_BUCKETS: &[f64] = &[
    0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
    300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0,
];

#[derive(Debug, Default)]
struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

/// The pod metrics. Shared as an `Arc`.
#[derive(Debug, Default)]
pub struct Metrics {
    start: Mutex<Histogram>,
}

impl Metrics {
    pub fn new() -> Self {
        Metrics::default()
    }

    /// Records one pod's start duration (creation → all containers first seen running).
    pub fn observe_pod_start(&self, seconds: f64) {
        let mut h = self.start.lock().unwrap_or_else(|e| e.into_inner());
        if h.counts.is_empty() {
            h.counts = vec![0; POD_START_BUCKETS.len()];
        }
        for (i, b) in POD_START_BUCKETS.iter().enumerate() {
            if seconds <= *b {
                h.counts[i] += 1;
            }
        }
        h.sum += seconds;
        h.count += 1;
    }

    /// How many pod starts were observed.
    pub fn pod_starts(&self) -> u64 {
        self.start.lock().unwrap_or_else(|e| e.into_inner()).count
    }

    /// The metrics in the Prometheus text exposition format.
    pub fn render(&self) -> String {
        let h = self.start.lock().unwrap_or_else(|e| e.into_inner());
        let name = "kubelet_pod_start_duration_seconds";
        let mut out = format!(
            "# HELP {name} [ALPHA] Duration in seconds from the pod's creation to it starting to run\n# TYPE {name} histogram\n"
        );
        for (i, b) in POD_START_BUCKETS.iter().enumerate() {
            let c = h.counts.get(i).copied().unwrap_or(0);
            out.push_str(&format!("{name}_bucket{{le=\"{b}\"}} {c}\n"));
        }
        out.push_str(&format!("{name}_bucket{{le=\"+Inf\"}} {}\n", h.count));
        out.push_str(&format!("{name}_sum {}\n{name}_count {}\n", h.sum, h.count));
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
    }
}
