//! Leader election end to end over the in-memory Lease store, on paused tokio time: two
//! candidates share one lock; exactly one leads, and the other takes over when the leader
//! stops renewing (after a lease duration), is cut off (after it stepped down), or hands
//! the lease back on shutdown (at its next try).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::{SignedDuration, Timestamp};
use runtime::leaderelection::{
    Clock, DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD, FakeLeaseClient,
    JITTER_FACTOR, LeaderElectionConfig, LeaderElector, LeaderHealth, LeadershipLost, RunOutcome,
    WATCHDOG_TOLERANCE,
};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

const NAMESPACE: &str = "kube-system";
const NAME: &str = "kube-controller-manager";

/// Wall time that follows tokio's (paused) clock, from 1 700 000 000 s.
fn clock() -> Clock {
    let start = Instant::now();
    let base = Timestamp::from_second(1_700_000_000).unwrap();
    Arc::new(move || {
        let elapsed = SignedDuration::try_from(Instant::now() - start).unwrap();
        base.checked_add(elapsed).unwrap()
    })
}

/// What the candidates' work saw, with when.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<(String, Instant)>>>);

impl Log {
    fn push(&self, what: String) {
        self.0.lock().unwrap().push((what, Instant::now()));
    }

    fn entries(&self) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|(w, _)| w.clone())
            .collect()
    }

    fn when(&self, what: &str) -> Option<Instant> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .find(|(w, _)| w == what)
            .map(|(_, t)| *t)
    }
}

struct Candidate {
    shutdown: Option<oneshot::Sender<()>>,
    handle: JoinHandle<RunOutcome>,
    leading: watch::Receiver<bool>,
}

impl Candidate {
    /// Starts `identity` campaigning through `client`, running `work` while it leads.
    fn spawn_with<F, Fut>(identity: &str, client: FakeLeaseClient, release: bool, work: F) -> Self
    where
        F: FnOnce(LeadershipLost) -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let mut config = LeaderElectionConfig::new(NAMESPACE, NAME, identity);
        config.release_on_cancel = release;
        let elector = LeaderElector::new(config, client, clock()).unwrap();
        assert!(!elector.is_leader());
        let leading = elector.leading();
        let (tx, rx) = oneshot::channel::<()>();
        let shutdown = async move {
            let _ = rx.await;
        };
        let handle = tokio::spawn(elector.run(shutdown, work));
        Candidate {
            shutdown: Some(tx),
            handle,
            leading,
        }
    }

    /// Starts `identity` with a work that logs when it starts and when it sees the loss.
    fn spawn(identity: &str, client: FakeLeaseClient, release: bool, log: &Log) -> Self {
        let log = log.clone();
        let id = identity.to_string();
        Self::spawn_with(identity, client, release, move |lost| async move {
            log.push(format!("{id} started"));
            lost.await;
            log.push(format!("{id} lost"));
        })
    }

    fn is_leading(&self) -> bool {
        *self.leading.borrow()
    }

    /// Waits until it leads; returns when.
    async fn until_leading(&mut self) -> Instant {
        self.leading.wait_for(|l| *l).await.unwrap();
        Instant::now()
    }

    /// Fires its shutdown signal and waits for `run` to return.
    async fn stop(mut self) -> RunOutcome {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.handle.await.unwrap()
    }
}

fn holder(fake: &FakeLeaseClient) -> String {
    fake.record(NAMESPACE, NAME).unwrap().holder_identity
}

fn transitions(fake: &FakeLeaseClient) -> i32 {
    fake.record(NAMESPACE, NAME).unwrap().leader_transitions
}

/// The longest a candidate waits between two tries to acquire.
fn max_acquire_wait() -> Duration {
    DEFAULT_RETRY_PERIOD.mul_f64(1.0 + JITTER_FACTOR)
}

#[tokio::test(start_paused = true)]
async fn two_candidates_exactly_one_leads() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    let a = Candidate::spawn("a", fake.connection(), false, &log);
    let b = Candidate::spawn("b", fake.connection(), false, &log);

    // Both race to create the lease; one create is a 409. Watch for a minute of renewals.
    let mut leaders = Vec::new();
    for _ in 0..120 {
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!(a.is_leading() && b.is_leading()), "two leaders at once");
        leaders.push(match (a.is_leading(), b.is_leading()) {
            (true, false) => "a",
            (false, true) => "b",
            _ => "none",
        });
    }
    let leader = leaders[119];
    assert_ne!(leader, "none");
    // Once someone leads, it keeps leading.
    let first = leaders.iter().position(|l| *l != "none").unwrap();
    assert!(leaders[first..].iter().all(|l| *l == leader), "{leaders:?}");
    assert_eq!(holder(&fake), leader);
    assert_eq!(transitions(&fake), 0);
    assert_eq!(log.entries(), vec![format!("{leader} started")]);
    // The leader kept renewing: the record's renewTime is recent.
    let record = fake.record(NAMESPACE, NAME).unwrap();
    assert_eq!(record.lease_duration_seconds, 15);
    let renewed = record.renew_time.unwrap();
    let acquired = record.acquire_time.unwrap();
    assert!(renewed.duration_since(acquired) >= SignedDuration::from_secs(50));

    let (leading, waiting) = if leader == "a" { (a, b) } else { (b, a) };
    assert_eq!(waiting.stop().await, RunOutcome::NeverLed);
    assert_eq!(
        leading.stop().await,
        RunOutcome::Shutdown { released: false }
    );
    assert_eq!(
        log.entries(),
        vec![format!("{leader} started"), format!("{leader} lost")]
    );
}

