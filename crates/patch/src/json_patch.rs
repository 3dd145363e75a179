//! JSON patch (RFC 6902) as upstream's API server applies it: evanphx/json-patch v4 (the
//! `gopkg.in/evanphx/json-patch.v4` package Kubernetes 1.27–1.33 use), with its behaviour and
//! error messages, including where it departs from the RFC:
//!
//! - a path's first segment is ignored (`a/b` addresses `/b`), and a path without `/` is
//!   missing;
//! - `null` values count as missing when walking a path, and a `test` of a missing value
//!   against `null` succeeds;
//! - `replace` of a missing object member adds it; `replace` of the whole document with a
//!   scalar does nothing;
//! - `copy` from a missing object member copies `null`;
//! - negative array indices count from the end (`add` at `-1` appends);
//! - `copy` may add at most 3 MiB in total (the API server's `JSONPatchMaxCopyBytes`), and a
//!   patch may hold at most 10000 operations (the patch handler's limit).

use serde_json::{Map, Value};

use crate::error::PatchError;
use crate::gofmt::{depth, go_json_len};
use crate::{MAX_DEPTH, UPSTREAM_NIL_DEREFERENCE};

/// Limits of a JSON patch, as upstream's API server sets them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JsonPatchLimits {
    /// The most operations one patch may hold (upstream: 10000); more is 413.
    pub max_operations: usize,
    /// The most bytes `copy` operations may add in total (upstream: `JSONPatchMaxCopyBytes`,
    /// 3 MiB); 0 for no limit.
    pub max_copy_bytes: u64,
}

impl Default for JsonPatchLimits {
    fn default() -> Self {
        JsonPatchLimits {
            max_operations: 10_000,
            max_copy_bytes: 3 * 1024 * 1024,
        }
    }
}

/// Applies a JSON patch (RFC 6902) to a document, with upstream's limits.
pub fn json_patch(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    json_patch_with_limits(doc, patch, JsonPatchLimits::default())
}

/// Applies a JSON patch (RFC 6902) to a document, with the given limits.
pub fn json_patch_with_limits(
    doc: &Value,
    patch: &Value,
    limits: JsonPatchLimits,
) -> Result<Value, PatchError> {
    let ops = decode(patch)?;
    if depth(patch) > MAX_DEPTH + 2 {
        return Err(PatchError::TooDeep { limit: MAX_DEPTH });
    }
    if ops.len() > limits.max_operations {
        return Err(PatchError::TooManyOperations {
            max: limits.max_operations,
            count: ops.len(),
        });
    }
    let mut doc = match doc {
        Value::Object(_) | Value::Array(_) => doc.clone(),
        Value::Null => Value::Object(Map::new()),
        other => {
            return Err(PatchError::JsonPatchApply(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.partialDoc",
                json_kind(other)
            )));
        }
    };
    let mut copied: u64 = 0;
    for op in ops {
        let Some(op) = op else {
            return Err(apply_err("Unexpected kind: unknown".to_string()));
        };
        let op = Op(op);
        let result = match op.kind() {
            "add" => add(&mut doc, &op),
            "remove" => remove(&mut doc, &op),
            "replace" => replace(&mut doc, &op),
            "move" => move_op(&mut doc, &op),
            "test" => test(&doc, &op),
            "copy" => copy(&mut doc, &op, &mut copied, limits.max_copy_bytes),
            other => Err(Failure::Apply(format!("Unexpected kind: {other}"))),
        };
        match result {
            Ok(()) => {}
            Err(Failure::Apply(msg)) => return Err(apply_err(msg)),
            Err(Failure::Fatal(e)) => return Err(e),
        }
    }
    Ok(doc)
}

fn apply_err(msg: String) -> PatchError {
    PatchError::JsonPatchApply(msg)
}

enum Failure {
    /// An operation failed with evanphx's message.
    Apply(String),
    /// Refused for another reason (depth, upstream crash).
    Fatal(PatchError),
}

impl From<String> for Failure {
    fn from(msg: String) -> Self {
        Failure::Apply(msg)
    }
}

