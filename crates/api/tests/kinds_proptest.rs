//! Arbitrary JSON never panics in defaulting, the strategies' preparation, validation
//! or the decode checks, for every built-in kind.

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

mod kinds_common;

use api::kinds::{defaults, validate};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

const KINDS: &[(&str, &str)] = &[
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
];

/// Keys the validators and defaulters look at, so random objects reach deep code.
const KEYS: &[&str] = &[
    "metadata",
    "name",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "generation",
    "spec",
    "status",
    "template",
    "selector",
    "matchLabels",
    "matchExpressions",
    "key",
    "operator",
    "values",
    "replicas",
    "strategy",
    "type",
    "rollingUpdate",
    "maxSurge",
    "maxUnavailable",
    "updateStrategy",
    "containers",
    "initContainers",
    "ephemeralContainers",
    "image",
    "ports",
    "containerPort",
    "hostPort",
    "protocol",
    "port",
    "targetPort",
    "nodePort",
    "env",
    "value",
    "valueFrom",
    "fieldRef",
    "fieldPath",
    "resourceFieldRef",
    "resource",
    "divisor",
    "resources",
    "limits",
    "requests",
    "cpu",
    "memory",
    "volumes",
    "volumeMounts",
    "mountPath",
    "emptyDir",
    "configMap",
    "secret",
    "hostPath",
    "path",
    "projected",
    "sources",
    "items",
    "persistentVolumeClaim",
    "claimName",
    "livenessProbe",
    "readinessProbe",
    "httpGet",
    "exec",
    "command",
    "tcpSocket",
    "grpc",
    "securityContext",
    "runAsUser",
    "capabilities",
    "restartPolicy",
    "dnsPolicy",
    "dnsConfig",
    "affinity",
    "tolerations",
    "topologySpreadConstraints",
    "clusterIP",
    "clusterIPs",
    "ipFamilies",
    "ipFamilyPolicy",
    "sessionAffinity",
    "externalName",
    "data",
    "binaryData",
    "immutable",
    "finalizers",
    "rules",
    "verbs",
    "apiGroups",
    "resources",
    "nonResourceURLs",
    "roleRef",
    "subjects",
    "kind",
    "apiGroup",
    "schedule",
    "timeZone",
    "jobTemplate",
    "completions",
    "parallelism",
    "completionMode",
    "backoffLimit",
    "backoffLimitPerIndex",
    "podFailurePolicy",
    "onExitCodes",
    "onPodConditions",
    "successPolicy",
    "group",
    "names",
    "plural",
    "singular",
    "scope",
    "versions",
    "served",
    "storage",
    "schema",
    "openAPIV3Schema",
    "properties",
    "additionalProperties",
    "x-kubernetes-int-or-string",
    "subresources",
    "scale",
    "conversion",
    "webhook",
    "clientConfig",
    "addressType",
    "endpoints",
    "addresses",
    "minAvailable",
    "holderIdentity",
    "leaseDurationSeconds",
    "preemptionPolicy",
    "involvedObject",
    "reason",
    "eventTime",
    "series",
    "count",
    "capacity",
    "allocatable",
    "accessModes",
    "volumeClaimTemplates",
    "hard",
    "scopeSelector",
    "max",
    "min",
    "default",
    "defaultRequest",
    "podCIDR",
    "podCIDRs",
    "taints",
    "effect",
    "subsets",
    "target",
    "revision",
    "serviceName",
    "podManagementPolicy",
    "ordinals",
];

const STRINGS: &[&str] = &[
    "",
    "a",
    "A_b",
    "-x",
    "my-name",
    "1",
    "0",
    "-1",
    "10%",
    "200%",
    "1Gi",
    "0.5",
    "1e3",
    "100m",
    "abc",
    "Always",
    "Never",
    "OnFailure",
    "None",
    "ClusterIP",
    "NodePort",
    "LoadBalancer",
    "ExternalName",
    "RollingUpdate",
    "Recreate",
    "OnDelete",
    "Indexed",
    "NonIndexed",
    "TCP",
    "UDP",
    "IPv4",
    "IPv6",
    "FQDN",
    "10.0.0.1",
    "::1",
    "10.0.0.0/8",
    "* * * * *",
    "@every 1h",
    "TZ=UTC * * * * *",
    "Europe/Berlin",
    "In",
    "NotIn",
    "Exists",
    "Namespaced",
    "Cluster",
    "object",
    "string",
    "integer",
    "example.com",
    "v1",
    "apps/v1",
    "Pod",
    "Role",
    "ClusterRole",
    "ServiceAccount",
    "User",
    "Webhook",
    "/",
    "/a/../b",
    "..",
    "a=b",
    "\u{0}",
    "é",
    "kubernetes.io/x",
    "x/y/z",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        prop_oneof![
            Just(0i64),
            Just(-1),
            Just(1),
            Just(65536),
            Just(i64::from(i32::MAX) + 1),
            Just(i64::MAX),
            Just(i64::MIN),
            any::<i64>(),
        ]
        .prop_map(|n| json!(n)),
        prop_oneof![Just(0.5f64), Just(-0.0), Just(1e300), any::<f64>()]
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        proptest::sample::select(STRINGS).prop_map(|s| json!(s)),
        "[ -~]{0,12}".prop_map(Value::String),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 96, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((proptest::sample::select(KEYS), inner), 0..6).prop_map(|kvs| {
                let mut m = Map::new();
                for (k, v) in kvs {
                    m.insert(k.to_string(), v);
                }
                Value::Object(m)
            }),
        ]
    })
}

