#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::json;

use super::*;
use crate::fake::FakeCluster;

fn attrs(
    op: Operation,
    group: &str,
    plural: &str,
    ns: &str,
    object: Value,
    old: Option<Value>,
) -> Attributes {
    let name = api::meta::name(&object).unwrap_or_default().to_string();
    Attributes {
        object: Some(object),
        old_object: old,
        user: auth::UserInfo::new("alice", ["system:authenticated"]),
        ..Attributes::on(op, group, plural, ns, &name)
    }
}

fn namespace(name: &str, labels: Value) -> Value {
    json!({"metadata": {"name": name, "labels": labels}})
}

fn pod(name: &str, image: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {"containers": [{"name": "c", "image": image}]}})
}

fn restricted_pod(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "securityContext": {"runAsNonRoot": true, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "i", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}})
}

fn cluster_with(ns: &str, labels: Value) -> FakeCluster {
    let c = FakeCluster::new();
    c.put("", "namespaces", namespace(ns, labels));
    c
}

const RESTRICTED_DETAIL: &str = "allowPrivilegeEscalation != false (container \"c\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"c\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"c\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"c\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")";

#[test]
fn labels_resolve_as_upstream() {
    let d = Policy::PRIVILEGED;
    let (p, errs) = policy_from_labels(
        &json!({"pod-security.kubernetes.io/enforce": "baseline", "pod-security.kubernetes.io/enforce-version": "v1.29"}),
        &d,
    );
    assert!(errs.is_empty());
    assert_eq!(p.enforce.to_string(), "baseline:v1.29");
    // warn follows a stricter enforce when not labelled; audit does not.
    assert_eq!(p.warn.to_string(), "baseline:v1.29");
    assert_eq!(p.audit.to_string(), "privileged:latest");
    let (p, errs) = policy_from_labels(
        &json!({"pod-security.kubernetes.io/enforce": "bogus", "pod-security.kubernetes.io/warn": "nope", "pod-security.kubernetes.io/audit-version": "v1.02"}),
        &d,
    );
    assert_eq!(p.enforce.level, Level::Restricted, "fails closed");
    assert_eq!(p.warn.level, Level::Privileged, "fails open");
    assert_eq!(errs.len(), 3);
    assert_eq!(
        errs[0].to_string(),
        "metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"bogus\": must be one of privileged, baseline, restricted"
    );
    assert_eq!(
        errs[1].to_string(),
        "metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: \"v1.02\": must be \"latest\" or \"v1.x\""
    );
    assert_eq!(Version::parse("v1.0"), Some(Version::Minor(0)));
    assert_eq!(Version::parse("v1.33"), Some(Version::Minor(33)));
    assert_eq!(Version::parse("v2.1"), None);
    assert_eq!(Version::parse("v1."), None);
}

