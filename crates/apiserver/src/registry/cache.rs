//! The watch cache: one per storage prefix, fed by a single store watch, serving lists and
//! watches so N watchers cost one store watch (upstream's `Cacher`).
//!
//! It holds every current object of its prefix (as response-ready bytes plus the labels and
//! selectable fields that filters need) and a window of recent events, so a watch can
//! resume from a recent resourceVersion. Watchers get events through bounded channels; one
//! that cannot keep up is closed (its client re-watches), never blocking the others.

use std::collections::{BTreeSet, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::StreamExt;
use serde_json::Value;
use store::{Backend, Event, ListOptions, Revision, StoreError, WatchOptions};
use tokio::sync::{mpsc, watch};

use super::packed::{Body, Packer};
use super::stored::with_resource_version;

/// Extracts the selectable fields of an object (`metadata.name`, `spec.nodeName`, …).
pub type FieldsFn = Arc<dyn Fn(&Value) -> Vec<(String, String)> + Send + Sync>;

/// What filters need of a cached object: its key, namespace, name, labels and selectable
/// fields, packed into one string and one offset table (two allocations per object rather
/// than two per label and per field, so a cached pod's index costs ~0.3 KB, not ~1.5 KB).
/// A field's name is an interned id (the same dozen names recur in every object), and
/// `metadata.name` and `metadata.namespace` are answered from the name and namespace.
/// Fields with an empty value are left out: a field selector reads a missing field as `""`.
#[derive(Debug, PartialEq, Eq)]
pub struct Meta {
    text: Box<str>,
    /// Offsets into `text`: the key's end; the namespace's start and end and the name's
    /// start and end (inside the key when it ends in `<namespace>/<name>`, as every key
    /// does, so they are not stored twice; otherwise appended after it); then the end of
    /// a key and of a value per label; then per field its name's id (see
    /// [`field_names`]) and its value's end.
    ends: Offsets,
    labels: u32,
    /// Initializers are still pending: hidden unless the request includes uninitialized
    /// objects.
    pub uninitialized: bool,
}

/// `Meta`'s offsets and field ids: two bytes each when all fit (any object whose text is
/// under 64 KiB), else four, stored as two halves. Half the offset table of a pod
/// (about 25 entries) is about 2.5 MB at 50,000 pods.
#[derive(Debug, PartialEq, Eq)]
struct Offsets {
    halves: Box<[u16]>,
    wide: bool,
}

impl Offsets {
    fn new(values: Vec<u32>) -> Offsets {
        match values
            .iter()
            .map(|v| u16::try_from(*v).ok())
            .collect::<Option<Box<[u16]>>>()
        {
            Some(halves) => Offsets {
                halves,
                wide: false,
            },
            None => Offsets {
                halves: values
                    .iter()
                    .flat_map(|v| [(v >> 16) as u16, (v & 0xffff) as u16])
                    .collect(),
                wide: true,
            },
        }
    }

    fn get(&self, i: usize) -> Option<u32> {
        if self.wide {
            let high = *self.halves.get(2 * i)?;
            let low = *self.halves.get(2 * i + 1)?;
            Some((u32::from(high) << 16) | u32::from(low))
        } else {
            self.halves.get(i).copied().map(u32::from)
        }
    }

    fn len(&self) -> usize {
        if self.wide {
            self.halves.len() / 2
        } else {
            self.halves.len()
        }
    }

    fn heap_bytes(&self) -> usize {
        2 * self.halves.len()
    }
}

/// The index in `Meta::ends` of the first label's key's end (after the key's end and the
/// namespace's and name's offsets); the first label starts where the name ends, which is
/// the key's end when the name is inside the key.
const LABELS: usize = 5;

/// Where the namespace and the name start inside `key`, if it ends in
/// `/<namespace>/<name>` (`/<name>` for a cluster-scoped object).
fn within_key(key: &str, namespace: &str, name: &str) -> Option<(usize, usize)> {
    let before_name = key.strip_suffix(name)?.strip_suffix('/')?;
    let name_at = key.len() - name.len();
    if namespace.is_empty() || name.is_empty() {
        return (!name.is_empty()).then_some((name_at, name_at));
    }
    let namespace_at = before_name
        .strip_suffix(namespace)?
        .strip_suffix('/')
        .map(|_| before_name.len() - namespace.len())?;
    Some((namespace_at, name_at))
}

impl Meta {
    pub fn new<'a>(
        key: &str,
        namespace: &str,
        name: &str,
        labels: impl IntoIterator<Item = (&'a str, &'a str)>,
        fields: impl IntoIterator<Item = (&'a str, &'a str)>,
        uninitialized: bool,
    ) -> Meta {
        let mut text = String::with_capacity(key.len() + 64);
        let mut ends = Vec::with_capacity(16);
        let end = |text: &String| u32::try_from(text.len()).unwrap_or(u32::MAX);
        text.push_str(key);
        ends.push(end(&text));
        let (namespace_at, name_at) = within_key(key, namespace, name).unwrap_or_else(|| {
            text.push_str(namespace);
            text.push_str(name);
            (key.len(), key.len() + namespace.len())
        });
        for (start, len) in [(namespace_at, namespace.len()), (name_at, name.len())] {
            for offset in [start, start + len] {
                ends.push(u32::try_from(offset).unwrap_or(u32::MAX));
            }
        }
        let mut n = 0u32;
        for (k, v) in labels {
            for part in [k, v] {
                text.push_str(part);
                ends.push(end(&text));
            }
            n += 1;
        }
        for (k, v) in fields {
            if !v.is_empty() && !matches!(k, "metadata.name" | "metadata.namespace") {
                ends.push(field_names::id(k));
                text.push_str(v);
                ends.push(end(&text));
            }
        }
        Meta {
            text: text.into_boxed_str(),
            ends: Offsets::new(ends),
            labels: n,
            uninitialized,
        }
    }

    fn slice(&self, start: u32, end: u32) -> &str {
        self.text
            .get(start as usize..end as usize)
            .unwrap_or_default()
    }

    /// Part `i` of `text`: from the end of part `i - 1` to its own end.
    fn part(&self, i: usize) -> &str {
        let start = match i {
            0 => 0,
            _ => self.ends.get(i - 1).unwrap_or(0),
        };
        self.slice(start, self.ends.get(i).unwrap_or(start))
    }

    /// The text between the offsets at `ends[i]` and `ends[i + 1]`.
    fn range(&self, i: usize) -> &str {
        match (self.ends.get(i), self.ends.get(i + 1)) {
            (Some(start), Some(end)) => self.slice(start, end),
            _ => "",
        }
    }

    /// The storage key.
    pub fn key(&self) -> &str {
        self.part(0)
    }

    /// `""` for a cluster-scoped object.
    pub fn namespace(&self) -> &str {
        self.range(1)
    }

    pub fn name(&self) -> &str {
        self.range(3)
    }

    pub fn labels(&self) -> impl Iterator<Item = (&str, &str)> {
        (LABELS..LABELS + 2 * self.labels as usize)
            .step_by(2)
            .map(move |i| (self.part(i), self.part(i + 1)))
    }

    /// The selectable fields with a value, by name id (without `metadata.name` and
    /// `metadata.namespace`).
    fn field_ids(&self) -> impl Iterator<Item = (u32, &str)> {
        let first = LABELS + 2 * self.labels as usize;
        let mut start = first
            .checked_sub(1)
            .and_then(|i| self.ends.get(i))
            .unwrap_or(0);
        (first..self.ends.len().saturating_sub(1))
            .step_by(2)
            .map(move |i| {
                let id = self.ends.get(i).unwrap_or(u32::MAX);
                let end = self.ends.get(i + 1).unwrap_or(start);
                let value = self.slice(start, end);
                start = end;
                (id, value)
            })
    }

    /// The selectable fields with a value (without `metadata.name` and
    /// `metadata.namespace`, which [`Meta::field`] answers from the name and namespace).
    pub fn fields(&self) -> impl Iterator<Item = (&'static str, &str)> {
        self.field_ids()
            .map(|(id, v)| (field_names::name(id).unwrap_or_default(), v))
    }

    pub fn label(&self, key: &str) -> Option<&str> {
        self.labels().find(|(k, _)| *k == key).map(|(_, v)| v)
    }

    pub fn field(&self, key: &str) -> Option<&str> {
        match key {
            "metadata.name" => Some(self.name()),
            "metadata.namespace" => Some(self.namespace()),
            _ => {
                let id = field_names::known(key)?;
                self.field_ids().find(|(i, _)| *i == id).map(|(_, v)| v)
            }
        }
    }

    /// Heap bytes held (for the cache's size metrics).
    pub fn heap_bytes(&self) -> usize {
        self.text.len() + self.ends.heap_bytes()
    }
}

