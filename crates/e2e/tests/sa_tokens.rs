//! Service-account tokens against the real `rkube server` and the real kubectl: tokens from
//! `kubectl create token` (TokenRequest) authenticate as their service account until it,
//! or the object they are bound to, is gone; durations, audiences, bindings and the
//! one-year extension of kubelet-style requests; tampered, expired, foreign and
//! wrong-audience tokens are 401; the generated signing key survives a restart; and an
//! external signing key and verification keys made by openssl, with several issuers and
//! audiences. Tokens are forged with openssl (independently of the server's JWT code).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use serde_json::{Value, json};
use testkit::RkubeServer;
use testkit::eventually;

const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

struct Env {
    server: RkubeServer,
    files: tempfile::TempDir,
}

fn text(out: &Output) -> String {
    format!(
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn unauthorized(out: &Output) {
    assert!(!out.status.success(), "{}", text(out));
    assert!(
        stderr(out).contains("You must be logged in to the server (Unauthorized)"),
        "{}",
        text(out)
    );
}

fn b64url(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn part(token: &str, i: usize) -> Value {
    let p = token.split('.').nth(i).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(p)
            .unwrap(),
    )
    .unwrap()
}

fn claims(token: &str) -> Value {
    part(token, 1)
}

fn header(token: &str) -> Value {
    part(token, 0)
}

fn now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

fn openssl(dir: &Path, args: &[&str]) -> Vec<u8> {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap_or_else(|e| panic!("cannot run openssl (apt-get install openssl): {e}"));
    assert!(out.status.success(), "openssl {args:?}: {}", text(&out));
    out.stdout
}

/// A DER `ECDSA-Sig-Value` as JWS wants it: `r || s`, each `size` bytes.
fn ecdsa_raw(der: &[u8], size: usize) -> Vec<u8> {
    fn integer(input: &[u8]) -> (&[u8], &[u8]) {
        assert_eq!(input[0], 0x02);
        let len = input[1] as usize;
        (&input[2..2 + len], &input[2 + len..])
    }
    assert_eq!(der[0], 0x30);
    let body = if der[1] & 0x80 != 0 {
        &der[2 + (der[1] & 0x7f) as usize..]
    } else {
        &der[2..]
    };
    let (r, rest) = integer(body);
    let (s, _) = integer(rest);
    let mut out = Vec::new();
    for n in [r, s] {
        let n = &n[n.len().saturating_sub(size)..];
        out.extend(std::iter::repeat_n(0u8, size - n.len()));
        out.extend_from_slice(n);
    }
    out
}

/// A JWS of `claims` signed by the PEM private key `key` with openssl (ES256 or RS256).
fn forge(dir: &Path, key: &Path, header: &Value, claims: &Value) -> String {
    let input = format!(
        "{}.{}",
        b64url(&serde_json::to_vec(header).unwrap()),
        b64url(&serde_json::to_vec(claims).unwrap())
    );
    let file = dir.join("signing-input");
    std::fs::write(&file, &input).unwrap();
    let sig = openssl(
        dir,
        &[
            "dgst",
            "-sha256",
            "-binary",
            "-sign",
            key.to_str().unwrap(),
            file.to_str().unwrap(),
        ],
    );
    let sig = match header["alg"].as_str() {
        Some("ES256") => ecdsa_raw(&sig, 32),
        _ => sig,
    };
    format!("{input}.{}", b64url(&sig))
}

/// Upstream's key ID of a PEM public key: base64url(SHA-256(PKIX DER)).
fn key_id(dir: &Path, public_pem: &Path) -> String {
    let der = dir.join("key.der");
    openssl(
        dir,
        &[
            "pkey",
            "-pubin",
            "-in",
            public_pem.to_str().unwrap(),
            "-outform",
            "DER",
            "-out",
            der.to_str().unwrap(),
        ],
    );
    b64url(&openssl(
        dir,
        &["dgst", "-sha256", "-binary", der.to_str().unwrap()],
    ))
}

impl Env {
    fn start(extra: &[&str]) -> Env {
        let files = tempfile::tempdir().unwrap();
        Self::start_in(files, extra)
    }

    fn start_in(files: tempfile::TempDir, extra: &[&str]) -> Env {
        // Debug logging: the tests check that no token reaches the log.
        let server = RkubeServer::start_logging(extra, Some("debug"));
        let env = Env { server, files };
        let kubeconfig = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{}\n    certificate-authority: {}\nusers:\n- name: u\n  user: {{}}\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            env.server.port,
            env.tls().join("server-ca.crt").display()
        );
        std::fs::write(env.token_kubeconfig(), kubeconfig).unwrap();
        env
    }

    fn tls(&self) -> PathBuf {
        self.server.dir.path().join("data").join("tls")
    }

    fn token_kubeconfig(&self) -> PathBuf {
        self.files.path().join("token.kubeconfig")
    }

    fn admin(&self, args: &[&str]) -> String {
        self.server.kubectl_ok(None, args)
    }

    fn admin_stdin(&self, args: &[&str], stdin: &str) -> Output {
        self.server.kubectl_stdin(None, args, stdin)
    }

    fn apply(&self, manifest: &Value) {
        let out = self.admin_stdin(&["apply", "-f", "-"], &manifest.to_string());
        assert!(out.status.success(), "{}", text(&out));
    }

    fn uid(&self, kind: &str, name: &str) -> String {
        self.admin(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
    }

    /// `kubectl create token <args>` as the admin: the token.
    fn create_token(&self, args: &[&str]) -> String {
        let mut all = vec!["create", "token"];
        all.extend_from_slice(args);
        self.admin(&all).trim().to_string()
    }

    /// `kubectl create token <args>` as the admin, failing: stderr.
    fn create_token_fails(&self, args: &[&str]) -> String {
        let mut all = vec!["create", "token"];
        all.extend_from_slice(args);
        let out = self.server.kubectl(&all);
        assert!(!out.status.success(), "{}", text(&out));
        stderr(&out)
    }

    /// kubectl with only `token` as credentials.
    fn with_token(&self, token: &str, args: &[&str]) -> Output {
        self.server
            .kubectl_cmd(None)
            .env("KUBECONFIG", self.token_kubeconfig())
            .arg(format!("--token={token}"))
            .args(args)
            .output()
            .unwrap()
    }

    /// `kubectl auth whoami -o json` with the token: the user info.
    fn whoami(&self, token: &str) -> Value {
        let out = self.with_token(token, &["auth", "whoami", "-o", "json"]);
        assert!(
            out.status.success(),
            "{}\nserver log:\n{}",
            text(&out),
            self.server.log_tail()
        );
        let review: Value = serde_json::from_slice(&out.stdout).unwrap();
        review["status"]["userInfo"].clone()
    }

    fn accepted(&self, token: &str) -> bool {
        self.with_token(token, &["auth", "whoami"]).status.success()
    }

    /// The admin's `TokenReview` of `token`: its status.
    fn review(&self, token: &str) -> Value {
        self.review_for(token, &[])
    }

    /// The admin's `TokenReview` of `token` for `audiences`: its status.
    fn review_for(&self, token: &str, audiences: &[&str]) -> Value {
        let mut body = json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        });
        if !audiences.is_empty() {
            body["spec"]["audiences"] = json!(audiences);
        }
        let out = self.admin_stdin(&["create", "-o", "json", "-f", "-"], &body.to_string());
        assert!(out.status.success(), "{}", text(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()["status"].clone()
    }

    /// Why the server rejects `token` (checked to be a 401 for kubectl too).
    fn rejection(&self, token: &str) -> String {
        unauthorized(&self.with_token(token, &["auth", "whoami"]));
        let status = self.review(token);
        assert_ne!(status["authenticated"], true, "{status}");
        status["error"].as_str().unwrap_or_default().to_string()
    }

    /// `GET path` with a bearer token through curl: the HTTP code and body.
    fn curl(&self, path: &str, token: &str) -> (u16, Value) {
        let out = Command::new("curl")
            .args(["--http1.1", "-sS", "--max-time", "30", "--cacert"])
            .arg(self.tls().join("server-ca.crt"))
            .args(["-w", "\n%{http_code}", "-H"])
            .arg(format!("Authorization: Bearer {token}"))
            .arg(format!("https://127.0.0.1:{}{path}", self.server.port))
            .output()
            .unwrap_or_else(|e| panic!("cannot run curl (apt-get install curl): {e}"));
        let out = String::from_utf8_lossy(&out.stdout).to_string();
        let (body, code) = out.rsplit_once('\n').unwrap();
        (
            code.trim().parse().unwrap(),
            serde_json::from_str(body).unwrap_or(Value::Null),
        )
    }
}

fn pod(name: &str, sa: &str, node: Option<&str>) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"serviceAccountName": sa, "containers": [{"name": "c", "image": "busybox"}]},
    });
    if let Some(n) = node {
        p["spec"]["nodeName"] = json!(n);
    }
    p
}

