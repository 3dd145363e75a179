//! Secure serving for the components, as upstream's delegated authentication and
//! authorization (`k8s.io/apiserver/pkg/authentication/authenticatorfactory`,
//! `authorization/authorizerfactory`): TLS with a self-signed serving certificate unless
//! the component is given one; a caller authenticates with a client certificate of the
//! cluster's client CA, else a bearer token checked with a `TokenReview`, else is
//! `system:anonymous`; a request is authorized with a `SubjectAccessReview`, except the
//! paths and groups always allowed. Verdicts are cached as upstream's defaults (tokens
//! 2 min; authorizations 5 min allowed, 30 s denied).
//!
//! The kubelet API (10250) is built on these pieces; [`serve`] is the control-plane
//! components' own endpoint: `/healthz` (and `/livez`, `/readyz` for the scheduler) for
//! everyone, `/metrics` for whom the API server authorizes (`rkube controller-manager` on
//! 10257, `rkube scheduler` on 10259).

use std::collections::HashMap;
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use api::status::{ApiError, Reason};
use auth::attributes::{ALL_UNAUTHENTICATED, ANONYMOUS, SYSTEM_PRIVILEGED_GROUP};
use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;
use rustls::ServerConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;

use crate::Error;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl User {
    /// A caller without credentials (upstream's anonymous authenticator).
    pub fn anonymous() -> User {
        User {
            name: ANONYMOUS.into(),
            uid: String::new(),
            groups: vec![ALL_UNAUTHENTICATED.into()],
        }
    }
}

/// The caller's identity from a verified client certificate: CN and organizations.
pub fn user_from_cert(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(User {
        name,
        uid: String::new(),
        groups,
    })
}

/// The bearer token of a request's `Authorization` header.
pub fn bearer<B>(req: &Request<B>) -> Option<String> {
    let v = req
        .headers()
        .get(http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = v.split_once(' ')?;
    (scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty())
        .then(|| token.trim().to_string())
}

/// What a request asks to do, as a `SubjectAccessReview` puts it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Attributes {
    /// A core (`v1`) resource's subresource of one object (the kubelet API:
    /// `nodes/<subresource>` of its node).
    Resource {
        verb: &'static str,
        resource: &'static str,
        subresource: &'static str,
        name: String,
    },
    /// A path outside the resources (`/metrics`), with the request's method lower-cased
    /// as the verb.
    NonResource { verb: String, path: String },
}

type DecisionKey = (User, Attributes);

/// A `TokenReview`'s verdict: the user, `None` when the token is not authenticated, an
/// error when the review says why it is not (an expired token) or could not be made.
pub type TokenVerdict = Result<Option<User>, String>;

/// Token and authorization reviews through the API server, with caches.
pub struct Reviewer {
    /// Makes the `TokenReview`s.
    authn: kube::Client,
    /// Makes the `SubjectAccessReview`s.
    authz: kube::Client,
    tokens: Mutex<HashMap<String, (Instant, TokenVerdict)>>,
    decisions: Mutex<HashMap<DecisionKey, (Instant, bool)>>,
}

const TOKEN_TTL: Duration = Duration::from_secs(120);
const ALLOWED_TTL: Duration = Duration::from_secs(300);
const DENIED_TTL: Duration = Duration::from_secs(30);
/// A cache is emptied when it grows past this many entries.
const CACHE_LIMIT: usize = 10_000;

impl Reviewer {
    /// Reviews made by one client.
    pub fn new(client: kube::Client) -> Reviewer {
        Reviewer::with_clients(client.clone(), client)
    }

    /// Token reviews by `authn`, authorization reviews by `authz` (upstream's
    /// `--authentication-kubeconfig` and `--authorization-kubeconfig`).
    pub fn with_clients(authn: kube::Client, authz: kube::Client) -> Reviewer {
        Reviewer {
            authn,
            authz,
            tokens: Mutex::new(HashMap::new()),
            decisions: Mutex::new(HashMap::new()),
        }
    }

