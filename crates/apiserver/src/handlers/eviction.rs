//! `POST pods/<name>/eviction` (a policy/v1 `Eviction`), as upstream's `EvictionREST`
//! (`pkg/registry/core/pod/storage/eviction.go`): a pod is deleted only if the
//! PodDisruptionBudget covering it allows one more disruption, taken from the budget's
//! status by compare-and-swap before the delete, so concurrent evictions never spend more
//! than the budget allows.
//!
//! The decisions are pure functions ([`decode`], [`can_ignore_pdb`], [`plan`],
//! [`check_and_decrement`], [`with_disruption_target`]); [`evict`] carries them out
//! through the registry:
//!
//! 1. a pod that is Pending, Succeeded, Failed or already being deleted is deleted without
//!    looking at budgets (pinned to the resourceVersion read, unless terminal or being
//!    deleted, and retried on conflicts);
//! 2. otherwise the budgets of the namespace whose selector picks the pod are found (an
//!    empty selector picks every pod, a missing one none); more than one is a 500;
//! 3. a pod that is not Ready is deleted without spending the budget when the budget's
//!    `unhealthyPodEvictionPolicy` is `AlwaysAllow`, or (`IfHealthyBudget`, the default)
//!    when the application is healthy (`currentHealthy >= desiredHealthy > 0`), pinned to
//!    the resourceVersion read so that a pod turning Ready meanwhile is a 429;
//! 4. otherwise `status.disruptionsAllowed` is decremented and the pod added to
//!    `status.disruptedPods` in one compare-and-swap of the budget's status (429 when the
//!    budget's status is stale or no disruption is left);
//! 5. the pod gets the `DisruptionTarget` condition (`EvictionByEvictionAPI`), then is
//!    deleted with the Eviction's `deleteOptions`.
//!
//! Dry runs check everything and write nothing.

use std::sync::Arc;
use std::time::Duration;

use api::ApiError;
use api::status::{GroupResource, Reason};
use http::{HeaderValue, Response, StatusCode, header};
use serde_json::{Value, json};

use super::Server;
use crate::http::{Body, error_response, json_value};
use crate::registry::{
    AdmissionWrite, DeleteOptions, FieldValidation, Precondition, Resource, WriteOptions,
};

/// Upstream's `MaxDisruptedPodSize`: a budget with more pending evictions than this (ones
/// the disruption controller has not seen yet) refuses further ones.
pub const MAX_DISRUPTED_POD_SIZE: usize = 2000;

/// Upstream's `EvictionsRetry` for pods deleted without a budget: 20 tries, 500 ms apart.
const RETRY_STEPS: usize = 20;
const RETRY_INTERVAL: Duration = Duration::from_millis(500);

const VIOLATION: &str = "Cannot evict pod as it would violate the pod's disruption budget.";
const MORE_THAN_ONE: &str = "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.";

/// The condition added to an evicted pod.
pub const DISRUPTION_TARGET: &str = "DisruptionTarget";
pub const EVICTION_BY_EVICTION_API: &str = "EvictionByEvictionAPI";

/// A decoded `Eviction`.
#[derive(Debug, Clone)]
pub struct Eviction {
    /// The decoded object (for admission).
    pub object: Value,
    /// `deleteOptions`, as the registry takes them.
    pub delete: DeleteOptions,
    /// `deleteOptions.dryRun` after upstream's `propagateDryRun`.
    pub dry_run: Vec<String>,
    /// Unknown fields, when `fieldValidation` is `Warn`.
    pub warnings: Vec<String>,
}

/// A `Status` error with exactly upstream's body (`details` and reason included).
fn status_error(code: u16, reason: &str, message: &str, details: Option<Value>) -> ApiError {
    let mut status = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {},
        "status": "Failure", "message": message, "code": code,
    });
    if !reason.is_empty() {
        status["reason"] = json!(reason);
    }
    if let Some(d) = details {
        status["details"] = d;
    }
    ApiError::from_status(code, status)
}

/// `NewTooManyRequests(VIOLATION, retry_after)` with one `DisruptionBudget` cause.
fn too_many_requests(cause: String, retry_after: u32) -> ApiError {
    let mut details = json!({"causes": [{"reason": "DisruptionBudget", "message": cause}]});
    if retry_after > 0 {
        details["retryAfterSeconds"] = json!(retry_after);
    }
    status_error(429, "TooManyRequests", VIOLATION, Some(details))
}

/// Upstream's `createTooManyRequestsError`: the budget's status is behind its spec, or the
/// pod changed while an unhealthy-pod eviction was under way.
pub fn still_processing(pdb: &str) -> ApiError {
    too_many_requests(
        format!("The disruption budget {pdb} is still being processed by the server."),
        10,
    )
}

fn pdb_forbidden(pdb: &str, why: &str) -> ApiError {
    ApiError::forbidden(
        GroupResource {
            group: "policy",
            resource: "poddisruptionbudget",
        },
        pdb,
        why,
    )
}

fn is_conflict(e: &ApiError) -> bool {
    e.code == 409 && (e.reason == Reason::Conflict || e.to_status()["reason"] == "Conflict")
}

