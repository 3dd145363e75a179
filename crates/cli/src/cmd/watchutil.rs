//! What `rollout`, `wait`, `drain`, `cordon` and `taint` share: resource arguments turned
//! into objects on the server (kubectl's `ResourceTypeOrNameArgs`), the list-then-watch of
//! one object (client-go's `watchtools.UntilWithSync` with a `metadata.name` field
//! selector), Go durations, and kubectl's way of printing aggregated errors.

use std::time::Duration;

use futures::StreamExt;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;
use crate::resource;
use crate::transport::Request;

/// One object a command acts on.
#[derive(Debug, Clone)]
pub struct Target {
    pub mapping: Mapping,
    /// The request namespace (`None` for cluster-scoped resources).
    pub namespace: Option<String>,
    pub name: String,
    /// The object as first read.
    pub object: Value,
}

impl Target {
    /// `deployment.apps/nginx`, as kubectl's name printer writes it.
    pub fn kind_name(&self) -> String {
        format!("{}/{}", self.mapping.kind_group(), self.name)
    }

    /// `pods/x` (plural without the group), as `info.ObjectName()` reads.
    pub fn object_name(&self) -> String {
        format!("{}/{}", self.mapping.resource, self.name)
    }

    pub fn path(&self) -> String {
        self.mapping
            .object_path(self.namespace.as_deref(), &self.name)
    }
}

/// What the arguments name before anything is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgSpec {
    /// `TYPE NAME…` or `TYPE/NAME…`: (type, name) pairs.
    Named(Vec<(String, String)>),
    /// `TYPE` alone: every object of the type (with `-l`/`--all`).
    Type(String),
    /// No arguments.
    Empty,
}

/// Splits resource arguments as kubectl's builder does ([`resource::split_args`]).
pub fn parse_args(args: &[String]) -> Result<ArgSpec> {
    let raws = resource::split_args(args)?;
    if raws.is_empty() {
        return Ok(ArgSpec::Empty);
    }
    if raws.iter().all(|r| r.name.is_some()) {
        return Ok(ArgSpec::Named(
            raws.into_iter()
                .map(|r| (r.resource, r.name.unwrap_or_default()))
                .collect(),
        ));
    }
    // One type alone; `deploy,sts` is kept whole (these commands take one type: the mapper
    // rejects it).
    Ok(ArgSpec::Type(args[0].clone()))
}

/// How a command selects objects besides names.
#[derive(Debug, Clone, Default)]
pub struct Selection {
    pub selector: Option<String>,
    pub field_selector: Option<String>,
    pub all_namespaces: bool,
    /// `-f` files naming the objects (read by `cmd::targets`).
    pub files: Vec<String>,
}

/// The objects `-f` files name, read from the server.
async fn from_files(ctx: &Ctx, args: &[String], files: &[String]) -> Result<Vec<Target>> {
    use crate::cmd::targets;
    let flags = targets::FileFlags {
        filenames: files.to_vec(),
        recursive: false,
    };
    let found = targets::find(
        ctx,
        &targets::Selection {
            args,
            files: Some(&flags),
            fetch: true,
            require_names: true,
            ..targets::Selection::default()
        },
    )
    .await?;
    if let Some(e) = found.errors.into_iter().next() {
        return Err(e);
    }
    Ok(found
        .targets
        .into_iter()
        .map(|t| Target {
            mapping: t.mapping,
            namespace: t.namespace,
            name: t.name,
            object: t.object.unwrap_or(Value::Null),
        })
        .collect())
}

fn query(params: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (k, v) in params {
        out.push(if out.is_empty() { '?' } else { '&' });
        out.push_str(k);
        out.push('=');
        out.push_str(&encode(v));
    }
    out
}

pub use crate::resource::encode;

/// Lists objects of a mapping (`namespace` `None`: all namespaces).
pub async fn list(
    ctx: &Ctx,
    mapping: &Mapping,
    namespace: Option<&str>,
    selector: Option<&str>,
    field_selector: Option<&str>,
) -> Result<(Vec<Value>, String)> {
    let query = resource::ListOptions {
        label_selector: selector.map(str::to_string),
        field_selector: field_selector.map(str::to_string),
        ..Default::default()
    }
    .query(None);
    let path = format!("{}{query}", mapping.collection_path(namespace));
    let list = ctx.client().await?.get_json(&path).await?;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let items = list["items"].as_array().cloned().unwrap_or_default();
    Ok((items, rv))
}

