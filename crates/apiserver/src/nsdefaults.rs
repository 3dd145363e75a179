//! What every active namespace holds from the start: the `default` ServiceAccount (upstream's
//! ServiceAccount controller) and the `kube-root-ca.crt` ConfigMap with the CA that signs
//! this server's certificate (upstream's root-CA publisher). The ServiceAccount admission
//! plugin needs both before any pod can be created.
//!
//! Upstream runs these loops in kube-controller-manager; they live here until the controller
//! manager exists, and reconcile on every change of namespaces, service accounts or config
//! maps (and every 30 s), so a deleted account or an edited bundle comes back.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use crate::registry::{Registry, Resource, WriteOptions};

const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The config map the publisher keeps in `namespace`.
pub fn root_ca_config_map(namespace: &str, ca_pem: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": admission::plugins::serviceaccount::ROOT_CA_CONFIG_MAP,
            "namespace": namespace,
            "annotations": {"kubernetes.io/description": DESCRIPTION},
        },
        "data": {"ca.crt": ca_pem},
    })
}

struct Resources {
    namespaces: Arc<Resource>,
    accounts: Arc<Resource>,
    config_maps: Arc<Resource>,
}

impl Resources {
    fn of(registry: &Registry) -> Option<Resources> {
        Some(Resources {
            namespaces: registry.lookup("", "v1", "namespaces")?,
            accounts: registry.lookup("", "v1", "serviceaccounts")?,
            config_maps: registry.lookup("", "v1", "configmaps")?,
        })
    }
}

/// One pass over every active namespace.
async fn reconcile(registry: &Registry, r: &Resources, ca_pem: &str, opts: &WriteOptions) {
    let (namespaces, _) = r
        .namespaces
        .cacher
        .list(&|_| true, &format!("{}/", r.namespaces.info.storage_prefix));
    for ns in namespaces {
        let Some(obj) = ns.value() else { continue };
        if obj["status"]["phase"] == "Terminating" || api::meta::deletion_timestamp(&obj).is_some()
        {
            continue;
        }
        let name = ns.name.as_str();
        let sa_key = r.accounts.info.key(Some(name), "default");
        if r.accounts.cacher.get(&sa_key).is_none() {
            let body = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                              "metadata": {"name": "default", "namespace": name}});
            match registry.create(&r.accounts, Some(name), body, opts).await {
                Ok(_) => tracing::debug!(namespace = name, "created the default service account"),
                Err(e) if e.code == 409 => {}
                Err(e) => {
                    tracing::debug!(namespace = name, error = %e.message, "cannot create the default service account")
                }
            }
        }
        let want = root_ca_config_map(name, ca_pem);
        let cm_key = r.config_maps.info.key(
            Some(name),
            admission::plugins::serviceaccount::ROOT_CA_CONFIG_MAP,
        );
        let current = r.config_maps.cacher.get(&cm_key).and_then(|o| o.value());
        let result = match current {
            None => registry
                .create(&r.config_maps, Some(name), want, opts)
                .await
                .map(drop),
            Some(cur) if cur["data"] == want["data"] => Ok(()),
            Some(mut cur) => {
                cur["data"] = want["data"].clone();
                registry
                    .write_at(&r.config_maps, None, cur, opts)
                    .await
                    .map(drop)
            }
        };
        match result {
            Ok(()) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::debug!(namespace = name, error = %e.message, "cannot publish the root CA")
            }
        }
    }
}

/// Runs the loop until the process ends.
pub async fn run(registry: Arc<Registry>, ca_pem: String, opts: WriteOptions) {
    let Some(r) = Resources::of(&registry) else {
        return;
    };
    let mut ns_changes = r.namespaces.cacher.changes();
    let mut sa_changes = r.accounts.cacher.changes();
    let mut cm_changes = r.config_maps.cacher.changes();
    loop {
        reconcile(&registry, &r, &ca_pem, &opts).await;
        let wait = async {
            tokio::select! {
                _ = ns_changes.changed() => {}
                _ = sa_changes.changed() => {}
                _ = cm_changes.changed() => {}
            }
        };
        let _ = tokio::time::timeout(Duration::from_secs(30), wait).await;
    }
}

/// One pass, for start-up: the system namespaces have their account and bundle before the
/// server says it is ready.
pub async fn ensure(registry: &Registry, ca_pem: &str, opts: &WriteOptions) {
    if let Some(r) = Resources::of(registry) {
        reconcile(registry, &r, ca_pem, opts).await;
    }
}
