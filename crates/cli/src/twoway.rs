//! Patches computed on the client, as kubectl computes them: a JSON merge patch between two
//! documents (evanphx/json-patch's `CreateMergePatch`, used by `label`, `annotate` and
//! `edit` of custom resources) and a two-way strategic merge patch
//! (`strategicpatch.CreateTwoWayMergePatch`, used by `edit` and `set` on built-in kinds),
//! driven by the patch strategies and merge keys of the type's OpenAPI schema. Pure
//! functions of their inputs.

use api::schema::SchemaLookup;
use serde_json::{Map, Value};

/// RFC 7386 merge patch turning `original` into `modified` (keys removed become `null`,
/// objects recurse, anything else is replaced whole).
pub fn create_merge_patch(original: &Value, modified: &Value) -> Value {
    match (original, modified) {
        (Value::Object(o), Value::Object(m)) => {
            let mut patch = Map::new();
            for (k, mv) in m {
                match o.get(k) {
                    None => {
                        patch.insert(k.clone(), mv.clone());
                    }
                    Some(ov) if ov == mv => {}
                    Some(ov @ Value::Object(_)) if mv.is_object() => {
                        patch.insert(k.clone(), create_merge_patch(ov, mv));
                    }
                    Some(_) => {
                        patch.insert(k.clone(), mv.clone());
                    }
                }
            }
            for k in o.keys() {
                if !m.contains_key(k) {
                    patch.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(patch)
        }
        _ => modified.clone(),
    }
}

/// The schema of a built-in kind (`{"$ref": …}` into [`api::schema::builtin`]), or `None`
/// for kinds the client has no type for (custom resources: kubectl sends a merge patch).
pub fn builtin_schema(group: &str, version: &str, kind: &str) -> Option<Value> {
    let name = api::schema::definition_for(group, version, kind)?;
    Some(serde_json::json!({ "$ref": format!("#/components/schemas/{name}") }))
}

/// Why no patch could be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TwoWayError {
    /// A precondition key changed (apiVersion, kind, metadata.name).
    PreconditionFailed,
    Other(String),
}

/// upstream's `CreateTwoWayMergePatch(original, modified, dataStruct)` with
/// `SetElementOrder` directives; `schema` is the type's schema (`Null` for no type
/// information: maps merge, lists replace). Fails with
/// [`TwoWayError::PreconditionFailed`] when apiVersion, kind or metadata.name differ.
pub fn create_two_way(
    original: &Value,
    modified: &Value,
    schema: &Value,
    lookup: &dyn SchemaLookup,
) -> Result<Value, TwoWayError> {
    if !(original.is_object() && modified.is_object()) {
        return Err(TwoWayError::Other("expected objects".into()));
    }
    let patch = match patch::two_way_strategic_merge_patch(original, modified, schema, lookup) {
        Ok(Value::Object(p)) => p,
        Ok(_) => Map::new(),
        Err(e) => return Err(TwoWayError::Other(e)),
    };
    for key in ["apiVersion", "kind", "managedFields"] {
        if patch.contains_key(key) {
            return Err(TwoWayError::PreconditionFailed);
        }
    }
    if patch
        .get("metadata")
        .and_then(Value::as_object)
        .is_some_and(|md| md.contains_key("name"))
    {
        return Err(TwoWayError::PreconditionFailed);
    }
    Ok(Value::Object(patch))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn smp(o: Value, m: Value) -> Value {
        let schema = builtin_schema("apps", "v1", "Deployment").unwrap();
        create_two_way(&o, &m, &schema, api::schema::builtin()).unwrap()
    }

    fn deploy(containers: Value) -> Value {
        json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
               "spec":{"template":{"spec":{"containers":containers}}}})
    }

    #[test]
    fn merge_patch_adds_changes_and_removes() {
        let o = json!({"a":1,"b":{"c":1,"d":2},"e":[1]});
        let m = json!({"a":1,"b":{"c":2},"e":[2],"f":"x"});
        assert_eq!(
            create_merge_patch(&o, &m),
            json!({"b":{"c":2,"d":null},"e":[2],"f":"x"})
        );
        assert_eq!(create_merge_patch(&o, &o), json!({}));
    }

    #[test]
    fn image_change_uses_merge_key_and_element_order() {
        let p = smp(
            deploy(json!([{"name":"a","image":"x"},{"name":"b","image":"y"}])),
            deploy(json!([{"name":"a","image":"x"},{"name":"b","image":"z"}])),
        );
        assert_eq!(
            p,
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"a"},{"name":"b"}],
                "containers":[{"image":"z","name":"b"}]}}}})
        );
    }

    #[test]
    fn removed_container_is_a_delete_directive() {
        let p = smp(
            deploy(json!([{"name":"a","image":"x"},{"name":"b","image":"y"}])),
            deploy(json!([{"name":"b","image":"y"}])),
        );
        assert_eq!(
            p,
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"b"}],
                "containers":[{"$patch":"delete","name":"a"}]}}}})
        );
    }

    #[test]
    fn env_list_and_scalar_fields() {
        let o = deploy(
            json!([{"name":"a","image":"x","env":[{"name":"A","value":"1"}],"args":["p","q"]}]),
        );
        let m = deploy(
            json!([{"name":"a","image":"x","env":[{"name":"A","value":"1"},{"name":"B","value":"2"}],"args":["q"]}]),
        );
        let p = smp(o, m);
        let c = &p["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["env"], json!([{"name":"B","value":"2"}]));
        assert_eq!(
            c["$setElementOrder/env"],
            json!([{"name":"A"},{"name":"B"}])
        );
        // args has no merge strategy: replaced whole.
        assert_eq!(c["args"], json!(["q"]));
        assert_eq!(c["name"], "a");
    }

    #[test]
    fn primitive_merge_list_uses_delete_from_primitive_list() {
        // PodSpec has no primitive merge list; finalizers do (metadata.finalizers: merge).
        let o =
            json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","finalizers":["a","b"]}});
        let m =
            json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","finalizers":["b","c"]}});
        let schema = builtin_schema("", "v1", "Pod").unwrap();
        let p = create_two_way(&o, &m, &schema, api::schema::builtin()).unwrap();
        assert_eq!(
            p,
            json!({"metadata":{"$deleteFromPrimitiveList/finalizers":["a"],
                "$setElementOrder/finalizers":["b","c"],"finalizers":["c"]}})
        );
    }

    #[test]
    fn retain_keys_on_strategy() {
        let o = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
            "spec":{"strategy":{"type":"RollingUpdate","rollingUpdate":{"maxSurge":1}}}});
        let m = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
            "spec":{"strategy":{"type":"Recreate"}}});
        let p = smp(o, m);
        assert_eq!(
            p,
            json!({"spec":{"strategy":{"$retainKeys":["type"],"rollingUpdate":null,"type":"Recreate"}}})
        );
    }

    #[test]
    fn name_change_is_refused() {
        let o = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"}});
        let m = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}});
        let schema = builtin_schema("", "v1", "ConfigMap").unwrap();
        assert_eq!(
            create_two_way(&o, &m, &schema, api::schema::builtin()),
            Err(TwoWayError::PreconditionFailed)
        );
        // Labels are a plain map.
        let m = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labels":{"x":"y"}},"data":{"k":"v"}});
        assert_eq!(
            create_two_way(&o, &m, &schema, api::schema::builtin()).unwrap(),
            json!({"data":{"k":"v"},"metadata":{"labels":{"x":"y"}}})
        );
    }
}
