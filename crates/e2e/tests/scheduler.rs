//! The scheduler with simulated nodes, judged by the real kubectl: the seed command
//! spreads a Deployment one pod per node, bound and Running, with `Scheduled` events; a
//! pod that fits nowhere gets upstream's `FailedScheduling` summary; a higher-priority pod
//! preempts; a node that goes silent is tainted and its pods are replaced elsewhere;
//! profiles from a `KubeSchedulerConfiguration`; `rkube scheduler` as its own process.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes};

const K: Option<&str> = Some("1.33");

fn get(server: &RkubeServer, args: &[&str]) -> Value {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    serde_json::from_str(&server.kubectl_ok(K, &a)).unwrap()
}

fn items(v: Value) -> Vec<Value> {
    v["items"].as_array().cloned().unwrap_or_default()
}

/// Polls for up to `secs` seconds.
fn wait_for(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(secs);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Waits until `n` nodes are Ready without NoSchedule taints.
fn nodes_schedulable(server: &RkubeServer, n: usize) {
    wait_for("schedulable nodes", 30, || {
        let nodes = items(get(server, &["nodes"]));
        nodes.len() == n
            && nodes.iter().all(|node| {
                node["spec"]["taints"]
                    .as_array()
                    .is_none_or(|t| t.iter().all(|t| t["effect"] != "NoSchedule"))
                    && node["status"]["conditions"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .any(|c| c["type"] == "Ready" && c["status"] == "True")
            })
    });
}

fn live_pods(server: &RkubeServer, selector: &str) -> Vec<Value> {
    items(get(server, &["pods", "-l", selector]))
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .collect()
}

/// `kubectl create deployment web` of one pod.
fn create_web(server: &RkubeServer) {
    server.kubectl_ok(
        None,
        &[
            "create",
            "deployment",
            "web",
            "--image=registry.local/web:1",
        ],
    );
}

fn apply(server: &RkubeServer, obj: &Value) {
    let o = server.kubectl_stdin(K, &["apply", "-f", "-"], &obj.to_string());
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

#[test]
fn the_seed_command_spreads_three_pods_over_three_nodes() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "a", &["--count", "3"]);
    nodes_schedulable(&server, 3);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    server.kubectl_ok(
        K,
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
    );
    let o = server.kubectl(&["rollout", "status", "deployment/nginx", "--timeout=60s"]);
    assert!(
        o.status.success(),
        "rollout status: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stdout).contains("successfully rolled out"));
    let pods = live_pods(&server, "app=nginx");
    assert_eq!(pods.len(), 3);
    let nodes: BTreeSet<&str> = pods
        .iter()
        .map(|p| p["spec"]["nodeName"].as_str().unwrap())
        .collect();
    assert_eq!(nodes.len(), 3, "one pod per node: {nodes:?}");
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Running");
        let scheduled = p["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| c["type"] == "PodScheduled")
            .unwrap();
        assert_eq!(scheduled["status"], "True");
    }
    let name = pods[0]["metadata"]["name"].as_str().unwrap();
    let node = pods[0]["spec"]["nodeName"].as_str().unwrap();
    let mut described = String::new();
    wait_for("the Scheduled event", 20, || {
        described = server.kubectl_ok(K, &["describe", "pod", name]);
        described.contains("Scheduled")
    });
    assert!(
        described.contains(&format!("Successfully assigned default/{name} to {node}")),
        "{described}"
    );
    assert!(described.contains("default-scheduler"), "{described}");
    let table = server.kubectl_ok(K, &["get", "deployment", "nginx"]);
    assert!(table.contains("3/3"), "{table}");
    // The controllers' events, as `kubectl describe` shows them.
    let rs = pods[0]["metadata"]["ownerReferences"][0]["name"]
        .as_str()
        .unwrap()
        .to_string();
    wait_for("ScalingReplicaSet", 20, || {
        let d = server.kubectl_ok(K, &["describe", "deployment", "nginx"]);
        d.contains("ScalingReplicaSet")
            && d.contains(&format!("Scaled up replica set {rs} from 0 to 3"))
    });
    wait_for("SuccessfulCreate", 20, || {
        let d = server.kubectl_ok(K, &["describe", "replicaset", &rs]);
        d.contains("SuccessfulCreate") && d.contains("Created pod: nginx-")
    });
}

/// A scheduler configuration of two profiles: upstream's defaults, and `bin-packer`,
/// which scores the fullest node best.
const BIN_PACKER: &str = "apiVersion: kubescheduler.config.k8s.io/v1\n\
    kind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n\
    - schedulerName: bin-packer\n  pluginConfig:\n  - name: NodeResourcesFit\n    \
    args: {scoringStrategy: {type: MostAllocated}}\n";

#[test]
fn failed_scheduling_preemption_and_profiles() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(&config, BIN_PACKER).unwrap();
    let server = RkubeServer::start_with(&["--scheduler-config", config.to_str().unwrap()]);
    let _sim = SimNodes::start(&server, "a", &["--count", "2", "--cpu", "2"]);
    nodes_schedulable(&server, 2);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let pod = |name: &str, cpu: &str, extra: Value| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"test": name}},
            "spec": {"containers": [{"name": "c", "image": "registry.local/web:1",
                "resources": {"requests": {"cpu": cpu}}}]}});
        if let Value::Object(m) = extra {
            for (k, v) in m {
                p["spec"][k] = v;
            }
        }
        p
    };
    // Fits nowhere: upstream's summary, as an event and the PodScheduled condition.
    apply(&server, &pod("huge", "16", json!({})));
    let want = "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod.";
    let mut described = String::new();
    wait_for("FailedScheduling", 20, || {
        described = server.kubectl_ok(K, &["describe", "pod", "huge"]);
        described.contains("FailedScheduling")
    });
    assert!(described.contains(want), "{described}");
    wait_for("PodScheduled=False", 20, || {
        let p = get(&server, &["pod", "huge"]);
        p["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| {
                c["type"] == "PodScheduled"
                    && c["status"] == "False"
                    && c["reason"] == "Unschedulable"
                    && c["message"] == want
            })
    });
    server.kubectl_ok(K, &["delete", "pod", "huge", "--wait=false"]);

    // A second profile: MostAllocated packs both pods onto one node.
    apply(
        &server,
        &pod("pack-1", "500m", json!({"schedulerName": "bin-packer"})),
    );
    wait_for("pack-1 bound", 20, || {
        get(&server, &["pod", "pack-1"])["spec"]["nodeName"].is_string()
    });
    apply(
        &server,
        &pod("pack-2", "500m", json!({"schedulerName": "bin-packer"})),
    );
    wait_for("pack-2 bound", 20, || {
        get(&server, &["pod", "pack-2"])["spec"]["nodeName"].is_string()
    });
    let n1 = get(&server, &["pod", "pack-1"])["spec"]["nodeName"].clone();
    let n2 = get(&server, &["pod", "pack-2"])["spec"]["nodeName"].clone();
    assert_eq!(n1, n2, "bin-packer packs");
    // No profile by that name: left alone.
    apply(
        &server,
        &pod("orphan", "10m", json!({"schedulerName": "nobody"})),
    );

    // Preemption: fill both nodes with low-priority pods, then a high-priority pod
    // evicts one of them.
    server.kubectl_ok(K, &["delete", "pod", "pack-1", "pack-2"]);
    apply(
        &server,
        &json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
            "metadata": {"name": "high"}, "value": 1000}),
    );
    for i in 0..2 {
        apply(&server, &pod(&format!("low-{i}"), "1500m", json!({})));
    }
    wait_for("low pods running", 30, || {
        (0..2).all(|i| get(&server, &["pod", &format!("low-{i}")])["status"]["phase"] == "Running")
    });
    apply(
        &server,
        &pod("vip", "1", json!({"priorityClassName": "high"})),
    );
    wait_for("vip bound after preemption", 40, || {
        get(&server, &["pod", "vip"])["spec"]["nodeName"].is_string()
    });
    let lows = items(get(&server, &["pods", "-l", "test in (low-0,low-1)"]));
    assert_eq!(lows.len(), 1, "one victim deleted: {lows:?}");
    let events = server.kubectl_ok(
        K,
        &["get", "events", "--field-selector", "reason=Preempted"],
    );
    assert!(events.contains("Preempted by pod"), "{events}");
    assert!(get(&server, &["pod", "orphan"])["spec"]["nodeName"].is_null());
}

