//! Per-resource behaviour plugged into the generic registry: decoding and defaulting,
//! validation, what create and update reset, selectable fields, TTLs.
//!
//! Built-in kinds decode through their typed definitions and use `api::kinds` for
//! upstream's defaulting and validation; a handful of resources add their own rules here
//! (status handling is generic: resources with a `status` subresource ignore status on
//! the main resource and everything but status on the subresource).

use std::time::Duration;

use api::catalog::ResourceInfo;
use api::kinds::Decoded;
use api::{ApiError, FieldError};
use serde_json::{Value, json};

use super::sparse::Keep;

/// Behaviour of one resource.
pub trait Strategy: Send + Sync {
    /// Decodes (normalizing through the type where there is one) and reports unknown
    /// fields.
    fn decode(&self, info: &ResourceInfo, obj: &Value) -> Result<Decoded, ApiError>;

    /// Upstream's defaults.
    fn default(&self, info: &ResourceInfo, obj: &mut Value);

    /// What a create resets or derives. By default: status is cleared when the resource
    /// has a status subresource, and generation starts at 1.
    fn prepare_for_create(&self, info: &ResourceInfo, obj: &mut Value) {
        if info.subresource("status").is_some()
            && let Some(m) = obj.as_object_mut()
        {
            m.remove("status");
        }
        api::meta::metadata_mut(obj).insert("generation".into(), json!(1));
    }

    /// What an update of the main resource keeps from the old object. By default: status
    /// (when the resource has a status subresource); generation is bumped when anything
    /// outside metadata and status changed.
    fn prepare_for_update(&self, info: &ResourceInfo, new: &mut Value, old: &Value) {
        if info.subresource("status").is_some()
            && let Some(m) = new.as_object_mut()
        {
            match old.get("status") {
                Some(s) => m.insert("status".into(), s.clone()),
                None => m.remove("status"),
            };
        }
        let g = api::meta::generation(old);
        let g = if spec_changed(old, new) { g + 1 } else { g };
        api::meta::metadata_mut(new).insert("generation".into(), json!(g));
    }

    /// What an update through the status subresource keeps from the old object. By
    /// default: everything but status.
    fn prepare_for_status_update(&self, _info: &ResourceInfo, new: &mut Value, old: &Value) {
        let status = new.get("status").cloned();
        let mut merged = old.clone();
        if let Some(m) = merged.as_object_mut() {
            match status {
                Some(s) => m.insert("status".into(), s),
                None => m.remove("status"),
            };
        }
        *new = merged;
    }

    fn validate(&self, info: &ResourceInfo, obj: &Value) -> Vec<FieldError>;

    fn validate_update(&self, info: &ResourceInfo, new: &Value, old: &Value) -> Vec<FieldError>;

    /// Field-selector fields beyond `metadata.name` and `metadata.namespace`.
    fn fields(&self, _obj: &Value) -> Vec<(String, String)> {
        Vec::new()
    }

    /// The field names a field selector may use.
    fn supported_fields(&self) -> &'static [&'static str] {
        &["metadata.name", "metadata.namespace"]
    }

    /// Objects written with a TTL (Events).
    fn ttl(&self) -> Option<Duration> {
        None
    }

    /// Whether PUT of a missing object creates it.
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// Why the object `name` may never be deleted (upstream's REST `Delete` overrides).
    fn delete_forbidden(&self, _info: &ResourceInfo, _name: &str) -> Option<&'static str> {
        None
    }

    /// The OpenAPI schema of a custom resource's version (built-ins use `api::schema`).
    fn openapi_schema(&self) -> Option<&Value> {
        None
    }
}

/// The strategy of a built-in resource.
pub struct Builtin {
    pub event_ttl: Duration,
}

/// What of an object the watch cache reads to index it: `kind`, the metadata's name,
/// namespace, labels and initializers, and every member [`Builtin`]'s `fields` reads. The
/// cache decodes only these (see [`super::sparse`]). **Invariant:** whatever `fields` reads
/// is named here (checked by `indexed_members_are_what_fields_read`).
pub const INDEXED: Keep = Keep::Members(&[
    ("kind", Keep::All),
    (
        "metadata",
        Keep::Members(&[
            ("name", Keep::All),
            ("namespace", Keep::All),
            ("labels", Keep::All),
            ("initializers", Keep::All),
        ]),
    ),
    (
        "spec",
        Keep::Members(&[
            ("nodeName", Keep::All),
            ("restartPolicy", Keep::All),
            ("schedulerName", Keep::All),
            ("serviceAccountName", Keep::All),
            ("hostNetwork", Keep::All),
            ("unschedulable", Keep::All),
        ]),
    ),
    (
        "status",
        Keep::Members(&[
            ("phase", Keep::All),
            ("podIP", Keep::All),
            ("podIPs", Keep::All),
            ("nominatedNodeName", Keep::All),
            ("replicas", Keep::All),
            ("succeeded", Keep::All),
        ]),
    ),
    ("involvedObject", Keep::All),
    ("reason", Keep::All),
    ("reportingComponent", Keep::All),
    ("source", Keep::All),
    ("type", Keep::All),
]);

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str()
}

