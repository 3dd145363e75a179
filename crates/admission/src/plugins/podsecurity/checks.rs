//! The Pod Security Standards as checks of a pod's metadata and spec (upstream's
//! `k8s.io/pod-security-admission/policy`), at every policy version up to the newest one
//! this build knows (`latest` = v1.32, as in Kubernetes 1.33): each check is a pure function
//! returning the reason and detail of a violation in upstream's words.

use std::collections::BTreeSet;

use api::gofmt::go_quote;
use serde_json::Value;

/// The newest policy version with its own checks (`latest` and later versions evaluate as
/// this one).
pub const MAX_VERSION: u32 = 32;

/// A Pod Security Standards level.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Level {
    Privileged,
    Baseline,
    Restricted,
}

impl Level {
    pub fn parse(s: &str) -> Option<Level> {
        match s {
            "privileged" => Some(Level::Privileged),
            "baseline" => Some(Level::Baseline),
            "restricted" => Some(Level::Restricted),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Level::Privileged => "privileged",
            Level::Baseline => "baseline",
            Level::Restricted => "restricted",
        }
    }
}

/// One failed check: upstream's `ForbiddenReason` and `ForbiddenDetail`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    pub reason: String,
    pub detail: String,
}

type Eval = fn(&Value, &Value, u32) -> Option<Violation>;

struct Check {
    id: &'static str,
    level: Level,
    /// The first policy version the check is part of.
    since: u32,
    /// The baseline check this restricted check replaces.
    overrides: Option<&'static str>,
    eval: Eval,
}

/// Every check, each level's IDs in upstream's (bytewise sorted) order.
const CHECKS: &[Check] = &[
    check("appArmorProfile", Level::Baseline, 0, app_armor),
    check(
        "capabilities_baseline",
        Level::Baseline,
        0,
        capabilities_baseline,
    ),
    check("hostNamespaces", Level::Baseline, 0, host_namespaces),
    check("hostPathVolumes", Level::Baseline, 0, host_path_volumes),
    check("hostPorts", Level::Baseline, 0, host_ports),
    check("privileged", Level::Baseline, 0, privileged),
    check("procMount", Level::Baseline, 0, proc_mount),
    check("seLinuxOptions", Level::Baseline, 0, se_linux_options),
    check(
        "seccompProfile_baseline",
        Level::Baseline,
        0,
        seccomp_baseline,
    ),
    check("sysctls", Level::Baseline, 0, sysctls),
    check(
        "windowsHostProcess",
        Level::Baseline,
        0,
        windows_host_process,
    ),
    check(
        "allowPrivilegeEscalation",
        Level::Restricted,
        8,
        allow_privilege_escalation,
    ),
    Check {
        overrides: Some("capabilities_baseline"),
        ..check(
            "capabilities_restricted",
            Level::Restricted,
            22,
            capabilities_restricted,
        )
    },
    Check {
        overrides: Some("hostPathVolumes"),
        ..check(
            "restrictedVolumes",
            Level::Restricted,
            0,
            restricted_volumes,
        )
    },
    check("runAsNonRoot", Level::Restricted, 0, run_as_non_root),
    check("runAsUser", Level::Restricted, 23, run_as_user),
    Check {
        overrides: Some("seccompProfile_baseline"),
        ..check(
            "seccompProfile_restricted",
            Level::Restricted,
            19,
            seccomp_restricted,
        )
    },
];

const fn check(id: &'static str, level: Level, since: u32, eval: Eval) -> Check {
    Check {
        id,
        level,
        since,
        overrides: None,
        eval,
    }
}

/// The violations of a pod (`metadata`, `spec`) at `level` and policy minor version
/// `version` (clamped to [`MAX_VERSION`]), in upstream's order.
pub fn evaluate(level: Level, version: u32, metadata: &Value, spec: &Value) -> Vec<Violation> {
    let v = version.min(MAX_VERSION);
    let active: Vec<&Check> = CHECKS
        .iter()
        .filter(|c| c.since <= v && c.level <= level && level != Level::Privileged)
        .collect();
    let overridden: Vec<&str> = active.iter().filter_map(|c| c.overrides).collect();
    active
        .iter()
        .filter(|c| !overridden.contains(&c.id))
        .filter_map(|c| (c.eval)(metadata, spec, v))
        .collect()
}

