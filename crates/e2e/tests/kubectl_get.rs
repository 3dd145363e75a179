//! `rkube kubectl get` and `describe` judged by the real kubectl 1.33 on the same server:
//! tables (headers, names, alignment, `-o wide`, `-A`, `--show-labels`, `-L`, `-l`,
//! `--no-headers`, several kinds, `get all`), object formats (json, yaml, name, jsonpath,
//! custom-columns, go-template), errors and exit codes, `--watch`, and describer text with
//! events.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::process::{Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, wait_until};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// kubectl names itself after its binary (`kubectl.1.33`) in some messages.
fn norm(s: &str) -> String {
    s.replace("kubectl.1.33", "kubectl")
}

fn show(args: &[&str], real: &Output, ours: &Output) -> String {
    format!(
        "kubectl {args:?}\n--- real ({}):\n{}{}\n--- ours ({}):\n{}{}",
        real.status,
        text(&real.stdout),
        text(&real.stderr),
        ours.status,
        text(&ours.stdout),
        text(&ours.stderr)
    )
}

/// Runs both and requires the same exit code, stdout and stderr byte for byte. Outputs
/// with ages may differ when a second ticks between the two runs: a few attempts.
fn same(server: &RkubeServer, args: &[&str]) {
    let mut last = String::new();
    for _ in 0..4 {
        let (real, ours) = server.both(args);
        if real.status.code() == ours.status.code()
            && norm(&text(&real.stdout)) == text(&ours.stdout)
            && norm(&text(&real.stderr)) == text(&ours.stderr)
        {
            return;
        }
        last = show(args, &real, &ours);
        std::thread::sleep(Duration::from_millis(300));
    }
    panic!("outputs differ:\n{last}");
}

/// Both succeed and print the same JSON (parsed).
fn same_json(server: &RkubeServer, args: &[&str]) -> Value {
    let (real, ours) = server.both(args);
    assert!(
        real.status.success() && ours.status.success(),
        "{}",
        show(args, &real, &ours)
    );
    let a: Value = serde_json::from_slice(&real.stdout).unwrap();
    let b: Value = serde_json::from_slice(&ours.stdout).unwrap();
    assert_eq!(a, b, "{}", show(args, &real, &ours));
    b
}

fn running(server: &RkubeServer, selector: &str, n: usize) {
    wait_until(&format!("{n} running pods {selector}"), 40, || {
        server.ready_pods(selector).len() == n
    });
}

/// A server with two simulated nodes, a Deployment `web` (2 replicas) exposed as a
/// Service, a labelled pod `solo`, a ConfigMap and a pod in another namespace.
fn cluster() -> (RkubeServer, SimNodes) {
    let server = RkubeServer::start();
    let sim = SimNodes::start(&server, "get", &["--count", "2"]);
    let k = |args: &[&str]| {
        server.kubectl_ok(Some("1.33"), args);
    };
    k(&[
        "create",
        "deployment",
        "web",
        "--image=registry.local/web:1",
        "--replicas=2",
    ]);
    k(&["expose", "deployment", "web", "--port=80"]);
    k(&[
        "run",
        "solo",
        "--image=registry.local/solo:1",
        "--labels=app=solo,tier=front",
    ]);
    k(&["create", "configmap", "cfg", "--from-literal=a=b"]);
    k(&["create", "namespace", "other"]);
    k(&["run", "far", "--image=registry.local/far:1", "-n", "other"]);
    running(&server, "app=web", 2);
    running(&server, "app=solo", 1);
    (server, sim)
}

