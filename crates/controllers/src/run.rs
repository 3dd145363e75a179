//! The ReplicaSet controller's loop: shared informers (kube-runtime reflectors over the
//! controller manager's identity), a deduplicating work queue of ReplicaSet keys, and
//! workers that run [`crate::replicaset`]'s pure logic and carry out its actions through
//! the API server as the `kube-system/replicaset-controller` service account (upstream's
//! `--use-service-account-credentials`), with expectations so a lagging cache never
//! makes it create twice.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::ClientSource;
use runtime::events::{EventType, KubeSink, Recorder, RecorderConfig};
use runtime::expectations::Expectations;
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next, Observed};
use crate::pods::Claimable;
use crate::replicaset::{self, Manage};

/// Why a controller could not start.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("kubeconfig {0}: {1}")]
    Kubeconfig(String, String),
    #[error("client: {0}")]
    Client(#[from] kube::Error),
}

/// A client of the API server with the identity of `source`'s kubeconfig, over HTTPS or
/// in-process ([`runtime::ClientSource`]).
pub async fn client_from(source: &ClientSource) -> Result<Client, Error> {
    source
        .client()
        .await
        .map_err(|e| kubeconfig_error(source, e))
}

fn kubeconfig_error(source: &ClientSource, e: runtime::Error) -> Error {
    match e {
        runtime::Error::Kubeconfig { path, message } => Error::Kubeconfig(path, message),
        other => Error::Kubeconfig(
            source.kubeconfig_path().display().to_string(),
            other.to_string(),
        ),
    }
}

/// A client acting as the service account `kube-system/<name>` (created if missing),
/// with a token requested through `manager` (upstream's `SAControllerClientBuilder`),
/// reaching the server as `source`'s clients do.
pub async fn controller_client(
    manager: &Client,
    source: &ClientSource,
    name: &str,
) -> Result<Client, Error> {
    let accounts: Api<ServiceAccount> = Api::namespaced(manager.clone(), "kube-system");
    if accounts.get_opt(name).await?.is_none() {
        let sa: ServiceAccount = serde_json::from_value(json!({"metadata": {"name": name}}))
            .map_err(|e| Error::Kubeconfig(name.into(), e.to_string()))?;
        match accounts.create(&PostParams::default(), &sa).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) => return Err(e.into()),
        }
    }
    let request = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 60 * 60 * 24 * 365}});
    let body =
        serde_json::to_vec(&request).map_err(|e| Error::Kubeconfig(name.into(), e.to_string()))?;
    let req = http::Request::post(format!(
        "/api/v1/namespaces/kube-system/serviceaccounts/{name}/token"
    ))
    .header("content-type", "application/json")
    .body(body)
    .map_err(|e| Error::Kubeconfig(name.into(), e.to_string()))?;
    let answer: Value = manager.request(req).await?;
    let token = answer["status"]["token"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    source
        .client_with_token(&token)
        .await
        .map_err(|e| kubeconfig_error(source, e))
}

/// An event recorder writing as `component` through `writer`.
pub(crate) fn recorder(writer: &Client, component: &str) -> Recorder {
    Recorder::spawn(
        KubeSink::new(writer.clone()),
        RecorderConfig::new(component, ""),
    )
}

/// A reference to an object (as JSON) for events.
pub(crate) fn reference(obj: &Value, kind: &str, api_version: &str) -> ObjectReference {
    let s = |v: &Value| v.as_str().map(str::to_string);
    ObjectReference {
        api_version: Some(api_version.into()),
        kind: Some(kind.into()),
        namespace: s(&obj["metadata"]["namespace"]),
        name: s(&obj["metadata"]["name"]),
        uid: s(&obj["metadata"]["uid"]),
        resource_version: s(&obj["metadata"]["resourceVersion"]),
        field_path: None,
    }
}

pub(crate) fn key_of(ns: &str, name: &str) -> String {
    format!("{ns}/{name}")
}

pub(crate) fn object_key(
    meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
) -> String {
    key_of(
        meta.namespace.as_deref().unwrap_or_default(),
        meta.name.as_deref().unwrap_or_default(),
    )
}

/// How long pod status changes wait before their ReplicaSet syncs (see `run_replicasets`).
const POD_STATUS_BATCH: Duration = Duration::from_millis(100);