/// Decodes the body as an `Eviction` for the pod `name` of `namespace` (upstream's decoder,
/// `EnsureObjectNamespaceMatchesRequestNamespace` and `propagateDryRun`). `query_dry_run`
/// is the request's `dryRun`; `delete_options` parses `deleteOptions`.
pub fn decode(
    namespace: &str,
    body: &Value,
    query_dry_run: &[String],
    fv: FieldValidation,
    delete_options: impl Fn(Option<&Value>) -> Result<DeleteOptions, ApiError>,
) -> Result<Eviction, ApiError> {
    let Some(m) = body.as_object() else {
        return Err(ApiError::bad_request(
            "Eviction in version \"v1\" cannot be handled as a Eviction: the body must be a JSON object",
        ));
    };
    let api_version = m.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if !matches!(api_version, "" | "policy/v1" | "policy/v1beta1") {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version (policy/v1)"
        )));
    }
    let kind = m.get("kind").and_then(Value::as_str).unwrap_or("");
    if !kind.is_empty() && kind != "Eviction" {
        return Err(ApiError::bad_request(format!(
            "no kind \"{kind}\" is registered for version \"{}\" in scheme \"pkg/api/legacyscheme/scheme.go:30\"",
            if api_version.is_empty() {
                "policy/v1"
            } else {
                api_version
            }
        )));
    }
    // v1beta1 and v1 Evictions are the same object.
    let mut typed = body.clone();
    typed["apiVersion"] = json!("policy/v1");
    typed["kind"] = json!("Eviction");
    let decoded = match api::kinds::decode("policy", "v1", "Eviction", &typed) {
        Some(Ok(d)) => d,
        Some(Err(e)) => {
            return Err(ApiError::bad_request(format!(
                "Eviction in version \"v1\" cannot be handled as a Eviction: {e}"
            )));
        }
        None => api::kinds::Decoded {
            object: typed,
            unknown_fields: Vec::new(),
        },
    };
    let warnings = fv.unknown_fields(
        &decoded.unknown_fields,
        "Eviction in version \"v1\" cannot be handled as a Eviction: ",
    )?;
    let mut object = decoded.object;
    match api::meta::namespace(&object) {
        Some(ns) if !ns.is_empty() && ns != namespace => {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        _ => api::meta::set_str(&mut object, "namespace", namespace),
    }
    let raw_options = object.get("deleteOptions").filter(|v| !v.is_null());
    let delete = delete_options(raw_options)?;
    let listed: Vec<String> = raw_options
        .and_then(|o| o["dryRun"].as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    // `propagateDryRun`.
    let dry_run = if listed.is_empty() {
        query_dry_run.to_vec()
    } else if query_dry_run.is_empty() || query_dry_run == listed.as_slice() {
        listed
    } else {
        let go = |v: &[String]| format!("[{}]", v.join(" "));
        return Err(status_error(
            500,
            "",
            &format!(
                "Non-matching dry-run options in request and content: {} and {}",
                go(query_dry_run),
                go(&listed)
            ),
            None,
        ));
    };
    Ok(Eviction {
        object,
        delete,
        dry_run,
        warnings,
    })
}

/// Upstream's `canIgnorePDB`: a pod that is not running yet (Pending), already finished
/// (Succeeded, Failed) or already being deleted is evicted without asking its budget.
pub fn can_ignore_pdb(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed" | "Pending")
    ) || !pod["metadata"]["deletionTimestamp"].is_null()
}

/// Upstream's `shouldEnforceResourceVersion`: the delete of a pod deleted without asking
/// its budget is pinned to the resourceVersion read unless the pod is terminal or being
/// deleted (a Pending pod could start and become Ready meanwhile).
pub fn should_enforce_resource_version(pod: &Value) -> bool {
    !matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    ) && pod["metadata"]["deletionTimestamp"].is_null()
}

/// `podutil.IsPodReady`.
pub fn is_pod_ready(pod: &Value) -> bool {
    pod["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True")
    })
}

/// Upstream's `getPodDisruptionBudgets`: the budgets (of the pod's namespace) whose selector
/// picks the pod. In policy/v1 an empty selector picks every pod, a missing one none; a
/// selector that does not parse picks none.
pub fn budgets_for<'a>(pod: &Value, pdbs: &'a [Value]) -> Vec<&'a Value> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or_default();
    pdbs.iter()
        .filter(|p| p["metadata"]["namespace"].as_str().unwrap_or_default() == ns)
        .filter(|p| {
            api::selector::LabelSelector::from_label_selector(&p["spec"]["selector"])
                .is_ok_and(|s| s.matches_object(pod))
        })
        .collect()
}

/// What to do with a pod whose budget must be asked (see [`can_ignore_pdb`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// No budget covers the pod: delete it.
    Delete,
    /// The pod is not Ready and the budget lets it go without spending a disruption:
    /// delete it if its resourceVersion is still the one read (else 429 from `pdb`).
    DeleteUnhealthy { pdb: String },
    /// Take one disruption from `pdb` (see [`check_and_decrement`]), then delete.
    Decrement { pdb: String },
}

