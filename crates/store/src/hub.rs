//! Watch fan-out for the in-process backends (SQLite, memory).
//!
//! The writer publishes every committed event, in revision order, into a bounded ring of
//! recent events and bumps the committed revision. Each watch is a task that remembers the
//! last revision it delivered; when the committed revision moves it reads the missing range
//! from the ring, or from the backend's history (the log on disk) when the ring no longer
//! reaches back that far. A slow watcher therefore never blocks the writer and never loses
//! events: it falls back to the log, and only compaction of that log can end it (with
//! [`StoreError::Compacted`]).
//!
//! "That far" is judged per key group (a key up to its third `/`: one resource of the API
//! server's keyspace, so the groups are as few as the resources): the ring remembers the
//! last revision it dropped of each group, so a quiet resource's watch, left unpolled while
//! a burst of pod writes turned the ring over, still reads the ring rather than scanning
//! the log. The writer takes a key's previous value from the ring when its write is still
//! there, rather than reading it back from disk.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use async_trait::async_trait;
use bytes::Bytes;
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use crate::{
    Event, Result, Revision, StoreError, WatchOptions, WatchStream, prefix_end, validate_prefix,
};

/// Where a watch reads events that are no longer in the ring.
#[async_trait]
pub(crate) trait History: Send + Sync + 'static {
    /// Events with revisions in `(after, up_to]` for keys in `[prefix, end)`, in revision
    /// order, at most `limit`. Fails with `Compacted` when `after` is below the compaction
    /// point.
    async fn events(
        &self,
        prefix: &str,
        end: Option<&str>,
        after: Revision,
        up_to: Revision,
        limit: usize,
    ) -> Result<Vec<Event>>;
}

const HISTORY_PAGE: usize = 1000;
const WATCH_CHANNEL: usize = 256;

struct Ring {
    events: VecDeque<Event>,
    /// The ring holds every event with a revision greater than this.
    floor: Revision,
    /// The ring's first revision: every event after it has been in the ring.
    start: Revision,
    /// The highest revision dropped from the ring, per key group (see [`group`]): a watch
    /// whose prefix lies within one group needs the log only when an event of that group
    /// it has not delivered was dropped, so a quiet resource's watch that was not polled
    /// while the ring turned over (thousands of pod writes) still reads the ring.
    dropped: HashMap<Box<str>, Revision>,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
}

/// The group a key or a watch prefix belongs to: its text up to its third `/`
/// (`/registry/pods/` for `/registry/pods/default/web-1`), or `None` when it has fewer.
/// Every key under a prefix that has a group is in that group.
fn group(key: &str) -> Option<&str> {
    key.match_indices('/').nth(2).map(|(i, _)| &key[..=i])
}

impl Ring {
    /// The revision after which the ring holds every event under `prefix`.
    fn covers_after(&self, prefix: &str) -> Revision {
        if self.max_events == 0 {
            return self.floor;
        }
        match group(prefix) {
            Some(g) => self.dropped.get(g).copied().unwrap_or(0).max(self.start),
            None => self.floor,
        }
    }

    /// Appends published events, then drops the oldest while either bound is passed.
    fn push(&mut self, events: Vec<Event>) {
        for ev in events {
            self.bytes += Self::cost(&ev);
            self.events.push_back(ev);
        }
        while self.events.len() > self.max_events
            || (self.bytes > self.max_bytes && self.events.len() > 1)
        {
            let Some(old) = self.events.pop_front() else {
                break;
            };
            self.bytes -= Self::cost(&old);
            self.floor = old.revision();
            let g = old.key().map_or("", |k| group(k).unwrap_or(""));
            match self.dropped.get_mut(g) {
                Some(r) => *r = self.floor,
                None => {
                    self.dropped.insert(g.into(), self.floor);
                }
            }
        }
    }

    /// The event at `revision`, if the ring holds it.
    fn at(&self, revision: Revision) -> Option<&Event> {
        let i = self.events.partition_point(|e| e.revision() < revision);
        self.events.get(i).filter(|e| e.revision() == revision)
    }

    /// The memory an event may hold: its key, value and previous value. A previous value
    /// taken from the ring (see [`Hub::value_at`]) is shared with the event before it, but
    /// it is counted all the same: it outlives that event once the ring drops it.
    fn cost(ev: &Event) -> usize {
        match ev {
            Event::Put { kv, prev } => {
                kv.key.len() + kv.value.len() + prev.as_ref().map_or(0, |p| p.value.len()) + 64
            }
            Event::Delete { prev, .. } => prev.key.len() + prev.value.len() + 64,
            Event::Progress { .. } => 16,
        }
    }
}

pub(crate) struct Hub {
    ring: RwLock<Ring>,
    committed: watch::Sender<Revision>,
    /// Bumped to ask every watch for a progress report.
    progress: watch::Sender<u64>,
    closed: AtomicBool,
}

