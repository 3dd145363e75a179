//! Defaulting per kind (upstream's `SetObjectDefaults_<Kind>` as in `defaults_test.go`)
//! and the registry strategies' create/update preparation.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

mod kinds_common;

use api::kinds::defaults;
use kinds_common::*;
use serde_json::{Value, json};

/// One case: an input object and `(path, expected value)` pairs after defaulting
/// (`null` expects the field to be absent).
struct Case {
    group: &'static str,
    kind: &'static str,
    input: Value,
    expect: Vec<(&'static str, Value)>,
}

fn check(cases: Vec<Case>, prepare: bool) {
    for c in cases {
        let out = if prepare {
            created(c.group, c.kind, &c.input)
        } else {
            defaulted(c.group, c.kind, &c.input)
        };
        for (path, want) in &c.expect {
            assert_eq!(
                at(&out, path),
                want,
                "{} {path}: got {}",
                c.kind,
                serde_json::to_string_pretty(&out).unwrap_or_default()
            );
        }
        // Defaulting is idempotent.
        let mut again = out.clone();
        defaults::apply(c.group, V1, c.kind, &mut again);
        assert_eq!(again, out, "{} defaults are not idempotent", c.kind);
    }
}

fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "nginx"}]})
}

#[test]
fn workloads() {
    check(
        vec![
            Case {
                group: "apps",
                kind: "Deployment",
                input: json!({"spec": {"template": {"spec": pod_spec()}}}),
                expect: vec![
                    ("spec/replicas", json!(1)),
                    ("spec/strategy/type", json!("RollingUpdate")),
                    ("spec/strategy/rollingUpdate/maxSurge", json!("25%")),
                    ("spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
                    ("spec/revisionHistoryLimit", json!(10)),
                    ("spec/progressDeadlineSeconds", json!(600)),
                    ("spec/template/spec/restartPolicy", json!("Always")),
                    ("spec/template/spec/dnsPolicy", json!("ClusterFirst")),
                    (
                        "spec/template/spec/terminationGracePeriodSeconds",
                        json!(30),
                    ),
                    (
                        "spec/template/spec/schedulerName",
                        json!("default-scheduler"),
                    ),
                    ("spec/template/spec/securityContext", json!({})),
                    // Only Pods (not templates) get enableServiceLinks.
                    ("spec/template/spec/enableServiceLinks", Value::Null),
                    (
                        "spec/template/spec/containers/0/imagePullPolicy",
                        json!("Always"),
                    ),
                    (
                        "spec/template/spec/containers/0/terminationMessagePath",
                        json!("/dev/termination-log"),
                    ),
                    (
                        "spec/template/spec/containers/0/terminationMessagePolicy",
                        json!("File"),
                    ),
                    ("spec/template/spec/containers/0/resources", json!({})),
                ],
            },
            Case {
                group: "apps",
                kind: "Deployment",
                input: json!({"spec": {
                    "replicas": 0,
                    "strategy": {"type": "Recreate"},
                    "revisionHistoryLimit": 2,
                    "template": {"spec": pod_spec()}
                }}),
                expect: vec![
                    ("spec/replicas", json!(0)),
                    ("spec/strategy", json!({"type": "Recreate"})),
                    ("spec/revisionHistoryLimit", json!(2)),
                ],
            },
            Case {
                group: "apps",
                kind: "Deployment",
                input: json!({"spec": {
                    "strategy": {"rollingUpdate": {"maxSurge": 2}},
                    "template": {"spec": pod_spec()}
                }}),
                expect: vec![
                    ("spec/strategy/type", json!("RollingUpdate")),
                    ("spec/strategy/rollingUpdate/maxSurge", json!(2)),
                    ("spec/strategy/rollingUpdate/maxUnavailable", json!("25%")),
                ],
            },
            Case {
                group: "apps",
                kind: "ReplicaSet",
                input: json!({"spec": {"template": {"spec": pod_spec()}}}),
                expect: vec![("spec/replicas", json!(1))],
            },
            Case {
                group: "apps",
                kind: "DaemonSet",
                input: json!({"spec": {"template": {"spec": pod_spec()}}}),
                expect: vec![
                    ("spec/updateStrategy/type", json!("RollingUpdate")),
                    ("spec/updateStrategy/rollingUpdate/maxUnavailable", json!(1)),
                    ("spec/updateStrategy/rollingUpdate/maxSurge", json!(0)),
                    ("spec/revisionHistoryLimit", json!(10)),
                    ("spec/replicas", Value::Null),
                ],
            },
            Case {
                group: "apps",
                kind: "DaemonSet",
                input: json!({"spec": {"updateStrategy": {"type": "OnDelete"}, "template": {"spec": pod_spec()}}}),
                expect: vec![("spec/updateStrategy", json!({"type": "OnDelete"}))],
            },
            Case {
                group: "apps",
                kind: "StatefulSet",
                input: json!({"spec": {
                    "template": {"spec": pod_spec()},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"]}}]
                }}),
                expect: vec![
                    ("spec/replicas", json!(1)),
                    ("spec/podManagementPolicy", json!("OrderedReady")),
                    ("spec/updateStrategy/type", json!("RollingUpdate")),
                    ("spec/updateStrategy/rollingUpdate/partition", json!(0)),
                    ("spec/revisionHistoryLimit", json!(10)),
                    (
                        "spec/persistentVolumeClaimRetentionPolicy",
                        json!({"whenDeleted": "Retain", "whenScaled": "Retain"}),
                    ),
                    (
                        "spec/volumeClaimTemplates/0/spec/volumeMode",
                        json!("Filesystem"),
                    ),
                    ("spec/volumeClaimTemplates/0/status/phase", json!("Pending")),
                ],
            },
            Case {
                group: "",
                kind: "ReplicationController",
                input: json!({"spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": pod_spec()}}}),
                expect: vec![
                    ("spec/replicas", json!(1)),
                    ("spec/selector", json!({"app": "x"})),
                    ("metadata/labels", json!({"app": "x"})),
                ],
            },
        ],
        false,
    );
}