/// Upstream's `ForbiddenReason()`: the reasons, comma-separated.
pub fn reasons(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| v.reason.as_str())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Upstream's `ForbiddenDetail()`: `reason (detail)` items, comma-separated.
pub fn details(violations: &[Violation]) -> String {
    violations
        .iter()
        .map(|v| {
            if v.detail.is_empty() {
                v.reason.clone()
            } else {
                format!("{} ({})", v.reason, v.detail)
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn violation(reason: impl Into<String>, detail: impl Into<String>) -> Option<Violation> {
    Some(Violation {
        reason: reason.into(),
        detail: detail.into(),
    })
}

fn join_quote<S: AsRef<str>>(items: &[S]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let parts: Vec<&str> = items.iter().map(AsRef::as_ref).collect();
    format!("\"{}\"", parts.join("\", \""))
}

fn pluralize<'a>(singular: &'a str, plural: &'a str, n: usize) -> &'a str {
    if n == 1 { singular } else { plural }
}

/// `container "a"` / `containers "a", "b"`.
fn containers_phrase<S: AsRef<str>>(names: &[S]) -> String {
    format!(
        "{} {}",
        pluralize("container", "containers", names.len()),
        join_quote(names)
    )
}

/// Init containers, containers, ephemeral containers, in that order.
fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    ["initContainers", "containers", "ephemeralContainers"]
        .into_iter()
        .flat_map(move |k| spec[k].as_array().into_iter().flatten())
}

fn name(c: &Value) -> String {
    c["name"].as_str().unwrap_or_default().to_string()
}

/// A field that is set (present and not null).
fn set(v: &Value) -> Option<&Value> {
    (!v.is_null()).then_some(v)
}

fn pod_sc(spec: &Value) -> &Value {
    &spec["securityContext"]
}

fn is_windows(spec: &Value) -> bool {
    spec["os"]["name"] == "windows"
}

/// The setters phrase: `pod`, `container(s) "…"`, joined by ` and `.
fn setters<S: AsRef<str>>(pod: bool, bad: &[S]) -> String {
    let mut out = Vec::new();
    if pod {
        out.push("pod".to_string());
    }
    if !bad.is_empty() {
        out.push(containers_phrase(bad));
    }
    out.join(" and ")
}

fn app_armor(meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let valid = |t: &str| t == "RuntimeDefault" || t == "Localhost";
    let mut bad_setters = Vec::new();
    let mut bad_values = BTreeSet::new();
    if let Some(p) = set(&pod_sc(spec)["appArmorProfile"]) {
        let t = p["type"].as_str().unwrap_or_default();
        if !valid(t) {
            bad_setters.push("pod".to_string());
            bad_values.insert(t.to_string());
        }
    }
    let mut bad_containers = Vec::new();
    for c in containers(spec) {
        if let Some(p) = set(&c["securityContext"]["appArmorProfile"]) {
            let t = p["type"].as_str().unwrap_or_default();
            if !valid(t) {
                bad_containers.push(name(c));
                bad_values.insert(t.to_string());
            }
        }
    }
    if !bad_containers.is_empty() {
        bad_setters.push(containers_phrase(&bad_containers));
    }
    let mut annotations: Vec<String> = meta["annotations"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("container.apparmor.security.beta.kubernetes.io/"))
        .filter_map(|(k, v)| {
            let v = v.as_str().unwrap_or_default();
            let ok = v.is_empty() || v == "runtime/default" || v.starts_with("localhost/");
            (!ok).then(|| format!("{k}={}", go_quote(v)))
        })
        .collect();
    annotations.sort();
    let mut values: Vec<String> = bad_values.into_iter().collect();
    if !annotations.is_empty() {
        bad_setters.push(pluralize("annotation", "annotations", annotations.len()).into());
    }
    values.extend(annotations);
    if values.is_empty() {
        return None;
    }
    violation(
        pluralize(
            "forbidden AppArmor profile",
            "forbidden AppArmor profiles",
            values.len(),
        ),
        format!(
            "{} must not set AppArmor profile type to {}",
            bad_setters.join(" and "),
            join_quote(&values)
        ),
    )
}

const BASELINE_CAPABILITIES: &[&str] = &[
    "AUDIT_WRITE",
    "CHOWN",
    "DAC_OVERRIDE",
    "FOWNER",
    "FSETID",
    "KILL",
    "MKNOD",
    "NET_BIND_SERVICE",
    "SETFCAP",
    "SETGID",
    "SETPCAP",
    "SETUID",
    "SYS_CHROOT",
];

fn added_capabilities(c: &Value) -> impl Iterator<Item = &str> {
    c["securityContext"]["capabilities"]["add"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| v.as_str().unwrap_or_default())
}

fn capabilities_baseline(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut caps = BTreeSet::new();
    for c in containers(spec) {
        let mut any = false;
        for cap in added_capabilities(c) {
            if !BASELINE_CAPABILITIES.contains(&cap) {
                any = true;
                caps.insert(cap.to_string());
            }
        }
        if any {
            bad.push(name(c));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let caps: Vec<String> = caps.into_iter().collect();
    violation(
        "non-default capabilities",
        format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&bad),
            join_quote(&caps)
        ),
    )
}

fn host_namespaces(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let set: Vec<String> = ["hostNetwork", "hostPID", "hostIPC"]
        .iter()
        .filter(|f| spec[**f] == true)
        .map(|f| format!("{f}=true"))
        .collect();
    (!set.is_empty())
        .then(|| violation("host namespaces", set.join(", ")))
        .flatten()
}

fn host_path_volumes(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let bad: Vec<String> = spec["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|v| set(&v["hostPath"]).is_some())
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "hostPath volumes",
        format!(
            "{} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad)
        ),
    )
}

fn host_ports(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut ports = BTreeSet::new();
    for c in containers(spec) {
        let mut any = false;
        for p in c["ports"].as_array().into_iter().flatten() {
            let hp = p["hostPort"].as_i64().unwrap_or(0);
            if hp != 0 {
                any = true;
                ports.insert(hp.to_string());
            }
        }
        if any {
            bad.push(name(c));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let ports: Vec<String> = ports.into_iter().collect();
    violation(
        "hostPort",
        format!(
            "{} {} {} {}",
            containers_phrase(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize("hostPort", "hostPorts", ports.len()),
            ports.join(", ")
        ),
    )
}

fn privileged(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["privileged"] == true)
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "privileged",
        format!(
            "{} must not set securityContext.privileged=true",
            containers_phrase(&bad)
        ),
    )
}

fn proc_mount(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for c in containers(spec) {
        if let Some(t) = set(&c["securityContext"]["procMount"]) {
            let t = t.as_str().unwrap_or_default();
            if t != "Default" {
                bad.push(name(c));
                types.insert(t.to_string());
            }
        }
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    violation(
        "procMount",
        format!(
            "{} must not set securityContext.procMount to {}",
            containers_phrase(&bad),
            join_quote(&types)
        ),
    )
}

fn se_linux_options(_meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    let allowed: &[&str] = if v >= 31 {
        &[
            "",
            "container_t",
            "container_init_t",
            "container_kvm_t",
            "container_engine_t",
        ]
    } else {
        &["", "container_t", "container_init_t", "container_kvm_t"]
    };
    let mut bad_types = BTreeSet::new();
    let (mut set_user, mut set_role) = (false, false);
    let mut invalid = |opts: &Value| -> bool {
        let t = opts["type"].as_str().unwrap_or_default();
        let mut bad = false;
        if !allowed.contains(&t) {
            bad_types.insert(t.to_string());
            bad = true;
        }
        if !opts["user"].as_str().unwrap_or_default().is_empty() {
            set_user = true;
            bad = true;
        }
        if !opts["role"].as_str().unwrap_or_default().is_empty() {
            set_role = true;
            bad = true;
        }
        bad
    };
    let pod_bad = set(&pod_sc(spec)["seLinuxOptions"]).is_some_and(&mut invalid);
    let bad: Vec<String> = containers(spec)
        .filter(|c| set(&c["securityContext"]["seLinuxOptions"]).is_some_and(&mut invalid))
        .map(name)
        .collect();
    if !pod_bad && bad.is_empty() {
        return None;
    }
    let mut data = Vec::new();
    if !bad_types.is_empty() {
        let types: Vec<String> = bad_types.into_iter().collect();
        data.push(format!(
            "{} {}",
            pluralize("type", "types", types.len()),
            join_quote(&types)
        ));
    }
    if set_user {
        data.push("user may not be set".to_string());
    }
    if set_role {
        data.push("role may not be set".to_string());
    }
    violation(
        "seLinuxOptions",
        format!(
            "{} set forbidden securityContext.seLinuxOptions: {}",
            setters(pod_bad, &bad),
            data.join("; ")
        ),
    )
}

fn valid_seccomp(t: &str) -> bool {
    t == "RuntimeDefault" || t == "Localhost"
}

fn seccomp_baseline(meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    if v < 19 {
        return seccomp_annotations(meta, spec);
    }
    let mut values = BTreeSet::new();
    let mut pod_bad = false;
    if let Some(p) = set(&pod_sc(spec)["seccompProfile"]) {
        let t = p["type"].as_str().unwrap_or_default();
        if !valid_seccomp(t) {
            pod_bad = true;
            values.insert(t.to_string());
        }
    }
    let mut bad = Vec::new();
    for c in containers(spec) {
        if let Some(p) = set(&c["securityContext"]["seccompProfile"]) {
            let t = p["type"].as_str().unwrap_or_default();
            if !valid_seccomp(t) {
                bad.push(name(c));
                values.insert(t.to_string());
            }
        }
    }
    if !pod_bad && bad.is_empty() {
        return None;
    }
    let values: Vec<String> = values.into_iter().collect();
    violation(
        "seccompProfile",
        format!(
            "{} must not set securityContext.seccompProfile.type to {}",
            setters(pod_bad, &bad),
            join_quote(&values)
        ),
    )
}

/// The v1.0 seccomp check, on the alpha annotations.
fn seccomp_annotations(meta: &Value, spec: &Value) -> Option<Violation> {
    let valid =
        |t: &str| t == "runtime/default" || t == "docker/default" || t.starts_with("localhost/");
    let annotations = &meta["annotations"];
    let mut bad = BTreeSet::new();
    let pod_key = "seccomp.security.alpha.kubernetes.io/pod";
    if let Some(v) = annotations[pod_key].as_str()
        && !valid(v)
    {
        bad.insert(format!("{pod_key}={}", go_quote(v)));
    }
    for c in containers(spec) {
        let key = format!("container.seccomp.security.alpha.kubernetes.io/{}", name(c));
        if let Some(v) = annotations[key.as_str()].as_str()
            && !valid(v)
        {
            bad.insert(format!("{key}={}", go_quote(v)));
        }
    }
    if bad.is_empty() {
        return None;
    }
    let bad: Vec<String> = bad.into_iter().collect();
    violation(
        "seccompProfile",
        format!(
            "forbidden {} {}",
            pluralize("annotation", "annotations", bad.len()),
            bad.join(", ")
        ),
    )
}

fn sysctls(_meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    let mut allowed = vec![
        "kernel.shm_rmid_forced",
        "net.ipv4.ip_local_port_range",
        "net.ipv4.tcp_syncookies",
        "net.ipv4.ping_group_range",
        "net.ipv4.ip_unprivileged_port_start",
    ];
    if v >= 27 {
        allowed.push("net.ipv4.ip_local_reserved_ports");
    }
    if v >= 29 {
        allowed.extend([
            "net.ipv4.tcp_keepalive_time",
            "net.ipv4.tcp_fin_timeout",
            "net.ipv4.tcp_keepalive_intvl",
            "net.ipv4.tcp_keepalive_probes",
        ]);
    }
    if v >= 32 {
        allowed.extend(["net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"]);
    }
    let bad: Vec<&str> = pod_sc(spec)["sysctls"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["name"].as_str().unwrap_or_default())
        .filter(|n| !allowed.contains(n))
        .collect();
    (!bad.is_empty())
        .then(|| violation("forbidden sysctls", bad.join(", ")))
        .flatten()
}

fn windows_host_process(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let pod = pod_sc(spec)["windowsOptions"]["hostProcess"] == true;
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["windowsOptions"]["hostProcess"] == true)
        .map(name)
        .collect();
    if !pod && bad.is_empty() {
        return None;
    }
    violation(
        "hostProcess",
        format!(
            "{} must not set securityContext.windowsOptions.hostProcess=true",
            setters(pod, &bad)
        ),
    )
}

fn allow_privilege_escalation(_meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    if v >= 25 && is_windows(spec) {
        return None;
    }
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["allowPrivilegeEscalation"] != false)
        .map(name)
        .collect();
    if bad.is_empty() {
        return None;
    }
    violation(
        "allowPrivilegeEscalation != false",
        format!(
            "{} must set securityContext.allowPrivilegeEscalation=false",
            containers_phrase(&bad)
        ),
    )
}

fn capabilities_restricted(_meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    if v >= 25 && is_windows(spec) {
        return None;
    }
    let mut missing_drop = Vec::new();
    let mut adding = Vec::new();
    let mut caps = BTreeSet::new();
    for c in containers(spec) {
        let Some(capabilities) = set(&c["securityContext"]["capabilities"]) else {
            missing_drop.push(name(c));
            continue;
        };
        let drops_all = capabilities["drop"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| d == "ALL");
        if !drops_all {
            missing_drop.push(name(c));
        }
        let mut any = false;
        for cap in added_capabilities(c) {
            if cap != "NET_BIND_SERVICE" {
                any = true;
                caps.insert(cap.to_string());
            }
        }
        if any {
            adding.push(name(c));
        }
    }
    let mut parts = Vec::new();
    if !missing_drop.is_empty() {
        parts.push(format!(
            "{} must set securityContext.capabilities.drop=[\"ALL\"]",
            containers_phrase(&missing_drop)
        ));
    }
    if !adding.is_empty() {
        let caps: Vec<String> = caps.into_iter().collect();
        parts.push(format!(
            "{} must not include {} in securityContext.capabilities.add",
            containers_phrase(&adding),
            join_quote(&caps)
        ));
    }
    (!parts.is_empty())
        .then(|| violation("unrestricted capabilities", parts.join("; ")))
        .flatten()
}

const ALLOWED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "image",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

const RESTRICTED_VOLUME_TYPES: &[&str] = &[
    "hostPath",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "nfs",
    "iscsi",
    "glusterfs",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "fc",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "storageos",
];

fn restricted_volumes(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let mut bad = Vec::new();
    let mut types = BTreeSet::new();
    for vol in spec["volumes"].as_array().into_iter().flatten() {
        if ALLOWED_VOLUMES.iter().any(|t| set(&vol[*t]).is_some()) {
            continue;
        }
        bad.push(name(vol));
        let t = RESTRICTED_VOLUME_TYPES
            .iter()
            .find(|t| set(&vol[**t]).is_some())
            .copied()
            .unwrap_or("unknown");
        types.insert(t.to_string());
    }
    if bad.is_empty() {
        return None;
    }
    let types: Vec<String> = types.into_iter().collect();
    violation(
        "restricted volume types",
        format!(
            "{} {} {} {} {}",
            pluralize("volume", "volumes", bad.len()),
            join_quote(&bad),
            pluralize("uses", "use", bad.len()),
            pluralize(
                "restricted volume type",
                "restricted volume types",
                types.len()
            ),
            join_quote(&types)
        ),
    )
}

fn run_as_non_root(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let pod_value = &pod_sc(spec)["runAsNonRoot"];
    let pod_bad = *pod_value == false;
    let pod_true = *pod_value == true;
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        match &c["securityContext"]["runAsNonRoot"] {
            Value::Bool(false) => explicit.push(name(c)),
            Value::Bool(true) => {}
            _ if !pod_true => implicit.push(name(c)),
            _ => {}
        }
    }
    if pod_bad || !explicit.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "{} must not set securityContext.runAsNonRoot=false",
                setters(pod_bad, &explicit)
            ),
        );
    }
    if !implicit.is_empty() {
        return violation(
            "runAsNonRoot != true",
            format!(
                "pod or {} must set securityContext.runAsNonRoot=true",
                containers_phrase(&implicit)
            ),
        );
    }
    None
}

