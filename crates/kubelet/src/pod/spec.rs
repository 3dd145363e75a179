//! The CRI configs of a pod's sandbox and containers, as upstream's
//! `generatePodSandboxConfig` / `generateContainerConfig` (+ `_linux.go`) build them:
//! pure functions of the pod, the container and what the caller resolved (environment,
//! mounts, DNS, cgroup parent).

use std::collections::HashMap;

use api::kinds::validate::quantity::Quantity;
use cri::v1;
use k8s_openapi::api::core::v1::{
    Container, Pod, PodSecurityContext, SeccompProfile, SecurityContext,
};

use super::runtime::*;

/// `MinShares` / `MaxShares` / `SharesPerCPU` / `MilliCPUToCPU` / `QuotaPeriod`.
const MIN_SHARES: i64 = 2;
const MAX_SHARES: i64 = 262_144;
const SHARES_PER_CPU: i64 = 1024;
const MILLI_CPU_TO_CPU: i64 = 1000;
const QUOTA_PERIOD: i64 = 100_000;
const MIN_QUOTA_PERIOD: i64 = 1000;
/// `guaranteedOOMScoreAdj` / `besteffortOOMScoreAdj`.
const GUARANTEED_OOM_SCORE_ADJ: i64 = -997;
const BESTEFFORT_OOM_SCORE_ADJ: i64 = 1000;
/// `scheduling.SystemCriticalPriority`.
const SYSTEM_CRITICAL_PRIORITY: i32 = 2_000_000_000;

/// The runtime's default masked and read-only paths (`securitycontext.defaultMaskedPaths`).
pub const DEFAULT_MASKED_PATHS: &[&str] = &[
    "/proc/asound",
    "/proc/acpi",
    "/proc/kcore",
    "/proc/keys",
    "/proc/latency_stats",
    "/proc/timer_list",
    "/proc/timer_stats",
    "/proc/sched_debug",
    "/proc/scsi",
    "/sys/firmware",
    "/sys/devices/virtual/powercap",
];
pub const DEFAULT_READONLY_PATHS: &[&str] = &[
    "/proc/bus",
    "/proc/fs",
    "/proc/irq",
    "/proc/sys",
    "/proc/sysrq-trigger",
];

pub fn pod_name(pod: &Pod) -> &str {
    pod.metadata.name.as_deref().unwrap_or_default()
}
pub fn pod_namespace(pod: &Pod) -> &str {
    pod.metadata.namespace.as_deref().unwrap_or_default()
}
pub fn pod_uid(pod: &Pod) -> &str {
    pod.metadata.uid.as_deref().unwrap_or_default()
}

/// `format.Pod`: `name_namespace(uid)`.
pub fn format_pod(pod: &Pod) -> String {
    format!("{}_{}({})", pod_name(pod), pod_namespace(pod), pod_uid(pod))
}

/// The container hash the kubelet stores in `io.kubernetes.container.hash` (upstream
/// hashes only the name and image since in-place updates: FNV-32a of their JSON).
pub fn container_hash(c: &Container) -> String {
    let json = serde_json::json!({"image": c.image.as_deref().unwrap_or_default(), "name": c.name});
    let mut h: u32 = 0x811c_9dc5;
    for b in json.to_string().as_bytes() {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    format!("{h:x}")
}

fn quantity(
    c: &Container,
    which: fn(
        &k8s_openapi::api::core::v1::ResourceRequirements,
    ) -> Option<
        &std::collections::BTreeMap<
            String,
            k8s_openapi::apimachinery::pkg::api::resource::Quantity,
        >,
    >,
    name: &str,
) -> Option<Quantity> {
    let r = c.resources.as_ref()?;
    let q = which(r)?.get(name)?;
    Quantity::parse(&q.0).ok()
}

pub fn request(c: &Container, name: &str) -> Option<Quantity> {
    quantity(c, |r| r.requests.as_ref(), name)
}
pub fn limit(c: &Container, name: &str) -> Option<Quantity> {
    quantity(c, |r| r.limits.as_ref(), name)
}

/// `ComputePodQOS` ([`api::qos`]): `Guaranteed`, `Burstable` or `BestEffort`.
pub fn qos_class(pod: &Pod) -> &'static str {
    api::qos::of_pod(pod).as_str()
}

