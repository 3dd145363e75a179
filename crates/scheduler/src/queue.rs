//! The scheduling queue, as upstream's PriorityQueue: an active heap (higher priority
//! first, then the earlier arrival: PrioritySort), a back-off heap (by default 1 s
//! doubling per attempt up to 10 s: `podInitialBackoffSeconds`, `podMaxBackoffSeconds`),
//! and the unschedulable pods, which cluster events move back (to
//! back-off while their back-off lasts) and which are flushed after 5 minutes anyway.
//! A pod whose cycle overlapped a move request goes to back-off instead of waiting for
//! the next event. Time is passed in, so the queue is tested without sleeping.

use std::cmp::{Ordering, Reverse};
use std::collections::{BinaryHeap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::model::PodInfo;

pub const INITIAL_BACKOFF: Duration = Duration::from_secs(1);
pub const MAX_BACKOFF: Duration = Duration::from_secs(10);
pub const MAX_IN_UNSCHEDULABLE: Duration = Duration::from_secs(5 * 60);

/// How long a pod that failed waits before its next attempt: `initial` doubled per
/// attempt since, up to `max` (upstream's `podInitialBackoffSeconds`,
/// `podMaxBackoffSeconds`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Backoff {
    pub initial: Duration,
    pub max: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: INITIAL_BACKOFF,
            max: MAX_BACKOFF,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Where {
    Active,
    Backoff,
    Unschedulable,
    InFlight,
}

#[derive(Debug)]
struct Queued {
    info: Arc<PodInfo>,
    attempts: u32,
    seq: u64,
    place: Where,
    /// When the last attempt failed (back-off counts from here).
    failed_at: Option<Instant>,
    /// The scheduling cycle of the last pop.
    cycle: u64,
    /// Updated while in flight: goes back to active when done.
    updated_in_flight: bool,
}

impl Queued {
    fn backoff(&self, b: Backoff) -> Duration {
        let mut d = b.initial;
        for _ in 1..self.attempts {
            d = d.saturating_mul(2);
            if d >= b.max {
                return b.max;
            }
        }
        d.min(b.max)
    }

    fn backoff_until(&self, b: Backoff) -> Option<Instant> {
        self.failed_at.map(|t| t + self.backoff(b))
    }
}

#[derive(Debug, PartialEq, Eq)]
struct ActiveKey {
    priority: i32,
    seq: u64,
    uid: String,
}

impl Ord for ActiveKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.priority
            .cmp(&other.priority)
            .then_with(|| other.seq.cmp(&self.seq))
    }
}

impl PartialOrd for ActiveKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Counts per sub-queue, for metrics and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Lengths {
    pub active: usize,
    pub backoff: usize,
    pub unschedulable: usize,
    pub in_flight: usize,
}

impl Lengths {
    fn of(&mut self, place: Where) -> &mut usize {
        match place {
            Where::Active => &mut self.active,
            Where::Backoff => &mut self.backoff,
            Where::Unschedulable => &mut self.unschedulable,
            Where::InFlight => &mut self.in_flight,
        }
    }

    /// A queued pod moves to `to`.
    fn shift(&mut self, q: &mut Queued, to: Where) {
        *self.of(q.place) -= 1;
        *self.of(to) += 1;
        q.place = to;
    }
}

/// The queue of pods waiting for a node.
#[derive(Debug, Default)]
pub struct SchedulingQueue {
    pods: HashMap<String, Queued>,
    /// How many of `pods` are in each place (kept as they move, read every cycle).
    lengths: Lengths,
    active: BinaryHeap<ActiveKey>,
    backoff: BinaryHeap<Reverse<(Instant, u64, String)>>,
    seq: u64,
    cycle: u64,
    move_request_cycle: u64,
    backoff_bounds: Backoff,
}

