//! The API server judged by the real kubectl: every scenario runs with kubectl 1.33 and
//! 1.27 against `rkube server` on SQLite, and with kubectl 1.33 against `rkube server` on a
//! real etcd.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::Value;
use testkit::{Etcd, RkubeServer};

/// A server and what keeps it alive.
struct Env {
    server: RkubeServer,
    _etcd: Option<Etcd>,
    v: Option<&'static str>,
}

impl Env {
    fn sqlite(v: &'static str) -> Env {
        Env {
            server: RkubeServer::start(),
            _etcd: None,
            v: Some(v),
        }
    }

    fn etcd(v: &'static str) -> Env {
        let etcd = Etcd::start();
        let server = RkubeServer::start_with(&["--datastore-endpoint", &etcd.endpoint_list()]);
        Env {
            server,
            _etcd: Some(etcd),
            v: Some(v),
        }
    }

    fn ok(&self, args: &[&str]) -> String {
        self.server.kubectl_ok(self.v, args)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        self.server.kubectl_v(self.v, args)
    }

    fn fails(&self, args: &[&str]) -> String {
        let out = self.run(args);
        assert!(
            !out.status.success(),
            "kubectl {args:?} should fail but printed {}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    fn stdin(&self, args: &[&str], input: &str) -> std::process::Output {
        self.server.kubectl_stdin(self.v, args, input)
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut a = args.to_vec();
        a.extend(["-o", "json"]);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }
}

fn create_deployment(e: &Env) {
    let out = e.ok(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=3",
    ]);
    assert_eq!(out.trim(), "deployment.apps/nginx created");
    let d = e.json(&["get", "deployment", "nginx"]);
    assert_eq!(d["spec"]["replicas"], 3);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx"
    );
    // Upstream defaulting.
    assert_eq!(d["spec"]["strategy"]["type"], "RollingUpdate");
    assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
    assert_eq!(d["spec"]["revisionHistoryLimit"], 10);
    assert_eq!(d["spec"]["progressDeadlineSeconds"], 600);
    let c = &d["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(c["imagePullPolicy"], "Always");
    assert_eq!(c["terminationMessagePath"], "/dev/termination-log");
    assert_eq!(d["spec"]["template"]["spec"]["restartPolicy"], "Always");
    assert_eq!(d["spec"]["template"]["spec"]["dnsPolicy"], "ClusterFirst");
    assert_eq!(d["metadata"]["generation"], 1);
    assert!(d["metadata"]["uid"].as_str().unwrap().len() > 30);
    assert!(
        d["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .parse::<i64>()
            .unwrap()
            > 0
    );
    // Creating it again is a conflict.
    let err = e.fails(&["create", "deployment", "nginx", "--image=nginx"]);
    assert!(
        err.contains("deployments.apps \"nginx\" already exists"),
        "{err}"
    );
}

fn output_formats(e: &Env) {
    e.ok(&[
        "create",
        "deployment",
        "web",
        "--image=nginx:1.25",
        "--replicas=2",
    ]);
    e.ok(&["create", "configmap", "cfg", "--from-literal=a=b"]);
    let table = e.ok(&["get", "deployments"]);
    let header: Vec<&str> = table.lines().next().unwrap().split_whitespace().collect();
    assert_eq!(header, ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]);
    assert!(table.contains("web"));
    let wide = e.ok(&["get", "deployments", "-o", "wide"]);
    assert!(wide.lines().next().unwrap().contains("IMAGES"), "{wide}");
    assert!(wide.contains("nginx:1.25"));
    let yaml = e.ok(&["get", "deployment", "web", "-o", "yaml"]);
    assert!(yaml.contains("kind: Deployment") && yaml.contains("replicas: 2"));
    assert_eq!(
        e.ok(&["get", "deployments", "-o", "name"]).trim(),
        "deployment.apps/web"
    );
    assert_eq!(
        e.ok(&[
            "get",
            "deployment",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}"
        ]),
        "nginx:1.25"
    );
    let cc = e.ok(&[
        "get",
        "deployments",
        "-o",
        "custom-columns=N:.metadata.name,R:.spec.replicas",
    ]);
    assert_eq!(
        cc.lines()
            .nth(1)
            .unwrap()
            .split_whitespace()
            .collect::<Vec<_>>(),
        ["web", "2"]
    );
    let cm = e.ok(&["get", "configmaps", "cfg"]);
    assert!(cm.lines().next().unwrap().contains("DATA"), "{cm}");
    let all_ns = e.ok(&["get", "namespaces"]);
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        assert!(all_ns.contains(ns), "{all_ns}");
    }
    let labeled = e.ok(&["get", "deployments", "-l", "app=web", "-o", "name"]);
    assert_eq!(labeled.trim(), "deployment.apps/web");
    assert_eq!(
        e.ok(&["get", "deployments", "-l", "app=other", "-o", "name"])
            .trim(),
        ""
    );
    let by_name = e.ok(&[
        "get",
        "configmaps",
        "--field-selector",
        "metadata.name=cfg",
        "-o",
        "name",
    ]);
    assert_eq!(by_name.trim(), "configmap/cfg");
    let err = e.fails(&["get", "pods", "--field-selector", "spec.bogus=x"]);
    assert!(err.contains("field label not supported"), "{err}");
    e.ok(&["describe", "deployment", "web"]);
    e.ok(&["get", "all"]);
}

