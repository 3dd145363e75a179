//! The real kubectl (1.27 to 1.33, as installed beside `kubectl` on PATH) against a tiny
//! plain-HTTP server that serves discovery from the catalog and the OpenAPI documents of
//! `api::openapi`: `explain` (OpenAPI v3, and v2 protobuf with `plaintext-openapiv2`),
//! `--recursive`, `--api-version`, and a client-side dry-run `create` (which makes kubectl
//! ≤ 1.28 parse the whole v2 document and every version check the server's field
//! validation support in v3).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

use api::catalog::{self, ResourceInfo};
use api::openapi::{self, OpenApiDocs};
use api::schema::{CustomResourceVersion, Schemas};
use serde_json::{Value, json};

struct Server {
    port: u16,
    stop: Arc<AtomicBool>,
    shared: Arc<Shared>,
}

/// What the test server holds: the documents, and a minimal object store for `apply`.
struct Shared {
    docs: OpenApiDocs,
    resources: Vec<ResourceInfo>,
    /// `METHOD path` of every request so far.
    log: Mutex<Vec<String>>,
    /// Objects by URL path.
    objects: Mutex<BTreeMap<String, Value>>,
    /// `(content type, query, body)` of every PATCH.
    patches: Mutex<Vec<(String, String, Value)>>,
}

impl Server {
    fn requested(&self, prefix: &str) -> bool {
        self.shared.log.lock().unwrap().iter().any(|p| {
            p.split_once(' ')
                .is_some_and(|(_, path)| path.starts_with(prefix))
        })
    }

    fn clear(&self) {
        self.shared.log.lock().unwrap().clear();
    }

    fn patches(&self) -> Vec<(String, String, Value)> {
        self.shared.patches.lock().unwrap().clone()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
    }
}

struct Reply {
    status: u16,
    content_type: &'static str,
    body: Vec<u8>,
}

fn json_reply(v: &Value) -> Reply {
    Reply {
        status: 200,
        content_type: "application/json",
        body: serde_json::to_vec(v).unwrap(),
    }
}

fn not_found(path: &str) -> Reply {
    Reply {
        status: 404,
        content_type: "application/json",
        body: serde_json::to_vec(&json!({
            "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": format!("the server could not find the requested resource ({path})"),
            "reason": "NotFound", "details": {}, "code": 404
        }))
        .unwrap(),
    }
}

