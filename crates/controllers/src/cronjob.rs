//! The CronJob controller (upstream's `pkg/controller/cronjob`, the v2 controller of
//! 1.33). Schedules are parsed by [`api::cron`] (robfig/cron v3's `ParseStandard`, as the
//! API server validates them); `spec.timeZone` becomes a `TZ=` prefix, resolved here with
//! the system's tz database.
//!
//! A sync is pure steps around the API calls, as upstream's `sync`: [`cleanup`] (finished
//! Jobs beyond the history limits), [`reconcile_children`] (the `active` list against the
//! Jobs, `lastSuccessfulTime`) and [`schedule`] (whether a Job is due now, which Jobs a
//! `Replace` policy deletes, when to look again). [`run_cronjobs`] carries them out as the
//! `kube-system/cronjob-controller` service account and requeues each CronJob at its next
//! schedule time.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use api::cron;
use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::api::batch::v1::{CronJob, Job};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, Recorder};
use runtime::workqueue::WorkQueue;
use serde_json::{Value, json};

use crate::informers::{self, Informer, Next};
use crate::job::{name, s, uid};
use crate::util::api_message;

/// The annotation with a Job's scheduled time (`CronJobScheduledTimestampAnnotation`).
pub const SCHEDULED_TIMESTAMP: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";
/// Added to every requeue so the sync lands after the schedule time (`nextScheduleDelta`).
pub const NEXT_SCHEDULE_DELTA_MS: i64 = 100;

// ---------------------------------------------------------------------------------------
// The cron schedule.

/// A CronJob's schedule: the parsed spec ([`api::cron`]) and the zone its fields are read
/// in (the `TZ=` location, else the local zone).
#[derive(Clone, Debug)]
pub struct Schedule {
    spec: cron::Schedule,
    tz: TimeZone,
}

/// `cron.ParseStandard`, the location resolved as `time.LoadLocation` does.
pub fn parse(spec: &str) -> Result<Schedule, String> {
    let spec = cron::parse_standard(spec)?;
    let tz = match spec.location() {
        None | Some("Local") => TimeZone::system(),
        Some("" | "UTC") => TimeZone::UTC,
        Some(name) => {
            TimeZone::get(name).map_err(|e| format!("provided bad location {name}: {e}"))?
        }
    };
    Ok(Schedule { spec, tz })
}

impl Schedule {
    /// The first activation strictly after `t` (`Schedule.Next`), `None` when there is
    /// none within five years (an impossible date such as February 31st).
    pub fn next(&self, t: Timestamp) -> Option<Timestamp> {
        self.spec.next(t, &self.tz)
    }
}

// ---------------------------------------------------------------------------------------
// The controller's decisions.

fn ts(v: &Value) -> Option<Timestamp> {
    v.as_str()?.parse().ok()
}

fn rfc3339(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The Job's finished condition type (`getFinishedStatus`).
pub fn finished(job: &Value) -> Option<&'static str> {
    crate::job::finished_condition(job)
}

fn in_active(cj: &Value, job_uid: &str) -> bool {
    cj["status"]["active"]
        .as_array()
        .is_some_and(|a| a.iter().any(|r| r["uid"] == job_uid))
}

fn remove_from_active(cj: &mut Value, job_uid: &str) {
    if let Some(a) = cj["status"]["active"].as_array_mut() {
        a.retain(|r| r["uid"] != job_uid);
    }
}

/// An event to record on the CronJob.
pub type Event = (EventType, &'static str, String);

/// `cleanupFinishedJobs`: the finished Jobs beyond `successfulJobsHistoryLimit` and
/// `failedJobsHistoryLimit`, oldest start first (they also leave the active list).
pub fn cleanup(cj: &Value, jobs: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, limit) in [
        ("Complete", &cj["spec"]["successfulJobsHistoryLimit"]),
        ("Failed", &cj["spec"]["failedJobsHistoryLimit"]),
    ] {
        let Some(limit) = limit.as_i64() else {
            continue;
        };
        let mut list: Vec<&Value> = jobs.iter().filter(|j| finished(j) == Some(kind)).collect();
        let extra = i64::try_from(list.len()).unwrap_or(0) - limit;
        if extra <= 0 {
            continue;
        }
        // byJobStartTime: no start time last, ties by name.
        list.sort_by(|a, b| {
            let (sa, sb) = (ts(&a["status"]["startTime"]), ts(&b["status"]["startTime"]));
            match (sa, sb) {
                (Some(x), Some(y)) if x != y => x.cmp(&y),
                (Some(_), None) => std::cmp::Ordering::Less,
                (None, Some(_)) => std::cmp::Ordering::Greater,
                _ => name(a).cmp(name(b)),
            }
        });
        out.extend(
            list.iter()
                .take(usize::try_from(extra).unwrap_or(0))
                .map(|j| name(j).to_string()),
        );
    }
    out
}

