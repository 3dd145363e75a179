//! Resource quota evaluation (upstream's `pkg/quota/v1` and its core evaluators), shared by
//! the `ResourceQuota` admission plugin and the resource quota controller: what one object
//! uses by quota resource name, which objects a quota's scopes track, and a quota's
//! recounted status. Pure functions of JSON objects.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use crate::kinds::validate::quantity::Quantity;

/// The core kinds whose objects are counted by plural name.
pub const CORE_COUNTED: &[&str] = &[
    "pods",
    "configmaps",
    "secrets",
    "services",
    "persistentvolumeclaims",
    "replicationcontrollers",
    "resourcequotas",
];

fn q(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// Pod compute resources that quota as `requests.X`, `limits.X` and (requests) `X`.
const STANDARD_COMPUTE: &[&str] = &["cpu", "memory", "ephemeral-storage"];

/// A `ResourceList` (`{"cpu": "1", ...}`) parsed; malformed quantities are left out.
pub fn resource_list(v: &Value) -> BTreeMap<String, Quantity> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| q(v).map(|q| (k.clone(), q)))
        .collect()
}

/// A pod's requests or limits per resource: the containers' sum, raised to any init
/// container's own value, plus the pod overhead.
fn pod_resources(pod: &Value, section: &str) -> BTreeMap<String, Quantity> {
    let mut total: BTreeMap<String, Quantity> = BTreeMap::new();
    let containers = |key: &str| -> Vec<BTreeMap<String, Quantity>> {
        pod["spec"][key]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| resource_list(&c["resources"][section]))
            .collect()
    };
    for c in containers("containers") {
        for (k, v) in c {
            let sum = total.get(&k).map_or(v, |t| t.add(&v));
            total.insert(k, sum);
        }
    }
    for c in containers("initContainers") {
        for (k, v) in c {
            if total.get(&k).is_none_or(|t| v > *t) {
                total.insert(k, v);
            }
        }
    }
    for (k, v) in resource_list(&pod["spec"]["overhead"]) {
        let sum = total.get(&k).map_or(v, |t| t.add(&v));
        total.insert(k, sum);
    }
    total
}

/// Whether a pod is terminal (`Succeeded` or `Failed`): it then keeps only its object
/// count.
fn terminal(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded" | "Failed")
    )
}

/// What one object uses, by quota resource name (upstream's evaluators: object counts,
/// pod compute resources, claim storage, service load balancers and node ports).
pub fn usage(group: &str, plural: &str, obj: &Value) -> BTreeMap<String, Quantity> {
    usage_of(group, plural, obj, true)
}

