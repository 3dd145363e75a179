//! OpenID Connect against the real `rkube server` and the real kubectl: an issuer runs in
//! the test on loopback HTTPS (discovery document and key set, certificate from a
//! throwaway CA passed as `--oidc-ca-file`); the test signs ID tokens with the issuer's
//! ES256 key; kubectl gets them from an exec credential plugin (`client.authentication.
//! k8s.io/v1` ExecCredential), as `kubelogin` would hand them over. The user name and
//! groups come from the configured claims, RBAC binds the prefixed group, and every bad
//! token (expired, wrong audience, forged, missing required claim, unknown issuer, wrong
//! algorithm) is a 401; no token reaches the log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};
use testkit::https::{HttpsServer, Request};
use testkit::{RkubeServer, TestCa, eventually};

struct Issuer {
    server: HttpsServer,
    key: jsonwebtoken::EncodingKey,
    url: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

impl Issuer {
    fn start(ca: &TestCa) -> Issuer {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let raw = pair.public_key_raw();
        let jwks = json!({"keys": [{
            "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": "test-key",
            "x": b64(&raw[1..33]), "y": b64(&raw[33..65]),
        }]});
        let discovery: Arc<Mutex<Value>> = Arc::default();
        let doc = Arc::clone(&discovery);
        let server = HttpsServer::start(
            ca,
            Arc::new(move |r: &Request<'_>| match r.path {
                "/.well-known/openid-configuration" => (200, doc.lock().unwrap().clone()),
                "/keys" => (200, jwks.clone()),
                _ => (404, json!({})),
            }),
        );
        let url = server.url("");
        *discovery.lock().unwrap() = json!({
            "issuer": url, "jwks_uri": server.url("/keys"),
            "id_token_signing_alg_values_supported": ["ES256"],
        });
        Issuer {
            server,
            key: jsonwebtoken::EncodingKey::from_ec_der(&pair.serialize_der()),
            url,
        }
    }

    fn claims(&self, email: &str) -> Value {
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        json!({
            "iss": self.url, "aud": "rkube", "sub": format!("sub-{email}"), "email": email,
            "email_verified": true, "groups": ["dev"], "hd": "example.com",
            "iat": now, "exp": now + 600,
        })
    }

    fn sign(&self, claims: &Value) -> String {
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.kid = Some("test-key".into());
        jsonwebtoken::encode(&header, claims, &self.key).unwrap()
    }
}

