//! The authorization chain against the real `rkube server` and the real kubectl: the
//! bootstrap RBAC policy (created, aggregated, reconciled at start), RBAC decisions from
//! Roles and bindings created with kubectl, upstream's `Forbidden` messages, the public
//! paths through `system:public-info-viewer`, and `--authorization-mode` `AlwaysDeny` /
//! `AlwaysAllow` behind the `system:masters` superuser. Users come from a static token
//! file; raw requests go through `curl`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;
use testkit::RkubeServer;
use testkit::eventually;

const TOKENS: &str = "tok-alice,alice,uid-alice\ntok-root,root,uid-root,system:masters\ntok-bob,bob,uid-bob\ntok-n1,system:node:n1,uid-n1,system:nodes\n";

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
        self.server
            .user_kubeconfig(name, &format!("    token: {token}"))
    }

    fn kubectl_as(&self, kubeconfig: &Path, args: &[&str]) -> Output {
        self.server.kubectl_with(kubeconfig, args)
    }

    fn admin(&self, args: &[&str]) -> String {
        self.server.kubectl_ok(Some("1.33"), args)
    }

    /// `POST path` of a JSON `body` with a bearer token; the HTTP code and body.
    fn post(&self, path: &str, token: &str, body: &str) -> (u16, Value) {
        let auth = format!("Authorization: Bearer {token}");
        self.curl(
            path,
            &[
                "-X",
                "POST",
                "-H",
                &auth,
                "-H",
                "Content-Type: application/json",
                "-d",
                body,
            ],
        )
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
    // One check alone is not public (its failure says why): upstream's RBAC grants it to
    // system:monitoring, not to anonymous callers.
    let (code, body) = env.curl("/readyz/etcd", &[]);
    assert_eq!(code, 403, "{body}");
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
            "authorization-mode Webhook's authorization config file not passed",
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
        let err = testkit::server_start_error(&flags);
        assert!(err.contains(message), "{flags:?}: {err}");
    }
}

