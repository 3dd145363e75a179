//! The webhook plugins against a fake transport and an in-memory cluster.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine;
use serde_json::{Value, json};

use super::config::{Rule, Source};
use super::matching::rule_matches;
use super::*;
use crate::fake::FakeCluster;
use crate::{Attributes, Gvk, Operation, Plugin};

type Responder = dyn Fn(&Endpoint, &Value) -> Result<Response, String> + Send + Sync;

/// Records every call; answers with `respond`.
struct Fake {
    calls: Mutex<Vec<(Endpoint, Value, Duration)>>,
    respond: Box<Responder>,
}

impl Fake {
    fn new(
        respond: impl Fn(&Endpoint, &Value) -> Result<Response, String> + Send + Sync + 'static,
    ) -> Arc<Fake> {
        Arc::new(Fake {
            calls: Mutex::new(Vec::new()),
            respond: Box::new(respond),
        })
    }

    fn calls(&self) -> Vec<(Endpoint, Value, Duration)> {
        self.calls.lock().unwrap().clone()
    }
}

#[async_trait::async_trait]
impl Transport for Fake {
    async fn post(
        &self,
        endpoint: &Endpoint,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Response, String> {
        let review: Value = serde_json::from_slice(&body).unwrap();
        self.calls
            .lock()
            .unwrap()
            .push((endpoint.clone(), review.clone(), timeout));
        (self.respond)(endpoint, &review)
    }
}

/// An `AdmissionReview` answer to `review`.
fn answer(review: &Value, response: Value) -> Result<Response, String> {
    let mut r = response;
    r["uid"] = review["request"]["uid"].clone();
    Ok(Response {
        status: 200,
        body: serde_json::to_vec(&json!({
            "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": r,
        }))
        .unwrap(),
    })
}

fn allow(review: &Value) -> Result<Response, String> {
    answer(review, json!({"allowed": true}))
}

fn patch_b64(ops: Value) -> String {
    base64::engine::general_purpose::STANDARD.encode(serde_json::to_vec(&ops).unwrap())
}

fn gvk(group: &str, version: &str, kind: &str) -> Gvk {
    Gvk {
        group: group.into(),
        version: version.into(),
        kind: kind.into(),
    }
}

fn attrs(op: Operation, ns: &str, plural: &str, sub: &str, object: Option<Value>) -> Attributes {
    let kind = match plural {
        "configmaps" => "ConfigMap",
        "pods" => "Pod",
        "namespaces" => "Namespace",
        "nodes" => "Node",
        _ => "Thing",
    };
    Attributes {
        operation: op,
        kind: gvk("", "v1", kind),
        resource: gvk("", "v1", plural),
        subresource: sub.into(),
        namespace: ns.into(),
        name: object
            .as_ref()
            .and_then(|o| api::meta::name(o))
            .unwrap_or("x")
            .into(),
        object,
        old_object: None,
        user: auth::UserInfo::new("alice", ["system:authenticated"]),
        dry_run: false,
        options: Some(json!({"kind": "CreateOptions", "apiVersion": "meta.k8s.io/v1"})),
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

fn cm(name: &str, labels: Value, data: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default", "labels": labels}, "data": data})
}

fn webhook(name: &str, extra: Value) -> Value {
    let mut w = json!({
        "name": name,
        "clientConfig": {"url": "https://127.0.0.1:9443/hook"},
        "rules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"], "scope": "*"}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "failurePolicy": "Fail",
        "timeoutSeconds": 10,
        "namespaceSelector": {},
        "objectSelector": {},
    });
    for (k, v) in extra.as_object().unwrap() {
        w[k] = v.clone();
    }
    w
}

fn cluster_with(plural: &str, name: &str, webhooks: Vec<Value>) -> FakeCluster {
    let c = FakeCluster::new();
    c.put(
        "",
        "namespaces",
        json!({"metadata": {"name": "default", "labels": {"env": "dev"}}}),
    );
    c.put(
        "",
        "namespaces",
        json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}),
    );
    add_config(&c, plural, name, webhooks);
    c
}

