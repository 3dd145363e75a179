//! Component identities and node joining with the real kubectl and openssl: the server
//! writes `controller.kubeconfig` and `scheduler.kubeconfig` with their own identities
//! (bound by the bootstrap RBAC roles, not admin), and a join token `DIR/token`; the token
//! authenticates as a bootstrap user who may create a CertificateSigningRequest for
//! `system:node:<name>`, which is approved and signed automatically (kubelet TLS
//! bootstrapping), giving a working node identity. Other requests wait for
//! `kubectl certificate approve`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::RkubeServer;

fn kubectl(server: &RkubeServer, kubeconfig: &Path, args: &[&str]) -> Output {
    server
        .kubectl_cmd(Some("1.33"))
        .env("KUBECONFIG", kubeconfig)
        .args(args)
        .output()
        .unwrap()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn whoami(server: &RkubeServer, kubeconfig: &Path) -> (String, Vec<String>) {
    let v: Value = serde_json::from_str(&ok(&kubectl(
        server,
        kubeconfig,
        &["auth", "whoami", "-o", "json"],
    )))
    .unwrap();
    let info = &v["status"]["userInfo"];
    (
        info["username"].as_str().unwrap().to_string(),
        info["groups"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap().to_string())
            .collect(),
    )
}

fn kubeconfig(server: &RkubeServer, path: &Path, user: Value) -> PathBuf {
    let text = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {
            "server": format!("https://127.0.0.1:{}", server.port),
            "certificate-authority": server.dir.path().join("data/tls/server-ca.crt"),
        }}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "c",
    });
    std::fs::write(path, text.to_string()).unwrap();
    path.to_path_buf()
}

/// A key and a PEM certificate request for `subject` (openssl's `-subj` form).
fn request(dir: &Path, name: &str, subject: &str) -> (PathBuf, String) {
    let key = dir.join(format!("{name}.key"));
    let csr = dir.join(format!("{name}.csr"));
    let out = Command::new("openssl")
        .args([
            "req",
            "-new",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-keyout",
        ])
        .arg(&key)
        .args(["-subj", subject, "-out"])
        .arg(&csr)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    (key, std::fs::read_to_string(csr).unwrap())
}

fn csr_object(name: &str, pem: &str, signer: &str) -> String {
    use std::io::Write;
    let mut b64 = Vec::new();
    {
        let mut child = Command::new("base64")
            .arg("-w0")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(pem.as_bytes())
            .unwrap();
        b64.extend(child.wait_with_output().unwrap().stdout);
    }
    json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {
            "request": String::from_utf8(b64).unwrap(),
            "signerName": signer,
            "usages": ["digital signature", "key encipherment", "client auth"],
            "username": "admin",
            "groups": ["system:masters"],
        },
    })
    .to_string()
}

