//! A small HTTP(S) client for the server's outgoing webhook calls (admission webhooks, the
//! authorization webhook): one connection per call (HTTP/1.1, rustls), a deadline on the
//! whole exchange, and errors worded as Go's `net/http` client words them (upstream's
//! messages embed them: `Post "<url>": dial tcp <addr>: connect: connection refused`).
//! [`Kubeconfig`] is the kubeconfig-file configuration of a webhook (server, CA, client
//! certificate or bearer token).

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::rt::TokioIo;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConfig, RootCertStore};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// The most bytes read from a webhook's answer.
const MAX_RESPONSE: usize = 16 * 1024 * 1024;

/// The system's trust roots (Debian's bundle), read once; empty when absent.
pub fn system_roots() -> RootCertStore {
    static ROOTS: OnceLock<RootCertStore> = OnceLock::new();
    ROOTS
        .get_or_init(|| {
            let mut roots = RootCertStore::empty();
            for path in [
                "/etc/ssl/certs/ca-certificates.crt",
                "/etc/pki/tls/certs/ca-bundle.crt",
            ] {
                if let Ok(bytes) = std::fs::read(path) {
                    for c in CertificateDer::pem_slice_iter(&bytes).flatten() {
                        let _ = roots.add(c);
                    }
                    break;
                }
            }
            roots
        })
        .clone()
}

/// The roots of a PEM bundle (`caBundle`, `certificate-authority-data`).
pub fn roots_from_pem(pem: &[u8]) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(pem) {
        let c = c.map_err(|e| format!("unable to load root certificates: {e}"))?;
        roots
            .add(c)
            .map_err(|e| format!("unable to load root certificates: {e}"))?;
    }
    if roots.is_empty() {
        return Err("unable to load root certificates: unable to parse bytes as PEM block".into());
    }
    Ok(roots)
}

/// A client TLS configuration trusting `roots`, presenting `client` when given.
pub fn tls_config(
    roots: RootCertStore,
    client: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<Arc<ClientConfig>, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots);
    let mut cfg = match client {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| e.to_string())?,
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

fn join_host_port(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Go's `dial tcp <addr>: ...` text of a connect failure.
fn dial_error(addr: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::ConnectionRefused => {
            format!("dial tcp {addr}: connect: connection refused")
        }
        std::io::ErrorKind::TimedOut => format!("dial tcp {addr}: i/o timeout"),
        _ => format!("dial tcp {addr}: {e}"),
    }
}

/// Go's `crypto/tls` / `crypto/x509` text of a handshake failure.
fn tls_error(host: &str, e: &std::io::Error) -> String {
    use rustls::CertificateError as C;
    let Some(err) = e.get_ref().and_then(|i| i.downcast_ref::<rustls::Error>()) else {
        return e.to_string();
    };
    let verify = |m: &str| format!("tls: failed to verify certificate: x509: {m}");
    match err {
        rustls::Error::InvalidCertificate(C::UnknownIssuer | C::BadSignature) => {
            verify("certificate signed by unknown authority")
        }
        rustls::Error::InvalidCertificate(
            C::NotValidForName | C::NotValidForNameContext { .. },
        ) => verify(&format!("certificate is not valid for {host}")),
        rustls::Error::InvalidCertificate(
            C::Expired | C::ExpiredContext { .. } | C::NotValidYet | C::NotValidYetContext { .. },
        ) => verify("certificate has expired or is not yet valid"),
        rustls::Error::AlertReceived(a) => format!("remote error: tls: {a:?}"),
        other => format!("tls: {other}"),
    }
}

async fn exchange<S>(io: S, request: http::Request<Full<Bytes>>) -> Result<(u16, Vec<u8>), String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    let driver = tokio::spawn(async move {
        let _ = conn.await;
    });
    let result = async {
        let resp = sender.send_request(request).await.map_err(|e| {
            if e.is_incomplete_message() {
                "EOF".to_string()
            } else {
                e.to_string()
            }
        })?;
        let status = resp.status().as_u16();
        let body = Limited::new(resp.into_body(), MAX_RESPONSE)
            .collect()
            .await
            .map_err(|e| e.to_string())?
            .to_bytes();
        Ok((status, body.to_vec()))
    }
    .await;
    driver.abort();
    result
}

