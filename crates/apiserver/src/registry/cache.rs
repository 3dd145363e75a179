//! The watch cache: one per storage prefix, fed by a single store watch, serving lists and
//! watches so N watchers cost one store watch (upstream's `Cacher`).
//!
//! It holds every current object of its prefix (as response-ready bytes plus the labels and
//! selectable fields that filters need) and a window of recent events, so a watch can
//! resume from a recent resourceVersion. Watchers get events through bounded channels; one
//! that cannot keep up is closed (its client re-watches), never blocking the others.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use store::{Backend, Event, ListOptions, Revision, StoreError, WatchOptions};
use tokio::sync::{mpsc, watch};

use super::stored::with_resource_version;

/// Extracts the selectable fields of an object (`metadata.name`, `spec.nodeName`, …).
pub type FieldsFn = Arc<dyn Fn(&Value) -> Vec<(String, String)> + Send + Sync>;

/// One object as the cache holds it.
#[derive(Debug)]
pub struct CachedObject {
    pub key: String,
    pub rv: Revision,
    /// The JSON object including its `metadata.resourceVersion`.
    pub bytes: Bytes,
    pub namespace: String,
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub fields: Vec<(String, String)>,
    /// Initializers are still pending: hidden unless the request includes uninitialized
    /// objects.
    pub uninitialized: bool,
}

impl CachedObject {
    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn field(&self, key: &str) -> Option<&str> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn value(&self) -> Option<Value> {
        serde_json::from_slice(&self.bytes).ok()
    }
}

/// A cached object from stored bytes at revision `rv`.
pub fn make_object(
    key: &str,
    raw: &[u8],
    rv: Revision,
    fields: &dyn Fn(&Value) -> Vec<(String, String)>,
) -> Arc<CachedObject> {
    let bytes = with_resource_version(raw, rv);
    let value: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
    let labels = api::meta::labels(&value)
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Arc::new(CachedObject {
        key: key.to_string(),
        rv,
        namespace: api::meta::namespace(&value).unwrap_or_default().to_string(),
        name: api::meta::name(&value).unwrap_or_default().to_string(),
        labels,
        fields: fields(&value),
        uninitialized: api::kinds::initializers::is_uninitialized(&value),
        bytes,
    })
}

/// Watch event types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
    Bookmark,
}

impl EventType {
    pub fn as_str(self) -> &'static str {
        match self {
            EventType::Added => "ADDED",
            EventType::Modified => "MODIFIED",
            EventType::Deleted => "DELETED",
            EventType::Bookmark => "BOOKMARK",
        }
    }
}

/// A change in the cache.
#[derive(Debug)]
pub struct CacheEvent {
    pub kind: EventType,
    /// The object after the change (for a deletion: its last state, at the deletion's
    /// resourceVersion).
    pub obj: Arc<CachedObject>,
    pub prev: Option<Arc<CachedObject>>,
    pub rv: Revision,
}

/// Which objects a list or watch wants.
pub type Predicate = Arc<dyn Fn(&CachedObject) -> bool + Send + Sync>;

/// What a watcher receives.
#[derive(Debug, Clone)]
pub enum WatchMsg {
    Event(EventType, Arc<CachedObject>),
    /// Everything up to this revision has been delivered.
    Bookmark(Revision),
    /// The initial events of a `sendInitialEvents` watch are done, at this revision.
    InitialEventsEnd(Revision),
    /// The watch cannot continue (e.g. the cache had to relist); the client re-watches.
    Error(api::ApiError),
}

struct Watcher {
    predicate: Predicate,
    tx: mpsc::Sender<WatchMsg>,
    bookmarks: bool,
    last_bookmark: Instant,
}

