//! The control-plane components that talk to the API server only: the controller manager
//! and the scheduler, as `rkube controller-manager` / `rkube scheduler` or inside
//! `rkube server`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use runtime::ClientSource;

use super::server::parse_duration;

pub use super::leader::{LeaderElection, LeaderElectionFlags};

/// `rkube controller-manager`.
#[derive(clap::Args, Debug, Clone)]
pub struct ControllerManagerArgs {
    /// The kubeconfig of the controller manager's identity.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    #[command(flatten)]
    pub leader_election: LeaderElectionFlags,
    #[command(flatten)]
    pub options: ControllerOptions,
    #[command(flatten)]
    pub serving: ServingArgs,
}

/// The HTTPS endpoint of `rkube controller-manager` and `rkube scheduler` (`/healthz`,
/// `/metrics`), as upstream's secure serving flags.
#[derive(clap::Args, Debug, Clone)]
pub struct ServingArgs {
    /// The port of the HTTPS endpoint (default 10257 for the controller manager, 10259
    /// for the scheduler, as upstream's); 0 serves nothing.
    #[arg(long)]
    pub secure_port: Option<u16>,
    /// The address the endpoint listens on.
    #[arg(long, default_value = "0.0.0.0")]
    pub bind_address: std::net::IpAddr,
    /// The serving certificate (PEM); without it a self-signed one is made at start.
    #[arg(long, requires = "tls_private_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The serving certificate's key (PEM).
    #[arg(long, requires = "tls_cert_file")]
    pub tls_private_key_file: Option<PathBuf>,
    /// The kubeconfig whose identity reviews callers' tokens (`TokenReview`) and reads
    /// the client CA (default: `--kubeconfig`'s).
    #[arg(long)]
    pub authentication_kubeconfig: Option<PathBuf>,
    /// The kubeconfig whose identity asks the API server whether a caller may read a
    /// path (`SubjectAccessReview`; default: `--kubeconfig`'s).
    #[arg(long)]
    pub authorization_kubeconfig: Option<PathBuf>,
}

impl ServingArgs {
    /// A component inside `rkube server`: on `port` of 127.0.0.1 (as k3s binds its
    /// components), with a self-signed certificate.
    pub fn loopback(port: u16) -> Self {
        ServingArgs {
            secure_port: Some(port),
            bind_address: std::net::IpAddr::from([127, 0, 0, 1]),
            tls_cert_file: None,
            tls_private_key_file: None,
            authentication_kubeconfig: None,
            authorization_kubeconfig: None,
        }
    }
}

/// The controller manager's options (also flags of `rkube server`).
#[derive(clap::Args, Debug, Clone)]
pub struct ControllerOptions {
    /// The controllers to run: `*` those on by default, `name` one more, `-name` one
    /// fewer (upstream's names or their older aliases, e.g. `*,-job-controller`).
    #[arg(long, value_delimiter = ',', default_value = "*")]
    pub controllers: Vec<String>,
    /// The pod network, from which every node gets a `spec.podCIDR`.
    #[arg(long, default_value = "10.42.0.0/16")]
    pub cluster_cidr: String,
    /// The size of each node's pod CIDR.
    #[arg(long, default_value_t = 24)]
    pub node_cidr_mask_size: u8,
    /// Give nodes pod CIDRs (node IPAM).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub allocate_node_cidrs: bool,
    /// How long a node may go without posting status or renewing its Lease before its
    /// conditions become Unknown (e.g. `50s`).
    #[arg(long, default_value = "50s", value_parser = parse_duration)]
    pub node_monitor_grace_period: std::time::Duration,
    /// How often node health is checked.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub node_monitor_period: std::time::Duration,
    /// The most endpoints the EndpointSlice controller puts in one slice.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u16).range(1..=1000))]
    pub max_endpoints_per_slice: u16,
    /// The root CA (PEM) the root-CA publisher puts in every namespace's
    /// `kube-root-ca.crt` ConfigMap (default: the kubeconfig's certificate authority).
    #[arg(long)]
    pub root_ca_file: Option<PathBuf>,
    /// How often every resource quota's usage is recounted.
    #[arg(long, default_value = "5m", value_parser = parse_duration)]
    pub resource_quota_sync_period: std::time::Duration,
    /// Terminated pods kept before the pod garbage collector deletes the oldest (0: off).
    #[arg(long, default_value_t = controllers::podgc::DEFAULT_THRESHOLD)]
    pub terminated_pod_gc_threshold: usize,
}

/// The root CA the root-CA publisher publishes: `--root-ca-file`, else the kubeconfig's
/// `certificate-authority-data` (or `certificate-authority` file).
pub fn root_ca_pem(kubeconfig: &Path, options: &ControllerOptions) -> anyhow::Result<String> {
    use base64::Engine;
    if let Some(path) = &options.root_ca_file {
        return std::fs::read_to_string(path)
            .with_context(|| format!("--root-ca-file {}", path.display()));
    }
    let config = kube::config::Kubeconfig::read_from(kubeconfig)
        .with_context(|| format!("kubeconfig {}", kubeconfig.display()))?;
    let context = config.current_context.as_deref().and_then(|name| {
        config
            .contexts
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.context.as_ref())
    });
    let cluster = config
        .clusters
        .iter()
        .find(|c| context.is_none_or(|ctx| c.name == ctx.cluster))
        .and_then(|c| c.cluster.as_ref())
        .with_context(|| format!("kubeconfig {}: no cluster", kubeconfig.display()))?;
    if let Some(data) = &cluster.certificate_authority_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .context("the kubeconfig's certificate-authority-data")?;
        return String::from_utf8(pem).context("the kubeconfig's certificate-authority-data");
    }
    if let Some(file) = &cluster.certificate_authority {
        return std::fs::read_to_string(file)
            .with_context(|| format!("certificate-authority {file}"));
    }
    anyhow::bail!(
        "no root CA: pass --root-ca-file or use a kubeconfig with a certificate authority"
    )
}

