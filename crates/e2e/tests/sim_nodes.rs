//! `rkube sim-nodes` against `rkube server`, seen with the real kubectl 1.33: three
//! simulated nodes register Ready with their Leases renewed; a pod bound to one waits for
//! the node's `spec.podCIDR`, then runs with an IP from it; `kubectl delete pod` is
//! answered by the simulated kubelet's final delete. With the server's node IPAM
//! controller, the nodes get distinct pod CIDRs from `--cluster-cidr` on their own.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, eventually};

fn json_of(server: &RkubeServer, args: &[&str]) -> Value {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(Some("1.33"), &a)).unwrap()
}

fn ready(node: &Value) -> bool {
    node["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn create_pod(server: &RkubeServer, name: &str, node: &str) {
    let pod = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [
            {"name": "web", "image": "registry.local/web:1",
             "resources": {"requests": {"cpu": "100m", "memory": "64Mi"},
                           "limits": {"cpu": "100m", "memory": "64Mi"}}},
            {"name": "aside", "image": "registry.local/aside:1"}]}});
    let o = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &pod.to_string());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn sim_nodes_register_run_pods_and_delete_them() {
    // Without node IPAM: the pod CIDRs are set by hand.
    let server = RkubeServer::start_with(&["--allocate-node-cidrs=false"]);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let sim = SimNodes::start(
        &server,
        "sim",
        &[
            "--count",
            "3",
            "--lease-seconds",
            "8",
            "--status-interval",
            "3s",
        ],
    );

    // Three Ready nodes, as `kubectl get nodes` prints them.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let out = server.kubectl(&["get", "nodes", "--no-headers"]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let ready: Vec<&str> = text
            .lines()
            .filter(|l| l.split_whitespace().nth(1) == Some("Ready"))
            .collect();
        if out.status.success() && ready.len() == 3 {
            for (i, line) in ready.iter().enumerate() {
                assert!(line.starts_with(&format!("sim-node-{i} ")), "{text}");
                assert!(line.contains("v1.33.0"), "{text}");
            }
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no 3 Ready nodes: {text}\nsim-nodes log:\n{}",
            sim.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let node = json_of(&server, &["node", "sim-node-1"]);
    assert_eq!(node["metadata"]["labels"]["rkube.io/simulated"], "true");
    assert_eq!(
        node["metadata"]["labels"]["kubernetes.io/hostname"],
        "sim-node-1"
    );
    assert_eq!(node["status"]["capacity"]["cpu"], "32");
    assert_eq!(node["status"]["capacity"]["pods"], "110");
    assert_eq!(node["status"]["addresses"][0]["address"], "10.0.0.2");
    assert!(node["spec"]["podCIDR"].is_null(), "{node}");

    // Leases: held by their node, owned by it, renewed every quarter of their duration.
    let lease = json_of(&server, &["lease", "-n", "kube-node-lease", "sim-node-0"]);
    assert_eq!(lease["spec"]["holderIdentity"], "sim-node-0");
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 8);
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    assert_eq!(
        lease["metadata"]["ownerReferences"][0]["uid"],
        json_of(&server, &["node", "sim-node-0"])["metadata"]["uid"]
    );
    let first = lease["spec"]["renewTime"].clone();
    eventually("a lease renewal", || {
        json_of(&server, &["lease", "-n", "kube-node-lease", "sim-node-0"])["spec"]["renewTime"]
            != first
    });
    // The heartbeat moves lastHeartbeatTime, not lastTransitionTime.
    let ready_of = |n: &Value| {
        n["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .cloned()
            .unwrap()
    };
    let before = ready_of(&json_of(&server, &["node", "sim-node-2"]));
    eventually("a node heartbeat", || {
        let now = ready_of(&json_of(&server, &["node", "sim-node-2"]));
        now["lastHeartbeatTime"] != before["lastHeartbeatTime"]
            && now["lastTransitionTime"] == before["lastTransitionTime"]
    });
    assert!(ready(&json_of(&server, &["node", "sim-node-2"])));

    // A pod bound to a node without a pod CIDR waits for one.
    create_pod(&server, "web-0", "sim-node-0");
    std::thread::sleep(Duration::from_secs(2));
    let pod = json_of(&server, &["pod", "web-0"]);
    assert_ne!(pod["status"]["phase"], "Running", "{pod}");
    assert!(pod["status"]["podIP"].is_null(), "{pod}");

    for (i, cidr) in ["10.42.1.0/24", "10.42.2.0/24", "10.42.3.0/24"]
        .iter()
        .enumerate()
    {
        let patch = json!({"spec": {"podCIDR": cidr, "podCIDRs": [cidr]}}).to_string();
        server.kubectl_ok(
            Some("1.33"),
            &[
                "patch",
                "node",
                &format!("sim-node-{i}"),
                "--type",
                "merge",
                "-p",
                &patch,
            ],
        );
    }
    create_pod(&server, "web-1", "sim-node-0");

    let running = |name: &str| {
        let p = json_of(&server, &["pod", name]);
        (p["status"]["phase"] == "Running").then_some(p)
    };
    let mut ips = Vec::new();
    for name in ["web-0", "web-1"] {
        let deadline = Instant::now() + Duration::from_secs(20);
        let pod = loop {
            if let Some(p) = running(name) {
                break p;
            }
            assert!(
                Instant::now() < deadline,
                "{name} not Running: {}\nsim-nodes log:\n{}",
                json_of(&server, &["pod", name]),
                sim.log()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        let st = &pod["status"];
        let cond = |t: &str| {
            st["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == t)
                .map(|c| c["status"].clone())
        };
        for t in [
            "PodReadyToStartContainers",
            "Initialized",
            "Ready",
            "ContainersReady",
            "PodScheduled",
        ] {
            assert_eq!(cond(t), Some(json!("True")), "{t}: {pod}");
        }
        let ip: Ipv4Addr = st["podIP"].as_str().unwrap().parse().unwrap();
        let o = ip.octets();
        assert_eq!(&o[..3], &[10, 42, 1], "{pod}");
        assert!(o[3] >= 2 && o[3] < 255, "{pod}");
        assert_eq!(st["podIPs"][0]["ip"], st["podIP"]);
        assert_eq!(st["hostIP"], "10.0.0.1");
        assert_eq!(st["qosClass"], "Burstable");
        let cs = st["containerStatuses"].as_array().unwrap();
        assert_eq!(cs.len(), 2);
        assert!(
            cs.iter()
                .all(|c| c["ready"] == true && c["started"] == true)
        );
        assert!(
            cs.iter()
                .all(|c| !c["state"]["running"]["startedAt"].is_null())
        );
        ips.push(ip);
    }
    assert_ne!(ips[0], ips[1]);
    // kubectl's own view.
    let table = server.kubectl_ok(Some("1.33"), &["get", "pod", "web-0", "-o", "wide"]);
    assert!(
        table.contains("2/2") && table.contains("Running"),
        "{table}"
    );
    assert!(table.contains("sim-node-0"), "{table}");

    // A graceful delete ends with the simulated kubelet's final delete.
    let started = Instant::now();
    server.kubectl_ok(Some("1.33"), &["delete", "pod", "web-0", "--timeout=20s"]);
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "delete took {took:?}");
    let o = server.kubectl(&["get", "pod", "web-0"]);
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("NotFound"));
    // The other pod keeps running.
    assert!(running("web-1").is_some());
    drop(sim);
}

#[test]
fn sim_nodes_get_pod_cidrs_from_node_ipam() {
    let server = RkubeServer::start_with(&["--cluster-cidr", "10.88.0.0/16"]);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let sim = SimNodes::start(&server, "sim", &["--count", "3", "--prefix", "ipam"]);
    let cidrs = || -> Vec<String> {
        (0..3)
            .filter_map(|i| {
                let o = server.kubectl(&["get", "node", &format!("ipam-{i}"), "-o", "json"]);
                let n: Value = serde_json::from_slice(&o.stdout).ok()?;
                n["spec"]["podCIDR"].as_str().map(str::to_string)
            })
            .collect()
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut got = cidrs();
    while got.len() < 3 {
        assert!(
            Instant::now() < deadline,
            "pod CIDRs: {got:?}\nsim-nodes log:\n{}\nserver log:\n{}",
            sim.log(),
            server.log_tail()
        );
        std::thread::sleep(Duration::from_millis(200));
        got = cidrs();
    }
    let mut sorted = got.clone();
    sorted.sort();
    assert_eq!(sorted, ["10.88.0.0/24", "10.88.1.0/24", "10.88.2.0/24"]);
    for (i, cidr) in got.iter().enumerate() {
        let n = json_of(&server, &["node", &format!("ipam-{i}")]);
        assert_eq!(n["spec"]["podCIDRs"], json!([cidr]));
    }
    create_pod(&server, "web", "ipam-2");
    let deadline = Instant::now() + Duration::from_secs(20);
    let pod = loop {
        let p = json_of(&server, &["pod", "web"]);
        if p["status"]["phase"] == "Running" {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "{p}\nsim-nodes log:\n{}",
            sim.log()
        );
        std::thread::sleep(Duration::from_millis(200));
    };
    let prefix = got[2].trim_end_matches("0/24");
    assert!(
        pod["status"]["podIP"].as_str().unwrap().starts_with(prefix),
        "{pod} not in {}",
        got[2]
    );
}