struct State {
    objects: BTreeMap<String, Arc<CachedObject>>,
    /// The cache reflects the store up to this revision.
    revision: Revision,
    /// Recent events with the time they arrived, oldest first.
    events: VecDeque<(Instant, Arc<CacheEvent>)>,
    /// Events at or below this revision are no longer in `events`.
    window_floor: Revision,
    watchers: Vec<Watcher>,
    ready: bool,
}

/// Upstream keeps at least 75 s of history for resuming watches.
const EVENT_WINDOW: Duration = Duration::from_secs(75);
const MAX_EVENTS: usize = 10_000;
const MIN_EVENTS: usize = 100;
const WATCHER_BUFFER: usize = 1024;
/// Upstream sends bookmarks to a watcher about once a minute.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// The cache of one storage prefix.
pub struct Cacher {
    prefix: String,
    store: Arc<dyn Backend>,
    fields: FieldsFn,
    state: Mutex<State>,
    revision_tx: watch::Sender<Revision>,
    /// Bumped whenever the set of cached objects changes (not on progress notifications),
    /// so consumers re-derive what they parsed from the cache only when needed.
    generation_tx: watch::Sender<u64>,
}

/// A watch resuming too far back.
#[derive(Debug)]
pub struct TooOld {
    pub requested: Revision,
    pub oldest: Revision,
}

impl Cacher {
    /// Creates the cache and starts feeding it from the store.
    pub fn start(store: Arc<dyn Backend>, prefix: String, fields: FieldsFn) -> Arc<Cacher> {
        let (revision_tx, _) = watch::channel(0);
        let cacher = Arc::new(Cacher {
            prefix,
            store,
            fields,
            state: Mutex::new(State {
                objects: BTreeMap::new(),
                revision: 0,
                events: VecDeque::new(),
                window_floor: 0,
                watchers: Vec::new(),
                ready: false,
            }),
            revision_tx,
            generation_tx: watch::channel(0).0,
        });
        let weak = Arc::downgrade(&cacher);
        tokio::spawn(async move {
            let mut backoff = Duration::from_millis(100);
            loop {
                let Some(c) = weak.upgrade() else { return };
                match c.run().await {
                    Ok(()) => return,
                    Err(e) => {
                        tracing::warn!(prefix = %c.prefix, error = %e, "watch cache restarting");
                        c.reset(&e);
                    }
                }
                drop(c);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
        });
        cacher
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    fn make(&self, key: &str, raw: &[u8], rv: Revision) -> Arc<CachedObject> {
        make_object(key, raw, rv, &*self.fields)
    }

    /// Lists the prefix, then applies the store's events until the store fails.
    async fn run(self: &Arc<Self>) -> Result<(), StoreError> {
        let mut objects = BTreeMap::new();
        let mut start_after: Option<String> = None;
        let mut revision = 0;
        loop {
            let page = self
                .store
                .list(ListOptions {
                    prefix: self.prefix.clone(),
                    start_after: start_after.clone(),
                    limit: 5000,
                    revision,
                })
                .await?;
            revision = page.revision;
            for kv in &page.kvs {
                objects.insert(
                    kv.key.clone(),
                    self.make(&kv.key, &kv.value, kv.mod_revision),
                );
            }
            start_after = page.kvs.last().map(|kv| kv.key.clone());
            if !page.more {
                break;
            }
        }
        let mut stream = self
            .store
            .watch(
                &self.prefix,
                revision,
                WatchOptions {
                    progress_interval: Some(Duration::from_secs(5)),
                },
            )
            .await?;
        {
            let mut st = self.lock();
            st.objects = objects;
            st.revision = revision;
            st.window_floor = revision;
            st.events.clear();
            st.ready = true;
        }
        self.revision_tx.send_replace(revision);
        self.generation_tx.send_modify(|g| *g += 1);
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                ev = stream.next() => match ev {
                    None => return Err(StoreError::unavailable("store watch ended")),
                    Some(Err(e)) => return Err(e),
                    Some(Ok(ev)) => self.apply(ev),
                },
                _ = tick.tick() => self.housekeeping(),
            }
            if Arc::strong_count(self) == 1 {
                // Nobody holds the cache but this task: the registry dropped it.
                return Ok(());
            }
        }
    }