/// `IsNodeCriticalPod`.
fn is_node_critical(pod: &Pod) -> bool {
    let spec = pod.spec.as_ref();
    spec.and_then(|s| s.priority)
        .is_some_and(|p| p >= SYSTEM_CRITICAL_PRIORITY)
        && spec.and_then(|s| s.priority_class_name.as_deref()) == Some("system-node-critical")
}

/// `GetContainerOOMScoreAdjust`.
pub fn oom_score_adj(pod: &Pod, c: &Container, memory_capacity: i64) -> i64 {
    if is_node_critical(pod) {
        return GUARANTEED_OOM_SCORE_ADJ;
    }
    match qos_class(pod) {
        "Guaranteed" => return GUARANTEED_OOM_SCORE_ADJ,
        "BestEffort" => return BESTEFFORT_OOM_SCORE_ADJ,
        _ => {}
    }
    let req = request(c, "memory").map_or(0, |q| q.value());
    let capacity = memory_capacity.max(1);
    let adj = 1000 - (1000i128 * i128::from(req) / i128::from(capacity)) as i64;
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ {
        return 1000 + GUARANTEED_OOM_SCORE_ADJ;
    }
    if adj == BESTEFFORT_OOM_SCORE_ADJ {
        return adj - 1;
    }
    adj
}

/// `MilliCPUToShares`.
pub fn milli_cpu_to_shares(milli: i64) -> i64 {
    if milli == 0 {
        return MIN_SHARES;
    }
    (milli * SHARES_PER_CPU / MILLI_CPU_TO_CPU).clamp(MIN_SHARES, MAX_SHARES)
}

/// `MilliCPUToQuota`.
pub fn milli_cpu_to_quota(milli: i64, period: i64) -> i64 {
    if milli == 0 {
        return 0;
    }
    (milli * period / MILLI_CPU_TO_CPU).max(MIN_QUOTA_PERIOD)
}

/// `generateLinuxContainerResources`.
pub fn container_resources(
    pod: &Pod,
    c: &Container,
    memory_capacity: i64,
) -> v1::LinuxContainerResources {
    let cpu_req = request(c, "cpu").map_or(0, |q| q.milli_value());
    let cpu_lim = limit(c, "cpu").map_or(0, |q| q.milli_value());
    let mem_lim = limit(c, "memory").map_or(0, |q| q.value());
    let shares = if cpu_req == 0 && cpu_lim != 0 {
        milli_cpu_to_shares(cpu_lim)
    } else {
        milli_cpu_to_shares(cpu_req)
    };
    let mut r = v1::LinuxContainerResources {
        cpu_shares: shares,
        memory_limit_in_bytes: mem_lim,
        oom_score_adj: oom_score_adj(pod, c, memory_capacity),
        ..Default::default()
    };
    if cpu_lim != 0 {
        r.cpu_period = QUOTA_PERIOD;
        r.cpu_quota = milli_cpu_to_quota(cpu_lim, QUOTA_PERIOD);
    }
    r
}

/// `GeneratePodHostNameAndDomain`: the hostname (`spec.hostname` or the pod name cut to
/// 63 characters) and the domain (`<subdomain>.<ns>.svc.<cluster domain>`).
pub fn hostname_and_domain(pod: &Pod, cluster_domain: &str) -> (String, String) {
    let spec = pod.spec.as_ref();
    let mut hostname = pod_name(pod).to_string();
    if hostname.len() > 63 {
        hostname.truncate(63);
        while hostname.ends_with(['-', '.']) {
            hostname.pop();
        }
    }
    if let Some(h) = spec
        .and_then(|s| s.hostname.as_deref())
        .filter(|h| !h.is_empty())
    {
        hostname = h.to_string();
    }
    let domain = match spec
        .and_then(|s| s.subdomain.as_deref())
        .filter(|s| !s.is_empty())
    {
        Some(sub) => format!("{sub}.{}.svc.{cluster_domain}", pod_namespace(pod)),
        None => String::new(),
    };
    (hostname, domain)
}

