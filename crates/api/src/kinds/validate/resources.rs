//! Resource names and quantities, resource requirements, node selectors and tolerations
//! (`pkg/apis/core/validation/validation.go`, `pkg/apis/core/helper/helpers.go`).

use std::collections::BTreeSet;

use serde_json::Value;

use super::quantity::{self, Quantity};
use super::util::*;

pub(crate) fn is_hugepage(name: &str) -> bool {
    name.starts_with("hugepages-")
}

fn is_quota_hugepage(name: &str) -> bool {
    name.starts_with("hugepages-") || name.starts_with("requests.hugepages-")
}

pub(crate) fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

pub(crate) fn is_extended(name: &str) -> bool {
    if is_native(name) || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}")).is_empty()
}

pub(crate) fn overcommit_allowed(name: &str) -> bool {
    is_native(name) && !is_hugepage(name)
}

fn is_standard_container(name: &str) -> bool {
    matches!(name, "cpu" | "memory" | "ephemeral-storage") || is_hugepage(name)
}

const STANDARD_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "storage",
    "requests.storage",
    "services.nodeports",
    "services.loadbalancers",
];

const STANDARD_QUOTA_RESOURCES: &[&str] = &[
    "cpu",
    "memory",
    "ephemeral-storage",
    "requests.cpu",
    "requests.memory",
    "requests.storage",
    "requests.ephemeral-storage",
    "limits.cpu",
    "limits.memory",
    "limits.ephemeral-storage",
    "pods",
    "services",
    "replicationcontrollers",
    "resourcequotas",
    "secrets",
    "persistentvolumeclaims",
    "configmaps",
    "services.nodeports",
    "services.loadbalancers",
];

pub(crate) fn is_standard_quota_resource(name: &str) -> bool {
    STANDARD_QUOTA_RESOURCES.contains(&name) || is_quota_hugepage(name)
}

fn is_integer_resource(name: &str) -> bool {
    matches!(
        name,
        "pods"
            | "services"
            | "replicationcontrollers"
            | "resourcequotas"
            | "secrets"
            | "configmaps"
            | "persistentvolumeclaims"
            | "services.nodeports"
            | "services.loadbalancers"
    ) || is_extended(name)
}

/// `validateResourceName`.
pub(crate) fn resource_name(value: &str, p: &P) -> Errs {
    let errs = name_errs(p, value, is_qualified_name(value));
    if !errs.is_empty() {
        return errs;
    }
    if !(value.contains('/') || STANDARD_RESOURCES.contains(&value) || is_quota_hugepage(value)) {
        return vec![invalid(
            p,
            value,
            "must be a standard resource type or fully qualified",
        )];
    }
    Vec::new()
}

/// `validateContainerResourceName`.
pub(crate) fn container_resource_name(value: &str, p: &P) -> Errs {
    let mut errs = resource_name(value, p);
    if !value.contains('/') {
        if !is_standard_container(value) {
            errs.push(invalid(
                p,
                value,
                "must be a standard resource for containers",
            ));
        }
    } else if !is_native(value) && !is_extended(value) {
        errs.push(invalid(
            p,
            value,
            "doesn't follow extended resource name standard",
        ));
    }
    errs
}

/// `ValidateResourceQuotaResourceName`.
pub(crate) fn quota_resource_name(value: &str, p: &P) -> Errs {
    let mut errs = resource_name(value, p);
    if !value.contains('/') && !is_standard_quota_resource(value) {
        errs.push(invalid(p, value, "must be a standard resource for quota"));
    }
    errs
}

pub(crate) fn nonnegative_quantity(q: &Quantity, p: &P) -> Errs {
    if q.is_negative() {
        vec![invalid(p, q.canonical(), IS_NEGATIVE)]
    } else {
        Vec::new()
    }
}

pub(crate) fn positive_quantity(q: &Quantity, p: &P) -> Errs {
    if *q <= Quantity::zero() {
        vec![invalid(p, q.canonical(), "must be greater than zero")]
    } else {
        Vec::new()
    }
}

