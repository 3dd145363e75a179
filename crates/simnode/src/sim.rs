//! The simulation loop: one task per node (register or adopt, then renew the Lease and
//! refresh the conditions, spread over their periods), a node watch for the pod CIDRs, a
//! pod watch over every bound pod, and a deduplicating work queue whose workers write the
//! pods' running status and final deletes. All writes share one semaphore.
//!
//! Per pod only its key, uid, node, state and IP are kept (plus, while it waits for its
//! status, the few strings the status is made from).

use std::collections::{HashMap, HashSet};
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::Client;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams, Preconditions};
use kube::runtime::{WatchStreamExt, watcher};
use runtime::leanmeta::LeanPod;
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};
use tokio::sync::Semaphore;
use tokio::time::{Instant, MissedTickBehavior, interval_at};

use crate::objects::{self, LEASE_NAMESPACE};
use crate::pods::{IpPool, PodSummary, running_status};
use crate::{Config, Error, node_index, node_ip, node_name};

/// `namespace/name` of a pod.
type Key = Arc<str>;

/// How long a pod waits before another try when its node has no free IP.
const NO_IP_RETRY: Duration = Duration::from_secs(10);

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Bound, not reported running yet.
    Pending,
    /// The running status was written; the watch has not shown it yet.
    StatusSent,
    Running,
    /// Deleted gracefully: waiting for the final delete.
    Deleting,
    /// Succeeded or Failed (not by us): nothing to do.
    Done,
}

struct PodEntry {
    uid: Box<str>,
    node: u32,
    phase: Phase,
    /// The pod IP taken from the node's pool (not for host-network pods).
    ip: Option<Ipv4Addr>,
    /// What the running status is made from, while the pod waits for it.
    pending: Option<Box<PodSummary>>,
}

#[derive(Default)]
struct State {
    pods: HashMap<Key, PodEntry>,
    /// Per node: its pod IPs, once it has a `spec.podCIDR`.
    pools: Vec<Option<IpPool>>,
    /// Per node: IPs of running pods seen before its pool existed.
    unmarked: Vec<Vec<Ipv4Addr>>,
    /// Per node: pods waiting for its pool.
    waiting: Vec<Vec<Key>>,
    /// The keys listed since the pod watch (re)started.
    relist: Option<HashSet<Key>>,
}

impl State {
    fn release(&mut self, node: u32, ip: Option<Ipv4Addr>) {
        let Some(ip) = ip else { return };
        let i = node as usize;
        if let Some(Some(pool)) = self.pools.get_mut(i) {
            pool.release(ip);
        }
        if let Some(u) = self.unmarked.get_mut(i) {
            u.retain(|x| *x != ip);
        }
    }

    fn mark(&mut self, node: u32, ip: Ipv4Addr) {
        let i = node as usize;
        match self.pools.get_mut(i) {
            Some(Some(pool)) => {
                pool.mark(ip);
            }
            Some(None) => {
                if let Some(u) = self.unmarked.get_mut(i) {
                    u.push(ip);
                }
            }
            None => {}
        }
    }
}

struct Sim {
    cfg: Config,
    client: Client,
    writes: Semaphore,
    state: Mutex<State>,
    queue: WorkQueue<Key>,
    registered: AtomicU32,
}

