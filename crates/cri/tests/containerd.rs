//! The CRI client against a real containerd we run ourselves: a pod with a busybox httpd
//! served to the host over its bridge IP, exec, logs, a containerd crash and restart, and
//! clean removal. Root only (skips with a message otherwise).
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use cri::containerd::{
    ContainerdConfig, Layout, Supervisor, cleanup_mounts, import_image, remove_all_pods,
};
use cri::remote::RemoteRuntime;
use cri::{ImageService, RuntimeService, v1};

const BUSYBOX_IMAGE: &str = "docker.io/rkube/cri-test-busybox:1";

fn skip_reason() -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let uid = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(1);
    if uid != 0 {
        return Some("needs root".into());
    }
    for bin in [
        "/usr/bin/containerd",
        "/usr/bin/ctr",
        "/usr/sbin/runc",
        "/usr/lib/cni/bridge",
        "/usr/lib/cni/host-local",
        "/usr/lib/cni/portmap",
        "/usr/bin/busybox",
    ] {
        if !Path::new(bin).exists() {
            return Some(format!("{bin} is missing"));
        }
    }
    None
}

/// Test-unique names: the bridge, the CNI network and the subnet.
struct Names {
    bridge: String,
    network: String,
    subnet_prefix: String,
}

fn names() -> Names {
    let pid = std::process::id();
    Names {
        bridge: format!("rkcri{}", pid % 1_000_000),
        network: format!("rkube-cri-test-{pid}"),
        subnet_prefix: format!("10.{}.{}", 200 + (pid / 256) % 50, pid % 256),
    }
}

/// Everything the test set up, torn down on drop even when the test fails.
struct Env {
    rt: tokio::runtime::Runtime,
    layout: Layout,
    names: Names,
    supervisors: Vec<Supervisor>,
    extra_layouts: Vec<Layout>,
    registry: Option<std::process::Child>,
    dir: tempfile::TempDir,
}

