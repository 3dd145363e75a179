//! The JSON patches and JSON merge patches kubectl sends, applied to a stored object.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use patch::{PatchError, json_patch, merge_patch, merge_patch_document};
use serde_json::{Value, json};

fn pod() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "resourceVersion": "5",
                     "labels": {"app": "web", "tier": "frontend"},
                     "annotations": {"a.example.com/x": "1"}},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.1", "args": ["-v"]}],
                 "tolerations": [{"key": "k", "operator": "Exists"}]}
    })
}

#[test]
fn kubectl_label_and_annotate_merge_patches() {
    // `kubectl label pod p env=prod tier-`
    let out = merge_patch_document(
        &pod(),
        &json!({"metadata": {"labels": {"env": "prod", "tier": null}}}),
    )
    .unwrap();
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "env": "prod"})
    );
    // `kubectl annotate pod p a.example.com/x- --resource-version=5`
    let out = merge_patch_document(
        &pod(),
        &json!({"metadata": {"annotations": {"a.example.com/x": null}, "resourceVersion": "5"}}),
    )
    .unwrap();
    assert_eq!(out["metadata"]["annotations"], json!({}));
    assert_eq!(out["spec"], pod()["spec"]);
}

#[test]
fn kubectl_scale_merge_patch() {
    let scale = json!({"apiVersion": "autoscaling/v1", "kind": "Scale",
                       "metadata": {"name": "web"}, "spec": {"replicas": 1}, "status": {"replicas": 1}});
    let out = merge_patch(&scale, &json!({"spec": {"replicas": 3}}));
    assert_eq!(out["spec"], json!({"replicas": 3}));
    assert_eq!(out["status"], json!({"replicas": 1}));
}

#[test]
fn merge_patch_replaces_lists() {
    let out = merge_patch(
        &pod(),
        &json!({"spec": {"containers": [{"name": "d", "image": "busybox", "command": null}]}}),
    );
    assert_eq!(
        out["spec"]["containers"],
        json!([{"name": "d", "image": "busybox"}])
    );
}

#[test]
fn merge_patch_document_errors() {
    for bad in [Value::Null, json!(1), json!("x"), json!(true)] {
        let err = merge_patch_document(&pod(), &bad).unwrap_err();
        assert_eq!(err, PatchError::InvalidMergePatch);
        assert_eq!(err.to_string(), "Invalid JSON Patch");
        assert_eq!(err.status_code(), 400);
    }
}

#[test]
fn kubectl_patch_type_json() {
    // `kubectl patch pod p --type=json -p '[...]'`
    let out = json_patch(
        &pod(),
        &json!([
            {"op": "replace", "path": "/spec/containers/0/image", "value": "nginx:1.2"},
            {"op": "add", "path": "/spec/containers/0/args/-", "value": "--debug"},
            {"op": "remove", "path": "/metadata/labels/tier"},
            {"op": "add", "path": "/metadata/annotations/b.example.com~1y", "value": "2"},
            {"op": "test", "path": "/metadata/resourceVersion", "value": "5"},
            {"op": "copy", "from": "/metadata/labels/app", "path": "/metadata/labels/copied"},
            {"op": "move", "from": "/spec/tolerations/0", "path": "/spec/tolerations/-"}
        ]),
    )
    .unwrap();
    assert_eq!(out["spec"]["containers"][0]["image"], "nginx:1.2");
    assert_eq!(
        out["spec"]["containers"][0]["args"],
        json!(["-v", "--debug"])
    );
    assert_eq!(
        out["metadata"]["labels"],
        json!({"app": "web", "copied": "web"})
    );
    assert_eq!(out["metadata"]["annotations"]["b.example.com/y"], "2");
    assert_eq!(out["spec"]["tolerations"], pod()["spec"]["tolerations"]);
}

#[test]
fn json_patch_failures_are_422_with_upstreams_status() {
    let err = json_patch(
        &pod(),
        &json!([{"op": "test", "path": "/metadata/resourceVersion", "value": "4"}]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "testing value /metadata/resourceVersion failed: test failed"
    );
    assert_eq!(err.status_code(), 422);
    assert_eq!(
        err.to_status(),
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "the server rejected our request due to an error in our request",
               "reason": "Invalid", "details": {}, "code": 422})
    );
    let err = json_patch(
        &pod(),
        &json!([{"op": "remove", "path": "/spec/containers/3"}]),
    )
    .unwrap_err();
    assert_eq!(
        err.to_string(),
        "error in remove for path: '/spec/containers/3': Unable to access invalid index: 3: invalid index referenced"
    );
    let err = json_patch(&pod(), &json!({"op": "add"})).unwrap_err();
    assert_eq!(err.status_code(), 400);
}
