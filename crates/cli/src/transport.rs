//! The HTTP client every command uses, built the way client-go's `rest`/`transport`
//! packages are: our own HTTP/1.1 connections over rustls (root CA, client certificate,
//! `insecure-skip-tls-verify`, `tls-server-name`), the credentials decorated on each request
//! (bearer token, basic auth, OIDC id-token, exec credential plugins), impersonation
//! headers, `--request-timeout`, kubectl's connection-failure messages, and the `-v=6..9`
//! request log in klog's format (`round_trippers.go`). Commands speak in paths and bodies
//! and get server failures as kubectl prints them.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::{Stream, StreamExt};
use http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::TokioIo;

use crate::credentials::{Auth, Credential};
use crate::error::{ApiStatus, CliError, Result};
use crate::klog::{Logger, Val};

/// The client version we report (`kubectl version`, `User-Agent`).
pub const CLIENT_VERSION: &str = "v1.33.0-rkube";

/// One request to the API server.
#[derive(Debug, Clone)]
pub struct Request {
    pub method: Method,
    /// Path and query, e.g. `/api/v1/namespaces/default/pods?limit=500`.
    pub path: String,
    pub body: Option<Vec<u8>>,
    /// `Content-Type` of the body (e.g. `application/strategic-merge-patch+json`).
    pub content_type: Option<String>,
    /// `Accept` (e.g. the Table form `application/json;as=Table;v=v1;g=meta.k8s.io`).
    pub accept: Option<String>,
}

impl Request {
    pub fn new(method: Method, path: impl Into<String>) -> Self {
        Request {
            method,
            path: path.into(),
            body: None,
            content_type: None,
            accept: None,
        }
    }

    pub fn get(path: impl Into<String>) -> Self {
        Self::new(Method::GET, path)
    }

    /// A JSON body (`application/json` unless `content_type` is set after).
    pub fn json(mut self, body: &serde_json::Value) -> Self {
        self.body = Some(body.to_string().into_bytes());
        self.content_type = Some("application/json".into());
        self
    }

    pub fn content_type(mut self, ct: impl Into<String>) -> Self {
        self.content_type = Some(ct.into());
        self
    }

    pub fn accept(mut self, accept: impl Into<String>) -> Self {
        self.accept = Some(accept.into());
        self
    }
}

/// A whole response.
#[derive(Debug, Clone)]
pub struct Response {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Response {
    /// The body as JSON, or the server's failure as `CliError::Api` for a non-2xx status.
    pub fn json(self) -> Result<serde_json::Value> {
        let resp = self.ok()?;
        serde_json::from_slice(&resp.body)
            .map_err(|e| CliError::msg(format!("the server's answer is not JSON: {e}")))
    }

    /// Itself for a 2xx status, else the server's failure.
    pub fn ok(self) -> Result<Self> {
        if self.status.is_success() {
            Ok(self)
        } else {
            Err(status_error(self.status, &self.body))
        }
    }
}

/// The `CliError` for a failed response: the `Status` the server sent, or one made from
/// the code as client-go does for bodies that are not a `Status`.
pub fn status_error(code: StatusCode, body: &[u8]) -> CliError {
    let parsed: Option<serde_json::Value> = serde_json::from_slice(body).ok();
    match parsed.filter(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status")) {
        Some(v) => CliError::Api(Box::new(ApiStatus {
            code: v
                .get("code")
                .and_then(|c| c.as_u64())
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(code.as_u16()),
            reason: v
                .get("reason")
                .and_then(|r| r.as_str())
                .unwrap_or_default()
                .to_string(),
            message: v
                .get("message")
                .and_then(|m| m.as_str())
                .unwrap_or_default()
                .to_string(),
            status: v,
        })),
        None => {
            let text = String::from_utf8_lossy(body).trim().to_string();
            let message = if text.is_empty() {
                format!(
                    "the server responded with the status code {} but did not return more information",
                    code.as_u16()
                )
            } else {
                text
            };
            CliError::Api(Box::new(ApiStatus {
                code: code.as_u16(),
                reason: reason_for(code).to_string(),
                message,
                status: serde_json::Value::Null,
            }))
        }
    }
}

/// client-go's reasons for status codes without a `Status` body.
fn reason_for(code: StatusCode) -> &'static str {
    match code.as_u16() {
        400 => "BadRequest",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "NotFound",
        405 => "MethodNotAllowed",
        406 => "NotAcceptable",
        409 => "Conflict",
        410 => "Expired",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        429 => "TooManyRequests",
        500 => "InternalError",
        503 => "ServiceUnavailable",
        504 => "Timeout",
        _ => "",
    }
}