/// `ValidateResourceQuantityValue`.
pub(crate) fn resource_quantity_value(name: &str, q: &Quantity, p: &P) -> Errs {
    let mut errs = nonnegative_quantity(q, p);
    if is_integer_resource(name) && q.milli_value() % 1000 != 0 {
        errs.push(invalid(p, q.canonical(), "must be an integer"));
    }
    errs
}

/// The parsed entries of a resource list field, in key order; unparsable quantities are
/// skipped (upstream rejects them when decoding, see `quantity_errors`).
pub(crate) fn resource_list(v: &Value, key: &str) -> Vec<(String, Quantity)> {
    let mut out: Vec<(String, Quantity)> = obj(v, key)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.clone(), quantity::from_json(v)?.ok()?)))
                .collect()
        })
        .unwrap_or_default();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

fn hugepage_divisible(name: &str, q: &Quantity) -> bool {
    let Some(size) = name.strip_prefix("hugepages-") else {
        return true;
    };
    let Ok(page) = Quantity::parse(size) else {
        return false;
    };
    if page <= Quantity::zero() || page.milli_value() % 1000 != 0 {
        return false;
    }
    let pv = page.value();
    pv != 0 && q.value() % pv == 0
}

/// Which resource-name rule applies to a requirements block.
#[derive(Clone, Copy)]
pub(crate) enum NameRule {
    Container,
}

