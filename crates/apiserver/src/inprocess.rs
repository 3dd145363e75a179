//! The in-process transport: a `tower::Service` that hands a kube-rs client's requests to
//! [`Server::handle`] directly, for the components `rkube server` runs in its own process
//! (the controller manager, the scheduler). No TLS, no HTTP framing, no socket; the
//! response body is the handler's own, so watches stream as they do over HTTPS.
//!
//! Nothing is bypassed: each request goes through the whole handler chain (authentication,
//! impersonation, authorization, admission, audit, metrics) with the identity the client
//! would present over TLS — a client certificate chain, which becomes the [`Peer`]'s
//! certificates (verified by the x509 authenticator against the client CA once per
//! `InProcess`, as once per connection), or a bearer token put in the `Authorization`
//! header of every request (a service account's, for the per-controller clients).

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::FutureExt;
use http::{HeaderValue, Request, Response, header};
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use tracing::Instrument;

use crate::Error;
use crate::handlers::{Peer, Server};
use crate::http::{Body, error_response};

/// The peer address in-process requests report (audit `sourceIPs`, logs): loopback, as the
/// components' HTTPS connections had.
pub const PEER_ADDR: &str = "127.0.0.1:0";

/// A transport to the API server in this process for one identity; clones share it (and
/// the x509 verdict), as the requests of one connection do.
#[derive(Clone)]
pub struct InProcess {
    server: Arc<Server>,
    peer: Arc<Peer>,
    /// `Bearer <token>` for a token identity.
    authorization: Option<HeaderValue>,
    /// The `User-Agent` of requests that set none (the component's name).
    user_agent: Option<HeaderValue>,
}

impl std::fmt::Debug for InProcess {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcess")
            .field("certificates", &self.peer.certs.len())
            .field("token", &self.authorization.is_some())
            .field("user_agent", &self.user_agent)
            .finish()
    }
}

impl InProcess {
    /// Requests presenting the client certificate chain `pem` (leaf first), as a TLS
    /// client with that certificate would.
    pub fn with_certificates(server: Arc<Server>, pem: &[u8]) -> Result<InProcess, Error> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| Error::Tls(format!("in-process client certificate: {e}")))?;
        if certs.is_empty() {
            return Err(Error::Tls(
                "in-process client certificate: no certificate in the PEM".into(),
            ));
        }
        Ok(InProcess {
            server,
            peer: Arc::new(Peer::new(certs, PEER_ADDR.into())),
            authorization: None,
            user_agent: None,
        })
    }

    /// Requests presenting `token` as their bearer token.
    pub fn with_token(server: Arc<Server>, token: &str) -> Result<InProcess, Error> {
        let mut value = HeaderValue::from_str(&format!("Bearer {}", token.trim()))
            .map_err(|_| Error::Config("in-process client token: not a header value".into()))?;
        value.set_sensitive(true);
        Ok(InProcess {
            server,
            peer: Arc::new(Peer::new(Vec::new(), PEER_ADDR.into())),
            authorization: Some(value),
            user_agent: None,
        })
    }

    /// Requests that set no `User-Agent` carry `agent`, as a component's HTTPS client
    /// sends its own.
    pub fn with_user_agent(mut self, agent: &str) -> Result<InProcess, Error> {
        let value = HeaderValue::from_str(agent).map_err(|_| {
            Error::Config(format!(
                "in-process user agent {agent:?}: not a header value"
            ))
        })?;
        self.user_agent = Some(value);
        Ok(self)
    }

    /// A kube-rs client over this transport (default namespace `default`). Needs a Tokio
    /// runtime (the client spawns its request buffer).
    pub fn client(self) -> kube::Client {
        kube::Client::new(self, "default")
    }
}

type ResponseFuture =
    Pin<Box<dyn Future<Output = Result<Response<GuardedBody>, tower::BoxError>> + Send + 'static>>;

/// A response body whose panics end the body with an error instead of unwinding into the
/// caller's task (over HTTPS they would end the connection's task, not the client's).
pub struct GuardedBody {
    inner: Body,
    done: bool,
}

impl hyper::body::Body for GuardedBody {
    type Data = bytes::Bytes;
    type Error = tower::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        if self.done {
            return Poll::Ready(None);
        }
        let inner = &mut self.inner;
        match std::panic::catch_unwind(AssertUnwindSafe(|| Pin::new(inner).poll_frame(cx))) {
            Ok(Poll::Ready(Some(Ok(frame)))) => Poll::Ready(Some(Ok(frame))),
            Ok(Poll::Ready(Some(Err(never)))) => match never {},
            Ok(Poll::Ready(None)) => {
                self.done = true;
                Poll::Ready(None)
            }
            Ok(Poll::Pending) => Poll::Pending,
            Err(_) => {
                self.done = true;
                tracing::error!("response body panicked (in-process request)");
                Poll::Ready(Some(Err("the server's response body panicked".into())))
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.done || self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl tower::Service<Request<kube::client::Body>> for InProcess {
    type Response = Response<GuardedBody>;
    type Error = tower::BoxError;
    type Future = ResponseFuture;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request<kube::client::Body>) -> Self::Future {
        let server = Arc::clone(&self.server);
        let peer = Arc::clone(&self.peer);
        let authorization = self.authorization.clone();
        let user_agent = self.user_agent.clone();
        Box::pin(async move {
            let (mut parts, body) = req.into_parts();
            // kube-rs sends request bodies whole (one frame); the handler applies the
            // 3 MiB limit as for any request.
            let bytes = http_body_util::BodyExt::collect(body).await?.to_bytes();
            if let Some(value) = authorization {
                parts.headers.insert(header::AUTHORIZATION, value);
            }
            if let Some(value) = user_agent {
                parts.headers.entry(header::USER_AGENT).or_insert(value);
            }
            let span = tracing::info_span!("in_process", method = %parts.method);
            let req = Request::from_parts(parts, crate::http::bytes_body(bytes));
            // As the HTTPS listener: a panic in a handler is a 500, never the caller's.
            let resp = AssertUnwindSafe(server.handle(req, peer))
                .catch_unwind()
                .instrument(span)
                .await
                .unwrap_or_else(|_| {
                    tracing::error!("request handler panicked (in-process request)");
                    error_response(&api::ApiError::internal(
                        "the server has encountered an unexpected error",
                    ))
                });
            Ok(resp.map(|inner| GuardedBody { inner, done: false }))
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::panic)]
    use super::*;
    use http_body_util::BodyExt;

    struct Panics;

    impl hyper::body::Body for Panics {
        type Data = bytes::Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
            panic!("a handler bug")
        }
    }

    #[tokio::test]
    async fn a_panicking_body_ends_with_an_error() {
        let body = GuardedBody {
            inner: Panics.boxed_unsync(),
            done: false,
        };
        assert!(body.collect().await.is_err());
        let body = GuardedBody {
            inner: crate::http::full("ok"),
            done: false,
        };
        assert_eq!(
            body.collect().await.ok().map(|c| c.to_bytes()),
            Some("ok".into())
        );
    }
}
