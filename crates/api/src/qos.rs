//! A pod's quality-of-service class, upstream's `ComputePodQOS` (container-level
//! resources; pod-level resources are behind a gate that is off in 1.33): `BestEffort`
//! without any cpu or memory request or limit; `Guaranteed` when every container (init
//! containers too) limits both cpu and memory and the summed requests equal the summed
//! limits; else `Burstable`. One implementation for the API server (which sets
//! `status.qosClass` at creation), the kubelet (cgroups, OOM score) and simulated nodes.

use k8s_openapi::api::core::v1::Pod;
use serde_json::Value;

use crate::kinds::validate::quantity::Quantity;

/// A pod's QoS class.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum QosClass {
    Guaranteed,
    Burstable,
    BestEffort,
}

impl QosClass {
    /// The API name (`status.qosClass`).
    pub fn as_str(self) -> &'static str {
        match self {
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Burstable => "Burstable",
            QosClass::BestEffort => "BestEffort",
        }
    }

    /// From `status.qosClass`.
    pub fn parse(s: &str) -> Option<QosClass> {
        match s {
            "Guaranteed" => Some(QosClass::Guaranteed),
            "Burstable" => Some(QosClass::Burstable),
            "BestEffort" => Some(QosClass::BestEffort),
            _ => None,
        }
    }
}

/// One container's `(resource name, quantity)` requests and limits (unparseable
/// quantities are left out).
pub type ContainerResources<'a> = (Vec<(&'a str, Quantity)>, Vec<(&'a str, Quantity)>);

/// The class of a pod whose containers (app and init) have these requests and limits.
pub fn compute<'a>(containers: impl IntoIterator<Item = ContainerResources<'a>>) -> QosClass {
    let mut requests: Vec<(&str, Quantity)> = Vec::new();
    let mut limits: Vec<(&str, Quantity)> = Vec::new();
    let mut guaranteed = true;
    fn add<'a>(acc: &mut Vec<(&'a str, Quantity)>, name: &'a str, q: Quantity) {
        match acc.iter_mut().find(|(n, _)| *n == name) {
            Some((_, v)) => *v = v.add(&q),
            None => acc.push((name, q)),
        }
    }
    let positive = |name: &str, q: Quantity| {
        ((name == "cpu" || name == "memory") && q > Quantity::zero()).then_some(q)
    };
    for (reqs, lims) in containers {
        for (name, q) in reqs {
            if let Some(q) = positive(name, q) {
                add(&mut requests, name, q);
            }
        }
        let (mut cpu, mut memory) = (false, false);
        for (name, q) in lims {
            if let Some(q) = positive(name, q) {
                cpu |= name == "cpu";
                memory |= name == "memory";
                add(&mut limits, name, q);
            }
        }
        guaranteed &= cpu && memory;
    }
    if requests.is_empty() && limits.is_empty() {
        return QosClass::BestEffort;
    }
    guaranteed &= requests.iter().all(|(name, req)| {
        limits
            .iter()
            .any(|(n, lim)| n == name && lim.cmp(req).is_eq())
    });
    if guaranteed && requests.len() == limits.len() {
        QosClass::Guaranteed
    } else {
        QosClass::Burstable
    }
}

/// The class of a typed pod (its spec; `status.qosClass` is not consulted).
pub fn of_pod(pod: &Pod) -> QosClass {
    let Some(spec) = pod.spec.as_ref() else {
        return QosClass::BestEffort;
    };
    type Resources =
        std::collections::BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>;
    fn pairs(m: Option<&Resources>) -> Vec<(&str, Quantity)> {
        m.into_iter()
            .flatten()
            .filter_map(|(k, v)| Quantity::parse(&v.0).ok().map(|q| (k.as_str(), q)))
            .collect()
    }
    compute(
        spec.containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .map(|c| {
                let r = c.resources.as_ref();
                (
                    pairs(r.and_then(|r| r.requests.as_ref())),
                    pairs(r.and_then(|r| r.limits.as_ref())),
                )
            }),
    )
}

/// The class of a pod spec as JSON (the API server's view).
pub fn of_spec_json(spec: &Value) -> QosClass {
    fn pairs(v: Option<&Value>) -> Vec<(&str, Quantity)> {
        v.and_then(Value::as_object)
            .into_iter()
            .flatten()
            .filter_map(|(k, v)| {
                crate::kinds::validate::quantity::from_json(v)?
                    .ok()
                    .map(|q| (k.as_str(), q))
            })
            .collect()
    }
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|key| {
            spec.get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .map(|c| {
            let r = c.get("resources");
            (
                pairs(r.and_then(|r| r.get("requests"))),
                pairs(r.and_then(|r| r.get("limits"))),
            )
        })
        .collect::<Vec<_>>();
    compute(containers)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    fn class(containers: Value) -> QosClass {
        let spec = json!({"containers": containers});
        let by_json = of_spec_json(&spec);
        let pod: Pod = serde_json::from_value(json!({"spec": spec})).unwrap();
        assert_eq!(of_pod(&pod), by_json);
        by_json
    }

    #[test]
    fn upstream_cases() {
        assert_eq!(class(json!([{"name": "a"}])), QosClass::BestEffort);
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            class(json!([{"name": "a", "resources": {"limits": both, "requests": both}}])),
            QosClass::Guaranteed
        );
        // Limits without requests (before defaulting copies them): Burstable, as upstream.
        assert_eq!(
            class(json!([{"name": "a", "resources": {"limits": both}}])),
            QosClass::Burstable
        );
        assert_eq!(
            class(json!([{"name": "a", "resources": {"requests": {"cpu": "100m"}}}])),
            QosClass::Burstable
        );
        assert_eq!(
            class(json!([
                {"name": "a", "resources": {"limits": both, "requests": both}},
                {"name": "b"},
            ])),
            QosClass::Burstable
        );
        // Zero quantities and other resources do not count.
        assert_eq!(
            class(
                json!([{"name": "a", "resources": {"requests": {"cpu": "0", "nvidia.com/gpu": "1"}}}])
            ),
            QosClass::BestEffort
        );
        assert_eq!(QosClass::parse("Burstable"), Some(QosClass::Burstable));
    }
}
