//! The pod lifecycle against a real `rkube server` (control plane only) and the real
//! kubectl, with the in-memory CRI runtime (`cri::fake::FakeRuntime`): a pod bound to the
//! node runs (sandbox, container, Running/Ready with the sandbox's IP, Created/Started
//! events in `kubectl describe`), a container exiting 1 twice ends in CrashLoopBackOff,
//! a restarted agent adopts what runs (no second sandbox) and removes orphans, and
//! `kubectl delete pod` completes through the kubelet's graceful stop and final delete,
//! which waits until the pod's cgroup is removed.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use cri::RuntimeService;
use cri::fake::FakeRuntime;
use k8s_openapi::api::core::v1::Pod;
use kube::Client;
use kubelet::pod::{PodContext, run};
use kubelet::{CgroupManager, Error, KubeletConfig, PodVolumes, VolumeManager};
use serde_json::{Value, json};
use testkit::RkubeServer;

/// Every volume of a pod is an empty directory under the test's root.
struct DirVolumes(std::path::PathBuf);

#[async_trait]
impl VolumeManager for DirVolumes {
    async fn setup(&self, pod: &Pod) -> Result<PodVolumes, Error> {
        let uid = pod.metadata.uid.clone().unwrap_or_default();
        let mut v = PodVolumes::default();
        for vol in pod
            .spec
            .as_ref()
            .and_then(|s| s.volumes.as_ref())
            .into_iter()
            .flatten()
        {
            let dir = self.0.join(&uid).join(&vol.name);
            std::fs::create_dir_all(&dir).unwrap();
            v.paths.insert(vol.name.clone(), dir);
        }
        Ok(v)
    }
    async fn teardown(&self, pod_uid: &str) -> Result<(), Error> {
        let _ = std::fs::remove_dir_all(self.0.join(pod_uid));
        Ok(())
    }
}

struct NoCgroups;

impl CgroupManager for NoCgroups {
    fn ensure_pod(&self, pod: &Pod) -> Result<String, Error> {
        Ok(format!(
            "/kubepods/besteffort/pod{}",
            pod.metadata.uid.as_deref().unwrap_or_default()
        ))
    }
    fn remove_pod(&self, _pod: &Pod) -> Result<(), Error> {
        Ok(())
    }
}

const NODE: &str = "pods-node";

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("RKUBE_TEST_LOG")
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("kubelet=info")),
        )
        .with_test_writer()
        .try_init();
}

async fn client(server: &RkubeServer) -> Client {
    runtime::client_from(&server.kubeconfig).await.unwrap()
}

fn start_kubelet(
    client: Client,
    fake: &Arc<FakeRuntime>,
    root: &std::path::Path,
) -> (
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
    Arc<kubelet::pod::Metrics>,
) {
    let (stop, handle, metrics, _) = start_kubelet_with(client, fake, root, Arc::new(NoCgroups));
    (stop, handle, metrics)
}

/// As [`start_kubelet`], with a cgroup manager of the test's; also returns the pods the
/// lifecycle sees (the kubelet API's `/pods`).
fn start_kubelet_with(
    client: Client,
    fake: &Arc<FakeRuntime>,
    root: &std::path::Path,
    cgroups: Arc<dyn CgroupManager>,
) -> (
    tokio::sync::watch::Sender<bool>,
    tokio::task::JoinHandle<()>,
    Arc<kubelet::pod::Metrics>,
    kubelet::pod::PodView,
) {
    let mut config = KubeletConfig::new(NODE, root.join("kubelet"), IpAddr::from([127, 0, 0, 1]));
    config.pod_log_dir = root.join("logs");
    let resolv = root.join("resolv.conf");
    std::fs::write(&resolv, "nameserver 1.1.1.1\nsearch example.com\n").unwrap();
    config.resolv_conf = resolv;
    config.sync_frequency = Duration::from_secs(10);
    let ctx = PodContext::new(
        Arc::new(config),
        client,
        Arc::clone(fake) as Arc<dyn RuntimeService>,
        Arc::clone(fake) as Arc<dyn cri::ImageService>,
        Arc::new(DirVolumes(root.join("volumes"))),
        cgroups,
    );
    let metrics = Arc::clone(&ctx.metrics);
    let view = ctx.pods.clone();
    let (tx, rx) = tokio::sync::watch::channel(false);
    let handle = tokio::spawn(async move {
        run(ctx, rx).await.unwrap();
    });
    (tx, handle, metrics, view)
}

