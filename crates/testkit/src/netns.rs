//! A second host on this machine for tests of what crosses a network: a network
//! namespace joined to the host by a veth pair (`172.30.<n>.1` on the host side,
//! `172.30.<n>.2` inside, a default route back through the host). Programs run in it
//! with `nsenter --net` only, so they keep the host's mount namespace (cgroups, the data
//! directories) while having their own interfaces, routes and iptables.
//!
//! [`Forward`] relays TCP from an address the namespace reaches to one it does not (the
//! API server and the registry listen on the host's loopback).

use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

fn ip(args: &[&str]) {
    let out = Command::new("ip")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("ip {args:?}: {e}"));
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A network namespace with a veth link to the host.
pub struct Host {
    pub netns: String,
    pub host_if: String,
    pub host_ip: Ipv4Addr,
    pub ip: Ipv4Addr,
}

impl Host {
    /// Creates host `n` (1..=250): namespace `rkube-h<n>`, link `rkh<n>` ↔ `eth0`.
    /// Leftovers of an earlier run with the same `n` are removed first.
    pub fn create(n: u8) -> Host {
        let netns = format!("rkube-h{n}");
        let host_if = format!("rkh{n}");
        let _ = Command::new("ip").args(["netns", "del", &netns]).output();
        let _ = Command::new("ip").args(["link", "del", &host_if]).output();
        let host = Host {
            netns: netns.clone(),
            host_if: host_if.clone(),
            host_ip: Ipv4Addr::new(172, 30, n, 1),
            ip: Ipv4Addr::new(172, 30, n, 2),
        };
        ip(&["netns", "add", &netns]);
        ip(&[
            "link", "add", &host_if, "type", "veth", "peer", "name", "rkn-tmp", "netns", &netns,
        ]);
        ip(&[
            "addr",
            "add",
            &format!("{}/30", host.host_ip),
            "dev",
            &host_if,
        ]);
        ip(&["link", "set", &host_if, "up"]);
        let inside = |args: &[&str]| {
            let mut full = vec!["-n", netns.as_str()];
            full.extend_from_slice(args);
            ip(&full);
        };
        inside(&["link", "set", "rkn-tmp", "name", "eth0"]);
        inside(&["addr", "add", &format!("{}/30", host.ip), "dev", "eth0"]);
        inside(&["link", "set", "eth0", "up"]);
        inside(&["link", "set", "lo", "up"]);
        inside(&["route", "add", "default", "via", &host.host_ip.to_string()]);
        host
    }

    /// `program` to run inside the namespace (network only).
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut c = Command::new("nsenter");
        c.arg(format!("--net=/run/netns/{}", self.netns))
            .arg("--")
            .arg(program);
        c
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = Command::new("ip")
            .args(["netns", "del", &self.netns])
            .output();
        let _ = Command::new("ip")
            .args(["link", "del", &self.host_if])
            .output();
    }
}

/// A TCP relay from `listen` to `target`, until dropped.
pub struct Forward {
    pub listen: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl Forward {
    /// Relays connections to `listen` (port 0: any free port) to `target`.
    pub fn start(listen: SocketAddr, target: SocketAddr) -> Forward {
        let listener = TcpListener::bind(listen).unwrap_or_else(|e| panic!("bind {listen}: {e}"));
        let listen = listener
            .local_addr()
            .unwrap_or_else(|e| panic!("local_addr: {e}"));
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = Arc::clone(&stop);
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stopping.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = conn else { continue };
                let Ok(server) = TcpStream::connect_timeout(&target, Duration::from_secs(5)) else {
                    continue;
                };
                let pipe = |mut from: TcpStream, mut to: TcpStream| {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Write);
                    });
                };
                if let (Ok(c2), Ok(s2)) = (client.try_clone(), server.try_clone()) {
                    pipe(client, server);
                    pipe(s2, c2);
                }
            }
        });
        Forward {
            listen,
            stop,
            thread: Some(thread),
        }
    }
}

impl Drop for Forward {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect_timeout(&self.listen, Duration::from_secs(1));
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}
