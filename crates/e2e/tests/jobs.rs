//! The Job, CronJob and TTL-after-finished controllers inside `rkube server`, driven by
//! the real kubectl 1.33 over two simulated nodes (their pods run; a test finishes a pod
//! by writing its status as a kubelet would):
//!
//! - `kubectl create job` makes a pod with the Job's labels, controller reference and
//!   tracking finalizer; once it succeeds the Job is Complete (`kubectl wait`) and the
//!   finalizer is gone; a completions=3 / parallelism=2 Job runs two pods at a time to
//!   three successes; a Job with `ttlSecondsAfterFinished` is deleted after finishing;
//! - a failing Job is re-created after the back-off and fails with BackoffLimitExceeded;
//!   an Indexed Job's pods carry their index (name, annotation, label, hostname, env);
//! - `kubectl create cronjob` and `kubectl create job --from=cronjob/...` work, and an
//!   `@every 5s` CronJob creates its Job, tracks it in `status.active` and records
//!   `lastScheduleTime` and `lastSuccessfulTime`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, wait_until};

const V: Option<&str> = Some("1.33");

fn start() -> (RkubeServer, SimNodes) {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    let sim = SimNodes::start(&server, "jobs", &["--count", "2"]);
    (server, sim)
}

/// The running (not deleted, not finished) pods of a Job.
fn running(server: &RkubeServer, job: &str) -> Vec<Value> {
    server
        .get_items(&["pods", "-l", &format!("job-name={job}")])
        .into_iter()
        .filter(|p| p["metadata"]["deletionTimestamp"].is_null())
        .filter(|p| p["status"]["phase"] == "Running")
        .collect()
}

/// Finishes a pod as its kubelet would: phase and a terminated container.
fn finish(server: &RkubeServer, pod: &Value, exit_code: i64) {
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    let now = rfc3339_now();
    let containers: Vec<Value> = pod["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            json!({"name": c["name"], "image": c["image"], "imageID": "", "ready": false,
                "restartCount": 0, "state": {"terminated": {"exitCode": exit_code,
                "reason": if exit_code == 0 { "Completed" } else { "Error" },
                "startedAt": now, "finishedAt": now}}})
        })
        .collect();
    let patch = json!({"status": {"phase": phase, "containerStatuses": containers}});
    server.kubectl_ok(
        V,
        &[
            "patch",
            "pod",
            pod["metadata"]["name"].as_str().unwrap(),
            "--subresource=status",
            "--type=merge",
            "-p",
            &patch.to_string(),
        ],
    );
}

/// Now, as `YYYY-MM-DDTHH:MM:SSZ`.
fn rfc3339_now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

fn no_finalizers(pod: &Value) -> bool {
    pod["metadata"]["finalizers"]
        .as_array()
        .is_none_or(Vec::is_empty)
}

fn condition(obj: &Value, type_: &str) -> Option<Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_ && c["status"] == "True")
        .cloned()
}

fn events(server: &RkubeServer, name: &str) -> Vec<String> {
    server
        .get_items(&[
            "events",
            "--field-selector",
            &format!("involvedObject.name={name}"),
        ])
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["reason"].as_str().unwrap_or(""),
                e["message"].as_str().unwrap_or("")
            )
        })
        .collect()
}

