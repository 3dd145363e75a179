//! [`FakeRuntime`]: both CRI services in memory, for kubelet tests.
//!
//! Shaped after upstream's `FakeRuntimeService`/`FakeImageService` (a call log, injected
//! errors) but closer to containerd 1.6's CRI plugin in what it answers:
//!
//! - sandboxes get a 64-hex id, `READY` state, `created_at` in nanoseconds and an IPv4
//!   address handed out from a subnet (default `10.88.0.0/16`, gateway `.1` skipped);
//!   host-network sandboxes get no IP; stopping a sandbox releases its IP (the status then
//!   shows no IP, as containerd's for a closed network namespace), stops its running
//!   containers and marks it `NOTREADY`;
//! - containers go `CREATED` → `RUNNING` → `EXITED` (exit code, reason, started/finished
//!   times); labels and annotations are echoed; the log path is the sandbox's
//!   `log_directory` joined with the container's `log_path`;
//! - images: `CreateContainer` needs the image present (by name, normalized like
//!   containerd — `busybox` is `docker.io/library/busybox:latest` — or by its `sha256:` id);
//!   `PullImage` adds it and returns its id, as containerd does;
//! - removals of missing ids succeed (containerd is NotFound-tolerant there); stops and
//!   status calls of missing ids are `NotFound`; removing a running container or a ready
//!   sandbox stops it first (containerd 1.6 does).
//!
//! Scripted behaviours: [`FakeRuntime::exit_container`], [`FakeRuntime::set_exec_result`],
//! [`FakeRuntime::inject_error`], [`FakeRuntime::fail_pull`], a frozen clock
//! ([`FakeRuntime::set_now`]). [`FakeRuntime::calls`] lists the CRI calls made, by their
//! gRPC method names (`RunPodSandbox`, `CreateContainer`, …).

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::net::Ipv4Addr;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_trait::async_trait;

use crate::v1;
use crate::{Error, ImageService, RuntimeService};

const READY: i32 = v1::PodSandboxState::SandboxReady as i32;
const NOT_READY: i32 = v1::PodSandboxState::SandboxNotready as i32;
const CREATED: i32 = v1::ContainerState::ContainerCreated as i32;
const RUNNING: i32 = v1::ContainerState::ContainerRunning as i32;
const EXITED: i32 = v1::ContainerState::ContainerExited as i32;

/// Both CRI services in memory. Cheap to share: wrap it in an `Arc` and hand it out as
/// `Arc<dyn RuntimeService>` / `Arc<dyn ImageService>`; keep the `Arc<FakeRuntime>` to
/// script and inspect it.
#[derive(Debug)]
pub struct FakeRuntime {
    state: Mutex<State>,
}

/// A sandbox as the fake keeps it.
#[derive(Debug, Clone)]
pub struct FakeSandbox {
    /// `PodSandboxStatus` as `PodSandboxStatus` returns it (the IP is cleared once stopped).
    pub status: v1::PodSandboxStatus,
    /// The config `RunPodSandbox` got.
    pub config: v1::PodSandboxConfig,
}

/// A container as the fake keeps it.
#[derive(Debug, Clone)]
pub struct FakeContainer {
    /// The owning sandbox.
    pub sandbox_id: String,
    /// `ContainerStatus` as `ContainerStatus` returns it.
    pub status: v1::ContainerStatus,
    /// The config `CreateContainer` got.
    pub config: v1::ContainerConfig,
}

#[derive(Debug, Clone)]
struct ExecRule {
    /// A container id, or a command joined with single spaces.
    key: String,
    result: Result<v1::ExecSyncResponse, Error>,
}

#[derive(Debug, Clone)]
struct FakeImage {
    id: String,
    tags: Vec<String>,
    digests: Vec<String>,
    size: u64,
}

#[derive(Debug)]
struct State {
    calls: Vec<String>,
    errors: HashMap<String, VecDeque<Error>>,
    sandboxes: Vec<FakeSandbox>,
    containers: Vec<FakeContainer>,
    images: Vec<FakeImage>,
    pull_failures: HashMap<String, Error>,
    exec_rules: Vec<ExecRule>,
    exec_calls: Vec<(String, Vec<String>)>,
    subnet: (u32, u32),
    ips_in_use: BTreeSet<u32>,
    next_id: u64,
    now: Option<i64>,
    runtime_ready: bool,
    network_ready: bool,
    pod_cidr: String,
    stop_exit_code: i32,
}

impl Default for FakeRuntime {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeRuntime {
    /// An empty runtime: no sandboxes, containers or images; pod IPs from `10.88.0.0/16`.
    pub fn new() -> FakeRuntime {
        FakeRuntime {
            state: Mutex::new(State {
                calls: Vec::new(),
                errors: HashMap::new(),
                sandboxes: Vec::new(),
                containers: Vec::new(),
                images: Vec::new(),
                pull_failures: HashMap::new(),
                exec_rules: Vec::new(),
                exec_calls: Vec::new(),
                subnet: (u32::from(Ipv4Addr::new(10, 88, 0, 0)), 16),
                ips_in_use: BTreeSet::new(),
                next_id: 1,
                now: None,
                runtime_ready: true,
                network_ready: true,
                pod_cidr: String::new(),
                stop_exit_code: 137,
            }),
        }
    }

    /// The same runtime with these images already present.
    pub fn with_images<I, S>(self, images: I) -> FakeRuntime
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        for image in images {
            self.add_image(image.as_ref());
        }
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        // A test that panicked while holding the lock has failed already; keep serving.
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    // ---- scripting -------------------------------------------------------------------