impl Sim {
    fn state(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    async fn permit(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        self.writes.acquire().await.ok()
    }
}

fn now() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Runs `cfg.count` simulated nodes through `client` until the future is dropped (it never
/// completes unless the configuration is invalid). Dropping it stops every task it
/// started; nodes are left as they are.
pub async fn run(client: Client, cfg: Config) -> Result<(), Error> {
    cfg.validate()?;
    let count = cfg.count as usize;
    let workers = cfg.concurrency.max(1);
    let sim = Arc::new(Sim {
        writes: Semaphore::new(workers),
        client,
        state: Mutex::new(State {
            pools: vec![None; count],
            unmarked: vec![Vec::new(); count],
            waiting: vec![Vec::new(); count],
            ..State::default()
        }),
        queue: WorkQueue::new(),
        registered: AtomicU32::new(0),
        cfg,
    });
    tracing::info!(
        nodes = sim.cfg.count,
        prefix = %sim.cfg.prefix,
        "starting simulated nodes"
    );
    let mut tasks = Tasks(Vec::with_capacity(count + workers + 2));
    tasks.0.push(tokio::spawn(watch_nodes(Arc::clone(&sim))));
    tasks.0.push(tokio::spawn(watch_pods(Arc::clone(&sim))));
    for i in 0..sim.cfg.count {
        tasks.0.push(tokio::spawn(node_loop(Arc::clone(&sim), i)));
    }
    for _ in 0..workers {
        let s = Arc::clone(&sim);
        tasks.0.push(tokio::spawn(async move {
            while let Some(key) = s.queue.get().await {
                match sync_pod(&s, &key).await {
                    Ok(()) => s.queue.forget(&key),
                    Err(e) => {
                        tracing::info!(pod = %key, error = %e, "pod write failed; retrying");
                        s.queue.add_rate_limited(key.clone());
                    }
                }
                s.queue.done(&key);
            }
        }));
    }
    futures::future::pending::<()>().await;
    drop(tasks);
    Ok(())
}

/// The simulation's tasks, stopped when it is dropped (a simulation outliving its caller
/// would go on writing to a server that may be gone).
struct Tasks(Vec<tokio::task::JoinHandle<()>>);

impl Drop for Tasks {
    fn drop(&mut self) {
        for t in &self.0 {
            t.abort();
        }
    }
}

// ---------------------------------------------------------------------------------------
// Nodes and leases.

/// Back-off between failed attempts of one node's registration.
fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(500u64.saturating_mul(1 << attempt.min(6))).min(Duration::from_secs(30))
}

/// Creates node `i`, or adopts it when it exists (its status is overwritten, the Ready
/// transition time kept when it was already Ready). Returns its uid and Ready-since time.
async fn register(sim: &Sim, i: u32) -> (String, String) {
    let name = node_name(&sim.cfg.prefix, i);
    let api: Api<Node> = Api::all(sim.client.clone());
    let mut attempt = 0;
    loop {
        let stamp = objects::time(now());
        let result = async {
            let _permit = sim.permit().await;
            let node: Node = serde_json::from_value(objects::node_object(&sim.cfg, i, &stamp))
                .map_err(|e| e.to_string())?;
            match api.create(&PostParams::default(), &node).await {
                Ok(n) => Ok((n.metadata.uid.unwrap_or_default(), stamp.clone())),
                Err(e) if api_code(&e) == Some(409) => {
                    let existing = api.get(&name).await.map_err(|e| e.to_string())?;
                    let value = serde_json::to_value(&existing).map_err(|e| e.to_string())?;
                    let since = objects::ready_since(&value).unwrap_or_else(|| stamp.clone());
                    let patch =
                        json!({"status": objects::node_status(&sim.cfg, i, &stamp, &since)});
                    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
                        .await
                        .map_err(|e| e.to_string())?;
                    tracing::debug!(node = %name, "adopted an existing node");
                    Ok((existing.metadata.uid.unwrap_or_default(), since))
                }
                Err(e) => Err(e.to_string()),
            }
        }
        .await;
        match result {
            Ok(r) => return r,
            Err(e) => {
                if attempt == 0 {
                    tracing::warn!(node = %name, error = %e, "cannot register the node; retrying");
                } else {
                    tracing::debug!(node = %name, error = %e, attempt, "cannot register the node");
                }
                tokio::time::sleep(backoff(attempt)).await;
                attempt += 1;
            }
        }
    }
}

/// Renews node `i`'s lease (a merge patch of its spec), creating it when missing.
async fn renew_lease(sim: &Sim, i: u32, uid: &str) -> Result<(), kube::Error> {
    let name = node_name(&sim.cfg.prefix, i);
    let api: Api<Lease> = Api::namespaced(sim.client.clone(), LEASE_NAMESPACE);
    let renew = objects::micro_time(now());
    let _permit = sim.permit().await;
    let patch = objects::renew_patch(&sim.cfg, i, &renew);
    match api
        .patch(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if api_code(&e) == Some(404) => {
            let lease: Lease =
                serde_json::from_value(objects::lease_object(&sim.cfg, i, Some(uid), &renew))
                    .map_err(kube::Error::SerdeError)?;
            match api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(()),
                // Created meanwhile: the next renewal patches it.
                Err(e) if api_code(&e) == Some(409) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Refreshes node `i`'s conditions.
async fn heartbeat(sim: &Sim, i: u32, since: &str) -> Result<(), kube::Error> {
    let name = node_name(&sim.cfg.prefix, i);
    let api: Api<Node> = Api::all(sim.client.clone());
    let patch = objects::heartbeat_patch(&objects::time(now()), since);
    let _permit = sim.permit().await;
    api.patch_status(&name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
        .map(|_| ())
}

/// Logs the first failure of a run of failures, and the recovery.
struct Failures {
    what: &'static str,
    node: u32,
    count: u32,
}

impl Failures {
    fn record(&mut self, result: Result<(), kube::Error>) {
        match result {
            Ok(()) => {
                if self.count > 0 {
                    tracing::info!(
                        node = self.node,
                        what = self.what,
                        failures = self.count,
                        "recovered"
                    );
                }
                self.count = 0;
            }
            Err(e) => {
                if self.count == 0 {
                    tracing::warn!(node = self.node, what = self.what, error = %e, "write failed; retrying next period");
                } else {
                    tracing::debug!(node = self.node, what = self.what, error = %e, "write failed");
                }
                self.count += 1;
            }
        }
    }
}

/// One node's life: register, then renew the lease every quarter of its duration and
/// refresh the conditions every status interval, each node at its own offset within the
/// period so the writes are spread evenly.
async fn node_loop(sim: Arc<Sim>, i: u32) {
    let (uid, since) = register(&sim, i).await;
    let n = sim.registered.fetch_add(1, Ordering::Relaxed) + 1;
    if n == sim.cfg.count {
        tracing::info!(nodes = n, "all simulated nodes registered");
    }
    let mut lease_failures = Failures {
        what: "lease",
        node: i,
        count: 0,
    };
    lease_failures.record(renew_lease(&sim, i, &uid).await);
    let mut status_failures = Failures {
        what: "status",
        node: i,
        count: 0,
    };
    let fraction = f64::from(i + 1) / f64::from(sim.cfg.count);
    let renew_period = sim.cfg.renew_interval();
    let status_period = sim.cfg.status_interval;
    let start = Instant::now();
    let mut renew = interval_at(start + renew_period.mul_f64(fraction), renew_period);
    renew.set_missed_tick_behavior(MissedTickBehavior::Delay);
    let mut status = interval_at(start + status_period.mul_f64(fraction), status_period);
    status.set_missed_tick_behavior(MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = renew.tick() => lease_failures.record(renew_lease(&sim, i, &uid).await),
            _ = status.tick() => status_failures.record(heartbeat(&sim, i, &since).await),
        }
    }
}

/// The first pod CIDR of a node.
fn pod_cidr(node: &Node) -> Option<&str> {
    let spec = node.spec.as_ref()?;
    spec.pod_cidrs
        .as_ref()
        .and_then(|c| c.first())
        .or(spec.pod_cidr.as_ref())
        .map(String::as_str)
        .filter(|c| !c.is_empty())
}

/// Follows the nodes for their pod CIDRs: a node's pool is made when its CIDR appears (or
/// remade when it changes, a re-created node), and the pods waiting for it are queued.
async fn watch_nodes(sim: Arc<Sim>) {
    let api: Api<Node> = Api::all(sim.client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        let node = match event {
            Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => n,
            Ok(_) => continue,
            Err(e) => {
                tracing::debug!(error = %e, "node watch error; backing off");
                continue;
            }
        };
        let name = node.metadata.name.as_deref().unwrap_or_default();
        let Some(i) = node_index(&sim.cfg.prefix, sim.cfg.count, name) else {
            continue;
        };
        let Some(cidr) = pod_cidr(&node) else {
            continue;
        };
        let mut st = sim.state();
        let idx = i as usize;
        if st.pools[idx].as_ref().map(IpPool::cidr) == Some(cidr) {
            continue;
        }
        match IpPool::new(cidr) {
            Ok(mut pool) => {
                for ip in std::mem::take(&mut st.unmarked[idx]) {
                    pool.mark(ip);
                }
                tracing::debug!(node = name, cidr, "node has a pod CIDR");
                st.pools[idx] = Some(pool);
                for key in std::mem::take(&mut st.waiting[idx]) {
                    sim.queue.add(key);
                }
            }
            Err(e) => tracing::warn!(node = name, error = %e, "node has an invalid pod CIDR"),
        }
    }
}

// ---------------------------------------------------------------------------------------
// Pods.

/// Follows every bound pod; those on our nodes get an entry and are queued when there is
/// something to write.
async fn watch_pods(sim: Arc<Sim>) {
    // Decoded without managedFields, which a kubelet does not read.
    let api: Api<LeanPod> = Api::all(sim.client.clone());
    let config = watcher::Config::default().fields("spec.nodeName!=");
    let stream = watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Init) => sim.state().relist = Some(HashSet::new()),
            Ok(watcher::Event::InitApply(p)) => {
                if let Some(key) = on_pod(&sim, &p)
                    && let Some(seen) = sim.state().relist.as_mut()
                {
                    seen.insert(key);
                }
            }
            Ok(watcher::Event::InitDone) => {
                let mut st = sim.state();
                if let Some(seen) = st.relist.take() {
                    let gone: Vec<Key> = st
                        .pods
                        .keys()
                        .filter(|k| !seen.contains(*k))
                        .cloned()
                        .collect();
                    for key in gone {
                        if let Some(e) = st.pods.remove(&key) {
                            st.release(e.node, e.ip);
                        }
                    }
                }
            }
            Ok(watcher::Event::Apply(p)) => {
                on_pod(&sim, &p);
            }
            Ok(watcher::Event::Delete(p)) => {
                let key = pod_key(&p);
                let uid = p.metadata.uid.as_deref().unwrap_or_default();
                let mut st = sim.state();
                if st.pods.get(&key).is_some_and(|e| &*e.uid == uid)
                    && let Some(e) = st.pods.remove(&key)
                {
                    st.release(e.node, e.ip);
                }
            }
            Err(e) => tracing::debug!(error = %e, "pod watch error; backing off"),
        }
    }
}

fn pod_key(pod: &Pod) -> Key {
    format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or_default(),
        pod.metadata.name.as_deref().unwrap_or_default()
    )
    .into()
}

