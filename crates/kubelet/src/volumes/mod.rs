//! The volume manager: makes a pod's volumes ready under its pod directory before its
//! containers start, refreshes their content on every pod sync, and tears them down
//! (upstream's `pkg/kubelet/volumemanager` with the in-tree plugins of `pkg/volume`).
//!
//! Layout: `pod_dir(uid)/volumes/kubernetes.io~<plugin>/<volume>` (plugins `empty-dir`,
//! `configmap`, `secret`, `downward-api`, `projected`), next to `plugins/`, `containers/`
//! and `etc-hosts`. A hostPath volume is its host path.
//!
//! - emptyDir: a 0777 directory; `medium: Memory` a tmpfs (size: the smallest of
//!   `sizeLimit`, the pod's memory limit and node allocatable memory).
//! - hostPath: upstream's `type` checks ([`hostpath`]).
//! - configMap, secret, downwardAPI, projected: the content ([`payload`]) written by the
//!   [`atomic_writer`]; secret and projected volumes on a tmpfs, as upstream. ConfigMaps
//!   and Secrets are read through a TTL cache (1 min by default, upstream's cache-based
//!   change detection); service-account tokens come from [`token`]'s cache and are
//!   refreshed as upstream's token manager does.
//! - `fsGroup`: [`ownership`], after each write.
//!
//! Side effects sit behind [`ObjectSource`] (the API), [`Mounter`] (tmpfs) and [`Clock`];
//! the container-side view ([`container_mounts`]) is a pure function.

pub mod atomic_writer;
pub mod container;
pub mod hostpath;
pub mod mounter;
pub mod ownership;
pub mod payload;
pub mod source;
pub mod token;

use std::collections::{HashMap, HashSet};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::{BoundObjectReference, TokenRequest, TokenRequestSpec};
use k8s_openapi::api::core::v1::{
    ConfigMap, Pod, ProjectedVolumeSource, Secret, ServiceAccountTokenProjection, Volume,
};
use tracing::Instrument;

use crate::{Error, KubeletConfig, PodVolumes, VolumeManager};
use api::gofmt::go_quote;
use api::kinds::validate::quantity::Quantity;
use atomic_writer::{FileProjection, Payload};
use payload::Allocatable;
use token::{TokenCache, TokenKey};

pub use container::{
    ContainerMount, MountContext, Prepare, container_mounts, etc_hosts, etc_hosts_for_pod,
    etc_hosts_host_network, pod_hostname_and_domain, prepare_container_mounts,
    termination_log_path, write_etc_hosts,
};
pub use mounter::{FakeMounter, MountCall, Mounter, SystemMounter};
pub use source::{FakeSource, KubeSource, ObjectSource, SourceCall};

/// The directory names of the plugins under `pod_dir/volumes/`.
pub const EMPTY_DIR_PLUGIN: &str = "kubernetes.io~empty-dir";
pub const CONFIG_MAP_PLUGIN: &str = "kubernetes.io~configmap";
pub const SECRET_PLUGIN: &str = "kubernetes.io~secret";
pub const DOWNWARD_API_PLUGIN: &str = "kubernetes.io~downward-api";
pub const PROJECTED_PLUGIN: &str = "kubernetes.io~projected";

/// The default mode of configMap/secret/downwardAPI/projected files (the API's default).
pub const DEFAULT_MODE: i32 = 0o644;
/// The default lifetime of a projected token (the API's default).
pub const DEFAULT_TOKEN_EXPIRATION_SECONDS: i64 = 3600;
/// How long a fetched ConfigMap or Secret is used before it is read again.
pub const DEFAULT_CACHE_TTL: Duration = Duration::from_secs(60);

/// The time, for token refresh and the object cache.
pub trait Clock: Send + Sync {
    fn now(&self) -> jiff::Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> jiff::Timestamp {
        jiff::Timestamp::now()
    }
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct FakeClock(Mutex<jiff::Timestamp>);

impl FakeClock {
    pub fn new(now: jiff::Timestamp) -> Self {
        FakeClock(Mutex::new(now))
    }

