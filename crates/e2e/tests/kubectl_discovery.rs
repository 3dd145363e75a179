//! `rkube kubectl` discovery against a real server, judged by kubectl 1.33: the disk cache
//! (cold vs warm request counts from `-v=6`, the 6-hour TTL, the same files as kubectl's so
//! either reads the other's cache, `--cache-dir`), re-discovery when a resource type is
//! missing (a CRD created after the cache was written), and `api-resources`,
//! `api-versions` and `explain` output compared with kubectl's.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use testkit::RkubeServer;

/// Which client runs.
#[derive(Clone, Copy, Debug)]
enum Client {
    Ours,
    Kubectl,
}

fn cmd(server: &RkubeServer, client: Client, home: &Path) -> Command {
    let mut c = match client {
        Client::Ours => server.rkubectl_cmd(),
        Client::Kubectl => server.kubectl_cmd(Some("1.33")),
    };
    c.env("HOME", home).env_remove("KUBECACHEDIR");
    c
}

fn run(server: &RkubeServer, client: Client, home: &Path, args: &[&str]) -> Output {
    cmd(server, client, home).args(args).output().unwrap()
}

/// The request lines of a `-v=6` run: (verb, path and query).
fn requests(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.contains("round_trippers.go") && l.contains("url=\""))
        .filter_map(|l| {
            let url = l.split("url=\"").nth(1)?.split('"').next()?;
            let path = url.splitn(4, '/').nth(3)?;
            Some(format!("/{path}"))
        })
        .collect()
}

fn fresh_home(root: &Path, name: &str) -> PathBuf {
    let home = root.join(name);
    std::fs::create_dir_all(&home).unwrap();
    home
}

fn host_dir(server: &RkubeServer) -> String {
    format!("127.0.0.1_{}", server.port)
}

