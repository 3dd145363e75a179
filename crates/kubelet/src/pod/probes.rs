//! Probes (upstream's `prober/`): one task per container and probe kind, probing every
//! `periodSeconds` once `initialDelaySeconds` have passed since the container started,
//! turning results into a verdict after `successThreshold`/`failureThreshold` equal
//! results in a row. Liveness and readiness wait for the startup probe to succeed.
//! Verdicts are kept by container id; a change wakes the pod's worker.
//!
//! Handlers: exec (CRI `ExecSync` with `timeoutSeconds`), httpGet (HTTP/1.1 over TCP,
//! or HTTPS without certificate verification, 200–399 is success), tcpSocket, grpc (the
//! `grpc.health.v1` protocol, plaintext).

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, Pod, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use runtime::events::{EventType, Recorder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::runtime::{ContainerState, RuntimePodStatus};
use super::spec::pod_uid;
use cri::RuntimeService;

/// The three probe kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    Liveness,
    Readiness,
    Startup,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Liveness => "Liveness",
            Kind::Readiness => "Readiness",
            Kind::Startup => "Startup",
        }
    }

    fn of(self, c: &Container) -> Option<&Probe> {
        match self {
            Kind::Liveness => c.liveness_probe.as_ref(),
            Kind::Readiness => c.readiness_probe.as_ref(),
            Kind::Startup => c.startup_probe.as_ref(),
        }
    }
}

/// One probe attempt's outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Success,
    Failure(String),
    /// The probe could not be run (`probe errored`).
    Error(String),
}

/// Thresholds and the current run of equal results (upstream's worker fields).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Counter {
    last: Option<bool>,
    run: i32,
}

impl Counter {
    /// Records one result; returns the verdict to publish once the run reaches its
    /// threshold.
    pub fn observe(
        &mut self,
        success: bool,
        success_threshold: i32,
        failure_threshold: i32,
    ) -> Option<bool> {
        if self.last == Some(success) {
            self.run = self.run.saturating_add(1);
        } else {
            self.last = Some(success);
            self.run = 1;
        }
        let threshold = if success {
            success_threshold.max(1)
        } else {
            failure_threshold.max(1)
        };
        (self.run >= threshold).then_some(success)
    }

    /// After a liveness/startup failure the container restarts: start over.
    pub fn reset(&mut self) {
        self.run = 0;
    }
}

/// The timing of a probe with upstream's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub initial_delay: Duration,
    pub period: Duration,
    pub timeout: Duration,
    pub success_threshold: i32,
    pub failure_threshold: i32,
}

pub fn timing(p: &Probe) -> Timing {
    let secs = |v: Option<i32>, d: i32| {
        Duration::from_secs(u64::try_from(v.unwrap_or(d).max(0)).unwrap_or(0))
    };
    Timing {
        initial_delay: secs(p.initial_delay_seconds, 0),
        period: secs(p.period_seconds, 10).max(Duration::from_secs(1)),
        timeout: secs(p.timeout_seconds, 1).max(Duration::from_secs(1)),
        success_threshold: p.success_threshold.unwrap_or(1),
        failure_threshold: p.failure_threshold.unwrap_or(3),
    }
}

/// A container port named `name` (for `port: http`).
pub fn resolve_port(port: &IntOrString, c: &Container) -> Result<u16, String> {
    match port {
        IntOrString::Int(n) => u16::try_from(*n).map_err(|_| format!("invalid port number: {n}")),
        IntOrString::String(s) => {
            if let Ok(n) = s.parse::<u16>() {
                return Ok(n);
            }
            c.ports
                .iter()
                .flatten()
                .find(|p| p.name.as_deref() == Some(s.as_str()))
                .and_then(|p| u16::try_from(p.container_port).ok())
                .ok_or_else(|| format!("couldn't find port: {s} in {}", c.name))
        }
    }
}

