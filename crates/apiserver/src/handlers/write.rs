//! create, update, patch, delete, deletecollection, the pod subresources that write
//! (binding, eviction), scale, and serviceaccounts/token (`TokenRequest`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use api::status::GroupResource;
use api::{ApiError, FieldError};
use http::{HeaderMap, Request, Response, StatusCode, header};
use serde_json::{Value, json};

use super::{Server, object_response};
use crate::authn::{Unauthenticated, UserInfo};
use crate::http::{
    Body, ContentType, Query, content_type, decode_body, json_value, negotiate, read_body,
};
use crate::registry::{
    AdmissionWrite, DeleteOptions, FieldValidation, Precondition, Resource, WriteOptions, Written,
};

fn user_agent(headers: &HeaderMap) -> String {
    headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_string()
}

/// Upstream's `Validate{Create,Update,Patch,Delete}Options` checks of the query options
/// every write shares, after `errs` (the patch-specific ones). Failures are one 422 on the
/// options kind.
fn validate_options(
    query: &Query,
    options_kind: &str,
    mut errs: Vec<FieldError>,
) -> Result<(), ApiError> {
    let delete = options_kind == "DeleteOptions";
    if !delete && let Some(m) = query.get("fieldManager").filter(|s| !s.is_empty()) {
        if m.len() > 128 {
            errs.push(FieldError::too_long("fieldManager", 128));
        }
        if m.chars().any(|c| !(' '..='~').contains(&c)) {
            errs.push(FieldError::invalid(
                "fieldManager",
                m,
                "must be made of printable ASCII characters",
            ));
        }
    }
    let dry_run = query.all("dryRun");
    if dry_run.iter().any(|v| *v != "All") {
        errs.push(FieldError::not_supported("dryRun", dry_run, &["All"]));
    }
    if !delete
        && let Some(v) = query.get("fieldValidation")
        && !matches!(v, "" | "Ignore" | "Warn" | "Strict")
    {
        errs.push(FieldError::not_supported(
            "fieldValidation",
            v,
            &["", "Ignore", "Strict", "Warn"],
        ));
    }
    if errs.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid("meta.k8s.io", options_kind, "", &errs))
    }
}

/// The options of a write, validated as upstream validates `options_kind`
/// (`CreateOptions`, `UpdateOptions`, `PatchOptions`, `DeleteOptions`).
fn write_options(
    query: &Query,
    req: &Request<crate::http::ReqBody>,
    user: &UserInfo,
    options_kind: &str,
) -> Result<WriteOptions, ApiError> {
    validate_options(query, options_kind, Vec::new())?;
    write_options_unchecked(query, req.headers(), req.extensions(), user)
}

fn write_options_unchecked(
    query: &Query,
    headers: &HeaderMap,
    extensions: &http::Extensions,
    user: &UserInfo,
) -> Result<WriteOptions, ApiError> {
    Ok(WriteOptions {
        user: user.clone(),
        user_agent: user_agent(headers),
        dry_run: !query.all("dryRun").is_empty(),
        field_manager: query
            .get("fieldManager")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
        field_validation: FieldValidation::parse(query.get("fieldValidation"))
            .unwrap_or(FieldValidation::Warn),
        apply: false,
        include_uninitialized: query.get("includeUninitialized") == Some("true"),
        // The request's sink (see `Server::handle`), so warnings reach the response.
        warnings: extensions
            .get::<admission::Warnings>()
            .cloned()
            .unwrap_or_default(),
        audit_annotations: extensions
            .get::<admission::AuditAnnotations>()
            .cloned()
            .unwrap_or_default(),
    })
}

