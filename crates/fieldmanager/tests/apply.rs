//! Server-side apply on a built-in kind (a Deployment schema shaped as upstream's).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use fieldmanager::{Error, FieldSet, LAST_APPLIED_ANNOTATION, Path, PathElement};
use serde_json::{Value, json};

const T0: u64 = 1_700_000_000;

fn replicas() -> Path {
    Path::fields(&["spec", "replicas"])
}

fn image_path(container: &str) -> Path {
    Path(vec![
        PathElement::field("spec"),
        PathElement::field("template"),
        PathElement::field("spec"),
        PathElement::field("containers"),
        PathElement::key([("name", json!(container))]),
        PathElement::field("image"),
    ])
}

fn conflicts(err: Error) -> fieldmanager::Conflicts {
    match err {
        Error::Conflict(c) => c,
        other => panic!("expected a conflict, got {other:?}"),
    }
}

#[test]
fn apply_creates_the_object_and_an_apply_entry() {
    let defs = defs();
    let fm = deployments(&defs);
    let out = fm
        .apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
        .unwrap();
    assert!(!out.no_op);
    let obj = &out.object;
    assert_eq!(obj["spec"]["replicas"], 3);
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    // The new object starts from the kind's zero value, as upstream's typed object does.
    assert_eq!(obj["status"], json!({}));
    assert_eq!(obj["spec"]["strategy"], json!({}));

    let e = entries(obj);
    assert_eq!(e.len(), 1);
    let keys: Vec<&str> = e[0]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut expected = vec![
        "apiVersion",
        "fieldsType",
        "fieldsV1",
        "manager",
        "operation",
        "time",
    ];
    let mut got = keys.clone();
    got.sort_unstable();
    expected.sort_unstable();
    assert_eq!(got, expected);
    assert_eq!(e[0]["manager"], "kubectl");
    assert_eq!(e[0]["operation"], "Apply");
    assert_eq!(e[0]["apiVersion"], "apps/v1");
    assert_eq!(e[0]["time"], "2023-11-14T22:13:20Z");
    assert_eq!(e[0]["fieldsType"], "FieldsV1");
    assert_eq!(
        fields_of(obj, "kubectl", "Apply"),
        r#"{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}}}}}}"#
    );
}

#[test]
fn reapplying_the_same_configuration_is_a_no_op() {
    let defs = defs();
    let fm = deployments(&defs);
    let cfg = web_config(3, "nginx:1.25");
    let live = stored(
        fm.apply(None, &cfg, "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let again = fm
        .apply(Some(&live), &cfg, "kubectl", false, at(T0 + 60))
        .unwrap();
    assert!(again.no_op);
    assert_eq!(again.object, live);
    // Forcing changes nothing either.
    let forced = fm
        .apply(Some(&live), &cfg, "kubectl", true, at(T0 + 90))
        .unwrap();
    assert!(forced.no_op);
}

#[test]
fn a_change_updates_the_entry_time() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let out = fm
        .apply(
            Some(&live),
            &web_config(4, "nginx:1.25"),
            "kubectl",
            false,
            at(T0 + 60),
        )
        .unwrap();
    assert!(!out.no_op);
    assert_eq!(out.object["spec"]["replicas"], 4);
    assert_eq!(
        entry(&out.object, "kubectl", "Apply")["time"],
        "2023-11-14T22:14:20Z"
    );
    assert_eq!(out.object["metadata"]["uid"], live["metadata"]["uid"]);
}

#[test]
fn fields_dropped_from_the_configuration_are_removed() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut cfg = web_config(3, "nginx:1.25");
    cfg["metadata"]["labels"]["tier"] = json!("frontend");
    let live = stored(
        fm.apply(None, &cfg, "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    assert_eq!(live["metadata"]["labels"]["tier"], "frontend");

    let mut cfg2 = web_config(3, "nginx:1.25");
    cfg2["spec"].as_object_mut().unwrap().remove("replicas");
    let out = fm
        .apply(Some(&live), &cfg2, "kubectl", false, at(T0 + 1))
        .unwrap();
    let obj = out.object;
    assert_eq!(obj["metadata"]["labels"], json!({"app": "web"}));
    assert!(obj["spec"].get("replicas").is_none());
    // What nobody applied stays.
    assert_eq!(obj["metadata"]["name"], "web");
    assert_eq!(obj["metadata"]["uid"], live["metadata"]["uid"]);
    assert_eq!(
        obj["spec"]["selector"],
        json!({"matchLabels": {"app": "web"}})
    );
    assert!(!owns(&obj, "kubectl", "Apply", &replicas()));
}

#[test]
fn a_dropped_field_another_manager_owns_stays() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let partial = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3}
    });
    let live = fm
        .apply(Some(&live), &partial, "scaler", false, at(T0 + 1))
        .unwrap()
        .object;
    let mut cfg2 = web_config(3, "nginx:1.25");
    cfg2["spec"].as_object_mut().unwrap().remove("replicas");
    let obj = fm
        .apply(Some(&live), &cfg2, "kubectl", false, at(T0 + 2))
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["replicas"], 3);
    assert!(owns(&obj, "scaler", "Apply", &replicas()));
    assert!(!owns(&obj, "kubectl", "Apply", &replicas()));
}

