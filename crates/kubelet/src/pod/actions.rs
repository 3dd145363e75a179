//! What a sync must do to bring a pod's runtime state to its spec (upstream's
//! `computePodActions` with `PodSandboxChanged`, `findNextInitContainerToRun` and
//! `ShouldContainerBeRestarted`): a pure function of the pod, the runtime's view of it and
//! the probe results.
//!
//! Pods with sidecars (init containers with `restartPolicy: Always`) follow upstream's
//! `computeInitContainerActions` in a simplified form: init containers in order, a
//! sidecar is started (and must pass its startup probe) before the next one, sidecars
//! are restarted whatever the pod's restart policy, and regular init containers are not
//! run again once a regular container was created.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::api::core::v1::{Container, Pod};

use super::runtime::{ContainerState, ContainerStatus, RuntimePodStatus};
use super::spec::container_hash;

/// Why a container is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KillReason {
    /// Its spec (hash) changed.
    SpecChanged,
    LivenessProbe,
    StartupProbe,
    /// It is in the unknown state and must be stopped before a restart.
    Unknown,
}

/// One container to kill.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerToKill {
    pub name: String,
    pub reason: KillReason,
    /// Upstream's message (`Container x failed liveness probe, will be restarted`).
    pub message: String,
}

/// The actions of one sync (`podActions`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodActions {
    /// Stop every container and the sandbox first.
    pub kill_pod: bool,
    /// Then create a new sandbox.
    pub create_sandbox: bool,
    /// The sandbox to use (or the stale one being replaced).
    pub sandbox_id: String,
    /// The attempt number of the new sandbox.
    pub attempt: u32,
    /// The init container to start next (index into `spec.initContainers`).
    pub next_init_container: Option<usize>,
    /// Sidecars to (re)start first, in order (indexes into `spec.initContainers`).
    pub sidecars_to_start: Vec<usize>,
    /// Regular containers to start (indexes into `spec.containers`).
    pub containers_to_start: Vec<usize>,
    /// Containers to kill, by container id.
    pub containers_to_kill: BTreeMap<String, ContainerToKill>,
}

impl PodActions {
    /// Kills init container `name` (status `s`) before its restart when the runtime reports
    /// its state as unknown, with upstream's message.
    fn kill_if_unknown(&mut self, s: &ContainerStatus, name: &str) {
        if s.state == ContainerState::Unknown {
            self.containers_to_kill.insert(
                s.id.clone(),
                ContainerToKill {
                    name: name.to_string(),
                    reason: KillReason::Unknown,
                    message: format!(
                        "Init container is in {:?} state, try killing it before restart",
                        s.state.as_str()
                    ),
                },
            );
        }
    }
}

/// Probe verdicts that matter to the actions: ids of containers whose liveness or startup
/// probe currently fails.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProbeFailures {
    pub liveness: BTreeSet<String>,
    pub startup: BTreeSet<String>,
    /// Containers whose startup probe has not succeeded yet.
    pub startup_pending: BTreeSet<String>,
}

/// A sidecar: an init container with `restartPolicy: Always`.
pub fn is_sidecar(c: &Container) -> bool {
    c.restart_policy.as_deref() == Some("Always")
}

fn has_sidecars(pod: &Pod) -> bool {
    init_containers(pod).iter().any(is_sidecar)
}

fn restart_policy(pod: &Pod) -> &str {
    pod.spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or("Always")
}

/// `shouldRestartOnFailure`.
pub fn should_restart_on_failure(pod: &Pod) -> bool {
    restart_policy(pod) != "Never"
}

pub fn is_host_network(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|s| s.host_network)
        .unwrap_or(false)
}

fn init_containers(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .and_then(|s| s.init_containers.as_deref())
        .unwrap_or(&[])
}

fn containers(pod: &Pod) -> &[Container] {
    pod.spec.as_ref().map_or(&[], |s| s.containers.as_slice())
}

