//! Decodes real protobuf bodies: the upstream `kubectl` binaries (1.27–1.33, the Google
//! Cloud SDK's bundle) run against a tiny HTTP server that records what they send. Every
//! body kubectl sends as protobuf must decode to the JSON kubectl itself prints for the
//! same command with `--dry-run=client -o json` (or, for commands without a dry run, to the
//! JSON body kubectl 1.31 sends for it).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use serde_json::{Value, json};

/// One request kubectl sent with a body.
#[derive(Debug, Clone)]
struct Captured {
    method: String,
    path: String,
    content_type: String,
    body: Vec<u8>,
}

struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    captured: Arc<Mutex<Vec<Captured>>>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

impl Server {
    fn start() -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = Arc::new(AtomicBool::new(false));
        let captured = Arc::new(Mutex::new(Vec::new()));
        let (stopped, log) = (stop.clone(), captured.clone());
        thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let log = log.clone();
                thread::spawn(move || serve(stream, &log));
            }
        });
        Server {
            port,
            stop,
            captured,
        }
    }

    fn take(&self) -> Vec<Captured> {
        std::mem::take(&mut *self.captured.lock().unwrap())
    }
}

/// Resources by group version: (plural, kind, namespaced).
/// (plural, kind, namespaced)
type Resource = (&'static str, &'static str, bool);

const RESOURCES: &[(&str, &[Resource])] = &[
    (
        "v1",
        &[
            ("namespaces", "Namespace", false),
            ("configmaps", "ConfigMap", true),
            ("secrets", "Secret", true),
            ("services", "Service", true),
            ("serviceaccounts", "ServiceAccount", true),
            ("resourcequotas", "ResourceQuota", true),
            ("pods", "Pod", true),
            ("nodes", "Node", false),
        ],
    ),
    ("apps/v1", &[("deployments", "Deployment", true)]),
    (
        "batch/v1",
        &[("jobs", "Job", true), ("cronjobs", "CronJob", true)],
    ),
    (
        "rbac.authorization.k8s.io/v1",
        &[
            ("roles", "Role", true),
            ("rolebindings", "RoleBinding", true),
            ("clusterroles", "ClusterRole", false),
            ("clusterrolebindings", "ClusterRoleBinding", false),
        ],
    ),
    (
        "policy/v1",
        &[("poddisruptionbudgets", "PodDisruptionBudget", true)],
    ),
    (
        "scheduling.k8s.io/v1",
        &[("priorityclasses", "PriorityClass", false)],
    ),
    (
        "authorization.k8s.io/v1",
        &[
            ("selfsubjectaccessreviews", "SelfSubjectAccessReview", false),
            ("selfsubjectrulesreviews", "SelfSubjectRulesReview", false),
        ],
    ),
    (
        "authentication.k8s.io/v1",
        &[("selfsubjectreviews", "SelfSubjectReview", false)],
    ),
    ("networking.k8s.io/v1", &[("ingresses", "Ingress", true)]),
    (
        "certificates.k8s.io/v1",
        &[(
            "certificatesigningrequests",
            "CertificateSigningRequest",
            false,
        )],
    ),
];

