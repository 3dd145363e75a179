//! The pod lifecycle over CRI (upstream's `Kubelet.SyncPod` / `SyncTerminatingPod` /
//! `SyncTerminatedPod` with `kubeGenericRuntimeManager.SyncPod`, `startContainer`,
//! `killContainer`, `killPodWithSyncResult`, the image manager and the lifecycle hooks),
//! and the per-pod worker task that serializes them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use cri::v1;
use cri::{ImageService, RuntimeService};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    ConfigMap, Container, LifecycleHandler, Node, ObjectReference, Pod, PodStatus, Secret, Service,
};
use kube::Api;
use runtime::events::{Clock, EventType, Recorder, object_reference};
use tokio::sync::{Notify, watch};
use tracing::Instrument;

use super::actions::{ProbeFailures, compute_pod_actions};
use super::admission::Allocatable;
use super::backoff::{Backoff, go_duration};
use super::env::{EnvInputs, make_environment, references};
use super::images::{PullDecision, credentials, credentials_for, pull_decision};
use super::probes::{Kind, ProbeManager};
use super::runtime::{self as rt, ContainerState, ContainerStatus, RuntimePodStatus};
use super::spec::{
    ContainerInputs, SandboxInputs, container_config, container_hash, format_pod, pod_name,
    pod_namespace, pod_uid, sandbox_config,
};
use super::status::{StartFailure, StatusInputs, generate_pod_status};
use super::statusmgr::StatusManager;
use crate::volumes::container::{MountContext, container_mounts, prepare_container_mounts};
use crate::{CgroupManager, Error, KubeletConfig, VolumeManager};

/// The minimum grace period of a container stop (`minimumGracePeriodInSeconds`).
const MIN_GRACE: i64 = 2;
/// Retry delay of a failed sync (upstream's `backOffPeriod` of the pod workers).
const SYNC_ERROR_RETRY: Duration = Duration::from_secs(5);

/// The shared state of the pod lifecycle.
pub(crate) struct Kubelet {
    pub config: Arc<KubeletConfig>,
    pub client: kube::Client,
    pub runtime: Arc<dyn RuntimeService>,
    pub images: Arc<dyn ImageService>,
    pub volumes: Arc<dyn VolumeManager>,
    pub cgroups: Arc<dyn CgroupManager>,
    pub clock: Clock,
    pub recorder: Recorder,
    pub status: StatusManager,
    pub probes: ProbeManager,
    pub services: RwLock<BTreeMap<String, Service>>,
    pub node: RwLock<Option<Node>>,
    pub runtime_name: String,
    pub node_etc_hosts: String,
    pub state: Mutex<State>,
    pub wakers: Arc<Mutex<HashMap<String, Arc<Notify>>>>,
    /// Per-stage start-up timings (`kubelet_pod_start_stage_duration_seconds`).
    pub metrics: Arc<super::metrics::Metrics>,
}

#[derive(Default)]
pub(crate) struct State {
    pub restart_backoff: Backoff,
    pub pull_backoff: Backoff,
    /// Per pod uid: container name → last start failure.
    pub reasons: HashMap<String, BTreeMap<String, StartFailure>>,
}

/// Where a pod worker is in the pod's life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Phase {
    Sync,
    Terminating,
    Terminated,
    /// Terminated and cleaned up (or rejected): waits for the pod's deletion.
    Done,
}

/// What a successful sync asks of the worker.
#[derive(Debug, Default)]
pub(crate) struct SyncOutcome {
    pub terminal: bool,
    pub retry_after: Option<Duration>,
}

fn container_ref(pod: &Pod, c_name: &str, init: bool) -> ObjectReference {
    let mut r = object_reference(pod);
    r.field_path = Some(if init {
        format!("spec.initContainers{{{c_name}}}")
    } else {
        format!("spec.containers{{{c_name}}}")
    });
    r
}

fn spec_container<'a>(pod: &'a Pod, name: &str) -> Option<(&'a Container, bool)> {
    let spec = pod.spec.as_ref()?;
    spec.containers
        .iter()
        .find(|c| c.name == name)
        .map(|c| (c, false))
        .or_else(|| {
            spec.init_containers
                .iter()
                .flatten()
                .find(|c| c.name == name)
                .map(|c| (c, true))
        })
}

fn since(now: Timestamp, t: Timestamp) -> Duration {
    let d = now.as_nanosecond() - t.as_nanosecond();
    Duration::from_nanos(u64::try_from(d.max(0)).unwrap_or(u64::MAX))
}

fn is_terminal_phase(p: Option<&str>) -> bool {
    matches!(p, Some("Succeeded" | "Failed"))
}

