//! Hand-built schemas shaped as upstream publishes them at /openapi/v3 (references wrapped
//! in `allOf`, `default: {}` on non-pointer struct fields, list and map extensions), and
//! helpers shared by the integration tests.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime};

use api::schema::SchemaLookup;
use fieldmanager::{FieldManager, FieldSet, GroupVersionKind, ObjectSchema, Path};
use serde_json::{Value, json};

pub struct Defs(pub BTreeMap<String, Value>);

impl SchemaLookup for Defs {
    fn definition(&self, name: &str) -> Option<&Value> {
        self.0.get(name)
    }
}

fn r(name: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}]})
}

fn r_default(name: &str) -> Value {
    json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}], "default": {}})
}

const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

pub fn defs() -> Defs {
    let mut m = BTreeMap::new();
    let mut add = |name: &str, v: Value| {
        m.insert(name.to_string(), v);
    };
    add(
        "io.k8s.apimachinery.pkg.apis.meta.v1.Time",
        json!({"type": "string", "format": "date-time"}),
    );
    add(
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        json!({"oneOf": [{"type": "integer"}, {"type": "string"}], "format": "int-or-string"}),
    );
    add(
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
    );
    add(
        "io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference",
        json!({
            "type": "object",
            "required": ["apiVersion", "kind", "name", "uid"],
            "properties": {
                "apiVersion": {"type": "string", "default": ""},
                "kind": {"type": "string", "default": ""},
                "name": {"type": "string", "default": ""},
                "uid": {"type": "string", "default": ""},
                "controller": {"type": "boolean"}
            },
            "x-kubernetes-map-type": "atomic"
        }),
    );
    add(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        json!({
            "type": "object",
            "properties": {
                "manager": {"type": "string"}, "operation": {"type": "string"},
                "apiVersion": {"type": "string"}, "time": r("io.k8s.apimachinery.pkg.apis.meta.v1.Time"),
                "fieldsType": {"type": "string"}, "fieldsV1": {"type": "object"},
                "subresource": {"type": "string"}
            }
        }),
    );
    add(
        META,
        json!({
            "type": "object",
            "properties": {
                "name": {"type": "string"},
                "generateName": {"type": "string"},
                "namespace": {"type": "string"},
                "uid": {"type": "string"},
                "resourceVersion": {"type": "string"},
                "generation": {"type": "integer", "format": "int64"},
                "creationTimestamp": r("io.k8s.apimachinery.pkg.apis.meta.v1.Time"),
                "labels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "annotations": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "finalizers": {
                    "type": "array", "items": {"type": "string", "default": ""},
                    "x-kubernetes-list-type": "set", "x-kubernetes-patch-strategy": "merge"
                },
                "ownerReferences": {
                    "type": "array",
                    "items": r_default("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference"),
                    "x-kubernetes-list-map-keys": ["uid"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "uid", "x-kubernetes-patch-strategy": "merge"
                },
                "managedFields": {
                    "type": "array",
                    "items": r_default("io.k8s.apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry"),
                    "x-kubernetes-list-type": "atomic"
                }
            }
        }),
    );
    add(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        json!({
            "type": "object",
            "properties": {
                "matchLabels": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "matchExpressions": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "atomic"}
            },
            "x-kubernetes-map-type": "atomic"
        }),
    );
    add(
        "io.k8s.api.core.v1.ContainerPort",
        json!({
            "type": "object",
            "required": ["containerPort"],
            "properties": {
                "containerPort": {"type": "integer", "format": "int32", "default": 0},
                "protocol": {"type": "string", "default": "TCP"},
                "name": {"type": "string"},
                "hostPort": {"type": "integer", "format": "int32"}
            }
        }),
    );
    add(
        "io.k8s.api.core.v1.EnvVar",
        json!({
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string", "default": ""}, "value": {"type": "string"}}
        }),
    );
    add(
        "io.k8s.api.core.v1.ResourceRequirements",
        json!({
            "type": "object",
            "properties": {
                "limits": {"type": "object", "additionalProperties": r("io.k8s.apimachinery.pkg.api.resource.Quantity")},
                "requests": {"type": "object", "additionalProperties": r("io.k8s.apimachinery.pkg.api.resource.Quantity")}
            }
        }),
    );
    add(
        "io.k8s.api.core.v1.Container",
        json!({
            "type": "object",
            "required": ["name"],
            "properties": {
                "name": {"type": "string", "default": ""},
                "image": {"type": "string"},
                "imagePullPolicy": {"type": "string"},
                "args": {"type": "array", "items": {"type": "string", "default": ""}, "x-kubernetes-list-type": "atomic"},
                "command": {"type": "array", "items": {"type": "string", "default": ""}},
                "env": {
                    "type": "array", "items": r_default("io.k8s.api.core.v1.EnvVar"),
                    "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"
                },
                "ports": {
                    "type": "array", "items": r_default("io.k8s.api.core.v1.ContainerPort"),
                    "x-kubernetes-list-map-keys": ["containerPort", "protocol"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "containerPort", "x-kubernetes-patch-strategy": "merge"
                },
                "resources": r_default("io.k8s.api.core.v1.ResourceRequirements")
            }
        }),
    );
    add(
        "io.k8s.api.core.v1.Toleration",
        json!({"type": "object", "properties": {"key": {"type": "string"}, "operator": {"type": "string"}}}),
    );
    add(
        "io.k8s.api.core.v1.PodSpec",
        json!({
            "type": "object",
            "required": ["containers"],
            "properties": {
                "containers": {
                    "type": "array", "items": r_default("io.k8s.api.core.v1.Container"),
                    "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"
                },
                "initContainers": {
                    "type": "array", "items": r_default("io.k8s.api.core.v1.Container"),
                    "x-kubernetes-list-map-keys": ["name"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge"
                },
                "nodeSelector": {
                    "type": "object", "additionalProperties": {"type": "string", "default": ""},
                    "x-kubernetes-map-type": "atomic"
                },
                "tolerations": {"type": "array", "items": r_default("io.k8s.api.core.v1.Toleration"), "x-kubernetes-list-type": "atomic"},
                "restartPolicy": {"type": "string"},
                "hostNetwork": {"type": "boolean"},
                "terminationGracePeriodSeconds": {"type": "integer", "format": "int64"}
            }
        }),
    );
    add(
        "io.k8s.api.core.v1.PodTemplateSpec",
        json!({
            "type": "object",
            "properties": {"metadata": r_default(META), "spec": r_default("io.k8s.api.core.v1.PodSpec")}
        }),
    );
    add(
        "io.k8s.api.apps.v1.RollingUpdateDeployment",
        json!({
            "type": "object",
            "properties": {
                "maxSurge": r("io.k8s.apimachinery.pkg.util.intstr.IntOrString"),
                "maxUnavailable": r("io.k8s.apimachinery.pkg.util.intstr.IntOrString")
            }
        }),
    );
    add(
        "io.k8s.api.apps.v1.DeploymentStrategy",
        json!({
            "type": "object",
            "properties": {
                "type": {"type": "string"},
                "rollingUpdate": r("io.k8s.api.apps.v1.RollingUpdateDeployment")
            }
        }),
    );
    add(
        "io.k8s.api.apps.v1.DeploymentCondition",
        json!({
            "type": "object", "required": ["type", "status"],
            "properties": {"type": {"type": "string", "default": ""}, "status": {"type": "string", "default": ""}, "reason": {"type": "string"}}
        }),
    );
    add(
        "io.k8s.api.apps.v1.DeploymentSpec",
        json!({
            "type": "object",
            "required": ["selector", "template"],
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "selector": r("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector"),
                "template": r_default("io.k8s.api.core.v1.PodTemplateSpec"),
                "strategy": r_default("io.k8s.api.apps.v1.DeploymentStrategy"),
                "minReadySeconds": {"type": "integer", "format": "int32"},
                "revisionHistoryLimit": {"type": "integer", "format": "int32"},
                "paused": {"type": "boolean"}
            }
        }),
    );
    add(
        "io.k8s.api.apps.v1.DeploymentStatus",
        json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "readyReplicas": {"type": "integer", "format": "int32"},
                "observedGeneration": {"type": "integer", "format": "int64"},
                "conditions": {
                    "type": "array", "items": r_default("io.k8s.api.apps.v1.DeploymentCondition"),
                    "x-kubernetes-list-map-keys": ["type"], "x-kubernetes-list-type": "map",
                    "x-kubernetes-patch-merge-key": "type", "x-kubernetes-patch-strategy": "merge"
                }
            }
        }),
    );
    add(
        "io.k8s.api.apps.v1.Deployment",
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": r_default(META),
                "spec": r_default("io.k8s.api.apps.v1.DeploymentSpec"),
                "status": r_default("io.k8s.api.apps.v1.DeploymentStatus")
            },
            "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
        }),
    );
    add(
        "io.k8s.api.core.v1.ConfigMap",
        json!({
            "type": "object",
            "properties": {
                "apiVersion": {"type": "string"},
                "kind": {"type": "string"},
                "metadata": r_default(META),
                "data": {"type": "object", "additionalProperties": {"type": "string", "default": ""}},
                "binaryData": {"type": "object", "additionalProperties": {"type": "string", "format": "byte"}},
                "immutable": {"type": "boolean"}
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "ConfigMap", "version": "v1"}]
        }),
    );
    Defs(m)
}

