//! The node agent against a real `rkube server` (control plane only) and the real kubectl,
//! with the in-memory CRI fake: the Node registers Ready with capacity and nodeInfo
//! (`kubectl get node -o wide`), its Lease is renewed and owned by the Node, the node
//! IPAM controller's `spec.podCIDR` reaches the CNI conflist and the runtime, Ready turns
//! False (and back) with the runtime's network, and a restarted agent reconciles the
//! labels it owns while keeping the pod CIDR.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use cri::fake::FakeRuntime;
use kube::Client;
use kubelet::KubeletConfig;
use kubelet::node::{HostFacts, NodeAgent};
use serde_json::Value;
use testkit::{RkubeServer, wait_for, wait_until};
use tokio::sync::watch;

const NODE: &str = "node-agent-it";

fn client(rt: &tokio::runtime::Runtime, server: &RkubeServer) -> Client {
    rt.block_on(runtime::client_from(&server.kubeconfig))
        .unwrap()
}

fn condition(node: &Value, kind: &str) -> Value {
    node["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == kind).cloned())
        .unwrap_or(Value::Null)
}

fn get_node(server: &RkubeServer) -> Option<Value> {
    server.try_get_json(&["node", NODE])
}

#[test]
fn node_registers_reports_and_renews() {
    let server = RkubeServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let client = client(&rt, &server);
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = KubeletConfig::new(
        NODE,
        dir.path().join("agent"),
        "127.0.0.1".parse::<IpAddr>().unwrap(),
    );
    cfg.cni_conf_dir = dir.path().join("cni");
    cfg.cni_network_name = "rkube-node-it".into();
    cfg.node_status_update_frequency = Duration::from_millis(500);
    cfg.node_lease_duration_seconds = 4;
    cfg.node_labels = vec![("rkube.io/test".into(), "node-agent".into())];
    let cfg = Arc::new(cfg);
    let fake = Arc::new(FakeRuntime::new().with_images(["docker.io/library/busybox:1.36"]));
    let host = HostFacts::probe(&cfg.root_dir);

    let (stop_tx, stop_rx) = watch::channel(false);
    let agent = NodeAgent::new(
        Arc::clone(&cfg),
        client.clone(),
        fake.clone(),
        fake.clone(),
        host.clone(),
    );
    let mut cidr_rx = agent.pod_cidr();
    let task = rt.spawn(agent.run(stop_rx));

    // Registered and Ready, with what upstream's kubelet reports.
    let node = wait_for("the node to be Ready", 30, || {
        get_node(&server).filter(|n| condition(n, "Ready")["status"] == "True")
    });
    let ready = condition(&node, "Ready");
    assert_eq!(ready["reason"], "KubeletReady");
    assert_eq!(ready["message"], "kubelet is posting ready status");
    let labels = &node["metadata"]["labels"];
    assert_eq!(labels["kubernetes.io/hostname"], NODE);
    assert_eq!(labels["kubernetes.io/os"], "linux");
    assert_eq!(labels["kubernetes.io/arch"], "amd64");
    assert_eq!(labels["beta.kubernetes.io/arch"], "amd64");
    assert_eq!(labels["rkube.io/test"], "node-agent");
    let st = &node["status"];
    assert_eq!(st["capacity"]["cpu"], host.cpus.to_string());
    assert_eq!(st["capacity"]["pods"], "110");
    assert!(st["capacity"]["memory"].as_str().unwrap().ends_with("Ki"));
    assert!(st["capacity"]["ephemeral-storage"].is_string());
    assert!(st["allocatable"]["memory"].is_string());
    assert_eq!(st["nodeInfo"]["containerRuntimeVersion"], "fake://0.1.0");
    assert!(
        st["nodeInfo"]["kubeletVersion"]
            .as_str()
            .unwrap()
            .starts_with("v1.33.0")
    );
    assert_eq!(st["nodeInfo"]["osImage"], host.os_image.as_str());
    assert_eq!(st["nodeInfo"]["bootID"], host.boot_id.as_str());
    assert_eq!(st["daemonEndpoints"]["kubeletEndpoint"]["Port"], 10250);
    assert_eq!(st["addresses"][0]["address"], "127.0.0.1");
    // Digests first, then tags (as upstream).
    let names = st["images"][0]["names"].as_array().unwrap();
    assert!(names[0].as_str().unwrap().contains("@sha256:"), "{names:?}");
    assert!(names.iter().any(|n| n == "docker.io/library/busybox:1.36"));
    for (kind, reason) in [
        ("MemoryPressure", "KubeletHasSufficientMemory"),
        ("DiskPressure", "KubeletHasNoDiskPressure"),
        ("PIDPressure", "KubeletHasSufficientPID"),
    ] {
        let c = condition(&node, kind);
        assert_eq!(c["status"], "False", "{kind}");
        assert_eq!(c["reason"], reason);
    }
    let wide = server.kubectl_ok(Some("1.33"), &["get", "node", NODE, "-o", "wide"]);
    let line = wide.lines().nth(1).unwrap();
    for want in [
        NODE,
        "Ready",
        "127.0.0.1",
        "fake://0.1.0",
        &host.kernel_version,
    ] {
        assert!(line.contains(want), "{want:?} not in {wide}");
    }

    // The node IPAM controller assigns a pod CIDR: the conflist and the runtime follow.
    let cidr = wait_for("a pod CIDR", 30, || {
        get_node(&server).and_then(|n| n["spec"]["podCIDR"].as_str().map(str::to_string))
    });
    rt.block_on(async {
        tokio::time::timeout(
            Duration::from_secs(20),
            cidr_rx.wait_for(|c| c.as_deref() == Some(cidr.as_str())),
        )
        .await
        .expect("the agent publishes the pod CIDR")
        .unwrap();
    });
    let conflist_path = dir.path().join("cni/10-rkube-node-it.conflist");
    let conflist: Value = serde_json::from_slice(&std::fs::read(&conflist_path).unwrap()).unwrap();
    assert_eq!(conflist["name"], "rkube-node-it");
    assert_eq!(
        conflist["plugins"][0]["ipam"]["ranges"][0][0]["subnet"],
        cidr.as_str()
    );
    assert_eq!(fake.pod_cidr(), cidr);

    // The lease: held by the node, owned by it, renewed.
    let lease = wait_for("the node lease", 20, || {
        server.try_get_json(&["lease", NODE, "-n", "kube-node-lease"])
    });
    assert_eq!(lease["spec"]["holderIdentity"], NODE);
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 4);
    assert_eq!(
        lease["metadata"]["ownerReferences"][0]["uid"],
        node["metadata"]["uid"]
    );
    assert_eq!(lease["metadata"]["ownerReferences"][0]["kind"], "Node");
    let first = lease["spec"]["renewTime"].as_str().unwrap().to_string();
    wait_until("the lease to be renewed", 20, || {
        server
            .try_get_json(&["lease", NODE, "-n", "kube-node-lease"])
            .is_some_and(|l| l["spec"]["renewTime"].as_str() != Some(first.as_str()))
    });

    // The runtime's network goes away: NotReady with upstream's message, then back.
    fake.set_network_ready(false);
    let node = wait_for("the node to be NotReady", 20, || {
        get_node(&server).filter(|n| condition(n, "Ready")["status"] == "False")
    });
    let ready = condition(&node, "Ready");
    assert_eq!(ready["reason"], "KubeletNotReady");
    assert_eq!(
        ready["message"],
        "container runtime network not ready: NetworkReady=false reason:NetworkReadyNotReady message:NetworkReady is not ready (fake)"
    );
    fake.set_network_ready(true);
    wait_until("the node to be Ready again", 20, || {
        get_node(&server).is_some_and(|n| condition(&n, "Ready")["status"] == "True")
    });

    // Stop; someone changes a label the kubelet owns; a new agent puts it back and keeps
    // the pod CIDR.
    stop_tx.send(true).unwrap();
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the agent stops")
            .unwrap()
            .unwrap();
    });
    server.kubectl_ok(
        Some("1.33"),
        &[
            "label",
            "node",
            NODE,
            "kubernetes.io/arch=arm64",
            "extra=kept",
            "--overwrite",
        ],
    );
    let (stop_tx, stop_rx) = watch::channel(false);
    let agent = NodeAgent::new(
        Arc::clone(&cfg),
        client.clone(),
        fake.clone(),
        fake.clone(),
        host,
    );
    let task = rt.spawn(agent.run(stop_rx));
    let node = wait_for("the arch label to be reconciled", 20, || {
        get_node(&server).filter(|n| n["metadata"]["labels"]["kubernetes.io/arch"] == "amd64")
    });
    assert_eq!(node["metadata"]["labels"]["extra"], "kept");
    assert_eq!(node["spec"]["podCIDR"], cidr.as_str());
    drop(stop_tx);
    rt.block_on(async {
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("the agent stops when its stop sender is dropped")
            .unwrap()
            .unwrap();
    });
}
