//! Pure transformations that bring generated definitions to the shape of upstream's
//! published OpenAPI v3 spec.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::extensions::FieldExt;
use super::names::{INT_OR_STRING, LIST_META, QUANTITY};
use super::{GVK_EXTENSION, V3_REF_PREFIX, referenced_name};

const JSON: &str = "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON";
/// Upstream publishes these with a description only (no type): they hold one of several
/// shapes.
const DESCRIPTION_ONLY: &[&str] = &[
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool",
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray",
];

/// TypeMeta's `apiVersion` field, as every kind publishes it.
pub(crate) const API_VERSION_DESCRIPTION: &str = "APIVersion defines the versioned schema of this representation of an object. Servers should convert recognized schemas to the latest internal value, and may reject unrecognized values. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
/// TypeMeta's `kind` field, as every kind publishes it.
pub(crate) const KIND_DESCRIPTION: &str = "Kind is a string value representing the REST resource this object represents. Servers may infer this from the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";
/// `metadata` of a list.
pub(crate) const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

/// The `$ref` value of a definition.
pub(crate) fn reference(name: &str) -> String {
    format!("{V3_REF_PREFIX}{name}")
}

/// Replaces the definitions whose generated form differs from upstream's: `IntOrString` and
/// `Quantity` (a `oneOf` of their wire types), `JSON` and the `JSONSchemaPropsOr*` unions
/// (no type).
pub(crate) fn special_types(defs: &mut BTreeMap<String, Value>) {
    super::initializers::initializers_in_object_meta(defs);
    let description = |defs: &BTreeMap<String, Value>, name: &str| {
        defs.get(name)
            .and_then(|d| d.get("description"))
            .cloned()
            .unwrap_or(Value::String(String::new()))
    };
    if defs.contains_key(INT_OR_STRING) {
        let d = description(defs, INT_OR_STRING);
        defs.insert(
            INT_OR_STRING.to_string(),
            json!({
                "description": d,
                "format": "int-or-string",
                "oneOf": [{"type": "integer"}, {"type": "string"}],
            }),
        );
    }
    if defs.contains_key(QUANTITY) {
        let d = description(defs, QUANTITY);
        defs.insert(
            QUANTITY.to_string(),
            json!({
                "description": d,
                "oneOf": [{"type": "string"}, {"type": "number"}],
            }),
        );
    }
    for name in DESCRIPTION_ONLY.iter().chain([JSON].iter()) {
        if defs.contains_key(*name) {
            let d = description(defs, name);
            defs.insert(name.to_string(), json!({ "description": d }));
        }
    }
}

/// `k8s-openapi` marks `metadata` required on kinds (its Rust field is not optional);
/// upstream does not.
pub(crate) fn drop_required_metadata(defs: &mut BTreeMap<String, Value>) {
    for def in defs.values_mut() {
        let Some(obj) = def.as_object_mut() else {
            continue;
        };
        let empty = match obj.get_mut("required").and_then(Value::as_array_mut) {
            Some(required) => {
                required.retain(|f| f != "metadata");
                required.is_empty()
            }
            None => false,
        };
        if empty {
            obj.remove("required");
        }
    }
}

/// The definition of a List kind (`DeploymentList`) of the items' definition.
pub(crate) fn list_definition(item_definition: &str, item_kind: &str, list_kind: &str) -> Value {
    json!({
        "description": format!("{list_kind} is a list of {item_kind} objects."),
        "properties": {
            "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
            "items": {
                "description": format!("Items is the list of {item_kind} objects."),
                "items": {"allOf": [{"$ref": reference(item_definition)}], "default": {}},
                "type": "array",
            },
            "kind": {"description": KIND_DESCRIPTION, "type": "string"},
            "metadata": {
                "allOf": [{"$ref": reference(LIST_META)}],
                "default": {},
                "description": LIST_METADATA_DESCRIPTION,
            },
        },
        "required": ["items"],
        "type": "object",
    })
}

/// Sets `x-kubernetes-group-version-kind` to the given kinds.
pub(crate) fn set_gvk(def: &mut Value, gvks: &[(String, String, String)]) {
    let list: Vec<Value> = gvks
        .iter()
        .map(|(g, v, k)| json!({"group": g, "kind": k, "version": v}))
        .collect();
    if let Some(obj) = def.as_object_mut() {
        obj.insert(GVK_EXTENSION.to_string(), Value::Array(list));
    }
}

/// Wraps a `$ref` that has siblings as the single member of `allOf`, as upstream's v3 spec
/// writes references that carry a description, a default or extensions.
pub(crate) fn wrap_ref(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if obj.len() > 1
        && let Some(reference) = obj.remove("$ref")
    {
        obj.insert("allOf".to_string(), json!([{ "$ref": reference }]));
    }
}

