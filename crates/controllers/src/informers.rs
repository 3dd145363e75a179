//! Shared informers: one list+watch per resource type for the whole process (kube-runtime's
//! watcher, which relists on `410 Gone` and resumes from the last resourceVersion, feeding
//! a reflector store), with its events fanned out to every controller that subscribes.
//! Each subscriber has its own unbounded queue (as upstream's `processorListener`), so one
//! starved of CPU catches up later instead of losing events; after a relist, subscribers
//! are told to look at everything again.

use std::collections::HashMap;
use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock, RwLock, Weak};

use crate::cachedpod::CachedPod;
use futures::StreamExt;
use kube::Api;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::mpsc;

/// One resource type's cache and event stream.
pub struct Informer<K: kube::Resource + Clone + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    pub store: Store<K>,
    /// Each subscriber's queue; a closed one is dropped at the next event.
    subscribers: std::sync::Mutex<Vec<Subscriber<K>>>,
    indexes: RwLock<Indexes<K>>,
    indexers: &'static [Indexer<K>],
}

/// A named index function (upstream's `cache.Indexers`): the index values of an object.
pub struct Indexer<K> {
    pub name: &'static str,
    pub values: fn(&K) -> Vec<String>,
}

/// Index values → the objects (by key, `namespace/name`), kept in step with the store: an
/// event is indexed before subscribers see it. The objects are the store's own (shared
/// pointers), so a lookup reads no store and copies nothing; each key and each value is
/// held once, shared by both maps.
struct Indexes<K> {
    /// (index, value) → key → object.
    entries: HashMap<IndexValue, HashMap<Arc<str>, Arc<K>>>,
    /// key → its (index, value) pairs, to unindex on update and delete.
    of: HashMap<Arc<str>, Vec<IndexValue>>,
}

/// An index's name and one of its values.
type IndexValue = (&'static str, Arc<str>);

impl<K> Default for Indexes<K> {
    fn default() -> Self {
        Indexes {
            entries: HashMap::new(),
            of: HashMap::new(),
        }
    }
}

impl<K> Indexes<K> {
    fn remove(&mut self, key: &str) {
        for entry in self.of.remove(key).unwrap_or_default() {
            if let Some(keys) = self.entries.get_mut(&entry) {
                keys.remove(key);
                if keys.is_empty() {
                    self.entries.remove(&entry);
                }
            }
        }
    }

    fn insert(&mut self, key: String, obj: &Arc<K>, indexers: &[Indexer<K>]) {
        let values: Vec<(&'static str, String)> = indexers
            .iter()
            .flat_map(|ix| (ix.values)(obj).into_iter().map(move |v| (ix.name, v)))
            .collect();
        // Most updates leave every index value as it was (a pod's status changed): the
        // object is swapped in place, without unindexing and indexing the key again.
        let Indexes { entries, of } = self;
        if let Some((k, old)) = of.get_key_value(key.as_str())
            && old.len() == values.len()
            && old
                .iter()
                .zip(&values)
                .all(|((name, v), (n, new))| name == n && **v == **new)
        {
            for entry in old {
                if let Some(slot) = entries.get_mut(entry).and_then(|m| m.get_mut(k)) {
                    *slot = Arc::clone(obj);
                }
            }
            return;
        }
        self.remove(&key);
        let key: Arc<str> = Arc::from(key);
        let mut pairs = Vec::with_capacity(values.len());
        for (name, v) in values {
            let entry = self.entries.entry((name, Arc::from(v)));
            pairs.push((name, Arc::clone(&entry.key().1)));
            entry.or_default().insert(Arc::clone(&key), Arc::clone(obj));
        }
        if !pairs.is_empty() {
            self.of.insert(key, pairs);
        }
    }
}

fn key_of<K: kube::Resource>(o: &K) -> String {
    crate::run::object_key(o.meta())
}

/// The pod indexes the controllers use: by namespace, by controller (the controlling
/// owner's uid, or `orphan/<namespace>` for pods without one) and by node.
pub const POD_INDEXERS: &[Indexer<CachedPod>] = &[
    Indexer {
        name: "namespace",
        values: |p| vec![p.metadata.namespace.clone().unwrap_or_default()],
    },
    Indexer {
        name: "controller",
        values: |p| {
            vec![
                p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .find(|o| o.controller == Some(true))
                    .map_or_else(
                        || {
                            format!(
                                "orphan/{}",
                                p.metadata.namespace.as_deref().unwrap_or_default()
                            )
                        },
                        |o| o.uid.clone(),
                    ),
            ]
        },
    },
    Indexer {
        name: "node",
        values: |p| {
            p.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .filter(|n| !n.is_empty())
                .into_iter()
                .collect()
        },
    },
];

/// An event as subscribers share it: the object behind a pointer, never copied per
/// subscriber.
#[derive(Debug)]
pub enum Change<K> {
    Apply(Arc<K>),
    Delete(Arc<K>),
    /// A list started.
    Other,
    /// A list ended and replaced the store: objects deleted while the watch was down left
    /// without an event.
    Relisted,
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Apply(o) => Change::Apply(Arc::clone(o)),
            Change::Delete(o) => Change::Delete(Arc::clone(o)),
            Change::Other => Change::Other,
            Change::Relisted => Change::Relisted,
        }
    }
}

