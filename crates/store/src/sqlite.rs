//! The embedded default backend: one SQLite file in WAL mode.
//!
//! Layout: `kv_log` is the append-only history (one row per revision: puts and deletion
//! tombstones, each pointing at the revision it superseded); `kv_current` maps every live key
//! to the revision holding its value (and its TTL deadline); `kv_ttl` indexes only the keys
//! that have a TTL, so expiry is one index range scan (a partial index on `kv_current` would
//! make SQLite re-prepare every keyed statement on each new binding); `meta` keeps the
//! current and compacted revisions.
//!
//! Writes go through one writer thread that drains every queued request into one
//! transaction and commits it with one fsync (`synchronous=FULL`), so concurrent writers
//! share the cost of durability (group commit); in a stream of writes it waits briefly for
//! more before committing a small batch ([`SqliteOptions::commit_delay`]). A write is
//! acknowledged only after its commit. Reads run on a small pool of connections,
//! concurrently with the writer, each in a read transaction so a list and the revision it
//! reports come from one snapshot.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::{Connection, OpenFlags, OptionalExtension, TransactionBehavior, params};
use tokio::sync::{Semaphore, mpsc, oneshot};

use crate::clock::deadline;
use crate::hub::{History, Hub};
use crate::{
    Backend, Clock, Deleted, Event, KeyValue, ListOptions, ListResult, Result, Revision,
    StoreError, SystemClock, WatchOptions, WatchStream, check_value, prefix_end, validate_key,
    validate_prefix,
};

