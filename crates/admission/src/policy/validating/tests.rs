#![allow(clippy::unwrap_used, clippy::panic)]

use serde_json::json;

use super::*;
use crate::fake::FakeCluster;

fn policy(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": name, "uid": format!("uid-{name}"), "resourceVersion": spec.to_string()}, "spec": spec})
}

fn binding(name: &str, policy: &str, spec: Value) -> Value {
    let mut s = spec;
    s["policyName"] = json!(policy);
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": name}, "spec": s})
}

fn deployments_rule() -> Value {
    json!({"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"], "scope": "*"}]})
}

fn deployment(name: &str, replicas: i64, labels: Value) -> Attributes {
    Attributes {
        object: Some(
            json!({"metadata": {"name": name, "namespace": "default", "labels": labels}, "spec": {"replicas": replicas}}),
        ),
        user: auth::UserInfo::new("alice", ["system:authenticated"]),
        kind: crate::Gvk {
            group: "apps".into(),
            version: "v1".into(),
            kind: "Deployment".into(),
        },
        ..Attributes::on(Operation::Create, "apps", "deployments", "default", name)
    }
}

fn cluster() -> FakeCluster {
    let c = FakeCluster::new();
    c.put(
        "",
        "namespaces",
        json!({"metadata": {"name": "default", "labels": {"env": "dev"}}}),
    );
    c
}

async fn run(c: &FakeCluster, a: &Attributes) -> Result<(), ApiError> {
    ValidatingAdmissionPolicy::default().validate(a, c).await
}

#[tokio::test]
async fn deny_with_upstreams_message_and_code() {
    let c = cluster();
    c.put(GROUP, "validatingadmissionpolicies", policy("max-replicas", json!({
        "failurePolicy": "Fail", "matchConstraints": deployments_rule(),
        "validations": [
            {"expression": "object.spec.replicas <= 5"},
            {"expression": "object.metadata.name.startsWith('web')", "message": "names start with web", "reason": "Forbidden"},
        ],
    })));
    // A policy without a binding does nothing.
    run(&c, &deployment("api", 9, json!({}))).await.unwrap();
    c.put(
        GROUP,
        "validatingadmissionpolicybindings",
        binding(
            "max-replicas-binding",
            "max-replicas",
            json!({"validationActions": ["Deny"]}),
        ),
    );
    run(&c, &deployment("web", 3, json!({}))).await.unwrap();
    let e = run(&c, &deployment("web", 9, json!({}))).await.unwrap_err();
    assert_eq!(e.code, 422);
    assert_eq!(
        e.message,
        "deployments.apps \"web\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: failed expression: object.spec.replicas <= 5"
    );
    let e = run(&c, &deployment("api", 1, json!({}))).await.unwrap_err();
    assert_eq!(e.code, 403);
    assert!(
        e.message.ends_with("denied request: names start with web"),
        "{}",
        e.message
    );
    // Other resources are not matched.
    let mut pod = deployment("api", 9, json!({}));
    pod.resource.group = String::new();
    pod.resource.kind = "pods".into();
    run(&c, &pod).await.unwrap();
}