/// One subscriber's events, in order, none dropped.
pub struct Subscription<K> {
    rx: mpsc::UnboundedReceiver<Change<K>>,
    /// Events queued and not yet received.
    backlog: Arc<AtomicUsize>,
}

/// The informer's side of a [`Subscription`].
struct Subscriber<K> {
    tx: mpsc::UnboundedSender<Change<K>>,
    backlog: Arc<AtomicUsize>,
    /// Where it subscribed, to name it in warnings.
    at: &'static std::panic::Location<'static>,
}

/// Every subscription's backlog, for `/metrics` ([`render_backlogs`]): process-wide, as
/// the work queues' metrics are.
static BACKLOGS: LazyLock<std::sync::Mutex<Vec<Backlog>>> =
    LazyLock::new(|| std::sync::Mutex::new(Vec::new()));

/// One subscription's backlog, named by the line that subscribed and the object kind.
struct Backlog {
    queued: Weak<AtomicUsize>,
    at: &'static std::panic::Location<'static>,
    kind: String,
}

/// The gauge `rkube_informer_subscriber_backlog{kind,subscriber}`: events an informer
/// has queued for a subscriber that it has not yet received, summed over the live
/// subscriptions made at one source line (`subscriber`, `file:line`).
pub fn render_backlogs() -> String {
    let mut sums: std::collections::BTreeMap<(String, String), usize> = Default::default();
    crate::util::lock(&BACKLOGS).retain(|b| {
        let Some(queued) = b.queued.upgrade() else {
            return false;
        };
        *sums.entry((b.kind.clone(), b.at.to_string())).or_default() +=
            queued.load(Ordering::Relaxed);
        true
    });
    if sums.is_empty() {
        return String::new();
    }
    let name = "rkube_informer_subscriber_backlog";
    let mut out = String::new();
    runtime::metrics::header(
        &mut out,
        name,
        "gauge",
        "[ALPHA] Events an informer has queued for a subscriber and the subscriber has not yet received, by object kind and the source line that subscribed.",
    );
    for ((kind, at), queued) in sums {
        out.push_str(&format!(
            "{name}{{kind=\"{}\",subscriber=\"{}\"}} {queued}\n",
            runtime::metrics::label_value(&kind),
            runtime::metrics::label_value(&at)
        ));
    }
    out
}

/// A subscriber's backlog is logged when it reaches this many events, and again at each
/// doubling: its queue has no bound, so one that never catches up would only show as
/// memory.
const BACKLOG_WARNING: usize = 16 * 1024;

/// What a subscriber receives next.
pub enum Next<K> {
    /// Added or modified (also while listing).
    Apply(Arc<K>),
    Delete(Arc<K>),
    /// A list started.
    Other,
    /// The store was relisted: re-read everything from it (deletions may have been missed).
    Resync,
    /// The informer stopped.
    Closed,
}

