//! The scheduler's loop over the API server, as upstream's kube-scheduler: list+watch of
//! pods, nodes and the objects default spreading reads (Services, ReplicaSets,
//! StatefulSets, ReplicationControllers), each event folded into the compact cache or the
//! queue; one scheduling cycle at a time under the lock; the pod assumed on its node at
//! once and bound asynchronously through `pods/binding`; `Scheduled` / `FailedScheduling`
//! / `Preempted` events; the `PodScheduled=False` condition and `nominatedNodeName`
//! written on failure.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::apps::v1::{ReplicaSet, StatefulSet};
use k8s_openapi::api::core::v1::{Node, ObjectReference, Pod, ReplicationController, Service};
use k8s_openapi::api::policy::v1::PodDisruptionBudget;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Client, Resource};
use runtime::events::{EventType, Recorder};
use runtime::leanmeta::LeanPod;
use serde_json::json;
use tokio::sync::{Notify, Semaphore, watch};

use crate::cache::Cache;
use crate::framework::{Algorithm, Profile};
use crate::model::PodInfo;
use crate::preemption;
use crate::queue::SchedulingQueue;

/// How many bindings may be in flight at once.
const PARALLEL_BINDS: usize = 256;

/// The scheduler's errors.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("client: {0}")]
    Client(#[from] kube::Error),
    #[error("no profiles")]
    NoProfiles,
}

struct State {
    cache: Cache,
    queue: SchedulingQueue,
    algorithm: Algorithm,
}

/// A running scheduler.
pub struct Scheduler {
    state: Mutex<State>,
    wake: Notify,
    profiles: HashMap<String, Profile>,
    client: Client,
    recorder: Recorder,
    binds: Arc<Semaphore>,
    metrics: Arc<crate::metrics::Metrics>,
    /// The watches whose first list is not handled yet; nothing is scheduled before all
    /// are (upstream's `WaitForHandlersSync`), lest a pod be placed on a node whose bound
    /// pods are not counted yet.
    unsynced: watch::Sender<usize>,
}

impl Scheduler {
    /// Starts scheduling (once leading, for a scheduler under leader election), after
    /// every watch's first list has been handled; the watches run from [`start`], so a
    /// standby's caches are warm when it takes over.
    pub fn run(self: &Arc<Self>) {
        let s = Arc::clone(self);
        tokio::spawn(async move {
            let mut unsynced = s.unsynced.subscribe();
            if unsynced.wait_for(|n| *n == 0).await.is_ok() {
                tracing::debug!("handlers synced");
                schedule_loop(s).await;
            }
        });
    }

    /// Whether every watch's first list has been handled (upstream's
    /// `sched-handler-sync` readiness check).
    pub fn handlers_synced(&self) -> bool {
        *self.unsynced.borrow() == 0
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

fn object_ref(pod: &PodInfo) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Pod".into()),
        namespace: Some(pod.namespace.clone()),
        name: Some(pod.name.clone()),
        uid: Some(pod.uid.clone()),
        resource_version: Some(pod.resource_version.clone()).filter(|s| !s.is_empty()),
        field_path: None,
    }
}

/// Starts the scheduler's watches with `profiles`; [`Scheduler::run`] starts scheduling.
pub fn start(
    client: Client,
    profiles: Vec<Profile>,
    recorder: Recorder,
    metrics: Arc<crate::metrics::Metrics>,
    backoff: crate::queue::Backoff,
) -> Result<Arc<Scheduler>, Error> {
    if profiles.is_empty() {
        return Err(Error::NoProfiles);
    }
    let profiles = profiles
        .into_iter()
        .map(|p| (p.scheduler_name.clone(), p))
        .collect();
    let sched = Arc::new(Scheduler {
        state: Mutex::new(State {
            cache: Cache::new(),
            queue: SchedulingQueue::with_backoff(backoff),
            algorithm: Algorithm::default(),
        }),
        wake: Notify::new(),
        profiles,
        client: client.clone(),
        recorder,
        binds: Arc::new(Semaphore::new(PARALLEL_BINDS)),
        metrics,
        unsynced: watch::channel(0).0,
    });
    spawn_watch(
        Arc::clone(&sched),
        Api::<Node>::all(client.clone()),
        on_node,
    );
    // Pods are decoded without their managedFields, which the scheduler never reads.
    spawn_watch(
        Arc::clone(&sched),
        Api::<LeanPod>::all(client.clone()),
        on_pod,
    );
    spawn_watch(
        Arc::clone(&sched),
        Api::<Service>::all(client.clone()),
        on_service,
    );
    spawn_watch(
        Arc::clone(&sched),
        Api::<ReplicaSet>::all(client.clone()),
        |s, e| {
            on_controller(s, e, "ReplicaSet", |r: &ReplicaSet| {
                r.spec.as_ref().map(|s| s.selector.clone())
            })
        },
    );
    spawn_watch(
        Arc::clone(&sched),
        Api::<StatefulSet>::all(client.clone()),
        |s, e| {
            on_controller(s, e, "StatefulSet", |r: &StatefulSet| {
                r.spec.as_ref().map(|s| s.selector.clone())
            })
        },
    );
    spawn_watch(
        Arc::clone(&sched),
        Api::<ReplicationController>::all(client),
        |s, e| {
            on_controller(
                s,
                e,
                "ReplicationController",
                |r: &ReplicationController| {
                    r.spec.as_ref().and_then(|s| s.selector.clone()).map(|m| {
                        k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector {
                            match_labels: Some(m),
                            match_expressions: None,
                        }
                    })
                },
            )
        },
    );
    spawn_watch(
        Arc::clone(&sched),
        Api::<PodDisruptionBudget>::all(sched.client.clone()),
        on_pdb,
    );
    let s = Arc::clone(&sched);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs(30));
        loop {
            tick.tick().await;
            s.lock().queue.flush_unschedulable(Instant::now());
            s.wake.notify_one();
        }
    });
    Ok(sched)
}

