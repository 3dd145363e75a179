//! The pod garbage collector inside `rkube server`, seen with the real kubectl 1.33: with
//! `--terminated-pod-gc-threshold=1` the older of two finished pods is deleted, and a pod
//! bound to a node that does not exist is marked Failed (`DisruptionTarget`,
//! `DeletionByPodGC`) and deleted once the node's 40 s quarantine is over.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use testkit::{RkubeServer, wait_until};

fn pod(name: &str, node: &str) -> serde_json::Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "registry.local/web:1"}]}})
}

#[test]
fn pod_gc_deletes_excess_finished_pods_and_orphans_of_deleted_nodes() {
    let server = RkubeServer::start_with(&["--terminated-pod-gc-threshold=1"]);
    server.wait_for_object(&["get", "serviceaccount", "default"]);

    // A pod on a node that never existed: quarantined, then failed and deleted.
    server.create_json(&pod("orphan", "ghost-node"));

    // Two finished pods (on the same missing node would also make them orphans: give
    // them a node object so only the threshold applies).
    server.create_json(&json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": "real-node"}}));
    for name in ["done-1", "done-2"] {
        server.create_json(&pod(name, "real-node"));
        std::thread::sleep(std::time::Duration::from_millis(1100));
        server.kubectl_ok(
            Some("1.33"),
            &[
                "patch",
                "pod",
                name,
                "--subresource=status",
                "--type=merge",
                "-p",
                r#"{"status":{"phase":"Succeeded"}}"#,
            ],
        );
    }
    wait_until("the older finished pod is collected", 45, || {
        server.try_get_json(&["pod", "done-1"]).is_none()
    });
    assert!(server.try_get_json(&["pod", "done-2"]).is_some());

    wait_until("the orphaned pod is collected", 90, || {
        server.try_get_json(&["pod", "orphan"]).is_none()
    });
}
