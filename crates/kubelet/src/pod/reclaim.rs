//! A deleted pod's resources, reclaimed before the kubelet's final `DELETE` (upstream's
//! `podResourcesAreReclaimed`, which gates the status manager's `canBeDeleted`): nothing
//! of the pod left in the runtime (no container running, sandboxes removed), its volumes
//! unmounted and its directory removed, its pod cgroup removed. So once the pod object is
//! gone from the API, nothing of it is left on the node.
//!
//! Removal is retried with a short back-off ([`FinalDelete`]); a cgroup stays busy for a
//! moment while the processes of a container runc had to SIGKILL are leaving. The wait is
//! bounded: after [`RECLAIM_TIMEOUT`] the pod is deleted anyway and what is left is logged
//! (upstream waits for its housekeeping to reclaim it; rkube has no such sweep yet).

use std::sync::Arc;
use std::time::{Duration, Instant};

use cri::{RuntimeService, v1};
use k8s_openapi::api::core::v1::Pod;

use super::runtime::LABEL_POD_UID;
use crate::{CgroupManager, Error, VolumeManager};

/// How long the final delete waits for the pod's resources at most.
pub const RECLAIM_TIMEOUT: Duration = Duration::from_secs(30);
/// The first retry's delay; doubled per attempt up to [`MAX_RETRY`].
pub const FIRST_RETRY: Duration = Duration::from_millis(100);
/// The longest delay between two attempts.
pub const MAX_RETRY: Duration = Duration::from_secs(2);

/// What still holds a pod's resources (each `Some` says what and why).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Leftovers {
    /// Sandboxes or containers still in the runtime.
    pub runtime: Option<String>,
    /// Volumes still mounted, or the pod directory still there.
    pub volumes: Option<String>,
    /// The pod cgroup still there.
    pub cgroup: Option<String>,
}

impl Leftovers {
    /// Whether everything is reclaimed.
    pub fn is_empty(&self) -> bool {
        self.runtime.is_none() && self.volumes.is_none() && self.cgroup.is_none()
    }

    /// What is left, for logs.
    pub fn describe(&self) -> String {
        [
            ("runtime", &self.runtime),
            ("volumes", &self.volumes),
            ("cgroup", &self.cgroup),
        ]
        .iter()
        .filter_map(|(what, why)| why.as_ref().map(|w| format!("{what}: {w}")))
        .collect::<Vec<_>>()
        .join("; ")
    }
}

/// What the final delete does after an attempt to reclaim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Everything is reclaimed: delete the pod.
    Delete,
    /// The wait is over: delete the pod although this is left.
    DeleteAnyway(String),
    /// Try again after this long.
    RetryIn(Duration),
}

/// The final delete's wait for one pod: when it began and how many attempts it took.
#[derive(Debug, Clone, Default)]
pub struct FinalDelete {
    since: Option<Instant>,
    attempts: u32,
}

impl FinalDelete {
    /// The verdict after an attempt that left `left`, at `now`. Pure but for the state it
    /// keeps.
    pub fn verdict(&mut self, left: &Leftovers, now: Instant) -> Verdict {
        if left.is_empty() {
            return Verdict::Delete;
        }
        let since = *self.since.get_or_insert(now);
        if now.saturating_duration_since(since) >= RECLAIM_TIMEOUT {
            return Verdict::DeleteAnyway(left.describe());
        }
        let delay = FIRST_RETRY
            .saturating_mul(1u32 << self.attempts.min(16))
            .min(MAX_RETRY);
        self.attempts = self.attempts.saturating_add(1);
        Verdict::RetryIn(delay)
    }
}

fn uid_filter(uid: &str) -> std::collections::HashMap<String, String> {
    [(LABEL_POD_UID.to_string(), uid.to_string())].into()
}

/// Stops and removes every sandbox of pod `uid` (their containers go with them), then
/// any container of it left.
///
/// # Errors
/// The first CRI call that failed (a sandbox gone meanwhile is not an error).
pub async fn remove_from_runtime(runtime: &dyn RuntimeService, uid: &str) -> Result<(), Error> {
    let filter = v1::PodSandboxFilter {
        label_selector: uid_filter(uid),
        ..Default::default()
    };
    for s in runtime.list_pod_sandbox(Some(filter)).await? {
        runtime
            .stop_pod_sandbox(&s.id)
            .await
            .or_else(|e| if e.is_not_found() { Ok(()) } else { Err(e) })?;
        runtime
            .remove_pod_sandbox(&s.id)
            .await
            .or_else(|e| if e.is_not_found() { Ok(()) } else { Err(e) })?;
    }
    let filter = v1::ContainerFilter {
        label_selector: uid_filter(uid),
        ..Default::default()
    };
    for c in runtime.list_containers(Some(filter)).await? {
        if let Err(e) = runtime.remove_container(&c.id).await
            && !e.is_not_found()
        {
            tracing::debug!(container = %c.id, error = %e, "removing a container");
        }
    }
    Ok(())
}

