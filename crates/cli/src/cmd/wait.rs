//! `kubectl wait`, as kubectl's `pkg/cmd/wait`: `--for=create|delete|condition=…[=…]|
//! jsonpath='{…}'[=…]`, one shared deadline (`--timeout`, 30 s by default; zero checks
//! once, negative waits a week), each object watched by name until its condition holds.

use std::io::Write;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cmd::watchutil::{self, Event, Selection, Step, Target};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    resources: Vec<String>,
    /// The condition to wait on: [create|delete|condition=condition-name[=condition-value]|
    /// jsonpath='{JSONPath expression}'=[JSONPath value]].
    #[arg(long = "for", default_value = "")]
    for_condition: String,
    /// The length of time to wait before giving up. Zero means check once and don't wait,
    /// negative means wait for a week.
    #[arg(long, default_value = "30s", allow_hyphen_values = true)]
    timeout: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long = "field-selector")]
    field_selector: Option<String>,
    /// Select all resources in the namespace of the specified resource types.
    #[arg(long)]
    all: bool,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long = "all-namespaces")]
    all_namespaces: bool,
    /// Output format (only `name` is supported).
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[arg(short = 'f', long = "filename")]
    filename: Vec<String>,
    #[arg(long, default_value_t = false, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    local: bool,
}

/// What `--for` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Condition {
    Create,
    Delete,
    /// A `status.conditions` entry of this type with this status (case-insensitive).
    Condition {
        name: String,
        value: String,
    },
    /// A JSONPath (already relaxed to `{.…}`) and the value it must print, or any value.
    JsonPath {
        expr: String,
        value: Option<String>,
    },
}

/// Parses `--for` as kubectl's `conditionFuncFor`.
pub fn parse_condition(cond: &str) -> Result<Condition, String> {
    let lower = cond.to_lowercase();
    if lower == "delete" {
        return Ok(Condition::Delete);
    }
    if lower == "create" {
        return Ok(Condition::Create);
    }
    if let Some(rest) = cond.strip_prefix("condition=") {
        let (name, value) = match rest.split_once('=') {
            Some((n, v)) => (n.to_string(), v.to_string()),
            None => (rest.to_string(), "true".to_string()),
        };
        return Ok(Condition::Condition { name, value });
    }
    if let Some(rest) = cond.strip_prefix("jsonpath=") {
        let parts = split_jsonpath_input(rest);
        if parts.is_empty() || parts.len() > 2 {
            return Err("jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'=3 or --for=jsonpath='{.status.readyReplicas}'".into());
        }
        let expr = relaxed_jsonpath(&parts[0])?;
        if parts.len() == 1 {
            if expr.is_empty() {
                return Err("jsonpath expression cannot be empty".into());
            }
            return Ok(Condition::JsonPath { expr, value: None });
        }
        let value = parts[1].trim_matches(|c| c == '\'' || c == '"').to_string();
        if value.is_empty() {
            return Err("jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3".into());
        }
        if expr.is_empty() {
            return Err("jsonpath expression cannot be empty".into());
        }
        return Ok(Condition::JsonPath {
            expr,
            value: Some(value),
        });
    }
    Err(format!(
        "unrecognized condition: {}",
        api::gofmt::go_quote(cond)
    ))
}

/// Splits `expr=value` on single `=` (a `==` stays in the expression).
fn split_jsonpath_input(input: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '=' {
            if chars.peek() == Some(&'=') {
                chars.next();
                cur.push_str("==");
                continue;
            }
            out.push(std::mem::take(&mut cur));
            continue;
        }
        cur.push(c);
    }
    out.push(cur);
    out
}

/// kubectl get's `RelaxedJSONPathExpression`: `{.a.b}`, `{a.b}`, `.a.b` and `a.b` all mean
/// `{.a.b}`.
pub fn relaxed_jsonpath(p: &str) -> Result<String, String> {
    if p.is_empty() {
        return Ok(String::new());
    }
    let bad = || {
        "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'".to_string()
    };
    let inner = if let Some(b) = p.strip_prefix('{') {
        let b = b.strip_suffix('}').ok_or_else(bad)?;
        b.strip_prefix('.').unwrap_or(b)
    } else {
        p.strip_prefix('.').unwrap_or(p)
    };
    if inner.is_empty() || inner.contains('{') || inner.contains('}') {
        return Err(bad());
    }
    Ok(format!("{{.{inner}}}"))
}

