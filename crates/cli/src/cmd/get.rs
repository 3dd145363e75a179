//! `kubectl get`: human tables from the server's `Table` answers (`-o wide`, `-A`,
//! `--show-labels`, `-L`, `--no-headers`, `kind/name` prefixes when several kinds print),
//! or the objects as `-o yaml|json|name|jsonpath|go-template|custom-columns` print them (a
//! `List` for several), `--sort-by`, `--watch`/`--watch-only`, `--chunk-size`,
//! `--ignore-not-found`, `--raw`.

use std::io::Write;

use futures::StreamExt;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::table::{HumanOptions, TextTable, format_event_type, table_lines};
use crate::output::{self, Format, PrintFlags};
use crate::resource::{self, ListOptions, Target};
use crate::transport::Request;

/// What kubectl sends to get tables.
pub const TABLE_ACCEPT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";

#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// TYPE[.VERSION][.GROUP] [NAME | -l label] | TYPE[.VERSION][.GROUP]/NAME ...
    pub args: Vec<String>,
    #[command(flatten)]
    pub print: PrintFlags,
    /// When using the default or custom-column output format, don't print headers.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub no_headers: bool,
    /// When printing, show all labels as the last column.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub show_labels: bool,
    /// If present, list the resource type for the requested object(s).
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub show_kind: bool,
    /// Accepts a comma separated list of labels that are going to be presented as columns.
    #[arg(short = 'L', long = "label-columns", value_delimiter = ',')]
    pub label_columns: Vec<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long)]
    pub field_selector: Option<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub all_namespaces: bool,
    /// Return large lists in chunks rather than all at once. Pass 0 to disable.
    #[arg(long, default_value_t = 500)]
    pub chunk_size: i64,
    /// After listing/getting the requested object, watch for changes.
    #[arg(short = 'w', long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub watch: bool,
    /// Watch for changes to the requested object(s), without listing/getting first.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub watch_only: bool,
    /// Output watch event objects when --watch or --watch-only is used.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub output_watch_events: bool,
    /// If the requested object does not exist the command will return exit code 0.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub ignore_not_found: bool,
    /// If non-empty, sort list types using this field specification (a JSONPath
    /// expression).
    #[arg(long)]
    pub sort_by: Option<String>,
    /// Raw URI to request from the server.
    #[arg(long)]
    pub raw: Option<String>,
    /// If present, the name of the subresource to request.
    #[arg(long)]
    pub subresource: Option<String>,
}

/// A fetched target: its answer or its failure.
struct Fetched {
    target: Target,
    result: Result<Value>,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if let Some(raw) = &a.raw {
        if !a.args.is_empty() {
            return Err(CliError::msg(
                "arguments may not be passed when --raw is specified",
            ));
        }
        let resp = ctx
            .client()
            .await?
            .send(Request::get(raw.clone()))
            .await?
            .ok()?;
        ctx.out().write_all(&resp.body)?;
        return Ok(());
    }
    let format = a.print.format(true)?;
    if a.show_labels && !format.is_human() {
        return Err(CliError::msg(format!(
            "--show-labels option cannot be used with {} printer",
            a.print.output.clone().unwrap_or_default()
        )));
    }
    if a.output_watch_events && !(a.watch || a.watch_only) {
        return Err(CliError::msg(
            "--output-watch-events option can only be used with --watch or --watch-only",
        ));
    }
    let watching = a.watch || a.watch_only;
    if watching && a.sort_by.is_some() {
        let _ = writeln!(
            ctx.err(),
            "warning: --watch or --watch-only requested, --sort-by will be ignored"
        );
    }
    if a.args.is_empty() {
        if !watching {
            let _ = writeln!(
                ctx.err(),
                "You must specify the type of resource to get. Use \"kubectl api-resources\" for a complete list of supported resources.\n"
            );
            return Err(CliError::usage(
                "kubectl get",
                "Required resource not specified.\nUse \"kubectl explain <resource>\" for a detailed description of that resource (e.g. kubectl explain pods).",
            ));
        }
        return Err(CliError::msg(resource::no_type_message("get")));
    }
    // Split first: argument-shape errors come before any request.
    resource::split_args(&a.args)?;
    let namespace = ctx.namespace().await?;
    let targets = resource::targets(
        ctx,
        &a.args,
        if a.all_namespaces {
            None
        } else {
            Some(&namespace)
        },
    )
    .await?;
    if watching {
        return watch(ctx, &a, &format, targets).await;
    }
    let human = format.is_human();
    let sort = a.sort_by.clone().filter(|s| !s.is_empty());
    let mut opts = ListOptions {
        label_selector: a.selector.clone(),
        field_selector: a.field_selector.clone(),
        chunk_size: if sort.is_some() { 0 } else { a.chunk_size },
        accept: human.then(|| TABLE_ACCEPT.to_string()),
        extra_query: Vec::new(),
    };
    if human && sort.is_some() {
        opts.extra_query
            .push(("includeObject".into(), "Object".into()));
    }
    let mut fetched = Vec::new();
    for t in targets {
        let result = fetch(ctx, &a, &t, &opts).await;
        fetched.push(Fetched { target: t, result });
    }
    let mut errors: Vec<CliError> = Vec::new();
    let mut ok: Vec<(Target, Value)> = Vec::new();
    for f in fetched {
        match f.result {
            Ok(v) => ok.push((f.target, v)),
            Err(e) if a.ignore_not_found && e.is_not_found() => {}
            Err(e) => errors.push(e),
        }
    }
    if human {
        print_human(ctx, &a, &format, &namespace, ok, &errors, sort.as_deref())?;
    } else {
        print_generic(ctx, &a, &format, ok, sort.as_deref(), !errors.is_empty())?;
    }
    finish(ctx, errors)
}

