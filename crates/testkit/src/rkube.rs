//! A real `rkube server` process, and the real kubectl against it.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::free_port;

/// The `rkube` binary of this workspace (built on first use if missing).
pub fn rkube_binary() -> PathBuf {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| {
        // Test binaries live in <target>/<profile>/deps; the binary one level up.
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
        let profile_dir = exe
            .parent()
            .and_then(Path::parent)
            .map(Path::to_path_buf)
            .unwrap_or_else(|| panic!("unexpected test binary location {}", exe.display()));
        let bin = profile_dir.join("rkube");
        let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
        cargo.args([
            "build",
            "-q",
            "-p",
            "rkube",
            "--bin",
            "rkube",
            "--bin",
            "rkube-pause",
        ]);
        // The variables cargo sets for this test crate must not reach the nested build:
        // build scripts that watch them (ring's watches CARGO_MANIFEST_DIR) would see a
        // change, rebuild, and make the next outer build rebuild again.
        for (key, _) in std::env::vars_os() {
            let key = key.to_string_lossy();
            let per_crate = key.starts_with("CARGO_PKG_")
                || key.starts_with("CARGO_BIN_")
                || matches!(
                    &*key,
                    "CARGO_MANIFEST_DIR"
                        | "CARGO_MANIFEST_PATH"
                        | "CARGO_CRATE_NAME"
                        | "CARGO_PRIMARY_PACKAGE"
                        | "CARGO_TARGET_TMPDIR"
                        | "OUT_DIR"
                );
            if per_crate {
                cargo.env_remove(&*key);
            }
        }
        let status = cargo.status();
        match status {
            Ok(s) if s.success() => {}
            Ok(_) | Err(_) if bin.exists() => {}
            other => panic!("cannot build rkube: {other:?}"),
        }
        bin
    })
    .clone()
}

/// `--controller-manager-secure-port 0` and `--scheduler-secure-port 0` but for those
/// `extra` sets: servers of tests run side by side, and only a test about these endpoints
/// gives them (free) ports.
fn endpoints_off<S: AsRef<str>>(extra: &[S]) -> Vec<&'static str> {
    [
        "--controller-manager-secure-port",
        "--scheduler-secure-port",
    ]
    .into_iter()
    .filter(|flag| !extra.iter().any(|a| a.as_ref().starts_with(flag)))
    .flat_map(|flag| [flag, "0"])
    .collect()
}

/// Runs `rkube server` with `extra` flags that must stop it at start-up (a fresh data dir,
/// a free port) and returns its stderr.
pub fn server_start_error(extra: &[&str]) -> String {
    let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("tempdir: {e}"));
    let out = Command::new(rkube_binary())
        .arg("server")
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .args([
            "--https-port",
            "0",
            "--bind-address",
            "127.0.0.1",
            "--disable-agent",
        ])
        .args(endpoints_off(extra))
        .args(extra)
        .output()
        .unwrap_or_else(|e| panic!("cannot run rkube: {e}"));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        !out.status.success(),
        "rkube server {extra:?} started: {err}"
    );
    err
}

/// The kubectl binary of a version (`"1.27"` … `"1.33"`), or the default one for `None`.
pub fn kubectl_binary(version: Option<&str>) -> PathBuf {
    let default = crate::require_binary("kubectl", "kubectl (installed on this kind of machine)");
    let real = std::fs::canonicalize(&default).unwrap_or(default.clone());
    match version {
        None => real,
        Some(v) => {
            let p = real
                .parent()
                .map(|d| d.join(format!("kubectl.{v}")))
                .unwrap_or_default();
            assert!(p.exists(), "kubectl {v} not found at {}", p.display());
            p
        }
    }
}

/// A running `rkube server --disable-agent`, killed on drop.
pub struct RkubeServer {
    child: Option<Child>,
    pub dir: tempfile::TempDir,
    pub port: u16,
    pub kubeconfig: PathBuf,
    /// A per-server HOME for kubectl, so discovery caches never leak between tests.
    pub home: PathBuf,
    extra: Vec<String>,
    /// `RUST_LOG` of the server (`RKUBE_TEST_LOG`, else `info`, unless set here).
    log_filter: Option<String>,
    /// Whether the server runs its own node agent (containerd child, real pods).
    agent: bool,
}

impl RkubeServer {
    /// Starts a server on SQLite in a fresh data dir.
    pub fn start() -> RkubeServer {
        Self::start_with(&[])
    }

    /// Starts a server with extra flags (e.g. `--datastore-endpoint`).
    pub fn start_with(extra: &[&str]) -> RkubeServer {
        Self::start_logging(extra, None)
    }