#[tokio::test]
async fn enforce_refuses_and_warn_warns() {
    let plugin = PodSecurity::default();
    let cluster = cluster_with(
        "secure",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let a = attrs(
        Operation::Create,
        "",
        "pods",
        "secure",
        pod("web", "nginx"),
        None,
    );
    let e = plugin.validate(&a, &cluster).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert_eq!(
        e.message,
        format!(
            "pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": {RESTRICTED_DETAIL}"
        )
    );
    // No warning when refused; the audit annotation is there.
    assert!(a.warnings.list().is_empty());
    let ann = a.audit_annotations.take();
    assert_eq!(
        ann["pod-security.kubernetes.io/enforce-policy"],
        "restricted:latest"
    );
    assert!(!ann.contains_key("pod-security.kubernetes.io/audit-violations"));
    let ok = attrs(
        Operation::Create,
        "",
        "pods",
        "secure",
        restricted_pod("good"),
        None,
    );
    plugin.validate(&ok, &cluster).await.unwrap();

    let cluster = cluster_with(
        "lenient",
        json!({"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "baseline"}),
    );
    let a = attrs(
        Operation::Create,
        "",
        "pods",
        "lenient",
        pod("web", "nginx"),
        None,
    );
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(
        a.warnings.list(),
        vec![format!(
            "would violate PodSecurity \"restricted:latest\": {RESTRICTED_DETAIL}"
        )]
    );
    // Baseline audit passes: no audit violation.
    let ann = a.audit_annotations.take();
    assert!(!ann.contains_key("pod-security.kubernetes.io/audit-violations"));
    assert_eq!(
        ann["pod-security.kubernetes.io/enforce-policy"],
        "privileged:latest"
    );
}

#[tokio::test]
async fn updates_are_checked_only_when_images_change() {
    let plugin = PodSecurity::default();
    let cluster = cluster_with(
        "s",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let mut relabelled = pod("web", "nginx");
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    let a = attrs(
        Operation::Update,
        "",
        "pods",
        "s",
        relabelled,
        Some(pod("web", "nginx")),
    );
    plugin.validate(&a, &cluster).await.unwrap();
    let a = attrs(
        Operation::Update,
        "",
        "pods",
        "s",
        pod("web", "nginx:2"),
        Some(pod("web", "nginx")),
    );
    assert_eq!(plugin.validate(&a, &cluster).await.unwrap_err().code, 403);
    // The status subresource is never checked.
    let mut a = attrs(
        Operation::Update,
        "",
        "pods",
        "s",
        pod("web", "nginx:2"),
        Some(pod("web", "nginx")),
    );
    a.subresource = "status".into();
    plugin.validate(&a, &cluster).await.unwrap();
}

#[tokio::test]
async fn workloads_are_warned_about_never_refused() {
    let plugin = PodSecurity::default();
    let cluster = cluster_with(
        "s",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let deployment = json!({"metadata": {"name": "d"}, "spec": {"template": pod("", "nginx")}});
    let a = attrs(
        Operation::Create,
        "apps",
        "deployments",
        "s",
        deployment,
        None,
    );
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(
        a.warnings.list(),
        vec![format!(
            "would violate PodSecurity \"restricted:latest\": {RESTRICTED_DETAIL}"
        )]
    );
    let cronjob = json!({"metadata": {"name": "cj"}, "spec": {"jobTemplate": {"spec": {"template": pod("", "nginx")}}}});
    let a = attrs(Operation::Create, "batch", "cronjobs", "s", cronjob, None);
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(a.warnings.list().len(), 1);
}

#[tokio::test]
async fn namespace_labels_are_validated_and_checked_against_pods() {
    let plugin = PodSecurity::default();
    let cluster = FakeCluster::new();
    let bad = namespace("n", json!({"pod-security.kubernetes.io/enforce": "strict"}));
    let a = attrs(Operation::Create, "", "namespaces", "", bad, None);
    let e = plugin.validate(&a, &cluster).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "Namespace \"n\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"
    );
    // Raising enforce warns about the pods already there.
    for (name, image) in [("b", "x"), ("a", "x"), ("c", "x")] {
        let mut p = pod(name, image);
        p["metadata"]["namespace"] = json!("n");
        cluster.put("", "pods", p);
    }
    let mut good = restricted_pod("ok");
    good["metadata"]["namespace"] = json!("n");
    cluster.put("", "pods", good);
    let old = namespace("n", json!({}));
    let new = namespace(
        "n",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let a = attrs(
        Operation::Update,
        "",
        "namespaces",
        "",
        new.clone(),
        Some(old),
    );
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(
        a.warnings.list(),
        vec![
            "existing pods in namespace \"n\" violate the new PodSecurity enforce level \"restricted:latest\"".to_string(),
            "a (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile".to_string(),
        ]
    );
    // The same level again: nothing to say.
    let a = attrs(
        Operation::Update,
        "",
        "namespaces",
        "",
        new.clone(),
        Some(new),
    );
    plugin.validate(&a, &cluster).await.unwrap();
    assert!(a.warnings.list().is_empty());
}

#[tokio::test]
async fn configuration_defaults_and_exemptions() {
    let plugin = PodSecurity::from_config(Some(&json!({
        "apiVersion": "pod-security.admission.config.k8s.io/v1",
        "kind": "PodSecurityConfiguration",
        "defaults": {"enforce": "baseline", "warn": "restricted", "warn-version": "v1.30"},
        "exemptions": {"usernames": ["admin"], "namespaces": ["kube-system"], "runtimeClasses": ["kata"]},
    })))
    .unwrap();
    assert_eq!(plugin.defaults.enforce.to_string(), "baseline:latest");
    assert_eq!(plugin.defaults.warn.to_string(), "restricted:v1.30");
    let cluster = cluster_with("plain", json!({}));
    cluster.put("", "namespaces", namespace("kube-system", json!({})));
    let privileged = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "securityContext": {"privileged": true}}]}});
    let a = attrs(
        Operation::Create,
        "",
        "pods",
        "plain",
        privileged.clone(),
        None,
    );
    let e = plugin.validate(&a, &cluster).await.unwrap_err();
    assert!(e.message.contains("violates PodSecurity \"baseline:latest\": privileged (container \"c\" must not set securityContext.privileged=true)"), "{}", e.message);
    // Exempt namespace, user, runtime class.
    let a = attrs(
        Operation::Create,
        "",
        "pods",
        "kube-system",
        privileged.clone(),
        None,
    );
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(
        a.audit_annotations.take()["pod-security.kubernetes.io/exempt"],
        "namespace"
    );
    let mut a = attrs(
        Operation::Create,
        "",
        "pods",
        "plain",
        privileged.clone(),
        None,
    );
    a.user.name = "admin".into();
    plugin.validate(&a, &cluster).await.unwrap();
    let mut kata = privileged;
    kata["spec"]["runtimeClassName"] = json!("kata");
    let a = attrs(Operation::Create, "", "pods", "plain", kata, None);
    plugin.validate(&a, &cluster).await.unwrap();
    assert_eq!(
        a.audit_annotations.take()["pod-security.kubernetes.io/exempt"],
        "runtimeClass"
    );
    // Bad configurations.
    for bad in [
        json!({"apiVersion": "v1", "kind": "PodSecurityConfiguration"}),
        json!({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", "defaults": {"enforce": "strict"}}),
        json!({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", "exemptions": {"usernames": [""]}}),
        json!({"apiVersion": "pod-security.admission.config.k8s.io/v1", "kind": "PodSecurityConfiguration", "exemptions": {"namespaces": ["a", "a"]}}),
    ] {
        assert!(PodSecurity::from_config(Some(&bad)).is_err(), "{bad}");
    }
}

#[tokio::test]
async fn exempt_namespace_with_a_policy_warns() {
    let plugin = PodSecurity {
        exempt_namespaces: vec!["kube-system".into()],
        ..PodSecurity::default()
    };
    let ns = namespace(
        "kube-system",
        json!({"pod-security.kubernetes.io/enforce": "restricted"}),
    );
    let a = attrs(Operation::Create, "", "namespaces", "", ns, None);
    plugin.validate(&a, &FakeCluster::new()).await.unwrap();
    assert_eq!(
        a.warnings.list(),
        vec![
            "namespace \"kube-system\" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored"
        ]
    );
}