/// Reads the objects the arguments name. `Type` without a selection is every object of the
/// type in the namespace when `type_alone_ok`, else kubectl's "no name" error.
pub async fn resolve(
    ctx: &Ctx,
    args: &[String],
    sel: &Selection,
    all: bool,
    type_alone_ok: bool,
) -> Result<Vec<Target>> {
    let spec = parse_args(args)?;
    if !sel.files.is_empty() {
        return from_files(ctx, args, &sel.files).await;
    }
    let namespace = ctx.namespace().await?;
    match spec {
        ArgSpec::Empty => Err(CliError::msg(crate::cmd::targets::NO_RESOURCES)),
        ArgSpec::Named(pairs) => {
            if sel.selector.is_some() {
                return Err(CliError::msg(
                    "name cannot be provided when a selector is specified",
                ));
            }
            let mapper = ctx.mapper().await?;
            let mut mapped = Vec::new();
            for (t, n) in pairs {
                mapped.push((mapper.resolve(&t)?, n));
            }
            let client = ctx.client().await?;
            let mut out = Vec::new();
            for (mapping, name) in mapped {
                let ns = mapping.namespaced.then(|| namespace.clone());
                let object = client
                    .get_json(&mapping.object_path(ns.as_deref(), &name))
                    .await?;
                out.push(Target {
                    mapping,
                    namespace: ns,
                    name,
                    object,
                });
            }
            Ok(out)
        }
        ArgSpec::Type(t) => {
            if !type_alone_ok && sel.selector.is_none() && sel.field_selector.is_none() && !all {
                return Err(CliError::msg(
                    "resource(s) were provided, but no name was specified",
                ));
            }
            let mapping = ctx.mapper().await?.resolve(&t)?;
            let ns = (mapping.namespaced && !sel.all_namespaces).then(|| namespace.clone());
            let (items, _) = list(
                ctx,
                &mapping,
                ns.as_deref(),
                sel.selector.as_deref(),
                sel.field_selector.as_deref(),
            )
            .await?;
            Ok(items
                .into_iter()
                .map(|object| {
                    let name = object["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string();
                    let item_ns = object["metadata"]["namespace"]
                        .as_str()
                        .map(str::to_string)
                        .filter(|_| mapping.namespaced);
                    Target {
                        mapping: mapping.clone(),
                        namespace: item_ns.or_else(|| ns.clone()),
                        name,
                        object,
                    }
                })
                .collect())
        }
    }
}

/// One watch event.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    Added(Value),
    Modified(Value),
    Deleted(Value),
    /// A `Status` sent as an `ERROR` event.
    Error(Value),
}

/// Splits a watch stream's bytes into events (one JSON object per line).
#[derive(Default)]
pub struct EventDecoder {
    buf: Vec<u8>,
}

impl EventDecoder {
    pub fn push(&mut self, chunk: &[u8]) -> Vec<Event> {
        self.buf.extend_from_slice(chunk);
        let mut out = Vec::new();
        while let Some(pos) = self.buf.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buf.drain(..=pos).collect();
            if let Some(e) = decode_event(&line) {
                out.push(e);
            }
        }
        out
    }
}

fn decode_event(line: &[u8]) -> Option<Event> {
    let v: Value = serde_json::from_slice(line).ok()?;
    let object = v.get("object").cloned().unwrap_or(Value::Null);
    match v.get("type")?.as_str()? {
        "ADDED" => Some(Event::Added(object)),
        "MODIFIED" => Some(Event::Modified(object)),
        "DELETED" => Some(Event::Deleted(object)),
        "ERROR" => Some(Event::Error(object)),
        _ => None,
    }
}

/// What a watch callback decides.
pub enum Step<T> {
    Continue,
    Done(T),
}