fn push_field(out: &mut Vec<(String, String)>, name: &str, v: Option<&str>) {
    out.push((name.to_string(), v.unwrap_or_default().to_string()));
}

const POD_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "spec.hostNetwork",
    "status.phase",
    "status.podIP",
    "status.podIPs",
    "status.nominatedNodeName",
];

const EVENT_FIELDS: &[&str] = &[
    "metadata.name",
    "metadata.namespace",
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
    "regarding.kind",
    "regarding.namespace",
    "regarding.name",
    "regarding.uid",
    "regarding.apiVersion",
    "regarding.resourceVersion",
    "regarding.fieldPath",
    "reportingController",
];

impl Strategy for Builtin {
    fn decode(&self, info: &ResourceInfo, obj: &Value) -> Result<Decoded, ApiError> {
        match api::kinds::decode(&info.group, &info.version, &info.kind, obj) {
            Some(Ok(d)) => {
                let problems = api::kinds::validate::decode_errors(
                    &info.group,
                    &info.version,
                    &info.kind,
                    &d.object,
                );
                if problems.is_empty() {
                    Ok(d)
                } else {
                    Err(ApiError::bad_request(format!(
                        "{} in version \"{}\" cannot be handled as a {}: {}",
                        info.kind,
                        info.version,
                        info.kind,
                        problems.join(", ")
                    )))
                }
            }
            Some(Err(e)) => Err(ApiError::bad_request(format!(
                "{} in version \"{}\" cannot be handled as a {}: {e}",
                info.kind, info.version, info.kind
            ))),
            None => Ok(Decoded {
                object: obj.clone(),
                unknown_fields: Vec::new(),
            }),
        }
    }

    fn default(&self, info: &ResourceInfo, obj: &mut Value) {
        api::kinds::apply_defaults(&info.group, &info.version, &info.kind, obj);
    }

    fn prepare_for_create(&self, info: &ResourceInfo, obj: &mut Value) {
        api::kinds::defaults::prepare_for_create(&info.group, &info.version, &info.kind, obj);
    }

    fn prepare_for_update(&self, info: &ResourceInfo, new: &mut Value, old: &Value) {
        api::kinds::defaults::prepare_for_update(&info.group, &info.version, &info.kind, new, old);
    }

    fn prepare_for_status_update(&self, info: &ResourceInfo, new: &mut Value, old: &Value) {
        api::kinds::defaults::prepare_for_status_update(
            &info.group,
            &info.version,
            &info.kind,
            new,
            old,
        );
    }

    fn validate(&self, info: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
        let mut errs = api::kinds::validate_create(&info.group, &info.version, &info.kind, obj);
        // Admission policies carry CEL, which the admission crate compiles.
        errs.extend(admission::policy::validation::validate(
            &info.group,
            &info.kind,
            obj,
        ));
        errs
    }

    fn validate_update(&self, info: &ResourceInfo, new: &Value, old: &Value) -> Vec<FieldError> {
        let mut errs =
            api::kinds::validate_update(&info.group, &info.version, &info.kind, new, old);
        errs.extend(admission::policy::validation::validate(
            &info.group,
            &info.kind,
            new,
        ));
        errs
    }

