//! A real one-node cluster for end-to-end tests: `rkube server` WITH its node agent
//! (containerd started by rkube, runc, the CNI bridge), a local `docker-registry` holding
//! the offline demo images and configured as the `docker.io` mirror, so
//! `kubectl create deployment nginx --image=nginx` works verbatim.
//!
//! Each cluster gets its own node name, kubelet port and pod network (`--cluster-cidr
//! 10.<n>.0.0/16`, `<n>` leased machine-wide so parallel tests never share a subnet), and
//! everything is removed on drop (`rkube killall`).

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::Duration;

use crate::images::{DEMO_IMAGES, demo_images};
use crate::registry::Registry;
use crate::{RkubeServer, free_port};

/// A machine-wide lease on the second octet of a test cluster's pod network.
pub struct CidrLease {
    path: PathBuf,
    pub octet: u8,
}

impl CidrLease {
    /// Takes a free octet in 100..=199 (a file per octet under the temp dir holding the
    /// owner's pid; a dead owner's file is taken over).
    pub fn take() -> CidrLease {
        let dir = std::env::temp_dir().join("rkube-test-cidrs");
        std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        // Subnets routed on this machine already (a cluster left behind by a killed test
        // keeps its bridge and containers until `rkube killall`): never reuse them.
        let routes = std::process::Command::new("ip")
            .args(["-4", "route"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
            .unwrap_or_default();
        for octet in 100u8..=199 {
            if routes
                .lines()
                .any(|l| l.starts_with(&format!("10.{octet}.")))
            {
                continue;
            }
            let path = dir.join(octet.to_string());
            let claim = || {
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&path)
            };
            let file = match claim() {
                Ok(f) => Some(f),
                Err(_) => {
                    let owner = std::fs::read_to_string(&path)
                        .ok()
                        .and_then(|s| s.trim().parse::<u32>().ok());
                    let alive = owner.is_some_and(|p| PathBuf::from(format!("/proc/{p}")).exists());
                    if alive {
                        None
                    } else {
                        let _ = std::fs::remove_file(&path);
                        claim().ok()
                    }
                }
            };
            if let Some(mut f) = file {
                let _ = write!(f, "{}", std::process::id());
                return CidrLease { path, octet };
            }
        }
        panic!("no free test pod network in 10.100.0.0/16 … 10.199.0.0/16");
    }

    /// `10.<octet>.0.0/16`.
    pub fn cidr(&self) -> String {
        format!("10.{}.0.0/16", self.octet)
    }
}

impl Drop for CidrLease {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// A server with its own node, and the registry mirror it pulls from.
pub struct NodeCluster {
    // Dropped first: the server (and its pods) before the registry and the lease.
    pub server: RkubeServer,
    pub registry: Registry,
    pub node: String,
    pub lease: CidrLease,
}

impl NodeCluster {
    /// Starts the registry (with the demo images pushed) and the server with its node;
    /// waits until the node is Ready.
    pub fn start() -> NodeCluster {
        Self::start_with(&[])
    }

    /// As [`NodeCluster::start`], with extra server flags.
    pub fn start_with(extra: &[&str]) -> NodeCluster {
        Self::start_on("127.0.0.1", extra)
    }