    /// Hands pod IPs out of `cidr` (`a.b.c.d/n`, IPv4) from now on.
    ///
    /// # Errors
    /// When `cidr` is not an IPv4 CIDR with a prefix length of 8..=30.
    pub fn set_subnet(&self, cidr: &str) -> Result<(), Error> {
        let parsed = parse_cidr(cidr).ok_or_else(|| {
            Error::Status(tonic::Status::invalid_argument(format!(
                "invalid IPv4 CIDR {cidr:?}"
            )))
        })?;
        self.lock().subnet = parsed;
        Ok(())
    }

    /// Freezes the clock at `nanos` since the epoch (all timestamps the fake sets).
    pub fn set_now(&self, nanos: i64) {
        self.lock().now = Some(nanos);
    }

    /// Makes the next call named `call` (a gRPC method name: `RunPodSandbox`, `PullImage`,
    /// …) fail with `error`. Several injections for one name fail consecutive calls.
    pub fn inject_error(&self, call: &str, error: Error) {
        self.lock()
            .errors
            .entry(call.to_string())
            .or_default()
            .push_back(error);
    }

    /// Makes every pull of `image` fail with `error` until [`FakeRuntime::clear_pull_failure`].
    pub fn fail_pull(&self, image: &str, error: Error) {
        self.lock()
            .pull_failures
            .insert(normalize_image(image), error);
    }

    /// Lets pulls of `image` succeed again.
    pub fn clear_pull_failure(&self, image: &str) {
        self.lock().pull_failures.remove(&normalize_image(image));
    }

    /// Makes `image` present, as if imported; returns its `sha256:` id.
    pub fn add_image(&self, image: &str) -> String {
        add_image(&mut self.lock(), image)
    }

    /// The repo tags of every present image.
    pub fn images(&self) -> Vec<String> {
        self.lock()
            .images
            .iter()
            .flat_map(|i| i.tags.iter().cloned())
            .collect()
    }

    /// Simulates the container's process exiting with `exit_code`. An empty `reason`
    /// becomes containerd's: `Completed` for 0, else `Error`.
    ///
    /// # Errors
    /// `NotFound` for an unknown id.
    pub fn exit_container(&self, id: &str, exit_code: i32, reason: &str) -> Result<(), Error> {
        let mut st = self.lock();
        let now = st.now();
        let c = find_container(&mut st, id)?;
        finish(c, now, exit_code, reason);
        Ok(())
    }

    /// Scripts `ExecSync`: a call whose container id equals `key`, or whose command joined
    /// with single spaces equals `key`, answers with this result (the last matching rule
    /// wins; without one, exit code 0 and no output).
    pub fn set_exec_result(&self, key: &str, exit_code: i32, stdout: &str, stderr: &str) {
        self.lock().exec_rules.push(ExecRule {
            key: key.to_string(),
            result: Ok(v1::ExecSyncResponse {
                stdout: stdout.as_bytes().to_vec(),
                stderr: stderr.as_bytes().to_vec(),
                exit_code,
            }),
        });
    }

    /// Scripts `ExecSync` to fail (e.g. a `DeadlineExceeded` status for a probe timeout),
    /// matched like [`FakeRuntime::set_exec_result`].
    pub fn set_exec_error(&self, key: &str, error: Error) {
        self.lock().exec_rules.push(ExecRule {
            key: key.to_string(),
            result: Err(error),
        });
    }

    /// The exit code a container stopped by `StopContainer`/`StopPodSandbox` gets
    /// (default 137, a SIGKILL; reason `Error`, or `Completed` for 0).
    pub fn set_stop_exit_code(&self, code: i32) {
        self.lock().stop_exit_code = code;
    }

    /// The `RuntimeReady` condition `Status` reports.
    pub fn set_runtime_ready(&self, ready: bool) {
        self.lock().runtime_ready = ready;
    }

    /// The `NetworkReady` condition `Status` reports.
    pub fn set_network_ready(&self, ready: bool) {
        self.lock().network_ready = ready;
    }

    // ---- inspection ------------------------------------------------------------------

    /// The CRI calls made so far, by gRPC method name, in order.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    /// Forgets the call log.
    pub fn clear_calls(&self) {
        self.lock().calls.clear();
    }

    /// `(container id, command)` of every `ExecSync` so far.
    pub fn exec_calls(&self) -> Vec<(String, Vec<String>)> {
        self.lock().exec_calls.clone()
    }

    /// Every sandbox, in creation order.
    pub fn sandboxes(&self) -> Vec<FakeSandbox> {
        self.lock().sandboxes.clone()
    }

    /// One sandbox.
    pub fn sandbox(&self, id: &str) -> Option<FakeSandbox> {
        self.lock()
            .sandboxes
            .iter()
            .find(|s| s.status.id == id)
            .cloned()
    }

    /// Every container, in creation order.
    pub fn containers(&self) -> Vec<FakeContainer> {
        self.lock().containers.clone()
    }

    /// One container.
    pub fn container(&self, id: &str) -> Option<FakeContainer> {
        self.lock()
            .containers
            .iter()
            .find(|c| c.status.id == id)
            .cloned()
    }

    /// The pod CIDR the last `UpdateRuntimeConfig` set.
    pub fn pod_cidr(&self) -> String {
        self.lock().pod_cidr.clone()
    }

    fn begin(&self, call: &str) -> Result<MutexGuard<'_, State>, Error> {
        let mut st = self.lock();
        st.calls.push(call.to_string());
        if let Some(queue) = st.errors.get_mut(call)
            && let Some(e) = queue.pop_front()
        {
            return Err(e);
        }
        Ok(st)
    }
}