#[tokio::test(start_paused = true)]
async fn crashed_leader_is_replaced_after_the_lease_duration() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    let mut a = Candidate::spawn("a", fake.connection(), false, &log);
    a.until_leading().await;
    let mut b = Candidate::spawn("b", fake.connection(), false, &log);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(a.is_leading());
    assert!(!b.is_leading());
    assert_eq!(holder(&fake), "a");

    // The leader dies: no more renewals, nothing released.
    a.handle.abort();
    let last_renewal = fake.record(NAMESPACE, NAME).unwrap().renew_time.unwrap();
    let died = Instant::now();
    let took_over = b.until_leading().await;

    // a's last renewal was at most a retry period before it died; b saw it change at most
    // one try later, then waited a whole lease duration on its own clock, and took over at
    // its next try.
    let waited = took_over - died;
    assert!(
        waited >= DEFAULT_LEASE_DURATION - DEFAULT_RETRY_PERIOD,
        "took over after {waited:?}"
    );
    assert!(
        waited <= DEFAULT_LEASE_DURATION + 2 * max_acquire_wait(),
        "took over after {waited:?}"
    );
    let record = fake.record(NAMESPACE, NAME).unwrap();
    assert_eq!(record.holder_identity, "b");
    assert_eq!(record.leader_transitions, 1);
    assert!(record.acquire_time.unwrap() > last_renewal);
    assert_eq!(log.entries(), vec!["a started", "b started"]);

    // b keeps it.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(holder(&fake), "b");
    assert_eq!(transitions(&fake), 1);
    assert_eq!(b.stop().await, RunOutcome::Shutdown { released: false });
}

#[tokio::test(start_paused = true)]
async fn cut_off_leader_steps_down_before_anyone_takes_over() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    let a_link = fake.connection();
    let mut a = Candidate::spawn("a", a_link.clone(), false, &log);
    a.until_leading().await;
    let mut b = Candidate::spawn("b", fake.connection(), false, &log);
    tokio::time::sleep(Duration::from_secs(20)).await;

    a_link.set_reachable(false);
    let cut = Instant::now();
    // a cannot renew: it gives up within the renew deadline (plus the retry period it was
    // sleeping through when the link went down) and its work sees the loss.
    let outcome = (&mut a.handle).await.unwrap();
    assert_eq!(outcome, RunOutcome::Lost { released: false });
    let lost = log.when("a lost").unwrap();
    assert!(lost - cut <= DEFAULT_RENEW_DEADLINE + DEFAULT_RETRY_PERIOD);
    assert!(!a.is_leading());

    // b only takes over once the lease expired, after a stepped down.
    let took_over = b.until_leading().await;
    assert!(took_over > lost);
    assert!(took_over - cut >= DEFAULT_LEASE_DURATION - DEFAULT_RETRY_PERIOD);
    assert_eq!(holder(&fake), "b");
    assert_eq!(transitions(&fake), 1);
    assert_eq!(log.entries(), vec!["a started", "a lost", "b started"]);
    assert_eq!(b.stop().await, RunOutcome::Shutdown { released: false });
}

#[tokio::test(start_paused = true)]
async fn release_on_cancel_hands_over_at_the_next_try() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    // a's work takes a second to wind down; the lease must still be a's meanwhile.
    let work_fake = fake.clone();
    let work_log = log.clone();
    let mut a = Candidate::spawn_with("a", fake.connection(), true, move |lost| async move {
        work_log.push("a started".into());
        lost.await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert_eq!(holder(&work_fake), "a");
        work_log.push("a drained".into());
    });
    a.until_leading().await;
    let mut b = Candidate::spawn("b", fake.connection(), false, &log);
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(holder(&fake), "a");

    let stopped = Instant::now();
    assert_eq!(a.stop().await, RunOutcome::Shutdown { released: true });
    let released = fake.record(NAMESPACE, NAME).unwrap();
    if released.holder_identity.is_empty() {
        assert_eq!(released.lease_duration_seconds, 1);
        assert_eq!(released.leader_transitions, 0);
    }

    let took_over = b.until_leading().await;
    let waited = took_over - stopped;
    // One second of draining, then b's next try: no lease duration to wait.
    assert!(
        waited <= Duration::from_secs(1) + max_acquire_wait(),
        "took over after {waited:?}"
    );
    let record = fake.record(NAMESPACE, NAME).unwrap();
    assert_eq!(record.holder_identity, "b");
    assert_eq!(record.lease_duration_seconds, 15);
    assert_eq!(record.leader_transitions, 1);
    assert_eq!(log.entries(), vec!["a started", "a drained", "b started"]);
    assert_eq!(b.stop().await, RunOutcome::Shutdown { released: false });
}

