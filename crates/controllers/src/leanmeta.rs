//! Object metadata as the controllers decode it from watch streams: every field of
//! `ObjectMeta` but `managedFields`, which no controller reads. serde skips that list
//! without building it; decoding it was an eighth of the controller manager's CPU at scale
//! (every pod event and every metadata event of the garbage collector carries it).

use std::collections::BTreeMap;

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
}
