//! The Node object and its status as pure functions of (config, host facts, runtime
//! facts, the previous node, now) — upstream's `initialNode` (`kubelet_node_status.go`)
//! and the setters of `pkg/kubelet/nodestatus/setters.go`, in upstream's order:
//! addresses, machine info (capacity/allocatable, ids), version info, daemon endpoints,
//! images, OS/arch, runtime handlers and features, then the MemoryPressure,
//! DiskPressure, PIDPressure and Ready conditions.

use std::collections::BTreeMap;

use cri::v1;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ContainerImage, DaemonEndpoint, Node, NodeAddress, NodeCondition, NodeDaemonEndpoints,
    NodeFeatures, NodeRuntimeHandler, NodeRuntimeHandlerFeatures, NodeSpec, NodeStatus,
    NodeSwapStatus, NodeSystemInfo,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde_json::{Map, Value};

use super::host::HostFacts;
use crate::KubeletConfig;

/// The kubelet's version: the one the API server reports as its `gitVersion`.
pub const KUBELET_VERSION: &str = concat!("v1.33.0+rkube.", env!("CARGO_PKG_VERSION"));

/// Upstream's default hard eviction threshold `memory.available<100Mi`, reserved from
/// allocatable memory.
pub const EVICTION_HARD_MEMORY_BYTES: u64 = 100 << 20;
/// Upstream's default hard eviction threshold `nodefs.available<10%` (a float32, as
/// upstream's `ThresholdValue.Percentage`), reserved from allocatable ephemeral storage.
pub const EVICTION_HARD_NODEFS_PERCENT: f32 = 0.1;

/// How long a runtime may go without a successful `Status` before the node is not ready
/// (upstream's `baseRuntimeSyncThreshold`).
pub const RUNTIME_SYNC_THRESHOLD: jiff::SignedDuration = jiff::SignedDuration::from_secs(120);

/// Upstream's `maxImagesInNodeStatus` default (`nodeStatusMaxImages`).
pub const MAX_IMAGES_IN_NODE_STATUS: usize = 50;
/// Upstream's `MaxNamesPerImageInNodeStatus`.
pub const MAX_NAMES_PER_IMAGE: usize = 5;

/// The annotation telling the attach/detach controller it manages this node's volumes.
pub const CONTROLLER_MANAGED_ATTACH_DETACH: &str =
    "volumes.kubernetes.io/controller-managed-attach-detach";

/// The labels the kubelet owns on its Node (upstream's `updateDefaultLabels` list).
pub const DEFAULT_LABELS: &[&str] = &[
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "kubernetes.io/hostname",
    "node.kubernetes.io/instance-type",
    "beta.kubernetes.io/instance-type",
    "kubernetes.io/os",
    "kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/arch",
];

/// What the kubelet knows of its runtime's health (upstream's `runtimeState`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeState {
    /// The last time `Status` said the runtime is ready.
    pub last_sync: Option<Timestamp>,
    /// `container runtime not ready: …` while `RuntimeReady` is false.
    pub runtime_error: Option<String>,
    /// `container runtime network not ready: …` while `NetworkReady` is false.
    pub network_error: Option<String>,
}

/// A runtime condition as upstream's `RuntimeCondition.String()`; a missing one is `<nil>`.
fn condition_text(c: Option<&v1::RuntimeCondition>) -> String {
    match c {
        Some(c) => format!(
            "{}={} reason:{} message:{}",
            c.r#type, c.status, c.reason, c.message
        ),
        None => "<nil>".to_string(),
    }
}