    /// Who a bearer token is.
    pub async fn token(&self, token: &str) -> TokenVerdict {
        if let Ok(cache) = self.tokens.lock()
            && let Some((at, user)) = cache.get(token)
            && at.elapsed() < TOKEN_TTL
        {
            return user.clone();
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let api: kube::Api<TokenReview> = kube::Api::all(self.authn.clone());
        let user = match api.create(&PostParams::default(), &review).await {
            Ok(r) => match r.status {
                Some(s) if s.authenticated == Some(true) => Ok(s.user.map(|u| User {
                    name: u.username.unwrap_or_default(),
                    uid: u.uid.unwrap_or_default(),
                    groups: u.groups.unwrap_or_default(),
                })),
                Some(s) => match s.error.filter(|e| !e.is_empty()) {
                    Some(e) => Err(e),
                    None => Ok(None),
                },
                None => Ok(None),
            },
            Err(e) => {
                tracing::warn!(error = %e, "TokenReview failed");
                return Err(e.to_string());
            }
        };
        if let Ok(mut cache) = self.tokens.lock() {
            if cache.len() > CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(token.to_string(), (Instant::now(), user.clone()));
        }
        user
    }

    /// Whether the API server lets `user` do `attrs`.
    pub async fn authorize(&self, user: &User, attrs: &Attributes) -> bool {
        let key = (user.clone(), attrs.clone());
        if let Ok(cache) = self.decisions.lock()
            && let Some((at, allowed)) = cache.get(&key)
            && at.elapsed() < if *allowed { ALLOWED_TTL } else { DENIED_TTL }
        {
            return *allowed;
        }
        let (resource_attributes, non_resource_attributes) = match attrs {
            Attributes::Resource {
                verb,
                resource,
                subresource,
                name,
            } => (
                Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    resource: Some(resource.to_string()),
                    subresource: Some(subresource.to_string()),
                    name: Some(name.clone()),
                    version: Some("v1".into()),
                    ..Default::default()
                }),
                None,
            ),
            Attributes::NonResource { verb, path } => (
                None,
                Some(NonResourceAttributes {
                    verb: Some(verb.clone()),
                    path: Some(path.clone()),
                }),
            ),
        };
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                resource_attributes,
                non_resource_attributes,
                ..Default::default()
            },
            ..Default::default()
        };
        let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.authz.clone());
        let allowed = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.is_some_and(|s| s.allowed),
            Err(e) => {
                tracing::warn!(error = %e, "SubjectAccessReview failed");
                return false;
            }
        };
        if let Ok(mut cache) = self.decisions.lock() {
            if cache.len() > CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, (Instant::now(), allowed));
        }
        allowed
    }
}

/// A self-signed serving certificate and its key (PEM) for `names` and `ips`, valid for
/// a year, its common name `cn` (upstream's `<host>@<timestamp>` style is the caller's).
pub fn self_signed(names: &[String], ips: &[IpAddr], cn: &str) -> Result<(String, String), Error> {
    let serving = |e: rcgen::Error| Error::Serving(format!("serving certificate: {e}"));
    let mut params = rcgen::CertificateParams::new(names.to_vec()).map_err(serving)?;
    params
        .subject_alt_names
        .extend(ips.iter().map(|ip| rcgen::SanType::IpAddress(*ip)));
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn.to_string());
    let now = std::time::SystemTime::now();
    params.not_before = (now - Duration::from_secs(60)).into();
    params.not_after = (now + Duration::from_secs(365 * 24 * 3600)).into();
    let keypair = rcgen::KeyPair::generate().map_err(serving)?;
    let signed = params.self_signed(&keypair).map_err(serving)?;
    Ok((signed.pem(), keypair.serialize_pem()))
}

