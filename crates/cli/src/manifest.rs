//! Reading manifests as kubectl's resource builder reads them for `create|apply|replace|
//! diff -f`: files, directories (`.json`, `.yaml`, `.yml`; `-R` recurses), `-` for stdin;
//! YAML streams split on `---`, JSON streams, `List` kinds flattened; the decoding and
//! validation errors in kubectl's words; then the REST mapping and namespace of each object.
//!
//! As kubectl does, everything is read and mapped before anything is sent: a document with a
//! YAML syntax error or a missing `apiVersion`/`kind` ends its file (the documents before it
//! are used, those after it are not), while a kind the server does not know fails only its
//! own document. The errors are returned beside the objects, to print after the verb ran
//! over the good ones ([`finish`]).

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;

/// The annotation client-side apply keeps the last applied configuration in.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// kubectl's `-f/--filename`, `-R/--recursive` and `-k/--kustomize`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct FilenameArgs {
    /// The files that contain the configurations (a file, a directory, or '-' for stdin).
    #[arg(short = 'f', long = "filename")]
    pub filenames: Vec<String>,
    /// Process the directory used in -f, --filename recursively. Useful when you want to
    /// manage related manifests organized within the same directory.
    #[arg(short = 'R', long)]
    pub recursive: bool,
    /// Process a kustomization directory. This flag can't be used together with -f or -R.
    #[arg(short = 'k', long)]
    pub kustomize: Option<String>,
}

/// kubectl's `--validate` (`strict` unless given; a bare `--validate` is `strict`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ValidateFlag {
    /// Must be one of: strict (or true), warn, ignore (or false).
    #[arg(
        long = "validate",
        num_args = 0..=1,
        default_missing_value = "strict",
        require_equals = true
    )]
    pub validate: Option<String>,
}

/// `apply`'s and `diff`'s `--server-side`, `--force-conflicts` and `--field-manager`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ServerSideFlags {
    /// If true, apply runs in the server instead of the client.
    #[arg(long)]
    pub server_side: bool,
    /// If true, server-side apply will force the changes against conflicts.
    #[arg(long)]
    pub force_conflicts: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long)]
    pub field_manager: Option<String>,
}

impl ServerSideFlags {
    /// `--field-manager`, else kubectl's default for the apply mode.
    pub fn field_manager(&self) -> String {
        self.field_manager.clone().unwrap_or_else(|| {
            if self.server_side {
                "kubectl".to_string()
            } else {
                "kubectl-client-side-apply".to_string()
            }
        })
    }
}

/// `create -f`'s and `replace`'s `--save-config` (kubectl's `AddApplyAnnotationFlags`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SaveConfigFlag {
    /// If true, the configuration of current object will be saved in its annotation.
    /// Otherwise, the annotation will be unchanged. This flag is useful when you want to
    /// perform kubectl apply on this object in the future.
    #[arg(long)]
    pub save_config: bool,
}

impl SaveConfigFlag {
    /// kubectl's `CreateOrUpdateAnnotation`: with `--save-config` always, else only to
    /// refresh an annotation the object already carries.
    pub fn update_annotation(&self, object: &mut Value) {
        let has = object
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .is_some_and(|a| a.contains_key(LAST_APPLIED));
        if self.save_config || has {
            set_last_applied(object);
        }
    }
}

/// The field validation directive of `--validate`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Validation {
    Strict,
    Warn,
    Ignore,
}

impl ValidateFlag {
    pub fn resolve(&self) -> Result<Validation> {
        match self.validate.as_deref().map(str::to_lowercase).as_deref() {
            None | Some("strict") | Some("true") => Ok(Validation::Strict),
            Some("warn") => Ok(Validation::Warn),
            Some("ignore") | Some("false") => Ok(Validation::Ignore),
            Some(_) => Err(CliError::msg(format!(
                "invalid - validate option {:?}; must be one of: strict (true), warn, ignore (false)",
                self.validate.clone().unwrap_or_default()
            ))),
        }
    }
}

impl Validation {
    /// The `fieldValidation` query parameter (with a leading `&`).
    pub fn query(self) -> &'static str {
        match self {
            Validation::Strict => "&fieldValidation=Strict",
            Validation::Warn => "&fieldValidation=Warn",
            Validation::Ignore => "&fieldValidation=Ignore",
        }
    }
}