#[test]
fn batch() {
    let template = json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "perl:5.34"}]}});
    check(
        vec![
            Case {
                group: "batch",
                kind: "Job",
                input: json!({"spec": {"template": template.clone()}}),
                expect: vec![
                    ("spec/completions", json!(1)),
                    ("spec/parallelism", json!(1)),
                    ("spec/backoffLimit", json!(6)),
                    ("spec/completionMode", json!("NonIndexed")),
                    ("spec/suspend", json!(false)),
                    ("spec/podReplacementPolicy", json!("TerminatingOrFailed")),
                    ("spec/manualSelector", Value::Null),
                    (
                        "spec/template/spec/containers/0/imagePullPolicy",
                        json!("IfNotPresent"),
                    ),
                ],
            },
            Case {
                group: "batch",
                kind: "Job",
                input: json!({"spec": {"parallelism": 3, "template": template.clone()}}),
                expect: vec![
                    ("spec/parallelism", json!(3)),
                    ("spec/completions", Value::Null),
                ],
            },
            Case {
                group: "batch",
                kind: "Job",
                input: json!({"spec": {
                    "completionMode": "Indexed", "completions": 4, "backoffLimitPerIndex": 1,
                    "template": template.clone()
                }}),
                expect: vec![
                    ("spec/parallelism", json!(1)),
                    ("spec/backoffLimit", json!(2147483647)),
                    ("spec/podReplacementPolicy", json!("TerminatingOrFailed")),
                ],
            },
            Case {
                group: "batch",
                kind: "Job",
                input: json!({"spec": {
                    "podFailurePolicy": {"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}]},
                    "template": template.clone()
                }}),
                expect: vec![
                    ("spec/podReplacementPolicy", json!("Failed")),
                    (
                        "spec/podFailurePolicy/rules/0/onPodConditions/0/status",
                        json!("True"),
                    ),
                ],
            },
            Case {
                group: "batch",
                kind: "CronJob",
                input: json!({"spec": {"schedule": "@hourly", "jobTemplate": {"spec": {"template": template}}}}),
                expect: vec![
                    ("spec/concurrencyPolicy", json!("Allow")),
                    ("spec/suspend", json!(false)),
                    ("spec/successfulJobsHistoryLimit", json!(3)),
                    ("spec/failedJobsHistoryLimit", json!(1)),
                    (
                        "spec/jobTemplate/spec/template/spec/dnsPolicy",
                        json!("ClusterFirst"),
                    ),
                    // The job template's own spec is not defaulted (upstream has no
                    // SetDefaults_JobTemplateSpec).
                    ("spec/jobTemplate/spec/backoffLimit", Value::Null),
                ],
            },
        ],
        false,
    );
}

