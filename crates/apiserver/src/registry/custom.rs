//! Custom resources: each served version of each CustomResourceDefinition becomes a
//! resource of the generic registry, validated, pruned and defaulted by its structural
//! OpenAPI v3 schema, as upstream's apiextensions-apiserver does.

use std::sync::Arc;

use api::catalog::{ResourceInfo, SubresourceInfo};
use api::kinds::Decoded;
use api::{ApiError, FieldError};
use serde_json::{Map, Value, json};

use super::strategy::Strategy;

/// The strategy of one version of a custom resource.
pub struct Custom {
    /// The version's `openAPIV3Schema` (`None`: anything goes).
    schema: Option<Value>,
    /// The schema as published (with `apiVersion`, `kind` and `metadata`), which
    /// server-side apply types objects by, as upstream's CRD type converter does.
    published_schema: Option<Value>,
    /// The version the objects are stored in (conversion strategy None: only `apiVersion`
    /// differs between versions).
    storage_api_version: String,
    has_status: bool,
    scale: Option<ScalePaths>,
}

/// Where the scale subresource reads and writes.
#[derive(Clone, Debug)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One served version of a CRD.
pub struct CustomResource {
    pub info: ResourceInfo,
    pub strategy: Arc<dyn Strategy>,
    pub columns: printers::CustomColumns,
}

/// The resources a CRD defines: one per served version.
pub fn resources_of(crd: &Value) -> Vec<CustomResource> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let kind = names["kind"].as_str().unwrap_or_default();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    if api::meta::deletion_timestamp(crd).is_some() {
        return Vec::new();
    }
    let singular = names["singular"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map_or_else(|| kind.to_ascii_lowercase(), str::to_string);
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let versions = spec["versions"].as_array().cloned().unwrap_or_default();
    let storage_version = versions
        .iter()
        .find(|v| v["storage"].as_bool() == Some(true))
        .and_then(|v| v["name"].as_str())
        .unwrap_or_default()
        .to_string();
    let storage_api_version = format!("{group}/{storage_version}");
    let mut out: Vec<CustomResource> = Vec::new();
    for v in versions
        .iter()
        .filter(|v| v["served"].as_bool() == Some(true))
    {
        let version = v["name"].as_str().unwrap_or_default();
        if version.is_empty() {
            continue;
        }
        let subs = &v["subresources"];
        let mut subresources = Vec::new();
        if subs.get("status").is_some_and(|s| !s.is_null()) {
            subresources.push(SubresourceInfo {
                name: "status".into(),
                group: group.into(),
                version: version.into(),
                kind: kind.into(),
                verbs: vec!["get".into(), "patch".into(), "update".into()],
            });
        }
        let scale = subs
            .get("scale")
            .filter(|s| !s.is_null())
            .map(|s| ScalePaths {
                spec_replicas: s["specReplicasPath"]
                    .as_str()
                    .unwrap_or(".spec.replicas")
                    .to_string(),
                status_replicas: s["statusReplicasPath"]
                    .as_str()
                    .unwrap_or(".status.replicas")
                    .to_string(),
                label_selector: s["labelSelectorPath"].as_str().map(str::to_string),
            });
        if scale.is_some() {
            subresources.push(SubresourceInfo {
                name: "scale".into(),
                group: "autoscaling".into(),
                version: "v1".into(),
                kind: "Scale".into(),
                verbs: vec!["get".into(), "patch".into(), "update".into()],
            });
        }
        let info = ResourceInfo {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            singular: singular.clone(),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            short_names: strings(&names["shortNames"]),
            categories: strings(&names["categories"]),
            verbs: api::catalog::STANDARD_VERBS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            subresources,
            storage_prefix: format!("/registry/{group}/{plural}"),
            storage_version: storage_version.clone(),
        };
        let schema = v["schema"]["openAPIV3Schema"]
            .as_object()
            .map(|m| Value::Object(m.clone()));
        let published_schema = schema.as_ref().and_then(|_| published(crd, version));
        let strategy = Custom {
            schema,
            published_schema,
            storage_api_version: storage_api_version.clone(),
            has_status: info.subresource("status").is_some(),
            scale,
        };
        let columns = printers::CustomColumns::new(&printers::printer_columns(crd, version));
        out.push(CustomResource {
            info,
            strategy: Arc::new(strategy),
            columns,
        });
    }
    out
}

