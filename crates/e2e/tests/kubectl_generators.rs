//! `rkube kubectl`'s client stages "client-side validation" and "generators", judged by
//! the real kubectl 1.33: every generator's `--dry-run=client -o json` object equals
//! kubectl's, the operation lines and server errors read the same, validation failures
//! give kubectl's message and exit code and send nothing (checked on a recording HTTPS
//! server), and a real `create deployment --replicas=3` runs on simulated nodes.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;
use std::sync::Arc;

use serde_json::{Value, json};
use testkit::https::HttpsServer;
use testkit::{RkubeServer, SimNodes, TestCa};

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Every JSON document of a stream (`run --expose -o json` prints two).
fn json_docs(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .map(|d| d.unwrap_or_else(|e| panic!("bad JSON ({e}): {}", text(out))))
        .collect()
}

/// The `last-applied-configuration` annotation parsed (its key order is Go's struct
/// order in kubectl's, sorted in ours).
fn normalise(mut v: Value) -> Value {
    const KEY: &str = "kubectl.kubernetes.io/last-applied-configuration";
    if let Some(a) = v
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
        && let Some(Value::String(s)) = a.get(KEY).cloned()
    {
        let parsed: Value = serde_json::from_str(&s).unwrap();
        a.insert(KEY.into(), parsed);
    }
    v
}

fn assert_same_status(args: &[&str], real: &Output, ours: &Output) {
    assert_eq!(
        real.status.code(),
        ours.status.code(),
        "exit codes differ for {args:?}\nkubectl stderr: {}\nours stderr: {}",
        text(&real.stderr),
        text(&ours.stderr)
    );
}

/// Runs `args` with both and compares the objects printed.
fn same_objects(server: &RkubeServer, args: &[&str]) {
    let (real, ours) = server.both(args);
    assert_same_status(args, &real, &ours);
    assert!(
        real.status.success(),
        "kubectl {args:?}: {}",
        text(&real.stderr)
    );
    let a: Vec<Value> = json_docs(&real.stdout).into_iter().map(normalise).collect();
    let b: Vec<Value> = json_docs(&ours.stdout).into_iter().map(normalise).collect();
    assert_eq!(
        a,
        b,
        "objects differ for {args:?}\nkubectl: {}\nours: {}",
        text(&real.stdout),
        text(&ours.stdout)
    );
}

/// Runs `args` with both and compares stdout, stderr and exit codes exactly.
fn same_output(server: &RkubeServer, args: &[&str]) {
    let (real, ours) = server.both(args);
    assert_same_status(args, &real, &ours);
    assert_eq!(text(&real.stdout), text(&ours.stdout), "stdout of {args:?}");
    assert_eq!(text(&real.stderr), text(&ours.stderr), "stderr of {args:?}");
}