/// Impersonation (`--as`, `--as-group`, `--as-uid`, the kubeconfig user's `as*`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Impersonate {
    pub user: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: std::collections::BTreeMap<String, Vec<String>>,
}

/// What the client needs, resolved from the kubeconfig and the flags (client-go's
/// `rest.Config`).
#[derive(Debug, Clone, Default)]
pub struct Settings {
    /// `cluster.server` (or `--server`), e.g. `https://127.0.0.1:6443`.
    pub server: String,
    /// PEM root certificates (`certificate-authority[-data]`); the system's when `None`.
    pub ca: Option<Vec<u8>>,
    pub insecure: bool,
    pub tls_server_name: Option<String>,
    /// PEM client certificate and key.
    pub client_cert: Option<(Vec<u8>, Vec<u8>)>,
    pub auth: Auth,
    pub impersonate: Impersonate,
    /// `--request-timeout` (none when zero).
    pub timeout: Option<Duration>,
    pub verbosity: u8,
}

/// Where a connection goes.
#[derive(Debug, Clone)]
struct Target {
    https: bool,
    host: String,
    port: u16,
    /// `host[:port]` as written in the server URL (kubectl's messages use it).
    authority: String,
    /// A path prefix of the server URL (without a trailing `/`).
    prefix: String,
}

/// Parses the server URL; a bare `host:port` is `https` when TLS is configured (a CA, a
/// client certificate or `insecure-skip-tls-verify`), else `http`, as client-go's
/// `DefaultServerURL`.
fn parse_target(server: &str, default_tls: bool) -> Result<Target> {
    let uri: http::Uri = server.parse().map_err(|e| {
        CliError::msg(format!(
            "host must be a URL or a host:port pair: {server:?}: {e}"
        ))
    })?;
    let (uri, https) = match uri.scheme_str() {
        Some("https") => (uri, true),
        Some("http") => (uri, false),
        Some(other) => {
            return Err(CliError::msg(format!(
                "unsupported protocol scheme \"{other}\" in {server:?}"
            )));
        }
        None => {
            let scheme = if default_tls { "https" } else { "http" };
            let with: http::Uri = format!("{scheme}://{server}").parse().map_err(|e| {
                CliError::msg(format!(
                    "host must be a URL or a host:port pair: {server:?}: {e}"
                ))
            })?;
            (with, default_tls)
        }
    };
    let authority = uri.authority().ok_or_else(|| {
        CliError::msg(format!(
            "host must be a URL or a host:port pair: {server:?}"
        ))
    })?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
    let prefix = uri.path().trim_end_matches('/').to_string();
    Ok(Target {
        https,
        host,
        port,
        authority: authority.as_str().to_string(),
        prefix,
    })
}

/// The API server client of one command run.
#[derive(Clone)]
pub struct RestClient {
    inner: Arc<Inner>,
    kube: kube::Client,
    /// The server URL (kubeconfig's `cluster.server`, or `--server`), without a trailing `/`.
    pub server: String,
}

