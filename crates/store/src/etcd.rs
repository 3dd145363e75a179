//! The HA backend: a real etcd v3 cluster over gRPC.
//!
//! Compare-and-swap is an etcd transaction on `mod_revision`; watches ask for `prev_kv`;
//! compaction is etcd's own, and the revision it was last compacted at is recorded under
//! `compact_rev_key` as upstream's API server does (a key outside every valid prefix, as
//! all rkube keys start with `/`). TTLs are etcd leases, reused for keys written close
//! together as upstream's lease manager does, so Events do not cost one lease each.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use bytes::Bytes;
use etcd_client::{
    Certificate, Client, Compare, CompareOp, ConnectOptions, EventType, GetOptions, Identity,
    KvClient, PutOptions, TlsOptions, Txn, TxnOp, TxnOpResponse,
};
use tokio::sync::mpsc;

use crate::{
    Backend, Deleted, Event, KeyValue, ListOptions, ListResult, Result, Revision, StoreError,
    WatchOptions, WatchStream, check_value, prefix_end, validate_key, validate_prefix,
};

const COMPACT_REV_KEY: &str = "compact_rev_key";
const MAX_RESPONSE_BYTES: usize = 2 * 1024 * 1024 * 1024 - 1;
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach etcd.
#[derive(Clone, Debug, Default)]
pub struct EtcdOptions {
    /// `http(s)://host:port` URLs of the members.
    pub endpoints: Vec<String>,
    /// CA bundle to verify the members' certificates (for `https` endpoints).
    pub ca_file: Option<PathBuf>,
    /// Client certificate and key, when etcd requires client authentication.
    pub cert_file: Option<PathBuf>,
    pub key_file: Option<PathBuf>,
}

impl EtcdOptions {
    /// Parses a comma-separated endpoint list as given to `--datastore-endpoint`.
    pub fn from_endpoints(list: &str) -> Result<Self> {
        let endpoints: Vec<String> = list
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect();
        if endpoints.is_empty() {
            return Err(StoreError::Unavailable("no etcd endpoint given".into()));
        }
        for e in &endpoints {
            if !(e.starts_with("http://") || e.starts_with("https://")) {
                return Err(StoreError::Unavailable(format!(
                    "etcd endpoint {e:?} must be an http:// or https:// URL"
                )));
            }
        }
        Ok(EtcdOptions {
            endpoints,
            ..Default::default()
        })
    }
}

fn etcd_err(e: etcd_client::Error) -> StoreError {
    use etcd_client::Error as E;
    match e {
        E::GRpcStatus(s) => {
            let msg = s.message().to_string();
            match s.code() {
                tonic::Code::Unavailable
                | tonic::Code::DeadlineExceeded
                | tonic::Code::Cancelled
                | tonic::Code::Aborted
                | tonic::Code::ResourceExhausted => StoreError::Unavailable(format!("etcd: {msg}")),
                _ if msg.contains("request is too large") => {
                    StoreError::Internal(format!("etcd refused an oversize request: {msg}"))
                }
                _ => StoreError::Internal(format!("etcd: {msg}")),
            }
        }
        E::TransportError(t) => StoreError::Unavailable(format!("etcd transport: {t}")),
        E::IoError(io) => StoreError::Unavailable(format!("etcd io: {io}")),
        E::WatchError(w) => StoreError::Unavailable(format!("etcd watch: {w}")),
        other => StoreError::Internal(format!("etcd: {other}")),
    }
}

fn is_compacted(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message().contains("compacted"))
}

fn is_future(e: &etcd_client::Error) -> bool {
    matches!(e, etcd_client::Error::GRpcStatus(s) if s.message().contains("future revision"))
}

async fn timed<T>(
    fut: impl std::future::Future<Output = std::result::Result<T, etcd_client::Error>>,
) -> std::result::Result<T, etcd_client::Error> {
    match tokio::time::timeout(REQUEST_TIMEOUT, fut).await {
        Ok(r) => r,
        Err(_) => Err(etcd_client::Error::GRpcStatus(
            tonic::Status::deadline_exceeded("etcd request timed out"),
        )),
    }
}

