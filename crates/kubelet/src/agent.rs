//! The node agent as one unit: containerd started and supervised by us (unless an existing
//! CRI endpoint is given), our pause image imported into it, then the node's
//! registration/status/lease loop ([`crate::node`]), the pod lifecycle ([`crate::pod`])
//! with volumes and cgroups, and the kubelet API ([`crate::server`]), all talking to
//! the API server with the node's own credentials.
//!
//! Stopping the agent stops containerd but not the pods: their shims keep the containers
//! running, and an agent started again adopts them (as k3s's agent does).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use cri::containerd::{ContainerdConfig, Layout, Mirror, Supervisor};
use cri::remote::RemoteRuntime;
use cri::{ImageService, RuntimeService};
use tokio::sync::watch;

use crate::{Error, KubeletConfig};

/// What the agent runs with.
#[derive(Debug, Clone)]
pub struct AgentConfig {
    pub kubelet: KubeletConfig,
    /// The agent's directory: containerd's files ([`Layout`]) and the kubelet's root.
    pub data_dir: PathBuf,
    /// The node's credentials (`system:node:<name>`).
    pub kubeconfig: PathBuf,
    /// The cluster's client CA: callers of the kubelet API with a certificate it signed
    /// are authenticated by it (the API server's kubelet client among them).
    pub client_ca: Option<PathBuf>,
    /// An existing CRI endpoint; `None`: start containerd.
    pub runtime_endpoint: Option<String>,
    /// Registry mirrors for the containerd we start.
    pub mirrors: Vec<Mirror>,
    /// `rkube-pause`, packed into the pause image at start.
    pub pause_binary: Option<PathBuf>,
    /// Whether the node joins the VXLAN overlay ([`crate::overlay`]) when its IP is a
    /// non-loopback IPv4 address.
    pub overlay: bool,
}

/// A short, stable name derived from the node's name (FNV-1a), for per-agent bridge
/// names: two agents on one machine must not share a bridge.
fn short_hash(s: &str) -> String {
    let mut h: u32 = 0x811c_9dc5;
    for b in s.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:08x}")
}

impl AgentConfig {
    /// The configuration of an agent in `data_dir`: the kubelet's root is
    /// `data_dir/kubelet`, pod logs and the CNI configuration where containerd's
    /// [`Layout`] puts them, and a bridge (`rk<hash>`) and CNI network (`rkube-<node>`)
    /// of this node's own.
    pub fn new(
        mut kubelet: KubeletConfig,
        data_dir: PathBuf,
        kubeconfig: PathBuf,
        client_ca: Option<PathBuf>,
        runtime_endpoint: Option<String>,
        mirrors: Vec<Mirror>,
        pause_binary: Option<PathBuf>,
    ) -> AgentConfig {
        let layout = Layout::new(&data_dir);
        kubelet.root_dir = data_dir.join("kubelet");
        kubelet.pod_log_dir = layout.pod_logs_dir.clone();
        kubelet.cni_conf_dir = layout.cni_conf_dir.clone();
        kubelet.cni_bridge = format!("rk{}", short_hash(&kubelet.node_name));
        kubelet.cni_network_name = format!("rkube-{}", kubelet.node_name);
        AgentConfig {
            kubelet,
            data_dir,
            kubeconfig,
            client_ca,
            runtime_endpoint,
            mirrors,
            pause_binary,
            overlay: true,
        }
    }
}

/// Starts containerd (config, mirrors, pause image) in `layout`.
async fn start_containerd(cfg: &AgentConfig, layout: Layout) -> Result<Supervisor, Error> {
    let pause = cfg.pause_binary.clone().ok_or_else(|| {
        Error::Other("rkube-pause was not found beside the rkube binary; build it with `cargo build -p rkube`".into())
    })?;
    layout.create_dirs()?;
    let archive = crate::runtime_endpoint::write_pause_archive(&pause, &cfg.data_dir)?;
    let mut config = ContainerdConfig::new(layout.clone(), oci::PAUSE_IMAGE);
    config.mirrors = cfg.mirrors.clone();
    let supervisor = Supervisor::start(config).await?;
    cri::containerd::import_image(&layout.socket, &archive).await?;
    tracing::info!(image = oci::PAUSE_IMAGE, "pause image imported");
    Ok(supervisor)
}

