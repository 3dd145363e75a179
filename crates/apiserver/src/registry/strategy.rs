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

/// Behaviour of one resource.
pub trait Strategy: Send + Sync {
    /// Decodes (normalizing through the type where there is one) and reports unknown
    /// fields.
    fn decode(&self, info: &ResourceInfo, obj: &Value) -> Result<Decoded, ApiError>;

    /// Upstream's defaults.
    fn default(&self, info: &ResourceInfo, obj: &mut Value);

    /// What a create resets or derives (e.g. status, phase).
    fn prepare_for_create(&self, _info: &ResourceInfo, _obj: &mut Value) {}

    /// What an update resets from the old object (beyond the generic status handling).
    fn prepare_for_update(&self, _info: &ResourceInfo, _new: &mut Value, _old: &Value) {}

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

    /// The OpenAPI schema of a custom resource's version (built-ins use `api::schema`).
    fn openapi_schema(&self) -> Option<&Value> {
        None
    }
}

/// The strategy of a built-in resource.
pub struct Builtin {
    pub event_ttl: Duration,
}

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
            Some(Ok(d)) => Ok(d),
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
        match (info.group.as_str(), info.plural.as_str()) {
            ("", "namespaces") => {
                obj["status"] = json!({"phase": "Active"});
                let spec = obj
                    .as_object_mut()
                    .map(|m| m.entry("spec").or_insert_with(|| json!({})));
                if let Some(spec) = spec.and_then(Value::as_object_mut) {
                    let has = spec
                        .get("finalizers")
                        .and_then(Value::as_array)
                        .is_some_and(|a| a.iter().any(|f| f == "kubernetes"));
                    if !has {
                        let list = spec.entry("finalizers").or_insert_with(|| json!([]));
                        if let Some(a) = list.as_array_mut() {
                            a.push(json!("kubernetes"));
                        }
                    }
                }
            }
            ("", "pods") => {
                let qos = qos_class(obj_spec(obj));
                let status = obj
                    .as_object_mut()
                    .map(|m| m.entry("status").or_insert_with(|| json!({})));
                if let Some(status) = status.and_then(Value::as_object_mut) {
                    status.insert("phase".into(), json!("Pending"));
                    status.entry("qosClass").or_insert_with(|| json!(qos));
                }
            }
            _ => {}
        }
    }

    fn validate(&self, info: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
        api::kinds::validate_create(&info.group, &info.version, &info.kind, obj)
    }

    fn validate_update(&self, info: &ResourceInfo, new: &Value, old: &Value) -> Vec<FieldError> {
        api::kinds::validate_update(&info.group, &info.version, &info.kind, new, old)
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

fn obj_spec(obj: &Value) -> &Value {
    obj.get("spec").unwrap_or(&Value::Null)
}

/// Upstream's QoS class of a pod spec: Guaranteed when every container has equal CPU and
/// memory requests and limits, BestEffort when none has any, Burstable otherwise.
pub fn qos_class(spec: &Value) -> &'static str {
    let containers = ["initContainers", "containers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten())
        .collect::<Vec<_>>();
    let mut any = false;
    let mut guaranteed = true;
    for c in containers {
        let requests = &c["resources"]["requests"];
        let limits = &c["resources"]["limits"];
        for r in ["cpu", "memory"] {
            let req = requests.get(r).filter(|v| !v.is_null());
            let lim = limits.get(r).filter(|v| !v.is_null());
            if req.is_some() || lim.is_some() {
                any = true;
            }
            match (req, lim) {
                (_, None) => guaranteed = false,
                (Some(q), Some(l)) if q != l => guaranteed = false,
                _ => {}
            }
        }
    }
    if !any {
        "BestEffort"
    } else if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos() {
        assert_eq!(
            qos_class(&json!({"containers": [{"name": "a"}]})),
            "BestEffort"
        );
        assert_eq!(
            qos_class(
                &json!({"containers": [{"resources": {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}}]})
            ),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&json!({"containers": [{"resources": {"requests": {"cpu": "1"}}}]})),
            "Burstable"
        );
    }
}
