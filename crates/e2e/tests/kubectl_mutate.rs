//! `rkube kubectl` against the real kubectl 1.33 for the verbs that change objects:
//! `delete` (cascade modes, `--wait`, grace periods, dry runs, `-f`, selectors), `edit`
//! (with an `EDITOR` script), `patch`, `label`, `annotate`, `scale` and `set image`. Each
//! scenario runs with both clients on twin objects (or the same object where the command
//! changes nothing) and compares exit codes, messages and the resulting objects.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Output;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, eventually, without_reflector_logs};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// What may differ between the two clients: the program name, klog's timestamps.
fn norm(s: &str) -> String {
    s.replace("kubectl.1.33", "kubectl")
        .lines()
        .map(|l| {
            if l.starts_with('W') && l.contains("] ") {
                format!("W {}", l.split_once("] ").map(|x| x.1).unwrap_or(l))
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn show(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status.code(),
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// Runs `args` with both clients and asserts the same exit code, stdout and stderr.
fn same(server: &RkubeServer, args: &[&str]) -> Output {
    let (real, ours) = server.both(args);
    assert_eq!(
        real.status.code(),
        ours.status.code(),
        "{args:?}\nreal: {}\nours: {}",
        show(&real),
        show(&ours)
    );
    assert_eq!(
        norm(&text(&real.stdout)),
        norm(&text(&ours.stdout)),
        "{args:?} stdout\nours: {}",
        show(&ours)
    );
    assert_eq!(
        norm(&text(&real.stderr)),
        norm(&text(&ours.stderr)),
        "{args:?} stderr\nours: {}",
        show(&ours)
    );
    ours
}

/// Runs the template with `{}` as `real_name` (kubectl 1.33) and as `our_name` (rkube
/// kubectl) and compares exit codes and output (names mapped).
fn twin(
    server: &RkubeServer,
    real_name: &str,
    our_name: &str,
    template: &[&str],
) -> (Output, Output) {
    let real_args: Vec<String> = template
        .iter()
        .map(|a| a.replace("{}", real_name))
        .collect();
    let our_args: Vec<String> = template.iter().map(|a| a.replace("{}", our_name)).collect();
    let ra: Vec<&str> = real_args.iter().map(String::as_str).collect();
    let oa: Vec<&str> = our_args.iter().map(String::as_str).collect();
    let real = server.kubectl_v(Some("1.33"), &ra);
    let ours = server.rkubectl(&oa);
    let map = |s: &str| norm(s).replace(real_name, our_name);
    assert_eq!(
        real.status.code(),
        ours.status.code(),
        "{template:?}\nreal: {}\nours: {}",
        show(&real),
        show(&ours)
    );
    assert_eq!(
        map(&text(&real.stdout)),
        norm(&text(&ours.stdout)),
        "{template:?} stdout\nreal: {}\nours: {}",
        show(&real),
        show(&ours)
    );
    (real, ours)
}

fn stderr_same(real: &Output, ours: &Output, real_name: &str, our_name: &str) {
    assert_eq!(
        norm(&text(&real.stderr)).replace(real_name, our_name),
        norm(&text(&ours.stderr)),
        "stderr\nreal: {}\nours: {}",
        show(real),
        show(ours)
    );
}

/// Two like deployments: `dreal` for the real kubectl, `dours` for ours.
fn twin_deployments(server: &RkubeServer) -> (&'static str, &'static str) {
    let (r, o) = ("dreal", "dours");
    server.create_json(&deployment(r));
    server.create_json(&deployment(o));
    (r, o)
}

/// [`twin`] with the same stderr too; returns ours.
fn twin_same(server: &RkubeServer, real_name: &str, our_name: &str, args: &[&str]) -> Output {
    let (real, ours) = twin(server, real_name, our_name, args);
    stderr_same(&real, &ours, real_name, our_name);
    ours
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "default", "labels": labels},
           "data": {"a": "1"}})
}

fn deployment(name: &str) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"initContainers": [{"name": "init", "image": "busybox"}],
                         "containers": [{"name": "nginx", "image": "nginx"},
                                        {"name": "side", "image": "sidecar:1"}]}}}})
}