fn add_config(c: &FakeCluster, plural: &str, name: &str, webhooks: Vec<Value>) {
    c.put(
        "admissionregistration.k8s.io",
        plural,
        json!({"metadata": {"name": name}, "webhooks": webhooks}),
    );
}

const M: &str = "mutatingwebhookconfigurations";
const V: &str = "validatingwebhookconfigurations";

#[test]
fn rules_match_as_upstream() {
    let rule = |ops: &[&str], groups: &[&str], versions: &[&str], res: &[&str], scope: &str| Rule {
        operations: ops.iter().map(|s| s.to_string()).collect(),
        api_groups: groups.iter().map(|s| s.to_string()).collect(),
        api_versions: versions.iter().map(|s| s.to_string()).collect(),
        resources: res.iter().map(|s| s.to_string()).collect(),
        scope: scope.into(),
    };
    let pod = attrs(Operation::Create, "default", "pods", "", None);
    let status = attrs(Operation::Update, "default", "pods", "status", None);
    let node = attrs(Operation::Create, "", "nodes", "", None);
    let ns = attrs(Operation::Create, "", "namespaces", "", None);
    let cases: Vec<(Rule, &Attributes, bool)> = vec![
        (
            rule(&["CREATE"], &[""], &["v1"], &["pods"], "*"),
            &pod,
            true,
        ),
        (rule(&["*"], &["*"], &["*"], &["*"], "*"), &pod, true),
        (
            rule(&["UPDATE"], &[""], &["v1"], &["pods"], "*"),
            &pod,
            false,
        ),
        (
            rule(&["CREATE"], &["apps"], &["v1"], &["pods"], "*"),
            &pod,
            false,
        ),
        (
            rule(&["CREATE"], &[""], &["v2"], &["pods"], "*"),
            &pod,
            false,
        ),
        (rule(&["*"], &[""], &["v1"], &["pods"], "*"), &status, false),
        (rule(&["*"], &[""], &["v1"], &["*"], "*"), &status, false),
        (
            rule(&["*"], &[""], &["v1"], &["pods/status"], "*"),
            &status,
            true,
        ),
        (
            rule(&["*"], &[""], &["v1"], &["pods/*"], "*"),
            &status,
            true,
        ),
        (
            rule(&["*"], &[""], &["v1"], &["*/status"], "*"),
            &status,
            true,
        ),
        (rule(&["*"], &[""], &["v1"], &["*/*"], "*"), &status, true),
        (rule(&["*"], &[""], &["v1"], &["*/*"], "*"), &pod, true),
        (
            rule(&["*"], &[""], &["v1"], &["pods/status"], "*"),
            &pod,
            false,
        ),
        (
            rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
            &pod,
            true,
        ),
        (
            rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
            &node,
            false,
        ),
        (
            rule(&["*"], &["*"], &["*"], &["*"], "Namespaced"),
            &ns,
            false,
        ),
        (rule(&["*"], &["*"], &["*"], &["*"], "Cluster"), &node, true),
        (rule(&["*"], &["*"], &["*"], &["*"], "Cluster"), &ns, true),
        (rule(&["*"], &["*"], &["*"], &["*"], "Cluster"), &pod, false),
    ];
    for (i, (r, a, want)) in cases.iter().enumerate() {
        assert_eq!(rule_matches(r, a), *want, "case {i}: {r:?}");
    }
}

