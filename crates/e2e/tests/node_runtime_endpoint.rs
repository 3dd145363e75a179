//! `rkube server --container-runtime-endpoint` on a containerd rkube did not start (as
//! k3s's flag): the test runs its own containerd (rkube's configuration, `docker.io`
//! mirrored to the local registry), and rkube's node uses it through its socket, writing
//! its CNI conflist where that containerd reads it (`--cni-conf-dir`) and importing the
//! pause image it lacks. A Deployment's pods run there and serve nginx; the kubelet API's
//! `/pods` lists them (the pod lifecycle's view); a deleted pod's cgroup is gone before
//! the kubelet's final delete; stopping rkube leaves that containerd and its containers
//! running.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::time::Duration;

use serde_json::Value;
use testkit::node::{CidrLease, ExternalContainerd, NodeCluster, demo_registry, http_get};
use testkit::{RkubeServer, free_port, wait_for};

const KUBECTL: Option<&str> = Some("1.33");

fn running_as_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find(|l| l.starts_with("Uid:"))
            .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
            .unwrap_or(false)
    })
}

fn ready_pods(c: &NodeCluster, selector: &str) -> Vec<Value> {
    c.server.ready_pods(selector)
}

/// `text` without the terminal colour sequences the server's log has (`ESC [ … letter`).
fn strip_ansi(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// The pod cgroup directories of pod `uid` under `/sys/fs/cgroup` (every hierarchy, every
/// QoS class).
fn pod_cgroup_dirs(uid: &str) -> Vec<PathBuf> {
    let root = PathBuf::from("/sys/fs/cgroup");
    let mut bases = vec![root.clone()];
    if let Ok(entries) = std::fs::read_dir(&root) {
        bases.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
    }
    let mut found = Vec::new();
    for base in bases {
        for qos in ["", "burstable/", "besteffort/"] {
            let d = base.join(format!("kubepods/{qos}pod{uid}"));
            if d.is_dir() {
                found.push(d);
            }
        }
    }
    found.sort();
    found.dedup();
    found
}

#[test]
fn a_node_on_an_existing_containerd() {
    if !running_as_root() {
        eprintln!("skipped: running containerd needs root");
        return;
    }
    assert!(
        std::fs::metadata("/usr/bin/containerd").is_ok(),
        "containerd is missing: run scripts/install-deps.sh (package containerd)"
    );
    // Dropped last: the containerd (its pods, mounts and bridge removed, then stopped).
    let registry = demo_registry();
    let mut ctrd = ExternalContainerd::start(&format!("http://{}", registry.host()));
    assert!(
        !ctrd
            .ctr(&["images", "ls", "-q"])
            .unwrap()
            .contains(oci::PAUSE_IMAGE),
        "the fresh containerd has no pause image yet"
    );

    let lease = CidrLease::take();
    let kubelet_port = free_port();
    let node = format!("node-{}-{kubelet_port}", lease.octet);
    let endpoint = ctrd.endpoint();
    let conf_dir = ctrd.layout.cni_conf_dir.display().to_string();
    let server = RkubeServer::start_with_agent(&[
        "--node-name",
        &node,
        "--kubelet-port",
        &kubelet_port.to_string(),
        "--node-ip",
        "127.0.0.1",
        "--cluster-cidr",
        &lease.cidr(),
        "--container-runtime-endpoint",
        &endpoint,
        "--cni-conf-dir",
        &conf_dir,
    ]);
    let mut c = NodeCluster {
        server,
        registry,
        node,
        lease,
    };
    c.wait_node_ready(Duration::from_secs(90));
    let agent_dir = c.server.data_dir().join("agent");

    // rkube started no containerd of its own; it wrote the conflist where this containerd
    // reads it and imported the pause image into it.
    assert!(
        !agent_dir.join("containerd/containerd.sock").exists()
            && !agent_dir.join("containerd/config.toml").exists(),
        "rkube must not start containerd with --container-runtime-endpoint"
    );
    let conflist = ctrd
        .layout
        .cni_conf_dir
        .join(format!("10-rkube-{}.conflist", c.node));
    assert!(
        conflist.exists(),
        "{} missing: {:?}",
        conflist.display(),
        std::fs::read_dir(&ctrd.layout.cni_conf_dir)
            .map(|d| d.flatten().map(|e| e.file_name()).collect::<Vec<_>>())
    );
    assert!(
        ctrd.ctr(&["images", "ls", "-q"])
            .unwrap()
            .contains(oci::PAUSE_IMAGE),
        "pause image not imported:\n{}",
        c.server.log_tail()
    );

    let log = strip_ansi(&std::fs::read_to_string(c.server.dir.path().join("server.log")).unwrap());
    let said = |what: &str| log.lines().any(|l| l.contains(what));
    assert!(
        said("the container runtime's configuration")
            && said(&format!("cni_conf_dir={conf_dir}"))
            && said(&format!("sandbox_image={}", oci::PAUSE_IMAGE)),
        "the runtime's configuration was not read:\n{log}"
    );
    assert!(
        said("pause image imported into the container runtime"),
        "{log}"
    );
    assert!(
        !said("another directory than the one this node writes to"),
        "{log}"
    );

    // A Deployment runs on it and serves nginx.
    let s = &c.server;
    s.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=2",
        ],
    );
    let pods = wait_for("2 ready nginx pods", 120, || {
        let ready = ready_pods(&c, "app=nginx");
        (ready.len() == 2).then_some(ready)
    });
    let node_cidr = s.get_json(&["node", &c.node])["spec"]["podCIDR"]
        .as_str()
        .unwrap()
        .to_string();
    for p in &pods {
        let ip = p["status"]["podIP"].as_str().unwrap();
        assert!(testkit::node::in_cidr(ip, &node_cidr), "{ip} ∉ {node_cidr}");
        let (code, body) = wait_for(&format!("nginx at {ip}"), 30, || {
            http_get(ip, 80, "/").ok().filter(|(c, _)| *c == 200)
        });
        assert_eq!(code, 200);
        assert!(body.contains("nginx"), "{body}");
        // The containers are this containerd's.
        let id = p["status"]["containerStatuses"][0]["containerID"]
            .as_str()
            .unwrap()
            .trim_start_matches("containerd://")
            .to_string();
        assert!(
            ctrd.ctr(&["containers", "ls", "-q"]).unwrap().contains(&id),
            "{id} not in the external containerd"
        );
    }

    // The kubelet API's `/pods`: a PodList of the pods bound to the node.
    let raw = s.kubectl_ok(
        KUBECTL,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{}/proxy/pods", c.node),
        ],
    );
    let list: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(list["kind"], "PodList");
    assert_eq!(list["apiVersion"], "v1");
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["metadata"]["name"].as_str())
        .collect();
    for p in &pods {
        let name = p["metadata"]["name"].as_str().unwrap();
        assert!(names.contains(&name), "{name} not in /pods: {names:?}");
    }
    assert!(
        list["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["spec"]["nodeName"] == c.node.as_str())
    );

    // A deleted pod's cgroup is gone before the kubelet's final delete (grace period 0);
    // a finalizer keeps the object readable after it.
    s.create_json(&serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "reclaimed", "namespace": "default",
                     "finalizers": ["example.com/hold"]},
        "spec": {"terminationGracePeriodSeconds": 2,
                 "containers": [{"name": "nginx", "image": "nginx"}]},
    }));
    let uid = wait_for("reclaimed Running", 90, || {
        let p = s.try_get_json(&["pod", "reclaimed"])?;
        (p["status"]["phase"] == "Running")
            .then(|| p["metadata"]["uid"].as_str().unwrap().to_string())
    });
    assert!(
        !pod_cgroup_dirs(&uid).is_empty(),
        "the running pod has a cgroup"
    );
    s.kubectl_ok(KUBECTL, &["delete", "pod", "reclaimed", "--wait=false"]);
    wait_for("the kubelet's final delete of reclaimed", 60, || {
        let p = s.try_get_json(&["pod", "reclaimed"])?;
        (p["metadata"]["deletionGracePeriodSeconds"] == 0).then_some(())
    });
    assert_eq!(
        pod_cgroup_dirs(&uid),
        Vec::<PathBuf>::new(),
        "pod cgroup left at the final delete"
    );
    s.kubectl_ok(
        KUBECTL,
        &[
            "patch",
            "pod",
            "reclaimed",
            "--type=json",
            "-p",
            r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
        ],
    );

    // Stopping rkube leaves the containerd it did not start, and its pods, running.
    c.server.stop_gracefully(Duration::from_secs(30));
    assert!(
        ctrd.is_running(),
        "the external containerd must outlive rkube:\n{}",
        ctrd.log()
    );
    for p in &pods {
        let ip = p["status"]["podIP"].as_str().unwrap();
        assert_eq!(
            http_get(ip, 80, "/").map(|(c, _)| c).ok(),
            Some(200),
            "{ip}"
        );
    }
}
