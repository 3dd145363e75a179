//! The periodic compactor: each tick compacts to the revision seen one tick earlier, so at
//! least one interval of history stays watchable.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use store::memory::MemoryBackend;
use store::sqlite::SqliteBackend;
use store::{Backend, spawn_compactor};

async fn compacts_one_interval_behind(s: Arc<dyn Backend>) {
    for i in 0..5 {
        s.create(&format!("/c/{i}"), Bytes::from_static(b"x"), None)
            .await
            .unwrap();
    }
    let interval = Duration::from_millis(1000);
    let _compactor = spawn_compactor(Arc::clone(&s), interval);
    // First tick: records the revision, compacts nothing.
    tokio::time::sleep(interval + interval / 2).await;
    assert_eq!(s.compacted_revision().await.unwrap(), 0);
    let seen = s.current_revision().await.unwrap();
    for i in 5..10 {
        s.create(&format!("/c/{i}"), Bytes::from_static(b"x"), None)
            .await
            .unwrap();
    }
    // Second tick: compacts to what the first one saw, not to the newest revision.
    tokio::time::sleep(interval).await;
    let compacted = s.compacted_revision().await.unwrap();
    assert_eq!(compacted, seen);
    assert!(compacted < s.current_revision().await.unwrap());
    // Live keys are all still there.
    assert_eq!(s.count("/c/").await.unwrap().0, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory() {
    compacts_one_interval_behind(Arc::new(MemoryBackend::new())).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteBackend::open(dir.path().join("state.db")).unwrap();
    compacts_one_interval_behind(Arc::new(s)).await;
}