/// The OpenAPI v3 definition of one served version of a CRD, as upstream publishes it.
fn published(crd: &Value, version: &str) -> Option<Value> {
    let versions: Vec<api::schema::CustomResourceVersion> =
        api::schema::CustomResourceVersion::from_crd(crd)
            .into_iter()
            .filter(|v| v.version == version)
            .collect();
    let name = versions.first()?.definition_name();
    api::schema::Schemas::with_custom_resources(&versions)
        .get(&name)
        .cloned()
}

impl Custom {
    pub fn scale_paths(&self) -> Option<&ScalePaths> {
        self.scale.as_ref()
    }

    pub fn storage_api_version(&self) -> &str {
        &self.storage_api_version
    }
}

impl Strategy for Custom {
    fn decode(&self, _info: &ResourceInfo, obj: &Value) -> Result<Decoded, ApiError> {
        let mut object = obj.clone();
        let mut unknown = Vec::new();
        if let Some(schema) = &self.schema
            && let Some(m) = object.as_object_mut()
        {
            for (k, v) in m.iter_mut() {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(prop) = schema["properties"].get(k) {
                    prune(v, prop, k, &mut unknown);
                }
            }
            let allowed = |k: &str| {
                matches!(k, "apiVersion" | "kind" | "metadata")
                    || schema["properties"].get(k).is_some()
                    || schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true)
            };
            let drop: Vec<String> = m.keys().filter(|k| !allowed(k)).cloned().collect();
            for k in drop {
                m.remove(&k);
                unknown.push(k);
            }
        }
        Ok(Decoded {
            object,
            unknown_fields: unknown,
        })
    }

    fn default(&self, _info: &ResourceInfo, obj: &mut Value) {
        if let Some(schema) = &self.schema {
            apply_defaults(obj, schema);
        }
    }

    fn validate(&self, info: &ResourceInfo, obj: &Value) -> Vec<FieldError> {
        let mut errs = Vec::new();
        if let Some(schema) = &self.schema
            && let Some(m) = obj.as_object()
        {
            for (k, v) in m {
                if matches!(k.as_str(), "apiVersion" | "kind" | "metadata") {
                    continue;
                }
                if let Some(prop) = schema["properties"].get(k) {
                    validate(v, prop, k, &mut errs);
                }
            }
            if let Some(req) = schema["required"].as_array() {
                for r in req.iter().filter_map(Value::as_str) {
                    if !m.contains_key(r) && !matches!(r, "apiVersion" | "kind" | "metadata") {
                        errs.push(FieldError::required(r, ""));
                    }
                }
            }
        }
        let _ = info;
        errs
    }

    fn validate_update(&self, info: &ResourceInfo, new: &Value, _old: &Value) -> Vec<FieldError> {
        self.validate(info, new)
    }

    fn prepare_for_create(&self, _info: &ResourceInfo, _obj: &mut Value) {
        let _ = self.has_status;
    }

    fn openapi_schema(&self) -> Option<&Value> {
        self.published_schema.as_ref()
    }
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// Drops fields the structural schema does not know (unless it preserves unknown fields).
fn prune(v: &mut Value, schema: &Value, path: &str, unknown: &mut Vec<String>) {
    if schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true)
        && schema.get("properties").is_none()
        && schema.get("additionalProperties").is_none()
    {
        return;
    }
    match v {
        Value::Object(m) => {
            if let Some(props) = schema["properties"].as_object() {
                let preserve =
                    schema["x-kubernetes-preserve-unknown-fields"].as_bool() == Some(true);
                let mut drop = Vec::new();
                for (k, child) in m.iter_mut() {
                    match props.get(k) {
                        Some(s) => prune(child, s, &child_path(path, k), unknown),
                        None if !preserve => drop.push(k.clone()),
                        None => {}
                    }
                }
                for k in drop {
                    m.remove(&k);
                    unknown.push(child_path(path, &k));
                }
            } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, child) in m.iter_mut() {
                    prune(child, add, &child_path(path, k), unknown);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, child) in items.iter_mut().enumerate() {
                    prune(child, item_schema, &format!("{path}[{i}]"), unknown);
                }
            }
        }
        _ => {}
    }
}