/// `PodSandboxChanged`: whether a new sandbox is needed, its attempt, and the current
/// sandbox id.
pub fn sandbox_changed(pod: &Pod, status: &RuntimePodStatus) -> (bool, u32, String) {
    let Some(newest) = status.sandboxes.first() else {
        return (true, 0, String::new());
    };
    let ready = status.sandboxes.iter().filter(|s| s.ready).count();
    if ready > 1 || !newest.ready {
        return (true, newest.attempt + 1, newest.id.clone());
    }
    if newest.host_network != is_host_network(pod) {
        return (true, newest.attempt + 1, String::new());
    }
    if !is_host_network(pod) && newest.ips.is_empty() {
        return (true, newest.attempt + 1, newest.id.clone());
    }
    (false, newest.attempt, newest.id.clone())
}

/// `ShouldContainerBeRestarted`.
pub fn should_container_be_restarted(
    container: &Container,
    pod: &Pod,
    status: &RuntimePodStatus,
) -> bool {
    if pod.metadata.deletion_timestamp.is_some() {
        return false;
    }
    let Some(s) = status.find(&container.name) else {
        return true;
    };
    match s.state {
        ContainerState::Running => false,
        ContainerState::Unknown | ContainerState::Created => true,
        ContainerState::Exited if is_sidecar(container) => true,
        ContainerState::Exited => match restart_policy(pod) {
            "Never" => false,
            "OnFailure" => s.exit_code != 0,
            _ => true,
        },
    }
}

/// `isInitContainerFailed`.
pub fn is_init_container_failed(s: &ContainerStatus) -> bool {
    s.reason == "OOMKilled"
        || (s.state == ContainerState::Exited && s.exit_code != 0)
        || s.state == ContainerState::Unknown
}

/// `findNextInitContainerToRun`: the last failed init container's status, the next one
/// to run, and whether initialization is done.
pub fn next_init_container<'a>(
    pod: &Pod,
    status: &'a RuntimePodStatus,
) -> (Option<&'a ContainerStatus>, Option<usize>, bool) {
    let inits = init_containers(pod);
    if inits.is_empty() {
        return (None, None, true);
    }
    if containers(pod).iter().any(|c| {
        status
            .find(&c.name)
            .is_some_and(|s| s.state == ContainerState::Running)
    }) {
        return (None, None, true);
    }
    for (i, c) in inits.iter().enumerate().rev() {
        if let Some(s) = status.find(&c.name)
            && is_init_container_failed(s)
        {
            return (Some(s), Some(i), false);
        }
    }
    for (i, c) in inits.iter().enumerate().rev() {
        let Some(s) = status.find(&c.name) else {
            continue;
        };
        match s.state {
            ContainerState::Running => return (None, None, false),
            ContainerState::Exited => {
                if i + 1 == inits.len() {
                    return (None, None, true);
                }
                return (None, Some(i + 1), false);
            }
            _ => {}
        }
    }
    (None, Some(0), false)
}

fn container_succeeded(c: &Container, status: &RuntimePodStatus) -> bool {
    status
        .find(&c.name)
        .is_some_and(|s| s.state == ContainerState::Exited && s.exit_code == 0)
}

