//! rkube's Kubernetes API server.
//!
//! The handler chain of upstream's kube-apiserver, in order: TLS and authentication
//! ([`authn`]), request info ([`requestinfo`]), routing ([`handlers`]) to discovery
//! ([`discovery`]), OpenAPI ([`openapi`]) or the generic registry ([`registry`]) that serves
//! every resource over the store through a watch cache per resource.

pub mod audit;
pub mod authn;
pub mod authz;
mod crds;
pub mod csr;
pub mod discovery;
pub mod encryption;
mod escalation;
mod fieldmgr;
pub mod handlers;
pub mod health;
pub mod http;
mod initializers;
pub mod inprocess;
mod memo;
pub mod metrics;
pub mod oidc;
pub mod openapi;
pub mod pki;
pub mod registry;
pub mod requestinfo;
mod selectors;
pub mod server;
pub mod serviceaccount;
pub mod webhook;

use std::net::{IpAddr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use store::{Backend, Clock};

pub use handlers::Server;
pub use pki::Pki;
pub use registry::Registry;

/// Errors that stop the server from starting.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("certificates: {0}")]
    Pki(String),
    #[error("TLS: {0}")]
    Tls(String),
    #[error("cannot listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("datastore: {0}")]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Config(String),
}

/// How the API server runs.
#[derive(Clone, Debug)]
pub struct Config {
    pub data_dir: PathBuf,
    pub bind_address: IpAddr,
    /// `--advertise-address`: the address the `kubernetes` Endpoints give (none: resolved
    /// from the bind address, [`advertise_address`]).
    pub advertise_address: Option<IpAddr>,
    pub https_port: u16,
    /// Extra names and addresses for the serving certificate.
    pub tls_san: Vec<String>,
    pub service_cluster_ip_range: String,
    /// `--authorization-mode`: the authorizers after the `system:masters` superuser, in
    /// order (`AlwaysAllow`, `AlwaysDeny`, `ABAC`, `RBAC`, `Node`; upstream default
    /// `Node,RBAC`).
    pub authorization_mode: Vec<String>,
    /// `--authorization-policy-file`: the ABAC policy (mode `ABAC` only).
    pub authorization_policy_file: Option<PathBuf>,
    /// `--authorization-webhook-config-file`, `--authorization-webhook-version` and the
    /// webhook's cache TTLs (mode `Webhook` only).
    pub authorization_webhook: webhook::WebhookAuthzConfig,
    /// `--event-ttl` (upstream default 1 h).
    pub event_ttl: Duration,
    /// `--etcd-compaction-interval` (upstream default 5 min; 0 disables).
    pub compaction_interval: Duration,
    /// `--request-timeout` (upstream default 60 s).
    pub request_timeout: Duration,
    /// `--min-request-timeout` (upstream default 1800 s): watches last 1–2× this.
    pub min_request_timeout: Duration,
    /// `--token-auth-file`: static bearer tokens (`token,user,uid,"group1,group2"`).
    pub token_auth_file: Option<PathBuf>,
    /// `--basic-auth-file`: static passwords (`password,user,uid,"group1,group2"`).
    pub basic_auth_file: Option<PathBuf>,
    /// `--anonymous-auth`: requests without credentials are `system:anonymous`
    /// (the health and version paths always are).
    pub anonymous_auth: bool,
    /// `--enable-admission-plugins`, `--disable-admission-plugins`,
    /// `--admission-control-config-file`.
    pub admission: admission::ChainConfig,
    /// `--encryption-provider-config`: resources encrypted at rest.
    pub encryption_provider_config: Option<PathBuf>,
    /// `--audit-policy-file` and `--audit-log-path` (both needed for an audit log).
    pub audit_policy_file: Option<PathBuf>,
    pub audit_log_path: Option<PathBuf>,
    /// `--audit-log-maxsize`, `--audit-log-maxbackup`, `--audit-log-maxage`.
    pub audit_log_rotation: audit::Rotation,
    /// `--service-account-key-file`, `--service-account-signing-key-file`,
    /// `--service-account-issuer`, `--api-audiences`,
    /// `--service-account-max-token-expiration`, `--service-account-extend-token-expiration`.
    pub service_accounts: serviceaccount::Options,
    /// `--oidc-issuer-url`, `--oidc-client-id` and the other `--oidc-*` flags.
    pub oidc: oidc::Options,
}