/// A watcher event with the relist bookkeeping done: `Relisted` carries the keys seen by
/// a fresh list, so objects deleted while the watch was down can be dropped.
enum Change<K> {
    Apply(K),
    Delete(K),
    Relisted(HashSet<String>),
}

fn spawn_watch<K, F>(sched: Arc<Scheduler>, api: Api<K>, handle: F)
where
    K: kube::Resource + Clone + serde::de::DeserializeOwned + std::fmt::Debug + Send + 'static,
    F: Fn(&Scheduler, Change<K>) + Send + 'static,
{
    sched.unsynced.send_modify(|n| *n += 1);
    tokio::spawn(async move {
        let mut synced = false;
        // Backing off after errors: retried at once, a watch of a server that is down spins
        // and never yields to the runtime.
        let mut stream = std::pin::pin!(watcher(api, watcher::Config::default()).default_backoff());
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(e) = stream.next().await {
            match e {
                Ok(watcher::Event::Init) => seen.clear(),
                Ok(watcher::Event::InitApply(o)) => {
                    seen.insert(o.meta().uid.clone().unwrap_or_default());
                    handle(&sched, Change::Apply(o));
                }
                Ok(watcher::Event::InitDone) => {
                    handle(&sched, Change::Relisted(std::mem::take(&mut seen)));
                    if !synced {
                        synced = true;
                        sched.unsynced.send_modify(|n| *n = n.saturating_sub(1));
                    }
                }
                Ok(watcher::Event::Apply(o)) => handle(&sched, Change::Apply(o)),
                Ok(watcher::Event::Delete(o)) => handle(&sched, Change::Delete(o)),
                Err(e) => tracing::debug!(error = %e, "watch error; the watcher backs off"),
            }
            sched.wake.notify_one();
        }
    });
}

fn on_node(s: &Scheduler, c: Change<Node>) {
    let mut st = s.lock();
    let now = Instant::now();
    match c {
        Change::Apply(n) => {
            if st.cache.set_node(&n) {
                st.queue.move_all(now);
            }
        }
        Change::Delete(n) => {
            st.cache
                .remove_node(n.metadata.name.as_deref().unwrap_or_default());
        }
        Change::Relisted(_) => {
            // Nodes are few: a relist re-applied every one; none is dropped here.
            st.queue.move_all(now);
        }
    }
}

fn on_pod(s: &Scheduler, c: Change<LeanPod>) {
    let mut st = s.lock();
    let now = Instant::now();
    match c {
        Change::Apply(p) => {
            let info = PodInfo::from_pod(&p);
            if !info.node_name.is_empty() {
                st.queue.delete(&info.uid);
                st.cache.clear_nomination(&info.uid);
                st.cache.set_pod(info);
            } else if info.terminal || info.deleting {
                st.queue.delete(&info.uid);
                st.cache.clear_nomination(&info.uid);
            } else if s.profiles.contains_key(&info.scheduler_name)
                && !st.cache.is_assumed(&info.uid)
            {
                let info = Arc::new(info);
                if info.nominated_node_name.is_empty() {
                    st.cache.clear_nomination(&info.uid);
                } else {
                    let node = info.nominated_node_name.clone();
                    st.cache.nominate(Arc::clone(&info), &node);
                }
                st.queue.add(info, now);
            }
        }
        Change::Delete(p) => {
            let uid = p.metadata.uid.clone().unwrap_or_default();
            st.queue.delete(&uid);
            st.cache.clear_nomination(&uid);
            if st.cache.pod_node(&uid).is_some() {
                st.cache.remove_pod(&uid);
                st.queue.move_all(now);
            }
        }
        Change::Relisted(seen) => {
            let gone: Vec<String> = st
                .cache
                .pods()
                .filter(|(p, _)| !seen.contains(&p.uid) && !st.cache.is_assumed(&p.uid))
                .map(|(p, _)| p.uid.clone())
                .collect();
            for uid in gone {
                st.cache.remove_pod(&uid);
            }
            st.queue.move_all(now);
        }
    }
}

