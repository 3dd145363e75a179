//! Upstream's resource quota controller, in the server until the controller manager
//! (issue 5) exists: every quota's `status.hard` and `status.used` are recounted from the
//! watch caches, so a new quota shows its usage at once and usage that admission charged
//! for a write that then failed (a name already taken, a later refusal) is given back.
//!
//! A new quota (or one whose hard limits changed) is counted at once. Otherwise a count
//! may be wrong while writes are in flight (a create charged but not yet stored, a delete
//! given back but not yet gone), so a quota is only recounted once it has not changed
//! for [`SETTLE`]: concurrent creates can never exceed `hard`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use admission::plugins::quota::recalculate;

use crate::registry::{Registry, WriteOptions};

/// How long a quota must stay unchanged before its usage may be lowered.
const SETTLE: Duration = Duration::from_secs(20);

/// How often quotas are recounted when nothing else wakes the controller.
const PERIOD: Duration = Duration::from_secs(10);

/// One pass over every quota. `seen` keeps, per quota uid, the resourceVersion it had
/// and since when.
async fn reconcile(
    registry: &Registry,
    opts: &WriteOptions,
    seen: &mut HashMap<String, (String, Instant)>,
) {
    let Some(quotas) = registry.lookup("", "v1", "resourcequotas") else {
        return;
    };
    let (items, _) = quotas
        .cacher
        .list(&|_| true, &format!("{}/", quotas.info.storage_prefix));
    let mut live = HashMap::new();
    for item in items {
        let Some(quota) = item.value() else { continue };
        let uid = api::meta::uid(&quota).unwrap_or_default().to_string();
        let rv = api::meta::resource_version(&quota)
            .unwrap_or_default()
            .to_string();
        let since = match seen.get(&uid) {
            Some((old_rv, since)) if *old_rv == rv => *since,
            _ => Instant::now(),
        };
        live.insert(uid.clone(), (rv, since));
        let updated = match recalculate(&quota, registry).await {
            Ok(Some(u)) => u,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(quota = %item.name, error = %e.message, "cannot recount quota");
                continue;
            }
        };
        // A new quota (or new hard limits) is counted at once; otherwise the count waits
        // until no charge or give-back has been in flight for a while.
        let fresh = quota["status"]["hard"] != quota["spec"]["hard"];
        if !fresh && since.elapsed() < SETTLE {
            continue;
        }
        match registry
            .write_at(&quotas, Some("status"), updated, opts)
            .await
        {
            Ok(_) => {
                live.remove(&uid);
            }
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(quota = %item.name, error = %e.message, "cannot update quota status");
            }
        }
    }
    *seen = live;
}

/// Runs the controller until the server stops: on every change of a quota and every
/// [`PERIOD`].
pub async fn run(registry: Arc<Registry>, opts: WriteOptions) {
    let Some(quotas) = registry.lookup("", "v1", "resourcequotas") else {
        return;
    };
    let mut changes = quotas.cacher.changes();
    let mut seen = HashMap::new();
    loop {
        let span = tracing::debug_span!("reconcile", controller = "resourcequota");
        tracing::Instrument::instrument(reconcile(&registry, &opts, &mut seen), span).await;
        let _ = tokio::time::timeout(PERIOD, changes.changed()).await;
    }
}
