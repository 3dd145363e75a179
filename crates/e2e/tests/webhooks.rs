//! Dynamic admission webhooks and the authorization webhook against the real `rkube
//! server` and the real kubectl: an HTTPS webhook server runs inside the test (hyper +
//! rustls, certificate from a throwaway CA); webhook configurations are applied with
//! kubectl; the mutation shows in `kubectl get -o json`, the refusal in kubectl's error;
//! `failurePolicy` Fail/Ignore with a webhook that is down; `namespaceSelector` limits the
//! calls. `--authorization-mode=Webhook,RBAC` asks the webhook first: it allows `hooked`
//! to list pods and denies `blocked`, and its answers are cached (calls counted).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::process::Output;
use std::sync::Arc;
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};
use testkit::eventually;
use testkit::https::{HttpsServer, Request};
use testkit::{RkubeServer, TestCa};

const WEBHOOK_TOKEN: &str = "webhook-secret";

fn review_answer(review: &Value, response: Value) -> Value {
    let mut r = response;
    r["uid"] = review["request"]["uid"].clone();
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r})
}

fn answer(path: &str, authorization: Option<&str>, body: &Value) -> (u16, Value) {
    let req = &body["request"];
    match path {
        "/mutate" => {
            let mut ops = Vec::new();
            if !req["object"]["metadata"]["labels"].is_object() {
                ops.push(json!({"op": "add", "path": "/metadata/labels", "value": {}}));
            }
            ops.push(json!({"op": "add", "path": "/metadata/labels/webhook.rkube.test~1mutated", "value": "true"}));
            let patch =
                base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&ops).unwrap());
            (
                200,
                review_answer(
                    body,
                    json!({"allowed": true, "patchType": "JSONPatch", "patch": patch}),
                ),
            )
        }
        "/validate" => {
            let refused = req["object"]["data"].get("forbidden").is_some();
            let response = if refused {
                json!({"allowed": false, "status": {"code": 403, "message": "the data key \"forbidden\" is not allowed"}})
            } else if req["object"]["data"].get("suspicious").is_some() {
                json!({"allowed": true, "warnings": ["the data key \"suspicious\" is deprecated"]})
            } else {
                json!({"allowed": true})
            };
            (200, review_answer(body, response))
        }
        "/authorize" => {
            if authorization != Some(&format!("Bearer {WEBHOOK_TOKEN}")) {
                return (
                    401,
                    json!({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "Unauthorized", "code": 401}),
                );
            }
            let spec = &body["spec"];
            let ra = &spec["resourceAttributes"];
            let status = match (spec["user"].as_str(), ra["resource"].as_str()) {
                (Some("hooked"), Some("pods")) if ra["verb"] == "list" => {
                    json!({"allowed": true, "reason": "hooked may list pods"})
                }
                (Some("blocked"), Some("pods")) => {
                    json!({"allowed": false, "denied": true, "reason": "blocked by the test webhook"})
                }
                _ => json!({"allowed": false}),
            };
            (
                200,
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "status": status}),
            )
        }
        _ => (404, json!({})),
    }
}

/// The test's HTTPS webhook server: `/mutate` labels objects, `/validate` refuses
/// ConfigMaps with a `forbidden` data key, `/authorize` answers SubjectAccessReviews.
fn hook_server(ca: &TestCa) -> HttpsServer {
    HttpsServer::start(
        ca,
        Arc::new(|r: &Request<'_>| answer(r.path, r.authorization, r.body)),
    )
}

fn out(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).to_string()
}

fn err(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).to_string()
}

fn ca_bundle(ca: &TestCa) -> String {
    base64::engine::general_purpose::STANDARD.encode(std::fs::read(&ca.ca_file).unwrap())
}

fn apply(server: &RkubeServer, doc: &Value) -> Output {
    server.kubectl_stdin(
        Some("1.33"),
        &["apply", "-f", "-"],
        &serde_json::to_string(doc).unwrap(),
    )
}

fn apply_ok(server: &RkubeServer, doc: &Value) {
    let o = apply(server, doc);
    assert!(
        o.status.success(),
        "apply failed: {}{}\n{}",
        out(&o),
        err(&o),
        server.log_tail()
    );
}

fn configmap(ns: &str, name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns, "labels": labels}, "data": data})
}

fn get_json(server: &RkubeServer, args: &[&str]) -> Value {
    let mut a = vec!["get", "-o", "json"];
    a.extend_from_slice(args);
    serde_json::from_str(&server.kubectl_ok(Some("1.33"), &a)).unwrap()
}