/// Drops what controllers never read from cached objects (as upstream's informers
/// strip `managedFields`), which is most of an object's size.
fn trim<K: kube::Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}

/// The pod conditions a controller reads while a pod runs: `Ready` (readiness and
/// availability, endpoints) and `DisruptionTarget` (disruption budgets). A terminal pod
/// keeps all of them: a Job's pod failure policy may match any.
const LIVE_POD_CONDITIONS: &[&str] = &["Ready", "DisruptionTarget"];

/// Trims a cached pod ([`CachedPod`] holds only what controllers read, its spec
/// shared and compacted as it is decoded): drops `managedFields`, the conditions of a
/// pod still running that no controller reads (see [`LIVE_POD_CONDITIONS`]; each costs
/// about 200 bytes, and a running pod has five) and the spare capacity decoding leaves
/// in the status's lists. Measured by `rkube bench informer`.
pub fn trim_pod(p: &mut CachedPod) {
    trim(p);
    if let Some(status) = p.status.as_mut() {
        let terminal = matches!(status.phase.as_deref(), Some("Succeeded" | "Failed"));
        if let Some(c) = status.conditions.as_mut() {
            if !terminal {
                c.retain(|c| LIVE_POD_CONDITIONS.contains(&c.type_.as_str()));
            }
            c.shrink_to_fit();
        }
        for statuses in [
            status.container_statuses.as_mut(),
            status.init_container_statuses.as_mut(),
        ]
        .into_iter()
        .flatten()
        {
            statuses.shrink_to_fit();
        }
    }
}

impl<K> Informer<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone + Default,
{
    /// Starts listing and watching every object `api` reaches.
    pub fn start(api: Api<K>) -> Arc<Self> {
        Self::start_trimmed(api, trim::<K>, &[])
    }