impl State {
    fn now(&self) -> i64 {
        self.now.unwrap_or_else(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| i64::try_from(d.as_nanos()).unwrap_or(i64::MAX))
                .unwrap_or(0)
        })
    }

    fn new_id(&mut self) -> String {
        let n = self.next_id;
        self.next_id += 1;
        let a = mix(n);
        let b = mix(a);
        let c = mix(b);
        let d = mix(c);
        format!("{a:016x}{b:016x}{c:016x}{d:016x}")
    }

    fn allocate_ip(&mut self) -> Result<String, Error> {
        let (base, len) = self.subnet;
        let size = 1u32 << (32 - len);
        // .0 is the network, .1 the bridge's gateway, the last the broadcast.
        for offset in 2..size.saturating_sub(1) {
            let ip = base + offset;
            if self.ips_in_use.insert(ip) {
                return Ok(Ipv4Addr::from(ip).to_string());
            }
        }
        Err(Error::Status(tonic::Status::unknown(
            "failed to setup network for sandbox: no IP addresses available in range set",
        )))
    }

    fn image(&self, name: &str) -> Option<&FakeImage> {
        let normalized = normalize_image(name);
        self.images.iter().find(|i| {
            i.id == name || i.tags.contains(&normalized) || i.digests.contains(&normalized)
        })
    }
}

/// splitmix64: deterministic ids that look like containerd's random ones.
fn mix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn hash_str(s: &str) -> u64 {
    // FNV-1a, then mixed.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    mix(h)
}

fn digest_of(s: &str) -> String {
    let a = hash_str(s);
    let b = mix(a);
    let c = mix(b);
    let d = mix(c);
    format!("sha256:{a:016x}{b:016x}{c:016x}{d:016x}")
}

fn parse_cidr(cidr: &str) -> Option<(u32, u32)> {
    let (ip, len) = cidr.split_once('/')?;
    let ip: Ipv4Addr = ip.parse().ok()?;
    let len: u32 = len.parse().ok()?;
    if !(8..=30).contains(&len) {
        return None;
    }
    let mask = u32::MAX << (32 - len);
    Some((u32::from(ip) & mask, len))
}

/// Normalizes an image name as containerd does (docker's reference rules): a missing
/// registry is `docker.io`, a single-component `docker.io` path gets `library/`, a missing
/// tag (and digest) is `:latest`. A `sha256:` id is returned unchanged.
fn normalize_image(name: &str) -> String {
    if name.starts_with("sha256:") {
        return name.to_string();
    }
    let (path_and_tag, digest) = match name.split_once('@') {
        Some((p, d)) => (p, Some(d)),
        None => (name, None),
    };
    // A tag is after the last ':' that follows the last '/'.
    let last_slash = path_and_tag.rfind('/').map_or(0, |i| i + 1);
    let (path, tag) = match path_and_tag[last_slash..].rfind(':') {
        Some(i) => (
            &path_and_tag[..last_slash + i],
            Some(&path_and_tag[last_slash + i + 1..]),
        ),
        None => (path_and_tag, None),
    };
    let mut full = match path.split_once('/') {
        Some((first, _)) if first.contains('.') || first.contains(':') || first == "localhost" => {
            path.to_string()
        }
        Some(_) => format!("docker.io/{path}"),
        None => format!("docker.io/library/{path}"),
    };
    match (tag, digest) {
        (Some(t), _) => {
            full.push(':');
            full.push_str(t);
        }
        (None, None) => full.push_str(":latest"),
        (None, Some(_)) => {}
    }
    if let Some(d) = digest {
        full.push('@');
        full.push_str(d);
    }
    full
}

/// The repository part of a normalized reference (no tag, no digest).
fn repository(normalized: &str) -> &str {
    let no_digest = normalized.split('@').next().unwrap_or(normalized);
    let last_slash = no_digest.rfind('/').map_or(0, |i| i + 1);
    match no_digest[last_slash..].rfind(':') {
        Some(i) => &no_digest[..last_slash + i],
        None => no_digest,
    }
}

fn add_image(st: &mut State, image: &str) -> String {
    if let Some(existing) = st.image(image) {
        return existing.id.clone();
    }
    let normalized = normalize_image(image);
    let id = digest_of(&normalized);
    let manifest = digest_of(&format!("manifest:{normalized}"));
    let repo = repository(&normalized).to_string();
    let tags = if normalized.contains('@') {
        Vec::new()
    } else {
        vec![normalized.clone()]
    };
    let size = 1_000_000 + (hash_str(&normalized) % 10_000_000);
    if let Some(same) = st.images.iter_mut().find(|i| i.id == id) {
        same.tags.extend(tags);
        return id;
    }
    st.images.push(FakeImage {
        id: id.clone(),
        tags,
        digests: vec![format!("{repo}@{manifest}")],
        size,
    });
    id
}

fn not_found(what: &str, id: &str) -> Error {
    Error::Status(tonic::Status::not_found(format!(
        "an error occurred when try to find {what} {id:?}: not found"
    )))
}

fn find_container<'a>(st: &'a mut State, id: &str) -> Result<&'a mut FakeContainer, Error> {
    st.containers
        .iter_mut()
        .find(|c| c.status.id == id)
        .ok_or_else(|| not_found("container", id))
}

fn finish(c: &mut FakeContainer, now: i64, exit_code: i32, reason: &str) {
    let s = &mut c.status;
    if s.state == EXITED {
        return;
    }
    if s.state == CREATED {
        // Never started: containerd reports the exit without a start time.
        s.started_at = 0;
    }
    s.state = EXITED;
    s.finished_at = now;
    s.exit_code = exit_code;
    s.reason = if reason.is_empty() {
        if exit_code == 0 { "Completed" } else { "Error" }.to_string()
    } else {
        reason.to_string()
    };
}