#[test]
fn generators_match_kubectl_dry_run_client() {
    let server = RkubeServer::start();
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("config.txt");
    std::fs::write(&f, "hello\n").unwrap();
    let env = dir.path().join("vars.env");
    std::fs::write(&env, "# comment\nA=1\nB=two=2\n").unwrap();
    let from_file = format!("--from-file={}", f.display());
    let from_key_file = format!("--from-file=key={}", f.display());
    let from_env = format!("--from-env-file={}", env.display());
    let mut cases: Vec<Vec<&str>> = vec![
        vec!["run", "nginx", "--image=nginx"],
        vec![
            "run",
            "nginx",
            "--image=nginx",
            "--restart=Never",
            "--port=80",
            "--env=A=b",
            "--env=EMPTY=",
            "--labels=a=b,c=d",
            "--annotations=x=y",
            "--privileged",
            "--image-pull-policy=Always",
            "--command",
            "--",
            "sh",
            "-c",
            "sleep 1",
        ],
        vec![
            "run",
            "job-like",
            "--image=busybox",
            "--restart=OnFailure",
            "--",
            "arg1",
            "arg2",
        ],
        vec!["run", "web", "--image=nginx:1.27", "--port=80", "--expose"],
        vec![
            "run",
            "web",
            "--image=nginx",
            "--port=80",
            "--expose",
            "--labels=tier=web",
        ],
        vec![
            "run",
            "ov",
            "--image=nginx",
            r#"--overrides={"spec":{"nodeName":"n1"}}"#,
        ],
        vec!["run", "nginx", "--image=nginx", "--save-config"],
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
        vec![
            "create",
            "deployment",
            "web",
            "--image=nginx:1.27",
            "--image=busybox",
            "--port=8080",
        ],
        vec![
            "create",
            "deploy",
            "cmd",
            "--image=busybox",
            "--",
            "sleep",
            "10",
        ],
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--save-config",
        ],
        vec!["create", "job", "j", "--image=busybox", "--", "sleep", "1"],
        vec![
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/1 * * * *",
            "--restart=Never",
            "--",
            "date",
        ],
        vec![
            "create",
            "cj",
            "cj2",
            "--image=busybox",
            "--schedule=@hourly",
        ],
        vec![
            "create",
            "configmap",
            "cm",
            "--from-literal=a=b",
            "--from-literal=c=d=e",
        ],
        vec!["create", "configmap", "cm", &from_file, &from_key_file],
        vec!["create", "cm", "cm", &from_env],
        vec![
            "create",
            "configmap",
            "cm",
            "--from-literal=a=b",
            "--append-hash",
        ],
        vec![
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=a=b",
            "--type=Opaque",
        ],
        vec![
            "create",
            "secret",
            "generic",
            "s",
            "--from-literal=a=b",
            "--append-hash",
        ],
        vec!["create", "secret", "generic", "s", &from_file],
        vec![
            "create",
            "secret",
            "docker-registry",
            "d",
            "--docker-server=r.io",
            "--docker-username=u",
            "--docker-password=p",
            "--docker-email=e",
        ],
        vec![
            "create",
            "secret",
            "docker-registry",
            "d2",
            "--docker-username=u",
            "--docker-password=p",
        ],
        vec![
            "create",
            "service",
            "clusterip",
            "svc",
            "--tcp=80:8080",
            "--tcp=443:https",
        ],
        vec![
            "create",
            "service",
            "clusterip",
            "headless",
            "--clusterip=None",
        ],
        vec![
            "create",
            "service",
            "nodeport",
            "np",
            "--tcp=80:8080",
            "--node-port=30080",
        ],
        vec!["create", "service", "loadbalancer", "lb", "--tcp=80"],
        vec![
            "create",
            "service",
            "externalname",
            "en",
            "--external-name=example.com",
        ],
        vec!["create", "namespace", "ns1"],
        vec!["create", "serviceaccount", "sa1"],
        vec![
            "create",
            "role",
            "r",
            "--verb=get,list",
            "--verb=get",
            "--resource=pods,deployments.apps,pods/log,rs",
            "--resource-name=a",
        ],
        vec![
            "create",
            "clusterrole",
            "cr",
            "--verb=get",
            "--non-resource-url=/logs/*",
        ],
        vec!["create", "clusterrole", "cr3", "--verb=*", "--resource=*"],
        vec!["create", "clusterrole", "cr2", "--aggregation-rule=a=b"],
        vec![
            "create",
            "rolebinding",
            "rb",
            "--role=r",
            "--user=u",
            "--group=g",
            "--serviceaccount=default:sa",
        ],
        vec![
            "create",
            "rolebinding",
            "rb2",
            "--clusterrole=view",
            "--user=u",
        ],
        vec![
            "create",
            "clusterrolebinding",
            "crb",
            "--clusterrole=cr",
            "--user=u",
        ],
        vec![
            "create",
            "quota",
            "q",
            "--hard=cpu=1000m,pods=2,memory=1Gi",
            "--scopes=BestEffort",
        ],
        vec![
            "create",
            "priorityclass",
            "pc",
            "--value=1000",
            "--description=d",
            "--global-default",
            "--preemption-policy=Never",
        ],
        vec!["create", "priorityclass", "pc2"],
        vec![
            "create",
            "pdb",
            "p",
            "--selector=app=x",
            "--min-available=1",
        ],
        vec![
            "create",
            "poddisruptionbudget",
            "p2",
            "--selector=app in (a,b),x=y",
            "--max-unavailable=10%",
        ],
        vec![
            "create",
            "deployment",
            "nsd",
            "--image=nginx",
            "-n",
            "kube-public",
        ],
        vec!["run", "nsp", "--image=nginx", "-n", "kube-public"],
    ];
    // Ingresses: rules, TLS per secret, default backends; the override types of `run`.
    cases.extend([
        vec![
            "run",
            "ov2",
            "--image=nginx",
            "--override-type=strategic",
            r#"--overrides={"spec":{"containers":[{"name":"ov2","stdin":true}]}}"#,
        ],
        vec![
            "run",
            "ov3",
            "--image=nginx",
            "--override-type=json",
            r#"--overrides=[{"op":"add","path":"/spec/hostNetwork","value":true}]"#,
        ],
        vec![
            "create",
            "ingress",
            "ing",
            "--rule=foo.com/bar=svc:80,tls=sec",
            "--class=c",
            "--annotation=a=b",
            "--default-backend=def:http",
        ],
        vec!["create", "ingress", "simple", "--rule=/path*=svc:8080"],
        vec![
            "create",
            "ing",
            "multi",
            "--rule=a.com/=s1:80,tls",
            "--rule=b.com/x=s2:80,tls=s",
            "--rule=a.com/y=s3:81",
            "--rule=c.com/z=s4:82,tls=s",
        ],
    ]);
    for case in &cases {
        let mut args: Vec<&str> = case.clone();
        // Put the output flags before any `--`.
        let at = args.iter().position(|a| *a == "--").unwrap_or(args.len());
        args.splice(at..at, ["--dry-run=client", "-o", "json"]);
        same_objects(&server, &args);
    }

    // The operation lines, YAML and names print as kubectl prints them.
    for args in [
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--dry-run=client",
        ],
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--dry-run=server",
        ],
        vec!["run", "nginx", "--image=nginx", "--dry-run=client"],
        vec![
            "run",
            "nginx",
            "--image=nginx",
            "--port=80",
            "--expose",
            "--dry-run=client",
        ],
        vec![
            "run",
            "nginx",
            "--image=nginx",
            "--port=80",
            "--expose",
            "--dry-run=client",
            "-o",
            "name",
        ],
        vec!["create", "ns", "x", "--dry-run=client", "-o", "name"],
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec![
            "create",
            "configmap",
            "cm",
            "--from-literal=a=b",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
        vec![
            "run",
            "nginx",
            "--image=nginx",
            "--port=80",
            "--expose",
            "--dry-run=client",
            "-o",
            "yaml",
        ],
    ] {
        same_output(&server, &args);
    }

    // expose: the Service from each kind of object, with kubectl's introspection.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "deployment",
            "web",
            "--image=nginx",
            "--port=8080",
        ],
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "run",
            "pod1",
            "--image=nginx",
            "--port=80",
            "--labels=app=p,tier=x",
        ],
    );
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "service",
            "clusterip",
            "svc1",
            "--tcp=80:8080",
            "--tcp=53:53",
        ],
    );
    for args in [
        vec![
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--target-port=8080",
        ],
        vec!["expose", "deployment/web"],
        vec![
            "expose",
            "deploy",
            "web",
            "--name=other",
            "--type=NodePort",
            "--labels=x=y",
        ],
        vec!["expose", "pod", "pod1", "--protocol=UDP"],
        vec![
            "expose",
            "pod",
            "pod1",
            "--port=81",
            "--session-affinity=ClientIP",
            "--cluster-ip=None",
        ],
        vec!["expose", "service", "svc1", "--name=svc2"],
    ] {
        let mut a = args.clone();
        a.extend(["--dry-run=client", "-o", "json"]);
        same_objects(&server, &a);
    }
    same_output(
        &server,
        &[
            "expose",
            "deployment",
            "web",
            "--port=80",
            "--dry-run=client",
        ],
    );
    same_output(&server, &["expose", "deployment", "nothere", "--port=80"]);
    // `expose -f`: the object as written in the file (not fetched).
    let manifest = dir.path().join("rs.json");
    std::fs::write(
        &manifest,
        json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
               "metadata": {"name": "from-file", "labels": {"tier": "f"}},
               "spec": {"selector": {"matchLabels": {"tier": "f"}},
                        "template": {"metadata": {"labels": {"tier": "f"}},
                                     "spec": {"containers": [{"name": "c", "image": "nginx",
                                              "ports": [{"containerPort": 9090}]}]}}}})
        .to_string(),
    )
    .unwrap();
    let file_arg = manifest.display().to_string();
    same_objects(
        &server,
        &["expose", "-f", &file_arg, "--dry-run=client", "-o", "json"],
    );
    same_output(
        &server,
        &["expose", "configmap", "kube-root-ca.crt", "--port=80"],
    );
}

