//! Pod spec defaults (`SetDefaults_PodSpec`, `SetDefaults_Pod`, `SetDefaults_Container`,
//! volume sources, probes), as the generated `SetObjectDefaults_*` apply them.

use serde_json::{Map, Value, json};

use super::{
    canonical_quantity, default_if_absent, default_str, default_zero, each_obj_mut, ensure_obj,
    obj_mut, resource_list,
};

/// The tag `parsers.ParseImageName` finds (`latest` when neither tag nor digest is given,
/// empty when the reference does not parse).
fn image_tag(image: &str) -> String {
    if image.is_empty() {
        return String::new();
    }
    let (name, digest) = match image.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (image, None),
    };
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let (repo, tag) = match name[last_slash..].rfind(':') {
        Some(i) => (&name[..last_slash + i], Some(&name[last_slash + i + 1..])),
        None => (name, None),
    };
    // The repository path (after an optional registry host) must be lowercase.
    let path = match repo.split_once('/') {
        Some((host, rest)) if host.contains(['.', ':']) || host == "localhost" => rest,
        _ => repo,
    };
    let path_ok = !path.is_empty()
        && path.split('/').all(|c| {
            !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        });
    let tag_ok = tag.is_none_or(|t| {
        !t.is_empty()
            && t.len() <= 128
            && t.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
    });
    if !path_ok || !tag_ok || digest.is_some_and(|d| !d.contains(':')) {
        return String::new();
    }
    match (tag, digest) {
        (Some(t), _) => t.to_string(),
        (None, None) => "latest".to_string(),
        (None, Some(_)) => String::new(),
    }
}

fn pull_policy_for(image: &str) -> &'static str {
    if image_tag(image) == "latest" {
        "Always"
    } else {
        "IfNotPresent"
    }
}

fn field_ref(v: &mut Value) {
    if let Some(m) = obj_mut(v) {
        default_str(m, "apiVersion", json!("v1"));
    }
}

fn http_get(action: &mut Value) {
    if let Some(m) = obj_mut(action) {
        default_str(m, "path", json!("/"));
        default_str(m, "scheme", json!("HTTP"));
    }
}

fn probe(p: &mut Value) {
    let Some(m) = obj_mut(p) else { return };
    default_zero(m, "timeoutSeconds", json!(1));
    default_zero(m, "periodSeconds", json!(10));
    default_zero(m, "successThreshold", json!(1));
    default_zero(m, "failureThreshold", json!(3));
    if let Some(h) = m.get_mut("httpGet") {
        http_get(h);
    }
    if let Some(g) = m.get_mut("grpc").and_then(obj_mut) {
        default_if_absent(g, "service", json!(""));
    }
}

/// `SetDefaults_Container` and the per-container parts of `SetObjectDefaults_Pod`.
fn container(c: &mut Value) {
    let Some(m) = obj_mut(c) else { return };
    let image = m
        .get("image")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    default_str(m, "imagePullPolicy", json!(pull_policy_for(&image)));
    default_str(m, "terminationMessagePath", json!("/dev/termination-log"));
    default_str(m, "terminationMessagePolicy", json!("File"));
    each_obj_mut(m, "ports", |p| {
        default_str(p, "protocol", json!("TCP"));
    });
    each_obj_mut(m, "env", |e| {
        if let Some(fr) = e.get_mut("valueFrom").and_then(|vf| vf.get_mut("fieldRef")) {
            field_ref(fr);
        }
        if let Some(rf) = e
            .get_mut("valueFrom")
            .and_then(|vf| vf.get_mut("resourceFieldRef"))
            .and_then(obj_mut)
            && let Some(d) = rf.get_mut("divisor")
        {
            canonical_quantity(d, false);
        }
    });
    // A non-pointer struct upstream: always serialized, as `resources: {}` when empty.
    default_if_absent(m, "resources", json!({}));
    if let Some(r) = m.get_mut("resources").and_then(obj_mut) {
        resource_list(r, "limits");
        resource_list(r, "requests");
    }
    for key in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = m.get_mut(key) {
            probe(p);
        }
    }
    if let Some(l) = m.get_mut("lifecycle").and_then(obj_mut) {
        for key in ["postStart", "preStop"] {
            if let Some(h) = l.get_mut(key).and_then(|h| h.get_mut("httpGet")) {
                http_get(h);
            }
        }
    }
}