/// The schema of a custom resource `stable.example.com/v1 CronTab`.
pub fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": r(META),
            "spec": {
                "type": "object",
                "properties": {
                    "cronSpec": {"type": "string"},
                    "image": {"type": "string"},
                    "replicas": {"type": "integer"},
                    "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                    "hosts": {"type": "array", "items": {"type": "string"}},
                    "workers": {
                        "type": "array",
                        "items": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}},
                        "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]
                    },
                    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                    "selector": {
                        "type": "object", "additionalProperties": {"type": "string"},
                        "x-kubernetes-map-type": "atomic"
                    }
                }
            },
            "status": {"type": "object", "properties": {"phase": {"type": "string"}}}
        }
    })
}

pub fn deployment_gvk() -> GroupVersionKind {
    GroupVersionKind::new("apps", "v1", "Deployment")
}

pub fn crontab_gvk() -> GroupVersionKind {
    GroupVersionKind::new("stable.example.com", "v1", "CronTab")
}

pub fn deployment_root(defs: &Defs) -> &Value {
    defs.0.get("io.k8s.api.apps.v1.Deployment").unwrap()
}

pub fn configmap_root(defs: &Defs) -> &Value {
    defs.0.get("io.k8s.api.core.v1.ConfigMap").unwrap()
}