impl Drop for Env {
    fn drop(&mut self) {
        if let Some(mut registry) = self.registry.take() {
            let _ = registry.kill();
            let _ = registry.wait();
        }
        let supervisors = std::mem::take(&mut self.supervisors);
        self.rt.block_on(async {
            for s in supervisors {
                if let Ok(client) = RemoteRuntime::connect(&s.endpoint(), Duration::from_secs(30)) {
                    let removal =
                        tokio::time::timeout(Duration::from_secs(60), remove_all_pods(&client))
                            .await;
                    if !matches!(removal, Ok(Ok(()))) {
                        eprintln!("cleanup: removing pods: {removal:?}");
                    }
                }
                s.stop().await;
            }
        });
        for layout in std::iter::once(&self.layout).chain(&self.extra_layouts) {
            kill_shims(&layout.socket);
            match cleanup_mounts(layout) {
                Ok(m) if !m.is_empty() => eprintln!("cleanup: unmounted {m:?}"),
                Ok(_) => {}
                Err(e) => eprintln!("cleanup: {e}"),
            }
        }
        let _ = std::process::Command::new("ip")
            .args(["link", "del", &self.names.bridge])
            .stderr(std::process::Stdio::null())
            .status();
        let _ = std::fs::remove_dir_all(format!("/var/lib/cni/networks/{}", self.names.network));
        if let Ok(entries) = std::fs::read_dir("/var/lib/cni/results") {
            for e in entries.flatten() {
                if e.file_name()
                    .to_string_lossy()
                    .starts_with(&format!("{}-", self.names.network))
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
    }
}

/// Shims of our containerd left behind by a failed removal: their command line names our
/// socket.
fn kill_shims(socket: &Path) {
    let needle = socket.to_string_lossy().into_owned();
    let Ok(procs) = std::fs::read_dir("/proc") else {
        return;
    };
    for p in procs.flatten() {
        let name = p.file_name().to_string_lossy().into_owned();
        if !name.chars().all(|c| c.is_ascii_digit()) {
            continue;
        }
        let cmdline = std::fs::read(p.path().join("cmdline")).unwrap_or_default();
        let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
        if cmdline.contains("containerd-shim") && cmdline.contains(&needle) {
            eprintln!("cleanup: killing leftover shim {name}: {cmdline}");
            let _ = std::process::Command::new("kill")
                .args(["-9", &name])
                .status();
        }
    }
}

fn build_images(dir: &Path) -> (PathBuf, PathBuf, String) {
    // The sandbox image: rkube-pause when built next to this test's binary, else busybox.
    let exe = std::env::current_exe().unwrap();
    let pause_bin = exe
        .parent()
        .and_then(Path::parent)
        .map(|d| d.join("rkube-pause"))
        .filter(|p| p.exists());
    let pause_archive = dir.join("pause.tar");
    let pause_ref = match pause_bin {
        Some(bin) => {
            let id =
                oci::pause_image(&bin, std::fs::File::create(&pause_archive).unwrap()).unwrap();
            id.reference
        }
        None => {
            eprintln!("rkube-pause not built: using a busybox sandbox image");
            let rootfs = oci::Rootfs::new(dir.join("pause-rootfs")).unwrap();
            rootfs
                .copy(Path::new("/usr/bin/busybox"), "/bin/busybox")
                .unwrap();
            let config = oci::ImageConfig {
                entrypoint: vec!["/bin/busybox".into(), "sleep".into(), "2147483647".into()],
                ..Default::default()
            };
            let reference = "docker.io/rkube/cri-test-pause:1";
            oci::write_archive(
                rootfs.path(),
                reference,
                &config,
                std::fs::File::create(&pause_archive).unwrap(),
            )
            .unwrap();
            reference.to_string()
        }
    };

    let rootfs = oci::Rootfs::new(dir.join("busybox-rootfs")).unwrap();
    rootfs
        .copy(Path::new("/usr/bin/busybox"), "/bin/busybox")
        .unwrap();
    for applet in ["sh", "httpd", "cat", "echo", "sleep", "nc", "ls"] {
        rootfs
            .symlink(&format!("/bin/{applet}"), "busybox")
            .unwrap();
    }
    rootfs.dir("/tmp", 0o1777).unwrap();
    rootfs
        .file("/www/index.html", b"hello from a pod\n", 0o644)
        .unwrap();
    let config = oci::ImageConfig {
        cmd: vec!["/bin/sh".into()],
        env: vec![oci::DEFAULT_PATH_ENV.into()],
        ..Default::default()
    };
    let busybox_archive = dir.join("busybox.tar");
    oci::write_archive(
        rootfs.path(),
        BUSYBOX_IMAGE,
        &config,
        std::fs::File::create(&busybox_archive).unwrap(),
    )
    .unwrap();
    (pause_archive, busybox_archive, pause_ref)
}

/// A local registry (`docker-registry`) holding `archive` as `rkube/mirrored:1`, when the
/// tools are installed; returns the process and its `http://127.0.0.1:PORT` URL.
fn start_registry(dir: &Path, archive: &Path) -> Option<(std::process::Child, String)> {
    if !Path::new("/usr/bin/docker-registry").exists() || !Path::new("/usr/bin/skopeo").exists() {
        eprintln!("docker-registry or skopeo missing: not testing registry mirrors");
        return None;
    }
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = dir.join("registry.yml");
    std::fs::write(
        &config,
        format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\nhttp:\n  addr: 127.0.0.1:{port}\n",
            dir.join("registry").display()
        ),
    )
    .unwrap();
    let child = std::process::Command::new("/usr/bin/docker-registry")
        .arg("serve")
        .arg(&config)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "registry did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = std::process::Command::new("/usr/bin/skopeo")
        .args(["copy", "--dest-tls-verify=false"])
        .arg(format!("oci-archive:{}", archive.display()))
        .arg(format!("docker://127.0.0.1:{port}/rkube/mirrored:1"))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "skopeo: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some((child, format!("http://127.0.0.1:{port}")))
}

fn write_conflist(layout: &Layout, names: &Names) {
    let conf = format!(
        r#"{{
  "cniVersion": "1.0.0",
  "name": "{net}",
  "plugins": [
    {{
      "type": "bridge",
      "bridge": "{br}",
      "isGateway": true,
      "ipMasq": true,
      "hairpinMode": true,
      "ipam": {{
        "type": "host-local",
        "ranges": [[{{"subnet": "{p}.0/24"}}]],
        "routes": [{{"dst": "0.0.0.0/0"}}]
      }}
    }},
    {{"type": "portmap", "capabilities": {{"portMappings": true}}}}
  ]
}}
"#,
        net = names.network,
        br = names.bridge,
        p = names.subnet_prefix
    );
    std::fs::create_dir_all(&layout.cni_conf_dir).unwrap();
    std::fs::write(layout.cni_conf_dir.join("10-rkube.conflist"), conf).unwrap();
}

