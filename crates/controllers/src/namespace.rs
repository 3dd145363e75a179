//! The namespace controller (upstream's `pkg/controller/namespace` and its
//! `deletion/namespaced_resources_deleter.go`): a namespace being deleted has all its
//! content deleted — every namespaced resource the API server serves, pods first (the
//! `OrderedNamespaceDeletion` behaviour of 1.33) — then loses the `kubernetes` token of
//! `spec.finalizers` through `PUT /api/v1/namespaces/{name}/finalize`, after which the API
//! server removes it. While content remains the namespace carries upstream's conditions
//! (`NamespaceDeletionDiscoveryFailure`, `NamespaceDeletionContentFailure`,
//! `NamespaceContentRemaining`, `NamespaceFinalizersRemaining`).
//!
//! The decisions (which resources, what remains, the conditions, the finalize body) are
//! pure functions; [`run_namespaces`] carries them out as the
//! `kube-system/namespace-controller` service account.

use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::Namespace;
use kube::Client;
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::informers::{self, Informer, Next};
use crate::util::api_message;

/// The finalizer token this controller owns (`v1.FinalizerKubernetes`).
pub const FINALIZER: &str = "kubernetes";

/// How long a namespace event waits before it is processed (upstream's
/// `namespaceDeletionGracePeriod`: lets every API server see the deletion and late
/// creations land before the content is listed).
pub const DELETION_GRACE: Duration = Duration::from_secs(5);

/// The estimate used for content that waits for its finalizers
/// (`finalizerEstimateSeconds`).
pub const FINALIZER_ESTIMATE_SECONDS: i64 = 15;

/// A resource type in one group version.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvr {
    pub group: String,
    pub version: String,
    pub resource: String,
}

impl Gvr {
    pub fn new(group: &str, version: &str, resource: &str) -> Gvr {
        Gvr {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The collection's path in `namespace`.
    pub fn path(&self, namespace: &str) -> String {
        if self.group.is_empty() {
            format!(
                "/api/{}/namespaces/{namespace}/{}",
                self.version, self.resource
            )
        } else {
            format!(
                "/apis/{}/{}/namespaces/{namespace}/{}",
                self.group, self.version, self.resource
            )
        }
    }

    fn is_pods(&self) -> bool {
        self.group.is_empty() && self.resource == "pods"
    }
}

/// `schema.GroupVersionResource.String()`, as upstream's error messages print it.
impl std::fmt::Display for Gvr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}/{}, Resource={}",
            self.group, self.version, self.resource
        )
    }
}

/// What discovery says of one API group: its preferred version and the resource lists
/// (`APIResourceList` JSON) of the versions that answered.
#[derive(Clone, Debug, Default)]
pub struct DiscoveredGroup {
    pub name: String,
    pub preferred: String,
    pub versions: Vec<(String, Value)>,
}

/// A resource to delete with the verbs it supports.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Deletable {
    pub gvr: Gvr,
    pub list: bool,
    pub delete_collection: bool,
}

/// client-go's `ServerPreferredNamespacedResources` filtered by `SupportsAllVerbs{delete}`:
/// per group and resource the preferred version's entry (another version's when only it
/// serves the resource), namespaced, no subresources, deletable. Pods come first (they
/// are deleted before anything else), events last, the rest in a stable order.
pub fn deletable_resources(groups: &[DiscoveredGroup]) -> Vec<Deletable> {
    let mut chosen: BTreeMap<(String, String), (String, Value)> = BTreeMap::new();
    for g in groups {
        for (version, list) in &g.versions {
            for r in list["resources"].as_array().into_iter().flatten() {
                let Some(name) = r["name"].as_str() else {
                    continue;
                };
                if name.contains('/') {
                    continue;
                }
                let key = (g.name.clone(), name.to_string());
                if chosen.contains_key(&key) && *version != g.preferred {
                    continue;
                }
                chosen.insert(key, (version.clone(), r.clone()));
            }
        }
    }
    let mut out: Vec<Deletable> = chosen
        .into_iter()
        .filter(|(_, (_, r))| r["namespaced"].as_bool() == Some(true))
        .filter_map(|((group, resource), (version, r))| {
            let verbs: Vec<&str> = r["verbs"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            verbs.contains(&"delete").then(|| Deletable {
                gvr: Gvr::new(&group, &version, &resource),
                list: verbs.contains(&"list"),
                delete_collection: verbs.contains(&"deletecollection"),
            })
        })
        .collect();
    let rank = |g: &Gvr| {
        if g.is_pods() {
            0
        } else if g.resource == "events" {
            2
        } else {
            1
        }
    };
    out.sort_by(|a, b| (rank(&a.gvr), &a.gvr).cmp(&(rank(&b.gvr), &b.gvr)));
    out
}

/// `ErrGroupDiscoveryFailed`'s message for the group versions that failed.
pub fn discovery_error(failed: &[(String, String)]) -> Option<String> {
    if failed.is_empty() {
        return None;
    }
    let mut parts: Vec<String> = failed.iter().map(|(gv, e)| format!("{gv}: {e}")).collect();
    parts.sort();
    Some(format!(
        "unable to retrieve the complete list of server APIs: {}",
        parts.join(", ")
    ))
}

/// What is left of one resource type after a deletion pass.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GvrDeletion {
    /// Seconds to wait for the rest to go (0: no estimate, not "all gone").
    pub estimate: i64,
    pub remaining: usize,
    pub finalizers: BTreeMap<String, usize>,
    /// Items remain for no known reason (`unexpected items still remain ...`).
    pub error: Option<String>,
}

