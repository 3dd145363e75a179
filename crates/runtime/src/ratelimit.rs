//! Rate limiters of work-queue retries (upstream's `workqueue` rate limiters): how long
//! an item waits before it is handed out again. Pure: the caller passes the time.

use std::collections::HashMap;
use std::hash::Hash;
use std::time::{Duration, Instant};

/// Per-item exponential back-off: `base * 2^failures`, at most `max`
/// (`ItemExponentialFailureRateLimiter`).
#[derive(Debug)]
pub struct ItemExponential<T> {
    base: Duration,
    max: Duration,
    failures: HashMap<T, u32>,
}

impl<T: Eq + Hash + Clone> ItemExponential<T> {
    pub fn new(base: Duration, max: Duration) -> Self {
        ItemExponential {
            base,
            max,
            failures: HashMap::new(),
        }
    }

    /// The delay of `item`'s next retry (and one more failure recorded).
    pub fn when(&mut self, item: &T) -> Duration {
        let n = self.failures.entry(item.clone()).or_insert(0);
        let exp = *n;
        *n = n.saturating_add(1);
        let factor = 2u32.checked_pow(exp).unwrap_or(u32::MAX);
        self.base
            .checked_mul(factor)
            .map_or(self.max, |d| d.min(self.max))
    }

    pub fn forget(&mut self, item: &T) {
        self.failures.remove(item);
    }

    pub fn num_requeues(&self, item: &T) -> u32 {
        self.failures.get(item).copied().unwrap_or(0)
    }
}

/// An overall token bucket (`BucketRateLimiter` over `rate.NewLimiter(qps, burst)`): the
/// delay until a token is free, reserving it.
#[derive(Debug)]
pub struct Bucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    last: Option<Instant>,
}

impl Bucket {
    pub fn new(qps: f64, burst: u32) -> Self {
        Bucket {
            qps,
            burst: f64::from(burst),
            tokens: f64::from(burst),
            last: None,
        }
    }

    /// Reserves one token at `now`: how long until it is available.
    pub fn reserve(&mut self, now: Instant) -> Duration {
        if let Some(last) = self.last {
            let elapsed = now.saturating_duration_since(last).as_secs_f64();
            self.tokens = (self.tokens + elapsed * self.qps).min(self.burst);
        }
        self.last = Some(now);
        self.tokens -= 1.0;
        if self.tokens >= 0.0 || self.qps <= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.qps)
        }
    }
}

/// Upstream's `DefaultControllerRateLimiter`: the longer of per-item exponential back-off
/// (5 ms to 1000 s) and an overall bucket of 10 qps with a burst of 100.
#[derive(Debug)]
pub struct ControllerRateLimiter<T> {
    item: ItemExponential<T>,
    bucket: Bucket,
}

impl<T: Eq + Hash + Clone> Default for ControllerRateLimiter<T> {
    fn default() -> Self {
        ControllerRateLimiter {
            item: ItemExponential::new(Duration::from_millis(5), Duration::from_secs(1000)),
            bucket: Bucket::new(10.0, 100),
        }
    }
}

impl<T: Eq + Hash + Clone> ControllerRateLimiter<T> {
    pub fn when(&mut self, item: &T, now: Instant) -> Duration {
        self.item.when(item).max(self.bucket.reserve(now))
    }

    pub fn forget(&mut self, item: &T) {
        self.item.forget(item);
    }

    pub fn num_requeues(&self, item: &T) -> u32 {
        self.item.num_requeues(item)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_per_item() {
        let mut r = ItemExponential::new(Duration::from_millis(5), Duration::from_secs(1));
        let d: Vec<u128> = (0..4).map(|_| r.when(&"a").as_millis()).collect();
        assert_eq!(d, vec![5, 10, 20, 40]);
        assert_eq!(r.when(&"b"), Duration::from_millis(5));
        assert_eq!(r.num_requeues(&"a"), 4);
        for _ in 0..40 {
            r.when(&"a");
        }
        assert_eq!(
            r.when(&"a"),
            Duration::from_secs(1),
            "capped, never overflowing"
        );
        r.forget(&"a");
        assert_eq!(r.when(&"a"), Duration::from_millis(5));
    }

    #[test]
    fn bucket_allows_a_burst_then_paces() {
        let mut b = Bucket::new(10.0, 3);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(b.reserve(t0), Duration::ZERO);
        }
        let d = b.reserve(t0);
        assert!((95..=105).contains(&d.as_millis()), "{d:?}");
        let d = b.reserve(t0);
        assert!((195..=205).contains(&d.as_millis()), "{d:?}");
        // A second later the bucket has refilled (up to its burst).
        let t1 = t0 + Duration::from_secs(2);
        assert_eq!(b.reserve(t1), Duration::ZERO);
    }

    #[test]
    fn controller_limiter_takes_the_longer_wait() {
        let mut r: ControllerRateLimiter<&str> = ControllerRateLimiter::default();
        let now = Instant::now();
        assert_eq!(r.when(&"x", now), Duration::from_millis(5));
        assert_eq!(r.when(&"x", now), Duration::from_millis(10));
        r.forget(&"x");
        assert_eq!(r.num_requeues(&"x"), 0);
    }
}
