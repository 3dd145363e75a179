//! The controller manager inside `rkube server`, with the real kubectl: a ReplicaSet gets
//! its pods (created as the `replicaset-controller` service account, with a controller
//! reference), scaling down deletes the extra ones, a matching orphan is adopted, and the
//! ReplicaSet's status counts its pods.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::{RkubeServer, eventually};

fn live(server: &RkubeServer) -> Vec<Value> {
    server
        .get_items(&["pods", "-l", "app=web"])
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect()
}

#[test]
fn replicaset_controller_creates_scales_and_adopts() {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]}}},
    });
    server.apply_json(&rs);
    eventually("three pods", || live(&server).len() == 3);
    let all = live(&server);
    for p in &all {
        let owner = &p["metadata"]["ownerReferences"][0];
        assert_eq!(owner["kind"], "ReplicaSet", "{p}");
        assert_eq!(owner["name"], "web");
        assert_eq!(owner["controller"], true);
        assert_eq!(owner["blockOwnerDeletion"], true);
        assert!(p["metadata"]["name"].as_str().unwrap().starts_with("web-"));
    }
    // Never more than asked for, even while the cache catches up.
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(live(&server).len(), 3);
    eventually("status.replicas", || {
        server.kubectl_ok(
            Some("1.33"),
            &["get", "rs", "web", "-o", "jsonpath={.status.replicas}"],
        ) == "3"
    });

    server.kubectl_ok(Some("1.33"), &["scale", "rs", "web", "--replicas=1"]);
    eventually("one pod left", || live(&server).len() == 1);

    // An orphan with the ReplicaSet's labels is adopted; one of the two then goes.
    let orphan = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "orphan", "namespace": "default", "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]}});
    server.create_json(&orphan);
    eventually("back to one pod", || {
        let l = live(&server);
        l.len() == 1 && l[0]["metadata"]["ownerReferences"][0]["name"] == "web"
    });
}

#[test]
fn deployment_controller_creates_and_rolls_replica_sets() {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "deployment",
            "nginx",
            "--image=registry.local/web:1",
            "--replicas=3",
        ],
    );
    let rs_list = || server.get_items(&["rs", "-l", "app=nginx"]);
    eventually("the ReplicaSet", || rs_list().len() == 1);
    let rs = &rs_list()[0];
    let hash = rs["metadata"]["labels"]["pod-template-hash"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(rs["metadata"]["name"], format!("nginx-{hash}"));
    assert_eq!(
        rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"],
        "1"
    );
    assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
    eventually("three pods of the ReplicaSet", || {
        server
            .get_items(&["pods", "-l", &format!("pod-template-hash={hash}")])
            .len()
            == 3
    });
    eventually("the Deployment's status", || {
        let d = server.get_json(&["deployment", "nginx"]);
        d["status"]["updatedReplicas"] == 3 && d["status"]["replicas"] == 3
    });

    // A new template: a second ReplicaSet, revision 2, grown within maxSurge (25% of 3
    // rounds up to 1); the old one keeps its pods while none of the new is available.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "set",
            "image",
            "deployment/nginx",
            "web=registry.local/web:2",
        ],
    );
    eventually("the second ReplicaSet", || rs_list().len() == 2);
    let all = rs_list();
    let new = all
        .iter()
        .find(|r| r["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2")
        .unwrap();
    assert_eq!(new["spec"]["replicas"], 1);
    assert_eq!(
        new["spec"]["template"]["spec"]["containers"][0]["image"],
        "registry.local/web:2"
    );
    let old = all
        .iter()
        .find(|r| r["metadata"]["labels"]["pod-template-hash"] == hash.as_str())
        .unwrap();
    assert_eq!(old["spec"]["replicas"], 3);
    let history = server.kubectl_ok(Some("1.33"), &["rollout", "history", "deployment/nginx"]);
    assert!(history.contains('1') && history.contains('2'), "{history}");

    // Settled: the controller does not keep rewriting the Deployment.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let rv = server.get_json(&["deployment", "nginx"])["metadata"]["resourceVersion"].clone();
    std::thread::sleep(std::time::Duration::from_secs(2));
    assert_eq!(
        server.get_json(&["deployment", "nginx"])["metadata"]["resourceVersion"],
        rv
    );

    // Resized mid-rollout (proportional scaling): 6 replicas allow 8 with the surge; the
    // 4 more are shared 3:1 as the ReplicaSets' sizes (old 3, new 1).
    server.kubectl_ok(Some("1.33"), &["scale", "deployment/nginx", "--replicas=6"]);
    // Both were scaled up together (afterwards the rollout goes on: with no node, no pod
    // is available, so unhealthy old replicas are cleaned up).
    let old_name = format!("nginx-{hash}");
    let new_name = new["metadata"]["name"].as_str().unwrap().to_string();
    eventually("both ReplicaSets scaled in proportion", || {
        let events = server.kubectl_ok(
            Some("1.33"),
            &[
                "get",
                "events",
                "--field-selector",
                "reason=ScalingReplicaSet",
            ],
        );
        events.contains(&format!("Scaled up replica set {old_name} from 3 to 6"))
            && events.contains(&format!("Scaled up replica set {new_name} from 1 to 2"))
    });
    let all = rs_list();
    assert!(
        all.iter().all(|r| {
            r["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "6"
                && r["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "8"
        }),
        "{all:?}"
    );
}

#[test]
fn garbage_collector_cascades_in_all_three_modes() {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let count = |what: &str, label: &str| {
        server.get_json(&[what, "-l", label])["items"]
            .as_array()
            .map_or(0, |i| {
                i.iter()
                    .filter(|o| o["metadata"]["deletionTimestamp"].is_null())
                    .count()
            })
    };
    for name in ["bg", "fg", "orph"] {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "create",
                "deployment",
                name,
                "--image=registry.local/web:1",
                "--replicas=2",
            ],
        );
    }
    for name in ["bg", "fg", "orph"] {
        let label = format!("app={name}");
        eventually("replica sets and pods", || {
            count("rs", &label) == 1 && count("pods", &label) == 2
        });
    }
    // Background: the Deployment goes at once, its ReplicaSet and pods after it.
    server.kubectl_ok(Some("1.33"), &["delete", "deployment", "bg"]);
    eventually("background cascade", || {
        count("rs", "app=bg") == 0 && count("pods", "app=bg") == 0
    });
    // Foreground: dependents first, then the Deployment itself.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "delete",
            "deployment",
            "fg",
            "--cascade=foreground",
            "--wait=false",
        ],
    );
    eventually("foreground cascade", || {
        count("rs", "app=fg") == 0
            && count("pods", "app=fg") == 0
            && !server
                .kubectl_v(Some("1.33"), &["get", "deployment", "fg"])
                .status
                .success()
    });
    // Orphan: the ReplicaSet stays, without its owner reference.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "delete",
            "deployment",
            "orph",
            "--cascade=orphan",
            "--wait=false",
        ],
    );
    eventually("orphaned", || {
        !server
            .kubectl_v(Some("1.33"), &["get", "deployment", "orph"])
            .status
            .success()
    });
    let rs = &server.get_json(&["rs", "-l", "app=orph"])["items"][0];
    assert!(
        rs["metadata"]["ownerReferences"]
            .as_array()
            .is_none_or(|r| r.is_empty()),
        "{rs}"
    );
    assert_eq!(count("pods", "app=orph"), 2);
}