/// `<log dir>/<ns>_<name>_<uid>`.
pub fn pod_log_dir(log_root: &std::path::Path, pod: &Pod) -> String {
    log_root
        .join(format!(
            "{}_{}_{}",
            pod_namespace(pod),
            pod_name(pod),
            pod_uid(pod)
        ))
        .to_string_lossy()
        .into_owned()
}

fn protocol(p: Option<&str>) -> i32 {
    match p {
        Some("UDP") => v1::Protocol::Udp as i32,
        Some("SCTP") => v1::Protocol::Sctp as i32,
        _ => v1::Protocol::Tcp as i32,
    }
}

/// `getSeccompProfile`: the container's, else the pod's, else `Unconfined` (the kubelet's
/// `seccompDefault` is off).
fn seccomp(
    pod_sc: Option<&PodSecurityContext>,
    sc: Option<&SecurityContext>,
    root: &str,
) -> Option<v1::SecurityProfile> {
    let profile: Option<&SeccompProfile> = sc
        .and_then(|s| s.seccomp_profile.as_ref())
        .or_else(|| pod_sc.and_then(|s| s.seccomp_profile.as_ref()));
    let p = match profile {
        Some(p) => match p.type_.as_str() {
            "RuntimeDefault" => v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::RuntimeDefault as i32,
                localhost_ref: String::new(),
            },
            "Localhost" => v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::Localhost as i32,
                localhost_ref: std::path::Path::new(root)
                    .join(p.localhost_profile.as_deref().unwrap_or_default())
                    .to_string_lossy()
                    .into_owned(),
            },
            _ => v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::Unconfined as i32,
                localhost_ref: String::new(),
            },
        },
        None => v1::SecurityProfile {
            profile_type: v1::security_profile::ProfileType::Unconfined as i32,
            localhost_ref: String::new(),
        },
    };
    Some(p)
}

/// AppArmor: the container's profile, else the pod's; unset means the runtime's default.
fn apparmor(
    pod_sc: Option<&PodSecurityContext>,
    sc: Option<&SecurityContext>,
) -> Option<v1::SecurityProfile> {
    let p = sc
        .and_then(|s| s.app_armor_profile.as_ref())
        .or_else(|| pod_sc.and_then(|s| s.app_armor_profile.as_ref()))?;
    let t = match p.type_.as_str() {
        "Unconfined" => v1::security_profile::ProfileType::Unconfined,
        "Localhost" => v1::security_profile::ProfileType::Localhost,
        _ => v1::security_profile::ProfileType::RuntimeDefault,
    };
    Some(v1::SecurityProfile {
        profile_type: t as i32,
        localhost_ref: p.localhost_profile.clone().unwrap_or_default(),
    })
}

/// The namespace options of a pod (`namespacesForPod`).
pub fn namespace_options(pod: &Pod) -> v1::NamespaceOption {
    let spec = pod.spec.as_ref();
    let flag = |f: fn(&k8s_openapi::api::core::v1::PodSpec) -> Option<bool>| {
        spec.and_then(f).unwrap_or(false)
    };
    let node = v1::NamespaceMode::Node as i32;
    let pod_mode = v1::NamespaceMode::Pod as i32;
    v1::NamespaceOption {
        network: if flag(|s| s.host_network) {
            node
        } else {
            pod_mode
        },
        pid: if flag(|s| s.host_pid) {
            node
        } else if flag(|s| s.share_process_namespace) {
            pod_mode
        } else {
            v1::NamespaceMode::Container as i32
        },
        ipc: if flag(|s| s.host_ipc) { node } else { pod_mode },
        ..Default::default()
    }
}

fn privileged(c: &Container) -> bool {
    c.security_context
        .as_ref()
        .and_then(|s| s.privileged)
        .unwrap_or(false)
}

/// Supplemental groups of a pod: `fsGroup` then `supplementalGroups`.
fn supplemental_groups(pod_sc: Option<&PodSecurityContext>) -> Vec<i64> {
    let mut groups = Vec::new();
    if let Some(sc) = pod_sc {
        if let Some(g) = sc.fs_group {
            groups.push(g);
        }
        for g in sc.supplemental_groups.iter().flatten() {
            if !groups.contains(g) {
                groups.push(*g);
            }
        }
    }
    groups
}

