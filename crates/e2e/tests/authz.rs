//! The authorization chain against the real `rkube server` and the real kubectl: the
//! bootstrap RBAC policy (created, aggregated, reconciled at start), RBAC decisions from
//! Roles and bindings created with kubectl, upstream's `Forbidden` messages, the public
//! paths through `system:public-info-viewer`, and `--authorization-mode` `AlwaysDeny` /
//! `AlwaysAllow` behind the `system:masters` superuser. Users come from a static token
//! file; raw requests go through `curl`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::RkubeServer;

const TOKENS: &str = "tok-alice,alice,uid-alice\ntok-root,root,uid-root,system:masters\n";

struct Env {
    server: RkubeServer,
    _files: tempfile::TempDir,
}

impl Env {
    fn start(extra: &[&str]) -> Env {
        let files = tempfile::tempdir().unwrap();
        let tokens = files.path().join("tokens.csv");
        std::fs::write(&tokens, TOKENS).unwrap();
        let mut args = vec!["--token-auth-file", tokens.to_str().unwrap()];
        args.extend_from_slice(extra);
        let server = RkubeServer::start_with(&args);
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

    /// A kubeconfig for this server authenticating with `token`.
    fn kubeconfig(&self, name: &str, token: &str) -> PathBuf {
        let path = self.server.dir.path().join(format!("{name}.kubeconfig"));
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: {token}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            self.url(),
            self.tls().join("server-ca.crt").display(),
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.server
            .kubectl_cmd(Some("1.33"))
            .env("KUBECONFIG", kubeconfig)
            .args(args)
            .output()
            .unwrap()
    }

    fn admin(&self, args: &[&str]) -> String {
        self.server.kubectl_ok(Some("1.33"), args)
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

fn forbidden(out: &Output, message: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "expected Forbidden, got success");
    assert!(
        err.contains(&format!("(Forbidden): {message}"))
            || err.contains(&format!("failed to create configmap: {message}")),
        "{err}"
    );
}

/// Retries `f` for a few seconds (the RBAC cache follows writes asynchronously).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn rbac_bootstrap_policy_and_decisions() {
    let env = Env::start(&[]);

    // The bootstrap policy is stored and listed like any object.
    let out = env.admin(&[
        "get",
        "clusterroles",
        "cluster-admin",
        "view",
        "edit",
        "admin",
        "system:node",
        "system:public-info-viewer",
        "-o",
        "name",
    ]);
    assert_eq!(out.lines().count(), 6, "{out}");
    let out = env.admin(&[
        "get",
        "clusterrolebindings",
        "cluster-admin",
        "system:public-info-viewer",
        "system:discovery",
        "-o",
        "name",
    ]);
    assert_eq!(out.lines().count(), 3, "{out}");
    let out = env.admin(&[
        "get",
        "roles,rolebindings",
        "-n",
        "kube-system",
        "-o",
        "name",
    ]);
    assert!(
        out.contains("role.rbac.authorization.k8s.io/extension-apiserver-authentication-reader"),
        "{out}"
    );
    let crb: Value = serde_json::from_str(&env.admin(&[
        "get",
        "clusterrolebinding",
        "cluster-admin",
        "-o",
        "json",
    ]))
    .unwrap();
    assert_eq!(
        crb["metadata"]["annotations"]["rbac.authorization.kubernetes.io/autoupdate"],
        "true"
    );
    assert_eq!(crb["subjects"][0]["name"], "system:masters");

    // Aggregation fills `view` from the `aggregate-to-view` roles.
    eventually("view to be aggregated", || {
        let view: Value =
            serde_json::from_str(&env.admin(&["get", "clusterrole", "view", "-o", "json"]))
                .unwrap();
        view["rules"].as_array().is_some_and(|r| !r.is_empty())
    });

    // The public paths: anonymous through system:public-info-viewer, not a bypass.
    let (code, _) = env.curl("/healthz", &[]);
    assert_eq!(code, 200);
    let (code, _) = env.curl("/version", &[]);
    assert_eq!(code, 200);
    let bearer = ["-H", "Authorization: Bearer tok-alice"];
    // Discovery is for every authenticated user (system:discovery).
    let (code, body) = env.curl("/api", &bearer);
    assert_eq!(code, 200, "{body}");

    // A non-resource path alice holds no rule for.
    let (code, body) = env.curl("/metrics", &bearer);
    assert_eq!(code, 403, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(
        body["message"],
        "forbidden: User \"alice\" cannot get path \"/metrics\""
    );

    // A resource request: upstream's message and details.
    let (code, body) = env.curl("/api/v1/namespaces/default/pods/p1", &bearer);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "pods \"p1\" is forbidden: User \"alice\" cannot get resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(body["details"]["kind"], "pods");
    assert_eq!(body["details"]["name"], "p1");
    assert_eq!(body["code"], 403);
    let (code, body) = env.curl("/apis/apps/v1/deployments", &bearer);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "deployments.apps is forbidden: User \"alice\" cannot list resource \"deployments\" in API group \"apps\" at the cluster scope"
    );
    assert_eq!(body["details"]["group"], "apps");

    // With kubectl.
    let alice = env.kubeconfig("alice", "tok-alice");
    forbidden(
        &env.kubectl_as(&alice, &["get", "pods", "-n", "default"]),
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
    );

    // A Role and a RoleBinding made with kubectl grant alice reading pods in ns1 only.
    env.admin(&["create", "namespace", "ns1"]);
    env.admin(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "ns1",
        "--verb=get,list,watch",
        "--resource=pods",
    ]);
    env.admin(&[
        "create",
        "rolebinding",
        "alice-reads",
        "-n",
        "ns1",
        "--role=pod-reader",
        "--user=alice",
    ]);
    eventually("alice to list pods in ns1", || {
        env.kubectl_as(&alice, &["get", "pods", "-n", "ns1"])
            .status
            .success()
    });
    forbidden(
        &env.kubectl_as(&alice, &["get", "pods", "-n", "default"]),
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\"",
    );
    forbidden(
        &env.kubectl_as(&alice, &["create", "configmap", "c1", "-n", "ns1"]),
        "configmaps is forbidden: User \"alice\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"ns1\"",
    );
    forbidden(
        &env.kubectl_as(
            &alice,
            &["get", "pods", "-n", "ns1", "p1", "--subresource=status"],
        ),
        "pods \"p1\" is forbidden: User \"alice\" cannot get resource \"pods/status\" in API group \"\" in the namespace \"ns1\"",
    );

