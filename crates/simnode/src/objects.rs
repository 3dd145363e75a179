//! The Node and Lease of a simulated node, as a kubelet registers and renews them.

use serde_json::{Value, json};

use crate::{Config, SIMULATED_LABEL, node_ip, node_name};

/// The lease namespace (upstream's `kube-node-lease`).
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// A `metav1.Time` (seconds).
pub fn time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// A `metav1.MicroTime` (microseconds, as the Lease's `renewTime`).
pub fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.6fZ").to_string()
}

/// The node conditions a healthy kubelet reports (upstream's `setNodeStatus` functions:
/// the pressure conditions first, then Ready), with `heartbeat` as `lastHeartbeatTime` and
/// `since` as `lastTransitionTime`.
pub fn node_conditions(heartbeat: &str, since: &str) -> Value {
    let c = |kind: &str, status: &str, reason: &str, message: &str| {
        json!({"type": kind, "status": status, "lastHeartbeatTime": heartbeat,
            "lastTransitionTime": since, "reason": reason, "message": message})
    };
    json!([
        c(
            "MemoryPressure",
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available"
        ),
        c(
            "DiskPressure",
            "False",
            "KubeletHasNoDiskPressure",
            "kubelet has no disk pressure"
        ),
        c(
            "PIDPressure",
            "False",
            "KubeletHasSufficientPID",
            "kubelet has sufficient PID available"
        ),
        c(
            "Ready",
            "True",
            "KubeletReady",
            "kubelet is posting ready status"
        ),
    ])
}

/// The status of node `i`.
pub fn node_status(cfg: &Config, i: u32, heartbeat: &str, since: &str) -> Value {
    let name = node_name(&cfg.prefix, i);
    let resources = json!({
        "cpu": cfg.cpu,
        "memory": cfg.memory,
        "pods": cfg.pods.to_string(),
        "ephemeral-storage": cfg.ephemeral_storage,
    });
    // Stable per-node identifiers, shaped like the real ones.
    let id = format!("{:032x}", 0x51a0_0000_0000_0000_0000_u128 + u128::from(i));
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        &id[0..8],
        &id[8..12],
        &id[12..16],
        &id[16..20],
        &id[20..32]
    );
    json!({
        "capacity": resources,
        "allocatable": resources,
        "conditions": node_conditions(heartbeat, since),
        "addresses": [
            {"type": "InternalIP", "address": node_ip(i).to_string()},
            {"type": "Hostname", "address": name},
        ],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        "nodeInfo": {
            "machineID": id,
            "systemUUID": uuid,
            "bootID": uuid,
            "kernelVersion": "6.1.0-sim",
            "osImage": "rkube simulated node",
            "containerRuntimeVersion": "sim://1.0.0",
            "kubeletVersion": cfg.kubelet_version,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    })
}

/// The Node object of node `i` as the kubelet registers it (`initialNode` with its
/// status), marked simulated; no `spec.podCIDR` (the node IPAM controller sets it).
pub fn node_object(cfg: &Config, i: u32, now: &str) -> Value {
    let name = node_name(&cfg.prefix, i);
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "beta.kubernetes.io/arch": "amd64",
                "beta.kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                SIMULATED_LABEL: "true",
            },
            "annotations": {
                "node.alpha.kubernetes.io/ttl": "0",
                "volumes.kubernetes.io/controller-managed-attach-detach": "true",
            },
        },
        "spec": {},
        "status": node_status(cfg, i, now, now),
    })
}

/// The merge patch of a node's status heartbeat.
pub fn heartbeat_patch(heartbeat: &str, since: &str) -> Value {
    json!({"status": {"conditions": node_conditions(heartbeat, since)}})
}

/// The `lastTransitionTime` to keep for an adopted node: its Ready condition's when it is
/// already `True`, else `None` (it becomes ready now).
pub fn ready_since(node: &Value) -> Option<String> {
    node["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")?["lastTransitionTime"]
        .as_str()
        .map(str::to_string)
}

/// The node's Lease (the kubelet's `newLease`), owned by the Node when its uid is known.
pub fn lease_object(cfg: &Config, i: u32, node_uid: Option<&str>, renew: &str) -> Value {
    let name = node_name(&cfg.prefix, i);
    let mut lease = json!({
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": name, "namespace": LEASE_NAMESPACE},
        "spec": {
            "holderIdentity": name,
            "leaseDurationSeconds": cfg.lease_seconds,
            "renewTime": renew,
        },
    });
    if let Some(uid) = node_uid {
        lease["metadata"]["ownerReferences"] =
            json!([{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}]);
    }
    lease
}