/// Polls `f` every 200 ms for up to `secs`.
async fn wait_for<T>(
    what: &str,
    secs: u64,
    server: &RkubeServer,
    mut f: impl FnMut() -> Option<T>,
) -> T {
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        if std::time::Instant::now() > deadline {
            panic!(
                "timed out waiting for {what}; server log:\n{}",
                server.log_tail()
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn pod_json(server: &RkubeServer, name: &str) -> Option<Value> {
    server.try_get_json(&["pod", name])
}

fn condition(pod: &Value, t: &str) -> Option<String> {
    pod["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == t)
        .and_then(|c| c["status"].as_str().map(str::to_string))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pod_lifecycle_with_kubectl() {
    init_tracing();
    let server = tokio::task::block_in_place(RkubeServer::start);
    let dir = tempfile::tempdir().unwrap();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/os": "linux"}},
    });
    tokio::task::block_in_place(|| server.create_json(&node));
    let fake = Arc::new(FakeRuntime::new().with_images(["docker.io/library/nginx:1.25"]));
    let c = client(&server).await;
    let (stop, handle, metrics) = start_kubelet(c.clone(), &fake, dir.path());

    // A pod bound to the node, with the real kubectl.
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 5,
            "containers": [{
                "name": "nginx", "image": "nginx:1.25",
                "env": [{"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                "ports": [{"containerPort": 80}],
            }],
        },
    });
    tokio::task::block_in_place(|| server.create_json(&pod));
    let running = wait_for("web Running and Ready", 60, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "web"))?;
        (p["status"]["phase"] == "Running" && condition(&p, "Ready").as_deref() == Some("True"))
            .then_some(p)
    })
    .await;
    let ip = running["status"]["podIP"].as_str().unwrap().to_string();
    assert!(ip.starts_with("10.88."), "{ip}");
    assert_eq!(running["status"]["hostIP"], "127.0.0.1");
    assert_eq!(running["status"]["qosClass"], "BestEffort");
    let cs = &running["status"]["containerStatuses"][0];
    assert!(
        cs["containerID"]
            .as_str()
            .unwrap()
            .starts_with("containerd://")
            || cs["containerID"].as_str().unwrap().contains("://")
    );
    assert_eq!(cs["ready"], true);
    assert_eq!(cs["restartCount"], 0);
    assert_eq!(metrics.pod_starts(), 1);
    assert!(
        metrics
            .render()
            .contains("kubelet_pod_start_duration_seconds_count 1")
    );
    let wide = tokio::task::block_in_place(|| {
        server.kubectl_ok(Some("1.33"), &["get", "pod", "web", "-o", "wide"])
    });
    assert!(
        wide.contains("Running") && wide.contains("1/1") && wide.contains(&ip),
        "{wide}"
    );

    // The sandbox and container got full configs.
    let sandboxes = fake.sandboxes();
    assert_eq!(sandboxes.len(), 1);
    let sb = &sandboxes[0].config;
    assert_eq!(sb.labels["io.kubernetes.pod.name"], "web");
    assert_eq!(sb.hostname, "web");
    assert_eq!(sb.dns_config.as_ref().unwrap().servers, vec!["10.43.0.10"]);
    let containers = fake.containers();
    assert_eq!(containers.len(), 1);
    let cc = &containers[0].config;
    assert!(
        cc.envs.iter().any(|kv| kv.key == "MY_IP" && kv.value == ip),
        "{:?}",
        cc.envs
    );
    assert!(
        cc.envs.iter().any(|kv| kv.key == "KUBERNETES_SERVICE_HOST"),
        "{:?}",
        cc.envs
    );
    assert_eq!(cc.log_path, "nginx/0.log");

    let describe = wait_for("Created/Started events", 30, &server, || {
        let d = tokio::task::block_in_place(|| {
            server.kubectl_ok(Some("1.33"), &["describe", "pod", "web"])
        });
        (d.contains("Created container") && d.contains("Started container nginx")).then_some(d)
    })
    .await;
    assert!(
        describe.contains("already present on machine"),
        "{describe}"
    );

    // Crash: the first exit restarts at once, the second backs off.
    let first = containers[0].status.id.clone();
    fake.exit_container(&first, 1, "").unwrap();
    let second = wait_for("a restarted container", 30, &server, || {
        fake.containers()
            .into_iter()
            .find(|c| {
                c.status.id != first
                    && c.status.state == cri::v1::ContainerState::ContainerRunning as i32
            })
            .map(|c| c.status.id)
    })
    .await;
    fake.exit_container(&second, 1, "").unwrap();
    let crashing = wait_for("CrashLoopBackOff", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "web"))?;
        (p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "CrashLoopBackOff")
            .then_some(p)
    })
    .await;
    let cs = &crashing["status"]["containerStatuses"][0];
    assert_eq!(cs["restartCount"], 1);
    assert_eq!(cs["lastState"]["terminated"]["exitCode"], 1);
    let msg = cs["state"]["waiting"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("back-off 10s restarting failed container=nginx pod=web_default("),
        "{msg}"
    );
    let get =
        tokio::task::block_in_place(|| server.kubectl_ok(Some("1.33"), &["get", "pod", "web"]));
    assert!(get.contains("CrashLoopBackOff"), "{get}");
    // After the back-off it runs again.
    wait_for("restart after back-off", 40, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "web"))?;
        (p["status"]["containerStatuses"][0]["restartCount"] == 2
            && p["status"]["containerStatuses"][0]["state"]["running"].is_object())
        .then_some(())
    })
    .await;

    // Agent restart: the running pod is adopted, orphans are removed.
    stop.send(true).unwrap();
    let _ = handle.await;
    let orphan_cfg = cri::v1::PodSandboxConfig {
        metadata: Some(cri::v1::PodSandboxMetadata {
            name: "ghost".into(),
            uid: "ghost-uid".into(),
            namespace: "default".into(),
            attempt: 0,
        }),
        labels: [
            ("io.kubernetes.pod.uid".to_string(), "ghost-uid".to_string()),
            ("io.kubernetes.pod.name".to_string(), "ghost".to_string()),
            (
                "io.kubernetes.pod.namespace".to_string(),
                "default".to_string(),
            ),
        ]
        .into(),
        ..Default::default()
    };
    let ghost = fake.run_pod_sandbox(&orphan_cfg, "").await.unwrap();
    fake.clear_calls();
    let (stop, handle, _metrics) = start_kubelet(c.clone(), &fake, dir.path());
    wait_for("orphan removed", 30, &server, || {
        fake.sandbox(&ghost).is_none().then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let calls = fake.calls();
    assert!(!calls.iter().any(|c| c == "RunPodSandbox"), "{calls:?}");
    assert!(!calls.iter().any(|c| c == "CreateContainer"), "{calls:?}");
    let p = tokio::task::block_in_place(|| pod_json(&server, "web")).unwrap();
    assert_eq!(p["status"]["phase"], "Running");
    assert_eq!(p["status"]["podIP"], ip.as_str());

    // Delete: graceful stop, sandbox removed, the kubelet's final delete.
    fake.clear_calls();
    tokio::task::block_in_place(|| {
        server.kubectl_ok(Some("1.33"), &["delete", "pod", "web", "--timeout=60s"])
    });
    assert!(tokio::task::block_in_place(|| pod_json(&server, "web")).is_none());
    let calls = fake.calls();
    assert!(calls.iter().any(|c| c == "StopContainer"), "{calls:?}");
    assert!(calls.iter().any(|c| c == "StopPodSandbox"), "{calls:?}");
    assert!(calls.iter().any(|c| c == "RemovePodSandbox"), "{calls:?}");
    assert!(fake.sandboxes().is_empty());
    let describe_events = tokio::task::block_in_place(|| {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "get",
                "events",
                "--field-selector",
                "involvedObject.name=web",
                "-o",
                "json",
            ],
        )
    });
    assert!(describe_events.contains("Killing"), "{describe_events}");
    assert!(describe_events.contains("BackOff"), "{describe_events}");

    stop.send(true).unwrap();
    let _ = handle.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rejected_failing_and_finished_pods() {
    init_tracing();
    let server = tokio::task::block_in_place(RkubeServer::start);
    let dir = tempfile::tempdir().unwrap();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE},
    });
    tokio::task::block_in_place(|| server.create_json(&node));
    // The Node's allocatable (status subresource).
    tokio::task::block_in_place(|| {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "patch", "node", NODE, "--subresource=status", "--type=merge", "-p",
                r#"{"status":{"capacity":{"cpu":"1","memory":"1Gi","pods":"10"},"allocatable":{"cpu":"1","memory":"1Gi","pods":"10"}}}"#,
            ],
        )
    });
    let fake = Arc::new(FakeRuntime::new().with_images(["docker.io/library/busybox:1.36"]));
    fake.fail_pull(
        "registry.invalid/nope:1",
        cri::Error::Status(tonic::Status::not_found("pull access denied")),
    );
    let c = client(&server).await;
    let (stop, handle, _metrics) = start_kubelet(c.clone(), &fake, dir.path());
    let mk = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["nodeName"] = json!(NODE);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    };
    // Too big for the node.
    tokio::task::block_in_place(|| {
        server.create_json(&mk(
            "big",
            json!({"containers": [{"name": "c", "image": "busybox:1.36",
            "resources": {"requests": {"cpu": "2"}}}]}),
        ))
    });
    // An image that cannot be pulled.
    tokio::task::block_in_place(|| {
        server.create_json(&mk(
            "nopull",
            json!({"containers": [{"name": "c", "image": "registry.invalid/nope:1"}]}),
        ))
    });
    // A job-like pod that finishes.
    tokio::task::block_in_place(|| {
        server.create_json(&mk("once", json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]})))
    });
    let big = wait_for("big rejected", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "big"))?;
        (p["status"]["phase"] == "Failed").then_some(p)
    })
    .await;
    assert_eq!(big["status"]["reason"], "OutOfcpu");
    assert_eq!(
        big["status"]["message"],
        "Pod was rejected: Node didn't have enough resource: cpu, requested: 2000, used: 0, capacity: 1000"
    );
    wait_for("ErrImagePull/ImagePullBackOff", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "nopull"))?;
        let r = p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
            .as_str()?
            .to_string();
        (r == "ImagePullBackOff" || r == "ErrImagePull").then_some(())
    })
    .await;
    wait_for("ImagePullBackOff", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "nopull"))?;
        (p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff")
            .then_some(())
    })
    .await;
    // The job-like pod: its container exits 0 → Succeeded, and stays so.
    let once_id = wait_for("once running", 30, &server, || {
        fake.containers()
            .into_iter()
            .find(|c| {
                c.config
                    .labels
                    .get("io.kubernetes.pod.name")
                    .map(String::as_str)
                    == Some("once")
            })
            .map(|c| c.status.id)
    })
    .await;
    fake.exit_container(&once_id, 0, "").unwrap();
    let done = wait_for("once Succeeded", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "once"))?;
        (p["status"]["phase"] == "Succeeded").then_some(p)
    })
    .await;
    assert_eq!(
        done["status"]["containerStatuses"][0]["state"]["terminated"]["reason"],
        "Completed"
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        fake.containers()
            .iter()
            .filter(|c| c
                .config
                .labels
                .get("io.kubernetes.pod.name")
                .map(String::as_str)
                == Some("once"))
            .count(),
        1,
        "a finished Never pod is not restarted"
    );
    // Deleting the rejected and finished pods completes too.
    tokio::task::block_in_place(|| {
        server.kubectl_ok(
            Some("1.33"),
            &["delete", "pod", "big", "once", "nopull", "--timeout=60s"],
        )
    });
    stop.send(true).unwrap();
    let _ = handle.await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn probes_hooks_init_containers_and_deadlines() {
    init_tracing();
    let server = tokio::task::block_in_place(RkubeServer::start);
    let dir = tempfile::tempdir().unwrap();
    let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": NODE}});
    tokio::task::block_in_place(|| server.create_json(&node));
    let fake = Arc::new(FakeRuntime::new().with_images(["docker.io/library/busybox:1.36"]));
    fake.set_exec_result("hook-fails", 1, "", "boom");
    let c = client(&server).await;
    let (stop, handle, _metrics) = start_kubelet(c.clone(), &fake, dir.path());
    let mk = |name: &str, spec: Value| {
        let mut spec = spec;
        spec["nodeName"] = json!(NODE);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}, "spec": spec})
    };
    let exec_probe = |cmd: &str| json!({"exec": {"command": cmd.split(' ').collect::<Vec<_>>()}, "periodSeconds": 1, "failureThreshold": 1});
    tokio::task::block_in_place(|| {
        server.create_json(&mk(
            "probed",
            json!({"containers": [{"name": "c", "image": "busybox:1.36",
                "livenessProbe": exec_probe("check alive"),
                "readinessProbe": exec_probe("check ready")}]}),
        ));
        server.create_json(&mk(
            "inits",
            json!({"initContainers": [{"name": "i1", "image": "busybox:1.36"}],
                   "containers": [{"name": "c", "image": "busybox:1.36"}]}),
        ));
        server.create_json(&mk(
            "hooked",
            json!({"containers": [{"name": "c", "image": "busybox:1.36",
                "lifecycle": {"postStart": {"exec": {"command": ["hook-fails"]}}}}]}),
        ));
        server.create_json(&mk(
            "deadline",
            json!({"activeDeadlineSeconds": 3, "containers": [{"name": "c", "image": "busybox:1.36"}]}),
        ));
    });
    tokio::task::block_in_place(|| {
        server.create_json(&mk(
            "sidecar",
            json!({"initContainers": [{"name": "proxy", "image": "busybox:1.36", "restartPolicy": "Always"}],
                   "containers": [{"name": "app", "image": "busybox:1.36"}]}),
        ))
    });
    let get = |name: &str| tokio::task::block_in_place(|| pod_json(&server, name));

    // Readiness comes from the probe; a failing liveness probe restarts the container.
    wait_for("probed Ready", 30, &server, || {
        let p = get("probed")?;
        (condition(&p, "Ready").as_deref() == Some("True")).then_some(())
    })
    .await;
    fake.set_exec_result("check ready", 1, "", "not ready");
    wait_for("probed not Ready", 30, &server, || {
        let p = get("probed")?;
        (condition(&p, "Ready").as_deref() == Some("False")).then_some(())
    })
    .await;
    fake.set_exec_result("check alive", 1, "", "dead");
    wait_for("liveness restart", 40, &server, || {
        let p = get("probed")?;
        (p["status"]["containerStatuses"][0]["restartCount"].as_i64()? >= 1).then_some(())
    })
    .await;
    let events = tokio::task::block_in_place(|| {
        server.kubectl_ok(Some("1.33"), &["describe", "pod", "probed"])
    });
    assert!(events.contains("Liveness probe failed: dead"), "{events}");
    assert!(
        events.contains("Readiness probe failed: not ready"),
        "{events}"
    );
    assert!(
        events.contains("Container c failed liveness probe, will be restarted"),
        "{events}"
    );

    // Init containers run first, one at a time.
    let init_id = wait_for("init container", 30, &server, || {
        fake.containers()
            .into_iter()
            .find(|c| c.config.metadata.as_ref().is_some_and(|m| m.name == "i1"))
            .map(|c| c.status.id)
    })
    .await;
    let p = get("inits").unwrap();
    assert_eq!(p["status"]["phase"], "Pending");
    assert_eq!(
        p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"],
        "PodInitializing"
    );
    assert_eq!(condition(&p, "Initialized").as_deref(), Some("False"));
    fake.exit_container(&init_id, 0, "").unwrap();
    wait_for("inits Running", 30, &server, || {
        let p = get("inits")?;
        (p["status"]["phase"] == "Running"
            && condition(&p, "Initialized").as_deref() == Some("True"))
        .then_some(())
    })
    .await;

    // A failing postStart hook kills the container; it restarts per policy.
    let hooked = wait_for("FailedPostStartHook", 30, &server, || {
        let d = tokio::task::block_in_place(|| {
            server.kubectl_ok(Some("1.33"), &["describe", "pod", "hooked"])
        });
        d.contains("FailedPostStartHook").then_some(d)
    })
    .await;
    assert!(hooked.contains("PostStartHook failed"), "{hooked}");
    wait_for("PostStartHookError", 30, &server, || {
        let p = get("hooked")?;
        let w = &p["status"]["containerStatuses"][0]["state"]["waiting"];
        // PostStartHookError with upstream's message, until the back-off takes over.
        let hook_error = w["reason"] == "PostStartHookError"
            && w["message"]
                .as_str()?
                .contains("Exec lifecycle hook ([hook-fails])");
        (hook_error || w["reason"] == "CrashLoopBackOff").then_some(())
    })
    .await;

    // A sidecar starts before the app and keeps running next to it.
    let p = wait_for("sidecar pod Running", 30, &server, || {
        let p = get("sidecar")?;
        (p["status"]["phase"] == "Running" && condition(&p, "Ready").as_deref() == Some("True"))
            .then_some(p)
    })
    .await;
    let side = &p["status"]["initContainerStatuses"][0];
    assert_eq!(side["name"], "proxy");
    assert!(side["state"]["running"].is_object(), "{side}");
    assert_eq!(side["started"], true);
    assert_eq!(side["ready"], true);

    // Past activeDeadlineSeconds: Failed, DeadlineExceeded, containers stopped.
    let p = wait_for("deadline Failed", 30, &server, || {
        let p = get("deadline")?;
        (p["status"]["phase"] == "Failed").then_some(p)
    })
    .await;
    assert_eq!(p["status"]["reason"], "DeadlineExceeded");
    assert_eq!(
        p["status"]["message"],
        "Pod was active on the node longer than the specified deadline"
    );

    tokio::task::block_in_place(|| {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "delete",
                "pod",
                "probed",
                "inits",
                "hooked",
                "deadline",
                "sidecar",
                "--timeout=60s",
            ],
        )
    });
    stop.send(true).unwrap();
    let _ = handle.await;
}