impl Kubelet {
    fn st(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn now(&self) -> Timestamp {
        (self.clock)()
    }

    fn event(&self, r: &ObjectReference, t: EventType, reason: &str, message: &str) {
        self.recorder.event(r, t, reason, message);
    }

    fn host_ips(&self) -> Vec<String> {
        vec![self.config.node_ip.to_string()]
    }

    pub fn allocatable(&self) -> Allocatable {
        let node = self.node.read().unwrap_or_else(|e| e.into_inner());
        Allocatable::of(node.as_ref(), self.config.max_pods)
    }

    fn memory_capacity(&self) -> i64 {
        let node = self.node.read().unwrap_or_else(|e| e.into_inner());
        let q = node
            .as_ref()
            .and_then(|n| n.status.as_ref())
            .and_then(|s| s.capacity.as_ref())
            .and_then(|c| c.get("memory"))
            .and_then(|q| api::kinds::validate::quantity::Quantity::parse(&q.0).ok());
        q.map_or(i64::MAX, |q| q.value())
    }

    /// The probe verdicts that drive the status and the actions.
    fn probe_views(&self, pod: &Pod, rs: &RuntimePodStatus) -> (StatusInputs, ProbeFailures) {
        let mut inputs = StatusInputs::default();
        let mut failures = ProbeFailures::default();
        for cs in rs
            .containers
            .iter()
            .filter(|c| c.state == ContainerState::Running)
        {
            let Some((c, _)) = spec_container(pod, &cs.name) else {
                continue;
            };
            if c.readiness_probe.is_some() {
                inputs.has_readiness.insert(cs.id.clone());
                if self.probes.get(&cs.id, Kind::Readiness) == Some(true) {
                    inputs.ready.insert(cs.id.clone());
                }
            }
            if c.startup_probe.is_some() {
                match self.probes.get(&cs.id, Kind::Startup) {
                    Some(true) => {}
                    Some(false) => {
                        inputs.not_started.insert(cs.id.clone());
                        failures.startup.insert(cs.id.clone());
                        failures.startup_pending.insert(cs.id.clone());
                    }
                    None => {
                        inputs.not_started.insert(cs.id.clone());
                        failures.startup_pending.insert(cs.id.clone());
                    }
                }
            }
            if c.liveness_probe.is_some() && self.probes.get(&cs.id, Kind::Liveness) == Some(false)
            {
                failures.liveness.insert(cs.id.clone());
            }
        }
        (inputs, failures)
    }

    pub fn generate(&self, pod: &Pod, rs: &RuntimePodStatus, terminal: bool) -> PodStatus {
        let uid = pod_uid(pod);
        let (mut inputs, _) = self.probe_views(pod, rs);
        inputs.old = self.status.get(uid).or_else(|| pod.status.clone());
        inputs.reasons = self.st().reasons.get(uid).cloned().unwrap_or_default();
        inputs.host_ips = self.host_ips();
        inputs.runtime_name = self.runtime_name.clone();
        inputs.terminal = terminal;
        inputs.now = Some(self.now());
        generate_pod_status(pod, rs, &inputs)
    }

    async fn read(&self, pod: &Pod) -> Result<RuntimePodStatus, Error> {
        rt::pod_status(
            self.runtime.as_ref(),
            pod_uid(pod),
            pod_name(pod),
            pod_namespace(pod),
        )
        .await
    }

    fn set_reason(&self, pod: &Pod, container: &str, failure: Option<StartFailure>) {
        let mut st = self.st();
        let m = st.reasons.entry(pod_uid(pod).to_string()).or_default();
        match failure {
            Some(f) => {
                m.insert(container.to_string(), f);
            }
            None => {
                m.remove(container);
            }
        }
    }

    /// The `activeDeadlineSeconds` check (`pastActiveDeadline`).
    fn past_deadline(&self, pod: &Pod) -> bool {
        let Some(deadline) = pod.spec.as_ref().and_then(|s| s.active_deadline_seconds) else {
            return false;
        };
        let start = self
            .status
            .get(pod_uid(pod))
            .and_then(|s| s.start_time)
            .or_else(|| pod.status.as_ref().and_then(|s| s.start_time.clone()));
        let Some(start) = start else { return false };
        since(self.now(), start.0)
            >= Duration::from_secs(u64::try_from(deadline.max(0)).unwrap_or(0))
    }

    /// One `SyncPod`.
    pub async fn sync_pod(&self, pod: &Pod) -> Result<SyncOutcome, Error> {
        let span = tracing::info_span!(
            "sync_pod",
            pod = %format!("{}/{}", pod_namespace(pod), pod_name(pod)),
            uid = %pod_uid(pod)
        );
        self.sync_pod_inner(pod).instrument(span).await
    }

    async fn sync_pod_inner(&self, pod: &Pod) -> Result<SyncOutcome, Error> {
        let sync_started = std::time::Instant::now();
        let rs = self.read(pod).await?;
        if self.past_deadline(pod) {
            let message = "Pod was active on the node longer than the specified deadline";
            self.event(
                &object_reference(pod),
                EventType::Normal,
                "DeadlineExceeded",
                message,
            );
            let mut s = self.generate(pod, &rs, true);
            s.phase = Some("Failed".into());
            s.reason = Some("DeadlineExceeded".into());
            s.message = Some(message.into());
            self.status.set(pod, s);
            return Ok(SyncOutcome {
                terminal: true,
                retry_after: None,
            });
        }
        let status = self.generate(pod, &rs, false);
        let terminal = is_terminal_phase(status.phase.as_deref());
        self.status.set(pod, status);
        if terminal {
            return Ok(SyncOutcome {
                terminal: true,
                retry_after: None,
            });
        }
        let uid = pod_uid(pod);
        let pod_dir = self.config.pod_dir(uid);
        std::fs::create_dir_all(&pod_dir).map_err(|source| Error::Io {
            path: pod_dir.clone(),
            source,
        })?;
        let setup_started = std::time::Instant::now();
        let cgroup_parent = self.cgroups.ensure_pod(pod)?;
        let volumes = match self.volumes.setup(pod).await {
            Ok(v) => v,
            Err(e) => {
                self.event(
                    &object_reference(pod),
                    EventType::Warning,
                    "FailedMount",
                    &format!("Unable to attach or mount volumes: {e}"),
                );
                return Err(e);
            }
        };
        if rs.sandboxes.is_empty() {
            self.metrics.observe_stage("setup", setup_started.elapsed());
        }
        self.probes.sync(pod, &rs);
        let (_, failures) = self.probe_views(pod, &rs);
        let actions = compute_pod_actions(pod, &rs, &failures);
        tracing::debug!(?actions, "pod actions");
        let mut changed = false;
        if actions.create_sandbox && !actions.sandbox_id.is_empty() {
            self.event(
                &object_reference(pod),
                EventType::Normal,
                "SandboxChanged",
                "Pod sandbox changed, it will be killed and re-created.",
            );
        }
        if actions.kill_pod {
            if !rs.sandboxes.is_empty() || rs.running().next().is_some() {
                self.kill_pod(pod, &rs, None).await?;
                changed = true;
            }
            if actions.create_sandbox {
                // Init containers run again in the new sandbox.
                for cs in &rs.containers {
                    if spec_container(pod, &cs.name).is_some_and(|(_, init)| init) {
                        let _ = self.runtime.remove_container(&cs.id).await;
                    }
                }
            }
        } else {
            for (id, k) in &actions.containers_to_kill {
                if let Some(cs) = rs.containers.iter().find(|c| c.id == *id) {
                    let spec = spec_container(pod, &k.name).map(|(c, _)| c);
                    let grace = match k.reason {
                        super::actions::KillReason::LivenessProbe => spec
                            .and_then(|c| c.liveness_probe.as_ref())
                            .and_then(|p| p.termination_grace_period_seconds),
                        super::actions::KillReason::StartupProbe => spec
                            .and_then(|c| c.startup_probe.as_ref())
                            .and_then(|p| p.termination_grace_period_seconds),
                        _ => None,
                    };
                    self.kill_container(pod, spec, cs, Some(&k.message), grace)
                        .await?;
                    changed = true;
                }
            }
        }
        if !actions.create_sandbox && actions.kill_pod {
            // Nothing left to run (a finished pod): the status says so next time.
            let rs = self.read(pod).await?;
            let status = self.generate(pod, &rs, false);
            let terminal = is_terminal_phase(status.phase.as_deref());
            self.status.set(pod, status);
            return Ok(SyncOutcome {
                terminal,
                retry_after: None,
            });
        }
        let mut sandbox_id = actions.sandbox_id.clone();
        let mut pod_ips = rs.ips();
        let host_network = super::actions::is_host_network(pod);
        let dns = self.dns_config(pod);
        let sandbox_cfg = sandbox_config(
            pod,
            &SandboxInputs {
                attempt: actions.attempt,
                cluster_domain: self.config.cluster_domain.clone(),
                pod_log_root: self.config.pod_log_dir.clone(),
                dns,
                cgroup_parent,
                seccomp_profile_root: self
                    .config
                    .root_dir
                    .join("seccomp")
                    .to_string_lossy()
                    .into_owned(),
            },
        );
        if actions.create_sandbox {
            let log_dir = std::path::PathBuf::from(&sandbox_cfg.log_directory);
            std::fs::create_dir_all(&log_dir).map_err(|source| Error::Io {
                path: log_dir.clone(),
                source,
            })?;
            let sandbox_started = std::time::Instant::now();
            match self
                .runtime
                .run_pod_sandbox(&sandbox_cfg, &self.config.runtime_handler)
                .await
            {
                Ok(id) => {
                    tracing::info!(sandbox = %id, "sandbox created");
                    sandbox_id = id;
                    changed = true;
                }
                Err(e) => {
                    self.event(
                        &object_reference(pod),
                        EventType::Warning,
                        "FailedCreatePodSandBox",
                        &format!("Failed to create pod sandbox: {e}"),
                    );
                    return Err(e.into());
                }
            }
            pod_ips = match self.runtime.pod_sandbox_status(&sandbox_id, false).await {
                Ok(r) => r
                    .status
                    .map(|s| rt::sandbox_from_cri(&s).ips)
                    .unwrap_or_default(),
                Err(e) => {
                    tracing::warn!(error = %e, "reading the new sandbox's status");
                    Vec::new()
                }
            };
            self.metrics
                .observe_stage("sandbox", sandbox_started.elapsed());
        }
        if host_network {
            pod_ips = self.host_ips();
        }
        let ctx = StartContext {
            sandbox_id: &sandbox_id,
            sandbox_cfg: &sandbox_cfg,
            pod_ips: &pod_ips,
            volumes: &volumes,
            rs: &rs,
        };
        let mut retry_after: Option<Duration> = None;
        let mut note_retry = |d: Duration| {
            retry_after = Some(retry_after.map_or(d, |r| r.min(d)));
        };
        let inits = pod
            .spec
            .as_ref()
            .and_then(|s| s.init_containers.as_deref())
            .unwrap_or(&[]);
        for i in &actions.sidecars_to_start {
            if let Some(c) = inits.get(*i) {
                match self.start_with_backoff(pod, c, true, &ctx).await {
                    Ok(()) => changed = true,
                    Err(d) => note_retry(d),
                }
            }
        }
        if let Some(i) = actions.next_init_container {
            if let Some(c) = pod
                .spec
                .as_ref()
                .and_then(|s| s.init_containers.as_ref())
                .and_then(|v| v.get(i))
            {
                match self.start_with_backoff(pod, c, true, &ctx).await {
                    Ok(()) => changed = true,
                    Err(d) => note_retry(d),
                }
            }
        } else {
            for i in &actions.containers_to_start {
                if let Some(c) = pod.spec.as_ref().and_then(|s| s.containers.get(*i)) {
                    match self.start_with_backoff(pod, c, false, &ctx).await {
                        Ok(()) => changed = true,
                        Err(d) => note_retry(d),
                    }
                }
            }
        }
        self.gc_containers(pod, &rs).await;
        // The new state, at once rather than at the next relist.
        let rs = self.read(pod).await?;
        if changed {
            self.probes.sync(pod, &rs);
        }
        let status = self.generate(pod, &rs, false);
        self.status.set(pod, status);
        if actions.create_sandbox {
            self.metrics.observe_stage("sync", sync_started.elapsed());
        }
        Ok(SyncOutcome {
            terminal: false,
            retry_after,
        })
    }

    fn dns_config(&self, pod: &Pod) -> Option<v1::DnsConfig> {
        let spec = pod.spec.as_ref()?;
        let resolv = std::fs::read_to_string(&self.config.resolv_conf).ok();
        let pod_dns = spec.dns_config.as_ref().map(|d| net::dns::PodDnsConfig {
            nameservers: d.nameservers.clone().unwrap_or_default(),
            searches: d.searches.clone().unwrap_or_default(),
            options: d
                .options
                .iter()
                .flatten()
                .map(|o| (o.name.clone().unwrap_or_default(), o.value.clone()))
                .collect(),
        });
        let node_ips = [self.config.node_ip];
        let inputs = net::dns::DnsInputs {
            namespace: pod_namespace(pod),
            dns_policy: spec.dns_policy.as_deref().unwrap_or("ClusterFirst"),
            host_network: spec.host_network.unwrap_or(false),
            dns_config: pod_dns.as_ref(),
            cluster_dns: &self.config.cluster_dns,
            cluster_domain: &self.config.cluster_domain,
            resolv_conf: Some(resolv.as_deref().unwrap_or("")),
            node_ips: &node_ips,
        };
        match net::dns::pod_dns(&inputs) {
            Ok(d) => {
                for w in &d.warnings {
                    self.event(
                        &object_reference(pod),
                        EventType::Warning,
                        w.reason,
                        &w.message,
                    );
                }
                Some(v1::DnsConfig {
                    servers: d.servers,
                    searches: d.searches,
                    options: d.options,
                })
            }
            Err(e) => {
                self.event(
                    &object_reference(pod),
                    EventType::Warning,
                    "DNSConfigForming",
                    &format!("Failed to get DNS configuration for pod: {e}"),
                );
                None
            }
        }
    }

    /// `doBackOff` then `startContainer`; `Err` carries when to try again.
    async fn start_with_backoff(
        &self,
        pod: &Pod,
        c: &Container,
        init: bool,
        ctx: &StartContext<'_>,
    ) -> Result<(), Duration> {
        let key = format!("{}_{}_{}", pod_uid(pod), c.name, container_hash(c));
        let now = self.now();
        if let Some(exited) = ctx
            .rs
            .containers
            .iter()
            .find(|s| s.name == c.name && s.state == ContainerState::Exited)
        {
            let finished = exited.finished_at.unwrap_or(now);
            let mut st = self.st();
            if st.restart_backoff.in_backoff_since(&key, finished, now) {
                let delay = st.restart_backoff.get(&key);
                drop(st);
                self.event(
                    &container_ref(pod, &c.name, init),
                    EventType::Warning,
                    "BackOff",
                    &format!(
                        "Back-off restarting failed container {} in pod {}",
                        c.name,
                        format_pod(pod)
                    ),
                );
                self.set_reason(
                    pod,
                    &c.name,
                    Some(StartFailure {
                        reason: "CrashLoopBackOff".into(),
                        message: format!(
                            "back-off {} restarting failed container={} pod={}",
                            go_duration(delay),
                            c.name,
                            format_pod(pod)
                        ),
                    }),
                );
                let left = delay.saturating_sub(since(now, finished));
                return Err(left.max(Duration::from_millis(100)));
            }
            st.restart_backoff.next(&key, finished, now);
        }
        match self.start_container(pod, c, init, ctx).await {
            Ok(()) => {
                self.set_reason(pod, &c.name, None);
                Ok(())
            }
            Err(f) => {
                tracing::info!(container = %c.name, reason = %f.reason, message = %f.message, "container start failed");
                let retry = if f.reason == "ImagePullBackOff" || f.reason == "ErrImagePull" {
                    let img_key = format!(
                        "{}_{}",
                        pod_uid(pod),
                        c.image.as_deref().unwrap_or_default()
                    );
                    self.st()
                        .pull_backoff
                        .get(&img_key)
                        .max(Duration::from_secs(1))
                } else {
                    SYNC_ERROR_RETRY
                };
                self.set_reason(pod, &c.name, Some(f));
                Err(retry)
            }
        }
    }

    /// `EnsureImageExists`: the image reference to run, or the failure.
    async fn ensure_image(
        &self,
        pod: &Pod,
        c: &Container,
        r: &ObjectReference,
        sandbox_cfg: &v1::PodSandboxConfig,
    ) -> Result<String, StartFailure> {
        let image = c.image.clone().unwrap_or_default();
        if image.is_empty() {
            return Err(StartFailure {
                reason: "InvalidImageName".into(),
                message: "Failed to apply default image tag \"\": couldn't parse image name \"\": invalid reference format".into(),
            });
        }
        let spec = v1::ImageSpec {
            image: image.clone(),
            user_specified_image: image.clone(),
            ..Default::default()
        };
        let present = match self.images.image_status(&spec).await {
            Ok(p) => p,
            Err(e) => {
                self.event(
                    r,
                    EventType::Warning,
                    "Failed",
                    &format!("Failed to inspect image \"{image}\": {e}"),
                );
                return Err(StartFailure {
                    reason: "ImageInspectError".into(),
                    message: format!("Failed to inspect image \"{image}\": {e}"),
                });
            }
        };
        match pull_decision(&image, c.image_pull_policy.as_deref(), present.is_some()) {
            PullDecision::UsePresent => {
                self.event(
                    r,
                    EventType::Normal,
                    "Pulled",
                    &format!("Container image \"{image}\" already present on machine"),
                );
                Ok(present.map(|p| p.id).unwrap_or(image))
            }
            PullDecision::NeverPull(msg) => {
                self.event(r, EventType::Warning, "ErrImageNeverPull", &msg);
                Err(StartFailure {
                    reason: "ErrImageNeverPull".into(),
                    message: msg,
                })
            }
            PullDecision::Pull => {
                let key = format!("{}_{}", pod_uid(pod), image);
                let now = self.now();
                if self.st().pull_backoff.in_backoff_since_update(&key, now) {
                    let msg = format!("Back-off pulling image \"{image}\"");
                    self.event(r, EventType::Normal, "BackOff", &msg);
                    return Err(StartFailure {
                        reason: "ImagePullBackOff".into(),
                        message: msg,
                    });
                }
                self.event(
                    r,
                    EventType::Normal,
                    "Pulling",
                    &format!("Pulling image \"{image}\""),
                );
                let secrets = self.pull_secrets(pod).await;
                let creds = credentials_for(&image, &credentials(&secrets));
                let started = std::time::Instant::now();
                let mut result = Err(String::new());
                let attempts: Vec<Option<v1::AuthConfig>> = if creds.is_empty() {
                    vec![None]
                } else {
                    creds.iter().map(|c| Some(c.auth_config())).collect()
                };
                for auth in attempts {
                    match self.images.pull_image(&spec, auth, Some(sandbox_cfg)).await {
                        Ok(id) => {
                            result = Ok(id);
                            break;
                        }
                        Err(e) => result = Err(e.to_string()),
                    }
                }
                match result {
                    Ok(id) => {
                        let took = started.elapsed();
                        let size = match self.images.image_status(&spec).await {
                            Ok(Some(i)) => i.size,
                            _ => 0,
                        };
                        let took =
                            Duration::from_millis(u64::try_from(took.as_millis()).unwrap_or(0));
                        self.event(
                            r,
                            EventType::Normal,
                            "Pulled",
                            &format!(
                                "Successfully pulled image \"{image}\" in {} ({} including waiting). Image size: {size} bytes.",
                                go_duration(took),
                                go_duration(took)
                            ),
                        );
                        self.st().pull_backoff.gc(now);
                        Ok(id)
                    }
                    Err(e) => {
                        self.event(
                            r,
                            EventType::Warning,
                            "Failed",
                            &format!("Failed to pull image \"{image}\": {e}"),
                        );
                        self.st().pull_backoff.next(&key, now, now);
                        Err(StartFailure {
                            reason: "ErrImagePull".into(),
                            message: e,
                        })
                    }
                }
            }
        }
    }

    async fn pull_secrets(&self, pod: &Pod) -> Vec<Secret> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), pod_namespace(pod));
        let mut out = Vec::new();
        for r in pod
            .spec
            .as_ref()
            .and_then(|s| s.image_pull_secrets.as_ref())
            .into_iter()
            .flatten()
        {
            let name = r.name.clone();
            if name.is_empty() {
                continue;
            }
            match api.get_opt(&name).await {
                Ok(Some(s)) => out.push(s),
                Ok(None) => tracing::warn!(secret = %name, "image pull secret not found"),
                Err(e) => {
                    tracing::warn!(secret = %name, error = %e, "reading an image pull secret")
                }
            }
        }
        out
    }

    async fn env_inputs(
        &self,
        pod: &Pod,
        c: &Container,
        pod_ips: &[String],
    ) -> Result<EnvInputs<'static>, String> {
        let refs = references(c);
        let ns = pod_namespace(pod);
        let cms: Api<ConfigMap> = Api::namespaced(self.client.clone(), ns);
        let secrets: Api<Secret> = Api::namespaced(self.client.clone(), ns);
        let mut inputs = EnvInputs::default();
        for name in &refs.config_maps {
            if let Some(cm) = cms.get_opt(name).await.map_err(|e| e.to_string())? {
                inputs.config_maps.insert(name.clone(), cm);
            }
        }
        for name in &refs.secrets {
            if let Some(s) = secrets.get_opt(name).await.map_err(|e| e.to_string())? {
                inputs.secrets.insert(name.clone(), s);
            }
        }
        inputs.pod_ips = pod_ips.to_vec();
        inputs.host_ips = self.host_ips();
        let alloc = self.allocatable();
        inputs.node_cpu_milli = alloc.cpu_milli;
        inputs.node_memory = alloc.memory;
        Ok(inputs)
    }

    /// `startContainer`.
    async fn start_container(
        &self,
        pod: &Pod,
        c: &Container,
        init: bool,
        ctx: &StartContext<'_>,
    ) -> Result<(), StartFailure> {
        let r = container_ref(pod, &c.name, init);
        let image_started = std::time::Instant::now();
        let image_ref = match self.ensure_image(pod, c, &r, ctx.sandbox_cfg).await {
            Ok(i) => {
                self.metrics.observe_stage("image", image_started.elapsed());
                i
            }
            Err(f) => {
                self.event(
                    &r,
                    EventType::Warning,
                    "Failed",
                    &format!("Error: {}", f.reason),
                );
                return Err(f);
            }
        };
        // The container's log directory (the runtime writes `<n>.log` into it); without a
        // previous instance, the restart count continues from the logs left there.
        let logs = std::path::Path::new(&ctx.sandbox_cfg.log_directory).join(&c.name);
        if let Err(e) = std::fs::create_dir_all(&logs) {
            tracing::warn!(dir = %logs.display(), error = %e, "creating the container log directory");
        }
        let restart_count = match ctx.rs.find(&c.name) {
            Some(s) => s.restart_count + 1,
            None => restart_count_from_logs(&logs),
        };
        let config_error = |message: String| {
            self.event(
                &r,
                EventType::Warning,
                "Failed",
                &format!("Error: {message}"),
            );
            StartFailure {
                reason: "CreateContainerConfigError".into(),
                message,
            }
        };
        let env_inputs = self
            .env_inputs(pod, c, ctx.pod_ips)
            .await
            .map_err(config_error)?;
        let services: Vec<Service> = self
            .services
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .cloned()
            .collect();
        let env = {
            let inputs = EnvInputs {
                services: &services,
                ..env_inputs
            };
            make_environment(pod, c, &inputs).map_err(config_error)?
        };
        for w in &env.warnings {
            self.event(
                &object_reference(pod),
                EventType::Warning,
                "InvalidEnvironmentVariableNames",
                w,
            );
        }
        let pod_dir = self.config.pod_dir(pod_uid(pod));
        let mount_ctx = MountContext {
            pod_dir: &pod_dir,
            pod_ips: ctx.pod_ips,
            cluster_domain: &self.config.cluster_domain,
            node_etc_hosts: &self.node_etc_hosts,
            restart_count: u32::try_from(restart_count).unwrap_or(0),
            env: Some(&env.vars),
            runtime_supports_recursive_read_only: false,
        };
        let mounts = container_mounts(pod, c, ctx.volumes, &mount_ctx)
            .and_then(prepare_container_mounts)
            .map_err(|e| config_error(e.to_string()))?;
        let config = container_config(
            pod,
            c,
            &ContainerInputs {
                restart_count,
                image_ref,
                envs: env.vars,
                mounts: mounts.iter().map(|m| m.to_cri()).collect(),
                memory_capacity: self.memory_capacity(),
                seccomp_profile_root: self
                    .config
                    .root_dir
                    .join("seccomp")
                    .to_string_lossy()
                    .into_owned(),
                init,
            },
        );
        let create_started = std::time::Instant::now();
        let id = match self
            .runtime
            .create_container(ctx.sandbox_id, &config, ctx.sandbox_cfg)
            .await
        {
            Ok(id) => {
                self.metrics
                    .observe_stage("create", create_started.elapsed());
                id
            }
            Err(e) => {
                let message = e.to_string();
                self.event(
                    &r,
                    EventType::Warning,
                    "Failed",
                    &format!("Error: {message}"),
                );
                return Err(StartFailure {
                    reason: "CreateContainerError".into(),
                    message,
                });
            }
        };
        self.event(
            &r,
            EventType::Normal,
            "Created",
            &format!("Created container: {}", c.name),
        );
        let start_started = std::time::Instant::now();
        if let Err(e) = self.runtime.start_container(&id).await {
            let message = e.to_string();
            self.event(
                &r,
                EventType::Warning,
                "Failed",
                &format!("Error: {message}"),
            );
            return Err(StartFailure {
                reason: "RunContainerError".into(),
                message,
            });
        }
        self.metrics.observe_stage("start", start_started.elapsed());
        self.event(
            &r,
            EventType::Normal,
            "Started",
            &format!("Started container {}", c.name),
        );
        if let Some(hook) = c.lifecycle.as_ref().and_then(|l| l.post_start.as_ref()) {
            let ip = ctx.pod_ips.first().cloned().unwrap_or_default();
            if let Err(msg) = self.run_hook(pod, c, &id, hook, &ip, None).await {
                // Not the message itself: it could carry secrets (as upstream).
                self.event(
                    &r,
                    EventType::Warning,
                    "FailedPostStartHook",
                    "PostStartHook failed",
                );
                let cs = ContainerStatus {
                    id: id.clone(),
                    name: c.name.clone(),
                    state: ContainerState::Running,
                    created_at: None,
                    started_at: None,
                    finished_at: None,
                    exit_code: 0,
                    image: String::new(),
                    image_ref: String::new(),
                    reason: String::new(),
                    message: String::new(),
                    hash: String::new(),
                    restart_count,
                    sandbox_id: ctx.sandbox_id.to_string(),
                    annotations: BTreeMap::new(),
                    termination_message_host_path: None,
                    log_path: String::new(),
                };
                let _ = self
                    .kill_container(pod, Some(c), &cs, Some("FailedPostStartHook"), None)
                    .await;
                return Err(StartFailure {
                    reason: "PostStartHookError".into(),
                    message: msg,
                });
            }
        }
        Ok(())
    }

    /// Runs a lifecycle handler (exec, httpGet, sleep) in the container; the error is
    /// upstream's event message.
    async fn run_hook(
        &self,
        pod: &Pod,
        c: &Container,
        container_id: &str,
        h: &LifecycleHandler,
        pod_ip: &str,
        timeout: Option<Duration>,
    ) -> Result<(), String> {
        if let Some(exec) = &h.exec {
            let cmd = exec.command.clone().unwrap_or_default();
            let res = self
                .runtime
                .exec_sync(container_id, cmd.clone(), timeout.unwrap_or(Duration::ZERO))
                .await;
            let fail = |err: String, out: String| {
                format!(
                    "Exec lifecycle hook ([{}]) for Container \"{}\" in Pod \"{}\" failed - error: {err}, message: \"{out}\"",
                    cmd.join(" "),
                    c.name,
                    format_pod(pod)
                )
            };
            return match res {
                Ok(r) if r.exit_code == 0 => Ok(()),
                Ok(r) => {
                    let mut out = String::from_utf8_lossy(&r.stdout).into_owned();
                    out.push_str(&String::from_utf8_lossy(&r.stderr));
                    Err(fail(
                        format!(
                            "command '{}' exited with {}: {}",
                            cmd.join(" "),
                            r.exit_code,
                            String::from_utf8_lossy(&r.stderr)
                        ),
                        out,
                    ))
                }
                Err(e) => Err(fail(e.to_string(), String::new())),
            };
        }
        if let Some(hg) = &h.http_get {
            let path = hg.path.clone().unwrap_or_else(|| "/".into());
            let host = hg
                .host
                .clone()
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| pod_ip.to_string());
            let probe = k8s_openapi::api::core::v1::Probe {
                http_get: Some(hg.clone()),
                timeout_seconds: Some(
                    i32::try_from(timeout.map_or(10, |t| t.as_secs().max(1))).unwrap_or(10),
                ),
                ..Default::default()
            };
            return match super::probes::run_probe(
                &probe,
                c,
                container_id,
                &host,
                self.runtime.as_ref(),
            )
            .await
            {
                super::probes::Outcome::Success => Ok(()),
                super::probes::Outcome::Failure(e) | super::probes::Outcome::Error(e) => {
                    Err(format!(
                        "HTTP lifecycle hook ({path}) for Container \"{}\" in Pod \"{}\" failed - error: {e}",
                        c.name,
                        format_pod(pod)
                    ))
                }
            };
        }
        if let Some(s) = &h.sleep {
            let d = Duration::from_secs(u64::try_from(s.seconds.max(0)).unwrap_or(0));
            tokio::time::sleep(timeout.map_or(d, |t| d.min(t))).await;
            return Ok(());
        }
        Ok(())
    }

    /// `killContainer`: the pre-stop hook within the grace period, then `StopContainer`.
    pub async fn kill_container(
        &self,
        pod: &Pod,
        spec: Option<&Container>,
        cs: &ContainerStatus,
        message: Option<&str>,
        grace_override: Option<i64>,
    ) -> Result<(), Error> {
        let mut grace = pod
            .metadata
            .deletion_grace_period_seconds
            .or_else(|| {
                pod.spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            })
            .or_else(|| cs.grace_period())
            .unwrap_or(MIN_GRACE);
        if let Some(g) = grace_override {
            grace = g;
        }
        let init = spec_container(pod, &cs.name).is_some_and(|(_, i)| i);
        let r = container_ref(pod, &cs.name, init);
        let msg = message
            .map(str::to_string)
            .unwrap_or_else(|| format!("Stopping container {}", cs.name));
        self.event(&r, EventType::Normal, "Killing", &msg);
        let pre_stop: Option<LifecycleHandler> = spec
            .and_then(|c| c.lifecycle.as_ref())
            .and_then(|l| l.pre_stop.clone())
            .or_else(|| {
                cs.annotations
                    .get(rt::ANN_PRE_STOP)
                    .and_then(|j| serde_json::from_str(j).ok())
            });
        if let Some(h) = pre_stop.filter(|_| grace > 0 && cs.state == ContainerState::Running) {
            let started = std::time::Instant::now();
            let budget = Duration::from_secs(u64::try_from(grace).unwrap_or(0));
            let fallback = Container {
                name: cs.name.clone(),
                ..Default::default()
            };
            let c = spec.unwrap_or(&fallback);
            let ip = self
                .read(pod)
                .await
                .ok()
                .and_then(|s| s.ips().first().cloned())
                .unwrap_or_default();
            match tokio::time::timeout(budget, self.run_hook(pod, c, &cs.id, &h, &ip, Some(budget)))
                .await
            {
                Ok(Ok(())) => {}
                Ok(Err(m)) => self.event(&r, EventType::Warning, "FailedPreStopHook", &m),
                Err(_) => {
                    tracing::info!(container = %cs.name, "pre-stop hook did not finish within the grace period")
                }
            }
            grace -= i64::try_from(started.elapsed().as_secs()).unwrap_or(0);
        }
        if grace < MIN_GRACE {
            grace = MIN_GRACE;
        }
        if let Some(g) = grace_override {
            grace = grace.min(g.max(0));
        }
        match self
            .runtime
            .stop_container(
                &cs.id,
                Duration::from_secs(u64::try_from(grace).unwrap_or(0)),
            )
            .await
        {
            Ok(()) => Ok(()),
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    /// `killPodWithSyncResult`: every running container (in parallel), then the sandboxes.
    pub async fn kill_pod(
        &self,
        pod: &Pod,
        rs: &RuntimePodStatus,
        grace: Option<i64>,
    ) -> Result<(), Error> {
        // Regular containers first (in parallel), then sidecars in reverse order.
        let (sidecars, regular): (Vec<&ContainerStatus>, Vec<&ContainerStatus>) =
            rs.running().partition(|cs| {
                spec_container(pod, &cs.name)
                    .is_some_and(|(c, init)| init && super::actions::is_sidecar(c))
            });
        let kills = regular.into_iter().map(|cs| {
            let spec = spec_container(pod, &cs.name).map(|(c, _)| c);
            self.kill_container(pod, spec, cs, None, grace)
        });
        let results = futures::future::join_all(kills).await;
        for r in results {
            r?;
        }
        let mut sidecars = sidecars;
        sidecars.sort_by_key(|cs| {
            std::cmp::Reverse(
                pod.spec
                    .as_ref()
                    .and_then(|s| s.init_containers.as_ref())
                    .and_then(|v| v.iter().position(|c| c.name == cs.name))
                    .unwrap_or(0),
            )
        });
        for cs in sidecars {
            let spec = spec_container(pod, &cs.name).map(|(c, _)| c);
            self.kill_container(pod, spec, cs, None, grace).await?;
        }
        for s in &rs.sandboxes {
            match self.runtime.stop_pod_sandbox(&s.id).await {
                Ok(()) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// Keeps the two newest instances of each container name (the running one and the
    /// last dead one), as the container GC does.
    async fn gc_containers(&self, pod: &Pod, rs: &RuntimePodStatus) {
        let mut seen: HashMap<&str, usize> = HashMap::new();
        for cs in &rs.containers {
            let n = seen.entry(cs.name.as_str()).or_insert(0);
            *n += 1;
            if *n > 2
                && cs.state == ContainerState::Exited
                && let Err(e) = self.runtime.remove_container(&cs.id).await
            {
                tracing::debug!(pod = %pod_name(pod), container = %cs.id, error = %e, "removing an old container");
            }
        }
    }

    /// `SyncTerminatingPod`: stops everything with the pod's grace period and writes the
    /// terminal status.
    pub async fn terminate_pod(&self, pod: &Pod, gone: bool) -> Result<(), Error> {
        let span = tracing::info_span!(
            "terminate_pod",
            pod = %format!("{}/{}", pod_namespace(pod), pod_name(pod)),
            uid = %pod_uid(pod)
        );
        async {
            self.probes.remove_pod(pod_uid(pod));
            let rs = self.read(pod).await?;
            let grace = pod.metadata.deletion_grace_period_seconds.or_else(|| {
                pod.spec
                    .as_ref()
                    .and_then(|s| s.termination_grace_period_seconds)
            });
            self.kill_pod(
                pod,
                &rs,
                if gone {
                    grace.or(Some(MIN_GRACE))
                } else {
                    None
                },
            )
            .await?;
            if !gone {
                let rs = self.read(pod).await?;
                let status = self.generate(pod, &rs, true);
                self.status.set(pod, status);
            }
            Ok(())
        }
        .instrument(span)
        .await
    }

    /// `SyncTerminatedPod`: a finished pod's volumes and cgroup released. A deleted pod's
    /// (sandboxes, volumes, cgroup) are reclaimed before its final delete instead (see
    /// [`super::reclaim`] and the worker's `Done` phase).
    pub async fn cleanup_pod(&self, pod: &Pod, deleting: bool) -> Result<(), Error> {
        let uid = pod_uid(pod);
        if !deleting {
            self.volumes.teardown(uid).await?;
            if let Err(e) = super::reclaim::remove_cgroup(Arc::clone(&self.cgroups), pod).await {
                // A finished pod's stopped sandbox is kept for its logs; its cgroup goes
                // when the pod is deleted.
                tracing::debug!(error = %e, "pod cgroup kept while the sandbox remains");
            }
        }
        let mut st = self.st();
        st.restart_backoff.forget_prefix(&format!("{uid}_"));
        st.pull_backoff.forget_prefix(&format!("{uid}_"));
        st.reasons.remove(uid);
        Ok(())
    }

    pub async fn remove_sandboxes(&self, uid: &str) -> Result<(), Error> {
        super::reclaim::remove_from_runtime(self.runtime.as_ref(), uid).await
    }

    /// Stops and removes what the runtime runs for a pod nobody knows (an orphan).
    pub async fn kill_orphan(&self, r: &rt::RuntimePodRef) -> Result<(), Error> {
        tracing::info!(pod = %format!("{}/{}", r.namespace, r.name), uid = %r.uid, "removing an orphaned pod from the runtime");
        let rs = rt::pod_status(self.runtime.as_ref(), &r.uid, &r.name, &r.namespace).await?;
        for cs in rs.running() {
            let grace = cs.grace_period().unwrap_or(MIN_GRACE).max(MIN_GRACE);
            let _ = self
                .runtime
                .stop_container(
                    &cs.id,
                    Duration::from_secs(u64::try_from(grace).unwrap_or(2)),
                )
                .await;
        }
        self.remove_sandboxes(&r.uid).await?;
        self.volumes.teardown(&r.uid).await?;
        let mut orphan = Pod::default();
        orphan.metadata.uid = Some(r.uid.clone());
        if let Err(e) = super::reclaim::remove_cgroup(Arc::clone(&self.cgroups), &orphan).await {
            tracing::warn!(uid = %r.uid, error = %e, "removing an orphaned pod's cgroup");
        }
        Ok(())
    }
}

/// Upstream's `calcRestartCountByLogDir`: one more than the highest `<n>.log` in `dir`.
pub(crate) fn restart_count_from_logs(dir: &std::path::Path) -> i32 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_suffix(".log")?.parse::<i32>().ok()
        })
        .max()
        .map_or(0, |n| n.saturating_add(1))
}

/// What starting a container needs from its sync.
pub(crate) struct StartContext<'a> {
    pub sandbox_id: &'a str,
    pub sandbox_cfg: &'a v1::PodSandboxConfig,
    pub pod_ips: &'a [String],
    pub volumes: &'a crate::PodVolumes,
    pub rs: &'a RuntimePodStatus,
}