fn discovery(path: &str) -> Option<Value> {
    if path == "/api" {
        return Some(json!({"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}));
    }
    if path == "/apis" {
        let groups: Vec<Value> = RESOURCES
            .iter()
            .filter_map(|(gv, _)| gv.split_once('/'))
            .map(|(g, v)| {
                json!({"name": g, "versions": [{"groupVersion": format!("{g}/{v}"), "version": v}],
                    "preferredVersion": {"groupVersion": format!("{g}/{v}"), "version": v}})
            })
            .collect();
        return Some(json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}));
    }
    let gv = path
        .strip_prefix("/api/")
        .or_else(|| path.strip_prefix("/apis/"))?;
    let (_, resources) = RESOURCES.iter().find(|(g, _)| *g == gv)?;
    let resources: Vec<Value> = resources
        .iter()
        .map(|(plural, kind, namespaced)| {
            json!({"name": plural, "singularName": kind.to_lowercase(), "namespaced": namespaced,
                "kind": kind, "verbs": ["create", "delete", "get", "list", "patch", "update"]})
        })
        .collect();
    Some(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

/// The object a create answers with: the kind the URL names, plus what kubectl checks.
fn created(path: &str) -> Value {
    let path = path.split('?').next().unwrap_or_default();
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let (api_version, rest) = match segs.as_slice() {
        ["api", v, rest @ ..] => (v.to_string(), rest),
        ["apis", g, v, rest @ ..] => (format!("{g}/{v}"), rest),
        _ => return json!({}),
    };
    let rest: Vec<&str> = match rest {
        ["namespaces", _, tail @ ..] if !tail.is_empty() => tail.to_vec(),
        other => other.to_vec(),
    };
    if rest.last() == Some(&"token") {
        return json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {"name": "sa1"}, "spec": {"audiences": null},
            "status": {"token": "xyz", "expirationTimestamp": "2030-01-01T00:00:00Z"}});
    }
    let plural = rest.first().copied().unwrap_or_default();
    let kind = RESOURCES
        .iter()
        .filter(|(gv, _)| *gv == api_version)
        .flat_map(|(_, r)| r.iter())
        .find(|(p, _, _)| *p == plural)
        .map(|(_, k, _)| *k)
        .unwrap_or("Unknown");
    let mut obj = json!({"apiVersion": api_version, "kind": kind,
        "metadata": {"name": "x", "namespace": "default"}});
    match kind {
        "SelfSubjectAccessReview" => obj["status"] = json!({"allowed": true}),
        "SelfSubjectReview" => obj["status"] = json!({"userInfo": {"username": "alice"}}),
        "SelfSubjectRulesReview" => {
            obj["status"] =
                json!({"resourceRules": [], "nonResourceRules": [], "incomplete": false})
        }
        _ => {}
    }
    obj
}

fn respond(stream: &mut TcpStream, code: u16, body: &Value) -> std::io::Result<()> {
    let body = serde_json::to_vec(body).unwrap();
    write!(
        stream,
        "HTTP/1.1 {code} X\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    stream.write_all(&body)?;
    stream.flush()
}

fn serve(stream: TcpStream, log: &Mutex<Vec<Captured>>) {
    let Ok(mut out) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut parts = line.split_whitespace();
        let (method, path) = (
            parts.next().unwrap_or_default().to_string(),
            parts.next().unwrap_or_default().to_string(),
        );
        let (mut length, mut content_type) = (0usize, String::new());
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                match k.to_ascii_lowercase().as_str() {
                    "content-length" => length = v.trim().parse().unwrap_or(0),
                    "content-type" => content_type = v.trim().to_string(),
                    _ => {}
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let bare = path.split('?').next().unwrap_or_default().to_string();
        let result = if method == "GET" {
            match discovery(&bare) {
                Some(v) => respond(&mut out, 200, &v),
                None => respond(
                    &mut out,
                    404,
                    &json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                ),
            }
        } else {
            log.lock().unwrap().push(Captured {
                method: method.clone(),
                path: path.clone(),
                content_type,
                body,
            });
            if method == "DELETE" {
                respond(
                    &mut out,
                    200,
                    &json!({"kind": "Status", "apiVersion": "v1", "status": "Success"}),
                )
            } else {
                respond(&mut out, 201, &created(&path))
            }
        };
        if result.is_err() {
            return;
        }
    }
}

/// `kubectl.1.NN`, on PATH or beside the `kubectl` found on PATH (symlinks followed).
fn kubectl(minor: u32) -> PathBuf {
    let name = format!("kubectl.1.{minor}");
    let path = std::env::var_os("PATH").unwrap_or_default();
    for dir in std::env::split_paths(&path) {
        let direct = dir.join(&name);
        if direct.is_file() {
            return direct;
        }
        let plain = dir.join("kubectl");
        if plain.is_file()
            && let Ok(real) = std::fs::canonicalize(&plain)
            && let Some(beside) = real.parent().map(|d| d.join(&name))
            && beside.is_file()
        {
            return beside;
        }
    }
    panic!(
        "{name} not found on PATH nor beside kubectl (the Google Cloud SDK's kubectl bundle provides it)"
    );
}

fn run(minor: u32, server: &Server, args: &[&str]) -> (bool, String, String) {
    let home = tempfile::tempdir().unwrap();
    let out = Command::new(kubectl(minor))
        .args(["--server", &format!("http://127.0.0.1:{}", server.port)])
        .args(["--kubeconfig", "/dev/null", "--namespace", "default"])
        .args(args)
        .env("HOME", home.path())
        .env_remove("KUBECONFIG")
        .output()
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// One command: its arguments, and whether it has a client-side dry run.
struct Case {
    args: &'static [&'static str],
    dry_run: bool,
}

const CASES: &[Case] = &[
    Case {
        args: &[
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "deployment",
            "zero",
            "--image=nginx",
            "--replicas=0",
            "--port=8080",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "configmap",
            "cm1",
            "--from-literal=a=b",
            "--from-literal=empty=",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=password=s3cr3t",
            "--from-literal=bin=\u{00ff}\u{0001}",
            "--type=Opaque",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "secret",
            "docker-registry",
            "reg",
            "--docker-server=r.example",
            "--docker-username=u",
            "--docker-password=p",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "service",
            "clusterip",
            "svc1",
            "--tcp=80:8080",
            "--tcp=443:https",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "service",
            "nodeport",
            "np",
            "--tcp=80:8080",
            "--node-port=30080",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "service",
            "externalname",
            "ext",
            "--external-name=example.com",
        ],
        dry_run: true,
    },
    Case {
        args: &["create", "job", "j1", "--image=busybox", "--", "echo", "hi"],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "cronjob",
            "cj1",
            "--image=busybox",
            "--schedule=*/1 * * * *",
            "--restart=OnFailure",
            "--",
            "echo",
            "hi",
        ],
        dry_run: true,
    },
    Case {
        args: &["create", "namespace", "ns1"],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "role",
            "r1",
            "--verb=get,list",
            "--resource=pods,deployments.apps",
            "--resource-name=a",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "rolebinding",
            "rb1",
            "--role=r1",
            "--user=alice",
            "--serviceaccount=default:sa1",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "clusterrole",
            "cr1",
            "--verb=get",
            "--non-resource-url=/healthz",
            "--verb=get",
        ],
        dry_run: true,
    },
    Case {
        args: &["create", "clusterrole", "agg", "--aggregation-rule=a=b"],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "clusterrolebinding",
            "crb1",
            "--clusterrole=cr1",
            "--group=devs",
        ],
        dry_run: true,
    },
    Case {
        args: &["create", "serviceaccount", "sa1"],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "quota",
            "q1",
            "--hard=cpu=1,memory=1Gi,pods=10",
            "--scopes=BestEffort",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "priorityclass",
            "pc1",
            "--value=1000",
            "--description=hi",
            "--global-default=false",
            "--preemption-policy=Never",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "pdb",
            "pdb1",
            "--selector=app=x",
            "--min-available=50%",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "pdb",
            "pdb2",
            "--selector=app=y",
            "--max-unavailable=1",
        ],
        dry_run: true,
    },
    Case {
        args: &[
            "create",
            "ingress",
            "ing1",
            "--rule=foo.com/bar*=svc1:8080,tls=sec",
            "--class=nginx",
        ],
        dry_run: true,
    },
    Case {
        args: &["create", "token", "sa1", "--audience=a", "--duration=10m"],
        dry_run: false,
    },
    Case {
        args: &["auth", "can-i", "get", "pods", "--subresource=log"],
        dry_run: false,
    },
    Case {
        args: &[
            "auth",
            "can-i",
            "list",
            "deployments.apps",
            "--all-namespaces",
        ],
        dry_run: false,
    },
    Case {
        args: &["auth", "can-i", "get", "/logs"],
        dry_run: false,
    },
    Case {
        args: &["auth", "whoami"],
        dry_run: false,
    },
];

