//! The content of configMap, secret and downwardAPI volumes (and of those sources in a
//! projected volume), as pure functions of the objects: upstream's `MakePayload`s,
//! `downwardapi.CollectData`, `fieldpath.ExtractFieldPathAsString` and
//! `resource.ExtractResourceValueByContainerNameAndNodeAllocatable`.

use std::collections::BTreeMap;

use api::kinds::validate::quantity::Quantity;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, DownwardAPIVolumeFile, KeyToPath, Pod, ResourceFieldSelector, Secret,
};

use super::atomic_writer::{FileProjection, Payload, clean_path};

/// Node allocatable resources (`cpu`, `memory`, `ephemeral-storage`): the limits of
/// containers that set none, for `resourceFieldRef`.
pub type Allocatable = BTreeMap<String, Quantity>;

fn mode(item: Option<i32>, default_mode: i32) -> u32 {
    item.unwrap_or(default_mode) as u32 & 0o777
}

/// A configMap's files (`configmap.MakePayload`): every key of `data` and `binaryData`
/// with `default_mode`, or just `items` (key → path, per-item mode). A missing key is an
/// error unless `optional`.
pub fn config_map_payload(
    items: Option<&[KeyToPath]>,
    cm: &ConfigMap,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    let data = cm.data.as_ref();
    let binary = cm.binary_data.as_ref();
    let mut payload = Payload::new();
    match items {
        Some(items) if !items.is_empty() => {
            for ktp in items {
                let content = if let Some(s) = data.and_then(|d| d.get(&ktp.key)) {
                    s.as_bytes().to_vec()
                } else if let Some(b) = binary.and_then(|d| d.get(&ktp.key)) {
                    b.0.clone()
                } else if optional {
                    continue;
                } else {
                    return Err(format!(
                        "configmap references non-existent config key: {}",
                        ktp.key
                    ));
                };
                payload.insert(
                    ktp.path.clone(),
                    FileProjection {
                        data: content,
                        mode: mode(ktp.mode, default_mode),
                    },
                );
            }
        }
        _ => {
            for (k, v) in data.into_iter().flatten() {
                payload.insert(
                    k.clone(),
                    FileProjection {
                        data: v.as_bytes().to_vec(),
                        mode: mode(None, default_mode),
                    },
                );
            }
            for (k, v) in binary.into_iter().flatten() {
                payload.insert(
                    k.clone(),
                    FileProjection {
                        data: v.0.clone(),
                        mode: mode(None, default_mode),
                    },
                );
            }
        }
    }
    Ok(payload)
}

/// A secret's files (`secret.MakePayload`): `data` (already base64-decoded), all keys or
/// `items`.
pub fn secret_payload(
    items: Option<&[KeyToPath]>,
    secret: &Secret,
    default_mode: i32,
    optional: bool,
) -> Result<Payload, String> {
    let data = secret.data.as_ref();
    let mut payload = Payload::new();
    match items {
        Some(items) if !items.is_empty() => {
            for ktp in items {
                let Some(content) = data.and_then(|d| d.get(&ktp.key)) else {
                    if optional {
                        continue;
                    }
                    return Err(format!("references non-existent secret key: {}", ktp.key));
                };
                payload.insert(
                    ktp.path.clone(),
                    FileProjection {
                        data: content.0.clone(),
                        mode: mode(ktp.mode, default_mode),
                    },
                );
            }
        }
        _ => {
            for (k, v) in data.into_iter().flatten() {
                payload.insert(
                    k.clone(),
                    FileProjection {
                        data: v.0.clone(),
                        mode: mode(None, default_mode),
                    },
                );
            }
        }
    }
    Ok(payload)
}