fn code(out: &Output) -> i32 {
    out.status.code().unwrap_or(-1)
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn can_i_access_reviews_and_impersonation() {
    let env = Env::start(&[]);
    let alice = env.kubeconfig("alice", "tok-alice");
    let can_i = |args: &[&str]| {
        let mut a = vec!["auth", "can-i"];
        a.extend_from_slice(args);
        env.kubectl_as(&alice, &a)
    };
    env.admin(&["create", "namespace", "dev"]);
    env.admin(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "dev",
        "--verb=get,list",
        "--resource=pods",
    ]);
    env.admin(&[
        "create",
        "role",
        "one-cm",
        "-n",
        "dev",
        "--verb=get",
        "--resource=configmaps",
        "--resource-name=cfg1",
    ]);
    env.admin(&[
        "create",
        "role",
        "logs",
        "-n",
        "dev",
        "--verb=get",
        "--resource=pods/log",
    ]);
    for role in ["pod-reader", "one-cm", "logs"] {
        env.admin(&[
            "create",
            "rolebinding",
            role,
            "-n",
            "dev",
            &format!("--role={role}"),
            "--user=alice",
        ]);
    }
    // An aggregated ClusterRole bound cluster-wide.
    env.admin(&["create", "clusterrole", "agg", "--aggregation-rule=team=x"]);
    env.admin(&[
        "create",
        "clusterrole",
        "part",
        "--verb=list",
        "--resource=secrets",
    ]);
    env.admin(&["label", "clusterrole", "part", "team=x"]);
    env.admin(&[
        "create",
        "clusterrolebinding",
        "agg",
        "--clusterrole=agg",
        "--user=alice",
    ]);

    eventually("the bindings to reach the RBAC cache", || {
        stdout(&can_i(&["list", "pods", "-n", "dev"])) == "yes"
    });
    eventually("agg to be aggregated", || {
        stdout(&can_i(&["list", "secrets", "-A"])) == "yes"
    });
    let matrix: &[(&[&str], bool)] = &[
        (&["list", "pods", "-n", "dev"], true),
        (&["get", "pods", "-n", "dev"], true),
        (&["delete", "pods", "-n", "dev"], false),
        (&["list", "pods", "-n", "default"], false),
        (&["get", "configmaps/cfg1", "-n", "dev"], true),
        (&["get", "configmaps/cfg2", "-n", "dev"], false),
        (&["get", "configmaps", "-n", "dev"], false),
        (&["get", "pods", "--subresource=log", "-n", "dev"], true),
        (&["get", "pods", "--subresource=exec", "-n", "dev"], false),
        (&["list", "secrets", "-n", "kube-system"], true),
        (&["get", "secrets", "-n", "kube-system"], false),
        (&["get", "/healthz"], true),
        (&["get", "/metrics"], false),
    ];
    for (args, want) in matrix {
        let out = can_i(args);
        let (answer, exit) = if *want { ("yes", 0) } else { ("no", 1) };
        assert_eq!(stdout(&out), answer, "can-i {args:?}: {}", stderr(&out));
        assert_eq!(code(&out), exit, "can-i {args:?}");
    }

    // --list: the rules of SelfSubjectRulesReview.
    let list = ok(&can_i(&["--list", "-n", "dev"]));
    let line = |res: &str| {
        list.lines()
            .find(|l| l.split_whitespace().next() == Some(res))
            .unwrap_or_else(|| panic!("no {res} in\n{list}"))
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    assert_eq!(line("pods"), "pods [] [] [get list]");
    assert_eq!(line("configmaps"), "configmaps [] [cfg1] [get]");
    assert_eq!(line("pods/log"), "pods/log [] [] [get]");
    assert_eq!(line("secrets"), "secrets [] [] [list]");
    assert!(
        list.contains("selfsubjectaccessreviews.authorization.k8s.io"),
        "{list}"
    );

    // --as: the admin (system:masters) impersonates alice.
    let admin_as = |args: &[&str]| {
        let mut a = vec!["auth", "can-i"];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--as", "alice"]);
        env.server.kubectl_v(Some("1.33"), &a)
    };
    assert_eq!(stdout(&admin_as(&["list", "pods", "-n", "dev"])), "yes");
    assert_eq!(stdout(&admin_as(&["delete", "pods", "-n", "dev"])), "no");

    // alice may not impersonate anyone …
    let out = env.kubectl_as(&alice, &["get", "pods", "-n", "dev", "--as", "root"]);
    forbidden(
        &out,
        "users \"root\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope",
    );
    let out = env.kubectl_as(
        &alice,
        &["get", "pods", "--as", "bob", "--as-group", "system:masters"],
    );
    assert!(!out.status.success());
    // … until she may impersonate bob (but not system:masters).
    env.admin(&[
        "create",
        "clusterrole",
        "impersonate-bob",
        "--verb=impersonate",
        "--resource=users",
        "--resource-name=bob",
    ]);
    env.admin(&[
        "create",
        "clusterrolebinding",
        "impersonate-bob",
        "--clusterrole=impersonate-bob",
        "--user=alice",
    ]);
    eventually("impersonation to be allowed", || {
        let out = env.kubectl_as(&alice, &["auth", "whoami", "--as", "bob", "-o", "json"]);
        out.status.success()
    });
    let who: Value = serde_json::from_str(&ok(
        &env.kubectl_as(&alice, &["auth", "whoami", "--as", "bob", "-o", "json"])
    ))
    .unwrap();
    assert_eq!(who["status"]["userInfo"]["username"], "bob");
    assert_eq!(
        who["status"]["userInfo"]["groups"],
        serde_json::json!(["system:authenticated"])
    );
    // The request runs as bob: bob cannot list pods in dev.
    let out = env.kubectl_as(&alice, &["get", "pods", "-n", "dev", "--as", "bob"]);
    forbidden(
        &out,
        "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"dev\"",
    );
    let out = env.kubectl_as(
        &alice,
        &["get", "pods", "--as", "bob", "--as-group", "system:masters"],
    );
    forbidden(
        &out,
        "groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope",
    );

    // SubjectAccessReview and LocalSubjectAccessReview through raw requests.
    let sar = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"namespace":"dev","verb":"list","resource":"pods"}}}"#;
    let (code_, body) = env.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "tok-root",
        sar,
    );
    assert_eq!(code_, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true, "{body}");
    assert!(
        body["status"]["reason"]
            .as_str()
            .unwrap()
            .contains("RoleBinding \"pod-reader/dev\" of Role \"pod-reader\" to User \"alice\""),
        "{body}"
    );
    // alice may not ask about others.
    let (code_, _) = env.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "tok-alice",
        sar,
    );
    assert_eq!(code_, 403);
    let bad = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{}}"#;
    let (code_, body) = env.post(
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        "tok-root",
        bad,
    );
    assert_eq!(code_, 422, "{body}");
    assert_eq!(body["reason"], "Invalid");
    let lsar = r#"{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"alice","resourceAttributes":{"namespace":"dev","verb":"get","resource":"pods"}}}"#;
    let (code_, body) = env.post(
        "/apis/authorization.k8s.io/v1/namespaces/dev/localsubjectaccessreviews",
        "tok-root",
        lsar,
    );
    assert_eq!(code_, 201, "{body}");
    assert_eq!(body["status"]["allowed"], true);
    assert_eq!(body["metadata"]["namespace"], "dev");
}

