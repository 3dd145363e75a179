//! batch/v1: Job and CronJob (`pkg/apis/batch/validation`, and the Job strategy's selector
//! generation, which upstream runs in `Validate`).

use std::collections::HashSet;

use serde_json::Value;

use super::pod::pod_template_spec;
use super::util::*;
use crate::cron;

const LEGACY_JOB_NAME: &str = "job-name";
const JOB_NAME: &str = "batch.kubernetes.io/job-name";
const LEGACY_CONTROLLER_UID: &str = "controller-uid";
const CONTROLLER_UID: &str = "batch.kubernetes.io/controller-uid";

/// The Job strategy's `generateSelector`: template labels and the selector derived from
/// the Job's name and UID, unless `spec.manualSelector` is true.
pub(crate) fn generate_selector(job: &mut Value) {
    let name = super::meta_s(job, "name").to_string();
    let uid = super::meta_s(job, "uid").to_string();
    if get_in(job, &["spec", "manualSelector"]).and_then(Value::as_bool) == Some(true) {
        return;
    }
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    let template = spec
        .entry("template")
        .or_insert_with(|| serde_json::json!({}));
    if !template.is_object() {
        *template = serde_json::json!({});
    }
    if let Some(t) = template.as_object_mut() {
        let meta = t.entry("metadata").or_insert_with(|| serde_json::json!({}));
        if !meta.is_object() {
            *meta = serde_json::json!({});
        }
        if let Some(m) = meta.as_object_mut() {
            let labels = m.entry("labels").or_insert_with(|| serde_json::json!({}));
            if !labels.is_object() {
                *labels = serde_json::json!({});
            }
            if let Some(l) = labels.as_object_mut() {
                for key in [LEGACY_JOB_NAME, JOB_NAME] {
                    l.entry(key).or_insert_with(|| Value::String(name.clone()));
                }
                for key in [LEGACY_CONTROLLER_UID, CONTROLLER_UID] {
                    l.entry(key).or_insert_with(|| Value::String(uid.clone()));
                }
            }
        }
    }
    let sel = spec
        .entry("selector")
        .or_insert_with(|| serde_json::json!({}));
    if !sel.is_object() {
        *sel = serde_json::json!({});
    }
    if let Some(s) = sel.as_object_mut() {
        let ml = s
            .entry("matchLabels")
            .or_insert_with(|| serde_json::json!({}));
        if !ml.is_object() {
            *ml = serde_json::json!({});
        }
        if let Some(m) = ml.as_object_mut() {
            m.entry(CONTROLLER_UID).or_insert(Value::String(uid));
        }
    }
}

fn has_label(template_meta: Option<&Value>, key: &str, expected: &str, p: &P) -> Errs {
    let labels = template_meta
        .map(|m| str_map(m, "labels"))
        .unwrap_or_default();
    let lp = p.child("labels").key(key);
    match labels.get(key) {
        None => vec![required(&lp, &format!("must be '{expected}'"))],
        Some(v) if *v != expected => vec![invalid(
            &lp,
            template_meta
                .and_then(|m| m.get("labels"))
                .cloned()
                .unwrap_or(Value::Null),
            &format!("must be '{expected}'"),
        )],
        _ => Vec::new(),
    }
}

fn validate_generated_selector(job: &Value, batch_labels: bool) -> Errs {
    let mut errs = Vec::new();
    let spec = get(job, "spec").cloned().unwrap_or(Value::Null);
    if is_true(&spec, "manualSelector") || get(&spec, "selector").is_none() {
        return errs;
    }
    let name = super::meta_s(job, "name");
    let uid = super::meta_s(job, "uid");
    if uid.is_empty() {
        errs.push(required(&P::new("metadata").child("uid"), ""));
    }
    let tm = get_in(&spec, &["template", "metadata"]);
    let mp = P::new("spec").child("template").child("metadata");
    errs.extend(has_label(tm, LEGACY_CONTROLLER_UID, uid, &mp));
    errs.extend(has_label(tm, LEGACY_JOB_NAME, name, &mp));
    let mut expected = std::collections::BTreeMap::new();
    if batch_labels {
        errs.extend(has_label(tm, CONTROLLER_UID, uid, &mp));
        errs.extend(has_label(tm, JOB_NAME, name, &mp));
        expected.insert(CONTROLLER_UID, uid);
        expected.insert(JOB_NAME, name);
    }
    expected.insert(LEGACY_CONTROLLER_UID, uid);
    expected.insert(LEGACY_JOB_NAME, name);
    if let Some(sel) = Selector::from_label_selector(get(&spec, "selector"))
        && !sel.matches(&expected)
    {
        errs.push(invalid(
            &P::new("spec").child("selector"),
            jv(&spec, "selector"),
            "`selector` not auto-generated",
        ));
    }
    errs
}

