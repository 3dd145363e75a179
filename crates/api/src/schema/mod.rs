//! OpenAPI schemas of the built-in types, with the Kubernetes extensions that patching and
//! server-side apply rely on (`x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, …).
//!
//! Schemas are OpenAPI v3 schema objects as JSON values; references are written
//! `#/components/schemas/<definition name>` (e.g. `io.k8s.api.apps.v1.Deployment`).

pub mod extensions;

use serde_json::Value;

/// Where definitions are looked up by name.
pub trait SchemaLookup: Send + Sync {
    /// A definition by its name, e.g. `io.k8s.api.core.v1.PodSpec`.
    fn definition(&self, name: &str) -> Option<&Value>;
}

/// The definition name a `$ref` points at (`#/components/schemas/X` or
/// `#/definitions/X`).
pub fn ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix("#/components/schemas/")
        .or_else(|| reference.strip_prefix("#/definitions/"))
}

/// Follows `$ref` (directly, or as the single member of `allOf`, as OpenAPI v3 wraps
/// references that carry a description) until a schema with content is reached. Unknown
/// references resolve to the schema itself.
pub fn resolve<'a>(lookup: &'a dyn SchemaLookup, mut schema: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        });
        match reference.and_then(ref_name).and_then(|n| lookup.definition(n)) {
            Some(next) => schema = next,
            None => return schema,
        }
    }
    schema
}