/// [`reconcile_children`]'s result.
#[derive(Clone, Debug, Default)]
pub struct Children {
    pub status_changed: bool,
    pub events: Vec<Event>,
    /// Unfinished Jobs this CronJob controls that are not in its active list.
    pub unexpected: Vec<String>,
    /// Active references to Jobs not in the cache (to look up: missing ones leave).
    pub unknown_active: Vec<(String, String)>,
}

/// The first part of `syncCronJob`: finished Jobs leave the active list
/// (`SawCompletedJob`), `lastSuccessfulTime` follows the newest completion. Updates
/// `cj`'s status in place.
pub fn reconcile_children(cj: &mut Value, jobs: &[Value]) -> Children {
    let mut c = Children::default();
    let mut children: HashSet<&str> = HashSet::new();
    for j in jobs {
        children.insert(uid(j));
        let found = in_active(cj, uid(j));
        let fin = finished(j);
        if !found && fin.is_none() {
            c.unexpected.push(name(j).to_string());
        } else if found && let Some(cond) = fin {
            remove_from_active(cj, uid(j));
            c.events.push((
                EventType::Normal,
                "SawCompletedJob",
                format!("Saw completed job: {}, condition: {cond}", name(j)),
            ));
            c.status_changed = true;
        } else if fin.is_some()
            && let Some(done) = ts(&j["status"]["completionTime"])
        {
            let last = ts(&cj["status"]["lastSuccessfulTime"]);
            if last.is_none_or(|l| done > l) {
                cj["status"]["lastSuccessfulTime"] = j["status"]["completionTime"].clone();
                c.status_changed = true;
            }
        }
    }
    for r in cj["status"]["active"].as_array().into_iter().flatten() {
        if !children.contains(s(r, &["uid"])) {
            c.unknown_active
                .push((s(r, &["name"]).to_string(), s(r, &["uid"]).to_string()));
        }
    }
    c
}

/// The schedule a CronJob runs on (`formatSchedule` + `ParseStandard`): `spec.timeZone`
/// becomes a `TZ=` prefix unless the schedule has its own.
pub fn schedule_of(cj: &Value) -> Result<Schedule, String> {
    let spec = s(cj, &["spec", "schedule"]);
    match cj["spec"]["timeZone"].as_str() {
        Some(tz) if !spec.contains("TZ") => parse(&format!("TZ={tz} {spec}")),
        _ => parse(spec),
    }
}

/// How many schedule times were missed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    Many,
}

/// `mostRecentScheduleTime`: the earliest time considered, the most recent schedule time
/// not after `now` (if any), and how many were missed.
pub fn most_recent_schedule_time(
    cj: &Value,
    now: Timestamp,
    sched: &Schedule,
    with_deadline: bool,
) -> Result<(Timestamp, Option<Timestamp>, Missed), String> {
    let mut earliest = ts(&cj["status"]["lastScheduleTime"])
        .or_else(|| ts(&cj["metadata"]["creationTimestamp"]))
        .unwrap_or(now);
    if with_deadline && let Some(d) = cj["spec"]["startingDeadlineSeconds"].as_i64() {
        let deadline = Timestamp::from_second(now.as_second() - d).unwrap_or(now);
        if deadline > earliest {
            earliest = deadline;
        }
    }
    let Some(t1) = sched.next(earliest) else {
        return Ok((earliest, None, Missed::None));
    };
    if now < t1 {
        return Ok((earliest, None, Missed::None));
    }
    let Some(t2) = sched.next(t1) else {
        return Ok((earliest, Some(t1), Missed::None));
    };
    if now < t2 {
        return Ok((earliest, Some(t1), Missed::None));
    }
    let between = (t2.as_millisecond() - t1.as_millisecond() + 500) / 1000;
    if between < 1 {
        return Err("time difference between two schedules is less than 1 second".into());
    }
    let elapsed = now.as_second() - t1.as_second();
    let missed = elapsed / between + 1;
    // Walk to the most recent one from just before the estimate (exact for irregular
    // schedules, as upstream does since 1.30).
    let mut cur = t1;
    if missed > 2 {
        let guess = Timestamp::from_second(t1.as_second() + (missed - 2) * between).unwrap_or(t1);
        if guess > t1 && guess <= now {
            cur = guess;
        }
    }
    let mut most_recent = t1;
    if cur > t1 {
        // `cur` may not be a schedule time itself: start from the first one at or after it.
        if let Some(first) = sched.next(Timestamp::from_second(cur.as_second() - 1).unwrap_or(cur))
        {
            cur = first;
        }
        if cur <= now {
            most_recent = cur;
        }
    }
    let mut steps = 0;
    while let Some(n) = sched.next(most_recent) {
        if n > now || steps > 10_000 {
            break;
        }
        most_recent = n;
        steps += 1;
    }
    let kind = if missed > 100 {
        Missed::Many
    } else if missed > 1 {
        Missed::Few
    } else {
        Missed::None
    };
    Ok((earliest, Some(most_recent), kind))
}