/// Runs the node until `stop` turns true.
pub async fn run(cfg: AgentConfig, stop: watch::Receiver<bool>) -> Result<(), Error> {
    let span = tracing::info_span!("agent", node = %cfg.kubelet.node_name);
    let _enter = span.enter();
    drop(_enter);
    let mut layout = Layout::new(&cfg.data_dir);
    // The containerd we start reads the CNI configuration where the node writes it.
    layout.cni_conf_dir = cfg.kubelet.cni_conf_dir.clone();
    let (supervisor, endpoint) = match &cfg.runtime_endpoint {
        Some(e) => (None, e.clone()),
        None => {
            let s = start_containerd(&cfg, layout.clone()).await?;
            let e = s.endpoint();
            (Some(s), e)
        }
    };
    tracing::info!(%endpoint, "container runtime ready");
    let remote = Arc::new(RemoteRuntime::connect(
        &endpoint,
        cri::remote::DEFAULT_REQUEST_TIMEOUT,
    )?);
    let runtime: Arc<dyn RuntimeService> = remote.clone();
    let images: Arc<dyn ImageService> = remote;
    if supervisor.is_none() {
        // Not ours: check its sandbox image and CNI directory instead of configuring them.
        crate::runtime_endpoint::prepare(
            &endpoint,
            runtime.as_ref(),
            images.as_ref(),
            cfg.pause_binary.as_deref(),
            &cfg.data_dir,
            &cfg.kubelet.cni_conf_dir,
        )
        .await;
    }
    let client = ::runtime::client_for(&cfg.kubeconfig, "kubelet")
        .await
        .map_err(|e| Error::Other(e.to_string()))?;
    let mut kubelet_cfg = cfg.kubelet.clone();
    // The overlay's device comes first: the pods' MTU leaves room for its encapsulation.
    let overlay = match (cfg.overlay, kubelet_cfg.node_ip) {
        (true, std::net::IpAddr::V4(ip)) if !ip.is_loopback() && !ip.is_unspecified() => {
            let dataplane = net::dataplane::Kernel::connect()
                .map_err(|e| Error::Other(format!("overlay: {e}")))?;
            let o = crate::overlay::Overlay {
                node: kubelet_cfg.node_name.clone(),
                spec: crate::overlay::vxlan_spec(ip),
                rules_id: kubelet_cfg.cni_bridge.clone(),
                dataplane: Arc::new(dataplane),
            };
            let vtep = o.prepare().await?;
            kubelet_cfg.cni_mtu = kubelet_cfg.cni_mtu.or(Some(vtep.mtu));
            tracing::info!(device = %o.spec.name, mac = %vtep.mac, mtu = vtep.mtu, "overlay device ready");
            Some((o, vtep))
        }
        _ => None,
    };
    let kc = Arc::new(kubelet_cfg);
    for dir in [&kc.root_dir, &kc.pod_log_dir] {
        std::fs::create_dir_all(dir).map_err(|source| Error::Io {
            path: dir.clone(),
            source,
        })?;
    }

    // The machine's facts, probed once: the node's capacity and the QoS cgroups' limits.
    let host = crate::node::host::HostFacts::probe(&kc.root_dir);
    let (cpus, memory) = (
        i64::from(host.cpus),
        i64::try_from(host.memory_bytes).unwrap_or(i64::MAX),
    );
    let node_agent = crate::node::NodeAgent::new(
        Arc::clone(&kc),
        client.clone(),
        Arc::clone(&runtime),
        Arc::clone(&images),
        host,
    );
    let node_task = tokio::spawn(node_agent.run(stop.clone()));
    let overlay_task =
        overlay.map(|(o, vtep)| tokio::spawn(o.run(client.clone(), vtep, stop.clone())));

    let volumes = Arc::new(crate::volumes::Volumes::new(
        Arc::clone(&kc),
        Arc::new(crate::volumes::source::KubeSource::new(client.clone())),
        Arc::new(crate::volumes::mounter::SystemMounter),
    ));
    let cgroups =
        crate::cgroups::CgroupFs::new("/sys/fs/cgroup", &kc.cgroup_root.to_string_lossy())?;
    // `kubepods` gets the node's allocatable (capacity less the 100Mi hard eviction
    // threshold), as upstream's QoS container manager.
    cgroups.ensure_node(cpus * 1000, (memory - (100 << 20)).max(0))?;
    let cgroups = Arc::new(cgroups);
    let ctx = crate::pod::PodContext::new(
        Arc::clone(&kc),
        client.clone(),
        Arc::clone(&runtime),
        Arc::clone(&images),
        volumes,
        cgroups,
    );
    let metrics = Arc::clone(&ctx.metrics);
    let pod_view = ctx.pods.clone();
    let pod_task = tokio::spawn(crate::pod::run(ctx, stop.clone()));

    // The kubelet API; `/pods` lists the pods as the pod lifecycle last saw them.
    let pki = kc.root_dir.join("pki");
    let (cert, key) = crate::server::ensure_serving_cert(&pki, &kc.node_name, kc.node_ip)?;
    let tls = crate::server::tls_config(&cert, &key, cfg.client_ca.as_deref())?;
    let bind = std::net::SocketAddr::from(([0, 0, 0, 0], kc.port));
    let listener = tokio::net::TcpListener::bind(bind)
        .await
        .map_err(|source| Error::Io {
            path: PathBuf::from(format!("kubelet API {bind}")),
            source,
        })?;
    let deps = crate::server::ServerDeps {
        config: Arc::clone(&kc),
        runtime: Arc::clone(&runtime),
        pods: Arc::new(move || pod_view.pods()),
        metrics: Arc::new(move || metrics.render() + &runtime::restclient::render()),
        reviewer: Arc::new(crate::server::auth::Reviewer::new(client.clone())),
    };
    let server_task = tokio::spawn(crate::server::serve(listener, tls, deps, stop.clone()));
    tracing::info!(port = kc.port, "kubelet API serving");

    let mut stop = stop;
    let _ = stop.wait_for(|s| *s).await;
    let parts = [
        ("node", Some(node_task)),
        ("pods", Some(pod_task)),
        ("overlay", overlay_task),
    ];
    for (name, task) in parts.into_iter().filter_map(|(n, t)| Some((n, t?))) {
        match tokio::time::timeout(Duration::from_secs(10), task).await {
            Ok(Ok(Err(e))) => tracing::warn!(part = name, error = %e, "agent part failed"),
            Ok(Err(e)) => tracing::warn!(part = name, error = %e, "agent part panicked"),
            Err(_) => tracing::warn!(part = name, "agent part did not stop in time"),
            Ok(Ok(Ok(()))) => {}
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), server_task).await;
    if let Some(s) = supervisor {
        s.stop().await;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn per_node_names_are_distinct_and_valid() {
        let a = AgentConfig::new(
            KubeletConfig::new("node-a", PathBuf::from("/x"), "10.0.0.1".parse().unwrap()),
            PathBuf::from("/d/a"),
            PathBuf::from("/d/a/k"),
            None,
            None,
            Vec::new(),
            None,
        );
        let b = AgentConfig::new(
            KubeletConfig::new("node-b", PathBuf::from("/x"), "10.0.0.1".parse().unwrap()),
            PathBuf::from("/d/b"),
            PathBuf::from("/d/b/k"),
            None,
            None,
            Vec::new(),
            None,
        );
        assert_ne!(a.kubelet.cni_bridge, b.kubelet.cni_bridge);
        assert!(a.kubelet.cni_bridge.len() <= 15);
        assert_eq!(a.kubelet.cni_network_name, "rkube-node-a");
        assert_eq!(a.kubelet.root_dir, PathBuf::from("/d/a/kubelet"));
        assert_eq!(a.kubelet.cni_conf_dir, PathBuf::from("/d/a/etc/cni/net.d"));
    }
}