/// What the sandbox config is made from besides the pod.
#[derive(Debug, Clone, Default)]
pub struct SandboxInputs {
    pub attempt: u32,
    pub cluster_domain: String,
    pub pod_log_root: std::path::PathBuf,
    pub dns: Option<v1::DnsConfig>,
    pub cgroup_parent: String,
    pub seccomp_profile_root: String,
}

/// `generatePodSandboxConfig`.
pub fn sandbox_config(pod: &Pod, inputs: &SandboxInputs) -> v1::PodSandboxConfig {
    let spec = pod.spec.as_ref();
    let pod_sc = spec.and_then(|s| s.security_context.as_ref());
    let (hostname, _) = hostname_and_domain(pod, &inputs.cluster_domain);
    let mut labels: HashMap<String, String> = pod
        .metadata
        .labels
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    labels.insert(LABEL_POD_NAME.into(), pod_name(pod).into());
    labels.insert(LABEL_POD_NAMESPACE.into(), pod_namespace(pod).into());
    labels.insert(LABEL_POD_UID.into(), pod_uid(pod).into());
    let annotations = pod
        .metadata
        .annotations
        .iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut port_mappings = Vec::new();
    for c in spec.map(|s| s.containers.as_slice()).unwrap_or(&[]) {
        for p in c.ports.iter().flatten() {
            port_mappings.push(v1::PortMapping {
                protocol: protocol(p.protocol.as_deref()),
                container_port: p.container_port,
                host_port: p.host_port.unwrap_or(0),
                host_ip: p.host_ip.clone().unwrap_or_default(),
            });
        }
    }
    let sysctls = pod_sc
        .and_then(|s| s.sysctls.as_ref())
        .map(|ss| {
            ss.iter()
                .map(|s| (s.name.clone(), s.value.clone()))
                .collect()
        })
        .unwrap_or_default();
    let any_privileged = spec.is_some_and(|s| {
        s.containers
            .iter()
            .chain(s.init_containers.iter().flatten())
            .any(privileged)
    });
    let security = v1::LinuxSandboxSecurityContext {
        namespace_options: Some(namespace_options(pod)),
        run_as_user: pod_sc
            .and_then(|s| s.run_as_user)
            .map(|value| v1::Int64Value { value }),
        run_as_group: pod_sc
            .and_then(|s| s.run_as_group)
            .map(|value| v1::Int64Value { value }),
        supplemental_groups: supplemental_groups(pod_sc),
        privileged: any_privileged,
        seccomp: seccomp(pod_sc, None, &inputs.seccomp_profile_root),
        apparmor: apparmor(pod_sc, None),
        selinux_options: pod_sc.and_then(|s| s.se_linux_options.as_ref()).map(|o| {
            v1::SeLinuxOption {
                user: o.user.clone().unwrap_or_default(),
                role: o.role.clone().unwrap_or_default(),
                r#type: o.type_.clone().unwrap_or_default(),
                level: o.level.clone().unwrap_or_default(),
            }
        }),
        ..Default::default()
    };
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: pod_name(pod).into(),
            uid: pod_uid(pod).into(),
            namespace: pod_namespace(pod).into(),
            attempt: inputs.attempt,
        }),
        hostname: if spec.and_then(|s| s.host_network).unwrap_or(false) {
            String::new()
        } else {
            hostname
        },
        log_directory: pod_log_dir(&inputs.pod_log_root, pod),
        dns_config: inputs.dns.clone(),
        port_mappings,
        labels,
        annotations,
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: inputs.cgroup_parent.clone(),
            security_context: Some(security),
            sysctls,
            ..Default::default()
        }),
        windows: None,
    }
}

