//! The controller manager's ServiceAccount controller, root-CA publisher, resource quota
//! controller and disruption controller, seen with the real kubectl 1.33 against
//! `rkube server` and simulated nodes: a new namespace gets its `default` account and
//! `kube-root-ca.crt` bundle back whatever happens to them; `kubectl describe quota`
//! follows pods created, finished and deleted; `kubectl get pdb` shows the disruptions a
//! Deployment's budget allows. The API server's `pods/eviction` spends those budgets:
//! `kubectl drain` evicts what the budget allows and times out on what it does not,
//! concurrent evictions never take more than the budget, and the eviction's errors,
//! dry runs and `DisruptionTarget` condition are upstream's.

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

    // Raising minAvailable to every pod: no disruption allowed, a new generation observed.
    // An eviction is refused: the pod has two budgets, which upstream does not support.
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
        String::from_utf8_lossy(&o.stderr).contains(
            "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."
        ),
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

/// The live (not being deleted) pods `selector` picks: (name, node).
fn live_pods(server: &RkubeServer, selector: &str) -> Vec<(String, String)> {
    get_json(server, &["pods", "-l", selector])["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .map(|p| {
            (
                p["metadata"]["name"].as_str().unwrap().to_string(),
                p["spec"]["nodeName"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn running_and_ready(pod: &Value) -> bool {
    pod["status"]["phase"] == "Running"
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

fn eviction(pod: &str) -> Value {
    json!({"apiVersion": "policy/v1", "kind": "Eviction",
        "metadata": {"name": pod, "namespace": "default"}})
}

/// `kubectl create --raw <pod's eviction URL><query> -f -` of `body`.
fn evict(server: &RkubeServer, pod: &str, query: &str, body: &Value) -> std::process::Output {
    let path = format!("/api/v1/namespaces/default/pods/{pod}/eviction{query}");
    server.kubectl_stdin(
        Some("1.33"),
        &["create", "--raw", &path, "-f", "-"],
        &body.to_string(),
    )
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// kubectl's stdout and stderr together.
fn both(o: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn drain_evicts_what_the_budget_allows() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "drain", &["--count", "3"]);
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
    eventually("one disruption allowed", || {
        pdb_row(&server, "web")[3] == "1"
    });

    // Drain the node with the fewest pods (one each, when the scheduler spread them).
    let placed = live_pods(&server, "app=web");
    assert_eq!(placed.len(), 3, "{placed:?}");
    let load = |n: &str| placed.iter().filter(|(_, node)| node == n).count();
    let (victim, node) = placed.iter().min_by_key(|(_, n)| load(n)).cloned().unwrap();
    let o = server.kubectl_v(
        Some("1.33"),
        &[
            "drain",
            &node,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=30s",
        ],
    );
    let out = both(&o);
    assert!(o.status.success(), "{out}\n{}", server.log_tail());
    assert!(out.contains(&format!("node/{node} cordoned")), "{out}");
    assert!(out.contains(&format!("pod/{victim} evicted")), "{out}");
    assert!(out.contains(&format!("node/{node} drained")), "{out}");
    let n = get_json(&server, &["node", &node]);
    assert_eq!(n["spec"]["unschedulable"], true);

    // The ReplicaSet replaces the evicted pod on another node.
    eventually("three ready pods off the drained node", || {
        let pods = get_json(&server, &["pods", "-l", "app=web"])["items"]
            .as_array()
            .unwrap()
            .clone();
        pods.len() == 3
            && pods.iter().all(|p| {
                running_and_ready(p)
                    && p["metadata"]["deletionTimestamp"].is_null()
                    && p["spec"]["nodeName"] != node.as_str()
            })
    });
    eventually("the budget to recover", || {
        let st = get_json(&server, &["pdb", "web"])["status"].clone();
        st["currentHealthy"] == 3 && st["disruptionsAllowed"] == 1
    });

    // With every pod required, the next drain cannot evict anything and times out.
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
    eventually("no disruption allowed", || {
        let st = get_json(&server, &["pdb", "web"])["status"].clone();
        st["observedGeneration"] == 2 && st["disruptionsAllowed"] == 0
    });
    let before = live_pods(&server, "app=web");
    let (_, other) = before.iter().find(|(_, n)| *n != node).cloned().unwrap();
    let o = server.kubectl_v(
        Some("1.33"),
        &[
            "drain",
            &other,
            "--ignore-daemonsets",
            "--delete-emptydir-data",
            "--timeout=8s",
        ],
    );
    let out = both(&o);
    assert!(!o.status.success(), "{out}");
    assert!(
        out.contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{out}"
    );
    assert!(out.contains("global timeout reached: 8s"), "{out}");
    // Nothing was evicted.
    let mut after = live_pods(&server, "app=web");
    let mut before = before;
    after.sort();
    before.sort();
    assert_eq!(after, before);
}

#[test]
fn concurrent_evictions_never_overspend_a_budget() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "race", &["--count", "3"]);
    let names = ["solo-a", "solo-b", "solo-c"];
    for name in names {
        create(
            &server,
            &json!({"apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": name, "labels": {"app": "solo"}},
                "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]}}),
        );
    }
    eventually("three running pods", || {
        let pods = get_json(&server, &["pods", "-l", "app=solo"])["items"].clone();
        pods.as_array()
            .is_some_and(|ps| ps.len() == 3 && ps.iter().all(running_and_ready))
    });
    // Bare pods and a number: the budget expects the three pods found; one may go.
    k(
        &server,
        &[
            "create",
            "pdb",
            "solo",
            "--selector=app=solo",
            "--min-available=2",
        ],
    );
    eventually("one disruption allowed", || {
        let st = get_json(&server, &["pdb", "solo"])["status"].clone();
        st["disruptionsAllowed"] == 1 && st["currentHealthy"] == 3
    });

    // Three evictions at once: exactly one takes the disruption.
    let mut children = Vec::new();
    for name in names {
        let path = format!("/api/v1/namespaces/default/pods/{name}/eviction");
        let mut child = server
            .kubectl_cmd(Some("1.33"))
            .args(["create", "--raw", &path, "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(eviction(name).to_string().as_bytes())
            .unwrap();
        children.push((name, child));
    }
    let outcomes: Vec<(&str, std::process::Output)> = children
        .into_iter()
        .map(|(n, c)| (n, c.wait_with_output().unwrap()))
        .collect();
    let won: Vec<&str> = outcomes
        .iter()
        .filter(|(_, o)| o.status.success())
        .map(|(n, _)| *n)
        .collect();
    assert_eq!(won.len(), 1, "{:?}", outcomes);
    for (_, o) in outcomes.iter().filter(|(_, o)| !o.status.success()) {
        let e = stderr(o);
        assert!(
            e.contains("Error from server (TooManyRequests): Cannot evict pod as it would violate the pod's disruption budget."),
            "{e}"
        );
    }
    // The evicted pod goes; the other two stay and the budget is spent.
    eventually("the evicted pod to go", || {
        let live: Vec<String> = live_pods(&server, "app=solo")
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        live.len() == 2 && !live.iter().any(|n| n == won[0])
    });
    eventually("no disruption left", || {
        let st = get_json(&server, &["pdb", "solo"])["status"].clone();
        st["disruptionsAllowed"] == 0 && st["currentHealthy"] == 2
    });
    // Another eviction is refused with the budget's numbers.
    let survivor = names.iter().find(|n| **n != won[0]).unwrap();
    let o = evict(&server, survivor, "", &eviction(survivor));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Cannot evict pod as it would violate the pod's disruption budget."),
        "{}",
        stderr(&o)
    );
}

#[test]
fn eviction_errors_dry_runs_and_the_disruption_target() {
    // No nodes: the pods stay Pending, which evictions do not ask budgets about.
    let server = RkubeServer::start();
    let held = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held", "labels": {"app": "held"},
                     "finalizers": ["rkube.test/hold"]},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}]}});
    create(&server, &held);
    k(
        &server,
        &[
            "create",
            "pdb",
            "held",
            "--selector=app=held",
            "--min-available=1",
        ],
    );

    // Upstream's errors.
    let o = evict(&server, "nope", "", &eviction("nope"));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains(r#"Error from server (NotFound): pods "nope" not found"#),
        "{}",
        stderr(&o)
    );
    let o = evict(&server, "held", "", &eviction("other"));
    assert!(
        stderr(&o).contains(
            "Error from server (BadRequest): name in URL does not match name in Eviction object"
        ),
        "{}",
        stderr(&o)
    );
    let o = evict(
        &server,
        "held",
        "",
        &json!({"apiVersion": "policy/v1", "kind": "Eviction", "metadata": "held"}),
    );
    assert!(
        stderr(&o).contains("Error from server (BadRequest)")
            && stderr(&o).contains("cannot be handled as a Eviction"),
        "{}",
        stderr(&o)
    );
    let mut elsewhere = eviction("held");
    elsewhere["metadata"]["namespace"] = json!("kube-system");
    let o = evict(&server, "held", "", &elsewhere);
    assert!(
        stderr(&o).contains(
            "the namespace of the provided object does not match the namespace sent on the request"
        ),
        "{}",
        stderr(&o)
    );
    // A stale resourceVersion precondition is a conflict at once (upstream retries
    // conflicts for 10 s only when the client pinned no resourceVersion).
    let mut stale = eviction("held");
    stale["deleteOptions"] = json!({"preconditions": {"resourceVersion": "1"}});
    let o = evict(&server, "held", "", &stale);
    assert!(
        stderr(&o).contains(r#"Error from server (Conflict): Operation cannot be fulfilled on Pod "held": the ResourceVersion in the precondition (1) does not match the ResourceVersion in record"#),
        "{}",
        stderr(&o)
    );

    // Dry runs (in the query or in deleteOptions) change nothing.
    let mut dry = eviction("held");
    dry["deleteOptions"] = json!({"dryRun": ["All"]});
    for (query, body) in [("?dryRun=All", eviction("held")), ("", dry)] {
        let o = evict(&server, "held", query, &body);
        assert!(o.status.success(), "{}", stderr(&o));
        assert!(String::from_utf8_lossy(&o.stdout).contains("Success"));
        let pod = get_json(&server, &["pod", "held"]);
        assert!(pod["metadata"]["deletionTimestamp"].is_null(), "{pod}");
        assert!(
            !pod["status"]["conditions"]
                .as_array()
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "DisruptionTarget")),
            "{pod}"
        );
    }

    // The eviction marks the pod as a disruption target, then deletes it (its finalizer
    // holds it), without asking the budget of a Pending pod.
    let o = evict(&server, "held", "", &eviction("held"));
    assert!(o.status.success(), "{}", stderr(&o));
    let pod = get_json(&server, &["pod", "held"]);
    assert!(!pod["metadata"]["deletionTimestamp"].is_null(), "{pod}");
    let cond = pod["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "DisruptionTarget")
        .cloned()
        .unwrap();
    assert_eq!(cond["status"], "True");
    assert_eq!(cond["reason"], "EvictionByEvictionAPI");
    assert_eq!(cond["message"], "Eviction API: evicting");
    // A pod already being deleted is evicted again without fuss.
    let o = evict(&server, "held", "", &eviction("held"));
    assert!(o.status.success(), "{}", stderr(&o));
    let st = get_json(&server, &["pdb", "held"])["status"].clone();
    assert!(
        st["disruptedPods"]
            .as_object()
            .is_none_or(serde_json::Map::is_empty),
        "{st}"
    );

    k(
        &server,
        &[
            "patch",
            "pod",
            "held",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ],
    );
    eventually("the evicted pod to go", || {
        !server
            .kubectl_v(Some("1.33"), &["get", "pod", "held"])
            .status
            .success()
    });
}
