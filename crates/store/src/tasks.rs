//! Background maintenance shared by every backend.

use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinHandle;

use crate::{Backend, StoreError};

/// Owns the periodic compactor; dropping it stops the task.
#[derive(Debug)]
pub struct CompactorHandle(JoinHandle<()>);

impl Drop for CompactorHandle {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Compacts the store every `interval`, as upstream's API server does with
/// `--etcd-compaction-interval`: each tick compacts up to the revision that was current at
/// the previous tick, so at least one interval of history always stays watchable.
pub fn spawn_compactor(backend: Arc<dyn Backend>, interval: Duration) -> CompactorHandle {
    CompactorHandle(tokio::spawn(async move {
        let mut previous: Option<i64> = None;
        let mut ticker = tokio::time::interval(interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        ticker.tick().await;
        loop {
            ticker.tick().await;
            let current = match backend.current_revision().await {
                Ok(rev) => rev,
                Err(e) => {
                    tracing::warn!(error = %e, "compactor: cannot read the current revision");
                    continue;
                }
            };
            if let Some(target) = previous {
                match backend.compact(target).await {
                    Ok(()) => {
                        tracing::info!(revision = target, backend = backend.name(), "compacted")
                    }
                    // Another server (HA on etcd) compacted further already.
                    Err(StoreError::Compacted { .. }) => {}
                    Err(e) => tracing::warn!(error = %e, revision = target, "compaction failed"),
                }
            }
            previous = Some(current);
        }
    }))
}