    /// As [`Informer::start`], with `trim` applied to every object before it is cached and
    /// the `indexers` kept.
    pub fn start_trimmed(
        api: Api<K>,
        trim: fn(&mut K),
        indexers: &'static [Indexer<K>],
    ) -> Arc<Self> {
        let (store, writer) = reflector::store::<K>();
        let informer = Arc::new(Informer {
            store,
            subscribers: std::sync::Mutex::new(Vec::new()),
            indexes: RwLock::new(Indexes::default()),
            indexers,
        });
        let stream = reflector::reflector(
            writer,
            // Backing off after errors (as client-go's reflector): retried at once, a watch
            // of a server that is down spins, and never yields to the runtime.
            watcher(api, watcher::Config::default())
                .default_backoff()
                .modify(trim),
        );
        let me = Arc::clone(&informer);
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(e) = stream.next().await {
                match e {
                    Ok(event) => {
                        // An update's object as the store holds it (the reflector applied
                        // the event first), so that indexes and subscribers share it rather
                        // than hold copies. (During a relist the store still holds the old
                        // objects.)
                        let stored = match &event {
                            watcher::Event::Apply(o) => me.store.get(&ObjectRef::from_obj(o)),
                            _ => None,
                        };
                        if !me.indexers.is_empty() {
                            me.index(&event, stored.as_ref());
                        }
                        let change = match event {
                            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                                Change::Apply(stored.unwrap_or_else(|| Arc::new(o)))
                            }
                            watcher::Event::Delete(o) => Change::Delete(Arc::new(o)),
                            watcher::Event::Init => Change::Other,
                            watcher::Event::InitDone => Change::Relisted,
                        };
                        me.publish(&change);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "watch error; the watcher backs off and resumes")
                    }
                }
            }
        });
        informer
    }

    /// Queues `change` for every subscriber still listening.
    fn publish(&self, change: &Change<K>) {
        crate::util::lock(&self.subscribers).retain(|s| {
            // Counted before it is sent, so the receiver never counts it down first.
            let queued = s.backlog.fetch_add(1, Ordering::Relaxed) + 1;
            if s.tx.send(change.clone()).is_err() {
                return false;
            }
            if queued >= BACKLOG_WARNING && queued.is_power_of_two() {
                tracing::warn!(
                    queued,
                    subscriber = %s.at,
                    kind = std::any::type_name::<K>(),
                    "an informer subscriber is falling behind; its events are queued"
                );
            }
            true
        });
    }

    fn indexes(&self) -> std::sync::RwLockWriteGuard<'_, Indexes<K>> {
        self.indexes
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Keeps the indexes in step with the store (which the reflector updated first);
    /// `stored` is an update's object as the store holds it.
    fn index(&self, event: &watcher::Event<K>, stored: Option<&Arc<K>>) {
        match event {
            watcher::Event::Apply(o) => match stored {
                Some(stored) => self.indexes().insert(key_of(o), stored, self.indexers),
                None => self.indexes().remove(&key_of(o)),
            },
            watcher::Event::Delete(o) => self.indexes().remove(&key_of(o)),
            // A relist replaced the store at its end: index it afresh.
            watcher::Event::InitDone => {
                let mut fresh = Indexes::default();
                for o in self.store.state() {
                    fresh.insert(key_of(o.as_ref()), &o, self.indexers);
                }
                *self.indexes() = fresh;
            }
            watcher::Event::Init | watcher::Event::InitApply(_) => {}
        }
    }

    /// The cached objects whose index `index` has `value` (upstream's `ByIndex`).
    pub fn by_index(&self, index: &str, value: &str) -> Vec<Arc<K>> {
        if !self.indexers.iter().any(|i| i.name == index) {
            tracing::warn!(index, "an informer was started without this index");
        }
        self.indexes
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entries
            .get(&(index_name(self.indexers, index), Arc::from(value)))
            .map(|objects| objects.values().cloned().collect())
            .unwrap_or_default()
    }

    /// A new subscription to the events from now on.
    #[track_caller]
    pub fn subscribe(&self) -> Subscription<K> {
        let (tx, rx) = mpsc::unbounded_channel();
        let backlog = Arc::new(AtomicUsize::new(0));
        let at = std::panic::Location::caller();
        let mut backlogs = crate::util::lock(&BACKLOGS);
        // Those of subscriptions gone go now too, not only when `/metrics` is read.
        backlogs.retain(|b| b.queued.strong_count() > 0);
        backlogs.push(Backlog {
            queued: Arc::downgrade(&backlog),
            at,
            kind: K::kind(&K::DynamicType::default()).into_owned(),
        });
        drop(backlogs);
        crate::util::lock(&self.subscribers).push(Subscriber {
            tx,
            backlog: Arc::clone(&backlog),
            at,
        });
        Subscription { rx, backlog }
    }

    /// A new subscription that tells first sights from updates and, after a relist,
    /// replays from this informer's store what the relist changed unseen ([`Seen`]).
    #[track_caller]
    pub fn subscribe_tracked(&self) -> Tracked<K> {
        Tracked {
            rx: self.subscribe(),
            store: self.store.clone(),
            seen: Seen::default(),
            missed: std::collections::VecDeque::new(),
        }
    }

    /// Waits until the first list is in the store.
    pub async fn synced(&self) {
        let _ = self.store.wait_until_ready().await;
    }
}

fn index_name<K>(indexers: &[Indexer<K>], name: &str) -> &'static str {
    indexers
        .iter()
        .find(|i| i.name == name)
        .map_or("", |i| i.name)
}

/// The objects a subscriber has seen, by uid, as it last saw them: it tells a first sight
/// (a creation, for controller expectations) from an update, and after a relist
/// ([`Next::Resync`]) it gives the events the relist implied, read from the cache as
/// upstream's `DeltaFIFO.Replace` gives them: every cached object it has not seen as it
/// is as an update, and every seen object that has left the cache as a deletion of its
/// last seen state (an object deleted while the watch was down has no event of its own).
/// Events still queued for the subscriber follow; replaying them again is harmless, since
/// a first sight is counted once here and deletions are idempotent.
pub struct Seen<K> {
    by_uid: HashMap<String, Arc<K>>,
}