/// POSTs `body` (JSON) to `url` (`https://` or `http://`), connecting to `connect`
/// (`host:port`) instead of the URL's host when given; TLS names the URL's host. The
/// whole exchange has `timeout`. Any failure to get an HTTP answer is `Err`, worded
/// `Post "<url>": <Go's error>`.
pub async fn post(
    tls: &Arc<ClientConfig>,
    url: &str,
    connect: Option<&str>,
    headers: &[(http::header::HeaderName, String)],
    body: Vec<u8>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    send(
        tls,
        http::Method::POST,
        url,
        connect,
        headers,
        Some(body),
        timeout,
    )
    .await
}

/// GETs `url` as [`post`] posts (errors worded `Get "<url>": ...`).
pub async fn get(
    tls: &Arc<ClientConfig>,
    url: &str,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    send(tls, http::Method::GET, url, None, &[], None, timeout).await
}

async fn send(
    tls: &Arc<ClientConfig>,
    method: http::Method,
    url: &str,
    connect: Option<&str>,
    headers: &[(http::header::HeaderName, String)],
    body: Option<Vec<u8>>,
    timeout: Duration,
) -> Result<(u16, Vec<u8>), String> {
    let verb = match method {
        http::Method::GET => "Get",
        _ => "Post",
    };
    let fail = |e: String| format!("{verb} {url:?}: {e}");
    let uri: http::Uri = url.parse().map_err(|e| fail(format!("{e}")))?;
    let https = match uri.scheme_str() {
        Some("https") => true,
        Some("http") => false,
        other => {
            return Err(fail(format!(
                "unsupported protocol scheme {:?}",
                other.unwrap_or("")
            )));
        }
    };
    let host = uri
        .host()
        .ok_or_else(|| fail("no Host in request URL".into()))?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    let port = uri.port_u16().unwrap_or(if https { 443 } else { 80 });
    let authority = uri
        .authority()
        .map(|a| a.to_string())
        .unwrap_or_else(|| join_host_port(&host, port));
    let path = uri.path_and_query().map_or("/", |p| p.as_str()).to_string();
    let addr = connect.map_or_else(|| join_host_port(&host, port), str::to_string);
    let mut builder = http::Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, authority)
        .header(http::header::ACCEPT, "application/json, */*")
        .header(http::header::USER_AGENT, "rkube-apiserver");
    if body.is_some() {
        builder = builder.header(http::header::CONTENT_TYPE, "application/json");
    }
    for (k, v) in headers {
        builder = builder.header(k, v);
    }
    let request = builder
        .body(Full::new(Bytes::from(body.unwrap_or_default())))
        .map_err(|e| fail(e.to_string()))?;
    let tls = Arc::clone(tls);
    let call = async move {
        let tcp = TcpStream::connect(&addr)
            .await
            .map_err(|e| dial_error(&addr, &e))?;
        let _ = tcp.set_nodelay(true);
        if https {
            let name = ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
            let stream = tokio_rustls::TlsConnector::from(tls)
                .connect(name, tcp)
                .await
                .map_err(|e| tls_error(&host, &e))?;
            exchange(stream, request).await
        } else {
            exchange(tcp, request).await
        }
    };
    match tokio::time::timeout(timeout, call).await {
        Ok(r) => r.map_err(fail),
        Err(_) => Err(fail("context deadline exceeded".into())),
    }
}

/// A webhook configured by a kubeconfig file (`--authorization-webhook-config-file`): the
/// current context's cluster and user.
#[derive(Clone)]
pub struct Kubeconfig {
    pub server: String,
    pub tls: Arc<ClientConfig>,
    /// `Authorization: Bearer` (`token` or `tokenFile`).
    pub token: Option<String>,
}

