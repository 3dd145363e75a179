//! The seeds' initializers through the real kubectl: an `InitializerConfiguration`
//! (`admissionregistration.k8s.io/v1alpha1`, the seed's YAML) makes new pods wait for an
//! initializer; the pending pod is stored but invisible to get, list and watch unless the
//! request has `includeUninitialized=true`; an initializer controller (a thread of this test,
//! talking to the server through `kubectl --raw`) injects a sidecar container and removes its
//! name; the pod then appears (watchers see ADDED) with the sidecar, and a blocking create
//! returns the initialized pod. A failing initializer's result refuses the object; only the
//! first initializer may be removed; updating uninitialized objects needs `initialize`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Output, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::{Value, json};
use testkit::RkubeServer;
use testkit::eventually;

const SIDECAR: &str = "sidecar.initializer.rkube.io";
const REJECT: &str = "reject.initializer.rkube.io";

const CONFIG: &str = r#"
apiVersion: admissionregistration.k8s.io/v1alpha1
kind: InitializerConfiguration
metadata:
  name: custom-pod-initializer
initializers:
  - name: sidecar.initializer.rkube.io
    rules:
      - apiGroups:
          - ""
        apiVersions:
          - v1
        resources:
          - pods
  - name: reject.initializer.rkube.io
    rules:
      - apiGroups: [""]
        apiVersions: ["v1"]
        resources: ["configmaps"]
"#;

fn pod(name: &str) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "demo"},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]},
    })
    .to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

/// One pass of the initializer controller over core `plural`: every object whose first
/// pending initializer is ours gets `act` applied and our name removed.
fn initialize_pass(server: &RkubeServer, plural: &str, act: &dyn Fn(&mut Value)) {
    let out = server.kubectl(&[
        "get",
        "--raw",
        &format!("/api/v1/{plural}?includeUninitialized=true"),
    ]);
    if !out.status.success() {
        eprintln!("initializer list of {plural} failed: {}", stderr(&out));
    }
    let Ok(items) = serde_json::from_slice::<Value>(&out.stdout) else {
        return;
    };
    for item in items["items"].as_array().into_iter().flatten() {
        let first = item["metadata"]["initializers"]["pending"][0]["name"]
            .as_str()
            .unwrap_or_default();
        if first != SIDECAR && first != REJECT {
            continue;
        }
        let mut obj = item.clone();
        act(&mut obj);
        if let Some(p) = obj["metadata"]["initializers"]["pending"].as_array_mut() {
            p.remove(0);
        }
        let path = format!(
            "/api/v1/namespaces/{}/{plural}/{}?includeUninitialized=true",
            obj["metadata"]["namespace"].as_str().unwrap_or_default(),
            obj["metadata"]["name"].as_str().unwrap_or_default()
        );
        let _ = server.kubectl_stdin(
            None,
            &["replace", "--raw", &path, "-f", "-"],
            &obj.to_string(),
        );
    }
}

