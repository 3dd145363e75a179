//! Per-kind behaviour of the built-in types: decoding through the typed definitions
//! (which drops and reports unknown fields, and rejects wrong types), upstream's defaulting,
//! and upstream's validation.

pub mod defaults;
pub mod initializers;
pub mod validate;

use serde_json::Value;

use crate::status::FieldError;

/// A decoded object: normalized through its typed definition.
#[derive(Debug, Clone, PartialEq)]
pub struct Decoded {
    pub object: Value,
    /// Paths of fields the type does not have, as upstream reports them
    /// (`spec.template.spec.containers[0].imagePullPolicyy`).
    pub unknown_fields: Vec<String>,
}

/// Why an object could not be decoded into its type (wrong JSON types and the like).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DecodeError(pub String);

fn format_path(path: &serde_ignored::Path<'_>, out: &mut String) {
    use serde_ignored::Path;
    match path {
        Path::Root => {}
        Path::Seq { parent, index } => {
            format_path(parent, out);
            out.push_str(&format!("[{index}]"));
        }
        Path::Map { parent, key } => {
            format_path(parent, out);
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(key);
        }
        Path::Some { parent }
        | Path::NewtypeStruct { parent }
        | Path::NewtypeVariant { parent } => format_path(parent, out),
    }
}

fn roundtrip<T>(value: &Value) -> Result<Decoded, DecodeError>
where
    T: serde::de::DeserializeOwned + serde::Serialize,
{
    let mut unknown = Vec::new();
    let typed: T = serde_ignored::deserialize(value, |path| {
        let mut s = String::new();
        format_path(&path, &mut s);
        unknown.push(s);
    })
    .map_err(|e| DecodeError(e.to_string()))?;
    let object = serde_json::to_value(&typed).map_err(|e| DecodeError(e.to_string()))?;
    Ok(Decoded {
        object,
        unknown_fields: unknown,
    })
}

macro_rules! kinds {
    ($( ($group:literal, $version:literal, $kind:literal) => $ty:ty ),* $(,)?) => {
        /// Decodes `value` as the built-in `group/version kind`; `None` when that is not a
        /// built-in kind (custom resources are validated against their CRD's schema).
        pub fn decode(group: &str, version: &str, kind: &str, value: &Value) -> Option<Result<Decoded, DecodeError>> {
            match (group, version, kind) {
                $( ($group, $version, $kind) => Some(roundtrip::<$ty>(value)), )*
                _ => None,
            }
        }

        /// Whether `group/version kind` is a built-in kind with a typed definition.
        pub fn is_builtin(group: &str, version: &str, kind: &str) -> bool {
            matches!((group, version, kind), $( ($group, $version, $kind) )|*)
        }
    };
}

use k8s_openapi::api as k;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;