/// Upstream's `fieldpath.FormatMap`: `key="value"` lines (Go `%q`), sorted, no trailing
/// newline.
pub fn format_map(m: &BTreeMap<String, String>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", api::gofmt::go_quote(v)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `fieldpath.SplitMaybeSubscriptedPath`: `metadata.labels['k']` → (`metadata.labels`, `k`).
fn split_subscript(field_path: &str) -> Option<(&str, &str)> {
    let s = field_path.strip_suffix("']")?;
    let (path, sub) = s.split_once("['")?;
    if path.is_empty() {
        return None;
    }
    Some((path, sub))
}

/// `fieldpath.ExtractFieldPathAsString` for a Pod: what a downwardAPI volume's `fieldRef`
/// may name (`metadata.name`, `namespace`, `uid`, `labels`, `annotations`, and one label
/// or annotation by subscript).
pub fn field_path_value(pod: &Pod, field_path: &str) -> Result<String, String> {
    let meta = &pod.metadata;
    let empty = BTreeMap::new();
    let labels = meta.labels.as_ref().unwrap_or(&empty);
    let annotations = meta.annotations.as_ref().unwrap_or(&empty);
    if let Some((path, sub)) = split_subscript(field_path) {
        return match path {
            "metadata.annotations" => {
                let errs = api::validation::is_qualified_name(&sub.to_lowercase());
                if !errs.is_empty() {
                    return Err(format!(
                        "invalid key subscript in {field_path}: {}",
                        errs.join(";")
                    ));
                }
                Ok(annotations.get(sub).cloned().unwrap_or_default())
            }
            "metadata.labels" => {
                let errs = api::validation::is_qualified_name(sub);
                if !errs.is_empty() {
                    return Err(format!(
                        "invalid key subscript in {field_path}: {}",
                        errs.join(";")
                    ));
                }
                Ok(labels.get(sub).cloned().unwrap_or_default())
            }
            _ => Err(format!(
                "fieldPath {} does not support subscript",
                api::gofmt::go_quote(field_path)
            )),
        };
    }
    match field_path {
        "metadata.annotations" => Ok(format_map(annotations)),
        "metadata.labels" => Ok(format_map(labels)),
        "metadata.name" => Ok(meta.name.clone().unwrap_or_default()),
        "metadata.namespace" => Ok(meta.namespace.clone().unwrap_or_default()),
        "metadata.uid" => Ok(meta.uid.clone().unwrap_or_default()),
        _ => Err(format!("unsupported fieldPath: {field_path}")),
    }
}

fn find_container<'a>(pod: &'a Pod, name: &str) -> Option<&'a Container> {
    let spec = pod.spec.as_ref()?;
    spec.containers.iter().find(|c| c.name == name).or_else(|| {
        spec.init_containers
            .iter()
            .flatten()
            .find(|c| c.name == name)
    })
}

fn quantity(q: Option<&k8s_openapi::apimachinery::pkg::api::resource::Quantity>) -> Quantity {
    q.and_then(|q| Quantity::parse(&q.0).ok())
        .unwrap_or_else(Quantity::zero)
}

fn ceil_div(a: i64, b: i64) -> String {
    (((a as f64) / (b as f64)).ceil() as i64).to_string()
}