/// Injects the `x-kubernetes-*` extensions of the table into the fields' schemas. An entry
/// with an empty `field` applies to the definition itself (`x-kubernetes-map-type: atomic`
/// on `LabelSelector`, as upstream publishes it). Entries naming a definition or a field that
/// does not exist are ignored.
pub(crate) fn apply_field_extensions(defs: &mut BTreeMap<String, Value>, exts: &[FieldExt]) {
    for ext in exts {
        let Some(def) = defs.get_mut(ext.definition) else {
            continue;
        };
        let target = if ext.field.is_empty() {
            Some(def)
        } else {
            def.get_mut("properties").and_then(|p| p.get_mut(ext.field))
        };
        let Some(target) = target else {
            continue;
        };
        let Some(obj) = target.as_object_mut() else {
            continue;
        };
        if let Some(s) = ext.patch_strategy {
            obj.insert("x-kubernetes-patch-strategy".into(), s.into());
        }
        if let Some(k) = ext.patch_merge_key {
            obj.insert("x-kubernetes-patch-merge-key".into(), k.into());
        }
        if let Some(t) = ext.list_type {
            obj.insert("x-kubernetes-list-type".into(), t.into());
        }
        if !ext.list_map_keys.is_empty() {
            obj.insert(
                "x-kubernetes-list-map-keys".into(),
                Value::Array(ext.list_map_keys.iter().map(|k| (*k).into()).collect()),
            );
        }
        if let Some(t) = ext.map_type {
            obj.insert("x-kubernetes-map-type".into(), t.into());
        }
        wrap_ref(target);
    }
}

fn zero_value(schema: &Value) -> Option<Value> {
    if schema.get("$ref").is_some() || schema.get("allOf").is_some() {
        return None;
    }
    match schema.get("type").and_then(Value::as_str)? {
        "string" => Some(Value::String(String::new())),
        "integer" | "number" => Some(json!(0)),
        "boolean" => Some(Value::Bool(false)),
        _ => None,
    }
}

fn insert_default(schema: &mut Value, default: Value) {
    if let Some(obj) = schema.as_object_mut() {
        obj.insert("default".to_string(), default);
    }
    wrap_ref(schema);
}

/// The non-zero `+default=` markers of upstream's Go types (k8s.io/api) that k8s-openapi's
/// schemas leave out. They matter beyond documentation: a list-map key field missing from
/// an item takes its default when the field manager identifies the item (a container port
/// without `protocol` is the item `{containerPort, protocol: TCP}`). The zero-valued markers
/// (`+default=false`, `""`, `0`) sit on pointer or `omitempty` fields and are left out, since
/// a zero default here means "the Go zero struct serializes this field".
const EXPLICIT_DEFAULTS: &[(&str, &str, &str)] = &[
    ("io.k8s.api.core.v1.ContainerPort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.ServicePort", "protocol", "TCP"),
    ("io.k8s.api.core.v1.RBDVolumeSource", "pool", "rbd"),
    ("io.k8s.api.core.v1.RBDVolumeSource", "user", "admin"),
    (
        "io.k8s.api.core.v1.RBDVolumeSource",
        "keyring",
        "/etc/ceph/keyring",
    ),
    (
        "io.k8s.api.core.v1.RBDPersistentVolumeSource",
        "pool",
        "rbd",
    ),
    (
        "io.k8s.api.core.v1.RBDPersistentVolumeSource",
        "user",
        "admin",
    ),
    (
        "io.k8s.api.core.v1.RBDPersistentVolumeSource",
        "keyring",
        "/etc/ceph/keyring",
    ),
    (
        "io.k8s.api.core.v1.ISCSIVolumeSource",
        "iscsiInterface",
        "default",
    ),
    (
        "io.k8s.api.core.v1.ISCSIPersistentVolumeSource",
        "iscsiInterface",
        "default",
    ),
    (
        "io.k8s.api.core.v1.AzureDiskVolumeSource",
        "cachingMode",
        "ReadWrite",
    ),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "fsType", "ext4"),
    ("io.k8s.api.core.v1.AzureDiskVolumeSource", "kind", "Shared"),
    (
        "io.k8s.api.core.v1.ScaleIOVolumeSource",
        "storageMode",
        "ThinProvisioned",
    ),
    ("io.k8s.api.core.v1.ScaleIOVolumeSource", "fsType", "xfs"),
    (
        "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource",
        "storageMode",
        "ThinProvisioned",
    ),
    (
        "io.k8s.api.core.v1.ScaleIOPersistentVolumeSource",
        "fsType",
        "xfs",
    ),
];

/// The definitions that describe structs (objects with properties).
pub(crate) fn struct_names(defs: &BTreeMap<String, Value>) -> BTreeSet<String> {
    defs.iter()
        .filter(|(_, d)| {
            d.get("type").and_then(Value::as_str) == Some("object") && d.get("properties").is_some()
        })
        .map(|(n, _)| n.clone())
        .collect()
}

