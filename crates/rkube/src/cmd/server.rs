//! `rkube server`: the control plane (and, unless `--disable-agent`, a local node).

use std::net::IpAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use store::Backend;

#[derive(Args, Debug)]
pub struct ServerArgs {
    /// Where the server keeps its datastore, certificates and kubeconfigs.
    #[arg(long, default_value = "/var/lib/rkube/server")]
    pub data_dir: PathBuf,
    /// HTTPS port of the API server.
    #[arg(long, default_value_t = 6443)]
    pub https_port: u16,
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: IpAddr,
    /// Address the API server advertises to the cluster (the `kubernetes` Endpoints).
    /// Default: the bind address, or the host's address when that is unspecified or loopback.
    #[arg(long)]
    pub advertise_address: Option<IpAddr>,
    /// Empty: embedded SQLite under the data dir. `http(s)://host:2379[,…]`: etcd.
    #[arg(long, default_value = "")]
    pub datastore_endpoint: String,
    /// CA bundle for an etcd datastore over TLS.
    #[arg(long)]
    pub datastore_cafile: Option<PathBuf>,
    /// Client certificate for an etcd datastore.
    #[arg(long)]
    pub datastore_certfile: Option<PathBuf>,
    /// Client key for an etcd datastore.
    #[arg(long)]
    pub datastore_keyfile: Option<PathBuf>,
    /// Run only the control plane, no local node.
    #[arg(long)]
    pub disable_agent: bool,
    /// Do not run the controller manager's controllers in this process.
    #[arg(long)]
    pub disable_controller_manager: bool,
    /// Do not run the scheduler in this process.
    #[arg(long)]
    pub disable_scheduler: bool,
    /// Run the controller manager and scheduler under leader election (Leases in
    /// kube-system). Default: on with an etcd datastore (several servers), off with the
    /// embedded one (a single server).
    #[arg(long, action = clap::ArgAction::Set)]
    pub leader_elect: Option<bool>,
    /// Let the in-process controller manager and scheduler reach the API server over
    /// loopback HTTPS, as separate processes do, instead of calling its request handler
    /// directly (for comparisons and debugging).
    #[arg(
        long,
        env = "RKUBE_COMPONENTS_OVER_HTTPS",
        hide = true,
        value_parser = clap::builder::BoolishValueParser::new()
    )]
    pub components_over_https: bool,
    /// The port on 127.0.0.1 where the in-process controller manager serves `/healthz`
    /// and `/metrics` over HTTPS (upstream's and k3s's 10257); 0 serves nothing.
    #[arg(long, default_value_t = super::components::CONTROLLER_MANAGER_PORT)]
    pub controller_manager_secure_port: u16,
    /// The port on 127.0.0.1 where the in-process scheduler serves `/healthz`, `/livez`,
    /// `/readyz` and `/metrics` over HTTPS (upstream's and k3s's 10259); 0 serves nothing.
    #[arg(long, default_value_t = super::components::SCHEDULER_PORT)]
    pub scheduler_secure_port: u16,
    #[command(flatten)]
    pub node: super::agent::NodeOptions,
    #[command(flatten)]
    pub controllers: super::components::ControllerOptions,
    #[command(flatten)]
    pub scheduler: super::components::SchedulerOptions,
    /// Extra names or addresses for the serving certificate.
    #[arg(long = "tls-san")]
    pub tls_san: Vec<String>,
    /// Range of Service cluster IPs.
    #[arg(long, default_value = "10.43.0.0/16")]
    pub service_cluster_ip_range: String,
    /// Ordered comma list of authorizers after the system:masters superuser:
    /// AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node.
    #[arg(long, default_value = "Node,RBAC", value_delimiter = ',')]
    pub authorization_mode: Vec<String>,
    /// The ABAC policy file (JSON lines), for --authorization-mode=ABAC.
    #[arg(long)]
    pub authorization_policy_file: Option<PathBuf>,
    /// A kubeconfig file naming the authorization webhook, for
    /// --authorization-mode=Webhook.
    #[arg(long)]
    pub authorization_webhook_config_file: Option<PathBuf>,
    /// The SubjectAccessReview version sent to the authorization webhook (v1 or v1beta1).
    #[arg(long, default_value = "v1")]
    pub authorization_webhook_version: String,
    /// How long the authorization webhook's "allowed" answers are cached.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub authorization_webhook_cache_authorized_ttl: Duration,
    /// How long the authorization webhook's other answers are cached.
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub authorization_webhook_cache_unauthorized_ttl: Duration,
    /// How long Events live.
    #[arg(long, default_value = "1h", value_parser = parse_duration)]
    pub event_ttl: Duration,
    /// How often the datastore is compacted (0 disables).
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub etcd_compaction_interval: Duration,
    /// Timeout of non-watch requests.
    #[arg(long, default_value = "60s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// Watches last between this and twice this, unless the client sets timeoutSeconds.
    #[arg(long, default_value_t = 1800)]
    pub min_request_timeout: u64,
    /// Static bearer tokens: CSV `token,user,uid,"group1,group2"`.
    #[arg(long)]
    pub token_auth_file: Option<PathBuf>,
    /// Static passwords for basic auth: CSV `password,user,uid,"group1,group2"`.
    #[arg(long)]
    pub basic_auth_file: Option<PathBuf>,
    /// Requests without credentials are served as `system:anonymous` (`--anonymous-auth`
    /// or `--anonymous-auth=true|false`).
    #[arg(long, default_value_t = false, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub anonymous_auth: bool,
    /// Admission plugins to enable on top of the default ones (comma list).
    #[arg(long, value_delimiter = ',')]
    pub enable_admission_plugins: Vec<String>,
    /// Default admission plugins to disable (comma list).
    #[arg(long, value_delimiter = ',')]
    pub disable_admission_plugins: Vec<String>,
    /// An AdmissionConfiguration file with per-plugin configuration.
    #[arg(long)]
    pub admission_control_config_file: Option<PathBuf>,
    /// An EncryptionConfiguration file: resources encrypted at rest and their keys.
    #[arg(long)]
    pub encryption_provider_config: Option<PathBuf>,
    /// The audit policy (audit.k8s.io/v1 Policy).
    #[arg(long)]
    pub audit_policy_file: Option<PathBuf>,
    /// Where audit events go, one JSON line each (`-` for stdout).
    #[arg(long)]
    pub audit_log_path: Option<PathBuf>,
    /// The audit log's size in MiB at which it is rotated (0: never).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxsize: u64,
    /// How many rotated audit logs are kept (0: all).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxbackup: usize,
    /// How many days rotated audit logs are kept (0: forever).
    #[arg(long, default_value_t = 0)]
    pub audit_log_maxage: u64,
    /// A PEM file of RSA or ECDSA keys (public or private) that verify service-account
    /// tokens; repeatable. Default: the signing key.
    #[arg(long = "service-account-key-file")]
    pub service_account_key_file: Vec<PathBuf>,
    /// The PEM private key that signs service-account tokens. Default:
    /// `<data-dir>/tls/service.key`, generated on first start.
    #[arg(long)]
    pub service_account_signing_key_file: Option<PathBuf>,
    /// The issuer (`iss`) of service-account tokens; repeatable: the first issues, all are
    /// accepted.
    #[arg(long = "service-account-issuer", default_value = apiserver::serviceaccount::DEFAULT_ISSUER)]
    pub service_account_issuer: Vec<String>,
    /// Identifiers of the API (comma list): tokens must be for one of them. Default: the
    /// issuers.
    #[arg(long, value_delimiter = ',')]
    pub api_audiences: Vec<String>,
    /// The longest validity of a requested token (0: no maximum; else 1h to 2^32s).
    #[arg(long, default_value = "0", value_parser = parse_duration)]
    pub service_account_max_token_expiration: Duration,
    /// Pod-bound tokens requested for 1h7s (kubelet's projected tokens) are valid a year
    /// and stale after the 1h7s (`--service-account-extend-token-expiration=false` to turn
    /// off).
    #[arg(long, default_value_t = true, num_args = 0..=1, default_missing_value = "true", action = clap::ArgAction::Set)]
    pub service_account_extend_token_expiration: bool,
    /// The OpenID Connect issuer whose ID tokens are accepted as bearer tokens (https).
    #[arg(long)]
    pub oidc_issuer_url: Option<String>,
    /// The client ID ID tokens must be for (their `aud`).
    #[arg(long)]
    pub oidc_client_id: Option<String>,
    /// The CA that signed the issuer's serving certificate (default: the system's roots).
    #[arg(long)]
    pub oidc_ca_file: Option<PathBuf>,
    /// The claim that names the user.
    #[arg(long, default_value = "sub")]
    pub oidc_username_claim: String,
    /// Prefix of OIDC user names (default `<issuer>#` unless the claim is `email`; `-`
    /// for none).
    #[arg(long)]
    pub oidc_username_prefix: Option<String>,
    /// The claim that lists the user's groups (a string or a list of strings).
    #[arg(long)]
    pub oidc_groups_claim: Option<String>,
    /// Prefix of OIDC group names.
    #[arg(long, default_value = "")]
    pub oidc_groups_prefix: String,
    /// `key=value`: a claim every ID token must have with this value; repeatable.
    #[arg(long)]
    pub oidc_required_claim: Vec<String>,
    /// The signature algorithms accepted (comma list).
    #[arg(long, value_delimiter = ',', default_value = "RS256")]
    pub oidc_signing_algs: Vec<String>,
}