fn to_kv(kv: &etcd_client::KeyValue) -> Result<KeyValue> {
    let key = std::str::from_utf8(kv.key())
        .map_err(|_| StoreError::internal("etcd returned a key that is not UTF-8"))?;
    Ok(KeyValue {
        key: key.to_string(),
        value: Bytes::copy_from_slice(kv.value()),
        create_revision: kv.create_revision(),
        mod_revision: kv.mod_revision(),
    })
}

fn header_revision(h: Option<&etcd_client::ResponseHeader>) -> Revision {
    h.map_or(0, |h| h.revision())
}

/// A watch consumer that falls this far behind is ended with an error (it re-watches from
/// its last revision), as upstream ends slow watchers.
const MAX_WATCH_BACKLOG_BYTES: usize = 64 * 1024 * 1024;

/// Converts one etcd event.
fn convert_event(ev: &etcd_client::Event) -> Result<Event> {
    let kv = ev
        .kv()
        .ok_or_else(|| StoreError::internal("etcd event without kv"))?;
    let prev = ev.prev_kv().map(to_kv).transpose()?;
    match ev.event_type() {
        EventType::Put => Ok(Event::Put {
            kv: to_kv(kv)?,
            prev,
        }),
        EventType::Delete => Ok(Event::Delete {
            revision: kv.mod_revision(),
            prev: prev.ok_or_else(|| {
                StoreError::internal("etcd delete event without its previous value")
            })?,
        }),
    }
}

fn event_size(ev: &Result<Event>) -> usize {
    match ev {
        Ok(Event::Put { kv, prev }) => {
            kv.key.len() + kv.value.len() + prev.as_ref().map_or(0, |p| p.value.len()) + 64
        }
        Ok(Event::Delete { prev, .. }) => prev.key.len() + prev.value.len() + 64,
        _ => 64,
    }
}

/// Events received from etcd and not yet taken by the consumer.
#[derive(Default)]
struct Backlog {
    events: VecDeque<Result<Event>>,
    bytes: usize,
}

impl Backlog {
    fn push(&mut self, ev: Result<Event>) {
        self.bytes += event_size(&ev);
        self.events.push_back(ev);
    }

    fn pop(&mut self) -> Option<Result<Event>> {
        let ev = self.events.pop_front()?;
        self.bytes -= event_size(&ev);
        Some(ev)
    }
}