/// The shared state of the loop.
struct Shared {
    replicasets: Store<ReplicaSet>,
    pod_informer: Arc<Informer<CachedPod>>,
    queue: WorkQueue<String>,
    expectations: Mutex<Expectations>,
    writer: Client,
    events: Recorder,
}

impl Shared {
    /// Queues every cached ReplicaSet.
    fn enqueue_all(&self) {
        for rs in self.replicasets.state() {
            self.queue.add(object_key(&rs.metadata));
        }
    }

    fn expectations(&self) -> std::sync::MutexGuard<'_, Expectations> {
        match self.expectations.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

/// The keys of the owners an event on `obj` concerns: its controller when it is a `kind`,
/// or (an orphan) every candidate of its namespace whose selector matches it.
pub(crate) fn owner_keys<K: serde::Serialize>(
    obj: &Value,
    kind: &str,
    candidates: &[Arc<K>],
) -> Vec<String> {
    let ns = obj["metadata"]["namespace"].as_str().unwrap_or_default();
    if let Some(owner) = crate::pods::controller_of(obj) {
        return if owner["kind"] == kind {
            vec![key_of(ns, owner["name"].as_str().unwrap_or_default())]
        } else {
            Vec::new()
        };
    }
    candidates
        .iter()
        .filter_map(|c| serde_json::to_value(c.as_ref()).ok())
        .filter(|c| c["metadata"]["namespace"] == ns)
        .filter(|c| {
            api::selector::LabelSelector::from_label_selector(&c["spec"]["selector"])
                .is_ok_and(|s| !s.is_empty() && s.matches_object(obj))
        })
        .map(|c| key_of(ns, c["metadata"]["name"].as_str().unwrap_or_default()))
        .collect()
}

/// [`owner_keys`] of a typed object (a cached pod, mostly): its controller reference is
/// read in place (pod events come by the thousand); only an orphan is turned into JSON to
/// match the candidates.
pub(crate) fn owned_keys<T, K>(obj: &T, kind: &str, candidates: &[Arc<K>]) -> Vec<String>
where
    T: kube::Resource + serde::Serialize,
    K: serde::Serialize,
{
    let meta = obj.meta();
    match crate::pods::controller_ref(meta) {
        Some(owner) if owner.kind == kind => vec![key_of(
            meta.namespace.as_deref().unwrap_or_default(),
            &owner.name,
        )],
        Some(_) => Vec::new(),
        None => serde_json::to_value(obj)
            .map(|v| owner_keys(&v, kind, candidates))
            .unwrap_or_default(),
    }
}

/// Runs the ReplicaSet controller with `workers` workers until the process ends.
pub async fn run_replicasets(
    replicasets: Arc<Informer<ReplicaSet>>,
    pods: Arc<Informer<CachedPod>>,
    writer: Client,
    workers: usize,
) {
    let mut rs_events = replicasets.subscribe();
    let mut pod_events = pods.subscribe_tracked();
    let shared = Arc::new(Shared {
        replicasets: replicasets.store.clone(),
        pod_informer: Arc::clone(&pods),
        queue: WorkQueue::named("replicaset"),
        expectations: Mutex::new(Expectations::default()),
        events: recorder(&writer, "replicaset-controller"),
        writer,
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut rs_events).await {
                Next::Apply(rs) => {
                    s.queue.add(object_key(&rs.metadata));
                }
                Next::Delete(rs) => {
                    s.expectations().delete(&object_key(&rs.metadata));
                }
                Next::Other => {}
                Next::Resync => s.enqueue_all(),
                Next::Closed => break,
            }
        }
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        // A relist's unseen changes are replayed after its resync: their creations and
        // deletions still count towards expectations (else a ReplicaSet would wait five
        // minutes for them to expire before its next batch).
        while let Some(Observed {
            obj: pod,
            deleted,
            first: first_seen,
        }) = pod_events.next(|| s.enqueue_all()).await
        {
            let pod_key = key_of(
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default(),
            );
            let owners = owned_keys(pod.as_ref(), "ReplicaSet", &s.replicasets.state());
            // Creations and deletions move expectations and may unblock the next batch:
            // their ReplicaSets sync at once. Other pod changes (status, mostly) are
            // batched for POD_STATUS_BATCH, so a ReplicaSet with many pods changing is
            // synced a few times a second, not once per pod event (a sync reads all its
            // pods), as the Job controller's `syncJobBatchPeriod`.
            let urgent = deleted || first_seen || pod.metadata.deletion_timestamp.is_some();
            {
                let mut exp = s.expectations();
                for owner in &owners {
                    if deleted {
                        exp.deletion_observed(owner, &pod_key);
                    } else if first_seen {
                        exp.creation_observed(owner);
                    }
                    // A pod going away (being deleted) also fulfils a deletion.
                    if !deleted && pod.metadata.deletion_timestamp.is_some() {
                        exp.deletion_observed(owner, &pod_key);
                    }
                }
            }
            for owner in owners {
                if urgent {
                    s.queue.add(owner);
                } else {
                    s.queue.add_after(owner, POD_STATUS_BATCH);
                }
            }
        }
    });
    replicasets.synced().await;
    pods.synced().await;
    // Everything listed before this controller subscribed.
    shared.enqueue_all();
    spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "replicaset",
        |s, key| async move { sync(&s, &key).await },
    );
}