impl<K> Default for Seen<K> {
    fn default() -> Self {
        Seen {
            by_uid: HashMap::new(),
        }
    }
}

impl<K: kube::Resource> Seen<K> {
    /// Records an applied (`deleted` false) or deleted object; true when an applied object
    /// is seen for the first time.
    pub fn observe(&mut self, obj: &Arc<K>, deleted: bool) -> bool {
        let uid = obj.meta().uid.clone().unwrap_or_default();
        if deleted {
            self.by_uid.remove(&uid);
            false
        } else {
            self.by_uid.insert(uid, Arc::clone(obj)).is_none()
        }
    }

    /// The events that bring what was seen up to `cached` (the informer's store now), as
    /// `(object, deleted)`: deletions first, then every cached object but those seen as the
    /// store holds them (the same `Arc`: an update's event carries the store's object).
    /// After a relist the store holds the list's own copies, which no event carried, so
    /// every cached object is replayed as an update, as upstream's `Replace` delivers it.
    pub fn missed(&self, cached: Vec<Arc<K>>) -> std::collections::VecDeque<(Arc<K>, bool)> {
        let present: std::collections::HashSet<&str> = cached
            .iter()
            .filter_map(|o| o.meta().uid.as_deref())
            .collect();
        let mut events: std::collections::VecDeque<(Arc<K>, bool)> = self
            .by_uid
            .iter()
            .filter(|(uid, _)| !present.contains(uid.as_str()))
            .map(|(_, o)| (Arc::clone(o), true))
            .collect();
        events.extend(
            cached
                .iter()
                .filter(|o| {
                    let uid = o.meta().uid.as_deref().unwrap_or_default();
                    self.by_uid
                        .get(uid)
                        .is_none_or(|seen| !Arc::ptr_eq(seen, o))
                })
                .map(|o| (Arc::clone(o), false)),
        );
        events
    }
}

/// An object event of a [`Tracked`] subscription.
pub struct Observed<K> {
    /// The object as applied, or as last seen when deleted.
    pub obj: Arc<K>,
    /// The object was deleted.
    pub deleted: bool,
    /// An applied object seen for the first time (a creation).
    pub first: bool,
}

/// A subscription for a controller that counts creations and deletions (its
/// expectations): each object's first sight is reported once, and after a relist the
/// changes it implied are replayed from the store ([`Seen::missed`]).
pub struct Tracked<K: kube::Resource + Clone + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    rx: Subscription<K>,
    store: Store<K>,
    seen: Seen<K>,
    missed: std::collections::VecDeque<(Arc<K>, bool)>,
}

impl<K: kube::Resource + Clone + 'static> Tracked<K>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    /// The next object event, replayed ones first; `None` once the informer stopped.
    /// `on_resync` runs after a relist (everything should be looked at again); the
    /// changes it implied come next, replayed from the store.
    pub async fn next(&mut self, mut on_resync: impl FnMut()) -> Option<Observed<K>> {
        loop {
            let (obj, deleted) = match self.missed.pop_front() {
                Some(event) => event,
                None => match next(&mut self.rx).await {
                    Next::Apply(o) => (o, false),
                    Next::Delete(o) => (o, true),
                    Next::Other => continue,
                    Next::Resync => {
                        self.missed = self.seen.missed(self.store.state());
                        on_resync();
                        continue;
                    }
                    Next::Closed => return None,
                },
            };
            let first = self.seen.observe(&obj, deleted);
            return Some(Observed {
                obj,
                deleted,
                first,
            });
        }
    }
}

