//! An in-memory [`Cluster`] for plugin tests.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use api::ApiError;
use api::status::GroupResource;
use serde_json::Value;

use crate::Cluster;

/// Objects by (group, plural, namespace, name), with resourceVersions counted from 1.
#[derive(Default)]
pub struct FakeCluster {
    objects: Mutex<BTreeMap<(String, String, String, String), Value>>,
    revision: Mutex<u64>,
}

impl FakeCluster {
    pub fn new() -> Self {
        FakeCluster::default()
    }

    /// Adds or replaces an object (its namespace and name come from its metadata).
    pub fn put(&self, group: &str, plural: &str, mut object: Value) {
        let mut rev = self.revision.lock().unwrap_or_else(|e| e.into_inner());
        *rev += 1;
        api::meta::set_str(&mut object, "resourceVersion", rev.to_string());
        let key = (
            group.to_string(),
            plural.to_string(),
            api::meta::namespace(&object)
                .unwrap_or_default()
                .to_string(),
            api::meta::name(&object).unwrap_or_default().to_string(),
        );
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, object);
    }

    /// The object, if present.
    pub fn object(&self, group: &str, plural: &str, namespace: &str, name: &str) -> Option<Value> {
        self.objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&(
                group.to_string(),
                plural.to_string(),
                namespace.to_string(),
                name.to_string(),
            ))
            .cloned()
    }
}

#[async_trait::async_trait]
impl Cluster for FakeCluster {
    /// Kinds map to their lower-cased plural (`ConfigMap` → `configmaps`); only
    /// `Namespace`, `Node` and kinds ending in `Class` are cluster-scoped.
    async fn resource_for_kind(
        &self,
        _group: &str,
        _version: &str,
        kind: &str,
    ) -> Option<(String, bool)> {
        let namespaced = !matches!(kind, "Namespace" | "Node") && !kind.ends_with("Class");
        Some((format!("{}s", kind.to_lowercase()), namespaced))
    }

    async fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        Ok(self.object(group, plural, namespace, name).map(Arc::new))
    }

    async fn list(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        Ok(self
            .objects
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|((g, p, ns, _), _)| {
                g == group && p == plural && (namespace.is_empty() || ns == namespace)
            })
            .map(|(_, v)| Arc::new(v.clone()))
            .collect())
    }

    async fn update(
        &self,
        group: &str,
        plural: &str,
        _subresource: &str,
        object: Value,
    ) -> Result<Value, ApiError> {
        let ns = api::meta::namespace(&object)
            .unwrap_or_default()
            .to_string();
        let name = api::meta::name(&object).unwrap_or_default().to_string();
        let gr = GroupResource {
            group,
            resource: plural,
        };
        let Some(current) = self.object(group, plural, &ns, &name) else {
            return Err(ApiError::not_found(gr, &name));
        };
        if api::meta::resource_version(&object) != api::meta::resource_version(&current) {
            return Err(ApiError::conflict(gr, &name, ApiError::MODIFIED));
        }
        self.put(group, plural, object);
        self.object(group, plural, &ns, &name)
            .ok_or_else(|| ApiError::internal("object vanished"))
    }
}