#[test]
fn delete_messages_errors_and_modes() {
    let server = RkubeServer::start();
    // Usage and validation errors: nothing is sent, same words, exit 1.
    for args in [
        &["delete"][..],
        &["delete", "configmaps"],
        &["delete", "cm/x", "cm", "y"],
        &["delete", "cm", "x", "--now", "--grace-period=3"],
        &["delete", "cm", "x", "--cascade=bad"],
        &["delete", "cm", "x", "--force", "--grace-period=5"],
        &["delete", "cm", "x", "-o", "yaml"],
        &["delete", "cm", "x", "--dry-run=bogus"],
        &["delete", "cm", "--all", "-l", "a=b"],
        &["delete", "nosuchtype", "x"],
        &["delete", "cm", "nosuch"],
        &["delete", "cm,secret", "nosuch"],
        &["delete", "cm", "nosuch", "--ignore-not-found"],
        &["delete", "cm", "-l", "nothing=here"],
    ] {
        same(&server, args);
    }
    // Deleting: the messages, -o name, the dry runs (which keep the object).
    for (name, labels) in [
        ("r1", json!({"set": "r"})),
        ("o1", json!({"set": "o"})),
        ("keep", json!({})),
    ] {
        server.create_json(&cm(name, labels));
    }
    same(&server, &["delete", "cm", "keep", "--dry-run=server"]);
    same(
        &server,
        &["delete", "cm", "keep", "--dry-run=client", "-o", "name"],
    );
    same(&server, &["delete", "cm", "keep", "--dry-run"]);
    assert!(server.try_get_json(&["cm", "keep"]).is_some());
    twin(&server, "r1", "o1", &["delete", "cm", "{}"]);
    assert!(server.try_get_json(&["cm", "o1"]).is_none());
    for (name, set) in [("r2", "r"), ("r3", "r"), ("o2", "o"), ("o3", "o")] {
        server.create_json(&cm(name, json!({"set": set})));
    }
    let (real, ours) = twin(
        &server,
        "r",
        "o",
        &["delete", "cm", "-l", "set={}", "-o", "name"],
    );
    assert_eq!(
        text(&ours.stdout),
        "configmap/o2\nconfigmap/o3\n",
        "{}",
        show(&real)
    );
    // -f, and the force warning.
    let dir = tempfile::tempdir().unwrap();
    for name in ["rf", "of"] {
        server.create_json(&cm(name, json!({})));
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n"),
        )
        .unwrap();
    }
    let file = |n: &str| dir.path().join(format!("{n}.yaml")).display().to_string();
    let (rf, of) = (file("rf"), file("of"));
    let real = server.kubectl_v(Some("1.33"), &["delete", "-f", &rf]);
    let ours = server.rkubectl(&["delete", "-f", &of]);
    assert_eq!(
        text(&real.stdout).replace("rf", "of"),
        text(&ours.stdout),
        "{}",
        show(&ours)
    );
    let real = server.kubectl_v(Some("1.33"), &["delete", "-f", &rf]);
    let ours = server.rkubectl(&["delete", "-f", &of]);
    assert_eq!(real.status.code(), ours.status.code());
    assert_eq!(
        text(&real.stderr).replace(&rf, &of).replace("rf", "of"),
        text(&ours.stderr),
        "{}",
        show(&ours)
    );
    for name in ["rg", "og"] {
        server.create_json(&cm(name, json!({})));
    }
    let (real, ours) = twin(
        &server,
        "rg",
        "og",
        &["delete", "cm", "{}", "--force", "--grace-period=0"],
    );
    stderr_same(&real, &ours, "rg", "og");
    assert!(text(&ours.stdout).contains("force deleted"));
}

fn replicasets_of(server: &RkubeServer, app: &str) -> Vec<Value> {
    server.get_items(&["replicasets", "-l", &format!("app={app}")])
}

