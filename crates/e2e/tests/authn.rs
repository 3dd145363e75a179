//! The authentication chain against the real `rkube server` and the real kubectl: static
//! tokens (`--token-auth-file`), basic auth (`--basic-auth-file`), x509 from the server's
//! client CA only, anonymous requests only to the public paths unless `--anonymous-auth`,
//! and `kubectl auth whoami` (`SelfSubjectReview`). Raw requests go through `curl`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use testkit::{RkubeServer, TestCa};

// `root` and `carol` are in `system:masters`, so what they do is allowed whatever the
// authorization mode; the others are only authenticated (RBAC's `system:basic-user` lets
// them create SelfSubjectReviews).
const TOKENS: &str = "\
tok-alice,alice,uid-alice,\"dev,ops\",ignored-column
tok-bob,bob,uid-bob
tok-root,root,uid-root,system:masters
";
const PASSWORDS: &str = "secret-carol,carol,uid-carol,\"qa,system:masters\"\n";

struct Env {
    server: RkubeServer,
    _files: tempfile::TempDir,
}

impl Env {
    fn start(extra: &[&str]) -> Env {
        let files = tempfile::tempdir().unwrap();
        let tokens = files.path().join("tokens.csv");
        let passwords = files.path().join("passwords.csv");
        std::fs::write(&tokens, TOKENS).unwrap();
        std::fs::write(&passwords, PASSWORDS).unwrap();
        let mut args = vec![
            "--token-auth-file",
            tokens.to_str().unwrap(),
            "--basic-auth-file",
            passwords.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        // Debug logging: the tests check that no credential reaches the log.
        let server = RkubeServer::start_logging(&args, Some("debug"));
        Env {
            server,
            _files: files,
        }
    }

    fn tls(&self) -> PathBuf {
        self.server.dir.path().join("data").join("tls")
    }

    fn url(&self) -> String {
        format!("https://127.0.0.1:{}", self.server.port)
    }

    /// A kubeconfig for this server whose user is `user_yaml` (the body of `user:`).
    fn kubeconfig(&self, name: &str, user_yaml: &str) -> PathBuf {
        self.server.user_kubeconfig(name, user_yaml)
    }

    fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.server.kubectl_with(kubeconfig, args)
    }

    /// `GET path` with extra curl arguments; the HTTP code and body.
    fn curl(&self, path: &str, extra: &[&str]) -> (u16, Value) {
        let out = Command::new("curl")
            .args(["--http1.1", "-sS", "--max-time", "30", "--cacert"])
            .arg(self.tls().join("server-ca.crt"))
            .args(["-w", "\n%{http_code}"])
            .args(extra)
            .arg(format!("{}{path}", self.url()))
            .output()
            .unwrap_or_else(|e| panic!("cannot run curl (apt-get install curl): {e}"));
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", ""));
        let code = code
            .trim()
            .parse::<u16>()
            .unwrap_or_else(|_| panic!("curl failed: {}", String::from_utf8_lossy(&out.stderr)));
        (code, serde_json::from_str(body).unwrap_or(Value::Null))
    }
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "kubectl failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn unauthorized(out: &Output) {
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("You must be logged in to the server (Unauthorized)"),
        "{err}"
    );
}

fn assert_401(code: u16, body: &Value) {
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["status"], "Failure");
    assert_eq!(body["message"], "Unauthorized");
    assert_eq!(body["reason"], "Unauthorized");
    assert_eq!(body["code"], 401);
}

#[test]
fn tokens_basic_auth_whoami_and_raw_requests() {
    let env = Env::start(&[]);

    // A token from the file: kubectl works, and whoami shows the user and groups.
    let root = env.kubeconfig("root", "    token: tok-root");
    ok(&env.kubectl_as(&root, &["get", "pods", "-A"]));
    let alice = env.kubeconfig("alice", "    token: tok-alice");
    let who = ok(&env.kubectl_as(&alice, &["auth", "whoami"]));
    assert!(who.contains("alice"), "{who}");
    assert!(who.contains("uid-alice"), "{who}");
    assert!(who.contains("[dev ops system:authenticated]"), "{who}");
    let review: Value = serde_json::from_str(&ok(
        &env.kubectl_as(&alice, &["auth", "whoami", "-o", "json"])
    ))
    .unwrap();
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(review["status"]["userInfo"]["username"], "alice");
    assert_eq!(review["status"]["userInfo"]["uid"], "uid-alice");

    // A user without groups in the file still is in system:authenticated.
    let bob = env.kubeconfig("bob", "    token: tok-bob");
    let who = ok(&env.kubectl_as(&bob, &["auth", "whoami"]));
    assert!(who.contains("[system:authenticated]"), "{who}");

    // The admin certificate: system:masters.
    let who = ok(&env.server.kubectl_v(Some("1.33"), &["auth", "whoami"]));
    assert!(who.contains("system:masters"), "{who}");

    // A wrong token.
    let wrong = env.kubeconfig("wrong", "    token: tok-nobody");
    unauthorized(&env.kubectl_as(&wrong, &["get", "pods"]));

    // Basic auth, good and bad.
    let carol = env.kubeconfig("carol", "    username: carol\n    password: secret-carol");
    ok(&env.kubectl_as(&carol, &["get", "namespaces"]));
    let who = ok(&env.kubectl_as(&carol, &["auth", "whoami"]));
    assert!(
        who.contains("carol") && who.contains("[qa system:masters system:authenticated]"),
        "{who}"
    );
    let bad = env.kubeconfig("carol-bad", "    username: carol\n    password: wrong");
    unauthorized(&env.kubectl_as(&bad, &["get", "namespaces"]));

    // The selfsubjectreviews resource is discovered as create-only.
    let res = ok(&env.kubectl_as(
        &root,
        &[
            "api-resources",
            "--api-group=authentication.k8s.io",
            "-o",
            "wide",
        ],
    ));
    let line = res
        .lines()
        .find(|l| l.starts_with("selfsubjectreviews "))
        .unwrap_or_else(|| panic!("{res}"));
    let cols: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "selfsubjectreviews",
            "authentication.k8s.io/v1",
            "false",
            "SelfSubjectReview",
            "create"
        ],
        "{res}"
    );

    let explain = ok(&env.kubectl_as(&root, &["explain", "selfsubjectreviews.status.userInfo"]));
    assert!(explain.contains("username"), "{explain}");

    bearer_header_forms_and_anonymous(&env);

    // Credentials never reach the server's log, even at debug level.
    let log = std::fs::read_to_string(env.server.dir.path().join("server.log")).unwrap();
    assert!(log.contains("DEBUG"), "the server logged at debug level");
    for secret in ["tok-root", "tok-alice", "tok-rootx", "secret-carol"] {
        assert!(!log.contains(secret), "{secret} leaked into the server log");
    }
}

