//! The objects a mutating verb (`delete`, `label`, `annotate`, `patch`, `scale`, `set`,
//! `edit`) acts on, as kubectl's resource builder finds them: `TYPE NAME…`,
//! `TYPE/NAME…`, `TYPE -l selector`, `TYPE --all`, `-A`, `--field-selector`, `-f FILE`,
//! continuing past per-object errors (kubectl's `ContinueOnError`).

use std::io::Write;
use std::path::Path;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;
use crate::resource;
use crate::transport::Request;

/// `-f`/`-R`, as kubectl's filename flags.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FileFlags {
    /// Filename, directory, or URL to files identifying the resource.
    #[arg(short = 'f', long = "filename")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively.
    #[arg(short = 'R', long)]
    pub recursive: bool,
}

/// `-l/--selector` and `--field-selector`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SelectorFlags {
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// Selector (field query) to filter on.
    #[arg(long = "field-selector")]
    pub field_selector: Option<String>,
}

impl SelectorFlags {
    /// The label selector, when non-empty.
    pub fn label(&self) -> Option<&str> {
        self.selector.as_deref().filter(|s| !s.is_empty())
    }

    /// The field selector, when non-empty.
    pub fn field(&self) -> Option<&str> {
        self.field_selector.as_deref().filter(|s| !s.is_empty())
    }
}

/// One object to act on.
#[derive(Debug, Clone)]
pub struct Target {
    pub mapping: Mapping,
    /// The namespace (`None` for cluster-scoped resources).
    pub namespace: Option<String>,
    pub name: String,
    /// The object: from the server (when fetched or listed) or from the file.
    pub object: Option<Value>,
    /// The file it came from (`-f`), for kubectl's `error when deleting "file": …`.
    pub source: Option<String>,
}

impl Target {
    pub fn path(&self) -> String {
        self.mapping
            .object_path(self.namespace.as_deref(), &self.name)
    }

    /// `pod/x`, `deployment.apps/x`.
    pub fn display(&self) -> String {
        format!("{}/{}", self.mapping.kind_group(), self.name)
    }
}

/// What the command line selects.
#[derive(Debug, Default, Clone)]
pub struct Selection<'a> {
    pub args: &'a [String],
    pub files: Option<&'a FileFlags>,
    pub selector: Option<&'a str>,
    pub field_selector: Option<&'a str>,
    pub all: bool,
    pub all_namespaces: bool,
    /// GET each named object (kubectl's `Latest()` / `RequireObject`).
    pub fetch: bool,
    /// Whether `TYPE` alone (no name, no selector) is an error (everything but `edit`).
    pub require_names: bool,
}

/// The objects found, and the errors met on the way.
#[derive(Debug, Default)]
pub struct Found {
    pub targets: Vec<Target>,
    pub errors: Vec<CliError>,
    /// Whether a single object was named (kubectl's `IntoSingleItemImplied`).
    pub single: bool,
}

/// kubectl's message for an empty selection.
pub const NO_RESOURCES: &str = "You must provide one or more resources by argument or filename.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'\n   '<resource> <name>'\n   '<resource>'";

/// What `args` names, before any request: `(type, name)` pairs or types alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgForm {
    /// `TYPE/NAME …` or `TYPE[,TYPE…] NAME…`.
    Pairs(Vec<(String, String)>),
    /// `TYPE[,TYPE…]` without names.
    Types(Vec<String>),
    None,
}

/// Splits resource arguments as kubectl's builder does (pure; [`resource::split_args`]).
pub fn parse_args(args: &[String]) -> Result<ArgForm> {
    let raws = resource::split_args(args)?;
    if raws.is_empty() {
        return Ok(ArgForm::None);
    }
    if raws.iter().all(|r| r.name.is_some()) {
        return Ok(ArgForm::Pairs(
            raws.into_iter()
                .map(|r| (r.resource, r.name.unwrap_or_default()))
                .collect(),
        ));
    }
    Ok(ArgForm::Types(
        raws.into_iter().map(|r| r.resource).collect(),
    ))
}