/// Whether an update to a queued pod may change where it fits.
fn scheduling_relevant_change(old: &PodInfo, new: &PodInfo) -> bool {
    old.labels != new.labels
        || old.requests != new.requests
        || old.tolerations != new.tolerations
        || old.node_selector != new.node_selector
        || old.required_terms != new.required_terms
        || old.priority != new.priority
        || old.host_ports != new.host_ports
        || old.spread.len() != new.spread.len()
        || old.affinity.len() != new.affinity.len()
        || old.anti_affinity.len() != new.anti_affinity.len()
}

impl SchedulingQueue {
    pub fn new() -> SchedulingQueue {
        SchedulingQueue::default()
    }

    /// A queue whose failed pods back off as `backoff` says.
    pub fn with_backoff(backoff: Backoff) -> SchedulingQueue {
        SchedulingQueue {
            backoff_bounds: backoff,
            ..SchedulingQueue::default()
        }
    }

    fn push_active(&mut self, uid: &str) {
        let Some(q) = self.pods.get_mut(uid) else {
            return;
        };
        self.lengths.shift(q, Where::Active);
        self.active.push(ActiveKey {
            priority: q.info.priority,
            seq: q.seq,
            uid: uid.to_string(),
        });
    }

    fn push_backoff(&mut self, uid: &str, now: Instant) {
        let Some(q) = self.pods.get_mut(uid) else {
            return;
        };
        let until = q.backoff_until(self.backoff_bounds).unwrap_or(now);
        if until <= now {
            self.push_active(uid);
            return;
        }
        self.lengths.shift(q, Where::Backoff);
        let seq = q.seq;
        self.backoff.push(Reverse((until, seq, uid.to_string())));
    }

    /// A new pending pod, or an update to one.
    pub fn add(&mut self, info: Arc<PodInfo>, now: Instant) {
        let uid = info.uid.clone();
        if let Some(q) = self.pods.get_mut(&uid) {
            let relevant = scheduling_relevant_change(&q.info, &info);
            let priority_changed = q.info.priority != info.priority;
            q.info = info;
            match q.place {
                Where::InFlight => q.updated_in_flight |= relevant,
                Where::Unschedulable if relevant => self.push_backoff(&uid, now),
                Where::Active if priority_changed => self.push_active(&uid),
                _ => {}
            }
            return;
        }
        self.seq += 1;
        self.lengths.active += 1;
        self.pods.insert(
            uid.clone(),
            Queued {
                info,
                attempts: 0,
                seq: self.seq,
                place: Where::Active,
                failed_at: None,
                cycle: 0,
                updated_in_flight: false,
            },
        );
        self.push_active(&uid);
    }

    /// The pod was deleted or bound elsewhere.
    pub fn delete(&mut self, uid: &str) {
        if let Some(q) = self.pods.remove(uid) {
            *self.lengths.of(q.place) -= 1;
        }
    }

    pub fn contains(&self, uid: &str) -> bool {
        self.pods.contains_key(uid)
    }

    /// Moves finished back-offs to the active heap.
    fn flush_backoff(&mut self, now: Instant) {
        while let Some(Reverse((until, seq, uid))) = self.backoff.peek().cloned() {
            if until > now {
                break;
            }
            self.backoff.pop();
            let current = self
                .pods
                .get(&uid)
                .is_some_and(|q| q.place == Where::Backoff && q.seq == seq);
            if current {
                self.push_active(&uid);
            }
        }
    }

    /// The next pod to schedule, with its cycle number.
    pub fn pop(&mut self, now: Instant) -> Option<(Arc<PodInfo>, u64)> {
        self.flush_backoff(now);
        while let Some(key) = self.active.pop() {
            let Some(q) = self.pods.get_mut(&key.uid) else {
                continue;
            };
            if q.place != Where::Active || q.seq != key.seq || q.info.priority != key.priority {
                continue;
            }
            self.cycle += 1;
            self.lengths.shift(q, Where::InFlight);
            q.attempts += 1;
            q.cycle = self.cycle;
            q.updated_in_flight = false;
            return Some((Arc::clone(&q.info), self.cycle));
        }
        None
    }

