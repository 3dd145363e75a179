//! Upstream's validation of the built-in kinds (`pkg/apis/<group>/validation`, and the
//! `Validate`/`ValidateUpdate` of the registry strategies in `pkg/registry`).
//!
//! [`create`] and [`update`] return the spec-level errors of `ValidateX` /
//! `ValidateXUpdate` with upstream's field paths and messages. Object metadata (name
//! format, labels, annotations, owner references, metadata immutability) is validated by
//! the generic metadata validators; [`name_rule`] tells them which name format a kind
//! uses. Errors about the object as a whole that upstream reports while decoding (a
//! malformed quantity) come from [`decode_errors`].
//!
//! Feature gates are taken at their Kubernetes 1.33 defaults. Where upstream prints a Go
//! struct as the bad value (`%#v`), the JSON of the field is given instead.

mod apiext;
mod apps;
mod batch;
mod core;
pub(crate) mod misc;
mod pod;
pub mod quantity;
mod resources;
mod storage;
mod util;
mod webhooks;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::status::FieldError;
use util::*;

/// Which format a kind's `metadata.name` must have (upstream's `ValidateNameFunc`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NameRule {
    /// `NameIsDNSSubdomain`: lowercase RFC 1123 subdomain, at most 253 characters.
    DnsSubdomain,
    /// `NameIsDNSLabel`: lowercase RFC 1123 label, at most 63 characters.
    DnsLabel,
    /// `NameIsDNS1035Label`: RFC 1035 label (starts with a letter), at most 63 characters.
    Dns1035Label,
    /// `path.IsValidPathSegmentName`: anything but `.`, `..`, `/` and `%` (RBAC kinds).
    PathSegment,
    /// No name validation (core/v1 Events are validated only by `legacyValidateEvent`).
    None,
}

/// The name rule of a built-in kind; `DnsSubdomain` for unknown kinds (as custom
/// resources use).
pub fn name_rule(group: &str, kind: &str) -> NameRule {
    match (group, kind) {
        ("", "Namespace") => NameRule::DnsLabel,
        ("", "Service") => NameRule::Dns1035Label,
        ("", "Event") => NameRule::None,
        ("apps", "StatefulSet") => NameRule::DnsLabel,
        ("rbac.authorization.k8s.io", _) => NameRule::PathSegment,
        _ => NameRule::DnsSubdomain,
    }
}

/// The messages of a name rule for `name` (`prefix`: the name is a `generateName`
/// prefix, which may end with a dash).
pub fn name_errors(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    match rule {
        NameRule::DnsSubdomain => name_is_dns_subdomain(name, prefix),
        NameRule::DnsLabel => name_is_dns_label(name, prefix),
        NameRule::Dns1035Label => name_is_dns1035_label(name, prefix),
        NameRule::PathSegment => {
            if prefix {
                is_valid_path_segment_name(name)
                    .into_iter()
                    .filter(|m| m != "may not be '.'" && m != "may not be '..'")
                    .collect()
            } else {
                is_valid_path_segment_name(name)
            }
        }
        NameRule::None => Vec::new(),
    }
}

/// Create validation of `group/version kind`.
pub fn create(group: &str, version: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    match (group, kind) {
        ("", "Pod") => pod::pod_create(obj),
        ("", "PodTemplate") => pod::pod_template_spec(get(obj, "template"), &P::new("template")),
        ("", "ReplicationController") => core::replication_controller(obj),
        ("", "Service") => core::service(obj),
        ("", "ConfigMap") => core::config_map(obj),
        ("", "Secret") => core::secret(obj),
        ("", "Namespace") => core::namespace(obj),
        ("", "Node") => core::node(obj),
        ("", "Endpoints") => core::endpoints(obj),
        ("", "LimitRange") => core::limit_range(obj),
        ("", "ResourceQuota") => core::resource_quota(obj, true),
        ("", "PersistentVolumeClaim") => core::pvc(obj),
        ("", "PersistentVolume") => core::pv(obj),
        ("", "Binding") => core::binding(obj),
        ("", "Event") => misc::core_event_create(obj),
        ("", "ServiceAccount") => Vec::new(),
        ("apps", "Deployment") => apps::deployment(obj),
        ("apps", "ReplicaSet") => apps::replica_set(obj),
        ("apps", "DaemonSet") => apps::daemon_set(obj),
        ("apps", "StatefulSet") => apps::stateful_set(obj),
        ("apps", "ControllerRevision") => apps::controller_revision(obj),
        ("autoscaling", "Scale") => misc::scale(obj),
        ("batch", "Job") => batch::job(obj),
        ("batch", "CronJob") => batch::cron_job_create(obj),
        ("coordination.k8s.io", "Lease") => misc::lease(obj),
        ("discovery.k8s.io", "EndpointSlice") => misc::endpoint_slice(obj, false),
        ("events.k8s.io", "Event") => misc::events_event_create(obj),
        ("policy", "PodDisruptionBudget") => misc::pdb(obj),
        ("policy", "Eviction") => Vec::new(),
        ("rbac.authorization.k8s.io", "Role") => misc::role(obj, true),
        ("rbac.authorization.k8s.io", "ClusterRole") => misc::role(obj, false),
        ("rbac.authorization.k8s.io", "RoleBinding") => misc::role_binding(obj, true),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => misc::role_binding(obj, false),
        ("scheduling.k8s.io", "PriorityClass") => misc::priority_class(obj),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => apiext::crd_create(obj),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            webhooks::webhook_configuration(obj, true)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            webhooks::webhook_configuration(obj, false)
        }
        _ => {
            let _ = version;
            Vec::new()
        }
    }
}