/// `nextScheduleTimeDuration`: how long until the sync after the next schedule time.
pub fn next_schedule_after(cj: &Value, now: Timestamp, sched: &Schedule) -> Option<Duration> {
    let (earliest, recent, _) = most_recent_schedule_time(cj, now, sched, false).ok()?;
    let base = recent.unwrap_or(earliest);
    let next = sched.next(base)?;
    let ms = next.as_millisecond() + NEXT_SCHEDULE_DELTA_MS - now.as_millisecond();
    Some(Duration::from_millis(u64::try_from(ms.max(0)).unwrap_or(0)))
}

/// The Job's name for a schedule time (`getJobName`): minutes since the epoch.
pub fn job_name(cj: &Value, scheduled: Timestamp) -> String {
    format!("{}-{}", name(cj), scheduled.as_second().div_euclid(60))
}

/// The Job made from the template for `scheduled` (`getJobFromTemplate2`).
pub fn job_from_template(cj: &Value, scheduled: Timestamp) -> Value {
    let template = &cj["spec"]["jobTemplate"];
    let tz = cj["spec"]["timeZone"]
        .as_str()
        .and_then(|n| TimeZone::get(n).ok())
        .unwrap_or(TimeZone::UTC);
    let z = scheduled.to_zoned(tz);
    let stamp = if z.offset().seconds() == 0 {
        z.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        z.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    };
    let mut annotations = template["metadata"]["annotations"].clone();
    if !annotations.is_object() {
        annotations = json!({});
    }
    annotations[SCHEDULED_TIMESTAMP] = json!(stamp);
    let mut meta = json!({
        "name": job_name(cj, scheduled),
        "namespace": cj["metadata"]["namespace"],
        "annotations": annotations,
        "ownerReferences": [{"apiVersion": "batch/v1", "kind": "CronJob", "name": name(cj),
            "uid": uid(cj), "controller": true, "blockOwnerDeletion": true}],
    });
    if template["metadata"]["labels"].is_object() {
        meta["labels"] = template["metadata"]["labels"].clone();
    }
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta,
        "spec": template["spec"].clone()})
}

/// What [`schedule`] decides.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    Nothing,
    /// Delete these active Jobs (Replace), then create this Job for `scheduled`.
    Create {
        job: Value,
        scheduled: Timestamp,
        replace: Vec<String>,
    },
}

/// [`schedule`]'s result.
#[derive(Clone, Debug)]
pub struct Decision {
    pub action: Action,
    pub events: Vec<Event>,
    pub requeue_after: Option<Duration>,
}

