//! Controller expectations (upstream's `ControllerExpectations` and
//! `UIDTrackingControllerExpectations`): a controller that creates or deletes N objects
//! records that it expects to see N adds or deletes in its cache, and does not act on the
//! same owner again until it has seen them (or five minutes have passed), so a lagging
//! cache never makes it create twice.
//!
//! Pure: the caller passes the time.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

/// Upstream's `ExpectationsTimeout`: expectations older than this are satisfied anyway.
pub const TIMEOUT: Duration = Duration::from_secs(300);

#[derive(Clone, Debug)]
struct Expected {
    adds: i64,
    dels: i64,
    since: Instant,
    /// Keys of the objects whose deletion is expected (UID tracking).
    deleting: HashSet<String>,
}

/// The expectations of one controller, by owner key (`namespace/name`).
#[derive(Debug, Default)]
pub struct Expectations {
    by_key: HashMap<String, Expected>,
}

impl Expectations {
    /// Whether the controller may act on `key` at `now`: nothing expected, everything
    /// expected seen, or the expectations expired.
    pub fn satisfied(&self, key: &str, now: Instant) -> bool {
        match self.by_key.get(key) {
            None => true,
            Some(e) => {
                (e.adds <= 0 && e.dels <= 0) || now.saturating_duration_since(e.since) > TIMEOUT
            }
        }
    }

    /// Records that `adds` creations and `dels` deletions are coming (replacing what was
    /// expected).
    pub fn set(&mut self, key: &str, adds: i64, dels: i64, now: Instant) {
        self.by_key.insert(
            key.to_string(),
            Expected {
                adds,
                dels,
                since: now,
                deleting: HashSet::new(),
            },
        );
    }

    pub fn expect_creations(&mut self, key: &str, adds: usize, now: Instant) {
        self.set(key, i64::try_from(adds).unwrap_or(i64::MAX), 0, now);
    }

    /// Expects the deletion of the objects `keys` (each seen once, by key).
    pub fn expect_deletions(&mut self, key: &str, keys: &[String], now: Instant) {
        self.set(key, 0, i64::try_from(keys.len()).unwrap_or(i64::MAX), now);
        if let Some(e) = self.by_key.get_mut(key) {
            e.deleting = keys.iter().cloned().collect();
        }
    }

    /// One expected creation was seen (or will never happen: a failed create).
    pub fn creation_observed(&mut self, key: &str) {
        if let Some(e) = self.by_key.get_mut(key) {
            e.adds -= 1;
        }
    }

    /// The deletion of `object` was seen (or failed); counted once per object.
    pub fn deletion_observed(&mut self, key: &str, object: &str) {
        if let Some(e) = self.by_key.get_mut(key)
            && e.deleting.remove(object)
        {
            e.dels -= 1;
        }
    }

    /// Lowers the expected creations by `n` (creations that were skipped).
    pub fn lower_creations(&mut self, key: &str, n: usize) {
        if let Some(e) = self.by_key.get_mut(key) {
            e.adds -= i64::try_from(n).unwrap_or(i64::MAX);
        }
    }

    /// Forgets `key` (its owner is gone).
    pub fn delete(&mut self, key: &str) {
        self.by_key.remove(key);
    }

    /// What is still expected for `key`: (creations, deletions).
    pub fn pending(&self, key: &str) -> Option<(i64, i64)> {
        self.by_key.get(key).map(|e| (e.adds, e.dels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn creations_and_deletions_are_waited_for() {
        let mut e = Expectations::default();
        let t0 = Instant::now();
        assert!(e.satisfied("ns/rs", t0), "nothing recorded");
        e.expect_creations("ns/rs", 2, t0);
        assert!(!e.satisfied("ns/rs", t0));
        e.creation_observed("ns/rs");
        assert!(!e.satisfied("ns/rs", t0));
        e.creation_observed("ns/rs");
        assert!(e.satisfied("ns/rs", t0));

        let pods = vec!["ns/a".to_string(), "ns/b".to_string()];
        e.expect_deletions("ns/rs", &pods, t0);
        e.deletion_observed("ns/rs", "ns/a");
        // The same deletion seen twice (an update then the delete) counts once.
        e.deletion_observed("ns/rs", "ns/a");
        assert_eq!(e.pending("ns/rs"), Some((0, 1)));
        e.deletion_observed("ns/rs", "ns/b");
        assert!(e.satisfied("ns/rs", t0));
    }

    #[test]
    fn expectations_expire_and_can_be_lowered() {
        let mut e = Expectations::default();
        let t0 = Instant::now();
        e.expect_creations("k", 5, t0);
        assert!(!e.satisfied("k", t0 + Duration::from_secs(299)));
        assert!(e.satisfied("k", t0 + Duration::from_secs(301)));
        e.expect_creations("k", 5, t0);
        e.lower_creations("k", 5);
        assert!(e.satisfied("k", t0));
        e.delete("k");
        assert_eq!(e.pending("k"), None);
    }
}