/// One object of a manifest and where it came from (`x.yaml`, or `STDIN`).
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub source: String,
    pub object: Value,
}

/// A manifest object ready to send: its mapping, namespace (for namespaced resources) and
/// name.
#[derive(Debug, Clone)]
pub struct Info {
    pub source: String,
    pub mapping: Mapping,
    pub namespace: Option<String>,
    pub name: String,
    pub object: Value,
}

impl Info {
    pub fn path(&self) -> String {
        self.mapping.object_path(
            self.namespace.as_deref(),
            &crate::resource::encode(&self.name),
        )
    }

    pub fn collection_path(&self) -> String {
        self.mapping.collection_path(self.namespace.as_deref())
    }

    /// `configmaps "x"`, as kubectl names an object in messages.
    pub fn describe(&self) -> String {
        format!("{} \"{}\"", self.mapping.group_resource(), self.name)
    }
}

impl FilenameArgs {
    /// Refuses what kubectl refuses before reading anything.
    pub fn check(&self, verb: &str) -> Result<()> {
        if let Some(dir) = &self.kustomize {
            if !self.filenames.is_empty() {
                return Err(CliError::msg("only one of -f or -k can be specified"));
            }
            return Err(CliError::msg(format!(
                "kustomize is not supported by rkube kubectl (-k {dir})"
            )));
        }
        if self.filenames.is_empty() {
            let _ = verb;
            return Err(CliError::msg("must specify one of -f and -k"));
        }
        Ok(())
    }
}

/// Reads every `-f` source: the documents read, and the errors met (a file's error ends
/// that file).
pub fn read(ctx: &Ctx, args: &FilenameArgs, validation: Validation) -> Vec<Result<Document>> {
    let mut docs: Vec<Result<Document>> = Vec::new();
    let mut errors = ErrSink(&mut docs);
    for name in &args.filenames {
        let sources = match expand(name, args.recursive) {
            Ok(s) => s,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        for source in sources {
            let (label, bytes) = match &source {
                Source::Stdin => match ctx.read_stdin() {
                    Ok(b) => ("STDIN".to_string(), b),
                    Err(e) => {
                        errors.push(e);
                        continue;
                    }
                },
                Source::File(p) => match std::fs::read(p) {
                    Ok(b) => (p.display().to_string(), b),
                    Err(e) => {
                        errors.push(CliError::msg(format!(
                            "open {}: {}",
                            p.display(),
                            go_io(&e)
                        )));
                        continue;
                    }
                },
            };
            let text = String::from_utf8_lossy(&bytes);
            let (values, err) = decode_stream(&label, &text, validation);
            errors.0.extend(values.into_iter().map(|object| {
                Ok(Document {
                    source: label.clone(),
                    object,
                })
            }));
            if let Some(e) = err {
                errors.push(CliError::Msg(e));
            }
        }
    }
    docs
}

/// Where `read` puts its errors: in stream order among the documents.
struct ErrSink<'a>(&'a mut Vec<Result<Document>>);

impl ErrSink<'_> {
    fn push(&mut self, e: CliError) {
        self.0.push(Err(e));
    }
}

fn go_io(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".into(),
        std::io::ErrorKind::PermissionDenied => "permission denied".into(),
        _ => e.to_string(),
    }
}

enum Source {
    Stdin,
    File(PathBuf),
}

/// The files an `-f` value names: stdin, one file, or a directory's manifests.
fn expand(name: &str, recursive: bool) -> Result<Vec<Source>> {
    if name == "-" {
        return Ok(vec![Source::Stdin]);
    }
    if name.starts_with("http://") || name.starts_with("https://") {
        return Err(CliError::msg(format!(
            "reading manifests from URLs is not supported by rkube kubectl: {name}"
        )));
    }
    let path = Path::new(name);
    let meta = std::fs::metadata(path)
        .map_err(|_| CliError::msg(format!("the path \"{name}\" does not exist")))?;
    if !meta.is_dir() {
        return Ok(vec![Source::File(path.to_path_buf())]);
    }
    let mut out = Vec::new();
    walk(path, recursive, true, &mut out)?;
    Ok(out.into_iter().map(Source::File).collect())
}