#[tokio::test]
async fn mutating_patch_is_applied_and_the_request_is_upstreams() {
    let c = cluster_with(M, "m", vec![webhook("label.example.com", json!({}))]);
    let t = Fake::new(|_, review| {
        answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch_b64(json!([
                {"op": "add", "path": "/metadata/labels/mutated", "value": "yes"},
                {"op": "add", "path": "/unknownField", "value": 1},
            ])), "warnings": ["labels were added"],
            "auditAnnotations": {"mutated": "yes", "Bad Key!": "dropped"}}),
        )
    });
    let p = MutatingWebhook::new(t.clone());
    let mut a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({"a": "b"}), json!({"k": "v"}))),
    );
    a.user.uid = "u-1".into();
    p.admit(&mut a, &c).await.unwrap();
    let obj = a.object.as_ref().unwrap();
    assert_eq!(obj["metadata"]["labels"]["mutated"], "yes");
    assert!(obj.get("unknownField").is_none(), "{obj}");
    // The warning reaches the client, the annotation the audit event (under the
    // webhook's name; an invalid key is dropped).
    assert_eq!(a.warnings.list(), vec!["labels were added"]);
    let ann = a.audit_annotations.take();
    assert_eq!(ann.len(), 1, "{ann:?}");
    assert_eq!(ann["label.example.com/mutated"], "yes");

    let calls = t.calls();
    assert_eq!(calls.len(), 1);
    let (endpoint, review, timeout) = &calls[0];
    assert_eq!(endpoint.url, "https://127.0.0.1:9443/hook?timeout=10s");
    assert_eq!(*timeout, Duration::from_secs(10));
    assert_eq!(review["apiVersion"], "admission.k8s.io/v1");
    assert_eq!(review["kind"], "AdmissionReview");
    let r = &review["request"];
    assert_eq!(r["uid"].as_str().unwrap().len(), 36);
    assert_eq!(
        r["kind"],
        json!({"group": "", "version": "v1", "kind": "ConfigMap"})
    );
    assert_eq!(
        r["resource"],
        json!({"group": "", "version": "v1", "resource": "configmaps"})
    );
    assert_eq!(r["requestKind"], r["kind"]);
    assert_eq!(r["requestResource"], r["resource"]);
    assert!(r.get("subResource").is_none());
    assert_eq!(r["name"], "c1");
    assert_eq!(r["namespace"], "default");
    assert_eq!(r["operation"], "CREATE");
    assert_eq!(
        r["userInfo"],
        json!({"username": "alice", "uid": "u-1", "groups": ["system:authenticated"]})
    );
    assert_eq!(r["object"]["data"], json!({"k": "v"}));
    assert_eq!(r["oldObject"], Value::Null);
    assert_eq!(r["dryRun"], false);
    assert_eq!(r["options"]["kind"], "CreateOptions");
}

#[tokio::test]
async fn patches_apply_in_order_and_if_needed_webhooks_are_reinvoked() {
    // a (IfNeeded) runs first; b changes the object afterwards, so a runs again.
    let c = cluster_with(
        M,
        "m",
        vec![
            webhook("a.example.com", json!({"reinvocationPolicy": "IfNeeded"})),
            webhook("b.example.com", json!({})),
        ],
    );
    let t = Fake::new(|_, review| {
        let labels = &review["request"]["object"]["metadata"]["labels"];
        let ops = if labels.get("b").is_some() && labels.get("seen-b").is_none() {
            json!([{"op": "add", "path": "/metadata/labels/seen-b", "value": "1"}])
        } else if labels.get("b").is_none() {
            json!([{"op": "add", "path": "/metadata/labels/b", "value": "1"}])
        } else {
            json!([])
        };
        answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch_b64(ops)}),
        )
    });
    let p = MutatingWebhook::new(t.clone());
    let mut a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    p.admit(&mut a, &c).await.unwrap();
    // Round 0: a adds b=1 (change; nothing invoked before), b adds seen-b (change: a is
    // to be reinvoked). Round 1: a again (no change). b is not IfNeeded.
    assert_eq!(t.calls().len(), 3);
    let labels = &a.object.as_ref().unwrap()["metadata"]["labels"];
    assert_eq!(labels, &json!({"b": "1", "seen-b": "1"}));
}