fn apply_and_diff(e: &Env) {
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: applied\ndata:\n  a: \"1\"\n";
    let out = e.stdin(&["apply", "-f", "-"], manifest);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cm = e.json(&["get", "configmap", "applied"]);
    assert!(
        cm["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    // Changed manifest: diff shows it, apply updates it.
    let changed = manifest.replace("a: \"1\"", "a: \"2\"\n  b: \"3\"");
    let diff = e.stdin(&["diff", "-f", "-"], &changed);
    assert_eq!(
        diff.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&diff.stderr)
    );
    assert!(String::from_utf8_lossy(&diff.stdout).contains("b: \"3\""));
    let out = e.stdin(&["apply", "-f", "-"], &changed);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cm = e.json(&["get", "configmap", "applied"]);
    assert_eq!(cm["data"]["a"], "2");
    assert_eq!(cm["data"]["b"], "3");
    // Server-side apply, then a conflicting manager.
    let ssa = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  k: v1\n";
    let out = e.stdin(&["apply", "--server-side", "-f", "-"], ssa);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cm = e.json(&["get", "configmap", "ssa", "--show-managed-fields"]);
    assert_eq!(cm["metadata"]["managedFields"][0]["manager"], "kubectl");
    assert_eq!(cm["metadata"]["managedFields"][0]["operation"], "Apply");
    let other = ssa.replace("k: v1", "k: v2");
    let out = e.stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &other,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("conflict") && err.contains(".data.k"), "{err}");
    let out = e.stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &other,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(e.json(&["get", "configmap", "ssa"])["data"]["k"], "v2");
}

