//! What the registry strategies do before validation (`PrepareForCreate`,
//! `PrepareForUpdate`, and the status subresource's `PrepareForUpdate`).

use serde_json::{Map, Value, json};

use super::{apply, ensure_obj, obj_mut};

/// Kinds whose strategy sets `metadata.generation` to 1 on create and bumps it when the
/// spec changes.
fn tracks_generation(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "apps",
            "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet"
        ) | ("", "ReplicationController")
            | ("batch", "Job" | "CronJob")
            | ("policy", "PodDisruptionBudget")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
            | ("discovery.k8s.io", "EndpointSlice")
    )
}

/// Kinds with a status the main resource may not write (reset on create, kept on
/// update).
fn has_status(group: &str, kind: &str) -> bool {
    matches!(
        (group, kind),
        (
            "apps",
            "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet"
        ) | (
            "",
            "ReplicationController"
                | "Pod"
                | "Service"
                | "Namespace"
                | "PersistentVolume"
                | "PersistentVolumeClaim"
                | "ResourceQuota"
                | "Node"
        ) | ("batch", "Job" | "CronJob")
            | ("policy", "PodDisruptionBudget")
            | ("apiextensions.k8s.io", "CustomResourceDefinition")
    )
}

fn meta_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    obj_mut(obj).and_then(|m| ensure_obj(m, "metadata"))
}

fn set_status(obj: &mut Value, status: Value) {
    if let Some(m) = obj_mut(obj) {
        m.insert("status".into(), status);
    }
}

fn generation(obj: &Value) -> i64 {
    obj.get("metadata")
        .and_then(|m| m.get("generation"))
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn set_generation(obj: &mut Value, g: i64) {
    if let Some(m) = meta_mut(obj) {
        m.insert("generation".into(), json!(g));
    }
}

/// Deep equality where absent, `null`, empty lists and empty maps are the same.
fn same(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn zero(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(m)) => m.is_empty(),
            _ => false,
        }
    }
    fn norm(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(_, x)| !zero(Some(x)))
                    .map(|(k, x)| (k.clone(), norm(x)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
            other => other.clone(),
        }
    }
    match (zero(a), zero(b)) {
        (true, true) => true,
        (false, false) => a.map(norm) == b.map(norm),
        _ => false,
    }
}

const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

fn annotation<'a>(obj: &'a Value, key: &str) -> Option<&'a str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn set_annotation(obj: &mut Value, key: &str, value: String) {
    if let Some(ann) = meta_mut(obj).and_then(|m| ensure_obj(m, "annotations")) {
        ann.insert(key.to_string(), Value::String(value));
    }
}

/// The strategy's `PrepareForCreate` for the main resource, then the defaults again (as
/// upstream's response is decoded, and so defaulted, from what was stored). Call it after
/// the UID has been assigned: Jobs derive their selector from it.
pub fn prepare_for_create(group: &str, version: &str, kind: &str, obj: &mut Value) {
    // Nodes are registered with their status (the kubelet's); every other kind starts
    // with an empty one.
    if has_status(group, kind) && !(group.is_empty() && kind == "Node") {
        set_status(obj, json!({}));
    }
    if tracks_generation(group, kind) {
        set_generation(obj, 1);
    }
    match (group, kind) {
        ("", "Namespace") => {
            set_status(obj, json!({"phase": "Active"}));
            if let Some(spec) = obj_mut(obj).and_then(|m| ensure_obj(m, "spec")) {
                let list = spec.entry("finalizers").or_insert_with(|| json!([]));
                if !list.is_array() {
                    *list = json!([]);
                }
                if let Some(a) = list.as_array_mut()
                    && !a.iter().any(|f| f.as_str() == Some("kubernetes"))
                {
                    a.push(json!("kubernetes"));
                }
            }
        }
        ("", "Pod") => prepare_pod_create(obj),
        ("", "Service") => prepare_service_create(obj),
        ("", "PersistentVolume") => set_status(obj, json!({"phase": "Pending"})),
        ("", "Node") => {
            if let Some(m) = obj_mut(obj) {
                if let Some(s) = m.get_mut("spec").and_then(obj_mut) {
                    s.remove("configSource");
                }
                if let Some(s) = m.get_mut("status").and_then(obj_mut) {
                    s.remove("config");
                }
            }
        }
        ("apps", "DaemonSet") => {
            let tg = annotation(obj, TEMPLATE_GENERATION)
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0);
            if tg < 1 {
                set_annotation(obj, TEMPLATE_GENERATION, "1".to_string());
            }
        }
        ("batch", "Job") => crate::kinds::validate::generate_job_selector(obj),
        _ => {}
    }
    apply(group, version, kind, obj);
    // After the defaults, so that a volume losing its only (disabled) source fails
    // validation as upstream's does instead of being defaulted to an emptyDir.
    drop_disabled_fields(group, kind, obj, None);
}