/// The merge patch renewing a lease.
pub fn renew_patch(cfg: &Config, i: u32, renew: &str) -> Value {
    json!({"spec": {
        "holderIdentity": node_name(&cfg.prefix, i),
        "leaseDurationSeconds": cfg.lease_seconds,
        "renewTime": renew,
    }})
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn node_object_looks_like_a_registered_kubelet() {
        let cfg = Config::default();
        let n = node_object(&cfg, 3, "2025-01-02T03:04:05Z");
        assert_eq!(n["metadata"]["name"], "sim-node-3");
        let labels = &n["metadata"]["labels"];
        assert_eq!(labels["kubernetes.io/hostname"], "sim-node-3");
        assert_eq!(labels["kubernetes.io/os"], "linux");
        assert_eq!(labels["kubernetes.io/arch"], "amd64");
        assert_eq!(labels["rkube.io/simulated"], "true");
        assert_eq!(
            n["metadata"]["annotations"]["node.alpha.kubernetes.io/ttl"],
            "0"
        );
        assert!(n["spec"]["podCIDR"].is_null());
        let st = &n["status"];
        for which in ["capacity", "allocatable"] {
            assert_eq!(
                st[which],
                json!({"cpu": "32", "memory": "256Gi", "pods": "110", "ephemeral-storage": "1Ti"})
            );
        }
        let conds = st["conditions"].as_array().unwrap();
        let types: Vec<&str> = conds.iter().map(|c| c["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            ["MemoryPressure", "DiskPressure", "PIDPressure", "Ready"]
        );
        let ready = &conds[3];
        assert_eq!(ready["status"], "True");
        assert_eq!(ready["reason"], "KubeletReady");
        assert_eq!(ready["message"], "kubelet is posting ready status");
        assert_eq!(ready["lastHeartbeatTime"], "2025-01-02T03:04:05Z");
        assert!(conds[..3].iter().all(|c| c["status"] == "False"));
        assert_eq!(conds[0]["reason"], "KubeletHasSufficientMemory");
        assert_eq!(conds[1]["reason"], "KubeletHasNoDiskPressure");
        assert_eq!(conds[2]["reason"], "KubeletHasSufficientPID");
        assert_eq!(
            st["addresses"],
            json!([{"type": "InternalIP", "address": "10.0.0.4"},
                {"type": "Hostname", "address": "sim-node-3"}])
        );
        assert_eq!(st["nodeInfo"]["kubeletVersion"], "v1.33.0");
        assert_eq!(st["nodeInfo"]["operatingSystem"], "linux");
        assert_eq!(st["nodeInfo"]["architecture"], "amd64");
        assert_eq!(st["nodeInfo"]["systemUUID"].as_str().unwrap().len(), 36);
        // It decodes as a Node.
        serde_json::from_value::<k8s_openapi::api::core::v1::Node>(n).unwrap();
    }

    #[test]
    fn heartbeat_keeps_the_transition_time() {
        let p = heartbeat_patch("2025-01-02T03:05:05Z", "2025-01-02T03:04:05Z");
        for c in p["status"]["conditions"].as_array().unwrap() {
            assert_eq!(c["lastHeartbeatTime"], "2025-01-02T03:05:05Z");
            assert_eq!(c["lastTransitionTime"], "2025-01-02T03:04:05Z");
        }
        let cfg = Config::default();
        let node = node_object(&cfg, 0, "2025-01-01T00:00:00Z");
        assert_eq!(ready_since(&node).as_deref(), Some("2025-01-01T00:00:00Z"));
        assert_eq!(ready_since(&json!({"status": {}})), None);
    }

    #[test]
    fn lease_and_renewal() {
        let cfg = Config::default();
        let l = lease_object(&cfg, 1, Some("u-1"), "2025-01-02T03:04:05.123456Z");
        assert_eq!(l["metadata"]["namespace"], "kube-node-lease");
        assert_eq!(l["metadata"]["name"], "sim-node-1");
        assert_eq!(l["spec"]["holderIdentity"], "sim-node-1");
        assert_eq!(l["spec"]["leaseDurationSeconds"], 40);
        assert_eq!(
            l["metadata"]["ownerReferences"],
            json!([{"apiVersion": "v1", "kind": "Node", "name": "sim-node-1", "uid": "u-1"}])
        );
        assert!(lease_object(&cfg, 1, None, "x")["metadata"]["ownerReferences"].is_null());
        let p = renew_patch(&cfg, 1, "t");
        assert_eq!(p["spec"]["renewTime"], "t");
        serde_json::from_value::<k8s_openapi::api::coordination::v1::Lease>(l).unwrap();
    }

    #[test]
    fn time_formats() {
        let t: jiff::Timestamp = "2025-01-02T03:04:05.123456789Z".parse().unwrap();
        assert_eq!(time(t), "2025-01-02T03:04:05Z");
        assert_eq!(micro_time(t), "2025-01-02T03:04:05.123456Z");
        let t: jiff::Timestamp = "2025-01-02T03:04:05Z".parse().unwrap();
        assert_eq!(micro_time(t), "2025-01-02T03:04:05.000000Z");
    }
}