/// `computePodActions`.
pub fn compute_pod_actions(
    pod: &Pod,
    status: &RuntimePodStatus,
    probes: &ProbeFailures,
) -> PodActions {
    let (create, attempt, sandbox_id) = sandbox_changed(pod, status);
    let mut actions = PodActions {
        kill_pod: create,
        create_sandbox: create,
        sandbox_id,
        attempt,
        ..PodActions::default()
    };
    let policy = restart_policy(pod);
    if create {
        if !should_restart_on_failure(pod) && attempt != 0 && !status.containers.is_empty() {
            // A Never pod whose sandbox died is not given a new one.
            actions.create_sandbox = false;
            return actions;
        }
        let to_start: Vec<usize> = containers(pod)
            .iter()
            .enumerate()
            .filter(|(_, c)| !(policy == "OnFailure" && container_succeeded(c, status)))
            .map(|(i, _)| i)
            .collect();
        if to_start.is_empty() {
            let done = if has_sidecars(pod) {
                regular_container_created(pod, status)
            } else {
                next_init_container(pod, status).2
            };
            if done {
                actions.create_sandbox = false;
                return actions;
            }
        }
        if let Some(first) = init_containers(pod).first() {
            if is_sidecar(first) {
                actions.sidecars_to_start.push(0);
            } else {
                actions.next_init_container = Some(0);
            }
            return actions;
        }
        actions.containers_to_start = to_start;
        return actions;
    }

    if has_sidecars(pod) {
        if !sidecar_init_actions(pod, status, probes, &mut actions) || actions.kill_pod {
            return actions;
        }
        return regular_container_actions(pod, status, probes, actions);
    }
    let (last_init, next, done) = next_init_container(pod, status);
    if !done {
        if let Some(next) = next {
            let failed = last_init.is_some_and(is_init_container_failed);
            if failed && !should_restart_on_failure(pod) {
                actions.kill_pod = true;
            } else {
                if let Some(s) = last_init {
                    actions.kill_if_unknown(s, &s.name);
                }
                actions.next_init_container = Some(next);
            }
        }
        return actions;
    }
    regular_container_actions(pod, status, probes, actions)
}

/// Whether any regular container was created (the pod initialized once).
fn regular_container_created(pod: &Pod, status: &RuntimePodStatus) -> bool {
    containers(pod)
        .iter()
        .any(|c| status.find(&c.name).is_some())
}

/// Why a running container must be killed: spec change, liveness or startup failure.
fn kill_reason(
    c: &Container,
    s: &ContainerStatus,
    probes: &ProbeFailures,
) -> Option<(KillReason, String)> {
    if !s.hash.is_empty() && s.hash != container_hash(c) {
        Some((
            KillReason::SpecChanged,
            format!("Container {} definition changed", c.name),
        ))
    } else if probes.liveness.contains(&s.id) {
        Some((
            KillReason::LivenessProbe,
            format!("Container {} failed liveness probe", c.name),
        ))
    } else if probes.startup.contains(&s.id) {
        Some((
            KillReason::StartupProbe,
            format!("Container {} failed startup probe", c.name),
        ))
    } else {
        None
    }
}

/// The init-container part of `computePodActions` for pods with sidecars; `true` when
/// initialization is done.
fn sidecar_init_actions(
    pod: &Pod,
    status: &RuntimePodStatus,
    probes: &ProbeFailures,
    actions: &mut PodActions,
) -> bool {
    let initialized = regular_container_created(pod, status);
    for (i, c) in init_containers(pod).iter().enumerate() {
        let s = status.find(&c.name);
        if is_sidecar(c) {
            match s {
                None => {
                    actions.sidecars_to_start.push(i);
                    if !initialized {
                        return false;
                    }
                }
                Some(s) if s.state == ContainerState::Running => {
                    if let Some((reason, message)) = kill_reason(c, s, probes) {
                        actions.containers_to_kill.insert(
                            s.id.clone(),
                            ContainerToKill {
                                name: c.name.clone(),
                                reason,
                                message: format!("{message}, will be restarted"),
                            },
                        );
                        actions.sidecars_to_start.push(i);
                        if !initialized {
                            return false;
                        }
                    } else if !initialized && probes.startup_pending.contains(&s.id) {
                        // Wait for it to start before the next init container.
                        return false;
                    }
                }
                Some(s) => {
                    actions.kill_if_unknown(s, &c.name);
                    if pod.metadata.deletion_timestamp.is_none() {
                        actions.sidecars_to_start.push(i);
                    }
                    if !initialized {
                        return false;
                    }
                }
            }
            continue;
        }
        if initialized {
            continue;
        }
        match s {
            None => {
                actions.next_init_container = Some(i);
                return false;
            }
            Some(s) if s.state == ContainerState::Running => return false,
            Some(s) if s.state == ContainerState::Exited && !is_init_container_failed(s) => {}
            Some(s) => {
                if is_init_container_failed(s) && !should_restart_on_failure(pod) {
                    actions.kill_pod = true;
                    return false;
                }
                actions.kill_if_unknown(s, &c.name);
                actions.next_init_container = Some(i);
                return false;
            }
        }
    }
    true
}