struct Inner {
    target: Target,
    tls: Option<TlsSetup>,
    auth: Auth,
    impersonate: Impersonate,
    timeout: Option<Duration>,
    log: Logger,
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

/// TLS settings, with the rustls config built once (or per connection when an exec
/// plugin hands out a client certificate).
struct TlsSetup {
    ca: Option<Vec<u8>>,
    insecure: bool,
    server_name: rustls::pki_types::ServerName<'static>,
    client_cert: Option<(Vec<u8>, Vec<u8>)>,
    config: Arc<rustls::ClientConfig>,
}

/// A failure before any response: kubectl's message for it.
#[derive(Debug)]
enum Failure {
    Refused,
    Timeout { connected: bool },
    Other(String),
}

impl RestClient {
    /// A client for `settings`, logging through `log`.
    pub fn new(settings: Settings, log: Logger) -> Result<Self> {
        // client-go: credentials go only over TLS.
        let tls_configured = settings.ca.is_some()
            || settings.insecure
            || settings.client_cert.is_some()
            || settings.tls_server_name.is_some();
        let target = parse_target(&settings.server, tls_configured)?;
        let secure = target.https || tls_configured;
        let tls = if target.https {
            let name = settings
                .tls_server_name
                .clone()
                .unwrap_or_else(|| target.host.clone());
            let server_name = rustls::pki_types::ServerName::try_from(name.clone())
                .map_err(|e| CliError::msg(format!("invalid server name {name:?}: {e}")))?;
            let config = tls_config(
                settings.ca.as_deref(),
                settings.insecure,
                settings.client_cert.as_ref(),
            )?;
            Some(TlsSetup {
                ca: settings.ca.clone(),
                insecure: settings.insecure,
                server_name,
                client_cert: settings.client_cert.clone(),
                config,
            })
        } else {
            None
        };
        let auth = if secure { settings.auth } else { Auth::None };
        let inner = Arc::new(Inner {
            target,
            tls,
            auth,
            impersonate: settings.impersonate,
            timeout: settings.timeout,
            log,
            idle: Mutex::new(Vec::new()),
        });
        let kube = kube::Client::new(KubeService(Arc::clone(&inner)), "default");
        Ok(RestClient {
            inner,
            kube,
            server: settings.server.trim_end_matches('/').to_string(),
        })
    }

    /// A kube-rs client whose requests go through this client (credentials, logging).
    pub fn kube(&self) -> &kube::Client {
        &self.kube
    }

    /// The request log (`-v`).
    pub fn logger(&self) -> &Logger {
        &self.inner.log
    }

    /// Sends a request and reads the whole response (any status).
    pub async fn send(&self, req: Request) -> Result<Response> {
        let (parts, body, started, url) = self.inner.round_trip(req).await?;
        let bytes = match self.inner.deadline(started) {
            Some(left) => tokio::time::timeout(left, body.collect())
                .await
                .map_err(|_| {
                    CliError::Transport(
                        "Unable to connect to the server: context deadline exceeded".into(),
                    )
                })?,
            None => body.collect().await,
        }
        .map_err(|e| CliError::Transport(format!("error reading the response: {e}")))?
        .to_bytes();
        let _ = url;
        self.inner.log.body("Response Body", &bytes);
        Ok(Response {
            status: parts.status,
            headers: parts.headers,
            body: bytes,
        })
    }

    /// GET `path` and decode the JSON answer.
    pub async fn get_json(&self, path: &str) -> Result<serde_json::Value> {
        self.send(Request::get(path)).await?.json()
    }

    /// Sends a request whose answer is a stream (watch, `logs -f`): the chunks as they
    /// come, after a 2xx status; a failure status is read whole and returned as an error.
    pub async fn stream(
        &self,
        req: Request,
    ) -> Result<impl Stream<Item = Result<Bytes>> + Send + 'static + use<>> {
        let (parts, body, _, _) = self.inner.round_trip(req).await?;
        if !parts.status.is_success() {
            let body = body
                .collect()
                .await
                .map_err(|e| CliError::Transport(format!("error reading the response: {e}")))?
                .to_bytes();
            self.inner.log.body("Response Body", &body);
            return Err(status_error(parts.status, &body));
        }
        Ok(body.into_data_stream().map(|chunk| {
            chunk.map_err(|e| CliError::Transport(format!("error reading the response: {e}")))
        }))
    }

    /// Sends a request asking for a protocol upgrade (`Connection: Upgrade`, with the
    /// given headers) and returns the response and, on `101 Switching Protocols`, the
    /// upgraded connection.
    pub async fn upgrade(
        &self,
        req: Request,
        headers: &[(&str, &str)],
    ) -> Result<(http::response::Parts, Option<hyper::upgrade::Upgraded>)> {
        let (resp, _, _) = self.inner.exchange(req, headers, false).await?;
        let (parts, body) = resp.into_parts();
        if parts.status != StatusCode::SWITCHING_PROTOCOLS {
            let body = body
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            self.inner.log.body("Response Body", &body);
            return Err(status_error(parts.status, &body));
        }
        let resp = http::Response::from_parts(parts.clone(), body);
        let upgraded = hyper::upgrade::on(resp)
            .await
            .map_err(|e| CliError::Transport(format!("error upgrading the connection: {e}")))?;
        Ok((parts, Some(upgraded)))
    }
}