/// The end of `deleteAllContentForGroupVersionResource`: from the items still listed
/// and the graceful-termination estimate, how long to wait or whether this is an error.
pub fn remaining_after_delete(
    gvr: &Gvr,
    namespace: &str,
    items: &[Value],
    estimate: i64,
) -> GvrDeletion {
    if items.is_empty() {
        return GvrDeletion::default();
    }
    let mut finalizers: BTreeMap<String, usize> = BTreeMap::new();
    for item in items {
        for f in item["metadata"]["finalizers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
        {
            *finalizers.entry(f.to_string()).or_default() += 1;
        }
    }
    let remaining = items.len();
    if estimate != 0 {
        return GvrDeletion {
            estimate,
            remaining,
            finalizers,
            error: None,
        };
    }
    if !finalizers.is_empty() {
        return GvrDeletion {
            estimate: FINALIZER_ESTIMATE_SECONDS,
            remaining,
            finalizers,
            error: None,
        };
    }
    GvrDeletion {
        estimate,
        remaining,
        finalizers,
        error: Some(format!(
            "unexpected items still remain in namespace: {namespace} for gvr: {gvr}"
        )),
    }
}

/// `estimateGracefulTermination` for pods: the longest grace period of the non-terminal
/// pods, unless the namespace has been terminating longer than that already.
pub fn pod_estimate(pods: &[Value], deleted_at_ms: i64, now_ms: i64) -> i64 {
    let estimate = pods
        .iter()
        .filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .filter_map(|p| p["spec"]["terminationGracePeriodSeconds"].as_i64())
        .max()
        .unwrap_or(0)
        .max(0);
    if now_ms.saturating_sub(deleted_at_ms) >= estimate.saturating_mul(1000) {
        0
    } else {
        estimate
    }
}

/// What one pass over the namespace's content found.
#[derive(Clone, Debug, Default)]
pub struct ContentTotals {
    pub remaining: BTreeMap<Gvr, usize>,
    pub finalizers: BTreeMap<String, usize>,
}

impl ContentTotals {
    pub fn add(&mut self, gvr: &Gvr, d: &GvrDeletion) {
        if d.remaining == 0 {
            return;
        }
        self.remaining.insert(gvr.clone(), d.remaining);
        for (f, n) in &d.finalizers {
            if *n > 0 {
                *self.finalizers.entry(f.clone()).or_default() += n;
            }
        }
    }
}

/// The condition types this controller maintains, in upstream's order.
pub const CONDITION_TYPES: [&str; 5] = [
    "NamespaceDeletionDiscoveryFailure",
    "NamespaceDeletionGroupVersionParsingFailure",
    "NamespaceDeletionContentFailure",
    "NamespaceContentRemaining",
    "NamespaceFinalizersRemaining",
];

fn ok_condition(kind: &str, now: &str) -> Value {
    let (reason, message) = match kind {
        "NamespaceDeletionDiscoveryFailure" => (
            "ResourcesDiscovered",
            "All resources successfully discovered",
        ),
        "NamespaceDeletionGroupVersionParsingFailure" => (
            "ParsedGroupVersions",
            "All legacy kube types successfully parsed",
        ),
        "NamespaceDeletionContentFailure" => (
            "ContentDeleted",
            "All content successfully deleted, may be waiting on finalization",
        ),
        "NamespaceContentRemaining" => ("ContentRemoved", "All content successfully removed"),
        _ => (
            "ContentHasNoFinalizers",
            "All content-preserving finalizers finished",
        ),
    };
    condition(kind, "False", reason, message, now)
}

fn condition(kind: &str, status: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({"type": kind, "status": status, "lastTransitionTime": now,
        "reason": reason, "message": message})
}

/// The failing conditions of one pass (the namespace condition updater's
/// `ProcessDiscoverResourcesErr`, `ProcessContentTotals` and `ProcessDeleteContentErr`).
pub fn failing_conditions(
    discovery: Option<&str>,
    failed_groups: usize,
    totals: &ContentTotals,
    delete_errors: &[String],
    now: &str,
) -> Vec<Value> {
    let mut out = Vec::new();
    if let Some(e) = discovery {
        let message = if failed_groups > 0 {
            format!("Discovery failed for some groups, {failed_groups} failing: {e}")
        } else {
            e.to_string()
        };
        out.push(condition(
            "NamespaceDeletionDiscoveryFailure",
            "True",
            "DiscoveryFailed",
            &message,
            now,
        ));
    }
    if !delete_errors.is_empty() {
        let mut msgs = delete_errors.to_vec();
        msgs.sort();
        out.push(condition(
            "NamespaceDeletionContentFailure",
            "True",
            "ContentDeletionFailed",
            &format!(
                "Failed to delete all resource types, {} remaining: {}",
                msgs.len(),
                msgs.join(", ")
            ),
            now,
        ));
    }
    if !totals.remaining.is_empty() {
        let mut parts: Vec<String> = totals
            .remaining
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(g, n)| format!("{}.{} has {n} resource instances", g.resource, g.group))
            .collect();
        parts.sort();
        out.push(condition(
            "NamespaceContentRemaining",
            "True",
            "SomeResourcesRemain",
            &format!("Some resources are remaining: {}", parts.join(", ")),
            now,
        ));
    }
    if !totals.finalizers.is_empty() {
        let mut parts: Vec<String> = totals
            .finalizers
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(f, n)| format!("{f} in {n} resource instances"))
            .collect();
        parts.sort();
        out.push(condition(
            "NamespaceFinalizersRemaining",
            "True",
            "SomeFinalizersRemain",
            &format!(
                "Some content in the namespace has finalizers remaining: {}",
                parts.join(", ")
            ),
            now,
        ));
    }
    out
}

