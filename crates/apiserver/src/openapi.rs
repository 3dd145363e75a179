//! Serving `/openapi/v2` and `/openapi/v3`: documents built from the served resources and
//! their schemas (rebuilt lazily after CRDs change), with upstream's caching headers.

use std::sync::{Arc, RwLock};

use api::openapi::{OpenApiDocs, V2Encoding};
use api::schema::Schemas;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};

use crate::http::{Body, Query, error_response, full};
use crate::registry::Registry;

/// The OpenAPI endpoints.
#[derive(Default)]
pub struct OpenApi {
    /// The documents and the registry generation they were built for.
    docs: RwLock<Option<(u64, Arc<OpenApiDocs>)>>,
}

fn with_headers(body: bytes::Bytes, content_type: &str, etag: &str) -> Response<Body> {
    let mut r = Response::new(full(body));
    if let Ok(v) = HeaderValue::from_str(content_type) {
        r.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    if let Ok(v) = HeaderValue::from_str(&format!("\"{etag}\"")) {
        r.headers_mut().insert(header::ETAG, v);
    }
    r.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    r
}

fn not_modified(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.split(',').any(|t| t.trim().trim_matches('"') == etag))
}

fn not_acceptable() -> Response<Body> {
    error_response(&api::ApiError::not_acceptable("application/json"))
}

impl OpenApi {
    fn docs(&self, registry: &Registry) -> Arc<OpenApiDocs> {
        let generation = registry.generation();
        if let Ok(guard) = self.docs.read()
            && let Some((g, docs)) = guard.as_ref()
            && *g == generation
        {
            return Arc::clone(docs);
        }
        let resources: Vec<api::catalog::ResourceInfo> = registry
            .all()
            .iter()
            .filter(|r| {
                !r.info.storage_prefix.is_empty()
                    || r.info.plural == "bindings"
                    || crate::registry::virtuals::lookup(&r.info).is_some()
            })
            .map(|r| r.info.clone())
            .collect();
        let schemas = Arc::new(Schemas::with_custom_resources(&registry.custom_schemas()));
        let version = format!(
            "v{}.{}.0",
            crate::handlers::KUBE_MAJOR,
            crate::handlers::KUBE_MINOR
        );
        let docs = Arc::new(OpenApiDocs::new(resources, schemas).with_version(&version));
        if let Ok(mut guard) = self.docs.write() {
            *guard = Some((generation, Arc::clone(&docs)));
        }
        docs
    }

    pub fn serve(
        &self,
        path: &str,
        query: &Query,
        headers: &HeaderMap,
        registry: &Registry,
    ) -> Response<Body> {
        let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok());
        let docs = self.docs(registry);
        if path == "/openapi/v2" {
            let Some((encoding, ct)) = api::openapi::negotiate_v2(accept) else {
                return not_acceptable();
            };
            let doc = docs.v2(encoding);
            if not_modified(headers, &doc.hash) {
                let mut r = Response::new(crate::http::empty());
                *r.status_mut() = StatusCode::NOT_MODIFIED;
                return r;
            }
            let _ = V2Encoding::Json;
            return with_headers(doc.body.clone(), ct, &doc.hash);
        }
        if !api::openapi::accepts_v3_json(accept) {
            return not_acceptable();
        }
        if path == "/openapi/v3" {
            let doc = docs.v3_index();
            return with_headers(doc.body.clone(), "application/json", &doc.hash);
        }
        let Some(rel) = path.strip_prefix("/openapi/v3/") else {
            return error_response(&api::ApiError::path_not_found());
        };
        let Some(doc) = docs.v3_group_version(rel) else {
            return error_response(&api::ApiError::path_not_found());
        };
        match query.get("hash") {
            Some(h) if h != &*doc.hash => {
                // A stale hash: send the client to the current document.
                let mut r = Response::new(crate::http::empty());
                *r.status_mut() = StatusCode::MOVED_PERMANENTLY;
                if let Ok(v) = HeaderValue::from_str(&format!("{path}?hash={}", doc.hash)) {
                    r.headers_mut().insert(header::LOCATION, v);
                }
                r
            }
            Some(_) => {
                let mut r = with_headers(doc.body.clone(), "application/json", &doc.hash);
                r.headers_mut().insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("public, immutable"),
                );
                r
            }
            None => {
                if not_modified(headers, &doc.hash) {
                    let mut r = Response::new(crate::http::empty());
                    *r.status_mut() = StatusCode::NOT_MODIFIED;
                    return r;
                }
                let mut r = with_headers(doc.body.clone(), "application/json", &doc.hash);
                r.headers_mut().insert(
                    header::CACHE_CONTROL,
                    HeaderValue::from_static("no-cache, private"),
                );
                r
            }
        }
    }
}
