//! The resource quota controller (upstream's `pkg/controller/resourcequota`): every
//! quota's `status.hard` mirrors `spec.hard` and `status.used` is recounted from the
//! objects of its namespace that the quota's scopes track (the evaluation is
//! [`api::quota`], shared with the `ResourceQuota` admission plugin).
//!
//! When a quota is counted, as upstream:
//! - at once when it is new, when its hard limits change, or when it has a hard
//!   resource without usage;
//! - at once ("replenishment") for every quota of a namespace counting a kind when an
//!   object of that kind is deleted, a pod stops being charged (terminal), or a
//!   service changes type — never on adds, which admission has already charged;
//! - every `--resource-quota-sync-period` (5 min) for all quotas.
//!
//! Beyond upstream, a quota whose usage admission changed is recounted once it has been
//! quiet for [`SETTLE`] (and a full resync waits for the same quiet), so usage charged
//! for a create the store then refused comes back within seconds rather than at the next
//! resync, while charges still in flight are not undone by a count that misses them.
//!
//! [`desired_status`] is the pure recount; [`run_resource_quotas`] is the loop, writing
//! `resourcequotas/status` as the `resourcequota-controller` service account. Kinds
//! without an informer here (`count/<resource>.<group>` of other kinds) are listed
//! through the API server when counted.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::core::v1::{
    ConfigMap, PersistentVolumeClaim, ResourceQuota, Secret, Service,
};
use kube::Client;
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::workqueue::WorkQueue;
use serde_json::Value;

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next};
use crate::util::lock;

/// How long a quota's usage must stay unchanged before a count that may lower it.
pub const SETTLE: Duration = Duration::from_secs(20);

/// Upstream's `--resource-quota-sync-period` default.
pub const DEFAULT_SYNC_PERIOD: Duration = Duration::from_secs(300);

/// Upstream's `QuotaV1Pod`: whether a pod is still charged at `now_ms` — not terminal,
/// and not stuck terminating past its deletion grace period.
pub fn quota_v1_pod(pod: &Value, now_ms: i64) -> bool {
    if matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) {
        return false;
    }
    let deleted = crate::pods::time_ms(&pod["metadata"]["deletionTimestamp"]);
    let grace = pod["metadata"]["deletionGracePeriodSeconds"].as_i64();
    if let (Some(at), Some(grace)) = (deleted, grace)
        && now_ms > at.saturating_add(grace.saturating_mul(1000))
    {
        return false;
    }
    true
}

/// [`quota_v1_pod`] on a typed pod (the informer's, without serializing it).
fn pod_charged(pod: &CachedPod, now_ms: i64) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    match (
        &pod.metadata.deletion_timestamp,
        pod.metadata.deletion_grace_period_seconds,
    ) {
        (Some(at), Some(grace)) => {
            now_ms
                <= at
                    .0
                    .as_millisecond()
                    .saturating_add(grace.saturating_mul(1000))
        }
        _ => true,
    }
}

/// The quota with its recounted status, or `None` when the status already is right
/// (upstream's `syncResourceQuota`). `objects` holds, per (group, plural) the quota
/// counts, that kind's objects in the quota's namespace.
pub fn desired_status(
    quota: &Value,
    objects: &BTreeMap<(String, String), Vec<Value>>,
    now_ms: i64,
) -> Option<Value> {
    let status = api::quota::recount(quota, objects, &|o| quota_v1_pod(o, now_ms));
    if api::quota::status_is(quota, &status) {
        return None;
    }
    let mut updated = quota.clone();
    updated["status"] = status;
    Some(updated)
}

/// Whether a quota needs counting at once: new hard limits (`spec.hard` differs from
/// `status.hard`) or a hard resource without usage (upstream's `addQuota` priority).
pub fn needs_prompt_count(quota: &Value) -> bool {
    if !api::quota::same_resources(&quota["spec"]["hard"], &quota["status"]["hard"]) {
        return true;
    }
    let used = &quota["status"]["used"];
    quota["spec"]["hard"]
        .as_object()
        .into_iter()
        .flatten()
        .any(|(k, _)| used.get(k).is_none())
}

/// The informers the controller counts from.
pub struct Caches {
    pub quotas: Arc<Informer<ResourceQuota>>,
    pub pods: Arc<Informer<CachedPod>>,
    pub services: Arc<Informer<Service>>,
    pub config_maps: Arc<Informer<ConfigMap>>,
    pub secrets: Arc<Informer<Secret>>,
    pub claims: Arc<Informer<PersistentVolumeClaim>>,
    pub deployments: Arc<Informer<Deployment>>,
    pub replicasets: Arc<Informer<ReplicaSet>>,
}

