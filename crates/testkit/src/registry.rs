//! A real OCI registry (Debian's `docker-registry`, distribution 2.8) on a free loopback
//! port, with its storage in a temporary directory; killed and deleted on drop.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, require_binary};

/// A running registry serving plain HTTP on `127.0.0.1:port`.
pub struct Registry {
    pub port: u16,
    child: Child,
    dir: tempfile::TempDir,
}

/// The registry's configuration file: filesystem storage under `storage`, plain HTTP on
/// `127.0.0.1:port`, deletes allowed, no auth.
pub fn registry_config(storage: &Path, port: u16) -> String {
    format!(
        "version: 0.1\n\
         log:\n  level: warn\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
         http:\n  addr: 127.0.0.1:{port}\n  headers:\n    X-Content-Type-Options: [nosniff]\n",
        storage.display()
    )
}

/// Whether `GET /v2/` on `127.0.0.1:port` answers 200.
pub fn registry_answers(port: u16) -> bool {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    if s.write_all(b"GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n")
        .is_err()
    {
        return false;
    }
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    let head = String::from_utf8_lossy(&buf[..n]);
    head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.0 200")
}

impl Registry {
    /// Starts a registry on a free port and waits until `/v2/` answers.
    pub fn start() -> Registry {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start() {
                Ok(r) => return r,
                Err(e) => last = e,
            }
        }
        panic!("docker-registry did not start: {last}")
    }

    fn try_start() -> Result<Registry, String> {
        let bin = require_binary("docker-registry", "docker-registry");
        let dir = tempfile::Builder::new()
            .prefix("rkube-registry-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let port = free_port();
        let config = dir.path().join("config.yml");
        std::fs::write(&config, registry_config(&dir.path().join("data"), port))
            .map_err(|e| e.to_string())?;
        let log =
            std::fs::File::create(dir.path().join("registry.log")).map_err(|e| e.to_string())?;
        let log2 = log.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(bin)
            .arg("serve")
            .arg(&config)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .spawn()
            .map_err(|e| format!("spawning docker-registry: {e}"))?;
        let mut reg = Registry { port, child, dir };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !registry_answers(port) {
            if let Ok(Some(st)) = reg.child.try_wait() {
                return Err(format!("exited {st}: {}", reg.log()));
            }
            if Instant::now() > deadline {
                return Err(format!("no answer on port {port}: {}", reg.log()));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(reg)
    }

    /// `127.0.0.1:PORT`, the registry host part of image references pushed here.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The registry's storage and log directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// What the registry logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("registry.log")).unwrap_or_default()
    }

    /// Pushes the OCI archive `archive` as `REPO:TAG` (e.g. `library/nginx:latest`) with
    /// `skopeo copy`, panicking with skopeo's output on failure.
    pub fn push(&self, archive: &Path, repo_tag: &str) {
        let skopeo = require_binary("skopeo", "skopeo");
        let dest = format!("docker://{}/{repo_tag}", self.host());
        let out = Command::new(skopeo)
            .args(["copy", "--quiet", "--dest-tls-verify=false"])
            .arg(format!("oci-archive:{}", archive.display()))
            .arg(&dest)
            .env("TMPDIR", self.dir.path())
            .output()
            .unwrap_or_else(|e| panic!("running skopeo: {e}"));
        assert!(
            out.status.success(),
            "skopeo copy {} {dest} failed: {}{}",
            archive.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// The storage directory holding the pushed repositories.
    pub fn storage(&self) -> PathBuf {
        self.dir.path().join("data")
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