#[test]
fn creates_match_kubectl_on_a_real_server() {
    let server = RkubeServer::start();
    for ns in ["ours", "theirs"] {
        server.kubectl_ok(Some("1.33"), &["create", "namespace", ns]);
    }
    // The same commands in two namespaces: the same messages, the same objects.
    let scenarios: Vec<Vec<&str>> = vec![
        vec![
            "create",
            "deployment",
            "nginx",
            "--image=nginx",
            "--replicas=3",
        ],
        vec!["create", "deployment", "nginx", "--image=nginx"],
        vec!["create", "configmap", "cm", "--from-literal=a=b"],
        vec!["create", "configmap", "cm", "--from-literal=a=b"],
        vec!["create", "secret", "generic", "s", "--from-literal=a=b"],
        vec!["create", "service", "clusterip", "svc", "--tcp=80:8080"],
        vec!["create", "serviceaccount", "sa1"],
        vec!["create", "role", "r", "--verb=get", "--resource=pods"],
        vec!["create", "role", "r", "--verb=get", "--resource=pods"],
        vec!["create", "rolebinding", "rb", "--role=r", "--user=u"],
        vec!["create", "job", "j", "--image=busybox", "--", "true"],
        vec![
            "create",
            "cronjob",
            "cj",
            "--image=busybox",
            "--schedule=*/5 * * * *",
        ],
        vec!["create", "job", "from-cj", "--from=cronjob/cj"],
        vec![
            "create",
            "cronjob",
            "bad",
            "--image=busybox",
            "--schedule=bad",
        ],
        vec![
            "create",
            "deployment",
            "neg",
            "--image=nginx",
            "--replicas=-1",
        ],
        vec!["create", "deployment", "Upper", "--image=nginx"],
        vec!["create", "quota", "q", "--hard=pods=10"],
        vec![
            "create",
            "pdb",
            "p",
            "--selector=app=x",
            "--min-available=1",
        ],
        vec!["run", "web", "--image=nginx", "--port=80", "--expose"],
        vec!["run", "web", "--image=nginx"],
        vec!["run", "Foo", "--image=nginx"],
        vec![
            "run",
            "x",
            "--image=nginx",
            "--labels=A/b/c=d",
            "--dry-run=server",
        ],
        vec!["create", "service", "clusterip", "Bad", "--tcp=80"],
        vec![
            "expose",
            "deployment",
            "nginx",
            "--port=80",
            "--name=nginx-svc",
        ],
        vec![
            "expose",
            "deployment",
            "nginx",
            "--port=80",
            "--name=nginx-svc",
        ],
        vec!["create", "token", "default", "--duration=1.5s"],
    ];
    for s in &scenarios {
        // `-n` before any `--` (after it, it would be the container's command).
        let at = s.iter().position(|a| *a == "--").unwrap_or(s.len());
        let mut real_args: Vec<&str> = s.clone();
        real_args.splice(at..at, ["-n", "theirs"]);
        let mut our_args: Vec<&str> = s.clone();
        our_args.splice(at..at, ["-n", "ours"]);
        let real = server.kubectl_v(Some("1.33"), &real_args);
        let ours = server.rkubectl(&our_args);
        assert_same_status(s, &real, &ours);
        let norm = |o: &Output| {
            text(&o.stderr)
                .replace("\"theirs\"", "\"ours\"")
                .replace("theirs", "ours")
        };
        assert_eq!(text(&real.stdout), text(&ours.stdout), "stdout of {s:?}");
        assert_eq!(norm(&real), text(&ours.stderr), "stderr of {s:?}");
    }
    // The objects are the same, field managers included.
    for (kind, name) in [
        ("deployment", "nginx"),
        ("configmap", "cm"),
        ("service", "svc"),
        ("pod", "web"),
        ("service", "web"),
        ("service", "nginx-svc"),
        ("job", "from-cj"),
        ("role", "r"),
    ] {
        let get = |ns: &str| server.get_json(&[kind, name, "-n", ns]);
        let (a, b) = (get("theirs"), get("ours"));
        let key = if kind == "role" { "rules" } else { "spec" };
        let mut sa = a[key].clone();
        let mut sb = b[key].clone();
        for s in [&mut sa, &mut sb] {
            if let Some(m) = s.as_object_mut() {
                for k in ["clusterIP", "clusterIPs", "selector"] {
                    if kind == "service" && k != "selector" {
                        m.remove(k);
                    }
                }
                if kind == "pod" {
                    // The projected token volume's name is random.
                    m.remove("volumes");
                    for c in m
                        .get_mut("containers")
                        .and_then(Value::as_array_mut)
                        .into_iter()
                        .flatten()
                    {
                        c.as_object_mut().unwrap().remove("volumeMounts");
                    }
                }
                if kind == "job" {
                    m.remove("selector");
                    if let Some(t) = m.get_mut("template").and_then(|t| t.get_mut("metadata")) {
                        t.as_object_mut().unwrap().remove("labels");
                    }
                }
            }
        }
        assert_eq!(sa, sb, "{kind}/{name} differs");
        let managers = |v: &Value| -> Vec<String> {
            v["metadata"]["managedFields"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|m| m["manager"].as_str().unwrap_or_default().to_string())
                .collect()
        };
        assert_eq!(managers(&a), managers(&b), "{kind}/{name} managers");
    }
    // A server dry run sends ?dryRun=All: nothing is stored.
    let out = server.rkubectl(&[
        "create",
        "deployment",
        "dry",
        "--image=nginx",
        "--dry-run=server",
        "-o",
        "json",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let obj: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(
        obj["metadata"]["uid"].is_string(),
        "the server's answer: {obj}"
    );
    assert!(
        !server
            .kubectl(&["get", "deployment", "dry"])
            .status
            .success()
    );
    // `create token` prints the token.
    let out = server.rkubectl(&[
        "create",
        "token",
        "default",
        "--audience=api",
        "--duration=10m",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout).split('.').count(),
        3,
        "a JWT: {}",
        text(&out.stdout)
    );
}

/// A kubeconfig for the recording server.
fn recording_kubeconfig(dir: &std::path::Path, ca: &TestCa, port: u16) -> std::path::PathBuf {
    let path = dir.join("kubeconfig");
    std::fs::write(
        &path,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:{port}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: abc\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            ca.ca_file.display()
        ),
    )
    .unwrap();
    path
}

#[test]
fn validation_failures_send_no_request() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "rec");
    let recorder = HttpsServer::start(
        &ca,
        Arc::new(|_r| {
            (
                500,
                json!({"kind": "Status", "status": "Failure", "message": "no"}),
            )
        }),
    );
    let kubeconfig = recording_kubeconfig(dir.path(), &ca, recorder.port);
    let home = dir.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let tls_dir = dir.path().join("tls");
    std::fs::create_dir_all(&tls_dir).unwrap();
    let cert = tls_dir.join("none.crt");
    let cert_arg = format!("--cert={}", cert.display());
    let cases: Vec<Vec<&str>> = vec![
        vec!["run", "x", "--image=NGINX"],
        vec!["run", "x", "--image=nginx:"],
        vec!["run", "x", "--image=nginx:-bad"],
        vec!["run", "x", "--image=Registry:5000/App"],
        vec!["run", "x", "--image="],
        vec!["run", "x"],
        vec!["run", "--image=nginx"],
        vec!["run", "x", "--image=nginx", "--labels=a"],
        vec!["run", "x", "--image=nginx", "--labels==b"],
        vec!["run", "x", "--image=nginx", "--env=1A=b"],
        vec!["run", "x", "--image=nginx", "--env=A"],
        vec!["run", "x", "--image=nginx", "--annotations=foo"],
        vec!["run", "x", "--image=nginx", "--restart=Sometimes"],
        vec!["run", "x", "--image=nginx", "--image-pull-policy=Foo"],
        vec!["run", "x", "--image=nginx", "--expose"],
        vec!["run", "x", "--image=nginx", "--port=abc"],
        vec!["run", "x", "--image=nginx", "-t"],
        vec!["run", "x", "--image=nginx", "--rm"],
        vec!["run", "x", "--image=nginx", "--dry-run=foo"],
        vec!["create", "deployment", "x"],
        vec!["create", "deployment", "--image=nginx"],
        vec!["create", "deployment", "a", "b", "--image=nginx"],
        vec![
            "create",
            "deployment",
            "a",
            "--image=a",
            "--image=b",
            "--",
            "cmd",
        ],
        vec!["create", "job", "j"],
        vec!["create", "job", "j", "--image=a", "--from=cronjob/x"],
        vec!["create", "cronjob", "c", "--image=a"],
        vec!["create", "cronjob", "c", "--schedule=* * * * *"],
        vec!["create", "configmap", "cm", "--from-literal=a"],
        vec![
            "create",
            "configmap",
            "cm",
            "--from-literal=a=1",
            "--from-literal=a=2",
        ],
        vec!["create", "configmap", "cm", "--from-literal=a b=1"],
        vec!["create", "configmap", "cm", "--from-file=/nonexistent/file"],
        vec![
            "create",
            "configmap",
            "cm",
            "--from-env-file=/x",
            "--from-literal=a=b",
        ],
        vec!["create", "secret", "generic", "s", "--from-literal=a b=1"],
        vec!["create", "secret", "docker-registry", "d"],
        vec!["create", "secret", "tls", "t"],
        vec![
            "create",
            "secret",
            "tls",
            "t",
            &cert_arg,
            "--key=/nonexistent",
        ],
        vec!["create", "service", "clusterip", "s"],
        vec!["create", "service", "clusterip", "s", "--tcp=x"],
        vec![
            "create",
            "service",
            "clusterip",
            "s",
            "--clusterip=None",
            "--tcp=80",
            "-o",
            "foo",
        ],
        vec!["create", "service", "externalname", "s"],
        vec![
            "create",
            "service",
            "externalname",
            "s",
            "--external-name=Bad_Name",
        ],
        vec!["create", "rolebinding", "rb"],
        vec![
            "create",
            "rolebinding",
            "rb",
            "--role=r",
            "--serviceaccount=nocolon",
        ],
        vec!["create", "clusterrolebinding", "crb"],
        vec![
            "create",
            "clusterrole",
            "cr",
            "--verb=get",
            "--non-resource-url=logs",
        ],
        vec![
            "create",
            "clusterrole",
            "cr",
            "--verb=watch",
            "--non-resource-url=/logs",
        ],
        vec![
            "create",
            "clusterrole",
            "cr",
            "--aggregation-rule=a=b",
            "--verb=get",
        ],
        vec!["create", "clusterrole", "cr"],
        vec!["create", "role", "r", "--resource=pods"],
        vec!["create", "role", "r", "--verb=get"],
        vec!["create", "pdb", "p"],
        vec!["create", "pdb", "p", "--selector=a=b"],
        vec!["create", "pdb", "p", "--selector=a=b", "--min-available=x"],
        vec![
            "create",
            "pdb",
            "p",
            "--selector=a=b",
            "--min-available=1",
            "--max-unavailable=1",
        ],
        vec!["create", "ingress", "i"],
        vec!["create", "ingress", "i", "--rule=foo.com=svc:80"],
        vec!["create", "ingress", "i", "--default-backend=svc"],
        vec![
            "create",
            "ingress",
            "i",
            "--rule=/=svc:80",
            "--annotation=novalue",
        ],
        vec!["create", "quota", "q", "--hard=cpu"],
        vec!["create", "quota", "q", "--scopes=a,,b"],
        vec!["create", "token", "sa", "--duration=1.5s"],
        vec!["create", "token", "sa", "--bound-object-name=x"],
        vec![
            "create",
            "token",
            "sa",
            "--bound-object-kind=Job",
            "--bound-object-name=x",
        ],
        vec!["create", "token", "sa", "--audience="],
        vec!["create", "deployment", "x", "--image=nginx", "-o", "wide"],
    ];
    let run = |bin: std::process::Command, args: &[&str]| -> Output {
        let mut c = bin;
        c.env("KUBECONFIG", &kubeconfig)
            .env("HOME", &home)
            .env_remove("RUST_LOG")
            .args(args)
            .stdin(std::process::Stdio::null());
        c.output().unwrap()
    };
    for args in &cases {
        let before = recorder.count(|_, _| true);
        let ours = run(
            {
                let mut c = std::process::Command::new(testkit::rkube_binary());
                c.arg("kubectl");
                c
            },
            args,
        );
        assert_eq!(
            recorder.count(|_, _| true),
            before,
            "rkube kubectl {args:?} sent a request (stderr: {})",
            text(&ours.stderr)
        );
        let real = run(
            std::process::Command::new(testkit::kubectl_binary(Some("1.33"))),
            args,
        );
        assert_eq!(
            recorder.count(|_, _| true),
            before,
            "kubectl {args:?} sent a request: the case does not belong here"
        );
        assert_eq!(real.status.code(), Some(1), "kubectl {args:?}");
        assert_eq!(
            ours.status.code(),
            Some(1),
            "ours {args:?}: {}",
            text(&ours.stderr)
        );
        assert_eq!(text(&real.stderr), text(&ours.stderr), "stderr of {args:?}");
        assert!(
            ours.stdout.is_empty(),
            "{args:?} printed {}",
            text(&ours.stdout)
        );
    }
}

