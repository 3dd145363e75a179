//! Leader election over a `coordination.k8s.io/v1` Lease, as upstream's
//! `client-go/tools/leaderelection` with its `LeaseLock`: of the candidates sharing a lock,
//! one at a time holds the lease and runs the guarded work; the others wait until it stops
//! renewing.
//!
//! - [`LeaderElectionRecord`] is the lock record kept in the Lease's spec (holder, lease
//!   duration, acquire and renew times, transitions).
//! - [`decide`] is `tryAcquireOrRenew`'s decision, pure: create the lease when it is
//!   missing, renew it when we hold it, wait while someone else holds it and it has not
//!   expired, take it over otherwise (one more transition). Expiry is measured on *our*
//!   clock from when we last saw the record change ([`Observation`]), never from the
//!   server's `renewTime`, so clock skew between candidates does not matter.
//! - [`LeaseClient`] reads and writes Leases: [`KubeLeaseClient`] through the API server,
//!   [`FakeLeaseClient`] in memory for tests (with the API server's resourceVersion checks).
//! - [`LeaderElector`] runs the loops: it tries to acquire every `retry_period` (jittered by
//!   [`JITTER_FACTOR`]); once it leads it runs the caller's work and renews every
//!   `retry_period`, giving leadership up when a renewal does not succeed within
//!   `renew_deadline`. Writes carry the resourceVersion read, so of two candidates writing
//!   at once one gets a 409 and loses. With `release_on_cancel` the lease is handed back
//!   on the way out (empty holder, `leaseDurationSeconds: 1`) so another candidate takes
//!   over at its next try instead of after a whole lease duration.
//!
//! Time is tokio's ([`tokio::time::Instant`], `sleep`), so tests run it paused; the
//! timestamps written into the record come from an injected [`Clock`].
//!
//! Like upstream, this does not guarantee that only one candidate acts as the leader at a
//! time (no fencing): it relies on `renew_deadline` being shorter than `lease_duration`
//! and on clocks running at about the same rate.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::future::{Future, IntoFuture};
use std::hash::{BuildHasher, Hasher};
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::api::{Api, PostParams};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::Error;

/// How long a candidate waits, from when it last saw the record change, before taking over
/// (core components' default).
pub const DEFAULT_LEASE_DURATION: Duration = Duration::from_secs(15);
/// How long the leader keeps trying to renew before it gives leadership up.
pub const DEFAULT_RENEW_DEADLINE: Duration = Duration::from_secs(10);
/// Time between tries to acquire or renew.
pub const DEFAULT_RETRY_PERIOD: Duration = Duration::from_secs(2);
/// The acquire loop waits `retry_period * (1 + rand * JITTER_FACTOR)` between tries
/// (`JitterFactor`).
pub const JITTER_FACTOR: f64 = 1.2;

/// The wall clock the record's `acquireTime` and `renewTime` are read from (the real one is
/// [`Timestamp::now`]).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// The election state kept in the Lease's spec (upstream's `LeaderElectionRecord`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LeaderElectionRecord {
    /// Who holds the lease; empty when nobody does (released).
    pub holder_identity: String,
    pub lease_duration_seconds: i32,
    pub acquire_time: Option<Timestamp>,
    pub renew_time: Option<Timestamp>,
    /// How many times the lease changed hands.
    pub leader_transitions: i32,
    /// Read for comparison only; tryAcquireOrRenew never writes it (coordinated election).
    pub strategy: String,
    /// Read for comparison only; tryAcquireOrRenew never writes it (coordinated election).
    pub preferred_holder: String,
}

impl LeaderElectionRecord {
    /// The record in a Lease's spec (`LeaseSpecToLeaderElectionRecord`); absent fields are
    /// zero.
    pub fn from_spec(spec: &LeaseSpec) -> Self {
        LeaderElectionRecord {
            holder_identity: spec.holder_identity.clone().unwrap_or_default(),
            lease_duration_seconds: spec.lease_duration_seconds.unwrap_or(0),
            acquire_time: spec.acquire_time.as_ref().map(|t| t.0),
            renew_time: spec.renew_time.as_ref().map(|t| t.0),
            leader_transitions: spec.lease_transitions.unwrap_or(0),
            strategy: spec.strategy.clone().unwrap_or_default(),
            preferred_holder: spec.preferred_holder.clone().unwrap_or_default(),
        }
    }

    /// The record of a Lease (zero when it has no spec).
    pub fn from_lease(lease: &Lease) -> Self {
        lease.spec.as_ref().map(Self::from_spec).unwrap_or_default()
    }

    /// The Lease spec holding this record (`LeaderElectionRecordToLeaseSpec`): holder,
    /// duration and transitions always written, strategy and preferred holder only when
    /// set.
    pub fn to_spec(&self) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.holder_identity.clone()),
            lease_duration_seconds: Some(self.lease_duration_seconds),
            acquire_time: self.acquire_time.map(MicroTime),
            renew_time: self.renew_time.map(MicroTime),
            lease_transitions: Some(self.leader_transitions),
            strategy: non_empty(&self.strategy),
            preferred_holder: non_empty(&self.preferred_holder),
        }
    }
}

fn non_empty(s: &str) -> Option<String> {
    (!s.is_empty()).then(|| s.to_string())
}

/// The record as we last saw it and when, on our clock (`observedRecord`, `observedTime`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Observation {
    pub record: LeaderElectionRecord,
    pub time: Instant,
}