fn patch_edit_scale_label(e: &Env) {
    e.ok(&[
        "create",
        "deployment",
        "p",
        "--image=nginx:1",
        "--replicas=1",
    ]);
    e.ok(&[
        "patch",
        "deployment",
        "p",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ]);
    e.ok(&[
        "patch",
        "deployment",
        "p",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"m":"1"}}}"#,
    ]);
    e.ok(&[
        "patch",
        "deployment",
        "p",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":4}]"#,
    ]);
    let d = e.json(&["get", "deployment", "p"]);
    assert_eq!(d["spec"]["replicas"], 4);
    assert_eq!(d["metadata"]["labels"]["m"], "1");
    assert_eq!(d["metadata"]["generation"], 3);
    e.ok(&["scale", "deployment", "p", "--replicas=5"]);
    assert_eq!(e.json(&["get", "deployment", "p"])["spec"]["replicas"], 5);
    e.ok(&["label", "deployment", "p", "tier=web"]);
    e.ok(&["annotate", "deployment", "p", "note=hello"]);
    e.ok(&["label", "deployment", "p", "m-"]);
    let d = e.json(&["get", "deployment", "p"]);
    assert_eq!(d["metadata"]["labels"]["tier"], "web");
    assert!(d["metadata"]["labels"].get("m").is_none());
    assert_eq!(d["metadata"]["annotations"]["note"], "hello");
    e.ok(&["set", "image", "deployment/p", "nginx=nginx:2"]);
    let d = e.json(&["get", "deployment", "p"]);
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:2"
    );
    assert_eq!(
        d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    // kubectl edit with a scripted editor.
    let editor = e.server.dir.path().join("editor.sh");
    std::fs::write(
        &editor,
        "#!/bin/sh\nsed -i 's/replicas: 5/replicas: 6/' \"$1\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&editor, std::fs::Permissions::from_mode(0o755)).unwrap();
    let out = e
        .server
        .kubectl_cmd(e.v)
        .env("KUBE_EDITOR", &editor)
        .args(["edit", "deployment", "p"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(e.json(&["get", "deployment", "p"])["spec"]["replicas"], 6);
    // A stale update conflicts.
    let mut d = e.json(&["get", "deployment", "p"]);
    d["metadata"]["resourceVersion"] = Value::String("1".into());
    let out = e.stdin(&["replace", "-f", "-"], &d.to_string());
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("the object has been modified"));
}

fn watch_sees_changes(e: &Env) {
    e.ok(&["create", "configmap", "w1", "--from-literal=a=1"]);
    let mut child = e
        .server
        .kubectl_cmd(e.v)
        .args(["get", "configmaps", "-w", "-o", "name"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    e.ok(&["create", "configmap", "w2", "--from-literal=a=2"]);
    std::thread::sleep(Duration::from_millis(1500));
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("configmap/w1"), "{text}");
    assert!(text.contains("configmap/w2"), "{text}");
}

fn delete_modes(e: &Env) {
    for (name, mode) in [
        ("bg", "background"),
        ("fg", "foreground"),
        ("orph", "orphan"),
    ] {
        e.ok(&["create", "deployment", name, "--image=nginx"]);
        let out = e.ok(&[
            "delete",
            "deployment",
            name,
            &format!("--cascade={mode}"),
            "--wait=false",
        ]);
        assert!(
            out.contains(&format!("deployment.apps \"{name}\" deleted")),
            "{out}"
        );
    }
    // Background deletion removes the object at once.
    assert!(e.fails(&["get", "deployment", "bg"]).contains("NotFound"));
    // Foreground and orphan leave it with their finalizer until the garbage collector runs.
    let fg = e.run(&["get", "deployment", "fg", "-o", "json"]);
    if fg.status.success() {
        let v: Value = serde_json::from_slice(&fg.stdout).unwrap();
        assert!(v["metadata"]["deletionTimestamp"].is_string());
        assert!(
            v["metadata"]["finalizers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "foregroundDeletion")
        );
    }
    let orph = e.run(&["get", "deployment", "orph", "-o", "json"]);
    if orph.status.success() {
        let v: Value = serde_json::from_slice(&orph.stdout).unwrap();
        assert!(
            v["metadata"]["finalizers"]
                .as_array()
                .unwrap()
                .iter()
                .any(|f| f == "orphan")
        );
    }
    e.ok(&["create", "configmap", "gone"]);
    e.ok(&["delete", "configmap", "gone"]);
    assert!(
        e.fails(&["delete", "configmap", "gone"])
            .contains("NotFound")
    );
}

fn discovery_and_explain(e: &Env) {
    let resources = e.ok(&["api-resources"]);
    let header = resources.lines().next().unwrap();
    assert!(
        header.starts_with("NAME") && header.contains("SHORTNAMES") && header.contains("KIND"),
        "{header}"
    );
    assert!(
        resources
            .lines()
            .any(|l| l.starts_with("deployments") && l.contains("deploy") && l.contains("apps/v1"))
    );
    let versions = e.ok(&["api-versions"]);
    for gv in [
        "v1",
        "apps/v1",
        "batch/v1",
        "rbac.authorization.k8s.io/v1",
        "apiextensions.k8s.io/v1",
    ] {
        assert!(versions.lines().any(|l| l == gv), "{versions}");
    }
    let explain = e.ok(&["explain", "deployment.spec.strategy"]);
    assert!(explain.contains("rollingUpdate"), "{explain}");
    assert!(
        explain.contains("DeploymentStrategy") || explain.contains("strategy"),
        "{explain}"
    );
    let version = e.ok(&["version", "-o", "json"]);
    let v: Value = serde_json::from_str(&version).unwrap();
    assert_eq!(v["serverVersion"]["major"], "1");
}

fn field_validation(e: &Env) {
    let bad = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: strict\nspec:\n  replicas: 1\n  bogusField: 1\n  selector:\n    matchLabels: {app: s}\n  template:\n    metadata:\n      labels: {app: s}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n";
    let out = e.stdin(&["create", "-f", "-"], bad);
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("unknown field") && err.contains("bogusField"),
        "{err}"
    );
    let out = e.stdin(&["create", "--validate=warn", "-f", "-"], bad);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let warn = String::from_utf8_lossy(&out.stderr);
    assert!(
        warn.contains("Warning") && warn.contains("bogusField"),
        "{warn}"
    );
    // Invalid objects get 422 with field causes.
    let invalid = bad
        .replace("  bogusField: 1\n", "")
        .replace("name: strict", "name: Not_Valid");
    let out = e.stdin(&["create", "-f", "-"], &invalid);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("is invalid"));
    let mismatch = bad
        .replace("  bogusField: 1\n", "")
        .replace("name: strict", "name: mism")
        .replace("labels: {app: s}", "labels: {app: other}");
    let out = e.stdin(&["create", "-f", "-"], &mismatch);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("selector"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn custom_resources(e: &Env) {
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, shortNames: [wd]}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 1}
          status:
            type: object
            properties:
              ready: {type: boolean}
    subresources:
      status: {}
    additionalPrinterColumns:
    - {name: Size, type: integer, jsonPath: .spec.size}
"#;
    let out = e.stdin(&["apply", "-f", "-"], crd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The new resource shows up in discovery.
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    while !e.ok(&["api-resources"]).contains("widgets") {
        assert!(
            std::time::Instant::now() < deadline,
            "widgets never appeared in discovery"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let cr = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 3\n";
    let out = e.stdin(&["apply", "-f", "-"], cr);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let table = e.ok(&["get", "widgets"]);
    assert!(table.lines().next().unwrap().contains("SIZE"), "{table}");
    assert!(table.contains('w') && table.contains('3'));
    assert_eq!(e.json(&["get", "wd", "w"])["spec"]["size"], 3);
    let bad = cr
        .replace("size: 3", "size: 0")
        .replace("name: w", "name: w0");
    let out = e.stdin(&["create", "-f", "-"], &bad);
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("spec.size"));
}

fn bad_input(e: &Env) {
    let dir = e.server.dir.path();
    let malformed = dir.join("malformed.json");
    std::fs::write(&malformed, "{not json").unwrap();
    let f = malformed.to_str().unwrap();
    let err = e.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
        "-f",
        f,
    ]);
    assert!(err.contains("BadRequest") || err.contains("400"), "{err}");
    let wrong_kind = dir.join("wrong.json");
    std::fs::write(
        &wrong_kind,
        r#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#,
    )
    .unwrap();
    let err = e.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
        "-f",
        wrong_kind.to_str().unwrap(),
    ]);
    assert!(err.contains("does not match"), "{err}");
    let long = dir.join("long.json");
    std::fs::write(
        &long,
        format!(
            r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{}"}}}}"#,
            "a".repeat(300)
        ),
    )
    .unwrap();
    let err = e.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
        "-f",
        long.to_str().unwrap(),
    ]);
    assert!(err.contains("Invalid") || err.contains("invalid"), "{err}");
    let huge = dir.join("huge.json");
    std::fs::write(&huge, format!(r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"huge"}},"data":{{"a":"{}"}}}}"#, "x".repeat(4 * 1024 * 1024))).unwrap();
    let err = e.fails(&[
        "create",
        "--raw",
        "/api/v1/namespaces/default/configmaps",
        "-f",
        huge.to_str().unwrap(),
    ]);
    assert!(err.contains("too large") || err.contains("413"), "{err}");
    let err = e.fails(&["get", "--raw", "/apis/nope.example.com/v1/things"]);
    assert!(err.contains("NotFound") || err.contains("404"), "{err}");
    let err = e.fails(&["get", "pods", "-l", "a in (b"]);
    assert!(!err.is_empty());
    let err = e.fails(&["patch", "configmap", "nope", "-p", "{bad"]);
    assert!(!err.is_empty());
    // Nothing was stored by any of that.
    let cms = e.ok(&["get", "configmaps", "-o", "name"]);
    assert!(!cms.contains("huge") && !cms.contains("aaaa"), "{cms}");
}