/// Carries out a claim: adopted objects get `owner` as their controller, released ones
/// lose it (merge patches with the object's uid, so a re-created object is left alone).
pub(crate) async fn adopt_and_release<K, T>(
    api: &Api<K>,
    owner: &Value,
    kind: &str,
    claim: &replicaset::Claim<'_, T>,
) where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug,
    T: Claimable + ?Sized,
{
    let owner_uid = owner["metadata"]["uid"].clone();
    let changes = claim
        .adopt
        .iter()
        .map(|o| (o, true))
        .chain(claim.release.iter().map(|o| (o, false)));
    for (obj, adopt) in changes {
        let mut refs: Vec<Value> = obj
            .owner_references()
            .into_iter()
            .filter(|o| o["uid"] != owner_uid)
            .collect();
        if adopt {
            refs.push(json!({"apiVersion": "apps/v1", "kind": kind,
                "name": owner["metadata"]["name"], "uid": owner_uid,
                "controller": true, "blockOwnerDeletion": true}));
        }
        let patch = json!({"metadata": {"ownerReferences": refs, "uid": obj.uid()}});
        let name = obj.name();
        if let Err(e) = api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            tracing::info!(object = name, adopt, error = %e, "adoption or release failed");
        }
    }
}

/// Starts `workers` workers taking keys off `queue` and running `sync` on each, in a
/// span per reconcile: a success forgets the key's back-off, a failure retries it
/// rate-limited.
pub(crate) fn spawn_workers<S, F, Fut, E>(
    shared: &Arc<S>,
    queue: &WorkQueue<String>,
    workers: usize,
    controller: &'static str,
    sync: F,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, String) -> Fut + Copy + Send + 'static,
    Fut: std::future::Future<Output = Result<(), E>> + Send,
    E: std::fmt::Display,
{
    for _ in 0..workers.max(1) {
        let s = Arc::clone(shared);
        let queue = queue.clone();
        tokio::spawn(async move {
            while let Some(key) = queue.get().await {
                let span = tracing::debug_span!("reconcile", controller, %key);
                let result =
                    tracing::Instrument::instrument(sync(Arc::clone(&s), key.clone()), span).await;
                match result {
                    Ok(()) => queue.forget(&key),
                    Err(e) => {
                        tracing::info!(controller, %key, error = %e, "sync failed; retrying");
                        queue.add_rate_limited(key.clone());
                    }
                }
                queue.done(&key);
            }
        });
    }
}

pub(crate) fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// What a controller reads of a pod it created: its generated name. The rest of the
/// server's answer (the whole pod, managedFields included) is skipped unread; the pod
/// itself arrives through the informer.
#[derive(serde::Deserialize)]
struct CreatedPod {
    metadata: CreatedName,
}

#[derive(serde::Deserialize)]
struct CreatedName {
    #[serde(default)]
    name: String,
}

/// Creates a pod in `ns` from its encoded `body`; the created pod's name.
async fn create_pod(client: &Client, ns: &str, body: Vec<u8>) -> Result<String, kube::Error> {
    use kube::Resource as _;
    let req = kube::core::Request::new(Pod::url_path(&(), Some(ns)))
        .create(&PostParams::default(), body)
        .map_err(kube::Error::BuildRequest)?;
    let created: CreatedPod = client.request(req).await?;
    Ok(created.metadata.name)
}

