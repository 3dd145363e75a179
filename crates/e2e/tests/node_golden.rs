//! The seed command for real: `rkube server` with its own node (containerd started by
//! rkube, runc, the CNI bridge), the offline demo images behind a local `docker.io`
//! mirror, and the real kubectl 1.33 running `kubectl create deployment nginx
//! --image=nginx --replicas=3` verbatim. Three pods become containers that serve nginx's
//! page over their own IPs; `kubectl logs` shows the access log line, `kubectl exec`
//! shows the cluster DNS settings; scaling and `kubectl set image` work; deleting the
//! Deployment leaves no sandbox, container or IP behind.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::Value;
use testkit::node::{NodeCluster, http_get, in_cidr};
use testkit::wait_for;

const KUBECTL: Option<&str> = Some("1.33");

fn ready_pods(c: &NodeCluster, selector: &str) -> Vec<Value> {
    c.server.ready_pods(selector)
}

fn wait_ready_count(c: &NodeCluster, selector: &str, n: usize, secs: u64) -> Vec<Value> {
    wait_for(&format!("{n} ready pods ({selector})"), secs, || {
        let pods = ready_pods(c, selector);
        let all = c.server.get_items(&["pods", "-l", selector]);
        (pods.len() == n && all.len() == n).then_some(pods)
    })
}

