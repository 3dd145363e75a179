//! The archives against the real tools: `ctr images import` into a throwaway containerd
//! (then running the image), and `skopeo copy` into a throwaway registry.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use oci::{ImageConfig, Rootfs};

fn is_root() -> bool {
    std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false)
}

fn tool(name: &str) -> Option<PathBuf> {
    ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin", "/sbin"]
        .iter()
        .map(|d| Path::new(d).join(name))
        .find(|p| p.exists())
}

/// Skips (returns false with a message) unless root with every tool present.
fn can_run(test: &str, tools: &[&str]) -> bool {
    if !is_root() {
        eprintln!("skipping {test}: needs root");
        return false;
    }
    for t in tools {
        if tool(t).is_none() {
            eprintln!("skipping {test}: {t} not installed (scripts/install-deps.sh)");
            return false;
        }
    }
    true
}

/// A containerd of our own (socket, root, state, runc root in a temp dir; no CRI plugin),
/// killed and cleaned up on drop.
struct Containerd {
    child: Child,
    dir: tempfile::TempDir,
    address: PathBuf,
}

impl Containerd {
    fn start() -> Containerd {
        let dir = tempfile::Builder::new()
            .prefix("rkube-oci-ctrd-")
            .tempdir()
            .unwrap();
        let d = dir.path();
        let address = d.join("containerd.sock");
        let config = format!(
            "version = 2\n\
             root = \"{root}\"\n\
             state = \"{state}\"\n\
             disabled_plugins = [\"io.containerd.grpc.v1.cri\"]\n\
             [grpc]\n  address = \"{sock}\"\n\
             [ttrpc]\n  address = \"{sock}.ttrpc\"\n\
             [plugins.\"io.containerd.internal.v1.opt\"]\n  path = \"{opt}\"\n",
            root = d.join("root").display(),
            state = d.join("state").display(),
            sock = address.display(),
            opt = d.join("opt").display(),
        );
        std::fs::write(d.join("config.toml"), config).unwrap();
        let log = std::fs::File::create(d.join("containerd.log")).unwrap();
        let child = Command::new(tool("containerd").unwrap())
            .arg("--config")
            .arg(d.join("config.toml"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        let mut c = Containerd {
            child,
            dir,
            address,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if c.address.exists() && c.ctr(&["version"]).status.success() {
                return c;
            }
            if let Ok(Some(st)) = c.child.try_wait() {
                panic!("containerd exited {st}: {}", c.log());
            }
            assert!(
                Instant::now() < deadline,
                "containerd not ready: {}",
                c.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("containerd.log")).unwrap_or_default()
    }

    fn ctr_cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(tool("ctr").unwrap());
        c.arg("--address").arg(&self.address).args(args);
        c
    }

    fn ctr(&self, args: &[&str]) -> Output {
        self.ctr_cmd(args).output().unwrap()
    }

    fn ctr_ok(&self, args: &[&str]) -> String {
        let out = self.ctr(args);
        assert!(
            out.status.success(),
            "ctr {args:?}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn runc_root(&self) -> String {
        self.dir.path().join("runc").display().to_string()
    }
}

impl Drop for Containerd {
    fn drop(&mut self) {
        // Remove what the tests may have left running, then stop the daemon.
        let listed = self.ctr(&["-n", "k8s.io", "containers", "ls", "-q"]);
        for id in String::from_utf8_lossy(&listed.stdout).lines() {
            let _ = self.ctr(&["-n", "k8s.io", "task", "kill", "-s", "SIGKILL", id]);
            std::thread::sleep(Duration::from_millis(200));
            let _ = self.ctr(&["-n", "k8s.io", "task", "delete", "-f", id]);
            let _ = self.ctr(&["-n", "k8s.io", "containers", "delete", id]);
        }
        // containerd stops cleanly on SIGTERM.
        let _ = Command::new("kill")
            .arg(self.child.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.child.try_wait().ok().flatten().is_none() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
        // Unmount anything left under our directory (snapshots of running containers).
        let prefix = self.dir.path().display().to_string();
        if let Ok(mounts) = std::fs::read_to_string("/proc/self/mountinfo") {
            let mut points: Vec<&str> = mounts
                .lines()
                .filter_map(|l| l.split(' ').nth(4))
                .filter(|p| p.starts_with(&prefix))
                .collect();
            points.sort_by_key(|p| std::cmp::Reverse(p.len()));
            for p in points {
                let _ = Command::new("umount").args(["-l", p]).status();
            }
        }
    }
}

/// A root filesystem with static busybox as `/bin/busybox` and `/bin/sh`, a sticky `/tmp`.
fn busybox_rootfs(dir: &Path) -> Rootfs {
    let r = Rootfs::new(dir.join("rootfs")).unwrap();
    r.copy(Path::new("/bin/busybox"), "/bin/busybox").unwrap();
    r.symlink("/bin/sh", "busybox").unwrap();
    r.dir("/tmp", 0o1777).unwrap();
    r.file("/etc/hello", b"hello from the layer\n", 0o600)
        .unwrap();
    r
}

#[test]
fn ctr_imports_the_archive_under_its_full_name_and_runs_it() {
    if !can_run("ctr import", &["containerd", "ctr", "runc", "busybox"]) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let rootfs = busybox_rootfs(work.path());
    let archive = work.path().join("img.tar");
    let config = ImageConfig {
        cmd: vec!["sh".into()],
        env: vec![oci::DEFAULT_PATH_ENV.into()],
        ..ImageConfig::default()
    };
    let id = oci::write_archive(
        rootfs.path(),
        "docker.io/rkube/oci-test:latest",
        &config,
        std::fs::File::create(&archive).unwrap(),
    )
    .unwrap();

    let ctrd = Containerd::start();
    let a = archive.display().to_string();
    ctrd.ctr_ok(&["-n", "k8s.io", "images", "import", &a]);
    let listed = ctrd.ctr_ok(&["-n", "k8s.io", "images", "ls"]);
    let line = listed
        .lines()
        .find(|l| l.starts_with("docker.io/rkube/oci-test:latest "))
        .unwrap_or_else(|| panic!("image not listed by its full name:\n{listed}"));
    assert!(line.contains(&id.manifest_digest), "{line}");
    assert!(
        line.contains("linux/amd64") || !cfg!(target_arch = "x86_64"),
        "{line}"
    );
    // Importing again is harmless.
    ctrd.ctr_ok(&["-n", "k8s.io", "images", "import", &a]);

    // The layer unpacks with its modes and links: run a check inside it.
    let name = format!("oci-test-{}", std::process::id());
    let script = "test -k /tmp && test -x /bin/busybox && test -L /bin/sh \
                  && [ \"$(busybox cat /etc/hello)\" = 'hello from the layer' ] && exit 7";
    let out = ctrd
        .ctr_cmd(&[
            "-n",
            "k8s.io",
            "run",
            "--rm",
            "--null-io",
            "--runc-root",
            &ctrd.runc_root(),
            "docker.io/rkube/oci-test:latest",
            &name,
            "sh",
            "-c",
            script,
        ])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(7),
        "container check failed: {}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        ctrd.log()
    );
}

#[test]
fn pause_image_imports_runs_and_stops_on_sigterm() {
    if !can_run("pause image", &["containerd", "ctr", "runc"]) {
        return;
    }
    let pause_bin = testkit::rkube_binary().with_file_name("rkube-pause");
    assert!(pause_bin.exists(), "{} missing", pause_bin.display());
    let work = tempfile::tempdir().unwrap();
    let archive = work.path().join("pause.tar");
    let id = oci::pause_image(&pause_bin, std::fs::File::create(&archive).unwrap()).unwrap();
    assert_eq!(id.reference, oci::PAUSE_IMAGE);

    let ctrd = Containerd::start();
    ctrd.ctr_ok(&[
        "-n",
        "k8s.io",
        "images",
        "import",
        &archive.display().to_string(),
    ]);
    let names = ctrd.ctr_ok(&["-n", "k8s.io", "images", "ls", "-q"]);
    assert!(names.lines().any(|l| l == oci::PAUSE_IMAGE), "{names}");

    let name = format!("pause-test-{}", std::process::id());
    let mut run = ctrd
        .ctr_cmd(&[
            "-n",
            "k8s.io",
            "run",
            "--rm",
            "--null-io",
            "--runc-root",
            &ctrd.runc_root(),
            oci::PAUSE_IMAGE,
            &name,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let tasks = ctrd.ctr_ok(&["-n", "k8s.io", "tasks", "ls"]);
        if tasks
            .lines()
            .any(|l| l.starts_with(&name) && l.contains("RUNNING"))
        {
            break;
        }
        if let Some(st) = run.try_wait().unwrap() {
            let out = run.wait_with_output().unwrap();
            panic!(
                "pause exited early {st}: {}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        assert!(Instant::now() < deadline, "pause never ran: {tasks}");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Still running a moment later: it blocks.
    std::thread::sleep(Duration::from_millis(300));
    assert!(run.try_wait().unwrap().is_none());
    ctrd.ctr_ok(&["-n", "k8s.io", "tasks", "kill", "-s", "SIGTERM", &name]);
    let out = run.wait_with_output().unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "pause after SIGTERM: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn skopeo_copies_the_archive_into_a_registry() {
    if !can_run("skopeo copy", &["skopeo", "docker-registry", "busybox"]) {
        return;
    }
    let work = tempfile::tempdir().unwrap();
    let rootfs = busybox_rootfs(work.path());
    let archive = work.path().join("img.tar");
    let config = ImageConfig {
        cmd: vec!["sh".into()],
        exposed_ports: vec!["80/tcp".into()],
        ..ImageConfig::default()
    };
    let id = oci::write_archive(
        rootfs.path(),
        "docker.io/library/nginx:latest",
        &config,
        std::fs::File::create(&archive).unwrap(),
    )
    .unwrap();
    let registry = testkit::registry::Registry::start();
    registry.push(&archive, "library/nginx:latest");
    // Pushing the same archive again is idempotent.
    registry.push(&archive, "library/nginx:latest");
    let out = Command::new(tool("skopeo").unwrap())
        .args(["inspect", "--tls-verify=false"])
        .arg(format!("docker://{}/library/nginx:latest", registry.host()))
        .env("TMPDIR", work.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo inspect: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["Digest"], id.manifest_digest, "{v}");
    assert_eq!(v["Os"], "linux");
}

/// The demo nginx images (scripts/build-images.sh) run and serve their pages, logging
/// requests to stdout; the busybox image runs its applets.
#[test]
fn demo_images_run() {
    if !can_run(
        "demo images",
        &["containerd", "ctr", "runc", "busybox", "nginx"],
    ) {
        return;
    }
    let ctrd = Containerd::start();
    for (file, _) in testkit::images::DEMO_IMAGES {
        let a = testkit::images::demo_archive(file);
        ctrd.ctr_ok(&["-n", "k8s.io", "images", "import", &a.display().to_string()]);
    }
    let names = ctrd.ctr_ok(&["-n", "k8s.io", "images", "ls", "-q"]);
    for (_, reference) in testkit::images::DEMO_IMAGES {
        assert!(
            names.lines().any(|l| l == *reference),
            "{reference}: {names}"
        );
    }
    let runc_root = ctrd.runc_root();
    for (image, want) in [
        (
            "docker.io/library/nginx:latest",
            "<h1>Welcome to nginx!</h1>",
        ),
        (
            "docker.io/library/nginx:1.22-r2",
            "<h1>Welcome to nginx! (r2)</h1>",
        ),
    ] {
        let name = format!("web-{}-{}", std::process::id(), want.len());
        let log = ctrd.dir.path().join(format!("{name}.log"));
        ctrd.ctr_ok(&[
            "-n",
            "k8s.io",
            "run",
            "-d",
            "--runc-root",
            &runc_root,
            "--log-uri",
            &format!("file://{}", log.display()),
            "--mount",
            "type=bind,src=/bin/busybox,dst=/bin/busybox,options=rbind:ro",
            image,
            &name,
        ]);
        let deadline = Instant::now() + Duration::from_secs(30);
        let page = loop {
            let out = ctrd.ctr(&[
                "-n",
                "k8s.io",
                "tasks",
                "exec",
                "--exec-id",
                &format!("get-{}", Instant::now().elapsed().as_nanos()),
                &name,
                "/bin/busybox",
                "wget",
                "-qO-",
                "http://127.0.0.1/",
            ]);
            if out.status.success() {
                break String::from_utf8_lossy(&out.stdout).into_owned();
            }
            assert!(
                Instant::now() < deadline,
                "{image} never served: {}\n{}",
                String::from_utf8_lossy(&out.stderr),
                std::fs::read_to_string(&log).unwrap_or_default()
            );
            std::thread::sleep(Duration::from_millis(200));
        };
        assert!(page.contains(want), "{image}: {page}");
        // The access log is the container's stdout.
        let deadline = Instant::now() + Duration::from_secs(10);
        while !std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("\"GET / HTTP/1.1\" 200")
        {
            assert!(
                Instant::now() < deadline,
                "no access log line in {}",
                log.display()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        ctrd.ctr_ok(&["-n", "k8s.io", "tasks", "kill", "-s", "SIGKILL", &name]);
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ctrd
            .ctr(&["-n", "k8s.io", "tasks", "delete", &name])
            .status
            .success()
        {
            assert!(Instant::now() < deadline, "task {name} not deleted");
            std::thread::sleep(Duration::from_millis(100));
        }
        ctrd.ctr_ok(&["-n", "k8s.io", "containers", "delete", &name]);
    }
    let name = format!("bb-{}", std::process::id());
    let out = ctrd
        .ctr_cmd(&[
            "-n",
            "k8s.io",
            "run",
            "--rm",
            "--runc-root",
            &runc_root,
            "docker.io/library/busybox:1.36",
            &name,
            "sh",
            "-c",
            "echo hello; sleep 0.1; test -x /bin/wget && test -x /bin/nc && test -x /bin/httpd",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "busybox: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "hello");
}
