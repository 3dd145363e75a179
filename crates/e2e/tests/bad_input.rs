//! Bad input over HTTPS against the real `rkube server`: every malformed, mismatched,
//! oversize, misrouted or conflicting request gets upstream's HTTP code and an upstream-
//! shaped `Status` body (`kind: Status`, `apiVersion: v1`, `status: Failure`, `reason`,
//! `code`), and stores nothing.
//!
//! Requests go through `curl` (HTTP/1.1: curl's HTTP/2 reports an error when a server answers
//! before the whole body is sent and then resets the stream with NO_ERROR, which RFC 9113
//! allows and upstream's Go server does too) with the admin client certificate, so that
//! Content-Type and body can be anything.
//!
//! The expected codes are upstream's (k8s.io/apiserver `pkg/endpoints/handlers`): create.go
//! and update.go (decode errors 400 via `transformDecodeError`, namespace mismatch 400 via
//! `rest.EnsureObjectNamespaceMatchesRequestNamespace`), rest.go `limitedReadBody` (413 over
//! 3 MiB), patch.go (415 for a missing or unsupported patch type, 400 for undecodable
//! patches, 422 for a failed json-patch `test`), `ValidateCreateOptions` and friends (422 on
//! the options kind), go-restful (405 for a method with no route), the storage layer (409
//! AlreadyExists / Conflict, 400 for an unparsable list resourceVersion, and a watch ERROR
//! event with 410 Expired for a resourceVersion older than the watch cache).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::io::Write as _;
use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::RkubeServer;

const CM: &str = "/api/v1/namespaces/default/configmaps";

/// A server and a raw HTTPS client for it.
struct Api {
    server: RkubeServer,
    tls: PathBuf,
}

/// A response: the HTTP code and the body.
struct Resp {
    code: u16,
    body: Vec<u8>,
}

impl Resp {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.text()))
    }
}

impl Api {
    fn start() -> Api {
        let server = RkubeServer::start();
        let tls = server.dir.path().join("data").join("tls");
        Api { server, tls }
    }

    fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{path}", self.server.port)
    }

    /// One request. `content_type: None` sends no Content-Type at all.
    fn call(&self, method: &str, path: &str, content_type: Option<&str>, body: &[u8]) -> Resp {
        let dir = tempfile::tempdir_in(self.server.dir.path()).unwrap();
        let out = dir.path().join("out");
        let mut cmd = Command::new("curl");
        cmd.args(["--http1.1", "-sS", "--max-time", "30", "-X", method])
            .arg("--cacert")
            .arg(self.tls.join("server-ca.crt"))
            .arg("--cert")
            .arg(self.tls.join("client-admin.crt"))
            .arg("--key")
            .arg(self.tls.join("client-admin.key"))
            .args(["-H", "Expect:", "-H", "Accept: application/json"])
            .args(["-w", "%{http_code}", "-o"])
            .arg(&out);
        match content_type {
            Some(ct) => cmd.args(["-H", &format!("Content-Type: {ct}")]),
            None => cmd.args(["-H", "Content-Type:"]),
        };
        if !body.is_empty() || matches!(method, "POST" | "PUT" | "PATCH") {
            let file = dir.path().join("body");
            std::fs::File::create(&file)
                .and_then(|mut f| f.write_all(body))
                .unwrap();
            cmd.arg("--data-binary").arg(format!("@{}", file.display()));
        }
        cmd.arg(self.url(path));
        let output = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run curl (apt-get install curl): {e}"));
        let code = String::from_utf8_lossy(&output.stdout)
            .trim()
            .parse::<u16>()
            .unwrap_or(0);
        assert!(
            code != 0,
            "{method} {path}: curl failed: {}\n{}",
            String::from_utf8_lossy(&output.stderr),
            self.server.log_tail()
        );
        Resp {
            code,
            body: std::fs::read(&out).unwrap_or_default(),
        }
    }

    fn get(&self, path: &str) -> Resp {
        self.call("GET", path, None, b"")
    }

    fn post_json(&self, path: &str, body: &Value) -> Resp {
        self.call(
            "POST",
            path,
            Some("application/json"),
            body.to_string().as_bytes(),
        )
    }

    /// Creates an object that must be created.
    fn create(&self, path: &str, body: &Value) -> Value {
        let r = self.post_json(path, body);
        assert_eq!(r.code, 201, "create {path}: {}", r.text());
        r.json()
    }

    /// The names of the objects of a collection.
    fn names(&self, collection: &str) -> BTreeSet<String> {
        let r = self.get(collection);
        assert_eq!(r.code, 200, "list {collection}: {}", r.text());
        r.json()["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            // (Every namespace holds the root CA bundle; the tests look at their own objects.)
            .filter(|n| n != "kube-root-ca.crt")
            .collect()
    }

    /// The object, which must exist.
    fn object(&self, path: &str) -> Value {
        let r = self.get(path);
        assert_eq!(r.code, 200, "get {path}: {}", r.text());
        r.json()
    }

    fn absent(&self, path: &str) {
        let r = self.get(path);
        assert_eq!(r.code, 404, "{path} should not exist: {}", r.text());
    }
}