#[test]
fn delete_cascade_modes_and_wait() {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    for name in ["orphan", "bg", "fg"] {
        server.create_json(&deployment(name));
        eventually("a replicaset", || replicasets_of(&server, name).len() == 1);
    }
    // --cascade=orphan: the ReplicaSet stays, without its owner reference.
    let out = server.rkubectl(&["delete", "deployment", "orphan", "--cascade=orphan"]);
    assert!(out.status.success(), "{}", show(&out));
    assert_eq!(text(&out.stdout), "deployment.apps \"orphan\" deleted\n");
    assert!(
        server.try_get_json(&["deployment", "orphan"]).is_none(),
        "--wait returned before the deployment was gone"
    );
    eventually("the orphan loses its owner", || {
        let rs = replicasets_of(&server, "orphan");
        rs.len() == 1
            && rs[0]["metadata"]["ownerReferences"]
                .as_array()
                .is_none_or(|o| o.is_empty())
    });
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(replicasets_of(&server, "orphan").len(), 1);
    // Background (the default): the ReplicaSet goes after its owner.
    server.rkubectl_ok(&["delete", "deployment", "bg"]);
    eventually("the dependent goes", || {
        replicasets_of(&server, "bg").is_empty()
    });
    // Foreground with --wait: when the command returns the dependents are gone too.
    server.rkubectl_ok(&["delete", "deployment", "fg", "--cascade=foreground"]);
    assert!(server.try_get_json(&["deployment", "fg"]).is_none());
    assert!(
        replicasets_of(&server, "fg").is_empty(),
        "foreground deletion returned before its dependents were gone"
    );
    // The deprecated boolean form warns as kubectl does.
    server.create_json(&cm("c-true", json!({})));
    server.create_json(&cm("c-false", json!({})));
    let (real, ours) = twin(
        &server,
        "c-true",
        "c-false",
        &["delete", "cm", "{}", "--cascade=false"],
    );
    stderr_same(&real, &ours, "c-true", "c-false");

    // --wait waits for finalizers; --wait=false does not; --timeout gives up as kubectl.
    let held = |name: &str| {
        let mut c = cm(name, json!({}));
        c["metadata"]["finalizers"] = json!(["example.com/hold"]);
        server.create_json(&c);
    };
    held("w1");
    let start = Instant::now();
    let mut child = server
        .rkubectl_cmd()
        .args(["delete", "cm", "w1"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    assert!(
        child.try_wait().unwrap().is_none(),
        "delete returned while a finalizer holds the object"
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "patch",
            "cm",
            "w1",
            "--type=merge",
            "-p",
            r#"{"metadata":{"finalizers":null}}"#,
        ],
    );
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "configmap \"w1\" deleted\n");
    assert!(server.try_get_json(&["cm", "w1"]).is_none());
    assert!(start.elapsed() >= Duration::from_secs(2));

    held("w2");
    let start = Instant::now();
    server.rkubectl_ok(&["delete", "cm", "w2", "--wait=false"]);
    assert!(start.elapsed() < Duration::from_secs(5));
    assert!(server.get_json(&["cm", "w2"])["metadata"]["deletionTimestamp"].is_string());
    held("w3");
    let real = server.kubectl_v(Some("1.33"), &["delete", "cm", "w3", "--timeout=1s"]);
    let ours = server.rkubectl(&["delete", "cm", "w3", "--timeout=1s"]);
    assert_eq!(real.status.code(), ours.status.code(), "{}", show(&ours));
    assert_eq!(
        without_reflector_logs(&real.stderr),
        without_reflector_logs(&ours.stderr)
    );
    for n in ["w2", "w3"] {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "patch",
                "cm",
                n,
                "--type=merge",
                "-p",
                r#"{"metadata":{"finalizers":null}}"#,
            ],
        );
    }
}

/// The parts of a deployment both clients must have changed the same way.
fn strip(mut d: Value) -> Value {
    let md = d["metadata"].as_object_mut().unwrap();
    for k in [
        "name",
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
    ] {
        md.remove(k);
    }
    if let Some(l) = md.get_mut("labels").and_then(Value::as_object_mut) {
        l.remove("app");
    }
    d["spec"]["selector"] = Value::Null;
    d["spec"]["template"]["metadata"] = Value::Null;
    d["status"] = Value::Null;
    d
}