/// Reads and decodes a create or update body. `expected` is the (apiVersion, kind) of the
/// URL; for built-in kinds (`typed`), a JSON or YAML body that leaves them out gets them
/// from there, as upstream's decoder fills them in (`gvkWithDefaults`). Custom resources
/// must name their kind (upstream's unstructured decoding requires it).
async fn body_value(
    req: Request<crate::http::ReqBody>,
    expected: (&str, &str),
    typed: bool,
) -> Result<(Value, ContentType, HeaderMap), ApiError> {
    let (parts, body) = req.into_parts();
    let ct = content_type(&parts.headers)?;
    let bytes = read_body(body).await?;
    let mut value = match ct {
        ContentType::Json | ContentType::Yaml | ContentType::Protobuf => {
            decode_body(&bytes, ct, Some(expected))?
        }
        other => {
            return Err(ApiError::unsupported_media_type(
                &format!("{other:?}"),
                "application/json, application/yaml",
            ));
        }
    };
    if typed && let Some(m) = value.as_object_mut() {
        let (api_version, kind) = expected;
        let unset = |v: Option<&Value>| match v {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(_) => false,
        };
        if unset(m.get("kind")) {
            m.insert("kind".into(), Value::from(kind));
        }
        // Group and version both missing: the URL's; a group without a version
        // (`apps/`): the URL's version when the group is the URL's.
        let default_group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let group_only = m
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(|v| v.strip_suffix('/'))
            .is_some_and(|g| g == default_group);
        if unset(m.get("apiVersion")) || group_only {
            m.insert("apiVersion".into(), Value::from(api_version));
        }
    }
    Ok((value, ct, parts.headers))
}

fn written_response(
    r: &Resource,
    w: Written,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let accept = negotiate(headers)?;
    let status = if w.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    if accept == crate::http::Accept::Json
        && let Some(json) = w.json
    {
        return Ok(super::encoded_response(
            status,
            json,
            "application/json",
            &w.warnings,
        ));
    }
    object_response(r, status, &w.object, accept, query, &w.warnings)
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn create(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    req: Request<crate::http::ReqBody>,
    query: &Query,
    user: &UserInfo,
) -> Result<Response<Body>, ApiError> {
    let opts = write_options(query, &req, user, "CreateOptions")?;
    // A subresource's body is of the subresource's kind (a TokenRequest for
    // serviceaccounts/token, an Eviction for pods/eviction).
    let (api_version, expected_kind) = match subresource.and_then(|s| r.info.subresource(s)) {
        Some(sub) if sub.group.is_empty() => (sub.version.clone(), sub.kind.clone()),
        Some(sub) => (format!("{}/{}", sub.group, sub.version), sub.kind.clone()),
        None => (r.info.api_version(), r.info.kind.clone()),
    };
    let typed = subresource.is_none()
        && api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind);
    let (body, _, headers) = body_value(req, (&api_version, &expected_kind), typed).await?;
    match subresource {
        Some("binding") => return bind(srv, r, ns, name, body, &opts).await,
        Some("eviction") => return evict(srv, r, ns, name, body, &opts).await,
        Some("token") => {
            let (out, warnings) = srv
                .sa_tokens
                .request(&srv.registry, r, ns.unwrap_or_default(), name, body, &opts)
                .await?;
            let accept = negotiate(&headers)?;
            return object_response(r, StatusCode::CREATED, &out, accept, query, &warnings);
        }
        Some(_) => return Err(ApiError::method_not_supported(r.gr(), "create")),
        None => {}
    }
    if !name.is_empty() {
        return Err(ApiError::method_not_supported(r.gr(), "create"));
    }
    if let Some(v) = crate::registry::virtuals::lookup(&r.info) {
        return create_virtual(srv, r, ns, v, body, &headers, query, &opts).await;
    }
    let mut w = srv.registry.create(r, ns, body, &opts).await?;
    if !opts.include_uninitialized
        && !opts.dry_run
        && api::kinds::initializers::is_uninitialized(&w.object)
    {
        w.object = wait_initialized(r, &w.object).await?;
        // The response is the initialized object, not the bytes first written.
        w.json = None;
    }
    written_response(r, w, &headers, query)
}