/// One request to any URL (an OIDC issuer): `(status, body)`. `ca` verifies an
/// `https` server (the system's roots when `None`); logged like API requests.
pub async fn one_shot(
    method: &str,
    url: &str,
    ca: Option<&[u8]>,
    headers: &[(String, String)],
    body: Option<Vec<u8>>,
    log: &Logger,
) -> Result<(u16, Bytes)> {
    let uri: http::Uri = url
        .parse()
        .map_err(|e| CliError::msg(format!("invalid URL {url:?}: {e}")))?;
    let (Some(scheme), Some(authority)) = (uri.scheme_str(), uri.authority()) else {
        return Err(CliError::msg(format!("invalid URL {url:?}")));
    };
    let client = RestClient::new(
        Settings {
            server: format!("{scheme}://{authority}"),
            ca: ca.map(<[u8]>::to_vec),
            ..Settings::default()
        },
        log.clone(),
    )?;
    let method: Method = method
        .parse()
        .map_err(|e| CliError::msg(format!("invalid method: {e}")))?;
    let mut req = Request::new(
        method,
        uri.path_and_query().map(|p| p.as_str()).unwrap_or("/"),
    );
    req.body = body;
    let mut extra: Vec<(&str, &str)> = Vec::new();
    for (k, v) in headers {
        if k.eq_ignore_ascii_case("content-type") {
            req.content_type = Some(v.clone());
        } else {
            extra.push((k.as_str(), v.as_str()));
        }
    }
    let (resp, _, _) = client.inner.exchange(req, &extra, false).await?;
    let status = resp.status().as_u16();
    let bytes = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| CliError::Transport(format!("error reading the response: {e}")))?
        .to_bytes();
    log.body("Response Body", &bytes);
    Ok((status, bytes))
}

/// client-go's `timeout` query parameter format (Go's `time.Duration.String`).
pub fn go_duration(d: Duration) -> String {
    crate::duration::format_duration(d)
}

/// Adds `timeout=<d>` to a path's query unless it has one (client-go's request timeout).
fn with_timeout_param(path: &str, timeout: Option<Duration>) -> String {
    let Some(t) = timeout else {
        return path.to_string();
    };
    let query = path.split_once('?').map(|(_, q)| q).unwrap_or("");
    if query.split('&').any(|kv| kv.starts_with("timeout=")) {
        return path.to_string();
    }
    let sep = if path.contains('?') { '&' } else { '?' };
    format!("{path}{sep}timeout={}", go_duration(t))
}

type Exchanged = (http::Response<Incoming>, Instant, String);