/// Publishes the defaults upstream's generator derives from the Go types, as far as they
/// follow from the schema: the zero value of required scalar fields (non-`omitempty`
/// fields, which are required, serialize their zero value), `{}` for required struct fields
/// and for `metadata`/`spec`/`status` of kinds (non-pointer structs), and the zero value or
/// `{}` for the items of arrays of scalars or structs.
pub(crate) fn apply_defaults(defs: &mut BTreeMap<String, Value>, structs: &BTreeSet<String>) {
    for (definition, field, default) in EXPLICIT_DEFAULTS {
        if let Some(prop) = defs
            .get_mut(*definition)
            .and_then(|d| d.get_mut("properties"))
            .and_then(|p| p.get_mut(*field))
        {
            insert_default(prop, json!(default));
        }
    }
    for def in defs.values_mut() {
        let is_kind = def.get(GVK_EXTENSION).is_some();
        let required: BTreeSet<String> = def
            .get("required")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let Some(props) = def.get_mut("properties").and_then(Value::as_object_mut) else {
            continue;
        };
        for (field, prop) in props.iter_mut() {
            let always_struct = is_kind && matches!(field.as_str(), "metadata" | "spec" | "status");
            default_field(prop, required.contains(field), always_struct, structs);
        }
    }
}

fn default_field(
    prop: &mut Value,
    required: bool,
    always_struct: bool,
    structs: &BTreeSet<String>,
) {
    if prop.get("default").is_some() {
        return;
    }
    if let Some(target) = referenced_name(prop) {
        if (required || always_struct) && structs.contains(target) {
            insert_default(prop, json!({}));
        }
        return;
    }
    if prop.get("type").and_then(Value::as_str) == Some("array") {
        if let Some(items) = prop.get_mut("items") {
            default_item(items, structs);
        }
        return;
    }
    if required && let Some(zero) = zero_value(prop) {
        insert_default(prop, zero);
    }
}

fn default_item(items: &mut Value, structs: &BTreeSet<String>) {
    if !items.is_object() || items.get("default").is_some() {
        return;
    }
    if let Some(target) = referenced_name(items) {
        if structs.contains(target) {
            insert_default(items, json!({}));
        }
        return;
    }
    if let Some(zero) = zero_value(items) {
        insert_default(items, zero);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrap_ref_only_with_siblings() {
        let mut a = json!({"$ref": "#/components/schemas/X"});
        wrap_ref(&mut a);
        assert_eq!(a, json!({"$ref": "#/components/schemas/X"}));
        let mut b = json!({"$ref": "#/components/schemas/X", "description": "d"});
        wrap_ref(&mut b);
        assert_eq!(
            b,
            json!({"allOf": [{"$ref": "#/components/schemas/X"}], "description": "d"})
        );
    }

    #[test]
    fn defaults_follow_upstream_rules() {
        let mut defs = BTreeMap::new();
        defs.insert(
            "S".to_string(),
            json!({"type": "object", "properties": {"a": {"type": "string"}}}),
        );
        defs.insert(
            "K".to_string(),
            json!({
                "type": "object",
                "x-kubernetes-group-version-kind": [{"group": "", "kind": "K", "version": "v1"}],
                "required": ["name", "ref", "count"],
                "properties": {
                    "name": {"type": "string"},
                    "count": {"type": "integer", "format": "int32"},
                    "optional": {"type": "string"},
                    "ref": {"$ref": "#/components/schemas/S"},
                    "spec": {"allOf": [{"$ref": "#/components/schemas/S"}], "description": "d"},
                    "other": {"$ref": "#/components/schemas/S"},
                    "names": {"type": "array", "items": {"type": "string"}},
                    "structs": {"type": "array", "items": {"$ref": "#/components/schemas/S"}},
                }
            }),
        );
        let structs = struct_names(&defs);
        apply_defaults(&mut defs, &structs);
        let p = &defs["K"]["properties"];
        assert_eq!(p["name"]["default"], "");
        assert_eq!(p["count"]["default"], 0);
        assert!(p["optional"].get("default").is_none());
        assert_eq!(
            p["ref"],
            json!({"allOf": [{"$ref": "#/components/schemas/S"}], "default": {}})
        );
        assert_eq!(p["spec"]["default"], json!({}));
        assert_eq!(p["other"], json!({"$ref": "#/components/schemas/S"}));
        assert_eq!(
            p["names"]["items"],
            json!({"default": "", "type": "string"})
        );
        assert_eq!(p["structs"]["items"]["default"], json!({}));
    }

    #[test]
    fn required_metadata_is_dropped() {
        let mut defs = BTreeMap::new();
        defs.insert("A".to_string(), json!({"required": ["metadata"]}));
        defs.insert("B".to_string(), json!({"required": ["metadata", "spec"]}));
        drop_required_metadata(&mut defs);
        assert_eq!(defs["A"], json!({}));
        assert_eq!(defs["B"], json!({"required": ["spec"]}));
    }
}