/// The names of selectable fields, interned process-wide: each distinct name (from the
/// built-in strategies' lists and custom resources' `selectableFields`) is stored once and
/// never freed, so objects keep a 4-byte id per field instead of its name.
mod field_names {
    use std::collections::HashMap;
    use std::sync::{LazyLock, RwLock};

    #[derive(Default)]
    struct Names {
        by_id: Vec<&'static str>,
        ids: HashMap<&'static str, u32>,
    }

    static NAMES: LazyLock<RwLock<Names>> = LazyLock::new(RwLock::default);

    fn read() -> std::sync::RwLockReadGuard<'static, Names> {
        NAMES
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id of `name`, interning it on first use.
    pub fn id(name: &str) -> u32 {
        if let Some(id) = known(name) {
            return id;
        }
        let mut names = NAMES
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(id) = names.ids.get(name) {
            return *id;
        }
        let id = u32::try_from(names.by_id.len()).unwrap_or(u32::MAX);
        let name: &'static str = Box::leak(name.to_owned().into_boxed_str());
        names.by_id.push(name);
        names.ids.insert(name, id);
        id
    }

    /// The id of `name` if some object has it.
    pub fn known(name: &str) -> Option<u32> {
        read().ids.get(name).copied()
    }

    pub fn name(id: u32) -> Option<&'static str> {
        read().by_id.get(id as usize).copied()
    }
}

/// One object as the cache holds it.
#[derive(Debug)]
pub struct CachedObject {
    pub rv: Revision,
    /// The JSON object including its `metadata.resourceVersion` (compressed in big
    /// caches).
    pub body: Body,
    pub meta: Arc<Meta>,
}

impl std::ops::Deref for CachedObject {
    type Target = Meta;

    fn deref(&self) -> &Meta {
        &self.meta
    }
}

/// Object versions alive anywhere in the process (current objects, histories, watch
/// queues, responses being written) and their bodies' bytes: `/metrics` shows them beside
/// what the caches count, so versions held elsewhere show.
static LIVE_VERSIONS: AtomicUsize = AtomicUsize::new(0);
static LIVE_BODY_BYTES: AtomicUsize = AtomicUsize::new(0);

/// How many object versions are alive, and their bodies' bytes.
pub fn live_versions() -> (usize, usize) {
    (
        LIVE_VERSIONS.load(Ordering::Relaxed),
        LIVE_BODY_BYTES.load(Ordering::Relaxed),
    )
}

impl Drop for CachedObject {
    fn drop(&mut self) {
        LIVE_VERSIONS.fetch_sub(1, Ordering::Relaxed);
        LIVE_BODY_BYTES.fetch_sub(self.body.stored(), Ordering::Relaxed);
    }
}

impl CachedObject {
    fn new(rv: Revision, body: Body, meta: Arc<Meta>) -> Arc<CachedObject> {
        LIVE_VERSIONS.fetch_add(1, Ordering::Relaxed);
        LIVE_BODY_BYTES.fetch_add(body.stored(), Ordering::Relaxed);
        Arc::new(CachedObject { rv, body, meta })
    }

    /// The object's JSON.
    pub fn json(&self) -> Bytes {
        self.body.json()
    }

    /// The object's JSON, decompressed once for the watchers that send it one after
    /// another: every watcher of a resource encodes each of its events, and a pod event
    /// has half a dozen (the controller manager's informers, the scheduler, kubelets).
    /// The last few objects decompressed on this thread are kept with their JSON (at most
    /// 16 of at most 64 KiB each); a `Weak` pins each one's allocation, so an address is
    /// never mistaken for another's.
    pub fn shared_json(self: &Arc<Self>) -> Bytes {
        const RECENT: usize = 16;
        // Big objects (a large ConfigMap) are decompressed for each watcher instead.
        const MAX_KEPT: usize = 64 << 10;
        thread_local! {
            static DECOMPRESSED: std::cell::RefCell<VecDeque<(Weak<CachedObject>, Bytes)>> =
                const { std::cell::RefCell::new(VecDeque::new()) };
        }
        if let Body::Plain(b) = &self.body {
            return b.clone();
        }
        DECOMPRESSED.with(|recent| {
            let Ok(mut recent) = recent.try_borrow_mut() else {
                return self.json();
            };
            let me = Arc::as_ptr(self);
            if let Some((_, json)) = recent.iter().find(|(w, _)| std::ptr::eq(w.as_ptr(), me)) {
                return json.clone();
            }
            let json = self.json();
            if json.len() > MAX_KEPT {
                return json;
            }
            if recent.len() >= RECENT {
                recent.pop_front();
            }
            recent.push_back((Arc::downgrade(self), json.clone()));
            json
        })
    }

    pub fn value(&self) -> Option<Value> {
        serde_json::from_slice(&self.json()).ok()
    }
}