/// Resolves the selection into objects, as kubectl's builder does. Errors that stop the
/// whole command (bad arguments, unknown types) are returned as `Err`; per-object errors
/// (NotFound …) are collected in [`Found::errors`].
pub async fn find(ctx: &Ctx, sel: &Selection<'_>) -> Result<Found> {
    let form = parse_args(sel.args)?;
    let has_files = sel.files.is_some_and(|f| !f.filenames.is_empty());
    let selecting = sel.selector.is_some_and(|s| !s.is_empty())
        || sel.field_selector.is_some_and(|s| !s.is_empty());
    if sel.all && sel.selector.is_some_and(|s| !s.is_empty()) {
        return Err(CliError::msg(
            "setting 'all' parameter but found a non empty selector. ",
        ));
    }
    if has_files && form != ArgForm::None {
        return Err(CliError::msg(
            "when paths, URLs, or stdin is provided as input, you may not specify resource arguments as well",
        ));
    }
    if !has_files && form == ArgForm::None {
        return Err(CliError::msg(NO_RESOURCES));
    }
    let mut found = Found::default();
    if has_files {
        if let Some(files) = sel.files {
            found.targets = from_files(ctx, files).await?;
            found.single = false;
        }
    } else {
        match form {
            ArgForm::Pairs(pairs) => {
                found.single = pairs.len() == 1;
                let mapper = ctx.mapper().await?;
                let mut resolved = Vec::new();
                for (t, n) in &pairs {
                    resolved.push((mapper.resolve_fresh(ctx, t).await?, n.clone()));
                }
                for (m, n) in resolved {
                    let ns = namespace_for(ctx, &m).await?;
                    found.targets.push(Target {
                        mapping: m,
                        namespace: ns,
                        name: n,
                        object: None,
                        source: None,
                    });
                }
            }
            ArgForm::Types(types) => {
                let mapper = ctx.mapper().await?;
                let mut mappings = Vec::new();
                for t in &types {
                    mappings.push(mapper.resolve_fresh(ctx, t).await?);
                }
                if !(sel.all || selecting) && sel.require_names {
                    return Err(CliError::msg(
                        "resource(s) were provided, but no name was specified",
                    ));
                }
                for m in mappings {
                    list(ctx, sel, &m, &mut found).await;
                }
            }
            ArgForm::None => {}
        }
    }
    if sel.fetch {
        let client = ctx.client().await?;
        let mut kept = Vec::new();
        for mut t in std::mem::take(&mut found.targets) {
            if t.object.is_some() && !has_files {
                kept.push(t);
                continue;
            }
            match client.get_json(&t.path()).await {
                Ok(obj) => {
                    t.object = Some(obj);
                    kept.push(t);
                }
                Err(e) => found.errors.push(e),
            }
        }
        found.targets = kept;
    }
    Ok(found)
}

async fn namespace_for(ctx: &Ctx, m: &Mapping) -> Result<Option<String>> {
    Ok(if m.namespaced {
        Some(ctx.namespace().await?)
    } else {
        None
    })
}

pub use crate::resource::encode as query_escape;

