//! containerd run by us, as k3s does: its config rendered from ours, its registry mirrors,
//! and a [`Supervisor`] that starts it, waits for its CRI socket, restarts it when it dies
//! and stops it.
//!
//! Everything lives under one directory (see [`Layout`]), so two agents on one machine
//! never share a socket, root, state, runc root, CNI config or registry config. containerd
//! has two fixed paths whatever the config: `/run/containerd/s` (shim sockets, named by a
//! hash of our socket path, so they do not collide) and `/var/lib/cni/results`; the CNI
//! network name and bridge must differ per agent too.
//!
//! Containers outlive containerd: their shims are not containerd's children for life, so
//! stopping or restarting containerd (or the agent) leaves pods running, and the next
//! containerd picks them up from its state directory. Removing pods is an explicit step
//! ([`remove_all_pods`], then [`cleanup_mounts`]).

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::time::{Duration, Instant};

use tokio::process::{Child, Command};
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::remote::RemoteRuntime;
use crate::{Error, RuntimeService};

/// Where containerd's files live under a data directory `D` (the agent passes
/// `<data-dir>/agent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    /// `D`.
    pub dir: PathBuf,
    /// `D/containerd/containerd.sock`: the gRPC (CRI) socket.
    pub socket: PathBuf,
    /// `D/containerd/root`: images, snapshots, metadata.
    pub root: PathBuf,
    /// `D/containerd/state`: runtime state, shim bundles, network namespaces.
    pub state: PathBuf,
    /// `D/containerd/config.toml`.
    pub config: PathBuf,
    /// `D/containerd/containerd.log`: containerd's stdout and stderr.
    pub log: PathBuf,
    /// `D/containerd/runc`: runc's `--root`.
    pub runc_root: PathBuf,
    /// `D/etc/cni/net.d`: the CNI conflist containerd loads (the first one, by name).
    pub cni_conf_dir: PathBuf,
    /// `D/etc/containerd/certs.d`: `<host>/hosts.toml` per mirrored registry.
    pub registry_hosts_dir: PathBuf,
    /// `D/pod-logs`: the kubelet's pod log directory (upstream's `/var/log/pods`).
    pub pod_logs_dir: PathBuf,
}

impl Layout {
    /// The layout under `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> Layout {
        let dir = dir.into();
        let c = dir.join("containerd");
        Layout {
            socket: c.join("containerd.sock"),
            root: c.join("root"),
            state: c.join("state"),
            config: c.join("config.toml"),
            log: c.join("containerd.log"),
            runc_root: c.join("runc"),
            cni_conf_dir: dir.join("etc/cni/net.d"),
            registry_hosts_dir: dir.join("etc/containerd/certs.d"),
            pod_logs_dir: dir.join("pod-logs"),
            dir,
        }
    }

    /// The CRI endpoint: `unix://<socket>`.
    pub fn endpoint(&self) -> String {
        format!("unix://{}", self.socket.display())
    }

    /// Creates every directory of the layout.
    ///
    /// # Errors
    /// `Io` when a directory cannot be created.
    pub fn create_dirs(&self) -> Result<(), Error> {
        for d in [
            self.socket.parent().unwrap_or(&self.dir),
            &self.root,
            &self.state,
            &self.runc_root,
            &self.cni_conf_dir,
            &self.registry_hosts_dir,
            &self.pod_logs_dir,
        ] {
            std::fs::create_dir_all(d)
                .map_err(|e| io_error(format!("creating {}", d.display()), &e))?;
        }
        Ok(())
    }
}

/// A registry mirror: pulls of `host` go to `endpoints` first (then `host` itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mirror {
    /// The registry as image references name it: `docker.io`, `registry.local:5000`.
    pub host: String,
    /// Mirror URLs, tried in order: `http://127.0.0.1:5000`, `https://mirror.example`. A
    /// URL without a scheme is `https://`.
    pub endpoints: Vec<String>,
}