#[test]
fn pods() {
    check(
        vec![
            Case {
                group: "",
                kind: "Pod",
                input: json!({"spec": {
                    "containers": [
                        {"name": "a", "image": "nginx:latest", "ports": [{"containerPort": 80}],
                         "resources": {"limits": {"cpu": "0.5", "memory": "128Mi"}},
                         "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
                         "readinessProbe": {"httpGet": {"port": 80}},
                         "livenessProbe": {"grpc": {"port": 9000}}},
                        {"name": "b", "image": "registry.local:5000/app:1.0"},
                        {"name": "c", "image": "app@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
                        {"name": "d", "image": "app", "imagePullPolicy": "Never"}
                    ],
                    "initContainers": [{"name": "i", "image": "busybox:1.36"}],
                    "volumes": [
                        {"name": "cm", "configMap": {"name": "x"}},
                        {"name": "s", "secret": {"secretName": "y"}},
                        {"name": "none"},
                        {"name": "hp", "hostPath": {"path": "/tmp"}},
                        {"name": "dapi", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}},
                        {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}},
                        {"name": "eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"]}}}}
                    ]
                }}),
                expect: vec![
                    ("spec/containers/0/imagePullPolicy", json!("Always")),
                    ("spec/containers/1/imagePullPolicy", json!("IfNotPresent")),
                    ("spec/containers/2/imagePullPolicy", json!("IfNotPresent")),
                    ("spec/containers/3/imagePullPolicy", json!("Never")),
                    (
                        "spec/initContainers/0/imagePullPolicy",
                        json!("IfNotPresent"),
                    ),
                    (
                        "spec/initContainers/0/terminationMessagePolicy",
                        json!("File"),
                    ),
                    ("spec/containers/0/ports/0/protocol", json!("TCP")),
                    // Requests default to limits, quantities in canonical form.
                    ("spec/containers/0/resources/limits/cpu", json!("500m")),
                    (
                        "spec/containers/0/resources/requests",
                        json!({"cpu": "500m", "memory": "128Mi"}),
                    ),
                    (
                        "spec/containers/0/env/0/valueFrom/fieldRef/apiVersion",
                        json!("v1"),
                    ),
                    (
                        "spec/containers/0/readinessProbe",
                        json!({
                            "httpGet": {"port": 80, "path": "/", "scheme": "HTTP"},
                            "timeoutSeconds": 1, "periodSeconds": 10,
                            "successThreshold": 1, "failureThreshold": 3
                        }),
                    ),
                    ("spec/containers/0/livenessProbe/grpc/service", json!("")),
                    ("spec/volumes/0/configMap/defaultMode", json!(420)),
                    ("spec/volumes/1/secret/defaultMode", json!(420)),
                    ("spec/volumes/2/emptyDir", json!({})),
                    ("spec/volumes/3/hostPath/type", json!("")),
                    ("spec/volumes/4/downwardAPI/defaultMode", json!(420)),
                    (
                        "spec/volumes/4/downwardAPI/items/0/fieldRef/apiVersion",
                        json!("v1"),
                    ),
                    ("spec/volumes/5/projected/defaultMode", json!(420)),
                    (
                        "spec/volumes/5/projected/sources/0/serviceAccountToken/expirationSeconds",
                        json!(3600),
                    ),
                    (
                        "spec/volumes/6/ephemeral/volumeClaimTemplate/spec/volumeMode",
                        json!("Filesystem"),
                    ),
                    ("spec/enableServiceLinks", json!(true)),
                    ("spec/restartPolicy", json!("Always")),
                    ("spec/dnsPolicy", json!("ClusterFirst")),
                    ("spec/schedulerName", json!("default-scheduler")),
                    ("spec/terminationGracePeriodSeconds", json!(30)),
                    ("spec/securityContext", json!({})),
                ],
            },
            Case {
                group: "",
                kind: "Pod",
                input: json!({"spec": {
                    "hostNetwork": true,
                    "containers": [{"name": "a", "image": "x:1", "ports": [{"containerPort": 8080}]}]
                }}),
                expect: vec![
                    // Host networking mirrors containerPort into hostPort.
                    ("spec/containers/0/ports/0/hostPort", json!(8080)),
                ],
            },
            Case {
                group: "",
                kind: "PodTemplate",
                input: json!({"template": {"spec": pod_spec()}}),
                expect: vec![
                    ("template/spec/restartPolicy", json!("Always")),
                    (
                        "template/spec/containers/0/imagePullPolicy",
                        json!("Always"),
                    ),
                ],
            },
        ],
        false,
    );
}