/// The scheduling part of `syncCronJob` (after the children are reconciled): nothing
/// while being deleted or suspended or with a bad time zone or schedule; else the most
/// recent unmet schedule time, unless too late (`startingDeadlineSeconds`), already
/// processed, or forbidden by `concurrencyPolicy: Forbid`.
pub fn schedule(cj: &Value, now: Timestamp) -> Decision {
    let mut d = Decision {
        action: Action::Nothing,
        events: Vec::new(),
        requeue_after: None,
    };
    if !cj["metadata"]["deletionTimestamp"].is_null() {
        return d;
    }
    if let Some(tz) = cj["spec"]["timeZone"].as_str()
        && let Err(e) = TimeZone::get(tz)
    {
        d.events.push((
            EventType::Warning,
            "UnknownTimeZone",
            format!("invalid timeZone: {tz:?}: {e}"),
        ));
        return d;
    }
    if cj["spec"]["suspend"] == true {
        return d;
    }
    let spec = s(cj, &["spec", "schedule"]);
    if spec.contains("TZ") {
        d.events.push((
            EventType::Warning,
            "UnsupportedSchedule",
            format!("CRON_TZ or TZ used in schedule {spec:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details"),
        ));
    }
    let sched = match schedule_of(cj) {
        Ok(x) => x,
        Err(e) => {
            d.events.push((
                EventType::Warning,
                "UnparseableSchedule",
                format!("unparseable schedule: {spec:?} : {e}"),
            ));
            return d;
        }
    };
    let scheduled = match most_recent_schedule_time(cj, now, &sched, true) {
        Err(e) => {
            d.events.push((
                EventType::Warning,
                "InvalidSchedule",
                format!("invalid schedule: {spec} : {e}"),
            ));
            return d;
        }
        Ok((_, None, _)) => {
            d.requeue_after = next_schedule_after(cj, now, &sched);
            return d;
        }
        Ok((_, Some(t), missed)) => {
            if missed == Missed::Many {
                d.events.push((
                    EventType::Warning,
                    "TooManyMissedTimes",
                    "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".into(),
                ));
            }
            t
        }
    };
    d.requeue_after = next_schedule_after(cj, now, &sched);
    if let Some(deadline) = cj["spec"]["startingDeadlineSeconds"].as_i64()
        && scheduled.as_second() + deadline < now.as_second()
    {
        d.events.push((
            EventType::Warning,
            "MissSchedule",
            format!(
                "Missed scheduled time to start a job: {}",
                scheduled.strftime("%a, %d %b %Y %H:%M:%S +0000")
            ),
        ));
        return d;
    }
    let jname = job_name(cj, scheduled);
    let by_name = cj["status"]["active"]
        .as_array()
        .is_some_and(|a| a.iter().any(|r| r["name"] == jname.as_str()));
    if by_name || ts(&cj["status"]["lastScheduleTime"]) == Some(scheduled) {
        return d;
    }
    let active: Vec<String> = cj["status"]["active"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| s(r, &["name"]).to_string())
        .collect();
    let policy = cj["spec"]["concurrencyPolicy"].as_str().unwrap_or("Allow");
    if policy == "Forbid" && !active.is_empty() {
        d.events.push((
            EventType::Normal,
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid"
                .into(),
        ));
        return d;
    }
    d.action = Action::Create {
        job: job_from_template(cj, scheduled),
        scheduled,
        replace: if policy == "Replace" {
            active
        } else {
            Vec::new()
        },
    };
    d
}

// ---------------------------------------------------------------------------------------
// The loop.

struct Shared {
    cronjobs: Store<CronJob>,
    jobs: Store<Job>,
    queue: WorkQueue<String>,
    writer: Client,
    events: Recorder,
}

fn key_of(ns: &str, n: &str) -> String {
    format!("{ns}/{n}")
}

/// The CronJob a Job event concerns (its controller).
fn owner_key(job: &Job) -> Option<String> {
    let r = job
        .metadata
        .owner_references
        .iter()
        .flatten()
        .find(|o| o.controller == Some(true) && o.kind == "CronJob")?;
    Some(key_of(
        job.metadata.namespace.as_deref().unwrap_or_default(),
        &r.name,
    ))
}