/// Parses Go-style durations: `90s`, `5m`, `1h30m`, `250ms`, or plain seconds.
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    if let Ok(secs) = s.parse::<u64>() {
        return Ok(Duration::from_secs(secs));
    }
    let mut total = Duration::ZERO;
    let mut rest = s;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("invalid duration {s:?}: missing unit"))?;
        let n: f64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid duration {s:?}"))?;
        rest = &rest[digits..];
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        rest = &rest[unit_len..];
        let secs = match unit {
            "ms" => n / 1000.0,
            "s" => n,
            "m" => n * 60.0,
            "h" => n * 3600.0,
            other => return Err(format!("invalid duration {s:?}: unknown unit {other:?}")),
        };
        total += Duration::from_secs_f64(secs);
    }
    Ok(total)
}

/// Opens the datastore the flags select.
pub async fn open_store(args: &ServerArgs) -> anyhow::Result<Arc<dyn Backend>> {
    if args.datastore_endpoint.trim().is_empty() {
        let path = args.data_dir.join("db").join("state.db");
        let s = store::sqlite::SqliteBackend::open(&path)
            .with_context(|| format!("opening the embedded datastore {}", path.display()))?;
        Ok(Arc::new(s))
    } else {
        let mut opts = store::etcd::EtcdOptions::from_endpoints(&args.datastore_endpoint)?;
        opts.ca_file = args.datastore_cafile.clone();
        opts.cert_file = args.datastore_certfile.clone();
        opts.key_file = args.datastore_keyfile.clone();
        let s = store::etcd::EtcdBackend::connect(opts)
            .await
            .with_context(|| format!("connecting to etcd at {}", args.datastore_endpoint))?;
        Ok(Arc::new(s))
    }
}

