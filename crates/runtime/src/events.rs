//! The events recorder, as upstream's `client-go/tools/record`: controllers and the
//! scheduler report what they did as core/v1 `Event`s, which `kubectl describe` shows with
//! their counts.
//!
//! - [`Correlator`] is upstream's `EventCorrelator`, pure (the caller passes the time):
//!   the `EventAggregator` (from the tenth distinct message of similar events — same
//!   source, object, type and reason — within ten minutes on, they become one event whose
//!   message is `(combined from similar events): <latest message>`), the `eventLogger`
//!   (an event seen again is patched — `count` + 1, `lastTimestamp`, `message` — instead
//!   of created anew) and the spam filter (a token bucket per source and object: a burst of 25, then one
//!   event every five minutes). Each keeps an LRU cache of 4096 entries.
//! - [`Sink`] is where events are written: [`KubeSink`] through the API server,
//!   [`FakeSink`] in memory for tests.
//! - [`Recorder`] is the cheap, cloneable, non-blocking handle components use; events go
//!   through a bounded channel (1000, dropped when full, as upstream's broadcaster) to one
//!   [`Worker`] that correlates and writes them, retrying transport failures up to 12 times
//!   10 s apart.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::{Event, EventSource, ObjectReference};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use kube::Resource;
use kube::api::{Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::Error;

/// Entries of each of the correlator's LRU caches (`maxLruCacheEntries`).
pub const MAX_LRU_CACHE_ENTRIES: usize = 4096;
/// Distinct messages of similar events within the interval before they are aggregated
/// (`defaultAggregateMaxEvents`).
pub const DEFAULT_AGGREGATE_MAX_EVENTS: usize = 10;
/// How long similar events are remembered for aggregation
/// (`defaultAggregateIntervalInSeconds`).
pub const DEFAULT_AGGREGATE_INTERVAL: Duration = Duration::from_secs(600);
/// Events a source may send about one object at once (`defaultSpamBurst`).
pub const DEFAULT_SPAM_BURST: u32 = 25;
/// Refill of the spam filter's bucket: one event every five minutes (`defaultSpamQPS`).
pub const DEFAULT_SPAM_QPS: f64 = 1.0 / 300.0;
/// Events queued between the recorders and the worker (`maxQueuedEvents`).
pub const MAX_QUEUED_EVENTS: usize = 1000;
/// Attempts to write one event (`maxTriesPerEvent`).
pub const MAX_TRIES_PER_EVENT: u32 = 12;
/// Sleep between attempts (`defaultSleepDuration`); the first one is randomized.
pub const DEFAULT_RETRY_SLEEP: Duration = Duration::from_secs(10);
/// Prefix of an aggregate event's message (`EventAggregatorByReasonMessageFunc`).
pub const AGGREGATE_MESSAGE_PREFIX: &str = "(combined from similar events): ";

/// The two event types upstream accepts (`v1.EventTypeNormal`, `v1.EventTypeWarning`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    Normal,
    Warning,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Normal => "Normal",
            EventType::Warning => "Warning",
        }
    }
}

impl fmt::Display for EventType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Who reports events (`v1.EventSource`): the component (`deployment-controller`,
/// `default-scheduler`, `kubelet`) and the host it runs on (may be empty).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Source {
    pub component: String,
    pub host: String,
}

impl Source {
    pub fn new(component: impl Into<String>, host: impl Into<String>) -> Self {
        Source {
            component: component.into(),
            host: host.into(),
        }
    }
}

/// One occurrence of an event, as a recorder reports it: the input of the correlator.
#[derive(Clone, Debug, PartialEq)]
pub struct Occurrence {
    pub source: Source,
    pub involved_object: ObjectReference,
    pub type_: EventType,
    pub reason: String,
    pub message: String,
}

/// A reference to `obj` for an event's `involvedObject` (upstream's
/// `reference.GetReference`): kind and apiVersion from the type, namespace, name, uid and
/// resourceVersion from its metadata.
pub fn object_reference<K: Resource<DynamicType = ()>>(obj: &K) -> ObjectReference {
    let meta = obj.meta();
    ObjectReference {
        api_version: Some(K::api_version(&()).into_owned()),
        kind: Some(K::kind(&()).into_owned()),
        namespace: meta.namespace.clone().filter(|ns| !ns.is_empty()),
        name: meta.name.clone(),
        uid: meta.uid.clone(),
        resource_version: meta.resource_version.clone(),
        field_path: None,
    }
}

/// An event's name: the object's name and the time in hexadecimal nanoseconds
/// (`fmt.Sprintf("%v.%x", ref.Name, t.UnixNano())`).
pub fn event_name(object_name: &str, at: Timestamp) -> String {
    format!("{object_name}.{:x}", at.as_nanosecond())
}

/// The event upstream's `recorderImpl.makeEvent` builds for an occurrence at `now`: in the
/// object's namespace (`default` for cluster-scoped objects), count 1.
pub fn make_event(occurrence: &Occurrence, now: Timestamp) -> Event {
    let object = &occurrence.involved_object;
    let namespace = object
        .namespace
        .clone()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| "default".to_string());
    let source = &occurrence.source;
    Event {
        metadata: ObjectMeta {
            name: Some(event_name(opt(&object.name), now)),
            namespace: Some(namespace),
            ..ObjectMeta::default()
        },
        involved_object: object.clone(),
        reason: Some(occurrence.reason.clone()),
        message: Some(occurrence.message.clone()),
        type_: Some(occurrence.type_.as_str().to_string()),
        source: Some(EventSource {
            component: Some(source.component.clone()).filter(|c| !c.is_empty()),
            host: Some(source.host.clone()).filter(|h| !h.is_empty()),
        }),
        first_timestamp: Some(Time(now)),
        last_timestamp: Some(Time(now)),
        count: Some(1),
        reporting_component: Some(source.component.clone()),
        reporting_instance: Some(source.host.clone()),
        event_time: None,
        ..Event::default()
    }
}