    /// As [`NodeCluster::start_with`], the node's IP being `node_ip`.
    pub fn start_on(node_ip: &str, extra: &[&str]) -> NodeCluster {
        assert!(
            std::fs::metadata("/usr/bin/containerd").is_ok(),
            "containerd is missing: run scripts/install-deps.sh (package containerd)"
        );
        let registry = demo_registry();
        let lease = CidrLease::take();
        let kubelet_port = free_port();
        let node = format!("node-{}-{kubelet_port}", lease.octet);
        let mut args: Vec<String> = vec![
            "--node-name".into(),
            node.clone(),
            "--kubelet-port".into(),
            kubelet_port.to_string(),
            "--node-ip".into(),
            node_ip.into(),
            "--cluster-cidr".into(),
            lease.cidr(),
            "--registry-mirror".into(),
            format!("docker.io=http://{}", registry.host()),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let server = RkubeServer::start_with_agent(&refs);
        let cluster = NodeCluster {
            server,
            registry,
            node,
            lease,
        };
        cluster.wait_node_ready(Duration::from_secs(90));
        cluster
    }

    /// Waits until the node is Ready with a pod CIDR.
    pub fn wait_node_ready(&self, timeout: Duration) {
        crate::wait_for(
            &format!("node {} Ready", self.node),
            timeout.as_secs(),
            || {
                let n = self.server.try_get_json(&["node", &self.node])?;
                let ready = n["status"]["conditions"]
                    .as_array()?
                    .iter()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True");
                (ready && n["spec"]["podCIDR"].is_string() && untainted(&n)).then_some(())
            },
        );
    }

    /// The CNI network name of the node (host-local's state directory name).
    pub fn cni_network(&self) -> String {
        format!("rkube-{}", self.node)
    }
}

/// Whether the node lifecycle controller has lifted the not-ready taints a new node
/// starts with (pods would not be scheduled there before).
fn untainted(node: &serde_json::Value) -> bool {
    node["spec"]["taints"].as_array().is_none_or(|ts| {
        !ts.iter().any(|t| {
            t["key"].as_str().is_some_and(|k| {
                k.starts_with("node.kubernetes.io/not-ready")
                    || k.starts_with("node.kubernetes.io/unreachable")
            })
        })
    })
}

/// Whether the IPv4 address `ip` lies in `cidr` (`10.42.0.0/24`); panics on malformed
/// input (a test helper).
pub fn in_cidr(ip: &str, cidr: &str) -> bool {
    let parse =
        |s: &str| -> std::net::Ipv4Addr { s.parse().unwrap_or_else(|e| panic!("{s:?}: {e}")) };
    let (net, bits) = cidr
        .split_once('/')
        .unwrap_or_else(|| panic!("{cidr:?} is not a CIDR"));
    let bits: u32 = bits.parse().unwrap_or_else(|e| panic!("{cidr:?}: {e}"));
    let mask = if bits == 0 {
        0
    } else {
        u32::MAX << (32 - bits)
    };
    u32::from(parse(ip)) & mask == u32::from(parse(net)) & mask
}

/// A plain HTTP/1.0 GET of `path` from `ip:port`: (status code, body).
pub fn http_get(ip: &str, port: u16, path: &str) -> std::io::Result<(u16, String)> {
    let addr = format!("{ip}:{port}");
    let sock = addr
        .parse()
        .map_err(|e| std::io::Error::other(format!("{addr}: {e}")))?;
    let mut s = TcpStream::connect_timeout(&sock, Duration::from_secs(3))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    write!(s, "GET {path} HTTP/1.0\r\nHost: {ip}\r\n\r\n")?;
    let mut buf = Vec::new();
    s.read_to_end(&mut buf)?;
    let text = String::from_utf8_lossy(&buf).into_owned();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    Ok((code, body))
}

/// A second node: `rkube agent` joining a [`NodeCluster`]'s server with the join token
/// (TLS bootstrap), with its own containerd, kubelet port and bridge. Stopped and cleaned
/// up (`rkube killall`) on drop.
pub struct AgentProcess {
    child: Option<std::process::Child>,
    pub dir: tempfile::TempDir,
    pub node: String,
    /// The network namespace it runs in (`None`: the host's).
    netns: Option<String>,
}

/// Where and how an [`AgentProcess`] runs; the defaults suit an agent beside the server.
#[derive(Default)]
pub struct AgentOptions<'a> {
    /// Run the agent in this host's network namespace.
    pub host: Option<&'a crate::netns::Host>,
    /// The server URL (default `https://127.0.0.1:<port>`).
    pub server: Option<String>,
    /// `--node-ip` (default `127.0.0.1`).
    pub node_ip: Option<String>,
    /// The `docker.io` mirror (default the cluster's registry).
    pub mirror: Option<String>,
}

impl AgentProcess {
    /// Starts `rkube agent` as node `name` and waits until the node is Ready.
    pub fn start(cluster: &NodeCluster, name: &str) -> AgentProcess {
        Self::start_with(cluster, name, &AgentOptions::default())
    }

