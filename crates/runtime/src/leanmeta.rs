//! Object metadata as the controllers, the scheduler and the simulated nodes decode it
//! from watch streams: every field of `ObjectMeta` but `managedFields`, which none reads.
//! serde skips that list without building it; decoding it was an eighth of the controller
//! manager's CPU at scale (every pod event and every metadata event of the garbage
//! collector carries it).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference, Time};
use kube::core::{ApiResource, DynamicResourceScope};
use serde::{Deserialize, Deserializer, Serialize};

/// `ObjectMeta`'s JSON without `managedFields` (an unknown field here, skipped unread).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fields {
    annotations: Option<BTreeMap<String, String>>,
    creation_timestamp: Option<Time>,
    deletion_grace_period_seconds: Option<i64>,
    deletion_timestamp: Option<Time>,
    finalizers: Option<Vec<String>>,
    generate_name: Option<String>,
    generation: Option<i64>,
    labels: Option<BTreeMap<String, String>>,
    name: Option<String>,
    namespace: Option<String>,
    owner_references: Option<Vec<OwnerReference>>,
    resource_version: Option<String>,
    self_link: Option<String>,
    uid: Option<String>,
}

/// Decodes `ObjectMeta` leaving `managedFields` out (`#[serde(deserialize_with)]`).
pub fn without_managed_fields<'de, D: Deserializer<'de>>(d: D) -> Result<ObjectMeta, D::Error> {
    let f = Option::<Fields>::deserialize(d)?;
    Ok(f.map(|f| ObjectMeta {
        annotations: f.annotations,
        creation_timestamp: f.creation_timestamp,
        deletion_grace_period_seconds: f.deletion_grace_period_seconds,
        deletion_timestamp: f.deletion_timestamp,
        finalizers: f.finalizers,
        generate_name: f.generate_name,
        generation: f.generation,
        labels: f.labels,
        managed_fields: None,
        name: f.name,
        namespace: f.namespace,
        owner_references: f.owner_references,
        resource_version: f.resource_version,
        self_link: f.self_link,
        uid: f.uid,
    })
    .unwrap_or_default())
}

/// A `PartialObjectMetadata` of any resource, decoded without `managedFields`: what the
/// garbage collector watches. As kube's `PartialObjectMeta`, its requests ask the server
/// for metadata only.
/// Its type fields are plain fields: a flattened `TypeMeta` (as kube's) would make serde
/// buffer the whole object before decoding it.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LeanObject {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, deserialize_with = "without_managed_fields")]
    pub metadata: ObjectMeta,
}

