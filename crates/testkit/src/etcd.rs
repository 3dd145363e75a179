//! Real etcd members on loopback ports with temporary data directories.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{free_port, require_binary};

/// A running etcd cluster (one or more members), stopped and deleted on drop.
pub struct Etcd {
    members: Vec<Child>,
    /// Client URLs, one per member.
    pub endpoints: Vec<String>,
    /// Present when the members serve clients over TLS and require client certificates.
    pub tls: Option<EtcdTls>,
    dir: tempfile::TempDir,
}

/// The files a client needs to reach a TLS etcd.
#[derive(Clone, Debug)]
pub struct EtcdTls {
    pub ca_file: PathBuf,
    pub client: crate::Issued,
}

impl Etcd {
    /// One member.
    pub fn start() -> Etcd {
        Self::start_cluster(1)
    }

    /// `n` members forming one cluster.
    pub fn start_cluster(n: usize) -> Etcd {
        Self::start_with(n, false)
    }

    /// One member serving clients over HTTPS that requires client certificates signed by
    /// its own test CA.
    pub fn start_tls() -> Etcd {
        Self::start_with(1, true)
    }

    fn start_with(n: usize, tls: bool) -> Etcd {
        let mut last_err = String::new();
        for _ in 0..3 {
            match Self::try_start(n, tls) {
                Ok(e) => return e,
                Err(e) => last_err = e,
            }
        }
        panic!("etcd did not start: {last_err}")
    }

    /// The endpoints joined with commas, as `--datastore-endpoint` takes them.
    pub fn endpoint_list(&self) -> String {
        self.endpoints.join(",")
    }

    pub fn data_dir(&self) -> &Path {
        self.dir.path()
    }

    /// Kills member `i` (for failover tests).
    pub fn kill_member(&mut self, i: usize) {
        if let Some(c) = self.members.get_mut(i) {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn try_start(n: usize, tls: bool) -> Result<Etcd, String> {
        let bin = require_binary("etcd", "etcd-server");
        let dir = tempfile::Builder::new()
            .prefix("rkube-etcd-")
            .tempdir()
            .map_err(|e| e.to_string())?;
        let ports: Vec<(u16, u16)> = (0..n).map(|_| (free_port(), free_port())).collect();
        let token = format!("rkube-test-{}-{}", std::process::id(), ports[0].0);
        let initial: Vec<String> = ports
            .iter()
            .enumerate()
            .map(|(i, (_, peer))| format!("m{i}=http://127.0.0.1:{peer}"))
            .collect();
        let initial = initial.join(",");
        let scheme = if tls { "https" } else { "http" };
        let mut server_tls = Vec::new();
        let tls_files = tls.then(|| {
            let ca = crate::TestCa::new(dir.path(), "etcd");
            let server = ca.issue("etcd-server", "etcd", &["localhost", "127.0.0.1"]);
            let client = ca.issue("etcd-client", "rkube-apiserver", &[]);
            server_tls = vec![
                format!("--cert-file={}", server.cert_file.display()),
                format!("--key-file={}", server.key_file.display()),
                format!("--trusted-ca-file={}", ca.ca_file.display()),
                "--client-cert-auth".to_string(),
            ];
            EtcdTls {
                ca_file: ca.ca_file.clone(),
                client,
            }
        });
        let mut etcd = Etcd {
            members: Vec::new(),
            endpoints: ports
                .iter()
                .map(|(c, _)| format!("{scheme}://127.0.0.1:{c}"))
                .collect(),
            tls: tls_files,
            dir,
        };
        for (i, (client, peer)) in ports.iter().enumerate() {
            let log_path = etcd.dir.path().join(format!("m{i}.log"));
            let log = std::fs::File::create(&log_path).map_err(|e| e.to_string())?;
            let log2 = log.try_clone().map_err(|e| e.to_string())?;
            let child = Command::new(&bin)
                .args([
                    "--name",
                    &format!("m{i}"),
                    "--data-dir",
                    &etcd.dir.path().join(format!("m{i}")).to_string_lossy(),
                    "--listen-client-urls",
                    &format!("{scheme}://127.0.0.1:{client}"),
                    "--advertise-client-urls",
                    &format!("{scheme}://127.0.0.1:{client}"),
                    "--listen-peer-urls",
                    &format!("http://127.0.0.1:{peer}"),
                    "--initial-advertise-peer-urls",
                    &format!("http://127.0.0.1:{peer}"),
                    "--initial-cluster",
                    &initial,
                    "--initial-cluster-state",
                    "new",
                    "--initial-cluster-token",
                    &token,
                    "--heartbeat-interval",
                    "50",
                    "--election-timeout",
                    "500",
                    "--logger",
                    "zap",
                    "--log-outputs",
                    "stderr",
                ])
                .args(&server_tls)
                .stdin(Stdio::null())
                .stdout(log)
                .stderr(log2)
                .spawn()
                .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
            etcd.members.push(child);
        }
        let deadline = Instant::now() + Duration::from_secs(30);
        for (i, ep) in etcd.endpoints.clone().iter().enumerate() {
            loop {
                if let Ok(Some(status)) = etcd.members[i].try_wait() {
                    return Err(format!(
                        "member m{i} exited with {status}:\n{}",
                        tail(&etcd.dir.path().join(format!("m{i}.log")))
                    ));
                }
                let log = etcd.dir.path().join(format!("m{i}.log"));
                if healthy(ep, &log) {
                    break;
                }
                if Instant::now() > deadline {
                    return Err(format!(
                        "member m{i} not healthy after 30s:\n{}",
                        tail(&etcd.dir.path().join(format!("m{i}.log")))
                    ));
                }
                std::thread::sleep(Duration::from_millis(50));
            }
        }
        Ok(etcd)
    }
}

impl Drop for Etcd {
    fn drop(&mut self) {
        for c in &mut self.members {
            let _ = c.kill();
        }
        for c in &mut self.members {
            let _ = c.wait();
        }
    }
}

/// `GET /health` answers `{"health":"true"}` once the member serves with a leader; a TLS
/// member says so in its log instead.
fn healthy(endpoint: &str, log: &Path) -> bool {
    if endpoint.starts_with("https://") {
        return std::fs::read_to_string(log)
            .is_ok_and(|l| l.contains("serving client traffic securely"));
    }
    let addr = endpoint.trim_start_matches("http://");
    let Ok(mut s) = TcpStream::connect_timeout(
        &match addr.parse() {
            Ok(a) => a,
            Err(_) => return false,
        },
        Duration::from_millis(200),
    ) else {
        return false;
    };
    let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
    let req = format!("GET /health HTTP/1.0\r\nHost: {addr}\r\n\r\n");
    if s.write_all(req.as_bytes()).is_err() {
        return false;
    }
    let mut body = String::new();
    let _ = s.read_to_string(&mut body);
    body.contains("\"health\":\"true\"")
}

fn tail(path: &PathBuf) -> String {
    let s = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = s.lines().collect();
    lines[lines.len().saturating_sub(30)..].join("\n")
}