#[test]
fn equal_values_are_shared_without_conflict() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let other = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3}
    });
    let out = fm
        .apply(Some(&live), &other, "scaler", false, at(T0 + 5))
        .unwrap();
    // The object is the same, but there is a new entry: not a no-op.
    assert!(!out.no_op);
    assert!(owns(&out.object, "kubectl", "Apply", &replicas()));
    assert!(owns(&out.object, "scaler", "Apply", &replicas()));
    // The object did not change, so upstream gives the new entry no time.
    assert!(entry(&out.object, "scaler", "Apply").get("time").is_none());
    assert_eq!(
        fields_of(&out.object, "scaler", "Apply"),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
}

#[test]
fn a_different_value_conflicts_and_force_takes_it_over() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let other = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 5}
    });
    let err = fm
        .apply(Some(&live), &other, "helm", false, at(T0 + 5))
        .unwrap_err();
    assert_eq!(err.code(), 409);
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"
    );
    let status = err.to_status();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["status"], "Failure");
    assert_eq!(status["reason"], "Conflict");
    assert_eq!(status["code"], 409);
    assert_eq!(
        status["details"]["causes"],
        json!([{"reason": "FieldManagerConflict", "message": "conflict with \"kubectl\"", "field": ".spec.replicas"}])
    );
    let api = err.to_api_error();
    assert_eq!(api.code, 409);
    assert_eq!(api.causes().len(), 1);

    let out = fm
        .apply(Some(&live), &other, "helm", true, at(T0 + 6))
        .unwrap();
    assert_eq!(out.object["spec"]["replicas"], 5);
    assert!(owns(&out.object, "helm", "Apply", &replicas()));
    assert!(!owns(&out.object, "kubectl", "Apply", &replicas()));

    // The first manager now conflicts in turn.
    let err = fm
        .apply(
            Some(&out.object),
            &web_config(3, "nginx:1.25"),
            "kubectl-applier",
            false,
            at(T0 + 7),
        )
        .unwrap_err();
    let c = conflicts(err);
    assert_eq!(c.len(), 1);
    assert_eq!(c.0[0].path, replicas());
}

#[test]
fn conflicts_with_an_updater_name_its_version() {
    let defs = defs();
    let fm = deployments(&defs);
    let created = stored(fm.update(
        None,
        &web_config(3, "nginx:1.25"),
        "kubectl-client-side-apply",
        at(T0),
    ));
    let mut cfg = web_config(5, "nginx:1.26");
    cfg["metadata"].as_object_mut().unwrap().remove("labels");
    let err = fm
        .apply(Some(&created), &cfg, "helm", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"kubectl-client-side-apply\" using apps/v1:\n- .spec.replicas\n- .spec.template.spec.containers[name=\"nginx\"].image"
    );
    let causes = err.causes();
    assert_eq!(causes.len(), 2);
    assert_eq!(
        causes[1].message,
        "conflict with \"kubectl-client-side-apply\" using apps/v1"
    );
    assert_eq!(
        causes[1].field,
        ".spec.template.spec.containers[name=\"nginx\"].image"
    );

    let single = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"}, "spec": {"replicas": 5}
    });
    let err = fm
        .apply(Some(&created), &single, "helm", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl-client-side-apply\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn conflicts_with_several_managers_are_grouped() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "zeta", false, at(T0))
            .unwrap()
            .object,
    );
    let mut edited = live.clone();
    edited["metadata"]["labels"]["team"] = json!("a");
    let live = fm.update(Some(&live), &edited, "alpha", at(T0 + 1));
    let mut cfg = web_config(5, "nginx:1.25");
    cfg["metadata"]["labels"]["team"] = json!("b");
    let err = fm
        .apply(Some(&live), &cfg, "helm", false, at(T0 + 2))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 2 conflicts: conflicts with \"alpha\" using apps/v1:\n- .metadata.labels.team\nconflicts with \"zeta\":\n- .spec.replicas"
    );
}

