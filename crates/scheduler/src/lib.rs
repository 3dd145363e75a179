//! The scheduler's default plugins as pure functions over a pod and a node as the
//! scheduler's snapshot sees it (the node object and the pods already on it), with
//! upstream's reasons, so `FailedScheduling` events read as upstream's:
//!
//! - filters: `NodeUnschedulable`, `NodeName`, `TaintToleration`, `NodeAffinity` (node
//!   selector and required terms), `NodePorts`, `NodeResourcesFit` (requests against
//!   allocatable, pod count included);
//! - scores (0–100): `NodeResourcesFit` LeastAllocated, `NodeResourcesBalancedAllocation`,
//!   `TaintToleration` (fewer intolerable PreferNoSchedule taints), `NodeAffinity`
//!   (preferred terms' weights);
//! - [`fit_error`]: the `0/3 nodes are available: 3 Insufficient cpu.` summary.
//!
//! The framework around them (queue, snapshot with assumed pods, binding) comes with the
//! rest of issue 5.

use std::collections::BTreeMap;

use api::kinds::validate::quantity::Quantity;
use serde_json::Value;

/// A node as the snapshot holds it.
pub struct NodeInfo<'a> {
    pub node: &'a Value,
    /// The pods bound (or assumed) to the node.
    pub pods: Vec<&'a Value>,
}

/// Why a node does not fit (upstream's status reasons).
pub type Reasons = Vec<String>;

fn q(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// A pod's requests (`cpu` in millicores, others in units), as the scheduler counts
/// them: containers summed, raised to any init container's, plus overhead.
pub fn pod_requests(pod: &Value) -> BTreeMap<String, i64> {
    let amount = |name: &str, v: &Value| {
        q(v).map(|q| {
            if name == "cpu" {
                q.milli_value()
            } else {
                q.value()
            }
        })
    };
    let mut total: BTreeMap<String, i64> = BTreeMap::new();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        for (k, v) in c["resources"]["requests"].as_object().into_iter().flatten() {
            if let Some(a) = amount(k, v) {
                *total.entry(k.clone()).or_default() += a;
            }
        }
    }
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (k, v) in c["resources"]["requests"].as_object().into_iter().flatten() {
            if let Some(a) = amount(k, v) {
                let e = total.entry(k.clone()).or_default();
                *e = (*e).max(a);
            }
        }
    }
    for (k, v) in pod["spec"]["overhead"].as_object().into_iter().flatten() {
        if let Some(a) = amount(k, v) {
            *total.entry(k.clone()).or_default() += a;
        }
    }
    total
}

fn allocatable(node: &Value, resource: &str) -> i64 {
    let v = &node["status"]["allocatable"][resource];
    q(v).map_or(0, |q| {
        if resource == "cpu" {
            q.milli_value()
        } else {
            q.value()
        }
    })
}

/// `NodeUnschedulable`: `spec.unschedulable` nodes only for pods tolerating
/// `node.kubernetes.io/unschedulable:NoSchedule`.
pub fn node_unschedulable(pod: &Value, node: &NodeInfo<'_>) -> Option<String> {
    if node.node["spec"]["unschedulable"] != true {
        return None;
    }
    let taint =
        serde_json::json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"});
    let tolerated = tolerations(pod).any(|t| tolerates(t, &taint));
    (!tolerated).then(|| "node(s) were unschedulable".to_string())
}

/// `NodeName`: a pod naming a node fits only there.
pub fn node_name(pod: &Value, node: &NodeInfo<'_>) -> Option<String> {
    let wanted = pod["spec"]["nodeName"].as_str().unwrap_or_default();
    (!wanted.is_empty() && node.node["metadata"]["name"].as_str() != Some(wanted))
        .then(|| "node(s) didn't match the requested node name".to_string())
}

fn tolerations(pod: &Value) -> impl Iterator<Item = &Value> {
    pod["spec"]["tolerations"].as_array().into_iter().flatten()
}

/// `Toleration.ToleratesTaint`.
pub fn tolerates(toleration: &Value, taint: &Value) -> bool {
    let effect = toleration["effect"].as_str().unwrap_or_default();
    if !effect.is_empty() && Some(effect) != taint["effect"].as_str() {
        return false;
    }
    let key = toleration["key"].as_str().unwrap_or_default();
    if !key.is_empty() && Some(key) != taint["key"].as_str() {
        return false;
    }
    match toleration["operator"].as_str().unwrap_or("Equal") {
        "Exists" => true,
        "Equal" | "" => {
            toleration["value"].as_str().unwrap_or_default()
                == taint["value"].as_str().unwrap_or_default()
        }
        _ => false,
    }
}

fn taints(node: &Value) -> impl Iterator<Item = &Value> {
    node["spec"]["taints"].as_array().into_iter().flatten()
}