/// Records what a pod event says about a pod on one of our nodes; its key when it is ours.
fn on_pod(sim: &Sim, pod: &Pod) -> Option<Key> {
    let node_name = pod.spec.as_ref()?.node_name.as_deref()?;
    let node = node_index(&sim.cfg.prefix, sim.cfg.count, node_name)?;
    let key = pod_key(pod);
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let status = pod.status.as_ref();
    let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
    let host_network = pod
        .spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false);
    let mut st = sim.state();
    // Another pod of the same name: the old one is gone.
    if st.pods.get(&key).is_some_and(|e| &*e.uid != uid)
        && let Some(old) = st.pods.remove(&key)
    {
        st.release(old.node, old.ip);
    }
    let entry = st.pods.entry(key.clone()).or_insert_with(|| PodEntry {
        uid: uid.into(),
        node,
        phase: Phase::Pending,
        ip: None,
        pending: None,
    });
    let mut enqueue = false;
    let mut release = None;
    let mut mark = None;
    if pod.metadata.deletion_timestamp.is_some() {
        entry.phase = Phase::Deleting;
        entry.pending = None;
        enqueue = true;
    } else {
        match phase {
            "Running" => {
                entry.phase = Phase::Running;
                entry.pending = None;
                let ip = status
                    .and_then(|s| s.pod_ip.as_deref())
                    .and_then(|ip| ip.parse::<Ipv4Addr>().ok());
                if !host_network && ip.is_some() && entry.ip != ip {
                    release = entry.ip;
                    mark = ip;
                    entry.ip = ip;
                }
            }
            "Succeeded" | "Failed" => {
                entry.phase = Phase::Done;
                entry.pending = None;
                release = entry.ip.take();
            }
            // The watch still shows the pod before our status write.
            _ if entry.phase == Phase::StatusSent => {}
            _ => {
                entry.phase = Phase::Pending;
                entry.pending = Some(Box::new(PodSummary::of(pod)));
                enqueue = true;
            }
        }
    }
    st.release(node, release);
    if let Some(ip) = mark {
        st.mark(node, ip);
    }
    drop(st);
    if enqueue {
        sim.queue.add(key.clone());
    }
    Some(key)
}

