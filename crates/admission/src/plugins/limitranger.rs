//! `LimitRanger` (upstream's `plugin/pkg/admission/limitranger`): new pods get the
//! namespace's `Container` default requests and limits on every container and init
//! container that sets none (recorded in the `kubernetes.io/limit-ranger` annotation);
//! pods whose containers (`Container` items) or totals (`Pod` items) are below `min`, above
//! `max` or beyond `maxLimitRequestRatio`, and claims whose storage request is outside a
//! `PersistentVolumeClaim` item's `min`/`max`, are refused with upstream's messages.

use std::borrow::Borrow;

use api::ApiError;
use api::kinds::validate::quantity::Quantity;
use serde_json::{Map, Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub struct LimitRanger;

/// The `Container` items of the namespace's LimitRanges, with upstream's LimitRange
/// defaulting applied (`default` from `max`, `defaultRequest` from `default` then `min`).
fn container_limits(ranges: &[impl Borrow<Value>]) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for lr in ranges.iter().map(Borrow::borrow) {
        for item in lr["spec"]["limits"].as_array().into_iter().flatten() {
            if item["type"] != "Container" {
                continue;
            }
            let Some(mut item) = item.as_object().cloned() else {
                continue;
            };
            let get = |item: &Map<String, Value>, k: &str| {
                item.get(k)
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default()
            };
            let (max, min) = (get(&item, "max"), get(&item, "min"));
            let mut default = get(&item, "default");
            for (k, v) in &max {
                default.entry(k.clone()).or_insert_with(|| v.clone());
            }
            let mut default_request = get(&item, "defaultRequest");
            for (k, v) in default.iter().chain(min.iter()) {
                default_request
                    .entry(k.clone())
                    .or_insert_with(|| v.clone());
            }
            item.insert("default".into(), Value::Object(default));
            item.insert("defaultRequest".into(), Value::Object(default_request));
            out.push(item);
        }
    }
    out
}

fn quantity(v: &Value) -> Option<Quantity> {
    match v {
        Value::String(s) => Quantity::parse(s).ok(),
        Value::Number(n) => Quantity::parse(&n.to_string()).ok(),
        _ => None,
    }
}

/// Sets missing requests and limits of one container; returns the names it set.
fn merge(
    container: &mut Value,
    defaults: &Map<String, Value>,
    requests: &Map<String, Value>,
) -> (Vec<String>, Vec<String>) {
    let mut set_limits = Vec::new();
    let mut set_requests = Vec::new();
    if !container["resources"].is_object() {
        container["resources"] = json!({});
    }
    let res = &mut container["resources"];
    for (section, defs, set) in [
        ("limits", defaults, &mut set_limits),
        ("requests", requests, &mut set_requests),
    ] {
        for (k, v) in defs {
            if res[section].get(k).is_none() {
                if !res[section].is_object() {
                    res[section] = json!({});
                }
                res[section][k] = v.clone();
                set.push(k.clone());
            }
        }
    }
    set_limits.sort();
    set_requests.sort();
    (set_requests, set_limits)
}