const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_log (
    revision        INTEGER PRIMARY KEY,
    key             TEXT NOT NULL,
    create_revision INTEGER NOT NULL,
    prev_revision   INTEGER NOT NULL,
    deleted         INTEGER NOT NULL,
    value           BLOB NOT NULL
);
CREATE INDEX IF NOT EXISTS kv_log_key ON kv_log (key, revision);
CREATE TABLE IF NOT EXISTS kv_current (
    key        TEXT PRIMARY KEY,
    revision   INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS kv_ttl (
    key        TEXT PRIMARY KEY,
    expires_at INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS kv_ttl_at ON kv_ttl (expires_at);
INSERT OR IGNORE INTO meta (name, value) VALUES ('schema', 1), ('revision', 1), ('compacted', 0);
";

/// How the SQLite backend is set up.
#[derive(Clone)]
pub struct SqliteOptions {
    /// The database file (created with its directory when missing).
    pub path: PathBuf,
    /// Read connections.
    pub readers: usize,
    /// Most requests committed in one transaction.
    pub max_batch: usize,
    /// While writes come in a stream (the last commit ended less than eight delays ago),
    /// how long the writer waits for more before committing a batch of fewer than
    /// [`GATHER_BELOW`] writes, so they share one fsync (PostgreSQL's `commit_delay`). A
    /// write after a quiet spell is committed at once; zero never waits.
    pub commit_delay: Duration,
    /// Recent events kept in memory for watchers (count and bytes). The API server's watch
    /// caches hold their own history, so this ring only spares a resuming watch (a cache
    /// catching up after a failure, a client resuming from beyond a cache's window) the
    /// log on disk. Both bounds count: 4 MiB holds about 700 pod updates (each event counts
    /// the value and the one it replaced), a few hundred milliseconds at thousands of
    /// writes per second; a watch further behind reads the log. A watch of a quiet resource
    /// reads the log only when an event of its own resource was dropped before it read it
    /// (see `hub`).
    pub ring_events: usize,
    pub ring_bytes: usize,
    /// How often expired TTL keys are deleted.
    pub ttl_sweep: Duration,
    /// Rows deleted per compaction transaction, so writers are never stalled for long.
    pub compaction_chunk: i64,
    pub clock: Arc<dyn Clock>,
}

impl SqliteOptions {
    pub fn new(path: impl Into<PathBuf>) -> Self {
        SqliteOptions {
            path: path.into(),
            readers: 4,
            max_batch: 512,
            commit_delay: Duration::from_millis(2),
            ring_events: 2048,
            ring_bytes: 4 * 1024 * 1024,
            ttl_sweep: Duration::from_secs(1),
            compaction_chunk: 10_000,
            clock: Arc::new(SystemClock),
        }
    }
}

fn sql_err(e: rusqlite::Error) -> StoreError {
    use rusqlite::ErrorCode::*;
    match &e {
        rusqlite::Error::SqliteFailure(f, _) => match f.code {
            DatabaseBusy | DatabaseLocked => StoreError::unavailable(e),
            DatabaseCorrupt | NotADatabase => {
                StoreError::Internal(format!("datastore file is corrupt: {e}"))
            }
            DiskFull | SystemIoFailure | CannotOpen | ReadOnly => StoreError::unavailable(e),
            _ => StoreError::internal(e),
        },
        _ => StoreError::internal(e),
    }
}

fn to_i64(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

enum Op {
    Create {
        key: String,
        value: Bytes,
        expires_at: i64,
    },
    Update {
        key: String,
        value: Bytes,
        expected: Revision,
        expires_at: i64,
    },
    Delete {
        key: String,
        expected: Option<Revision>,
    },
    Expire {
        now_ms: i64,
    },
    Compact {
        revision: Revision,
    },
}

enum Done {
    Kv(KeyValue),
    Deleted(Deleted),
    Count(usize),
}

struct Request {
    op: Op,
    reply: oneshot::Sender<Result<Done>>,
}

/// A pool of read connections used from blocking threads.
struct ReadPool {
    conns: Mutex<Vec<Connection>>,
    permits: Semaphore,
}

impl ReadPool {
    async fn with<T, F>(self: &Arc<Self>, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> Result<T> + Send + 'static,
    {
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| StoreError::unavailable("datastore closed"))?;
        let pool = Arc::clone(self);
        let out = tokio::task::spawn_blocking(move || {
            let mut conn = {
                let mut conns = match pool.conns.lock() {
                    Ok(g) => g,
                    Err(p) => p.into_inner(),
                };
                conns.pop()
            }
            .ok_or_else(|| StoreError::internal("read pool empty"))?;
            let out = f(&mut conn);
            let mut conns = match pool.conns.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            conns.push(conn);
            out
        })
        .await
        .map_err(|e| StoreError::internal(format!("read task failed: {e}")))?;
        drop(permit);
        out
    }
}

/// The SQLite backend.
pub struct SqliteBackend {
    writer: Option<mpsc::Sender<Request>>,
    writer_thread: Option<JoinHandle<()>>,
    readers: Arc<ReadPool>,
    hub: Arc<Hub>,
    clock: Arc<dyn Clock>,
    sweeper: Option<tokio::task::JoinHandle<()>>,
}

fn open_conn(path: &Path) -> Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
        | OpenFlags::SQLITE_OPEN_CREATE
        | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let conn = Connection::open_with_flags(path, flags).map_err(|e| {
        StoreError::Unavailable(format!("cannot open datastore {}: {e}", path.display()))
    })?;
    conn.busy_timeout(Duration::from_secs(10))
        .map_err(sql_err)?;
    // Query-planner stability: without it SQLite re-prepares every statement with a join or
    // a LIMIT whenever a parameter gets a new value (measured: a re-prepare per write).
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )
    .map_err(sql_err)?;
    Ok(conn)
}

fn startup_error(path: &Path, e: impl std::fmt::Display) -> StoreError {
    StoreError::Internal(format!(
        "datastore {} is corrupt or not an rkube SQLite database: {e}",
        path.display()
    ))
}

fn read_meta(conn: &Connection, name: &str) -> rusqlite::Result<i64> {
    conn.prepare_cached("SELECT value FROM meta WHERE name = ?1")?
        .query_row([name], |r| r.get(0))
}

impl SqliteBackend {
    /// Opens (creating if needed) the datastore at `path` with default options.
    pub fn open(path: impl Into<PathBuf>) -> Result<Self> {
        Self::open_with(SqliteOptions::new(path))
    }

    pub fn open_with(opts: SqliteOptions) -> Result<Self> {
        let path = opts.path.clone();
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::Unavailable(format!("cannot create {}: {e}", dir.display()))
            })?;
        }
        // One process per datastore: a second one would interleave revisions.
        let lock_path = path.with_extension("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(|e| {
                StoreError::Unavailable(format!("cannot open {}: {e}", lock_path.display()))
            })?;
        lock.try_lock().map_err(|_| {
            StoreError::Unavailable(format!(
                "datastore {} is in use by another process (lock {} is held)",
                path.display(),
                lock_path.display()
            ))
        })?;

        let wconn = open_conn(&path)?;
        let mode: String = wconn
            .query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))
            .map_err(|e| startup_error(&path, e))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(StoreError::Internal(format!(
                "datastore {}: cannot switch to WAL mode (got {mode})",
                path.display()
            )));
        }
        let small = std::fs::metadata(&path).map_or(true, |m| m.len() < 256 << 20);
        if small {
            let check: String = wconn
                .query_row("PRAGMA quick_check(1)", [], |r| r.get(0))
                .map_err(|e| startup_error(&path, e))?;
            if check != "ok" {
                return Err(startup_error(&path, check));
            }
        }
        // A 4 MB page cache: the tables' inner pages fit; the leaf and overflow pages a
        // write touches are rarely touched again soon (each object is its own row).
        wconn
            .execute_batch(
                "PRAGMA synchronous=FULL; PRAGMA cache_size=-4096; PRAGMA wal_autocheckpoint=4000;",
            )
            .map_err(sql_err)?;
        wconn
            .execute_batch(SCHEMA)
            .map_err(|e| startup_error(&path, e))?;
        let schema = read_meta(&wconn, "schema").map_err(|e| startup_error(&path, e))?;
        if schema != SCHEMA_VERSION {
            return Err(startup_error(
                &path,
                format!("schema version {schema}, this build knows {SCHEMA_VERSION}"),
            ));
        }
        let revision = read_meta(&wconn, "revision").map_err(|e| startup_error(&path, e))?;
        let compacted = read_meta(&wconn, "compacted").map_err(|e| startup_error(&path, e))?;
        // The newest row can never be beyond the recorded revision; if it is, the file was
        // written by something else.
        let max_row: Option<i64> = wconn
            .query_row("SELECT MAX(revision) FROM kv_log", [], |r| r.get(0))
            .map_err(|e| startup_error(&path, e))?;
        if max_row.unwrap_or(0) > revision {
            return Err(startup_error(
                &path,
                format!("log reaches revision {max_row:?} beyond recorded {revision}"),
            ));
        }

        let mut conns = Vec::with_capacity(opts.readers.max(1));
        for _ in 0..opts.readers.max(1) {
            let c = open_conn(&path)?;
            // 2 MB each: the readers serve single-key reads and the rare list the watch
            // caches do not answer; the B-tree's inner pages fit, and the OS caches the rest.
            c.execute_batch("PRAGMA query_only=ON; PRAGMA cache_size=-2048;")
                .map_err(sql_err)?;
            conns.push(c);
        }
        let readers = Arc::new(ReadPool {
            permits: Semaphore::new(conns.len()),
            conns: Mutex::new(conns),
        });

        let hub = Hub::new(revision, opts.ring_events, opts.ring_bytes);
        let (tx, rx) = mpsc::channel::<Request>(16 * 1024);
        let writer = Writer {
            conn: wconn,
            revision,
            compacted,
            hub: Arc::clone(&hub),
            max_batch: opts.max_batch.max(1),
            commit_delay: opts.commit_delay,
            last_commit: None,
            compaction_chunk: opts.compaction_chunk.max(1),
        };
        let writer_thread = std::thread::Builder::new()
            .name("rkube-sqlite-writer".into())
            .spawn(move || {
                writer.run(rx);
                drop(lock);
            })
            .map_err(|e| StoreError::internal(format!("cannot start writer thread: {e}")))?;

        let sweeper = tokio::runtime::Handle::try_current().ok().map(|rt| {
            let tx = tx.downgrade();
            let clock = Arc::clone(&opts.clock);
            let every = opts.ttl_sweep;
            rt.spawn(async move {
                let mut tick = tokio::time::interval(every);
                tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    tick.tick().await;
                    let Some(tx) = tx.upgrade() else { return };
                    let (reply, rx) = oneshot::channel();
                    let op = Op::Expire {
                        now_ms: clock.now_ms(),
                    };
                    if tx.send(Request { op, reply }).await.is_err() {
                        return;
                    }
                    drop(tx);
                    if let Ok(Err(e)) = rx.await {
                        tracing::warn!(error = %e, "TTL sweep failed");
                    }
                }
            })
        });

        tracing::info!(path = %path.display(), revision, compacted, "sqlite datastore open");
        Ok(SqliteBackend {
            writer: Some(tx),
            writer_thread: Some(writer_thread),
            readers,
            hub,
            clock: opts.clock,
            sweeper,
        })
    }

    async fn submit(&self, op: Op) -> Result<Done> {
        let writer = self
            .writer
            .as_ref()
            .ok_or_else(|| StoreError::unavailable("datastore closed"))?;
        let (reply, rx) = oneshot::channel();
        writer
            .send(Request { op, reply })
            .await
            .map_err(|_| StoreError::unavailable("datastore writer stopped"))?;
        rx.await
            .map_err(|_| StoreError::unavailable("datastore writer stopped"))?
    }

    /// Deletes expired TTL keys now (the background sweep does it every `ttl_sweep`).
    pub async fn expire(&self) -> Result<usize> {
        match self
            .submit(Op::Expire {
                now_ms: self.clock.now_ms(),
            })
            .await?
        {
            Done::Count(n) => Ok(n),
            _ => Err(StoreError::internal("unexpected reply to expire")),
        }
    }
}

