//! Namespace deletion with the real kubectl: `kubectl delete ns` waits while the
//! namespace controller deletes its content (ConfigMaps, Secrets, a Deployment with its
//! ReplicaSet and pods, a Role), then the namespace is gone; a namespace held by content
//! with a finalizer stays `Terminating`, takes no new content, and goes once the
//! finalizer is removed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, eventually};

const V: Option<&str> = Some("1.33");

fn apply(server: &RkubeServer, obj: &Value) {
    let o = server.kubectl_stdin(V, &["apply", "-f", "-"], &obj.to_string());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

fn json_of(server: &RkubeServer, args: &[&str]) -> Value {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(V, &a)).unwrap()
}

fn count(server: &RkubeServer, args: &[&str]) -> usize {
    json_of(server, args)["items"]
        .as_array()
        .map_or(0, |a| a.len())
}

/// Polls `f` for up to a minute (namespace deletion re-checks every few seconds).
fn within_a_minute(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn deleting_a_namespace_deletes_its_content() {
    let server = RkubeServer::start();
    server.kubectl_ok(V, &["create", "namespace", "doomed"]);
    let ns = json_of(&server, &["namespace", "doomed"]);
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    assert_eq!(ns["status"]["phase"], "Active");
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "doomed"]);

    let n = |args: &[&str]| server.kubectl_ok(V, args);
    n(&[
        "create",
        "configmap",
        "settings",
        "-n",
        "doomed",
        "--from-literal=a=b",
    ]);
    n(&[
        "create",
        "secret",
        "generic",
        "creds",
        "-n",
        "doomed",
        "--from-literal=p=q",
    ]);
    n(&[
        "create",
        "role",
        "reader",
        "-n",
        "doomed",
        "--verb=get",
        "--resource=pods",
    ]);
    n(&[
        "create",
        "deployment",
        "web",
        "-n",
        "doomed",
        "--image=registry.local/web:1",
        "--replicas=2",
    ]);
    eventually("the ReplicaSet and its pods", || {
        count(&server, &["rs", "-n", "doomed"]) == 1
            && count(&server, &["pods", "-n", "doomed"]) == 2
    });

    // kubectl waits until the namespace is gone.
    let started = Instant::now();
    let out = server.kubectl_ok(V, &["delete", "namespace", "doomed", "--timeout=120s"]);
    assert_eq!(out.trim(), "namespace \"doomed\" deleted");
    assert!(started.elapsed() < Duration::from_secs(120));

    let o = server.kubectl_v(V, &["get", "namespace", "doomed"]);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Error from server (NotFound): namespaces \"doomed\" not found"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let left = server.kubectl_ok(
        V,
        &[
            "get",
            "cm,secret,sa,deploy,rs,pods,role",
            "-n",
            "doomed",
            "-o",
            "name",
        ],
    );
    assert_eq!(left.trim(), "", "left behind: {left}");

    // The name can be used again: a fresh namespace, with nothing of the old one.
    n(&["create", "namespace", "doomed"]);
    assert_eq!(
        count(
            &server,
            &[
                "cm",
                "-n",
                "doomed",
                "--field-selector=metadata.name=settings"
            ]
        ),
        0
    );
}

#[test]
fn content_with_a_finalizer_holds_a_terminating_namespace() {
    let server = RkubeServer::start();
    let n = |args: &[&str]| server.kubectl_ok(V, args);
    n(&["create", "namespace", "held"]);
    apply(
        &server,
        &json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "pinned", "namespace": "held", "finalizers": ["example.com/hold"]},
            "data": {"a": "b"}}),
    );
    n(&["create", "configmap", "plain", "-n", "held"]);

    let out = n(&["delete", "namespace", "held", "--wait=false"]);
    assert_eq!(out.trim(), "namespace \"held\" deleted");
    // A second delete is answered the same way.
    let out = n(&["delete", "namespace", "held", "--wait=false"]);
    assert_eq!(out.trim(), "namespace \"held\" deleted");

    let table = n(&["get", "namespace", "held"]);
    let row = table.lines().nth(1).unwrap_or_default().to_string();
    assert!(
        row.starts_with("held") && row.contains("Terminating"),
        "{table}"
    );
    let ns = json_of(&server, &["namespace", "held"]);
    assert!(ns["metadata"]["deletionTimestamp"].is_string(), "{ns}");
    assert_eq!(ns["status"]["phase"], "Terminating");

    // No new content, whichever way it is created.
    let o = server.kubectl_v(V, &["create", "configmap", "new", "-n", "held"]);
    assert!(!o.status.success());
    assert_eq!(
        String::from_utf8_lossy(&o.stderr).trim(),
        "error: failed to create configmap: configmaps \"new\" is forbidden: unable to create new content in namespace held because it is being terminated"
    );
    let o = server.kubectl_stdin(
        V,
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"late","namespace":"held"}}"#,
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains(
            "Error from server (Forbidden): error when creating \"STDIN\": secrets \"late\" is forbidden: unable to create new content in namespace held because it is being terminated"
        ),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // The controller deletes what it can; the pinned ConfigMap waits for its finalizer,
    // and the namespace says so.
    within_a_minute("the conditions of the held namespace", || {
        let ns = json_of(&server, &["namespace", "held"]);
        let cond = |t: &str| {
            ns["status"]["conditions"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|c| c["type"] == t)
                .cloned()
                .unwrap_or(Value::Null)
        };
        cond("NamespaceContentRemaining")["message"]
            == "Some resources are remaining: configmaps. has 1 resource instances"
            && cond("NamespaceFinalizersRemaining")["message"]
                == "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"
            && cond("NamespaceDeletionDiscoveryFailure")["status"] == "False"
    });
    let cms = json_of(&server, &["configmaps", "-n", "held"]);
    let names: Vec<&str> = cms["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, vec!["pinned"], "{cms}");
    assert!(cms["items"][0]["metadata"]["deletionTimestamp"].is_string());
    assert_eq!(
        n(&[
            "get",
            "namespace",
            "held",
            "-o",
            "jsonpath={.spec.finalizers}"
        ]),
        "[\"kubernetes\"]"
    );

    // Releasing the ConfigMap lets the namespace go.
    n(&[
        "patch",
        "configmap",
        "pinned",
        "-n",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ]);
    within_a_minute("the namespace to go", || {
        !server
            .kubectl_v(V, &["get", "namespace", "held"])
            .status
            .success()
    });
    assert_eq!(
        n(&["get", "configmaps", "-n", "held", "-o", "name"]).trim(),
        ""
    );
}
