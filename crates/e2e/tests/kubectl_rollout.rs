//! `rkube kubectl rollout|wait|cordon|uncordon|drain|taint|top` judged by the real
//! kubectl 1.33, over `rkube server` and three simulated nodes (pods become Running and
//! Ready): the same commands run with both clients against one server and must give the
//! same output and exit codes; the steps that change state run with ours and are checked
//! on the server.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;
use std::time::Duration;

use serde_json::Value;
use testkit::{RkubeServer, SimNodes, wait_for, without_reflector_logs};

const V: Option<&str> = Some("1.33");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Runs the real kubectl for a setup step, which must succeed.
fn k(server: &RkubeServer, args: &[&str]) -> String {
    server.kubectl_ok(V, args)
}

/// Runs ours; it must succeed; its stdout.
fn ours(server: &RkubeServer, args: &[&str]) -> String {
    server.rkubectl_ok(args)
}

/// Runs both clients and asserts the same exit code, stdout and stderr.
fn same(server: &RkubeServer, args: &[&str]) -> Output {
    let (real, mine) = server.both(args);
    assert_eq!(
        (
            real.status.code(),
            text(&real.stdout),
            without_reflector_logs(&real.stderr)
        ),
        (mine.status.code(), text(&mine.stdout), text(&mine.stderr)),
        "kubectl {args:?}: real (left) and ours (right) differ"
    );
    mine
}

