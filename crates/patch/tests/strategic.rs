//! Strategic merge patch: the cases of `tests/data/strategic.json` (upstream's test themes
//! from `strategicpatch/patch_test.go`, and the patches kubectl sends), plus error statuses.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use patch::{PatchError, strategic_merge_patch};
use serde_json::{Value, json};

fn fixtures() -> Value {
    serde_json::from_str(include_str!("data/strategic.json")).expect("fixtures parse")
}

#[test]
fn fixture_cases() {
    let data = fixtures();
    let generic = common::generic();
    let deployment = common::deployment();
    let generic_root = common::root("test.Root");
    let deployment_root = common::root("io.k8s.api.apps.v1.Deployment");
    let cases = data["cases"].as_array().expect("cases");
    assert!(cases.len() > 80);
    for case in cases {
        let name = case["name"].as_str().expect("name");
        let doc = match &case["doc"] {
            Value::String(shared) => data["documents"][shared.as_str()].clone(),
            doc => doc.clone(),
        };
        let result = match case["schema"].as_str() {
            Some("root") => strategic_merge_patch(&doc, &case["patch"], &generic_root, &generic),
            Some("deployment") => {
                strategic_merge_patch(&doc, &case["patch"], &deployment_root, &deployment)
            }
            other => panic!("{name}: unknown schema {other:?}"),
        };
        if let Some(expected) = case.get("expected") {
            assert_eq!(result.as_ref().ok(), Some(expected), "{name}: {result:?}");
        } else if let Some(message) = case.get("error").and_then(Value::as_str) {
            let err = result.expect_err(name);
            assert_eq!(err.to_string(), message, "{name}");
            assert!(!matches!(err, PatchError::UpstreamPanic(_)), "{name}");
        } else {
            assert!(
                matches!(result, Err(PatchError::UpstreamPanic(_))),
                "{name}: {result:?}"
            );
        }
    }
}

fn deployment_doc() -> Value {
    fixtures()["documents"]["deployment"].clone()
}

fn apply(doc: &Value, patch: Value) -> Result<Value, PatchError> {
    strategic_merge_patch(
        doc,
        &patch,
        &common::root("io.k8s.api.apps.v1.Deployment"),
        &common::deployment(),
    )
}

#[test]
fn kubectl_set_image() {
    let doc = deployment_doc();
    let out = apply(
        &doc,
        json!({"spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx:1.2"}]}}}}),
    )
    .unwrap();
    let containers = &out["spec"]["template"]["spec"]["containers"];
    assert_eq!(containers[0]["name"], "nginx");
    assert_eq!(containers[0]["image"], "nginx:1.2");
    assert_eq!(
        containers[0]["env"],
        doc["spec"]["template"]["spec"]["containers"][0]["env"]
    );
    assert_eq!(containers[1]["name"], "sidecar");
    assert_eq!(containers.as_array().unwrap().len(), 2);
}

#[test]
fn kubectl_apply_with_directives() {
    let doc = deployment_doc();
    // Adds a container between the two, removes the emptyDir source of a volume in favour
    // of a config map, and switches to the Recreate strategy.
    let out = apply(
        &doc,
        json!({"spec": {
            "strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"},
            "template": {"spec": {
                "$setElementOrder/containers": [{"name": "nginx"}, {"name": "logger"}, {"name": "sidecar"}],
                "containers": [{"name": "logger", "image": "fluentd"}],
                "$setElementOrder/volumes": [{"name": "data"}, {"name": "cfg"}],
                "volumes": [{"$retainKeys": ["configMap", "name"], "configMap": {"name": "c"}, "name": "data"}]
            }}
        }}),
    )
    .unwrap();
    let names: Vec<&str> = out["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["nginx", "logger", "sidecar"]);
    assert_eq!(
        out["spec"]["template"]["spec"]["volumes"][0],
        json!({"name": "data", "configMap": {"name": "c"}})
    );
    assert_eq!(out["spec"]["strategy"], json!({"type": "Recreate"}));
}

