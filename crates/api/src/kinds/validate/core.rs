//! core/v1 kinds other than Pod: Service, ReplicationController, ConfigMap, Secret,
//! Namespace, Node, Endpoints, LimitRange, ResourceQuota, PersistentVolume(Claim),
//! Binding.

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use super::pod::{pod_template_spec, protocol};
use super::quantity::Quantity;
use super::resources::{
    container_resource_name, node_taints, overcommit_allowed, quota_resource_name, resource_list,
    resource_name, resource_quantity_value,
};
use super::storage::{pv_spec, pvc_spec};
use super::util::*;

// ---------------------------------------------------------------------------------------
// ReplicationController.

pub(crate) fn replication_controller(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let mut errs = nonnegative(
        int(&spec, "minReadySeconds").unwrap_or(0),
        &sp.child("minReadySeconds"),
    );
    let selector = str_map(&spec, "selector");
    if selector.is_empty() {
        errs.push(required(&sp.child("selector"), ""));
    }
    errs.extend(nonnegative(
        int(&spec, "replicas").unwrap_or(0),
        &sp.child("replicas"),
    ));
    let tp = sp.child("template");
    match get(&spec, "template") {
        None => errs.push(required(&tp, "")),
        Some(t) => {
            if !selector.is_empty() {
                let labels = template_labels(Some(t));
                if !selector.iter().all(|(k, v)| labels.get(k) == Some(v)) {
                    errs.push(invalid(
                        &tp.child("metadata").child("labels"),
                        template_labels_value(Some(t)),
                        "`selector` does not match template `labels`",
                    ));
                }
            }
            errs.extend(pod_template_spec(Some(t), &tp));
            let restart = get_in(t, &["spec", "restartPolicy"])
                .and_then(Value::as_str)
                .unwrap_or("");
            if restart != "Always" {
                errs.push(not_supported(
                    &tp.child("spec").child("restartPolicy"),
                    restart,
                    &["Always"],
                ));
            }
            if get_in(t, &["spec", "activeDeadlineSeconds"]).is_some() {
                errs.push(forbidden(
                    &tp.child("spec").child("activeDeadlineSeconds"),
                    "activeDeadlineSeconds in ReplicationController is not Supported",
                ));
            }
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Service.

fn is_headless(spec: &Value) -> bool {
    let ips = str_list(spec, "clusterIPs");
    ips.len() == 1 && ips[0] == "None"
}

fn externally_accessible(spec: &Value) -> bool {
    let t = s(spec, "type");
    t == "LoadBalancer" || t == "NodePort" || (t == "ClusterIP" && len_of(spec, "externalIPs") > 0)
}

fn needs_health_check(spec: &Value) -> bool {
    s(spec, "type") == "LoadBalancer" && s(spec, "externalTrafficPolicy") == "Local"
}

fn service_port(sp: &Value, require_name: bool, names: &mut HashSet<String>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let name = s(sp, "name");
    if require_name && name.is_empty() {
        errs.push(required(&p.child("name"), ""));
    } else if !name.is_empty() {
        errs.extend(dns_label(name, &p.child("name")));
        if !names.insert(name.to_string()) {
            errs.push(duplicate(&p.child("name"), name));
        }
    }
    let port = int(sp, "port").unwrap_or(0);
    for m in is_valid_port_num(port) {
        errs.push(invalid(&p.child("port"), port, &m));
    }
    errs.extend(protocol(s(sp, "protocol"), &p.child("protocol")));
    let tp = p.child("targetPort");
    match sp.get("targetPort") {
        Some(Value::String(t)) => errs.extend(name_errs(&tp, t, is_valid_port_name(t))),
        Some(v) => {
            let n = v.as_i64().unwrap_or(0);
            errs.extend(is_valid_port_num(n).iter().map(|m| invalid(&tp, n, m)));
        }
        None => errs.extend(is_valid_port_num(0).iter().map(|m| invalid(&tp, 0, m))),
    }
    if let Some(ap) = opt_s(sp, "appProtocol") {
        errs.extend(qualified_name(ap, &p.child("appProtocol")));
    }
    errs
}

fn cluster_ips_related(spec: &Value) -> Errs {
    if s(spec, "type") == "ExternalName" {
        return Vec::new();
    }
    let mut errs = Vec::new();
    let sp = P::new("spec");
    let cip_path = sp.child("clusterIPs");
    let fam_path = sp.child("ipFamilies");
    let cluster_ip = s(spec, "clusterIP");
    let ips = str_list(spec, "clusterIPs");
    if !cluster_ip.is_empty() {
        if ips.is_empty() {
            errs.push(required(&cip_path, ""));
        } else if ips[0] != cluster_ip {
            errs.push(invalid(
                &cip_path,
                jv(spec, "clusterIPs"),
                "first value must match `clusterIP`",
            ));
        }
    } else if !ips.is_empty() {
        errs.push(invalid(
            &cip_path,
            jv(spec, "clusterIPs"),
            "must be empty when `clusterIP` is not specified",
        ));
    }
    let mut seen = HashSet::new();
    for (i, f) in str_list(spec, "ipFamilies").iter().enumerate() {
        if *f != "IPv4" && *f != "IPv6" {
            errs.push(not_supported(&fam_path.index(i), *f, &["IPv4", "IPv6"]));
        }
        if !seen.insert(*f) {
            errs.push(duplicate(&fam_path.index(i), *f));
        }
    }
    if let Some(pol) = opt_s(spec, "ipFamilyPolicy")
        && !["PreferDualStack", "RequireDualStack", "SingleStack"].contains(&pol)
    {
        errs.push(not_supported(
            &sp.child("ipFamilyPolicy"),
            pol,
            &["PreferDualStack", "RequireDualStack", "SingleStack"],
        ));
    }
    let mut has_invalid = false;
    for (i, ip) in ips.iter().enumerate() {
        if i == 0 && *ip == "None" {
            if ips.len() > 1 {
                has_invalid = true;
                errs.push(invalid(
                    &cip_path,
                    jv(spec, "clusterIPs"),
                    "'None' must be the first and only value",
                ));
            }
            continue;
        }
        let e = valid_ip(&cip_path.index(i), ip);
        has_invalid |= !e.is_empty();
        errs.extend(e);
    }
    if ips.len() > 2 {
        errs.push(invalid(
            &cip_path,
            jv(spec, "clusterIPs"),
            "may only hold up to 2 values",
        ));
    }
    if has_invalid {
        return errs;
    }
    if ips.len() > 1 {
        let v6 = ips.iter().filter(|ip| is_ipv6_string(ip)).count();
        if v6 != 1 || ips.len() != 2 {
            errs.push(invalid(
                &cip_path,
                jv(spec, "clusterIPs"),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    let fams = str_list(spec, "ipFamilies");
    if !is_headless(spec) && !ips.is_empty() && !fams.is_empty() {
        for (i, ip) in ips.iter().enumerate() {
            let Some(f) = fams.get(i) else { break };
            if *f == "IPv4" && is_ipv6_string(ip) {
                errs.push(invalid(
                    &cip_path.index(i),
                    *ip,
                    &format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if *f == "IPv6" && !is_ipv6_string(ip) {
                errs.push(invalid(
                    &cip_path.index(i),
                    *ip,
                    &format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
    errs
}

/// `ValidateService`.
pub(crate) fn service(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let mut errs = Vec::new();
    let ann = super::meta_str_map(obj, "annotations");
    const HINTS: &str = "service.kubernetes.io/topology-aware-hints";
    const MODE: &str = "service.kubernetes.io/topology-mode";
    if let (Some(h), Some(m)) = (ann.get(HINTS), ann.get(MODE))
        && h != m
    {
        errs.push(invalid(
            &P::new("metadata").child("annotations").key(MODE),
            m.as_str(),
            &format!("must match annotations[{HINTS}] when both are specified"),
        ));
    }
    let svc_type = s(&spec, "type");
    let ports = arr(&spec, "ports");
    if ports.is_empty() && !is_headless(&spec) && svc_type != "ExternalName" {
        errs.push(required(&sp.child("ports"), ""));
    }
    let first_ip = str_list(&spec, "clusterIPs")
        .first()
        .map(|s| s.to_string())
        .unwrap_or_default();
    match svc_type {
        "LoadBalancer" if is_headless(&spec) => errs.push(invalid(
            &sp.child("clusterIPs").index(0),
            first_ip.as_str(),
            "may not be set to 'None' for LoadBalancer services",
        )),
        "NodePort" if is_headless(&spec) => errs.push(invalid(
            &sp.child("clusterIPs").index(0),
            first_ip.as_str(),
            "may not be set to 'None' for NodePort services",
        )),
        "ExternalName" => {
            if len_of(&spec, "clusterIPs") > 0 {
                errs.push(forbidden(
                    &sp.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            if len_of(&spec, "ipFamilies") > 0 {
                errs.push(forbidden(
                    &sp.child("ipFamilies"),
                    "may not be set for ExternalName services",
                ));
            }
            if spec.get("ipFamilyPolicy").is_some() {
                errs.push(forbidden(
                    &sp.child("ipFamilyPolicy"),
                    "may not be set for ExternalName services",
                ));
            }
            let en = s(&spec, "externalName");
            let cname = en.strip_suffix('.').unwrap_or(en);
            if cname.is_empty() {
                errs.push(required(&sp.child("externalName"), ""));
            } else {
                errs.extend(dns_subdomain(cname, &sp.child("externalName")));
            }
        }
        _ => {}
    }
    let mut names = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        errs.extend(service_port(
            port,
            ports.len() > 1,
            &mut names,
            &sp.child("ports").index(i),
        ));
    }
    if let Some(sel) = get(&spec, "selector") {
        errs.extend(validate_labels(Some(sel), &sp.child("selector")));
    }
    let affinity = s(&spec, "sessionAffinity");
    match affinity {
        "" => errs.push(required(&sp.child("sessionAffinity"), "")),
        "ClientIP" | "None" => {}
        other => errs.push(not_supported(
            &sp.child("sessionAffinity"),
            other,
            &["ClientIP", "None"],
        )),
    }
    let sac = sp.child("sessionAffinityConfig");
    if affinity == "ClientIP" {
        match get(&spec, "sessionAffinityConfig") {
            None => errs.push(required(&sac, "when session affinity type is ClientIP")),
            Some(c) => match get(c, "clientIP") {
                None => errs.push(required(
                    &sac.child("clientIP"),
                    "when session affinity type is ClientIP",
                )),
                Some(cip) => match int(cip, "timeoutSeconds") {
                    None => errs.push(required(
                        &sac.child("clientIP").child("timeoutSeconds"),
                        "when session affinity type is ClientIP",
                    )),
                    Some(t) if t <= 0 || t > 86400 => errs.push(invalid(
                        &sac.child("clientIP").child("timeoutSeconds"),
                        t,
                        "must be greater than 0 and less than 86400",
                    )),
                    _ => {}
                },
            },
        }
    } else if affinity == "None" && get(&spec, "sessionAffinityConfig").is_some() {
        errs.push(forbidden(
            &sac,
            "must not be set when session affinity is None",
        ));
    }
    errs.extend(cluster_ips_related(&spec));
    for (i, ip) in str_list(&spec, "externalIPs").iter().enumerate() {
        let ip_path = sp.child("externalIPs").index(i);
        let e = valid_ip(&ip_path, ip);
        if e.is_empty() {
            errs.extend(non_special_ip(ip, &ip_path));
        } else {
            errs.extend(e);
        }
    }
    const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
    if svc_type.is_empty() {
        errs.push(required(&sp.child("type"), ""));
    } else if !TYPES.contains(&svc_type) {
        errs.push(not_supported(&sp.child("type"), svc_type, TYPES));
    }
    if svc_type == "ClusterIP" {
        for (i, port) in ports.iter().enumerate() {
            if int(port, "nodePort").unwrap_or(0) != 0 {
                errs.push(forbidden(
                    &sp.child("ports").index(i).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let np = int(port, "nodePort").unwrap_or(0);
        if np == 0 {
            continue;
        }
        if !node_ports.insert((s(port, "protocol").to_string(), np)) {
            errs.push(duplicate(&sp.child("ports").index(i).child("nodePort"), np));
        }
    }
    let mut port_keys = HashSet::new();
    for (i, port) in ports.iter().enumerate() {
        let key = (
            s(port, "protocol").to_string(),
            int(port, "port").unwrap_or(0),
        );
        if !port_keys.insert(key.clone()) {
            errs.push(duplicate(
                &sp.child("ports").index(i),
                serde_json::json!({"port": key.1, "protocol": key.0}),
            ));
        }
    }
    let ranges = str_list(&spec, "loadBalancerSourceRanges");
    if !ranges.is_empty() {
        let fp = sp.child("LoadBalancerSourceRanges");
        if svc_type != "LoadBalancer" {
            errs.push(forbidden(
                &fp,
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
        for (i, r) in ranges.iter().enumerate() {
            errs.extend(valid_cidr(&fp.index(i), r.trim()));
        }
    } else if let Some(val) = ann.get("service.beta.kubernetes.io/load-balancer-source-ranges") {
        let fp = P::new("metadata")
            .child("annotations")
            .key("service.beta.kubernetes.io/load-balancer-source-ranges");
        if svc_type != "LoadBalancer" {
            errs.push(forbidden(
                &fp,
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
        let val = val.trim();
        if !val.is_empty() {
            for cidr in val.split(',') {
                errs.extend(valid_cidr(&fp, cidr.trim()));
            }
        }
    }
    if spec.get("allocateLoadBalancerNodePorts").is_some() && svc_type != "LoadBalancer" {
        errs.push(forbidden(
            &sp.child("allocateLoadBalancerNodePorts"),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if svc_type == "LoadBalancer" && spec.get("allocateLoadBalancerNodePorts").is_none() {
        errs.push(required(&P::new("allocateLoadBalancerNodePorts"), ""));
    }
    errs.extend(load_balancer_class(None, &spec));
    // External traffic policy.
    let etp = s(&spec, "externalTrafficPolicy");
    if !externally_accessible(&spec) {
        if !etp.is_empty() {
            errs.push(invalid(
                &sp.child("externalTrafficPolicy"),
                etp,
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        errs.push(required(&sp.child("externalTrafficPolicy"), ""));
    } else if etp != "Cluster" && etp != "Local" {
        errs.push(not_supported(
            &sp.child("externalTrafficPolicy"),
            etp,
            &["Cluster", "Local"],
        ));
    }
    let hc = int(&spec, "healthCheckNodePort").unwrap_or(0);
    if !needs_health_check(&spec) {
        if hc != 0 {
            errs.push(invalid(
                &sp.child("healthCheckNodePort"),
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc == 0 {
        errs.push(required(&sp.child("healthCheckNodePort"), ""));
    } else {
        for m in is_valid_port_num(hc) {
            errs.push(invalid(&sp.child("healthCheckNodePort"), hc, &m));
        }
    }
    match opt_s(&spec, "internalTrafficPolicy") {
        None => {
            if matches!(svc_type, "NodePort" | "LoadBalancer" | "ClusterIP") {
                errs.push(required(&sp.child("internalTrafficPolicy"), ""));
            }
        }
        Some("Cluster" | "Local") => {}
        Some(other) => errs.push(not_supported(
            &sp.child("internalTrafficPolicy"),
            other,
            &["Cluster", "Local"],
        )),
    }
    if let Some(td) = opt_s(&spec, "trafficDistribution")
        && td != "PreferClose"
    {
        errs.push(not_supported(
            &sp.child("trafficDistribution"),
            td,
            &["PreferClose"],
        ));
    }
    errs
}

fn load_balancer_class(old: Option<&Value>, spec: &Value) -> Errs {
    let mut errs = Vec::new();
    let p = P::new("spec").child("loadBalancerClass");
    let is_lb = s(spec, "type") == "LoadBalancer";
    if let Some(old) = old
        && s(old, "type") == "LoadBalancer"
        && is_lb
        && opt_s(old, "loadBalancerClass") != opt_s(spec, "loadBalancerClass")
    {
        errs.push(invalid(
            &p,
            jv(spec, "loadBalancerClass"),
            "may not change once set",
        ));
    }
    match opt_s(spec, "loadBalancerClass") {
        Some(c) if is_lb => errs.extend(qualified_name(c, &p)),
        Some(_) => errs.push(forbidden(
            &p,
            "may only be used when `type` is 'LoadBalancer'",
        )),
        None => {}
    }
    errs
}

/// `ValidateServiceUpdate`.
pub(crate) fn service_update(new: &Value, old: &Value) -> Errs {
    let ns = get(new, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let cip = P::new("spec").child("clusterIPs");
    let fam = P::new("spec").child("ipFamilies");
    let mut errs = Vec::new();
    let ext = s(&ns, "type") == "ExternalName" || s(&os, "type") == "ExternalName";
    if !ext {
        let (new_h, old_h) = (is_headless(&ns), is_headless(&os));
        let (n, o) = (str_list(&ns, "clusterIPs"), str_list(&os, "clusterIPs"));
        let single = opt_s(&ns, "ipFamilyPolicy") == Some("SingleStack");
        if !(old_h && new_h) {
            if o.len() == n.len() {
                for (i, ip) in o.iter().enumerate() {
                    if *ip != n[i] {
                        errs.push(invalid(
                            &cip.index(i),
                            jv(&ns, "clusterIPs"),
                            "may not change once set",
                        ));
                    }
                }
            } else if o.len() > n.len() {
                if n.is_empty() {
                    errs.push(invalid(
                        &cip.index(0),
                        jv(&ns, "clusterIPs"),
                        "primary clusterIP can not be unset",
                    ));
                }
                if !o.is_empty() && !n.is_empty() && n[0] != o[0] {
                    errs.push(invalid(
                        &cip.index(0),
                        jv(&ns, "clusterIPs"),
                        "may not change once set",
                    ));
                }
                if n.len() == 1 && !single {
                    errs.push(invalid(
                        &P::new("spec").child("ipFamilyPolicy"),
                        jv(&ns, "ipFamilyPolicy"),
                        "must be set to 'SingleStack' when releasing the secondary clusterIP",
                    ));
                }
            } else if !o.is_empty() && n[0] != o[0] {
                errs.push(invalid(
                    &cip.index(0),
                    jv(&ns, "clusterIPs"),
                    "may not change once set",
                ));
            }
        }
        if new_h == old_h && !new_h {
            let (n, o) = (str_list(&ns, "ipFamilies"), str_list(&os, "ipFamilies"));
            if o.len() == n.len() {
                for (i, f) in o.iter().enumerate() {
                    if *f != n[i] {
                        errs.push(invalid(
                            &fam.index(0),
                            jv(&ns, "ipFamilies"),
                            "may not change once set",
                        ));
                    }
                }
            } else if o.len() > n.len() {
                if len_of(&ns, "clusterIPs") == 0 {
                    errs.push(invalid(
                        &fam.index(0),
                        jv(&ns, "ipFamilies"),
                        "primary ipFamily can not be unset",
                    ));
                }
                if !n.is_empty() && n[0] != o[0] {
                    errs.push(invalid(
                        &fam.index(0),
                        jv(&ns, "clusterIPs"),
                        "may not change once set",
                    ));
                }
                if n.len() == 1 && !single {
                    errs.push(invalid(
                        &P::new("spec").child("ipFamilyPolicy"),
                        jv(&ns, "ipFamilyPolicy"),
                        "must be set to 'SingleStack' when releasing the secondary ipFamily",
                    ));
                }
            } else if !o.is_empty() && !n.is_empty() && n[0] != o[0] {
                errs.push(invalid(
                    &fam.index(0),
                    jv(&ns, "clusterIPs"),
                    "may not change once set",
                ));
            }
        }
    }
    let mut lb = load_balancer_class(Some(&os), &ns);
    // The format checks of the new object are reported by `service` below; keep only
    // the transition error here.
    lb.retain(|e| e.detail == "may not change once set");
    errs.extend(lb);
    if needs_health_check(&os)
        && needs_health_check(&ns)
        && int(&ns, "healthCheckNodePort") != int(&os, "healthCheckNodePort")
    {
        errs.push(forbidden(
            &P::new("spec").child("healthCheckNodePort"),
            FIELD_IMMUTABLE,
        ));
    }
    errs.extend(service(new));
    errs
}

// ---------------------------------------------------------------------------------------
// ConfigMap and Secret.

const MAX_SECRET_SIZE: usize = 1024 * 1024;

fn decoded_len(v: &Value) -> usize {
    // `data` values are base64; count the decoded bytes.
    let s = v.as_str().unwrap_or("");
    let trimmed = s.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

pub(crate) fn config_map(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let dp = P::new("data");
    let bp = P::new("binaryData");
    let data = super::util::obj(obj, "data");
    let binary = super::util::obj(obj, "binaryData");
    let mut total = 0;
    let mut keys: Vec<&String> = data.map(|m| m.keys().collect()).unwrap_or_default();
    keys.sort();
    for k in keys {
        for m in is_config_map_key(k) {
            errs.push(invalid(&dp.key(k), k.as_str(), &m));
        }
        if binary.is_some_and(|b| b.contains_key(k.as_str())) {
            errs.push(invalid(
                &dp.key(k),
                k.as_str(),
                "duplicate of key present in binaryData",
            ));
        }
        total += data
            .and_then(|d| d.get(k.as_str()))
            .and_then(Value::as_str)
            .map_or(0, str::len);
    }
    let mut bkeys: Vec<&String> = binary.map(|m| m.keys().collect()).unwrap_or_default();
    bkeys.sort();
    for k in bkeys {
        for m in is_config_map_key(k) {
            errs.push(invalid(&bp.key(k), k.as_str(), &m));
        }
        total += binary
            .and_then(|b| b.get(k.as_str()))
            .map_or(0, decoded_len);
    }
    if total > MAX_SECRET_SIZE {
        errs.push(too_long(&P::root(), MAX_SECRET_SIZE));
    }
    errs
}

fn immutable_data(new: &Value, old: &Value, keys: &[&str]) -> Errs {
    let mut errs = Vec::new();
    if is_true(old, "immutable") {
        if !is_true(new, "immutable") {
            errs.push(forbidden(
                &P::new("immutable"),
                "field is immutable when `immutable` is set",
            ));
        }
        for k in keys {
            if !semantic_eq(new.get(*k), old.get(*k)) {
                errs.push(forbidden(
                    &P::new(k),
                    "field is immutable when `immutable` is set",
                ));
            }
        }
    }
    errs
}

pub(crate) fn config_map_update(new: &Value, old: &Value) -> Errs {
    let mut errs = immutable_data(new, old, &["data", "binaryData"]);
    errs.extend(config_map(new));
    errs
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        buf = (buf << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push(((buf >> bits) & 0xff) as u8);
        }
    }
    Some(out)
}

pub(crate) fn secret(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let dp = P::new("data");
    let data: BTreeMap<String, Vec<u8>> = super::util::obj(obj, "data")
        .map(|m| {
            m.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        decode_base64(v.as_str().unwrap_or("")).unwrap_or_default(),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let mut total = 0;
    for (k, v) in &data {
        for m in is_config_map_key(k) {
            errs.push(invalid(&dp.key(k), k.as_str(), &m));
        }
        total += v.len();
    }
    if total > MAX_SECRET_SIZE {
        errs.push(too_long(&dp, MAX_SECRET_SIZE));
    }
    let json_ok = |b: &[u8]| -> Result<(), String> {
        serde_json::from_slice::<serde_json::Map<String, Value>>(b)
            .map(|_| ())
            .map_err(|e| e.to_string())
    };
    match s(obj, "type") {
        "kubernetes.io/service-account-token" => {
            let ann = super::meta_str_map(obj, "annotations");
            if ann
                .get("kubernetes.io/service-account.name")
                .is_none_or(String::is_empty)
            {
                errs.push(required(
                    &P::new("metadata")
                        .child("annotations")
                        .key("kubernetes.io/service-account.name"),
                    "",
                ));
            }
        }
        "kubernetes.io/dockercfg" => match data.get(".dockercfg") {
            None => errs.push(required(&dp.key(".dockercfg"), "")),
            Some(b) => {
                if let Err(e) = json_ok(b) {
                    errs.push(invalid(
                        &dp.key(".dockercfg"),
                        "<secret contents redacted>",
                        &e,
                    ));
                }
            }
        },
        "kubernetes.io/dockerconfigjson" => match data.get(".dockerconfigjson") {
            None => errs.push(required(&dp.key(".dockerconfigjson"), "")),
            Some(b) => {
                if let Err(e) = json_ok(b) {
                    errs.push(invalid(
                        &dp.key(".dockerconfigjson"),
                        "<secret contents redacted>",
                        &e,
                    ));
                }
            }
        },
        "kubernetes.io/basic-auth"
            if !data.contains_key("username") && !data.contains_key("password") =>
        {
            errs.push(required(&dp.key("username"), ""));
            errs.push(required(&dp.key("password"), ""));
        }
        "kubernetes.io/ssh-auth" if data.get("ssh-privatekey").is_none_or(Vec::is_empty) => {
            errs.push(required(&dp.key("ssh-privatekey"), ""));
        }
        "kubernetes.io/tls" => {
            if !data.contains_key("tls.crt") {
                errs.push(required(&dp.key("tls.crt"), ""));
            }
            if !data.contains_key("tls.key") {
                errs.push(required(&dp.key("tls.key"), ""));
            }
        }
        _ => {}
    }
    errs
}

pub(crate) fn secret_update(new: &Value, old: &Value) -> Errs {
    let mut errs = immutable(new.get("type"), old.get("type"), &P::new("type"));
    errs.extend(immutable_data(new, old, &["data"]));
    errs.extend(secret(new));
    errs
}

// ---------------------------------------------------------------------------------------
// Namespace, Node, Endpoints, Binding.

pub(crate) fn namespace(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let fp = P::new("spec").child("finalizers");
    for f in get(obj, "spec")
        .map(|s| str_list(s, "finalizers"))
        .unwrap_or_default()
    {
        errs.extend(finalizer_name(f, &fp));
    }
    errs
}

/// `validateFinalizerName` (apimachinery's rule plus the standard-name rule).
fn finalizer_name(f: &str, p: &P) -> Errs {
    let mut errs = qualified_name(f, p);
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        errs.push(invalid(
            p,
            f,
            "name is neither a standard finalizer name nor is it fully qualified",
        ));
    }
    errs
}

fn node_common(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let ann = super::meta_str_map(obj, "annotations");
    let ap = P::new("metadata").child("annotations");
    if let Some(t) = ann
        .get("scheduler.alpha.kubernetes.io/taints")
        .filter(|t| !t.is_empty())
    {
        match serde_json::from_str::<Vec<Value>>(t) {
            Ok(list) => errs.extend(node_taints(
                &list,
                &ap.child("scheduler.alpha.kubernetes.io/taints"),
            )),
            Err(e) => errs.push(invalid(
                &ap,
                "scheduler.alpha.kubernetes.io/taints",
                &e.to_string(),
            )),
        }
    }
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let taints = arr(&spec, "taints");
    if !taints.is_empty() {
        errs.extend(node_taints(taints, &P::new("metadata").child("taints")));
    }
    let status = get(obj, "status").cloned().unwrap_or(Value::Null);
    for key in ["capacity", "allocatable"] {
        for (k, q) in resource_list(&status, key) {
            errs.extend(resource_quantity_value(
                &k,
                &q,
                &P::new("status").child(key).child(&k),
            ));
        }
    }
    errs
}

pub(crate) fn node(obj: &Value) -> Errs {
    let mut errs = node_common(obj);
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let cidrs = str_list(&spec, "podCIDRs");
    if !cidrs.is_empty() {
        let cp = P::new("spec").child("podCIDRs");
        for (i, c) in cidrs.iter().enumerate() {
            errs.extend(valid_cidr(&cp.index(i), c));
        }
        if cidrs.len() > 1 {
            let v6 = cidrs
                .iter()
                .filter(|c| parse_cidr(c).is_some_and(|(ip, _)| ip.is_ipv6()))
                .count();
            if v6 != 1 || cidrs.len() > 2 {
                errs.push(invalid(
                    &cp,
                    jv(&spec, "podCIDRs"),
                    "may specify no more than one CIDR for each IP family",
                ));
            }
            let mut seen = HashSet::new();
            for (i, c) in cidrs.iter().enumerate() {
                if !seen.insert(*c) {
                    errs.push(duplicate(&cp.index(i), *c));
                }
            }
        }
    }
    errs
}

pub(crate) fn node_update(new: &Value, old: &Value) -> Errs {
    let mut errs = node_common(new);
    let status = get(new, "status").cloned().unwrap_or(Value::Null);
    let mut seen = HashSet::new();
    for (i, a) in arr(&status, "addresses").iter().enumerate() {
        if !seen.insert((s(a, "type").to_string(), s(a, "address").to_string())) {
            errs.push(duplicate(
                &P::new("status").child("addresses").index(i),
                a.clone(),
            ));
        }
    }
    let ns = get(new, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let old_cidrs = str_list(&os, "podCIDRs");
    let new_cidrs = str_list(&ns, "podCIDRs");
    const CIDR_MSG: &str = "node updates may not change podCIDR except from \"\" to valid";
    if !old_cidrs.is_empty() {
        if old_cidrs.len() != new_cidrs.len() {
            errs.push(forbidden(&P::new("spec").child("podCIDRs"), CIDR_MSG));
        } else {
            for (i, c) in old_cidrs.iter().enumerate() {
                if *c != new_cidrs[i] {
                    errs.push(forbidden(&P::new("spec").child("podCIDRs"), CIDR_MSG));
                }
            }
        }
    }
    let old_pid = s(&os, "providerID");
    if !old_pid.is_empty() && old_pid != s(&ns, "providerID") {
        errs.push(forbidden(
            &P::new("spec").child("providerID"),
            "node updates may not change providerID except from \"\" to valid",
        ));
    }
    if s(&ns, "externalID") != s(&os, "externalID") {
        errs.push(forbidden(
            &P::new("spec").child("externalID"),
            "may not be updated",
        ));
    }
    errs
}

pub(crate) fn endpoints(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let sp = P::new("subsets");
    for (i, ss) in arr(obj, "subsets").iter().enumerate() {
        let ip = sp.index(i);
        if len_of(ss, "addresses") == 0 && len_of(ss, "notReadyAddresses") == 0 {
            errs.push(required(
                &ip,
                "must specify `addresses` or `notReadyAddresses`",
            ));
        }
        for key in ["addresses", "notReadyAddresses"] {
            for (j, a) in arr(ss, key).iter().enumerate() {
                let ap = ip.child(key).index(j);
                let addr = s(a, "ip");
                errs.extend(valid_ip(&ap.child("ip"), addr));
                let host = s(a, "hostname");
                if !host.is_empty() {
                    errs.extend(dns_label(host, &ap.child("hostname")));
                }
                if let Some(n) = opt_s(a, "nodeName") {
                    errs.extend(name_errs(
                        &ap.child("nodeName"),
                        n,
                        name_is_dns_subdomain(n, false),
                    ));
                }
                errs.extend(non_special_ip(addr, &ap.child("ip")));
            }
        }
        let ports = arr(ss, "ports");
        for (j, port) in ports.iter().enumerate() {
            let pp = ip.child("ports").index(j);
            let name = s(port, "name");
            if ports.len() > 1 && name.is_empty() {
                errs.push(required(&pp.child("name"), ""));
            } else if !name.is_empty() {
                errs.extend(dns_label(name, &pp.child("name")));
            }
            let n = int(port, "port").unwrap_or(0);
            for m in is_valid_port_num(n) {
                errs.push(invalid(&pp.child("port"), n, &m));
            }
            errs.extend(protocol(s(port, "protocol"), &pp.child("protocol")));
            if let Some(ap) = opt_s(port, "appProtocol") {
                errs.extend(qualified_name(ap, &pp.child("appProtocol")));
            }
        }
    }
    errs
}

pub(crate) fn binding(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let target = get(obj, "target").cloned().unwrap_or(Value::Null);
    let kind = s(&target, "kind");
    if !kind.is_empty() && kind != "Node" {
        errs.push(not_supported(
            &P::new("target").child("kind"),
            kind,
            &["Node", "<empty>"],
        ));
    }
    if s(&target, "name").is_empty() {
        errs.push(required(&P::new("target").child("name"), ""));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// LimitRange and ResourceQuota.

fn limit_range_resource_name(limit_type: &str, name: &str, p: &P) -> Errs {
    match limit_type {
        "Pod" | "Container" => container_resource_name(name, p),
        _ => resource_name(name, p),
    }
}

pub(crate) fn limit_range(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let fp = P::new("spec").child("limits");
    let mut types = HashSet::new();
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    for (i, limit) in arr(&spec, "limits").iter().enumerate() {
        let ip = fp.index(i);
        let lt = s(limit, "type");
        let tp = ip.child("type");
        let qn = name_errs(&tp, lt, is_qualified_name(lt));
        if !qn.is_empty() {
            errs.extend(qn);
        } else if !lt.contains('/') && !["Pod", "Container", "PersistentVolumeClaim"].contains(&lt)
        {
            errs.push(invalid(
                &tp,
                lt,
                "must be a standard limit type or fully qualified",
            ));
        }
        if !types.insert(lt) {
            errs.push(duplicate(&tp, lt));
        }
        let mut keys: BTreeSet<String> = BTreeSet::new();
        let mut maps: BTreeMap<&str, BTreeMap<String, Quantity>> = BTreeMap::new();
        let mut collect = |key: &'static str, errs: &mut Errs| {
            let mut m = BTreeMap::new();
            for (k, q) in resource_list(limit, key) {
                errs.extend(limit_range_resource_name(lt, &k, &ip.child(key).key(&k)));
                keys.insert(k.clone());
                m.insert(k, q);
            }
            maps.insert(key, m);
        };
        collect("max", &mut errs);
        collect("min", &mut errs);
        if lt == "Pod" {
            if len_of(limit, "default") > 0 {
                errs.push(forbidden(
                    &ip.child("default"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
            if len_of(limit, "defaultRequest") > 0 {
                errs.push(forbidden(
                    &ip.child("defaultRequest"),
                    "may not be specified when `type` is 'Pod'",
                ));
            }
        } else {
            collect("default", &mut errs);
            collect("defaultRequest", &mut errs);
        }
        if lt == "PersistentVolumeClaim" {
            let has =
                |k: &str| super::util::obj(limit, k).is_some_and(|m| m.contains_key("storage"));
            if !has("min") && !has("max") {
                errs.push(required(
                    &ip.child("limits"),
                    "either minimum or maximum storage value is required, but neither was provided",
                ));
            }
        }
        collect("maxLimitRequestRatio", &mut errs);
        let empty = BTreeMap::new();
        let get_q = |which: &str, k: &str| maps.get(which).unwrap_or(&empty).get(k).copied();
        for k in &keys {
            let min = get_q("min", k);
            let max = get_q("max", k);
            let def = get_q("default", k);
            let def_req = get_q("defaultRequest", k);
            let ratio = get_q("maxLimitRequestRatio", k);
            let c = |q: &Quantity| q.canonical();
            if let (Some(mn), Some(mx)) = (min, max)
                && mn > mx
            {
                errs.push(invalid(
                    &ip.child("min").key(k),
                    c(&mn),
                    &format!("min value {} is greater than max value {}", c(&mn), c(&mx)),
                ));
            }
            if let (Some(dr), Some(mn)) = (def_req, min)
                && mn > dr
            {
                errs.push(invalid(
                    &ip.child("defaultRequest").key(k),
                    c(&dr),
                    &format!(
                        "min value {} is greater than default request value {}",
                        c(&mn),
                        c(&dr)
                    ),
                ));
            }
            if let (Some(dr), Some(mx)) = (def_req, max)
                && dr > mx
            {
                errs.push(invalid(
                    &ip.child("defaultRequest").key(k),
                    c(&dr),
                    &format!(
                        "default request value {} is greater than max value {}",
                        c(&dr),
                        c(&mx)
                    ),
                ));
            }
            if let (Some(dr), Some(d)) = (def_req, def)
                && dr > d
            {
                errs.push(invalid(
                    &ip.child("defaultRequest").key(k),
                    c(&dr),
                    &format!(
                        "default request value {} is greater than default limit value {}",
                        c(&dr),
                        c(&d)
                    ),
                ));
            }
            if let (Some(d), Some(mn)) = (def, min)
                && mn > d
            {
                errs.push(invalid(
                    &ip.child("default").key(k),
                    c(&mn),
                    &format!(
                        "min value {} is greater than default value {}",
                        c(&mn),
                        c(&d)
                    ),
                ));
            }
            if let (Some(d), Some(mx)) = (def, max)
                && d > mx
            {
                errs.push(invalid(
                    &ip.child("default").key(k),
                    c(&mx),
                    &format!(
                        "default value {} is greater than max value {}",
                        c(&d),
                        c(&mx)
                    ),
                ));
            }
            if let Some(r) = ratio {
                if r < Quantity::from_int(1) {
                    errs.push(invalid(
                        &ip.child("maxLimitRequestRatio").key(k),
                        c(&r),
                        &format!("ratio {} is less than 1", c(&r)),
                    ));
                }
                if let (Some(mn), Some(mx)) = (min, max) {
                    let ratio_v = r.milli_value() as f64 / 1000.0;
                    let limit = mx.milli_value() as f64 / mn.milli_value() as f64;
                    if ratio_v > limit {
                        errs.push(invalid(
                            &ip.child("maxLimitRequestRatio").key(k),
                            c(&r),
                            &format!("ratio {} is greater than max/min = {limit:.6}", c(&r)),
                        ));
                    }
                }
            }
            if !overcommit_allowed(k)
                && let (Some(d), Some(dr)) = (def, def_req)
                && d != dr
            {
                errs.push(invalid(
                    &ip.child("defaultRequest").key(k),
                    c(&dr),
                    &format!(
                        "default value {} must equal to defaultRequest value {} in {k}",
                        c(&d),
                        c(&dr)
                    ),
                ));
            }
        }
    }
    errs
}

const QUOTA_SCOPES: &[&str] = &[
    "Terminating",
    "NotTerminating",
    "BestEffort",
    "NotBestEffort",
    "PriorityClass",
    "CrossNamespacePodAffinity",
    "VolumeAttributesClass",
];

/// `IsResourceQuotaScopeValidForResource`.
fn scope_valid_for_resource(scope: &str, resource: &str) -> bool {
    const POD_OBJECT_COUNT: &[&str] = &["pods"];
    const POD_COMPUTE: &[&str] = &[
        "cpu",
        "memory",
        "limits.cpu",
        "limits.memory",
        "requests.cpu",
        "requests.memory",
        "ephemeral-storage",
        "limits.ephemeral-storage",
        "requests.ephemeral-storage",
    ];
    let hugepages =
        resource.starts_with("hugepages-") || resource.starts_with("requests.hugepages-");
    match scope {
        "Terminating"
        | "NotTerminating"
        | "NotBestEffort"
        | "PriorityClass"
        | "CrossNamespacePodAffinity" => {
            POD_OBJECT_COUNT.contains(&resource) || POD_COMPUTE.contains(&resource) || hugepages
        }
        "BestEffort" => POD_OBJECT_COUNT.contains(&resource),
        "VolumeAttributesClass" => {
            matches!(resource, "persistentvolumeclaims" | "requests.storage")
                || resource.ends_with(".storageclass.storage.k8s.io/requests.storage")
                || resource.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims")
        }
        _ => false,
    }
}

fn quota_spec(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let hp = p.child("hard");
    let hard = resource_list(spec, "hard");
    for (k, q) in &hard {
        let kp = hp.key(k);
        errs.extend(quota_resource_name(k, &kp));
        errs.extend(resource_quantity_value(k, q, &kp));
    }
    let scopes = str_list(spec, "scopes");
    let sp = p.child("scopes");
    let mut set = HashSet::new();
    for scope in &scopes {
        if !QUOTA_SCOPES.contains(scope) {
            errs.push(invalid(&sp, jv(spec, "scopes"), "unsupported scope"));
        }
        for (k, _) in &hard {
            if super::resources::is_standard_quota_resource(k)
                && !scope_valid_for_resource(scope, k)
            {
                errs.push(invalid(
                    &sp,
                    jv(spec, "scopes"),
                    "unsupported scope applied to resource",
                ));
            }
        }
        set.insert(*scope);
    }
    for (a, b) in [
        ("BestEffort", "NotBestEffort"),
        ("Terminating", "NotTerminating"),
    ] {
        if set.contains(a) && set.contains(b) {
            errs.push(invalid(&sp, jv(spec, "scopes"), "conflicting scopes"));
        }
    }
    if let Some(sel) = get(spec, "scopeSelector") {
        let mp = p.child("scopeSelector").child("matchExpressions");
        let mut set = HashSet::new();
        for req in arr(sel, "matchExpressions") {
            let scope = s(req, "scopeName");
            if !QUOTA_SCOPES.contains(&scope) {
                errs.push(invalid(&mp.child("scopeName"), scope, "unsupported scope"));
            }
            for (k, _) in &hard {
                if super::resources::is_standard_quota_resource(k)
                    && !scope_valid_for_resource(scope, k)
                {
                    errs.push(invalid(
                        &mp,
                        sel.clone(),
                        "unsupported scope applied to resource",
                    ));
                }
            }
            let op = s(req, "operator");
            if matches!(
                scope,
                "BestEffort"
                    | "NotBestEffort"
                    | "Terminating"
                    | "NotTerminating"
                    | "CrossNamespacePodAffinity"
            ) && op != "Exists"
            {
                errs.push(invalid(&mp.child("operator"), op, "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"));
            }
            let n = len_of(req, "values");
            match op {
                "In" | "NotIn" => {
                    if n == 0 {
                        errs.push(required(
                            &mp.child("values"),
                            "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector",
                        ));
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if n != 0 {
                        errs.push(invalid(
                            &mp.child("values"),
                            jv(req, "values"),
                            "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector",
                        ));
                    }
                }
                other => errs.push(invalid(
                    &mp.child("operator"),
                    other,
                    "not a valid selector operator",
                )),
            }
            set.insert(scope);
        }
        for (a, b) in [
            ("BestEffort", "NotBestEffort"),
            ("Terminating", "NotTerminating"),
        ] {
            if set.contains(a) && set.contains(b) {
                errs.push(invalid(&mp, jv(spec, "scopes"), "conflicting scopes"));
            }
        }
    }
    errs
}

fn quota_status(status: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    for key in ["hard", "used"] {
        for (k, q) in resource_list(status, key) {
            let kp = p.child(key).key(&k);
            errs.extend(quota_resource_name(&k, &kp));
            errs.extend(resource_quantity_value(&k, &q, &kp));
        }
    }
    errs
}

pub(crate) fn resource_quota(obj: &Value, with_status: bool) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let mut errs = quota_spec(&spec, &P::new("spec"));
    if with_status {
        let status = get(obj, "status").cloned().unwrap_or(Value::Null);
        errs.extend(quota_status(&status, &P::new("status")));
    }
    errs
}

pub(crate) fn resource_quota_update(new: &Value, old: &Value) -> Errs {
    let mut errs = resource_quota(new, false);
    let ns: BTreeSet<&str> = get(new, "spec")
        .map(|s| str_list(s, "scopes"))
        .unwrap_or_default()
        .into_iter()
        .collect();
    let os: BTreeSet<&str> = get(old, "spec")
        .map(|s| str_list(s, "scopes"))
        .unwrap_or_default()
        .into_iter()
        .collect();
    if ns != os {
        errs.push(invalid(
            &P::new("spec").child("scopes"),
            get_in(new, &["spec", "scopes"])
                .cloned()
                .unwrap_or(Value::Null),
            FIELD_IMMUTABLE,
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// PersistentVolume(Claim).

pub(crate) fn pvc(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    pvc_spec(&spec, &P::new("spec"))
}

pub(crate) fn pv(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    pv_spec(&spec, super::meta_s(obj, "name"), &P::new("spec"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn base64() {
        assert_eq!(decode_base64("aGVsbG8="), Some(b"hello".to_vec()));
        assert_eq!(decode_base64("!"), None);
    }

    #[test]
    fn headless_service_without_ports_is_fine() {
        let svc = json!({"spec": {"clusterIP": "None", "clusterIPs": ["None"], "type": "ClusterIP",
            "sessionAffinity": "None", "internalTrafficPolicy": "Cluster"}});
        assert_eq!(service(&svc), Vec::new());
    }
}