fn resource_list(resources: &[ResourceInfo], group: &str, version: &str) -> Value {
    let mut list = Vec::new();
    for r in resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
    {
        list.push(json!({
            "name": r.plural, "singularName": r.singular, "namespaced": r.namespaced,
            "kind": r.kind, "verbs": r.verbs, "shortNames": r.short_names,
            "categories": r.categories,
        }));
        for s in &r.subresources {
            let mut entry = json!({
                "name": format!("{}/{}", r.plural, s.name), "singularName": "",
                "namespaced": r.namespaced, "kind": s.kind, "verbs": s.verbs,
            });
            if s.group != r.group || s.version != r.version {
                entry["group"] = json!(s.group);
                entry["version"] = json!(s.version);
            }
            list.push(entry);
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": list})
}

fn route(
    docs: &OpenApiDocs,
    resources: &[ResourceInfo],
    path: &str,
    accept: Option<&str>,
) -> Reply {
    let (path, _query) = path.split_once('?').unwrap_or((path, ""));
    let path = path.trim_end_matches('/');
    match path {
        "/version" => json_reply(&json!({
            "major": "1", "minor": "33", "gitVersion": "v1.33.0", "gitCommit": "",
            "gitTreeState": "clean", "buildDate": "2025-01-01T00:00:00Z", "goVersion": "go1.24",
            "compiler": "gc", "platform": "linux/amd64"
        })),
        "/api" => json_reply(&json!({
            "kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]
        })),
        "/apis" => {
            let mut groups: Vec<(String, Vec<String>)> = Vec::new();
            for r in resources.iter().filter(|r| !r.group.is_empty()) {
                match groups.iter_mut().find(|(g, _)| *g == r.group) {
                    Some((_, versions)) if !versions.contains(&r.version) => {
                        versions.push(r.version.clone())
                    }
                    Some(_) => {}
                    None => groups.push((r.group.clone(), vec![r.version.clone()])),
                }
            }
            let groups: Vec<Value> = groups
                .into_iter()
                .map(|(g, versions)| {
                    let vs: Vec<Value> = versions
                        .iter()
                        .map(|v| json!({"groupVersion": format!("{g}/{v}"), "version": v}))
                        .collect();
                    json!({"name": g, "versions": vs.clone(), "preferredVersion": vs[0]})
                })
                .collect();
            json_reply(&json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}))
        }
        "/api/v1" => json_reply(&resource_list(resources, "", "v1")),
        "/openapi/v2" => match openapi::negotiate_v2(accept) {
            Some((encoding, content_type)) => Reply {
                status: 200,
                content_type,
                body: docs.v2(encoding).body.to_vec(),
            },
            None => Reply {
                status: 406,
                content_type: "text/plain",
                body: b"not acceptable".to_vec(),
            },
        },
        "/openapi/v3" => Reply {
            status: 200,
            content_type: "application/json",
            body: docs.v3_index().body.to_vec(),
        },
        p if p.starts_with("/openapi/v3/") => match docs.v3_group_version(p) {
            Some(doc) => Reply {
                status: 200,
                content_type: "application/json",
                body: doc.body.to_vec(),
            },
            None => not_found(p),
        },
        p if p.starts_with("/apis/") => {
            let parts: Vec<&str> = p.trim_start_matches("/apis/").split('/').collect();
            match parts.as_slice() {
                [g, v] if resources.iter().any(|r| r.group == *g && r.version == *v) => {
                    json_reply(&resource_list(resources, g, v))
                }
                _ => not_found(p),
            }
        }
        p => not_found(p),
    }
}

/// Writes: create (POST to a collection), patch (recorded; answers with the stored object).
fn write(shared: &Shared, method: &str, path: &str, content_type: &str, body: &[u8]) -> Reply {
    let (path, query) = path.split_once('?').unwrap_or((path, ""));
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let mut objects = shared.objects.lock().unwrap();
    match method {
        "POST" => {
            let mut obj = parsed;
            let name = obj["metadata"]["name"]
                .as_str()
                .unwrap_or("unnamed")
                .to_string();
            obj["metadata"]["resourceVersion"] = json!("1");
            obj["metadata"]["uid"] = json!("00000000-0000-0000-0000-000000000001");
            obj["metadata"]["creationTimestamp"] = json!("2025-01-01T00:00:00Z");
            objects.insert(format!("{path}/{name}"), obj.clone());
            Reply {
                status: 201,
                content_type: "application/json",
                body: serde_json::to_vec(&obj).unwrap(),
            }
        }
        "PATCH" => {
            shared.patches.lock().unwrap().push((
                content_type.to_string(),
                query.to_string(),
                parsed,
            ));
            match objects.get(path) {
                Some(obj) => json_reply(obj),
                None => not_found(path),
            }
        }
        _ => not_found(path),
    }
}

fn handle(mut stream: TcpStream, shared: &Shared) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line).unwrap_or(0) == 0 {
            return;
        }
        let mut accept = None;
        let mut content_type = String::new();
        let mut content_length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((k, v)) = line.split_once(':') {
                match k.trim().to_ascii_lowercase().as_str() {
                    "accept" => accept = Some(v.trim().to_string()),
                    "content-type" => content_type = v.trim().to_string(),
                    "content-length" => content_length = v.trim().parse().unwrap_or(0),
                    _ => {}
                }
            }
        }
        let mut body = vec![0u8; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let mut parts = request_line.split_whitespace();
        let method = parts.next().unwrap_or_default();
        let path = parts.next().unwrap_or_default();
        shared.log.lock().unwrap().push(format!("{method} {path}"));
        let reply = if method == "GET" {
            let bare = path.split_once('?').map_or(path, |(p, _)| p);
            let stored = shared.objects.lock().unwrap().get(bare).cloned();
            match stored {
                Some(obj) => json_reply(&obj),
                None => route(&shared.docs, &shared.resources, path, accept.as_deref()),
            }
        } else {
            write(shared, method, path, &content_type, &body)
        };
        let head = format!(
            "HTTP/1.1 {} X\r\nContent-Type: {}\r\nContent-Length: {}\r\n\r\n",
            reply.status,
            reply.content_type,
            reply.body.len()
        );
        if stream.write_all(head.as_bytes()).is_err() || stream.write_all(&reply.body).is_err() {
            return;
        }
    }
}