/// Moves a watch's responses from etcd to its consumer.
///
/// The gRPC stream is always drained into a local queue, whatever the consumer's pace: all
/// watches share one HTTP/2 connection, and h2 tears the whole connection down when a
/// stream leaves many small DATA frames unread. The queue is bounded by
/// `MAX_WATCH_BACKLOG_BYTES`; past it the watch ends with `Unavailable`.
async fn pump_watch(
    mut stream: etcd_client::WatchStream,
    tx: mpsc::Sender<Result<Event>>,
    after: Revision,
    opts: WatchOptions,
    mut progress_requests: tokio::sync::watch::Receiver<u64>,
) {
    progress_requests.mark_unchanged();
    let mut queue = Backlog::default();
    let mut ended = false;
    let mut last_sent = tokio::time::Instant::now();
    let mut last_rev = after;
    loop {
        let progress_at = opts.progress_interval.map(|d| last_sent + d);
        tokio::select! {
            permit = tx.reserve(), if !queue.events.is_empty() => {
                let Ok(permit) = permit else { return };
                if let Some(ev) = queue.pop() {
                    let failed = ev.is_err();
                    permit.send(ev);
                    last_sent = tokio::time::Instant::now();
                    if failed {
                        return;
                    }
                }
            }
            _ = tx.closed() => return,
            _ = async {
                match progress_at {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            }, if !ended && queue.events.is_empty() => {
                if let Err(e) = stream.request_progress().await {
                    queue.push(Err(etcd_err(e)));
                    ended = true;
                }
                last_sent = tokio::time::Instant::now();
            }
            changed = progress_requests.changed(), if !ended => {
                if changed.is_ok()
                    && let Err(e) = stream.request_progress().await
                {
                    queue.push(Err(etcd_err(e)));
                    ended = true;
                }
            }
            msg = stream.message(), if !ended => {
                let resp = match msg {
                    Ok(Some(r)) => r,
                    Ok(None) => {
                        queue.push(Err(StoreError::unavailable("etcd closed the watch")));
                        ended = true;
                        continue;
                    }
                    Err(e) => {
                        queue.push(Err(etcd_err(e)));
                        ended = true;
                        continue;
                    }
                };
                if resp.compact_revision() > 0 {
                    queue.push(Err(StoreError::Compacted {
                        requested: after,
                        compacted: resp.compact_revision(),
                        current: header_revision(resp.header()),
                    }));
                    ended = true;
                } else if resp.canceled() {
                    queue.push(Err(StoreError::Unavailable(format!(
                        "etcd canceled the watch: {}",
                        resp.cancel_reason()
                    ))));
                    ended = true;
                } else if resp.created() {
                    if last_rev == 0 {
                        last_rev = header_revision(resp.header());
                    }
                } else if resp.events().is_empty() {
                    // A progress notification: everything up to the header's revision has
                    // been sent on this stream.
                    let revision = header_revision(resp.header()).max(last_rev);
                    queue.push(Ok(Event::Progress { revision }));
                } else {
                    for ev in resp.events() {
                        let converted = convert_event(ev);
                        match &converted {
                            Ok(e) => last_rev = e.revision(),
                            Err(_) => ended = true,
                        }
                        queue.push(converted);
                        if ended {
                            break;
                        }
                    }
                }
                if !ended && queue.bytes > MAX_WATCH_BACKLOG_BYTES {
                    queue.push(Err(StoreError::Unavailable(format!(
                        "watch consumer fell {} bytes behind; re-watch from revision {last_rev}",
                        queue.bytes
                    ))));
                    ended = true;
                }
            }
        }
    }
}

/// A lease shared by keys with the same TTL written within a short window.
struct Lease {
    id: i64,
    granted: Instant,
    reuse_for: Duration,
}

/// The etcd backend.
pub struct EtcdBackend {
    client: Client,
    kv: KvClient,
    /// Bumped to make every watch ask etcd for a progress report.
    progress: tokio::sync::watch::Sender<u64>,
    leases: Mutex<HashMap<u64, Lease>>,
}

impl EtcdBackend {
    /// Connects and checks that the cluster answers.
    pub async fn connect(opts: EtcdOptions) -> Result<Self> {
        let mut connect = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(5))
            .with_keep_alive(Duration::from_secs(30), Duration::from_secs(10));
        let tls_wanted = opts.endpoints.iter().any(|e| e.starts_with("https://"))
            || opts.ca_file.is_some()
            || opts.cert_file.is_some();
        if tls_wanted {
            let mut tls = TlsOptions::new();
            if let Some(ca) = &opts.ca_file {
                let pem = std::fs::read(ca).map_err(|e| {
                    StoreError::Unavailable(format!("cannot read {}: {e}", ca.display()))
                })?;
                tls = tls.ca_certificate(Certificate::from_pem(pem));
            }
            match (&opts.cert_file, &opts.key_file) {
                (Some(cert), Some(key)) => {
                    let read = |p: &PathBuf| {
                        std::fs::read(p).map_err(|e| {
                            StoreError::Unavailable(format!("cannot read {}: {e}", p.display()))
                        })
                    };
                    tls = tls.identity(Identity::from_pem(read(cert)?, read(key)?));
                }
                (None, None) => {}
                _ => {
                    return Err(StoreError::Unavailable(
                        "etcd client certificate and key must be given together".into(),
                    ));
                }
            }
            connect = connect.with_tls(tls);
        }
        let client = Client::connect(&opts.endpoints, Some(connect))
            .await
            .map_err(|e| {
                StoreError::Unavailable(format!(
                    "cannot connect to etcd at {}: {e}",
                    opts.endpoints.join(",")
                ))
            })?;
        // Lists of many objects exceed gRPC's default 4 MiB; upstream lifts the limit too.
        let kv = client
            .kv_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES);
        let backend = EtcdBackend {
            client,
            kv,
            progress: tokio::sync::watch::channel(0).0,
            leases: Mutex::new(HashMap::new()),
        };
        backend.current_revision().await.map_err(|e| {
            StoreError::Unavailable(format!(
                "etcd at {} does not answer: {e}",
                opts.endpoints.join(",")
            ))
        })?;
        Ok(backend)
    }

    /// A lease for `ttl`, reused for `min(5% of ttl, 60 s)` after it is granted; it lives
    /// `ttl` plus that window so every key attached to it lives at least `ttl`.
    async fn lease_for(&self, ttl: Duration) -> Result<i64> {
        let secs = ttl.as_secs().max(1);
        let reuse_for = Duration::from_secs((secs / 20).min(60));
        {
            let leases = match self.leases.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            if let Some(l) = leases.get(&secs)
                && l.granted.elapsed() < l.reuse_for
            {
                return Ok(l.id);
            }
        }
        let grant_ttl = i64::try_from(secs + reuse_for.as_secs()).unwrap_or(i64::MAX);
        let resp = timed(self.client.lease_client().grant(grant_ttl, None))
            .await
            .map_err(etcd_err)?;
        let id = resp.id();
        let mut leases = match self.leases.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        leases.insert(
            secs,
            Lease {
                id,
                granted: Instant::now(),
                reuse_for,
            },
        );
        Ok(id)
    }

    fn kv(&self) -> KvClient {
        self.kv.clone()
    }

    async fn put_options(&self, ttl: Option<Duration>) -> Result<PutOptions> {
        let mut opts = PutOptions::new().with_prev_key();
        if let Some(ttl) = ttl {
            opts = opts.with_lease(self.lease_for(ttl).await?);
        }
        Ok(opts)
    }

    async fn compacted_error(&self, requested: Revision) -> StoreError {
        StoreError::Compacted {
            requested,
            compacted: self.compacted_revision().await.unwrap_or(0),
            current: self.current_revision().await.unwrap_or(0),
        }
    }

    async fn future_error(&self, requested: Revision) -> StoreError {
        StoreError::FutureRevision {
            requested,
            current: self.current_revision().await.unwrap_or(0),
        }
    }

    /// The value of the key from the `or_else` branch of a failed transaction.
    fn failed_get(resp: &etcd_client::TxnResponse) -> Result<Option<KeyValue>> {
        for op in resp.op_responses() {
            if let TxnOpResponse::Get(g) = op {
                return g.kvs().first().map(to_kv).transpose();
            }
        }
        Ok(None)
    }
}