    /// Starts a server with extra flags and its own log filter (e.g. `debug`, for tests
    /// that check what the log does not contain).
    pub fn start_logging(extra: &[&str], log_filter: Option<&str>) -> RkubeServer {
        Self::launch("rkube-server-", extra, log_filter, false)
    }

    fn launch(prefix: &str, extra: &[&str], log_filter: Option<&str>, agent: bool) -> RkubeServer {
        let dir = tempfile::Builder::new()
            .prefix(prefix)
            .tempdir()
            .unwrap_or_else(|e| panic!("tempdir: {e}"));
        let home = dir.path().join("home");
        std::fs::create_dir_all(&home).unwrap_or_else(|e| panic!("{e}"));
        let mut s = RkubeServer {
            child: None,
            port: free_port(),
            kubeconfig: dir.path().join("data").join("admin.kubeconfig"),
            home,
            dir,
            extra: extra.iter().map(|s| s.to_string()).collect(),
            log_filter: log_filter.map(str::to_string),
            agent,
        };
        s.spawn();
        s
    }

    /// Starts a server WITH its node agent (containerd started by rkube, real pods): the
    /// caller passes the node flags (`--node-name`, `--kubelet-port`, `--cluster-cidr`,
    /// `--registry-mirror`, …; see [`crate::node::NodeCluster`]). On drop the server is
    /// stopped gracefully and `rkube killall` removes its pods, containerd and bridge.
    pub fn start_with_agent(extra: &[&str]) -> RkubeServer {
        Self::launch("rkube-node-", extra, None, true)
    }

    /// The server's data directory.
    pub fn data_dir(&self) -> PathBuf {
        self.dir.path().join("data")
    }