/// Waits until the initializers of the object just created have all finished (upstream's
/// `WaitForInitialized`): the initialized object, or the failure an initializer recorded.
/// The request timeout bounds the wait.
async fn wait_initialized(r: &Arc<Resource>, created: &Value) -> Result<Value, ApiError> {
    use crate::registry::{EventType, Meta, WatchMsg};
    let name = api::meta::name(created).unwrap_or_default().to_string();
    let key = r.info.key(api::meta::namespace(created), &name);
    let rv = api::meta::resource_version(created)
        .and_then(|v| v.parse::<i64>().ok())
        .unwrap_or(0);
    let wanted = key.clone();
    let mut events = r.cacher.watch(
        Some(rv),
        Arc::new(move |o: &Meta| o.key() == wanted),
        &key,
        false,
        false,
    );
    let failed = |obj: &Value| {
        api::kinds::initializers::failure(obj).map(|status| {
            let code = status["code"]
                .as_u64()
                .and_then(|c| u16::try_from(c).ok())
                .filter(|c| *c >= 400)
                .unwrap_or(500);
            let mut status = status.clone();
            if let Some(m) = status.as_object_mut() {
                m.insert("kind".into(), json!("Status"));
                m.insert("apiVersion".into(), json!("v1"));
                m.entry("metadata").or_insert_with(|| json!({}));
                m.insert("code".into(), json!(code));
            }
            ApiError::from_status(code, status)
        })
    };
    while let Some(msg) = events.recv().await {
        let WatchMsg::Event(kind, obj) = msg else {
            continue;
        };
        let Some(value) = obj.value() else {
            continue;
        };
        if let Some(e) = failed(&value) {
            return Err(e);
        }
        match kind {
            EventType::Deleted => {
                return Err(ApiError::internal(format!(
                    "object {name} was deleted before its initialization completed"
                )));
            }
            _ if !obj.uninitialized => return Ok(value),
            _ => {}
        }
    }
    Err(ApiError::internal("the watch of the created object ended"))
}

/// A create of a resource that stores nothing: the body is decoded through its type (a
/// body of the wrong shape is a 400, as upstream's decoder), the answer computed. A
/// `TokenReview` whose token named an object the caches did not hold yet is answered
/// again once they have caught up with the store.
#[allow(clippy::too_many_arguments)]
async fn create_virtual(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    v: &dyn crate::registry::virtuals::VirtualResource,
    body: Value,
    headers: &HeaderMap,
    query: &Query,
    opts: &WriteOptions,
) -> Result<Response<Body>, ApiError> {
    if let Some(Err(e)) = api::kinds::decode(&r.info.group, &r.info.version, &r.info.kind, &body) {
        return Err(ApiError::bad_request(e.to_string()));
    }
    let now = srv.registry.now();
    let unseen = AtomicBool::new(false);
    let authenticate_token = |token: &str, audiences: &[String]| {
        srv.review_token(token, audiences).map_err(|e| {
            if matches!(e, Unauthenticated::Unseen(_)) {
                unseen.store(true, Ordering::Relaxed);
            }
            e.reason()
        })
    };
    let ctx = crate::registry::virtuals::Ctx {
        user: &opts.user,
        now: &now,
        namespace: ns.unwrap_or_default(),
        authz: srv.authz.as_ref(),
        authenticate_token: &authenticate_token,
    };
    let mut out = v.create(body.clone(), &ctx)?;
    if unseen.load(Ordering::Relaxed) {
        srv.sa_tokens.catch_up().await;
        out = v.create(body, &ctx)?;
    }
    let accept = negotiate(headers)?;
    object_response(r, StatusCode::CREATED, &out, accept, query, &[])
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn update(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    req: Request<crate::http::ReqBody>,
    query: &Query,
    user: &UserInfo,
) -> Result<Response<Body>, ApiError> {
    let opts = write_options(query, &req, user, "UpdateOptions")?;
    let api_version = r.info.api_version();
    let expected_kind = match subresource.and_then(|s| r.info.subresource(s)) {
        Some(sub) => sub.kind.clone(),
        None => r.info.kind.clone(),
    };
    let typed = subresource.is_none()
        && api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind);
    let (body, _, headers) = body_value(req, (&api_version, &expected_kind), typed).await?;
    match subresource {
        None | Some("status") | Some("finalize") | Some("approval") => {
            let sub = subresource.map(|s| if s == "finalize" { "finalize" } else { s });
            let w = srv.registry.replace(r, ns, name, sub, body, &opts).await?;
            written_response(r, w, &headers, query)
        }
        Some("scale") => {
            let replicas = scale_replicas(&body)?;
            let rv = api::meta::resource_version(&body).map(str::to_string);
            let w = srv
                .registry
                .update_with(r, ns, name, Some("scale"), &opts, |old| {
                    let old = old.ok_or_else(|| ApiError::not_found(r.gr(), name))?;
                    let mut new = old.clone();
                    new["spec"]["replicas"] = json!(replicas);
                    Ok((
                        new,
                        Vec::new(),
                        Precondition {
                            resource_version: rv.clone(),
                            ..Default::default()
                        },
                    ))
                })
                .await?;
            let scale = scale_of(r, &w.object)?;
            Ok(json_value(StatusCode::OK, &scale))
        }
        Some(_) => Err(ApiError::method_not_supported(r.gr(), "update")),
    }
}