/// client-go's `UntilWithSync` for one object: lists it by name (`on_list` sees whether it
/// exists; it may end the wait), then watches it from the list's resourceVersion, feeding
/// every event to `on_event` until it returns `Done`. Watches that end are re-established
/// (re-listing after a `410 Gone`). Never returns without the callback's verdict or an
/// error; the caller bounds it with a timeout.
pub async fn until_with_sync<T>(
    ctx: &Ctx,
    target: &Target,
    mut on_list: impl FnMut(Option<&Value>) -> Result<Step<T>>,
    mut on_event: impl FnMut(Event) -> Result<Step<T>>,
) -> Result<T> {
    let client = ctx.client().await?;
    let field = format!("metadata.name={}", target.name);
    let ns = target.namespace.as_deref();
    let mut relist = true;
    let mut rv = String::new();
    loop {
        if relist {
            let (items, list_rv) = list(ctx, &target.mapping, ns, None, Some(&field)).await?;
            rv = list_rv;
            relist = false;
            let obj = items.first();
            if let Step::Done(t) = on_list(obj)? {
                return Ok(t);
            }
            // The listed object reaches the callback as an ADDED event, as the informer's
            // store replays it.
            if let Some(obj) = obj
                && let Step::Done(t) = on_event(Event::Added(obj.clone()))?
            {
                return Ok(t);
            }
        }
        let path = format!(
            "{}{}",
            target.mapping.collection_path(ns),
            query(&[
                ("fieldSelector", &field),
                ("watch", "true"),
                ("resourceVersion", &rv),
                ("allowWatchBookmarks", "true"),
            ])
        );
        let mut stream = match client.stream(Request::get(path)).await {
            Ok(s) => Box::pin(s),
            Err(e) if e.status_code() == Some(410) => {
                relist = true;
                continue;
            }
            Err(e) => return Err(e),
        };
        let mut dec = EventDecoder::default();
        while let Some(chunk) = stream.next().await {
            let Ok(chunk) = chunk else { break };
            for ev in dec.push(&chunk) {
                if let Event::Error(status) = &ev
                    && status["code"].as_u64() == Some(410)
                {
                    relist = true;
                    break;
                }
                if let Some(v) = match &ev {
                    Event::Added(o) | Event::Modified(o) | Event::Deleted(o) => {
                        o["metadata"]["resourceVersion"].as_str()
                    }
                    Event::Error(_) => None,
                } {
                    rv = v.to_string();
                }
                if let Step::Done(t) = on_event(ev)? {
                    return Ok(t);
                }
            }
            if relist {
                break;
            }
        }
        if !relist {
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

/// Parses a Go duration (`30s`, `1m30s`, `500ms`, `2h`, `0`); a negative one is
/// `Err("negative")` (durations here are timeouts; callers report it as such).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    match crate::duration::parse_go_duration(s)? {
        (false, d) => Ok(d),
        (true, _) => Err("negative".into()),
    }
}

/// A signed Go duration flag value: `None` for a negative duration.
/// A bad value is pflag's error followed by cobra's usage hint for `command`.
pub fn parse_signed_duration(command: &str, flag: &str, s: &str) -> Result<Option<Duration>> {
    match parse_duration(s) {
        Ok(d) => Ok(Some(d)),
        Err(e) if e == "negative" => Ok(None),
        Err(e) => Err(CliError::msg(format!(
            "invalid argument {} for \"--{flag}\" flag: {e}\nSee 'kubectl {command} --help' for usage.",
            api::gofmt::go_quote(s)
        ))),
    }
}

pub use crate::duration::format_duration;

/// Prints errors the way kubectl prints an aggregate of several (each message on its own
/// line, as is), or one error as kubectl prints a plain error (`error: ` prefixed unless it
/// already is), and ends the command with exit code 1.
pub fn fail_with(ctx: &Ctx, errors: &[String]) -> CliError {
    use std::io::Write;
    let mut err = ctx.err();
    if errors.len() == 1 {
        let m = &errors[0];
        if m.starts_with("error: ") {
            let _ = writeln!(err, "{m}");
        } else {
            let _ = writeln!(err, "error: {m}");
        }
    } else {
        for m in errors {
            let _ = writeln!(err, "{m}");
        }
    }
    CliError::Exit(1)
}

/// The plain message of an error (a server failure's `message`, else the text after
/// `error: `), as Go's `err.Error()` reads inside kubectl's composed messages.
pub fn plain_message(e: &CliError) -> String {
    match e {
        CliError::Api(s) => s.message.clone(),
        CliError::Msg(m) => m.clone(),
        other => other.to_string(),
    }
}

/// The `--dry-run` flag's strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRunMode {
    #[default]
    None,
    Client,
    Server,
}