#[test]
fn label_and_annotate() {
    let server = RkubeServer::start();
    let (r, o) = twin_deployments(&server);
    let t = |args: &[&str]| twin_same(&server, r, o, args);
    // label
    t(&["label", "deploy", "{}", "a=b"]);
    t(&["label", "deploy", "{}", "a=c"]);
    t(&["label", "deploy/{}", "a=b"]);
    t(&["label", "deploy/{}", "a=c", "--overwrite"]);
    t(&["label", "deploy/{}", "a-"]);
    t(&["label", "deploy/{}", "a-"]);
    t(&["label", "deploy/{}", "a=b c"]);
    t(&["label", "deploy/{}", "x"]);
    t(&["label", "deploy/{}"]);
    t(&["label", "deploy/{}", "--list"]);
    t(&[
        "label",
        "deploy/{}",
        "k=v",
        "--dry-run=client",
        "-o",
        "name",
    ]);
    t(&["label", "deploy/{}", "k=v", "--dry-run=server"]);
    t(&["label", "deploy/{}", "k=v", "--resource-version=1"]);
    t(&["label", "nosuchtype", "{}", "k=v"]);
    // An invalid key is refused by the server, printed as kubectl prints Invalid.
    let ours = t(&["label", "deploy", "{}", "bad key=v"]);
    assert!(
        text(&ours.stderr).starts_with(
            "The Deployment \"dours\" is invalid: metadata.labels: Invalid value: \"bad key\""
        ),
        "{}",
        show(&ours)
    );
    // annotate
    t(&["annotate", "deploy", "{}", "n=1"]);
    t(&["annotate", "deploy", "{}", "n=2"]);
    t(&["annotate", "deploy", "{}", "n=2", "--overwrite"]);
    t(&["annotate", "deploy", "{}", "n-", "m=1"]);
    t(&["annotate", "deploy", "{}", "m=1", "m-"]);
    let ours = strip(server.get_json(&["deploy", o]));
    assert_eq!(strip(server.get_json(&["deploy", r])), ours);
    assert_eq!(ours["metadata"]["labels"]["a"], Value::Null);
    assert_eq!(ours["metadata"]["annotations"]["n"], Value::Null);
}