#[tokio::test]
async fn validating_denials_carry_upstreams_message_and_code() {
    let c = cluster_with(V, "v", vec![webhook("deny.example.com", json!({}))]);
    for (status, code, message) in [
        (
            json!({"message": "key forbidden is not allowed", "code": 403}),
            403,
            "admission webhook \"deny.example.com\" denied the request: key forbidden is not allowed",
        ),
        (
            json!({"reason": "NotAllowed"}),
            400,
            "admission webhook \"deny.example.com\" denied the request: NotAllowed",
        ),
        (
            Value::Null,
            400,
            "admission webhook \"deny.example.com\" denied the request without explanation",
        ),
        (
            json!({"message": "m", "code": 200}),
            400,
            "admission webhook \"deny.example.com\" denied the request: m",
        ),
    ] {
        let status2 = status.clone();
        let t = Fake::new(move |_, review| {
            answer(review, json!({"allowed": false, "status": status2.clone()}))
        });
        let p = ValidatingWebhook::new(t);
        let a = attrs(
            Operation::Create,
            "default",
            "configmaps",
            "",
            Some(cm("c1", json!({}), json!({"forbidden": "x"}))),
        );
        let e = p.validate(&a, &c).await.unwrap_err();
        assert_eq!(e.code, code, "{status}");
        assert_eq!(e.message, message);
        let st = e.to_status();
        assert_eq!(st["kind"], "Status");
        assert_eq!(st["status"], "Failure");
        assert_eq!(st["code"], code);
        assert_eq!(st["message"], message);
    }
}

#[tokio::test]
async fn failure_policy_fail_and_ignore() {
    let refused = |_: &Endpoint, _: &Value| -> Result<Response, String> {
        Err("Post \"https://127.0.0.1:9443/hook?timeout=10s\": dial tcp 127.0.0.1:9443: connect: connection refused".into())
    };
    let a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    // Fail (the default): an internal error naming the webhook.
    let c = cluster_with(V, "v", vec![webhook("down.example.com", json!({}))]);
    let e = ValidatingWebhook::new(Fake::new(refused))
        .validate(&a, &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, 500);
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"down.example.com\": failed to call webhook: Post \"https://127.0.0.1:9443/hook?timeout=10s\": dial tcp 127.0.0.1:9443: connect: connection refused"
    );
    assert_eq!(e.to_status()["reason"], "InternalError");
    let mut ma = a.clone();
    let cm_ = cluster_with(M, "m", vec![webhook("down.example.com", json!({}))]);
    let e = MutatingWebhook::new(Fake::new(refused))
        .admit(&mut ma, &cm_)
        .await
        .unwrap_err();
    assert_eq!(e.code, 500);
    // Ignore: the request goes on.
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "down.example.com",
            json!({"failurePolicy": "Ignore"}),
        )],
    );
    ValidatingWebhook::new(Fake::new(refused))
        .validate(&a, &c)
        .await
        .unwrap();
    // A non-2xx answer and a malformed one are failures to call too.
    let c = cluster_with(V, "v", vec![webhook("bad.example.com", json!({}))]);
    let e = ValidatingWebhook::new(Fake::new(|_, _| {
        Ok(Response {
            status: 500,
            body: b"boom".to_vec(),
        })
    }))
    .validate(&a, &c)
    .await
    .unwrap_err();
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"bad.example.com\": failed to call webhook: an error on the server (\"boom\") has prevented the request from succeeding"
    );
    let e = ValidatingWebhook::new(Fake::new(|_, review| {
        let mut r = answer(review, json!({"allowed": true})).unwrap();
        r.body = String::from_utf8(r.body)
            .unwrap()
            .replace(review["request"]["uid"].as_str().unwrap(), "other")
            .into_bytes();
        Ok(r)
    }))
    .validate(&a, &c)
    .await
    .unwrap_err();
    assert!(
        e.message.contains(
            "failed calling webhook \"bad.example.com\": received invalid webhook response: expected response.uid="
        ),
        "{}",
        e.message
    );
    let e = ValidatingWebhook::new(Fake::new(|_, review| {
        answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch_b64(json!([]))}),
        )
    }))
    .validate(&a, &c)
    .await
    .unwrap_err();
    assert!(
        e.message.ends_with(
            "received invalid webhook response: validating webhook may not return response.patch"
        ),
        "{}",
        e.message
    );
}

