//! The pause binary: blocks, reaps, exits 0 on SIGTERM/SIGINT.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn pause() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_rkube-pause"));
    c.stdout(Stdio::piped()).stderr(Stdio::piped());
    c
}

fn signal(pid: u32, sig: &str) {
    let st = Command::new("kill")
        .args([&format!("-{sig}"), &pid.to_string()])
        .status()
        .unwrap();
    assert!(st.success());
}

fn wait_exit(child: &mut std::process::Child) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return st;
        }
        assert!(Instant::now() < deadline, "rkube-pause did not exit");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn exits_zero_on_sigterm_and_sigint_silently() {
    for sig in ["TERM", "INT"] {
        let mut child = pause().spawn().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        assert!(child.try_wait().unwrap().is_none(), "exited before {sig}");
        // SIGCHLD alone must not stop it.
        signal(child.id(), "CHLD");
        std::thread::sleep(Duration::from_millis(100));
        assert!(child.try_wait().unwrap().is_none(), "exited on SIGCHLD");
        signal(child.id(), sig);
        let st = wait_exit(&mut child);
        assert_eq!(st.code(), Some(0), "after SIG{sig}");
        let out = child.wait_with_output().unwrap();
        assert!(out.stdout.is_empty() && out.stderr.is_empty());
    }
}

#[test]
fn rejects_arguments() {
    let out = pause().arg("bogus").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("usage"));
}

fn children(pid: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/task/{pid}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|s| s.parse().ok())
        .collect()
}

/// As PID 1 of a new PID namespace, orphans are re-parented to it: it must reap them.
#[test]
fn reaps_orphans_as_pid_one() {
    let root = std::fs::metadata("/proc/self")
        .map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0)
        .unwrap_or(false);
    let have = |t: &str| {
        Command::new(t)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success())
    };
    if !root || !have("unshare") || !have("nsenter") {
        eprintln!("skipping reaps_orphans_as_pid_one: needs root, unshare and nsenter");
        return;
    }
    let mut unshare = Command::new("unshare")
        .args(["--pid", "--fork", "--kill-child"])
        .arg(env!("CARGO_BIN_EXE_rkube-pause"))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    let pause = loop {
        if let Some(&p) = children(unshare.id()).first() {
            break p;
        }
        assert!(Instant::now() < deadline, "no pause process under unshare");
        std::thread::sleep(Duration::from_millis(20));
    };
    // A shell in the namespace starts a short sleep and exits: the sleep is orphaned to
    // pause, exits, and must be reaped (else it stays a zombie child of pause).
    let st = Command::new("nsenter")
        .args([
            "-t",
            &pause.to_string(),
            "-p",
            "sh",
            "-c",
            "sleep 0.3 & exit 0",
        ])
        .status()
        .unwrap();
    assert!(st.success());
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut saw_orphan = false;
    loop {
        let kids = children(pause);
        saw_orphan |= !kids.is_empty();
        if kids.is_empty() && saw_orphan {
            break;
        }
        if kids.is_empty() && Instant::now() > deadline - Duration::from_secs(8) {
            // The sleep may have come and gone between two looks; fine either way.
            break;
        }
        assert!(Instant::now() < deadline, "pause left children {kids:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(children(pause).is_empty());
    signal(pause, "TERM");
    let st = wait_exit(&mut unshare);
    assert_eq!(st.code(), Some(0));
}