impl Drop for SqliteBackend {
    fn drop(&mut self) {
        if let Some(s) = self.sweeper.take() {
            s.abort();
        }
        self.writer.take();
        self.hub.close();
        if let Some(t) = self.writer_thread.take() {
            // The writer finishes the batch it holds and releases the datastore lock.
            let _ = t.join();
        }
    }
}

struct Writer {
    conn: Connection,
    revision: Revision,
    compacted: Revision,
    hub: Arc<Hub>,
    max_batch: usize,
    commit_delay: Duration,
    /// When the last batch was committed.
    last_commit: Option<std::time::Instant>,
    compaction_chunk: i64,
}

/// A batch this small is worth waiting [`SqliteOptions::commit_delay`] for more.
pub const GATHER_BELOW: usize = 16;

/// Whether to wait `delay` for more writes before committing the `queued` ones (of at
/// most `max_batch`), the last commit having ended `since_last` ago: only a small batch in
/// a stream of writes waits.
fn gather(delay: Duration, queued: usize, max_batch: usize, since_last: Option<Duration>) -> bool {
    !delay.is_zero()
        && queued < GATHER_BELOW.min(max_batch)
        && since_last.is_some_and(|ago| ago < delay * 8)
}

/// A key's live row as the writer sees it.
struct Live {
    kv: KeyValue,
    expires_at: i64,
}