impl Hub {
    /// A hub whose history starts at `current`. `max_events == 0` disables the ring.
    pub(crate) fn new(current: Revision, max_events: usize, max_bytes: usize) -> Arc<Self> {
        let (committed, _) = watch::channel(current);
        Arc::new(Hub {
            ring: RwLock::new(Ring {
                events: VecDeque::new(),
                floor: current,
                start: current,
                dropped: HashMap::new(),
                bytes: 0,
                max_events,
                max_bytes,
            }),
            committed,
            progress: watch::channel(0).0,
            closed: AtomicBool::new(false),
        })
    }

    /// Makes every watch send a progress event once it has caught up.
    pub(crate) fn request_progress(&self) {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
    }

    /// Ends every watch with `Unavailable`; called when the backend shuts down.
    pub(crate) fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        self.committed.send_modify(|_| {});
    }

    /// The value written at `revision`, if the ring still holds that event: the writer
    /// takes a key's previous value from here rather than reading it back from disk.
    pub(crate) fn value_at(&self, revision: Revision) -> Option<Bytes> {
        let ring = self.read_ring();
        match ring.at(revision)? {
            Event::Put { kv, .. } => Some(kv.value.clone()),
            _ => None,
        }
    }

    /// The ring, for reading; a poisoned lock is taken over, as `publish` does.
    fn read_ring(&self) -> RwLockReadGuard<'_, Ring> {
        match self.ring.read() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn committed(&self) -> Revision {
        *self.committed.borrow()
    }

    /// Publishes committed events (ascending revisions) and advances the committed
    /// revision to `revision`. Callers serialize publishes in commit order.
    pub(crate) fn publish(&self, events: Vec<Event>, revision: Revision) {
        {
            let mut ring = match self.ring.write() {
                Ok(g) => g,
                Err(poisoned) => poisoned.into_inner(),
            };
            if ring.max_events == 0 {
                ring.floor = revision;
            } else {
                ring.push(events);
            }
        }
        self.committed.send_replace(revision);
    }

    /// Events in `(after, up_to]` under the prefix, if the ring still holds that range.
    fn ring_range(
        &self,
        prefix: &str,
        end: Option<&str>,
        after: Revision,
        up_to: Revision,
    ) -> Option<Vec<Event>> {
        let ring = self.read_ring();
        if after < ring.covers_after(prefix) {
            return None;
        }
        let start = ring.events.partition_point(|e| e.revision() <= after);
        Some(
            ring.events
                .range(start..)
                .take_while(|e| e.revision() <= up_to)
                .filter(|e| {
                    e.key()
                        .is_some_and(|k| k >= prefix && end.is_none_or(|end| k < end))
                })
                .cloned()
                .collect(),
        )
    }

    /// Starts a watch of everything under `prefix` after revision `after` (`0`: from the
    /// committed revision on). `compacted` is the backend's compaction point.
    pub(crate) fn watch(
        self: &Arc<Self>,
        history: Arc<dyn History>,
        prefix: &str,
        after: Revision,
        compacted: Revision,
        opts: WatchOptions,
    ) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        let after = if after == 0 {
            self.committed()
        } else if after < compacted {
            return Err(StoreError::Compacted {
                requested: after,
                compacted,
                current: self.committed(),
            });
        } else {
            after
        };
        let (prefix, end) = (prefix.to_string(), prefix_end(prefix));
        let (tx, rx) = mpsc::channel(WATCH_CHANNEL);
        let hub = Arc::clone(self);
        tokio::spawn(async move {
            if let Err(e) = hub
                .run_watch(&*history, &prefix, end.as_deref(), after, opts, &tx)
                .await
            {
                let _ = tx.send(Err(e)).await;
            }
        });
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn run_watch(
        &self,
        history: &dyn History,
        prefix: &str,
        end: Option<&str>,
        after: Revision,
        opts: WatchOptions,
        tx: &mpsc::Sender<Result<Event>>,
    ) -> Result<()> {
        let mut committed_rx = self.committed.subscribe();
        let mut progress_rx = self.progress.subscribe();
        progress_rx.mark_unchanged();
        let mut progress_wanted = false;
        let mut last = after;
        let mut last_sent = Instant::now();
        loop {
            if self.closed.load(Ordering::SeqCst) {
                return Err(StoreError::unavailable("datastore closed"));
            }
            let committed = *committed_rx.borrow_and_update();
            while last < committed {
                let (batch, reached) = match self.ring_range(prefix, end, last, committed) {
                    Some(evs) => (evs, committed),
                    None => {
                        tracing::debug!(prefix, after = last, committed, "watch reads the log");
                        let evs = history
                            .events(prefix, end, last, committed, HISTORY_PAGE)
                            .await?;
                        let reached = if evs.len() < HISTORY_PAGE {
                            committed
                        } else {
                            evs.last().map_or(committed, Event::revision)
                        };
                        (evs, reached)
                    }
                };
                for ev in batch {
                    if tx.send(Ok(ev)).await.is_err() {
                        return Ok(());
                    }
                    last_sent = Instant::now();
                }
                last = reached;
            }
            if progress_wanted {
                progress_wanted = false;
                if tx
                    .send(Ok(Event::Progress { revision: last }))
                    .await
                    .is_err()
                {
                    return Ok(());
                }
                last_sent = Instant::now();
            }
            let progress_at = opts.progress_interval.map(|d| last_sent + d);
            tokio::select! {
                changed = committed_rx.changed() => {
                    if changed.is_err() {
                        return Err(StoreError::unavailable("datastore closed"));
                    }
                }
                _ = tx.closed() => return Ok(()),
                changed = progress_rx.changed() => {
                    if changed.is_ok() {
                        progress_wanted = true;
                    }
                }
                _ = sleep_until_opt(progress_at) => {
                    if tx.send(Ok(Event::Progress { revision: last })).await.is_err() {
                        return Ok(());
                    }
                    last_sent = Instant::now();
                }
            }
        }
    }
}

