//! Schemas for the integration tests: a generic type exercising every patch strategy, and
//! the parts of a Deployment that kubectl's patches touch, with the extensions taken from
//! `api::schema::extensions::FIELD_EXTENSIONS`.

#![allow(dead_code)]

use std::collections::BTreeMap;

use api::schema::SchemaLookup;
use api::schema::extensions::field_ext;
use serde_json::{Map, Value, json};

pub struct Defs(pub BTreeMap<String, Value>);

impl SchemaLookup for Defs {
    fn definition(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }
}

pub fn reference(name: &str) -> Value {
    json!({ "$ref": format!("#/components/schemas/{name}") })
}

/// A reference wrapped in `allOf`, as OpenAPI v3 writes references with siblings.
pub fn wrapped(name: &str, extra: Value) -> Value {
    let mut v = json!({ "allOf": [reference(name)] });
    if let (Some(obj), Value::Object(extra)) = (v.as_object_mut(), extra) {
        obj.extend(extra);
    }
    v
}

fn string() -> Value {
    json!({"type": "string"})
}

fn list_of(items: Value) -> Value {
    json!({"type": "array", "items": items})
}

fn string_map() -> Value {
    json!({"type": "object", "additionalProperties": {"type": "string"}})
}

fn merge_list(items: Value, key: &str) -> Value {
    json!({"type": "array", "items": items,
           "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": key})
}

/// The generic type (`test.Root`): merging lists of maps and scalars, a replace field, a
/// retainKeys field, a map, a struct without fields.
pub fn generic() -> Defs {
    let int_list = json!({"type": "array", "items": {"type": "integer", "format": "int32"}});
    let mut merging_ints = int_list.clone();
    merging_ints["x-kubernetes-patch-strategy"] = json!("merge");
    let mut m = BTreeMap::new();
    m.insert(
        "test.Leaf".to_string(),
        json!({"type": "object", "properties": {"name": string(), "value": string(), "other": string()}}),
    );
    m.insert(
        "test.Port".to_string(),
        json!({"type": "object", "properties": {
            "containerPort": {"type": "integer", "format": "int32"},
            "protocol": string(), "name": string()}}),
    );
    m.insert("test.Opaque".to_string(), json!({"type": "object"}));
    m.insert(
        "test.RetainItem".to_string(),
        json!({"type": "object", "properties": {
            "name": string(), "value": string(), "simpleMap": string_map(),
            "mergingList": merge_list(reference("test.Item"), "name"),
            "nonMergingList": list_of(reference("test.Item")),
            "mergingIntList": merging_ints,
        }}),
    );
    m.insert(
        "test.Item".to_string(),
        json!({"type": "object", "properties": {
            "name": string(), "value": string(), "other": string(),
            "mergingList": merge_list(reference("test.Leaf"), "name"),
            "nonMergingList": list_of(reference("test.Leaf")),
            "mergingIntList": merging_ints,
            "simpleMap": string_map(),
            "retainKeysMap": wrapped("test.RetainItem", json!({"x-kubernetes-patch-strategy": "retainKeys"})),
        }}),
    );
    m.insert(
        "test.Root".to_string(),
        json!({"type": "object", "properties": {
            "name": string(), "value": string(), "other": string(),
            "mergingList": merge_list(wrapped("test.Item", json!({"default": {}})), "name"),
            "nonMergingList": list_of(reference("test.Item")),
            "mergingIntList": merging_ints,
            "nonMergingIntList": int_list,
            "simpleMap": string_map(),
            "replacingItem": wrapped("test.Opaque", json!({"x-kubernetes-patch-strategy": "replace"})),
            "retainKeysMap": wrapped("test.RetainItem", json!({"x-kubernetes-patch-strategy": "retainKeys"})),
            "retainKeysMergingList": {"type": "array", "items": reference("test.Item"),
                "x-kubernetes-patch-strategy": "merge,retainKeys", "x-kubernetes-patch-merge-key": "name"},
            "ports": merge_list(reference("test.Port"), "containerPort"),
            "child": wrapped("test.Item", json!({"description": "A child."})),
            "raw": reference("test.Opaque"),
            "tags": {"type": "array", "items": string(), "x-kubernetes-patch-strategy": "merge"},
        }}),
    );
    Defs(m)
}