/// The regular-container part of `computePodActions`.
fn regular_container_actions(
    pod: &Pod,
    status: &RuntimePodStatus,
    probes: &ProbeFailures,
    mut actions: PodActions,
) -> PodActions {
    let mut keep = 0;
    for (idx, c) in containers(pod).iter().enumerate() {
        let s = status.find(&c.name);
        let Some(s) = s.filter(|s| s.state == ContainerState::Running) else {
            if should_container_be_restarted(c, pod, status) {
                actions.containers_to_start.push(idx);
                if let Some(s) = s
                    && s.state == ContainerState::Unknown
                {
                    actions.containers_to_kill.insert(
                        s.id.clone(),
                        ContainerToKill {
                            name: c.name.clone(),
                            reason: KillReason::Unknown,
                            message: format!(
                                "Container is in {:?} state, try killing it before restart",
                                s.state.as_str()
                            ),
                        },
                    );
                }
            }
            continue;
        };
        let Some((reason, mut message)) = kill_reason(c, s, probes) else {
            keep += 1;
            continue;
        };
        let restart = reason == KillReason::SpecChanged || should_restart_on_failure(pod);
        if restart {
            message.push_str(", will be restarted");
            actions.containers_to_start.push(idx);
        }
        actions.containers_to_kill.insert(
            s.id.clone(),
            ContainerToKill {
                name: c.name.clone(),
                reason,
                message,
            },
        );
    }
    if keep == 0 && actions.containers_to_start.is_empty() {
        actions.kill_pod = true;
    }
    actions
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::pod::runtime::SandboxStatus;
    use serde_json::json;

    fn pod(policy: &str, inits: &[&str], apps: &[&str]) -> Pod {
        let c = |n: &&str| json!({"name": n, "image": format!("busybox-{n}")});
        let mut spec = json!({
            "restartPolicy": policy,
            "containers": apps.iter().map(c).collect::<Vec<_>>(),
        });
        if !inits.is_empty() {
            spec["initContainers"] = inits.iter().map(c).collect::<Vec<_>>().into();
        }
        serde_json::from_value(json!({
            "metadata": {"name": "foo", "namespace": "new", "uid": "12345678"},
            "spec": spec,
        }))
        .unwrap()
    }

    fn sandbox(ready: bool) -> SandboxStatus {
        SandboxStatus {
            id: "sandboxID".into(),
            ready,
            attempt: 0,
            created_at: 1,
            ips: vec!["10.0.0.1".into()],
            host_network: false,
        }
    }

    fn cstatus(pod: &Pod, name: &str, state: ContainerState, exit: i32) -> ContainerStatus {
        let spec = pod.spec.as_ref().unwrap();
        let c = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .find(|c| c.name == name)
            .unwrap();
        ContainerStatus {
            id: format!("id-{name}"),
            name: name.into(),
            state,
            created_at: None,
            started_at: None,
            finished_at: None,
            exit_code: exit,
            image: String::new(),
            image_ref: String::new(),
            reason: String::new(),
            message: String::new(),
            hash: container_hash(c),
            restart_count: 0,
            sandbox_id: "sandboxID".into(),
            annotations: Default::default(),
            termination_message_host_path: None,
            log_path: String::new(),
        }
    }

    fn running(pod: &Pod, names: &[&str]) -> RuntimePodStatus {
        RuntimePodStatus {
            sandboxes: vec![sandbox(true)],
            containers: names
                .iter()
                .map(|n| cstatus(pod, n, ContainerState::Running, 0))
                .collect(),
            ..Default::default()
        }
    }

    fn none() -> ProbeFailures {
        ProbeFailures::default()
    }

    #[test]
    fn everything_running_does_nothing() {
        let p = pod("Always", &[], &["foo1", "foo2", "foo3"]);
        let s = running(&p, &["foo1", "foo2", "foo3"]);
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(
            a,
            PodActions {
                sandbox_id: "sandboxID".into(),
                ..Default::default()
            }
        );
    }

    #[test]
    fn no_sandbox_creates_one_and_starts_everything() {
        let p = pod("Always", &[], &["foo1", "foo2", "foo3"]);
        let a = compute_pod_actions(&p, &RuntimePodStatus::default(), &none());
        assert!(a.kill_pod && a.create_sandbox);
        assert_eq!(a.attempt, 0);
        assert_eq!(a.containers_to_start, vec![0, 1, 2]);
    }

    #[test]
    fn sandbox_not_ready_kills_and_recreates() {
        let p = pod("Always", &[], &["foo1", "foo2"]);
        let mut s = running(&p, &["foo1", "foo2"]);
        s.sandboxes[0].ready = false;
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.kill_pod && a.create_sandbox);
        assert_eq!(a.attempt, 1);
        assert_eq!(a.sandbox_id, "sandboxID");
        assert_eq!(a.containers_to_start, vec![0, 1]);
    }

    #[test]
    fn sandbox_without_ip_is_recreated() {
        let p = pod("Always", &[], &["foo1"]);
        let mut s = running(&p, &["foo1"]);
        s.sandboxes[0].ips.clear();
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.create_sandbox);
    }

    #[test]
    fn dead_sandbox_of_finished_onfailure_pod_is_not_recreated() {
        let p = pod("OnFailure", &[], &["foo1", "foo2"]);
        let mut s = running(&p, &[]);
        s.sandboxes[0].ready = false;
        s.containers = vec![
            cstatus(&p, "foo1", ContainerState::Exited, 0),
            cstatus(&p, "foo2", ContainerState::Exited, 0),
        ];
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.kill_pod);
        assert!(!a.create_sandbox);
    }

    #[test]
    fn dead_sandbox_of_never_pod_is_not_recreated() {
        let p = pod("Never", &[], &["foo1"]);
        let mut s = running(&p, &[]);
        s.sandboxes[0].ready = false;
        s.containers = vec![cstatus(&p, "foo1", ContainerState::Exited, 1)];
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.kill_pod && !a.create_sandbox);
    }

    #[test]
    fn restart_per_policy() {
        for (policy, exit, restart) in [
            ("Always", 0, true),
            ("Always", 1, true),
            ("OnFailure", 0, false),
            ("OnFailure", 1, true),
            ("Never", 1, false),
        ] {
            let p = pod(policy, &[], &["foo1", "foo2"]);
            let mut s = running(&p, &["foo2"]);
            s.containers
                .push(cstatus(&p, "foo1", ContainerState::Exited, exit));
            let a = compute_pod_actions(&p, &s, &none());
            assert_eq!(
                a.containers_to_start == vec![0],
                restart,
                "{policy} exit {exit}: {a:?}"
            );
            assert!(!a.kill_pod);
        }
    }

    #[test]
    fn all_exited_with_never_kills_the_pod() {
        let p = pod("Never", &[], &["foo1"]);
        let mut s = running(&p, &[]);
        s.containers = vec![cstatus(&p, "foo1", ContainerState::Exited, 0)];
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.kill_pod && !a.create_sandbox);
        assert!(a.containers_to_start.is_empty());
    }

    #[test]
    fn changed_spec_restarts_whatever_the_policy() {
        let p = pod("Never", &[], &["foo1", "foo2"]);
        let mut s = running(&p, &["foo1", "foo2"]);
        s.containers[0].hash = "stale".into();
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.containers_to_start, vec![0]);
        let k = &a.containers_to_kill["id-foo1"];
        assert_eq!(k.reason, KillReason::SpecChanged);
        assert_eq!(
            k.message,
            "Container foo1 definition changed, will be restarted"
        );
    }

    #[test]
    fn liveness_failure_restarts_unless_never() {
        let p = pod("Always", &[], &["foo1", "foo2"]);
        let s = running(&p, &["foo1", "foo2"]);
        let probes = ProbeFailures {
            liveness: ["id-foo1".to_string()].into(),
            ..Default::default()
        };
        let a = compute_pod_actions(&p, &s, &probes);
        assert_eq!(a.containers_to_start, vec![0]);
        assert_eq!(
            a.containers_to_kill["id-foo1"].message,
            "Container foo1 failed liveness probe, will be restarted"
        );
        let p = pod("Never", &[], &["foo1", "foo2"]);
        let s = running(&p, &["foo1", "foo2"]);
        let a = compute_pod_actions(&p, &s, &probes);
        assert!(a.containers_to_start.is_empty());
        assert_eq!(
            a.containers_to_kill["id-foo1"].message,
            "Container foo1 failed liveness probe"
        );
        let probes = ProbeFailures {
            startup: ["id-foo2".to_string()].into(),
            ..Default::default()
        };
        let a = compute_pod_actions(&p, &s, &probes);
        assert_eq!(
            a.containers_to_kill["id-foo2"].reason,
            KillReason::StartupProbe
        );
    }

    #[test]
    fn init_containers_run_in_order() {
        let p = pod("Always", &["init1", "init2"], &["foo1"]);
        // New pod: the first init container.
        let a = compute_pod_actions(&p, &RuntimePodStatus::default(), &none());
        assert!(a.create_sandbox);
        assert_eq!(a.next_init_container, Some(0));
        assert!(a.containers_to_start.is_empty());
        // init1 running: wait.
        let mut s = running(&p, &["init1"]);
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.next_init_container, None);
        assert!(a.containers_to_start.is_empty() && !a.kill_pod);
        // init1 done: init2.
        s.containers = vec![cstatus(&p, "init1", ContainerState::Exited, 0)];
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.next_init_container, Some(1));
        // Both done: the app containers.
        s.containers
            .insert(0, cstatus(&p, "init2", ContainerState::Exited, 0));
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.next_init_container, None);
        assert_eq!(a.containers_to_start, vec![0]);
    }

    #[test]
    fn failed_init_container_restarts_per_policy() {
        let p = pod("Always", &["init1"], &["foo1"]);
        let mut s = running(&p, &[]);
        s.containers = vec![cstatus(&p, "init1", ContainerState::Exited, 1)];
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.next_init_container, Some(0));
        assert!(!a.kill_pod);
        let p = pod("Never", &["init1"], &["foo1"]);
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.kill_pod);
        assert_eq!(a.next_init_container, None);
    }

    #[test]
    fn unknown_init_container_is_killed_first() {
        let p = pod("Always", &["init1"], &["foo1"]);
        let mut s = running(&p, &[]);
        s.containers = vec![cstatus(&p, "init1", ContainerState::Unknown, 0)];
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.next_init_container, Some(0));
        assert_eq!(a.containers_to_kill["id-init1"].reason, KillReason::Unknown);
    }

    #[test]
    fn sandbox_recreated_with_init_containers_starts_from_the_first() {
        let p = pod("Always", &["init1"], &["foo1"]);
        let mut s = running(&p, &["foo1"]);
        s.sandboxes[0].ready = false;
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.create_sandbox && a.kill_pod);
        assert_eq!(a.next_init_container, Some(0));
    }

    #[test]
    fn deleted_pod_starts_nothing() {
        let mut p = pod("Always", &[], &["foo1"]);
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::UNIX_EPOCH,
        ));
        let mut s = running(&p, &[]);
        s.containers = vec![cstatus(&p, "foo1", ContainerState::Exited, 1)];
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.containers_to_start.is_empty());
        assert!(a.kill_pod);
    }

    fn sidecar_pod(inits: &[(&str, bool)], apps: &[&str]) -> Pod {
        let mut p = pod(
            "Always",
            &inits.iter().map(|(n, _)| *n).collect::<Vec<_>>(),
            apps,
        );
        for (c, (_, sidecar)) in p
            .spec
            .as_mut()
            .unwrap()
            .init_containers
            .as_mut()
            .unwrap()
            .iter_mut()
            .zip(inits)
        {
            if *sidecar {
                c.restart_policy = Some("Always".into());
            }
        }
        p
    }

    #[test]
    fn sidecars_start_in_order_and_keep_running() {
        let p = sidecar_pod(&[("side", true), ("init", false)], &["app"]);
        // New pod: the sidecar first.
        let a = compute_pod_actions(&p, &RuntimePodStatus::default(), &none());
        assert!(a.create_sandbox);
        assert_eq!(a.sidecars_to_start, vec![0]);
        assert_eq!(a.next_init_container, None);
        // Sidecar running (started): the regular init container next.
        let mut s = running(&p, &["side"]);
        let a = compute_pod_actions(&p, &s, &none());
        assert!(a.sidecars_to_start.is_empty());
        assert_eq!(a.next_init_container, Some(1));
        // Not started yet (startup probe pending): wait.
        let pending = ProbeFailures {
            startup_pending: ["id-side".to_string()].into(),
            ..Default::default()
        };
        let a = compute_pod_actions(&p, &s, &pending);
        assert_eq!(a.next_init_container, None);
        assert!(a.containers_to_start.is_empty());
        // Init done: the app starts while the sidecar keeps running.
        s.containers
            .push(cstatus(&p, "init", ContainerState::Exited, 0));
        let a = compute_pod_actions(&p, &s, &none());
        assert_eq!(a.containers_to_start, vec![0]);
        assert!(!a.kill_pod);
        // A dead sidecar is restarted even under restartPolicy Never, and the regular init
        // container does not run again once the app was created.
        let mut p2 = p.clone();
        p2.spec.as_mut().unwrap().restart_policy = Some("Never".into());
        let mut s2 = running(&p2, &["app"]);
        s2.containers
            .push(cstatus(&p2, "side", ContainerState::Exited, 1));
        s2.containers
            .push(cstatus(&p2, "init", ContainerState::Exited, 0));
        let a = compute_pod_actions(&p2, &s2, &none());
        assert_eq!(a.sidecars_to_start, vec![0]);
        assert_eq!(a.next_init_container, None);
        assert!(a.containers_to_start.is_empty());
        assert!(!a.kill_pod);
        // Once the app is done (Never), the pod is killed though the sidecar runs.
        let mut s3 = running(&p2, &["side"]);
        s3.containers
            .push(cstatus(&p2, "app", ContainerState::Exited, 0));
        s3.containers
            .push(cstatus(&p2, "init", ContainerState::Exited, 0));
        let a = compute_pod_actions(&p2, &s3, &none());
        assert!(a.kill_pod);
    }

    #[test]
    fn sidecar_liveness_failure_restarts_it() {
        let p = sidecar_pod(&[("side", true)], &["app"]);
        let s = running(&p, &["side", "app"]);
        let probes = ProbeFailures {
            liveness: ["id-side".to_string()].into(),
            ..Default::default()
        };
        let a = compute_pod_actions(&p, &s, &probes);
        assert_eq!(a.sidecars_to_start, vec![0]);
        assert_eq!(
            a.containers_to_kill["id-side"].message,
            "Container side failed liveness probe, will be restarted"
        );
        assert!(a.containers_to_start.is_empty());
    }
}
