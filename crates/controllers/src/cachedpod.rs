//! The controllers' cached pod: the fields of a `v1` Pod that some controller reads, with
//! the same names, types and JSON as upstream's, decoded straight from the watch stream.
//!
//! Pods are most of a cluster's objects and every controller manager caches all of them
//! in its shared pod informer. A typed `k8s_openapi` pod costs about 10 KB even with what
//! no controller reads cleared (its structs are sized for every optional field of the
//! API, and each container alone is over a kilobyte), where the pod's JSON is 2–5 KB.
//! This type keeps the rest out of memory altogether: ownership and the rest of the
//! metadata (without `managedFields`), the node, scheduling constraints, priority,
//! hostname and subdomain, containers' names, ports and resources, claims among the
//! volumes, and the status's phase, conditions, IPs, times, restart counts and container
//! states. The spec (all but node and hostname) is shared between the pods of one
//! template.
//! Controllers read it as they would read a `Pod` (`pod.spec.as_ref()?.node_name`), and
//! what they create or write is never built from it.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use k8s_openapi::api::core::v1::{
    Affinity, ContainerPort, ContainerState, HostIP, PersistentVolumeClaimVolumeSource,
    PodCondition, PodIP, ResourceRequirements, Toleration,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use serde::{Deserialize, Serialize};

/// A pod as the controllers cache it (see the module documentation).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CachedPod {
    #[serde(default)]
    api_version: V1,
    #[serde(default)]
    kind: PodKind,
    #[serde(
        default,
        deserialize_with = "runtime::leanmeta::without_managed_fields"
    )]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

/// A constant JSON field that costs nothing per object: it serializes as `$value` and
/// accepts anything when read.
macro_rules! constant_field {
    ($name:ident, $value:literal) => {
        #[derive(Clone, Copy, Debug, Default, PartialEq)]
        struct $name;

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str($value)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                serde::de::IgnoredAny::deserialize(d).map(|_| $name)
            }
        }
    };
}

constant_field!(V1, "v1");
constant_field!(PodKind, "Pod");

/// A pod's spec: its node and hostname, and the rest of what controllers read, which is
/// the same for every pod made from one template and so is shared between them (see
/// [`intern`]). Fields read as a `k8s_openapi` spec's do: `spec.node_name` is the pod's
/// own, `spec.containers` and the rest reach the shared part.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(from = "SpecFields")]
pub struct PodSpec {
    pub hostname: Option<String>,
    pub node_name: Option<String>,
    shared: Arc<SpecFields>,
}

impl std::ops::Deref for PodSpec {
    type Target = SpecFields;

    fn deref(&self) -> &SpecFields {
        &self.shared
    }
}

/// Writing through a spec copies its shared part first, so no other pod sees the change.
impl std::ops::DerefMut for PodSpec {
    fn deref_mut(&mut self) -> &mut SpecFields {
        Arc::make_mut(&mut self.shared)
    }
}

impl From<SpecFields> for PodSpec {
    fn from(mut fields: SpecFields) -> PodSpec {
        let hostname = fields.hostname.take();
        let node_name = fields.node_name.take();
        // Decoding leaves spare capacity in lists.
        fields.containers.shrink_to_fit();
        if let Some(c) = fields.init_containers.as_mut() {
            c.shrink_to_fit();
        }
        if let Some(t) = fields.tolerations.as_mut() {
            t.shrink_to_fit();
        }
        if let Some(v) = fields.volumes.as_mut() {
            v.shrink_to_fit();
        }
        PodSpec {
            hostname,
            node_name,
            shared: intern(fields),
        }
    }
}

impl Serialize for PodSpec {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        /// The shared fields (whose own hostname and node are empty, so skipped) with the
        /// pod's.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Wire<'a> {
            #[serde(flatten)]
            shared: &'a SpecFields,
            #[serde(skip_serializing_if = "Option::is_none")]
            hostname: &'a Option<String>,
            #[serde(skip_serializing_if = "Option::is_none")]
            node_name: &'a Option<String>,
        }
        Wire {
            shared: &self.shared,
            hostname: &self.hostname,
            node_name: &self.node_name,
        }
        .serialize(s)
    }
}

