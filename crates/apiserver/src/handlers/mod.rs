//! Request handling: authentication, routing and the non-resource endpoints. Resource
//! verbs are in [`read`] and [`write`].

mod connect;
mod eviction;
mod read;
mod write;

use std::sync::Arc;
use std::time::{Duration, Instant};

use api::ApiError;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};

use crate::authn::{Chain, Unauthenticated, UserInfo};
use crate::discovery;
use crate::http::{Body, Query, error_response, json_response, json_value, text_response};
use crate::metrics::Metrics;
use crate::openapi::OpenApi;
use crate::registry::{Registry, Resource};
use crate::requestinfo::RequestInfo;

/// Everything a request handler needs.
pub struct Server {
    pub registry: Arc<Registry>,
    /// The authorizer chain (`system:masters`, then `--authorization-mode`).
    pub authz: Arc<auth::Union>,
    /// The authenticator chain (x509, tokens, basic auth, anonymous).
    pub authn: Chain,
    /// Service-account tokens: verification and `TokenRequest`.
    pub sa_tokens: Arc<crate::serviceaccount::Tokens>,
    /// `host:port` clients reach the server at.
    pub server_address: String,
    pub metrics: Metrics,
    pub openapi: OpenApi,
    /// What the health endpoints check.
    pub health: Arc<crate::health::Health>,
    /// Non-watch requests fail with 504 after this long.
    pub request_timeout: Duration,
    /// Watches without `timeoutSeconds` last between this and twice this.
    pub min_request_timeout: Duration,
    /// The audit log (`--audit-policy-file` and `--audit-log-path`).
    pub audit: Option<Arc<crate::audit::Auditor>>,
    /// The TLS client (with the API server's kubelet client certificate) for
    /// `pods/log|exec|attach|portforward` and `nodes/proxy`.
    pub kubelet_tls: Option<Arc<rustls::ClientConfig>>,
}

/// The audit record of a request in flight (filled once the user is known).
type AuditSlot = std::sync::Mutex<Option<crate::audit::Record>>;

/// The TLS peer of a connection, shared by all of its requests.
#[derive(Debug, Default)]
pub struct Peer {
    pub certs: Vec<CertificateDer<'static>>,
    pub addr: String,
    /// The x509 verdict for `certs`, computed on the connection's first request; a user
    /// comes with the leaf's expiry, checked on every request.
    pub x509: std::sync::OnceLock<Result<(UserInfo, i64), String>>,
}

impl Peer {
    pub fn new(certs: Vec<CertificateDer<'static>>, addr: String) -> Peer {
        Peer {
            certs,
            addr,
            x509: std::sync::OnceLock::new(),
        }
    }
}

/// The upstream version this server speaks.
pub use api::platform::{KUBE_MAJOR, KUBE_MINOR};

pub fn version_info() -> Value {
    json!({
        "major": KUBE_MAJOR,
        "minor": KUBE_MINOR,
        "emulationMajor": KUBE_MAJOR,
        "emulationMinor": KUBE_MINOR,
        "minCompatibilityMajor": KUBE_MAJOR,
        "minCompatibilityMinor": "32",
        "gitVersion": api::platform::git_version(),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z",
        "goVersion": "rust",
        "compiler": "rustc",
        "platform": api::platform::platform(),
    })
}