/// What the loop remembers of a quota between events.
struct Seen {
    hard: Value,
    resource_version: String,
    since: Instant,
}

struct Shared {
    quotas: Store<ResourceQuota>,
    pods: Store<CachedPod>,
    services: Store<Service>,
    config_maps: Store<ConfigMap>,
    secrets: Store<Secret>,
    claims: Store<PersistentVolumeClaim>,
    deployments: Store<Deployment>,
    replicasets: Store<ReplicaSet>,
    queue: WorkQueue<String>,
    writer: Client,
    seen: Mutex<HashMap<String, Seen>>,
    /// Keys to count without waiting for quiet.
    prompt: Mutex<HashSet<String>>,
    /// Kinds resolved through discovery for live lists (`None`: not served).
    resolved: tokio::sync::Mutex<HashMap<(String, String), Option<ApiResource>>>,
}

fn in_namespace<K>(store: &Store<K>, ns: &str) -> Vec<Value>
where
    K: kube::Resource + Clone + serde::Serialize + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    store
        .state()
        .iter()
        .filter(|o| o.meta().namespace.as_deref() == Some(ns))
        .filter_map(|o| serde_json::to_value(o.as_ref()).ok())
        .collect()
}

impl Shared {
    /// The objects of `(group, plural)` in `ns`: from a cache, else listed live.
    async fn objects(
        &self,
        group: &str,
        plural: &str,
        ns: &str,
    ) -> Result<Vec<Value>, kube::Error> {
        match (group, plural) {
            ("", "pods") => return Ok(in_namespace(&self.pods, ns)),
            ("", "services") => return Ok(in_namespace(&self.services, ns)),
            ("", "configmaps") => return Ok(in_namespace(&self.config_maps, ns)),
            ("", "secrets") => return Ok(in_namespace(&self.secrets, ns)),
            ("", "persistentvolumeclaims") => return Ok(in_namespace(&self.claims, ns)),
            ("", "resourcequotas") => return Ok(in_namespace(&self.quotas, ns)),
            ("apps", "deployments") => return Ok(in_namespace(&self.deployments, ns)),
            ("apps", "replicasets") => return Ok(in_namespace(&self.replicasets, ns)),
            _ => {}
        }
        let Some(ar) = self.resolve(group, plural).await? else {
            return Ok(Vec::new());
        };
        let api: Api<DynamicObject> = Api::namespaced_with(self.writer.clone(), ns, &ar);
        let list = api.list(&ListParams::default()).await?;
        Ok(list
            .items
            .iter()
            .filter_map(|o| serde_json::to_value(o).ok())
            .collect())
    }

    /// The served resource `(group, plural)`, through discovery (remembered once found).
    async fn resolve(&self, group: &str, plural: &str) -> Result<Option<ApiResource>, kube::Error> {
        let key = (group.to_string(), plural.to_string());
        let mut resolved = self.resolved.lock().await;
        if let Some(Some(ar)) = resolved.get(&key) {
            return Ok(Some(ar.clone()));
        }
        let discovery = kube::Discovery::new(self.writer.clone())
            .filter(&[group])
            .run()
            .await?;
        let found = discovery
            .groups()
            .filter(|g| g.name() == group)
            .flat_map(|g| g.recommended_resources())
            .find(|(ar, caps)| {
                ar.plural == plural && caps.scope == kube::discovery::Scope::Namespaced
            })
            .map(|(ar, _)| ar);
        resolved.insert(key, found.clone());
        Ok(found)
    }

    /// Queues every quota of `ns` that counts `(group, plural)` for a prompt count
    /// (upstream's `replenishQuota`).
    fn replenish(&self, ns: &str, group: &str, plural: &str) {
        for q in self.quotas.state() {
            if q.metadata.namespace.as_deref() != Some(ns) {
                continue;
            }
            let Ok(v) = serde_json::to_value(q.as_ref()) else {
                continue;
            };
            if api::quota::quota_counts(&v, group, plural) {
                let key = crate::run::object_key(&q.metadata);
                lock(&self.prompt).insert(key.clone());
                self.queue.add(key);
            }
        }
    }