async fn list(ctx: &Ctx, sel: &Selection<'_>, m: &Mapping, found: &mut Found) {
    let result = async {
        let ns = if sel.all_namespaces {
            None
        } else {
            namespace_for(ctx, m).await?
        };
        let query = resource::ListOptions {
            label_selector: sel.selector.map(str::to_string),
            field_selector: sel.field_selector.map(str::to_string),
            ..Default::default()
        }
        .query(None);
        let path = format!("{}{query}", m.collection_path(ns.as_deref()));
        let list = ctx.client().await?.get_json(&path).await?;
        let mut out = Vec::new();
        for mut item in list["items"].as_array().cloned().unwrap_or_default() {
            if let Some(o) = item.as_object_mut() {
                o.entry("apiVersion")
                    .or_insert_with(|| Value::String(m.api_version()));
                o.entry("kind")
                    .or_insert_with(|| Value::String(m.kind.clone()));
            }
            let name = item["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let namespace = item["metadata"]["namespace"].as_str().map(str::to_string);
            out.push(Target {
                mapping: m.clone(),
                namespace: if m.namespaced { namespace } else { None },
                name,
                object: Some(item),
                source: None,
            });
        }
        Ok::<_, CliError>(out)
    }
    .await;
    match result {
        Ok(t) => found.targets.extend(t),
        Err(e) => found.errors.push(e),
    }
}

/// The documents of `-f` (files, directories, `-` for stdin), `List`s flattened.
pub fn read_documents(ctx: &Ctx, files: &FileFlags) -> Result<Vec<(String, Value)>> {
    let mut docs = Vec::new();
    for f in &files.filenames {
        if f == "-" {
            let data = ctx.read_stdin()?;
            let mut parsed = Vec::new();
            parse_documents(&String::from_utf8_lossy(&data), "STDIN", &mut parsed)?;
            docs.extend(parsed.into_iter().map(|d| ("STDIN".to_string(), d)));
            continue;
        }
        let path = Path::new(f);
        if !path.exists() {
            return Err(CliError::msg(format!("the path \"{f}\" does not exist")));
        }
        let mut paths = Vec::new();
        collect_paths(path, files.recursive, &mut paths)?;
        for p in paths {
            let text = std::fs::read_to_string(&p)
                .map_err(|e| CliError::msg(format!("error reading {}: {e}", p.display())))?;
            let source = p.display().to_string();
            let mut parsed = Vec::new();
            parse_documents(&text, &source, &mut parsed)?;
            docs.extend(parsed.into_iter().map(|d| (source.clone(), d)));
        }
    }
    Ok(docs)
}

fn collect_paths(path: &Path, recursive: bool, out: &mut Vec<std::path::PathBuf>) -> Result<()> {
    if path.is_dir() {
        crate::manifest::walk(path, recursive, true, out)
    } else {
        out.push(path.to_path_buf());
        Ok(())
    }
}

/// Splits YAML/JSON text into objects (pure).
pub fn parse_documents(text: &str, source: &str, out: &mut Vec<Value>) -> Result<()> {
    use serde::Deserialize;
    for doc in serde_yaml_ng::Deserializer::from_str(text) {
        let v: Value = Value::deserialize(doc).map_err(|e| {
            CliError::msg(format!(
                "error parsing {source}: error converting YAML to JSON: yaml: {e}"
            ))
        })?;
        if v.is_null() {
            continue;
        }
        if crate::output::is_list(&v) {
            out.extend(v["items"].as_array().cloned().unwrap_or_default());
        } else {
            out.push(v);
        }
    }
    Ok(())
}

async fn from_files(ctx: &Ctx, files: &FileFlags) -> Result<Vec<Target>> {
    let docs = read_documents(ctx, files)?;
    let mapper = ctx.mapper().await?;
    let mut out = Vec::new();
    for (source, doc) in docs {
        let api_version = doc["apiVersion"].as_str().unwrap_or_default();
        let kind = doc["kind"].as_str().unwrap_or_default();
        let m = mapper.for_kind_fresh(ctx, api_version, kind).await?;
        let name = doc["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let namespace = if m.namespaced {
            let cmd_ns = ctx.namespace().await?;
            match doc["metadata"]["namespace"].as_str() {
                Some(ns) if !ns.is_empty() => {
                    if ctx.namespace_explicit() && ns != cmd_ns {
                        return Err(CliError::msg(format!(
                            "the namespace from the provided object \"{ns}\" does not match the namespace \"{cmd_ns}\". You must pass '--namespace={ns}' to perform this operation."
                        )));
                    }
                    Some(ns.to_string())
                }
                _ => Some(cmd_ns),
            }
        } else {
            None
        };
        out.push(Target {
            mapping: m,
            namespace,
            name,
            object: Some(doc),
            source: Some(source),
        });
    }
    Ok(out)
}

/// Ends a command that met several errors: each printed on its own line (kubectl's
/// aggregate), exit code 1. One error is returned as is.
/// (Unlike [`crate::manifest::finish`], client errors keep their `error: ` prefix here.)
pub fn finish(ctx: &Ctx, mut errors: Vec<CliError>) -> Result<()> {
    match errors.len() {
        0 => Ok(()),
        1 => Err(errors.remove(0)),
        _ => {
            let mut err = ctx.err();
            for e in errors {
                let text = e.to_string();
                if !text.is_empty() {
                    let _ = writeln!(err, "{text}");
                }
            }
            Err(CliError::Exit(1))
        }
    }
}

/// `(resources, pairs)` of `label`/`annotate`/`set image`/`set env` arguments, as
/// kubectl's `GetResourcesAndPairs` (pure).
pub fn resources_and_pairs(args: &[String], pair_type: &str) -> Result<(Vec<String>, Vec<String>)> {
    let mut resources = Vec::new();
    let mut pairs = Vec::new();
    let mut found_pair = false;
    for s in args {
        let non_resource =
            (s.contains('=') && !s.starts_with('=')) || (s.ends_with('-') && s != "-");
        match (found_pair, non_resource) {
            (_, true) => {
                found_pair = true;
                pairs.push(s.clone());
            }
            (false, false) => resources.push(s.clone()),
            (true, false) => {
                return Err(CliError::msg(format!(
                    "all resources must be specified before {pair_type} changes: {s}"
                )));
            }
        }
    }
    Ok((resources, pairs))
}

/// `KEY=VALUE` pairs (in order) and `KEY-` removals.
pub type Pairs = (Vec<(String, String)>, Vec<String>);

/// kubectl's `ParsePairs`: `KEY=VALUE` into new pairs (in order), `KEY-` into removals.
pub fn parse_pairs(pairs: &[String], pair_type: &str, support_remove: bool) -> Result<Pairs> {
    let mut new = Vec::<(String, String)>::new();
    let mut remove = Vec::new();
    let mut invalid = Vec::new();
    for p in pairs {
        if p.contains('=') && !p.starts_with('=') {
            if let Some((k, v)) = p.split_once('=') {
                new.retain(|(ek, _)| ek != k);
                new.push((k.to_string(), v.to_string()));
            }
        } else if support_remove && p.ends_with('-') && p != "-" {
            remove.push(p[..p.len() - 1].to_string());
        } else {
            invalid.push(p.clone());
        }
    }
    if !invalid.is_empty() {
        return Err(CliError::msg(format!(
            "invalid {pair_type} format: {}",
            invalid.join(", ")
        )));
    }
    Ok((new, remove))
}

/// A request with a JSON body sent with `method` to `path`.
pub fn body_request(
    method: http::Method,
    path: String,
    body: &Value,
    content_type: &str,
) -> Request {
    Request::new(method, path)
        .json(body)
        .content_type(content_type)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn args_forms() {
        assert_eq!(parse_args(&[]).unwrap(), ArgForm::None);
        assert_eq!(
            parse_args(&s(&["pod/a", "svc/b"])).unwrap(),
            ArgForm::Pairs(vec![("pod".into(), "a".into()), ("svc".into(), "b".into())])
        );
        assert_eq!(
            parse_args(&s(&["pod,svc", "a", "b"])).unwrap(),
            ArgForm::Pairs(vec![
                ("pod".into(), "a".into()),
                ("pod".into(), "b".into()),
                ("svc".into(), "a".into()),
                ("svc".into(), "b".into())
            ])
        );
        assert_eq!(
            parse_args(&s(&["pod,svc"])).unwrap(),
            ArgForm::Types(s(&["pod", "svc"]))
        );
        let e = parse_args(&s(&["pod/a", "pod", "b"]))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("there is no need to specify a resource type"),
            "{e}"
        );
    }

    #[test]
    fn pairs() {
        let (r, p) = resources_and_pairs(&s(&["pod", "x", "a=b", "c-"]), "label").unwrap();
        assert_eq!(r, s(&["pod", "x"]));
        assert_eq!(p, s(&["a=b", "c-"]));
        let e = resources_and_pairs(&s(&["pod", "a=b", "x"]), "label").unwrap_err();
        assert_eq!(
            e.to_string(),
            "error: all resources must be specified before label changes: x"
        );
        let (n, rm) = parse_pairs(&s(&["a=b=c", "d-"]), "annotation", true).unwrap();
        assert_eq!(n, vec![("a".to_string(), "b=c".to_string())]);
        assert_eq!(rm, s(&["d"]));
        let e = parse_pairs(&s(&["x", "y"]), "image", false).unwrap_err();
        assert_eq!(e.to_string(), "error: invalid image format: x, y");
    }

    #[test]
    fn documents_flatten_lists() {
        let mut out = Vec::new();
        parse_documents(
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: Pod, metadata: {name: a}}\n---\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: b}\n",
            "x",
            &mut out,
        )
        .unwrap();
        assert_eq!(out.len(), 2);
        assert_eq!(out[1]["metadata"]["name"], "b");
    }

    #[test]
    fn escape() {
        assert_eq!(query_escape("a=b,c!=d"), "a%3Db%2Cc%21%3Dd");
    }
}

