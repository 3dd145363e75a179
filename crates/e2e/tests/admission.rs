//! Built-in admission plugins through the real kubectl: LimitRanger defaults visible in the
//! created pod and its min/max refusal, DefaultTolerationSeconds, NamespaceLifecycle (system
//! namespaces cannot be deleted, terminating namespaces take no new objects), and
//! `--disable-admission-plugins` / unknown plugin names.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::RkubeServer;

fn pod(name: &str, resources: Value) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "dev"},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1", "resources": resources}]},
    })
    .to_string()
}

const LIMITS: &str = r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"limits","namespace":"dev"},
"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"128Mi"},"defaultRequest":{"cpu":"100m"},"min":{"cpu":"50m"},"max":{"cpu":"1"}}]}}"#;

#[test]
fn built_in_plugins() {
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "dev"]);
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], LIMITS);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // LimitRanger defaults and its annotation.
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &pod("p1", json!({})));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "p1", "-n", "dev", "-o", "json"])).unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web"
    );
    // DefaultTolerationSeconds.
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t["key"] == key
                && t["tolerationSeconds"] == 300
                && t["effect"] == "NoExecute"),
            "{tolerations:?}"
        );
    }
    // Below min / above max: refused with upstream's message.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-"],
        &pod(
            "p2",
            json!({"requests": {"cpu": "10m"}, "limits": {"cpu": "2"}}),
        ),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (Forbidden): error when creating \"STDIN\": pods \"p2\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, maximum cpu usage per Container is 1, but limit is 2]"),
        "{err}"
    );

    // NamespaceLifecycle: system namespaces stay.
    let out = server.kubectl_v(Some("1.33"), &["delete", "namespace", "kube-system"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("namespaces \"kube-system\" is forbidden: this namespace may not be deleted"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A namespace kept Terminating by a finalizer takes no new objects.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"going","finalizers":["example.com/hold"]}}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = server.kubectl_v(
        Some("1.33"),
        &["delete", "namespace", "going", "--wait=false"],
    );
    let out = server.kubectl_v(Some("1.33"), &["create", "configmap", "new", "-n", "going"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("because it is being terminated"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn plugins_can_be_disabled_and_unknown_names_fail() {
    let server = RkubeServer::start_with(&[
        "--disable-admission-plugins=LimitRanger,DefaultTolerationSeconds",
    ]);
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "dev"]);
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], LIMITS);
    assert!(out.status.success());
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &pod("p1", json!({})));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "p1", "-n", "dev", "-o", "json"])).unwrap();
    assert!(
        p["spec"]["containers"][0]["resources"]
            .as_object()
            .is_none_or(|r| r.is_empty()),
        "{p}"
    );
    assert!(p["spec"]["tolerations"].is_null(), "{p}");

    let out = std::process::Command::new(testkit::rkube_binary())
        .args(["server", "--enable-admission-plugins=Nope", "--data-dir"])
        .arg(server.dir.path().join("other"))
        .args(["--https-port", "1", "--disable-agent"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("enable-admission-plugins plugin \"Nope\" is unknown"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
