//! `ResourceQuota` (upstream's `plugin/pkg/admission/resourcequota`), for object counts
//! (`pods`, `configmaps`, `secrets`, `services`, `persistentvolumeclaims`,
//! `replicationcontrollers`, `resourcequotas`, `count/<resource>[.<group>]`) and pod compute
//! resources (`requests.cpu`, `requests.memory`, `limits.cpu`, `limits.memory`, `cpu`,
//! `memory`). A create is charged to every quota of its namespace that limits what it uses:
//! the new usage is written to the quota's `status.used` with a compare-and-swap on the
//! quota's resourceVersion (retried on conflict), so concurrent creates can never exceed
//! `hard`; over the limit the create is refused with upstream's message. Deletes give the
//! usage back the same way. Until the quota controller exists, a quota's usage of a resource
//! is first counted from the cache when its status does not have it yet. Dry runs charge
//! nothing. Scopes are not supported yet.

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

/// What one object uses, by quota resource name.
pub fn usage(group: &str, plural: &str, obj: &Value) -> BTreeMap<String, Quantity> {
    let mut out = BTreeMap::new();
    let one = Quantity::from_int(1);
    let count_name = if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    };
    out.insert(count_name, one);
    if group.is_empty() && CORE_COUNTED.contains(&plural) {
        out.insert(plural.to_string(), one);
    }
    if group.is_empty() && plural == "pods" {
        let terminal = matches!(
            obj["status"]["phase"].as_str(),
            Some("Succeeded" | "Failed")
        );
        if terminal {
            return BTreeMap::new();
        }
        for (section, names) in [
            (
                "requests",
                [("cpu", "requests.cpu"), ("memory", "requests.memory")],
            ),
            (
                "limits",
                [("cpu", "limits.cpu"), ("memory", "limits.memory")],
            ),
        ] {
            for (res, name) in names {
                let sum = |key: &str| {
                    obj["spec"][key]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .filter_map(|c| q(&c["resources"][section][res]))
                        .fold(Quantity::zero(), |a, b| a.add(&b))
                };
                let init_max = obj["spec"]["initContainers"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|c| q(&c["resources"][section][res]))
                    .max()
                    .unwrap_or_else(Quantity::zero);
                let total = std::cmp::max(sum("containers"), init_max);
                if !total.is_zero() {
                    out.insert(name.to_string(), total);
                    if section == "requests" {
                        out.insert(res.to_string(), total);
                    }
                }
            }
        }
    }
    out
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
        delta: &BTreeMap<String, Quantity>,
        charge: bool,
    ) -> Result<(), ApiError> {
        for attempt in 0..32 {
            let quotas = cluster.list("", "resourcequotas", &a.namespace).await?;
            let mut conflict = false;
            for quota in quotas {
                let hard = resource_list(&quota["spec"]["hard"]);
                let tracked: Vec<&String> =
                    delta.keys().filter(|k| hard.contains_key(*k)).collect();
                if tracked.is_empty() {
                    continue;
                }
                let mut used = resource_list(&quota["status"]["used"]);
                for k in hard.keys() {
                    if !used.contains_key(k) {
                        used.insert(k.clone(), self.count(a, cluster, k).await?);
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

    /// The current usage of a quota resource, counted from the cache.
    async fn count(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
        resource: &str,
    ) -> Result<Quantity, ApiError> {
        let (group, plural) = match resource.strip_prefix("count/") {
            Some(r) => match r.split_once('.') {
                Some((p, g)) => (g.to_string(), p.to_string()),
                None => (String::new(), r.to_string()),
            },
            None if CORE_COUNTED.contains(&resource) => (String::new(), resource.to_string()),
            None => (String::new(), "pods".to_string()),
        };
        let Ok(objects) = cluster.list(&group, &plural, &a.namespace).await else {
            return Ok(Quantity::zero());
        };
        Ok(objects
            .iter()
            .filter_map(|o| usage(&group, &plural, o).get(resource).copied())
            .fold(Quantity::zero(), |x, y| x.add(&y)))
    }
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
        matches!(op, Operation::Create | Operation::Delete)
    }
    fn validating(&self) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.namespace.is_empty() || !a.subresource.is_empty() {
            return Ok(());
        }
        let (obj, charge) = match (a.operation, &a.object, &a.old_object) {
            (Operation::Create, Some(o), _) => (o, true),
            (Operation::Delete, _, Some(o)) => (o, false),
            _ => return Ok(()),
        };
        let delta = usage(&a.resource.group, &a.resource.kind, obj);
        if delta.is_empty() {
            return Ok(());
        }
        self.apply(a, cluster, &delta, charge).await
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
}
