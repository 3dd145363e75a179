//! A pod's API status from its runtime state, as upstream's `generateAPIPodStatus`
//! (`convertStatusToAPIStatus`, `convertToAPIContainerStatuses`, `getPhase`, the
//! kubelet-owned conditions of `status/generate.go`, the probe manager's `ready` and
//! `started`, and the status manager's `lastTransitionTime` bookkeeping). Pure.

use std::collections::{BTreeMap, BTreeSet};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    Container, ContainerState as ApiState, ContainerStateRunning, ContainerStateTerminated,
    ContainerStateWaiting, ContainerStatus as ApiContainerStatus, HostIP, Pod, PodCondition, PodIP,
    PodStatus,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use super::actions::{sandbox_changed, should_container_be_restarted};
use super::runtime::{ContainerState, ContainerStatus, RuntimePodStatus};
use super::spec::qos_class;

pub const CONTAINER_CREATING: &str = "ContainerCreating";
pub const POD_INITIALIZING: &str = "PodInitializing";

/// Kubelet-owned condition types (`PodConditionByKubelet`).
const KUBELET_CONDITIONS: &[&str] = &[
    "PodScheduled",
    "Ready",
    "Initialized",
    "ContainersReady",
    "PodReadyToStartContainers",
];

/// Why a container is waiting after a failed start (upstream's `reasonCache` entry).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartFailure {
    pub reason: String,
    pub message: String,
}

/// Everything the status is made from besides the pod and the runtime state.
#[derive(Debug, Clone, Default)]
pub struct StatusInputs {
    /// The status last generated for this pod (the status manager's), else the pod's own.
    pub old: Option<PodStatus>,
    /// Last start failure per container name.
    pub reasons: BTreeMap<String, StartFailure>,
    /// Container ids whose readiness probe last succeeded.
    pub ready: BTreeSet<String>,
    /// Container ids with a readiness probe.
    pub has_readiness: BTreeSet<String>,
    /// Container ids whose startup probe has not succeeded yet.
    pub not_started: BTreeSet<String>,
    pub host_ips: Vec<String>,
    /// Runtime type for container ids (`containerd` → `containerd://<id>`).
    pub runtime_name: String,
    /// The pod is terminal (its containers will not be restarted).
    pub terminal: bool,
    pub now: Option<Timestamp>,
}

fn time(t: Option<Timestamp>) -> Option<Time> {
    t.map(Time)
}

