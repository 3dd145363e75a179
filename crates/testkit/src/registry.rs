//! A real OCI registry (Debian's `docker-registry`, distribution 2.8) on a free loopback
//! port, with its storage in a temporary directory; killed and deleted on drop.
//!
//! [`Registry::start_with_auth`] starts one that requires HTTP basic authentication
//! (distribution's `htpasswd` backend, bcrypt entries). Distribution 2.8 does not insist
//! on TLS for it (checked: plain HTTP answers 401 without, 200 with valid credentials),
//! and containerd talks plain HTTP to loopback registries, so it stays plain HTTP.

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
    /// The users of an authenticated registry (`None`: no authentication).
    users: Option<Vec<(String, String)>>,
}

/// The realm an authenticated registry names in its `WWW-Authenticate` challenge.
pub const AUTH_REALM: &str = "rkube-test-registry";

/// The registry's configuration file: filesystem storage under `storage`, plain HTTP on
/// `127.0.0.1:port`, deletes allowed, no auth.
pub fn registry_config(storage: &Path, port: u16) -> String {
    registry_config_with_auth(storage, port, None)
}

/// As [`registry_config`], with HTTP basic authentication against the htpasswd file
/// `htpasswd` when given (realm [`AUTH_REALM`]).
pub fn registry_config_with_auth(storage: &Path, port: u16, htpasswd: Option<&Path>) -> String {
    let mut config = format!(
        "version: 0.1\n\
         log:\n  level: warn\n  accesslog:\n    disabled: true\n\
         storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
         http:\n  addr: 127.0.0.1:{port}\n  headers:\n    X-Content-Type-Options: [nosniff]\n",
        storage.display()
    );
    if let Some(path) = htpasswd {
        config.push_str(&format!(
            "auth:\n  htpasswd:\n    realm: {AUTH_REALM}\n    path: {}\n",
            path.display()
        ));
    }
    config
}

/// One line of an htpasswd file for distribution's `htpasswd` backend, which accepts
/// bcrypt hashes only: `user:$2b$…`. The lowest cost (4) keeps tests fast; the registry
/// checks any cost.
pub fn htpasswd_line(user: &str, password: &str) -> String {
    assert!(
        !user.is_empty() && !user.contains([':', '\n']),
        "invalid htpasswd user {user:?}"
    );
    let hash = bcrypt::hash(password, 4).unwrap_or_else(|e| panic!("bcrypt: {e}"));
    format!("{user}:{hash}\n")
}

/// The status code of `GET /v2/` on `127.0.0.1:port` (with basic credentials when given),
/// or `None` when nothing answers.
pub fn registry_status(port: u16, creds: Option<(&str, &str)>) -> Option<u16> {
    use base64::Engine as _;
    let mut s = TcpStream::connect(("127.0.0.1", port)).ok()?;
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let auth = creds
        .map(|(u, p)| {
            let token = base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"));
            format!("Authorization: Basic {token}\r\n")
        })
        .unwrap_or_default();
    s.write_all(format!("GET /v2/ HTTP/1.0\r\nHost: 127.0.0.1\r\n{auth}\r\n").as_bytes())
        .ok()?;
    let mut buf = [0u8; 64];
    let n = s.read(&mut buf).unwrap_or(0);
    let head = String::from_utf8_lossy(&buf[..n]);
    head.strip_prefix("HTTP/1.")
        .and_then(|rest| rest.get(2..5))
        .and_then(|code| code.parse().ok())
}

/// Whether `GET /v2/` on `127.0.0.1:port` answers 200.
pub fn registry_answers(port: u16) -> bool {
    registry_status(port, None) == Some(200)
}

impl Registry {
    /// Starts a registry on a free port and waits until `/v2/` answers.
    pub fn start() -> Registry {
        Self::start_inner(None)
    }

    /// Starts a registry that requires HTTP basic authentication as one of `users`
    /// (`(username, password)`; at least one) for every request, pulls and pushes alike;
    /// waits until `/v2/` answers 401 without and 200 with the first user's credentials.
    /// [`Registry::push`] pushes as the first user.
    pub fn start_with_auth(users: &[(&str, &str)]) -> Registry {
        assert!(!users.is_empty(), "an authenticated registry needs a user");
        let users = users
            .iter()
            .map(|(u, p)| (u.to_string(), p.to_string()))
            .collect();
        Self::start_inner(Some(users))
    }

    fn start_inner(users: Option<Vec<(String, String)>>) -> Registry {
        let mut last = String::new();
        for _ in 0..3 {
            match Self::try_start(users.clone()) {
                Ok(r) => return r,
                Err(e) => last = e,
            }
        }
        panic!("docker-registry did not start: {last}")
    }