/// The strategy's `PrepareForUpdate` for the main resource (and the Service REST's
/// allocation carry-over), then the defaults again.
pub fn prepare_for_update(group: &str, version: &str, kind: &str, new: &mut Value, old: &Value) {
    // Requests cannot change the generation (`rest.BeforeUpdate`).
    let old_gen = generation(old);
    if old
        .get("metadata")
        .and_then(|m| m.get("generation"))
        .is_some()
    {
        set_generation(new, old_gen);
    } else if let Some(m) = new.get_mut("metadata").and_then(obj_mut) {
        m.remove("generation");
    }
    if has_status(group, kind) {
        set_status(new, old.get("status").cloned().unwrap_or_else(|| json!({})));
    }
    if tracks_generation(group, kind) {
        let changed = match (group, kind) {
            ("apps", "Deployment") => {
                !same(new.get("spec"), old.get("spec"))
                    || !same(
                        new.get("metadata").and_then(|m| m.get("annotations")),
                        old.get("metadata").and_then(|m| m.get("annotations")),
                    )
            }
            ("discovery.k8s.io", "EndpointSlice") => ["endpoints", "ports", "addressType"]
                .iter()
                .any(|k| !same(new.get(*k), old.get(*k))),
            _ => !same(new.get("spec"), old.get("spec")),
        };
        if (group, kind) == ("apps", "DaemonSet") {
            let old_tg = annotation(old, TEMPLATE_GENERATION)
                .and_then(|v| v.parse::<i64>().ok())
                .unwrap_or(0);
            let template_changed = !same(
                new.get("spec").and_then(|s| s.get("template")),
                old.get("spec").and_then(|s| s.get("template")),
            );
            if template_changed {
                set_annotation(new, TEMPLATE_GENERATION, (old_tg + 1).to_string());
            } else if annotation(new, TEMPLATE_GENERATION).is_none() && old_tg > 0 {
                set_annotation(new, TEMPLATE_GENERATION, old_tg.to_string());
            }
        }
        if changed {
            set_generation(new, old_gen + 1);
        }
    }
    match (group, kind) {
        ("", "Namespace") => {
            let finalizers = old.get("spec").and_then(|s| s.get("finalizers")).cloned();
            if let Some(spec) = obj_mut(new).and_then(|m| ensure_obj(m, "spec")) {
                match finalizers {
                    Some(f) => {
                        spec.insert("finalizers".into(), f);
                    }
                    None => {
                        spec.remove("finalizers");
                    }
                }
            }
        }
        ("", "Service") => prepare_service_update(new, old),
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            let storage = new
                .get("spec")
                .and_then(|s| s.get("versions"))
                .and_then(Value::as_array)
                .and_then(|vs| {
                    vs.iter()
                        .find(|v| v.get("storage").and_then(Value::as_bool) == Some(true))
                        .and_then(|v| v.get("name").cloned())
                });
            if let Some(storage) = storage
                && let Some(status) = obj_mut(new).and_then(|m| ensure_obj(m, "status"))
            {
                let list = status.entry("storedVersions").or_insert_with(|| json!([]));
                if let Some(a) = list.as_array_mut()
                    && !a.contains(&storage)
                {
                    a.push(storage);
                }
            }
        }
        _ => {}
    }
    apply(group, version, kind, new);
    drop_disabled_fields(group, kind, new, Some(old));
}