fn wait_certificate(server: &RkubeServer, name: &str) -> String {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let cert = server.kubectl_ok(
            Some("1.33"),
            &["get", "csr", name, "-o", "jsonpath={.status.certificate}"],
        );
        if !cert.trim().is_empty() {
            let out = Command::new("base64")
                .arg("-d")
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut c| {
                    use std::io::Write;
                    c.stdin.take().unwrap().write_all(cert.trim().as_bytes())?;
                    c.wait_with_output()
                })
                .unwrap();
            return String::from_utf8(out.stdout).unwrap();
        }
        assert!(Instant::now() < deadline, "no certificate for {name}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn component_identities_and_node_join() {
    let server = RkubeServer::start();
    let data = server.dir.path().join("data");
    let files = tempfile::tempdir().unwrap();

    // Component identities, bound by the bootstrap roles.
    let controller = data.join("controller.kubeconfig");
    let scheduler = data.join("scheduler.kubeconfig");
    assert_eq!(
        whoami(&server, &controller).0,
        "system:kube-controller-manager"
    );
    assert_eq!(whoami(&server, &scheduler).0, "system:kube-scheduler");
    let can = |k: &Path, args: &[&str]| {
        let mut a = vec!["auth", "can-i"];
        a.extend_from_slice(args);
        String::from_utf8_lossy(&kubectl(&server, k, &a).stdout)
            .trim()
            .to_string()
    };
    assert_eq!(can(&controller, &["list", "deployments", "-A"]), "yes");
    assert_eq!(can(&controller, &["create", "clusterrolebindings"]), "no");
    assert_eq!(
        can(
            &scheduler,
            &["create", "pods", "--subresource=binding", "-n", "default"]
        ),
        "yes"
    );
    assert_eq!(can(&scheduler, &["delete", "nodes"]), "no");

    // The join token authenticates as a bootstrap user.
    let token = std::fs::read_to_string(data.join("token"))
        .unwrap()
        .trim()
        .to_string();
    let (id, _) = token.split_once('.').unwrap();
    let joiner = kubeconfig(
        &server,
        &files.path().join("join.kubeconfig"),
        json!({"token": token}),
    );
    let (name, groups) = whoami(&server, &joiner);
    assert_eq!(name, format!("system:bootstrap:{id}"));
    assert_eq!(
        groups,
        [
            "system:bootstrappers",
            "system:bootstrappers:rkube:default-node-token",
            "system:authenticated"
        ]
    );
    let bad = kubeconfig(
        &server,
        &files.path().join("bad.kubeconfig"),
        json!({"token": format!("{id}.0000000000000000")}),
    );
    let out = kubectl(&server, &bad, &["auth", "whoami"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Unauthorized"));

    // TokenReview answers for the token (what a kubelet's webhook authentication asks).
    let review = |t: &str| -> Value {
        let out = server.kubectl_stdin(
            Some("1.33"),
            &["create", "--raw", "/apis/authentication.k8s.io/v1/tokenreviews", "-f", "-"],
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": t}}).to_string(),
        );
        serde_json::from_str(&ok(&out)).unwrap()
    };
    let r = review(&token);
    assert_eq!(r["status"]["authenticated"], true, "{r}");
    assert_eq!(
        r["status"]["user"]["username"],
        format!("system:bootstrap:{id}")
    );
    let r = review(&format!("{id}.0000000000000000"));
    assert!(
        r["status"]["authenticated"].is_null() || r["status"]["authenticated"] == false,
        "{r}"
    );
    assert!(
        r["status"]["error"]
            .as_str()
            .is_some_and(|e| !e.contains(id) || e.contains("invalid")),
        "{r}"
    );

    // TLS bootstrapping: the node's request is approved and signed.
    let (key, pem) = request(files.path(), "n1", "/O=system:nodes/CN=system:node:n1");
    let out = server
        .kubectl_cmd(Some("1.33"))
        .env("KUBECONFIG", &joiner)
        .args(["create", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin.take().unwrap().write_all(
                csr_object(
                    "node-csr-n1",
                    &pem,
                    "kubernetes.io/kube-apiserver-client-kubelet",
                )
                .as_bytes(),
            )?;
            c.wait_with_output()
        })
        .unwrap();
    ok(&out);
    let cert = wait_certificate(&server, "node-csr-n1");
    let stored: Value = serde_json::from_str(
        &server.kubectl_ok(Some("1.33"), &["get", "csr", "node-csr-n1", "-o", "json"]),
    )
    .unwrap();
    assert_eq!(
        stored["spec"]["username"],
        format!("system:bootstrap:{id}"),
        "requester comes from the request, not the body"
    );
    assert_eq!(stored["status"]["conditions"][0]["reason"], "AutoApproved");
    let listed = server.kubectl_ok(Some("1.33"), &["get", "csr", "node-csr-n1"]);
    assert!(listed.contains("Approved,Issued"), "{listed}");
    let cert_path = files.path().join("n1.crt");
    std::fs::write(&cert_path, cert).unwrap();
    let node = kubeconfig(
        &server,
        &files.path().join("n1.kubeconfig"),
        json!({
            "client-certificate": cert_path, "client-key": key,
        }),
    );
    let (name, groups) = whoami(&server, &node);
    assert_eq!(name, "system:node:n1");
    assert_eq!(groups, ["system:nodes", "system:authenticated"]);

    // Not a kubelet client request: pending until an admin approves it.
    let (_, pem) = request(files.path(), "tool", "/O=tools/CN=backup-tool");
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-"],
        &csr_object("tool", &pem, "kubernetes.io/kube-apiserver-client"),
    );
    ok(&out);
    std::thread::sleep(Duration::from_secs(2));
    let listed = server.kubectl_ok(Some("1.33"), &["get", "csr", "tool"]);
    assert!(listed.contains("Pending"), "{listed}");
    server.kubectl_ok(Some("1.33"), &["certificate", "approve", "tool"]);
    let cert = wait_certificate(&server, "tool");
    assert!(cert.contains("BEGIN CERTIFICATE"));
    // An invalid request is refused.
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": "junk"},
        "spec": {"request": "aGVsbG8=", "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]},
    }).to_string());
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("PEM block type must be CERTIFICATE REQUEST"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