    fn try_start(users: Option<Vec<(String, String)>>) -> Result<Registry, String> {
        let bin = require_binary("docker-registry", "docker-registry");
        let dir = tempfile::Builder::new()
            .prefix("rkube-registry-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let port = free_port();
        let config = dir.path().join("config.yml");
        let htpasswd = match &users {
            Some(users) => {
                let path = dir.path().join("htpasswd");
                let lines: String = users.iter().map(|(u, p)| htpasswd_line(u, p)).collect();
                std::fs::write(&path, lines).map_err(|e| e.to_string())?;
                Some(path)
            }
            None => None,
        };
        std::fs::write(
            &config,
            registry_config_with_auth(&dir.path().join("data"), port, htpasswd.as_deref()),
        )
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
        let mut reg = Registry {
            port,
            child,
            dir,
            users,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while !reg.answers() {
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

    /// Whether the registry answers `/v2/` as it should: 200, or for an authenticated
    /// one 401 without and 200 with credentials.
    fn answers(&self) -> bool {
        match self.credentials() {
            None => registry_answers(self.port),
            Some(creds) => {
                registry_status(self.port, None) == Some(401)
                    && registry_status(self.port, Some(creds)) == Some(200)
            }
        }
    }

    /// The first user's `(username, password)` of an authenticated registry.
    pub fn credentials(&self) -> Option<(&str, &str)> {
        self.users
            .as_ref()
            .and_then(|u| u.first())
            .map(|(u, p)| (u.as_str(), p.as_str()))
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
    /// `skopeo copy` (as the first user of an authenticated registry), panicking with
    /// skopeo's output on failure.
    pub fn push(&self, archive: &Path, repo_tag: &str) {
        let skopeo = require_binary("skopeo", "skopeo");
        let dest = format!("docker://{}/{repo_tag}", self.host());
        let mut cmd = Command::new(skopeo);
        cmd.args(["copy", "--quiet", "--dest-tls-verify=false"]);
        if let Some((user, password)) = self.credentials() {
            // Through a file, not argv: a password never shows in `ps`.
            let auth = self.dir.path().join("push-auth.json");
            std::fs::write(&auth, docker_config_json(&self.host(), user, password))
                .unwrap_or_else(|e| panic!("{}: {e}", auth.display()));
            cmd.arg("--dest-authfile").arg(auth);
        }
        let out = cmd
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

/// A Docker `config.json` (the `.dockerconfigjson` of a `kubernetes.io/dockerconfigjson`
/// Secret, skopeo's auth file) holding one credential for registry `server`.
pub fn docker_config_json(server: &str, user: &str, password: &str) -> String {
    use base64::Engine as _;
    let auth = base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"));
    serde_json::json!({"auths": {server: {"username": user, "password": password, "auth": auth}}})
        .to_string()
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn htpasswd_lines_are_bcrypt() {
        let line = htpasswd_line("alice", "s3cret");
        let (user, hash) = line.trim_end().split_once(':').unwrap();
        assert_eq!(user, "alice");
        assert!(hash.starts_with("$2b$04$"), "{hash}");
        assert!(bcrypt::verify("s3cret", hash).unwrap());
        assert!(!bcrypt::verify("wrong", hash).unwrap());
    }

    #[test]
    fn auth_config_names_the_htpasswd_file() {
        let plain = registry_config(Path::new("/s"), 5000);
        assert!(!plain.contains("auth:"), "{plain}");
        let auth = registry_config_with_auth(Path::new("/s"), 5000, Some(Path::new("/h/pw")));
        assert!(auth.starts_with(&plain), "{auth}");
        assert!(
            auth.ends_with(&format!(
                "auth:\n  htpasswd:\n    realm: {AUTH_REALM}\n    path: /h/pw\n"
            )),
            "{auth}"
        );
    }

    #[test]
    fn docker_config_json_holds_one_credential() {
        let v: serde_json::Value =
            serde_json::from_str(&docker_config_json("127.0.0.1:5000", "u", "p")).unwrap();
        assert_eq!(v["auths"]["127.0.0.1:5000"]["auth"], "dTpw");
        assert_eq!(v["auths"]["127.0.0.1:5000"]["password"], "p");
    }

    /// The real registry: 401 without and with wrong credentials, 200 with right ones.
    #[test]
    fn authenticated_registry_checks_credentials() {
        let r = Registry::start_with_auth(&[("alice", "s3cret"), ("bob", "hunter2")]);
        assert_eq!(registry_status(r.port, None), Some(401));
        assert_eq!(registry_status(r.port, Some(("alice", "wrong"))), Some(401));
        assert_eq!(
            registry_status(r.port, Some(("alice", "s3cret"))),
            Some(200)
        );
        assert_eq!(registry_status(r.port, Some(("bob", "hunter2"))), Some(200));
        assert_eq!(r.credentials(), Some(("alice", "s3cret")));
        assert!(!registry_answers(r.port));
    }
}
