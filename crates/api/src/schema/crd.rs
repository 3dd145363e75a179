//! Definitions of custom resources, built from a CustomResourceDefinition version's
//! `openAPIV3Schema` as upstream's apiextensions-apiserver publishes them
//! (`pkg/controller/openapi/builder`): the schema as a structural schema (unknown keywords
//! dropped), `x-kubernetes-int-or-string` unfolded into `anyOf` (v3), `metadata`,
//! `apiVersion` and `kind` added (also inside `x-kubernetes-embedded-resource` objects), the
//! kind's `x-kubernetes-group-version-kind`, and a List kind. The v2 form additionally drops
//! what Swagger 2.0 and kubectl's v2 parser cannot take (junctors, `nullable` types,
//! properties under `x-kubernetes-preserve-unknown-fields`) and is a bare `type: object` when
//! the whole object preserves unknown fields.

use serde_json::{Map, Value, json};

use super::GVK_EXTENSION;
use super::fixups::{API_VERSION_DESCRIPTION, KIND_DESCRIPTION, reference};
use super::names::{LIST_META, OBJECT_META};
use super::v2::schema_to_v2;

/// `metadata` of a custom resource (upstream's `PartialObjectMetadata` documentation).
const OBJECT_METADATA_DESCRIPTION: &str = "Standard object's metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
/// `metadata` of a custom resource list (upstream's `PartialObjectMetadataList`).
const LIST_METADATA_DESCRIPTION: &str = "Standard list metadata. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const EMBEDDED_API_VERSION_DESCRIPTION: &str = "apiVersion defines the versioned schema of this representation of an object. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources";
const EMBEDDED_KIND_DESCRIPTION: &str = "kind is a string value representing the type of this object. In CamelCase. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds";

const PRESERVE_UNKNOWN: &str = "x-kubernetes-preserve-unknown-fields";
const EMBEDDED_RESOURCE: &str = "x-kubernetes-embedded-resource";
const INT_OR_STRING: &str = "x-kubernetes-int-or-string";

/// The keywords a structural schema keeps; others are dropped when publishing, as
/// upstream's conversion to its structural form does.
const STRUCTURAL_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "multipleOf",
    "enum",
    "maxProperties",
    "minProperties",
    "required",
    "items",
    "allOf",
    "oneOf",
    "anyOf",
    "not",
    "properties",
    "additionalProperties",
    PRESERVE_UNKNOWN,
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
    "x-kubernetes-list-map-keys",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// Boolean keywords published only when true.
const TRUE_ONLY: &[&str] = &[
    "nullable",
    "uniqueItems",
    "exclusiveMaximum",
    "exclusiveMinimum",
    PRESERVE_UNKNOWN,
    EMBEDDED_RESOURCE,
    INT_OR_STRING,
];

/// One served version of a custom resource, as its definitions need it.
#[derive(Clone, Debug, PartialEq)]
pub struct CustomResourceVersion {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// The version's `schema.openAPIV3Schema`.
    pub schema: Option<Value>,
    /// The CRD's `spec.preserveUnknownFields`.
    pub preserve_unknown_fields: bool,
    /// Whether the version has a `status` subresource.
    pub status_subresource: bool,
    /// Whether the version has a `scale` subresource.
    pub scale_subresource: bool,
    /// The `jsonPath`s of the version's `selectableFields`.
    pub selectable_fields: Vec<String>,
}