#[test]
fn rbac_escalation_is_prevented() {
    let env = Env::start(&[]);
    let alice = env.kubeconfig("alice", "tok-alice");
    env.admin(&["create", "namespace", "dev"]);
    // alice may manage roles and bindings in dev and read pods there, nothing else.
    env.admin(&[
        "create",
        "role",
        "rbac-manager",
        "-n",
        "dev",
        "--verb=get,list,create,update,patch,delete",
        "--resource=roles.rbac.authorization.k8s.io,rolebindings.rbac.authorization.k8s.io",
    ]);
    env.admin(&[
        "create",
        "role",
        "pod-reader",
        "-n",
        "dev",
        "--verb=get,list",
        "--resource=pods",
    ]);
    for role in ["rbac-manager", "pod-reader"] {
        env.admin(&[
            "create",
            "rolebinding",
            role,
            "-n",
            "dev",
            &format!("--role={role}"),
            "--user=alice",
        ]);
    }
    env.admin(&[
        "create",
        "clusterrole",
        "cr-writer",
        "--verb=create,update",
        "--resource=clusterroles",
    ]);
    env.admin(&[
        "create",
        "clusterrolebinding",
        "cr-writer",
        "--clusterrole=cr-writer",
        "--user=alice",
    ]);
    eventually("alice's roles", || {
        env.kubectl_as(&alice, &["auth", "can-i", "create", "roles", "-n", "dev"])
            .status
            .success()
    });
    let as_alice = |args: &[&str]| env.kubectl_as(&alice, args);

    // Granting what she holds is fine.
    ok(&as_alice(&[
        "create",
        "role",
        "sub-reader",
        "-n",
        "dev",
        "--verb=get",
        "--resource=pods",
    ]));
    // Granting more is refused with upstream's message.
    let out = as_alice(&[
        "create",
        "role",
        "deleter",
        "-n",
        "dev",
        "--verb=delete",
        "--resource=pods",
    ]);
    let err = stderr(&out);
    assert!(!out.status.success());
    assert!(
        err.contains("roles.rbac.authorization.k8s.io \"deleter\" is forbidden: user \"alice\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"delete\"]}"),
        "{err}"
    );
    // Updating a role to more than she holds is refused too.
    let out = as_alice(&[
        "patch",
        "role",
        "sub-reader",
        "-n",
        "dev",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/rules/0/verbs/-","value":"delete"}]"#,
    ]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("is attempting to grant RBAC permissions not currently held"));

    // Binding a role whose rules she holds is fine; binding admin is not.
    ok(&as_alice(&[
        "create",
        "rolebinding",
        "bob-reads",
        "-n",
        "dev",
        "--role=sub-reader",
        "--user=bob",
    ]));
    let out = as_alice(&[
        "create",
        "rolebinding",
        "bob-admin",
        "-n",
        "dev",
        "--clusterrole=admin",
        "--user=bob",
    ]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains(
            "rolebindings.rbac.authorization.k8s.io \"bob-admin\" is forbidden: user \"alice\""
        ),
        "{}",
        stderr(&out)
    );
    // Binding a missing role: the lookup error.
    let out = as_alice(&[
        "create",
        "rolebinding",
        "ghost",
        "-n",
        "dev",
        "--role=ghost",
        "--user=bob",
    ]);
    assert!(
        stderr(&out).contains("role.rbac.authorization.k8s.io \"ghost\" not found"),
        "{}",
        stderr(&out)
    );

    // The bind verb on `admin` lets her bind it without holding its rules.
    env.admin(&[
        "create",
        "role",
        "bind-admin",
        "-n",
        "dev",
        "--verb=bind",
        "--resource=clusterroles.rbac.authorization.k8s.io",
        "--resource-name=admin",
    ]);
    env.admin(&[
        "create",
        "rolebinding",
        "bind-admin",
        "-n",
        "dev",
        "--role=bind-admin",
        "--user=alice",
    ]);
    eventually("the bind grant", || {
        as_alice(&[
            "create",
            "rolebinding",
            "bob-admin",
            "-n",
            "dev",
            "--clusterrole=admin",
            "--user=bob",
        ])
        .status
        .success()
    });
    // The escalate verb on roles lets her write any role.
    env.admin(&[
        "create",
        "role",
        "escalate",
        "-n",
        "dev",
        "--verb=escalate",
        "--resource=roles.rbac.authorization.k8s.io",
    ]);
    env.admin(&[
        "create",
        "rolebinding",
        "escalate",
        "-n",
        "dev",
        "--role=escalate",
        "--user=alice",
    ]);
    eventually("the escalate grant", || {
        as_alice(&[
            "create",
            "role",
            "deleter",
            "-n",
            "dev",
            "--verb=delete",
            "--resource=pods",
        ])
        .status
        .success()
    });

    // An aggregationRule needs cluster-admin.
    let out = as_alice(&["create", "clusterrole", "agg", "--aggregation-rule=team=x"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule"),
        "{}",
        stderr(&out)
    );
    // system:masters may do anything.
    env.admin(&["create", "clusterrole", "agg", "--aggregation-rule=team=x"]);
}

#[test]
fn node_authorizer_limits_kubelets_to_their_pods() {
    let env = Env::start(&[]);
    let n1 = env.kubeconfig("n1", "tok-n1");
    env.admin(&["create", "namespace", "app"]);
    for (pod, node, secret) in [("p1", "n1", "s1"), ("p2", "n2", "s2")] {
        env.admin(&[
            "create",
            "secret",
            "generic",
            secret,
            "-n",
            "app",
            "--from-literal=k=v",
        ]);
        let manifest = format!(
            r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"{pod}","namespace":"app"}},"spec":{{"nodeName":"{node}","containers":[{{"name":"c","image":"busybox"}}],"volumes":[{{"name":"s","secret":{{"secretName":"{secret}"}}}}]}}}}"#
        );
        let out = env
            .server
            .kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &manifest);
        ok(&out);
    }
    let as_node = |args: &[&str]| env.kubectl_as(&n1, args);
    eventually("the pods to reach the cache", || {
        as_node(&["get", "secret", "s1", "-n", "app"])
            .status
            .success()
    });
    let out = as_node(&["get", "secret", "s2", "-n", "app"]);
    forbidden(
        &out,
        "secrets \"s2\" is forbidden: User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"app\": no relationship found between node 'n1' and this object",
    );
    ok(&as_node(&[
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=n1",
    ]));
    let out = as_node(&["get", "pods", "-A"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("can only list/watch pods with spec.nodeName field selector"),
        "{}",
        stderr(&out)
    );
    ok(&as_node(&["get", "pod", "p1", "-n", "app"]));
    assert!(!as_node(&["get", "pod", "p2", "-n", "app"]).status.success());
    // Other Nodes: rkube's `rkube:overlay` ClusterRole (for the overlay network, as k3s
    // grants its flannel) lets every node read them through RBAC…
    let out = as_node(&["get", "node", "n2"]);
    assert!(stderr(&out).contains("not found"), "{}", stderr(&out));
    ok(&as_node(&["get", "nodes"]));
    // …while the Node authorizer itself allows a node its own Node only (upstream 1.33).
    env.admin(&["delete", "clusterrolebinding", "rkube:overlay"]);
    eventually("the overlay binding gone from the authorizer", || {
        !as_node(&["get", "nodes"]).status.success()
    });
    let out = as_node(&["get", "node", "n2"]);
    assert!(
        stderr(&out).contains("node 'n1' cannot read 'n2', only its own Node object"),
        "{}",
        stderr(&out)
    );
    ok(&as_node(&["get", "services", "-A"]));
    assert!(!as_node(&["get", "deployments", "-A"]).status.success());
}