/// The response is an upstream `Status` failure with `code` and `reason`; returns it.
fn status(r: &Resp, code: u16, reason: &str, what: &str) -> Value {
    assert_eq!(r.code, code, "{what}: {}", r.text());
    let s = r.json();
    assert_eq!(s["kind"], "Status", "{what}: {s}");
    assert_eq!(s["apiVersion"], "v1", "{what}: {s}");
    assert_eq!(s["status"], "Failure", "{what}: {s}");
    assert_eq!(s["reason"], reason, "{what}: {s}");
    assert_eq!(s["code"], code, "{what}: {s}");
    assert!(
        s["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{what}: no message: {s}"
    );
    s
}

fn message(s: &Value) -> &str {
    s["message"].as_str().unwrap_or_default()
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": {"k": "v"}})
}

fn kubeproto_fixture(name: &str) -> Vec<u8> {
    let p = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("../kubeproto/tests/testdata")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

#[test]
fn malformed_and_mismatched_bodies_are_bad_requests() {
    let api = Api::start();
    let before = api.names(CM);
    let cases: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "malformed JSON",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad1""#.to_vec(),
            "",
        ),
        (
            "malformed YAML",
            "application/yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: [bad2\n".to_vec(),
            "",
        ),
        (
            "YAML that is not a mapping",
            "application/yaml",
            b"- a\n- b\n".to_vec(),
            "",
        ),
        ("empty body", "application/json", Vec::new(), ""),
        ("JSON array", "application/json", b"[]".to_vec(), ""),
        (
            "a Secret posted to configmaps",
            "application/json",
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bad3"}}"#.to_vec(),
            "Secret",
        ),
        (
            "a ConfigMap in the wrong group version",
            "application/json",
            br#"{"apiVersion":"apps/v1","kind":"ConfigMap","metadata":{"name":"bad4"}}"#.to_vec(),
            "apps/v1",
        ),
        (
            "a kind that is not a string",
            "application/json",
            br#"{"apiVersion":"v1","kind":5,"metadata":{"name":"bad5"}}"#.to_vec(),
            "",
        ),
        (
            "namespace in the body differs from the URL",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad6","namespace":"kube-system"}}"#.to_vec(),
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "metadata.name is a number",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":7}}"#.to_vec(),
            "cannot be handled as a ConfigMap",
        ),
        (
            "labels is a list",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad7","labels":["a"]}}"#
                .to_vec(),
            "cannot be handled as a ConfigMap",
        ),
        (
            "data values are objects",
            "application/yaml",
            b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad8\ndata:\n  a: {b: c}\n"
                .to_vec(),
            "cannot be handled as a ConfigMap",
        ),
        (
            "JSON nested 10 000 deep",
            "application/json",
            format!(
                r#"{{"apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"bad9"}},"x":{}{}}}"#,
                "[".repeat(10_000),
                "]".repeat(10_000)
            )
            .into_bytes(),
            "",
        ),
        (
            "a truncated protobuf body",
            "application/vnd.kubernetes.protobuf",
            {
                let mut cm = kubeproto_fixture("secret.pb");
                cm.truncate(cm.len() - 3);
                cm
            },
            "protobuf",
        ),
    ];
    for (what, ct, body, needle) in &cases {
        let r = api.call("POST", CM, Some(ct), body);
        let s = status(&r, 400, "BadRequest", what);
        assert!(message(&s).contains(needle), "{what}: {s}");
    }
    // A strict create with an unknown field.
    let r = api.call(
        "POST",
        &format!("{CM}?fieldValidation=Strict"),
        Some("application/json"),
        br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"bad10"},"dta":{}}"#,
    );
    let s = status(&r, 400, "BadRequest", "strict unknown field");
    assert!(message(&s).contains(r#"unknown field "dta""#), "{s}");
    assert_eq!(api.names(CM), before, "a bad create stored something");
    for n in 1..=10 {
        api.absent(&format!("{CM}/bad{n}"));
    }

    // What upstream's decoder fills in from the URL (gvkWithDefaults): a built-in kind's
    // missing kind and apiVersion.
    for (name, body) in [
        ("defaulted1", json!({"metadata": {"name": "defaulted1"}})),
        (
            "defaulted2",
            json!({"kind": "ConfigMap", "metadata": {"name": "defaulted2"}}),
        ),
        (
            "defaulted3",
            json!({"apiVersion": "v1", "kind": "", "metadata": {"name": "defaulted3"}}),
        ),
    ] {
        let created = api.create(CM, &body);
        assert_eq!(created["kind"], "ConfigMap", "{created}");
        assert_eq!(created["apiVersion"], "v1", "{created}");
        assert_eq!(api.object(&format!("{CM}/{name}"))["kind"], "ConfigMap");
    }
    let r = api.call(
        "POST",
        "/apis/apps/v1/namespaces/default/deployments",
        Some("application/yaml"),
        b"metadata:\n  name: defaulted\nspec:\n  selector: {matchLabels: {a: b}}\n  template:\n    metadata: {labels: {a: b}}\n    spec: {containers: [{name: c, image: nginx}]}\n",
    );
    assert_eq!(r.code, 201, "{}", r.text());
    assert_eq!(r.json()["apiVersion"], "apps/v1");
    assert_eq!(r.json()["kind"], "Deployment");

    // A secret posted to secrets as protobuf works (kubectl 1.33's body); cut short, nothing.
    let secrets = "/api/v1/namespaces/default/secrets";
    let r = api.call(
        "POST",
        secrets,
        Some("application/vnd.kubernetes.protobuf"),
        &kubeproto_fixture("secret.pb"),
    );
    assert_eq!(r.code, 201, "{}", r.text());
    assert_eq!(
        api.object(&format!("{secrets}/s1"))["data"]["password"],
        "czNjcjN0"
    );

    // Updates: a malformed or mismatched body leaves the object as it was.
    let created = api.create(CM, &configmap("target"));
    let target = format!("{CM}/target");
    let updates: Vec<(&str, &str, Vec<u8>, &str)> = vec![
        (
            "malformed JSON",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","#.to_vec(),
            "",
        ),
        (
            "malformed YAML",
            "application/yaml",
            b"data: [\n".to_vec(),
            "",
        ),
        (
            "name differs from the URL",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"other"},"data":{"k":"x"}}"#
                .to_vec(),
            "does not match",
        ),
        (
            "namespace differs from the URL",
            "application/json",
            br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"target","namespace":"kube-system"},"data":{"k":"x"}}"#
                .to_vec(),
            "the namespace of the provided object does not match the namespace sent on the request",
        ),
        (
            "a Secret put on a ConfigMap",
            "application/json",
            br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"target"}}"#.to_vec(),
            "Secret",
        ),
    ];
    for (what, ct, body, needle) in &updates {
        let r = api.call("PUT", &target, Some(ct), body);
        let s = status(&r, 400, "BadRequest", &format!("update: {what}"));
        assert!(message(&s).contains(needle), "update: {what}: {s}");
    }
    let after = api.object(&target);
    assert_eq!(
        after["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
    assert_eq!(after["data"], json!({"k": "v"}));
    api.absent(&format!("{CM}/other"));
}

#[test]
fn invalid_objects_are_unprocessable_with_causes() {
    let api = Api::start();
    let before = api.names(CM);
    let long = "a".repeat(254);
    let cases = [
        ("UPPER", json!({"name": "UPPER"}), "metadata.name"),
        ("254 characters", json!({"name": long}), "metadata.name"),
        ("a..b", json!({"name": "a..b"}), "metadata.name"),
        ("a/b", json!({"name": "a/b"}), "metadata.name"),
        (
            "empty, no generateName",
            json!({"name": ""}),
            "metadata.name",
        ),
        ("no name at all", json!({}), "metadata.name"),
        (
            "invalid generateName",
            json!({"generateName": "UPPER-"}),
            "metadata.generateName",
        ),
        (
            "invalid label key",
            json!({"name": "ok1", "labels": {"a b": "c"}}),
            "metadata.labels",
        ),
        (
            "invalid label value",
            json!({"name": "ok2", "labels": {"a": "-c"}}),
            "metadata.labels",
        ),
    ];
    for (what, meta, field) in &cases {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta});
        let r = api.post_json(CM, &body);
        let s = status(&r, 422, "Invalid", what);
        assert_eq!(s["details"]["kind"], "ConfigMap", "{what}: {s}");
        let causes = s["details"]["causes"]
            .as_array()
            .unwrap_or_else(|| panic!("{what}: no causes: {s}"));
        assert!(
            causes.iter().any(
                |c| c["field"].as_str().is_some_and(|f| f.starts_with(field))
                    && c["reason"].as_str().is_some_and(|r| r.starts_with("Field"))
            ),
            "{what}: no cause on {field}: {s}"
        );
    }
    // Invalid data keys, and more than 1 MiB of data (well under the body limit).
    let r = api.post_json(
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok3"}, "data": {"a/b": "c"}}),
    );
    let s = status(&r, 422, "Invalid", "data key with a slash");
    assert_eq!(s["details"]["causes"][0]["field"], "data[a/b]", "{s}");
    let r = api.post_json(
        CM,
        &json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ok4"},
                "data": {"a": "x".repeat(1024 * 1024), "b": "y"}}),
    );
    status(&r, 422, "Invalid", "ConfigMap over 1 MiB");

    assert_eq!(api.names(CM), before, "an invalid create stored something");
    for n in ["ok1", "ok2", "ok3", "ok4", "a..b", "UPPER"] {
        api.absent(&format!("{CM}/{n}"));
    }
}

