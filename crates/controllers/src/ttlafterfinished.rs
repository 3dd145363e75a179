//! The TTL-after-finished controller (upstream's `pkg/controller/ttlafterfinished`): a
//! Job with `spec.ttlSecondsAfterFinished` is deleted that long after it finished
//! (its `Complete` or `Failed` condition's transition), in the foreground with a uid
//! precondition, after checking the fresh Job from the API server once more. A Job whose
//! time has not come is looked at again when it expires.

use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::batch::v1::Job;
use kube::Client;
use kube::api::{Api, DeleteParams, Preconditions};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::workqueue::WorkQueue;
use serde_json::Value;

use crate::informers::{self, Informer, Next};
use crate::run::now_ms;

/// What to do with a Job (`processTTL`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ttl {
    /// Nothing: no TTL, not finished, or being deleted.
    Ignore,
    /// Expired at this time (ms since the epoch): delete.
    Expired(i64),
    /// Look again after this many milliseconds.
    After(i64),
}

/// When the Job finished (`jobFinishTime`): the transition of its True Complete or
/// Failed condition.
pub fn finish_time_ms(job: &Value) -> Option<i64> {
    job["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| (c["type"] == "Complete" || c["type"] == "Failed") && c["status"] == "True")
        .and_then(|c| crate::pods::time_ms(&c["lastTransitionTime"]))
}

/// `processTTL` / `timeLeft` at `now_ms`.
pub fn process(job: &Value, now_ms: i64) -> Ttl {
    if !job["metadata"]["deletionTimestamp"].is_null() {
        return Ttl::Ignore;
    }
    let Some(ttl) = job["spec"]["ttlSecondsAfterFinished"].as_i64() else {
        return Ttl::Ignore;
    };
    let Some(finished) = finish_time_ms(job) else {
        return Ttl::Ignore;
    };
    let expire = finished.saturating_add(ttl.saturating_mul(1000));
    if now_ms >= expire {
        Ttl::Expired(expire)
    } else {
        Ttl::After(expire - now_ms)
    }
}

struct Shared {
    jobs: Store<Job>,
    queue: WorkQueue<String>,
    writer: Client,
}

fn key_of(job: &Job) -> String {
    format!(
        "{}/{}",
        job.metadata.namespace.as_deref().unwrap_or_default(),
        job.metadata.name.as_deref().unwrap_or_default()
    )
}

/// Runs the controller until the process ends.
pub async fn run_ttl_after_finished(jobs: Arc<Informer<Job>>, writer: Client, workers: usize) {
    let mut events = jobs.subscribe();
    let shared = Arc::new(Shared {
        jobs: jobs.store.clone(),
        queue: WorkQueue::named("ttl_jobs_to_delete"),
        writer,
    });
    let sh = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut events).await {
                Next::Apply(j) => {
                    // Only Jobs that may be cleaned up are queued (`needsCleanup`).
                    if j.spec
                        .as_ref()
                        .and_then(|s| s.ttl_seconds_after_finished)
                        .is_some()
                    {
                        sh.queue.add(key_of(&j));
                    }
                }
                Next::Delete(_) | Next::Other => {}
                Next::Resync => {
                    for j in sh.jobs.state() {
                        sh.queue.add(key_of(&j));
                    }
                }
                Next::Closed => break,
            }
        }
    });
    jobs.synced().await;
    for j in shared.jobs.state() {
        shared.queue.add(key_of(&j));
    }
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "ttl-after-finished",
        |s, key| async move { sync(&s, &key).await },
    );
}

fn requeue(s: &Shared, key: &str, ms: i64) {
    s.queue.add_after(
        key.to_string(),
        Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(0)),
    );
}

/// One `processJob`.
async fn sync(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let Some(job) = s.jobs.get(&ObjectRef::new(name).within(ns)) else {
        return Ok(());
    };
    let Ok(cached) = serde_json::to_value(job.as_ref()) else {
        return Ok(());
    };
    match process(&cached, now_ms()) {
        Ttl::Ignore => return Ok(()),
        Ttl::After(ms) => {
            requeue(s, key, ms);
            return Ok(());
        }
        Ttl::Expired(_) => {}
    }
    // The cached TTL may be stale: decide again on the fresh Job.
    let api: Api<Job> = Api::namespaced(s.writer.clone(), ns);
    let Some(fresh) = api.get_opt(name).await? else {
        return Ok(());
    };
    let fresh_value = serde_json::to_value(&fresh).map_err(kube::Error::SerdeError)?;
    match process(&fresh_value, now_ms()) {
        Ttl::Ignore => return Ok(()),
        Ttl::After(ms) => {
            requeue(s, key, ms);
            return Ok(());
        }
        Ttl::Expired(_) => {}
    }
    tracing::debug!(%key, "cleaning up Job");
    let dp = DeleteParams {
        preconditions: Some(Preconditions {
            uid: fresh.metadata.uid.clone(),
            resource_version: None,
        }),
        ..DeleteParams::foreground()
    };
    match api.delete(name, &dp).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(e)) if e.code == 404 || e.code == 409 => Ok(()),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(ttl: Option<i64>, cond: Option<(&str, &str, &str)>) -> Value {
        let mut j = json!({"metadata": {"name": "j", "namespace": "d"}, "spec": {}, "status": {}});
        if let Some(t) = ttl {
            j["spec"]["ttlSecondsAfterFinished"] = json!(t);
        }
        if let Some((t, s, at)) = cond {
            j["status"]["conditions"] = json!([{"type": t, "status": s, "lastTransitionTime": at}]);
        }
        j
    }

    const T0: i64 = 1_700_000_000_000;
    fn at(ms: i64) -> String {
        crate::util::rfc3339(ms)
    }

    #[test]
    fn no_ttl_or_unfinished_is_ignored() {
        assert_eq!(
            process(&job(None, Some(("Complete", "True", &at(T0)))), T0),
            Ttl::Ignore
        );
        assert_eq!(process(&job(Some(5), None), T0), Ttl::Ignore);
        assert_eq!(
            process(&job(Some(5), Some(("Complete", "False", &at(T0)))), T0),
            Ttl::Ignore
        );
        assert_eq!(
            process(
                &job(Some(5), Some(("SuccessCriteriaMet", "True", &at(T0)))),
                T0
            ),
            Ttl::Ignore
        );
    }

    #[test]
    fn requeued_until_expiry_then_expired() {
        let j = job(Some(10), Some(("Complete", "True", &at(T0))));
        assert_eq!(process(&j, T0 + 4_000), Ttl::After(6_000));
        assert_eq!(process(&j, T0 + 10_000), Ttl::Expired(T0 + 10_000));
        let f = job(Some(0), Some(("Failed", "True", &at(T0))));
        assert_eq!(process(&f, T0), Ttl::Expired(T0));
    }

    #[test]
    fn deleting_job_is_ignored() {
        let mut j = job(Some(0), Some(("Complete", "True", &at(T0))));
        j["metadata"]["deletionTimestamp"] = json!(at(T0));
        assert_eq!(process(&j, T0 + 1000), Ttl::Ignore);
    }
}