fn is_restartable_init(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

/// `convertContainerStatus`.
fn convert(
    cs: &ContainerStatus,
    old: Option<&ApiContainerStatus>,
    runtime: &str,
) -> ApiContainerStatus {
    let cid = format!("{runtime}://{}", cs.id);
    let mut s = ApiContainerStatus {
        name: cs.name.clone(),
        restart_count: cs.restart_count,
        image: cs.image.clone(),
        image_id: cs.image_ref.clone(),
        container_id: Some(cid.clone()),
        ..Default::default()
    };
    s.state = Some(match cs.state {
        ContainerState::Running => ApiState {
            running: Some(ContainerStateRunning {
                started_at: time(cs.started_at),
            }),
            ..Default::default()
        },
        ContainerState::Exited => ApiState {
            terminated: Some(ContainerStateTerminated {
                exit_code: cs.exit_code,
                reason: Some(cs.reason.clone()).filter(|r| !r.is_empty()),
                message: Some(cs.message.clone()).filter(|m| !m.is_empty()),
                started_at: time(cs.started_at),
                finished_at: time(cs.finished_at),
                container_id: Some(cid),
                signal: None,
            }),
            ..Default::default()
        },
        ContainerState::Unknown
            if old.is_some_and(|o| o.state.as_ref().is_some_and(|st| st.running.is_some())) =>
        {
            s.restart_count = old.map_or(0, |o| o.restart_count) + 1;
            ApiState {
                terminated: Some(ContainerStateTerminated {
                    exit_code: 137,
                    reason: Some("ContainerStatusUnknown".into()),
                    message: Some(
                        "The container could not be located when the pod was terminated".into(),
                    ),
                    ..Default::default()
                }),
                ..Default::default()
            }
        }
        _ => ApiState {
            waiting: Some(ContainerStateWaiting::default()),
            ..Default::default()
        },
    });
    s
}

fn waiting(reason: &str, message: Option<String>) -> ApiState {
    ApiState {
        waiting: Some(ContainerStateWaiting {
            reason: Some(reason.into()),
            message,
        }),
        ..Default::default()
    }
}

/// `convertToAPIContainerStatuses` for the regular or the init containers.
fn container_statuses(
    pod: &Pod,
    containers: &[Container],
    previous: &[ApiContainerStatus],
    status: &RuntimePodStatus,
    inputs: &StatusInputs,
    init: bool,
) -> Vec<ApiContainerStatus> {
    let has_init = pod
        .spec
        .as_ref()
        .and_then(|s| s.init_containers.as_ref())
        .is_some_and(|i| !i.is_empty());
    let default_reason = if has_init && !init {
        POD_INITIALIZING
    } else {
        CONTAINER_CREATING
    };
    let old: BTreeMap<&str, &ApiContainerStatus> =
        previous.iter().map(|s| (s.name.as_str(), s)).collect();
    let mut statuses: BTreeMap<String, ApiContainerStatus> = BTreeMap::new();
    for c in containers {
        let mut s = ApiContainerStatus {
            name: c.name.clone(),
            image: c.image.clone().unwrap_or_default(),
            state: Some(waiting(default_reason, None)),
            ..Default::default()
        };
        if let Some(o) = old.get(c.name.as_str()) {
            if o.state.as_ref().is_some_and(|st| st.terminated.is_some()) {
                s = (*o).clone();
            } else {
                s.restart_count = o.restart_count;
                s.last_state = o.last_state.clone();
            }
        }
        statuses.insert(c.name.clone(), s);
    }
    // A container seen running that vanished: it terminated, with an unknown status.
    for c in containers {
        if status
            .containers
            .iter()
            .any(|cs| cs.name == c.name && cs.state == ContainerState::Created)
        {
            continue;
        }
        let Some(o) = old.get(c.name.as_str()) else {
            continue;
        };
        let ost = o.state.as_ref();
        if ost.is_some_and(|s| s.terminated.is_some()) || ost.is_none_or(|s| s.running.is_none()) {
            continue;
        }
        let Some(s) = statuses.get_mut(&c.name) else {
            continue;
        };
        let is_default = s
            .state
            .as_ref()
            .and_then(|st| st.waiting.as_ref())
            .is_some_and(|w| w.reason.as_deref() == Some(default_reason));
        if !is_default
            || s.last_state
                .as_ref()
                .is_some_and(|l| l.terminated.is_some())
        {
            continue;
        }
        s.last_state = Some(ApiState {
            terminated: Some(ContainerStateTerminated {
                reason: Some("ContainerStatusUnknown".into()),
                message: Some(
                    "The container could not be located when the pod was deleted.  The container used to be Running"
                        .into(),
                ),
                exit_code: 137,
                ..Default::default()
            }),
            ..Default::default()
        });
        if pod.metadata.deletion_timestamp.is_none() {
            s.restart_count += 1;
        }
    }
    // The newest two runtime statuses per container: state and last state.
    let mut seen: BTreeMap<&str, u32> = BTreeMap::new();
    for cs in &status.containers {
        if !statuses.contains_key(&cs.name) {
            continue;
        }
        let n = seen.entry(cs.name.as_str()).or_insert(0);
        if *n >= 2 {
            continue;
        }
        let converted = convert(cs, old.get(cs.name.as_str()).copied(), &inputs.runtime_name);
        if *n == 0 {
            statuses.insert(cs.name.clone(), converted);
        } else if let Some(s) = statuses.get_mut(&cs.name) {
            s.last_state = converted.state;
        }
        *n += 1;
    }
    // Containers that failed to start are waiting, with the failure's reason.
    for c in containers {
        if init
            && status
                .find(&c.name)
                .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0)
        {
            continue;
        }
        if !should_container_be_restarted(c, pod, status) {
            continue;
        }
        let Some(reason) = inputs.reasons.get(&c.name) else {
            continue;
        };
        let Some(s) = statuses.get_mut(&c.name) else {
            continue;
        };
        if s.state.as_ref().is_some_and(|st| st.terminated.is_some()) {
            s.last_state = s.state.take();
        }
        s.state = Some(waiting(
            &reason.reason,
            Some(reason.message.clone()).filter(|m| !m.is_empty()),
        ));
    }
    // The probe manager's `started` and `ready`.
    for s in statuses.values_mut() {
        let running = s.state.as_ref().is_some_and(|st| st.running.is_some());
        let id = s
            .container_id
            .as_deref()
            .and_then(|c| c.split_once("://").map(|(_, id)| id.to_string()))
            .unwrap_or_default();
        let started = running && !inputs.not_started.contains(&id);
        s.started = Some(started);
        s.ready = started && (!inputs.has_readiness.contains(&id) || inputs.ready.contains(&id));
        if init {
            // Regular init containers are never "ready" unless they are sidecars.
            let sidecar = containers
                .iter()
                .any(|c| c.name == s.name && is_restartable_init(c));
            if !sidecar {
                s.ready = s
                    .state
                    .as_ref()
                    .and_then(|st| st.terminated.as_ref())
                    .is_some_and(|t| t.exit_code == 0);
                s.started = Some(running);
            }
        }
    }
    if init {
        containers
            .iter()
            .filter_map(|c| statuses.remove(&c.name))
            .collect()
    } else {
        statuses.into_values().collect()
    }
}

