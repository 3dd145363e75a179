//! The runtime's view of a pod (upstream's `kubecontainer.PodStatus`), read over CRI: its
//! sandboxes and containers, newest first, with what the kubelet stored in their labels
//! and annotations (so a restarted agent knows them again).

use std::collections::{BTreeMap, HashMap};

use cri::v1;
use cri::{RuntimeService, v1::ContainerState as CState};
use jiff::Timestamp;

use crate::Error;

pub const LABEL_POD_NAME: &str = "io.kubernetes.pod.name";
pub const LABEL_POD_NAMESPACE: &str = "io.kubernetes.pod.namespace";
pub const LABEL_POD_UID: &str = "io.kubernetes.pod.uid";
pub const LABEL_CONTAINER_NAME: &str = "io.kubernetes.container.name";
pub const LABEL_CONTAINER_TYPE: &str = "io.kubernetes.container.type";
pub const ANN_CONTAINER_HASH: &str = "io.kubernetes.container.hash";
pub const ANN_RESTART_COUNT: &str = "io.kubernetes.container.restartCount";
pub const ANN_TERMINATION_MESSAGE_PATH: &str = "io.kubernetes.container.terminationMessagePath";
pub const ANN_TERMINATION_MESSAGE_POLICY: &str = "io.kubernetes.container.terminationMessagePolicy";
pub const ANN_GRACE_PERIOD: &str = "io.kubernetes.pod.terminationGracePeriod";
pub const ANN_PRE_STOP: &str = "io.kubernetes.container.preStopHandler";
pub const ANN_PORTS: &str = "io.kubernetes.container.ports";
/// Label the kubelet puts on every sandbox (`io.kubernetes.docker.type`-like marker of
/// upstream's `kubernetes_managed` sandboxes is implicit in the pod uid label).
pub const CONTAINER_TYPE_INIT: &str = "init";

/// The state of one container as the runtime reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContainerState {
    Created,
    Running,
    Exited,
    Unknown,
}

impl ContainerState {
    pub fn from_cri(state: i32) -> ContainerState {
        match CState::try_from(state) {
            Ok(CState::ContainerCreated) => ContainerState::Created,
            Ok(CState::ContainerRunning) => ContainerState::Running,
            Ok(CState::ContainerExited) => ContainerState::Exited,
            _ => ContainerState::Unknown,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ContainerState::Created => "created",
            ContainerState::Running => "running",
            ContainerState::Exited => "exited",
            ContainerState::Unknown => "unknown",
        }
    }
}

/// One sandbox of a pod.
#[derive(Debug, Clone, PartialEq)]
pub struct SandboxStatus {
    pub id: String,
    pub ready: bool,
    pub attempt: u32,
    /// Nanoseconds since the epoch.
    pub created_at: i64,
    /// The primary IP first, then the others (empty for host-network pods or stopped
    /// sandboxes).
    pub ips: Vec<String>,
    /// Whether the sandbox shares the node's network namespace.
    pub host_network: bool,
}

/// One container of a pod (`kubecontainer.Status`).
#[derive(Debug, Clone, PartialEq)]
pub struct ContainerStatus {
    pub id: String,
    pub name: String,
    pub state: ContainerState,
    pub created_at: Option<Timestamp>,
    pub started_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub exit_code: i32,
    pub image: String,
    pub image_ref: String,
    pub reason: String,
    pub message: String,
    /// `io.kubernetes.container.hash`.
    pub hash: String,
    pub restart_count: i32,
    pub sandbox_id: String,
    /// `io.kubernetes.container.terminationMessagePath` / policy / pod grace period /
    /// pre-stop handler (JSON of the `LifecycleHandler`), from the annotations.
    pub annotations: BTreeMap<String, String>,
    /// Host path of the termination-message file, from the container's mounts.
    pub termination_message_host_path: Option<String>,
    pub log_path: String,
}

impl ContainerStatus {
    pub fn grace_period(&self) -> Option<i64> {
        self.annotations
            .get(ANN_GRACE_PERIOD)
            .and_then(|v| v.parse().ok())
    }
}

/// Everything the runtime has of one pod.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuntimePodStatus {
    pub uid: String,
    pub name: String,
    pub namespace: String,
    /// Newest first.
    pub sandboxes: Vec<SandboxStatus>,
    /// Newest first.
    pub containers: Vec<ContainerStatus>,
}

