//! `rkube kubectl create|apply|diff|replace -f` judged by the real kubectl 1.33: every
//! scenario runs with kubectl 1.33 in namespace `nsk` and with `rkube kubectl` in namespace
//! `nsr` of one server, and their exit codes, messages and resulting objects are compared
//! (with the namespace names normalised).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::process::Output;

use serde_json::Value;
use testkit::RkubeServer;

const REAL: &str = "nsk";
const OURS: &str = "nsr";

struct Env {
    server: RkubeServer,
    dir: tempfile::TempDir,
}

/// What one command gave: exit code, stdout, stderr (namespace names normalised).
#[derive(Debug, PartialEq)]
struct Got {
    code: i32,
    out: String,
    err: String,
}

fn got(o: &Output) -> Got {
    let norm = |b: &[u8]| String::from_utf8_lossy(b).replace(OURS, REAL);
    Got {
        code: o.status.code().unwrap_or(-1),
        out: norm(&o.stdout),
        err: norm(&o.stderr),
    }
}

impl Env {
    fn start() -> Env {
        let server = RkubeServer::start();
        for ns in [REAL, OURS] {
            server.kubectl_ok(None, &["create", "namespace", ns]);
        }
        Env {
            server,
            dir: tempfile::tempdir().unwrap(),
        }
    }

    /// Writes a manifest file (the same for both clients).
    fn file(&self, name: &str, text: &str) -> PathBuf {
        let p = self.dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        p
    }

    /// Runs `args` (with `{ns}` replaced) with kubectl 1.33 in `nsk` and with ours in `nsr`.
    fn both(&self, args: &[&str], stdin: Option<&str>) -> (Got, Got) {
        let real_args: Vec<String> = args.iter().map(|a| a.replace("{ns}", REAL)).collect();
        let our_args: Vec<String> = args.iter().map(|a| a.replace("{ns}", OURS)).collect();
        let real_refs: Vec<&str> = real_args.iter().map(String::as_str).collect();
        let our_refs: Vec<&str> = our_args.iter().map(String::as_str).collect();
        let (real, ours) = match stdin {
            Some(input) => (
                self.server.kubectl_stdin(Some("1.33"), &real_refs, input),
                self.server.rkubectl_stdin(&our_refs, input),
            ),
            None => (
                self.server.kubectl_v(Some("1.33"), &real_refs),
                self.server.rkubectl(&our_refs),
            ),
        };
        (got(&real), got(&ours))
    }

    /// Both clients give the same exit code, stdout and stderr.
    fn same(&self, args: &[&str], stdin: Option<&str>) -> Got {
        let (real, ours) = self.both(args, stdin);
        assert_eq!(ours, real, "rkube kubectl {args:?} differs from kubectl");
        ours
    }

    fn get(&self, ns: &str, what: &str) -> Value {
        self.server.get_json(&[what, "-n", ns])
    }
}

fn last_applied(obj: &Value) -> String {
    obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
        .as_str()
        .unwrap_or_default()
        .replace(OURS, REAL)
}

const DEPLOY_V1: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: front
spec:
  replicas: 2
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: main
        image: nginx:1.25
        env:
        - name: A
          value: a
        - name: B
          value: b
      - name: side
        image: busybox
        command: [sleep, '3600']
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  one: '1'
  two: '2'
  html: '<b>&</b>'
";

const DEPLOY_V2: &str = "apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
spec:
  replicas: 3
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: main
        image: nginx:1.26
        env:
        - name: A
          value: a2
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
data:
  one: '1'
  three: '3'
  html: '<b>&</b>'
";