/// The POST of a command, with its content type.
fn capture(minor: u32, server: &Server, args: &[&str]) -> Captured {
    server.take();
    let (ok, stdout, stderr) = run(minor, server, args);
    let mut posts: Vec<Captured> = server
        .take()
        .into_iter()
        .filter(|c| c.method == "POST")
        .collect();
    assert!(
        posts.len() == 1,
        "kubectl 1.{minor} {args:?}: expected one POST, got {} (ok={ok})\n{stdout}\n{stderr}",
        posts.len()
    );
    posts.remove(0)
}

fn is_protobuf(c: &Captured) -> bool {
    c.content_type == "application/vnd.kubernetes.protobuf"
}

#[test]
fn kubectl_protobuf_bodies_decode_to_kubectls_json() {
    let server = Server::start();
    let mut report = Vec::new();
    for case in CASES {
        // What each version sends.
        let mut json_body: Option<Value> = None;
        for minor in 27..=33 {
            let c = capture(minor, &server, case.args);
            assert_eq!(
                is_protobuf(&c),
                minor >= 32,
                "kubectl 1.{minor} {:?} sent {} to {}",
                case.args,
                c.content_type,
                c.path
            );
            if !is_protobuf(&c) {
                assert!(!kubeproto::is_envelope(&c.body));
                if minor == 31 {
                    json_body = Some(serde_json::from_slice(&c.body).unwrap_or_else(|e| {
                        panic!(
                            "kubectl 1.31 {:?}: body is not JSON ({e}): {:?}",
                            case.args,
                            String::from_utf8_lossy(&c.body)
                        )
                    }));
                }
                continue;
            }
            assert!(kubeproto::is_envelope(&c.body));
            let decoded = kubeproto::decode(&c.body).unwrap_or_else(|e| {
                panic!("kubectl 1.{minor} {:?}: decode failed: {e}", case.args)
            });
            let expected: Value = if case.dry_run {
                let mut args = case.args.to_vec();
                let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
                args.splice(at..at, ["--dry-run=client", "-o", "json"]);
                let (ok, stdout, stderr) = run(minor, &server, &args);
                assert!(ok, "{args:?}: {stderr}");
                serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{args:?}: {e}: {stdout}"))
            } else {
                json_body.clone().expect("kubectl 1.31's JSON body")
            };
            assert_eq!(
                decoded,
                expected,
                "kubectl 1.{minor} {:?}\ndecoded:  {}\nexpected: {}",
                case.args,
                serde_json::to_string(&decoded).unwrap(),
                serde_json::to_string(&expected).unwrap()
            );
            if minor == 33 {
                report.push(format!("{} {:?}", c.path, case.args));
            }
        }
    }
    eprintln!("decoded protobuf bodies:\n{}", report.join("\n"));
}