/// Builds the HTTP/1.1 request of an httpGet probe.
pub fn http_request(host: &str, port: u16, path: &str, headers: &[(String, String)]) -> String {
    let path = if path.is_empty() { "/" } else { path };
    let path = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("/{path}")
    };
    let mut req = format!("GET {path} HTTP/1.1\r\n");
    let has = |n: &str| headers.iter().any(|(k, _)| k.eq_ignore_ascii_case(n));
    if !has("host") {
        let h = if host.contains(':') {
            format!("[{host}]:{port}")
        } else {
            format!("{host}:{port}")
        };
        req.push_str(&format!("Host: {h}\r\n"));
    }
    if !has("user-agent") {
        req.push_str("User-Agent: kube-probe/1.33\r\n");
    }
    if !has("accept") {
        req.push_str("Accept: */*\r\n");
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    req.push_str("Connection: close\r\n\r\n");
    req
}

/// The status code of an HTTP response's first line.
pub fn status_code(response: &[u8]) -> Option<u16> {
    let line = response.split(|b| *b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Whether an HTTP status is a success (`200 <= code < 400`).
pub fn http_success(code: u16) -> bool {
    (200..400).contains(&code)
}

async fn exchange<S>(mut s: S, req: &str) -> Result<u16, String>
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    s.write_all(req.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&chunk[..n]);
        if buf.contains(&b'\n') || buf.len() > 10 * 1024 {
            break;
        }
    }
    status_code(&buf).ok_or_else(|| "malformed HTTP response".to_string())
}