fn run_as_user(_meta: &Value, spec: &Value, _v: u32) -> Option<Violation> {
    let pod = pod_sc(spec)["runAsUser"] == 0;
    let bad: Vec<String> = containers(spec)
        .filter(|c| c["securityContext"]["runAsUser"] == 0)
        .map(name)
        .collect();
    if !pod && bad.is_empty() {
        return None;
    }
    violation(
        "runAsUser=0",
        format!("{} must not set runAsUser=0", setters(pod, &bad)),
    )
}

fn seccomp_restricted(_meta: &Value, spec: &Value, v: u32) -> Option<Violation> {
    if v >= 25 && is_windows(spec) {
        return None;
    }
    let mut values = BTreeSet::new();
    let mut pod_bad = false;
    let mut pod_set = false;
    if let Some(p) = set(&pod_sc(spec)["seccompProfile"]) {
        let t = p["type"].as_str().unwrap_or_default();
        if valid_seccomp(t) {
            pod_set = true;
        } else {
            pod_bad = true;
            values.insert(t.to_string());
        }
    }
    let mut explicit = Vec::new();
    let mut implicit = Vec::new();
    for c in containers(spec) {
        match set(&c["securityContext"]["seccompProfile"]) {
            Some(p) => {
                let t = p["type"].as_str().unwrap_or_default();
                if !valid_seccomp(t) {
                    explicit.push(name(c));
                    values.insert(t.to_string());
                }
            }
            None if !pod_set => implicit.push(name(c)),
            None => {}
        }
    }
    if pod_bad || !explicit.is_empty() {
        let values: Vec<String> = values.into_iter().collect();
        return violation(
            "seccompProfile",
            format!(
                "{} must not set securityContext.seccompProfile.type to {}",
                setters(pod_bad, &explicit),
                join_quote(&values)
            ),
        );
    }
    if !implicit.is_empty() {
        return violation(
            "seccompProfile",
            format!(
                "pod or {} must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\"",
                containers_phrase(&implicit)
            ),
        );
    }
    None
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn restricted(spec: Value) -> String {
        details(&evaluate(Level::Restricted, MAX_VERSION, &json!({}), &spec))
    }

    fn baseline(meta: Value, spec: Value) -> String {
        details(&evaluate(Level::Baseline, MAX_VERSION, &meta, &spec))
    }

    #[test]
    fn a_plain_pod_under_restricted() {
        let spec = json!({"containers": [{"name": "nginx", "image": "nginx"}]});
        assert_eq!(
            restricted(spec.clone()),
            "allowPrivilegeEscalation != false (container \"nginx\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"nginx\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"nginx\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"nginx\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"
        );
        assert_eq!(
            reasons(&evaluate(Level::Restricted, MAX_VERSION, &json!({}), &spec)),
            "allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"
        );
        // Baseline and privileged allow it.
        assert!(evaluate(Level::Baseline, MAX_VERSION, &json!({}), &spec).is_empty());
        assert!(evaluate(Level::Privileged, MAX_VERSION, &json!({}), &spec).is_empty());
    }

    #[test]
    fn a_compliant_restricted_pod() {
        let spec = json!({
            "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
            "containers": [{"name": "c", "securityContext": {
                "allowPrivilegeEscalation": false,
                "capabilities": {"drop": ["ALL"], "add": ["NET_BIND_SERVICE"]},
            }}],
            "volumes": [{"name": "v", "configMap": {"name": "x"}}, {"name": "e", "emptyDir": {}}],
        });
        assert_eq!(restricted(spec), "");
    }

    #[test]
    fn baseline_checks_in_upstreams_words() {
        let spec = json!({
            "hostNetwork": true, "hostIPC": true,
            "securityContext": {
                "sysctls": [{"name": "kernel.msgmax", "value": "1"}, {"name": "net.ipv4.tcp_syncookies", "value": "1"}],
                "seLinuxOptions": {"type": "spc_t", "user": "root"},
            },
            "initContainers": [{"name": "init", "securityContext": {"privileged": true}}],
            "containers": [
                {"name": "a", "ports": [{"containerPort": 80, "hostPort": 8080}, {"containerPort": 1, "hostPort": 10000}],
                 "securityContext": {"capabilities": {"add": ["NET_ADMIN", "CHOWN", "SYS_TIME"]}, "procMount": "Unmasked"}},
                {"name": "b", "securityContext": {"privileged": true, "seccompProfile": {"type": "Unconfined"}}},
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        });
        let meta = json!({"annotations": {"container.apparmor.security.beta.kubernetes.io/a": "unconfined"}});
        assert_eq!(
            baseline(meta, spec),
            "forbidden AppArmor profile (annotation must not set AppArmor profile type to \"container.apparmor.security.beta.kubernetes.io/a=\"unconfined\"\"), \
             non-default capabilities (container \"a\" must not include \"NET_ADMIN\", \"SYS_TIME\" in securityContext.capabilities.add), \
             host namespaces (hostNetwork=true, hostIPC=true), \
             hostPath volumes (volume \"host\"), \
             hostPort (container \"a\" uses hostPorts 10000, 8080), \
             privileged (containers \"init\", \"b\" must not set securityContext.privileged=true), \
             procMount (container \"a\" must not set securityContext.procMount to \"Unmasked\"), \
             seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type \"spc_t\"; user may not be set), \
             seccompProfile (container \"b\" must not set securityContext.seccompProfile.type to \"Unconfined\"), \
             forbidden sysctls (kernel.msgmax)"
        );
    }

    #[test]
    fn restricted_explicit_values() {
        let spec = json!({
            "securityContext": {"runAsNonRoot": false, "runAsUser": 0},
            "containers": [
                {"name": "a", "securityContext": {"runAsNonRoot": true, "allowPrivilegeEscalation": false,
                  "capabilities": {"drop": ["ALL"], "add": ["CHOWN"]}, "seccompProfile": {"type": "RuntimeDefault"}}},
                {"name": "b", "securityContext": {"runAsNonRoot": false, "runAsUser": 0, "allowPrivilegeEscalation": false,
                  "capabilities": {"drop": ["all"]}, "seccompProfile": {"type": "Localhost"}}},
            ],
            "volumes": [{"name": "n", "nfs": {"server": "s", "path": "/"}}, {"name": "h", "hostPath": {"path": "/"}}],
        });
        assert_eq!(
            restricted(spec),
            "unrestricted capabilities (container \"b\" must set securityContext.capabilities.drop=[\"ALL\"]; container \"a\" must not include \"CHOWN\" in securityContext.capabilities.add), \
             restricted volume types (volumes \"n\", \"h\" use restricted volume types \"hostPath\", \"nfs\"), \
             runAsNonRoot != true (pod and container \"b\" must not set securityContext.runAsNonRoot=false), \
             runAsUser=0 (pod and container \"b\" must not set runAsUser=0)"
        );
    }

    #[test]
    fn versions_change_the_checks() {
        let spec = json!({
            "securityContext": {"sysctls": [{"name": "net.ipv4.tcp_rmem", "value": "1"}], "runAsUser": 0},
            "containers": [{"name": "c", "securityContext": {"seLinuxOptions": {"type": "container_engine_t"}}}],
        });
        // tcp_rmem is allowed from v1.32, container_engine_t from v1.31.
        assert_eq!(baseline(json!({}), spec.clone()), "", "latest allows both");
        let old = details(&evaluate(Level::Baseline, 30, &json!({}), &spec));
        assert!(
            old.contains("forbidden sysctls (net.ipv4.tcp_rmem)"),
            "{old}"
        );
        assert!(old.contains("type \"container_engine_t\""), "{old}");
        // runAsUser is a restricted check from v1.23 only.
        let v22 = reasons(&evaluate(Level::Restricted, 22, &json!({}), &spec));
        assert!(!v22.contains("runAsUser"), "{v22}");
        assert!(
            reasons(&evaluate(Level::Restricted, 23, &json!({}), &spec)).contains("runAsUser=0")
        );
        // Before v1.19, seccomp is checked on the annotations.
        let meta =
            json!({"annotations": {"seccomp.security.alpha.kubernetes.io/pod": "unconfined"}});
        let v18 = details(&evaluate(
            Level::Baseline,
            18,
            &meta,
            &json!({"containers": []}),
        ));
        assert_eq!(
            v18,
            "seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod=\"unconfined\")"
        );
        // Windows pods skip three restricted checks from v1.25.
        let win = json!({"os": {"name": "windows"}, "securityContext": {"runAsNonRoot": true}, "containers": [{"name": "c"}]});
        assert_eq!(restricted(win), "");
    }
}
