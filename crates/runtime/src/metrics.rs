//! Metrics in the Prometheus text format, as upstream's components expose them on
//! `/metrics`: a [`Histogram`] the components share, and the work queues' metrics under
//! client-go's names (`workqueue_depth`, `workqueue_adds_total`,
//! `workqueue_queue_duration_seconds`, `workqueue_work_duration_seconds`,
//! `workqueue_unfinished_work_seconds`, `workqueue_longest_running_processor_seconds`,
//! `workqueue_retries_total`, each labelled with the queue's `name`).
//!
//! Leader election reports client-go's `leader_election_master_status` (1 while leading,
//! 0 otherwise) and `leader_election_slowpath_total` per elector name, the component's
//! whatever Lease it locks ([`render_leader_election`]).
//!
//! As upstream's legacy registry, the work queues' series are process-wide: a queue made
//! with [`crate::workqueue::WorkQueue::named`] counts into the series of its name, which
//! outlive it, and [`render_workqueues`] prints them all. Queues of one name (two
//! controller managers in one test process) share their series, as they do upstream.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, MutexGuard, Weak};
use std::time::Instant;

use api::gofmt::float_v;

/// A histogram's counts; its buckets are the caller's (one slice per metric).
#[derive(Clone, Debug, Default)]
pub struct Histogram {
    counts: Vec<u64>,
    sum: f64,
    count: u64,
}

impl Histogram {
    pub fn observe(&mut self, buckets: &[f64], value: f64) {
        if self.counts.len() != buckets.len() {
            self.counts = vec![0; buckets.len()];
        }
        for (i, b) in buckets.iter().enumerate() {
            if value <= *b {
                self.counts[i] += 1;
            }
        }
        self.sum += value;
        self.count += 1;
    }

