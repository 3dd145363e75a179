//! The ServiceAccount controller (upstream's `pkg/controller/serviceaccount`
//! `ServiceAccountsController`): every active namespace has the `default` ServiceAccount,
//! created when the namespace appears and again whenever it is deleted.
//!
//! [`missing`] is the pure decision; [`run_service_accounts`] feeds it from the namespace
//! and ServiceAccount informers (a namespace added or updated, an account deleted) and
//! creates what is missing as the `service-account-controller` service account.

use std::sync::Arc;

use k8s_openapi::api::core::v1::{Namespace, ServiceAccount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Client;
use kube::api::{Api, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::workqueue::WorkQueue;

use crate::informers::{self, Informer, Next};

/// The accounts every namespace gets (upstream's `ServiceAccountsToEnsure`).
pub const ACCOUNTS_TO_ENSURE: &[&str] = &["default"];

/// Whether a namespace takes new content: not `Terminating`, not being deleted (upstream
/// checks `status.phase == Active`; a namespace without a phase yet is treated as active).
pub fn is_active(ns: &Namespace) -> bool {
    ns.metadata.deletion_timestamp.is_none()
        && ns
            .status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .is_none_or(|p| p == "Active")
}

/// `syncNamespace`: the accounts to create in `ns`, given which exist in the cache.
pub fn missing(ns: &Namespace, exists: impl Fn(&str) -> bool) -> Vec<ServiceAccount> {
    if !is_active(ns) {
        return Vec::new();
    }
    let namespace = ns.metadata.name.clone().unwrap_or_default();
    ACCOUNTS_TO_ENSURE
        .iter()
        .filter(|name| !exists(name))
        .map(|name| ServiceAccount {
            metadata: ObjectMeta {
                name: Some((*name).to_string()),
                namespace: Some(namespace.clone()),
                ..Default::default()
            },
            ..Default::default()
        })
        .collect()
}

struct Shared {
    namespaces: Store<Namespace>,
    accounts: Store<ServiceAccount>,
    queue: WorkQueue<String>,
    writer: Client,
}

/// Whether a write error means the namespace is gone or terminating (upstream ignores
/// `NotFound` and the `NamespaceTerminating` cause rather than retrying).
pub(crate) fn namespace_gone(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(r) => {
            r.code == 404 || (r.code == 403 && r.message.contains("because it is being terminated"))
        }
        _ => false,
    }
}

async fn sync(s: Arc<Shared>, name: String) -> Result<(), kube::Error> {
    let Some(ns) = s.namespaces.get(&ObjectRef::new(&name)) else {
        return Ok(());
    };
    let create = missing(&ns, |sa| {
        s.accounts.get(&ObjectRef::new(sa).within(&name)).is_some()
    });
    let api: Api<ServiceAccount> = Api::namespaced(s.writer.clone(), &name);
    for sa in create {
        match api.create(&PostParams::default(), &sa).await {
            Ok(_) => tracing::debug!(namespace = %name, "created the default service account"),
            Err(kube::Error::Api(e)) if e.code == 409 => {}
            Err(e) if namespace_gone(&e) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Runs the controller with `workers` workers until the informers stop.
pub async fn run_service_accounts(
    namespaces: Arc<Informer<Namespace>>,
    accounts: Arc<Informer<ServiceAccount>>,
    writer: Client,
    workers: usize,
) {
    let shared = Arc::new(Shared {
        namespaces: namespaces.store.clone(),
        accounts: accounts.store.clone(),
        queue: WorkQueue::named("serviceaccount"),
        writer,
    });
    let mut ns_events = namespaces.subscribe();
    let mut sa_events = accounts.subscribe();
    let queue = shared.queue.clone();
    let store = namespaces.store.clone();
    tokio::spawn(async move {
        let enqueue_all = |queue: &WorkQueue<String>| {
            for ns in store.state() {
                queue.add(ns.metadata.name.clone().unwrap_or_default());
            }
        };
        loop {
            tokio::select! {
                e = informers::next(&mut ns_events) => match e {
                    Next::Apply(ns) => queue.add(ns.metadata.name.clone().unwrap_or_default()),
                    Next::Resync => enqueue_all(&queue),
                    Next::Delete(_) | Next::Other => {}
                    Next::Closed => break,
                },
                e = informers::next(&mut sa_events) => match e {
                    Next::Delete(sa) => {
                        queue.add(sa.metadata.namespace.clone().unwrap_or_default());
                    }
                    Next::Resync => enqueue_all(&queue),
                    Next::Apply(_) | Next::Other => {}
                    Next::Closed => break,
                },
            }
        }
    });
    namespaces.synced().await;
    accounts.synced().await;
    for ns in namespaces.store.state() {
        shared
            .queue
            .add(ns.metadata.name.clone().unwrap_or_default());
    }
    crate::run::spawn_workers(&shared, &shared.queue, workers, "serviceaccount", sync);
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn ns(name: &str, phase: Option<&str>, deleting: bool) -> Namespace {
        let mut v = serde_json::json!({"metadata": {"name": name}});
        if let Some(p) = phase {
            v["status"] = serde_json::json!({"phase": p});
        }
        if deleting {
            v["metadata"]["deletionTimestamp"] = serde_json::json!("2024-01-01T00:00:00Z");
        }
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn an_active_namespace_gets_the_default_account() {
        let got = missing(&ns("dev", Some("Active"), false), |_| false);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].metadata.name.as_deref(), Some("default"));
        assert_eq!(got[0].metadata.namespace.as_deref(), Some("dev"));
        // Without a phase yet (a brand-new namespace) too.
        assert_eq!(missing(&ns("dev", None, false), |_| false).len(), 1);
    }

    #[test]
    fn an_existing_account_is_left_alone() {
        assert!(missing(&ns("dev", Some("Active"), false), |n| n == "default").is_empty());
    }

    #[test]
    fn terminating_namespaces_get_nothing() {
        assert!(missing(&ns("dev", Some("Terminating"), false), |_| false).is_empty());
        assert!(missing(&ns("dev", Some("Active"), true), |_| false).is_empty());
    }
}
