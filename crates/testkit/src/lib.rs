//! Test harness shared by rkube's crates: real etcd processes on loopback, free ports.
//!
//! Everything here starts real processes and cleans them up on drop. Tests that need a
//! binary which is missing fail with a message naming the package that provides it
//! (`scripts/install-deps.sh` installs them all), never skip silently.

// A test harness reports a broken environment by panicking with a clear message.
#![allow(clippy::panic)]

pub mod etcd;
pub mod https;
pub mod images;
pub mod netns;
pub mod node;
pub mod pki;
pub mod registry;
pub mod rkube;
pub mod simnodes;

pub use etcd::{Etcd, EtcdTls};
pub use pki::{Issued, TestCa};
pub use rkube::{RkubeServer, kubectl_binary, rkube_binary, server_start_error};
pub use simnodes::SimNodes;

/// kubectl's stderr without client-go's reflector log lines (klog format, from
/// `reflector.go`): when a `--timeout` of a second or so ends kubectl's watch (`wait`,
/// `delete`), client-go may or may not log a "very short watch" line first, depending on
/// which of its goroutines sees the end first. They are the library's diagnostics, not
/// kubectl's output.
pub fn without_reflector_logs(stderr: &[u8]) -> String {
    String::from_utf8_lossy(stderr)
        .split_inclusive('\n')
        .filter(|l| !(l.starts_with('I') || l.starts_with('W')) || !l.contains(" reflector.go:"))
        .collect()
}

/// Polls `f` every 100 ms until it holds, panicking after 20 s (a loaded CI machine is
/// slow, never this slow).
pub fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !f() {
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

/// Polls `f` every 200 ms until it returns `Some`, panicking after `secs` seconds.
pub fn wait_for<T>(what: &str, secs: u64, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "timed out waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// Polls `f` every 200 ms until it holds, panicking after `secs` seconds.
pub fn wait_until(what: &str, secs: u64, mut f: impl FnMut() -> bool) {
    wait_for(what, secs, || f().then_some(()));
}

use std::net::TcpListener;

/// A TCP port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .unwrap_or_else(|e| panic!("no free port on 127.0.0.1: {e}"))
}

/// The path of a system binary a test needs, or a panic saying how to get it.
pub fn require_binary(name: &str, package: &str) -> std::path::PathBuf {
    for dir in ["/usr/bin", "/usr/sbin", "/usr/local/bin", "/bin", "/sbin"] {
        let p = std::path::Path::new(dir).join(name);
        if p.exists() {
            return p;
        }
    }
    panic!("{name} not found: install Debian package {package} (scripts/install-deps.sh does)")
}