impl std::fmt::Debug for Kubeconfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kubeconfig")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

fn named<'a>(
    doc: &'a serde_json::Value,
    list: &str,
    name: Option<&str>,
) -> Option<&'a serde_json::Value> {
    let items = doc.get(list)?.as_array()?;
    match name {
        Some(n) => items
            .iter()
            .find(|i| i.get("name").and_then(|v| v.as_str()) == Some(n)),
        None => items.first(),
    }
}

impl Kubeconfig {
    /// Reads a kubeconfig file: `current-context` (or the first context, or the first
    /// cluster and user), `server`, `certificate-authority(-data)` (else the system's
    /// roots), `client-certificate(-data)` with `client-key(-data)`, `token` or
    /// `tokenFile`. Relative paths are relative to the file's directory.
    pub fn load(path: &Path) -> Result<Kubeconfig, String> {
        let err = |m: String| format!("{}: {m}", path.display());
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let doc: serde_json::Value =
            serde_yaml_ng::from_str(&text).map_err(|e| err(e.to_string()))?;
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let resolve = |p: &str| -> PathBuf {
            let p = Path::new(p);
            if p.is_absolute() {
                p.to_path_buf()
            } else {
                dir.join(p)
            }
        };
        let current = doc
            .get("current-context")
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty());
        let context = named(&doc, "contexts", current).and_then(|c| c.get("context"));
        if current.is_some() && context.is_none() {
            return Err(err(format!(
                "context {:?} not found",
                current.unwrap_or_default()
            )));
        }
        let field = |c: Option<&serde_json::Value>, k: &str| {
            c.and_then(|c| c.get(k))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let cluster = named(&doc, "clusters", field(context, "cluster").as_deref())
            .and_then(|c| c.get("cluster"))
            .ok_or_else(|| err("no cluster".into()))?;
        let user =
            named(&doc, "users", field(context, "user").as_deref()).and_then(|u| u.get("user"));
        let s = |v: Option<&serde_json::Value>, k: &str| field(v, k);
        let server = s(Some(cluster), "server")
            .filter(|s| !s.is_empty())
            .ok_or_else(|| err("invalid configuration: no server found for cluster".into()))?;
        let b64 = |v: String| {
            use base64::Engine;
            base64::engine::general_purpose::STANDARD
                .decode(v.trim())
                .map_err(|e| err(e.to_string()))
        };
        let read = |p: String| std::fs::read(resolve(&p)).map_err(|e| err(format!("{p}: {e}")));
        let ca = match (
            s(Some(cluster), "certificate-authority-data"),
            s(Some(cluster), "certificate-authority"),
        ) {
            (Some(d), _) => Some(b64(d)?),
            (None, Some(p)) => Some(read(p)?),
            (None, None) => None,
        };
        let roots = match ca {
            Some(pem) => roots_from_pem(&pem).map_err(err)?,
            None => system_roots(),
        };
        let cert = match (
            s(user, "client-certificate-data"),
            s(user, "client-certificate"),
        ) {
            (Some(d), _) => Some(b64(d)?),
            (None, Some(p)) => Some(read(p)?),
            (None, None) => None,
        };
        let key = match (s(user, "client-key-data"), s(user, "client-key")) {
            (Some(d), _) => Some(b64(d)?),
            (None, Some(p)) => Some(read(p)?),
            (None, None) => None,
        };
        let client = match (cert, key) {
            (Some(c), Some(k)) => {
                let certs = CertificateDer::pem_slice_iter(&c)
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(|e| err(format!("client certificate: {e}")))?;
                let key = PrivateKeyDer::from_pem_slice(&k)
                    .map_err(|e| err(format!("client key: {e}")))?;
                Some((certs, key))
            }
            (None, None) => None,
            _ => {
                return Err(err(
                    "client-certificate and client-key must be given together".into(),
                ));
            }
        };
        let token = match (s(user, "token"), s(user, "tokenFile")) {
            (Some(t), _) => Some(t),
            (None, Some(p)) => Some(String::from_utf8_lossy(&read(p)?).trim().to_string()),
            (None, None) => None,
        };
        Ok(Kubeconfig {
            server,
            tls: tls_config(roots, client).map_err(err)?,
            token,
        })
    }