impl Inner {
    fn deadline(&self, started: Instant) -> Option<Duration> {
        self.timeout.map(|t| {
            t.saturating_sub(started.elapsed())
                .max(Duration::from_millis(1))
        })
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}://{}{}{}",
            if self.target.https { "https" } else { "http" },
            self.target.authority,
            self.target.prefix,
            path
        )
    }

    async fn round_trip(
        &self,
        req: Request,
    ) -> Result<(http::response::Parts, Incoming, Instant, String)> {
        let (resp, started, url) = self.exchange(req, &[], true).await?;
        let (parts, body) = resp.into_parts();
        Ok((parts, body, started, url))
    }

    /// Sends one request: decorates it, logs it, connects (or reuses an idle connection),
    /// and waits for the response head.
    async fn exchange(
        &self,
        req: Request,
        extra: &[(&str, &str)],
        reuse: bool,
    ) -> Result<Exchanged> {
        let path = with_timeout_param(&req.path, self.timeout);
        let url = self.url(&path);
        let credential = self.auth.credential(&self.log).await?;
        let mut headers: Vec<(String, String)> = Vec::new();
        headers.push((
            "Accept".into(),
            req.accept
                .clone()
                .unwrap_or_else(|| "application/json, */*".into()),
        ));
        if let Some(ct) = &req.content_type {
            headers.push(("Content-Type".into(), ct.clone()));
        }
        headers.push(("User-Agent".into(), user_agent()));
        if let Some(value) = credential.authorization() {
            headers.push(("Authorization".into(), value));
        }
        let imp = &self.impersonate;
        if !imp.user.is_empty() {
            headers.push(("Impersonate-User".into(), imp.user.clone()));
            if !imp.uid.is_empty() {
                headers.push(("Impersonate-Uid".into(), imp.uid.clone()));
            }
            for g in &imp.groups {
                headers.push(("Impersonate-Group".into(), g.clone()));
            }
            for (k, vs) in &imp.extra {
                for v in vs {
                    headers.push((format!("Impersonate-Extra-{k}"), v.clone()));
                }
            }
        }
        for (k, v) in extra {
            headers.push((k.to_string(), v.to_string()));
        }
        let body = req.body.clone().unwrap_or_default();
        if req.method != Method::GET || req.body.is_some() || self.log.level() >= 8 {
            self.log.body("Request Body", &body);
        }
        self.log.request(req.method.as_str(), &url, &headers);
        let started = Instant::now();
        let mut builder = http::Request::builder()
            .method(req.method.clone())
            .uri(format!("{}{}", self.target.prefix, path))
            .header(http::header::HOST, self.target.authority.as_str());
        for (k, v) in &headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| CliError::msg(format!("invalid header {k:?}: {e}")))?;
            let value = HeaderValue::from_str(v)
                .map_err(|e| CliError::msg(format!("invalid value for header {k:?}: {e}")))?;
            builder = builder.header(name, value);
        }
        let request = builder
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| CliError::msg(format!("invalid request: {e}")))?;
        let trace = Mutex::new(Trace::default());
        let fut = self.send_on_connection(request, &credential, reuse, &trace);
        let result = match self.timeout {
            Some(t) => match tokio::time::timeout(t, fut).await {
                Ok(r) => r,
                Err(_) => Err(Failure::Timeout {
                    connected: trace.lock().map(|t| t.connected).unwrap_or(false),
                }),
            },
            None => fut.await,
        };
        let elapsed = started.elapsed();
        let timings = trace.lock().map(|t| t.fields()).unwrap_or_default();
        match result {
            Ok(resp) => {
                self.log
                    .response_timed(req.method.as_str(), &url, Some(&resp), elapsed, &timings);
                if resp.status() == StatusCode::UNAUTHORIZED {
                    self.auth.forget();
                }
                Ok((resp, started, url))
            }
            Err(f) => {
                self.log
                    .response::<Incoming>(req.method.as_str(), &url, None, elapsed);
                Err(self.failure_error(f))
            }
        }
    }

    fn failure_error(&self, f: Failure) -> CliError {
        match f {
            Failure::Refused => CliError::Transport(format!(
                "The connection to the server {} was refused - did you specify the right host or port?",
                self.target.authority
            )),
            Failure::Timeout { connected: false } if self.target.https => CliError::Transport(
                "Unable to connect to the server: net/http: request canceled while waiting for connection (Client.Timeout exceeded while awaiting headers)".into(),
            ),
            Failure::Timeout { .. } => CliError::Transport(
                "Unable to connect to the server: context deadline exceeded".into(),
            ),
            Failure::Other(m) => CliError::Transport(format!("Unable to connect to the server: {m}")),
        }
    }

    async fn send_on_connection(
        &self,
        request: http::Request<Full<Bytes>>,
        credential: &Credential,
        reuse: bool,
        trace: &Mutex<Trace>,
    ) -> std::result::Result<http::Response<Incoming>, Failure> {
        let asked = Instant::now();
        let mut sender = None;
        if reuse && let Ok(mut idle) = self.idle.lock() {
            idle.retain(|s| !s.is_closed());
            if let Some(i) = idle.iter().position(|s| s.is_ready()) {
                sender = Some(idle.swap_remove(i));
            }
        }
        let reused = sender.is_some();
        let mut sender = match sender {
            Some(s) => s,
            None => self.connect(credential, reuse, trace).await?,
        };
        let sent = Instant::now();
        if let Ok(mut t) = trace.lock() {
            t.connected = true;
            t.reused = reused;
            t.get_connection = sent - asked;
        }
        let resp = sender
            .send_request(request)
            .await
            .map_err(|e| Failure::Other(describe_hyper(&e)))?;
        if let Ok(mut t) = trace.lock() {
            t.server_processing = sent.elapsed();
        }
        if reuse && let Ok(mut idle) = self.idle.lock() {
            // Ready again once this response's body is read; stale senders are skipped.
            idle.push(sender);
        }
        Ok(resp)
    }

    async fn connect(
        &self,
        credential: &Credential,
        reuse: bool,
        trace: &Mutex<Trace>,
    ) -> std::result::Result<SendRequest<Full<Bytes>>, Failure> {
        let t = &self.target;
        let dial = Instant::now();
        let tcp = match tokio::net::TcpStream::connect((t.host.as_str(), t.port)).await {
            Ok(tcp) => tcp,
            Err(e) => {
                let f = dial_failure(&t.host, t.port, &e);
                if let Failure::Refused = f {
                    self.log.info(
                        9,
                        "round_trippers.go:562",
                        "HTTP Trace: Dial failed",
                        &[
                            ("network", Val::Str("tcp")),
                            ("address", Val::Str(&format!("{}:{}", t.host, t.port))),
                            (
                                "err",
                                Val::Str(&format!(
                                    "dial tcp {}:{}: connect: connection refused",
                                    t.host, t.port
                                )),
                            ),
                        ],
                    );
                }
                return Err(f);
            }
        };
        let _ = tcp.set_nodelay(true);
        let address = tcp
            .peer_addr()
            .map(|a| a.to_string())
            .unwrap_or_else(|_| format!("{}:{}", t.host, t.port));
        self.log.info(
            9,
            "round_trippers.go:562",
            "HTTP Trace: Dial succeed",
            &[
                ("network", Val::Str("tcp")),
                ("address", Val::Str(&address)),
            ],
        );
        if let Ok(mut tr) = trace.lock() {
            tr.dial = dial.elapsed();
        }
        let tls_start = Instant::now();
        match &self.tls {
            None => self.handshake(TokioIo::new(tcp), reuse).await,
            Some(tls) => {
                let config = match credential.client_cert() {
                    Some(cert) => tls_config(tls.ca.as_deref(), tls.insecure, Some(&cert))
                        .map_err(|e| Failure::Other(e.to_string()))?,
                    None => {
                        let _ = &tls.client_cert;
                        Arc::clone(&tls.config)
                    }
                };
                let connector = tokio_rustls::TlsConnector::from(config);
                let stream = connector
                    .connect(tls.server_name.clone(), tcp)
                    .await
                    .map_err(|e| Failure::Other(describe_tls(&e)))?;
                if let Ok(mut tr) = trace.lock() {
                    tr.tls = tls_start.elapsed();
                }
                self.handshake(TokioIo::new(stream), reuse).await
            }
        }
    }

    async fn handshake<T>(
        &self,
        io: TokioIo<T>,
        _reuse: bool,
    ) -> std::result::Result<SendRequest<Full<Bytes>>, Failure>
    where
        T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    {
        let (sender, conn) = hyper::client::conn::http1::handshake(io)
            .await
            .map_err(|e| Failure::Other(describe_hyper(&e)))?;
        tokio::spawn(async move {
            let _ = conn.with_upgrades().await;
        });
        Ok(sender)
    }
}