#[tokio::test(start_paused = true)]
async fn released_record_is_what_client_go_writes() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    let mut a = Candidate::spawn("a", fake.connection(), true, &log);
    a.until_leading().await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(a.stop().await, RunOutcome::Shutdown { released: true });
    let lease = fake.lease(NAMESPACE, NAME).unwrap();
    let spec = lease.spec.unwrap();
    assert_eq!(spec.holder_identity.as_deref(), Some(""));
    assert_eq!(spec.lease_duration_seconds, Some(1));
    assert_eq!(spec.lease_transitions, Some(0));
    assert_eq!(spec.acquire_time, spec.renew_time);
    assert!(spec.acquire_time.is_some());
}

#[tokio::test(start_paused = true)]
async fn candidate_shut_down_before_leading_leaves_the_lease_alone() {
    let fake = FakeLeaseClient::new();
    let log = Log::default();
    let mut a = Candidate::spawn("a", fake.connection(), true, &log);
    a.until_leading().await;
    let b = Candidate::spawn("b", fake.connection(), true, &log);
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert_eq!(b.stop().await, RunOutcome::NeverLed);
    assert_eq!(holder(&fake), "a");
    tokio::time::sleep(Duration::from_secs(10)).await;
    assert!(a.is_leading());
    assert_eq!(log.entries(), vec!["a started"]);
    assert_eq!(a.stop().await, RunOutcome::Shutdown { released: true });
}

#[tokio::test(start_paused = true)]
async fn the_watchdog_fails_a_holder_that_stopped_renewing_and_never_a_standby() {
    let fake = FakeLeaseClient::new();
    let a_link = fake.connection();
    let a_health = LeaderHealth::default();
    let b_health = LeaderHealth::default();
    // Before an elector is attached, the check passes (the endpoint serves first).
    assert_eq!(a_health.check(), Ok(()));

    let a = LeaderElector::new(
        LeaderElectionConfig::new(NAMESPACE, NAME, "a"),
        a_link.clone(),
        clock(),
    )
    .unwrap();
    a.watch_dog(&a_health);
    let mut a_leading = a.leading();
    let a_run = tokio::spawn(a.run(std::future::pending(), |lost| async move { lost.await }));
    a_leading.wait_for(|l| *l).await.unwrap();
    let b = LeaderElector::new(
        LeaderElectionConfig::new(NAMESPACE, NAME, "b"),
        fake.connection(),
        clock(),
    )
    .unwrap();
    b.watch_dog(&b_health);
    let b_run = tokio::spawn(b.run(std::future::pending(), |lost| async move { lost.await }));

    // Renewing, the leader stays healthy however long it leads; the standby too.
    tokio::time::sleep(Duration::from_secs(120)).await;
    assert_eq!(a_health.check(), Ok(()));
    assert_eq!(b_health.check(), Ok(()));
    // client-go's metrics: leading, and no renewal past the fast path yet; one whose
    // optimistic update fails renews through the slow path and is counted.
    let metrics = || runtime::metrics::render_leader_election(Some(NAME));
    assert!(
        metrics().contains(&format!(
            "leader_election_master_status{{name=\"{NAME}\"}} 1\n"
        )) && metrics().ends_with(&format!(
            "leader_election_slowpath_total{{name=\"{NAME}\"}} 0\n"
        )),
        "{}",
        metrics()
    );
    a_link.fail_next(runtime::Error::Transport("optimistic update lost".into()));
    tokio::time::sleep(DEFAULT_RETRY_PERIOD * 2).await;
    assert!(
        metrics().ends_with(&format!(
            "leader_election_slowpath_total{{name=\"{NAME}\"}} 1\n"
        )),
        "{}",
        metrics()
    );

    // Cut off, the leader's last observation still names it; past the lease duration
    // plus the tolerance it is unhealthy (upstream's process would have exited; one
    // that did not is stuck).
    a_link.set_reachable(false);
    let cut = Instant::now();
    assert_eq!(a_run.await.unwrap(), RunOutcome::Lost { released: false });
    // b campaigns from the same process (one registry): the gauge says no one here leads.
    assert!(
        metrics().contains(&format!(
            "leader_election_master_status{{name=\"{NAME}\"}} 0\n"
        )),
        "{}",
        metrics()
    );
    let limit = DEFAULT_LEASE_DURATION + WATCHDOG_TOLERANCE;
    assert_eq!(
        a_health.check_at(cut + limit - DEFAULT_RETRY_PERIOD - Duration::from_secs(1)),
        Ok(())
    );
    assert_eq!(
        a_health.check_at(cut + limit + Duration::from_secs(1)),
        Err(format!(
            "failed election to renew leadership on lease {NAME}"
        ))
    );
    // The standby took over and renews: healthy.
    tokio::time::sleep(limit + Duration::from_secs(1)).await;
    assert_eq!(holder(&fake), "b");
    assert_eq!(b_health.check(), Ok(()));
    b_run.abort();
}