kinds! {
    ("", "v1", "Binding") => k::core::v1::Binding,
    ("authentication.k8s.io", "v1", "SelfSubjectReview") => k::authentication::v1::SelfSubjectReview,
    ("authentication.k8s.io", "v1", "TokenRequest") => k::authentication::v1::TokenRequest,
    ("authentication.k8s.io", "v1", "TokenReview") => k::authentication::v1::TokenReview,
    ("certificates.k8s.io", "v1", "CertificateSigningRequest") => k::certificates::v1::CertificateSigningRequest,
    ("admissionregistration.k8s.io", "v1alpha1", "InitializerConfiguration") => initializers::InitializerConfiguration,
    ("authorization.k8s.io", "v1", "LocalSubjectAccessReview") => k::authorization::v1::LocalSubjectAccessReview,
    ("authorization.k8s.io", "v1", "SelfSubjectAccessReview") => k::authorization::v1::SelfSubjectAccessReview,
    ("authorization.k8s.io", "v1", "SelfSubjectRulesReview") => k::authorization::v1::SelfSubjectRulesReview,
    ("authorization.k8s.io", "v1", "SubjectAccessReview") => k::authorization::v1::SubjectAccessReview,
    ("", "v1", "ConfigMap") => k::core::v1::ConfigMap,
    ("", "v1", "Endpoints") => k::core::v1::Endpoints,
    ("", "v1", "Event") => k::core::v1::Event,
    ("", "v1", "LimitRange") => k::core::v1::LimitRange,
    ("", "v1", "Namespace") => k::core::v1::Namespace,
    ("", "v1", "Node") => k::core::v1::Node,
    ("", "v1", "PersistentVolumeClaim") => k::core::v1::PersistentVolumeClaim,
    ("", "v1", "PersistentVolume") => k::core::v1::PersistentVolume,
    ("", "v1", "Pod") => k::core::v1::Pod,
    ("", "v1", "PodTemplate") => k::core::v1::PodTemplate,
    ("", "v1", "ReplicationController") => k::core::v1::ReplicationController,
    ("", "v1", "ResourceQuota") => k::core::v1::ResourceQuota,
    ("", "v1", "Secret") => k::core::v1::Secret,
    ("", "v1", "ServiceAccount") => k::core::v1::ServiceAccount,
    ("", "v1", "Service") => k::core::v1::Service,
    ("apps", "v1", "ControllerRevision") => k::apps::v1::ControllerRevision,
    ("apps", "v1", "DaemonSet") => k::apps::v1::DaemonSet,
    ("apps", "v1", "Deployment") => k::apps::v1::Deployment,
    ("apps", "v1", "ReplicaSet") => k::apps::v1::ReplicaSet,
    ("apps", "v1", "StatefulSet") => k::apps::v1::StatefulSet,
    ("autoscaling", "v1", "Scale") => k::autoscaling::v1::Scale,
    ("batch", "v1", "CronJob") => k::batch::v1::CronJob,
    ("batch", "v1", "Job") => k::batch::v1::Job,
    ("coordination.k8s.io", "v1", "Lease") => k::coordination::v1::Lease,
    ("discovery.k8s.io", "v1", "EndpointSlice") => k::discovery::v1::EndpointSlice,
    ("events.k8s.io", "v1", "Event") => k::events::v1::Event,
    ("policy", "v1", "Eviction") => k::policy::v1::Eviction,
    ("policy", "v1", "PodDisruptionBudget") => k::policy::v1::PodDisruptionBudget,
    ("rbac.authorization.k8s.io", "v1", "ClusterRoleBinding") => k::rbac::v1::ClusterRoleBinding,
    ("rbac.authorization.k8s.io", "v1", "ClusterRole") => k::rbac::v1::ClusterRole,
    ("rbac.authorization.k8s.io", "v1", "RoleBinding") => k::rbac::v1::RoleBinding,
    ("rbac.authorization.k8s.io", "v1", "Role") => k::rbac::v1::Role,
    ("scheduling.k8s.io", "v1", "PriorityClass") => k::scheduling::v1::PriorityClass,
    ("admissionregistration.k8s.io", "v1", "MutatingWebhookConfiguration") => k::admissionregistration::v1::MutatingWebhookConfiguration,
    ("admissionregistration.k8s.io", "v1", "ValidatingWebhookConfiguration") => k::admissionregistration::v1::ValidatingWebhookConfiguration,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicy") => k::admissionregistration::v1::ValidatingAdmissionPolicy,
    ("admissionregistration.k8s.io", "v1", "ValidatingAdmissionPolicyBinding") => k::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    ("apiextensions.k8s.io", "v1", "CustomResourceDefinition") => apiext::CustomResourceDefinition,
}

/// Applies upstream's defaults for a built-in kind (`SetObjectDefaults_<Kind>`).
pub fn apply_defaults(group: &str, version: &str, kind: &str, obj: &mut Value) {
    defaults::apply(group, version, kind, obj);
}

/// Why a built-in object may never be deleted: the system PriorityClasses.
pub fn undeletable(group: &str, kind: &str, name: &str) -> Option<&'static str> {
    let system = (group, kind) == ("scheduling.k8s.io", "PriorityClass")
        && validate::misc::SYSTEM_PRIORITY_CLASSES
            .iter()
            .any(|(n, _)| *n == name);
    system.then_some("this is a system priority class and cannot be deleted")
}

/// Upstream's create validation of a built-in kind (beyond object metadata).
pub fn validate_create(group: &str, version: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    validate::create(group, version, kind, obj)
}

/// Upstream's update validation of a built-in kind (beyond object metadata).
pub fn validate_update(
    group: &str,
    version: &str,
    kind: &str,
    new: &Value,
    old: &Value,
) -> Vec<FieldError> {
    validate::update(group, version, kind, new, old)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_are_reported_with_upstream_paths() {
        let d = decode(
            "apps",
            "v1",
            "Deployment",
            &json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"name": "x", "bogus": 1},
                "spec": {"replicaz": 3, "selector": {}, "template": {"spec": {"containers": [{"name": "c", "imagee": "x"}]}}}
            }),
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            d.unknown_fields,
            vec![
                "metadata.bogus",
                "spec.replicaz",
                "spec.template.spec.containers[0].imagee"
            ]
        );
        assert!(d.object["spec"].get("replicaz").is_none());
        assert_eq!(
            d.object["spec"]["template"]["spec"]["containers"][0]["name"],
            "c"
        );
    }

    #[test]
    fn wrong_types_fail() {
        let r = decode(
            "apps",
            "v1",
            "Deployment",
            &json!({"spec": {"replicas": "three"}}),
        );
        assert!(r.unwrap().is_err());
        assert!(decode("example.com", "v1", "Widget", &json!({})).is_none());
    }
}
