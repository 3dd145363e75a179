//! Conversion of definitions to the Swagger 2.0 form served at `/openapi/v2`.
//!
//! Upstream's v2 spec differs from its v3 spec in ways kubectl depends on: kubectl ≤ 1.28
//! parses the whole v2 document before `explain` or any validated `create`/`apply`, and its
//! parser (`k8s.io/kube-openapi/pkg/util/proto`) rejects a document with a reference that
//! carries a type or properties, an array without exactly one item schema, or a definition
//! with several types. So references point at `#/definitions/`, sit beside their description
//! instead of inside `allOf`, `int-or-string` and quantities are strings with a format, and
//! what v2 cannot express (`oneOf`, `anyOf`, `not`, `nullable`) is dropped. Defaults are
//! pruned, as upstream's server does when it publishes v2.

use serde_json::{Map, Value, json};

use super::names::{INT_OR_STRING, QUANTITY};
use super::{V2_REF_PREFIX, V3_REF_PREFIX};

/// The v2 form of a named definition.
pub fn definition_to_v2(name: &str, definition: &Value) -> Value {
    let description = definition.get("description").cloned();
    let special = match name {
        INT_OR_STRING => Some(json!({"type": "string", "format": "int-or-string"})),
        QUANTITY => Some(json!({"type": "string"})),
        _ => None,
    };
    match special {
        Some(mut s) => {
            if let (Some(d), Some(obj)) = (description, s.as_object_mut()) {
                obj.insert("description".to_string(), d);
            }
            s
        }
        None => schema_to_v2(definition),
    }
}

/// A reference in v2 form (`#/definitions/…`); other strings are returned unchanged.
pub fn reference_to_v2(reference: &str) -> String {
    match reference.strip_prefix(V3_REF_PREFIX) {
        Some(name) => format!("{V2_REF_PREFIX}{name}"),
        None => reference.to_string(),
    }
}

fn single_ref(all_of: &Value) -> Option<&Value> {
    match all_of.as_array().map(Vec::as_slice) {
        Some([only]) => {
            let obj = only.as_object()?;
            if obj.len() == 1 {
                obj.get("$ref")
            } else {
                None
            }
        }
        _ => None,
    }
}

/// Converts one schema (recursively) to v2 form.
pub fn schema_to_v2(schema: &Value) -> Value {
    let Some(map) = schema.as_object() else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (key, value) in map {
        match key.as_str() {
            "$ref" => {
                let r = value.as_str().map(reference_to_v2).unwrap_or_default();
                out.insert(key.clone(), Value::String(r));
            }
            "allOf" => {
                if let Some(r) = single_ref(value).and_then(Value::as_str) {
                    out.insert("$ref".to_string(), Value::String(reference_to_v2(r)));
                }
            }
            "oneOf" | "anyOf" | "not" | "nullable" | "default" => {}
            "properties" | "patternProperties" => {
                let converted: Map<String, Value> = value
                    .as_object()
                    .map(|props| {
                        props
                            .iter()
                            .map(|(k, v)| (k.clone(), schema_to_v2(v)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(converted));
            }
            "additionalProperties" | "items" => {
                let converted = match value {
                    Value::Object(_) => schema_to_v2(value),
                    Value::Array(items) => Value::Array(items.iter().map(schema_to_v2).collect()),
                    other => other.clone(),
                };
                out.insert(key.clone(), converted);
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if out.contains_key("$ref") {
        for k in ["type", "properties"] {
            out.remove(k);
        }
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_are_unwrapped_and_redirected() {
        let v3 = json!({
            "type": "object",
            "properties": {
                "a": {"allOf": [{"$ref": "#/components/schemas/X"}], "description": "d", "default": {}},
                "b": {"type": "array", "items": {"$ref": "#/components/schemas/Y"}},
                "c": {"type": "object", "additionalProperties": {"$ref": "#/components/schemas/Z"}},
                "d": {"type": "string", "nullable": true, "default": ""},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "K", "version": "v1"}],
        });
        let v2 = schema_to_v2(&v3);
        assert_eq!(
            v2["properties"]["a"],
            json!({"$ref": "#/definitions/X", "description": "d"})
        );
        assert_eq!(v2["properties"]["b"]["items"]["$ref"], "#/definitions/Y");
        assert_eq!(
            v2["properties"]["c"]["additionalProperties"]["$ref"],
            "#/definitions/Z"
        );
        assert_eq!(v2["properties"]["d"], json!({"type": "string"}));
        assert_eq!(
            v2["x-kubernetes-group-version-kind"],
            v3["x-kubernetes-group-version-kind"]
        );
    }

    #[test]
    fn special_definitions() {
        let ios = json!({"description": "d", "format": "int-or-string", "oneOf": [{"type": "integer"}, {"type": "string"}]});
        assert_eq!(
            definition_to_v2(INT_OR_STRING, &ios),
            json!({"description": "d", "type": "string", "format": "int-or-string"})
        );
        let q = json!({"description": "q", "oneOf": [{"type": "string"}, {"type": "number"}]});
        assert_eq!(
            definition_to_v2(QUANTITY, &q),
            json!({"description": "q", "type": "string"})
        );
        assert_eq!(reference_to_v2("other"), "other");
    }
}
