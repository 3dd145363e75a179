//! SQLite-specific behaviour: restart, startup errors, TTL across restarts, chunked
//! compaction and watches served from disk.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use store::sqlite::{SqliteBackend, SqliteOptions};
use store::{Backend, Event, ListOptions, ManualClock, StoreError, WatchOptions};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let (kv, deleted_rev, compacted) = {
        let s = SqliteBackend::open(&path).unwrap();
        let kv = s.create("/r/a", b("1"), None).await.unwrap();
        let kv = s
            .update("/r/a", b("2"), kv.mod_revision, None)
            .await
            .unwrap();
        s.create("/r/gone", b("x"), None).await.unwrap();
        let d = s.delete("/r/gone", None).await.unwrap();
        s.compact(kv.mod_revision).await.unwrap();
        (kv, d.revision, s.compacted_revision().await.unwrap())
    };
    let s = SqliteBackend::open(&path).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), deleted_rev);
    assert_eq!(s.compacted_revision().await.unwrap(), compacted);
    assert_eq!(s.get("/r/a").await.unwrap().unwrap(), kv);
    assert!(s.get("/r/gone").await.unwrap().is_none());
    let next = s.create("/r/b", b("3"), None).await.unwrap();
    assert!(next.mod_revision > deleted_rev);
    // History written before the restart is still watchable.
    let mut w = s
        .watch("/r/", kv.mod_revision, WatchOptions::default())
        .await
        .unwrap();
    let ev = tokio::time::timeout(Duration::from_secs(5), w.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert!(matches!(ev, Event::Put { .. } if ev.revision() > kv.mod_revision));
}

#[tokio::test]
async fn revision_never_goes_back_after_compacting_a_tombstone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let last = {
        let s = SqliteBackend::open(&path).unwrap();
        s.create("/t/a", b("1"), None).await.unwrap();
        let d = s.delete("/t/a", None).await.unwrap();
        s.compact(d.revision).await.unwrap();
        d.revision
    };
    let s = SqliteBackend::open(&path).unwrap();
    assert_eq!(s.current_revision().await.unwrap(), last);
    assert!(s.create("/t/b", b("x"), None).await.unwrap().mod_revision > last);
}

#[tokio::test]
async fn second_process_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let _s = SqliteBackend::open(&path).unwrap();
    match SqliteBackend::open(&path) {
        Err(StoreError::Unavailable(msg)) => assert!(msg.contains("in use"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a second open must fail"),
    }
}

#[tokio::test]
async fn corrupt_file_is_a_clear_startup_error() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    std::fs::write(&path, vec![0x5a; 8192]).unwrap();
    match SqliteBackend::open(&path) {
        Err(StoreError::Internal(msg)) => assert!(msg.contains("corrupt"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a corrupt file must not open"),
    }
    // The file is left as it was for inspection, never overwritten.
    assert_eq!(std::fs::read(&path).unwrap(), vec![0x5a; 8192]);
}

#[tokio::test]
async fn damaged_pages_are_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    {
        let s = SqliteBackend::open(&path).unwrap();
        for i in 0..200 {
            s.create(&format!("/d/{i}"), Bytes::from(vec![b'v'; 2000]), None)
                .await
                .unwrap();
        }
    }
    // Checkpoint the WAL into the main file, then scribble over a page in the middle.
    {
        let c = rusqlite::Connection::open(&path).unwrap();
        c.query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))
            .unwrap();
    }
    let mut bytes = std::fs::read(&path).unwrap();
    assert!(bytes.len() > 16 * 4096);
    for byte in &mut bytes[8 * 4096..9 * 4096] {
        *byte = 0xff;
    }
    std::fs::write(&path, &bytes).unwrap();
    match SqliteBackend::open(&path) {
        Err(StoreError::Internal(msg)) => assert!(msg.contains("corrupt"), "{msg}"),
        Err(e) => panic!("unexpected error {e}"),
        Ok(_) => panic!("a damaged file must not open silently"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ttl_survives_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.db");
    let clock = Arc::new(ManualClock::new(1_000_000));
    let opts = || SqliteOptions {
        clock: clock.clone(),
        ttl_sweep: Duration::from_secs(3600),
        ..SqliteOptions::new(&path)
    };
    {
        let s = SqliteBackend::open_with(opts()).unwrap();
        s.create("/e/event", b("e"), Some(Duration::from_secs(3600)))
            .await
            .unwrap();
        s.create("/e/keep", b("k"), None).await.unwrap();
        clock.advance(Duration::from_secs(1800));
        assert_eq!(s.expire().await.unwrap(), 0);
    }
    let s = SqliteBackend::open_with(opts()).unwrap();
    assert!(s.get("/e/event").await.unwrap().is_some());
    clock.advance(Duration::from_secs(1801));
    assert_eq!(s.expire().await.unwrap(), 1);
    assert!(s.get("/e/event").await.unwrap().is_none());
    assert!(s.get("/e/keep").await.unwrap().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chunked_compaction_and_disk_watches() {
    let dir = tempfile::tempdir().unwrap();
    let s = SqliteBackend::open_with(SqliteOptions {
        compaction_chunk: 7,
        ring_events: 2,
        ..SqliteOptions::new(dir.path().join("state.db"))
    })
    .unwrap();
    let start = s.current_revision().await.unwrap();
    let keep = s.create("/k/keep", b("keep"), None).await.unwrap();
    let mut kv = s.create("/k/hot", b("0"), None).await.unwrap();
    for i in 1..100 {
        kv = s
            .update("/k/hot", b(&i.to_string()), kv.mod_revision, None)
            .await
            .unwrap();
    }
    // A watcher far behind the two-event ring reads the log on disk.
    let mut w = s
        .watch("/k/", start, WatchOptions::default())
        .await
        .unwrap();
    let mut n = 0;
    while n < 101 {
        match tokio::time::timeout(Duration::from_secs(5), w.next()).await {
            Ok(Some(Ok(Event::Put { .. }))) => n += 1,
            other => panic!("unexpected {other:?}"),
        }
    }
    let mid = s.current_revision().await.unwrap();
    s.compact(mid).await.unwrap();
    assert_eq!(s.get("/k/keep").await.unwrap().unwrap(), keep);
    assert_eq!(s.get("/k/hot").await.unwrap().unwrap(), kv);
    let l = s.list(ListOptions::prefix("/k/")).await.unwrap();
    assert_eq!(l.kvs.len(), 2);
    // Exactly the live rows remain in the log.
    let c = rusqlite::Connection::open(dir.path().join("state.db")).unwrap();
    let rows: i64 = c
        .query_row("SELECT COUNT(*) FROM kv_log", [], |r| r.get(0))
        .unwrap();
    assert_eq!(rows, 2);
}