/// Runs the CronJob controller with `workers` workers until the process ends.
pub async fn run_cronjobs(
    cronjobs: Arc<Informer<CronJob>>,
    jobs: Arc<Informer<Job>>,
    writer: Client,
    workers: usize,
) {
    let mut cj_events = cronjobs.subscribe();
    let mut job_events = jobs.subscribe();
    let shared = Arc::new(Shared {
        cronjobs: cronjobs.store.clone(),
        jobs: jobs.store.clone(),
        queue: WorkQueue::named("cronjob"),
        events: crate::run::recorder(&writer, "cronjob-controller"),
        writer,
    });
    let sh = Arc::clone(&shared);
    tokio::spawn(async move {
        let mut schedules: std::collections::HashMap<String, (String, Option<String>)> =
            std::collections::HashMap::new();
        loop {
            match informers::next(&mut cj_events).await {
                Next::Apply(cj) => {
                    let key = key_of(
                        cj.metadata.namespace.as_deref().unwrap_or_default(),
                        cj.metadata.name.as_deref().unwrap_or_default(),
                    );
                    let spec = cj.spec.as_ref();
                    let now = (
                        spec.map(|s| s.schedule.clone()).unwrap_or_default(),
                        spec.and_then(|s| s.time_zone.clone()),
                    );
                    let before = schedules.insert(key.clone(), now.clone());
                    // A changed schedule is looked at again at its next time
                    // (`updateCronJob`); anything else now.
                    if before.is_some_and(|b| b != now)
                        && let Ok(v) = serde_json::to_value(cj.as_ref())
                        && let Ok(sched) = schedule_of(&v)
                        && let Some(after) = next_schedule_after(&v, Timestamp::now(), &sched)
                    {
                        sh.queue.add_after(key, after);
                    } else {
                        sh.queue.add(key);
                    }
                }
                Next::Delete(cj) => {
                    schedules.remove(&key_of(
                        cj.metadata.namespace.as_deref().unwrap_or_default(),
                        cj.metadata.name.as_deref().unwrap_or_default(),
                    ));
                }
                Next::Other => {}
                Next::Resync => {
                    for cj in sh.cronjobs.state() {
                        sh.queue.add(key_of(
                            cj.metadata.namespace.as_deref().unwrap_or_default(),
                            cj.metadata.name.as_deref().unwrap_or_default(),
                        ));
                    }
                }
                Next::Closed => break,
            }
        }
    });
    let sh = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut job_events).await {
                Next::Apply(j) | Next::Delete(j) => {
                    if let Some(k) = owner_key(&j) {
                        sh.queue.add(k);
                    }
                }
                Next::Other => {}
                Next::Resync => {
                    for cj in sh.cronjobs.state() {
                        sh.queue.add(key_of(
                            cj.metadata.namespace.as_deref().unwrap_or_default(),
                            cj.metadata.name.as_deref().unwrap_or_default(),
                        ));
                    }
                }
                Next::Closed => break,
            }
        }
    });
    cronjobs.synced().await;
    jobs.synced().await;
    for cj in shared.cronjobs.state() {
        shared.queue.add(key_of(
            cj.metadata.namespace.as_deref().unwrap_or_default(),
            cj.metadata.name.as_deref().unwrap_or_default(),
        ));
    }
    crate::run::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "cronjob",
        |s, key| async move { sync_cronjob(&s, &key).await },
    );
}

/// Deletes a Job in the background (`deleteJob`), recording `SuccessfulDelete`.
async fn delete_job(
    s: &Shared,
    api: &Api<Job>,
    cj_ref: &k8s_openapi::api::core::v1::ObjectReference,
    jname: &str,
) -> Result<(), kube::Error> {
    match api.delete(jname, &DeleteParams::background()).await {
        Ok(_) => {
            s.events.event(
                cj_ref,
                EventType::Normal,
                "SuccessfulDelete",
                &format!("Deleted job {jname}"),
            );
            Ok(())
        }
        Err(kube::Error::Api(e)) if e.code == 404 => Ok(()),
        Err(e) => {
            s.events.event(
                cj_ref,
                EventType::Warning,
                "FailedDelete",
                &format!("Deleted job: {e}"),
            );
            Err(e)
        }
    }
}