/// Probes skip certificate verification, as upstream's (`InsecureSkipVerify`).
#[derive(Debug)]
struct NoVerify(Arc<rustls::crypto::CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for NoVerify {
    fn verify_server_cert(
        &self,
        _end_entity: &rustls_pki_types::CertificateDer<'_>,
        _intermediates: &[rustls_pki_types::CertificateDer<'_>],
        _server_name: &rustls_pki_types::ServerName<'_>,
        _ocsp: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
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
        cert: &rustls_pki_types::CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
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

fn tls_connector() -> Result<tokio_rustls::TlsConnector, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(NoVerify(provider)))
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

async fn http_probe(
    https: bool,
    host: &str,
    port: u16,
    path: &str,
    headers: &[(String, String)],
    timeout: Duration,
) -> Outcome {
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let scheme = if https { "https" } else { "http" };
    let url = format!("{scheme}://{addr}{path}");
    let req = http_request(host, port, path, headers);
    let attempt = async {
        let tcp = tokio::net::TcpStream::connect(&addr)
            .await
            .map_err(|e| format!("Get \"{url}\": dial tcp {addr}: {e}"))?;
        if https {
            let name = rustls_pki_types::ServerName::try_from(host.to_string())
                .map_err(|e| format!("Get \"{url}\": {e}"))?;
            let tls = tls_connector()?
                .connect(name, tcp)
                .await
                .map_err(|e| format!("Get \"{url}\": {e}"))?;
            exchange(tls, &req).await
        } else {
            exchange(tcp, &req).await
        }
    };
    match tokio::time::timeout(timeout, attempt).await {
        Err(_) => Outcome::Failure(format!(
            "Get \"{url}\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)"
        )),
        Ok(Err(e)) => Outcome::Failure(e),
        Ok(Ok(code)) if http_success(code) => Outcome::Success,
        Ok(Ok(code)) => Outcome::Failure(format!("HTTP probe failed with statuscode: {code}")),
    }
}

async fn tcp_probe(host: &str, port: u16, timeout: Duration) -> Outcome {
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    match tokio::time::timeout(timeout, tokio::net::TcpStream::connect(&addr)).await {
        Err(_) => Outcome::Failure(format!("dial tcp {addr}: i/o timeout")),
        Ok(Err(e)) => Outcome::Failure(format!("dial tcp {addr}: {e}")),
        Ok(Ok(_)) => Outcome::Success,
    }
}

/// Minimal gRPC health check over HTTP/2 without TLS, through tonic.
mod grpc {
    use std::time::Duration;

    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HealthCheckRequest {
        #[prost(string, tag = "1")]
        pub service: String,
    }
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct HealthCheckResponse {
        #[prost(int32, tag = "1")]
        pub status: i32,
    }

    pub async fn check(addr: &str, service: &str, timeout: Duration) -> Result<i32, String> {
        let endpoint = tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|e| e.to_string())?
            .connect_timeout(timeout)
            .timeout(timeout);
        let channel = endpoint.connect().await.map_err(|e| {
            format!(
                "timeout: failed to connect service \"{addr}\" within {}s: {e}",
                timeout.as_secs()
            )
        })?;
        let mut client = tonic::client::Grpc::new(channel);
        client.ready().await.map_err(|e| e.to_string())?;
        let path = http::uri::PathAndQuery::from_static("/grpc.health.v1.Health/Check");
        let codec = tonic_prost::ProstCodec::<HealthCheckRequest, HealthCheckResponse>::default();
        let resp = client
            .unary(
                tonic::Request::new(HealthCheckRequest {
                    service: service.to_string(),
                }),
                path,
                codec,
            )
            .await
            .map_err(|s| format!("rpc error: code = {:?} desc = {}", s.code(), s.message()))?;
        Ok(resp.into_inner().status)
    }
}

/// Runs one probe attempt.
pub async fn run_probe(
    probe: &Probe,
    c: &Container,
    container_id: &str,
    pod_ip: &str,
    runtime: &dyn RuntimeService,
) -> Outcome {
    let t = timing(probe);
    if let Some(exec) = &probe.exec {
        let cmd = exec.command.clone().unwrap_or_default();
        return match runtime.exec_sync(container_id, cmd, t.timeout).await {
            Ok(r) if r.exit_code == 0 => Outcome::Success,
            Ok(r) => {
                let mut out = String::from_utf8_lossy(&r.stdout).into_owned();
                out.push_str(&String::from_utf8_lossy(&r.stderr));
                Outcome::Failure(out)
            }
            Err(e)
                if matches!(&e, cri::Error::Status(s) if s.code() == tonic::Code::DeadlineExceeded)
                    || matches!(&e, cri::Error::Timeout { .. }) =>
            {
                Outcome::Failure(format!("command timed out after {}s", t.timeout.as_secs()))
            }
            Err(e) => Outcome::Error(e.to_string()),
        };
    }
    if let Some(h) = &probe.http_get {
        let port = match resolve_port(&h.port, c) {
            Ok(p) => p,
            Err(e) => return Outcome::Error(e),
        };
        let host = h
            .host
            .clone()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| pod_ip.to_string());
        let headers: Vec<(String, String)> = h
            .http_headers
            .iter()
            .flatten()
            .map(|x| (x.name.clone(), x.value.clone()))
            .collect();
        return http_probe(
            h.scheme.as_deref() == Some("HTTPS"),
            &host,
            port,
            h.path.as_deref().unwrap_or("/"),
            &headers,
            t.timeout,
        )
        .await;
    }
    if let Some(tcp) = &probe.tcp_socket {
        let port = match resolve_port(&tcp.port, c) {
            Ok(p) => p,
            Err(e) => return Outcome::Error(e),
        };
        let host = tcp
            .host
            .clone()
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| pod_ip.to_string());
        return tcp_probe(&host, port, t.timeout).await;
    }
    if let Some(g) = &probe.grpc {
        let Ok(port) = u16::try_from(g.port) else {
            return Outcome::Error(format!("invalid port number: {}", g.port));
        };
        let addr = if pod_ip.contains(':') {
            format!("[{pod_ip}]:{port}")
        } else {
            format!("{pod_ip}:{port}")
        };
        return match grpc::check(&addr, g.service.as_deref().unwrap_or_default(), t.timeout).await {
            Ok(1) => Outcome::Success,
            Ok(status) => Outcome::Failure(format!(
                "service unhealthy (responded with \"{}\")",
                match status {
                    0 => "UNKNOWN",
                    2 => "NOT_SERVING",
                    3 => "SERVICE_UNKNOWN",
                    _ => "UNKNOWN",
                }
            )),
            Err(e) => Outcome::Failure(e),
        };
    }
    Outcome::Error("missing probe handler".into())
}

