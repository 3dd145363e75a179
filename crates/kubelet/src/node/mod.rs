//! The node itself: registration, status and lease, as upstream's kubelet
//! (`kubelet_node_status.go`, `nodestatus/setters.go`, the node lease controller).
//!
//! - [`host`]: the machine's facts (CPUs, memory, root filesystem, ids, kernel, OS).
//! - [`status`]: the Node and its status as pure functions of (config, host facts, runtime
//!   facts, previous node, now).
//! - [`lease`]: the `kube-node-lease/<node>` Lease.
//! - [`NodeAgent`]: the loop. It registers the Node (or reconciles an existing one), then
//!   every `node_status_update_frequency` asks the runtime for its status, version and
//!   images, recomputes the status and patches `nodes/<name>/status` when something but
//!   heartbeats changed or `node_status_report_frequency` elapsed; renews the Lease every
//!   quarter of its duration; and follows its Node for `spec.podCIDR` (set by the node IPAM
//!   controller after registration): the CNI conflist is written, the runtime told
//!   (`UpdateRuntimeConfig`), and the CIDR published on a watch channel.

pub mod host;
pub mod lease;
pub mod status;

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use cri::{ImageService, RuntimeService};
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use tokio::sync::watch;
use tokio::time::Instant;

pub use host::HostFacts;
pub use status::{Pressures, RuntimeFacts, RuntimeState};

use crate::{Error, KubeletConfig};

/// Upstream's `nodeStatusUpdateRetry`.
const STATUS_UPDATE_RETRIES: usize = 5;
/// Upstream's `maxUpdateRetries` of the lease controller.
const LEASE_UPDATE_RETRIES: usize = 5;

fn api_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(s) => Some(s.code),
        _ => None,
    }
}

/// Resolves once `stop` is true (or its sender is gone).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    loop {
        if *stop.borrow_and_update() {
            return;
        }
        if stop.changed().await.is_err() {
            return;
        }
    }
}

/// The CIDRs of a node's `spec`: the first (`podCIDR`, what the bridge uses) and all of
/// them comma-joined (what upstream hands the runtime).
pub fn pod_cidrs(node: &Node) -> Option<(String, String)> {
    let spec = node.spec.as_ref()?;
    let all: Vec<String> = match &spec.pod_cidrs {
        Some(list) if !list.is_empty() => list.clone(),
        _ => vec![spec.pod_cidr.clone().filter(|c| !c.is_empty())?],
    };
    let first = spec
        .pod_cidr
        .clone()
        .filter(|c| !c.is_empty())
        .or_else(|| all.first().cloned())?;
    Some((first, all.join(",")))
}

#[derive(Default)]
struct AgentState {
    runtime: RuntimeState,
    node_uid: Option<String>,
    last_report: Option<Instant>,
}

/// The node's registration, status and lease loop.
pub struct NodeAgent {
    cfg: Arc<KubeletConfig>,
    client: Client,
    runtime: Arc<dyn RuntimeService>,
    images: Arc<dyn ImageService>,
    host: HostFacts,
    state: Mutex<AgentState>,
    pod_cidr: watch::Sender<Option<String>>,
    cidr_lock: tokio::sync::Mutex<()>,
}

impl NodeAgent {
    /// A node agent for `cfg.node_name`; `host` is the machine's facts
    /// ([`HostFacts::probe`]).
    pub fn new(
        cfg: Arc<KubeletConfig>,
        client: Client,
        runtime: Arc<dyn RuntimeService>,
        images: Arc<dyn ImageService>,
        host: HostFacts,
    ) -> Arc<NodeAgent> {
        Arc::new(NodeAgent {
            cfg,
            client,
            runtime,
            images,
            host,
            state: Mutex::new(AgentState::default()),
            pod_cidr: watch::Sender::new(None),
            cidr_lock: tokio::sync::Mutex::new(()),
        })
    }

    /// The node's pod CIDR once it has one and the network is configured for it.
    pub fn pod_cidr(&self) -> watch::Receiver<Option<String>> {
        self.pod_cidr.subscribe()
    }