impl CustomResourceVersion {
    /// The served versions of a CustomResourceDefinition (`apiextensions.k8s.io/v1`, as
    /// JSON). Fields missing from a malformed object are taken as empty.
    pub fn from_crd(crd: &Value) -> Vec<CustomResourceVersion> {
        let spec = &crd["spec"];
        let text = |v: &Value| v.as_str().unwrap_or_default().to_string();
        let group = text(&spec["group"]);
        let kind = text(&spec["names"]["kind"]);
        let list_kind = match spec["names"]["listKind"].as_str() {
            Some(l) if !l.is_empty() => l.to_string(),
            _ => format!("{kind}List"),
        };
        let plural = text(&spec["names"]["plural"]);
        let namespaced = spec["scope"].as_str() != Some("Cluster");
        let preserve_unknown_fields = spec["preserveUnknownFields"].as_bool().unwrap_or(false);
        let versions = spec["versions"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or(&[]);
        versions
            .iter()
            .filter(|v| v["served"].as_bool().unwrap_or(false))
            .map(|v| CustomResourceVersion {
                group: group.clone(),
                version: text(&v["name"]),
                kind: kind.clone(),
                list_kind: list_kind.clone(),
                plural: plural.clone(),
                namespaced,
                schema: v["schema"]["openAPIV3Schema"]
                    .as_object()
                    .map(|o| Value::Object(o.clone())),
                preserve_unknown_fields,
                status_subresource: v["subresources"]["status"].is_object(),
                scale_subresource: v["subresources"]["scale"].is_object(),
                selectable_fields: v["selectableFields"]
                    .as_array()
                    .map(|fields| {
                        fields
                            .iter()
                            .filter_map(|f| f["jsonPath"].as_str())
                            .map(str::to_string)
                            .collect()
                    })
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// The kind's definition name: the group reversed, then version and kind
    /// (`stable.example.com`, `v1`, `CronTab` → `com.example.stable.v1.CronTab`).
    pub fn definition_name(&self) -> String {
        definition_name(&self.group, &self.version, &self.kind)
    }

    /// The List kind's definition name.
    pub fn list_definition_name(&self) -> String {
        definition_name(&self.group, &self.version, &self.list_kind)
    }
}

/// Upstream's REST-friendly definition name of a custom kind.
pub fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let reversed: Vec<&str> = group.split('.').rev().collect();
    format!("{}.{version}.{kind}", reversed.join("."))
}

/// One published definition: v3 form, v2 form, and the kind it describes.
pub(super) struct Published {
    pub v3: Value,
    pub v2: Value,
    pub kind: String,
}

/// The kind's and the List kind's definitions.
pub(super) struct Built {
    pub kind: Published,
    pub list: Published,
}

pub(super) fn build(version: &CustomResourceVersion) -> Built {
    let structural = version
        .schema
        .as_ref()
        .filter(|s| s.is_object())
        .map(structural);
    let gvk = json!([{"group": version.group, "kind": version.kind, "version": version.version}]);
    let selectable: Option<Value> = (!version.selectable_fields.is_empty()).then(|| {
        Value::Array(
            version
                .selectable_fields
                .iter()
                .map(|p| json!({"fieldPath": p.strip_prefix('.').unwrap_or(p)}))
                .collect(),
        )
    });
    let finish = |mut schema: Value| {
        if let Some(obj) = schema.as_object_mut() {
            obj.insert(GVK_EXTENSION.to_string(), gvk.clone());
            if let Some(s) = &selectable {
                obj.insert("x-kubernetes-selectable-fields".to_string(), s.clone());
            }
        }
        schema
    };

    let v3 = match &structural {
        None => json!({"type": "object"}),
        Some(s) => {
            let mut s = s.clone();
            unfold_int_or_string(&mut s);
            kube_native(&mut s, false);
            s
        }
    };
    let root_preserves = structural
        .as_ref()
        .is_some_and(|s| is_true(s, PRESERVE_UNKNOWN))
        || version.preserve_unknown_fields;
    let v2_v3refs = match &structural {
        Some(s) if !root_preserves => {
            let mut s = s.clone();
            to_structural_v2(&mut s);
            kube_native(&mut s, true);
            s
        }
        _ => json!({"type": "object"}),
    };
    let kind = Published {
        v3: finish(v3),
        v2: schema_to_v2(&finish(v2_v3refs)),
        kind: version.kind.clone(),
    };

    let list_gvk =
        json!([{"group": version.group, "kind": version.list_kind, "version": version.version}]);
    let mut list = json!({
        "description": format!("{} is a list of {}", version.list_kind, version.kind),
        "properties": {
            "apiVersion": {"description": API_VERSION_DESCRIPTION, "type": "string"},
            "items": {
                "description": format!("List of {}. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md", version.plural),
                "items": {"$ref": reference(&version.definition_name())},
                "type": "array",
            },
            "kind": {"description": KIND_DESCRIPTION, "type": "string"},
            "metadata": {"$ref": reference(LIST_META), "description": LIST_METADATA_DESCRIPTION},
        },
        "required": ["items"],
        "type": "object",
    });
    if let Some(obj) = list.as_object_mut() {
        obj.insert(GVK_EXTENSION.to_string(), list_gvk);
        if let Some(s) = &selectable {
            obj.insert("x-kubernetes-selectable-fields".to_string(), s.clone());
        }
    }
    let list = Published {
        v2: schema_to_v2(&list),
        v3: list,
        kind: version.list_kind.clone(),
    };
    Built { kind, list }
}

fn is_true(schema: &Value, key: &str) -> bool {
    schema.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// The schema restricted to the keywords of a structural schema, recursively.
fn structural(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        if !STRUCTURAL_KEYS.contains(&key.as_str()) {
            continue;
        }
        if TRUE_ONLY.contains(&key.as_str()) && value.as_bool() != Some(true) {
            continue;
        }
        let converted = match key.as_str() {
            "properties" => match value.as_object() {
                Some(props) => Value::Object(
                    props
                        .iter()
                        .map(|(k, v)| (k.clone(), structural(v)))
                        .collect(),
                ),
                None => continue,
            },
            "items" | "not" => match value {
                Value::Object(_) => structural(value),
                _ => continue,
            },
            "additionalProperties" => match value {
                Value::Object(_) => structural(value),
                Value::Bool(_) => value.clone(),
                _ => continue,
            },
            "allOf" | "oneOf" | "anyOf" => match value.as_array() {
                Some(items) => Value::Array(items.iter().map(structural).collect()),
                None => continue,
            },
            _ => value.clone(),
        };
        out.insert(key.clone(), converted);
    }
    Value::Object(out)
}

/// Calls `f` on the schema and every schema nested under `properties`, `items` and
/// `additionalProperties` (not inside value validations), parents first.
fn visit(schema: &mut Value, f: &mut dyn FnMut(&mut Value)) {
    f(schema);
    let Some(map) = schema.as_object_mut() else {
        return;
    };
    if let Some(props) = map.get_mut("properties").and_then(Value::as_object_mut) {
        for p in props.values_mut() {
            visit(p, f);
        }
    }
    if let Some(items) = map.get_mut("items").filter(|i| i.is_object()) {
        visit(items, f);
    }
    if let Some(ap) = map
        .get_mut("additionalProperties")
        .filter(|a| a.is_object())
    {
        visit(ap, f);
    }
}

fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some([a, b]) = any_of.and_then(Value::as_array).map(Vec::as_slice) else {
        return false;
    };
    let only_type = |v: &Value, t: &str| {
        v.as_object()
            .is_some_and(|o| o.get("type").and_then(Value::as_str) == Some(t))
    };
    only_type(a, "integer") && only_type(b, "string")
}

/// Upstream's `Unfold`: `x-kubernetes-int-or-string` becomes an explicit `anyOf` of
/// integer and string, unless the schema already says so.
fn unfold_int_or_string(schema: &mut Value) {
    visit(schema, &mut |s| {
        if !is_true(s, INT_OR_STRING) {
            return;
        }
        let Some(obj) = s.as_object_mut() else {
            return;
        };
        if is_int_or_string_any_of(obj.get("anyOf")) {
            return;
        }
        let first_all_of = obj
            .get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .map(|f| f.get("anyOf"));
        if first_all_of.is_some_and(is_int_or_string_any_of) {
            return;
        }
        let pattern = json!([{"type": "integer"}, {"type": "string"}]);
        if !obj.contains_key("anyOf") {
            obj.insert("anyOf".to_string(), pattern);
        } else {
            let mut all_of = vec![json!({ "anyOf": pattern })];
            if let Some(Value::Array(rest)) = obj.remove("allOf") {
                all_of.extend(rest);
            }
            obj.insert("allOf".to_string(), Value::Array(all_of));
        }
    });
}

/// Upstream's `ToStructuralOpenAPIV2`.
fn to_structural_v2(schema: &mut Value) {
    visit(schema, &mut |s| {
        let Some(obj) = s.as_object_mut() else {
            return;
        };
        for junctor in ["allOf", "oneOf", "anyOf", "not"] {
            obj.remove(junctor);
        }
        if obj.get("nullable").and_then(Value::as_bool) == Some(true) {
            obj.remove("type");
            obj.remove("nullable");
            obj.remove("items");
            obj.remove("properties");
        }
        let preserves = obj.get(PRESERVE_UNKNOWN).and_then(Value::as_bool) == Some(true);
        if preserves {
            obj.remove("items");
            obj.remove("properties");
        }
        let ty = obj.get("type").and_then(Value::as_str).map(str::to_string);
        if ty.as_deref() == Some("array") && !obj.contains_key("items") {
            obj.remove("type");
        }
        if preserves && ty.as_deref() == Some("object") {
            obj.remove("type");
        }
        let nullable_fields: Vec<String> = obj
            .get("properties")
            .and_then(Value::as_object)
            .map(|props| {
                props
                    .iter()
                    .filter(|(_, p)| is_true(p, "nullable"))
                    .map(|(k, _)| k.clone())
                    .collect()
            })
            .unwrap_or_default();
        if let Some(required) = obj.get_mut("required").and_then(Value::as_array_mut) {
            required.retain(|r| !nullable_fields.iter().any(|f| r == f.as_str()));
        }
        let nullable_values = obj
            .get("additionalProperties")
            .is_some_and(|a| is_true(a, "nullable"));
        let empty_required = obj
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty);
        if nullable_values || empty_required {
            obj.remove("required");
        }
    });
}

fn set_property(obj: &mut Map<String, Value>, name: &str, schema: Value) {
    let props = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Some(props) = props.as_object_mut() {
        props.insert(name.to_string(), schema);
    }
}

/// Adds `metadata`, `apiVersion` and `kind` at the root and inside embedded resources.
fn kube_native(schema: &mut Value, v2: bool) {
    if let Some(obj) = schema.as_object_mut() {
        set_property(
            obj,
            "metadata",
            json!({"$ref": reference(OBJECT_META), "description": OBJECT_METADATA_DESCRIPTION}),
        );
        set_property(
            obj,
            "apiVersion",
            json!({"description": API_VERSION_DESCRIPTION, "type": "string"}),
        );
        set_property(
            obj,
            "kind",
            json!({"description": KIND_DESCRIPTION, "type": "string"}),
        );
    }
    add_embedded_properties(schema, v2);
}

/// Upstream's `addEmbeddedProperties`: objects marked `x-kubernetes-embedded-resource` get
/// `apiVersion`, `kind` and `metadata`, the first two required.
fn add_embedded_properties(schema: &mut Value, v2: bool) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    if let Some(props) = obj.get_mut("properties").and_then(Value::as_object_mut) {
        for p in props.values_mut() {
            add_embedded_properties(p, v2);
        }
    }
    if let Some(items) = obj.get_mut("items") {
        add_embedded_properties(items, v2);
    }
    if let Some(ap) = obj.get_mut("additionalProperties") {
        add_embedded_properties(ap, v2);
    }
    if v2 && obj.get(PRESERVE_UNKNOWN).and_then(Value::as_bool) == Some(true) {
        return;
    }
    if obj.get(EMBEDDED_RESOURCE).and_then(Value::as_bool) != Some(true) {
        return;
    }
    set_property(
        obj,
        "apiVersion",
        json!({"description": EMBEDDED_API_VERSION_DESCRIPTION, "type": "string"}),
    );
    set_property(
        obj,
        "kind",
        json!({"description": EMBEDDED_KIND_DESCRIPTION, "type": "string"}),
    );
    set_property(
        obj,
        "metadata",
        json!({"$ref": reference(OBJECT_META), "description": OBJECT_METADATA_DESCRIPTION}),
    );
    let required = obj
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Some(required) = required.as_array_mut() {
        for field in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == field) {
                required.push(Value::String(field.to_string()));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd(schema: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Cluster",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab"},
                "versions": [
                    {"name": "v1", "served": true, "storage": true,
                     "schema": {"openAPIV3Schema": schema},
                     "subresources": {"status": {}},
                     "selectableFields": [{"jsonPath": ".spec.cronSpec"}]},
                    {"name": "v0", "served": false, "storage": false}
                ]
            }
        })
    }

    #[test]
    fn from_crd_reads_served_versions() {
        let versions = CustomResourceVersion::from_crd(&crd(json!({"type": "object"})));
        assert_eq!(versions.len(), 1);
        let v = &versions[0];
        assert_eq!(v.list_kind, "CronTabList");
        assert!(!v.namespaced);
        assert!(v.status_subresource && !v.scale_subresource);
        assert_eq!(v.selectable_fields, vec![".spec.cronSpec".to_string()]);
        assert_eq!(
            v.list_definition_name(),
            "com.example.stable.v1.CronTabList"
        );
        assert_eq!(definition_name("foo", "v1", "Bar"), "foo.v1.Bar");
    }

    #[test]
    fn published_forms() {
        let schema = json!({
            "type": "object",
            "example": {"ignored": true},
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["port", "maybe"],
                    "properties": {
                        "port": {"x-kubernetes-int-or-string": true},
                        "maybe": {"type": "string", "nullable": true},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                                 "properties": {"a": {"type": "string"}}},
                        "choice": {"type": "string", "oneOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
                        "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                                     "x-kubernetes-preserve-unknown-fields": true},
                        "flag": {"type": "boolean", "default": false, "nullable": false},
                    }
                }
            }
        });
        let versions = CustomResourceVersion::from_crd(&crd(schema));
        let built = build(&versions[0]);
        let v3 = &built.kind.v3;
        assert!(v3.get("example").is_none());
        assert_eq!(
            v3[GVK_EXTENSION],
            json!([{"group": "stable.example.com", "kind": "CronTab", "version": "v1"}])
        );
        assert_eq!(
            v3["x-kubernetes-selectable-fields"],
            json!([{"fieldPath": "spec.cronSpec"}])
        );
        assert_eq!(
            v3["properties"]["metadata"]["$ref"],
            "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(v3["properties"]["apiVersion"]["type"], "string");
        let spec = &v3["properties"]["spec"]["properties"];
        assert_eq!(
            spec["port"]["anyOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert_eq!(spec["maybe"]["nullable"], true);
        assert!(spec["flag"].get("nullable").is_none());
        assert_eq!(spec["flag"]["default"], false);
        let template = &spec["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert!(template["properties"]["metadata"].is_object());

        let v2 = &built.kind.v2;
        assert_eq!(
            v2["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        let spec2 = &v2["properties"]["spec"];
        assert_eq!(spec2["required"], json!(["port"]));
        let p2 = &spec2["properties"];
        assert_eq!(p2["port"], json!({"x-kubernetes-int-or-string": true}));
        assert_eq!(p2["maybe"], json!({}));
        assert_eq!(
            p2["free"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(p2["choice"], json!({"type": "string"}));
        assert!(p2["template"].get("properties").is_none());
        assert!(p2["flag"].get("default").is_none());

        let list = &built.list.v3;
        assert_eq!(
            list["properties"]["items"]["items"]["$ref"],
            "#/components/schemas/com.example.stable.v1.CronTab"
        );
        assert_eq!(list[GVK_EXTENSION][0]["kind"], "CronTabList");
        assert_eq!(
            built.list.v2["properties"]["items"]["items"]["$ref"],
            "#/definitions/com.example.stable.v1.CronTab"
        );
    }

    #[test]
    fn preserving_root_publishes_bare_object_in_v2() {
        let schema = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                            "properties": {"spec": {"type": "object"}}});
        let versions = CustomResourceVersion::from_crd(&crd(schema));
        let built = build(&versions[0]);
        assert_eq!(built.kind.v2["type"], "object");
        assert!(built.kind.v2.get("properties").is_none());
        assert!(built.kind.v3["properties"]["spec"].is_object());
        let none = CustomResourceVersion {
            schema: None,
            ..versions[0].clone()
        };
        let built = build(&none);
        assert!(built.kind.v3.get("properties").is_none());
        assert_eq!(built.kind.v3["type"], "object");
    }
}
