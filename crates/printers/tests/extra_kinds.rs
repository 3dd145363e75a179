//! Printers of kinds the catalog does not serve yet (ingresses, network policies, storage
//! and runtime classes, webhook configurations, certificate signing requests, component
//! statuses), ready for when it does.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use api::catalog::{ResourceInfo, builtin};
use common::*;
use printers::{IncludeObject, has_printer, to_table};
use serde_json::{Value, json};

fn resource(group: &str, kind: &str) -> ResourceInfo {
    let mut r = builtin().into_iter().next().unwrap();
    r.group = group.to_string();
    r.version = "v1".to_string();
    r.kind = kind.to_string();
    r.plural = format!("{}s", kind.to_lowercase());
    r
}

fn row(group: &str, kind: &str, obj: &Value) -> (Vec<String>, Vec<Value>) {
    let r = resource(group, kind);
    assert!(has_printer(&r), "{kind}");
    let t = to_table(&r, &[obj], &IncludeObject::None.into(), now());
    (
        column_names(&t),
        t["rows"][0]["cells"].as_array().unwrap().clone(),
    )
}

fn obj(name: &str, rest: Value) -> Value {
    let mut o = json!({"metadata": meta(name, 10 * 365 * DAY)});
    for (k, v) in rest.as_object().unwrap() {
        o[k] = v.clone();
    }
    o
}

#[test]
fn ingresses() {
    let ing = obj(
        "test1",
        json!({
            "spec": {"ingressClassName": "foo",
                     "defaultBackend": {"service": {"name": "default-backend", "port": {"number": 80}}}},
            "status": {"loadBalancer": {"ingress": [{"ip": "2.3.4.5", "hostname": "localhost.localdomain"}]}}
        }),
    );
    let (cols, cells) = row("networking.k8s.io", "Ingress", &ing);
    assert_eq!(cols, ["Name", "Class", "Hosts", "Address", "Ports", "Age"]);
    assert_eq!(
        cells,
        [
            json!("test1"),
            json!("foo"),
            json!("*"),
            json!("2.3.4.5"),
            json!("80"),
            json!("10y")
        ]
    );
    let ing = obj(
        "hosts",
        json!({"spec": {"tls": [{"hosts": ["a.example.com"]}], "rules": [
            {"host": "a.example.com"}, {}, {"host": "b.example.com"}, {"host": "c.example.com"},
            {"host": "d.example.com"}
        ]}}),
    );
    let (_, cells) = row("networking.k8s.io", "Ingress", &ing);
    assert_eq!(
        cells[1..5],
        [
            json!("<none>"),
            json!("a.example.com,b.example.com,c.example.com + 2 more..."),
            json!(""),
            json!("80, 443")
        ]
    );

    let class = obj(
        "test1",
        json!({"spec": {"controller": "example.com/controller",
                        "parameters": {"apiGroup": "example.com", "kind": "customgroup", "name": "example"}}}),
    );
    let (cols, cells) = row("networking.k8s.io", "IngressClass", &class);
    assert_eq!(cols, ["Name", "Controller", "Parameters", "Age"]);
    assert_eq!(
        cells,
        [
            json!("test1"),
            json!("example.com/controller"),
            json!("customgroup.example.com/example"),
            json!("10y")
        ]
    );
}

#[test]
fn network_storage_runtime_admission() {
    let np = obj(
        "deny",
        json!({"spec": {"podSelector": {"matchLabels": {"app": "db"}}}}),
    );
    let (cols, cells) = row("networking.k8s.io", "NetworkPolicy", &np);
    assert_eq!(cols, ["Name", "Pod-Selector", "Age"]);
    assert_eq!(cells[1], "app=db");
    let all = obj("all", json!({"spec": {"podSelector": {}}}));
    assert_eq!(
        row("networking.k8s.io", "NetworkPolicy", &all).1[1],
        "<none>"
    );

    let mut sc = obj(
        "standard",
        json!({"provisioner": "rancher.io/local-path", "allowVolumeExpansion": true}),
    );
    sc["metadata"]["annotations"] = json!({"storageclass.kubernetes.io/is-default-class": "true"});
    let (cols, cells) = row("storage.k8s.io", "StorageClass", &sc);
    assert_eq!(
        cols,
        [
            "Name",
            "Provisioner",
            "ReclaimPolicy",
            "VolumeBindingMode",
            "AllowVolumeExpansion",
            "Age"
        ]
    );
    assert_eq!(
        cells,
        [
            json!("standard (default)"),
            json!("rancher.io/local-path"),
            json!("Delete"),
            json!("Immediate"),
            json!(true),
            json!("10y")
        ]
    );

    let rc = obj("gvisor", json!({"handler": "runsc"}));
    let (cols, cells) = row("node.k8s.io", "RuntimeClass", &rc);
    assert_eq!(cols, ["Name", "Handler", "Age"]);
    assert_eq!(cells[1], "runsc");

    let wh = obj("hooks", json!({"webhooks": [{"name": "a"}, {"name": "b"}]}));
    for kind in [
        "MutatingWebhookConfiguration",
        "ValidatingWebhookConfiguration",
    ] {
        let (cols, cells) = row("admissionregistration.k8s.io", kind, &wh);
        assert_eq!(cols, ["Name", "Webhooks", "Age"]);
        assert_eq!(cells, [json!("hooks"), json!(2), json!("10y")]);
    }
}

#[test]
fn certificate_signing_requests() {
    let csr = obj(
        "csr-1",
        json!({
            "spec": {"signerName": "kubernetes.io/kube-apiserver-client", "username": "alice",
                     "expirationSeconds": 86400},
            "status": {"conditions": [{"type": "Approved", "status": "True"}], "certificate": "LS0t"}
        }),
    );
    let (cols, cells) = row("certificates.k8s.io", "CertificateSigningRequest", &csr);
    assert_eq!(
        cols,
        [
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition"
        ]
    );
    assert_eq!(
        cells,
        [
            json!("csr-1"),
            json!("10y"),
            json!("kubernetes.io/kube-apiserver-client"),
            json!("alice"),
            json!("24h"),
            json!("Approved,Issued")
        ]
    );
    let denied = obj(
        "csr-2",
        json!({"status": {"conditions": [{"type": "Approved"}, {"type": "Denied"}, {"type": "Failed"}]}}),
    );
    let (_, cells) = row("certificates.k8s.io", "CertificateSigningRequest", &denied);
    assert_eq!(
        cells[2..],
        [
            json!("<none>"),
            json!(""),
            json!("<none>"),
            json!("Denied,Failed")
        ]
    );
    let pending = obj("csr-3", json!({}));
    assert_eq!(
        row("certificates.k8s.io", "CertificateSigningRequest", &pending).1[5],
        "Pending"
    );
}

#[test]
fn component_statuses() {
    let cs = obj(
        "etcd-0",
        json!({"conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}),
    );
    let (cols, cells) = row("", "ComponentStatus", &cs);
    assert_eq!(cols, ["Name", "Status", "Message", "Error"]);
    assert_eq!(
        cells,
        [json!("etcd-0"), json!("Healthy"), json!("ok"), json!("")]
    );
    let bad = obj(
        "scheduler",
        json!({"conditions": [{"type": "Healthy", "status": "False", "error": "connection refused"}]}),
    );
    assert_eq!(
        row("", "ComponentStatus", &bad).1[1..],
        [json!("Unhealthy"), json!(""), json!("connection refused")]
    );
    assert_eq!(
        row("", "ComponentStatus", &obj("x", json!({}))).1[1],
        "Unknown"
    );
}