    pub fn set(&self, now: jiff::Timestamp) {
        if let Ok(mut t) = self.0.lock() {
            *t = now;
        }
    }

    pub fn advance(&self, by: Duration) {
        if let Ok(mut t) = self.0.lock()
            && let Ok(d) = jiff::SignedDuration::try_from(by)
        {
            *t = t.saturating_add(d).unwrap_or(*t);
        }
    }
}

impl Clock for FakeClock {
    fn now(&self) -> jiff::Timestamp {
        self.0
            .lock()
            .map(|t| *t)
            .unwrap_or_else(|_| jiff::Timestamp::now())
    }
}

/// What one pod's volumes look like in this process.
#[derive(Debug, Default)]
struct PodState {
    dirs_made: bool,
    /// tmpfs mount points known to be mounted.
    tmpfs: HashSet<PathBuf>,
    /// emptyDir volumes already set up (and given their fsGroup).
    empty_dirs: HashSet<String>,
}

type Cache<T> = Mutex<HashMap<(String, String), (jiff::Timestamp, T)>>;

/// The kubelet's [`VolumeManager`].
pub struct Volumes {
    config: Arc<KubeletConfig>,
    source: Arc<dyn ObjectSource>,
    mounter: Arc<dyn Mounter>,
    clock: Arc<dyn Clock>,
    cache_ttl: Duration,
    allocatable: Allocatable,
    config_maps: Cache<ConfigMap>,
    secrets: Cache<Secret>,
    tokens: TokenCache,
    pods: Mutex<HashMap<String, Arc<tokio::sync::Mutex<PodState>>>>,
}

/// This machine's CPUs and memory (`/proc/meminfo`'s `MemTotal`), the default node
/// allocatable.
pub fn machine_allocatable() -> Allocatable {
    let mut a = Allocatable::new();
    if let Ok(n) = std::thread::available_parallelism() {
        a.insert("cpu".into(), Quantity::from_int(n.get() as i64));
    }
    if let Ok(text) = std::fs::read_to_string("/proc/meminfo")
        && let Some(bytes) = crate::node::host::meminfo_bytes(&text, "MemTotal")
    {
        a.insert(
            "memory".into(),
            Quantity::from_int(i64::try_from(bytes).unwrap_or(i64::MAX)),
        );
    }
    a
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Creates `dir` (and parents) and gives it exactly `mode`.
fn make_dir(dir: &Path, mode: u32) -> Result<(), Error> {
    let mut b = std::fs::DirBuilder::new();
    std::os::unix::fs::DirBuilderExt::mode(&mut b, mode);
    b.recursive(true).create(dir).map_err(io(dir))?;
    let m = std::fs::metadata(dir).map_err(io(dir))?;
    if m.permissions().mode() & 0o777 != mode {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode)).map_err(io(dir))?;
    }
    Ok(())
}

/// The pod's memory limit as its cgroup gets it: the sum of the app containers' limits
/// (or the largest init container's, when larger) plus overhead; none unless every app
/// container has one.
pub fn pod_memory_limit(pod: &Pod) -> Option<i64> {
    let spec = pod.spec.as_ref()?;
    let limit = |c: &k8s_openapi::api::core::v1::Container| {
        c.resources
            .as_ref()
            .and_then(|r| r.limits.as_ref())
            .and_then(|l| l.get("memory"))
            .and_then(|q| Quantity::parse(&q.0).ok())
            .map(|q| q.value())
    };
    let mut sum = 0i64;
    for c in &spec.containers {
        sum = sum.saturating_add(limit(c)?);
    }
    for c in spec.init_containers.iter().flatten() {
        if let Some(l) = limit(c) {
            sum = sum.max(l);
        }
    }
    if let Some(o) = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get("memory"))
        .and_then(|q| Quantity::parse(&q.0).ok())
    {
        sum = sum.saturating_add(o.value());
    }
    Some(sum)
}

