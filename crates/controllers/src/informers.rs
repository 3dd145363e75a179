//! Shared informers: one list+watch per resource type for the whole process (kube-runtime's
//! watcher, which relists on `410 Gone` and resumes from the last resourceVersion, feeding
//! a reflector store), with its events fanned out to every controller that subscribes.
//! A subscriber that falls behind is told so and resyncs from the store.

use std::fmt::Debug;
use std::sync::Arc;

use futures::StreamExt;
use kube::Api;
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
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
    events: broadcast::Sender<Arc<watcher::Event<K>>>,
}

/// What a subscriber receives next.
pub enum Next<K> {
    Event(watcher::Event<K>),
    /// Events were missed: re-read everything from the store.
    Resync,
    /// The informer stopped.
    Closed,
}

impl<K> Informer<K>
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone + Default,
{
    /// Starts listing and watching every object `api` reaches.
    pub fn start(api: Api<K>) -> Arc<Self> {
        let (store, writer) = reflector::store::<K>();
        let (events, _) = broadcast::channel(BUFFER);
        let informer = Arc::new(Informer { store, events });
        let tx = informer.events.clone();
        let stream = reflector::reflector(writer, watcher(api, watcher::Config::default()));
        tokio::spawn(async move {
            let mut stream = std::pin::pin!(stream);
            while let Some(e) = stream.next().await {
                match e {
                    Ok(event) => {
                        let _ = tx.send(Arc::new(event));
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
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<watcher::Event<K>>> {
        self.events.subscribe()
    }

    /// Waits until the first list is in the store.
    pub async fn synced(&self) {
        let _ = self.store.wait_until_ready().await;
    }
}

/// The next event of a subscription.
pub async fn next<K: Clone>(rx: &mut broadcast::Receiver<Arc<watcher::Event<K>>>) -> Next<K> {
    match rx.recv().await {
        Ok(e) => Next::Event(e.as_ref().clone()),
        Err(broadcast::error::RecvError::Lagged(n)) => {
            tracing::warn!(missed = n, "informer subscriber fell behind; resyncing");
            Next::Resync
        }
        Err(broadcast::error::RecvError::Closed) => Next::Closed,
    }
}