/// Valid-ish objects whose inner values get replaced by arbitrary JSON.
fn bases() -> Vec<(&'static str, &'static str, Value)> {
    let pod_spec = json!({
        "containers": [{
            "name": "c", "image": "nginx",
            "ports": [{"containerPort": 80, "name": "http"}],
            "env": [{"name": "A", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu", "divisor": "1m"}}}],
            "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "500m"}},
            "volumeMounts": [{"name": "v", "mountPath": "/v"}],
            "livenessProbe": {"httpGet": {"port": "http", "path": "/"}},
            "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}
        }],
        "volumes": [{"name": "v", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p"}]}}],
        "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "In", "values": ["v"]}]}]}}},
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoSchedule"}],
        "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"a": "b"}}}]
    });
    let template = json!({"metadata": {"labels": {"a": "b"}}, "spec": pod_spec});
    let mut job_template = template.clone();
    job_template["spec"]["restartPolicy"] = json!("Never");
    let selector = json!({"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "a", "operator": "In", "values": ["b"]}]});
    vec![
        (
            "",
            "Pod",
            json!({"metadata": {"name": "p", "namespace": "d"}, "spec": pod_spec}),
        ),
        (
            "apps",
            "Deployment",
            json!({"metadata": {"name": "d"}, "spec": {"selector": selector, "template": template, "strategy": {"rollingUpdate": {"maxSurge": "10%"}}}}),
        ),
        (
            "apps",
            "StatefulSet",
            json!({"metadata": {"name": "s"}, "spec": {"selector": selector, "template": template, "volumeClaimTemplates": [{"metadata": {"name": "x"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}),
        ),
        (
            "apps",
            "DaemonSet",
            json!({"metadata": {"name": "d"}, "spec": {"selector": selector, "template": template}}),
        ),
        (
            "batch",
            "Job",
            json!({"metadata": {"name": "j", "uid": "u"}, "spec": {"completionMode": "Indexed", "completions": 3, "backoffLimitPerIndex": 1, "podFailurePolicy": {"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}, "template": job_template}}),
        ),
        (
            "batch",
            "CronJob",
            json!({"metadata": {"name": "c"}, "spec": {"schedule": "*/5 * * * *", "timeZone": "UTC", "jobTemplate": {"spec": {"template": job_template}}}}),
        ),
        (
            "",
            "Service",
            json!({"metadata": {"name": "s"}, "spec": {"type": "LoadBalancer", "clusterIP": "10.0.0.1", "ports": [{"name": "a", "port": 80, "nodePort": 30000}], "loadBalancerSourceRanges": ["10.0.0.0/8"]}}),
        ),
        (
            "",
            "PersistentVolume",
            json!({"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "nfs": {"server": "s", "path": "/p"}, "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Exists"}]}]}}}}),
        ),
        (
            "",
            "ResourceQuota",
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"pods": "1"}, "scopeSelector": {"matchExpressions": [{"scopeName": "PriorityClass", "operator": "In", "values": ["x"]}]}}}),
        ),
        (
            "",
            "LimitRange",
            json!({"metadata": {"name": "l"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "1"}, "min": {"cpu": "1m"}, "maxLimitRequestRatio": {"cpu": "2"}}]}}),
        ),
        (
            "",
            "Node",
            json!({"metadata": {"name": "n"}, "spec": {"podCIDRs": ["10.0.0.0/24"], "taints": [{"key": "k", "effect": "NoSchedule"}]}, "status": {"capacity": {"cpu": "1"}}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            json!({"metadata": {"name": "r"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}], "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}}),
        ),
        (
            "discovery.k8s.io",
            "EndpointSlice",
            json!({"metadata": {"name": "e"}, "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}], "ports": [{"port": 80}]}),
        ),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "ws", "kind": "W"}, "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}}, "subresources": {"scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}}, "additionalPrinterColumns": [{"name": "A", "type": "string", "jsonPath": ".spec.a"}]}]}}),
        ),
        (
            "events.k8s.io",
            "Event",
            json!({"metadata": {"name": "e", "namespace": "d"}, "eventTime": "2024-01-01T00:00:00Z", "series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:00Z"}, "reportingController": "c", "reportingInstance": "i", "action": "a", "reason": "r", "type": "Normal", "regarding": {"kind": "Pod", "namespace": "d"}}),
        ),
        (
            "",
            "Event",
            json!({"metadata": {"name": "e", "namespace": "d"}, "involvedObject": {"namespace": "d"}, "reason": "r", "source": {"component": "c"}}),
        ),
        (
            "policy",
            "PodDisruptionBudget",
            json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "10%", "selector": selector}}),
        ),
    ]
}

/// Every path (as keys/indices) in `v`.
fn paths(v: &Value, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    out.push(prefix.clone());
    match v {
        Value::Object(m) => {
            for (k, c) in m {
                prefix.push(k.clone());
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        Value::Array(a) => {
            for (i, c) in a.iter().enumerate() {
                prefix.push(i.to_string());
                paths(c, prefix, out);
                prefix.pop();
            }
        }
        _ => {}
    }
}

fn replace_at(v: &mut Value, path: &[String], x: Value) {
    let mut cur = v;
    for k in path {
        cur = match cur {
            Value::Object(m) => match m.get_mut(k) {
                Some(c) => c,
                None => return,
            },
            Value::Array(a) => match k.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(c) => c,
                None => return,
            },
            _ => return,
        };
    }
    *cur = x;
}

fn exercise(group: &str, kind: &str, obj: &Value, old: &Value) {
    let _ = validate::decode_errors(group, "v1", kind, obj);
    let _ = validate::create(group, "v1", kind, obj);
    let _ = validate::update(group, "v1", kind, obj, old);
    let _ = validate::update(group, "v1", kind, old, obj);
    let mut d = obj.clone();
    defaults::apply(group, "v1", kind, &mut d);
    let mut c = d.clone();
    defaults::prepare_for_create(group, "v1", kind, &mut c);
    let _ = validate::create(group, "v1", kind, &c);
    let mut u = d.clone();
    defaults::prepare_for_update(group, "v1", kind, &mut u, old);
    let _ = validate::update(group, "v1", kind, &u, old);
    let mut s = d.clone();
    defaults::prepare_for_status_update(group, "v1", kind, &mut s, old);
    if kind == "Pod" {
        let mut e = d;
        defaults::prepare_for_ephemeral_containers_update(&mut e, old);
        let _ = validate::pod_ephemeral_containers_update(&e, old);
        let _ = validate::pod_ephemeral_containers_update(obj, old);
    }
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let rule = validate::name_rule(group, kind);
    let _ = validate::name_errors(rule, name, false);
    let _ = validate::name_errors(rule, name, true);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_json_never_panics(k in 0..KINDS.len(), obj in arb_json(), old in arb_json()) {
        let (group, kind) = KINDS[k];
        exercise(group, kind, &obj, &old);
    }

    #[test]
    fn mutated_objects_never_panic(
        b in 0..17usize,
        pick in any::<prop::sample::Index>(),
        x in arb_json(),
        delete in any::<bool>(),
    ) {
        let bases = bases();
        let (group, kind, base) = &bases[b % bases.len()];
        let mut all = Vec::new();
        paths(base, &mut Vec::new(), &mut all);
        let path = pick.get(&all).clone();
        let mut obj = base.clone();
        if delete && !path.is_empty() {
            replace_at(&mut obj, &path, Value::Null);
        } else {
            replace_at(&mut obj, &path, x);
        }
        exercise(group, kind, &obj, base);
        exercise(group, kind, base, &obj);
    }
}

#[test]
fn bases_are_valid() {
    for (group, kind, base) in bases() {
        let errs = kinds_common::create_errors(group, kind, &base);
        assert!(errs.is_empty(), "{kind}: {errs:?}");
    }
}

/// serde_json parses at most 128 levels; such depths must not exhaust the stack.
#[test]
fn deep_nesting_is_fine() {
    let mut schema = json!({"type": "object"});
    for _ in 0..120 {
        schema = json!({
            "type": "object",
            "properties": {"a": schema},
            "allOf": [{"properties": {"a": {"type": "object"}}}]
        });
    }
    let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "ws", "kind": "W"}, "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    let t = std::time::Instant::now();
    exercise(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &crd,
        &crd,
    );
    eprintln!("deep crd: {:?}", t.elapsed());
    let mut deep = json!(1);
    for i in 0..126 {
        deep = if i % 2 == 0 {
            json!({"spec": deep})
        } else {
            json!([deep])
        };
    }
    let t = std::time::Instant::now();
    for (group, kind) in KINDS {
        exercise(group, kind, &deep, &deep);
    }
    eprintln!("deep kinds: {:?}", t.elapsed());
}

/// A large (about 1 MiB) schema is validated in reasonable time.
#[test]
fn wide_schema_is_fast() {
    let mut props = Map::new();
    for i in 0..4000 {
        props.insert(
            format!("field{i}"),
            json!({"type": "object", "properties": {"x": {"type": "string", "maxLength": 10}, "y": {"type": "array", "items": {"type": "integer"}}}}),
        );
    }
    let schema =
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}});
    let crd = json!({"metadata": {"name": "ws.example.com"}, "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "ws", "kind": "W"}, "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]}});
    let t = std::time::Instant::now();
    exercise(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &crd,
        &crd,
    );
    eprintln!("wide crd: {:?}", t.elapsed());
}