fn scale_replicas(scale: &Value) -> Result<i64, ApiError> {
    let replicas = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    if replicas < 0 {
        return Err(ApiError::invalid(
            "autoscaling",
            "Scale",
            api::meta::name(scale).unwrap_or_default(),
            &[FieldError::invalid(
                "spec.replicas",
                replicas,
                "must be greater than or equal to 0",
            )],
        ));
    }
    Ok(replicas)
}

/// The `autoscaling/v1` Scale view of a scalable object.
pub(crate) fn scale_of(r: &Resource, obj: &Value) -> Result<Value, ApiError> {
    let meta = obj.get("metadata").cloned().unwrap_or(json!({}));
    let mut m = serde_json::Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = meta.get(f) {
            m.insert(f.to_string(), v.clone());
        }
    }
    let selector = match obj["spec"]["selector"].as_object() {
        Some(sel) if r.info.kind == "ReplicationController" => {
            let mut pairs: Vec<String> = sel
                .iter()
                .filter_map(|(k, v)| Some(format!("{k}={}", v.as_str()?)))
                .collect();
            pairs.sort();
            pairs.join(",")
        }
        Some(_) => api::selector::LabelSelector::from_label_selector(&obj["spec"]["selector"])
            .map(|s| s.to_string())
            .unwrap_or_default(),
        None => String::new(),
    };
    let mut status = json!({"replicas": obj["status"]["replicas"].as_i64().unwrap_or(0)});
    if !selector.is_empty() {
        status["selector"] = json!(selector);
    }
    Ok(json!({
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": Value::Object(m),
        "spec": {"replicas": obj["spec"]["replicas"].as_i64().unwrap_or(1)},
        "status": status,
    }))
}

/// The schema of a resource's kind, for strategic merge patch and server-side apply.
fn schema_of(r: &Resource) -> Option<(&'static Value, &'static dyn api::schema::SchemaLookup)> {
    let schemas = api::schema::builtin();
    let def = api::schema::definition_for(&r.info.group, &r.info.version, &r.info.kind)?;
    let root = api::schema::SchemaLookup::definition(schemas, def)?;
    Some((root, schemas))
}