    fn apply(&self, ev: Event) {
        let mut st = self.lock();
        let event = match ev {
            Event::Progress { revision } => {
                if revision > st.revision {
                    st.revision = revision;
                    drop(st);
                    self.revision_tx.send_replace(revision);
                }
                return;
            }
            Event::Put { kv, .. } => {
                let obj = self.make(&kv.key, &kv.value, kv.mod_revision);
                let prev = st.objects.insert(kv.key.clone(), Arc::clone(&obj));
                let kind = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                CacheEvent {
                    kind,
                    obj,
                    prev,
                    rv: kv.mod_revision,
                }
            }
            Event::Delete { revision, prev } => {
                let old = st.objects.remove(&prev.key);
                let obj = self.make(&prev.key, &prev.value, revision);
                CacheEvent {
                    kind: EventType::Deleted,
                    obj,
                    prev: old,
                    rv: revision,
                }
            }
        };
        let event = Arc::new(event);
        st.revision = st.revision.max(event.rv);
        dispatch(&mut st.watchers, &event);
        st.events.push_back((Instant::now(), Arc::clone(&event)));
        let revision = st.revision;
        trim(&mut st);
        drop(st);
        self.revision_tx.send_replace(revision);
        self.generation_tx.send_modify(|g| *g += 1);
    }

    fn housekeeping(&self) {
        let mut st = self.lock();
        let revision = st.revision;
        let now = Instant::now();
        st.watchers.retain_mut(|w| {
            if w.tx.is_closed() {
                return false;
            }
            if w.bookmarks && now.duration_since(w.last_bookmark) >= BOOKMARK_EVERY {
                w.last_bookmark = now;
                return w.tx.try_send(WatchMsg::Bookmark(revision)).is_ok();
            }
            true
        });
        trim(&mut st);
    }

    /// After a failure: every watcher ends (clients re-watch) and history is forgotten.
    fn reset(&self, e: &StoreError) {
        let mut st = self.lock();
        for w in st.watchers.drain(..) {
            let _ = w.tx.try_send(WatchMsg::Error(api::ApiError::gone(format!(
                "the watch cache is re-initializing: {e}"
            ))));
        }
        st.events.clear();
        st.window_floor = st.revision;
        st.ready = false;
    }

    /// The revision the cache has reached.
    pub fn revision(&self) -> Revision {
        *self.revision_tx.borrow()
    }

    /// How many times the cached objects changed (a counter, not a store revision).
    pub fn generation(&self) -> u64 {
        *self.generation_tx.borrow()
    }