const VOLUME_SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

pub(super) fn host_path(m: &mut Map<String, Value>) {
    if let Some(hp) = m.get_mut("hostPath").and_then(obj_mut) {
        default_if_absent(hp, "type", json!(""));
    }
}

pub(super) fn rbd_iscsi_azure_scaleio(m: &mut Map<String, Value>) {
    if let Some(r) = m.get_mut("rbd").and_then(obj_mut) {
        default_str(r, "pool", json!("rbd"));
        default_str(r, "user", json!("admin"));
        default_str(r, "keyring", json!("/etc/ceph/keyring"));
    }
    if let Some(i) = m.get_mut("iscsi").and_then(obj_mut) {
        default_str(i, "iscsiInterface", json!("default"));
    }
    if let Some(a) = m.get_mut("azureDisk").and_then(obj_mut) {
        default_if_absent(a, "cachingMode", json!("ReadWrite"));
        default_if_absent(a, "kind", json!("Shared"));
        default_if_absent(a, "fsType", json!("ext4"));
        default_if_absent(a, "readOnly", json!(false));
    }
    if let Some(s) = m.get_mut("scaleIO").and_then(obj_mut) {
        default_str(s, "storageMode", json!("ThinProvisioned"));
        default_str(s, "fsType", json!("xfs"));
    }
}

/// `SetDefaults_PersistentVolumeClaimSpec` and its resource lists.
pub(super) fn pvc_spec(spec: &mut Value) {
    let Some(m) = obj_mut(spec) else { return };
    default_if_absent(m, "volumeMode", json!("Filesystem"));
    if let Some(r) = m.get_mut("resources").and_then(obj_mut) {
        resource_list(r, "limits");
        resource_list(r, "requests");
    }
}

fn volume(v: &mut Value) {
    let Some(m) = obj_mut(v) else { return };
    if !VOLUME_SOURCES
        .iter()
        .any(|k| m.get(*k).is_some_and(|s| !s.is_null()))
    {
        m.insert("emptyDir".into(), json!({}));
    }
    if let Some(img) = m.get_mut("image").and_then(obj_mut) {
        let reference = img
            .get("reference")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        default_str(img, "pullPolicy", json!(pull_policy_for(&reference)));
    }
    host_path(m);
    rbd_iscsi_azure_scaleio(m);
    if let Some(e) = m.get_mut("emptyDir").and_then(obj_mut)
        && let Some(sl) = e.get_mut("sizeLimit")
    {
        canonical_quantity(sl, false);
    }
    for key in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(s) = m.get_mut(key).and_then(obj_mut) {
            default_if_absent(s, "defaultMode", json!(420));
        }
    }
    let downward_items = |d: &mut Map<String, Value>| {
        each_obj_mut(d, "items", |item| {
            if let Some(fr) = item.get_mut("fieldRef") {
                field_ref(fr);
            }
            if let Some(d) = item
                .get_mut("resourceFieldRef")
                .and_then(obj_mut)
                .and_then(|r| r.get_mut("divisor"))
            {
                canonical_quantity(d, false);
            }
        });
    };
    if let Some(d) = m.get_mut("downwardAPI").and_then(obj_mut) {
        downward_items(d);
    }
    if let Some(p) = m.get_mut("projected").and_then(obj_mut) {
        each_obj_mut(p, "sources", |src| {
            if let Some(d) = src.get_mut("downwardAPI").and_then(obj_mut) {
                downward_items(d);
            }
            if let Some(t) = src.get_mut("serviceAccountToken").and_then(obj_mut) {
                default_if_absent(t, "expirationSeconds", json!(3600));
            }
        });
    }
    if let Some(spec) = m
        .get_mut("ephemeral")
        .and_then(|e| e.get_mut("volumeClaimTemplate"))
        .and_then(|t| t.get_mut("spec"))
    {
        pvc_spec(spec);
    }
}