/// The status subresource's `PrepareForUpdate`: only the status (and metadata other than
/// what `ResetObjectMetaForStatus` restores) may change.
pub fn prepare_for_status_update(
    group: &str,
    version: &str,
    kind: &str,
    new: &mut Value,
    old: &Value,
) {
    let Some(nm) = obj_mut(new) else { return };
    let keep: Vec<String> = nm
        .keys()
        .filter(|k| !matches!(k.as_str(), "status" | "metadata" | "apiVersion" | "kind"))
        .cloned()
        .collect();
    for k in keep {
        nm.remove(&k);
    }
    if let Some(om) = old.as_object() {
        for (k, v) in om {
            if !matches!(k.as_str(), "status" | "metadata" | "apiVersion" | "kind") {
                nm.insert(k.clone(), v.clone());
            }
        }
    }
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    // The apps workloads' status strategies keep only the spec and labels (so their
    // controllers write annotations, such as a Deployment's revision, with the status);
    // the others keep the metadata a status writer must not change.
    let kept: &[&str] = if group == "apps" {
        &["deletionTimestamp", "generation", "selfLink", "labels"]
    } else {
        &[
            "deletionTimestamp",
            "generation",
            "selfLink",
            "labels",
            "annotations",
            "finalizers",
            "ownerReferences",
        ]
    };
    if let Some(meta) = ensure_obj(nm, "metadata") {
        for key in kept.iter().copied() {
            match old_meta.get(key) {
                Some(v) => {
                    meta.insert(key.to_string(), v.clone());
                }
                None => {
                    meta.remove(key);
                }
            }
        }
    }
    apply(group, version, kind, new);
}

/// The `ephemeralcontainers` subresource's `PrepareForUpdate`: the old pod with only the
/// new ephemeral containers (and the new name, namespace, resourceVersion and UID).
pub fn prepare_for_ephemeral_containers_update(new: &mut Value, old: &Value) {
    let mut pod = old.clone();
    let ephemeral = new
        .get("spec")
        .and_then(|s| s.get("ephemeralContainers"))
        .cloned();
    let new_meta = new.get("metadata").cloned().unwrap_or(Value::Null);
    if let Some(meta) = obj_mut(&mut pod).and_then(|m| ensure_obj(m, "metadata")) {
        for key in ["name", "namespace", "resourceVersion", "uid"] {
            match new_meta.get(key) {
                Some(v) => {
                    meta.insert(key.to_string(), v.clone());
                }
                None => {
                    meta.remove(key);
                }
            }
        }
    }
    if let Some(spec) = obj_mut(&mut pod).and_then(|m| ensure_obj(m, "spec")) {
        match ephemeral {
            Some(e) => {
                spec.insert("ephemeralContainers".to_string(), e);
            }
            None => {
                spec.remove("ephemeralContainers");
            }
        }
    }
    *new = pod;
    apply("", "v1", "Pod", new);
}

// ---------------------------------------------------------------------------------------
// Fields of features that are off by default in Kubernetes 1.33 (`dropDisabledFields`):
// dropped unless the old object already uses them.

/// The pod spec(s) of a kind, by path.
fn pod_spec_paths(group: &str, kind: &str) -> &'static [&'static [&'static str]] {
    match (group, kind) {
        ("", "Pod") => &[&["spec"]],
        ("", "PodTemplate") => &[&["template", "spec"]],
        ("", "ReplicationController")
        | ("apps", "Deployment" | "ReplicaSet" | "DaemonSet" | "StatefulSet")
        | ("batch", "Job") => &[&["spec", "template", "spec"]],
        ("batch", "CronJob") => &[&["spec", "jobTemplate", "spec", "template", "spec"]],
        _ => &[],
    }
}

