//! The garbage collector over every resource, with the real kubectl 1.33: dependents of a
//! custom resource go with it (background and foreground), an object whose only owner
//! never existed is deleted while one with a live owner just loses the dangling
//! reference, orphaning works on any kind, and `kubectl delete namespace --cascade=orphan`
//! completes (the collector removes the namespace's `orphan` finalizer).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::{RkubeServer, eventually, wait_until};

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;

fn kubectl(server: &RkubeServer, args: &[&str]) -> String {
    server.kubectl_ok(Some("1.33"), args)
}

fn uid(server: &RkubeServer, what: &[&str]) -> String {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    args.extend_from_slice(&["-o", "jsonpath={.metadata.uid}"]);
    kubectl(server, &args)
}

fn exists(server: &RkubeServer, what: &[&str]) -> bool {
    let mut args = vec!["get"];
    args.extend_from_slice(what);
    server.kubectl_v(Some("1.33"), &args).status.success()
}

fn owned_config_map(name: &str, owners: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default", "ownerReferences": owners},
        "data": {"k": "v"}})
}

fn owner_ref(api_version: &str, kind: &str, name: &str, uid: &str, block: bool) -> Value {
    json!({"apiVersion": api_version, "kind": kind, "name": name, "uid": uid,
        "blockOwnerDeletion": block})
}

#[test]
fn garbage_collector_covers_every_resource() {
    let server = RkubeServer::start();
    let o = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], CRD);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    server.wait_for_object(&["get", "widgets"]);

    // A custom resource owning a config map and a secret: both go with it.
    server.create_json(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default"}}));
    let w1 = uid(&server, &["widget", "w1"]);
    server.create_json(&owned_config_map(
        "of-w1",
        json!([owner_ref("example.com/v1", "Widget", "w1", &w1, false)]),
    ));
    server.create_json(&json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "of-w1", "namespace": "default",
                "ownerReferences": [owner_ref("example.com/v1", "Widget", "w1", &w1, true)]},
            "stringData": {"k": "v"}}));
    kubectl(&server, &["delete", "widget", "w1"]);
    eventually(
        "dependents of a deleted custom resource are collected",
        || !exists(&server, &["configmap", "of-w1"]) && !exists(&server, &["secret", "of-w1"]),
    );

    // Foreground: the owner waits for its blocking dependent, then goes.
    server.create_json(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w2", "namespace": "default"}}));
    let w2 = uid(&server, &["widget", "w2"]);
    server.create_json(&owned_config_map(
        "of-w2",
        json!([owner_ref("example.com/v1", "Widget", "w2", &w2, true)]),
    ));
    kubectl(
        &server,
        &[
            "delete",
            "widget",
            "w2",
            "--cascade=foreground",
            "--wait=false",
        ],
    );
    eventually("foreground deletion of a custom resource", || {
        !exists(&server, &["configmap", "of-w2"]) && !exists(&server, &["widget", "w2"])
    });

    // Orphan: the dependent stays, without the reference.
    server.create_json(&json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w3", "namespace": "default"}}));
    let w3 = uid(&server, &["widget", "w3"]);
    server.create_json(&owned_config_map(
        "of-w3",
        json!([owner_ref("example.com/v1", "Widget", "w3", &w3, true)]),
    ));
    kubectl(&server, &["delete", "widget", "w3", "--cascade=orphan"]);
    eventually("orphaned dependent released", || {
        !exists(&server, &["widget", "w3"])
            && kubectl(
                &server,
                &[
                    "get",
                    "configmap",
                    "of-w3",
                    "-o",
                    "jsonpath={.metadata.ownerReferences}",
                ],
            )
            .is_empty()
    });

    // Dangling owners: the only owner never existed → deleted; a live owner beside a
    // dangling one → only the dangling reference goes.
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "keeper", "namespace": "default"},
        "spec": {"ports": [{"port": 80}]}});
    server.create_json(&svc);
    let keeper = uid(&server, &["service", "keeper"]);
    let ghost = "00000000-0000-0000-0000-00000000dead";
    server.create_json(&owned_config_map(
        "dangling",
        json!([owner_ref("apps/v1", "Deployment", "ghost", ghost, false)]),
    ));
    server.create_json(&owned_config_map(
        "half-dangling",
        json!([
            owner_ref("v1", "Service", "keeper", &keeper, false),
            owner_ref("apps/v1", "Deployment", "ghost", ghost, false)
        ]),
    ));
    eventually(
        "an object whose only owner never existed is collected",
        || !exists(&server, &["configmap", "dangling"]),
    );
    eventually(
        "a dangling reference beside a live owner is dropped",
        || {
            let refs = kubectl(
                &server,
                &[
                    "get",
                    "configmap",
                    "half-dangling",
                    "-o",
                    "jsonpath={.metadata.ownerReferences[*].kind}",
                ],
            );
            refs == "Service"
        },
    );

    // An owner in another namespace cannot own: the dependent is collected and gets
    // upstream's OwnerRefInvalidNamespace warning.
    kubectl(&server, &["create", "namespace", "elsewhere"]);
    server.create_json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "cross", "namespace": "elsewhere",
            "ownerReferences": [owner_ref("v1", "Service", "keeper", &keeper, false)]}}));
    wait_until(
        "a dependent of an owner in another namespace is collected",
        60,
        || !exists(&server, &["configmap", "cross", "-n", "elsewhere"]),
    );
    wait_until("the OwnerRefInvalidNamespace event", 30, || {
        kubectl(
            &server,
            &[
                "get",
                "events",
                "-n",
                "elsewhere",
                "--field-selector",
                "reason=OwnerRefInvalidNamespace",
            ],
        )
        .contains("does not exist in namespace \"elsewhere\"")
    });

    // A namespace deleted with --cascade=orphan: the collector removes the `orphan`
    // finalizer and the namespace goes.
    kubectl(&server, &["create", "namespace", "scratch"]);
    kubectl(&server, &["create", "configmap", "keep", "-n", "scratch"]);
    let o = server.kubectl_v(
        Some("1.33"),
        &[
            "delete",
            "namespace",
            "scratch",
            "--cascade=orphan",
            "--timeout=60s",
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(!exists(&server, &["namespace", "scratch"]));
}