#[tokio::test]
async fn dry_run_reaches_only_webhooks_without_side_effects() {
    let mut a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    a.dry_run = true;
    let c = cluster_with(
        V,
        "v",
        vec![webhook("some.example.com", json!({"sideEffects": "Some"}))],
    );
    let t = Fake::new(|_, review| allow(review));
    let e = ValidatingWebhook::new(t.clone())
        .validate(&a, &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "admission webhook \"some.example.com\" does not support dry run"
    );
    assert!(t.calls().is_empty());
    // Whatever the failure policy.
    let c = cluster_with(
        M,
        "m",
        vec![webhook(
            "unknown.example.com",
            json!({"sideEffects": "Unknown", "failurePolicy": "Ignore"}),
        )],
    );
    let e = MutatingWebhook::new(t.clone())
        .admit(&mut a.clone(), &c)
        .await
        .unwrap_err();
    assert_eq!(e.code, 400);
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "ok.example.com",
            json!({"sideEffects": "NoneOnDryRun"}),
        )],
    );
    ValidatingWebhook::new(t.clone())
        .validate(&a, &c)
        .await
        .unwrap();
    assert_eq!(t.calls()[0].1["request"]["dryRun"], true);
}

#[tokio::test]
async fn selectors_limit_the_calls() {
    let c = cluster_with(
        V,
        "v",
        vec![
            webhook(
                "ns.example.com",
                json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}}),
            ),
            webhook(
                "obj.example.com",
                json!({"objectSelector": {"matchExpressions": [{"key": "checked", "operator": "Exists"}]}}),
            ),
        ],
    );
    let t = Fake::new(|_, review| allow(review));
    let p = ValidatingWebhook::new(t.clone());
    let names = |t: &Fake| -> Vec<String> {
        t.calls()
            .iter()
            .map(|(e, r, _)| format!("{}:{}", e.url, r["request"]["namespace"]))
            .collect()
    };
    // default (env=dev), no label: nothing called.
    let a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    p.validate(&a, &c).await.unwrap();
    assert!(t.calls().is_empty());
    // prod: the namespace webhook.
    let mut a2 = a.clone();
    a2.namespace = "prod".into();
    p.validate(&a2, &c).await.unwrap();
    assert_eq!(t.calls().len(), 1);
    // The old object's labels count too.
    let mut a3 = a.clone();
    a3.operation = Operation::Update;
    a3.old_object = Some(cm("c1", json!({"checked": "1"}), json!({})));
    p.validate(&a3, &c).await.unwrap();
    assert_eq!(t.calls().len(), 2, "{:?}", names(&t));
    // A missing namespace is a 404, only for webhooks whose rules match.
    let mut a4 = a.clone();
    a4.namespace = "gone".into();
    let e = p.validate(&a4, &c).await.unwrap_err();
    assert_eq!(e.code, 404);
    assert_eq!(e.message, "namespaces \"gone\" not found");
    let mut a5 = attrs(Operation::Create, "gone", "pods", "", Some(json!({})));
    a5.kind = gvk("", "v1", "Pod");
    p.validate(&a5, &c).await.unwrap();
    // A Namespace is matched on its own labels.
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "ns.example.com",
            json!({"namespaceSelector": {"matchLabels": {"env": "prod"}}, "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["namespaces"], "scope": "*"}]}),
        )],
    );
    let t = Fake::new(|_, review| allow(review));
    let p = ValidatingWebhook::new(t.clone());
    let ns = |labels: Value| {
        attrs(
            Operation::Create,
            "",
            "namespaces",
            "",
            Some(json!({"metadata": {"name": "new", "labels": labels}})),
        )
    };
    p.validate(&ns(json!({"env": "dev"})), &c).await.unwrap();
    assert!(t.calls().is_empty());
    p.validate(&ns(json!({"env": "prod"})), &c).await.unwrap();
    assert_eq!(t.calls().len(), 1);
}