fn find<'a>(statuses: &'a [ApiContainerStatus], name: &str) -> Option<&'a ApiContainerStatus> {
    statuses.iter().find(|s| s.name == name)
}

/// `getPhase`.
pub fn get_phase(pod: &Pod, info: &[ApiContainerStatus], terminal: bool) -> &'static str {
    let Some(spec) = pod.spec.as_ref() else {
        return "Pending";
    };
    let policy = spec.restart_policy.as_deref().unwrap_or("Always");
    let mut pending_init = 0;
    let mut pending_sidecars = 0;
    let mut failed_init = 0;
    let (mut unknown, mut running, mut waiting, mut stopped, mut succeeded) = (0, 0, 0, 0, 0);
    let inits = spec.init_containers.as_deref().unwrap_or(&[]);
    for c in inits.iter().filter(|c| !is_restartable_init(c)) {
        let Some(s) = find(info, &c.name) else {
            pending_init += 1;
            continue;
        };
        let st = s.state.clone().unwrap_or_default();
        if st.running.is_some() {
            pending_init += 1;
        } else if let Some(t) = &st.terminated {
            if t.exit_code != 0 {
                failed_init += 1;
            }
        } else if st.waiting.is_some() {
            match s.last_state.as_ref().and_then(|l| l.terminated.as_ref()) {
                Some(t) => {
                    if t.exit_code != 0 {
                        failed_init += 1;
                    }
                }
                None => pending_init += 1,
            }
        } else {
            pending_init += 1;
        }
    }
    for c in inits.iter().filter(|c| is_restartable_init(c)) {
        let Some(s) = find(info, &c.name) else {
            unknown += 1;
            continue;
        };
        let st = s.state.clone().unwrap_or_default();
        if st.running.is_some() {
            if s.started != Some(true) {
                pending_sidecars += 1;
            }
            running += 1;
        } else if st.terminated.is_some() {
        } else if st.waiting.is_some() {
            if s.last_state
                .as_ref()
                .and_then(|l| l.terminated.as_ref())
                .is_none()
            {
                pending_sidecars += 1;
                waiting += 1;
            }
        } else {
            pending_sidecars += 1;
            unknown += 1;
        }
    }
    for c in &spec.containers {
        let Some(s) = find(info, &c.name) else {
            unknown += 1;
            continue;
        };
        let st = s.state.clone().unwrap_or_default();
        if st.running.is_some() {
            running += 1;
        } else if let Some(t) = &st.terminated {
            stopped += 1;
            if t.exit_code == 0 {
                succeeded += 1;
            }
        } else if st.waiting.is_some() {
            if s.last_state
                .as_ref()
                .and_then(|l| l.terminated.as_ref())
                .is_some()
            {
                stopped += 1;
            } else {
                waiting += 1;
            }
        } else {
            unknown += 1;
        }
    }
    if failed_init > 0 && policy == "Never" {
        return "Failed";
    }
    // Regular containers started once: sidecars restarting no longer hold the pod back.
    let initialized = spec.containers.iter().any(|c| {
        find(info, &c.name).is_some_and(|s| {
            s.state
                .as_ref()
                .is_some_and(|st| st.running.is_some() || st.terminated.is_some())
                || s.last_state
                    .as_ref()
                    .is_some_and(|l| l.terminated.is_some())
        })
    });
    if pending_init > 0 || (pending_sidecars > 0 && !initialized) || waiting > 0 {
        return "Pending";
    }
    if running > 0 && unknown == 0 {
        return "Running";
    }
    if running == 0 && stopped > 0 && unknown == 0 {
        if terminal {
            return if stopped == succeeded {
                "Succeeded"
            } else {
                "Failed"
            };
        }
        if policy == "Always" {
            return "Running";
        }
        if stopped == succeeded {
            return "Succeeded";
        }
        if policy == "Never" {
            return "Failed";
        }
        return "Running";
    }
    "Pending"
}

