//! get, list and watch.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use api::ApiError;
use base64::Engine;
use bytes::{Bytes, BytesMut};
use http::{HeaderMap, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use store::ListOptions;

use super::{Server, object_response};
use crate::http::{Accept, Body, Query, negotiate};
use crate::registry::cache::{WatchMsg, make_object};
use crate::registry::{CachedObject, EventType, Meta, Predicate, Resource, convert};
use crate::selectors;

/// How long a read waits for the watch cache to reach a requested revision.
const CACHE_WAIT: Duration = Duration::from_secs(3);

pub(super) async fn get(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    name: &str,
    subresource: Option<&str>,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let accept = negotiate(headers)?;
    let obj = srv.registry.get(r, ns, name).await?;
    if api::kinds::initializers::is_uninitialized(&obj) && !include_uninitialized(query) {
        return Err(ApiError::not_found(r.gr(), name));
    }
    let obj = match subresource {
        None | Some("status") => obj,
        Some("scale") => crate::handlers::write::scale_of(r, &obj)?,
        Some(_) => return Err(ApiError::method_not_supported(r.gr(), "get")),
    };
    object_response(r, StatusCode::OK, &obj, accept, query, &[])
}

/// `includeUninitialized=true`: objects whose initializers have not finished are visible.
fn include_uninitialized(query: &Query) -> bool {
    query.get("includeUninitialized") == Some("true")
}

/// The selectors of a list or watch as one predicate (uninitialized objects hidden unless
/// the request includes them).
fn predicate(r: &Resource, query: &Query) -> Result<Predicate, ApiError> {
    let mut preds: Vec<Predicate> = Vec::new();
    if !include_uninitialized(query) {
        preds.push(Arc::new(|o: &Meta| !o.uninitialized));
    }
    if let Some(p) = selectors::label_predicate(query.get("labelSelector"))? {
        preds.push(p);
    }
    if let Some(p) =
        selectors::field_predicate(query.get("fieldSelector"), r.strategy.supported_fields())?
    {
        preds.push(p);
    }
    Ok(selectors::all_of(preds))
}

/// A continue token, as upstream encodes it.
#[derive(serde::Serialize, serde::Deserialize)]
struct ContinueToken {
    v: String,
    rv: i64,
    start: String,
}

fn encode_continue(rv: i64, start_key_rel: &str) -> String {
    let token = ContinueToken {
        v: "meta.k8s.io/v1".into(),
        rv,
        start: format!("{start_key_rel}\u{0}"),
    };
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .encode(serde_json::to_vec(&token).unwrap_or_default())
}

fn decode_continue(token: &str) -> Result<(i64, String), ApiError> {
    let bad = || {
        ApiError::bad_request(
            "continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
        )
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token.trim_end_matches('='))
        .or_else(|_| base64::engine::general_purpose::URL_SAFE.decode(token))
        .map_err(|_| bad())?;
    let t: ContinueToken = serde_json::from_slice(&raw).map_err(|_| bad())?;
    if t.v != "meta.k8s.io/v1" || t.rv <= 0 || t.start.contains("..") || t.start.starts_with('/') {
        return Err(bad());
    }
    Ok((t.rv, t.start.trim_end_matches('\u{0}').to_string()))
}

/// What a list returns.
struct Listed {
    items: Vec<Arc<CachedObject>>,
    rv: i64,
    continue_token: Option<String>,
    remaining: Option<i64>,
}

fn parse_rv(v: &str) -> Result<i64, ApiError> {
    v.parse::<i64>()
        .ok()
        .filter(|n| *n >= 0)
        .ok_or_else(|| ApiError::bad_request(format!("invalid resource version: {v:?}")))
}

/// Where a store list starts and how much it reads.
struct Page {
    start_after: Option<String>,
    /// `0`: the latest revision.
    revision: i64,
    /// `0`: everything.
    limit: usize,
}

/// Reads a page (or all) from the store at a fixed revision, filtering as it goes.
async fn list_from_store(
    srv: &Server,
    r: &Resource,
    under: &str,
    page_req: Page,
    pred: &Predicate,
    filtered: bool,
) -> Result<Listed, ApiError> {
    let Page {
        start_after,
        revision,
        limit,
    } = page_req;
    let fields = Arc::clone(&r.strategy);
    let fields_fn = move |v: &Value| fields.fields(v);
    let mut items = Vec::new();
    let mut cursor = start_after;
    let mut rv = revision;
    let page = if limit == 0 { 0 } else { limit.max(100) };
    loop {
        let res = srv
            .registry
            .store
            .list(ListOptions {
                prefix: under.to_string(),
                start_after: cursor.clone(),
                limit: page,
                revision: rv,
            })
            .await
            .map_err(|e| match e {
                store::StoreError::Compacted { .. } => {
                    ApiError::gone("The resourceVersion for the provided list is too old.")
                }
                other => crate::registry::store_error(r, "", other),
            })?;
        rv = res.revision;
        let mut last_examined = None;
        let mut examined = 0usize;
        for kv in &res.kvs {
            last_examined = Some(kv.key.clone());
            examined += 1;
            let obj = make_object(&kv.key, &kv.value, kv.mod_revision, &fields_fn);
            if pred(&obj) {
                items.push(obj);
                if limit > 0 && items.len() == limit {
                    break;
                }
            }
        }
        let full = limit > 0 && items.len() == limit;
        let examined_all_of_page =
            last_examined.as_deref() == res.kvs.last().map(|kv| kv.key.as_str());
        let more = res.more || !examined_all_of_page;
        if full {
            let continue_token = if more {
                last_examined.as_deref().map(|k| {
                    encode_continue(
                        rv,
                        k.strip_prefix(&format!("{}/", r.info.storage_prefix))
                            .unwrap_or(k),
                    )
                })
            } else {
                None
            };
            // As upstream: the keys after this page in the list's snapshot, only when no
            // selector filters them (a count of unfiltered keys would mislead).
            let remaining = if continue_token.is_some() && !filtered {
                let unread = i64::try_from(res.kvs.len() - examined).unwrap_or(0);
                Some(unread + res.remaining)
            } else {
                None
            };
            return Ok(Listed {
                items,
                rv,
                continue_token,
                remaining: remaining.filter(|n| *n > 0),
            });
        }
        if !res.more {
            return Ok(Listed {
                items,
                rv,
                continue_token: None,
                remaining: None,
            });
        }
        cursor = last_examined;
    }
}

pub(super) async fn list(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let accept = negotiate(headers)?;
    let pred = predicate(r, query)?;
    let filtered = query.get("labelSelector").is_some_and(|s| !s.is_empty())
        || query.get("fieldSelector").is_some_and(|s| !s.is_empty());
    let under = r.info.list_prefix(ns);
    let limit = usize::try_from(query.int("limit")?.unwrap_or(0).max(0)).unwrap_or(0);
    // Decoded (and refused when not an integer) as upstream decodes all of ListOptions.
    query.int("timeoutSeconds")?;
    let rv = query.get("resourceVersion").filter(|s| !s.is_empty());
    let rv_match = query.get("resourceVersionMatch").filter(|s| !s.is_empty());
    match rv_match {
        None | Some("NotOlderThan") | Some("Exact") => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
            )));
        }
    }
    if rv_match.is_some() && rv.is_none() {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            &[api::FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            )],
        ));
    }
    let listed = if let Some(token) = query.get("continue").filter(|s| !s.is_empty()) {
        if rv.is_some() {
            return Err(ApiError::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        let (at, start) = decode_continue(token)?;
        let start_key = format!("{}/{start}", r.info.storage_prefix);
        let page = Page {
            start_after: Some(start_key),
            revision: at,
            limit,
        };
        match list_from_store(srv, r, &under, page, &pred, filtered).await {
            Err(e) if e.code == 410 => {
                return Err(ApiError::gone(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                ));
            }
            other => other?,
        }
    } else if rv_match == Some("Exact") {
        let at = parse_rv(rv.unwrap_or("0"))?;
        if at == 0 {
            return Err(ApiError::bad_request(
                "resourceVersionMatch \"Exact\" is forbidden for resourceVersion \"0\"",
            ));
        }
        list_from_store(
            srv,
            r,
            &under,
            Page {
                start_after: None,
                revision: at,
                limit,
            },
            &pred,
            filtered,
        )
        .await?
    } else if (limit > 0 && rv.is_none()) || !r.cacher.is_cached() {
        // Uncached resources (Events) always list from the store, at its latest revision
        // (never older than any resourceVersion a client saw).
        list_from_store(
            srv,
            r,
            &under,
            Page {
                start_after: None,
                revision: 0,
                limit,
            },
            &pred,
            filtered,
        )
        .await?
    } else {
        let wanted = match rv {
            None => {
                srv.registry_sync(r).await?;
                0
            }
            Some(v) => parse_rv(v)?,
        };
        if wanted > 0 && !r.cacher.wait_for(wanted, CACHE_WAIT).await {
            return Err(crate::registry::store_error(
                r,
                "",
                store::StoreError::FutureRevision {
                    requested: wanted,
                    current: r.cacher.revision(),
                },
            ));
        }
        if wanted == 0 && rv.is_some() && !r.cacher.wait_for(1, CACHE_WAIT).await {
            return Err(ApiError::unavailable("the watch cache is not ready"));
        }
        let (items, rv) = r.cacher.list(&*pred, &under);
        Listed {
            items,
            rv,
            continue_token: None,
            remaining: None,
        }
    };
    list_response(r, listed, accept, query)
}

impl Server {
    /// A consistent read: the cache caught up with the store's current revision.
    async fn registry_sync(&self, r: &Resource) -> Result<i64, ApiError> {
        r.cacher
            .sync(CACHE_WAIT)
            .await
            .map_err(|e| crate::registry::store_error(r, "", e))
    }
}

fn list_meta(listed: &Listed) -> Value {
    let mut meta = json!({"resourceVersion": listed.rv.to_string()});
    if let Some(c) = &listed.continue_token {
        meta["continue"] = json!(c);
    }
    if let Some(n) = listed.remaining {
        meta["remainingItemCount"] = json!(n);
    }
    meta
}

fn list_response(
    r: &Resource,
    listed: Listed,
    accept: Accept,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let meta = list_meta(&listed);
    let needs_values =
        matches!(accept, Accept::Table | Accept::Yaml) || convert::needs_conversion(&r.info);
    if !needs_values {
        // Splice the cached bytes: no parsing, no re-serialization.
        let mut out = BytesMut::with_capacity(
            listed.items.iter().map(|o| o.body.len() + 1).sum::<usize>() + 256,
        );
        let (kind, api_version) = match accept {
            Accept::PartialMetadata => {
                ("PartialObjectMetadataList".into(), "meta.k8s.io/v1".into())
            }
            _ => (r.info.list_kind(), r.info.api_version()),
        };
        out.extend_from_slice(
            format!(
                "{{\"kind\":\"{kind}\",\"apiVersion\":\"{api_version}\",\"metadata\":{meta},\"items\":["
            )
            .as_bytes(),
        );
        for (i, o) in listed.items.iter().enumerate() {
            if i > 0 {
                out.extend_from_slice(b",");
            }
            if accept == Accept::PartialMetadata {
                partial_metadata(&o.json(), &mut out);
            } else {
                out.extend_from_slice(&o.json());
            }
        }
        out.extend_from_slice(b"]}");
        return Ok(super::bytes_response(StatusCode::OK, out.freeze()));
    }
    let values: Vec<Value> = listed
        .items
        .iter()
        .filter_map(|o| o.value())
        .map(|v| convert::from_storage(&r.info, v))
        .collect();
    let body = match accept {
        Accept::Table => {
            let refs: Vec<&Value> = values.iter().collect();
            let mut t = table(r, &refs, query, Some(meta), false)?;
            if t.get("metadata").is_none() {
                t["metadata"] = json!({});
            }
            t
        }
        Accept::PartialMetadata => json!({
            "kind": "PartialObjectMetadataList",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": meta,
            "items": values.iter().map(super::partial_object_metadata).collect::<Vec<_>>(),
        }),
        _ => json!({
            "kind": r.info.list_kind(),
            "apiVersion": r.info.api_version(),
            "metadata": meta,
            "items": values,
        }),
    };
    let (bytes, ct) = crate::http::encode(&body, accept);
    Ok(crate::http::with_content_type(
        super::bytes_response(StatusCode::OK, bytes),
        ct,
    ))
}

/// A `meta.k8s.io/v1` Table of objects.
pub(crate) fn table(
    r: &Resource,
    items: &[&Value],
    query: &Query,
    list_meta: Option<Value>,
    no_headers: bool,
) -> Result<Value, ApiError> {
    let include = printers::IncludeObject::from_query(query.get("includeObject"))
        .map_err(|e| ApiError::bad_request(e.to_string()))?;
    let options = printers::TableOptions {
        include_object: include,
        no_headers,
        version: printers::TableVersion::V1,
    };
    let now = api::k8s::jiff::Timestamp::now();
    let mut t = match &r.columns {
        Some(columns) => printers::custom_table(columns, items, &options, now),
        None if printers::has_printer(&r.info) => printers::to_table(&r.info, items, &options, now),
        None => printers::default_table(items, &options, now),
    };
    if let Some(m) = list_meta {
        t["metadata"] = m;
    }
    Ok(t)
}

/// A watch sends the messages queued for it together, up to about this many bytes.
const COALESCE_BYTES: usize = 128 << 10;

/// The ERROR event of a failed watch.
fn error_event(e: &ApiError) -> Bytes {
    let mut line =
        serde_json::to_vec(&json!({"type": "ERROR", "object": e.to_status()})).unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

fn bookmark_event(r: &Resource, rv: i64, initial_end: bool) -> Bytes {
    let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let mut line = serde_json::to_vec(&json!({
        "type": "BOOKMARK",
        "object": {"kind": r.info.kind, "apiVersion": r.info.api_version(), "metadata": meta},
    }))
    .unwrap_or_default();
    line.push(b'\n');
    Bytes::from(line)
}

/// Appends the `PartialObjectMetadata` of an object in its stored JSON form (as
/// [`super::partial_object_metadata`] of the decoded object): its `metadata` cut out as it
/// is, the rest of the object skipped without being decoded (metadata-only informers,
/// such as the garbage collector's, watch every resource).
fn partial_metadata(json: &[u8], out: &mut BytesMut) {
    #[derive(serde::Deserialize)]
    struct MetadataOnly<'a> {
        #[serde(borrow)]
        metadata: Option<&'a serde_json::value::RawValue>,
    }
    let metadata = serde_json::from_slice::<MetadataOnly<'_>>(json)
        .ok()
        .and_then(|m| m.metadata)
        .map_or("{}", |m| m.get());
    out.extend_from_slice(
        b"{\"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":",
    );
    out.extend_from_slice(metadata.as_bytes());
    out.extend_from_slice(b"}");
}

/// Encodes one event in the negotiated form.
fn encode_event(
    r: &Resource,
    kind: EventType,
    obj: &Arc<CachedObject>,
    accept: Accept,
    query: &Query,
    first: &mut bool,
) -> Result<Bytes, ApiError> {
    let stored_form = !convert::needs_conversion(&r.info);
    if stored_form && matches!(accept, Accept::Json | Accept::PartialMetadata) {
        let json = obj.shared_json();
        let mut out = BytesMut::with_capacity(json.len() + 32);
        out.extend_from_slice(format!("{{\"type\":\"{}\",\"object\":", kind.as_str()).as_bytes());
        if accept == Accept::Json {
            out.extend_from_slice(&json);
        } else {
            partial_metadata(&json, &mut out);
        }
        out.extend_from_slice(b"}\n");
        return Ok(out.freeze());
    }
    let value = convert::from_storage(&r.info, obj.value().unwrap_or(Value::Null));
    let object = match accept {
        Accept::Table => {
            let t = table(
                r,
                &[&value],
                query,
                Some(json!({"resourceVersion": obj.rv.to_string()})),
                !*first,
            )?;
            *first = false;
            t
        }
        Accept::PartialMetadata => super::partial_object_metadata(&value),
        _ => value,
    };
    let mut line =
        serde_json::to_vec(&json!({"type": kind.as_str(), "object": object})).unwrap_or_default();
    line.push(b'\n');
    Ok(Bytes::from(line))
}

pub(super) async fn watch(
    srv: &Arc<Server>,
    r: &Arc<Resource>,
    ns: Option<&str>,
    headers: &HeaderMap,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let accept = negotiate(headers)?;
    if accept == Accept::Yaml {
        return Err(ApiError::not_acceptable("application/json"));
    }
    let pred = predicate(r, query)?;
    let under = r.info.list_prefix(ns);
    let bookmarks = query.flag("allowWatchBookmarks")?;
    let send_initial = query.flag("sendInitialEvents")?;
    let rv = query.get("resourceVersion").filter(|s| !s.is_empty());
    if send_initial {
        if query.get("resourceVersionMatch") != Some("NotOlderThan") || !bookmarks {
            return Err(ApiError::invalid(
                "meta.k8s.io",
                "ListOptions",
                "",
                &[api::FieldError::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled and resourceVersionMatch is NotOlderThan and allowWatchBookmarks is true",
                )],
            ));
        }
    } else if query
        .get("resourceVersionMatch")
        .is_some_and(|m| !m.is_empty())
    {
        return Err(ApiError::invalid(
            "meta.k8s.io",
            "ListOptions",
            "",
            &[api::FieldError::forbidden(
                "resourceVersionMatch",
                "resourceVersionMatch is forbidden for watch",
            )],
        ));
    }
    let timeout = match query.int("timeoutSeconds")? {
        Some(t) if t > 0 => Duration::from_secs(u64::try_from(t).unwrap_or(0)),
        _ => {
            let base = srv.min_request_timeout.as_secs().max(1);
            let jitter = u64::from(uuid::Uuid::new_v4().as_bytes()[0]) * base / 256;
            Duration::from_secs(base + jitter)
        }
    };
    let from = match rv {
        None => {
            srv.registry_sync(r).await?;
            None
        }
        Some("0") => {
            if !r.cacher.wait_for(1, CACHE_WAIT).await {
                return Err(ApiError::unavailable("the watch cache is not ready"));
            }
            None
        }
        Some(v) => {
            let n = parse_rv(v)?;
            if !r.cacher.wait_for(n, CACHE_WAIT).await {
                return Err(crate::registry::store_error(
                    r,
                    "",
                    store::StoreError::FutureRevision {
                        requested: n,
                        current: r.cacher.revision(),
                    },
                ));
            }
            if send_initial { None } else { Some(n) }
        }
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Result<Frame<Bytes>, Infallible>>(64);
    let mut events = r.cacher.watch(from, pred, &under, bookmarks, send_initial);
    let r = Arc::clone(r);
    let query = query.clone();
    srv.metrics.watch_started(&r.info);
    let srv = Arc::clone(srv);
    tokio::spawn(async move {
        let deadline = tokio::time::Instant::now() + timeout;
        let mut first = true;
        loop {
            let msg = tokio::select! {
                m = events.recv() => m,
                _ = tokio::time::sleep_until(deadline) => None,
                _ = tx.closed() => None,
            };
            let Some(msg) = msg else { break };
            // Messages already queued go out as one frame (under load, fewer HTTP/2 frames,
            // TLS records and writes); a watch stream is read as JSON lines either way.
            let mut lines: Vec<Bytes> = Vec::new();
            let mut size = 0;
            let mut next = Some(msg);
            let mut ended = false;
            while let Some(msg) = next.take() {
                let line = match msg {
                    WatchMsg::Event(kind, obj) => {
                        match encode_event(&r, kind, &obj, accept, &query, &mut first) {
                            Ok(b) => b,
                            Err(e) => error_event(&e),
                        }
                    }
                    WatchMsg::Bookmark(rv) => bookmark_event(&r, rv, false),
                    WatchMsg::InitialEventsEnd(rv) => bookmark_event(&r, rv, true),
                    WatchMsg::Error(e) => {
                        ended = true;
                        error_event(&e)
                    }
                };
                size += line.len();
                lines.push(line);
                if !ended && size < COALESCE_BYTES {
                    next = events.try_recv().ok();
                }
            }
            let frame = match lines.len() {
                1 => lines.pop().unwrap_or_default(),
                _ => Bytes::from(lines.concat()),
            };
            if tx.send(Ok(Frame::data(frame))).await.is_err() || ended {
                break;
            }
        }
        srv.metrics.watch_ended(&r.info);
    });
    let body: Body =
        StreamBody::new(tokio_stream::wrappers::ReceiverStream::new(rx)).boxed_unsync();
    let mut resp = Response::new(body);
    resp.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    resp.headers_mut().insert(
        http::header::CACHE_CONTROL,
        http::HeaderValue::from_static("no-cache, private"),
    );
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn continue_tokens() {
        let t = encode_continue(42, "ns/name");
        assert_eq!(decode_continue(&t).unwrap(), (42, "ns/name".to_string()));
        assert_eq!(decode_continue("garbage!").unwrap_err().code, 400);
        let evil = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(br#"{"v":"meta.k8s.io/v1","rv":1,"start":"../../secrets/x"}"#);
        assert_eq!(decode_continue(&evil).unwrap_err().code, 400);
    }
}