    /// How many values were observed.
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The `_bucket`, `_sum` and `_count` lines of series `name{labels}` (labels as
    /// printed, `k="v",…`, or empty), numbers printed as Go's client prints them.
    pub fn render(&self, out: &mut String, name: &str, labels: &str, buckets: &[f64]) {
        let sep = if labels.is_empty() { "" } else { "," };
        for (i, b) in buckets.iter().enumerate() {
            let c = self.counts.get(i).copied().unwrap_or(0);
            out.push_str(&format!(
                "{name}_bucket{{{labels}{sep}le=\"{}\"}} {c}\n",
                float_v(*b)
            ));
        }
        out.push_str(&format!(
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {}\n",
            self.count
        ));
        let braces = if labels.is_empty() {
            String::new()
        } else {
            format!("{{{labels}}}")
        };
        out.push_str(&format!(
            "{name}_sum{braces} {}\n{name}_count{braces} {}\n",
            float_v(self.sum),
            self.count
        ));
    }
}

/// `# HELP` and `# TYPE` lines.
pub fn header(out: &mut String, name: &str, kind: &str, help: &str) {
    out.push_str(&format!("# HELP {name} {help}\n# TYPE {name} {kind}\n"));
}

/// A label value escaped as the text format wants it.
pub use api::gofmt::label_value;

/// Upstream's buckets of the work queues' histograms: `ExponentialBuckets(1e-6, 10, 10)`.
pub const QUEUE_BUCKETS: [f64; 10] = [1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 1e-1, 1.0, 10.0, 100.0, 1000.0];

/// What a live queue reports when the metrics are read: items queued (added and not yet
/// taken by a worker, upstream's depth) and when each item in a worker's hands was taken.
pub(crate) trait LiveQueue: Send + Sync {
    fn gauges(&self) -> (usize, Vec<Instant>);
}

/// The series of one queue name.
#[derive(Default)]
pub(crate) struct QueueSeries {
    adds: AtomicU64,
    retries: AtomicU64,
    latency: Mutex<Histogram>,
    work: Mutex<Histogram>,
    live: Mutex<Vec<Weak<dyn LiveQueue>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl QueueSeries {
    pub(crate) fn added(&self) {
        self.adds.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn retried(&self) {
        self.retries.fetch_add(1, Ordering::Relaxed);
    }

    /// An item taken by a worker after `waited` seconds in the queue.
    pub(crate) fn taken(&self, waited: f64) {
        lock(&self.latency).observe(&QUEUE_BUCKETS, waited);
    }

    /// An item a worker held for `worked` seconds.
    pub(crate) fn finished(&self, worked: f64) {
        lock(&self.work).observe(&QUEUE_BUCKETS, worked);
    }

    pub(crate) fn attach(&self, queue: Weak<dyn LiveQueue>) {
        let mut live = lock(&self.live);
        live.retain(|q| q.strong_count() > 0);
        live.push(queue);
    }
}

static QUEUES: LazyLock<Mutex<BTreeMap<String, Arc<QueueSeries>>>> =
    LazyLock::new(|| Mutex::new(BTreeMap::new()));

/// The series of queue `name`, made on first use.
pub(crate) fn queue_series(name: &str) -> Arc<QueueSeries> {
    Arc::clone(lock(&QUEUES).entry(name.to_string()).or_default())
}

/// Leader election's series of one lease name.
#[derive(Clone, Copy, Debug, Default)]
struct LeaderSeries {
    leading: bool,
    slowpath: u64,
}

static LEADERS: LazyLock<Mutex<BTreeMap<String, LeaderSeries>>> = LazyLock::new(Default::default);

/// Whether this process leads the lease `name` (a candidate reports `false` from when it
/// campaigns).
pub(crate) fn leader_status(name: &str, leading: bool) {
    lock(&LEADERS).entry(name.to_string()).or_default().leading = leading;
}

/// The leader renewed `name` through the slow path (the optimistic update failed).
pub(crate) fn leader_slowpath(name: &str) {
    lock(&LEADERS).entry(name.to_string()).or_default().slowpath += 1;
}

/// Leader election's metrics: of the elector `only` names, else of every elector of this
/// process that has led.
pub fn render_leader_election(only: Option<&str>) -> String {
    let leaders: BTreeMap<String, LeaderSeries> = lock(&LEADERS)
        .iter()
        .filter(|(name, _)| only.is_none_or(|o| o == name.as_str()))
        .map(|(name, s)| (name.clone(), *s))
        .collect();
    let mut out = String::new();
    if leaders.is_empty() {
        return out;
    }
    header(
        &mut out,
        "leader_election_master_status",
        "gauge",
        "[ALPHA] Gauge of if the reporting system is master of the relevant lease, 0 indicates backup, 1 indicates master. 'name' is the string used to identify the lease. Please make sure to group by name.",
    );
    for (name, s) in &leaders {
        out.push_str(&format!(
            "leader_election_master_status{{name=\"{}\"}} {}\n",
            label_value(name),
            u8::from(s.leading)
        ));
    }
    header(
        &mut out,
        "leader_election_slowpath_total",
        "counter",
        "[ALPHA] Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
    );
    for (name, s) in &leaders {
        out.push_str(&format!(
            "leader_election_slowpath_total{{name=\"{}\"}} {}\n",
            label_value(name),
            s.slowpath
        ));
    }
    out
}

/// The work queues' metrics, every named queue of the process.
pub fn render_workqueues() -> String {
    let now = Instant::now();
    let queues: Vec<(String, Arc<QueueSeries>)> = lock(&QUEUES)
        .iter()
        .map(|(n, s)| (n.clone(), Arc::clone(s)))
        .collect();
    let mut out = String::new();
    if queues.is_empty() {
        return out;
    }
    // Gauges read from the live queues: depth, then seconds of unfinished work and the
    // longest any worker has held its item.
    let gauges: Vec<(usize, f64, f64)> = queues
        .iter()
        .map(|(_, s)| {
            let live: Vec<Arc<dyn LiveQueue>> =
                lock(&s.live).iter().filter_map(Weak::upgrade).collect();
            let mut depth = 0;
            let (mut total, mut longest) = (0.0_f64, 0.0_f64);
            for q in live {
                let (queued, held) = q.gauges();
                depth += queued;
                for since in held {
                    let age = now.saturating_duration_since(since).as_secs_f64();
                    total += age;
                    longest = longest.max(age);
                }
            }
            (depth, total, longest)
        })
        .collect();
    /// A metric's series: a value per queue, or a histogram of each queue's series.
    enum Series<'a> {
        Value(&'a dyn Fn(usize) -> String),
        Histogram(fn(&QueueSeries) -> &Mutex<Histogram>),
    }
    let adds = |i: usize| queues[i].1.adds.load(Ordering::Relaxed).to_string();
    let retries = |i: usize| queues[i].1.retries.load(Ordering::Relaxed).to_string();
    let depth = |i: usize| gauges[i].0.to_string();
    let unfinished = |i: usize| float_v(gauges[i].1);
    let longest = |i: usize| float_v(gauges[i].2);
    // Upstream's names, help and stability, in the order its registry prints them.
    let metrics: [(&str, &str, &str, Series<'_>); 7] = [
        (
            "workqueue_adds_total",
            "counter",
            "Total number of adds handled by workqueue",
            Series::Value(&adds),
        ),
        (
            "workqueue_depth",
            "gauge",
            "Current depth of workqueue",
            Series::Value(&depth),
        ),
        (
            "workqueue_longest_running_processor_seconds",
            "gauge",
            "How many seconds has the longest running processor for workqueue been running.",
            Series::Value(&longest),
        ),
        (
            "workqueue_queue_duration_seconds",
            "histogram",
            "How long in seconds an item stays in workqueue before being requested.",
            Series::Histogram(|s| &s.latency),
        ),
        (
            "workqueue_retries_total",
            "counter",
            "Total number of retries handled by workqueue",
            Series::Value(&retries),
        ),
        (
            "workqueue_unfinished_work_seconds",
            "gauge",
            "How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.",
            Series::Value(&unfinished),
        ),
        (
            "workqueue_work_duration_seconds",
            "histogram",
            "How long in seconds processing an item from workqueue takes.",
            Series::Histogram(|s| &s.work),
        ),
    ];
    for (metric, kind, help, series) in metrics {
        header(&mut out, metric, kind, &format!("[BETA] {help}"));
        for (i, (name, s)) in queues.iter().enumerate() {
            let labels = format!("name=\"{}\"", label_value(name));
            match &series {
                Series::Value(value) => {
                    out.push_str(&format!("{metric}{{{labels}}} {}\n", value(i)))
                }
                Series::Histogram(of) => {
                    lock(of(s)).render(&mut out, metric, &labels, &QUEUE_BUCKETS)
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn histograms_print_as_gos_client() {
        let mut h = Histogram::default();
        h.observe(&QUEUE_BUCKETS, 0.000_5);
        h.observe(&QUEUE_BUCKETS, 2.0);
        let mut out = String::new();
        h.render(&mut out, "x", "name=\"q\"", &QUEUE_BUCKETS);
        assert!(
            out.starts_with("x_bucket{name=\"q\",le=\"1e-06\"} 0\n"),
            "{out}"
        );
        assert!(
            out.contains("x_bucket{name=\"q\",le=\"0.001\"} 1\n"),
            "{out}"
        );
        assert!(out.contains("x_bucket{name=\"q\",le=\"10\"} 2\n"), "{out}");
        assert!(
            out.contains("x_bucket{name=\"q\",le=\"+Inf\"} 2\n"),
            "{out}"
        );
        assert!(
            out.ends_with("x_sum{name=\"q\"} 2.0005\nx_count{name=\"q\"} 2\n"),
            "{out}"
        );
        let mut bare = String::new();
        Histogram::default().render(&mut bare, "y", "", &[0.5]);
        assert_eq!(
            bare,
            "y_bucket{le=\"0.5\"} 0\ny_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n"
        );
    }

    #[test]
    fn leader_election_reports_client_gos_series_per_lease() {
        assert_eq!(render_leader_election(Some("metrics-test-none")), "");
        leader_status("metrics-test-a", true);
        leader_slowpath("metrics-test-a");
        leader_slowpath("metrics-test-a");
        leader_status("metrics-test-b", true);
        leader_status("metrics-test-b", false);
        let a = render_leader_election(Some("metrics-test-a"));
        assert_eq!(
            a.lines()
                .filter(|l| !l.starts_with('#'))
                .collect::<Vec<_>>(),
            [
                "leader_election_master_status{name=\"metrics-test-a\"} 1",
                "leader_election_slowpath_total{name=\"metrics-test-a\"} 2"
            ]
        );
        assert!(a.starts_with("# HELP leader_election_master_status [ALPHA] Gauge of if"));
        let all = render_leader_election(None);
        assert!(all.contains("leader_election_master_status{name=\"metrics-test-b\"} 0\n"));
        assert!(all.contains("leader_election_master_status{name=\"metrics-test-a\"} 1\n"));
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(label_value("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