fn condition(type_: &str, ok: bool, reason: Option<&str>, message: Option<String>) -> PodCondition {
    PodCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: reason.map(str::to_string),
        message,
        ..Default::default()
    }
}

fn go_list(names: &[String]) -> String {
    format!("[{}]", names.join(" "))
}

/// Condition `type_`: True when every list in `groups` is empty; else False with `reason`
/// and upstream's message (`containers with <what> status: [a b], …`).
fn summarize(type_: &str, reason: &str, groups: &[(&str, &Vec<String>)]) -> PodCondition {
    let msgs: Vec<String> = groups
        .iter()
        .filter(|(_, names)| !names.is_empty())
        .map(|(what, names)| format!("containers with {what} status: {}", go_list(names)))
        .collect();
    if msgs.is_empty() {
        condition(type_, true, None, None)
    } else {
        condition(type_, false, Some(reason), Some(msgs.join(", ")))
    }
}

/// `GenerateContainersReadyCondition`.
fn containers_ready(pod: &Pod, all: &[ApiContainerStatus], phase: &str) -> PodCondition {
    let mut unknown = Vec::new();
    let mut unready = Vec::new();
    let spec = pod.spec.as_ref();
    let sidecars = spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
        .iter()
        .filter(|c| is_restartable_init(c));
    for c in sidecars.chain(spec.map(|s| s.containers.as_slice()).unwrap_or(&[])) {
        match find(all, &c.name) {
            Some(s) if !s.ready => unready.push(c.name.clone()),
            Some(_) => {}
            None => unknown.push(c.name.clone()),
        }
    }
    if phase == "Succeeded" && unknown.is_empty() {
        return condition("ContainersReady", false, Some("PodCompleted"), None);
    }
    if phase == "Failed" {
        return condition("ContainersReady", false, Some("PodFailed"), None);
    }
    summarize(
        "ContainersReady",
        "ContainersNotReady",
        &[("unknown", &unknown), ("unready", &unready)],
    )
}

/// `GeneratePodReadyCondition`.
fn pod_ready(
    pod: &Pod,
    conditions: &[PodCondition],
    all: &[ApiContainerStatus],
    phase: &str,
) -> PodCondition {
    let cr = containers_ready(pod, all, phase);
    if cr.status != "True" {
        return PodCondition {
            type_: "Ready".into(),
            ..cr
        };
    }
    let mut msgs = Vec::new();
    for g in pod
        .spec
        .as_ref()
        .and_then(|s| s.readiness_gates.as_deref())
        .unwrap_or(&[])
    {
        match conditions.iter().find(|c| c.type_ == g.condition_type) {
            None => msgs.push(format!(
                "corresponding condition of pod readiness gate \"{}\" does not exist.",
                g.condition_type
            )),
            Some(c) if c.status != "True" => msgs.push(format!(
                "the status of pod readiness gate \"{}\" is not \"True\", but {}",
                g.condition_type, c.status
            )),
            Some(_) => {}
        }
    }
    if msgs.is_empty() {
        condition("Ready", true, None, None)
    } else {
        condition(
            "Ready",
            false,
            Some("ReadinessGatesNotReady"),
            Some(msgs.join(", ")),
        )
    }
}