impl Config {
    pub fn new(data_dir: impl Into<PathBuf>) -> Config {
        Config {
            data_dir: data_dir.into(),
            bind_address: IpAddr::from([0, 0, 0, 0]),
            advertise_address: None,
            https_port: 6443,
            tls_san: Vec::new(),
            service_cluster_ip_range: "10.43.0.0/16".into(),
            authorization_mode: vec!["Node".into(), "RBAC".into()],
            authorization_policy_file: None,
            authorization_webhook: webhook::WebhookAuthzConfig::default(),
            event_ttl: Duration::from_secs(3600),
            compaction_interval: Duration::from_secs(300),
            request_timeout: Duration::from_secs(60),
            min_request_timeout: Duration::from_secs(1800),
            token_auth_file: None,
            basic_auth_file: None,
            anonymous_auth: false,
            admission: admission::ChainConfig::default(),
            encryption_provider_config: None,
            audit_policy_file: None,
            audit_log_path: None,
            audit_log_rotation: audit::Rotation::default(),
            service_accounts: serviceaccount::Options::default(),
            oidc: oidc::Options::default(),
        }
    }
}

/// A running API server.
pub struct Running {
    pub addr: SocketAddr,
    pub url: String,
    pub pki: Pki,
    pub server: Arc<Server>,
    pub kubeconfig: PathBuf,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<()>>,
    _compactor: Option<store::CompactorHandle>,
}

impl Running {
    /// Stops accepting connections and waits for the listener to close.
    pub async fn stop(mut self) {
        self.server.health.stopping();
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.task.take() {
            let _ = t.await;
        }
    }
}

/// The address the `kubernetes` Endpoints advertise, as upstream's `ResolveBindAddress`:
/// the bind address, unless it is unspecified or loopback (a loopback address is never a
/// valid endpoint), then the first global address among the host's `interfaces` (neither
/// loopback nor link-local), of the bind address's family if there is one; `host` when
/// there is none.
fn advertise_address(
    bind: IpAddr,
    host: IpAddr,
    interfaces: impl FnOnce() -> Vec<IpAddr>,
) -> IpAddr {
    if !bind.is_unspecified() && !bind.is_loopback() {
        return bind;
    }
    let candidates: Vec<IpAddr> = interfaces()
        .into_iter()
        .filter(|ip| {
            let link_local = match ip {
                IpAddr::V4(v4) => v4.is_link_local(),
                IpAddr::V6(v6) => v6.segments()[0] & 0xffc0 == 0xfe80,
            };
            !ip.is_loopback() && !ip.is_unspecified() && !link_local
        })
        .collect();
    candidates
        .iter()
        .find(|ip| ip.is_ipv4() == bind.is_ipv4())
        .or_else(|| candidates.first())
        .copied()
        .unwrap_or(host)
}

/// The first address of the service range (the `kubernetes` service's ClusterIP).
fn first_service_ip(range: &str) -> Option<IpAddr> {
    let (base, _) = range.split_once('/')?;
    match base.parse::<IpAddr>().ok()? {
        IpAddr::V4(v4) => Some(IpAddr::V4(std::net::Ipv4Addr::from(u32::from(v4) + 1))),
        IpAddr::V6(v6) => Some(IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) + 1))),
    }
}

/// The authenticator chain the flags select, in upstream's order (x509, basic auth, token
/// file; service-account, bootstrap and OIDC tokens join it once the registry exists); a
/// bad file stops the start-up.
fn authn_chain(
    config: &Config,
    client_roots: rustls::RootCertStore,
) -> Result<authn::Chain, Error> {
    let mut authenticators: Vec<Box<dyn authn::Authenticator>> = vec![Box::new(
        authn::X509Authenticator::new(Arc::new(client_roots))?,
    )];
    if let Some(path) = &config.basic_auth_file {
        authenticators.push(Box::new(authn::BasicAuthFile::load(path)?));
    }
    if let Some(path) = &config.token_auth_file {
        authenticators.push(Box::new(authn::TokenFile::load(path)?));
    }
    Ok(authn::Chain {
        authenticators,
        anonymous: config.anonymous_auth,
    })
}