/// [`usage`], with `charged` false for a pod upstream's `QuotaV1Pod` no longer charges
/// (stuck terminating past its grace period): such a pod keeps only its object count.
pub fn usage_of(
    group: &str,
    plural: &str,
    obj: &Value,
    charged: bool,
) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let one = Quantity::from_int(1);
    let count_name = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    out.insert(count_name, one);
    if !group.is_empty() {
        return out;
    }
    match plural {
        "pods" => {
            if terminal(obj) || !charged {
                return out;
            }
            out.insert("pods".into(), one);
            let requests = pod_resources(obj, "requests");
            let limits = pod_resources(obj, "limits");
            for res in STANDARD_COMPUTE {
                if let Some(r) = requests.get(*res) {
                    out.insert(res.to_string(), *r);
                    out.insert(format!("requests.{res}"), *r);
                }
                if let Some(l) = limits.get(*res) {
                    out.insert(format!("limits.{res}"), *l);
                }
            }
            for (res, r) in &requests {
                if res.starts_with("hugepages-") {
                    out.insert(res.clone(), *r);
                    out.insert(format!("requests.{res}"), *r);
                } else if res.contains('/') && !res.starts_with("kubernetes.io/") {
                    // Extended resources quota as requests.<name> only.
                    out.insert(format!("requests.{res}"), *r);
                }
            }
        }
        "persistentvolumeclaims" => {
            out.insert("persistentvolumeclaims".into(), one);
            let class = obj["spec"]["storageClassName"]
                .as_str()
                .or_else(|| {
                    obj["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"]
                        .as_str()
                })
                .unwrap_or_default();
            if !class.is_empty() {
                out.insert(
                    format!("{class}.storageclass.storage.k8s.io/persistentvolumeclaims"),
                    one,
                );
            }
            if let Some(storage) = q(&obj["spec"]["resources"]["requests"]["storage"]) {
                out.insert("requests.storage".into(), storage);
                if !class.is_empty() {
                    out.insert(
                        format!("{class}.storageclass.storage.k8s.io/requests.storage"),
                        storage,
                    );
                }
            }
        }
        "services" => {
            out.insert("services".into(), one);
            let ty = service_type(obj);
            if ty == "LoadBalancer" {
                out.insert("services.loadbalancers".into(), one);
            }
            if ty == "LoadBalancer" || ty == "NodePort" {
                let ports = obj["spec"]["ports"].as_array().map_or(0, Vec::len);
                out.insert(
                    "services.nodeports".into(),
                    Quantity::from_int(i64::try_from(ports).unwrap_or(i64::MAX)),
                );
            }
        }
        p if CORE_COUNTED.contains(&p) => {
            out.insert(p.to_string(), one);
        }
        _ => {}
    }
    out
}

/// A service's type as quota sees it (`ClusterIP` when unset; upstream's
/// `GetQuotaServiceType` distinguishes only `NodePort` and `LoadBalancer`).
pub fn service_type(svc: &Value) -> &str {
    svc["spec"]["type"].as_str().unwrap_or("ClusterIP")
}

/// The object kind (group, plural) whose objects use a quota resource name.
pub fn counted_resource(resource: &str) -> (String, String) {
    if let Some(r) = resource.strip_prefix("count/") {
        return match r.split_once('.') {
            Some((p, g)) => (g.to_string(), p.to_string()),
            None => (String::new(), r.to_string()),
        };
    }
    let plural = if CORE_COUNTED.contains(&resource) {
        resource
    } else if resource == "requests.storage" || resource.contains(".storageclass.storage.k8s.io/") {
        "persistentvolumeclaims"
    } else if resource.starts_with("services.") {
        "services"
    } else {
        "pods"
    };
    (String::new(), plural.to_string())
}

/// A pod's QoS is BestEffort: no container or init container requests or limits cpu or
/// memory.
fn best_effort(pod: &Value) -> bool {
    ["containers", "initContainers"].iter().all(|key| {
        pod["spec"][*key].as_array().into_iter().flatten().all(|c| {
            ["requests", "limits"].iter().all(|s| {
                ["cpu", "memory"]
                    .iter()
                    .all(|r| c["resources"][*s][*r].is_null())
            })
        })
    })
}

fn cross_namespace_affinity(pod: &Value) -> bool {
    let cross = |term: &Value| {
        term["namespaces"].as_array().is_some_and(|n| !n.is_empty())
            || !term["namespaceSelector"].is_null()
    };
    ["podAffinity", "podAntiAffinity"].iter().any(|kind| {
        let a = &pod["spec"]["affinity"][*kind];
        a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array()
            .into_iter()
            .flatten()
            .any(cross)
            || a["preferredDuringSchedulingIgnoredDuringExecution"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|w| cross(&w["podAffinityTerm"]))
    })
}