    /// The pod was placed: it leaves the queue.
    pub fn done(&mut self, uid: &str) {
        self.delete(uid);
    }

    /// The pod did not fit: it waits for a cluster event (or back-off when one came
    /// during its cycle, or when it was updated meanwhile).
    pub fn unschedulable(&mut self, uid: &str, now: Instant) {
        let move_cycle = self.move_request_cycle;
        let Some(q) = self.pods.get_mut(uid) else {
            return;
        };
        q.failed_at = Some(now);
        if q.updated_in_flight || move_cycle >= q.cycle {
            self.push_backoff(uid, now);
        } else {
            self.lengths.shift(q, Where::Unschedulable);
        }
    }

    /// Scheduling or binding failed with an error: retry after back-off.
    pub fn error(&mut self, uid: &str, now: Instant) {
        if let Some(q) = self.pods.get_mut(uid) {
            q.failed_at = Some(now);
            self.push_backoff(uid, now);
        }
    }

    /// A cluster event that may make pods fit (a node added or changed, a pod deleted):
    /// every unschedulable pod moves to back-off or active.
    pub fn move_all(&mut self, now: Instant) {
        self.move_request_cycle = self.cycle;
        let waiting: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, q)| q.place == Where::Unschedulable)
            .map(|(k, _)| k.clone())
            .collect();
        for uid in waiting {
            self.push_backoff(&uid, now);
        }
    }

    /// Unschedulable pods that waited longer than 5 minutes go back anyway.
    pub fn flush_unschedulable(&mut self, now: Instant) {
        let stale: Vec<String> = self
            .pods
            .iter()
            .filter(|(_, q)| {
                q.place == Where::Unschedulable
                    && q.failed_at
                        .is_some_and(|t| now.duration_since(t) >= MAX_IN_UNSCHEDULABLE)
            })
            .map(|(k, _)| k.clone())
            .collect();
        for uid in stale {
            self.push_backoff(&uid, now);
        }
    }

    /// When the earliest back-off ends.
    pub fn next_backoff(&self) -> Option<Instant> {
        self.backoff.peek().map(|Reverse((t, _, _))| *t)
    }

    pub fn lengths(&self) -> Lengths {
        self.lengths
    }

    /// How many times the pod was tried.
    pub fn attempts(&self, uid: &str) -> u32 {
        self.pods.get(uid).map_or(0, |q| q.attempts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The lengths counted from scratch, which the kept ones must equal.
    fn recount(q: &SchedulingQueue) -> Lengths {
        let mut l = Lengths::default();
        for p in q.pods.values() {
            *l.of(p.place) += 1;
        }
        l
    }

    #[test]
    fn kept_lengths_equal_a_recount_through_every_move() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new();
        let mut now = t0;
        for i in 0..40u32 {
            let uid = format!("p{}", i % 13);
            match i % 7 {
                0 | 1 => q.add(pod(&uid, i32::try_from(i % 3).unwrap()), now),
                2 => {
                    if let Some((p, _)) = q.pop(now) {
                        q.unschedulable(&p.uid, now);
                    }
                }
                3 => {
                    if let Some((p, _)) = q.pop(now) {
                        q.error(&p.uid, now);
                    }
                }
                4 => q.move_all(now),
                5 => {
                    if let Some((p, _)) = q.pop(now) {
                        q.done(&p.uid);
                    }
                }
                _ => q.delete(&uid),
            }
            assert_eq!(q.lengths(), recount(&q), "after step {i}");
            now += Duration::from_millis(700);
        }
        q.flush_unschedulable(now + MAX_IN_UNSCHEDULABLE);
        assert_eq!(q.lengths(), recount(&q));
    }

    fn pod(uid: &str, priority: i32) -> Arc<PodInfo> {
        Arc::new(PodInfo {
            uid: uid.into(),
            name: uid.into(),
            namespace: "default".into(),
            priority,
            ..PodInfo::default()
        })
    }

    #[test]
    fn higher_priority_first_then_arrival_order() {
        let now = Instant::now();
        let mut q = SchedulingQueue::new();
        q.add(pod("a", 0), now);
        q.add(pod("b", 10), now);
        q.add(pod("c", 0), now);
        let order: Vec<String> = std::iter::from_fn(|| q.pop(now))
            .map(|(p, _)| p.uid.clone())
            .collect();
        assert_eq!(order, ["b", "a", "c"]);
    }

    #[test]
    fn unschedulable_pods_wait_for_an_event_then_back_off() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new();
        q.add(pod("a", 0), t0);
        let (p, _) = q.pop(t0).unwrap();
        q.unschedulable(&p.uid, t0);
        assert_eq!(q.lengths().unschedulable, 1);
        assert!(q.pop(t0 + Duration::from_secs(60)).is_none());
        // A node appears half a second later: back-off (1 s) still runs.
        q.move_all(t0 + Duration::from_millis(500));
        assert_eq!(q.lengths().backoff, 1);
        assert!(q.pop(t0 + Duration::from_millis(600)).is_none());
        assert!(q.pop(t0 + Duration::from_millis(1000)).is_some());
    }

    #[test]
    fn a_move_during_the_cycle_sends_the_pod_to_backoff() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new();
        q.add(pod("a", 0), t0);
        let (p, _) = q.pop(t0).unwrap();
        q.move_all(t0);
        q.unschedulable(&p.uid, t0);
        assert_eq!(q.lengths().backoff, 1);
        assert!(q.pop(t0 + INITIAL_BACKOFF).is_some());
    }

    /// The waits of a pod failing six times in a row.
    fn waits(mut q: SchedulingQueue) -> Vec<u64> {
        let t0 = Instant::now();
        q.add(pod("a", 0), t0);
        let mut now = t0;
        let mut waits = Vec::new();
        for _ in 0..6 {
            let (p, _) = q.pop(now).unwrap();
            q.error(&p.uid, now);
            let until = q.next_backoff().unwrap();
            waits.push(until.duration_since(now).as_secs());
            now = until;
        }
        waits
    }

    #[test]
    fn backoff_doubles_up_to_ten_seconds() {
        assert_eq!(waits(SchedulingQueue::new()), [1, 2, 4, 8, 10, 10]);
        // podInitialBackoffSeconds: 3, podMaxBackoffSeconds: 20.
        let q = SchedulingQueue::with_backoff(Backoff {
            initial: Duration::from_secs(3),
            max: Duration::from_secs(20),
        });
        assert_eq!(waits(q), [3, 6, 12, 20, 20, 20]);
    }

    #[test]
    fn stale_unschedulable_pods_are_flushed_after_five_minutes() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new();
        q.add(pod("a", 0), t0);
        let (p, _) = q.pop(t0).unwrap();
        q.unschedulable(&p.uid, t0);
        q.flush_unschedulable(t0 + Duration::from_secs(299));
        assert_eq!(q.lengths().unschedulable, 1);
        q.flush_unschedulable(t0 + MAX_IN_UNSCHEDULABLE);
        assert_eq!(q.lengths().active, 1);
    }

    #[test]
    fn relevant_updates_requeue_and_status_updates_do_not() {
        let t0 = Instant::now();
        let mut q = SchedulingQueue::new();
        q.add(pod("a", 0), t0);
        let (p, _) = q.pop(t0).unwrap();
        q.unschedulable(&p.uid, t0);
        let mut same = (*p).clone();
        same.marked_unschedulable = true;
        q.add(Arc::new(same.clone()), t0);
        assert_eq!(q.lengths().unschedulable, 1);
        same.labels.insert("x", "y");
        q.add(Arc::new(same), t0 + INITIAL_BACKOFF);
        assert_eq!(q.lengths().active, 1);
        q.delete("a");
        assert!(q.pop(t0 + MAX_BACKOFF).is_none());
    }
}