/// The admission plugins this server can build: the admission crate's, plus the dynamic
/// admission webhooks over the server's HTTPS client.
fn admission_plugins() -> admission::chain::Plugins {
    use admission::webhook::{MutatingWebhook, Transport, ValidatingWebhook};
    let mut plugins = admission::plugins::builtin();
    plugins.register(
        "NodeRestriction",
        Box::new(|_| {
            Ok(
                Arc::new(admission::plugins::noderestriction::NodeRestriction {
                    csr_common_name: Some(Arc::new(csr::common_name)),
                }) as _,
            )
        }),
    );
    let transport: Arc<dyn Transport> = Arc::new(webhook::HttpsTransport::new());
    let t = Arc::clone(&transport);
    plugins.register(
        "MutatingAdmissionWebhook",
        Box::new(move |_| Ok(Arc::new(MutatingWebhook::new(Arc::clone(&t))) as _)),
    );
    plugins.register(
        "ValidatingAdmissionWebhook",
        Box::new(move |_| Ok(Arc::new(ValidatingWebhook::new(Arc::clone(&transport))) as _)),
    );
    plugins
}

/// Starts the API server on `store`.
pub async fn start(
    config: Config,
    store: Arc<dyn Backend>,
    clock: Arc<dyn Clock>,
) -> Result<Running, Error> {
    let store: Arc<dyn Backend> = match &config.encryption_provider_config {
        Some(path) => Arc::new(encryption::Encrypted::new(
            store,
            encryption::EncryptionConfig::load(path)?,
        )),
        None => store,
    };
    std::fs::create_dir_all(&config.data_dir)
        .map_err(|e| Error::Config(format!("{}: {e}", config.data_dir.display())))?;
    let sans = pki::serving_sans(
        &config.tls_san,
        first_service_ip(&config.service_cluster_ip_range)
            .into_iter()
            .chain(config.advertise_address),
    );
    let pki = Pki::ensure(&config.data_dir, &sans)?;
    let client_roots = server::load_roots(&pki.client_ca_cert)?;
    let tls = server::tls_config(&pki.serving_cert, &pki.serving_key, &client_roots)?;
    let mut authn = authn_chain(&config, client_roots)?;
    let oidc = match config.oidc.settings().map_err(Error::Config)? {
        Some(settings) => {
            let fetch =
                oidc::HttpsFetch::new(config.oidc.ca_file.as_deref()).map_err(Error::Config)?;
            Some((
                Arc::new(oidc::OidcAuthenticator::new(settings, Arc::clone(&clock))),
                fetch,
            ))
        }
        None => None,
    };
    let sa_keys = serviceaccount::Keys::load(&config.service_accounts, &pki.dir)?;
    let audit = match (&config.audit_policy_file, &config.audit_log_path) {
        (Some(policy), Some(log)) => Some(Arc::new(audit::Auditor::open(
            policy,
            log,
            config.audit_log_rotation,
        )?)),
        (None, Some(_)) => {
            tracing::warn!("--audit-log-path without --audit-policy-file: auditing is off");
            None
        }
        _ => None,
    };

    let addr = SocketAddr::new(config.bind_address, config.https_port);
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(|source| Error::Listen { addr, source })?;
    let addr = listener
        .local_addr()
        .map_err(|source| Error::Listen { addr, source })?;
    let host = if config.bind_address.is_unspecified() {
        IpAddr::from([127, 0, 0, 1])
    } else {
        config.bind_address
    };
    let url = match host {
        IpAddr::V6(v6) => format!("https://[{v6}]:{}", addr.port()),
        IpAddr::V4(v4) => format!("https://{v4}:{}", addr.port()),
    };

    let service_range = registry::services::Cidr::parse(&config.service_cluster_ip_range)
        .map_err(|e| Error::Config(format!("--service-cluster-ip-range: {e}")))?;
    let interfaces = || {
        if_addrs::get_if_addrs()
            .map(|ifs| ifs.into_iter().map(|i| i.ip()).collect())
            .unwrap_or_default()
    };
    let advertise = config
        .advertise_address
        .unwrap_or_else(|| advertise_address(config.bind_address, host, interfaces));
    let registry = Registry::new(
        Arc::clone(&store),
        clock,
        config.event_ttl,
        service_range,
        (advertise.to_string(), addr.port()),
    );
    let sa_tokens = Arc::new(serviceaccount::Tokens::new(
        sa_keys,
        &config.service_accounts,
        Arc::new(serviceaccount::CacheObjects::new(&registry)?),
        Arc::clone(&registry.clock),
    ));
    authn.authenticators.push(Box::new(Arc::clone(&sa_tokens)));
    // One parsed view of the RBAC caches, for the RBAC authorizer and the escalation check.
    let rbac = Arc::new(authz::CacheRbac::new(&registry)?);
    let authz = Arc::new(authz::chain(
        &config.authorization_mode,
        config.authorization_policy_file.as_deref(),
        &config.authorization_webhook,
        &registry,
        &rbac,
    )?);
    let mut chain = admission::Chain::build(&config.admission, &admission_plugins())
        .map_err(|e| Error::Config(e.to_string()))?;
    chain.push(Arc::new(escalation::Escalation {
        authorizer: Arc::clone(&authz),
        rbac: auth::RbacAuthorizer::new(rbac),
    }));
    chain.push(Arc::new(csr::CsrAdmission));
    chain.push(Arc::new(initializers::Initializers {
        authorizer: Arc::clone(&authz),
    }));
    tracing::info!(plugins = ?chain.names(), "admission chain");
    registry.set_admission(Arc::new(chain));
    let mut authn = authn;
    if let Some(secrets) = registry.lookup("", "v1", "secrets") {
        authn.authenticators.push(Box::new(csr::BootstrapTokens {
            secrets: Arc::clone(&secrets.cacher),
            clock: Arc::clone(&registry.clock),
        }));
    }
    if let Some((oidc, fetch)) = oidc {
        authn.authenticators.push(Box::new(Arc::clone(&oidc)));
        tokio::spawn(oidc.run(Arc::new(fetch)));
    }
    let csr_authz = Arc::clone(&authz);
    let srv = Arc::new(Server {
        registry: Arc::clone(&registry),
        authz,
        authn,
        sa_tokens,
        server_address: format!("{host}:{}", addr.port()),
        metrics: metrics::Metrics::default(),
        openapi: openapi::OpenApi::default(),
        health: Arc::default(),
        request_timeout: config.request_timeout,
        min_request_timeout: config.min_request_timeout,
        audit,
        kubelet_tls: Some(csr::kubelet_client_tls(&pki)?),
    });

    let kubeconfig = config.data_dir.join("admin.kubeconfig");
    pki.write_admin_kubeconfig(&kubeconfig, &url)?;

    let (shutdown, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(server::serve(listener, tls, Arc::clone(&srv), async move {
        let _ = stopped.await;
    }));
    bootstrap(&registry, &srv.health).await;
    tokio::spawn(crds::run(Arc::clone(&registry)));
    csr::ensure_component_kubeconfigs(&pki, &config.data_dir, &url)?;
    let join_token =
        csr::ensure_join_token(&registry, &config.data_dir, &system_write_options()).await?;
    csr::publish_cluster_info(&registry, &pki, &url, &join_token, &system_write_options()).await?;
    tokio::spawn(csr::run(Arc::clone(&registry), csr_authz, pki.clone()));
    srv.health.done(health::AUTHENTICATION_INFO);
    let compactor = (!config.compaction_interval.is_zero())
        .then(|| store::spawn_compactor(Arc::clone(&store), config.compaction_interval));
    tracing::info!(%url, kubeconfig = %kubeconfig.display(), "API server ready");
    Ok(Running {
        addr,
        url,
        pki,
        server: srv,
        kubeconfig,
        shutdown: Some(shutdown),
        task: Some(task),
        _compactor: compactor,
    })
}

/// The `default/kubernetes` Service (the first service IP, port 443) and its endpoints,
/// pointing at this server, as upstream's apiserver maintains them.
async fn kubernetes_service(registry: &Arc<Registry>, system: &registry::WriteOptions) {
    let ip = registry.service_range.nth(1).to_string();
    let advertise = registry.advertise.clone();
    let port = registry.advertise_port;
    if let Some(svc) = registry.lookup("", "v1", "services") {
        let body = json!({
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"component": "apiserver", "provider": "kubernetes"}},
            "spec": {
                "type": "ClusterIP", "clusterIP": ip, "sessionAffinity": "None",
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}],
            },
        });
        match registry.create(&svc, Some("default"), body, system).await {
            Ok(_) | Err(api::ApiError { code: 409, .. }) => {}
            Err(e) => tracing::warn!(error = %e, "cannot create the kubernetes service"),
        }
    }
    if let Some(eps) = registry.lookup("", "v1", "endpoints") {
        let body = json!({
            "apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "namespace": "default", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": advertise}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}],
        });
        match registry
            .create(&eps, Some("default"), body.clone(), system)
            .await
        {
            Ok(_) => {}
            Err(api::ApiError { code: 409, .. }) => {
                let _ = registry
                    .replace(&eps, Some("default"), "kubernetes", None, body, system)
                    .await;
            }
            Err(e) => tracing::warn!(error = %e, "cannot create the kubernetes endpoints"),
        }
    }
}