#[tokio::test]
async fn params_warn_audit_and_message_expressions() {
    let c = cluster();
    c.put(
        "",
        "configmaps",
        json!({"metadata": {"name": "limits", "namespace": "default"}, "data": {"max": "2"}}),
    );
    c.put(GROUP, "validatingadmissionpolicies", policy("p", json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": deployments_rule(),
        "variables": [{"name": "max", "expression": "int(params.data.max)"}],
        "validations": [{"expression": "object.spec.replicas <= variables.max",
            "messageExpression": "'replicas must be at most ' + string(variables.max)"}],
        "auditAnnotations": [{"key": "replicas", "valueExpression": "string(object.spec.replicas)"}],
    })));
    c.put(
        GROUP,
        "validatingadmissionpolicybindings",
        binding(
            "warn",
            "p",
            json!({
                "validationActions": ["Warn", "Audit"],
                "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
            }),
        ),
    );
    let a = deployment("web", 3, json!({}));
    run(&c, &a).await.unwrap();
    assert_eq!(
        a.warnings.list(),
        vec![
            "Validation failed for ValidatingAdmissionPolicy 'p' with binding 'warn': replicas must be at most 2"
        ]
    );
    let ann = a.audit_annotations.take();
    assert_eq!(ann["p/replicas"], "3");
    let failure: Value = serde_json::from_str(&ann[FAILURE_ANNOTATION]).unwrap();
    assert_eq!(
        failure,
        json!([{"message": "replicas must be at most 2", "policy": "p", "binding": "warn", "expressionIndex": 0, "validationActions": ["Warn", "Audit"]}])
    );
    // A missing parameter with Deny is a configuration error.
    c.put(
        GROUP,
        "validatingadmissionpolicybindings",
        binding(
            "warn",
            "p",
            json!({
                "validationActions": ["Deny"],
                "paramRef": {"name": "absent", "parameterNotFoundAction": "Deny"},
            }),
        ),
    );
    let e = run(&c, &deployment("web", 1, json!({}))).await.unwrap_err();
    assert!(e.message.ends_with("denied request: failed to configure binding: no params found for policy binding with `Deny` parameterNotFoundAction"), "{}", e.message);
    // With Allow, nothing is evaluated.
    c.put(
        GROUP,
        "validatingadmissionpolicybindings",
        binding(
            "warn",
            "p",
            json!({
                "validationActions": ["Deny"],
                "paramRef": {"name": "absent", "parameterNotFoundAction": "Allow"},
            }),
        ),
    );
    run(&c, &deployment("web", 100, json!({}))).await.unwrap();
}

#[tokio::test]
async fn conditions_selectors_and_failure_policies() {
    let c = cluster();
    c.put(GROUP, "validatingadmissionpolicies", policy("p", json!({
        "failurePolicy": "Fail",
        "matchConstraints": {"resourceRules": deployments_rule()["resourceRules"].clone(),
            "namespaceSelector": {"matchLabels": {"env": "dev"}}},
        "matchConditions": [{"name": "not-exempt", "expression": "!has(object.metadata.labels.exempt)"}],
        "validations": [{"expression": "object.spec.replicas < 3"}, {"expression": "object.spec.nothing == 1"}],
    })));
    c.put(
        GROUP,
        "validatingadmissionpolicybindings",
        binding(
            "b",
            "p",
            json!({
                "validationActions": ["Deny"],
                "matchResources": {"objectSelector": {"matchLabels": {"team": "a"}}},
            }),
        ),
    );
    // The binding's object selector narrows the policy.
    run(&c, &deployment("web", 9, json!({}))).await.unwrap();
    // matchConditions false: skipped.
    run(
        &c,
        &deployment("web", 9, json!({"team": "a", "exempt": "yes"})),
    )
    .await
    .unwrap();
    // An expression error denies under Fail.
    let e = run(&c, &deployment("web", 1, json!({"team": "a"})))
        .await
        .unwrap_err();
    assert!(
        e.message
            .contains("denied request: expression 'object.spec.nothing == 1' resulted in error: "),
        "{}",
        e.message
    );
    assert_eq!(e.code, 422);
    // Another namespace's labels do not match the selector.
    c.put(
        "",
        "namespaces",
        json!({"metadata": {"name": "prod", "labels": {"env": "prod"}}}),
    );
    let mut prod = deployment("web", 9, json!({"team": "a"}));
    prod.namespace = "prod".into();
    run(&c, &prod).await.unwrap();
    // Under Ignore the error is dropped.
    c.put(
        GROUP,
        "validatingadmissionpolicies",
        policy(
            "p",
            json!({
                "failurePolicy": "Ignore",
                "matchConstraints": deployments_rule(),
                "validations": [{"expression": "object.spec.nothing == 1"}],
            }),
        ),
    );
    run(&c, &deployment("web", 1, json!({"team": "a"})))
        .await
        .unwrap();
}
