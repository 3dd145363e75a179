//! The HTTPS listener: TLS (HTTP/2 and HTTP/1.1 by ALPN), the client certificate of each
//! connection, and one task per connection. A panic in a handler answers 500 and never
//! takes the server down.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use futures::FutureExt;
use http::{Request, Response};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::RootCertStore;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::server::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

use crate::Error;
use crate::authn::DeferredClientVerifier;
use crate::handlers::{Peer, Server};
use crate::http::{Body, error_response};

/// Loads the certificates of a PEM file.
pub fn load_certs(path: &Path) -> Result<Vec<CertificateDer<'static>>, Error> {
    CertificateDer::pem_file_iter(path)
        .and_then(|it| it.collect::<Result<Vec<_>, _>>())
        .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))
}

/// The roots of a CA bundle file.
pub fn load_roots(path: &Path) -> Result<RootCertStore, Error> {
    let mut roots = RootCertStore::empty();
    for c in load_certs(path)? {
        roots
            .add(c)
            .map_err(|e| Error::Tls(format!("{}: {e}", path.display())))?;
    }
    Ok(roots)
}

/// The TLS configuration: serving certificate, optional client certificates.
pub fn tls_config(
    cert: &Path,
    key: &Path,
    client_roots: &RootCertStore,
) -> Result<Arc<ServerConfig>, Error> {
    let certs = load_certs(cert)?;
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error::Tls(format!("{}: {e}", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut cfg = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Tls(e.to_string()))?
        .with_client_cert_verifier(Arc::new(DeferredClientVerifier::new(client_roots)))
        .with_single_cert(certs, key)
        .map_err(|e| Error::Tls(e.to_string()))?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// Serves until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    server: Arc<Server>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let acceptor = TlsAcceptor::from(tls);
    let mut shutdown = Box::pin(shutdown);
    loop {
        let (tcp, addr) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
            _ = &mut shutdown => return,
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let server = Arc::clone(&server);
        tokio::spawn(async move {
            connection(acceptor, tcp, addr, server).await;
        });
    }
}

async fn connection(
    acceptor: TlsAcceptor,
    tcp: tokio::net::TcpStream,
    addr: SocketAddr,
    server: Arc<Server>,
) {
    let tls = match tokio::time::timeout(std::time::Duration::from_secs(10), acceptor.accept(tcp))
        .await
    {
        Ok(Ok(s)) => s,
        Ok(Err(e)) => {
            tracing::debug!(%addr, error = %e, "TLS handshake failed");
            return;
        }
        Err(_) => {
            tracing::debug!(%addr, "TLS handshake timed out");
            return;
        }
    };
    let certs: Vec<CertificateDer<'static>> = tls
        .get_ref()
        .1
        .peer_certificates()
        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
        .unwrap_or_default();
    let peer = Arc::new(Peer::new(certs, addr.to_string()));
    let svc = service_fn(move |req: Request<hyper::body::Incoming>| {
        let server = Arc::clone(&server);
        let peer = Arc::clone(&peer);
        async move {
            let req = req.map(crate::http::stream_body);
            let resp = std::panic::AssertUnwindSafe(server.handle(req, peer))
                .catch_unwind()
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("request handler panicked");
                    error_response(&api::ApiError::internal(
                        "the server has encountered an unexpected error",
                    ))
                });
            Ok::<Response<Body>, std::convert::Infallible>(resp)
        }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http2()
        .max_concurrent_streams(1000)
        .initial_stream_window_size(1 << 20)
        .initial_connection_window_size(4 << 20);
    if let Err(e) = builder
        .serve_connection_with_upgrades(TokioIo::new(tls), svc)
        .await
    {
        tracing::debug!(%addr, error = %e, "connection ended with an error");
    }
}
