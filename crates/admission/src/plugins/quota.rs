//! `ResourceQuota` (upstream's `plugin/pkg/admission/resourcequota`), for object counts
//! (`pods`, `configmaps`, `secrets`, `services`, `persistentvolumeclaims`,
//! `replicationcontrollers`, `resourcequotas`, `count/<resource>[.<group>]`), pod compute
//! resources (`requests.`/`limits.` cpu, memory and ephemeral-storage, hugepages, extended
//! resources), claim storage (`requests.storage`, per storage class) and services
//! (`services.loadbalancers`, `services.nodeports`); quotas with scopes (`Terminating`,
//! `NotTerminating`, `BestEffort`, `NotBestEffort`, `CrossNamespacePodAffinity`, and
//! `PriorityClass` through `scopeSelector`) track only the pods in them. A create is charged to every quota of its namespace that limits what it uses:
//! the new usage is written to the quota's `status.used` with a compare-and-swap on the
//! quota's resourceVersion (retried on conflict), so concurrent creates can never exceed
//! `hard`; over the limit the create is refused with upstream's message. Deletes give the
//! usage back the same way. Until the quota controller exists, a quota's usage of a resource
//! is first counted from the cache when its status does not have it yet. Dry runs charge
//! nothing. Updates of claims and services are charged what they add.

use std::collections::BTreeMap;