/// Go's name of a JSON value's kind in decoding errors.
fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Decodes the patch as `[]map[string]*json.RawMessage`: `null` is no operation, a `null`
/// item is an operation without fields.
fn decode(patch: &Value) -> Result<Vec<Option<&Map<String, Value>>>, PatchError> {
    let items = match patch {
        Value::Null => return Ok(Vec::new()),
        Value::Array(items) => items,
        other => {
            return Err(PatchError::JsonPatchDecode(format!(
                "json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                json_kind(other)
            )));
        }
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Value::Object(map) => ops.push(Some(map)),
            Value::Null => ops.push(None),
            other => {
                return Err(PatchError::JsonPatchDecode(format!(
                    "json: cannot unmarshal {} into Go value of type jsonpatch.Operation",
                    json_kind(other)
                )));
            }
        }
    }
    Ok(ops)
}

struct Op<'a>(&'a Map<String, Value>);

impl Op<'_> {
    fn kind(&self) -> &str {
        match self.0.get("op") {
            Some(Value::String(s)) => s,
            _ => "unknown",
        }
    }

    fn string_field(&self, name: &str, missing: &str) -> Result<&str, String> {
        match self.0.get(name) {
            None | Some(Value::Null) => Err(format!("{missing}: missing value")),
            Some(Value::String(s)) => Ok(s),
            Some(other) => Err(format!(
                "json: cannot unmarshal {} into Go value of type string",
                json_kind(other)
            )),
        }
    }

    fn path(&self) -> Result<&str, String> {
        self.string_field("path", "operation missing path field")
    }

    fn from(&self) -> Result<&str, String> {
        self.string_field("from", "operation, missing from field")
    }

    /// The operation's value: `None` when the operation has no `value` member.
    fn value(&self) -> Option<&Value> {
        self.0.get("value")
    }
}

/// RFC 6901 unescaping: `~1` then `~0`, left to right.
fn decode_key(k: &str) -> String {
    let mut out = String::with_capacity(k.len());
    let mut chars = k.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '~' {
            match chars.peek() {
                Some('1') => {
                    out.push('/');
                    chars.next();
                    continue;
                }
                Some('0') => {
                    out.push('~');
                    chars.next();
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

/// Go's `strconv.Atoi`, with its error messages.
fn atoi(s: &str) -> Result<i64, String> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "strconv.Atoi: parsing {}: invalid syntax",
            crate::gofmt::go_quote(s)
        ));
    }
    let negative = s.starts_with('-');
    let mut value: i64 = 0;
    for b in digits.bytes() {
        let d = i64::from(b - b'0');
        value = match value.checked_mul(10).and_then(|v| {
            if negative {
                v.checked_sub(d)
            } else {
                v.checked_add(d)
            }
        }) {
            Some(v) => v,
            None => {
                return Err(format!(
                    "strconv.Atoi: parsing {}: value out of range",
                    crate::gofmt::go_quote(s)
                ));
            }
        };
    }
    Ok(value)
}

fn invalid_index(idx: i64) -> String {
    format!("Unable to access invalid index: {idx}: invalid index referenced")
}

fn len_i64(len: usize) -> i64 {
    i64::try_from(len).unwrap_or(i64::MAX)
}

/// Index of an existing element (`partialArray.get`, `set`).
fn existing_index(len: usize, key: &str) -> Result<usize, String> {
    let mut idx = atoi(key)?;
    let n = len_i64(len);
    if idx < 0 {
        if idx < -n {
            return Err(invalid_index(idx));
        }
        idx += n;
    }
    if idx >= n {
        return Err(invalid_index(idx));
    }
    usize::try_from(idx).map_err(|_| invalid_index(idx))
}

/// Index of an element to remove (`partialArray.remove`: the upper bound is checked first).
fn remove_index(len: usize, key: &str) -> Result<usize, String> {
    let mut idx = atoi(key)?;
    let n = len_i64(len);
    if idx >= n {
        return Err(invalid_index(idx));
    }
    if idx < 0 {
        if idx < -n {
            return Err(invalid_index(idx));
        }
        idx += n;
    }
    usize::try_from(idx).map_err(|_| invalid_index(idx))
}

/// Position to insert at (`partialArray.add`): `len` for `-`.
fn insert_index(len: usize, key: &str) -> Result<usize, String> {
    if key == "-" {
        return Ok(len);
    }
    let mut idx =
        atoi(key).map_err(|e| format!("value was not a proper array index: '{key}': {e}"))?;
    let size = len_i64(len) + 1;
    if idx >= size {
        return Err(invalid_index(idx));
    }
    if idx < 0 {
        if idx < -size {
            return Err(invalid_index(idx));
        }
        idx += size;
    }
    usize::try_from(idx).map_err(|_| invalid_index(idx))
}