async fn sleep_until_opt(at: Option<Instant>) {
    match at {
        Some(at) => tokio::time::sleep_until(at).await,
        None => std::future::pending().await,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use std::sync::Mutex;
    use std::time::Duration;

    use tokio_stream::StreamExt;

    use super::*;
    use crate::KeyValue;

    /// A log of every event, which records the ranges asked of it.
    #[derive(Default)]
    struct Log {
        events: Vec<Event>,
        asked: Mutex<Vec<(String, Revision)>>,
    }

    #[async_trait]
    impl History for Log {
        async fn events(
            &self,
            prefix: &str,
            _end: Option<&str>,
            after: Revision,
            up_to: Revision,
            _limit: usize,
        ) -> Result<Vec<Event>> {
            self.asked.lock().unwrap().push((prefix.to_string(), after));
            Ok(self
                .events
                .iter()
                .filter(|e| e.revision() > after && e.revision() <= up_to)
                .filter(|e| e.key().is_some_and(|k| k.starts_with(prefix)))
                .cloned()
                .collect())
        }
    }

    async fn next(w: &mut WatchStream) -> Event {
        tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap()
    }

    fn put(key: &str, value: Bytes, revision: Revision, prev: Option<KeyValue>) -> Event {
        Event::Put {
            kv: KeyValue {
                key: key.to_string(),
                value,
                create_revision: prev.as_ref().map_or(revision, |p| p.create_revision),
                mod_revision: revision,
            },
            prev,
        }
    }

    #[test]
    fn groups_are_a_key_up_to_its_third_slash() {
        assert_eq!(group("/registry/pods/default/web"), Some("/registry/pods/"));
        assert_eq!(group("/registry/pods/"), Some("/registry/pods/"));
        assert_eq!(
            group("/registry/services/specs/"),
            Some("/registry/services/")
        );
        assert_eq!(group("/registry/pods"), None);
        assert_eq!(group("/"), None);
    }

    /// A quiet resource's watch that falls behind while another resource's writes turn
    /// the ring over still reads the ring; a watch of the busy resource reads the log.
    #[tokio::test]
    async fn only_a_watch_whose_own_events_were_dropped_reads_the_log() {
        let hub = Hub::new(1, 4, 1 << 20);
        // Ten pod writes in one publish (the ring keeps the last four), then a configmap.
        let pods: Vec<Event> = (2..12)
            .map(|r| {
                put(
                    &format!("/registry/pods/ns/p{r}"),
                    Bytes::from("x"),
                    r,
                    None,
                )
            })
            .collect();
        let cm = put("/registry/configmaps/ns/c", Bytes::from("y"), 12, None);
        let log = Arc::new(Log {
            events: pods.iter().chain([&cm]).cloned().collect(),
            asked: Mutex::default(),
        });
        let watch = |prefix: &str| {
            let history = Arc::clone(&log) as Arc<dyn History>;
            hub.watch(history, prefix, 1, 0, WatchOptions::default())
                .unwrap()
        };
        let (mut quiet, mut busy) = (watch("/registry/configmaps/"), watch("/registry/pods/"));
        hub.publish(pods, 11);
        hub.publish(vec![cm], 12);
        assert_eq!(next(&mut quiet).await.revision(), 12);
        assert_eq!(next(&mut busy).await.revision(), 2);
        // Only the pods' watch asked the log.
        let asked = log.asked.lock().unwrap().clone();
        assert_eq!(asked, vec![("/registry/pods/".to_string(), 1)]);
    }

    /// The writer's previous values come from the ring while it holds their write.
    #[test]
    fn values_are_read_from_the_ring_while_it_holds_them() {
        let hub = Hub::new(1, 2, 1 << 20);
        let v = Bytes::from(vec![b'a'; 1000]);
        hub.publish(vec![put("/r/p/a", v.clone(), 2, None)], 2);
        let shared = hub.value_at(2).unwrap();
        assert_eq!(shared.as_ptr(), v.as_ptr());
        assert!(hub.value_at(1).is_none());
        let deleted = Event::Delete {
            revision: 3,
            prev: KeyValue {
                key: "/r/p/a".to_string(),
                value: shared,
                create_revision: 2,
                mod_revision: 2,
            },
        };
        hub.publish(vec![deleted], 3);
        assert!(hub.value_at(3).is_none());
        // A third event drops the first from a ring of two.
        hub.publish(vec![put("/r/p/b", Bytes::from("b"), 4, None)], 4);
        assert!(hub.value_at(2).is_none());
        assert_eq!(&hub.value_at(4).unwrap()[..], b"b");
    }
}
