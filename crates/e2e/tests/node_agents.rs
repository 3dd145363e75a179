//! Nodes beyond the golden path, with real containerd: a second node joining with
//! `rkube agent --token` (TLS bootstrap) and the scheduler spreading pods across both,
//! whose pods serve traffic and answer `kubectl logs` through the joined kubelet; and an
//! agent killed (SIGKILL) and restarted while pods run, which adopts them: same
//! containers, no duplicate sandboxes, statuses still true.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;
use testkit::node::{AgentProcess, NodeCluster, http_get, in_cidr};
use testkit::wait_for;

const KUBECTL: Option<&str> = Some("1.33");

fn ready_pods(c: &NodeCluster, selector: &str, n: usize) -> Vec<Value> {
    wait_for(&format!("{n} ready pods ({selector})"), 120, || {
        let all = c.server.get_items(&["pods", "-l", selector]);
        let ready: Vec<Value> = all
            .iter()
            .filter(|p| {
                p["status"]["conditions"].as_array().is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
                })
            })
            .cloned()
            .collect();
        (all.len() == n && ready.len() == n).then_some(ready)
    })
}

#[test]
fn second_agent_joins_and_pods_spread_across_nodes() {
    let c = NodeCluster::start();
    let agent = AgentProcess::start(&c, "second-node");
    let s = &c.server;
    // The joined node's identity is its own, from the CSR the token allowed.
    let csrs = s.get_items(&["csr"]);
    assert!(
        csrs.iter().any(|r| r["spec"]["username"]
            .as_str()
            .is_some_and(|u| u.starts_with("system:bootstrap:"))
            && r["status"]["certificate"].is_string()),
        "{csrs:?}"
    );

    s.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx:1.22",
            "--replicas=4",
        ],
    );
    let pods = ready_pods(&c, "app=web", 4);
    let nodes: BTreeSet<String> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        nodes,
        BTreeSet::from([c.node.clone(), agent.node.clone()]),
        "the scheduler spreads over both nodes"
    );
    let second = s.get_json(&["node", &agent.node]);
    let cidr = second["spec"]["podCIDR"].as_str().unwrap();
    let on_second = pods
        .iter()
        .find(|p| p["spec"]["nodeName"] == agent.node.as_str())
        .unwrap();
    let ip = on_second["status"]["podIP"].as_str().unwrap();
    assert!(in_cidr(ip, cidr), "{ip} not in {cidr}");
    let (code, body) = wait_for("HTTP from the second node's pod", 30, || {
        http_get(ip, 80, "/").ok()
    });
    assert_eq!(code, 200, "{body}");
    // The API server reaches the joined kubelet (client CA from the join).
    let name = on_second["metadata"]["name"].as_str().unwrap();
    wait_for("logs from the second node", 20, || {
        let out = s.kubectl_v(KUBECTL, &["logs", name]);
        (out.status.success() && String::from_utf8_lossy(&out.stdout).contains("GET / HTTP/1.0"))
            .then_some(())
    });
    s.kubectl_ok(KUBECTL, &["delete", "deployment", "web"]);
    wait_for("pods gone", 120, || {
        s.get_items(&["pods", "-l", "app=web"])
            .is_empty()
            .then_some(())
    });
}

/// The containerd task ids of the node.
fn tasks(c: &NodeCluster) -> BTreeSet<String> {
    let sock = c.server.data_dir().join("agent/containerd/containerd.sock");
    let out = Command::new("ctr")
        .arg("--address")
        .arg(&sock)
        .args(["-n", "k8s.io", "tasks", "ls", "-q"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect()
}

#[test]
fn agent_killed_and_restarted_adopts_running_pods() {
    let mut c = NodeCluster::start();
    c.server.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "deployment",
            "keep",
            "--image=nginx:1.22",
            "--replicas=2",
        ],
    );
    let before = ready_pods(&c, "app=keep", 2);
    let ids = |pods: &[Value]| -> BTreeSet<String> {
        pods.iter()
            .map(|p| {
                p["status"]["containerStatuses"][0]["containerID"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let ips: Vec<String> = before
        .iter()
        .map(|p| p["status"]["podIP"].as_str().unwrap().to_string())
        .collect();
    let tasks_before = tasks(&c);
    assert_eq!(
        tasks_before.len(),
        4,
        "two sandboxes and two containers: {tasks_before:?}"
    );

    // SIGKILL: the server and its agent die at once; containerd follows its parent, the
    // containers' shims keep them running.
    c.server.restart();
    c.wait_node_ready(std::time::Duration::from_secs(90));
    for ip in &ips {
        let (code, _) = wait_for(&format!("{ip} still serving"), 30, || {
            http_get(ip, 80, "/").ok()
        });
        assert_eq!(code, 200);
    }
    // Give the kubelet a few relists, then: same containers, no new sandbox, still Ready.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let after = ready_pods(&c, "app=keep", 2);
    assert_eq!(ids(&before), ids(&after));
    assert_eq!(tasks(&c), tasks_before);
    for p in &after {
        assert_eq!(
            p["status"]["containerStatuses"][0]["restartCount"], 0,
            "{p}"
        );
    }
    c.server
        .kubectl_ok(KUBECTL, &["delete", "deployment", "keep"]);
    wait_for("pods gone", 120, || {
        c.server
            .get_items(&["pods", "-l", "app=keep"])
            .is_empty()
            .then_some(())
    });
}
