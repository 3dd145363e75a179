//! rkube's storage layer.
//!
//! [`Backend`] is the contract the API server stores objects through. It has etcd v3's
//! semantics as `k8s.io/apiserver/pkg/storage` relies on them:
//!
//! - one global revision, incremented by every successful write (create, update, delete,
//!   TTL expiry); each key carries the revision that created it and the one that last
//!   modified it (`mod_revision`, which becomes `metadata.resourceVersion`);
//! - reads are consistent snapshots taken at a revision, and pagination can stay on it;
//! - writes are compare-and-swap on `mod_revision`;
//! - a watch streams every change to a prefix strictly in revision order, starting exactly
//!   after a given revision and replaying history from the log;
//! - compaction drops superseded revisions and deletion tombstones older than a revision,
//!   never the current revision of a live key.
//!
//! Three implementations pass one conformance suite (`tests/conformance.rs`):
//! [`sqlite::SqliteBackend`] (the default, embedded), [`etcd::EtcdBackend`] (HA) and
//! [`memory::MemoryBackend`] (fast tests of the layers above).

mod clock;
mod error;
pub mod etcd;
mod hub;
pub mod keys;
pub mod memory;
pub mod sqlite;
mod tasks;

use std::pin::Pin;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures::Stream;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::{Result, StoreError};
pub use keys::{prefix_end, validate_key, validate_prefix};
pub use tasks::{CompactorHandle, spawn_compactor};

/// A store revision. `0` means "latest" where a revision is an input.
pub type Revision = i64;

/// Values larger than this are refused with [`StoreError::TooLarge`]. The API server
/// refuses request bodies over 3 MiB before they get here; the margin covers metadata the
/// server adds (managedFields, status).
pub const MAX_VALUE_BYTES: usize = 4 * 1024 * 1024;

/// One key as stored at one revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: String,
    pub value: Bytes,
    /// Revision of the write that created this incarnation of the key.
    pub create_revision: Revision,
    /// Revision of the write that produced this value.
    pub mod_revision: Revision,
}

/// A change seen by a watch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The key was created (`prev` is `None`) or updated.
    Put {
        kv: KeyValue,
        prev: Option<KeyValue>,
    },
    /// The key was deleted at `revision`; `prev` is its last value.
    Delete { revision: Revision, prev: KeyValue },
    /// Every event of this watch up to and including `revision` has been delivered.
    /// Used for bookmarks.
    Progress { revision: Revision },
}

impl Event {
    /// The revision this event happened at.
    pub fn revision(&self) -> Revision {
        match self {
            Event::Put { kv, .. } => kv.mod_revision,
            Event::Delete { revision, .. } => *revision,
            Event::Progress { revision } => *revision,
        }
    }

    /// The key this event is about (`None` for progress notifications).
    pub fn key(&self) -> Option<&str> {
        match self {
            Event::Put { kv, .. } => Some(&kv.key),
            Event::Delete { prev, .. } => Some(&prev.key),
            Event::Progress { .. } => None,
        }
    }
}

/// A stream of watch events. It ends after yielding an error; dropping it cancels the watch.
pub type WatchStream = Pin<Box<dyn Stream<Item = Result<Event>> + Send>>;

/// What to list.
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Only keys starting with this prefix.
    pub prefix: String,
    /// Only keys strictly greater than this one (pagination).
    pub start_after: Option<String>,
    /// At most this many keys; `0` means no limit.
    pub limit: usize,
    /// Read at this revision; `0` means the latest.
    pub revision: Revision,
}

impl ListOptions {
    pub fn prefix(prefix: impl Into<String>) -> Self {
        ListOptions {
            prefix: prefix.into(),
            ..Default::default()
        }
    }
}

/// The result of a list: a consistent snapshot at `revision`.
#[derive(Clone, Debug, Default)]
pub struct ListResult {
    pub kvs: Vec<KeyValue>,
    /// The revision the snapshot was taken at. Pass it back (with `start_after` = the last
    /// key) to read the next page from the same snapshot.
    pub revision: Revision,
    /// Whether keys after the last returned one exist in the snapshot.
    pub more: bool,
    /// How many live keys of the range come after the last returned one in the snapshot
    /// (etcd's range `count` minus the keys returned); `0` when `more` is false.
    pub remaining: i64,
}

/// The result of a delete.
#[derive(Clone, Debug)]
pub struct Deleted {
    /// The value the key had when it was deleted.
    pub prev: KeyValue,
    /// The revision of the deletion.
    pub revision: Revision,
}

/// Options for [`Backend::watch`].
#[derive(Clone, Debug, Default)]
pub struct WatchOptions {
    /// Emit [`Event::Progress`] when the watch has been quiet for this long.
    pub progress_interval: Option<Duration>,
}

