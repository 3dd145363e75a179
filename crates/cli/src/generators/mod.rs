//! Generators: pure builders of the objects `run`, `create <kind>` and `expose` send,
//! shaped exactly as kubectl 1.33 serialises its Go structs (so `--dry-run=client -o
//! json|yaml` prints what kubectl prints: `creationTimestamp: null`, `resources: {}`,
//! `status: {}` and friends included; the server ignores them).
//!
//! The seed's inference table, and what kubectl 1.33 (and we) do with it: `run` always
//! generates a Pod; `--restart` only becomes the pod's `restartPolicy` (Always → Pod with
//! `restartPolicy: Always`, OnFailure → Pod/OnFailure, Never → Pod/Never). The old
//! generators (`run --restart=Always` → Deployment, `OnFailure` → Job, `--schedule` →
//! CronJob) were removed from kubectl in 1.18; their kinds come from `create deployment`,
//! `create job` and `create cronjob`. [`run_inference`] is that table, and
//! [`legacy_run_inference`] the seed's (kubectl ≤ 1.17) for reference and tests.

pub mod config;
pub mod misc;
pub mod rbac;
pub mod services;
pub mod workloads;

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::mapper::Mapping;

/// A string map as a JSON object.
pub fn string_map(m: &BTreeMap<String, String>) -> Value {
    Value::Object(
        m.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.clone())))
            .collect(),
    )
}

/// `metadata` as a Go `ObjectMeta` serialises for a new object: name, optional labels
/// and annotations (omitted when empty), and `creationTimestamp: null`.
pub fn object_meta(
    name: &str,
    labels: Option<&BTreeMap<String, String>>,
    annotations: Option<&BTreeMap<String, String>>,
) -> Value {
    let mut m = Map::new();
    if !name.is_empty() {
        m.insert("name".into(), json!(name));
    }
    m.insert("creationTimestamp".into(), Value::Null);
    if let Some(l) = labels.filter(|l| !l.is_empty()) {
        m.insert("labels".into(), string_map(l));
    }
    if let Some(a) = annotations.filter(|a| !a.is_empty()) {
        m.insert("annotations".into(), string_map(a));
    }
    Value::Object(m)
}

/// A container as kubectl's generators build it (`resources: {}` always present).
pub fn container(name: &str, image: &str, command: &[String]) -> Value {
    let mut c = json!({"name": name, "image": image, "resources": {}});
    if !command.is_empty() {
        c["command"] = json!(command);
    }
    c
}

/// What the seed's inference table says `run --restart=<policy>` creates, as kubectl 1.33
/// does it: always a Pod, the policy becoming its `restartPolicy`.
pub fn run_inference(restart: &str) -> Option<(&'static str, &'static str, &'static str)> {
    let policy = crate::validate::restart_policy(restart, false).ok()?;
    Some(("v1", "Pod", policy))
}

/// The seed's table (kubectl ≤ 1.17's `run` generators): Always → Deployment,
/// OnFailure → Job, Never → Pod. kubectl 1.33 has no such inference; the kinds come
/// from `create deployment|job` (see [`create_kind`]).
pub fn legacy_run_inference(restart: &str) -> Option<(&'static str, &'static str)> {
    match restart {
        "" | "Always" => Some(("apps/v1", "Deployment")),
        "OnFailure" => Some(("batch/v1", "Job")),
        "Never" => Some(("v1", "Pod")),
        _ => None,
    }
}

/// The apiVersion and kind each `create <generator>` produces.
pub fn create_kind(generator: &str) -> Option<(&'static str, &'static str)> {
    Some(match generator {
        "deployment" | "deploy" => ("apps/v1", "Deployment"),
        "job" => ("batch/v1", "Job"),
        "cronjob" | "cj" => ("batch/v1", "CronJob"),
        "configmap" | "cm" => ("v1", "ConfigMap"),
        "secret generic" | "secret docker-registry" | "secret tls" => ("v1", "Secret"),
        "service clusterip"
        | "service nodeport"
        | "service loadbalancer"
        | "service externalname" => ("v1", "Service"),
        "namespace" | "ns" => ("v1", "Namespace"),
        "serviceaccount" | "sa" => ("v1", "ServiceAccount"),
        "role" => ("rbac.authorization.k8s.io/v1", "Role"),
        "rolebinding" => ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        "clusterrole" => ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        "clusterrolebinding" => ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        "quota" | "resourcequota" => ("v1", "ResourceQuota"),
        "priorityclass" | "pc" => ("scheduling.k8s.io/v1", "PriorityClass"),
        "poddisruptionbudget" | "pdb" => ("policy/v1", "PodDisruptionBudget"),
        "ingress" | "ing" => ("networking.k8s.io/v1", "Ingress"),
        "token" => ("authentication.k8s.io/v1", "TokenRequest"),
        _ => return None,
    })
}