/// A definition whose fields carry the extensions of the built-in table.
fn def(name: &str, properties: Value) -> (String, Value) {
    let Value::Object(mut props) = properties else {
        panic!("properties of {name} are not an object");
    };
    for (field, schema) in props.iter_mut() {
        let Some(ext) = field_ext(name, field) else {
            continue;
        };
        let obj: &mut Map<String, Value> = schema.as_object_mut().expect("field schema");
        if let Some(s) = ext.patch_strategy {
            obj.insert("x-kubernetes-patch-strategy".into(), json!(s));
        }
        if let Some(k) = ext.patch_merge_key {
            obj.insert("x-kubernetes-patch-merge-key".into(), json!(k));
        }
        if let Some(t) = ext.list_type {
            obj.insert("x-kubernetes-list-type".into(), json!(t));
        }
        if !ext.list_map_keys.is_empty() {
            obj.insert(
                "x-kubernetes-list-map-keys".into(),
                json!(ext.list_map_keys),
            );
        }
        if let Some(t) = ext.map_type {
            obj.insert("x-kubernetes-map-type".into(), json!(t));
        }
        if let Some(r) = obj.remove("$ref") {
            obj.insert("allOf".into(), json!([{ "$ref": r }]));
        }
    }
    (
        name.to_string(),
        json!({"type": "object", "properties": Value::Object(props)}),
    )
}

const CORE: &str = "io.k8s.api.core.v1";
const APPS: &str = "io.k8s.api.apps.v1";
const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1";

fn core(name: &str) -> Value {
    reference(&format!("{CORE}.{name}"))
}