impl DryRunMode {
    /// kubectl's `GetDryRunStrategy` (a bare `--dry-run` means `client`).
    pub fn parse(v: Option<&str>) -> Result<DryRunMode> {
        match v {
            None | Some("none") => Ok(DryRunMode::None),
            Some("client") | Some("unchanged") | Some("") | Some("true") => Ok(DryRunMode::Client),
            Some("server") => Ok(DryRunMode::Server),
            Some("false") => Ok(DryRunMode::None),
            Some(other) => Err(CliError::msg(format!(
                "Invalid dry-run value ({other}). Must be \"none\", \"server\", or \"client\"."
            ))),
        }
    }

    /// What kubectl appends to an operation (` (dry run)`, ` (server dry run)`).
    pub fn suffix(self) -> &'static str {
        match self {
            DryRunMode::None => "",
            DryRunMode::Client => " (dry run)",
            DryRunMode::Server => " (server dry run)",
        }
    }
}

pub use crate::pods::label_selector_string as selector_string;

/// Whether `obj` is controlled by the object with `uid` (an owner reference with
/// `controller: true`).
pub fn controlled_by(obj: &Value, uid: &str) -> bool {
    controller_of(obj).is_some_and(|r| r["uid"].as_str() == Some(uid))
}

/// The controller owner reference of an object.
pub fn controller_of(obj: &Value) -> Option<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()?
        .iter()
        .find(|r| r["controller"].as_bool() == Some(true))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn resource_args() {
        assert_eq!(parse_args(&[]).unwrap(), ArgSpec::Empty);
        assert_eq!(
            parse_args(&s(&["deploy"])).unwrap(),
            ArgSpec::Type("deploy".into())
        );
        assert_eq!(
            parse_args(&s(&["deploy", "a", "b"])).unwrap(),
            ArgSpec::Named(vec![
                ("deploy".into(), "a".into()),
                ("deploy".into(), "b".into())
            ])
        );
        assert_eq!(
            parse_args(&s(&["deploy/a", "sts/b"])).unwrap(),
            ArgSpec::Named(vec![
                ("deploy".into(), "a".into()),
                ("sts".into(), "b".into())
            ])
        );
        assert!(parse_args(&s(&["deploy", "deploy/a"])).is_err());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30s").unwrap(), Duration::from_secs(30));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert!(parse_duration("5").is_err());
        assert!(parse_duration("x").is_err());
        assert_eq!(
            parse_signed_duration("wait", "timeout", "-1s").unwrap(),
            None
        );
        assert_eq!(
            parse_signed_duration("wait", "timeout", "abc")
                .unwrap_err()
                .to_string(),
            "error: invalid argument \"abc\" for \"--timeout\" flag: time: invalid duration \"abc\"\nSee 'kubectl wait --help' for usage."
        );
        assert_eq!(format_duration(Duration::from_secs(12)), "12s");
        assert_eq!(format_duration(Duration::from_secs(60)), "1m0s");
        assert_eq!(format_duration(Duration::from_secs(3661)), "1h1m1s");
        assert_eq!(format_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(format_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(
            format_duration(Duration::from_nanos(i64::MAX as u64)),
            "2562047h47m16.854775807s"
        );
    }

    #[test]
    fn events_split_across_chunks() {
        let mut d = EventDecoder::default();
        assert!(d.push(br#"{"type":"ADDED","object":{"a":1}}"#).is_empty());
        let evs = d.push(b"\n{\"type\":\"DELETED\",\"object\":{}}\n");
        assert_eq!(
            evs,
            vec![Event::Added(json!({"a":1})), Event::Deleted(json!({}))]
        );
    }

    #[test]
    fn selectors() {
        let sel = json!({"matchLabels":{"b":"2","a":"1"},"matchExpressions":[
            {"key":"c","operator":"In","values":["x","y"]},{"key":"d","operator":"Exists"}]});
        assert_eq!(selector_string(&sel), "a=1,b=2,c in (x,y),d");
    }

    #[test]
    fn dry_run() {
        assert_eq!(DryRunMode::parse(None).unwrap(), DryRunMode::None);
        assert_eq!(
            DryRunMode::parse(Some("client")).unwrap(),
            DryRunMode::Client
        );
        assert_eq!(DryRunMode::Server.suffix(), " (server dry run)");
        assert!(DryRunMode::parse(Some("bogus")).is_err());
    }
}