fn section(item: &Map<String, Value>, k: &str) -> Map<String, Value> {
    item.get(k)
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// Upstream's `minConstraint`, `maxConstraint` and `limitRequestRatioConstraint` of one
/// limit item over `requests` and `limits` (a container's, or a pod's totals) for
/// `limit_type` (`Container`, `Pod`).
fn violations(
    requests: &Map<String, Value>,
    limits: &Map<String, Value>,
    item: &Map<String, Value>,
    limit_type: &str,
) -> Vec<String> {
    let mut errs = Vec::new();
    for (k, min) in section(item, "min") {
        let Some(min_q) = quantity(&min) else {
            continue;
        };
        let (req, lim) = (
            requests.get(&k).and_then(quantity),
            limits.get(&k).and_then(quantity),
        );
        let min_s = min_q.canonical();
        match (req, lim) {
            (None, _) => errs.push(format!(
                "minimum {k} usage per {limit_type} is {min_s}.  No request is specified"
            )),
            (Some(r), _) if r < min_q => errs.push(format!(
                "minimum {k} usage per {limit_type} is {min_s}, but request is {}",
                r.canonical()
            )),
            (_, Some(l)) if l < min_q => errs.push(format!(
                "minimum {k} usage per {limit_type} is {min_s}, but limit is {}",
                l.canonical()
            )),
            _ => {}
        }
    }
    for (k, max) in section(item, "max") {
        let Some(max_q) = quantity(&max) else {
            continue;
        };
        let (req, lim) = (
            requests.get(&k).and_then(quantity),
            limits.get(&k).and_then(quantity),
        );
        let max_s = max_q.canonical();
        match (req, lim) {
            (_, None) => errs.push(format!(
                "maximum {k} usage per {limit_type} is {max_s}.  No limit is specified"
            )),
            (_, Some(l)) if l > max_q => errs.push(format!(
                "maximum {k} usage per {limit_type} is {max_s}, but limit is {}",
                l.canonical()
            )),
            (Some(r), _) if r > max_q => errs.push(format!(
                "maximum {k} usage per {limit_type} is {max_s}, but request is {}",
                r.canonical()
            )),
            _ => {}
        }
    }
    for (k, ratio) in section(item, "maxLimitRequestRatio") {
        let Some(ratio_q) = quantity(&ratio) else {
            continue;
        };
        let ratio_s = ratio_q.canonical();
        let req = requests.get(&k).and_then(quantity).filter(|r| !r.is_zero());
        let lim = limits.get(&k).and_then(quantity).filter(|l| !l.is_zero());
        let (Some(r), Some(l)) = (req, lim) else {
            errs.push(if req.is_none() {
                format!(
                    "{k} max limit to request ratio per {limit_type} is {ratio_s}, but no request is specified or request is 0"
                )
            } else {
                format!(
                    "{k} max limit to request ratio per {limit_type} is {ratio_s}, but no limit is specified or limit is 0"
                )
            });
            continue;
        };
        let observed = l.milli_value() as f64 / r.milli_value() as f64;
        let max = ratio_q.milli_value() as f64 / 1000.0;
        if observed > max {
            errs.push(format!(
                "{k} max limit to request ratio per {limit_type} is {ratio_s}, but provided ratio is {observed:.6}"
            ));
        }
    }
    errs
}

fn resources(c: &Value, kind: &str) -> Map<String, Value> {
    c["resources"][kind]
        .as_object()
        .cloned()
        .unwrap_or_default()
}

/// A pod's totals for the `Pod` limit type: the containers' sum, raised to any init
/// container's own value (upstream's pod requests and limits).
fn pod_totals(pod: &Value, kind: &str) -> Map<String, Value> {
    let mut sums: std::collections::BTreeMap<String, Quantity> = Default::default();
    for c in pod["spec"]["containers"].as_array().into_iter().flatten() {
        for (k, v) in resources(c, kind) {
            if let Some(q) = quantity(&v) {
                let total = match sums.remove(&k) {
                    Some(t) => t.add(&q),
                    None => q,
                };
                sums.insert(k, total);
            }
        }
    }
    for c in pod["spec"]["initContainers"]
        .as_array()
        .into_iter()
        .flatten()
    {
        for (k, v) in resources(c, kind) {
            if let Some(q) = quantity(&v)
                && sums.get(&k).is_none_or(|t| q > *t)
            {
                sums.insert(k, q);
            }
        }
    }
    sums.into_iter()
        .map(|(k, q)| (k, Value::String(q.canonical())))
        .collect()
}

/// Every violation of a pod against the `Container` and `Pod` items of `ranges`, in
/// upstream's order (per item: containers, init containers, then the pod's totals).
fn pod_violations(pod: &Value, ranges: &[impl Borrow<Value>]) -> Vec<String> {
    let mut errs = Vec::new();
    for item in limit_items(ranges) {
        match item.get("type").and_then(Value::as_str) {
            Some("Container") => {
                for key in ["containers", "initContainers"] {
                    for c in pod["spec"][key].as_array().into_iter().flatten() {
                        errs.extend(violations(
                            &resources(c, "requests"),
                            &resources(c, "limits"),
                            &item,
                            "Container",
                        ));
                    }
                }
            }
            Some("Pod") => errs.extend(violations(
                &pod_totals(pod, "requests"),
                &pod_totals(pod, "limits"),
                &item,
                "Pod",
            )),
            _ => {}
        }
    }
    errs
}

/// The violations of a PersistentVolumeClaim's requests (upstream's
/// `PersistentVolumeClaimValidateLimitFunc`: min on the request, max on the request).
fn pvc_violations(pvc: &Value, ranges: &[impl Borrow<Value>]) -> Vec<String> {
    let requests = pvc["spec"]["resources"]["requests"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let mut errs = Vec::new();
    for item in limit_items(ranges) {
        if item.get("type").and_then(Value::as_str) != Some("PersistentVolumeClaim") {
            continue;
        }
        let only_min: Map<String, Value> =
            [("min".to_string(), Value::Object(section(&item, "min")))]
                .into_iter()
                .collect();
        errs.extend(violations(
            &requests,
            &Map::new(),
            &only_min,
            "PersistentVolumeClaim",
        ));
        for (k, max) in section(&item, "max") {
            let Some(max_q) = quantity(&max) else {
                continue;
            };
            match requests.get(&k).and_then(quantity) {
                None => errs.push(format!(
                    "maximum {k} usage per PersistentVolumeClaim is {}.  No request is specified",
                    max_q.canonical()
                )),
                Some(r) if r > max_q => errs.push(format!(
                    "maximum {k} usage per PersistentVolumeClaim is {}, but request is {}",
                    max_q.canonical(),
                    r.canonical()
                )),
                _ => {}
            }
        }
    }
    errs
}

fn limit_items(ranges: &[impl Borrow<Value>]) -> Vec<Map<String, Value>> {
    ranges
        .iter()
        .map(Borrow::borrow)
        .flat_map(|lr: &Value| lr["spec"]["limits"].as_array().into_iter().flatten())
        .filter_map(|i| i.as_object().cloned())
        .collect()
}

#[async_trait::async_trait]
impl Plugin for LimitRanger {
    fn name(&self) -> &'static str {
        "LimitRanger"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.operation != Operation::Create || !a.is_main("", "pods") {
            return Ok(());
        }
        let ranges = cluster.list("", "limitranges", &a.namespace).await?;
        let items = container_limits(&ranges);
        if items.is_empty() {
            return Ok(());
        }
        let mut defaults = Map::new();
        let mut requests = Map::new();
        for item in &items {
            for (k, v) in item["default"].as_object().into_iter().flatten() {
                defaults.insert(k.clone(), v.clone());
            }
            for (k, v) in item["defaultRequest"].as_object().into_iter().flatten() {
                requests.insert(k.clone(), v.clone());
            }
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let mut notes: Vec<String> = Vec::new();
        for (key, kind) in [
            ("initContainers", "init container"),
            ("containers", "container"),
        ] {
            for c in pod["spec"][key].as_array_mut().into_iter().flatten() {
                let name = c["name"].as_str().unwrap_or_default().to_string();
                let (set_requests, set_limits) = merge(c, &defaults, &requests);
                if !set_requests.is_empty() {
                    notes.push(format!(
                        "{} request for {kind} {name}",
                        set_requests.join(", ")
                    ));
                }
                if !set_limits.is_empty() {
                    notes.push(format!("{} limit for {kind} {name}", set_limits.join(", ")));
                }
            }
        }
        if !notes.is_empty() {
            let meta = api::meta::metadata_mut(pod);
            let ann = meta.entry("annotations").or_insert_with(|| json!({}));
            if let Some(ann) = ann.as_object_mut() {
                ann.insert(
                    ANNOTATION.into(),
                    json!(format!("LimitRanger plugin set: {}", notes.join("; "))),
                );
            }
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        // Pods on create only (their containers are immutable); claims on create and
        // update (a resize asks for more).
        let pod = a.is_main("", "pods") && a.operation == Operation::Create;
        let pvc = a.is_main("", "persistentvolumeclaims");
        let Some(object) = a.object.as_ref().filter(|_| pod || pvc) else {
            return Ok(());
        };
        let ranges = cluster.list("", "limitranges", &a.namespace).await?;
        let mut errs = if pod {
            pod_violations(object, &ranges)
        } else {
            pvc_violations(object, &ranges)
        };
        // Upstream's aggregate: one message as is, several in brackets.
        match errs.len() {
            0 => Ok(()),
            1 => Err(forbidden(a, errs.remove(0))),
            _ => Err(forbidden(a, format!("[{}]", errs.join(", ")))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCluster;
    use crate::plugins::tests::pod_create;

    fn cluster() -> FakeCluster {
        let c = FakeCluster::new();
        c.put(
            "",
            "limitranges",
            json!({
                "metadata": {"name": "limits", "namespace": "dev"},
                "spec": {"limits": [{
                    "type": "Container",
                    "default": {"cpu": "500m", "memory": "256Mi"},
                    "defaultRequest": {"cpu": "100m"},
                    "min": {"cpu": "50m"},
                    "max": {"cpu": "1"},
                    "maxLimitRequestRatio": {"cpu": "5"},
                }]},
            }),
        );
        c
    }

    #[tokio::test]
    async fn defaults_are_set_and_annotated() {
        let c = cluster();
        let mut a = pod_create(
            "dev",
            json!({
                "metadata": {"name": "p"},
                "spec": {"containers": [
                    {"name": "web"},
                    {"name": "side", "resources": {"limits": {"cpu": "200m"}}},
                ]},
            }),
        );
        LimitRanger.admit(&mut a, &c).await.unwrap();
        let pod = a.object.as_ref().unwrap();
        assert_eq!(
            pod["spec"]["containers"][0]["resources"],
            json!({
                "limits": {"cpu": "500m", "memory": "256Mi"},
                "requests": {"cpu": "100m", "memory": "256Mi"},
            })
        );
        assert_eq!(
            pod["spec"]["containers"][1]["resources"]["limits"]["cpu"],
            "200m"
        );
        assert_eq!(
            pod["metadata"]["annotations"][ANNOTATION],
            "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web; cpu, memory request for container side; memory limit for container side"
        );
        LimitRanger.validate(&a, &c).await.unwrap();
    }

    #[tokio::test]
    async fn min_max_and_ratio_are_enforced() {
        let c = cluster();
        let a = pod_create(
            "dev",
            json!({
                "metadata": {"name": "p"},
                "spec": {"containers": [{"name": "c", "resources": {
                    "requests": {"cpu": "40m"}, "limits": {"cpu": "2"},
                }}]},
            }),
        );
        let e = LimitRanger.validate(&a, &c).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: [minimum cpu usage per Container is 50m, but request is 40m, maximum cpu usage per Container is 1, but limit is 2, cpu max limit to request ratio per Container is 5, but provided ratio is 50.000000]"
        );
        // Other namespaces are not limited.
        let a = pod_create("prod", a.object.clone().unwrap());
        LimitRanger.validate(&a, &c).await.unwrap();
    }

    #[tokio::test]
    async fn pod_totals_and_claims() {
        let c = FakeCluster::new();
        c.put(
            "",
            "limitranges",
            json!({
                "metadata": {"name": "l", "namespace": "dev"},
                "spec": {"limits": [
                    {"type": "Pod", "max": {"cpu": "1"}, "maxLimitRequestRatio": {"memory": "2"}},
                    {"type": "PersistentVolumeClaim", "min": {"storage": "1Gi"}, "max": {"storage": "10Gi"}},
                ]},
            }),
        );
        // Two containers of 600m each: 1200m for the pod; the init container's 2 wins.
        let pod = json!({"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "resources": {"limits": {"cpu": "2"}}}],
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "600m", "memory": "1Gi"}, "requests": {"memory": "256Mi"}}},
            {"name": "b", "resources": {"limits": {"cpu": "600m"}}},
        ]}});
        let e = LimitRanger
            .validate(&pod_create("dev", pod), &c)
            .await
            .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: [maximum cpu usage per Pod is 1, but limit is 2, memory max limit to request ratio per Pod is 2, but provided ratio is 4.000000]"
        );
        let ok = json!({"metadata": {"name": "q"}, "spec": {"containers": [
            {"name": "a", "resources": {"limits": {"cpu": "500m", "memory": "512Mi"}, "requests": {"memory": "256Mi"}}}]}});
        LimitRanger
            .validate(&pod_create("dev", ok), &c)
            .await
            .unwrap();

        let claim = |size: Option<&str>| {
            let requests = size.map_or(json!({}), |s| json!({"storage": s}));
            let mut a = pod_create(
                "dev",
                json!({"metadata": {"name": "data"}, "spec": {"resources": {"requests": requests}}}),
            );
            a.resource.kind = "persistentvolumeclaims".into();
            a
        };
        LimitRanger.validate(&claim(Some("5Gi")), &c).await.unwrap();
        let cr = &c;
        let msg =
            |a: Attributes| async move { LimitRanger.validate(&a, cr).await.unwrap_err().message };
        assert_eq!(
            msg(claim(Some("20Gi"))).await,
            "persistentvolumeclaims \"data\" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"
        );
        assert_eq!(
            msg(claim(Some("100Mi"))).await,
            "persistentvolumeclaims \"data\" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Mi"
        );
        assert_eq!(
            msg(claim(None)).await,
            "persistentvolumeclaims \"data\" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]"
        );
    }
}