/// The parts of `apps/v1` Deployment that the tests' patches touch.
pub fn deployment() -> Defs {
    let quantity_map = json!({"type": "object", "additionalProperties": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"}});
    let defs = [
        def(
            &format!("{APPS}.Deployment"),
            json!({"apiVersion": string(), "kind": string(),
                   "metadata": reference(&format!("{META}.ObjectMeta")),
                   "spec": reference(&format!("{APPS}.DeploymentSpec")),
                   "status": reference(&format!("{APPS}.DeploymentStatus"))}),
        ),
        def(
            &format!("{META}.ObjectMeta"),
            json!({"name": string(), "namespace": string(), "uid": string(),
                   "resourceVersion": string(), "generation": {"type": "integer", "format": "int64"},
                   "labels": string_map(), "annotations": string_map(),
                   "ownerReferences": list_of(reference(&format!("{META}.OwnerReference"))),
                   "finalizers": list_of(string())}),
        ),
        def(
            &format!("{META}.OwnerReference"),
            json!({"apiVersion": string(), "kind": string(), "name": string(), "uid": string(),
                   "controller": {"type": "boolean"}}),
        ),
        def(
            &format!("{META}.LabelSelector"),
            json!({"matchLabels": string_map(),
                   "matchExpressions": list_of(reference(&format!("{META}.LabelSelectorRequirement")))}),
        ),
        def(
            &format!("{META}.LabelSelectorRequirement"),
            json!({"key": string(), "operator": string(), "values": list_of(string())}),
        ),
        def(
            &format!("{APPS}.DeploymentSpec"),
            json!({"replicas": {"type": "integer", "format": "int32"},
                   "selector": reference(&format!("{META}.LabelSelector")),
                   "template": core("PodTemplateSpec"),
                   "strategy": reference(&format!("{APPS}.DeploymentStrategy"))}),
        ),
        def(
            &format!("{APPS}.DeploymentStatus"),
            json!({"replicas": {"type": "integer", "format": "int32"},
                   "conditions": list_of(reference(&format!("{APPS}.DeploymentCondition")))}),
        ),
        def(
            &format!("{APPS}.DeploymentCondition"),
            json!({"type": string(), "status": string(), "reason": string()}),
        ),
        def(
            &format!("{APPS}.DeploymentStrategy"),
            json!({"type": string(), "rollingUpdate": reference(&format!("{APPS}.RollingUpdateDeployment"))}),
        ),
        def(
            &format!("{APPS}.RollingUpdateDeployment"),
            json!({"maxUnavailable": {"x-kubernetes-int-or-string": true},
                   "maxSurge": {"x-kubernetes-int-or-string": true}}),
        ),
        def(
            &format!("{CORE}.PodTemplateSpec"),
            json!({"metadata": reference(&format!("{META}.ObjectMeta")), "spec": core("PodSpec")}),
        ),
        def(
            &format!("{CORE}.PodSpec"),
            json!({"volumes": list_of(core("Volume")),
                   "initContainers": list_of(core("Container")),
                   "containers": list_of(core("Container")),
                   "nodeSelector": string_map(),
                   "tolerations": list_of(core("Toleration")),
                   "imagePullSecrets": list_of(core("LocalObjectReference"))}),
        ),
        def(
            &format!("{CORE}.LocalObjectReference"),
            json!({"name": string()}),
        ),
        def(
            &format!("{CORE}.Toleration"),
            json!({"key": string(), "operator": string(), "value": string(), "effect": string()}),
        ),
        def(
            &format!("{CORE}.Volume"),
            json!({"name": string(), "emptyDir": core("EmptyDirVolumeSource"),
                   "configMap": core("ConfigMapVolumeSource"), "secret": core("SecretVolumeSource")}),
        ),
        def(
            &format!("{CORE}.EmptyDirVolumeSource"),
            json!({"medium": string(), "sizeLimit": string()}),
        ),
        def(
            &format!("{CORE}.ConfigMapVolumeSource"),
            json!({"name": string(), "items": list_of(core("KeyToPath"))}),
        ),
        def(
            &format!("{CORE}.SecretVolumeSource"),
            json!({"secretName": string()}),
        ),
        def(
            &format!("{CORE}.KeyToPath"),
            json!({"key": string(), "path": string()}),
        ),
        def(
            &format!("{CORE}.Container"),
            json!({"name": string(), "image": string(),
                   "command": list_of(string()), "args": list_of(string()),
                   "ports": list_of(core("ContainerPort")),
                   "env": list_of(core("EnvVar")),
                   "resources": core("ResourceRequirements"),
                   "volumeMounts": list_of(core("VolumeMount"))}),
        ),
        def(
            &format!("{CORE}.ContainerPort"),
            json!({"name": string(), "containerPort": {"type": "integer", "format": "int32"},
                   "protocol": string()}),
        ),
        def(
            &format!("{CORE}.EnvVar"),
            json!({"name": string(), "value": string(), "valueFrom": core("EnvVarSource")}),
        ),
        def(
            &format!("{CORE}.EnvVarSource"),
            json!({"configMapKeyRef": core("ConfigMapKeySelector")}),
        ),
        def(
            &format!("{CORE}.ConfigMapKeySelector"),
            json!({"name": string(), "key": string()}),
        ),
        def(
            &format!("{CORE}.ResourceRequirements"),
            json!({"limits": quantity_map.clone(), "requests": quantity_map}),
        ),
        def(
            &format!("{CORE}.VolumeMount"),
            json!({"name": string(), "readOnly": {"type": "boolean"}, "mountPath": string()}),
        ),
        (
            "io.k8s.apimachinery.pkg.api.resource.Quantity".to_string(),
            json!({"type": "string"}),
        ),
    ];
    Defs(defs.into_iter().collect())
}

/// The schema argument for a document of `name`.
pub fn root(name: &str) -> Value {
    reference(name)
}
