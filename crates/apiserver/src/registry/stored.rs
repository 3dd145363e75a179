//! Objects as stored: JSON without `metadata.resourceVersion` (the store revision is the
//! resource version). Reads splice the revision into the bytes without re-serializing.

use bytes::{Bytes, BytesMut};
use serde_json::Value;

/// Serializes an object of `info` for the store in its storage form, without copying it
/// when that form is the served one: `metadata.resourceVersion` is taken out for the
/// encoding and put back.
pub fn encode(info: &api::catalog::ResourceInfo, obj: &mut Value) -> Vec<u8> {
    if super::convert::needs_conversion(info) {
        return encode_for_store(super::convert::to_storage(info, obj.clone()));
    }
    let meta = obj.get_mut("metadata").and_then(Value::as_object_mut);
    let rv = meta.and_then(|m| m.remove("resourceVersion"));
    let bytes = to_stored_bytes(obj);
    if let Some(rv) = rv
        && let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("resourceVersion".into(), rv);
    }
    bytes
}

/// Serializes an object for the store, dropping `metadata.resourceVersion`.
pub fn encode_for_store(mut obj: Value) -> Vec<u8> {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("resourceVersion");
    }
    to_stored_bytes(&obj)
}

/// `obj` as JSON, without the serializer's spare capacity: the store and its watch ring
/// hold these bytes.
fn to_stored_bytes(obj: &Value) -> Vec<u8> {
    let mut bytes = serde_json::to_vec(obj).unwrap_or_default();
    bytes.shrink_to_fit();
    bytes
}

/// Parses stored bytes and sets `metadata.resourceVersion`.
pub fn decode_stored(bytes: &[u8], rv: i64) -> Option<Value> {
    let mut v: Value = serde_json::from_slice(bytes).ok()?;
    api::meta::set_str(&mut v, "resourceVersion", rv.to_string());
    Some(v)
}

/// The stored bytes with `"resourceVersion":"<rv>"` inserted at the start of the top-level
/// `metadata` object. Falls back to a parse and re-serialization for unusual shapes.
pub fn with_resource_version(bytes: &[u8], rv: i64) -> Bytes {
    if let Some(at) = metadata_body_offset(bytes) {
        let field = format!("\"resourceVersion\":\"{rv}\"");
        let rest = &bytes[at..];
        let needs_comma = rest
            .iter()
            .find(|b| !b.is_ascii_whitespace())
            .is_some_and(|b| *b != b'}');
        let mut out = BytesMut::with_capacity(bytes.len() + field.len() + 1);
        out.extend_from_slice(&bytes[..at]);
        out.extend_from_slice(field.as_bytes());
        if needs_comma {
            out.extend_from_slice(b",");
        }
        out.extend_from_slice(rest);
        return out.freeze();
    }
    match decode_stored(bytes, rv) {
        Some(v) => Bytes::from(serde_json::to_vec(&v).unwrap_or_default()),
        None => Bytes::copy_from_slice(bytes),
    }
}

/// Offset just after the `{` of the top-level `metadata` object.
fn metadata_body_offset(b: &[u8]) -> Option<usize> {
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(b, i);
        match b.get(i)? {
            b'}' => return None,
            b',' => {
                i += 1;
                continue;
            }
            b'"' => {}
            _ => return None,
        }
        let key_start = i + 1;
        let key_end = skip_string(b, i)?;
        let key = &b[key_start..key_end - 1];
        i = skip_ws(b, key_end);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(b, i + 1);
        if key == b"metadata" {
            return (b.get(i) == Some(&b'{')).then_some(i + 1);
        }
        i = skip_value(b, i)?;
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while b.get(i).is_some_and(u8::is_ascii_whitespace) {
        i += 1;
    }
    i
}

/// `b[i]` is `"`; returns the offset after the closing quote.
fn skip_string(b: &[u8], mut i: usize) -> Option<usize> {
    i += 1;
    loop {
        match b.get(i)? {
            b'\\' => i += 2,
            b'"' => return Some(i + 1),
            _ => i += 1,
        }
    }
}

/// Skips one JSON value starting at `i`; returns the offset after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match b.get(j)? {
                    b'"' => {
                        j = skip_string(b, j)?;
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth -= 1;
                        if depth == 0 {
                            return Some(j + 1);
                        }
                    }
                    _ => {}
                }
                j += 1;
            }
        }
        _ => {
            let mut j = i;
            while let Some(c) = b.get(j) {
                if matches!(c, b',' | b'}' | b']') || c.is_ascii_whitespace() {
                    break;
                }
                j += 1;
            }
            Some(j)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn splices() {
        let obj = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "resourceVersion": "9"}, "spec": {}});
        let stored = encode_for_store(obj.clone());
        let out = with_resource_version(&stored, 42);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "42");
        assert_eq!(v["metadata"]["name"], "p");
        let empty_meta = br#"{"a":"x}{\"","metadata":{ },"b":[1,{"c":2}]}"#;
        let v: Value = serde_json::from_slice(&with_resource_version(empty_meta, 7)).unwrap();
        assert_eq!(v["metadata"], json!({"resourceVersion": "7"}));
        let meta_last = br#"{"b":[{"metadata":{}}],"n":1.5e3,"t":true,"metadata":{"name":"z"}}"#;
        let v: Value = serde_json::from_slice(&with_resource_version(meta_last, 3)).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "3");
        assert!(v["b"][0]["metadata"].get("resourceVersion").is_none());
        // No metadata at all: parsed and set.
        let v: Value = serde_json::from_slice(&with_resource_version(br#"{"a":1}"#, 5)).unwrap();
        assert_eq!(v["metadata"]["resourceVersion"], "5");
    }

    #[test]
    fn garbage_never_panics() {
        for g in [
            &b""[..],
            b"{",
            b"{\"metadata\"",
            b"{\"metadata\":",
            b"[1,2]",
            b"{\"a\":\"\\",
        ] {
            let _ = with_resource_version(g, 1);
        }
    }
}