fn start() -> (RkubeServer, SimNodes) {
    let server = RkubeServer::start();
    let sim = SimNodes::start(&server, "rollout", &["--count", "3"]);
    wait_for("3 Ready nodes", 30, || {
        let list = server.try_get_json(&["nodes"])?;
        let ready = list["items"]
            .as_array()?
            .iter()
            .filter(|n| {
                n["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .count();
        (ready == 3).then_some(())
    });
    (server, sim)
}

fn last_line(s: &str) -> &str {
    s.lines().last().unwrap_or_default()
}

#[test]
fn rollout_status_history_undo_pause_restart() {
    let (server, _sim) = start();
    k(
        &server,
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
    );

    // A live status until the rollout completes.
    let out = ours(
        &server,
        &["rollout", "status", "deployment/nginx", "--timeout=60s"],
    );
    assert_eq!(
        last_line(&out),
        "deployment \"nginx\" successfully rolled out"
    );
    for line in out.lines() {
        assert!(
            line.starts_with("Waiting for deployment") || line.starts_with("deployment \"nginx\""),
            "unexpected status line {line:?}"
        );
    }

    // A second revision (setup with the real kubectl), then its status and the history.
    k(
        &server,
        &["set", "image", "deployment/nginx", "nginx=nginx:1.25"],
    );
    let out = ours(
        &server,
        &["rollout", "status", "deploy", "nginx", "--timeout=60s"],
    );
    assert_eq!(
        last_line(&out),
        "deployment \"nginx\" successfully rolled out"
    );
    let out = same(&server, &["rollout", "history", "deployment/nginx"]);
    assert_eq!(
        text(&out.stdout),
        "deployment.apps/nginx \nREVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n\n"
    );
    let out = same(
        &server,
        &["rollout", "history", "deployment/nginx", "--revision=2"],
    );
    assert!(text(&out.stdout).contains("Image:\tnginx:1.25"));
    same(
        &server,
        &["rollout", "history", "deployment/nginx", "--revision=7"],
    );
    same(
        &server,
        &["rollout", "status", "deployment/nginx", "--watch=false"],
    );

    // Undo to revision 1 (which becomes revision 3), then the skips and errors.
    assert_eq!(
        ours(&server, &["rollout", "undo", "deployment/nginx"]),
        "deployment.apps/nginx rolled back\n"
    );
    let out = ours(
        &server,
        &["rollout", "status", "deployment/nginx", "--timeout=60s"],
    );
    assert_eq!(
        last_line(&out),
        "deployment \"nginx\" successfully rolled out"
    );
    let image = server.get_json(&["deployment", "nginx"])["spec"]["template"]["spec"]["containers"]
        [0]["image"]
        .clone();
    assert_eq!(image, "nginx");
    let out = same(&server, &["rollout", "history", "deployment/nginx"]);
    assert!(text(&out.stdout).ends_with("2         <none>\n3         <none>\n\n"));
    let out = same(
        &server,
        &["rollout", "undo", "deployment/nginx", "--to-revision=3"],
    );
    assert_eq!(
        text(&out.stdout),
        "deployment.apps/nginx skipped rollback (current template already matches revision 3)\n"
    );
    same(
        &server,
        &["rollout", "undo", "deployment/nginx", "--to-revision=9"],
    );
    same(
        &server,
        &["rollout", "status", "deployment/nginx", "--revision=1"],
    );
    same(
        &server,
        &["rollout", "status", "deployment/nginx", "--revision=-1"],
    );
    let out = same(
        &server,
        &["rollout", "undo", "deployment/nginx", "--dry-run=client"],
    );
    assert!(text(&out.stdout).ends_with(" (dry run)\n"));

    // Pause and resume, with kubectl's errors for the repeated and refused steps.
    assert_eq!(
        ours(&server, &["rollout", "pause", "deployment/nginx"]),
        "deployment.apps/nginx paused\n"
    );
    assert_eq!(
        server.get_json(&["deployment", "nginx"])["spec"]["paused"],
        true
    );
    let out = same(&server, &["rollout", "pause", "deployment/nginx"]);
    assert_eq!(
        text(&out.stderr),
        "error: deployments.apps \"nginx\" is already paused\n"
    );
    same(&server, &["rollout", "undo", "deployment/nginx"]);
    same(&server, &["rollout", "restart", "deployment/nginx"]);
    assert_eq!(
        ours(&server, &["rollout", "resume", "deployment/nginx"]),
        "deployment.apps/nginx resumed\n"
    );
    same(&server, &["rollout", "resume", "deployment/nginx"]);

    // Restart: a new revision whose template carries kubectl's annotation.
    assert_eq!(
        ours(&server, &["rollout", "restart", "deployment/nginx"]),
        "deployment.apps/nginx restarted\n"
    );
    let d = server.get_json(&["deployment", "nginx"]);
    let at = d["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(at.parse::<jiff::Timestamp>().is_ok(), "restartedAt {at:?}");
    let out = ours(
        &server,
        &["rollout", "status", "deployment/nginx", "--timeout=60s"],
    );
    assert_eq!(
        last_line(&out),
        "deployment \"nginx\" successfully rolled out"
    );
    let out = same(
        &server,
        &["rollout", "history", "deployment/nginx", "--revision=4"],
    );
    assert!(text(&out.stdout).contains("kubectl.kubernetes.io/restartedAt: "));

    // Kinds without rollouts, missing objects and arguments.
    for args in [
        &["rollout", "status", "svc/kubernetes"][..],
        &["rollout", "history", "svc/kubernetes"],
        &["rollout", "undo", "svc/kubernetes"],
        &["rollout", "pause", "svc/kubernetes"],
        &["rollout", "resume", "svc/kubernetes"],
        &["rollout", "restart", "svc/kubernetes"],
        &["rollout", "status"],
        &["rollout", "status", "deployment/nope"],
    ] {
        let out = same(&server, args);
        assert_eq!(out.status.code(), Some(1), "{args:?}");
    }

    // A rollout that cannot finish: --timeout ends the watch with kubectl's error.
    k(&server, &["create", "deployment", "stuck", "--image=nginx"]);
    k(
        &server,
        &[
            "patch",
            "deployment",
            "stuck",
            "-p",
            r#"{"spec":{"template":{"spec":{"nodeSelector":{"no":"such-node"}}}}}"#,
        ],
    );
    let (real, mine) = server.both(&["rollout", "status", "deployment/stuck", "--timeout=2s"]);
    assert_eq!(real.status.code(), Some(1));
    assert_eq!(mine.status.code(), Some(1));
    assert_eq!(text(&mine.stderr), text(&real.stderr));
    assert_eq!(
        text(&mine.stderr),
        "error: timed out waiting for the condition\n"
    );
}

#[test]
fn rollout_of_daemonsets_and_statefulsets() {
    let (server, _sim) = start();
    server.apply_json(&serde_json::json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "ds"}},
            "template": {"metadata": {"labels": {"app": "ds"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }));
    let out = ours(
        &server,
        &["rollout", "status", "daemonset/ds", "--timeout=60s"],
    );
    assert_eq!(last_line(&out), "daemon set \"ds\" successfully rolled out");
    k(&server, &["set", "image", "daemonset/ds", "c=nginx:1.25"]);
    let out = ours(&server, &["rollout", "status", "ds/ds", "--timeout=60s"]);
    assert_eq!(last_line(&out), "daemon set \"ds\" successfully rolled out");
    let out = same(&server, &["rollout", "history", "daemonset/ds"]);
    assert!(text(&out.stdout).contains("1         <none>\n2         <none>\n"));
    same(
        &server,
        &["rollout", "history", "daemonset/ds", "--revision=1"],
    );
    same(
        &server,
        &["rollout", "undo", "daemonset/ds", "--dry-run=client"],
    );
    same(&server, &["rollout", "pause", "daemonset/ds"]);
    assert_eq!(
        ours(&server, &["rollout", "undo", "daemonset/ds"]),
        "daemonset.apps/ds rolled back\n"
    );
    wait_for("the DaemonSet back on nginx", 20, || {
        let ds = server.get_json(&["daemonset", "ds"]);
        (ds["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx").then_some(())
    });
    let out = ours(
        &server,
        &["rollout", "status", "daemonset/ds", "--timeout=60s"],
    );
    assert_eq!(last_line(&out), "daemon set \"ds\" successfully rolled out");

    server.apply_json(&serde_json::json!({
        "apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"serviceName": "web", "replicas": 2, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}
    }));
    let out = ours(
        &server,
        &["rollout", "status", "statefulset/web", "--timeout=60s"],
    );
    assert!(
        last_line(&out).starts_with("partitioned roll out complete: 2 new pods")
            || last_line(&out).starts_with("statefulset rolling update complete 2 pods"),
        "{out}"
    );
    same(&server, &["rollout", "history", "statefulset/web"]);
    assert_eq!(
        ours(&server, &["rollout", "restart", "statefulset/web"]),
        "statefulset.apps/web restarted\n"
    );
}

#[test]
fn wait_for_conditions_jsonpath_create_delete() {
    let (server, _sim) = start();
    k(&server, &["run", "p1", "--image=nginx"]);
    k(
        &server,
        &["create", "deployment", "w", "--image=nginx", "--replicas=2"],
    );
    wait_for("p1 Running", 30, || {
        let p = server.try_get_json(&["pod", "p1"])?;
        (p["status"]["phase"] == "Running").then_some(())
    });
    let out = same(&server, &["wait", "--for=condition=Ready", "pod/p1"]);
    assert_eq!(text(&out.stdout), "pod/p1 condition met\n");
    let out = same(
        &server,
        &[
            "wait",
            "--for=condition=Available",
            "deployment/w",
            "--timeout=60s",
        ],
    );
    assert_eq!(text(&out.stdout), "deployment.apps/w condition met\n");
    for args in [
        &[
            "wait",
            "--for=condition=Ready=false",
            "pod/p1",
            "--timeout=1s",
        ][..],
        &["wait", "--for=jsonpath={.status.phase}=Running", "pod/p1"],
        &[
            "wait",
            "--for=jsonpath={.status.phase}=Running",
            "pod",
            "-l",
            "app=w",
        ],
        &["wait", "--for=jsonpath=.status.phase", "pod/p1"],
        &["wait", "--for=jsonpath={.status.phase}=", "pod/p1"],
        &[
            "wait",
            "--for=jsonpath={.status.conditions}",
            "pod/p1",
            "--timeout=1s",
        ],
        &[
            "wait",
            "--for=jsonpath={.spec.containers[*].name}=x",
            "pod/p1",
            "--timeout=1s",
        ],
        &["wait", "--for=create", "pod/p2", "--timeout=1s"],
        &["wait", "--for=create", "pod/p1"],
        &["wait", "--for=delete", "pod/nope"],
        &["wait", "--for=delete", "pod/p1", "--timeout=1s"],
        &["wait", "--for=condition=Ready", "pod/nope"],
        &["wait", "--for=bogus", "pod/p1"],
        &["wait", "pod/p1"],
        &["wait", "--for=condition=Ready"],
        &["wait", "--for=condition=Ready", "pods"],
        &["wait", "--for=condition=Ready", "pod", "-l", "nope=x"],
        &["wait", "--for=condition=Ready", "pod/p1", "--timeout=0"],
        &["wait", "--for=condition=Foo", "pod/p1", "--timeout=0"],
        &["wait", "--for=condition=Ready", "pod/p1", "--timeout=-1s"],
        &["wait", "--for=condition=Ready", "pod/p1", "--timeout=xx"],
    ] {
        same(&server, args);
    }
    let out = same(&server, &["wait", "--for=condition=Ready", "pod", "--all"]);
    assert_eq!(text(&out.stdout).lines().count(), 3);

    // Waiting for a deletion and a creation that happen while ours waits.
    let waiter = server
        .rkubectl_cmd()
        .args(["wait", "--for=delete", "pod/p1", "--timeout=30s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let creator = server
        .rkubectl_cmd()
        .args(["wait", "--for=create", "configmap/later", "--timeout=30s"])
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    k(&server, &["delete", "pod", "p1", "--wait=false"]);
    k(&server, &["create", "configmap", "later"]);
    let out = waiter.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "pod/p1 condition met\n");
    let out = creator.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(text(&out.stdout), "configmap/later condition met\n");

    // No metrics-server: `top` fails as kubectl does.
    for args in [
        &["top", "pod"][..],
        &["top", "node"],
        &["top", "pods", "-A"],
    ] {
        let out = same(&server, args);
        assert_eq!(text(&out.stderr), "error: Metrics API not available\n");
    }
}

/// Runs `steps` with one client and returns the transcript.
fn transcript(run: &dyn Fn(&[&str]) -> Output, steps: &[&[&str]]) -> String {
    let mut t = String::new();
    for s in steps {
        let out = run(s);
        t.push_str(&format!(
            "== {s:?}\n{}{}rc={:?}\n",
            text(&out.stdout),
            text(&out.stderr),
            out.status.code()
        ));
    }
    t
}

fn pods_on(server: &RkubeServer, node: &str) -> Vec<Value> {
    server.get_items(&["pods", "--field-selector", &format!("spec.nodeName={node}")])
}

#[test]
fn cordon_taint_drain() {
    let (server, _sim) = start();
    // The same sequences with both clients (each leaves the nodes as it found them).
    let steps: &[&[&str]] = &[
        &["cordon", "sim-node-0"],
        &["cordon", "sim-node-0"],
        &["uncordon", "sim-node-0"],
        &["uncordon", "sim-node-0"],
        &["cordon", "nope"],
        &["cordon"],
        &["cordon", "sim-node-0", "--dry-run=client"],
        &["cordon", "sim-node-0", "--dry-run=server"],
        &["uncordon", "node/sim-node-0"],
        &["cordon", "-l", "nope=x"],
        &["taint", "node", "sim-node-1", "k1=v1:NoSchedule"],
        &["taint", "node", "sim-node-1", "k1=v1:NoSchedule"],
        &[
            "taint",
            "node",
            "sim-node-1",
            "k1=v2:NoSchedule",
            "--overwrite",
        ],
        &["taint", "node", "sim-node-1", "k2:PreferNoSchedule"],
        &["taint", "node", "sim-node-1", "k1-"],
        &["taint", "node", "sim-node-1", "k1-"],
        &["taint", "node", "sim-node-1", "k2:NoExecute-"],
        &["taint", "node", "sim-node-1", "k3=x:Bad"],
        &["taint", "node", "sim-node-1"],
        &["taint", "pod", "p1", "a=b:NoSchedule"],
        &["taint", "nodes", "--all", "k4=v:NoSchedule"],
        &["taint", "nodes", "-l", "nope=1", "k5=v:NoSchedule"],
        &[
            "taint",
            "node",
            "sim-node-1",
            "k6=v:NoSchedule",
            "k6:NoSchedule-",
        ],
        &["taint", "node", "sim-node-1", "k4=x:NoExecute", "foo"],
        &["taint", "nodes", "--all", "k4-"],
        &["taint", "node", "sim-node-1", "k2-"],
        &[
            "taint",
            "node",
            "sim-node-1",
            "k7=v:NoSchedule",
            "--dry-run=client",
        ],
        &["taint", "nodes", "--all", "-l", "a=b", "k8=v:NoSchedule"],
        &["taint", "nodes", "k9=v:NoSchedule"],
        &["drain"],
        &["drain", "nope"],
        &["drain", "sim-node-0", "--pod-selector=a=("],
    ];
    let real = transcript(&|a| server.kubectl_v(V, a), steps);
    let mine = transcript(&|a| server.rkubectl(a), steps);
    assert_eq!(real, mine, "real (left) and ours (right) differ");
    assert!(mine.contains("node/sim-node-0 cordoned\n"));
    assert!(mine.contains("node/sim-node-0 already cordoned\n"));
    assert!(mine.contains("node/sim-node-1 tainted\n"));
    assert!(mine.contains("node/sim-node-1 untainted\n"));
    let node = server.get_json(&["node", "sim-node-1"]);
    assert!(node["spec"]["taints"].is_null(), "{node}");

    // A node with a Deployment's pod, an unmanaged pod and a DaemonSet's pod.
    k(
        &server,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    server.apply_json(&serde_json::json!({
        "apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "ds", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "ds"}},
            "template": {"metadata": {"labels": {"app": "ds"}},
                "spec": {"containers": [{"name": "c", "image": "nginx"}],
                    "volumes": [{"name": "v", "emptyDir": {}}]}}}
    }));
    let target = wait_for("a web pod on a node", 30, || {
        let pods = server.get_items(&["pods", "-l", "app=web"]);
        pods.iter()
            .find_map(|p| p["spec"]["nodeName"].as_str().map(str::to_string))
    });
    k(
        &server,
        &[
            "run",
            "lone",
            "--image=nginx",
            &format!(r#"--overrides={{"spec":{{"nodeName":"{target}"}}}}"#),
        ],
    );
    wait_for("pods Running", 30, || {
        let pods = pods_on(&server, &target);
        (pods.len() >= 3 && pods.iter().all(|p| p["status"]["phase"] == "Running")).then_some(())
    });

    // Refusals are the same with both (each run cordons; uncordon between).
    for args in [
        &["drain", target.as_str()][..],
        &["drain", target.as_str(), "--ignore-daemonsets"],
        &[
            "drain",
            target.as_str(),
            "--ignore-daemonsets",
            "--force",
            "--dry-run=client",
        ],
    ] {
        let real = server.kubectl_v(V, args);
        k(&server, &["uncordon", &target]);
        let mine = server.rkubectl(args);
        k(&server, &["uncordon", &target]);
        // Go's map order also orders the parts of drain's one `Warning: a; b` line.
        let sort = |s: &[u8]| {
            let mut l: Vec<String> = text(s)
                .lines()
                .map(|line| match line.strip_prefix("Warning: ") {
                    Some(rest) => {
                        let mut parts: Vec<&str> = rest.split("; ").collect();
                        parts.sort_unstable();
                        format!("Warning: {}", parts.join("; "))
                    }
                    // … and the parts of the `due to error: [a, b]` list.
                    None => match (line.find(": ["), line.rfind("], ")) {
                        (Some(a), Some(b)) if a < b => {
                            let mut parts: Vec<&str> = line[a + 3..b].split(", ").collect();
                            parts.sort_unstable();
                            format!("{}[{}]{}", &line[..a + 2], parts.join(", "), &line[b + 1..])
                        }
                        _ => line.to_string(),
                    },
                })
                .collect();
            l.sort();
            l
        };
        assert_eq!(real.status.code(), mine.status.code(), "{args:?}");
        assert_eq!(text(&real.stdout), text(&mine.stdout), "{args:?}");
        // Several refusals come in Go's map order: compare as sets of lines.
        assert_eq!(sort(&real.stderr), sort(&mine.stderr), "{args:?}");
    }
    let err = text(
        &server
            .rkubectl(&["drain", &target, "--ignore-daemonsets"])
            .stderr,
    );
    assert!(err.contains(
        "cannot delete cannot delete Pods that declare no controller (use --force to override): default/lone"
    ));
    k(&server, &["uncordon", &target]);

    // The drain: cordon, evict through the eviction subresource, wait for the pods to go.
    let out = server.rkubectl(&["drain", &target, "--ignore-daemonsets", "--force"]);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{stdout}{}", text(&out.stderr));
    assert!(
        stdout.starts_with(&format!("node/{target} cordoned\n")),
        "{stdout}"
    );
    assert!(stdout.contains("evicting pod default/lone\n"), "{stdout}");
    assert!(stdout.contains("pod/lone evicted\n"), "{stdout}");
    assert!(
        stdout.ends_with(&format!("node/{target} drained\n")),
        "{stdout}"
    );
    assert!(text(&out.stderr).starts_with("Warning: ignoring DaemonSet-managed Pods: default/ds-"));
    assert_eq!(
        server.get_json(&["node", &target])["spec"]["unschedulable"],
        true
    );
    // The Deployment's pods come back on the other nodes.
    wait_for("3 Running web pods elsewhere", 40, || {
        let pods = server.get_items(&["pods", "-l", "app=web"]);
        let running: Vec<_> = pods
            .iter()
            .filter(|p| {
                p["status"]["phase"] == "Running" && p["metadata"]["deletionTimestamp"].is_null()
            })
            .collect();
        (running.len() == 3
            && running
                .iter()
                .all(|p| p["spec"]["nodeName"] != target.as_str()))
        .then_some(())
    });
    let left: Vec<Value> = pods_on(&server, &target)
        .into_iter()
        .filter(|p| p["metadata"]["labels"]["app"] != "ds")
        .collect();
    assert!(left.is_empty(), "{left:?}");
    assert_eq!(
        ours(&server, &["uncordon", &target]),
        format!("node/{target} uncordoned\n")
    );

    // A PodDisruptionBudget that allows nothing: retries every 5 s until --timeout.
    k(
        &server,
        &[
            "create",
            "pdb",
            "all",
            "--selector=app=web",
            "--min-available=3",
        ],
    );
    let node = server.get_items(&["pods", "-l", "app=web"])[0]["spec"]["nodeName"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for("the budget observed", 20, || {
        let pdb = server.try_get_json(&["pdb", "all"])?;
        (pdb["status"]["currentHealthy"] == 3).then_some(())
    });
    let out = server.rkubectl(&["drain", &node, "--ignore-daemonsets", "--timeout=3s"]);
    assert_eq!(out.status.code(), Some(1));
    let err = text(&out.stderr);
    assert!(
        err.contains("(will retry after 5s): Cannot evict pod as it would violate the pod's disruption budget."),
        "{err}"
    );
    assert!(err.contains("global timeout reached: 3s"), "{err}");
    assert!(
        err.contains(&format!(
            "There are pending nodes to be drained:\n {node}\n"
        )),
        "{err}"
    );

    // --disable-eviction deletes past the budget.
    let out = server.rkubectl(&[
        "drain",
        &node,
        "--ignore-daemonsets",
        "--disable-eviction",
        "--grace-period=0",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    assert!(stdout.contains(" deleted\n"), "{stdout}");
    assert!(
        stdout.ends_with(&format!("node/{node} drained\n")),
        "{stdout}"
    );
}