/// One `syncReplicaSet`.
async fn sync(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let Some(rs) = s.replicasets.get(&ObjectRef::new(name).within(ns)) else {
        s.expectations().delete(key);
        return Ok(());
    };
    let rs_uid = rs.metadata.uid.clone().unwrap_or_default();
    let Ok(rs) = serde_json::to_value(rs.as_ref()) else {
        return Ok(());
    };
    // Only this ReplicaSet's pods and the orphans it might adopt are looked at closely.
    // (The informer's controller index: a lookup, not a scan of every pod.)
    let pods: Vec<Arc<CachedPod>> = s
        .pod_informer
        .by_index("controller", &rs_uid)
        .into_iter()
        .chain(
            s.pod_informer
                .by_index("controller", &format!("orphan/{ns}")),
        )
        .filter(|p| p.metadata.namespace.as_deref() == Some(ns))
        .collect();
    let needs_sync = s.expectations().satisfied(key, Instant::now());
    let claim = replicaset::claim(&rs, &pods);
    let rs_ref = reference(&rs, "ReplicaSet", "apps/v1");
    let pods_api: Api<Pod> = Api::namespaced(s.writer.clone(), ns);
    adopt_and_release(&pods_api, &rs, "ReplicaSet", &claim).await;
    let mut manage_error: Option<String> = None;
    if needs_sync && rs["metadata"]["deletionTimestamp"].is_null() {
        match replicaset::manage(&rs, &claim.owned, &claim.owned) {
            Manage::Nothing => {}
            Manage::Create(n) => {
                tracing::debug!(%key, create = n, owned = claim.owned.len(), "scaling up");
                s.expectations().expect_creations(key, n, Instant::now());
                // Encoded once for every pod of the sync (they are all alike).
                let body = serde_json::from_value::<Pod>(replicaset::new_pod(&rs))
                    .and_then(|p| serde_json::to_vec(&p));
                let body = match body {
                    Ok(b) => b,
                    Err(e) => {
                        s.expectations().lower_creations(key, n);
                        tracing::warn!(error = %e, "invalid pod template");
                        return Ok(());
                    }
                };
                let mut created = 0;
                for batch in replicaset::slow_start_batches(n, 1) {
                    let results = futures::future::join_all(
                        (0..batch).map(|_| create_pod(&s.writer, ns, body.clone())),
                    )
                    .await;
                    let mut failures: Vec<String> = Vec::new();
                    for r in results {
                        match r {
                            Ok(name) => s.events.event(
                                &rs_ref,
                                EventType::Normal,
                                "SuccessfulCreate",
                                &format!("Created pod: {name}"),
                            ),
                            Err(e) => {
                                let msg = match &e {
                                    kube::Error::Api(status) => status.message.clone(),
                                    other => other.to_string(),
                                };
                                s.events.event(
                                    &rs_ref,
                                    EventType::Warning,
                                    "FailedCreate",
                                    &format!("Error creating: {msg}"),
                                );
                                failures.push(e.to_string());
                            }
                        }
                    }
                    created += batch - failures.len();
                    if !failures.is_empty() {
                        // The failed creations and the skipped batches will never be seen.
                        s.expectations().lower_creations(key, n - created);
                        manage_error = failures.into_iter().next();
                        break;
                    }
                }
            }
            Manage::Delete(names) => {
                tracing::debug!(%key, delete = names.len(), owned = claim.owned.len(), "scaling down");
                let keys: Vec<String> = names.iter().map(|n| key_of(ns, n)).collect();
                s.expectations()
                    .expect_deletions(key, &keys, Instant::now());
                let dp = DeleteParams::default();
                let results =
                    futures::future::join_all(names.iter().map(|n| pods_api.delete(n, &dp))).await;
                for (n, r) in names.iter().zip(results) {
                    match r {
                        Ok(_) => s.events.event(
                            &rs_ref,
                            EventType::Normal,
                            "SuccessfulDelete",
                            &format!("Deleted pod: {n}"),
                        ),
                        Err(e) => {
                            s.expectations().deletion_observed(key, &key_of(ns, n));
                            s.events.event(
                                &rs_ref,
                                EventType::Warning,
                                "FailedDelete",
                                &format!("Error deleting: {e}"),
                            );
                            manage_error.get_or_insert(e.to_string());
                        }
                    }
                }
            }
        }
    }
    let status = replicaset::status(&rs, &claim.owned, now_ms(), manage_error.as_deref());
    let current = &rs["status"];
    let changed = [
        "replicas",
        "fullyLabeledReplicas",
        "readyReplicas",
        "availableReplicas",
        "observedGeneration",
        "conditions",
    ]
    .iter()
    .any(|k| {
        let zero_if_missing = |v: &Value| if v.is_null() { json!(0) } else { v.clone() };
        if *k == "conditions" {
            current[*k] != status[*k]
        } else {
            zero_if_missing(&current[*k]) != zero_if_missing(&status[*k])
        }
    });
    if changed {
        let rs_api: Api<ReplicaSet> = Api::namespaced(s.writer.clone(), ns);
        let mut body = rs.clone();
        body["status"] = status;
        let Ok(body) = serde_json::from_value::<ReplicaSet>(body) else {
            return Ok(());
        };
        match rs_api
            .replace_status(name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    if let Some(e) = manage_error {
        tracing::info!(%key, error = %e, "replicaset could not reach its replicas");
        s.queue.add_after(key.to_string(), Duration::from_secs(1));
    }
    Ok(())
}

/// The Deployment controller's shared state.
struct DeploymentShared {
    deployments: Store<Deployment>,
    replicasets: Store<ReplicaSet>,
    queue: WorkQueue<String>,
    writer: Client,
    events: Recorder,
}

impl DeploymentShared {
    /// The Deployments a ReplicaSet event concerns.
    fn owners_of(&self, rs: &Value) -> Vec<String> {
        owner_keys(rs, "Deployment", &self.deployments.state())
    }
}

/// Runs the Deployment controller with `workers` workers until the process ends.
pub async fn run_deployments(
    deployments: Arc<Informer<Deployment>>,
    replicasets: Arc<Informer<ReplicaSet>>,
    writer: Client,
    workers: usize,
) {
    let mut d_events = deployments.subscribe();
    let mut rs_events = replicasets.subscribe();
    let shared = Arc::new(DeploymentShared {
        deployments: deployments.store.clone(),
        replicasets: replicasets.store.clone(),
        queue: WorkQueue::named("deployment"),
        events: recorder(&writer, "deployment-controller"),
        writer,
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut d_events).await {
                Next::Apply(d) => {
                    s.queue.add(object_key(&d.metadata));
                }
                Next::Delete(_) | Next::Other => {}
                Next::Resync => {
                    for d in s.deployments.state() {
                        s.queue.add(object_key(&d.metadata));
                    }
                }
                Next::Closed => break,
            }
        }
    });
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            let rs = match informers::next(&mut rs_events).await {
                Next::Apply(rs) | Next::Delete(rs) => rs,
                Next::Other => continue,
                Next::Resync => {
                    for d in s.deployments.state() {
                        s.queue.add(object_key(&d.metadata));
                    }
                    continue;
                }
                Next::Closed => break,
            };
            if let Ok(value) = serde_json::to_value(rs.as_ref()) {
                for owner in s.owners_of(&value) {
                    s.queue.add(owner);
                }
            }
        }
    });
    deployments.synced().await;
    replicasets.synced().await;
    for d in shared.deployments.state() {
        shared.queue.add(object_key(&d.metadata));
    }
    spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "deployment",
        |s, key| async move { sync_deployment(&s, &key).await },
    );
}