#[test]
fn label_and_annotation_deletions() {
    let doc = deployment_doc();
    let out = apply(
        &doc,
        json!({"metadata": {"labels": {"tier": null, "new": "x"}, "annotations": {"deployment.kubernetes.io/revision": null}}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["labels"], json!({"app": "web", "new": "x"}));
    assert_eq!(out["metadata"]["annotations"], json!({}));
}

#[test]
fn error_statuses() {
    let doc = deployment_doc();
    // A merged list item without its merge key: upstream's plain error, answered with 500.
    let err = apply(
        &doc,
        json!({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}),
    )
    .unwrap_err();
    assert_eq!(err.status_code(), 500);
    assert_eq!(
        err.to_status(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "map: map[image:x] does not contain declared merge key: name", "code": 500})
    );
    // Malformed directives are 400.
    let err = apply(
        &doc,
        json!({"metadata": {"$deleteFromPrimitiveList": ["a"]}}),
    )
    .unwrap_err();
    assert_eq!(err, PatchError::BadPatchFormatForPrimitiveList);
    assert_eq!(err.status_code(), 400);
    let err = apply(&doc, json!({"spec": {"strategy": {"$retainKeys": "type"}}})).unwrap_err();
    assert_eq!(err, PatchError::BadPatchFormatForRetainKeys);
    let err = apply(&doc, json!({"spec": {"$setElementOrderX/containers": []}})).unwrap_err();
    assert_eq!(err, PatchError::BadPatchFormatForSetElementOrderList);
    // A body that is not an object.
    let err = apply(&doc, json!([1])).unwrap_err();
    assert_eq!(
        err.to_string(),
        "json: cannot unmarshal array into Go value of type map[string]interface {}"
    );
    assert_eq!(err.status_code(), 400);
    // Lists of lists are 422.
    let err = apply(
        &json!({"metadata": {"finalizers": [["a"]]}}),
        json!({"metadata": {"finalizers": [["b"]]}}),
    )
    .unwrap_err();
    assert_eq!(err, PatchError::NoListOfLists);
    assert_eq!(err.status_code(), 422);
}

#[test]
fn null_and_empty_patches() {
    let doc = deployment_doc();
    assert_eq!(apply(&doc, Value::Null).unwrap(), doc);
    assert_eq!(apply(&doc, json!({})).unwrap(), doc);
    assert_eq!(
        apply(&Value::Null, json!({"a": 1})).unwrap(),
        json!({"a": 1})
    );
    assert_eq!(
        apply(&json!("x"), json!({"a": 1})).unwrap_err(),
        PatchError::BadJsonDoc
    );
}

#[test]
fn without_schema_lists_replace_and_nothing_is_unknown() {
    let defs = common::Defs(Default::default());
    let doc = json!({"a": {"b": [1, 2], "c": {"d": 1}}, "e": 1});
    let out = strategic_merge_patch(
        &doc,
        &json!({"a": {"b": [3], "c": {"f": 2}, "g": null}, "h": {"i": null}}),
        &Value::Null,
        &defs,
    )
    .unwrap();
    assert_eq!(
        out,
        json!({"a": {"b": [3], "c": {"d": 1, "f": 2}}, "e": 1, "h": {}})
    );
    // A reference that does not resolve means no information either.
    let out = strategic_merge_patch(
        &doc,
        &json!({"a": {"c": {"x": 1}}}),
        &common::root("nowhere"),
        &defs,
    )
    .unwrap();
    assert_eq!(out["a"]["c"], json!({"d": 1, "x": 1}));
}

#[test]
fn deep_patches_are_refused() {
    let mut patch = json!(1);
    for _ in 0..200 {
        patch = json!({ "a": patch });
    }
    let defs = common::Defs(Default::default());
    assert_eq!(
        strategic_merge_patch(&json!({}), &patch, &Value::Null, &defs),
        Err(PatchError::TooDeep {
            limit: patch::MAX_DEPTH
        })
    );
    // At the limit, the patch applies (recursion stays within the test thread's stack).
    let mut patch = json!(1);
    let mut doc = json!(0);
    for _ in 0..patch::MAX_DEPTH {
        patch = json!({ "a": patch });
        doc = json!({ "a": doc });
    }
    assert_eq!(
        strategic_merge_patch(&doc, &patch, &Value::Null, &defs).unwrap(),
        patch
    );
}
