//! The root CA publisher (upstream's `pkg/controller/certificates/rootcacertpublisher`):
//! every active namespace has the `kube-root-ca.crt` ConfigMap holding the CA that
//! verifies the API server (`ca.crt`) and the `kubernetes.io/description` annotation;
//! an edited bundle is put back and a deleted one re-created.
//!
//! [`plan`] is the pure decision; [`run_root_ca_publisher`] feeds it from the namespace and
//! ConfigMap informers (a namespace added or updated while active, the ConfigMap updated
//! or deleted) and writes as the `root-ca-cert-publisher` service account.

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::workqueue::WorkQueue;

use crate::informers::{self, Informer, Next};

/// The ConfigMap's name (upstream's `RootCACertConfigMapName`).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
/// The annotation describing it.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Upstream's description.
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// What the publisher does in one namespace.
#[derive(Debug, PartialEq)]
pub enum Action {
    Nothing,
    Create(ConfigMap),
    /// The cached ConfigMap with its data and annotation put right (its resourceVersion
    /// kept, so a concurrent change is a conflict).
    Update(ConfigMap),
}

fn data(ca: &str) -> BTreeMap<String, String> {
    BTreeMap::from([("ca.crt".to_string(), ca.to_string())])
}

/// `syncNamespace`: the ConfigMap to create or fix in `ns`, given the cached one.
pub fn plan(ns: &Namespace, current: Option<&ConfigMap>, ca: &str) -> Action {
    if !crate::serviceaccounts::is_active(ns) {
        return Action::Nothing;
    }
    let want = data(ca);
    match current {
        None => Action::Create(ConfigMap {
            metadata: ObjectMeta {
                name: Some(ROOT_CA_CONFIG_MAP.into()),
                namespace: ns.metadata.name.clone(),
                annotations: Some(BTreeMap::from([(
                    DESCRIPTION_ANNOTATION.to_string(),
                    DESCRIPTION.to_string(),
                )])),
                ..Default::default()
            },
            data: Some(want),
            ..Default::default()
        }),
        Some(cm) => {
            let described = cm
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
                .is_some_and(|d| !d.is_empty());
            if cm.data.as_ref() == Some(&want) && described {
                return Action::Nothing;
            }
            let mut cm = cm.clone();
            cm.data = Some(want);
            cm.metadata
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(DESCRIPTION_ANNOTATION.into(), DESCRIPTION.into());
            Action::Update(cm)
        }
    }
}

struct Shared {
    namespaces: Store<Namespace>,
    config_maps: Store<ConfigMap>,
    queue: WorkQueue<String>,
    writer: Client,
    ca: String,
}

async fn sync(s: Arc<Shared>, name: String) -> Result<(), kube::Error> {
    let Some(ns) = s.namespaces.get(&ObjectRef::new(&name)) else {
        return Ok(());
    };
    let current = s
        .config_maps
        .get(&ObjectRef::new(ROOT_CA_CONFIG_MAP).within(&name));
    let api: Api<ConfigMap> = Api::namespaced(s.writer.clone(), &name);
    match plan(&ns, current.as_deref(), &s.ca) {
        Action::Nothing => Ok(()),
        Action::Create(cm) => match api.create(&PostParams::default(), &cm).await {
            Ok(_) => {
                tracing::debug!(namespace = %name, "published the root CA");
                Ok(())
            }
            Err(e) if crate::serviceaccounts::namespace_gone(&e) => Ok(()),
            Err(e) => Err(e),
        },
        Action::Update(cm) => api
            .replace(ROOT_CA_CONFIG_MAP, &PostParams::default(), &cm)
            .await
            .map(drop),
    }
}