/// The one shared copy of `fields` among the live cached pods: pods made from one
/// template (a ReplicaSet's, a Job's) have equal specs but for node and hostname, and a
/// spec is most of a cached pod. Found by a hash of the fields' JSON and compared whole.
/// Entries whose pods are all gone are swept once the table has doubled since the last
/// sweep, so the table stays within twice the live specs.
fn intern(fields: SpecFields) -> Arc<SpecFields> {
    use std::hash::{Hash, Hasher};
    static TABLE: Mutex<Option<Interner>> = Mutex::new(None);
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    match serde_json::to_vec(&fields) {
        Ok(json) => json.hash(&mut hasher),
        Err(_) => return Arc::new(fields),
    }
    let hash = hasher.finish();
    let mut table = TABLE
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let table = table.get_or_insert_with(Interner::default);
    let candidates = table.specs.entry(hash).or_default();
    if let Some(found) = candidates
        .iter()
        .filter_map(std::sync::Weak::upgrade)
        .find(|c| **c == fields)
    {
        return found;
    }
    let shared = Arc::new(fields);
    candidates.retain(|c| c.strong_count() > 0);
    candidates.push(Arc::downgrade(&shared));
    if table.specs.len() > 2 * table.swept_len.max(1024) {
        table
            .specs
            .retain(|_, c| c.iter().any(|c| c.strong_count() > 0));
        table.swept_len = table.specs.len();
    }
    shared
}

/// The table of [`intern`]: spec hash → the live specs with it.
#[derive(Default)]
struct Interner {
    specs: HashMap<u64, Vec<std::sync::Weak<SpecFields>>>,
    /// How many hashes were left by the last sweep.
    swept_len: usize,
}

/// The spec fields the controllers read. Those of a [`PodSpec`]'s shared part leave
/// `hostname` and `nodeName` empty: each pod has its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SpecFields {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_deadline_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    #[serde(default)]
    pub containers: Vec<Container>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hostname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<Container>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    node_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<BTreeMap<String, String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead: Option<BTreeMap<String, Quantity>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority_class_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheduler_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub termination_grace_period_seconds: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerations: Option<Vec<Toleration>>,
    #[serde(
        default,
        deserialize_with = "claims_only",
        skip_serializing_if = "Option::is_none"
    )]
    pub volumes: Option<Vec<Volume>>,
}

/// A container's name, ports and resources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

/// A volume backed by a PersistentVolumeClaim (the only volumes a controller reads).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Volume {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<PersistentVolumeClaimVolumeSource>,
}

/// Reads `volumes`, keeping those backed by a claim.
fn claims_only<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Vec<Volume>>, D::Error> {
    let volumes: Option<Vec<Volume>> = Deserialize::deserialize(d)?;
    Ok(volumes.map(|v| {
        v.into_iter()
            .filter(|v| v.persistent_volume_claim.is_some())
            .collect()
    }))
}

/// The status fields the controllers read.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodCondition>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "hostIP")]
    pub host_ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "hostIPs")]
    pub host_ips: Option<Vec<HostIP>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_container_statuses: Option<Vec<ContainerStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "podIP")]
    pub pod_ip: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[serde(rename = "podIPs")]
    pub pod_ips: Option<Vec<PodIP>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub qos_class: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,
}

/// A container's name, readiness, restarts and state.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerStatus {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub ready: bool,
    #[serde(default)]
    pub restart_count: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ContainerState>,
}