/// `$(VAR)` expansion of one string (upstream's `third_party/forked/golang/expansion`):
/// `$$` is a literal `$`, an unknown or unterminated reference stays as written.
pub fn expand(input: &str, lookup: &dyn Fn(&str) -> Option<String>) -> String {
    let bytes = input.as_bytes();
    let mut out = String::with_capacity(input.len());
    let mut checkpoint = 0;
    let mut cursor = 0;
    while cursor < bytes.len() {
        if bytes[cursor] == b'$' && cursor + 1 < bytes.len() {
            out.push_str(&input[checkpoint..cursor]);
            let rest = &input[cursor + 1..];
            let (read, is_var, advance) = match rest.as_bytes()[0] {
                b'$' => ("$".to_string(), false, 1),
                b'(' => match rest[1..].find(')') {
                    Some(end) => (rest[1..1 + end].to_string(), true, end + 2),
                    None => ("$(".to_string(), false, 1),
                },
                _ => {
                    let ch = rest.chars().next().map(String::from).unwrap_or_default();
                    let n = ch.len();
                    (format!("${ch}"), false, n)
                }
            };
            if is_var {
                out.push_str(&lookup(&read).unwrap_or_else(|| format!("$({read})")));
            } else {
                out.push_str(&read);
            }
            cursor += advance;
            checkpoint = cursor + 1;
        }
        cursor += 1;
    }
    if checkpoint < input.len() {
        out.push_str(&input[checkpoint..]);
    }
    out
}

/// What a container config is made from besides the pod and the container.
#[derive(Debug, Clone, Default)]
pub struct ContainerInputs {
    pub restart_count: i32,
    /// The image reference to run (the image id the pull resolved, as upstream).
    pub image_ref: String,
    /// The resolved environment, in order.
    pub envs: Vec<(String, String)>,
    pub mounts: Vec<v1::Mount>,
    pub memory_capacity: i64,
    pub seccomp_profile_root: String,
    /// Whether this is an init container (labelled as such).
    pub init: bool,
}