/// Creates upstream's `system-node-critical` and `system-cluster-critical` PriorityClasses.
async fn system_priority_classes(registry: &Arc<Registry>, system: &registry::WriteOptions) {
    let Some(r) = registry.lookup("scheduling.k8s.io", "v1", "priorityclasses") else {
        return;
    };
    for (name, value, description) in admission::plugins::priority::SYSTEM_CLASSES {
        let body = admission::plugins::priority::system_class(name, *value, description);
        match registry.create(&r, None, body, system).await {
            Ok(_) => tracing::info!(priorityclass = name, "created"),
            Err(e) if e.code == 409 => {}
            Err(e) => tracing::warn!(priorityclass = name, error = %e, "cannot create"),
        }
    }
}

/// Creates what every cluster has from the start (upstream's system namespaces), and waits
/// for the watch caches.
/// How the server writes its own objects: `system:apiserver` in `system:masters`.
fn system_write_options() -> registry::WriteOptions {
    registry::WriteOptions {
        user: authn::UserInfo {
            name: "system:apiserver".into(),
            uid: String::new(),
            groups: vec!["system:masters".into()],
            extra: Default::default(),
        },
        user_agent: "rkube-apiserver".into(),
        dry_run: false,
        field_manager: Some("kube-apiserver".into()),
        field_validation: registry::FieldValidation::Strict,
        apply: false,
        include_uninitialized: false,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

async fn bootstrap(registry: &Arc<Registry>, health: &Arc<health::Health>) {
    let system = system_write_options();
    if let Some(ns) = registry.lookup("", "v1", "namespaces") {
        for name in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
            match registry.create(&ns, None, body, &system).await {
                Ok(_) => tracing::info!(namespace = name, "created"),
                Err(e) if e.code == 409 => {}
                Err(e) => {
                    tracing::warn!(namespace = name, error = %e, "cannot create system namespace")
                }
            }
        }
    }
    kubernetes_service(registry, &system).await;
    health.done(health::BOOTSTRAP_CONTROLLER);
    system_priority_classes(registry, &system).await;
    health.done(health::PRIORITY_CLASSES);
    authz::ensure_bootstrap_policy(registry, &system).await;
    health.done(health::RBAC_ROLES);
    tokio::spawn(authz::run_aggregation(Arc::clone(registry), system.clone()));
    let mut filled = true;
    for r in registry.all().iter() {
        if !r.info.storage_prefix.is_empty() {
            filled &= r.cacher.wait_for(1, Duration::from_secs(10)).await;
        }
    }
    if filled {
        health.done(health::INFORMER_SYNC);
        return;
    }
    tracing::warn!("watch caches not filled after 10s; /readyz fails informer-sync until they are");
    let (registry, health) = (Arc::clone(registry), Arc::clone(health));
    tokio::spawn(async move {
        for r in registry.all().iter() {
            while !r.info.storage_prefix.is_empty()
                && !r.cacher.wait_for(1, Duration::from_secs(60)).await
            {}
        }
        health.done(health::INFORMER_SYNC);
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_advertised_address_is_never_loopback_when_the_host_has_another() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let host = ip("127.0.0.1");
        let interfaces = || {
            vec![
                ip("127.0.0.1"),
                ip("fe80::1"),
                ip("2001:db8::7"),
                ip("10.0.0.5"),
            ]
        };
        // A routable bind address is advertised as is.
        assert_eq!(
            advertise_address(ip("10.0.0.9"), host, interfaces),
            ip("10.0.0.9")
        );
        // Unspecified or loopback: the host's address of the same family.
        assert_eq!(
            advertise_address(ip("0.0.0.0"), host, interfaces),
            ip("10.0.0.5")
        );
        assert_eq!(
            advertise_address(ip("127.0.0.1"), host, interfaces),
            ip("10.0.0.5")
        );
        assert_eq!(
            advertise_address(ip("::"), host, interfaces),
            ip("2001:db8::7")
        );
        // Of the other family when the host has none of the bind address's (never link-local).
        assert_eq!(
            advertise_address(ip("::1"), host, || vec![ip("fe80::1"), ip("10.0.0.5")]),
            ip("10.0.0.5")
        );
        // Nothing but loopback: the host address.
        assert_eq!(
            advertise_address(ip("127.0.0.1"), host, || vec![ip("127.0.0.1")]),
            host
        );
    }
}