fn opt(s: &Option<String>) -> &str {
    s.as_deref().unwrap_or("")
}

fn source_parts(event: &Event) -> (&str, &str) {
    event.source.as_ref().map_or(("", ""), |s| {
        (
            s.component.as_deref().unwrap_or(""),
            s.host.as_deref().unwrap_or(""),
        )
    })
}

/// Upstream joins with the empty string; a separator that cannot appear in names avoids
/// accidental collisions without changing what is grouped.
fn join(parts: &[&str]) -> String {
    parts.join("\u{0}")
}

/// `getEventKey`: identical events (same source, object, type, reason and message).
fn event_key(event: &Event) -> String {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    join(&[
        component,
        host,
        opt(&o.kind),
        opt(&o.namespace),
        opt(&o.name),
        opt(&o.field_path),
        opt(&o.uid),
        opt(&o.api_version),
        opt(&event.type_),
        opt(&event.reason),
        opt(&event.message),
    ])
}

/// `getSpamKey`: one token bucket per source and object.
fn spam_key(event: &Event) -> String {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    join(&[
        component,
        host,
        opt(&o.kind),
        opt(&o.namespace),
        opt(&o.name),
        opt(&o.uid),
        opt(&o.api_version),
    ])
}

/// `EventAggregatorByReasonFunc`: similar events (all but the message equal) share the
/// aggregate key; the message tells them apart.
fn aggregate_key(event: &Event) -> (String, String) {
    let (component, host) = source_parts(event);
    let o = &event.involved_object;
    let key = join(&[
        component,
        host,
        opt(&o.kind),
        opt(&o.namespace),
        opt(&o.name),
        opt(&o.uid),
        opt(&o.api_version),
        opt(&event.type_),
        opt(&event.reason),
        opt(&event.reporting_component),
        opt(&event.reporting_instance),
    ]);
    (key, opt(&event.message).to_string())
}

/// A least-recently-used cache (groupcache's `lru.Cache`): reading or writing an entry
/// makes it the most recent; beyond the capacity the least recent one is evicted.
#[derive(Debug)]
struct Lru<V> {
    capacity: usize,
    tick: u64,
    entries: HashMap<String, (V, u64)>,
    order: BTreeMap<u64, String>,
}

impl<V> Lru<V> {
    fn new(capacity: usize) -> Self {
        Lru {
            capacity: capacity.max(1),
            tick: 0,
            entries: HashMap::new(),
            order: BTreeMap::new(),
        }
    }

    /// Takes the entry out (to be put back with [`Lru::put`]).
    fn take(&mut self, key: &str) -> Option<V> {
        let (value, tick) = self.entries.remove(key)?;
        self.order.remove(&tick);
        Some(value)
    }