fn sandbox_config(layout: &Layout, name: &str, attempt: u32) -> v1::PodSandboxConfig {
    let uid = format!("uid-{name}-{}", std::process::id());
    let log_directory = layout.pod_logs_dir.join(format!("default_{name}_{uid}"));
    std::fs::create_dir_all(&log_directory).unwrap();
    v1::PodSandboxConfig {
        metadata: Some(v1::PodSandboxMetadata {
            name: name.into(),
            uid: uid.clone(),
            namespace: "default".into(),
            attempt,
        }),
        hostname: name.into(),
        log_directory: log_directory.to_string_lossy().into_owned(),
        dns_config: Some(v1::DnsConfig {
            servers: vec!["10.43.0.10".into()],
            searches: vec![
                "default.svc.cluster.local".into(),
                "svc.cluster.local".into(),
                "cluster.local".into(),
            ],
            options: vec!["ndots:5".into()],
        }),
        labels: [
            ("io.kubernetes.pod.name".to_string(), name.to_string()),
            (
                "io.kubernetes.pod.namespace".to_string(),
                "default".to_string(),
            ),
            ("io.kubernetes.pod.uid".to_string(), uid),
        ]
        .into(),
        annotations: [("kubernetes.io/config.source".to_string(), "api".to_string())].into(),
        linux: Some(v1::LinuxPodSandboxConfig {
            cgroup_parent: String::new(),
            security_context: Some(v1::LinuxSandboxSecurityContext {
                namespace_options: Some(v1::NamespaceOption {
                    network: v1::NamespaceMode::Pod as i32,
                    pid: v1::NamespaceMode::Container as i32,
                    ipc: v1::NamespaceMode::Pod as i32,
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn httpd_config(sandbox: &v1::PodSandboxConfig, image_ref: &str) -> v1::ContainerConfig {
    std::fs::create_dir_all(Path::new(&sandbox.log_directory).join("httpd")).unwrap();
    v1::ContainerConfig {
        metadata: Some(v1::ContainerMetadata {
            name: "httpd".into(),
            attempt: 0,
        }),
        image: Some(v1::ImageSpec {
            image: image_ref.into(),
            user_specified_image: BUSYBOX_IMAGE.into(),
            ..Default::default()
        }),
        command: vec!["/bin/sh".into(), "-c".into()],
        args: vec!["echo started; exec httpd -f -p 8080 -h /www".into()],
        envs: vec![v1::KeyValue {
            key: "GREETING".into(),
            value: "hi".into(),
        }],
        labels: [(
            "io.kubernetes.container.name".to_string(),
            "httpd".to_string(),
        )]
        .into(),
        log_path: "httpd/0.log".into(),
        linux: Some(v1::LinuxContainerConfig::default()),
        ..Default::default()
    }
}

/// GET / from the pod until it answers 200 (or `within` passes).
fn http_get(ip: &str, within: Duration) -> Result<String, String> {
    let deadline = Instant::now() + within;
    loop {
        let attempt = (|| -> std::io::Result<String> {
            let mut s = TcpStream::connect_timeout(
                &format!("{ip}:8080").parse().unwrap(),
                Duration::from_secs(1),
            )?;
            s.set_read_timeout(Some(Duration::from_secs(2)))?;
            s.write_all(b"GET / HTTP/1.0\r\nHost: pod\r\n\r\n")?;
            let mut out = String::new();
            s.read_to_string(&mut out)?;
            Ok(out)
        })();
        match attempt {
            Ok(text) if text.starts_with("HTTP/1.") && text.contains(" 200 ") => return Ok(text),
            Ok(text) if Instant::now() >= deadline => return Err(text),
            Err(e) if Instant::now() >= deadline => return Err(e.to_string()),
            _ => std::thread::sleep(Duration::from_millis(10)),
        }
    }
}

async fn sandbox_ip(rt: &RemoteRuntime, id: &str) -> String {
    rt.pod_sandbox_status(id, false)
        .await
        .unwrap()
        .status
        .unwrap()
        .network
        .map(|n| n.ip)
        .unwrap_or_default()
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

#[test]
fn pod_on_real_containerd() {
    if let Some(reason) = skip_reason() {
        eprintln!("skipping pod_on_real_containerd: {reason}");
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    // A short path: unix socket paths are limited to 108 bytes.
    let dir = tempfile::Builder::new()
        .prefix("rkcri")
        .tempdir_in("/tmp")
        .unwrap();
    let layout = Layout::new(dir.path().join("agent"));
    let mut env = Env {
        rt,
        layout: layout.clone(),
        names: names(),
        supervisors: Vec::new(),
        extra_layouts: Vec::new(),
        registry: None,
        dir,
    };
    let (pause_archive, busybox_archive, pause_ref) = build_images(env.dir.path());
    write_conflist(&layout, &env.names);

    let started = Instant::now();
    let supervisor = env
        .rt
        .block_on(Supervisor::start(ContainerdConfig::new(
            layout.clone(),
            pause_ref.clone(),
        )))
        .unwrap();
    eprintln!("containerd ready in {:.0} ms", ms(started.elapsed()));
    env.supervisors.push(supervisor);

    // A second containerd on the same machine, side by side.
    let second = Layout::new(env.dir.path().join("agent2"));
    env.extra_layouts.push(second.clone());
    let supervisor2 = env
        .rt
        .block_on(Supervisor::start(ContainerdConfig::new(
            second.clone(),
            pause_ref.clone(),
        )))
        .unwrap();
    env.supervisors.push(supervisor2);
    // A second supervisor on a live layout refuses to steal its socket.
    let duplicate = env.rt.block_on(Supervisor::start(ContainerdConfig::new(
        layout.clone(),
        pause_ref.clone(),
    )));
    let err = duplicate.expect_err("a second containerd on the same socket");
    assert!(err.to_string().contains("already listens"), "{err}");

    let registry_url = start_registry(env.dir.path(), &busybox_archive).map(|(child, url)| {
        env.registry = Some(child);
        url
    });
    let endpoint = env.supervisors[0].endpoint();
    let endpoint2 = env.supervisors[1].endpoint();
    let names_network = env.names.network.clone();
    let subnet_prefix = env.names.subnet_prefix.clone();
    let pid_of = |env: &Env| env.supervisors[0].pid();

    env.rt.block_on(async {
        let client = RemoteRuntime::connect(&endpoint, Duration::from_secs(120)).unwrap();
        let client2 = RemoteRuntime::connect(&endpoint2, Duration::from_secs(120)).unwrap();
        let v = client.version().await.unwrap();
        assert_eq!(v.runtime_name, "containerd");
        assert_eq!(v.runtime_api_version, "v1");
        assert!(client2.version().await.unwrap().runtime_version.starts_with("1.6"));
        assert!(client2.list_pod_sandbox(None).await.unwrap().is_empty());

        // Registry mirrors: docker.io (unreachable here) mirrored by a local registry, on
        // the second containerd (hosts.toml is re-read at every pull).
        if let Some(url) = &registry_url {
            cri::containerd::write_registry_hosts(
                &second,
                &[cri::containerd::Mirror {
                    host: "docker.io".into(),
                    endpoints: vec![url.clone()],
                }],
            )
            .unwrap();
            let spec = v1::ImageSpec {
                image: "rkube/mirrored:1".into(),
                ..Default::default()
            };
            let t = Instant::now();
            let image_ref = client2.pull_image(&spec, None, None).await.unwrap();
            eprintln!("pulled through the mirror in {:.0} ms", ms(t.elapsed()));
            assert!(image_ref.starts_with("sha256:"), "{image_ref}");
            let pulled = client2.image_status(&spec).await.unwrap().unwrap();
            assert_eq!(pulled.repo_tags, vec!["docker.io/rkube/mirrored:1"]);
            // Pruned again: no hosts dir of ours left.
            cri::containerd::write_registry_hosts(&second, &[]).unwrap();
            assert!(!second.registry_hosts_dir.join("docker.io").exists());
            client2.remove_image(&spec).await.unwrap();
            assert!(client2.image_status(&spec).await.unwrap().is_none());
        }

        import_image(&layout.socket, &pause_archive).await.unwrap();
        import_image(&layout.socket, &busybox_archive).await.unwrap();
        let err = import_image(&layout.socket, Path::new("/nonexistent.tar"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("nonexistent"), "{err}");
        let image = client
            .image_status(&v1::ImageSpec {
                image: BUSYBOX_IMAGE.into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .expect("imported image is visible to the CRI");
        assert!(image.id.starts_with("sha256:"));
        assert!(client.image_fs_info().await.unwrap().image_filesystems.len() == 1);

        // NetworkReady once the conflist is loaded.
        let status = client.status(false).await.unwrap().status.unwrap();
        assert!(
            status.conditions.iter().all(|c| c.status),
            "{:?}",
            status.conditions
        );

        // The pod.
        let sc = sandbox_config(&layout, "web", 0);
        let t = Instant::now();
        let sandbox = client.run_pod_sandbox(&sc, "").await.unwrap();
        let run_sandbox = t.elapsed();
        let ip = sandbox_ip(&client, &sandbox).await;
        assert!(ip.starts_with(&format!("{subnet_prefix}.")), "{ip}");
        let listed = client
            .list_pod_sandbox(Some(v1::PodSandboxFilter {
                label_selector: [("io.kubernetes.pod.name".to_string(), "web".to_string())]
                    .into(),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(listed.len(), 1);
        assert_eq!(listed[0].state, v1::PodSandboxState::SandboxReady as i32);

        let cc = httpd_config(&sc, &image.id);
        let t = Instant::now();
        let container = client.create_container(&sandbox, &cc, &sc).await.unwrap();
        let create = t.elapsed();
        let t = Instant::now();
        client.start_container(&container).await.unwrap();
        let start = t.elapsed();
        let body = http_get(&ip, Duration::from_secs(10)).unwrap();
        let first_http = t.elapsed();
        assert!(body.contains("hello from a pod"), "{body}");
        eprintln!(
            "first pod: RunPodSandbox {:.0} ms, CreateContainer {:.0} ms, StartContainer {:.0} ms, start → HTTP 200 {:.0} ms",
            ms(run_sandbox),
            ms(create),
            ms(start),
            ms(first_http)
        );

        let status = client
            .container_status(&container, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(status.state, v1::ContainerState::ContainerRunning as i32);
        assert_eq!(status.labels["io.kubernetes.container.name"], "httpd");
        assert!(status.started_at > 0);

        let out = client
            .exec_sync(
                &container,
                vec!["cat".into(), "/etc/resolv.conf".into()],
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        let resolv = String::from_utf8_lossy(&out.stdout);
        assert_eq!(out.exit_code, 0);
        assert!(resolv.contains("nameserver 10.43.0.10"), "{resolv}");
        assert!(
            resolv.contains("search default.svc.cluster.local svc.cluster.local cluster.local"),
            "{resolv}"
        );
        assert!(resolv.contains("options ndots:5"), "{resolv}");
        let out = client
            .exec_sync(
                &container,
                vec!["sh".into(), "-c".into(), "echo $GREETING; exit 3".into()],
                Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert_eq!((out.exit_code, out.stdout.as_slice()), (3, b"hi\n".as_slice()));

        // The log, in CRI format: `<RFC3339Nano> stdout F started`.
        let log_path = Path::new(&sc.log_directory).join("httpd/0.log");
        assert_eq!(status.log_path, log_path.to_string_lossy());
        let log = std::fs::read_to_string(&log_path).unwrap();
        let line = log.lines().next().unwrap();
        let fields: Vec<&str> = line.splitn(4, ' ').collect();
        assert_eq!(fields[1..], ["stdout", "F", "started"], "{log}");
        assert!(fields[0].contains('T') && fields[0].len() > 20, "{line}");

        // containerd dies: the supervisor restarts it, the container keeps running.
        let old_pid = pid_of(&env);
        let kill = std::process::Command::new("kill")
            .args(["-9", &old_pid.to_string()])
            .status()
            .unwrap();
        assert!(kill.success());
        let t = Instant::now();
        loop {
            if env.supervisors[0].restarts() >= 1 && client.version().await.is_ok() {
                break;
            }
            assert!(t.elapsed() < Duration::from_secs(30), "containerd not restarted");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        eprintln!("containerd back after kill -9 in {:.0} ms", ms(t.elapsed()));
        assert_ne!(pid_of(&env), old_pid);
        let running = client
            .list_containers(Some(v1::ContainerFilter {
                state: Some(v1::ContainerStateValue {
                    state: v1::ContainerState::ContainerRunning as i32,
                }),
                ..Default::default()
            }))
            .await
            .unwrap();
        assert_eq!(running.len(), 1);
        assert_eq!(running[0].id, container);
        http_get(&ip, Duration::from_secs(5)).unwrap();

        // Stop and remove.
        client
            .stop_container(&container, Duration::from_secs(1))
            .await
            .unwrap();
        let status = client
            .container_status(&container, false)
            .await
            .unwrap()
            .status
            .unwrap();
        assert_eq!(status.state, v1::ContainerState::ContainerExited as i32);
        assert!(status.finished_at >= status.started_at);
        client.stop_pod_sandbox(&sandbox).await.unwrap();
        client.stop_pod_sandbox(&sandbox).await.unwrap();
        let ip_file = PathBuf::from(format!("/var/lib/cni/networks/{names_network}/{ip}"));
        assert!(!ip_file.exists(), "{} still allocated", ip_file.display());
        client.remove_pod_sandbox(&sandbox).await.unwrap();
        client.remove_pod_sandbox(&sandbox).await.unwrap();
        client.remove_container(&container).await.unwrap();
        assert!(client.list_pod_sandbox(None).await.unwrap().is_empty());
        assert!(client.list_containers(None).await.unwrap().is_empty());
        assert!(
            client
                .pod_sandbox_status(&sandbox, false)
                .await
                .unwrap_err()
                .is_not_found()
        );

        // Latency, warm: a few more pods.
        let mut samples: Vec<[Duration; 4]> = Vec::new();
        for attempt in 1..=5 {
            let sc = sandbox_config(&layout, "web", attempt);
            let t = Instant::now();
            let sandbox = client.run_pod_sandbox(&sc, "").await.unwrap();
            let a = t.elapsed();
            let ip = sandbox_ip(&client, &sandbox).await;
            let cc = httpd_config(&sc, &image.id);
            let t2 = Instant::now();
            let container = client.create_container(&sandbox, &cc, &sc).await.unwrap();
            let b = t2.elapsed();
            let t3 = Instant::now();
            client.start_container(&container).await.unwrap();
            let c = t3.elapsed();
            http_get(&ip, Duration::from_secs(10)).unwrap();
            let d = t.elapsed();
            samples.push([a, b, c, d]);
            client.stop_pod_sandbox(&sandbox).await.unwrap();
            client.remove_pod_sandbox(&sandbox).await.unwrap();
        }
        for (i, what) in [
            "RunPodSandbox",
            "CreateContainer",
            "StartContainer",
            "RunPodSandbox → HTTP 200",
        ]
        .iter()
        .enumerate()
        {
            let mut v: Vec<f64> = samples.iter().map(|s| ms(s[i])).collect();
            v.sort_by(f64::total_cmp);
            eprintln!(
                "warm {what}: min {:.0} ms, median {:.0} ms, max {:.0} ms",
                v[0],
                v[v.len() / 2],
                v[v.len() - 1]
            );
        }
    });

    // Stop containerd: the layout has nothing mounted afterwards.
    let supervisors = std::mem::take(&mut env.supervisors);
    env.rt.block_on(async {
        for s in supervisors {
            s.stop().await;
        }
    });
    let left = cleanup_mounts(&layout).unwrap();
    eprintln!("mounts left after removal and stop: {left:?}");
}