#[test]
fn quota_refusals_become_failed_create_events_and_a_replica_failure() {
    let server = RkubeServer::start();
    server.kubectl_ok(Some("1.33"), &["create", "namespace", "tight"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "tight"]);
    server.kubectl_ok(
        Some("1.33"),
        &["create", "quota", "two", "-n", "tight", "--hard=pods=2"],
    );
    let rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": "tight"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]}}},
    });
    server.apply_json(&rs);
    eventually("FailedCreate", || {
        let d = server.kubectl_ok(Some("1.33"), &["describe", "rs", "web", "-n", "tight"]);
        d.contains("FailedCreate") && d.contains("exceeded quota: two")
    });
    eventually("ReplicaFailure", || {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "get",
                "rs",
                "web",
                "-n",
                "tight",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"ReplicaFailure\")].status}",
            ],
        ) == "True"
    });
    let n = server.kubectl_ok(Some("1.33"), &["get", "pods", "-n", "tight", "-o", "name"]);
    assert_eq!(n.lines().count(), 2, "{n}");
}

#[test]
fn a_rollout_that_cannot_progress_exceeds_its_deadline() {
    // No nodes: the pods stay Pending and the rollout stalls.
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "stuck", "namespace": "default"},
        "spec": {"replicas": 2, "progressDeadlineSeconds": 2,
            "selector": {"matchLabels": {"app": "stuck"}},
            "template": {"metadata": {"labels": {"app": "stuck"}},
                "spec": {"containers": [{"name": "c", "image": "registry.local/web:1"}]}}},
    });
    server.apply_json(&d);
    eventually("ProgressDeadlineExceeded", || {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "get",
                "deploy",
                "stuck",
                "-o",
                "jsonpath={.status.conditions[?(@.type==\"Progressing\")].reason}",
            ],
        ) == "ProgressDeadlineExceeded"
    });
    let o = server.kubectl(&["rollout", "status", "deploy/stuck", "--timeout=20s"]);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("deployment \"stuck\" exceeded its progress deadline"),
        "{err}"
    );
}