/// `TaintToleration` filter: every NoSchedule and NoExecute taint tolerated.
pub fn taint_toleration(pod: &Value, node: &NodeInfo<'_>) -> Option<String> {
    taints(node.node)
        .filter(|t| matches!(t["effect"].as_str(), Some("NoSchedule" | "NoExecute")))
        .find(|t| !tolerations(pod).any(|tol| tolerates(tol, t)))
        .map(|t| {
            format!(
                "node(s) had untolerated taint {{{}: {}}}",
                t["key"].as_str().unwrap_or_default(),
                t["value"].as_str().unwrap_or_default()
            )
        })
}

/// One `NodeSelectorRequirement` against a node's labels (or, for `matchFields`, its
/// `metadata.name`).
fn requirement_matches(req: &Value, value: Option<&str>) -> bool {
    let values: Vec<&str> = req["values"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    match req["operator"].as_str().unwrap_or_default() {
        "In" => value.is_some_and(|v| values.contains(&v)),
        "NotIn" => value.is_none_or(|v| !values.contains(&v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        op @ ("Gt" | "Lt") => {
            let (Some(v), Some(bound)) = (
                value.and_then(|v| v.parse::<i64>().ok()),
                values.first().and_then(|b| b.parse::<i64>().ok()),
            ) else {
                return false;
            };
            if op == "Gt" { v > bound } else { v < bound }
        }
        _ => false,
    }
}

/// A `NodeSelectorTerm`: all its expressions and fields match (an empty term matches
/// nothing).
fn term_matches(term: &Value, node: &Value) -> bool {
    let exprs = term["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let fields = term["matchFields"].as_array().cloned().unwrap_or_default();
    if exprs.is_empty() && fields.is_empty() {
        return false;
    }
    exprs.iter().all(|r| {
        let key = r["key"].as_str().unwrap_or_default();
        requirement_matches(r, node["metadata"]["labels"][key].as_str())
    }) && fields.iter().all(|r| {
        r["key"] == "metadata.name" && requirement_matches(r, node["metadata"]["name"].as_str())
    })
}

/// `NodeAffinity` filter: `nodeSelector` labels and any of the required terms.
pub fn node_affinity(pod: &Value, node: &NodeInfo<'_>) -> Option<String> {
    let labels = &node.node["metadata"]["labels"];
    let selector_ok = pod["spec"]["nodeSelector"]
        .as_object()
        .into_iter()
        .flatten()
        .all(|(k, v)| labels.get(k) == Some(v));
    let required = &pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        ["nodeSelectorTerms"];
    let terms_ok = match required.as_array() {
        None => true,
        Some(terms) => terms.iter().any(|t| term_matches(t, node.node)),
    };
    (!(selector_ok && terms_ok)).then(|| "node(s) didn't match Pod's node affinity/selector".into())
}

fn host_ports(pod: &Value) -> Vec<(String, String, i64)> {
    ["initContainers", "containers"]
        .iter()
        .flat_map(|k| pod["spec"][*k].as_array().into_iter().flatten())
        .flat_map(|c| c["ports"].as_array().into_iter().flatten())
        .filter_map(|p| {
            let port = p["hostPort"].as_i64().filter(|p| *p > 0)?;
            Some((
                p["hostIP"].as_str().unwrap_or("0.0.0.0").to_string(),
                p["protocol"].as_str().unwrap_or("TCP").to_string(),
                port,
            ))
        })
        .collect()
}

/// `NodePorts`: no host port (protocol, port, overlapping IP) already taken.
pub fn node_ports(pod: &Value, node: &NodeInfo<'_>) -> Option<String> {
    let wanted = host_ports(pod);
    if wanted.is_empty() {
        return None;
    }
    let used: Vec<(String, String, i64)> = node.pods.iter().flat_map(|p| host_ports(p)).collect();
    let clash = wanted.iter().any(|(ip, proto, port)| {
        used.iter().any(|(uip, uproto, uport)| {
            port == uport && proto == uproto && (ip == uip || ip == "0.0.0.0" || uip == "0.0.0.0")
        })
    });
    clash.then(|| "node(s) didn't have free ports for the requested pod ports".into())
}

/// `NodeResourcesFit` filter: `Too many pods`, then `Insufficient <resource>` for each
/// requested resource the node lacks.
pub fn node_resources_fit(pod: &Value, node: &NodeInfo<'_>) -> Reasons {
    let mut reasons = Vec::new();
    let max_pods = allocatable(node.node, "pods");
    if i64::try_from(node.pods.len()).unwrap_or(i64::MAX) + 1 > max_pods {
        reasons.push("Too many pods".to_string());
    }
    let want = pod_requests(pod);
    let mut used: BTreeMap<String, i64> = BTreeMap::new();
    for p in &node.pods {
        for (k, v) in pod_requests(p) {
            *used.entry(k).or_default() += v;
        }
    }
    for (res, amount) in &want {
        if *amount == 0 {
            continue;
        }
        let free = allocatable(node.node, res) - used.get(res).copied().unwrap_or(0);
        if *amount > free {
            reasons.push(format!("Insufficient {res}"));
        }
    }
    reasons
}

/// Every filter's reasons for `pod` on `node` (none: it fits).
pub fn filter(pod: &Value, node: &NodeInfo<'_>) -> Reasons {
    let mut reasons: Reasons = [
        node_unschedulable(pod, node),
        node_name(pod, node),
        taint_toleration(pod, node),
        node_affinity(pod, node),
        node_ports(pod, node),
    ]
    .into_iter()
    .flatten()
    .collect();
    reasons.extend(node_resources_fit(pod, node));
    reasons
}

/// Upstream's `FitError` message over the nodes' reasons:
/// `0/3 nodes are available: 1 Insufficient cpu, 2 node(s) were unschedulable.`
pub fn fit_error(num_nodes: usize, reasons_per_node: &[Reasons]) -> String {
    let mut histogram: BTreeMap<&str, usize> = BTreeMap::new();
    for reasons in reasons_per_node {
        for r in reasons {
            *histogram.entry(r.as_str()).or_default() += 1;
        }
    }
    let mut items: Vec<String> = histogram
        .iter()
        .map(|(reason, n)| format!("{n} {reason}"))
        .collect();
    items.sort();
    let mut msg = format!("0/{num_nodes} nodes are available:");
    if !items.is_empty() {
        msg.push(' ');
        msg.push_str(&items.join(", "));
    }
    msg.push('.');
    msg
}

/// The fraction of `resource` requested on the node with the pod placed there.
fn requested_fraction(pod: &Value, node: &NodeInfo<'_>, resource: &str) -> Option<f64> {
    let cap = allocatable(node.node, resource);
    if cap <= 0 {
        return None;
    }
    // Upstream's non-zero defaults: 100m CPU and 200 MiB for pods that request nothing.
    let default = |r: &str| match r {
        "cpu" => 100,
        "memory" => 200 * 1024 * 1024,
        _ => 0,
    };
    let requested = |p: &Value| {
        pod_requests(p)
            .get(resource)
            .copied()
            .filter(|v| *v > 0)
            .unwrap_or_else(|| default(resource))
    };
    let used: i64 = node.pods.iter().map(|p| requested(p)).sum::<i64>() + requested(pod);
    Some(used as f64 / cap as f64)
}

/// `NodeResourcesFit` LeastAllocated score: the free share of CPU and memory, 0–100.
pub fn least_allocated(pod: &Value, node: &NodeInfo<'_>) -> i64 {
    let scores: Vec<f64> = ["cpu", "memory"]
        .iter()
        .filter_map(|r| requested_fraction(pod, node, r))
        .map(|f| ((1.0 - f).max(0.0)) * 100.0)
        .collect();
    if scores.is_empty() {
        return 0;
    }
    (scores.iter().sum::<f64>() / scores.len() as f64) as i64
}

/// `NodeResourcesBalancedAllocation`: 100 when CPU and memory are equally used.
pub fn balanced_allocation(pod: &Value, node: &NodeInfo<'_>) -> i64 {
    let (Some(cpu), Some(mem)) = (
        requested_fraction(pod, node, "cpu"),
        requested_fraction(pod, node, "memory"),
    ) else {
        return 0;
    };
    let (cpu, mem) = (cpu.min(1.0), mem.min(1.0));
    let mean = f64::midpoint(cpu, mem);
    let std = (((cpu - mean).powi(2) + (mem - mean).powi(2)) / 2.0).sqrt();
    ((1.0 - std) * 100.0) as i64
}

/// `TaintToleration` score before normalization: how many PreferNoSchedule taints the pod
/// does not tolerate (fewer is better).
pub fn intolerable_prefer_no_schedule(pod: &Value, node: &NodeInfo<'_>) -> i64 {
    let n = taints(node.node)
        .filter(|t| t["effect"] == "PreferNoSchedule")
        .filter(|t| {
            !tolerations(pod)
                .filter(|tol| {
                    tol["effect"]
                        .as_str()
                        .is_none_or(|e| e.is_empty() || e == "PreferNoSchedule")
                })
                .any(|tol| tolerates(tol, t))
        })
        .count();
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// `NodeAffinity` score before normalization: the summed weights of the matching
/// preferred terms.
pub fn preferred_affinity(pod: &Value, node: &NodeInfo<'_>) -> i64 {
    pod["spec"]["affinity"]["nodeAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| term_matches(&p["preference"], node.node))
        .filter_map(|p| p["weight"].as_i64())
        .sum()
}

/// `DefaultNormalizeScore`: scaled to 0–100 by the highest score (reversed: the lowest
/// raw score gets 100).
pub fn normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    for s in scores.iter_mut() {
        if max == 0 {
            *s = if reverse { 100 } else { 0 };
            continue;
        }
        let scaled = *s * 100 / max;
        *s = if reverse { 100 - scaled } else { scaled };
    }
}

#[cfg(test)]
mod tests;