fn live(conn: &Connection, hub: &Hub, key: &str) -> rusqlite::Result<Option<Live>> {
    let found = conn
        .prepare_cached(
            "SELECT l.revision, l.create_revision, c.expires_at FROM kv_current c \
             JOIN kv_log l ON l.revision = c.revision WHERE c.key = ?1",
        )?
        .query_row([key], |r| {
            Ok((
                r.get::<_, Revision>(0)?,
                r.get::<_, Revision>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })
        .optional()?;
    let Some((mod_revision, create_revision, expires_at)) = found else {
        return Ok(None);
    };
    // The value is the ring's when the ring still holds its write (shared, not read
    // back from disk); the log's otherwise.
    let value = match hub.value_at(mod_revision) {
        Some(v) => v,
        None => Bytes::from(
            conn.prepare_cached("SELECT value FROM kv_log WHERE revision = ?1")?
                .query_row([mod_revision], |r| r.get::<_, Vec<u8>>(0))?,
        ),
    };
    Ok(Some(Live {
        kv: KeyValue {
            key: key.to_string(),
            mod_revision,
            create_revision,
            value,
        },
        expires_at,
    }))
}

/// Keeps `kv_ttl` in step with a key's TTL deadline (`0`: none).
fn set_ttl(tx: &Connection, key: &str, old: i64, new: i64) -> rusqlite::Result<()> {
    if new > 0 {
        tx.prepare_cached("INSERT OR REPLACE INTO kv_ttl (key, expires_at) VALUES (?1, ?2)")?
            .execute(params![key, new])?;
    } else if old > 0 {
        tx.prepare_cached("DELETE FROM kv_ttl WHERE key = ?1")?
            .execute([key])?;
    }
    Ok(())
}

impl Writer {
    fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        let mut compaction: Option<(Revision, Revision, oneshot::Sender<Result<Done>>)> = None;
        loop {
            let first = if compaction.is_some() {
                match rx.try_recv() {
                    Ok(r) => Some(r),
                    Err(mpsc::error::TryRecvError::Empty) => None,
                    Err(mpsc::error::TryRecvError::Disconnected) => None,
                }
            } else {
                match rx.blocking_recv() {
                    Some(r) => Some(r),
                    None => return,
                }
            };
            if let Some(first) = first {
                let mut batch = vec![first];
                self.drain(&mut rx, &mut batch);
                if self.gathering(batch.len()) {
                    std::thread::sleep(self.commit_delay);
                    self.drain(&mut rx, &mut batch);
                }
                let mut writes = Vec::with_capacity(batch.len());
                for req in batch {
                    match req.op {
                        Op::Compact { revision } => match self.start_compaction(revision) {
                            Ok(()) => {
                                // A compaction already running is superseded by a newer one.
                                if let Some((_, _, old)) = compaction.take() {
                                    let _ = old.send(Ok(Done::Count(0)));
                                }
                                compaction = Some((revision, 0, req.reply));
                            }
                            Err(e) => {
                                let _ = req.reply.send(Err(e));
                            }
                        },
                        op => writes.push(Request {
                            op,
                            reply: req.reply,
                        }),
                    }
                }
                if !writes.is_empty() {
                    self.commit_batch(writes);
                    self.last_commit = Some(std::time::Instant::now());
                }
            }
            if let Some((target, done_upto, reply)) = compaction.take() {
                match self.compact_chunk(target, done_upto) {
                    Ok(Some(next)) => compaction = Some((target, next, reply)),
                    Ok(None) => {
                        let _ = reply.send(Ok(Done::Count(0)));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                }
            }
        }
    }

    /// Moves queued requests into `batch`, up to the batch limit.
    fn drain(&self, rx: &mut mpsc::Receiver<Request>, batch: &mut Vec<Request>) {
        while batch.len() < self.max_batch {
            match rx.try_recv() {
                Ok(r) => batch.push(r),
                Err(_) => break,
            }
        }
    }

    fn gathering(&self, queued: usize) -> bool {
        gather(
            self.commit_delay,
            queued,
            self.max_batch,
            self.last_commit.map(|at| at.elapsed()),
        )
    }

    fn commit_batch(&mut self, batch: Vec<Request>) {
        let start_revision = self.revision;
        let mut events = Vec::with_capacity(batch.len());
        let outcome = (|| -> rusqlite::Result<Vec<Result<Done>>> {
            let tx = self
                .conn
                .transaction_with_behavior(TransactionBehavior::Immediate)?;
            let mut results = Vec::with_capacity(batch.len());
            for req in &batch {
                results.push(apply(
                    &tx,
                    &self.hub,
                    &mut self.revision,
                    &req.op,
                    &mut events,
                )?);
            }
            if self.revision != start_revision {
                tx.prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'revision'")?
                    .execute([self.revision])?;
            }
            tx.commit()?;
            Ok(results)
        })();
        match outcome {
            Ok(results) => {
                if self.revision != start_revision {
                    self.hub.publish(events, self.revision);
                }
                for (req, res) in batch.into_iter().zip(results) {
                    let _ = req.reply.send(res);
                }
            }
            Err(e) => {
                self.revision = start_revision;
                tracing::error!(error = %e, "datastore commit failed");
                let err = sql_err(e);
                for req in batch {
                    let _ = req.reply.send(Err(match &err {
                        StoreError::Unavailable(m) => StoreError::Unavailable(m.clone()),
                        other => StoreError::Internal(other.to_string()),
                    }));
                }
            }
        }
    }

    fn start_compaction(&mut self, revision: Revision) -> Result<()> {
        if revision <= self.compacted {
            return Err(StoreError::Compacted {
                requested: revision,
                compacted: self.compacted,
                current: self.revision,
            });
        }
        if revision > self.revision {
            return Err(StoreError::FutureRevision {
                requested: revision,
                current: self.revision,
            });
        }
        // From here on reads below `revision` fail with Compacted, while the rows are
        // removed in chunks.
        self.conn
            .prepare_cached("UPDATE meta SET value = ?1 WHERE name = 'compacted'")
            .and_then(|mut s| s.execute([revision]))
            .map_err(sql_err)?;
        self.compacted = revision;
        Ok(())
    }

    /// Removes superseded rows and tombstones with revisions in `(from, from + chunk]`
    /// (capped at `target`). Returns where to continue, or `None` when done.
    fn compact_chunk(&mut self, target: Revision, from: Revision) -> Result<Option<Revision>> {
        let upto = from.saturating_add(self.compaction_chunk).min(target);
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(sql_err)?;
        tx.prepare_cached(
            "DELETE FROM kv_log WHERE revision > ?1 AND revision <= ?2 AND (deleted = 1 OR \
             revision < (SELECT MAX(y.revision) FROM kv_log y \
                         WHERE y.key = kv_log.key AND y.revision <= ?3))",
        )
        .and_then(|mut s| s.execute(params![from, upto, target]))
        .map_err(sql_err)?;
        tx.commit().map_err(sql_err)?;
        Ok((upto < target).then_some(upto))
    }
}

fn insert_row(
    tx: &Connection,
    revision: Revision,
    key: &str,
    create_revision: Revision,
    prev_revision: Revision,
    deleted: bool,
    value: &[u8],
) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO kv_log (revision, key, create_revision, prev_revision, deleted, value) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    )?
    .execute(params![
        revision,
        key,
        create_revision,
        prev_revision,
        deleted,
        value
    ])?;
    Ok(())
}