#[test]
fn patch_and_scale() {
    let server = RkubeServer::start();
    let (r, o) = twin_deployments(&server);
    let t = |args: &[&str]| twin_same(&server, r, o, args);
    // patch
    t(&["patch", "deploy", "{}", "-p", r#"{"spec":{"replicas":3}}"#]);
    // "(no change)" on an object no controller touches.
    server.create_json(&cm("patch-real", json!({})));
    server.create_json(&cm("patch-ours", json!({})));
    for _ in 0..2 {
        let (real, ours) = twin(
            &server,
            "patch-real",
            "patch-ours",
            &["patch", "cm", "{}", "-p", r#"{"data":{"b":"2"}}"#],
        );
        stderr_same(&real, &ours, "patch-real", "patch-ours");
    }
    t(&[
        "patch",
        "deploy",
        "{}",
        "--type=merge",
        "-p",
        "spec:\n  minReadySeconds: 2",
    ]);
    t(&[
        "patch",
        "deploy",
        "{}",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/replicas","value":2}]"#,
    ]);
    t(&["patch", "deploy", "{}", "--type=json", "-p", "[1]"]);
    t(&["patch", "deploy", "{}", "-p", "{bad"]);
    t(&["patch", "deploy", "{}", "-p", ": :"]);
    t(&["patch", "deploy", "{}", "--type=foo", "-p", "{}"]);
    t(&["patch", "deploy", "{}"]);
    t(&["patch", "deploy", "{}-missing", "-p", "{}"]);
    t(&[
        "patch",
        "deploy",
        "{}",
        "--subresource=scale",
        "--type=merge",
        "-p",
        r#"{"spec":{"replicas":2}}"#,
    ]);
    t(&[
        "patch",
        "deploy",
        "{}",
        "-p",
        r#"{"spec":{"replicas":5}}"#,
        "--dry-run=client",
        "-o",
        "jsonpath={.spec.replicas}",
    ]);
    t(&[
        "patch",
        "deploy",
        "{}",
        "-p",
        r#"{"spec":{"replicas":5}}"#,
        "--dry-run=server",
        "-o",
        "name",
    ]);
    // scale
    t(&["scale", "deploy", "{}", "--replicas=4"]);
    t(&["scale", "deploy/{}", "--replicas=3", "--current-replicas=9"]);
    t(&["scale", "deploy/{}", "--replicas=3", "--current-replicas=4"]);
    let (real, ours) = twin(
        &server,
        r,
        o,
        &["scale", "deploy/{}", "--replicas=3", "--resource-version=1"],
    );
    for out in [&real, &ours] {
        assert!(
            text(&out.stderr).starts_with("error: Expected resource version to be 1, was "),
            "{}",
            show(out)
        );
    }
    t(&["scale", "deploy/{}", "--replicas=-1"]);
    t(&["scale", "deploy/{}"]);
    t(&["scale", "deploy/{}-missing", "--replicas=1"]);
    t(&[
        "scale",
        "deploy/{}",
        "--replicas=1",
        "--dry-run=client",
        "-o",
        "name",
    ]);
    let ours = strip(server.get_json(&["deploy", o]));
    assert_eq!(strip(server.get_json(&["deploy", r])), ours);
    assert_eq!(ours["spec"]["replicas"], 3);
}

#[test]
fn set_image_resources_env() {
    let server = RkubeServer::start();
    let (r, o) = twin_deployments(&server);
    let t = |args: &[&str]| twin_same(&server, r, o, args);
    // set image
    t(&["set", "image", "deploy/{}", "nginx=nginx:1.25"]);
    t(&["set", "image", "deploy/{}", "nginx=nginx:1.25"]);
    t(&["set", "image", "deploy/{}", "foo=bar"]);
    t(&["set", "image", "deploy/{}"]);
    t(&["set", "image", "deploy/{}", "*=x", "a=b"]);
    t(&[
        "set",
        "image",
        "deploy/{}",
        "init=busybox:2",
        "side=sidecar:2",
    ]);
    t(&[
        "set",
        "image",
        "deploy/{}",
        "*=registry.local/all:1",
        "--dry-run=client",
        "-o",
        "name",
    ]);

    // set resources
    for args in [
        &[
            "set",
            "resources",
            "deploy/{}",
            "--limits=cpu=200m,memory=512Mi",
            "-c",
            "nginx",
        ][..],
        &[
            "set",
            "resources",
            "deploy/{}",
            "--limits=cpu=200m,memory=512Mi",
            "-c",
            "nginx",
        ],
        &[
            "set",
            "resources",
            "deploy/{}",
            "--requests=cpu=0.1",
            "-c",
            "s*",
        ],
        &["set", "resources", "deploy/{}"],
        &["set", "resources", "deploy/{}", "--requests=cpu"],
        &["set", "resources", "deploy/{}", "--requests=cpu=abc"],
        &[
            "set",
            "resources",
            "deploy/{}",
            "-c",
            "nope",
            "--limits=cpu=1",
        ],
    ] {
        t(args);
    }
    // set env
    server.create_json(&json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "envsrc", "namespace": "default"}, "data": {"a.b": "1"}}));
    for args in [
        &["set", "env", "deploy/{}", "A=1", "B=2"][..],
        &["set", "env", "deploy/{}", "A=1"],
        &["set", "env", "deploy/{}", "A=3", "--overwrite=false"],
        &["set", "env", "deploy/{}", "B-", "-c", "nginx"],
        &[
            "set",
            "env",
            "deploy/{}",
            "--from=configmap/envsrc",
            "--prefix=P_",
            "-c",
            "side",
        ],
        &["set", "env", "deploy/{}", "--list"],
        &["set", "env", "deploy/{}", "1A=x"],
        &["set", "env", "deploy/{}", "A=1", "x"],
        &["set", "env", "deploy/{}", "-c", "nope", "A=1"],
        &["set", "env", "deploy/{}", "--keys=a"],
        &[
            "set",
            "env",
            "deploy/{}",
            "A=5",
            "--dry-run=client",
            "-o",
            "name",
        ],
    ] {
        t(args);
    }
    // The objects came out the same.
    let real = strip(server.get_json(&["deploy", r]));
    let ours = strip(server.get_json(&["deploy", o]));
    assert_eq!(real, ours);
    assert_eq!(
        ours["spec"]["template"]["spec"]["containers"][0]["image"],
        "nginx:1.25"
    );
    assert_eq!(
        ours["spec"]["template"]["spec"]["initContainers"][0]["image"],
        "busybox:2"
    );
    assert_eq!(
        ours["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"],
        json!({"cpu": "200m", "memory": "512Mi"})
    );
    assert_eq!(
        ours["spec"]["template"]["spec"]["containers"][1]["resources"]["requests"],
        json!({"cpu": "100m"})
    );
}

fn editor_script(dir: &std::path::Path, name: &str, body: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    p
}

fn edit_both(
    server: &RkubeServer,
    editor: &PathBuf,
    template: &[&str],
    r: &str,
    o: &str,
) -> (Output, Output) {
    let ra: Vec<String> = template.iter().map(|a| a.replace("{}", r)).collect();
    let oa: Vec<String> = template.iter().map(|a| a.replace("{}", o)).collect();
    let real = server
        .kubectl_cmd(Some("1.33"))
        .env("EDITOR", editor)
        .env_remove("KUBE_EDITOR")
        .args(&ra)
        .output()
        .unwrap();
    let ours = server
        .rkubectl_cmd()
        .env("EDITOR", editor)
        .env_remove("KUBE_EDITOR")
        .args(&oa)
        .output()
        .unwrap();
    assert_eq!(
        real.status.code(),
        ours.status.code(),
        "{template:?}\nreal: {}\nours: {}",
        show(&real),
        show(&ours)
    );
    assert_eq!(
        text(&real.stdout).replace(r, o),
        text(&ours.stdout),
        "{template:?}\nreal: {}\nours: {}",
        show(&real),
        show(&ours)
    );
    (real, ours)
}