/// `updateConditions`: every maintained type gets its failing condition or its "ok"
/// variant; an existing condition keeps its transition time unless its status flips.
/// Returns the new list when anything changed.
pub fn update_conditions(current: &[Value], failing: &[Value], now: &str) -> Option<Vec<Value>> {
    let mut out = current.to_vec();
    let mut changed = false;
    for kind in CONDITION_TYPES {
        let new = failing
            .iter()
            .find(|c| c["type"] == kind)
            .cloned()
            .unwrap_or_else(|| ok_condition(kind, now));
        match out.iter_mut().find(|c| c["type"] == kind) {
            None => {
                out.push(new);
                changed = true;
            }
            Some(old) => {
                let differs = |f: &str| old[f] != new[f];
                if differs("status") || differs("message") || differs("reason") {
                    if differs("status") {
                        old["lastTransitionTime"] = json!(now);
                    }
                    old["status"] = new["status"].clone();
                    old["reason"] = new["reason"].clone();
                    old["message"] = new["message"].clone();
                    changed = true;
                }
            }
        }
    }
    changed.then_some(out)
}

/// The body of `PUT …/finalize` (`finalizeNamespace`): the namespace with its
/// `spec.finalizers` minus `token`, sorted and without duplicates.
pub fn finalize_body(namespace: &Value, token: &str) -> Value {
    let mut rest: Vec<String> = namespace["spec"]["finalizers"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .filter(|f| *f != token)
        .map(str::to_string)
        .collect();
    rest.sort();
    rest.dedup();
    let mut body = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": namespace["metadata"].clone(),
        "spec": namespace["spec"].clone()});
    if !body["spec"].is_object() {
        body["spec"] = json!({});
    }
    body["spec"]["finalizers"] = json!(rest);
    body
}

/// How long to wait before looking again at a namespace whose content is still going
/// (`estimate/2 + 1` seconds, as upstream's worker).
pub fn requeue_after(estimate: i64) -> Duration {
    Duration::from_secs(u64::try_from(estimate / 2 + 1).unwrap_or(1))
}