pub async fn run(args: ServerArgs) -> anyhow::Result<()> {
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("creating {}", args.data_dir.display()))?;
    // Bad component flags stop start-up before anything runs.
    let scheduler_config = super::components::load_scheduler_config(&args.scheduler)?;
    super::components::check_controller_options(&args.controllers)?;
    let leader_elect = args
        .leader_elect
        .unwrap_or(!args.datastore_endpoint.trim().is_empty());
    // Each component's leader election: the server's choice of electing (as k3s passes
    // --leader-elect to both), the rest upstream's defaults or the scheduler file's.
    let elect = super::components::LeaderElectionFlags {
        leader_elect: Some(leader_elect),
        ..Default::default()
    };
    let cm_leader_election = super::components::LeaderElection::resolve(
        super::components::CONTROLLER_MANAGER,
        None,
        &elect,
    )?;
    let scheduler_leader_election = super::components::LeaderElection::resolve(
        super::components::SCHEDULER,
        scheduler_config.leader_election.as_ref(),
        &elect,
    )
    .context("the scheduler's leader election")?;
    // The components' endpoints, bound first: a port in use stops start-up, saying which.
    let endpoint = |run: bool, port: u16| -> anyhow::Result<_> {
        let serving = super::components::ServingArgs::loopback(port);
        Ok(match run {
            true => super::components::bind_endpoint(&serving, port)
                .context("the in-process component's endpoint")?
                .map(|l| (l, serving)),
            false => None,
        })
    };
    let cm_endpoint = endpoint(
        !args.disable_controller_manager,
        args.controller_manager_secure_port,
    )?;
    let sched_endpoint = endpoint(!args.disable_scheduler, args.scheduler_secure_port)?;
    let store = open_store(&args).await?;
    let mut config = apiserver::Config::new(&args.data_dir);
    config.bind_address = args.bind_address;
    config.advertise_address = args.advertise_address;
    config.https_port = args.https_port;
    config.tls_san = args.tls_san.clone();
    config.service_cluster_ip_range = args.service_cluster_ip_range.clone();
    config.authorization_mode = args.authorization_mode.clone();
    config.authorization_policy_file = args.authorization_policy_file.clone();
    config.authorization_webhook = apiserver::webhook::WebhookAuthzConfig {
        config_file: args.authorization_webhook_config_file.clone(),
        version: args.authorization_webhook_version.clone(),
        authorized_ttl: args.authorization_webhook_cache_authorized_ttl,
        unauthorized_ttl: args.authorization_webhook_cache_unauthorized_ttl,
    };
    config.event_ttl = args.event_ttl;
    config.compaction_interval = args.etcd_compaction_interval;
    config.request_timeout = args.request_timeout;
    config.min_request_timeout = Duration::from_secs(args.min_request_timeout.max(1));
    config.token_auth_file = args.token_auth_file.clone();
    config.basic_auth_file = args.basic_auth_file.clone();
    config.anonymous_auth = args.anonymous_auth;
    config.encryption_provider_config = args.encryption_provider_config.clone();
    config.audit_policy_file = args.audit_policy_file.clone();
    config.audit_log_path = args.audit_log_path.clone();
    config.audit_log_rotation = apiserver::audit::Rotation {
        max_size_mb: args.audit_log_maxsize,
        max_backups: args.audit_log_maxbackup,
        max_age_days: args.audit_log_maxage,
    };
    config.service_accounts = apiserver::serviceaccount::Options {
        key_files: args.service_account_key_file.clone(),
        signing_key_file: args.service_account_signing_key_file.clone(),
        issuers: args.service_account_issuer.clone(),
        api_audiences: args.api_audiences.clone(),
        max_token_expiration: args.service_account_max_token_expiration,
        extend_token_expiration: args.service_account_extend_token_expiration,
    };
    config.oidc = apiserver::oidc::Options {
        issuer_url: args.oidc_issuer_url.clone(),
        client_id: args.oidc_client_id.clone(),
        ca_file: args.oidc_ca_file.clone(),
        username_claim: args.oidc_username_claim.clone(),
        username_prefix: args.oidc_username_prefix.clone(),
        groups_claim: args.oidc_groups_claim.clone(),
        groups_prefix: args.oidc_groups_prefix.clone(),
        required_claims: args.oidc_required_claim.clone(),
        signing_algs: args.oidc_signing_algs.clone(),
    };
    config.admission = admission::ChainConfig {
        enable: args.enable_admission_plugins.clone(),
        disable: args.disable_admission_plugins.clone(),
        config_file: args.admission_control_config_file.clone(),
    };
    let running = apiserver::start(config, store, Arc::new(store::SystemClock)).await?;
    eprintln!(
        "rkube server listening on {} (kubeconfig: {})",
        running.url,
        running.kubeconfig.display()
    );
    // Losing a leader lease is fatal, as upstream: the server exits for its supervisor
    // to restart it as a follower.
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let stopped = move || {
        let mut rx = stop_rx.clone();
        async move {
            let _ = rx.wait_for(|s| *s).await;
        }
    };
    running
        .server
        .metrics
        .add_source(Arc::new(super::memory::render));
    running
        .server
        .metrics
        .add_source(Arc::new(runtime::restclient::render));
    if leader_elect {
        running
            .server
            .metrics
            .add_source(Arc::new(|| runtime::metrics::render_leader_election(None)));
    }
    // The components in this process call the API server's handler directly, with the
    // identities of their kubeconfigs (client certificates, then service-account tokens).
    let connector: Arc<dyn runtime::Connector> = Arc::new(InProcessConnector(
        Arc::clone(&running.server),
        runtime::restclient::RestClientLayer::for_uri(&running.url.parse()?),
    ));
    let source = |file: &str, component: &str| {
        let kubeconfig = args.data_dir.join(file);
        if args.components_over_https {
            runtime::ClientSource::kubeconfig(kubeconfig)
        } else {
            runtime::ClientSource::in_process(kubeconfig, Arc::clone(&connector))
        }
        .for_component(component)
    };
    if !args.disable_controller_manager {
        let source = source(
            "controller.kubeconfig",
            super::components::CONTROLLER_MANAGER,
        );
        let options = args.controllers.clone();
        let configz = super::components::controller_manager_configz(
            &options,
            &cm_leader_election,
            source.kubeconfig_path(),
        );
        let stop = stopped();
        running
            .server
            .metrics
            .add_source(Arc::new(super::components::controller_manager_metrics));
        spawn_component("controller-manager", async move {
            let health = super::components::Health::default();
            let healthz = runtime::serving::Checks::new(health.leader_checks(leader_elect));
            let endpoints = || runtime::serving::Endpoints {
                metrics: Arc::new(|| {
                    super::components::controller_manager_metrics()
                        + &super::components::process_metrics(Some(
                            super::components::CONTROLLER_MANAGER,
                        ))
                }),
                healthz: healthz.clone(),
                livez_readyz: None,
                configz: Some(Arc::clone(&configz)),
            };
            let _serving =
                match super::components::serve_if_bound(cm_endpoint, &source, endpoints).await {
                    Ok(s) => s,
                    Err(e) => return component_ended("controller manager", Err(e)),
                };
            let r = super::components::run_controller_manager(
                &source,
                &options,
                &cm_leader_election,
                stop,
                &health.leader,
                &healthz,
            )
            .await;
            component_ended("controller manager", r);
        })?;
    }
    if !args.disable_scheduler {
        let source = source("scheduler.kubeconfig", super::components::SCHEDULER);
        let configz = super::components::scheduler_configz(
            &scheduler_config,
            &scheduler_leader_election,
            source.kubeconfig_path(),
        )?;
        let stop = stopped();
        let metrics = Arc::new(scheduler::metrics::Metrics::default());
        let rendered = Arc::clone(&metrics);
        running
            .server
            .metrics
            .add_source(Arc::new(move || rendered.render()));
        spawn_component("scheduler", async move {
            let health = super::components::Health::default();
            let rendered = Arc::clone(&metrics);
            let endpoints = || {
                let (healthz, livez_readyz) = health.scheduler_checks(leader_elect);
                runtime::serving::Endpoints {
                    metrics: Arc::new(move || {
                        rendered.render()
                            + &super::components::process_metrics(Some(
                                super::components::SCHEDULER,
                            ))
                    }),
                    healthz,
                    livez_readyz,
                    configz: Some(Arc::clone(&configz)),
                }
            };
            let _serving =
                match super::components::serve_if_bound(sched_endpoint, &source, endpoints).await {
                    Ok(s) => s,
                    Err(e) => return component_ended("scheduler", Err(e)),
                };
            let stop = health.watch_shutdown(stop);
            let r = super::components::run_scheduler(
                &source,
                scheduler_config,
                metrics,
                &scheduler_leader_election,
                stop,
                &health,
            )
            .await;
            component_ended("scheduler", r);
        })?;
    }
    let agent = if args.disable_agent {
        None
    } else {
        // The server's own node: credentials signed directly by the client CA.
        let agent_dir = args.data_dir.join("agent");
        let name = args
            .node
            .node_name
            .clone()
            .unwrap_or_else(super::agent::hostname);
        let kubeconfig = agent_dir.join("kubelet.kubeconfig");
        apiserver::csr::ensure_node_kubeconfig(&running.pki, &kubeconfig, &running.url, &name)?;
        let cfg = super::agent::agent_config(
            &args.node,
            &agent_dir,
            kubeconfig,
            Some(running.pki.client_ca_cert.clone()),
        )?;
        let stop = stop_tx.subscribe();
        Some(tokio::spawn(async move {
            if let Err(e) = kubelet::agent::run(cfg, stop).await {
                tracing::error!(error = %e, "node agent stopped");
            }
        }))
    };
    shutdown_signal().await;
    tracing::info!("shutting down");
    // Components release their leases first.
    let _ = stop_tx.send(true);
    if let Some(agent) = agent {
        let _ = tokio::time::timeout(Duration::from_secs(15), agent).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    running.stop().await;
    Ok(())
}

