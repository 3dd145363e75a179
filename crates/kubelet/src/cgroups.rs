//! Pod cgroups for the `cgroupfs` driver, as upstream's QoS hierarchy
//! (`pkg/kubelet/cm/qos_container_manager_linux.go`, `pod_container_manager_linux.go`,
//! `helpers_linux.go`):
//!
//! ```text
//! <cgroup_root>/kubepods                 node allocatable (cpu.shares, memory limit)
//! <cgroup_root>/kubepods/pod<uid>        Guaranteed pods
//! <cgroup_root>/kubepods/burstable       cpu.shares = Σ requests of its pods (min 2)
//! <cgroup_root>/kubepods/burstable/pod<uid>
//! <cgroup_root>/kubepods/besteffort      cpu.shares = 2
//! <cgroup_root>/kubepods/besteffort/pod<uid>
//! ```
//!
//! A pod's cgroup gets cpu.shares from its requests, a CFS quota from its cpu limits and a
//! memory limit from its memory limits (for Guaranteed pods, and for Burstable pods whose
//! every container declares the limit). The cgroup parent handed to CRI is the cgroupfs
//! path (`/kubepods/burstable/pod<uid>`). On cgroup v1 (also the hybrid layout, whose
//! `unified` mount is left alone) every hierarchy under the mount root gets the
//! directory; on v2 (`cgroup.controllers` at the root) one tree, with `cpu.weight`,
//! `cpu.max`, `memory.max`, `pids.max`.
//!
//! The computations are pure; [`CgroupFs`] does the file writes under a mount root it is
//! given (so tests use a temporary directory).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use api::kinds::validate::quantity::Quantity as Q;
use k8s_openapi::api::core::v1::{Container, Pod};

use crate::{CgroupManager, Error};

/// `MinShares`.
pub const MIN_SHARES: u64 = 2;
/// `MaxShares`.
pub const MAX_SHARES: u64 = 262_144;
/// `SharesPerCPU`.
pub const SHARES_PER_CPU: i64 = 1024;
/// `QuotaPeriod` (µs).
pub const QUOTA_PERIOD: u64 = 100_000;
/// `MinQuotaPeriod` (µs).
pub const MIN_QUOTA: i64 = 1000;

/// The top of the QoS hierarchy.
pub const KUBEPODS: &str = "kubepods";

pub use api::qos::QosClass;

fn quantity(q: &k8s_openapi::apimachinery::pkg::api::resource::Quantity) -> Option<Q> {
    Q::parse(&q.0).ok()
}

/// Upstream's `GetPodQOS`: `status.qosClass` when the API server set it, else
/// [`compute_pod_qos`].
pub fn pod_qos(pod: &Pod) -> QosClass {
    pod.status
        .as_ref()
        .and_then(|s| s.qos_class.as_deref())
        .and_then(QosClass::parse)
        .unwrap_or_else(|| compute_pod_qos(pod))
}

/// Upstream's `ComputePodQOS` ([`api::qos`]).
pub fn compute_pod_qos(pod: &Pod) -> QosClass {
    api::qos::of_pod(pod)
}

/// `MilliCPUToShares`.
pub fn milli_cpu_to_shares(milli_cpu: i64) -> u64 {
    if milli_cpu <= 0 {
        return MIN_SHARES;
    }
    let shares = u64::try_from(milli_cpu.saturating_mul(SHARES_PER_CPU) / 1000).unwrap_or(0);
    shares.clamp(MIN_SHARES, MAX_SHARES)
}

/// `MilliCPUToQuota`: 0 without a limit, else at least 1000 µs.
pub fn milli_cpu_to_quota(milli_cpu: i64, period: u64) -> i64 {
    if milli_cpu == 0 {
        return 0;
    }
    let period = i64::try_from(period).unwrap_or(i64::MAX);
    (milli_cpu.saturating_mul(period) / 1000).max(MIN_QUOTA)
}

/// cpu.shares → cgroup v2 cpu.weight (upstream's `CpuSharesToCpuWeight`, runc's linear
/// mapping of [2, 262144] onto [1, 10000]).
pub fn shares_to_weight(shares: u64) -> u64 {
    if shares == 0 {
        return 0;
    }
    1 + (shares.saturating_sub(2) * 9999) / 262_142
}

/// What one resource adds up to for a pod (upstream's `PodRequests`/`PodLimits` over
/// containers, restartable init containers and init containers, plus overhead).
fn pod_total(
    pod: &Pod,
    resource: &str,
    pick: fn(&Container) -> Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>,
    overhead_only_if_present: bool,
) -> Option<Q> {
    let spec = pod.spec.as_ref()?;
    let get = |c: &Container| pick(c).and_then(quantity);
    let mut sum: Option<Q> = None;
    let plus = |a: Option<Q>, b: Option<Q>| match (a, b) {
        (Some(a), Some(b)) => Some(a.add(&b)),
        (a, None) => a,
        (None, b) => b,
    };
    for c in &spec.containers {
        sum = plus(sum, get(c));
    }
    let mut sidecars: Option<Q> = None;
    let mut init_max: Option<Q> = None;
    for c in spec.init_containers.iter().flatten() {
        let value = if c.restart_policy.as_deref() == Some("Always") {
            sum = plus(sum, get(c));
            sidecars = plus(sidecars, get(c));
            sidecars
        } else {
            plus(get(c), sidecars)
        };
        init_max = match (init_max, value) {
            (Some(a), Some(b)) => Some(if b > a { b } else { a }),
            (a, None) => a,
            (None, b) => b,
        };
    }
    sum = match (sum, init_max) {
        (Some(a), Some(b)) => Some(if b > a { b } else { a }),
        (a, None) => a,
        (None, b) => b,
    };
    if let Some(o) = spec
        .overhead
        .as_ref()
        .and_then(|o| o.get(resource))
        .and_then(quantity)
        && (!overhead_only_if_present || sum.is_some())
    {
        sum = plus(sum, Some(o));
    }
    sum
}

