//! The API server's health checks, named as upstream's: `ping`; `etcd` (the store
//! answers a read within 2 s, whichever backend: k3s's kine names it so too); the
//! post-start hooks this server runs, each passing once its step of the start-up is done;
//! and for `/readyz` also `etcd-readiness`, `informer-sync` (every resource's watch cache
//! filled) and `shutdown`. The endpoints' answers are `api::health`'s.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use api::health::{Check, PING, SHUTDOWN};

/// The post-start hooks, in the order start-up completes them.
pub const BOOTSTRAP_CONTROLLER: &str = "poststarthook/bootstrap-controller";
pub const PRIORITY_CLASSES: &str = "poststarthook/scheduling/bootstrap-system-priority-classes";
pub const RBAC_ROLES: &str = "poststarthook/rbac/bootstrap-roles";
pub const AUTHENTICATION_INFO: &str = "poststarthook/start-cluster-authentication-info-controller";
const HOOKS: &[&str] = &[
    BOOTSTRAP_CONTROLLER,
    PRIORITY_CLASSES,
    RBAC_ROLES,
    AUTHENTICATION_INFO,
];

/// Start-up steps also checked by `/readyz` only.
pub const INFORMER_SYNC: &str = "informer-sync";

const ETCD: &str = "etcd";
const ETCD_READINESS: &str = "etcd-readiness";

/// How long the store may take to answer the `etcd` check (upstream's
/// `--etcd-healthcheck-timeout`).
const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// What the checks read: the steps of the start-up done, and whether the server stops.
#[derive(Debug, Default)]
pub struct Health {
    done: Mutex<BTreeSet<&'static str>>,
    stopping: AtomicBool,
}

impl Health {
    /// Marks a start-up step (a hook, or [`INFORMER_SYNC`]) done.
    pub fn done(&self, step: &'static str) {
        self.done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(step);
    }

    /// Fails `shutdown` from now on.
    pub fn stopping(&self) {
        self.stopping.store(true, Ordering::SeqCst);
    }

    fn is_done(&self, step: &str) -> bool {
        self.done
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(step)
    }

    /// The checks of endpoint `name` (`healthz`, `livez` or `readyz`).
    pub fn checks(name: &str) -> Vec<Check> {
        let mut checks = vec![Check::named(PING), Check::grouped(ETCD, ETCD)];
        if name == "readyz" {
            checks.push(Check::grouped(ETCD_READINESS, ETCD_READINESS));
            checks.push(Check::named(INFORMER_SYNC));
        }
        checks.extend(HOOKS.iter().map(|h| Check::named(*h)));
        if name == "readyz" {
            checks.push(Check::named(SHUTDOWN));
        }
        checks
    }

    /// Runs the check `name`; `store` answers the store's.
    pub async fn run(&self, name: &str, store: &dyn store::Backend) -> Result<(), String> {
        match name {
            PING => Ok(()),
            ETCD | ETCD_READINESS => {
                match tokio::time::timeout(STORE_TIMEOUT, store.get("/registry/health")).await {
                    Ok(Ok(_)) => Ok(()),
                    Ok(Err(e)) => Err(format!("error getting data from etcd: {e}")),
                    Err(_) => Err(format!(
                        "etcd did not answer within {}s",
                        STORE_TIMEOUT.as_secs()
                    )),
                }
            }
            SHUTDOWN if self.stopping.load(Ordering::SeqCst) => {
                Err("process is shutting down".into())
            }
            SHUTDOWN => Ok(()),
            INFORMER_SYNC if !self.is_done(INFORMER_SYNC) => {
                Err("the watch caches are not filled yet".into())
            }
            step if HOOKS.contains(&step) && !self.is_done(step) => Err("not finished".into()),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn names(endpoint: &str) -> Vec<String> {
        Health::checks(endpoint)
            .into_iter()
            .map(|c| c.name)
            .collect()
    }

    #[test]
    fn endpoints_list_upstreams_checks_in_upstreams_order() {
        assert_eq!(
            names("healthz"),
            [
                "ping",
                "etcd",
                BOOTSTRAP_CONTROLLER,
                PRIORITY_CLASSES,
                RBAC_ROLES,
                AUTHENTICATION_INFO
            ]
        );
        assert_eq!(names("livez"), names("healthz"));
        assert_eq!(
            names("readyz"),
            [
                "ping",
                "etcd",
                "etcd-readiness",
                "informer-sync",
                BOOTSTRAP_CONTROLLER,
                PRIORITY_CLASSES,
                RBAC_ROLES,
                AUTHENTICATION_INFO,
                "shutdown"
            ]
        );
    }

    #[tokio::test]
    async fn hooks_pass_once_done_the_store_check_reads_the_store_shutdown_fails() {
        let store = store::memory::MemoryBackend::new();
        let h = Health::default();
        assert_eq!(h.run(RBAC_ROLES, &store).await, Err("not finished".into()));
        assert!(h.run(INFORMER_SYNC, &store).await.is_err());
        h.done(RBAC_ROLES);
        h.done(INFORMER_SYNC);
        assert_eq!(h.run(RBAC_ROLES, &store).await, Ok(()));
        assert_eq!(h.run(INFORMER_SYNC, &store).await, Ok(()));
        assert_eq!(h.run("etcd", &store).await, Ok(()));
        assert_eq!(h.run("shutdown", &store).await, Ok(()));
        h.stopping();
        assert_eq!(
            h.run("shutdown", &store).await,
            Err("process is shutting down".into())
        );
    }
}