#[async_trait]
impl Backend for EtcdBackend {
    fn name(&self) -> &'static str {
        "etcd"
    }

    async fn current_revision(&self) -> Result<Revision> {
        let resp = timed(
            self.client
                .kv_client()
                .get(COMPACT_REV_KEY, Some(GetOptions::new().with_count_only())),
        )
        .await
        .map_err(etcd_err)?;
        Ok(header_revision(resp.header()))
    }

    async fn get(&self, key: &str) -> Result<Option<KeyValue>> {
        validate_key(key)?;
        let resp = timed(self.kv().get(key, None)).await.map_err(etcd_err)?;
        resp.kvs().first().map(to_kv).transpose()
    }

    async fn list(&self, opts: ListOptions) -> Result<ListResult> {
        validate_prefix(&opts.prefix)?;
        let start = match &opts.start_after {
            Some(s) if s.as_str() >= opts.prefix.as_str() => format!("{s}\0"),
            _ => opts.prefix.clone(),
        };
        let mut get = GetOptions::new();
        if let Some(end) = prefix_end(&opts.prefix) {
            get = get.with_range(end);
        }
        if opts.limit > 0 {
            get = get.with_limit(i64::try_from(opts.limit).unwrap_or(i64::MAX));
        }
        if opts.revision > 0 {
            get = get.with_revision(opts.revision);
        }
        let resp = match timed(self.kv().get(start, Some(get))).await {
            Ok(r) => r,
            Err(e) if is_compacted(&e) => return Err(self.compacted_error(opts.revision).await),
            Err(e) if is_future(&e) => return Err(self.future_error(opts.revision).await),
            Err(e) => return Err(etcd_err(e)),
        };
        let kvs = resp.kvs().iter().map(to_kv).collect::<Result<Vec<_>>>()?;
        let remaining = if resp.more() {
            (resp.count() - i64::try_from(kvs.len()).unwrap_or(i64::MAX)).max(0)
        } else {
            0
        };
        Ok(ListResult {
            kvs,
            revision: if opts.revision > 0 {
                opts.revision
            } else {
                header_revision(resp.header())
            },
            more: resp.more(),
            remaining,
        })
    }

    async fn count(&self, prefix: &str) -> Result<(i64, Revision)> {
        validate_prefix(prefix)?;
        let mut get = GetOptions::new().with_count_only();
        if let Some(end) = prefix_end(prefix) {
            get = get.with_range(end);
        }
        let resp = timed(self.kv().get(prefix, Some(get)))
            .await
            .map_err(etcd_err)?;
        Ok((resp.count(), header_revision(resp.header())))
    }

    async fn create(&self, key: &str, value: Bytes, ttl: Option<Duration>) -> Result<KeyValue> {
        validate_key(key)?;
        check_value(key, &value)?;
        let put = self.put_options(ttl).await?;
        let txn = Txn::new()
            .when([Compare::create_revision(key, CompareOp::Equal, 0)])
            .and_then([TxnOp::put(key, value.to_vec(), Some(put))]);
        let resp = timed(self.kv().txn(txn)).await.map_err(etcd_err)?;
        if !resp.succeeded() {
            return Err(StoreError::AlreadyExists {
                key: key.to_string(),
            });
        }
        let rev = header_revision(resp.header());
        Ok(KeyValue {
            key: key.to_string(),
            value,
            create_revision: rev,
            mod_revision: rev,
        })
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
        let put = self.put_options(ttl).await?;
        let txn = Txn::new()
            .when([
                Compare::create_revision(key, CompareOp::Greater, 0),
                Compare::mod_revision(key, CompareOp::Equal, expected),
            ])
            .and_then([TxnOp::put(key, value.to_vec(), Some(put))])
            .or_else([TxnOp::get(key, None)]);
        let resp = timed(self.kv().txn(txn)).await.map_err(etcd_err)?;
        if !resp.succeeded() {
            return match Self::failed_get(&resp)? {
                None => Err(StoreError::NotFound {
                    key: key.to_string(),
                }),
                Some(current) => Err(StoreError::Conflict {
                    key: key.to_string(),
                    expected,
                    current: Some(Box::new(current)),
                }),
            };
        }
        let rev = header_revision(resp.header());
        let create_revision = resp
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Put(p) => p.prev_key().map(|kv| kv.create_revision()),
                _ => None,
            })
            .unwrap_or(rev);
        Ok(KeyValue {
            key: key.to_string(),
            value,
            create_revision,
            mod_revision: rev,
        })
    }

    async fn delete(&self, key: &str, expected: Option<Revision>) -> Result<Deleted> {
        validate_key(key)?;
        let mut when = vec![Compare::create_revision(key, CompareOp::Greater, 0)];
        if let Some(expected) = expected {
            when.push(Compare::mod_revision(key, CompareOp::Equal, expected));
        }
        let txn = Txn::new()
            .when(when)
            .and_then([TxnOp::delete(
                key,
                Some(etcd_client::DeleteOptions::new().with_prev_key()),
            )])
            .or_else([TxnOp::get(key, None)]);
        let resp = timed(self.kv().txn(txn)).await.map_err(etcd_err)?;
        if !resp.succeeded() {
            return match Self::failed_get(&resp)? {
                None => Err(StoreError::NotFound {
                    key: key.to_string(),
                }),
                Some(current) => Err(StoreError::Conflict {
                    key: key.to_string(),
                    expected: expected.unwrap_or(0),
                    current: Some(Box::new(current)),
                }),
            };
        }
        let revision = header_revision(resp.header());
        let prev = resp
            .op_responses()
            .into_iter()
            .find_map(|op| match op {
                TxnOpResponse::Delete(d) => d.prev_kvs().first().map(to_kv),
                _ => None,
            })
            .transpose()?
            .ok_or_else(|| StoreError::NotFound {
                key: key.to_string(),
            })?;
        Ok(Deleted { prev, revision })
    }

    async fn watch(
        &self,
        prefix: &str,
        after: Revision,
        opts: WatchOptions,
    ) -> Result<WatchStream> {
        validate_prefix(prefix)?;
        // "From now" is pinned to the revision current when the call is made: a watch the
        // server registers later (or a lagging member serves) still starts there, so a
        // write acknowledged after this call returns is never missed.
        let after = if after == 0 {
            self.current_revision().await?
        } else {
            after
        };
        if after > 0 {
            let compacted = self.compacted_revision().await?;
            if after < compacted {
                return Err(self.compacted_error(after).await);
            }
        }
        let mut wopts = etcd_client::WatchOptions::new().with_prev_key();
        if let Some(end) = prefix_end(prefix) {
            wopts = wopts.with_range(end);
        }
        if after > 0 {
            wopts = wopts.with_start_revision(after + 1);
        }
        let stream = self
            .client
            .watch_client()
            .max_decoding_message_size(MAX_RESPONSE_BYTES)
            .watch(prefix, Some(wopts))
            .await
            .map_err(etcd_err)?;
        let (tx, rx) = mpsc::channel::<Result<Event>>(256);
        tokio::spawn(pump_watch(
            stream,
            tx,
            after,
            opts,
            self.progress.subscribe(),
        ));
        Ok(Box::pin(tokio_stream::wrappers::ReceiverStream::new(rx)))
    }

    async fn compact(&self, revision: Revision) -> Result<()> {
        let compacted = self.compacted_revision().await?;
        if revision <= compacted {
            return Err(self.compacted_error(revision).await);
        }
        match timed(self.kv().compact(
            revision,
            Some(etcd_client::CompactionOptions::new().with_physical()),
        ))
        .await
        {
            Ok(_) => {}
            Err(e) if is_compacted(&e) => return Err(self.compacted_error(revision).await),
            Err(e) if is_future(&e) => return Err(self.future_error(revision).await),
            Err(e) => return Err(etcd_err(e)),
        }
        // Record it, never moving backwards when several servers compact.
        let txn = Txn::new()
            .when([Compare::create_revision(
                COMPACT_REV_KEY,
                CompareOp::Equal,
                0,
            )])
            .and_then([TxnOp::put(COMPACT_REV_KEY, revision.to_string(), None)])
            .or_else([TxnOp::get(COMPACT_REV_KEY, None)]);
        let resp = timed(self.kv().txn(txn)).await.map_err(etcd_err)?;
        if !resp.succeeded() {
            let recorded = Self::failed_get(&resp)?;
            let old: Revision = recorded
                .as_ref()
                .and_then(|kv| std::str::from_utf8(&kv.value).ok()?.parse().ok())
                .unwrap_or(0);
            if old < revision
                && let Some(kv) = recorded
            {
                let txn = Txn::new()
                    .when([Compare::mod_revision(
                        COMPACT_REV_KEY,
                        CompareOp::Equal,
                        kv.mod_revision,
                    )])
                    .and_then([TxnOp::put(COMPACT_REV_KEY, revision.to_string(), None)]);
                timed(self.kv().txn(txn)).await.map_err(etcd_err)?;
            }
        }
        Ok(())
    }

    async fn compacted_revision(&self) -> Result<Revision> {
        let resp = timed(self.kv().get(COMPACT_REV_KEY, None))
            .await
            .map_err(etcd_err)?;
        Ok(resp
            .kvs()
            .first()
            .and_then(|kv| std::str::from_utf8(kv.value()).ok()?.parse().ok())
            .unwrap_or(0))
    }

    async fn request_progress(&self) -> Result<()> {
        self.progress.send_modify(|n| *n = n.wrapping_add(1));
        Ok(())
    }
}