#[test]
fn oversize_bodies_are_refused() {
    let api = Api::start();
    let created = api.create(CM, &configmap("target"));
    let before = api.names(CM);
    let huge = "x".repeat(3 * 1024 * 1024);
    let body = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "huge"}, "data": {"a": huge}});
    let bytes = body.to_string().into_bytes();
    assert!(bytes.len() > 3 * 1024 * 1024);
    for (method, path, ct) in [
        ("POST", CM.to_string(), "application/json"),
        ("POST", CM.to_string(), "application/yaml"),
        ("PUT", format!("{CM}/target"), "application/json"),
        (
            "PATCH",
            format!("{CM}/target"),
            "application/merge-patch+json",
        ),
    ] {
        let r = api.call(method, &path, Some(ct), &bytes);
        let s = status(&r, 413, "RequestEntityTooLarge", &format!("{method} {ct}"));
        assert!(message(&s).contains("limit is 3145728"), "{s}");
    }
    assert_eq!(api.names(CM), before);
    api.absent(&format!("{CM}/huge"));
    let after = api.object(&format!("{CM}/target"));
    assert_eq!(
        after["metadata"]["resourceVersion"],
        created["metadata"]["resourceVersion"]
    );
}

#[test]
fn unknown_paths_media_types_and_methods() {
    let api = Api::start();
    api.create(CM, &configmap("target"));
    let before = api.names(CM);
    let cm = serde_json::to_vec(&configmap("new")).unwrap();

    // Unknown resources of a served group version: go-restful's 404, a NotFound Status.
    for (method, path) in [
        ("GET", "/api/v1/namespaces/default/foos"),
        ("GET", "/api/v1/namespaces/default/foos/x"),
        ("POST", "/api/v1/namespaces/default/foos"),
        ("DELETE", "/api/v1/namespaces/default/foos/x"),
        (
            "GET",
            "/api/v1/namespaces/default/configmaps/target/nosuchsubresource",
        ),
        ("GET", "/apis/apps/v1/namespaces/default/foos"),
    ] {
        let body: &[u8] = if method == "POST" { &cm } else { b"" };
        let ct = (method == "POST").then_some("application/json");
        let r = api.call(method, path, ct, body);
        let s = status(&r, 404, "NotFound", &format!("{method} {path}"));
        assert_eq!(
            message(&s),
            "the server could not find the requested resource"
        );
    }
    // Unknown groups and versions fall through to upstream's last handler, which answers a
    // bare 404 (`http.NotFound`); only the code is upstream's contract there.
    for (method, path) in [
        ("GET", "/apis/nope.example.com/v1/things"),
        ("GET", "/apis/nope.example.com/v1/namespaces/default/things"),
        (
            "POST",
            "/apis/nope.example.com/v1/namespaces/default/things",
        ),
        ("GET", "/api/v9/namespaces/default/configmaps"),
    ] {
        let body: &[u8] = if method == "POST" { &cm } else { b"" };
        let ct = (method == "POST").then_some("application/json");
        let r = api.call(method, path, ct, body);
        assert_eq!(r.code, 404, "{method} {path}: {}", r.text());
    }

    // Unsupported body media types: 415.
    for ct in [
        "text/plain",
        "application/xml",
        "application/x-www-form-urlencoded",
    ] {
        let r = api.call("POST", CM, Some(ct), &cm);
        status(&r, 415, "UnsupportedMediaType", ct);
        let r = api.call("PUT", &format!("{CM}/target"), Some(ct), &cm);
        status(&r, 415, "UnsupportedMediaType", ct);
    }

    // Methods with no route: 405 MethodNotAllowed.
    for (method, path, ct) in [
        ("PATCH", CM, Some("application/merge-patch+json")),
        ("PUT", CM, Some("application/json")),
        (
            "POST",
            "/api/v1/namespaces/default/configmaps/target",
            Some("application/json"),
        ),
        ("DELETE", "/api", None),
        ("PUT", "/version", Some("application/json")),
    ] {
        let body: &[u8] = if ct.is_some() { b"{}" } else { b"" };
        let r = api.call(method, path, ct, body);
        status(&r, 405, "MethodNotAllowed", &format!("{method} {path}"));
    }
    assert_eq!(api.names(CM), before);
    api.absent(&format!("{CM}/new"));
}