/// Prints all errors but the last, and returns the last (main prints it), as kubectl's
/// aggregate error prints one per line.
fn finish(ctx: &Ctx, mut errors: Vec<CliError>) -> Result<()> {
    let Some(last) = errors.pop() else {
        return Ok(());
    };
    for e in errors {
        let _ = writeln!(ctx.err(), "{e}");
    }
    Err(last)
}

async fn fetch(ctx: &Ctx, a: &Args, t: &Target, opts: &ListOptions) -> Result<Value> {
    match &t.name {
        Some(_) => {
            let mut target = t.clone();
            if let Some(sub) = &a.subresource {
                target.name = Some(format!("{}/{sub}", t.name.clone().unwrap_or_default()));
            }
            resource::get_object(ctx, &target, opts.accept.as_deref(), &opts.extra_query).await
        }
        None => resource::list(ctx, t, opts).await,
    }
}

/// The objects of a list answer, with `apiVersion`/`kind` filled in from the list.
fn list_items(list: &Value) -> Vec<Value> {
    let kind = list
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|k| k.strip_suffix("List"))
        .unwrap_or_default()
        .to_string();
    let api_version = list.get("apiVersion").cloned().unwrap_or(Value::Null);
    list.get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|item| {
            let mut item = item.clone();
            if let Some(m) = item.as_object_mut() {
                if !m.contains_key("kind") && !kind.is_empty() {
                    m.insert("kind".into(), Value::String(kind.clone()));
                }
                if !m.contains_key("apiVersion") && !api_version.is_null() {
                    m.insert("apiVersion".into(), api_version.clone());
                }
            }
            item
        })
        .collect()
}

/// kubectl's `printGeneric`: one object when one was named, else a `List`.
fn print_generic(
    ctx: &Ctx,
    a: &Args,
    format: &Format,
    ok: Vec<(Target, Value)>,
    sort: Option<&str>,
    had_errors: bool,
) -> Result<()> {
    // kubectl's "single item implied": exactly one object named, of one type.
    let single_named = ok.len() == 1
        && ok[0].0.name.is_some()
        && resource::split_args(&a.args).is_ok_and(|v| v.len() == 1 && v[0].resource != "all");
    if ok.is_empty() && (a.ignore_not_found || had_errors) {
        return Ok(());
    }
    let obj = if single_named {
        ok.into_iter().next().map(|(_, v)| v).unwrap_or(Value::Null)
    } else {
        let mut items = Vec::new();
        for (t, v) in ok {
            if t.name.is_some() && !output::is_list(&v) {
                items.push(v);
            } else {
                items.extend(list_items(&v));
            }
        }
        if let Some(field) = sort {
            sort_objects(&mut items, field)?;
        }
        output::list_of(items)
    };
    let text = match format {
        Format::CustomColumns(spec) => output::custom_columns(spec, &obj, a.no_headers)?,
        _ => output::render(&a.print, format, &obj)?,
    };
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}

/// A sort key as kubectl's sorter compares values: numbers numerically, strings (and
/// anything else) by text.
#[derive(PartialEq, PartialOrd)]
enum SortKey {
    Missing,
    Number(f64),
    Text(String),
}