/// A kubeconfig whose user gets `token` from an exec credential plugin.
fn exec_kubeconfig(server: &RkubeServer, name: &str, token: &str) -> PathBuf {
    let credential = server.dir.path().join(format!("{name}.credential.json"));
    std::fs::write(
        &credential,
        json!({
            "apiVersion": "client.authentication.k8s.io/v1", "kind": "ExecCredential",
            "status": {"token": token},
        })
        .to_string(),
    )
    .unwrap();
    server.user_kubeconfig(
        name,
        &format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/cat\n      args: [\"{}\"]\n      interactiveMode: Never",
            credential.display()
        ),
    )
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

#[test]
fn oidc_id_tokens_from_an_exec_plugin() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "issuer");
    let issuer = Issuer::start(&ca);
    let server = RkubeServer::start_logging(
        &[
            "--oidc-issuer-url",
            &issuer.url,
            "--oidc-client-id=rkube",
            "--oidc-ca-file",
            ca.ca_file.to_str().unwrap(),
            "--oidc-username-claim=email",
            "--oidc-groups-claim=groups",
            "--oidc-groups-prefix=oidc:",
            "--oidc-required-claim=hd=example.com",
            "--oidc-signing-algs=ES256",
        ],
        Some("debug"),
    );
    let alice_token = issuer.sign(&issuer.claims("alice@example.com"));
    let alice = exec_kubeconfig(&server, "alice", &alice_token);

    // The issuer is discovered in the background: soon alice is known.
    let mut who = Value::Null;
    eventually("alice authenticated by OIDC", || {
        let o = server.kubectl_with(&alice, &["auth", "whoami", "-o", "json"]);
        if o.status.success() {
            who = serde_json::from_slice(&o.stdout).unwrap();
        }
        o.status.success()
    });
    let info = &who["status"]["userInfo"];
    assert_eq!(info["username"], "alice@example.com", "{who}");
    assert_eq!(
        info["groups"],
        json!(["oidc:dev", "system:authenticated"]),
        "{who}"
    );
    assert!(issuer.server.count(|p, _| p == "/keys") >= 1);

    // RBAC on the prefixed group.
    let o = server.kubectl_with(&alice, &["get", "pods", "-n", "default"]);
    assert!(text(&o).contains("forbidden"), "{}", text(&o));
    assert!(
        text(&o).contains("User \"alice@example.com\" cannot list resource \"pods\""),
        "{}",
        text(&o)
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "clusterrolebinding",
            "oidc-dev-view",
            "--clusterrole=view",
            "--group=oidc:dev",
        ],
    );
    eventually("the binding applies", || {
        server
            .kubectl_with(&alice, &["get", "pods", "-n", "default"])
            .status
            .success()
    });
    let o = server.kubectl_with(&alice, &["create", "configmap", "x", "-n", "default"]);
    assert!(
        !o.status.success() && text(&o).contains("forbidden"),
        "{}",
        text(&o)
    );

    // Bad tokens: each one is a 401.
    let mut bad: Vec<(&str, String)> = Vec::new();
    let mut c = issuer.claims("bob@example.com");
    c["exp"] = json!(c["iat"].as_u64().unwrap() - 60);
    bad.push(("expired", issuer.sign(&c)));
    let mut c = issuer.claims("bob@example.com");
    c["aud"] = json!("another-client");
    bad.push(("wrong audience", issuer.sign(&c)));
    let mut c = issuer.claims("bob@example.com");
    c["hd"] = json!("evil.com");
    bad.push(("required claim", issuer.sign(&c)));
    let mut c = issuer.claims("bob@example.com");
    c["email_verified"] = json!(false);
    bad.push(("unverified email", issuer.sign(&c)));
    // A payload swapped under alice's signature.
    let parts: Vec<&str> = alice_token.split('.').collect();
    let forged = issuer.claims("root@example.com");
    bad.push((
        "forged",
        format!(
            "{}.{}.{}",
            parts[0],
            b64(forged.to_string().as_bytes()),
            parts[2]
        ),
    ));
    // Signed by a key the issuer never published.
    let other = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    header.kid = Some("test-key".into());
    bad.push((
        "unknown key",
        jsonwebtoken::encode(
            &header,
            &issuer.claims("bob@example.com"),
            &jsonwebtoken::EncodingKey::from_ec_der(&other.serialize_der()),
        )
        .unwrap(),
    ));
    // HS256 with a guessable secret is not an accepted algorithm.
    bad.push((
        "hmac",
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256),
            &issuer.claims("bob@example.com"),
            &jsonwebtoken::EncodingKey::from_secret(b"secret"),
        )
        .unwrap(),
    ));
    // Another issuer's token: no authenticator accepts it.
    let mut c = issuer.claims("bob@example.com");
    c["iss"] = json!("https://elsewhere.example");
    bad.push(("other issuer", issuer.sign(&c)));
    for (what, token) in &bad {
        let kc = exec_kubeconfig(&server, "bad", token);
        let o = server.kubectl_with(&kc, &["get", "pods"]);
        assert!(
            !o.status.success()
                && text(&o).contains("You must be logged in to the server (Unauthorized)"),
            "{what}: {}",
            text(&o)
        );
    }

    // No token, good or bad, reaches the log.
    let log = std::fs::read_to_string(server.dir.path().join("server.log")).unwrap();
    assert!(
        log.contains("oidc"),
        "the log shows the OIDC authenticator's work"
    );
    for token in std::iter::once(&alice_token).chain(bad.iter().map(|(_, t)| t)) {
        let signature = token.rsplit('.').next().unwrap();
        assert!(!log.contains(signature), "a token is in the log");
    }
}

#[test]
fn oidc_flags_are_checked() {
    let run = testkit::server_start_error;
    let err = run(&["--oidc-issuer-url=https://issuer.example"]);
    assert!(
        err.contains("oidc-client-id must be specified together"),
        "{err}"
    );
    let err = run(&[
        "--oidc-issuer-url=https://issuer.example",
        "--oidc-client-id=a",
        "--oidc-signing-algs=HS256",
    ]);
    assert!(err.contains("unsupported signing alg \"HS256\""), "{err}");
}