#[test]
fn a_silent_node_is_tainted_and_its_pods_are_replaced_elsewhere() {
    let server = RkubeServer::start_with(&[
        "--node-monitor-grace-period",
        "4s",
        "--node-monitor-period",
        "1s",
    ]);
    let _stay = SimNodes::start(&server, "stay", &["--count", "2", "--prefix", "stay"]);
    let mut gone = SimNodes::start(
        &server,
        "gone",
        &["--count", "1", "--prefix", "gone", "--lease-seconds", "4"],
    );
    nodes_schedulable(&server, 3);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    apply(
        &server,
        &json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "registry.local/web:1"}],
                        "tolerations": [{"key": "node.kubernetes.io/unreachable", "operator": "Exists",
                            "effect": "NoExecute", "tolerationSeconds": 1}]}}}}),
    );
    wait_for("three running pods", 40, || {
        let pods = live_pods(&server, "app=web");
        pods.len() == 3 && pods.iter().all(|p| p["status"]["phase"] == "Running")
    });
    let on_gone: Vec<String> = live_pods(&server, "app=web")
        .iter()
        .filter(|p| p["spec"]["nodeName"] == "gone-0")
        .map(|p| p["metadata"]["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(on_gone.len(), 1, "one pod per node");
    gone.kill();
    wait_for("gone-0 Unknown and tainted", 40, || {
        let n = get(&server, &["node", "gone-0"]);
        let unknown = n["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Ready" && c["status"] == "Unknown");
        let tainted = n["spec"]["taints"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|t| t["key"] == "node.kubernetes.io/unreachable" && t["effect"] == "NoExecute");
        unknown && tainted
    });
    wait_for("the pod replaced on the other nodes", 40, || {
        let pods = live_pods(&server, "app=web");
        pods.len() == 3
            && pods
                .iter()
                .all(|p| p["status"]["phase"] == "Running" && p["spec"]["nodeName"] != "gone-0")
    });
    let evicted = get(&server, &["pod", &on_gone[0]]);
    assert!(evicted["metadata"]["deletionTimestamp"].is_string());
}

struct Proc {
    child: std::process::Child,
    log: std::path::PathBuf,
    /// The secure port it serves on.
    port: u16,
}

impl Proc {
    /// `rkube controller-manager` or `rkube scheduler` with `args`, logging to the
    /// server's directory.
    fn component(
        server: &RkubeServer,
        component: &str,
        kubeconfig: &str,
        tag: &str,
        args: &[&str],
        port: u16,
    ) -> Proc {
        let log = server.dir.path().join(format!("{component}-{tag}.log"));
        let out = std::fs::File::create(&log).unwrap();
        let child = Command::new(testkit::rkube_binary())
            .args([component, "--kubeconfig"])
            .arg(server.dir.path().join("data").join(kubeconfig))
            .args(["--secure-port", &port.to_string()])
            .args(args)
            .stdin(Stdio::null())
            .stdout(out.try_clone().unwrap())
            .stderr(out)
            .spawn()
            .unwrap();
        Proc { child, log, port }
    }

    fn scheduler(server: &RkubeServer, tag: &str) -> Proc {
        Proc::component(
            server,
            "scheduler",
            "scheduler.kubeconfig",
            tag,
            &[],
            testkit::free_port(),
        )
    }

    fn leads(&self) -> bool {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .contains("scheduler started")
    }

    fn terminate(&mut self) {
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn pod_named(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "registry.local/web:1"}]}})
}