/// Upstream's `calculateEmptyDirMemorySize`: node allocatable memory, lowered to the pod's
/// memory limit, lowered to the volume's `sizeLimit`; `None` leaves the tmpfs default.
pub fn memory_volume_size(
    allocatable_memory: Option<i64>,
    pod: &Pod,
    size_limit: Option<i64>,
) -> Option<i64> {
    let mut size = allocatable_memory;
    let lower = |size: Option<i64>, v: Option<i64>| match (size, v) {
        (_, Some(v)) if v > 0 && size.is_none_or(|s| v <= s) => Some(v),
        _ => size,
    };
    size = lower(size, pod_memory_limit(pod));
    lower(size, size_limit)
}

fn volume_kind(v: &Volume) -> String {
    serde_json::to_value(v)
        .ok()
        .and_then(|j| {
            j.as_object()
                .and_then(|o| o.keys().find(|k| *k != "name").cloned())
        })
        .unwrap_or_else(|| "unknown".into())
}

fn not_found(kind: &str, name: &str) -> String {
    format!("{kind} {} not found", go_quote(name))
}

impl Volumes {
    /// A volume manager for the pods under `config.root_dir`, reading objects from
    /// `source` and mounting tmpfs with `mounter`; node allocatable defaults to this
    /// machine's ([`machine_allocatable`]).
    pub fn new(
        config: Arc<KubeletConfig>,
        source: Arc<dyn ObjectSource>,
        mounter: Arc<dyn Mounter>,
    ) -> Self {
        Volumes {
            config,
            source,
            mounter,
            clock: Arc::new(SystemClock),
            cache_ttl: DEFAULT_CACHE_TTL,
            allocatable: machine_allocatable(),
            config_maps: Mutex::default(),
            secrets: Mutex::default(),
            tokens: TokenCache::default(),
            pods: Mutex::default(),
        }
    }

    /// Uses `clock` instead of the system clock.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// How long a fetched ConfigMap or Secret is used (zero: read on every setup).
    pub fn with_cache_ttl(mut self, ttl: Duration) -> Self {
        self.cache_ttl = ttl;
        self
    }

    /// The node's allocatable resources (`cpu`, `memory`, `ephemeral-storage`).
    pub fn with_node_allocatable(mut self, allocatable: Allocatable) -> Self {
        self.allocatable = allocatable;
        self
    }

    /// `pod_dir(uid)/volumes/<plugin>/<volume>`.
    pub fn volume_dir(&self, pod_uid: &str, plugin: &str, volume: &str) -> PathBuf {
        self.config
            .pod_dir(pod_uid)
            .join("volumes")
            .join(plugin)
            .join(volume)
    }

    /// The service-account tokens cached now (all pods).
    pub fn cached_tokens(&self) -> usize {
        self.tokens.len()
    }

    fn pod_state(&self, uid: &str) -> Arc<tokio::sync::Mutex<PodState>> {
        match self.pods.lock() {
            Ok(mut p) => p.entry(uid.to_string()).or_default().clone(),
            Err(_) => Arc::default(),
        }
    }

    fn fresh(&self, fetched: jiff::Timestamp, now: jiff::Timestamp) -> bool {
        jiff::SignedDuration::try_from(self.cache_ttl)
            .is_ok_and(|ttl| now.duration_since(fetched) < ttl)
    }

    async fn config_map(&self, ns: &str, name: &str) -> Result<Option<ConfigMap>, Error> {
        let now = self.clock.now();
        let key = (ns.to_string(), name.to_string());
        if let Ok(c) = self.config_maps.lock()
            && let Some((t, cm)) = c.get(&key)
            && self.fresh(*t, now)
        {
            return Ok(Some(cm.clone()));
        }
        let got = self.source.config_map(ns, name).await?;
        if let Ok(mut c) = self.config_maps.lock() {
            c.retain(|_, (t, _)| self.fresh(*t, now));
            match &got {
                Some(cm) => c.insert(key, (now, cm.clone())),
                None => c.remove(&key),
            };
        }
        Ok(got)
    }

