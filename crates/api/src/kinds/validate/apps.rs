//! apps/v1: Deployment, ReplicaSet, DaemonSet, StatefulSet, ControllerRevision
//! (`pkg/apis/apps/validation`, plus the apps/v1 selector immutability of the strategies).

use serde_json::Value;

use super::pod::pod_template_spec;
use super::util::*;

fn spec(obj: &Value) -> Value {
    get(obj, "spec").cloned().unwrap_or(Value::Null)
}

/// `ValidatePositiveIntOrPercent`.
pub(crate) fn positive_int_or_percent(v: Option<&Value>, p: &P) -> Errs {
    match v {
        Some(Value::String(sv)) => is_valid_percent(sv)
            .into_iter()
            .map(|m| invalid(p, sv.as_str(), &m))
            .collect(),
        Some(Value::Number(n)) => nonnegative(n.as_i64().unwrap_or(0), p),
        _ => Vec::new(),
    }
}

fn percent_value(v: Option<&Value>) -> Option<i64> {
    match v {
        Some(Value::String(sv)) if is_valid_percent(sv).is_empty() => {
            sv.trim_end_matches('%').parse().ok().or(Some(i64::MAX))
        }
        _ => None,
    }
}

/// `getIntOrPercentValue`.
fn int_or_percent_value(v: Option<&Value>) -> i64 {
    if let Some(p) = percent_value(v) {
        return p;
    }
    match v {
        Some(Value::Number(n)) => n.as_i64().unwrap_or(0),
        // `IntValue()` of a non-numeric string is 0.
        Some(Value::String(sv)) => sv.parse().unwrap_or(0),
        _ => 0,
    }
}

/// `IsNotMoreThan100Percent`.
pub(crate) fn not_more_than_100_percent(v: Option<&Value>, p: &P) -> Errs {
    match percent_value(v) {
        Some(pct) if pct > 100 => vec![invalid(
            p,
            v.cloned().unwrap_or(Value::Null),
            "must not be greater than 100%",
        )],
        _ => Vec::new(),
    }
}

/// `ValidatePodTemplateSpecForReplicaSet`.
fn template_for_replica_set(spec: &Value, selector: Option<&Selector>, p: &P, kind: &str) -> Errs {
    let mut errs = Vec::new();
    let template = get(spec, "template");
    if let Some(sel) = selector
        && !sel.is_empty()
        && !sel.matches(&template_labels(template))
    {
        errs.push(invalid(
            &p.child("metadata").child("labels"),
            template_labels_value(template),
            "`selector` does not match template `labels`",
        ));
    }
    errs.extend(pod_template_spec(template, p));
    let restart = template
        .and_then(|t| get_in(t, &["spec", "restartPolicy"]))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(not_supported(
            &p.child("spec").child("restartPolicy"),
            restart,
            &["Always"],
        ));
    }
    if template
        .and_then(|t| get_in(t, &["spec", "activeDeadlineSeconds"]))
        .is_some()
    {
        errs.push(forbidden(
            &p.child("spec").child("activeDeadlineSeconds"),
            &format!("activeDeadlineSeconds in {kind} is not Supported"),
        ));
    }
    errs
}

/// Selector required, strictly valid and non-empty; then the template must match it.
fn selector_and_template(spec: &Value, sp: &P, empty_msg: &str, kind: &str) -> Errs {
    let mut errs = Vec::new();
    let sel = get(spec, "selector");
    match sel {
        None => errs.push(required(&sp.child("selector"), "")),
        Some(s) => {
            errs.extend(validate_label_selector(
                Some(s),
                false,
                &sp.child("selector"),
            ));
            if len_of(s, "matchLabels") + len_of(s, "matchExpressions") == 0 {
                errs.push(invalid(&sp.child("selector"), s.clone(), empty_msg));
            }
        }
    }
    match Selector::from_label_selector(sel) {
        None => errs.push(invalid(
            &sp.child("selector"),
            sel.cloned().unwrap_or(Value::Null),
            "invalid label selector",
        )),
        Some(selector) => errs.extend(template_for_replica_set(
            spec,
            Some(&selector),
            &sp.child("template"),
            kind,
        )),
    }
    errs
}