/// `findObject`: the container a path's last segment is looked up in, and that segment,
/// unescaped. `None` when the path is missing (fewer than two segments, or an intermediate
/// value that is absent, `null` or a scalar).
fn find_container<'d>(doc: &'d mut Value, path: &str) -> Option<(&'d mut Value, String, usize)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let parts = &split[1..split.len() - 1];
    let key = decode_key(split[split.len() - 1]);
    let mut cur = doc;
    for part in parts {
        let part = decode_key(part);
        let next = match cur {
            Value::Object(map) => map.get_mut(&part)?,
            Value::Array(items) => {
                let idx = existing_index(items.len(), &part).ok()?;
                items.get_mut(idx)?
            }
            _ => return None,
        };
        match next {
            Value::Object(_) | Value::Array(_) => cur = next,
            _ => return None,
        }
    }
    Some((cur, key, split.len() - 1))
}

/// `container.get`: `Ok(None)` for a missing or `null` object member or array item.
fn get<'c>(con: &'c Value, key: &str) -> Result<Option<&'c Value>, String> {
    match con {
        Value::Object(map) => Ok(map.get(key).filter(|v| !v.is_null())),
        Value::Array(items) => {
            let idx = existing_index(items.len(), key)?;
            Ok(items.get(idx).filter(|v| !v.is_null()))
        }
        _ => Ok(None),
    }
}