fn serve() -> Server {
    serve_with(catalog::builtin(), OpenApiDocs::builtin())
}

fn serve_with(resources: Vec<ResourceInfo>, docs: OpenApiDocs) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let stop = Arc::new(AtomicBool::new(false));
    let shared = Arc::new(Shared {
        docs,
        resources,
        log: Mutex::new(Vec::new()),
        objects: Mutex::new(BTreeMap::new()),
        patches: Mutex::new(Vec::new()),
    });
    let stopped = stop.clone();
    let state = shared.clone();
    thread::spawn(move || {
        for stream in listener.incoming() {
            if stopped.load(Ordering::SeqCst) {
                return;
            }
            let Ok(stream) = stream else { continue };
            let state = state.clone();
            thread::spawn(move || handle(stream, &state));
        }
    });
    Server { port, stop, shared }
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

struct Kubectl {
    bin: PathBuf,
    server: String,
    home: tempfile::TempDir,
}

impl Kubectl {
    fn new(minor: u32, server: &Server) -> Kubectl {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("kubeconfig"),
            "apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n",
        )
        .unwrap();
        Kubectl {
            bin: kubectl(minor),
            server: format!("http://127.0.0.1:{}", server.port),
            home,
        }
    }

    fn run(&self, args: &[&str]) -> String {
        let (code, stdout, stderr) = self.run_status(args);
        assert!(
            code == 0,
            "{} {args:?} failed: {stderr}\n{stdout}",
            self.bin.display()
        );
        stdout
    }

    /// Exit code, stdout, stderr.
    fn run_status(&self, args: &[&str]) -> (i32, String, String) {
        let out = Command::new(&self.bin)
            .env("HOME", self.home.path())
            .env_remove("KUBECONFIG")
            .arg("--kubeconfig")
            .arg(self.home.path().join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.home.path().join("cache"))
            .arg("--server")
            .arg(&self.server)
            .args(args)
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        (out.status.code().unwrap_or(-1), stdout, stderr)
    }

    fn file(&self, name: &str, content: &str) -> PathBuf {
        let p: &Path = self.home.path();
        let path = p.join(name);
        std::fs::write(&path, content).unwrap();
        path
    }
}

fn check_strategy_explain(out: &str) {
    assert!(out.contains("KIND:"), "{out}");
    assert!(out.contains("Deployment"), "{out}");
    assert!(out.contains("strategy"), "{out}");
    assert!(
        out.contains("The deployment strategy to use to replace existing pods with new"),
        "{out}"
    );
    assert!(out.contains("rollingUpdate"), "{out}");
    assert!(out.contains("Rolling update config params"), "{out}");
}

const DEPLOYMENT: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  strategy:
    type: RollingUpdate
    rollingUpdate: {maxSurge: 1, maxUnavailable: 25%}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: web
        image: nginx
        ports:
        - containerPort: 80
        resources:
          limits: {cpu: 500m, memory: 128Mi}
";

#[test]
fn explain_with_every_kubectl() {
    let server = serve();
    for minor in 27..=33 {
        let k = Kubectl::new(minor, &server);
        let out = k.run(&["explain", "deployment.spec.strategy"]);
        check_strategy_explain(&out);
        assert!(out.contains("GROUP:      apps"), "{out}");
        assert!(out.contains("VERSION:    v1"), "{out}");

        let out = k.run(&["explain", "deployments.spec.strategy", "--recursive"]);
        assert!(out.contains("maxSurge"), "{out}");
        assert!(out.contains("maxUnavailable"), "{out}");

        let out = k.run(&["explain", "deploy.spec.strategy", "--api-version=apps/v1"]);
        check_strategy_explain(&out);

        let out = k.run(&["explain", "pods.spec.containers.resources"]);
        assert!(out.contains("limits"), "{out}");

        let out = k.run(&["explain", "events", "--api-version=events.k8s.io/v1"]);
        assert!(out.contains("events.k8s.io"), "{out}");
    }
}

