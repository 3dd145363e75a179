//! The controller manager's ServiceAccount controller, root-CA publisher, resource quota
//! controller and disruption controller, seen with the real kubectl 1.33 against
//! `rkube server` and simulated nodes: a new namespace gets its `default` account and
//! `kube-root-ca.crt` bundle back whatever happens to them; `kubectl describe quota`
//! follows pods created, finished and deleted; `kubectl get pdb` shows the disruptions a
//! Deployment's budget allows, and evictions beyond it are refused.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, eventually};

fn k(server: &RkubeServer, args: &[&str]) -> String {
    server.kubectl_ok(Some("1.33"), args)
}

fn get_json(server: &RkubeServer, args: &[&str]) -> Value {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&k(server, &a)).unwrap()
}

fn create(server: &RkubeServer, obj: &Value) {
    let o = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &obj.to_string());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn namespaces_get_their_default_account_and_root_ca_back() {
    let server = RkubeServer::start();
    let ca = std::fs::read_to_string(server.dir.path().join("data/tls/server-ca.crt")).unwrap();
    k(&server, &["create", "namespace", "team"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "team"]);
    server.wait_for_object(&["get", "configmap", "kube-root-ca.crt", "-n", "team"]);
    let cm = get_json(&server, &["configmap", "kube-root-ca.crt", "-n", "team"]);
    assert_eq!(cm["data"]["ca.crt"], ca.as_str());
    assert!(
        cm["metadata"]["annotations"]["kubernetes.io/description"]
            .as_str()
            .unwrap()
            .starts_with("Contains a CA bundle that can be used to verify the kube-apiserver")
    );
    // The system namespaces have them too.
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        server.wait_for_object(&[
            "get",
            "serviceaccount/default",
            "configmap/kube-root-ca.crt",
            "-n",
            ns,
        ]);
    }

    // A deleted account is created again (a new object).
    let uid = k(
        &server,
        &[
            "get",
            "sa",
            "default",
            "-n",
            "team",
            "-o",
            "jsonpath={.metadata.uid}",
        ],
    );
    k(
        &server,
        &["delete", "serviceaccount", "default", "-n", "team"],
    );
    eventually("the default account to come back", || {
        let o = server.kubectl_v(
            Some("1.33"),
            &[
                "get",
                "sa",
                "default",
                "-n",
                "team",
                "-o",
                "jsonpath={.metadata.uid}",
            ],
        );
        o.status.success() && !o.stdout.is_empty() && String::from_utf8_lossy(&o.stdout) != uid
    });

    // An edited bundle is put back; a deleted one is re-created.
    k(
        &server,
        &[
            "patch",
            "configmap",
            "kube-root-ca.crt",
            "-n",
            "team",
            "--type=merge",
            "-p",
            r#"{"data":{"ca.crt":"tampered","extra":"x"}}"#,
        ],
    );
    let ca_now = || {
        k(
            &server,
            &[
                "get",
                "configmap",
                "kube-root-ca.crt",
                "-n",
                "team",
                "-o",
                "json",
            ],
        )
    };
    eventually("the bundle to be restored", || {
        let cm: Value = serde_json::from_str(&ca_now()).unwrap();
        cm["data"] == json!({"ca.crt": ca})
    });
    k(
        &server,
        &["delete", "configmap", "kube-root-ca.crt", "-n", "team"],
    );
    eventually("the bundle to be re-created", || {
        server
            .kubectl_v(
                Some("1.33"),
                &["get", "configmap", "kube-root-ca.crt", "-n", "team"],
            )
            .status
            .success()
    });

    // The account is usable at once: a pod is admitted with its token volume.
    k(&server, &["create", "namespace", "fresh"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "fresh"]);
    k(
        &server,
        &["run", "p", "-n", "fresh", "--image=registry.local/web:1"],
    );
    let pod = get_json(&server, &["pod", "p", "-n", "fresh"]);
    assert_eq!(pod["spec"]["serviceAccountName"], "default");
}