fn delete_live(
    tx: &Connection,
    revision: &mut Revision,
    Live {
        kv: prev,
        expires_at,
    }: Live,
    events: &mut Vec<Event>,
) -> rusqlite::Result<Deleted> {
    set_ttl(tx, &prev.key, expires_at, 0)?;
    *revision += 1;
    insert_row(
        tx,
        *revision,
        &prev.key,
        prev.create_revision,
        prev.mod_revision,
        true,
        &[],
    )?;
    tx.prepare_cached("DELETE FROM kv_current WHERE key = ?1")?
        .execute([&prev.key])?;
    events.push(Event::Delete {
        revision: *revision,
        prev: prev.clone(),
    });
    Ok(Deleted {
        prev,
        revision: *revision,
    })
}

/// Applies one write inside the batch transaction. Precondition failures are returned as
/// the inner error; SQL failures abort the whole batch.
fn apply(
    tx: &Connection,
    hub: &Hub,
    revision: &mut Revision,
    op: &Op,
    events: &mut Vec<Event>,
) -> rusqlite::Result<Result<Done>> {
    match op {
        Op::Create {
            key,
            value,
            expires_at,
        } => {
            let exists = tx
                .prepare_cached("SELECT 1 FROM kv_current WHERE key = ?1")?
                .exists([key])?;
            if exists {
                return Ok(Err(StoreError::AlreadyExists { key: key.clone() }));
            }
            *revision += 1;
            insert_row(tx, *revision, key, *revision, 0, false, value)?;
            tx.prepare_cached(
                "INSERT INTO kv_current (key, revision, expires_at) VALUES (?1, ?2, ?3)",
            )?
            .execute(params![key, *revision, expires_at])?;
            set_ttl(tx, key, 0, *expires_at)?;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: *revision,
                mod_revision: *revision,
            };
            events.push(Event::Put {
                kv: kv.clone(),
                prev: None,
            });
            Ok(Ok(Done::Kv(kv)))
        }
        Op::Update {
            key,
            value,
            expected,
            expires_at,
        } => {
            let Some(Live {
                kv: prev,
                expires_at: old_expiry,
            }) = live(tx, hub, key)?
            else {
                return Ok(Err(StoreError::NotFound { key: key.clone() }));
            };
            if prev.mod_revision != *expected {
                return Ok(Err(StoreError::Conflict {
                    key: key.clone(),
                    expected: *expected,
                    current: Some(Box::new(prev)),
                }));
            }
            *revision += 1;
            insert_row(
                tx,
                *revision,
                key,
                prev.create_revision,
                prev.mod_revision,
                false,
                value,
            )?;
            tx.prepare_cached(
                "UPDATE kv_current SET revision = ?2, expires_at = ?3 WHERE key = ?1",
            )?
            .execute(params![key, *revision, expires_at])?;
            set_ttl(tx, key, old_expiry, *expires_at)?;
            let kv = KeyValue {
                key: key.clone(),
                value: value.clone(),
                create_revision: prev.create_revision,
                mod_revision: *revision,
            };
            events.push(Event::Put {
                kv: kv.clone(),
                prev: Some(prev),
            });
            Ok(Ok(Done::Kv(kv)))
        }
        Op::Delete { key, expected } => {
            let Some(found) = live(tx, hub, key)? else {
                return Ok(Err(StoreError::NotFound { key: key.clone() }));
            };
            if let Some(expected) = expected
                && found.kv.mod_revision != *expected
            {
                return Ok(Err(StoreError::Conflict {
                    key: key.clone(),
                    expected: *expected,
                    current: Some(Box::new(found.kv)),
                }));
            }
            Ok(Ok(Done::Deleted(delete_live(tx, revision, found, events)?)))
        }
        Op::Expire { now_ms } => {
            let keys: Vec<String> = tx
                .prepare_cached("SELECT key FROM kv_ttl WHERE expires_at <= ?1")?
                .query_map([now_ms], |r| r.get(0))?
                .collect::<rusqlite::Result<_>>()?;
            let mut n = 0;
            for key in keys {
                if let Some(found) = live(tx, hub, &key)? {
                    delete_live(tx, revision, found, events)?;
                    n += 1;
                }
            }
            Ok(Ok(Done::Count(n)))
        }
        Op::Compact { .. } => Ok(Err(StoreError::internal("compaction is not a batch op"))),
    }
}