/// The manifests (`.json`, `.yaml`, `.yml`) of a directory, sorted; subdirectories
/// only when `recursive`.
pub fn walk(dir: &Path, recursive: bool, top: bool, out: &mut Vec<PathBuf>) -> Result<()> {
    if !top && !recursive {
        return Ok(());
    }
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, recursive, false, out)?;
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| matches!(e, "json" | "yaml" | "yml"))
        {
            out.push(p);
        }
    }
    Ok(())
}

/// Decodes one file's text: its objects (Lists flattened) up to the first error, and that
/// error in kubectl's words.
pub fn decode_stream(
    source: &str,
    text: &str,
    validation: Validation,
) -> (Vec<Value>, Option<String>) {
    let mut out = Vec::new();
    let trimmed = text.trim_start();
    let mut yaml_text = text.to_string();
    if trimmed.starts_with('{') {
        // A JSON stream; what is not JSON is read as YAML (JSON is YAML), as kubectl's
        // YAMLOrJSONDecoder falls back.
        let mut stream = serde_json::Deserializer::from_str(trimmed).into_iter::<Value>();
        let mut ok = true;
        let mut values = Vec::new();
        for v in stream.by_ref() {
            match v {
                Ok(v) => values.push(v),
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        if ok {
            for v in values {
                if let Err(e) = accept(source, v, validation, &mut out) {
                    return (out, Some(e));
                }
            }
            return (out, None);
        }
        yaml_text = text.to_string();
    }
    for doc in split_yaml_documents(&yaml_text) {
        let value = match serde_yaml_ng::from_str::<Value>(&doc) {
            Ok(v) => v,
            Err(e) => {
                return (
                    out,
                    Some(format!(
                        "error parsing {source}: error converting YAML to JSON: {}",
                        yaml_error(&e)
                    )),
                );
            }
        };
        if value.is_null() {
            continue;
        }
        if let Err(e) = accept(source, value, validation, &mut out) {
            return (out, Some(e));
        }
    }
    (out, None)
}

/// Validates one decoded document (unless validation is off) and adds it, or its items if
/// it is a List.
fn accept(
    source: &str,
    value: Value,
    validation: Validation,
    out: &mut Vec<Value>,
) -> Result<(), String> {
    let value = normalize_numbers(value);
    if validation != Validation::Ignore {
        let problems = validation_problems(&value);
        if !problems.is_empty() {
            let data = if problems.len() == 1 {
                problems[0].to_string()
            } else {
                format!("[{}]", problems.join(", "))
            };
            return Err(format!(
                "error validating \"{source}\": error validating data: {data}; if you choose to ignore these errors, turn validation off with --validate=false"
            ));
        }
    } else if !value.is_object() {
        return Err(format!(
            "error parsing {source}: json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_json_kind(&value)
        ));
    }
    let is_list = value
        .get("kind")
        .and_then(Value::as_str)
        .is_some_and(|k| k.ends_with("List"))
        && value.get("items").is_some_and(Value::is_array);
    if is_list {
        for item in value
            .get("items")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            accept(source, item.clone(), validation, out)?;
        }
        return Ok(());
    }
    out.push(value);
    Ok(())
}

fn go_json_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        _ => "value",
    }
}

/// kubectl's client-side checks of a document (`error validating data: …`).
fn validation_problems(v: &Value) -> Vec<&'static str> {
    let Some(obj) = v.as_object() else {
        return vec!["invalid object to validate"];
    };
    let mut problems = Vec::new();
    let set = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .is_some_and(|s| !s.is_empty())
    };
    if !set("apiVersion") {
        problems.push("apiVersion not set");
    }
    if !set("kind") {
        problems.push("kind not set");
    }
    problems
}

/// Integral floats become integers, as Go's YAML-to-JSON conversion and unstructured
/// decoding leave them (`1e3` is `1000`).
fn normalize_numbers(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9.0e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(items) => Value::Array(items.into_iter().map(normalize_numbers).collect()),
        Value::Object(m) => Value::Object(
            m.into_iter()
                .map(|(k, v)| (k, normalize_numbers(v)))
                .collect(),
        ),
        other => other,
    }
}

/// Splits a YAML stream into documents as client-go's `YAMLReader` does: on lines starting
/// with `---` followed by nothing but spaces or a comment.
pub fn split_yaml_documents(text: &str) -> Vec<String> {
    let mut docs = Vec::new();
    let mut cur = String::new();
    for line in text.split_inclusive('\n') {
        if let Some(rest) = line.strip_prefix("---") {
            let rest = rest.trim();
            if rest.is_empty() || rest.starts_with('#') {
                if !cur.is_empty() {
                    docs.push(std::mem::take(&mut cur));
                }
                continue;
            }
        }
        cur.push_str(line);
    }
    if !cur.is_empty() {
        docs.push(cur);
    }
    docs
}