/// Budgets, for preemption to prefer victims whose eviction violates none.
fn on_pdb(s: &Scheduler, c: Change<PodDisruptionBudget>) {
    let key = |p: &PodDisruptionBudget| {
        format!(
            "{}/{}",
            p.metadata.namespace.as_deref().unwrap_or_default(),
            p.metadata.name.as_deref().unwrap_or_default()
        )
    };
    let mut st = s.lock();
    match c {
        Change::Apply(p) => st.cache.set_pdb(key(&p), crate::cache::Pdb::from_api(&p)),
        Change::Delete(p) => st.cache.remove_pdb(&key(&p)),
        Change::Relisted(seen) => st.cache.retain_pdbs(&seen),
    }
}

fn on_service(s: &Scheduler, c: Change<Service>) {
    let mut st = s.lock();
    match c {
        Change::Apply(svc) => {
            let ns = svc.metadata.namespace.clone().unwrap_or_default();
            let name = svc.metadata.name.clone().unwrap_or_default();
            let sel: BTreeMap<String, String> =
                svc.spec.and_then(|s| s.selector).unwrap_or_default();
            st.cache
                .owner_selectors
                .services
                .entry(ns)
                .or_default()
                .insert(name, sel);
        }
        Change::Delete(svc) => {
            let ns = svc.metadata.namespace.clone().unwrap_or_default();
            let name = svc.metadata.name.clone().unwrap_or_default();
            if let Some(m) = st.cache.owner_selectors.services.get_mut(&ns) {
                m.remove(&name);
            }
        }
        Change::Relisted(_) => {}
    }
}

fn on_controller<K: Resource>(
    s: &Scheduler,
    c: Change<K>,
    kind: &str,
    selector: impl Fn(&K) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector>,
) {
    let mut st = s.lock();
    let key = |o: &K| {
        (
            kind.to_string(),
            o.meta().namespace.clone().unwrap_or_default(),
            o.meta().name.clone().unwrap_or_default(),
        )
    };
    match c {
        Change::Apply(o) => {
            let sel = api::selector::LabelSelector::from_metav1(selector(&o).as_ref())
                .unwrap_or_else(|_| api::selector::LabelSelector::nothing());
            st.cache.owner_selectors.controllers.insert(key(&o), sel);
        }
        Change::Delete(o) => {
            st.cache.owner_selectors.controllers.remove(&key(&o));
        }
        Change::Relisted(_) => {}
    }
}

/// What a cycle decided, carried out after the lock is released.
enum Outcome {
    Bind {
        pod: Arc<PodInfo>,
        node: String,
    },
    Failed {
        pod: Arc<PodInfo>,
        message: String,
        nominated: Option<String>,
        victims: Vec<Arc<PodInfo>>,
    },
}

async fn schedule_loop(s: Arc<Scheduler>) {
    loop {
        let outcome = {
            let mut st = s.lock();
            let now = Instant::now();
            st.queue
                .pop(now)
                .map(|(pod, _cycle)| cycle(&s, &mut st, pod, now))
        };
        match outcome {
            Some(Some(o)) => carry_out(&s, o).await,
            Some(None) => {}
            None => {
                let next = s.lock().queue.next_backoff();
                let wait = next
                    .map(|t| t.saturating_duration_since(Instant::now()))
                    .unwrap_or(Duration::from_secs(1))
                    .clamp(Duration::from_millis(1), Duration::from_secs(1));
                let _ = tokio::time::timeout(wait, s.wake.notified()).await;
            }
        }
    }
}

