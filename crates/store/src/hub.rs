//! Watch fan-out for the in-process backends (SQLite, memory).
//!
//! The writer publishes every committed event, in revision order, into a bounded ring of
//! recent events and bumps the committed revision. Each watch is a task that remembers the
//! last revision it delivered; when the committed revision moves it reads the missing range
//! from the ring, or from the backend's history (the log on disk) when the ring no longer
//! reaches back that far. A slow watcher therefore never blocks the writer and never loses
//! events: it falls back to the log, and only compaction of that log can end it (with
//! [`StoreError::Compacted`]).

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock};

use async_trait::async_trait;
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
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
}

fn event_bytes(ev: &Event) -> usize {
    match ev {
        Event::Put { kv, prev } => {
            kv.key.len() + kv.value.len() + prev.as_ref().map_or(0, |p| p.value.len()) + 64
        }
        Event::Delete { prev, .. } => prev.key.len() + prev.value.len() + 64,
        Event::Progress { .. } => 16,
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
                for ev in events {
                    ring.bytes += event_bytes(&ev);
                    ring.events.push_back(ev);
                }
                while ring.events.len() > ring.max_events
                    || (ring.bytes > ring.max_bytes && ring.events.len() > 1)
                {
                    if let Some(old) = ring.events.pop_front() {
                        ring.bytes -= event_bytes(&old);
                        ring.floor = old.revision();
                    }
                }
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
        let ring = match self.ring.read() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if after < ring.floor {
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
