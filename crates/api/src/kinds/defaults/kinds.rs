//! Defaults of the kinds other than Pod (`pkg/apis/<group>/<version>/defaults.go` and the
//! declarative `+default` markers as the generated defaulters apply them).

use serde_json::{Map, Value, json};

use super::pod::{host_path, pod, pod_spec, pvc_spec, rbd_iscsi_azure_scaleio, template};
use super::{default_if_absent, default_str, each_obj_mut, ensure_obj, obj_mut, resource_list};

fn spec_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj_mut(obj)?.get_mut("spec").and_then(obj_mut)
}

fn template_of(spec: &mut Map<String, Value>) {
    if let Some(t) = spec.get_mut("template") {
        template(t);
    }
}

/// The defaults of one kind (`SetObjectDefaults_<Kind>`).
pub(crate) fn apply(group: &str, kind: &str, obj: &mut Value) {
    match (group, kind) {
        ("", "Pod") => pod(obj),
        ("", "PodTemplate") => {
            if let Some(t) = obj_mut(obj).and_then(|m| m.get_mut("template")) {
                template(t);
            }
        }
        ("", "ReplicationController") => replication_controller(obj),
        ("", "Service") => service(obj),
        ("", "Endpoints") => {
            if let Some(m) = obj_mut(obj) {
                each_obj_mut(m, "subsets", |ss| {
                    each_obj_mut(ss, "ports", |p| {
                        default_str(p, "protocol", json!("TCP"));
                    });
                });
            }
        }
        ("", "Namespace") => namespace(obj),
        ("", "Node") => node(obj),
        ("", "PersistentVolume") => persistent_volume(obj),
        ("", "PersistentVolumeClaim") => persistent_volume_claim(obj),
        ("", "LimitRange") => limit_range(obj),
        ("", "ResourceQuota") => {
            if let Some(s) = spec_mut(obj) {
                resource_list(s, "hard");
            }
            if let Some(st) = obj_mut(obj)
                .and_then(|m| m.get_mut("status"))
                .and_then(obj_mut)
            {
                resource_list(st, "hard");
                resource_list(st, "used");
            }
        }
        ("", "Secret") => {
            if let Some(m) = obj_mut(obj) {
                default_str(m, "type", json!("Opaque"));
                merge_string_data(m);
            }
        }
        ("apps", "Deployment") => deployment(obj),
        ("apps", "DaemonSet") => daemon_set(obj),
        ("apps", "StatefulSet") => stateful_set(obj),
        ("apps", "ReplicaSet") => {
            if let Some(s) = spec_mut(obj) {
                default_if_absent(s, "replicas", json!(1));
                template_of(s);
            }
        }
        ("batch", "Job") => job(obj),
        ("batch", "CronJob") => cron_job(obj),
        ("discovery.k8s.io", "EndpointSlice") => {
            if let Some(m) = obj_mut(obj) {
                each_obj_mut(m, "ports", |p| {
                    default_if_absent(p, "name", json!(""));
                    default_if_absent(p, "protocol", json!("TCP"));
                });
            }
        }
        ("rbac.authorization.k8s.io", "RoleBinding" | "ClusterRoleBinding") => role_binding(obj),
        ("scheduling.k8s.io", "PriorityClass") => {
            if let Some(m) = obj_mut(obj) {
                default_if_absent(m, "preemptionPolicy", json!("PreemptLowerPriority"));
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => crd(obj),
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            super::webhooks::webhook_configuration(obj, true)
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            super::webhooks::webhook_configuration(obj, false)
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
                default_if_absent(spec, "failurePolicy", json!("Fail"));
                if let Some(m) = spec.get_mut("matchConstraints") {
                    match_resources(m);
                }
            }
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            if let Some(m) = obj
                .get_mut("spec")
                .and_then(|s| s.get_mut("matchResources"))
            {
                match_resources(m);
            }
        }
        _ => {}
    }
    wire_zero_status(group, kind, obj);
}