/// What containerd is run with.
#[derive(Debug, Clone)]
pub struct ContainerdConfig {
    /// Where its files live.
    pub layout: Layout,
    /// CRI `sandbox_image`: the pause image (must be present or pullable).
    pub sandbox_image: String,
    /// CRI `cni.bin_dir`.
    pub cni_bin_dir: PathBuf,
    /// Registry mirrors, written as `hosts.toml` files.
    pub mirrors: Vec<Mirror>,
    /// The streaming server's address (exec/attach/port-forward URLs).
    pub stream_server_address: String,
    /// The streaming server's port; 0 is an ephemeral one.
    pub stream_server_port: u16,
    /// CRI `enable_unprivileged_ports` (containerd 1.6's default: false).
    pub enable_unprivileged_ports: bool,
    /// CRI `enable_unprivileged_icmp` (containerd 1.6's default: false).
    pub enable_unprivileged_icmp: bool,
    /// The containerd binary.
    pub containerd_bin: PathBuf,
    /// The runc binary (`BinaryName`).
    pub runc_bin: PathBuf,
    /// containerd's log level (`debug`, `info`, …).
    pub log_level: String,
}

impl ContainerdConfig {
    /// The defaults for `layout`: `/usr/lib/cni`, `/usr/bin/containerd`, `/usr/sbin/runc`,
    /// streaming on `127.0.0.1` with an ephemeral port, no mirrors.
    pub fn new(layout: Layout, sandbox_image: impl Into<String>) -> ContainerdConfig {
        ContainerdConfig {
            layout,
            sandbox_image: sandbox_image.into(),
            cni_bin_dir: PathBuf::from("/usr/lib/cni"),
            mirrors: Vec::new(),
            stream_server_address: "127.0.0.1".into(),
            stream_server_port: 0,
            enable_unprivileged_ports: false,
            enable_unprivileged_icmp: false,
            containerd_bin: PathBuf::from("/usr/bin/containerd"),
            runc_bin: PathBuf::from("/usr/sbin/runc"),
            log_level: "info".into(),
        }
    }
}

/// Plugins that would share a machine-wide path with another containerd, or that are
/// useless here: other snapshotters, `/opt/containerd`, tracing. (The legacy
/// `io.containerd.runtime.v1.linux` stays: containerd 1.6's tasks service needs it.)
const DISABLED_PLUGINS: &[&str] = &[
    "io.containerd.snapshotter.v1.aufs",
    "io.containerd.snapshotter.v1.btrfs",
    "io.containerd.snapshotter.v1.devmapper",
    "io.containerd.snapshotter.v1.zfs",
    "io.containerd.internal.v1.opt",
    "io.containerd.internal.v1.tracing",
    "io.containerd.tracing.processor.v1.otlp",
];

/// A TOML basic string.
fn toml_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn toml_path(p: &Path) -> String {
    toml_str(&p.to_string_lossy())
}

/// containerd 1.6's config (version 2) for `config`. Pure.
pub fn render_config(config: &ContainerdConfig) -> String {
    let l = &config.layout;
    let ttrpc = PathBuf::from(format!("{}.ttrpc", l.socket.display()));
    let disabled = DISABLED_PLUGINS
        .iter()
        .map(|p| toml_str(p))
        .collect::<Vec<_>>()
        .join(", ");
    let cri = "plugins.\"io.containerd.grpc.v1.cri\"";
    format!(
        r#"# Written by rkube; regenerated at every start.
version = 2
root = {root}
state = {state}
disabled_plugins = [{disabled}]
required_plugins = ["io.containerd.grpc.v1.cri"]

[grpc]
  address = {socket}
  max_recv_message_size = 16777216
  max_send_message_size = 16777216

[ttrpc]
  address = {ttrpc}

[debug]
  address = ""
  level = {level}

[metrics]
  address = ""

[{cri}]
  sandbox_image = {sandbox_image}
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_unprivileged_ports = {unpriv_ports}
  enable_unprivileged_icmp = {unpriv_icmp}
  disable_tcp_service = true
  stream_server_address = {stream_address}
  stream_server_port = {stream_port}
  enable_selinux = false

[{cri}.containerd]
  snapshotter = "overlayfs"
  default_runtime_name = "runc"

[{cri}.containerd.runtimes.runc]
  runtime_type = "io.containerd.runc.v2"

[{cri}.containerd.runtimes.runc.options]
  BinaryName = {runc}
  Root = {runc_root}
  SystemdCgroup = false

[{cri}.cni]
  bin_dir = {cni_bin}
  conf_dir = {cni_conf}
  max_conf_num = 1

[{cri}.registry]
  config_path = {hosts}
"#,
        root = toml_path(&l.root),
        state = toml_path(&l.state),
        socket = toml_path(&l.socket),
        ttrpc = toml_path(&ttrpc),
        level = toml_str(&config.log_level),
        sandbox_image = toml_str(&config.sandbox_image),
        unpriv_ports = config.enable_unprivileged_ports,
        unpriv_icmp = config.enable_unprivileged_icmp,
        stream_address = toml_str(&config.stream_server_address),
        stream_port = toml_str(&config.stream_server_port.to_string()),
        runc = toml_path(&config.runc_bin),
        runc_root = toml_path(&l.runc_root),
        cni_bin = toml_path(&config.cni_bin_dir),
        cni_conf = toml_path(&l.cni_conf_dir),
        hosts = toml_path(&l.registry_hosts_dir),
    )
}