    fn state(&self) -> MutexGuard<'_, AgentState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Registers the node, then keeps its status and lease until `stop` turns true (or its
    /// sender is dropped). Never fails: API and runtime errors are logged and retried.
    pub async fn run(self: Arc<Self>, mut stop: watch::Receiver<bool>) -> Result<(), Error> {
        let node = tokio::select! {
            n = self.register() => n,
            () = stopped(&mut stop) => return Ok(()),
        };
        self.state().node_uid = node.metadata.uid.clone();
        self.apply_pod_cidr(&node).await;
        let lease = tokio::spawn(Arc::clone(&self).lease_loop());
        let watch = tokio::spawn(Arc::clone(&self).watch_node());
        let mut tick = tokio::time::interval(self.cfg.node_status_update_frequency);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = tick.tick() => self.sync_status().await,
                () = stopped(&mut stop) => break,
            }
        }
        lease.abort();
        watch.abort();
        tracing::info!(node = %self.cfg.node_name, "node agent stopped");
        Ok(())
    }

    /// Asks the runtime for its status, version and images (upstream's `updateRuntimeUp`
    /// plus what the status setters read).
    async fn runtime_facts(&self) -> RuntimeFacts {
        let status = match self.runtime.status(false).await {
            Ok(s) => {
                self.state().runtime.observe(&s, Timestamp::now());
                Some(s)
            }
            Err(e) => {
                tracing::warn!(error = %e, "container runtime status check failed");
                None
            }
        };
        let version = match self.runtime.version().await {
            Ok(v) => Some((v.runtime_name, v.runtime_version)),
            Err(e) => {
                tracing::warn!(error = %e, "container runtime version check failed");
                None
            }
        };
        let images = self.images.list_images(None).await.unwrap_or_else(|e| {
            tracing::warn!(error = %e, "cannot list images for the node status");
            Vec::new()
        });
        RuntimeFacts {
            state: self.state().runtime.clone(),
            version,
            images,
            status,
        }
    }

    /// Creates the Node, or reconciles the existing one; retried with back-off (100 ms
    /// doubling to 7 s, as upstream's `registerWithAPIServer`) until it works.
    async fn register(&self) -> Node {
        let api: Api<Node> = Api::all(self.client.clone());
        let name = self.cfg.node_name.as_str();
        let mut delay = Duration::from_millis(100);
        loop {
            let facts = self.runtime_facts().await;
            let node = status::initial_node(
                &self.cfg,
                &self.host,
                &facts,
                Pressures::default(),
                Timestamp::now(),
            );
            let result = match api.create(&PostParams::default(), &node).await {
                Ok(created) => {
                    tracing::info!(node = name, "successfully registered node");
                    Ok(created)
                }
                Err(e) if api_code(&e) == Some(409) => self.adopt(&api, &node).await,
                Err(e) => Err(e),
            };
            match result {
                Ok(n) => {
                    self.state().last_report = Some(Instant::now());
                    return n;
                }
                Err(e) => {
                    tracing::warn!(node = name, error = %e, "unable to register node with API server")
                }
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(7));
        }
    }

    /// The node was registered before: reconcile what the kubelet owns.
    async fn adopt(&self, api: &Api<Node>, initial: &Node) -> Result<Node, kube::Error> {
        let name = self.cfg.node_name.as_str();
        let existing = api.get(name).await?;
        tracing::info!(node = name, "node was previously registered");
        let Some(updated) = status::reconcile_existing(initial, &existing) else {
            return Ok(existing);
        };
        Ok(self
            .send_patches(api, status::node_patches(&existing, &updated))
            .await?
            .unwrap_or(existing))
    }

    /// Sends the metadata patch to the Node and the status patch to its status; returns
    /// the Node as last written.
    async fn send_patches(
        &self,
        api: &Api<Node>,
        patches: status::NodePatches,
    ) -> Result<Option<Node>, kube::Error> {
        let name = self.cfg.node_name.as_str();
        let mut last = None;
        if let Some(p) = patches.metadata {
            last = Some(
                api.patch(name, &PatchParams::default(), &Patch::Merge(&p))
                    .await?,
            );
        }
        if let Some(p) = patches.status {
            last = Some(
                api.patch_status(name, &PatchParams::default(), &Patch::Merge(&p))
                    .await?,
            );
        }
        Ok(last)
    }

    /// One status round, retried as upstream's `updateNodeStatus`.
    async fn sync_status(&self) {
        let facts = self.runtime_facts().await;
        for attempt in 0..STATUS_UPDATE_RETRIES {
            match self.try_update_status(&facts).await {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(node = %self.cfg.node_name, error = %e, attempt, "error updating node status, will retry")
                }
            }
        }
        tracing::error!(node = %self.cfg.node_name, "unable to update node status: update node status exceeds retry count");
    }

    /// Upstream's `tryUpdateNodeStatus`.
    async fn try_update_status(&self, facts: &RuntimeFacts) -> Result<(), kube::Error> {
        let api: Api<Node> = Api::all(self.client.clone());
        let name = self.cfg.node_name.as_str();
        let original = api.get(name).await?;
        let cidr_changed = self.apply_pod_cidr(&original).await;
        let mut node = original.clone();
        let labels = node.metadata.labels.get_or_insert_with(Default::default);
        let mut labels_missing = false;
        for (k, v) in [
            ("kubernetes.io/os", "linux"),
            ("kubernetes.io/arch", "amd64"),
        ] {
            if labels.get(k).map(String::as_str) != Some(v) {
                labels.insert(k.into(), v.into());
                labels_missing = true;
            }
        }
        let pressures = Pressures::default();
        status::set_node_status(
            &mut node,
            &self.cfg,
            &self.host,
            facts,
            pressures,
            Timestamp::now(),
        );
        let now = Instant::now();
        let due = self
            .state()
            .last_report
            .is_none_or(|t| now >= t + self.cfg.node_status_report_frequency);
        let changed = status::status_changed(original.status.as_ref(), node.status.as_ref());
        if !due && !cidr_changed && !changed && !labels_missing {
            return Ok(());
        }
        self.send_patches(&api, status::node_patches(&original, &node))
            .await?;
        tracing::debug!(node = name, changed, "node status posted");
        self.state().last_report = Some(now);
        Ok(())
    }

    /// Configures the pod network for the node's CIDR when it is new (upstream's
    /// `updatePodCIDR`, plus the CNI conflist containerd reads). Returns whether the CIDR
    /// changed. Failures are logged and retried on the next node event or status round.
    async fn apply_pod_cidr(&self, node: &Node) -> bool {
        let Some((first, all)) = pod_cidrs(node) else {
            return false;
        };
        let _guard = self.cidr_lock.lock().await;
        if self.pod_cidr.borrow().as_deref() == Some(first.as_str()) {
            return false;
        }
        let network = net::cni::BridgeNetwork {
            name: self.cfg.cni_network_name.clone(),
            bridge: self.cfg.cni_bridge.clone(),
            subnet: first.clone(),
            mtu: self.cfg.cni_mtu,
            hairpin: true,
        };
        let dir = self.cfg.cni_conf_dir.clone();
        let written =
            tokio::task::spawn_blocking(move || net::cni::write_conflist(&dir, &network)).await;
        match written {
            Ok(Ok(path)) => {
                tracing::info!(cidr = %first, path = %path.display(), "wrote the CNI network configuration")
            }
            Ok(Err(e)) => {
                tracing::error!(cidr = %first, error = %e, "cannot write the CNI network configuration");
                return true;
            }
            Err(e) => {
                tracing::error!(error = %e, "writing the CNI network configuration panicked");
                return true;
            }
        }
        if let Err(e) = self.runtime.update_pod_cidr(&all).await {
            tracing::error!(cidr = %all, error = %e, "failed to update pod CIDR");
            return true;
        }
        let old = self.pod_cidr.send_replace(Some(first.clone()));
        tracing::info!(original = ?old, new = %first, "updating pod CIDR");
        true
    }

    /// Follows the node's own object for its pod CIDR.
    async fn watch_node(self: Arc<Self>) {
        let api: Api<Node> = Api::all(self.client.clone());
        let config =
            watcher::Config::default().fields(&format!("metadata.name={}", self.cfg.node_name));
        let stream = watcher(api, config).default_backoff();
        let mut stream = std::pin::pin!(stream);
        while let Some(event) = stream.next().await {
            match event {
                Ok(watcher::Event::Apply(n) | watcher::Event::InitApply(n)) => {
                    self.apply_pod_cidr(&n).await;
                }
                Ok(_) => {}
                Err(e) => tracing::debug!(error = %e, "node watch error; backing off"),
            }
        }
    }

    /// Keeps the node's Lease renewed (upstream's lease controller `sync`).
    async fn lease_loop(self: Arc<Self>) {
        let api: Api<Lease> = Api::namespaced(self.client.clone(), lease::LEASE_NAMESPACE);
        let interval = lease::renew_interval(self.cfg.node_lease_duration_seconds);
        let mut latest: Option<Lease> = None;
        let mut ensure_delay = Duration::from_millis(200);
        loop {
            if latest.is_none() {
                match self.ensure_lease(&api).await {
                    Ok(l) => {
                        latest = Some(l);
                        ensure_delay = Duration::from_millis(200);
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, "failed to ensure the node lease exists, will retry");
                        tokio::time::sleep(ensure_delay).await;
                        ensure_delay = (ensure_delay * 2).min(Duration::from_secs(7));
                        continue;
                    }
                }
            } else {
                latest = self.renew_lease(&api, latest.take()).await;
            }
            tokio::time::sleep(interval).await;
        }
    }

    /// Gets the lease, creating it when missing.
    async fn ensure_lease(&self, api: &Api<Lease>) -> Result<Lease, kube::Error> {
        let name = self.cfg.node_name.as_str();
        match api.get(name).await {
            Ok(l) => Ok(l),
            Err(e) if api_code(&e) == Some(404) => {
                let uid = self.state().node_uid.clone();
                let l = lease::new_lease(
                    None,
                    name,
                    self.cfg.node_lease_duration_seconds,
                    uid.as_deref(),
                    Timestamp::now(),
                );
                api.create(&PostParams::default(), &l).await
            }
            Err(e) => Err(e),
        }
    }

    /// Renews `latest` (a conflict re-reads it; a missing lease is created next round).
    /// Returns the lease to renew next time.
    async fn renew_lease(&self, api: &Api<Lease>, latest: Option<Lease>) -> Option<Lease> {
        let name = self.cfg.node_name.as_str();
        let mut base = latest;
        for attempt in 0..LEASE_UPDATE_RETRIES {
            let uid = self.state().node_uid.clone();
            let l = lease::new_lease(
                base.as_ref(),
                name,
                self.cfg.node_lease_duration_seconds,
                uid.as_deref(),
                Timestamp::now(),
            );
            match api.replace(name, &PostParams::default(), &l).await {
                Ok(updated) => return Some(updated),
                Err(e) if api_code(&e) == Some(409) => {
                    tracing::debug!(attempt, "node lease conflict; re-reading it");
                    base = match api.get(name).await {
                        Ok(fresh) => Some(fresh),
                        Err(e) if api_code(&e) == Some(404) => return None,
                        Err(_) => base,
                    };
                }
                Err(e) if api_code(&e) == Some(404) => return None,
                Err(e) => {
                    tracing::warn!(error = %e, attempt, "failed to update the node lease, will retry")
                }
            }
        }
        tracing::error!("failed to update the node lease after {LEASE_UPDATE_RETRIES} tries");
        base
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::NodeSpec;

    #[test]
    fn cidrs_of_a_node() {
        let mut n = Node::default();
        assert_eq!(pod_cidrs(&n), None);
        n.spec = Some(NodeSpec {
            pod_cidr: Some("10.42.1.0/24".into()),
            ..Default::default()
        });
        assert_eq!(
            pod_cidrs(&n),
            Some(("10.42.1.0/24".into(), "10.42.1.0/24".into()))
        );
        n.spec = Some(NodeSpec {
            pod_cidr: Some("10.42.1.0/24".into()),
            pod_cidrs: Some(vec!["10.42.1.0/24".into(), "fd00:1::/64".into()]),
            ..Default::default()
        });
        assert_eq!(
            pod_cidrs(&n),
            Some(("10.42.1.0/24".into(), "10.42.1.0/24,fd00:1::/64".into()))
        );
        n.spec = Some(NodeSpec {
            pod_cidr: Some(String::new()),
            ..Default::default()
        });
        assert_eq!(pod_cidrs(&n), None);
    }
}
