//! The smaller groups: RBAC, policy (PodDisruptionBudget), scheduling (PriorityClass),
//! coordination (Lease), discovery (EndpointSlice), events (core/v1 and events.k8s.io/v1
//! Events), autoscaling (Scale).

use std::collections::HashSet;

use serde_json::Value;

use super::apps::{not_more_than_100_percent, positive_int_or_percent};
use super::pod::{preemption_policy, protocol};
use super::util::*;

// ---------------------------------------------------------------------------------------
// RBAC.

fn policy_rule(rule: &Value, namespaced: bool, p: &P) -> Errs {
    let mut errs = Vec::new();
    if len_of(rule, "verbs") == 0 {
        errs.push(required(
            &p.child("verbs"),
            "verbs must contain at least one value",
        ));
    }
    if len_of(rule, "nonResourceURLs") > 0 {
        if namespaced {
            errs.push(invalid(
                &p.child("nonResourceURLs"),
                jv(rule, "nonResourceURLs"),
                "namespaced rules cannot apply to non-resource URLs",
            ));
        }
        if len_of(rule, "apiGroups") > 0
            || len_of(rule, "resources") > 0
            || len_of(rule, "resourceNames") > 0
        {
            errs.push(invalid(
                &p.child("nonResourceURLs"),
                jv(rule, "nonResourceURLs"),
                "rules cannot apply to both regular resources and non-resource URLs",
            ));
        }
        return errs;
    }
    if len_of(rule, "apiGroups") == 0 {
        errs.push(required(
            &p.child("apiGroups"),
            "resource rules must supply at least one api group",
        ));
    }
    if len_of(rule, "resources") == 0 {
        errs.push(required(
            &p.child("resources"),
            "resource rules must supply at least one resource",
        ));
    }
    errs
}

/// `ValidateRole` / `ValidateClusterRole` beyond metadata.
pub(crate) fn role(obj: &Value, namespaced: bool) -> Errs {
    let mut errs = Vec::new();
    for (i, rule) in arr(obj, "rules").iter().enumerate() {
        errs.extend(policy_rule(rule, namespaced, &P::new("rules").index(i)));
    }
    if !namespaced && let Some(ar) = get(obj, "aggregationRule") {
        let sp = P::new("aggregationRule").child("clusterRoleSelectors");
        let sels = arr(ar, "clusterRoleSelectors");
        if sels.is_empty() {
            errs.push(required(
                &sp,
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            ));
        }
        for (i, sel) in sels.iter().enumerate() {
            errs.extend(validate_label_selector(Some(sel), false, &sp.index(i)));
            if Selector::from_label_selector(Some(sel)).is_none() {
                errs.push(invalid(
                    &sp.index(i),
                    sel.clone(),
                    "invalid label selector.",
                ));
            }
        }
    }
    errs
}

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// `ValidateRoleBinding` / `ValidateClusterRoleBinding` beyond metadata.
pub(crate) fn role_binding(obj: &Value, namespaced: bool) -> Errs {
    let mut errs = Vec::new();
    let rr = get(obj, "roleRef").cloned().unwrap_or(Value::Null);
    let rp = P::new("roleRef");
    let group = s(&rr, "apiGroup");
    if group != RBAC_GROUP {
        errs.push(not_supported(&rp.child("apiGroup"), group, &[RBAC_GROUP]));
    }
    let kind = s(&rr, "kind");
    let kinds: &[&str] = if namespaced {
        &["Role", "ClusterRole"]
    } else {
        &["ClusterRole"]
    };
    if !kinds.contains(&kind) {
        errs.push(not_supported(&rp.child("kind"), kind, kinds));
    }
    let name = s(&rr, "name");
    if name.is_empty() {
        errs.push(required(&rp.child("name"), ""));
    } else {
        errs.extend(name_errs(
            &rp.child("name"),
            name,
            is_valid_path_segment_name(name),
        ));
    }
    for (i, subject) in arr(obj, "subjects").iter().enumerate() {
        let sp = P::new("subjects").index(i);
        let sname = s(subject, "name");
        if sname.is_empty() {
            errs.push(required(&sp.child("name"), ""));
        }
        let sgroup = s(subject, "apiGroup");
        match s(subject, "kind") {
            "ServiceAccount" => {
                if !sname.is_empty() {
                    errs.extend(name_errs(
                        &sp.child("name"),
                        sname,
                        name_is_dns_subdomain(sname, false),
                    ));
                }
                if !sgroup.is_empty() {
                    errs.push(not_supported(&sp.child("apiGroup"), sgroup, &[""]));
                }
                if !namespaced && s(subject, "namespace").is_empty() {
                    errs.push(required(&sp.child("namespace"), ""));
                }
            }
            k @ ("User" | "Group") => {
                if sname.is_empty() {
                    let what = if k == "User" { "user" } else { "group" };
                    errs.push(invalid(
                        &sp.child("name"),
                        sname,
                        &format!("{what} name cannot be empty"),
                    ));
                }
                if sgroup != RBAC_GROUP {
                    errs.push(not_supported(&sp.child("apiGroup"), sgroup, &[RBAC_GROUP]));
                }
            }
            other => errs.push(not_supported(
                &sp.child("kind"),
                other,
                &["ServiceAccount", "User", "Group"],
            )),
        }
    }
    errs
}