impl Observation {
    /// What we know after reading `record` at `now`: the observation time moves only when
    /// the record differs from the one seen before (someone renewed, took over or
    /// released), so a holder that stopped renewing expires a lease duration after we last
    /// saw it change.
    pub fn after_read(
        previous: Option<&Observation>,
        record: LeaderElectionRecord,
        now: Instant,
    ) -> Observation {
        match previous {
            Some(previous) if previous.record == record => previous.clone(),
            _ => Observation { record, time: now },
        }
    }

    /// When the observed lease expires: the observation time plus the record's own
    /// `leaseDurationSeconds`.
    pub fn expires(&self) -> Instant {
        let seconds = u64::try_from(self.record.lease_duration_seconds).unwrap_or(0);
        self.time + Duration::from_secs(seconds)
    }

    /// Whether the observed lease is still valid at `now` (`isLeaseValid`).
    pub fn is_valid(&self, now: Instant) -> bool {
        self.expires() > now
    }

    /// Whether `identity` holds the observed lease (`IsLeader`).
    pub fn is_held_by(&self, identity: &str) -> bool {
        self.record.holder_identity == identity
    }
}

/// What [`decide`] says to do with the lock.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// The Lease does not exist: create it with this record (we lead, no transition yet).
    Create(LeaderElectionRecord),
    /// We hold the lease: write this record (same acquire time and transitions, new renew
    /// time).
    Renew(LeaderElectionRecord),
    /// Nobody holds the lease or it expired: write this record (we lead, one more
    /// transition).
    TakeOver(LeaderElectionRecord),
    /// Someone else holds the lease and it has not expired on our clock.
    Wait { holder: String, expires: Instant },
}

/// The record of `identity` acquiring the lease now (acquire and renew time `now`, no
/// transitions).
fn fresh_record(identity: &str, lease_duration: Duration, now: Timestamp) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: identity.to_string(),
        lease_duration_seconds: i32::try_from(lease_duration.as_secs()).unwrap_or(i32::MAX),
        acquire_time: Some(now),
        renew_time: Some(now),
        ..LeaderElectionRecord::default()
    }
}

/// The record renewing `held` (which `identity` holds): same acquire time and transitions,
/// renew time `now`.
pub fn renewal(
    held: &LeaderElectionRecord,
    identity: &str,
    lease_duration: Duration,
    now: Timestamp,
) -> LeaderElectionRecord {
    LeaderElectionRecord {
        acquire_time: held.acquire_time,
        leader_transitions: held.leader_transitions,
        ..fresh_record(identity, lease_duration, now)
    }
}

/// `tryAcquireOrRenew`'s decision once the lock was read: `observed` is the record read
/// (`None` when the Lease does not exist) with the time we saw it change
/// ([`Observation::after_read`]), `now` our clock, `wall_now` the time written into the
/// record.
pub fn decide(
    observed: Option<&Observation>,
    identity: &str,
    lease_duration: Duration,
    now: Instant,
    wall_now: Timestamp,
) -> Decision {
    let Some(observed) = observed else {
        return Decision::Create(fresh_record(identity, lease_duration, wall_now));
    };
    let current = &observed.record;
    if observed.is_held_by(identity) {
        return Decision::Renew(renewal(current, identity, lease_duration, wall_now));
    }
    if !current.holder_identity.is_empty() && observed.is_valid(now) {
        return Decision::Wait {
            holder: current.holder_identity.clone(),
            expires: observed.expires(),
        };
    }
    Decision::TakeOver(LeaderElectionRecord {
        leader_transitions: current.leader_transitions.saturating_add(1),
        ..fresh_record(identity, lease_duration, wall_now)
    })
}

/// The record handing `current` back (`tryRelease`): no holder, a one-second lease, acquire
/// and renew time `now`, transitions kept.
pub fn release_record(current: &LeaderElectionRecord, now: Timestamp) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: String::new(),
        lease_duration_seconds: 1,
        acquire_time: Some(now),
        renew_time: Some(now),
        leader_transitions: current.leader_transitions,
        ..LeaderElectionRecord::default()
    }
}

/// `period` stretched by up to `max_factor` (`wait.Jitter`): `period * (1 + fraction *
/// max_factor)` with `fraction` in `[0, 1)`.
pub fn jitter(period: Duration, max_factor: f64, fraction: f64) -> Duration {
    period + period.mul_f64((fraction * max_factor).max(0.0))
}