/// `rkube scheduler`.
#[derive(clap::Args, Debug, Clone)]
pub struct SchedulerArgs {
    /// The kubeconfig of the scheduler's identity.
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// (With `--config`, only the flags given override its `leaderElection`.)
    #[command(flatten)]
    pub leader_election: LeaderElectionFlags,
    #[command(flatten)]
    pub options: SchedulerOptions,
    #[command(flatten)]
    pub serving: ServingArgs,
}

/// The scheduler's options (also flags of `rkube server`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SchedulerOptions {
    /// A `KubeSchedulerConfiguration` file (profiles, plugins, weights).
    #[arg(long = "scheduler-config", alias = "config")]
    pub config: Option<PathBuf>,
    /// An older scheduler `Policy` file (predicates and priorities).
    #[arg(long)]
    pub policy_config_file: Option<PathBuf>,
}

/// What the scheduler's options configure: its profiles and back-off, and the
/// configuration they came from for `/configz`.
pub struct SchedulerConfig {
    pub profiles: Vec<scheduler::framework::Profile>,
    pub backoff: scheduler::queue::Backoff,
    /// The `KubeSchedulerConfiguration` given (a policy file's as the configuration it
    /// amounts to); `None`: upstream's defaults.
    document: Option<String>,
    /// The file's `leaderElection` section, if it has one.
    pub leader_election: Option<serde_json::Value>,
}

/// The scheduler's configuration from its options, checked (upstream's defaults without a
/// file).
pub fn load_scheduler_config(opts: &SchedulerOptions) -> anyhow::Result<SchedulerConfig> {
    let read = |path: &Path, what: &str| {
        std::fs::read_to_string(path)
            .with_context(|| format!("reading the scheduler {what} {}", path.display()))
    };
    let (document, context) = match (&opts.config, &opts.policy_config_file) {
        (Some(path), _) => (
            Some(read(path, "configuration")?),
            format!("scheduler configuration {}", path.display()),
        ),
        (None, Some(path)) => {
            let context = format!("scheduler policy {}", path.display());
            let doc = scheduler::config::policy_as_config(&read(path, "policy")?)
                .with_context(|| context.clone())?;
            (Some(doc.to_string()), context)
        }
        (None, None) => (None, String::new()),
    };
    let scheduler::config::Loaded {
        profiles,
        backoff,
        leader_election,
    } = match &document {
        Some(text) => scheduler::config::load_config(text).with_context(|| context)?,
        None => scheduler::config::Loaded {
            profiles: vec![scheduler::config::default_profile()],
            backoff: scheduler::queue::Backoff::default(),
            leader_election: None,
        },
    };
    Ok(SchedulerConfig {
        profiles,
        backoff,
        document,
        leader_election,
    })
}

/// The scheduler's `/configz` document (upstream's `componentconfig`): the effective
/// `KubeSchedulerConfiguration` of its options, with the connection and leader election
/// it runs with.
pub fn scheduler_configz(
    config: &SchedulerConfig,
    leader_election: &LeaderElection,
    kubeconfig: &Path,
) -> anyhow::Result<Arc<serde_json::Value>> {
    let mut config = scheduler::config::effective_config(config.document.as_deref())?;
    config["leaderElection"] = leader_election.to_json();
    config["clientConnection"] = client_connection(kubeconfig);
    Ok(runtime::serving::configz("componentconfig", config))
}

/// A component's `clientConnection` as it runs: JSON, and no client-side rate limit
/// (a negative QPS, as client-go reads it).
fn client_connection(kubeconfig: &Path) -> serde_json::Value {
    serde_json::json!({
        "kubeconfig": kubeconfig.display().to_string(),
        "acceptContentTypes": "",
        "contentType": "application/json",
        "qps": -1,
        "burst": 0,
    })
}

/// An object's fields as the v1alpha1 component configurations spell them, which carry
/// no JSON tags below the top: Go's field names (`leaderElect` → `LeaderElect`, `qps` →
/// `QPS`).
fn go_field_names(v: serde_json::Value) -> serde_json::Value {
    match v {
        serde_json::Value::Object(map) => map
            .into_iter()
            .map(|(k, v)| {
                let name = match k.as_str() {
                    "qps" => "QPS".to_string(),
                    _ => k[..1].to_ascii_uppercase() + &k[1..],
                };
                (name, v)
            })
            .collect::<serde_json::Map<_, _>>()
            .into(),
        other => other,
    }
}

/// The controller manager's `/configz` document (upstream's
/// `kubecontrollermanager.config.k8s.io`): a `KubeControllerManagerConfiguration`
/// (v1alpha1, whose fields are capitalized) of the settings it runs with.
pub fn controller_manager_configz(
    options: &ControllerOptions,
    leader_election: &LeaderElection,
    kubeconfig: &Path,
) -> Arc<serde_json::Value> {
    let d = api::gofmt::go_duration;
    let root_ca = options
        .root_ca_file
        .as_ref()
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let config = serde_json::json!({
        "kind": "KubeControllerManagerConfiguration",
        "apiVersion": "kubecontrollermanager.config.k8s.io/v1alpha1",
        "Generic": {
            "ClientConnection": go_field_names(client_connection(kubeconfig)),
            "LeaderElection": go_field_names(leader_election.to_json()),
            "Controllers": options.controllers,
        },
        "KubeCloudShared": {
            "ClusterCIDR": options.cluster_cidr,
            "AllocateNodeCIDRs": options.allocate_node_cidrs,
            "NodeMonitorPeriod": d(options.node_monitor_period),
        },
        "NodeIPAMController": {"NodeCIDRMaskSize": options.node_cidr_mask_size},
        "NodeLifecycleController": {
            "NodeMonitorGracePeriod": d(options.node_monitor_grace_period),
        },
        "EndpointSliceController": {"MaxEndpointsPerSlice": options.max_endpoints_per_slice},
        "PodGCController": {"TerminatedPodGCThreshold": options.terminated_pod_gc_threshold},
        "ResourceQuotaController": {
            "ResourceQuotaSyncPeriod": d(options.resource_quota_sync_period),
        },
        "SAController": {"RootCAFile": root_ca},
    });
    runtime::serving::configz("kubecontrollermanager.config.k8s.io", config)
}