    /// The pid of the server process.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    fn spawn(&mut self) {
        self.spawn_process();
        self.wait_for("/readyz");
    }

    fn spawn_process(&mut self) {
        let data = self.dir.path().join("data");
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("server.log"))
            .unwrap_or_else(|e| panic!("log: {e}"));
        let log2 = log.try_clone().unwrap_or_else(|e| panic!("log: {e}"));
        let child = Command::new(rkube_binary())
            .arg("server")
            .arg("--data-dir")
            .arg(&data)
            .args([
                "--https-port",
                &self.port.to_string(),
                "--bind-address",
                "127.0.0.1",
            ])
            .args((!self.agent).then_some("--disable-agent"))
            .args(endpoints_off(&self.extra))
            .args(&self.extra)
            .env(
                "RUST_LOG",
                self.log_filter.clone().unwrap_or_else(|| {
                    std::env::var("RKUBE_TEST_LOG").unwrap_or_else(|_| "info".into())
                }),
            )
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start rkube: {e}"));
        self.child = Some(child);
    }

    /// Waits until `path` (`/readyz`, `/livez`) answers and the default namespace is set
    /// up.
    fn wait_for(&mut self, path: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Some(c) = self.child.as_mut()
                && let Ok(Some(status)) = c.try_wait()
            {
                panic!("rkube server exited with {status}:\n{}", self.log_tail());
            }
            if self.kubeconfig.exists() {
                let out = self.kubectl(&["get", "--raw", path]);
                if out.status.success() && self.namespace_defaults_ready() {
                    return;
                }
            }
            if Instant::now() > deadline {
                panic!(
                    "rkube server: {path} failing after 60s:\n{}",
                    self.log_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Whether the `default` namespace has what the controller manager's ServiceAccount
    /// controller and root-CA publisher put there (upstream's ServiceAccount admission
    /// refuses pods until the account exists). Always true without the controller manager,
    /// or when the authorization modes leave its service accounts no rights (no `RBAC`,
    /// no `AlwaysAllow`).
    fn namespace_defaults_ready(&self) -> bool {
        if self
            .extra
            .iter()
            .any(|a| a == "--disable-controller-manager")
        {
            return true;
        }
        let modes = self.extra.iter().enumerate().find_map(|(i, a)| {
            a.strip_prefix("--authorization-mode=")
                .map(str::to_string)
                .or_else(|| {
                    (a == "--authorization-mode")
                        .then(|| self.extra.get(i + 1).cloned().unwrap_or_default())
                })
        });
        if let Some(modes) = modes
            && !modes.split(',').any(|m| m == "RBAC" || m == "AlwaysAllow")
        {
            return true;
        }
        self.kubectl(&[
            "get",
            "serviceaccount/default",
            "configmap/kube-root-ca.crt",
            "-n",
            "default",
        ])
        .status
        .success()
    }

    /// The last lines of the server's log.
    pub fn log_tail(&self) -> String {
        let s = std::fs::read_to_string(self.dir.path().join("server.log")).unwrap_or_default();
        let lines: Vec<&str> = s.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }

    /// Stops the server (SIGKILL) and starts it again on the same data dir and port.
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// Kills the server and starts it again, waiting only until it is live (`/livez`):
    /// for a server expected not to become ready.
    pub fn restart_live(&mut self) {
        self.kill();
        self.spawn_process();
        self.wait_for("/livez");
    }

    /// Stops the server with SIGTERM (the agent stops its containerd; pods keep running)
    /// and waits at most `timeout`, then SIGKILL.
    pub fn stop_gracefully(&mut self, timeout: Duration) {
        if let Some(c) = self.child.take() {
            terminate(c, timeout);
        }
    }

    /// Starts a stopped server again on the same data dir and port.
    pub fn start_again(&mut self) {
        self.spawn();
    }

    fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// A kubectl command (default version) with this server's kubeconfig and HOME.
    pub fn kubectl_cmd(&self, version: Option<&str>) -> Command {
        let mut c = Command::new(kubectl_binary(version));
        c.env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.home)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .stdin(Stdio::null());
        c
    }

    /// Runs the default kubectl.
    pub fn kubectl(&self, args: &[&str]) -> Output {
        self.kubectl_v(None, args)
    }

    /// Runs kubectl of a given version.
    pub fn kubectl_v(&self, version: Option<&str>, args: &[&str]) -> Output {
        self.kubectl_cmd(version)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run kubectl: {e}"))
    }

    /// Runs kubectl with `stdin` as its input.
    pub fn kubectl_stdin(&self, version: Option<&str>, args: &[&str], stdin: &str) -> Output {
        run_with_stdin(self.kubectl_cmd(version).args(args), stdin)
    }

    /// `rkube kubectl` (our own client) with this server's kubeconfig and home.
    pub fn rkubectl_cmd(&self) -> Command {
        let mut c = Command::new(rkube_binary());
        c.arg("kubectl")
            .env("KUBECONFIG", &self.kubeconfig)
            .env("HOME", &self.home)
            .env_remove("KUBECTL_EXTERNAL_DIFF")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null());
        c
    }

    /// Runs `rkube kubectl args`.
    pub fn rkubectl(&self, args: &[&str]) -> Output {
        self.rkubectl_cmd()
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run rkube kubectl: {e}"))
    }

    /// Runs `rkube kubectl args` with `stdin` as its input.
    pub fn rkubectl_stdin(&self, args: &[&str], stdin: &str) -> Output {
        run_with_stdin(self.rkubectl_cmd().args(args), stdin)
    }

    /// Runs `rkube kubectl args`, panicking with both streams when it fails; its stdout.
    pub fn rkubectl_ok(&self, args: &[&str]) -> String {
        let out = self.rkubectl(args);
        assert!(
            out.status.success(),
            "rkube kubectl {args:?} failed ({}):\nstdout: {}\nstderr: {}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Runs the same command with the real kubectl 1.33 and with `rkube kubectl`:
    /// (real, ours).
    pub fn both(&self, args: &[&str]) -> (Output, Output) {
        (self.kubectl_v(Some("1.33"), args), self.rkubectl(args))
    }

    /// Waits until kubectl `args` (a `get`) succeeds.
    pub fn wait_for_object(&self, args: &[&str]) {
        crate::eventually(&format!("kubectl {args:?}"), || {
            self.kubectl(args).status.success()
        });
    }

    /// Writes a kubeconfig for this server (trusting its CA) whose user is `user_yaml`
    /// (the lines under `user:`, indented four spaces), e.g. `    token: abc`.
    pub fn user_kubeconfig(&self, name: &str, user_yaml: &str) -> PathBuf {
        let path = self.dir.path().join(format!("{name}.kubeconfig"));
        let ca = self
            .dir
            .path()
            .join("data")
            .join("tls")
            .join("server-ca.crt");
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n{user_yaml}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            self.port,
            ca.display(),
        );
        std::fs::write(&path, text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        path
    }

    /// Runs kubectl 1.33 with `kubeconfig` instead of the admin's.
    pub fn kubectl_with(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.kubectl_cmd(Some("1.33"))
            .env("KUBECONFIG", kubeconfig)
            .args(args)
            .output()
            .unwrap_or_else(|e| panic!("cannot run kubectl: {e}"))
    }

    /// Runs kubectl and returns stdout, panicking with both streams when it fails.
    pub fn kubectl_ok(&self, version: Option<&str>, args: &[&str]) -> String {
        let out = self.kubectl_v(version, args);
        assert!(
            out.status.success(),
            "kubectl {args:?} failed ({}):\nstdout: {}\nstderr: {}\nserver log:\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.log_tail()
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// `kubectl get <args> -o json` with kubectl 1.33, parsed; panics (as
    /// [`kubectl_ok`](Self::kubectl_ok)) when kubectl fails.
    pub fn get_json(&self, args: &[&str]) -> Value {
        let out = self.kubectl_ok(Some("1.33"), &get_json_args(args));
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("kubectl {args:?}: {e}: {out}"))
    }

    /// `kubectl get <args> -o json` with kubectl 1.33, parsed, or `None` when kubectl fails
    /// (e.g. the object does not exist, or not yet).
    pub fn try_get_json(&self, args: &[&str]) -> Option<Value> {
        let out = self.kubectl_v(Some("1.33"), &get_json_args(args));
        if !out.status.success() {
            return None;
        }
        serde_json::from_slice(&out.stdout).ok()
    }
    /// `"<reason> <message>"` of each event about the object named `name` (default
    /// namespace).
    pub fn events_about(&self, name: &str) -> Vec<String> {
        self.get_items(&[
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
        ])
        .iter()
        .map(|e| format!("{} {}", e["reason"], e["message"]))
        .collect()
    }

    /// The pods matching `selector` (default namespace) that are Running and Ready and not
    /// being deleted.
    pub fn ready_pods(&self, selector: &str) -> Vec<Value> {
        self.get_items(&["pods", "-l", selector])
            .into_iter()
            .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
            .filter(|p| {
                p["status"]["phase"] == "Running"
                    && p["status"]["conditions"].as_array().is_some_and(|cs| {
                        cs.iter()
                            .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    })
            })
            .collect()
    }

    /// The `items` of `kubectl get <args> -o json` (kubectl 1.33, a list).
    pub fn get_items(&self, args: &[&str]) -> Vec<Value> {
        self.get_json(args)["items"]
            .as_array()
            .cloned()
            .unwrap_or_default()
    }

    /// `kubectl create -f -` of `obj` with kubectl 1.33, panicking with kubectl's stderr
    /// when it fails.
    pub fn create_json(&self, obj: &Value) {
        self.stdin_ok(&["create", "-f", "-"], &obj.to_string());
    }

    /// `kubectl apply -f -` of `obj` with kubectl 1.33, panicking with kubectl's stderr
    /// when it fails.
    pub fn apply_json(&self, obj: &Value) {
        self.stdin_ok(&["apply", "-f", "-"], &obj.to_string());
    }

    fn stdin_ok(&self, args: &[&str], stdin: &str) {
        let o = self.kubectl_stdin(Some("1.33"), args, stdin);
        assert!(
            o.status.success(),
            "kubectl {args:?} failed: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
}

fn get_json_args<'a>(args: &[&'a str]) -> Vec<&'a str> {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    a
}

/// Stops `child` with SIGTERM, waits at most `timeout`, then SIGKILLs it.
pub fn terminate(mut child: Child, timeout: Duration) {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// `rkube killall --data-dir AGENT_DIR`: a stopped node's pods, mounts and bridge removed
/// (failures reported on stderr; this runs from `Drop`).
pub fn killall(agent_dir: &Path) {
    match Command::new(rkube_binary())
        .args(["killall", "--data-dir"])
        .arg(agent_dir)
        .output()
    {
        Ok(o) if o.status.success() => {}
        Ok(o) => eprintln!(
            "rkube killall {}: {}",
            agent_dir.display(),
            String::from_utf8_lossy(&o.stderr)
        ),
        Err(e) => eprintln!("rkube killall: {e}"),
    }
}

impl Drop for RkubeServer {
    fn drop(&mut self) {
        if self.agent {
            self.stop_gracefully(Duration::from_secs(20));
            killall(&self.dir.path().join("data").join("agent"));
        } else {
            self.kill();
        }
        // `RKUBE_TEST_KEEP_LOGS=DIR` keeps each server's log there (the data dir goes).
        if let Some(keep) = std::env::var_os("RKUBE_TEST_KEEP_LOGS") {
            let name = self
                .dir
                .path()
                .file_name()
                .unwrap_or_default()
                .to_os_string();
            let _ = std::fs::create_dir_all(&keep);
            let _ = std::fs::copy(
                self.dir.path().join("server.log"),
                std::path::Path::new(&keep).join(name).with_extension("log"),
            );
        }
    }
}

/// Runs `cmd` with `stdin` as its input; its output.
pub fn run_with_stdin(cmd: &mut Command, stdin: &str) -> Output {
    use std::io::Write;
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    if let Some(mut i) = child.stdin.take() {
        let _ = i.write_all(stdin.as_bytes());
    }
    child
        .wait_with_output()
        .unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}