/// A cached object from stored bytes at revision `rv`.
pub fn make_object(
    key: &str,
    raw: &[u8],
    rv: Revision,
    fields: &dyn Fn(&Value) -> Vec<(String, String)>,
) -> Arc<CachedObject> {
    let (bytes, meta) = parse_object(key, raw, rv, fields);
    CachedObject::new(rv, Body::Plain(bytes), Arc::new(meta))
}

/// The index of an object from stored bytes.
fn make_meta(
    key: &str,
    raw: &[u8],
    rv: Revision,
    fields: &dyn Fn(&Value) -> Vec<(String, String)>,
) -> Arc<Meta> {
    Arc::new(parse_object(key, raw, rv, fields).1)
}

/// The response bytes (stored bytes with `resourceVersion`) and the index of an object.
fn parse_object(
    key: &str,
    raw: &[u8],
    rv: Revision,
    fields: &dyn Fn(&Value) -> Vec<(String, String)>,
) -> (Bytes, Meta) {
    let bytes = with_resource_version(raw, rv);
    let value = super::sparse::decode(&bytes, &super::strategy::INDEXED).unwrap_or(Value::Null);
    let fields = fields(&value);
    let meta = Meta::new(
        key,
        api::meta::namespace(&value).unwrap_or_default(),
        api::meta::name(&value).unwrap_or_default(),
        api::meta::labels(&value),
        fields.iter().map(|(k, v)| (k.as_str(), v.as_str())),
        api::kinds::initializers::is_uninitialized(&value),
    );
    (bytes, meta)
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
    /// The index of the object's state before the change (what a watcher's selector
    /// matched then).
    pub prev: Option<Arc<Meta>>,
    pub rv: Revision,
}

/// The current objects, by key. An entry's key is its object's own (`Meta::key`), so the
/// map holds no second copy of it.
#[derive(Default)]
struct Objects(BTreeSet<ByKey>);

/// An object ordered (and looked up) by its key.
struct ByKey(Arc<CachedObject>);

impl std::borrow::Borrow<str> for ByKey {
    fn borrow(&self) -> &str {
        self.0.key()
    }
}

impl PartialEq for ByKey {
    fn eq(&self, other: &Self) -> bool {
        self.0.key() == other.0.key()
    }
}

impl Eq for ByKey {}

impl PartialOrd for ByKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for ByKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.0.key().cmp(other.0.key())
    }
}

impl Objects {
    fn get(&self, key: &str) -> Option<&Arc<CachedObject>> {
        self.0.get(key).map(|e| &e.0)
    }

    /// Adds or replaces the object with its key, returning the one it replaces.
    fn insert(&mut self, obj: Arc<CachedObject>) -> Option<Arc<CachedObject>> {
        self.0.replace(ByKey(obj)).map(|e| e.0)
    }

    fn remove(&mut self, key: &str) -> Option<Arc<CachedObject>> {
        self.0.take(key).map(|e| e.0)
    }

    fn len(&self) -> usize {
        self.0.len()
    }

    /// The objects whose keys start with `prefix`, in key order.
    fn under<'a>(&'a self, prefix: &'a str) -> impl Iterator<Item = &'a Arc<CachedObject>> {
        use std::ops::Bound;
        self.0
            .range::<str, _>((Bound::Included(prefix), Bound::Unbounded))
            .take_while(move |e| e.0.key().starts_with(prefix))
            .map(|e| &e.0)
    }
}

/// Which objects a list or watch wants.
pub type Predicate = Arc<dyn Fn(&Meta) -> bool + Send + Sync>;

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
    objects: Objects,
    /// The cache reflects the store up to this revision.
    revision: Revision,
    /// Recent events with the time they arrived, oldest first.
    events: VecDeque<(Instant, Arc<CacheEvent>)>,
    /// What `events` cost (see [`history_cost`]; an object is counted even while it is
    /// also current).
    history_bytes: usize,
    /// What `objects` hold.
    held: Held,
    /// Events at or below this revision are no longer in `events`.
    window_floor: Revision,
    watchers: Vec<Watcher>,
    ready: bool,
}

/// History is kept for at most 75 s (upstream's window) and at most `HISTORY_BYTES` (of
/// objects, indexes and the events themselves: see [`history_cost`]), but always the last
/// `MIN_EVENTS`. A watch resuming from further back is served
/// from the store's own history (kept until the compactor's 5-minute passes) until it has
/// caught up, then joins the cache: so the window can be small without clients relisting.
/// 2 MiB holds about 3,000 pod events (a second or two of pod writes at 5,000 nodes), 600
/// versions of a Deployment or ReplicaSet, and the whole 75 s of a quiet prefix. (At
/// 4 MiB, the 50 Deployments and ReplicaSets of a 50,000-pod run held 8 MiB of history
/// between them, in about 2,800 versions of their status.)
const EVENT_WINDOW: Duration = Duration::from_secs(75);
const HISTORY_BYTES: usize = 2 << 20;
const MAX_EVENTS: usize = 10_000;
const MIN_EVENTS: usize = 100;
const WATCHER_BUFFER: usize = 1024;
/// Upstream sends bookmarks to a watcher about once a minute.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

/// The cache of one storage prefix.
pub struct Cacher {
    prefix: String,
    /// `false`: nothing is held; lists and watches go to the store (upstream serves Events
    /// this way: their watch cache size is 0).
    cached: bool,
    store: Arc<dyn Backend>,
    fields: FieldsFn,
    state: Mutex<State>,
    revision_tx: watch::Sender<Revision>,
    /// Bumped whenever the set of cached objects changes (not on progress notifications),
    /// so consumers re-derive what they parsed from the cache only when needed.
    generation_tx: watch::Sender<u64>,
    /// Compresses objects once the cache holds [`packed::MIN_OBJECTS`].
    packer: Mutex<Packer>,
    /// How many objects the cache holds (read without the state lock).
    held: std::sync::atomic::AtomicUsize,
}