/// A write one pod needs.
enum Job {
    /// The kubelet's final delete.
    Delete(String),
    /// The running status (merge patch of the status subresource).
    Status(Value),
}

/// Carries out what pod `key` needs now.
async fn sync_pod(sim: &Sim, key: &Key) -> Result<(), kube::Error> {
    let job = {
        let mut st = sim.state();
        let State {
            pods,
            pools,
            waiting,
            ..
        } = &mut *st;
        let Some(e) = pods.get_mut(key) else {
            return Ok(());
        };
        match e.phase {
            Phase::Deleting => Job::Delete(e.uid.to_string()),
            Phase::Pending => {
                let Some(summary) = e.pending.as_deref() else {
                    return Ok(());
                };
                let host_ip = node_ip(e.node);
                let pod_ip = if summary.host_network {
                    host_ip
                } else if let Some(ip) = e.ip {
                    ip
                } else {
                    let idx = e.node as usize;
                    let Some(pool) = pools[idx].as_mut() else {
                        // No spec.podCIDR yet: the node watch queues it again.
                        if !waiting[idx].contains(key) {
                            waiting[idx].push(key.clone());
                        }
                        return Ok(());
                    };
                    match pool.allocate() {
                        Some(ip) => {
                            e.ip = Some(ip);
                            ip
                        }
                        None => {
                            tracing::warn!(pod = %key, cidr = pool.cidr(), "no free pod IP on the node; retrying");
                            sim.queue.add_after(key.clone(), NO_IP_RETRY);
                            return Ok(());
                        }
                    }
                };
                let status =
                    running_status(summary, &e.uid, host_ip, pod_ip, &objects::time(now()));
                Job::Status(json!({"metadata": {"uid": &*e.uid}, "status": status}))
            }
            Phase::StatusSent | Phase::Running | Phase::Done => return Ok(()),
        }
    };
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let api: Api<Pod> = Api::namespaced(sim.client.clone(), ns);
    let _permit = sim.permit().await;
    match job {
        Job::Delete(uid) => {
            let params = DeleteParams {
                grace_period_seconds: Some(0),
                preconditions: Some(Preconditions {
                    uid: Some(uid),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            match api.delete(name, &params).await {
                Ok(_) => Ok(()),
                // Gone already, or another pod of that name now.
                Err(e) if matches!(api_code(&e), Some(404 | 409)) => Ok(()),
                Err(e) => Err(e),
            }
        }
        Job::Status(body) => {
            let uid = body["metadata"]["uid"].as_str().unwrap_or_default();
            match api
                .patch_status(name, &PatchParams::default(), &Patch::Merge(&body))
                .await
            {
                Ok(_) => {
                    let mut st = sim.state();
                    if let Some(e) = st.pods.get_mut(key)
                        && &*e.uid == uid
                        && e.phase == Phase::Pending
                    {
                        e.phase = Phase::StatusSent;
                        e.pending = None;
                    }
                    Ok(())
                }
                Err(e) if matches!(api_code(&e), Some(404 | 409)) => Ok(()),
                Err(e) => Err(e),
            }
        }
    }
}
