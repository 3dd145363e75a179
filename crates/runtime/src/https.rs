//! The HTTPS transport of components' clients: HTTP/2 when the server offers it (ALPN),
//! as client-go's transport, so a component's requests share one connection however many
//! are in flight; HTTP/1.1 otherwise.
//!
//! kube-rs's own stack speaks HTTP/1.1 only: each concurrent request takes a pooled
//! connection of its own, so a ReplicaSet controller creating 500 pods at once opened
//! hundreds of TLS connections (about 60 KB each on the server). This builds the same
//! stack (base URI, credentials, extra headers such as the `User-Agent`) over a client
//! that negotiates HTTP/2.

use std::time::Duration;

use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioTimer};
use kube::client::ConfigExt as _;
use tower::{BoxError, ServiceBuilder};

/// How often an idle HTTP/2 connection is pinged, and how long a ping may go unanswered
/// before the connection is dropped (client-go's `ReadIdleTimeout` and `PingTimeout`), so
/// a watch on a dead connection ends and is resumed instead of hanging.
const PING_INTERVAL: Duration = Duration::from_secs(30);
const PING_TIMEOUT: Duration = Duration::from_secs(15);

/// The connection-level receive window: the watches of one component share the
/// connection, and one whose consumer is busy holds its unread bytes against it.
const CONNECTION_WINDOW: u32 = 16 << 20;

/// A client of the server `config` describes, with its credentials and headers.
pub(crate) fn client(config: kube::Config) -> Result<kube::Client, kube::Error> {
    // The builder offers `h2` and `http/1.1` through ALPN (`enable_all_versions`).
    let tls = config.rustls_client_config()?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(config.connect_timeout);
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http();
    let builder = match config.tls_server_name.as_deref() {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name.to_string()).map_err(|e| {
                kube::Error::Service(format!("tls-server-name {name:?}: {e}").into())
            })?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    let connector = builder.enable_all_versions().wrap_connector(http);
    let transport = hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .timer(TokioTimer::new())
        .pool_timer(TokioTimer::new())
        .http2_keep_alive_interval(PING_INTERVAL)
        .http2_keep_alive_timeout(PING_TIMEOUT)
        .http2_keep_alive_while_idle(true)
        .http2_initial_connection_window_size(CONNECTION_WINDOW)
        .build::<_, kube::client::Body>(connector);
    let service = ServiceBuilder::new()
        .layer(crate::restclient::RestClientLayer::for_uri(
            &config.cluster_url,
        ))
        .layer(config.base_uri_layer())
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .map_err(BoxError::from)
        .service(transport);
    Ok(kube::Client::new(service, config.default_namespace))
}