#[test]
fn explain_from_openapi_v2_protobuf() {
    let server = serve();
    for minor in [27, 33] {
        let k = Kubectl::new(minor, &server);
        let out = k.run(&[
            "explain",
            "deployment.spec.strategy",
            "--output=plaintext-openapiv2",
        ]);
        check_strategy_explain(&out);
        let out = k.run(&[
            "explain",
            "deployment.spec.template.spec.containers",
            "--output=plaintext-openapiv2",
        ]);
        assert!(out.contains("imagePullPolicy"), "{out}");
    }
}

#[test]
fn validated_client_dry_run_create() {
    let server = serve();
    for minor in [27, 33] {
        let k = Kubectl::new(minor, &server);
        let file = k.file("deploy.yaml", DEPLOYMENT);
        let file = file.to_str().unwrap();
        for validate in ["strict", "warn", "ignore"] {
            let out = k.run(&[
                "create",
                "--dry-run=client",
                &format!("--validate={validate}"),
                "-o",
                "name",
                "-f",
                file,
            ]);
            assert_eq!(out.trim(), "deployment.apps/web", "{validate}");
        }
    }
}

/// kubectl trusts the server to validate (it finds `fieldValidation` on the PATCH operation
/// of the kind in OpenAPI v3), so it does not reject an unknown field itself; 1.33 does not
/// even fetch OpenAPI v2 for it.
#[test]
fn server_side_field_validation_is_detected() {
    let server = serve();
    let with_unknown = DEPLOYMENT.replace("  replicas: 2\n", "  replicas: 2\n  replicaz: 3\n");
    for minor in [27, 33] {
        let k = Kubectl::new(minor, &server);
        let file = k.file("deploy.yaml", &with_unknown);
        server.clear();
        let out = k.run(&[
            "create",
            "--dry-run=client",
            "--validate=strict",
            "-o",
            "name",
            "-f",
            file.to_str().unwrap(),
        ]);
        assert_eq!(out.trim(), "deployment.apps/web");
        assert!(server.requested("/openapi/v3/apis/apps/v1"), "{minor}");
        if minor >= 29 {
            assert!(!server.requested("/openapi/v2"), "{minor} fell back to v2");
        }
    }
}

/// `kubectl apply` computes a strategic merge patch from the published schemas (v2 in
/// 1.27/1.28, v3 since 1.29) without falling back; `kubectl diff` sends it as a dry run.
#[test]
fn apply_and_diff_patch_from_openapi() {
    let merge_key_published = api::schema::extensions::FIELD_EXTENSIONS.iter().any(|e| {
        e.definition == "io.k8s.api.core.v1.PodSpec"
            && e.field == "containers"
            && e.patch_merge_key == Some("name")
    });
    for minor in [27, 28, 29, 33] {
        let server = serve();
        let k = Kubectl::new(minor, &server);
        let file = k.file("deploy.yaml", DEPLOYMENT);
        let file = file.to_str().unwrap();
        let out = k.run(&["apply", "-f", file]);
        assert!(
            out.contains("deployment.apps/web created"),
            "{minor}: {out}"
        );

        let changed = k.file(
            "deploy2.yaml",
            &DEPLOYMENT.replace("image: nginx", "image: nginx:1.27"),
        );
        let changed = changed.to_str().unwrap();
        server.clear();
        let (code, out, err) = k.run_status(&["apply", "-f", changed]);
        assert_eq!(code, 0, "{minor}: {err}{out}");
        assert!(!err.contains("warning"), "{minor}: {err}");
        if minor >= 29 {
            assert!(!server.requested("/openapi/v2"), "{minor} fell back to v2");
        }
        let patches = server.patches();
        let (content_type, _, patch) = patches.last().unwrap();
        assert_eq!(
            content_type, "application/strategic-merge-patch+json",
            "{minor}"
        );
        let spec = &patch["spec"]["template"]["spec"];
        assert_eq!(
            spec["containers"][0]["image"], "nginx:1.27",
            "{minor}: {patch}"
        );
        if merge_key_published {
            assert_eq!(
                spec["$setElementOrder/containers"],
                json!([{"name": "web"}]),
                "{minor}: {patch}"
            );
        }

        let (code, out, err) = k.run_status(&["diff", "-f", changed]);
        assert!(code == 0 || code == 1, "{minor}: {code} {err}{out}");
        assert!(!err.contains("warning"), "{minor}: {err}");
        let patches = server.patches();
        let (content_type, query, _) = patches.last().unwrap();
        assert_eq!(
            content_type, "application/strategic-merge-patch+json",
            "{minor}"
        );
        assert!(query.contains("dryRun=All"), "{minor}: {query}");
    }
}