/// The next event of a subscription.
pub async fn next<K>(sub: &mut Subscription<K>) -> Next<K> {
    let change = sub.rx.recv().await;
    if change.is_some() {
        sub.backlog.fetch_sub(1, Ordering::Relaxed);
    }
    match change {
        Some(Change::Apply(o)) => Next::Apply(o),
        Some(Change::Delete(o)) => Next::Delete(o),
        Some(Change::Other) => Next::Other,
        Some(Change::Relisted) => Next::Resync,
        None => Next::Closed,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn pod(name: &str, owner: Option<&str>, node: Option<&str>) -> CachedPod {
        let mut p = serde_json::json!({"metadata": {"name": name, "namespace": "ns"},
            "spec": {"containers": []}});
        if let Some(uid) = owner {
            p["metadata"]["ownerReferences"] = serde_json::json!([{"apiVersion": "apps/v1",
                "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": true}]);
        }
        if let Some(n) = node {
            p["spec"]["nodeName"] = serde_json::json!(n);
        }
        serde_json::from_value(p).unwrap()
    }

    /// The keys under an index value, checking each entry holds its own object.
    fn keys(ix: &Indexes<CachedPod>, index: &'static str, value: &str) -> Vec<String> {
        let mut k: Vec<String> = ix
            .entries
            .get(&(index, Arc::from(value)))
            .map(|k| {
                k.iter()
                    .map(|(k, o)| {
                        assert_eq!(key_of(o.as_ref()), k.as_ref());
                        k.to_string()
                    })
                    .collect()
            })
            .unwrap_or_default();
        k.sort();
        k
    }

    fn with_uid(mut p: CachedPod, uid: &str) -> Arc<CachedPod> {
        p.metadata.uid = Some(uid.to_string());
        Arc::new(p)
    }

    /// An informer with no watch of its own, for tests: `apply` feeds it as the watch would.
    fn bare_informer() -> (
        Arc<Informer<CachedPod>>,
        reflector::store::Writer<CachedPod>,
    ) {
        let (store, writer) = reflector::store::<CachedPod>();
        let informer = Arc::new(Informer {
            store,
            subscribers: std::sync::Mutex::new(Vec::new()),
            indexes: RwLock::new(Indexes::default()),
            indexers: POD_INDEXERS,
        });
        (informer, writer)
    }

    /// A subscriber that does not read for a while misses nothing (each has its own queue,
    /// however far behind it falls), and a dropped one stops being fed.
    #[tokio::test]
    async fn a_slow_subscriber_gets_every_event() {
        let (informer, _writer) = bare_informer();
        let (line, mut slow) = (line!(), informer.subscribe());
        let gone = informer.subscribe();
        drop(gone);
        for i in 0..10_000 {
            informer.publish(&Change::Apply(with_uid(
                pod(&format!("p{i}"), None, None),
                "u",
            )));
        }
        assert_eq!(
            crate::util::lock(&informer.subscribers).len(),
            1,
            "the dropped one is gone"
        );
        assert_eq!(slow.backlog.load(Ordering::Relaxed), 10_000);
        assert_eq!(
            crate::util::lock(&informer.subscribers)[0].at.line(),
            line,
            "named by where it subscribed"
        );
        // The gauge on /metrics (other tests' subscriptions are there too).
        let series = format!(
            "rkube_informer_subscriber_backlog{{kind=\"Pod\",subscriber=\"{}:{line}:",
            file!()
        );
        let gauge = |text: &str| {
            text.lines()
                .filter(|l| l.starts_with(&series))
                .map(|l| l.rsplit(' ').next().unwrap().to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(gauge(&render_backlogs()), ["10000"]);
        for i in 0..10_000 {
            let Next::Apply(p) = next(&mut slow).await else {
                panic!("event {i} is an object");
            };
            assert_eq!(p.metadata.name.as_deref(), Some(format!("p{i}").as_str()));
        }
        assert_eq!(slow.backlog.load(Ordering::Relaxed), 0);
        assert_eq!(gauge(&render_backlogs()), ["0"]);
        drop(informer);
        assert!(matches!(next(&mut slow).await, Next::Closed));
        drop(slow);
        assert!(
            gauge(&render_backlogs()).is_empty(),
            "gone with the subscription"
        );
    }

    /// After a relist, a tracked subscriber replays what the relist changed unseen: a pod
    /// deleted while the watch was down comes back as a deletion, and each pod created is
    /// seen for the first time exactly once, whether from its event, the replay, or both
    /// (as the ReplicaSet, Job and DaemonSet controllers count them for their expectations).
    #[tokio::test]
    async fn a_relist_replays_unseen_deletions_and_counts_each_creation_once() {
        let (informer, mut writer) = bare_informer();
        let (line, mut tracked) = (line!(), informer.subscribe_tracked());
        assert_eq!(
            crate::util::lock(&informer.subscribers)[0].at.line(),
            line,
            "named by the line that subscribed, not by subscribe_tracked"
        );
        let reader = writer.as_reader();
        // As the informer: the store first, then the store's object to subscribers.
        let mut apply = |p: CachedPod, deleted: bool, event: bool| {
            let r = ObjectRef::from_obj(&p);
            if deleted {
                writer.apply_watcher_event(&watcher::Event::Delete(p.clone()));
                if event {
                    informer.publish(&Change::Delete(Arc::new(p)));
                }
            } else {
                writer.apply_watcher_event(&watcher::Event::Apply(p));
                if event {
                    informer.publish(&Change::Apply(reader.get(&r).unwrap()));
                }
            }
        };
        let a = with_uid(pod("a", Some("rs"), None), "ua");
        apply(a.as_ref().clone(), false, true);
        let Some(Observed { first: true, .. }) = tracked.next(|| {}).await else {
            panic!("a first seen");
        };
        // Ten creations, five of them without an event (made while the watch was down),
        // and a's deletion without one; then the relist ends.
        for i in 0..10 {
            apply(
                with_uid(pod(&format!("p{i}"), Some("rs"), None), &format!("u{i}"))
                    .as_ref()
                    .clone(),
                false,
                i % 2 == 0,
            );
        }
        apply(a.as_ref().clone(), true, false);
        informer.publish(&Change::Relisted);
        let (mut first, mut deleted, mut resyncs) = (Vec::new(), Vec::new(), 0);
        while let Ok(Some(event)) = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            tracked.next(|| resyncs += 1),
        )
        .await
        {
            let name = event.obj.metadata.name.clone().unwrap_or_default();
            if event.first {
                first.push(name.clone());
            }
            if event.deleted {
                deleted.push(name);
            }
        }
        assert_eq!(resyncs, 1, "the relist");
        first.sort();
        let mut want: Vec<String> = (0..10).map(|i| format!("p{i}")).collect();
        want.sort();
        assert_eq!(first, want, "each creation counted once");
        assert!(deleted.contains(&"a".to_string()), "{deleted:?}");
        // Caught up: nothing is missed, and a new version of a pod is.
        let mut cache = tracked.store.state();
        assert!(tracked.seen.missed(cache.clone()).is_empty());
        cache[3] = Arc::new(cache[3].as_ref().clone());
        let missed: Vec<_> = tracked.seen.missed(cache.clone()).into_iter().collect();
        assert_eq!(missed.len(), 1);
        assert_eq!(missed[0].0.metadata.name, cache[3].metadata.name);
        assert!(!missed[0].1);
    }

    /// An informer whose server answers nothing but errors retries with back-off, not in
    /// a loop that would spin (and never yield to the runtime).
    #[tokio::test]
    async fn a_failing_watch_backs_off() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = Arc::new(AtomicUsize::new(0));
        let counted = Arc::clone(&calls);
        let service = tower::service_fn(move |_req: http::Request<kube::client::Body>| {
            counted.fetch_add(1, Ordering::SeqCst);
            async {
                let body = r#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"down","reason":"ServiceUnavailable","code":503}"#;
                http::Response::builder()
                    .status(503)
                    .header("content-type", "application/json")
                    .body(kube::client::Body::from(body.as_bytes().to_vec()))
                    .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)
            }
        });
        let client = kube::Client::new(service, "default");
        let informer = Informer::<k8s_openapi::api::core::v1::ConfigMap>::start(Api::all(client));
        tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
        let n = calls.load(Ordering::SeqCst);
        assert!((1..10).contains(&n), "{n} requests in 1.5 s");
        drop(informer);
    }

    #[test]
    fn pod_indexes_follow_updates_and_deletes() {
        let mut ix = Indexes::default();
        ix.insert(
            "ns/a".into(),
            &Arc::new(pod("a", Some("rs-1"), None)),
            POD_INDEXERS,
        );
        ix.insert(
            "ns/b".into(),
            &Arc::new(pod("b", None, Some("n1"))),
            POD_INDEXERS,
        );
        assert_eq!(keys(&ix, "controller", "rs-1"), vec!["ns/a"]);
        assert_eq!(keys(&ix, "controller", "orphan/ns"), vec!["ns/b"]);
        assert_eq!(keys(&ix, "namespace", "ns"), vec!["ns/a", "ns/b"]);
        assert_eq!(keys(&ix, "node", "n1"), vec!["ns/b"]);
        // b adopted and bound elsewhere: its old entries go.
        ix.insert(
            "ns/b".into(),
            &Arc::new(pod("b", Some("rs-1"), Some("n2"))),
            POD_INDEXERS,
        );
        // Every entry holds the latest object.
        let on_n2 = &ix.entries[&("node", Arc::from("n2"))];
        assert_eq!(
            on_n2
                .values()
                .next()
                .unwrap()
                .spec
                .as_ref()
                .unwrap()
                .node_name
                .as_deref(),
            Some("n2")
        );
        let by_rs = &ix.entries[&("controller", Arc::from("rs-1"))];
        assert!(Arc::ptr_eq(
            by_rs.get("ns/b").unwrap(),
            on_n2.values().next().unwrap()
        ));
        assert_eq!(keys(&ix, "controller", "rs-1"), vec!["ns/a", "ns/b"]);
        assert!(keys(&ix, "controller", "orphan/ns").is_empty());
        assert!(keys(&ix, "node", "n1").is_empty());
        assert_eq!(keys(&ix, "node", "n2"), vec!["ns/b"]);
        // An update with the same index values swaps the object in every entry.
        let again = Arc::new(pod("b", Some("rs-1"), Some("n2")));
        ix.insert("ns/b".into(), &again, POD_INDEXERS);
        for entry in &ix.of["ns/b"] {
            assert!(Arc::ptr_eq(&ix.entries[entry]["ns/b"], &again), "{entry:?}");
        }
        assert_eq!(ix.of["ns/b"].len(), 3);
        assert_eq!(keys(&ix, "controller", "rs-1"), vec!["ns/a", "ns/b"]);
        ix.remove("ns/a");
        ix.remove("ns/b");
        assert!(ix.entries.is_empty() && ix.of.is_empty());
    }

    /// A running pod keeps the conditions controllers read; a terminal one keeps all (a
    /// Job's pod failure policy may match any type).
    #[test]
    fn trimmed_pods_keep_the_conditions_controllers_read() {
        let conditions = serde_json::json!([
            {"type": "PodReadyToStartContainers", "status": "True"},
            {"type": "Initialized", "status": "True"},
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-01-01T00:00:00Z"},
            {"type": "ContainersReady", "status": "True"},
            {"type": "PodScheduled", "status": "True"},
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI"},
        ]);
        let with = |phase: &str| -> CachedPod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p", "namespace": "ns",
                             "managedFields": [{"manager": "m", "operation": "Update"}]},
                "status": {"phase": phase, "conditions": conditions}}))
            .unwrap()
        };
        let types = |p: &CachedPod| -> Vec<String> {
            let st = p.status.as_ref().unwrap();
            st.conditions
                .iter()
                .flatten()
                .map(|c| c.type_.clone())
                .collect()
        };
        let mut running = with("Running");
        trim_pod(&mut running);
        assert_eq!(types(&running), ["Ready", "DisruptionTarget"]);
        assert!(crate::services::is_pod_ready(&running));
        for phase in ["Failed", "Succeeded"] {
            let mut done = with(phase);
            trim_pod(&mut done);
            assert_eq!(types(&done).len(), 6, "{phase}");
        }
    }
}