    /// A quota added or changed: counted at once if new or its limits changed, else (its
    /// usage changed) once quiet.
    fn quota_changed(&self, q: &ResourceQuota) {
        let key = crate::run::object_key(&q.metadata);
        let Ok(v) = serde_json::to_value(q) else {
            return;
        };
        let rv = q.metadata.resource_version.clone().unwrap_or_default();
        let hard = v["spec"]["hard"].clone();
        let mut seen = lock(&self.seen);
        let prompt = match seen.get(&key) {
            None => true,
            Some(s) => !api::quota::same_resources(&s.hard, &hard),
        } || needs_prompt_count(&v);
        let since = match seen.get(&key) {
            Some(s) if s.resource_version == rv => s.since,
            _ => Instant::now(),
        };
        seen.insert(
            key.clone(),
            Seen {
                hard,
                resource_version: rv,
                since,
            },
        );
        drop(seen);
        if prompt {
            lock(&self.prompt).insert(key.clone());
            self.queue.add(key);
        } else {
            self.queue.add_after(key, SETTLE);
        }
    }

    fn enqueue_all(&self) {
        for q in self.quotas.state() {
            self.queue.add(crate::run::object_key(&q.metadata));
        }
    }
}

async fn sync(s: Arc<Shared>, key: String) -> Result<(), kube::Error> {
    let (ns, name) = key.split_once('/').unwrap_or(("", &key));
    let Some(quota) = s.quotas.get(&ObjectRef::new(name).within(ns)) else {
        lock(&s.seen).remove(&key);
        lock(&s.prompt).remove(&key);
        return Ok(());
    };
    let prompt = lock(&s.prompt).remove(&key);
    if !prompt {
        let quiet_for = lock(&s.seen).get(&key).map(|q| q.since.elapsed());
        if let Some(quiet) = quiet_for
            && quiet < SETTLE
        {
            s.queue.add_after(key.clone(), SETTLE.saturating_sub(quiet));
            return Ok(());
        }
    }
    let v = serde_json::to_value(quota.as_ref()).map_err(kube::Error::SerdeError)?;
    let mut objects = BTreeMap::new();
    for (group, plural) in api::quota::counted_kinds(&v) {
        let items = s.objects(&group, &plural, ns).await?;
        objects.insert((group, plural), items);
    }
    let Some(updated) = desired_status(&v, &objects, crate::run::now_ms()) else {
        return Ok(());
    };
    tracing::debug!(quota = %key, used = %updated["status"]["used"], "recounted quota");
    let api: Api<ResourceQuota> = Api::namespaced(s.writer.clone(), ns);
    let body: ResourceQuota = serde_json::from_value(updated).map_err(kube::Error::SerdeError)?;
    api.replace_status(name, &PostParams::default(), &body)
        .await
        .map(drop)
}