fn deployment_spec(spec: &Value) -> Errs {
    let sp = P::new("spec");
    let mut errs = nonnegative(int(spec, "replicas").unwrap_or(0), &sp.child("replicas"));
    errs.extend(selector_and_template(
        spec,
        &sp,
        "empty selector is invalid for deployment",
        "ReplicaSet",
    ));
    // Strategy.
    let strat = get(spec, "strategy").cloned().unwrap_or(Value::Null);
    let stp = sp.child("strategy");
    match s(&strat, "type") {
        "Recreate" => {
            if get(&strat, "rollingUpdate").is_some() {
                errs.push(forbidden(
                    &stp.child("rollingUpdate"),
                    "may not be specified when strategy `type` is 'Recreate'",
                ));
            }
        }
        "RollingUpdate" => match get(&strat, "rollingUpdate") {
            None => errs.push(required(
                &stp.child("rollingUpdate"),
                "this should be defaulted and never be nil",
            )),
            Some(ru) => {
                let rp = stp.child("rollingUpdate");
                let mu = get(ru, "maxUnavailable");
                let ms = get(ru, "maxSurge");
                errs.extend(positive_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(positive_int_or_percent(ms, &rp.child("maxSurge")));
                if int_or_percent_value(mu) == 0 && int_or_percent_value(ms) == 0 {
                    errs.push(invalid(
                        &rp.child("maxUnavailable"),
                        mu.cloned().unwrap_or(Value::Null),
                        "may not be 0 when `maxSurge` is 0",
                    ));
                }
                errs.extend(not_more_than_100_percent(mu, &rp.child("maxUnavailable")));
            }
        },
        _ => errs.push(not_supported(
            &stp,
            strat.clone(),
            &["Recreate", "RollingUpdate"],
        )),
    }
    let mrs = int(spec, "minReadySeconds").unwrap_or(0);
    errs.extend(nonnegative(mrs, &sp.child("minReadySeconds")));
    errs.extend(nonnegative_opt(spec, "revisionHistoryLimit", &sp));
    if let Some(pds) = int(spec, "progressDeadlineSeconds") {
        errs.extend(nonnegative(pds, &sp.child("progressDeadlineSeconds")));
        if pds <= mrs {
            errs.push(invalid(
                &sp.child("progressDeadlineSeconds"),
                pds,
                "must be greater than minReadySeconds",
            ));
        }
    }
    errs
}

pub(crate) fn deployment(obj: &Value) -> Errs {
    deployment_spec(&spec(obj))
}

fn selector_immutable(new: &Value, old: &Value) -> Errs {
    immutable(
        get_in(new, &["spec", "selector"]),
        get_in(old, &["spec", "selector"]),
        &P::new("spec").child("selector"),
    )
}

pub(crate) fn deployment_update(new: &Value, old: &Value) -> Errs {
    let mut errs = deployment_spec(&spec(new));
    errs.extend(selector_immutable(new, old));
    errs
}

fn replica_set_spec(spec: &Value) -> Errs {
    let sp = P::new("spec");
    let mut errs = nonnegative(int(spec, "replicas").unwrap_or(0), &sp.child("replicas"));
    errs.extend(nonnegative(
        int(spec, "minReadySeconds").unwrap_or(0),
        &sp.child("minReadySeconds"),
    ));
    errs.extend(selector_and_template(
        spec,
        &sp,
        "empty selector is invalid for deployment",
        "ReplicaSet",
    ));
    errs
}

pub(crate) fn replica_set(obj: &Value) -> Errs {
    replica_set_spec(&spec(obj))
}

pub(crate) fn replica_set_update(new: &Value, old: &Value) -> Errs {
    let mut errs = replica_set_spec(&spec(new));
    errs.extend(selector_immutable(new, old));
    errs
}

fn daemon_set_spec(spec: &Value) -> Errs {
    let sp = P::new("spec");
    let sel = get(spec, "selector");
    let mut errs = validate_label_selector(sel, false, &sp.child("selector"));
    let template = get(spec, "template");
    if let Some(selector) = Selector::from_label_selector(sel)
        && !selector.matches(&template_labels(template))
    {
        errs.push(invalid(
            &sp.child("template").child("metadata").child("labels"),
            template_labels_value(template),
            "`selector` does not match template `labels`",
        ));
    }
    if let Some(s) = sel
        && len_of(s, "matchLabels") + len_of(s, "matchExpressions") == 0
    {
        errs.push(invalid(
            &sp.child("selector"),
            s.clone(),
            "empty selector is invalid for daemonset",
        ));
    }
    let tp = sp.child("template");
    errs.extend(pod_template_spec(template, &tp));
    let restart = template
        .and_then(|t| get_in(t, &["spec", "restartPolicy"]))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(not_supported(
            &tp.child("spec").child("restartPolicy"),
            restart,
            &["Always"],
        ));
    }
    if template
        .and_then(|t| get_in(t, &["spec", "activeDeadlineSeconds"]))
        .is_some()
    {
        errs.push(forbidden(
            &tp.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in DaemonSet is not Supported",
        ));
    }
    errs.extend(nonnegative(
        int(spec, "minReadySeconds").unwrap_or(0),
        &sp.child("minReadySeconds"),
    ));
    let us = get(spec, "updateStrategy").cloned().unwrap_or(Value::Null);
    let up = sp.child("updateStrategy");
    match s(&us, "type") {
        "OnDelete" => {}
        "RollingUpdate" => match get(&us, "rollingUpdate") {
            None => errs.push(required(&up.child("rollingUpdate"), "")),
            Some(ru) => {
                let rp = up.child("rollingUpdate");
                let mu = get(ru, "maxUnavailable");
                let ms = get(ru, "maxSurge");
                errs.extend(positive_int_or_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(positive_int_or_percent(ms, &rp.child("maxSurge")));
                errs.extend(not_more_than_100_percent(mu, &rp.child("maxUnavailable")));
                errs.extend(not_more_than_100_percent(ms, &rp.child("maxSurge")));
                let has_u = int_or_percent_value(mu) != 0;
                let has_s = int_or_percent_value(ms) != 0;
                if has_u && has_s {
                    errs.push(invalid(
                        &rp.child("maxSurge"),
                        ms.cloned().unwrap_or(Value::Null),
                        "may not be set when maxUnavailable is non-zero",
                    ));
                } else if !has_u && !has_s {
                    errs.push(required(
                        &rp.child("maxUnavailable"),
                        "cannot be 0 when maxSurge is 0",
                    ));
                }
            }
        },
        _ => errs.push(not_supported(
            &up,
            us.clone(),
            &["RollingUpdate", "OnDelete"],
        )),
    }
    errs.extend(nonnegative_opt(spec, "revisionHistoryLimit", &sp));
    errs
}

pub(crate) fn daemon_set(obj: &Value) -> Errs {
    daemon_set_spec(&spec(obj))
}

pub(crate) fn daemon_set_update(new: &Value, old: &Value) -> Errs {
    let mut errs = daemon_set_spec(&spec(new));
    errs.extend(selector_immutable(new, old));
    errs
}

fn stateful_set_spec(spec: &Value) -> Errs {
    let sp = P::new("spec");
    let mut errs = Vec::new();
    match s(spec, "podManagementPolicy") {
        "" => errs.push(required(&sp.child("podManagementPolicy"), "")),
        "OrderedReady" | "Parallel" => {}
        other => errs.push(invalid(
            &sp.child("podManagementPolicy"),
            other,
            "must be 'OrderedReady' or 'Parallel'",
        )),
    }
    let us = get(spec, "updateStrategy").cloned().unwrap_or(Value::Null);
    let up = sp.child("updateStrategy");
    match s(&us, "type") {
        "" => errs.push(required(&up, "")),
        "OnDelete" => {
            if let Some(ru) = get(&us, "rollingUpdate") {
                errs.push(invalid(
                    &up.child("rollingUpdate"),
                    ru.clone(),
                    "only allowed for updateStrategy 'RollingUpdate'",
                ));
            }
        }
        "RollingUpdate" => {
            if let Some(ru) = get(&us, "rollingUpdate") {
                let rp = up.child("rollingUpdate");
                errs.extend(nonnegative(
                    int(ru, "partition").unwrap_or(0),
                    &rp.child("partition"),
                ));
                if let Some(mu) = get(ru, "maxUnavailable") {
                    let mp = rp.child("maxUnavailable");
                    errs.extend(positive_int_or_percent(Some(mu), &mp));
                    if int_or_percent_value(Some(mu)) == 0 {
                        errs.push(invalid(&mp, mu.clone(), "cannot be 0"));
                    }
                    errs.extend(not_more_than_100_percent(Some(mu), &mp));
                }
            }
        }
        _ => errs.push(invalid(
            &up,
            us.clone(),
            "must be 'RollingUpdate' or 'OnDelete'",
        )),
    }
    if let Some(pol) = get(spec, "persistentVolumeClaimRetentionPolicy") {
        let pp = sp.child("persistentVolumeClaimRetentionPolicy");
        for key in ["whenDeleted", "whenScaled"] {
            let v = s(pol, key);
            if v != "Retain" && v != "Delete" {
                errs.push(not_supported(&pp.child(key), v, &["Retain", "Delete"]));
            }
        }
    }
    errs.extend(nonnegative(
        int(spec, "replicas").unwrap_or(0),
        &sp.child("replicas"),
    ));
    errs.extend(nonnegative(
        int(spec, "minReadySeconds").unwrap_or(0),
        &sp.child("minReadySeconds"),
    ));
    if let Some(ord) = get(spec, "ordinals") {
        errs.extend(nonnegative(
            int(ord, "start").unwrap_or(0),
            &sp.child("ordinals.start"),
        ));
    }
    let sel = get(spec, "selector");
    match sel {
        None => errs.push(required(&sp.child("selector"), "")),
        Some(s) => {
            errs.extend(validate_label_selector(
                Some(s),
                false,
                &sp.child("selector"),
            ));
            if len_of(s, "matchLabels") + len_of(s, "matchExpressions") == 0 {
                errs.push(invalid(
                    &sp.child("selector"),
                    s.clone(),
                    "empty selector is invalid for statefulset",
                ));
            }
        }
    }
    let template = get(spec, "template");
    let tp = sp.child("template");
    match Selector::from_label_selector(sel) {
        None => errs.push(invalid(
            &sp.child("selector"),
            sel.cloned().unwrap_or(Value::Null),
            "",
        )),
        Some(selector) => {
            if !selector.is_empty() && !selector.matches(&template_labels(template)) {
                errs.push(invalid(
                    &tp.child("metadata").child("labels"),
                    template_labels_value(template),
                    "`selector` does not match template `labels`",
                ));
            }
            let meta = template.and_then(|t| get(t, "metadata"));
            errs.extend(validate_labels(
                meta.and_then(|m| get(m, "labels")),
                &tp.child("labels"),
            ));
            errs.extend(super::meta_annotations(
                meta.and_then(|m| get(m, "annotations")),
                &tp.child("annotations"),
            ));
            let ann = meta
                .map(|m| {
                    str_map(m, "annotations")
                        .into_iter()
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .unwrap_or_default();
            let tspec = template
                .and_then(|t| get(t, "spec"))
                .cloned()
                .unwrap_or(Value::Null);
            errs.extend(super::pod::pod_specific_annotations(
                &ann,
                &tspec,
                &tp.child("annotations"),
            ));
        }
    }
    let restart = template
        .and_then(|t| get_in(t, &["spec", "restartPolicy"]))
        .and_then(Value::as_str)
        .unwrap_or("");
    if restart != "Always" {
        errs.push(not_supported(
            &tp.child("spec").child("restartPolicy"),
            restart,
            &["Always"],
        ));
    }
    if template
        .and_then(|t| get_in(t, &["spec", "activeDeadlineSeconds"]))
        .is_some()
    {
        errs.push(forbidden(
            &tp.child("spec").child("activeDeadlineSeconds"),
            "activeDeadlineSeconds in StatefulSet is not Supported",
        ));
    }
    errs
}

pub(crate) fn stateful_set(obj: &Value) -> Errs {
    stateful_set_spec(&spec(obj))
}

pub(crate) fn stateful_set_update(new: &Value, old: &Value) -> Errs {
    let ns = spec(new);
    let os = spec(old);
    let mut errs = stateful_set_spec(&ns);
    let mut clone = ns.clone();
    if let Some(m) = clone.as_object_mut() {
        for key in [
            "replicas",
            "template",
            "updateStrategy",
            "minReadySeconds",
            "ordinals",
            "persistentVolumeClaimRetentionPolicy",
        ] {
            match os.get(key) {
                Some(v) => {
                    m.insert(key.into(), v.clone());
                }
                None => {
                    m.remove(key);
                }
            }
        }
    }
    if !semantic_eq(Some(&clone), Some(&os)) {
        errs.push(forbidden(
            &P::new("spec"),
            "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
        ));
    }
    errs
}

pub(crate) fn controller_revision(obj: &Value) -> Errs {
    let mut errs = Vec::new();
    if get(obj, "data").is_none() {
        errs.push(required(&P::new("data"), "data is mandatory"));
    }
    errs.extend(nonnegative(
        int(obj, "revision").unwrap_or(0),
        &P::new("revision"),
    ));
    errs
}

pub(crate) fn controller_revision_update(new: &Value, old: &Value) -> Errs {
    let mut errs = controller_revision(new);
    errs.extend(immutable(new.get("data"), old.get("data"), &P::new("data")));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn int_or_percent() {
        assert_eq!(int_or_percent_value(Some(&json!("25%"))), 25);
        assert_eq!(int_or_percent_value(Some(&json!(3))), 3);
        assert_eq!(
            not_more_than_100_percent(Some(&json!("101%")), &P::new("x")).len(),
            1
        );
        assert_eq!(
            positive_int_or_percent(Some(&json!("x%")), &P::new("x")).len(),
            1
        );
        assert_eq!(
            positive_int_or_percent(Some(&json!(-1)), &P::new("x")).len(),
            1
        );
    }
}
