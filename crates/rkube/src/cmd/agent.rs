//! `rkube agent`: a node (kubelet on containerd) joining a server; the same agent runs
//! inside `rkube server` unless `--disable-agent`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use anyhow::Context;

/// The node settings `rkube agent` and `rkube server` (for its own node) share.
#[derive(clap::Args, Debug, Clone)]
pub struct NodeOptions {
    /// The node's name. Default: the host name.
    #[arg(long)]
    pub node_name: Option<String>,
    /// The node's IP (its InternalIP address). Default: the address of the interface of
    /// the default route, else the first non-loopback IPv4 address.
    #[arg(long)]
    pub node_ip: Option<IpAddr>,
    /// An existing CRI socket (`unix:///…`) to use instead of starting containerd. rkube
    /// neither starts nor stops it; it imports its pause image into it when the runtime's
    /// `sandbox_image` is rkube's (`docker.io/rkube/pause:3.10`) and missing. The runtime
    /// must use the cgroupfs driver and load the CNI configuration from --cni-conf-dir.
    #[arg(long)]
    pub container_runtime_endpoint: Option<String>,
    /// Where the node writes its CNI network configuration (`10-rkube-<node>.conflist`,
    /// a bridge for the node's pod CIDR) for the container runtime to load. With
    /// --container-runtime-endpoint, set it to that containerd's CRI `cni.conf_dir`
    /// (a stock containerd's is `/etc/cni/net.d`). Default: `<data-dir>/etc/cni/net.d`,
    /// which the containerd rkube starts reads.
    #[arg(long)]
    pub cni_conf_dir: Option<PathBuf>,
    /// A registry mirror, `HOST=URL[,URL…]` (e.g. `docker.io=http://127.0.0.1:5000`);
    /// repeatable. For the containerd rkube starts (an existing runtime keeps its own
    /// registry configuration).
    #[arg(long = "registry-mirror")]
    pub registry_mirror: Vec<String>,
    /// The kubelet API's port.
    #[arg(long, default_value_t = 10250)]
    pub kubelet_port: u16,
    /// The cluster DNS server pods use (`clusterDNS`).
    #[arg(long, default_value = "10.43.0.10")]
    pub cluster_dns: IpAddr,
    /// The cluster's DNS domain.
    #[arg(long, default_value = "cluster.local")]
    pub cluster_domain: String,
    /// A label the node registers with, `key=value`; repeatable.
    #[arg(long = "node-label")]
    pub node_label: Vec<String>,
    /// A taint the node registers with, `key=value:Effect`; repeatable.
    #[arg(long = "node-taint")]
    pub node_taint: Vec<String>,
    /// The node's pod limit (`maxPods`).
    #[arg(long, default_value_t = 110)]
    pub max_pods: u32,
    /// How pods reach pods on other nodes: `vxlan` (a VXLAN device `rkube.vxlan`, UDP
    /// port 8472, between the nodes' IPs; not used on a loopback node IP) or `none` (the
    /// operator routes the pod CIDRs).
    #[arg(long, value_enum, default_value = "vxlan")]
    pub overlay: OverlayBackend,
}

/// `--overlay`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum OverlayBackend {
    Vxlan,
    None,
}

/// `rkube agent`.
#[derive(clap::Args, Debug, Clone)]
pub struct AgentArgs {
    /// The server to join, `https://host:6443`.
    #[arg(long)]
    pub server: String,
    /// The join token (the server's `DATA_DIR/token`).
    #[arg(long, env = "RKUBE_TOKEN")]
    pub token: Option<String>,
    /// A file holding the join token.
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// Where the agent keeps its state (containerd, pods, credentials).
    #[arg(long, default_value = "/var/lib/rkube/agent")]
    pub data_dir: PathBuf,
    #[command(flatten)]
    pub node: NodeOptions,
}

/// The host name as a node name (lower case, as upstream's `GetHostname`).
pub fn hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .or_else(|_| std::fs::read_to_string("/etc/hostname"))
        .map(|h| h.trim().to_lowercase())
        .ok()
        .filter(|h| !h.is_empty())
        .unwrap_or_else(|| "localhost".into())
}

/// The node's IP: the source address of the default route, else the first
/// non-loopback IPv4 address, else loopback.
pub fn default_node_ip() -> IpAddr {
    // Connecting a UDP socket sends nothing; it picks the route's source address.
    if let Ok(s) = std::net::UdpSocket::bind("0.0.0.0:0")
        && s.connect("192.0.2.1:9").is_ok()
        && let Ok(a) = s.local_addr()
        && !a.ip().is_unspecified()
    {
        return a.ip();
    }
    if let Ok(addrs) = if_addrs::get_if_addrs() {
        for a in addrs {
            if !a.is_loopback() && a.ip().is_ipv4() {
                return a.ip();
            }
        }
    }
    IpAddr::from([127, 0, 0, 1])
}