/// Runs the controller until the informers stop: `workers` workers, a full recount
/// every `sync_period`.
pub async fn run_resource_quotas(
    caches: Caches,
    writer: Client,
    workers: usize,
    sync_period: Duration,
) {
    let shared = Arc::new(Shared {
        quotas: caches.quotas.store.clone(),
        pods: caches.pods.store.clone(),
        services: caches.services.store.clone(),
        config_maps: caches.config_maps.store.clone(),
        secrets: caches.secrets.store.clone(),
        claims: caches.claims.store.clone(),
        deployments: caches.deployments.store.clone(),
        replicasets: caches.replicasets.store.clone(),
        queue: WorkQueue::named("resource_quota_primary"),
        writer,
        seen: Mutex::new(HashMap::new()),
        prompt: Mutex::new(HashSet::new()),
        resolved: tokio::sync::Mutex::new(HashMap::new()),
    });
    let mut quota_events = caches.quotas.subscribe();
    let mut pod_events = caches.pods.subscribe();
    let mut svc_events = caches.services.subscribe();
    let mut cm_events = caches.config_maps.subscribe();
    let mut secret_events = caches.secrets.subscribe();
    let mut claim_events = caches.claims.subscribe();
    let mut deploy_events = caches.deployments.subscribe();
    let mut rs_events = caches.replicasets.subscribe();
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        // What replenishment compares an update with: whether each pod is charged, each
        // service's type.
        let mut charged: HashMap<String, bool> = HashMap::new();
        let mut service_types: HashMap<String, String> = HashMap::new();
        let deleted = |s: &Shared, meta: &kube::core::ObjectMeta, group: &str, plural: &str| {
            s.replenish(meta.namespace.as_deref().unwrap_or_default(), group, plural);
        };
        loop {
            tokio::select! {
                e = informers::next(&mut quota_events) => match e {
                    Next::Apply(q) => s.quota_changed(&q),
                    Next::Delete(q) => {
                        let key = crate::run::object_key(&q.metadata);
                        lock(&s.seen).remove(&key);
                    }
                    Next::Resync => {
                        for q in s.quotas.state() {
                            s.quota_changed(&q);
                        }
                    }
                    Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut pod_events) => match e {
                    Next::Apply(p) => {
                        let key = crate::run::object_key(&p.metadata);
                        let now = pod_charged(&p, crate::run::now_ms());
                        if charged.insert(key, now) == Some(true) && !now {
                            deleted(&s, &p.metadata, "", "pods");
                        }
                    }
                    Next::Delete(p) => {
                        charged.remove(&crate::run::object_key(&p.metadata));
                        deleted(&s, &p.metadata, "", "pods");
                    }
                    Next::Resync => s.enqueue_all(),
                    Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut svc_events) => match e {
                    Next::Apply(svc) => {
                        let key = crate::run::object_key(&svc.metadata);
                        let ty = svc.spec.as_ref().and_then(|s| s.type_.clone()).unwrap_or_else(|| "ClusterIP".into());
                        if service_types.insert(key, ty.clone()).is_some_and(|old| old != ty) {
                            deleted(&s, &svc.metadata, "", "services");
                        }
                    }
                    Next::Delete(svc) => {
                        service_types.remove(&crate::run::object_key(&svc.metadata));
                        deleted(&s, &svc.metadata, "", "services");
                    }
                    Next::Resync => s.enqueue_all(),
                    Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut cm_events) => match e {
                    Next::Delete(o) => deleted(&s, &o.metadata, "", "configmaps"),
                    Next::Resync => s.enqueue_all(),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut secret_events) => match e {
                    Next::Delete(o) => deleted(&s, &o.metadata, "", "secrets"),
                    Next::Resync => s.enqueue_all(),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut claim_events) => match e {
                    Next::Delete(o) => deleted(&s, &o.metadata, "", "persistentvolumeclaims"),
                    Next::Resync => s.enqueue_all(),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut deploy_events) => match e {
                    Next::Delete(o) => deleted(&s, &o.metadata, "apps", "deployments"),
                    Next::Resync => s.enqueue_all(),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut rs_events) => match e {
                    Next::Delete(o) => deleted(&s, &o.metadata, "apps", "replicasets"),
                    Next::Resync => s.enqueue_all(),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
            }
        }
    });
    caches.quotas.synced().await;
    caches.pods.synced().await;
    caches.services.synced().await;
    caches.config_maps.synced().await;
    caches.secrets.synced().await;
    caches.claims.synced().await;
    caches.deployments.synced().await;
    caches.replicasets.synced().await;
    crate::run::spawn_workers(&shared, &shared.queue, workers, "resourcequota", sync);
    let mut resync = tokio::time::interval(sync_period.max(Duration::from_secs(1)));
    resync.tick().await;
    loop {
        resync.tick().await;
        shared.enqueue_all();
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn objects(items: &[(&str, &str, Value)]) -> BTreeMap<(String, String), Vec<Value>> {
        let mut out: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
        for (g, p, o) in items {
            out.entry((g.to_string(), p.to_string()))
                .or_default()
                .push(o.clone());
        }
        out
    }

    fn pod(name: &str, cpu: &str) -> Value {
        json!({"metadata": {"name": name, "namespace": "dev"},
               "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
    }

    #[test]
    fn status_mirrors_hard_and_counts_used() {
        let quota = json!({"metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"pods": "10", "requests.cpu": "4", "limits.cpu": "8", "configmaps": "5",
                               "count/deployments.apps": "2", "services.nodeports": "3", "requests.storage": "1Gi"}}});
        let objs = objects(&[
            ("", "pods", pod("a", "500m")),
            ("", "pods", pod("b", "1")),
            (
                "",
                "configmaps",
                json!({"metadata": {"name": "kube-root-ca.crt"}}),
            ),
            ("apps", "deployments", json!({"metadata": {"name": "web"}})),
            (
                "",
                "services",
                json!({"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}, {"port": 81}]}}),
            ),
            (
                "",
                "persistentvolumeclaims",
                json!({"metadata": {"name": "c"}, "spec": {"resources": {"requests": {"storage": "512Mi"}}}}),
            ),
        ]);
        let updated = desired_status(&quota, &objs, 0).unwrap();
        assert_eq!(updated["status"]["hard"], quota["spec"]["hard"]);
        assert_eq!(
            updated["status"]["used"],
            json!({"pods": "2", "requests.cpu": "1500m", "limits.cpu": "1500m", "configmaps": "1",
                   "count/deployments.apps": "1", "services.nodeports": "2", "requests.storage": "512Mi"})
        );
        // Written once: the same status again is nothing to do.
        assert!(desired_status(&updated, &objs, 0).is_none());
        // A deleted pod is given back.
        let fewer = objects(&[("", "pods", pod("a", "500m"))]);
        let again = desired_status(&updated, &fewer, 0).unwrap();
        assert_eq!(again["status"]["used"]["pods"], "1");
        assert_eq!(again["status"]["used"]["requests.cpu"], "500m");
        assert_eq!(again["status"]["used"]["configmaps"], "0");
    }

    #[test]
    fn scopes_select_pods() {
        let quota = json!({"metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"pods": "10"}, "scopes": ["NotBestEffort"]}});
        let best_effort =
            json!({"metadata": {"name": "be"}, "spec": {"containers": [{"name": "c"}]}});
        let objs = objects(&[("", "pods", pod("a", "1")), ("", "pods", best_effort)]);
        let updated = desired_status(&quota, &objs, 0).unwrap();
        assert_eq!(updated["status"]["used"], json!({"pods": "1"}));
        let gold = json!({"metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"pods": "10"}, "scopeSelector": {"matchExpressions": [
                {"scopeName": "PriorityClass", "operator": "In", "values": ["gold"]}]}}});
        let mut gold_pod = pod("g", "1");
        gold_pod["spec"]["priorityClassName"] = json!("gold");
        let objs = objects(&[("", "pods", pod("a", "1")), ("", "pods", gold_pod)]);
        assert_eq!(
            desired_status(&gold, &objs, 0).unwrap()["status"]["used"],
            json!({"pods": "1"})
        );
        let terminating = json!({"metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"pods": "10"}, "scopes": ["Terminating"]}});
        let mut job_pod = pod("j", "1");
        job_pod["spec"]["activeDeadlineSeconds"] = json!(30);
        let objs = objects(&[("", "pods", pod("a", "1")), ("", "pods", job_pod)]);
        assert_eq!(
            desired_status(&terminating, &objs, 0).unwrap()["status"]["used"],
            json!({"pods": "1"})
        );
    }

    #[test]
    fn terminal_and_stuck_terminating_pods_are_not_charged() {
        let mut done = pod("done", "1");
        done["status"] = json!({"phase": "Failed"});
        assert!(!quota_v1_pod(&done, 0));
        let mut deleting = pod("d", "1");
        deleting["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        deleting["metadata"]["deletionGracePeriodSeconds"] = json!(30);
        let at = crate::pods::time_ms(&json!("2024-01-01T00:00:00Z")).unwrap();
        assert!(quota_v1_pod(&deleting, at + 29_000));
        assert!(!quota_v1_pod(&deleting, at + 31_000));
        let typed: CachedPod = serde_json::from_value(deleting.clone()).unwrap();
        assert!(pod_charged(&typed, at + 29_000));
        assert!(!pod_charged(&typed, at + 31_000));
        assert!(!pod_charged(
            &serde_json::from_value(done.clone()).unwrap(),
            0
        ));
        let quota = json!({"metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"pods": "10", "requests.cpu": "10", "count/pods": "10"}}});
        let objs = objects(&[
            ("", "pods", pod("a", "1")),
            ("", "pods", done),
            ("", "pods", deleting),
        ]);
        let used = &desired_status(&quota, &objs, at + 31_000).unwrap()["status"]["used"];
        assert_eq!(used["pods"], "1");
        assert_eq!(used["requests.cpu"], "1");
        assert_eq!(used["count/pods"], "3", "object counts include every pod");
    }

    #[test]
    fn new_limits_or_missing_usage_are_counted_promptly() {
        let q = json!({"spec": {"hard": {"pods": "1"}}});
        assert!(needs_prompt_count(&q));
        let counted = json!({"spec": {"hard": {"pods": "1"}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "0"}}});
        assert!(!needs_prompt_count(&counted));
        let raised = json!({"spec": {"hard": {"pods": "2"}}, "status": {"hard": {"pods": "1"}, "used": {"pods": "0"}}});
        assert!(needs_prompt_count(&raised));
        let added = json!({"spec": {"hard": {"pods": "1", "secrets": "1"}}, "status": {"hard": {"pods": "1", "secrets": "1"}, "used": {"pods": "0"}}});
        assert!(needs_prompt_count(&added));
    }
}