/// Every cache file below `dir`, relative, sorted.
fn files(dir: &Path) -> Vec<String> {
    fn walk(base: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(base, &p, out);
            } else {
                out.push(p.strip_prefix(base).unwrap().display().to_string());
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Sets every file's modification time below `dir` to `ago` in the past.
fn age(dir: &Path, ago: &str) {
    let status = Command::new("find")
        .arg(dir)
        .args(["-type", "f", "-exec", "touch", "-d", ago, "{}", "+"])
        .status()
        .unwrap();
    assert!(status.success());
}

#[test]
fn cache_cold_warm_ttl_and_shared_with_kubectl() {
    let server = RkubeServer::start();
    let root = tempfile::tempdir().unwrap();
    let get = ["get", "pods", "-v=6"];

    for client in [Client::Ours, Client::Kubectl] {
        let home = fresh_home(root.path(), &format!("{client:?}"));
        // Cold: aggregated discovery of /api and /apis, then the list.
        let cold = run(&server, client, &home, &get);
        assert!(cold.status.success(), "{client:?}: {cold:?}");
        assert_eq!(
            requests(&cold),
            vec![
                "/api?timeout=32s",
                "/apis?timeout=32s",
                "/api/v1/namespaces/default/pods?limit=500"
            ],
            "{client:?} cold"
        );
        // Warm: the list only.
        let warm = run(&server, client, &home, &get);
        assert_eq!(
            requests(&warm),
            vec!["/api/v1/namespaces/default/pods?limit=500"],
            "{client:?} warm"
        );
        // Past the 6-hour TTL the cache is rebuilt; within it, it is used.
        let cache = home.join(".kube/cache/discovery").join(host_dir(&server));
        age(&cache, "5 hours ago");
        assert_eq!(
            requests(&run(&server, client, &home, &get)).len(),
            1,
            "{client:?} 5h"
        );
        age(&cache, "7 hours ago");
        assert_eq!(
            requests(&run(&server, client, &home, &get)).len(),
            3,
            "{client:?} 7h"
        );
        assert_eq!(
            requests(&run(&server, client, &home, &get)).len(),
            1,
            "{client:?} rewarmed"
        );
    }

    // The same files, byte for byte.
    let ours = root
        .path()
        .join("Ours/.kube/cache/discovery")
        .join(host_dir(&server));
    let theirs = root
        .path()
        .join("Kubectl/.kube/cache/discovery")
        .join(host_dir(&server));
    let names = files(&theirs);
    assert!(
        names.contains(&"servergroups.json".to_string()),
        "{names:?}"
    );
    assert!(
        names.contains(&"apps/v1/serverresources.json".to_string()),
        "{names:?}"
    );
    assert_eq!(files(&ours), names);
    for n in &names {
        assert_eq!(
            std::fs::read(ours.join(n)).unwrap(),
            std::fs::read(theirs.join(n)).unwrap(),
            "{n}"
        );
    }

    // Each reads the other's cache: warm at the first run.
    for (writer, reader) in [
        (Client::Ours, Client::Kubectl),
        (Client::Kubectl, Client::Ours),
    ] {
        let home = fresh_home(root.path(), &format!("{writer:?}-then-{reader:?}"));
        assert_eq!(requests(&run(&server, writer, &home, &get)).len(), 3);
        assert_eq!(
            requests(&run(&server, reader, &home, &get)).len(),
            1,
            "{reader:?} reading {writer:?}'s cache"
        );
    }

    // --cache-dir moves the cache; $KUBECACHEDIR too.
    let home = fresh_home(root.path(), "cache-dir");
    let dir = root.path().join("elsewhere");
    let out = run(
        &server,
        Client::Ours,
        &home,
        &["get", "pods", "--cache-dir", dir.to_str().unwrap()],
    );
    assert!(out.status.success(), "{out:?}");
    assert!(
        dir.join("discovery")
            .join(host_dir(&server))
            .join("servergroups.json")
            .exists()
    );
    assert!(!home.join(".kube/cache").exists());
    let env_dir = root.path().join("from-env");
    let out = cmd(&server, Client::Ours, &home)
        .env("KUBECACHEDIR", &env_dir)
        .args(["get", "pods"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(
        env_dir
            .join("discovery")
            .join(host_dir(&server))
            .join("servergroups.json")
            .exists()
    );

    // api-resources and api-versions always ask afresh; `--cached` does not.
    let home = fresh_home(root.path(), "api-resources");
    for client in [Client::Ours, Client::Kubectl] {
        let _ = run(&server, client, &home, &["get", "pods"]);
        assert_eq!(
            requests(&run(&server, client, &home, &["api-resources", "-v=6"])),
            vec!["/api?timeout=32s", "/apis?timeout=32s"],
            "{client:?}"
        );
        assert!(
            requests(&run(
                &server,
                client,
                &home,
                &["api-resources", "--cached", "-v=6"]
            ))
            .is_empty()
        );
        assert_eq!(
            requests(&run(&server, client, &home, &["api-versions", "-v=6"])),
            vec!["/api?timeout=32s", "/apis?timeout=32s"],
            "{client:?}"
        );
    }
}

const CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "description": "A widget.",
        "properties": {"spec": {"type": "object", "description": "What the widget is.",
          "properties": {"size": {"type": "integer", "description": "How big."}}}}
      }}
    }]
  }
}"#;

#[test]
fn missing_type_rediscovers_once_and_finds_a_new_crd() {
    let server = RkubeServer::start();
    let root = tempfile::tempdir().unwrap();
    for client in [Client::Ours, Client::Kubectl] {
        let home = fresh_home(root.path(), &format!("{client:?}"));
        let _ = run(&server, client, &home, &["get", "pods"]);

        // An unknown type on a warm cache: one re-discovery, then kubectl's error.
        let out = run(&server, client, &home, &["get", "nosuchthings", "-v=6"]);
        assert_eq!(out.status.code(), Some(1), "{client:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr)
                .contains("error: the server doesn't have a resource type \"nosuchthings\""),
            "{client:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            requests(&out),
            vec!["/api?timeout=32s", "/apis?timeout=32s"],
            "{client:?}"
        );
    }

    // A CRD created after the caches were written is found through re-discovery.
    let out = server.kubectl_stdin(Some("1.33"), &["apply", "-f", "-"], CRD);
    assert!(out.status.success(), "{out:?}");
    testkit::eventually("the CRD served", || {
        server
            .kubectl(&["get", "widgets.example.com"])
            .status
            .success()
    });
    for client in [Client::Ours, Client::Kubectl] {
        let home = root.path().join(format!("{client:?}"));
        for arg in ["widgets", "wd", "widget.v1.example.com"] {
            let out = run(&server, client, &home, &["get", arg, "-v=6"]);
            assert!(out.status.success(), "{client:?} {arg}: {out:?}");
            let reqs = requests(&out);
            assert!(
                reqs.last()
                    .unwrap()
                    .starts_with("/apis/example.com/v1/namespaces/default/widgets"),
                "{client:?} {arg}: {reqs:?}"
            );
            // Re-discovery on the first run after the CRD, none after.
            let expected = if arg == "widgets" { 3 } else { 1 };
            assert_eq!(reqs.len(), expected, "{client:?} {arg}: {reqs:?}");
        }
        assert!(
            home.join(".kube/cache/discovery")
                .join(host_dir(&server))
                .join("example.com/v1/serverresources.json")
                .exists()
        );
    }
}