/// The kubelet's final delete (grace period 0) waits until the pod's cgroup is gone
/// (upstream's `podResourcesAreReclaimed`): with the cgroup busy the pod is stopped but
/// not finally deleted; once the cgroup can be removed the kubelet deletes it. A finalizer
/// of the test's keeps the object readable after the kubelet's delete (which sets
/// `deletionGracePeriodSeconds` to 0). The pod view (`/pods`) follows the lifecycle's pods.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn final_delete_waits_for_the_pod_cgroup() {
    init_tracing();
    let server = tokio::task::block_in_place(RkubeServer::start);
    let dir = tempfile::tempdir().unwrap();
    let node = json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"kubernetes.io/os": "linux"}},
    });
    tokio::task::block_in_place(|| server.create_json(&node));
    let fake = Arc::new(FakeRuntime::new().with_images(["docker.io/library/nginx:1.25"]));
    let cgroups = Arc::new(kubelet::cgroups::FakeCgroups::new());
    let c = client(&server).await;
    let (stop, handle, _metrics, view) = start_kubelet_with(
        c.clone(),
        &fake,
        dir.path(),
        Arc::clone(&cgroups) as Arc<dyn CgroupManager>,
    );
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "held", "namespace": "default", "finalizers": ["example.com/hold"]},
        "spec": {
            "nodeName": NODE,
            "terminationGracePeriodSeconds": 1,
            "containers": [{"name": "nginx", "image": "nginx:1.25"}],
        },
    });
    tokio::task::block_in_place(|| server.create_json(&pod));
    let running = wait_for("held Running", 60, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "held"))?;
        (p["status"]["phase"] == "Running").then_some(p)
    })
    .await;
    let uid = running["metadata"]["uid"].as_str().unwrap().to_string();
    assert!(cgroups.exists(&uid));
    let seen = view.pods();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].metadata.uid.as_deref(), Some(uid.as_str()));

    // The cgroup stays busy: the pod is stopped, its status terminal, but no final delete.
    cgroups.set_busy(&uid, u32::MAX);
    tokio::task::block_in_place(|| {
        server.kubectl_ok(Some("1.33"), &["delete", "pod", "held", "--wait=false"])
    });
    wait_for("held stopped with a terminal status", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "held"))?;
        (fake.sandboxes().is_empty()
            && matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed")))
        .then_some(())
    })
    .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let p = tokio::task::block_in_place(|| pod_json(&server, "held")).unwrap();
    assert_eq!(
        p["metadata"]["deletionGracePeriodSeconds"], 1,
        "no final delete while the cgroup remains: {}",
        p["metadata"]
    );
    assert!(cgroups.exists(&uid));
    let removals = cgroups
        .calls()
        .iter()
        .filter(|c| **c == format!("remove {uid}"))
        .count();
    assert!(removals >= 3, "retried: {:?}", cgroups.calls());

    // Released: the cgroup goes, then the kubelet's final delete (grace period 0).
    cgroups.set_busy(&uid, 0);
    wait_for("the kubelet's final delete of held", 30, &server, || {
        let p = tokio::task::block_in_place(|| pod_json(&server, "held"))?;
        (p["metadata"]["deletionGracePeriodSeconds"] == 0).then_some(())
    })
    .await;
    assert!(!cgroups.exists(&uid));
    tokio::task::block_in_place(|| {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "patch",
                "pod",
                "held",
                "--type=json",
                "-p",
                r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
            ],
        )
    });
    wait_for("held deleted", 30, &server, || {
        tokio::task::block_in_place(|| pod_json(&server, "held"))
            .is_none()
            .then_some(())
    })
    .await;
    wait_for("held gone from the pod view", 10, &server, || {
        view.pods().is_empty().then_some(())
    })
    .await;

    stop.send(true).unwrap();
    let _ = handle.await;
}