impl Cacher {
    /// Creates the cache and starts feeding it from the store.
    pub fn start(store: Arc<dyn Backend>, prefix: String, fields: FieldsFn) -> Arc<Cacher> {
        let cacher = Self::new(store, prefix, fields, true);
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

    /// A prefix served from the store without a cache.
    pub fn uncached(store: Arc<dyn Backend>, prefix: String, fields: FieldsFn) -> Arc<Cacher> {
        Self::new(store, prefix, fields, false)
    }

    fn new(store: Arc<dyn Backend>, prefix: String, fields: FieldsFn, cached: bool) -> Arc<Cacher> {
        Arc::new(Cacher {
            prefix,
            cached,
            store,
            fields,
            state: Mutex::new(State {
                objects: Objects::default(),
                revision: 0,
                events: VecDeque::new(),
                history_bytes: 0,
                held: Held::default(),
                window_floor: 0,
                watchers: Vec::new(),
                ready: !cached,
            }),
            revision_tx: watch::channel(0).0,
            generation_tx: watch::channel(0).0,
            packer: Mutex::new(Packer::default()),
            held: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Whether objects are held in memory (`false`: [`Cacher::list`] and [`Cacher::get`]
    /// see nothing; use [`Cacher::list_current`]).
    pub fn is_cached(&self) -> bool {
        self.cached
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// The object as the cache holds it: compressed once the cache is big, and sharing
    /// `prev`'s index (the object's previous state) when that is unchanged, as it is for
    /// most updates (status, heartbeats), so the history's versions of an object do not
    /// each hold a copy.
    fn make(
        &self,
        key: &str,
        raw: &[u8],
        rv: Revision,
        prev: Option<Arc<Meta>>,
    ) -> Arc<CachedObject> {
        let (plain, meta) = parse_object(key, raw, rv, &*self.fields);
        let meta = match prev {
            Some(prev) if *prev == meta => prev,
            _ => Arc::new(meta),
        };
        let held = self.held.load(std::sync::atomic::Ordering::Relaxed);
        let body = match self.packer.lock() {
            Ok(mut p) => p.pack(plain, held),
            Err(p) => p.into_inner().pack(plain, held),
        };
        CachedObject::new(rv, body, meta)
    }

    /// The next state of the object at `key`, sharing the current state's index if equal.
    fn make_next(&self, key: &str, raw: &[u8], rv: Revision) -> Arc<CachedObject> {
        let current = self.lock().objects.get(key).map(|o| Arc::clone(&o.meta));
        self.make(key, raw, rv, current)
    }

    /// Lists the prefix, then applies the store's events until the store fails.
    async fn run(self: &Arc<Self>) -> Result<(), StoreError> {
        let mut objects = Objects::default();
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
                objects.insert(self.make(&kv.key, &kv.value, kv.mod_revision, None));
                self.held
                    .store(objects.len(), std::sync::atomic::Ordering::Relaxed);
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
            st.held = Held::default();
            for o in objects.under("") {
                st.held.add(o);
            }
            st.objects = objects;
            st.revision = revision;
            st.window_floor = revision;
            st.events.clear();
            st.history_bytes = 0;
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
        // Parsing and compressing happen before the state is locked.
        let obj = match &ev {
            Event::Progress { revision } => {
                let mut st = self.lock();
                if *revision > st.revision {
                    st.revision = *revision;
                    drop(st);
                    self.revision_tx.send_replace(*revision);
                }
                return;
            }
            Event::Put { kv, .. } => self.make_next(&kv.key, &kv.value, kv.mod_revision),
            Event::Delete { revision, prev } => self.make_next(&prev.key, &prev.value, *revision),
        };
        let mut st = self.lock();
        let event = match ev {
            Event::Progress { .. } => return,
            Event::Put { kv, .. } => {
                let prev = st.objects.insert(Arc::clone(&obj));
                st.held.add(&obj);
                if let Some(p) = &prev {
                    st.held.remove(p);
                }
                let kind = if prev.is_some() {
                    EventType::Modified
                } else {
                    EventType::Added
                };
                CacheEvent {
                    kind,
                    obj,
                    prev: prev.map(|p| Arc::clone(&p.meta)),
                    rv: kv.mod_revision,
                }
            }
            Event::Delete { revision, prev } => {
                let old = st.objects.remove(&prev.key);
                if let Some(o) = &old {
                    st.held.remove(o);
                }
                CacheEvent {
                    kind: EventType::Deleted,
                    obj,
                    prev: old.map(|p| Arc::clone(&p.meta)),
                    rv: revision,
                }
            }
        };
        let event = Arc::new(event);
        st.revision = st.revision.max(event.rv);
        dispatch(&mut st.watchers, &event);
        st.history_bytes += history_cost(&event);
        self.held
            .store(st.objects.len(), std::sync::atomic::Ordering::Relaxed);
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
        st.history_bytes = 0;
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
        if !self.cached {
            return true;
        }
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
        if !self.cached {
            return Ok(current);
        }
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
        predicate: &dyn Fn(&Meta) -> bool,
        under: &str,
    ) -> (Vec<Arc<CachedObject>>, Revision) {
        let st = self.lock();
        let items = st
            .objects
            .under(under)
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
    /// - `from: Some(rv)` — every change after `rv`. From the cache's history when it still
    ///   holds `rv`; otherwise from the store's history (a [`WatchMsg::Error`] with 410
    ///   Gone if the store compacted it), joining the cache once caught up.
    ///
    /// An uncached prefix serves every watch from the store.
    pub fn watch(
        self: &Arc<Self>,
        from: Option<Revision>,
        predicate: Predicate,
        under: &str,
        bookmarks: bool,
        initial_end_marker: bool,
    ) -> mpsc::Receiver<WatchMsg> {
        let scoped = scoped(predicate, under);
        if self.cached {
            let mut st = self.lock();
            if from.is_none_or(|rv| rv >= st.window_floor) {
                return register(&mut st, from, scoped, under, bookmarks, initial_end_marker);
            }
        }
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        let feed = StoreWatch {
            cacher: Arc::downgrade(self),
            store: Arc::clone(&self.store),
            fields: Arc::clone(&self.fields),
            under: under.to_string(),
            predicate: scoped,
            bookmarks,
            tx,
        };
        tokio::spawn(feed.run(from, initial_end_marker));
        rx
    }

    /// The current objects matching `predicate` under `under`, read from the store for an
    /// uncached prefix, after a consistent sync for a cached one.
    pub async fn list_current(
        &self,
        predicate: &(dyn Fn(&Meta) -> bool + Send + Sync),
        under: &str,
        timeout: Duration,
    ) -> Result<(Vec<Arc<CachedObject>>, Revision), StoreError> {
        if self.cached {
            self.sync(timeout).await?;
            return Ok(self.list(predicate, under));
        }
        let mut items = Vec::new();
        let revision = list_store(&*self.store, under, &*self.fields, |obj| {
            if predicate(&obj) {
                items.push(obj);
            }
            std::future::ready(true)
        })
        .await?;
        Ok((items, revision))
    }

    pub fn watcher_count(&self) -> usize {
        self.lock().watchers.len()
    }

    pub fn object_count(&self) -> usize {
        self.lock().objects.len()
    }

    /// What the cache holds: current objects and their bytes (JSON, compressed in big
    /// caches, plus the selector index), history events and their object bytes.
    pub fn sizes(&self) -> CacheSizes {
        let dict_bytes = match self.packer.lock() {
            Ok(p) => p.dict_bytes(),
            Err(p) => p.into_inner().dict_bytes(),
        };
        let st = self.lock();
        CacheSizes {
            dict_bytes,
            objects: st.objects.len(),
            object_bytes: st.held.bytes,
            plain_objects: st.held.plain,
            events: st.events.len(),
            history_bytes: st.history_bytes,
            watchers: st.watchers.len(),
            queued: st
                .watchers
                .iter()
                .map(|w| w.tx.max_capacity() - w.tx.capacity())
                .sum(),
        }
    }
}

/// See [`Cacher::sizes`].
#[derive(Debug, Clone, Copy, Default)]
pub struct CacheSizes {
    /// The compression dictionary's size (0: objects are not compressed).
    pub dict_bytes: usize,
    pub objects: usize,
    pub object_bytes: usize,
    /// Current objects held uncompressed.
    pub plain_objects: usize,
    pub events: usize,
    pub history_bytes: usize,
    /// Watchers registered, and the messages queued for them.
    pub watchers: usize,
    pub queued: usize,
}

/// The heap bytes an event costs the history: the object's bytes (which become the
/// history's own once the object changes again), its index unless the previous state
/// shares it, and the event's allocations.
fn history_cost(ev: &CacheEvent) -> usize {
    // The event's allocation and its slot in the deque.
    const EVENT_ALLOCATIONS: usize = 64 + 24;
    let index = match &ev.prev {
        Some(prev) if Arc::ptr_eq(prev, &ev.obj.meta) => 0,
        _ => ev.obj.meta.heap_bytes() + META_ALLOCATION,
    };
    ev.obj.body.stored() + OBJECT_ALLOCATION + index + EVENT_ALLOCATIONS
}

/// The allocator's size class of an `Arc<CachedObject>` and of an `Arc<Meta>`.
const OBJECT_ALLOCATION: usize = 80;
const META_ALLOCATION: usize = 64;

/// What a cache's current objects cost: their heap bytes (see [`footprint`]) and how many
/// are held uncompressed.
#[derive(Debug, Default, Clone, Copy)]
struct Held {
    bytes: usize,
    plain: usize,
}

impl Held {
    /// What `o` adds: its bytes, and 1 if it is plain.
    fn of(o: &CachedObject) -> (usize, usize) {
        (footprint(o), usize::from(matches!(o.body, Body::Plain(_))))
    }

    fn add(&mut self, o: &CachedObject) {
        let (bytes, plain) = Held::of(o);
        self.bytes += bytes;
        self.plain += plain;
    }

    fn remove(&mut self, o: &CachedObject) {
        let (bytes, plain) = Held::of(o);
        self.bytes = self.bytes.saturating_sub(bytes);
        self.plain = self.plain.saturating_sub(plain);
    }
}

/// The heap bytes one current object costs the cache.
fn footprint(o: &CachedObject) -> usize {
    // The object's and its index's allocations, and the map's entry (a pointer).
    o.body.stored() + o.heap_bytes() + OBJECT_ALLOCATION + META_ALLOCATION + 8
}

/// `predicate` limited to keys under `under`.
fn scoped(predicate: Predicate, under: &str) -> Predicate {
    let under = under.to_string();
    Arc::new(move |o: &Meta| o.key().starts_with(&under) && predicate(o))
}

/// Registers a watcher on the cache, with its backlog: the current objects (`from: None`)
/// or the history after `from` (which the caller checked the window still holds).
fn register(
    st: &mut State,
    from: Option<Revision>,
    predicate: Predicate,
    under: &str,
    bookmarks: bool,
    initial_end_marker: bool,
) -> mpsc::Receiver<WatchMsg> {
    let mut backlog: Vec<WatchMsg> = Vec::new();
    match from {
        None => {
            for obj in st.objects.under(under) {
                if predicate(obj) {
                    backlog.push(WatchMsg::Event(EventType::Added, Arc::clone(obj)));
                }
            }
            if initial_end_marker {
                backlog.push(WatchMsg::InitialEventsEnd(st.revision));
            }
        }
        Some(rv) => {
            for (_, ev) in st.events.iter().filter(|(_, e)| e.rv > rv) {
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
    st.watchers.push(Watcher {
        predicate,
        tx,
        bookmarks,
        last_bookmark: Instant::now(),
    });
    rx
}

/// Reads every key under `under` at one revision, page by page, handing each object to
/// `each` (which returns `false` to stop); returns the revision read at.
async fn list_store<F, Fut>(
    store: &dyn Backend,
    under: &str,
    fields: &(dyn Fn(&Value) -> Vec<(String, String)> + Send + Sync),
    mut each: F,
) -> Result<Revision, StoreError>
where
    F: FnMut(Arc<CachedObject>) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let mut revision = 0;
    let mut start_after: Option<String> = None;
    loop {
        let page = store
            .list(ListOptions {
                prefix: under.to_string(),
                start_after: start_after.take(),
                limit: 1000,
                revision,
            })
            .await?;
        revision = page.revision;
        start_after = page.kvs.last().map(|kv| kv.key.clone());
        for kv in &page.kvs {
            if !each(make_object(&kv.key, &kv.value, kv.mod_revision, fields)).await {
                return Ok(revision);
            }
        }
        if !page.more {
            return Ok(revision);
        }
    }
}

/// A watch served from the store: for an uncached prefix, or one resuming from before the
/// cache's history (which joins the cache once it has caught up).
struct StoreWatch {
    cacher: Weak<Cacher>,
    store: Arc<dyn Backend>,
    fields: FieldsFn,
    under: String,
    predicate: Predicate,
    bookmarks: bool,
    tx: mpsc::Sender<WatchMsg>,
}

impl StoreWatch {
    async fn run(self, from: Option<Revision>, initial_end_marker: bool) {
        let after = match from {
            Some(rv) => rv,
            None => {
                let (tx, predicate) = (&self.tx, &self.predicate);
                let listed = list_store(&*self.store, &self.under, &*self.fields, |obj| {
                    let msg = predicate(&obj).then(|| WatchMsg::Event(EventType::Added, obj));
                    async move {
                        match msg {
                            Some(m) => tx.send(m).await.is_ok(),
                            None => true,
                        }
                    }
                })
                .await;
                match listed {
                    Ok(rev) => {
                        if initial_end_marker {
                            let _ = self.tx.send(WatchMsg::InitialEventsEnd(rev)).await;
                        }
                        rev
                    }
                    Err(e) => return self.fail(e).await,
                }
            }
        };
        self.follow(after).await;
    }

    async fn fail(&self, e: StoreError) {
        let err = match e {
            StoreError::Compacted {
                requested,
                compacted,
                ..
            } => api::ApiError::gone(format!(
                "too old resource version: {requested} ({})",
                compacted + 1
            )),
            other => api::ApiError::unavailable(other.to_string()),
        };
        let _ = self.tx.send(WatchMsg::Error(err)).await;
    }

    /// Streams the store's changes after `after` until the client goes, the store watch
    /// ends, or the cache can take over.
    async fn follow(self, mut after: Revision) {
        let opts = WatchOptions {
            progress_interval: Some(Duration::from_secs(5)),
        };
        let mut stream = match self.store.watch(&self.under, after, opts).await {
            Ok(s) => s,
            Err(e) => return self.fail(e).await,
        };
        // Progress notifications come once the backlog is out: the moments to try joining
        // the cache (asked for every second, as a request made before the store's watch
        // started would be lost).
        let mut ask = tokio::time::interval(Duration::from_secs(1));
        let mut last_bookmark = Instant::now();
        loop {
            let ev = tokio::select! {
                ev = stream.next() => ev,
                _ = self.tx.closed() => return,
                _ = ask.tick(), if self.cached_parent() => {
                    let _ = self.store.request_progress().await;
                    continue;
                }
            };
            let ev = match ev {
                None => return,
                Some(Err(e)) => return self.fail(e).await,
                Some(Ok(ev)) => ev,
            };
            let fields = &*self.fields;
            let event = match ev {
                Event::Progress { revision } => {
                    after = after.max(revision);
                    if self.join_cache(after).await {
                        return;
                    }
                    if self.bookmarks && last_bookmark.elapsed() >= BOOKMARK_EVERY {
                        last_bookmark = Instant::now();
                        if self.tx.send(WatchMsg::Bookmark(after)).await.is_err() {
                            return;
                        }
                    }
                    continue;
                }
                Event::Put { kv, prev } => {
                    let kind = if prev.is_some() || kv.create_revision != kv.mod_revision {
                        EventType::Modified
                    } else {
                        EventType::Added
                    };
                    CacheEvent {
                        kind,
                        obj: make_object(&kv.key, &kv.value, kv.mod_revision, fields),
                        prev: prev.map(|p| make_meta(&p.key, &p.value, p.mod_revision, fields)),
                        rv: kv.mod_revision,
                    }
                }
                Event::Delete { revision, prev } => {
                    // The last state is both the object and its previous state: one index.
                    let obj = make_object(&prev.key, &prev.value, revision, fields);
                    CacheEvent {
                        kind: EventType::Deleted,
                        prev: Some(Arc::clone(&obj.meta)),
                        obj,
                        rv: revision,
                    }
                }
            };
            after = after.max(event.rv);
            if let Some(kind) = translate(&event, &*self.predicate)
                && self
                    .tx
                    .send(WatchMsg::Event(kind, event.obj))
                    .await
                    .is_err()
            {
                return;
            }
        }
    }

    fn cached_parent(&self) -> bool {
        self.cacher.upgrade().is_some_and(|c| c.cached)
    }

    /// Hands the watch to the cache if it has reached `after` and its history still holds
    /// it; then forwards the cache's messages until the client goes. `false`: not yet.
    async fn join_cache(&self, after: Revision) -> bool {
        let Some(cacher) = self.cacher.upgrade().filter(|c| c.cached) else {
            return false;
        };
        if !cacher.wait_for(after, Duration::from_secs(1)).await {
            return false;
        }
        let mut rx = {
            let mut st = cacher.lock();
            if after < st.window_floor || !st.ready {
                return false;
            }
            register(
                &mut st,
                Some(after),
                Arc::clone(&self.predicate),
                &self.under,
                self.bookmarks,
                false,
            )
        };
        drop(cacher);
        loop {
            let msg = tokio::select! {
                m = rx.recv() => m,
                _ = self.tx.closed() => return true,
            };
            match msg {
                Some(m) => {
                    if self.tx.send(m).await.is_err() {
                        return true;
                    }
                }
                None => return true,
            }
        }
    }
}

/// Drops the oldest events beyond `EVENT_WINDOW`, `HISTORY_BYTES` or `MAX_EVENTS`, keeping
/// at least `MIN_EVENTS`.
fn trim(st: &mut State) {
    while st.events.len() > MIN_EVENTS
        && (st.events.len() > MAX_EVENTS
            || st.history_bytes > HISTORY_BYTES
            || st
                .events
                .front()
                .is_some_and(|(t, _)| t.elapsed() > EVENT_WINDOW))
    {
        if let Some((_, old)) = st.events.pop_front() {
            st.window_floor = old.rv;
            st.history_bytes = st.history_bytes.saturating_sub(history_cost(&old));
        }
    }
}

/// How an event looks to a watcher with `predicate`: a modification that makes an object
/// match is an ADDED, one that makes it stop matching a DELETED.
fn translate(ev: &CacheEvent, predicate: &dyn Fn(&Meta) -> bool) -> Option<EventType> {
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

    /// A cache of `store`'s configmaps, caught up with it.
    async fn synced_configmaps(store: &Arc<dyn Backend>) -> Arc<Cacher> {
        let c = Cacher::start(
            Arc::clone(store),
            "/registry/configmaps/".into(),
            no_fields(),
        );
        c.sync(Duration::from_secs(5)).await.unwrap();
        c
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
        let c = synced_configmaps(&store).await;
        let all: Predicate = Arc::new(|_| true);
        let (items, rv) = c.list(&*all, "/registry/configmaps/");
        assert_eq!(items.len(), 1);
        assert!(rv >= items[0].rv);
        let v = items[0].value().unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], items[0].rv.to_string());

        let app_y: Predicate = Arc::new(|o| o.label("app") == Some("y"));
        let mut w = c.watch(
            Some(rv),
            Arc::clone(&app_y),
            "/registry/configmaps/ns/",
            false,
            false,
        );
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

        // Resuming from a revision replays.
        let mut again = c.watch(
            Some(rv),
            Arc::clone(&all),
            "/registry/configmaps/",
            false,
            false,
        );
        assert!(matches!(
            again.recv().await.unwrap(),
            WatchMsg::Event(EventType::Modified, _)
        ));
    }

    fn fields_of(v: &Value) -> Vec<(String, String)> {
        ["phase", "nodeName"]
            .iter()
            .map(|f| {
                let v = v["spec"][f].as_str().unwrap_or_default();
                (format!("spec.{f}"), v.to_string())
            })
            .collect()
    }

    #[test]
    fn meta_packs_key_names_labels_and_non_empty_fields() {
        let raw = serde_json::to_vec(&serde_json::json!({
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "labels": {"a": "1", "b": ""}},
            "spec": {"nodeName": "n1"},
        }))
        .unwrap();
        let o = make_object("/registry/pods/ns/p", &raw, 7, &fields_of);
        assert_eq!(
            (o.key(), o.namespace(), o.name()),
            ("/registry/pods/ns/p", "ns", "p")
        );
        assert_eq!(o.labels().collect::<Vec<_>>(), [("a", "1"), ("b", "")]);
        assert_eq!(o.label("b"), Some(""));
        assert_eq!(o.label("c"), None);
        // An empty field is not kept: selectors read a missing field as "".
        assert_eq!(o.fields().collect::<Vec<_>>(), [("spec.nodeName", "n1")]);
        assert_eq!(o.field("spec.phase"), None);
        assert!(!o.uninitialized);
        let bare = Meta::new("k", "", "", [], [], true);
        assert_eq!(
            (bare.key(), bare.name(), bare.labels().count()),
            ("k", "", 0)
        );
        assert!(bare.uninitialized);
        // The namespace and name are read inside the key when it ends with them, and kept
        // beside it when it does not.
        for (key, ns, name) in [
            ("/registry/namespaces/a", "", "a"),
            ("/registry/pods/ns/p", "ns", "p"),
            ("/registry/pods/xns/p", "ns", "p"),
            ("/registry/pods/ns/xp", "ns", "p"),
            ("/registry/pods/other/p", "ns", "p"),
            ("/registry/x/p", "", ""),
            ("p", "", "p"),
        ] {
            let m = Meta::new(key, ns, name, [("l", "v")], [("spec.nodeName", "n")], false);
            assert_eq!((m.key(), m.namespace(), m.name()), (key, ns, name), "{key}");
            assert_eq!(m.labels().collect::<Vec<_>>(), [("l", "v")], "{key}");
            assert_eq!(m.field("spec.nodeName"), Some("n"), "{key}");
        }
        let inside = Meta::new("/registry/pods/ns/p", "ns", "p", [], [], false);
        assert_eq!(inside.heap_bytes(), "/registry/pods/ns/p".len() + 2 * 5);
        // Offsets past 64 KiB are kept whole.
        let long = "v".repeat(70_000);
        let wide = Meta::new(
            "/registry/pods/ns/p",
            "ns",
            "p",
            [("big", long.as_str()), ("l", "v")],
            [("spec.nodeName", "n")],
            false,
        );
        assert_eq!(
            (wide.key(), wide.namespace(), wide.name()),
            ("/registry/pods/ns/p", "ns", "p")
        );
        assert_eq!(wide.label("big"), Some(long.as_str()));
        assert_eq!(wide.label("l"), Some("v"));
        assert_eq!(wide.field("spec.nodeName"), Some("n"));
        assert_eq!(wide.heap_bytes(), wide.text.len() + 4 * 11);
    }

    #[test]
    fn meta_answers_name_fields_and_interns_field_names() {
        let fields = |_: &Value| {
            vec![
                ("metadata.name".to_string(), "p".to_string()),
                ("metadata.namespace".to_string(), "ns".to_string()),
                ("spec.nodeName".to_string(), "n1".to_string()),
                ("status.phase".to_string(), "Running".to_string()),
            ]
        };
        let raw = serde_json::to_vec(&serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"}
        }))
        .unwrap();
        let a = make_object("/registry/pods/ns/p", &raw, 1, &fields);
        let b = make_object("/registry/pods/ns/p", &raw, 2, &fields);
        // Name and namespace are read inside the key; field names are ids.
        assert_eq!(a.text.as_ref(), "/registry/pods/ns/pn1Running");
        assert_eq!(
            a.fields().collect::<Vec<_>>(),
            [("spec.nodeName", "n1"), ("status.phase", "Running")]
        );
        assert_eq!(a.field("metadata.name"), Some("p"));
        assert_eq!(a.field("metadata.namespace"), Some("ns"));
        assert_eq!(a.field("status.phase"), Some("Running"));
        assert_eq!(a.field("status.never.seen"), None);
        assert_eq!(*a.meta, *b.meta);
    }

    #[test]
    fn objects_are_keyed_by_their_own_keys() {
        let raw = serde_json::to_vec(&serde_json::json!({"metadata": {"name": "x"}})).unwrap();
        let at = |key: &str, rv| make_object(key, &raw, rv, &|_| Vec::new());
        let mut objects = Objects::default();
        for key in ["/r/b/z", "/r/a/x", "/r/ab/y"] {
            assert!(objects.insert(at(key, 1)).is_none());
        }
        let replaced = objects.insert(at("/r/a/x", 2)).unwrap();
        assert_eq!((replaced.key(), replaced.rv), ("/r/a/x", 1));
        assert_eq!(objects.get("/r/a/x").unwrap().rv, 2);
        let keys = |prefix| objects.under(prefix).map(|o| o.key()).collect::<Vec<_>>();
        assert_eq!(keys("/r/a/"), ["/r/a/x"]);
        assert_eq!(keys("/r/"), ["/r/a/x", "/r/ab/y", "/r/b/z"]);
        assert!(keys("/r/c").is_empty());
        assert_eq!(objects.remove("/r/ab/y").unwrap().key(), "/r/ab/y");
        assert_eq!(objects.len(), 2);
    }

    #[tokio::test]
    async fn versions_with_the_same_index_share_it() {
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let with_data = |label: &str, data: &str| {
            let mut v: Value = serde_json::from_slice(&obj("a", label)).unwrap();
            v["data"] = serde_json::json!({ "k": data });
            bytes::Bytes::from(serde_json::to_vec(&v).unwrap())
        };
        let kv = store
            .create("/registry/configmaps/ns/a", with_data("x", "1"), None)
            .await
            .unwrap();
        let c = synced_configmaps(&store).await;
        let all: Predicate = Arc::new(|_| true);
        let (items, rv) = c.list(&*all, "/registry/configmaps/");
        let mut w = c.watch(Some(rv), all, "/registry/configmaps/", false, false);
        let kv = store
            .update(&kv.key, with_data("x", "2"), kv.mod_revision, None)
            .await
            .unwrap();
        store
            .update(&kv.key, with_data("y", "2"), kv.mod_revision, None)
            .await
            .unwrap();
        let (_, data_changed) = next_event(&mut w).await;
        let (_, label_changed) = next_event(&mut w).await;
        assert!(Arc::ptr_eq(&items[0].meta, &data_changed.meta));
        assert!(!Arc::ptr_eq(&data_changed.meta, &label_changed.meta));
        assert_eq!(label_changed.label("app"), Some("y"));
    }

    async fn next_event(w: &mut mpsc::Receiver<WatchMsg>) -> (EventType, Arc<CachedObject>) {
        loop {
            match tokio::time::timeout(Duration::from_secs(10), w.recv()).await {
                Ok(Some(WatchMsg::Event(k, o))) => return (k, o),
                Ok(Some(WatchMsg::Bookmark(_))) => {}
                other => panic!("expected an event, got {other:?}"),
            }
        }
    }

    /// Writes `n` big updates of one object, so the byte-bounded history forgets the
    /// first ones; returns the revision before them.
    async fn churn(store: &Arc<dyn Backend>, key: &str, n: usize) -> Revision {
        let big = "x".repeat(200_000);
        let mut kv = store.get(key).await.unwrap().unwrap();
        let before = kv.mod_revision;
        for i in 0..n {
            let value = serde_json::to_vec(&serde_json::json!({
                "metadata": {"name": "a", "namespace": "ns", "labels": {"i": i.to_string()}},
                "data": {"big": big},
            }))
            .unwrap();
            kv = store
                .update(key, value.into(), kv.mod_revision, None)
                .await
                .unwrap();
        }
        before
    }

    #[tokio::test]
    async fn history_is_bounded_by_bytes_and_older_resumes_come_from_the_store() {
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let key = "/registry/configmaps/ns/a";
        store.create(key, obj("a", "x"), None).await.unwrap();
        let c = synced_configmaps(&store).await;
        let from = churn(&store, key, 150).await;
        c.sync(Duration::from_secs(5)).await.unwrap();
        {
            let st = c.lock();
            assert_eq!(st.events.len(), MIN_EVENTS, "bounded by bytes");
            assert!(st.history_bytes > HISTORY_BYTES);
            assert!(st.window_floor > from);
        }
        // Resuming from before the window: every change, in order, from the store.
        let all: Predicate = Arc::new(|_| true);
        let mut w = c.watch(Some(from), all, "/registry/configmaps/", false, false);
        for i in 0..150 {
            let (kind, o) = next_event(&mut w).await;
            assert_eq!(kind, EventType::Modified);
            assert_eq!(o.label("i"), Some(i.to_string().as_str()));
        }
        // … then it joins the cache (at the next progress report) …
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while c.watcher_count() == 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "never joined the cache"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // … and a later change still arrives, once.
        let kv = store.get(key).await.unwrap().unwrap();
        store
            .update(key, obj("a", "late"), kv.mod_revision, None)
            .await
            .unwrap();
        let (_, o) = next_event(&mut w).await;
        assert_eq!(o.label("app"), Some("late"));
        assert_eq!(c.watcher_count(), 1);
        assert!(
            tokio::time::timeout(Duration::from_millis(300), w.recv())
                .await
                .is_err()
        );
        // Compacted history: 410 Gone, as upstream's "too old resource version".
        store.compact(from + 10).await.unwrap();
        let mut old = c.watch(Some(from), Arc::new(|_| true), "/", false, false);
        match tokio::time::timeout(Duration::from_secs(5), old.recv()).await {
            Ok(Some(WatchMsg::Error(e))) => {
                assert_eq!(e.code, 410);
                assert!(e.message.contains("too old resource version"), "{e:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[tokio::test]
    async fn big_caches_compress_and_serve_the_same_json() {
        let big = |name: &str, label: &str| {
            bytes::Bytes::from(
                serde_json::to_vec(&serde_json::json!({
                    "apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": name, "namespace": "ns", "labels": {"app": label}},
                    "data": {"config": "listen 80; server_name example; root /srv/www; ".repeat(8)},
                }))
                .unwrap(),
            )
        };
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        let n = super::super::packed::MIN_OBJECTS + 50;
        for i in 0..n {
            let name = format!("cm-{i:04}");
            store
                .create(
                    &format!("/registry/configmaps/ns/{name}"),
                    big(&name, "x"),
                    None,
                )
                .await
                .unwrap();
        }
        let c = synced_configmaps(&store).await;
        // Listed while the cache was filling: the first MIN_OBJECTS stay plain.
        assert_eq!(c.sizes().plain_objects, super::super::packed::MIN_OBJECTS);
        // Written after the cache filled: compressed.
        let kv = store
            .create("/registry/configmaps/ns/late", big("late", "y"), None)
            .await
            .unwrap();
        c.sync(Duration::from_secs(5)).await.unwrap();
        let sizes = c.sizes();
        assert!(sizes.dict_bytes > 0, "{sizes:?}");
        assert_eq!(sizes.plain_objects, super::super::packed::MIN_OBJECTS);
        // A plain object written again is compressed, and no longer counted as plain.
        let first = store
            .get("/registry/configmaps/ns/cm-0000")
            .await
            .unwrap()
            .unwrap();
        store
            .update(
                "/registry/configmaps/ns/cm-0000",
                big("cm-0000", "z"),
                first.mod_revision,
                None,
            )
            .await
            .unwrap();
        c.sync(Duration::from_secs(5)).await.unwrap();
        assert_eq!(
            c.sizes().plain_objects,
            super::super::packed::MIN_OBJECTS - 1
        );
        let late = c.get("/registry/configmaps/ns/late").unwrap();
        assert!(matches!(late.body, Body::Packed { .. }));
        assert!(late.body.stored() < late.body.len());
        assert_eq!(
            late.json(),
            with_resource_version(&kv.value, kv.mod_revision)
        );
        // Every listed object is its stored JSON with its resourceVersion.
        let (items, _) = c.list(&|_| true, "/registry/configmaps/");
        assert_eq!(items.len(), n + 1);
        for o in &items {
            let kv = store.get(o.key()).await.unwrap().unwrap();
            assert_eq!(o.json(), with_resource_version(&kv.value, kv.mod_revision));
        }
        // A watch delivers the same JSON.
        let mut w = c.watch(None, Arc::new(|o| o.name() == "late"), "/", false, false);
        let (_, o) = next_event(&mut w).await;
        assert_eq!(o.value().unwrap()["metadata"]["labels"]["app"], "y");
    }

    #[tokio::test]
    async fn uncached_prefixes_list_and_watch_the_store() {
        let store: Arc<dyn Backend> = Arc::new(MemoryBackend::new());
        store
            .create("/registry/events/ns/a", obj("a", "x"), None)
            .await
            .unwrap();
        let c = Cacher::uncached(Arc::clone(&store), "/registry/events/".into(), no_fields());
        assert!(!c.is_cached());
        assert!(c.wait_for(1, Duration::from_millis(1)).await);
        let (items, rv) = c
            .list_current(&|_| true, "/registry/events/", Duration::from_secs(1))
            .await
            .unwrap();
        assert_eq!(items.len(), 1);
        assert!(rv >= items[0].rv);
        assert_eq!(c.object_count(), 0, "nothing held");
        let app_y: Predicate = Arc::new(|o| o.label("app") == Some("y"));
        let mut w = c.watch(None, app_y, "/registry/events/", false, true);
        assert!(matches!(
            w.recv().await.unwrap(),
            WatchMsg::InitialEventsEnd(r) if r >= rv
        ));
        store
            .create("/registry/events/ns/b", obj("b", "y"), None)
            .await
            .unwrap();
        let (kind, o) = next_event(&mut w).await;
        assert_eq!((kind, o.name()), (EventType::Added, "b"));
        let kv = store.get("/registry/events/ns/b").await.unwrap().unwrap();
        store.delete(&kv.key, Some(kv.mod_revision)).await.unwrap();
        let (kind, o) = next_event(&mut w).await;
        assert_eq!((kind, o.name()), (EventType::Deleted, "b"));
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