    /// Adds or replaces the entry as the most recent one, evicting the least recent beyond
    /// the capacity.
    fn put(&mut self, key: String, value: V) {
        self.tick += 1;
        let tick = self.tick;
        if let Some((_, old)) = self.entries.insert(key.clone(), (value, tick)) {
            self.order.remove(&old);
        }
        self.order.insert(tick, key);
        while self.entries.len() > self.capacity {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.entries.remove(&oldest);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

/// How the correlator aggregates and filters (upstream's `CorrelatorOptions`).
#[derive(Clone, Debug, PartialEq)]
pub struct CorrelatorOptions {
    /// Entries of each LRU cache.
    pub lru_cache_size: usize,
    /// Spam filter: events a source may send about an object at once.
    pub burst: u32,
    /// Spam filter: refill rate of the bucket, in events per second.
    pub qps: f64,
    /// Distinct messages of similar events before they are aggregated.
    pub max_events: usize,
    /// How long after the last similar event a new one starts afresh.
    pub max_interval: Duration,
}

impl Default for CorrelatorOptions {
    fn default() -> Self {
        CorrelatorOptions {
            lru_cache_size: MAX_LRU_CACHE_ENTRIES,
            burst: DEFAULT_SPAM_BURST,
            qps: DEFAULT_SPAM_QPS,
            max_events: DEFAULT_AGGREGATE_MAX_EVENTS,
            max_interval: DEFAULT_AGGREGATE_INTERVAL,
        }
    }
}

/// The strategic merge patch of an event seen again (what upstream's
/// `CreateTwoWayMergePatch` yields: `count`, `lastTimestamp`, `message`).
#[derive(Clone, Debug, PartialEq)]
pub struct EventPatch {
    pub namespace: String,
    pub name: String,
    pub count: i32,
    pub last_timestamp: Timestamp,
    pub message: String,
}

impl EventPatch {
    /// The body sent as `application/strategic-merge-patch+json`.
    pub fn body(&self) -> Value {
        json!({
            "count": self.count,
            "lastTimestamp": Time(self.last_timestamp),
            "message": self.message,
        })
    }

    /// Applies the patch to a stored event (what the server does with [`EventPatch::body`]).
    pub fn apply(&self, event: &mut Event) {
        event.count = Some(self.count);
        event.last_timestamp = Some(Time(self.last_timestamp));
        event.message = Some(self.message.clone());
    }
}

/// What to do with an occurrence.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// A new event: create it.
    Create(Box<Event>),
    /// An event seen before: patch it; `event` is the whole event (its count included),
    /// created anew if the stored one is gone.
    Patch {
        patch: EventPatch,
        event: Box<Event>,
    },
    /// Spam: dropped.
    Drop,
}

#[derive(Debug)]
struct AggregateRecord {
    /// Distinct messages seen within the interval (never more than `max_events` − 1 kept).
    local_keys: HashSet<String>,
    last: Timestamp,
}

#[derive(Clone, Debug)]
struct EventLog {
    count: i32,
    first_timestamp: Option<Time>,
    name: Option<String>,
    resource_version: Option<String>,
}

/// `flowcontrol.NewTokenBucketRateLimiter` (`rate.Limiter.Allow`), starting full.
#[derive(Debug)]
struct TokenBucket {
    tokens: f64,
    last: Option<Timestamp>,
}

impl TokenBucket {
    fn try_accept(&mut self, now: Timestamp, qps: f64, burst: f64) -> bool {
        if let Some(last) = self.last {
            let elapsed = now.duration_since(last).as_secs_f64().max(0.0);
            self.tokens = (self.tokens + elapsed * qps).min(burst);
        }
        self.last = Some(now);
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

/// Upstream's `EventCorrelator`: filters, aggregates, counts and deduplicates events.
/// Pure: the caller passes the time of each occurrence.
#[derive(Debug)]
pub struct Correlator {
    options: CorrelatorOptions,
    aggregates: Lru<AggregateRecord>,
    logs: Lru<EventLog>,
    spam: Lru<TokenBucket>,
}

impl Default for Correlator {
    fn default() -> Self {
        Self::new(CorrelatorOptions::default())
    }
}

impl Correlator {
    pub fn new(options: CorrelatorOptions) -> Self {
        let size = options.lru_cache_size;
        Correlator {
            options,
            aggregates: Lru::new(size),
            logs: Lru::new(size),
            spam: Lru::new(size),
        }
    }

    /// `EventCorrelate`: aggregate, observe (count), then filter spam, in upstream's
    /// order (a dropped event still counts towards the next one written).
    pub fn correlate(&mut self, occurrence: &Occurrence, now: Timestamp) -> Action {
        let event = make_event(occurrence, now);
        let (event, key) = self.aggregate(event, now);
        let (event, seen) = self.observe(event, key);
        if self.filtered(&event, now) {
            return Action::Drop;
        }
        if seen {
            let patch = EventPatch {
                namespace: opt(&event.metadata.namespace).to_string(),
                name: opt(&event.metadata.name).to_string(),
                count: event.count.unwrap_or(1),
                last_timestamp: now,
                message: opt(&event.message).to_string(),
            };
            Action::Patch {
                patch,
                event: Box::new(event),
            }
        } else {
            Action::Create(Box::new(event))
        }
    }

    /// `UpdateState`: remembers the event as the server stored it (name, resourceVersion,
    /// count), after a successful write.
    pub fn update_state(&mut self, event: &Event) {
        self.logs.put(
            event_key(event),
            EventLog {
                count: event.count.unwrap_or(0),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
    }

    /// `EventAggregate`: the event to record and its key in the event log — the event
    /// itself and its full key, or, from the `max_events`-th distinct message of similar
    /// events within the interval on, an aggregate event under the aggregate key.
    fn aggregate(&mut self, event: Event, now: Timestamp) -> (Event, String) {
        let full_key = event_key(&event);
        let (key, local_key) = aggregate_key(&event);
        let max_interval =
            SignedDuration::try_from(self.options.max_interval).unwrap_or(SignedDuration::MAX);
        let mut record = self
            .aggregates
            .take(&key)
            .filter(|r| now.duration_since(r.last) <= max_interval)
            .unwrap_or_else(|| AggregateRecord {
                local_keys: HashSet::new(),
                last: now,
            });
        record.local_keys.insert(local_key.clone());
        record.last = now;
        let aggregate = record.local_keys.len() >= self.options.max_events;
        if aggregate {
            // Do not grow the set beyond the maximum. Upstream pops an arbitrary element;
            // popping the one just added keeps the outcome deterministic.
            record.local_keys.remove(&local_key);
        }
        self.aggregates.put(key.clone(), record);
        if !aggregate {
            return (event, full_key);
        }
        let aggregate = Event {
            metadata: ObjectMeta {
                name: Some(event_name(opt(&event.involved_object.name), now)),
                namespace: event.metadata.namespace.clone(),
                ..ObjectMeta::default()
            },
            count: Some(1),
            first_timestamp: Some(Time(now)),
            last_timestamp: Some(Time(now)),
            message: Some(format!("{AGGREGATE_MESSAGE_PREFIX}{}", opt(&event.message))),
            involved_object: event.involved_object,
            type_: event.type_,
            reason: event.reason,
            source: event.source,
            reporting_component: event.reporting_component,
            reporting_instance: event.reporting_instance,
            ..Event::default()
        };
        (aggregate, key)
    }

    /// `eventObserve`: an event seen before under `key` takes the first one's name,
    /// resourceVersion and firstTimestamp and the next count. Returns whether it was seen.
    fn observe(&mut self, mut event: Event, key: String) -> (Event, bool) {
        let last = self.logs.take(&key).filter(|l| l.count > 0);
        let seen = last.is_some();
        if let Some(last) = last {
            event.metadata.name = last.name;
            event.metadata.resource_version = last.resource_version;
            event.first_timestamp = last.first_timestamp;
            event.count = Some(last.count.saturating_add(1));
        }
        self.logs.put(
            key,
            EventLog {
                count: event.count.unwrap_or(1),
                first_timestamp: event.first_timestamp.clone(),
                name: event.metadata.name.clone(),
                resource_version: event.metadata.resource_version.clone(),
            },
        );
        (event, seen)
    }

    /// `EventSourceObjectSpamFilter.Filter`: whether the event is spam.
    fn filtered(&mut self, event: &Event, now: Timestamp) -> bool {
        let key = spam_key(event);
        let burst = f64::from(self.options.burst);
        let mut bucket = self.spam.take(&key).unwrap_or(TokenBucket {
            tokens: burst,
            last: None,
        });
        let accepted = bucket.try_accept(now, self.options.qps, burst);
        self.spam.put(key, bucket);
        !accepted
    }
}

/// Where events are written (upstream's `EventSink`). Implementations return the event as
/// stored and map errors to [`Error::NotFound`] (404), [`Error::Rejected`] (any other
/// status from the server, not retried), [`Error::Request`] (not retried) or
/// [`Error::Transport`] (retried).
#[async_trait]
pub trait Sink: Send + Sync {
    /// Creates the event in its namespace.
    async fn create(&self, event: &Event) -> Result<Event, Error>;
    /// Patches the stored event.
    async fn patch(&self, patch: &EventPatch) -> Result<Event, Error>;
}

/// Writes events through the API server: `POST /api/v1/namespaces/<ns>/events` and
/// `PATCH …/events/<name>` with a strategic merge patch.
#[derive(Clone)]
pub struct KubeSink {
    client: kube::Client,
}

impl KubeSink {
    pub fn new(client: kube::Client) -> Self {
        KubeSink { client }
    }
}

fn from_kube(err: kube::Error, namespace: &str, name: &str) -> Error {
    match err {
        kube::Error::Api(status) if status.code == 404 => Error::NotFound {
            namespace: namespace.to_string(),
            name: name.to_string(),
        },
        e => Error::from(e),
    }
}

/// The request creating `event` (`POST /api/v1/namespaces/<ns>/events`), with
/// `eventTime: null` as Go's zero `MicroTime` marshals.
pub fn create_request(event: &Event) -> Result<http::Request<Vec<u8>>, Error> {
    let namespace = opt(&event.metadata.namespace);
    let mut body = serde_json::to_value(event).map_err(|e| Error::Request(e.to_string()))?;
    if let Some(fields) = body.as_object_mut() {
        fields.insert("apiVersion".into(), "v1".into());
        fields.insert("kind".into(), "Event".into());
        fields.insert("eventTime".into(), Value::Null);
    }
    let bytes = serde_json::to_vec(&body).map_err(|e| Error::Request(e.to_string()))?;
    kube::core::Request::new(Event::url_path(&(), Some(namespace)))
        .create(&PostParams::default(), bytes)
        .map_err(|e| Error::Request(e.to_string()))
}

/// The request patching an event (`PATCH /api/v1/namespaces/<ns>/events/<name>`,
/// `application/strategic-merge-patch+json`).
pub fn patch_request(patch: &EventPatch) -> Result<http::Request<Vec<u8>>, Error> {
    kube::core::Request::new(Event::url_path(&(), Some(&patch.namespace)))
        .patch(
            &patch.name,
            &PatchParams::default(),
            &Patch::Strategic(patch.body()),
        )
        .map_err(|e| Error::Request(e.to_string()))
}

#[async_trait]
impl Sink for KubeSink {
    async fn create(&self, event: &Event) -> Result<Event, Error> {
        let request = create_request(event)?;
        self.client
            .request::<Event>(request)
            .await
            .map_err(|e| from_kube(e, opt(&event.metadata.namespace), opt(&event.metadata.name)))
    }

    async fn patch(&self, patch: &EventPatch) -> Result<Event, Error> {
        let request = patch_request(patch)?;
        self.client
            .request::<Event>(request)
            .await
            .map_err(|e| from_kube(e, &patch.namespace, &patch.name))
    }
}

/// One call a [`FakeSink`] received.
#[derive(Clone, Debug, PartialEq)]
pub enum SinkCall {
    Create(Box<Event>),
    Patch(EventPatch),
}

#[derive(Debug, Default)]
struct FakeState {
    calls: Vec<SinkCall>,
    events: BTreeMap<(String, String), Event>,
    failures: VecDeque<Error>,
    resource_version: u64,
}

/// An in-memory [`Sink`] for tests: records every call, stores events by namespace and
/// name (a create of an existing event is a 409, a patch of a missing one a 404), and
/// fails the next calls with errors queued by [`FakeSink::fail_next`]. Clones share state.
#[derive(Clone, Debug, Default)]
pub struct FakeSink {
    state: Arc<Mutex<FakeState>>,
}

impl FakeSink {
    pub fn new() -> Self {
        Self::default()
    }

    fn state(&self) -> MutexGuard<'_, FakeState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Every call received, in order.
    pub fn calls(&self) -> Vec<SinkCall> {
        self.state().calls.clone()
    }

    /// The stored events, by namespace and name.
    pub fn events(&self) -> Vec<Event> {
        self.state().events.values().cloned().collect()
    }

    /// Removes a stored event (as if it expired on the server).
    pub fn delete(&self, namespace: &str, name: &str) -> Option<Event> {
        self.state()
            .events
            .remove(&(namespace.to_string(), name.to_string()))
    }

    /// Makes the next call fail with `error` (queued: one error per call).
    pub fn fail_next(&self, error: Error) {
        self.state().failures.push_back(error);
    }
}

#[async_trait]
impl Sink for FakeSink {
    async fn create(&self, event: &Event) -> Result<Event, Error> {
        let mut state = self.state();
        state.calls.push(SinkCall::Create(Box::new(event.clone())));
        if let Some(error) = state.failures.pop_front() {
            return Err(error);
        }
        let key = (
            opt(&event.metadata.namespace).to_string(),
            opt(&event.metadata.name).to_string(),
        );
        if state.events.contains_key(&key) {
            return Err(Error::Rejected {
                code: 409,
                reason: "AlreadyExists".into(),
                message: format!("events \"{}\" already exists", key.1),
                causes: Vec::new(),
            });
        }
        state.resource_version += 1;
        let mut stored = event.clone();
        stored.metadata.resource_version = Some(state.resource_version.to_string());
        state.events.insert(key, stored.clone());
        Ok(stored)
    }

    async fn patch(&self, patch: &EventPatch) -> Result<Event, Error> {
        let mut state = self.state();
        state.calls.push(SinkCall::Patch(patch.clone()));
        if let Some(error) = state.failures.pop_front() {
            return Err(error);
        }
        state.resource_version += 1;
        let resource_version = state.resource_version.to_string();
        let key = (patch.namespace.clone(), patch.name.clone());
        let Some(stored) = state.events.get_mut(&key) else {
            return Err(Error::NotFound {
                namespace: patch.namespace.clone(),
                name: patch.name.clone(),
            });
        };
        patch.apply(stored);
        stored.metadata.resource_version = Some(resource_version);
        Ok(stored.clone())
    }
}

/// The recorder's clock (the real one is [`Timestamp::now`]).
pub type Clock = Arc<dyn Fn() -> Timestamp + Send + Sync>;

/// How a [`Recorder`] and its [`Worker`] run.
#[derive(Clone)]
pub struct RecorderConfig {
    /// Who the events are from.
    pub source: Source,
    /// Events queued before new ones are dropped.
    pub queue_length: usize,
    /// Attempts to write one event before giving up.
    pub max_tries: u32,
    /// Sleep between attempts (the first one is randomized).
    pub retry_sleep: Duration,
    pub correlator: CorrelatorOptions,
    pub clock: Clock,
}

impl RecorderConfig {
    /// Upstream's defaults for events from `component` on `host`.
    pub fn new(component: impl Into<String>, host: impl Into<String>) -> Self {
        RecorderConfig {
            source: Source::new(component, host),
            queue_length: MAX_QUEUED_EVENTS,
            max_tries: MAX_TRIES_PER_EVENT,
            retry_sleep: DEFAULT_RETRY_SLEEP,
            correlator: CorrelatorOptions::default(),
            clock: Arc::new(Timestamp::now),
        }
    }
}

struct Shared {
    source: Source,
    clock: Clock,
    queue: mpsc::Sender<(Occurrence, Timestamp)>,
}

/// Records events on behalf of one source (upstream's `EventRecorder`). Cheap to clone;
/// recording never blocks: when the queue is full the event is dropped (logged at
/// debug).
#[derive(Clone)]
pub struct Recorder {
    shared: Arc<Shared>,
}

impl fmt::Debug for Recorder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Recorder")
            .field("source", &self.shared.source)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder and the worker that writes its events to `sink`; run the worker with
    /// [`Worker::run`]. It ends when every clone of the recorder is dropped and the queue
    /// is drained.
    pub fn new(sink: impl Sink + 'static, config: RecorderConfig) -> (Recorder, Worker) {
        let (tx, rx) = mpsc::channel(config.queue_length.max(1));
        let recorder = Recorder {
            shared: Arc::new(Shared {
                source: config.source,
                clock: Arc::clone(&config.clock),
                queue: tx,
            }),
        };
        let worker = Worker {
            queue: rx,
            sink: Arc::new(sink),
            correlator: Correlator::new(config.correlator),
            max_tries: config.max_tries.max(1),
            retry_sleep: config.retry_sleep,
            clock: config.clock,
        };
        (recorder, worker)
    }

    /// A recorder whose worker runs as a background task (call inside a Tokio runtime).
    pub fn spawn(sink: impl Sink + 'static, config: RecorderConfig) -> Recorder {
        let (recorder, worker) = Self::new(sink, config);
        tokio::spawn(worker.run());
        recorder
    }

    pub fn source(&self) -> &Source {
        &self.shared.source
    }

    /// Records an event about `object` (upstream's `Event`).
    pub fn event(&self, object: &ObjectReference, type_: EventType, reason: &str, message: &str) {
        let occurrence = Occurrence {
            source: self.shared.source.clone(),
            involved_object: object.clone(),
            type_,
            reason: reason.to_string(),
            message: message.to_string(),
        };
        let now = (self.shared.clock)();
        match self.shared.queue.try_send((occurrence, now)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full((o, _))) => tracing::debug!(
                kind = opt(&o.involved_object.kind),
                namespace = opt(&o.involved_object.namespace),
                name = opt(&o.involved_object.name),
                reason = o.reason,
                message = o.message,
                "unable to record event: too many queued events, dropped"
            ),
            Err(mpsc::error::TrySendError::Closed((o, _))) => tracing::debug!(
                name = opt(&o.involved_object.name),
                reason = o.reason,
                "unable to record event: the recorder is shut down, dropped"
            ),
        }
    }

    /// [`Recorder::event`] with a formatted message (upstream's `Eventf`):
    /// `recorder.eventf(&r, EventType::Warning, "FailedCreate", format_args!("Error creating: {err}"))`.
    pub fn eventf(
        &self,
        object: &ObjectReference,
        type_: EventType,
        reason: &str,
        message: fmt::Arguments<'_>,
    ) {
        self.event(object, type_, reason, &message.to_string());
    }
}

/// Consumes a recorder's queue: correlates each event and writes it to the sink
/// (upstream's `recordToSink`).
pub struct Worker {
    queue: mpsc::Receiver<(Occurrence, Timestamp)>,
    sink: Arc<dyn Sink>,
    correlator: Correlator,
    max_tries: u32,
    retry_sleep: Duration,
    clock: Clock,
}

impl Worker {
    /// Runs until every recorder is dropped and the queue is empty.
    pub async fn run(mut self) {
        while let Some((occurrence, at)) = self.queue.recv().await {
            self.record(&occurrence, at).await;
        }
    }

    async fn record(&mut self, occurrence: &Occurrence, at: Timestamp) {
        let (event, patch) = match self.correlator.correlate(occurrence, at) {
            Action::Drop => {
                tracing::debug!(
                    component = occurrence.source.component,
                    kind = opt(&occurrence.involved_object.kind),
                    namespace = opt(&occurrence.involved_object.namespace),
                    name = opt(&occurrence.involved_object.name),
                    reason = occurrence.reason,
                    message = occurrence.message,
                    "event dropped by the spam filter"
                );
                return;
            }
            Action::Create(event) => (event, None),
            Action::Patch { patch, event } => (event, Some(patch)),
        };
        let mut tries = 0;
        loop {
            let error = match self.write(&event, patch.as_ref()).await {
                Ok(stored) => {
                    self.correlator.update_state(&stored);
                    return;
                }
                Err(e) => e,
            };
            if !error.is_retryable() {
                log_rejected(&event, &error);
                return;
            }
            tries += 1;
            if tries >= self.max_tries {
                tracing::error!(
                    namespace = opt(&event.metadata.namespace),
                    name = opt(&event.metadata.name),
                    reason = opt(&event.reason),
                    %error,
                    "unable to write event (retry limit exceeded)"
                );
                return;
            }
            tracing::warn!(
                namespace = opt(&event.metadata.namespace),
                name = opt(&event.metadata.name),
                %error,
                "unable to write event (may retry after sleeping)"
            );
            let mut delay = self.retry_sleep;
            if tries == 1 {
                // Randomize the first sleep so clients do not retry in lockstep.
                let fraction = f64::from((self.clock)().subsec_nanosecond().max(0)) / 1e9;
                delay = delay.mul_f64(fraction);
            }
            tokio::time::sleep(delay).await;
        }
    }

    /// `recordEvent`: patch an event seen before (creating it anew if it is gone), create
    /// a new one.
    async fn write(&self, event: &Event, patch: Option<&EventPatch>) -> Result<Event, Error> {
        if let Some(patch) = patch {
            match self.sink.patch(patch).await {
                Err(Error::NotFound { .. }) => {}
                other => return other,
            }
        }
        if event.metadata.resource_version.is_some() {
            let mut event = event.clone();
            event.metadata.resource_version = None;
            return self.sink.create(&event).await;
        }
        self.sink.create(event).await
    }
}

fn log_rejected(event: &Event, error: &Error) {
    let quiet = match error {
        Error::Rejected { reason, causes, .. } => {
            reason == "AlreadyExists" || causes.iter().any(|c| c == "NamespaceTerminating")
        }
        _ => false,
    };
    let namespace = opt(&event.metadata.namespace);
    let name = opt(&event.metadata.name);
    if quiet {
        tracing::debug!(namespace, name, %error, "server rejected event (will not retry)");
    } else {
        tracing::error!(namespace, name, %error, "server rejected event (will not retry)");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Node, Pod};

    fn t0() -> Timestamp {
        Timestamp::from_second(1_700_000_000).unwrap()
    }

    fn at(seconds: i64) -> Timestamp {
        t0() + SignedDuration::from_secs(seconds)
    }

    fn pod_ref(name: &str) -> ObjectReference {
        ObjectReference {
            kind: Some("Pod".into()),
            api_version: Some("v1".into()),
            namespace: Some("my-ns".into()),
            name: Some(name.into()),
            uid: Some("C934D34AFB20242".into()),
            ..ObjectReference::default()
        }
    }

    fn occurrence(reason: &str, message: &str) -> Occurrence {
        Occurrence {
            source: Source::new("kubelet", "node1"),
            involved_object: pod_ref("my-pod"),
            type_: EventType::Normal,
            reason: reason.into(),
            message: message.into(),
        }
    }

    /// Correlates and, as the worker does after a successful write, updates the state.
    fn play(c: &mut Correlator, o: &Occurrence, now: Timestamp) -> Action {
        let action = c.correlate(o, now);
        match &action {
            Action::Create(e) => c.update_state(e),
            Action::Patch { event, .. } => c.update_state(event),
            Action::Drop => {}
        }
        action
    }

    fn created(action: Action) -> Event {
        match action {
            Action::Create(e) => *e,
            other => panic!("expected a create, got {other:?}"),
        }
    }

    fn patched(action: Action) -> (EventPatch, Event) {
        match action {
            Action::Patch { patch, event } => (patch, *event),
            other => panic!("expected a patch, got {other:?}"),
        }
    }

    #[test]
    fn a_first_occurrence_is_created_with_upstreams_fields() {
        let mut c = Correlator::default();
        let now = t0() + SignedDuration::from_nanos(123_456_789);
        let e = created(c.correlate(&occurrence("Started", "Started container"), now));
        assert_eq!(
            e.metadata.name.as_deref(),
            Some(format!("my-pod.{:x}", now.as_nanosecond()).as_str())
        );
        assert_eq!(e.metadata.name.as_deref(), Some("my-pod.17979cfe3d85cd15"));
        assert_eq!(e.metadata.namespace.as_deref(), Some("my-ns"));
        assert_eq!(e.involved_object, pod_ref("my-pod"));
        assert_eq!(e.reason.as_deref(), Some("Started"));
        assert_eq!(e.message.as_deref(), Some("Started container"));
        assert_eq!(e.type_.as_deref(), Some("Normal"));
        let source = e.source.clone().unwrap();
        assert_eq!(source.component.as_deref(), Some("kubelet"));
        assert_eq!(source.host.as_deref(), Some("node1"));
        assert_eq!(e.first_timestamp, Some(Time(now)));
        assert_eq!(e.last_timestamp, Some(Time(now)));
        assert_eq!(e.count, Some(1));
        assert_eq!(e.reporting_component.as_deref(), Some("kubelet"));
        assert_eq!(e.reporting_instance.as_deref(), Some("node1"));
        assert_eq!(e.event_time, None);
    }

    #[test]
    fn events_about_cluster_scoped_objects_go_to_default() {
        let mut c = Correlator::default();
        let mut o = occurrence("NodeReady", "Node n1 status is now: NodeReady");
        o.involved_object = ObjectReference {
            kind: Some("Node".into()),
            api_version: Some("v1".into()),
            name: Some("n1".into()),
            uid: Some("n1".into()),
            ..ObjectReference::default()
        };
        let e = created(c.correlate(&o, t0()));
        assert_eq!(e.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(e.involved_object.namespace, None);
    }

    #[test]
    fn the_same_event_is_patched_with_an_increasing_count() {
        let mut c = Correlator::default();
        let o = occurrence("duplicate", "me again");
        let first = created(play(&mut c, &o, t0()));
        let (patch, event) = patched(play(&mut c, &o, at(5)));
        assert_eq!(
            patch,
            EventPatch {
                namespace: "my-ns".into(),
                name: first.metadata.name.clone().unwrap(),
                count: 2,
                last_timestamp: at(5),
                message: "me again".into(),
            }
        );
        assert_eq!(event.metadata.name, first.metadata.name);
        assert_eq!(event.first_timestamp, Some(Time(t0())));
        assert_eq!(event.last_timestamp, Some(Time(at(5))));
        assert_eq!(event.count, Some(2));
        let (patch, _) = patched(play(&mut c, &o, at(10)));
        assert_eq!(patch.count, 3);
    }

    #[test]
    fn the_same_event_just_counts_even_past_the_aggregation_threshold() {
        let mut c = Correlator::default();
        let o = occurrence("duplicate", "me again");
        for i in 0..DEFAULT_AGGREGATE_MAX_EVENTS as i64 {
            play(&mut c, &o, at(30 * i));
        }
        let (patch, event) = patched(play(&mut c, &o, at(300)));
        assert_eq!(patch.count, 11);
        assert_eq!(event.message.as_deref(), Some("me again"));
    }

    #[test]
    fn the_tenth_similar_event_is_aggregated() {
        let mut c = Correlator::default();
        for i in 0..9 {
            let e = created(play(
                &mut c,
                &occurrence("similar", &format!("similar message-{i}")),
                at(5 * i),
            ));
            assert_eq!(e.count, Some(1));
        }
        let e = created(play(&mut c, &occurrence("similar", "last one"), at(45)));
        assert_eq!(
            e.message.as_deref(),
            Some("(combined from similar events): last one")
        );
        assert_eq!(e.count, Some(1));
        assert_eq!(e.reason.as_deref(), Some("similar"));
        assert_eq!(e.metadata.name, Some(event_name("my-pod", at(45))));
        assert_eq!(e.metadata.namespace.as_deref(), Some("my-ns"));
        assert_eq!(e.first_timestamp, Some(Time(at(45))));
    }

    #[test]
    fn more_similar_events_count_the_aggregate() {
        let mut c = Correlator::default();
        for i in 0..10 {
            play(
                &mut c,
                &occurrence("similar", &format!("similar message-{i}")),
                at(5 * i),
            );
        }
        let aggregate_name = event_name("my-pod", at(45));
        let (patch, event) = patched(play(&mut c, &occurrence("similar", "another"), at(50)));
        assert_eq!(patch.name, aggregate_name);
        assert_eq!(patch.count, 2);
        assert_eq!(patch.message, "(combined from similar events): another");
        assert_eq!(event.first_timestamp, Some(Time(at(45))));
        let (patch, _) = patched(play(&mut c, &occurrence("similar", "yet another"), at(55)));
        assert_eq!(patch.count, 3);
        assert_eq!(patch.message, "(combined from similar events): yet another");
    }

    #[test]
    fn similar_events_further_apart_than_the_interval_are_not_aggregated() {
        let mut c = Correlator::default();
        for i in 0..12 {
            let e = created(play(
                &mut c,
                &occurrence("similar", &format!("similar message-{i}")),
                at(601 * i),
            ));
            assert!(!e.message.unwrap().starts_with(AGGREGATE_MESSAGE_PREFIX));
        }
    }

    #[test]
    fn events_of_other_reasons_types_or_objects_are_not_aggregated() {
        let mut c = Correlator::default();
        for i in 0..20 {
            let mut o = occurrence(&format!("reason-{i}"), &format!("message-{i}"));
            o.involved_object = pod_ref(&format!("pod-{i}"));
            if i % 2 == 0 {
                o.type_ = EventType::Warning;
            }
            let e = created(play(&mut c, &o, at(i)));
            assert_eq!(e.message, Some(format!("message-{i}")));
        }
    }

    #[test]
    fn events_about_different_containers_are_different_events() {
        let mut c = Correlator::default();
        let mut one = occurrence("similar", "similar message");
        one.involved_object.field_path = Some("spec.containers{container1}".into());
        let mut two = one.clone();
        two.involved_object.field_path = Some("spec.containers{container2}".into());
        created(play(&mut c, &two, t0()));
        let e = created(play(&mut c, &one, at(5)));
        assert_eq!(e.count, Some(1));
    }

    #[test]
    fn the_spam_filter_allows_a_burst_of_25_then_one_event_every_5_minutes() {
        let mut c = Correlator::default();
        let o = occurrence("duplicate", "me again");
        for i in 0..25 {
            assert_ne!(play(&mut c, &o, at(i)), Action::Drop, "event {i}");
        }
        assert_eq!(play(&mut c, &o, at(25)), Action::Drop);
        assert_eq!(play(&mut c, &o, at(60)), Action::Drop);
        // Another message about the same object shares the bucket.
        assert_eq!(
            play(&mut c, &occurrence("other", "other"), at(61)),
            Action::Drop
        );
        // One token back five minutes after the last accepted event; the drops counted.
        let (patch, _) = patched(play(&mut c, &o, at(24 + 300)));
        assert_eq!(patch.count, 28);
        assert_eq!(play(&mut c, &o, at(24 + 301)), Action::Drop);
    }

    #[test]
    fn the_spam_filter_is_per_source_and_object() {
        let mut c = Correlator::default();
        let o = occurrence("duplicate", "me again");
        for i in 0..25 {
            play(&mut c, &o, at(i));
        }
        assert_eq!(play(&mut c, &o, at(25)), Action::Drop);
        let mut other_object = o.clone();
        other_object.involved_object = pod_ref("other-pod");
        created(play(&mut c, &other_object, at(25)));
        let mut other_source = o.clone();
        other_source.source = Source::new("default-scheduler", "");
        let e = created(play(&mut c, &other_source, at(25)));
        assert_eq!(e.source.unwrap().host, None);
    }

    #[test]
    fn the_lru_evicts_the_least_recently_used_entry() {
        let mut lru = Lru::new(2);
        lru.put("a".into(), 1);
        lru.put("b".into(), 2);
        // Reading "a" makes "b" the least recent.
        let a = lru.take("a").unwrap();
        lru.put("a".into(), a);
        lru.put("c".into(), 3);
        assert_eq!(lru.len(), 2);
        assert_eq!(lru.take("b"), None);
        assert_eq!(lru.take("a"), Some(1));
        assert_eq!(lru.take("c"), Some(3));
    }

    #[test]
    fn the_default_caches_hold_4096_entries() {
        let mut c = Correlator::default();
        for i in 0..5000 {
            let mut o = occurrence("r", "m");
            o.involved_object = pod_ref(&format!("pod-{i}"));
            play(&mut c, &o, at(i));
        }
        assert_eq!(c.logs.len(), MAX_LRU_CACHE_ENTRIES);
        assert_eq!(c.aggregates.len(), MAX_LRU_CACHE_ENTRIES);
        assert_eq!(c.spam.len(), MAX_LRU_CACHE_ENTRIES);
    }

    #[test]
    fn an_evicted_event_is_created_anew() {
        let mut c = Correlator::new(CorrelatorOptions {
            lru_cache_size: 2,
            ..CorrelatorOptions::default()
        });
        let a = occurrence("a", "a");
        let b = occurrence("b", "b");
        let d = occurrence("d", "d");
        created(play(&mut c, &a, t0()));
        created(play(&mut c, &b, at(1)));
        let (patch, _) = patched(play(&mut c, &a, at(2)));
        assert_eq!(patch.count, 2);
        created(play(&mut c, &d, at(3)));
        // "b" was the least recently used event: forgotten.
        let e = created(play(&mut c, &b, at(4)));
        assert_eq!(e.count, Some(1));
        assert_eq!(e.metadata.name, Some(event_name("my-pod", at(4))));
    }

    #[test]
    fn update_state_keeps_the_servers_resource_version() {
        let mut c = Correlator::default();
        let o = occurrence("r", "m");
        let mut stored = created(c.correlate(&o, t0()));
        stored.metadata.resource_version = Some("42".into());
        c.update_state(&stored);
        let (_, event) = patched(c.correlate(&o, at(1)));
        assert_eq!(event.metadata.resource_version.as_deref(), Some("42"));
    }

    #[test]
    fn the_patch_body_is_upstreams_two_way_merge_patch() {
        let patch = EventPatch {
            namespace: "ns".into(),
            name: "pod.1".into(),
            count: 3,
            last_timestamp: at(5),
            message: "hello".into(),
        };
        assert_eq!(
            patch.body(),
            json!({"count": 3, "lastTimestamp": "2023-11-14T22:13:25Z", "message": "hello"})
        );
        let mut event = Event::default();
        patch.apply(&mut event);
        assert_eq!(event.count, Some(3));
        assert_eq!(event.last_timestamp, Some(Time(at(5))));
        assert_eq!(event.message.as_deref(), Some("hello"));
    }

    #[test]
    fn kube_sink_requests_have_upstreams_shape() {
        let mut c = Correlator::default();
        let event = created(c.correlate(&occurrence("Started", "Started container"), t0()));
        let request = create_request(&event).unwrap();
        assert_eq!(request.method(), http::Method::POST);
        assert_eq!(request.uri().path(), "/api/v1/namespaces/my-ns/events");
        let body: Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(body["apiVersion"], "v1");
        assert_eq!(body["kind"], "Event");
        assert_eq!(body["eventTime"], Value::Null);
        assert_eq!(body["count"], 1);
        assert_eq!(body["firstTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(body["lastTimestamp"], "2023-11-14T22:13:20Z");
        assert_eq!(
            body["source"],
            json!({"component": "kubelet", "host": "node1"})
        );
        assert_eq!(body["reportingComponent"], "kubelet");
        assert_eq!(body["reportingInstance"], "node1");
        assert_eq!(body["involvedObject"]["kind"], "Pod");
        assert_eq!(
            body["metadata"]["name"],
            event.metadata.name.clone().unwrap()
        );

        let patch = EventPatch {
            namespace: "my-ns".into(),
            name: "my-pod.1".into(),
            count: 2,
            last_timestamp: at(5),
            message: "again".into(),
        };
        let request = patch_request(&patch).unwrap();
        assert_eq!(request.method(), http::Method::PATCH);
        assert_eq!(
            request.uri().path(),
            "/api/v1/namespaces/my-ns/events/my-pod.1"
        );
        assert_eq!(
            request.headers()[http::header::CONTENT_TYPE],
            "application/strategic-merge-patch+json"
        );
        let body: Value = serde_json::from_slice(request.body()).unwrap();
        assert_eq!(body, patch.body());
    }

    #[test]
    fn api_errors_map_to_retry_decisions() {
        let status = |code: u16, reason: &str| {
            kube::Error::Api(Box::new(kube::core::Status {
                code,
                reason: reason.into(),
                message: "m".into(),
                ..kube::core::Status::default()
            }))
        };
        assert_eq!(
            from_kube(status(404, "NotFound"), "ns", "e"),
            Error::NotFound {
                namespace: "ns".into(),
                name: "e".into()
            }
        );
        let conflict = from_kube(status(409, "AlreadyExists"), "ns", "e");
        assert!(matches!(&conflict, Error::Rejected { code: 409, .. }));
        assert!(!conflict.is_retryable());
        assert!(!from_kube(status(503, "ServiceUnavailable"), "ns", "e").is_retryable());
        let io = kube::Error::ReadEvents(std::io::Error::other("connection reset"));
        assert!(from_kube(io, "ns", "e").is_retryable());
    }

    #[test]
    fn object_references_come_from_the_type_and_metadata() {
        let mut pod = Pod::default();
        pod.metadata.name = Some("web-0".into());
        pod.metadata.namespace = Some("prod".into());
        pod.metadata.uid = Some("u1".into());
        pod.metadata.resource_version = Some("7".into());
        assert_eq!(
            object_reference(&pod),
            ObjectReference {
                api_version: Some("v1".into()),
                kind: Some("Pod".into()),
                namespace: Some("prod".into()),
                name: Some("web-0".into()),
                uid: Some("u1".into()),
                resource_version: Some("7".into()),
                field_path: None,
            }
        );
        let mut node = Node::default();
        node.metadata.name = Some("n1".into());
        let r = object_reference(&node);
        assert_eq!(r.kind.as_deref(), Some("Node"));
        assert_eq!(r.namespace, None);
        let deployment = k8s_openapi::api::apps::v1::Deployment::default();
        assert_eq!(
            object_reference(&deployment).api_version.as_deref(),
            Some("apps/v1")
        );
    }
}