fn sort_key(obj: &Value, template: &str) -> SortKey {
    let out = printers::jsonpath::execute(template, obj, true, true).unwrap_or_default();
    let arr: Vec<Value> = serde_json::from_str::<Value>(&out)
        .ok()
        .and_then(|v| v.as_array().cloned())
        .unwrap_or_default();
    match arr.first() {
        None => SortKey::Missing,
        Some(Value::Number(n)) => SortKey::Number(n.as_f64().unwrap_or_default()),
        Some(Value::String(s)) => match api_quantity(s) {
            Some(q) => SortKey::Number(q),
            None => SortKey::Text(s.clone()),
        },
        Some(other) => SortKey::Text(other.to_string()),
    }
}

/// Quantities (`100m`, `2Gi`) sort by value, as kubectl's sorter does for them.
fn api_quantity(s: &str) -> Option<f64> {
    let digits_end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(s.len());
    if digits_end == 0 {
        return None;
    }
    let n: f64 = s[..digits_end].parse().ok()?;
    let mult = match &s[digits_end..] {
        "" => return None,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024.0f64.powi(4),
        _ => return None,
    };
    Some(n * mult)
}

fn sort_objects(items: &mut [Value], field: &str) -> Result<()> {
    let template = output::jsonpath::relaxed(field)?;
    let mut keyed: Vec<(SortKey, Value)> = items
        .iter()
        .map(|v| (sort_key(v, &template), v.clone()))
        .collect();
    keyed.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
    for (slot, (_, v)) in items.iter_mut().zip(keyed) {
        *slot = v;
    }
    Ok(())
}

fn sort_rows(table: &mut Value, field: &str) -> Result<()> {
    let template = output::jsonpath::relaxed(field)?;
    if let Some(rows) = table.get_mut("rows").and_then(Value::as_array_mut) {
        let mut keyed: Vec<(SortKey, Value)> = rows
            .iter()
            .map(|r| {
                (
                    sort_key(r.get("object").unwrap_or(&Value::Null), &template),
                    r.clone(),
                )
            })
            .collect();
        keyed.sort_by(|x, y| x.0.partial_cmp(&y.0).unwrap_or(std::cmp::Ordering::Equal));
        *rows = keyed.into_iter().map(|(_, r)| r).collect();
    }
    Ok(())
}

/// A non-Table answer as a table of NAME and AGE (kubectl's default handler).
fn fallback_table(v: &Value) -> Value {
    let objects: Vec<Value> = if output::is_list(v) {
        list_items(v)
    } else {
        vec![v.clone()]
    };
    let now = jiff::Timestamp::now();
    let rows: Vec<Value> = objects
        .iter()
        .map(|o| {
            let age = o
                .pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| {
                    let d = now.as_nanosecond() - t.as_nanosecond();
                    printers::human_duration(i64::try_from(d).unwrap_or(i64::MAX))
                })
                .unwrap_or_else(|| "<unknown>".into());
            serde_json::json!({
                "cells": [o.pointer("/metadata/name").cloned().unwrap_or(Value::Null), age],
                "object": {"metadata": o.get("metadata").cloned().unwrap_or(Value::Null)},
            })
        })
        .collect();
    serde_json::json!({
        "kind": "Table",
        "columnDefinitions": [
            {"name": "Name", "type": "string", "format": "name", "priority": 0},
            {"name": "Age", "type": "string", "format": "", "priority": 0},
        ],
        "rows": rows,
    })
}

fn as_table(v: Value) -> Value {
    if v.get("kind").and_then(Value::as_str) == Some("Table") {
        v
    } else {
        fallback_table(&v)
    }
}

fn human_options(a: &Args, format: &Format, t: &Target, with_kind: bool) -> HumanOptions {
    HumanOptions {
        wide: *format == Format::Wide,
        no_headers: a.no_headers,
        with_namespace: a.all_namespaces && t.mapping.namespaced,
        kind_prefix: (with_kind || a.show_kind).then(|| t.mapping.kind_group()),
        show_labels: a.show_labels,
        label_columns: a.label_columns.clone(),
    }
}

