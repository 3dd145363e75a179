//! Object metadata checks and managed-fields tracking shared by every write.

use api::FieldError;
use api::validation::{
    name_is_dns_label, name_is_dns_subdomain, validate_namespace_name, validate_object_meta,
    validate_object_meta_generic, validate_object_meta_update, validate_object_meta_update_generic,
    validate_path_segment_name,
};
use serde_json::Value;

use super::Resource;

/// The name rule of a resource, as upstream's registry strategies choose it.
fn name_fn(r: &Resource) -> fn(&str, bool) -> Vec<String> {
    match (r.info.group.as_str(), r.info.kind.as_str()) {
        ("", "Namespace") => validate_namespace_name,
        ("", "Service") => api::validation::name_is_dns1035_label,
        ("rbac.authorization.k8s.io", _) => validate_path_segment_name,
        ("", "Node") | ("", "PersistentVolume") => name_is_dns_subdomain,
        ("", "ServiceAccount") | ("", "Secret") | ("", "ConfigMap") => name_is_dns_subdomain,
        ("apps", "StatefulSet") | ("apps", "DaemonSet") => name_is_dns_subdomain,
        ("", "LimitRange") | ("", "ResourceQuota") | ("", "PodTemplate") => name_is_dns_subdomain,
        ("", "Pod") => name_is_dns_subdomain,
        ("", "Event") => name_is_dns_subdomain,
        ("apiextensions.k8s.io", _) => name_is_dns_subdomain,
        (_, _) if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) => {
            name_is_dns_subdomain
        }
        // Custom resources: upstream validates their names as path segments.
        _ => {
            let _ = name_is_dns_label;
            validate_path_segment_name
        }
    }
}

fn meta(obj: &Value) -> &Value {
    obj.get("metadata").unwrap_or(&Value::Null)
}

/// Object metadata validation (name, namespace, labels, annotations, owner references…).
pub fn object_meta(r: &Resource, obj: &Value) -> Vec<FieldError> {
    let f = name_fn(r);
    if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        validate_object_meta(meta(obj), r.info.namespaced, &f, "metadata")
    } else {
        validate_object_meta_generic(meta(obj), r.info.namespaced, &f, "metadata")
    }
}

/// Metadata rules on update (immutable name, namespace, uid…).
pub fn object_meta_update(r: &Resource, new: &Value, old: &Value) -> Vec<FieldError> {
    if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        validate_object_meta_update(meta(new), meta(old), "metadata")
    } else {
        validate_object_meta_update_generic(meta(new), meta(old), "metadata")
    }
}
