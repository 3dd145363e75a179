//! Built-in admission plugins through the real kubectl: LimitRanger defaults visible in the
//! created pod and its min/max refusal, DefaultTolerationSeconds, NamespaceLifecycle (system
//! namespaces cannot be deleted, terminating namespaces take no new objects), ResourceQuota,
//! ServiceAccount (default account, token volume, pull secrets, with the per-namespace
//! account and root CA bundle the server keeps), and `--disable-admission-plugins` / unknown
//! plugin names.

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
    // The namespace's root CA bundle is one of its config maps, as upstream: with it in
    // place, a hard limit of 6 leaves room for exactly five more.
    server.wait_for_object(&["get", "configmap", "kube-root-ca.crt", "-n", "q"]);
    k(&[
        "create",
        "quota",
        "objects",
        "-n",
        "q",
        "--hard=configmaps=6,pods=1",
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
            err.contains("is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=6, limited: configmaps=6"),
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
    assert_eq!(used("configmaps"), "6");
    let names = k(&["get", "configmaps", "-n", "q", "-o", "name"]);
    assert_eq!(names.lines().count(), 6, "{names}");
    // A delete gives the usage back.
    let first = names
        .lines()
        .find(|l| l.contains("/cm-"))
        .unwrap()
        .to_string();
    k(&["delete", &first, "-n", "q"]);
    assert_eq!(used("configmaps"), "5");
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

#[test]
fn service_account_admission() {
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "sa"]);
    // Every namespace gets its default account and the root CA bundle (the server's CA).
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "sa"]);
    server.wait_for_object(&["get", "configmap", "kube-root-ca.crt", "-n", "sa"]);
    let bundle = k(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "sa",
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    let ca = std::fs::read_to_string(server.dir.path().join("data/tls/server-ca.crt")).unwrap();
    assert_eq!(bundle.trim(), ca.trim());

    // A pod without an account runs as `default`, with the projected token volume mounted
    // read-only in every container.
    k(&["run", "web", "-n", "sa", "--image=registry.local/web:1"]);
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "web", "-n", "sa", "-o", "json"])).unwrap();
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let volume = &p["spec"]["volumes"][0];
    let vname = volume["name"].as_str().unwrap();
    assert!(vname.starts_with("kube-api-access-"), "{volume}");
    assert_eq!(
        volume["projected"]["sources"][0]["serviceAccountToken"],
        json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(
        volume["projected"]["sources"][1]["configMap"]["name"],
        "kube-root-ca.crt"
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    assert_eq!(
        p["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": vname, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}])
    );

    // An account's pull secrets are inherited; its automount choice is honoured.
    let robot = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "robot", "namespace": "sa"},
        "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "regcred"}],
    });
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &robot.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    k(&[
        "run",
        "bot",
        "-n",
        "sa",
        "--image=registry.local/web:1",
        "--overrides={\"spec\":{\"serviceAccountName\":\"robot\"}}",
    ]);
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "bot", "-n", "sa", "-o", "json"])).unwrap();
    assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "regcred"}]));
    assert!(p["spec"]["volumes"].is_null(), "{}", p["spec"]);

    // A missing account is refused with upstream's message.
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "run",
            "ghost",
            "-n",
            "sa",
            "--image=registry.local/web:1",
            "--overrides={\"spec\":{\"serviceAccountName\":\"nope\"}}",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "pods \"ghost\" is forbidden: error looking up service account sa/nope: serviceaccount \"nope\" not found"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A deleted default account comes back.
    k(&["delete", "serviceaccount", "default", "-n", "sa"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "sa"]);
}