/// One scheduling cycle under the lock.
fn cycle(s: &Scheduler, st: &mut State, pod: Arc<PodInfo>, now: Instant) -> Option<Outcome> {
    let Some(profile) = s.profiles.get(&pod.scheduler_name) else {
        st.queue.done(&pod.uid);
        return None;
    };
    let span = tracing::debug_span!("schedule", pod = %pod.key());
    let _guard = span.enter();
    let started = Instant::now();
    let State {
        cache,
        queue,
        algorithm,
        ..
    } = st;
    let result = algorithm.schedule(profile, &pod, cache);
    let outcome = match result {
        Ok(placement) => {
            cache.clear_nomination(&pod.uid);
            let mut assumed = (*pod).clone();
            assumed.node_name.clone_from(&placement.node);
            cache.assume(Arc::new(assumed), &placement.node);
            tracing::debug!(node = %placement.node, evaluated = placement.evaluated, "placed");
            Some(Outcome::Bind {
                pod,
                node: placement.node,
            })
        }
        Err(mut diagnosis) => {
            let mut nominated = None;
            let mut victims = Vec::new();
            if profile.preemption {
                match preemption::preempt(profile, &pod, cache, &diagnosis) {
                    Ok(p) => {
                        // Nominated at once (the status write comes later), so the
                        // room being freed is not taken by pods of lower priority.
                        cache.nominate(Arc::clone(&pod), &p.node);
                        nominated = Some(p.node);
                        victims = p.victims;
                    }
                    Err(msg) => diagnosis.post_filter = Some(msg),
                }
            }
            queue.unschedulable(&pod.uid, now);
            Some(Outcome::Failed {
                pod,
                message: diagnosis.message(),
                nominated,
                victims,
            })
        }
    };
    let took = started.elapsed();
    let result = match &outcome {
        Some(Outcome::Bind { .. }) => "scheduled",
        _ => "unschedulable",
    };
    s.metrics.attempt(&profile.scheduler_name, result, took);
    s.metrics.set_pending(st.queue.lengths());
    outcome
}

async fn carry_out(s: &Arc<Scheduler>, outcome: Outcome) {
    match outcome {
        Outcome::Bind { pod, node } => {
            let Ok(permit) = Arc::clone(&s.binds).acquire_owned().await else {
                return;
            };
            let s = Arc::clone(s);
            tokio::spawn(async move {
                let _permit = permit;
                bind(&s, &pod, &node).await;
            });
        }
        Outcome::Failed {
            pod,
            message,
            nominated,
            victims,
        } => {
            let s = Arc::clone(s);
            tokio::spawn(async move {
                failed(&s, &pod, &message, nominated.as_deref(), &victims).await;
            });
        }
    }
}

async fn bind(s: &Scheduler, pod: &PodInfo, node: &str) {
    let body = json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    });
    let result = async {
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let req = http::Request::post(format!(
            "/api/v1/namespaces/{}/pods/{}/binding",
            pod.namespace, pod.name
        ))
        .header("content-type", "application/json")
        .body(bytes)
        .map_err(|e| e.to_string())?;
        s.client
            .request::<serde_json::Value>(req)
            .await
            .map_err(|e| e.to_string())
    }
    .await;
    match result {
        Ok(_) => {
            s.lock().queue.done(&pod.uid);
            s.recorder.event(
                &object_ref(pod),
                EventType::Normal,
                "Scheduled",
                &format!(
                    "Successfully assigned {}/{} to {node}",
                    pod.namespace, pod.name
                ),
            );
        }
        Err(e) => {
            tracing::info!(pod = %pod.key(), node, error = %e, "binding failed; retrying after back-off");
            let mut st = s.lock();
            st.cache.forget(&pod.uid);
            st.queue.error(&pod.uid, Instant::now());
            drop(st);
            s.wake.notify_one();
        }
    }
}

async fn failed(
    s: &Scheduler,
    pod: &PodInfo,
    message: &str,
    nominated: Option<&str>,
    victims: &[Arc<PodInfo>],
) {
    s.recorder.event(
        &object_ref(pod),
        EventType::Warning,
        "FailedScheduling",
        message,
    );
    if let Some(node) = nominated {
        for v in victims {
            s.recorder.event(
                &object_ref(v),
                EventType::Normal,
                "Preempted",
                &format!("Preempted by pod {} on node {node}", pod.uid),
            );
            let api: Api<Pod> = Api::namespaced(s.client.clone(), &v.namespace);
            let dp = DeleteParams {
                preconditions: Some(kube::api::Preconditions {
                    uid: Some(v.uid.clone()),
                    resource_version: None,
                }),
                ..DeleteParams::default()
            };
            if let Err(e) = api.delete(&v.name, &dp).await {
                tracing::info!(victim = %v.key(), error = %e, "could not delete a preemption victim");
            }
        }
    }
    let same = pod.marked_unschedulable
        && pod.unschedulable_message == message
        && nominated.is_none_or(|n| n == pod.nominated_node_name);
    if same {
        return;
    }
    let now = jiff::Timestamp::now().to_string();
    let mut status = json!({
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": message, "lastProbeTime": null, "lastTransitionTime": now}],
    });
    if let Some(n) = nominated {
        status["nominatedNodeName"] = json!(n);
    }
    let api: Api<Pod> = Api::namespaced(s.client.clone(), &pod.namespace);
    let patch = json!({"status": status});
    if let Err(e) = api
        .patch_status(
            &pod.name,
            &PatchParams::default(),
            &Patch::Strategic(&patch),
        )
        .await
    {
        tracing::debug!(pod = %pod.key(), error = %e, "could not write the PodScheduled condition");
    }
}
