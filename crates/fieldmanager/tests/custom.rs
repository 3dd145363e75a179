//! Custom resources: structural schemas (set, map and atomic lists, atomic maps, preserved
//! unknown fields) and schemaless (deduced) ones; the public field-set helpers.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use fieldmanager::{
    FieldManager, FieldSet, ObjectSchema, Path, PathElement, compare_objects, field_set_of,
    validate_object,
};
use serde_json::json;

const T0: u64 = 1_700_000_000;

fn crontab(spec: serde_json::Value) -> serde_json::Value {
    json!({
        "apiVersion": "stable.example.com/v1",
        "kind": "CronTab",
        "metadata": {"name": "tab", "namespace": "default"},
        "spec": spec
    })
}

#[test]
fn create_of_a_custom_resource_owns_its_containers() {
    let defs = defs();
    let schema = crontab_schema();
    let fm = FieldManager::new(ObjectSchema::custom(&schema, &defs), crontab_gvk());
    let obj = fm.update(
        None,
        &crontab(json!({"cronSpec": "* * * * */5", "image": "my-cron"})),
        "kubectl-create",
        at(T0),
    );
    // The new object is only {apiVersion, kind}: spec is added, so it is a member.
    assert_eq!(
        fields_of(&obj, "kubectl-create", "Update"),
        r#"{"f:spec":{".":{},"f:cronSpec":{},"f:image":{}}}"#
    );
}

#[test]
fn custom_lists_and_maps() {
    let defs = defs();
    let schema = crontab_schema();
    let fm = FieldManager::new(ObjectSchema::custom(&schema, &defs), crontab_gvk());
    let cfg = crontab(json!({
        "tags": ["a", "b"],
        "hosts": ["h1", "h2"],
        "workers": [{"name": "w1", "size": 1}],
        "config": {"anything": {"goes": [1, 2]}},
        "selector": {"k": "v"}
    }));
    let live = stored(fm.apply(None, &cfg, "one", false, at(T0)).unwrap().object);
    assert_eq!(
        fields_of(&live, "one", "Apply"),
        r#"{"f:spec":{"f:config":{"f:anything":{".":{},"f:goes":{}}},"f:hosts":{},"f:selector":{},"f:tags":{"v:\"a\"":{},"v:\"b\"":{}},"f:workers":{"k:{\"name\":\"w1\"}":{".":{},"f:name":{},"f:size":{}}}}}"#
    );
    let other = crontab(json!({
        "tags": ["c"],
        "workers": [{"name": "w2", "size": 2}],
        "config": {"more": true}
    }));
    let obj = fm
        .apply(Some(&live), &other, "two", false, at(T0 + 1))
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["tags"], json!(["a", "b", "c"]));
    assert_eq!(
        obj["spec"]["workers"],
        json!([{"name": "w1", "size": 1}, {"name": "w2", "size": 2}])
    );
    assert_eq!(
        obj["spec"]["config"],
        json!({"anything": {"goes": [1, 2]}, "more": true})
    );

    // Atomic list and map: replaced whole, conflicting whole.
    let hosts = crontab(json!({"hosts": ["h3"]}));
    let err = fm
        .apply(Some(&obj), &hosts, "two", false, at(T0 + 2))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"one\": .spec.hosts"
    );
    let obj = fm
        .apply(Some(&obj), &hosts, "two", true, at(T0 + 2))
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["hosts"], json!(["h3"]));
}

#[test]
fn custom_validation_messages() {
    let defs = defs();
    let schema = crontab_schema();
    let s = ObjectSchema::custom(&schema, &defs);
    assert_eq!(
        validate_object(&crontab(json!({"nope": 1})), &s).unwrap_err(),
        ".spec.nope: field not declared in schema"
    );
    assert_eq!(
        validate_object(&crontab(json!({"workers": [{"size": 1}]})), &s).unwrap_err(),
        ".spec.workers: element 0: associative list with keys has an element that omits all key fields [\"name\"] (and doesn't have default values for any key fields)"
    );
    assert_eq!(
        validate_object(&crontab(json!({"tags": [{"a": 1}]})), &s).unwrap_err(),
        ".spec.tags: element 0: associative list without keys has an element that's a map type"
    );
    assert_eq!(
        validate_object(&crontab(json!({"tags": ["a", "a"]})), &s).unwrap_err(),
        ".spec.tags: duplicate entries for key [=\"a\"]"
    );
    assert_eq!(
        validate_object(&crontab(json!({"image": 3})), &s).unwrap_err(),
        ".spec.image: expected string, got &value.valueUnstructured{Value:3}"
    );
    assert!(validate_object(&crontab(json!({"config": {"x": {"y": [1]}}})), &s).is_ok());
    // Unknown fields are allowed where unknown fields are preserved.
    let fm = FieldManager::new(s, crontab_gvk());
    assert!(
        fm.apply(
            None,
            &crontab(json!({"config": {"x": 1}})),
            "m",
            false,
            at(T0)
        )
        .is_ok()
    );
}

#[test]
fn schemaless_resources_are_deduced() {
    let fm = FieldManager::new(ObjectSchema::deduced(), crontab_gvk());
    let cfg = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "tab", "labels": {"a": "b"}},
        "spec": {"list": [1, 2], "map": {"k": 1}, "n": null}
    });
    let live = stored(fm.apply(None, &cfg, "one", false, at(T0)).unwrap().object);
    assert_eq!(
        fields_of(&live, "one", "Apply"),
        r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}}},"f:spec":{".":{},"f:list":{},"f:map":{".":{},"f:k":{}},"f:n":{}}}"#
    );
    // Lists are atomic: another value conflicts on the whole list.
    let other = json!({
        "apiVersion": "stable.example.com/v1", "kind": "CronTab",
        "metadata": {"name": "tab"}, "spec": {"list": [3]}
    });
    let err = fm
        .apply(Some(&live), &other, "two", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"one\": .spec.list"
    );
    // Dropping a map entry removes it; the map it emptied is left null, as upstream's
    // removal leaves emptied containers.
    let mut smaller = cfg.clone();
    smaller["spec"]["map"] = json!({});
    let obj = fm
        .apply(Some(&live), &smaller, "one", false, at(T0 + 2))
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["map"], serde_json::Value::Null);
    assert_eq!(obj["spec"]["list"], json!([1, 2]));
}