/// The REST mapping of the kinds the generators make (kubectl's typed clients know them
/// without discovery).
pub fn builtin_mapping(api_version: &str, kind: &str) -> Option<Mapping> {
    let (resource, namespaced) = match kind {
        "Pod" => ("pods", true),
        "Service" => ("services", true),
        "Deployment" => ("deployments", true),
        "ReplicaSet" => ("replicasets", true),
        "ReplicationController" => ("replicationcontrollers", true),
        "Job" => ("jobs", true),
        "CronJob" => ("cronjobs", true),
        "ConfigMap" => ("configmaps", true),
        "Secret" => ("secrets", true),
        "Namespace" => ("namespaces", false),
        "ServiceAccount" => ("serviceaccounts", true),
        "Role" => ("roles", true),
        "RoleBinding" => ("rolebindings", true),
        "ClusterRole" => ("clusterroles", false),
        "ClusterRoleBinding" => ("clusterrolebindings", false),
        "ResourceQuota" => ("resourcequotas", true),
        "PriorityClass" => ("priorityclasses", false),
        "PodDisruptionBudget" => ("poddisruptionbudgets", true),
        "Ingress" => ("ingresses", true),
        _ => return None,
    };
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g.to_string(), v.to_string()),
        None => (String::new(), api_version.to_string()),
    };
    Some(Mapping {
        group,
        version,
        resource: resource.into(),
        kind: kind.into(),
        namespaced,
    })
}

/// `kubectl run`'s parameters (`BasicPod`'s).
#[derive(Debug, Clone, Default)]
pub struct RunParams {
    pub name: String,
    pub image: String,
    /// `--labels`, parsed (empty: `run=<name>`).
    pub labels: BTreeMap<String, String>,
    pub annotations: BTreeMap<String, String>,
    pub env: Vec<(String, String)>,
    pub port: Option<i64>,
    pub restart: String,
    pub image_pull_policy: String,
    pub stdin: bool,
    pub leave_stdin_open: bool,
    pub tty: bool,
    /// Use the extra arguments as `command` rather than `args`.
    pub command: bool,
    pub args: Vec<String>,
    pub privileged: bool,
    pub service_account: String,
}

impl RunParams {
    /// The pod's labels: `--labels`, else `run=<name>`.
    pub fn pod_labels(&self) -> BTreeMap<String, String> {
        if self.labels.is_empty() {
            BTreeMap::from([("run".to_string(), self.name.clone())])
        } else {
            self.labels.clone()
        }
    }
}

/// `run`'s Pod (kubectl's `BasicPod` generator).
pub fn run_pod(p: &RunParams) -> Value {
    let mut c = json!({"name": p.name, "image": p.image, "resources": {}});
    if !p.args.is_empty() {
        c[if p.command { "command" } else { "args" }] = json!(p.args);
    }
    if !p.env.is_empty() {
        c["env"] = Value::Array(
            p.env
                .iter()
                .map(|(n, v)| {
                    if v.is_empty() {
                        json!({"name": n})
                    } else {
                        json!({"name": n, "value": v})
                    }
                })
                .collect(),
        );
    }
    if !p.image_pull_policy.is_empty() {
        c["imagePullPolicy"] = json!(p.image_pull_policy);
    }
    if let Some(port) = p.port {
        c["ports"] = json!([{"containerPort": port}]);
    }
    if p.stdin {
        c["stdin"] = json!(true);
        if !p.leave_stdin_open {
            c["stdinOnce"] = json!(true);
        }
    }
    if p.tty {
        c["tty"] = json!(true);
    }
    if p.privileged {
        c["securityContext"] = json!({"privileged": true});
    }
    let restart = if p.restart.is_empty() {
        "Always"
    } else {
        p.restart.as_str()
    };
    let mut spec = json!({
        "containers": [c],
        "restartPolicy": restart,
        "dnsPolicy": "ClusterFirst",
    });
    if !p.service_account.is_empty() {
        spec["serviceAccountName"] = json!(p.service_account);
    }
    json!({
        "kind": "Pod",
        "apiVersion": "v1",
        "metadata": object_meta(&p.name, Some(&p.pod_labels()), Some(&p.annotations)),
        "spec": spec,
        "status": {},
    })
}