fn host_name() -> String {
    std::fs::read_to_string("/etc/hostname")
        .ok()
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// Starts the scheduler's watches with the identity of `source`'s kubeconfig; it
/// schedules from [`scheduler::run::Scheduler::run`].
pub async fn start_scheduler(
    source: &ClientSource,
    config: SchedulerConfig,
    metrics: Arc<scheduler::metrics::Metrics>,
) -> anyhow::Result<Arc<scheduler::run::Scheduler>> {
    let SchedulerConfig {
        profiles, backoff, ..
    } = config;
    let client = controllers::run::client_from(source).await?;
    let recorder = runtime::events::Recorder::spawn(
        runtime::events::KubeSink::new(client.clone()),
        runtime::events::RecorderConfig::new("default-scheduler", host_name()),
    );
    let names: Vec<String> = profiles.iter().map(|p| p.scheduler_name.clone()).collect();
    let s = scheduler::run::start(client, profiles, recorder, metrics, backoff)?;
    tracing::info!(profiles = ?names, "scheduler watching the cluster");
    Ok(s)
}

/// What a component's health checks read: its leader election (upstream's
/// `leaderElection`), whether it is shutting down (`shutdown`), and, for the scheduler
/// once started, whether its handlers have synced (`sched-handler-sync`).
#[derive(Clone, Default)]
pub struct Health {
    pub leader: runtime::leaderelection::LeaderHealth,
    stopping: Arc<std::sync::atomic::AtomicBool>,
    scheduler: Arc<std::sync::OnceLock<Arc<scheduler::run::Scheduler>>>,
}

impl Health {
    /// `shutdown` made to also fail the `shutdown` check once it fired.
    pub fn watch_shutdown(
        &self,
        shutdown: impl std::future::Future<Output = ()> + Send,
    ) -> impl std::future::Future<Output = ()> + Send {
        let stopping = Arc::clone(&self.stopping);
        async move {
            shutdown.await;
            stopping.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    pub fn leader_checks(&self, leader_elect: bool) -> Vec<runtime::serving::Probe> {
        leader_elect
            .then(|| runtime::serving::Probe::leader_election(self.leader.clone()))
            .into_iter()
            .collect()
    }

    /// The scheduler's endpoints' checks, as upstream's: `/healthz` the leader election
    /// (else `ping`), `/livez` `ping`, `/readyz` the leader election, `shutdown` and
    /// `sched-handler-sync`.
    pub fn scheduler_checks(&self, leader_elect: bool) -> (Checks, Option<(Checks, Checks)>) {
        use runtime::serving::Probe;
        let sched = Arc::clone(&self.scheduler);
        let mut readyz = self.leader_checks(leader_elect);
        readyz.push(Probe::shutdown(Arc::clone(&self.stopping)));
        readyz.push(Probe::new("sched-handler-sync", move || {
            if sched.get().is_some_and(|s| s.handlers_synced()) {
                Ok(())
            } else {
                Err("handlers are not fully synchronized".into())
            }
        }));
        (
            Checks::new(self.leader_checks(leader_elect)),
            Some((Checks::default(), Checks::new(readyz))),
        )
    }
}

use runtime::serving::Checks;

/// The components' names, as upstream's: their clients' `User-Agent`s (hence the field
/// managers of what they write) and their leader-election Leases.
pub const SCHEDULER: &str = "kube-scheduler";
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// `rkube scheduler`: runs until SIGTERM.
pub async fn scheduler(args: SchedulerArgs) -> anyhow::Result<()> {
    let config = load_scheduler_config(&args.options)?;
    let leader_election = LeaderElection::resolve(
        SCHEDULER,
        config.leader_election.as_ref(),
        &args.leader_election,
    )
    .context("the scheduler's leader election")?;
    let configz = scheduler_configz(&config, &leader_election, &args.kubeconfig)?;
    let source = ClientSource::kubeconfig(args.kubeconfig).for_component(SCHEDULER);
    let metrics: Arc<scheduler::metrics::Metrics> = Arc::default();
    let rendered = Arc::clone(&metrics);
    let health = Health::default();
    let (healthz, livez_readyz) = health.scheduler_checks(leader_election.leader_elect);
    let _serving = start_serving(
        &args.serving,
        SCHEDULER_PORT,
        &source,
        runtime::serving::Endpoints {
            metrics: Arc::new(move || {
                rendered.render() + &process_metrics(None) + &super::memory::render()
            }),
            healthz,
            livez_readyz,
            configz: Some(configz),
        },
    )
    .await?;
    let shutdown = health.watch_shutdown(super::server::shutdown_signal());
    run_scheduler(
        &source,
        config,
        metrics,
        &leader_election,
        shutdown,
        &health,
    )
    .await
}

/// Upstream's secure ports: kube-controller-manager's and kube-scheduler's.
pub const CONTROLLER_MANAGER_PORT: u16 = 10257;
pub const SCHEDULER_PORT: u16 = 10259;

/// Serves a component's `/healthz` and `/metrics` over HTTPS (unless `--secure-port 0`)
/// for as long as the returned task lives; see [`serve_endpoints`].
async fn start_serving(
    args: &ServingArgs,
    default_port: u16,
    source: &ClientSource,
    endpoints: runtime::serving::Endpoints,
) -> anyhow::Result<Option<AbortOnDrop>> {
    let bound = bind_endpoint(args, default_port)?.map(|l| (l, args.clone()));
    serve_if_bound(bound, source, || endpoints).await
}

/// Serves `endpoints()` on a listener [`bind_endpoint`] gave (none: nothing), for as long
/// as the returned guard lives.
pub async fn serve_if_bound(
    bound: Option<(std::net::TcpListener, ServingArgs)>,
    source: &ClientSource,
    endpoints: impl FnOnce() -> runtime::serving::Endpoints,
) -> anyhow::Result<Option<AbortOnDrop>> {
    match bound {
        Some((listener, args)) => Ok(Some(
            serve_endpoints(listener, &args, source, endpoints()).await?,
        )),
        None => Ok(None),
    }
}

/// The listener of a component's endpoint (`None` with `--secure-port 0`), bound before
/// anything starts so a port in use stops the start-up, saying which.
pub fn bind_endpoint(
    args: &ServingArgs,
    default_port: u16,
) -> anyhow::Result<Option<std::net::TcpListener>> {
    let port = args.secure_port.unwrap_or(default_port);
    if port == 0 {
        return Ok(None);
    }
    let addr = std::net::SocketAddr::new(args.bind_address, port);
    let listener = std::net::TcpListener::bind(addr)
        .and_then(|l| l.set_nonblocking(true).map(|()| l))
        .with_context(|| format!("failed to listen on {addr} (--secure-port, --bind-address)"))?;
    Ok(Some(listener))
}

/// Serves `endpoints` on `listener` for as long as the returned task lives: a self-signed
/// certificate unless given one, client certificates of the cluster's client CA (read,
/// as upstream, from `kube-system/extension-apiserver-authentication`), tokens and
/// authorizations reviewed by the API server with the component's own identity.
pub async fn serve_endpoints(
    listener: std::net::TcpListener,
    args: &ServingArgs,
    source: &ClientSource,
    endpoints: runtime::serving::Endpoints,
) -> anyhow::Result<AbortOnDrop> {
    let (cert, key) = match (&args.tls_cert_file, &args.tls_private_key_file) {
        (Some(c), Some(k)) => (
            std::fs::read(c).with_context(|| format!("--tls-cert-file {}", c.display()))?,
            std::fs::read(k).with_context(|| format!("--tls-private-key-file {}", k.display()))?,
        ),
        _ => {
            let (c, k) = runtime::serving::self_signed(
                &["localhost".to_string()],
                &[std::net::IpAddr::from([127, 0, 0, 1])],
                &format!("localhost@{}", jiff::Timestamp::now().as_second()),
            )?;
            (c.into_bytes(), k.into_bytes())
        }
    };
    let addr = listener.local_addr()?;
    let listener = tokio::net::TcpListener::from_std(listener)
        .with_context(|| format!("serving on {addr}"))?;
    let client_of = |kubeconfig: &Option<PathBuf>| {
        let source = match kubeconfig {
            Some(path) => source.with_kubeconfig(path),
            None => source.clone(),
        };
        async move { controllers::run::client_from(&source).await }
    };
    let authn = client_of(&args.authentication_kubeconfig)
        .await
        .context("--authentication-kubeconfig")?;
    let authz = client_of(&args.authorization_kubeconfig)
        .await
        .context("--authorization-kubeconfig")?;
    const ALPN: &[&[u8]] = &[b"h2", b"http/1.1"];
    // Served at once, with client certificates accepted once the client CA is read (the
    // API server may not answer yet), as upstream's CA from a ConfigMap.
    let (tls_tx, tls) =
        tokio::sync::watch::channel(runtime::serving::tls_config(&cert, &key, None, ALPN)?);
    let reader = authn.clone();
    let ca_task = tokio::spawn(async move {
        for attempt in 0.. {
            match client_ca(&reader).await {
                Ok(ca) => {
                    match runtime::serving::tls_config(&cert, &key, Some(&ca), ALPN) {
                        Ok(cfg) => {
                            let _ = tls_tx.send(cfg);
                        }
                        Err(e) => {
                            tracing::warn!(error = %e, "client certificates will not be accepted")
                        }
                    }
                    return;
                }
                Err(e) if attempt == 0 => tracing::warn!(
                    error = %e,
                    "client certificates are not accepted until the client CA is read; retrying"
                ),
                Err(_) => {}
            }
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
        }
    });
    tracing::info!(%addr, "serving /healthz and /metrics securely");
    let reviewer = Arc::new(runtime::serving::Reviewer::with_clients(authn, authz));
    let serving = tokio::spawn(runtime::serving::serve(
        listener,
        tls,
        reviewer,
        endpoints,
        std::future::pending(),
    ));
    Ok(AbortOnDrop(vec![serving, ca_task]))
}

/// The cluster's client CA (PEM) as the API server publishes it for delegated
/// authentication.
async fn client_ca(client: &kube::Client) -> anyhow::Result<Vec<u8>> {
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube::Api::namespaced(client.clone(), "kube-system");
    let cm = api
        .get("extension-apiserver-authentication")
        .await
        .context("reading kube-system/extension-apiserver-authentication")?;
    cm.data
        .and_then(|mut d| d.remove("client-ca-file"))
        .map(String::into_bytes)
        .context("kube-system/extension-apiserver-authentication has no client-ca-file")
}

/// Tasks stopped when this is dropped.
pub struct AbortOnDrop(Vec<tokio::task::JoinHandle<()>>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// The scheduler until `shutdown`, under leader election when elected: its watches
/// run from the start, so a standby is ready to take over with warm caches (as
/// upstream's); it schedules only while leading.
pub async fn run_scheduler(
    source: &ClientSource,
    config: SchedulerConfig,
    metrics: Arc<scheduler::metrics::Metrics>,
    leader_election: &LeaderElection,
    shutdown: impl std::future::Future<Output = ()> + Send,
    health: &Health,
) -> anyhow::Result<()> {
    let s = start_scheduler(source, config, metrics).await?;
    let _ = health.scheduler.set(Arc::clone(&s));
    let schedule = move || {
        s.run();
        tracing::info!("scheduler started");
    };
    if !leader_election.leader_elect {
        schedule();
        shutdown.await;
        return Ok(());
    }
    elected(
        leader_election,
        source,
        shutdown,
        &health.leader,
        move |lost| async move {
            schedule();
            lost.wait().await;
        },
    )
    .await
}

/// A component lost its leader lease.
#[derive(Debug)]
pub struct LeaderLost(pub String);

impl std::fmt::Display for LeaderLost {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "leaderelection lost ({})", self.0)
    }
}

impl std::error::Error for LeaderLost {}

/// Runs `work` while holding the Lease `leader_election` names, with its timings,
/// releasing it on shutdown. Losing it is fatal, as upstream: the caller exits
/// and a supervisor starts it again as a follower.
async fn elected<F, Fut>(
    leader_election: &LeaderElection,
    source: &ClientSource,
    shutdown: impl std::future::Future<Output = ()> + Send,
    health: &runtime::leaderelection::LeaderHealth,
    work: F,
) -> anyhow::Result<()>
where
    F: FnOnce(runtime::leaderelection::LeadershipLost) -> Fut + Send,
    Fut: std::future::Future<Output = ()> + Send,
{
    use runtime::leaderelection::{KubeLeaseClient, LeaderElector, RunOutcome};
    let client = controllers::run::client_from(source).await?;
    let identity = format!("{}_{}", host_name(), uuid::Uuid::new_v4());
    let mut config = leader_election.elector_config(identity.clone());
    config.release_on_cancel = true;
    let lease = format!("{}/{}", config.namespace, config.name);
    let elector = LeaderElector::new(
        config,
        KubeLeaseClient::new(client),
        Arc::new(jiff::Timestamp::now),
    )?;
    elector.watch_dog(health);
    tracing::info!(lease, identity, "attempting to acquire the leader lease");
    match elector.run(shutdown, work).await {
        RunOutcome::Lost { .. } => Err(LeaderLost(lease).into()),
        RunOutcome::NeverLed | RunOutcome::Shutdown { .. } => Ok(()),
    }
}

/// Rejects controller options that cannot work (a bad `--cluster-cidr` or mask).
pub fn check_controller_options(opts: &ControllerOptions) -> anyhow::Result<()> {
    for entry in &opts.controllers {
        let bare = entry.strip_prefix('-').unwrap_or(entry);
        if bare != "*" && canonical_controller(bare).is_none() {
            anyhow::bail!("--controllers: {bare:?} is not in the list of known controllers");
        }
    }
    if opts.allocate_node_cidrs {
        controllers::nodeipam::CidrSet::parse(&opts.cluster_cidr, opts.node_cidr_mask_size)
            .with_context(|| format!("--cluster-cidr {}", opts.cluster_cidr))?;
    }
    Ok(())
}

/// `work` when `on`, else nothing (a controller `--controllers` leaves off).
async fn gated(on: bool, work: impl std::future::Future<Output = ()>) {
    if on {
        work.await;
    }
}

/// `rkube controller-manager`: runs until SIGTERM.
pub async fn controller_manager(args: ControllerManagerArgs) -> anyhow::Result<()> {
    check_controller_options(&args.options)?;
    let leader_election = LeaderElection::resolve(CONTROLLER_MANAGER, None, &args.leader_election)
        .context("the controller manager's leader election")?;
    let configz = controller_manager_configz(&args.options, &leader_election, &args.kubeconfig);
    let source = ClientSource::kubeconfig(args.kubeconfig).for_component(CONTROLLER_MANAGER);
    let health = Health::default();
    let healthz = Checks::new(health.leader_checks(leader_election.leader_elect));
    let _serving = start_serving(
        &args.serving,
        CONTROLLER_MANAGER_PORT,
        &source,
        runtime::serving::Endpoints {
            metrics: Arc::new(|| {
                controller_manager_metrics() + &process_metrics(None) + &super::memory::render()
            }),
            healthz: healthz.clone(),
            livez_readyz: None,
            configz: Some(configz),
        },
    )
    .await?;
    run_controller_manager(
        &source,
        &args.options,
        &leader_election,
        super::server::shutdown_signal(),
        &health.leader,
        &healthz,
    )
    .await
}

/// The controller manager until `shutdown`, under leader election when elected;
/// each controller started adds its check to `healthz` (upstream's per-controller
/// checks, named as upstream's controllers).
pub async fn run_controller_manager(
    source: &ClientSource,
    options: &ControllerOptions,
    leader_election: &LeaderElection,
    shutdown: impl std::future::Future<Output = ()> + Send,
    leader: &runtime::leaderelection::LeaderHealth,
    healthz: &Checks,
) -> anyhow::Result<()> {
    if !leader_election.leader_elect {
        return tokio::select! {
            r = run_controllers(source, options, healthz) => r,
            () = shutdown => Ok(()),
        };
    }
    let owned = source.clone();
    let opts = options.clone();
    let checks = healthz.clone();
    elected(
        leader_election,
        source,
        shutdown,
        leader,
        move |lost| async move {
            tokio::select! {
                r = run_controllers(&owned, &opts, &checks) => {
                    if let Err(e) = r {
                        tracing::error!(error = %e, "the controller manager could not start");
                    }
                    lost.wait().await;
                }
                () = lost.wait() => {}
            }
        },
    )
    .await
}

/// The process-wide series every component endpoint shows beside its own: leader
/// election (the component `elector`'s, or every elector's of the process) and
/// client-go's `rest_client_*`.
pub fn process_metrics(elector: Option<&str>) -> String {
    runtime::metrics::render_leader_election(elector) + &runtime::restclient::render()
}

/// The controller manager's metrics: its work queues' (upstream's `workqueue_*`) and its
/// informers' subscriber backlogs.
pub fn controller_manager_metrics() -> String {
    let mut text = runtime::metrics::render_workqueues();
    text.push_str(&controllers::informers::render_backlogs());
    text
}

/// Every controller upstream's kube-controller-manager knows, by its name, with its
/// older aliases: what `--controllers` may name. Those rkube runs are [`CONTROLLERS`];
/// the others have nothing to run here (no cloud provider, no storage controllers, CSRs
/// signed by the API server).
const KNOWN_CONTROLLERS: &[(&str, &[&str])] = &[
    ("serviceaccount-token-controller", &["serviceaccount-token"]),
    ("endpoints-controller", &["endpoint"]),
    ("endpointslice-controller", &["endpointslice"]),
    (
        "endpointslice-mirroring-controller",
        &["endpointslicemirroring"],
    ),
    (
        "replicationcontroller-controller",
        &["replicationcontroller"],
    ),
    ("pod-garbage-collector-controller", &["podgc"]),
    ("resourcequota-controller", &["resourcequota"]),
    ("namespace-controller", &["namespace"]),
    ("serviceaccount-controller", &["serviceaccount"]),
    ("garbage-collector-controller", &["garbagecollector"]),
    ("daemonset-controller", &["daemonset"]),
    ("job-controller", &["job"]),
    ("deployment-controller", &["deployment"]),
    ("replicaset-controller", &["replicaset"]),
    (
        "horizontal-pod-autoscaler-controller",
        &["horizontalpodautoscaling"],
    ),
    ("disruption-controller", &["disruption"]),
    ("statefulset-controller", &["statefulset"]),
    ("cronjob-controller", &["cronjob"]),
    (
        "certificatesigningrequest-signing-controller",
        &["csrsigning"],
    ),
    (
        "certificatesigningrequest-approving-controller",
        &["csrapproving"],
    ),
    (
        "certificatesigningrequest-cleaner-controller",
        &["csrcleaner"],
    ),
    ("ttl-controller", &["ttl"]),
    ("bootstrap-signer-controller", &["bootstrapsigner"]),
    ("token-cleaner-controller", &["tokencleaner"]),
    ("node-ipam-controller", &["nodeipam"]),
    ("node-lifecycle-controller", &["nodelifecycle"]),
    ("taint-eviction-controller", &[]),
    (
        "persistentvolume-binder-controller",
        &["persistentvolume-binder"],
    ),
    (
        "persistentvolume-attach-detach-controller",
        &["attachdetach"],
    ),
    (
        "persistentvolume-expander-controller",
        &["persistentvolume-expander"],
    ),
    (
        "clusterrole-aggregation-controller",
        &["clusterrole-aggregation"],
    ),
    (
        "persistentvolumeclaim-protection-controller",
        &["pvc-protection"],
    ),
    ("persistentvolume-protection-controller", &["pv-protection"]),
    ("ttl-after-finished-controller", &["ttl-after-finished"]),
    (
        "root-ca-certificate-publisher-controller",
        &["root-ca-cert-publisher"],
    ),
    ("ephemeral-volume-controller", &["ephemeral-volume"]),
    (
        "storageversion-garbage-collector-controller",
        &["storage-version-gc"],
    ),
    ("resourceclaim-controller", &["resource-claim-controller"]),
    (
        "legacy-serviceaccount-token-cleaner-controller",
        &["legacy-service-account-token-cleaner"],
    ),
    ("validatingadmissionpolicy-status-controller", &[]),
    ("service-cidr-controller", &[]),
    ("storage-version-migrator-controller", &[]),
    ("cloud-node-lifecycle-controller", &["cloud-node-lifecycle"]),
    ("service-lb-controller", &["service"]),
    ("node-route-controller", &["route"]),
];

/// Controllers `*` leaves off, as upstream's.
const OFF_BY_DEFAULT: &[&str] = &["bootstrap-signer-controller", "token-cleaner-controller"];

/// A `--controllers` entry's controller by its name (an alias resolved); `None`: unknown.
fn canonical_controller(entry: &str) -> Option<&'static str> {
    KNOWN_CONTROLLERS
        .iter()
        .find(|(name, aliases)| *name == entry || aliases.contains(&entry))
        .map(|(name, _)| *name)
}

/// Whether `--controllers` runs `name`, as upstream's `IsControllerEnabled`: the first
/// entry naming it (`name` or `-name`) decides; else `*` runs those on by default.
pub fn controller_enabled(list: &[String], name: &str) -> bool {
    let mut star = false;
    for entry in list {
        let (off, bare) = match entry.strip_prefix('-') {
            Some(bare) => (true, bare),
            None => (false, entry.as_str()),
        };
        if bare == "*" {
            star = true;
        } else if canonical_controller(bare) == Some(name) {
            return !off;
        }
    }
    star && !OFF_BY_DEFAULT.contains(&name)
}

/// The controllers `run_controllers` starts, by upstream's names (`--controllers`, the
/// checks on `/healthz`); node IPAM only with `--allocate-node-cidrs`.
pub const CONTROLLERS: &[&str] = &[
    "replicaset-controller",
    "deployment-controller",
    "garbage-collector-controller",
    "pod-garbage-collector-controller",
    "namespace-controller",
    "endpoints-controller",
    "endpointslice-controller",
    "daemonset-controller",
    "statefulset-controller",
    "job-controller",
    "cronjob-controller",
    "ttl-after-finished-controller",
    "serviceaccount-controller",
    "root-ca-certificate-publisher-controller",
    "resourcequota-controller",
    "disruption-controller",
    "node-ipam-controller",
    "node-lifecycle-controller",
];

/// The controllers of the controller manager, as upstream's kube-controller-manager with
/// `--use-service-account-credentials`: informers under the controller manager's
/// identity, writes as each controller's service account.
pub async fn run_controllers(
    source: &ClientSource,
    options: &ControllerOptions,
    healthz: &Checks,
) -> anyhow::Result<()> {
    use controllers::informers::Informer;
    use controllers::run::controller_client;
    let reader = controllers::run::client_from(source).await?;
    let rs_writer = controller_client(&reader, source, "replicaset-controller").await?;
    let d_writer = controller_client(&reader, source, "deployment-controller").await?;
    let gc_writer = controller_client(&reader, source, "generic-garbage-collector").await?;
    let podgc_writer = controller_client(&reader, source, "pod-garbage-collector").await?;
    let node_writer = controller_client(&reader, source, "node-controller").await?;
    let ns_writer = controller_client(&reader, source, "namespace-controller").await?;
    let ep_writer = controller_client(&reader, source, "endpoint-controller").await?;
    let eps_writer = controller_client(&reader, source, "endpointslice-controller").await?;
    let sa_writer = controller_client(&reader, source, "service-account-controller").await?;
    let ca_writer = controller_client(&reader, source, "root-ca-cert-publisher").await?;
    let quota_writer = controller_client(&reader, source, "resourcequota-controller").await?;
    let pdb_writer = controller_client(&reader, source, "disruption-controller").await?;
    let root_ca = root_ca_pem(source.kubeconfig_path(), options)?;
    let job_writer = controller_client(&reader, source, "job-controller").await?;
    let cj_writer = controller_client(&reader, source, "cronjob-controller").await?;
    let ttl_writer = controller_client(&reader, source, "ttl-after-finished-controller").await?;
    let ds_writer = controller_client(&reader, source, "daemon-set-controller").await?;
    let sts_writer = controller_client(&reader, source, "statefulset-controller").await?;
    let on = |name: &str| controller_enabled(&options.controllers, name);
    let started = CONTROLLERS.iter().filter(|name| {
        on(name) && (options.allocate_node_cidrs || **name != "node-ipam-controller")
    });
    for name in started.clone() {
        healthz.add(runtime::serving::Probe::ping(*name));
    }
    tracing::info!(
        controllers = %started.copied().collect::<Vec<_>>().join(","),
        "controller manager started"
    );
    // One list+watch per resource type, shared by the controllers.
    let replicasets = Informer::start(kube::Api::all(reader.clone()));
    let pods = Informer::<controllers::cachedpod::CachedPod>::start_trimmed(
        kube::Api::all(reader.clone()),
        controllers::informers::trim_pod,
        controllers::informers::POD_INDEXERS,
    );
    let deployments = Informer::start(kube::Api::all(reader.clone()));
    let nodes = Informer::start(kube::Api::all(reader.clone()));
    let namespaces =
        Informer::<k8s_openapi::api::core::v1::Namespace>::start(kube::Api::all(reader.clone()));
    let services = Informer::start(kube::Api::all(reader.clone()));
    let endpoints = Informer::start(kube::Api::all(reader.clone()));
    let endpointslices = Informer::start(kube::Api::all(reader.clone()));
    let jobs = Informer::<k8s_openapi::api::batch::v1::Job>::start(kube::Api::all(reader.clone()));
    let cronjobs =
        Informer::<k8s_openapi::api::batch::v1::CronJob>::start(kube::Api::all(reader.clone()));
    let daemonsets = Informer::start(kube::Api::all(reader.clone()));
    let statefulsets = Informer::start(kube::Api::all(reader.clone()));
    let revisions = Informer::start(kube::Api::all(reader.clone()));
    let claims = Informer::start(kube::Api::all(reader.clone()));
    let accounts = Informer::start(kube::Api::all(reader.clone()));
    let config_maps = Informer::start(kube::Api::all(reader.clone()));
    let pdbs = Informer::start(kube::Api::all(reader.clone()));
    let service_accounts = controllers::serviceaccounts::run_service_accounts(
        Arc::clone(&namespaces),
        accounts,
        sa_writer,
        5,
    );
    let root_ca_publisher = controllers::rootca::run_root_ca_publisher(
        Arc::clone(&namespaces),
        Arc::clone(&config_maps),
        ca_writer,
        root_ca,
        5,
    );
    let resource_quotas = controllers::resourcequota::run_resource_quotas(
        controllers::resourcequota::Caches {
            quotas: Informer::start(kube::Api::all(reader.clone())),
            pods: Arc::clone(&pods),
            services: Arc::clone(&services),
            config_maps,
            secrets: Informer::start(kube::Api::all(reader.clone())),
            claims: Informer::start(kube::Api::all(reader.clone())),
            deployments: Arc::clone(&deployments),
            replicasets: Arc::clone(&replicasets),
        },
        quota_writer,
        5,
        options.resource_quota_sync_period,
    );
    let disruption = controllers::disruption::run_disruption(
        pdbs,
        Arc::clone(&pods),
        Arc::clone(&replicasets),
        Arc::clone(&deployments),
        pdb_writer,
        5,
    );
    let leases = Informer::start(kube::Api::namespaced(reader, "kube-node-lease"));
    let lifecycle = controllers::nodelifecycle::run_node_lifecycle(
        Arc::clone(&nodes),
        Arc::clone(&pods),
        leases,
        node_writer.clone(),
        controllers::nodelifecycle::Options {
            monitor_period: options.node_monitor_period,
            grace_period: options.node_monitor_grace_period,
            ..Default::default()
        },
    );
    let ipam = async {
        if !options.allocate_node_cidrs {
            return;
        }
        if let Err(e) = controllers::nodeipam::run_node_ipam(
            Arc::clone(&nodes),
            node_writer.clone(),
            &options.cluster_cidr,
            options.node_cidr_mask_size,
        )
        .await
        {
            tracing::error!(error = %e, "node IPAM controller stopped");
        }
    };
    let batch = async {
        tokio::join!(
            gated(
                on("job-controller"),
                controllers::job::run_jobs(Arc::clone(&jobs), Arc::clone(&pods), job_writer, 5)
            ),
            gated(
                on("cronjob-controller"),
                controllers::cronjob::run_cronjobs(
                    Arc::clone(&cronjobs),
                    Arc::clone(&jobs),
                    cj_writer,
                    5
                )
            ),
            gated(
                on("ttl-after-finished-controller"),
                controllers::ttlafterfinished::run_ttl_after_finished(
                    Arc::clone(&jobs),
                    ttl_writer,
                    5
                )
            ),
        );
    };
    let workloads = async {
        tokio::join!(
            gated(
                on("daemonset-controller"),
                controllers::daemonset::run_daemonsets(
                    daemonsets,
                    Arc::clone(&pods),
                    Arc::clone(&nodes),
                    Arc::clone(&revisions),
                    ds_writer,
                    2
                )
            ),
            gated(
                on("statefulset-controller"),
                controllers::statefulset::run_statefulsets(
                    statefulsets,
                    Arc::clone(&pods),
                    revisions,
                    claims,
                    sts_writer,
                    5
                )
            ),
        );
    };
    tokio::join!(
        workloads,
        batch,
        gated(
            on("replicaset-controller"),
            controllers::run::run_replicasets(
                Arc::clone(&replicasets),
                Arc::clone(&pods),
                rs_writer,
                5
            )
        ),
        gated(
            on("deployment-controller"),
            controllers::run::run_deployments(
                Arc::clone(&deployments),
                Arc::clone(&replicasets),
                d_writer,
                5
            )
        ),
        gated(
            on("garbage-collector-controller"),
            controllers::gcloop::run_garbage_collector(
                gc_writer,
                Default::default(),
                Some(Arc::clone(&pods))
            )
        ),
        gated(
            on("pod-garbage-collector-controller"),
            controllers::podgc::run_pod_gc(
                Arc::clone(&pods),
                Arc::clone(&nodes),
                podgc_writer,
                options.terminated_pod_gc_threshold
            )
        ),
        gated(
            on("namespace-controller"),
            controllers::namespace::run_namespaces(namespaces, ns_writer, 10)
        ),
        gated(on("node-ipam-controller"), ipam),
        gated(on("node-lifecycle-controller"), lifecycle),
        gated(on("serviceaccount-controller"), service_accounts),
        gated(
            on("root-ca-certificate-publisher-controller"),
            root_ca_publisher
        ),
        gated(on("resourcequota-controller"), resource_quotas),
        gated(on("disruption-controller"), disruption),
        gated(
            on("endpoints-controller"),
            controllers::endpoints::run_endpoints(
                Arc::clone(&services),
                Arc::clone(&pods),
                endpoints,
                ep_writer,
                5
            )
        ),
        gated(
            on("endpointslice-controller"),
            controllers::endpointslice::run_endpointslices(
                Arc::clone(&services),
                Arc::clone(&pods),
                endpointslices,
                Arc::clone(&nodes),
                eps_writer,
                5,
                usize::from(options.max_endpoints_per_slice)
            )
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn list(s: &str) -> Vec<String> {
        s.split(',').map(str::to_string).collect()
    }

    #[test]
    fn controllers_flag_enables_and_disables_as_upstreams() {
        let all = list("*");
        assert!(CONTROLLERS.iter().all(|c| controller_enabled(&all, c)));
        assert!(!controller_enabled(&all, "bootstrap-signer-controller"));
        // By name or by alias; the first entry naming it decides.
        for off in ["*,-job-controller", "*,-job", "-job,*,job"] {
            let l = list(off);
            assert!(!controller_enabled(&l, "job-controller"), "{off}");
            assert!(controller_enabled(&l, "cronjob-controller"), "{off}");
        }
        // Without `*`, only those named.
        let some = list("replicaset,deployment-controller,tokencleaner");
        assert!(controller_enabled(&some, "replicaset-controller"));
        assert!(controller_enabled(&some, "deployment-controller"));
        assert!(controller_enabled(&some, "token-cleaner-controller"));
        assert!(!controller_enabled(&some, "job-controller"));
    }

    #[test]
    fn unknown_controllers_are_refused() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            options: ControllerOptions,
        }
        let options = |flag: &str| Cli::try_parse_from(["x", flag]).unwrap().options;
        assert!(check_controller_options(&options("--controllers=*,-ttl,-nodeipam")).is_ok());
        let err = check_controller_options(&options("--controllers=*,-nope")).unwrap_err();
        assert_eq!(
            err.to_string(),
            "--controllers: \"nope\" is not in the list of known controllers"
        );
        assert_eq!(options("--allocate-node-cidrs=true").controllers, ["*"]);
    }
}