/// The containerd containers and sandboxes the node still has (via `ctr`).
fn runtime_objects(c: &NodeCluster) -> (usize, usize) {
    let sock = c.server.data_dir().join("agent/containerd/containerd.sock");
    let count = |what: &str| {
        let out = Command::new("ctr")
            .arg("--address")
            .arg(&sock)
            .args(["-n", "k8s.io", what, "ls", "-q"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter(|l| !l.trim().is_empty())
            .count()
    };
    (count("containers"), count("tasks"))
}

/// The ready addresses of the `nginx` Endpoints.
fn endpoints_of(kubeconfig: &Path, home: &Path) -> Vec<String> {
    let out = Command::new(testkit::kubectl_binary(KUBECTL))
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .args(["get", "endpoints", "nginx", "-o", "json"])
        .output()
        .unwrap();
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
    v["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|s| s["addresses"].as_array().cloned().unwrap_or_default())
        .filter_map(|a| a["ip"].as_str().map(str::to_string))
        .collect()
}

fn endpoint_ips(c: &NodeCluster) -> Vec<String> {
    endpoints_of(&c.server.kubeconfig, &c.server.home)
}

/// Follows the Endpoints and GETs each advertised address in turn until `stop`: (requests
/// that succeeded, requests that failed while their address was still advertised, whether
/// the new page was seen). A request that fails because its pod was withdrawn meanwhile
/// is the client's race with the Endpoints update, not a failure of an advertised
/// endpoint.
fn read_loop(kubeconfig: &Path, home: &Path, stop: &AtomicBool) -> (usize, Vec<String>, bool) {
    let (mut ok, mut failed, mut saw_new) = (0, Vec::new(), false);
    let mut turn = 0usize;
    while !stop.load(Ordering::SeqCst) {
        let ips = endpoints_of(kubeconfig, home);
        if ips.is_empty() {
            continue;
        }
        let ip = &ips[turn % ips.len()];
        turn += 1;
        match http_get(ip, 80, "/") {
            Ok((200, body)) => {
                ok += 1;
                saw_new |= body.contains("(r2)");
            }
            other => {
                if endpoints_of(kubeconfig, home).contains(ip) {
                    failed.push(format!("{ip}: {other:?}"));
                }
            }
        }
    }
    (ok, failed, saw_new)
}

#[test]
fn seed_command_serves_nginx_on_real_containers() {
    let c = NodeCluster::start();
    let s = &c.server;
    let node = s.get_json(&["node", &c.node]);
    let pod_cidr = node["spec"]["podCIDR"].as_str().unwrap().to_string();

    // The seed command, verbatim.
    s.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    let pods = wait_ready_count(&c, "app=nginx", 3, 120);
    let mut ips = Vec::new();
    for p in &pods {
        let ip = p["status"]["podIP"].as_str().unwrap().to_string();
        assert!(in_cidr(&ip, &pod_cidr), "pod IP {ip} outside {pod_cidr}");
        assert_eq!(p["spec"]["nodeName"], c.node.as_str());
        let cs = &p["status"]["containerStatuses"][0];
        assert_eq!(cs["ready"], true, "{cs}");
        assert!(
            cs["containerID"]
                .as_str()
                .unwrap()
                .starts_with("containerd://"),
            "{cs}"
        );
        assert!(
            cs["imageID"].as_str().is_some_and(|i| !i.is_empty()),
            "{cs}"
        );
        ips.push(ip);
    }
    ips.sort();
    ips.dedup();
    assert_eq!(ips.len(), 3, "each pod has its own IP: {ips:?}");

    // Each pod answers HTTP 200 with nginx's page from the host.
    for ip in &ips {
        let (code, body) = wait_for(&format!("HTTP from {ip}"), 30, || {
            http_get(ip, 80, "/").ok()
        });
        assert_eq!(code, 200, "{body}");
        assert!(body.contains("Welcome to nginx!"), "{body}");
    }

    // The access log line of that request, through the API server and the kubelet.
    let name = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    let logs = wait_for("the access log line", 20, || {
        let out = s.kubectl_v(KUBECTL, &["logs", &name]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        text.contains("GET / HTTP/1.0").then_some(text)
    });
    assert!(logs.contains("\" 200 "), "{logs}");

    // The cluster DNS settings, through exec.
    let resolv = s.kubectl_ok(KUBECTL, &["exec", &name, "--", "cat", "/etc/resolv.conf"]);
    assert!(resolv.contains("nameserver 10.43.0.10"), "{resolv}");
    assert!(
        resolv.contains("search default.svc.cluster.local svc.cluster.local cluster.local"),
        "{resolv}"
    );
    assert!(resolv.contains("ndots:5"), "{resolv}");

    // kubectl describe shows the kubelet's events.
    let describe = s.kubectl_ok(KUBECTL, &["describe", "pod", &name]);
    for event in ["Scheduled", "Pulled", "Created", "Started"] {
        assert!(describe.contains(event), "{event} missing:\n{describe}");
    }

    // A Service in front of the pods: its Endpoints are what a client follows.
    s.kubectl_ok(KUBECTL, &["expose", "deployment", "nginx", "--port=80"]);
    wait_for("3 ready endpoints", 30, || {
        (endpoint_ips(&c).len() == 3).then_some(())
    });

    // A new image version rolls over while a reader follows the Endpoints: no request to
    // an advertised endpoint fails, and the new page appears.
    let stop = Arc::new(AtomicBool::new(false));
    let reader = {
        let stop = Arc::clone(&stop);
        let kubeconfig = s.kubeconfig.clone();
        let home = s.home.clone();
        std::thread::spawn(move || read_loop(&kubeconfig, &home, &stop))
    };
    s.kubectl_ok(
        KUBECTL,
        &["set", "image", "deployment/nginx", "nginx=nginx:1.22-r2"],
    );
    s.kubectl_ok(
        KUBECTL,
        &["rollout", "status", "deployment/nginx", "--timeout=120s"],
    );
    wait_for("the reader sees the new page", 60, || {
        let ips = endpoint_ips(&c);
        (ips.len() == 3
            && ips
                .iter()
                .all(|ip| http_get(ip, 80, "/").is_ok_and(|(_, b)| b.contains("(r2)"))))
        .then_some(())
    });
    stop.store(true, Ordering::SeqCst);
    let (ok, failed, saw_new) = reader.join().unwrap();
    assert!(
        failed.is_empty(),
        "failed requests to advertised endpoints: {failed:?}"
    );
    assert!(ok >= 10, "only {ok} requests during the rollout");
    assert!(saw_new, "the reader never saw the new version");

    // Scale to 5, then to 1.
    s.kubectl_ok(KUBECTL, &["scale", "deployment/nginx", "--replicas=5"]);
    wait_ready_count(&c, "app=nginx", 5, 120);
    s.kubectl_ok(KUBECTL, &["scale", "deployment/nginx", "--replicas=1"]);
    let pods = wait_ready_count(&c, "app=nginx", 1, 120);
    let ip = pods[0]["status"]["podIP"].as_str().unwrap().to_string();
    let (code, body) = wait_for("HTTP from the last pod", 30, || http_get(&ip, 80, "/").ok());
    assert_eq!(code, 200);
    assert!(body.contains("(r2)"), "{body}");

    // Deleting the Deployment leaves nothing behind in containerd or host-local.
    s.kubectl_ok(KUBECTL, &["delete", "deployment,service", "nginx"]);
    wait_for("pods gone", 120, || {
        s.get_items(&["pods", "-l", "app=nginx"])
            .is_empty()
            .then_some(())
    });
    wait_for("no containers or tasks left", 60, || {
        (runtime_objects(&c) == (0, 0)).then_some(())
    });
    wait_for("no pod IPs left allocated", 30, || {
        net::cni::allocated_ips(&c.cni_network())
            .unwrap_or_default()
            .is_empty()
            .then_some(())
    });
    std::thread::sleep(Duration::from_millis(10));
}