/// A YAML syntax error as go-yaml words it (`yaml: line 3: did not find expected key`):
/// libyaml's problem, with go-yaml's choice of line (the context's, else the problem's,
/// 0-based, plus one for scanner errors).
pub fn yaml_error(e: &serde_yaml_ng::Error) -> String {
    let text = e.to_string();
    let (problem_part, context) = match text.split_once(", while ") {
        Some((p, c)) => (p.to_string(), Some(format!("while {c}"))),
        None => (text.clone(), None),
    };
    let (problem, problem_line) = split_at_line(&problem_part);
    let context_line = context.as_deref().map(split_at_line).and_then(|(_, l)| l);
    let problem_line = problem_line.or_else(|| e.location().map(|l| l.line()));
    let scanner = match &context {
        Some(c) => c.starts_with("while scanning"),
        None => !problem.starts_with("did not find expected") || problem.contains("':'"),
    };
    let zero_based = |l: Option<usize>| l.map(|l| l.saturating_sub(1)).unwrap_or(0);
    let mut line = zero_based(context_line);
    if line == 0 {
        line = zero_based(problem_line);
    }
    if line != 0 && scanner {
        line += 1;
    }
    let problem = match problem.as_str() {
        "unknown anchor" => "unknown anchor referenced".to_string(),
        _ => problem,
    };
    if line == 0 {
        format!("yaml: {problem}")
    } else {
        format!("yaml: line {line}: {problem}")
    }
}

/// `"did not find expected key at line 5 column 2"` → the message and the line.
fn split_at_line(s: &str) -> (String, Option<usize>) {
    match s.rfind(" at line ") {
        Some(i) => {
            let line = s[i + " at line ".len()..]
                .split_whitespace()
                .next()
                .and_then(|n| n.parse().ok());
            (s[..i].to_string(), line)
        }
        None => (s.to_string(), None),
    }
}

/// Maps the documents: their mapping (discovery), namespace (`-n` or the context's when the
/// object has none; kubectl's error when `-n` contradicts it) and name.
pub async fn resolve(ctx: &Ctx, docs: Vec<Result<Document>>) -> Result<Vec<Result<Info>>> {
    let mut out = Vec::new();
    if !docs.iter().any(|d| d.is_ok()) {
        return Ok(docs.into_iter().filter_map(|d| d.err()).map(Err).collect());
    }
    let mapper = ctx.mapper().await?;
    let namespace = ctx.namespace().await?;
    for doc in docs {
        let doc = match doc {
            Ok(d) => d,
            Err(e) => {
                out.push(Err(e));
                continue;
            }
        };
        let mut object = doc.object;
        let text = |v: Option<&Value>| v.and_then(Value::as_str).unwrap_or_default().to_string();
        let api_version = text(object.get("apiVersion"));
        let kind = text(object.get("kind"));
        let name = text(object.pointer("/metadata/name"));
        let obj_ns = text(object.pointer("/metadata/namespace"));
        let mapping = match mapper.for_kind_fresh(ctx, &api_version, &kind).await {
            Ok(m) => m,
            Err(CliError::Msg(m)) => {
                out.push(Err(CliError::msg(format!(
                    "resource mapping not found for name: \"{name}\" namespace: \"{obj_ns}\" from \"{}\": {m}\nensure CRDs are installed first",
                    doc.source
                ))));
                continue;
            }
            Err(e) => return Err(e),
        };
        let ns = if mapping.namespaced {
            if obj_ns.is_empty() {
                if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
                    meta.insert("namespace".into(), Value::String(namespace.clone()));
                } else if let Some(o) = object.as_object_mut() {
                    o.insert(
                        "metadata".into(),
                        serde_json::json!({"namespace": namespace}),
                    );
                }
                Some(namespace.clone())
            } else {
                if ctx.namespace_explicit() && obj_ns != namespace {
                    out.push(Err(CliError::msg(format!(
                        "the namespace from the provided object \"{obj_ns}\" does not match the namespace \"{namespace}\". You must pass '--namespace={obj_ns}' to perform this operation."
                    ))));
                    continue;
                }
                Some(obj_ns)
            }
        } else {
            None
        };
        out.push(Ok(Info {
            source: doc.source,
            mapping,
            namespace: ns,
            name,
            object,
        }));
    }
    Ok(out)
}

