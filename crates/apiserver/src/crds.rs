//! The CustomResourceDefinition controller inside the API server (upstream's
//! apiextensions-apiserver controllers): serves the resources of every CRD, marks CRDs
//! Established, and deletes a CRD's objects before the CRD itself goes.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use store::Backend;

use crate::registry::{Registry, WatchMsg, custom};

/// The finalizer that makes a CRD wait for its objects to be deleted.
pub const CLEANUP_FINALIZER: &str = "customresourcecleanup.apiextensions.k8s.io";

/// Runs until the registry is dropped.
pub async fn run(registry: Arc<Registry>) {
    let Some(crds) = registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    else {
        return;
    };
    loop {
        if !crds.cacher.wait_for(1, Duration::from_secs(10)).await {
            continue;
        }
        let mut events = crds.cacher.watch(
            None,
            Arc::new(|_| true),
            &crds.info.list_prefix(None),
            false,
            false,
        );
        sync(&registry, &crds).await;
        while let Some(msg) = events.recv().await {
            match msg {
                WatchMsg::Event(_, _) => {
                    // Coalesce bursts: everything queued is covered by one sync.
                    while let Ok(more) = events.try_recv() {
                        if matches!(more, WatchMsg::Error(_)) {
                            break;
                        }
                    }
                    sync(&registry, &crds).await;
                }
                WatchMsg::Error(_) => break,
                _ => {}
            }
        }
    }
}

/// Serves what the current CRDs define and moves each CRD along its lifecycle.
async fn sync(registry: &Arc<Registry>, crds: &crate::registry::Resource) {
    let (items, _) = crds.cacher.list(&|_| true, &crds.info.list_prefix(None));
    let mut custom = Vec::new();
    let mut schemas = Vec::new();
    for item in items {
        let Some(crd) = item.value() else { continue };
        custom.extend(custom::resources_of(&crd));
        if api::meta::deletion_timestamp(&crd).is_none() {
            schemas.extend(api::schema::CustomResourceVersion::from_crd(&crd));
        }
        if let Err(e) = lifecycle(registry, &crd).await {
            tracing::warn!(crd = %item.name(), error = %e, "CRD controller");
        }
    }
    registry.set_custom(custom, schemas);
}

async fn lifecycle(registry: &Arc<Registry>, crd: &Value) -> Result<(), store::StoreError> {
    let name = api::meta::name(crd).unwrap_or_default();
    let key = format!("/registry/apiextensions.k8s.io/customresourcedefinitions/{name}");
    let store: &Arc<dyn Backend> = &registry.store;
    let deleting = api::meta::deletion_timestamp(crd).is_some();
    let has_finalizer = api::meta::finalizers(crd).contains(&CLEANUP_FINALIZER);
    let established = crd["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == "Established" && c["status"] == "True")
    });
    if deleting {
        if has_finalizer {
            // Delete every object of the CRD, then let the CRD go.
            let group = crd["spec"]["group"].as_str().unwrap_or_default();
            let plural = crd["spec"]["names"]["plural"].as_str().unwrap_or_default();
            if !group.is_empty() && !plural.is_empty() {
                let prefix = format!("/registry/{group}/{plural}/");
                loop {
                    let page = store
                        .list(store::ListOptions {
                            prefix: prefix.clone(),
                            limit: 500,
                            ..Default::default()
                        })
                        .await?;
                    for kv in &page.kvs {
                        match store.delete(&kv.key, None).await {
                            Ok(_) | Err(store::StoreError::NotFound { .. }) => {}
                            Err(e) => return Err(e),
                        }
                    }
                    if !page.more && page.kvs.is_empty() {
                        break;
                    }
                    if !page.more {
                        continue;
                    }
                }
            }
            let others: Vec<Value> = api::meta::finalizers(crd)
                .into_iter()
                .filter(|f| *f != CLEANUP_FINALIZER)
                .map(|f| json!(f))
                .collect();
            if others.is_empty() {
                match store.delete(&key, None).await {
                    Ok(_) | Err(store::StoreError::NotFound { .. }) => {}
                    Err(e) => return Err(e),
                }
            } else {
                update(store, &key, |mut v| {
                    api::meta::metadata_mut(&mut v)
                        .insert("finalizers".into(), Value::Array(others.clone()));
                    Some(v)
                })
                .await?;
            }
        }
        return Ok(());
    }
    if has_finalizer && established {
        return Ok(());
    }
    let now = crate::registry::rfc3339(registry.clock.now_ms());
    update(store, &key, |mut v| {
        if !api::meta::finalizers(&v).contains(&CLEANUP_FINALIZER) {
            let m = api::meta::metadata_mut(&mut v);
            let list = m.entry("finalizers").or_insert_with(|| json!([]));
            if let Some(a) = list.as_array_mut() {
                a.push(json!(CLEANUP_FINALIZER));
            }
        }
        let status = custom::established_status(&v, &now);
        v["status"] = status;
        Some(v)
    })
    .await
}

/// A read-modify-write of a stored object (bypassing admission: this is the server itself).
async fn update(
    store: &Arc<dyn Backend>,
    key: &str,
    mut f: impl FnMut(Value) -> Option<Value>,
) -> Result<(), store::StoreError> {
    store::guaranteed_update::<_, store::StoreError>(&**store, key, |cur| {
        let Some(kv) = cur else {
            return Ok(store::Update::Keep);
        };
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return Ok(store::Update::Keep);
        };
        match f(v) {
            Some(new) => Ok(store::Update::Put {
                value: bytes::Bytes::from(crate::registry::stored::encode_for_store(new)),
                ttl: None,
            }),
            None => Ok(store::Update::Keep),
        }
    })
    .await
    .map(|_| ())
}