pub(crate) fn role_binding_update(new: &Value, old: &Value, namespaced: bool) -> Errs {
    let mut errs = role_binding(new, namespaced);
    if !semantic_eq(new.get("roleRef"), old.get("roleRef")) {
        errs.push(invalid(
            &P::new("roleRef"),
            jv(new, "roleRef"),
            "cannot change roleRef",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// PodDisruptionBudget.

pub(crate) fn pdb(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let mut errs = Vec::new();
    let min = get(&spec, "minAvailable");
    let max = get(&spec, "maxUnavailable");
    if min.is_some() && max.is_some() {
        errs.push(invalid(
            &sp,
            spec.clone(),
            "minAvailable and maxUnavailable cannot be both set",
        ));
    }
    for (key, v) in [("minAvailable", min), ("maxUnavailable", max)] {
        if v.is_some() {
            errs.extend(positive_int_or_percent(v, &sp.child(key)));
            errs.extend(not_more_than_100_percent(v, &sp.child(key)));
        }
    }
    errs.extend(validate_label_selector(
        get(&spec, "selector"),
        false,
        &sp.child("selector"),
    ));
    if let Some(pol) = opt_s(&spec, "unhealthyPodEvictionPolicy")
        && pol != "IfHealthyBudget"
        && pol != "AlwaysAllow"
    {
        errs.push(not_supported(
            &sp.child("unhealthyPodEvictionPolicy"),
            pol,
            &["AlwaysAllow", "IfHealthyBudget"],
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// PriorityClass.

const HIGHEST_USER_PRIORITY: i64 = 1_000_000_000;

/// The system classes and their values.
pub(crate) const SYSTEM_PRIORITY_CLASSES: [(&str, i64); 2] = [
    ("system-node-critical", 2_000_001_000),
    ("system-cluster-critical", 2_000_000_000),
];

pub(crate) fn priority_class(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    let name = super::meta_s(obj, "name");
    let value = int(obj, "value").unwrap_or(0);
    let global = is_true(obj, "globalDefault");
    if name.starts_with("system-") {
        let err = match SYSTEM_PRIORITY_CLASSES.iter().find(|(n, _)| *n == name) {
            Some((n, v)) if *v != value => Some(format!("value of {n} PriorityClass must be {v}")),
            Some((n, _)) if global => {
                Some(format!("globalDefault of {n} PriorityClass must be false"))
            }
            Some(_) => None,
            None => Some(format!("{name} is not a known system priority class")),
        };
        if let Some(e) = err {
            errs.push(forbidden(
                &P::new("metadata").child("name"),
                &format!("priority class names with 'system-' prefix are reserved for system use only. error: {e}"),
            ));
        }
    } else if value > HIGHEST_USER_PRIORITY {
        errs.push(forbidden(
            &P::new("value"),
            &format!("maximum allowed value of a user defined priority is {HIGHEST_USER_PRIORITY}"),
        ));
    }
    if let Some(pp) = opt_s(obj, "preemptionPolicy") {
        errs.extend(preemption_policy(pp, &P::new("preemptionPolicy")));
    }
    errs
}

pub(crate) fn priority_class_update(new: &Value, old: &Value) -> Errs {
    let mut errs = Vec::new();
    if int(new, "value") != int(old, "value") {
        errs.push(forbidden(
            &P::new("value"),
            "may not be changed in an update.",
        ));
    }
    errs.extend(immutable(
        new.get("preemptionPolicy"),
        old.get("preemptionPolicy"),
        &P::new("preemptionPolicy"),
    ));
    errs
}

// ---------------------------------------------------------------------------------------
// Lease.

pub(crate) fn lease(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let mut errs = Vec::new();
    if let Some(d) = int(&spec, "leaseDurationSeconds")
        && d <= 0
    {
        errs.push(invalid(
            &sp.child("leaseDurationSeconds"),
            d,
            "must be greater than 0",
        ));
    }
    if let Some(t) = int(&spec, "leaseTransitions")
        && t < 0
    {
        errs.push(invalid(
            &sp.child("leaseTransitions"),
            t,
            "must be greater than or equal to 0",
        ));
    }
    let strategy = opt_s(&spec, "strategy");
    if let Some(st) = strategy {
        // Upstream appends "strategy" to the path twice.
        let stp = sp.child("strategy").child("strategy");
        if st.split('/').count() == 1 {
            if st != "OldestEmulationVersion" {
                errs.push(not_supported(&stp, st, &["OldestEmulationVersion"]));
            }
        } else {
            errs.extend(name_errs(&stp, st, is_qualified_name(st)));
        }
    }
    if opt_s(&spec, "preferredHolder").is_some_and(|h| !h.is_empty())
        && strategy.is_none_or(str::is_empty)
    {
        errs.push(forbidden(
            &sp.child("preferredHolder"),
            "may only be specified if `strategy` is defined",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// EndpointSlice.

fn fqdn(v: &str, p: &P) -> Errs {
    if v.is_empty() {
        return vec![required(p, "")];
    }
    let name = v.strip_suffix('.').unwrap_or(v);
    let e = is_dns1123_subdomain(name);
    if !e.is_empty() {
        return vec![invalid(p, name, &e.join(","))];
    }
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return vec![invalid(
            p,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for l in labels {
        let e = is_dns1123_label(l);
        if !e.is_empty() {
            return vec![invalid(p, l, &e.join(","))];
        }
    }
    Vec::new()
}

pub(crate) fn endpoint_slice(obj: &Value, allow_deprecated_ip: bool) -> Errs {
    let mut errs = Vec::new();
    let at = s(obj, "addressType");
    let ap = P::new("addressType");
    let valid: &[&str] = if allow_deprecated_ip {
        &["FQDN", "IP", "IPv4", "IPv6"]
    } else {
        &["FQDN", "IPv4", "IPv6"]
    };
    if at.is_empty() {
        errs.push(required(&ap, ""));
    } else if !valid.contains(&at) {
        errs.push(not_supported(&ap, at, valid));
    }
    let ep = P::new("endpoints");
    let endpoints = arr(obj, "endpoints");
    if endpoints.len() > 1000 {
        errs.push(too_many(&ep, endpoints.len(), 1000));
    } else {
        for (i, e) in endpoints.iter().enumerate() {
            let ip = ep.index(i);
            let adp = ip.child("addresses");
            let addrs = str_list(e, "addresses");
            if addrs.is_empty() {
                errs.push(required(&adp, "must contain at least 1 address"));
            } else if addrs.len() > 100 {
                errs.push(too_many(&adp, addrs.len(), 100));
            }
            for (j, a) in addrs.iter().enumerate() {
                let p = adp.index(j);
                match at {
                    "IP" => errs.extend(valid_ip(&p, a)),
                    "IPv4" => {
                        if !matches!(parse_ip(a), Some(std::net::IpAddr::V4(_))) {
                            errs.push(invalid(&p, *a, "must be a valid IPv4 address"));
                        }
                        errs.extend(non_special_ip(a, &p));
                    }
                    "IPv6" => {
                        if !matches!(parse_ip(a), Some(std::net::IpAddr::V6(_))) {
                            errs.push(invalid(&p, *a, "must be a valid IPv6 address"));
                        }
                        errs.extend(non_special_ip(a, &p));
                    }
                    "FQDN" => errs.extend(fqdn(a, &p)),
                    _ => {}
                }
            }
            if let Some(n) = opt_s(e, "nodeName") {
                errs.extend(name_errs(
                    &ip.child("nodeName"),
                    n,
                    name_is_dns_subdomain(n, false),
                ));
            }
            let tp = ip.child("deprecatedTopology");
            let n = len_of(e, "deprecatedTopology");
            if n > 16 {
                errs.push(too_many(&tp, n, 16));
            }
            errs.extend(validate_labels(get(e, "deprecatedTopology"), &tp));
            if let Some(h) = opt_s(e, "hostname") {
                errs.extend(dns_label(h, &ip.child("hostname")));
            }
            if let Some(h) = get(e, "hints") {
                let hp = ip.child("hints");
                for (key, is_zone) in [("forZones", true), ("forNodes", false)] {
                    let list = arr(h, key);
                    let kp = hp.child(key);
                    if list.len() > 8 {
                        errs.push(too_many(&kp, list.len(), 8));
                        continue;
                    }
                    let mut seen = HashSet::new();
                    for (j, z) in list.iter().enumerate() {
                        let np = kp.index(j).child("name");
                        let name = s(z, "name");
                        if !seen.insert(name) {
                            errs.push(duplicate(&np, name));
                        }
                        let msgs = if is_zone {
                            is_valid_label_value(name)
                        } else {
                            name_is_dns_subdomain(name, false)
                        };
                        errs.extend(name_errs(&np, name, msgs));
                    }
                }
            }
        }
    }
    let pp = P::new("ports");
    let ports = arr(obj, "ports");
    if ports.len() > 100 {
        errs.push(too_many(&pp, ports.len(), 100));
    } else {
        let mut names = HashSet::new();
        for (i, port) in ports.iter().enumerate() {
            let ip = pp.index(i);
            let name = s(port, "name");
            if !name.is_empty() {
                errs.extend(dns_label(name, &ip.child("name")));
            }
            if !names.insert(name) {
                errs.push(duplicate(&ip.child("name"), name));
            }
            match opt_s(port, "protocol") {
                None => errs.push(required(&ip.child("protocol"), "")),
                Some(proto) => {
                    if !proto.is_empty() {
                        errs.extend(protocol(proto, &ip.child("protocol")));
                    } else {
                        errs.push(not_supported(
                            &ip.child("protocol"),
                            "",
                            &["SCTP", "TCP", "UDP"],
                        ));
                    }
                }
            }
            if let Some(ap) = opt_s(port, "appProtocol") {
                errs.extend(name_errs(
                    &ip.child("appProtocol"),
                    ap,
                    is_qualified_name(ap),
                ));
            }
        }
    }
    errs
}

pub(crate) fn endpoint_slice_update(new: &Value, old: &Value) -> Errs {
    let mut errs = endpoint_slice(new, true);
    errs.extend(immutable(
        new.get("addressType"),
        old.get("addressType"),
        &P::new("addressType"),
    ));
    errs
}

// ---------------------------------------------------------------------------------------
// Events.

/// The internal `core.Event` fields upstream validates, read from either API version.
struct EventView<'a> {
    namespace: &'a str,
    involved_namespace: &'a str,
    event_time: bool,
    reporting_controller: &'a str,
    reporting_instance: &'a str,
    action: &'a str,
    reason: &'a str,
    message: &'a str,
    kind_type: &'a str,
    first_timestamp: bool,
    last_timestamp: bool,
    count: i64,
    source: Option<&'a Value>,
    series: Option<&'a Value>,
}

impl<'a> EventView<'a> {
    fn core(obj: &'a Value) -> Self {
        EventView {
            namespace: super::meta_s(obj, "namespace"),
            involved_namespace: get(obj, "involvedObject")
                .map(|o| s(o, "namespace"))
                .unwrap_or(""),
            event_time: get(obj, "eventTime").is_some(),
            reporting_controller: s(obj, "reportingComponent"),
            reporting_instance: s(obj, "reportingInstance"),
            action: s(obj, "action"),
            reason: s(obj, "reason"),
            message: s(obj, "message"),
            kind_type: s(obj, "type"),
            first_timestamp: get(obj, "firstTimestamp").is_some(),
            last_timestamp: get(obj, "lastTimestamp").is_some(),
            count: int(obj, "count").unwrap_or(0),
            source: get(obj, "source"),
            series: get(obj, "series"),
        }
    }

    fn events_v1(obj: &'a Value) -> Self {
        EventView {
            namespace: super::meta_s(obj, "namespace"),
            involved_namespace: get(obj, "regarding")
                .map(|o| s(o, "namespace"))
                .unwrap_or(""),
            event_time: get(obj, "eventTime").is_some(),
            reporting_controller: s(obj, "reportingController"),
            reporting_instance: s(obj, "reportingInstance"),
            action: s(obj, "action"),
            reason: s(obj, "reason"),
            message: s(obj, "note"),
            kind_type: s(obj, "type"),
            first_timestamp: get(obj, "deprecatedFirstTimestamp").is_some(),
            last_timestamp: get(obj, "deprecatedLastTimestamp").is_some(),
            count: int(obj, "deprecatedCount").unwrap_or(0),
            source: get(obj, "deprecatedSource"),
            series: get(obj, "series"),
        }
    }
}

fn legacy_event(ev: &EventView<'_>) -> Errs {
    let mut errs = Vec::new();
    let inp = P::new("involvedObject").child("namespace");
    if !ev.event_time {
        if ev.involved_namespace.is_empty() {
            if !ev.namespace.is_empty() && ev.namespace != "default" {
                errs.push(invalid(
                    &inp,
                    ev.involved_namespace,
                    "does not match event.namespace",
                ));
            }
        } else if ev.namespace != ev.involved_namespace {
            errs.push(invalid(
                &inp,
                ev.involved_namespace,
                "does not match event.namespace",
            ));
        }
    } else {
        if ev.involved_namespace.is_empty()
            && ev.namespace != "default"
            && ev.namespace != "kube-system"
        {
            errs.push(invalid(
                &inp,
                ev.involved_namespace,
                "does not match event.namespace",
            ));
        }
        let rc = P::new("reportingController");
        if ev.reporting_controller.is_empty() {
            errs.push(required(&rc, ""));
        }
        errs.extend(name_errs(
            &rc,
            ev.reporting_controller,
            is_qualified_name(ev.reporting_controller),
        ));
        for (field, value, limit) in [
            ("reportingInstance", ev.reporting_instance, 128),
            ("action", ev.action, 128),
            ("reason", ev.reason, 128),
        ] {
            if value.is_empty() {
                errs.push(required(&P::new(field), ""));
            }
            if value.len() > limit {
                errs.push(invalid(
                    &P::new(field),
                    "",
                    &format!("can have at most {limit} characters"),
                ));
            }
        }
        if ev.message.len() > 1024 {
            errs.push(invalid(
                &P::new("message"),
                "",
                "can have at most 1024 characters",
            ));
        }
    }
    errs.extend(name_errs(
        &P::new("namespace"),
        ev.namespace,
        is_dns1123_subdomain(ev.namespace),
    ));
    errs
}

fn event_series(ev: &EventView<'_>) -> Errs {
    let mut errs = Vec::new();
    if let Some(series) = ev.series {
        if int(series, "count").unwrap_or(0) < 2 {
            errs.push(invalid(&P::new("series.count"), "", "should be at least 2"));
        }
        if get(series, "lastObservedTime").is_none() {
            errs.push(required(&P::new("series.lastObservedTime"), ""));
        }
    }
    errs
}

/// core/v1 Events get the legacy validation only (on create and update).
pub(crate) fn core_event_create(obj: &Value) -> Errs {
    legacy_event(&EventView::core(obj))
}

/// events.k8s.io/v1 Events: legacy plus the strict rules.
pub(crate) fn events_event_create(obj: &Value) -> Errs {
    let ev = EventView::events_v1(obj);
    let mut errs = legacy_event(&ev);
    errs.extend(event_series(&ev));
    if !ev.event_time {
        errs.push(required(&P::new("eventTime"), ""));
    }
    if ev.kind_type != "Normal" && ev.kind_type != "Warning" {
        errs.push(invalid(
            &P::new("type"),
            "",
            &format!("has invalid value: {}", ev.kind_type),
        ));
    }
    if ev.first_timestamp {
        errs.push(invalid(&P::new("firstTimestamp"), "", "needs to be unset"));
    }
    if ev.last_timestamp {
        errs.push(invalid(&P::new("lastTimestamp"), "", "needs to be unset"));
    }
    if ev.count != 0 {
        errs.push(invalid(&P::new("count"), "", "needs to be unset"));
    }
    if ev
        .source
        .is_some_and(|src| !s(src, "component").is_empty() || !s(src, "host").is_empty())
    {
        errs.push(invalid(&P::new("source"), "", "needs to be unset"));
    }
    errs
}

pub(crate) fn events_event_update(new: &Value, old: &Value) -> Errs {
    let ev = EventView::events_v1(new);
    let mut errs = legacy_event(&ev);
    if !semantic_eq(new.get("series"), old.get("series")) {
        errs.extend(event_series(&ev));
    }
    for (field, key) in [
        ("involvedObject", "regarding"),
        ("reason", "reason"),
        ("message", "note"),
        ("source", "deprecatedSource"),
        ("firstTimestamp", "deprecatedFirstTimestamp"),
        ("lastTimestamp", "deprecatedLastTimestamp"),
        ("count", "deprecatedCount"),
        ("reason", "reason"),
        ("type", "type"),
        ("eventTime", "eventTime"),
        ("action", "action"),
        ("related", "related"),
        ("reportingController", "reportingController"),
        ("reportingInstance", "reportingInstance"),
    ] {
        errs.extend(immutable(new.get(key), old.get(key), &P::new(field)));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Scale.

pub(crate) fn scale(obj: &Value) -> Errs {
    let replicas = get(obj, "spec")
        .and_then(|s| int(s, "replicas"))
        .unwrap_or(0);
    nonnegative(replicas, &P::new("spec").child("replicas"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rbac_rules() {
        let role = json!({"rules": [{"resources": ["pods"]}]});
        let errs = super::role(&role, true);
        assert_eq!(errs.len(), 2);
        assert_eq!(
            errs[0].to_string(),
            "rules[0].verbs: Required value: verbs must contain at least one value"
        );
        assert_eq!(
            errs[1].to_string(),
            "rules[0].apiGroups: Required value: resource rules must supply at least one api group"
        );
    }

    #[test]
    fn fqdns() {
        assert!(fqdn("example.com", &P::new("a")).is_empty());
        assert_eq!(fqdn("example", &P::new("a")).len(), 1);
    }
}