/// What `-v=9` reports about a request's connection (client-go's `httptrace` timings).
#[derive(Debug, Default)]
struct Trace {
    connected: bool,
    reused: bool,
    dial: Duration,
    tls: Duration,
    get_connection: Duration,
    server_processing: Duration,
}

impl Trace {
    fn fields(&self) -> Vec<(&'static str, i64)> {
        let ms = |d: Duration| i64::try_from(d.as_millis()).unwrap_or(i64::MAX);
        if !self.connected {
            return Vec::new();
        }
        let mut v = if self.reused {
            vec![("getConnectionMilliseconds", ms(self.get_connection))]
        } else {
            vec![
                ("dnsLookupMilliseconds", 0),
                ("dialMilliseconds", ms(self.dial)),
                ("tlsHandshakeMilliseconds", ms(self.tls)),
            ]
        };
        v.push(("serverProcessingMilliseconds", ms(self.server_processing)));
        v
    }
}

fn user_agent() -> String {
    api::platform::user_agent("kubectl", CLIENT_VERSION)
}

/// Go's `dial tcp` errors.
fn dial_failure(host: &str, port: u16, e: &std::io::Error) -> Failure {
    use std::io::ErrorKind;
    match e.kind() {
        ErrorKind::ConnectionRefused => Failure::Refused,
        _ => {
            let text = e.to_string();
            if text.contains("failed to lookup address")
                || text.contains("Name or service not known")
                || text.contains("nodename nor servname")
            {
                Failure::Other(format!("dial tcp: lookup {host}: no such host"))
            } else {
                let msg = text
                    .split(" (os error")
                    .next()
                    .unwrap_or(&text)
                    .to_lowercase();
                Failure::Other(format!("dial tcp {host}:{port}: connect: {msg}"))
            }
        }
    }
}