/// A random number in `[0, 1)` (std's randomly keyed hasher; no cryptographic need).
fn random_fraction() -> f64 {
    let mut h = RandomState::new().build_hasher();
    h.write_u8(0);
    // 53 random bits, the precision of an f64 in [0, 1).
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

/// Reads and writes Leases (upstream's `LeasesGetter` as `LeaseLock` uses it).
/// Implementations map errors as [`KubeLeaseClient`] does: any status from the server is
/// [`Error::Rejected`] with its code (409 for a stale resourceVersion or a create of an
/// existing Lease), except a 404 on `get`, which is `Ok(None)`.
#[async_trait]
pub trait LeaseClient: Send + Sync {
    /// The Lease, or `None` when it does not exist.
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error>;
    /// Creates the Lease in its `metadata.namespace`.
    async fn create(&self, lease: &Lease) -> Result<Lease, Error>;
    /// Replaces the Lease named by its metadata; the write fails with a 409 when its
    /// `metadata.resourceVersion` is no longer the stored one.
    async fn update(&self, lease: &Lease) -> Result<Lease, Error>;
}

/// Leases through the API server: `GET`, `POST` and `PUT`
/// `/apis/coordination.k8s.io/v1/namespaces/<ns>/leases[/<name>]`.
#[derive(Clone)]
pub struct KubeLeaseClient {
    client: kube::Client,
}

impl KubeLeaseClient {
    pub fn new(client: kube::Client) -> Self {
        KubeLeaseClient { client }
    }

    fn api(&self, namespace: &str) -> Api<Lease> {
        Api::namespaced(self.client.clone(), namespace)
    }
}

impl fmt::Debug for KubeLeaseClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KubeLeaseClient").finish_non_exhaustive()
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

#[async_trait]
impl LeaseClient for KubeLeaseClient {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        self.api(namespace).get_opt(name).await.map_err(Error::from)
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, Error> {
        self.api(opt(&lease.metadata.namespace))
            .create(&PostParams::default(), lease)
            .await
            .map_err(Error::from)
    }

    async fn update(&self, lease: &Lease) -> Result<Lease, Error> {
        self.api(opt(&lease.metadata.namespace))
            .replace(opt(&lease.metadata.name), &PostParams::default(), lease)
            .await
            .map_err(Error::from)
    }
}

/// Whether `error` is a 409: a write lost to another one (stale resourceVersion) or a
/// create of a Lease that exists.
pub fn is_conflict(error: &Error) -> bool {
    matches!(error, Error::Rejected { code: 409, .. })
}

/// One call a [`FakeLeaseClient`] received.
#[derive(Clone, Debug, PartialEq)]
pub enum LeaseCall {
    Get { namespace: String, name: String },
    Create(Box<Lease>),
    Update(Box<Lease>),
}

#[derive(Debug, Default)]
struct FakeStore {
    leases: BTreeMap<(String, String), Lease>,
    calls: Vec<LeaseCall>,
    failures: VecDeque<Error>,
    resource_version: u64,
}

/// Leases in memory for tests, checked as the API server does: a create of an existing
/// Lease is a 409 `AlreadyExists`, an update needs the stored resourceVersion (else a 409
/// `Conflict`; without one a 422) and of an existing Lease (else a 404); every write
/// bumps the resourceVersion.
///
/// Clones share the store and the link; [`FakeLeaseClient::connection`] makes another
/// client of the same store with its own link, which [`FakeLeaseClient::set_reachable`]
/// cuts (every call then fails with [`Error::Transport`]), to partition one candidate.
#[derive(Clone, Debug, Default)]
pub struct FakeLeaseClient {
    store: Arc<Mutex<FakeStore>>,
    unreachable: Arc<Mutex<bool>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

fn rejected(code: u16, reason: &str, message: String) -> Error {
    Error::Rejected {
        code,
        reason: reason.into(),
        message,
        causes: Vec::new(),
    }
}

impl FakeLeaseClient {
    pub fn new() -> Self {
        Self::default()
    }

    /// Another client of the same store, with its own link.
    pub fn connection(&self) -> Self {
        FakeLeaseClient {
            store: self.store.clone(),
            unreachable: Arc::default(),
        }
    }

    /// Cuts (`false`) or restores (`true`) this client's link to the store.
    pub fn set_reachable(&self, reachable: bool) {
        *lock(&self.unreachable) = !reachable;
    }

    /// The stored Lease.
    pub fn lease(&self, namespace: &str, name: &str) -> Option<Lease> {
        lock(&self.store)
            .leases
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    /// The record of the stored Lease.
    pub fn record(&self, namespace: &str, name: &str) -> Option<LeaderElectionRecord> {
        self.lease(namespace, name)
            .map(|l| LeaderElectionRecord::from_lease(&l))
    }

    /// Stores `lease` as is (bumping the resourceVersion), as another writer would.
    pub fn put(&self, lease: Lease) -> Lease {
        let mut store = lock(&self.store);
        store.resource_version += 1;
        let mut stored = lease;
        stored.metadata.resource_version = Some(store.resource_version.to_string());
        let key = (
            opt(&stored.metadata.namespace).to_string(),
            opt(&stored.metadata.name).to_string(),
        );
        store.leases.insert(key, stored.clone());
        stored
    }

    /// Every call received by the store, from every connection, in order.
    pub fn calls(&self) -> Vec<LeaseCall> {
        lock(&self.store).calls.clone()
    }

    /// Makes the next call to the store fail with `error` (queued: one error per call).
    pub fn fail_next(&self, error: Error) {
        lock(&self.store).failures.push_back(error);
    }

    /// The store, once the call passed the link and the queued failures.
    fn reach(&self, call: LeaseCall) -> Result<MutexGuard<'_, FakeStore>, Error> {
        if *lock(&self.unreachable) {
            return Err(Error::Transport("connection refused".into()));
        }
        let mut store = lock(&self.store);
        store.calls.push(call);
        match store.failures.pop_front() {
            Some(error) => Err(error),
            None => Ok(store),
        }
    }
}

#[async_trait]
impl LeaseClient for FakeLeaseClient {
    async fn get(&self, namespace: &str, name: &str) -> Result<Option<Lease>, Error> {
        let store = self.reach(LeaseCall::Get {
            namespace: namespace.into(),
            name: name.into(),
        })?;
        Ok(store
            .leases
            .get(&(namespace.to_string(), name.to_string()))
            .cloned())
    }

    async fn create(&self, lease: &Lease) -> Result<Lease, Error> {
        let mut store = self.reach(LeaseCall::Create(Box::new(lease.clone())))?;
        let key = (
            opt(&lease.metadata.namespace).to_string(),
            opt(&lease.metadata.name).to_string(),
        );
        if store.leases.contains_key(&key) {
            return Err(rejected(
                409,
                "AlreadyExists",
                format!("leases.coordination.k8s.io \"{}\" already exists", key.1),
            ));
        }
        store.resource_version += 1;
        let mut stored = lease.clone();
        stored.metadata.resource_version = Some(store.resource_version.to_string());
        store.leases.insert(key, stored.clone());
        Ok(stored)
    }

    async fn update(&self, lease: &Lease) -> Result<Lease, Error> {
        let mut store = self.reach(LeaseCall::Update(Box::new(lease.clone())))?;
        let key = (
            opt(&lease.metadata.namespace).to_string(),
            opt(&lease.metadata.name).to_string(),
        );
        let Some(current) = store.leases.get(&key) else {
            return Err(rejected(
                404,
                "NotFound",
                format!("leases.coordination.k8s.io \"{}\" not found", key.1),
            ));
        };
        match lease.metadata.resource_version.as_deref() {
            None | Some("") => {
                return Err(rejected(
                    422,
                    "Invalid",
                    format!(
                        "Lease.coordination.k8s.io \"{}\" is invalid: metadata.resourceVersion: \
                         Invalid value: \"\": must be specified for an update",
                        key.1
                    ),
                ));
            }
            Some(rv) if Some(rv) != current.metadata.resource_version.as_deref() => {
                return Err(rejected(
                    409,
                    "Conflict",
                    format!(
                        "Operation cannot be fulfilled on leases.coordination.k8s.io \"{}\": \
                         the object has been modified; please apply your changes to the \
                         latest version and try again",
                        key.1
                    ),
                ));
            }
            Some(_) => {}
        }
        store.resource_version += 1;
        let mut stored = lease.clone();
        stored.metadata.resource_version = Some(store.resource_version.to_string());
        store.leases.insert(key, stored.clone());
        Ok(stored)
    }
}

/// How a [`LeaderElector`] runs (upstream's `LeaderElectionConfig` with a `LeaseLock`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LeaderElectionConfig {
    /// Namespace of the Lease.
    pub namespace: String,
    /// Name of the Lease.
    pub name: String,
    /// The name the `leader_election_*` series carry (upstream's `LeaderElectionConfig.Name`:
    /// the component's, whatever Lease it locks); the Lease's name unless set.
    pub metrics_name: String,
    /// This candidate's identity, unique among the candidates.
    pub identity: String,
    /// How long a candidate waits without seeing the record change before taking over.
    pub lease_duration: Duration,
    /// How long the leader retries renewing before giving leadership up.
    pub renew_deadline: Duration,
    /// Time between tries.
    pub retry_period: Duration,
    /// Whether to hand the lease back when [`LeaderElector::run`] stops while leading.
    /// The caller's work has returned by then, so nothing guarded still runs.
    pub release_on_cancel: bool,
}

impl LeaderElectionConfig {
    /// The lock `namespace/name` for `identity`, with the core components' timings (15 s,
    /// 10 s, 2 s) and without releasing on cancel.
    pub fn new(
        namespace: impl Into<String>,
        name: impl Into<String>,
        identity: impl Into<String>,
    ) -> Self {
        let name = name.into();
        LeaderElectionConfig {
            namespace: namespace.into(),
            metrics_name: name.clone(),
            name,
            identity: identity.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            release_on_cancel: false,
        }
    }

    /// Upstream's checks (`NewLeaderElector`), with its messages.
    pub fn validate(&self) -> Result<(), Error> {
        let invalid = |m: &str| Err(Error::InvalidConfig(m.to_string()));
        if self.lease_duration <= self.renew_deadline {
            return invalid("leaseDuration must be greater than renewDeadline");
        }
        if self.renew_deadline <= self.retry_period.mul_f64(JITTER_FACTOR) {
            return invalid("renewDeadline must be greater than retryPeriod*JitterFactor");
        }
        if self.lease_duration.is_zero() {
            return invalid("leaseDuration must be greater than zero");
        }
        if self.renew_deadline.is_zero() {
            return invalid("renewDeadline must be greater than zero");
        }
        if self.retry_period.is_zero() {
            return invalid("retryPeriod must be greater than zero");
        }
        if self.identity.is_empty() {
            return invalid("Lock identity is empty");
        }
        Ok(())
    }

    /// `namespace/name`, for logs (`Describe`).
    pub fn describe(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// How long past its lease duration a leader that has not renewed still reports healthy
/// (upstream's controller manager and scheduler give `NewLeaderHealthzAdaptor` 20 s).
pub const WATCHDOG_TOLERANCE: Duration = Duration::from_secs(20);

/// The `leaderElection` health check's verdict (upstream's `LeaderElector.Check`): a
/// candidate that does not hold the lease (a standby) is healthy; the holder is not once
/// the record it last saw change is older than the lease duration plus `tolerance` — it
/// should have renewed or stepped down long before, so it is stuck.
pub fn watchdog_verdict(
    observed: Option<&Observation>,
    config: &LeaderElectionConfig,
    tolerance: Duration,
    now: Instant,
) -> Result<(), String> {
    match observed {
        Some(o)
            if o.is_held_by(&config.identity)
                && now.saturating_duration_since(o.time) > config.lease_duration + tolerance =>
        {
            Err(format!(
                "failed election to renew leadership on lease {}",
                config.name
            ))
        }
        _ => Ok(()),
    }
}

/// The `leaderElection` health check of a component (upstream's `HealthzAdaptor`): made
/// before the elector (the endpoint serves first), healthy until one is attached with
/// [`LeaderElector::watch_dog`], then [`watchdog_verdict`] over what it observes.
#[derive(Clone, Default)]
pub struct LeaderHealth(Arc<OnceLock<Watched>>);

struct Watched {
    config: LeaderElectionConfig,
    observed: watch::Receiver<Option<Observation>>,
}

impl fmt::Debug for LeaderHealth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("LeaderHealth")
            .field(&self.0.get().map(|w| w.config.describe()))
            .finish()
    }
}

impl LeaderHealth {
    /// The check's verdict now.
    pub fn check(&self) -> Result<(), String> {
        self.check_at(Instant::now())
    }

    /// The check's verdict at `now`.
    pub fn check_at(&self, now: Instant) -> Result<(), String> {
        match self.0.get() {
            None => Ok(()),
            Some(w) => watchdog_verdict(
                w.observed.borrow().as_ref(),
                &w.config,
                WATCHDOG_TOLERANCE,
                now,
            ),
        }
    }
}

/// Handed to the leader's work: fires when leadership ends (lost, or the elector is
/// shutting down). Await it (`lost.await`, or `lost.wait()` in a `select!`); clones fire
/// together.
#[derive(Clone, Debug)]
pub struct LeadershipLost(watch::Receiver<bool>);

impl LeadershipLost {
    /// Resolves once leadership has ended.
    pub async fn wait(&self) {
        let mut rx = self.0.clone();
        // An error means the elector is gone: leadership ended all the same.
        let _ = rx.wait_for(|lost| *lost).await;
    }

    /// Whether leadership has ended.
    pub fn is_lost(&self) -> bool {
        *self.0.borrow() || self.0.has_changed().is_err()
    }
}

impl IntoFuture for LeadershipLost {
    type Output = ();
    type IntoFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(async move { self.wait().await })
    }
}