#[test]
fn client_side_apply_create_unchanged_configured() {
    let env = Env::start();
    let v1 = env.file("v1.yaml", DEPLOY_V1);
    let v1 = v1.to_str().unwrap();
    let got = env.same(&["apply", "-f", v1, "-n", "{ns}"], None);
    assert_eq!(
        got.out,
        "deployment.apps/web created\nconfigmap/cfg created\n"
    );
    for what in ["deployment/web", "configmap/cfg"] {
        let real = env.get(REAL, what);
        let ours = env.get(OURS, what);
        assert!(!last_applied(&real).is_empty());
        assert_eq!(last_applied(&ours), last_applied(&real), "{what}");
    }
    // Re-applying changes nothing.
    let got = env.same(&["apply", "-f", v1, "-n", "{ns}"], None);
    assert_eq!(
        got.out,
        "deployment.apps/web unchanged\nconfigmap/cfg unchanged\n"
    );
    // Another manager sets fields the manifest does not have.
    for ns in [REAL, OURS] {
        env.server
            .kubectl_ok(None, &["label", "deployment/web", "owner=ops", "-n", ns]);
        env.server.kubectl_ok(
            None,
            &[
                "patch",
                "configmap/cfg",
                "-n",
                ns,
                "-p",
                r#"{"data":{"other":"x"}}"#,
            ],
        );
    }
    // Dry runs change nothing and say so.
    let v2 = env.file("v2.yaml", DEPLOY_V2);
    let v2 = v2.to_str().unwrap();
    let got = env.same(&["apply", "-f", v2, "-n", "{ns}", "--dry-run=client"], None);
    assert_eq!(
        got.out,
        "deployment.apps/web configured (dry run)\nconfigmap/cfg configured (dry run)\n"
    );
    let got = env.same(&["apply", "-f", v2, "-n", "{ns}", "--dry-run=server"], None);
    assert_eq!(
        got.out,
        "deployment.apps/web configured (server dry run)\nconfigmap/cfg configured (server dry run)\n"
    );
    assert_eq!(env.get(OURS, "configmap/cfg")["data"]["two"], "2");
    // The modified manifest: removed fields go, others' fields stay.
    let got = env.same(&["apply", "-f", v2, "-n", "{ns}"], None);
    assert_eq!(
        got.out,
        "deployment.apps/web configured\nconfigmap/cfg configured\n"
    );
    for what in ["deployment/web", "configmap/cfg"] {
        let real = env.get(REAL, what);
        let ours = env.get(OURS, what);
        assert_eq!(last_applied(&ours), last_applied(&real), "{what}");
        assert_eq!(
            ours["metadata"]["labels"], real["metadata"]["labels"],
            "{what}"
        );
        assert_eq!(ours["spec"], real["spec"], "{what}");
        assert_eq!(ours["data"], real["data"], "{what}");
    }
    let ours = env.get(OURS, "deployment/web");
    assert_eq!(ours["metadata"]["labels"]["owner"], "ops");
    assert!(ours["metadata"]["labels"].get("tier").is_none());
    let containers = ours["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 1);
    assert_eq!(
        containers[0]["env"],
        serde_json::json!([{"name": "A", "value": "a2"}])
    );
    let cfg = env.get(OURS, "configmap/cfg");
    assert_eq!(cfg["data"]["other"], "x");
    assert!(cfg["data"].get("two").is_none());
    // -o name and -o yaml.
    let got = env.same(&["apply", "-f", v2, "-n", "{ns}", "-o", "name"], None);
    assert_eq!(got.out, "deployment.apps/web\nconfigmap/cfg\n");
    let (real, ours) = env.both(&["apply", "-f", v2, "-n", "{ns}", "-o", "yaml"], None);
    assert_eq!(ours.code, 0, "{ours:?}");
    assert!(
        ours.out.starts_with("apiVersion: v1\nitems:\n"),
        "{}",
        ours.out
    );
    assert_eq!(real.out.lines().count(), ours.out.lines().count());
    // An object created without apply gets the warning and the annotation.
    for ns in [REAL, OURS] {
        env.server
            .kubectl_ok(None, &["create", "configmap", "plain", "-n", ns]);
    }
    let got = env.same(
        &["apply", "-f", "-", "-n", "{ns}"],
        Some("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: plain\ndata:\n  k: v\n"),
    );
    assert!(
        got.err
            .starts_with("Warning: resource configmaps/plain is missing"),
        "{}",
        got.err
    );
    assert_eq!(
        last_applied(&env.get(OURS, "configmap/plain")),
        last_applied(&env.get(REAL, "configmap/plain"))
    );
}

#[test]
fn custom_resources_apply_with_merge_patch_and_namespace_rules() {
    let env = Env::start();
    let crd = "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
";
    env.server.kubectl_stdin(None, &["apply", "-f", "-"], crd);
    env.server
        .wait_for_object(&["get", "crd/widgets.example.com"]);
    testkit::eventually("widgets served", || {
        env.server
            .kubectl(&["get", "widgets", "-A"])
            .status
            .success()
    });
    let w1 = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 1\n  color: red\n  list: [1, 2]\n";
    let w2 = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\nspec:\n  size: 2\n  list: [3]\n";
    let got = env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(w1));
    assert_eq!(got.out, "widget.example.com/w created\n");
    for ns in [REAL, OURS] {
        env.server.kubectl_ok(
            None,
            &[
                "patch",
                "widget/w",
                "-n",
                ns,
                "--type=merge",
                "-p",
                r#"{"spec":{"extra":true}}"#,
            ],
        );
    }
    let got = env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(w2));
    assert_eq!(got.out, "widget.example.com/w configured\n");
    let real = env.get(REAL, "widget/w");
    let ours = env.get(OURS, "widget/w");
    assert_eq!(ours["spec"], real["spec"]);
    assert_eq!(
        ours["spec"],
        serde_json::json!({"size": 2, "list": [3], "extra": true})
    );
    assert_eq!(last_applied(&ours), last_applied(&real));
    // The namespace of the manifest against -n.
    let other = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: q\n  namespace: elsewhere\n";
    let got = env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(other));
    assert_eq!(got.code, 1);
    assert!(
        got.err.contains("does not match the namespace"),
        "{}",
        got.err
    );
}