/// A field manager for Deployments at apps/v1 with upstream's reset fields.
pub fn deployments(defs: &Defs) -> FieldManager<'_> {
    FieldManager::new(
        ObjectSchema::builtin(deployment_root(defs), defs),
        deployment_gvk(),
    )
    .with_reset_fields(FieldSet::from_paths(&[Path::fields(&["status"])]))
}

pub fn at(seconds: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
}

/// A typical applied Deployment.
pub fn web_config(replicas: i64, image: &str) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": image, "ports": [{"containerPort": 80}]}]}
            }
        }
    })
}

/// Pretends the registry stored the object: gives it a uid as the store would.
pub fn stored(mut obj: Value) -> Value {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("uid".into(), json!("0b9f6a2e-1111-2222-3333-444455556666"));
    }
    obj
}

/// The managedFields entries of an object.
pub fn entries(obj: &Value) -> Vec<Value> {
    obj["metadata"]["managedFields"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The entry of a manager (and operation).
pub fn entry<'v>(obj: &'v Value, manager: &str, operation: &str) -> &'v Value {
    obj["metadata"]["managedFields"]
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|e| e["manager"] == manager && e["operation"] == operation)
        })
        .unwrap_or_else(|| panic!("no {operation} entry for {manager} in {obj:#}"))
}

/// The fieldsV1 of a manager's entry as upstream's exact text.
pub fn fields_of(obj: &Value, manager: &str, operation: &str) -> String {
    FieldSet::from_fields_v1(&entry(obj, manager, operation)["fieldsV1"])
        .unwrap()
        .to_json_string()
}

/// Whether a manager's entry owns the field at `path`.
pub fn owns(obj: &Value, manager: &str, operation: &str, path: &Path) -> bool {
    FieldSet::from_fields_v1(&entry(obj, manager, operation)["fieldsV1"])
        .unwrap()
        .has(path.elements())
}