/// Update validation of `group/version kind`: the create rules on the new object plus
/// upstream's update rules (immutable fields and allowed transitions).
pub fn update(group: &str, version: &str, kind: &str, new: &Value, old: &Value) -> Vec<FieldError> {
    match (group, kind) {
        ("", "Pod") => pod::pod_update(new, old),
        ("", "PodTemplate") => pod::pod_template_spec(get(new, "template"), &P::new("template")),
        ("", "ReplicationController") => core::replication_controller(new),
        ("", "Service") => core::service_update(new, old),
        ("", "ConfigMap") => core::config_map_update(new, old),
        ("", "Secret") => core::secret_update(new, old),
        ("", "Namespace") => Vec::new(),
        ("", "Node") => core::node_update(new, old),
        ("", "Endpoints") => core::endpoints(new),
        ("", "LimitRange") => core::limit_range(new),
        ("", "ResourceQuota") => core::resource_quota_update(new, old),
        ("", "PersistentVolumeClaim") => {
            let mut e = core::pvc(new);
            e.extend(storage::pvc_update(new, old));
            e
        }
        ("", "PersistentVolume") => {
            let mut e = core::pv(new);
            e.extend(storage::pv_update(new, old));
            e
        }
        ("", "Binding") => core::binding(new),
        ("", "Event") => misc::core_event_create(new),
        ("", "ServiceAccount") => Vec::new(),
        ("apps", "Deployment") => apps::deployment_update(new, old),
        ("apps", "ReplicaSet") => apps::replica_set_update(new, old),
        ("apps", "DaemonSet") => apps::daemon_set_update(new, old),
        ("apps", "StatefulSet") => apps::stateful_set_update(new, old),
        ("apps", "ControllerRevision") => apps::controller_revision_update(new, old),
        ("autoscaling", "Scale") => misc::scale(new),
        ("batch", "Job") => batch::job_update(new, old),
        ("batch", "CronJob") => batch::cron_job_update(new, old),
        ("coordination.k8s.io", "Lease") => misc::lease(new),
        ("discovery.k8s.io", "EndpointSlice") => misc::endpoint_slice_update(new, old),
        ("events.k8s.io", "Event") => misc::events_event_update(new, old),
        ("policy", "PodDisruptionBudget") => misc::pdb(new),
        ("policy", "Eviction") => Vec::new(),
        ("rbac.authorization.k8s.io", "Role") => misc::role(new, true),
        ("rbac.authorization.k8s.io", "ClusterRole") => misc::role(new, false),
        ("rbac.authorization.k8s.io", "RoleBinding") => misc::role_binding_update(new, old, true),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => {
            misc::role_binding_update(new, old, false)
        }
        ("scheduling.k8s.io", "PriorityClass") => misc::priority_class_update(new, old),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => apiext::crd_update(new, old),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            webhooks::webhook_configuration_update(new, old, true)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            webhooks::webhook_configuration_update(new, old, false)
        }
        _ => {
            let _ = version;
            Vec::new()
        }
    }
}