/// Probe verdicts, by (container id, kind).
#[derive(Debug, Default)]
struct Results {
    verdicts: HashMap<(String, Kind), bool>,
    workers: HashMap<(String, String, Kind), (String, tokio::task::JoinHandle<()>)>,
}

/// Called when a verdict changes, with the pod uid.
pub type Wake = Arc<dyn Fn(&str) + Send + Sync>;

/// The probe workers of every pod and their verdicts.
pub struct ProbeManager {
    results: Arc<Mutex<Results>>,
    runtime: Arc<dyn RuntimeService>,
    recorder: Option<Recorder>,
    wake: Wake,
}

impl ProbeManager {
    pub fn new(runtime: Arc<dyn RuntimeService>, recorder: Option<Recorder>, wake: Wake) -> Self {
        ProbeManager {
            results: Arc::new(Mutex::new(Results::default())),
            runtime,
            recorder,
            wake,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Results> {
        self.results.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The verdict of `kind` for container `id` (`None`: no verdict yet).
    pub fn get(&self, id: &str, kind: Kind) -> Option<bool> {
        self.lock().verdicts.get(&(id.to_string(), kind)).copied()
    }

    /// Starts workers for the running containers of `pod` that have probes and stops the
    /// others (a restarted container gets fresh workers).
    pub fn sync(&self, pod: &Pod, status: &RuntimePodStatus) {
        let uid = pod_uid(pod).to_string();
        let pod_ip = status.ips().first().cloned().unwrap_or_default();
        let containers: Vec<Container> = pod
            .spec
            .as_ref()
            .map(|s| {
                s.init_containers
                    .iter()
                    .flatten()
                    .filter(|c| c.restart_policy.as_deref() == Some("Always"))
                    .chain(s.containers.iter())
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let mut wanted: HashSet<(String, String, Kind)> = HashSet::new();
        let mut st = self.lock();
        for c in &containers {
            let Some(cs) = status
                .find(&c.name)
                .filter(|s| s.state == ContainerState::Running)
            else {
                continue;
            };
            for kind in [Kind::Startup, Kind::Liveness, Kind::Readiness] {
                let Some(probe) = kind.of(c) else { continue };
                let key = (uid.clone(), c.name.clone(), kind);
                wanted.insert(key.clone());
                if st.workers.get(&key).is_some_and(|(id, _)| *id == cs.id) {
                    continue;
                }
                if let Some((_, h)) = st.workers.remove(&key) {
                    h.abort();
                }
                let has_startup = c.startup_probe.is_some();
                let handle = tokio::spawn(probe_worker(ProbeWorker {
                    kind,
                    probe: probe.clone(),
                    container: c.clone(),
                    container_id: cs.id.clone(),
                    started_at: cs.started_at,
                    pod_ip: pod_ip.clone(),
                    pod_uid: uid.clone(),
                    pod_ref: runtime::events::object_reference(pod),
                    has_startup,
                    results: Arc::clone(&self.results),
                    runtime: Arc::clone(&self.runtime),
                    recorder: self.recorder.clone(),
                    wake: Arc::clone(&self.wake),
                }));
                st.workers.insert(key, (cs.id.clone(), handle));
            }
        }
        let stale: Vec<_> = st
            .workers
            .keys()
            .filter(|k| k.0 == uid && !wanted.contains(*k))
            .cloned()
            .collect();
        for k in stale {
            if let Some((id, h)) = st.workers.remove(&k) {
                h.abort();
                st.verdicts.remove(&(id, k.2));
            }
        }
    }

    /// Stops every worker of pod `uid` and forgets their verdicts.
    pub fn remove_pod(&self, uid: &str) {
        let mut st = self.lock();
        let keys: Vec<_> = st.workers.keys().filter(|k| k.0 == uid).cloned().collect();
        for k in keys {
            if let Some((id, h)) = st.workers.remove(&k) {
                h.abort();
                st.verdicts.remove(&(id, k.2));
            }
        }
    }
}

impl Drop for ProbeManager {
    fn drop(&mut self) {
        for (_, (_, h)) in self.lock().workers.drain() {
            h.abort();
        }
    }
}

struct ProbeWorker {
    kind: Kind,
    probe: Probe,
    container: Container,
    container_id: String,
    started_at: Option<jiff::Timestamp>,
    pod_ip: String,
    pod_uid: String,
    pod_ref: k8s_openapi::api::core::v1::ObjectReference,
    has_startup: bool,
    results: Arc<Mutex<Results>>,
    runtime: Arc<dyn RuntimeService>,
    recorder: Option<Recorder>,
    wake: Wake,
}

impl ProbeWorker {
    fn verdict(&self, kind: Kind) -> Option<bool> {
        let st = self.results.lock().unwrap_or_else(|e| e.into_inner());
        st.verdicts.get(&(self.container_id.clone(), kind)).copied()
    }

    fn set(&self, v: bool) -> bool {
        let mut st = self.results.lock().unwrap_or_else(|e| e.into_inner());
        st.verdicts
            .insert((self.container_id.clone(), self.kind), v)
            != Some(v)
    }
}

async fn probe_worker(w: ProbeWorker) {
    let t = timing(&w.probe);
    let mut counter = Counter::default();
    let mut on_hold = false;
    let mut ticker = tokio::time::interval(t.period);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        if on_hold {
            // The container is being restarted; a new worker probes the new one.
            continue;
        }
        if w.kind == Kind::Startup && w.verdict(Kind::Startup) == Some(true) {
            return;
        }
        if w.kind != Kind::Startup && w.has_startup && w.verdict(Kind::Startup) != Some(true) {
            continue;
        }
        if let Some(started) = w.started_at {
            let since = jiff::Timestamp::now().duration_since(started);
            if since.as_secs() < i64::try_from(t.initial_delay.as_secs()).unwrap_or(i64::MAX) {
                continue;
            }
        }
        let outcome = run_probe(
            &w.probe,
            &w.container,
            &w.container_id,
            &w.pod_ip,
            w.runtime.as_ref(),
        )
        .await;
        let success = outcome == Outcome::Success;
        if let Some(rec) = &w.recorder {
            let mut r = w.pod_ref.clone();
            r.field_path = Some(format!("spec.containers{{{}}}", w.container.name));
            match &outcome {
                Outcome::Failure(out) => rec.event(
                    &r,
                    EventType::Warning,
                    "Unhealthy",
                    &format!("{} probe failed: {}", w.kind.name(), out.trim_end()),
                ),
                Outcome::Error(e) => rec.event(
                    &r,
                    EventType::Warning,
                    "Unhealthy",
                    &format!("{} probe errored: {e}", w.kind.name()),
                ),
                Outcome::Success => {}
            }
        }
        let Some(verdict) = counter.observe(success, t.success_threshold, t.failure_threshold)
        else {
            continue;
        };
        if w.set(verdict) {
            tracing::debug!(pod = %w.pod_uid, container = %w.container.name, probe = w.kind.name(), ok = verdict, "probe verdict changed");
            (w.wake)(&w.pod_uid);
        }
        if !verdict && w.kind != Kind::Readiness {
            on_hold = true;
            counter.reset();
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn thresholds() {
        let mut c = Counter::default();
        assert_eq!(c.observe(false, 1, 3), None);
        assert_eq!(c.observe(false, 1, 3), None);
        assert_eq!(c.observe(false, 1, 3), Some(false));
        assert_eq!(c.observe(true, 2, 3), None);
        assert_eq!(c.observe(true, 2, 3), Some(true));
        assert_eq!(c.observe(true, 2, 3), Some(true));
        assert_eq!(c.observe(false, 2, 1), Some(false));
    }

    #[test]
    fn defaults_and_ports() {
        let p: Probe = serde_json::from_value(json!({"httpGet": {"port": "http"}})).unwrap();
        let t = timing(&p);
        assert_eq!(t.period, Duration::from_secs(10));
        assert_eq!(t.timeout, Duration::from_secs(1));
        assert_eq!((t.success_threshold, t.failure_threshold), (1, 3));
        let c: Container = serde_json::from_value(
            json!({"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}),
        )
        .unwrap();
        assert_eq!(
            resolve_port(&IntOrString::String("http".into()), &c),
            Ok(8080)
        );
        assert_eq!(resolve_port(&IntOrString::Int(80), &c), Ok(80));
        assert!(resolve_port(&IntOrString::String("nope".into()), &c).is_err());
    }

    #[test]
    fn http_pieces() {
        let r = http_request(
            "10.0.0.1",
            80,
            "healthz",
            &[("X-Custom".into(), "1".into())],
        );
        assert!(r.starts_with(
            "GET /healthz HTTP/1.1\r\nHost: 10.0.0.1:80\r\nUser-Agent: kube-probe/1.33\r\n"
        ));
        assert!(r.contains("X-Custom: 1\r\n"));
        assert_eq!(status_code(b"HTTP/1.1 204 No Content\r\n"), Some(204));
        assert!(http_success(302) && !http_success(404) && !http_success(199));
    }

    #[tokio::test]
    async fn https_probe_skips_verification() {
        let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let cert = ck.cert.der().clone();
        let key =
            rustls_pki_types::PrivateKeyDer::try_from(ck.signing_key.serialize_der()).unwrap();
        let config = rustls::ServerConfig::builder_with_provider(Arc::new(
            rustls::crypto::ring::default_provider(),
        ))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert], key)
        .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (s, _) = listener.accept().await.unwrap();
            let mut s = acceptor.accept(s).await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await.unwrap();
            let _ = s
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
                .await;
            let _ = s.shutdown().await;
        });
        let out = http_probe(true, "127.0.0.1", port, "/", &[], Duration::from_secs(2)).await;
        assert_eq!(out, Outcome::Success);
    }

    #[tokio::test]
    async fn http_and_tcp_probes_against_a_local_server() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        tokio::spawn(async move {
            loop {
                let (mut s, _) = listener.accept().await.unwrap();
                let mut buf = [0u8; 1024];
                let n = s.read(&mut buf).await.unwrap();
                let req = String::from_utf8_lossy(&buf[..n]).to_string();
                let code = if req.starts_with("GET /ok") {
                    "200 OK"
                } else {
                    "500 Internal Server Error"
                };
                let _ = s
                    .write_all(format!("HTTP/1.1 {code}\r\nContent-Length: 0\r\n\r\n").as_bytes())
                    .await;
            }
        });
        let t = Duration::from_secs(1);
        assert_eq!(
            http_probe(false, "127.0.0.1", port, "/ok", &[], t).await,
            Outcome::Success
        );
        assert_eq!(
            http_probe(false, "127.0.0.1", port, "/bad", &[], t).await,
            Outcome::Failure("HTTP probe failed with statuscode: 500".into())
        );
        assert_eq!(tcp_probe("127.0.0.1", port, t).await, Outcome::Success);
        let closed = {
            let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
            l.local_addr().unwrap().port()
        };
        assert!(matches!(
            tcp_probe("127.0.0.1", closed, t).await,
            Outcome::Failure(_)
        ));
    }
}