/// Reads and maps every `-f` source (what kubectl's builder does before a verb runs): the
/// objects and the errors, in stream order.
pub async fn load(
    ctx: &Ctx,
    args: &FilenameArgs,
    validation: Validation,
) -> Result<Vec<Result<Info>>> {
    let docs = read(ctx, args, validation);
    resolve(ctx, docs).await
}

/// The objects and, apart, the errors of [`load`]'s answer.
pub fn split(items: Vec<Result<Info>>) -> (Vec<Info>, Vec<CliError>) {
    let mut infos = Vec::new();
    let mut errors = Vec::new();
    for i in items {
        match i {
            Ok(i) => infos.push(i),
            Err(e) => errors.push(e),
        }
    }
    (infos, errors)
}

/// `cmdutil.AddSourceToErr`: `error when <verb> "<source>": …` in a server failure's
/// message (or around any other error).
pub fn add_source(verb: &str, source: &str, err: CliError) -> CliError {
    if source.is_empty() {
        return err;
    }
    match err {
        CliError::Api(mut s) => {
            s.message = format!("error when {verb} \"{source}\": {}", s.message);
            if let Some(m) = s.status.get_mut("message") {
                *m = Value::String(s.message.clone());
            }
            CliError::Api(s)
        }
        CliError::Msg(m) => CliError::msg(format!("error when {verb} \"{source}\": {m}")),
        other => other,
    }
}

/// kubectl's text for one failure among several (`messageForError`): no `error: ` prefix
/// for client errors.
pub fn aggregate_text(err: &CliError) -> String {
    match err {
        CliError::Msg(m) => m.clone(),
        other => other.to_string(),
    }
}

/// Ends a verb that ran over several objects: nothing when all went well, the one failure
/// as kubectl prints it alone, or each of several on its own line (exit 1).
pub fn finish(ctx: &Ctx, errors: Vec<CliError>) -> Result<()> {
    use std::io::Write;
    match errors.len() {
        0 => Ok(()),
        // Printed as kubectl's checkErr prints it alone (`Invalid` failures: error.rs).
        1 => Err(errors.into_iter().next().unwrap_or(CliError::Exit(1))),
        _ => {
            let mut err = ctx.err();
            for e in &errors {
                let _ = writeln!(err, "{}", aggregate_text(e));
            }
            Err(CliError::Exit(1))
        }
    }
}

/// Go's `json.Marshal` of an object followed by a newline, as `runtime.Encode` writes the
/// last-applied configuration.
pub fn go_encode(v: &Value) -> String {
    let mut s = api::gofmt::json(v);
    s.push('\n');
    s
}