#[test]
fn bad_query_parameters() {
    let api = Api::start();
    api.create(CM, &configmap("target"));
    let before = api.names(CM);

    // Selectors and list options: 400.
    for (query, needle) in [
        ("labelSelector=a%20in%20(", ""),
        ("labelSelector=a%3D%3D%3Db", ""),
        ("fieldSelector=spec.foo%3Dbar", "spec.foo"),
        ("fieldSelector=metadata.name%3D%3D%3Dx", ""),
        ("resourceVersion=abc", "resource version"),
        ("limit=abc", ""),
        ("limit=1.5", ""),
        ("timeoutSeconds=abc", ""),
    ] {
        let r = api.get(&format!("{CM}?{query}"));
        let s = status(&r, 400, "BadRequest", query);
        assert!(message(&s).contains(needle), "{query}: {s}");
    }
    for query in ["labelSelector=a%20in%20(", "fieldSelector=spec.foo%3Dbar"] {
        let r = api.get(&format!("{CM}?watch=1&{query}"));
        status(&r, 400, "BadRequest", &format!("watch {query}"));
    }

    // Write options that upstream's Validate*Options refuse: 422 on the options kind.
    let cm = serde_json::to_vec(&configmap("new")).unwrap();
    let target = format!("{CM}/target");
    for (method, path, ct, query, kind, field) in [
        (
            "POST",
            CM,
            "application/json",
            "dryRun=Bogus",
            "CreateOptions",
            "dryRun",
        ),
        (
            "POST",
            CM,
            "application/json",
            "fieldValidation=Bogus",
            "CreateOptions",
            "fieldValidation",
        ),
        (
            "PUT",
            &target,
            "application/json",
            "dryRun=Bogus",
            "UpdateOptions",
            "dryRun",
        ),
        (
            "PATCH",
            &target,
            "application/merge-patch+json",
            "force=true",
            "PatchOptions",
            "force",
        ),
        (
            "PATCH",
            &target,
            "application/apply-patch+yaml",
            "",
            "PatchOptions",
            "fieldManager",
        ),
        (
            "PATCH",
            &target,
            "application/merge-patch+json",
            "fieldValidation=Bogus",
            "PatchOptions",
            "fieldValidation",
        ),
        (
            "DELETE",
            &target,
            "application/json",
            "dryRun=Bogus",
            "DeleteOptions",
            "dryRun",
        ),
    ] {
        let body: &[u8] = match ct {
            "application/apply-patch+yaml" => {
                b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: target\n"
            }
            _ if method == "PATCH" => b"{}",
            _ if method == "DELETE" => b"",
            _ => &cm,
        };
        let body = if method == "PUT" {
            serde_json::to_vec(&configmap("target")).unwrap()
        } else {
            body.to_vec()
        };
        let r = api.call(method, &format!("{path}?{query}"), Some(ct), &body);
        let s = status(&r, 422, "Invalid", &format!("{method} ?{query}"));
        assert_eq!(s["details"]["kind"], kind, "{s}");
        assert_eq!(s["details"]["group"], "meta.k8s.io", "{s}");
        assert_eq!(s["details"]["causes"][0]["field"], field, "{s}");
    }
    // Unparsable integers in write options are 400s; booleans never fail to decode
    // (upstream's Convert_Slice_string_To_bool: anything but "0" and "false" is true).
    let r = api.call(
        "DELETE",
        &format!("{target}?gracePeriodSeconds=abc"),
        None,
        b"",
    );
    status(&r, 400, "BadRequest", "gracePeriodSeconds=abc");
    let r = api.get(&format!("{CM}?watch=yes&timeoutSeconds=1"));
    assert_eq!(r.code, 200, "{}", r.text());
    assert!(
        !r.text().contains("ConfigMapList"),
        "watch=yes is a watch: {}",
        r.text()
    );
    let r = api.get(&format!("{CM}?watch=FALSE"));
    assert_eq!(r.code, 200, "{}", r.text());
    assert_eq!(r.json()["kind"], "ConfigMapList");
    assert_eq!(api.names(CM), before);
    let after = api.object(&target);
    assert_eq!(after["data"], json!({"k": "v"}));
}