    fn delete_forbidden(&self, info: &ResourceInfo, name: &str) -> Option<&'static str> {
        api::kinds::undeletable(&info.group, &info.kind, name)
    }

    fn fields(&self, obj: &Value) -> Vec<(String, String)> {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        let mut out = Vec::new();
        match kind {
            "Pod" => {
                for f in [
                    "nodeName",
                    "restartPolicy",
                    "schedulerName",
                    "serviceAccountName",
                ] {
                    push_field(&mut out, &format!("spec.{f}"), str_at(obj, &["spec", f]));
                }
                let host_network = obj["spec"]["hostNetwork"].as_bool().unwrap_or(false);
                push_field(
                    &mut out,
                    "spec.hostNetwork",
                    Some(&host_network.to_string()),
                );
                for f in ["phase", "podIP", "nominatedNodeName"] {
                    push_field(
                        &mut out,
                        &format!("status.{f}"),
                        str_at(obj, &["status", f]),
                    );
                }
                let ips: Vec<&str> = obj["status"]["podIPs"]
                    .as_array()
                    .map(|a| a.iter().filter_map(|i| i["ip"].as_str()).collect())
                    .unwrap_or_default();
                push_field(&mut out, "status.podIPs", Some(&ips.join(",")));
            }
            "Event" => {
                for f in [
                    "kind",
                    "namespace",
                    "name",
                    "uid",
                    "apiVersion",
                    "resourceVersion",
                    "fieldPath",
                ] {
                    let v = str_at(obj, &["involvedObject", f]);
                    push_field(&mut out, &format!("involvedObject.{f}"), v);
                    push_field(&mut out, &format!("regarding.{f}"), v);
                }
                push_field(&mut out, "reason", str_at(obj, &["reason"]));
                push_field(
                    &mut out,
                    "reportingComponent",
                    str_at(obj, &["reportingComponent"]),
                );
                push_field(
                    &mut out,
                    "reportingController",
                    str_at(obj, &["reportingComponent"]),
                );
                push_field(&mut out, "source", str_at(obj, &["source", "component"]));
                push_field(&mut out, "type", str_at(obj, &["type"]));
            }
            "Secret" => push_field(&mut out, "type", str_at(obj, &["type"])),
            "Node" => {
                let u = obj["spec"]["unschedulable"].as_bool().unwrap_or(false);
                push_field(&mut out, "spec.unschedulable", Some(&u.to_string()));
            }
            "Namespace" => push_field(&mut out, "status.phase", str_at(obj, &["status", "phase"])),
            "ReplicaSet" | "ReplicationController" => {
                let r = obj["status"]["replicas"].as_i64().unwrap_or(0);
                push_field(&mut out, "status.replicas", Some(&r.to_string()));
            }
            "Job" => {
                let s = obj["status"]["succeeded"].as_i64().unwrap_or(0);
                push_field(&mut out, "status.successful", Some(&s.to_string()));
            }
            _ => {}
        }
        out
    }

    fn ttl(&self) -> Option<Duration> {
        Some(self.event_ttl)
    }
}

/// Which strategy behaviour a built-in resource has beyond the defaults.
pub fn builtin_for(info: &ResourceInfo, event_ttl: Duration) -> Box<dyn Strategy> {
    let base = Builtin { event_ttl };
    match info.kind.as_str() {
        "Pod" => Box::new(WithFields {
            base,
            fields: POD_FIELDS,
            ttl: false,
            create_on_update: false,
        }),
        "Event" => Box::new(WithFields {
            base,
            fields: EVENT_FIELDS,
            ttl: true,
            create_on_update: true,
        }),
        "Secret" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "metadata.namespace", "type"],
            ttl: false,
            create_on_update: false,
        }),
        "Node" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "spec.unschedulable"],
            ttl: false,
            create_on_update: false,
        }),
        "Namespace" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "status.phase"],
            ttl: false,
            create_on_update: false,
        }),
        "ReplicaSet" | "ReplicationController" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "metadata.namespace", "status.replicas"],
            ttl: false,
            create_on_update: false,
        }),
        "Job" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "metadata.namespace", "status.successful"],
            ttl: false,
            create_on_update: false,
        }),
        "Endpoints" | "Lease" => Box::new(WithFields {
            base,
            fields: &["metadata.name", "metadata.namespace"],
            ttl: false,
            create_on_update: true,
        }),
        _ => Box::new(WithFields {
            base,
            fields: &["metadata.name", "metadata.namespace"],
            ttl: false,
            create_on_update: false,
        }),
    }
}

/// The built-in strategy with a resource's field selectors, TTL and PUT-creates rule.
struct WithFields {
    base: Builtin,
    fields: &'static [&'static str],
    ttl: bool,
    create_on_update: bool,
}

