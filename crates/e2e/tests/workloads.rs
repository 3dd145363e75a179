//! The DaemonSet and StatefulSet controllers inside `rkube server`, driven by the real
//! kubectl 1.33 over three simulated nodes (pods bound to them become Running and Ready):
//!
//! - a DaemonSet gets one pod per node, skips a node tainted NoSchedule unless its pods
//!   tolerate the taint, follows a node label its nodeSelector asks for, and
//!   `kubectl rollout status|history|undo` and `kubectl set image` work on it;
//! - a StatefulSet creates web-0, web-1, web-2 in order (each once its predecessor is
//!   Ready) with PVCs from its volumeClaimTemplates, scales down from the highest ordinal,
//!   and rolls out, and back, with `kubectl set image` / `rollout undo`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, wait_until};

const V: Option<&str> = Some("1.33");

fn ready(pod: &Value) -> bool {
    pod["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "Ready" && c["status"] == "True")
}

fn live(server: &RkubeServer, selector: &str) -> Vec<Value> {
    server
        .get_items(&["pods", "-l", selector])
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect()
}

fn name(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Starts a server with three simulated nodes and waits until they are schedulable
/// (Ready, the registration-time not-ready taint gone).
fn cluster(tag: &str) -> (RkubeServer, SimNodes) {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let sim = SimNodes::start(&server, tag, &["--count", "3"]);
    wait_until("three schedulable nodes", 40, || {
        let nodes = server.get_items(&["nodes"]);
        nodes.len() == 3
            && nodes.iter().all(|n| {
                n["spec"]["taints"].as_array().is_none_or(|t| t.is_empty())
                    && n["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    });
    (server, sim)
}

fn rollout_status(server: &RkubeServer, what: &str) -> String {
    server.kubectl_ok(V, &["rollout", "status", what, "--timeout=60s"])
}

fn images(pods: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = pods
        .iter()
        .map(|p| {
            p["spec"]["containers"][0]["image"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    out.sort();
    out
}

#[test]
fn daemonset_runs_one_pod_per_fitting_node_and_rolls() {
    let (server, _sim) = cluster("ds");
    server.kubectl_ok(
        V,
        &["taint", "nodes", "sim-node-2", "dedicated=db:NoSchedule"],
    );
    let ds = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "agent", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "agent"}},
            "template": {"metadata": {"labels": {"app": "agent"}},
                "spec": {"containers": [{"name": "agent", "image": "registry.local/agent:1"}]}}}});
    server.apply_json(&ds);
    // One pod on each untainted node, none on the tainted one.
    wait_until("two running agents", 30, || {
        let pods = live(&server, "app=agent");
        pods.len() == 2 && pods.iter().all(ready)
    });
    std::thread::sleep(Duration::from_secs(1));
    let pods = live(&server, "app=agent");
    let mut nodes: Vec<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    nodes.sort();
    assert_eq!(nodes, ["sim-node-0", "sim-node-1"]);
    for p in &pods {
        let node = p["spec"]["nodeName"].as_str().unwrap();
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "DaemonSet");
        assert_eq!(p["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(p["metadata"]["labels"]["pod-template-generation"], "1");
        assert!(p["metadata"]["labels"]["controller-revision-hash"].is_string());
        assert_eq!(
            p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                ["nodeSelectorTerms"],
            json!([{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}])
        );
        let tolerations = p["spec"]["tolerations"].as_array().unwrap();
        assert!(
            tolerations
                .iter()
                .any(|t| t["key"] == "node.kubernetes.io/unreachable"
                    && t["effect"] == "NoExecute"
                    && t.get("tolerationSeconds").is_none())
        );
        assert!(
            tolerations
                .iter()
                .any(|t| t["key"] == "node.kubernetes.io/unschedulable")
        );
    }
    let out = rollout_status(&server, "ds/agent");
    assert!(
        out.contains("daemon set \"agent\" successfully rolled out"),
        "{out}"
    );
    let st = server.get_json(&["ds", "agent"])["status"].clone();
    assert_eq!(st["desiredNumberScheduled"], 2, "{st}");
    assert_eq!(st["numberAvailable"], 2, "{st}");
    assert_eq!(st["updatedNumberScheduled"], 2, "{st}");

    // A second DaemonSet selects nodes by label and tolerates the taint.
    let edge = json!({"apiVersion": "apps/v1", "kind": "DaemonSet",
        "metadata": {"name": "edge", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"app": "edge"}},
            "template": {"metadata": {"labels": {"app": "edge"}},
                "spec": {"nodeSelector": {"role": "edge"},
                    "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
                    "containers": [{"name": "edge", "image": "registry.local/edge:1"}]}}}});
    server.apply_json(&edge);
    std::thread::sleep(Duration::from_secs(1));
    assert!(live(&server, "app=edge").is_empty());
    server.kubectl_ok(V, &["label", "node", "sim-node-2", "role=edge"]);
    wait_until("an edge pod on the tainted node", 30, || {
        let pods = live(&server, "app=edge");
        pods.len() == 1 && pods[0]["spec"]["nodeName"] == "sim-node-2" && ready(&pods[0])
    });
    // Unlabelled: the pod goes.
    server.kubectl_ok(V, &["label", "node", "sim-node-2", "role-"]);
    wait_until("the edge pod gone", 30, || {
        live(&server, "app=edge").is_empty()
    });

    // A new image rolls the pods; history and undo work.
    server.kubectl_ok(
        V,
        &["set", "image", "ds/agent", "agent=registry.local/agent:2"],
    );
    let out = rollout_status(&server, "ds/agent");
    assert!(out.contains("successfully rolled out"), "{out}");
    wait_until("agents at :2", 30, || {
        let pods = live(&server, "app=agent");
        images(&pods) == ["registry.local/agent:2", "registry.local/agent:2"]
            && pods
                .iter()
                .all(|p| p["metadata"]["labels"]["pod-template-generation"] == "2")
    });
    let history = server.kubectl_ok(V, &["rollout", "history", "ds/agent"]);
    assert!(history.contains("REVISION"), "{history}");
    let revisions: Vec<&str> = history
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");
    let detail = server.kubectl_ok(V, &["rollout", "history", "ds/agent", "--revision=1"]);
    assert!(detail.contains("registry.local/agent:1"), "{detail}");
    let out = server.kubectl_ok(V, &["rollout", "undo", "ds/agent"]);
    assert!(out.contains("rolled back"), "{out}");
    let out = rollout_status(&server, "ds/agent");
    assert!(out.contains("successfully rolled out"), "{out}");
    wait_until("agents back at :1", 30, || {
        images(&live(&server, "app=agent")) == ["registry.local/agent:1", "registry.local/agent:1"]
    });
    let history = server.kubectl_ok(V, &["rollout", "history", "ds/agent"]);
    let revisions: Vec<&str> = history
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(revisions, ["2", "3"], "{history}");
    let events = server.kubectl_ok(
        V,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=agent",
        ],
    );
    assert!(events.contains("SuccessfulCreate"), "{events}");
    assert!(events.contains("SuccessfulDelete"), "{events}");
}

#[test]
fn statefulset_orders_pods_claims_scales_and_rolls() {
    let (server, _sim) = cluster("sts");
    let svc = json!({"apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "nginx", "namespace": "default"},
        "spec": {"clusterIP": "None", "selector": {"app": "web"}, "ports": [{"port": 80}]}});
    server.apply_json(&svc);
    let sts = json!({"apiVersion": "apps/v1", "kind": "StatefulSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "serviceName": "nginx",
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "registry.local/nginx:1",
                    "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "www"},
                "spec": {"accessModes": ["ReadWriteOnce"],
                    "resources": {"requests": {"storage": "1Gi"}}}}]}});
    server.apply_json(&sts);
    let out = rollout_status(&server, "sts/web");
    assert!(
        out.contains("partitioned roll out complete") || out.contains("rolling update complete"),
        "{out}"
    );
    let pods = live(&server, "app=web");
    let mut names: Vec<String> = pods.iter().map(name).collect();
    names.sort();
    assert_eq!(names, ["web-0", "web-1", "web-2"]);
    let by = |n: &str| pods.iter().find(|p| name(p) == n).unwrap().clone();
    // RFC 3339 in seconds and UTC: the text orders as the time.
    let created = |p: &Value| {
        p["metadata"]["creationTimestamp"]
            .as_str()
            .unwrap()
            .to_string()
    };
    let ready_at = |p: &Value| {
        p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "Ready")
            .and_then(|c| c["lastTransitionTime"].as_str())
            .unwrap()
            .to_string()
    };
    let (w0, w1, w2) = (by("web-0"), by("web-1"), by("web-2"));
    // Each pod was created only once its predecessor was Ready.
    assert!(created(&w0) <= created(&w1) && created(&w1) <= created(&w2));
    assert!(ready_at(&w0) <= created(&w1), "{w0}\n{w1}");
    assert!(ready_at(&w1) <= created(&w2), "{w1}\n{w2}");
    for (i, p) in [&w0, &w1, &w2].iter().enumerate() {
        let n = format!("web-{i}");
        assert_eq!(p["spec"]["hostname"], n.as_str());
        assert_eq!(p["spec"]["subdomain"], "nginx");
        assert_eq!(
            p["metadata"]["labels"]["statefulset.kubernetes.io/pod-name"],
            n.as_str()
        );
        assert_eq!(
            p["metadata"]["labels"]["apps.kubernetes.io/pod-index"],
            i.to_string()
        );
        let claim = format!("www-web-{i}");
        assert!(
            p["spec"]["volumes"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["persistentVolumeClaim"]["claimName"] == claim.as_str()),
            "{p}"
        );
    }
    let mut claims: Vec<String> = server.get_items(&["pvc"]).iter().map(name).collect();
    claims.sort();
    assert_eq!(claims, ["www-web-0", "www-web-1", "www-web-2"]);
    let st = server.get_json(&["sts", "web"])["status"].clone();
    assert_eq!(st["readyReplicas"], 3, "{st}");
    assert_eq!(st["currentRevision"], st["updateRevision"], "{st}");
    let events = server.kubectl_ok(
        V,
        &[
            "get",
            "events",
            "--field-selector",
            "involvedObject.name=web",
        ],
    );
    assert!(
        events.contains("create Pod web-0 in StatefulSet web successful"),
        "{events}"
    );
    assert!(
        events.contains("create Claim www-web-0 Pod web-0 in StatefulSet web success"),
        "{events}"
    );

    // Scale down: web-2 goes before web-1.
    server.kubectl_ok(V, &["scale", "sts/web", "--replicas=1"]);
    let deadline = Instant::now() + Duration::from_secs(40);
    loop {
        let names: Vec<String> = server
            .get_items(&["pods", "-l", "app=web"])
            .iter()
            .map(name)
            .collect();
        assert!(
            names.contains(&"web-1".to_string()) || !names.contains(&"web-2".to_string()),
            "web-1 went before web-2: {names:?}"
        );
        if names == ["web-0"] {
            break;
        }
        assert!(Instant::now() < deadline, "scale down stuck at {names:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // The claims stay (Retain).
    assert_eq!(server.get_items(&["pvc"]).len(), 3);
    // A failed pod is deleted and made again (a new uid, the same name and claim).
    let old_uid = server.get_json(&["pod", "web-0"])["metadata"]["uid"].clone();
    server.kubectl_ok(
        V,
        &[
            "patch",
            "pod",
            "web-0",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Failed"}}"#,
        ],
    );
    wait_until("web-0 made again", 30, || {
        let pods = live(&server, "app=web");
        pods.len() == 1 && pods[0]["metadata"]["uid"] != old_uid && ready(&pods[0])
    });
    server.kubectl_ok(V, &["scale", "sts/web", "--replicas=2"]);
    let out = rollout_status(&server, "sts/web");
    assert!(out.contains("complete"), "{out}");

    // A new image rolls web-1 then web-0; undo brings the old one back.
    server.kubectl_ok(
        V,
        &["set", "image", "sts/web", "nginx=registry.local/nginx:2"],
    );
    let out = rollout_status(&server, "sts/web");
    assert!(out.contains("complete"), "{out}");
    wait_until("web at :2", 30, || {
        images(&live(&server, "app=web")) == ["registry.local/nginx:2", "registry.local/nginx:2"]
    });
    let history = server.kubectl_ok(V, &["rollout", "history", "sts/web"]);
    let revisions: Vec<&str> = history
        .lines()
        .skip(2)
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert_eq!(revisions, ["1", "2"], "{history}");
    let out = server.kubectl_ok(V, &["rollout", "undo", "sts/web"]);
    assert!(out.contains("rolled back"), "{out}");
    let out = rollout_status(&server, "sts/web");
    assert!(out.contains("complete"), "{out}");
    wait_until("web back at :1", 30, || {
        images(&live(&server, "app=web")) == ["registry.local/nginx:1", "registry.local/nginx:1"]
    });
    let st = server.get_json(&["sts", "web"])["status"].clone();
    assert_eq!(st["currentRevision"], st["updateRevision"], "{st}");
    assert_eq!(st["updatedReplicas"], 2, "{st}");
}
