//! Lenient reading of objects held as JSON values.
//!
//! Upstream's printers read typed Go structs, where a missing field is the zero value. These
//! helpers give the same answers on JSON: a missing field, `null`, or a value of the wrong
//! JSON type reads as the zero value (`""`, `0`, `false`, empty list, absent map), so that a
//! malformed object still yields a row.

use serde_json::{Map, Value};

/// The value at `path` (object keys), if every step is an object holding the key.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for key in path {
        cur = cur.as_object()?.get(*key)?;
    }
    Some(cur)
}

/// A string field; `""` when missing or not a string.
pub(crate) fn string<'a>(v: &'a Value, path: &[&str]) -> &'a str {
    at(v, path).and_then(Value::as_str).unwrap_or("")
}

/// A string field that is set (present and a string), possibly empty: Go's `*string`.
pub(crate) fn opt_string<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    at(v, path).and_then(Value::as_str)
}

/// An integer field; `0` when missing or not an integer.
pub(crate) fn int(v: &Value, path: &[&str]) -> i64 {
    opt_int(v, path).unwrap_or(0)
}

/// An integer field that is set: Go's `*int32` / `*int64`.
pub(crate) fn opt_int(v: &Value, path: &[&str]) -> Option<i64> {
    as_int(at(v, path)?)
}

/// A JSON number as an integer (unsigned values beyond `i64` saturate).
pub(crate) fn as_int(v: &Value) -> Option<i64> {
    v.as_i64()
        .or_else(|| v.as_u64().map(|u| i64::try_from(u).unwrap_or(i64::MAX)))
}

/// A boolean field; `false` when missing or not a boolean.
pub(crate) fn boolean(v: &Value, path: &[&str]) -> bool {
    opt_bool(v, path).unwrap_or(false)
}

/// A boolean field that is set: Go's `*bool`.
pub(crate) fn opt_bool(v: &Value, path: &[&str]) -> Option<bool> {
    at(v, path).and_then(Value::as_bool)
}

/// A list field; empty when missing or not a list.
pub(crate) fn list<'a>(v: &'a Value, path: &[&str]) -> &'a [Value] {
    at(v, path)
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or(&[])
}

/// A map field, when present and an object.
pub(crate) fn object<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Map<String, Value>> {
    at(v, path).and_then(Value::as_object)
}

/// Whether a pointer-typed field is set: present, and an object (Go's non-nil `*Struct`).
pub(crate) fn is_set(v: &Value, path: &[&str]) -> bool {
    at(v, path).is_some_and(Value::is_object)
}

/// Whether a field is present and not `null` (any JSON type).
pub(crate) fn is_present(v: &Value, path: &[&str]) -> bool {
    at(v, path).is_some_and(|x| !x.is_null())
}

/// Number of entries of a map field (Go's `len(map)`); `0` when missing or not a map.
pub(crate) fn map_len(v: &Value, path: &[&str]) -> usize {
    object(v, path).map_or(0, Map::len)
}

/// `metadata.name`.
pub(crate) fn name(v: &Value) -> &str {
    string(v, &["metadata", "name"])
}

/// The value of a string-to-string map entry, as Go's `m[key]` with presence.
pub(crate) fn map_entry<'a>(m: Option<&'a Map<String, Value>>, key: &str) -> Option<&'a str> {
    m?.get(key)?.as_str()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_values() {
        let v = json!({"a": {"b": "x", "n": 3, "f": 1.5, "t": true, "l": [1], "m": {"k": "v"}}});
        assert_eq!(string(&v, &["a", "b"]), "x");
        assert_eq!(string(&v, &["a", "n"]), "");
        assert_eq!(string(&v, &["a", "b", "c"]), "");
        assert_eq!(int(&v, &["a", "n"]), 3);
        assert_eq!(int(&v, &["a", "f"]), 0);
        assert!(boolean(&v, &["a", "t"]));
        assert!(!boolean(&v, &["a", "b"]));
        assert_eq!(list(&v, &["a", "l"]).len(), 1);
        assert_eq!(list(&v, &["a", "m"]).len(), 0);
        assert_eq!(map_len(&v, &["a", "m"]), 1);
        assert!(is_set(&v, &["a", "m"]));
        assert!(!is_set(&v, &["a", "b"]));
        assert_eq!(map_entry(object(&v, &["a", "m"]), "k"), Some("v"));
        assert_eq!(as_int(&json!(u64::MAX)), Some(i64::MAX));
        assert_eq!(name(&json!([])), "");
    }
}
