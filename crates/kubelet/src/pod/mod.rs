//! The pods bound to this node (upstream's `Kubelet` pod lifecycle): [`run`] watches the
//! node's pods (`spec.nodeName=<node>`) and the Services, admits new pods, and runs one
//! worker per pod uid that serializes sync → terminating → terminated; the PLEG relists
//! the runtime every second and wakes the workers of pods whose containers changed.
//!
//! - [`actions`]: `computePodActions` (pure).
//! - [`spec`]: the CRI sandbox and container configs (pure).
//! - [`env`]: container environments and service variables (pure).
//! - [`status`]: `generateAPIPodStatus` / `getPhase` (pure); [`statusmgr`]: writes them.
//! - [`images`]: pull policy and pull-secret credentials; [`backoff`]: restart and pull
//!   back-off; [`probes`]: liveness/readiness/startup; [`admission`]: node fit.
//! - [`runtime`]: the runtime's view of a pod; [`pleg`]: relist and diff.
//! - [`reclaim`]: a deleted pod's resources reclaimed before the final `DELETE`.
//! - [`PodView`]: the node's pods as the lifecycle last saw them (the kubelet API's
//!   `/pods`, upstream's pod manager `GetPods`).
//! - `worker`: sync / kill / terminate over CRI, and the per-pod task.
//!
//! Sidecar init containers (`restartPolicy: Always`) start in order before the app
//! containers, restart whatever the pod's policy and stop last (see [`actions`]).

pub mod actions;
pub mod admission;
pub mod backoff;
pub mod env;
pub mod images;
pub mod metrics;
pub mod pleg;
pub mod probes;
pub mod reclaim;
pub mod runtime;
pub mod spec;
pub mod status;
pub mod statusmgr;
mod worker;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use ::runtime::events::{Clock, EventType, KubeSink, Recorder, RecorderConfig, object_reference};
use cri::{ImageService, RuntimeService};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod, PodStatus, Service};
use kube::Api;
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::{Notify, watch};

pub use metrics::Metrics;

use crate::{CgroupManager, Error, KubeletConfig, VolumeManager};
use worker::{Kubelet, Phase, pod_worker};

/// Everything the pod lifecycle needs. Build it with [`PodContext::new`] and adjust the
/// public fields.
pub struct PodContext {
    pub config: Arc<KubeletConfig>,
    pub client: kube::Client,
    pub runtime: Arc<dyn RuntimeService>,
    pub images: Arc<dyn ImageService>,
    pub volumes: Arc<dyn VolumeManager>,
    pub cgroups: Arc<dyn CgroupManager>,
    /// The clock of statuses, back-offs and deadlines.
    pub clock: Clock,
    /// Where events go; `None`: a recorder over `client` with source `kubelet`/node name.
    pub recorder: Option<Recorder>,
    /// The pod metrics (serve [`Metrics::render`] on the kubelet's `/metrics`).
    pub metrics: Arc<Metrics>,
    /// The PLEG relist period (upstream 1 s).
    pub pleg_period: Duration,
    /// The pods [`run`] follows; clone it before `run` to read them (`/pods`).
    pub pods: PodView,
}

impl PodContext {
    pub fn new(
        config: Arc<KubeletConfig>,
        client: kube::Client,
        runtime: Arc<dyn RuntimeService>,
        images: Arc<dyn ImageService>,
        volumes: Arc<dyn VolumeManager>,
        cgroups: Arc<dyn CgroupManager>,
    ) -> PodContext {
        PodContext {
            config,
            client,
            runtime,
            images,
            volumes,
            cgroups,
            clock: Arc::new(jiff::Timestamp::now),
            recorder: None,
            metrics: Arc::new(Metrics::new()),
            pleg_period: Duration::from_secs(1),
            pods: PodView::default(),
        }
    }
}