/// Fills `default`s of the schema into missing fields.
fn apply_defaults(v: &mut Value, schema: &Value) {
    match v {
        Value::Object(m) => {
            if let Some(props) = schema["properties"].as_object() {
                for (k, s) in props {
                    if !m.contains_key(k)
                        && let Some(d) = s.get("default")
                    {
                        m.insert(k.clone(), d.clone());
                    }
                    if let Some(child) = m.get_mut(k) {
                        apply_defaults(child, s);
                    }
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for child in items {
                    apply_defaults(child, item_schema);
                }
            }
        }
        _ => {}
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// OpenAPI v3 validation as upstream's (kube-openapi) validator reports it.
fn validate(v: &Value, schema: &Value, path: &str, errs: &mut Vec<FieldError>) {
    if v.is_null() && schema["nullable"].as_bool() == Some(true) {
        return;
    }
    let int_or_string = schema["x-kubernetes-int-or-string"].as_bool() == Some(true);
    if let Some(t) = schema["type"].as_str() {
        let actual = type_name(v);
        let ok = actual == t
            || (t == "number" && actual == "integer")
            || (int_or_string && matches!(actual, "integer" | "string"));
        if !ok {
            errs.push(FieldError {
                kind: api::status::FieldErrorType::TypeInvalid,
                field: path.to_string(),
                bad_value: Some(Value::String(actual.to_string())),
                detail: format!("{path} in body must be of type {t}: {actual:?}"),
            });
            return;
        }
    }
    if let Some(allowed) = schema["enum"].as_array()
        && !allowed.contains(v)
    {
        let list: Vec<String> = allowed.iter().map(|a| a.to_string()).collect();
        errs.push(FieldError {
            kind: api::status::FieldErrorType::NotSupported,
            field: path.to_string(),
            bad_value: Some(v.clone()),
            detail: format!("supported values: {}", list.join(", ")),
        });
    }
    match v {
        Value::Number(n) => {
            let x = n.as_f64().unwrap_or(0.0);
            if let Some(min) = schema["minimum"].as_f64() {
                let exclusive = schema["exclusiveMinimum"].as_bool() == Some(true);
                if x < min || (exclusive && x == min) {
                    errs.push(FieldError::invalid(
                        path,
                        v.clone(),
                        format!(
                            "{path} in body should be greater than or equal to {}",
                            fmt_num(min)
                        ),
                    ));
                }
            }
            if let Some(max) = schema["maximum"].as_f64() {
                let exclusive = schema["exclusiveMaximum"].as_bool() == Some(true);
                if x > max || (exclusive && x == max) {
                    errs.push(FieldError::invalid(
                        path,
                        v.clone(),
                        format!(
                            "{path} in body should be less than or equal to {}",
                            fmt_num(max)
                        ),
                    ));
                }
            }
        }
        Value::String(s) => {
            let len = s.chars().count();
            if let Some(min) = schema["minLength"].as_u64()
                && (len as u64) < min
            {
                errs.push(FieldError::invalid(
                    path,
                    v.clone(),
                    format!("{path} in body should be at least {min} chars long"),
                ));
            }
            if let Some(max) = schema["maxLength"].as_u64()
                && (len as u64) > max
            {
                errs.push(FieldError::too_long(
                    path,
                    usize::try_from(max).unwrap_or(usize::MAX),
                ));
            }
        }
        Value::Array(items) => {
            if let Some(min) = schema["minItems"].as_u64()
                && (items.len() as u64) < min
            {
                errs.push(FieldError::invalid(
                    path,
                    v.clone(),
                    format!("{path} in body should have at least {min} items"),
                ));
            }
            if let Some(max) = schema["maxItems"].as_u64()
                && (items.len() as u64) > max
            {
                errs.push(FieldError::too_many(
                    path,
                    items.len(),
                    usize::try_from(max).unwrap_or(usize::MAX),
                ));
            }
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter().enumerate() {
                    validate(item, item_schema, &format!("{path}[{i}]"), errs);
                }
            }
        }
        Value::Object(m) => {
            if let Some(req) = schema["required"].as_array() {
                for r in req.iter().filter_map(Value::as_str) {
                    if !m.contains_key(r) {
                        errs.push(FieldError::required(child_path(path, r), ""));
                    }
                }
            }
            if let Some(props) = schema["properties"].as_object() {
                for (k, child) in m {
                    if let Some(s) = props.get(k) {
                        validate(child, s, &child_path(path, k), errs);
                    }
                }
            } else if let Some(add) = schema.get("additionalProperties").filter(|a| a.is_object()) {
                for (k, child) in m {
                    validate(child, add, &child_path(path, k), errs);
                }
            }
        }
        _ => {}
    }
}

fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// The status a CRD gets once its resources are served.
pub fn established_status(crd: &Value, now: &str) -> Value {
    let names = crd["spec"]["names"].clone();
    let stored: Vec<Value> = crd["spec"]["versions"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter(|v| v["storage"].as_bool() == Some(true))
                .filter_map(|v| v.get("name").cloned())
                .collect()
        })
        .unwrap_or_default();
    let mut accepted = Map::new();
    accepted.insert("plural".into(), names["plural"].clone());
    json!({
        "conditions": [
            {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts", "message": "no conflicts found", "lastTransitionTime": now},
            {"type": "Established", "status": "True", "reason": "InitialNamesAccepted", "message": "the initial names have been accepted", "lastTransitionTime": now},
        ],
        "acceptedNames": names,
        "storedVersions": stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn crd() -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "required": ["size"], "properties": {
                            "size": {"type": "integer", "minimum": 1},
                            "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                        }}
                    }}},
                    "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.size"}}
                }]
            }
        })
    }

    #[test]
    fn crd_to_resources() {
        let rs = resources_of(&crd());
        assert_eq!(rs.len(), 1);
        let info = &rs[0].info;
        assert_eq!(info.storage_prefix, "/registry/example.com/widgets");
        assert!(info.subresource("status").is_some() && info.subresource("scale").is_some());
        assert_eq!(info.short_names, vec!["wd"]);
    }

    #[test]
    fn prune_default_validate() {
        let rs = resources_of(&crd());
        let (info, s) = (&rs[0].info, &rs[0].strategy);
        let obj = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
            "spec": {"size": 0, "bogus": 1, "free": {"anything": [1]}}, "extra": true});
        let d = s.decode(info, &obj).unwrap();
        assert_eq!(d.unknown_fields, vec!["spec.bogus", "extra"]);
        let mut o = d.object;
        s.default(info, &mut o);
        assert_eq!(o["spec"]["mode"], "a");
        assert_eq!(o["spec"]["free"]["anything"][0], 1);
        let errs = s.validate(info, &o);
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "spec.size");
        let errs = s.validate(info, &json!({"spec": {"size": "x", "mode": "c"}}));
        assert_eq!(errs.len(), 2, "{errs:?}");
        let errs = s.validate(info, &json!({"spec": {}}));
        assert_eq!(errs[0].field, "spec.size");
    }
}