/// `container.add`.
fn add_to(con: &mut Value, key: String, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key, value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = insert_index(items.len(), &key)?;
            items.insert(idx, value);
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `container.set` (replace).
fn set_in(con: &mut Value, key: String, value: Value) -> Result<(), String> {
    match con {
        Value::Object(map) => {
            map.insert(key, value);
            Ok(())
        }
        Value::Array(items) => {
            let idx = existing_index(items.len(), &key)?;
            if let Some(slot) = items.get_mut(idx) {
                *slot = value;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// `container.remove`.
fn remove_from(con: &mut Value, key: &str) -> Result<Value, String> {
    match con {
        Value::Object(map) => map
            .remove(key)
            .ok_or_else(|| format!("Unable to remove nonexistent key: {key}: missing value")),
        Value::Array(items) => {
            let idx = remove_index(items.len(), key)?;
            Ok(items.remove(idx))
        }
        _ => Ok(Value::Null),
    }
}

/// Refuses values that would nest deeper than [`MAX_DEPTH`] where they are put.
fn check_depth(segments: usize, value: &Value) -> Result<(), Failure> {
    if segments.saturating_add(depth(value)) > MAX_DEPTH {
        return Err(Failure::Fatal(PatchError::TooDeep { limit: MAX_DEPTH }));
    }
    Ok(())
}

fn add(doc: &mut Value, op: &Op<'_>) -> Result<(), Failure> {
    let path = op
        .path()
        .map_err(|_| "add operation failed to decode path: missing value".to_string())?;
    let value = op.value().cloned().unwrap_or(Value::Null);
    let Some((con, key, segments)) = find_container(doc, path) else {
        return Err(format!(
            "add operation does not apply: doc is missing path: \"{path}\": missing value"
        )
        .into());
    };
    check_depth(segments, &value)?;
    add_to(con, key, value).map_err(|e| format!("error in add for path: '{path}': {e}"))?;
    Ok(())
}

fn remove(doc: &mut Value, op: &Op<'_>) -> Result<(), Failure> {
    let path = op
        .path()
        .map_err(|_| "remove operation failed to decode path: missing value".to_string())?;
    let Some((con, key, _)) = find_container(doc, path) else {
        return Err(format!(
            "remove operation does not apply: doc is missing path: \"{path}\": missing value"
        )
        .into());
    };
    remove_from(con, &key).map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
    Ok(())
}

fn replace(doc: &mut Value, op: &Op<'_>) -> Result<(), Failure> {
    let path = op
        .path()
        .map_err(|e| format!("replace operation failed to decode path: {e}"))?;
    if path.is_empty() {
        return match op.value() {
            None => Err(Failure::Fatal(PatchError::UpstreamPanic(
                UPSTREAM_NIL_DEREFERENCE.to_string(),
            ))),
            Some(v @ (Value::Object(_) | Value::Array(_))) => {
                check_depth(0, v)?;
                *doc = v.clone();
                Ok(())
            }
            // Upstream wraps a nil error here, which is no error: nothing happens.
            Some(_) => Ok(()),
        };
    }
    let value = op.value().cloned().unwrap_or(Value::Null);
    let Some((con, key, segments)) = find_container(doc, path) else {
        return Err(format!(
            "replace operation does not apply: doc is missing path: {path}: missing value"
        )
        .into());
    };
    if get(con, &key).is_err() {
        return Err(format!(
            "replace operation does not apply: doc is missing key: {path}: missing value"
        )
        .into());
    }
    check_depth(segments, &value)?;
    set_in(con, key, value).map_err(|e| format!("error in remove for path: '{path}': {e}"))?;
    Ok(())
}

fn move_op(doc: &mut Value, op: &Op<'_>) -> Result<(), Failure> {
    let from = op
        .from()
        .map_err(|e| format!("move operation failed to decode from: {e}"))?;
    let Some((con, key, _)) = find_container(doc, from) else {
        return Err(format!(
            "move operation does not apply: doc is missing from path: {from}: missing value"
        )
        .into());
    };
    get(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let value =
        remove_from(con, &key).map_err(|e| format!("error in move for path: '{key}': {e}"))?;
    let path = op
        .path()
        .map_err(|e| format!("move operation failed to decode path: {e}"))?;
    let Some((con, key, segments)) = find_container(doc, path) else {
        return Err(format!(
            "move operation does not apply: doc is missing destination path: {path}: missing value"
        )
        .into());
    };
    check_depth(segments, &value)?;
    add_to(con, key, value).map_err(|e| format!("error in move for path: '{path}': {e}"))?;
    Ok(())
}

fn test(doc: &Value, op: &Op<'_>) -> Result<(), Failure> {
    let path = op
        .path()
        .map_err(|e| format!("test operation failed to decode path: {e}"))?;
    let failed = || Failure::Apply(format!("testing value {path} failed: test failed"));
    if path.is_empty() {
        return match op.value() {
            None => Err(Failure::Fatal(PatchError::UpstreamPanic(
                UPSTREAM_NIL_DEREFERENCE.to_string(),
            ))),
            Some(v) if v == doc => Ok(()),
            Some(_) => Err(failed()),
        };
    }
    // `findObject` needs a mutable container; test on a scratch reference instead.
    let Some((con, key)) = find_container_ref(doc, path) else {
        return Err(format!(
            "test operation does not apply: is missing path: {path}: missing value"
        )
        .into());
    };
    let val = get(con, &key).map_err(|e| format!("error in test for path: '{path}': {e}"))?;
    match (val, op.value()) {
        (None, None) => Err(Failure::Fatal(PatchError::UpstreamPanic(
            UPSTREAM_NIL_DEREFERENCE.to_string(),
        ))),
        (None, Some(Value::Null)) => Ok(()),
        (None, Some(_)) | (Some(_), None) => Err(failed()),
        (Some(v), Some(expected)) if v == expected => Ok(()),
        (Some(_), Some(_)) => Err(failed()),
    }
}

/// [`find_container`] on a shared reference.
fn find_container_ref<'d>(doc: &'d Value, path: &str) -> Option<(&'d Value, String)> {
    let split: Vec<&str> = path.split('/').collect();
    if split.len() < 2 {
        return None;
    }
    let parts = &split[1..split.len() - 1];
    let key = decode_key(split[split.len() - 1]);
    let mut cur = doc;
    for part in parts {
        let part = decode_key(part);
        let next = match cur {
            Value::Object(map) => map.get(&part)?,
            Value::Array(items) => items.get(existing_index(items.len(), &part).ok()?)?,
            _ => return None,
        };
        match next {
            Value::Object(_) | Value::Array(_) => cur = next,
            _ => return None,
        }
    }
    Some((cur, key))
}

fn copy(doc: &mut Value, op: &Op<'_>, copied: &mut u64, limit: u64) -> Result<(), Failure> {
    let from = op
        .from()
        .map_err(|e| format!("copy operation failed to decode from: {e}"))?;
    let Some((con, key)) = find_container_ref(doc, from) else {
        return Err(format!(
            "copy operation does not apply: doc is missing from path: {from}: missing value"
        )
        .into());
    };
    let value = get(con, &key)
        .map_err(|e| format!("error in copy for from: '{from}': {e}"))?
        .cloned();
    let path = op
        .path()
        .map_err(|_| "copy operation failed to decode path: missing value".to_string())?;
    let Some((con, key, segments)) = find_container(doc, path) else {
        return Err(format!(
            "copy operation does not apply: doc is missing destination path: {path}: missing value"
        )
        .into());
    };
    let size = value.as_ref().map_or(0, go_json_len);
    *copied = copied.saturating_add(size);
    if limit > 0 && *copied > limit {
        return Err(format!(
            "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {limit}"
        )
        .into());
    }
    let value = value.unwrap_or(Value::Null);
    check_depth(segments, &value)?;
    add_to(con, key, value).map_err(|e| format!("error while adding value during copy: {e}"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn apply(doc: Value, patch: Value) -> Result<Value, String> {
        json_patch(&doc, &patch).map_err(|e| e.to_string())
    }

    #[test]
    fn rfc_operations() {
        let doc = json!({"a": {"b": [1, 2]}, "c": "x"});
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "add", "path": "/a/b/1", "value": 9}])
            ),
            Ok(json!({"a": {"b": [1, 9, 2]}, "c": "x"}))
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "add", "path": "/a/b/-", "value": 3}])
            ),
            Ok(json!({"a": {"b": [1, 2, 3]}, "c": "x"}))
        );
        assert_eq!(
            apply(doc.clone(), json!([{"op": "remove", "path": "/c"}])),
            Ok(json!({"a": {"b": [1, 2]}}))
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "replace", "path": "/a/b/0", "value": 5}])
            ),
            Ok(json!({"a": {"b": [5, 2]}, "c": "x"}))
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "move", "from": "/c", "path": "/a/d"}])
            ),
            Ok(json!({"a": {"b": [1, 2], "d": "x"}}))
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "copy", "from": "/a/b", "path": "/e"}])
            ),
            Ok(json!({"a": {"b": [1, 2]}, "c": "x", "e": [1, 2]}))
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "test", "path": "/a/b", "value": [1, 2]}])
            ),
            Ok(doc.clone())
        );
    }

    #[test]
    fn pointer_escapes() {
        let doc = json!({"metadata": {"labels": {"app.kubernetes.io/name": "x", "a~b": "y"}}});
        assert_eq!(
            apply(
                doc,
                json!([
                    {"op": "remove", "path": "/metadata/labels/app.kubernetes.io~1name"},
                    {"op": "replace", "path": "/metadata/labels/a~0b", "value": "z"},
                    {"op": "add", "path": "/metadata/labels/~01", "value": "w"}
                ])
            ),
            Ok(json!({"metadata": {"labels": {"a~b": "z", "~1": "w"}}}))
        );
    }

    #[test]
    fn upstream_messages() {
        let doc = json!({"a": {"b": [1, 2]}, "n": null});
        let cases = [
            (
                json!([{"op": "test", "path": "/a/b", "value": [2]}]),
                "testing value /a/b failed: test failed",
            ),
            (
                json!([{"op": "add", "path": "/x/y", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/x/y\": missing value",
            ),
            (
                json!([{"op": "remove", "path": "/x"}]),
                "error in remove for path: '/x': Unable to remove nonexistent key: x: missing value",
            ),
            (
                json!([{"op": "remove", "path": "/a/b/5"}]),
                "error in remove for path: '/a/b/5': Unable to access invalid index: 5: invalid index referenced",
            ),
            (
                json!([{"op": "add", "path": "/a/b/x", "value": 1}]),
                "error in add for path: '/a/b/x': value was not a proper array index: 'x': strconv.Atoi: parsing \"x\": invalid syntax",
            ),
            (
                json!([{"op": "replace", "path": "/a/b/2", "value": 1}]),
                "replace operation does not apply: doc is missing key: /a/b/2: missing value",
            ),
            (
                json!([{"op": "move", "from": "/x", "path": "/y"}]),
                "error in move for path: 'x': Unable to remove nonexistent key: x: missing value",
            ),
            (
                json!([{"op": "copy", "from": "/x/y", "path": "/y"}]),
                "copy operation does not apply: doc is missing from path: /x/y: missing value",
            ),
            (
                json!([{"op": "frob", "path": "/x"}]),
                "Unexpected kind: frob",
            ),
            (json!([{"path": "/x"}]), "Unexpected kind: unknown"),
            (
                json!([{"op": "add", "value": 1}]),
                "add operation failed to decode path: missing value",
            ),
            (
                json!([{"op": "replace", "value": 1}]),
                "replace operation failed to decode path: operation missing path field: missing value",
            ),
            (
                json!([{"op": "move", "path": "/a"}]),
                "move operation failed to decode from: operation, missing from field: missing value",
            ),
            (
                json!([{"op": "test", "path": 5, "value": 1}]),
                "test operation failed to decode path: json: cannot unmarshal number into Go value of type string",
            ),
            (
                json!([{"op": "add", "path": "/n/x", "value": 1}]),
                "add operation does not apply: doc is missing path: \"/n/x\": missing value",
            ),
            (
                json!([{"op": "add", "path": "", "value": 1}]),
                "add operation does not apply: doc is missing path: \"\": missing value",
            ),
        ];
        for (patch, msg) in cases {
            assert_eq!(
                apply(doc.clone(), patch.clone()),
                Err(msg.to_string()),
                "{patch}"
            );
        }
    }

    #[test]
    fn upstream_quirks() {
        let doc = json!({"a": 1, "l": [1, 2, 3]});
        // replace of a missing member adds it
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "replace", "path": "/b", "value": 2}])
            ),
            Ok(json!({"a": 1, "b": 2, "l": [1, 2, 3]}))
        );
        // testing a missing member against null succeeds
        assert!(
            apply(
                doc.clone(),
                json!([{"op": "test", "path": "/zz", "value": null}])
            )
            .is_ok()
        );
        // copy from a missing member copies null
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "copy", "from": "/zz", "path": "/c"}])
            ),
            Ok(json!({"a": 1, "c": null, "l": [1, 2, 3]}))
        );
        // negative indices
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "add", "path": "/l/-1", "value": 9}, {"op": "remove", "path": "/l/-4"}])
            ),
            Ok(json!({"a": 1, "l": [2, 3, 9]}))
        );
        // the first path segment is ignored
        assert_eq!(
            apply(doc.clone(), json!([{"op": "remove", "path": "x/a"}])),
            Ok(json!({"l": [1, 2, 3]}))
        );
        // replacing the document with a scalar does nothing
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "replace", "path": "", "value": 1}])
            ),
            Ok(doc.clone())
        );
        assert_eq!(
            apply(
                doc.clone(),
                json!([{"op": "replace", "path": "", "value": {"z": 1}}])
            ),
            Ok(json!({"z": 1}))
        );
        // add without value adds null
        assert_eq!(
            apply(doc.clone(), json!([{"op": "add", "path": "/n"}])),
            Ok(json!({"a": 1, "l": [1, 2, 3], "n": null}))
        );
        // null patch: no operation
        assert_eq!(apply(doc.clone(), Value::Null), Ok(doc.clone()));
    }

    #[test]
    fn decoding_errors() {
        let doc = json!({});
        let err = json_patch(&doc, &json!({"op": "add"})).unwrap_err();
        assert_eq!(
            err,
            PatchError::JsonPatchDecode(
                "json: cannot unmarshal object into Go value of type jsonpatch.Patch".into()
            )
        );
        assert_eq!(err.status_code(), 400);
        let err = json_patch(&doc, &json!(["add"])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
        );
    }

    #[test]
    fn limits() {
        let doc = json!({"a": "x".repeat(100)});
        let patch = json!([{"op": "copy", "from": "/a", "path": "/b"}, {"op": "copy", "from": "/a", "path": "/c"}]);
        let limits = JsonPatchLimits {
            max_operations: 10,
            max_copy_bytes: 150,
        };
        assert_eq!(
            json_patch_with_limits(&doc, &patch, limits)
                .unwrap_err()
                .to_string(),
            "Unable to complete the copy, the accumulated size increase of copy is 204, exceeding the limit 150"
        );
        let many = Value::Array(vec![
            json!({"op": "test", "path": "/a", "value": null});
            10_001
        ]);
        let err = json_patch(&json!({}), &many).unwrap_err();
        assert_eq!(err.status_code(), 413);
    }

    #[test]
    fn depth_is_bounded() {
        let mut value = json!(1);
        for _ in 0..100 {
            value = json!({ "a": value });
        }
        let doc = json!({});
        let patch = json!([
            {"op": "add", "path": "/x", "value": value},
            {"op": "copy", "from": "/x", "path": "/x/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a"}
        ]);
        assert_eq!(
            json_patch(&doc, &patch),
            Err(PatchError::TooDeep { limit: MAX_DEPTH })
        );
    }

    #[test]
    fn atoi_like_go() {
        assert_eq!(atoi("007"), Ok(7));
        assert_eq!(atoi("+3"), Ok(3));
        assert_eq!(atoi("-0"), Ok(0));
        assert!(atoi("").is_err());
        assert!(atoi("1_0").is_err());
        assert_eq!(
            atoi("99999999999999999999"),
            Err("strconv.Atoi: parsing \"99999999999999999999\": value out of range".into())
        );
    }
}