#[test]
fn edit_with_an_editor_script() {
    let server = RkubeServer::start();
    let dir = tempfile::tempdir().unwrap();
    let (er, eo) = ("edit-real", "edit-ours");
    for n in [er, eo] {
        server.create_json(&cm(n, json!({})));
    }
    // A real change: patched, printed as kubectl does, --output-patch shows the patch.
    let change = editor_script(
        dir.path(),
        "change.sh",
        r#"sed -i 's/^  a: "1"$/  a: "2"/' "$1""#,
    );
    edit_both(&server, &change, &["edit", "cm/{}"], er, eo);
    assert_eq!(server.get_json(&["cm", eo])["data"]["a"], "2");
    let three = editor_script(
        dir.path(),
        "three.sh",
        r#"sed -i 's/^  a: "2"$/  a: "3"/' "$1""#,
    );
    edit_both(
        &server,
        &three,
        &["edit", "cm", "{}", "--output-patch"],
        er,
        eo,
    );
    assert_eq!(server.get_json(&["cm", eo])["data"]["a"], "3");
    // --save-config writes kubectl's last-applied annotation (managedFields included, as
    // kubectl restores them before serializing).
    let four = editor_script(
        dir.path(),
        "four.sh",
        r#"sed -i 's/^  a: "3"$/  a: "4"/' "$1""#,
    );
    edit_both(
        &server,
        &four,
        &["edit", "cm", "{}", "--save-config"],
        er,
        eo,
    );
    for n in [er, eo] {
        let got = server.get_json(&["cm", n]);
        let last: Value = serde_json::from_str(
            got["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(last["data"]["a"], "4", "{n}: {last}");
        assert_eq!(last["metadata"]["annotations"], json!({}), "{n}: {last}");
        assert!(last["metadata"]["managedFields"].is_array(), "{n}: {last}");
    }
    // Nothing changed.
    let noop = editor_script(dir.path(), "noop.sh", "true");
    let (real, ours) = edit_both(&server, &noop, &["edit", "cm", "{}"], er, eo);
    stderr_same(&real, &ours, er, eo);
    assert_eq!(text(&ours.stderr), "Edit cancelled, no changes made.\n");
    // Renaming is refused.
    let rename = editor_script(
        dir.path(),
        "rename.sh",
        r#"sed -i 's/^  name: edit-\(.*\)$/  name: zz-\1/' "$1""#,
    );
    let (_, ours) = edit_both(&server, &rename, &["edit", "cm", "{}"], er, eo);
    assert!(
        text(&ours.stderr).contains("At least one of apiVersion, kind and name was changed"),
        "{}",
        show(&ours)
    );
    // An invalid edit re-opens the file with the reasons; leaving it unchanged gives up.
    let (dr, dd) = ("edit-deploy-real", "edit-deploy-ours");
    for n in [dr, dd] {
        server.create_json(&deployment(n));
    }
    let invalid = editor_script(
        dir.path(),
        "invalid.sh",
        r#"cat "$1" >> "$1.seen"; sed -i 's/^  replicas: 1$/  replicas: -1/' "$1""#,
    );
    let (real, ours) = edit_both(&server, &invalid, &["edit", "deploy/{}"], dr, dd);
    for out in [&real, &ours] {
        let err = text(&out.stderr);
        assert!(err.contains("is invalid"), "{}", show(out));
        assert!(
            err.contains("Edit cancelled, no valid changes were saved."),
            "{}",
            show(out)
        );
        assert!(
            err.contains("A copy of your changes has been stored to"),
            "{}",
            show(out)
        );
    }
    assert_eq!(server.get_json(&["deploy", dd])["spec"]["replicas"], 1);
    // Unknown types fail as kubectl.
    let (real, ours) = edit_both(&server, &noop, &["edit", "nosuchtype/{}"], er, eo);
    stderr_same(&real, &ours, er, eo);
}