/// How [`LeaderElector::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunOutcome {
    /// The shutdown signal fired before this candidate ever led.
    NeverLed,
    /// The shutdown signal fired while leading; `released` tells whether the lease was
    /// handed back.
    Shutdown { released: bool },
    /// The lease could not be renewed within the renew deadline; `released` as above (with
    /// `release_on_cancel`, only if the lease still named us).
    Lost { released: bool },
}

enum Stop {
    Shutdown,
    Lost,
}

/// A candidate for leadership of one lock (upstream's `LeaderElector`).
pub struct LeaderElector {
    config: LeaderElectionConfig,
    client: Arc<dyn LeaseClient>,
    clock: Clock,
    /// The record as last read or written, and when it changed on our clock.
    observed: Option<Observation>,
    /// The Lease as last read or written (its resourceVersion guards the next write).
    lease: Option<Lease>,
    leading: watch::Sender<bool>,
    leader: watch::Sender<String>,
    /// Every observation, for the watchdog.
    observations: watch::Sender<Option<Observation>>,
}

impl fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.config)
            .field("observed", &self.observed)
            .field("leading", &*self.leading.borrow())
            .finish_non_exhaustive()
    }
}

impl LeaderElector {
    /// A candidate for `config`'s lock, reading and writing it through `client`, with
    /// `clock` for the times written into the record. Fails on a configuration upstream
    /// rejects.
    pub fn new(
        config: LeaderElectionConfig,
        client: impl LeaseClient + 'static,
        clock: Clock,
    ) -> Result<Self, Error> {
        config.validate()?;
        Ok(LeaderElector {
            config,
            client: Arc::new(client),
            clock,
            observed: None,
            lease: None,
            leading: watch::channel(false).0,
            leader: watch::channel(String::new()).0,
            observations: watch::channel(None).0,
        })
    }