/// The file we put in each host directory we write, to know which ones are ours.
const HOSTS_MARKER: &str = ".rkube-managed";

/// The upstream server of a registry host, as containerd's default.
fn registry_server(host: &str) -> String {
    if host == "docker.io" {
        "https://registry-1.docker.io".into()
    } else {
        format!("https://{host}")
    }
}

/// `hosts.toml` for one mirror. Pure.
///
/// # Errors
/// `Containerd` for a host that is not a plain registry name.
pub fn render_hosts_toml(mirror: &Mirror) -> Result<String, Error> {
    validate_host(&mirror.host)?;
    let mut out = format!(
        "# Written by rkube.\nserver = {}\n",
        toml_str(&registry_server(&mirror.host))
    );
    for endpoint in &mirror.endpoints {
        let url = if endpoint.contains("://") {
            endpoint.trim_end_matches('/').to_string()
        } else {
            format!("https://{}", endpoint.trim_end_matches('/'))
        };
        let after_scheme = url.split_once("://").map_or("", |(_, r)| r);
        if after_scheme.is_empty() {
            return Err(Error::Containerd(format!(
                "mirror endpoint {endpoint:?} of {} has no host",
                mirror.host
            )));
        }
        // A path (other than the registry root) is used as is, without `/v2` appended.
        let has_path = after_scheme.contains('/');
        let _ = write!(
            out,
            "\n[host.{}]\n  capabilities = [\"pull\", \"resolve\"]\n",
            toml_str(&url)
        );
        if has_path {
            out.push_str("  override_path = true\n");
        }
    }
    Ok(out)
}

fn validate_host(host: &str) -> Result<(), Error> {
    let ok = !host.is_empty()
        && host != "."
        && host != ".."
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':' | '_' | '[' | ']'));
    if ok {
        Ok(())
    } else {
        Err(Error::Containerd(format!(
            "invalid registry host {host:?} for a mirror"
        )))
    }
}

/// Writes `certs.d/<host>/hosts.toml` for every mirror and removes host directories we
/// wrote before that are no longer mirrored (directories we did not write are left alone).
/// containerd re-reads them at every pull.
///
/// # Errors
/// `Containerd` for an invalid host, `Io` when a file cannot be written or removed.
pub fn write_registry_hosts(layout: &Layout, mirrors: &[Mirror]) -> Result<(), Error> {
    let dir = &layout.registry_hosts_dir;
    std::fs::create_dir_all(dir)
        .map_err(|e| io_error(format!("creating {}", dir.display()), &e))?;
    let mut wanted = BTreeSet::new();
    for mirror in mirrors {
        let text = render_hosts_toml(mirror)?;
        let host_dir = dir.join(&mirror.host);
        std::fs::create_dir_all(&host_dir)
            .map_err(|e| io_error(format!("creating {}", host_dir.display()), &e))?;
        write_atomic(&host_dir.join("hosts.toml"), text.as_bytes())?;
        write_atomic(&host_dir.join(HOSTS_MARKER), b"")?;
        wanted.insert(mirror.host.clone());
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| io_error(format!("reading {}", dir.display()), &e))?;
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if !wanted.contains(&name) && path.join(HOSTS_MARKER).exists() {
            std::fs::remove_dir_all(&path)
                .map_err(|e| io_error(format!("removing {}", path.display()), &e))?;
        }
    }
    Ok(())
}