fn same(server: &RkubeServer, home: &Path, args: &[&str]) {
    let real = run(server, Client::Kubectl, home, args);
    let ours = run(server, Client::Ours, home, args);
    assert_eq!(real.status.code(), ours.status.code(), "{args:?}: {ours:?}");
    assert_eq!(
        String::from_utf8_lossy(&real.stdout),
        String::from_utf8_lossy(&ours.stdout),
        "stdout of {args:?}"
    );
    assert_eq!(
        String::from_utf8_lossy(&real.stderr),
        String::from_utf8_lossy(&ours.stderr),
        "stderr of {args:?}"
    );
}

#[test]
fn api_resources_api_versions_explain_as_kubectl() {
    let server = RkubeServer::start();
    let out = server.kubectl_stdin(Some("1.33"), &["apply", "-f", "-"], CRD);
    assert!(out.status.success(), "{out:?}");
    testkit::eventually("the CRD served", || {
        server
            .kubectl(&["get", "widgets.example.com"])
            .status
            .success()
    });
    let root = tempfile::tempdir().unwrap();
    let home = fresh_home(root.path(), "shared");
    let cases: &[&[&str]] = &[
        &["api-resources"],
        &["api-resources", "-o", "wide"],
        &["api-resources", "-o", "name"],
        &["api-resources", "--namespaced=false", "--sort-by=kind"],
        &["api-resources", "--api-group=apps", "--no-headers"],
        &["api-resources", "--api-group="],
        &["api-resources", "--verbs=list,watch", "--cached"],
        &["api-resources", "--categories=all"],
        &["api-resources", "-o", "json"],
        &["api-resources", "--sort-by=size"],
        &["api-resources", "extra"],
        &["api-versions"],
        &["explain", "pods"],
        &["explain", "pods.spec"],
        &["explain", "pods.spec.containers"],
        &["explain", "po.spec.restartPolicy"],
        &["explain", "deploy.spec", "--recursive"],
        &["explain", "deployments.apps.spec.template"],
        &["explain", "svc", "--recursive"],
        &["explain", "crd.spec"],
        &["explain", "nodes.status.capacity"],
        &["explain", "ev"],
        &["explain", "widgets"],
        &["explain", "wd.spec", "--recursive"],
        &["explain", "widgets.spec.size"],
        &["explain", "pods.spec.nope"],
        &["explain", "nosuchthings"],
        &["explain"],
        &["explain", "pods", "nodes"],
        &["explain", "pods", "--api-version=v2"],
    ];
    for args in cases {
        same(&server, &home, args);
    }

    // explain: the index each time; the group-version document (content-addressed) from
    // the shared HTTP cache, whoever wrote it.
    let home = fresh_home(root.path(), "explain");
    let first = run(
        &server,
        Client::Kubectl,
        &home,
        &["explain", "pods", "-v=6"],
    );
    // Discovery, the index, the document.
    assert_eq!(requests(&first).len(), 4, "{first:?}");
    let ours = run(&server, Client::Ours, &home, &["explain", "pods", "-v=6"]);
    assert_eq!(requests(&ours), vec!["/openapi/v3?timeout=32s"], "{ours:?}");
    let home = fresh_home(root.path(), "explain-ours");
    let cold = run(&server, Client::Ours, &home, &["explain", "deploy", "-v=6"]);
    let reqs = requests(&cold);
    assert_eq!(reqs.len(), 4, "{reqs:?}");
    assert!(
        reqs[3].starts_with("/openapi/v3/apis/apps/v1?hash="),
        "{reqs:?}"
    );
    let warm = run(&server, Client::Ours, &home, &["explain", "deploy", "-v=6"]);
    assert_eq!(requests(&warm).len(), 1);
    // kubectl revalidates our entry and uses it.
    let real = run(&server, Client::Kubectl, &home, &["explain", "deploy"]);
    assert_eq!(real.stdout, warm.stdout);
}