/// Errors upstream reports while decoding the object, before any validation (a 400
/// `BadRequest`, not a 422): malformed quantities, with upstream's message
/// (`quantities must match the regular expression ...`).
pub fn decode_errors(group: &str, _version: &str, kind: &str, obj: &Value) -> Vec<String> {
    if group == "apiextensions.k8s.io" || group.ends_with(".k8s.io") && group != "discovery.k8s.io"
    {
        return Vec::new();
    }
    if matches!(kind, "ConfigMap" | "Secret" | "Event") {
        return Vec::new();
    }
    let mut out = Vec::new();
    scan_quantities(obj, &mut out, 0);
    out.dedup();
    out
}

const LIST_KEYS: &[&str] = &[
    "limits",
    "requests",
    "overhead",
    "capacity",
    "allocatable",
    "hard",
    "used",
    "min",
    "max",
    "default",
    "defaultRequest",
    "maxLimitRequestRatio",
    "allocatedResources",
];

fn scan_quantities(v: &Value, out: &mut Vec<String>, depth: usize) {
    if depth > 64 {
        return;
    }
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                if LIST_KEYS.contains(&k.as_str()) {
                    resources::list_quantity_errors(v, k, out);
                } else if (k == "sizeLimit" || k == "divisor")
                    && let Some(Err(e)) = quantity::from_json(child)
                {
                    out.push(e.to_string());
                }
                if child.is_object() || child.is_array() {
                    scan_quantities(child, out, depth + 1);
                }
            }
        }
        Value::Array(a) => {
            for child in a {
                scan_quantities(child, out, depth + 1);
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Metadata helpers shared by the kind validators.

/// Validation of an update through a Pod's `ephemeralcontainers` subresource
/// (`ValidatePodEphemeralContainersUpdate`); pair it with
/// [`crate::kinds::defaults::prepare_for_ephemeral_containers_update`].
pub fn pod_ephemeral_containers_update(new: &Value, old: &Value) -> Vec<FieldError> {
    pod::pod_ephemeral_containers_update(new, old)
}

/// Generates a Job's selector and template labels from its UID the way
/// upstream's job strategy does on create (unless `spec.manualSelector` is
/// true). Call after the UID was assigned.
pub fn generate_job_selector(obj: &mut Value) {
    batch::generate_selector(obj);
}

/// A string of `metadata` (`""` when absent).
pub(crate) fn meta_s<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// A `map[string]string` of `metadata`, owned.
pub(crate) fn meta_str_map(obj: &Value, field: &str) -> BTreeMap<String, String> {
    obj.get("metadata")
        .map(|m| {
            str_map(m, field)
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        })
        .unwrap_or_default()
}

const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// `ValidateAnnotations` (used for templates, whose metadata is not object metadata).
pub(crate) fn meta_annotations(ann: Option<&Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let Some(Value::Object(m)) = ann else {
        return errs;
    };
    let mut size = 0;
    for (k, v) in m {
        for msg in is_qualified_name(&k.to_lowercase()) {
            errs.push(invalid(p, k.as_str(), &msg));
        }
        size += k.len() + v.as_str().map_or(0, str::len);
    }
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        errs.push(too_long(p, TOTAL_ANNOTATION_SIZE_LIMIT));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn name_rules() {
        assert_eq!(name_rule("", "Namespace"), NameRule::DnsLabel);
        assert_eq!(name_rule("", "Service"), NameRule::Dns1035Label);
        assert_eq!(name_rule("apps", "Deployment"), NameRule::DnsSubdomain);
        assert_eq!(
            name_rule("rbac.authorization.k8s.io", "Role"),
            NameRule::PathSegment
        );
        assert!(
            name_errors(NameRule::Dns1035Label, "1abc", false)[0].starts_with("a DNS-1035 label")
        );
        assert!(name_errors(NameRule::DnsLabel, "web-", true).is_empty());
        assert_eq!(
            name_errors(NameRule::PathSegment, "a/b", false),
            vec!["may not contain '/'"]
        );
    }

    #[test]
    fn decode_quantity_errors() {
        let pod = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1x"}}}]}});
        assert_eq!(
            decode_errors("", "v1", "Pod", &pod),
            vec![quantity::ERR_FORMAT_WRONG.to_string()]
        );
        let pod = json!({"spec": {"containers": [{"resources": {"requests": {"memory": "1ki"}}}]}});
        assert_eq!(
            decode_errors("", "v1", "Pod", &pod),
            vec![quantity::ERR_SUFFIX.to_string()]
        );
        let ok = json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "100m", "memory": 1}}}]}});
        assert!(decode_errors("", "v1", "Pod", &ok).is_empty());
    }
}
