//! Air-gapped images, as k3s's image import: a docker-archive (`docker save`'s format,
//! built here by hand from the host's static busybox with `oci::write_docker_archive`)
//! imported into a running node's containerd with the real `rkube image import`, then a
//! pod with `imagePullPolicy: Never` on it runs — no registry holds that image, so
//! nothing was pulled. An image never imported fails with `ErrImageNeverPull`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::node::NodeCluster;
use testkit::{require_binary, rkube_binary, wait_for};

const KUBECTL: Option<&str> = Some("1.33");
/// Held by no registry: only the import can bring it to the node.
const IMAGE: &str = "airgap-busybox:1.0";

/// A minimal busybox root filesystem (static busybox and the applets the pod uses).
fn busybox_rootfs(dir: &Path) -> oci::Rootfs {
    let busybox = require_binary("busybox", "busybox-static");
    let root = oci::Rootfs::new(dir.join("rootfs")).unwrap();
    root.copy(&busybox, "/bin/busybox").unwrap();
    for applet in ["sh", "echo", "sleep", "cat", "ls"] {
        root.symlink(&format!("/bin/{applet}"), "busybox").unwrap();
    }
    root.file("/etc/passwd", b"root:x:0:0:root:/root:/bin/sh\n", 0o644)
        .unwrap();
    root.file("/etc/group", b"root:x:0:\n", 0o644).unwrap();
    root.dir("/tmp", 0o1777).unwrap();
    root
}

fn pod(name: &str, image: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
    "metadata": {"name": name},
    "spec": {
        "containers": [{
            "name": "c", "image": image, "imagePullPolicy": "Never",
            "command": ["sh", "-c", "echo air-gapped; sleep 3600"],
        }],
        "terminationGracePeriodSeconds": 1,
    }})
}

fn events(c: &NodeCluster, name: &str) -> Vec<String> {
    c.server.events_about(name)
}

#[test]
fn docker_archive_imported_then_run_without_pulling() {
    let c = NodeCluster::start();
    let s = &c.server;

    // The archive, as `docker save` would write it.
    let work = tempfile::tempdir().unwrap();
    let rootfs = busybox_rootfs(work.path());
    let config = oci::ImageConfig {
        cmd: vec!["sh".into()],
        env: vec![oci::DEFAULT_PATH_ENV.into()],
        ..oci::ImageConfig::default()
    };
    let archive = work.path().join("airgap.tar");
    let file = std::fs::File::create(&archive).unwrap();
    let id = oci::write_docker_archive(rootfs.path(), IMAGE, &config, file).unwrap();
    assert_eq!(id.reference, "docker.io/library/airgap-busybox:1.0");

    // The real command, aimed at the node through the server's data dir.
    let out = Command::new(rkube_binary())
        .args(["image", "import", "--data-dir"])
        .arg(s.data_dir())
        .arg(&archive)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "rkube image import: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("imported"), "{stdout}");

    // containerd names it by the archive's RepoTags, in the namespace CRI reads.
    let socket = s.data_dir().join("agent/containerd/containerd.sock");
    let listed = Command::new(require_binary("ctr", "containerd"))
        .arg("--address")
        .arg(&socket)
        .args(["-n", "k8s.io", "images", "ls", "-q"])
        .output()
        .unwrap();
    let listed = String::from_utf8_lossy(&listed.stdout);
    assert!(
        listed.lines().any(|l| l == id.reference),
        "{} not among {listed}",
        id.reference
    );

    s.create_json(&pod("airgap", IMAGE));
    s.create_json(&pod("not-imported", "airgap-busybox:2.0"));

    let deadline = Instant::now() + Duration::from_secs(60);
    let p = loop {
        let p = s.get_json(&["pod", "airgap"]);
        if p["status"]["phase"] == "Running" {
            break p;
        }
        assert!(
            Instant::now() < deadline,
            "airgap not Running: {}\nevents: {:#?}",
            p["status"],
            events(&c, "airgap")
        );
        std::thread::sleep(Duration::from_millis(300));
    };
    let st = &p["status"]["containerStatuses"][0];
    assert!(st["state"]["running"].is_object(), "{st}");
    // The image ID is the config's digest: what the archive holds, byte for byte.
    assert_eq!(st["imageID"], id.config_digest, "{st}");
    let ev = events(&c, "airgap");
    assert!(
        ev.iter()
            .any(|m| m.contains("\"Pulled\"") && m.contains("already present on machine")),
        "{ev:?}"
    );
    assert!(!ev.iter().any(|m| m.contains("Pulling image")), "{ev:?}");
    let logs = wait_for("airgap output", 20, || {
        let out = s.kubectl_v(KUBECTL, &["logs", "airgap"]);
        let t = String::from_utf8_lossy(&out.stdout).into_owned();
        t.contains("air-gapped").then_some(t)
    });
    assert_eq!(logs.trim(), "air-gapped");

    // Never pulls, so an image that was not imported cannot start.
    wait_for("not-imported: ErrImageNeverPull", 30, || {
        let p = s.get_json(&["pod", "not-imported"]);
        let reason = p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"].clone();
        (reason == "ErrImageNeverPull").then_some(())
    });
    let ev = events(&c, "not-imported");
    assert!(
        ev.iter().any(|m| m.contains(
            "Container image \\\"airgap-busybox:2.0\\\" is not present with pull policy of Never"
        )),
        "{ev:?}"
    );
}