/// Go's `time.ParseDuration` for non-negative values (e.g. `30s`, `1m30s`, `100ms`, `0`).
pub fn parse_go_duration(s: &str) -> Option<std::time::Duration> {
    match crate::duration::parse_go_duration(s).ok()? {
        (false, d) => Some(d),
        (true, _) => None,
    }
}

/// A `--timeout`-style flag's value, with pflag's message for bad values.
pub fn duration_flag(flag: &str, value: &str) -> Result<std::time::Duration> {
    parse_go_duration(value).ok_or_else(|| {
        CliError::msg(format!(
            "invalid argument \"{value}\" for \"--{flag}\" flag: time: invalid duration \"{value}\""
        ))
    })
}

#[cfg(test)]
mod duration_tests {
    use super::parse_go_duration;
    use std::time::Duration;

    #[test]
    fn go_durations() {
        assert_eq!(parse_go_duration("0"), Some(Duration::ZERO));
        assert_eq!(parse_go_duration("30s"), Some(Duration::from_secs(30)));
        assert_eq!(parse_go_duration("1m30s"), Some(Duration::from_secs(90)));
        assert_eq!(parse_go_duration("100ms"), Some(Duration::from_millis(100)));
        assert_eq!(parse_go_duration("10"), None);
        assert_eq!(parse_go_duration("x"), None);
    }
}