/// `validateIndexesFormat`: the number of indexes, or upstream's error.
fn indexes_format(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let atoi = |x: &str| -> Result<i64, String> {
        x.parse::<i64>()
            .map_err(|_| format!("cannot convert string to integer for index: {x:?}"))
    };
    let mut last: Option<i64> = None;
    let mut total = 0;
    for interval in s.split(',') {
        let limits: Vec<&str> = interval.split('-').collect();
        if limits.len() > 2 {
            return Err(format!(
                "the fragment {interval:?} violates the requirement that an index interval can have at most two parts separated by '-'"
            ));
        }
        let x = atoi(limits[0])?;
        if x >= completions {
            return Err(format!("too large index: {:?}", limits[0]));
        }
        if let Some(l) = last
            && l >= x
        {
            return Err(format!("non-increasing order, previous: {l}, current: {x}"));
        }
        total += 1;
        last = Some(x);
        if limits.len() > 1 {
            let y = atoi(limits[1])?;
            if y >= completions {
                return Err(format!("too large index: {:?}", limits[1]));
            }
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            total += y - x;
            last = Some(y);
        }
    }
    Ok(total)
}

fn success_policy(spec: &Value, sp: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let rp = p.child("rules");
    let rules = arr(sp, "rules");
    if rules.is_empty() {
        errs.push(required(
            &rp,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > 20 {
        errs.push(too_many(&rp, rules.len(), 20));
    }
    let completions = int(spec, "completions").unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let ip = rp.index(i);
        let mut total = 0;
        if let Some(idx) = opt_s(rule, "succeededIndexes") {
            let ixp = ip.child("succeededIndexes");
            if idx.len() > 64 * 1024 {
                errs.push(too_long(&ixp, 64 * 1024));
            }
            match indexes_format(idx, completions) {
                Ok(t) => total = t,
                Err(e) => errs.push(invalid(
                    &ixp,
                    idx,
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(c) = int(rule, "succeededCount") {
            let cp = ip.child("succeededCount");
            errs.extend(nonnegative(c, &cp));
            if c > completions {
                errs.push(invalid(
                    &cp,
                    c,
                    &format!("must be less than or equal to {completions} (the number of specified completions)"),
                ));
            }
            if rule.get("succeededIndexes").is_some() && c > total {
                errs.push(invalid(
                    &cp,
                    c,
                    &format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                ));
            }
        }
        if rule.get("succeededCount").is_none() && rule.get("succeededIndexes").is_none() {
            errs.push(required(
                &ip,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
    }
    errs
}

fn pod_failure_policy(spec: &Value, pfp: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    let rp = p.child("rules");
    let rules = arr(pfp, "rules");
    if rules.len() > 20 {
        errs.push(too_many(&rp, rules.len(), 20));
    }
    let mut names: HashSet<&str> = HashSet::new();
    if let Some(ts) = get_in(spec, &["template", "spec"]) {
        for key in ["containers", "initContainers"] {
            names.extend(arr(ts, key).iter().map(|c| s(c, "name")));
        }
    }
    const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
    for (i, rule) in rules.iter().enumerate() {
        let ip = rp.index(i);
        let ap = ip.child("action");
        match s(rule, "action") {
            "" => errs.push(required(
                &ap,
                "valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]",
            )),
            "FailIndex" if spec.get("backoffLimitPerIndex").is_none() => errs.push(invalid(
                &ap,
                "FailIndex",
                "requires the backoffLimitPerIndex to be set",
            )),
            a if !ACTIONS.contains(&a) => errs.push(not_supported(&ap, a, ACTIONS)),
            _ => {}
        }
        let oec = get(rule, "onExitCodes");
        let opc = arr(rule, "onPodConditions");
        if let Some(oec) = oec {
            let ep = ip.child("onExitCodes");
            let op = s(oec, "operator");
            match op {
                "" => errs.push(required(
                    &ep.child("operator"),
                    "valid values: [\"In\" \"NotIn\"]",
                )),
                "In" | "NotIn" => {}
                other => errs.push(not_supported(
                    &ep.child("operator"),
                    other,
                    &["In", "NotIn"],
                )),
            }
            if let Some(cn) = opt_s(oec, "containerName")
                && !names.contains(cn)
            {
                errs.push(invalid(
                    &ep.child("containerName"),
                    cn,
                    "must be one of the container or initContainer names in the pod template",
                ));
            }
            let vp = ep.child("values");
            let values: Vec<i64> = arr(oec, "values")
                .iter()
                .map(|v| v.as_i64().unwrap_or(0))
                .collect();
            if values.is_empty() {
                errs.push(invalid(
                    &vp,
                    jv(oec, "values"),
                    "at least one value is required",
                ));
            } else if values.len() > 255 {
                errs.push(too_many(&vp, values.len(), 255));
            }
            let mut seen = HashSet::new();
            let mut ordered = true;
            for (j, v) in values.iter().enumerate() {
                if op == "In" && *v == 0 {
                    errs.push(invalid(
                        &vp.index(j),
                        *v,
                        "must not be 0 for the In operator",
                    ));
                }
                if !seen.insert(*v) {
                    errs.push(duplicate(&vp.index(j), *v));
                }
                if j > 0 && values[j - 1] > *v {
                    ordered = false;
                }
            }
            if !ordered {
                errs.push(invalid(&vp, jv(oec, "values"), "must be ordered"));
            }
        }
        if !opc.is_empty() {
            let cp = ip.child("onPodConditions");
            if opc.len() > 20 {
                errs.push(too_many(&cp, opc.len(), 20));
            }
            for (j, pat) in opc.iter().enumerate() {
                let pp = cp.index(j);
                errs.extend(qualified_name(s(pat, "type"), &pp.child("type")));
                match s(pat, "status") {
                    "" => errs.push(required(
                        &pp.child("status"),
                        "valid values: [\"False\" \"True\" \"Unknown\"]",
                    )),
                    "False" | "True" | "Unknown" => {}
                    other => errs.push(not_supported(
                        &pp.child("status"),
                        other,
                        &["False", "True", "Unknown"],
                    )),
                }
            }
        }
        if oec.is_some() && !opc.is_empty() {
            errs.push(invalid(
                &ip,
                Value::Null,
                "specifying both OnExitCodes and OnPodConditions is not supported",
            ));
        }
        if oec.is_none() && opc.is_empty() {
            errs.push(invalid(
                &ip,
                Value::Null,
                "specifying one of OnExitCodes and OnPodConditions is required",
            ));
        }
    }
    errs
}

/// `validateJobSpec` (shared by Jobs and CronJob job templates).
fn job_spec_common(spec: &Value, p: &P) -> Errs {
    let mut errs = Vec::new();
    for key in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
    ] {
        errs.extend(nonnegative_opt(spec, key, p));
    }
    if let Some(mfi) = int(spec, "maxFailedIndexes") {
        errs.extend(nonnegative(mfi, &p.child("maxFailedIndexes")));
        if spec.get("backoffLimitPerIndex").is_none() {
            errs.push(required(
                &p.child("backoffLimitPerIndex"),
                "when maxFailedIndexes is specified",
            ));
        }
    }
    let mode = opt_s(spec, "completionMode");
    if let Some(m) = mode {
        if m != "NonIndexed" && m != "Indexed" {
            errs.push(not_supported(
                &p.child("completionMode"),
                m,
                &["NonIndexed", "Indexed"],
            ));
        }
        if m == "Indexed" {
            let completions = int(spec, "completions");
            if completions.is_none() {
                errs.push(required(
                    &p.child("completions"),
                    "when completion mode is Indexed",
                ));
            }
            if let Some(par) = int(spec, "parallelism")
                && par > 100_000
            {
                errs.push(invalid(
                    &p.child("parallelism"),
                    par,
                    "must be less than or equal to 100000 when completion mode is Indexed",
                ));
            }
            let mfi = int(spec, "maxFailedIndexes");
            if let (Some(c), Some(m)) = (completions, mfi)
                && m > c
            {
                errs.push(invalid(
                    &p.child("maxFailedIndexes"),
                    m,
                    "must be less than or equal to completions",
                ));
            }
            if let Some(m) = mfi
                && m > 100_000
            {
                errs.push(invalid(
                    &p.child("maxFailedIndexes"),
                    m,
                    "must be less than or equal to 100000",
                ));
            }
            if completions.is_some_and(|c| c > 100_000)
                && spec.get("backoffLimitPerIndex").is_some()
            {
                if mfi.is_none() {
                    errs.push(required(
                        &p.child("maxFailedIndexes"),
                        "must be specified when completions is above 100000",
                    ));
                }
                if let Some(par) = int(spec, "parallelism")
                    && par > 10_000
                {
                    errs.push(invalid(&p.child("parallelism"), par, "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"));
                }
                if let Some(m) = mfi
                    && m > 10_000
                {
                    errs.push(invalid(&p.child("maxFailedIndexes"), m, "must be less than or equal to 10000 when completions are above 100000 and used with backoff limit per index"));
                }
            }
        }
    }
    if mode.is_none_or(|m| m == "NonIndexed") {
        if let Some(b) = int(spec, "backoffLimitPerIndex") {
            errs.push(invalid(
                &p.child("backoffLimitPerIndex"),
                b,
                "requires indexed completion mode",
            ));
        }
        if let Some(m) = int(spec, "maxFailedIndexes") {
            errs.push(invalid(
                &p.child("maxFailedIndexes"),
                m,
                "requires indexed completion mode",
            ));
        }
    }
    let pfp = get(spec, "podFailurePolicy");
    if let Some(pfp) = pfp {
        errs.extend(pod_failure_policy(spec, pfp, &p.child("podFailurePolicy")));
    }
    if let Some(sp) = get(spec, "successPolicy") {
        if mode != Some("Indexed") {
            errs.push(invalid(
                &p.child("successPolicy"),
                sp.clone(),
                "requires indexed completion mode",
            ));
        } else {
            errs.extend(success_policy(spec, sp, &p.child("successPolicy")));
        }
    }
    if let Some(prp) = opt_s(spec, "podReplacementPolicy") {
        let pp = p.child("podReplacementPolicy");
        if pfp.is_some() {
            if prp != "Failed" {
                errs.push(not_supported(&pp, prp, &["Failed"]));
            }
        } else if prp != "Failed" && prp != "TerminatingOrFailed" {
            errs.push(not_supported(&pp, prp, &["Failed", "TerminatingOrFailed"]));
        }
    }
    if let Some(mb) = opt_s(spec, "managedBy") {
        let mp = p.child("managedBy");
        errs.extend(is_domain_prefixed_path(&mp, mb));
        if mb.len() > 63 {
            errs.push(too_long_max_length(&mp, 63));
        }
    }
    let template = get(spec, "template");
    let tp = p.child("template");
    errs.extend(pod_template_spec(template, &tp));
    let restart = template
        .and_then(|t| get_in(t, &["spec", "restartPolicy"]))
        .and_then(Value::as_str)
        .unwrap_or("");
    let rp = tp.child("spec").child("restartPolicy");
    if restart == "Always" || restart.is_empty() {
        errs.push(required(&rp, "valid values: \"OnFailure\", \"Never\""));
    } else if restart != "OnFailure" && restart != "Never" {
        errs.push(not_supported(&rp, restart, &["OnFailure", "Never"]));
    } else if pfp.is_some() && restart != "Never" {
        errs.push(invalid(
            &rp,
            restart,
            "only \"Never\" is supported when podFailurePolicy is specified",
        ));
    }
    errs
}

fn job_spec(spec: &Value, p: &P) -> Errs {
    let mut errs = job_spec_common(spec, p);
    let sel = get(spec, "selector");
    match sel {
        None => errs.push(required(&p.child("selector"), "")),
        Some(s) => errs.extend(validate_label_selector(
            Some(s),
            false,
            &p.child("selector"),
        )),
    }
    let template = get(spec, "template");
    if let Some(selector) = Selector::from_label_selector(sel)
        && !selector.matches(&template_labels(template))
    {
        errs.push(invalid(
            &p.child("template").child("metadata").child("labels"),
            template_labels_value(template),
            "`selector` does not match template `labels`",
        ));
    }
    errs
}

fn validate_job(job: &Value, batch_labels: bool) -> Errs {
    let spec = get(job, "spec").cloned().unwrap_or(Value::Null);
    let mut errs = validate_generated_selector(job, batch_labels);
    errs.extend(job_spec(&spec, &P::new("spec")));
    if opt_s(&spec, "completionMode") == Some("Indexed")
        && let Some(c) = int(&spec, "completions")
        && c > 0
    {
        let name = super::meta_s(job, "name");
        let host = format!("{name}-{}", c - 1);
        if !is_dns1123_label(&host).is_empty() {
            errs.push(invalid(
                &P::new("metadata").child("name"),
                name,
                &format!("will not able to create pod with invalid DNS label: {host}"),
            ));
        }
    }
    errs
}

/// `ValidateJob`, after the strategy's selector generation.
pub(crate) fn job(obj: &Value) -> Errs {
    let mut job = obj.clone();
    generate_selector(&mut job);
    validate_job(&job, true)
}

/// `ValidateJobUpdate`.
pub(crate) fn job_update(new: &Value, old: &Value) -> Errs {
    let mut job = new.clone();
    generate_selector(&mut job);
    let ns = get(&job, "spec").cloned().unwrap_or(Value::Null);
    let os = get(old, "spec").cloned().unwrap_or(Value::Null);
    let sp = P::new("spec");
    let old_has_batch_labels = get_in(&os, &["template", "metadata", "labels"])
        .and_then(|l| l.get(CONTROLLER_UID))
        .is_some();
    let mut errs = validate_job(&job, old_has_batch_labels || is_true(&os, "manualSelector"));
    // Completions: immutable, but Indexed Jobs may scale completions with parallelism.
    let indexed = opt_s(&ns, "completionMode") == Some("Indexed");
    if !indexed {
        errs.extend(immutable(
            ns.get("completions"),
            os.get("completions"),
            &sp.child("completions"),
        ));
    } else if !semantic_eq(ns.get("completions"), os.get("completions"))
        && let Some(c) = int(&ns, "completions")
        && Some(c) != int(&ns, "parallelism")
    {
        errs.push(invalid(
            &sp.child("completions"),
            c,
            "can only be modified in tandem with spec.parallelism",
        ));
    }
    errs.extend(immutable(
        ns.get("selector"),
        os.get("selector"),
        &sp.child("selector"),
    ));
    // The template is immutable, but for scheduling directives while the Job is suspended
    // and has never started.
    let mutable_scheduling =
        is_true(&os, "suspend") && get_in(old, &["status", "startTime"]).is_none();
    let mut old_t = os.get("template").cloned().unwrap_or(Value::Null);
    let new_t = ns.get("template").cloned().unwrap_or(Value::Null);
    if mutable_scheduling {
        let copy = |dst: &mut Value, src: &Value, path: &[&str]| {
            let mut cur = dst;
            for k in &path[..path.len() - 1] {
                if !cur.get(*k).is_some_and(Value::is_object) {
                    if let Some(m) = cur.as_object_mut() {
                        m.insert((*k).to_string(), serde_json::json!({}));
                    } else {
                        return;
                    }
                }
                let Some(next) = cur.get_mut(*k) else { return };
                cur = next;
            }
            let last = path[path.len() - 1];
            if let Some(m) = cur.as_object_mut() {
                match get_in(src, path) {
                    Some(v) => {
                        m.insert(last.to_string(), v.clone());
                    }
                    None => {
                        m.remove(last);
                    }
                }
            }
        };
        for path in [
            &["spec", "affinity", "nodeAffinity"][..],
            &["spec", "nodeSelector"],
            &["spec", "tolerations"],
            &["metadata", "annotations"],
            &["metadata", "labels"],
            &["spec", "schedulingGates"],
        ] {
            copy(&mut old_t, &new_t, path);
        }
    }
    errs.extend(immutable(Some(&new_t), Some(&old_t), &sp.child("template")));
    for key in [
        "completionMode",
        "podFailurePolicy",
        "backoffLimitPerIndex",
        "successPolicy",
        "managedBy",
    ] {
        errs.extend(immutable(ns.get(key), os.get(key), &sp.child(key)));
    }
    errs
}

fn cron_job_spec(spec: &Value, old: Option<&Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    let schedule = s(spec, "schedule");
    let sp = p.child("schedule");
    if schedule.is_empty() {
        errs.push(required(&sp, ""));
    } else {
        let allow_tz = old.is_some_and(|o| s(o, "schedule").contains("TZ"));
        if let Err(e) = cron::parse_standard(schedule) {
            errs.push(invalid(&sp, schedule, &e));
        }
        let has_tz_field = spec.get("timeZone").is_some();
        if allow_tz && schedule.contains("TZ") && has_tz_field {
            errs.push(invalid(
                &sp,
                schedule,
                "cannot use both timeZone field and TZ or CRON_TZ in schedule",
            ));
        } else if !allow_tz && schedule.contains("TZ") {
            errs.push(invalid(
                &sp,
                schedule,
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            ));
        }
    }
    errs.extend(nonnegative_opt(spec, "startingDeadlineSeconds", p));
    if old.is_none_or(|o| opt_s(o, "timeZone") != opt_s(spec, "timeZone"))
        && let Some(tz) = opt_s(spec, "timeZone")
    {
        errs.extend(time_zone(tz, &p.child("timeZone")));
    }
    match s(spec, "concurrencyPolicy") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => errs.push(required(&p.child("concurrencyPolicy"), "")),
        other => errs.push(not_supported(
            &p.child("concurrencyPolicy"),
            other,
            &["Allow", "Forbid", "Replace"],
        )),
    }
    let jt = get(spec, "jobTemplate").cloned().unwrap_or(Value::Null);
    let jp = p.child("jobTemplate");
    let jspec = get(&jt, "spec").cloned().unwrap_or(Value::Null);
    errs.extend(job_spec_common(&jspec, &jp.child("spec")));
    if let Some(sel) = get(&jspec, "selector") {
        errs.push(invalid(
            &jp.child("spec").child("selector"),
            sel.clone(),
            "`selector` will be auto-generated",
        ));
    }
    if is_true(&jspec, "manualSelector") {
        errs.push(not_supported(
            &jp.child("spec").child("manualSelector"),
            true,
            &["nil", "false"],
        ));
    }
    errs.extend(nonnegative_opt(spec, "successfulJobsHistoryLimit", p));
    errs.extend(nonnegative_opt(spec, "failedJobsHistoryLimit", p));
    errs
}

fn time_zone(tz: &str, p: &P) -> Errs {
    if tz.is_empty() {
        return vec![invalid(p, tz, "timeZone must be nil or non-empty string")];
    }
    for part in tz.split('/') {
        let ok_chars = !part.is_empty()
            && part.len() <= 14
            && part
                .bytes()
                .all(|c| c.is_ascii_alphanumeric() || b".-_+".contains(&c));
        if part == "." || part == ".." || part.starts_with('-') || !ok_chars {
            return vec![invalid(p, tz, &format!("unknown time zone {tz}"))];
        }
    }
    let mut errs = Vec::new();
    if tz.eq_ignore_ascii_case("Local") {
        errs.push(invalid(
            p,
            tz,
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        ));
    }
    if let Err(e) = cron::load_location(tz) {
        errs.push(invalid(p, tz, &e));
    }
    errs
}

/// `ValidateCronJobCreate`.
pub(crate) fn cron_job_create(obj: &Value) -> Errs {
    let spec = get(obj, "spec").cloned().unwrap_or(Value::Null);
    let mut errs = cron_job_spec(&spec, None, &P::new("spec"));
    let name = super::meta_s(obj, "name");
    if name.len() > 52 {
        errs.push(invalid(
            &P::new("metadata").child("name"),
            name,
            "must be no more than 52 characters",
        ));
    }
    errs
}

/// `ValidateCronJobUpdate`.
pub(crate) fn cron_job_update(new: &Value, old: &Value) -> Errs {
    let spec = get(new, "spec").cloned().unwrap_or(Value::Null);
    let old_spec = get(old, "spec").cloned().unwrap_or(Value::Null);
    cron_job_spec(&spec, Some(&old_spec), &P::new("spec"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn indexes() {
        assert_eq!(indexes_format("0-2,4", 5), Ok(4));
        assert_eq!(
            indexes_format("invalid-format", 5),
            Err("cannot convert string to integer for index: \"invalid\"".into())
        );
        assert_eq!(indexes_format("5", 5), Err("too large index: \"5\"".into()));
        assert_eq!(
            indexes_format("3,1", 5),
            Err("non-increasing order, previous: 3, current: 1".into())
        );
    }

    #[test]
    fn selector_generation() {
        let mut job = json!({"metadata": {"name": "pi", "uid": "u1"}, "spec": {"template": {}}});
        generate_selector(&mut job);
        assert_eq!(job["spec"]["selector"]["matchLabels"][CONTROLLER_UID], "u1");
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"]["job-name"],
            "pi"
        );
        assert_eq!(
            job["spec"]["template"]["metadata"]["labels"][JOB_NAME],
            "pi"
        );
    }

    #[test]
    fn time_zones() {
        assert!(time_zone("Europe/Berlin", &P::new("tz")).is_empty());
        assert_eq!(time_zone("Local", &P::new("tz")).len(), 1);
        assert_eq!(
            time_zone("a//b", &P::new("tz"))[0].detail,
            "unknown time zone a//b"
        );
    }
}
