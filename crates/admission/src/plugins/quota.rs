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
//! usage back the same way. A quota's usage of a resource the quota controller has not
//! counted yet is first counted from the cache. The evaluation itself is
//! [`api::quota`], shared with the controller manager's resource quota controller. Dry runs charge
//! nothing. Updates of claims and services are charged what they add.

use std::collections::BTreeMap;

use api::ApiError;
use api::kinds::validate::quantity::Quantity;
pub use api::quota::usage;
use api::quota::{counted_resource, quota_tracks, resource_list};
use serde_json::{Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

pub struct ResourceQuota;

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
                let mut updated = (*quota).clone();
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

/// A quota with its `status.hard` and `status.used` recounted from the objects it tracks
/// (the controller manager's resource quota controller does this from its informers), or
/// `None` when the status is already right.
pub async fn recalculate(quota: &Value, cluster: &dyn Cluster) -> Result<Option<Value>, ApiError> {
    let namespace = api::meta::namespace(quota).unwrap_or_default().to_string();
    let mut lists = BTreeMap::new();
    for (group, plural) in api::quota::counted_kinds(quota) {
        let items = cluster
            .list(&group, &plural, &namespace)
            .await
            .unwrap_or_default();
        lists.insert((group, plural), items);
    }
    let status = api::quota::recount(quota, &lists, &|_| true);
    if api::quota::status_is(quota, &status) {
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
                // Give back what the object still uses: a pod that finished was already
                // given back by the quota controller when it turned terminal.
                (o, usage(group, plural, o), false)
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
