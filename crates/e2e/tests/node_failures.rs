//! The kubelet's failure paths on real containerd, seen through the real kubectl 1.33: a
//! missing image (ErrImagePull, then ImagePullBackOff), a container exiting 1
//! (CrashLoopBackOff with a growing restart count, `logs --previous`), a failing
//! post-start hook, a failing liveness probe (restarts), a readiness probe gating Ready,
//! an init container that must finish first, and `activeDeadlineSeconds` (Failed,
//! DeadlineExceeded). All pods run at once on one node.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::node::NodeCluster;
use testkit::wait_for;

const KUBECTL: Option<&str> = Some("1.33");

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": "failures"}},
        "spec": spec})
}

fn busybox(name: &str, command: &[&str]) -> Value {
    json!({"name": name, "image": "busybox:1.36", "command": command})
}

fn get(c: &NodeCluster, name: &str) -> Value {
    c.server.get_json(&["pod", name])
}

fn waiting_reason(p: &Value) -> Option<String> {
    p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .map(str::to_string)
}

fn restarts(p: &Value) -> i64 {
    p["status"]["containerStatuses"][0]["restartCount"]
        .as_i64()
        .unwrap_or(0)
}

fn condition(p: &Value, ty: &str) -> Option<String> {
    p["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

fn events_for(c: &NodeCluster, name: &str) -> String {
    c.server.kubectl_ok(
        KUBECTL,
        &[
            "get",
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
        ],
    )
}

#[test]
fn failure_paths_on_real_containers() {
    let c = NodeCluster::start();
    let s = &c.server;
    let pods = [
        pod(
            "missing",
            json!({"containers": [{"name": "c", "image": "docker.io/library/nosuch:1"}]}),
        ),
        pod(
            "crash",
            json!({"containers": [busybox("c", &["sh", "-c", "echo boom; exit 1"])]}),
        ),
        pod(
            "hook",
            json!({"containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                "lifecycle": {"postStart": {"exec": {"command": ["sh", "-c", "exit 3"]}}},
            }]}),
        ),
        pod(
            "liveness",
            json!({"containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                "livenessProbe": {"exec": {"command": ["false"]},
                    "periodSeconds": 1, "failureThreshold": 1},
            }], "terminationGracePeriodSeconds": 1}),
        ),
        pod(
            "readiness",
            json!({"containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1},
            }]}),
        ),
        pod(
            "init",
            json!({
                "initContainers": [busybox("setup", &["sh", "-c", "sleep 2; echo from-init > /work/x"])],
                "containers": [busybox("c", &["sh", "-c", "cat /work/x; sleep 3600"])],
                "volumes": [{"name": "work", "emptyDir": {}}],
            }),
        ),
        pod(
            "deadline",
            json!({"activeDeadlineSeconds": 5,
                "containers": [busybox("c", &["sleep", "3600"])]}),
        ),
    ];
    // Mount the shared volume into the init pod's containers.
    let mut pods = pods;
    pods[5]["spec"]["initContainers"][0]["volumeMounts"] =
        json!([{"name": "work", "mountPath": "/work"}]);
    pods[5]["spec"]["containers"][0]["volumeMounts"] =
        json!([{"name": "work", "mountPath": "/work"}]);
    for p in &pods {
        s.create_json(p);
    }

    // A missing image: ErrImagePull, then ImagePullBackOff, as `kubectl get` shows.
    wait_for("ImagePullBackOff", 60, || {
        let out = s.kubectl_ok(KUBECTL, &["get", "pod", "missing"]);
        out.contains("ImagePullBackOff").then_some(())
    });
    let ev = events_for(&c, "missing");
    assert!(ev.contains("ErrImagePull") || ev.contains("Failed"), "{ev}");
    assert!(ev.contains("BackOff"), "{ev}");

    // Readiness gates Ready until the probe passes.
    wait_for("readiness pod running", 60, || {
        (get(&c, "readiness")["status"]["phase"] == "Running").then_some(())
    });
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        condition(&get(&c, "readiness"), "Ready").as_deref(),
        Some("False")
    );
    s.kubectl_ok(KUBECTL, &["exec", "readiness", "--", "touch", "/tmp/ready"]);
    wait_for("readiness pod Ready", 30, || {
        (condition(&get(&c, "readiness"), "Ready").as_deref() == Some("True")).then_some(())
    });

    // The init container ran to completion first; the app saw its output.
    wait_for("init pod running", 60, || {
        (get(&c, "init")["status"]["phase"] == "Running").then_some(())
    });
    let p = get(&c, "init");
    let init = &p["status"]["initContainerStatuses"][0];
    assert_eq!(init["state"]["terminated"]["reason"], "Completed", "{init}");
    assert_eq!(condition(&p, "Initialized").as_deref(), Some("True"));
    let logs = wait_for("app output", 20, || {
        let out = s.kubectl_v(KUBECTL, &["logs", "init", "-c", "c"]);
        let t = String::from_utf8_lossy(&out.stdout).into_owned();
        t.contains("from-init").then_some(t)
    });
    assert!(logs.contains("from-init"));

    // activeDeadlineSeconds: Failed with DeadlineExceeded.
    wait_for("deadline pod Failed", 60, || {
        let p = get(&c, "deadline");
        (p["status"]["phase"] == "Failed").then_some(())
    });
    assert_eq!(get(&c, "deadline")["status"]["reason"], "DeadlineExceeded");

    // A failing post-start hook kills the container; it is restarted.
    wait_for("hook pod restarted", 90, || {
        (restarts(&get(&c, "hook")) >= 1).then_some(())
    });
    assert!(events_for(&c, "hook").contains("FailedPostStartHook"));

    // A failing liveness probe restarts the container.
    wait_for("liveness pod restarted", 90, || {
        (restarts(&get(&c, "liveness")) >= 1).then_some(())
    });
    assert!(events_for(&c, "liveness").contains("Unhealthy"));

    // Exit 1 with restartPolicy Always: CrashLoopBackOff, restarts growing, the previous
    // container's output kept.
    wait_for("CrashLoopBackOff with 2 restarts", 120, || {
        let p = get(&c, "crash");
        (restarts(&p) >= 2 && waiting_reason(&p).as_deref() == Some("CrashLoopBackOff"))
            .then_some(())
    });
    let p = get(&c, "crash");
    assert_eq!(
        p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 1,
        "{p}"
    );
    let msg = p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(msg.starts_with("back-off "), "{msg}");
    let previous = s.kubectl_ok(KUBECTL, &["logs", "crash", "--previous"]);
    assert!(previous.contains("boom"), "{previous}");

    s.kubectl_ok(
        KUBECTL,
        // busybox's `sleep` as PID 1 ignores SIGTERM: a short grace period, not 30 s.
        &[
            "delete",
            "pods",
            "-l",
            "test=failures",
            "--grace-period=1",
            "--wait=true",
        ],
    );
}