/// `GeneratePodInitializedCondition`.
fn initialized(pod: &Pod, all: &[ApiContainerStatus], phase: &str) -> PodCondition {
    let spec = pod.spec.as_ref();
    let mut unknown = Vec::new();
    let mut incomplete = Vec::new();
    for c in spec
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
    {
        let Some(s) = find(all, &c.name) else {
            unknown.push(c.name.clone());
            continue;
        };
        if is_restartable_init(c) {
            if s.started != Some(true) {
                incomplete.push(c.name.clone());
            }
            continue;
        }
        let done = s
            .state
            .as_ref()
            .and_then(|st| st.terminated.as_ref())
            .is_some_and(|t| t.exit_code == 0);
        if !done {
            incomplete.push(c.name.clone());
        }
    }
    if phase == "Succeeded" && unknown.is_empty() {
        return condition("Initialized", true, Some("PodCompleted"), None);
    }
    let regular_started = spec.is_some_and(|s| {
        s.containers.iter().any(|c| {
            find(all, &c.name).is_some_and(|st| {
                st.state
                    .as_ref()
                    .is_some_and(|x| x.running.is_some() || x.terminated.is_some())
            })
        })
    });
    if regular_started {
        return condition("Initialized", true, None, None);
    }
    summarize(
        "Initialized",
        "ContainersNotInitialized",
        &[("unknown", &unknown), ("incomplete", &incomplete)],
    )
}