#[test]
fn services_and_networking() {
    check(
        vec![
            Case {
                group: "",
                kind: "Service",
                input: json!({"spec": {"selector": {"a": "b"}, "ports": [{"port": 80}, {"port": 53, "protocol": "UDP", "targetPort": "dns"}]}}),
                expect: vec![
                    ("spec/type", json!("ClusterIP")),
                    ("spec/sessionAffinity", json!("None")),
                    ("spec/internalTrafficPolicy", json!("Cluster")),
                    ("spec/ports/0/protocol", json!("TCP")),
                    ("spec/ports/0/targetPort", json!(80)),
                    ("spec/ports/1/protocol", json!("UDP")),
                    ("spec/ports/1/targetPort", json!("dns")),
                    ("spec/externalTrafficPolicy", Value::Null),
                ],
            },
            Case {
                group: "",
                kind: "Service",
                input: json!({"spec": {"type": "LoadBalancer", "sessionAffinity": "ClientIP", "ports": [{"port": 443}]}}),
                expect: vec![
                    ("spec/externalTrafficPolicy", json!("Cluster")),
                    ("spec/allocateLoadBalancerNodePorts", json!(true)),
                    (
                        "spec/sessionAffinityConfig/clientIP/timeoutSeconds",
                        json!(10800),
                    ),
                ],
            },
            Case {
                group: "",
                kind: "Service",
                input: json!({"spec": {"type": "ExternalName", "externalName": "example.com"}}),
                expect: vec![("spec/internalTrafficPolicy", Value::Null)],
            },
            Case {
                group: "",
                kind: "Endpoints",
                input: json!({"subsets": [{"addresses": [{"ip": "10.0.0.1"}], "ports": [{"port": 80}]}]}),
                expect: vec![("subsets/0/ports/0/protocol", json!("TCP"))],
            },
            Case {
                group: "discovery.k8s.io",
                kind: "EndpointSlice",
                input: json!({"addressType": "IPv4", "endpoints": [], "ports": [{"port": 80}]}),
                expect: vec![
                    ("ports/0/protocol", json!("TCP")),
                    ("ports/0/name", json!("")),
                ],
            },
        ],
        false,
    );
}