fn parse_time_ms(ts: &str) -> Option<i64> {
    ts.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

// ----- the loop -----

/// Why a sync failed.
#[derive(Debug)]
struct SyncError(String);

impl From<kube::Error> for SyncError {
    fn from(e: kube::Error) -> Self {
        SyncError(api_message(&e))
    }
}

fn code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// The loop's state: the writer, the queue, and what the server turned out not to
/// support (upstream's `operationNotSupportedCache`).
struct Shared {
    writer: Client,
    queue: WorkQueue<String>,
    unsupported: Mutex<HashSet<(&'static str, Gvr)>>,
}

impl Shared {
    fn supported(&self, op: &'static str, gvr: &Gvr) -> bool {
        match self.unsupported.lock() {
            Ok(s) => !s.contains(&(op, gvr.clone())),
            Err(p) => !p.into_inner().contains(&(op, gvr.clone())),
        }
    }

    fn set_unsupported(&self, op: &'static str, gvr: &Gvr) {
        match self.unsupported.lock() {
            Ok(mut s) => s.insert((op, gvr.clone())),
            Err(p) => p.into_inner().insert((op, gvr.clone())),
        };
    }

    async fn get_json(&self, path: &str) -> Result<Value, kube::Error> {
        let req = http::Request::get(path)
            .header("accept", "application/json")
            .body(Vec::new())
            .map_err(kube::Error::HttpError)?;
        self.writer.request::<Value>(req).await
    }

    async fn send_json(
        &self,
        method: http::Method,
        path: &str,
        body: &Value,
    ) -> Result<Value, kube::Error> {
        let bytes = serde_json::to_vec(body).map_err(kube::Error::SerdeError)?;
        let req = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", "application/json")
            .header("accept", "application/json")
            .body(bytes)
            .map_err(kube::Error::HttpError)?;
        self.writer.request::<Value>(req).await
    }
}

fn enqueue(queue: &WorkQueue<String>, ns: &Namespace) {
    if ns.metadata.deletion_timestamp.is_none() {
        return;
    }
    if let Some(name) = &ns.metadata.name {
        queue.add_after(name.clone(), DELETION_GRACE);
    }
}

/// Runs the namespace controller with `workers` workers until the process ends.
pub async fn run_namespaces(namespaces: Arc<Informer<Namespace>>, writer: Client, workers: usize) {
    let mut events = namespaces.subscribe();
    let shared = Arc::new(Shared {
        writer,
        queue: WorkQueue::named("namespace"),
        unsupported: Mutex::new(HashSet::new()),
    });
    let queue = shared.queue.clone();
    let store = namespaces.store.clone();
    tokio::spawn(async move {
        loop {
            match informers::next(&mut events).await {
                Next::Apply(ns) => enqueue(&queue, &ns),
                Next::Delete(_) | Next::Other => {}
                Next::Resync => {
                    for ns in store.state() {
                        enqueue(&queue, &ns);
                    }
                }
                Next::Closed => break,
            }
        }
    });
    namespaces.synced().await;
    for ns in namespaces.store.state() {
        enqueue(&shared.queue, &ns);
    }
    for _ in 0..workers.max(1) {
        let s = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Some(key) = s.queue.get().await {
                let span = tracing::debug_span!("reconcile", controller = "namespace", %key);
                let result = tracing::Instrument::instrument(sync(&s, &key), span).await;
                match result {
                    Ok(None) => s.queue.forget(&key),
                    Ok(Some(estimate)) => {
                        let wait = requeue_after(estimate);
                        tracing::debug!(namespace = %key, ?wait, "content remaining in the namespace");
                        s.queue.add_after(key.clone(), wait);
                    }
                    Err(SyncError(e)) => {
                        tracing::info!(namespace = %key, error = %e, "namespace deletion failed; retrying");
                        s.queue.add_rate_limited(key.clone());
                    }
                }
                s.queue.done(&key);
            }
        });
    }
}

