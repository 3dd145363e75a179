//! `rkube kubectl` against the real kubectl 1.33 for kubeconfig handling and the verbs
//! built on it: `config …` over a merged `$KUBECONFIG` list (every step's output, exit code
//! and the resulting files compared), `version`, `cluster-info`, `auth whoami|can-i`, the
//! connection and configuration failures, the `-v=6..9` request log; and each client auth
//! decoration verified on the wire against a recording HTTPS server (token, basic auth,
//! x509 client certificate, impersonation, OIDC id-token with refresh, exec plugins).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::Arc;

use base64::Engine;
use serde_json::{Value, json};
use testkit::https::{HttpsServer, Request};
use testkit::{RkubeServer, TestCa, kubectl_binary, rkube_binary};

fn real() -> Command {
    let mut c = Command::new(kubectl_binary(Some("1.33")));
    c.stdin(Stdio::null()).env_remove("KUBECONFIG");
    c
}

fn ours() -> Command {
    let mut c = Command::new(rkube_binary());
    c.arg("kubectl")
        .stdin(Stdio::null())
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG");
    c
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn show(o: &Output) -> String {
    format!(
        "exit {:?}\nstdout:\n{}\nstderr:\n{}",
        o.status.code(),
        out(o),
        err(o)
    )
}

/// Asserts same exit code, stdout and stderr.
fn assert_same(what: &str, r: &Output, o: &Output) {
    assert_eq!(
        (r.status.code(), out(r), err(r)),
        (o.status.code(), out(o), err(o)),
        "{what}: kubectl vs rkube kubectl\nkubectl: {}\nours: {}",
        show(r),
        show(o)
    );
}

// ---------------------------------------------------------------------------------------
// config verbs: no server, two files merged through $KUBECONFIG.

const FILE_A: &str = "apiVersion: v1
kind: Config
current-context: a-ctx
clusters:
- name: shared
  cluster:
    server: https://a.example:6443
    certificate-authority: ca.crt
- name: only-a
  cluster:
    server: https://a2.example:6443
    insecure-skip-tls-verify: true
users:
- name: red-user
  user:
    token: a-token
contexts:
- name: a-ctx
  context:
    cluster: shared
    user: red-user
    namespace: ns-a
";

const FILE_B: &str = "apiVersion: v1
kind: Config
current-context: b-ctx
clusters:
- name: shared
  cluster:
    server: https://b.example:6443
- name: only-b
  cluster:
    server: https://b2.example:6443
    certificate-authority-data: Zm9vCg==
users:
- name: red-user
  user:
    username: b
    password: pw
- name: blue-user
  user:
    client-certificate-data: Zm9vCg==
    client-key-data: Zm9vCg==
contexts:
- name: b-ctx
  context:
    cluster: only-b
    user: blue-user
";

/// Each step runs with both binaries on identical files; outputs and files must match.
const STEPS: &[&str] = &[
    "config view",
    "config view --raw",
    "config view -o json",
    "config view -o jsonpath={.contexts[*].name}",
    "config view --minify",
    "config view --minify --context=b-ctx --raw",
    "config view --flatten",
    "config get-contexts",
    "config get-contexts -o name",
    "config get-contexts --no-headers",
    "config get-contexts b-ctx nope",
    "config current-context",
    "config use-context b-ctx",
    "config use-context nope",
    "config set-context new-ctx --cluster=only-b --namespace=ns1",
    "config set-context --current --namespace=other",
    "config set-context a-ctx --user=blue-user",
    "config set-cluster new-cluster --server=https://1.2.3.4 --insecure-skip-tls-verify",
    "config set-cluster only-b --server=https://changed:1",
    "config set-credentials new-user --token=abc",
    "config set-credentials exec-user --exec-command=/bin/true --exec-api-version=client.authentication.k8s.io/v1 --exec-arg=x --exec-env=A=b",
    "config set users.new-user.token xyz",
    "config set contexts.new-ctx.namespace ns2",
    "config unset contexts.new-ctx.namespace",
    "config rename-context new-ctx renamed",
    "config rename-context nope x",
    "config delete-context renamed",
    "config delete-context nope",
    "config delete-cluster new-cluster",
    "config delete-user new-user",
    "config delete-context b-ctx",
    "config current-context",
    "config view",
];

struct Files {
    dir: tempfile::TempDir,
}

impl Files {
    fn new() -> Files {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Files { dir }
    }

    fn reset(&self) {
        std::fs::write(self.p("a"), FILE_A).unwrap();
        std::fs::write(self.p("b"), FILE_B).unwrap();
        std::fs::write(self.p("ca.crt"), "fake\n").unwrap();
    }

    fn p(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn env(&self, c: &mut Command) {
        let list = std::env::join_paths([self.p("a"), self.p("missing"), self.p("b")]).unwrap();
        c.env("HOME", self.p("home")).env("KUBECONFIG", list);
    }

    fn read(&self, name: &str) -> String {
        std::fs::read_to_string(self.p(name)).unwrap_or_default()
    }
}

/// Runs every step with `mk`'s binary from fresh files: (output, file a, file b) per step.
fn run_steps(files: &Files, mk: fn() -> Command) -> Vec<(Output, String, String)> {
    files.reset();
    STEPS
        .iter()
        .map(|step| {
            let mut c = mk();
            files.env(&mut c);
            let o = c.args(step.split(' ')).output().unwrap();
            (o, files.read("a"), files.read("b"))
        })
        .collect()
}

/// `get-clusters`/`get-users` print in Go's map order: compare sorted.
fn sorted_lines(s: &str) -> Vec<String> {
    let mut v: Vec<String> = s.lines().map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn config_verbs_over_a_merged_kubeconfig_list_match_kubectl() {
    let files = Files::new();
    let theirs = run_steps(&files, real);
    let mine = run_steps(&files, ours);
    for ((step, (r, ra, rb)), (o, oa, ob)) in STEPS.iter().zip(&theirs).zip(&mine) {
        assert_same(step, r, o);
        assert_eq!(ra, oa, "{step}: file a differs");
        assert_eq!(rb, ob, "{step}: file b differs");
    }
    // The merge rules, spelled out: the first file wins whole entries and current-context;
    // the missing file in the middle is skipped.
    let view: Value = serde_json::from_slice(&mine[2].0.stdout).unwrap();
    assert_eq!(view["current-context"], "a-ctx");
    let shared = view["clusters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == "shared")
        .unwrap();
    assert_eq!(shared["cluster"]["server"], "https://a.example:6443");
    let red = view["users"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["name"] == "red-user")
        .unwrap();
    assert_eq!(red["user"], json!({"token": "REDACTED"}));
    // use-context wrote the first existing file; a context defined in b stays in b.
    let at = |step: &str| STEPS.iter().position(|s| *s == step).unwrap();
    assert!(
        mine[at("config use-context b-ctx")]
            .1
            .contains("current-context: b-ctx")
    );
    let after = &mine[at("config set-context --current --namespace=other")];
    assert!(after.2.contains("namespace: other"), "{}", after.2);
    assert!(!after.1.contains("namespace: other"), "{}", after.1);

    for args in [["config", "get-clusters"], ["config", "get-users"]] {
        files.reset();
        let mut r = real();
        files.env(&mut r);
        let r = r.args(args).output().unwrap();
        let mut o = ours();
        files.env(&mut o);
        let o = o.args(args).output().unwrap();
        assert_eq!(r.status.code(), o.status.code());
        assert_eq!(sorted_lines(&out(&r)), sorted_lines(&out(&o)), "{args:?}");
    }
}

#[test]
fn explicit_kubeconfig_and_empty_configs_match_kubectl() {
    let files = Files::new();
    files.reset();
    let explicit = files.p("b").display().to_string();
    let cases: Vec<Vec<String>> = vec![
        // --kubeconfig: only that file, and writes go there.
        vec![
            "config".into(),
            "view".into(),
            format!("--kubeconfig={explicit}"),
        ],
        vec![
            "config".into(),
            "set-context".into(),
            "x".into(),
            "--namespace=n".into(),
            format!("--kubeconfig={explicit}"),
        ],
        vec![
            "config".into(),
            "use-context".into(),
            "x".into(),
            format!("--kubeconfig={explicit}"),
        ],
        vec![
            "config".into(),
            "view".into(),
            "--kubeconfig=/nonexistent/file".into(),
        ],
        vec![
            "get".into(),
            "pods".into(),
            "--kubeconfig=/nonexistent/file".into(),
        ],
    ];
    for args in &cases {
        let mut results = Vec::new();
        for mk in [real as fn() -> Command, ours] {
            files.reset();
            let mut c = mk();
            c.env("HOME", files.p("home"));
            let o = c.args(args).output().unwrap();
            results.push((o, files.read("a"), files.read("b")));
        }
        assert_same(&args.join(" "), &results[0].0, &results[1].0);
        assert_eq!(results[0].2, results[1].2, "{args:?}: file b differs");
    }
    // No configuration at all: an empty view, and kubectl's localhost:8080 for requests.
    let empty = tempfile::tempdir().unwrap();
    for args in [
        vec!["config", "view"],
        vec!["config", "current-context"],
        vec!["config", "get-contexts"],
        vec!["version", "-o", "json", "--client=false"],
        vec!["auth", "whoami"],
    ] {
        let r = real()
            .env("HOME", empty.path())
            .args(&args)
            .output()
            .unwrap();
        let o = ours()
            .env("HOME", empty.path())
            .args(&args)
            .output()
            .unwrap();
        assert_eq!(
            r.status.code(),
            o.status.code(),
            "{args:?}\n{}\n{}",
            show(&r),
            show(&o)
        );
        if args[0] == "config" {
            assert_same(&args.join(" "), &r, &o);
        } else {
            let last = |o: &Output| err(o).lines().last().unwrap_or_default().to_string();
            assert_eq!(last(&r), last(&o), "{args:?}");
            assert_eq!(
                last(&o),
                "The connection to the server localhost:8080 was refused - did you specify the right host or port?"
            );
        }
    }
}

// ---------------------------------------------------------------------------------------
// Against a real server.

const TOKENS: &str = "tok-alice,alice,uid-alice,\"dev,ops\"\n";
const PASSWORDS: &str = "secret-carol,carol,uid-carol,qa\n";

fn server_with_static_auth(files: &Path) -> RkubeServer {
    let tokens = files.join("tokens.csv");
    let passwords = files.join("passwords.csv");
    std::fs::write(&tokens, TOKENS).unwrap();
    std::fs::write(&passwords, PASSWORDS).unwrap();
    // No controller manager: nothing here needs it, and the server is ready sooner.
    RkubeServer::start_with(&[
        "--disable-controller-manager",
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--basic-auth-file",
        passwords.to_str().unwrap(),
    ])
}

fn ours_with(server: &RkubeServer, kubeconfig: &Path, args: &[&str]) -> Output {
    server
        .rkubectl_cmd()
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

/// klog lines without their time, pid and durations.
fn normalize_log(s: &str) -> Vec<String> {
    s.lines()
        .filter(|l| l.contains("round_trippers.go") || l.starts_with('\t') || l.starts_with(" >"))
        .filter(|l| !l.contains("User-Agent"))
        .map(|l| {
            let l = match l.split_once("] ") {
                Some((_, rest)) if l.starts_with('I') => rest.to_string(),
                _ => l.to_string(),
            };
            match l.find(" milliseconds=") {
                Some(i) => l[..i].to_string(),
                None => l,
            }
        })
        .filter(|l| !l.starts_with("Date:") && !l.starts_with("\tDate:") && !l.contains("Audit-Id"))
        .collect()
}

#[test]
fn server_verbs_and_auth_match_kubectl() {
    let files = tempfile::tempdir().unwrap();
    let server = server_with_static_auth(files.path());

    // version: same server line; the client line is ours.
    let (r, o) = server.both(&["version"]);
    assert_eq!(r.status.code(), Some(0));
    assert_eq!(o.status.code(), Some(0), "{}", show(&o));
    let server_line = |o: &Output| {
        out(o)
            .lines()
            .find(|l| l.starts_with("Server Version:"))
            .map(str::to_string)
    };
    assert_eq!(server_line(&r), server_line(&o));
    assert!(out(&o).starts_with("Client Version: v1.33."), "{}", out(&o));
    let (r, o) = server.both(&["version", "-o", "json"]);
    let rv: Value = serde_json::from_slice(&r.stdout).unwrap();
    let ov: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(rv["serverVersion"], ov["serverVersion"]);
    assert_eq!(ov["clientVersion"]["major"], "1");
    let o = server.rkubectl(&["version", "--client", "-o", "yaml"]);
    assert!(out(&o).starts_with("clientVersion:\n"), "{}", show(&o));
    assert!(!out(&o).contains("serverVersion"));
    let (r, o) = server.both(&["version", "-o", "xml"]);
    assert_same("version -o xml", &r, &o);

    // cluster-info, with and without a cluster service.
    let (r, o) = server.both(&["cluster-info"]);
    assert_same("cluster-info", &r, &o);
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "service",
            "clusterip",
            "kube-dns",
            "-n",
            "kube-system",
            "--tcp=53:53",
        ],
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "label",
            "service",
            "kube-dns",
            "-n",
            "kube-system",
            "kubernetes.io/cluster-service=true",
            "kubernetes.io/name=CoreDNS",
        ],
    );
    let (r, o) = server.both(&["cluster-info"]);
    assert_same("cluster-info with CoreDNS", &r, &o);
    assert!(out(&o).contains("CoreDNS is running at"), "{}", out(&o));

    // auth whoami: x509 (the admin), a static token, basic auth, impersonation.
    let (r, o) = server.both(&["auth", "whoami"]);
    assert_same("auth whoami", &r, &o);
    let alice = server.user_kubeconfig("alice", "    token: tok-alice");
    let carol = server.user_kubeconfig("carol", "    username: carol\n    password: secret-carol");
    for (name, kc) in [("alice", &alice), ("carol", &carol)] {
        let r = server.kubectl_with(kc, &["auth", "whoami"]);
        let o = ours_with(&server, kc, &["auth", "whoami"]);
        assert_same(&format!("auth whoami as {name}"), &r, &o);
        assert!(out(&o).contains(name), "{}", show(&o));
    }
    let bad = server.user_kubeconfig("bad", "    token: not-a-token");
    let r = server.kubectl_with(&bad, &["get", "namespaces"]);
    let o = ours_with(&server, &bad, &["get", "namespaces"]);
    assert_same("bad token", &r, &o);
    for args in [
        &[
            "auth",
            "whoami",
            "--as=bob",
            "--as-group=g1",
            "--as-group=g2",
        ][..],
        &["auth", "whoami", "-o", "yaml", "--as=bob", "--as-uid=u-1"],
    ] {
        let (r, o) = server.both(args);
        assert_eq!(r.status.code(), o.status.code(), "{args:?}");
        let strip = |s: String| {
            s.lines()
                .filter(|l| !l.contains("creationTimestamp"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(strip(out(&r)), strip(out(&o)), "{args:?}");
    }

    // auth can-i: answers, exit codes, warnings, --list.
    for args in [
        &["auth", "can-i", "get", "pods"][..],
        &["auth", "can-i", "get", "pods", "--as=alice"],
        &[
            "auth",
            "can-i",
            "create",
            "deployments.apps",
            "-n",
            "kube-system",
        ],
        &["auth", "can-i", "get", "pods/log", "--all-namespaces"],
        &[
            "auth",
            "can-i",
            "list",
            "pods",
            "--subresource=log",
            "--as=alice",
        ],
        &["auth", "can-i", "get", "nodes", "-n", "default"],
        &["auth", "can-i", "get", "foo.bar"],
        &["auth", "can-i", "get", "/healthz"],
        &["auth", "can-i", "frobnicate", "pods"],
        &["auth", "can-i", "*", "*"],
        &["auth", "can-i", "get", "pods", "-q", "--as=alice"],
        &["auth", "can-i", "get"],
        &["auth", "can-i", "--list", "--as=alice"],
        &[
            "auth",
            "can-i",
            "--list",
            "--as=alice",
            "--no-headers",
            "-n",
            "kube-system",
        ],
        &["auth", "can-i", "--list", "pods"],
    ] {
        let (r, o) = server.both(args);
        assert_same(&args.join(" "), &r, &o);
    }
}

#[test]
fn failures_and_the_request_log_match_kubectl() {
    let files = tempfile::tempdir().unwrap();
    let server = RkubeServer::start_with(&["--disable-controller-manager"]);

    // Connection and configuration failures.
    let other_ca = TestCa::new(files.path(), "other");
    let ca_flag = format!("--certificate-authority={}", other_ca.ca_file.display());
    for args in [
        &["get", "namespaces", "--server=https://127.0.0.1:1"][..],
        &["version", "--server=https://127.0.0.1:1"],
        &["get", "namespaces", &ca_flag],
        &["get", "namespaces", "--tls-server-name=foo"],
        &["get", "namespaces", "--context=nope"],
        &["get", "namespaces", "--user=nope"],
        &["get", "namespaces", "--cluster=nope"],
        &["get", "namespaces", "--token=x", "--username=a"],
        &["get", "namespaces", "--request-timeout=abc"],
        &[
            "get",
            "namespaces",
            "--insecure-skip-tls-verify",
            "--request-timeout=5s",
        ],
    ] {
        let (r, o) = server.both(args);
        assert_eq!(
            r.status.code(),
            o.status.code(),
            "{args:?}\n{}\n{}",
            show(&r),
            show(&o)
        );
        let last = |o: &Output| {
            err(o)
                .lines()
                .rfind(|l| !l.is_empty() && !l.starts_with('E'))
                .unwrap_or_default()
                .to_string()
        };
        assert_eq!(last(&r), last(&o), "{args:?}");
    }

    // The request log: one line per request at -v=6, headers at 7 and 8, curl at 9.
    let (r, o) = server.both(&["version", "-v=6"]);
    let lines: Vec<String> = err(&o)
        .lines()
        .filter(|l| l.contains("round_trippers"))
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 1, "{}", err(&o));
    let re_prefix = |l: &str| {
        let b = l.as_bytes();
        b[0] == b'I'
            && b[5] == b' '
            && b[8] == b':'
            && b[14] == b'.'
            && l.contains(
                " round_trippers.go:632] \"Response\" verb=\"GET\" url=\"https://127.0.0.1:",
            )
    };
    assert!(re_prefix(&lines[0]), "{}", lines[0]);
    assert_eq!(normalize_log(&err(&r)), normalize_log(&err(&o)));
    for v in ["-v=7", "-v=8", "-v=9"] {
        let (r, o) = server.both(&["version", v, "--token=abc", "--as=bob"]);
        let norm = |o: &Output| {
            normalize_log(&err(o))
                .into_iter()
                .filter(|l| {
                    !l.contains("Content-Length")
                        && !l.contains("X-Kubernetes")
                        && !l.contains("Cache-Control")
                })
                .collect::<Vec<_>>()
        };
        let (nr, no) = (norm(&r), norm(&o));
        // The request lines (verb, url, masked credentials, impersonation) are identical.
        let requests = |n: &[String]| {
            n.iter()
                .filter(|l| {
                    l.contains("\"Request\"")
                        || l.starts_with("\tAuthorization")
                        || l.starts_with("\tImpersonate")
                        || l.starts_with("\tAccept")
                })
                .cloned()
                .collect::<Vec<_>>()
        };
        assert_eq!(
            requests(&nr),
            requests(&no),
            "{v}\nkubectl: {}\nours: {}",
            err(&r),
            err(&o)
        );
        assert!(!err(&o).contains("abc\""), "{v}: the token reached the log");
    }
}

// ---------------------------------------------------------------------------------------
// On the wire.

const EXEC_V1: &str = "client.authentication.k8s.io/v1";

fn recorder(ca: &TestCa) -> HttpsServer {
    let url: Arc<std::sync::Mutex<String>> = Arc::default();
    let u = Arc::clone(&url);
    let server = HttpsServer::start_accepting_client_certs(
        ca,
        Arc::new(move |r: &Request<'_>| match r.path {
            "/version" => (
                200,
                json!({"major": "1", "minor": "33", "gitVersion": "v1.33.0-recorder"}),
            ),
            "/.well-known/openid-configuration" => {
                let base = u.lock().unwrap().clone();
                (
                    200,
                    json!({"issuer": base, "token_endpoint": format!("{base}/token")}),
                )
            }
            "/token" => (
                200,
                json!({"access_token": "a", "token_type": "Bearer", "id_token": fresh_jwt("refreshed"), "refresh_token": "rt-2"}),
            ),
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" => (
                201,
                json!({"kind": "SelfSubjectAccessReview", "apiVersion": "authorization.k8s.io/v1", "status": {"allowed": true}}),
            ),
            "/apis/authentication.k8s.io/v1/selfsubjectreviews" => (
                201,
                json!({"kind": "SelfSubjectReview", "apiVersion": "authentication.k8s.io/v1", "status": {"userInfo": {"username": "x"}}}),
            ),
            _ => (
                404,
                json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
            ),
        }),
    );
    *url.lock().unwrap() = server.url("");
    server
}

fn jwt(sub: &str, exp: i64) -> String {
    let e = |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
    format!(
        "{}.{}.sig",
        e(&json!({"alg": "none"})),
        e(&json!({"sub": sub, "exp": exp}))
    )
}

fn fresh_jwt(sub: &str) -> String {
    jwt(sub, jiff::Timestamp::now().as_second() + 3600)
}

fn kubeconfig(dir: &Path, name: &str, server: &str, ca: &Path, user_yaml: &str) -> PathBuf {
    let path = dir.join(format!("{name}.kubeconfig"));
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {server}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n{user_yaml}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            ca.display()
        ),
    )
    .unwrap();
    path
}