/// `SetDefaults_PodSpec` plus volumes and containers (what every embedded pod spec gets).
pub(crate) fn pod_spec(spec: &mut Value) {
    let Some(m) = obj_mut(spec) else { return };
    default_str(m, "dnsPolicy", json!("ClusterFirst"));
    default_str(m, "restartPolicy", json!("Always"));
    default_if_absent(m, "securityContext", json!({}));
    default_if_absent(m, "terminationGracePeriodSeconds", json!(30));
    default_str(m, "schedulerName", json!("default-scheduler"));
    if let Some(vols) = m.get_mut("volumes").and_then(Value::as_array_mut) {
        vols.iter_mut().for_each(volume);
    }
    for key in ["initContainers", "containers", "ephemeralContainers"] {
        if let Some(list) = m.get_mut(key).and_then(Value::as_array_mut) {
            list.iter_mut().for_each(container);
        }
    }
    resource_list(m, "overhead");
}

/// `SetDefaults_Pod` (Pods only, not templates) followed by the pod spec defaults.
pub(crate) fn pod(obj: &mut Value) {
    if let Some(spec) = obj_mut(obj)
        .and_then(|m| m.get_mut("spec"))
        .and_then(obj_mut)
    {
        for key in ["containers", "initContainers"] {
            each_obj_mut(spec, key, |c| {
                let Some(res) = c.get_mut("resources").and_then(obj_mut) else {
                    return;
                };
                let Some(limits) = res.get("limits").and_then(Value::as_object).cloned() else {
                    return;
                };
                if let Some(requests) = ensure_obj(res, "requests") {
                    for (k, v) in limits {
                        requests.entry(k).or_insert(v);
                    }
                }
            });
        }
        default_if_absent(spec, "enableServiceLinks", json!(true));
        if spec.get("hostNetwork").and_then(Value::as_bool) == Some(true) {
            for key in ["containers", "initContainers"] {
                each_obj_mut(spec, key, |c| {
                    each_obj_mut(c, "ports", |p| {
                        let hp = p.get("hostPort").and_then(Value::as_i64).unwrap_or(0);
                        if hp == 0
                            && let Some(cp) = p.get("containerPort").cloned()
                        {
                            p.insert("hostPort".into(), cp);
                        }
                    });
                });
            }
        }
    }
    if let Some(spec) = obj_mut(obj).and_then(|m| m.get_mut("spec")) {
        pod_spec(spec);
    }
    // Status resource lists of containers.
    if let Some(status) = obj_mut(obj)
        .and_then(|m| m.get_mut("status"))
        .and_then(obj_mut)
    {
        for key in [
            "initContainerStatuses",
            "containerStatuses",
            "ephemeralContainerStatuses",
        ] {
            each_obj_mut(status, key, |cs| {
                resource_list(cs, "allocatedResources");
                if let Some(r) = cs.get_mut("resources").and_then(obj_mut) {
                    resource_list(r, "limits");
                    resource_list(r, "requests");
                }
            });
        }
    }
}

/// A pod template (`template.spec`).
pub(crate) fn template(t: &mut Value) {
    if let Some(spec) = obj_mut(t).and_then(|m| m.get_mut("spec")) {
        pod_spec(spec);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn image_tags() {
        assert_eq!(image_tag("nginx"), "latest");
        assert_eq!(image_tag("nginx:latest"), "latest");
        assert_eq!(image_tag("nginx:1.25"), "1.25");
        assert_eq!(image_tag("registry.example.com:5000/app"), "latest");
        assert_eq!(image_tag("registry.example.com:5000/app:v1"), "v1");
        assert_eq!(image_tag("nginx@sha256:abc"), "");
        assert_eq!(image_tag("nginx:1.2@sha256:abc"), "1.2");
        assert_eq!(image_tag("NGINX"), "");
        assert_eq!(image_tag(""), "");
    }
}