#[test]
fn admission_webhooks_mutate_refuse_and_fail_as_configured() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "hooks");
    let mut hooks = hook_server(&ca);
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "hooked"]);
    k(&["label", "namespace", "hooked", "webhooks=on"]);
    k(&["create", "namespace", "plain"]);

    let rules = json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]);
    apply_ok(
        &server,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "label-configmaps"},
            "webhooks": [{
                "name": "label.rkube.test",
                "clientConfig": {"url": hooks.url("/mutate"), "caBundle": ca_bundle(&ca)},
                "rules": rules,
                "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        }),
    );
    apply_ok(
        &server,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "refuse-forbidden"},
            "webhooks": [{
                "name": "deny.rkube.test",
                "clientConfig": {"url": hooks.url("/validate"), "caBundle": ca_bundle(&ca)},
                "rules": rules,
                "namespaceSelector": {"matchLabels": {"webhooks": "on"}},
                "matchConditions": [{"name": "not-skipped",
                    "expression": "!has(object.metadata.labels) || !('skip-webhook' in object.metadata.labels)"}],
                "sideEffects": "None",
                "admissionReviewVersions": ["v1", "v1beta1"],
            }],
        }),
    );

    // The configuration reads back with upstream's defaults.
    let m = get_json(
        &server,
        &["mutatingwebhookconfiguration", "label-configmaps"],
    );
    let w = &m["webhooks"][0];
    assert_eq!(w["failurePolicy"], "Fail");
    assert_eq!(w["matchPolicy"], "Equivalent");
    assert_eq!(w["timeoutSeconds"], 10);
    assert_eq!(w["reinvocationPolicy"], "Never");
    assert_eq!(w["objectSelector"], json!({}));
    assert_eq!(w["rules"][0]["scope"], "*");
    let listed = k(&["get", "mutatingwebhookconfigurations"]);
    assert!(listed.contains("label-configmaps"), "{listed}");
    // Invalid configurations are refused with upstream's messages.
    let bad = apply(
        &server,
        &json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "bad"},
            "webhooks": [{"name": "bad", "clientConfig": {"url": "http://x"}, "sideEffects": "Some", "admissionReviewVersions": ["v1"]}],
        }),
    );
    assert!(!bad.status.success());
    assert!(
        err(&bad).contains("webhooks[0].name: Invalid value: \"bad\": should be a domain with at least three segments separated by dots"),
        "{}",
        err(&bad)
    );

    // The mutation: a labelled ConfigMap in the selected namespace (the configuration
    // reaches the webhook plugin through the watch cache, so the first one may be missed).
    let mut n = 0;
    eventually("the mutating webhook to label a ConfigMap", || {
        n += 1;
        let name = format!("c{n}");
        k(&[
            "create",
            "configmap",
            &name,
            "-n",
            "hooked",
            "--from-literal=a=b",
        ]);
        let cm = get_json(&server, &["configmap", &name, "-n", "hooked"]);
        cm["metadata"]["labels"]["webhook.rkube.test/mutated"] == "true"
    });
    assert!(hooks.count(|p, _| p == "/mutate") >= 1);
    let review = hooks
        .seen
        .lock()
        .unwrap()
        .iter()
        .rev()
        .find(|(p, _)| p == "/mutate")
        .map(|(_, b)| b.clone())
        .unwrap();
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    let r = &review["request"];
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(r["namespace"], "hooked");
    assert_eq!(r["resource"]["resource"], "configmaps");
    assert_eq!(r["kind"]["kind"], "ConfigMap");
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["options"]["kind"], "CreateOptions");
    assert!(
        r["userInfo"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:masters"))
    );

    // Not in a namespace the selector leaves out.
    k(&[
        "create",
        "configmap",
        "p1",
        "-n",
        "plain",
        "--from-literal=a=b",
    ]);
    let cm = get_json(&server, &["configmap", "p1", "-n", "plain"]);
    assert!(cm["metadata"]["labels"].is_null(), "{cm}");

    // A server-side dry run reaches webhooks without side effects: mutated, not stored.
    let dry = k(&[
        "create",
        "configmap",
        "dry",
        "-n",
        "hooked",
        "--from-literal=a=b",
        "--dry-run=server",
        "-o",
        "json",
    ]);
    let dry: Value = serde_json::from_str(&dry).unwrap();
    assert_eq!(
        dry["metadata"]["labels"]["webhook.rkube.test/mutated"],
        "true"
    );
    let gone = server.kubectl_v(Some("1.33"), &["get", "configmap", "dry", "-n", "hooked"]);
    assert!(!gone.status.success());

    // A CEL matchCondition keeps the validating webhook away from labelled objects.
    let calls_before = hooks.count(|p, _| p == "/validate");
    apply_ok(
        &server,
        &configmap(
            "hooked",
            "skipped",
            json!({"skip-webhook": "yes"}),
            json!({"forbidden": "x"}),
        ),
    );
    assert_eq!(hooks.count(|p, _| p == "/validate"), calls_before);

    // A webhook's warning, as the real kubectl shows it.
    let warned = apply(
        &server,
        &configmap("hooked", "warned", json!({}), json!({"suspicious": "x"})),
    );
    assert!(warned.status.success(), "{}", err(&warned));
    assert!(
        err(&warned).contains("Warning: the data key \"suspicious\" is deprecated"),
        "{}",
        err(&warned)
    );

    // The refusal, as the real kubectl shows it.
    let refused = apply(
        &server,
        &configmap("hooked", "bad", json!({}), json!({"forbidden": "x"})),
    );
    assert!(!refused.status.success());
    assert!(
        err(&refused).contains(
            "admission webhook \"deny.rkube.test\" denied the request: the data key \"forbidden\" is not allowed"
        ),
        "{}",
        err(&refused)
    );
    let missing = server.kubectl_v(Some("1.33"), &["get", "configmap", "bad", "-n", "hooked"]);
    assert!(err(&missing).contains("NotFound") || err(&missing).contains("not found"));
    // An update is validated too.
    let upd = server.kubectl_v(
        Some("1.33"),
        &[
            "patch",
            "configmap",
            "c1",
            "-n",
            "hooked",
            "-p",
            r#"{"data":{"forbidden":"y"}}"#,
        ],
    );
    assert!(!upd.status.success());
    assert!(err(&upd).contains("denied the request"), "{}", err(&upd));
    // Elsewhere the same ConfigMap is fine.
    apply_ok(
        &server,
        &configmap("plain", "bad", json!({}), json!({"forbidden": "x"})),
    );

    // A webhook that is down: failurePolicy Fail refuses, Ignore lets the request through.
    let down_port = testkit::free_port();
    let down = |policy: &str| {
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
            "metadata": {"name": "down"},
            "webhooks": [{
                "name": "down.rkube.test",
                "clientConfig": {"url": format!("https://127.0.0.1:{down_port}/validate"), "caBundle": ca_bundle(&ca)},
                "rules": rules,
                "objectSelector": {"matchLabels": {"test": "down"}},
                "failurePolicy": policy,
                "timeoutSeconds": 5,
                "sideEffects": "None",
                "admissionReviewVersions": ["v1"],
            }],
        })
    };
    apply_ok(&server, &down("Fail"));
    let want = format!(
        "Internal error occurred: failed calling webhook \"down.rkube.test\": failed to call webhook: Post \"https://127.0.0.1:{down_port}/validate?timeout=5s\": dial tcp 127.0.0.1:{down_port}: connect: connection refused"
    );
    let mut last = String::new();
    eventually("the failing webhook to refuse", || {
        let o = apply(
            &server,
            &configmap("plain", "downed", json!({"test": "down"}), json!({})),
        );
        last = err(&o);
        !o.status.success() && last.contains(&want)
    });
    assert!(last.contains(&want), "{last}");
    // Objects the selector leaves out are not affected.
    apply_ok(
        &server,
        &configmap("plain", "fine", json!({"test": "up"}), json!({})),
    );
    apply_ok(&server, &down("Ignore"));
    eventually("the ignored webhook to let the ConfigMap through", || {
        apply(
            &server,
            &configmap("plain", "downed", json!({"test": "down"}), json!({})),
        )
        .status
        .success()
    });

    // With the webhook server gone, the Fail webhooks refuse in the selected namespace...
    hooks.stop();
    let o = apply(&server, &configmap("hooked", "after", json!({}), json!({})));
    assert!(!o.status.success());
    assert!(
        err(&o).contains("failed calling webhook \"label.rkube.test\""),
        "{}",
        err(&o)
    );
    // ...and webhook configurations can still be removed (they never go to webhooks).
    k(&["delete", "mutatingwebhookconfiguration", "label-configmaps"]);
    k(&[
        "delete",
        "validatingwebhookconfiguration",
        "refuse-forbidden",
    ]);
    eventually("the ConfigMap to be admitted without webhooks", || {
        apply(&server, &configmap("hooked", "after", json!({}), json!({})))
            .status
            .success()
    });
}

