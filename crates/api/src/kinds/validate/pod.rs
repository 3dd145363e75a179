//! Pod specs and pod templates (`ValidatePodSpec`, `ValidatePodTemplateSpec`,
//! `ValidatePodCreate`, `ValidatePodUpdate`), with the 1.33 default feature gates.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

use serde_json::Value;

use super::quantity;
use super::resources::{
    NameRule, node_selector_term, resource_requirements, tolerations, validate_node_selector,
};
use super::storage::{local_descending_path, path_no_backsteps, volume_source};
use super::util::*;

/// What the spec is embedded in.
#[derive(Clone, Copy)]
pub(crate) struct PodOpts {
    /// The top-level resource is a Pod (not a template).
    pub(crate) resource_is_pod: bool,
}

pub(crate) const ENV_FIELD_PATHS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
    "spec.nodeName",
    "spec.serviceAccountName",
    "status.hostIP",
    "status.hostIPs",
    "status.podIP",
    "status.podIPs",
];

pub(crate) const VOLUME_FIELD_PATHS: &[&str] = &[
    "metadata.annotations",
    "metadata.labels",
    "metadata.name",
    "metadata.namespace",
    "metadata.uid",
];

const RESOURCE_FIELD_PATHS: &[&str] = &[
    "limits.cpu",
    "limits.ephemeral-storage",
    "limits.memory",
    "requests.cpu",
    "requests.ephemeral-storage",
    "requests.memory",
];

/// `fieldpath.SplitMaybeSubscriptedPath`.
fn split_subscripted(path: &str) -> Option<(&str, &str)> {
    let s = path.strip_suffix("']")?;
    let (a, b) = s.split_once("['")?;
    if a.is_empty() { None } else { Some((a, b)) }
}