/// Waits until `path` answers 200.
fn wait_served(api: &Api, path: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let r = api.get(path);
        if r.code == 200 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{path} never served: {}",
            r.text()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// What, Content-Type, body, expected code and reason.
type PatchCase<'a> = (&'a str, Option<&'a str>, &'a [u8], u16, &'a str);

#[test]
fn bad_patches() {
    let api = Api::start();
    let created = api.create(CM, &configmap("target"));
    let target = format!("{CM}/target");

    let cases: Vec<PatchCase<'_>> = vec![
        (
            "json-patch that is not an array",
            Some("application/json-patch+json"),
            br#"{"op":"add","path":"/data/b","value":"2"}"#,
            400,
            "BadRequest",
        ),
        (
            "json-patch that is not JSON",
            Some("application/json-patch+json"),
            b"[{",
            400,
            "BadRequest",
        ),
        (
            "json-patch test that fails",
            Some("application/json-patch+json"),
            br#"[{"op":"test","path":"/data/k","value":"nope"},{"op":"add","path":"/data/b","value":"2"}]"#,
            422,
            "Invalid",
        ),
        (
            "json-patch removing what is not there",
            Some("application/json-patch+json"),
            br#"[{"op":"remove","path":"/data/nope"}]"#,
            422,
            "Invalid",
        ),
        (
            "merge-patch that is not JSON",
            Some("application/merge-patch+json"),
            br#"{"data": {"#,
            400,
            "BadRequest",
        ),
        (
            "strategic-merge-patch that is not JSON",
            Some("application/strategic-merge-patch+json"),
            b"data: x",
            400,
            "BadRequest",
        ),
        (
            "apply patch with invalid YAML",
            Some("application/apply-patch+yaml"),
            b"apiVersion: v1\nkind: ConfigMap\ndata: [a\n",
            400,
            "BadRequest",
        ),
        (
            "patch without a Content-Type",
            None,
            br#"{"data":{"b":"2"}}"#,
            415,
            "UnsupportedMediaType",
        ),
        (
            "patch as application/json",
            Some("application/json"),
            br#"{"data":{"b":"2"}}"#,
            415,
            "UnsupportedMediaType",
        ),
        (
            "patch as text/plain",
            Some("text/plain"),
            br#"{"data":{"b":"2"}}"#,
            415,
            "UnsupportedMediaType",
        ),
    ];
    for (what, ct, body, code, reason) in &cases {
        let path = if *ct == Some("application/apply-patch+yaml") {
            format!("{target}?fieldManager=tester")
        } else {
            target.clone()
        };
        let r = api.call("PATCH", &path, *ct, body);
        status(&r, *code, reason, what);
    }
    // A failed json-patch test is upstream's generic 422.
    let r = api.call(
        "PATCH",
        &target,
        Some("application/json-patch+json"),
        br#"[{"op":"test","path":"/data/k","value":"nope"}]"#,
    );
    let s = status(&r, 422, "Invalid", "json-patch test");
    assert_eq!(
        message(&s),
        "the server rejected our request due to an error in our request"
    );
    // A malformed patch of an object that does not exist is still a 400.
    let r = api.call(
        "PATCH",
        &format!("{CM}/missing"),
        Some("application/merge-patch+json"),
        b"{",
    );
    status(&r, 400, "BadRequest", "malformed patch of a missing object");
    let r = api.call(
        "PATCH",
        &format!("{CM}/missing"),
        Some("application/merge-patch+json"),
        br#"{"data":{"b":"2"}}"#,
    );
    status(&r, 404, "NotFound", "patch of a missing object");

    let after = api.object(&target);
    assert_eq!(
        after["metadata"]["resourceVersion"], created["metadata"]["resourceVersion"],
        "a bad patch changed the object: {after}"
    );
    assert_eq!(after["data"], json!({"k": "v"}));
    api.absent(&format!("{CM}/missing"));

    // Custom resources have no strategic merge patch: 415, even with a malformed body.
    api.create(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        &json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}
                    }}}
                }]
            }
        }),
    );
    let widgets = "/apis/example.com/v1/namespaces/default/widgets";
    wait_served(&api, widgets);
    // Custom resources are decoded unstructured: the kind is required.
    let r = api.post_json(
        widgets,
        &json!({"apiVersion": "example.com/v1", "metadata": {"name": "nokind"}}),
    );
    let s = status(&r, 400, "BadRequest", "custom resource without a kind");
    assert!(message(&s).contains("Object 'Kind' is missing"), "{s}");
    api.absent(&format!("{widgets}/nokind"));
    let w = api.create(
        widgets,
        &json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"a": 1}}),
    );
    for body in [&br#"{"spec":{"a":2}}"#[..], b"{"] {
        let r = api.call(
            "PATCH",
            &format!("{widgets}/w"),
            Some("application/strategic-merge-patch+json"),
            body,
        );
        status(
            &r,
            415,
            "UnsupportedMediaType",
            "strategic merge patch of a custom resource",
        );
    }
    // Merge patch works on it; a malformed one is a 400.
    let r = api.call(
        "PATCH",
        &format!("{widgets}/w"),
        Some("application/merge-patch+json"),
        b"{\"spec\":",
    );
    status(
        &r,
        400,
        "BadRequest",
        "malformed merge patch of a custom resource",
    );
    let after = api.object(&format!("{widgets}/w"));
    assert_eq!(
        after["metadata"]["resourceVersion"],
        w["metadata"]["resourceVersion"]
    );
    assert_eq!(after["spec"], json!({"a": 1}));
}