impl RuntimePodStatus {
    /// The newest status of the container named `name` (`FindContainerStatusByName`).
    pub fn find(&self, name: &str) -> Option<&ContainerStatus> {
        self.containers.iter().find(|c| c.name == name)
    }

    /// The IPs of the newest sandbox.
    pub fn ips(&self) -> Vec<String> {
        self.sandboxes
            .first()
            .map(|s| s.ips.clone())
            .unwrap_or_default()
    }

    /// Containers in the running (or unknown) state.
    pub fn running(&self) -> impl Iterator<Item = &ContainerStatus> {
        self.containers
            .iter()
            .filter(|c| matches!(c.state, ContainerState::Running | ContainerState::Unknown))
    }
}

fn ts(nanos: i64) -> Option<Timestamp> {
    if nanos <= 0 {
        return None;
    }
    Timestamp::from_nanosecond(i128::from(nanos)).ok()
}

/// Reads a sandbox status from CRI.
pub fn sandbox_from_cri(s: &v1::PodSandboxStatus) -> SandboxStatus {
    let mut ips = Vec::new();
    if let Some(net) = &s.network {
        if !net.ip.is_empty() {
            ips.push(net.ip.clone());
        }
        ips.extend(
            net.additional_ips
                .iter()
                .filter(|i| !i.ip.is_empty())
                .map(|i| i.ip.clone()),
        );
    }
    let host_network = s
        .linux
        .as_ref()
        .and_then(|l| l.namespaces.as_ref())
        .and_then(|n| n.options.as_ref())
        .is_some_and(|o| o.network == v1::NamespaceMode::Node as i32);
    SandboxStatus {
        id: s.id.clone(),
        ready: s.state == v1::PodSandboxState::SandboxReady as i32,
        attempt: s.metadata.as_ref().map_or(0, |m| m.attempt),
        created_at: s.created_at,
        ips,
        host_network,
    }
}

/// Reads a container status from CRI.
pub fn container_from_cri(c: &v1::ContainerStatus) -> ContainerStatus {
    let annotations: BTreeMap<String, String> = c
        .annotations
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let tm_path = annotations.get(ANN_TERMINATION_MESSAGE_PATH).cloned();
    let termination_message_host_path = tm_path.and_then(|p| {
        c.mounts
            .iter()
            .find(|m| m.container_path == p)
            .map(|m| m.host_path.clone())
    });
    ContainerStatus {
        id: c.id.clone(),
        name: c
            .metadata
            .as_ref()
            .map(|m| m.name.clone())
            .or_else(|| c.labels.get(LABEL_CONTAINER_NAME).cloned())
            .unwrap_or_default(),
        state: ContainerState::from_cri(c.state),
        created_at: ts(c.created_at),
        started_at: ts(c.started_at),
        finished_at: ts(c.finished_at),
        exit_code: c.exit_code,
        image: c
            .image
            .as_ref()
            .map(|i| i.image.clone())
            .unwrap_or_default(),
        // The image id when the runtime reports one (CRI ≥ 1.30), else its reference.
        image_ref: if c.image_id.is_empty() {
            c.image_ref.clone()
        } else {
            c.image_id.clone()
        },
        reason: c.reason.clone(),
        message: c.message.clone(),
        hash: annotations
            .get(ANN_CONTAINER_HASH)
            .cloned()
            .unwrap_or_default(),
        restart_count: annotations
            .get(ANN_RESTART_COUNT)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0),
        sandbox_id: String::new(),
        annotations,
        termination_message_host_path,
        log_path: c.log_path.clone(),
    }
}

fn uid_filter(uid: &str) -> HashMap<String, String> {
    HashMap::from([(LABEL_POD_UID.to_string(), uid.to_string())])
}