#[test]
fn jobs_run_pods_to_completion() {
    let (server, sim) = start();

    // kubectl create job: one pod with the Job's labels, owner and tracking finalizer.
    server.kubectl_ok(
        V,
        &[
            "create",
            "job",
            "pi",
            "--image=registry.local/busybox:1",
            "--",
            "sh",
            "-c",
            "exit 0",
        ],
    );
    let job = server.get_json(&["job", "pi"]);
    let uid = job["metadata"]["uid"].as_str().unwrap().to_string();
    let mut pods = Vec::new();
    wait_until("the pod of job pi running", 30, || {
        pods = running(&server, "pi");
        pods.len() == 1
    });
    let pod = &pods[0];
    let meta = &pod["metadata"];
    assert!(meta["name"].as_str().unwrap().starts_with("pi-"), "{meta}");
    assert_eq!(
        meta["labels"]["batch.kubernetes.io/controller-uid"],
        uid.as_str()
    );
    assert_eq!(meta["labels"]["controller-uid"], uid.as_str());
    assert_eq!(meta["labels"]["batch.kubernetes.io/job-name"], "pi");
    assert_eq!(
        meta["finalizers"],
        json!(["batch.kubernetes.io/job-tracking"])
    );
    let owner = &meta["ownerReferences"][0];
    assert_eq!(owner["kind"], "Job");
    assert_eq!(owner["uid"], uid.as_str());
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        pod["spec"]["containers"][0]["command"],
        json!(["sh", "-c", "exit 0"])
    );
    wait_until("job pi active", 10, || {
        server.get_json(&["job", "pi"])["status"]["active"] == 1
    });

    finish(&server, pod, 0);
    server.kubectl_ok(
        V,
        &[
            "wait",
            "--for=condition=complete",
            "job/pi",
            "--timeout=30s",
        ],
    );
    let job = server.get_json(&["job", "pi"]);
    assert_eq!(job["status"]["succeeded"], 1, "{job}");
    assert_eq!(job["status"]["active"], 0, "{job}");
    assert!(!job["status"]["completionTime"].is_null(), "{job}");
    assert!(!job["status"]["startTime"].is_null(), "{job}");
    let scm = condition(&job, "SuccessCriteriaMet").expect("SuccessCriteriaMet");
    assert_eq!(scm["reason"], "CompletionsReached");
    assert_eq!(
        condition(&job, "Complete").unwrap()["reason"],
        "CompletionsReached"
    );
    wait_until("the finalizer of pi's pod removed", 10, || {
        server
            .get_items(&["pods", "-l", "job-name=pi"])
            .iter()
            .all(no_finalizers)
    });
    let text = server.kubectl_ok(V, &["get", "job", "pi", "--no-headers"]);
    assert!(text.contains("Complete") && text.contains("1/1"), "{text}");
    let ev = events(&server, "pi");
    assert!(
        ev.iter()
            .any(|e| e.starts_with("SuccessfulCreate Created pod: pi-")),
        "{ev:?}"
    );
    assert!(ev.iter().any(|e| e == "Completed Job completed"), "{ev:?}");

    // completions=3, parallelism=2: two pods at a time until three succeeded.
    server.create_json(
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "three"},
            "spec": {"completions": 3, "parallelism": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}}}),
    );
    let mut done = 0;
    while done < 3 {
        let mut pods = Vec::new();
        wait_until("pods of job three", 30, || {
            pods = running(&server, "three");
            !pods.is_empty()
        });
        assert!(pods.len() <= 2, "{pods:?}");
        if done == 0 {
            wait_until("two pods of job three", 20, || {
                running(&server, "three").len() == 2
            });
        }
        finish(&server, &pods[0], 0);
        done += 1;
        wait_until("job three counts the success", 20, || {
            server.get_json(&["job", "three"])["status"]["succeeded"] == done
        });
    }
    server.kubectl_ok(
        V,
        &[
            "wait",
            "--for=condition=complete",
            "job/three",
            "--timeout=30s",
        ],
    );
    let pods = server.get_items(&["pods", "-l", "job-name=three"]);
    assert_eq!(pods.len(), 3, "{pods:?}");
    assert!(pods.iter().all(no_finalizers), "{pods:?}");

    // Deleting the Job deletes its pods (owner references, garbage collector).
    server.kubectl_ok(V, &["delete", "job", "three"]);
    wait_until("the pods of job three deleted", 30, || {
        server
            .get_items(&["pods", "-l", "job-name=three"])
            .is_empty()
    });

    // ttlSecondsAfterFinished: 2 — deleted (in the foreground) after completing.
    server.create_json(
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "brief"},
            "spec": {"ttlSecondsAfterFinished": 2, "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}}}),
    );
    let mut pods = Vec::new();
    wait_until("the pod of job brief", 30, || {
        pods = running(&server, "brief");
        pods.len() == 1
    });
    finish(&server, &pods[0], 0);
    server.kubectl_ok(
        V,
        &[
            "wait",
            "--for=condition=complete",
            "job/brief",
            "--timeout=30s",
        ],
    );
    wait_until("job brief deleted by its TTL", 30, || {
        let o = server.kubectl(&["get", "job", "brief", "-o", "json"]);
        !o.status.success()
            || !serde_json::from_slice::<Value>(&o.stdout).unwrap()["metadata"]["deletionTimestamp"]
                .is_null()
    });
    drop(sim);
}