/// One `sync` of a CronJob.
async fn sync_cronjob(s: &Shared, key: &str) -> Result<(), kube::Error> {
    let (ns, cname) = key.split_once('/').unwrap_or(("", key));
    let Some(cj) = s.cronjobs.get(&ObjectRef::new(cname).within(ns)) else {
        return Ok(());
    };
    let Ok(original) = serde_json::to_value(cj.as_ref()) else {
        return Ok(());
    };
    let mut cj = original.clone();
    if !cj["status"].is_object() {
        cj["status"] = json!({});
    }
    let cj_uid = uid(&cj).to_string();
    let jobs: Vec<Value> = s
        .jobs
        .state()
        .iter()
        .filter(|j| j.metadata.namespace.as_deref() == Some(ns))
        .filter(|j| {
            j.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == cj_uid)
        })
        .filter_map(|j| serde_json::to_value(j.as_ref()).ok())
        .collect();
    let cj_ref = crate::run::reference(&cj, "CronJob", "batch/v1");
    let jobs_api: Api<Job> = Api::namespaced(s.writer.clone(), ns);
    let mut changed = false;
    // cleanupFinishedJobs
    let mut deleted: HashSet<String> = HashSet::new();
    for jname in cleanup(&cj, &jobs) {
        if delete_job(s, &jobs_api, &cj_ref, &jname).await.is_ok() {
            if let Some(j) = jobs.iter().find(|j| name(j) == jname)
                && in_active(&cj, uid(j))
            {
                remove_from_active(&mut cj, uid(j));
                changed = true;
            }
            deleted.insert(jname);
        }
    }
    let jobs: Vec<Value> = jobs
        .into_iter()
        .filter(|j| !deleted.contains(name(j)))
        .collect();
    let children = reconcile_children(&mut cj, &jobs);
    changed |= children.status_changed;
    for (t, r, m) in &children.events {
        s.events.event(&cj_ref, *t, r, m);
    }
    if !children.unexpected.is_empty() {
        let api: Api<CronJob> = Api::namespaced(s.writer.clone(), ns);
        let fresh = api.get(cname).await?;
        let fresh = serde_json::to_value(&fresh).map_err(kube::Error::SerdeError)?;
        for jname in &children.unexpected {
            let juid = jobs
                .iter()
                .find(|j| name(j) == jname.as_str())
                .map(uid)
                .unwrap_or_default();
            if !in_active(&fresh, juid) {
                s.events.event(
                    &cj_ref,
                    EventType::Warning,
                    "UnexpectedJob",
                    &format!("Saw a job that the controller did not create or forgot: {jname}"),
                );
            }
        }
    }
    for (jname, juid) in &children.unknown_active {
        if jobs_api.get_opt(jname).await?.is_none() {
            s.events.event(
                &cj_ref,
                EventType::Normal,
                "MissingJob",
                &format!("Active job went missing: {jname}"),
            );
            remove_from_active(&mut cj, juid);
            changed = true;
        }
    }
    let decision = schedule(&cj, Timestamp::now());
    for (t, r, m) in &decision.events {
        s.events.event(&cj_ref, *t, r, m);
    }
    let mut result: Result<(), kube::Error> = Ok(());
    if let Action::Create {
        job,
        scheduled,
        replace,
    } = &decision.action
    {
        let mut ok = true;
        for jname in replace {
            if delete_job(s, &jobs_api, &cj_ref, jname).await.is_err() {
                ok = false;
                break;
            }
            if let Some(a) = cj["status"]["active"].as_array_mut() {
                a.retain(|r| r["name"] != jname.as_str());
            }
            changed = true;
        }
        if ok {
            match create_job(s, &jobs_api, &cj, job, &cj_ref).await {
                Ok(Some(created)) => {
                    let created = serde_json::to_value(&created).unwrap_or_default();
                    let reference = json!({"apiVersion": "batch/v1", "kind": "Job",
                        "namespace": ns, "name": name(&created), "uid": uid(&created),
                        "resourceVersion": created["metadata"]["resourceVersion"]});
                    if !cj["status"]["active"].is_array() {
                        cj["status"]["active"] = json!([]);
                    }
                    if let Some(a) = cj["status"]["active"].as_array_mut() {
                        a.push(reference);
                    }
                    cj["status"]["lastScheduleTime"] = json!(rfc3339(*scheduled));
                    changed = true;
                }
                Ok(None) => {}
                Err(e) => result = Err(e),
            }
        }
    }
    if changed && cj["status"] != original["status"] {
        let api: Api<CronJob> = Api::namespaced(s.writer.clone(), ns);
        if cj["status"]["active"].as_array().is_some_and(Vec::is_empty) {
            cj["status"]["active"] = Value::Null;
        }
        let body: CronJob = serde_json::from_value(cj.clone()).map_err(kube::Error::SerdeError)?;
        api.replace_status(cname, &PostParams::default(), &body)
            .await?;
    }
    if let Some(after) = decision.requeue_after {
        s.queue.add_after(key.to_string(), after);
    }
    result
}