// The `v1` `pods` resource, named as `k8s_openapi`'s `Pod` names it.
runtime::pod_resource!(CachedPod, |p| p.metadata);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    /// A pod as the API server sends it, with much that no controller reads.
    fn wire(name: &str, node: &str, image: &str) -> serde_json::Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                    "name": "web", "uid": "rs-1", "controller": true}],
                "managedFields": [{"manager": "kubectl", "operation": "Update",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:spec": {}}}]},
            "spec": {
                "nodeName": node, "hostname": name, "subdomain": "web",
                "containers": [{"name": "web", "image": image,
                    "env": [{"name": "A", "value": "1"}],
                    "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
                    "ports": [{"containerPort": 80, "name": "http"}],
                    "resources": {"requests": {"cpu": "100m"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data"}},
                    {"name": "cfg", "configMap": {"name": "cfg"}}],
                "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": 300}],
                "securityContext": {"runAsUser": 1000}, "priorityClassName": "gold",
                "dnsPolicy": "ClusterFirst",
            },
            "status": {
                "phase": "Running", "podIP": "10.42.0.5", "podIPs": [{"ip": "10.42.0.5"}],
                "hostIP": "10.0.0.1",
                "conditions": [{"type": "Ready", "status": "True",
                    "lastTransitionTime": "2026-01-01T00:00:00Z"}],
                "containerStatuses": [{"name": "web", "ready": true, "restartCount": 2,
                    "image": image, "imageID": "sha256:abc", "containerID": "containerd://x",
                    "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}}}],
            },
        })
    }

    #[test]
    fn keeps_what_controllers_read_with_upstream_names() {
        let p: CachedPod = serde_json::from_value(wire("web-0", "n1", "web:1")).unwrap();
        let spec = p.spec.as_ref().unwrap();
        assert_eq!(spec.node_name.as_deref(), Some("n1"));
        assert_eq!(spec.hostname.as_deref(), Some("web-0"));
        assert_eq!(spec.subdomain.as_deref(), Some("web"));
        assert_eq!(spec.containers[0].name, "web");
        assert_eq!(
            spec.containers[0].ports.as_ref().unwrap()[0].container_port,
            80
        );
        // Only volumes backed by a claim are kept.
        let volumes = spec.volumes.as_ref().unwrap();
        assert_eq!(volumes.len(), 1);
        assert_eq!(volumes[0].name, "data");
        let status = p.status.as_ref().unwrap();
        assert_eq!(status.pod_ip.as_deref(), Some("10.42.0.5"));
        assert_eq!(status.host_ip.as_deref(), Some("10.0.0.1"));
        assert_eq!(
            status.container_statuses.as_ref().unwrap()[0].restart_count,
            2
        );

        // Its JSON is the same pod without what was dropped: what the controllers that
        // work on JSON see.
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(v["apiVersion"], "v1");
        assert_eq!(v["kind"], "Pod");
        assert_eq!(v["spec"]["nodeName"], "n1");
        assert_eq!(v["spec"]["hostname"], "web-0");
        assert_eq!(
            v["spec"]["containers"][0]["resources"]["requests"]["cpu"],
            "100m"
        );
        assert!(v["spec"]["containers"][0]["env"].is_null());
        assert!(v["spec"]["securityContext"].is_null());
        assert_eq!(v["spec"]["priorityClassName"], "gold");
        assert_eq!(v["status"]["podIPs"][0]["ip"], "10.42.0.5");
        assert_eq!(v["status"]["conditions"][0]["type"], "Ready");
        assert!(v["status"]["containerStatuses"][0]["image"].is_null());
        assert_eq!(v["metadata"]["ownerReferences"][0]["uid"], "rs-1");
        let again: CachedPod = serde_json::from_value(v).unwrap();
        assert_eq!(again, p);
    }

    #[test]
    fn pods_of_one_template_share_their_spec() {
        let a: CachedPod = serde_json::from_value(wire("web-0", "n1", "web:1")).unwrap();
        let b: CachedPod = serde_json::from_value(wire("web-1", "n2", "web:1")).unwrap();
        let c: CachedPod = serde_json::from_value(wire("web-2", "n1", "web:2")).unwrap();
        let (sa, sb, sc) = (
            a.spec.as_ref().unwrap(),
            b.spec.as_ref().unwrap(),
            c.spec.as_ref().unwrap(),
        );
        // Node and hostname are each pod's own; the rest is one copy.
        assert!(Arc::ptr_eq(&sa.shared, &sb.shared));
        assert_eq!(sb.node_name.as_deref(), Some("n2"));
        assert_eq!(sb.hostname.as_deref(), Some("web-1"));
        // The image is not kept, so a new image alone does not make a new copy; a
        // different port does.
        assert!(Arc::ptr_eq(&sa.shared, &sc.shared));
        let mut other = wire("web-3", "n1", "web:1");
        other["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(81);
        let d: CachedPod = serde_json::from_value(other).unwrap();
        assert!(!Arc::ptr_eq(&sa.shared, &d.spec.as_ref().unwrap().shared));
        assert_ne!(a.spec, d.spec);
        // A write through one pod's spec is its own.
        let mut e = b.clone();
        e.spec.as_mut().unwrap().containers[0].ports = None;
        assert!(sa.containers[0].ports.is_some());
        assert!(e.spec.as_ref().unwrap().containers[0].ports.is_none());
        // Once every pod holding a spec is gone, an equal spec is a new copy.
        let weak = Arc::downgrade(&d.spec.as_ref().unwrap().shared);
        drop(d);
        assert!(weak.upgrade().is_none());
    }

    #[test]
    fn is_the_v1_pods_resource() {
        use kube::Resource;
        assert_eq!(
            CachedPod::url_path(&(), Some("ns")),
            "/api/v1/namespaces/ns/pods"
        );
        assert_eq!(CachedPod::kind(&()), "Pod");
    }
}