/// `generateContainerConfig`.
pub fn container_config(pod: &Pod, c: &Container, inputs: &ContainerInputs) -> v1::ContainerConfig {
    let spec = pod.spec.as_ref();
    let pod_sc = spec.and_then(|s| s.security_context.as_ref());
    let sc = c.security_context.as_ref();
    let env_lookup = |name: &str| {
        inputs
            .envs
            .iter()
            .rev()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let command = c
        .command
        .iter()
        .flatten()
        .map(|s| expand(s, &env_lookup))
        .collect();
    let args = c
        .args
        .iter()
        .flatten()
        .map(|s| expand(s, &env_lookup))
        .collect();
    let mut labels = HashMap::new();
    labels.insert(LABEL_POD_NAME.to_string(), pod_name(pod).to_string());
    labels.insert(
        LABEL_POD_NAMESPACE.to_string(),
        pod_namespace(pod).to_string(),
    );
    labels.insert(LABEL_POD_UID.to_string(), pod_uid(pod).to_string());
    labels.insert(LABEL_CONTAINER_NAME.to_string(), c.name.clone());
    let mut annotations = HashMap::new();
    annotations.insert(ANN_CONTAINER_HASH.to_string(), container_hash(c));
    annotations.insert(
        ANN_RESTART_COUNT.to_string(),
        inputs.restart_count.to_string(),
    );
    annotations.insert(
        ANN_TERMINATION_MESSAGE_PATH.to_string(),
        c.termination_message_path
            .clone()
            .unwrap_or_else(|| "/dev/termination-log".into()),
    );
    annotations.insert(
        ANN_TERMINATION_MESSAGE_POLICY.to_string(),
        c.termination_message_policy
            .clone()
            .unwrap_or_else(|| "File".into()),
    );
    if let Some(g) = spec.and_then(|s| s.termination_grace_period_seconds) {
        annotations.insert(ANN_GRACE_PERIOD.to_string(), g.to_string());
    }
    if let Some(pre_stop) = c.lifecycle.as_ref().and_then(|l| l.pre_stop.as_ref())
        && let Ok(json) = serde_json::to_string(pre_stop)
    {
        annotations.insert(ANN_PRE_STOP.to_string(), json);
    }
    if let Some(ports) = c.ports.as_ref().filter(|p| !p.is_empty())
        && let Ok(json) = serde_json::to_string(ports)
    {
        annotations.insert(ANN_PORTS.to_string(), json);
    }
    let is_privileged = privileged(c);
    let caps = sc
        .and_then(|s| s.capabilities.as_ref())
        .map(|caps| v1::Capability {
            add_capabilities: caps.add.clone().unwrap_or_default(),
            drop_capabilities: caps.drop.clone().unwrap_or_default(),
            add_ambient_capabilities: Vec::new(),
        });
    let unmasked = sc.and_then(|s| s.proc_mount.as_deref()) == Some("Unmasked");
    let (masked, readonly) = if is_privileged || unmasked {
        (Vec::new(), Vec::new())
    } else {
        (
            DEFAULT_MASKED_PATHS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
            DEFAULT_READONLY_PATHS
                .iter()
                .map(|s| (*s).to_string())
                .collect(),
        )
    };
    let security = v1::LinuxContainerSecurityContext {
        capabilities: caps,
        privileged: is_privileged,
        namespace_options: Some(namespace_options(pod)),
        selinux_options: sc
            .and_then(|s| s.se_linux_options.as_ref())
            .or_else(|| pod_sc.and_then(|s| s.se_linux_options.as_ref()))
            .map(|o| v1::SeLinuxOption {
                user: o.user.clone().unwrap_or_default(),
                role: o.role.clone().unwrap_or_default(),
                r#type: o.type_.clone().unwrap_or_default(),
                level: o.level.clone().unwrap_or_default(),
            }),
        run_as_user: sc
            .and_then(|s| s.run_as_user)
            .or_else(|| pod_sc.and_then(|s| s.run_as_user))
            .map(|value| v1::Int64Value { value }),
        run_as_group: sc
            .and_then(|s| s.run_as_group)
            .or_else(|| pod_sc.and_then(|s| s.run_as_group))
            .map(|value| v1::Int64Value { value }),
        readonly_rootfs: sc
            .and_then(|s| s.read_only_root_filesystem)
            .unwrap_or(false),
        supplemental_groups: supplemental_groups(pod_sc),
        no_new_privs: sc.and_then(|s| s.allow_privilege_escalation) == Some(false),
        masked_paths: masked,
        readonly_paths: readonly,
        seccomp: if is_privileged {
            Some(v1::SecurityProfile {
                profile_type: v1::security_profile::ProfileType::Unconfined as i32,
                localhost_ref: String::new(),
            })
        } else {
            seccomp(pod_sc, sc, &inputs.seccomp_profile_root)
        },
        apparmor: apparmor(pod_sc, sc),
        ..Default::default()
    };
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: c.name.clone(),
            attempt: u32::try_from(inputs.restart_count).unwrap_or(0),
        }),
        image: Some(v1::ImageSpec {
            image: if inputs.image_ref.is_empty() {
                c.image.clone().unwrap_or_default()
            } else {
                inputs.image_ref.clone()
            },
            user_specified_image: c.image.clone().unwrap_or_default(),
            ..Default::default()
        }),
        command,
        args,
        working_dir: c.working_dir.clone().unwrap_or_default(),
        envs: inputs
            .envs
            .iter()
            .map(|(k, v)| v1::KeyValue {
                key: k.clone(),
                value: v.clone(),
            })
            .collect(),
        mounts: inputs.mounts.clone(),
        devices: Vec::new(),
        labels,
        annotations,
        log_path: format!("{}/{}.log", c.name, inputs.restart_count),
        stdin: c.stdin.unwrap_or(false),
        stdin_once: c.stdin_once.unwrap_or(false),
        tty: c.tty.unwrap_or(false),
        linux: Some(v1::LinuxContainerConfig {
            resources: Some(container_resources(pod, c, inputs.memory_capacity)),
            security_context: Some(security),
        }),
        ..Default::default()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(v: serde_json::Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn nginx() -> Pod {
        pod(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "u1",
                          "labels": {"app": "web"}, "annotations": {"a": "b"}},
            "spec": {
                "hostname": "h", "subdomain": "sub",
                "terminationGracePeriodSeconds": 30,
                "securityContext": {"runAsUser": 1000, "runAsGroup": 3000, "fsGroup": 2000,
                                     "supplementalGroups": [4000],
                                     "sysctls": [{"name": "net.core.somaxconn", "value": "1024"}]},
                "containers": [{
                    "name": "nginx", "image": "nginx:1.25",
                    "command": ["sh", "-c", "echo $(GREETING) $$(X) $(MISSING)"],
                    "ports": [{"containerPort": 80, "hostPort": 8080}],
                    "resources": {"requests": {"cpu": "250m", "memory": "64Mi"},
                                  "limits": {"cpu": "500m", "memory": "128Mi"}},
                    "securityContext": {"allowPrivilegeEscalation": false,
                                         "capabilities": {"add": ["NET_ADMIN"], "drop": ["ALL"]},
                                         "readOnlyRootFilesystem": true},
                    "lifecycle": {"preStop": {"exec": {"command": ["nginx", "-s", "quit"]}}},
                }],
            }
        }))
    }

    #[test]
    fn sandbox_config_is_complete() {
        let p = nginx();
        let cfg = sandbox_config(
            &p,
            &SandboxInputs {
                attempt: 2,
                cluster_domain: "cluster.local".into(),
                pod_log_root: "/var/log/pods".into(),
                dns: Some(v1::DnsConfig {
                    servers: vec!["10.43.0.10".into()],
                    ..Default::default()
                }),
                cgroup_parent: "/kubepods/burstable/podu1".into(),
                seccomp_profile_root: String::new(),
            },
        );
        let m = cfg.metadata.as_ref().unwrap();
        assert_eq!(
            (
                m.name.as_str(),
                m.namespace.as_str(),
                m.uid.as_str(),
                m.attempt
            ),
            ("web", "default", "u1", 2)
        );
        assert_eq!(cfg.hostname, "h");
        assert_eq!(cfg.log_directory, "/var/log/pods/default_web_u1");
        assert_eq!(cfg.labels["io.kubernetes.pod.uid"], "u1");
        assert_eq!(cfg.labels["app"], "web");
        assert_eq!(cfg.annotations["a"], "b");
        assert_eq!(cfg.port_mappings[0].host_port, 8080);
        let linux = cfg.linux.as_ref().unwrap();
        assert_eq!(linux.cgroup_parent, "/kubepods/burstable/podu1");
        assert_eq!(linux.sysctls["net.core.somaxconn"], "1024");
        let sc = linux.security_context.as_ref().unwrap();
        assert_eq!(sc.run_as_user.unwrap().value, 1000);
        assert_eq!(sc.run_as_group.unwrap().value, 3000);
        assert_eq!(sc.supplemental_groups, vec![2000, 4000]);
        assert_eq!(
            sc.namespace_options.as_ref().unwrap().network,
            v1::NamespaceMode::Pod as i32
        );
        assert_eq!(cfg.dns_config.as_ref().unwrap().servers, vec!["10.43.0.10"]);
    }

    #[test]
    fn container_config_is_complete() {
        let p = nginx();
        let c = &p.spec.as_ref().unwrap().containers[0];
        let cfg = container_config(
            &p,
            c,
            &ContainerInputs {
                restart_count: 3,
                image_ref: "sha256:abc".into(),
                envs: vec![("GREETING".into(), "hi".into())],
                memory_capacity: 1 << 30,
                ..Default::default()
            },
        );
        assert_eq!(cfg.metadata.as_ref().unwrap().attempt, 3);
        assert_eq!(cfg.image.as_ref().unwrap().image, "sha256:abc");
        assert_eq!(
            cfg.image.as_ref().unwrap().user_specified_image,
            "nginx:1.25"
        );
        assert_eq!(cfg.command, vec!["sh", "-c", "echo hi $(X) $(MISSING)"]);
        assert_eq!(cfg.log_path, "nginx/3.log");
        assert_eq!(cfg.labels["io.kubernetes.container.name"], "nginx");
        assert_eq!(cfg.annotations["io.kubernetes.container.restartCount"], "3");
        assert_eq!(
            cfg.annotations["io.kubernetes.pod.terminationGracePeriod"],
            "30"
        );
        assert_eq!(
            cfg.annotations["io.kubernetes.container.terminationMessagePath"],
            "/dev/termination-log"
        );
        assert!(cfg.annotations["io.kubernetes.container.preStopHandler"].contains("quit"));
        let linux = cfg.linux.as_ref().unwrap();
        let r = linux.resources.as_ref().unwrap();
        assert_eq!(r.cpu_shares, 256);
        assert_eq!(r.cpu_quota, 50_000);
        assert_eq!(r.cpu_period, 100_000);
        assert_eq!(r.memory_limit_in_bytes, 128 << 20);
        // Burstable: 1000 - 1000 * 64Mi / 1Gi.
        assert_eq!(r.oom_score_adj, 938);
        let sc = linux.security_context.as_ref().unwrap();
        assert!(sc.no_new_privs && sc.readonly_rootfs && !sc.privileged);
        assert_eq!(
            sc.capabilities.as_ref().unwrap().drop_capabilities,
            vec!["ALL"]
        );
        assert_eq!(sc.masked_paths.len(), DEFAULT_MASKED_PATHS.len());
        assert_eq!(sc.run_as_user.unwrap().value, 1000);
        assert_eq!(
            sc.seccomp.as_ref().unwrap().profile_type,
            v1::security_profile::ProfileType::Unconfined as i32
        );
    }

    #[test]
    fn qos_and_oom() {
        let best = pod(json!({"spec": {"containers": [{"name": "a"}]}}));
        assert_eq!(qos_class(&best), "BestEffort");
        let c = &best.spec.as_ref().unwrap().containers[0];
        assert_eq!(oom_score_adj(&best, c, 1 << 30), 1000);
        let g = pod(json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]}}));
        assert_eq!(qos_class(&g), "Guaranteed");
        assert_eq!(
            oom_score_adj(&g, &g.spec.as_ref().unwrap().containers[0], 1 << 30),
            -997
        );
        let b = pod(json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"memory": "1Gi"}}}]}}));
        assert_eq!(qos_class(&b), "Burstable");
        assert_eq!(
            oom_score_adj(&b, &b.spec.as_ref().unwrap().containers[0], 1 << 30),
            3
        );
        let tiny = pod(json!({"spec": {"containers": [{"name": "a", "resources": {
            "requests": {"memory": "1"}}}]}}));
        assert_eq!(
            oom_score_adj(&tiny, &tiny.spec.as_ref().unwrap().containers[0], 1 << 30),
            999
        );
    }

    #[test]
    fn shares_and_quota() {
        assert_eq!(milli_cpu_to_shares(0), 2);
        assert_eq!(milli_cpu_to_shares(1), 2);
        assert_eq!(milli_cpu_to_shares(1000), 1024);
        assert_eq!(milli_cpu_to_quota(0, 100_000), 0);
        assert_eq!(milli_cpu_to_quota(5, 100_000), 1000);
        assert_eq!(milli_cpu_to_quota(1500, 100_000), 150_000);
    }

    #[test]
    fn expansion() {
        let lookup = |k: &str| match k {
            "A" => Some("a".to_string()),
            "EMPTY" => Some(String::new()),
            _ => None,
        };
        for (input, want) in [
            ("$(A)", "a"),
            ("x$(A)y", "xay"),
            ("$(EMPTY)", ""),
            ("$(B)", "$(B)"),
            ("$$(A)", "$(A)"),
            ("$$$(A)", "$a"),
            ("$(A", "$(A"),
            ("$A", "$A"),
            ("$", "$"),
            ("a$", "a$"),
            ("$()", "$()"),
            ("€$(A)€", "€a€"),
        ] {
            assert_eq!(expand(input, &lookup), want, "{input}");
        }
    }

    #[test]
    fn hostnames() {
        let p = pod(
            json!({"metadata": {"name": "x".repeat(62) + "-ab", "namespace": "ns"}, "spec": {"containers": []}}),
        );
        let (h, d) = hostname_and_domain(&p, "cluster.local");
        assert_eq!(h, "x".repeat(62));
        assert_eq!(d, "");
        let p = nginx();
        assert_eq!(
            hostname_and_domain(&p, "cluster.local").1,
            "sub.default.svc.cluster.local"
        );
    }
}