impl RuntimeState {
    /// Folds in a CRI `Status` answer (upstream's `updateRuntimeUp`). A failed call
    /// changes nothing: the sync time ages until the runtime counts as down.
    pub fn observe(&mut self, status: &v1::StatusResponse, now: Timestamp) {
        let find = |t: &str| {
            status
                .status
                .as_ref()
                .and_then(|s| s.conditions.iter().find(|c| c.r#type == t))
        };
        let network = find("NetworkReady");
        self.network_error = match network {
            Some(c) if c.status => None,
            other => Some(format!(
                "container runtime network not ready: {}",
                condition_text(other)
            )),
        };
        let runtime = find("RuntimeReady");
        match runtime {
            Some(c) if c.status => {
                self.runtime_error = None;
                self.last_sync = Some(now);
            }
            other => {
                self.runtime_error = Some(format!(
                    "container runtime not ready: {}",
                    condition_text(other)
                ));
            }
        }
    }

    /// The errors that make the node not ready (upstream's `runtimeErrors` then
    /// `networkErrors`).
    pub fn errors(&self, now: Timestamp) -> Vec<String> {
        let mut errs = Vec::new();
        match self.last_sync {
            None => errs.push("container runtime status check may not have completed yet".into()),
            Some(t) if t + RUNTIME_SYNC_THRESHOLD <= now => {
                errs.push("container runtime is down".into())
            }
            Some(_) => {}
        }
        errs.extend(self.runtime_error.clone());
        errs.extend(self.network_error.clone());
        errs
    }
}

/// What the runtime contributes to the node status, gathered by the caller.
#[derive(Debug, Clone, Default)]
pub struct RuntimeFacts {
    pub state: RuntimeState,
    /// `(runtime_name, runtime_version)` from CRI `Version`; `None` when it failed (the
    /// reported version is then left as it was).
    pub version: Option<(String, String)>,
    /// CRI `ListImages` (empty when it failed, as upstream).
    pub images: Vec<v1::Image>,
    /// From CRI `Status`: the runtime handlers and features (`None`: not known).
    pub status: Option<v1::StatusResponse>,
}

/// The eviction manager's verdicts (always false here: there is no eviction manager yet).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Pressures {
    pub memory: bool,
    pub disk: bool,
    pub pid: bool,
}

/// A quantity in binary SI canonical form (`resource.NewQuantity(n, BinarySI)`): the
/// largest power of 1024 that divides `n` exactly, plain below 1024.
pub fn binary_si(n: u64) -> Quantity {
    const SUFFIXES: [&str; 6] = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"];
    if n < 1024 {
        return Quantity(n.to_string());
    }
    let mut value = n;
    let mut exp = 0;
    while exp < SUFFIXES.len() && value.is_multiple_of(1024) {
        value /= 1024;
        exp += 1;
    }
    match exp {
        0 => Quantity(n.to_string()),
        e => Quantity(format!("{value}{}", SUFFIXES[e - 1])),
    }
}

/// A quantity in decimal SI (a plain integer).
fn decimal(n: u64) -> Quantity {
    Quantity(n.to_string())
}

/// `hugepages-<size>` with the page size in binary SI (`hugepages-2Mi`).
fn hugepage_resource(page_size: u64) -> String {
    format!("hugepages-{}", binary_si(page_size).0)
}

/// The capacity of the node (cAdvisor's `CapacityFromMachineInfo` plus pods and
/// ephemeral storage).
pub fn capacity(cfg: &KubeletConfig, host: &HostFacts) -> BTreeMap<String, u64> {
    let mut cap = BTreeMap::new();
    cap.insert("cpu".to_string(), u64::from(host.cpus));
    cap.insert("memory".to_string(), host.memory_bytes);
    cap.insert("pods".to_string(), u64::from(cfg.max_pods));
    cap.insert(
        "ephemeral-storage".to_string(),
        host.ephemeral_storage_bytes,
    );
    for (size, total) in &host.hugepages {
        cap.insert(hugepage_resource(*size), *total);
    }
    cap
}

/// Capacity minus the hard eviction reservations and huge pages (upstream's MachineInfo
/// setter with `GetNodeAllocatableReservation`), never below zero.
pub fn allocatable(capacity: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut alloc = capacity.clone();
    if let Some(m) = alloc.get_mut("memory") {
        *m = m.saturating_sub(EVICTION_HARD_MEMORY_BYTES);
    }
    if let Some(s) = alloc.get_mut("ephemeral-storage") {
        // As upstream: int64(float64(capacity) * float64(float32 percentage)).
        let reserved = (*s as f64 * f64::from(EVICTION_HARD_NODEFS_PERCENT)) as u64;
        *s = s.saturating_sub(reserved);
    }
    let huge: u64 = capacity
        .iter()
        .filter(|(k, _)| k.starts_with("hugepages-"))
        .map(|(_, v)| *v)
        .sum();
    if let Some(m) = alloc.get_mut("memory") {
        *m = m.saturating_sub(huge);
    }
    alloc
}

fn quantities(cfg_values: &BTreeMap<String, u64>) -> BTreeMap<String, Quantity> {
    cfg_values
        .iter()
        .map(|(k, v)| {
            let q = match k.as_str() {
                "cpu" | "pods" => decimal(*v),
                _ => binary_si(*v),
            };
            (k.clone(), q)
        })
        .collect()
}

/// The node status images (upstream's `Images` setter): largest first, at most 50, each
/// with its digests then tags, at most 5 names.
pub fn node_images(images: &[v1::Image]) -> Vec<ContainerImage> {
    let mut sorted: Vec<&v1::Image> = images.iter().collect();
    sorted.sort_by(|a, b| b.size.cmp(&a.size).then_with(|| a.id.cmp(&b.id)));
    sorted
        .into_iter()
        .take(MAX_IMAGES_IN_NODE_STATUS)
        .map(|i| {
            let mut names: Vec<String> = i.repo_digests.clone();
            names.extend(i.repo_tags.iter().cloned());
            names.truncate(MAX_NAMES_PER_IMAGE);
            ContainerImage {
                names: Some(names),
                size_bytes: i64::try_from(i.size).ok(),
            }
        })
        .collect()
}

/// `now` to whole seconds (what a `metav1.Time` keeps).
pub fn second(now: Timestamp) -> Timestamp {
    Timestamp::from_second(now.as_second()).unwrap_or(now)
}

/// The labels a new Node registers with: the kubelet's own, then `--node-labels`.
pub fn node_labels(cfg: &KubeletConfig) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::new();
    labels.insert("kubernetes.io/hostname".into(), cfg.node_name.clone());
    for (k, v) in [
        ("kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("beta.kubernetes.io/arch", "amd64"),
    ] {
        labels.insert(k.into(), v.into());
    }
    for (k, v) in &cfg.node_labels {
        labels.insert(k.clone(), v.clone());
    }
    labels
}

/// The Node the kubelet registers (upstream's `initialNode`), its status already set.
pub fn initial_node(
    cfg: &KubeletConfig,
    host: &HostFacts,
    runtime: &RuntimeFacts,
    pressures: Pressures,
    now: Timestamp,
) -> Node {
    let mut annotations = BTreeMap::new();
    annotations.insert(CONTROLLER_MANAGED_ATTACH_DETACH.to_string(), "true".into());
    let mut node = Node {
        metadata: ObjectMeta {
            name: Some(cfg.node_name.clone()),
            labels: Some(node_labels(cfg)),
            annotations: Some(annotations),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: (!cfg.register_with_taints.is_empty())
                .then(|| cfg.register_with_taints.clone()),
            ..NodeSpec::default()
        }),
        status: None,
    };
    set_node_status(&mut node, cfg, host, runtime, pressures, now);
    node
}

