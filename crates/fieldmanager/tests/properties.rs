//! Property tests: no panic on arbitrary objects and configurations, fieldsV1 round trips,
//! set algebra laws, idempotent re-apply.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use fieldmanager::{FieldManager, FieldSet, ObjectSchema, Path, field_set_of};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Names that hit the test schemas' fields as well as unknown ones.
const NAMES: &[&str] = &[
    "spec",
    "metadata",
    "status",
    "replicas",
    "selector",
    "matchLabels",
    "template",
    "containers",
    "name",
    "image",
    "ports",
    "containerPort",
    "protocol",
    "labels",
    "finalizers",
    "args",
    "nodeSelector",
    "env",
    "value",
    "config",
    "tags",
    "workers",
    "size",
    "hosts",
    "x",
    "y",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..100).prop_map(|i| json!(i)),
        (-2.0f64..2.0).prop_map(|f| json!(f)),
        "[a-c]{0,3}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map(prop::sample::select(NAMES), inner, 0..5).prop_map(|m| {
                Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())
            }),
        ]
    })
}

/// An object of the test kinds: apiVersion and kind right, the rest arbitrary.
fn object(api_version: &'static str, kind: &'static str) -> impl Strategy<Value = Value> {
    prop::collection::btree_map(prop::sample::select(NAMES), value(), 0..4).prop_map(move |m| {
        let mut obj: Map<String, Value> = m.into_iter().map(|(k, v)| (k.to_string(), v)).collect();
        obj.insert("apiVersion".into(), json!(api_version));
        obj.insert("kind".into(), json!(kind));
        Value::Object(obj)
    })
}

fn deployment() -> impl Strategy<Value = Value> {
    prop_oneof![
        object("apps/v1", "Deployment"),
        (1i64..4, "[a-c]{1,2}").prop_map(|(r, i)| web_config(r, &i)),
    ]
}