/// One `syncDeployment`.
async fn sync_deployment(s: &DeploymentShared, key: &str) -> Result<(), kube::Error> {
    use crate::deployment::{self, Action};
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let Some(d) = s.deployments.get(&ObjectRef::new(name).within(ns)) else {
        return Ok(());
    };
    let d_uid = d.metadata.uid.clone().unwrap_or_default();
    let Ok(d) = serde_json::to_value(d.as_ref()) else {
        return Ok(());
    };
    // Only this Deployment's ReplicaSets and the orphans it might adopt are claimed, so only
    // they are converted (a ReplicaSet of another controller is left alone by the claim).
    let rss: Vec<Value> = s
        .replicasets
        .state()
        .iter()
        .filter(|r| r.metadata.namespace.as_deref() == Some(ns))
        .filter(|r| crate::pods::controller_ref(&r.metadata).is_none_or(|o| o.uid == d_uid))
        .filter_map(|r| serde_json::to_value(r.as_ref()).ok())
        .collect();
    let claim = replicaset::claim(&d, &rss);
    let d_ref = reference(&d, "Deployment", "apps/v1");
    let rs_api: Api<ReplicaSet> = Api::namespaced(s.writer.clone(), ns);
    adopt_and_release(&rs_api, &d, "Deployment", &claim).await;
    for action in deployment::plan(&d, &claim.owned) {
        match action {
            Action::Create(rs) => {
                let Ok(rs) = serde_json::from_value::<ReplicaSet>(rs) else {
                    continue;
                };
                match rs_api.create(&PostParams::default(), &rs).await {
                    Ok(created) => {
                        let replicas = created.spec.as_ref().and_then(|s| s.replicas).unwrap_or(0);
                        if replicas > 0 {
                            s.events.event(
                                &d_ref,
                                EventType::Normal,
                                "ScalingReplicaSet",
                                &format!(
                                    "Scaled up replica set {} from 0 to {replicas}",
                                    created.metadata.name.as_deref().unwrap_or_default()
                                ),
                            );
                        }
                    }
                    // Already there (the cache lags): the next event brings it.
                    Err(kube::Error::Api(e)) if e.code == 409 => {}
                    Err(e) => return Err(e),
                }
            }
            Action::Scale(rs, replicas) => {
                let from = claim
                    .owned
                    .iter()
                    .find(|r| r["metadata"]["name"] == rs.as_str())
                    .and_then(|r| r["spec"]["replicas"].as_i64())
                    .unwrap_or(0);
                // The size and the Deployment size it was scaled for
                // (`scaleReplicaSet`), read back by proportional scaling.
                let (desired, max) = deployment::replicas_annotations(&d);
                let patch = json!({
                    "metadata": {"annotations": {
                        "deployment.kubernetes.io/desired-replicas": desired.to_string(),
                        "deployment.kubernetes.io/max-replicas": max.to_string()}},
                    "spec": {"replicas": replicas}});
                rs_api
                    .patch(&rs, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
                if replicas == from {
                    continue;
                }
                let direction = if replicas > from { "up" } else { "down" };
                s.events.event(
                    &d_ref,
                    EventType::Normal,
                    "ScalingReplicaSet",
                    &format!("Scaled {direction} replica set {rs} from {from} to {replicas}"),
                );
            }
            Action::SetRevision(rs, revision) => {
                let patch = json!({"metadata": {"annotations": {
                    "deployment.kubernetes.io/revision": revision.to_string()}}});
                rs_api
                    .patch(&rs, &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            Action::Delete(rs) => match rs_api.delete(&rs, &DeleteParams::default()).await {
                Ok(_) => {}
                Err(kube::Error::Api(e)) if e.code == 404 => {}
                Err(e) => return Err(e),
            },
        }
    }
    let now = jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string();
    let status = deployment::status(&d, &claim.owned, &now);
    // A rollout that stops moving is looked at again when its deadline passes.
    if let Some(secs) = deployment::recheck_after(&d, &status) {
        s.queue
            .add_after(key.to_string(), Duration::from_secs(secs));
    }
    // The Deployment carries its new ReplicaSet's revision, written with the status as
    // upstream does (the status strategy keeps annotations, so the generation stays).
    let revision = deployment::current_revision(&d, &claim.owned).map(|r| r.to_string());
    let revision_changed = revision.as_deref().is_some_and(|r| {
        d["metadata"]["annotations"]["deployment.kubernetes.io/revision"].as_str() != Some(r)
    });
    if status != d["status"] || revision_changed {
        let mut body = d.clone();
        body["status"] = status;
        if let Some(r) = revision {
            body["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = json!(r);
        }
        let Ok(body) = serde_json::from_value::<Deployment>(body) else {
            return Ok(());
        };
        let api: Api<Deployment> = Api::namespaced(s.writer.clone(), ns);
        match api
            .replace_status(name, &PostParams::default(), &body)
            .await
        {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 409 || e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}