#[test]
fn issued_tokens_authenticate_until_their_objects_go() {
    let env = Env::start(&[]);
    let dir = env.files.path();

    // Discovery lists the subresource.
    let core = env.admin(&["get", "--raw", "/api/v1"]);
    let core: Value = serde_json::from_str(&core).unwrap();
    let token_res = core["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "serviceaccounts/token")
        .expect("serviceaccounts/token in discovery")
        .clone();
    assert_eq!(token_res["kind"], "TokenRequest");
    assert_eq!(token_res["group"], "authentication.k8s.io");
    assert_eq!(token_res["version"], "v1");
    assert_eq!(token_res["verbs"], json!(["create"]));

    // A token for a service account authenticates as it.
    env.admin(&["create", "serviceaccount", "robot"]);
    let sa_uid = env.uid("serviceaccount", "robot");
    let token = env.create_token(&["robot"]);
    let user = env.whoami(&token);
    assert_eq!(user["username"], "system:serviceaccount:default:robot");
    assert_eq!(user["uid"], sa_uid.as_str());
    assert_eq!(
        user["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:default",
            "system:authenticated"
        ])
    );
    let c = claims(&token);
    let jti = c["jti"].as_str().unwrap();
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/credential-id"],
        json!([format!("JTI={jti}")])
    );
    // Upstream's claims: the default issuer and audience, an hour of validity.
    assert_eq!(c["iss"], ISSUER);
    assert_eq!(c["aud"], json!([ISSUER]));
    assert_eq!(c["sub"], "system:serviceaccount:default:robot");
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3600
    );
    assert_eq!(c["nbf"], c["iat"]);
    assert!((c["iat"].as_i64().unwrap() - now()).abs() < 60);
    assert_eq!(
        c["kubernetes.io"],
        json!({"namespace": "default", "serviceaccount": {"name": "robot", "uid": sa_uid}})
    );
    let h = header(&token);
    assert_eq!(h["alg"], "ES256");
    assert!(h["kid"].as_str().is_some_and(|k| k.len() == 43), "{h}");
    // The generated key is in the data dir, owner-only.
    let key_path = env.tls().join("service.key");
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&key_path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    openssl(
        dir,
        &[
            "pkey",
            "-in",
            key_path.to_str().unwrap(),
            "-pubout",
            "-out",
            "service.pub",
        ],
    );
    assert_eq!(h["kid"], key_id(dir, &dir.join("service.pub")).as_str());

    // Authorization is RBAC's: nothing until a binding.
    let out = env.with_token(&token, &["get", "pods"]);
    assert!(!out.status.success());
    assert!(
        stderr(&out)
            .contains("User \"system:serviceaccount:default:robot\" cannot list resource \"pods\""),
        "{}",
        text(&out)
    );
    env.admin(&[
        "create",
        "rolebinding",
        "robot-view",
        "--clusterrole=view",
        "--serviceaccount=default:robot",
    ]);
    eventually("the binding", || {
        env.with_token(&token, &["get", "pods"]).status.success()
    });

    // TokenReview says the same.
    let review = env.review(&token);
    assert_eq!(review["authenticated"], true, "{review}");
    assert_eq!(
        review["user"]["username"],
        "system:serviceaccount:default:robot"
    );

    // Durations: --duration, the 10-minute minimum.
    let t = env.create_token(&["robot", "--duration=20m"]);
    let c = claims(&t);
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        1200
    );
    let err = env.create_token_fails(&["robot", "--duration=5m"]);
    assert!(
        err.contains("TokenRequest.authentication.k8s.io \"\" is invalid: spec.expirationSeconds: Invalid value: 300: may not specify a duration less than 10 minutes"),
        "{err}"
    );
    // The response: expirationTimestamp is now + the duration.
    let out = env.admin(&["create", "token", "robot", "--duration=1h", "-o", "json"]);
    let tr: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["apiVersion"], "authentication.k8s.io/v1");
    assert_eq!(tr["metadata"]["name"], "robot");
    assert_eq!(tr["metadata"]["namespace"], "default");
    assert_eq!(tr["spec"]["audiences"], json!([ISSUER]));
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    let exp_ts = tr["status"]["expirationTimestamp"].as_str().unwrap();
    let t = tr["status"]["token"].as_str().unwrap();
    let exp = claims(t)["exp"].as_i64().unwrap();
    let ts = Command::new("date")
        .args(["-u", "-d", exp_ts, "+%s"])
        .output()
        .unwrap();
    let ts: i64 = String::from_utf8_lossy(&ts.stdout).trim().parse().unwrap();
    assert!((exp - 1..=exp).contains(&ts), "{exp_ts} vs {exp}");

    // No such service account.
    let err = env.create_token_fails(&["ghost"]);
    assert!(err.contains("serviceaccounts \"ghost\" not found"), "{err}");

    // Other audiences: issued as asked, not accepted by the API server.
    let vault = env.create_token(&["robot", "--audience=vault", "--audience=other"]);
    assert_eq!(claims(&vault)["aud"], json!(["vault", "other"]));
    assert_eq!(
        env.rejection(&vault),
        "token audiences [\"vault\" \"other\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\"]"
    );
    let both = env.create_token(&["robot", "--audience=vault", &format!("--audience={ISSUER}")]);
    assert!(env.accepted(&both));
    // A TokenReview for its own audiences (as vault would ask): valid for those the token
    // has among them.
    let st = env.review_for(&vault, &["vault", "elsewhere"]);
    assert_eq!(st["authenticated"], true, "{st}");
    assert_eq!(st["audiences"], json!(["vault"]), "{st}");
    let st = env.review_for(&vault, &["elsewhere"]);
    assert_ne!(st["authenticated"], true, "{st}");
    assert!(
        st["error"]
            .as_str()
            .unwrap_or_default()
            .contains("is invalid for the target audiences [\"elsewhere\"]"),
        "{st}"
    );
    assert_eq!(env.review(&both)["audiences"], json!([ISSUER]));

    // Tampered tokens: a changed signature, a changed payload.
    let (rest, sig) = token.rsplit_once('.').unwrap();
    let mut sig = sig.as_bytes().to_vec();
    sig[10] = if sig[10] == b'A' { b'B' } else { b'A' };
    let tampered = format!("{rest}.{}", String::from_utf8(sig).unwrap());
    assert_eq!(
        env.rejection(&tampered),
        "go-jose/go-jose: error in cryptographic primitive"
    );
    let (code, body) = env.curl("/api/v1/namespaces/default/pods", &tampered);
    assert_eq!(code, 401, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Unauthorized");
    let mut c = claims(&token);
    c["sub"] = json!("system:serviceaccount:kube-system:admin");
    let parts: Vec<&str> = token.split('.').collect();
    let forged = format!(
        "{}.{}.{}",
        parts[0],
        b64url(&serde_json::to_vec(&c).unwrap()),
        parts[2]
    );
    unauthorized(&env.with_token(&forged, &["auth", "whoami"]));

    // Tokens signed with the server's key but with bad claims (forged with openssl).
    let base = claims(&token);
    let sign = |f: &dyn Fn(&mut Value)| {
        let mut c = base.clone();
        f(&mut c);
        forge(dir, &key_path, &header(&token), &c)
    };
    let good = sign(&|_| {});
    assert!(env.accepted(&good), "an openssl-signed token is accepted");
    let expired = sign(&|c| {
        c["iat"] = json!(now() - 7200);
        c["nbf"] = json!(now() - 7200);
        c["exp"] = json!(now() - 3600);
    });
    assert_eq!(env.rejection(&expired), "service account token has expired");
    let early = sign(&|c| c["nbf"] = json!(now() + 3600));
    assert_eq!(
        env.rejection(&early),
        "service account token is not valid yet"
    );
    // Another issuer's token is not ours: no authenticator accepts it.
    let foreign = sign(&|c| c["iss"] = json!("https://accounts.example.com"));
    assert_eq!(env.rejection(&foreign), "invalid bearer token");
    let (code, _) = env.curl("/api/v1/namespaces/default/pods", &foreign);
    assert_eq!(code, 401);

    // Pod-bound tokens: valid while the pod (same UID) exists.
    env.apply(&json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-a"}}));
    let node_uid = env.uid("node", "node-a");
    env.apply(&pod("web", "robot", Some("node-a")));
    let pod_uid = env.uid("pod", "web");
    let bound = env.create_token(&[
        "robot",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
    ]);
    let c = claims(&bound);
    assert_eq!(
        c["kubernetes.io"]["pod"],
        json!({"name": "web", "uid": pod_uid})
    );
    assert_eq!(
        c["kubernetes.io"]["node"],
        json!({"name": "node-a", "uid": node_uid})
    );
    let user = env.whoami(&bound);
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-name"],
        json!(["web"])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/pod-uid"],
        json!([pod_uid])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/node-name"],
        json!(["node-a"])
    );
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/node-uid"],
        json!([node_uid])
    );
    // The UID must be the pod's; the pod must run as the service account.
    let err = env.create_token_fails(&[
        "robot",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
        "--bound-object-uid=0d4691ed-659b-4935-a832-355f77ee47cc",
    ]);
    assert!(
        err.contains("Operation cannot be fulfilled on Pod \"web\": the UID in the bound object reference (0d4691ed-659b-4935-a832-355f77ee47cc) does not match the UID in record"),
        "{err}"
    );
    env.admin(&["create", "serviceaccount", "other"]);
    let err = env.create_token_fails(&[
        "other",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
    ]);
    assert!(
        err.contains("cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name."),
        "{err}"
    );
    let err = env.create_token_fails(&[
        "robot",
        "--bound-object-kind=Pod",
        "--bound-object-name=nope",
    ]);
    assert!(err.contains("pods \"nope\" not found"), "{err}");

    // Kubelet's 1h7s pod-bound request: valid a year, stale after 1h7s; the response
    // still says 1h7s.
    let out = env.admin(&[
        "create",
        "token",
        "robot",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
        "--duration=3607s",
        "-o",
        "json",
    ]);
    let tr: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(tr["spec"]["expirationSeconds"], 3607);
    let c = claims(tr["status"]["token"].as_str().unwrap());
    let iat = c["iat"].as_i64().unwrap();
    assert_eq!(c["exp"].as_i64().unwrap() - iat, 365 * 24 * 3600);
    assert_eq!(
        c["kubernetes.io"]["warnafter"].as_i64().unwrap() - iat,
        3607
    );
    // Not for unbound tokens, nor for other audiences.
    let c = claims(&env.create_token(&["robot", "--duration=3607s"]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );
    let c = claims(&env.create_token(&[
        "robot",
        "--bound-object-kind=Pod",
        "--bound-object-name=web",
        "--duration=3607s",
        "--audience=vault",
    ]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );
    assert!(c["kubernetes.io"].get("warnafter").is_none());

    env.admin(&["delete", "pod", "web", "--grace-period=0", "--force"]);
    eventually("the pod-bound token to fail", || !env.accepted(&bound));
    assert_eq!(
        env.rejection(&bound),
        "service account token has been invalidated"
    );
    // A new pod of the same name is another pod.
    env.apply(&pod("web", "robot", None));
    eventually("the new pod", || {
        env.review(&bound)["error"] != "service account token has been invalidated"
    });
    assert!(
        env.rejection(&bound).starts_with("pod UID ("),
        "{}",
        env.rejection(&bound)
    );

    // Secret- and node-bound tokens.
    env.admin(&["create", "secret", "generic", "s1", "--from-literal=a=b"]);
    let secret_bound = env.create_token(&[
        "robot",
        "--bound-object-kind=Secret",
        "--bound-object-name=s1",
    ]);
    assert!(env.accepted(&secret_bound));
    env.admin(&["delete", "secret", "s1"]);
    eventually("the secret-bound token to fail", || {
        !env.accepted(&secret_bound)
    });
    let node_bound = env.create_token(&[
        "robot",
        "--bound-object-kind=Node",
        "--bound-object-name=node-a",
    ]);
    let user = env.whoami(&node_bound);
    assert_eq!(
        user["extra"]["authentication.kubernetes.io/node-name"],
        json!(["node-a"])
    );
    assert!(
        user["extra"]
            .get("authentication.kubernetes.io/pod-name")
            .is_none()
    );
    env.admin(&["delete", "node", "node-a"]);
    eventually("the node-bound token to fail", || {
        !env.accepted(&node_bound)
    });

    // Deleting the service account revokes its tokens; a new one of the same name does
    // not bring them back.
    env.admin(&["delete", "serviceaccount", "robot"]);
    eventually("the token to fail", || !env.accepted(&token));
    assert_eq!(env.rejection(&token), "serviceaccounts \"robot\" not found");
    env.admin(&["create", "serviceaccount", "robot"]);
    let new_uid = env.uid("serviceaccount", "robot");
    eventually("the new service account", || {
        env.review(&token)["error"] != "serviceaccounts \"robot\" not found"
    });
    assert_eq!(
        env.rejection(&token),
        format!("service account UID ({new_uid}) does not match claim ({sa_uid})")
    );
    let fresh = env.create_token(&["robot", "--duration=2h"]);
    assert_eq!(env.whoami(&fresh)["uid"], new_uid.as_str());

    // The generated key survives a restart: tokens stay valid, new ones use it.
    let key_before = std::fs::read(&key_path).unwrap();
    let mut env = env;
    env.server.restart();
    assert_eq!(std::fs::read(&key_path).unwrap(), key_before);
    eventually("the restarted server to accept the token", || {
        env.accepted(&fresh)
    });
    let after = env.create_token(&["robot"]);
    assert_eq!(header(&after)["kid"], header(&fresh)["kid"]);
    assert!(env.accepted(&after));

    // No token reaches the server's log, even at debug level.
    let log = std::fs::read_to_string(env.server.dir.path().join("server.log")).unwrap();
    assert!(log.contains("DEBUG"), "the server logged at debug level");
    for t in [&token, &bound, &fresh, &after, &tampered, &expired] {
        let signature = t.rsplit_once('.').unwrap().1;
        assert!(
            !log.contains(signature),
            "a token leaked into the server log"
        );
    }
}

#[test]
fn external_keys_issuers_and_audiences() {
    let files = tempfile::tempdir().unwrap();
    let dir = files.path();
    // The signing key (RSA, PKCS #1), its public key, and an older EC key still trusted.
    openssl(dir, &["genrsa", "-traditional", "-out", "sa.key", "2048"]);
    openssl(dir, &["rsa", "-in", "sa.key", "-pubout", "-out", "sa.pub"]);
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "old.key",
        ],
    );
    openssl(dir, &["ec", "-in", "old.key", "-pubout", "-out", "old.pub"]);
    openssl(
        dir,
        &[
            "ecparam",
            "-name",
            "prime256v1",
            "-genkey",
            "-noout",
            "-out",
            "stranger.key",
        ],
    );
    let p = |name: &str| dir.join(name).to_str().unwrap().to_string();

    // Bad flags stop the server before it serves.
    for (flags, message) in [
        (
            vec![
                "--service-account-signing-key-file".to_string(),
                p("missing.key"),
            ],
            "--service-account-signing-key-file",
        ),
        (
            vec![
                "--service-account-key-file".to_string(),
                p("sa.key"),
                "--service-account-signing-key-file".to_string(),
                p("sa.pub"),
            ],
            "data does not contain a valid RSA or ECDSA private key",
        ),
        (
            vec![
                "--service-account-max-token-expiration".to_string(),
                "30m".to_string(),
            ],
            "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds",
        ),
    ] {
        let flags: Vec<&str> = flags.iter().map(AsRef::as_ref).collect();
        let err = testkit::server_start_error(&flags);
        assert!(err.contains(message), "{flags:?}: {err}");
    }

    let args: Vec<String> = [
        "--service-account-signing-key-file",
        &p("sa.key"),
        "--service-account-key-file",
        &p("sa.pub"),
        "--service-account-key-file",
        &p("old.pub"),
        "--service-account-issuer",
        "https://issuer.example",
        "--service-account-issuer",
        "https://old-issuer.example",
        "--api-audiences",
        "api,https://issuer.example",
        "--service-account-max-token-expiration",
        "2h",
        "--service-account-extend-token-expiration=false",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let env = Env::start_in(files, &args);
    let dir = env.files.path();
    // No key is generated when one is given.
    assert!(!env.tls().join("service.key").exists());

    env.admin(&["create", "serviceaccount", "bot"]);
    let sa_uid = env.uid("serviceaccount", "bot");
    let token = env.create_token(&["bot"]);
    let h = header(&token);
    assert_eq!(h["alg"], "RS256");
    assert_eq!(h["kid"], key_id(dir, &dir.join("sa.pub")).as_str());
    let c = claims(&token);
    assert_eq!(c["iss"], "https://issuer.example");
    assert_eq!(c["aud"], json!(["api", "https://issuer.example"]));
    assert_eq!(
        env.whoami(&token)["username"],
        "system:serviceaccount:default:bot"
    );
    let api_only = env.create_token(&["bot", "--audience=api"]);
    assert!(env.accepted(&api_only));
    let other = env.create_token(&["bot", "--audience=https://old-issuer.example"]);
    assert_eq!(
        env.rejection(&other),
        "token audiences [\"https://old-issuer.example\"] is invalid for the target audiences [\"api\" \"https://issuer.example\"]"
    );

    // The maximum: a longer request is shortened, with a warning.
    let out = env
        .server
        .kubectl(&["create", "token", "bot", "--duration=10h"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        stderr(&out).contains("requested expiration of 36000 seconds shortened to 7200 seconds"),
        "{}",
        text(&out)
    );
    let long = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let c = claims(&long);
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        7200
    );
    // Without the extension, kubelet's 1h7s stays 1h7s.
    env.apply(&pod("job", "bot", None));
    let c = claims(&env.create_token(&[
        "bot",
        "--bound-object-kind=Pod",
        "--bound-object-name=job",
        "--duration=3607s",
    ]));
    assert_eq!(
        c["exp"].as_i64().unwrap() - c["iat"].as_i64().unwrap(),
        3607
    );

    // Tokens made elsewhere: the old key and the old issuer are accepted, a key that is
    // not listed is not.
    let n = now();
    let claims_for = |iss: &str| {
        json!({
            "iss": iss, "sub": "system:serviceaccount:default:bot", "aud": ["api"],
            "iat": n, "nbf": n, "exp": n + 600,
            "kubernetes.io": {"namespace": "default", "serviceaccount": {"name": "bot", "uid": sa_uid}},
        })
    };
    let rs = |kid: &str| json!({"alg": "RS256", "kid": kid});
    let es = json!({"alg": "ES256"});
    let old_issuer = forge(
        dir,
        &dir.join("sa.key"),
        &h,
        &claims_for("https://old-issuer.example"),
    );
    assert!(env.accepted(&old_issuer));
    let old_key = forge(
        dir,
        &dir.join("old.key"),
        &es,
        &claims_for("https://issuer.example"),
    );
    assert!(env.accepted(&old_key));
    let old_kid = forge(
        dir,
        &dir.join("old.key"),
        &json!({"alg": "ES256", "kid": key_id(dir, &dir.join("old.pub"))}),
        &claims_for("https://issuer.example"),
    );
    assert!(env.accepted(&old_kid));
    // Without a kid every key is tried: the RSA key cannot verify ES256, the EC key
    // finds a bad signature (upstream's aggregate of both).
    let stranger = forge(
        dir,
        &dir.join("stranger.key"),
        &es,
        &claims_for("https://issuer.example"),
    );
    assert_eq!(
        env.rejection(&stranger),
        "[go-jose/go-jose: unknown/unsupported algorithm, go-jose/go-jose: error in cryptographic primitive]"
    );
    let wrong_kid = forge(
        dir,
        &dir.join("sa.key"),
        &rs("not-a-key"),
        &claims_for("https://issuer.example"),
    );
    assert_eq!(
        env.rejection(&wrong_kid),
        "invalid signature, no keys found"
    );
    // The default issuer is not accepted by this server: the token is nobody's.
    let default_issuer = forge(dir, &dir.join("sa.key"), &h, &claims_for(ISSUER));
    assert_eq!(env.rejection(&default_issuer), "invalid bearer token");
    // A legacy token (secret-based) is accepted only while its secret holds it.
    let legacy_claims = json!({
        "iss": "kubernetes/serviceaccount",
        "sub": "system:serviceaccount:default:bot",
        "kubernetes.io/serviceaccount/namespace": "default",
        "kubernetes.io/serviceaccount/secret.name": "bot-token",
        "kubernetes.io/serviceaccount/service-account.name": "bot",
        "kubernetes.io/serviceaccount/service-account.uid": sa_uid,
    });
    let legacy = forge(dir, &dir.join("sa.key"), &h, &legacy_claims);
    assert_eq!(env.rejection(&legacy), "token has been invalidated");
    env.apply(&json!({
        "apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token",
        "metadata": {"name": "bot-token", "namespace": "default", "annotations": {"kubernetes.io/service-account.name": "bot"}},
        "data": {"token": base64::engine::general_purpose::STANDARD.encode(&legacy)},
    }));
    eventually("the legacy token", || env.accepted(&legacy));
    let user = env.whoami(&legacy);
    assert_eq!(user["username"], "system:serviceaccount:default:bot");
    assert_eq!(user["uid"], sa_uid.as_str());
}