#[test]
fn server_side_apply_and_conflicts() {
    let env = Env::start();
    let m1 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: '1'\n";
    let m2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\ndata:\n  a: '2'\n";
    let got = env.same(
        &["apply", "--server-side", "-f", "-", "-n", "{ns}"],
        Some(m1),
    );
    assert_eq!(got.out, "configmap/ssa serverside-applied\n");
    let got = env.same(
        &["apply", "--server-side", "-f", "-", "-n", "{ns}"],
        Some(m1),
    );
    assert_eq!(got.out, "configmap/ssa serverside-applied\n");
    for ns in [REAL, OURS] {
        let mf = env
            .server
            .get_json(&["configmap/ssa", "-n", ns, "--show-managed-fields"])["metadata"]
            ["managedFields"]
            .clone();
        assert_eq!(mf[0]["manager"], "kubectl");
        assert_eq!(mf[0]["operation"], "Apply");
    }
    // Another manager takes the field: applying a different value conflicts.
    for ns in [REAL, OURS] {
        env.server.kubectl_ok(
            None,
            &[
                "patch",
                "configmap/ssa",
                "-n",
                ns,
                "-p",
                r#"{"data":{"a":"9"}}"#,
            ],
        );
    }
    let got = env.same(
        &["apply", "--server-side", "-f", "-", "-n", "{ns}"],
        Some(m2),
    );
    assert_eq!(got.code, 1);
    assert!(
        got.err.starts_with("error: Apply failed with 1 conflict"),
        "{}",
        got.err
    );
    let got = env.same(
        &[
            "apply",
            "--server-side",
            "--force-conflicts",
            "-f",
            "-",
            "-n",
            "{ns}",
        ],
        Some(m2),
    );
    assert_eq!(got.out, "configmap/ssa serverside-applied\n");
    assert_eq!(env.get(OURS, "configmap/ssa")["data"]["a"], "2");
    let got = env.same(
        &[
            "apply",
            "--server-side",
            "--dry-run=server",
            "-f",
            "-",
            "-n",
            "{ns}",
        ],
        Some(m1),
    );
    assert_eq!(
        got.out,
        "configmap/ssa serverside-applied (server dry run)\n"
    );
    // Flag combinations kubectl refuses.
    env.same(
        &["apply", "--server-side", "--dry-run=client", "-f", "-"],
        Some(m1),
    );
    env.same(&["apply", "--force-conflicts", "-f", "-"], Some(m1));
}