    /// A receiver notified whenever the cached objects change.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.generation_tx.subscribe()
    }

    /// Waits until the cache reflects the store up to `rev`; `false` on timeout.
    pub async fn wait_for(&self, rev: Revision, timeout: Duration) -> bool {
        let mut rx = self.revision_tx.subscribe();
        let ready = |st: &Self| st.lock().ready;
        let deadline = tokio::time::Instant::now() + timeout;
        let mut asked = false;
        loop {
            if *rx.borrow_and_update() >= rev && ready(self) {
                return true;
            }
            if !asked {
                asked = true;
                let _ = self.store.request_progress().await;
            }
            match tokio::time::timeout_at(deadline, rx.changed()).await {
                Ok(Ok(())) => {}
                _ => return *rx.borrow() >= rev && ready(self),
            }
        }
    }

    /// Waits until the cache has caught up with the store's current revision (a consistent
    /// read, as upstream's consistent list from cache).
    pub async fn sync(&self, timeout: Duration) -> Result<Revision, StoreError> {
        let current = self.store.current_revision().await?;
        if self.wait_for(current, timeout).await {
            Ok(self.revision())
        } else {
            Err(StoreError::unavailable(format!(
                "watch cache for {} did not reach revision {current} in time",
                self.prefix
            )))
        }
    }

    /// The current objects matching `predicate`, in key order, and the revision.
    pub fn list(
        &self,
        predicate: &dyn Fn(&CachedObject) -> bool,
        under: &str,
    ) -> (Vec<Arc<CachedObject>>, Revision) {
        let st = self.lock();
        let items = st
            .objects
            .range(under.to_string()..)
            .take_while(|(k, _)| k.starts_with(under))
            .map(|(_, o)| o)
            .filter(|o| predicate(o))
            .cloned()
            .collect();
        (items, st.revision)
    }

    /// One current object by key.
    pub fn get(&self, key: &str) -> Option<Arc<CachedObject>> {
        self.lock().objects.get(key).cloned()
    }

    /// Starts a watch.
    ///
    /// - `from: None` — the current state as ADDED events, then changes (`initial` makes it
    ///   end the initial events with [`WatchMsg::InitialEventsEnd`]);
    /// - `from: Some(rv)` — every change after `rv`, if the window still holds it.
    pub fn watch(
        &self,
        from: Option<Revision>,
        predicate: Predicate,
        under: &str,
        bookmarks: bool,
        initial_end_marker: bool,
    ) -> Result<mpsc::Receiver<WatchMsg>, TooOld> {
        let mut st = self.lock();
        let mut backlog: Vec<WatchMsg> = Vec::new();
        match from {
            None => {
                for obj in st
                    .objects
                    .range(under.to_string()..)
                    .take_while(|(k, _)| k.starts_with(under))
                    .map(|(_, o)| o)
                {
                    if predicate(obj) {
                        backlog.push(WatchMsg::Event(EventType::Added, Arc::clone(obj)));
                    }
                }
                if initial_end_marker {
                    backlog.push(WatchMsg::InitialEventsEnd(st.revision));
                }
            }
            Some(rv) => {
                if rv < st.window_floor {
                    return Err(TooOld {
                        requested: rv,
                        oldest: st.window_floor + 1,
                    });
                }
                for (_, ev) in st.events.iter().filter(|(_, e)| e.rv > rv) {
                    if !ev.obj.key.starts_with(under) {
                        continue;
                    }
                    if let Some(kind) = translate(ev, &*predicate) {
                        backlog.push(WatchMsg::Event(kind, Arc::clone(&ev.obj)));
                    }
                }
            }
        }
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER.max(backlog.len() + 16));
        for msg in backlog {
            // The channel was sized to hold the backlog.
            let _ = tx.try_send(msg);
        }
        let under = under.to_string();
        let scoped: Predicate =
            Arc::new(move |o: &CachedObject| o.key.starts_with(&under) && predicate(o));
        st.watchers.push(Watcher {
            predicate: scoped,
            tx,
            bookmarks,
            last_bookmark: Instant::now(),
        });
        Ok(rx)
    }

    pub fn watcher_count(&self) -> usize {
        self.lock().watchers.len()
    }

    pub fn object_count(&self) -> usize {
        self.lock().objects.len()
    }
}

/// Keeps at least `EVENT_WINDOW` of events (between `MIN_EVENTS` and `MAX_EVENTS`).
fn trim(st: &mut State) {
    while st.events.len() > MIN_EVENTS
        && (st.events.len() > MAX_EVENTS
            || st
                .events
                .front()
                .is_some_and(|(t, _)| t.elapsed() > EVENT_WINDOW))
    {
        if let Some((_, old)) = st.events.pop_front() {
            st.window_floor = old.rv;
        }
    }
}

