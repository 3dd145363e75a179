//! One hop of an upgrade-aware HTTP/1.1 reverse proxy, as upstream's
//! `k8s.io/apimachinery/pkg/util/proxy.UpgradeAwareHandler`: the API server forwards
//! `pods/log`, `pods/exec`, `pods/attach`, `pods/portforward` and `*/proxy` requests to
//! the kubelet, and the kubelet forwards exec/attach/port-forward to the container
//! runtime's streaming server. Plain requests are forwarded and their (possibly endless)
//! response bodies streamed back; a request that upgrades the connection (SPDY/3.1,
//! WebSocket) is forwarded with its upgrade headers and, once the backend answers
//! `101 Switching Protocols`, the two upgraded connections are spliced together byte for
//! byte — neither hop needs to understand the streaming protocol.
//!
//! The API server also answers kubectl ≥ 1.30's WebSocket upgrades, which no runtime
//! streaming server speaks: [`ws`] is the server side of WebSocket (handshake, frames,
//! the port-forward SPDY tunnel), [`spdy`] the client side of SPDY/3.1 framing, and
//! [`translate`] turns a `v5.channel.k8s.io` exec/attach session into SPDY.
//!
//! **Invariant:** a hop never buffers a whole body: logs followed with `-f` and exec
//! sessions run for as long as the client keeps them open.

pub mod spdy;
pub mod translate;
pub mod ws;

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use http::{Request, Response};
use http_body_util::{BodyStream, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper::upgrade::OnUpgrade;
use hyper_util::rt::TokioIo;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::{ClientConfig, DigitallySignedStruct, SignatureScheme};
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

/// What forwarding can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("dial tcp {addr}: {message}")]
    Dial { addr: String, message: String },
    #[error("tls handshake with {host}: {message}")]
    Tls { host: String, message: String },
    #[error("{0}")]
    Http(String),
}

/// A connection to a backend.
pub trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A client TLS configuration that does not verify the backend's certificate (the API
/// server's kubelet client without `--kubelet-certificate-authority`, as upstream),
/// presenting `client` (certificate chain and key) when given.
pub fn insecure_tls(
    client: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
) -> Result<Arc<ClientConfig>, Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(Arc::clone(&provider))
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Http(e.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(AnyServer(provider)));
    let mut cfg = match client {
        Some((certs, key)) => builder
            .with_client_auth_cert(certs, key)
            .map_err(|e| Error::Http(e.to_string()))?,
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Accepts any server certificate; signatures are still checked so the handshake is
/// sound against the certificate presented.
#[derive(Debug)]
struct AnyServer(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for AnyServer {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
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
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// Dials `host:port` over TCP, then TLS when `tls` is given, within `timeout`.
pub async fn dial(
    host: &str,
    port: u16,
    tls: Option<&Arc<ClientConfig>>,
    timeout: Duration,
) -> Result<Box<dyn Io>, Error> {
    let addr = if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    };
    let connect = async {
        let tcp = TcpStream::connect(&addr).await.map_err(|e| Error::Dial {
            addr: addr.clone(),
            message: e.to_string(),
        })?;
        let _ = tcp.set_nodelay(true);
        match tls {
            None => Ok(Box::new(tcp) as Box<dyn Io>),
            Some(cfg) => {
                let name = ServerName::try_from(host.to_string()).map_err(|e| Error::Tls {
                    host: host.to_string(),
                    message: e.to_string(),
                })?;
                let stream = tokio_rustls::TlsConnector::from(Arc::clone(cfg))
                    .connect(name, tcp)
                    .await
                    .map_err(|e| Error::Tls {
                        host: host.to_string(),
                        message: e.to_string(),
                    })?;
                Ok(Box::new(stream) as Box<dyn Io>)
            }
        }
    };
    match tokio::time::timeout(timeout, connect).await {
        Ok(r) => r,
        Err(_) => Err(Error::Dial {
            addr,
            message: "i/o timeout".into(),
        }),
    }
}

/// Sends `req` over `io` and returns the backend's response head with its body still
/// streaming. When the backend switches protocols and `client` (the upgrade of the
/// request being proxied) is given, both upgraded connections are joined in a background
/// task that copies bytes both ways until either side closes.
pub async fn roundtrip<B>(
    io: Box<dyn Io>,
    req: Request<B>,
    client: Option<OnUpgrade>,
) -> Result<Response<Incoming>, Error>
where
    B: hyper::body::Body<Data = Bytes> + Send + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| Error::Http(e.to_string()))?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(error = %e, "proxied connection ended");
        }
    });
    let mut resp = sender
        .send_request(req)
        .await
        .map_err(|e| Error::Http(e.to_string()))?;
    if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS
        && let Some(client) = client
    {
        let backend = hyper::upgrade::on(&mut resp);
        tokio::spawn(async move {
            match futures::future::try_join(client, backend).await {
                Ok((a, b)) => {
                    let mut a = TokioIo::new(a);
                    let mut b = TokioIo::new(b);
                    if let Err(e) = tokio::io::copy_bidirectional(&mut a, &mut b).await {
                        tracing::debug!(error = %e, "upgraded stream ended");
                    }
                }
                Err(e) => tracing::debug!(error = %e, "upgrade failed"),
            }
        });
    }
    Ok(resp)
}