const CRONTAB_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "crontabs.stable.example.com"},
  "spec": {
    "group": "stable.example.com",
    "scope": "Namespaced",
    "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList", "shortNames": ["ct"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "description": "CronTab runs a command on a schedule.",
        "properties": {
          "spec": {
            "type": "object",
            "description": "What to run and when.",
            "properties": {
              "cronSpec": {"type": "string", "description": "The schedule, in cron format."},
              "image": {"type": "string", "description": "The image to run."},
              "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
              "port": {"x-kubernetes-int-or-string": true, "description": "A port, by number or name."},
              "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
              "note": {"type": "string", "nullable": true}
            }
          },
          "status": {"type": "object", "properties": {"lastRun": {"type": "string", "format": "date-time"}}}
        }
      }}
    }]
  }
}"#;

/// A custom resource's schema is published in v3 and v2: `explain` (both) and a validated
/// create work against it.
#[test]
fn custom_resources_with_kubectl() {
    let crd: Value = serde_json::from_str(CRONTAB_CRD).unwrap();
    let versions = CustomResourceVersion::from_crd(&crd);
    let schemas = Arc::new(Schemas::with_custom_resources(&versions));
    let mut resources = catalog::builtin();
    resources.push(ResourceInfo {
        group: "stable.example.com".into(),
        version: "v1".into(),
        kind: "CronTab".into(),
        plural: "crontabs".into(),
        singular: "crontab".into(),
        namespaced: true,
        short_names: vec!["ct".into()],
        categories: vec![],
        verbs: catalog::STANDARD_VERBS
            .iter()
            .map(|v| v.to_string())
            .collect(),
        subresources: vec![catalog::SubresourceInfo {
            name: "status".into(),
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "CronTab".into(),
            verbs: vec!["get".into(), "patch".into(), "update".into()],
        }],
        storage_prefix: "/registry/stable.example.com/crontabs".into(),
        storage_version: "v1".into(),
    });
    let server = serve_with(resources.clone(), OpenApiDocs::new(resources, schemas));
    for minor in [27, 33] {
        let k = Kubectl::new(minor, &server);
        let out = k.run(&["explain", "crontabs.spec"]);
        assert!(out.contains("What to run and when."), "{minor}: {out}");
        assert!(out.contains("cronSpec"), "{minor}: {out}");
        assert!(
            out.contains("The schedule, in cron format."),
            "{minor}: {out}"
        );
        let out = k.run(&["explain", "ct", "--recursive"]);
        assert!(
            out.contains("CronTab runs a command on a schedule."),
            "{minor}: {out}"
        );
        assert!(out.contains("lastRun"), "{minor}: {out}");
        let out = k.run(&["explain", "crontabs.spec", "--output=plaintext-openapiv2"]);
        assert!(
            out.contains("The schedule, in cron format."),
            "{minor}: {out}"
        );

        let file = k.file(
            "ct.yaml",
            "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: c1\n  namespace: default\nspec:\n  cronSpec: '* * * * */5'\n  port: http\n  unknownField: 1\n",
        );
        let out = k.run(&[
            "create",
            "--dry-run=client",
            "--validate=strict",
            "-o",
            "name",
            "-f",
            file.to_str().unwrap(),
        ]);
        assert_eq!(out.trim(), "crontab.stable.example.com/c1", "{minor}");
    }
}
