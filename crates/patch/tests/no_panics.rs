//! Property tests: no input makes any patch function panic, and simple laws hold.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use patch::{json_patch, merge_patch, merge_patch_document, strategic_merge_patch};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const KEYS: &[&str] = &[
    "name",
    "value",
    "other",
    "mergingList",
    "nonMergingList",
    "mergingIntList",
    "simpleMap",
    "replacingItem",
    "retainKeysMap",
    "retainKeysMergingList",
    "ports",
    "child",
    "raw",
    "tags",
    "containerPort",
    "zz",
    "$patch",
    "$retainKeys",
    "$setElementOrder/mergingList",
    "$setElementOrder/tags",
    "$deleteFromPrimitiveList/tags",
    "$deleteFromPrimitiveList",
    "delete",
    "replace",
    "merge",
    "",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..5).prop_map(|i| json!(i)),
        Just(json!(1.5)),
        Just(json!(u64::MAX)),
        prop::sample::select(KEYS).prop_map(|s| json!(s)),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 64, 5, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..5).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

/// Objects of objects and scalars, without directive keys.
fn plain_object() -> impl Strategy<Value = Value> {
    let keys = prop::sample::select(&["a", "b", "c", "name", "value"][..]);
    scalar()
        .prop_recursive(4, 32, 4, move |inner| {
            prop::collection::vec((keys.clone(), inner), 0..4).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_string(), v))
                        .collect::<Map<_, _>>(),
                )
            })
        })
        .prop_map(|v| if v.is_object() { v } else { json!({ "a": v }) })
}

fn pointer() -> impl Strategy<Value = Value> {
    prop::collection::vec(
        prop_oneof![
            prop::sample::select(KEYS).prop_map(str::to_string),
            (-2i64..4).prop_map(|i| i.to_string()),
            Just("-".to_string()),
            Just("~1".to_string()),
        ],
        0..4,
    )
    .prop_map(|segs| json!(segs.iter().map(|s| format!("/{s}")).collect::<String>()))
}

fn operation() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(&["add", "remove", "replace", "move", "copy", "test", "x"][..]),
        pointer(),
        pointer(),
        prop::option::of(value()),
    )
        .prop_map(|(op, path, from, value)| {
            let mut m = json!({"op": op, "path": path, "from": from});
            if let Some(v) = value {
                m["value"] = v;
            }
            m
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 600,
        failure_persistence: None,
        .. ProptestConfig::default()
    })]

    #[test]
    fn strategic_never_panics(doc in value(), patch in value()) {
        let generic = common::generic();
        let _ = strategic_merge_patch(&doc, &patch, &common::root("test.Root"), &generic);
        let _ = strategic_merge_patch(&doc, &patch, &Value::Null, &generic);
        let deployment = common::deployment();
        let _ = strategic_merge_patch(
            &doc, &patch, &common::root("io.k8s.api.apps.v1.Deployment"), &deployment);
    }

    #[test]
    fn strategic_on_objects_never_panics(
        doc in prop::collection::vec((prop::sample::select(KEYS), value()), 0..6),
        patch in prop::collection::vec((prop::sample::select(KEYS), value()), 0..6),
    ) {
        let doc = Value::Object(doc.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let patch = Value::Object(patch.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let generic = common::generic();
        let _ = strategic_merge_patch(&doc, &patch, &common::root("test.Root"), &generic);
    }

    #[test]
    fn json_patch_never_panics(doc in value(), ops in prop::collection::vec(operation(), 0..6)) {
        let _ = json_patch(&doc, &Value::Array(ops));
    }

    #[test]
    fn json_patch_of_any_value_never_panics(doc in value(), patch in value()) {
        let _ = json_patch(&doc, &patch);
    }

    #[test]
    fn merge_patch_never_panics(doc in value(), patch in value()) {
        let _ = merge_patch(&doc, &patch);
        let _ = merge_patch_document(&doc, &patch);
    }

    #[test]
    fn empty_patches_change_nothing(doc in prop::collection::vec((prop::sample::select(KEYS), value()), 0..6)) {
        let doc = Value::Object(doc.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let defs = common::Defs(Default::default());
        prop_assert_eq!(strategic_merge_patch(&doc, &json!({}), &Value::Null, &defs).unwrap(), doc.clone());
        prop_assert_eq!(json_patch(&doc, &json!([])).unwrap(), doc.clone());
        prop_assert_eq!(merge_patch(&doc, &json!({})), doc);
    }

    /// Without schema information and without lists or directives, a strategic merge patch
    /// is a JSON merge patch.
    #[test]
    fn strategic_without_schema_is_merge_patch(doc in plain_object(), patch in plain_object()) {
        let defs = common::Defs(Default::default());
        let smp = strategic_merge_patch(&doc, &patch, &Value::Null, &defs).unwrap();
        prop_assert_eq!(smp, merge_patch(&doc, &patch));
    }

    /// Adding a value at a new key and removing it again gives the document back.
    #[test]
    fn json_patch_add_then_remove(doc in prop::collection::vec((prop::sample::select(KEYS), value()), 0..6), v in value()) {
        let doc = Value::Object(doc.into_iter().map(|(k, v)| (k.to_string(), v)).collect());
        let ops = json!([{"op": "add", "path": "/fresh~1key", "value": v},
                         {"op": "remove", "path": "/fresh~1key"}]);
        prop_assert_eq!(json_patch(&doc, &ops).unwrap(), doc);
    }
}