#[test]
fn public_field_set_helpers() {
    let defs = defs();
    let s = ObjectSchema::builtin(deployment_root(&defs), &defs);
    let set = field_set_of(&web_config(3, "nginx"), &s);
    assert!(set.has(Path::fields(&["apiVersion"]).elements()));
    assert!(set.has(Path::fields(&["metadata", "name"]).elements()));
    let port = Path(vec![
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::key([("name", json!("nginx"))]),
        PathElement::field("ports"),
        PathElement::key([("containerPort", json!(80)), ("protocol", json!("TCP"))]),
    ]);
    assert!(set.has(port.elements()));
    assert_eq!(
        port.to_string(),
        ".spec.template.spec.containers[name=\"nginx\"].ports[containerPort=80,protocol=\"TCP\"]"
    );
    let (added, modified, removed) =
        compare_objects(&web_config(3, "nginx"), &web_config(4, "nginx"), &s);
    assert!(added.is_empty() && removed.is_empty());
    assert_eq!(
        modified,
        FieldSet::from_paths(&[Path::fields(&["spec", "replicas"])])
    );
    assert!(validate_object(&web_config(3, "nginx"), &s).is_ok());
}

#[test]
fn duplicate_items_in_stored_objects_are_tolerated() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut with_dups = web_config(1, "nginx");
    with_dups["spec"]["template"]["spec"]["containers"] = json!([
        {"name": "dup", "image": "a"}, {"name": "dup", "image": "b"}
    ]);
    let set = field_set_of(
        &with_dups,
        &ObjectSchema::builtin(deployment_root(&defs), &defs),
    );
    let dup = Path(vec![
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::key([("name", json!("dup"))]),
    ]);
    // A duplicated item is one leaf.
    assert!(set.has(dup.elements()));
    assert!(!set.has(dup.child(PathElement::field("image")).elements()));
    let live = stored(fm.update(None, &with_dups, "creator", at(T0)));
    assert!(owns(&live, "creator", "Update", &dup));
    let mut next = live.clone();
    next["spec"]["replicas"] = json!(2);
    let obj = fm.update(Some(&live), &next, "editor", at(T0));
    assert_eq!(
        fields_of(&obj, "editor", "Update"),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
}

fn workers(items: serde_json::Value) -> serde_json::Value {
    crontab(json!({ "workers": items }))
}

fn worker(name: &str) -> Path {
    Path(vec![
        PathElement::field("spec"),
        PathElement::field("workers"),
        PathElement::key([("name", json!(name))]),
    ])
}

#[test]
fn applying_over_duplicated_items() {
    let defs = defs();
    let schema = crontab_schema();
    let fm = FieldManager::new(ObjectSchema::custom(&schema, &defs), crontab_gvk());
    let dups =
        json!([{"name": "a", "size": 1}, {"name": "a", "size": 2}, {"name": "b", "size": 3}]);
    let live = stored(fm.update(None, &workers(dups.clone()), "updater", at(T0)));
    assert!(owns(&live, "updater", "Update", &worker("a")));
    assert!(!owns(
        &live,
        "updater",
        "Update",
        &worker("a").child(PathElement::field("size"))
    ));

    let cfg = workers(json!([{"name": "a", "size": 3}]));
    let err = fm
        .apply(Some(&live), &cfg, "applier", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"updater\" using stable.example.com/v1: .spec.workers[name=\"a\"]"
    );
    let obj = fm
        .apply(Some(&live), &cfg, "applier", true, at(T0 + 1))
        .unwrap()
        .object;
    assert_eq!(
        obj["spec"]["workers"],
        json!([{"name": "a", "size": 3}, {"name": "b", "size": 3}])
    );
    assert_eq!(
        fields_of(&obj, "applier", "Apply"),
        r#"{"f:spec":{"f:workers":{"k:{\"name\":\"a\"}":{".":{},"f:name":{},"f:size":{}}}}}"#
    );
    assert!(!owns(&obj, "updater", "Update", &worker("a")));
    assert!(owns(&obj, "updater", "Update", &worker("b")));

    // An applier whose item gets duplicated by an updater, then dropped, leaves it alone.
    let live = stored(
        fm.apply(
            None,
            &workers(json!([{"name": "a", "size": 1}, {"name": "b", "size": 3}])),
            "applier",
            false,
            at(T0),
        )
        .unwrap()
        .object,
    );
    let mut dup = live.clone();
    dup["spec"]["workers"] = dups.clone();
    let live = fm.update(Some(&live), &dup, "updater", at(T0 + 1));
    assert_eq!(
        fields_of(&live, "updater", "Update"),
        r#"{"f:spec":{"f:workers":{"k:{\"name\":\"a\"}":{}}}}"#
    );
    let obj = fm
        .apply(
            Some(&live),
            &workers(json!([{"name": "b", "size": 3}])),
            "applier",
            false,
            at(T0 + 2),
        )
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["workers"], dups);
    assert_eq!(
        fields_of(&obj, "applier", "Apply"),
        r#"{"f:spec":{"f:workers":{"k:{\"name\":\"b\"}":{".":{},"f:name":{},"f:size":{}}}}}"#
    );
}
