//! The garbage collector's loop (upstream's `GarbageCollector` and `GraphBuilder`):
//!
//! - **Monitors:** discovery finds every resource that can be listed, watched and deleted
//!   (events excepted, as upstream), re-checked every 30 s so custom resources join; each
//!   gets a metadata-only watch (`PartialObjectMetadata`), whose events feed the graph and
//!   are then dropped — the collector keeps no copy of the objects, only the graph's nodes.
//! - **Graph builder:** one task applies the watch events to [`gc::Graph`] in order; a
//!   relist's missing objects count as deleted. The work it returns goes to two queues.
//! - **Workers** (after every monitor's first list): `attemptToDelete` looks the object and
//!   its owners up on the API server (a lagging watch never makes it delete) and carries
//!   out [`gc::decide`]; `attemptToOrphan` removes an owner's references from its
//!   dependents, then the `orphan` finalizer. Deletions carry a uid precondition, patches
//!   a resourceVersion precondition, so a replaced object is never touched.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, Preconditions};
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use kube::discovery::{Discovery, Scope, verbs};
use kube::runtime::{WatchStreamExt, watcher};
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::gc::{self, Change, Decision, Graph, Identity, Meta, OwnerRef, OwnerState, Uid, Work};
use runtime::leanmeta::LeanObject;

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next};

/// Why one attempt failed (it is retried, rate-limited).
#[derive(Debug, thiserror::Error)]
pub enum GcError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("no resource serves kind {kind} of group {group:?}")]
    Unmapped { group: String, kind: String },
}

/// The collector's settings.
#[derive(Clone, Debug)]
pub struct Options {
    /// Workers per queue (upstream's `--concurrent-gc-syncs`, 20).
    pub workers: usize,
    /// How often discovery is re-run for new resources.
    pub discovery_period: Duration,
    /// How long the first lists may take before the workers start anyway.
    pub sync_timeout: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            workers: 20,
            discovery_period: Duration::from_secs(30),
            sync_timeout: Duration::from_secs(60),
        }
    }
}

/// Resources the collector never watches (upstream's `DefaultIgnoredResources`).
const IGNORED: &[(&str, &str)] = &[("", "events"), ("events.k8s.io", "events")];

#[derive(Clone, Debug)]
struct Mapping {
    resource: ApiResource,
    namespaced: bool,
}

/// What a watch reports to the graph builder.
enum Input {
    Init(usize),
    Apply(usize, Meta, bool),
    Delete(Meta),
    InitDone(usize),
    Absent(Identity),
}

struct Shared {
    graph: Mutex<Graph>,
    /// (group, kind) → the resource serving it.
    mapper: RwLock<HashMap<(String, String), Mapping>>,
    deletes: WorkQueue<String>,
    orphans: WorkQueue<String>,
    client: Client,
    input: mpsc::Sender<Input>,
    /// Asks for discovery to run again (a kind nothing maps yet: maybe a new CRD).
    rediscover: tokio::sync::Notify,
    events: runtime::events::Recorder,
    /// The controller manager's pod informer, read instead of a second watch of pods.
    pods: Option<Arc<Informer<CachedPod>>>,
}

impl Shared {
    fn graph(&self) -> std::sync::MutexGuard<'_, Graph> {
        self.graph
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mapping(&self, group: &str, kind: &str) -> Result<Mapping, GcError> {
        self.mapper
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&(group.to_string(), kind.to_string()))
            .cloned()
            .ok_or_else(|| {
                self.rediscover.notify_one();
                GcError::Unmapped {
                    group: group.into(),
                    kind: kind.into(),
                }
            })
    }

    fn api(&self, m: &Mapping, namespace: &str) -> Api<DynamicObject> {
        if m.namespaced {
            Api::namespaced_with(self.client.clone(), namespace, &m.resource)
        } else {
            Api::all_with(self.client.clone(), &m.resource)
        }
    }

    fn enqueue(&self, work: Vec<Work>) {
        for w in work {
            match w {
                Work::AttemptToDelete(u) => self.deletes.add(u.to_string()),
                Work::AttemptToOrphan(u) => self.orphans.add(u.to_string()),
                Work::InvalidNamespace { dependent, owner } => {
                    let reference = k8s_openapi::api::core::v1::ObjectReference {
                        api_version: Some(dependent.api_version.clone()),
                        kind: Some(dependent.kind.clone()),
                        namespace: Some(dependent.namespace.clone()),
                        name: Some(dependent.name.clone()),
                        uid: Some(dependent.uid.to_string()),
                        ..Default::default()
                    };
                    self.events.event(
                        &reference,
                        runtime::events::EventType::Warning,
                        "OwnerRefInvalidNamespace",
                        &gc::invalid_namespace_message(&dependent, &owner),
                    );
                }
            }
        }
    }
}