/// `validateResourceRequirements` (container flavor).
pub(crate) fn resource_requirements(
    req: Option<&Value>,
    claim_names: &BTreeSet<String>,
    p: &P,
    _rule: NameRule,
) -> Errs {
    let mut errs = Vec::new();
    let Some(req) = req else {
        return errs;
    };
    let lim_path = p.child("limits");
    let req_path = p.child("requests");
    let limits = resource_list(req, "limits");
    let requests = resource_list(req, "requests");
    let (mut lim_cpu_mem, mut req_cpu_mem, mut lim_huge, mut req_huge) =
        (false, false, false, false);
    for (name, q) in &limits {
        let fp = lim_path.key(name);
        errs.extend(container_resource_name(name, &fp));
        errs.extend(resource_quantity_value(name, q, &fp));
        if is_hugepage(name) {
            lim_huge = true;
            if !hugepage_divisible(name, q) {
                errs.push(invalid(
                    &fp,
                    q.canonical(),
                    &format!(
                        "{} is not positive integer multiple of {name}",
                        q.canonical()
                    ),
                ));
            }
        }
        if name == "cpu" || name == "memory" {
            lim_cpu_mem = true;
        }
    }
    for (name, q) in &requests {
        let fp = req_path.key(name);
        errs.extend(container_resource_name(name, &fp));
        errs.extend(resource_quantity_value(name, q, &fp));
        match limits.iter().find(|(n, _)| n == name) {
            Some((_, limit)) => {
                if q != limit && !overcommit_allowed(name) {
                    errs.push(invalid(
                        &req_path,
                        q.canonical(),
                        &format!("must be equal to {name} limit of {}", limit.canonical()),
                    ));
                } else if q > limit {
                    errs.push(invalid(
                        &req_path,
                        q.canonical(),
                        &format!(
                            "must be less than or equal to {name} limit of {}",
                            limit.canonical()
                        ),
                    ));
                }
            }
            None => {
                if !overcommit_allowed(name) {
                    errs.push(required(
                        &lim_path,
                        "Limit must be set for non overcommitable resources",
                    ));
                }
            }
        }
        if is_hugepage(name) {
            req_huge = true;
            if !hugepage_divisible(name, q) {
                errs.push(invalid(
                    &fp,
                    q.canonical(),
                    &format!(
                        "{} is not positive integer multiple of {name}",
                        q.canonical()
                    ),
                ));
            }
        }
        if name == "cpu" || name == "memory" {
            req_cpu_mem = true;
        }
    }
    if !lim_cpu_mem && !req_cpu_mem && (req_huge || lim_huge) {
        errs.push(forbidden(p, "HugePages require cpu or memory"));
    }
    // Resource claims must name an entry of spec.resourceClaims.
    let cp = p.child("claims");
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for (i, claim) in arr(req, "claims").iter().enumerate() {
        let name = s(claim, "name");
        let ip = cp.index(i);
        if name.is_empty() {
            errs.push(required(&ip, ""));
            continue;
        }
        if seen.contains(name) {
            errs.push(duplicate(&ip, name));
        } else {
            let mut key = name.to_string();
            let request = s(claim, "request");
            if !request.is_empty() {
                errs.extend(dns_label(request, &ip.child("request")));
                key = format!("{name}/{request}");
            }
            if seen.contains(&key) {
                errs.push(duplicate(&ip, key.clone()));
            } else if request.is_empty() {
                for k in &seen {
                    if k.split_once('/').is_some_and(|(n, _)| n == name) {
                        errs.push(duplicate(&ip, name));
                    }
                }
            }
            seen.insert(key);
        }
        if !claim_names.contains(name) {
            let detail = if claim_names.is_empty() {
                "must be one of the names in pod.spec.resourceClaims which is empty".to_string()
            } else {
                format!(
                    "must be one of the names in pod.spec.resourceClaims: {}",
                    claim_names.iter().cloned().collect::<Vec<_>>().join(", ")
                )
            };
            errs.push(not_found_detail(&ip, name, detail));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Node selectors.

fn node_selector_requirement(rq: &Value, allow_invalid: bool, p: &P) -> Errs {
    let mut errs = Vec::new();
    let n = len_of(rq, "values");
    let op = s(rq, "operator");
    match op {
        "In" | "NotIn" => {
            if n == 0 {
                errs.push(required(
                    &p.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if n > 0 {
                errs.push(forbidden(
                    &p.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        "Gt" | "Lt" => {
            if n != 1 {
                errs.push(required(
                    &p.child("values"),
                    "must be specified single value when `operator` is 'Lt' or 'Gt'",
                ));
            }
        }
        _ => errs.push(invalid(
            &p.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    errs.extend(validate_label_name(s(rq, "key"), &p.child("key")));
    if !allow_invalid {
        for (i, v) in str_list(rq, "values").iter().enumerate() {
            for m in is_valid_label_value(v) {
                errs.push(invalid(&p.child("values").index(i), *v, &m));
            }
        }
    }
    errs
}

fn node_field_selector_requirement(rq: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    match s(rq, "operator") {
        "In" | "NotIn" => {
            if len_of(rq, "values") != 1 {
                errs.push(required(
                    &p.child("values"),
                    "must be only one value when `operator` is 'In' or 'NotIn' for node field selector",
                ));
            }
        }
        op => errs.push(invalid(
            &p.child("operator"),
            op,
            "not a valid selector operator",
        )),
    }
    let key = s(rq, "key");
    if key != "metadata.name" {
        errs.push(invalid(
            &p.child("key"),
            key,
            "not a valid field selector key",
        ));
    } else {
        for (i, v) in str_list(rq, "values").iter().enumerate() {
            errs.extend(name_errs(
                &p.child("values").index(i),
                v,
                name_is_dns_subdomain(v, false),
            ));
        }
    }
    errs
}

pub(crate) fn node_selector_term(term: &Value, allow_invalid: bool, p: &P) -> Errs {
    let mut errs = Vec::new();
    for (j, r) in arr(term, "matchExpressions").iter().enumerate() {
        errs.extend(node_selector_requirement(
            r,
            allow_invalid,
            &p.child("matchExpressions").index(j),
        ));
    }
    for (j, r) in arr(term, "matchFields").iter().enumerate() {
        errs.extend(node_field_selector_requirement(
            r,
            &p.child("matchFields").index(j),
        ));
    }
    errs
}

/// `ValidateNodeSelector`.
pub(crate) fn validate_node_selector(ns: &Value, allow_invalid: bool, p: &P) -> Errs {
    let tp = p.child("nodeSelectorTerms");
    let terms = arr(ns, "nodeSelectorTerms");
    if terms.is_empty() {
        return vec![required(&tp, "must have at least one node selector term")];
    }
    terms
        .iter()
        .enumerate()
        .flat_map(|(i, t)| node_selector_term(t, allow_invalid, &tp.index(i)))
        .collect()
}

// ---------------------------------------------------------------------------------------
// Taints and tolerations.

pub(crate) fn taint_effect(effect: &str, allow_empty: bool, p: &P) -> Errs {
    if !allow_empty && effect.is_empty() {
        return vec![required(p, "")];
    }
    match effect {
        "NoSchedule" | "PreferNoSchedule" | "NoExecute" => Vec::new(),
        other => vec![not_supported(
            p,
            other,
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        )],
    }
}

/// `ValidateTolerations`.
pub(crate) fn tolerations(list: &[Value], p: &P) -> Errs {
    let mut errs = Vec::new();
    for (i, t) in list.iter().enumerate() {
        let ip = p.index(i);
        let key = s(t, "key");
        let op = s(t, "operator");
        let effect = s(t, "effect");
        let value = s(t, "value");
        if !key.is_empty() {
            errs.extend(validate_label_name(key, &ip.child("key")));
        }
        if key.is_empty() && op != "Exists" {
            errs.push(invalid(
                &ip.child("operator"),
                op,
                "operator must be Exists when `key` is empty, which means \"match all values and all keys\"",
            ));
        }
        if get(t, "tolerationSeconds").is_some() && effect != "NoExecute" {
            errs.push(invalid(
                &ip.child("effect"),
                effect,
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            ));
        }
        match op {
            "Equal" | "" => {
                let m = is_valid_label_value(value);
                if !m.is_empty() {
                    errs.push(invalid(&ip.child("operator"), value, &m.join(";")));
                }
            }
            "Exists" => {
                if !value.is_empty() {
                    errs.push(invalid(
                        &ip.child("operator"),
                        value,
                        "value must be empty when `operator` is 'Exists'",
                    ));
                }
            }
            other => errs.push(not_supported(
                &ip.child("operator"),
                other,
                &["Equal", "Exists"],
            )),
        }
        if !effect.is_empty() {
            errs.extend(taint_effect(effect, true, &ip.child("effect")));
        }
    }
    errs
}

/// `validateNodeTaints`.
pub(crate) fn node_taints(list: &[Value], p: &P) -> Errs {
    let mut errs = Vec::new();
    let mut seen: BTreeSet<(String, String)> = BTreeSet::new();
    for (i, t) in list.iter().enumerate() {
        let ip = p.index(i);
        let key = s(t, "key");
        errs.extend(validate_label_name(key, &ip.child("key")));
        let m = is_valid_label_value(s(t, "value"));
        if !m.is_empty() {
            errs.push(invalid(&ip.child("value"), s(t, "value"), &m.join(";")));
        }
        let effect = s(t, "effect");
        errs.extend(taint_effect(effect, false, &ip.child("effect")));
        if !seen.insert((effect.to_string(), key.to_string())) {
            errs.push(duplicate_detail(
                &ip,
                t.clone(),
                "taints must be unique by key and effect pair",
            ));
        }
    }
    errs
}

/// Malformed quantities of a resource list, with upstream's decode error message.
pub(crate) fn list_quantity_errors(v: &Value, key: &str, out: &mut Vec<String>) {
    if let Some(m) = obj(v, key) {
        for q in m.values() {
            if let Some(Err(e)) = quantity::from_json(q) {
                out.push(e.to_string());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn requests_over_limits() {
        let r = json!({"limits": {"cpu": "500m"}, "requests": {"cpu": "1"}});
        let errs = resource_requirements(
            Some(&r),
            &BTreeSet::new(),
            &P::new("r"),
            NameRule::Container,
        );
        assert_eq!(
            errs[0].to_string(),
            "r.requests: Invalid value: \"1\": must be less than or equal to cpu limit of 500m"
        );
    }

    #[test]
    fn resource_names() {
        assert!(
            container_resource_name("pods", &P::new("x"))[0]
                .detail
                .contains("must be a standard resource for containers")
        );
        assert!(container_resource_name("example.com/gpu", &P::new("x")).is_empty());
        assert!(
            resource_name("foo", &P::new("x"))[0]
                .detail
                .contains("standard resource type or fully qualified")
        );
    }

    #[test]
    fn hugepages() {
        let r = json!({"limits": {"hugepages-2Mi": "3Mi", "memory": "1Gi"}, "requests": {"hugepages-2Mi": "3Mi"}});
        let errs = resource_requirements(
            Some(&r),
            &BTreeSet::new(),
            &P::new("r"),
            NameRule::Container,
        );
        assert_eq!(errs.len(), 2, "{errs:?}");
    }
}