#[test]
fn rkube_scheduler_runs_as_its_own_process_with_leader_election() {
    let server = RkubeServer::start_with(&["--disable-scheduler"]);
    let _sim = SimNodes::start(&server, "a", &["--count", "1"]);
    nodes_schedulable(&server, 1);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    apply(&server, &pod_named("p"));
    std::thread::sleep(Duration::from_secs(2));
    assert!(get(&server, &["pod", "p"])["spec"]["nodeName"].is_null());
    // Two schedulers: one leads and binds, the other waits.
    let mut one = Proc::scheduler(&server, "one");
    let mut two = Proc::scheduler(&server, "two");
    wait_for("the pod bound by rkube scheduler", 30, || {
        get(&server, &["pod", "p"])["spec"]["nodeName"].is_string()
    });
    let lease = get(&server, &["lease", "-n", "kube-system", "kube-scheduler"]);
    let holder = lease["spec"]["holderIdentity"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(lease["spec"]["leaseDurationSeconds"], 15);
    assert!(one.leads() != two.leads(), "exactly one leads");
    let (leader, follower) = if one.leads() {
        (&mut one, &mut two)
    } else {
        (&mut two, &mut one)
    };
    // The follower is a warm standby: its caches synced, it is ready to take over; both
    // pass the leader-election check (the leader renews, the follower holds nothing).
    let ready =
        "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n";
    for p in [&*leader, &*follower] {
        wait_for("the scheduler ready", 30, || {
            curl(p.port, "/readyz?verbose") == (200, ready.to_string())
        });
    }
    // The leader stops (releasing the lease): the follower takes over and schedules.
    leader.terminate();
    wait_for("the follower leads", 30, || follower.leads());
    apply(&server, &pod_named("q"));
    wait_for("q bound by the new leader", 30, || {
        get(&server, &["pod", "q"])["spec"]["nodeName"].is_string()
    });
    let lease = get(&server, &["lease", "-n", "kube-system", "kube-scheduler"]);
    assert_ne!(lease["spec"]["holderIdentity"], holder.as_str());
    assert_eq!(lease["spec"]["leaseTransitions"], 1);
    // A bad configuration stops start-up with a clear message.
    let bad = server.dir.path().join("bad.yaml");
    std::fs::write(&bad, "kind: Nope\n").unwrap();
    let err = testkit::server_start_error(&["--scheduler-config", bad.to_str().unwrap()]);
    assert!(err.contains("no kind \"Nope\""), "{err}");
    // So does a leader election the file makes impossible (checked when electing).
    std::fs::write(
        &bad,
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         leaderElection:\n  leaseDuration: 5s\n",
    )
    .unwrap();
    let err = testkit::server_start_error(&[
        "--leader-elect",
        "true",
        "--scheduler-config",
        bad.to_str().unwrap(),
    ]);
    assert!(
        err.contains("leaderElection.leaseDuration: Invalid value: \"10s\": LeaseDuration must be greater than RenewDeadline"),
        "{err}"
    );
}

fn rollout_ok(server: &RkubeServer, args: &[&str]) -> String {
    let mut a = vec!["rollout"];
    a.extend_from_slice(args);
    let o = server.kubectl(&a);
    assert!(
        o.status.success(),
        "kubectl rollout {args:?}: {}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn image(server: &RkubeServer) -> String {
    server.kubectl_ok(
        K,
        &[
            "get",
            "deploy",
            "web",
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
        ],
    )
}

#[test]
fn kubectl_rollout_status_history_undo_pause_resume_restart() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "a", &["--count", "3"]);
    nodes_schedulable(&server, 3);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    server.kubectl_ok(
        K,
        &[
            "create",
            "deployment",
            "web",
            "--image=web:1",
            "--replicas=3",
        ],
    );
    let status = rollout_ok(&server, &["status", "deploy/web", "--timeout=60s"]);
    assert!(status.contains("successfully rolled out"), "{status}");
    server.kubectl_ok(K, &["set", "image", "deploy/web", "web=web:2"]);
    rollout_ok(&server, &["status", "deploy/web", "--timeout=60s"]);
    let history = rollout_ok(&server, &["history", "deploy/web"]);
    assert!(
        history.contains("REVISION") && history.contains("\n2 "),
        "{history}"
    );
    // Undo goes back to web:1 as revision 3.
    rollout_ok(&server, &["undo", "deploy/web"]);
    rollout_ok(&server, &["status", "deploy/web", "--timeout=60s"]);
    assert_eq!(image(&server), "web:1");
    let history = rollout_ok(&server, &["history", "deploy/web"]);
    assert!(history.contains("\n3 "), "{history}");
    wait_for("the Deployment's revision annotation", 20, || {
        get(&server, &["deploy", "web"])["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
            == "3"
    });
    // Paused: a new template makes no new ReplicaSet until resumed.
    rollout_ok(&server, &["pause", "deploy/web"]);
    server.kubectl_ok(K, &["set", "image", "deploy/web", "web=web:3"]);
    std::thread::sleep(Duration::from_secs(2));
    let images = || {
        items(get(&server, &["rs", "-l", "app=web"]))
            .iter()
            .filter(|r| r["spec"]["replicas"].as_i64().unwrap_or(0) > 0)
            .map(|r| {
                r["spec"]["template"]["spec"]["containers"][0]["image"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect::<Vec<_>>()
    };
    assert_eq!(images(), ["web:1"]);
    rollout_ok(&server, &["resume", "deploy/web"]);
    rollout_ok(&server, &["status", "deploy/web", "--timeout=60s"]);
    assert_eq!(images(), ["web:3"]);
    // Restart: a new ReplicaSet with the same image.
    let before = items(get(&server, &["rs", "-l", "app=web"])).len();
    rollout_ok(&server, &["restart", "deploy/web"]);
    rollout_ok(&server, &["status", "deploy/web", "--timeout=60s"]);
    assert_eq!(
        items(get(&server, &["rs", "-l", "app=web"])).len(),
        before + 1
    );
    assert_eq!(images(), ["web:3"]);
}

/// A kubeconfig for the API server (the admin's cluster entry) with `user`'s credentials.
fn api_kubeconfig(server: &RkubeServer, user: Value, name: &str) -> std::path::PathBuf {
    let mut config: Value = serde_json::from_str(
        &server.kubectl_ok(None, &["config", "view", "--raw", "--minify", "-o", "json"]),
    )
    .unwrap();
    config["users"][0]["user"] = user;
    let path = server.dir.path().join(format!("{name}.kubeconfig"));
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// A kubeconfig for `https://127.0.0.1:<port>` (a component's self-signed endpoint, not
/// verified) with the admin's client certificate, a token, or no credentials.
fn endpoint_kubeconfig(
    server: &RkubeServer,
    port: u16,
    user: Value,
    name: &str,
) -> std::path::PathBuf {
    let path = server.dir.path().join(format!("{name}.kubeconfig"));
    let config = json!({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {
            "server": format!("https://127.0.0.1:{port}"), "insecure-skip-tls-verify": true}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
    });
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// An anonymous HTTPS GET of `path` on a local port: the status code and body.
fn curl(port: u16, path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-sk", "-w", "\n%{http_code}"])
        .arg(format!("https://127.0.0.1:{port}{path}"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap();
    (code.parse().unwrap(), body.to_string())
}

/// `kubectl get --raw <path>` through `kubeconfig`: (success, stdout, stderr).
fn raw(server: &RkubeServer, kubeconfig: &std::path::Path, path: &str) -> (bool, String, String) {
    let out = server
        .kubectl_cmd(None)
        .env("KUBECONFIG", kubeconfig)
        .args(["get", "--raw", path])
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Inside `rkube server`, the controller manager and scheduler serve their endpoints on
/// 127.0.0.1 (as k3s's), with the same checks and authorization as their own processes;
/// a port in use stops the server's start-up, saying which.
#[test]
fn server_components_serve_their_endpoints_on_loopback() {
    let (cm_port, sched_port) = (testkit::free_port(), testkit::free_port());
    let (cm, sched) = (cm_port.to_string(), sched_port.to_string());
    let server = RkubeServer::start_with(&[
        "--controller-manager-secure-port",
        &cm,
        "--scheduler-secure-port",
        &sched,
    ]);
    let _sim = SimNodes::start(&server, "a", &["--count", "1"]);
    nodes_schedulable(&server, 1);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    apply(&server, &pod_named("p"));
    wait_for("p bound", 30, || {
        get(&server, &["pod", "p"])["spec"]["nodeName"].is_string()
    });
    // Without leader election (one server on SQLite): no leaderElection check.
    let (code, checks) = curl(cm_port, "/healthz?verbose");
    assert_eq!(code, 200);
    assert!(
        checks.starts_with("[+]replicaset-controller ok\n")
            && checks.ends_with("healthz check passed\n"),
        "{checks}"
    );
    assert_eq!(
        curl(sched_port, "/readyz?verbose"),
        (
            200,
            "[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n".to_string()
        )
    );
    assert_eq!(curl(sched_port, "/metrics").0, 403);
    let admin: Value = serde_json::from_str(
        &server.kubectl_ok(None, &["config", "view", "--raw", "--minify", "-o", "json"]),
    )
    .unwrap();
    let admin_user = admin["users"][0]["user"].clone();
    let sched_admin = endpoint_kubeconfig(&server, sched_port, admin_user.clone(), "s");
    let cm_admin = endpoint_kubeconfig(&server, cm_port, admin_user, "c");
    let metrics = testkit::wait_for("the scheduler's metrics", 30, || {
        let (ok, out, _) = raw(&server, &sched_admin, "/metrics");
        (ok && out.contains("scheduler_schedule_attempts_total")).then_some(out)
    });
    // Without leader election, no leader series.
    assert!(
        metrics.contains("result=\"scheduled\"} 1\n") && !metrics.contains("leader_election"),
        "{metrics}"
    );
    // The in-process clients' requests, under the server's address (the binding's POST).
    assert_client_metrics(&metrics, server.port);
    let (ok, out, err) = raw(&server, &cm_admin, "/metrics");
    assert!(
        ok && out.contains("workqueue_adds_total{name=\"replicaset\"}"),
        "{err}"
    );
    // Their /configz, without leader election (one server on SQLite).
    let (ok, out, err) = raw(&server, &sched_admin, "/configz");
    assert!(ok, "{err}");
    let configz: Value = serde_json::from_str(&out).unwrap();
    let c = &configz["componentconfig"];
    assert_eq!(c["leaderElection"]["leaderElect"], false, "{configz}");
    assert_eq!(c["profiles"][0]["schedulerName"], "default-scheduler");
    let (ok, out, err) = raw(&server, &cm_admin, "/configz");
    assert!(ok, "{err}");
    let configz: Value = serde_json::from_str(&out).unwrap();
    let c = &configz["kubecontrollermanager.config.k8s.io"];
    assert_eq!(
        c["Generic"]["LeaderElection"]["LeaderElect"], false,
        "{configz}"
    );
    assert!(
        c["Generic"]["ClientConnection"]["Kubeconfig"]
            .as_str()
            .is_some_and(|k| k.ends_with("controller.kubeconfig")),
        "{configz}"
    );
    // The loopback only.
    assert_eq!(
        std::net::TcpListener::bind(("127.0.0.1", cm_port))
            .err()
            .map(|e| e.kind()),
        Some(std::io::ErrorKind::AddrInUse)
    );
    // A second server wanting the same port does not start.
    let err = testkit::server_start_error(&["--scheduler-secure-port", &sched]);
    assert!(
        err.contains(&format!("failed to listen on 127.0.0.1:{sched_port}")),
        "{err}"
    );
}

/// `--controllers` chooses the controllers the controller manager runs, as upstream's:
/// one left off is not on `/healthz` and does nothing; an unknown name stops start-up.
#[test]
fn the_controllers_flag_chooses_what_runs() {
    let cm_port = testkit::free_port();
    let server = RkubeServer::start_with(&[
        "--controllers",
        "*,-deployment",
        "--controller-manager-secure-port",
        &cm_port.to_string(),
    ]);
    let checks = testkit::wait_for("the controller manager's checks", 30, || {
        let (code, checks) = curl(cm_port, "/healthz?verbose");
        (code == 200 && checks.contains("[+]replicaset-controller ok")).then_some(checks)
    });
    assert!(!checks.contains("deployment-controller"), "{checks}");
    create_web(&server);
    // A bare ReplicaSet still gets its pods: the ReplicaSet controller runs.
    apply(
        &server,
        &json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": "bare", "namespace": "default"},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "bare"}},
                "template": {"metadata": {"labels": {"app": "bare"}},
                    "spec": {"containers": [{"name": "c", "image": "registry.local/web:1"}]}}}}),
    );
    wait_for("the bare ReplicaSet's pod", 30, || {
        !items(get(&server, &["pods", "-l", "app=bare"])).is_empty()
    });
    // No ReplicaSet was made for the Deployment.
    let sets = items(get(&server, &["replicasets"]));
    assert!(
        sets.iter().all(|rs| rs["metadata"]["name"] == "bare"),
        "{sets:?}"
    );
    let err = testkit::server_start_error(&["--controllers", "*,-nope"]);
    assert!(
        err.contains("\"nope\" is not in the list of known controllers"),
        "{err}"
    );
}

/// `rkube controller-manager` and `rkube scheduler` run as their own processes, and each
/// serves `/healthz` to anyone and `/metrics` to whom the API server authorizes
/// (delegated authentication and authorization, as upstream's 10257 and 10259).
#[test]
fn standalone_components_serve_health_and_authorized_metrics() {
    let server = RkubeServer::start_with(&["--disable-scheduler", "--disable-controller-manager"]);
    let _sim = SimNodes::start(&server, "a", &["--count", "1"]);
    let (cm_port, sched_port) = (testkit::free_port(), testkit::free_port());
    // Its Lease named and timed by the --leader-elect-* flags, as upstream's.
    let _cm = Proc::component(
        &server,
        "controller-manager",
        "controller.kubeconfig",
        "one",
        &[
            "--leader-elect-resource-name",
            "cm-lock",
            "--leader-elect-lease-duration",
            "30s",
            "--leader-elect-renew-deadline",
            "20s",
        ],
        cm_port,
    );
    // The scheduler asks for authorizations with an identity that may not: upstream's
    // --authorization-kubeconfig (its tokens still reviewed with its own identity).
    server.kubectl_ok(None, &["create", "serviceaccount", "nobody"]);
    let token = server.kubectl_ok(None, &["create", "token", "nobody"]);
    let nobody = api_kubeconfig(&server, json!({"token": token.trim()}), "nobody");
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("scheduler.yaml");
    std::fs::write(
        &config,
        // The file's leaderElection names the scheduler's Lease and times it.
        format!(
            "{BIN_PACKER}podInitialBackoffSeconds: 2\nleaderElection:\n  resourceName: sched-lock\n  \
             leaseDuration: 20s\n  renewDeadline: 15s\n  retryPeriod: 3s\n"
        ),
    )
    .unwrap();
    let _sched = Proc::component(
        &server,
        "scheduler",
        "scheduler.kubeconfig",
        "one",
        &[
            "--authorization-kubeconfig",
            nobody.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ],
        sched_port,
    );
    // (The node's taints are the controller manager's to lift.)
    nodes_schedulable(&server, 1);
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    create_web(&server);
    wait_for("the deployment's pod running", 60, || {
        live_pods(&server, "app=web")
            .iter()
            .any(|p| p["status"]["phase"] == "Running")
    });
    // The admin (system:masters, a client certificate of the cluster's CA).
    let admin: Value = serde_json::from_str(
        &server.kubectl_ok(None, &["config", "view", "--raw", "--minify", "-o", "json"]),
    )
    .unwrap();
    let admin_user = admin["users"][0]["user"].clone();
    assert!(
        admin_user["client-certificate-data"].is_string(),
        "{admin_user}"
    );
    let cm_admin = endpoint_kubeconfig(&server, cm_port, admin_user.clone(), "cm-admin");
    let sched_admin = endpoint_kubeconfig(&server, sched_port, admin_user, "sched-admin");
    let cm_metrics = testkit::wait_for("the controller manager's metrics", 30, || {
        let (ok, out, _) = raw(&server, &cm_admin, "/metrics");
        (ok && out.contains("workqueue_adds_total{name=\"deployment\"}")).then_some(out)
    });
    assert!(
        cm_metrics.contains("workqueue_adds_total{name=\"replicaset\"} "),
        "{cm_metrics}"
    );
    assert!(cm_metrics.contains("rkube_informer_subscriber_backlog{kind=\"Pod\""));
    assert!(
        cm_metrics.contains("leader_election_master_status{name=\"kube-controller-manager\"} 1\n"),
        "{cm_metrics}"
    );
    assert!(cm_metrics.contains("process_resident_memory_bytes "));
    let sched_metrics = raw(&server, &sched_admin, "/metrics").1;
    assert!(
        sched_metrics.contains("leader_election_master_status{name=\"kube-scheduler\"} 1\n"),
        "{sched_metrics}"
    );
    assert_client_metrics(&cm_metrics, server.port);
    assert_client_metrics(&sched_metrics, server.port);
    // Their configurations, as upstream's /configz: the scheduler's file with upstream's
    // defaults merged in, the controller manager's settings.
    let configz = |kubeconfig: &std::path::Path, name: &str| -> Value {
        let (ok, out, err) = raw(&server, kubeconfig, "/configz");
        assert!(ok, "{err}");
        serde_json::from_str::<Value>(&out).unwrap()[name].take()
    };
    let sched_config = configz(&sched_admin, "componentconfig");
    assert_eq!(sched_config["kind"], "KubeSchedulerConfiguration");
    assert_eq!(
        sched_config["leaderElection"],
        json!({"leaderElect": true, "leaseDuration": "20s", "renewDeadline": "15s",
            "retryPeriod": "3s", "resourceLock": "leases", "resourceName": "sched-lock",
            "resourceNamespace": "kube-system"})
    );
    assert_eq!(sched_config["podInitialBackoffSeconds"], 2);
    assert_eq!(sched_config["podMaxBackoffSeconds"], 10);
    let bin_packer = &sched_config["profiles"][1];
    assert_eq!(bin_packer["schedulerName"], "bin-packer");
    assert_eq!(
        bin_packer["pluginConfig"][0]["args"]["scoringStrategy"],
        json!({"type": "MostAllocated", "resources": [
            {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}),
        "{sched_config}"
    );
    assert_eq!(
        bin_packer["plugins"]["multiPoint"]["enabled"][4],
        json!({"name": "TaintToleration", "weight": 3})
    );
    let cm_config = configz(&cm_admin, "kubecontrollermanager.config.k8s.io");
    assert_eq!(
        cm_config["Generic"]["LeaderElection"]["ResourceName"],
        "cm-lock"
    );
    assert_eq!(
        cm_config["Generic"]["LeaderElection"]["LeaseDuration"],
        "30s"
    );
    // The Leases they hold, with those durations.
    for (lease, seconds) in [("sched-lock", 20), ("cm-lock", 30)] {
        let l = get(&server, &["lease", "-n", "kube-system", lease]);
        assert_eq!(l["spec"]["leaseDurationSeconds"], seconds, "{l}");
    }
    assert_eq!(cm_config["NodeIPAMController"]["NodeCIDRMaskSize"], 24);
    assert_eq!(cm_config["Generic"]["Controllers"], json!(["*"]));
    assert_eq!(
        cm_config["NodeLifecycleController"]["NodeMonitorGracePeriod"],
        "50s"
    );
    assert!(
        sched_metrics.contains(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"} 1\n"
        ),
        "{sched_metrics}"
    );
    // The checks, as upstream's: the leader election on both, each started controller
    // on the controller manager's /healthz, shutdown and handler sync on the scheduler's
    // /readyz, ping on its /livez.
    let (code, cm_checks) = curl(cm_port, "/healthz?verbose");
    assert_eq!(code, 200);
    assert!(
        cm_checks.starts_with("[+]leaderElection ok\n[+]replicaset-controller ok\n")
            && cm_checks.contains("[+]garbage-collector-controller ok\n")
            && cm_checks.ends_with("[+]node-lifecycle-controller ok\nhealthz check passed\n"),
        "{cm_checks}"
    );
    assert_eq!(
        curl(sched_port, "/readyz?verbose"),
        (
            200,
            "[+]leaderElection ok\n[+]shutdown ok\n[+]sched-handler-sync ok\nreadyz check passed\n"
                .to_string()
        )
    );
    assert_eq!(
        curl(sched_port, "/livez?verbose"),
        (200, "[+]ping ok\nlivez check passed\n".to_string())
    );
    assert_eq!(
        curl(sched_port, "/readyz?verbose&exclude=shutdown&exclude=nope"),
        (
            200,
            "[+]leaderElection ok\n[+]shutdown excluded: ok\n[+]sched-handler-sync ok\nwarn: some health checks cannot be excluded: no matches for \"nope\"\nreadyz check passed\n"
                .to_string()
        )
    );
    // One check alone is not a public path: the admin reads it, anonymous callers not.
    assert_eq!(
        raw(&server, &sched_admin, "/readyz/sched-handler-sync").1,
        "ok"
    );
    assert_eq!(raw(&server, &cm_admin, "/healthz/leaderElection").1, "ok");
    assert_eq!(curl(sched_port, "/readyz/sched-handler-sync").0, 403);
    let (ok, _, err) = raw(&server, &cm_admin, "/healthz/nope");
    assert!(!ok && err.contains("NotFound"), "{err}");
    // Each check an endpoint ran is an SLI (/metrics/slis, authorized as /metrics).
    let (ok, slis, err) = raw(&server, &sched_admin, "/metrics/slis");
    assert!(
        ok && slis.contains("kubernetes_healthcheck{name=\"sched-handler-sync\",type=\"readyz\"} 1\n")
            && slis.contains(
                "kubernetes_healthchecks_total{name=\"shutdown\",status=\"success\",type=\"readyz\"} "
            ),
        "{err}{slis}"
    );
    let (ok, slis, err) = raw(&server, &cm_admin, "/metrics/slis");
    assert!(
        ok && slis.contains(
            "kubernetes_healthcheck{name=\"replicaset-controller\",type=\"healthz\"} 1\n"
        ),
        "{err}{slis}"
    );
    assert_eq!(curl(sched_port, "/metrics/slis").0, 403);
    // Health for anyone, without credentials (curl: kubectl would prompt for a
    // password); /livez and /readyz on the scheduler only.
    assert_eq!(curl(cm_port, "/healthz"), (200, "ok".to_string()));
    for path in ["/healthz", "/livez", "/readyz"] {
        assert_eq!(curl(sched_port, path), (200, "ok".to_string()), "{path}");
    }
    assert_eq!(curl(cm_port, "/readyz").0, 404);
    assert_eq!(
        curl(sched_port, "/healthz?verbose"),
        (
            200,
            "[+]leaderElection ok\nhealthz check passed\n".to_string()
        )
    );
    // Metrics are not for anonymous callers: upstream's Status.
    let (code, body) = curl(cm_port, "/metrics");
    assert_eq!(code, 403);
    let status: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["reason"], "Forbidden");
    assert_eq!(
        status["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/metrics\""
    );
    // …nor for a service account RBAC does not grant the path; one it grants reads
    // them (a TokenReview, then a SubjectAccessReview, through the API server).
    let as_account = |port: u16, account: &str| {
        let token = server.kubectl_ok(None, &["create", "token", account]);
        endpoint_kubeconfig(&server, port, json!({"token": token.trim()}), account)
    };
    let denied = as_account(sched_port, "default");
    let (ok, _, err) = raw(&server, &denied, "/metrics");
    assert!(
        !ok && err.contains(
            "Error from server (Forbidden): forbidden: User \"system:serviceaccount:default:default\" cannot get path \"/metrics\""
        ),
        "{err}"
    );
    server.kubectl_ok(None, &["create", "serviceaccount", "reader"]);
    server.kubectl_ok(
        None,
        &[
            "create",
            "clusterrole",
            "metrics-reader",
            "--verb=get",
            "--non-resource-url=/metrics",
        ],
    );
    server.kubectl_ok(
        None,
        &[
            "create",
            "clusterrolebinding",
            "metrics-reader",
            "--clusterrole=metrics-reader",
            "--serviceaccount=default:reader",
        ],
    );
    let reader = as_account(cm_port, "reader");
    let (ok, out, err) = raw(&server, &reader, "/metrics");
    assert!(
        ok && out.contains("workqueue_depth{name=\"replicaset\"}"),
        "{err}"
    );
    // The scheduler's reviews, made as `nobody`, fail: denied, though RBAC grants it.
    let (ok, _, err) = raw(&server, &as_account(sched_port, "reader"), "/metrics");
    assert!(!ok && err.contains("(Forbidden)"), "{err}");
    // The path is all it was granted.
    let (ok, _, err) = raw(&server, &reader, "/configz");
    assert!(!ok && err.contains("cannot get path \"/configz\""), "{err}");
    // A bad token is refused outright.
    let bad = endpoint_kubeconfig(&server, sched_port, json!({"token": "not-a-token"}), "bad");
    let (ok, _, err) = raw(&server, &bad, "/healthz");
    assert!(!ok && err.contains("Unauthorized"), "{err}");
    // A second controller manager on the same port fails to start, saying why.
    let mut second = Proc::component(
        &server,
        "controller-manager",
        "controller.kubeconfig",
        "two",
        &[],
        cm_port,
    );
    let status = second.child.wait().unwrap();
    assert!(!status.success());
    let log = std::fs::read_to_string(&second.log).unwrap();
    assert!(
        log.contains(&format!("failed to listen on 0.0.0.0:{cm_port}")),
        "{log}"
    );
}

/// A component's `/metrics` has client-go's `rest_client_*` series of its requests to the
/// server on `port`: created objects (a binding, a pod) and timed reads.
fn assert_client_metrics(metrics: &str, port: u16) {
    let host = format!("host=\"127.0.0.1:{port}\"");
    let created = format!("rest_client_requests_total{{code=\"201\",{host},method=\"POST\"}} ");
    let timed = format!("rest_client_request_duration_seconds_count{{{host},verb=\"GET\"}} ");
    let sized = format!("rest_client_response_size_bytes_count{{{host},verb=\"POST\"}} ");
    for series in [created, timed, sized] {
        let count: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(series.as_str()))
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {series}in\n{metrics}"));
        assert!(count >= 1, "{series}{count}");
    }
    assert!(metrics.contains("# TYPE rest_client_requests_total counter\n"));
}
