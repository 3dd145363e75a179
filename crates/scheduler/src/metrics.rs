//! The scheduler's metrics under upstream's names, rendered in the Prometheus text
//! format for the server's `/metrics`: `scheduler_schedule_attempts_total`,
//! `scheduler_scheduling_attempt_duration_seconds` and `scheduler_pending_pods`.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::time::Duration;

use crate::queue::Lengths;

/// Upstream's buckets: 1 ms doubling, 15 of them.
fn buckets() -> impl Iterator<Item = f64> {
    (0..15).map(|i| 0.001 * f64::from(1u32 << i))
}

#[derive(Clone, Debug, Default)]
struct Histogram {
    counts: Vec<u64>,
    count: u64,
    sum: f64,
}

impl Histogram {
    fn observe(&mut self, secs: f64) {
        if self.counts.is_empty() {
            self.counts = vec![0; 15];
        }
        for (i, b) in buckets().enumerate() {
            if secs <= b {
                self.counts[i] += 1;
            }
        }
        self.count += 1;
        self.sum += secs;
    }

    /// The upper bound of the bucket holding quantile `q`.
    fn quantile(&self, q: f64) -> f64 {
        let want = (self.count as f64 * q).ceil() as u64;
        for (i, b) in buckets().enumerate() {
            if self.counts.get(i).copied().unwrap_or(0) >= want {
                return b;
            }
        }
        f64::INFINITY
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (profile, result) → attempts.
    attempts: BTreeMap<(String, &'static str), Histogram>,
    pending: Lengths,
}

/// The scheduler's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

impl Metrics {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// One scheduling attempt: `result` is `scheduled`, `unschedulable` or `error`.
    pub fn attempt(&self, profile: &str, result: &'static str, took: Duration) {
        self.lock()
            .attempts
            .entry((profile.to_string(), result))
            .or_default()
            .observe(took.as_secs_f64());
    }

    pub fn set_pending(&self, lengths: Lengths) {
        self.lock().pending = lengths;
    }

    /// Scheduled attempts and the seconds they took, over every profile.
    pub fn scheduled(&self) -> (u64, f64) {
        let inner = self.lock();
        inner
            .attempts
            .iter()
            .filter(|((_, r), _)| *r == "scheduled")
            .fold((0, 0.0), |(n, s), (_, h)| (n + h.count, s + h.sum))
    }

    /// The p99 of scheduled attempts' durations (a bucket bound), in seconds.
    pub fn scheduled_p99(&self) -> f64 {
        let inner = self.lock();
        let mut all = Histogram::default();
        for ((_, r), h) in &inner.attempts {
            if *r == "scheduled" {
                if all.counts.is_empty() {
                    all.counts = vec![0; 15];
                }
                for (i, c) in h.counts.iter().enumerate() {
                    all.counts[i] += c;
                }
                all.count += h.count;
            }
        }
        all.quantile(0.99)
    }

    /// The Prometheus exposition text.
    pub fn render(&self) -> String {
        let inner = self.lock();
        let mut out = String::new();
        out.push_str("# HELP scheduler_schedule_attempts_total Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem.\n# TYPE scheduler_schedule_attempts_total counter\n");
        for ((profile, result), h) in &inner.attempts {
            let _ = writeln!(
                out,
                "scheduler_schedule_attempts_total{{profile=\"{profile}\",result=\"{result}\"}} {}",
                h.count
            );
        }
        out.push_str("# HELP scheduler_scheduling_attempt_duration_seconds Scheduling attempt latency in seconds (scheduling algorithm + binding)\n# TYPE scheduler_scheduling_attempt_duration_seconds histogram\n");
        for ((profile, result), h) in &inner.attempts {
            let labels = format!("profile=\"{profile}\",result=\"{result}\"");
            for (i, b) in buckets().enumerate() {
                let _ = writeln!(
                    out,
                    "scheduler_scheduling_attempt_duration_seconds_bucket{{{labels},le=\"{b}\"}} {}",
                    h.counts.get(i).copied().unwrap_or(0)
                );
            }
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_bucket{{{labels},le=\"+Inf\"}} {}",
                h.count
            );
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_sum{{{labels}}} {}",
                h.sum
            );
            let _ = writeln!(
                out,
                "scheduler_scheduling_attempt_duration_seconds_count{{{labels}}} {}",
                h.count
            );
        }
        out.push_str("# HELP scheduler_pending_pods Number of pending pods, by the queue type.\n# TYPE scheduler_pending_pods gauge\n");
        let p = inner.pending;
        for (q, n) in [
            ("active", p.active + p.in_flight),
            ("backoff", p.backoff),
            ("unschedulable", p.unschedulable),
        ] {
            let _ = writeln!(out, "scheduler_pending_pods{{queue=\"{q}\"}} {n}");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempts_render_with_upstreams_names() {
        let m = Metrics::default();
        m.attempt("default-scheduler", "scheduled", Duration::from_micros(300));
        m.attempt("default-scheduler", "scheduled", Duration::from_millis(3));
        m.attempt(
            "default-scheduler",
            "unschedulable",
            Duration::from_millis(1),
        );
        let text = m.render();
        assert!(text.contains(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 2"
        ));
        assert!(text.contains("scheduler_scheduling_attempt_duration_seconds_bucket{profile=\"default-scheduler\",result=\"scheduled\",le=\"0.001\"} 1"));
        assert!(text.contains("scheduler_pending_pods{queue=\"active\"} 0"));
        assert_eq!(m.scheduled().0, 2);
        assert!((m.scheduled_p99() - 0.004).abs() < 1e-9);
    }
}
