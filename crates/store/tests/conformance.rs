//! One conformance suite, run against every backend: memory, SQLite, a real single-member
//! etcd and a real three-member etcd cluster (started by the harness on loopback).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{Harness, Kind};
use futures::StreamExt;
use rand::Rng;
use store::{
    Event, ListOptions, Revision, StoreError, Update, WatchOptions, WatchStream, guaranteed_update,
};

fn b(s: &str) -> Bytes {
    Bytes::copy_from_slice(s.as_bytes())
}

async fn next_event(w: &mut WatchStream) -> Event {
    match tokio::time::timeout(Duration::from_secs(10), w.next()).await {
        Ok(Some(Ok(ev))) => ev,
        other => panic!("expected a watch event, got {other:?}"),
    }
}

/// Next non-progress event.
async fn next_change(w: &mut WatchStream) -> Event {
    loop {
        let ev = next_event(w).await;
        if !matches!(ev, Event::Progress { .. }) {
            return ev;
        }
    }
}

async fn assert_quiet(w: &mut WatchStream) {
    match tokio::time::timeout(Duration::from_millis(300), w.next()).await {
        Err(_) => {}
        Ok(Some(Ok(Event::Progress { .. }))) => {}
        other => panic!("expected no event, got {other:?}"),
    }
}