fn labels_match(selector: &HashMap<String, String>, labels: &HashMap<String, String>) -> bool {
    selector.iter().all(|(k, v)| labels.get(k) == Some(v))
}

fn to_pod_sandbox(s: &v1::PodSandboxStatus) -> v1::PodSandbox {
    v1::PodSandbox {
        id: s.id.clone(),
        metadata: s.metadata.clone(),
        state: s.state,
        created_at: s.created_at,
        labels: s.labels.clone(),
        annotations: s.annotations.clone(),
        runtime_handler: s.runtime_handler.clone(),
    }
}

fn to_container(c: &FakeContainer) -> v1::Container {
    let s = &c.status;
    v1::Container {
        id: s.id.clone(),
        pod_sandbox_id: c.sandbox_id.clone(),
        metadata: s.metadata.clone(),
        image: s.image.clone(),
        image_ref: s.image_ref.clone(),
        state: s.state,
        created_at: s.created_at,
        labels: s.labels.clone(),
        annotations: s.annotations.clone(),
        image_id: s.image_id.clone(),
    }
}

fn host_network(config: &v1::PodSandboxConfig) -> bool {
    config
        .linux
        .as_ref()
        .and_then(|l| l.security_context.as_ref())
        .and_then(|s| s.namespace_options.as_ref())
        .is_some_and(|n| n.network == v1::NamespaceMode::Node as i32)
}

fn stop_sandbox(st: &mut State, id: &str) -> Result<(), Error> {
    let now = st.now();
    let code = st.stop_exit_code;
    let idx = st
        .sandboxes
        .iter()
        .position(|s| s.status.id == id)
        .ok_or_else(|| not_found("sandbox", id))?;
    for c in st.containers.iter_mut().filter(|c| c.sandbox_id == id) {
        if c.status.state == RUNNING {
            finish(c, now, code, "");
        }
    }
    let sandbox = &mut st.sandboxes[idx];
    sandbox.status.state = NOT_READY;
    let ip = sandbox
        .status
        .network
        .take()
        .and_then(|n| n.ip.parse::<Ipv4Addr>().ok());
    sandbox.status.network = Some(v1::PodSandboxNetworkStatus::default());
    if let Some(ip) = ip {
        st.ips_in_use.remove(&u32::from(ip));
    }
    Ok(())
}

#[async_trait]
impl RuntimeService for FakeRuntime {
    async fn version(&self) -> Result<v1::VersionResponse, Error> {
        let _st = self.begin("Version")?;
        Ok(v1::VersionResponse {
            version: "0.1.0".into(),
            runtime_name: "fake".into(),
            runtime_version: "0.1.0".into(),
            runtime_api_version: "v1".into(),
        })
    }

    async fn status(&self, _verbose: bool) -> Result<v1::StatusResponse, Error> {
        let st = self.begin("Status")?;
        let condition = |t: &str, ok: bool| v1::RuntimeCondition {
            r#type: t.to_string(),
            status: ok,
            reason: if ok {
                String::new()
            } else {
                format!("{t}NotReady")
            },
            message: if ok {
                String::new()
            } else {
                format!("{t} is not ready (fake)")
            },
        };
        Ok(v1::StatusResponse {
            status: Some(v1::RuntimeStatus {
                conditions: vec![
                    condition("RuntimeReady", st.runtime_ready),
                    condition("NetworkReady", st.network_ready),
                ],
            }),
            ..Default::default()
        })
    }

    async fn update_pod_cidr(&self, pod_cidr: &str) -> Result<(), Error> {
        let mut st = self.begin("UpdateRuntimeConfig")?;
        st.pod_cidr = pod_cidr.to_string();
        Ok(())
    }