/// `generateAPIPodStatus`.
pub fn generate_pod_status(
    pod: &Pod,
    status: &RuntimePodStatus,
    inputs: &StatusInputs,
) -> PodStatus {
    let api = pod.status.clone().unwrap_or_default();
    let old = inputs.old.clone().unwrap_or_else(|| api.clone());
    let spec = pod.spec.as_ref();
    let empty = Vec::new();
    let containers = spec.map(|s| &s.containers).unwrap_or(&empty);
    let inits = spec
        .and_then(|s| s.init_containers.as_ref())
        .unwrap_or(&empty);
    let mut s = PodStatus {
        container_statuses: Some(container_statuses(
            pod,
            containers,
            old.container_statuses.as_deref().unwrap_or(&[]),
            status,
            inputs,
            false,
        )),
        ..Default::default()
    };
    if !inits.is_empty() {
        s.init_container_statuses = Some(container_statuses(
            pod,
            inits,
            old.init_container_statuses.as_deref().unwrap_or(&[]),
            status,
            inputs,
            true,
        ));
    }
    let ips = status.ips();
    if !ips.is_empty() {
        s.pod_ip = ips.first().cloned();
        s.pod_ips = Some(ips.iter().map(|ip| PodIP { ip: ip.clone() }).collect());
    } else if spec.and_then(|sp| sp.host_network).unwrap_or(false) {
        s.pod_ip = inputs.host_ips.first().cloned();
        s.pod_ips = Some(
            inputs
                .host_ips
                .iter()
                .map(|ip| PodIP { ip: ip.clone() })
                .collect(),
        );
    }
    if !inputs.host_ips.is_empty() {
        s.host_ip = inputs.host_ips.first().cloned();
        s.host_ips = Some(
            inputs
                .host_ips
                .iter()
                .map(|ip| HostIP { ip: ip.clone() })
                .collect(),
        );
    }
    s.qos_class = api
        .qos_class
        .clone()
        .filter(|q| !q.is_empty())
        .or_else(|| Some(qos_class(pod).to_string()));
    s.start_time = old
        .start_time
        .clone()
        .or_else(|| api.start_time.clone())
        .or_else(|| inputs.now.map(Time));
    let mut all: Vec<ApiContainerStatus> = s.container_statuses.clone().unwrap_or_default();
    all.extend(s.init_container_statuses.clone().unwrap_or_default());
    let mut phase = get_phase(pod, &all, inputs.terminal);
    let terminal = |p: &str| p == "Failed" || p == "Succeeded";
    let old_phase = old.phase.as_deref().unwrap_or_default();
    let api_phase = api.phase.as_deref().unwrap_or_default();
    if !terminal(phase) {
        if terminal(old_phase) {
            phase = if old_phase == "Failed" {
                "Failed"
            } else {
                "Succeeded"
            };
        } else if terminal(api_phase) {
            phase = if api_phase == "Failed" {
                "Failed"
            } else {
                "Succeeded"
            };
        }
    }
    if terminal(api_phase) && phase != api_phase {
        phase = if api_phase == "Failed" {
            "Failed"
        } else {
            "Succeeded"
        };
    }
    s.phase = Some(phase.to_string());
    if old.phase.as_deref() == Some(phase) {
        s.reason = old
            .reason
            .clone()
            .filter(|r| !r.is_empty())
            .or(api.reason.clone());
        s.message = old
            .message
            .clone()
            .filter(|m| !m.is_empty())
            .or(api.message.clone());
    }
    // Conditions: others' kept, then the kubelet's.
    let mut conditions: Vec<PodCondition> = api
        .conditions
        .iter()
        .flatten()
        .filter(|c| !KUBELET_CONDITIONS.contains(&c.type_.as_str()))
        .cloned()
        .collect();
    let (changed, _, _) = sandbox_changed(pod, status);
    conditions.push(condition("PodReadyToStartContainers", !changed, None, None));
    let all_init_first: Vec<ApiContainerStatus> = s
        .init_container_statuses
        .iter()
        .flatten()
        .chain(s.container_statuses.iter().flatten())
        .cloned()
        .collect();
    conditions.push(initialized(pod, &all_init_first, phase));
    let ready = pod_ready(pod, &conditions, &all_init_first, phase);
    conditions.push(ready);
    conditions.push(containers_ready(pod, &all_init_first, phase));
    let scheduled = api
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == "PodScheduled")
        .cloned()
        .unwrap_or_else(|| condition("PodScheduled", true, None, None));
    conditions.push(scheduled);
    // lastTransitionTime: kept while the status stays, else now.
    for c in &mut conditions {
        if c.last_transition_time.is_some() && c.type_ == "PodScheduled" {
            continue;
        }
        let prev = old
            .conditions
            .iter()
            .flatten()
            .chain(api.conditions.iter().flatten())
            .find(|o| o.type_ == c.type_);
        c.last_transition_time = match prev {
            Some(p) if p.status == c.status && p.last_transition_time.is_some() => {
                p.last_transition_time.clone()
            }
            _ => inputs.now.map(Time),
        };
    }
    s.conditions = Some(conditions);
    s.nominated_node_name = api.nominated_node_name.clone();
    s.resize = api.resize.clone();
    s
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::pod::runtime::SandboxStatus;
    use serde_json::json;

    fn pod(policy: &str, inits: &[&str], apps: &[&str]) -> Pod {
        let c = |n: &&str| json!({"name": n, "image": "img"});
        let mut spec =
            json!({"restartPolicy": policy, "containers": apps.iter().map(c).collect::<Vec<_>>()});
        if !inits.is_empty() {
            spec["initContainers"] = inits.iter().map(c).collect::<Vec<_>>().into();
        }
        serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
            "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort",
                        "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": "2024-01-01T00:00:00Z"}]}
        }))
        .unwrap()
    }

    fn t(s: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + s).unwrap()
    }

    fn cs(name: &str, state: ContainerState, exit: i32, created: i64) -> ContainerStatus {
        ContainerStatus {
            id: format!("{name}-{created}"),
            name: name.into(),
            state,
            created_at: Some(t(created)),
            started_at: Some(t(created + 1)),
            finished_at: (state == ContainerState::Exited).then(|| t(created + 2)),
            exit_code: exit,
            image: "docker.io/library/img:latest".into(),
            image_ref: "sha256:1".into(),
            reason: if state == ContainerState::Exited {
                if exit == 0 { "Completed" } else { "Error" }.into()
            } else {
                String::new()
            },
            message: String::new(),
            hash: String::new(),
            restart_count: 0,
            sandbox_id: "s".into(),
            annotations: Default::default(),
            termination_message_host_path: None,
            log_path: String::new(),
        }
    }

    fn rt(containers: Vec<ContainerStatus>) -> RuntimePodStatus {
        RuntimePodStatus {
            uid: "u".into(),
            sandboxes: vec![SandboxStatus {
                id: "s".into(),
                ready: true,
                attempt: 0,
                created_at: 1,
                ips: vec!["10.88.0.5".into()],
                host_network: false,
            }],
            containers,
            ..Default::default()
        }
    }

    fn inputs() -> StatusInputs {
        StatusInputs {
            host_ips: vec!["192.168.0.2".into()],
            runtime_name: "containerd".into(),
            now: Some(t(100)),
            ..Default::default()
        }
    }

    fn cond<'a>(s: &'a PodStatus, t: &str) -> &'a PodCondition {
        s.conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == t)
            .unwrap()
    }

    #[test]
    fn running_and_ready() {
        let p = pod("Always", &[], &["a", "b"]);
        let s = generate_pod_status(
            &p,
            &rt(vec![
                cs("a", ContainerState::Running, 0, 1),
                cs("b", ContainerState::Running, 0, 1),
            ]),
            &inputs(),
        );
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert_eq!(s.pod_ip.as_deref(), Some("10.88.0.5"));
        assert_eq!(s.host_ip.as_deref(), Some("192.168.0.2"));
        assert_eq!(cond(&s, "Ready").status, "True");
        assert_eq!(cond(&s, "ContainersReady").status, "True");
        assert_eq!(cond(&s, "Initialized").status, "True");
        assert_eq!(cond(&s, "PodReadyToStartContainers").status, "True");
        let sched = cond(&s, "PodScheduled");
        assert_eq!(
            sched.last_transition_time.as_ref().unwrap().0.to_string(),
            "2024-01-01T00:00:00Z"
        );
        let a = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(a.container_id.as_deref(), Some("containerd://a-1"));
        assert!(a.ready && a.started == Some(true));
        assert_eq!(a.image_id, "sha256:1");
        assert!(a.state.as_ref().unwrap().running.is_some());
        assert_eq!(s.start_time.as_ref().unwrap().0, t(100));
    }

    #[test]
    fn readiness_probe_gates_ready() {
        let p = pod("Always", &[], &["a", "b"]);
        let mut i = inputs();
        i.has_readiness.insert("b-1".into());
        let s = generate_pod_status(
            &p,
            &rt(vec![
                cs("a", ContainerState::Running, 0, 1),
                cs("b", ContainerState::Running, 0, 1),
            ]),
            &i,
        );
        assert_eq!(s.phase.as_deref(), Some("Running"));
        let r = cond(&s, "Ready");
        assert_eq!(r.status, "False");
        assert_eq!(r.reason.as_deref(), Some("ContainersNotReady"));
        assert_eq!(
            r.message.as_deref(),
            Some("containers with unready status: [b]")
        );
        i.ready.insert("b-1".into());
        let s2 = generate_pod_status(
            &p,
            &rt(vec![
                cs("a", ContainerState::Running, 0, 1),
                cs("b", ContainerState::Running, 0, 1),
            ]),
            &StatusInputs {
                old: Some(s.clone()),
                now: Some(t(200)),
                ..i
            },
        );
        assert_eq!(cond(&s2, "Ready").status, "True");
        assert_eq!(
            cond(&s2, "Ready").last_transition_time.as_ref().unwrap().0,
            t(200)
        );
        // Unchanged conditions keep their time.
        assert_eq!(
            cond(&s2, "Initialized")
                .last_transition_time
                .as_ref()
                .unwrap()
                .0,
            t(100)
        );
    }

    #[test]
    fn new_pod_is_pending_creating() {
        let p = pod("Always", &[], &["a"]);
        let mut r = rt(vec![]);
        r.sandboxes.clear();
        let s = generate_pod_status(&p, &r, &inputs());
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        let a = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(
            a.state
                .as_ref()
                .unwrap()
                .waiting
                .as_ref()
                .unwrap()
                .reason
                .as_deref(),
            Some("ContainerCreating")
        );
        assert_eq!(cond(&s, "PodReadyToStartContainers").status, "False");
        assert_eq!(
            cond(&s, "Ready").message.as_deref(),
            Some("containers with unready status: [a]")
        );
    }

    #[test]
    fn crash_loop_waiting_with_last_state() {
        let p = pod("Always", &[], &["a"]);
        let mut i = inputs();
        i.reasons.insert(
            "a".into(),
            StartFailure {
                reason: "CrashLoopBackOff".into(),
                message: "back-off 10s restarting failed container=a pod=p_ns(u)".into(),
            },
        );
        let mut c = cs("a", ContainerState::Exited, 1, 1);
        c.restart_count = 1;
        let s = generate_pod_status(&p, &rt(vec![c]), &i);
        let a = &s.container_statuses.as_ref().unwrap()[0];
        let w = a.state.as_ref().unwrap().waiting.as_ref().unwrap();
        assert_eq!(w.reason.as_deref(), Some("CrashLoopBackOff"));
        let last = a.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(last.exit_code, 1);
        assert_eq!(last.reason.as_deref(), Some("Error"));
        assert_eq!(a.restart_count, 1);
        // Waiting with a last termination counts as stopped: Running under Always.
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert_eq!(cond(&s, "Ready").status, "False");
    }

    #[test]
    fn phases() {
        for (policy, exit, terminal, want) in [
            ("Never", 0, false, "Succeeded"),
            ("Never", 1, false, "Failed"),
            ("OnFailure", 0, false, "Succeeded"),
            ("OnFailure", 1, false, "Running"),
            ("Always", 0, false, "Running"),
            ("Always", 1, true, "Failed"),
            ("Always", 0, true, "Succeeded"),
        ] {
            let p = pod(policy, &[], &["a"]);
            let s = generate_pod_status(
                &p,
                &rt(vec![cs("a", ContainerState::Exited, exit, 1)]),
                &StatusInputs {
                    terminal,
                    ..inputs()
                },
            );
            assert_eq!(s.phase.as_deref(), Some(want), "{policy} {exit} {terminal}");
        }
        // Completed pods: condition reasons.
        let p = pod("Never", &[], &["a"]);
        let s = generate_pod_status(
            &p,
            &rt(vec![cs("a", ContainerState::Exited, 0, 1)]),
            &inputs(),
        );
        assert_eq!(cond(&s, "Ready").reason.as_deref(), Some("PodCompleted"));
        assert_eq!(
            cond(&s, "Initialized").reason.as_deref(),
            Some("PodCompleted")
        );
        let a = &s.container_statuses.as_ref().unwrap()[0];
        let term = a.state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(term.reason.as_deref(), Some("Completed"));
        assert_eq!(term.container_id.as_deref(), Some("containerd://a-1"));
    }

    #[test]
    fn terminal_phase_is_never_left() {
        let mut p = pod("Always", &[], &["a"]);
        p.status.as_mut().unwrap().phase = Some("Failed".into());
        p.status.as_mut().unwrap().reason = Some("DeadlineExceeded".into());
        let s = generate_pod_status(
            &p,
            &rt(vec![cs("a", ContainerState::Running, 0, 1)]),
            &inputs(),
        );
        assert_eq!(s.phase.as_deref(), Some("Failed"));
    }

    #[test]
    fn init_containers() {
        let p = pod("Always", &["i1", "i2"], &["a"]);
        let s = generate_pod_status(
            &p,
            &rt(vec![cs("i1", ContainerState::Running, 0, 1)]),
            &inputs(),
        );
        assert_eq!(s.phase.as_deref(), Some("Pending"));
        let init = cond(&s, "Initialized");
        assert_eq!(init.status, "False");
        assert_eq!(init.reason.as_deref(), Some("ContainersNotInitialized"));
        assert_eq!(
            init.message.as_deref(),
            Some("containers with incomplete status: [i1 i2]")
        );
        let a = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(
            a.state
                .as_ref()
                .unwrap()
                .waiting
                .as_ref()
                .unwrap()
                .reason
                .as_deref(),
            Some("PodInitializing")
        );
        let names: Vec<&str> = s
            .init_container_statuses
            .as_ref()
            .unwrap()
            .iter()
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(names, ["i1", "i2"]);
        // A failed init container under Never fails the pod.
        let p = pod("Never", &["i1"], &["a"]);
        let s = generate_pod_status(
            &p,
            &rt(vec![cs("i1", ContainerState::Exited, 1, 1)]),
            &inputs(),
        );
        assert_eq!(s.phase.as_deref(), Some("Failed"));
        // Done: initialized.
        let p = pod("Always", &["i1"], &["a"]);
        let s = generate_pod_status(
            &p,
            &rt(vec![
                cs("a", ContainerState::Running, 0, 5),
                cs("i1", ContainerState::Exited, 0, 1),
            ]),
            &inputs(),
        );
        assert_eq!(cond(&s, "Initialized").status, "True");
        assert_eq!(s.phase.as_deref(), Some("Running"));
        assert!(s.init_container_statuses.as_ref().unwrap()[0].ready);
    }

    #[test]
    fn vanished_running_container_is_terminated_unknown() {
        let p = pod("Always", &[], &["a"]);
        let prev = generate_pod_status(
            &p,
            &rt(vec![cs("a", ContainerState::Running, 0, 1)]),
            &inputs(),
        );
        let s = generate_pod_status(
            &p,
            &rt(vec![]),
            &StatusInputs {
                old: Some(prev),
                ..inputs()
            },
        );
        let a = &s.container_statuses.as_ref().unwrap()[0];
        assert_eq!(a.restart_count, 1);
        let last = a.last_state.as_ref().unwrap().terminated.as_ref().unwrap();
        assert_eq!(last.reason.as_deref(), Some("ContainerStatusUnknown"));
    }
}