fn at_path<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |cur, k| cur.get(*k))
}

fn at_path_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    path.iter().try_fold(v, |cur, k| cur.get_mut(*k))
}

const CONTAINER_LISTS: [&str; 3] = ["containers", "initContainers", "ephemeralContainers"];

fn containers(spec: &Value) -> impl Iterator<Item = &Value> {
    CONTAINER_LISTS
        .iter()
        .filter_map(|k| spec.get(*k).and_then(Value::as_array))
        .flatten()
}

fn uses_stop_signal(spec: &Value) -> bool {
    containers(spec).any(|c| at_path(c, &["lifecycle", "stopSignal"]).is_some())
}

fn uses_resource_claims(spec: &Value) -> bool {
    spec.get("resourceClaims")
        .and_then(Value::as_array)
        .is_some_and(|a| !a.is_empty())
        || containers(spec).any(|c| {
            at_path(c, &["resources", "claims"])
                .and_then(Value::as_array)
                .is_some_and(|a| !a.is_empty())
        })
}

fn uses_image_volumes(spec: &Value) -> bool {
    spec.get("volumes")
        .and_then(Value::as_array)
        .is_some_and(|vs| vs.iter().any(|v| v.get("image").is_some()))
}

fn each_container_mut(spec: &mut Value, mut f: impl FnMut(&mut Map<String, Value>)) {
    for key in CONTAINER_LISTS {
        if let Some(list) = spec.get_mut(key).and_then(Value::as_array_mut) {
            for c in list.iter_mut().filter_map(Value::as_object_mut) {
                f(c);
            }
        }
    }
}

/// `dropDisabledPodFields` for the gates off by default in 1.33: PodLevelResources,
/// ContainerStopSignals, DynamicResourceAllocation and ImageVolume.
fn drop_disabled_pod_spec_fields(spec: &mut Value, old: Option<&Value>) {
    let old_uses = |f: fn(&Value) -> bool| old.is_some_and(f);
    if old.is_none_or(|o| o.get("resources").is_none())
        && let Some(m) = obj_mut(spec)
    {
        m.remove("resources");
    }
    if !old_uses(uses_stop_signal) {
        each_container_mut(spec, |c| {
            if let Some(l) = c.get_mut("lifecycle").and_then(obj_mut) {
                l.remove("stopSignal");
            }
        });
    }
    if !old_uses(uses_resource_claims) {
        if let Some(m) = obj_mut(spec) {
            m.remove("resourceClaims");
        }
        each_container_mut(spec, |c| {
            if let Some(r) = c.get_mut("resources").and_then(obj_mut) {
                r.remove("claims");
            }
        });
    }
    if !old_uses(uses_image_volumes)
        && let Some(vs) = spec.get_mut("volumes").and_then(Value::as_array_mut)
    {
        for v in vs.iter_mut().filter_map(Value::as_object_mut) {
            v.remove("image");
        }
    }
}