#[test]
fn conflicts() {
    let api = Api::start();
    let created = api.create(CM, &configmap("target"));
    let target = format!("{CM}/target");

    // The same name twice: 409 AlreadyExists, and the first object is untouched.
    let mut again = configmap("target");
    again["data"] = json!({"k": "second"});
    let r = api.post_json(CM, &again);
    let s = status(&r, 409, "AlreadyExists", "create twice");
    assert_eq!(s["details"]["name"], "target", "{s}");
    assert_eq!(s["details"]["kind"], "configmaps", "{s}");
    assert_eq!(message(&s), r#"configmaps "target" already exists"#);

    // An update with a stale resourceVersion: 409 Conflict.
    let mut fresh = created.clone();
    fresh["data"] = json!({"k": "updated"});
    let r = api.call(
        "PUT",
        &target,
        Some("application/json"),
        fresh.to_string().as_bytes(),
    );
    assert_eq!(r.code, 200, "{}", r.text());
    let current = r.json();
    let mut stale = created.clone();
    stale["data"] = json!({"k": "stale"});
    let r = api.call(
        "PUT",
        &target,
        Some("application/json"),
        stale.to_string().as_bytes(),
    );
    let s = status(&r, 409, "Conflict", "stale update");
    assert!(message(&s).contains("the object has been modified"), "{s}");
    // The same through a patch carrying a resourceVersion, and a delete precondition.
    let r = api.call(
        "PATCH",
        &target,
        Some("application/merge-patch+json"),
        json!({"metadata": {"resourceVersion": created["metadata"]["resourceVersion"]}, "data": {"k": "stale"}})
            .to_string()
            .as_bytes(),
    );
    status(&r, 409, "Conflict", "stale patch");
    let r = api.call(
        "DELETE",
        &target,
        Some("application/json"),
        json!({"kind": "DeleteOptions", "apiVersion": "v1",
               "preconditions": {"resourceVersion": created["metadata"]["resourceVersion"]}})
        .to_string()
        .as_bytes(),
    );
    status(&r, 409, "Conflict", "stale delete precondition");

    let after = api.object(&target);
    assert_eq!(after["data"], json!({"k": "updated"}));
    assert_eq!(
        after["metadata"]["resourceVersion"],
        current["metadata"]["resourceVersion"]
    );
}

#[test]
fn watch_from_before_the_watch_cache_replays_the_store_until_compacted() {
    let events_of = |r: &Resp| -> Vec<Value> {
        r.text()
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    // Two configmaps, then a restart: the watch cache starts at the current revision.
    // Returns the first one's resourceVersion, now older than the cache.
    let write_two_and_restart = |api: &mut Api| -> String {
        let first = api.create(CM, &configmap("first"));
        api.create(CM, &configmap("second"));
        api.server.restart();
        first["metadata"]["resourceVersion"]
            .as_str()
            .unwrap()
            .to_string()
    };
    // An older resourceVersion is replayed from the store's history while it has it …
    let mut api = Api::start();
    let rv = write_two_and_restart(&mut api);
    let r = api.get(&format!(
        "{CM}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
    ));
    assert_eq!(r.code, 200, "{}", r.text());
    let replayed: Vec<_> = events_of(&r)
        .iter()
        .map(|e| (e["type"].clone(), e["object"]["metadata"]["name"].clone()))
        .collect();
    assert_eq!(replayed, [(json!("ADDED"), json!("second"))]);
    drop(api);

    let server = RkubeServer::start_with(&["--etcd-compaction-interval", "1s"]);
    let tls = server.dir.path().join("data").join("tls");
    let mut api = Api { server, tls };
    let rv = write_two_and_restart(&mut api);
    // … and once compacted, upstream's answer: 200 and one ERROR event (cacher.Watch's
    // newErrWatcher), not an HTTP 410.
    let s = testkit::wait_for("the watch to expire", 30, || {
        let r = api.get(&format!(
            "{CM}?watch=1&resourceVersion={rv}&timeoutSeconds=1"
        ));
        assert_eq!(r.code, 200, "{}", r.text());
        let events = events_of(&r);
        (events.len() == 1 && events[0]["type"] == "ERROR").then(|| events[0]["object"].clone())
    });
    assert_eq!(s["kind"], "Status", "{s}");
    assert_eq!(s["apiVersion"], "v1", "{s}");
    assert_eq!(s["status"], "Failure", "{s}");
    assert_eq!(s["reason"], "Expired", "{s}");
    assert_eq!(s["code"], 410, "{s}");
    assert!(
        message(&s).starts_with(&format!("too old resource version: {rv} (")),
        "{s}"
    );
    // Both objects are still there.
    assert_eq!(
        api.names(CM).into_iter().collect::<Vec<_>>(),
        ["first", "second"]
    );
}