#[test]
fn containers_merge_by_name_and_ports_by_port_and_protocol() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let sidecar = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP", "name": "http"}]},
            {"name": "proxy", "image": "envoy"}
        ]}}}
    });
    let obj = fm
        .apply(Some(&live), &sidecar, "mesh", false, at(T0 + 1))
        .unwrap()
        .object;
    let containers = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 2);
    assert_eq!(containers[0]["name"], "nginx");
    assert_eq!(containers[0]["image"], "nginx:1.25");
    assert_eq!(
        containers[0]["ports"],
        json!([{"containerPort": 80, "protocol": "TCP", "name": "http"}])
    );
    assert_eq!(containers[1], json!({"name": "proxy", "image": "envoy"}));
    assert_eq!(
        fields_of(&obj, "mesh", "Apply"),
        r#"{"f:spec":{"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:name":{},"f:ports":{"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{},"f:name":{},"f:protocol":{}}}},"k:{\"name\":\"proxy\"}":{".":{},"f:image":{},"f:name":{}}}}}}}"#
    );
    // kubectl still owns the image; the mesh owns the port name only.
    assert!(owns(&obj, "kubectl", "Apply", &image_path("nginx")));
}

#[test]
fn shared_list_items_follow_the_configuration_order() {
    let defs = defs();
    let fm = deployments(&defs);
    let three = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "a"}, {"name": "b", "image": "b"}, {"name": "c", "image": "c"}
        ]}}}
    });
    let live = stored(
        fm.apply(None, &three, "first", false, at(T0))
            .unwrap()
            .object,
    );
    let two = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"template": {"spec": {"containers": [
            {"name": "c", "image": "c"}, {"name": "a", "image": "a"}
        ]}}}
    });
    let obj = fm
        .apply(Some(&live), &two, "second", false, at(T0 + 1))
        .unwrap()
        .object;
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["b", "c", "a"]);

    // The only applier of b drops it: it goes.
    let obj = fm
        .apply(Some(&obj), &two, "first", false, at(T0 + 2))
        .unwrap()
        .object;
    let names: Vec<&str> = obj["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["c", "a"]);
}

#[test]
fn set_lists_merge_by_value() {
    let defs = defs();
    let fm = deployments(&defs);
    let with = |fin: &[&str]| {
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "finalizers": fin},
        })
    };
    let live = stored(
        fm.apply(None, &with(&["a.example/x"]), "one", false, at(T0))
            .unwrap()
            .object,
    );
    let obj = fm
        .apply(
            Some(&live),
            &with(&["b.example/y"]),
            "two",
            false,
            at(T0 + 1),
        )
        .unwrap()
        .object;
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["a.example/x", "b.example/y"])
    );
    assert_eq!(
        fields_of(&obj, "two", "Apply"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"b.example/y\"":{}}}}"#
    );
    let obj = fm
        .apply(Some(&obj), &with(&[]), "one", false, at(T0 + 2))
        .unwrap()
        .object;
    assert_eq!(obj["metadata"]["finalizers"], json!(["b.example/y"]));
}

