//! The binary's commands, run as a user would.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Command;

fn rkube() -> Command {
    Command::new(env!("CARGO_BIN_EXE_rkube"))
}

#[test]
fn version() {
    let out = rkube().arg("version").output().unwrap();
    assert!(out.status.success());
    let s = String::from_utf8(out.stdout).unwrap();
    assert!(s.starts_with("rkube version v"), "{s}");
}

#[test]
fn unknown_command_is_a_usage_error() {
    let out = rkube().arg("frobnicate").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("unrecognized subcommand"));
}

#[test]
fn bench_store_prints_its_summary_lines() {
    let dir = tempfile::tempdir().unwrap();
    let out = rkube()
        .args([
            "bench",
            "store",
            "--backend",
            "memory,sqlite,etcd",
            "--seconds",
            "1",
        ])
        .args(["--writers", "4", "--data-dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for backend in ["memory", "sqlite", "etcd"] {
        let line = stdout
            .lines()
            .find(|l| l.starts_with(&format!("store-bench backend={backend} ")))
            .unwrap_or_else(|| panic!("no summary for {backend}:\n{stdout}"));
        assert!(line.contains("writers=4 writes_per_s="), "{line}");
        assert!(line.contains(" p99_ms="), "{line}");
    }
    assert!(stdout.contains("list 10k keys ms"));
}

#[test]
fn bench_store_rejects_unknown_backend() {
    let out = rkube()
        .args(["bench", "store", "--backend", "mongodb"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("invalid value 'mongodb'"));
}

#[test]
fn bench_api_prints_its_summary_line() {
    let out = rkube()
        .args([
            "bench",
            "api",
            "--clients",
            "2",
            "--seconds",
            "1",
            "--list-pods",
            "50",
        ])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("api-bench clients=2 creates_per_s="))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    for field in [
        " create_p99_ms=",
        " gets_per_s=",
        " get_p99_ms=",
        " list10k_ms=",
        " rss_mb=",
    ] {
        assert!(line.contains(field), "{line}");
    }
    assert!(stdout.contains("list 50 pods ms"), "{stdout}");
}

/// A small `bench schedule --split` run prints its summary line and exits: the simulated
/// nodes stop before the server, instead of retrying against a server that is gone.
#[test]
fn bench_schedule_prints_its_summary_line_and_exits() {
    // The logs go to a file: a pipe nobody reads while waiting could fill up and stall it.
    let log = tempfile::NamedTempFile::new().unwrap();
    let mut child = rkube()
        .args([
            "bench",
            "schedule",
            "--nodes",
            "3",
            "--pods",
            "6",
            "--per-deployment",
            "3",
            "--timeout",
            "120",
            "--split",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(log.reopen().unwrap())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(180);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("bench schedule did not exit");
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}\n{}",
        std::fs::read_to_string(log.path()).unwrap_or_default()
    );
    let line = stdout
        .lines()
        .find(|l| l.starts_with("schedule-bench nodes=3 pods=6 pods_per_s="))
        .unwrap_or_else(|| panic!("no summary line:\n{stdout}"));
    assert!(line.contains(" rss_mb="), "{line}");
}