/// `ConvertDownwardAPIFieldLabel` for `v1`.
fn convert_downward_label(version: &str, label: &str) -> Result<String, String> {
    if version != "v1" {
        return Err(format!("unsupported pod version: {version}"));
    }
    if let Some((path, _)) = split_subscripted(label) {
        return match path {
            "metadata.annotations" | "metadata.labels" => Ok(label.to_string()),
            _ => Err(format!("field label does not support subscript: {label}")),
        };
    }
    match label {
        "metadata.annotations"
        | "metadata.labels"
        | "metadata.name"
        | "metadata.namespace"
        | "metadata.uid"
        | "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.serviceAccountName"
        | "spec.schedulerName"
        | "status.phase"
        | "status.hostIP"
        | "status.hostIPs"
        | "status.podIP"
        | "status.podIPs" => Ok(label.to_string()),
        "spec.host" => Ok("spec.nodeName".to_string()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// `validateObjectFieldSelector`.
pub(crate) fn object_field_selector(fs: &Value, expressions: &[&str], p: &P) -> Errs {
    let version = s(fs, "apiVersion");
    if version.is_empty() {
        return vec![required(&p.child("apiVersion"), "")];
    }
    let fp = s(fs, "fieldPath");
    if fp.is_empty() {
        return vec![required(&p.child("fieldPath"), "")];
    }
    let internal = match convert_downward_label(version, fp) {
        Ok(i) => i,
        Err(e) => {
            return vec![invalid(
                &p.child("fieldPath"),
                fp,
                &format!("error converting fieldPath: {e}"),
            )];
        }
    };
    if let Some((path, subscript)) = split_subscripted(&internal) {
        match path {
            "metadata.annotations" => qualified_name(&subscript.to_lowercase(), p),
            "metadata.labels" => qualified_name(subscript, p),
            _ => vec![invalid(p, path, "does not support subscript")],
        }
    } else if !expressions.contains(&internal.as_str()) {
        vec![not_supported(
            &p.child("fieldPath"),
            internal.as_str(),
            expressions,
        )]
    } else {
        Vec::new()
    }
}

/// `validateContainerResourceFieldSelector`.
pub(crate) fn resource_field_selector(fs: &Value, p: &P, volume: bool) -> Errs {
    let mut errs = Vec::new();
    let resource = s(fs, "resource");
    if volume && s(fs, "containerName").is_empty() {
        errs.push(required(&p.child("containerName"), ""));
    } else if resource.is_empty() {
        errs.push(required(&p.child("resource"), ""));
    } else if !RESOURCE_FIELD_PATHS.contains(&resource)
        && !resource.starts_with("limits.hugepages-")
        && !resource.starts_with("requests.hugepages-")
    {
        errs.push(not_supported(
            &p.child("resource"),
            resource,
            RESOURCE_FIELD_PATHS,
        ));
    }
    if let Some(Ok(div)) = fs.get("divisor").and_then(quantity::from_json)
        && !div.is_zero()
    {
        let d = div.canonical();
        const MEM: &[&str] = &[
            "1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei",
        ];
        let dp = p.child("divisor");
        match resource {
            "limits.cpu" | "requests.cpu" if d != "1m" && d != "1" => {
                errs.push(invalid(
                    &dp,
                    resource,
                    "only divisor's values 1m and 1 are supported with the cpu resource",
                ));
            }
            "limits.memory" | "requests.memory" if !MEM.contains(&d.as_str()) => {
                errs.push(invalid(&dp, resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"));
            }
            "limits.ephemeral-storage" | "requests.ephemeral-storage"
                if !MEM.contains(&d.as_str()) =>
            {
                errs.push(invalid(&dp, resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage resource"));
            }
            _ => {}
        }
        if (resource.starts_with("requests.hugepages-")
            || resource.starts_with("limits.hugepages-"))
            && !MEM.contains(&d.as_str())
        {
            errs.push(invalid(&dp, resource, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, 1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"));
        }
    }
    errs
}

fn container_ports(ports: &[Value], p: &P) -> Errs {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let ip = p.index(i);
        let name = s(port, "name");
        if !name.is_empty() {
            let msgs = is_valid_port_name(name);
            if !msgs.is_empty() {
                errs.extend(name_errs(&ip.child("name"), name, msgs));
            } else if !names.insert(name) {
                errs.push(duplicate(&ip.child("name"), name));
            }
        }
        let cp = int(port, "containerPort").unwrap_or(0);
        if cp == 0 {
            errs.push(required(&ip.child("containerPort"), ""));
        } else {
            for m in is_valid_port_num(cp) {
                errs.push(invalid(&ip.child("containerPort"), cp, &m));
            }
        }
        let hp = int(port, "hostPort").unwrap_or(0);
        if hp != 0 {
            for m in is_valid_port_num(hp) {
                errs.push(invalid(&ip.child("hostPort"), hp, &m));
            }
        }
        errs.extend(protocol(s(port, "protocol"), &ip.child("protocol")));
    }
    errs
}

pub(crate) fn protocol(proto: &str, p: &P) -> Errs {
    match proto {
        "" => vec![required(p, "")],
        "TCP" | "UDP" | "SCTP" => Vec::new(),
        other => vec![not_supported(p, other, &["SCTP", "TCP", "UDP"])],
    }
}

fn env(vars: &[Value], p: &P) -> Errs {
    let mut errs = Vec::new();
    for (i, ev) in vars.iter().enumerate() {
        let ip = p.index(i);
        let name = s(ev, "name");
        if name.is_empty() {
            errs.push(required(&ip.child("name"), ""));
        } else {
            errs.extend(name_errs(
                &ip.child("name"),
                name,
                is_relaxed_env_var_name(name),
            ));
        }
        if let Some(vf) = get(ev, "valueFrom") {
            let vp = ip.child("valueFrom");
            let mut n = 0;
            if let Some(fr) = get(vf, "fieldRef") {
                n += 1;
                errs.extend(object_field_selector(
                    fr,
                    ENV_FIELD_PATHS,
                    &vp.child("fieldRef"),
                ));
            }
            if let Some(rf) = get(vf, "resourceFieldRef") {
                n += 1;
                errs.extend(resource_field_selector(
                    rf,
                    &vp.child("resourceFieldRef"),
                    false,
                ));
            }
            for key in ["configMapKeyRef", "secretKeyRef"] {
                if let Some(kr) = get(vf, key) {
                    n += 1;
                    let kp = vp.child(key);
                    let nm = s(kr, "name");
                    errs.extend(name_errs(
                        &kp.child("name"),
                        nm,
                        name_is_dns_subdomain(nm, false),
                    ));
                    let k = s(kr, "key");
                    if k.is_empty() {
                        errs.push(required(&kp.child("key"), ""));
                    } else {
                        errs.extend(name_errs(&kp.child("key"), k, is_config_map_key(k)));
                    }
                }
            }
            if n == 0 {
                errs.push(invalid(
                    &vp,
                    "",
                    "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`",
                ));
            } else if !s(ev, "value").is_empty() {
                errs.push(invalid(
                    &vp,
                    "",
                    "may not be specified when `value` is not empty",
                ));
            } else if n > 1 {
                errs.push(invalid(
                    &vp,
                    "",
                    "may not have more than one field specified at a time",
                ));
            }
        }
    }
    errs
}

fn env_from(vars: &[Value], p: &P) -> Errs {
    let mut errs = Vec::new();
    for (i, ev) in vars.iter().enumerate() {
        let ip = p.index(i);
        let prefix = s(ev, "prefix");
        if !prefix.is_empty() {
            errs.extend(name_errs(
                &ip.child("prefix"),
                prefix,
                is_relaxed_env_var_name(prefix),
            ));
        }
        let mut n = 0;
        for key in ["configMapRef", "secretRef"] {
            if let Some(r) = get(ev, key) {
                n += 1;
                let name = s(r, "name");
                let np = ip.child(key).child("name");
                if name.is_empty() {
                    errs.push(required(&np, ""));
                } else {
                    errs.extend(name_errs(&np, name, name_is_dns_subdomain(name, true)));
                }
            }
        }
        if n == 0 {
            errs.push(invalid(
                p,
                "",
                "must specify one of: `configMapRef` or `secretRef`",
            ));
        } else if n > 1 {
            errs.push(invalid(
                p,
                "",
                "may not have more than one field specified at a time",
            ));
        }
    }
    errs
}

fn volume_mounts(ctr: &Value, vols: &HashMap<String, Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let devices: HashMap<&str, &str> = arr(ctr, "volumeDevices")
        .iter()
        .map(|d| (s(d, "name"), s(d, "devicePath")))
        .collect();
    let privileged = ctr
        .get("securityContext")
        .is_some_and(|sc| is_true(sc, "privileged"));
    let mut mountpoints = HashSet::new();
    for (i, m) in arr(ctr, "volumeMounts").iter().enumerate() {
        let ip = p.index(i);
        let name = s(m, "name");
        let mount_path = s(m, "mountPath");
        if name.is_empty() {
            errs.push(required(&ip.child("name"), ""));
        }
        if !vols.contains_key(name) {
            errs.push(not_found(&ip.child("name"), name));
        }
        if mount_path.is_empty() {
            errs.push(required(&ip.child("mountPath"), ""));
        }
        if !mountpoints.insert(mount_path) {
            errs.push(invalid(
                &ip.child("mountPath"),
                mount_path,
                "must be unique",
            ));
        }
        if devices.contains_key(name) {
            errs.push(invalid(
                &ip.child("name"),
                name,
                "must not already exist in volumeDevices",
            ));
        }
        if devices.values().any(|d| *d == mount_path) {
            errs.push(invalid(
                &ip.child("mountPath"),
                mount_path,
                "must not already exist as a path in volumeDevices",
            ));
        }
        let sub = s(m, "subPath");
        let sub_expr = s(m, "subPathExpr");
        if vols.get(name).is_some_and(|v| get(v, "image").is_some()) {
            if !sub.is_empty() {
                errs.push(invalid(
                    &ip.child("subPath"),
                    sub,
                    "not allowed in image volume sources",
                ));
            }
            if !sub_expr.is_empty() {
                errs.push(invalid(
                    &ip.child("subPathExpr"),
                    sub_expr,
                    "not allowed in image volume sources",
                ));
            }
        }
        if !sub.is_empty() {
            errs.extend(local_descending_path(sub, &p.child("subPath")));
        }
        if !sub_expr.is_empty() {
            if !sub.is_empty() {
                errs.push(invalid(
                    &ip.child("subPathExpr"),
                    sub_expr,
                    "subPathExpr and subPath are mutually exclusive",
                ));
            }
            errs.extend(local_descending_path(sub_expr, &p.child("subPathExpr")));
        }
        let prop_path = p.child("mountPropagation");
        let propagation = opt_s(m, "mountPropagation");
        if let Some(mp) = propagation {
            if !["Bidirectional", "HostToContainer", "None"].contains(&mp) {
                errs.push(not_supported(
                    &prop_path,
                    mp,
                    &["Bidirectional", "HostToContainer", "None"],
                ));
            }
            if mp == "Bidirectional" && !privileged {
                errs.push(forbidden(
                    &prop_path,
                    "Bidirectional mount propagation is available only to privileged containers",
                ));
            }
        }
        if let Some(rro) = opt_s(m, "recursiveReadOnly") {
            let rp = p.child("recursiveReadOnly");
            match rro {
                "Disabled" => {}
                "Enabled" | "IfPossible" => {
                    if !is_true(m, "readOnly") {
                        errs.push(forbidden(
                            &rp,
                            "may only be specified when readOnly is true",
                        ));
                    }
                    if propagation.is_some_and(|mp| mp != "None") {
                        errs.push(forbidden(
                            &rp,
                            "may only be specified when mountPropagation is None or not specified",
                        ));
                    }
                }
                other => errs.push(not_supported(
                    &rp,
                    other,
                    &["Disabled", "Enabled", "IfPossible"],
                )),
            }
        }
    }
    errs
}

fn volume_devices(ctr: &Value, vols: &HashMap<String, Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let mounts: HashMap<&str, &str> = arr(ctr, "volumeMounts")
        .iter()
        .map(|m| (s(m, "name"), s(m, "mountPath")))
        .collect();
    let mut paths = HashSet::new();
    let mut names = HashSet::new();
    for (i, d) in arr(ctr, "volumeDevices").iter().enumerate() {
        let ip = p.index(i);
        let name = s(d, "name");
        let path = s(d, "devicePath");
        let (matched, is_pvc) = match vols.get(name) {
            Some(v) => (
                true,
                get(v, "persistentVolumeClaim").is_some() || get(v, "ephemeral").is_some(),
            ),
            None => (false, false),
        };
        if name.is_empty() {
            errs.push(required(&ip.child("name"), ""));
        }
        if names.contains(name) {
            errs.push(invalid(&ip.child("name"), name, "must be unique"));
        }
        if matched && !is_pvc {
            errs.push(invalid(
                &ip.child("name"),
                name,
                "can only use volume source type of PersistentVolumeClaim or Ephemeral for block mode",
            ));
        }
        if !matched {
            errs.push(not_found(&ip.child("name"), name));
        }
        if path.is_empty() {
            errs.push(required(&ip.child("devicePath"), ""));
        }
        if paths.contains(path) {
            errs.push(invalid(&ip.child("devicePath"), path, "must be unique"));
        }
        if !path.is_empty() && !path_no_backsteps(path, &p.child("devicePath")).is_empty() {
            errs.push(invalid(
                &ip.child("devicePath"),
                path,
                "can not contain backsteps ('..')",
            ));
        } else {
            paths.insert(path);
        }
        if mounts.contains_key(name) {
            errs.push(invalid(
                &ip.child("name"),
                name,
                "must not already exist in volumeMounts",
            ));
        }
        if mounts.values().any(|m| *m == path) {
            errs.push(invalid(
                &ip.child("devicePath"),
                path,
                "must not already exist as a path in volumeMounts",
            ));
        }
        if !name.is_empty() {
            names.insert(name);
        }
    }
    errs
}

fn port_num_or_name(port: Option<&Value>, p: &P) -> Errs {
    match port {
        Some(Value::Number(n)) => {
            let v = n.as_i64().unwrap_or(0);
            is_valid_port_num(v)
                .iter()
                .map(|m| invalid(p, v, m))
                .collect()
        }
        Some(Value::String(sv)) => name_errs(p, sv, is_valid_port_name(sv)),
        _ => {
            // A missing port decodes to the integer 0.
            is_valid_port_num(0)
                .iter()
                .map(|m| invalid(p, 0, m))
                .collect()
        }
    }
}

fn handler(h: &Value, grace: Option<i64>, p: &P, kinds: &[&str]) -> Errs {
    let mut errs = Vec::new();
    let mut n = 0;
    for kind in kinds {
        let Some(a) = get(h, kind) else { continue };
        let kp = p.child(kind);
        if n > 0 {
            errs.push(forbidden(&kp, "may not specify more than 1 handler type"));
            continue;
        }
        n += 1;
        match *kind {
            "exec" if len_of(a, "command") == 0 => {
                errs.push(required(&kp.child("command"), ""));
            }
            "httpGet" => {
                if s(a, "path").is_empty() {
                    errs.push(required(&kp.child("path"), ""));
                }
                errs.extend(port_num_or_name(a.get("port"), &kp.child("port")));
                let scheme = s(a, "scheme");
                if scheme != "HTTP" && scheme != "HTTPS" {
                    errs.push(not_supported(
                        &kp.child("scheme"),
                        scheme,
                        &["HTTP", "HTTPS"],
                    ));
                }
                for header in arr(a, "httpHeaders") {
                    let name = s(header, "name");
                    for m in is_http_header_name(name) {
                        errs.push(invalid(&kp.child("httpHeaders"), name, &m));
                    }
                }
            }
            "tcpSocket" => errs.extend(port_num_or_name(a.get("port"), &kp.child("port"))),
            "grpc" => {
                let port = int(a, "port").unwrap_or(0);
                errs.extend(
                    is_valid_port_num(port)
                        .iter()
                        .map(|m| invalid(&kp.child("port"), port, m)),
                );
            }
            "sleep" => {
                let secs = int(a, "seconds").unwrap_or(0);
                if let Some(g) = grace
                    && (secs < 0 || secs > g)
                {
                    errs.push(invalid(
                        &kp,
                        secs,
                        &format!(
                            "must be non-negative and less than terminationGracePeriodSeconds ({g})"
                        ),
                    ));
                }
            }
            _ => {}
        }
    }
    if n == 0 {
        errs.push(required(p, "must specify a handler type"));
    }
    errs
}

const PROBE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "grpc"];
const LIFECYCLE_HANDLERS: &[&str] = &["exec", "httpGet", "tcpSocket", "sleep"];

fn probe(pr: &Value, grace: Option<i64>, p: &P) -> Errs {
    let mut errs = handler(pr, grace, p, PROBE_HANDLERS);
    for key in [
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ] {
        errs.extend(nonnegative(int(pr, key).unwrap_or(0), &p.child(key)));
    }
    if let Some(t) = int(pr, "terminationGracePeriodSeconds")
        && t <= 0
    {
        errs.push(invalid(
            &p.child("terminationGracePeriodSeconds"),
            t,
            "must be greater than 0",
        ));
    }
    errs
}

fn probes(ctr: &Value, grace: Option<i64>, p: &P) -> Errs {
    let mut errs = Vec::new();
    for (key, must_be_one, no_tgps) in [
        ("livenessProbe", true, false),
        ("readinessProbe", false, true),
        ("startupProbe", true, false),
    ] {
        let Some(pr) = get(ctr, key) else { continue };
        let pp = p.child(key);
        errs.extend(probe(pr, grace, &pp));
        let st = int(pr, "successThreshold").unwrap_or(0);
        if must_be_one && st != 1 {
            errs.push(invalid(&pp.child("successThreshold"), st, "must be 1"));
        }
        if no_tgps && pr.get("terminationGracePeriodSeconds").is_some() {
            errs.push(invalid(
                &pp.child("terminationGracePeriodSeconds"),
                jv(pr, "terminationGracePeriodSeconds"),
                "must not be set for readinessProbes",
            ));
        }
    }
    errs
}

fn lifecycle(l: &Value, grace: Option<i64>, p: &P) -> Errs {
    let mut errs = Vec::new();
    for key in ["postStart", "preStop"] {
        if let Some(h) = get(l, key) {
            errs.extend(handler(h, grace, &p.child(key), LIFECYCLE_HANDLERS));
        }
    }
    errs
}

fn pull_policy(v: &str, p: &P) -> Errs {
    match v {
        "Always" | "IfNotPresent" | "Never" => Vec::new(),
        "" => vec![required(p, "")],
        other => vec![not_supported(
            p,
            other,
            &["Always", "IfNotPresent", "Never"],
        )],
    }
}

fn resize_policy(list: &[Value], p: &P, pod_restart: &str) -> Errs {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (i, rp) in list.iter().enumerate() {
        let name = s(rp, "resourceName");
        let policy = s(rp, "restartPolicy");
        if !seen.insert(name) {
            errs.push(duplicate(&p.index(i), name));
        }
        match name {
            "cpu" | "memory" => {}
            "" => errs.push(required(p, "")),
            other => errs.push(not_supported(p, other, &["cpu", "memory"])),
        }
        match policy {
            "NotRequired" | "RestartContainer" => {}
            "" => errs.push(required(p, "")),
            other => errs.push(not_supported(
                p,
                other,
                &["NotRequired", "RestartContainer"],
            )),
        }
        if pod_restart == "Never" && policy != "NotRequired" {
            errs.push(invalid(
                p,
                policy,
                "must be 'NotRequired' when `restartPolicy` is 'Never'",
            ));
        }
    }
    errs
}

fn seccomp_profile(sp: Option<&Value>, p: &P) -> Errs {
    let Some(sp) = sp else { return Vec::new() };
    let mut errs = Vec::new();
    let t = s(sp, "type");
    match t {
        "Localhost" | "RuntimeDefault" | "Unconfined" => {}
        "" => errs.push(required(
            &p.child("type"),
            "type is required when seccompProfile is set",
        )),
        other => errs.push(not_supported(
            &p.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    let lp = opt_s(sp, "localhostProfile");
    if t == "Localhost" {
        match lp {
            None => errs.push(required(
                &p.child("localhostProfile"),
                "must be set when seccomp type is Localhost",
            )),
            Some(l) => errs.extend(local_descending_path(l, &p.child("localhostProfile"))),
        }
    } else if lp.is_some() {
        errs.push(invalid(
            &p.child("localhostProfile"),
            sp.clone(),
            "can only be set when seccomp type is Localhost",
        ));
    }
    errs
}

fn apparmor_profile(ap: Option<&Value>, p: &P) -> Errs {
    let Some(ap) = ap else { return Vec::new() };
    let mut errs = Vec::new();
    let lp = opt_s(ap, "localhostProfile");
    match s(ap, "type") {
        "Localhost" => match lp {
            None => errs.push(required(
                &p.child("localhostProfile"),
                "must be set when AppArmor type is Localhost",
            )),
            Some(l) => {
                if l.trim() != l {
                    errs.push(invalid(
                        &p.child("localhostProfile"),
                        l,
                        "must not be padded with whitespace",
                    ));
                } else if l.is_empty() {
                    errs.push(required(
                        &p.child("localhostProfile"),
                        "must be set when AppArmor type is Localhost",
                    ));
                }
                if l.len() > 4095 {
                    errs.push(too_long(&p.child("localhostProfile"), 4095));
                }
            }
        },
        "RuntimeDefault" | "Unconfined" => {
            if let Some(l) = lp {
                errs.push(invalid(
                    &p.child("localhostProfile"),
                    l,
                    "can only be set when AppArmor type is Localhost",
                ));
            }
        }
        "" => errs.push(required(
            &p.child("type"),
            "type is required when appArmorProfile is set",
        )),
        other => errs.push(not_supported(
            &p.child("type"),
            other,
            &["Localhost", "RuntimeDefault", "Unconfined"],
        )),
    }
    errs
}

fn windows_options(wo: Option<&Value>, p: &P) -> Errs {
    let Some(wo) = wo else { return Vec::new() };
    let mut errs = Vec::new();
    if let Some(n) = opt_s(wo, "gmsaCredentialSpecName") {
        for m in is_dns1123_subdomain(n) {
            errs.push(invalid(&p.child("gmsaCredentialSpecName"), n, &m));
        }
    }
    if let Some(c) = opt_s(wo, "gmsaCredentialSpec") {
        if c.is_empty() {
            errs.push(invalid(
                &p.child("gmsaCredentialSpec"),
                c,
                "gmsaCredentialSpec cannot be an empty string",
            ));
        } else if c.len() > 64 * 1024 {
            errs.push(invalid(
                &p.child("gmsaCredentialSpec"),
                c,
                "gmsaCredentialSpec size must be under 64 KiB",
            ));
        }
    }
    if let Some(u) = opt_s(wo, "runAsUserName") {
        let up = p.child("runAsUserName");
        let parts: Vec<&str> = u.split('\\').collect();
        if u.is_empty() {
            errs.push(invalid(&up, u, "runAsUserName cannot be an empty string"));
        } else if u.chars().any(char::is_control) {
            errs.push(invalid(
                &up,
                u,
                "runAsUserName cannot contain control characters",
            ));
        } else if parts.len() > 2 {
            errs.push(invalid(
                &up,
                u,
                "runAsUserName cannot contain more than one backslash",
            ));
        } else {
            let (domain, user) = if parts.len() == 1 {
                ("", parts[0])
            } else {
                (parts[0], parts[1])
            };
            if domain.len() >= 256 {
                errs.push(invalid(
                    &up,
                    u,
                    "runAsUserName's Domain length must be under 256 characters",
                ));
            }
            if user.is_empty() {
                errs.push(invalid(&up, u, "runAsUserName's User cannot be empty"));
            } else if user.len() > 104 {
                errs.push(invalid(
                    &up,
                    u,
                    "runAsUserName's User length must not be longer than 104 characters",
                ));
            }
            if !user.is_empty() && user.chars().all(|c| c == '.' || c == ' ') {
                errs.push(invalid(
                    &up,
                    u,
                    "runAsUserName's User cannot contain only periods or spaces",
                ));
            }
            if user.chars().any(|c| "\"/\\:;|=,+*?<>@[]".contains(c)) {
                errs.push(invalid(
                    &up,
                    u,
                    "runAsUserName's User cannot contain the following characters: \"/\\:;|=,+*?<>@[]",
                ));
            }
        }
    }
    errs
}

fn id_range(v: &Value, key: &str, p: &P) -> Errs {
    match int(v, key) {
        Some(id) => is_valid_user_id(id)
            .iter()
            .map(|m| invalid(&p.child(key), id, m))
            .collect(),
        None => Vec::new(),
    }
}

/// `ValidateSecurityContext` (container).
fn container_security_context(sc: Option<&Value>, p: &P, host_users: bool) -> Errs {
    let Some(sc) = sc else { return Vec::new() };
    let mut errs = id_range(sc, "runAsUser", p);
    errs.extend(id_range(sc, "runAsGroup", p));
    if let Some(pm) = opt_s(sc, "procMount") {
        if pm != "Default" && pm != "Unmasked" {
            errs.push(not_supported(
                &p.child("procMount"),
                pm,
                &["Default", "Unmasked"],
            ));
        }
        if host_users && pm == "Unmasked" {
            errs.push(invalid(
                &p.child("procMount"),
                pm,
                "`hostUsers` must be false to use `Unmasked`",
            ));
        }
    }
    errs.extend(seccomp_profile(
        get(sc, "seccompProfile"),
        &p.child("seccompProfile"),
    ));
    if boolean(sc, "allowPrivilegeEscalation") == Some(false) {
        if is_true(sc, "privileged") {
            errs.push(invalid(
                p,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `privileged` to true",
            ));
        }
        if let Some(caps) = get(sc, "capabilities")
            && str_list(caps, "add").contains(&"CAP_SYS_ADMIN")
        {
            errs.push(invalid(
                p,
                sc.clone(),
                "cannot set `allowPrivilegeEscalation` to false and `capabilities.Add` CAP_SYS_ADMIN",
            ));
        }
    }
    errs.extend(windows_options(
        get(sc, "windowsOptions"),
        &p.child("windowsOptions"),
    ));
    errs.extend(apparmor_profile(
        get(sc, "appArmorProfile"),
        &p.child("appArmorProfile"),
    ));
    errs
}

/// Whether the container is an init container with `restartPolicy: Always` (a sidecar).
fn is_restartable(ctr: &Value) -> bool {
    opt_s(ctr, "restartPolicy") == Some("Always")
}

struct Ctx<'a> {
    vols: &'a HashMap<String, Value>,
    claim_names: &'a BTreeSet<String>,
    grace: Option<i64>,
    restart: &'a str,
    host_users: bool,
}

fn container_common(ctr: &Value, cx: &Ctx<'_>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let name = s(ctr, "name");
    if name.is_empty() {
        errs.push(required(&p.child("name"), ""));
    } else {
        errs.extend(dns_label(name, &p.child("name")));
    }
    if s(ctr, "image").is_empty() {
        errs.push(required(&p.child("image"), ""));
    }
    match s(ctr, "terminationMessagePolicy") {
        "File" | "FallbackToLogsOnError" => {}
        "" => errs.push(required(&p.child("terminationMessagePolicy"), "")),
        other => errs.push(not_supported(
            &p.child("terminationMessagePolicy"),
            other,
            &["File", "FallbackToLogsOnError"],
        )),
    }
    errs.extend(container_ports(arr(ctr, "ports"), &p.child("ports")));
    errs.extend(env(arr(ctr, "env"), &p.child("env")));
    errs.extend(env_from(arr(ctr, "envFrom"), &p.child("envFrom")));
    errs.extend(volume_mounts(ctr, cx.vols, &p.child("volumeMounts")));
    errs.extend(volume_devices(ctr, cx.vols, &p.child("volumeDevices")));
    errs.extend(pull_policy(
        s(ctr, "imagePullPolicy"),
        &p.child("imagePullPolicy"),
    ));
    errs.extend(resource_requirements(
        get(ctr, "resources"),
        cx.claim_names,
        &p.child("resources"),
        NameRule::Container,
    ));
    errs.extend(resize_policy(
        arr(ctr, "resizePolicy"),
        &p.child("resizePolicy"),
        cx.restart,
    ));
    errs.extend(container_security_context(
        get(ctr, "securityContext"),
        &p.child("securityContext"),
        cx.host_users,
    ));
    errs
}

fn host_port_conflicts(containers: &[&Value], p: &P, offset: usize) -> Errs {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for (ci, ctr) in containers.iter().enumerate() {
        for (pi, port) in arr(ctr, "ports").iter().enumerate() {
            let hp = int(port, "hostPort").unwrap_or(0);
            if hp == 0 {
                continue;
            }
            let key = format!("{}/{}/{hp}", s(port, "protocol"), s(port, "hostIP"));
            if !seen.insert(key.clone()) {
                errs.push(duplicate(
                    &p.index(ci + offset)
                        .child("ports")
                        .index(pi)
                        .child("hostPort"),
                    key,
                ));
            }
        }
    }
    errs
}

fn containers(spec: &Value, cx: &Ctx<'_>, p: &P) -> Errs {
    let list = arr(spec, "containers");
    if list.is_empty() {
        return vec![required(p, "")];
    }
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, ctr) in list.iter().enumerate() {
        let cp = p.index(i);
        errs.extend(container_common(ctr, cx, &cp));
        let name = s(ctr, "name");
        if !names.insert(name) {
            errs.push(duplicate(&cp.child("name"), name));
        }
        if let Some(l) = get(ctr, "lifecycle") {
            errs.extend(lifecycle(l, cx.grace, &cp.child("lifecycle")));
        }
        errs.extend(probes(ctr, cx.grace, &cp));
        if ctr.get("restartPolicy").is_some() {
            errs.push(forbidden(
                &cp.child("restartPolicy"),
                "may not be set for non-init containers",
            ));
        }
    }
    let refs: Vec<&Value> = list.iter().collect();
    errs.extend(host_port_conflicts(&refs, p, 0));
    errs
}

fn init_containers(spec: &Value, cx: &Ctx<'_>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let mut names: HashSet<&str> = arr(spec, "containers")
        .iter()
        .map(|c| s(c, "name"))
        .collect();
    for (i, ctr) in arr(spec, "initContainers").iter().enumerate() {
        let cp = p.index(i);
        errs.extend(container_common(ctr, cx, &cp));
        if let Some(rp) = opt_s(ctr, "restartPolicy")
            && rp != "Always"
        {
            errs.push(not_supported(&cp.child("restartPolicy"), rp, &["Always"]));
        }
        let name = s(ctr, "name");
        if names.contains(name) {
            errs.push(duplicate(&cp.child("name"), name));
        } else if !name.is_empty() {
            names.insert(name);
        }
        errs.extend(host_port_conflicts(&[ctr], p, i));
        if is_restartable(ctr) {
            if let Some(l) = get(ctr, "lifecycle") {
                errs.extend(lifecycle(l, cx.grace, &cp.child("lifecycle")));
            }
            errs.extend(probes(ctr, cx.grace, &cp));
        } else {
            for key in [
                "lifecycle",
                "livenessProbe",
                "readinessProbe",
                "startupProbe",
            ] {
                if get(ctr, key).is_some() {
                    errs.push(forbidden(
                        &cp.child(key),
                        "may not be set for init containers without restartPolicy=Always",
                    ));
                }
            }
        }
    }
    errs
}

fn ephemeral_containers(spec: &Value, cx: &Ctx<'_>, p: &P) -> Errs {
    let list = arr(spec, "ephemeralContainers");
    let mut errs = Vec::new();
    if list.is_empty() {
        return errs;
    }
    let mut other: HashSet<&str> = HashSet::new();
    for key in ["containers", "initContainers"] {
        for c in arr(spec, key) {
            other.insert(s(c, "name"));
        }
    }
    let mut all = other.clone();
    for (i, ec) in list.iter().enumerate() {
        let ip = p.index(i);
        errs.extend(container_common(ec, cx, &ip));
        let image = s(ec, "image");
        if image.trim() != image {
            errs.push(invalid(
                &ip.child("image"),
                image,
                "must not have leading or trailing whitespace",
            ));
        }
        let name = s(ec, "name");
        if !all.insert(name) {
            errs.push(duplicate(&ip.child("name"), name));
        }
        let target = s(ec, "targetContainerName");
        if !target.is_empty() && !other.contains(target) {
            errs.push(not_found(&ip.child("targetContainerName"), target));
        }
        for key in [
            "ports",
            "resources",
            "livenessProbe",
            "readinessProbe",
            "startupProbe",
            "lifecycle",
            "resizePolicy",
            "restartPolicy",
        ] {
            if !semantic_eq(ec.get(key), None) {
                errs.push(forbidden(
                    &ip.child(key),
                    "cannot be set for an Ephemeral Container",
                ));
            }
        }
        for (j, vm) in arr(ec, "volumeMounts").iter().enumerate() {
            for key in ["subPath", "subPathExpr"] {
                if !s(vm, key).is_empty() {
                    errs.push(forbidden(
                        &ip.child("volumeMounts").index(j).child(key),
                        "cannot be set for an Ephemeral Container",
                    ));
                }
            }
        }
    }
    errs
}

fn volumes(
    spec: &Value,
    pod_name: Option<&str>,
    p: &P,
    opts: PodOpts,
) -> (HashMap<String, Value>, Errs) {
    let mut errs = Vec::new();
    let mut all: HashMap<String, Value> = HashMap::new();
    let list = arr(spec, "volumes");
    let created_pvcs: HashSet<String> = match pod_name.filter(|n| !n.is_empty()) {
        Some(pod) => list
            .iter()
            .filter(|v| get(v, "ephemeral").is_some())
            .map(|v| format!("{pod}-{}", s(v, "name")))
            .collect(),
        None => HashSet::new(),
    };
    for (i, vol) in list.iter().enumerate() {
        let ip = p.index(i);
        let np = ip.child("name");
        let name = s(vol, "name");
        let mut el = volume_source(vol, &ip, name, pod_name, opts.resource_is_pod);
        if name.is_empty() {
            el.push(required(&np, ""));
        } else {
            el.extend(dns_label(name, &np));
        }
        if all.contains_key(name) {
            el.push(duplicate(&np, name));
        }
        if el.is_empty() {
            all.insert(name.to_string(), vol.clone());
        } else {
            errs.extend(el);
        }
        if let Some(pvc) = get(vol, "persistentVolumeClaim") {
            let claim = s(pvc, "claimName");
            if created_pvcs.contains(claim) {
                errs.push(invalid(
                    &ip.child("persistentVolumeClaim").child("claimName"),
                    claim,
                    "must not reference a PVC that gets created for an ephemeral volume",
                ));
            }
        }
    }
    (all, errs)
}

fn resource_claims(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let mut names = HashSet::new();
    for (i, claim) in arr(spec, "resourceClaims").iter().enumerate() {
        let ip = p.index(i);
        let name = s(claim, "name");
        if name.is_empty() {
            errs.push(required(&ip.child("name"), ""));
        } else if names.contains(name) {
            errs.push(duplicate(&ip.child("name"), name));
        } else {
            errs.extend(dns_label(name, &ip.child("name")));
            names.insert(name);
        }
        let rcn = opt_s(claim, "resourceClaimName");
        let rctn = opt_s(claim, "resourceClaimTemplateName");
        if rcn.is_some() && rctn.is_some() {
            errs.push(invalid(
                &ip,
                claim.clone(),
                "at most one of `resourceClaimName` or `resourceClaimTemplateName` may be specified",
            ));
        }
        if rcn.is_none() && rctn.is_none() {
            errs.push(invalid(
                &ip,
                claim.clone(),
                "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`",
            ));
        }
        if let Some(n) = rcn {
            errs.extend(name_errs(
                &ip.child("resourceClaimName"),
                n,
                name_is_dns_subdomain(n, false),
            ));
        }
        if let Some(n) = rctn {
            errs.extend(name_errs(
                &ip.child("resourceClaimTemplateName"),
                n,
                name_is_dns_subdomain(n, false),
            ));
        }
    }
    errs
}

const SYSCTL_REGEX: &str =
    "^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$";

fn is_valid_sysctl_name(name: &str) -> bool {
    if name.len() > 253 || name.is_empty() {
        return false;
    }
    name.split(['.', '/']).all(|seg| {
        let b = seg.as_bytes();
        !b.is_empty()
            && (b[0].is_ascii_lowercase() || b[0].is_ascii_digit())
            && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
            && b.iter()
                .all(|&c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-' || c == b'_')
    })
}

/// `utilsysctl.GetNamespace`: which host namespace a sysctl belongs to.
fn sysctl_namespace(name: &str) -> Option<&'static str> {
    let n = name.replace('/', ".");
    if n.starts_with("net.") {
        Some("net")
    } else if n.starts_with("kernel.shm")
        || n.starts_with("kernel.msg")
        || n == "kernel.sem"
        || n.starts_with("fs.mqueue.")
    {
        Some("ipc")
    } else {
        None
    }
}

fn pod_security_context(spec: &Value, p: &P) -> Errs {
    let Some(sc) = get(spec, "securityContext") else {
        return Vec::new();
    };
    let scp = p.child("securityContext");
    let mut errs = id_range(sc, "fsGroup", &scp);
    errs.extend(id_range(sc, "runAsUser", &scp));
    errs.extend(id_range(sc, "runAsGroup", &scp));
    for (g, gid) in arr(sc, "supplementalGroups").iter().enumerate() {
        let gid = gid.as_i64().unwrap_or(0);
        for m in is_valid_user_id(gid) {
            errs.push(invalid(&scp.child("supplementalGroups").index(g), gid, &m));
        }
    }
    if is_true(spec, "shareProcessNamespace") && is_true(spec, "hostPID") {
        errs.push(invalid(
            &scp.child("shareProcessNamespace"),
            true,
            "ShareProcessNamespace and HostPID cannot both be enabled",
        ));
    }
    let sysctls = arr(sc, "sysctls");
    if !sysctls.is_empty() {
        let sp = scp.child("sysctls");
        let mut names = HashSet::new();
        for (i, sy) in sysctls.iter().enumerate() {
            let np = sp.index(i).child("name");
            let name = s(sy, "name");
            if name.is_empty() {
                errs.push(required(&np, ""));
            } else if !is_valid_sysctl_name(name) {
                errs.push(invalid(
                    &np,
                    name,
                    &format!("must have at most 253 characters and match regex {SYSCTL_REGEX}"),
                ));
            } else if names.contains(name) {
                errs.push(duplicate(&np, name));
            }
            match sysctl_namespace(name) {
                Some("net") if is_true(spec, "hostNetwork") => errs.push(invalid(
                    &np,
                    name,
                    "may not be specified when 'hostNetwork' is true",
                )),
                Some("ipc") if is_true(spec, "hostIPC") => errs.push(invalid(
                    &np,
                    name,
                    "may not be specified when 'hostIPC' is true",
                )),
                _ => {}
            }
            names.insert(name);
        }
    }
    if let Some(pol) = opt_s(sc, "fsGroupChangePolicy")
        && pol != "Always"
        && pol != "OnRootMismatch"
    {
        errs.push(not_supported(
            &scp.child("fsGroupChangePolicy"),
            pol,
            &["Always", "OnRootMismatch"],
        ));
    }
    errs.extend(seccomp_profile(
        get(sc, "seccompProfile"),
        &scp.child("seccompProfile"),
    ));
    errs.extend(windows_options(
        get(sc, "windowsOptions"),
        &scp.child("windowsOptions"),
    ));
    errs.extend(apparmor_profile(
        get(sc, "appArmorProfile"),
        &scp.child("appArmorProfile"),
    ));
    if let Some(pol) = opt_s(sc, "supplementalGroupsPolicy")
        && pol != "Merge"
        && pol != "Strict"
    {
        errs.push(not_supported(
            &scp.child("supplementalGroupsPolicy"),
            pol,
            &["Merge", "Strict"],
        ));
    }
    if let Some(pol) = opt_s(sc, "seLinuxChangePolicy")
        && pol != "MountOption"
        && pol != "Recursive"
    {
        errs.push(not_supported(
            &scp.child("seLinuxChangePolicy"),
            pol,
            &["MountOption", "Recursive"],
        ));
    }
    errs
}

fn label_keys(p: &P, keys: &[&str], selector: Option<&Value>) -> Errs {
    if keys.is_empty() {
        return Vec::new();
    }
    if selector.is_none() {
        return vec![forbidden(
            p,
            "must not be specified when labelSelector is not set",
        )];
    }
    keys.iter()
        .enumerate()
        .flat_map(|(i, k)| validate_label_name(k, &p.index(i)))
        .collect()
}

fn pod_affinity_term(term: &Value, p: &P) -> Errs {
    let sel = get(term, "labelSelector");
    let mut errs = validate_label_selector(sel, false, &p.child("labelSelector"));
    errs.extend(validate_label_selector(
        get(term, "namespaceSelector"),
        false,
        &p.child("namespaceSelector"),
    ));
    for ns in str_list(term, "namespaces") {
        errs.extend(name_errs(
            &p.child("namespace"),
            ns,
            name_is_dns_label(ns, false),
        ));
    }
    let match_keys = str_list(term, "matchLabelKeys");
    let mismatch_keys = str_list(term, "mismatchLabelKeys");
    errs.extend(label_keys(&p.child("matchLabelKeys"), &match_keys, sel));
    errs.extend(label_keys(
        &p.child("mismatchLabelKeys"),
        &mismatch_keys,
        sel,
    ));
    if let Some(sel) = sel {
        let mut sel_keys: HashSet<&str> = str_map(sel, "matchLabels").keys().copied().collect();
        for expr in arr(sel, "matchExpressions") {
            let key = s(expr, "key");
            if let Some(i) = match_keys.iter().rposition(|k| *k == key)
                && sel_keys.contains(key)
            {
                errs.push(invalid(
                    &p.index(i),
                    key,
                    "exists in both matchLabelKeys and labelSelector",
                ));
            }
            sel_keys.insert(key);
        }
    }
    for (i, k) in match_keys.iter().enumerate() {
        if mismatch_keys.contains(k) {
            errs.push(invalid(
                &p.child("matchLabelKeys").index(i),
                *k,
                "exists in both matchLabelKeys and mismatchLabelKeys",
            ));
        }
    }
    let tk = s(term, "topologyKey");
    if tk.is_empty() {
        errs.push(required(&p.child("topologyKey"), "can not be empty"));
    }
    errs.extend(validate_label_name(tk, &p.child("topologyKey")));
    errs
}

fn affinity(spec: &Value, p: &P) -> Errs {
    let Some(a) = get(spec, "affinity") else {
        return Vec::new();
    };
    let ap = p.child("affinity");
    let mut errs = Vec::new();
    if let Some(na) = get(a, "nodeAffinity") {
        let np = ap.child("nodeAffinity");
        if let Some(r) = get(na, "requiredDuringSchedulingIgnoredDuringExecution") {
            errs.extend(validate_node_selector(
                r,
                false,
                &np.child("requiredDuringSchedulingIgnoredDuringExecution"),
            ));
        }
        let pp = np.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in arr(na, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            let w = int(t, "weight").unwrap_or(0);
            if !(1..=100).contains(&w) {
                errs.push(invalid(
                    &pp.index(i).child("weight"),
                    w,
                    "must be in the range 1-100",
                ));
            }
            let pref = get(t, "preference").cloned().unwrap_or(Value::Null);
            errs.extend(node_selector_term(
                &pref,
                true,
                &pp.index(i).child("preference"),
            ));
        }
    }
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = get(a, key) else { continue };
        let kp = ap.child(key);
        let rp = kp.child("requiredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in arr(pa, "requiredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            errs.extend(pod_affinity_term(t, &rp.index(i)));
        }
        let pp = kp.child("preferredDuringSchedulingIgnoredDuringExecution");
        for (i, t) in arr(pa, "preferredDuringSchedulingIgnoredDuringExecution")
            .iter()
            .enumerate()
        {
            let w = int(t, "weight").unwrap_or(0);
            if !(1..=100).contains(&w) {
                errs.push(invalid(
                    &pp.index(i).child("weight"),
                    w,
                    "must be in the range 1-100",
                ));
            }
            let term = get(t, "podAffinityTerm").cloned().unwrap_or(Value::Null);
            errs.extend(pod_affinity_term(
                &term,
                &pp.index(i).child("podAffinityTerm"),
            ));
        }
    }
    errs
}

fn dns_config(spec: &Value, p: &P) -> Errs {
    let dp = p.child("dnsConfig");
    let cfg = get(spec, "dnsConfig");
    let mut errs = Vec::new();
    if s(spec, "dnsPolicy") == "None" {
        match cfg {
            None => {
                return vec![required(
                    &dp,
                    "must provide `dnsConfig` when `dnsPolicy` is None",
                )];
            }
            Some(c) if len_of(c, "nameservers") == 0 => {
                return vec![required(
                    &dp.child("nameservers"),
                    "must provide at least one DNS nameserver when `dnsPolicy` is None",
                )];
            }
            _ => {}
        }
    }
    let Some(cfg) = cfg else { return errs };
    let ns = str_list(cfg, "nameservers");
    if ns.len() > 3 {
        errs.push(invalid(
            &dp.child("nameservers"),
            jv(cfg, "nameservers"),
            "must not have more than 3 nameservers",
        ));
    }
    for (i, n) in ns.iter().enumerate() {
        errs.extend(valid_ip(&dp.child("nameservers").index(i), n));
    }
    let searches = str_list(cfg, "searches");
    if searches.len() > 32 {
        errs.push(invalid(
            &dp.child("searches"),
            jv(cfg, "searches"),
            "must not have more than 32 search paths",
        ));
    }
    if searches.join(" ").len() > 2048 {
        errs.push(invalid(
            &dp.child("searches"),
            jv(cfg, "searches"),
            "must not have more than 2048 characters (including spaces) in the search list",
        ));
    }
    for (i, search) in searches.iter().enumerate() {
        if *search != "." {
            let trimmed = search.strip_suffix('.').unwrap_or(search);
            errs.extend(name_errs(
                &dp.child("searches").index(i),
                trimmed,
                is_dns1123_subdomain_with_underscore(trimmed),
            ));
        }
    }
    for (i, o) in arr(cfg, "options").iter().enumerate() {
        if s(o, "name").is_empty() {
            errs.push(required(&dp.child("options").index(i), "must not be empty"));
        }
    }
    errs
}

fn topology_spread(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let list = arr(spec, "topologySpreadConstraints");
    let tp = p.child("topologySpreadConstraints");
    for (i, c) in list.iter().enumerate() {
        let cp = tp.index(i);
        let skew = int(c, "maxSkew").unwrap_or(0);
        if skew <= 0 {
            errs.push(invalid(
                &cp.child("maxSkew"),
                skew,
                "must be greater than zero",
            ));
        }
        let key = s(c, "topologyKey");
        if key.is_empty() {
            errs.push(required(&cp.child("topologyKey"), "can not be empty"));
        }
        let when = s(c, "whenUnsatisfiable");
        if when != "DoNotSchedule" && when != "ScheduleAnyway" {
            errs.push(not_supported(
                &cp.child("whenUnsatisfiable"),
                when,
                &["DoNotSchedule", "ScheduleAnyway"],
            ));
        }
        if list[i + 1..]
            .iter()
            .any(|o| s(o, "topologyKey") == key && s(o, "whenUnsatisfiable") == when)
        {
            errs.push(duplicate(
                &cp.child("{topologyKey, whenUnsatisfiable}"),
                format!("{{{key}, {when}}}"),
            ));
        }
        if let Some(md) = int(c, "minDomains") {
            if md <= 0 {
                errs.push(invalid(
                    &cp.child("minDomains"),
                    md,
                    "must be greater than zero",
                ));
            }
            if when != "DoNotSchedule" {
                errs.push(invalid(
                    &cp.child("minDomains"),
                    md,
                    &format!(
                        "can only use minDomains if whenUnsatisfiable=DoNotSchedule, not {when}"
                    ),
                ));
            }
        }
        for key in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(v) = opt_s(c, key)
                && v != "Honor"
                && v != "Ignore"
            {
                errs.push(not_supported(&cp.child(key), v, &["Honor", "Ignore"]));
            }
        }
        let sel = get(c, "labelSelector");
        let keys = str_list(c, "matchLabelKeys");
        if !keys.is_empty() {
            let mp = cp.child("matchLabelKeys");
            let mut sel_keys = HashSet::new();
            match sel {
                Some(sel) => {
                    sel_keys.extend(str_map(sel, "matchLabels").keys().map(|k| k.to_string()));
                    sel_keys.extend(
                        arr(sel, "matchExpressions")
                            .iter()
                            .map(|e| s(e, "key").to_string()),
                    );
                }
                None => errs.push(forbidden(
                    &mp,
                    "must not be specified when labelSelector is not set",
                )),
            }
            for (j, k) in keys.iter().enumerate() {
                errs.extend(validate_label_name(k, &mp.index(j)));
                if sel_keys.contains(*k) {
                    errs.push(invalid(
                        &mp.index(j),
                        *k,
                        "exists in both matchLabelKeys and labelSelector",
                    ));
                }
            }
        }
        errs.extend(validate_label_selector(
            sel,
            false,
            &cp.child("labelSelector"),
        ));
    }
    errs
}

/// Every container of a spec with its path (`VisitContainersWithPath`).
fn visit_containers<'a>(spec: &'a Value, p: &P) -> Vec<(&'a Value, P)> {
    let mut out = Vec::new();
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        for (i, c) in arr(spec, key).iter().enumerate() {
            out.push((c, p.child(key).index(i)));
        }
    }
    out
}

fn windows_host_process(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let pod_hp = get_in(spec, &["securityContext", "windowsOptions"])
        .and_then(|w| boolean(w, "hostProcess"));
    let mut count = 0;
    let mut hp_count = 0;
    for (c, cp) in visit_containers(spec, p) {
        count += 1;
        let c_hp = get_in(c, &["securityContext", "windowsOptions"])
            .and_then(|w| boolean(w, "hostProcess"));
        if let (Some(ph), Some(ch)) = (pod_hp, c_hp)
            && ph != ch
        {
            errs.push(invalid(
                &cp.child("securityContext")
                    .child("windowsOptions")
                    .child("hostProcess"),
                ch,
                &format!("pod hostProcess value must be identical if both are specified, was {ph}"),
            ));
        }
        if c_hp == Some(true) || (c_hp.is_none() && pod_hp == Some(true)) {
            hp_count += 1;
        }
    }
    if hp_count > 0 {
        if hp_count != count {
            errs.push(invalid(
                p,
                "",
                "If pod contains any hostProcess containers then all containers must be HostProcess containers",
            ));
        }
        if !is_true(spec, "hostNetwork") {
            errs.push(invalid(
                &p.child("hostNetwork"),
                false,
                "hostNetwork must be true if pod contains any hostProcess containers",
            ));
        }
    }
    errs
}

fn os_checks(spec: &Value, p: &P) -> Errs {
    let Some(os) = get(spec, "os") else {
        return Vec::new();
    };
    let op = p.child("os");
    let name = s(os, "name");
    if name.is_empty() {
        return vec![required(&op.child("name"), "cannot be empty")];
    }
    if name != "linux" && name != "windows" {
        return vec![not_supported(&op, name, &["linux", "windows"])];
    }
    let mut errs = Vec::new();
    let sc = get(spec, "securityContext");
    let scp = p.child("securityContext");
    if name == "linux" {
        if sc.is_some_and(|sc| get(sc, "windowsOptions").is_some()) {
            errs.push(forbidden(
                &scp.child("windowsOptions"),
                "windows options cannot be set for a linux pod",
            ));
        }
        for (c, cp) in visit_containers(spec, p) {
            if get_in(c, &["securityContext", "windowsOptions"]).is_some() {
                errs.push(forbidden(
                    &cp.child("securityContext").child("windowsOptions"),
                    "windows options cannot be set for a linux pod",
                ));
            }
        }
        return errs;
    }
    const MSG: &str = "cannot be set for a windows pod";
    if let Some(sc) = sc {
        for key in ["appArmorProfile", "seLinuxOptions"] {
            if get(sc, key).is_some() {
                errs.push(forbidden(&scp.child(key), MSG));
            }
        }
        if spec.get("hostUsers").is_some() {
            errs.push(forbidden(&p.child("hostUsers"), MSG));
        }
        if is_true(spec, "hostPID") {
            errs.push(forbidden(&p.child("hostPID"), MSG));
        }
        if is_true(spec, "hostIPC") {
            errs.push(forbidden(&p.child("hostIPC"), MSG));
        }
        for key in ["seccompProfile", "fsGroup", "fsGroupChangePolicy"] {
            if get(sc, key).is_some() {
                errs.push(forbidden(&scp.child(key), MSG));
            }
        }
        if len_of(sc, "sysctls") > 0 {
            errs.push(forbidden(&scp.child("sysctls"), MSG));
        }
        if spec.get("shareProcessNamespace").is_some() {
            errs.push(forbidden(&p.child("shareProcessNamespace"), MSG));
        }
        for key in [
            "runAsUser",
            "runAsGroup",
            "supplementalGroups",
            "supplementalGroupsPolicy",
            "seLinuxChangePolicy",
        ] {
            if get(sc, key).is_some() {
                errs.push(forbidden(&scp.child(key), MSG));
            }
        }
    }
    for (c, cp) in visit_containers(spec, p) {
        let Some(csc) = get(c, "securityContext") else {
            continue;
        };
        let csp = cp.child("securityContext");
        for key in [
            "appArmorProfile",
            "seLinuxOptions",
            "seccompProfile",
            "capabilities",
            "readOnlyRootFilesystem",
            "privileged",
            "allowPrivilegeEscalation",
            "procMount",
            "runAsUser",
            "runAsGroup",
        ] {
            if get(csc, key).is_some() {
                errs.push(forbidden(&csp.child(key), MSG));
            }
        }
    }
    errs
}

/// `ValidatePodSpec`.
pub(crate) fn pod_spec(spec: &Value, pod_name: Option<&str>, p: &P, opts: PodOpts) -> Errs {
    let mut errs = Vec::new();
    let grace = int(spec, "terminationGracePeriodSeconds");
    if grace.is_none() {
        errs.push(required(&p.child("terminationGracePeriodSeconds"), ""));
    }
    let host_users = boolean(spec, "hostUsers").unwrap_or(true);
    let (vols, verrs) = volumes(spec, pod_name, &p.child("volumes"), opts);
    errs.extend(verrs);
    let claim_names: BTreeSet<String> = arr(spec, "resourceClaims")
        .iter()
        .map(|c| s(c, "name").to_string())
        .filter(|n| !n.is_empty())
        .collect();
    errs.extend(resource_claims(spec, &p.child("resourceClaims")));
    let restart = s(spec, "restartPolicy");
    let cx = Ctx {
        vols: &vols,
        claim_names: &claim_names,
        grace,
        restart,
        host_users,
    };
    errs.extend(containers(spec, &cx, &p.child("containers")));
    errs.extend(init_containers(spec, &cx, &p.child("initContainers")));
    errs.extend(ephemeral_containers(
        spec,
        &cx,
        &p.child("ephemeralContainers"),
    ));
    // validatePodHostNetworkDeps
    if is_true(spec, "hostNetwork") {
        for (i, c) in arr(spec, "containers").iter().enumerate() {
            for (j, port) in arr(c, "ports").iter().enumerate() {
                let hp = int(port, "hostPort").unwrap_or(0);
                let cp = int(port, "containerPort").unwrap_or(0);
                if (opts.resource_is_pod || hp != 0) && hp != cp {
                    errs.push(invalid(
                        &p.child("containers")
                            .index(i)
                            .child("ports")
                            .index(j)
                            .child("hostPort"),
                        hp,
                        "must match `containerPort` when `hostNetwork` is true",
                    ));
                }
            }
        }
    }
    match restart {
        "Always" | "OnFailure" | "Never" => {}
        "" => errs.push(required(&p.child("restartPolicy"), "")),
        other => errs.push(not_supported(
            &p.child("restartPolicy"),
            other,
            &["Always", "OnFailure", "Never"],
        )),
    }
    match s(spec, "dnsPolicy") {
        "ClusterFirstWithHostNet" | "ClusterFirst" | "Default" | "None" => {}
        "" => errs.push(required(&p.child("dnsPolicy"), "")),
        other => errs.push(not_supported(
            &p.child("dnsPolicy"),
            other,
            &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"],
        )),
    }
    errs.extend(validate_labels(
        get(spec, "nodeSelector"),
        &p.child("nodeSelector"),
    ));
    errs.extend(pod_security_context(spec, p));
    errs.extend(affinity(spec, p));
    errs.extend(dns_config(spec, p));
    for (i, g) in arr(spec, "readinessGates").iter().enumerate() {
        errs.extend(qualified_name(
            s(g, "conditionType"),
            &p.child("readinessGates").index(i).child("conditionType"),
        ));
    }
    let mut gates = HashSet::new();
    for (i, g) in arr(spec, "schedulingGates").iter().enumerate() {
        let gp = p.child("schedulingGates").index(i);
        let name = s(g, "name");
        errs.extend(qualified_name(name, &gp));
        if !gates.insert(name) {
            errs.push(duplicate(&gp, name));
        }
    }
    errs.extend(topology_spread(spec, p));
    errs.extend(windows_host_process(spec, p));
    if boolean(spec, "hostUsers") == Some(false) {
        const MSG: &str = "when `pod.Spec.HostUsers` is false";
        if is_true(spec, "hostNetwork") {
            errs.push(forbidden(&p.child("hostNetwork"), MSG));
        }
        if is_true(spec, "hostPID") {
            errs.push(forbidden(&p.child("HostPID"), MSG));
        }
        if is_true(spec, "hostIPC") {
            errs.push(forbidden(&p.child("HostIPC"), MSG));
        }
    }
    let sa = s(spec, "serviceAccountName");
    if !sa.is_empty() {
        errs.extend(name_errs(
            &p.child("serviceAccountName"),
            sa,
            name_is_dns_subdomain(sa, false),
        ));
    }
    let node = s(spec, "nodeName");
    if !node.is_empty() {
        errs.extend(name_errs(
            &p.child("nodeName"),
            node,
            name_is_dns_subdomain(node, false),
        ));
    }
    if let Some(ads) = int(spec, "activeDeadlineSeconds")
        && !(1..=i64::from(i32::MAX)).contains(&ads)
    {
        errs.push(invalid(
            &p.child("activeDeadlineSeconds"),
            ads,
            &inclusive_range_error(1, i64::from(i32::MAX)),
        ));
    }
    for key in ["hostname", "subdomain"] {
        let v = s(spec, key);
        if !v.is_empty() {
            errs.extend(dns_label(v, &p.child(key)));
        }
    }
    errs.extend(tolerations(
        arr(spec, "tolerations"),
        &p.child("tolerations"),
    ));
    for (i, ha) in arr(spec, "hostAliases").iter().enumerate() {
        let hp = p.child("hostAliases").index(i);
        errs.extend(valid_ip(&hp.child("ip"), s(ha, "ip")));
        for (j, h) in str_list(ha, "hostnames").iter().enumerate() {
            errs.extend(dns_subdomain(h, &hp.child("hostnames").index(j)));
        }
    }
    let pcn = s(spec, "priorityClassName");
    if !pcn.is_empty() {
        errs.extend(name_errs(
            &p.child("priorityClassName"),
            pcn,
            name_is_dns_subdomain(pcn, false),
        ));
    }
    if let Some(rc) = opt_s(spec, "runtimeClassName") {
        errs.extend(name_errs(
            &p.child("runtimeClassName"),
            rc,
            name_is_dns_subdomain(rc, false),
        ));
    }
    if let Some(pp) = opt_s(spec, "preemptionPolicy") {
        errs.extend(preemption_policy(pp, &p.child("preemptionPolicy")));
    }
    if let Some(oh) = get(spec, "overhead") {
        let wrapped = serde_json::json!({ "limits": oh });
        errs.extend(resource_requirements(
            Some(&wrapped),
            &BTreeSet::new(),
            &p.child("overhead"),
            NameRule::Container,
        ));
    }
    errs.extend(os_checks(spec, p));
    errs
}

pub(crate) fn preemption_policy(v: &str, p: &P) -> Errs {
    match v {
        "PreemptLowerPriority" | "Never" => Vec::new(),
        "" => vec![required(p, "")],
        other => vec![not_supported(p, other, &["PreemptLowerPriority", "Never"])],
    }
}

/// Whether `name` is a container of any kind in the spec.
fn has_container(spec: &Value, name: &str) -> bool {
    visit_containers(spec, &P::root())
        .iter()
        .any(|(c, _)| s(c, "name") == name)
}

fn seccomp_annotation_profile(v: &str, p: &P) -> Errs {
    if v == "runtime/default" || v == "docker/default" || v == "unconfined" {
        return Vec::new();
    }
    if let Some(rest) = v.strip_prefix("localhost/") {
        return local_descending_path(rest, p);
    }
    vec![invalid(p, v, "must be a valid seccomp profile")]
}

/// `ValidatePodSpecificAnnotations`.
pub(crate) fn pod_specific_annotations(
    annotations: &BTreeMap<String, String>,
    spec: &Value,
    p: &P,
) -> Errs {
    let mut errs = Vec::new();
    if let Some(v) = annotations.get("kubernetes.io/config.mirror")
        && s(spec, "nodeName").is_empty()
    {
        errs.push(invalid(
            &p.key("kubernetes.io/config.mirror"),
            v.as_str(),
            "must set spec.nodeName if mirror pod annotation is set",
        ));
    }
    if let Some(v) = annotations
        .get("scheduler.alpha.kubernetes.io/tolerations")
        .filter(|v| !v.is_empty())
    {
        match serde_json::from_str::<Vec<Value>>(v) {
            Ok(list) => errs.extend(tolerations(
                &list,
                &p.child("scheduler.alpha.kubernetes.io/tolerations"),
            )),
            Err(e) => errs.push(invalid(
                p,
                "scheduler.alpha.kubernetes.io/tolerations",
                &e.to_string(),
            )),
        }
    }
    if let Some(v) = annotations.get("controller.kubernetes.io/pod-deletion-cost") {
        let first_ok = match v.as_bytes().first() {
            None => false,
            Some(b'-') => true,
            Some(b'0') => v == "0",
            Some(c) => c.is_ascii_digit(),
        };
        if !first_ok || v.parse::<i32>().is_err() {
            errs.push(invalid(
                &p.key("controller.kubernetes.io/pod-deletion-cost"),
                v.as_str(),
                "must be a 32bit integer",
            ));
        }
    }
    if let Some(v) = annotations.get("seccomp.security.alpha.kubernetes.io/pod") {
        errs.extend(seccomp_annotation_profile(
            v,
            &p.child("seccomp.security.alpha.kubernetes.io/pod"),
        ));
    }
    for (k, v) in annotations {
        if k.starts_with("container.seccomp.security.alpha.kubernetes.io/") {
            errs.extend(seccomp_annotation_profile(v, &p.child(k)));
        }
        if let Some(ctr) = k.strip_prefix("container.apparmor.security.beta.kubernetes.io/") {
            if !has_container(spec, ctr) {
                errs.push(invalid(&p.key(k), ctr, "container not found"));
            }
            if !(v.is_empty()
                || v == "runtime/default"
                || v == "unconfined"
                || v.starts_with("localhost/"))
            {
                errs.push(invalid(
                    &p.key(k),
                    v.as_str(),
                    &format!("invalid AppArmor profile name: {v:?}"),
                ));
            }
        }
    }
    errs
}

/// `validateSeccompAnnotationsAndFields` and the AppArmor counterpart.
fn annotations_match_fields(
    annotations: &BTreeMap<String, String>,
    spec: &Value,
    specp: &P,
) -> Errs {
    let mut errs = Vec::new();
    let seccomp_match = |ann: &str, field: &Value, fp: &P| -> Option<crate::status::FieldError> {
        match s(field, "type") {
            "Unconfined" if ann != "unconfined" => Some(forbidden(
                &fp.child("type"),
                "seccomp type in annotation and field must match",
            )),
            "RuntimeDefault" if ann != "runtime/default" && ann != "docker/default" => {
                Some(forbidden(
                    &fp.child("type"),
                    "seccomp type in annotation and field must match",
                ))
            }
            "Localhost" => match ann.strip_prefix("localhost/") {
                None => Some(forbidden(
                    &fp.child("type"),
                    "seccomp type in annotation and field must match",
                )),
                Some(rest) if opt_s(field, "localhostProfile") != Some(rest) => Some(forbidden(
                    &fp.child("localhostProfile"),
                    "seccomp profile in annotation and field must match",
                )),
                _ => None,
            },
            _ => None,
        }
    };
    if let (Some(f), Some(ann)) = (
        get_in(spec, &["securityContext", "seccompProfile"]),
        annotations.get("seccomp.security.alpha.kubernetes.io/pod"),
    ) {
        errs.extend(seccomp_match(
            ann,
            f,
            &specp.child("securityContext").child("seccompProfile"),
        ));
    }
    let windows = get_in(spec, &["os", "name"]).and_then(Value::as_str) == Some("windows");
    let pod_apparmor = get_in(spec, &["securityContext", "appArmorProfile"]);
    for (c, cp) in visit_containers(spec, specp) {
        let name = s(c, "name");
        if let (Some(f), Some(ann)) = (
            get_in(c, &["securityContext", "seccompProfile"]),
            annotations.get(&format!(
                "container.seccomp.security.alpha.kubernetes.io/{name}"
            )),
        ) {
            errs.extend(seccomp_match(
                ann,
                f,
                &cp.child("securityContext").child("seccompProfile"),
            ));
        }
        if windows {
            continue;
        }
        let profile = get_in(c, &["securityContext", "appArmorProfile"]).or(pod_apparmor);
        if let (Some(prof), Some(ann)) = (
            profile,
            annotations.get(&format!(
                "container.apparmor.security.beta.kubernetes.io/{name}"
            )),
        ) {
            let ap = cp.child("securityContext").child("appArmorProfile");
            let e = match s(prof, "type") {
                "Unconfined" if ann != "unconfined" => Some(forbidden(
                    &ap.child("type"),
                    "apparmor type in annotation and field must match",
                )),
                "RuntimeDefault" if ann != "runtime/default" => Some(forbidden(
                    &ap.child("type"),
                    "apparmor type in annotation and field must match",
                )),
                "Localhost" => match ann.strip_prefix("localhost/") {
                    None => Some(forbidden(
                        &ap.child("type"),
                        "apparmor type in annotation and field must match",
                    )),
                    Some(rest) if opt_s(prof, "localhostProfile") != Some(rest) => Some(forbidden(
                        &ap.child("localhostProfile"),
                        "apparmor profile in annotation and field must match",
                    )),
                    _ => None,
                },
                _ => None,
            };
            errs.extend(e);
        }
    }
    errs
}

/// `ValidatePodTemplateSpec` (labels, annotations, spec).
pub(crate) fn pod_template_spec(template: Option<&Value>, p: &P) -> Errs {
    let empty = Value::Null;
    let t = template.unwrap_or(&empty);
    let meta = get(t, "metadata").unwrap_or(&empty);
    let spec = get(t, "spec").cloned().unwrap_or(Value::Null);
    let mut errs = validate_labels(get(meta, "labels"), &p.child("labels"));
    errs.extend(super::meta_annotations(
        get(meta, "annotations"),
        &p.child("annotations"),
    ));
    let ann = str_map(meta, "annotations")
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    errs.extend(pod_specific_annotations(
        &ann,
        &spec,
        &p.child("annotations"),
    ));
    errs.extend(pod_spec(
        &spec,
        None,
        &p.child("spec"),
        PodOpts {
            resource_is_pod: false,
        },
    ));
    errs.extend(annotations_match_fields(&ann, &spec, &p.child("spec")));
    if len_of(&spec, "ephemeralContainers") > 0 {
        errs.push(forbidden(
            &p.child("spec").child("ephemeralContainers"),
            "ephemeral containers not allowed in pod template",
        ));
    }
    errs
}

/// `validatePodMetadataAndSpec` minus object metadata.
fn pod_metadata_and_spec(pod: &Value) -> Errs {
    let spec = get(pod, "spec").unwrap_or(&Value::Null);
    let specp = P::new("spec");
    let ann = super::meta_str_map(pod, "annotations");
    let mut errs = pod_specific_annotations(&ann, spec, &P::new("metadata").child("annotations"));
    let name = super::meta_s(pod, "name");
    errs.extend(pod_spec(
        spec,
        Some(name),
        &specp,
        PodOpts {
            resource_is_pod: true,
        },
    ));
    if s(spec, "serviceAccountName").is_empty() {
        for (vi, vol) in arr(spec, "volumes").iter().enumerate() {
            let Some(proj) = get(vol, "projected") else {
                continue;
            };
            for (si, src) in arr(proj, "sources").iter().enumerate() {
                if get(src, "serviceAccountToken").is_some() {
                    errs.push(forbidden(
                        &specp
                            .child("volumes")
                            .index(vi)
                            .child("projected")
                            .child("sources")
                            .index(si)
                            .child("serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for key in ["containers", "initContainers"] {
        for (i, c) in arr(spec, key).iter().enumerate() {
            let image = s(c, "image");
            if image.trim() != image {
                errs.push(invalid(
                    &specp.child(key).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    errs
}

/// `ValidatePodCreate`.
pub(crate) fn pod_create(pod: &Value) -> Errs {
    let mut errs = pod_metadata_and_spec(pod);
    let spec = get(pod, "spec").unwrap_or(&Value::Null);
    let specp = P::new("spec");
    if len_of(spec, "ephemeralContainers") > 0 {
        errs.push(forbidden(
            &specp.child("ephemeralContainers"),
            "cannot be set on create",
        ));
    }
    if !s(spec, "nodeName").is_empty() && len_of(spec, "schedulingGates") > 0 {
        errs.push(forbidden(
            &specp.child("nodeName"),
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    let ann = super::meta_str_map(pod, "annotations");
    errs.extend(annotations_match_fields(&ann, spec, &specp));
    errs
}

const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

/// `ValidatePodUpdate`.
pub(crate) fn pod_update(new: &Value, old: &Value) -> Errs {
    let mut errs = pod_metadata_and_spec(new);
    let mp = P::new("metadata").child("annotations");
    let new_ann = super::meta_str_map(new, "annotations");
    let old_ann = super::meta_str_map(old, "annotations");
    for (k, ov) in &old_ann {
        if new_ann.get(k) == Some(ov) {
            continue;
        }
        if k.starts_with("container.apparmor.security.beta.kubernetes.io/") {
            errs.push(forbidden(
                &mp.key(k),
                "may not remove or update AppArmor annotations",
            ));
        }
        if k == "kubernetes.io/config.mirror" {
            errs.push(forbidden(
                &mp.key(k),
                "may not remove or update mirror pod annotation",
            ));
        }
    }
    for k in new_ann.keys() {
        if old_ann.contains_key(k) {
            continue;
        }
        if k.starts_with("container.apparmor.security.beta.kubernetes.io/") {
            errs.push(forbidden(&mp.key(k), "may not add AppArmor annotations"));
        }
        if k == "kubernetes.io/config.mirror" {
            errs.push(forbidden(&mp.key(k), "may not add mirror pod annotation"));
        }
    }
    let ns = get(new, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let specp = P::new("spec");
    for key in ["containers", "initContainers"] {
        let (n, o) = (arr(&ns, key), arr(&os, key));
        if n.len() != o.len() {
            errs.push(forbidden(
                &specp.child(key),
                "pod updates may not add or remove containers",
            ));
            return errs;
        }
        for (i, c) in n.iter().enumerate() {
            let image = s(c, "image");
            if image.is_empty() {
                errs.push(required(&specp.child(key).index(i).child("image"), ""));
            }
            if image.trim() != image {
                errs.push(invalid(
                    &specp.child(key).index(i).child("image"),
                    image,
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    let ads_p = specp.child("activeDeadlineSeconds");
    match (
        int(&ns, "activeDeadlineSeconds"),
        int(&os, "activeDeadlineSeconds"),
    ) {
        (Some(n), old_ads) => {
            if !(0..=i64::from(i32::MAX)).contains(&n) {
                errs.push(invalid(
                    &ads_p,
                    n,
                    &inclusive_range_error(0, i64::from(i32::MAX)),
                ));
                return errs;
            }
            if let Some(o) = old_ads
                && o < n
            {
                errs.push(invalid(
                    &ads_p,
                    n,
                    "must be less than or equal to previous value",
                ));
                return errs;
            }
        }
        (None, Some(_)) => errs.push(invalid(
            &ads_p,
            Value::Null,
            "must not update from a positive integer to nil value",
        )),
        (None, None) => {}
    }
    // Only additions to tolerations (tolerationSeconds may change).
    let new_tol = arr(&ns, "tolerations");
    let mut tol_forbidden = false;
    for old_t in arr(&os, "tolerations") {
        let found = new_tol.iter().any(|nt| {
            let mut a = old_t.clone();
            let mut b = nt.clone();
            if let (Some(am), Some(bm)) = (a.as_object_mut(), b.as_object_mut()) {
                am.remove("tolerationSeconds");
                bm.remove("tolerationSeconds");
            }
            semantic_eq(Some(&a), Some(&b))
        });
        if !found {
            errs.push(forbidden(
                &specp.child("tolerations"),
                "existing toleration can not be modified except its tolerationSeconds",
            ));
            tol_forbidden = true;
            break;
        }
    }
    if !tol_forbidden {
        errs.extend(tolerations(new_tol, &specp.child("tolerations")));
    }
    // Only deletions of scheduling gates.
    let old_gates: HashSet<&str> = arr(&os, "schedulingGates")
        .iter()
        .map(|g| s(g, "name"))
        .collect();
    for (i, g) in arr(&ns, "schedulingGates").iter().enumerate() {
        let name = s(g, "name");
        if !old_gates.contains(name) {
            errs.push(forbidden(
                &specp.child("schedulingGates").index(i).child("name"),
                &format!("only deletion is allowed, but found new scheduling gate '{name}'"),
            ));
        }
    }
    if semantic_eq(Some(&ns), Some(&os)) {
        return errs;
    }
    let mut munged = ns.clone();
    if let Some(m) = munged.as_object_mut() {
        for key in ["containers", "initContainers"] {
            if let Some(list) = m.get_mut(key).and_then(Value::as_array_mut) {
                for (i, c) in list.iter_mut().enumerate() {
                    let old_image = arr(&os, key)
                        .get(i)
                        .map(|oc| jv(oc, "image"))
                        .unwrap_or(Value::Null);
                    if let Some(cm) = c.as_object_mut() {
                        cm.insert("image".into(), old_image);
                    }
                }
            }
        }
        for key in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
            match os.get(key) {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
        if int(&os, "terminationGracePeriodSeconds").is_some_and(|g| g < 0)
            && int(&ns, "terminationGracePeriodSeconds") == Some(1)
        {
            m.insert(
                "terminationGracePeriodSeconds".into(),
                jv(&os, "terminationGracePeriodSeconds"),
            );
        }
        if len_of(&os, "schedulingGates") > 0 {
            // Gated pods may add to nodeSelector and node affinity.
            let old_sel = str_map(&os, "nodeSelector");
            let new_sel = str_map(&ns, "nodeSelector");
            if old_sel != new_sel {
                if old_sel.iter().any(|(k, v)| new_sel.get(k) != Some(v)) {
                    errs.push(invalid(
                        &specp.child("nodeSelector"),
                        jv(&ns, "nodeSelector"),
                        "only additions to spec.nodeSelector are allowed (no mutations or deletions)",
                    ));
                }
                match os.get("nodeSelector") {
                    Some(v) => {
                        m.insert("nodeSelector".into(), v.clone());
                    }
                    None => {
                        m.remove("nodeSelector");
                    }
                }
            }
            let old_na = get_in(&os, &["affinity", "nodeAffinity"]).cloned();
            let new_na = get_in(&ns, &["affinity", "nodeAffinity"]).cloned();
            if !semantic_eq(old_na.as_ref(), new_na.as_ref()) {
                if let Some(aff) = m.get_mut("affinity").and_then(Value::as_object_mut) {
                    match &old_na {
                        Some(v) => {
                            aff.insert("nodeAffinity".into(), v.clone());
                        }
                        None => {
                            aff.remove("nodeAffinity");
                        }
                    }
                } else if let Some(v) = &old_na {
                    m.insert("affinity".into(), serde_json::json!({ "nodeAffinity": v }));
                }
                if get(&os, "affinity").is_none()
                    && m.get("affinity")
                        .is_some_and(|a| semantic_eq(Some(a), None))
                {
                    m.remove("affinity");
                }
            }
        }
    }
    if !semantic_eq(Some(&munged), Some(&os)) {
        // Upstream appends a `cmp.Diff` of the specs; a diff by JSON path stands in.
        let mut diff = Vec::new();
        spec_diff(Some(&os), Some(&munged), "spec", &mut diff);
        errs.push(forbidden(
            &specp,
            &format!(
                "pod updates may not change fields other than {UPDATABLE}\n{}",
                diff.join("")
            ),
        ));
    }
    errs
}

/// Lines `- path: old` / `+ path: new` for the leaves that differ (at most 40 lines).
fn spec_diff(old: Option<&Value>, new: Option<&Value>, path: &str, out: &mut Vec<String>) {
    if out.len() >= 40 || semantic_eq(old, new) {
        return;
    }
    match (old, new) {
        (Some(Value::Object(o)), Some(Value::Object(n))) => {
            let keys: BTreeSet<&String> = o.keys().chain(n.keys()).collect();
            for k in keys {
                spec_diff(
                    o.get(k),
                    n.get(k),
                    &crate::validation::objectmeta::child(path, k),
                    out,
                );
            }
        }
        (Some(Value::Array(o)), Some(Value::Array(n))) if o.len() == n.len() => {
            for (i, (a, b)) in o.iter().zip(n).enumerate() {
                spec_diff(
                    Some(a),
                    Some(b),
                    &crate::validation::objectmeta::index(path, i),
                    out,
                );
            }
        }
        _ => {
            if let Some(o) = old.filter(|v| !v.is_null()) {
                out.push(format!("- {path}: {o}\n"));
            }
            if let Some(n) = new.filter(|v| !v.is_null()) {
                out.push(format!("+ {path}: {n}\n"));
            }
        }
    }
}

/// `ValidatePodEphemeralContainersUpdate` (the `ephemeralcontainers` subresource): the
/// pod must stay valid, and existing ephemeral containers may be neither removed nor
/// changed. Upstream appends a `cmp.Diff` of a changed container to its message; the
/// JSON of both versions stands in for it here.
pub(crate) fn pod_ephemeral_containers_update(new: &Value, old: &Value) -> Errs {
    let mut errs = pod_metadata_and_spec(new);
    if super::meta_str_map(old, "annotations").contains_key("kubernetes.io/config.mirror") {
        return vec![forbidden(
            &P::root(),
            "static pods do not support ephemeral containers",
        )];
    }
    let specp = P::new("spec").child("ephemeralContainers");
    let new_spec = get(new, "spec").cloned().unwrap_or(Value::Null);
    let old_spec = get(old, "spec").cloned().unwrap_or(Value::Null);
    let by_name: HashMap<&str, &Value> = arr(&new_spec, "ephemeralContainers")
        .iter()
        .map(|c| (s(c, "name"), c))
        .collect();
    for oc in arr(&old_spec, "ephemeralContainers") {
        let name = s(oc, "name");
        match by_name.get(name) {
            None => errs.push(forbidden(
                &specp,
                &format!("existing ephemeral containers {name:?} may not be removed\n"),
            )),
            Some(nc) if !semantic_eq(Some(oc), Some(nc)) => errs.push(forbidden(
                &specp,
                &format!(
                    "existing ephemeral containers {name:?} may not be changed\n- {oc}\n+ {nc}"
                ),
            )),
            Some(_) => {}
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sysctl_names() {
        assert!(is_valid_sysctl_name("net.ipv4.ip_forward"));
        assert!(is_valid_sysctl_name("kernel.shm_rmid_forced"));
        assert!(!is_valid_sysctl_name("net..x"));
        assert!(!is_valid_sysctl_name("Net.x"));
    }

    #[test]
    fn field_selectors() {
        let fs = json!({"apiVersion": "v1", "fieldPath": "metadata.labels['app']"});
        assert!(object_field_selector(&fs, ENV_FIELD_PATHS, &P::new("f")).is_empty());
        let fs = json!({"apiVersion": "v1", "fieldPath": "status.phase"});
        let e = object_field_selector(&fs, ENV_FIELD_PATHS, &P::new("f"));
        assert_eq!(e[0].field, "f.fieldPath");
        let fs = json!({"apiVersion": "v1", "fieldPath": "bogus"});
        assert!(
            object_field_selector(&fs, ENV_FIELD_PATHS, &P::new("f"))[0]
                .detail
                .contains("error converting fieldPath: field label not supported: bogus")
        );
    }
}
