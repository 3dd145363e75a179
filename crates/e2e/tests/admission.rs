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

#[test]
fn resource_quota_is_exact_under_concurrent_creates() {
    let server = std::sync::Arc::new(RkubeServer::start());
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "q"]);
    k(&[
        "create",
        "quota",
        "objects",
        "-n",
        "q",
        "--hard=configmaps=5,pods=1",
    ]);
    let handles: Vec<_> = (0..10)
        .map(|i| {
            let server = std::sync::Arc::clone(&server);
            std::thread::spawn(move || {
                let name = format!("cm-{i}");
                server.kubectl_v(Some("1.33"), &["create", "configmap", &name, "-n", "q"])
            })
        })
        .collect();
    let outs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let created = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(created, 5, "exactly the quota's hard limit is created");
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=5, limited: configmaps=5"),
            "{err}"
        );
    }
    let used = |res: &str| {
        k(&[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            &format!("jsonpath={{.status.used.{res}}}"),
        ])
    };
    assert_eq!(used("configmaps"), "5");
    assert_eq!(
        k(&["get", "configmaps", "-n", "q", "-o", "name"])
            .lines()
            .count(),
        5
    );
    // A delete gives the usage back.
    let first = k(&["get", "configmaps", "-n", "q", "-o", "name"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    k(&["delete", &first, "-n", "q"]);
    assert_eq!(used("configmaps"), "4");
    // Pods: upstream's message through kubectl run.
    k(&["run", "one", "-n", "q", "--image=registry.local/web:1"]);
    let out = server.kubectl_v(
        Some("1.33"),
        &["run", "two", "-n", "q", "--image=registry.local/web:1"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (Forbidden): pods \"two\" is forbidden: exceeded quota: objects, requested: pods=1, used: pods=1, limited: pods=1"),
        "{err}"
    );
}
