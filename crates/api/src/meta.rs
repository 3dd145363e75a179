//! Reading and writing `metadata` (and `apiVersion`/`kind`) of objects held as JSON values,
//! the form the generic registry works on for every resource, built-in or custom.

use serde_json::{Map, Value};

/// The `metadata` map of an object, if it has one.
pub fn metadata(obj: &Value) -> Option<&Map<String, Value>> {
    obj.get("metadata")?.as_object()
}

/// The `metadata` map, created when missing (or when `metadata` is not an object).
pub fn metadata_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.is_object() {
        *obj = Value::Object(Map::new());
    }
    let map = match obj {
        Value::Object(m) => m,
        _ => unreachable_object(),
    };
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if !meta.is_object() {
        *meta = Value::Object(Map::new());
    }
    match meta {
        Value::Object(m) => m,
        _ => unreachable_object(),
    }
}

// Both call sites have just made the value an object.
#[allow(clippy::panic)]
fn unreachable_object() -> ! {
    panic!("value was just made an object")
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    metadata(obj)?.get(field)?.as_str()
}

pub fn name(obj: &Value) -> Option<&str> {
    meta_str(obj, "name").filter(|s| !s.is_empty())
}

pub fn namespace(obj: &Value) -> Option<&str> {
    meta_str(obj, "namespace").filter(|s| !s.is_empty())
}

pub fn uid(obj: &Value) -> Option<&str> {
    meta_str(obj, "uid").filter(|s| !s.is_empty())
}

pub fn resource_version(obj: &Value) -> Option<&str> {
    meta_str(obj, "resourceVersion").filter(|s| !s.is_empty())
}

pub fn generate_name(obj: &Value) -> Option<&str> {
    meta_str(obj, "generateName").filter(|s| !s.is_empty())
}

const GENERATED_NAME_CHARS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's name generator (`names.SimpleNameGenerator`): `prefix` (cut to leave room)
/// plus five characters drawn from `random` (the caller's random bytes; at least five).
pub fn generated_name(prefix: &str, random: &[u8]) -> String {
    let base: String = prefix.chars().take(63 - 5).collect();
    let suffix: String = random
        .iter()
        .take(5)
        .map(|b| GENERATED_NAME_CHARS[usize::from(*b) % GENERATED_NAME_CHARS.len()] as char)
        .collect();
    format!("{base}{suffix}")
}

pub fn deletion_timestamp(obj: &Value) -> Option<&str> {
    meta_str(obj, "deletionTimestamp")
}

pub fn generation(obj: &Value) -> i64 {
    metadata(obj)
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

pub fn set_str(obj: &mut Value, field: &str, value: impl Into<String>) {
    metadata_mut(obj).insert(field.to_string(), Value::String(value.into()));
}

pub fn remove(obj: &mut Value, field: &str) -> Option<Value> {
    metadata_mut(obj).remove(field)
}

/// Labels as (key, value) pairs; non-string values are ignored.
pub fn labels(obj: &Value) -> impl Iterator<Item = (&str, &str)> {
    string_map(obj, "labels")
}

pub fn annotations(obj: &Value) -> impl Iterator<Item = (&str, &str)> {
    string_map(obj, "annotations")
}

fn string_map<'a>(obj: &'a Value, field: &str) -> impl Iterator<Item = (&'a str, &'a str)> {
    metadata(obj)
        .and_then(|m| m.get(field))
        .and_then(Value::as_object)
        .into_iter()
        .flat_map(|m| m.iter())
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

pub fn label<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("labels")?.get(key)?.as_str()
}

pub fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    metadata(obj)?.get("annotations")?.get(key)?.as_str()
}

pub fn finalizers(obj: &Value) -> Vec<&str> {
    metadata(obj)
        .and_then(|m| m.get("finalizers"))
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// `apiVersion` and `kind` of an object.
pub fn type_meta(obj: &Value) -> (Option<&str>, Option<&str>) {
    (
        obj.get("apiVersion").and_then(Value::as_str),
        obj.get("kind").and_then(Value::as_str),
    )
}

pub fn set_type_meta(obj: &mut Value, api_version: &str, kind: &str) {
    if let Value::Object(m) = obj {
        m.insert("apiVersion".into(), Value::String(api_version.to_string()));
        m.insert("kind".into(), Value::String(kind.to_string()));
    }
}

/// Owner references with `controller: true`.
pub fn controller_ref(obj: &Value) -> Option<&Value> {
    metadata(obj)?
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn read_and_write() {
        let mut o = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b", "n": 1}}});
        assert_eq!(name(&o), Some("p"));
        assert_eq!(namespace(&o), None);
        assert_eq!(labels(&o).collect::<Vec<_>>(), vec![("a", "b")]);
        set_str(&mut o, "namespace", "default");
        assert_eq!(namespace(&o), Some("default"));
        let mut weird = json!({"metadata": 5});
        set_str(&mut weird, "name", "x");
        assert_eq!(name(&weird), Some("x"));
        let mut not_obj = json!([1]);
        set_str(&mut not_obj, "name", "y");
        assert_eq!(name(&not_obj), Some("y"));
        assert_eq!(type_meta(&o), (Some("v1"), Some("Pod")));
    }
}