/// Status fields upstream always serializes (Go `int32` fields without `omitempty`, and
/// non-pointer structs), so that a fresh object reads back as upstream's does
/// (`status: {replicas: 0}` on a new ReplicaSet, `status: {loadBalancer: {}}` on a
/// Service).
fn wire_zero_status(group: &str, kind: &str, obj: &mut Value) {
    let fields: &[&str] = match (group, kind) {
        ("apps", "ReplicaSet") | ("", "ReplicationController") => &["replicas"],
        ("apps", "StatefulSet") => &["replicas", "availableReplicas"],
        ("apps", "DaemonSet") => &[
            "currentNumberScheduled",
            "numberMisscheduled",
            "desiredNumberScheduled",
            "numberReady",
        ],
        ("policy", "PodDisruptionBudget") => &[
            "disruptionsAllowed",
            "currentHealthy",
            "desiredHealthy",
            "expectedPods",
        ],
        ("", "Service") => {
            if let Some(st) = obj_mut(obj).and_then(|m| ensure_obj(m, "status")) {
                default_if_absent(st, "loadBalancer", json!({}));
            }
            return;
        }
        _ => return,
    };
    if let Some(st) = obj_mut(obj).and_then(|m| ensure_obj(m, "status")) {
        for f in fields {
            default_if_absent(st, f, json!(0));
        }
    }
}

fn replication_controller(obj: &mut Value) {
    let template_labels = obj
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(labels) = template_labels {
        if let Some(s) = spec_mut(obj) {
            let empty = s
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if empty {
                s.insert("selector".into(), labels.clone());
            }
        }
        if let Some(meta) = obj_mut(obj).and_then(|m| ensure_obj(m, "metadata")) {
            let empty = meta
                .get("labels")
                .and_then(Value::as_object)
                .is_none_or(Map::is_empty);
            if empty {
                meta.insert("labels".into(), labels);
            }
        }
    }
    if let Some(s) = spec_mut(obj) {
        default_if_absent(s, "replicas", json!(1));
        template_of(s);
    }
}

fn externally_accessible(spec: &Map<String, Value>) -> bool {
    let t = spec.get("type").and_then(Value::as_str).unwrap_or("");
    t == "LoadBalancer"
        || t == "NodePort"
        || (t == "ClusterIP"
            && spec
                .get("externalIPs")
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty()))
}

fn service(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    default_str(s, "sessionAffinity", json!("None"));
    match s.get("sessionAffinity").and_then(Value::as_str) {
        Some("None") => {
            s.remove("sessionAffinityConfig");
        }
        Some("ClientIP") => {
            let has_timeout = s
                .get("sessionAffinityConfig")
                .and_then(|c| c.get("clientIP"))
                .and_then(|c| c.get("timeoutSeconds"))
                .is_some_and(|t| !t.is_null());
            if !has_timeout {
                s.insert(
                    "sessionAffinityConfig".into(),
                    json!({"clientIP": {"timeoutSeconds": 10800}}),
                );
            }
        }
        _ => {}
    }
    default_str(s, "type", json!("ClusterIP"));
    each_obj_mut(s, "ports", |p| {
        default_str(p, "protocol", json!("TCP"));
        let unset = match p.get("targetPort") {
            None | Some(Value::Null) => true,
            Some(Value::Number(n)) => n.as_i64() == Some(0),
            Some(Value::String(t)) => t.is_empty(),
            _ => false,
        };
        if unset {
            let port = p.get("port").cloned().unwrap_or(json!(0));
            p.insert("targetPort".into(), port);
        }
    });
    if externally_accessible(s) {
        default_str(s, "externalTrafficPolicy", json!("Cluster"));
    }
    let svc_type = s
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if matches!(svc_type.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        default_if_absent(s, "internalTrafficPolicy", json!("Cluster"));
    }
    if svc_type == "LoadBalancer" {
        default_if_absent(s, "allocateLoadBalancerNodePorts", json!(true));
        if let Some(lb) = obj_mut(obj)
            .and_then(|m| m.get_mut("status"))
            .and_then(|st| st.get_mut("loadBalancer"))
            .and_then(obj_mut)
        {
            each_obj_mut(lb, "ingress", |ing| {
                let has_ip = ing
                    .get("ip")
                    .and_then(Value::as_str)
                    .is_some_and(|ip| !ip.is_empty());
                if has_ip {
                    default_if_absent(ing, "ipMode", json!("VIP"));
                }
            });
        }
    }
}