fn compaction_check(conn: &Connection, at: Revision) -> Result<Revision> {
    let current = read_meta(conn, "revision").map_err(sql_err)?;
    let compacted = read_meta(conn, "compacted").map_err(sql_err)?;
    if at > current {
        return Err(StoreError::FutureRevision {
            requested: at,
            current,
        });
    }
    if at != 0 && at < compacted {
        return Err(StoreError::Compacted {
            requested: at,
            compacted,
            current,
        });
    }
    Ok(current)
}

fn row_kv(r: &rusqlite::Row<'_>) -> rusqlite::Result<KeyValue> {
    Ok(KeyValue {
        key: r.get(0)?,
        mod_revision: r.get(1)?,
        create_revision: r.get(2)?,
        value: Bytes::from(r.get::<_, Vec<u8>>(3)?),
    })
}

/// The `[lo, hi)` key bounds of a list: the prefix range, starting after `start_after`.
fn bounds(prefix: &str, start_after: Option<&str>) -> (String, bool, String) {
    let hi = prefix_end(prefix).unwrap_or_else(|| "\u{10FFFF}".repeat(2));
    match start_after {
        Some(s) if s >= prefix => (s.to_string(), true, hi),
        _ => (prefix.to_string(), false, hi),
    }
}

fn list_in(conn: &mut Connection, opts: &ListOptions) -> Result<ListResult> {
    let tx = conn.transaction().map_err(sql_err)?;
    let current = compaction_check(&tx, opts.revision)?;
    let at = if opts.revision == 0 {
        current
    } else {
        opts.revision
    };
    let (lo, exclusive, hi) = bounds(&opts.prefix, opts.start_after.as_deref());
    let fetch = if opts.limit == 0 {
        -1
    } else {
        to_i64(opts.limit) + 1
    };
    let op = if exclusive { ">" } else { ">=" };
    let mut kvs: Vec<KeyValue> = if at == current {
        let sql = format!(
            "SELECT c.key, l.revision, l.create_revision, l.value FROM kv_current c \
             JOIN kv_log l ON l.revision = c.revision \
             WHERE c.key {op} ?1 AND c.key < ?2 ORDER BY c.key LIMIT ?3"
        );
        tx.prepare_cached(&sql)
            .map_err(sql_err)?
            .query_map(params![lo, hi, fetch], row_kv)
            .map_err(sql_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_err)?
    } else {
        // The newest row of each key at or below the revision, unless it is a tombstone
        // (SQLite takes bare columns from the row that holds the MAX).
        let sql = format!(
            "SELECT key, rev, create_revision, value FROM ( \
               SELECT key, MAX(revision) AS rev, deleted, create_revision, value FROM kv_log \
               WHERE key {op} ?1 AND key < ?2 AND revision <= ?3 GROUP BY key) \
             WHERE deleted = 0 ORDER BY key LIMIT ?4"
        );
        tx.prepare_cached(&sql)
            .map_err(sql_err)?
            .query_map(params![lo, hi, at, fetch], row_kv)
            .map_err(sql_err)?
            .collect::<rusqlite::Result<_>>()
            .map_err(sql_err)?
    };
    let more = opts.limit != 0 && kvs.len() > opts.limit;
    kvs.truncate(if opts.limit == 0 {
        kvs.len()
    } else {
        opts.limit
    });
    let remaining = match kvs.last() {
        Some(last) if more => {
            let sql = if at == current {
                "SELECT COUNT(*) FROM kv_current WHERE key > ?1 AND key < ?2 AND ?3 > 0"
            } else {
                "SELECT COUNT(*) FROM ( \
                   SELECT MAX(revision) AS rev, deleted FROM kv_log \
                   WHERE key > ?1 AND key < ?2 AND revision <= ?3 GROUP BY key) \
                 WHERE deleted = 0"
            };
            tx.prepare_cached(sql)
                .and_then(|mut s| s.query_row(params![last.key, hi, at], |r| r.get(0)))
                .map_err(sql_err)?
        }
        _ => 0,
    };
    Ok(ListResult {
        kvs,
        revision: at,
        more,
        remaining,
    })
}