/// Runs the publisher of `ca` (PEM) with `workers` workers until the informers stop.
pub async fn run_root_ca_publisher(
    namespaces: Arc<Informer<Namespace>>,
    config_maps: Arc<Informer<ConfigMap>>,
    writer: Client,
    ca: String,
    workers: usize,
) {
    let shared = Arc::new(Shared {
        namespaces: namespaces.store.clone(),
        config_maps: config_maps.store.clone(),
        queue: WorkQueue::named("root_ca_cert_publisher"),
        writer,
        ca,
    });
    let mut ns_events = namespaces.subscribe();
    let mut cm_events = config_maps.subscribe();
    let queue = shared.queue.clone();
    let store = namespaces.store.clone();
    tokio::spawn(async move {
        let enqueue_all = |queue: &WorkQueue<String>| {
            for ns in store.state() {
                queue.add(ns.metadata.name.clone().unwrap_or_default());
            }
        };
        let ours = |cm: &ConfigMap| cm.metadata.name.as_deref() == Some(ROOT_CA_CONFIG_MAP);
        loop {
            tokio::select! {
                e = informers::next(&mut ns_events) => match e {
                    Next::Apply(ns) if crate::serviceaccounts::is_active(&ns) => {
                        queue.add(ns.metadata.name.clone().unwrap_or_default());
                    }
                    Next::Resync => enqueue_all(&queue),
                    Next::Apply(_) | Next::Delete(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut cm_events) => match e {
                    Next::Apply(cm) | Next::Delete(cm) if ours(&cm) => {
                        queue.add(cm.metadata.namespace.clone().unwrap_or_default());
                    }
                    Next::Resync => enqueue_all(&queue),
                    Next::Apply(_) | Next::Delete(_) | Next::Other => {}
                    Next::Closed => break,
                },
            }
        }
    });
    namespaces.synced().await;
    config_maps.synced().await;
    for ns in namespaces.store.state() {
        shared
            .queue
            .add(ns.metadata.name.clone().unwrap_or_default());
    }
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "root-ca-cert-publisher",
        sync,
    );
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    const CA: &str = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n";

    fn ns(phase: &str) -> Namespace {
        serde_json::from_value(json!({"metadata": {"name": "dev"}, "status": {"phase": phase}}))
            .unwrap()
    }

    fn cm(v: serde_json::Value) -> ConfigMap {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn a_missing_bundle_is_created_with_the_description() {
        let Action::Create(c) = plan(&ns("Active"), None, CA) else {
            panic!("expected a create")
        };
        assert_eq!(c.metadata.name.as_deref(), Some(ROOT_CA_CONFIG_MAP));
        assert_eq!(c.metadata.namespace.as_deref(), Some("dev"));
        assert_eq!(c.data.unwrap()["ca.crt"], CA);
        assert_eq!(
            c.metadata.annotations.unwrap()[DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );
    }

    #[test]
    fn an_edited_bundle_is_put_back() {
        let edited = cm(
            json!({"metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": "dev", "resourceVersion": "7",
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION}},
            "data": {"ca.crt": "tampered", "extra": "x"}}),
        );
        let Action::Update(c) = plan(&ns("Active"), Some(&edited), CA) else {
            panic!("expected an update")
        };
        assert_eq!(c.data, Some(data(CA)), "extra keys go too");
        assert_eq!(c.metadata.resource_version.as_deref(), Some("7"));
        // A missing description is restored as well.
        let undescribed = cm(
            json!({"metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": "dev",
            "annotations": {"other": "kept"}}, "data": {"ca.crt": CA}}),
        );
        let Action::Update(c) = plan(&ns("Active"), Some(&undescribed), CA) else {
            panic!("expected an update")
        };
        let a = c.metadata.annotations.unwrap();
        assert_eq!(a[DESCRIPTION_ANNOTATION], DESCRIPTION);
        assert_eq!(a["other"], "kept");
    }

    #[test]
    fn a_correct_bundle_or_a_terminating_namespace_needs_nothing() {
        let good = cm(
            json!({"metadata": {"name": ROOT_CA_CONFIG_MAP, "namespace": "dev",
            "annotations": {DESCRIPTION_ANNOTATION: "anything"}}, "data": {"ca.crt": CA}}),
        );
        assert_eq!(plan(&ns("Active"), Some(&good), CA), Action::Nothing);
        assert_eq!(plan(&ns("Terminating"), None, CA), Action::Nothing);
    }
}