impl kube::Resource for LeanObject {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }
    fn group(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }
    fn version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }
    fn plural(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }
    fn metadata_api() -> bool {
        true
    }
    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A whole pod decoded without its `managedFields` (a third of a created pod's JSON, and
/// read by no watcher of pods but the API server itself). Watched as `Api<LeanPod>`; it
/// is the pod through `Deref`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LeanPod(pub Pod);

/// `Pod`'s fields, with its metadata decoded by [`without_managed_fields`].
#[derive(Deserialize)]
struct PodFields {
    #[serde(default, deserialize_with = "without_managed_fields")]
    metadata: ObjectMeta,
    spec: Option<PodSpec>,
    status: Option<PodStatus>,
}

impl<'de> Deserialize<'de> for LeanPod {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<LeanPod, D::Error> {
        let f = PodFields::deserialize(d)?;
        Ok(LeanPod(Pod {
            metadata: f.metadata,
            spec: f.spec,
            status: f.status,
        }))
    }
}

impl std::ops::Deref for LeanPod {
    type Target = Pod;

    fn deref(&self) -> &Pod {
        &self.0
    }
}

/// Implements `kube::Resource` for a pod decoded in part (`$t`, whose metadata is at
/// `$s.<path>`): it is watched and listed as the pods it stands for.
#[macro_export]
macro_rules! pod_resource {
    ($t:ty, |$s:ident| $($meta:tt)+) => {
        impl ::kube::Resource for $t {
            type DynamicType = ();
            type Scope = ::k8s_openapi::NamespaceResourceScope;

            fn kind(_: &()) -> ::std::borrow::Cow<'_, str> {
                <::k8s_openapi::api::core::v1::Pod as ::k8s_openapi::Resource>::KIND.into()
            }
            fn group(_: &()) -> ::std::borrow::Cow<'_, str> {
                <::k8s_openapi::api::core::v1::Pod as ::k8s_openapi::Resource>::GROUP.into()
            }
            fn version(_: &()) -> ::std::borrow::Cow<'_, str> {
                <::k8s_openapi::api::core::v1::Pod as ::k8s_openapi::Resource>::VERSION.into()
            }
            fn api_version(_: &()) -> ::std::borrow::Cow<'_, str> {
                <::k8s_openapi::api::core::v1::Pod as ::k8s_openapi::Resource>::API_VERSION.into()
            }
            fn plural(_: &()) -> ::std::borrow::Cow<'_, str> {
                <::k8s_openapi::api::core::v1::Pod as ::k8s_openapi::Resource>::URL_PATH_SEGMENT
                    .into()
            }
            fn meta(&self) -> &::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                let $s = self;
                &$($meta)+
            }
            fn meta_mut(
                &mut self,
            ) -> &mut ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                let $s = self;
                &mut $($meta)+
            }
        }
    };
}

pod_resource!(LeanPod, |p| p.0.metadata);

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    #[test]
    fn everything_but_managed_fields_is_decoded() {
        let meta = json!({
            "name": "p", "namespace": "ns", "uid": "u", "resourceVersion": "7",
            "generateName": "p-", "generation": 2, "selfLink": "/x",
            "creationTimestamp": "2026-01-01T00:00:00Z", "deletionTimestamp": "2026-01-02T00:00:00Z",
            "deletionGracePeriodSeconds": 30,
            "labels": {"a": "b"}, "annotations": {"c": "d"}, "finalizers": ["f"],
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs",
                                 "uid": "o", "controller": true}],
            "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {}}}],
        });
        let mut full: ObjectMeta = serde_json::from_value(meta.clone()).unwrap();
        full.managed_fields = None;
        let obj: LeanObject = serde_json::from_value(json!({
            "apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadata", "metadata": meta,
        }))
        .unwrap();
        assert_eq!(obj.metadata, full);
        assert_eq!(obj.kind.as_deref(), Some("PartialObjectMetadata"));
        // Absent or null metadata is empty metadata, as for ObjectMeta.
        let bare: LeanObject = serde_json::from_value(json!({"metadata": null})).unwrap();
        assert_eq!(bare.metadata, ObjectMeta::default());
        assert!(<LeanObject as kube::Resource>::metadata_api());
    }

    #[test]
    fn a_lean_pod_is_the_pod_without_its_managed_fields() {
        let pod = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"a": "b"},
                         "managedFields": [{"manager": "m", "operation": "Update"}]},
            "spec": {"nodeName": "n", "containers": [{"name": "c", "image": "i"}]},
            "status": {"phase": "Running", "podIP": "10.0.0.1"},
        });
        let mut full: Pod = serde_json::from_value(pod.clone()).unwrap();
        assert!(full.metadata.managed_fields.is_some());
        full.metadata.managed_fields = None;
        let lean: LeanPod = serde_json::from_value(pod).unwrap();
        assert_eq!(lean.0, full);
        assert_eq!(lean.spec.as_ref().unwrap().node_name.as_deref(), Some("n"));
        assert_eq!(
            <LeanPod as kube::Resource>::url_path(&(), Some("ns")),
            "/api/v1/namespaces/ns/pods"
        );
        // Wrong types are still refused.
        assert!(serde_json::from_value::<LeanPod>(json!({"spec": {"containers": 1}})).is_err());
    }
}