fn print_human(
    ctx: &Ctx,
    a: &Args,
    format: &Format,
    namespace: &str,
    ok: Vec<(Target, Value)>,
    errors: &[CliError],
    sort: Option<&str>,
) -> Result<()> {
    let with_kind =
        resource::multiple_types(&ok.iter().map(|(t, _)| t.clone()).collect::<Vec<_>>());
    let all_namespaced = !a.all_namespaces && ok.iter().all(|(t, _)| t.mapping.namespaced);
    let mut written = 0usize;
    let mut last: Option<(String, Value)> = None;
    let mut table = TextTable::default();
    let mut pending_separator = false;
    let mut out = String::new();
    for (t, v) in ok {
        let mut v = as_table(v);
        if let Some(field) = sort {
            sort_rows(&mut v, field)?;
        }
        let resource_id = t.mapping.group_resource();
        let columns = v.get("columnDefinitions").cloned().unwrap_or(Value::Null);
        let new_mapping = last.as_ref().is_none_or(|(r, _)| *r != resource_id);
        if new_mapping {
            let text = table.flush();
            table.reset_widths();
            written += text.len();
            out.push_str(&text);
            if last.is_some() && !a.no_headers && written > 0 {
                pending_separator = true;
            }
        }
        let mut opts = human_options(a, format, &t, with_kind);
        if let Some((r, cols)) = &last
            && *r == resource_id
            && (*cols == columns || columns.is_null())
            && !new_mapping
        {
            opts.no_headers = true;
        }
        let (header, rows) = table_lines(&v, &opts);
        if pending_separator && (header.is_some() || !rows.is_empty()) {
            out.push('\n');
            pending_separator = false;
        }
        let had_rows = !rows.is_empty();
        if let Some(h) = header {
            table.push(h);
        }
        for r in rows {
            table.push(r);
        }
        if new_mapping || had_rows {
            last = Some((resource_id, columns));
        }
    }
    let text = table.flush();
    written += text.len();
    out.push_str(&text);
    ctx.out().write_all(out.as_bytes())?;
    if written == 0 && !a.ignore_not_found && errors.is_empty() {
        let msg = if all_namespaced {
            format!("No resources found in {namespace} namespace.")
        } else {
            "No resources found".to_string()
        };
        let _ = writeln!(ctx.err(), "{msg}");
    }
    Ok(())
}

/// `--watch` / `--watch-only`.
async fn watch(ctx: &Ctx, a: &Args, format: &Format, targets: Vec<Target>) -> Result<()> {
    if resource::multiple_types(&targets) {
        return Err(CliError::msg(
            "watch is only supported on individual resources and resource collections - more than 1 resource was found",
        ));
    }
    let Some(t) = targets.first().cloned() else {
        return Ok(());
    };
    let human = format.is_human();
    let accept = human.then(|| TABLE_ACCEPT.to_string());
    let mut field_selector = a.field_selector.clone();
    if let Some(n) = &t.name {
        let by_name = format!("metadata.name={n}");
        field_selector = Some(match field_selector {
            Some(f) if !f.is_empty() => format!("{f},{by_name}"),
            _ => by_name,
        });
    }
    let opts = ListOptions {
        label_selector: a.selector.clone(),
        field_selector: field_selector.clone(),
        chunk_size: a.chunk_size,
        accept: accept.clone(),
        extra_query: Vec::new(),
    };
    let mut state = WatchPrinter {
        table: TextTable::default(),
        columns: None,
        printed_header: false,
        objects_printed: 0,
    };
    let initial = if t.name.is_some() {
        fetch(ctx, a, &t, &opts).await?
    } else {
        resource::list(ctx, &t, &opts).await?
    };
    let rv = initial
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let rv = if t.name.is_some() {
        "0".to_string()
    } else {
        rv
    };
    let list_like = t.name.is_none();
    if !a.watch_only {
        state.print(
            ctx,
            a,
            format,
            &t,
            &initial,
            if a.output_watch_events {
                Some("ADDED")
            } else {
                None
            },
        )?;
    }
    // Watches of one object start with a synthetic ADDED event: skip it unless only
    // watching.
    let mut skip_first = !list_like && !a.watch_only;
    let mut q: Vec<String> = vec!["watch=true".into()];
    if let Some(l) = a.selector.as_deref().filter(|s| !s.is_empty()) {
        q.push(format!("labelSelector={}", resource::encode(l)));
    }
    if let Some(f) = field_selector.as_deref().filter(|s| !s.is_empty()) {
        q.push(format!("fieldSelector={}", resource::encode(f)));
    }
    if !rv.is_empty() {
        q.push(format!("resourceVersion={}", resource::encode(&rv)));
    }
    let path = format!(
        "{}?{}",
        Target {
            name: None,
            ..t.clone()
        }
        .path(),
        q.join("&")
    );
    let mut req = Request::get(path);
    if let Some(acc) = &accept {
        req = req.accept(acc.clone());
    }
    let mut stream = Box::pin(ctx.client().await?.stream(req).await?);
    let mut buf: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk?;
        buf.extend_from_slice(&chunk);
        while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = buf.drain(..=pos).collect();
            let text = String::from_utf8_lossy(&line);
            let text = text.trim();
            if text.is_empty() {
                continue;
            }
            let Ok(event) = serde_json::from_str::<Value>(text) else {
                continue;
            };
            let kind = event
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let object = event.get("object").cloned().unwrap_or(Value::Null);
            if kind == "ERROR" {
                return Err(crate::transport::status_error(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    object.to_string().as_bytes(),
                ));
            }
            if kind == "BOOKMARK" {
                continue;
            }
            if skip_first {
                skip_first = false;
                continue;
            }
            state.print(
                ctx,
                a,
                format,
                &t,
                &object,
                a.output_watch_events.then_some(kind),
            )?;
        }
    }
    Ok(())
}

