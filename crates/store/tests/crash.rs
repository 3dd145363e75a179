//! Crash safety of the SQLite backend: a child process writes continuously and reports
//! every acknowledged write; it is killed with SIGKILL at random moments, 24 times. After
//! each kill every acknowledged write must be there, revisions must only grow, and no value
//! may be torn.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stdout
)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use rand::Rng;
use store::sqlite::SqliteBackend;
use store::{Backend, ListOptions, Revision};

const CHILD_ENV: &str = "RKUBE_CRASH_CHILD_DB";
const KILLS: usize = 24;

/// A value that carries its own length and checksum, so a torn write is detectable.
fn make_value(writer: usize, seq: u64, pad: usize) -> Vec<u8> {
    let body = format!("{writer}:{seq}:{}", "x".repeat(pad));
    format!("{:08x}:{body}", fnv(body.as_bytes())).into_bytes()
}

fn check_value(v: &[u8]) -> bool {
    let Ok(s) = std::str::from_utf8(v) else {
        return false;
    };
    let Some((sum, body)) = s.split_once(':') else {
        return false;
    };
    u32::from_str_radix(sum, 16).ok() == Some(fnv(body.as_bytes()))
}

fn fnv(data: &[u8]) -> u32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in data {
        h ^= u32::from(*b);
        h = h.wrapping_mul(0x0100_0193);
    }
    h
}

/// The child: 16 writers creating and updating keys until killed, printing
/// `ACK <key> <revision> <fnv of value>` after each acknowledged write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by crash::kill_nine_loses_nothing as its child process"]
async fn crash_child() {
    let Some(path) = std::env::var_os(CHILD_ENV) else {
        return;
    };
    let s = Arc::new(SqliteBackend::open(path).unwrap());
    let out = Arc::new(Mutex::new(std::io::stdout()));
    for w in 0..16 {
        let s = Arc::clone(&s);
        let out = Arc::clone(&out);
        tokio::spawn(async move {
            let mut seq = 0u64;
            loop {
                seq += 1;
                let (slot, pad) = {
                    let mut rng = rand::rng();
                    (rng.random_range(0..20), rng.random_range(0..3000))
                };
                let key = format!("/crash/{w}/{slot}");
                let value = make_value(w, seq, pad);
                let sum = fnv(&value);
                let res = match s.get(&key).await.unwrap() {
                    None => s.create(&key, Bytes::from(value), None).await,
                    Some(kv) => {
                        s.update(&key, Bytes::from(value), kv.mod_revision, None)
                            .await
                    }
                };
                if let Ok(kv) = res {
                    let line = format!("ACK {key} {} {sum}\n", kv.mod_revision);
                    let mut o = out.lock().unwrap();
                    o.write_all(line.as_bytes()).unwrap();
                    o.flush().unwrap();
                }
            }
        });
    }
    // Write until killed.
    std::future::pending::<()>().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_nine_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("state.db");
    let exe = std::env::current_exe().unwrap();
    // key -> (revision, checksum) of the newest acknowledged write.
    let mut acked: HashMap<String, (Revision, u32)> = HashMap::new();
    let mut all_acks: Vec<(String, Revision, u32)> = Vec::new();
    let mut high_water: Revision = 0;
    for round in 0..KILLS {
        let mut child = Command::new(&exe)
            .args(["crash_child", "--exact", "--ignored", "--nocapture"])
            .env(CHILD_ENV, &db)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let lines = Arc::new(Mutex::new(Vec::<String>::new()));
        let reader = {
            let lines = Arc::clone(&lines);
            std::thread::spawn(move || {
                for line in BufReader::new(stdout).lines() {
                    let Ok(line) = line else { break };
                    lines.lock().unwrap().push(line);
                }
            })
        };
        // Wait for the first acknowledgement, then kill at a random moment.
        let started = std::time::Instant::now();
        while lines.lock().unwrap().is_empty() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "round {round}: the child acknowledged nothing"
            );
            std::thread::sleep(Duration::from_millis(5));
        }
        let delay = rand::rng().random_range(20..400);
        std::thread::sleep(Duration::from_millis(delay));
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        reader.join().unwrap();

        let lines = lines.lock().unwrap().clone();
        let mut round_max = 0;
        for line in &lines {
            // A line cut by the kill was never fully reported: ignore it.
            let parts: Vec<&str> = line.split(' ').collect();
            if parts.len() != 4 || parts[0] != "ACK" {
                continue;
            }
            let (Ok(rev), Ok(sum)) = (parts[2].parse::<Revision>(), parts[3].parse::<u32>()) else {
                continue;
            };
            assert!(rev > high_water, "round {round}: revision {rev} reused");
            round_max = round_max.max(rev);
            let e = acked.entry(parts[1].to_string()).or_insert((0, 0));
            if rev > e.0 {
                *e = (rev, sum);
            }
            all_acks.push((parts[1].to_string(), rev, sum));
        }
        high_water = high_water.max(round_max);

        // Reopen and check.
        let s = SqliteBackend::open(&db).unwrap();
        let current = s.current_revision().await.unwrap();
        assert!(current >= high_water, "round {round}: revision went back");
        for (key, (rev, sum)) in &acked {
            let kv = s
                .get(key)
                .await
                .unwrap()
                .unwrap_or_else(|| panic!("round {round}: acknowledged key {key} is missing"));
            assert!(
                kv.mod_revision >= *rev,
                "round {round}: {key} lost revision {rev}"
            );
            assert!(check_value(&kv.value), "round {round}: {key} is torn");
            if kv.mod_revision == *rev {
                assert_eq!(fnv(&kv.value), *sum, "round {round}: {key} has other bytes");
            }
        }
        // Every acknowledged revision of this round is in the history with its bytes.
        for (key, rev, sum) in all_acks.iter().filter(|a| a.1 > high_water - 2000) {
            let l = s
                .list(ListOptions {
                    prefix: key.clone(),
                    revision: *rev,
                    ..Default::default()
                })
                .await
                .unwrap();
            let kv = l.kvs.iter().find(|kv| &kv.key == key).unwrap();
            assert_eq!(
                kv.mod_revision, *rev,
                "round {round}: {key}@{rev} not in history"
            );
            assert_eq!(fnv(&kv.value), *sum);
        }
        high_water = high_water.max(current);
        drop(s);
    }
    assert!(
        all_acks.len() > KILLS * 10,
        "too few writes to mean anything"
    );
    println!(
        "{} acknowledged writes over {KILLS} kills, none lost",
        all_acks.len()
    );
}
