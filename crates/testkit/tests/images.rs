//! The demo images and the local registry: build once, push, inspect; scripts/registry.sh.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use serde_json::Value;
use testkit::images::{DEMO_IMAGES, demo_archive, demo_images, pause_archive};
use testkit::registry::{Registry, registry_answers};

fn have(tool: &str) -> bool {
    ["/usr/bin", "/usr/sbin", "/bin", "/sbin"]
        .iter()
        .any(|d| Path::new(d).join(tool).exists())
}

fn skip(test: &str) -> bool {
    for t in ["skopeo", "docker-registry", "nginx", "busybox", "curl"] {
        if !have(t) {
            eprintln!("skipping {test}: {t} missing (scripts/install-deps.sh)");
            return true;
        }
    }
    false
}

fn inspect(host: &str, repo_tag: &str) -> Value {
    let out = Command::new("skopeo")
        .args(["inspect", "--tls-verify=false"])
        .arg(format!("docker://{host}/{repo_tag}"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo inspect {repo_tag}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn demo_images_push_to_a_registry() {
    if skip("demo_images_push_to_a_registry") {
        return;
    }
    let dir = demo_images();
    let tsv = std::fs::read_to_string(dir.join("images.tsv")).unwrap();
    for (file, reference) in DEMO_IMAGES {
        assert!(dir.join(file).is_file(), "{file}");
        assert!(tsv.contains(&format!("{file}\t{reference}")), "{tsv}");
    }
    // A second call (and a second build run) reuses the archives.
    assert_eq!(demo_images(), dir);

    let registry = Registry::start();
    registry.push(&demo_archive("nginx-latest.tar"), "library/nginx:latest");
    registry.push(&demo_archive("nginx-1.22.tar"), "library/nginx:1.22");
    registry.push(&demo_archive("nginx-1.22-r2.tar"), "library/nginx:1.22-r2");
    registry.push(
        &demo_archive("busybox-latest.tar"),
        "library/busybox:latest",
    );
    let latest = inspect(&registry.host(), "library/nginx:latest");
    let v122 = inspect(&registry.host(), "library/nginx:1.22");
    let r2 = inspect(&registry.host(), "library/nginx:1.22-r2");
    assert_eq!(
        latest["Digest"], v122["Digest"],
        "latest and 1.22 are one image"
    );
    assert_ne!(latest["Digest"], r2["Digest"], "1.22-r2 differs");
    assert_eq!(latest["Os"], "linux");
    let busybox = inspect(&registry.host(), "library/busybox:latest");
    assert_eq!(busybox["Layers"].as_array().unwrap().len(), 1);
}

#[test]
fn pause_archive_is_built() {
    let p = pause_archive();
    assert!(std::fs::metadata(&p).unwrap().len() > 1000);
}

#[test]
fn registry_script_starts_pushes_and_stops() {
    if skip("registry_script_starts_pushes_and_stops") {
        return;
    }
    let images = demo_images();
    let script = testkit::images::script("registry.sh");
    let dir = tempfile::tempdir().unwrap();
    let port = testkit::free_port().to_string();
    let run = |args: &[&str]| {
        let out = Command::new("bash")
            .arg(&script)
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "registry.sh {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let d = dir.path().to_str().unwrap();
    let imgs = images.to_str().unwrap();
    run(&["start", d, &port]);
    run(&["start", d, &port]); // idempotent
    assert_eq!(run(&["status", d]).trim(), port);
    run(&["push-demo", d, &port, imgs]);
    run(&["push-demo", d, &port, imgs]); // idempotent
    let host = format!("127.0.0.1:{port}");
    inspect(&host, "library/nginx:1.22-r2");
    inspect(&host, "library/busybox:1.36");
    run(&["stop", d]);
    run(&["stop", d]); // idempotent
    assert!(!registry_answers(port.parse().unwrap()));
}
