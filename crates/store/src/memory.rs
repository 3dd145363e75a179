//! An in-memory backend with the full MVCC semantics, for fast tests of the layers above.
//! Nothing survives the process.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;

use crate::clock::deadline;
use crate::hub::{History, Hub};
use crate::{
    Backend, Clock, Deleted, Event, KeyValue, ListOptions, ListResult, Result, Revision,
    StoreError, SystemClock, WatchOptions, WatchStream, check_value, prefix_end, validate_key,
    validate_prefix,
};

#[derive(Clone, Debug)]
struct Row {
    key: String,
    value: Bytes,
    create_revision: Revision,
    prev_revision: Revision,
    deleted: bool,
}

#[derive(Default)]
struct State {
    revision: Revision,
    compacted: Revision,
    /// Every retained row, by revision.
    log: BTreeMap<Revision, Row>,
    /// Retained revisions of each key, ascending.
    history: BTreeMap<String, Vec<Revision>>,
    /// Live keys: mod revision and TTL deadline (unix ms, 0 = none).
    current: BTreeMap<String, (Revision, i64)>,
}

impl State {
    fn kv(&self, rev: Revision) -> Option<KeyValue> {
        self.log.get(&rev).filter(|r| !r.deleted).map(|r| KeyValue {
            key: r.key.clone(),
            value: r.value.clone(),
            create_revision: r.create_revision,
            mod_revision: rev,
        })
    }

    fn current_kv(&self, key: &str) -> Option<KeyValue> {
        self.current.get(key).and_then(|(rev, _)| self.kv(*rev))
    }

    fn event(&self, rev: Revision) -> Option<Event> {
        let row = self.log.get(&rev)?;
        let prev = if row.prev_revision > 0 {
            self.kv(row.prev_revision)
        } else {
            None
        };
        if row.deleted {
            Some(Event::Delete {
                revision: rev,
                prev: prev?,
            })
        } else {
            Some(Event::Put {
                kv: self.kv(rev)?,
                prev,
            })
        }
    }

    /// Appends one write; returns its event.
    fn write(&mut self, key: &str, value: Bytes, deleted: bool, expires_at: i64) -> Event {
        self.revision += 1;
        let rev = self.revision;
        let prev = self.current.get(key).map(|(r, _)| *r);
        let create_revision = prev
            .and_then(|p| self.log.get(&p))
            .map_or(rev, |r| r.create_revision);
        self.log.insert(
            rev,
            Row {
                key: key.to_string(),
                value,
                create_revision,
                prev_revision: prev.unwrap_or(0),
                deleted,
            },
        );
        self.history.entry(key.to_string()).or_default().push(rev);
        if deleted {
            self.current.remove(key);
        } else {
            self.current.insert(key.to_string(), (rev, expires_at));
        }
        // The row was just inserted, so the event exists.
        self.event(rev).unwrap_or(Event::Progress { revision: rev })
    }
}

/// The in-memory backend.
pub struct MemoryBackend {
    state: Arc<Mutex<State>>,
    hub: Arc<Hub>,
    clock: Arc<dyn Clock>,
}

impl Default for MemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MemoryBackend {
    pub fn new() -> Self {
        Self::with_clock(Arc::new(SystemClock))
    }

    /// A backend whose TTLs follow `clock`. Expired keys are deleted by
    /// [`MemoryBackend::expire`], which a background task calls every 100 ms when a Tokio
    /// runtime is present.
    pub fn with_clock(clock: Arc<dyn Clock>) -> Self {
        // Like etcd, an empty store is at revision 1, so no real revision is ever 0.
        let backend = MemoryBackend {
            state: Arc::new(Mutex::new(State {
                revision: 1,
                ..State::default()
            })),
            hub: Hub::new(1, 4096, 8 * 1024 * 1024),
            clock,
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let state = Arc::downgrade(&backend.state);
            let hub = Arc::downgrade(&backend.hub);
            let clock = Arc::clone(&backend.clock);
            rt.spawn(async move {
                let mut tick = tokio::time::interval(Duration::from_millis(100));
                loop {
                    tick.tick().await;
                    let (Some(state), Some(hub)) = (state.upgrade(), hub.upgrade()) else {
                        return;
                    };
                    expire(&state, &hub, clock.now_ms());
                }
            });
        }
        backend
    }

    /// Deletes every key whose TTL has passed; returns how many.
    pub fn expire(&self) -> usize {
        expire(&self.state, &self.hub, self.clock.now_ms())
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }
}

impl Drop for MemoryBackend {
    fn drop(&mut self) {
        self.hub.close();
    }
}

fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    match state.lock() {
        Ok(g) => g,
        Err(poisoned) => poisoned.into_inner(),
    }
}

fn expire(state: &Mutex<State>, hub: &Hub, now_ms: i64) -> usize {
    let mut st = lock(state);
    let expired: Vec<String> = st
        .current
        .iter()
        .filter(|(_, (_, exp))| *exp > 0 && *exp <= now_ms)
        .map(|(k, _)| k.clone())
        .collect();
    if expired.is_empty() {
        return 0;
    }
    let events: Vec<Event> = expired
        .iter()
        .map(|k| st.write(k, Bytes::new(), true, 0))
        .collect();
    hub.publish(events, st.revision);
    expired.len()
}

struct MemHistory(Arc<Mutex<State>>);

#[async_trait]
impl History for MemHistory {
    async fn events(
        &self,
        prefix: &str,
        end: Option<&str>,
        after: Revision,
        up_to: Revision,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let st = lock(&self.0);
        if after < st.compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted: st.compacted,
                current: st.revision,
            });
        }
        Ok(st
            .log
            .range((Bound::Excluded(after), Bound::Included(up_to)))
            .filter(|(_, r)| r.key.as_str() >= prefix && end.is_none_or(|e| r.key.as_str() < e))
            .take(limit)
            .filter_map(|(rev, _)| st.event(*rev))
            .collect())
    }
}