    /// As [`AgentProcess::start`], with `opts`.
    pub fn start_with(cluster: &NodeCluster, name: &str, opts: &AgentOptions<'_>) -> AgentProcess {
        let dir = tempfile::Builder::new()
            .prefix("rkube-agent-")
            .tempdir()
            .unwrap_or_else(|e| panic!("tempdir: {e}"));
        let token = std::fs::read_to_string(cluster.server.data_dir().join("token"))
            .unwrap_or_else(|e| panic!("join token: {e}"));
        let log = std::fs::File::create(dir.path().join("agent.log"))
            .unwrap_or_else(|e| panic!("log: {e}"));
        let log2 = log.try_clone().unwrap_or_else(|e| panic!("log: {e}"));
        let mut cmd = match opts.host {
            Some(h) => h.command(crate::rkube_binary()),
            None => std::process::Command::new(crate::rkube_binary()),
        };
        let server = opts
            .server
            .clone()
            .unwrap_or_else(|| format!("https://127.0.0.1:{}", cluster.server.port));
        let mirror = opts
            .mirror
            .clone()
            .unwrap_or_else(|| format!("http://{}", cluster.registry.host()));
        let child = cmd
            .arg("agent")
            .args(["--server", &server])
            .args(["--token", token.trim()])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .args(["--node-name", name])
            .args(["--kubelet-port", &free_port().to_string()])
            .args(["--node-ip", opts.node_ip.as_deref().unwrap_or("127.0.0.1")])
            .args(["--registry-mirror", &format!("docker.io={mirror}")])
            .env(
                "RUST_LOG",
                std::env::var("RKUBE_TEST_LOG").unwrap_or_else(|_| "info".into()),
            )
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start rkube agent: {e}"));
        let mut agent = AgentProcess {
            child: Some(child),
            dir,
            node: name.to_string(),
            netns: opts.host.map(|h| h.netns.clone()),
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(90);
        loop {
            if let Some(c) = agent.child.as_mut()
                && let Ok(Some(st)) = c.try_wait()
            {
                panic!("rkube agent exited with {st}:\n{}", agent.log());
            }
            let ready = cluster
                .server
                .try_get_json(&["node", name])
                .is_some_and(|n| {
                    n["spec"]["podCIDR"].is_string()
                        && untainted(&n)
                        && n["status"]["conditions"].as_array().is_some_and(|cs| {
                            cs.iter()
                                .any(|c| c["type"] == "Ready" && c["status"] == "True")
                        })
                });
            if ready {
                return agent;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "node {name} not Ready after 90 s:\n{}",
                agent.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// What the agent logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("agent.log")).unwrap_or_default()
    }
}

impl Drop for AgentProcess {
    fn drop(&mut self) {
        if let Some(c) = self.child.take() {
            crate::rkube::terminate(c, Duration::from_secs(20));
        }
        let data = self.dir.path().join("data");
        match &self.netns {
            None => crate::rkube::killall(&data),
            Some(ns) => {
                // Its bridge, rules and overlay device live in its namespace.
                let _ = std::process::Command::new("nsenter")
                    .arg(format!("--net=/run/netns/{ns}"))
                    .arg("--")
                    .arg(crate::rkube_binary())
                    .args(["killall", "--data-dir"])
                    .arg(&data)
                    .status();
            }
        }
    }
}

/// A local registry with the offline demo images pushed (`library/nginx:latest`, …): the
/// `docker.io` mirror of test nodes.
pub fn demo_registry() -> Registry {
    let images = demo_images();
    let registry = Registry::start();
    for (file, reference) in DEMO_IMAGES {
        let repo_tag = reference
            .strip_prefix("docker.io/")
            .unwrap_or(reference)
            .to_string();
        registry.push(&images.join(file), &repo_tag);
    }
    registry
}

/// A containerd of the test's own, not rkube's (for `--container-runtime-endpoint`):
/// configured as rkube configures its own ([`cri::containerd::render_config`]: our pause
/// image as `sandbox_image`, runc with cgroupfs, the CNI config directory of its layout)
/// with `docker.io` mirrored to a test registry, in a temporary directory. On drop its
/// pods are removed (`rkube killall`, which also deletes the bridges its CNI
/// configuration names), containerd is stopped and what it left mounted is unmounted.
pub struct ExternalContainerd {
    child: Option<std::process::Child>,
    pub layout: cri::containerd::Layout,
    pub dir: tempfile::TempDir,
}

impl ExternalContainerd {
    /// Starts containerd with `docker.io` mirrored to `mirror` (`http://127.0.0.1:PORT`)
    /// and waits until its socket answers.
    pub fn start(mirror: &str) -> ExternalContainerd {
        use cri::containerd::{ContainerdConfig, Layout, Mirror, render_config};
        let dir = tempfile::Builder::new()
            .prefix("rkube-ctrd-")
            .tempdir()
            .unwrap_or_else(|e| panic!("tempdir: {e}"));
        let layout = Layout::new(dir.path());
        layout
            .create_dirs()
            .unwrap_or_else(|e| panic!("containerd dirs: {e}"));
        let mut config = ContainerdConfig::new(layout.clone(), oci::PAUSE_IMAGE);
        config.mirrors = vec![Mirror {
            host: "docker.io".into(),
            endpoints: vec![mirror.to_string()],
        }];
        cri::containerd::write_registry_hosts(&layout, &config.mirrors)
            .unwrap_or_else(|e| panic!("registry hosts: {e}"));
        std::fs::write(&layout.config, render_config(&config))
            .unwrap_or_else(|e| panic!("{}: {e}", layout.config.display()));
        let log = std::fs::File::create(&layout.log).unwrap_or_else(|e| panic!("log: {e}"));
        let log2 = log.try_clone().unwrap_or_else(|e| panic!("log: {e}"));
        let child = std::process::Command::new(&config.containerd_bin)
            .arg("--config")
            .arg(&layout.config)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start containerd: {e}"));
        let mut c = ExternalContainerd {
            child: Some(child),
            layout,
            dir,
        };
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while !c.answers() {
            if let Some(ch) = c.child.as_mut()
                && let Ok(Some(st)) = ch.try_wait()
            {
                panic!("containerd exited with {st}:\n{}", c.log());
            }
            assert!(
                std::time::Instant::now() < deadline,
                "containerd did not answer within 30 s:\n{}",
                c.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        c
    }

    /// The CRI endpoint, `unix://…/containerd.sock`.
    pub fn endpoint(&self) -> String {
        self.layout.endpoint()
    }

    /// Whether containerd answers on its socket (`ctr version`).
    pub fn answers(&self) -> bool {
        self.ctr(&["version"]).is_some()
    }

    /// Whether the containerd process is alive and answering.
    pub fn is_running(&mut self) -> bool {
        let alive = self
            .child
            .as_mut()
            .is_some_and(|c| matches!(c.try_wait(), Ok(None)));
        alive && self.answers()
    }

    /// `ctr -n k8s.io ARGS` against this containerd: its stdout, `None` when it failed.
    pub fn ctr(&self, args: &[&str]) -> Option<String> {
        let out = std::process::Command::new("ctr")
            .arg("--address")
            .arg(&self.layout.socket)
            .args(["-n", "k8s.io"])
            .args(args)
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// containerd's log.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.layout.log).unwrap_or_default()
    }
}

impl Drop for ExternalContainerd {
    fn drop(&mut self) {
        // Sandboxes and containers removed (CNI DEL frees the IPs), mounts, bridge.
        crate::rkube::killall(&self.layout.dir);
        if let Some(c) = self.child.take() {
            crate::rkube::terminate(c, Duration::from_secs(15));
        }
        if let Err(e) = cri::containerd::cleanup_mounts(&self.layout) {
            eprintln!("unmounting under {}: {e}", self.layout.dir.display());
        }
    }
}