/// The limits of a pod cgroup (upstream's `ResourceConfig` subset rkube sets).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PodResources {
    pub qos: QosClass,
    pub cpu_shares: u64,
    /// `Some((quota, period))` when cpu limits apply (quota µs per period µs).
    pub cpu_quota: Option<(i64, u64)>,
    /// Bytes, when memory limits apply.
    pub memory_limit: Option<i64>,
    /// `pids.max`, when the kubelet has a pod pids limit.
    pub pids_limit: Option<i64>,
}

/// Upstream's `ResourceConfigForPod` (CFS quota enforced, period 100 ms).
pub fn pod_resources(pod: &Pod, pids_limit: Option<i64>) -> PodResources {
    let qos = pod_qos(pod);
    fn req<'a>(
        c: &'a Container,
        r: &str,
    ) -> Option<&'a k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
        c.resources.as_ref()?.requests.as_ref()?.get(r)
    }
    fn lim<'a>(
        c: &'a Container,
        r: &str,
    ) -> Option<&'a k8s_openapi::apimachinery::pkg::api::resource::Quantity> {
        c.resources.as_ref()?.limits.as_ref()?.get(r)
    }
    let cpu_req = pod_total(pod, "cpu", |c| req(c, "cpu"), false)
        .map(|q| q.milli_value())
        .unwrap_or(0);
    let cpu_lim = pod_total(pod, "cpu", |c| lim(c, "cpu"), true)
        .map(|q| q.milli_value())
        .unwrap_or(0);
    let mem_lim = pod_total(pod, "memory", |c| lim(c, "memory"), true)
        .map(|q| q.value())
        .unwrap_or(0);
    // Whether every container (init containers too) declares the limit.
    let declared = |r: &str| {
        pod.spec.as_ref().is_none_or(|s| {
            s.containers
                .iter()
                .chain(s.init_containers.iter().flatten())
                .all(|c| lim(c, r).and_then(quantity).is_some_and(|q| !q.is_zero()))
        })
    };
    let shares = milli_cpu_to_shares(cpu_req);
    let quota = (milli_cpu_to_quota(cpu_lim, QUOTA_PERIOD), QUOTA_PERIOD);
    match qos {
        QosClass::Guaranteed => PodResources {
            qos,
            cpu_shares: shares,
            cpu_quota: Some(quota),
            memory_limit: Some(mem_lim),
            pids_limit,
        },
        QosClass::Burstable => PodResources {
            qos,
            cpu_shares: shares,
            cpu_quota: declared("cpu").then_some(quota),
            memory_limit: declared("memory").then_some(mem_lim),
            pids_limit,
        },
        QosClass::BestEffort => PodResources {
            qos,
            cpu_shares: MIN_SHARES,
            cpu_quota: None,
            memory_limit: None,
            pids_limit,
        },
    }
}

/// The pod's cgroup below the cgroup root: `kubepods/pod<uid>` (Guaranteed) or
/// `kubepods/<burstable|besteffort>/pod<uid>`.
pub fn pod_cgroup_name(qos: QosClass, uid: &str) -> String {
    match qos {
        QosClass::Guaranteed => format!("{KUBEPODS}/pod{uid}"),
        QosClass::Burstable => format!("{KUBEPODS}/burstable/pod{uid}"),
        QosClass::BestEffort => format!("{KUBEPODS}/besteffort/pod{uid}"),
    }
}

/// One control file to write: (v1 controller, file, value). On v2 the controller is
/// ignored.
pub type CgroupWrite = (&'static str, &'static str, String);

/// The files of a cgroup with these limits, cgroup v1.
pub fn v1_writes(
    cpu_shares: u64,
    cpu_quota: Option<(i64, u64)>,
    memory: Option<i64>,
    pids: Option<i64>,
) -> Vec<CgroupWrite> {
    let mut w = vec![("cpu", "cpu.shares", cpu_shares.to_string())];
    if let Some((quota, period)) = cpu_quota {
        w.push(("cpu", "cpu.cfs_period_us", period.to_string()));
        if quota != 0 {
            w.push(("cpu", "cpu.cfs_quota_us", quota.to_string()));
        }
    }
    if let Some(m) = memory
        && m != 0
    {
        w.push((
            "memory",
            "memory.limit_in_bytes",
            if m < 0 { "-1".into() } else { m.to_string() },
        ));
    }
    if let Some(p) = pids {
        w.push((
            "pids",
            "pids.max",
            if p < 0 { "max".into() } else { p.to_string() },
        ));
    }
    w
}

