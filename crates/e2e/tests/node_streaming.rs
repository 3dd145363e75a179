//! The streaming paths of the real node, through the real kubectl 1.33 (WebSocket:
//! exec/attach/cp with `v5.channel.k8s.io`, which the API server translates to SPDY,
//! port-forward with SPDY tunnelled in WebSocket) and 1.27 (SPDY only): `logs` with its options
//! and `-f` ending with the container, `exec` with output, exit codes, piped stdin and a
//! pseudo-terminal, `attach`, `port-forward` to nginx, `cp` both ways, and upstream's
//! errors. One cluster, every scenario.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::node::{NodeCluster, http_get};
use testkit::wait_for;

const VERSIONS: [&str; 2] = ["1.33", "1.27"];

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn out(o: &Output) -> String {
    format!(
        "status {}\nstdout: {}\nstderr: {}",
        o.status,
        text(&o.stdout),
        text(&o.stderr)
    )
}

/// A running kubectl whose stdout lines arrive on a channel.
struct Running {
    child: Child,
    lines: mpsc::Receiver<(Instant, String)>,
    _input: Option<std::process::ChildStdin>,
}

impl Running {
    fn start(mut cmd: Command, stdin: Option<&str>) -> Running {
        cmd.stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        // The input stays open until `stop`: closing it would end an attach session.
        let mut input = child.stdin.take();
        if let (Some(text), Some(w)) = (stdin, input.as_mut()) {
            w.write_all(text.as_bytes()).unwrap();
            w.flush().unwrap();
        }
        let (tx, lines) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send((Instant::now(), line)).is_err() {
                    break;
                }
            }
        });
        Running {
            child,
            lines,
            _input: input,
        }
    }

    /// Lines until one satisfies `pred` (or `secs` pass): all lines seen.
    fn until(&mut self, secs: u64, pred: impl Fn(&str) -> bool) -> Vec<String> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        let mut seen = Vec::new();
        while let Some(left) = deadline.checked_duration_since(Instant::now()) {
            match self.lines.recv_timeout(left) {
                Ok((_, l)) => {
                    let done = pred(&l);
                    seen.push(l);
                    if done {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        seen
    }

    fn stop(mut self) -> String {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let mut err = String::new();
        if let Some(mut e) = self.child.stderr.take() {
            let _ = e.read_to_string(&mut err);
        }
        err
    }
}

/// Runs `cmd` with `stdin` (written while its output is read), killing it after `secs`.
fn run_with_input(mut cmd: Command, stdin: &str, secs: u64) -> Output {
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut w = child.stdin.take().unwrap();
    let input = stdin.to_string();
    let writer = std::thread::spawn(move || {
        let _ = w.write_all(input.as_bytes());
    });
    let drain = |mut r: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut b = Vec::new();
            let _ = r.read_to_end(&mut b);
            b
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let status = loop {
        if let Ok(Some(st)) = child.try_wait() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break child.wait().unwrap();
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let _ = writer.join();
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

fn pod_json(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
}

fn phase(c: &NodeCluster, name: &str) -> String {
    c.server.get_json(&["pod", name])["status"]["phase"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

#[test]
fn logs_exec_attach_port_forward_and_cp_with_kubectl_1_33_and_1_27() {
    let c = NodeCluster::start();
    let s = &c.server;
    s.create_json(&pod_json(
        "web",
        json!({"containers": [{"name": "nginx", "image": "nginx"}]}),
    ));
    s.create_json(&pod_json(
        "bb",
        json!({"terminationGracePeriodSeconds": 1, "containers": [
            {"name": "logs", "image": "busybox:1.36",
             "command": ["sh", "-c", "echo one; sleep 1; echo two >&2; sleep 1; echo three; sleep 1; echo late; exec sleep 3600"]},
            {"name": "ticker", "image": "busybox:1.36",
             "command": ["sh", "-c", "while true; do echo tick; sleep 1; done"]},
            {"name": "reader", "image": "busybox:1.36", "stdin": true,
             "command": ["sh", "-c", "while read l; do echo \"got $l\"; done"]},
        ]}),
    ));
    s.create_json(&pod_json(
        "restarts",
        json!({"terminationGracePeriodSeconds": 1, "containers": [
            {"name": "c", "image": "busybox:1.36",
             "command": ["sh", "-c", "echo run-$(date +%s%N); sleep 1; exit 1"]}]}),
    ));
    s.kubectl_ok(
        Some("1.33"),
        &[
            "wait",
            "--for=condition=Ready",
            "pod/web",
            "pod/bb",
            "--timeout=90s",
        ],
    );

    // ---- kubectl logs, from the CRI log file.
    let logs = |v: &str, args: &[&str]| {
        let mut a = vec!["logs", "bb", "-c", "logs"];
        a.extend_from_slice(args);
        s.kubectl_ok(Some(v), &a)
    };
    wait_for("the late line", 20, || {
        logs("1.33", &[]).contains("late").then_some(())
    });
    for v in VERSIONS {
        assert_eq!(logs(v, &[]), "one\ntwo\nthree\nlate\n", "{v}");
        assert_eq!(logs(v, &["--tail=2"]), "three\nlate\n", "{v}");
        assert_eq!(logs(v, &["--tail=0"]), "", "{v}");
        assert_eq!(logs(v, &["--limit-bytes=6"]), "one\ntw", "{v}");
        assert_eq!(logs(v, &["--since=1h"]), "one\ntwo\nthree\nlate\n", "{v}");
        let stamped = logs(v, &["--timestamps"]);
        let lines: Vec<&str> = stamped.lines().collect();
        assert_eq!(lines.len(), 4, "{stamped}");
        let (late_ts, late) = lines[3].split_once(' ').unwrap();
        assert_eq!(late, "late");
        for l in &lines {
            let ts = l.split_once(' ').unwrap().0;
            ts.parse::<jiff::Timestamp>()
                .unwrap_or_else(|e| panic!("{ts}: {e}"));
        }
        // sinceTime of "late" (a second after "three").
        assert_eq!(
            logs(v, &[&format!("--since-time={late_ts}")]),
            "late\n",
            "{v}"
        );
    }
    // Upstream's errors, as a Status from the API server.
    let o = s.kubectl_v(Some("1.33"), &["logs", "bb", "-c", "logs", "--previous"]);
    assert!(!o.status.success());
    assert!(
        text(&o.stderr).contains(
            "Error from server (BadRequest): previous terminated container \"logs\" in pod \"bb\" not found"
        ),
        "{}",
        out(&o)
    );
    let o = s.kubectl_v(
        Some("1.33"),
        &[
            "get",
            "--raw",
            "/api/v1/namespaces/default/pods/bb/log?container=nope",
        ],
    );
    assert!(
        text(&o.stderr).contains("container nope is not valid for pod bb"),
        "{}",
        out(&o)
    );

    // logs -f streams while the container runs and ends when it exits.
    s.create_json(&pod_json(
        "finite",
        json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36",
            "command": ["sh", "-c", "sleep 2; for i in 1 2 3 4; do echo n$i; sleep 1; done"]}]}),
    ));
    wait_for("finite running", 60, || {
        (phase(&c, "finite") == "Running").then_some(())
    });
    let started = Instant::now();
    let mut cmd = s.kubectl_cmd(Some("1.33"));
    cmd.args(["logs", "-f", "finite"]);
    let mut follow = Running::start(cmd, None);
    let mut arrivals = Vec::new();
    while let Ok((at, l)) = follow.lines.recv_timeout(Duration::from_secs(30)) {
        arrivals.push((at, l));
    }
    let ended = Instant::now();
    let status = follow.child.wait().unwrap();
    assert!(status.success(), "kubectl logs -f: {status}");
    let got: Vec<&str> = arrivals.iter().map(|(_, l)| l.as_str()).collect();
    assert_eq!(got, ["n1", "n2", "n3", "n4"]);
    assert!(
        ended.duration_since(arrivals[0].0) >= Duration::from_secs(2),
        "the first line came only at the end"
    );
    assert!(ended.duration_since(started) < Duration::from_secs(25));
    wait_for("finite Succeeded", 30, || {
        (phase(&c, "finite") == "Succeeded").then_some(())
    });

    for v in VERSIONS {
        // ---- exec: output, stderr, exit code.
        let o = s.kubectl_v(
            Some(v),
            &[
                "exec",
                "bb",
                "-c",
                "logs",
                "--",
                "sh",
                "-c",
                "echo out; echo err >&2; exit 3",
            ],
        );
        assert_eq!(o.status.code(), Some(3), "{v}: {}", out(&o));
        assert_eq!(text(&o.stdout), "out\n", "{v}");
        assert!(text(&o.stderr).contains("err\n"), "{v}: {}", out(&o));
        assert!(
            text(&o.stderr).contains("command terminated with exit code 3"),
            "{v}"
        );
        let ok = s.kubectl_ok(Some(v), &["exec", "bb", "-c", "logs", "--", "echo", "hi"]);
        assert_eq!(ok, "hi\n");
        let o = s.kubectl_v(
            Some(v),
            &["exec", "bb", "-c", "logs", "--", "no-such-command"],
        );
        assert_eq!(o.status.code(), Some(1), "{v}: {}", out(&o));
        assert!(
            text(&o.stderr).contains("executable file not found in $PATH"),
            "{v}: {}",
            out(&o)
        );
        // Output well beyond any window or buffer.
        let many = s.kubectl_ok(
            Some(v),
            &["exec", "bb", "-c", "logs", "--", "seq", "1", "100000"],
        );
        assert_eq!(many.lines().count(), 100_000, "{v}");
        assert!(many.ends_with("\n100000\n"), "{v}");

        // exec -i: stdin piped in, and its end reaches the process.
        let o = run_with_input(
            {
                let mut c = s.kubectl_cmd(Some(v));
                c.args([
                    "exec",
                    "-i",
                    "bb",
                    "-c",
                    "logs",
                    "--",
                    "sh",
                    "-c",
                    "cat; echo eof",
                ]);
                c
            },
            "a\nb\n",
            20,
        );
        assert!(o.status.success(), "{v}: {}", out(&o));
        assert_eq!(text(&o.stdout), "a\nb\neof\n", "{v}");
        // Megabytes in and out at the same time (cat echoes as it reads).
        let big: String = (0..60_000).map(|i| format!("line {i:>40}\n")).collect();
        let o = run_with_input(
            {
                let mut c = s.kubectl_cmd(Some(v));
                c.args(["exec", "-i", "bb", "-c", "logs", "--", "cat"]);
                c
            },
            &big,
            60,
        );
        assert!(o.status.success(), "{v}: {}", o.status);
        assert!(
            text(&o.stdout) == big,
            "{v}: {} bytes back of {}",
            o.stdout.len(),
            big.len()
        );

        // exec -it through a pseudo-terminal (util-linux `script`).
        if std::path::Path::new("/usr/bin/script").exists() {
            let kubectl = testkit::rkube::kubectl_binary(Some(v));
            let line = format!(
                "stty cols 101 rows 41; {} exec -it bb -c logs -- sh",
                kubectl.display()
            );
            let mut cmd = Command::new("script");
            cmd.args(["-qec", &line, "/dev/null"])
                .env("KUBECONFIG", &s.kubeconfig)
                .env("HOME", &s.home);
            let o = run_with_input(
                cmd,
                "tty; sleep 1; stty size; echo via-$((40+2))\nexit 5\n",
                30,
            );
            let screen = text(&o.stdout);
            assert_eq!(o.status.code(), Some(5), "{v}: {}", out(&o));
            assert!(screen.contains("/dev/pts/"), "{v}: {screen}");
            assert!(screen.contains("41 101"), "{v}: {screen}");
            assert!(screen.contains("via-42"), "{v}: {screen}");
        } else {
            eprintln!("skipping exec -it: util-linux `script` is missing");
        }

        // exec into a completed pod: upstream's refusal.
        let o = s.kubectl_v(Some(v), &["exec", "finite", "--", "true"]);
        assert!(!o.status.success());
        assert!(
            text(&o.stderr).contains(
                "cannot exec into a container in a completed pod; current phase is Succeeded"
            ),
            "{v}: {}",
            out(&o)
        );

        // ---- attach: the container's output, then its stdin.
        let mut cmd = s.kubectl_cmd(Some(v));
        cmd.args(["attach", "bb", "-c", "ticker"]);
        let mut a = Running::start(cmd, None);
        let seen = a.until(15, |l| l == "tick");
        let err = a.stop();
        assert!(seen.iter().any(|l| l == "tick"), "{v}: {seen:?} {err}");

        let mut cmd = s.kubectl_cmd(Some(v));
        cmd.args(["attach", "-i", "bb", "-c", "reader"]);
        let mut a = Running::start(cmd, Some(&format!("hello-{v}\n")));
        let want = format!("got hello-{v}");
        let seen = a.until(15, |l| l == want);
        let err = a.stop();
        assert!(seen.contains(&want), "{v}: {seen:?} {err}");

        // ---- port-forward: a local port to nginx's port 80, then HTTP through it.
        let mut cmd = s.kubectl_cmd(Some(v));
        cmd.args(["port-forward", "pod/web", ":80", "-v=6"]);
        let mut pf = Running::start(cmd, None);
        let seen = pf.until(20, |l| l.starts_with("Forwarding from 127.0.0.1:"));
        let port: u16 = seen
            .iter()
            .find_map(|l| l.strip_prefix("Forwarding from 127.0.0.1:"))
            .and_then(|r| r.split_once(' '))
            .map(|(p, _)| p.parse().unwrap())
            .unwrap_or_else(|| panic!("{v}: no forwarding line: {seen:?}"));
        for _ in 0..2 {
            let (code, body) = http_get("127.0.0.1", port, "/").unwrap();
            assert_eq!(code, 200, "{v}: {body}");
            assert!(body.contains("nginx"), "{v}: {body}");
        }
        let err = pf.stop();
        if v == "1.33" {
            // The WebSocket tunnel served it: no fallback to plain SPDY.
            assert!(
                !err.contains("fallback to secondary dialer"),
                "{v}: port-forward fell back: {err}"
            );
        }

        // ---- cp both ways (tar over exec).
        let dir = tempfile::tempdir().unwrap();
        let local = dir.path().join("up.txt");
        std::fs::create_dir(dir.path().join("tree")).unwrap();
        let content = format!("copied by kubectl {v}\n").repeat(2000);
        std::fs::write(&local, &content).unwrap();
        // Binary data, every byte value (xorshift).
        let mut x: u32 = 2463534242;
        let binary: Vec<u8> = (0..300_000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        std::fs::write(dir.path().join("tree").join("blob"), &binary).unwrap();
        std::fs::write(dir.path().join("tree").join("leaf"), "leaf\n").unwrap();
        let local_s = local.to_str().unwrap();
        s.kubectl_ok(Some(v), &["cp", local_s, "bb:/tmp/up.txt", "-c", "logs"]);
        let inside = s.kubectl_ok(
            Some(v),
            &["exec", "bb", "-c", "logs", "--", "cat", "/tmp/up.txt"],
        );
        assert_eq!(inside, content, "{v}");
        let tree = dir.path().join("tree");
        s.kubectl_ok(
            Some(v),
            &["cp", tree.to_str().unwrap(), "bb:/tmp/tree", "-c", "logs"],
        );
        let back = dir.path().join("back");
        s.kubectl_ok(
            Some(v),
            &["cp", "bb:/tmp/up.txt", back.to_str().unwrap(), "-c", "logs"],
        );
        assert_eq!(std::fs::read_to_string(&back).unwrap(), content, "{v}");
        let back_tree = dir.path().join("back-tree");
        s.kubectl_ok(
            Some(v),
            &[
                "cp",
                "bb:/tmp/tree",
                back_tree.to_str().unwrap(),
                "-c",
                "logs",
            ],
        );
        assert_eq!(
            std::fs::read_to_string(back_tree.join("leaf")).unwrap(),
            "leaf\n",
            "{v}"
        );
        assert!(
            std::fs::read(back_tree.join("blob")).unwrap() == binary,
            "{v}: binary file changed on its way"
        );
    }

    // kubectl 1.33 runs exec over WebSocket `v5.channel.k8s.io`, which the API server
    // translates to SPDY towards the kubelet: no fallback.
    let o = s.kubectl_v(
        Some("1.33"),
        &["exec", "bb", "-c", "logs", "-v=4", "--", "true"],
    );
    assert!(o.status.success(), "{}", out(&o));
    assert!(
        text(&o.stderr).contains("The subprotocol is v5.channel.k8s.io")
            && !text(&o.stderr).contains("RemoteCommand fallback"),
        "{}",
        out(&o)
    );

    // ---- logs --previous of a restarted container.
    let previous = wait_for("a restarted container", 60, || {
        let p = s.get_json(&["pod", "restarts"]);
        let restarted = p["status"]["containerStatuses"][0]["restartCount"].as_i64() >= Some(1);
        if !restarted {
            return None;
        }
        let o = s.kubectl_v(Some("1.27"), &["logs", "restarts", "--previous"]);
        o.status.success().then(|| text(&o.stdout))
    });
    assert!(previous.starts_with("run-"), "{previous}");
    for v in VERSIONS {
        let o = s.kubectl_v(Some(v), &["logs", "restarts", "--previous"]);
        assert!(text(&o.stdout).starts_with("run-"), "{v}: {}", out(&o));
    }
}