#[test]
fn tables_match_kubectl() {
    let (server, _sim) = cluster();
    // Let the Deployment settle (its status feeds the table).
    wait_until("deployment available", 30, || {
        server.get_json(&["deployment", "web"])["status"]["availableReplicas"] == 2
    });
    for args in [
        &["get", "pods"][..],
        &["get", "pods", "-o", "wide"],
        &["get", "pods", "-A"],
        &["get", "pods", "--show-labels"],
        &["get", "pods", "-L", "app,tier"],
        &["get", "pods", "-l", "app=web"],
        &["get", "pods", "-l", "app!=web", "--no-headers"],
        &["get", "pods", "--field-selector", "metadata.name=solo"],
        &["get", "pods", "--sort-by", ".metadata.name"],
        &["get", "nodes"],
        &["get", "nodes", "-o", "wide"],
        &["get", "services"],
        &["get", "deployments"],
        &["get", "deploy", "-o", "wide"],
        &["get", "po,svc"],
        &["get", "all"],
        &["get", "all", "-A"],
        &["get", "deploy/web", "svc/web"],
        &["get", "pod", "solo"],
        &["get", "pods", "solo", "--show-kind"],
        &["get", "configmaps", "-n", "default"],
    ] {
        same(&server, args);
    }
}

/// A create's managedFields are the request's as decoded and defaulted, as upstream's
/// create handler records them before mutating admission: `kubectl run`'s pod gets the
/// service account's token volume from admission, and that volume is nobody's.
#[test]
fn created_objects_are_managed_as_requested() {
    let server = RkubeServer::start();
    wait_until("the default service account", 30, || {
        server
            .kubectl_v(Some("1.33"), &["get", "serviceaccount", "default"])
            .status
            .success()
    });
    server.kubectl_ok(
        Some("1.33"),
        &["run", "p1", "--image=registry.local/b:1", "--restart=Never"],
    );
    let pod: Value = serde_json::from_str(&server.kubectl_ok(
        Some("1.33"),
        &["get", "pod", "p1", "-o", "json", "--show-managed-fields"],
    ))
    .unwrap();
    let volumes = pod["spec"]["volumes"].as_array().unwrap();
    assert!(
        volumes[0]["name"]
            .as_str()
            .unwrap()
            .starts_with("kube-api-access-"),
        "{pod}"
    );
    let entry = pod["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["manager"] == "kubectl-run")
        .unwrap_or_else(|| panic!("no kubectl-run entry: {pod}"));
    assert_eq!(entry["operation"], "Update");
    // What upstream 1.33 records for the same command.
    assert_eq!(
        entry["fieldsV1"],
        json!({
            "f:metadata": {"f:labels": {".": {}, "f:run": {}}},
            "f:spec": {
                "f:containers": {"k:{\"name\":\"p1\"}": {
                    ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {},
                    "f:resources": {}, "f:terminationMessagePath": {},
                    "f:terminationMessagePolicy": {},
                }},
                "f:dnsPolicy": {}, "f:enableServiceLinks": {}, "f:restartPolicy": {},
                "f:schedulerName": {}, "f:securityContext": {},
                "f:terminationGracePeriodSeconds": {},
            },
        }),
        "{pod}"
    );
}

#[test]
fn object_formats_match_kubectl() {
    let server = RkubeServer::start();
    server.kubectl_ok(
        Some("1.33"),
        &["create", "configmap", "one", "--from-literal=a=1"],
    );
    server.kubectl_ok(
        Some("1.33"),
        &["create", "configmap", "two", "--from-literal=b=<&>"],
    );
    server.kubectl_ok(Some("1.33"), &["label", "configmap", "two", "tier=x"]);
    server.kubectl_ok(
        Some("1.33"),
        &["create", "deployment", "d", "--image=registry.local/d:1"],
    );

    // JSON: one object as itself, several as a List; managedFields dropped unless asked.
    let one = same_json(&server, &["get", "configmap", "one", "-o", "json"]);
    assert_eq!(one["kind"], "ConfigMap");
    assert!(one["metadata"]["managedFields"].is_null());
    let list = same_json(&server, &["get", "configmaps", "-o", "json"]);
    assert_eq!(list["kind"], "List");
    let mixed = same_json(&server, &["get", "cm/one", "deploy/d", "-o", "json"]);
    assert_eq!(mixed["items"].as_array().unwrap().len(), 2);
    let with_mf = same_json(
        &server,
        &["get", "cm", "one", "-o", "json", "--show-managed-fields"],
    );
    assert!(with_mf["metadata"]["managedFields"].is_array());

    for args in [
        // YAML byte for byte (go-yaml's layout: sequences at their key's indentation).
        &["get", "configmap", "two", "-o", "yaml"][..],
        &["get", "configmaps", "-o", "yaml"],
        &["get", "configmaps", "-o", "name"],
        &["get", "cm,deploy", "-o", "name"],
        &[
            "get",
            "configmaps",
            "-o",
            "jsonpath={.items[*].metadata.name}",
        ],
        &[
            "get",
            "configmaps",
            "-o",
            "jsonpath={range .items[*]}{.metadata.name}{\"\\t\"}{.data}{\"\\n\"}{end}",
        ],
        &[
            "get",
            "configmaps",
            "-o",
            "jsonpath={.items[?(@.metadata.name==\"two\")].data.b}",
        ],
        &["get", "configmap", "one", "-o", "jsonpath={.metadata.name}"],
        &[
            "get",
            "configmaps",
            "-o",
            "jsonpath-as-json={.items[*].metadata.name}",
        ],
        &[
            "get",
            "configmaps",
            "-o",
            "custom-columns=NAME:.metadata.name,TIER:.metadata.labels.tier,KEYS:.data",
        ],
        &[
            "get",
            "configmaps",
            "--no-headers",
            "-o",
            "custom-columns=NAME:.metadata.name",
        ],
        &[
            "get",
            "configmaps",
            "-o",
            "go-template={{range .items}}{{.metadata.name}} {{len .data}}{{\"\\n\"}}{{end}}",
        ],
        &[
            "get",
            "configmap",
            "two",
            "--template",
            "{{if .metadata.labels}}{{index .metadata.labels \"tier\"}}{{else}}none{{end}}",
        ],
        &[
            "get",
            "configmaps",
            "--sort-by",
            "{.metadata.name}",
            "-o",
            "name",
        ],
        &["get", "deploy", "d", "-o", "yaml"],
    ] {
        same(&server, args);
    }
}

#[test]
fn errors_and_exit_codes_match_kubectl() {
    let server = RkubeServer::start();
    server.kubectl_ok(Some("1.33"), &["create", "namespace", "empty"]);
    for args in [
        &["get", "pod", "nope"][..],
        &["get", "pods", "nope", "another"],
        &["get", "pods", "nope", "--ignore-not-found"],
        &["get", "pod/nope", "-o", "json"],
        &["get", "pod/nope", "-o", "json", "--ignore-not-found"],
        &["get", "flurbs"],
        &["get"],
        &["get", "pods", "pod/x"],
        &["get", "pods", "-n", "empty"],
        &["get", "pods", "-n", "empty", "-o", "json"],
        &["get", "nodes"],
    ] {
        same(&server, args);
    }
}

#[test]
fn bad_flags_and_selectors_match_kubectl() {
    let server = RkubeServer::start();
    server.kubectl_ok(Some("1.33"), &["create", "namespace", "empty"]);
    for args in [
        &["get", "pods", "-l", "app in (x"][..],
        &["get", "pods", "--field-selector", "spec.bogus=x"],
        &["get", "pods", "-o", "bogus"],
        &["get", "pods", "-o", "jsonpath={.items[0"],
        &["get", "pods", "-o", "yaml", "--show-labels"],
        &["get", "pods", "--output-watch-events"],
        &["describe", "pod", "nope"],
        &["describe", "flurbs"],
        &["describe", "pods", "-n", "empty"],
    ] {
        same(&server, args);
    }
}

/// Spawns `rkube kubectl args`, collecting stdout lines on a channel.
fn spawn_lines(
    server: &RkubeServer,
    args: &[&str],
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = server
        .rkubectl_cmd()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines() {
            let Ok(line) = line else { break };
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

/// Waits for a line satisfying `f`; all lines read so far.
fn wait_line(rx: &mpsc::Receiver<String>, seen: &mut Vec<String>, f: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if seen.iter().any(|l| f(l)) {
            return;
        }
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "no such line; got:\n{}", seen.join("\n"));
        if let Ok(l) = rx.recv_timeout(left.min(Duration::from_millis(500))) {
            seen.push(l);
        }
    }
}

#[test]
fn watch_prints_rows_and_objects_as_they_come() {
    let server = RkubeServer::start();
    server.kubectl_ok(Some("1.33"), &["create", "configmap", "first"]);

    // Table rows: the list first (with the header), then each change.
    let (mut child, rx) = spawn_lines(&server, &["get", "configmaps", "-w"]);
    let mut seen = Vec::new();
    wait_line(&rx, &mut seen, |l| l.starts_with("first "));
    assert!(seen[0].starts_with("NAME "), "{seen:?}");
    server.kubectl_ok(
        Some("1.33"),
        &["create", "configmap", "second", "--from-literal=x=y"],
    );
    wait_line(&rx, &mut seen, |l| l.starts_with("second "));
    // One header only.
    assert_eq!(
        seen.iter().filter(|l| l.starts_with("NAME ")).count(),
        1,
        "{seen:?}"
    );
    child.kill().unwrap();
    child.wait().unwrap();

    // --watch-only with watch events: no initial list, an EVENT column.
    let (mut child, rx) = spawn_lines(
        &server,
        &["get", "configmaps", "--watch-only", "--output-watch-events"],
    );
    std::thread::sleep(Duration::from_millis(1500));
    server.kubectl_ok(Some("1.33"), &["create", "configmap", "third"]);
    let mut seen = Vec::new();
    wait_line(&rx, &mut seen, |l| {
        l.starts_with("ADDED ") && l.contains("third")
    });
    assert!(seen[0].starts_with("EVENT "), "{seen:?}");
    assert!(!seen.iter().any(|l| l.contains("first")), "{seen:?}");
    child.kill().unwrap();
    child.wait().unwrap();

    // -o json streams objects.
    let (mut child, rx) = spawn_lines(&server, &["get", "configmaps", "-w", "-o", "json"]);
    std::thread::sleep(Duration::from_millis(1500));
    server.kubectl_ok(Some("1.33"), &["create", "configmap", "fourth"]);
    let mut seen = Vec::new();
    wait_line(&rx, &mut seen, |l| l.contains("\"name\": \"fourth\""));
    child.kill().unwrap();
    child.wait().unwrap();

    // The real kubectl sees the same rows for a one-object watch.
    let (real_child, real_rx) = {
        let mut c = server
            .kubectl_cmd(Some("1.33"))
            .args(["get", "configmap", "first", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let out = c.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        (c, rx)
    };
    let (mut ours_child, ours_rx) = spawn_lines(&server, &["get", "configmap", "first", "-w"]);
    std::thread::sleep(Duration::from_millis(1500));
    server.kubectl_ok(Some("1.33"), &["label", "configmap", "first", "x=1"]);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    wait_count(&real_rx, &mut a, 3);
    wait_count(&ours_rx, &mut b, 3);
    std::thread::sleep(Duration::from_millis(500));
    let cols = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| l.split_whitespace().next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(cols(&a), cols(&b), "real {a:?} ours {b:?}");
    let mut real_child = real_child;
    real_child.kill().unwrap();
    real_child.wait().unwrap();
    ours_child.kill().unwrap();
    ours_child.wait().unwrap();
}

fn wait_count(rx: &mpsc::Receiver<String>, seen: &mut Vec<String>, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while seen.len() < n {
        let left = deadline.saturating_duration_since(Instant::now());
        assert!(!left.is_zero(), "fewer than {n} lines: {seen:?}");
        if let Ok(l) = rx.recv_timeout(left.min(Duration::from_millis(500))) {
            seen.push(l);
        }
    }
}

/// Replaces ages (`5s`, `3m2s`, `(x2 over 5m)`) so describer text compares across a
/// second's tick; whitespace runs collapse since ages change column widths.
fn without_ages(s: &str) -> String {
    s.lines()
        .map(|l| {
            l.split_whitespace()
                .map(|t| {
                    let t2 = t.trim_end_matches(')');
                    let is_age = t2.chars().next().is_some_and(|c| c.is_ascii_digit())
                        && t2
                            .chars()
                            .all(|c| c.is_ascii_digit() || "smhdy".contains(c))
                        && t2.ends_with(|c: char| "smhdy".contains(c));
                    if is_age { "AGE" } else { t }
                })
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn same_describe(server: &RkubeServer, args: &[&str]) {
    let (real, ours) = server.both(args);
    assert_eq!(
        real.status.code(),
        ours.status.code(),
        "{}",
        show(args, &real, &ours)
    );
    assert_eq!(
        without_ages(&text(&real.stdout)),
        without_ages(&text(&ours.stdout)),
        "{}",
        show(args, &real, &ours)
    );
    assert_eq!(
        norm(&text(&real.stderr)),
        text(&ours.stderr),
        "{}",
        show(args, &real, &ours)
    );
}

#[test]
fn describe_matches_kubectl() {
    let (server, _sim) = cluster();
    wait_until("deployment available", 30, || {
        server.get_json(&["deployment", "web"])["status"]["availableReplicas"] == 2
    });
    server.kubectl_ok(
        Some("1.33"),
        &["create", "secret", "generic", "s", "--from-literal=k=vvv"],
    );
    server.kubectl_ok(Some("1.33"), &["create", "serviceaccount", "robot"]);
    server.create_json(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "sized", "annotations": {"note": "x".repeat(200)}},
        "spec": {"containers": [
            {"name": "a", "image": "registry.local/a:1", "env": [{"name": "E", "value": "v"}, {"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                           "limits": {"cpu": "250m", "memory": "128Mi"}}},
            {"name": "b", "image": "registry.local/b:1", "command": ["sleep", "1"]}]}
    }));
    running(&server, "app=solo", 1);
    wait_until("sized running", 30, || {
        server.get_json(&["pod", "sized"])["status"]["phase"] == "Running"
    });

    for args in [
        &["describe", "pod", "solo"][..],
        &["describe", "pod", "sized"],
        &["describe", "pods", "-l", "app=web"],
        &["describe", "pod", "web-"],
        &["describe", "pod", "solo", "--show-events=false"],
        &["describe", "deployment", "web"],
        &["describe", "rs"],
        &["describe", "service", "web"],
        &["describe", "namespace", "other"],
        &["describe", "configmap", "cfg"],
        &["describe", "secret", "s"],
        &["describe", "serviceaccount", "robot"],
    ] {
        same_describe(&server, args);
    }

    // Nodes: heartbeats move between two runs, so compare the section headings.
    let (real, ours) = server.both(&["describe", "node", "sim-node-0"]);
    let headings = |o: &Output| -> Vec<String> {
        text(&o.stdout)
            .lines()
            .filter(|l| !l.starts_with(' '))
            .map(|l| l.split(':').next().unwrap_or_default().to_string())
            .collect()
    };
    assert_eq!(
        headings(&real),
        headings(&ours),
        "{}",
        show(&["describe", "node"], &real, &ours)
    );

    // Events are there, found by the involved object.
    let out = server.rkubectl_ok(&["describe", "pod", "solo"]);
    assert!(out.contains("Events:\n  Type "), "{out}");
    assert!(out.contains("Scheduled"), "{out}");
}

#[test]
fn describe_generic_matches_kubectl() {
    let server = RkubeServer::start();
    // A custom resource: the generic describer.
    server.create_json(&json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}
    }));
    wait_until("widgets served", 20, || {
        server.kubectl(&["get", "widgets"]).status.success()
    });
    server.create_json(&json!({
        "apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": "w1", "labels": {"a": "1"}},
        "spec": {"size": 3, "colors": ["red", "blue"], "deep": {"innerValue": true}}
    }));
    for args in [
        &["describe", "widget", "w1"][..],
        &["describe", "widgets"],
        &["describe", "widget", "w"],
        &["describe", "widget/w1", "--show-events=false"],
        &["describe", "configmaps", "-n", "kube-system"],
    ] {
        same_describe(&server, args);
    }
}
