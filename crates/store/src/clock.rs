//! Wall-clock time for TTLs, behind a trait so tests can move it by hand.

use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Milliseconds since the Unix epoch. TTL deadlines are stored as such, so they survive a
/// restart of the process.
pub trait Clock: Send + Sync + 'static {
    fn now_ms(&self) -> i64;
}

/// The system's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    }
}

/// A clock that only moves when told to.
#[derive(Debug)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(start_ms: i64) -> Self {
        ManualClock(AtomicI64::new(start_ms))
    }

    pub fn advance(&self, by: Duration) {
        let ms = i64::try_from(by.as_millis()).unwrap_or(i64::MAX);
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// The absolute deadline of a TTL, in Unix milliseconds (`0`: none).
pub(crate) fn deadline(clock: &dyn Clock, ttl: Option<Duration>) -> i64 {
    match ttl {
        None => 0,
        Some(ttl) => clock
            .now_ms()
            .saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
            .max(1),
    }
}