fn key_range<'a>(
    prefix: &'a str,
    start_after: Option<&'a str>,
) -> (Bound<&'a str>, Option<String>) {
    let lower = match start_after {
        Some(s) if s >= prefix => Bound::Excluded(s),
        _ => Bound::Included(prefix),
    };
    (lower, prefix_end(prefix))
}

#[async_trait]
impl Backend for MemoryBackend {
    fn name(&self) -> &'static str {
        "memory"
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.lock().revision)
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_key(key)?;
        Ok(self.lock().current_kv(key))
    }

    async fn list(&self, opts: ListOptions) -> Result<ListResult> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_prefix(&opts.prefix)?;
        let st = self.lock();
        let at = if opts.revision == 0 {
            st.revision
        } else {
            opts.revision
        };
        if at > st.revision {
            return Err(StoreError::FutureRevision {
                requested: at,
                current: st.revision,
            });
        }
        if at < st.compacted {
            return Err(StoreError::Compacted {
                requested: at,
                compacted: st.compacted,
                current: st.revision,
            });
        }
        let (lower, end) = key_range(&opts.prefix, opts.start_after.as_deref());
        let upper = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let limit = if opts.limit == 0 {
            usize::MAX
        } else {
            opts.limit
        };
        let mut kvs = Vec::new();
        let mut remaining = 0i64;
        for (_, revs) in st.history.range::<str, _>((lower, upper)) {
            let idx = revs.partition_point(|r| *r <= at);
            let Some(i) = idx.checked_sub(1) else {
                continue;
            };
            if kvs.len() == limit {
                if st.kv(revs[i]).is_some() {
                    remaining += 1;
                }
                continue;
            }
            if let Some(kv) = st.kv(revs[i]) {
                kvs.push(kv);
            }
        }
        Ok(ListResult {
            kvs,
            revision: at,
            more: remaining > 0,
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<(i64, Revision)> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_prefix(prefix)?;
        let st = self.lock();
        let end = prefix_end(prefix);
        let upper = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let n = st
            .current
            .range::<str, _>((Bound::Included(prefix), upper))
            .count();
        Ok((i64::try_from(n).unwrap_or(i64::MAX), st.revision))
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_key(key)?;
        check_value(key, &value)?;
        let expires = deadline(&*self.clock, ttl);
        let mut st = self.lock();
        if st.current.contains_key(key) {
            return Err(StoreError::AlreadyExists {
                key: key.to_string(),
            });
        }
        let ev = st.write(key, value, false, expires);
        let rev = st.revision;
        let kv = st.current_kv(key);
        self.hub.publish(vec![ev], rev);
        kv.ok_or_else(|| StoreError::internal("created key vanished"))
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_key(key)?;
        check_value(key, &value)?;
        let expires = deadline(&*self.clock, ttl);
        let mut st = self.lock();
        let Some(current) = st.current_kv(key) else {
            return Err(StoreError::NotFound {
                key: key.to_string(),
            });
        };
        if current.mod_revision != expected {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                expected,
                current: Some(Box::new(current)),
            });
        }
        let ev = st.write(key, value, false, expires);
        let rev = st.revision;
        let kv = st.current_kv(key);
        self.hub.publish(vec![ev], rev);
        kv.ok_or_else(|| StoreError::internal("updated key vanished"))
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        // Nothing here awaits: give the scheduler its turn like any I/O would.
        tokio::task::consume_budget().await;
        validate_key(key)?;
        let mut st = self.lock();
        let Some(current) = st.current_kv(key) else {
            return Err(StoreError::NotFound {
                key: key.to_string(),
            });
        };
        if let Some(expected) = expected
            && current.mod_revision != expected
        {
            return Err(StoreError::Conflict {
                key: key.to_string(),
                expected,
                current: Some(Box::new(current)),
            });
        }
        let ev = st.write(key, Bytes::new(), true, 0);
        let rev = st.revision;
        self.hub.publish(vec![ev], rev);
        Ok(Deleted {
            prev: current,
            revision: rev,
        })
    }

    async fn watch(
        &self,
        prefix: &str,
        after: Revision,
        opts: WatchOptions,
    ) -> Result<WatchStream> {
        let compacted = self.lock().compacted;
        let history = Arc::new(MemHistory(Arc::clone(&self.state)));
        self.hub.watch(history, prefix, after, compacted, opts)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let mut st = self.lock();
        if revision <= st.compacted {
            return Err(StoreError::Compacted {
                requested: revision,
                compacted: st.compacted,
                current: st.revision,
            });
        }
        if revision > st.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: st.revision,
            });
        }
        let st = &mut *st;
        let mut drop_revs = Vec::new();
        st.history.retain(|_, revs| {
            // Revisions at or below the compaction point, of which all but the newest are
            // superseded; the newest goes too when it is a tombstone.
            let upto = revs.partition_point(|r| *r <= revision);
            if upto == 0 {
                return true;
            }
            let newest = revs[upto - 1];
            let newest_deleted = st.log.get(&newest).is_none_or(|r| r.deleted);
            let cut = if newest_deleted { upto } else { upto - 1 };
            drop_revs.extend(revs.drain(..cut));
            !revs.is_empty()
        });
        for rev in drop_revs {
            st.log.remove(&rev);
        }
        st.compacted = revision;
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        Ok(self.lock().compacted)
    }

    async fn request_progress(&self) -> Result<()> {
        self.hub.request_progress();
        Ok(())
    }
}