fn drop_disabled_fields(group: &str, kind: &str, new: &mut Value, old: Option<&Value>) {
    for path in pod_spec_paths(group, kind) {
        let old_spec = old.and_then(|o| at_path(o, path));
        if let Some(spec) = at_path_mut(new, path) {
            drop_disabled_pod_spec_fields(spec, old_spec);
        }
    }
    match (group, kind) {
        // MaxUnavailableStatefulSet (alpha).
        ("apps", "StatefulSet") => {
            let ru = ["spec", "updateStrategy", "rollingUpdate"];
            let old_has = old
                .and_then(|o| at_path(o, &ru))
                .is_some_and(|r| r.get("maxUnavailable").is_some());
            if !old_has && let Some(r) = at_path_mut(new, &ru).and_then(obj_mut) {
                r.remove("maxUnavailable");
            }
        }
        // VolumeAttributesClass (beta, off by default).
        ("", "PersistentVolumeClaim" | "PersistentVolume") => {
            let old_has = old
                .and_then(|o| o.get("spec"))
                .is_some_and(|s| s.get("volumeAttributesClassName").is_some());
            if !old_has && let Some(sp) = new.get_mut("spec").and_then(obj_mut) {
                sp.remove("volumeAttributesClassName");
            }
        }
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------
// Pods.

/// `qos.GetPodQOS`.
fn pod_qos(spec: &Value) -> &'static str {
    crate::qos::of_spec_json(spec).as_str()
}

/// `mutatePodAffinity`: `matchLabelKeys`/`mismatchLabelKeys` become selector requirements.
fn mutate_pod_affinity(pod: &mut Value) {
    let labels = pod
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let Some(affinity) = pod
        .get_mut("spec")
        .and_then(|s| s.get_mut("affinity"))
        .and_then(obj_mut)
    else {
        return;
    };
    let mutate_term = |term: &mut Map<String, Value>| {
        let keys = |k: &str| -> Vec<String> {
            term.get(k)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (match_keys, mismatch_keys) = (keys("matchLabelKeys"), keys("mismatchLabelKeys"));
        let Some(sel) = term.get_mut("labelSelector").and_then(obj_mut) else {
            return;
        };
        for (keys, op) in [(match_keys, "In"), (mismatch_keys, "NotIn")] {
            for k in keys {
                if let Some(v) = labels.get(&k) {
                    let exprs = sel.entry("matchExpressions").or_insert_with(|| json!([]));
                    if let Some(a) = exprs.as_array_mut() {
                        a.push(json!({"key": k, "operator": op, "values": [v]}));
                    }
                }
            }
        }
    };
    for key in ["podAffinity", "podAntiAffinity"] {
        let Some(pa) = affinity.get_mut(key).and_then(obj_mut) else {
            continue;
        };
        if let Some(list) = pa
            .get_mut("requiredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array_mut)
        {
            for t in list.iter_mut().filter_map(Value::as_object_mut) {
                mutate_term(t);
            }
        }
        if let Some(list) = pa
            .get_mut("preferredDuringSchedulingIgnoredDuringExecution")
            .and_then(Value::as_array_mut)
        {
            for w in list.iter_mut() {
                if let Some(t) = w.get_mut("podAffinityTerm").and_then(obj_mut) {
                    mutate_term(t);
                }
            }
        }
    }
}

fn prepare_pod_create(pod: &mut Value) {
    let spec = pod.get("spec").unwrap_or(&Value::Null);
    let mut status = json!({"phase": "Pending", "qosClass": pod_qos(spec)});
    let gated = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    set_status(pod, status);
    mutate_pod_affinity(pod);
}

// ---------------------------------------------------------------------------------------
// Services.

fn str_field<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

fn strings(v: &Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

fn needs_cluster_ip(spec: &Value) -> bool {
    str_field(spec, "type") != "ExternalName"
}

fn needs_node_port(spec: &Value) -> bool {
    match str_field(spec, "type") {
        "NodePort" => true,
        "LoadBalancer" => {
            spec.get("allocateLoadBalancerNodePorts")
                .and_then(Value::as_bool)
                != Some(false)
        }
        _ => false,
    }
}

fn needs_hc_node_port(spec: &Value) -> bool {
    str_field(spec, "type") == "LoadBalancer" && str_field(spec, "externalTrafficPolicy") == "Local"
}

fn prepare_service_create(svc: &mut Value) {
    let Some(spec) = svc.get_mut("spec").and_then(obj_mut) else {
        return;
    };
    // NormalizeClusterIPs on create.
    let cluster_ip = spec
        .get("clusterIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let no_ips = spec
        .get("clusterIPs")
        .and_then(Value::as_array)
        .is_none_or(Vec::is_empty);
    if !cluster_ip.is_empty() && no_ips {
        spec.insert("clusterIPs".into(), json!([cluster_ip]));
    }
    // The allocator's IP family defaults (single-stack IPv4 cluster).
    if spec.get("type").and_then(Value::as_str) != Some("ExternalName") {
        let families = spec
            .get("ipFamilies")
            .and_then(Value::as_array)
            .map_or(0, Vec::len);
        let headless = cluster_ip == "None";
        let has_selector = spec
            .get("selector")
            .and_then(Value::as_object)
            .is_some_and(|s| !s.is_empty());
        if spec.get("ipFamilyPolicy").is_none_or(Value::is_null) {
            let policy = if families == 2 || (headless && !has_selector) {
                "RequireDualStack"
            } else {
                "SingleStack"
            };
            spec.insert("ipFamilyPolicy".into(), json!(policy));
        }
        if families == 0 {
            let v6 = !headless && cluster_ip.contains(':');
            spec.insert(
                "ipFamilies".into(),
                json!([if v6 { "IPv6" } else { "IPv4" }]),
            );
        }
    }
}

fn prepare_service_update(new: &mut Value, old: &Value) {
    let os = old.get("spec").cloned().unwrap_or(Value::Null);
    let Some(ns_map) = new.get_mut("spec").and_then(obj_mut) else {
        return;
    };
    // The Service REST's patchAllocatedValues: carry over what was allocated.
    let ns_view = Value::Object(ns_map.clone());
    if needs_cluster_ip(&os) && needs_cluster_ip(&ns_view) {
        if str_field(&ns_view, "clusterIP").is_empty()
            && let Some(v) = os.get("clusterIP")
        {
            ns_map.insert("clusterIP".into(), v.clone());
        }
        let new_ips_empty = ns_map
            .get("clusterIPs")
            .and_then(Value::as_array)
            .is_none_or(Vec::is_empty);
        if new_ips_empty && !strings(&os, "clusterIPs").is_empty() {
            ns_map.insert("clusterIPs".into(), os["clusterIPs"].clone());
        }
    }
    if needs_node_port(&os) && needs_node_port(&ns_view) {
        let node_ports = |spec: &Value| -> Vec<i64> {
            spec.get("ports")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|p| p.get("nodePort").and_then(Value::as_i64))
                        .filter(|n| *n != 0)
                        .collect()
                })
                .unwrap_or_default()
        };
        let old_used = node_ports(&os);
        let new_used = node_ports(&ns_view);
        let by_name: Vec<(String, i64)> = os
            .get("ports")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|p| {
                        (
                            str_field(p, "name").to_string(),
                            p.get("nodePort").and_then(Value::as_i64).unwrap_or(0),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        if let Some(ports) = ns_map.get_mut("ports").and_then(Value::as_array_mut) {
            for p in ports.iter_mut().filter_map(Value::as_object_mut) {
                if p.get("nodePort").and_then(Value::as_i64).unwrap_or(0) != 0 {
                    continue;
                }
                let name = p
                    .get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                if let Some((_, old_val)) = by_name.iter().find(|(n, _)| *n == name)
                    && *old_val != 0
                    && !(old_used.contains(old_val) && new_used.contains(old_val))
                {
                    p.insert("nodePort".into(), json!(old_val));
                }
            }
        }
    }
    if needs_hc_node_port(&os)
        && needs_hc_node_port(&ns_view)
        && ns_view
            .get("healthCheckNodePort")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            == 0
        && let Some(v) = os.get("healthCheckNodePort")
    {
        ns_map.insert("healthCheckNodePort".into(), v.clone());
    }
    // NormalizeClusterIPs on update.
    let ns_view = Value::Object(ns_map.clone());
    let (old_ip, new_ip) = (
        str_field(&os, "clusterIP"),
        str_field(&ns_view, "clusterIP"),
    );
    let (old_ips, new_ips) = (strings(&os, "clusterIPs"), strings(&ns_view, "clusterIPs"));
    let same_ips = old_ips == new_ips;
    if !old_ip.is_empty() && new_ip.is_empty() {
        if same_ips {
            ns_map.remove("clusterIPs");
        }
    } else if old_ip != new_ip && same_ips {
        if new_ip.is_empty() {
            ns_map.remove("clusterIPs");
        } else if new_ips.is_empty() || new_ips.len() == 1 {
            ns_map.insert("clusterIPs".into(), json!([new_ip]));
        } else if let Some(a) = ns_map.get_mut("clusterIPs").and_then(Value::as_array_mut) {
            a[0] = json!(new_ip);
        }
    } else if !new_ip.is_empty() && new_ips.is_empty() {
        ns_map.insert("clusterIPs".into(), json!([new_ip]));
    }
    // dropTypeDependentFields.
    let ns_view = Value::Object(ns_map.clone());
    let same_field = |k: &str| same(ns_view.get(k), os.get(k));
    if needs_cluster_ip(&os) && !needs_cluster_ip(&ns_view) {
        if same_field("clusterIPs") && same_field("clusterIP") {
            ns_map.remove("clusterIP");
            ns_map.remove("clusterIPs");
        }
        if same_field("ipFamilies") {
            ns_map.remove("ipFamilies");
        }
        if same_field("ipFamilyPolicy") {
            ns_map.remove("ipFamilyPolicy");
        }
    }
    let node_ports_of = |spec: &Value| -> Vec<i64> {
        spec.get("ports")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .map(|p| p.get("nodePort").and_then(Value::as_i64).unwrap_or(0))
                    .collect()
            })
            .unwrap_or_default()
    };
    if needs_node_port(&os)
        && !needs_node_port(&ns_view)
        && node_ports_of(&os) == node_ports_of(&ns_view)
        && let Some(ports) = ns_map.get_mut("ports").and_then(Value::as_array_mut)
    {
        for p in ports.iter_mut().filter_map(Value::as_object_mut) {
            p.remove("nodePort");
        }
    }
    if needs_hc_node_port(&os) && !needs_hc_node_port(&ns_view) && same_field("healthCheckNodePort")
    {
        ns_map.remove("healthCheckNodePort");
    }
    let (ot, nt) = (str_field(&os, "type"), str_field(&ns_view, "type"));
    if ot == "LoadBalancer" && nt != "LoadBalancer" {
        if ns_view.get("allocateLoadBalancerNodePorts").is_some()
            && same_field("allocateLoadBalancerNodePorts")
        {
            ns_map.remove("allocateLoadBalancerNodePorts");
        }
        if same_field("loadBalancerClass") {
            ns_map.remove("loadBalancerClass");
        }
    }
    let externally = |spec: &Value| {
        let t = str_field(spec, "type");
        t == "LoadBalancer"
            || t == "NodePort"
            || (t == "ClusterIP" && !strings(spec, "externalIPs").is_empty())
    };
    if externally(&os) && !externally(&ns_view) && same_field("externalTrafficPolicy") {
        ns_map.remove("externalTrafficPolicy");
    }
    if nt != "LoadBalancer"
        && let Some(st) = new.get_mut("status").and_then(obj_mut)
    {
        st.insert("loadBalancer".into(), json!({}));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qos() {
        let best = json!({"containers": [{"name": "a"}]});
        assert_eq!(pod_qos(&best), "BestEffort");
        let guaranteed = json!({"containers": [{"resources": {
            "limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}}]});
        assert_eq!(pod_qos(&guaranteed), "Guaranteed");
        let burst = json!({"containers": [{"resources": {"requests": {"cpu": "100m"}}}]});
        assert_eq!(pod_qos(&burst), "Burstable");
        // Equal values in different formats are equal (upstream compares values).
        let formats = json!({"containers": [{"resources": {
            "limits": {"cpu": "1000m", "memory": "1Gi"},
            "requests": {"cpu": "1", "memory": "1073741824"}}}]});
        assert_eq!(pod_qos(&formats), "Guaranteed");
    }

    #[test]
    fn affinity_keys() {
        let mut pod = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"affinity": {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{"topologyKey": "k", "labelSelector": {}, "matchLabelKeys": ["app"]}]}}}});
        mutate_pod_affinity(&mut pod);
        assert_eq!(
            pod["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
                [0]["labelSelector"]["matchExpressions"][0]["values"][0],
            "web"
        );
    }
}