    /// POSTs `body` to the server URL.
    pub async fn post(&self, body: Vec<u8>, timeout: Duration) -> Result<(u16, Vec<u8>), String> {
        let headers: Vec<(http::header::HeaderName, String)> = self
            .token
            .iter()
            .map(|t| (http::header::AUTHORIZATION, format!("Bearer {t}")))
            .collect();
        post(&self.tls, &self.server, None, &headers, body, timeout).await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn any_roots() -> Arc<ClientConfig> {
        tls_config(RootCertStore::empty(), None).unwrap()
    }

    #[tokio::test]
    async fn errors_are_worded_as_gos() {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        drop(l);
        let url = format!("https://127.0.0.1:{port}/x?timeout=10s");
        let e = post(
            &any_roots(),
            &url,
            None,
            &[],
            vec![],
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            format!("Post \"{url}\": dial tcp 127.0.0.1:{port}: connect: connection refused")
        );

        // A server that never answers.
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let hold = tokio::spawn(async move {
            let _conn = l.accept().await;
            tokio::time::sleep(Duration::from_secs(10)).await;
        });
        let url = format!("http://127.0.0.1:{port}/");
        let e = post(
            &any_roots(),
            &url,
            None,
            &[],
            vec![],
            Duration::from_millis(200),
        )
        .await
        .unwrap_err();
        assert_eq!(e, format!("Post \"{url}\": context deadline exceeded"));
        hold.abort();

        // A certificate nobody vouches for.
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
            )
            .unwrap();
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(server));
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = l.local_addr().unwrap().port();
        let serve = tokio::spawn(async move {
            if let Ok((tcp, _)) = l.accept().await {
                let _ = acceptor.accept(tcp).await;
            }
        });
        let url = format!("https://127.0.0.1:{port}/hook");
        let e = post(
            &any_roots(),
            &url,
            None,
            &[],
            vec![],
            Duration::from_secs(5),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e,
            format!(
                "Post \"{url}\": tls: failed to verify certificate: x509: certificate signed by unknown authority"
            )
        );
        serve.abort();
        // Its PEM loads as a root; junk does not.
        assert!(roots_from_pem(b"junk").is_err());
        let roots = roots_from_pem(cert.pem().as_bytes()).unwrap();
        assert_eq!(roots.len(), 1);
    }

    #[test]
    fn kubeconfig_files() {
        let dir = tempfile::tempdir().unwrap();
        let ca = testkit::TestCa::new(dir.path(), "hook");
        let ca_name = ca
            .ca_file
            .file_name()
            .unwrap()
            .to_str()
            .unwrap()
            .to_string();
        let path = dir.path().join("kc.yaml");
        std::fs::write(
            &path,
            format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: other\n  cluster:\n    server: https://other\n- name: hook\n  cluster:\n    server: https://127.0.0.1:1/authorize\n    certificate-authority: {ca_name}\nusers:\n- name: u\n  user:\n    token: secret\ncontexts:\n- name: c\n  context:\n    cluster: hook\n    user: u\ncurrent-context: c\n"
            ),
        )
        .unwrap();
        let kc = Kubeconfig::load(&path).unwrap();
        assert_eq!(kc.server, "https://127.0.0.1:1/authorize");
        assert_eq!(kc.token.as_deref(), Some("secret"));
        std::fs::write(&path, "apiVersion: v1\nkind: Config\nclusters: []\n").unwrap();
        assert!(Kubeconfig::load(&path).unwrap_err().ends_with("no cluster"));
        assert!(Kubeconfig::load(Path::new("/nonexistent")).is_err());
    }
}