struct SqliteHistory(Arc<ReadPool>);

#[async_trait]
impl History for SqliteHistory {
    async fn events(
        &self,
        prefix: &str,
        end: Option<&str>,
        after: Revision,
        up_to: Revision,
        limit: usize,
    ) -> Result<Vec<Event>> {
        let lo = prefix.to_string();
        let hi = end.map_or_else(|| "\u{10FFFF}".repeat(2), str::to_string);
        self.0
            .with(move |conn| {
                let tx = conn.transaction().map_err(sql_err)?;
                let compacted = read_meta(&tx, "compacted").map_err(sql_err)?;
                if after < compacted {
                    return Err(StoreError::Compacted {
                        requested: after,
                        compacted,
                        current: read_meta(&tx, "revision").map_err(sql_err)?,
                    });
                }
                let mut stmt = tx
                    .prepare_cached(
                        "SELECT l.revision, l.key, l.create_revision, l.deleted, l.value, \
                                p.revision, p.create_revision, p.value \
                         FROM kv_log l LEFT JOIN kv_log p \
                           ON l.prev_revision > 0 AND p.revision = l.prev_revision \
                         WHERE l.revision > ?1 AND l.revision <= ?2 AND l.key >= ?3 AND l.key < ?4 \
                         ORDER BY l.revision LIMIT ?5",
                    )
                    .map_err(sql_err)?;
                let rows = stmt
                    .query_map(params![after, up_to, lo, hi, to_i64(limit)], |r| {
                        let key: String = r.get(1)?;
                        let prev = match r.get::<_, Option<Revision>>(5)? {
                            Some(prev_rev) => Some(KeyValue {
                                key: key.clone(),
                                mod_revision: prev_rev,
                                create_revision: r.get(6)?,
                                value: Bytes::from(r.get::<_, Vec<u8>>(7)?),
                            }),
                            None => None,
                        };
                        let revision: Revision = r.get(0)?;
                        let deleted: bool = r.get(3)?;
                        Ok((
                            revision,
                            key,
                            r.get::<_, Revision>(2)?,
                            deleted,
                            r.get::<_, Vec<u8>>(4)?,
                            prev,
                        ))
                    })
                    .map_err(sql_err)?;
                let mut out = Vec::new();
                for row in rows {
                    let (revision, key, create_revision, deleted, value, prev) =
                        row.map_err(sql_err)?;
                    if deleted {
                        let prev = prev.ok_or_else(|| {
                            StoreError::internal(format!(
                                "tombstone at revision {revision} lost its previous value"
                            ))
                        })?;
                        out.push(Event::Delete { revision, prev });
                    } else {
                        out.push(Event::Put {
                            kv: KeyValue {
                                key,
                                value: Bytes::from(value),
                                create_revision,
                                mod_revision: revision,
                            },
                            prev,
                        });
                    }
                }
                Ok(out)
            })
            .await
    }
}