/// Runs every status setter on `node` (upstream's `setNodeStatus`): the previous
/// status's condition transition times are kept when a condition's status is unchanged.
pub fn set_node_status(
    node: &mut Node,
    cfg: &KubeletConfig,
    host: &HostFacts,
    runtime: &RuntimeFacts,
    pressures: Pressures,
    now: Timestamp,
) {
    let now = second(now);
    let status = node.status.get_or_insert_with(NodeStatus::default);

    // NodeAddress: InternalIP then Hostname.
    status.addresses = Some(vec![
        NodeAddress {
            type_: "InternalIP".into(),
            address: cfg.node_ip.to_string(),
        },
        NodeAddress {
            type_: "Hostname".into(),
            address: cfg.node_name.clone(),
        },
    ]);

    // MachineInfo: capacity, allocatable, ids.
    let cap = capacity(cfg, host);
    let alloc = allocatable(&cap);
    let mut capacity_q = status.capacity.take().unwrap_or_default();
    // Huge page sizes the machine no longer has are dropped.
    capacity_q.retain(|k, _| !k.starts_with("hugepages-") || cap.contains_key(k));
    capacity_q.extend(quantities(&cap));
    let mut alloc_q = status.allocatable.take().unwrap_or_default();
    alloc_q.retain(|k, _| capacity_q.contains_key(k));
    alloc_q.extend(quantities(&alloc));
    status.capacity = Some(capacity_q);
    status.allocatable = Some(alloc_q);

    let info = status.node_info.get_or_insert_with(NodeSystemInfo::default);
    info.machine_id = host.machine_id.clone();
    info.system_uuid = host.system_uuid.clone();
    info.boot_id = host.boot_id.clone();
    info.swap = Some(NodeSwapStatus {
        capacity: i64::try_from(host.swap_bytes).ok(),
    });
    // VersionInfo.
    info.kernel_version = host.kernel_version.clone();
    info.os_image = host.os_image.clone();
    if let Some((name, version)) = &runtime.version {
        info.container_runtime_version = format!("{name}://{version}");
    }
    info.kubelet_version = KUBELET_VERSION.to_string();
    // DisableNodeKubeProxyVersion is on in 1.33: the field stays empty.
    info.kube_proxy_version = String::new();
    // GoRuntime.
    info.operating_system = "linux".into();
    info.architecture = "amd64".into();

    // DaemonEndpoints.
    status.daemon_endpoints = Some(NodeDaemonEndpoints {
        kubelet_endpoint: Some(DaemonEndpoint {
            port: i32::from(cfg.port),
        }),
    });

    // Images.
    status.images = Some(node_images(&runtime.images));

    // RuntimeHandlers and Features, when the runtime's status is known.
    if let Some(st) = &runtime.status {
        status.runtime_handlers = Some(
            st.runtime_handlers
                .iter()
                .map(|h| NodeRuntimeHandler {
                    name: Some(h.name.clone()),
                    features: h.features.as_ref().map(|f| NodeRuntimeHandlerFeatures {
                        recursive_read_only_mounts: Some(f.recursive_read_only_mounts),
                        user_namespaces: Some(f.user_namespaces),
                    }),
                })
                .collect(),
        );
        status.features = Some(NodeFeatures {
            supplemental_groups_policy: Some(
                st.features
                    .as_ref()
                    .is_some_and(|f| f.supplemental_groups_policy),
            ),
        });
    }

    // Conditions.
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    pressure_condition(
        conditions,
        "MemoryPressure",
        pressures.memory,
        (
            "KubeletHasInsufficientMemory",
            "kubelet has insufficient memory available",
        ),
        (
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        now,
    );
    pressure_condition(
        conditions,
        "DiskPressure",
        pressures.disk,
        ("KubeletHasDiskPressure", "kubelet has disk pressure"),
        ("KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        now,
    );
    pressure_condition(
        conditions,
        "PIDPressure",
        pressures.pid,
        (
            "KubeletHasInsufficientPID",
            "kubelet has insufficient PID available",
        ),
        (
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available",
        ),
        now,
    );
    let mut errors = runtime.state.errors(now);
    let caps = status.capacity.as_ref();
    let missing: Vec<&str> = ["cpu", "memory", "pods"]
        .into_iter()
        .filter(|r| {
            caps.and_then(|c| c.get(*r))
                .is_none_or(|q| q.0 == "0" || q.0.is_empty())
        })
        .collect();
    if !missing.is_empty() {
        errors.push(format!(
            "missing node capacity for resources: {}",
            missing.join(", ")
        ));
    }
    let conditions = status.conditions.get_or_insert_with(Vec::new);
    ready_condition(conditions, &errors, now);
}

fn time(t: Timestamp) -> Option<Time> {
    Some(Time(t))
}

/// Upstream's `MemoryPressureCondition` & co.: heartbeat always, status/reason/message
/// and transition time only on a change.
fn pressure_condition(
    conditions: &mut Vec<NodeCondition>,
    kind: &str,
    pressure: bool,
    on: (&str, &str),
    off: (&str, &str),
    now: Timestamp,
) {
    let index = match conditions.iter().position(|c| c.type_ == kind) {
        Some(i) => i,
        None => {
            conditions.push(NodeCondition {
                type_: kind.to_string(),
                status: "Unknown".into(),
                ..NodeCondition::default()
            });
            conditions.len() - 1
        }
    };
    let c = &mut conditions[index];
    c.last_heartbeat_time = time(now);
    let (want, (reason, message)) = if pressure {
        ("True", on)
    } else {
        ("False", off)
    };
    if c.status != want {
        c.status = want.into();
        c.reason = Some(reason.into());
        c.message = Some(message.into());
        c.last_transition_time = time(now);
    }
}

/// Upstream's `ReadyCondition`: `True`/`KubeletReady` without errors, else
/// `False`/`KubeletNotReady` with the errors aggregated; the transition time kept when the
/// status did not change.
fn ready_condition(conditions: &mut Vec<NodeCondition>, errors: &[String], now: Timestamp) {
    let mut new = if errors.is_empty() {
        NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
            reason: Some("KubeletReady".into()),
            message: Some("kubelet is posting ready status".into()),
            last_heartbeat_time: time(now),
            last_transition_time: None,
        }
    } else {
        let message = match errors {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        NodeCondition {
            type_: "Ready".into(),
            status: "False".into(),
            reason: Some("KubeletNotReady".into()),
            message: Some(message),
            last_heartbeat_time: time(now),
            last_transition_time: None,
        }
    };
    match conditions.iter_mut().find(|c| c.type_ == "Ready") {
        Some(c) => {
            new.last_transition_time = if c.status == new.status {
                c.last_transition_time.clone()
            } else {
                time(now)
            };
            *c = new;
        }
        None => {
            new.last_transition_time = time(now);
            conditions.push(new);
        }
    }
}

/// Whether a node status differs in anything but heartbeat times (upstream's
/// `nodeStatusHasChanged`).
pub fn status_changed(old: Option<&NodeStatus>, new: Option<&NodeStatus>) -> bool {
    fn normalized(s: &NodeStatus) -> Value {
        let mut s = s.clone();
        let mut conds = s.conditions.take().unwrap_or_default();
        for c in &mut conds {
            c.last_heartbeat_time = None;
        }
        conds.sort_by(|a, b| a.type_.cmp(&b.type_));
        let mut v = serde_json::to_value(&s).unwrap_or(Value::Null);
        v["conditions"] = serde_json::to_value(&conds).unwrap_or(Value::Null);
        v
    }
    match (old, new) {
        (None, None) => false,
        (Some(a), Some(b)) => normalized(a) != normalized(b),
        _ => true,
    }
}

/// Brings an already registered Node in line with the one the kubelet would register
/// (upstream's `reconcileCMADAnnotationWithExistingNode`, `updateDefaultLabels` and
/// `reconcileHugePageResource`). Everything else — `spec.podCIDR`, taints and labels
/// set by others — is kept. Returns the updated node when something changed.
pub fn reconcile_existing(initial: &Node, existing: &Node) -> Option<Node> {
    let mut node = existing.clone();
    let mut changed = false;

    // The controller-managed attach/detach annotation.
    let want = initial
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(CONTROLLER_MANAGED_ATTACH_DETACH))
        .cloned();
    let annotations = node.metadata.annotations.get_or_insert_with(BTreeMap::new);
    if annotations.get(CONTROLLER_MANAGED_ATTACH_DETACH) != want.as_ref() {
        match want {
            Some(v) => annotations.insert(CONTROLLER_MANAGED_ATTACH_DETACH.into(), v),
            None => annotations.remove(CONTROLLER_MANAGED_ATTACH_DETACH),
        };
        changed = true;
    }
    if annotations.is_empty() {
        node.metadata.annotations = None;
    }

    // Default labels.
    let initial_labels = initial.metadata.labels.clone().unwrap_or_default();
    let labels = node.metadata.labels.get_or_insert_with(BTreeMap::new);
    for key in DEFAULT_LABELS {
        let Some(value) = initial_labels.get(*key) else {
            continue;
        };
        if labels.get(*key) != Some(value) {
            changed = true;
            if value.is_empty() {
                labels.remove(*key);
            } else {
                labels.insert((*key).to_string(), value.clone());
            }
        }
    }

    // Huge pages: the sizes and amounts of the machine.
    let empty = BTreeMap::new();
    let init_status = initial.status.as_ref();
    let init_cap = init_status
        .and_then(|s| s.capacity.as_ref())
        .unwrap_or(&empty);
    let init_alloc = init_status
        .and_then(|s| s.allocatable.as_ref())
        .unwrap_or(&empty);
    let status = node.status.get_or_insert_with(NodeStatus::default);
    let cap = status.capacity.get_or_insert_with(BTreeMap::new);
    let alloc = status.allocatable.get_or_insert_with(BTreeMap::new);
    for (k, v) in init_cap.iter().filter(|(k, _)| k.starts_with("hugepages-")) {
        if cap.get(k) != Some(v) {
            cap.insert(k.clone(), v.clone());
            changed = true;
        }
        if let Some(a) = init_alloc.get(k)
            && alloc.get(k) != Some(a)
        {
            alloc.insert(k.clone(), a.clone());
            changed = true;
        }
    }
    let stale: Vec<String> = cap
        .keys()
        .filter(|k| k.starts_with("hugepages-") && !init_cap.contains_key(*k))
        .cloned()
        .collect();
    for k in stale {
        cap.remove(&k);
        alloc.remove(&k);
        changed = true;
    }
    changed.then_some(node)
}

/// An RFC 7386 merge patch turning `old` into `new` (only what changed; lists whole).
pub fn merge_patch(old: &Value, new: &Value) -> Value {
    match (old, new) {
        (Value::Object(a), Value::Object(b)) => {
            let mut patch = Map::new();
            for (k, v) in b {
                match a.get(k) {
                    Some(o) if o == v => {}
                    Some(o @ Value::Object(_)) if v.is_object() => {
                        patch.insert(k.clone(), merge_patch(o, v));
                    }
                    _ => {
                        patch.insert(k.clone(), v.clone());
                    }
                }
            }
            for k in a.keys() {
                if !b.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => new.clone(),
    }
}

/// The merge patches from `original` to `updated`: the metadata one for `nodes/<name>`,
/// the status one for `nodes/<name>/status` (`None` when that part did not change). The
/// spec is never patched.
///
/// Upstream's `PatchNodeStatus` sends both in one patch of the status subresource, whose
/// strategy only resets the spec; rkube's API server keeps labels and annotations on a
/// status write (as most status strategies do), so label and annotation fixes go to the
/// Node itself — which upstream's Node authorizer and NodeRestriction allow a kubelet for
/// its own labels.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NodePatches {
    pub metadata: Option<Value>,
    pub status: Option<Value>,
}

pub fn node_patches(original: &Node, updated: &Node) -> NodePatches {
    let part = |v: &Node, key: &str| -> Value {
        serde_json::to_value(v)
            .ok()
            .and_then(|mut j| j.get_mut(key).map(Value::take))
            .unwrap_or(Value::Null)
    };
    let diff = |key: &str| -> Option<Value> {
        let (old, new) = (part(original, key), part(updated, key));
        if old == new {
            return None;
        }
        let old = if old.is_null() {
            serde_json::json!({})
        } else {
            old
        };
        let mut p = Map::new();
        p.insert(key.to_string(), merge_patch(&old, &new));
        Some(Value::Object(p))
    };
    NodePatches {
        metadata: diff("metadata"),
        status: diff("status"),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cfg() -> KubeletConfig {
        let mut c = KubeletConfig::new(
            "node-a",
            "/var/lib/rkube/agent".into(),
            "10.0.0.7".parse().unwrap(),
        );
        c.node_labels = vec![("role".into(), "edge".into())];
        c
    }

    fn host() -> HostFacts {
        HostFacts {
            cpus: 2,
            memory_bytes: 24683656 * 1024,
            swap_bytes: 0,
            ephemeral_storage_bytes: 105_151_242_240,
            hugepages: vec![(2 << 20, 0), (1 << 30, 0)],
            machine_id: "m-1".into(),
            system_uuid: String::new(),
            boot_id: "b-1".into(),
            kernel_version: "6.1.0".into(),
            os_image: "Debian GNU/Linux 12 (bookworm)".into(),
        }
    }

    fn ready_status() -> v1::StatusResponse {
        let c = |t: &str| v1::RuntimeCondition {
            r#type: t.into(),
            status: true,
            ..Default::default()
        };
        v1::StatusResponse {
            status: Some(v1::RuntimeStatus {
                conditions: vec![c("RuntimeReady"), c("NetworkReady")],
            }),
            runtime_handlers: vec![v1::RuntimeHandler {
                name: "runc".into(),
                features: Some(v1::RuntimeHandlerFeatures {
                    recursive_read_only_mounts: true,
                    user_namespaces: false,
                }),
            }],
            ..Default::default()
        }
    }

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    fn runtime(now: Timestamp) -> RuntimeFacts {
        let mut state = RuntimeState::default();
        state.observe(&ready_status(), now);
        RuntimeFacts {
            state,
            version: Some(("containerd".into(), "1.6.20~ds1".into())),
            images: vec![
                v1::Image {
                    id: "sha256:small".into(),
                    repo_tags: vec!["pause:3.10".into()],
                    repo_digests: vec!["pause@sha256:1".into()],
                    size: 700_000,
                    ..Default::default()
                },
                v1::Image {
                    id: "sha256:big".into(),
                    repo_tags: vec!["nginx:1".into(), "nginx:latest".into()],
                    size: 70_000_000,
                    ..Default::default()
                },
            ],
            status: Some(ready_status()),
        }
    }

    fn cond<'a>(n: &'a Node, kind: &str) -> &'a NodeCondition {
        n.status
            .as_ref()
            .unwrap()
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == kind)
            .unwrap()
    }

    #[test]
    fn quantities_are_canonical() {
        assert_eq!(binary_si(0).0, "0");
        assert_eq!(binary_si(1000).0, "1000");
        assert_eq!(binary_si(2 << 20).0, "2Mi");
        assert_eq!(binary_si(1 << 30).0, "1Gi");
        assert_eq!(binary_si(24683656 * 1024).0, "24683656Ki");
        assert_eq!(binary_si(1025).0, "1025");
        assert_eq!(binary_si(94_636_118_016).0, "92418084Ki");
    }

    #[test]
    fn initial_node_as_upstream() {
        let now = t("2025-03-01T10:00:00.5Z");
        let mut c = cfg();
        c.register_with_taints = vec![k8s_openapi::api::core::v1::Taint {
            key: "dedicated".into(),
            effect: "NoSchedule".into(),
            value: Some("gpu".into()),
            time_added: None,
        }];
        let n = initial_node(&c, &host(), &runtime(now), Pressures::default(), now);
        let v = serde_json::to_value(&n).unwrap();
        assert_eq!(
            v["metadata"]["labels"],
            json!({
                "kubernetes.io/hostname": "node-a", "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
                "beta.kubernetes.io/arch": "amd64", "role": "edge",
            })
        );
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"volumes.kubernetes.io/controller-managed-attach-detach": "true"})
        );
        assert_eq!(
            v["spec"],
            json!({"taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]})
        );
        let st = &v["status"];
        assert_eq!(
            st["capacity"],
            json!({"cpu": "2", "memory": "24683656Ki", "pods": "110",
                "ephemeral-storage": "102686760Ki", "hugepages-2Mi": "0", "hugepages-1Gi": "0"})
        );
        // memory − 100Mi; storage − int64(float64(cap)·float64(float32(0.1))).
        assert_eq!(
            st["allocatable"],
            json!({"cpu": "2", "memory": "24581256Ki", "pods": "110",
                "ephemeral-storage": "94636117860", "hugepages-2Mi": "0", "hugepages-1Gi": "0"})
        );
        assert_eq!(
            st["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.7"},
                {"type": "Hostname", "address": "node-a"}])
        );
        assert_eq!(
            st["daemonEndpoints"],
            json!({"kubeletEndpoint": {"Port": 10250}})
        );
        let info = &st["nodeInfo"];
        assert_eq!(info["containerRuntimeVersion"], "containerd://1.6.20~ds1");
        assert_eq!(info["kubeletVersion"], KUBELET_VERSION);
        assert!(KUBELET_VERSION.starts_with("v1.33.0+rkube."));
        assert_eq!(info["machineID"], "m-1");
        assert_eq!(info["bootID"], "b-1");
        assert_eq!(info["osImage"], "Debian GNU/Linux 12 (bookworm)");
        assert_eq!(info["operatingSystem"], "linux");
        assert_eq!(info["architecture"], "amd64");
        assert_eq!(info["swap"], json!({"capacity": 0}));
        assert_eq!(
            st["images"],
            json!([{"names": ["nginx:1", "nginx:latest"], "sizeBytes": 70_000_000},
                {"names": ["pause@sha256:1", "pause:3.10"], "sizeBytes": 700_000}])
        );
        assert_eq!(
            st["runtimeHandlers"],
            json!([{"name": "runc", "features": {"recursiveReadOnlyMounts": true, "userNamespaces": false}}])
        );
        assert_eq!(st["features"], json!({"supplementalGroupsPolicy": false}));
        let conds = st["conditions"].as_array().unwrap();
        let types: Vec<&str> = conds.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        assert_eq!(
            conds[0],
            json!({"type": "MemoryPressure", "status": "False",
                "reason": "KubeletHasSufficientMemory", "message": "kubelet has sufficient memory available",
                "lastHeartbeatTime": "2025-03-01T10:00:00Z", "lastTransitionTime": "2025-03-01T10:00:00Z"})
        );
        assert_eq!(conds[1]["reason"], "KubeletHasNoDiskPressure");
        assert_eq!(conds[1]["message"], "kubelet has no disk pressure");
        assert_eq!(conds[2]["reason"], "KubeletHasSufficientPID");
        assert_eq!(conds[2]["message"], "kubelet has sufficient PID available");
        assert_eq!(
            conds[3],
            json!({"type": "Ready", "status": "True", "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": "2025-03-01T10:00:00Z", "lastTransitionTime": "2025-03-01T10:00:00Z"})
        );
    }

    #[test]
    fn ready_transitions_and_heartbeats() {
        let t0 = t("2025-03-01T10:00:00Z");
        let c = cfg();
        let mut rt = runtime(t0);
        let mut node = initial_node(&c, &host(), &rt, Pressures::default(), t0);
        let before = node.status.clone();

        // Ten seconds later, nothing changed: only heartbeats move.
        let t1 = t("2025-03-01T10:00:10Z");
        rt.state.observe(&ready_status(), t1);
        set_node_status(&mut node, &c, &host(), &rt, Pressures::default(), t1);
        assert!(!status_changed(before.as_ref(), node.status.as_ref()));
        let ready = cond(&node, "Ready");
        assert_eq!(ready.last_heartbeat_time, Some(Time(t1)));
        assert_eq!(ready.last_transition_time, Some(Time(t0)));

        // The network goes away.
        let t2 = t("2025-03-01T10:00:20Z");
        let mut st = ready_status();
        st.status.as_mut().unwrap().conditions[1] = v1::RuntimeCondition {
            r#type: "NetworkReady".into(),
            status: false,
            reason: "NetworkPluginNotReady".into(),
            message: "Network plugin returns error: cni plugin not initialized".into(),
        };
        rt.state.observe(&st, t2);
        let before = node.status.clone();
        set_node_status(&mut node, &c, &host(), &rt, Pressures::default(), t2);
        assert!(status_changed(before.as_ref(), node.status.as_ref()));
        let ready = cond(&node, "Ready");
        assert_eq!(ready.status, "False");
        assert_eq!(ready.reason.as_deref(), Some("KubeletNotReady"));
        assert_eq!(
            ready.message.as_deref(),
            Some(
                "container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized"
            )
        );
        assert_eq!(ready.last_transition_time, Some(Time(t2)));
        // The pressure conditions keep their transition time.
        assert_eq!(
            cond(&node, "MemoryPressure").last_transition_time,
            Some(Time(t0))
        );

        // Back: True again, new transition time.
        let t3 = t("2025-03-01T10:00:30Z");
        rt.state.observe(&ready_status(), t3);
        set_node_status(&mut node, &c, &host(), &rt, Pressures::default(), t3);
        let ready = cond(&node, "Ready");
        assert_eq!(ready.status, "True");
        assert_eq!(ready.last_transition_time, Some(Time(t3)));

        // Memory pressure.
        let t4 = t("2025-03-01T10:00:40Z");
        set_node_status(
            &mut node,
            &c,
            &host(),
            &rt,
            Pressures {
                memory: true,
                ..Pressures::default()
            },
            t4,
        );
        let m = cond(&node, "MemoryPressure");
        assert_eq!(m.status, "True");
        assert_eq!(m.reason.as_deref(), Some("KubeletHasInsufficientMemory"));
        assert_eq!(m.last_transition_time, Some(Time(t4)));
    }

    #[test]
    fn runtime_errors() {
        let t0 = t("2025-03-01T10:00:00Z");
        let mut s = RuntimeState::default();
        assert_eq!(
            s.errors(t0),
            ["container runtime status check may not have completed yet"]
        );
        // RuntimeReady false (and no NetworkReady at all).
        let st = v1::StatusResponse {
            status: Some(v1::RuntimeStatus {
                conditions: vec![v1::RuntimeCondition {
                    r#type: "RuntimeReady".into(),
                    status: false,
                    reason: "Broken".into(),
                    message: "x".into(),
                }],
            }),
            ..Default::default()
        };
        s.observe(&st, t0);
        assert_eq!(
            s.errors(t0),
            [
                "container runtime status check may not have completed yet",
                "container runtime not ready: RuntimeReady=false reason:Broken message:x",
                "container runtime network not ready: <nil>",
            ]
        );
        s.observe(&ready_status(), t0);
        assert!(s.errors(t0).is_empty());
        assert!(
            s.errors(t0 + jiff::SignedDuration::from_secs(119))
                .is_empty()
        );
        assert_eq!(
            s.errors(t0 + jiff::SignedDuration::from_secs(120)),
            ["container runtime is down"]
        );
        // A node without capacity is not ready either; several errors are bracketed.
        let c = cfg();
        let rt = RuntimeFacts::default();
        let n = initial_node(&c, &HostFacts::default(), &rt, Pressures::default(), t0);
        assert_eq!(
            cond(&n, "Ready").message.as_deref(),
            Some(
                "[container runtime status check may not have completed yet, missing node capacity for resources: cpu, memory]"
            )
        );
        // Without a runtime version the reported one is kept.
        assert_eq!(
            n.status
                .as_ref()
                .unwrap()
                .node_info
                .as_ref()
                .unwrap()
                .container_runtime_version,
            ""
        );
    }

    #[test]
    fn images_are_capped() {
        let images: Vec<v1::Image> = (0..60)
            .map(|i| v1::Image {
                id: format!("id{i}"),
                repo_tags: (0..4).map(|t| format!("img{i}:t{t}")).collect(),
                repo_digests: (0..3).map(|d| format!("img{i}@sha256:{d}")).collect(),
                size: i,
                ..Default::default()
            })
            .collect();
        let out = node_images(&images);
        assert_eq!(out.len(), 50);
        assert_eq!(out[0].size_bytes, Some(59));
        assert_eq!(out[49].size_bytes, Some(10));
        let names = out[0].names.as_ref().unwrap();
        assert_eq!(
            names,
            &[
                "img59@sha256:0",
                "img59@sha256:1",
                "img59@sha256:2",
                "img59:t0",
                "img59:t1"
            ]
        );
    }

    #[test]
    fn reconcile_keeps_what_others_set() {
        let now = t("2025-03-01T10:00:00Z");
        let c = cfg();
        let initial = initial_node(&c, &host(), &runtime(now), Pressures::default(), now);
        // Identical: nothing to do.
        assert!(reconcile_existing(&initial, &initial).is_none());
        let mut existing = initial.clone();
        existing.spec = Some(NodeSpec {
            pod_cidr: Some("10.42.3.0/24".into()),
            taints: Some(vec![k8s_openapi::api::core::v1::Taint {
                key: "node.kubernetes.io/not-ready".into(),
                effect: "NoSchedule".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        let labels = existing.metadata.labels.as_mut().unwrap();
        labels.insert("kubernetes.io/arch".into(), "arm64".into());
        labels.insert("custom".into(), "x".into());
        labels.remove("role");
        existing.metadata.annotations = None;
        let st = existing.status.as_mut().unwrap();
        st.capacity
            .as_mut()
            .unwrap()
            .insert("hugepages-32Mi".into(), Quantity("0".into()));
        st.capacity
            .as_mut()
            .unwrap()
            .insert("hugepages-2Mi".into(), Quantity("4Mi".into()));
        let got = reconcile_existing(&initial, &existing).unwrap();
        let labels = got.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["custom"], "x");
        // --node-labels are not default labels: not put back (as upstream).
        assert!(!labels.contains_key("role"));
        assert_eq!(
            got.metadata.annotations.as_ref().unwrap()[CONTROLLER_MANAGED_ATTACH_DETACH],
            "true"
        );
        assert_eq!(got.spec, existing.spec);
        let cap = got.status.as_ref().unwrap().capacity.as_ref().unwrap();
        assert!(!cap.contains_key("hugepages-32Mi"));
        assert_eq!(cap["hugepages-2Mi"].0, "0");
    }

    #[test]
    fn merge_patches() {
        let old = json!({"a": 1, "b": {"c": 2, "d": 3}, "e": [1, 2], "f": "x"});
        let new = json!({"a": 1, "b": {"c": 2, "d": 4}, "e": [1], "g": true});
        assert_eq!(
            merge_patch(&old, &new),
            json!({"b": {"d": 4}, "e": [1], "f": null, "g": true})
        );
        let now = t("2025-03-01T10:00:00Z");
        let c = cfg();
        let mut n = initial_node(&c, &host(), &runtime(now), Pressures::default(), now);
        n.spec = Some(NodeSpec {
            pod_cidr: Some("10.42.0.0/24".into()),
            ..Default::default()
        });
        assert_eq!(node_patches(&n, &n), NodePatches::default());
        let mut updated = n.clone();
        updated.spec = None;
        assert_eq!(
            node_patches(&n, &updated),
            NodePatches::default(),
            "spec is never patched"
        );
        let later = t("2025-03-01T10:00:10Z");
        set_node_status(
            &mut updated,
            &c,
            &host(),
            &runtime(later),
            Pressures::default(),
            later,
        );
        updated
            .metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("kubernetes.io/arch".into(), "arm64".into());
        let patches = node_patches(&n, &updated);
        assert_eq!(
            patches.metadata,
            Some(json!({"metadata": {"labels": {"kubernetes.io/arch": "arm64"}}}))
        );
        let p = patches.status.unwrap();
        assert!(p.get("spec").is_none() && p.get("metadata").is_none());
        assert_eq!(
            p["status"]["conditions"][3]["lastHeartbeatTime"],
            "2025-03-01T10:00:10Z"
        );
    }
}