/// The pause binary beside this executable (`rkube-pause`).
pub fn pause_binary() -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let p = exe.parent()?.join("rkube-pause");
    p.exists().then_some(p)
}

fn parse_mirror(s: &str) -> anyhow::Result<cri::containerd::Mirror> {
    let (host, urls) = s
        .split_once('=')
        .with_context(|| format!("--registry-mirror {s:?}: want HOST=URL[,URL…]"))?;
    let endpoints: Vec<String> = urls
        .split(',')
        .map(str::trim)
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    anyhow::ensure!(
        !host.is_empty() && !endpoints.is_empty(),
        "--registry-mirror {s:?}: want HOST=URL[,URL…]"
    );
    Ok(cri::containerd::Mirror {
        host: host.to_string(),
        endpoints,
    })
}

fn parse_taint(s: &str) -> anyhow::Result<k8s_openapi::api::core::v1::Taint> {
    let (kv, effect) = s
        .rsplit_once(':')
        .with_context(|| format!("--node-taint {s:?}: want key[=value]:Effect"))?;
    let (key, value) = match kv.split_once('=') {
        Some((k, v)) => (k, Some(v.to_string())),
        None => (kv, None),
    };
    anyhow::ensure!(
        matches!(effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute"),
        "--node-taint {s:?}: the effect must be NoSchedule, PreferNoSchedule or NoExecute"
    );
    Ok(k8s_openapi::api::core::v1::Taint {
        key: key.to_string(),
        value,
        effect: effect.to_string(),
        time_added: None,
    })
}

/// The agent's configuration from the node options: `data_dir` is the agent's own
/// directory, `kubeconfig` its credentials, `client_ca` the cluster's client CA (to
/// verify the API server's calls to the kubelet).
pub fn agent_config(
    node: &NodeOptions,
    data_dir: &Path,
    kubeconfig: PathBuf,
    client_ca: Option<PathBuf>,
) -> anyhow::Result<kubelet::agent::AgentConfig> {
    let name = node.node_name.clone().unwrap_or_else(hostname);
    let ip = node.node_ip.unwrap_or_else(default_node_ip);
    let mut kc = kubelet::KubeletConfig::new(name, data_dir.join("kubelet"), ip);
    kc.cluster_dns = vec![node.cluster_dns];
    kc.cluster_domain = node.cluster_domain.clone();
    kc.port = node.kubelet_port;
    kc.max_pods = node.max_pods;
    for l in &node.node_label {
        let (k, v) = l
            .split_once('=')
            .with_context(|| format!("--node-label {l:?}: want key=value"))?;
        kc.node_labels.push((k.to_string(), v.to_string()));
    }
    for t in &node.node_taint {
        kc.register_with_taints.push(parse_taint(t)?);
    }
    let mirrors = node
        .registry_mirror
        .iter()
        .map(|m| parse_mirror(m))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let mut cfg = kubelet::agent::AgentConfig::new(
        kc,
        data_dir.to_path_buf(),
        kubeconfig,
        client_ca,
        node.container_runtime_endpoint.clone(),
        mirrors,
        pause_binary(),
    );
    cfg.overlay = node.overlay == OverlayBackend::Vxlan;
    if let Some(dir) = &node.cni_conf_dir {
        cfg.kubelet.cni_conf_dir = std::path::absolute(dir)
            .with_context(|| format!("--cni-conf-dir {}", dir.display()))?;
    }
    Ok(cfg)
}

/// `rkube agent`: joins the server with the token (TLS bootstrap), then runs the node.
pub async fn run(args: AgentArgs) -> anyhow::Result<()> {
    let token = match (&args.token, &args.token_file) {
        (Some(t), _) => t.trim().to_string(),
        (None, Some(f)) => std::fs::read_to_string(f)
            .with_context(|| format!("--token-file {}", f.display()))?
            .trim()
            .to_string(),
        (None, None) => anyhow::bail!("a join token is required: --token or --token-file"),
    };
    std::fs::create_dir_all(&args.data_dir)
        .with_context(|| format!("--data-dir {}", args.data_dir.display()))?;
    let name = args.node.node_name.clone().unwrap_or_else(hostname);
    let creds = kubelet::bootstrap::join(&args.server, &token, &name, &args.data_dir)
        .await
        .context("joining the server")?;
    let cfg = agent_config(
        &args.node,
        &args.data_dir,
        creds.kubeconfig,
        Some(creds.client_ca),
    )?;
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let agent = tokio::spawn(kubelet::agent::run(cfg, stop_rx));
    super::server::shutdown_signal().await;
    tracing::info!("agent shutting down (pods keep running)");
    let _ = stop_tx.send(true);
    match agent.await {
        Ok(r) => r.context("agent"),
        Err(e) => Err(anyhow::anyhow!("agent task: {e}")),
    }
}

/// `rkube killall`.
#[derive(clap::Args, Debug, Clone)]
pub struct KillallArgs {
    /// The agent's directory (`DATA_DIR/agent` for a server's own node).
    #[arg(long, default_value = "/var/lib/rkube/agent")]
    pub data_dir: PathBuf,
    /// The node's CNI configuration directory, when it ran with `--cni-conf-dir` (its
    /// bridges are named there). Default: the agent's own.
    #[arg(long)]
    pub cni_conf_dir: Option<PathBuf>,
}

/// `rkube killall`: removes every pod sandbox and container of a stopped agent's
/// containerd (starting it just for that when it is not running), stops it, unmounts
/// what it left under its directory and deletes the node's pod bridge, its overlay rules
/// and the overlay device — what k3s's
/// `k3s-killall.sh` does. Pods left running by a stopped agent keep running until then.
pub async fn killall(args: KillallArgs) -> anyhow::Result<()> {
    use cri::RuntimeService;
    use cri::containerd::{ContainerdConfig, Layout, Supervisor};
    let layout = Layout::new(&args.data_dir);
    let connect = || {
        cri::remote::RemoteRuntime::connect(&layout.endpoint(), std::time::Duration::from_secs(30))
    };
    let mut runtime = connect()?;
    if layout.socket.exists() && runtime.version().await.is_ok() {
        cri::containerd::remove_all_pods(&runtime)
            .await
            .context("removing pods")?;
    } else if layout.config.exists() {
        let s = Supervisor::start(ContainerdConfig::new(layout.clone(), oci::PAUSE_IMAGE))
            .await
            .context("starting containerd to remove the pods")?;
        runtime = connect()?;
        let removed = cri::containerd::remove_all_pods(&runtime).await;
        s.stop().await;
        removed.context("removing pods")?;
    } else if args.data_dir.join("kubelet").exists() {
        // A node on an existing runtime (`--container-runtime-endpoint`): its pods are
        // that runtime's to stop; the node's own mounts, bridge and overlay still go.
        eprintln!(
            "{}: no containerd of rkube's here (the node used an existing runtime); its pods are left to that runtime",
            args.data_dir.display()
        );
    } else {
        anyhow::bail!(
            "{} holds no node state (is --data-dir the agent's directory?)",
            args.data_dir.display()
        );
    }
    cri::containerd::cleanup_mounts(&layout).context("unmounting")?;
    let conf_dir = args
        .cni_conf_dir
        .clone()
        .unwrap_or(layout.cni_conf_dir.clone());
    for bridge in bridges_in(&conf_dir) {
        let _ = std::process::Command::new("ip")
            .args(["link", "del", &bridge])
            .stderr(std::process::Stdio::null())
            .status();
        // The overlay's packet-filter rules are named after the bridge.
        net::dataplane::remove_filter_rules(&bridge).await;
    }
    // The overlay device, as k3s-killall.sh deletes flannel's (a running agent sharing
    // this network namespace recreates it on its next pass).
    if let Ok(kernel) = net::dataplane::Kernel::connect() {
        kernel
            .delete_device(net::overlay::DEVICE)
            .await
            .context("deleting the overlay device")?;
    }
    Ok(())
}

/// The bridges named by the conflists in `dir`.
fn bridges_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path()).ok())
        .filter_map(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .flat_map(|v| {
            v["plugins"]
                .as_array()
                .map(|ps| {
                    ps.iter()
                        .filter_map(|p| p["bridge"].as_str().map(str::to_string))
                        .collect::<Vec<_>>()
                })
                .unwrap_or_default()
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn mirrors_and_taints_parse() {
        let m = parse_mirror("docker.io=http://127.0.0.1:5000,http://x:1").unwrap();
        assert_eq!(m.host, "docker.io");
        assert_eq!(m.endpoints.len(), 2);
        assert!(parse_mirror("docker.io").is_err());
        let t = parse_taint("dedicated=gpu:NoSchedule").unwrap();
        assert_eq!(
            (t.key.as_str(), t.value.as_deref(), t.effect.as_str()),
            ("dedicated", Some("gpu"), "NoSchedule")
        );
        let t = parse_taint("x:NoExecute").unwrap();
        assert_eq!(t.value, None);
        assert!(parse_taint("x=y:Bad").is_err());
    }
}