/// Resolves once the pod is deleted (gone or with a deletion timestamp); never when the
/// sender is dropped.
async fn deleted(rx: &mut watch::Receiver<Option<Arc<Pod>>>) {
    loop {
        if rx.changed().await.is_err() {
            std::future::pending::<()>().await;
        }
        let gone = rx
            .borrow()
            .as_ref()
            .is_none_or(|p| p.metadata.deletion_timestamp.is_some());
        if gone {
            return;
        }
    }
}

/// One pod's worker: serializes its syncs, its termination and its cleanup.
pub(crate) async fn pod_worker(
    k: Arc<Kubelet>,
    uid: String,
    mut pod_rx: watch::Receiver<Option<Arc<Pod>>>,
    wake: Arc<Notify>,
    mut phase: Phase,
    mut stop: watch::Receiver<bool>,
) {
    let Some(mut last) = pod_rx.borrow_and_update().clone() else {
        return;
    };
    let mut delete_sent = false;
    let mut final_delete = super::reclaim::FinalDelete::default();
    loop {
        if *stop.borrow() {
            return;
        }
        let current = pod_rx.borrow_and_update().clone();
        let gone = current.is_none();
        if let Some(p) = current {
            last = p;
        }
        let pod = Arc::clone(&last);
        let deleting = gone || pod.metadata.deletion_timestamp.is_some();
        let mut wait = k.config.sync_frequency;
        match phase {
            Phase::Sync => {
                if deleting {
                    phase = Phase::Terminating;
                    continue;
                }
                // A deletion cancels the sync in flight (a long image pull, a hook), as
                // upstream cancels the sync's context when the pod starts terminating.
                let result = tokio::select! {
                    r = k.sync_pod(&pod) => r,
                    () = deleted(&mut pod_rx) => {
                        phase = Phase::Terminating;
                        continue;
                    }
                };
                match result {
                    Ok(o) if o.terminal => {
                        phase = Phase::Terminating;
                        continue;
                    }
                    Ok(o) => {
                        if let Some(d) = o.retry_after {
                            wait = wait.min(d);
                        }
                    }
                    Err(e) => {
                        tracing::warn!(pod = %format!("{}/{}", pod_namespace(&pod), pod_name(&pod)), error = %e, "error syncing pod, will retry");
                        wait = SYNC_ERROR_RETRY;
                    }
                }
                // A spec change seen while syncing: sync again at once.
                let newer = pod_rx
                    .borrow()
                    .as_ref()
                    .is_some_and(|p| super::differs_semantically(p, &pod));
                if newer {
                    continue;
                }
            }
            Phase::Terminating => match k.terminate_pod(&pod, gone).await {
                Ok(()) => {
                    phase = Phase::Terminated;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(pod = %pod_name(&pod), error = %e, "error terminating pod, will retry");
                    wait = Duration::from_secs(1);
                }
            },
            Phase::Terminated => match k.cleanup_pod(&pod, deleting).await {
                Ok(()) => {
                    phase = Phase::Done;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(pod = %pod_name(&pod), error = %e, "error cleaning up pod, will retry");
                    wait = Duration::from_secs(1);
                }
            },
            Phase::Done => {
                // A deleted pod's resources are reclaimed before its final delete (and
                // before it is forgotten when someone else deleted it for good).
                if deleting && !delete_sent {
                    let left = super::reclaim::reclaim(
                        k.runtime.as_ref(),
                        k.volumes.as_ref(),
                        Arc::clone(&k.cgroups),
                        &pod,
                    )
                    .await;
                    let name = format!("{}/{}", pod_namespace(&pod), pod_name(&pod));
                    match final_delete.verdict(&left, std::time::Instant::now()) {
                        super::reclaim::Verdict::Delete => delete_sent = true,
                        super::reclaim::Verdict::DeleteAnyway(what) => {
                            tracing::warn!(pod = %name, left = %what, "pod resources not reclaimed in time; deleting the pod anyway");
                            delete_sent = true;
                        }
                        super::reclaim::Verdict::RetryIn(d) => {
                            tracing::debug!(pod = %name, left = %left.describe(), "waiting for the pod's resources to be reclaimed");
                            wait = d;
                        }
                    }
                    if delete_sent && !gone {
                        k.status.delete(&pod);
                    }
                }
                if gone && delete_sent {
                    k.forget(&uid);
                    return;
                }
                if delete_sent {
                    wait = Duration::from_secs(3600);
                }
            }
        }
        tokio::select! {
            _ = wake.notified() => {}
            r = pod_rx.changed() => {
                if r.is_err() {
                    return;
                }
            }
            _ = tokio::time::sleep(wait) => {}
            _ = stop.changed() => {}
        }
    }
}

impl Kubelet {
    /// Forgets a pod that is gone from the API and from the runtime.
    pub fn forget(&self, uid: &str) {
        self.status.forget(uid);
        self.probes.remove_pod(uid);
        self.wakers
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(uid);
        let mut st = self.st();
        st.reasons.remove(uid);
        st.restart_backoff.forget_prefix(&format!("{uid}_"));
        st.pull_backoff.forget_prefix(&format!("{uid}_"));
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn restart_count_continues_from_the_logs() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(restart_count_from_logs(&dir.path().join("missing")), 0);
        assert_eq!(restart_count_from_logs(dir.path()), 0);
        for f in ["0.log", "3.log", "x.log", "7.txt"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        assert_eq!(restart_count_from_logs(dir.path()), 4);
    }
}