    // The aggregated `view` ClusterRole, bound cluster-wide, lets alice read configmaps.
    env.admin(&[
        "create",
        "clusterrolebinding",
        "alice-views",
        "--clusterrole=view",
        "--user=alice",
    ]);
    eventually("alice to list configmaps everywhere", || {
        env.kubectl_as(&alice, &["get", "configmaps", "-A"])
            .status
            .success()
    });
    // `view` does not include secrets.
    forbidden(
        &env.kubectl_as(&alice, &["get", "secrets", "-n", "ns1"]),
        "secrets is forbidden: User \"alice\" cannot list resource \"secrets\" in API group \"\" in the namespace \"ns1\"",
    );

    // The root token is in system:masters.
    let root = env.kubeconfig("root", "tok-root");
    ok(&env.kubectl_as(&root, &["get", "secrets", "-A"]));
}

#[test]
fn bootstrap_policy_is_reconciled_at_start() {
    let mut env = Env::start(&[]);
    // Take the rules away from one bootstrap role and protect another one's change.
    env.admin(&[
        "patch",
        "clusterrole",
        "system:public-info-viewer",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules","value":[{"verbs":["get"],"nonResourceURLs":["/extra"]}]}]"#,
    ]);
    env.admin(&[
        "annotate",
        "--overwrite",
        "clusterrole",
        "system:basic-user",
        "rbac.authorization.kubernetes.io/autoupdate=false",
    ]);
    env.admin(&[
        "patch",
        "clusterrole",
        "system:basic-user",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/rules","value":[]}]"#,
    ]);
    env.admin(&["delete", "clusterrolebinding", "system:discovery"]);
    let (code, _) = env.curl("/healthz", &[]);
    assert_eq!(code, 403);

    env.server.restart();

    // Missing rules are added back (broken down per URL, as upstream's `Covers` reports
    // them), extra ones kept; deleted objects are re-created; protected ones are left
    // alone.
    let role: Value = serde_json::from_str(&env.admin(&[
        "get",
        "clusterrole",
        "system:public-info-viewer",
        "-o",
        "json",
    ]))
    .unwrap();
    let rules = role["rules"].as_array().unwrap();
    assert_eq!(rules.len(), 6, "{role}");
    assert_eq!(rules[0]["nonResourceURLs"][0], "/extra");
    env.admin(&["get", "clusterrolebinding", "system:discovery"]);
    let basic: Value = serde_json::from_str(&env.admin(&[
        "get",
        "clusterrole",
        "system:basic-user",
        "-o",
        "json",
    ]))
    .unwrap();
    assert!(
        basic["rules"].as_array().is_none_or(|r| r.is_empty()),
        "{basic}"
    );
    let (code, _) = env.curl("/healthz", &[]);
    assert_eq!(code, 200);
}

#[test]
fn always_deny_still_allows_system_masters() {
    let env = Env::start(&["--authorization-mode", "AlwaysDeny"]);
    env.admin(&["get", "namespaces"]);
    let alice = env.kubeconfig("alice", "tok-alice");
    forbidden(
        &env.kubectl_as(&alice, &["get", "pods", "-n", "default"]),
        "pods is forbidden: User \"alice\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": Everything is forbidden.",
    );
    let (code, body) = env.curl("/healthz", &[]);
    assert_eq!(code, 403, "{body}");
    assert_eq!(
        body["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/healthz\": Everything is forbidden."
    );
}

#[test]
fn always_allow_and_bad_modes() {
    let env = Env::start(&["--authorization-mode=AlwaysAllow"]);
    let alice = env.kubeconfig("alice", "tok-alice");
    ok(&env.kubectl_as(&alice, &["get", "secrets", "-A"]));

    for (flags, message) in [
        (
            vec!["--authorization-mode", "Webhook"],
            "Webhook is not implemented yet",
        ),
        (
            vec!["--authorization-mode", "Bogus"],
            "unknown authorization mode \"Bogus\"",
        ),
        (
            vec!["--authorization-mode", "ABAC"],
            "authorization-mode ABAC's authorization policy file not passed",
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new(testkit::rkube_binary())
            .args(["server", "--disable-agent", "--https-port", "0"])
            .arg("--data-dir")
            .arg(dir.path())
            .args(&flags)
            .output()
            .unwrap();
        assert!(!out.status.success(), "{flags:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(message), "{flags:?}: {err}");
    }
}
