//! Jobs (`STATUS COMPLETIONS DURATION AGE`) and cron jobs.

use super::{
    AGE, CONTAINERS, Col, Ctx, IMAGES, NAME, Printer, Row, bool_ptr, col, container_cells, n, s,
    wide,
};
use crate::descriptions::*;
use crate::selector::format_label_selector;
use crate::time::{human_duration, sub};
use crate::value::{at, int, is_present, list, name, opt_bool, opt_int, opt_string, string};
use serde_json::Value;

const JOB_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "Status of the job."),
    col("Completions", "string", JOB_STATUS_SUCCEEDED),
    col("Duration", "string", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", JOB_SPEC_SELECTOR),
];

pub(crate) const JOB: Printer = Printer {
    columns: JOB_COLUMNS,
    row: job_row,
};

/// `hasJobCondition`: the first condition of the type decides.
fn has_job_condition(conditions: &[Value], ty: &str) -> bool {
    conditions
        .iter()
        .find(|c| string(c, &["type"]) == ty)
        .is_some_and(|c| string(c, &["status"]) == "True")
}

/// A set timestamp (Go's non-nil `*metav1.Time`), with its instant (zero if unparsable).
fn opt_time(obj: &Value, path: &[&str]) -> Option<i128> {
    let v = at(obj, path).filter(|v| !v.is_null())?;
    Some(crate::time::timestamp(Some(v)))
}

fn job_row(obj: &Value, ctx: &Ctx) -> Row {
    let succeeded = int(obj, &["status", "succeeded"]);
    let completions = match opt_int(obj, &["spec", "completions"]) {
        Some(c) => format!("{succeeded}/{c}"),
        None => {
            let parallelism = opt_int(obj, &["spec", "parallelism"]).unwrap_or(0);
            if parallelism > 1 {
                format!("{succeeded}/1 of {parallelism}")
            } else {
                format!("{succeeded}/1")
            }
        }
    };
    let duration = match (
        opt_time(obj, &["status", "startTime"]),
        opt_time(obj, &["status", "completionTime"]),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(sub(ctx.now, start)),
        (Some(start), Some(end)) => human_duration(sub(end, start)),
    };
    let conditions = list(obj, &["status", "conditions"]);
    let status = if has_job_condition(conditions, "Complete") {
        "Complete"
    } else if has_job_condition(conditions, "Failed") {
        "Failed"
    } else if is_present(obj, &["metadata", "deletionTimestamp"]) {
        "Terminating"
    } else if has_job_condition(conditions, "Suspended") {
        "Suspended"
    } else if has_job_condition(conditions, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let (names, images) = container_cells(list(obj, &["spec", "template", "spec", "containers"]));
    vec![
        s(name(obj)),
        s(status),
        s(completions),
        s(duration),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
    .into()
}

const CRON_JOB_COLUMNS: &[Col] = &[
    NAME,
    col("Schedule", "string", CRON_JOB_SPEC_SCHEDULE),
    col("Timezone", "string", CRON_JOB_SPEC_TIME_ZONE),
    col("Suspend", "boolean", CRON_JOB_SPEC_SUSPEND),
    col("Active", "integer", CRON_JOB_STATUS_ACTIVE),
    col(
        "Last Schedule",
        "string",
        CRON_JOB_STATUS_LAST_SCHEDULE_TIME,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", JOB_SPEC_SELECTOR),
];

pub(crate) const CRON_JOB: Printer = Printer {
    columns: CRON_JOB_COLUMNS,
    row: cron_job_row,
};

fn cron_job_row(obj: &Value, ctx: &Ctx) -> Row {
    let last_schedule = match at(obj, &["status", "lastScheduleTime"]) {
        Some(v) if !v.is_null() => ctx.since(Some(v)),
        _ => "<none>".to_string(),
    };
    let time_zone = opt_string(obj, &["spec", "timeZone"]).unwrap_or("<none>");
    // `suspend` is defaulted to false.
    let suspend = opt_bool(obj, &["spec", "suspend"]).or(Some(false));
    let template = &[
        "spec",
        "jobTemplate",
        "spec",
        "template",
        "spec",
        "containers",
    ];
    let (names, images) = container_cells(list(obj, template));
    vec![
        s(name(obj)),
        s(string(obj, &["spec", "schedule"])),
        s(time_zone),
        s(bool_ptr(suspend)),
        n(list(obj, &["status", "active"]).len()),
        s(last_schedule),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(format_label_selector(at(
            obj,
            &["spec", "jobTemplate", "spec", "selector"],
        ))),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_first_match_decides() {
        let conds = [
            serde_json::json!({"type": "Complete", "status": "False"}),
            serde_json::json!({"type": "Complete", "status": "True"}),
        ];
        assert!(!has_job_condition(&conds, "Complete"));
    }
}
