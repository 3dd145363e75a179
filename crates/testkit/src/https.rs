//! A small HTTPS JSON server for tests that play the far side of the API server's outgoing
//! calls (admission and authorization webhooks, an OIDC issuer): it runs on its own
//! runtime on loopback with a certificate from a [`TestCa`], answers every request with
//! the handler's `(status, JSON)`, and remembers each request's path and JSON body.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use serde_json::Value;

use crate::TestCa;

/// One request: its path, `Authorization` header and body.
pub struct Request<'a> {
    pub method: &'a str,
    pub path: &'a str,
    pub authorization: Option<&'a str>,
    /// The body as JSON (`Null` when it is not JSON).
    pub body: &'a Value,
}

/// What a request gets: an HTTP status and a JSON body.
pub type Handler = dyn Fn(&Request<'_>) -> (u16, Value) + Send + Sync;

/// The requests served so far: path and JSON body.
pub type Seen = Arc<Mutex<Vec<(String, Value)>>>;

/// One request as it arrived: everything a "what went over the wire" test checks.
#[derive(Debug, Clone)]
pub struct Recorded {
    pub method: String,
    /// Path and query.
    pub path: String,
    /// Every header, names lowercase, in arrival order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
    /// The client certificate (DER) of the connection, when the client sent one (only
    /// with [`HttpsServer::start_accepting_client_certs`]).
    pub client_cert: Option<Vec<u8>>,
}

impl Recorded {
    /// The first value of a header (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// Every value of a header.
    pub fn header_all(&self, name: &str) -> Vec<&str> {
        self.headers
            .iter()
            .filter(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
            .collect()
    }
}

/// All requests served so far, in full.
pub type Requests = Arc<Mutex<Vec<Recorded>>>;

/// A running server; stops when dropped.
pub struct HttpsServer {
    pub port: u16,
    pub seen: Seen,
    /// Every request in full (headers, query, body, client certificate).
    pub requests: Requests,
    runtime: Option<tokio::runtime::Runtime>,
}

/// Accepts any client certificate (or none): the server records what it got.
#[derive(Debug)]
struct AnyClientCert(Arc<rustls::crypto::CryptoProvider>);

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls::pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
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
        cert: &CertificateDer<'_>,
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

fn fail(what: &str, e: impl std::fmt::Display) -> ! {
    panic!("https test server: {what}: {e}")
}

impl HttpsServer {
    /// Serves `handler` on `127.0.0.1` with a certificate of `ca` for `127.0.0.1` and
    /// `localhost`.
    pub fn start(ca: &TestCa, handler: Arc<Handler>) -> HttpsServer {
        Self::launch(ca, handler, false)
    }

    /// Like [`HttpsServer::start`], but asks for (and accepts any) client certificate,
    /// recorded in [`Recorded::client_cert`].
    pub fn start_accepting_client_certs(ca: &TestCa, handler: Arc<Handler>) -> HttpsServer {
        Self::launch(ca, handler, true)
    }

    fn launch(ca: &TestCa, handler: Arc<Handler>, client_certs: bool) -> HttpsServer {
        let issued = ca.issue("https-server", "https-server", &["127.0.0.1", "localhost"]);
        let certs = CertificateDer::pem_file_iter(&issued.cert_file)
            .unwrap_or_else(|e| fail("certificate", e))
            .collect::<Result<Vec<_>, _>>()
            .unwrap_or_else(|e| fail("certificate", e));
        let key = PrivateKeyDer::from_pem_file(&issued.key_file).unwrap_or_else(|e| fail("key", e));
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = rustls::ServerConfig::builder_with_provider(Arc::clone(&provider))
            .with_safe_default_protocol_versions()
            .unwrap_or_else(|e| fail("tls", e));
        let builder = if client_certs {
            builder.with_client_cert_verifier(Arc::new(AnyClientCert(provider)))
        } else {
            builder.with_no_client_auth()
        };
        let mut cfg = builder
            .with_single_cert(certs, key)
            .unwrap_or_else(|e| fail("tls", e));
        cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(cfg));
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap_or_else(|e| fail("runtime", e));
        let listener = runtime
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .unwrap_or_else(|e| fail("bind", e));
        let port = listener
            .local_addr()
            .unwrap_or_else(|e| fail("bind", e))
            .port();
        let seen: Seen = Arc::default();
        let seen2 = Arc::clone(&seen);
        let requests: Requests = Arc::default();
        let requests2 = Arc::clone(&requests);
        runtime.spawn(async move {
            loop {
                let Ok((tcp, _)) = listener.accept().await else {
                    continue;
                };
                let acceptor = acceptor.clone();
                let seen = Arc::clone(&seen2);
                let requests = Arc::clone(&requests2);
                let handler = Arc::clone(&handler);
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(tcp).await else {
                        return;
                    };
                    let client_cert = tls
                        .get_ref()
                        .1
                        .peer_certificates()
                        .and_then(|c| c.first())
                        .map(|c| c.as_ref().to_vec());
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let seen = Arc::clone(&seen);
                        let requests = Arc::clone(&requests);
                        let handler = Arc::clone(&handler);
                        let client_cert = client_cert.clone();
                        async move {
                            let method = req.method().to_string();
                            let path = req.uri().path().to_string();
                            let path_and_query = req
                                .uri()
                                .path_and_query()
                                .map(|p| p.as_str().to_string())
                                .unwrap_or_else(|| path.clone());
                            let headers: Vec<(String, String)> = req
                                .headers()
                                .iter()
                                .map(|(k, v)| {
                                    (
                                        k.as_str().to_string(),
                                        String::from_utf8_lossy(v.as_bytes()).into_owned(),
                                    )
                                })
                                .collect();
                            let authorization = req
                                .headers()
                                .get("authorization")
                                .and_then(|v| v.to_str().ok())
                                .map(str::to_string);
                            let bytes = req
                                .into_body()
                                .collect()
                                .await
                                .map(|b| b.to_bytes())
                                .unwrap_or_default();
                            let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                            if let Ok(mut s) = seen.lock() {
                                s.push((path.clone(), body.clone()));
                            }
                            if let Ok(mut r) = requests.lock() {
                                r.push(Recorded {
                                    method: method.clone(),
                                    path: path_and_query,
                                    headers,
                                    body: bytes.to_vec(),
                                    client_cert,
                                });
                            }
                            let (code, out) = handler(&Request {
                                method: &method,
                                path: &path,
                                authorization: authorization.as_deref(),
                                body: &body,
                            });
                            let response = hyper::Response::builder()
                                .status(code)
                                .header("content-type", "application/json")
                                .body(Full::new(Bytes::from(out.to_string())))
                                .unwrap_or_else(|e| fail("response", e));
                            Ok::<_, Infallible>(response)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        HttpsServer {
            port,
            seen,
            requests,
            runtime: Some(runtime),
        }
    }

    /// `https://127.0.0.1:<port><path>`.
    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.port)
    }

    /// How many requests matched `pred` (path, body).
    pub fn count(&self, pred: impl Fn(&str, &Value) -> bool) -> usize {
        self.seen
            .lock()
            .map(|s| s.iter().filter(|(p, b)| pred(p, b)).count())
            .unwrap_or(0)
    }

    /// A copy of every request so far.
    pub fn recorded(&self) -> Vec<Recorded> {
        self.requests.lock().map(|r| r.clone()).unwrap_or_default()
    }

    /// Stops serving (the port refuses connections afterwards).
    pub fn stop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_timeout(Duration::from_secs(2));
        }
    }
}

impl Drop for HttpsServer {
    fn drop(&mut self) {
        self.stop();
    }
}