/// The decision for a pod that is running (see [`can_ignore_pdb`]) given the budgets of its
/// namespace. More than one budget covering the pod is upstream's 500.
pub fn plan(pod: &Value, pdbs: &[Value]) -> Result<Plan, ApiError> {
    let matching = budgets_for(pod, pdbs);
    let pdb = match matching.as_slice() {
        [] => return Ok(Plan::Delete),
        [one] => *one,
        _ => return Err(status_error(500, "", MORE_THAN_ONE, None)),
    };
    let name = pdb["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // Readiness is what the disruption controller counts as healthy.
    if !is_pod_ready(pod) {
        if pdb["spec"]["unhealthyPodEvictionPolicy"] == "AlwaysAllow" {
            return Ok(Plan::DeleteUnhealthy { pdb: name });
        }
        // IfHealthyBudget (the default): an unready pod may go while the application is
        // not disrupted.
        let current = pdb["status"]["currentHealthy"].as_i64().unwrap_or(0);
        let desired = pdb["status"]["desiredHealthy"].as_i64().unwrap_or(0);
        if current >= desired && desired > 0 {
            return Ok(Plan::DeleteUnhealthy { pdb: name });
        }
    }
    Ok(Plan::Decrement { pdb: name })
}

/// `apimeta.SetStatusCondition` of the budget's `DisruptionAllowed` condition once the last
/// disruption is taken (`pdbhelper.UpdateDisruptionAllowedCondition`).
fn set_disruption_allowed(status: &mut serde_json::Map<String, Value>, now: &str) {
    let allowed = status
        .get("disruptionsAllowed")
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let (state, reason) = if allowed > 0 {
        ("True", "SufficientPods")
    } else {
        ("False", "InsufficientPods")
    };
    let generation = status
        .get("observedGeneration")
        .cloned()
        .unwrap_or(json!(0));
    let conditions = status.entry("conditions").or_insert_with(|| json!([]));
    if !conditions.is_array() {
        *conditions = json!([]);
    }
    let Some(list) = conditions.as_array_mut() else {
        return;
    };
    match list.iter_mut().find(|c| c["type"] == "DisruptionAllowed") {
        Some(c) => {
            if c["status"] != state {
                c["status"] = json!(state);
                c["lastTransitionTime"] = json!(now);
            }
            c["reason"] = json!(reason);
            c["message"] = json!("");
            c["observedGeneration"] = generation;
        }
        None => list.push(json!({
            "type": "DisruptionAllowed", "status": state, "reason": reason, "message": "",
            "observedGeneration": generation, "lastTransitionTime": now,
        })),
    }
}

/// Upstream's `checkAndDecrement`: the budget with one disruption taken for `pod` (and,
/// unless a dry run, the pod in `disruptedPods` since `now`), or why not: 429 while the
/// status is behind the spec or no disruption is left, 403 for a negative count or too
/// many evictions the controller has not seen.
pub fn check_and_decrement(
    pdb: &Value,
    pod: &str,
    now: &str,
    dry_run: bool,
) -> Result<Value, ApiError> {
    let name = pdb["metadata"]["name"].as_str().unwrap_or_default();
    let status = &pdb["status"];
    let generation = pdb["metadata"]["generation"].as_i64().unwrap_or(0);
    if status["observedGeneration"].as_i64().unwrap_or(0) < generation {
        return Err(still_processing(name));
    }
    let allowed = status["disruptionsAllowed"].as_i64().unwrap_or(0);
    if allowed < 0 {
        return Err(pdb_forbidden(name, "pdb disruptions allowed is negative"));
    }
    if status["disruptedPods"]
        .as_object()
        .is_some_and(|m| m.len() > MAX_DISRUPTED_POD_SIZE)
    {
        return Err(pdb_forbidden(
            name,
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller",
        ));
    }
    if allowed == 0 {
        return Err(too_many_requests(
            format!(
                "The disruption budget {name} needs {} healthy pods and has {} currently",
                status["desiredHealthy"].as_i64().unwrap_or(0),
                status["currentHealthy"].as_i64().unwrap_or(0)
            ),
            0,
        ));
    }
    let mut new = pdb.clone();
    let Some(obj) = new.as_object_mut() else {
        return Err(ApiError::internal(
            "the PodDisruptionBudget is not an object",
        ));
    };
    let st = obj.entry("status").or_insert_with(|| json!({}));
    if !st.is_object() {
        *st = json!({});
    }
    let Some(st) = st.as_object_mut() else {
        return Err(ApiError::internal("the PodDisruptionBudget has no status"));
    };
    st.insert("disruptionsAllowed".into(), json!(allowed - 1));
    if allowed - 1 == 0 {
        set_disruption_allowed(st, now);
    }
    if dry_run {
        return Ok(new);
    }
    let disrupted = st.entry("disruptedPods").or_insert_with(|| json!({}));
    if !disrupted.is_object() {
        *disrupted = json!({});
    }
    if let Some(d) = disrupted.as_object_mut() {
        d.insert(pod.to_string(), json!(now));
    }
    Ok(new)
}

/// The pod with the `DisruptionTarget=True` condition (`EvictionByEvictionAPI`), as
/// upstream's `podutil.UpdatePodCondition`: the transition time kept when the status does
/// not change.
pub fn with_disruption_target(pod: &Value, now: &str) -> Value {
    let mut new = pod.clone();
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    if !new["status"]["conditions"].is_array() {
        new["status"]["conditions"] = json!([]);
    }
    let condition = json!({
        "type": DISRUPTION_TARGET,
        "status": "True",
        "lastProbeTime": null,
        "lastTransitionTime": now,
        "reason": EVICTION_BY_EVICTION_API,
        "message": "Eviction API: evicting",
    });
    if let Some(list) = new["status"]["conditions"].as_array_mut() {
        match list.iter_mut().find(|c| c["type"] == DISRUPTION_TARGET) {
            Some(c) => {
                let mut condition = condition;
                if c["status"] == "True" && !c["lastTransitionTime"].is_null() {
                    condition["lastTransitionTime"] = c["lastTransitionTime"].clone();
                }
                if !c["lastProbeTime"].is_null() {
                    condition["lastProbeTime"] = c["lastProbeTime"].clone();
                }
                *c = condition;
            }
            None => list.push(condition),
        }
    }
    new
}

/// Upstream's `getLatestPod` preconditions, checked against the pod about to get its
/// condition.
fn check_preconditions(pod: &Value, del: &DeleteOptions) -> Result<(), ApiError> {
    let name = api::meta::name(pod).unwrap_or_default();
    let gr = GroupResource {
        group: "",
        resource: "Pod",
    };
    if let Some(uid) = del.precondition_uid.as_deref().filter(|u| !u.is_empty())
        && api::meta::uid(pod) != Some(uid)
    {
        return Err(ApiError::conflict(
            gr,
            name,
            &format!(
                "the UID in the precondition ({uid}) does not match the UID in record ({}). The object might have been deleted and then recreated",
                api::meta::uid(pod).unwrap_or_default()
            ),
        ));
    }
    if let Some(rv) = del.precondition_rv.as_deref().filter(|r| !r.is_empty())
        && api::meta::resource_version(pod) != Some(rv)
    {
        return Err(ApiError::conflict(
            gr,
            name,
            &format!(
                "the ResourceVersion in the precondition ({rv}) does not match the ResourceVersion in record ({}). The object might have been modified",
                api::meta::resource_version(pod).unwrap_or_default()
            ),
        ));
    }
    Ok(())
}

/// How the server writes a budget's status for an eviction (upstream's loopback client).
fn loopback(opts: &WriteOptions) -> WriteOptions {
    WriteOptions {
        user: crate::authn::UserInfo {
            name: auth::attributes::APISERVER_USER.into(),
            uid: String::new(),
            groups: vec![auth::attributes::SYSTEM_PRIVILEGED_GROUP.into()],
            extra: Default::default(),
        },
        user_agent: "kube-apiserver/v1.33.0 (linux/amd64) kubernetes".into(),
        field_manager: Some("kube-apiserver".into()),
        field_validation: FieldValidation::Ignore,
        apply: false,
        include_uninitialized: true,
        ..opts.clone()
    }
}

/// `POST pods/<name>/eviction`.
pub(super) async fn evict(
    srv: &Arc<Server>,
    pods: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
    delete_options: impl Fn(Option<&Value>) -> Result<DeleteOptions, ApiError>,
) -> Result<Response<Body>, ApiError> {
    match run(srv, pods, ns, name, body, opts, delete_options).await {
        Ok(()) => Ok(json_value(
            StatusCode::CREATED,
            &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
        )),
        Err(e) => {
            // A `details.retryAfterSeconds` is also the `Retry-After` header (upstream's
            // `ErrorNegotiated`), which clients honour by retrying.
            let secs = e.to_status()["details"]["retryAfterSeconds"].as_u64();
            match secs.filter(|s| *s > 0 && e.retry_after().is_none()) {
                Some(s) => {
                    let mut r = error_response(&e);
                    if let Ok(v) = HeaderValue::from_str(&s.to_string()) {
                        r.headers_mut().insert(header::RETRY_AFTER, v);
                    }
                    Ok(r)
                }
                None => Err(e),
            }
        }
    }
}

async fn run(
    srv: &Arc<Server>,
    pods: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
    delete_options: impl Fn(Option<&Value>) -> Result<DeleteOptions, ApiError>,
) -> Result<(), ApiError> {
    let namespace = ns.unwrap_or_default();
    let query_dry_run: Vec<String> = if opts.dry_run {
        vec!["All".into()]
    } else {
        Vec::new()
    };
    let eviction = decode(
        namespace,
        &body,
        &query_dry_run,
        opts.field_validation,
        delete_options,
    )?;
    for w in &eviction.warnings {
        opts.warnings.add(w.clone());
    }
    let write = |object: Value| AdmissionWrite {
        operation: admission::Operation::Create,
        subresource: Some("eviction"),
        namespace,
        name,
        object: Some(object),
        old_object: None,
    };
    let object = srv
        .registry
        .admit(pods, write(eviction.object.clone()), opts)
        .await?
        .unwrap_or_else(|| eviction.object.clone());
    if api::meta::name(&object).unwrap_or_default() != name {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Eviction object",
        ));
    }
    srv.registry
        .validate_admission(pods, write(object), opts)
        .await?;

    let opts = WriteOptions {
        dry_run: !eviction.dry_run.is_empty(),
        ..opts.clone()
    };
    let original = eviction.delete;
    let rv_given = original.precondition_rv.is_some();

    // Pods whose budget need not be asked are deleted at once (conflicts retried unless
    // the client pinned a resourceVersion).
    let mut attempt = 1;
    let pod = loop {
        let pod = srv.registry.get(pods, ns, name).await?;
        if !can_ignore_pdb(&pod) {
            break pod;
        }
        let mut del = original.clone();
        if should_enforce_resource_version(&pod) && !rv_given {
            del.precondition_rv = api::meta::resource_version(&pod).map(str::to_string);
        }
        match delete_with_condition(srv, pods, ns, name, del, &opts).await {
            Err(e) if is_conflict(&e) && !rv_given && attempt < RETRY_STEPS => {
                attempt += 1;
                tokio::time::sleep(RETRY_INTERVAL).await;
            }
            other => return other,
        }
    };

    let budgets = match srv.registry.lookup("policy", "v1", "poddisruptionbudgets") {
        Some(pdbs) => {
            pdbs.cacher
                .sync(Duration::from_secs(3))
                .await
                .map_err(|e| crate::registry::store_error(&pdbs, "", e))?;
            let (items, _) = pdbs.cacher.list(&|_| true, &pdbs.info.list_prefix(ns));
            items.iter().filter_map(|o| o.value()).collect::<Vec<_>>()
        }
        None => Vec::new(),
    };
    let mut del = original.clone();
    let mut pinned_for = None;
    match plan(&pod, &budgets)? {
        Plan::Delete => {}
        Plan::DeleteUnhealthy { pdb } => {
            del.precondition_rv = api::meta::resource_version(&pod).map(str::to_string);
            pinned_for = Some(pdb);
        }
        Plan::Decrement { pdb } => take_disruption(srv, ns, &pdb, name, &opts).await?,
    }
    match delete_with_condition(srv, pods, ns, name, del, &opts).await {
        Err(e) if is_conflict(&e) && !rv_given && pinned_for.is_some() => {
            Err(still_processing(pinned_for.as_deref().unwrap_or_default()))
        }
        other => other,
    }
}