fn namespace(obj: &mut Value) {
    let Some(m) = obj_mut(obj) else { return };
    let name = m
        .get("metadata")
        .and_then(|md| md.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if !name.is_empty()
        && let Some(labels) = ensure_obj(m, "metadata").and_then(|meta| ensure_obj(meta, "labels"))
    {
        labels.insert("kubernetes.io/metadata.name".into(), Value::String(name));
    }
    if let Some(status) = ensure_obj(m, "status") {
        default_str(status, "phase", json!("Active"));
    }
}

fn node(obj: &mut Value) {
    let Some(status) = obj_mut(obj)
        .and_then(|m| m.get_mut("status"))
        .and_then(obj_mut)
    else {
        return;
    };
    let no_allocatable = status.get("allocatable").is_none_or(Value::is_null);
    if no_allocatable && let Some(cap) = status.get("capacity").filter(|c| c.is_object()).cloned() {
        status.insert("allocatable".into(), cap);
    }
    resource_list(status, "capacity");
    resource_list(status, "allocatable");
}

fn persistent_volume(obj: &mut Value) {
    let Some(m) = obj_mut(obj) else { return };
    if let Some(status) = ensure_obj(m, "status") {
        default_str(status, "phase", json!("Pending"));
    }
    if let Some(s) = m.get_mut("spec").and_then(obj_mut) {
        default_str(s, "persistentVolumeReclaimPolicy", json!("Retain"));
        default_if_absent(s, "volumeMode", json!("Filesystem"));
        resource_list(s, "capacity");
        host_path(s);
        rbd_iscsi_azure_scaleio(s);
    }
}

fn persistent_volume_claim(obj: &mut Value) {
    let Some(m) = obj_mut(obj) else { return };
    if let Some(status) = ensure_obj(m, "status") {
        default_str(status, "phase", json!("Pending"));
        resource_list(status, "capacity");
        resource_list(status, "allocatedResources");
    }
    if let Some(spec) = m.get_mut("spec") {
        pvc_spec(spec);
    }
}

fn limit_range(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    each_obj_mut(s, "limits", |item| {
        if item.get("type").and_then(Value::as_str) == Some("Container") {
            let max = item
                .get("max")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let min = item
                .get("min")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default();
            let mut defaults = Map::new();
            if let Some(d) = ensure_obj(item, "default") {
                for (k, v) in &max {
                    d.entry(k.clone()).or_insert_with(|| v.clone());
                }
                defaults = d.clone();
            }
            if let Some(dr) = ensure_obj(item, "defaultRequest") {
                for (k, v) in defaults.iter().chain(min.iter()) {
                    dr.entry(k.clone()).or_insert_with(|| v.clone());
                }
            }
            // Empty maps are not serialized upstream (omitempty).
            for key in ["default", "defaultRequest"] {
                if item
                    .get(key)
                    .and_then(Value::as_object)
                    .is_some_and(Map::is_empty)
                {
                    item.remove(key);
                }
            }
        }
        for key in [
            "max",
            "min",
            "default",
            "defaultRequest",
            "maxLimitRequestRatio",
        ] {
            resource_list(item, key);
        }
    });
}

fn deployment(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    default_if_absent(s, "replicas", json!(1));
    if let Some(strategy) = ensure_obj(s, "strategy") {
        default_str(strategy, "type", json!("RollingUpdate"));
        if strategy.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = ensure_obj(strategy, "rollingUpdate")
        {
            default_if_absent(ru, "maxUnavailable", json!("25%"));
            default_if_absent(ru, "maxSurge", json!("25%"));
        }
    }
    default_if_absent(s, "revisionHistoryLimit", json!(10));
    default_if_absent(s, "progressDeadlineSeconds", json!(600));
    template_of(s);
}

fn daemon_set(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    if let Some(us) = ensure_obj(s, "updateStrategy") {
        default_str(us, "type", json!("RollingUpdate"));
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = ensure_obj(us, "rollingUpdate")
        {
            default_if_absent(ru, "maxUnavailable", json!(1));
            default_if_absent(ru, "maxSurge", json!(0));
        }
    }
    default_if_absent(s, "revisionHistoryLimit", json!(10));
    template_of(s);
}

fn stateful_set(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    default_str(s, "podManagementPolicy", json!("OrderedReady"));
    if let Some(us) = ensure_obj(s, "updateStrategy") {
        let type_empty = us
            .get("type")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty);
        if type_empty {
            us.insert("type".into(), json!("RollingUpdate"));
            if us.get("rollingUpdate").is_none_or(Value::is_null) {
                us.insert("rollingUpdate".into(), json!({}));
            }
        }
        if us.get("type").and_then(Value::as_str) == Some("RollingUpdate")
            && let Some(ru) = us.get_mut("rollingUpdate").and_then(obj_mut)
        {
            default_if_absent(ru, "partition", json!(0));
        }
    }
    if let Some(pol) = ensure_obj(s, "persistentVolumeClaimRetentionPolicy") {
        default_str(pol, "whenDeleted", json!("Retain"));
        default_str(pol, "whenScaled", json!("Retain"));
    }
    default_if_absent(s, "replicas", json!(1));
    default_if_absent(s, "revisionHistoryLimit", json!(10));
    template_of(s);
    each_obj_mut(s, "volumeClaimTemplates", |t| {
        if let Some(status) = ensure_obj(t, "status") {
            default_str(status, "phase", json!("Pending"));
            resource_list(status, "capacity");
            resource_list(status, "allocatedResources");
        }
        if let Some(spec) = t.get_mut("spec") {
            pvc_spec(spec);
        }
    });
}