#[test]
fn config_storage_and_cluster_kinds() {
    check(
        vec![
            Case {
                group: "",
                kind: "Secret",
                input: json!({"data": {"k": "dg=="}}),
                expect: vec![("type", json!("Opaque"))],
            },
            Case {
                group: "",
                kind: "Secret",
                input: json!({"type": "kubernetes.io/tls"}),
                expect: vec![("type", json!("kubernetes.io/tls"))],
            },
            Case {
                group: "",
                kind: "Namespace",
                input: json!({"metadata": {"name": "team-a"}}),
                expect: vec![(
                    "metadata/labels",
                    json!({"kubernetes.io/metadata.name": "team-a"}),
                )],
            },
            Case {
                group: "",
                kind: "PersistentVolumeClaim",
                input: json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1.5Gi"}}}}),
                expect: vec![
                    ("spec/volumeMode", json!("Filesystem")),
                    ("spec/resources/requests/storage", json!("1536Mi")),
                    ("status/phase", json!("Pending")),
                ],
            },
            Case {
                group: "",
                kind: "PersistentVolume",
                input: json!({"spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/d"}}}),
                expect: vec![
                    ("spec/persistentVolumeReclaimPolicy", json!("Retain")),
                    ("spec/volumeMode", json!("Filesystem")),
                    ("spec/hostPath/type", json!("")),
                    ("status/phase", json!("Pending")),
                ],
            },
            Case {
                group: "",
                kind: "LimitRange",
                input: json!({"spec": {"limits": [
                    {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "64Mi"}},
                    {"type": "Pod", "max": {"cpu": "4"}}
                ]}}),
                expect: vec![
                    ("spec/limits/0/default", json!({"cpu": "2"})),
                    (
                        "spec/limits/0/defaultRequest",
                        json!({"cpu": "2", "memory": "64Mi"}),
                    ),
                    ("spec/limits/1/default", Value::Null),
                ],
            },
            Case {
                group: "",
                kind: "Node",
                input: json!({"status": {"capacity": {"cpu": "4", "memory": "8Gi"}}}),
                expect: vec![("status/allocatable", json!({"cpu": "4", "memory": "8Gi"}))],
            },
            Case {
                group: "scheduling.k8s.io",
                kind: "PriorityClass",
                input: json!({"value": 10}),
                expect: vec![("preemptionPolicy", json!("PreemptLowerPriority"))],
            },
            Case {
                group: "rbac.authorization.k8s.io",
                kind: "ClusterRoleBinding",
                input: json!({
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                    "subjects": [{"kind": "User", "name": "u"}, {"kind": "Group", "name": "g"}, {"kind": "ServiceAccount", "name": "s", "namespace": "n"}]
                }),
                expect: vec![
                    ("subjects/0/apiGroup", json!("rbac.authorization.k8s.io")),
                    ("subjects/1/apiGroup", json!("rbac.authorization.k8s.io")),
                    ("subjects/2/apiGroup", Value::Null),
                ],
            },
            Case {
                group: "apiextensions.k8s.io",
                kind: "CustomResourceDefinition",
                input: json!({"spec": {
                    "group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true}]
                }}),
                expect: vec![
                    ("spec/names/singular", json!("widget")),
                    ("spec/names/listKind", json!("WidgetList")),
                    ("spec/conversion/strategy", json!("None")),
                ],
            },
            Case {
                group: "apiextensions.k8s.io",
                kind: "CustomResourceDefinition",
                input: json!({"spec": {
                    "group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1", "served": true, "storage": true}],
                    "conversion": {"strategy": "Webhook", "webhook": {"clientConfig": {"service": {"namespace": "n", "name": "s"}}, "conversionReviewVersions": ["v1"]}}
                }}),
                expect: vec![(
                    "spec/conversion/webhook/clientConfig/service/port",
                    json!(443),
                )],
            },
        ],
        false,
    );
}