/// `namespacedResourcesDeleter.Delete`: `Ok(Some(estimate))` while content remains.
async fn sync(s: &Shared, name: &str) -> Result<Option<i64>, SyncError> {
    let path = format!("/api/v1/namespaces/{name}");
    let ns = match s.get_json(&path).await {
        Ok(ns) => ns,
        Err(e) if code(&e) == Some(404) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if ns["metadata"]["deletionTimestamp"].is_null() {
        return Ok(None);
    }
    // The phase first (the API server sets it with the deletion timestamp already).
    let ns = if ns["status"]["phase"] != "Terminating" {
        let r = retry_on_conflict(s, ns, |mut ns| {
            ns["status"]["phase"] = json!("Terminating");
            (format!("{path}/status"), ns)
        })
        .await;
        match r {
            Ok(ns) => ns,
            Err(e) if code(&e) == Some(404) => return Ok(None),
            Err(e) => return Err(e.into()),
        }
    } else {
        ns
    };
    if ns["metadata"]["deletionTimestamp"].is_null() {
        return Ok(None);
    }
    let finalized = ns["spec"]["finalizers"]
        .as_array()
        .is_none_or(|a| a.is_empty());
    if finalized {
        return Ok(None);
    }
    let estimate = delete_all_content(s, &ns).await?;
    if estimate > 0 {
        return Ok(Some(estimate));
    }
    match retry_on_conflict(s, ns, |ns| {
        (format!("{path}/finalize"), finalize_body(&ns, FINALIZER))
    })
    .await
    {
        Ok(_) => {
            tracing::info!(namespace = name, "namespace content deleted; finalized");
            Ok(None)
        }
        Err(e) if code(&e) == Some(404) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// `retryOnConflictError`: PUTs `change(ns)` and, on a conflict, again with the current
/// namespace (as long as it is the same one).
async fn retry_on_conflict<F>(s: &Shared, ns: Value, change: F) -> Result<Value, kube::Error>
where
    F: Fn(Value) -> (String, Value),
{
    let name = ns["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let uid = ns["metadata"]["uid"].clone();
    let mut latest = ns;
    let mut attempts = 0;
    loop {
        let (path, body) = change(latest);
        match s.send_json(http::Method::PUT, &path, &body).await {
            Ok(v) => return Ok(v),
            Err(e) if code(&e) == Some(409) && attempts < 10 => {
                attempts += 1;
                latest = s.get_json(&format!("/api/v1/namespaces/{name}")).await?;
                if latest["metadata"]["uid"] != uid {
                    return Err(kube::Error::Api(
                        kube::core::Status::failure(
                            "namespace uid has changed across retries",
                            "Conflict",
                        )
                        .boxed(),
                    ));
                }
            }
            Err(e) => return Err(e),
        }
    }
}

/// Discovery as client-go's `ServerGroupsAndResources`: the core group and every group
/// version; the versions that fail are reported, the others used.
async fn discover(
    s: &Shared,
) -> Result<(Vec<DiscoveredGroup>, Vec<(String, String)>), kube::Error> {
    let mut groups = Vec::new();
    let mut failed = Vec::new();
    let core = s.get_json("/api").await?;
    let mut legacy = DiscoveredGroup {
        name: String::new(),
        ..Default::default()
    };
    for v in core["versions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        if legacy.preferred.is_empty() {
            legacy.preferred = v.to_string();
        }
        match s.get_json(&format!("/api/{v}")).await {
            Ok(list) => legacy.versions.push((v.to_string(), list)),
            Err(e) => failed.push((v.to_string(), api_message(&e))),
        }
    }
    groups.push(legacy);
    let list = s.get_json("/apis").await?;
    for g in list["groups"].as_array().into_iter().flatten() {
        let name = g["name"].as_str().unwrap_or_default().to_string();
        let mut group = DiscoveredGroup {
            preferred: g["preferredVersion"]["version"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            name,
            versions: Vec::new(),
        };
        for v in g["versions"].as_array().into_iter().flatten() {
            let Some(gv) = v["groupVersion"].as_str() else {
                continue;
            };
            let version = v["version"].as_str().unwrap_or_default().to_string();
            match s.get_json(&format!("/apis/{gv}")).await {
                Ok(list) => group.versions.push((version, list)),
                Err(e) => failed.push((gv.to_string(), api_message(&e))),
            }
        }
        groups.push(group);
    }
    Ok((groups, failed))
}

fn items(list: &Value) -> Vec<Value> {
    list["items"].as_array().cloned().unwrap_or_default()
}

/// `listCollection`: `Ok(None)` when the server does not list this resource.
async fn list_collection(
    s: &Shared,
    gvr: &Gvr,
    ns: &str,
) -> Result<Option<Vec<Value>>, kube::Error> {
    if !s.supported("list", gvr) {
        return Ok(None);
    }
    match s.get_json(&gvr.path(ns)).await {
        Ok(list) => Ok(Some(items(&list))),
        Err(e) if matches!(code(&e), Some(404 | 405)) => {
            s.set_unsupported("list", gvr);
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

fn background() -> Value {
    json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
}

/// `deleteAllContentForGroupVersionResource`.
async fn delete_gvr(s: &Shared, d: &Deletable, ns: &str, deleted_at_ms: i64) -> GvrDeletion {
    let gvr = &d.gvr;
    let fail = |estimate: i64, e: kube::Error| GvrDeletion {
        estimate,
        error: Some(api_message(&e)),
        ..Default::default()
    };
    let mut estimate = 0;
    if gvr.is_pods() {
        match s.get_json(&gvr.path(ns)).await {
            Ok(list) => {
                estimate = pod_estimate(
                    &items(&list),
                    deleted_at_ms,
                    jiff::Timestamp::now().as_millisecond(),
                )
            }
            Err(e) => return fail(0, e),
        }
    }
    // The whole collection at once, else one by one.
    let mut collection_done = false;
    if d.delete_collection && s.supported("deletecollection", gvr) {
        match s
            .send_json(http::Method::DELETE, &gvr.path(ns), &background())
            .await
        {
            Ok(_) => collection_done = true,
            Err(e) if matches!(code(&e), Some(404 | 405)) => {
                s.set_unsupported("deletecollection", gvr);
            }
            Err(e) => return fail(estimate, e),
        }
    }
    if !collection_done {
        let listed = if d.list {
            list_collection(s, gvr, ns).await
        } else {
            Ok(None)
        };
        match listed {
            Ok(Some(list)) => {
                for item in list {
                    let Some(name) = item["metadata"]["name"].as_str() else {
                        continue;
                    };
                    let path = format!("{}/{name}", gvr.path(ns));
                    match s
                        .send_json(http::Method::DELETE, &path, &background())
                        .await
                    {
                        Ok(_) => {}
                        Err(e) if matches!(code(&e), Some(404 | 405)) => {}
                        Err(e) => return fail(estimate, e),
                    }
                }
            }
            Ok(None) => {}
            Err(e) => return fail(estimate, e),
        }
    }
    // What is left.
    if !d.list {
        return GvrDeletion {
            estimate,
            ..Default::default()
        };
    }
    match list_collection(s, gvr, ns).await {
        Ok(Some(left)) => remaining_after_delete(gvr, ns, &left, estimate),
        Ok(None) => GvrDeletion {
            estimate,
            ..Default::default()
        },
        Err(e) => fail(estimate, e),
    }
}

/// `deleteAllContent`: deletes every namespaced resource (pods first, waiting for them
/// to go before the rest), writes the conditions when they change, and returns the
/// estimate of how long the rest will take (an error when something failed).
async fn delete_all_content(s: &Shared, ns: &Value) -> Result<i64, SyncError> {
    let name = ns["metadata"]["name"].as_str().unwrap_or_default();
    let deleted_at_ms = ns["metadata"]["deletionTimestamp"]
        .as_str()
        .and_then(parse_time_ms)
        .unwrap_or(0);
    let mut errors: Vec<String> = Vec::new();
    let (groups, failed) = discover(s).await?;
    let discovery = discovery_error(&failed);
    if let Some(e) = &discovery {
        errors.push(e.clone());
    }
    let resources = deletable_resources(&groups);
    let mut totals = ContentTotals::default();
    let mut delete_errors: Vec<String> = Vec::new();
    let mut estimate = 0;
    for d in &resources {
        let result = delete_gvr(s, d, name, deleted_at_ms).await;
        if let Some(e) = &result.error {
            errors.push(e.clone());
            delete_errors.push(e.clone());
        }
        estimate = estimate.max(result.estimate);
        totals.add(&d.gvr, &result);
        // Pods go before everything else.
        if d.gvr.is_pods() && result.remaining > 0 {
            break;
        }
    }
    let now = now_rfc3339();
    let failing = failing_conditions(
        discovery.as_deref(),
        failed.len(),
        &totals,
        &delete_errors,
        &now,
    );
    let current: Vec<Value> = ns["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if let Some(conditions) = update_conditions(&current, &failing, &now) {
        let mut body = ns.clone();
        body["status"]["conditions"] = json!(conditions);
        if let Err(e) = s
            .send_json(
                http::Method::PUT,
                &format!("/api/v1/namespaces/{name}/status"),
                &body,
            )
            .await
        {
            tracing::info!(namespace = name, error = %api_message(&e), "could not update the namespace's conditions");
        }
    }
    if !errors.is_empty() {
        return Err(SyncError(errors.join(", ")));
    }
    Ok(estimate)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(name: &str, preferred: &str, versions: Vec<(&str, Value)>) -> DiscoveredGroup {
        DiscoveredGroup {
            name: name.into(),
            preferred: preferred.into(),
            versions: versions
                .into_iter()
                .map(|(v, l)| (v.to_string(), l))
                .collect(),
        }
    }

    fn res(name: &str, namespaced: bool, verbs: &[&str]) -> Value {
        json!({"name": name, "namespaced": namespaced, "kind": "X", "verbs": verbs})
    }

    const ALL: &[&str] = api::catalog::STANDARD_VERBS;

    #[test]
    fn resources_to_delete() {
        let core = group(
            "",
            "v1",
            vec![(
                "v1",
                json!({"groupVersion": "v1", "resources": [
                    res("bindings", true, &["create"]),
                    res("configmaps", true, ALL),
                    res("events", true, ALL),
                    res("namespaces", false, &["create", "delete", "get", "list"]),
                    res("namespaces/finalize", false, &["update"]),
                    res("pods", true, ALL),
                    res("pods/eviction", true, &["create"]),
                    res("pods/status", true, &["get", "patch", "update"]),
                    res("serviceaccounts", true, &["create", "delete", "get", "list"]),
                ]}),
            )],
        );
        let apps = group(
            "apps",
            "v1",
            vec![(
                "v1",
                json!({"resources": [res("deployments", true, ALL), res("deployments/scale", true, &["get", "update"])]}),
            )],
        );
        // Preferred v2 wins over v1beta1 for the resource both serve; v1beta1's own
        // resource is kept.
        let autoscaling = group(
            "autoscaling",
            "v2",
            vec![
                (
                    "v2",
                    json!({"resources": [res("horizontalpodautoscalers", true, ALL)]}),
                ),
                (
                    "v1beta1",
                    json!({"resources": [res("horizontalpodautoscalers", true, ALL), res("legacy", true, &["delete"])]}),
                ),
            ],
        );
        let events = group(
            "events.k8s.io",
            "v1",
            vec![("v1", json!({"resources": [res("events", true, ALL)]}))],
        );
        let got = deletable_resources(&[core, apps, autoscaling, events]);
        let names: Vec<String> = got
            .iter()
            .map(|d| format!("{}/{}/{}", d.gvr.group, d.gvr.version, d.gvr.resource))
            .collect();
        assert_eq!(
            names,
            vec![
                "/v1/pods",
                "/v1/configmaps",
                "/v1/serviceaccounts",
                "apps/v1/deployments",
                "autoscaling/v1beta1/legacy",
                "autoscaling/v2/horizontalpodautoscalers",
                "/v1/events",
                "events.k8s.io/v1/events",
            ]
        );
        let sa = &got[2];
        assert!(sa.list && !sa.delete_collection);
        let legacy = &got[4];
        assert!(!legacy.list && !legacy.delete_collection);
        assert!(got[0].list && got[0].delete_collection);
        assert_eq!(
            got[3].gvr.path("doomed"),
            "/apis/apps/v1/namespaces/doomed/deployments"
        );
        assert_eq!(got[0].gvr.path("doomed"), "/api/v1/namespaces/doomed/pods");
    }

    #[test]
    fn what_remains() {
        let cms = Gvr::new("", "v1", "configmaps");
        assert_eq!(
            remaining_after_delete(&cms, "doomed", &[], 0),
            GvrDeletion::default()
        );
        let held = json!({"metadata": {"name": "a", "finalizers": ["example.com/hold"]}});
        let plain = json!({"metadata": {"name": "b"}});
        let d = remaining_after_delete(&cms, "doomed", &[held.clone(), plain.clone()], 0);
        assert_eq!(d.estimate, FINALIZER_ESTIMATE_SECONDS);
        assert_eq!(d.remaining, 2);
        assert_eq!(d.finalizers.get("example.com/hold"), Some(&1));
        assert_eq!(d.error, None);
        // Nothing explains why it is still there: an error.
        let d = remaining_after_delete(&cms, "doomed", std::slice::from_ref(&plain), 0);
        assert_eq!(
            d.error.as_deref(),
            Some(
                "unexpected items still remain in namespace: doomed for gvr: /v1, Resource=configmaps"
            )
        );
        // Pods still terminating gracefully: their estimate.
        let pods = Gvr::new("", "v1", "pods");
        let d = remaining_after_delete(&pods, "doomed", &[plain], 30);
        assert_eq!((d.estimate, d.remaining, d.error), (30, 1, None));
    }

    #[test]
    fn pod_estimates() {
        let running =
            json!({"spec": {"terminationGracePeriodSeconds": 30}, "status": {"phase": "Running"}});
        let done = json!({"spec": {"terminationGracePeriodSeconds": 90}, "status": {"phase": "Succeeded"}});
        assert_eq!(
            pod_estimate(&[running.clone(), done.clone()], 0, 10_000),
            30
        );
        // Already terminating for longer than the grace period.
        assert_eq!(pod_estimate(&[running, done], 0, 31_000), 0);
        assert_eq!(pod_estimate(&[], 0, 0), 0);
    }

    #[test]
    fn conditions() {
        let now = "2025-01-01T00:00:00Z";
        let mut totals = ContentTotals::default();
        totals.add(
            &Gvr::new("", "v1", "configmaps"),
            &GvrDeletion {
                estimate: 15,
                remaining: 2,
                finalizers: BTreeMap::from([("example.com/hold".to_string(), 2)]),
                error: None,
            },
        );
        totals.add(
            &Gvr::new("apps", "v1", "deployments"),
            &GvrDeletion {
                remaining: 1,
                ..Default::default()
            },
        );
        totals.add(&Gvr::new("", "v1", "secrets"), &GvrDeletion::default());
        let failing = failing_conditions(None, 0, &totals, &[], now);
        assert_eq!(failing.len(), 2);
        assert_eq!(failing[0]["type"], "NamespaceContentRemaining");
        assert_eq!(failing[0]["reason"], "SomeResourcesRemain");
        assert_eq!(
            failing[0]["message"],
            "Some resources are remaining: configmaps. has 2 resource instances, deployments.apps has 1 resource instances"
        );
        assert_eq!(failing[1]["type"], "NamespaceFinalizersRemaining");
        assert_eq!(
            failing[1]["message"],
            "Some content in the namespace has finalizers remaining: example.com/hold in 2 resource instances"
        );

        let all = update_conditions(&[], &failing, now).unwrap();
        let types: Vec<&str> = all.iter().filter_map(|c| c["type"].as_str()).collect();
        assert_eq!(types, CONDITION_TYPES.to_vec());
        assert_eq!(all[0]["status"], "False");
        assert_eq!(all[0]["reason"], "ResourcesDiscovered");
        assert_eq!(all[0]["message"], "All resources successfully discovered");
        assert_eq!(all[3]["status"], "True");
        // The same again: nothing to write.
        assert_eq!(
            update_conditions(&all, &failing, "2025-01-01T00:01:00Z"),
            None
        );
        // The content is gone: the conditions flip with a new transition time.
        let later = "2025-01-01T00:02:00Z";
        let cleared = update_conditions(&all, &[], later).unwrap();
        assert_eq!(cleared[3]["status"], "False");
        assert_eq!(cleared[3]["reason"], "ContentRemoved");
        assert_eq!(cleared[3]["message"], "All content successfully removed");
        assert_eq!(cleared[3]["lastTransitionTime"], later);
        assert_eq!(cleared[0]["lastTransitionTime"], now);

        let failing = failing_conditions(
            discovery_error(&[(
                "metrics.k8s.io/v1beta1".into(),
                "the server is currently unable to handle the request".into(),
            )])
            .as_deref(),
            1,
            &ContentTotals::default(),
            &["b failed".into(), "a failed".into()],
            now,
        );
        assert_eq!(failing[0]["type"], "NamespaceDeletionDiscoveryFailure");
        assert_eq!(
            failing[0]["message"],
            "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request"
        );
        assert_eq!(failing[1]["type"], "NamespaceDeletionContentFailure");
        assert_eq!(
            failing[1]["message"],
            "Failed to delete all resource types, 2 remaining: a failed, b failed"
        );
    }

    #[test]
    fn finalize_removes_only_the_token() {
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "doomed", "uid": "u", "resourceVersion": "7", "deletionTimestamp": "2025-01-01T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes", "example.com/b", "example.com/a", "example.com/a"]},
            "status": {"phase": "Terminating"}});
        let body = finalize_body(&ns, FINALIZER);
        assert_eq!(
            body["spec"]["finalizers"],
            json!(["example.com/a", "example.com/b"])
        );
        assert_eq!(body["metadata"]["resourceVersion"], "7");
        assert!(body["status"].is_null());
        let only = json!({"metadata": {"name": "x"}, "spec": {"finalizers": ["kubernetes"]}});
        assert_eq!(
            finalize_body(&only, FINALIZER)["spec"]["finalizers"],
            json!([])
        );
    }

    #[test]
    fn requeue_delays() {
        assert_eq!(requeue_after(0), Duration::from_secs(1));
        assert_eq!(requeue_after(15), Duration::from_secs(8));
        assert_eq!(requeue_after(30), Duration::from_secs(16));
    }
}