struct WatchPrinter {
    table: TextTable,
    columns: Option<Value>,
    printed_header: bool,
    objects_printed: usize,
}

impl WatchPrinter {
    fn print(
        &mut self,
        ctx: &Ctx,
        a: &Args,
        format: &Format,
        t: &Target,
        obj: &Value,
        event: Option<&str>,
    ) -> Result<()> {
        if format.is_human() {
            let mut v = as_table(obj.clone());
            let cols = v
                .get("columnDefinitions")
                .cloned()
                .filter(|c| c.as_array().is_some_and(|a| !a.is_empty()));
            match cols {
                Some(c) => {
                    if self.columns.as_ref() != Some(&c) {
                        self.columns = Some(c);
                        self.printed_header = false;
                    }
                }
                None => {
                    if let (Some(m), Some(c)) = (v.as_object_mut(), &self.columns) {
                        m.insert("columnDefinitions".into(), c.clone());
                    }
                }
            }
            let mut opts = human_options(a, format, t, false);
            if self.printed_header {
                opts.no_headers = true;
            }
            let (header, rows) = table_lines(&v, &opts);
            if !rows.is_empty() {
                self.printed_header = true;
            }
            if let Some(mut h) = header {
                if event.is_some() {
                    h.insert(0, "EVENT".into());
                }
                self.table.push(h);
            }
            for mut r in rows {
                if let Some(e) = event {
                    r.insert(0, format_event_type(e).to_string());
                }
                self.table.push(r);
            }
            let text = self.table.flush();
            let mut out = ctx.out();
            out.write_all(text.as_bytes())?;
            out.flush()?;
            return Ok(());
        }
        let objects: Vec<Value> = if output::is_list(obj) {
            list_items(obj)
        } else {
            vec![obj.clone()]
        };
        for o in objects {
            let o = match event {
                Some(e) => serde_json::json!({"type": e, "object": o}),
                None => o,
            };
            let mut text = output::render(&a.print, format, &o)?;
            if *format == Format::Yaml && self.objects_printed > 0 {
                text = format!("---\n{text}");
            }
            self.objects_printed += 1;
            let mut out = ctx.out();
            out.write_all(text.as_bytes())?;
            out.flush()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn items_get_kinds() {
        let l = json!({"apiVersion": "apps/v1", "kind": "DeploymentList", "items": [{"metadata": {"name": "a"}}]});
        let items = list_items(&l);
        assert_eq!(items[0]["kind"], "Deployment");
        assert_eq!(items[0]["apiVersion"], "apps/v1");
    }

    #[test]
    fn sorting() {
        let mut items = vec![
            json!({"metadata": {"name": "b"}, "spec": {"r": 10}}),
            json!({"metadata": {"name": "a"}, "spec": {"r": 2}}),
            json!({"metadata": {"name": "c"}}),
        ];
        sort_objects(&mut items, ".spec.r").unwrap();
        let names: Vec<&str> = items
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["c", "a", "b"]);
        sort_objects(&mut items, "metadata.name").unwrap();
        let names: Vec<&str> = items
            .iter()
            .map(|i| i["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, vec!["a", "b", "c"]);
        assert_eq!(api_quantity("100m"), Some(0.1));
    }
}