fn patch_error(e: patch::PatchError) -> ApiError {
    ApiError::from_status(e.status_code(), e.to_status())
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn patch(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    req: Request<crate::http::ReqBody>,
    query: &Query,
    user: &UserInfo,
) -> Result<Response<Body>, ApiError> {
    // Upstream's order: the patch type (415), the body (413), the options (400, 422), the
    // patch document (400).
    let headers = req.headers().clone();
    let ct = content_type(&headers)?;
    if matches!(
        ct,
        ContentType::Json | ContentType::Yaml | ContentType::Protobuf
    ) {
        return Err(ApiError::unsupported_media_type(
            headers
                .get(header::CONTENT_TYPE)
                .and_then(|v| v.to_str().ok())
                .unwrap_or(""),
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, application/strategic-merge-patch+json",
        ));
    }
    // Custom resources have no strategic merge patch.
    let builtin = api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind);
    if ct == ContentType::StrategicMergePatch && !builtin {
        return Err(ApiError::unsupported_media_type(
            "application/strategic-merge-patch+json",
            "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        ));
    }
    let extensions = req.extensions().clone();
    let bytes = read_body(req.into_body()).await?;
    let force = query.flag("force")?;
    let mut patch_errs = Vec::new();
    if ct == ContentType::ApplyPatch {
        if query.get("fieldManager").is_none_or(str::is_empty) {
            patch_errs.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if query.get("force").is_some() {
        patch_errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    validate_options(query, "PatchOptions", patch_errs)?;
    let mut opts = write_options_unchecked(query, &headers, &extensions, user)?;
    opts.apply = ct == ContentType::ApplyPatch;
    let patch_doc = match ct {
        ContentType::ApplyPatch => decode_body(&bytes, ContentType::Yaml, None)?,
        _ => serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
    };
    let scale = subresource == Some("scale");
    let main_sub = if scale { None } else { subresource };
    let tracked_sub = if scale { Some("scale") } else { subresource };
    let schema = schema_of(r);
    let field_validation = opts.field_validation;
    let registry = Arc::clone(&srv.registry);
    let w = srv
        .registry
        .update_with(r, ns, name, tracked_sub, &opts, |old| {
            let precondition_rv = patch_doc["metadata"]["resourceVersion"]
                .as_str()
                .map(str::to_string);
            let mut pre = Precondition {
                resource_version: precondition_rv,
                ..Default::default()
            };
            let target = match (old, scale) {
                (Some(o), true) => scale_of(r, o)?,
                (Some(o), false) => o.clone(),
                (None, _) if ct == ContentType::ApplyPatch && !scale => {
                    pre.create_allowed = true;
                    Value::Null
                }
                (None, _) => return Err(ApiError::not_found(r.gr(), name)),
            };
            let patched = match ct {
                ContentType::JsonPatch => {
                    patch::json_patch(&target, &patch_doc).map_err(patch_error)?
                }
                ContentType::MergePatch => patch::merge_patch_owned(target, &patch_doc),
                ContentType::StrategicMergePatch => match schema {
                    Some((root, lookup)) => {
                        patch::strategic_merge_patch(&target, &patch_doc, root, lookup)
                            .map_err(patch_error)?
                    }
                    None => patch::merge_patch(&target, &patch_doc),
                },
                ContentType::ApplyPatch => crate::fieldmgr::apply(
                    r,
                    old,
                    &patch_doc,
                    &opts,
                    &crate::fieldmgr::ApplyTarget {
                        name,
                        namespace: ns.unwrap_or(""),
                        subresource: main_sub,
                        force,
                    },
                    &registry,
                )?,
                ContentType::Json | ContentType::Yaml | ContentType::Protobuf => {
                    return Err(ApiError::unsupported_media_type(
                        "application/json",
                        "patch types",
                    ));
                }
            };
            if scale {
                let replicas = scale_replicas(&patched)?;
                let mut new = old.cloned().unwrap_or(Value::Null);
                new["spec"]["replicas"] = json!(replicas);
                return Ok((new, Vec::new(), pre));
            }
            // The patched object goes through decoding like a body would (the fields it
            // shares with the stored object were decoded when that was written).
            let decoded = match old {
                Some(o) => crate::registry::decode_patched(r, o, patched)?,
                None => crate::registry::decode_keeping_initializers(r, &patched)?,
            };
            let warnings = field_validation.unknown_fields(&decoded.unknown_fields, "")?;
            let mut obj = decoded.object;
            if let (Some(o), Some(m)) =
                (old, obj.get_mut("metadata").and_then(Value::as_object_mut))
            {
                // A patch that drops the name or namespace does not move the object.
                for f in ["name", "namespace"] {
                    if let Some(v) = o["metadata"].get(f) {
                        m.entry(f.to_string()).or_insert_with(|| v.clone());
                    }
                }
            }
            r.strategy.default(&r.info, &mut obj);
            Ok((obj, warnings, pre))
        })
        .await?;
    if scale {
        return Ok(json_value(StatusCode::OK, &scale_of(r, &w.object)?));
    }
    written_response(r, w, &headers, query)
}

fn delete_options(body: Option<&Value>, query: &Query) -> Result<DeleteOptions, ApiError> {
    let mut o = DeleteOptions::default();
    if let Some(b) = body {
        if let Some(kind) = b["kind"].as_str()
            && kind != "DeleteOptions"
        {
            return Err(ApiError::bad_request(format!(
                "expected DeleteOptions, got {kind}"
            )));
        }
        o.grace_period_seconds = b["gracePeriodSeconds"].as_i64();
        o.propagation = b["propagationPolicy"].as_str().map(str::to_string);
        if b["orphanDependents"].as_bool() == Some(true) && o.propagation.is_none() {
            o.propagation = Some("Orphan".into());
        }
        o.precondition_uid = b["preconditions"]["uid"].as_str().map(str::to_string);
        o.precondition_rv = b["preconditions"]["resourceVersion"]
            .as_str()
            .map(str::to_string);
    }
    if let Some(g) = query.int("gracePeriodSeconds")? {
        o.grace_period_seconds = Some(g);
    }
    if let Some(p) = query.get("propagationPolicy").filter(|s| !s.is_empty()) {
        o.propagation = Some(p.to_string());
    }
    if query.flag("orphanDependents")? && o.propagation.is_none() {
        o.propagation = Some("Orphan".into());
    }
    Ok(o)
}

async fn optional_body(
    req: Request<crate::http::ReqBody>,
) -> Result<(Option<Value>, HeaderMap), ApiError> {
    let (parts, body) = req.into_parts();
    let bytes = read_body(body).await?;
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok((None, parts.headers));
    }
    let ct = content_type(&parts.headers)?;
    Ok((
        Some(decode_body(
            &bytes,
            ct,
            Some(("meta.k8s.io/v1", "DeleteOptions")),
        )?),
        parts.headers,
    ))
}

#[allow(clippy::too_many_arguments)]
pub(super) async fn delete(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    req: Request<crate::http::ReqBody>,
    query: &Query,
    user: &UserInfo,
) -> Result<Response<Body>, ApiError> {
    let mut wopts = write_options(query, &req, user, "DeleteOptions")?;
    let (body, headers) = optional_body(req).await?;
    if let Some(b) = &body
        && let Some(d) = b["dryRun"].as_array()
        && !d.is_empty()
    {
        wopts.dry_run = true;
    }
    let opts = delete_options(body.as_ref(), query)?;
    // (Only here: as upstream, a deletecollection is not refused by this check.)
    if let Some(why) = r.strategy.delete_forbidden(&r.info, name) {
        return Err(ApiError::forbidden(r.gr(), name, why));
    }
    let (obj, deleted) = srv.registry.delete(r, ns, name, &opts, &wopts).await?;
    // Namespaces answer with the deleted object (upstream's `ReturnDeletedObject`).
    let returns_object = r.info.group.is_empty() && r.info.plural == "namespaces";
    if deleted && !returns_object {
        let status =
            api::status::success_status(name, &r.info.group, &r.info.plural, api::meta::uid(&obj));
        return Ok(json_value(StatusCode::OK, &status));
    }
    let accept = negotiate(&headers)?;
    object_response(r, StatusCode::OK, &obj, accept, query, &[])
}

pub(super) async fn delete_collection(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    req: Request<crate::http::ReqBody>,
    query: &Query,
    user: &UserInfo,
) -> Result<Response<Body>, ApiError> {
    let wopts = write_options(query, &req, user, "DeleteOptions")?;
    let (body, _) = optional_body(req).await?;
    let opts = delete_options(body.as_ref(), query)?;
    let pred = {
        let mut preds = Vec::new();
        if let Some(p) = crate::selectors::label_predicate(query.get("labelSelector"))? {
            preds.push(p);
        }
        if let Some(p) = crate::selectors::field_predicate(
            query.get("fieldSelector"),
            r.strategy.supported_fields(),
        )? {
            preds.push(p);
        }
        crate::selectors::all_of(preds)
    };
    let (items, rv) = r
        .cacher
        .list_current(
            &*pred,
            &r.info.list_prefix(ns),
            std::time::Duration::from_secs(3),
        )
        .await
        .map_err(|e| crate::registry::store_error(r, "", e))?;
    let mut deleted = Vec::new();
    for o in items {
        match srv
            .registry
            .delete(
                r,
                (!o.namespace().is_empty()).then_some(o.namespace()),
                o.name(),
                &opts,
                &wopts,
            )
            .await
        {
            Ok((obj, _)) => deleted.push(obj),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    Ok(json_value(
        StatusCode::OK,
        &json!({
            "kind": r.info.list_kind(),
            "apiVersion": r.info.api_version(),
            "metadata": {"resourceVersion": rv.to_string()},
            "items": deleted,
        }),
    ))
}

/// POST pods/<name>/binding (and the legacy `bindings` resource): assigns a pod to a node.
async fn bind(
    srv: &Arc<Server>,
    pods: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
) -> Result<Response<Body>, ApiError> {
    // Errors of the pod write are conflicts on `pods/binding`, as upstream's `assignPod`.
    let binding_gr = GroupResource {
        group: "",
        resource: "pods/binding",
    };
    let pod_name = if name.is_empty() {
        api::meta::name(&body).unwrap_or_default().to_string()
    } else {
        name.to_string()
    };
    if let Some(n) = api::meta::name(&body)
        && n != pod_name
    {
        return Err(ApiError::bad_request(
            "name in URL does not match name in Binding object",
        ));
    }
    let decoded = api::kinds::decode("", "v1", "Binding", &body)
        .unwrap_or_else(|| {
            Ok(api::kinds::Decoded {
                object: body.clone(),
                unknown_fields: Vec::new(),
            })
        })
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    // Admission sees the Binding, a create of pods/binding (as upstream); the pod write
    // itself goes straight to storage.
    let namespace = ns.unwrap_or_default();
    let write = |object: Value| AdmissionWrite {
        operation: admission::Operation::Create,
        subresource: Some("binding"),
        namespace,
        name: &pod_name,
        object: Some(object),
        old_object: None,
    };
    let binding = srv
        .registry
        .admit(pods, write(decoded.object), opts)
        .await?
        .ok_or_else(|| ApiError::internal("admission removed the object"))?;
    let mut errs = Vec::new();
    let node = binding["target"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let target_kind = binding["target"]["kind"].as_str().unwrap_or_default();
    if !target_kind.is_empty() && target_kind != "Node" {
        errs.push(FieldError::not_supported(
            "target.kind",
            target_kind,
            &["Node", "<empty>"],
        ));
    }
    if node.is_empty() {
        errs.push(FieldError::required("target.name", ""));
    }
    if pod_name.is_empty() {
        errs.push(FieldError::required(
            "metadata.name",
            "name or generateName is required",
        ));
    }
    if !errs.is_empty() {
        return Err(ApiError::invalid("", "Binding", &pod_name, &errs));
    }
    let annotations = binding["metadata"]["annotations"].as_object().cloned();
    let precondition = Precondition {
        resource_version: api::meta::resource_version(&binding)
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        uid: api::meta::uid(&binding)
            .filter(|v| !v.is_empty())
            .map(str::to_string),
        create_allowed: false,
    };
    srv.registry
        .validate_admission(pods, write(binding), opts)
        .await?;
    let now = crate::registry::rfc3339(srv.registry.clock.now_ms());
    let refused = |why: String| ApiError::conflict(binding_gr, &pod_name, &why);
    srv.registry
        .guaranteed_update(pods, ns, &pod_name, &precondition, opts, |pod| {
            if api::meta::deletion_timestamp(pod).is_some() {
                return Err(refused(format!(
                    "pod {pod_name} is being deleted, cannot be assigned to a host"
                )));
            }
            if let Some(existing) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
                return Err(refused(format!(
                    "pod {pod_name} is already assigned to node {existing:?}"
                )));
            }
            if pod["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|g| !g.is_empty())
            {
                return Err(refused(format!(
                    "pod {pod_name} has non-empty .spec.schedulingGates"
                )));
            }
            let Some(spec) = pod.get_mut("spec").and_then(Value::as_object_mut) else {
                return Err(ApiError::internal(format!("pod {pod_name} has no spec")));
            };
            spec.insert("nodeName".into(), json!(node));
            // (An empty map stays absent, as Go's `omitempty` leaves it.)
            if let Some(a) = annotations.as_ref().filter(|a| !a.is_empty()) {
                let m = api::meta::metadata_mut(pod);
                let anns = m.entry("annotations").or_insert_with(|| json!({}));
                if !anns.is_object() {
                    *anns = json!({});
                }
                if let Some(anns) = anns.as_object_mut() {
                    for (k, v) in a {
                        anns.insert(k.clone(), v.clone());
                    }
                }
            }
            set_condition(pod, "PodScheduled", "True", &now);
            Ok(())
        })
        .await?;
    Ok(json_value(
        StatusCode::CREATED,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}

/// Sets a pod condition as upstream's `UpdatePodCondition`: the condition is replaced
/// (reason and message dropped), keeping its transition time when the status is the same.
fn set_condition(pod: &mut Value, kind: &str, status: &str, now: &str) {
    if !pod["status"].is_object() {
        pod["status"] = json!({});
    }
    let conds = pod["status"]
        .as_object_mut()
        .map(|m| m.entry("conditions").or_insert_with(|| json!([])));
    let Some(list) = conds.and_then(Value::as_array_mut) else {
        return;
    };
    let mut cond = json!({
        "type": kind,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": now,
    });
    match list.iter_mut().find(|c| c["type"] == kind) {
        Some(c) => {
            if c["status"] == status {
                cond["lastTransitionTime"] = c["lastTransitionTime"].take();
            }
            *c = cond;
        }
        None => list.push(cond),
    }
}

/// POST pods/<name>/eviction: see [`super::eviction`].
async fn evict(
    srv: &Arc<Server>,
    pods: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    body: Value,
    opts: &WriteOptions,
) -> Result<Response<Body>, ApiError> {
    super::eviction::evict(srv, pods, ns, name, body, opts, |v| {
        delete_options(v, &Query::default())
    })
    .await
}