/// The pod's containers the runtime still runs.
async fn running_containers(runtime: &dyn RuntimeService, uid: &str) -> Result<usize, Error> {
    let filter = v1::ContainerFilter {
        label_selector: uid_filter(uid),
        state: Some(v1::ContainerStateValue {
            state: v1::ContainerState::ContainerRunning as i32,
        }),
        ..Default::default()
    };
    Ok(runtime.list_containers(Some(filter)).await?.len())
}

/// Removes the pod's cgroup off the async workers (a busy cgroup is retried with short
/// sleeps inside the manager).
pub async fn remove_cgroup(cgroups: Arc<dyn CgroupManager>, pod: &Pod) -> Result<(), Error> {
    let pod = pod.clone();
    tokio::task::spawn_blocking(move || cgroups.remove_pod(&pod))
        .await
        .map_err(|e| Error::Other(format!("removing the pod cgroup: {e}")))?
}

/// One attempt at reclaiming everything of `pod`, in upstream's order: the runtime's
/// sandboxes and containers, then the volumes, then the pod cgroup (busy while processes
/// of its containers remain). Returns what is left.
pub async fn reclaim(
    runtime: &dyn RuntimeService,
    volumes: &dyn VolumeManager,
    cgroups: Arc<dyn CgroupManager>,
    pod: &Pod,
) -> Leftovers {
    let uid = pod.metadata.uid.as_deref().unwrap_or_default();
    let mut left = Leftovers::default();
    if let Err(e) = remove_from_runtime(runtime, uid).await {
        left.runtime = Some(e.to_string());
    }
    match running_containers(runtime, uid).await {
        Ok(0) => {}
        Ok(n) => {
            left.runtime
                .get_or_insert_with(|| format!("{n} container(s) still running"));
        }
        Err(e) => {
            left.runtime.get_or_insert_with(|| e.to_string());
        }
    }
    if let Err(e) = volumes.teardown(uid).await {
        left.volumes = Some(e.to_string());
    }
    if let Err(e) = remove_cgroup(cgroups, pod).await {
        left.cgroup = Some(e.to_string());
    }
    left
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;
    use cri::fake::FakeRuntime;

    use super::*;
    use crate::PodVolumes;
    use crate::cgroups::FakeCgroups;

    /// Volumes whose teardown fails a number of times; every call is logged.
    struct FakeVolumes {
        failures: Mutex<u32>,
        log: Arc<Mutex<Vec<String>>>,
    }

    #[async_trait]
    impl VolumeManager for FakeVolumes {
        async fn setup(&self, _pod: &Pod) -> Result<PodVolumes, Error> {
            Ok(PodVolumes::default())
        }
        async fn teardown(&self, pod_uid: &str) -> Result<(), Error> {
            let mut f = self.failures.lock().unwrap();
            if *f > 0 {
                *f -= 1;
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("teardown {pod_uid} busy"));
                return Err(Error::Other("still mounted".into()));
            }
            self.log.lock().unwrap().push(format!("teardown {pod_uid}"));
            Ok(())
        }
    }

    fn pod(uid: &str) -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default", "uid": uid},
            "spec": {"containers": [{"name": "c", "image": "img"}]},
        }))
        .unwrap()
    }

    /// A sandbox with a running container for pod `uid` in the fake runtime.
    async fn running_pod(fake: &FakeRuntime, uid: &str) {
        fake.add_image("docker.io/library/img:latest");
        let labels = uid_filter(uid);
        let sandbox = v1::PodSandboxConfig {
            metadata: Some(v1::PodSandboxMetadata {
                name: "p".into(),
                namespace: "default".into(),
                uid: uid.into(),
                attempt: 0,
            }),
            labels: labels.clone(),
            ..Default::default()
        };
        let id = fake.run_pod_sandbox(&sandbox, "").await.unwrap();
        let container = v1::ContainerConfig {
            metadata: Some(v1::ContainerMetadata {
                name: "c".into(),
                attempt: 0,
            }),
            image: Some(v1::ImageSpec {
                image: "docker.io/library/img:latest".into(),
                ..Default::default()
            }),
            labels,
            ..Default::default()
        };
        let c = fake
            .create_container(&id, &container, &sandbox)
            .await
            .unwrap();
        fake.start_container(&c).await.unwrap();
    }

    /// Drives the final delete as the pod worker does, with a simulated clock: returns
    /// the verdict that ended it and the time it took.
    async fn drive(
        fake: &FakeRuntime,
        volumes: &FakeVolumes,
        cgroups: &Arc<FakeCgroups>,
        pod: &Pod,
        log: &Arc<Mutex<Vec<String>>>,
    ) -> (Verdict, Duration) {
        let start = Instant::now();
        let mut now = start;
        let mut fd = FinalDelete::default();
        loop {
            let cg: Arc<dyn CgroupManager> = Arc::clone(cgroups) as Arc<dyn CgroupManager>;
            let left = reclaim(fake, volumes, cg, pod).await;
            let uid = pod.metadata.uid.as_deref().unwrap();
            log.lock()
                .unwrap()
                .push(format!("cgroup exists: {}", cgroups.exists(uid)));
            match fd.verdict(&left, now) {
                Verdict::RetryIn(d) => now += d,
                v => {
                    log.lock().unwrap().push("DELETE".into());
                    return (v, now - start);
                }
            }
        }
    }

    #[tokio::test]
    async fn the_final_delete_comes_after_the_cgroup_is_gone() {
        let fake = FakeRuntime::new();
        running_pod(&fake, "u1").await;
        let cgroups = Arc::new(FakeCgroups::new());
        let p = pod("u1");
        cgroups.ensure_pod(&p).unwrap();
        cgroups.set_busy("u1", 3);
        let log = Arc::new(Mutex::new(Vec::new()));
        let volumes = FakeVolumes {
            failures: Mutex::new(1),
            log: Arc::clone(&log),
        };
        let (verdict, took) = drive(&fake, &volumes, &cgroups, &p, &log).await;
        assert_eq!(verdict, Verdict::Delete);
        // Back-off: 100 + 200 + 400 ms before the fourth attempt succeeds.
        assert_eq!(took, Duration::from_millis(700));
        assert!(fake.sandboxes().is_empty() && fake.containers().is_empty());
        assert!(!cgroups.exists("u1"));
        let log = log.lock().unwrap().clone();
        let delete_at = log.iter().position(|l| l == "DELETE").unwrap();
        assert_eq!(delete_at, log.len() - 1);
        assert_eq!(log[delete_at - 1], "cgroup exists: false");
        assert_eq!(
            log.iter().filter(|l| *l == "cgroup exists: true").count(),
            3,
            "{log:?}"
        );
        // The volumes were torn down (after one failure) before the delete.
        assert_eq!(log[0], "teardown u1 busy");
        assert!(log[..delete_at].contains(&"teardown u1".to_string()));
        // Sandbox gone before the cgroup was first tried.
        let calls = fake.calls();
        assert!(calls.contains(&"StopPodSandbox".to_string()), "{calls:?}");
        assert!(calls.contains(&"RemovePodSandbox".to_string()), "{calls:?}");
        assert_eq!(
            cgroups.calls(),
            vec![
                "ensure u1",
                "remove u1",
                "remove u1",
                "remove u1",
                "remove u1"
            ]
        );
    }

    #[tokio::test]
    async fn a_cgroup_that_never_goes_delays_the_delete_a_bounded_time() {
        let fake = FakeRuntime::new();
        let cgroups = Arc::new(FakeCgroups::new());
        let p = pod("u2");
        cgroups.ensure_pod(&p).unwrap();
        cgroups.set_busy("u2", u32::MAX);
        let log = Arc::new(Mutex::new(Vec::new()));
        let volumes = FakeVolumes {
            failures: Mutex::new(0),
            log: Arc::clone(&log),
        };
        let (verdict, took) = drive(&fake, &volumes, &cgroups, &p, &log).await;
        match verdict {
            Verdict::DeleteAnyway(what) => assert!(what.starts_with("cgroup: "), "{what}"),
            v => panic!("{v:?}"),
        }
        assert!(took >= RECLAIM_TIMEOUT && took < RECLAIM_TIMEOUT + MAX_RETRY);
        assert!(cgroups.exists("u2"));
    }

    #[test]
    fn verdicts_back_off_and_end() {
        let mut fd = FinalDelete::default();
        let t0 = Instant::now();
        let busy = Leftovers {
            cgroup: Some("busy".into()),
            ..Default::default()
        };
        let delays: Vec<Verdict> = (0..7).map(|_| fd.verdict(&busy, t0)).collect();
        assert_eq!(
            delays,
            [100, 200, 400, 800, 1600, 2000, 2000]
                .map(|ms| Verdict::RetryIn(Duration::from_millis(ms)))
                .to_vec()
        );
        assert_eq!(
            fd.verdict(&busy, t0 + RECLAIM_TIMEOUT),
            Verdict::DeleteAnyway("cgroup: busy".into())
        );
        assert_eq!(
            fd.verdict(&Leftovers::default(), t0 + RECLAIM_TIMEOUT),
            Verdict::Delete
        );
        let both = Leftovers {
            runtime: Some("1 container(s) still running".into()),
            volumes: Some("mounted".into()),
            cgroup: None,
        };
        assert_eq!(
            both.describe(),
            "runtime: 1 container(s) still running; volumes: mounted"
        );
    }
}