/// The TLS configuration: the serving certificate (PEM); client certificates of
/// `client_ca` (PEM) are verified when offered, and optional (tokens and anonymous
/// callers come without one). `alpn`: the protocols offered.
pub fn tls_config(
    cert: &[u8],
    key: &[u8],
    client_ca: Option<&[u8]>,
    alpn: &[&[u8]],
) -> Result<Arc<ServerConfig>, Error> {
    let tls = |e: String| Error::Serving(format!("TLS: {e}"));
    let certs = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| tls(format!("serving certificate: {e}")))?;
    if certs.is_empty() {
        return Err(tls("serving certificate: no PEM certificate".into()));
    }
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|e| tls(format!("serving key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| tls(e.to_string()))?;
    let builder = match client_ca {
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in CertificateDer::pem_slice_iter(ca) {
                let c = c.map_err(|e| tls(format!("client CA: {e}")))?;
                roots.add(c).map_err(|e| tls(format!("client CA: {e}")))?;
            }
            if roots.is_empty() {
                return Err(tls("client CA: no PEM certificate".into()));
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .allow_unauthenticated()
            .build()
            .map_err(|e| tls(format!("client CA: {e}")))?;
            builder.with_client_cert_verifier(verifier)
        }
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| tls(e.to_string()))?;
    cfg.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
    Ok(Arc::new(cfg))
}

/// The paths anyone may read (upstream's `--authorization-always-allow-paths` default).
pub const ALWAYS_ALLOW_PATHS: &[&str] = &["/healthz", "/readyz", "/livez"];
/// The groups allowed everything (`--authorization-always-allow-groups`).
pub const ALWAYS_ALLOW_GROUPS: &[&str] = &[SYSTEM_PRIVILEGED_GROUP];

/// What a control-plane component serves.
#[derive(Clone)]
pub struct Endpoints {
    /// The component's metrics in the Prometheus text format (`/metrics`).
    pub metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// `/healthz`'s checks.
    pub healthz: Checks,
    /// `/livez`'s and `/readyz`'s when served (the scheduler serves all three, the
    /// controller manager `/healthz` only, as upstream's).
    pub livez_readyz: Option<(Checks, Checks)>,
    /// `/configz`'s document: the component's configuration under its name, as
    /// upstream's `configz` package serves it (`{"componentconfig": {...}}`); `None`:
    /// not served.
    pub configz: Option<Arc<serde_json::Value>>,
}

/// The `/configz` document of a component serving `config` under `name`.
pub fn configz(name: &str, config: serde_json::Value) -> Arc<serde_json::Value> {
    let mut doc = serde_json::Map::new();
    doc.insert(name.to_string(), config);
    Arc::new(serde_json::Value::Object(doc))
}

/// A named health check, run each time its endpoint is read.
#[derive(Clone)]
pub struct Probe {
    pub check: api::health::Check,
    pub run: Arc<dyn Fn() -> Result<(), String> + Send + Sync>,
}

impl Probe {
    pub fn new(
        name: impl Into<String>,
        run: impl Fn() -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        Probe {
            check: api::health::Check::named(name),
            run: Arc::new(run),
        }
    }

    /// A check that always passes: it tells what runs (upstream's controller manager
    /// lists each started controller so).
    pub fn ping(name: impl Into<String>) -> Self {
        Probe::new(name, || Ok(()))
    }

    /// The `shutdown` readiness check: fails once `stopping` is set.
    pub fn shutdown(stopping: Arc<std::sync::atomic::AtomicBool>) -> Self {
        Probe::new(api::health::SHUTDOWN, move || {
            if stopping.load(std::sync::atomic::Ordering::SeqCst) {
                Err("process is shutting down".into())
            } else {
                Ok(())
            }
        })
    }

    /// The `leaderElection` check.
    pub fn leader_election(health: crate::leaderelection::LeaderHealth) -> Self {
        Probe::new(api::health::LEADER_ELECTION, move || health.check())
    }
}

/// An endpoint's checks; more may be added while it serves (the controller manager adds
/// each controller's once it leads). None: `ping` alone, as upstream's.
#[derive(Clone, Default)]
pub struct Checks(Arc<Mutex<Vec<Probe>>>);

impl Checks {
    pub fn new(probes: impl IntoIterator<Item = Probe>) -> Self {
        Checks(Arc::new(Mutex::new(probes.into_iter().collect())))
    }

    /// Adds `probe`, unless one of its name is there.
    pub fn add(&self, probe: Probe) {
        let mut probes = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if !probes.iter().any(|p| p.check.name == probe.check.name) {
            probes.push(probe);
        }
    }

    fn snapshot(&self) -> Vec<Probe> {
        let probes = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        if probes.is_empty() {
            vec![Probe::ping(api::health::PING)]
        } else {
            probes
        }
    }
}

/// A response body: whole, or streamed (the kubelet's logs).
pub type Body = http_body_util::combinators::UnsyncBoxBody<Bytes, Infallible>;

/// The TLS configuration a server takes each new connection's from: fixed
/// ([`fixed_tls`]), or replaced while serving (a client CA read once the API server
/// answers, as upstream's dynamic CA from a ConfigMap).
pub type TlsSource = tokio::sync::watch::Receiver<Arc<ServerConfig>>;

/// A [`TlsSource`] that never changes.
pub fn fixed_tls(tls: Arc<ServerConfig>) -> TlsSource {
    tokio::sync::watch::channel(tls).1
}

/// Accepts TLS connections on `listener` until `stop` completes and answers each request
/// with `handle(request, the client certificate's user, peer)`; HTTP/1.1 upgrades (the
/// kubelet's streams) are allowed.
pub async fn serve_tls<F, Fut>(
    listener: tokio::net::TcpListener,
    tls: TlsSource,
    stop: impl std::future::Future<Output = ()>,
    handle: F,
) where
    F: Fn(Request<Incoming>, Option<User>, SocketAddr) -> Fut + Clone + Send + Sync + 'static,
    Fut: std::future::Future<Output = Response<Body>> + Send + 'static,
{
    let mut stop = std::pin::pin!(stop);
    loop {
        let (tcp, addr) = tokio::select! {
            a = listener.accept() => match a {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => return,
        };
        let acceptor = TlsAcceptor::from(Arc::clone(&tls.borrow()));
        let handle = handle.clone();
        tokio::spawn(async move {
            let Ok(Ok(tls)) =
                tokio::time::timeout(Duration::from_secs(10), acceptor.accept(tcp)).await
            else {
                return;
            };
            let cert_user = tls
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|c| c.first())
                .and_then(|c| user_from_cert(c.as_ref()));
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let answer = handle(req, cert_user.clone(), addr);
                async move { Ok::<_, Infallible>(answer.await) }
            });
            let builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
            if let Err(e) = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), svc)
                .await
            {
                tracing::debug!(%addr, error = %e, "connection ended");
            }
        });
    }
}