    async fn secret(&self, ns: &str, name: &str) -> Result<Option<Secret>, Error> {
        let now = self.clock.now();
        let key = (ns.to_string(), name.to_string());
        if let Ok(c) = self.secrets.lock()
            && let Some((t, s)) = c.get(&key)
            && self.fresh(*t, now)
        {
            return Ok(Some(s.clone()));
        }
        let got = self.source.secret(ns, name).await?;
        if let Ok(mut c) = self.secrets.lock() {
            c.retain(|_, (t, _)| self.fresh(*t, now));
            match &got {
                Some(s) => c.insert(key, (now, s.clone())),
                None => c.remove(&key),
            };
        }
        Ok(got)
    }

    /// A projected service-account token: the cached one unless it needs a refresh
    /// (upstream `GetServiceAccountToken`).
    async fn service_account_token(
        &self,
        pod: &Pod,
        volume: &str,
        src: &ServiceAccountTokenProjection,
    ) -> Result<Vec<u8>, String> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let spec = pod.spec.as_ref();
        let sa = spec
            .and_then(|s| s.service_account_name.clone().or(s.service_account.clone()))
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "default".into());
        let exp = src
            .expiration_seconds
            .unwrap_or(DEFAULT_TOKEN_EXPIRATION_SECONDS);
        let audience = src.audience.clone().unwrap_or_default();
        let key = TokenKey {
            pod_uid: pod.metadata.uid.clone().unwrap_or_default(),
            volume: volume.into(),
            namespace: ns.clone(),
            service_account: sa.clone(),
            audience: audience.clone(),
            expiration_seconds: exp,
        };
        let now = self.clock.now();
        let cached = self.tokens.get(&key);
        let token_of = |tr: &TokenRequest| {
            tr.status
                .as_ref()
                .map(|s| s.token.clone().into_bytes())
                .ok_or_else(|| "token request returned no token".to_string())
        };
        if let Some(c) = &cached
            && !token::requires_refresh(now, c)
        {
            return token_of(c);
        }
        let request = TokenRequest {
            spec: TokenRequestSpec {
                audiences: if audience.is_empty() {
                    Vec::new()
                } else {
                    vec![audience]
                },
                expiration_seconds: Some(exp),
                bound_object_ref: Some(BoundObjectReference {
                    api_version: Some("v1".into()),
                    kind: Some("Pod".into()),
                    name: pod.metadata.name.clone(),
                    uid: pod.metadata.uid.clone(),
                }),
            },
            ..Default::default()
        };
        match self.source.request_token(&ns, &sa, &request).await {
            Ok(tr) if tr.status.is_some() => {
                let t = token_of(&tr);
                self.tokens.set(key, tr);
                t
            }
            result => {
                let e = match result {
                    Err(e) => e.to_string(),
                    Ok(_) => "token request returned no token".into(),
                };
                match cached {
                    None => Err(format!("failed to fetch token: {e}")),
                    Some(c) if token::expired(now, &c) => Err(format!(
                        "token {ns}/{sa} for volume {volume} expired and refresh failed: {e}"
                    )),
                    Some(c) => {
                        tracing::warn!(error = %e, volume, "couldn't update token; using the cached one");
                        token_of(&c)
                    }
                }
            }
        }
    }

    /// The content of a projected volume (upstream `collectData`); the errors of all
    /// sources are reported together.
    async fn projected_payload(
        &self,
        pod: &Pod,
        volume: &str,
        src: &ProjectedVolumeSource,
        fs_group: Option<i64>,
    ) -> Result<Payload, String> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let default_mode = src.default_mode.unwrap_or(DEFAULT_MODE);
        let mut out = Payload::new();
        let mut errs = Vec::new();
        for s in src.sources.iter().flatten() {
            if let Some(p) = &s.secret {
                let optional = p.optional.unwrap_or(false);
                let secret = match self.secret(&ns, &p.name).await {
                    Ok(Some(s)) => s,
                    Ok(None) if optional => Secret::default(),
                    Ok(None) => {
                        errs.push(not_found("secret", &p.name));
                        continue;
                    }
                    Err(e) => {
                        errs.push(e.to_string());
                        continue;
                    }
                };
                match payload::secret_payload(p.items.as_deref(), &secret, default_mode, optional) {
                    Ok(p) => out.extend(p),
                    Err(e) => errs.push(e),
                }
            } else if let Some(p) = &s.config_map {
                let optional = p.optional.unwrap_or(false);
                let cm = match self.config_map(&ns, &p.name).await {
                    Ok(Some(c)) => c,
                    Ok(None) if optional => ConfigMap::default(),
                    Ok(None) => {
                        errs.push(not_found("configmap", &p.name));
                        continue;
                    }
                    Err(e) => {
                        errs.push(e.to_string());
                        continue;
                    }
                };
                match payload::config_map_payload(p.items.as_deref(), &cm, default_mode, optional) {
                    Ok(p) => out.extend(p),
                    Err(e) => errs.push(e),
                }
            } else if let Some(p) = &s.downward_api {
                match payload::downward_api_payload(
                    p.items.as_deref().unwrap_or_default(),
                    pod,
                    &self.allocatable,
                    default_mode,
                ) {
                    Ok(p) => out.extend(p),
                    Err(e) => errs.push(e),
                }
            } else if let Some(t) = &s.service_account_token {
                // With an fsGroup the token is 0600, then group-readable by ownership.
                let mode = if fs_group.is_some() {
                    0o600
                } else {
                    default_mode
                };
                match self.service_account_token(pod, volume, t).await {
                    Ok(data) => {
                        out.insert(
                            atomic_writer::clean_path(&t.path),
                            FileProjection {
                                data,
                                mode: mode as u32 & 0o777,
                            },
                        );
                    }
                    Err(e) => errs.push(e),
                }
            } else if s.cluster_trust_bundle.is_some() {
                errs.push(
                    "clusterTrustBundle projections are not supported by rkube's kubelet".into(),
                );
            }
        }
        payload::aggregate(errs).map(|()| out)
    }

    /// Mounts a tmpfs on `dir` unless one is there already.
    async fn ensure_tmpfs(
        &self,
        dir: &Path,
        size: Option<i64>,
        state: &mut PodState,
    ) -> Result<(), Error> {
        if state.tmpfs.contains(dir) {
            return Ok(());
        }
        let canon = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        let mounted = self
            .mounter
            .mounts_under(dir)
            .await?
            .iter()
            .any(|p| p == dir || *p == canon);
        if !mounted {
            tracing::debug!(dir = %dir.display(), ?size, "mounting tmpfs");
            self.mounter.mount_tmpfs(dir, size).await?;
        }
        state.tmpfs.insert(dir.to_path_buf());
        Ok(())
    }

    fn memory_size(&self, pod: &Pod, size_limit: Option<i64>) -> Option<i64> {
        memory_volume_size(
            self.allocatable.get("memory").map(Quantity::value),
            pod,
            size_limit,
        )
    }

    /// Writes a payload into a (wrapped emptyDir) volume directory; applies the fsGroup
    /// when something was written.
    fn write_payload(
        &self,
        pod: &Pod,
        dir: &Path,
        payload: &Payload,
        read_only: bool,
    ) -> Result<(), Error> {
        let wrote = atomic_writer::write(dir, payload, self.clock.now())?;
        if wrote && let Some((gid, on_mismatch)) = fs_group(pod) {
            ownership::set_volume_ownership(dir, gid, read_only, on_mismatch)?;
        }
        Ok(())
    }

    async fn setup_volume(
        &self,
        pod: &Pod,
        uid: &str,
        v: &Volume,
        state: &mut PodState,
    ) -> Result<PathBuf, String> {
        let ns = pod.metadata.namespace.clone().unwrap_or_default();
        let s = |e: Error| e.to_string();
        if let Some(hp) = &v.host_path {
            hostpath::check(&hp.path, hp.type_.as_deref())?;
            return Ok(PathBuf::from(&hp.path));
        }
        if let Some(ed) = &v.empty_dir {
            let dir = self.volume_dir(uid, EMPTY_DIR_PLUGIN, &v.name);
            if state.empty_dirs.contains(&v.name) {
                return Ok(dir);
            }
            let medium = ed.medium.as_deref().unwrap_or_default();
            match medium {
                "" => make_dir(&dir, 0o777).map_err(s)?,
                "Memory" => {
                    make_dir(&dir, 0o777).map_err(s)?;
                    let limit = ed
                        .size_limit
                        .as_ref()
                        .and_then(|q| Quantity::parse(&q.0).ok())
                        .map(|q| q.value());
                    let size = self.memory_size(pod, limit);
                    self.ensure_tmpfs(&dir, size, state).await.map_err(s)?;
                }
                m if m.starts_with("HugePages") => {
                    return Err(format!(
                        "hugepages emptyDir volumes (medium {m}) are not supported by rkube's kubelet"
                    ));
                }
                m => return Err(format!("unknown storage medium {}", go_quote(m))),
            }
            if let Some((gid, on_mismatch)) = fs_group(pod) {
                ownership::set_volume_ownership(&dir, gid, false, on_mismatch).map_err(s)?;
            }
            state.empty_dirs.insert(v.name.clone());
            return Ok(dir);
        }
        if let Some(src) = &v.config_map {
            let optional = src.optional.unwrap_or(false);
            let cm = match self.config_map(&ns, &src.name).await.map_err(s)? {
                Some(c) => c,
                None if optional => ConfigMap::default(),
                None => return Err(not_found("configmap", &src.name)),
            };
            let payload = payload::config_map_payload(
                src.items.as_deref(),
                &cm,
                src.default_mode.unwrap_or(DEFAULT_MODE),
                optional,
            )?;
            let dir = self.volume_dir(uid, CONFIG_MAP_PLUGIN, &v.name);
            make_dir(&dir, 0o777).map_err(s)?;
            self.write_payload(pod, &dir, &payload, true).map_err(s)?;
            return Ok(dir);
        }
        if let Some(src) = &v.secret {
            let optional = src.optional.unwrap_or(false);
            let name = src.secret_name.clone().unwrap_or_default();
            let secret = match self.secret(&ns, &name).await.map_err(s)? {
                Some(x) => x,
                None if optional => Secret::default(),
                None => return Err(not_found("secret", &name)),
            };
            let payload = payload::secret_payload(
                src.items.as_deref(),
                &secret,
                src.default_mode.unwrap_or(DEFAULT_MODE),
                optional,
            )?;
            let dir = self.volume_dir(uid, SECRET_PLUGIN, &v.name);
            make_dir(&dir, 0o777).map_err(s)?;
            let size = self.memory_size(pod, None);
            self.ensure_tmpfs(&dir, size, state).await.map_err(s)?;
            self.write_payload(pod, &dir, &payload, true).map_err(s)?;
            return Ok(dir);
        }
        if let Some(src) = &v.downward_api {
            let payload = payload::downward_api_payload(
                src.items.as_deref().unwrap_or_default(),
                pod,
                &self.allocatable,
                src.default_mode.unwrap_or(DEFAULT_MODE),
            )?;
            let dir = self.volume_dir(uid, DOWNWARD_API_PLUGIN, &v.name);
            make_dir(&dir, 0o777).map_err(s)?;
            self.write_payload(pod, &dir, &payload, true).map_err(s)?;
            return Ok(dir);
        }
        if let Some(src) = &v.projected {
            let fsg = fs_group(pod).map(|(g, _)| g);
            let payload = self.projected_payload(pod, &v.name, src, fsg).await?;
            let dir = self.volume_dir(uid, PROJECTED_PLUGIN, &v.name);
            make_dir(&dir, 0o777).map_err(s)?;
            let size = self.memory_size(pod, None);
            self.ensure_tmpfs(&dir, size, state).await.map_err(s)?;
            self.write_payload(pod, &dir, &payload, true).map_err(s)?;
            return Ok(dir);
        }
        Err(format!(
            "no volume plugin matched: {} volumes are not supported by rkube's kubelet",
            volume_kind(v)
        ))
    }

    async fn setup_pod(&self, pod: &Pod, uid: &str) -> Result<PodVolumes, Error> {
        let state = self.pod_state(uid);
        let mut state = state.lock().await;
        if !state.dirs_made {
            let pod_dir = self.config.pod_dir(uid);
            for d in [
                pod_dir.clone(),
                pod_dir.join("volumes"),
                pod_dir.join("plugins"),
                pod_dir.join("containers"),
            ] {
                make_dir(&d, 0o750)?;
            }
            state.dirs_made = true;
        }
        let mut out = PodVolumes::default();
        let mut first_error = None;
        for v in pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_deref())
            .unwrap_or_default()
        {
            match self.setup_volume(pod, uid, v, &mut state).await {
                Ok(path) => {
                    out.paths.insert(v.name.clone(), path);
                }
                Err(message) => {
                    tracing::warn!(volume = %v.name, error = %message, "MountVolume.SetUp failed");
                    if first_error.is_none() {
                        first_error = Some(Error::Volume {
                            volume: v.name.clone(),
                            message,
                        });
                    }
                }
            }
        }
        // Upstream's periodic cleanup of expired tokens.
        self.tokens.remove_expired(self.clock.now());
        match first_error {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }

    async fn teardown_pod(&self, uid: &str) -> Result<(), Error> {
        let state = self.pod_state(uid);
        let _guard = state.lock().await;
        self.tokens.remove_pod(uid);
        let dir = self.config.pod_dir(uid);
        if let Err(e) = std::fs::symlink_metadata(&dir) {
            if e.kind() == ErrorKind::NotFound {
                self.forget(uid);
                return Ok(());
            }
            return Err(io(&dir)(e));
        }
        for m in self.mounter.mounts_under(&dir).await? {
            tracing::debug!(dir = %m.display(), "unmounting");
            self.mounter.unmount(&m).await?;
        }
        let left = self.mounter.mounts_under(&dir).await?;
        if !left.is_empty() {
            return Err(Error::Other(format!(
                "{} still has mounts: {}",
                dir.display(),
                left.iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        match std::fs::remove_dir_all(&dir) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io(&dir)(e)),
        }
        self.forget(uid);
        Ok(())
    }

    fn forget(&self, uid: &str) {
        if let Ok(mut p) = self.pods.lock() {
            p.remove(uid);
        }
    }
}

/// The pod's `fsGroup` and whether its change policy is `OnRootMismatch`.
fn fs_group(pod: &Pod) -> Option<(i64, bool)> {
    let sc = pod.spec.as_ref()?.security_context.as_ref()?;
    let g = sc.fs_group?;
    Some((
        g,
        sc.fs_group_change_policy.as_deref() == Some("OnRootMismatch"),
    ))
}

#[async_trait]
impl VolumeManager for Volumes {
    async fn setup(&self, pod: &Pod) -> Result<PodVolumes, Error> {
        let uid = pod
            .metadata
            .uid
            .clone()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| Error::Other("pod has no metadata.uid".into()))?;
        let span = tracing::debug_span!(
            "volumes.setup",
            pod = %format!(
                "{}/{}",
                pod.metadata.namespace.as_deref().unwrap_or_default(),
                pod.metadata.name.as_deref().unwrap_or_default()
            ),
            uid = %uid
        );
        self.setup_pod(pod, &uid).instrument(span).await
    }

    async fn teardown(&self, pod_uid: &str) -> Result<(), Error> {
        let span = tracing::debug_span!("volumes.teardown", uid = %pod_uid);
        self.teardown_pod(pod_uid).instrument(span).await
    }
}

#[cfg(test)]
mod tests;