/// A server without aggregated discovery: `/api`, `/apis`, then each group-version.
#[test]
fn legacy_discovery_when_aggregated_is_not_served() {
    use serde_json::json;
    use std::sync::Arc;
    use testkit::https::{HttpsServer, Request};

    let dir = tempfile::tempdir().unwrap();
    let ca = testkit::TestCa::new(dir.path(), "legacy");
    let verbs = json!(["create", "delete", "get", "list", "watch"]);
    let fake = HttpsServer::start(
        &ca,
        Arc::new(
            move |r: &Request<'_>| match r.path.split('?').next().unwrap_or_default() {
                "/api" => (200, json!({"kind": "APIVersions", "versions": ["v1"]})),
                "/apis" => (
                    200,
                    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": [{
                        "name": "apps",
                        "versions": [{"groupVersion": "apps/v1", "version": "v1"}],
                        "preferredVersion": {"groupVersion": "apps/v1", "version": "v1"}
                    }]}),
                ),
                "/api/v1" => (
                    200,
                    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "v1", "resources": [
                        {"name": "pods", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": verbs, "shortNames": ["po"], "categories": ["all"]},
                        {"name": "pods/status", "singularName": "pod", "namespaced": true, "kind": "Pod", "verbs": ["get"]},
                        {"name": "nodes", "singularName": "node", "namespaced": false, "kind": "Node", "verbs": verbs, "shortNames": ["no"]}
                    ]}),
                ),
                "/apis/apps/v1" => (
                    200,
                    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": "apps/v1", "resources": [
                        {"name": "deployments", "singularName": "deployment", "namespaced": true, "kind": "Deployment", "verbs": verbs, "shortNames": ["deploy"], "categories": ["all"]}
                    ]}),
                ),
                _ => (
                    404,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404}),
                ),
            },
        ),
    );
    let kc = dir.path().join("legacy.kubeconfig");
    std::fs::write(
        &kc,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: u\n  user:\n    token: t\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: u\ncurrent-context: c\n",
            fake.url(""),
            ca.ca_file.display()
        ),
    )
    .unwrap();
    let run_with = |client: Client, home: &Path, args: &[&str]| -> Output {
        let mut c = match client {
            Client::Ours => {
                let mut c = Command::new(testkit::rkube_binary());
                c.arg("kubectl").env_remove("RUST_LOG");
                c
            }
            Client::Kubectl => Command::new(testkit::kubectl_binary(Some("1.33"))),
        };
        c.env("KUBECONFIG", &kc)
            .env("HOME", home)
            .env_remove("KUBECACHEDIR")
            .stdin(std::process::Stdio::null())
            .args(args)
            .output()
            .unwrap()
    };
    let mut outputs = Vec::new();
    for client in [Client::Ours, Client::Kubectl] {
        let home = fresh_home(dir.path(), &format!("legacy-{client:?}"));
        let cold = run_with(client, &home, &["api-resources", "-v=6"]);
        assert!(cold.status.success(), "{client:?}: {cold:?}");
        let mut reqs = requests(&cold);
        reqs.sort();
        assert_eq!(
            reqs,
            vec![
                "/api/v1?timeout=32s",
                "/api?timeout=32s",
                "/apis/apps/v1?timeout=32s",
                "/apis?timeout=32s"
            ],
            "{client:?}"
        );
        let warm = run_with(client, &home, &["api-resources", "--cached", "-v=6"]);
        assert!(requests(&warm).is_empty(), "{client:?}: {warm:?}");
        outputs.push((cold.stdout, warm.stdout));
        let files = files(
            &home.join(".kube/cache/discovery/127.0.0.1_".to_string() + &fake.port.to_string()),
        );
        assert_eq!(
            files,
            vec![
                "apps/v1/serverresources.json",
                "servergroups.json",
                "v1/serverresources.json"
            ],
            "{client:?}"
        );
    }
    assert_eq!(outputs[0], outputs[1]);
    let text = String::from_utf8_lossy(&outputs[0].0);
    assert!(
        text.contains("deployments   deploy       apps/v1      true         Deployment"),
        "{text}"
    );
}