impl Strategy for WithFields {
    fn decode(&self, info: &ResourceInfo, obj: &Value) -> Result<Decoded, ApiError> {
        self.base.decode(info, obj)
    }
    fn default(&self, info: &ResourceInfo, obj: &mut Value) {
        self.base.default(info, obj)
    }
    fn prepare_for_create(&self, info: &ResourceInfo, obj: &mut Value) {
        self.base.prepare_for_create(info, obj)
    }
    fn prepare_for_update(&self, info: &ResourceInfo, new: &mut Value, old: &Value) {
        self.base.prepare_for_update(info, new, old)
    }
    fn prepare_for_status_update(&self, info: &ResourceInfo, new: &mut Value, old: &Value) {
        self.base.prepare_for_status_update(info, new, old)
    }
    fn validate(&self, info: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
        self.base.validate(info, obj)
    }
    fn validate_update(&self, info: &ResourceInfo, new: &Value, old: &Value) -> Vec<FieldError> {
        self.base.validate_update(info, new, old)
    }
    fn fields(&self, obj: &Value) -> Vec<(String, String)> {
        self.base.fields(obj)
    }
    fn supported_fields(&self) -> &'static [&'static str] {
        self.fields
    }
    fn ttl(&self) -> Option<Duration> {
        if self.ttl { self.base.ttl() } else { None }
    }
    fn allow_create_on_update(&self) -> bool {
        self.create_on_update
    }
    fn delete_forbidden(&self, info: &ResourceInfo, name: &str) -> Option<&'static str> {
        self.base.delete_forbidden(info, name)
    }
}

/// Whether anything outside metadata and status changed (which bumps generation).
fn spec_changed(old: &Value, new: &Value) -> bool {
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("metadata");
            m.remove("status");
        }
        v
    };
    strip(old) != strip(new)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Objects of every kind `Builtin::fields` has fields for, with every member it reads
    /// set, and members it does not read beside them.
    fn samples() -> Vec<Value> {
        let meta = json!({
            "name": "a", "namespace": "ns", "uid": "u", "labels": {"app": "web"},
            "annotations": {"n": "v"}, "initializers": {"pending": [{"name": "i.example.com"}]},
            "managedFields": [{"manager": "m"}],
        });
        vec![
            json!({"kind": "Pod", "metadata": meta,
                   "spec": {"nodeName": "n1", "restartPolicy": "Never", "schedulerName": "s",
                            "serviceAccountName": "sa", "hostNetwork": true,
                            "containers": [{"name": "c", "image": "i"}]},
                   "status": {"phase": "Running", "podIP": "10.0.0.1", "nominatedNodeName": "n2",
                              "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
                              "conditions": [{"type": "Ready", "status": "True"}]}}),
            json!({"kind": "Event", "metadata": meta,
                   "involvedObject": {"kind": "Pod", "namespace": "ns", "name": "a", "uid": "u",
                                      "apiVersion": "v1", "resourceVersion": "7",
                                      "fieldPath": "spec.containers{c}"},
                   "reason": "Scheduled", "reportingComponent": "sched",
                   "source": {"component": "kubelet", "host": "n1"}, "type": "Normal",
                   "message": "m", "count": 2}),
            json!({"kind": "Secret", "metadata": meta, "type": "Opaque", "data": {"k": "dg=="}}),
            json!({"kind": "Node", "metadata": meta, "spec": {"unschedulable": true, "podCIDR": "x"},
                   "status": {"capacity": {"cpu": "4"}}}),
            json!({"kind": "Namespace", "metadata": meta, "status": {"phase": "Terminating"}}),
            json!({"kind": "ReplicaSet", "metadata": meta, "spec": {"replicas": 3},
                   "status": {"replicas": 2, "readyReplicas": 1}}),
            json!({"kind": "ReplicationController", "metadata": meta, "status": {"replicas": 5}}),
            json!({"kind": "Job", "metadata": meta, "status": {"succeeded": 4, "failed": 1}}),
            json!({"kind": "ConfigMap", "metadata": meta, "data": {"k": "v"}}),
        ]
    }

    #[test]
    fn indexed_members_are_what_fields_read() {
        let strategy = Builtin {
            event_ttl: Duration::from_secs(3600),
        };
        for full in samples() {
            let bytes = serde_json::to_vec(&full).unwrap();
            let sparse = super::super::sparse::decode(&bytes, &INDEXED).unwrap();
            assert_eq!(strategy.fields(&sparse), strategy.fields(&full), "{full}");
            assert_eq!(api::meta::name(&sparse), api::meta::name(&full));
            assert_eq!(api::meta::namespace(&sparse), api::meta::namespace(&full));
            assert!(api::meta::labels(&sparse).eq(api::meta::labels(&full)));
            assert_eq!(
                api::kinds::initializers::is_uninitialized(&sparse),
                api::kinds::initializers::is_uninitialized(&full)
            );
            // Nothing else is built.
            assert!(sparse["metadata"].get("managedFields").is_none());
        }
    }
}