/// The test's initializer controller: injects a sidecar into pods and fails configmaps
/// named `bad`.
fn run_controller(server: Arc<RkubeServer>, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        while !stop.load(Ordering::SeqCst) {
            initialize_pass(&server, "pods", &|pod| {
                if let Some(c) = pod["spec"]["containers"].as_array_mut() {
                    c.push(json!({"name": "sidecar", "image": "registry.local/proxy:1"}));
                }
            });
            initialize_pass(&server, "configmaps", &|cm| {
                if cm["metadata"]["name"] == "bad" {
                    cm["metadata"]["initializers"]["result"] = json!({
                        "status": "Failure", "code": 422, "reason": "Invalid",
                        "message": "configmap \"bad\" refused by reject.initializer.rkube.io: too short",
                    });
                }
            });
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

#[test]
fn initializers_hide_objects_until_initialized() {
    let files = tempfile::tempdir().unwrap();
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, "tok-dev,dev,uid-dev\n").unwrap();
    // No scheduler: its status writes (no nodes here) would add MODIFIED events.
    let server = Arc::new(RkubeServer::start_with(&[
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--disable-scheduler",
    ]));
    server.kubectl_ok(Some("1.33"), &["create", "namespace", "demo"]);
    let out = server.kubectl_stdin(Some("1.33"), &["apply", "-f", "-"], CONFIG);
    assert!(out.status.success(), "{}", stderr(&out));
    let got = server.kubectl_ok(
        Some("1.33"),
        &["get", "initializerconfigurations", "-o", "name"],
    );
    assert_eq!(
        got.trim(),
        "initializerconfiguration.admissionregistration.k8s.io/custom-pod-initializer"
    );

    // A watcher started before anything exists.
    let mut watch = server
        .kubectl_cmd(Some("1.33"))
        .args([
            "get",
            "pods",
            "-n",
            "demo",
            "--watch",
            "--output-watch-events",
            "-o",
            "name",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();

    // Created with includeUninitialized: stored with the pending initializer, returned at
    // once, hidden from ordinary reads.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &[
            "create",
            "--raw",
            "/api/v1/namespaces/demo/pods?includeUninitialized=true",
            "-f",
            "-",
        ],
        &pod("early"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        created["metadata"]["initializers"]["pending"],
        json!([{"name": SIDECAR}])
    );
    let out = server.kubectl_v(Some("1.33"), &["get", "pod", "early", "-n", "demo"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("pods \"early\" not found"),
        "{}",
        stderr(&out)
    );
    let out = server.kubectl_v(Some("1.33"), &["get", "pods", "-n", "demo"]);
    assert!(
        stderr(&out).contains("No resources found"),
        "{}",
        stderr(&out)
    );
    let raw = server.kubectl_ok(
        Some("1.33"),
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/demo/pods/early?includeUninitialized=true",
        ],
    );
    let raw: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(
        raw["metadata"]["initializers"]["pending"][0]["name"],
        SIDECAR
    );

    // Updating it needs includeUninitialized, the initialize verb, and may only remove the
    // first initializer.
    let dev_kubeconfig = files.path().join("dev.kubeconfig");
    std::fs::write(
        &dev_kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: tok-dev\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            server.port,
            server.dir.path().join("data/tls/server-ca.crt").display()
        ),
    )
    .unwrap();
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "role",
            "pod-writer",
            "-n",
            "demo",
            "--verb=get,list,update",
            "--resource=pods",
        ],
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "rolebinding",
            "pod-writer",
            "-n",
            "demo",
            "--role=pod-writer",
            "--user=dev",
        ],
    );
    let mut no_first = raw.clone();
    no_first["metadata"]["initializers"]["pending"] =
        json!([{"name": SIDECAR}, {"name": "extra.initializer.rkube.io"}]);
    let out = server.kubectl_stdin(
        Some("1.33"),
        &[
            "replace",
            "--raw",
            "/api/v1/namespaces/demo/pods/early?includeUninitialized=true",
            "-f",
            "-",
        ],
        &no_first.to_string(),
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("only the first pending initializer"),
        "{}",
        stderr(&out)
    );
    let mut done = raw.clone();
    done["metadata"]["initializers"]["pending"] = json!([]);
    let dev_replace = || {
        server
            .kubectl_cmd(Some("1.33"))
            .env("KUBECONFIG", &dev_kubeconfig)
            .args([
                "replace",
                "--raw",
                "/api/v1/namespaces/demo/pods/early?includeUninitialized=true",
                "-f",
                "-",
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .and_then(|mut c| {
                use std::io::Write;
                c.stdin
                    .take()
                    .unwrap()
                    .write_all(done.to_string().as_bytes())?;
                c.wait_with_output()
            })
            .unwrap()
    };
    eventually("the dev role", || {
        stderr(&dev_replace()).contains("must have initialize permission")
    });

    // The initializer runs: the pod appears with its sidecar, and the watcher sees ADDED.
    let stop = Arc::new(AtomicBool::new(false));
    let controller = run_controller(Arc::clone(&server), Arc::clone(&stop));
    eventually("the early pod to be initialized", || {
        server
            .kubectl_v(Some("1.33"), &["get", "pod", "early", "-n", "demo"])
            .status
            .success()
    });
    let early: Value = serde_json::from_str(&server.kubectl_ok(
        Some("1.33"),
        &["get", "pod", "early", "-n", "demo", "-o", "json"],
    ))
    .unwrap();
    let names: Vec<&str> = early["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["web", "sidecar"]);
    assert!(early["metadata"].get("initializers").is_none(), "{early}");

    // A plain create waits for the initializers and returns the initialized pod.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-", "-o", "json"],
        &pod("blocking"),
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let created: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        created["spec"]["containers"][1]["name"], "sidecar",
        "{created}"
    );

    // A failing initializer refuses the object with its result.
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "create",
            "configmap",
            "bad",
            "-n",
            "demo",
            "--from-literal=k=v",
        ],
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("refused by reject.initializer.rkube.io: too short"),
        "{}",
        stderr(&out)
    );
    let out = server.kubectl_v(Some("1.33"), &["get", "configmap", "bad", "-n", "demo"]);
    assert!(!out.status.success());
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "configmap",
            "good",
            "-n",
            "demo",
            "--from-literal=k=v",
        ],
    );

    stop.store(true, Ordering::SeqCst);
    controller.join().unwrap();

    let _ = watch.kill();
    let out = watch.wait_with_output().unwrap();
    let events = stdout(&out);
    // Each pod appears once, when initialized (never while pending).
    assert_eq!(
        events.lines().collect::<Vec<_>>(),
        ["pod/early", "pod/blocking"],
        "{events}"
    );
}