/// The storage contract; see the crate documentation for its semantics.
#[async_trait]
pub trait Backend: Send + Sync + 'static {
    /// A short name for logs and benchmarks: `sqlite`, `etcd`, `memory`.
    fn name(&self) -> &'static str;

    /// The latest committed revision.
    async fn current_revision(&self) -> Result<Revision>;

    /// The current value of `key`, if any.
    async fn get(&self, key: &str) -> Result<Option<KeyValue>>;

    /// Keys under a prefix, in key order, as a consistent snapshot.
    async fn list(&self, opts: ListOptions) -> Result<ListResult>;

    /// How many live keys are under `prefix`, and at which revision that was counted.
    async fn count(&self, prefix: &str) -> Result<(i64, Revision)>;

    /// Creates `key`; fails with [`StoreError::AlreadyExists`] if it exists. A `ttl`
    /// deletes the key once it elapses (unless it is rewritten without one).
    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue>;

    /// Replaces `key` if its `mod_revision` is still `expected`; fails with
    /// [`StoreError::Conflict`] (carrying the current value) otherwise, and with
    /// [`StoreError::NotFound`] if the key does not exist.
    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue>;

    /// Deletes `key`, if `expected` is given only when its `mod_revision` still matches.
    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted>;

    /// Streams every change under `prefix` with a revision greater than `after`
    /// (`0`: from now on). Fails with [`StoreError::Compacted`] when history after `after`
    /// is no longer complete.
    async fn watch(&self, prefix: &str, after: Revision, opts: WatchOptions)
    -> Result<WatchStream>;

    /// Drops superseded revisions and tombstones at or below `revision`. Reads and watches
    /// at revisions below it then fail with [`StoreError::Compacted`].
    async fn compact(&self, revision: Revision) -> Result<()>;

    /// The revision the store was last compacted at (`0`: never).
    async fn compacted_revision(&self) -> Result<Revision>;

    /// Asks every open watch to report its progress ([`Event::Progress`]) as soon as it has
    /// delivered everything committed so far, like etcd's `RequestProgress`. Readers use it
    /// to learn that a quiet watch has caught up with a revision.
    async fn request_progress(&self) -> Result<()>;
}

/// What a [`guaranteed_update`] function decides.
#[derive(Clone, Debug)]
pub enum Update {
    /// Write this value (create it when the key does not exist).
    Put { value: Bytes, ttl: Option<Duration> },
    /// Leave the key as it is.
    Keep,
}

/// Read-modify-write with retries, as upstream's `GuaranteedUpdate`: `f` sees the current
/// value (or `None`) and decides; on a conflict it is called again with the value that won.
/// A `Put` of bytes identical to the current value writes nothing.
///
/// After repeated conflicts it backs off with jitter (so the writer that won the last round
/// does not win every round), and gives up with the last conflict after `MAX_ATTEMPTS`
/// rounds, so a key that is rewritten faster than `f` runs cannot hang its caller.
pub async fn guaranteed_update<F, E>(
    backend: &dyn Backend,
    key: &str,
    mut f: F,
) -> std::result::Result<Option<KeyValue>, E>
where
    F: FnMut(Option<&KeyValue>) -> std::result::Result<Update, E>,
    E: From<StoreError>,
{
    const MAX_ATTEMPTS: usize = 64;
    let mut current = backend.get(key).await?;
    let mut last_err = None;
    for attempt in 0..MAX_ATTEMPTS {
        if attempt >= 2 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        let (value, ttl) = match f(current.as_ref())? {
            Update::Keep => return Ok(current),
            Update::Put { value, ttl } => (value, ttl),
        };
        let result = match &current {
            Some(kv) if kv.value == value && ttl.is_none() => return Ok(current),
            Some(kv) => backend.update(key, value, kv.mod_revision, ttl).await,
            None => backend.create(key, value, ttl).await,
        };
        match result {
            Ok(kv) => return Ok(Some(kv)),
            Err(StoreError::Conflict { current: now, .. }) => {
                current = now.map(|b| *b);
            }
            Err(StoreError::AlreadyExists { .. }) | Err(StoreError::NotFound { .. }) => {
                current = backend.get(key).await?;
            }
            Err(e) => return Err(e.into()),
        }
        last_err = Some(StoreError::Conflict {
            key: key.to_string(),
            expected: current.as_ref().map_or(0, |kv| kv.mod_revision),
            current: current.clone().map(Box::new),
        });
    }
    Err(last_err
        .unwrap_or_else(|| StoreError::internal("guaranteed_update made no attempt"))
        .into())
}

/// A random delay below `2^min(attempt, 7)` ms.
fn backoff(attempt: usize) -> Duration {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_usize(attempt);
    let cap_us = 1000u64 << attempt.min(7);
    Duration::from_micros(h.finish() % cap_us)
}

/// Checks a value against [`MAX_VALUE_BYTES`].
pub(crate) fn check_value(key: &str, value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(StoreError::TooLarge {
            key: key.to_string(),
            size: value.len(),
            limit: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}
