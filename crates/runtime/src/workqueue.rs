//! A work queue with upstream's semantics (`workqueue.Type`, `DelayingInterface`,
//! `RateLimitingInterface`):
//!
//! - an item added while it waits is queued once (`dirty`);
//! - an item added while a worker holds it is queued again only when the worker calls
//!   [`WorkQueue::done`] (`processing`), so no two workers ever hold the same item;
//! - [`WorkQueue::add_after`] adds an item later (the earliest of several requests wins);
//! - [`WorkQueue::add_rate_limited`] adds it after its rate limiter's delay,
//!   [`WorkQueue::forget`] resets its back-off;
//! - after [`WorkQueue::shut_down`] nothing new is queued and [`WorkQueue::get`] returns
//!   `None` once the queue is empty;
//! - a queue made with [`WorkQueue::named`] counts into upstream's `workqueue_*` metrics
//!   under its name ([`crate::metrics`]), as client-go's named queues do.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

use crate::metrics::{LiveQueue, QueueSeries, queue_series};
use crate::ratelimit::ControllerRateLimiter;

/// A named queue's timings (client-go's `defaultQueueMetrics`): when each queued item was
/// first added, when each item a worker holds was taken.
struct Timing<T> {
    series: Arc<QueueSeries>,
    added: HashMap<T, Instant>,
    taken: HashMap<T, Instant>,
}

struct State<T> {
    queue: VecDeque<T>,
    dirty: HashSet<T>,
    processing: HashSet<T>,
    /// Items waiting for a delayed add, with the time they are due.
    waiting: HashMap<T, Instant>,
    limiter: ControllerRateLimiter<T>,
    shutting_down: bool,
    /// `None` for a queue without a name (no metrics, as upstream).
    timing: Option<Timing<T>>,
}

struct Shared<T> {
    state: Mutex<State<T>>,
    ready: Notify,
}

/// A cloneable handle to one queue.
pub struct WorkQueue<T> {
    shared: Arc<Shared<T>>,
}

impl<T> Clone for WorkQueue<T> {
    fn clone(&self) -> Self {
        WorkQueue {
            shared: Arc::clone(&self.shared),
        }
    }
}

impl<T: Eq + Hash + Clone + Send + 'static> Default for WorkQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Eq + Hash + Clone + Send + 'static> WorkQueue<T> {
    /// A queue with upstream's default controller rate limiter.
    pub fn new() -> Self {
        WorkQueue {
            shared: Arc::new(Shared {
                state: Mutex::new(State {
                    queue: VecDeque::new(),
                    dirty: HashSet::new(),
                    processing: HashSet::new(),
                    waiting: HashMap::new(),
                    limiter: ControllerRateLimiter::default(),
                    shutting_down: false,
                    timing: None,
                }),
                ready: Notify::new(),
            }),
        }
    }

    /// A queue whose adds, retries, waits and work count into the `workqueue_*` metrics
    /// labelled `name` (upstream's `NewNamedRateLimitingQueue`).
    pub fn named(name: &str) -> Self {
        let queue = Self::new();
        let series = queue_series(name);
        let live: Arc<dyn LiveQueue> = queue.shared.clone();
        series.attach(Arc::downgrade(&live));
        queue.state().timing = Some(Timing {
            series,
            added: HashMap::new(),
            taken: HashMap::new(),
        });
        queue
    }