/// Server-side apply as upstream: two managers applying the same values co-own them (list
/// items keyed by defaulted fields, as a port without `protocol`), a `kubectl scale` is
/// recorded under the `scale` subresource, and a later apply of another value conflicts.
fn server_side_apply(e: &Env) {
    let manifest = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: ssa\nspec:\n  replicas: 2\n  selector:\n    matchLabels: {app: ssa}\n  template:\n    metadata:\n      labels: {app: ssa}\n    spec:\n      containers:\n      - name: c\n        image: nginx\n        ports:\n        - containerPort: 80\n";
    for manager in ["first", "second"] {
        let out = e.stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager",
                manager,
                "-f",
                "-",
            ],
            manifest,
        );
        assert!(
            out.status.success(),
            "apply by {manager}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let d = e.json(&["get", "deployment", "ssa", "--show-managed-fields"]);
    let managed = d["metadata"]["managedFields"].as_array().unwrap();
    for manager in ["first", "second"] {
        let entry = managed
            .iter()
            .find(|m| m["manager"] == manager)
            .unwrap_or_else(|| panic!("no entry for {manager}: {managed:?}"));
        assert_eq!(entry["operation"], "Apply");
        let ports = &entry["fieldsV1"]["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"c\"}"]
            ["f:ports"];
        assert!(
            ports
                .get("k:{\"containerPort\":80,\"protocol\":\"TCP\"}")
                .is_some(),
            "{ports}"
        );
    }
    e.ok(&["scale", "deployment", "ssa", "--replicas=5"]);
    let d = e.json(&["get", "deployment", "ssa", "--show-managed-fields"]);
    let scale = d["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["subresource"] == "scale")
        .cloned()
        .unwrap_or_else(|| panic!("no scale entry: {d}"));
    assert_eq!(scale["operation"], "Update");
    assert_eq!(
        scale["fieldsV1"],
        serde_json::json!({"f:spec": {"f:replicas": {}}})
    );
    assert_eq!(d["metadata"]["generation"], 2);
    let out = e.stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager",
            "first",
            "-f",
            "-",
        ],
        manifest,
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("with subresource \"scale\"") && err.contains(".spec.replicas"),
        "{err}"
    );
    let out = e.stdin(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "--field-manager",
            "first",
            "-f",
            "-",
        ],
        manifest,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(e.json(&["get", "deployment", "ssa"])["spec"]["replicas"], 2);
}