#[test]
fn failing_and_indexed_jobs() {
    let (server, sim) = start();

    // backoffLimit 1: the first failure is replaced after the 10 s back-off, the second
    // fails the Job.
    server.create_json(
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "flaky"},
            "spec": {"backoffLimit": 1, "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}}}),
    );
    let mut pods = Vec::new();
    wait_until("the first pod of flaky", 30, || {
        pods = running(&server, "flaky");
        pods.len() == 1
    });
    let first = pods[0]["metadata"]["name"].as_str().unwrap().to_string();
    finish(&server, &pods[0], 1);
    let failed_at = Instant::now();
    wait_until("job flaky counts the failure", 20, || {
        server.get_json(&["job", "flaky"])["status"]["failed"] == 1
    });
    wait_until("the replacement pod of flaky", 40, || {
        pods = running(&server, "flaky");
        pods.len() == 1 && pods[0]["metadata"]["name"] != first.as_str()
    });
    let waited = failed_at.elapsed();
    assert!(
        waited >= Duration::from_secs(8),
        "re-created after {waited:?}, before the back-off"
    );
    finish(&server, &pods[0], 1);
    server.kubectl_ok(
        V,
        &[
            "wait",
            "--for=condition=failed",
            "job/flaky",
            "--timeout=30s",
        ],
    );
    let job = server.get_json(&["job", "flaky"]);
    assert_eq!(job["status"]["failed"], 2, "{job}");
    let f = condition(&job, "Failed").unwrap();
    assert_eq!(f["reason"], "BackoffLimitExceeded");
    assert_eq!(f["message"], "Job has reached the specified backoff limit");
    assert!(condition(&job, "FailureTarget").is_some(), "{job}");
    let ev = events(&server, "flaky");
    assert!(
        ev.iter()
            .any(|e| e == "BackoffLimitExceeded Job has reached the specified backoff limit"),
        "{ev:?}"
    );

    // Indexed: each pod carries its index.
    server.create_json(
        &json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "idx"},
            "spec": {"completions": 3, "parallelism": 3, "completionMode": "Indexed",
                "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}}}),
    );
    let mut pods = Vec::new();
    wait_until("three pods of idx", 30, || {
        pods = running(&server, "idx");
        pods.len() == 3
    });
    let mut seen: Vec<String> = Vec::new();
    for p in &pods {
        let ix = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"],
            ix.as_str()
        );
        assert!(
            p["metadata"]["name"]
                .as_str()
                .unwrap()
                .starts_with(&format!("idx-{ix}-")),
            "{}",
            p["metadata"]
        );
        assert_eq!(p["spec"]["hostname"], format!("idx-{ix}"));
        let env = &p["spec"]["containers"][0]["env"][0];
        assert_eq!(env["name"], "JOB_COMPLETION_INDEX");
        assert_eq!(
            env["valueFrom"]["fieldRef"]["fieldPath"],
            "metadata.annotations['batch.kubernetes.io/job-completion-index']"
        );
        seen.push(ix);
    }
    seen.sort();
    assert_eq!(seen, ["0", "1", "2"]);
    let one = pods
        .iter()
        .find(|p| p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"] == "1")
        .unwrap();
    finish(&server, one, 0);
    wait_until("index 1 completed", 20, || {
        server.get_json(&["job", "idx"])["status"]["completedIndexes"] == "1"
    });
    for p in running(&server, "idx") {
        finish(&server, &p, 0);
    }
    server.kubectl_ok(
        V,
        &[
            "wait",
            "--for=condition=complete",
            "job/idx",
            "--timeout=30s",
        ],
    );
    let job = server.get_json(&["job", "idx"]);
    assert_eq!(job["status"]["completedIndexes"], "0-2", "{job}");
    assert_eq!(job["status"]["succeeded"], 3, "{job}");
    drop(sim);
}