    async fn run_pod_sandbox(
        &self,
        config: &v1::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, Error> {
        let mut st = self.begin("RunPodSandbox")?;
        let metadata = config.metadata.clone().ok_or_else(|| {
            Error::Status(tonic::Status::invalid_argument(
                "sandbox config must include metadata",
            ))
        })?;
        if st
            .sandboxes
            .iter()
            .any(|s| s.status.metadata.as_ref() == Some(&metadata))
        {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "failed to reserve sandbox name \"{}_{}_{}_{}\": name is reserved",
                metadata.name, metadata.namespace, metadata.uid, metadata.attempt
            ))));
        }
        let ip = if host_network(config) {
            String::new()
        } else {
            st.allocate_ip()?
        };
        let id = st.new_id();
        let now = st.now();
        st.sandboxes.push(FakeSandbox {
            status: v1::PodSandboxStatus {
                id: id.clone(),
                metadata: Some(metadata),
                state: READY,
                created_at: now,
                network: Some(v1::PodSandboxNetworkStatus {
                    ip,
                    additional_ips: Vec::new(),
                }),
                linux: Some(v1::LinuxPodSandboxStatus {
                    namespaces: Some(v1::Namespace {
                        options: config
                            .linux
                            .as_ref()
                            .and_then(|l| l.security_context.as_ref())
                            .and_then(|s| s.namespace_options.clone()),
                    }),
                }),
                labels: config.labels.clone(),
                annotations: config.annotations.clone(),
                runtime_handler: runtime_handler.to_string(),
            },
            config: config.clone(),
        });
        Ok(id)
    }

    async fn stop_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        let mut st = self.begin("StopPodSandbox")?;
        stop_sandbox(&mut st, sandbox_id)
    }

    async fn remove_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        let mut st = self.begin("RemovePodSandbox")?;
        if !st.sandboxes.iter().any(|s| s.status.id == sandbox_id) {
            return Ok(());
        }
        stop_sandbox(&mut st, sandbox_id)?;
        st.containers.retain(|c| c.sandbox_id != sandbox_id);
        st.sandboxes.retain(|s| s.status.id != sandbox_id);
        Ok(())
    }

    async fn pod_sandbox_status(
        &self,
        sandbox_id: &str,
        _verbose: bool,
    ) -> Result<v1::PodSandboxStatusResponse, Error> {
        let st = self.begin("PodSandboxStatus")?;
        let s = st
            .sandboxes
            .iter()
            .find(|s| s.status.id == sandbox_id)
            .ok_or_else(|| not_found("sandbox", sandbox_id))?;
        Ok(v1::PodSandboxStatusResponse {
            status: Some(s.status.clone()),
            timestamp: st.now(),
            ..Default::default()
        })
    }

    async fn list_pod_sandbox(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, Error> {
        let st = self.begin("ListPodSandbox")?;
        let f = filter.unwrap_or_default();
        Ok(st
            .sandboxes
            .iter()
            .map(|s| &s.status)
            .filter(|s| f.id.is_empty() || s.id.starts_with(&f.id))
            .filter(|s| f.state.as_ref().is_none_or(|v| v.state == s.state))
            .filter(|s| labels_match(&f.label_selector, &s.labels))
            .map(to_pod_sandbox)
            .collect())
    }

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &v1::ContainerConfig,
        sandbox_config: &v1::PodSandboxConfig,
    ) -> Result<String, Error> {
        let mut st = self.begin("CreateContainer")?;
        let sandbox = st
            .sandboxes
            .iter()
            .find(|s| s.status.id == sandbox_id)
            .ok_or_else(|| not_found("sandbox", sandbox_id))?;
        let log_dir = sandbox_config.log_directory.clone();
        let metadata = config.metadata.clone().ok_or_else(|| {
            Error::Status(tonic::Status::invalid_argument(
                "container config must include metadata",
            ))
        })?;
        let sandbox_name = sandbox
            .status
            .metadata
            .as_ref()
            .map(|m| format!("{}_{}_{}", m.name, m.namespace, m.uid))
            .unwrap_or_default();
        if st
            .containers
            .iter()
            .any(|c| c.sandbox_id == sandbox_id && c.status.metadata.as_ref() == Some(&metadata))
        {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "failed to reserve container name \"{}_{}_{}\": name is reserved",
                metadata.name, sandbox_name, metadata.attempt
            ))));
        }
        let spec = config.image.clone().unwrap_or_default();
        let image = st.image(&spec.image).cloned().ok_or_else(|| {
            Error::Status(tonic::Status::not_found(format!(
                "failed to create containerd container: failed to resolve image {:?}: not found",
                spec.image
            )))
        })?;
        let id = st.new_id();
        let now = st.now();
        let log_path = if config.log_path.is_empty() {
            String::new()
        } else {
            std::path::Path::new(&log_dir)
                .join(&config.log_path)
                .to_string_lossy()
                .into_owned()
        };
        st.containers.push(FakeContainer {
            sandbox_id: sandbox_id.to_string(),
            status: v1::ContainerStatus {
                id: id.clone(),
                metadata: Some(metadata),
                state: CREATED,
                created_at: now,
                image: Some(v1::ImageSpec {
                    image: image.tags.first().cloned().unwrap_or(spec.image.clone()),
                    ..spec
                }),
                image_ref: image.digests.first().cloned().unwrap_or(image.id.clone()),
                image_id: image.id.clone(),
                labels: config.labels.clone(),
                annotations: config.annotations.clone(),
                mounts: config.mounts.clone(),
                log_path,
                ..Default::default()
            },
            config: config.clone(),
        });
        Ok(id)
    }

    async fn start_container(&self, container_id: &str) -> Result<(), Error> {
        let mut st = self.begin("StartContainer")?;
        let now = st.now();
        let (sandbox_id, state) = {
            let c = find_container(&mut st, container_id)?;
            (c.sandbox_id.clone(), c.status.state)
        };
        if state != CREATED {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "container {container_id:?} is not in created state"
            ))));
        }
        let ready = st
            .sandboxes
            .iter()
            .any(|s| s.status.id == sandbox_id && s.status.state == READY);
        if !ready {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "sandbox container {sandbox_id:?} is not running"
            ))));
        }
        let c = find_container(&mut st, container_id)?;
        c.status.state = RUNNING;
        c.status.started_at = now;
        Ok(())
    }

    async fn stop_container(&self, container_id: &str, _timeout: Duration) -> Result<(), Error> {
        let mut st = self.begin("StopContainer")?;
        let now = st.now();
        let code = st.stop_exit_code;
        let c = find_container(&mut st, container_id)?;
        if c.status.state == RUNNING {
            finish(c, now, code, "");
        }
        Ok(())
    }

    async fn remove_container(&self, container_id: &str) -> Result<(), Error> {
        let mut st = self.begin("RemoveContainer")?;
        st.containers.retain(|c| c.status.id != container_id);
        Ok(())
    }

    async fn list_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<v1::Container>, Error> {
        let st = self.begin("ListContainers")?;
        let f = filter.unwrap_or_default();
        Ok(st
            .containers
            .iter()
            .filter(|c| f.id.is_empty() || c.status.id.starts_with(&f.id))
            .filter(|c| f.pod_sandbox_id.is_empty() || c.sandbox_id.starts_with(&f.pod_sandbox_id))
            .filter(|c| f.state.as_ref().is_none_or(|v| v.state == c.status.state))
            .filter(|c| labels_match(&f.label_selector, &c.status.labels))
            .map(to_container)
            .collect())
    }

    async fn container_status(
        &self,
        container_id: &str,
        _verbose: bool,
    ) -> Result<v1::ContainerStatusResponse, Error> {
        let mut st = self.begin("ContainerStatus")?;
        let c = find_container(&mut st, container_id)?;
        Ok(v1::ContainerStatusResponse {
            status: Some(c.status.clone()),
            info: HashMap::new(),
        })
    }

    async fn reopen_container_log(&self, container_id: &str) -> Result<(), Error> {
        let mut st = self.begin("ReopenContainerLog")?;
        let c = find_container(&mut st, container_id)?;
        if c.status.state != RUNNING {
            return Err(Error::Status(tonic::Status::unknown(
                "container is not running",
            )));
        }
        Ok(())
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: Vec<String>,
        _timeout: Duration,
    ) -> Result<v1::ExecSyncResponse, Error> {
        let mut st = self.begin("ExecSync")?;
        st.exec_calls.push((container_id.to_string(), cmd.clone()));
        let state = find_container(&mut st, container_id)?.status.state;
        if state != RUNNING {
            let name = v1::ContainerState::try_from(state)
                .map(|s| s.as_str_name())
                .unwrap_or("CONTAINER_UNKNOWN");
            return Err(Error::Status(tonic::Status::unknown(format!(
                "container is in {name} state"
            ))));
        }
        let joined = cmd.join(" ");
        match st
            .exec_rules
            .iter()
            .rev()
            .find(|r| r.key == container_id || r.key == joined)
        {
            Some(rule) => rule.result.clone(),
            None => Ok(v1::ExecSyncResponse::default()),
        }
    }

    async fn exec(&self, request: v1::ExecRequest) -> Result<v1::ExecResponse, Error> {
        let mut st = self.begin("Exec")?;
        find_container(&mut st, &request.container_id)?;
        Ok(v1::ExecResponse {
            url: format!("http://127.0.0.1:0/exec/{}", request.container_id),
        })
    }

    async fn attach(&self, request: v1::AttachRequest) -> Result<v1::AttachResponse, Error> {
        let mut st = self.begin("Attach")?;
        find_container(&mut st, &request.container_id)?;
        Ok(v1::AttachResponse {
            url: format!("http://127.0.0.1:0/attach/{}", request.container_id),
        })
    }

    async fn port_forward(
        &self,
        request: v1::PortForwardRequest,
    ) -> Result<v1::PortForwardResponse, Error> {
        let st = self.begin("PortForward")?;
        if !st
            .sandboxes
            .iter()
            .any(|s| s.status.id == request.pod_sandbox_id)
        {
            return Err(not_found("sandbox", &request.pod_sandbox_id));
        }
        Ok(v1::PortForwardResponse {
            url: format!("http://127.0.0.1:0/portforward/{}", request.pod_sandbox_id),
        })
    }

    async fn list_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<v1::ContainerStats>, Error> {
        let st = self.begin("ListContainerStats")?;
        let f = filter.unwrap_or_default();
        let now = st.now();
        Ok(st
            .containers
            .iter()
            .filter(|c| c.status.state == RUNNING)
            .filter(|c| f.id.is_empty() || c.status.id.starts_with(&f.id))
            .filter(|c| f.pod_sandbox_id.is_empty() || c.sandbox_id.starts_with(&f.pod_sandbox_id))
            .filter(|c| labels_match(&f.label_selector, &c.status.labels))
            .map(|c| v1::ContainerStats {
                attributes: Some(v1::ContainerAttributes {
                    id: c.status.id.clone(),
                    metadata: c.status.metadata.clone(),
                    labels: c.status.labels.clone(),
                    annotations: c.status.annotations.clone(),
                }),
                cpu: Some(v1::CpuUsage {
                    timestamp: now,
                    usage_core_nano_seconds: Some(v1::UInt64Value { value: 0 }),
                    ..Default::default()
                }),
                memory: Some(v1::MemoryUsage {
                    timestamp: now,
                    working_set_bytes: Some(v1::UInt64Value { value: 0 }),
                    ..Default::default()
                }),
                ..Default::default()
            })
            .collect())
    }
}