/// The health endpoints list upstream's checks, run each alone, and skip the excluded.
fn health_endpoints(e: &Env) {
    let hooks = "[+]poststarthook/bootstrap-controller ok\n\
                 [+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n\
                 [+]poststarthook/rbac/bootstrap-roles ok\n\
                 [+]poststarthook/start-cluster-authentication-info-controller ok\n";
    assert_eq!(
        e.ok(&["get", "--raw", "/readyz?verbose"]),
        format!(
            "[+]ping ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n{hooks}[+]shutdown ok\nreadyz check passed\n"
        )
    );
    assert_eq!(
        e.ok(&["get", "--raw", "/livez?verbose"]),
        format!("[+]ping ok\n[+]etcd ok\n{hooks}livez check passed\n")
    );
    assert_eq!(e.ok(&["get", "--raw", "/healthz"]), "ok");
    assert_eq!(e.ok(&["get", "--raw", "/healthz/etcd"]), "ok");
    assert_eq!(
        e.ok(&["get", "--raw", "/readyz/poststarthook/rbac/bootstrap-roles"]),
        "ok"
    );
    let excluded = e.ok(&[
        "get",
        "--raw",
        "/readyz?verbose&exclude=etcd&exclude=shutdown",
    ]);
    assert!(
        excluded.contains("[+]etcd excluded: ok\n[+]etcd-readiness ok\n")
            && excluded.contains("[+]shutdown excluded: ok\nreadyz check passed\n"),
        "{excluded}"
    );
    let err = e.fails(&["get", "--raw", "/livez/nope"]);
    assert!(err.contains("NotFound"), "{err}");
    // Each check an endpoint ran is an SLI (upstream's /metrics/slis).
    let slis = e.ok(&["get", "--raw", "/metrics/slis"]);
    assert!(
        slis.contains("kubernetes_healthcheck{name=\"etcd\",type=\"readyz\"} 1\n")
            && slis.contains("kubernetes_healthcheck{name=\"informer-sync\",type=\"readyz\"} 1\n")
            && slis.contains(
                "kubernetes_healthchecks_total{name=\"etcd\",status=\"success\",type=\"livez\"} "
            ),
        "{slis}"
    );
}