/// Serves a control-plane component's `endpoints` on `listener` until `stop` completes,
/// each request authenticated and authorized through `reviewer`.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: TlsSource,
    reviewer: Arc<Reviewer>,
    endpoints: Endpoints,
    stop: impl std::future::Future<Output = ()>,
) {
    use tracing::Instrument as _;
    serve_tls(listener, tls, stop, move |req, cert_user, addr| {
        let reviewer = Arc::clone(&reviewer);
        let endpoints = endpoints.clone();
        let span = tracing::debug_span!(
            "component_api",
            method = %req.method(),
            path = %req.uri().path(),
            peer = %addr
        );
        async move { handle(&reviewer, &endpoints, cert_user, &req).await }.instrument(span)
    })
    .await;
}

fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: impl Into<Bytes>,
) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static(content_type),
    );
    r.headers_mut().insert(
        "x-content-type-options",
        http::HeaderValue::from_static("nosniff"),
    );
    r
}

/// An upstream `Status` error.
fn status(error: &ApiError) -> Response<Body> {
    let code = StatusCode::from_u16(error.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    respond(code, "application/json", error.to_status().to_string())
}

async fn handle<B>(
    reviewer: &Reviewer,
    endpoints: &Endpoints,
    cert_user: Option<User>,
    req: &Request<B>,
) -> Response<Body> {
    let path = req.uri().path();
    let user = match (cert_user, bearer(req)) {
        (Some(u), _) => u,
        (None, Some(token)) => match reviewer.token(&token).await {
            Ok(Some(u)) => u,
            // Not a token anyone knows, without an error: anonymous (upstream's
            // webhook authenticator answers "not authenticated", and the chain ends in
            // the anonymous authenticator).
            Ok(None) => User::anonymous(),
            // A rejected token (the review's error) is not anonymous, as upstream.
            Err(_) => return status(&ApiError::unauthorized()),
        },
        (None, None) => User::anonymous(),
    };
    let verb = req.method().as_str().to_ascii_lowercase();
    let allowed = ALWAYS_ALLOW_PATHS.contains(&path)
        || user
            .groups
            .iter()
            .any(|g| ALWAYS_ALLOW_GROUPS.contains(&g.as_str()))
        || reviewer
            .authorize(
                &user,
                &Attributes::NonResource {
                    verb: verb.clone(),
                    path: path.to_string(),
                },
            )
            .await;
    if !allowed {
        // As the API server's own refusal of a path (upstream's `ForbiddenStatusError`).
        return status(&ApiError::new(
            403,
            Reason::Forbidden,
            format!(
                "forbidden: User {:?} cannot {verb} path {path:?}",
                user.name
            ),
        ));
    }
    const TEXT: &str = "text/plain; charset=utf-8";
    if path == "/metrics" || path == "/metrics/slis" {
        let text = if path == "/metrics" {
            (endpoints.metrics)()
        } else {
            api::health::render_slis()
        };
        return respond(
            StatusCode::OK,
            "text/plain; version=0.0.4; charset=utf-8",
            text,
        );
    }
    if path == "/configz"
        && let Some(doc) = &endpoints.configz
    {
        return respond(StatusCode::OK, "application/json", doc.to_string());
    }
    match health(endpoints, path, req.uri().query().unwrap_or("")).await {
        Some(answer) => {
            let code =
                StatusCode::from_u16(answer.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            respond(code, TEXT, answer.body)
        }
        None => respond(StatusCode::NOT_FOUND, TEXT, "404 page not found\n"),
    }
}

/// The answer of a health endpoint (`/healthz`, or one check as `/healthz/<name>`);
/// `None` for a path that is none. Failures are logged with their reasons.
async fn health(endpoints: &Endpoints, path: &str, query: &str) -> Option<api::health::Answer> {
    let served: &[&str] = if endpoints.livez_readyz.is_some() {
        &["healthz", "livez", "readyz"]
    } else {
        &["healthz"]
    };
    let (name, one) = api::health::route(path, served)?;
    let checks = match (&endpoints.livez_readyz, name) {
        (Some((livez, _)), "livez") => livez,
        (Some((_, readyz)), "readyz") => readyz,
        _ => &endpoints.healthz,
    }
    .snapshot();
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let query = api::health::Query::from_pairs(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())));
    let list: Vec<api::health::Check> = checks.iter().map(|p| p.check.clone()).collect();
    let answer = api::health::respond(name, &list, one, &query, |i| {
        std::future::ready((checks[i].run)())
    })
    .await?;
    if let Some(log) = &answer.log {
        tracing::info!(endpoint = name, failed = %log.trim_end(), "health check failed");
    }
    Some(answer)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn a_self_signed_certificate_serves_and_bad_pem_is_a_clear_error() {
        let (cert, key) = self_signed(
            &["localhost".into()],
            &[IpAddr::from([127, 0, 0, 1])],
            "localhost@1",
        )
        .unwrap();
        let cfg = tls_config(
            cert.as_bytes(),
            key.as_bytes(),
            Some(cert.as_bytes()),
            &[b"h2"],
        )
        .unwrap();
        assert_eq!(cfg.alpn_protocols, vec![b"h2".to_vec()]);
        let err = tls_config(b"not a certificate", key.as_bytes(), None, &[]).unwrap_err();
        assert!(
            err.to_string().starts_with("cannot serve: TLS: serving"),
            "{err}"
        );
        assert_eq!(
            err.to_string(),
            "cannot serve: TLS: serving certificate: no PEM certificate"
        );
        let err = tls_config(cert.as_bytes(), b"", None, &[]).unwrap_err();
        assert!(err.to_string().contains("serving key"), "{err}");
        let err = tls_config(cert.as_bytes(), key.as_bytes(), Some(b"nothing"), &[]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "cannot serve: TLS: client CA: no PEM certificate"
        );
    }

    #[test]
    fn bearer_tokens_and_users_from_certificates() {
        let req = |auth: Option<&str>, uri: &str| {
            let mut b = Request::builder().uri(uri);
            if let Some(a) = auth {
                b = b.header("authorization", a);
            }
            b.body(()).unwrap()
        };
        assert_eq!(bearer(&req(Some("Bearer abc "), "/")), Some("abc".into()));
        assert_eq!(bearer(&req(Some("bearer abc"), "/")), Some("abc".into()));
        assert_eq!(bearer(&req(Some("Basic YTpi"), "/")), None);
        assert_eq!(bearer(&req(Some("Bearer  "), "/")), None);
        assert_eq!(bearer(&req(None, "/")), None);
        let user = user_from_cert(
            &CertificateDer::from_pem_slice(
                self_signed(&["x".into()], &[], "system:kube-scheduler")
                    .unwrap()
                    .0
                    .as_bytes(),
            )
            .unwrap(),
        )
        .unwrap();
        assert_eq!(user.name, "system:kube-scheduler");
    }

    #[tokio::test]
    async fn health_endpoints_run_their_checks_each_also_alone() {
        let failing = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let f = Arc::clone(&failing);
        let readyz = Checks::new([
            Probe::ping(api::health::SHUTDOWN),
            Probe::new("sched-handler-sync", move || {
                if f.load(std::sync::atomic::Ordering::SeqCst) {
                    Err("handlers are not fully synchronized".into())
                } else {
                    Ok(())
                }
            }),
        ]);
        let endpoints = Endpoints {
            metrics: Arc::new(String::new),
            healthz: Checks::default(),
            livez_readyz: Some((Checks::default(), readyz)),
            configz: None,
        };
        let get = |path: &'static str, query: &'static str| {
            let endpoints = endpoints.clone();
            async move {
                health(&endpoints, path, query)
                    .await
                    .map(|a| (a.status, a.body))
            }
        };
        assert_eq!(get("/healthz", "").await, Some((200, "ok".into())));
        assert_eq!(
            get("/healthz", "verbose").await,
            Some((200, "[+]ping ok\nhealthz check passed\n".into()))
        );
        assert_eq!(get("/healthz/ping", "").await, Some((200, "ok".into())));
        assert_eq!(get("/livez", "").await, Some((200, "ok".into())));
        assert_eq!(get("/metrics", "").await, None);
        assert_eq!(get("/readyz/nope", "").await, None);
        failing.store(true, std::sync::atomic::Ordering::SeqCst);
        assert_eq!(
            get("/readyz", "").await,
            Some((
                500,
                "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"
                    .into()
            ))
        );
        assert_eq!(
            get("/readyz/sched-handler-sync", "").await,
            Some((
                500,
                "internal server error: handlers are not fully synchronized\n".into()
            ))
        );
        assert_eq!(
            get("/readyz", "exclude=sched-handler-sync").await,
            Some((200, "ok".into()))
        );
        // Checks added while serving are run; a name already there is not added twice.
        endpoints.healthz.add(Probe::ping("deployment-controller"));
        endpoints.healthz.add(Probe::ping("deployment-controller"));
        assert_eq!(
            get("/healthz", "verbose").await,
            Some((
                200,
                "[+]deployment-controller ok\nhealthz check passed\n".into()
            ))
        );
        // The controller manager serves /healthz alone.
        let cm = Endpoints {
            livez_readyz: None,
            ..endpoints.clone()
        };
        assert!(health(&cm, "/readyz", "").await.is_none());
    }
}