fn check_invariants(obj: &Value) {
    if let Some(list) = fieldmanager::ManagedFieldsEntry::list_of(obj) {
        for e in list {
            assert!(e.operation == "Apply" || e.operation == "Update");
            assert_eq!(e.fields_type, "FieldsV1");
            let set = e.field_set().unwrap();
            assert!(!set.is_empty());
            let text = set.to_json_string();
            assert_eq!(FieldSet::from_json_str(&text).unwrap(), set);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn builtin_apply_and_update_never_panic(
        live in prop::option::of(deployment()),
        cfg in deployment(),
        new in deployment(),
        force in any::<bool>(),
    ) {
        let defs = defs();
        let fm = deployments(&defs);
        let live = live.map(|l| {
            let created = fm.update(None, &l, "creator", at(10));
            stored(created)
        });
        let updated = fm.update(live.as_ref(), &new, "editor", at(20));
        check_invariants(&updated);
        if let Ok(out) = fm.apply(live.as_ref(), &cfg, "applier", force, at(30)) {
            check_invariants(&out.object);
            let _ = fm.apply(Some(&out.object), &cfg, "other", force, at(40));
            let _ = fm.update(Some(&out.object), &updated, "editor", at(50));
        }
    }

    #[test]
    fn custom_and_deduced_apply_never_panic(
        live in object("stable.example.com/v1", "CronTab"),
        cfg in object("stable.example.com/v1", "CronTab"),
        force in any::<bool>(),
    ) {
        let defs = defs();
        let schema = crontab_schema();
        for s in [ObjectSchema::custom(&schema, &defs), ObjectSchema::deduced()] {
            let fm = FieldManager::new(s, crontab_gvk());
            let live = stored(fm.update(None, &live, "creator", at(10)));
            check_invariants(&live);
            if let Ok(out) = fm.apply(Some(&live), &cfg, "applier", force, at(20)) {
                check_invariants(&out.object);
            }
            let updated = fm.update(Some(&live), &cfg, "editor", at(30));
            check_invariants(&updated);
        }
    }

    #[test]
    fn reapplying_a_valid_configuration_changes_nothing(cfg in deployment()) {
        let defs = defs();
        let fm = deployments(&defs);
        if let Ok(first) = fm.apply(None, &cfg, "applier", false, at(10)) {
            let live = stored(first.object);
            let again = fm.apply(Some(&live), &cfg, "applier", false, at(20)).unwrap();
            prop_assert!(again.no_op, "{live:#}\n{:#}", again.object);
        }
    }

    #[test]
    fn arbitrary_managed_fields_never_panic(
        obj in deployment(),
        managed in prop_oneof![
            value(),
            prop::collection::vec(
                prop::collection::btree_map(
                    prop::sample::select(&["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"][..]),
                    prop_oneof![
                        value(),
                        prop::sample::select(&["Apply", "Update", "FieldsV1", "apps/v1", "m", "2024-01-01T00:00:00Z"][..])
                            .prop_map(|s| json!(s)),
                    ],
                    0..7,
                ).prop_map(|m| Value::Object(m.into_iter().map(|(k, v)| (k.to_string(), v)).collect())),
                0..3,
            ).prop_map(Value::Array),
        ],
    ) {
        let defs = defs();
        let fm = deployments(&defs);
        let mut live = stored(obj.clone());
        if let Some(meta) = live.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("managedFields".into(), managed.clone());
        }
        let mut next = obj;
        if let Some(meta) = next.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("managedFields".into(), managed);
        }
        let updated = fm.update(Some(&live), &next, "editor", at(10));
        let _ = fieldmanager::ManagedFieldsEntry::list_of(&updated);
        let _ = fm.apply(Some(&live), &web_config(1, "x"), "kubectl", false, at(20));
        let _ = fieldmanager::revert_timestamp_only_changes(&mut next.clone(), &live);
    }

    #[test]
    fn field_sets_round_trip_through_fields_v1(obj in deployment()) {
        let defs = defs();
        let s = ObjectSchema::builtin(deployment_root(&defs), &defs);
        let set = field_set_of(&obj, &s);
        prop_assert_eq!(&FieldSet::from_json_str(&set.to_json_string()).unwrap(), &set);
        prop_assert_eq!(&FieldSet::from_fields_v1(&set.to_fields_v1()).unwrap(), &set);
        let d = field_set_of(&obj, &ObjectSchema::deduced());
        prop_assert_eq!(FieldSet::from_json_str(&d.to_json_string()).unwrap(), d);
    }

    #[test]
    fn arbitrary_fields_v1_never_panics(v in value()) {
        if let Ok(set) = FieldSet::from_fields_v1(&v) {
            let again = FieldSet::from_json_str(&set.to_json_string()).unwrap();
            prop_assert_eq!(again, set);
        }
    }

    #[test]
    fn set_algebra_laws(a in deployment(), b in deployment()) {
        let sa = field_set_of(&a, &ObjectSchema::deduced());
        let sb = field_set_of(&b, &ObjectSchema::deduced());
        let union = sa.union(&sb);
        let inter = sa.intersection(&sb);
        let diff = sa.difference(&sb);
        for p in sa.paths() {
            prop_assert!(union.has(p.elements()));
            prop_assert_eq!(diff.has(p.elements()), !sb.has(p.elements()));
            prop_assert_eq!(inter.has(p.elements()), sb.has(p.elements()));
        }
        prop_assert_eq!(union.len(), sa.len() + sb.len() - inter.len());
        prop_assert!(diff.intersection(&sb).is_empty());
        let rdiff = sa.recursive_difference(&sb);
        for p in rdiff.paths() {
            prop_assert!(diff.has(p.elements()));
            let covered = (1..=p.elements().len())
                .any(|n| sb.has(&p.elements()[..n]));
            prop_assert!(!covered);
        }
        let paths: Vec<Path> = sa.paths();
        prop_assert_eq!(FieldSet::from_paths(&paths), sa);
    }
}