fn job(obj: &mut Value) {
    let template_labels = obj
        .get("spec")
        .and_then(|s| s.get("template"))
        .and_then(|t| t.get("metadata"))
        .and_then(|m| m.get("labels"))
        .filter(|l| l.is_object())
        .cloned();
    if let Some(s) = spec_mut(obj) {
        let has = |s: &Map<String, Value>, k: &str| s.get(k).is_some_and(|v| !v.is_null());
        if !has(s, "completions") && !has(s, "parallelism") {
            s.insert("completions".into(), json!(1));
            s.insert("parallelism".into(), json!(1));
        }
        default_if_absent(s, "parallelism", json!(1));
        if has(s, "backoffLimitPerIndex") {
            default_if_absent(s, "backoffLimit", json!(i32::MAX));
        } else {
            default_if_absent(s, "backoffLimit", json!(6));
        }
        default_if_absent(s, "completionMode", json!("NonIndexed"));
        default_if_absent(s, "suspend", json!(false));
        let has_pfp = has(s, "podFailurePolicy");
        if let Some(pfp) = s.get_mut("podFailurePolicy").and_then(obj_mut) {
            each_obj_mut(pfp, "rules", |rule| {
                each_obj_mut(rule, "onPodConditions", |pat| {
                    default_str(pat, "status", json!("True"));
                });
            });
        }
        default_if_absent(
            s,
            "podReplacementPolicy",
            json!(if has_pfp {
                "Failed"
            } else {
                "TerminatingOrFailed"
            }),
        );
        template_of(s);
    }
    if let Some(labels) = template_labels
        && let Some(meta) = obj_mut(obj).and_then(|m| ensure_obj(m, "metadata"))
    {
        let empty = meta
            .get("labels")
            .and_then(Value::as_object)
            .is_none_or(Map::is_empty);
        if empty {
            meta.insert("labels".into(), labels);
        }
    }
}