/// Removes the `null` members of maps (kubectl's `pruneNulls` before a create).
pub fn prune_nulls(v: &mut Value) {
    match v {
        Value::Object(m) => {
            m.retain(|_, v| !v.is_null());
            for v in m.values_mut() {
                prune_nulls(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(prune_nulls),
        _ => {}
    }
}

/// kubectl's `GetModifiedConfiguration`: the object without its last-applied annotation
/// (with an `annotations` map, empty if need be), encoded; with `annotate`, encoded again
/// with that encoding as the annotation. Returns `(modified, annotation)`.
pub fn modified_configuration(object: &Value, annotate: bool) -> (String, String) {
    let mut obj = object.clone();
    if !obj.get("metadata").is_some_and(Value::is_object)
        && let Some(o) = obj.as_object_mut()
    {
        o.insert("metadata".into(), Value::Object(Default::default()));
    }
    let meta = obj.get_mut("metadata").and_then(Value::as_object_mut);
    let Some(meta) = meta else {
        let s = go_encode(&obj);
        return (s.clone(), s);
    };
    let annotations = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Default::default()));
    if !annotations.is_object() {
        *annotations = Value::Object(Default::default());
    }
    if let Some(a) = annotations.as_object_mut() {
        a.remove(LAST_APPLIED);
    }
    let without = go_encode(&obj);
    if !annotate {
        return (without.clone(), without);
    }
    if let Some(a) = obj
        .pointer_mut("/metadata/annotations")
        .and_then(Value::as_object_mut)
    {
        a.insert(LAST_APPLIED.into(), Value::String(without.clone()));
    }
    (go_encode(&obj), without)
}

/// Sets the last-applied annotation on an object (kubectl's `CreateApplyAnnotation`).
pub fn set_last_applied(object: &mut Value) {
    let (_, annotation) = modified_configuration(object, false);
    if let Some(o) = object.as_object_mut() {
        let meta = o
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(m) = meta.as_object_mut() {
            let a = m
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if !a.is_object() {
                *a = Value::Object(Default::default());
            }
            if let Some(a) = a.as_object_mut() {
                a.insert(LAST_APPLIED.into(), Value::String(annotation));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::error::ApiStatus;
    use serde_json::json;

    #[test]
    fn splits_documents() {
        let docs = split_yaml_documents("a: 1\n---\nb: 2\n--- # c\n---\nc: 3\n---x: 1\n");
        assert_eq!(docs, vec!["a: 1\n", "b: 2\n", "c: 3\n---x: 1\n"]);
    }

    #[test]
    fn yaml_errors_as_go_yaml() {
        let cases = [
            (
                "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: x\n",
                "yaml: line 4: did not find expected key",
            ),
            (
                "a: [1, 2\nb: 3\n",
                "yaml: line 1: did not find expected ',' or ']'",
            ),
            (
                "a: b: c\n",
                "yaml: mapping values are not allowed in this context",
            ),
            (
                "a:\n\t- b\n",
                "yaml: line 2: found character that cannot start any token",
            ),
        ];
        for (text, want) in cases {
            let e = serde_yaml_ng::from_str::<Value>(text).unwrap_err();
            assert_eq!(yaml_error(&e), want, "{text:?}");
        }
    }

    #[test]
    fn decodes_streams_and_stops_at_bad_documents() {
        let text = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s1\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s2\n bad: x\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: s3\n";
        let (docs, err) = decode_stream("m.yaml", text, Validation::Strict);
        assert_eq!(docs.len(), 1);
        assert_eq!(
            err.unwrap(),
            "error parsing m.yaml: error converting YAML to JSON: yaml: line 4: did not find expected key"
        );
        let (docs, err) = decode_stream("x.yaml", "metadata:\n  name: x\n", Validation::Strict);
        assert!(docs.is_empty());
        assert_eq!(
            err.unwrap(),
            "error validating \"x.yaml\": error validating data: [apiVersion not set, kind not set]; if you choose to ignore these errors, turn validation off with --validate=false"
        );
        let (docs, err) = decode_stream("-", "- a\n", Validation::Strict);
        assert!(docs.is_empty());
        assert!(err.unwrap().contains("invalid object to validate"));
        let list = "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a}}\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: b}}\n";
        let (docs, err) = decode_stream("l", list, Validation::Strict);
        assert!(err.is_none());
        assert_eq!(docs.len(), 2);
        let json = "{\"apiVersion\":\"v1\",\"kind\":\"A\",\"n\":1e3}\n{\"apiVersion\":\"v1\",\"kind\":\"B\"}";
        let (docs, err) = decode_stream("j", json, Validation::Strict);
        assert!(err.is_none());
        assert_eq!(docs[0]["n"], json!(1000));
        assert_eq!(docs[1]["kind"], "B");
    }

    #[test]
    fn last_applied_as_kubectl_encodes_it() {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "default"}, "data": {"k": "<v>"}});
        let mut created = obj.clone();
        set_last_applied(&mut created);
        assert_eq!(
            created["metadata"]["annotations"][LAST_APPLIED],
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":\"\\u003cv\\u003e\"},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"a\",\"namespace\":\"default\"}}\n"
        );
        let (modified, annotation) = modified_configuration(&created, true);
        let m: Value = serde_json::from_str(&modified).unwrap();
        assert_eq!(
            m["metadata"]["annotations"][LAST_APPLIED],
            json!(annotation)
        );
    }

    #[test]
    fn invalid_messages() {
        let s = ApiStatus {
            code: 422,
            reason: "Invalid".into(),
            message: "x".into(),
            status: json!({"details": {"kind": "ConfigMap", "name": "a", "causes": [{"field": "metadata.name", "message": "bad"}]}}),
        };
        assert_eq!(
            CliError::Api(Box::new(s)).to_string(),
            "The ConfigMap \"a\" is invalid: metadata.name: bad"
        );
    }
}