/// Clients of the API server in this process ([`apiserver::inprocess::InProcess`]): each
/// request goes through the server's whole handler chain with the identity it presents.
/// Their requests count in client-go's `rest_client_*` series under the server's address.
struct InProcessConnector(Arc<apiserver::Server>, runtime::restclient::RestClientLayer);

impl runtime::Connector for InProcessConnector {
    fn connect(
        &self,
        identity: &runtime::Identity,
        user_agent: Option<&str>,
    ) -> Result<kube::Client, runtime::Error> {
        use apiserver::inprocess::InProcess;
        let server = Arc::clone(&self.0);
        let transport = match identity {
            runtime::Identity::Certificate(pem) => InProcess::with_certificates(server, pem),
            runtime::Identity::Token(token) => InProcess::with_token(server, token),
        };
        transport
            .and_then(|t| match user_agent {
                Some(agent) => t.with_user_agent(agent),
                None => Ok(t),
            })
            .map(|t| kube::Client::new(self.1.over(t), "default"))
            .map_err(|e| runtime::Error::InProcess(e.to_string()))
    }
}

/// Runs an in-process component on a Tokio runtime of its own, on threads named after it,
/// as a process of its own would run it: the operating system then shares the cores
/// between the component and the API server's request handling, where one runtime would
/// leave a busy component's tasks and the handlers' to queue behind each other. (Measured
/// at 5,000 simulated nodes: on the server's runtime the scheduler fell behind the
/// controller manager's creations, and the whole run took more CPU.) The component's
/// in-process requests run their handlers on its threads.
fn spawn_component(
    name: &'static str,
    component: impl std::future::Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .thread_name(name)
        .build()
        .with_context(|| format!("starting the {name}'s runtime"))?;
    std::thread::Builder::new()
        .name(name.to_string())
        .spawn(move || runtime.block_on(component))
        .with_context(|| format!("starting the {name}'s thread"))?;
    Ok(())
}

/// A component of the server stopped: a lost leader lease ends the process (as
/// upstream's components), other errors are logged.
fn component_ended(name: &str, result: anyhow::Result<()>) {
    if let Err(e) = result {
        if e.downcast_ref::<super::components::LeaderLost>().is_some() {
            tracing::error!(component = name, error = %e, "leader lease lost; exiting");
            std::process::exit(1);
        }
        tracing::error!(component = name, error = %e, "component stopped");
    }
}

pub(crate) async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = match signal(SignalKind::terminate()) {
        Ok(s) => s,
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
            return;
        }
    };
    tokio::select! {
        _ = term.recv() => {}
        _ = tokio::signal::ctrl_c() => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("5m").unwrap(), Duration::from_secs(300));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("250ms").unwrap(), Duration::from_millis(250));
        assert_eq!(parse_duration("30").unwrap(), Duration::from_secs(30));
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("m").is_err());
    }
}