fn write_atomic(path: &Path, contents: &[u8]) -> Result<(), Error> {
    let tmp = path.with_extension("tmp-rkube");
    std::fs::write(&tmp, contents)
        .map_err(|e| io_error(format!("writing {}", tmp.display()), &e))?;
    std::fs::rename(&tmp, path).map_err(|e| io_error(format!("writing {}", path.display()), &e))
}

fn io_error(context: String, e: &std::io::Error) -> Error {
    Error::Io {
        context,
        message: e.to_string(),
    }
}

/// How long [`Supervisor::start`] waits for the CRI socket to answer.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long [`Supervisor::stop`] waits after SIGTERM before SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(10);
/// The longest pause between restarts.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// A run at least this long resets the back-off.
const STABLE_RUN: Duration = Duration::from_secs(30);
/// Unix socket paths are limited to 108 bytes (with the NUL); `.ttrpc` is appended too.
const MAX_SOCKET_PATH: usize = 100;

/// containerd run and watched by us. Dropping it kills containerd (SIGKILL); prefer
/// [`Supervisor::stop`]. Containers keep running either way (see the module docs).
///
/// containerd is started with `PR_SET_PDEATHSIG = SIGKILL` (as k3s does), which the kernel
/// ties to the *thread* that spawned it: call [`Supervisor::start`] from a thread that lives
/// as long as the agent (the main thread or a tokio worker, not `spawn_blocking`). Restarts
/// are spawned from the supervising task, on a tokio worker.
#[derive(Debug)]
pub struct Supervisor {
    layout: Layout,
    pid: Arc<AtomicI32>,
    restarts: Arc<AtomicU32>,
    stop_tx: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl Supervisor {
    /// Writes the config and registry hosts, starts containerd and waits (up to
    /// [`START_TIMEOUT`]) until its socket answers CRI `Version`; from then on restarts it
    /// with back-off whenever it exits.
    ///
    /// # Errors
    /// `Io` for files, `Containerd` when it cannot be spawned or does not become ready (the
    /// end of its log is in the message).
    pub async fn start(config: ContainerdConfig) -> Result<Supervisor, Error> {
        let layout = config.layout.clone();
        if layout.socket.as_os_str().len() > MAX_SOCKET_PATH {
            return Err(Error::Containerd(format!(
                "socket path {} is too long for a unix socket",
                layout.socket.display()
            )));
        }
        // containerd replaces a socket file it finds; never steal a live one.
        if tokio::net::UnixStream::connect(&layout.socket)
            .await
            .is_ok()
        {
            return Err(Error::Containerd(format!(
                "something already listens on {}: is another agent using {}?",
                layout.socket.display(),
                layout.dir.display()
            )));
        }
        layout.create_dirs()?;
        write_atomic(&layout.config, render_config(&config).as_bytes())?;
        write_registry_hosts(&layout, &config.mirrors)?;
        let cmd = ContainerdCommand {
            bin: config.containerd_bin.clone(),
            config: layout.config.clone(),
            log: layout.log.clone(),
        };
        let child = cmd.spawn(0)?;
        let pid = Arc::new(AtomicI32::new(child_pid(&child)));
        let restarts = Arc::new(AtomicU32::new(0));
        let (stop_tx, stop_rx) = watch::channel(false);
        let (exit_tx, mut exit_rx) = watch::channel(false);
        let task = tokio::spawn(monitor(
            cmd,
            child,
            pid.clone(),
            restarts.clone(),
            stop_rx,
            exit_tx,
        ));
        let mut supervisor = Supervisor {
            layout,
            pid,
            restarts,
            stop_tx,
            task: Some(task),
        };
        let client = RemoteRuntime::connect(&supervisor.endpoint(), Duration::from_secs(2))?;
        let deadline = Instant::now() + START_TIMEOUT;
        let started = Instant::now();
        loop {
            // A first exit during start-up is a failed start, not a crash to retry.
            if *exit_rx.borrow_and_update() {
                let tail = log_tail(&supervisor.layout.log);
                supervisor.shutdown(Duration::ZERO).await;
                return Err(Error::Containerd(format!(
                    "containerd exited while starting; end of {}:\n{tail}",
                    supervisor.layout.log.display()
                )));
            }
            match client.version().await {
                Ok(v) => {
                    tracing::info!(
                        version = %v.runtime_version,
                        socket = %supervisor.layout.socket.display(),
                        elapsed_ms = started.elapsed().as_millis() as u64,
                        "containerd is ready"
                    );
                    return Ok(supervisor);
                }
                Err(e) if Instant::now() >= deadline => {
                    let tail = log_tail(&supervisor.layout.log);
                    supervisor.shutdown(Duration::from_secs(2)).await;
                    return Err(Error::Containerd(format!(
                        "not ready after {START_TIMEOUT:?} ({e}); end of {}:\n{tail}",
                        supervisor.layout.log.display()
                    )));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// The CRI endpoint, `unix://<socket>`.
    pub fn endpoint(&self) -> String {
        self.layout.endpoint()
    }

    /// The layout containerd runs in.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The pid of the current containerd process (0 between restarts).
    pub fn pid(&self) -> u32 {
        u32::try_from(self.pid.load(Ordering::SeqCst)).unwrap_or(0)
    }

    /// How many times containerd was restarted after exiting.
    pub fn restarts(&self) -> u32 {
        self.restarts.load(Ordering::SeqCst)
    }

    /// Stops containerd: SIGTERM, SIGKILL after [`STOP_TIMEOUT`], reaped. Containers keep
    /// running.
    pub async fn stop(mut self) {
        self.shutdown(STOP_TIMEOUT).await;
    }

    async fn shutdown(&mut self, grace: Duration) {
        let _ = self.stop_tx.send(true);
        // The monitor sends the signals (it owns the child); `grace` bounds our wait.
        if let Some(task) = self.task.take() {
            let mut task = task;
            if tokio::time::timeout(grace + Duration::from_secs(5), &mut task)
                .await
                .is_err()
            {
                kill(self.pid.load(Ordering::SeqCst), libc::SIGKILL);
                task.abort();
                let _ = task.await;
            }
        }
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            let _ = self.stop_tx.send(true);
            kill(self.pid.load(Ordering::SeqCst), libc::SIGKILL);
            // The child is `kill_on_drop`; the runtime reaps it.
            task.abort();
        }
    }
}

#[derive(Debug, Clone)]
struct ContainerdCommand {
    bin: PathBuf,
    config: PathBuf,
    log: PathBuf,
}

impl ContainerdCommand {
    fn spawn(&self, attempt: u32) -> Result<Child, Error> {
        use std::io::Write as _;
        let mut log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .map_err(|e| io_error(format!("opening {}", self.log.display()), &e))?;
        let _ = writeln!(
            log,
            "--- rkube: starting {} --config {} (restart {attempt}) ---",
            self.bin.display(),
            self.config.display()
        );
        let err = log
            .try_clone()
            .map_err(|e| io_error(format!("opening {}", self.log.display()), &e))?;
        let mut cmd = Command::new(&self.bin);
        cmd.arg("--config")
            .arg(&self.config)
            .stdin(std::process::Stdio::null())
            .stdout(log)
            .stderr(err)
            // Not in our process group: a terminal's Ctrl-C reaches us, and we stop it.
            .process_group(0)
            .kill_on_drop(true);
        set_parent_death_signal(&mut cmd);
        cmd.spawn()
            .map_err(|e| Error::Containerd(format!("spawning {}: {e}", self.bin.display())))
    }
}

/// containerd gets SIGKILL if we die (as k3s sets `Pdeathsig`), so it never outlives the
/// agent unsupervised. The shims it starts do not inherit this and keep containers running.
#[allow(unsafe_code)]
fn set_parent_death_signal(cmd: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec and only calls prctl(2),
    // which is async-signal-safe; it touches no memory of the parent.
    unsafe {
        cmd.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

#[allow(unsafe_code)]
fn kill(pid: i32, signal: i32) {
    if pid > 0 {
        // SAFETY: kill(2) only sends a signal; it touches no memory. The pid is our own
        // containerd child's: the monitor zeroes it as soon as it has reaped the child, so
        // only that instant could see a recycled pid.
        unsafe {
            libc::kill(pid, signal);
        }
    }
}

fn child_pid(child: &Child) -> i32 {
    child.id().and_then(|p| i32::try_from(p).ok()).unwrap_or(0)
}

enum Event {
    Exited(std::io::Result<std::process::ExitStatus>),
    Stop,
}

/// Owns containerd's process: waits for it, restarts it with back-off, stops it on request.
async fn monitor(
    cmd: ContainerdCommand,
    mut child: Child,
    pid: Arc<AtomicI32>,
    restarts: Arc<AtomicU32>,
    mut stop_rx: watch::Receiver<bool>,
    exit_tx: watch::Sender<bool>,
) {
    let mut backoff = Duration::from_millis(500);
    let mut started = Instant::now();
    loop {
        let event = tokio::select! {
            status = child.wait() => Event::Exited(status),
            _ = stop_rx.wait_for(|s| *s) => Event::Stop,
        };
        let status = match event {
            Event::Stop => {
                kill(child_pid(&child), libc::SIGTERM);
                if tokio::time::timeout(STOP_TIMEOUT, child.wait())
                    .await
                    .is_err()
                {
                    tracing::warn!("containerd did not stop after SIGTERM; killing it");
                    let _ = child.kill().await;
                }
                pid.store(0, Ordering::SeqCst);
                let _ = exit_tx.send(true);
                tracing::info!("containerd stopped");
                return;
            }
            Event::Exited(status) => status,
        };
        pid.store(0, Ordering::SeqCst);
        let _ = exit_tx.send(true);
        if *stop_rx.borrow() {
            return;
        }
        let ran = started.elapsed();
        if ran >= STABLE_RUN {
            backoff = Duration::from_millis(500);
        }
        tracing::error!(
            status = ?status.as_ref().map(|s| s.to_string()),
            ran_ms = ran.as_millis() as u64,
            restart_in_ms = backoff.as_millis() as u64,
            log = %cmd.log.display(),
            "containerd exited; restarting it"
        );
        loop {
            let stopped = tokio::select! {
                _ = tokio::time::sleep(backoff) => false,
                _ = stop_rx.wait_for(|s| *s) => true,
            };
            if stopped {
                return;
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
            let attempt = restarts.fetch_add(1, Ordering::SeqCst) + 1;
            match cmd.spawn(attempt) {
                Ok(c) => {
                    child = c;
                    break;
                }
                Err(e) => tracing::error!(error = %e, "restarting containerd failed"),
            }
        }
        pid.store(child_pid(&child), Ordering::SeqCst);
        started = Instant::now();
    }
}

/// The last lines of a log file, for error messages.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// Imports an image archive (OCI or docker tar) into containerd's `k8s.io` namespace, where
/// the CRI sees it at once: `ctr --address SOCKET -n k8s.io images import ARCHIVE`.
///
/// # Errors
/// `Containerd` with `ctr`'s stderr when the import fails.
pub async fn import_image(socket: &Path, archive: &Path) -> Result<(), Error> {
    let output = Command::new("ctr")
        .arg("--address")
        .arg(socket)
        .args(["-n", "k8s.io", "images", "import"])
        .arg(archive)
        .stdin(std::process::Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::Containerd(format!("running ctr: {e}")))?;
    if output.status.success() {
        return Ok(());
    }
    Err(Error::Containerd(format!(
        "importing {} with ctr ({}): {}",
        archive.display(),
        output.status,
        String::from_utf8_lossy(&output.stderr).trim()
    )))
}

/// Stops and removes every pod sandbox (and so every container) the runtime has. Tries
/// them all; returns the first error.
///
/// # Errors
/// The first failed CRI call (a sandbox gone meanwhile is not an error).
pub async fn remove_all_pods(runtime: &dyn RuntimeService) -> Result<(), Error> {
    let mut first = None;
    let sandboxes = runtime.list_pod_sandbox(None).await?;
    for sandbox in sandboxes {
        let stop = runtime.stop_pod_sandbox(&sandbox.id).await;
        let result = match stop {
            Err(e) if !e.is_not_found() => Err(e),
            _ => runtime.remove_pod_sandbox(&sandbox.id).await,
        };
        if let Err(e) = result
            && !e.is_not_found()
        {
            tracing::warn!(sandbox = %sandbox.id, error = %e, "removing sandbox");
            first.get_or_insert(e);
        }
    }
    // Containers whose sandbox is already gone.
    for container in runtime.list_containers(None).await? {
        if let Err(e) = runtime.remove_container(&container.id).await
            && !e.is_not_found()
        {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Mount points under `under` in a `/proc/self/mountinfo` text, deepest first. Pure.
pub fn mounts_under(mountinfo: &str, under: &Path) -> Vec<PathBuf> {
    let unique: BTreeSet<PathBuf> = mountinfo
        .lines()
        .filter_map(|line| line.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape_mountinfo(p)))
        .filter(|p| p.starts_with(under) && p != under)
        .collect();
    let mut found: Vec<PathBuf> = unique.into_iter().collect();
    found.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    found
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_mountinfo(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            let v = (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0');
            out.push(v);
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Unmounts whatever containerd left mounted under the layout (overlay rootfs, shm,
/// network namespaces), deepest first; a busy mount is detached lazily. Call it after
/// [`remove_all_pods`] and stopping containerd. Returns the paths unmounted.
///
/// # Errors
/// `Io` when `/proc/self/mountinfo` cannot be read or a mount cannot be unmounted.
pub fn cleanup_mounts(layout: &Layout) -> Result<Vec<PathBuf>, Error> {
    let mut done = Vec::new();
    // Unmounting can reveal mounts beneath (stacked mounts); a few passes at most.
    for _ in 0..5 {
        let info = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|e| io_error("reading /proc/self/mountinfo".into(), &e))?;
        let mounts = mounts_under(&info, &layout.dir);
        if mounts.is_empty() {
            return Ok(done);
        }
        for m in mounts {
            let ok = umount(&m, false) || umount(&m, true);
            if !ok {
                return Err(Error::Io {
                    context: format!("unmounting {}", m.display()),
                    message: "umount failed".into(),
                });
            }
            done.push(m);
        }
    }
    Ok(done)
}

fn umount(path: &Path, lazy: bool) -> bool {
    let mut cmd = std::process::Command::new("umount");
    if lazy {
        cmd.arg("-l");
    }
    cmd.arg(path)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn renders_config() {
        let mut c = ContainerdConfig::new(Layout::new("/var/lib/rkube/agent"), "rkube/pause:1");
        c.stream_server_port = 0;
        let text = render_config(&c);
        for want in [
            "version = 2\n",
            "root = \"/var/lib/rkube/agent/containerd/root\"",
            "state = \"/var/lib/rkube/agent/containerd/state\"",
            "address = \"/var/lib/rkube/agent/containerd/containerd.sock\"",
            "address = \"/var/lib/rkube/agent/containerd/containerd.sock.ttrpc\"",
            "sandbox_image = \"rkube/pause:1\"",
            "restrict_oom_score_adj = true",
            "netns_mounts_under_state_dir = true",
            "enable_unprivileged_ports = false",
            "stream_server_address = \"127.0.0.1\"",
            "stream_server_port = \"0\"",
            "snapshotter = \"overlayfs\"",
            "runtime_type = \"io.containerd.runc.v2\"",
            "BinaryName = \"/usr/sbin/runc\"",
            "Root = \"/var/lib/rkube/agent/containerd/runc\"",
            "SystemdCgroup = false",
            "bin_dir = \"/usr/lib/cni\"",
            "conf_dir = \"/var/lib/rkube/agent/etc/cni/net.d\"",
            "max_conf_num = 1",
            "config_path = \"/var/lib/rkube/agent/etc/containerd/certs.d\"",
            "\"io.containerd.internal.v1.opt\"",
            "\"io.containerd.snapshotter.v1.btrfs\"",
        ] {
            assert!(text.contains(want), "missing {want:?} in\n{text}");
        }
        // No legacy mirrors table (it cannot be combined with config_path).
        assert!(!text.contains("registry.mirrors"));
        assert_eq!(toml_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\n\"");
    }

    #[test]
    fn renders_hosts() {
        let m = Mirror {
            host: "docker.io".into(),
            endpoints: vec![
                "http://127.0.0.1:5000".into(),
                "mirror.example/".into(),
                "https://proxy.example/v2/dockerhub".into(),
            ],
        };
        let text = render_hosts_toml(&m).unwrap();
        assert!(text.contains("server = \"https://registry-1.docker.io\""));
        assert!(text.contains(
            "[host.\"http://127.0.0.1:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n"
        ));
        assert!(text.contains("[host.\"https://mirror.example\"]"));
        assert!(text.contains(
            "[host.\"https://proxy.example/v2/dockerhub\"]\n  capabilities = [\"pull\", \"resolve\"]\n  override_path = true\n"
        ));
        let other = Mirror {
            host: "registry.local:5000".into(),
            endpoints: vec![],
        };
        assert!(
            render_hosts_toml(&other)
                .unwrap()
                .contains("server = \"https://registry.local:5000\"")
        );
        for bad in ["", "..", "a/b", "x y"] {
            let m = Mirror {
                host: bad.into(),
                endpoints: vec![],
            };
            assert!(render_hosts_toml(&m).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn writes_and_prunes_hosts() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let foreign = layout.registry_hosts_dir.join("quay.io");
        std::fs::create_dir_all(&foreign).unwrap();
        let a = Mirror {
            host: "docker.io".into(),
            endpoints: vec!["http://127.0.0.1:5000".into()],
        };
        let b = Mirror {
            host: "ghcr.io".into(),
            endpoints: vec!["http://127.0.0.1:5001".into()],
        };
        write_registry_hosts(&layout, &[a.clone(), b]).unwrap();
        assert!(
            layout
                .registry_hosts_dir
                .join("ghcr.io/hosts.toml")
                .exists()
        );
        write_registry_hosts(&layout, &[a]).unwrap();
        assert!(!layout.registry_hosts_dir.join("ghcr.io").exists());
        assert!(
            layout
                .registry_hosts_dir
                .join("docker.io/hosts.toml")
                .exists()
        );
        assert!(foreign.exists(), "a directory we did not write stays");
    }

    #[test]
    fn finds_mounts_under_a_dir() {
        let info = "\
22 1 0:21 / / rw - overlay overlay rw
100 22 0:50 / /d/containerd/state/io.containerd.grpc.v1.cri/netns/cni-1 rw - nsfs nsfs rw
101 22 0:51 / /d/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw
102 22 0:52 / /d/containerd/state/sb/shm rw - tmpfs shm rw
103 22 0:53 / /dx/other rw - tmpfs tmpfs rw
104 22 0:54 / /d/with\\040space rw - tmpfs tmpfs rw
";
        let found = mounts_under(info, Path::new("/d"));
        assert_eq!(found.len(), 4);
        assert_eq!(
            found[0],
            PathBuf::from("/d/containerd/state/io.containerd.runtime.v2.task/k8s.io/abc/rootfs")
        );
        assert!(found.contains(&PathBuf::from("/d/with space")));
        assert!(!found.iter().any(|p| p.starts_with("/dx")));
    }
}