#[test]
fn cronjobs_create_jobs_on_schedule() {
    let (server, sim) = start();

    server.kubectl_ok(
        V,
        &[
            "create",
            "cronjob",
            "tick",
            "--image=registry.local/busybox:1",
            "--schedule=*/1 * * * *",
        ],
    );
    let cj = server.get_json(&["cronjob", "tick"]);
    assert_eq!(cj["spec"]["schedule"], "*/1 * * * *");
    assert_eq!(cj["spec"]["concurrencyPolicy"], "Allow");
    assert_eq!(cj["spec"]["successfulJobsHistoryLimit"], 3);
    assert_eq!(cj["spec"]["failedJobsHistoryLimit"], 1);
    server.kubectl_ok(V, &["create", "job", "manual", "--from=cronjob/tick"]);
    let job = server.get_json(&["job", "manual"]);
    assert_eq!(
        job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"],
        "manual"
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["metadata"]["ownerReferences"][0]["name"], "tick");
    wait_until("the pod of job manual", 30, || {
        running(&server, "manual").len() == 1
    });
    // A Job of the CronJob it did not create: UnexpectedJob.
    wait_until("UnexpectedJob", 20, || {
        events(&server, "tick").iter().any(|e| {
            e == "UnexpectedJob Saw a job that the controller did not create or forgot: manual"
        })
    });

    // @every 5s: a Job comes within seconds, named by its schedule time in minutes.
    server.create_json(&json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "every"},
            "spec": {"schedule": "@every 5s", "concurrencyPolicy": "Forbid",
                "jobTemplate": {"metadata": {"labels": {"app": "every"}}, "spec": {"template": {"spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "registry.local/busybox:1"}]}}}}}}),
    );
    let mut jobs = Vec::new();
    wait_until("a job of cronjob every", 20, || {
        jobs = server.get_items(&["jobs", "-l", "app=every"]);
        !jobs.is_empty()
    });
    let job = &jobs[0];
    let jname = job["metadata"]["name"].as_str().unwrap().to_string();
    let stamp = job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
        .as_str()
        .unwrap()
        .to_string();
    assert_eq!(
        jname,
        format!(
            "every-{}",
            stamp.parse::<jiff::Timestamp>().unwrap().as_second() / 60
        ),
        "{stamp}"
    );
    assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
    assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);
    wait_until("the job in the cronjob's active list", 10, || {
        let cj = server.get_json(&["cronjob", "every"]);
        cj["status"]["active"][0]["name"] == jname.as_str()
            && !cj["status"]["lastScheduleTime"].is_null()
    });
    // Forbid: no second Job while the first runs (a later time in the same minute has
    // the same name, already active: skipped silently, as upstream).
    std::thread::sleep(Duration::from_secs(6));
    assert_eq!(server.get_items(&["jobs", "-l", "app=every"]).len(), 1);
    let mut pods = Vec::new();
    wait_until("the pod of the scheduled job", 30, || {
        pods = running(&server, &jname);
        pods.len() == 1
    });
    finish(&server, &pods[0], 0);
    wait_until("the cronjob saw its job complete", 30, || {
        let cj = server.get_json(&["cronjob", "every"]);
        !cj["status"]["lastSuccessfulTime"].is_null()
    });
    let ev = events(&server, "every");
    assert!(
        ev.iter()
            .any(|e| e == &format!("SuccessfulCreate Created job {jname}")),
        "{ev:?}"
    );
    assert!(
        ev.iter().any(|e| e.starts_with(&format!(
            "SawCompletedJob Saw completed job: {jname}, condition: Complete"
        ))),
        "{ev:?}"
    );
    drop(sim);
}