/// Whether an object meets a `condition=` wait (kubectl's `checkCondition`, with the
/// observed-generation guard).
pub fn condition_met(obj: &Value, name: &str, value: &str) -> bool {
    let Some(conds) = obj["status"]["conditions"].as_array() else {
        return false;
    };
    for c in conds {
        let Some(t) = c["type"].as_str() else {
            continue;
        };
        if !t.eq_ignore_ascii_case(name) && t.to_lowercase() != name.to_lowercase() {
            continue;
        }
        let Some(status) = c["status"].as_str() else {
            continue;
        };
        if let Some(generation) = obj["metadata"]["generation"].as_i64() {
            let observed = c["observedGeneration"]
                .as_i64()
                .or_else(|| obj["status"]["observedGeneration"].as_i64());
            if observed.is_some_and(|o| o < generation) {
                return false;
            }
        }
        return status.to_lowercase() == value.to_lowercase();
    }
    false
}

/// Whether an object meets a `jsonpath=` wait; errors as kubectl's `checkCondition`.
pub fn jsonpath_met(obj: &Value, expr: &str, value: Option<&str>) -> Result<bool, String> {
    let text = printers::jsonpath::execute(expr, obj, true, true)?;
    let mut results: Vec<Vec<Value>> = Vec::new();
    for v in serde_json::Deserializer::from_str(&text).into_iter::<Value>() {
        match v {
            Ok(Value::Array(a)) => results.push(a),
            Ok(other) => results.push(vec![other]),
            Err(e) => return Err(e.to_string()),
        }
    }
    if results.is_empty() || results[0].is_empty() {
        return Ok(false);
    }
    if results.len() > 1 {
        return Err("given jsonpath expression matches more than one list".into());
    }
    if results[0].len() > 1 {
        return Err("given jsonpath expression matches more than one value".into());
    }
    let Some(expected) = value else {
        return Ok(true);
    };
    let got = match &results[0][0] {
        Value::Object(_) | Value::Array(_) => {
            return Err("jsonpath leads to a nested object or list which is not supported".into());
        }
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        other => other.to_string(),
    };
    Ok(got.trim() == expected.trim())
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if let Some(o) = a.output.as_deref().filter(|o| *o != "name") {
        return Err(CliError::msg(format!(
            "unable to match a printer suitable for the output format \"{o}\", allowed formats are: name"
        )));
    }
    let cond = parse_condition(&a.for_condition).map_err(CliError::Msg)?;
    let timeout = watchutil::parse_signed_duration("wait", "timeout", &a.timeout)?
        .unwrap_or(Duration::from_secs(168 * 3600));
    let deadline = Instant::now() + timeout;
    let sel = Selection {
        selector: a.selector.clone(),
        field_selector: a.field_selector.clone(),
        all_namespaces: a.all_namespaces,
        files: a.filename.clone(),
    };
    let timed_out = || CliError::msg("timed out waiting for the condition");

    if cond == Condition::Create {
        // Poll every 500 ms until the objects exist.
        loop {
            match watchutil::resolve(ctx, &a.resources, &sel, a.all, false).await {
                Ok(found) if !found.is_empty() => break,
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(e),
            }
            if Instant::now() + Duration::from_millis(500) > deadline {
                return Err(timed_out());
            }
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
    }

    let targets = match watchutil::resolve(ctx, &a.resources, &sel, a.all, false).await {
        Ok(t) => t,
        Err(e) if cond == Condition::Delete && e.is_not_found() => {
            // kubectl ignores objects already gone, and names no one.
            return delete_remaining(ctx, &a, &sel, deadline, timeout).await;
        }
        Err(e) => return Err(e),
    };
    if targets.is_empty() && cond != Condition::Delete {
        return Err(CliError::msg("no matching resources found"));
    }
    for t in &targets {
        wait_one(ctx, t, &cond, deadline, timeout).await?;
        let _ = writeln!(ctx.out(), "{} condition met", t.kind_name());
    }
    Ok(())
}

/// `--for=delete` with several names of which some are gone: waits for the others.
async fn delete_remaining(
    ctx: &Ctx,
    a: &Args,
    sel: &Selection,
    deadline: Instant,
    timeout: Duration,
) -> Result<()> {
    use crate::cmd::watchutil::ArgSpec;
    let ArgSpec::Named(pairs) = watchutil::parse_args(&a.resources)? else {
        return Ok(());
    };
    let _ = sel;
    let mapper = ctx.mapper().await?;
    let namespace = ctx.namespace().await?;
    let client = ctx.client().await?;
    for (t, name) in pairs {
        let mapping = mapper.resolve(&t)?;
        let ns = mapping.namespaced.then(|| namespace.clone());
        match client
            .get_json(&mapping.object_path(ns.as_deref(), &name))
            .await
        {
            Ok(object) => {
                let target = Target {
                    mapping,
                    namespace: ns,
                    name,
                    object,
                };
                wait_one(ctx, &target, &Condition::Delete, deadline, timeout).await?;
                let _ = writeln!(ctx.out(), "{} condition met", target.kind_name());
            }
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

async fn wait_one(
    ctx: &Ctx,
    t: &Target,
    cond: &Condition,
    deadline: Instant,
    timeout: Duration,
) -> Result<()> {
    let timed_out = || {
        CliError::msg(format!(
            "timed out waiting for the condition on {}",
            t.object_name()
        ))
    };
    let check = |obj: &Value| -> Result<bool> {
        match cond {
            Condition::Condition { name, value } => Ok(condition_met(obj, name, value)),
            Condition::JsonPath { expr, value } => {
                jsonpath_met(obj, expr, value.as_deref()).map_err(CliError::Msg)
            }
            Condition::Create => Ok(true),
            Condition::Delete => Ok(false),
        }
    };
    if *cond == Condition::Create {
        return Ok(());
    }
    if timeout.is_zero() {
        let client = ctx.client().await?;
        let obj = match client.get_json(&t.path()).await {
            Ok(o) => Some(o),
            Err(e) if *cond == Condition::Delete && e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let met = match &obj {
            None => true,
            Some(o) => check(o)?,
        };
        if !met {
            return Err(CliError::msg(format!(
                "condition not met for {}",
                t.object_name()
            )));
        }
        return Ok(());
    }
    let remaining = deadline.saturating_duration_since(Instant::now());
    if remaining.is_zero() {
        return Err(timed_out());
    }
    let uid = t.object["metadata"]["uid"].as_str().map(str::to_string);
    let is_delete = *cond == Condition::Delete;
    let resource = t.mapping.group_resource();
    let name = t.name.clone();
    let fut = watchutil::until_with_sync(
        ctx,
        t,
        |listed| match (listed, is_delete) {
            (None, true) => Ok(Step::Done(())),
            (None, false) => Err(CliError::Api(Box::new(crate::error::ApiStatus {
                code: 404,
                reason: "NotFound".into(),
                message: format!("{resource} {} not found", api::gofmt::go_quote(&name)),
                status: Value::Null,
            }))),
            (Some(o), true) if uid.is_some() && o["metadata"]["uid"].as_str() != uid.as_deref() => {
                Ok(Step::Done(()))
            }
            _ => Ok(Step::Continue),
        },
        |ev| match ev {
            Event::Deleted(_) if is_delete => Ok(Step::Done(())),
            Event::Added(o) | Event::Modified(o) if !is_delete => {
                if check(&o)? {
                    Ok(Step::Done(()))
                } else {
                    Ok(Step::Continue)
                }
            }
            Event::Error(status) => {
                let msg = status["message"].as_str().unwrap_or_default();
                let what = if is_delete {
                    "the object to be deleted"
                } else {
                    "the condition to be satisfied"
                };
                let _ = write!(
                    ctx.err(),
                    "error: An error occurred while waiting for {what}: {msg}"
                );
                Ok(Step::Continue)
            }
            _ => Ok(Step::Continue),
        },
    );
    match tokio::time::timeout(remaining, fut).await {
        Ok(r) => r,
        Err(_) => Err(timed_out()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_parse() {
        assert_eq!(parse_condition("delete").unwrap(), Condition::Delete);
        assert_eq!(parse_condition("Create").unwrap(), Condition::Create);
        assert_eq!(
            parse_condition("condition=Ready").unwrap(),
            Condition::Condition {
                name: "Ready".into(),
                value: "true".into()
            }
        );
        assert_eq!(
            parse_condition("condition=Ready=false").unwrap(),
            Condition::Condition {
                name: "Ready".into(),
                value: "false".into()
            }
        );
        assert_eq!(
            parse_condition("jsonpath={.status.phase}=Running").unwrap(),
            Condition::JsonPath {
                expr: "{.status.phase}".into(),
                value: Some("Running".into())
            }
        );
        assert_eq!(
            parse_condition("jsonpath='{.status.phase}'").unwrap_err(),
            "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'"
        );
        assert_eq!(
            parse_condition("jsonpath=.status.phase").unwrap(),
            Condition::JsonPath {
                expr: "{.status.phase}".into(),
                value: None
            }
        );
        assert_eq!(
            parse_condition("jsonpath={.status.phase}=").unwrap_err(),
            "jsonpath wait has to have a value after equal sign, like --for=jsonpath='{.status.readyReplicas}'=3"
        );
        assert_eq!(
            parse_condition("bogus").unwrap_err(),
            "unrecognized condition: \"bogus\""
        );
        assert_eq!(
            parse_condition("").unwrap_err(),
            "unrecognized condition: \"\""
        );
        assert_eq!(
            split_jsonpath_input("{.a[?(@.b==\"c\")].d}=x"),
            vec!["{.a[?(@.b==\"c\")].d}".to_string(), "x".to_string()]
        );
    }

    #[test]
    fn conditions_met() {
        let pod = json!({"metadata":{"generation":2},"status":{"phase":"Running",
            "conditions":[{"type":"Ready","status":"True"}]}});
        assert!(condition_met(&pod, "ready", "true"));
        assert!(!condition_met(&pod, "Ready", "false"));
        assert!(!condition_met(&pod, "Foo", "true"));
        let stale = json!({"metadata":{"generation":2},"status":{"observedGeneration":1,
            "conditions":[{"type":"Available","status":"True"}]}});
        assert!(!condition_met(&stale, "Available", "true"));
    }

    #[test]
    fn jsonpaths() {
        let pod = json!({"status":{"phase":"Running","n":3,
            "conditions":[{"type":"Ready","status":"True"},{"type":"X","status":"False"}]}});
        assert!(jsonpath_met(&pod, "{.status.phase}", Some("Running")).unwrap());
        assert!(!jsonpath_met(&pod, "{.status.phase}", Some("Pending")).unwrap());
        assert!(jsonpath_met(&pod, "{.status.n}", Some("3")).unwrap());
        assert!(jsonpath_met(&pod, "{.status.phase}", None).unwrap());
        assert!(!jsonpath_met(&pod, "{.status.missing}", None).unwrap());
        assert!(
            jsonpath_met(
                &pod,
                "{.status.conditions[?(@.type==\"Ready\")].status}",
                Some("True")
            )
            .unwrap()
        );
        assert_eq!(
            jsonpath_met(&pod, "{.status.conditions}", Some("x")).unwrap_err(),
            "jsonpath leads to a nested object or list which is not supported"
        );
        assert_eq!(
            jsonpath_met(&pod, "{.status.conditions[*].type}", Some("x")).unwrap_err(),
            "given jsonpath expression matches more than one value"
        );
    }
}