/// Takes one disruption from the budget `pdb` for `pod`: a compare-and-swap of its status
/// on the stored budget, re-checked on every conflict (so two evictions never both take
/// the last disruption). A dry run only checks.
async fn take_disruption(
    srv: &Arc<Server>,
    ns: Option<&str>,
    pdb: &str,
    pod: &str,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    let Some(pdbs) = srv.registry.lookup("policy", "v1", "poddisruptionbudgets") else {
        return Ok(());
    };
    let now = crate::registry::rfc3339(srv.registry.clock.now_ms());
    if opts.dry_run {
        let current = srv.registry.get(&pdbs, ns, pdb).await?;
        check_and_decrement(&current, pod, &now, true)?;
        return Ok(());
    }
    let gr = pdbs.gr();
    srv.registry
        .update_with(&pdbs, ns, pdb, Some("status"), &loopback(opts), |old| {
            let old = old.ok_or_else(|| ApiError::not_found(gr, pdb))?;
            let new = check_and_decrement(old, pod, &now, false)?;
            Ok((new, Vec::new(), Precondition::default()))
        })
        .await?;
    Ok(())
}

/// Upstream's `addConditionAndDeletePod`: the pod gets the `DisruptionTarget` condition
/// (unless a dry run; the Eviction's preconditions checked first), then is deleted with the
/// Eviction's options (a resourceVersion precondition moved to the condition's write).
async fn delete_with_condition(
    srv: &Arc<Server>,
    pods: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    mut del: DeleteOptions,
    opts: &WriteOptions,
) -> Result<(), ApiError> {
    if !opts.dry_run {
        let now = crate::registry::rfc3339(srv.registry.clock.now_ms());
        let gr = pods.gr();
        let written = srv
            .registry
            .update_with(pods, ns, name, Some("status"), opts, |old| {
                let old = old.ok_or_else(|| ApiError::not_found(gr, name))?;
                check_preconditions(old, &del)?;
                Ok((
                    with_disruption_target(old, &now),
                    Vec::new(),
                    Precondition::default(),
                ))
            })
            .await?;
        if del.precondition_rv.is_some() {
            del.precondition_rv = api::meta::resource_version(&written.object).map(str::to_string);
        }
    }
    srv.registry.delete(pods, ns, name, &del, opts).await?;
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    const NOW: &str = "2025-01-01T00:00:00Z";

    fn pod(name: &str, phase: &str, ready: bool) -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "web"},
                         "resourceVersion": "7", "uid": "u-1"},
            "status": {"phase": phase, "conditions": [
                {"type": "Ready", "status": if ready { "True" } else { "False" }}]},
        })
    }

    fn pdb(name: &str, selector: Value, status: Value) -> Value {
        json!({
            "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
            "metadata": {"name": name, "namespace": "default", "generation": 1},
            "spec": {"minAvailable": 2, "selector": selector},
            "status": status,
        })
    }

    fn healthy(allowed: i64) -> Value {
        json!({"observedGeneration": 1, "disruptionsAllowed": allowed, "currentHealthy": 3,
               "desiredHealthy": 2, "expectedPods": 3,
               "conditions": [{"type": "DisruptionAllowed", "status": "True",
                               "reason": "SufficientPods", "message": "",
                               "observedGeneration": 1,
                               "lastTransitionTime": "2024-01-01T00:00:00Z"}]})
    }

    fn web() -> Value {
        json!({"matchLabels": {"app": "web"}})
    }

    fn no_delete_options(v: Option<&Value>) -> Result<DeleteOptions, ApiError> {
        let mut o = DeleteOptions::default();
        if let Some(v) = v {
            o.grace_period_seconds = v["gracePeriodSeconds"].as_i64();
            o.precondition_rv = v["preconditions"]["resourceVersion"]
                .as_str()
                .map(str::to_string);
        }
        Ok(o)
    }

    #[test]
    fn pods_not_running_or_being_deleted_skip_the_budget() {
        for phase in ["Pending", "Succeeded", "Failed"] {
            assert!(can_ignore_pdb(&pod("p", phase, false)), "{phase}");
        }
        assert!(!can_ignore_pdb(&pod("p", "Running", true)));
        assert!(!can_ignore_pdb(&pod("p", "Unknown", false)));
        let mut deleting = pod("p", "Running", true);
        deleting["metadata"]["deletionTimestamp"] = json!(NOW);
        assert!(can_ignore_pdb(&deleting));

        // Pending pods are pinned to the version read; terminal and deleting ones not.
        assert!(should_enforce_resource_version(&pod("p", "Pending", false)));
        assert!(!should_enforce_resource_version(&pod(
            "p",
            "Succeeded",
            false
        )));
        assert!(!should_enforce_resource_version(&pod("p", "Failed", false)));
        assert!(!should_enforce_resource_version(&deleting));
    }

    #[test]
    fn budgets_are_found_by_selector() {
        let p = pod("p", "Running", true);
        let mut other_ns = pdb("elsewhere", json!({}), healthy(1));
        other_ns["metadata"]["namespace"] = json!("other");
        let pdbs = vec![
            pdb("web", web(), healthy(1)),
            pdb("db", json!({"matchLabels": {"app": "db"}}), healthy(1)),
            pdb("nil", Value::Null, healthy(1)),
            pdb("bad", json!({"matchLabels": "x"}), healthy(1)),
            other_ns,
        ];
        let names: Vec<&str> = budgets_for(&p, &pdbs)
            .iter()
            .map(|b| b["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["web"]);
        assert_eq!(
            plan(&p, &pdbs).unwrap(),
            Plan::Decrement { pdb: "web".into() }
        );
        // policy/v1: an empty selector picks every pod.
        let all = vec![pdb("all", json!({}), healthy(1))];
        assert_eq!(
            plan(&p, &all).unwrap(),
            Plan::Decrement { pdb: "all".into() }
        );
        // No budget: plain delete.
        assert_eq!(plan(&p, &pdbs[1..]).unwrap(), Plan::Delete);
        assert_eq!(plan(&p, &[]).unwrap(), Plan::Delete);
    }

    #[test]
    fn more_than_one_budget_is_a_500() {
        let p = pod("p", "Running", true);
        let pdbs = vec![pdb("a", web(), healthy(1)), pdb("b", json!({}), healthy(1))];
        let e = plan(&p, &pdbs).unwrap_err();
        assert_eq!(e.code, 500);
        let st = e.to_status();
        assert_eq!(
            st["message"],
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        );
        assert!(st.get("reason").is_none(), "{st}");
        assert_eq!(st["status"], "Failure");
        assert_eq!(st["code"], 500);
    }

    #[test]
    fn unready_pods_and_the_unhealthy_pod_eviction_policy() {
        let unready = pod("p", "Running", false);
        // IfHealthyBudget (default): the application is healthy, the unready pod may go
        // without spending the budget, even with no disruption left.
        let pdbs = vec![pdb("web", web(), healthy(0))];
        assert_eq!(
            plan(&unready, &pdbs).unwrap(),
            Plan::DeleteUnhealthy { pdb: "web".into() }
        );
        let mut explicit = pdbs.clone();
        explicit[0]["spec"]["unhealthyPodEvictionPolicy"] = json!("IfHealthyBudget");
        assert_eq!(
            plan(&unready, &explicit).unwrap(),
            Plan::DeleteUnhealthy { pdb: "web".into() }
        );
        // The application is disrupted: the budget decides.
        let mut disrupted = pdb("web", web(), healthy(0));
        disrupted["status"]["currentHealthy"] = json!(1);
        assert_eq!(
            plan(&unready, std::slice::from_ref(&disrupted)).unwrap(),
            Plan::Decrement { pdb: "web".into() }
        );
        // desiredHealthy 0 is not "healthy enough" either.
        let mut zero = pdb("web", web(), healthy(0));
        zero["status"]["desiredHealthy"] = json!(0);
        assert_eq!(
            plan(&unready, std::slice::from_ref(&zero)).unwrap(),
            Plan::Decrement { pdb: "web".into() }
        );
        // AlwaysAllow: unready pods always go without spending the budget.
        disrupted["spec"]["unhealthyPodEvictionPolicy"] = json!("AlwaysAllow");
        assert_eq!(
            plan(&unready, std::slice::from_ref(&disrupted)).unwrap(),
            Plan::DeleteUnhealthy { pdb: "web".into() }
        );
        // Ready pods always spend the budget, whatever the policy.
        assert_eq!(
            plan(&pod("p", "Running", true), &[disrupted]).unwrap(),
            Plan::Decrement { pdb: "web".into() }
        );
    }

    #[test]
    fn decrement_takes_one_disruption_and_records_the_pod() {
        let b = pdb("web", web(), healthy(2));
        let new = check_and_decrement(&b, "p", NOW, false).unwrap();
        assert_eq!(new["status"]["disruptionsAllowed"], 1);
        assert_eq!(new["status"]["disruptedPods"], json!({"p": NOW}));
        // Still allowed: the condition is untouched.
        assert_eq!(new["status"]["conditions"], b["status"]["conditions"]);

        // The last one: DisruptionAllowed turns False.
        let last = check_and_decrement(&new, "q", NOW, false).unwrap();
        assert_eq!(last["status"]["disruptionsAllowed"], 0);
        assert_eq!(last["status"]["disruptedPods"], json!({"p": NOW, "q": NOW}));
        let c = &last["status"]["conditions"][0];
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "InsufficientPods");
        assert_eq!(c["lastTransitionTime"], NOW);
        assert_eq!(c["observedGeneration"], 1);

        // A dry run decrements but records nothing.
        let dry = check_and_decrement(&b, "p", NOW, true).unwrap();
        assert_eq!(dry["status"]["disruptionsAllowed"], 1);
        assert!(dry["status"].get("disruptedPods").is_none());
    }

    #[test]
    fn an_exhausted_budget_is_a_429_with_its_cause() {
        let b = pdb("web", web(), healthy(0));
        let e = check_and_decrement(&b, "p", NOW, false).unwrap_err();
        assert_eq!(e.code, 429);
        let st = e.to_status();
        assert_eq!(st["reason"], "TooManyRequests");
        assert_eq!(st["message"], VIOLATION);
        assert_eq!(
            st["details"],
            json!({"causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web needs 2 healthy pods and has 3 currently"}]})
        );
    }

    #[test]
    fn a_budget_not_yet_observed_is_a_429_to_retry_later() {
        let mut b = pdb("web", web(), healthy(1));
        b["metadata"]["generation"] = json!(2);
        let e = check_and_decrement(&b, "p", NOW, false).unwrap_err();
        assert_eq!(e.code, 429);
        let st = e.to_status();
        assert_eq!(st["message"], VIOLATION);
        assert_eq!(
            st["details"],
            json!({"causes": [{"reason": "DisruptionBudget",
                "message": "The disruption budget web is still being processed by the server."}],
                "retryAfterSeconds": 10})
        );
        // No status at all yet: the same.
        let fresh = pdb("web", web(), Value::Null);
        assert_eq!(
            check_and_decrement(&fresh, "p", NOW, false)
                .unwrap_err()
                .to_status()["details"]["causes"][0]["message"],
            "The disruption budget web is still being processed by the server."
        );
    }

    #[test]
    fn negative_or_overfull_budgets_are_forbidden() {
        let b = pdb("web", web(), healthy(-1));
        let e = check_and_decrement(&b, "p", NOW, false).unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "poddisruptionbudget.policy \"web\" is forbidden: pdb disruptions allowed is negative"
        );
        let mut full = pdb("web", web(), healthy(5));
        let many: serde_json::Map<String, Value> = (0..=MAX_DISRUPTED_POD_SIZE)
            .map(|i| (format!("p{i}"), json!(NOW)))
            .collect();
        full["status"]["disruptedPods"] = Value::Object(many);
        let e = check_and_decrement(&full, "p", NOW, false).unwrap_err();
        assert_eq!(e.code, 403);
        assert!(e.message.ends_with(
            "DisruptedPods map too big - too many evictions not confirmed by PDB controller"
        ));
    }

    #[test]
    fn the_disruption_target_condition() {
        let p = pod("p", "Running", true);
        let new = with_disruption_target(&p, NOW);
        let conds = new["status"]["conditions"].as_array().unwrap();
        assert_eq!(conds.len(), 2);
        assert_eq!(
            conds[1],
            json!({"type": "DisruptionTarget", "status": "True", "lastProbeTime": null,
                   "lastTransitionTime": NOW, "reason": "EvictionByEvictionAPI",
                   "message": "Eviction API: evicting"})
        );
        // Already True: the transition time stays.
        let again = with_disruption_target(&new, "2030-01-01T00:00:00Z");
        assert_eq!(again, new);
        // A False one (reset by the disruption controller) turns True now.
        let mut reset = new.clone();
        reset["status"]["conditions"][1] =
            json!({"type": "DisruptionTarget", "status": "False", "lastTransitionTime": "x"});
        let back = with_disruption_target(&reset, NOW);
        assert_eq!(back["status"]["conditions"][1], conds[1]);
        // A pod without a status gets one.
        let bare = with_disruption_target(&json!({"metadata": {"name": "p"}}), NOW);
        assert_eq!(bare["status"]["conditions"][0]["type"], "DisruptionTarget");
    }

    #[test]
    fn preconditions_are_checked_before_the_condition() {
        let p = pod("p", "Running", true);
        let ok = DeleteOptions {
            precondition_uid: Some("u-1".into()),
            precondition_rv: Some("7".into()),
            ..Default::default()
        };
        check_preconditions(&p, &ok).unwrap();
        let stale = DeleteOptions {
            precondition_rv: Some("6".into()),
            ..Default::default()
        };
        let e = check_preconditions(&p, &stale).unwrap_err();
        assert_eq!(e.code, 409);
        assert!(is_conflict(&e));
        assert_eq!(
            e.message,
            "Operation cannot be fulfilled on Pod \"p\": the ResourceVersion in the precondition (6) does not match the ResourceVersion in record (7). The object might have been modified"
        );
        let other = DeleteOptions {
            precondition_uid: Some("u-2".into()),
            ..Default::default()
        };
        assert!(
            check_preconditions(&p, &other)
                .unwrap_err()
                .message
                .contains(
                    "the UID in the precondition (u-2) does not match the UID in record (u-1)"
                )
        );
    }

    #[test]
    fn decoding_evictions() {
        let body = json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "p", "namespace": "default"},
            "deleteOptions": {"gracePeriodSeconds": 5}});
        let e = decode(
            "default",
            &body,
            &[],
            FieldValidation::Strict,
            no_delete_options,
        )
        .unwrap();
        assert_eq!(e.object["metadata"]["name"], "p");
        assert_eq!(e.delete.grace_period_seconds, Some(5));
        assert!(e.dry_run.is_empty());

        // v1beta1, no type meta, no namespace: accepted; the namespace is the URL's.
        for body in [
            json!({"apiVersion": "policy/v1beta1", "kind": "Eviction", "metadata": {"name": "p"}}),
            json!({"metadata": {"name": "p"}}),
        ] {
            let e = decode("ns", &body, &[], FieldValidation::Strict, no_delete_options).unwrap();
            assert_eq!(e.object["metadata"]["namespace"], "ns");
        }

        // Malformed bodies are 400s.
        for body in [
            json!([1]),
            json!({"metadata": "x"}),
            json!({"metadata": {"name": "p"}, "deleteOptions": {"gracePeriodSeconds": "x"}}),
            json!({"apiVersion": "v1", "kind": "Eviction", "metadata": {"name": "p"}}),
            json!({"apiVersion": "policy/v1", "kind": "Pod", "metadata": {"name": "p"}}),
            json!({"metadata": {"name": "p", "namespace": "other"}}),
        ] {
            let e =
                decode("ns", &body, &[], FieldValidation::Strict, no_delete_options).unwrap_err();
            assert_eq!(e.code, 400, "{body}: {e:?}");
        }
        // Unknown fields: 400 when strict, warnings otherwise.
        let body = json!({"metadata": {"name": "p"}, "bogus": 1});
        let e = decode("ns", &body, &[], FieldValidation::Strict, no_delete_options).unwrap_err();
        assert_eq!(e.code, 400);
        assert!(
            e.message.contains("unknown field \"bogus\""),
            "{}",
            e.message
        );
        let ok = decode("ns", &body, &[], FieldValidation::Warn, no_delete_options).unwrap();
        assert_eq!(ok.warnings, ["unknown field \"bogus\""]);
    }

    #[test]
    fn dry_run_is_propagated() {
        let all = vec!["All".to_string()];
        let plain = json!({"metadata": {"name": "p"}});
        let e = decode(
            "ns",
            &plain,
            &all,
            FieldValidation::Strict,
            no_delete_options,
        )
        .unwrap();
        assert_eq!(e.dry_run, all);
        let in_body = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["All"]}});
        let e = decode(
            "ns",
            &in_body,
            &[],
            FieldValidation::Strict,
            no_delete_options,
        )
        .unwrap();
        assert_eq!(e.dry_run, all);
        let e = decode(
            "ns",
            &in_body,
            &all,
            FieldValidation::Strict,
            no_delete_options,
        )
        .unwrap();
        assert_eq!(e.dry_run, all);
        let odd = json!({"metadata": {"name": "p"}, "deleteOptions": {"dryRun": ["Other"]}});
        let e = decode("ns", &odd, &all, FieldValidation::Strict, no_delete_options).unwrap_err();
        assert_eq!(e.code, 500);
        assert_eq!(
            e.message,
            "Non-matching dry-run options in request and content: [All] and [Other]"
        );
    }
}