/// A TLS handshake failure in Go's words.
fn describe_tls(e: &std::io::Error) -> String {
    use rustls::{CertificateError, Error as TlsError};
    let inner = e.get_ref().and_then(|i| i.downcast_ref::<TlsError>());
    let verify = "tls: failed to verify certificate: x509:";
    match inner {
        Some(TlsError::InvalidCertificate(c)) => match c {
            CertificateError::UnknownIssuer => {
                format!("{verify} certificate signed by unknown authority")
            }
            CertificateError::NotValidForNameContext {
                expected,
                presented,
            } => {
                // Go lists the certificate's DNS names for a host name, its IPs for an IP.
                let want_ip = matches!(expected, rustls::pki_types::ServerName::IpAddress(_));
                let names: Vec<String> = presented
                    .iter()
                    .filter(|p| p.starts_with("IpAddress(") == want_ip)
                    .map(|p| unwrap_name(p))
                    .collect();
                let expected = match expected {
                    rustls::pki_types::ServerName::DnsName(d) => d.as_ref().to_string(),
                    rustls::pki_types::ServerName::IpAddress(ip) => {
                        std::net::IpAddr::from(*ip).to_string()
                    }
                    other => format!("{other:?}"),
                };
                format!(
                    "{verify} certificate is valid for {}, not {expected}",
                    names.join(", ")
                )
            }
            CertificateError::NotValidForName => {
                format!("{verify} certificate is not valid for the requested name")
            }
            CertificateError::Expired
            | CertificateError::ExpiredContext { .. }
            | CertificateError::NotValidYet
            | CertificateError::NotValidYetContext { .. } => {
                format!("{verify} certificate has expired or is not yet valid")
            }
            other => format!("{verify} {other:?}"),
        },
        Some(TlsError::AlertReceived(alert)) => {
            format!("remote error: tls: {}", alert_text(*alert))
        }
        Some(other) => format!("tls: {other}"),
        None => {
            if e.kind() == std::io::ErrorKind::UnexpectedEof {
                "EOF".into()
            } else {
                e.to_string()
            }
        }
    }
}