/// Creates the scheduled Job. `Ok(None)` when it already exists and needs nothing
/// (another actor made it, or it is in the active list already).
async fn create_job(
    s: &Shared,
    api: &Api<Job>,
    cj: &Value,
    job: &Value,
    cj_ref: &k8s_openapi::api::core::v1::ObjectReference,
) -> Result<Option<Job>, kube::Error> {
    let typed: Job = serde_json::from_value(job.clone()).map_err(kube::Error::SerdeError)?;
    match api.create(&PostParams::default(), &typed).await {
        Ok(created) => {
            s.events.event(
                cj_ref,
                EventType::Normal,
                "SuccessfulCreate",
                &format!(
                    "Created job {}",
                    created.metadata.name.as_deref().unwrap_or_default()
                ),
            );
            Ok(Some(created))
        }
        Err(kube::Error::Api(e)) if e.code == 409 => {
            let existing = api.get(name(job)).await?;
            let controlled = existing
                .metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.controller == Some(true) && o.uid == uid(cj));
            let juid = existing.metadata.uid.clone().unwrap_or_default();
            if !controlled || in_active(cj, &juid) {
                return Ok(None);
            }
            Ok(Some(existing))
        }
        Err(e) => {
            let msg = api_message(&e);
            s.events.event(
                cj_ref,
                EventType::Warning,
                "FailedCreate",
                &format!("Error creating job: {msg}"),
            );
            Err(e)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn t(s: &str) -> Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn time_zones() {
        // 09:00 in Berlin (UTC+1 in winter).
        let s = parse("CRON_TZ=Europe/Berlin 0 9 * * *").unwrap();
        assert_eq!(
            rfc3339(s.next(t("2024-01-10T00:00:00Z")).unwrap()),
            "2024-01-10T08:00:00Z"
        );
        let cj = json!({"spec": {"schedule": "0 9 * * *", "timeZone": "America/New_York"}});
        let s = schedule_of(&cj).unwrap();
        assert_eq!(
            rfc3339(s.next(t("2024-01-10T00:00:00Z")).unwrap()),
            "2024-01-10T14:00:00Z"
        );
        let s = parse("TZ=UTC @every 5s").unwrap();
        assert_eq!(
            rfc3339(s.next(t("2024-03-01T10:07:00Z")).unwrap()),
            "2024-03-01T10:07:05Z"
        );
        assert_eq!(
            parse("TZ=Nowhere/Land * * * * *").unwrap_err(),
            "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"
        );
        assert_eq!(
            parse("* * * *").unwrap_err(),
            "expected exactly 5 fields, found 4: [* * * *]"
        );
    }

    fn cronjob(schedule: &str, created: &str) -> Value {
        json!({"metadata": {"name": "cj", "namespace": "d", "uid": "cu",
            "creationTimestamp": created},
            "spec": {"schedule": schedule, "timeZone": "UTC", "concurrencyPolicy": "Allow",
                "jobTemplate": {"metadata": {"labels": {"a": "b"}}, "spec": {"template": {"spec": {}}}}},
            "status": {}})
    }

    #[test]
    fn creates_the_job_for_the_most_recent_time() {
        let cj = cronjob("*/1 * * * *", "2024-03-01T10:00:30Z");
        // Before the first time: nothing, requeued just after it.
        let d = schedule(&cj, t("2024-03-01T10:00:40Z"));
        assert_eq!(d.action, Action::Nothing);
        assert_eq!(d.requeue_after, Some(Duration::from_millis(20_100)));
        let d = schedule(&cj, t("2024-03-01T10:01:00.200Z"));
        let Action::Create {
            job,
            scheduled,
            replace,
        } = &d.action
        else {
            panic!("{d:?}")
        };
        assert_eq!(rfc3339(*scheduled), "2024-03-01T10:01:00Z");
        assert!(replace.is_empty());
        let minutes = t("2024-03-01T10:01:00Z").as_second() / 60;
        assert_eq!(job["metadata"]["name"], format!("cj-{minutes}"));
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_TIMESTAMP],
            "2024-03-01T10:01:00Z"
        );
        assert_eq!(job["metadata"]["labels"]["a"], "b");
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(job["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(d.requeue_after, Some(Duration::from_millis(59_900)));
        // Already processed.
        let mut done = cj.clone();
        done["status"]["lastScheduleTime"] = json!("2024-03-01T10:01:00Z");
        assert_eq!(
            schedule(&done, t("2024-03-01T10:01:10Z")).action,
            Action::Nothing
        );
        // Missed times: the most recent one.
        let d = schedule(&cj, t("2024-03-01T10:05:30Z"));
        let Action::Create { scheduled, .. } = &d.action else {
            panic!()
        };
        assert_eq!(rfc3339(*scheduled), "2024-03-01T10:05:00Z");
        // The time zone shows in the annotation.
        let mut tz = cronjob("0 9 * * *", "2024-03-01T00:00:00Z");
        tz["spec"]["schedule"] = json!("0 9 * * *");
        tz["spec"]["timeZone"] = json!("Europe/Berlin");
        let d = schedule(&tz, t("2024-03-01T08:00:01Z"));
        let Action::Create { job, .. } = &d.action else {
            panic!("{d:?}")
        };
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED_TIMESTAMP],
            "2024-03-01T09:00:00+01:00"
        );
    }

    #[test]
    fn concurrency_suspend_and_deadlines() {
        let mut cj = cronjob("*/1 * * * *", "2024-03-01T10:00:30Z");
        cj["status"]["active"] = json!([{"name": "old", "uid": "o1"}]);
        let now = t("2024-03-01T10:01:01Z");
        assert!(
            matches!(schedule(&cj, now).action, Action::Create { ref replace, .. } if replace.is_empty())
        );
        cj["spec"]["concurrencyPolicy"] = json!("Forbid");
        let d = schedule(&cj, now);
        assert_eq!(d.action, Action::Nothing);
        assert_eq!(d.events[0].1, "JobAlreadyActive");
        assert!(d.requeue_after.is_some());
        cj["spec"]["concurrencyPolicy"] = json!("Replace");
        let Action::Create { replace, .. } = schedule(&cj, now).action else {
            panic!()
        };
        assert_eq!(replace, vec!["old".to_string()]);
        cj["spec"]["suspend"] = json!(true);
        let d = schedule(&cj, now);
        assert_eq!((d.action, d.requeue_after), (Action::Nothing, None));
        // startingDeadlineSeconds: too late for 10:01 at 10:01:30.
        let mut late = cronjob("1 * * * *", "2024-03-01T10:00:30Z");
        late["spec"]["startingDeadlineSeconds"] = json!(20);
        let d = schedule(&late, t("2024-03-01T10:01:30Z"));
        assert_eq!(d.action, Action::Nothing);
        // (The deadline also moves the earliest time: nothing unmet inside it.)
        assert!(d.requeue_after.is_some());
        let d = schedule(&late, t("2024-03-01T10:01:15Z"));
        assert!(matches!(d.action, Action::Create { .. }));
    }

    #[test]
    fn too_many_missed_and_bad_schedules() {
        let cj = cronjob("*/1 * * * *", "2024-03-01T00:00:00Z");
        let d = schedule(&cj, t("2024-03-02T00:00:30Z"));
        assert_eq!(d.events[0].1, "TooManyMissedTimes");
        let Action::Create { scheduled, .. } = &d.action else {
            panic!()
        };
        assert_eq!(rfc3339(*scheduled), "2024-03-02T00:00:00Z");
        let mut bad = cj.clone();
        bad["spec"]["schedule"] = json!("not a schedule");
        let d = schedule(&bad, t("2024-03-02T00:00:30Z"));
        assert_eq!(d.events.last().unwrap().1, "UnparseableSchedule");
        assert_eq!(d.requeue_after, None);
        let mut tz = cj.clone();
        tz["spec"]["schedule"] = json!("* * * * *");
        tz["spec"]["timeZone"] = json!("Mars/Olympus");
        assert_eq!(
            schedule(&tz, t("2024-03-02T00:00:30Z")).events[0].1,
            "UnknownTimeZone"
        );
    }

    fn child(name: &str, cond: Option<&str>, start: &str) -> Value {
        let mut j = json!({"metadata": {"name": name, "uid": format!("u-{name}")},
            "status": {"startTime": start}});
        if let Some(c) = cond {
            j["status"]["conditions"] = json!([{"type": c, "status": "True"}]);
            if c == "Complete" {
                j["status"]["completionTime"] = json!(start);
            }
        }
        j
    }

    #[test]
    fn children_and_history() {
        let mut cj = cronjob("*/1 * * * *", "2024-03-01T00:00:00Z");
        cj["status"]["active"] =
            json!([{"name": "a", "uid": "u-a"}, {"name": "gone", "uid": "u-gone"}]);
        let jobs = vec![
            child("a", Some("Complete"), "2024-03-01T00:01:00Z"),
            child("b", None, "2024-03-01T00:02:00Z"),
            child("c", Some("Complete"), "2024-03-01T00:03:00Z"),
        ];
        let c = reconcile_children(&mut cj, &jobs);
        assert_eq!(c.events[0].2, "Saw completed job: a, condition: Complete");
        assert_eq!(c.unexpected, vec!["b".to_string()]);
        assert_eq!(
            c.unknown_active,
            vec![("gone".to_string(), "u-gone".to_string())]
        );
        assert_eq!(
            cj["status"]["active"],
            json!([{"name": "gone", "uid": "u-gone"}])
        );
        assert_eq!(cj["status"]["lastSuccessfulTime"], "2024-03-01T00:03:00Z");
        // History limits: oldest first.
        let mut cj = cronjob("*/1 * * * *", "2024-03-01T00:00:00Z");
        cj["spec"]["successfulJobsHistoryLimit"] = json!(1);
        cj["spec"]["failedJobsHistoryLimit"] = json!(0);
        let jobs = vec![
            child("s2", Some("Complete"), "2024-03-01T00:02:00Z"),
            child("s1", Some("Complete"), "2024-03-01T00:01:00Z"),
            child("s3", Some("Complete"), "2024-03-01T00:03:00Z"),
            child("f1", Some("Failed"), "2024-03-01T00:01:00Z"),
            child("r", None, "2024-03-01T00:01:00Z"),
        ];
        assert_eq!(cleanup(&cj, &jobs), vec!["s1", "s2", "f1"]);
    }
}