/// The body of a proxied response as a stream that ends at the backend's first error
/// (the client sees a truncated body, as with upstream's proxy).
pub fn streaming_body(
    body: Incoming,
) -> impl hyper::body::Body<Data = Bytes, Error = Infallible> + Send + 'static {
    let frames = BodyStream::new(body)
        .take_while(|r| futures::future::ready(r.is_ok()))
        .filter_map(|r| futures::future::ready(r.ok().map(Ok::<Frame<Bytes>, Infallible>)));
    StreamBody::new(Box::pin(frames) as Pin<Box<dyn futures::Stream<Item = _> + Send>>)
}

/// The headers a hop forwards: everything but hop-by-hop headers, except that an upgrade
/// request keeps `Connection: Upgrade` and `Upgrade` (upstream's proxy does the same).
pub fn forwarded_headers(headers: &http::HeaderMap, upgrade: bool) -> http::HeaderMap {
    let mut out = http::HeaderMap::new();
    for (k, v) in headers {
        let name = k.as_str();
        let hop = matches!(
            name,
            "connection"
                | "keep-alive"
                | "proxy-connection"
                | "proxy-authenticate"
                | "proxy-authorization"
                | "te"
                | "trailer"
                | "transfer-encoding"
                | "upgrade"
                | "authorization"
                | "host"
        );
        if !hop {
            out.append(k.clone(), v.clone());
        }
    }
    if upgrade {
        if let Some(u) = headers.get(http::header::UPGRADE) {
            out.insert(http::header::UPGRADE, u.clone());
        }
        out.insert(
            http::header::CONNECTION,
            http::HeaderValue::from_static("Upgrade"),
        );
    }
    out
}

/// Whether a request asks to upgrade its connection (`Connection: Upgrade` plus an
/// `Upgrade` header).
pub fn is_upgrade(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::UPGRADE)
        && headers
            .get_all(http::header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// An empty body for requests that carry none.
pub fn empty() -> http_body_util::Empty<Bytes> {
    http_body_util::Empty::new()
}

/// Collects a small response body (error answers from a backend), at most `limit` bytes.
pub async fn collect_limited(body: Incoming, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    let mut stream = BodyStream::new(body);
    while let Some(Ok(frame)) = stream.next().await {
        if let Ok(data) = frame.into_data() {
            out.extend_from_slice(&data);
            if out.len() >= limit {
                out.truncate(limit);
                break;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn upgrade_detection_and_hop_headers() {
        let mut h = http::HeaderMap::new();
        h.insert("connection", "keep-alive, Upgrade".parse().unwrap());
        h.insert("upgrade", "SPDY/3.1".parse().unwrap());
        h.insert(
            "x-stream-protocol-version",
            "v4.channel.k8s.io".parse().unwrap(),
        );
        h.insert("authorization", "Bearer x".parse().unwrap());
        assert!(is_upgrade(&h));
        let f = forwarded_headers(&h, true);
        assert_eq!(f.get("upgrade").unwrap(), "SPDY/3.1");
        assert_eq!(f.get("connection").unwrap(), "Upgrade");
        assert!(f.get("authorization").is_none());
        assert_eq!(
            f.get("x-stream-protocol-version").unwrap(),
            "v4.channel.k8s.io"
        );
        let f = forwarded_headers(&h, false);
        assert!(f.get("upgrade").is_none());
        h.remove("upgrade");
        assert!(!is_upgrade(&h));
    }

    /// A backend that answers 101 and echoes bytes: the proxied client's upgraded stream
    /// reaches it.
    #[tokio::test]
    async fn splices_upgraded_connections() {
        let backend = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = backend.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (mut s, _) = backend.accept().await.unwrap();
            let mut buf = vec![0u8; 4096];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).await.unwrap();
                head.extend_from_slice(&buf[..n]);
            }
            s.write_all(
                b"HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
            )
            .await
            .unwrap();
            loop {
                let n = s.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                s.write_all(&buf[..n]).await.unwrap();
            }
        });

        // The front: a hyper server whose handler proxies to the backend.
        let front = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let front_port = front.local_addr().unwrap().port();
        tokio::spawn(async move {
            let (s, _) = front.accept().await.unwrap();
            let svc = hyper::service::service_fn(move |mut req: Request<Incoming>| async move {
                let upgrade = hyper::upgrade::on(&mut req);
                let io = dial("127.0.0.1", port, None, Duration::from_secs(5))
                    .await
                    .unwrap();
                let mut out = Request::builder().method("GET").uri("/x");
                for (k, v) in forwarded_headers(req.headers(), true).iter() {
                    out = out.header(k, v);
                }
                let out = out.header("host", "backend").body(empty()).unwrap();
                let resp = roundtrip(io, out, Some(upgrade)).await.unwrap();
                let (parts, body) = resp.into_parts();
                Ok::<_, Infallible>(Response::from_parts(parts, streaming_body(body)))
            });
            hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(s), svc)
                .with_upgrades()
                .await
                .unwrap();
        });

        let mut c = TcpStream::connect(("127.0.0.1", front_port)).await.unwrap();
        c.write_all(
            b"GET /x HTTP/1.1\r\nHost: front\r\nConnection: Upgrade\r\nUpgrade: echo\r\n\r\n",
        )
        .await
        .unwrap();
        let mut buf = vec![0u8; 4096];
        let mut head = Vec::new();
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = c.read(&mut buf).await.unwrap();
            head.extend_from_slice(&buf[..n]);
        }
        assert!(
            head.starts_with(b"HTTP/1.1 101"),
            "{}",
            String::from_utf8_lossy(&head)
        );
        c.write_all(b"hello").await.unwrap();
        let mut got = [0u8; 5];
        c.read_exact(&mut got).await.unwrap();
        assert_eq!(&got, b"hello");
    }
}