#[test]
fn create_deployment_pods_become_running() {
    let server = RkubeServer::start();
    let _sim = SimNodes::start(&server, "gen", &["--count", "3"]);
    let out = server.rkubectl_ok(&[
        "create",
        "deployment",
        "nginx",
        "--image=nginx",
        "--replicas=3",
    ]);
    assert_eq!(out, "deployment.apps/nginx created\n");
    testkit::wait_until("3 ready nginx pods", 45, || {
        server.ready_pods("app=nginx").len() == 3
    });
    let out = server.rkubectl_ok(&["expose", "deployment", "nginx", "--port=80"]);
    assert_eq!(out, "service/nginx exposed\n");
    let svc = server.get_json(&["service", "nginx"]);
    assert_eq!(svc["spec"]["selector"], json!({"app": "nginx"}));
    assert_eq!(svc["spec"]["ports"][0]["port"], 80);
    // The seed's one-liner, as kubectl 1.33 does it: a Pod and its Service.
    let out = server.rkubectl_ok(&["run", "web", "--image=nginx", "--port=80", "--expose"]);
    assert_eq!(out, "service/web created\npod/web created\n");
    testkit::wait_until("the web pod running", 45, || {
        server.ready_pods("run=web").len() == 1
    });
    // The seeds' generators (rkube's `--generator`): by restart policy, Always → a
    // Deployment whose pods run, OnFailure → a Job.
    let out = server.rkubectl_ok(&[
        "run",
        "seed",
        "--image=nginx",
        "--generator=infer",
        "--replicas=2",
    ]);
    assert_eq!(out, "deployment.apps/seed created\n");
    testkit::wait_until("2 ready seed pods", 45, || {
        server.ready_pods("run=seed").len() == 2
    });
    let out = server.rkubectl_ok(&[
        "run",
        "once",
        "--image=busybox",
        "--generator=infer",
        "--restart=OnFailure",
        "--",
        "true",
    ]);
    assert_eq!(out, "job.batch/once created\n");
    let job = server.get_json(&["job", "once"]);
    assert_eq!(
        job["spec"]["template"]["spec"]["restartPolicy"],
        json!("OnFailure")
    );
}