    fn state(&self) -> MutexGuard<'_, State<T>> {
        self.shared.lock()
    }

    /// Queues `item` unless it is already queued; an item being processed is queued
    /// again when it is done.
    pub fn add(&self, item: T) {
        let mut s = self.state();
        if s.shutting_down || s.dirty.contains(&item) {
            return;
        }
        if let Some(t) = &mut s.timing {
            t.series.added();
            t.added.entry(item.clone()).or_insert_with(Instant::now);
        }
        s.dirty.insert(item.clone());
        if s.processing.contains(&item) {
            return;
        }
        s.queue.push_back(item);
        drop(s);
        self.shared.ready.notify_one();
    }

    /// The next item, waiting for one; `None` once shut down and drained. The caller must
    /// call [`WorkQueue::done`] with it.
    pub async fn get(&self) -> Option<T> {
        loop {
            let notified = self.shared.ready.notified();
            {
                let mut s = self.state();
                if let Some(item) = s.queue.pop_front() {
                    s.dirty.remove(&item);
                    s.processing.insert(item.clone());
                    if let Some(t) = &mut s.timing {
                        let now = Instant::now();
                        t.taken.insert(item.clone(), now);
                        if let Some(added) = t.added.remove(&item) {
                            t.series.taken(now.duration_since(added).as_secs_f64());
                        }
                    }
                    // Another waiter may take the next item.
                    if !s.queue.is_empty() {
                        self.shared.ready.notify_one();
                    }
                    return Some(item);
                }
                if s.shutting_down {
                    self.shared.ready.notify_one();
                    return None;
                }
            }
            notified.await;
        }
    }

    /// Marks `item` processed; if it was added meanwhile, it is queued again.
    pub fn done(&self, item: &T) {
        let mut s = self.state();
        if let Some(t) = &mut s.timing
            && let Some(taken) = t.taken.remove(item)
        {
            t.series.finished(taken.elapsed().as_secs_f64());
        }
        s.processing.remove(item);
        if s.dirty.contains(item) {
            s.queue.push_back(item.clone());
            drop(s);
            self.shared.ready.notify_one();
        }
    }

    /// Adds `item` after `delay` (at once when zero). Of several pending requests for one
    /// item the earliest wins. Counted as a retry (`workqueue_retries_total`), as
    /// upstream counts every delayed add.
    pub fn add_after(&self, item: T, delay: Duration) {
        let due = Instant::now() + delay;
        {
            let mut s = self.state();
            if s.shutting_down {
                return;
            }
            if let Some(t) = &s.timing {
                t.series.retried();
            }
            if !delay.is_zero() {
                match s.waiting.get(&item) {
                    Some(existing) if *existing <= due => return,
                    _ => {
                        s.waiting.insert(item.clone(), due);
                    }
                }
            }
        }
        if delay.is_zero() {
            self.add(item);
            return;
        }
        let queue = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            let fire = {
                let mut s = queue.state();
                match s.waiting.get(&item) {
                    // Still the earliest request for this item.
                    Some(d) if *d <= Instant::now() => {
                        s.waiting.remove(&item);
                        true
                    }
                    _ => false,
                }
            };
            if fire {
                queue.add(item);
            }
        });
    }

    /// Adds `item` after its rate limiter's delay (a retry).
    pub fn add_rate_limited(&self, item: T) {
        let delay = self.state().limiter.when(&item, Instant::now());
        self.add_after(item, delay);
    }

    /// Resets `item`'s back-off (it succeeded).
    pub fn forget(&self, item: &T) {
        self.state().limiter.forget(item);
    }

    /// How often `item` was retried since it was last forgotten.
    pub fn num_requeues(&self, item: &T) -> u32 {
        self.state().limiter.num_requeues(item)
    }

    /// How many items are queued (not counting those being processed or waiting).
    pub fn len(&self) -> usize {
        self.state().queue.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops queueing: [`WorkQueue::get`] drains what is queued, then returns `None`.
    pub fn shut_down(&self) {
        self.state().shutting_down = true;
        self.shared.ready.notify_waiters();
        self.shared.ready.notify_one();
    }

    pub fn is_shutting_down(&self) -> bool {
        self.state().shutting_down
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, State<T>> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

impl<T: Send> LiveQueue for Shared<T> {
    fn gauges(&self) -> (usize, Vec<Instant>) {
        let s = self.lock();
        // Upstream's depth: adds not yet taken, including those of items a worker holds
        // (queued again when it is done).
        let held = s
            .timing
            .as_ref()
            .map(|t| t.taken.values().copied().collect());
        (s.dirty.len(), held.unwrap_or_default())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[tokio::test]
    async fn deduplicates_and_orders() {
        let q = WorkQueue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        assert_eq!(q.get().await, Some("a"));
        assert_eq!(q.get().await, Some("b"));
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn an_item_being_processed_is_requeued_on_done() {
        let q = WorkQueue::new();
        q.add("a");
        let a = q.get().await.unwrap();
        // Added while held: not handed to another worker now…
        q.add("a");
        assert!(q.is_empty());
        // …but queued again once done, once.
        q.add("a");
        q.done(&a);
        assert_eq!(q.len(), 1);
        assert_eq!(q.get().await, Some("a"));
        q.done(&"a");
        assert!(q.is_empty());
    }

    #[tokio::test]
    async fn workers_wait_and_shut_down() {
        let q: WorkQueue<u32> = WorkQueue::new();
        let workers: Vec<_> = (0..3)
            .map(|_| {
                let q = q.clone();
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    while let Some(i) = q.get().await {
                        got.push(i);
                        q.done(&i);
                    }
                    got
                })
            })
            .collect();
        for i in 0..100 {
            q.add(i);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        q.shut_down();
        q.add(1000);
        let mut all = Vec::new();
        for w in workers {
            all.extend(w.await.unwrap());
        }
        all.sort_unstable();
        assert_eq!(all, (0..100).collect::<Vec<_>>());
    }

    #[tokio::test]
    async fn delayed_adds_keep_the_earliest() {
        let q = WorkQueue::new();
        q.add_after("x", Duration::from_millis(300));
        q.add_after("x", Duration::from_millis(20));
        q.add_after("x", Duration::from_millis(500));
        assert!(q.is_empty());
        let t = Instant::now();
        assert_eq!(q.get().await, Some("x"));
        assert!(
            t.elapsed() < Duration::from_millis(250),
            "{:?}",
            t.elapsed()
        );
        q.done(&"x");
        tokio::time::sleep(Duration::from_millis(600)).await;
        assert!(q.is_empty(), "the later requests were dropped");
    }

    #[tokio::test]
    async fn rate_limited_retries_back_off() {
        let q = WorkQueue::new();
        q.add_rate_limited("r");
        q.add_rate_limited("r");
        assert_eq!(q.num_requeues(&"r"), 2);
        assert_eq!(q.get().await, Some("r"));
        q.forget(&"r");
        assert_eq!(q.num_requeues(&"r"), 0);
    }

    /// The line of series `metric{name="<queue>"}` in the rendered metrics.
    fn series(text: &str, metric: &str, queue: &str) -> String {
        let prefix = format!("{metric}{{name=\"{queue}\"}} ");
        text.lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {prefix} in\n{text}"))
            .to_string()
    }

    #[tokio::test]
    async fn a_named_queue_counts_as_upstreams_metrics() {
        let q = WorkQueue::named("test-named-queue");
        q.add("a");
        q.add("a"); // already queued: not an add
        q.add("b");
        let text = crate::metrics::render_workqueues();
        assert_eq!(
            series(&text, "workqueue_adds_total", "test-named-queue"),
            "2"
        );
        assert_eq!(series(&text, "workqueue_depth", "test-named-queue"), "2");
        let a = q.get().await.unwrap();
        // Added again while a worker holds it: an add, and in the depth until taken.
        q.add("a");
        tokio::time::sleep(Duration::from_millis(20)).await;
        let text = crate::metrics::render_workqueues();
        assert_eq!(
            series(&text, "workqueue_adds_total", "test-named-queue"),
            "3"
        );
        assert_eq!(series(&text, "workqueue_depth", "test-named-queue"), "2");
        let held: f64 = series(
            &text,
            "workqueue_unfinished_work_seconds",
            "test-named-queue",
        )
        .parse()
        .unwrap();
        let longest: f64 = series(
            &text,
            "workqueue_longest_running_processor_seconds",
            "test-named-queue",
        )
        .parse()
        .unwrap();
        assert!(
            held >= 0.02 && longest >= 0.02 && longest <= held,
            "{held} {longest}"
        );
        assert!(
            text.contains("workqueue_queue_duration_seconds_count{name=\"test-named-queue\"} 1\n")
        );
        q.done(&a);
        assert_eq!(q.get().await, Some("b"));
        q.done(&"b");
        // Every delayed add is a retry, as upstream's AddAfter counts them.
        q.add_rate_limited("c");
        q.add_after("d", Duration::ZERO);
        let text = crate::metrics::render_workqueues();
        assert_eq!(
            series(&text, "workqueue_retries_total", "test-named-queue"),
            "2"
        );
        assert!(
            text.contains("workqueue_work_duration_seconds_count{name=\"test-named-queue\"} 2\n")
        );
        assert_eq!(
            series(
                &text,
                "workqueue_unfinished_work_seconds",
                "test-named-queue"
            ),
            "0"
        );
        // The series outlive the queue (its depth, of "c" and "d", is then gone with it;
        // the delayed add's task holds the queue until it has added "c").
        drop(q);
        tokio::time::sleep(Duration::from_millis(100)).await;
        let text = crate::metrics::render_workqueues();
        assert_eq!(series(&text, "workqueue_depth", "test-named-queue"), "0");
        assert!(text.contains("workqueue_adds_total{name=\"test-named-queue\"} "));
        // A queue without a name counts nowhere.
        let unnamed = WorkQueue::new();
        unnamed.add("x");
        assert_eq!(
            crate::metrics::render_workqueues()
                .matches("name=\"\"")
                .count(),
            0
        );
    }
}