#[test]
fn create_preparation() {
    check(
        vec![
            Case {
                group: "",
                kind: "Namespace",
                input: json!({"metadata": {"name": "team-a"}, "status": {"phase": "Terminating"}}),
                expect: vec![
                    ("spec/finalizers", json!(["kubernetes"])),
                    ("status/phase", json!("Active")),
                    (
                        "metadata/labels",
                        json!({"kubernetes.io/metadata.name": "team-a"}),
                    ),
                ],
            },
            Case {
                group: "apps",
                kind: "Deployment",
                input: json!({"metadata": {"name": "d", "generation": 7}, "spec": {"template": {"spec": pod_spec()}}, "status": {"replicas": 3}}),
                expect: vec![("metadata/generation", json!(1)), ("status", json!({}))],
            },
            Case {
                group: "apps",
                kind: "ReplicaSet",
                input: json!({"metadata": {"name": "r"}, "spec": {"template": {"spec": pod_spec()}}}),
                expect: vec![("status", json!({"replicas": 0}))],
            },
            Case {
                group: "apps",
                kind: "DaemonSet",
                input: json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": pod_spec()}}}),
                expect: vec![(
                    "metadata/annotations/deprecated.daemonset.template.generation",
                    json!("1"),
                )],
            },
            Case {
                group: "",
                kind: "Pod",
                input: json!({"metadata": {"name": "p"}, "spec": {"containers": [
                    {"name": "c", "image": "x", "resources": {"requests": {"cpu": "100m"}}}
                ]}, "status": {"phase": "Running"}}),
                expect: vec![
                    ("status/phase", json!("Pending")),
                    ("status/qosClass", json!("Burstable")),
                ],
            },
            Case {
                group: "",
                kind: "Pod",
                input: json!({"metadata": {"name": "p"}, "spec": pod_spec()}),
                expect: vec![("status/qosClass", json!("BestEffort"))],
            },
            Case {
                group: "",
                kind: "Service",
                input: json!({"metadata": {"name": "s"}, "spec": {"clusterIP": "10.96.0.10", "ports": [{"port": 80}]}, "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}),
                expect: vec![
                    ("spec/clusterIPs", json!(["10.96.0.10"])),
                    ("spec/ipFamilyPolicy", json!("SingleStack")),
                    ("spec/ipFamilies", json!(["IPv4"])),
                    ("status", json!({"loadBalancer": {}})),
                ],
            },
            Case {
                group: "batch",
                kind: "Job",
                input: json!({
                    "metadata": {"name": "pi", "uid": "5e8c3b9a-1f2d-4c6e-9a7b-0d1e2f3a4b5c"},
                    "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "perl"}]}}}
                }),
                expect: vec![
                    (
                        "spec/selector",
                        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "5e8c3b9a-1f2d-4c6e-9a7b-0d1e2f3a4b5c"}}),
                    ),
                    (
                        "spec/template/metadata/labels",
                        json!({
                            "batch.kubernetes.io/controller-uid": "5e8c3b9a-1f2d-4c6e-9a7b-0d1e2f3a4b5c",
                            "batch.kubernetes.io/job-name": "pi",
                            "controller-uid": "5e8c3b9a-1f2d-4c6e-9a7b-0d1e2f3a4b5c",
                            "job-name": "pi"
                        }),
                    ),
                ],
            },
            Case {
                group: "apiextensions.k8s.io",
                kind: "CustomResourceDefinition",
                input: json!({"metadata": {"name": "widgets.example.com"}, "spec": {
                    "group": "example.com", "scope": "Namespaced",
                    "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1beta1", "served": true, "storage": false}, {"name": "v1", "served": true, "storage": true}]
                }}),
                expect: vec![("status/storedVersions", json!(["v1"]))],
            },
            Case {
                group: "",
                kind: "Node",
                input: json!({"metadata": {"name": "n1"}, "status": {"capacity": {"cpu": "2"}}}),
                // Nodes keep the status they register with.
                expect: vec![("status/capacity", json!({"cpu": "2"}))],
            },
        ],
        true,
    );
}

#[test]
fn update_preparation() {
    // Generation bumps on spec changes only; status is carried over from the old object.
    let old = created(
        "apps",
        "Deployment",
        &json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": pod_spec()}}}),
    );
    let mut old = old;
    set(
        &mut old,
        "status",
        json!({"replicas": 1, "observedGeneration": 1}),
    );

    let mut same = old.clone();
    set(&mut same, "status", json!({}));
    defaults::prepare_for_update("apps", V1, "Deployment", &mut same, &old);
    assert_eq!(at(&same, "metadata/generation"), &json!(1));
    assert_eq!(at(&same, "status/replicas"), &json!(1));

    let mut scaled = old.clone();
    set(&mut scaled, "spec/replicas", json!(3));
    defaults::prepare_for_update("apps", V1, "Deployment", &mut scaled, &old);
    assert_eq!(at(&scaled, "metadata/generation"), &json!(2));

    // The status subresource keeps everything but status from the old object.
    let mut status = old.clone();
    set(&mut status, "spec/replicas", json!(9));
    set(&mut status, "status/replicas", json!(4));
    defaults::prepare_for_status_update("apps", V1, "Deployment", &mut status, &old);
    assert_eq!(at(&status, "spec/replicas"), &json!(1));
    assert_eq!(at(&status, "status/replicas"), &json!(4));
    assert_eq!(at(&status, "metadata/generation"), &json!(1));
}