#[tokio::test]
async fn webhook_configurations_are_exempt() {
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "all.example.com",
            json!({"rules": [{"operations": ["*"], "apiGroups": ["*"], "apiVersions": ["*"], "resources": ["*/*"], "scope": "*"}]}),
        )],
    );
    let t = Fake::new(|_, review| answer(review, json!({"allowed": false})));
    let p = ValidatingWebhook::new(t.clone());
    let mut a = attrs(
        Operation::Delete,
        "",
        "validatingwebhookconfigurations",
        "",
        None,
    );
    a.kind = gvk(
        "admissionregistration.k8s.io",
        "v1",
        "ValidatingWebhookConfiguration",
    );
    a.resource = gvk(
        "admissionregistration.k8s.io",
        "v1",
        "validatingwebhookconfigurations",
    );
    p.validate(&a, &c).await.unwrap();
    assert!(t.calls().is_empty());
    // Everything else is sent.
    let a = attrs(Operation::Delete, "", "nodes", "", None);
    assert_eq!(p.validate(&a, &c).await.unwrap_err().code, 400);
}

#[tokio::test]
async fn services_resolve_to_endpoints_then_cluster_ip() {
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "svc.example.com",
            json!({"clientConfig": {"service": {"namespace": "default", "name": "hook", "path": "/validate", "port": 443}, "caBundle": base64::engine::general_purpose::STANDARD.encode("PEM")}, "timeoutSeconds": 3}),
        )],
    );
    c.put(
        "",
        "services",
        json!({"metadata": {"name": "hook", "namespace": "default"}, "spec": {"type": "ClusterIP", "clusterIP": "10.43.0.20", "ports": [{"name": "https", "port": 443, "targetPort": 8443}]}}),
    );
    let t = Fake::new(|_, review| allow(review));
    let p = ValidatingWebhook::new(t.clone());
    let a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    p.validate(&a, &c).await.unwrap();
    let (e, _, timeout) = &t.calls()[0];
    assert_eq!(
        e,
        &Endpoint {
            url: "https://hook.default.svc:443/validate?timeout=3s".into(),
            connect: Some("10.43.0.20:443".into()),
            ca_bundle: b"PEM".to_vec(),
        }
    );
    assert_eq!(*timeout, Duration::from_secs(3));
    c.put(
        "",
        "endpoints",
        json!({"metadata": {"name": "hook", "namespace": "default"}, "subsets": [{"addresses": [{"ip": "192.168.1.7"}], "ports": [{"name": "https", "port": 8443}]}]}),
    );
    p.validate(&a, &c).await.unwrap();
    assert_eq!(t.calls()[1].0.connect.as_deref(), Some("192.168.1.7:8443"));
    // A missing service is a failure to call.
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "svc.example.com",
            json!({"clientConfig": {"service": {"namespace": "default", "name": "nope", "port": 443}}}),
        )],
    );
    let p = ValidatingWebhook::new(t.clone());
    let e = p.validate(&a, &c).await.unwrap_err();
    assert_eq!(
        e.message,
        "Internal error occurred: failed calling webhook \"svc.example.com\": failed to call webhook: Post \"https://nope.default.svc:443/?timeout=10s\": service \"nope\" not found"
    );
}

