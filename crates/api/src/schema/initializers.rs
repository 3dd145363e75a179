//! The definitions of the seeds' initializers, which `k8s-openapi` no longer has:
//! `metadata.initializers` in `ObjectMeta`, and `admissionregistration.k8s.io/v1alpha1`
//! `InitializerConfiguration` as upstream 1.13 published it.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::fixups::{API_VERSION_DESCRIPTION, KIND_DESCRIPTION, reference};

const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
const INITIALIZERS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Initializers";
const INITIALIZER: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Initializer";
const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";

/// `metadata.initializers` (upstream's alpha `Initializers`, removed from upstream's
/// `ObjectMeta` in 1.14; rkube serves the seeds' initializers).
pub(crate) fn initializers_in_object_meta(defs: &mut BTreeMap<String, Value>) {
    let Some(meta) = defs.get_mut(OBJECT_META) else {
        return;
    };
    if let Some(props) = meta.get_mut("properties").and_then(Value::as_object_mut) {
        props.insert(
            "initializers".into(),
            json!({
                "allOf": [{"$ref": reference(INITIALIZERS)}],
                "description": "An initializer is a controller which enforces some system invariant at object creation time. This field is a list of initializers that have not yet acted on this object. If nil or empty, this object has been completely initialized. Otherwise, the object is considered uninitialized and is hidden (in list/watch and get calls) from clients that haven't explicitly asked to observe uninitialized objects.\n\nWhen an object is created, the system will populate this list with the current set of initializers. Only privileged users may set or modify this list. Once it is empty, it may not be modified further by any user.",
            }),
        );
    }
    defs.insert(
        INITIALIZERS.to_string(),
        json!({
            "description": "Initializers tracks the progress of initialization.",
            "properties": {
                "pending": {
                    "description": "Pending is a list of initializers that must execute in order before this object is visible. When the last pending initializer is removed, and no failing result is set, the initializers struct will be set to nil and the object is considered as initialized and visible to all clients.",
                    "items": {"allOf": [{"$ref": reference(INITIALIZER)}], "default": {}},
                    "type": "array",
                    "x-kubernetes-list-map-keys": ["name"],
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "result": {
                    "allOf": [{"$ref": reference(STATUS)}],
                    "description": "If result is set with the Failure field, the object will be persisted to storage and then deleted, ensuring that other clients can observe the deletion.",
                },
            },
            "required": ["pending"],
            "type": "object",
        }),
    );
    defs.insert(
        INITIALIZER.to_string(),
        json!({
            "description": "Initializer is information about an initializer that has not yet completed.",
            "properties": {
                "name": {"default": "", "description": "name of the process that is responsible for initializing this object.", "type": "string"},
            },
            "required": ["name"],
            "type": "object",
        }),
    );
}

const IC: &str = "io.k8s.api.admissionregistration.v1alpha1.InitializerConfiguration";
const IC_INITIALIZER: &str = "io.k8s.api.admissionregistration.v1alpha1.Initializer";
const IC_RULE: &str = "io.k8s.api.admissionregistration.v1alpha1.Rule";

/// The definitions of `admissionregistration.k8s.io/v1alpha1` `InitializerConfiguration`
/// (not in `k8s-openapi`), as upstream 1.13 published them: the kind's definition name and
/// the definitions.
pub(crate) fn initializer_configuration() -> (&'static str, BTreeMap<String, Value>) {
    let strings = |d: &str| json!({"description": d, "items": {"default": "", "type": "string"}, "type": "array"});
    let mut defs = BTreeMap::new();
    defs.insert(
        IC.to_string(),
        json!({
            "description": "InitializerConfiguration describes the configuration of initializers.",
            "properties": {
                "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
                "initializers": {
                    "description": "Initializers is a list of resources and their default initializers Order-sensitive. When merging multiple InitializerConfigurations, we sort the initializers from different InitializerConfigurations by the name of the InitializerConfigurations; the order of the initializers from the same InitializerConfiguration is preserved.",
                    "items": {"allOf": [{"$ref": reference(IC_INITIALIZER)}], "default": {}},
                    "type": "array",
                    "x-kubernetes-patch-merge-key": "name",
                    "x-kubernetes-patch-strategy": "merge",
                },
                "kind": {"description": KIND_DESCRIPTION, "type": "string"},
                "metadata": {
                    "allOf": [{"$ref": reference(OBJECT_META)}],
                    "default": {},
                    "description": "Standard object metadata; More info: https://git.k8s.io/community/contributors/devel/api-conventions.md#metadata.",
                },
            },
            "type": "object",
        }),
    );
    defs.insert(
        IC_INITIALIZER.to_string(),
        json!({
            "description": "Initializer describes the name and the failure policy of an initializer, and what resources it applies to.",
            "properties": {
                "name": {"default": "", "description": "Name is the identifier of the initializer. It will be added to the object that needs to be initialized. Name should be fully qualified, e.g., alwayspullimages.kubernetes.io, where \"alwayspullimages\" is the name of the webhook, and kubernetes.io is the name of the organization. Required", "type": "string"},
                "rules": {
                    "description": "Rules describes what resources/subresources the initializer cares about. The initializer cares about an operation if it matches _any_ Rule. Rule.Resources must not include subresources.",
                    "items": {"allOf": [{"$ref": reference(IC_RULE)}], "default": {}},
                    "type": "array",
                },
            },
            "required": ["name"],
            "type": "object",
        }),
    );
    defs.insert(
        IC_RULE.to_string(),
        json!({
            "description": "Rule is a tuple of APIGroups, APIVersion, and Resources.It is recommended to make sure that all the tuple expansions are valid.",
            "properties": {
                "apiGroups": strings("APIGroups is the API groups the resources belong to. '*' is all groups. If '*' is present, the length of the slice must be one. Required."),
                "apiVersions": strings("APIVersions is the API versions the resources belong to. '*' is all versions. If '*' is present, the length of the slice must be one. Required."),
                "resources": strings("Resources is a list of resources this rule applies to.\n\nFor example: 'pods' means pods. '*' means all resources, but not subresources. If '*' is present, the length of the slice must be one. Required."),
            },
            "type": "object",
        }),
    );
    (IC, defs)
}
