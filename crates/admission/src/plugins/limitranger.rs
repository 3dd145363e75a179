//! `LimitRanger` (upstream's `plugin/pkg/admission/limitranger`), for the `Container` limit
//! type: new pods get the namespace's LimitRange default requests and limits on every
//! container and init container that sets none (recorded in the `kubernetes.io/limit-ranger`
//! annotation), and pods whose containers are below `min`, above `max` or beyond
//! `maxLimitRequestRatio` are refused with upstream's messages. (The `Pod` and
//! `PersistentVolumeClaim` limit types are not enforced yet.)

use api::ApiError;
use api::kinds::validate::quantity::Quantity;
use serde_json::{Map, Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

const ANNOTATION: &str = "kubernetes.io/limit-ranger";

pub struct LimitRanger;

/// The `Container` items of the namespace's LimitRanges, with upstream's LimitRange
/// defaulting applied (`default` from `max`, `defaultRequest` from `default` then `min`).
fn container_limits(ranges: &[Value]) -> Vec<Map<String, Value>> {
    let mut out = Vec::new();
    for lr in ranges {
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

/// The min/max/ratio violations of one container.
fn violations(container: &Value, item: &Map<String, Value>) -> Vec<String> {
    let mut errs = Vec::new();
    let res = &container["resources"];
    let requests = res["requests"].as_object().cloned().unwrap_or_default();
    let limits = res["limits"].as_object().cloned().unwrap_or_default();
    let get = |k: &str| {
        item.get(k)
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    for (k, min) in get("min") {
        let Some(min_q) = quantity(&min) else {
            continue;
        };
        match requests.get(&k).and_then(quantity) {
            None => errs.push(format!(
                "minimum {k} usage per Container is {}.  No request is specified",
                min_q.canonical()
            )),
            Some(r) if r < min_q => errs.push(format!(
                "minimum {k} usage per Container is {}, but request is {}",
                min_q.canonical(),
                r.canonical()
            )),
            _ => {}
        }
    }
    for (k, max) in get("max") {
        let Some(max_q) = quantity(&max) else {
            continue;
        };
        match limits.get(&k).and_then(quantity) {
            None => errs.push(format!(
                "maximum {k} usage per Container is {}.  No limit is specified",
                max_q.canonical()
            )),
            Some(l) if l > max_q => errs.push(format!(
                "maximum {k} usage per Container is {}, but limit is {}",
                max_q.canonical(),
                l.canonical()
            )),
            _ => {}
        }
    }
    for (k, ratio) in get("maxLimitRequestRatio") {
        let Some(ratio_q) = quantity(&ratio) else {
            continue;
        };
        let (Some(l), Some(r)) = (
            limits.get(&k).and_then(quantity),
            requests.get(&k).and_then(quantity),
        ) else {
            continue;
        };
        if r.is_zero() {
            continue;
        }
        let observed = l.milli_value() as f64 / r.milli_value() as f64;
        let max = ratio_q.milli_value() as f64 / 1000.0;
        if observed > max {
            errs.push(format!(
                "{k} max limit to request ratio per Container is {}, but provided ratio is {observed:.6}",
                ratio_q.canonical()
            ));
        }
    }
    errs
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
        if !a.is_main("", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let ranges = cluster.list("", "limitranges", &a.namespace).await?;
        let items = container_limits(&ranges);
        let mut errs = Vec::new();
        for item in &items {
            for key in ["initContainers", "containers"] {
                for c in pod["spec"][key].as_array().into_iter().flatten() {
                    errs.extend(violations(c, item));
                }
            }
        }
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
}
