//! JSON merge patch (RFC 7386) as upstream's API server applies it (evanphx/json-patch v4's
//! `MergePatch`). Besides the RFC's rules, upstream removes `null` members from values it
//! inserts even inside arrays (`{"a": [{"b": null}]}` adds `{"a": [{}]}`), except when an
//! array or a scalar replaces an existing object.

use serde_json::{Map, Value};

use crate::MAX_DEPTH;
use crate::error::PatchError;
use crate::gofmt::depth;

/// Merges `patch` into `doc` (RFC 7386, with upstream's treatment of `null`s): members of an
/// object patch that are `null` remove the member, objects merge recursively, anything else
/// replaces. A patch that is not an object replaces the document.
///
/// Merging is iterative, so a deep patch does not deepen the stack (cloning the values it
/// inserts is `serde_json`'s own, recursive, clone).
pub fn merge_patch(doc: &Value, patch: &Value) -> Value {
    merge_value(Some(doc), patch)
}

/// [`merge_patch`] on a document the caller gives up: it is patched where it lies, not
/// copied first.
pub fn merge_patch_owned(doc: Value, patch: &Value) -> Value {
    match (doc, patch) {
        (Value::Object(cur), Value::Object(p)) => Value::Object(merge_objects(cur, p)),
        (doc, patch) => merge_value(Some(&doc), patch),
    }
}

/// Upstream's `MergePatch` entry point: [`merge_patch`], but a patch that is `null` or a
/// scalar is refused ("Invalid JSON Patch", 400), as is a `null` document ("Invalid JSON
/// Document", 500) and a patch nesting deeper than [`MAX_DEPTH`]. A patch that is an array
/// yields that array (with `null` members of its objects removed), whatever the document;
/// so does an object patch applied to a document that is not an object.
pub fn merge_patch_document(doc: &Value, patch: &Value) -> Result<Value, PatchError> {
    match patch {
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {
            return Err(PatchError::InvalidMergePatch);
        }
        Value::Array(_) | Value::Object(_) => {}
    }
    if depth(patch) > MAX_DEPTH {
        return Err(PatchError::TooDeep { limit: MAX_DEPTH });
    }
    if doc.is_null() {
        return Err(PatchError::InvalidMergeDocument);
    }
    match (doc, patch) {
        (Value::Object(_), Value::Object(_)) => Ok(merge_patch(doc, patch)),
        _ => {
            let mut out = patch.clone();
            prune_nulls(&mut out);
            Ok(out)
        }
    }
}

/// evanphx's `merge(cur, patch)`: `cur` is `None` when the member is absent.
fn merge_value(cur: Option<&Value>, patch: &Value) -> Value {
    match (cur, patch) {
        (Some(Value::Object(cur)), Value::Object(patch)) => {
            Value::Object(merge_objects(cur.clone(), patch))
        }
        // An existing object replaced by a non-object: taken as is.
        (Some(Value::Object(_)), other) => other.clone(),
        // Absent, null or non-object current value: the patch, without its nulls.
        (_, other) => {
            let mut out = other.clone();
            prune_nulls(&mut out);
            out
        }
    }
}

/// Merges an object patch into an object, iteratively.
fn merge_objects(doc: Map<String, Value>, patch: &Map<String, Value>) -> Map<String, Value> {
    struct Frame<'p> {
        acc: Map<String, Value>,
        entries: serde_json::map::Iter<'p>,
        key: Option<String>,
    }
    let mut stack = vec![Frame {
        acc: doc,
        entries: patch.iter(),
        key: None,
    }];
    loop {
        let Some(top) = stack.last_mut() else {
            return Map::new();
        };
        match top.entries.next() {
            Some((k, v)) => {
                if v.is_null() {
                    top.acc.remove(k);
                    continue;
                }
                match (top.acc.remove(k), v) {
                    (Some(Value::Object(cur)), Value::Object(p)) => {
                        stack.push(Frame {
                            acc: cur,
                            entries: p.iter(),
                            key: Some(k.clone()),
                        });
                    }
                    (cur, v) => {
                        let merged = merge_value(cur.as_ref(), v);
                        top.acc.insert(k.clone(), merged);
                    }
                }
            }
            None => {
                let Some(done) = stack.pop() else {
                    return Map::new();
                };
                match (stack.last_mut(), done.key) {
                    (Some(parent), Some(key)) => {
                        parent.acc.insert(key, Value::Object(done.acc));
                    }
                    _ => return done.acc,
                }
            }
        }
    }
}