/// How an event looks to a watcher with `predicate`: a modification that makes an object
/// match is an ADDED, one that makes it stop matching a DELETED.
fn translate(ev: &CacheEvent, predicate: &dyn Fn(&CachedObject) -> bool) -> Option<EventType> {
    let now = predicate(&ev.obj);
    let before = ev.prev.as_ref().is_some_and(|p| predicate(p));
    match ev.kind {
        EventType::Added if now => Some(EventType::Added),
        EventType::Modified => match (before, now) {
            (true, true) => Some(EventType::Modified),
            (false, true) => Some(EventType::Added),
            (true, false) => Some(EventType::Deleted),
            (false, false) => None,
        },
        EventType::Deleted if now || before => Some(EventType::Deleted),
        _ => None,
    }
}

fn dispatch(watchers: &mut Vec<Watcher>, ev: &Arc<CacheEvent>) {
    watchers.retain(|w| {
        let Some(kind) = translate(ev, &*w.predicate) else {
            return !w.tx.is_closed();
        };
        match w.tx.try_send(WatchMsg::Event(kind, Arc::clone(&ev.obj))) {
            Ok(()) => true,
            // A watcher that cannot keep up is closed; its client re-watches from the last
            // resourceVersion it saw.
            Err(_) => false,
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::memory::MemoryBackend;

    fn no_fields() -> FieldsFn {
        Arc::new(|_| Vec::new())
    }

    fn obj(name: &str, label: &str) -> bytes::Bytes {
        bytes::Bytes::from(
            serde_json::to_vec(&serde_json::json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": "ns", "labels": {"app": label}}
            }))
            .unwrap(),
        )
    }

    #[tokio::test]
    async fn lists_and_watches() {
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        store
            .create("/registry/configmaps/ns/a", obj("a", "x"), None)
            .await
            .unwrap();
        let c = Cacher::start(
            Arc::clone(&store),
            "/registry/configmaps/".into(),
            no_fields(),
        );
        c.sync(Duration::from_secs(5)).await.unwrap();
        let all: Predicate = Arc::new(|_| true);
        let (items, rv) = c.list(&*all, "/registry/configmaps/");
        assert_eq!(items.len(), 1);
        assert!(rv >= items[0].rv);
        let v = items[0].value().unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], items[0].rv.to_string());

        let app_y: Predicate = Arc::new(|o| o.label("app") == Some("y"));
        let mut w = c
            .watch(
                Some(rv),
                Arc::clone(&app_y),
                "/registry/configmaps/ns/",
                false,
                false,
            )
            .unwrap();
        let kv = store
            .get("/registry/configmaps/ns/a")
            .await
            .unwrap()
            .unwrap();
        // a starts matching: ADDED; stops matching: DELETED.
        let kv = store
            .update(&kv.key, obj("a", "y"), kv.mod_revision, None)
            .await
            .unwrap();
        store
            .update(&kv.key, obj("a", "z"), kv.mod_revision, None)
            .await
            .unwrap();
        let first = w.recv().await.unwrap();
        assert!(matches!(first, WatchMsg::Event(EventType::Added, _)));
        let second = w.recv().await.unwrap();
        assert!(matches!(second, WatchMsg::Event(EventType::Deleted, _)));

        // Resuming from a revision replays; from before the window fails.
        let mut again = c
            .watch(
                Some(rv),
                Arc::clone(&all),
                "/registry/configmaps/",
                false,
                false,
            )
            .unwrap();
        assert!(matches!(
            again.recv().await.unwrap(),
            WatchMsg::Event(EventType::Modified, _)
        ));
        assert!(c.watch(Some(0), all, "/", false, false).is_err());
    }

    #[tokio::test]
    async fn consistent_reads_wait_for_other_prefixes() {
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let c = Cacher::start(Arc::clone(&store), "/registry/pods/".into(), no_fields());
        c.sync(Duration::from_secs(5)).await.unwrap();
        let other = store
            .create("/registry/configmaps/ns/a", obj("a", "x"), None)
            .await
            .unwrap();
        let rev = c.sync(Duration::from_secs(5)).await.unwrap();
        assert!(rev >= other.mod_revision);
    }
}