/// The files of a cgroup with these limits, cgroup v2.
pub fn v2_writes(
    cpu_shares: u64,
    cpu_quota: Option<(i64, u64)>,
    memory: Option<i64>,
    pids: Option<i64>,
) -> Vec<CgroupWrite> {
    let mut w = vec![(
        "cpu",
        "cpu.weight",
        shares_to_weight(cpu_shares).to_string(),
    )];
    if let Some((quota, period)) = cpu_quota {
        let q = if quota > 0 {
            quota.to_string()
        } else {
            "max".to_string()
        };
        w.push(("cpu", "cpu.max", format!("{q} {period}")));
    }
    if let Some(m) = memory
        && m != 0
    {
        w.push((
            "memory",
            "memory.max",
            if m < 0 { "max".into() } else { m.to_string() },
        ));
    }
    if let Some(p) = pids {
        w.push((
            "pids",
            "pids.max",
            if p < 0 { "max".into() } else { p.to_string() },
        ));
    }
    w
}

/// The cgroup layout found under the mount root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// One directory per v1 hierarchy (controller name as mounted, e.g. `cpu`,
    /// `memory`, `systemd`).
    V1(Vec<String>),
    /// The unified hierarchy.
    V2,
}

/// Finds the layout: v2 when the root has `cgroup.controllers`; else every directory
/// under it but `unified` (the v2 mount of a hybrid layout).
pub fn detect_layout(mount_root: &Path) -> Result<Layout, Error> {
    if mount_root.join("cgroup.controllers").exists() {
        return Ok(Layout::V2);
    }
    let io = |e| Error::Io {
        path: mount_root.to_path_buf(),
        source: e,
    };
    let mut names = Vec::new();
    for entry in std::fs::read_dir(mount_root).map_err(io)? {
        let entry = entry.map_err(io)?;
        let name = entry.file_name().to_string_lossy().to_string();
        if name == "unified" || !entry.path().is_dir() {
            continue;
        }
        // `cpu,cpuacct` mounted once with `cpu` and `cpuacct` as symlinks: keep one.
        let real = std::fs::canonicalize(entry.path()).unwrap_or(entry.path());
        if entry.file_type().map(|t| t.is_symlink()).unwrap_or(false)
            && real.parent() == Some(mount_root)
        {
            continue;
        }
        names.push(name);
    }
    names.sort();
    if names.is_empty() {
        return Err(Error::Other(format!(
            "no cgroup hierarchy under {}",
            mount_root.display()
        )));
    }
    Ok(Layout::V1(names))
}

/// `pod_cgroup_name` under `cgroup_root` as the cgroupfs path CRI expects
/// (`/kubepods/burstable/pod<uid>`).
fn cgroupfs_path(cgroup_root: &str, name: &str) -> String {
    let root = cgroup_root.trim_matches('/');
    if root.is_empty() {
        format!("/{name}")
    } else {
        format!("/{root}/{name}")
    }
}

/// The `cgroupfs` driver's pod cgroups.
pub struct CgroupFs {
    mount_root: PathBuf,
    cgroup_root: String,
    layout: Layout,
    pod_pids_limit: Option<i64>,
    /// cpu requests (milli) of the Burstable pods, for the `burstable` cgroup's shares.
    burstable: Mutex<HashMap<String, i64>>,
}

impl CgroupFs {
    /// Pod cgroups under `mount_root` (`/sys/fs/cgroup`), in the logical cgroup
    /// `cgroup_root` (upstream's `--cgroup-root`, `/`).
    pub fn new(mount_root: impl Into<PathBuf>, cgroup_root: &str) -> Result<CgroupFs, Error> {
        let mount_root = mount_root.into();
        let layout = detect_layout(&mount_root)?;
        Ok(CgroupFs {
            mount_root,
            cgroup_root: cgroup_root.to_string(),
            layout,
            pod_pids_limit: None,
            burstable: Mutex::new(HashMap::new()),
        })
    }

    /// Limits every pod cgroup to `limit` processes (upstream's `podPidsLimit`).
    pub fn with_pod_pids_limit(mut self, limit: Option<i64>) -> CgroupFs {
        self.pod_pids_limit = limit;
        self
    }

    /// The layout found at construction.
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The directories of the logical cgroup `name` (one per v1 hierarchy).
    pub fn dirs(&self, name: &str) -> Vec<PathBuf> {
        let rel = cgroupfs_path(&self.cgroup_root, name);
        let rel = rel.trim_start_matches('/');
        match &self.layout {
            Layout::V2 => vec![self.mount_root.join(rel)],
            Layout::V1(hs) => hs
                .iter()
                .map(|h| self.mount_root.join(h).join(rel))
                .collect(),
        }
    }

    fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Creates the cgroup `name` (and its parents) in every hierarchy and writes `writes`.
    fn ensure(&self, name: &str, writes: &[CgroupWrite]) -> Result<(), Error> {
        match &self.layout {
            Layout::V2 => {
                let rel = cgroupfs_path(&self.cgroup_root, name);
                let dir = self.mount_root.join(rel.trim_start_matches('/'));
                self.create_v2(&dir)?;
                for (_, file, value) in writes {
                    write_file(&dir.join(file), value)?;
                }
            }
            Layout::V1(hs) => {
                let rel = cgroupfs_path(&self.cgroup_root, name);
                let rel = rel.trim_start_matches('/');
                for h in hs {
                    let base = self.mount_root.join(h);
                    let dir = base.join(rel);
                    create_v1(&base, &dir, h)?;
                    for (controller, file, value) in writes {
                        if h == controller || h.split(',').any(|c| c == *controller) {
                            write_file(&dir.join(file), value)?;
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Creates a v2 cgroup, enabling the controllers we use in every ancestor's
    /// `cgroup.subtree_control` from the mount root down.
    fn create_v2(&self, dir: &Path) -> Result<(), Error> {
        let rel = dir.strip_prefix(&self.mount_root).unwrap_or(dir);
        let mut cur = self.mount_root.clone();
        for part in rel.components() {
            enable_v2_controllers(&cur);
            cur = cur.join(part);
            if !cur.exists() {
                std::fs::create_dir(&cur).or_else(|e| {
                    if e.kind() == std::io::ErrorKind::AlreadyExists {
                        Ok(())
                    } else {
                        Err(Self::io(&cur, e))
                    }
                })?;
            }
        }
        Ok(())
    }

    /// Creates `kubepods` with the node's allocatable as its limits, and the
    /// `burstable`/`besteffort` QoS cgroups (upstream's `createNodeAllocatableCgroups` +
    /// QoS container manager `Start`).
    pub fn ensure_node(
        &self,
        allocatable_milli_cpu: i64,
        allocatable_memory: i64,
    ) -> Result<(), Error> {
        let writes = |shares, mem| match self.layout {
            Layout::V2 => v2_writes(shares, None, mem, None),
            Layout::V1(_) => v1_writes(shares, None, mem, None),
        };
        self.ensure(
            KUBEPODS,
            &writes(
                milli_cpu_to_shares(allocatable_milli_cpu),
                Some(allocatable_memory),
            ),
        )?;
        self.ensure(&format!("{KUBEPODS}/besteffort"), &writes(MIN_SHARES, None))?;
        self.update_burstable()
    }

    fn update_burstable(&self) -> Result<(), Error> {
        let total: i64 = self
            .burstable
            .lock()
            .map(|m| m.values().sum())
            .unwrap_or_else(|p| p.into_inner().values().sum());
        let shares = milli_cpu_to_shares(total);
        let writes = match self.layout {
            Layout::V2 => v2_writes(shares, None, None, None),
            Layout::V1(_) => v1_writes(shares, None, None, None),
        };
        self.ensure(&format!("{KUBEPODS}/burstable"), &writes)
    }

    fn burstable_map(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        match self.burstable.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Removes the logical cgroup `name` from every hierarchy: missing is fine; busy
    /// (processes or child cgroups left) is retried a few times, then an error the caller
    /// retries later.
    fn remove(&self, name: &str) -> Result<(), Error> {
        let mut dirs = self.dirs(name);
        dirs.reverse();
        // On a hybrid (v1 + `unified`) host runc also makes the path in the v2 hierarchy;
        // it is not ours to configure, but it goes with the pod.
        if let Layout::V1(_) = self.layout {
            let rel = cgroupfs_path(&self.cgroup_root, name);
            let unified = self
                .mount_root
                .join("unified")
                .join(rel.trim_start_matches('/'));
            if unified.is_dir() {
                dirs.push(unified);
            }
        }
        for dir in dirs {
            remove_dir(&dir)?;
        }
        Ok(())
    }

    /// Removes the whole `kubepods` tree (for tests and a node's teardown): children
    /// first.
    pub fn remove_all(&self) -> Result<(), Error> {
        for dir in self.dirs(KUBEPODS) {
            remove_tree(&dir)?;
        }
        Ok(())
    }
}

fn write_file(path: &Path, value: &str) -> Result<(), Error> {
    std::fs::write(path, value).map_err(|e| Error::Io {
        path: path.to_path_buf(),
        source: e,
    })
}

fn enable_v2_controllers(dir: &Path) {
    let available = std::fs::read_to_string(dir.join("cgroup.controllers")).unwrap_or_default();
    let enabled = std::fs::read_to_string(dir.join("cgroup.subtree_control")).unwrap_or_default();
    for c in ["cpu", "cpuset", "memory", "pids", "hugetlb", "io"] {
        if available.split_whitespace().any(|a| a == c)
            && !enabled.split_whitespace().any(|a| a == c)
            && let Err(e) = std::fs::write(dir.join("cgroup.subtree_control"), format!("+{c}"))
        {
            tracing::debug!(dir = %dir.display(), controller = c, error = %e, "cannot enable cgroup controller");
        }
    }
}

/// Creates a v1 cgroup directory and its parents; in the cpuset hierarchy a new
/// directory gets its parent's `cpuset.cpus`/`cpuset.mems` (it cannot hold tasks
/// without them).
fn create_v1(base: &Path, dir: &Path, hierarchy: &str) -> Result<(), Error> {
    let rel = dir.strip_prefix(base).unwrap_or(dir);
    let mut cur = base.to_path_buf();
    for part in rel.components() {
        let parent = cur.clone();
        cur = cur.join(part);
        if cur.exists() {
            continue;
        }
        match std::fs::create_dir(&cur) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::Io {
                    path: cur.clone(),
                    source: e,
                });
            }
        }
        if hierarchy.split(',').any(|h| h == "cpuset") {
            for file in ["cpuset.cpus", "cpuset.mems"] {
                let current = std::fs::read_to_string(cur.join(file)).unwrap_or_default();
                if current.trim().is_empty()
                    && let Ok(v) = std::fs::read_to_string(parent.join(file))
                    && !v.trim().is_empty()
                {
                    write_file(&cur.join(file), v.trim())?;
                }
            }
        }
    }
    Ok(())
}

/// How often a busy cgroup's removal is tried before giving up for now (runc's
/// `RemovePaths` tries 5 times too).
const REMOVE_TRIES: u32 = 5;

const EBUSY: i32 = rustix::io::Errno::BUSY.raw_os_error();

fn remove_dir(dir: &Path) -> Result<(), Error> {
    let mut delay = std::time::Duration::from_millis(10);
    for attempt in 1..=REMOVE_TRIES {
        match std::fs::remove_dir(dir) {
            Ok(()) => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => {
                // Not a cgroup filesystem (cgroupfs never says ENOTEMPTY: its control files
                // go with the directory): remove the plain files, then the directory.
                let has_children = std::fs::read_dir(dir)
                    .map(|d| d.flatten().any(|e| e.path().is_dir()))
                    .unwrap_or(false);
                if has_children {
                    return Err(Error::Other(format!(
                        "cgroup {} still has child cgroups; will retry",
                        dir.display()
                    )));
                }
                if let Ok(entries) = std::fs::read_dir(dir) {
                    for entry in entries.flatten() {
                        let _ = std::fs::remove_file(entry.path());
                    }
                }
            }
            Err(e) if e.raw_os_error() == Some(EBUSY) && attempt < REMOVE_TRIES => {
                // EBUSY: processes are still leaving.
                std::thread::sleep(delay);
                delay *= 2;
            }
            Err(e) if e.raw_os_error() == Some(EBUSY) => {
                return Err(Error::Other(format!(
                    "cgroup {} is busy (processes left); will retry",
                    dir.display()
                )));
            }
            Err(e) => {
                return Err(Error::Io {
                    path: dir.to_path_buf(),
                    source: e,
                });
            }
        }
    }
    Err(Error::Other(format!(
        "cgroup {} could not be removed; will retry",
        dir.display()
    )))
}

fn remove_tree(dir: &Path) -> Result<(), Error> {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let p = entry.path();
            if entry.file_type().map(|t| t.is_dir()).unwrap_or(false) {
                remove_tree(&p)?;
            }
        }
    }
    remove_dir(dir)
}

impl CgroupManager for CgroupFs {
    fn ensure_pod(&self, pod: &Pod) -> Result<String, Error> {
        let uid = pod
            .metadata
            .uid
            .as_deref()
            .filter(|u| !u.is_empty())
            .ok_or_else(|| Error::Other("pod has no uid".into()))?;
        let res = pod_resources(pod, self.pod_pids_limit);
        let name = pod_cgroup_name(res.qos, uid);
        let writes = match self.layout {
            Layout::V2 => v2_writes(
                res.cpu_shares,
                res.cpu_quota,
                res.memory_limit,
                res.pids_limit,
            ),
            Layout::V1(_) => v1_writes(
                res.cpu_shares,
                res.cpu_quota,
                res.memory_limit,
                res.pids_limit,
            ),
        };
        if res.qos == QosClass::Burstable {
            let milli = pod_total(
                pod,
                "cpu",
                |c| c.resources.as_ref()?.requests.as_ref()?.get("cpu"),
                false,
            )
            .map(|q| q.milli_value())
            .unwrap_or(0);
            self.burstable_map().insert(uid.to_string(), milli);
            self.update_burstable()?;
        }
        self.ensure(&name, &writes)?;
        Ok(cgroupfs_path(&self.cgroup_root, &name))
    }

    fn remove_pod(&self, pod: &Pod) -> Result<(), Error> {
        let Some(uid) = pod.metadata.uid.as_deref().filter(|u| !u.is_empty()) else {
            return Ok(());
        };
        // The QoS class may have been computed differently when the cgroup was made:
        // look in every place.
        for qos in [
            QosClass::Guaranteed,
            QosClass::Burstable,
            QosClass::BestEffort,
        ] {
            self.remove(&pod_cgroup_name(qos, uid))?;
        }
        if self.burstable_map().remove(uid).is_some() {
            self.update_burstable()?;
        }
        Ok(())
    }
}

/// An in-memory [`CgroupManager`] for tests: the pod cgroups that exist, by pod uid, and
/// every call in order (`ensure <uid>`, `remove <uid>`). A pod's cgroup can be made busy
/// (its removal fails, as a cgroup whose processes are still leaving) a number of times.
#[derive(Debug, Default)]
pub struct FakeCgroups {
    state: Mutex<FakeCgroupState>,
}

#[derive(Debug, Default)]
struct FakeCgroupState {
    pods: std::collections::BTreeSet<String>,
    busy: HashMap<String, u32>,
    calls: Vec<String>,
}

impl FakeCgroups {
    pub fn new() -> FakeCgroups {
        FakeCgroups::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeCgroupState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next `times` removals of pod `uid`'s cgroup fail (`u32::MAX`: always).
    pub fn set_busy(&self, uid: &str, times: u32) {
        self.lock().busy.insert(uid.to_string(), times);
    }

    /// Whether pod `uid`'s cgroup exists.
    pub fn exists(&self, uid: &str) -> bool {
        self.lock().pods.contains(uid)
    }

    /// The calls so far, in order.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }
}

impl CgroupManager for FakeCgroups {
    fn ensure_pod(&self, pod: &Pod) -> Result<String, Error> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut st = self.lock();
        st.calls.push(format!("ensure {uid}"));
        st.pods.insert(uid.clone());
        Ok(format!("/{}", pod_cgroup_name(pod_qos(pod), &uid)))
    }

    fn remove_pod(&self, pod: &Pod) -> Result<(), Error> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut st = self.lock();
        st.calls.push(format!("remove {uid}"));
        if let Some(n) = st.busy.get_mut(&uid)
            && *n > 0
        {
            if *n != u32::MAX {
                *n -= 1;
            }
            return Err(Error::Other(format!(
                "cgroup of pod {uid} is busy (processes left); will retry"
            )));
        }
        st.pods.remove(&uid);
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(containers: serde_json::Value) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "default", "uid": "u-1"},
            "spec": {"containers": containers},
        }))
        .unwrap()
    }

    fn c(resources: serde_json::Value) -> serde_json::Value {
        json!({"name": "c", "image": "x", "resources": resources})
    }

    #[test]
    fn qos_classes() {
        assert_eq!(
            compute_pod_qos(&pod(json!([c(json!({}))]))),
            QosClass::BestEffort
        );
        let g = json!({"requests": {"cpu": "500m", "memory": "64Mi"}, "limits": {"cpu": "0.5", "memory": "64Mi"}});
        assert_eq!(
            compute_pod_qos(&pod(json!([c(g.clone())]))),
            QosClass::Guaranteed
        );
        assert_eq!(
            compute_pod_qos(&pod(json!([c(g.clone()), c(json!({}))]))),
            QosClass::Burstable
        );
        assert_eq!(
            compute_pod_qos(&pod(json!([c(json!({"requests": {"cpu": "100m"}}))]))),
            QosClass::Burstable
        );
        assert_eq!(
            compute_pod_qos(&pod(json!([c(
                json!({"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "200m", "memory": "1Gi"}})
            )]))),
            QosClass::Burstable
        );
        // Only cpu/memory count.
        assert_eq!(
            compute_pod_qos(&pod(json!([c(
                json!({"requests": {"ephemeral-storage": "1Gi"}})
            )]))),
            QosClass::BestEffort
        );
        // status.qosClass wins.
        let mut p = pod(json!([c(json!({}))]));
        p.status = Some(k8s_openapi::api::core::v1::PodStatus {
            qos_class: Some("Burstable".into()),
            ..Default::default()
        });
        assert_eq!(pod_qos(&p), QosClass::Burstable);
    }

    #[test]
    fn cpu_conversions() {
        assert_eq!(milli_cpu_to_shares(0), 2);
        assert_eq!(milli_cpu_to_shares(1), 2);
        assert_eq!(milli_cpu_to_shares(100), 102);
        assert_eq!(milli_cpu_to_shares(1000), 1024);
        assert_eq!(milli_cpu_to_shares(1_000_000), MAX_SHARES);
        assert_eq!(milli_cpu_to_quota(0, QUOTA_PERIOD), 0);
        assert_eq!(milli_cpu_to_quota(5, QUOTA_PERIOD), 1000);
        assert_eq!(milli_cpu_to_quota(250, QUOTA_PERIOD), 25_000);
        assert_eq!(milli_cpu_to_quota(2000, QUOTA_PERIOD), 200_000);
        assert_eq!(shares_to_weight(2), 1);
        assert_eq!(shares_to_weight(1024), 39);
        assert_eq!(shares_to_weight(MAX_SHARES), 10_000);
    }

    #[test]
    fn pod_resource_configs() {
        let g = pod(json!([
            c(
                json!({"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "250m", "memory": "64Mi"}})
            ),
            c(
                json!({"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "250m", "memory": "64Mi"}})
            ),
        ]));
        assert_eq!(
            pod_resources(&g, None),
            PodResources {
                qos: QosClass::Guaranteed,
                cpu_shares: 512,
                cpu_quota: Some((50_000, 100_000)),
                memory_limit: Some(128 << 20),
                pids_limit: None,
            }
        );
        // Burstable: limits only when every container declares them.
        let b = pod(json!([
            c(json!({"requests": {"cpu": "100m"}, "limits": {"cpu": "200m"}})),
            c(json!({"requests": {"memory": "10Mi"}, "limits": {"cpu": "300m", "memory": "20Mi"}})),
        ]));
        let r = pod_resources(&b, Some(1024));
        assert_eq!(r.qos, QosClass::Burstable);
        assert_eq!(r.cpu_shares, 102);
        assert_eq!(r.cpu_quota, Some((50_000, 100_000)));
        assert_eq!(r.memory_limit, None);
        assert_eq!(r.pids_limit, Some(1024));
        // BestEffort.
        let e = pod(json!([c(json!({}))]));
        let r = pod_resources(&e, None);
        assert_eq!((r.cpu_shares, r.cpu_quota, r.memory_limit), (2, None, None));
        // Init containers: the max of init vs. the sum of app containers (+ sidecars).
        let mut i = pod(json!([c(json!({"requests": {"cpu": "100m"}}))]));
        let spec = i.spec.as_mut().unwrap();
        spec.init_containers = Some(vec![
            serde_json::from_value(
                json!({"name": "init", "image": "x", "resources": {"requests": {"cpu": "500m"}}}),
            )
            .unwrap(),
        ]);
        assert_eq!(pod_resources(&i, None).cpu_shares, 512);
        let spec = i.spec.as_mut().unwrap();
        spec.init_containers = Some(vec![
            serde_json::from_value(json!({"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "200m"}}})).unwrap(),
        ]);
        assert_eq!(pod_resources(&i, None).cpu_shares, milli_cpu_to_shares(300));
    }

    #[test]
    fn names_and_writes() {
        assert_eq!(pod_cgroup_name(QosClass::Guaranteed, "u"), "kubepods/podu");
        assert_eq!(
            pod_cgroup_name(QosClass::Burstable, "u"),
            "kubepods/burstable/podu"
        );
        assert_eq!(
            pod_cgroup_name(QosClass::BestEffort, "u"),
            "kubepods/besteffort/podu"
        );
        assert_eq!(cgroupfs_path("/", "kubepods/podu"), "/kubepods/podu");
        assert_eq!(
            cgroupfs_path("/test-1/", "kubepods/podu"),
            "/test-1/kubepods/podu"
        );
        let w = v1_writes(512, Some((50_000, 100_000)), Some(1 << 20), Some(100));
        assert_eq!(
            w,
            vec![
                ("cpu", "cpu.shares", "512".to_string()),
                ("cpu", "cpu.cfs_period_us", "100000".to_string()),
                ("cpu", "cpu.cfs_quota_us", "50000".to_string()),
                ("memory", "memory.limit_in_bytes", "1048576".to_string()),
                ("pids", "pids.max", "100".to_string()),
            ]
        );
        let w = v2_writes(512, Some((50_000, 100_000)), Some(1 << 20), Some(-1));
        assert_eq!(
            w,
            vec![
                ("cpu", "cpu.weight", "20".to_string()),
                ("cpu", "cpu.max", "50000 100000".to_string()),
                ("memory", "memory.max", "1048576".to_string()),
                ("pids", "pids.max", "max".to_string()),
            ]
        );
    }

    fn fake_v1() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        for h in [
            "cpu", "cpuacct", "memory", "pids", "cpuset", "systemd", "unified",
        ] {
            std::fs::create_dir(d.path().join(h)).unwrap();
        }
        std::fs::write(d.path().join("cpuset/cpuset.cpus"), "0-1\n").unwrap();
        std::fs::write(d.path().join("cpuset/cpuset.mems"), "0\n").unwrap();
        d
    }

    #[test]
    fn v1_tree_in_a_temp_dir() {
        let d = fake_v1();
        let cg = CgroupFs::new(d.path(), "/").unwrap();
        assert_eq!(
            cg.layout(),
            &Layout::V1(
                ["cpu", "cpuacct", "cpuset", "memory", "pids", "systemd"]
                    .map(String::from)
                    .to_vec()
            )
        );
        cg.ensure_node(2000, 1 << 30).unwrap();
        let read = |p: &str| std::fs::read_to_string(d.path().join(p)).unwrap();
        assert_eq!(read("cpu/kubepods/cpu.shares"), "2048");
        assert_eq!(read("memory/kubepods/memory.limit_in_bytes"), "1073741824");
        assert_eq!(read("cpu/kubepods/besteffort/cpu.shares"), "2");
        assert_eq!(read("cpu/kubepods/burstable/cpu.shares"), "2");
        assert_eq!(read("cpuset/kubepods/cpuset.cpus"), "0-1");
        assert!(!d.path().join("unified/kubepods").exists());

        let b = pod(json!([c(
            json!({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "32Mi"}})
        )]));
        let parent = cg.ensure_pod(&b).unwrap();
        assert_eq!(parent, "/kubepods/burstable/podu-1");
        assert_eq!(read("cpu/kubepods/burstable/podu-1/cpu.shares"), "512");
        assert_eq!(
            read("cpu/kubepods/burstable/podu-1/cpu.cfs_quota_us"),
            "100000"
        );
        assert_eq!(
            read("memory/kubepods/burstable/podu-1/memory.limit_in_bytes"),
            "33554432"
        );
        assert_eq!(read("cpu/kubepods/burstable/cpu.shares"), "512");
        assert!(d.path().join("systemd/kubepods/burstable/podu-1").is_dir());
        cg.remove_pod(&b).unwrap();
        assert!(!d.path().join("cpu/kubepods/burstable/podu-1").exists());
        assert!(!d.path().join("memory/kubepods/burstable/podu-1").exists());
        assert_eq!(read("cpu/kubepods/burstable/cpu.shares"), "2");
        // Removing again is fine.
        cg.remove_pod(&b).unwrap();

        let mut g = pod(json!([c(
            json!({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}})
        )]));
        g.metadata.uid = Some("u-2".into());
        assert_eq!(cg.ensure_pod(&g).unwrap(), "/kubepods/podu-2");
        let cg2 = CgroupFs::new(d.path(), "/test-root").unwrap();
        let mut e = pod(json!([c(json!({}))]));
        e.metadata.uid = Some("u-3".into());
        assert_eq!(
            cg2.ensure_pod(&e).unwrap(),
            "/test-root/kubepods/besteffort/podu-3"
        );
        assert_eq!(
            read("cpu/test-root/kubepods/besteffort/podu-3/cpu.shares"),
            "2"
        );
        cg.remove_all().unwrap();
        assert!(!d.path().join("cpu/kubepods").exists());
    }

    #[test]
    fn v2_tree_in_a_temp_dir() {
        let d = tempfile::tempdir().unwrap();
        std::fs::write(
            d.path().join("cgroup.controllers"),
            "cpuset cpu io memory pids\n",
        )
        .unwrap();
        let cg = CgroupFs::new(d.path(), "/").unwrap();
        assert_eq!(cg.layout(), &Layout::V2);
        cg.ensure_node(1000, 1 << 30).unwrap();
        let read = |p: &str| std::fs::read_to_string(d.path().join(p)).unwrap();
        assert_eq!(read("kubepods/cpu.weight"), "39");
        assert_eq!(read("kubepods/memory.max"), "1073741824");
        let g = pod(json!([c(
            json!({"requests": {"cpu": "250m", "memory": "1Gi"}, "limits": {"cpu": "250m", "memory": "1Gi"}})
        )]));
        assert_eq!(cg.ensure_pod(&g).unwrap(), "/kubepods/podu-1");
        assert_eq!(read("kubepods/podu-1/cpu.max"), "25000 100000");
        assert_eq!(read("kubepods/podu-1/memory.max"), "1073741824");
        // The root's subtree_control was written (a plain file here: the last write wins).
        assert!(d.path().join("cgroup.subtree_control").exists());
        cg.remove_pod(&g).unwrap();
        assert!(!d.path().join("kubepods/podu-1").exists());
    }

    /// Creates and removes a pod cgroup in this machine's real cgroup filesystem, under a
    /// test-only root (never the real `kubepods`).
    #[test]
    fn real_cgroups() {
        let root = Path::new("/sys/fs/cgroup");
        let writable = rustix::process::geteuid().is_root() && root.join("cpu").exists()
            || root.join("cgroup.controllers").exists() && rustix::process::geteuid().is_root();
        if !writable {
            eprintln!("skipping: not root or no cgroup filesystem at /sys/fs/cgroup");
            return;
        }
        let test_root = format!("/rkube-test-cgroups-{}", std::process::id());
        let cg = CgroupFs::new(root, &test_root).unwrap();
        struct Cleanup<'a>(&'a CgroupFs, String);
        impl Drop for Cleanup<'_> {
            fn drop(&mut self) {
                let _ = self.0.remove_all();
                for d in self.0.dirs("") {
                    let _ = std::fs::remove_dir(d);
                }
                let _ = &self.1;
            }
        }
        let _cleanup = Cleanup(&cg, test_root.clone());
        cg.ensure_node(1000, 512 << 20).unwrap();
        let p = pod(json!([c(
            json!({"requests": {"cpu": "100m", "memory": "16Mi"}, "limits": {"cpu": "200m", "memory": "32Mi"}})
        )]));
        let parent = cg.ensure_pod(&p).unwrap();
        assert_eq!(parent, format!("{test_root}/kubepods/burstable/podu-1"));
        match cg.layout() {
            Layout::V1(_) => {
                let dir = root.join("cpu").join(parent.trim_start_matches('/'));
                assert_eq!(
                    std::fs::read_to_string(dir.join("cpu.shares"))
                        .unwrap()
                        .trim(),
                    "102"
                );
                assert_eq!(
                    std::fs::read_to_string(dir.join("cpu.cfs_quota_us"))
                        .unwrap()
                        .trim(),
                    "20000"
                );
                let mem = root.join("memory").join(parent.trim_start_matches('/'));
                assert_eq!(
                    std::fs::read_to_string(mem.join("memory.limit_in_bytes"))
                        .unwrap()
                        .trim(),
                    "33554432"
                );
            }
            Layout::V2 => {
                let dir = root.join(parent.trim_start_matches('/'));
                assert_eq!(
                    std::fs::read_to_string(dir.join("cpu.max")).unwrap().trim(),
                    "20000 100000"
                );
            }
        }
        cg.remove_pod(&p).unwrap();
        for d in cg.dirs(&pod_cgroup_name(QosClass::Burstable, "u-1")) {
            assert!(!d.exists(), "{} left", d.display());
        }
    }
}