fn cron_job(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    default_str(s, "concurrencyPolicy", json!("Allow"));
    default_if_absent(s, "suspend", json!(false));
    default_if_absent(s, "successfulJobsHistoryLimit", json!(3));
    default_if_absent(s, "failedJobsHistoryLimit", json!(1));
    if let Some(t) = s
        .get_mut("jobTemplate")
        .and_then(|jt| jt.get_mut("spec"))
        .and_then(|js| js.get_mut("template"))
        .and_then(|t| t.get_mut("spec"))
    {
        pod_spec(t);
    }
}

fn role_binding(obj: &mut Value) {
    let Some(m) = obj_mut(obj) else { return };
    if let Some(rr) = m.get_mut("roleRef").and_then(obj_mut) {
        default_str(rr, "apiGroup", json!("rbac.authorization.k8s.io"));
    }
    each_obj_mut(m, "subjects", |subj| {
        let kind = subj
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        // ServiceAccount subjects default to the core group `""`, which is omitted on
        // the wire.
        let group = match kind.as_str() {
            "User" | "Group" => "rbac.authorization.k8s.io",
            _ => return,
        };
        default_str(subj, "apiGroup", json!(group));
    });
}

fn crd(obj: &mut Value) {
    let Some(s) = spec_mut(obj) else { return };
    if let Some(names) = s.get_mut("names").and_then(obj_mut) {
        let kind = names
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        default_str(names, "singular", json!(kind.to_lowercase()));
        if !kind.is_empty() {
            default_str(names, "listKind", json!(format!("{kind}List")));
        }
    }
    default_if_absent(s, "conversion", json!({"strategy": "None"}));
    if let Some(svc) = s
        .get_mut("conversion")
        .and_then(|c| c.get_mut("webhook"))
        .and_then(|w| w.get_mut("clientConfig"))
        .and_then(|c| c.get_mut("service"))
        .and_then(obj_mut)
    {
        default_if_absent(svc, "port", json!(443));
    }
    let storage = s.get("versions").and_then(Value::as_array).and_then(|vs| {
        vs.iter()
            .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
            .and_then(|v| v.get("name").cloned())
    });
    if let Some(storage) = storage
        && let Some(status) = obj_mut(obj).and_then(|m| ensure_obj(m, "status"))
    {
        let empty = status
            .get("storedVersions")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if empty {
            status.insert("storedVersions".into(), json!([storage]));
        }
    }
}

/// Upstream's v1 → internal conversion of Secrets: `stringData` is written into `data`
/// (base64), overriding keys of the same name, and never stored.
fn merge_string_data(m: &mut Map<String, Value>) {
    use base64::Engine;
    let Some(Value::Object(string_data)) = m.remove("stringData") else {
        return;
    };
    let data = m.entry("data").or_insert_with(|| json!({}));
    if !data.is_object() {
        *data = json!({});
    }
    if let Some(d) = data.as_object_mut() {
        for (k, v) in string_data {
            let text = v.as_str().unwrap_or_default();
            d.insert(
                k,
                json!(base64::engine::general_purpose::STANDARD.encode(text)),
            );
        }
    }
}

/// `SetDefaults_MatchResources`: `matchPolicy: Equivalent`, empty selectors, and `scope: *`
/// on every rule.
fn match_resources(m: &mut Value) {
    let Some(m) = m.as_object_mut() else {
        return;
    };
    default_if_absent(m, "matchPolicy", json!("Equivalent"));
    default_if_absent(m, "namespaceSelector", json!({}));
    default_if_absent(m, "objectSelector", json!({}));
    for key in ["resourceRules", "excludeResourceRules"] {
        if let Some(rules) = m.get_mut(key).and_then(Value::as_array_mut) {
            for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                default_if_absent(r, "scope", json!("*"));
            }
        }
    }
}

#[cfg(test)]
mod secret_tests {
    use super::*;

    #[test]
    fn string_data_is_merged_into_data() {
        let mut s = json!({
            "data": {"a": "eA==", "b": "eQ=="},
            "stringData": {"b": "plain", "c": "more"},
        });
        apply("", "Secret", &mut s);
        assert_eq!(
            s,
            json!({
                "type": "Opaque",
                "data": {"a": "eA==", "b": "cGxhaW4=", "c": "bW9yZQ=="},
            })
        );
    }
}