#[test]
fn atomic_fields_are_single_leaves() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut cfg = web_config(1, "nginx");
    cfg["spec"]["template"]["spec"]["nodeSelector"] = json!({"disk": "ssd"});
    cfg["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["-v", "2"]);
    let live = stored(
        fm.apply(None, &cfg, "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let set = FieldSet::from_fields_v1(&entry(&live, "kubectl", "Apply")["fieldsV1"]).unwrap();
    assert!(set.has(Path::fields(&["spec", "selector"]).elements()));
    assert!(set.has(Path::fields(&["spec", "template", "spec", "nodeSelector"]).elements()));
    assert!(
        !set.has(Path::fields(&["spec", "template", "spec", "nodeSelector", "disk"]).elements())
    );
    let mut args = image_path("nginx");
    args.0.pop();
    args.0.push(PathElement::field("args"));
    assert!(set.has(args.elements()));

    // Another manager touching one key of an atomic map conflicts on the whole map.
    let other = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"selector": {"matchLabels": {"app": "web", "tier": "x"}}}
    });
    let err = fm
        .apply(Some(&live), &other, "other", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.selector"
    );
    // An atomic list is replaced, not merged.
    let mut cfg2 = cfg.clone();
    cfg2["spec"]["template"]["spec"]["containers"][0]["args"] = json!(["-q"]);
    let obj = fm
        .apply(Some(&live), &cfg2, "kubectl", false, at(T0 + 2))
        .unwrap()
        .object;
    assert_eq!(
        obj["spec"]["template"]["spec"]["containers"][0]["args"],
        json!(["-q"])
    );
}