/// `diff` output with the temporary directories and times normalised, and the values that
/// differ between two objects (uid, times, versions) blanked.
fn diff_text(s: &str) -> String {
    s.lines()
        .map(|l| {
            if l.starts_with("diff ") || l.starts_with("--- ") || l.starts_with("+++ ") {
                let file = l.split_whitespace().nth(1).unwrap_or_default();
                let name = Path::new(file)
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                format!("{} {name}", &l[..3])
            } else {
                let t = l.trim_start_matches(['+', '-', ' ']).trim_start();
                let volatile = ["uid:", "creationTimestamp:", "resourceVersion:", "time:"];
                if volatile.iter().any(|v| t.starts_with(v)) {
                    format!(
                        "{}{}",
                        &l[..l.len() - t.len()],
                        t.split(':').next().unwrap_or_default()
                    )
                } else {
                    l.to_string()
                }
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn diff_exit_codes_output_and_masked_secrets() {
    let env = Env::start();
    let cm = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  a: '1'\n";
    let cm2 = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: d\ndata:\n  a: '2'\n  b: x\n";
    // Absent object: everything is new.
    let (real, ours) = env.both(&["diff", "-f", "-", "-n", "{ns}"], Some(cm));
    assert_eq!(real.code, 1, "{real:?}");
    assert_eq!(ours.code, real.code, "{ours:?}");
    assert_eq!(diff_text(&ours.out), diff_text(&real.out));
    assert!(ours.out.contains("+  a: \"1\""), "{}", ours.out);
    // Applied: no differences.
    env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(cm));
    let got = env.same(&["diff", "-f", "-", "-n", "{ns}"], Some(cm));
    assert_eq!((got.code, got.out.as_str()), (0, ""));
    // Changed.
    let (real, ours) = env.both(&["diff", "-f", "-", "-n", "{ns}"], Some(cm2));
    assert_eq!((ours.code, real.code), (1, 1), "{ours:?}");
    assert_eq!(diff_text(&ours.out), diff_text(&real.out));
    assert!(
        ours.out.contains("-  a: \"1\"\n+  a: \"2\""),
        "{}",
        ours.out
    );
    // Server-side diff.
    let (real, ours) = env.both(
        &["diff", "--server-side", "-f", "-", "-n", "{ns}"],
        Some(cm2),
    );
    assert_eq!((ours.code, real.code), (1, 1), "{ours:?} {real:?}");
    // An error: exit status 2, nothing diffed.
    let bad = "apiVersion: v9\nkind: Foo\nmetadata:\n  name: x\n";
    let got = env.same(&["diff", "-f", "-", "-n", "{ns}"], Some(bad));
    assert_eq!(got.code, 2);
    // Secrets are masked.
    let s1 = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: MQ==\n  same: Mg==\n";
    let s2 = "apiVersion: v1\nkind: Secret\nmetadata:\n  name: s\ndata:\n  k: OQ==\n  same: Mg==\n";
    env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(s1));
    let (real, ours) = env.both(&["diff", "-f", "-", "-n", "{ns}"], Some(s2));
    assert_eq!((ours.code, real.code), (1, 1));
    assert!(
        ours.out.contains("*** (before)") && ours.out.contains("*** (after)"),
        "{}",
        ours.out
    );
    assert!(!ours.out.contains("OQ=="), "{}", ours.out);
    let strip_annotation = |s: &str| -> String {
        diff_text(s)
            .lines()
            .filter(|l| !l.contains("last-applied-configuration"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert_eq!(strip_annotation(&ours.out), strip_annotation(&real.out));
}

#[test]
fn create_and_replace() {
    let env = Env::start();
    let two = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c1\ndata:\n  a: '1'\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c2\n";
    let f = env.file("two.yaml", two);
    let f = f.to_str().unwrap();
    let got = env.same(&["create", "-f", f, "-n", "{ns}"], None);
    assert_eq!(got.out, "configmap/c1 created\nconfigmap/c2 created\n");
    let got = env.same(&["create", "-f", f, "-n", "{ns}"], None);
    assert_eq!(got.code, 1);
    assert!(got.err.contains("AlreadyExists"), "{}", got.err);
    env.same(&["create", "-f", f, "-n", "{ns}", "--dry-run=client"], None);
    env.same(
        &[
            "create",
            "-f",
            f,
            "-n",
            "{ns}",
            "-o",
            "name",
            "--dry-run=server",
        ],
        None,
    );
    env.same(&["create"], None);
    // --save-config keeps the annotation as apply would.
    let saved = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: saved\n";
    env.same(
        &["create", "--save-config", "-f", "-", "-n", "{ns}"],
        Some(saved),
    );
    assert_eq!(
        last_applied(&env.get(OURS, "configmap/saved")),
        last_applied(&env.get(REAL, "configmap/saved"))
    );
    // replace.
    let changed = two.replace("a: '1'", "a: '5'");
    let g = env.file("changed.yaml", &changed);
    let g = g.to_str().unwrap();
    let got = env.same(&["replace", "-f", g, "-n", "{ns}"], None);
    assert_eq!(got.out, "configmap/c1 replaced\nconfigmap/c2 replaced\n");
    assert_eq!(env.get(OURS, "configmap/c1")["data"]["a"], "5");
    let got = env.same(&["replace", "--force", "-f", g, "-n", "{ns}"], None);
    assert_eq!(
        got.out,
        "configmap \"c1\" deleted\nconfigmap \"c2\" deleted\nconfigmap/c1 replaced\nconfigmap/c2 replaced\n"
    );
    env.same(
        &["replace", "-f", g, "-n", "{ns}", "--dry-run=server"],
        None,
    );
    let missing = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nope\n";
    let got = env.same(&["replace", "-f", "-", "-n", "{ns}"], Some(missing));
    assert_eq!(got.code, 1);
    assert!(got.err.contains("NotFound"), "{}", got.err);
    env.same(&["replace"], None);
}

#[test]
fn malformed_manifests_apply_nothing_of_failed_documents() {
    let env = Env::start();
    let syntax = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: x\n";
    let multi_syntax = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s2\n bad: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s3\n";
    let multi_kind = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m1\n---\napiVersion: v9\nkind: Foo\nmetadata:\n  name: m2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m3\n";
    let multi_invalid = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v1\n---\nkind: ConfigMap\nmetadata:\n  name: v2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v3\n";
    let no_kind = "metadata:\n  name: x\n";
    let not_object = "- a\n- b\n";
    let server_invalid = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\n";
    for (name, text) in [
        ("syntax.yaml", syntax),
        ("multi-syntax.yaml", multi_syntax),
        ("multi-kind.yaml", multi_kind),
        ("multi-invalid.yaml", multi_invalid),
        ("no-kind.yaml", no_kind),
        ("not-object.yaml", not_object),
        ("server-invalid.yaml", server_invalid),
    ] {
        let p = env.file(name, text);
        let p = p.to_str().unwrap();
        let got = env.same(&["apply", "-f", p, "-n", "{ns}"], None);
        assert_eq!(got.code, 1, "{name}: {got:?}");
    }
    // What was created is the same, and nothing of a failed document.
    let names = |ns: &str| -> Vec<String> {
        env.server
            .get_items(&["configmaps", "-n", ns])
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    let ours = names(OURS);
    assert_eq!(ours, names(REAL));
    for created in ["s1", "m1", "m3", "v1"] {
        assert!(ours.contains(&created.to_string()), "{created} in {ours:?}");
    }
    for absent in ["s2", "s3", "v2", "v3", "a", "x"] {
        assert!(!ours.contains(&absent.to_string()), "{absent} in {ours:?}");
    }
}

#[test]
fn malformed_manifests_messages_create_and_directories() {
    let env = Env::start();
    let syntax = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: x\n";
    let no_kind = "metadata:\n  name: x\n";
    let multi_kind = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m1\n---\napiVersion: v9\nkind: Foo\nmetadata:\n  name: m2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m3\n";
    let multi_invalid = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v1\n---\nkind: ConfigMap\nmetadata:\n  name: v2\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: v3\n";
    // create -f goes on past failures and reports them as kubectl orders them.
    for (name, text) in [
        ("multi-kind.yaml", multi_kind),
        ("multi-invalid.yaml", multi_invalid),
    ] {
        let p = env.file(name, text);
        let p = p.to_str().unwrap();
        let got = env.same(&["create", "-f", p, "-n", "{ns}"], None);
        assert_eq!(got.code, 1, "{name}: {got:?}");
        let got = env.same(&["create", "-f", p, "-n", "{ns}"], None);
        assert!(got.err.contains("AlreadyExists"), "{name}: {got:?}");
    }
    // Messages of the common cases, word for word.
    let got = env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(syntax));
    assert_eq!(
        got.err,
        "error: error parsing STDIN: error converting YAML to JSON: yaml: line 4: did not find expected key\n"
    );
    let got = env.same(
        &["apply", "-f", "-", "-n", "{ns}"],
        Some("apiVersion: v9\nkind: Foo\nmetadata:\n  name: q\n"),
    );
    assert_eq!(
        got.err,
        "error: resource mapping not found for name: \"q\" namespace: \"\" from \"STDIN\": no matches for kind \"Foo\" in version \"v9\"\nensure CRDs are installed first\n"
    );
    let got = env.same(&["apply", "-f", "-", "-n", "{ns}"], Some(no_kind));
    assert!(
        got.err
            .contains("error validating data: [apiVersion not set, kind not set]"),
        "{}",
        got.err
    );
    // Other refusals.
    env.same(&["apply", "-f", "/nonexistent/x.yaml"], None);
    env.same(&["apply"], None);
    env.same(&["apply", "-f", "-"], Some(""));
    // A directory: only its manifests, recursively with -R.
    let dir = env.dir.path().join("d");
    std::fs::create_dir_all(dir.join("sub")).unwrap();
    std::fs::write(
        dir.join("a.yml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dir-a\n",
    )
    .unwrap();
    std::fs::write(dir.join("readme.txt"), "not a manifest").unwrap();
    std::fs::write(
        dir.join("sub/b.json"),
        r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dir-b"}}"#,
    )
    .unwrap();
    let d = dir.to_str().unwrap();
    let got = env.same(&["apply", "-f", d, "-n", "{ns}"], None);
    assert_eq!(got.out, "configmap/dir-a created\n");
    let got = env.same(&["apply", "-R", "-f", d, "-n", "{ns}"], None);
    assert_eq!(
        got.out,
        "configmap/dir-a unchanged\nconfigmap/dir-b created\n"
    );
}