fn alert_text(a: rustls::AlertDescription) -> String {
    use rustls::AlertDescription as A;
    match a {
        A::BadCertificate => "bad certificate".into(),
        A::CertificateRequired => "certificate required".into(),
        A::UnknownCA => "unknown certificate authority".into(),
        A::HandshakeFailure => "handshake failure".into(),
        A::CertificateExpired => "expired certificate".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}

/// `DnsName("x")` → `x` (rustls' rendering of presented names).
fn unwrap_name(p: &str) -> String {
    match (p.find("(\""), p.rfind("\")")) {
        (Some(a), Some(b)) if b > a + 2 => p[a + 2..b].to_string(),
        _ => match (p.find('('), p.rfind(')')) {
            (Some(a), Some(b)) if b > a + 1 => p[a + 1..b].to_string(),
            _ => p.to_string(),
        },
    }
}

fn describe_hyper(e: &hyper::Error) -> String {
    if e.is_incomplete_message() || e.is_closed() {
        return "EOF".into();
    }
    describe(e)
}

/// Builds the rustls configuration: roots (the CA, else the system's), or no
/// verification; the client certificate; HTTP/1.1.
pub fn tls_config(
    ca: Option<&[u8]>,
    insecure: bool,
    client_cert: Option<&(Vec<u8>, Vec<u8>)>,
) -> Result<Arc<rustls::ClientConfig>> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| CliError::msg(format!("tls: {e}")))?;
    let builder = if insecure {
        if ca.is_some() {
            return Err(CliError::msg(
                "specifying a root certificates file with the insecure flag is not allowed",
            ));
        }
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
    } else {
        let mut roots = rustls::RootCertStore::empty();
        match ca {
            Some(pem) => {
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
                    .filter_map(|c| c.ok())
                    .collect();
                if certs.is_empty() {
                    return Err(CliError::msg(
                        "unable to load root certificates: unable to parse bytes as PEM block",
                    ));
                }
                for c in certs {
                    roots.add(c).map_err(|e| {
                        CliError::msg(format!("unable to load root certificates: {e}"))
                    })?;
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match client_cert {
        Some((cert, key)) => {
            let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| {
                    CliError::msg(format!(
                        "tls: failed to find any PEM data in certificate input: {e}"
                    ))
                })?;
            if certs.is_empty() {
                return Err(CliError::msg(
                    "tls: failed to find any PEM data in certificate input",
                ));
            }
            let key = PrivateKeyDer::from_pem_slice(key)
                .map_err(|_| CliError::msg("tls: failed to find any PEM data in key input"))?;
            builder.with_client_auth_cert(certs, key).map_err(|e| {
                CliError::msg(format!("tls: private key does not match public key: {e}"))
            })?
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// `insecure-skip-tls-verify`: any server certificate (signatures still checked).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls::pki_types::CertificateDer<'_>,
        _intermediates: &[rustls::pki_types::CertificateDer<'_>],
        _server_name: &rustls::pki_types::ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls::pki_types::UnixTime,
    ) -> std::result::Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &rustls::pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> std::result::Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// kube-rs's client over our transport (so its requests are decorated and logged too).
#[derive(Clone)]
struct KubeService(Arc<Inner>);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

impl tower::Service<http::Request<kube::client::Body>> for KubeService {
    type Response = http::Response<Incoming>;
    type Error = BoxError;
    type Future = std::pin::Pin<
        Box<dyn std::future::Future<Output = std::result::Result<Self::Response, BoxError>> + Send>,
    >;

    fn poll_ready(
        &mut self,
        _cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::result::Result<(), BoxError>> {
        std::task::Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<kube::client::Body>) -> Self::Future {
        let inner = Arc::clone(&self.0);
        Box::pin(async move {
            let (parts, body) = req.into_parts();
            let body = body.collect().await?.to_bytes();
            let path = parts
                .uri
                .path_and_query()
                .map(|p| p.as_str().to_string())
                .unwrap_or_else(|| "/".into());
            let request = Request {
                method: parts.method,
                path,
                body: (!body.is_empty()).then(|| body.to_vec()),
                content_type: parts
                    .headers
                    .get(http::header::CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
                accept: parts
                    .headers
                    .get(http::header::ACCEPT)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_string),
            };
            let (resp, _, _) = inner
                .exchange(request, &[], true)
                .await
                .map_err(|e| -> BoxError { e.to_string().into() })?;
            Ok(resp)
        })
    }
}

/// The innermost cause of a client error, as Go's net errors read.
pub fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut last = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        last = s.to_string();
        source = s.source();
    }
    last
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn go_durations() {
        assert_eq!(go_duration(Duration::from_secs(32)), "32s");
        assert_eq!(go_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(go_duration(Duration::from_secs(3661)), "1h1m1s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
    }

    #[test]
    fn timeout_param() {
        let t = Some(Duration::from_secs(5));
        assert_eq!(with_timeout_param("/api", t), "/api?timeout=5s");
        assert_eq!(with_timeout_param("/api?a=b", t), "/api?a=b&timeout=5s");
        assert_eq!(
            with_timeout_param("/api?timeout=32s", t),
            "/api?timeout=32s"
        );
        assert_eq!(with_timeout_param("/api", None), "/api");
    }

    #[test]
    fn targets() {
        let t = parse_target("https://127.0.0.1:6443", false).unwrap();
        assert_eq!(
            (t.https, t.host.as_str(), t.port),
            (true, "127.0.0.1", 6443)
        );
        assert_eq!(t.authority, "127.0.0.1:6443");
        let t = parse_target("http://localhost:8080", true).unwrap();
        assert!(!t.https);
        let t = parse_target("https://[::1]/prefix/", false).unwrap();
        assert_eq!(
            (t.host.as_str(), t.port, t.prefix.as_str()),
            ("::1", 443, "/prefix")
        );
        let t = parse_target("example.com:6443", true).unwrap();
        assert!(t.https);
        let t = parse_target("example.com:6443", false).unwrap();
        assert!(!t.https);
    }

    #[test]
    fn presented_names() {
        assert_eq!(unwrap_name("DnsName(\"localhost\")"), "localhost");
        assert_eq!(unwrap_name("10.0.0.1"), "10.0.0.1");
    }
}