/// `kubectl describe quota`'s (used, hard) of `resource`.
fn described(
    server: &RkubeServer,
    ns: &str,
    quota: &str,
    resource: &str,
) -> Option<(String, String)> {
    let out = k(server, &["describe", "quota", quota, "-n", ns]);
    out.lines().find_map(|l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        (cols.len() == 3 && cols[0] == resource).then(|| (cols[1].to_string(), cols[2].to_string()))
    })
}

fn pod(ns: &str, name: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1",
            "resources": {"requests": {"cpu": cpu}, "limits": {"cpu": cpu}}}]}})
}

#[test]
fn describe_quota_follows_pods() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "quota", &["--count", "2"]);
    k(&server, &["create", "namespace", "q"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "q"]);
    k(
        &server,
        &[
            "create",
            "quota",
            "compute",
            "-n",
            "q",
            "--hard=pods=5,requests.cpu=2,limits.cpu=4,configmaps=10",
        ],
    );
    // A new quota is counted at once (the root CA bundle is a config map).
    eventually("the quota's first count", || {
        described(&server, "q", "compute", "configmaps") == Some(("1".into(), "10".into()))
    });
    assert_eq!(
        described(&server, "q", "compute", "pods"),
        Some(("0".into(), "5".into()))
    );

    create(&server, &pod("q", "a", "250m"));
    create(&server, &pod("q", "b", "500m"));
    assert_eq!(
        described(&server, "q", "compute", "pods"),
        Some(("2".into(), "5".into()))
    );
    assert_eq!(
        described(&server, "q", "compute", "requests.cpu"),
        Some(("750m".into(), "2".into()))
    );
    assert_eq!(
        described(&server, "q", "compute", "limits.cpu"),
        Some(("750m".into(), "4".into()))
    );
    eventually("the pods to run", || {
        k(
            &server,
            &[
                "get",
                "pods",
                "-n",
                "q",
                "-o",
                "jsonpath={.items[*].status.phase}",
            ],
        ) == "Running Running"
    });

    // A pod that finishes is no longer charged (the controller sees it turn terminal).
    k(
        &server,
        &[
            "patch",
            "pod",
            "a",
            "-n",
            "q",
            "--subresource=status",
            "--type=merge",
            "-p",
            r#"{"status":{"phase":"Succeeded"}}"#,
        ],
    );
    eventually("the finished pod to be given back", || {
        described(&server, "q", "compute", "pods") == Some(("1".into(), "5".into()))
            && described(&server, "q", "compute", "requests.cpu")
                == Some(("500m".into(), "2".into()))
    });

    // Deleted pods are given back.
    k(
        &server,
        &["delete", "pod", "a", "b", "-n", "q", "--wait=true"],
    );
    eventually("the deleted pods to be given back", || {
        described(&server, "q", "compute", "pods") == Some(("0".into(), "5".into()))
            && described(&server, "q", "compute", "requests.cpu") == Some(("0".into(), "2".into()))
            && described(&server, "q", "compute", "limits.cpu") == Some(("0".into(), "4".into()))
    });

    // A quota created over existing objects counts them; new limits are counted at once.
    create(&server, &pod("q", "c", "100m"));
    k(
        &server,
        &["create", "quota", "late", "-n", "q", "--hard=pods=3"],
    );
    eventually("the late quota's count", || {
        described(&server, "q", "late", "pods") == Some(("1".into(), "3".into()))
    });
    k(
        &server,
        &[
            "patch",
            "quota",
            "late",
            "-n",
            "q",
            "--type=merge",
            "-p",
            r#"{"spec":{"hard":{"pods":"4","secrets":"2"}}}"#,
        ],
    );
    eventually("the new limits", || {
        described(&server, "q", "late", "pods") == Some(("1".into(), "4".into()))
            && described(&server, "q", "late", "secrets") == Some(("0".into(), "2".into()))
    });
}