/// The collector's view of one owner reference.
fn owner_ref(o: &k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference) -> OwnerRef {
    OwnerRef {
        api_version: o.api_version.clone(),
        kind: o.kind.clone(),
        name: o.name.clone(),
        uid: o.uid.as_str().into(),
        controller: o.controller.unwrap_or(false),
        block_owner_deletion: o.block_owner_deletion.unwrap_or(false),
    }
}

/// The collector's view of an object's metadata, as the resource `r` serves it.
pub fn meta_of(r: &ApiResource, m: &ObjectMeta) -> Option<Meta> {
    let uid: Uid = m.uid.as_deref()?.into();
    let has = |f: &str| m.finalizers.iter().flatten().any(|x| x == f);
    Some(Meta {
        identity: Identity {
            api_version: r.api_version.clone(),
            kind: r.kind.clone(),
            namespace: m.namespace.clone().unwrap_or_default(),
            name: m.name.clone().unwrap_or_default(),
            uid,
        },
        owners: m.owner_references.iter().flatten().map(owner_ref).collect(),
        being_deleted: m.deletion_timestamp.is_some(),
        orphan_finalizer: has(gc::ORPHAN),
        foreground_finalizer: has(gc::FOREGROUND),
    })
}

/// Runs the garbage collector until the process ends. `pods` is the controller manager's
/// shared pod informer when it runs one: the collector follows it rather than watching
/// pods a second time (as upstream's takes a resource's shared informer when a controller
/// already has one); every other resource gets a metadata watch of its own.
pub async fn run_garbage_collector(
    client: Client,
    options: Options,
    pods: Option<Arc<Informer<CachedPod>>>,
) {
    let (tx, rx) = mpsc::channel(4096);
    let events = crate::run::recorder(&client, "garbage-collector-controller");
    let shared = Arc::new(Shared {
        graph: Mutex::new(Graph::new()),
        mapper: RwLock::new(HashMap::new()),
        deletes: WorkQueue::named("garbage_collector_attempt_to_delete"),
        orphans: WorkQueue::named("garbage_collector_attempt_to_orphan"),
        client,
        input: tx,
        rediscover: tokio::sync::Notify::new(),
        events,
        pods,
    });
    let (synced_tx, mut synced_rx) = tokio::sync::watch::channel(HashSet::<usize>::new());
    tokio::spawn(build_graph(Arc::clone(&shared), rx, synced_tx));

    let mut monitors: HashMap<(String, String), (usize, tokio::task::JoinHandle<()>)> =
        HashMap::new();
    let mut next_source = 0usize;
    // The first discovery, then the workers once the first lists are in.
    loop {
        match resync_monitors(&shared, &mut monitors, &mut next_source).await {
            Ok(()) => break,
            Err(e) => {
                tracing::warn!(error = %e, "garbage collector discovery failed; retrying");
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
    }
    let wanted: HashSet<usize> = monitors.values().map(|(s, _)| *s).collect();
    let wait = synced_rx.wait_for(|done| wanted.is_subset(done));
    if tokio::time::timeout(options.sync_timeout, wait)
        .await
        .is_err()
    {
        tracing::warn!("garbage collector: not every resource listed in time; starting anyway");
    }
    tracing::info!(
        resources = monitors.len(),
        nodes = shared.graph().len(),
        "garbage collector synced"
    );
    crate::run::spawn_workers(
        &shared,
        &shared.deletes,
        options.workers,
        "garbagecollector",
        |s, uid| async move { attempt_to_delete(&s, &uid).await },
    );
    crate::run::spawn_workers(
        &shared,
        &shared.orphans,
        options.workers,
        "garbagecollector-orphan",
        |s, uid| async move { attempt_to_orphan(&s, &uid).await },
    );
    loop {
        tokio::select! {
            () = tokio::time::sleep(options.discovery_period) => {}
            () = shared.rediscover.notified() => {
                // At most one early discovery per few seconds.
                tokio::time::sleep(Duration::from_secs(2)).await;
            }
        }
        if let Err(e) = resync_monitors(&shared, &mut monitors, &mut next_source).await {
            tracing::info!(error = %e, "garbage collector discovery failed");
        }
    }
}

/// Runs discovery, updates the kind → resource map and starts (or stops) one monitor per
/// deletable resource.
async fn resync_monitors(
    shared: &Arc<Shared>,
    monitors: &mut HashMap<(String, String), (usize, tokio::task::JoinHandle<()>)>,
    next_source: &mut usize,
) -> Result<(), kube::Error> {
    let discovery = match Discovery::new(shared.client.clone()).run_aggregated().await {
        Ok(d) => d,
        Err(_) => Discovery::new(shared.client.clone()).run().await?,
    };
    let mut mapper = HashMap::new();
    let mut deletable = HashMap::new();
    for group in discovery.groups() {
        for (ar, caps) in group.recommended_resources() {
            let namespaced = caps.scope == Scope::Namespaced;
            mapper.insert(
                (ar.group.clone(), ar.kind.clone()),
                Mapping {
                    resource: ar.clone(),
                    namespaced,
                },
            );
            let ignored = IGNORED
                .iter()
                .any(|(g, r)| *g == ar.group && *r == ar.plural);
            if !ignored
                && caps.supports_operation(verbs::LIST)
                && caps.supports_operation(verbs::WATCH)
                && caps.supports_operation(verbs::DELETE)
            {
                deletable.insert((ar.group.clone(), ar.plural.clone()), ar);
            }
        }
    }
    *shared
        .mapper
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = mapper;
    monitors.retain(|key, (_, task)| {
        let keep = deletable.contains_key(key);
        if !keep {
            tracing::info!(group = %key.0, resource = %key.1, "garbage collector stops watching");
            task.abort();
        }
        keep
    });
    for (key, ar) in deletable {
        if monitors.contains_key(&key) {
            continue;
        }
        let source = *next_source;
        *next_source += 1;
        let task = match &shared.pods {
            Some(pods) if ar.group.is_empty() && ar.plural == "pods" => tokio::spawn(
                follow_informer(Arc::clone(shared), source, ar, Arc::clone(pods)),
            ),
            _ => tokio::spawn(monitor(Arc::clone(shared), source, ar)),
        };
        monitors.insert(key, (source, task));
    }
    Ok(())
}

/// One resource's metadata watch, feeding the graph builder.
async fn monitor(shared: Arc<Shared>, source: usize, ar: ApiResource) {
    let api: Api<LeanObject> = Api::all_with(shared.client.clone(), &ar);
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let input = match event {
            Ok(watcher::Event::Init) => Input::Init(source),
            Ok(watcher::Event::InitApply(o)) => match meta_of(&ar, &o.metadata) {
                Some(m) => Input::Apply(source, m, true),
                None => continue,
            },
            Ok(watcher::Event::InitDone) => Input::InitDone(source),
            Ok(watcher::Event::Apply(o)) => match meta_of(&ar, &o.metadata) {
                Some(m) => Input::Apply(source, m, false),
                None => continue,
            },
            Ok(watcher::Event::Delete(o)) => match meta_of(&ar, &o.metadata) {
                Some(m) => Input::Delete(m),
                None => continue,
            },
            Err(e) => {
                tracing::debug!(resource = %ar.plural, error = %e, "garbage collector watch error");
                continue;
            }
        };
        if shared.input.send(input).await.is_err() {
            return;
        }
    }
}

/// One resource's graph input from an informer the controller manager already runs. The
/// start and end of each of its lists, and events missed, become a pass over its store
/// (as a relist of a watch of our own would be): the graph learns every object and
/// forgets those gone.
async fn follow_informer<K>(
    shared: Arc<Shared>,
    source: usize,
    ar: ApiResource,
    informer: Arc<Informer<K>>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + Sync,
    K: 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone + Default,
{
    // Subscribed once the informer's first list is in, then its store read: what changed
    // before the subscription is in the store, what changes after arrives as an event. (A
    // subscription from the start would queue the first list's events and its start and
    // end, each end a second and third pass over every object.)
    informer.synced().await;
    let mut events = informer.subscribe();
    if !relist_from(&shared, source, &ar, &informer).await {
        return;
    }
    loop {
        let input = match informers::next(&mut events).await {
            Next::Apply(o) => match meta_of(&ar, o.meta()) {
                Some(m) => Input::Apply(source, m, false),
                None => continue,
            },
            Next::Delete(o) => match meta_of(&ar, o.meta()) {
                Some(m) => Input::Delete(m),
                None => continue,
            },
            Next::Other | Next::Resync => {
                if relist_from(&shared, source, &ar, &informer).await {
                    continue;
                }
                return;
            }
            Next::Closed => return,
        };
        if shared.input.send(input).await.is_err() {
            return;
        }
    }
}

/// Feeds the graph builder a list of `source` from `informer`'s store; false once the
/// builder is gone.
async fn relist_from<K>(
    shared: &Shared,
    source: usize,
    ar: &ApiResource,
    informer: &Informer<K>,
) -> bool
where
    K: kube::Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    let objects = informer.store.state();
    let inputs = std::iter::once(Input::Init(source))
        .chain(
            objects
                .iter()
                .filter_map(|o| meta_of(ar, o.meta()))
                .map(|m| Input::Apply(source, m, true)),
        )
        .chain(std::iter::once(Input::InitDone(source)));
    for input in inputs {
        if shared.input.send(input).await.is_err() {
            return false;
        }
    }
    true
}

/// The graph builder: applies the monitors' events in order and queues the work.
async fn build_graph(
    shared: Arc<Shared>,
    mut rx: mpsc::Receiver<Input>,
    synced: tokio::sync::watch::Sender<HashSet<usize>>,
) {
    // The uids seen by each relist in progress.
    let mut relisting: HashMap<usize, HashSet<Uid>> = HashMap::new();
    while let Some(input) = rx.recv().await {
        let work = match input {
            Input::Init(source) => {
                relisting.insert(source, HashSet::new());
                Vec::new()
            }
            Input::Apply(source, meta, initial) => {
                if initial && let Some(seen) = relisting.get_mut(&source) {
                    seen.insert(Arc::clone(&meta.identity.uid));
                }
                shared.graph().apply(Change::Upsert { source, meta })
            }
            Input::Delete(meta) => shared.graph().apply(Change::Delete { meta }),
            Input::InitDone(source) => {
                let seen = relisting.remove(&source).unwrap_or_default();
                let mut graph = shared.graph();
                let mut work = Vec::new();
                // Deleted while the watch was down: the relist no longer has them.
                for uid in graph.observed_by(source) {
                    if seen.contains(&uid) {
                        continue;
                    }
                    let Some(node) = graph.node(&uid) else {
                        continue;
                    };
                    let meta = Meta {
                        identity: node.identity.clone(),
                        owners: node.owners.clone(),
                        being_deleted: node.being_deleted,
                        orphan_finalizer: false,
                        foreground_finalizer: false,
                    };
                    work.extend(graph.apply(Change::Delete { meta }));
                }
                drop(graph);
                synced.send_modify(|s| {
                    s.insert(source);
                });
                work
            }
            Input::Absent(identity) => shared.graph().apply(Change::Absent(identity)),
        };
        shared.enqueue(work);
    }
}

/// The live metadata of `identity`, `None` when absent or replaced (another uid).
async fn live(
    s: &Shared,
    identity: &Identity,
) -> Result<Option<PartialObjectMeta<DynamicObject>>, GcError> {
    let m = s.mapping(identity.group(), &identity.kind)?;
    if m.namespaced && identity.namespace.is_empty() {
        // A namespaced kind named from a cluster-scoped object: cannot exist.
        return Ok(None);
    }
    let found = s
        .api(&m, &identity.namespace)
        .get_metadata_opt(&identity.name)
        .await?;
    Ok(found.filter(|o| o.metadata.uid.as_deref() == Some(&*identity.uid)))
}

/// Tells the graph builder that `identity` does not exist.
async fn report_absent(s: &Shared, identity: &Identity) {
    let mut identity = identity.clone();
    if s.mapping(identity.group(), &identity.kind)
        .is_ok_and(|m| !m.namespaced)
    {
        identity.namespace.clear();
    }
    let _ = s.input.send(Input::Absent(identity)).await;
}

fn refs_json(m: &ObjectMeta) -> Vec<Value> {
    m.owner_references
        .iter()
        .flatten()
        .filter_map(|r| serde_json::to_value(r).ok())
        .collect()
}

/// upstream's `attemptToDeleteItem`.
async fn attempt_to_delete(s: &Shared, uid: &str) -> Result<(), GcError> {
    let (node, has_dependents, dependent_waiting) = {
        let graph = s.graph();
        let Some(node) = graph.node(uid) else {
            return Ok(());
        };
        let deps = graph.dependents(uid);
        (
            node.clone(),
            !deps.is_empty(),
            deps.iter().any(|d| d.deleting_dependents),
        )
    };
    if node.being_deleted && !node.deleting_dependents {
        return Ok(());
    }
    let Some(latest) = live(s, &node.identity).await? else {
        report_absent(s, &node.identity).await;
        return Ok(());
    };
    if node.deleting_dependents {
        return deleting_dependents(s, &node, &latest.metadata).await;
    }
    let refs = latest.metadata.owner_references.clone().unwrap_or_default();
    if refs.is_empty() {
        return Ok(());
    }
    let namespace = latest.metadata.namespace.clone().unwrap_or_default();
    let mut owners = Vec::new();
    for r in &refs {
        let owner = owner_ref(r);
        let state = classify(s, &owner, &namespace).await?;
        owners.push((owner, state));
    }
    let has = |f: &str| latest.metadata.finalizers.iter().flatten().any(|x| x == f);
    let decision = gc::decide(
        &owners,
        has_dependents,
        dependent_waiting,
        has(gc::ORPHAN),
        has(gc::FOREGROUND),
    );
    tracing::debug!(object = %node.identity.name, kind = %node.identity.kind, ?decision, "garbage collector decision");
    let m = s.mapping(node.identity.group(), &node.identity.kind)?;
    let api = s.api(&m, &namespace);
    let name = &node.identity.name;
    match decision {
        Decision::Keep => Ok(()),
        Decision::RemoveReferences(uids) => {
            let refs = refs_json(&latest.metadata);
            let remaining: Vec<&Value> = gc::without_owners(&refs, &uids).collect();
            patch_meta(
                &api,
                name,
                &latest.metadata,
                json!({ "ownerReferences": remaining }),
            )
            .await
        }
        Decision::DeleteForeground { unblock } => {
            if unblock {
                let unblocked: Vec<Value> = refs_json(&latest.metadata)
                    .into_iter()
                    .map(|mut r| {
                        if r["blockOwnerDeletion"] == true {
                            r["blockOwnerDeletion"] = json!(false);
                        }
                        r
                    })
                    .collect();
                patch_meta(
                    &api,
                    name,
                    &latest.metadata,
                    json!({ "ownerReferences": unblocked }),
                )
                .await?;
            }
            delete(&api, name, uid, gc::Propagation::Foreground).await
        }
        Decision::Delete(p) => delete(&api, name, uid, p).await,
    }
}

/// upstream's `classifyReferences` for one reference of an object in `namespace`.
async fn classify(s: &Shared, owner: &OwnerRef, namespace: &str) -> Result<OwnerState, GcError> {
    let identity = gc::owner_identity(owner, namespace);
    if s.graph().known_absent(&identity) {
        return Ok(OwnerState::Dangling);
    }
    let m = s.mapping(identity.group(), &identity.kind)?;
    let lookup = if m.namespaced {
        identity.clone()
    } else {
        Identity {
            namespace: String::new(),
            ..identity.clone()
        }
    };
    match live(s, &lookup).await? {
        None => {
            s.graph().mark_absent(lookup);
            Ok(OwnerState::Dangling)
        }
        Some(o) => {
            let waiting = o.metadata.deletion_timestamp.is_some()
                && o.metadata
                    .finalizers
                    .iter()
                    .flatten()
                    .any(|f| f == gc::FOREGROUND);
            Ok(if waiting {
                OwnerState::Waiting
            } else {
                OwnerState::Solid
            })
        }
    }
}

/// upstream's `processDeletingDependentsItem`: the owner waits in the foreground until
/// no dependent blocks it, then loses its finalizer.
async fn deleting_dependents(
    s: &Shared,
    node: &gc::Node,
    latest: &ObjectMeta,
) -> Result<(), GcError> {
    let blocking: Vec<(Uid, bool)> = s
        .graph()
        .blocking_dependents(&node.identity.uid)
        .into_iter()
        .map(|d| (Arc::clone(&d.identity.uid), d.deleting_dependents))
        .collect();
    if blocking.is_empty() {
        return remove_finalizer(s, &node.identity, latest, gc::FOREGROUND).await;
    }
    for (uid, waiting) in blocking {
        if !waiting {
            s.deletes.add(uid.to_string());
        }
    }
    Ok(())
}

/// upstream's `attemptToOrphanWorker`: remove the owner's references from its dependents,
/// then its `orphan` finalizer.
async fn attempt_to_orphan(s: &Shared, uid: &str) -> Result<(), GcError> {
    let (owner, dependents) = {
        let graph = s.graph();
        let Some(node) = graph.node(uid) else {
            return Ok(());
        };
        let deps: Vec<Identity> = graph
            .dependents(uid)
            .into_iter()
            .map(|d| d.identity.clone())
            .collect();
        (node.identity.clone(), deps)
    };
    let owner_uid: Vec<Uid> = vec![Arc::clone(&owner.uid)];
    for d in dependents {
        let Some(latest) = live(s, &d).await? else {
            continue;
        };
        let refs = refs_json(&latest.metadata);
        let remaining: Vec<&Value> = gc::without_owners(&refs, &owner_uid).collect();
        if remaining.len() == refs.len() {
            continue;
        }
        let m = s.mapping(d.group(), &d.kind)?;
        patch_meta(
            &s.api(&m, &d.namespace),
            &d.name,
            &latest.metadata,
            json!({ "ownerReferences": remaining }),
        )
        .await?;
    }
    let Some(latest) = live(s, &owner).await? else {
        return Ok(());
    };
    remove_finalizer(s, &owner, &latest.metadata, gc::ORPHAN).await
}

async fn remove_finalizer(
    s: &Shared,
    identity: &Identity,
    latest: &ObjectMeta,
    finalizer: &str,
) -> Result<(), GcError> {
    let finalizers: Vec<&String> = latest
        .finalizers
        .iter()
        .flatten()
        .filter(|f| *f != finalizer)
        .collect();
    if finalizers.len() == latest.finalizers.as_ref().map_or(0, Vec::len) {
        return Ok(());
    }
    let m = s.mapping(identity.group(), &identity.kind)?;
    patch_meta(
        &s.api(&m, &identity.namespace),
        &identity.name,
        latest,
        json!({ "finalizers": finalizers }),
    )
    .await
}

/// A merge patch of `fields` into the metadata, on the condition that the object is still
/// the one read (uid and resourceVersion).
async fn patch_meta(
    api: &Api<DynamicObject>,
    name: &str,
    latest: &ObjectMeta,
    mut fields: Value,
) -> Result<(), GcError> {
    // Empty lists are dropped, as the API server's Go types omit them.
    if let Some(map) = fields.as_object_mut() {
        for v in map.values_mut() {
            if v.as_array().is_some_and(Vec::is_empty) {
                *v = Value::Null;
            }
        }
    }
    fields["uid"] = json!(latest.uid);
    fields["resourceVersion"] = json!(latest.resource_version);
    let patch = json!({ "metadata": fields });
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => Err(e.into()),
    }
}

async fn delete(
    api: &Api<DynamicObject>,
    name: &str,
    uid: &str,
    propagation: gc::Propagation,
) -> Result<(), GcError> {
    let dp = DeleteParams {
        propagation_policy: Some(match propagation {
            gc::Propagation::Background => kube::api::PropagationPolicy::Background,
            gc::Propagation::Foreground => kube::api::PropagationPolicy::Foreground,
            gc::Propagation::Orphan => kube::api::PropagationPolicy::Orphan,
        }),
        preconditions: Some(Preconditions {
            uid: Some(uid.to_string()),
            resource_version: None,
        }),
        ..DeleteParams::default()
    };
    tracing::debug!(%name, %uid, propagation = propagation.as_str(), "garbage collector deletes");
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e.into()),
    }
}