/// The Service of `run --expose` (kubectl's `ServiceV2` generator on run's parameters):
/// selector and labels from `--labels` (selector `run=<name>` without them), one TCP
/// port whose target is the same number.
pub fn run_service(p: &RunParams) -> Value {
    let port = p.port.unwrap_or_default();
    json!({
        "kind": "Service",
        "apiVersion": "v1",
        "metadata": object_meta(&p.name, Some(&p.labels), None),
        "spec": {
            "ports": [{"protocol": "TCP", "port": port, "targetPort": port}],
            "selector": string_map(&p.pod_labels()),
        },
        "status": {"loadBalancer": {}},
    })
}

/// kubectl's `util.CreateOrUpdateAnnotation` for `--save-config`: the object (without the
/// annotation itself) as JSON plus a newline, under
/// `kubectl.kubernetes.io/last-applied-configuration`.
pub fn add_last_applied(obj: &mut Value) {
    const KEY: &str = "kubectl.kubernetes.io/last-applied-configuration";
    let mut copy = obj.clone();
    if let Some(a) = copy
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.remove(KEY);
        if a.is_empty()
            && let Some(m) = copy.get_mut("metadata").and_then(Value::as_object_mut)
        {
            m.remove("annotations");
        }
    }
    let text = format!("{}\n", crate::output::to_json_compact(&copy));
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        let annotations = meta
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Some(a) = annotations.as_object_mut() {
            a.insert(KEY.into(), Value::String(text));
        }
    }
}

/// Sets `metadata.namespace` (kubectl does for `--dry-run=client` when `-n` was given,
/// and the create generators always do then).
pub fn set_namespace(obj: &mut Value, namespace: &str) {
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("namespace".into(), json!(namespace));
    }
}