/// Removes `null` members of objects, at any depth (inside arrays too); `null` array items
/// stay. Iterative.
pub(crate) fn prune_nulls(value: &mut Value) {
    let mut stack: Vec<&mut Value> = vec![value];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(map) => {
                map.retain(|_, x| !x.is_null());
                stack.extend(map.values_mut());
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn rfc7386_examples() {
        // The examples of RFC 7386, appendix A.
        let cases = [
            (json!({"a": "b"}), json!({"a": "c"}), json!({"a": "c"})),
            (
                json!({"a": "b"}),
                json!({"b": "c"}),
                json!({"a": "b", "b": "c"}),
            ),
            (json!({"a": "b"}), json!({"a": null}), json!({})),
            (
                json!({"a": "b", "b": "c"}),
                json!({"a": null}),
                json!({"b": "c"}),
            ),
            (json!({"a": ["b"]}), json!({"a": "c"}), json!({"a": "c"})),
            (json!({"a": "c"}), json!({"a": ["b"]}), json!({"a": ["b"]})),
            (
                json!({"a": {"b": "c"}}),
                json!({"a": {"b": "d", "c": null}}),
                json!({"a": {"b": "d"}}),
            ),
            (
                json!({"a": [{"b": "c"}]}),
                json!({"a": [1]}),
                json!({"a": [1]}),
            ),
            (json!(["a", "b"]), json!(["c", "d"]), json!(["c", "d"])),
            (json!({"a": "b"}), json!(["c"]), json!(["c"])),
            (json!({"a": "foo"}), json!(null), json!(null)),
            (json!({"a": "foo"}), json!("bar"), json!("bar")),
            (
                json!({"e": null}),
                json!({"a": 1}),
                json!({"e": null, "a": 1}),
            ),
            (
                json!([1, 2]),
                json!({"a": "b", "c": null}),
                json!({"a": "b"}),
            ),
            (
                json!({}),
                json!({"a": {"bb": {"ccc": null}}}),
                json!({"a": {"bb": {}}}),
            ),
        ];
        for (doc, patch, want) in cases {
            assert_eq!(merge_patch(&doc, &patch), want, "{doc} + {patch}");
            assert_eq!(
                merge_patch_owned(doc.clone(), &patch),
                want,
                "owned: {doc} + {patch}"
            );
        }
    }

    #[test]
    fn upstream_null_pruning() {
        // Inserted values lose their null members, even inside arrays.
        assert_eq!(
            merge_patch(&json!({}), &json!({"a": [{"b": null, "c": 1}, null]})),
            json!({"a": [{"c": 1}, null]})
        );
        // An array replacing an object is taken as is.
        assert_eq!(
            merge_patch(&json!({"a": {"x": 1}}), &json!({"a": [{"b": null}]})),
            json!({"a": [{"b": null}]})
        );
    }

    #[test]
    fn kubectl_patches() {
        let doc = json!({"metadata": {"name": "x", "labels": {"app": "a", "tier": "b"}},
                         "spec": {"replicas": 1}});
        // kubectl scale
        assert_eq!(
            merge_patch(&doc, &json!({"spec": {"replicas": 3}})),
            json!({"metadata": {"name": "x", "labels": {"app": "a", "tier": "b"}},
                   "spec": {"replicas": 3}})
        );
        // kubectl label tier-
        assert_eq!(
            merge_patch(&doc, &json!({"metadata": {"labels": {"tier": null}}})),
            json!({"metadata": {"name": "x", "labels": {"app": "a"}}, "spec": {"replicas": 1}})
        );
    }

    #[test]
    fn document_entry_point() {
        assert_eq!(
            merge_patch_document(&json!({}), &Value::Null),
            Err(PatchError::InvalidMergePatch)
        );
        assert_eq!(
            merge_patch_document(&json!({}), &json!("x")),
            Err(PatchError::InvalidMergePatch)
        );
        assert_eq!(
            merge_patch_document(&Value::Null, &json!({})),
            Err(PatchError::InvalidMergeDocument)
        );
        assert_eq!(
            merge_patch_document(&json!({"a": 1}), &json!([{"b": null}])),
            Ok(json!([{}]))
        );
        assert_eq!(
            merge_patch_document(&json!({"a": 1}), &json!({"b": 2})),
            Ok(json!({"a": 1, "b": 2}))
        );
    }

    #[test]
    fn deep_patches_do_not_overflow() {
        let mut patch = json!({"x": 1});
        let mut doc = json!({"x": 0});
        for _ in 0..1000 {
            patch = json!({ "a": patch });
            doc = json!({ "a": doc });
        }
        let out = merge_patch(&doc, &patch);
        assert_eq!(depth(&out), 1001);
        assert_eq!(
            merge_patch_document(&doc, &patch),
            Err(PatchError::TooDeep { limit: MAX_DEPTH })
        );
        // Dropping values this deep recurses in serde_json; leak them in this test.
        std::mem::forget(out);
        std::mem::forget(patch);
        std::mem::forget(doc);
    }
}