/// Raw requests: header forms, public paths, certificates from another CA.
fn bearer_header_forms_and_anonymous(env: &Env) {
    // Upstream trims the header: trailing whitespace does not make the token wrong.
    let (code, body) = env.curl(
        "/api/v1/namespaces",
        &["-H", "Authorization: Bearer tok-root   "],
    );
    assert_eq!(code, 200, "{body}");
    let (code, _) = env.curl(
        "/api/v1/namespaces",
        &["-H", "Authorization: bearer tok-root"],
    );
    assert_eq!(code, 200);
    // Two spaces: an empty token, i.e. no credentials.
    let (code, body) = env.curl(
        "/api/v1/namespaces",
        &["-H", "Authorization: Bearer  tok-root"],
    );
    assert_401(code, &body);
    let (code, body) = env.curl(
        "/api/v1/namespaces",
        &["-H", "Authorization: Bearer tok-rootx"],
    );
    assert_401(code, &body);

    // A raw SelfSubjectReview: 201 with the user, nothing stored.
    let (code, review) = env.curl(
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        &[
            "-X",
            "POST",
            "-H",
            "Authorization: Bearer tok-root",
            "-H",
            "Content-Type: application/json",
            "--data",
            r#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#,
        ],
    );
    assert_eq!(code, 201, "{review}");
    assert_eq!(
        review["status"]["userInfo"],
        serde_json::json!({"username": "root", "uid": "uid-root", "groups": ["system:masters", "system:authenticated"]})
    );
    assert!(
        review["metadata"]["creationTimestamp"].is_string(),
        "{review}"
    );

    // No credentials: public paths only.
    let (code, body) = env.curl("/version", &[]);
    assert_eq!(code, 200, "{body}");
    assert_eq!(body["major"], "1");
    let (code, _) = env.curl("/readyz", &[]);
    assert_eq!(code, 200);
    let (code, body) = env.curl("/api/v1/pods", &[]);
    assert_401(code, &body);
    // Rejected credentials are a 401 even on a public path, as upstream.
    let (code, body) = env.curl("/version", &["-H", "Authorization: Bearer nope"]);
    assert_401(code, &body);

    // A client certificate from another CA.
    let ca = TestCa::new(env.server.dir.path(), "other");
    let cert = ca.issue("intruder", "intruder", &[]);
    let (code, body) = env.curl(
        "/api/v1/pods",
        &[
            "--cert",
            cert.cert_file.to_str().unwrap(),
            "--key",
            cert.key_file.to_str().unwrap(),
        ],
    );
    assert_401(code, &body);
}

#[test]
fn anonymous_auth_flag() {
    let env = Env::start(&["--anonymous-auth=true"]);
    // Authenticated as system:anonymous, which RBAC does not let list namespaces.
    let (code, body) = env.curl("/api/v1/namespaces", &[]);
    assert_eq!(code, 403, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap_or("")
            .contains(r#"User "system:anonymous""#),
        "{body}"
    );
    // Bad credentials never fall through to anonymous.
    let (code, body) = env.curl("/api/v1/namespaces", &["-H", "Authorization: Bearer nope"]);
    assert_401(code, &body);
}

#[test]
fn bad_token_file_is_a_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(&tokens, "SeCrEtTok1,a,1\nSeCrEtTok2,b\n").unwrap();
    let err = testkit::server_start_error(&["--token-auth-file", tokens.to_str().unwrap()]);
    assert!(
        err.contains("line 2: must have at least 3 columns (token, user name, user uid), found 2"),
        "{err}"
    );
    // The file's contents are never printed.
    assert!(!err.contains("SeCrEtTok"), "{err}");
}