    /// Whether this candidate currently leads.
    pub fn is_leader(&self) -> bool {
        *self.leading.borrow()
    }

    /// Follows [`Self::is_leader`]: `true` from when the lease is acquired until
    /// leadership ends (before the work has wound down).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.subscribe()
    }

    /// Follows the holder seen in the record (`OnNewLeader`; empty until one is seen, and
    /// when the lease was released).
    pub fn observed_leader(&self) -> watch::Receiver<String> {
        self.leader.subscribe()
    }

    /// Makes `health` report on this candidate (upstream's `WatchDog` of the elector's
    /// config); a check attached to an elector already keeps its first.
    pub fn watch_dog(&self, health: &LeaderHealth) {
        let _ = health.0.set(Watched {
            config: self.config.clone(),
            observed: self.observations.subscribe(),
        });
    }

    /// Campaigns until this candidate leads, then runs `on_started_leading`'s work while
    /// renewing the lease. The work gets a [`LeadershipLost`] that fires when leadership
    /// ends — the lease could not be renewed within the renew deadline, or `shutdown`
    /// resolved — and must return soon after. `run` returns once the work has returned
    /// (and, with `release_on_cancel`, the lease was handed back), or at once when
    /// `shutdown` resolves before this candidate led. A work that returns early does not
    /// end leadership: the lease is renewed until one of the above.
    ///
    /// ```ignore
    /// elector.run(shutdown_signal(), |lost| async move {
    ///     tokio::select! {
    ///         () = run_controllers() => {}
    ///         () = lost.wait() => {}
    ///     }
    /// }).await;
    /// ```
    pub async fn run<S, F, Fut>(mut self, shutdown: S, on_started_leading: F) -> RunOutcome
    where
        S: Future<Output = ()> + Send,
        F: FnOnce(LeadershipLost) -> Fut + Send,
        Fut: Future<Output = ()> + Send,
    {
        let mut shutdown = pin!(shutdown);
        let lock = self.config.describe();
        tracing::info!(%lock, identity = %self.config.identity, "attempting to acquire leader lease");
        if !self.acquire(shutdown.as_mut()).await {
            tracing::info!(%lock, "stopped before acquiring the leader lease");
            return RunOutcome::NeverLed;
        }
        tracing::info!(%lock, identity = %self.config.identity, "successfully acquired lease");
        self.leading.send_replace(true);
        crate::metrics::leader_status(&self.config.metrics_name, true);

        let (lost_tx, lost_rx) = watch::channel(false);
        let mut work = pin!(on_started_leading(LeadershipLost(lost_rx)));
        let mut work_done = false;
        let stop = {
            let mut renewals = pin!(self.renew());
            loop {
                tokio::select! {
                    () = shutdown.as_mut() => break Stop::Shutdown,
                    () = renewals.as_mut() => break Stop::Lost,
                    () = work.as_mut(), if !work_done => {
                        work_done = true;
                        tracing::debug!(%lock, "leader's work returned; still renewing");
                    }
                }
            }
        };
        self.leading.send_replace(false);
        crate::metrics::leader_status(&self.config.metrics_name, false);
        lost_tx.send_replace(true);
        match stop {
            Stop::Lost => tracing::info!(%lock, "failed to renew lease; leadership lost"),
            Stop::Shutdown => tracing::info!(%lock, "shutting down; leaving leadership"),
        }
        if !work_done {
            work.await;
        }
        let released = self.config.release_on_cancel && self.release().await;
        match stop {
            Stop::Lost => RunOutcome::Lost { released },
            Stop::Shutdown => RunOutcome::Shutdown { released },
        }
    }

    /// `acquire`: tries until it succeeds (`true`) or `shutdown` resolves (`false`), waiting
    /// a jittered retry period after each failed try.
    async fn acquire(&mut self, mut shutdown: Pin<&mut impl Future<Output = ()>>) -> bool {
        loop {
            let acquired = tokio::select! {
                biased;
                () = shutdown.as_mut() => return false,
                acquired = self.try_acquire_or_renew() => acquired,
            };
            if acquired {
                return true;
            }
            tracing::debug!(lock = %self.config.describe(), "failed to acquire lease");
            let delay = jitter(self.config.retry_period, JITTER_FACTOR, random_fraction());
            tokio::select! {
                biased;
                () = shutdown.as_mut() => return false,
                () = tokio::time::sleep(delay) => {}
            }
        }
    }

    /// `renew`: every retry period after the last success, tries until a renewal succeeds,
    /// every retry period; returns when none did within the renew deadline.
    async fn renew(&mut self) {
        loop {
            let deadline = Instant::now() + self.config.renew_deadline;
            if tokio::time::timeout_at(deadline, self.renew_until_success())
                .await
                .is_err()
            {
                return;
            }
            tracing::trace!(lock = %self.config.describe(), "successfully renewed lease");
            tokio::time::sleep(self.config.retry_period).await;
        }
    }

    async fn renew_until_success(&mut self) {
        loop {
            let next = Instant::now() + self.config.retry_period;
            if self.try_acquire_or_renew().await {
                return;
            }
            tokio::time::sleep_until(next).await;
        }
    }

    /// Records what we wrote (`setObservedRecord`).
    fn observe_written(&mut self, record: LeaderElectionRecord, stored: Lease) {
        self.observed = Some(Observation {
            record,
            time: Instant::now(),
        });
        self.lease = Some(stored);
        self.report_leader();
    }

    /// `maybeReportTransition`, and the observation handed to the watchdog.
    fn report_leader(&self) {
        self.observations.send_replace(self.observed.clone());
        let holder = self
            .observed
            .as_ref()
            .map(|o| o.record.holder_identity.clone())
            .unwrap_or_default();
        self.leader.send_if_modified(|current| {
            if *current == holder {
                return false;
            }
            tracing::info!(lock = %self.config.describe(), leader = %holder, "new leader observed");
            *current = holder;
            true
        });
    }

    /// A copy of the Lease we last saw, carrying `record`.
    fn lease_with(&self, base: &Lease, record: &LeaderElectionRecord) -> Lease {
        let mut lease = base.clone();
        lease.spec = Some(record.to_spec());
        lease
    }

    /// `tryAcquireOrRenew`: whether we hold the lease after this try.
    async fn try_acquire_or_renew(&mut self) -> bool {
        let lock = self.config.describe();
        // 1. The leader's fast path: update optimistically with the Lease we last wrote.
        if let (Some(observed), Some(lease)) = (&self.observed, &self.lease)
            && observed.is_held_by(&self.config.identity)
            && observed.is_valid(Instant::now())
        {
            let record = renewal(
                &observed.record,
                &self.config.identity,
                self.config.lease_duration,
                (self.clock)(),
            );
            let update = self.lease_with(lease, &record);
            match self.client.update(&update).await {
                Ok(stored) => {
                    self.observe_written(record, stored);
                    return true;
                }
                Err(error) => tracing::debug!(
                    %lock, %error, "failed to update lease optimistically, falling back to slow path"
                ),
            }
        }

        // 2. Read the lock.
        let fetched = match self
            .client
            .get(&self.config.namespace, &self.config.name)
            .await
        {
            Ok(fetched) => fetched,
            Err(error) => {
                tracing::error!(%lock, %error, "error retrieving lease lock");
                return false;
            }
        };
        let now = Instant::now();
        let observed = match fetched {
            Some(lease) => {
                let record = LeaderElectionRecord::from_lease(&lease);
                self.observed = Some(Observation::after_read(self.observed.as_ref(), record, now));
                self.lease = Some(lease);
                self.report_leader();
                self.observed.as_ref()
            }
            None => None,
        };

        // 3. Decide, then write.
        let decision = decide(
            observed,
            &self.config.identity,
            self.config.lease_duration,
            now,
            (self.clock)(),
        );
        let renewing = matches!(decision, Decision::Renew(_));
        let (record, write) = match decision {
            Decision::Wait { holder, expires } => {
                tracing::debug!(
                    %lock, %holder, expires_in = ?expires.saturating_duration_since(now),
                    "lease is held and has not yet expired"
                );
                return false;
            }
            Decision::Create(record) => {
                let lease = Lease {
                    metadata: ObjectMeta {
                        namespace: Some(self.config.namespace.clone()),
                        name: Some(self.config.name.clone()),
                        ..ObjectMeta::default()
                    },
                    spec: Some(record.to_spec()),
                };
                let created = self.client.create(&lease).await;
                (record, created)
            }
            Decision::Renew(record) | Decision::TakeOver(record) => {
                if renewing {
                    // The leader renewing past the fast path (client-go counts it so).
                    crate::metrics::leader_slowpath(&self.config.metrics_name);
                }
                let Some(base) = &self.lease else {
                    return false;
                };
                let update = self.lease_with(base, &record);
                let updated = self.client.update(&update).await;
                (record, updated)
            }
        };
        match write {
            Ok(stored) => {
                self.observe_written(record, stored);
                true
            }
            Err(error) if is_conflict(&error) => {
                tracing::debug!(%lock, %error, "another candidate wrote the lease first");
                false
            }
            Err(error) => {
                tracing::error!(%lock, %error, "failed to write lease");
                false
            }
        }
    }

    /// `release`: hands the lease back if it still names us, retrying on conflict, for at
    /// most the renew deadline. Unlike upstream, which trusts the record it last saw, the
    /// record just read must name us, so a lease someone else took over is never blanked.
    async fn release(&mut self) -> bool {
        let lock = self.config.describe();
        let deadline = Instant::now() + self.config.renew_deadline;
        let released = tokio::time::timeout_at(deadline, async {
            loop {
                let lease = match self
                    .client
                    .get(&self.config.namespace, &self.config.name)
                    .await
                {
                    Ok(Some(lease)) => lease,
                    Ok(None) => {
                        tracing::info!(%lock, "lease lock not found");
                        return false;
                    }
                    Err(error) => {
                        tracing::error!(%lock, %error, "error retrieving lease lock");
                        return false;
                    }
                };
                let current = LeaderElectionRecord::from_lease(&lease);
                if current.holder_identity != self.config.identity {
                    return false;
                }
                let record = release_record(&current, (self.clock)());
                let update = self.lease_with(&lease, &record);
                match self.client.update(&update).await {
                    Ok(stored) => {
                        self.observe_written(record, stored);
                        return true;
                    }
                    Err(error) if is_conflict(&error) => {
                        tracing::debug!(%lock, "conflict when releasing lease, retrying");
                    }
                    Err(error) => {
                        tracing::error!(%lock, %error, "failed to release lease");
                        return false;
                    }
                }
            }
        })
        .await
        .unwrap_or(false);
        if released {
            tracing::info!(%lock, "released leader lease");
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: &str = "me";
    const OTHER: &str = "other";
    const DURATION: Duration = DEFAULT_LEASE_DURATION;

    fn ts(second: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + second).unwrap()
    }

    fn held_by(holder: &str, transitions: i32) -> LeaderElectionRecord {
        LeaderElectionRecord {
            holder_identity: holder.into(),
            lease_duration_seconds: 15,
            acquire_time: Some(ts(0)),
            renew_time: Some(ts(5)),
            leader_transitions: transitions,
            ..LeaderElectionRecord::default()
        }
    }

    fn seen(record: LeaderElectionRecord, at: Instant) -> Observation {
        Observation { record, time: at }
    }

    #[test]
    fn missing_lease_is_created_with_us_as_holder() {
        let now = Instant::now();
        let decision = decide(None, ME, DURATION, now, ts(100));
        assert_eq!(
            decision,
            Decision::Create(LeaderElectionRecord {
                holder_identity: ME.into(),
                lease_duration_seconds: 15,
                acquire_time: Some(ts(100)),
                renew_time: Some(ts(100)),
                leader_transitions: 0,
                ..LeaderElectionRecord::default()
            })
        );
    }

    #[test]
    fn holder_renews_keeping_acquire_time_and_transitions() {
        let t0 = Instant::now();
        let observed = seen(held_by(ME, 3), t0);
        // Even past the observed expiry, the holder renews (upstream's IsLeader branch).
        for now in [t0 + Duration::from_secs(2), t0 + Duration::from_secs(30)] {
            let Decision::Renew(record) = decide(Some(&observed), ME, DURATION, now, ts(100))
            else {
                panic!("expected a renewal");
            };
            assert_eq!(record.holder_identity, ME);
            assert_eq!(record.acquire_time, Some(ts(0)));
            assert_eq!(record.renew_time, Some(ts(100)));
            assert_eq!(record.leader_transitions, 3);
            assert_eq!(record.lease_duration_seconds, 15);
        }
    }

    #[test]
    fn no_takeover_before_expiry_on_our_clock() {
        let t0 = Instant::now();
        // The server's renewTime is long past: irrelevant, only our observation counts.
        let mut record = held_by(OTHER, 1);
        record.renew_time = Some(ts(-3600));
        let observed = seen(record, t0);
        let now = t0 + Duration::from_secs(14);
        assert_eq!(
            decide(Some(&observed), ME, DURATION, now, ts(100)),
            Decision::Wait {
                holder: OTHER.into(),
                expires: t0 + Duration::from_secs(15),
            }
        );
    }

    #[test]
    fn takeover_after_expiry_increments_transitions() {
        let t0 = Instant::now();
        let observed = seen(held_by(OTHER, 4), t0);
        // Expired exactly at observation + leaseDurationSeconds (valid only while before).
        for now in [t0 + Duration::from_secs(15), t0 + Duration::from_secs(60)] {
            let Decision::TakeOver(record) = decide(Some(&observed), ME, DURATION, now, ts(100))
            else {
                panic!("expected a takeover");
            };
            assert_eq!(record.holder_identity, ME);
            assert_eq!(record.acquire_time, Some(ts(100)));
            assert_eq!(record.renew_time, Some(ts(100)));
            assert_eq!(record.leader_transitions, 5);
        }
    }

    #[test]
    fn expiry_uses_the_records_lease_duration() {
        let t0 = Instant::now();
        let mut record = held_by(OTHER, 0);
        record.lease_duration_seconds = 60;
        let observed = seen(record, t0);
        let now = t0 + Duration::from_secs(30);
        assert!(matches!(
            decide(Some(&observed), ME, DURATION, now, ts(100)),
            Decision::Wait { .. }
        ));
    }

    #[test]
    fn released_lease_is_taken_over_at_once() {
        let t0 = Instant::now();
        let released = release_record(&held_by(OTHER, 2), ts(50));
        let observed = seen(released, t0);
        let Decision::TakeOver(record) = decide(Some(&observed), ME, DURATION, t0, ts(51)) else {
            panic!("expected a takeover");
        };
        assert_eq!(record.leader_transitions, 3);
        assert_eq!(record.holder_identity, ME);
    }

    #[test]
    fn release_record_empties_holder_and_keeps_transitions() {
        let record = release_record(&held_by(ME, 7), ts(42));
        assert_eq!(
            record,
            LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(ts(42)),
                renew_time: Some(ts(42)),
                leader_transitions: 7,
                ..LeaderElectionRecord::default()
            }
        );
        let spec = record.to_spec();
        assert_eq!(spec.holder_identity.as_deref(), Some(""));
        assert_eq!(spec.lease_duration_seconds, Some(1));
    }

    #[test]
    fn observation_time_moves_only_when_the_record_changes() {
        let t0 = Instant::now();
        let first = Observation::after_read(None, held_by(OTHER, 0), t0);
        assert_eq!(first.time, t0);
        let t1 = t0 + Duration::from_secs(10);
        let same = Observation::after_read(Some(&first), held_by(OTHER, 0), t1);
        assert_eq!(same.time, t0);
        let mut renewed = held_by(OTHER, 0);
        renewed.renew_time = Some(ts(10));
        let changed = Observation::after_read(Some(&first), renewed, t1);
        assert_eq!(changed.time, t1);
    }

    #[test]
    fn record_round_trips_through_the_lease_spec() {
        let mut record = held_by(ME, 2);
        record.preferred_holder = "next".into();
        assert_eq!(LeaderElectionRecord::from_spec(&record.to_spec()), record);
        let spec = held_by(ME, 2).to_spec();
        assert_eq!(spec.strategy, None);
        assert_eq!(spec.preferred_holder, None);
        assert_eq!(
            LeaderElectionRecord::from_spec(&LeaseSpec::default()),
            LeaderElectionRecord::default()
        );
    }

    #[test]
    fn config_checks_are_upstreams() {
        let ok = LeaderElectionConfig::new("kube-system", "lock", ME);
        assert_eq!(ok.validate(), Ok(()));
        let mut c = ok.clone();
        c.renew_deadline = c.lease_duration;
        assert_eq!(
            c.validate(),
            Err(Error::InvalidConfig(
                "leaseDuration must be greater than renewDeadline".into()
            ))
        );
        let mut c = ok.clone();
        c.retry_period = Duration::from_secs(9);
        assert_eq!(
            c.validate(),
            Err(Error::InvalidConfig(
                "renewDeadline must be greater than retryPeriod*JitterFactor".into()
            ))
        );
        let mut c = ok;
        c.identity.clear();
        assert_eq!(
            c.validate(),
            Err(Error::InvalidConfig("Lock identity is empty".into()))
        );
    }

    #[test]
    fn jitter_stays_within_upstreams_bounds() {
        let period = Duration::from_secs(2);
        assert_eq!(jitter(period, JITTER_FACTOR, 0.0), period);
        assert_eq!(
            jitter(period, JITTER_FACTOR, 0.5),
            Duration::from_millis(3200)
        );
        for _ in 0..100 {
            let f = random_fraction();
            assert!((0.0..1.0).contains(&f));
        }
    }

    #[tokio::test]
    async fn fake_client_checks_resource_versions() {
        let fake = FakeLeaseClient::new();
        let lease = Lease {
            metadata: ObjectMeta {
                namespace: Some("ns".into()),
                name: Some("lock".into()),
                ..ObjectMeta::default()
            },
            spec: Some(held_by(ME, 0).to_spec()),
        };
        let created = fake.create(&lease).await.unwrap();
        let again = fake.create(&lease).await.unwrap_err();
        assert!(is_conflict(&again));
        let updated = fake.update(&created).await.unwrap();
        assert_ne!(
            updated.metadata.resource_version,
            created.metadata.resource_version
        );
        // A write from the stale version loses.
        let stale = fake.update(&created).await.unwrap_err();
        assert!(is_conflict(&stale));
        assert!(matches!(
            fake.update(&lease).await,
            Err(Error::Rejected { code: 422, .. })
        ));
        assert_eq!(fake.get("ns", "missing").await, Ok(None));
        let cut = fake.connection();
        cut.set_reachable(false);
        assert!(matches!(
            cut.get("ns", "lock").await,
            Err(Error::Transport(_))
        ));
        assert!(fake.get("ns", "lock").await.unwrap().is_some());
    }
}
