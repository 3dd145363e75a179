//! Shared informers: one list+watch per resource type for the whole process (kube-runtime's
//! watcher, which relists on `410 Gone` and resumes from the last resourceVersion, feeding
//! a reflector store), with its events fanned out to every controller that subscribes.
//! A subscriber that falls behind is told so and resyncs from the store.

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::{WatchStreamExt, watcher};
use serde::de::DeserializeOwned;
use tokio::sync::broadcast;

/// How many events a slow subscriber may fall behind before it must resync (the channel
/// holds shared pointers, so its slots cost a pointer each).
const BUFFER: usize = 4096;

/// One resource type's cache and event stream.
pub struct Informer<K: kube::Resource + Clone + 'static>
where
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    pub store: Store<K>,
    events: broadcast::Sender<Change<K>>,
}

/// An event as subscribers share it: the object behind a pointer, never copied per
/// subscriber.
#[derive(Debug)]
pub enum Change<K> {
    Apply(Arc<K>),
    Delete(Arc<K>),
    Other,
}

impl<K> Clone for Change<K> {
    fn clone(&self) -> Self {
        match self {
            Change::Apply(o) => Change::Apply(Arc::clone(o)),
            Change::Delete(o) => Change::Delete(Arc::clone(o)),
            Change::Other => Change::Other,
        }
    }
}

/// What a subscriber receives next.
pub enum Next<K> {
    /// Added or modified (also while listing).
    Apply(Arc<K>),
    Delete(Arc<K>),
    /// A list started or ended.
    Other,
    /// Events were missed: re-read everything from the store.
    Resync,
    /// The informer stopped.
    Closed,
}

/// Drops what controllers never read from cached objects (as upstream's informers
/// strip `managedFields`), which is most of an object's size.
fn trim<K: kube::Resource>(o: &mut K) {
    o.meta_mut().managed_fields = None;
}

/// The cached copy of a pod (pods are most of a cluster's objects, and a typed pod costs
/// about 19 KB for 2.7 KB of JSON): besides `managedFields`, the volumes no controller reads
/// (all but claims, which the StatefulSet controller checks) and the spare capacity left by
/// decoding. Measured by `rkube bench informer`.
pub fn trim_pod(p: &mut Pod) {
    trim(p);
    if let Some(spec) = p.spec.as_mut() {
        if let Some(v) = spec.volumes.as_mut() {
            v.retain(|v| v.persistent_volume_claim.is_some());
            v.shrink_to_fit();
        }
        spec.containers.shrink_to_fit();
        for c in spec
            .containers
            .iter_mut()
            .chain(spec.init_containers.iter_mut().flatten())
        {
            c.volume_mounts = None;
            if let Some(env) = c.env.as_mut() {
                env.shrink_to_fit();
            }
        }
        if let Some(t) = spec.tolerations.as_mut() {
            t.shrink_to_fit();
        }
    }
    if let Some(status) = p.status.as_mut() {
        if let Some(c) = status.conditions.as_mut() {
            c.shrink_to_fit();
        }
        if let Some(c) = status.container_statuses.as_mut() {
            c.shrink_to_fit();
        }
    }
}

impl<K> Informer<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone + Default,
{
    /// Starts listing and watching every object `api` reaches.
    pub fn start(api: Api<K>) -> Arc<Self> {
        Self::start_trimmed(api, trim::<K>)
    }

    /// As [`Informer::start`], with `trim` applied to every object before it is cached.
    pub fn start_trimmed(api: Api<K>, trim: fn(&mut K)) -> Arc<Self> {
        let (store, writer) = reflector::store::<K>();
        let (events, _) = broadcast::channel(BUFFER);
        let informer = Arc::new(Informer { store, events });
        let tx = informer.events.clone();
        let stream = reflector::reflector(
            writer,
            watcher(api, watcher::Config::default()).modify(trim),
        );
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(e) = stream.next().await {
                match e {
                    Ok(event) => {
                        let change = match event {
                            watcher::Event::Apply(o) | watcher::Event::InitApply(o) => {
                                Change::Apply(Arc::new(o))
                            }
                            watcher::Event::Delete(o) => Change::Delete(Arc::new(o)),
                            watcher::Event::Init | watcher::Event::InitDone => Change::Other,
                        };
                        let _ = tx.send(change);
                    }
                    Err(e) => {
                        tracing::debug!(error = %e, "watch error; the watcher backs off and resumes")
                    }
                }
            }
        });
        informer
    }

    /// A new subscription to the events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Change<K>> {
        self.events.subscribe()
    }

    /// Waits until the first list is in the store.
    pub async fn synced(&self) {
        let _ = self.store.wait_until_ready().await;
    }
}

/// The next event of a subscription.
pub async fn next<K>(rx: &mut broadcast::Receiver<Change<K>>) -> Next<K> {
    match rx.recv().await {
        Ok(Change::Apply(o)) => Next::Apply(o),
        Ok(Change::Delete(o)) => Next::Delete(o),
        Ok(Change::Other) => Next::Other,
        Err(broadcast::error::RecvError::Lagged(n)) => {
            tracing::warn!(missed = n, "informer subscriber fell behind; resyncing");
            Next::Resync
        }
        Err(broadcast::error::RecvError::Closed) => Next::Closed,
    }
}