use api::ApiError;
use api::kinds::validate::quantity::Quantity;
use serde_json::{Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

pub struct ResourceQuota;

const CORE_COUNTED: &[&str] = &[
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

/// What one object uses, by quota resource name (upstream's evaluators: object counts,
/// pod compute resources, claim storage, service load balancers and node ports).
pub fn usage(group: &str, plural: &str, obj: &Value) -> BTreeMap<String, Quantity> {
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
            // Terminal pods keep only their object count.
            let terminal = matches!(
                obj["status"]["phase"].as_str(),
                Some("Succeeded" | "Failed")
            );
            if terminal {
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
            let ty = obj["spec"]["type"].as_str().unwrap_or("ClusterIP");
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

/// The object kind whose objects use a quota resource name.
fn counted_resource(resource: &str) -> (String, String) {
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
fn quota_tracks(quota: &Value, group: &str, plural: &str, obj: &Value) -> bool {
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

/// `a - b` per resource, never below zero, dropping zeros (upstream's
/// `SubtractWithNonNegativeResult` of an update's usage).
fn increase(
    new: &BTreeMap<String, Quantity>,
    old: &BTreeMap<String, Quantity>,
) -> BTreeMap<String, Quantity> {
    new.iter()
        .filter_map(|(k, v)| {
            let d = old.get(k).map_or(*v, |o| v.sub(o));
            (!d.is_negative() && !d.is_zero()).then(|| (k.clone(), d))
        })
        .collect()
}

fn resource_list(v: &Value) -> BTreeMap<String, Quantity> {
    v.as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| q(v).map(|q| (k.clone(), q)))
        .collect()
}

fn pretty(m: &BTreeMap<String, Quantity>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", v.canonical()))
        .collect::<Vec<_>>()
        .join(",")
}

impl ResourceQuota {
    /// Charges (`sign` +1) or gives back (`-1`) `delta` on every quota of the namespace.
    async fn apply(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
        obj: &Value,
        delta: &BTreeMap<String, Quantity>,
        charge: bool,
    ) -> Result<(), ApiError> {
        for attempt in 0..32 {
            let quotas = cluster.list("", "resourcequotas", &a.namespace).await?;
            let mut conflict = false;
            for quota in quotas {
                if !quota_tracks(&quota, &a.resource.group, &a.resource.kind, obj) {
                    continue;
                }
                let hard = resource_list(&quota["spec"]["hard"]);
                let tracked: Vec<&String> =
                    delta.keys().filter(|k| hard.contains_key(*k)).collect();
                if tracked.is_empty() {
                    continue;
                }
                let mut used = resource_list(&quota["status"]["used"]);
                for k in hard.keys() {
                    if !used.contains_key(k) {
                        used.insert(k.clone(), self.count(a, cluster, &quota, k).await?);
                    }
                }
                let mut new_used = used.clone();
                let (mut req, mut was, mut lim) =
                    (BTreeMap::new(), BTreeMap::new(), BTreeMap::new());
                for k in &tracked {
                    let cur = used.get(*k).copied().unwrap_or_else(Quantity::zero);
                    let d = delta[*k];
                    let next = if charge { cur.add(&d) } else { cur.sub(&d) };
                    let next = if next.is_negative() {
                        Quantity::zero()
                    } else {
                        next
                    };
                    if charge && next > hard[*k] {
                        req.insert((*k).clone(), d);
                        was.insert((*k).clone(), cur);
                        lim.insert((*k).clone(), hard[*k]);
                    }
                    new_used.insert((*k).clone(), next);
                }
                if !req.is_empty() {
                    let name = api::meta::name(&quota).unwrap_or_default();
                    return Err(forbidden(
                        a,
                        format!(
                            "exceeded quota: {name}, requested: {}, used: {}, limited: {}",
                            pretty(&req),
                            pretty(&was),
                            pretty(&lim)
                        ),
                    ));
                }
                if a.dry_run {
                    continue;
                }
                let mut updated = quota.clone();
                updated["status"] = json!({
                    "hard": quota["spec"]["hard"].clone(),
                    "used": new_used.iter().map(|(k, v)| (k.clone(), json!(v.canonical()))).collect::<serde_json::Map<_, _>>(),
                });
                match cluster
                    .update("", "resourcequotas", "status", updated)
                    .await
                {
                    Ok(_) => {}
                    Err(e) if e.code == 409 => {
                        conflict = true;
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if !conflict {
                return Ok(());
            }
            tracing::debug!(attempt, namespace = %a.namespace, "quota conflict; retrying");
            tokio_free_yield().await;
        }
        Err(ApiError::new(
            409,
            api::status::Reason::Conflict,
            "Operation cannot be fulfilled on resourcequotas: too many concurrent updates",
        ))
    }

    /// The current usage of a quota resource by the objects `quota` tracks, counted from
    /// the cache.
    async fn count(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
        quota: &Value,
        resource: &str,
    ) -> Result<Quantity, ApiError> {
        let (group, plural) = counted_resource(resource);
        let Ok(objects) = cluster.list(&group, &plural, &a.namespace).await else {
            return Ok(Quantity::zero());
        };
        Ok(objects
            .iter()
            .filter(|o| quota_tracks(quota, &group, &plural, o))
            .filter_map(|o| usage(&group, &plural, o).get(resource).copied())
            .fold(Quantity::zero(), |x, y| x.add(&y)))
    }
}

/// Upstream's quota controller, one quota at a time: the quota with its `status.hard` and
/// `status.used` recounted from the objects it tracks, or `None` when the status is
/// already right. Usage charged by a create that then failed (a name taken, a later
/// plugin's refusal) is given back this way.
pub async fn recalculate(quota: &Value, cluster: &dyn Cluster) -> Result<Option<Value>, ApiError> {
    let namespace = api::meta::namespace(quota).unwrap_or_default().to_string();
    let hard = resource_list(&quota["spec"]["hard"]);
    let mut lists: BTreeMap<(String, String), Vec<Value>> = BTreeMap::new();
    let mut used = serde_json::Map::new();
    for resource in hard.keys() {
        let (group, plural) = counted_resource(resource);
        let key = (group.clone(), plural.clone());
        if let std::collections::btree_map::Entry::Vacant(e) = lists.entry(key.clone()) {
            e.insert(
                cluster
                    .list(&group, &plural, &namespace)
                    .await
                    .unwrap_or_default(),
            );
        }
        let total = lists[&key]
            .iter()
            .filter(|o| quota_tracks(quota, &group, &plural, o))
            .filter_map(|o| usage(&group, &plural, o).get(resource).copied())
            .fold(Quantity::zero(), |x, y| x.add(&y));
        used.insert(resource.clone(), json!(total.canonical()));
    }
    let status = json!({"hard": quota["spec"]["hard"].clone(), "used": used});
    let same = |a: &Value, b: &Value| {
        resource_list(a) == resource_list(b)
            && a.as_object().map(serde_json::Map::len) == b.as_object().map(serde_json::Map::len)
    };
    if same(&quota["status"]["hard"], &status["hard"])
        && same(&quota["status"]["used"], &status["used"])
    {
        return Ok(None);
    }
    let mut updated = quota.clone();
    updated["status"] = status;
    Ok(Some(updated))
}

/// Lets other tasks run between conflict retries.
async fn tokio_free_yield() {
    struct Yield(bool);
    impl std::future::Future for Yield {
        type Output = ();
        fn poll(
            mut self: std::pin::Pin<&mut Self>,
            cx: &mut std::task::Context<'_>,
        ) -> std::task::Poll<()> {
            if self.0 {
                std::task::Poll::Ready(())
            } else {
                self.0 = true;
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        }
    }
    Yield(false).await
}

#[async_trait::async_trait]
impl Plugin for ResourceQuota {
    fn name(&self) -> &'static str {
        "ResourceQuota"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
    fn validating(&self) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        let (group, plural) = (&a.resource.group, &a.resource.kind);
        let (obj, delta, charge) = match (a.operation, &a.object, &a.old_object) {
            (Operation::Create, Some(o), _) => (o, usage(group, plural, o), true),
            // Updates are charged what they add: a claim resized, a service turned into
            // a load balancer (pods' resources do not change in place).
            (Operation::Update, Some(new), Some(old))
                if group.is_empty()
                    && matches!(plural.as_str(), "persistentvolumeclaims" | "services") =>
            {
                (
                    new,
                    increase(&usage(group, plural, new), &usage(group, plural, old)),
                    true,
                )
            }
            (Operation::Delete, _, Some(o)) => {
                // Give back what the create charged, whatever phase the pod reached (no
                // quota controller recalculates usage yet).
                let mut live = o.clone();
                if let Some(status) = live.get_mut("status").and_then(Value::as_object_mut) {
                    status.remove("phase");
                }
                (o, usage(group, plural, &live), false)
            }
            _ => return Ok(()),
        };
        if delta.is_empty() {
            return Ok(());
        }
        self.apply(a, cluster, obj, &delta, charge).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCluster;
    use crate::plugins::tests::pod_create;

    #[tokio::test]
    async fn pods_are_charged_and_refused_over_hard() {
        let c = FakeCluster::new();
        c.put(
            "",
            "resourcequotas",
            json!({
                "metadata": {"name": "compute", "namespace": "dev"},
                "spec": {"hard": {"pods": "2", "requests.cpu": "1"}},
            }),
        );
        let pod = |n: &str, cpu: &str| {
            pod_create(
                "dev",
                json!({
                    "metadata": {"name": n},
                    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
                }),
            )
        };
        ResourceQuota.validate(&pod("a", "400m"), &c).await.unwrap();
        let st = c.object("", "resourcequotas", "dev", "compute").unwrap();
        assert_eq!(
            st["status"]["used"],
            json!({"pods": "1", "requests.cpu": "400m"})
        );
        assert_eq!(
            st["status"]["hard"],
            json!({"pods": "2", "requests.cpu": "1"})
        );
        let e = ResourceQuota
            .validate(&pod("b", "700m"), &c)
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"b\" is forbidden: exceeded quota: compute, requested: requests.cpu=700m, used: requests.cpu=400m, limited: requests.cpu=1"
        );
        ResourceQuota.validate(&pod("b", "600m"), &c).await.unwrap();
        // A scoped quota only sees the pods in its scopes.
        c.put(
            "",
            "resourcequotas",
            json!({
                "metadata": {"name": "best-effort", "namespace": "dev"},
                "spec": {"hard": {"pods": "0"}, "scopes": ["BestEffort"]},
            }),
        );
        let e = ResourceQuota
            .validate(&pod("c", "0"), &c)
            .await
            .unwrap_err();
        assert!(
            e.message.contains(
                "exceeded quota: compute, requested: pods=1, used: pods=2, limited: pods=2"
            ),
            "{}",
            e.message
        );
    }

    #[tokio::test]
    async fn recalculation_counts_what_exists() {
        let c = FakeCluster::new();
        let quota = json!({
            "metadata": {"name": "q", "namespace": "dev"},
            "spec": {"hard": {"configmaps": "5", "pods": "3", "requests.cpu": "2"}, "scopes": ["NotTerminating"]},
            "status": {"hard": {"configmaps": "5", "pods": "3", "requests.cpu": "2"}, "used": {"configmaps": "4", "pods": "0", "requests.cpu": "0"}},
        });
        c.put(
            "",
            "configmaps",
            json!({"metadata": {"name": "a", "namespace": "dev"}}),
        );
        c.put(
            "",
            "configmaps",
            json!({"metadata": {"name": "b", "namespace": "other"}}),
        );
        c.put("", "pods", json!({"metadata": {"name": "p", "namespace": "dev"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]}}));
        c.put("", "pods", json!({"metadata": {"name": "t", "namespace": "dev"}, "spec": {"activeDeadlineSeconds": 5, "containers": [{"name": "c"}]}}));
        let updated = recalculate(&quota, &c).await.unwrap().unwrap();
        assert_eq!(
            updated["status"]["used"],
            json!({"configmaps": "1", "pods": "1", "requests.cpu": "500m"})
        );
        // Already right: nothing to write.
        assert!(recalculate(&updated, &c).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn scopes_claims_and_services() {
        let c = FakeCluster::new();
        c.put(
            "",
            "resourcequotas",
            json!({
                "metadata": {"name": "be", "namespace": "dev"},
                "spec": {"hard": {"pods": "1"}, "scopes": ["BestEffort", "NotTerminating"]},
            }),
        );
        c.put(
            "",
            "resourcequotas",
            json!({
                "metadata": {"name": "gold", "namespace": "dev"},
                "spec": {"hard": {"pods": "0"}, "scopeSelector": {"matchExpressions": [
                    {"scopeName": "PriorityClass", "operator": "In", "values": ["gold"]}]}},
            }),
        );
        c.put(
            "",
            "resourcequotas",
            json!({
                "metadata": {"name": "storage", "namespace": "dev"},
                "spec": {"hard": {"requests.storage": "10Gi", "fast.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
                                  "services.loadbalancers": "1", "services.nodeports": "2"}},
            }),
        );
        let pod = |name: &str, spec: Value| {
            pod_create("dev", json!({"metadata": {"name": name}, "spec": spec}))
        };
        let plain = json!({"containers": [{"name": "c"}]});
        ResourceQuota
            .validate(&pod("a", plain.clone()), &c)
            .await
            .unwrap();
        let e = ResourceQuota
            .validate(&pod("b", plain), &c)
            .await
            .unwrap_err();
        assert!(e.message.contains("exceeded quota: be"), "{}", e.message);
        // Not best effort, or terminating: outside that quota.
        let burstable =
            json!({"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]});
        ResourceQuota
            .validate(&pod("c", burstable), &c)
            .await
            .unwrap();
        let terminating = json!({"activeDeadlineSeconds": 30, "containers": [{"name": "c"}]});
        ResourceQuota
            .validate(&pod("d", terminating), &c)
            .await
            .unwrap();
        // The gold class is allowed no pods.
        let gold = json!({"priorityClassName": "gold", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]});
        let e = ResourceQuota
            .validate(&pod("e", gold), &c)
            .await
            .unwrap_err();
        assert!(e.message.contains("exceeded quota: gold"), "{}", e.message);

        let as_kind = |plural: &str, mut a: Attributes| {
            a.resource.kind = plural.into();
            a
        };
        let claim = |name: &str, size: &str, class: &str| {
            as_kind(
                "persistentvolumeclaims",
                pod_create(
                    "dev",
                    json!({"metadata": {"name": name}, "spec": {
                    "storageClassName": class, "resources": {"requests": {"storage": size}}}}),
                ),
            )
        };
        ResourceQuota
            .validate(&claim("c1", "6Gi", "fast"), &c)
            .await
            .unwrap();
        let e = ResourceQuota
            .validate(&claim("c2", "1Gi", "fast"), &c)
            .await
            .unwrap_err();
        assert!(
            e.message
                .contains("requested: fast.storageclass.storage.k8s.io/persistentvolumeclaims=1"),
            "{}",
            e.message
        );
        let e = ResourceQuota
            .validate(&claim("c3", "5Gi", "slow"), &c)
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "persistentvolumeclaims \"c3\" is forbidden: exceeded quota: storage, requested: requests.storage=5Gi, used: requests.storage=6Gi, limited: requests.storage=10Gi"
        );
        // A resize is charged what it adds.
        let mut resize = claim("c1", "12Gi", "fast");
        resize.operation = Operation::Update;
        resize.old_object = Some(
            json!({"metadata": {"name": "c1"}, "spec": {"storageClassName": "fast", "resources": {"requests": {"storage": "6Gi"}}}}),
        );
        let e = ResourceQuota.validate(&resize, &c).await.unwrap_err();
        assert!(
            e.message
                .contains("requested: requests.storage=6Gi, used: requests.storage=6Gi"),
            "{}",
            e.message
        );

        let service = |name: &str, ty: &str, ports: usize| {
            let ports: Vec<Value> = (0..ports).map(|i| json!({"port": 80 + i})).collect();
            as_kind(
                "services",
                pod_create(
                    "dev",
                    json!({"metadata": {"name": name}, "spec": {"type": ty, "ports": ports}}),
                ),
            )
        };
        ResourceQuota
            .validate(&service("lb", "LoadBalancer", 1), &c)
            .await
            .unwrap();
        let e = ResourceQuota
            .validate(&service("lb2", "LoadBalancer", 1), &c)
            .await
            .unwrap_err();
        assert!(
            e.message.contains("services.loadbalancers=1"),
            "{}",
            e.message
        );
        let e = ResourceQuota
            .validate(&service("np", "NodePort", 2), &c)
            .await
            .unwrap_err();
        assert!(
            e.message
                .contains("requested: services.nodeports=2, used: services.nodeports=1"),
            "{}",
            e.message
        );
        ResourceQuota
            .validate(&service("cip", "ClusterIP", 3), &c)
            .await
            .unwrap();
    }
}