#[test]
fn an_update_after_apply_takes_the_changed_field() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(7);
    let obj = fm.update(Some(&live), &scaled, "hpa-controller", at(T0 + 10));
    assert_eq!(obj["spec"]["replicas"], 7);
    let e = entry(&obj, "hpa-controller", "Update");
    assert_eq!(e["apiVersion"], "apps/v1");
    assert_eq!(e["time"], "2023-11-14T22:13:30Z");
    assert_eq!(
        fields_of(&obj, "hpa-controller", "Update"),
        r#"{"f:spec":{"f:replicas":{}}}"#
    );
    assert!(!owns(&obj, "kubectl", "Apply", &replicas()));
    // Apply entries sort before update entries.
    let ops: Vec<String> = entries(&obj)
        .iter()
        .map(|e| e["operation"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(ops, ["Apply", "Update"]);

    let err = fm
        .apply(
            Some(&obj),
            &web_config(3, "nginx:1.25"),
            "kubectl",
            false,
            at(T0 + 20),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"hpa-controller\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn invalid_configurations_are_rejected_as_upstream_does() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut wrong_version = web_config(1, "x");
    wrong_version["apiVersion"] = json!("apps/v1beta1");
    let err = fm
        .apply(None, &wrong_version, "m", false, at(T0))
        .unwrap_err();
    assert_eq!(err.code(), 400);
    assert_eq!(
        err.to_string(),
        "invalid object type: apps/v1beta1, Kind=Deployment"
    );
    assert_eq!(err.to_status()["reason"], "BadRequest");

    let mut no_kind = web_config(1, "x");
    no_kind.as_object_mut().unwrap().remove("kind");
    assert_eq!(
        fm.apply(None, &no_kind, "m", false, at(T0))
            .unwrap_err()
            .to_string(),
        "invalid object type: apps/v1, Kind="
    );

    let mut with_managed = web_config(1, "x");
    with_managed["metadata"]["managedFields"] = json!([]);
    let err = fm
        .apply(None, &with_managed, "m", false, at(T0))
        .unwrap_err();
    assert_eq!(
        (err.code(), err.to_string().as_str()),
        (400, "metadata.managedFields must be nil")
    );
    let mut null_managed = web_config(1, "x");
    null_managed["metadata"]["managedFields"] = Value::Null;
    assert!(fm.apply(None, &null_managed, "m", false, at(T0)).is_ok());

    let mut unknown = web_config(1, "x");
    unknown["spec"]["foo"] = json!(1);
    let err = fm.apply(None, &unknown, "m", false, at(T0)).unwrap_err();
    assert_eq!(err.code(), 500);
    assert_eq!(
        err.to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.foo: field not declared in schema"
    );
    let status = err.to_status();
    assert!(status.get("reason").is_none());
    assert_eq!(status["code"], 500);

    let mut wrong_type = web_config(1, "x");
    wrong_type["spec"]["replicas"] = json!("3");
    assert_eq!(
        fm.apply(None, &wrong_type, "m", false, at(T0))
            .unwrap_err()
            .to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.replicas: expected numeric (int or float), got string"
    );

    let mut dup = web_config(1, "x");
    dup["spec"]["template"]["spec"]["containers"] =
        json!([{"name": "nginx", "image": "a"}, {"name": "nginx", "image": "b"}]);
    assert_eq!(
        fm.apply(None, &dup, "m", false, at(T0))
            .unwrap_err()
            .to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: duplicate entries for key [name=\"nginx\"]"
    );

    let mut several = web_config(1, "x");
    several["spec"]["paused"] = json!("yes");
    several["metadata"]["labels"] = json!("nope");
    assert_eq!(
        fm.apply(None, &several, "m", false, at(T0))
            .unwrap_err()
            .to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): errors:\n  .metadata.labels: expected map, got &{nope}\n  .spec.paused: expected boolean, got &{yes}"
    );

    let mut null_item = web_config(1, "x");
    null_item["spec"]["template"]["spec"]["containers"] = json!([null]);
    assert_eq!(
        fm.apply(None, &null_item, "m", false, at(T0))
            .unwrap_err()
            .to_string(),
        "failed to create typed patch object (default/web; apps/v1, Kind=Deployment): .spec.template.spec.containers: element 0: associative list with keys may not have a null element"
    );
}

#[test]
fn status_is_not_owned_through_the_main_resource() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut cfg = web_config(1, "x");
    cfg["status"] = json!({"replicas": 9});
    let obj = fm
        .apply(None, &cfg, "kubectl", false, at(T0))
        .unwrap()
        .object;
    assert!(!fields_of(&obj, "kubectl", "Apply").contains("f:status"));
}

#[test]
fn kubectl_upgrades_from_client_side_apply() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut created = web_config(3, "nginx:1.25");
    let last = serde_json::to_string(&created).unwrap();
    created["metadata"]["annotations"] = json!({ LAST_APPLIED_ANNOTATION: last });
    let live = stored(fm.update(None, &created, "kubectl-client-side-apply", at(T0)));

    // A different manager conflicts on the changed fields.
    let cfg = web_config(5, "nginx:1.25");
    assert!(matches!(
        fm.apply(Some(&live), &cfg, "helm", false, at(T0 + 1)),
        Err(Error::Conflict(_))
    ));
    // kubectl takes over what its last-applied configuration still matches.
    let obj = fm
        .apply(Some(&live), &cfg, "kubectl", false, at(T0 + 1))
        .unwrap()
        .object;
    assert_eq!(obj["spec"]["replicas"], 5);
    assert!(owns(&obj, "kubectl", "Apply", &replicas()));
    assert!(!owns(
        &obj,
        "kubectl-client-side-apply",
        "Update",
        &replicas()
    ));
    // The annotation now holds the server-side applied configuration.
    let annotation = obj["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
        .as_str()
        .unwrap();
    assert!(annotation.ends_with('\n'));
    let parsed: Value = serde_json::from_str(annotation).unwrap();
    assert_eq!(parsed, cfg);

    // A field someone else changed since is still a conflict, and only it is reported.
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(7);
    let scaled = fm.update(Some(&live), &scaled, "hpa", at(T0 + 2));
    let mut cfg = web_config(5, "nginx:1.26");
    cfg["metadata"]["labels"] = json!({"app": "web"});
    let err = fm
        .apply(Some(&scaled), &cfg, "kubectl", false, at(T0 + 3))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"hpa\" using apps/v1: .spec.replicas"
    );
}

