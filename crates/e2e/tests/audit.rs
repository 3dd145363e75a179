//! The audit log with the real kubectl: a policy (`audit.k8s.io/v1`) picks the level per
//! request, events are JSON lines per stage with the user, impersonated user, object
//! reference, authorization decision and response status; `RequestResponse` records both
//! bodies, `Metadata` none (Secret values never reach the log); watches get
//! `ResponseStarted` and `ResponseComplete`; credentials are never logged.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::Value;
use testkit::RkubeServer;

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
rules:
  - level: None
    nonResourceURLs: ["/healthz*", "/readyz*", "/livez*", "/version", "/api", "/api/*", "/apis", "/apis/*", "/openapi/*"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets"]
  - level: RequestResponse
    resources:
      - group: ""
        resources: ["configmaps"]
  - level: Metadata
    omitStages: ["RequestReceived"]
"#;

fn events(path: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad audit line {l}: {e}")))
        .collect()
}

fn wait_for(path: &std::path::Path, what: &str, f: impl Fn(&[Value]) -> bool) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let ev = events(path);
        if f(&ev) {
            return ev;
        }
        assert!(
            Instant::now() < deadline,
            "no audit event for {what}:\n{ev:#?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn audit_log_follows_the_policy() {
    let files = tempfile::tempdir().unwrap();
    let policy = files.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let tokens = files.path().join("tokens.csv");
    std::fs::write(&tokens, "tok-alice-secret,alice,uid-alice\n").unwrap();
    let log = files.path().join("audit.log");
    let server = RkubeServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
        "--token-auth-file",
        tokens.to_str().unwrap(),
    ]);

    server.kubectl_ok(
        Some("1.33"),
        &["create", "configmap", "c1", "--from-literal=k=v"],
    );
    let ev = wait_for(&log, "configmap create", |ev| {
        ev.iter().any(|e| {
            e["verb"] == "create"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "admin"
                && e["stage"] == "ResponseComplete"
        })
    });
    let stages: Vec<&str> = ev
        .iter()
        .filter(|e| {
            e["verb"] == "create"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "admin"
        })
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["RequestReceived", "ResponseComplete"]);
    let done = ev
        .iter()
        .find(|e| {
            e["verb"] == "create"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "admin"
                && e["stage"] == "ResponseComplete"
        })
        .unwrap();
    assert_eq!(done["level"], "RequestResponse");
    assert_eq!(done["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(done["kind"], "Event");
    assert_eq!(done["responseStatus"]["code"], 201);
    assert_eq!(done["requestObject"]["data"]["k"], "v");
    assert_eq!(done["responseObject"]["metadata"]["name"], "c1");
    assert_eq!(
        done["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert_eq!(done["objectRef"]["namespace"], "default");
    assert!(
        done["user"]["groups"]
            .as_array()
            .unwrap()
            .iter()
            .any(|g| g == "system:masters")
    );
    assert!(done["auditID"].as_str().is_some_and(|s| s.len() == 36));
    assert_eq!(done["sourceIPs"][0], "127.0.0.1");

    // Secrets at Metadata: no bodies, the value never logged.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=password=topsecret",
        ],
    );
    wait_for(&log, "secret create", |ev| {
        ev.iter()
            .any(|e| e["objectRef"]["resource"] == "secrets" && e["stage"] == "ResponseComplete")
    });
    // A forbidden request, an impersonated one and a bad credential.
    let kubeconfig = files.path().join("alice.kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: tok-alice-secret\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            server.port,
            server.dir.path().join("data/tls/server-ca.crt").display()
        ),
    )
    .unwrap();
    let out = server
        .kubectl_cmd(Some("1.33"))
        .env("KUBECONFIG", &kubeconfig)
        .args(["get", "pods"])
        .output()
        .unwrap();
    assert!(!out.status.success());
    let _ = server.kubectl_v(Some("1.33"), &["get", "pods", "--as", "alice"]);
    let _ = server
        .kubectl_cmd(Some("1.33"))
        .env("KUBECONFIG", &kubeconfig)
        .args(["get", "pods", "--token", "wrong-token-value"])
        .output()
        .unwrap();
    // A watch that ends.
    let _ = server.kubectl_v(
        Some("1.33"),
        &["get", "configmaps", "--watch", "--request-timeout=2s"],
    );
    let ev = wait_for(&log, "the watch to complete", |ev| {
        ev.iter().any(|e| {
            e["verb"] == "watch"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "admin"
                && e["stage"] == "ResponseComplete"
        })
    });
    let secret = ev
        .iter()
        .find(|e| e["objectRef"]["resource"] == "secrets" && e["stage"] == "ResponseComplete")
        .unwrap();
    assert_eq!(secret["level"], "Metadata");
    assert!(secret.get("requestObject").is_none() && secret.get("responseObject").is_none());
    let forbidden = ev
        .iter()
        .find(|e| e["user"]["username"] == "alice" && e["verb"] == "list")
        .unwrap();
    assert_eq!(forbidden["responseStatus"]["code"], 403);
    assert_eq!(
        forbidden["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
    assert_eq!(
        forbidden["stage"], "ResponseComplete",
        "RequestReceived omitted for this rule"
    );
    let impersonated = ev
        .iter()
        .find(|e| e["impersonatedUser"]["username"] == "alice")
        .unwrap();
    assert_ne!(impersonated["user"]["username"], "alice");
    assert!(ev.iter().any(|e| e["responseStatus"]["code"] == 401));
    let watch: Vec<&str> = ev
        .iter()
        // (The controller manager in the server watches and writes them too.)
        .filter(|e| {
            e["verb"] == "watch"
                && e["objectRef"]["resource"] == "configmaps"
                && e["user"]["username"] == "admin"
        })
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(
        watch,
        ["RequestReceived", "ResponseStarted", "ResponseComplete"]
    );
    assert!(!ev.iter().any(|e| {
        e["requestURI"]
            .as_str()
            .unwrap_or_default()
            .starts_with("/healthz")
    }));

    let text = std::fs::read_to_string(&log).unwrap();
    for secret in [
        "topsecret",
        "dG9wc2VjcmV0",
        "tok-alice-secret",
        "wrong-token-value",
    ] {
        assert!(!text.contains(secret), "{secret} leaked into the audit log");
    }
}

#[test]
fn audit_log_rotates_by_size() {
    let files = tempfile::tempdir().unwrap();
    let policy = files.path().join("policy.yaml");
    std::fs::write(&policy, POLICY).unwrap();
    let logs = files.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let log = logs.join("audit.log");
    let server = RkubeServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
        "--audit-log-maxsize=1",
        "--audit-log-maxbackup=1",
    ]);
    // ConfigMaps are logged with their bodies: four of ~400 KiB make ~3 MiB of events.
    let data = files.path().join("blob");
    std::fs::write(&data, "x".repeat(400 * 1024)).unwrap();
    for i in 0..4 {
        server.kubectl_ok(
            Some("1.33"),
            &[
                "create",
                "configmap",
                &format!("big-{i}"),
                &format!("--from-file=blob={}", data.display()),
            ],
        );
    }
    let names: Vec<String> = std::fs::read_dir(&logs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names.len(), 2, "the log and one backup: {names:?}");
    assert!(names.iter().any(|n| n == "audit.log"), "{names:?}");
    for n in &names {
        let len = std::fs::metadata(logs.join(n)).unwrap().len();
        assert!(len <= 1024 * 1024, "{n}: {len}");
        // Every file holds whole JSON lines.
        assert!(!events(&logs.join(n)).is_empty(), "{n}");
    }
}