/// Paths anyone may read without credentials (as upstream's `system:public-info-viewer`).
fn is_public(path: &str) -> bool {
    matches!(
        path,
        "/healthz" | "/livez" | "/readyz" | "/version" | "/version/"
    ) || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

impl Server {
    /// Handles one request (never fails: errors become `Status` responses), recording it
    /// in the audit log when there is one.
    pub async fn handle(
        self: Arc<Self>,
        req: Request<crate::http::ReqBody>,
        peer: Arc<Peer>,
    ) -> Response<Body> {
        let Some(auditor) = self.audit.clone() else {
            return self.handle_request(req, peer, None).await;
        };
        let slot = AuditSlot::default();
        let is_watch = req.uri().query().is_some_and(|q| {
            q.split('&')
                .any(|kv| kv == "watch=true" || kv == "watch=1" || kv == "watch")
        }) || req.uri().path().contains("/watch/");
        let resp = self.handle_request(req, peer, Some(&slot)).await;
        let record = match slot.lock() {
            Ok(mut g) => g.take(),
            Err(p) => p.into_inner().take(),
        };
        let Some(record) = record else {
            return resp;
        };
        let code = resp.status().as_u16();
        if is_watch && code < 300 {
            auditor.response_started(&record, code);
            let (parts, body) = resp.into_parts();
            let body = crate::http::AuditedBody::new(body, move || {
                auditor.complete(record, code, None);
            });
            return Response::from_parts(parts, http_body_util::BodyExt::boxed_unsync(body));
        }
        if code >= 400 || record.level >= crate::audit::Level::RequestResponse {
            let (parts, body) = resp.into_parts();
            let bytes = http_body_util::BodyExt::collect(body)
                .await
                .map(|c| c.to_bytes())
                .unwrap_or_default();
            let object = serde_json::from_slice::<Value>(&bytes).ok();
            auditor.complete(record, code, object);
            return Response::from_parts(parts, crate::http::full(bytes));
        }
        auditor.complete(record, code, None);
        resp
    }

    async fn handle_request(
        self: Arc<Self>,
        mut req: Request<crate::http::ReqBody>,
        peer: Arc<Peer>,
        audit: Option<&AuditSlot>,
    ) -> Response<Body> {
        let started = Instant::now();
        let path = req.uri().path().to_string();
        let query = Query::parse(req.uri().query());
        let info = RequestInfo::parse(req.method(), &path, &query.0);
        let apply = req.method() == Method::PATCH
            && matches!(
                crate::http::content_type(req.headers()),
                Ok(crate::http::ContentType::ApplyPatch)
            );
        let verb = crate::metrics::reported_verb(&info, apply);
        let mut outcome = self.authn.authenticate(req.headers(), &peer);
        if matches!(outcome, Err(Unauthenticated::Unseen(_))) {
            self.sa_tokens.catch_up().await;
            outcome = self.authn.authenticate(req.headers(), &peer);
        }
        let user = match outcome {
            Ok(u) => {
                // Upstream's filter: credentials are not for the handlers.
                req.headers_mut().remove(header::AUTHORIZATION);
                u
            }
            Err(Unauthenticated::NoCredentials) if is_public(&path) => {
                tracing::trace!("anonymous request to a public path");
                UserInfo::anonymous()
            }
            Err(e) => {
                let reason = e.reason();
                tracing::debug!(%path, %reason, peer = %peer.addr, "Unable to authenticate the request");
                self.audit_start(audit, &req, &info, &UserInfo::default(), None, &peer);
                let r = error_response(&ApiError::unauthorized());
                self.metrics
                    .observe(&info, verb, r.status().as_u16(), started.elapsed());
                return r;
            }
        };
        let requestor = user.clone();
        let user = match self.impersonate(&mut req, user) {
            Ok(u) => u,
            Err(e) => {
                self.audit_start(audit, &req, &info, &requestor, None, &peer);
                let r = error_response(&e);
                self.metrics
                    .observe(&info, verb, r.status().as_u16(), started.elapsed());
                return r;
            }
        };
        let impersonator = (requestor != user).then_some(&requestor);
        self.audit_start(audit, &req, &info, &user, impersonator, &peer);
        let decision = self.forbidden(&info, &user);
        if let Some(slot) = audit
            && let Ok(mut g) = slot.lock()
            && let Some(record) = g.as_mut()
        {
            crate::audit::Auditor::authorized(record, decision.is_none(), "");
        }
        if let Some(slot) = audit
            && decision.is_none()
            && matches!(*req.method(), Method::POST | Method::PUT | Method::PATCH)
        {
            let wants_body = slot
                .lock()
                .ok()
                .and_then(|g| g.as_ref().map(|r| r.level >= crate::audit::Level::Request))
                .unwrap_or(false);
            if wants_body {
                let (parts, body) = req.into_parts();
                let bytes = match crate::http::read_body(body).await {
                    Ok(b) => b,
                    Err(e) => return error_response(&e),
                };
                // Decoded as the handler will (JSON, YAML or protobuf).
                let object = crate::http::content_type(&parts.headers)
                    .ok()
                    .and_then(|ct| crate::http::decode_body(&bytes, ct, None).ok())
                    .or_else(|| serde_json::from_slice::<Value>(&bytes).ok());
                if let (Some(object), Some(auditor)) = (object, self.audit.as_ref())
                    && let Ok(mut g) = slot.lock()
                    && let Some(record) = g.as_mut()
                {
                    auditor.request_object(record, object);
                }
                req = Request::from_parts(parts, crate::http::bytes_body(bytes));
            }
        }
        if let Some(r) = decision {
            self.metrics
                .observe(&info, verb, r.status().as_u16(), started.elapsed());
            return r;
        }
        let span = tracing::info_span!(
            "request",
            verb = %info.verb,
            path = %path,
            user = %user.name,
            resource = %info.resource,
            namespace = %info.namespace,
            name = %info.name,
        );
        // Upstream's long-running requests: watches and the connect subresources stream
        // for as long as the client wants.
        let is_watch = info.verb == "watch"
            || (info.resource == "pods"
                && matches!(
                    info.subresource.as_str(),
                    "log" | "exec" | "attach" | "portforward" | "proxy"
                ))
            || (info.resource == "nodes" && info.subresource == "proxy");
        // The request's warnings: admission plugins add to them, every answer carries them.
        let warnings = admission::Warnings::default();
        req.extensions_mut().insert(warnings.clone());
        let audit_annotations = admission::AuditAnnotations::default();
        req.extensions_mut().insert(audit_annotations.clone());
        let fut = tracing::Instrument::instrument(
            self.clone().route(req, info.clone(), query, user),
            span.clone(),
        );
        let resp = if is_watch {
            fut.await
        } else {
            match tokio::time::timeout(self.request_timeout, fut).await {
                Ok(r) => r,
                Err(_) => error_response(&ApiError::timeout(
                    "the request did not complete within the allowed duration",
                )),
            }
        };
        let mut resp = resp;
        crate::http::add_warnings(&mut resp, &warnings.take());
        let annotations = audit_annotations.take();
        if let Some(slot) = audit
            && !annotations.is_empty()
            && let Ok(mut g) = slot.lock()
            && let Some(record) = g.as_mut()
        {
            crate::audit::Auditor::annotate(record, annotations);
        }
        let code = resp.status().as_u16();
        self.metrics.observe(&info, verb, code, started.elapsed());
        tracing::debug!(
            parent: &span,
            code,
            elapsed_ms = started.elapsed().as_millis() as u64,
            "handled"
        );
        resp
    }

    /// Starts the audit record of a request, when auditing.
    fn audit_start(
        &self,
        slot: Option<&AuditSlot>,
        req: &Request<crate::http::ReqBody>,
        info: &RequestInfo,
        user: &UserInfo,
        impersonator: Option<&UserInfo>,
        peer: &Peer,
    ) {
        let (Some(slot), Some(auditor)) = (slot, self.audit.as_ref()) else {
            return;
        };
        let uri = req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_string(), |p| p.to_string());
        let agent = req
            .headers()
            .get(header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let ip = peer
            .addr
            .rsplit_once(':')
            .map_or(peer.addr.as_str(), |(h, _)| h)
            .trim_matches(|c| c == '[' || c == ']');
        let record = auditor.start(info, &uri, user, impersonator, ip, agent);
        if let Ok(mut g) = slot.lock() {
            *g = record;
        }
    }

    /// Upstream's `WithImpersonation` filter: `Impersonate-User`, `-Uid`, `-Group` and
    /// `-Extra-<key>` headers make the request act as another user, each part checked with
    /// the `impersonate` verb on `users`, `serviceaccounts`, `uids`, `groups` or
    /// `userextras/<key>`. The headers are removed once honoured.
    fn impersonate(
        &self,
        req: &mut Request<crate::http::ReqBody>,
        requestor: UserInfo,
    ) -> Result<UserInfo, ApiError> {
        use auth::Authorizer;
        const USER: &str = "impersonate-user";
        const UID: &str = "impersonate-uid";
        const GROUP: &str = "impersonate-group";
        const EXTRA: &str = "impersonate-extra-";
        let headers = req.headers();
        let value = |v: &HeaderValue| String::from_utf8_lossy(v.as_bytes()).into_owned();
        let requested_user = headers.get(USER).map(value).unwrap_or_default();
        let requested_uid = headers.get(UID).map(value).unwrap_or_default();
        let groups_requested: Vec<String> = headers.get_all(GROUP).iter().map(value).collect();
        let mut extras: Vec<(String, String)> = Vec::new();
        for (name, v) in headers {
            if let Some(key) = name.as_str().strip_prefix(EXTRA) {
                let key = percent_decode(key).to_lowercase();
                extras.push((key, value(v)));
            }
        }
        if requested_user.is_empty() {
            if !groups_requested.is_empty() || !extras.is_empty() || !requested_uid.is_empty() {
                return Err(ApiError::internal(
                    "requested impersonation of groups, extra or uid without impersonating a user",
                ));
            }
            return Ok(requestor);
        }
        // (resource, namespace, name, subresource) of each thing to impersonate.
        let mut checks: Vec<(&str, String, String, String)> = Vec::new();
        let mut name = requested_user.clone();
        let mut groups: Vec<String> = Vec::new();
        let sa = requested_user
            .strip_prefix(auth::attributes::SERVICE_ACCOUNT_USERNAME_PREFIX)
            .and_then(|rest| rest.split_once(':'))
            .filter(|(ns, n)| !ns.is_empty() && !n.is_empty() && !n.contains(':'));
        match sa {
            Some((ns, n)) => {
                checks.push((
                    "serviceaccounts",
                    ns.to_string(),
                    n.to_string(),
                    String::new(),
                ));
                name = auth::attributes::service_account_username(ns, n);
                if groups_requested.is_empty() {
                    groups = auth::UserInfo::service_account(ns, n).groups;
                }
            }
            None => checks.push((
                "users",
                String::new(),
                requested_user.clone(),
                String::new(),
            )),
        }
        for g in &groups_requested {
            checks.push(("groups", String::new(), g.clone(), String::new()));
            groups.push(g.clone());
        }
        let mut extra = std::collections::BTreeMap::<String, Vec<String>>::new();
        for (k, v) in &extras {
            checks.push(("userextras", String::new(), v.clone(), k.clone()));
            extra.entry(k.clone()).or_default().push(v.clone());
        }
        if !requested_uid.is_empty() {
            checks.push(("uids", String::new(), requested_uid.clone(), String::new()));
        }
        for (resource, namespace, obj_name, subresource) in checks {
            let group = if resource == "userextras" || resource == "uids" {
                "authentication.k8s.io"
            } else {
                ""
            };
            let attributes =
                auth::Attributes::resource(requestor.clone(), "impersonate", group, resource)
                    .in_namespace(&namespace)
                    .named(&obj_name)
                    .with_subresource(&subresource);
            let (decision, reason) = self.authz.authorize(&attributes);
            if decision != auth::Decision::Allow {
                tracing::debug!(user = %requestor.name, %resource, name = %obj_name, "impersonation forbidden");
                return Err(crate::authz::forbidden(&attributes, &reason));
            }
        }
        if name != auth::attributes::ANONYMOUS {
            if !groups.iter().any(|g| {
                g == auth::attributes::ALL_AUTHENTICATED
                    || g == auth::attributes::ALL_UNAUTHENTICATED
            }) {
                groups.push(auth::attributes::ALL_AUTHENTICATED.into());
            }
        } else if !groups
            .iter()
            .any(|g| g == auth::attributes::ALL_UNAUTHENTICATED)
        {
            groups.push(auth::attributes::ALL_UNAUTHENTICATED.into());
        }
        tracing::debug!(requestor = %requestor.name, as_user = %name, "impersonating");
        let h = req.headers_mut();
        h.remove(USER);
        h.remove(UID);
        h.remove(GROUP);
        let extra_headers: Vec<http::HeaderName> = h
            .keys()
            .filter(|k| k.as_str().starts_with(EXTRA))
            .cloned()
            .collect();
        for k in extra_headers {
            h.remove(k);
        }
        Ok(UserInfo {
            name,
            uid: requested_uid,
            groups,
            extra,
        })
    }

    /// Authenticates a bearer token as a request carrying it would be, for `audiences`
    /// (none: the API's), as `TokenReview` does: the user and the audiences the token is
    /// valid for (a service-account token's own among those asked; every asked one for
    /// authenticators without audiences). A rejection after a lookup in the caches found
    /// nothing is [`Unauthenticated::Unseen`].
    pub fn review_token(
        &self,
        token: &str,
        audiences: &[String],
    ) -> Result<(UserInfo, Vec<String>), Unauthenticated> {
        let review = self.sa_tokens.review_token(token, audiences);
        match review.verdict {
            crate::serviceaccount::Verdict::NotOurs => {}
            crate::serviceaccount::Verdict::User(mut user) => {
                if !user.groups.iter().any(|g| g == "system:authenticated") {
                    user.groups.push("system:authenticated".into());
                }
                return Ok((user, review.audiences));
            }
            crate::serviceaccount::Verdict::Rejected(why) if review.unseen => {
                return Err(Unauthenticated::Unseen(why));
            }
            crate::serviceaccount::Verdict::Rejected(why) => {
                return Err(Unauthenticated::Rejected(why));
            }
        }
        let user = self.authenticate_token(token)?;
        Ok((user, audiences.to_vec()))
    }

    /// Authenticates a bearer token as a request carrying it would be.
    fn authenticate_token(&self, token: &str) -> Result<UserInfo, Unauthenticated> {
        let mut headers = http::HeaderMap::new();
        let value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| Unauthenticated::Rejected("invalid bearer token".to_string()))?;
        headers.insert(header::AUTHORIZATION, value);
        match self.authn.authenticate(&headers, &Peer::default()) {
            Ok(u) if !u.is_anonymous() => Ok(u),
            Ok(_) | Err(Unauthenticated::NoCredentials) => {
                Err(Unauthenticated::Rejected("invalid bearer token".into()))
            }
            Err(e) => Err(e),
        }
    }

    /// Upstream's `WithAuthorization` filter: anything but `Allow` is a 403 Forbidden
    /// response.
    fn forbidden(&self, info: &RequestInfo, user: &UserInfo) -> Option<Response<Body>> {
        use auth::Authorizer;
        let attributes = crate::authz::attributes(info, user);
        let (decision, reason) = self.authz.authorize(&attributes);
        if decision == auth::Decision::Allow {
            return None;
        }
        tracing::debug!(
            user = %user.name,
            verb = %info.verb,
            path = %info.path,
            %reason,
            "Forbidden"
        );
        Some(error_response(&crate::authz::forbidden(
            &attributes,
            &reason,
        )))
    }

    async fn route(
        self: Arc<Self>,
        req: Request<crate::http::ReqBody>,
        info: RequestInfo,
        query: Query,
        user: UserInfo,
    ) -> Response<Body> {
        if info.is_resource_request {
            return match self.resource(req, &info, &query, &user).await {
                Ok(r) => r,
                Err(e) => error_response(&e),
            };
        }
        if req.method() != Method::GET && req.method() != Method::HEAD {
            return error_response(&ApiError::new(
                405,
                api::status::Reason::MethodNotAllowed,
                "the server does not allow this method on the requested resource",
            ));
        }
        let accept = req
            .headers()
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        let path = info.path.trim_end_matches('/');
        if let Some((name, one)) = api::health::route(&info.path, &["healthz", "livez", "readyz"]) {
            return self.health(name, one, &query).await;
        }
        match path {
            "/version" => json_value(StatusCode::OK, &version_info()),
            "/metrics" | "/metrics/slis" => {
                let text = if path == "/metrics" {
                    self.metrics.render(&self.registry)
                } else {
                    api::health::render_slis()
                };
                let mut r = Response::new(crate::http::full(text));
                r.headers_mut().insert(
                    header::CONTENT_TYPE,
                    HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
                );
                r
            }
            "/api" => self.discovery_response(&accept, true),
            "/apis" => self.discovery_response(&accept, false),
            "" => json_value(StatusCode::OK, &self.root_paths()),
            p if p.starts_with("/openapi/") => {
                self.openapi.serve(p, &query, req.headers(), &self.registry)
            }
            p => self.group_discovery(p),
        }
    }

    /// A health endpoint's answer (`/readyz`), or one check's (`/readyz/etcd`).
    async fn health(&self, name: &str, one: Option<&str>, query: &Query) -> Response<Body> {
        let checks = crate::health::Health::checks(name);
        let store = self.registry.store.as_ref();
        let q =
            api::health::Query::from_pairs(query.0.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        let Some(answer) = api::health::respond(name, &checks, one, &q, |i| {
            self.health.run(&checks[i].name, store)
        })
        .await
        else {
            return text_response(StatusCode::NOT_FOUND, "404 page not found\n");
        };
        if let Some(log) = &answer.log {
            tracing::info!(endpoint = name, failed = %log.trim_end(), "health check failed");
        }
        let code = StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        text_response(code, answer.body)
    }

    fn root_paths(&self) -> Value {
        let mut paths = vec![
            "/api".to_string(),
            "/api/v1".to_string(),
            "/apis".to_string(),
            "/healthz".to_string(),
            "/livez".to_string(),
            "/metrics".to_string(),
            "/metrics/slis".to_string(),
            "/openapi/v2".to_string(),
            "/openapi/v3".to_string(),
            "/readyz".to_string(),
            "/version".to_string(),
        ];
        for r in self
            .registry
            .all()
            .iter()
            .filter(|r| !r.info.group.is_empty())
        {
            paths.push(format!("/apis/{}", r.info.group));
            paths.push(format!("/apis/{}/{}", r.info.group, r.info.version));
        }
        paths.sort();
        paths.dedup();
        json!({"paths": paths})
    }

    fn discovery_response(&self, accept: &str, legacy: bool) -> Response<Body> {
        let all = self.registry.all();
        let infos: Vec<&api::catalog::ResourceInfo> = all.iter().map(|r| &r.info).collect();
        if let Some(which) = discovery::wants_aggregated(accept) {
            let doc = discovery::aggregated(&infos, legacy, which);
            let mut r = json_response(StatusCode::OK, serde_json::to_vec(&doc).unwrap_or_default());
            if let Ok(v) = HeaderValue::from_str(which.content_type()) {
                r.headers_mut().insert(header::CONTENT_TYPE, v);
            }
            r.headers_mut()
                .insert(header::VARY, HeaderValue::from_static("Accept"));
            return r;
        }
        let doc = if legacy {
            discovery::api_versions(&self.server_address)
        } else {
            discovery::api_group_list(&infos)
        };
        json_value(StatusCode::OK, &doc)
    }

    fn group_discovery(&self, path: &str) -> Response<Body> {
        let all = self.registry.all();
        let infos: Vec<&api::catalog::ResourceInfo> = all.iter().map(|r| &r.info).collect();
        let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
        let doc = match parts.as_slice() {
            ["api", version] => discovery::api_resource_list(&infos, "", version),
            ["apis", group] => discovery::api_group(&infos, group),
            ["apis", group, version] => discovery::api_resource_list(&infos, group, version),
            _ => None,
        };
        match doc {
            Some(d) => json_value(StatusCode::OK, &d),
            None => error_response(&ApiError::path_not_found()),
        }
    }

    /// Dispatches a resource request by verb.
    async fn resource(
        self: &Arc<Self>,
        req: Request<crate::http::ReqBody>,
        info: &RequestInfo,
        query: &Query,
        user: &UserInfo,
    ) -> Result<Response<Body>, ApiError> {
        // The legacy bindings resource: POST /api/v1/namespaces/<ns>/bindings.
        let (resource_name, name, subresource) = if info.api_group.is_empty()
            && info.resource == "bindings"
            && info.verb == "create"
            && info.name.is_empty()
        {
            ("pods", String::new(), "binding".to_string())
        } else {
            (
                info.resource.as_str(),
                info.name.clone(),
                info.subresource.clone(),
            )
        };
        let r = self
            .registry
            .lookup(&info.api_group, &info.api_version, resource_name)
            .filter(|r| {
                !r.info.storage_prefix.is_empty()
                    || crate::registry::virtuals::lookup(&r.info).is_some()
            })
            .ok_or_else(ApiError::path_not_found)?;
        if !subresource.is_empty() && r.info.subresource(&subresource).is_none() {
            return Err(ApiError::path_not_found());
        }
        // Routes upstream never installs (PUT or PATCH on a collection, POST on an object):
        // go-restful answers 405 before any handler reads the body.
        let no_route = match info.verb.as_str() {
            "update" | "patch" => name.is_empty(),
            "create" => !name.is_empty() && subresource.is_empty(),
            _ => false,
        };
        if no_route {
            return Err(ApiError::new(
                405,
                api::status::Reason::MethodNotAllowed,
                "the server does not allow this method on the requested resource",
            ));
        }
        if subresource.is_empty()
            && !r.info.has_verb(&info.verb)
            && !(info.verb == "get" && r.info.has_verb("get"))
        {
            return Err(ApiError::method_not_supported(r.gr(), &info.verb));
        }
        if r.info.namespaced
            && info.namespace.is_empty()
            && !matches!(info.verb.as_str(), "list" | "watch")
        {
            return Err(ApiError::path_not_found());
        }
        if !r.info.namespaced && !info.namespace.is_empty() && info.resource != "namespaces" {
            return Err(ApiError::path_not_found());
        }
        let ns =
            (r.info.namespaced && !info.namespace.is_empty()).then_some(info.namespace.as_str());
        let sub = (!subresource.is_empty()).then_some(subresource.as_str());
        if let Some(s) = sub
            && r.info.group.is_empty()
            && connect::is_connect(&r.info.plural, s)
        {
            return connect::connect(self, &r, ns, &name, s, req, query).await;
        }
        match info.verb.as_str() {
            "get" => read::get(self, &r, ns, &name, sub, req.headers(), query).await,
            "list" => read::list(self, &r, ns, req.headers(), query).await,
            "watch" => read::watch(self, &r, ns, req.headers(), query).await,
            "create" => write::create(self, &r, ns, &name, sub, req, query, user).await,
            "update" => write::update(self, &r, ns, &name, sub, req, query, user).await,
            "patch" => write::patch(self, &r, ns, &name, sub, req, query, user).await,
            "delete" => write::delete(self, &r, ns, &name, req, query, user).await,
            "deletecollection" => write::delete_collection(self, &r, ns, req, query, user).await,
            other => Err(ApiError::method_not_supported(r.gr(), other)),
        }
    }
}

/// Upstream's `PartialObjectMetadata` of an object: its metadata, nothing else.
pub(crate) fn partial_object_metadata(obj: &Value) -> Value {
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": obj.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Responds with an object in the negotiated form (JSON, YAML, Table, metadata).
pub(crate) fn object_response(
    r: &Resource,
    status: StatusCode,
    obj: &Value,
    accept: crate::http::Accept,
    query: &Query,
    warnings: &[String],
) -> Result<Response<Body>, ApiError> {
    use crate::http::Accept;
    let converted: Value;
    let body: &Value = match accept {
        Accept::Table => {
            converted = read::table(r, &[obj], query, None, false)?;
            &converted
        }
        Accept::PartialMetadata => {
            converted = partial_object_metadata(obj);
            &converted
        }
        _ => obj,
    };
    let (bytes, ct) = crate::http::encode(body, accept);
    Ok(encoded_response(status, bytes, ct, warnings))
}

/// An encoded object of content type `ct` as a response, with the request's warnings.
pub(crate) fn encoded_response(
    status: StatusCode,
    bytes: Bytes,
    ct: &'static str,
    warnings: &[String],
) -> Response<Body> {
    let mut resp = crate::http::with_content_type(json_response(status, bytes), ct);
    crate::http::add_warnings(&mut resp, warnings);
    resp
}

/// Raw JSON bytes as a response.
pub(crate) fn bytes_response(status: StatusCode, bytes: Bytes) -> Response<Body> {
    json_response(status, bytes)
}

/// `url.PathUnescape` of an extra key (`%2F` → `/`); invalid escapes are kept as they are.
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let (Some(h), Some(l)) = (
                (bytes[i + 1] as char).to_digit(16),
                (bytes[i + 2] as char).to_digit(16),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