#[test]
fn authorization_webhook_decides_first_and_is_cached() {
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new(dir.path(), "authz");
    let hooks = hook_server(&ca);
    let tokens = dir.path().join("tokens.csv");
    std::fs::write(
        &tokens,
        "tok-hooked,hooked,uid-hooked\ntok-blocked,blocked,uid-blocked\ntok-alice,alice,uid-alice\n",
    )
    .unwrap();
    let webhook_config = dir.path().join("authz-webhook.kubeconfig");
    std::fs::write(
        &webhook_config,
        format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: hook\n  cluster:\n    server: {}\n    certificate-authority: {}\nusers:\n- name: apiserver\n  user:\n    token: {WEBHOOK_TOKEN}\ncontexts:\n- name: hook\n  context:\n    cluster: hook\n    user: apiserver\ncurrent-context: hook\n",
            hooks.url("/authorize"),
            ca.ca_file.display()
        ),
    )
    .unwrap();
    let server = RkubeServer::start_with(&[
        "--token-auth-file",
        tokens.to_str().unwrap(),
        "--authorization-mode=Webhook,RBAC",
        "--authorization-webhook-config-file",
        webhook_config.to_str().unwrap(),
        "--authorization-webhook-cache-unauthorized-ttl=3s",
    ]);
    let hooked = server.user_kubeconfig("hooked", "    token: tok-hooked");
    let blocked = server.user_kubeconfig("blocked", "    token: tok-blocked");
    let alice = server.user_kubeconfig("alice", "    token: tok-alice");
    let pod_reviews = |user: &str| {
        hooks.count(|p, b| {
            p == "/authorize"
                && b["spec"]["user"] == user
                && b["spec"]["resourceAttributes"]["resource"] == "pods"
        })
    };

    // The webhook allows hooked to list pods; RBAC alone would not.
    let o = server.kubectl_with(&hooked, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out(&o).trim(), "yes", "{}", err(&o));
    assert_eq!(pod_reviews("hooked"), 1);
    let review = hooks
        .seen
        .lock()
        .unwrap()
        .iter()
        .find(|(_, b)| b["spec"]["user"] == "hooked")
        .map(|(_, b)| b.clone())
        .unwrap();
    assert_eq!(review["apiVersion"], "authorization.k8s.io/v1");
    assert_eq!(review["kind"], "SubjectAccessReview");
    assert_eq!(review["spec"]["uid"], "uid-hooked");
    assert!(
        review["spec"]["groups"]
            .as_array()
            .unwrap()
            .contains(&json!("system:authenticated"))
    );
    // Cached: the same question does not reach the webhook again.
    let o = server.kubectl_with(&hooked, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out(&o).trim(), "yes");
    let o = server.kubectl_with(&hooked, &["get", "pods"]);
    assert!(o.status.success(), "{}", err(&o));
    assert!(pod_reviews("hooked") <= 2, "{}", pod_reviews("hooked"));
    // Not everything: the webhook has no opinion, and RBAC says no.
    let o = server.kubectl_with(&hooked, &["auth", "can-i", "delete", "pods"]);
    assert_eq!(out(&o).trim(), "no");

    // blocked is denied, even with an RBAC binding that would allow it.
    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "clusterrolebinding",
            "view-all",
            "--clusterrole=view",
            "--user=blocked",
            "--user=alice",
        ],
    );
    let o = server.kubectl_with(&blocked, &["auth", "can-i", "list", "pods"]);
    let asked = Instant::now();
    assert_eq!(out(&o).trim(), "no - blocked by the test webhook");
    let before = pod_reviews("blocked");
    assert!(before >= 1);
    let o = server.kubectl_with(&blocked, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out(&o).trim(), "no - blocked by the test webhook");
    assert_eq!(pod_reviews("blocked"), before, "a denial is cached");
    // ...for --authorization-webhook-cache-unauthorized-ttl only.
    std::thread::sleep(
        (asked + Duration::from_millis(3500)).saturating_duration_since(Instant::now()),
    );
    let o = server.kubectl_with(&blocked, &["auth", "can-i", "list", "pods"]);
    assert_eq!(out(&o).trim(), "no - blocked by the test webhook");
    assert_eq!(pod_reviews("blocked"), before + 1);
    let o = server.kubectl_with(&blocked, &["get", "pods"]);
    assert!(!o.status.success());
    assert!(
        err(&o).contains(
            "pods is forbidden: User \"blocked\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\": blocked by the test webhook"
        ),
        "{}",
        err(&o)
    );

    // No opinion from the webhook: RBAC decides.
    let mut ok = false;
    eventually("RBAC to allow alice", || {
        let o = server.kubectl_with(&alice, &["auth", "can-i", "list", "pods"]);
        ok = out(&o).trim() == "yes";
        ok
    });
    let o = server.kubectl_with(&alice, &["auth", "can-i", "create", "pods"]);
    assert_eq!(out(&o).trim(), "no");
}

#[test]
fn authorization_webhook_flags_are_checked() {
    let e = testkit::server_start_error(&["--authorization-mode=Webhook"]);
    assert!(
        e.contains("authorization-mode Webhook's authorization config file not passed"),
        "{e}"
    );
    let e = testkit::server_start_error(&["--authorization-webhook-config-file=/nonexistent"]);
    assert!(
        e.contains("cannot specify --authorization-webhook-config-file without mode Webhook"),
        "{e}"
    );
}