/// Runs `args` with a binary against `kc`; the requests the recorder saw meanwhile.
fn wire(
    rec: &HttpsServer,
    mk: fn() -> Command,
    home: &Path,
    kc: &Path,
    args: &[&str],
) -> (Output, Vec<testkit::https::Recorded>) {
    let before = rec.recorded().len();
    let o = mk()
        .env("HOME", home)
        .env("KUBECONFIG", kc)
        .args(args)
        .output()
        .unwrap();
    let seen = rec.recorded()[before..].to_vec();
    (o, seen)
}

#[test]
fn auth_decorations_on_the_wire() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d, "recorder");
    let rec = recorder(&ca);
    let url = rec.url("");
    let home = d.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let client = ca.issue("client", "jane", &[]);

    // Token, basic auth, and impersonation headers: exactly what kubectl sends.
    let cases = [
        ("token", "    token: tok-123".to_string(), vec![]),
        (
            "basic",
            "    username: jane\n    password: s3cret".to_string(),
            vec![],
        ),
        (
            "imp",
            "    token: t".to_string(),
            vec!["--as=bob", "--as-group=g1", "--as-group=g2", "--as-uid=u-9"],
        ),
        (
            "flagtoken",
            "    token: from-file".to_string(),
            vec!["--token=from-flag"],
        ),
    ];
    for (name, user, extra) in &cases {
        let kc = kubeconfig(d, name, &url, &ca.ca_file, user);
        let mut args = vec!["version", "-o", "json"];
        args.extend(extra.iter().copied());
        let (r, rs) = wire(&rec, real, &home, &kc, &args);
        let (o, os) = wire(&rec, ours, &home, &kc, &args);
        assert_eq!(r.status.code(), Some(0), "{}", show(&r));
        assert_eq!(o.status.code(), Some(0), "{}", show(&o));
        let req = |s: &[testkit::https::Recorded]| {
            let v = s
                .iter()
                .find(|q| q.path.starts_with("/version"))
                .unwrap()
                .clone();
            let pick = |h: &str| {
                v.header_all(h)
                    .into_iter()
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            (
                pick("authorization"),
                pick("impersonate-user"),
                pick("impersonate-group"),
                pick("impersonate-uid"),
            )
        };
        assert_eq!(req(&rs), req(&os), "{name}");
    }
    let kc = kubeconfig(
        d,
        "basic2",
        &url,
        &ca.ca_file,
        "    username: jane\n    password: s3cret",
    );
    let (_, seen) = wire(&rec, ours, &home, &kc, &["version"]);
    let expected = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode("jane:s3cret")
    );
    assert_eq!(seen[0].header("authorization"), Some(expected.as_str()));

    // x509: the client certificate of the kubeconfig (file or embedded data) is presented.
    use rustls::pki_types::CertificateDer;
    use rustls::pki_types::pem::PemObject;
    let der = CertificateDer::from_pem_file(&client.cert_file)
        .unwrap()
        .as_ref()
        .to_vec();
    let by_file = format!(
        "    client-certificate: {}\n    client-key: {}",
        client.cert_file.display(),
        client.key_file.display()
    );
    let b64 =
        |p: &Path| base64::engine::general_purpose::STANDARD.encode(std::fs::read(p).unwrap());
    let embedded = format!(
        "    client-certificate-data: {}\n    client-key-data: {}",
        b64(&client.cert_file),
        b64(&client.key_file)
    );
    for (name, user) in [("x509-file", by_file), ("x509-data", embedded)] {
        let kc = kubeconfig(d, name, &url, &ca.ca_file, &user);
        let (o, seen) = wire(&rec, ours, &home, &kc, &["version"]);
        assert!(o.status.success(), "{}", show(&o));
        assert_eq!(
            seen[0].client_cert.as_deref(),
            Some(der.as_slice()),
            "{name}"
        );
        assert_eq!(seen[0].header("authorization"), None);
    }
    // With the flags instead of the kubeconfig.
    let kc = kubeconfig(d, "anon", &url, &ca.ca_file, "    {}");
    let cert_flag = format!("--client-certificate={}", client.cert_file.display());
    let key_flag = format!("--client-key={}", client.key_file.display());
    let (o, seen) = wire(&rec, ours, &home, &kc, &["version", &cert_flag, &key_flag]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(seen[0].client_cert.as_deref(), Some(der.as_slice()));

    // OIDC: a valid id-token is the bearer token.
    let id = fresh_jwt("alice");
    let oidc = |id: &str, refresh: &str| {
        format!(
            "    auth-provider:\n      name: oidc\n      config:\n        client-id: cli\n        client-secret: shh\n        id-token: {id}\n        idp-issuer-url: {url}\n        idp-certificate-authority: {}\n        refresh-token: {refresh}",
            ca.ca_file.display()
        )
    };
    let kc = kubeconfig(d, "oidc", &url, &ca.ca_file, &oidc(&id, "rt-1"));
    let (o, seen) = wire(&rec, ours, &home, &kc, &["version"]);
    assert!(o.status.success(), "{}", show(&o));
    assert_eq!(seen.len(), 1);
    assert_eq!(
        seen[0].header("authorization"),
        Some(format!("Bearer {id}").as_str())
    );
    // An expired one is refreshed at the issuer's token endpoint, the new tokens used and
    // written back to the kubeconfig, as kubectl does.
    let expired = jwt("alice", 1000);
    for (who, mk) in [("kubectl", real as fn() -> Command), ("ours", ours)] {
        let kc = kubeconfig(
            d,
            &format!("oidc-{who}"),
            &url,
            &ca.ca_file,
            &oidc(&expired, "rt-1"),
        );
        let (o, seen) = wire(&rec, mk, &home, &kc, &["version"]);
        assert!(o.status.success(), "{who}: {}", show(&o));
        let paths: Vec<&str> = seen.iter().map(|s| s.path.as_str()).collect();
        assert!(
            paths.contains(&"/.well-known/openid-configuration"),
            "{who}: {paths:?}"
        );
        let token = seen
            .iter()
            .find(|s| s.path == "/token")
            .unwrap_or_else(|| panic!("{who}: {paths:?}"));
        let form = String::from_utf8_lossy(&token.body).to_string();
        assert!(form.contains("grant_type=refresh_token"), "{who}: {form}");
        assert!(form.contains("refresh_token=rt-1"), "{who}: {form}");
        let version = seen
            .iter()
            .find(|s| s.path.starts_with("/version"))
            .unwrap();
        let bearer = version.header("authorization").unwrap();
        assert!(
            bearer.starts_with("Bearer ") && bearer != format!("Bearer {expired}"),
            "{who}: {bearer}"
        );
        let written = std::fs::read_to_string(&kc).unwrap();
        assert!(written.contains("refresh-token: rt-2"), "{who}: {written}");
        assert!(!written.contains(&expired), "{who}: {written}");
    }

    // Exec plugin (client.authentication.k8s.io/v1): KUBERNETES_EXEC_INFO, the token on
    // every request, the plugin run once per command while the credential is fresh.
    let script = d.join("plugin.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\necho \"$KUBERNETES_EXEC_INFO\" > {info}\necho \"$PLUGIN_ENV\" >> {runs}\necho '{{\"apiVersion\":\"{EXEC_V1}\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"exec-token\",\"expirationTimestamp\":\"2099-01-01T00:00:00Z\"}}}}'\n",
            info = d.join("exec-info.json").display(),
            runs = d.join("exec-runs").display(),
        ),
    )
    .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let exec_user = format!(
        "    exec:\n      apiVersion: {EXEC_V1}\n      command: {}\n      env:\n      - name: PLUGIN_ENV\n        value: hello\n      interactiveMode: Never\n      provideClusterInfo: true",
        script.display()
    );
    let kc = kubeconfig(d, "exec", &url, &ca.ca_file, &exec_user);
    let mut infos = Vec::new();
    for (who, mk) in [("kubectl", real as fn() -> Command), ("ours", ours)] {
        let _ = std::fs::remove_file(d.join("exec-runs"));
        let (o, seen) = wire(&rec, mk, &home, &kc, &["auth", "can-i", "*", "*"]);
        assert!(o.status.success(), "{who}: {}", show(&o));
        assert!(!seen.is_empty());
        for s in &seen {
            assert_eq!(
                s.header("authorization"),
                Some("Bearer exec-token"),
                "{who}: {}",
                s.path
            );
        }
        let (o, seen2) = wire(&rec, mk, &home, &kc, &["auth", "whoami"]);
        assert!(o.status.success(), "{who}: {}", show(&o));
        assert_eq!(seen2[0].header("authorization"), Some("Bearer exec-token"));
        let runs = std::fs::read_to_string(d.join("exec-runs")).unwrap();
        assert_eq!(runs, "hello\nhello\n", "{who}: one run per command");
        let info: Value =
            serde_json::from_str(&std::fs::read_to_string(d.join("exec-info.json")).unwrap())
                .unwrap();
        infos.push(info);
    }
    assert_eq!(infos[0], infos[1]);
    assert_eq!(infos[1]["spec"]["interactive"], false);
    assert_eq!(infos[1]["spec"]["cluster"]["server"], url.as_str());

    // A plugin that is not installed: kubectl's message.
    let missing = format!(
        "    exec:\n      apiVersion: {EXEC_V1}\n      command: no-such-plugin\n      interactiveMode: Never\n      installHint: install it"
    );
    let kc = kubeconfig(d, "missing", &url, &ca.ca_file, &missing);
    let (r, _) = wire(&rec, real, &home, &kc, &["version", "-o", "json"]);
    let (o, _) = wire(&rec, ours, &home, &kc, &["version", "-o", "json"]);
    assert_eq!(r.status.code(), o.status.code());
    assert!(
        err(&o).contains("exec: executable no-such-plugin not found"),
        "{}",
        err(&o)
    );
    assert!(err(&o).contains("install it"), "{}", err(&o));

    // A TLS mismatch and an unreachable port.
    let other = TestCa::new(d, "other");
    let kc = kubeconfig(d, "wrongca", &url, &other.ca_file, "    token: t");
    let (r, _) = wire(&rec, real, &home, &kc, &["auth", "whoami"]);
    let (o, _) = wire(&rec, ours, &home, &kc, &["auth", "whoami"]);
    assert_same("wrong CA", &r, &o);
}