#[tokio::test]
async fn mutating_errors_are_upstreams() {
    let a = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({}), json!({}))),
    );
    let c = cluster_with(M, "m", vec![webhook("m.example.com", json!({}))]);
    let run = |resp: Value| {
        let c = &c;
        let mut a = a.clone();
        async move {
            MutatingWebhook::new(Fake::new(move |_, review| answer(review, resp.clone())))
                .admit(&mut a, c)
                .await
                .map(|_| a.object.unwrap())
        }
    };
    let e = run(json!({"allowed": true, "patch": patch_b64(json!([]))}))
        .await
        .unwrap_err();
    assert!(e.message.ends_with(
        "received invalid webhook response: webhook returned response.patch but not response.patchType"
    ));
    let e = run(json!({"allowed": true, "patchType": "JSONPatch", "patch": patch_b64(json!([{"op": "remove", "path": "/nope"}]))}))
        .await
        .unwrap_err();
    assert_eq!(e.code, 500);
    assert!(
        e.message.starts_with("Internal error occurred: "),
        "{}",
        e.message
    );
    let e = run(
        json!({"allowed": false, "status": {"code": 422, "reason": "Invalid", "message": "bad"}}),
    )
    .await
    .unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(e.to_status()["reason"], "Invalid");
    assert_eq!(
        e.message,
        "admission webhook \"m.example.com\" denied the request: bad"
    );
    // A delete has no object to patch.
    let mut d = attrs(Operation::Delete, "default", "configmaps", "", None);
    let c = cluster_with(
        M,
        "m",
        vec![webhook(
            "m.example.com",
            json!({"rules": [{"operations": ["DELETE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}]}),
        )],
    );
    let e = MutatingWebhook::new(Fake::new(|_, review| {
        answer(
            review,
            json!({"allowed": true, "patchType": "JSONPatch", "patch": patch_b64(json!([{"op": "add", "path": "/x", "value": 1}]))}),
        )
    }))
    .admit(&mut d, &c)
    .await
    .unwrap_err();
    assert_eq!(
        e.message,
        "Internal error occurred: admission webhook \"m.example.com\" attempted to modify the object, which is not supported for this operation"
    );
}

#[tokio::test]
async fn source_reparses_only_on_change() {
    let c = cluster_with(V, "v", vec![webhook("a.example.com", json!({}))]);
    let s = Source::new(false);
    let one = s.hooks(&c).await.unwrap();
    let two = s.hooks(&c).await.unwrap();
    assert!(Arc::ptr_eq(&one, &two));
    add_config(&c, V, "a-first", vec![webhook("b.example.com", json!({}))]);
    let three = s.hooks(&c).await.unwrap();
    assert!(!Arc::ptr_eq(&one, &three));
    // Configurations in name order.
    let names: Vec<&str> = three.iter().map(|h| h.uid.as_str()).collect();
    assert_eq!(names, ["a-first/b.example.com/0", "v/a.example.com/0"]);
}

#[tokio::test]
async fn match_conditions_are_cel() {
    let c = cluster_with(
        V,
        "v",
        vec![webhook(
            "cond.example.com",
            json!({"matchConditions": [
                {"name": "not-system", "expression": "!request.userInfo.username.startsWith('system:')"},
                {"name": "labelled", "expression": "has(object.metadata.labels) && 'check' in object.metadata.labels"},
            ]}),
        )],
    );
    let t = Fake::new(|_, review| allow(review));
    let p = ValidatingWebhook::new(t.clone());
    let labelled = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c1", json!({"check": "yes"}), json!({}))),
    );
    p.validate(&labelled, &c).await.unwrap();
    assert_eq!(t.calls().len(), 1);
    // One condition false: not called.
    let plain = attrs(
        Operation::Create,
        "default",
        "configmaps",
        "",
        Some(cm("c2", json!({}), json!({}))),
    );
    p.validate(&plain, &c).await.unwrap();
    let mut system = labelled.clone();
    system.user.name = "system:admin".into();
    p.validate(&system, &c).await.unwrap();
    assert_eq!(t.calls().len(), 1);
    // An evaluation error fails closed under the default failure policy.
    let broken = cluster_with(
        V,
        "v",
        vec![webhook(
            "broken.example.com",
            json!({"matchConditions": [{"name": "bad", "expression": "object.nope.deeper == 1"}]}),
        )],
    );
    let p = ValidatingWebhook::new(t.clone());
    let e = p.validate(&labelled, &broken).await.unwrap_err();
    assert!(
        e.message.contains(
            "failed calling webhook \"broken.example.com\": failed to evaluate match conditions"
        ),
        "{}",
        e.message
    );
}