fn to_image(i: &FakeImage) -> v1::Image {
    v1::Image {
        id: i.id.clone(),
        repo_tags: i.tags.clone(),
        repo_digests: i.digests.clone(),
        size: i.size,
        spec: Some(v1::ImageSpec {
            image: i.id.clone(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

#[async_trait]
impl ImageService for FakeRuntime {
    async fn list_images(&self, filter: Option<v1::ImageFilter>) -> Result<Vec<v1::Image>, Error> {
        let st = self.begin("ListImages")?;
        let wanted = filter
            .and_then(|f| f.image)
            .map(|s| s.image)
            .filter(|s| !s.is_empty());
        Ok(match wanted {
            Some(name) => st.image(&name).map(to_image).into_iter().collect(),
            None => st.images.iter().map(to_image).collect(),
        })
    }

    async fn image_status(&self, image: &v1::ImageSpec) -> Result<Option<v1::Image>, Error> {
        let st = self.begin("ImageStatus")?;
        Ok(st.image(&image.image).map(to_image))
    }

    async fn pull_image(
        &self,
        image: &v1::ImageSpec,
        _auth: Option<v1::AuthConfig>,
        _sandbox_config: Option<&v1::PodSandboxConfig>,
    ) -> Result<String, Error> {
        let mut st = self.begin("PullImage")?;
        if let Some(e) = st.pull_failures.get(&normalize_image(&image.image)) {
            return Err(e.clone());
        }
        Ok(add_image(&mut st, &image.image))
    }

    async fn remove_image(&self, image: &v1::ImageSpec) -> Result<(), Error> {
        let mut st = self.begin("RemoveImage")?;
        if let Some(id) = st.image(&image.image).map(|i| i.id.clone()) {
            st.images.retain(|i| i.id != id);
        }
        Ok(())
    }

    async fn image_fs_info(&self) -> Result<v1::ImageFsInfoResponse, Error> {
        let st = self.begin("ImageFsInfo")?;
        let used: u64 = st.images.iter().map(|i| i.size).sum();
        Ok(v1::ImageFsInfoResponse {
            image_filesystems: vec![v1::FilesystemUsage {
                timestamp: st.now(),
                fs_id: Some(v1::FilesystemIdentifier {
                    mountpoint: "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs".into(),
                }),
                used_bytes: Some(v1::UInt64Value { value: used }),
                inodes_used: Some(v1::UInt64Value {
                    value: st.images.len() as u64 * 100,
                }),
            }],
            container_filesystems: Vec::new(),
        })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn sandbox_config(name: &str) -> v1::PodSandboxConfig {
        v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: name.into(),
                uid: format!("uid-{name}"),
                namespace: "default".into(),
                attempt: 0,
            }),
            log_directory: format!("/var/log/pods/default_{name}_uid"),
            labels: [("io.kubernetes.pod.name".to_string(), name.to_string())].into(),
            annotations: [("a".to_string(), "b".to_string())].into(),
            ..Default::default()
        }
    }

    fn container_config(name: &str, image: &str) -> v1::ContainerConfig {
        v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: name.into(),
                attempt: 0,
            }),
            image: Some(v1::ImageSpec {
                image: image.into(),
                ..Default::default()
            }),
            log_path: format!("{name}/0.log"),
            labels: [("io.kubernetes.container.name".to_string(), name.to_string())].into(),
            ..Default::default()
        }
    }

    #[test]
    fn normalizes_like_containerd() {
        assert_eq!(
            normalize_image("busybox"),
            "docker.io/library/busybox:latest"
        );
        assert_eq!(
            normalize_image("busybox:1.36"),
            "docker.io/library/busybox:1.36"
        );
        assert_eq!(normalize_image("me/app"), "docker.io/me/app:latest");
        assert_eq!(
            normalize_image("127.0.0.1:5000/app"),
            "127.0.0.1:5000/app:latest"
        );
        assert_eq!(normalize_image("localhost/app:v1"), "localhost/app:v1");
        assert_eq!(
            normalize_image("busybox@sha256:abc"),
            "docker.io/library/busybox@sha256:abc"
        );
        assert_eq!(normalize_image("sha256:abc"), "sha256:abc");
        assert_eq!(
            repository("docker.io/library/busybox:latest"),
            "docker.io/library/busybox"
        );
        assert_eq!(repository("127.0.0.1:5000/app:v1"), "127.0.0.1:5000/app");
    }

    #[tokio::test]
    async fn sandbox_and_container_lifecycle() {
        let rt = FakeRuntime::new();
        rt.set_subnet("10.42.7.0/24").unwrap();
        rt.set_now(1_000);
        let image = v1::ImageSpec {
            image: "busybox".into(),
            ..Default::default()
        };
        assert!(rt.image_status(&image).await.unwrap().is_none());
        let image_id = rt.pull_image(&image, None, None).await.unwrap();
        assert!(image_id.starts_with("sha256:"));
        let status = rt.image_status(&image).await.unwrap().unwrap();
        assert_eq!(status.repo_tags, vec!["docker.io/library/busybox:latest"]);

        let sc = sandbox_config("web");
        let sb = rt.run_pod_sandbox(&sc, "").await.unwrap();
        assert_eq!(sb.len(), 64);
        let st = rt
            .pod_sandbox_status(&sb, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(st.state, READY);
        assert_eq!(st.created_at, 1_000);
        assert_eq!(st.network.unwrap().ip, "10.42.7.2");
        assert_eq!(st.labels["io.kubernetes.pod.name"], "web");
        assert_eq!(st.annotations["a"], "b");
        // The same metadata again is refused, as containerd reserves names.
        assert!(rt.run_pod_sandbox(&sc, "").await.is_err());

        // Create by image id (what the kubelet passes after pulling).
        let cc = container_config("app", &image_id);
        let c = rt.create_container(&sb, &cc, &sc).await.unwrap();
        let cs = rt
            .container_status(&c, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(cs.state, CREATED);
        assert_eq!(cs.log_path, "/var/log/pods/default_web_uid/app/0.log");
        assert_eq!(cs.image.unwrap().image, "docker.io/library/busybox:latest");
        assert!(
            cs.image_ref
                .starts_with("docker.io/library/busybox@sha256:")
        );
        assert_eq!(cs.image_id, image_id);
        rt.set_now(2_000);
        rt.start_container(&c).await.unwrap();
        assert!(rt.start_container(&c).await.is_err());
        let cs = rt
            .container_status(&c, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!((cs.state, cs.started_at), (RUNNING, 2_000));

        // Missing image.
        let missing = container_config("other", "nginx");
        let err = rt.create_container(&sb, &missing, &sc).await.unwrap_err();
        assert!(err.is_not_found());

        // Exec scripting.
        rt.set_exec_result("cat /etc/resolv.conf", 0, "nameserver 10.43.0.10\n", "");
        let out = rt
            .exec_sync(
                &c,
                vec!["cat".into(), "/etc/resolv.conf".into()],
                Duration::ZERO,
            )
            .await
            .unwrap();
        assert_eq!(out.stdout, b"nameserver 10.43.0.10\n");
        rt.set_exec_result(&c, 3, "", "bad");
        let out = rt
            .exec_sync(&c, vec!["true".into()], Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(out.exit_code, 3);
        assert_eq!(rt.exec_calls().len(), 2);

        // Process exit.
        rt.set_now(3_000);
        rt.exit_container(&c, 1, "").unwrap();
        let cs = rt
            .container_status(&c, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(
            (cs.state, cs.exit_code, cs.reason.as_str(), cs.finished_at),
            (EXITED, 1, "Error", 3_000)
        );
        assert!(
            rt.exec_sync(&c, vec!["true".into()], Duration::ZERO)
                .await
                .is_err()
        );

        // A second attempt, running, then the sandbox stops: it stops too and the IP goes.
        let mut cc2 = cc.clone();
        cc2.metadata.as_mut().unwrap().attempt = 1;
        let c2 = rt.create_container(&sb, &cc2, &sc).await.unwrap();
        rt.start_container(&c2).await.unwrap();
        rt.stop_pod_sandbox(&sb).await.unwrap();
        rt.stop_pod_sandbox(&sb).await.unwrap();
        let cs2 = rt
            .container_status(&c2, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!((cs2.state, cs2.exit_code), (EXITED, 137));
        let st = rt
            .pod_sandbox_status(&sb, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(st.state, NOT_READY);
        assert_eq!(st.network.unwrap().ip, "");
        // The IP is free again.
        let sb2 = rt.run_pod_sandbox(&sandbox_config("db"), "").await.unwrap();
        let ip2 = rt
            .pod_sandbox_status(&sb2, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(ip2.network.unwrap().ip, "10.42.7.2");

        rt.remove_pod_sandbox(&sb).await.unwrap();
        rt.remove_pod_sandbox(&sb).await.unwrap();
        rt.remove_container("nope").await.unwrap();
        assert!(rt.list_containers(None).await.unwrap().is_empty());
        assert!(
            rt.container_status(&c, false)
                .await
                .unwrap_err()
                .is_not_found()
        );
        assert!(rt.stop_pod_sandbox(&sb).await.unwrap_err().is_not_found());
        assert!(rt.calls().contains(&"RunPodSandbox".to_string()));
    }

    #[tokio::test]
    async fn filters_errors_and_pull_failures() {
        let rt = FakeRuntime::new().with_images(["busybox", "127.0.0.1:5000/app:v1"]);
        let a = rt.run_pod_sandbox(&sandbox_config("a"), "").await.unwrap();
        let b = rt.run_pod_sandbox(&sandbox_config("b"), "").await.unwrap();
        let ca = rt
            .create_container(&a, &container_config("x", "busybox"), &sandbox_config("a"))
            .await
            .unwrap();
        let cb = rt
            .create_container(
                &b,
                &container_config("y", "127.0.0.1:5000/app:v1"),
                &sandbox_config("b"),
            )
            .await
            .unwrap();
        rt.start_container(&cb).await.unwrap();
        rt.stop_pod_sandbox(&a).await.unwrap();

        let ready = rt
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                state: Some(v1::PodSandboxStateValue { state: READY }),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(ready.iter().map(|s| &s.id).collect::<Vec<_>>(), vec![&b]);
        let by_label = rt
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: [("io.kubernetes.pod.name".to_string(), "a".to_string())].into(),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(by_label.len(), 1);
        assert_eq!(by_label[0].id, a);
        let in_a = rt
            .list_containers(Some(v1::ContainerFilter {
                pod_sandbox_id: a.clone(),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(in_a.len(), 1);
        assert_eq!(in_a[0].id, ca);
        // A created container stays created when its sandbox stops (containerd only stops
        // running ones).
        assert_eq!(in_a[0].state, CREATED);
        let running = rt
            .list_containers(Some(v1::ContainerFilter {
                state: Some(v1::ContainerStateValue { state: RUNNING }),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(running.len(), 1);
        assert_eq!(running[0].id, cb);
        let by_id = rt
            .list_containers(Some(v1::ContainerFilter {
                id: cb[..12].to_string(),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(by_id.len(), 1);
        assert_eq!(rt.list_container_stats(None).await.unwrap().len(), 1);

        // Injected errors hit the next call only.
        rt.inject_error(
            "ListPodSandbox",
            Error::Status(tonic::Status::unavailable("down")),
        );
        assert!(rt.list_pod_sandbox(None).await.is_err());
        assert_eq!(rt.list_pod_sandbox(None).await.unwrap().len(), 2);

        // Pull failures last until cleared.
        let nginx = v1::ImageSpec {
            image: "nginx:1.25".into(),
            ..Default::default()
        };
        rt.fail_pull(
            "docker.io/library/nginx:1.25",
            Error::Status(tonic::Status::not_found("manifest unknown")),
        );
        assert!(rt.pull_image(&nginx, None, None).await.is_err());
        assert!(rt.pull_image(&nginx, None, None).await.is_err());
        rt.clear_pull_failure("nginx:1.25");
        rt.pull_image(&nginx, None, None).await.unwrap();
        assert_eq!(rt.list_images(None).await.unwrap().len(), 3);
        rt.remove_image(&nginx).await.unwrap();
        rt.remove_image(&nginx).await.unwrap();
        assert_eq!(rt.images().len(), 2);

        // Host-network sandboxes get no IP.
        let mut host = sandbox_config("h");
        host.linux = Some(v1::LinuxPodSandboxConfig {
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(v1::NamespaceOption {
                    network: v1::NamespaceMode::Node as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        });
        let h = rt.run_pod_sandbox(&host, "").await.unwrap();
        let hs = rt
            .pod_sandbox_status(&h, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(hs.network.unwrap().ip, "");

        rt.set_network_ready(false);
        let status = rt.status(false).await.unwrap().status.unwrap();
        assert!(!status.conditions[1].status);
    }
}