#[test]
fn the_first_apply_to_an_untracked_object_records_its_fields() {
    let defs = defs();
    let fm = deployments(&defs);
    // An object stored without managedFields (tracking reset).
    let mut live = stored(web_config(2, "nginx:1.25"));
    live["metadata"]["managedFields"] = json!([]);
    let mut reset = live.clone();
    reset["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    // Updates of untracked objects are not tracked.
    let mut edited = reset.clone();
    edited["metadata"]["labels"]["x"] = json!("y");
    let edited = fm.update(Some(&reset), &edited, "editor", at(T0));
    assert!(edited["metadata"].get("managedFields").is_none());

    let cfg = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "spec": {"replicas": 3}
    });
    let err = fm
        .apply(Some(&edited), &cfg, "applier", false, at(T0 + 1))
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"before-first-apply\" using apps/v1: .spec.replicas"
    );
    let obj = fm
        .apply(Some(&edited), &cfg, "applier", true, at(T0 + 2))
        .unwrap()
        .object;
    let before = entry(&obj, "before-first-apply", "Update");
    assert_eq!(before["time"], "2023-11-14T22:13:22Z");
    assert!(owns(
        &obj,
        "before-first-apply",
        "Update",
        &image_path("nginx")
    ));
    assert!(owns(
        &obj,
        "before-first-apply",
        "Update",
        &Path::fields(&["metadata", "labels", "x"])
    ));
    assert!(!owns(&obj, "before-first-apply", "Update", &replicas()));
    assert!(owns(&obj, "applier", "Apply", &replicas()));
}

#[test]
fn apply_through_the_status_subresource() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let status_fm = fieldmanager::FieldManager::new(
        fieldmanager::ObjectSchema::builtin(deployment_root(&defs), &defs),
        deployment_gvk(),
    )
    .with_subresource("status")
    .with_reset_fields(FieldSet::from_paths(&[Path::fields(&["spec"])]));
    let cfg = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
        "status": {"replicas": 3, "conditions": [{"type": "Available", "status": "True"}]}
    });
    let obj = status_fm
        .apply(Some(&live), &cfg, "controller", false, at(T0 + 1))
        .unwrap()
        .object;
    let e = entry(&obj, "controller", "Apply");
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        fields_of(&obj, "controller", "Apply"),
        r#"{"f:status":{"f:conditions":{"k:{\"type\":\"Available\"}":{".":{},"f:status":{},"f:type":{}}},"f:replicas":{}}}"#
    );
    // A second applier of the same name through the main resource is another entry.
    let obj = fm
        .apply(
            Some(&obj),
            &web_config(3, "nginx"),
            "controller",
            false,
            at(T0 + 2),
        )
        .unwrap()
        .object;
    assert_eq!(
        entries(&obj)
            .iter()
            .filter(|e| e["manager"] == "controller")
            .count(),
        2
    );
}

fn finalizers(items: &[&str]) -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "finalizers": items}
    })
}

#[test]
fn set_items_interleave_as_upstream_orders_them() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &finalizers(&["a", "c"]), "default", false, at(T0))
            .unwrap()
            .object,
    );
    let mut next = live.clone();
    next["metadata"]["finalizers"] = json!(["a", "b", "c", "d"]);
    let live = fm.update(Some(&live), &next, "controller", at(T0 + 1));
    assert_eq!(
        fields_of(&live, "controller", "Update"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"b\"":{},"v:\"d\"":{}}}}"#
    );
    let obj = fm
        .apply(
            Some(&live),
            &finalizers(&["a", "aprime", "c", "cprime"]),
            "default",
            false,
            at(T0 + 2),
        )
        .unwrap()
        .object;
    assert_eq!(
        obj["metadata"]["finalizers"],
        json!(["a", "b", "aprime", "c", "d", "cprime"])
    );
    assert_eq!(
        fields_of(&obj, "default", "Apply"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"a\"":{},"v:\"aprime\"":{},"v:\"c\"":{},"v:\"cprime\"":{}}}}"#
    );
    assert_eq!(
        fields_of(&obj, "controller", "Update"),
        r#"{"f:metadata":{"f:finalizers":{"v:\"b\"":{},"v:\"d\"":{}}}}"#
    );
}

#[test]
fn reordering_a_set_reorders_the_object() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(
            None,
            &finalizers(&["a", "b", "c", "d"]),
            "default",
            false,
            at(T0),
        )
        .unwrap()
        .object,
    );
    let obj = fm
        .apply(
            Some(&live),
            &finalizers(&["a", "d", "c", "b"]),
            "default",
            false,
            at(T0 + 1),
        )
        .unwrap()
        .object;
    assert_eq!(obj["metadata"]["finalizers"], json!(["a", "d", "c", "b"]));
}