/// The `kubectl get pdb` row of `name`: NAME, MIN AVAILABLE, MAX UNAVAILABLE, ALLOWED
/// DISRUPTIONS, AGE.
fn pdb_row(server: &RkubeServer, name: &str) -> Vec<String> {
    let out = k(server, &["get", "pdb", name]);
    let mut lines = out.lines();
    let header = lines.next().unwrap();
    assert!(
        header.contains("MIN AVAILABLE")
            && header.contains("MAX UNAVAILABLE")
            && header.contains("ALLOWED DISRUPTIONS"),
        "{header}"
    );
    lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

#[test]
fn pdb_status_follows_a_deployment() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "pdb", &["--count", "3"]);
    k(
        &server,
        &[
            "create",
            "deployment",
            "web",
            "--image=registry.local/web:1",
            "--replicas=3",
        ],
    );
    k(
        &server,
        &["rollout", "status", "deployment/web", "--timeout=60s"],
    );

    k(
        &server,
        &[
            "create",
            "pdb",
            "web",
            "--selector=app=web",
            "--min-available=2",
        ],
    );
    eventually("ALLOWED DISRUPTIONS 1", || {
        let row = pdb_row(&server, "web");
        row[1] == "2" && row[2] == "N/A" && row[3] == "1"
    });
    let status = get_json(&server, &["pdb", "web"])["status"].clone();
    assert_eq!(status["expectedPods"], 3);
    assert_eq!(status["currentHealthy"], 3);
    assert_eq!(status["desiredHealthy"], 2);
    assert_eq!(status["observedGeneration"], 1);
    let cond = &status["conditions"][0];
    assert_eq!(cond["type"], "DisruptionAllowed");
    assert_eq!(cond["status"], "True");
    assert_eq!(cond["reason"], "SufficientPods");

    // maxUnavailable 50% of the Deployment's 3 replicas rounds up to 2.
    k(
        &server,
        &[
            "create",
            "pdb",
            "half",
            "--selector=app=web",
            "--max-unavailable=50%",
        ],
    );
    eventually("ALLOWED DISRUPTIONS 2", || {
        let row = pdb_row(&server, "half");
        row[1] == "N/A" && row[2] == "50%" && row[3] == "2"
    });
    let status = get_json(&server, &["pdb", "half"])["status"].clone();
    assert_eq!(
        (
            status["expectedPods"].as_i64(),
            status["desiredHealthy"].as_i64()
        ),
        (Some(3), Some(1))
    );

    // Raising minAvailable to every pod: no disruption allowed, a new generation observed,
    // and the API server refuses an eviction.
    k(
        &server,
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":3}}"#,
        ],
    );
    eventually("no disruptions allowed", || {
        let st = get_json(&server, &["pdb", "web"])["status"].clone();
        st["disruptionsAllowed"] == 0
            && st["observedGeneration"] == 2
            && st["conditions"][0]["status"] == "False"
            && st["conditions"][0]["reason"] == "InsufficientPods"
    });
    assert_eq!(pdb_row(&server, "web")[3], "0");
    let victim = k(
        &server,
        &[
            "get",
            "pods",
            "-l",
            "app=web",
            "-o",
            "jsonpath={.items[0].metadata.name}",
        ],
    );
    let eviction = json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": victim, "namespace": "default"}});
    let path = format!("/api/v1/namespaces/default/pods/{victim}/eviction");
    let o = server.kubectl_stdin(
        Some("1.33"),
        &["create", "--raw", &path, "-f", "-"],
        &eviction.to_string(),
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("Cannot evict pod as it would violate the pod's disruption budget"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );

    // Back to two, then a scale-down: the budgets follow the pods and the scale.
    k(
        &server,
        &[
            "patch",
            "pdb",
            "web",
            "--type=merge",
            "-p",
            r#"{"spec":{"minAvailable":2}}"#,
        ],
    );
    eventually("one disruption allowed again", || {
        pdb_row(&server, "web")[3] == "1"
    });
    k(&server, &["scale", "deployment", "web", "--replicas=2"]);
    eventually("the budget to follow the scale-down", || {
        let st = get_json(&server, &["pdb", "web"])["status"].clone();
        st["expectedPods"] == 2 && st["currentHealthy"] == 2 && st["disruptionsAllowed"] == 0
    });
    eventually(
        "half's expected count to follow the Deployment's scale",
        || {
            let st = get_json(&server, &["pdb", "half"])["status"].clone();
            // 50% of 2 is 1: one must stay, one may go.
            st["expectedPods"] == 2 && st["desiredHealthy"] == 1 && st["disruptionsAllowed"] == 1
        },
    );
}