/// Reads the whole runtime status of pod `uid` (`GetPodStatus`): sandbox statuses and
/// container statuses, newest first. Objects that vanish meanwhile are skipped.
pub async fn pod_status(
    runtime: &dyn RuntimeService,
    uid: &str,
    name: &str,
    namespace: &str,
) -> Result<RuntimePodStatus, Error> {
    let sandboxes = runtime
        .list_pod_sandbox(Some(v1::PodSandboxFilter {
            label_selector: uid_filter(uid),
            ..Default::default()
        }))
        .await?;
    let mut out = RuntimePodStatus {
        uid: uid.to_string(),
        name: name.to_string(),
        namespace: namespace.to_string(),
        ..Default::default()
    };
    for s in &sandboxes {
        match runtime.pod_sandbox_status(&s.id, false).await {
            Ok(r) => {
                if let Some(st) = r.status {
                    out.sandboxes.push(sandbox_from_cri(&st));
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    out.sandboxes.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then(b.attempt.cmp(&a.attempt))
    });
    let containers = runtime
        .list_containers(Some(v1::ContainerFilter {
            label_selector: uid_filter(uid),
            ..Default::default()
        }))
        .await?;
    for c in &containers {
        match runtime.container_status(&c.id, false).await {
            Ok(r) => {
                if let Some(st) = r.status {
                    let mut cs = container_from_cri(&st);
                    cs.sandbox_id = c.pod_sandbox_id.clone();
                    if cs.state == ContainerState::Exited {
                        enrich_termination_message(&mut cs);
                    }
                    out.containers.push(cs);
                }
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e.into()),
        }
    }
    out.containers.sort_by(|a, b| {
        b.created_at
            .cmp(&a.created_at)
            .then(b.restart_count.cmp(&a.restart_count))
    });
    Ok(out)
}

/// Most bytes of a termination message (upstream's `maxMsgSize`, 4 KiB) or log tail.
const MAX_MESSAGE: usize = 4096;

/// Adds the termination message of an exited container to its message (upstream's
/// `getTerminationMessage`, with `FallbackToLogsOnError` reading the log's tail).
fn enrich_termination_message(cs: &mut ContainerStatus) {
    let mut message = cs
        .termination_message_host_path
        .as_ref()
        .and_then(|p| std::fs::read(p).ok())
        .map(|b| {
            let start = b.len().saturating_sub(MAX_MESSAGE);
            String::from_utf8_lossy(&b[start..]).into_owned()
        })
        .unwrap_or_default();
    let fallback = cs
        .annotations
        .get(ANN_TERMINATION_MESSAGE_POLICY)
        .is_some_and(|p| p == "FallbackToLogsOnError")
        && cs.exit_code != 0
        && cs.reason != "ContainerCannotRun";
    if message.is_empty() && fallback {
        message = log_tail(&cs.log_path);
    }
    if !message.is_empty() {
        if !cs.message.is_empty() {
            cs.message.push_str(": ");
        }
        cs.message.push_str(&message);
    }
}

/// The last 80 lines (at most 2 KiB) of a CRI log file, without the CRI prefixes.
fn log_tail(path: &str) -> String {
    let Ok(text) = std::fs::read_to_string(path) else {
        return String::new();
    };
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(80);
    let mut out = String::new();
    for line in &lines[start..] {
        // `<time> <stream> <P|F> <text>`.
        let mut parts = line.splitn(4, ' ');
        let (_, _, tag, body) = (parts.next(), parts.next(), parts.next(), parts.next());
        out.push_str(body.unwrap_or(line));
        if tag != Some("P") {
            out.push('\n');
        }
    }
    let start = out.len().saturating_sub(2048);
    let mut start = start;
    while !out.is_char_boundary(start) {
        start += 1;
    }
    out[start..].to_string()
}

/// One pod the runtime runs, as its sandboxes' labels name it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RuntimePodRef {
    pub uid: String,
    pub name: String,
    pub namespace: String,
}

/// The pods the runtime has sandboxes or containers of (by their kubelet labels).
pub async fn list_pods(runtime: &dyn RuntimeService) -> Result<Vec<RuntimePodRef>, Error> {
    let mut pods = BTreeMap::new();
    for s in runtime.list_pod_sandbox(None).await? {
        if let Some(uid) = s.labels.get(LABEL_POD_UID) {
            pods.entry(uid.clone()).or_insert_with(|| RuntimePodRef {
                uid: uid.clone(),
                name: s.labels.get(LABEL_POD_NAME).cloned().unwrap_or_default(),
                namespace: s
                    .labels
                    .get(LABEL_POD_NAMESPACE)
                    .cloned()
                    .unwrap_or_default(),
            });
        }
    }
    for c in runtime.list_containers(None).await? {
        if let Some(uid) = c.labels.get(LABEL_POD_UID) {
            pods.entry(uid.clone()).or_insert_with(|| RuntimePodRef {
                uid: uid.clone(),
                name: c.labels.get(LABEL_POD_NAME).cloned().unwrap_or_default(),
                namespace: c
                    .labels
                    .get(LABEL_POD_NAMESPACE)
                    .cloned()
                    .unwrap_or_default(),
            });
        }
    }
    Ok(pods.into_values().collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn exited(dir: &std::path::Path, policy: &str, exit: i32) -> v1::ContainerStatus {
        v1::ContainerStatus {
            id: "c1".into(),
            metadata: Some(v1::ContainerMetadata {
                name: "app".into(),
                attempt: 2,
            }),
            state: v1::ContainerState::ContainerExited as i32,
            created_at: 1_700_000_000_000_000_000,
            started_at: 1_700_000_001_000_000_000,
            finished_at: 1_700_000_002_000_000_000,
            exit_code: exit,
            reason: if exit == 0 { "Completed" } else { "Error" }.into(),
            annotations: [
                (ANN_CONTAINER_HASH.to_string(), "abc".to_string()),
                (ANN_RESTART_COUNT.to_string(), "2".to_string()),
                (
                    ANN_TERMINATION_MESSAGE_PATH.to_string(),
                    "/dev/termination-log".to_string(),
                ),
                (
                    ANN_TERMINATION_MESSAGE_POLICY.to_string(),
                    policy.to_string(),
                ),
                (ANN_GRACE_PERIOD.to_string(), "30".to_string()),
            ]
            .into(),
            mounts: vec![v1::Mount {
                container_path: "/dev/termination-log".into(),
                host_path: dir.join("tlog").display().to_string(),
                ..Default::default()
            }],
            log_path: dir.join("2.log").display().to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn container_status_from_cri_with_termination_messages() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("tlog"), "bye").unwrap();
        std::fs::write(
            dir.path().join("2.log"),
            "2024-01-01T00:00:00Z stderr P par\n2024-01-01T00:00:00Z stderr F tial\n",
        )
        .unwrap();
        let mut cs = container_from_cri(&exited(dir.path(), "File", 1));
        assert_eq!(cs.name, "app");
        assert_eq!(cs.restart_count, 2);
        assert_eq!(cs.hash, "abc");
        assert_eq!(cs.grace_period(), Some(30));
        assert_eq!(cs.state, ContainerState::Exited);
        assert_eq!(cs.finished_at.unwrap().as_second(), 1_700_000_002);
        enrich_termination_message(&mut cs);
        assert_eq!(cs.message, "bye");
        // FallbackToLogsOnError: the log's tail when the file is empty and it failed.
        std::fs::write(dir.path().join("tlog"), "").unwrap();
        let mut cs = container_from_cri(&exited(dir.path(), "FallbackToLogsOnError", 1));
        enrich_termination_message(&mut cs);
        assert_eq!(cs.message, "partial\n");
        let mut ok = container_from_cri(&exited(dir.path(), "FallbackToLogsOnError", 0));
        enrich_termination_message(&mut ok);
        assert_eq!(ok.message, "");
    }

    #[test]
    fn sandbox_status_from_cri() {
        let s = sandbox_from_cri(&v1::PodSandboxStatus {
            id: "s".into(),
            state: v1::PodSandboxState::SandboxReady as i32,
            metadata: Some(v1::PodSandboxMetadata {
                attempt: 3,
                ..Default::default()
            }),
            network: Some(v1::PodSandboxNetworkStatus {
                ip: "10.88.0.4".into(),
                additional_ips: vec![v1::PodIp {
                    ip: "fd00::4".into(),
                }],
            }),
            linux: Some(v1::LinuxPodSandboxStatus {
                namespaces: Some(v1::Namespace {
                    options: Some(v1::NamespaceOption {
                        network: v1::NamespaceMode::Node as i32,
                        ..Default::default()
                    }),
                }),
            }),
            ..Default::default()
        });
        assert!(s.ready && s.host_network);
        assert_eq!(s.attempt, 3);
        assert_eq!(s.ips, vec!["10.88.0.4", "fd00::4"]);
    }
}