#[test]
fn odd_shapes_are_left_alone() {
    for (group, kind) in api_kinds() {
        for v in [
            json!(null),
            json!(1),
            json!("x"),
            json!([]),
            json!({"spec": 5}),
            json!({"spec": {"template": []}}),
        ] {
            let mut x = v.clone();
            defaults::apply(group, V1, kind, &mut x);
            defaults::prepare_for_create(group, V1, kind, &mut x);
            let old = x.clone();
            defaults::prepare_for_update(group, V1, kind, &mut x, &old);
            defaults::prepare_for_status_update(group, V1, kind, &mut x, &old);
        }
    }
}

fn api_kinds() -> Vec<(&'static str, &'static str)> {
    vec![
        ("", "Binding"),
        ("", "ConfigMap"),
        ("", "Endpoints"),
        ("", "Event"),
        ("", "LimitRange"),
        ("", "Namespace"),
        ("", "Node"),
        ("", "PersistentVolumeClaim"),
        ("", "PersistentVolume"),
        ("", "Pod"),
        ("", "PodTemplate"),
        ("", "ReplicationController"),
        ("", "ResourceQuota"),
        ("", "Secret"),
        ("", "ServiceAccount"),
        ("", "Service"),
        ("apps", "ControllerRevision"),
        ("apps", "DaemonSet"),
        ("apps", "Deployment"),
        ("apps", "ReplicaSet"),
        ("apps", "StatefulSet"),
        ("autoscaling", "Scale"),
        ("batch", "CronJob"),
        ("batch", "Job"),
        ("coordination.k8s.io", "Lease"),
        ("discovery.k8s.io", "EndpointSlice"),
        ("events.k8s.io", "Event"),
        ("policy", "Eviction"),
        ("policy", "PodDisruptionBudget"),
        ("rbac.authorization.k8s.io", "ClusterRoleBinding"),
        ("rbac.authorization.k8s.io", "ClusterRole"),
        ("rbac.authorization.k8s.io", "RoleBinding"),
        ("rbac.authorization.k8s.io", "Role"),
        ("scheduling.k8s.io", "PriorityClass"),
        ("apiextensions.k8s.io", "CustomResourceDefinition"),
    ]
}

#[test]
fn disabled_feature_fields_are_dropped() {
    let pod = json!({"metadata": {"name": "p"}, "spec": {
        "resources": {"limits": {"cpu": "1"}},
        "containers": [{"name": "c", "image": "x", "lifecycle": {"preStop": {"sleep": {"seconds": 1}}, "stopSignal": "SIGUSR1"}}],
        "volumes": [{"name": "v", "image": {"reference": "quay.io/x:1"}}]
    }});
    let out = created("", "Pod", &pod);
    assert_eq!(at(&out, "spec/resources"), &Value::Null);
    assert_eq!(
        at(&out, "spec/containers/0/lifecycle/stopSignal"),
        &Value::Null
    );
    assert_eq!(at(&out, "spec/volumes/0/image"), &Value::Null);
    // The volume is left without a source, which validation rejects (as upstream's does).
    assert_eq!(at(&out, "spec/volumes/0"), &json!({"name": "v"}));
    let errs = api::kinds::validate::create("", V1, "Pod", &out);
    assert!(
        errs.iter()
            .any(|e| e.to_string() == "spec.volumes[0]: Required value: must specify a volume type"),
        "{errs:?}"
    );

    let sts = json!({"metadata": {"name": "s"}, "spec": {
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 2}},
        "template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}
    }});
    let out = created("apps", "StatefulSet", &sts);
    assert_eq!(
        at(&out, "spec/updateStrategy/rollingUpdate"),
        &json!({"partition": 0})
    );

    // Kept on update when the old object already used the field.
    let mut old = created("apps", "StatefulSet", &sts);
    set(
        &mut old,
        "spec/updateStrategy/rollingUpdate/maxUnavailable",
        json!(2),
    );
    let mut new = old.clone();
    set(
        &mut new,
        "spec/updateStrategy/rollingUpdate/maxUnavailable",
        json!(3),
    );
    defaults::prepare_for_update("apps", V1, "StatefulSet", &mut new, &old);
    assert_eq!(
        at(&new, "spec/updateStrategy/rollingUpdate/maxUnavailable"),
        &json!(3)
    );
}