async fn create_get(h: &Harness) {
    let s = &h.backend;
    let before = s.current_revision().await.unwrap();
    let kv = s.create("/t/a", b("one"), None).await.unwrap();
    assert!(kv.mod_revision > before);
    assert_eq!(kv.create_revision, kv.mod_revision);
    assert_eq!(s.current_revision().await.unwrap(), kv.mod_revision);
    let got = s.get("/t/a").await.unwrap().unwrap();
    assert_eq!(got, kv);
    assert_eq!(got.value, b("one"));
    assert!(s.get("/t/missing").await.unwrap().is_none());
    match s.create("/t/a", b("two"), None).await {
        Err(StoreError::AlreadyExists { key }) => assert_eq!(key, "/t/a"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    // A failed create changes nothing.
    assert_eq!(s.get("/t/a").await.unwrap().unwrap().value, b("one"));
    let kv2 = s.create("/t/b", Bytes::new(), None).await.unwrap();
    assert!(kv2.mod_revision > kv.mod_revision);
    assert_eq!(s.get("/t/b").await.unwrap().unwrap().value, Bytes::new());
}

async fn update_cas(h: &Harness) {
    let s = &h.backend;
    let kv = s.create("/t/a", b("v1"), None).await.unwrap();
    let kv2 = s
        .update("/t/a", b("v2"), kv.mod_revision, None)
        .await
        .unwrap();
    assert!(kv2.mod_revision > kv.mod_revision);
    assert_eq!(kv2.create_revision, kv.create_revision);
    assert_eq!(s.get("/t/a").await.unwrap().unwrap(), kv2);
    match s.update("/t/a", b("stale"), kv.mod_revision, None).await {
        Err(StoreError::Conflict { current, .. }) => {
            assert_eq!(*current.expect("current value"), kv2);
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    assert_eq!(s.get("/t/a").await.unwrap().unwrap().value, b("v2"));
    match s.update("/t/none", b("x"), 1, None).await {
        Err(StoreError::NotFound { .. }) => {}
        other => panic!("expected NotFound, got {other:?}"),
    }
    match s.update("/t/none", b("x"), 0, None).await {
        Err(StoreError::NotFound { .. }) => {}
        other => panic!("expected NotFound for expected=0, got {other:?}"),
    }
    assert!(s.get("/t/none").await.unwrap().is_none());
}

async fn delete_semantics(h: &Harness) {
    let s = &h.backend;
    let kv = s.create("/t/a", b("v1"), None).await.unwrap();
    let kv2 = s
        .update("/t/a", b("v2"), kv.mod_revision, None)
        .await
        .unwrap();
    match s.delete("/t/a", Some(kv.mod_revision)).await {
        Err(StoreError::Conflict { current, .. }) => assert_eq!(*current.unwrap(), kv2),
        other => panic!("expected Conflict, got {other:?}"),
    }
    let d = s.delete("/t/a", Some(kv2.mod_revision)).await.unwrap();
    assert_eq!(d.prev, kv2);
    assert!(d.revision > kv2.mod_revision);
    assert!(s.get("/t/a").await.unwrap().is_none());
    assert!(matches!(
        s.delete("/t/a", None).await,
        Err(StoreError::NotFound { .. })
    ));
    let again = s.create("/t/a", b("v3"), None).await.unwrap();
    assert!(again.create_revision > d.revision);
    let d2 = s.delete("/t/a", None).await.unwrap();
    assert_eq!(d2.prev.value, b("v3"));
}

async fn list_and_paginate(h: &Harness) {
    let s = &h.backend;
    for i in 0..10 {
        s.create(&format!("/l/a/{i:02}"), b(&format!("v{i}")), None)
            .await
            .unwrap();
    }
    s.create("/l/ab/x", b("other prefix"), None).await.unwrap();
    s.create("/l/a0", b("sibling"), None).await.unwrap();
    let all = s.list(ListOptions::prefix("/l/a/")).await.unwrap();
    assert_eq!(all.kvs.len(), 10);
    assert!(!all.more);
    let keys: Vec<_> = all.kvs.iter().map(|kv| kv.key.clone()).collect();
    let mut sorted = keys.clone();
    sorted.sort();
    assert_eq!(keys, sorted);
    assert_eq!(all.revision, s.current_revision().await.unwrap());

    // Page 1, then writes, then page 2 on the same snapshot.
    let p1 = s
        .list(ListOptions {
            prefix: "/l/a/".into(),
            limit: 4,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(p1.kvs.len(), 4);
    assert!(p1.more);
    assert_eq!(p1.remaining, 6);
    let v5 = s.get("/l/a/05").await.unwrap().unwrap();
    s.update("/l/a/05", b("changed"), v5.mod_revision, None)
        .await
        .unwrap();
    s.delete("/l/a/06", None).await.unwrap();
    s.create("/l/a/055", b("new"), None).await.unwrap();
    let p2 = s
        .list(ListOptions {
            prefix: "/l/a/".into(),
            limit: 4,
            start_after: Some(p1.kvs[3].key.clone()),
            revision: p1.revision,
        })
        .await
        .unwrap();
    assert_eq!(p2.revision, p1.revision);
    let p2keys: Vec<_> = p2.kvs.iter().map(|kv| kv.key.as_str()).collect();
    assert_eq!(p2keys, ["/l/a/04", "/l/a/05", "/l/a/06", "/l/a/07"]);
    assert_eq!(p2.kvs[1].value, b("v5"));
    assert!(p2.more);
    // Counted in the snapshot: the later delete and create do not change it.
    assert_eq!(p2.remaining, 2);
    let p3 = s
        .list(ListOptions {
            prefix: "/l/a/".into(),
            limit: 4,
            start_after: Some("/l/a/07".into()),
            revision: p1.revision,
        })
        .await
        .unwrap();
    assert_eq!(p3.kvs.len(), 2);
    assert!(!p3.more);
    assert_eq!(p3.remaining, 0);
    // At the latest revision too (SQLite counts live keys differently there).
    let latest = s
        .list(ListOptions {
            prefix: "/l/a/".into(),
            limit: 3,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(latest.remaining, 7);

    // The latest view has the changes.
    let now = s.list(ListOptions::prefix("/l/a/")).await.unwrap();
    let map: BTreeMap<_, _> = now
        .kvs
        .iter()
        .map(|kv| (kv.key.as_str(), kv.value.clone()))
        .collect();
    assert_eq!(map.len(), 10);
    assert_eq!(map["/l/a/05"], b("changed"));
    assert!(!map.contains_key("/l/a/06"));
    assert!(map.contains_key("/l/a/055"));

    // Exact limit: `more` is false when nothing follows.
    let exact = s
        .list(ListOptions {
            prefix: "/l/ab/".into(),
            limit: 1,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(exact.kvs.len(), 1);
    assert!(!exact.more);

    let (n, rev) = s.count("/l/a/").await.unwrap();
    assert_eq!(n, 10);
    assert!(rev >= now.revision);
    assert_eq!(s.count("/nothing/").await.unwrap().0, 0);
}

async fn list_future_revision(h: &Harness) {
    let s = &h.backend;
    s.create("/f/a", b("x"), None).await.unwrap();
    let cur = s.current_revision().await.unwrap();
    match s
        .list(ListOptions {
            prefix: "/f/".into(),
            revision: cur + 1000,
            ..Default::default()
        })
        .await
    {
        Err(StoreError::FutureRevision { requested, .. }) => assert_eq!(requested, cur + 1000),
        other => panic!("expected FutureRevision, got {other:?}"),
    }
}

async fn bad_input(h: &Harness) {
    let s = &h.backend;
    for key in ["", "relative", "/trailing/", "/a//b", "/a/../b", "/nul\0"] {
        assert!(matches!(
            s.create(key, b("x"), None).await,
            Err(StoreError::InvalidKey { .. })
        ));
        assert!(matches!(
            s.get(key).await,
            Err(StoreError::InvalidKey { .. })
        ));
        assert!(matches!(
            s.update(key, b("x"), 1, None).await,
            Err(StoreError::InvalidKey { .. })
        ));
        assert!(matches!(
            s.delete(key, None).await,
            Err(StoreError::InvalidKey { .. })
        ));
    }
    assert!(matches!(
        s.list(ListOptions::prefix("nope")).await,
        Err(StoreError::InvalidKey { .. })
    ));
    assert!(matches!(
        s.watch("nope", 0, WatchOptions::default()).await,
        Err(StoreError::InvalidKey { .. })
    ));
    let big = Bytes::from(vec![b'x'; store::MAX_VALUE_BYTES + 1]);
    assert!(matches!(
        s.create("/big", big, None).await,
        Err(StoreError::TooLarge { .. })
    ));
    assert!(s.get("/big").await.unwrap().is_none());
}

async fn watch_replays_history(h: &Harness) {
    let s = &h.backend;
    let start = s.current_revision().await.unwrap();
    let a = s.create("/w/a", b("1"), None).await.unwrap();
    let a2 = s
        .update("/w/a", b("2"), a.mod_revision, None)
        .await
        .unwrap();
    s.create("/other/x", b("ignored"), None).await.unwrap();
    let d = s.delete("/w/a", None).await.unwrap();
    let c = s.create("/w/c", b("3"), None).await.unwrap();

    let mut w = s
        .watch("/w/", start, WatchOptions::default())
        .await
        .unwrap();
    assert_eq!(
        next_change(&mut w).await,
        Event::Put {
            kv: a.clone(),
            prev: None
        }
    );
    assert_eq!(
        next_change(&mut w).await,
        Event::Put {
            kv: a2.clone(),
            prev: Some(a.clone())
        }
    );
    assert_eq!(
        next_change(&mut w).await,
        Event::Delete {
            revision: d.revision,
            prev: a2.clone()
        }
    );
    assert_eq!(
        next_change(&mut w).await,
        Event::Put {
            kv: c.clone(),
            prev: None
        }
    );
    assert_quiet(&mut w).await;

    // Starting exactly after a revision skips it.
    let mut w2 = s
        .watch("/w/", a2.mod_revision, WatchOptions::default())
        .await
        .unwrap();
    assert_eq!(next_change(&mut w2).await.revision(), d.revision);

    // Live events follow the replay without a gap.
    let e = s.create("/w/e", b("4"), None).await.unwrap();
    assert_eq!(next_change(&mut w).await.revision(), e.mod_revision);
    assert_eq!(next_change(&mut w2).await.revision(), c.mod_revision);
    assert_eq!(next_change(&mut w2).await.revision(), e.mod_revision);
}

async fn watch_from_now(h: &Harness) {
    let s = &h.backend;
    s.create("/n/old", b("old"), None).await.unwrap();
    let mut w = s.watch("/n/", 0, WatchOptions::default()).await.unwrap();
    // Give the watch a moment to be established on remote backends.
    tokio::time::sleep(Duration::from_millis(100)).await;
    let kv = s.create("/n/new", b("new"), None).await.unwrap();
    match next_change(&mut w).await {
        Event::Put { kv: got, prev } => {
            assert_eq!(got, kv);
            assert!(prev.is_none());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_quiet(&mut w).await;
}

async fn watch_progress(h: &Harness) {
    let s = &h.backend;
    s.create("/p/x", b("x"), None).await.unwrap();
    let rev = s.current_revision().await.unwrap();
    let mut w = s
        .watch(
            "/p/",
            rev,
            WatchOptions {
                progress_interval: Some(Duration::from_millis(200)),
            },
        )
        .await
        .unwrap();
    // Writes elsewhere move the store revision; progress reports at least up to where the
    // watch was started.
    s.create("/q/y", b("y"), None).await.unwrap();
    match next_event(&mut w).await {
        Event::Progress { revision } => assert!(revision >= rev),
        other => panic!("expected progress, got {other:?}"),
    }
}

/// A requested progress report arrives promptly and covers writes to other prefixes.
async fn requested_progress(h: &Harness) {
    let s = &h.backend;
    let mut w = s.watch("/rp/", 0, WatchOptions::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let other = s.create("/elsewhere/x", b("x"), None).await.unwrap();
    // Poll: a request made before the watch saw the write may report an older revision.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        s.request_progress().await.unwrap();
        match tokio::time::timeout(Duration::from_secs(5), w.next()).await {
            Ok(Some(Ok(Event::Progress { revision }))) if revision >= other.mod_revision => break,
            Ok(Some(Ok(Event::Progress { .. }))) => {}
            other => panic!("expected progress, got {other:?}"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "progress never reached the write"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn watch_dropped_stream_is_fine(h: &Harness) {
    let s = &h.backend;
    for _ in 0..20 {
        let w = s.watch("/d/", 0, WatchOptions::default()).await.unwrap();
        drop(w);
    }
    s.create("/d/x", b("x"), None).await.unwrap();
    let mut w = s.watch("/d/", 0, WatchOptions::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let kv = s.create("/d/y", b("y"), None).await.unwrap();
    assert_eq!(next_change(&mut w).await.revision(), kv.mod_revision);
}

async fn compaction_semantics(h: &Harness) {
    let s = &h.backend;
    let start = s.current_revision().await.unwrap();
    let a = s.create("/c/a", b("1"), None).await.unwrap();
    let a2 = s
        .update("/c/a", b("2"), a.mod_revision, None)
        .await
        .unwrap();
    let gone = s.create("/c/gone", b("x"), None).await.unwrap();
    s.delete("/c/gone", None).await.unwrap();
    let mid = s.current_revision().await.unwrap();
    let a3 = s
        .update("/c/a", b("3"), a2.mod_revision, None)
        .await
        .unwrap();
    s.compact(mid).await.unwrap();
    assert!(s.compacted_revision().await.unwrap() >= mid);

    // Reads below the compaction point fail; at or above it they work.
    match s
        .list(ListOptions {
            prefix: "/c/".into(),
            revision: gone.mod_revision,
            ..Default::default()
        })
        .await
    {
        Err(StoreError::Compacted { .. }) => {}
        other => panic!("expected Compacted, got {other:?}"),
    }
    let at_mid = s
        .list(ListOptions {
            prefix: "/c/".into(),
            revision: mid,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(at_mid.kvs.len(), 1);
    assert_eq!(at_mid.kvs[0], a2);

    match s.watch("/c/", start, WatchOptions::default()).await {
        Err(StoreError::Compacted { .. }) => {}
        Ok(mut w) => match tokio::time::timeout(Duration::from_secs(10), w.next()).await {
            Ok(Some(Err(StoreError::Compacted { .. }))) => {}
            other => panic!("expected Compacted from the stream, got {other:?}"),
        },
        Err(e) => panic!("expected Compacted, got {e:?}"),
    }
    // History after the compaction point is intact, with previous values.
    let mut w = s.watch("/c/", mid, WatchOptions::default()).await.unwrap();
    assert_eq!(
        next_change(&mut w).await,
        Event::Put {
            kv: a3.clone(),
            prev: Some(a2.clone())
        }
    );
    // Compacting backwards is refused.
    assert!(matches!(
        s.compact(start).await,
        Err(StoreError::Compacted { .. })
    ));
    // The live key is still there.
    assert_eq!(s.get("/c/a").await.unwrap().unwrap(), a3);
}

/// Keys written once and never again survive any number of compactions, with thousands of
/// newer revisions in between; reads, lists and watches keep working meanwhile.
async fn compaction_keeps_live_keys(h: &Harness) {
    let s = Arc::clone(&h.backend);
    let mut stable = Vec::new();
    for i in 0..50 {
        stable.push(
            s.create(&format!("/keep/ns-{i:02}"), b(&format!("stable-{i}")), None)
                .await
                .unwrap(),
        );
    }
    let rounds = 3;
    let per_round = if h.kind == Kind::EtcdCluster {
        1000
    } else {
        2000
    };
    let mut watch = s
        .watch("/keep/", stable[49].mod_revision, WatchOptions::default())
        .await
        .unwrap();
    for round in 0..rounds {
        // Churn on other keys, 16 writers at a time.
        let mut tasks = Vec::new();
        for w in 0..16 {
            let s = Arc::clone(&s);
            tasks.push(tokio::spawn(async move {
                for j in 0..per_round / 16 {
                    let key = format!("/churn/{w}/{}", j % 7);
                    match s.get(&key).await.unwrap() {
                        Some(kv) if j % 3 == 0 => {
                            let _ = s.delete(&key, Some(kv.mod_revision)).await;
                        }
                        Some(kv) => {
                            let _ = s.update(&key, b("x"), kv.mod_revision, None).await;
                        }
                        None => {
                            let _ = s.create(&key, b("x"), None).await;
                        }
                    }
                }
            }));
        }
        // Reads during the churn and the compaction.
        let reader = {
            let s = Arc::clone(&s);
            tokio::spawn(async move {
                for _ in 0..50 {
                    let l = s.list(ListOptions::prefix("/keep/")).await.unwrap();
                    assert_eq!(l.kvs.len(), 50);
                    tokio::task::yield_now().await;
                }
            })
        };
        for t in tasks {
            t.await.unwrap();
        }
        let rev = s.current_revision().await.unwrap();
        s.compact(rev).await.unwrap();
        reader.await.unwrap();
        for kv in &stable {
            let got = s.get(&kv.key).await.unwrap();
            assert_eq!(got.as_ref(), Some(kv), "round {round}: {} lost", kv.key);
        }
        let l = s.list(ListOptions::prefix("/keep/")).await.unwrap();
        assert_eq!(l.kvs, stable, "round {round}");
        assert_eq!(s.count("/keep/").await.unwrap().0, 50);
    }
    // The watch on the untouched prefix saw nothing and is still alive.
    assert_quiet(&mut watch).await;
    let kv = s.create("/keep/new", b("n"), None).await.unwrap();
    assert_eq!(next_change(&mut watch).await.revision(), kv.mod_revision);
}

async fn ttl_expiry(h: &Harness) {
    let s = &h.backend;
    let mut w = s.watch("/ttl/", 0, WatchOptions::default()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let kv = s
        .create("/ttl/event", b("e"), Some(Duration::from_secs(1)))
        .await
        .unwrap();
    let keep = s.create("/ttl/keep", b("k"), None).await.unwrap();
    assert_eq!(next_change(&mut w).await.revision(), kv.mod_revision);
    assert_eq!(next_change(&mut w).await.revision(), keep.mod_revision);
    // etcd's minimum lease TTL and lessor tick make expiry take a few seconds there.
    match tokio::time::timeout(Duration::from_secs(20), w.next()).await {
        Ok(Some(Ok(Event::Delete { prev, revision }))) => {
            assert_eq!(prev, kv);
            assert!(revision > keep.mod_revision);
        }
        other => panic!("expected the TTL delete, got {other:?}"),
    }
    assert!(s.get("/ttl/event").await.unwrap().is_none());
    assert!(s.get("/ttl/keep").await.unwrap().is_some());
}

async fn guaranteed_update_counts(h: &Harness) {
    let s = Arc::clone(&h.backend);
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let s = Arc::clone(&s);
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                guaranteed_update::<_, StoreError>(&*s, "/gu/counter", |cur| {
                    let n: u64 = cur
                        .map(|kv| std::str::from_utf8(&kv.value).unwrap().parse().unwrap())
                        .unwrap_or(0);
                    Ok(Update::Put {
                        value: b(&(n + 1).to_string()),
                        ttl: None,
                    })
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let kv = s.get("/gu/counter").await.unwrap().unwrap();
    assert_eq!(kv.value, b("200"));
    // Identical bytes write nothing.
    let same = guaranteed_update::<_, StoreError>(&*s, "/gu/counter", |cur| {
        Ok(Update::Put {
            value: cur.unwrap().value.clone(),
            ttl: None,
        })
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(same.mod_revision, kv.mod_revision);
    let kept = guaranteed_update::<_, StoreError>(&*s, "/gu/none", |_| Ok(Update::Keep))
        .await
        .unwrap();
    assert!(kept.is_none());
}

/// 8 writers and 32 watchers started at random revisions: every watcher sees exactly the
/// committed sequence after its start revision.
async fn concurrent_watchers(h: &Harness) {
    let s = Arc::clone(&h.backend);
    let base = s.current_revision().await.unwrap();
    let writes_per_writer = if h.kind == Kind::EtcdCluster { 60 } else { 150 };
    let mut writers = Vec::new();
    for w in 0..8 {
        let s = Arc::clone(&s);
        writers.push(tokio::spawn(async move {
            let mut acked: Vec<(Revision, String, Option<Bytes>)> = Vec::new();
            for i in 0..writes_per_writer {
                let (slot, del) = {
                    let mut rng = rand::rng();
                    (rng.random_range(0..5), rng.random_bool(0.3))
                };
                let key = format!("/cw/{w}/{slot}");
                let value = b(&format!("{w}-{i}"));
                match s.get(&key).await.unwrap() {
                    None => {
                        let kv = s.create(&key, value.clone(), None).await.unwrap();
                        acked.push((kv.mod_revision, key, Some(value)));
                    }
                    Some(kv) if del => {
                        let d = s.delete(&key, Some(kv.mod_revision)).await.unwrap();
                        acked.push((d.revision, key, None));
                    }
                    Some(kv) => {
                        let kv = s
                            .update(&key, value.clone(), kv.mod_revision, None)
                            .await
                            .unwrap();
                        acked.push((kv.mod_revision, key, Some(value)));
                    }
                }
            }
            acked
        }));
    }
    let mut watchers = Vec::new();
    for _ in 0..32 {
        let s = Arc::clone(&s);
        let delay = rand::rng().random_range(0..200);
        watchers.push(tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(delay)).await;
            let now = s.current_revision().await.unwrap();
            let start = rand::rng().random_range(base..=now);
            let w = s
                .watch("/cw/", start, WatchOptions::default())
                .await
                .unwrap();
            (start, w)
        }));
    }
    let mut committed: Vec<(Revision, String, Option<Bytes>)> = Vec::new();
    for w in writers {
        committed.extend(w.await.unwrap());
    }
    committed.sort_by_key(|c| c.0);
    let last = committed.last().unwrap().0;
    let mut revs = HashMap::new();
    for c in &committed {
        assert!(
            revs.insert(c.0, ()).is_none(),
            "revision {} acked twice",
            c.0
        );
    }
    for w in watchers {
        let (start, mut stream) = w.await.unwrap();
        let expected: Vec<_> = committed.iter().filter(|c| c.0 > start).collect();
        let mut seen = Vec::new();
        while seen.len() < expected.len() {
            match next_change(&mut stream).await {
                Event::Put { kv, .. } => seen.push((kv.mod_revision, kv.key, Some(kv.value))),
                Event::Delete { revision, prev } => seen.push((revision, prev.key, None)),
                Event::Progress { .. } => {}
            }
        }
        let expected: Vec<_> = expected.into_iter().cloned().collect();
        assert_eq!(seen, expected, "watcher from {start} (last {last})");
        assert_quiet(&mut stream).await;
    }
}

macro_rules! conformance {
    ($($case:ident),* $(,)?) => {
        mod memory {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $case() { super::$case(&super::Harness::new(super::Kind::Memory).await).await } )*
        }
        mod sqlite {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $case() { super::$case(&super::Harness::new(super::Kind::Sqlite).await).await } )*
        }
        mod etcd {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $case() { super::$case(&super::Harness::new(super::Kind::Etcd).await).await } )*
        }
        mod etcd_cluster {
            $( #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
               async fn $case() { super::$case(&super::Harness::new(super::Kind::EtcdCluster).await).await } )*
        }
    };
}

conformance!(
    create_get,
    update_cas,
    delete_semantics,
    list_and_paginate,
    list_future_revision,
    bad_input,
    watch_replays_history,
    watch_from_now,
    watch_progress,
    requested_progress,
    watch_dropped_stream_is_fine,
    compaction_semantics,
    compaction_keeps_live_keys,
    ttl_expiry,
    guaranteed_update_counts,
    concurrent_watchers,
);