/// `resourceFieldRef` of a downwardAPI volume: the container's limit or request divided by
/// `divisor` (default 1), rounded up; a limit the container does not set is the node's
/// allocatable amount (`MergeContainerResourceLimits`).
pub fn resource_field_value(
    sel: &ResourceFieldSelector,
    pod: &Pod,
    allocatable: &Allocatable,
) -> Result<String, String> {
    let name = sel.container_name.as_deref().unwrap_or_default();
    let container = find_container(pod, name).ok_or(format!("container {name} not found"))?;
    let resources = container.resources.as_ref();
    let mut limits: BTreeMap<String, Quantity> = resources
        .and_then(|r| r.limits.as_ref())
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.clone(), quantity(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    for r in ["cpu", "memory", "ephemeral-storage"] {
        if limits.get(r).is_none_or(Quantity::is_zero)
            && let Some(cap) = allocatable.get(r)
        {
            limits.insert(r.into(), *cap);
        }
    }
    let requests: BTreeMap<String, Quantity> = resources
        .and_then(|r| r.requests.as_ref())
        .map(|l| {
            l.iter()
                .map(|(k, v)| (k.clone(), quantity(Some(v))))
                .collect()
        })
        .unwrap_or_default();
    let divisor = match sel.divisor.as_ref().map(|d| quantity(Some(d))) {
        Some(d) if !d.is_zero() => d,
        _ => Quantity::from_int(1),
    };
    let get =
        |m: &BTreeMap<String, Quantity>, k: &str| m.get(k).copied().unwrap_or_else(Quantity::zero);
    let cpu = |q: Quantity| ceil_div(q.milli_value(), divisor.milli_value());
    let bytes = |q: Quantity| ceil_div(q.value(), divisor.value());
    match sel.resource.as_str() {
        "limits.cpu" => return Ok(cpu(get(&limits, "cpu"))),
        "limits.memory" => return Ok(bytes(get(&limits, "memory"))),
        "limits.ephemeral-storage" => return Ok(bytes(get(&limits, "ephemeral-storage"))),
        "requests.cpu" => return Ok(cpu(get(&requests, "cpu"))),
        "requests.memory" => return Ok(bytes(get(&requests, "memory"))),
        "requests.ephemeral-storage" => return Ok(bytes(get(&requests, "ephemeral-storage"))),
        _ => {}
    }
    if let Some(r) = sel.resource.strip_prefix("requests.")
        && r.starts_with("hugepages-")
    {
        return Ok(bytes(get(&requests, r)));
    }
    if let Some(r) = sel.resource.strip_prefix("limits.")
        && r.starts_with("hugepages-")
    {
        return Ok(bytes(get(&limits, r)));
    }
    Err(format!("unsupported container resource : {}", sel.resource))
}

/// A downwardAPI volume's files (`downwardapi.CollectData`); the errors of all items are
/// reported together, as upstream's aggregate.
pub fn downward_api_payload(
    items: &[DownwardAPIVolumeFile],
    pod: &Pod,
    allocatable: &Allocatable,
    default_mode: i32,
) -> Result<Payload, String> {
    let mut payload = Payload::new();
    let mut errs = Vec::new();
    for item in items {
        let mut data = Vec::new();
        if let Some(f) = &item.field_ref {
            match field_path_value(pod, &f.field_path) {
                Ok(v) => data = v.into_bytes(),
                Err(e) => errs.push(e),
            }
        } else if let Some(r) = &item.resource_field_ref {
            match resource_field_value(r, pod, allocatable) {
                Ok(v) => data = v.into_bytes(),
                Err(e) => errs.push(e),
            }
        }
        payload.insert(
            clean_path(&item.path),
            FileProjection {
                data,
                mode: mode(item.mode, default_mode),
            },
        );
    }
    aggregate(errs).map(|()| payload)
}

/// Upstream's `utilerrors.NewAggregate(...).Error()`: one error as itself, several as
/// `[a, b]`.
pub fn aggregate(errs: Vec<String>) -> Result<(), String> {
    match errs.len() {
        0 => Ok(()),
        1 => Err(errs.into_iter().next().unwrap_or_default()),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cm() -> ConfigMap {
        serde_json::from_value(json!({
            "metadata": {"name": "c", "namespace": "ns"},
            "data": {"a": "A", "b": "B"},
            "binaryData": {"bin": "AAEC"}
        }))
        .unwrap()
    }

    fn items(v: serde_json::Value) -> Vec<KeyToPath> {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn config_map_all_keys_and_binary() {
        let p = config_map_payload(None, &cm(), 0o644, false).unwrap();
        assert_eq!(p.len(), 3);
        assert_eq!(p["a"].data, b"A");
        assert_eq!(p["bin"].data, vec![0, 1, 2]);
        assert!(p.values().all(|f| f.mode == 0o644));
    }

    #[test]
    fn config_map_items_modes_and_missing_keys() {
        let it = items(
            json!([{"key": "a", "path": "x/a.txt", "mode": 0o400}, {"key": "b", "path": "b"}]),
        );
        let p = config_map_payload(Some(&it), &cm(), 0o600, false).unwrap();
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["b", "x/a.txt"]);
        assert_eq!(p["x/a.txt"].mode, 0o400);
        assert_eq!(p["b"].mode, 0o600);

        let it = items(json!([{"key": "nope", "path": "n"}, {"key": "a", "path": "a"}]));
        assert_eq!(
            config_map_payload(Some(&it), &cm(), 0o644, false).unwrap_err(),
            "configmap references non-existent config key: nope"
        );
        let p = config_map_payload(Some(&it), &cm(), 0o644, true).unwrap();
        assert_eq!(p.keys().collect::<Vec<_>>(), vec!["a"]);
    }

    #[test]
    fn secret_data_is_raw_bytes() {
        let s: Secret = serde_json::from_value(json!({
            "metadata": {"name": "s"},
            "data": {"token": "c2VjcmV0", "other": "eA=="}
        }))
        .unwrap();
        let p = secret_payload(None, &s, 0o644, false).unwrap();
        assert_eq!(p["token"].data, b"secret");
        let it = items(json!([{"key": "missing", "path": "m"}]));
        assert_eq!(
            secret_payload(Some(&it), &s, 0o644, false).unwrap_err(),
            "references non-existent secret key: missing"
        );
        assert!(
            secret_payload(Some(&it), &s, 0o644, true)
                .unwrap()
                .is_empty()
        );
    }

    fn pod() -> Pod {
        serde_json::from_value(json!({
            "metadata": {
                "name": "p", "namespace": "ns", "uid": "u-1",
                "labels": {"b": "2", "a": "1"},
                "annotations": {"note": "say \"hi\"\n", "x.io/y": "z"}
            },
            "spec": {
                "containers": [{
                    "name": "c",
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "100Mi"},
                        "limits": {"memory": "1Gi"}
                    }
                }],
                "initContainers": [{"name": "i"}]
            }
        }))
        .unwrap()
    }

    #[test]
    fn field_paths() {
        let p = pod();
        assert_eq!(field_path_value(&p, "metadata.name").unwrap(), "p");
        assert_eq!(field_path_value(&p, "metadata.namespace").unwrap(), "ns");
        assert_eq!(field_path_value(&p, "metadata.uid").unwrap(), "u-1");
        assert_eq!(
            field_path_value(&p, "metadata.labels").unwrap(),
            "a=\"1\"\nb=\"2\""
        );
        assert_eq!(
            field_path_value(&p, "metadata.annotations").unwrap(),
            "note=\"say \\\"hi\\\"\\n\"\nx.io/y=\"z\""
        );
        assert_eq!(field_path_value(&p, "metadata.labels['a']").unwrap(), "1");
        assert_eq!(
            field_path_value(&p, "metadata.annotations['x.io/y']").unwrap(),
            "z"
        );
        assert_eq!(field_path_value(&p, "metadata.labels['zz']").unwrap(), "");
        assert_eq!(
            field_path_value(&p, "spec.nodeName").unwrap_err(),
            "unsupported fieldPath: spec.nodeName"
        );
        assert_eq!(
            field_path_value(&p, "metadata.name['x']").unwrap_err(),
            "fieldPath \"metadata.name['x']\" does not support subscript"
        );
        assert!(
            field_path_value(&p, "metadata.labels['a b']")
                .unwrap_err()
                .starts_with("invalid key subscript in metadata.labels['a b']: ")
        );
    }

    fn sel(resource: &str, divisor: Option<&str>) -> ResourceFieldSelector {
        ResourceFieldSelector {
            container_name: Some("c".into()),
            resource: resource.into(),
            divisor: divisor
                .map(|d| k8s_openapi::apimachinery::pkg::api::resource::Quantity(d.into())),
        }
    }

    #[test]
    fn resource_fields_round_up_and_default_to_allocatable() {
        let p = pod();
        let alloc: Allocatable = [
            ("cpu".to_string(), Quantity::parse("4").unwrap()),
            ("memory".to_string(), Quantity::parse("8Gi").unwrap()),
        ]
        .into_iter()
        .collect();
        let v = |r: &str, d: Option<&str>| resource_field_value(&sel(r, d), &p, &alloc).unwrap();
        assert_eq!(v("requests.cpu", None), "1");
        assert_eq!(v("requests.cpu", Some("1m")), "250");
        assert_eq!(v("requests.cpu", Some("100m")), "3");
        assert_eq!(v("limits.cpu", None), "4");
        assert_eq!(v("limits.memory", Some("1Mi")), "1024");
        assert_eq!(v("requests.memory", Some("1Gi")), "1");
        assert_eq!(v("requests.memory", None), "104857600");
        assert_eq!(v("limits.ephemeral-storage", None), "0");
        assert_eq!(
            resource_field_value(&sel("limits.gpu", None), &p, &alloc).unwrap_err(),
            "unsupported container resource : limits.gpu"
        );
        let mut s = sel("limits.cpu", None);
        s.container_name = Some("nope".into());
        assert_eq!(
            resource_field_value(&s, &p, &alloc).unwrap_err(),
            "container nope not found"
        );
        s.container_name = Some("i".into());
        assert_eq!(resource_field_value(&s, &p, &alloc).unwrap(), "4");
    }

    #[test]
    fn downward_api_items_and_aggregate_errors() {
        let items: Vec<DownwardAPIVolumeFile> = serde_json::from_value(json!([
            {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
            {"path": "dir/labels", "fieldRef": {"fieldPath": "metadata.labels"}, "mode": 0o400},
            {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "requests.cpu", "divisor": "1m"}}
        ]))
        .unwrap();
        let p = downward_api_payload(&items, &pod(), &Allocatable::new(), 0o644).unwrap();
        assert_eq!(p["name"].data, b"p");
        assert_eq!(p["dir/labels"].mode, 0o400);
        assert_eq!(p["cpu"].data, b"250");

        let bad: Vec<DownwardAPIVolumeFile> = serde_json::from_value(json!([
            {"path": "a", "fieldRef": {"fieldPath": "spec.a"}},
            {"path": "b", "fieldRef": {"fieldPath": "spec.b"}}
        ]))
        .unwrap();
        assert_eq!(
            downward_api_payload(&bad, &pod(), &Allocatable::new(), 0o644).unwrap_err(),
            "[unsupported fieldPath: spec.a, unsupported fieldPath: spec.b]"
        );
    }
}