/// The pods bound to this node as the pod lifecycle last saw them from the API (each
/// worker's latest copy: spec, metadata and the status the API server had), without the
/// ones deleted from the API. Cheap to clone; upstream's pod manager `GetPods`.
#[derive(Clone, Default)]
pub struct PodView {
    registry: Arc<Mutex<Registry>>,
}

impl PodView {
    /// The pods, ordered by namespace and name.
    pub fn pods(&self) -> Vec<Pod> {
        let reg = self.registry.lock().unwrap_or_else(|e| e.into_inner());
        let mut pods: Vec<Pod> = reg
            .workers
            .values()
            .filter(|w| !w.pod.is_closed())
            .filter_map(|w| w.pod.borrow().as_deref().cloned())
            .collect();
        drop(reg);
        pods.sort_by(|a, b| {
            (&a.metadata.namespace, &a.metadata.name)
                .cmp(&(&b.metadata.namespace, &b.metadata.name))
        });
        pods
    }
}

struct WorkerHandle {
    pod: watch::Sender<Option<Arc<Pod>>>,
    /// Admitted and not terminal: counts against the node's resources.
    admitted: bool,
}

#[derive(Default)]
struct Registry {
    workers: HashMap<String, WorkerHandle>,
}

fn pod_key(p: &Pod) -> String {
    format!(
        "{}/{}",
        p.metadata.namespace.as_deref().unwrap_or_default(),
        p.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Runs the pods bound to `ctx.config.node_name` until `stop` turns true.
pub async fn run(ctx: PodContext, mut stop: watch::Receiver<bool>) -> Result<(), Error> {
    let node = ctx.config.node_name.clone();
    let recorder = match ctx.recorder.clone() {
        Some(r) => r,
        None => Recorder::spawn(
            KubeSink::new(ctx.client.clone()),
            RecorderConfig::new("kubelet", node.clone()),
        ),
    };
    let runtime_name = match ctx.runtime.version().await {
        Ok(v) if !v.runtime_name.is_empty() => v.runtime_name,
        _ => "containerd".to_string(),
    };
    let (status, status_task) =
        statusmgr::StatusManager::start(ctx.client.clone(), Arc::clone(&ctx.metrics));
    let wakers: Arc<Mutex<HashMap<String, Arc<Notify>>>> = Arc::new(Mutex::new(HashMap::new()));
    let probe_wakers = Arc::clone(&wakers);
    let probes = probes::ProbeManager::new(
        Arc::clone(&ctx.runtime),
        Some(recorder.clone()),
        Arc::new(move |uid: &str| {
            if let Some(n) = probe_wakers
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(uid)
            {
                n.notify_one();
            }
        }),
    );
    let k = Arc::new(Kubelet {
        config: Arc::clone(&ctx.config),
        client: ctx.client.clone(),
        runtime: Arc::clone(&ctx.runtime),
        images: Arc::clone(&ctx.images),
        volumes: Arc::clone(&ctx.volumes),
        cgroups: Arc::clone(&ctx.cgroups),
        clock: Arc::clone(&ctx.clock),
        recorder,
        status,
        probes,
        services: RwLock::new(BTreeMap::new()),
        node: RwLock::new(None),
        runtime_name,
        node_etc_hosts: std::fs::read_to_string("/etc/hosts").unwrap_or_default(),
        state: Mutex::new(worker::State::default()),
        wakers,
        metrics: Arc::clone(&ctx.metrics),
    });
    let registry = Arc::clone(&ctx.pods.registry);
    // The Node first, so the first pods are admitted against its allocatable.
    match Api::<Node>::all(ctx.client.clone()).get_opt(&node).await {
        Ok(n) => *k.node.write().unwrap_or_else(|e| e.into_inner()) = n,
        Err(e) => tracing::warn!(node = %node, error = %e, "reading the Node"),
    }
    let mut tasks = vec![status_task];
    tasks.push(tokio::spawn(watch_services(Arc::clone(&k))));
    tasks.push(tokio::spawn(watch_node(Arc::clone(&k))));
    let (listed_tx, listed_rx) = watch::channel(false);
    tasks.push(tokio::spawn(pleg_loop(
        Arc::clone(&k),
        ctx.pleg_period,
        listed_rx.clone(),
    )));
    tasks.push(tokio::spawn(orphans_after_first_list(
        Arc::clone(&k),
        Arc::clone(&registry),
        listed_rx,
    )));
    let api: Api<Pod> = Api::all(ctx.client.clone());
    let config = watcher::Config::default().fields(&format!("spec.nodeName={node}"));
    let stream = watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut relist: Option<HashSet<String>> = None;
    // During a (re)list: the pod uids the runtime has sandboxes of, read once per list.
    let mut in_runtime: Option<HashSet<String>> = None;
    tracing::info!(node = %node, "pod lifecycle started");
    loop {
        let event = tokio::select! {
            e = stream.next() => e,
            _ = stop.changed() => None,
        };
        if *stop.borrow() {
            break;
        }
        let Some(event) = event else { break };
        match event {
            Ok(watcher::Event::Init) => {
                relist = Some(HashSet::new());
                in_runtime = Some(sandbox_uids(k.runtime.as_ref()).await);
            }
            Ok(watcher::Event::InitApply(p)) => {
                if let Some(seen) = relist.as_mut() {
                    seen.insert(p.metadata.uid.clone().unwrap_or_default());
                }
                on_pod(&k, &registry, p, &stop, in_runtime.as_ref()).await;
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(seen) = relist.take() {
                    let gone: Vec<String> = {
                        let reg = registry.lock().unwrap_or_else(|e| e.into_inner());
                        reg.workers
                            .keys()
                            .filter(|u| !seen.contains(*u))
                            .cloned()
                            .collect()
                    };
                    for uid in gone {
                        on_gone(&registry, &uid);
                    }
                }
                in_runtime = None;
                let _ = listed_tx.send(true);
            }
            Ok(watcher::Event::Apply(p)) => on_pod(&k, &registry, p, &stop, None).await,
            Ok(watcher::Event::Delete(p)) => {
                on_gone(&registry, p.metadata.uid.as_deref().unwrap_or_default());
            }
            Err(e) => tracing::debug!(error = %e, "pod watch error; backing off"),
        }
    }
    for t in tasks {
        t.abort();
    }
    Ok(())
}

/// Whether a pod update matters to its worker (`checkAndUpdatePod`).
pub(crate) fn differs_semantically(old: &Pod, new: &Pod) -> bool {
    old.spec != new.spec
        || old.metadata.labels != new.metadata.labels
        || old.metadata.annotations != new.metadata.annotations
        || old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || old.metadata.deletion_grace_period_seconds != new.metadata.deletion_grace_period_seconds
}

fn on_gone(registry: &Mutex<Registry>, uid: &str) {
    let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(w) = reg.workers.get(uid) {
        let _ = w.pod.send(None);
    }
    reg.workers.retain(|_, w| !w.pod.is_closed());
}

/// The uids of the pods the runtime has sandboxes of (empty when it cannot say).
async fn sandbox_uids(runtime: &dyn RuntimeService) -> HashSet<String> {
    match runtime.list_pod_sandbox(None).await {
        Ok(list) => list
            .into_iter()
            .filter_map(|s| s.labels.get(runtime::LABEL_POD_UID).cloned())
            .collect(),
        Err(e) => {
            tracing::warn!(error = %e, "listing the runtime's sandboxes");
            HashSet::new()
        }
    }
}

/// A pod event: hand it to its worker, or admit it and start one.
///
/// `in_runtime`, during a list of the node's pods: the pods the runtime already runs
/// (started by this kubelet before a restart), which are adopted, not admitted again.
/// Outside a list a pod without a worker is new to this kubelet, so the runtime cannot
/// hold anything of it, and admission needs no runtime call (as upstream's
/// `HandlePodAdditions`).
async fn on_pod(
    k: &Arc<Kubelet>,
    registry: &Arc<Mutex<Registry>>,
    pod: Pod,
    stop: &watch::Receiver<bool>,
    in_runtime: Option<&HashSet<String>>,
) {
    let uid = pod.metadata.uid.clone().unwrap_or_default();
    if uid.is_empty() {
        return;
    }
    let seen = std::time::Instant::now();
    let terminal = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    {
        let mut reg = registry.lock().unwrap_or_else(|e| e.into_inner());
        reg.workers.retain(|_, w| !w.pod.is_closed());
        if let Some(w) = reg.workers.get_mut(&uid) {
            if terminal {
                w.admitted = false;
            }
            // As upstream's pod config, only changes of the spec, labels, annotations or
            // deletion wake the worker; status updates (mostly ours) are just recorded.
            let pod = Arc::new(pod);
            w.pod.send_if_modified(|cur| {
                let wake = cur
                    .as_ref()
                    .is_none_or(|old| differs_semantically(old, &pod));
                *cur = Some(Arc::clone(&pod));
                wake
            });
            return;
        }
    }
    // A new pod for this kubelet.
    let deleting = pod.metadata.deletion_timestamp.is_some();
    let mut phase = Phase::Sync;
    let mut admitted = true;
    if terminal {
        phase = Phase::Terminating;
        admitted = false;
    } else if !deleting {
        let running = pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running");
        if !running {
            let has_runtime_state = in_runtime.is_some_and(|uids| uids.contains(&uid));
            if !has_runtime_state && let Err(r) = admit(k, registry, &pod) {
                tracing::info!(pod = %pod_key(&pod), reason = %r.reason, "pod rejected");
                k.recorder.event(
                    &object_reference(&pod),
                    EventType::Warning,
                    &r.reason,
                    &r.message,
                );
                let status = PodStatus {
                    phase: Some("Failed".into()),
                    reason: Some(r.reason.clone()),
                    message: Some(format!("Pod was rejected: {}", r.message)),
                    qos_class: pod
                        .status
                        .as_ref()
                        .and_then(|s| s.qos_class.clone())
                        .or_else(|| Some(spec::qos_class(&pod).to_string())),
                    start_time: pod.status.as_ref().and_then(|s| s.start_time.clone()),
                    conditions: pod.status.as_ref().and_then(|s| s.conditions.clone()),
                    ..Default::default()
                };
                k.status.set(&pod, status);
                phase = Phase::Done;
                admitted = false;
            }
        }
    }
    tracing::debug!(pod = %pod_key(&pod), ?phase, "starting pod worker");
    if phase == Phase::Sync {
        k.metrics.observe_stage("admit", seen.elapsed());
    }
    let (tx, rx) = watch::channel(Some(Arc::new(pod)));
    let wake = Arc::new(Notify::new());
    k.wakers
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(uid.clone(), Arc::clone(&wake));
    registry
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .workers
        .insert(uid.clone(), WorkerHandle { pod: tx, admitted });
    tokio::spawn(pod_worker(
        Arc::clone(k),
        uid,
        rx,
        wake,
        phase,
        stop.clone(),
    ));
}

fn admit(k: &Kubelet, registry: &Mutex<Registry>, pod: &Pod) -> Result<(), admission::Rejection> {
    let reg = registry.lock().unwrap_or_else(|e| e.into_inner());
    let others: Vec<Arc<Pod>> = reg
        .workers
        .values()
        .filter(|w| w.admitted)
        .filter_map(|w| w.pod.borrow().clone())
        .filter(|p| {
            !matches!(
                k.status
                    .get(p.metadata.uid.as_deref().unwrap_or_default())
                    .and_then(|s| s.phase)
                    .as_deref(),
                Some("Succeeded" | "Failed")
            )
        })
        .collect();
    drop(reg);
    let refs: Vec<&Pod> = others.iter().map(|p| p.as_ref()).collect();
    let node = k.node.read().unwrap_or_else(|e| e.into_inner()).clone();
    admission::admit(pod, &refs, node.as_ref(), k.allocatable())
}

/// Keeps the Services (for the service environment variables).
async fn watch_services(k: Arc<Kubelet>) {
    let api: Api<Service> = Api::all(k.client.clone());
    let stream = watcher(api, watcher::Config::default()).default_backoff();
    let mut stream = std::pin::pin!(stream);
    let mut fresh: Option<BTreeMap<String, Service>> = None;
    while let Some(event) = stream.next().await {
        let key = |s: &Service| {
            format!(
                "{}/{}",
                s.metadata.namespace.as_deref().unwrap_or_default(),
                s.metadata.name.as_deref().unwrap_or_default()
            )
        };
        match event {
            Ok(watcher::Event::Init) => fresh = Some(BTreeMap::new()),
            Ok(watcher::Event::InitApply(s)) => {
                if let Some(f) = fresh.as_mut() {
                    f.insert(key(&s), s);
                }
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(f) = fresh.take() {
                    *k.services.write().unwrap_or_else(|e| e.into_inner()) = f;
                }
            }
            Ok(watcher::Event::Apply(s)) => {
                k.services
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(key(&s), s);
            }
            Ok(watcher::Event::Delete(s)) => {
                k.services
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&key(&s));
            }
            Err(e) => tracing::debug!(error = %e, "service watch error; backing off"),
        }
    }
}

/// Keeps this kubelet's Node (allocatable for admission and `resourceFieldRef`).
async fn watch_node(k: Arc<Kubelet>) {
    let api: Api<Node> = Api::all(k.client.clone());
    let config =
        watcher::Config::default().fields(&format!("metadata.name={}", k.config.node_name));
    let stream = watcher(api, config).default_backoff();
    let mut stream = std::pin::pin!(stream);
    while let Some(event) = stream.next().await {
        match event {
            Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => {
                *k.node.write().unwrap_or_else(|e| e.into_inner()) = Some(n);
            }
            Ok(watcher::Event::Delete(_)) => {
                *k.node.write().unwrap_or_else(|e| e.into_inner()) = None;
            }
            Ok(_) => {}
            Err(e) => tracing::debug!(error = %e, "node watch error; backing off"),
        }
    }
}

/// The generic PLEG: relists every `period` and wakes the workers of changed pods.
async fn pleg_loop(k: Arc<Kubelet>, period: Duration, mut listed: watch::Receiver<bool>) {
    if listed.wait_for(|l| *l).await.is_err() {
        return;
    }
    let mut previous = pleg::Snapshot::new();
    let mut tick = tokio::time::interval(period);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match pleg::relist(k.runtime.as_ref()).await {
            Ok(now) => {
                let changed = pleg::changed(&previous, &now);
                if !changed.is_empty() {
                    let wakers = k.wakers.lock().unwrap_or_else(|e| e.into_inner());
                    for uid in &changed {
                        if let Some(n) = wakers.get(uid) {
                            n.notify_one();
                        }
                    }
                }
                previous = now;
            }
            Err(e) => tracing::warn!(error = %e, "PLEG relist failed"),
        }
    }
}

/// After the first full list: whatever the runtime runs for pods nobody knows is killed.
async fn orphans_after_first_list(
    k: Arc<Kubelet>,
    registry: Arc<Mutex<Registry>>,
    mut listed: watch::Receiver<bool>,
) {
    if listed.wait_for(|l| *l).await.is_err() {
        return;
    }
    let pods = match runtime::list_pods(k.runtime.as_ref()).await {
        Ok(p) => p,
        Err(e) => {
            tracing::warn!(error = %e, "listing runtime pods for orphans");
            return;
        }
    };
    for r in pods {
        let known = registry
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .workers
            .contains_key(&r.uid);
        if !known && let Err(e) = k.kill_orphan(&r).await {
            tracing::warn!(uid = %r.uid, error = %e, "removing an orphaned pod");
        }
    }
}
