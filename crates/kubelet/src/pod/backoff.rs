//! Upstream's `flowcontrol.Backoff` as the kubelet uses it: per key, a delay starting at
//! `initial` and doubling to `max`; an entry untouched for twice `max` starts over.
//! Container restarts use 10 s → 300 s keyed by pod and container, image pulls the same
//! keyed by pod uid and image. Time is passed in, so the logic is pure.

use std::collections::HashMap;
use std::time::Duration;

use jiff::Timestamp;

/// The kubelet's back-off start (`backOffPeriod`).
pub const INITIAL: Duration = Duration::from_secs(10);
/// The kubelet's back-off cap (`MaxContainerBackOff`, `maxImagePullBackOff`).
pub const MAX: Duration = Duration::from_secs(300);

#[derive(Debug, Clone, Copy)]
struct Entry {
    backoff: Duration,
    last_update: Timestamp,
}

/// Back-off state per key.
#[derive(Debug, Clone)]
pub struct Backoff {
    initial: Duration,
    max: Duration,
    entries: HashMap<String, Entry>,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff::new(INITIAL, MAX)
    }
}

fn since(later: Timestamp, earlier: Timestamp) -> Duration {
    let d = later.as_nanosecond() - earlier.as_nanosecond();
    Duration::from_nanos(u64::try_from(d.max(0)).unwrap_or(u64::MAX))
}

impl Backoff {
    pub fn new(initial: Duration, max: Duration) -> Backoff {
        Backoff {
            initial,
            max,
            entries: HashMap::new(),
        }
    }

    fn expired(&self, event: Timestamp, last_update: Timestamp) -> bool {
        since(event, last_update) > self.max * 2
    }

    /// The current delay of `key` (zero when it has none).
    pub fn get(&self, key: &str) -> Duration {
        self.entries.get(key).map_or(Duration::ZERO, |e| e.backoff)
    }

    /// Moves `key` one step on (`Next`): the first step, or a step after a stable period of
    /// twice `max`, is `initial`; the others double up to `max`.
    pub fn next(&mut self, key: &str, event: Timestamp, now: Timestamp) {
        let backoff = match self.entries.get(key) {
            Some(e) if !self.expired(event, e.last_update) => (e.backoff * 2).min(self.max),
            _ => self.initial,
        };
        self.entries.insert(
            key.to_string(),
            Entry {
                backoff,
                last_update: now,
            },
        );
    }

    /// `IsInBackOffSince`: whether less than the delay of `key` has passed since `event`.
    pub fn in_backoff_since(&self, key: &str, event: Timestamp, now: Timestamp) -> bool {
        match self.entries.get(key) {
            None => false,
            Some(e) if self.expired(event, e.last_update) => false,
            Some(e) => since(now, event) < e.backoff,
        }
    }

    /// `IsInBackOffSinceUpdate`: whether less than the delay has passed since the last step.
    pub fn in_backoff_since_update(&self, key: &str, now: Timestamp) -> bool {
        match self.entries.get(key) {
            None => false,
            Some(e) if self.expired(now, e.last_update) => false,
            Some(e) => since(now, e.last_update) < e.backoff,
        }
    }

    /// Forgets `key`.
    pub fn reset(&mut self, key: &str) {
        self.entries.remove(key);
    }

    /// Drops the entries untouched for twice `max` (`GC`).
    pub fn gc(&mut self, now: Timestamp) {
        let max2 = self.max * 2;
        self.entries
            .retain(|_, e| since(now, e.last_update) <= max2);
    }

    /// Drops every entry whose key starts with `prefix` (a pod's, once it is gone).
    pub fn forget_prefix(&mut self, prefix: &str) {
        self.entries.retain(|k, _| !k.starts_with(prefix));
    }
}

pub use api::gofmt::go_duration;

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + secs).unwrap()
    }

    #[test]
    fn doubles_to_the_cap_and_resets_after_a_stable_period() {
        let mut b = Backoff::default();
        assert!(!b.in_backoff_since("k", t(0), t(0)));
        b.next("k", t(0), t(0));
        assert_eq!(b.get("k"), Duration::from_secs(10));
        assert!(b.in_backoff_since("k", t(0), t(5)));
        assert!(!b.in_backoff_since("k", t(0), t(10)));
        let mut now = 10;
        for want in [20, 40, 80, 160, 300, 300] {
            b.next("k", t(now), t(now));
            assert_eq!(b.get("k"), Duration::from_secs(want));
            now += 1;
        }
        // Ran for more than 10 minutes: the next failure starts over.
        b.next("k", t(now + 601), t(now + 601));
        assert_eq!(b.get("k"), Duration::from_secs(10));
    }

    #[test]
    fn since_update() {
        let mut b = Backoff::default();
        b.next("img", t(0), t(0));
        assert!(b.in_backoff_since_update("img", t(9)));
        assert!(!b.in_backoff_since_update("img", t(10)));
        b.gc(t(1000));
        assert_eq!(b.get("img"), Duration::ZERO);
    }
}