/// `utilrand.String(n)`: kubectl's alphabet without vowels and look-alikes.
pub fn random_suffix(n: usize) -> String {
    use std::hash::{BuildHasher, Hasher};
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut out = String::new();
    let mut state = std::collections::hash_map::RandomState::new().build_hasher();
    state.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    let mut x = state.finish();
    for _ in 0..n {
        out.push(char::from(ALPHABET[(x % ALPHABET.len() as u64) as usize]));
        x /= ALPHABET.len() as u64;
        if x == 0 {
            state.write_u8(1);
            x = state.finish();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn generator_inference_table() {
        // kubectl 1.33: run always makes a Pod; --restart is its restartPolicy.
        assert_eq!(run_inference(""), Some(("v1", "Pod", "Always")));
        assert_eq!(run_inference("Always"), Some(("v1", "Pod", "Always")));
        assert_eq!(run_inference("OnFailure"), Some(("v1", "Pod", "OnFailure")));
        assert_eq!(run_inference("Never"), Some(("v1", "Pod", "Never")));
        assert_eq!(run_inference("Sometimes"), None);
        // The seed's table (kubectl <= 1.17), for reference.
        assert_eq!(
            legacy_run_inference("Always"),
            Some(("apps/v1", "Deployment"))
        );
        assert_eq!(legacy_run_inference("OnFailure"), Some(("batch/v1", "Job")));
        assert_eq!(legacy_run_inference("Never"), Some(("v1", "Pod")));
        // And the generator of each pod's restart policy, end to end.
        for (restart, policy) in [
            ("Always", "Always"),
            ("OnFailure", "OnFailure"),
            ("Never", "Never"),
        ] {
            let pod = run_pod(&RunParams {
                name: "x".into(),
                image: "nginx".into(),
                restart: restart.into(),
                ..Default::default()
            });
            assert_eq!(pod["kind"], "Pod");
            assert_eq!(pod["apiVersion"], "v1");
            assert_eq!(pod["spec"]["restartPolicy"], policy);
        }
        // Each `create` generator's kind.
        for (generator, api_version, kind) in [
            ("deployment", "apps/v1", "Deployment"),
            ("job", "batch/v1", "Job"),
            ("cronjob", "batch/v1", "CronJob"),
            ("configmap", "v1", "ConfigMap"),
            ("secret generic", "v1", "Secret"),
            ("secret docker-registry", "v1", "Secret"),
            ("secret tls", "v1", "Secret"),
            ("service clusterip", "v1", "Service"),
            ("service nodeport", "v1", "Service"),
            ("service loadbalancer", "v1", "Service"),
            ("service externalname", "v1", "Service"),
            ("namespace", "v1", "Namespace"),
            ("serviceaccount", "v1", "ServiceAccount"),
            ("role", "rbac.authorization.k8s.io/v1", "Role"),
            ("rolebinding", "rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("clusterrole", "rbac.authorization.k8s.io/v1", "ClusterRole"),
            (
                "clusterrolebinding",
                "rbac.authorization.k8s.io/v1",
                "ClusterRoleBinding",
            ),
            ("quota", "v1", "ResourceQuota"),
            ("priorityclass", "scheduling.k8s.io/v1", "PriorityClass"),
            ("poddisruptionbudget", "policy/v1", "PodDisruptionBudget"),
            ("ingress", "networking.k8s.io/v1", "Ingress"),
            ("token", "authentication.k8s.io/v1", "TokenRequest"),
        ] {
            assert_eq!(
                create_kind(generator),
                Some((api_version, kind)),
                "{generator}"
            );
            if kind != "TokenRequest" {
                let m = builtin_mapping(api_version, kind).unwrap();
                assert_eq!(m.api_version(), api_version);
            }
        }
    }

    #[test]
    fn run_pod_as_kubectl() {
        let pod = run_pod(&RunParams {
            name: "nginx".into(),
            image: "nginx".into(),
            ..Default::default()
        });
        assert_eq!(
            pod,
            json!({
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": "nginx", "creationTimestamp": null, "labels": {"run": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}],
                         "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"},
                "status": {}
            })
        );
        let p = RunParams {
            name: "nginx".into(),
            image: "nginx".into(),
            labels: BTreeMap::from([("a".into(), "b".into())]),
            annotations: BTreeMap::from([("x".into(), "y".into())]),
            env: vec![("A".into(), "b".into())],
            port: Some(80),
            restart: "Never".into(),
            image_pull_policy: "Always".into(),
            command: true,
            args: vec!["sh".into(), "-c".into(), "sleep 1".into()],
            privileged: true,
            ..Default::default()
        };
        let pod = run_pod(&p);
        assert_eq!(
            pod["spec"]["containers"][0],
            json!({"name": "nginx", "image": "nginx", "resources": {},
                   "command": ["sh", "-c", "sleep 1"], "env": [{"name": "A", "value": "b"}],
                   "imagePullPolicy": "Always", "ports": [{"containerPort": 80}],
                   "securityContext": {"privileged": true}})
        );
        assert_eq!(pod["metadata"]["annotations"], json!({"x": "y"}));
        let svc = run_service(&p);
        assert_eq!(
            svc,
            json!({"kind": "Service", "apiVersion": "v1",
                   "metadata": {"name": "nginx", "creationTimestamp": null, "labels": {"a": "b"}},
                   "spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}],
                            "selector": {"a": "b"}},
                   "status": {"loadBalancer": {}}})
        );
    }

    #[test]
    fn last_applied_annotation() {
        let mut obj = json!({"kind": "ConfigMap", "apiVersion": "v1",
            "metadata": {"name": "x", "creationTimestamp": null}, "data": {"a": "<b>"}});
        add_last_applied(&mut obj);
        let text =
            obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
                .as_str()
                .unwrap();
        assert!(text.ends_with('\n'));
        assert!(text.contains("\\u003cb\\u003e"));
        let parsed: Value = serde_json::from_str(text).unwrap();
        assert_eq!(parsed["data"]["a"], "<b>");
        assert!(parsed["metadata"].get("annotations").is_none());
    }

    #[test]
    fn random_suffixes() {
        let s = random_suffix(5);
        assert_eq!(s.len(), 5);
        assert!(
            s.bytes()
                .all(|b| b"bcdfghjklmnpqrstvwxz2456789".contains(&b))
        );
    }
}