#[async_trait]
impl Backend for SqliteBackend {
    fn name(&self) -> &'static str {
        "sqlite"
    }

    async fn current_revision(&self) -> Result<Revision> {
        Ok(self.hub.committed())
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        let key = key.to_string();
        let hub = Arc::clone(&self.hub);
        self.readers
            .with(move |conn| {
                // One snapshot for the row and its value (two statements).
                let tx = conn.transaction().map_err(sql_err)?;
                live(&tx, &hub, &key)
                    .map(|l| l.map(|l| l.kv))
                    .map_err(sql_err)
            })
            .await
    }

    async fn list(&self, opts: ListOptions) -> Result<ListResult> {
        validate_prefix(&opts.prefix)?;
        self.readers.with(move |conn| list_in(conn, &opts)).await
    }

    async fn count(&self, prefix: &str) -> Result<(i64, Revision)> {
        validate_prefix(prefix)?;
        let (lo, _, hi) = bounds(prefix, None);
        self.readers
            .with(move |conn| {
                let tx = conn.transaction().map_err(sql_err)?;
                let current = read_meta(&tx, "revision").map_err(sql_err)?;
                let n: i64 = tx
                    .prepare_cached("SELECT COUNT(*) FROM kv_current WHERE key >= ?1 AND key < ?2")
                    .and_then(|mut s| s.query_row(params![lo, hi], |r| r.get(0)))
                    .map_err(sql_err)?;
                Ok((n, current))
            })
            .await
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        validate_key(key)?;
        check_value(key, &value)?;
        let op = Op::Create {
            key: key.to_string(),
            value,
            expires_at: deadline(&*self.clock, ttl),
        };
        match self.submit(op).await? {
            Done::Kv(kv) => Ok(kv),
            _ => Err(StoreError::internal("unexpected reply to create")),
        }
    }

    async fn update(
        &self,
        key: &str,
        value: Bytes,
        expected: Revision,
        ttl: Option<Duration>,
    ) -> Result<KeyValue> {
        validate_key(key)?;
        check_value(key, &value)?;
        let op = Op::Update {
            key: key.to_string(),
            value,
            expected,
            expires_at: deadline(&*self.clock, ttl),
        };
        match self.submit(op).await? {
            Done::Kv(kv) => Ok(kv),
            _ => Err(StoreError::internal("unexpected reply to update")),
        }
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        validate_key(key)?;
        let op = Op::Delete {
            key: key.to_string(),
            expected,
        };
        match self.submit(op).await? {
            Done::Deleted(d) => Ok(d),
            _ => Err(StoreError::internal("unexpected reply to delete")),
        }
    }

    async fn watch(
        &self,
        prefix: &str,
        after: Revision,
        opts: WatchOptions,
    ) -> Result<WatchStream> {
        let compacted = self.compacted_revision().await?;
        let history = Arc::new(SqliteHistory(Arc::clone(&self.readers)));
        self.hub.watch(history, prefix, after, compacted, opts)
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        self.submit(Op::Compact { revision }).await.map(|_| ())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        self.readers
            .with(|conn| read_meta(conn, "compacted").map_err(sql_err))
            .await
    }

    async fn request_progress(&self) -> Result<()> {
        self.hub.request_progress();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Only a small batch in a stream of writes waits for company: a write after a quiet
    /// spell, a full enough batch, or a zero delay commits at once.
    #[test]
    fn a_small_batch_in_a_stream_waits_for_more() {
        let ms = Duration::from_millis;
        assert!(gather(ms(2), 1, 512, Some(ms(1))));
        assert!(gather(ms(2), GATHER_BELOW - 1, 512, Some(ms(15))));
        assert!(!gather(ms(2), 1, 512, None), "the first write");
        assert!(!gather(ms(2), 1, 512, Some(ms(16))), "after a quiet spell");
        assert!(
            !gather(ms(2), GATHER_BELOW, 512, Some(ms(1))),
            "enough to commit"
        );
        assert!(!gather(ms(2), 1, 1, Some(ms(1))), "a full batch");
        assert!(!gather(Duration::ZERO, 1, 512, Some(ms(1))), "no delay");
    }
}