/// The store going away fails the `etcd` checks (and with them `/readyz` and `/livez`),
/// their reasons withheld from the public answer and told on the check's own path.
#[test]
fn a_store_outage_fails_the_etcd_checks() {
    let mut etcd = Etcd::start();
    let server = RkubeServer::start_with(&["--datastore-endpoint", &etcd.endpoint_list()]);
    assert_eq!(server.kubectl_ok(None, &["get", "--raw", "/readyz"]), "ok");
    etcd.kill_member(0);
    let out = server.kubectl(&["get", "--raw", "/readyz"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.contains("[-]etcd failed: reason withheld")
            && err.contains("[-]etcd-readiness failed: reason withheld")
            && err.contains("readyz check failed"),
        "{err}"
    );
    let out = server.kubectl(&["get", "--raw", "/healthz/etcd"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("internal server error: "), "{err}");
    // Excluding the store's checks, the server still answers ready.
    assert_eq!(
        server.kubectl_ok(
            None,
            &[
                "get",
                "--raw",
                "/readyz?exclude=etcd&exclude=etcd-readiness"
            ]
        ),
        "ok"
    );
    // The SLIs tell the failures.
    let slis = server.kubectl_ok(None, &["get", "--raw", "/metrics/slis"]);
    assert!(
        slis.contains("kubernetes_healthcheck{name=\"etcd\",type=\"readyz\"} 0\n")
            && slis.contains(
                "kubernetes_healthchecks_total{name=\"etcd\",status=\"error\",type=\"readyz\"} "
            )
            && slis.contains(
                "kubernetes_healthchecks_total{name=\"etcd\",status=\"success\",type=\"readyz\"} "
            ),
        "{slis}"
    );
}

macro_rules! scenarios {
    ($($name:ident),* $(,)?) => {
        mod sqlite_kubectl_1_33 {
            $( #[test] fn $name() { super::$name(&super::Env::sqlite("1.33")) } )*
        }
        mod sqlite_kubectl_1_27 {
            $( #[test] fn $name() { super::$name(&super::Env::sqlite("1.27")) } )*
        }
        mod etcd_kubectl_1_33 {
            $( #[test] fn $name() { super::$name(&super::Env::etcd("1.33")) } )*
        }
    };
}

scenarios!(
    create_deployment,
    health_endpoints,
    output_formats,
    apply_and_diff,
    patch_edit_scale_label,
    watch_sees_changes,
    delete_modes,
    discovery_and_explain,
    field_validation,
    custom_resources,
    bad_input,
    server_side_apply,
);