/// Whether a pod is in one scope selector requirement (upstream's `podMatchesScopeFunc`).
fn pod_in_scope(pod: &Value, req: &Value) -> bool {
    let terminating = pod["spec"]["activeDeadlineSeconds"]
        .as_i64()
        .is_some_and(|s| s >= 0);
    match req["scopeName"].as_str().unwrap_or_default() {
        "Terminating" => terminating,
        "NotTerminating" => !terminating,
        "BestEffort" => best_effort(pod),
        "NotBestEffort" => !best_effort(pod),
        "CrossNamespacePodAffinity" => cross_namespace_affinity(pod),
        "PriorityClass" => {
            let class = pod["spec"]["priorityClassName"]
                .as_str()
                .unwrap_or_default();
            let values: Vec<&str> = req["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            match req["operator"].as_str().unwrap_or_default() {
                "Exists" => !class.is_empty(),
                "In" => values.contains(&class),
                "NotIn" => !values.contains(&class),
                // The class is always a key of the matched set, even when empty.
                _ => false,
            }
        }
        _ => false,
    }
}

/// Whether a quota tracks `obj`: every scope of `spec.scopes` and `spec.scopeSelector`
/// matches (scopes only narrow pods; other objects always match).
pub fn quota_tracks(quota: &Value, group: &str, plural: &str, obj: &Value) -> bool {
    if !(group.is_empty() && plural == "pods") {
        return true;
    }
    let from_scopes = quota["spec"]["scopes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| json!({"scopeName": s, "operator": "Exists"}));
    let from_selector = quota["spec"]["scopeSelector"]["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .cloned();
    from_scopes
        .chain(from_selector)
        .all(|req| pod_in_scope(obj, &req))
}

/// The kinds (group, plural) whose objects a quota's hard limits count.
pub fn counted_kinds(quota: &Value) -> Vec<(String, String)> {
    let mut kinds: Vec<(String, String)> = resource_list(&quota["spec"]["hard"])
        .keys()
        .map(|k| counted_resource(k))
        .collect();
    kinds.sort();
    kinds.dedup();
    kinds
}

/// Whether a quota's hard limits (in `status.hard`, as upstream's replenishment reads
/// them, else `spec.hard`) count objects of `(group, plural)`.
pub fn quota_counts(quota: &Value, group: &str, plural: &str) -> bool {
    let hard = if quota["status"]["hard"].is_object() {
        &quota["status"]["hard"]
    } else {
        &quota["spec"]["hard"]
    };
    hard.as_object().into_iter().flatten().any(|(k, _)| {
        let (g, p) = counted_resource(k);
        g == group && p == plural
    })
}

/// A quota's status recounted (upstream's `CalculateUsage`): `hard` is `spec.hard`, `used`
/// has one entry per hard resource, the sum over the objects of the quota's namespace
/// (`objects` per (group, plural), already that namespace's) that its scopes track.
/// `charged` says whether a pod is still charged (upstream's `QuotaV1Pod` clock check).
pub fn recount<V: std::borrow::Borrow<Value>>(
    quota: &Value,
    objects: &BTreeMap<(String, String), Vec<V>>,
    charged: &dyn Fn(&Value) -> bool,
) -> Value {
    let hard = resource_list(&quota["spec"]["hard"]);
    let mut used = serde_json::Map::new();
    for resource in hard.keys() {
        let (group, plural) = counted_resource(resource);
        let total = objects
            .get(&(group.clone(), plural.clone()))
            .into_iter()
            .flatten()
            .map(V::borrow)
            .filter(|o| quota_tracks(quota, &group, &plural, o))
            .filter_map(|o| {
                usage_of(&group, &plural, o, charged(o))
                    .get(resource)
                    .copied()
            })
            .fold(Quantity::zero(), |x, y| x.add(&y));
        used.insert(resource.clone(), json!(total.canonical()));
    }
    json!({"hard": quota["spec"]["hard"].clone(), "used": used})
}

/// Whether two resource lists hold the same resources with equal quantities (upstream's
/// `quota.Equals`).
pub fn same_resources(a: &Value, b: &Value) -> bool {
    resource_list(a) == resource_list(b)
        && a.as_object().map(serde_json::Map::len) == b.as_object().map(serde_json::Map::len)
}

/// Whether a quota's status already is `status` (nothing to write).
pub fn status_is(quota: &Value, status: &Value) -> bool {
    same_resources(&quota["status"]["hard"], &status["hard"])
        && same_resources(&quota["status"]["used"], &status["used"])
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn lists(items: &[(&str, Value)]) -> BTreeMap<(String, String), Vec<Value>> {
        let mut out: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
        for (plural, o) in items {
            out.entry((String::new(), plural.to_string()))
                .or_default()
                .push(o.clone());
        }
        out
    }

    #[test]
    fn recount_sums_tracked_objects_per_hard_resource() {
        let quota = json!({
            "metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"configmaps": "5", "pods": "3", "requests.cpu": "2", "limits.memory": "1Gi"}, "scopes": ["NotTerminating"]},
        });
        let objects = lists(&[
            ("configmaps", json!({"metadata": {"name": "a"}})),
            (
                "pods",
                json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}, "limits": {"memory": "256Mi"}}}]}}),
            ),
            (
                "pods",
                json!({"metadata": {"name": "p2"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "250m"}}}]}}),
            ),
            // Terminating scope: not tracked.
            (
                "pods",
                json!({"metadata": {"name": "t"}, "spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "c"}]}}),
            ),
            // Terminal: keeps only its object count.
            (
                "pods",
                json!({"metadata": {"name": "done"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}, "status": {"phase": "Succeeded"}}),
            ),
        ]);
        let status = recount(&quota, &objects, &|_| true);
        assert_eq!(
            status["used"],
            json!({"configmaps": "1", "pods": "2", "requests.cpu": "750m", "limits.memory": "256Mi"})
        );
        assert_eq!(status["hard"], quota["spec"]["hard"]);
        // A pod no longer charged (stuck terminating) is left out of compute usage.
        let status = recount(&quota, &objects, &|p| p["metadata"]["name"] != "p");
        assert_eq!(status["used"]["pods"], "1");
        assert_eq!(status["used"]["requests.cpu"], "250m");
        let mut q2 = quota.clone();
        q2["status"] = status.clone();
        assert!(status_is(&q2, &status));
        q2["status"]["used"]["pods"] = json!("7");
        assert!(!status_is(&q2, &status));
    }

    #[test]
    fn counted_resources_map_to_their_kinds() {
        assert_eq!(
            counted_resource("count/deployments.apps"),
            ("apps".into(), "deployments".into())
        );
        assert_eq!(
            counted_resource("count/secrets"),
            (String::new(), "secrets".into())
        );
        assert_eq!(
            counted_resource("requests.storage"),
            (String::new(), "persistentvolumeclaims".into())
        );
        assert_eq!(
            counted_resource("services.nodeports"),
            (String::new(), "services".into())
        );
        assert_eq!(
            counted_resource("limits.cpu"),
            (String::new(), "pods".into())
        );
        let quota = json!({"spec": {"hard": {"pods": "1", "count/deployments.apps": "2"}}});
        assert!(quota_counts(&quota, "", "pods"));
        assert!(quota_counts(&quota, "apps", "deployments"));
        assert!(!quota_counts(&quota, "", "configmaps"));
        assert_eq!(
            counted_kinds(&quota),
            vec![
                ("".into(), "pods".into()),
                ("apps".into(), "deployments".into())
            ]
        );
    }

    #[test]
    fn scopes_narrow_pods_only() {
        let quota = json!({"spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort"],
            "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["gold"]}]}}});
        let be_gold = json!({"spec": {"priorityClassName": "gold", "containers": [{"name": "c"}]}});
        let be_plain = json!({"spec": {"containers": [{"name": "c"}]}});
        let burst_gold = json!({"spec": {"priorityClassName": "gold", "containers": [{"name": "c", "resources": {"requests": {"memory": "1Mi"}}}]}});
        assert!(quota_tracks(&quota, "", "pods", &be_gold));
        assert!(!quota_tracks(&quota, "", "pods", &be_plain));
        assert!(!quota_tracks(&quota, "", "pods", &burst_gold));
        assert!(quota_tracks(&quota, "", "configmaps", &json!({})));
    }
}
