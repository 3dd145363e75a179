//! Printers: how kubectl writes objects out, chosen by `-o` (yaml, json, name, jsonpath,
//! go-template, custom-columns) and the operation lines of the writing verbs
//! (`deployment.apps/nginx created (dry run)`). The human tables of `get` are in [`table`].
//!
//! Every verb that prints objects flattens [`PrintFlags`] into its `Args` and calls
//! [`print_object`] / [`print_operation`]; verbs with `--dry-run` flatten [`DryRunFlag`].

pub mod columns;
pub mod jsonpath;
pub mod table;
pub mod template;
pub mod yaml;

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};

/// The formats of `-o` every printing verb accepts (kubectl's `allowed formats are: …`).
const OBJECT_FORMATS: &str = "go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml";

/// kubectl's printing flags (`-o`, `--template`, `--show-managed-fields`,
/// `--allow-missing-template-keys`), to `#[command(flatten)]` into a verb's `Args`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct PrintFlags {
    /// Output format. One of: (json, yaml, name, go-template, go-template-file, template,
    /// templatefile, jsonpath, jsonpath-as-json, jsonpath-file, custom-columns,
    /// custom-columns-file, wide).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Template string or path to template file to use when -o=go-template,
    /// -o=go-template-file.
    #[arg(long)]
    pub template: Option<String>,
    /// If true, keep the managedFields when printing objects in JSON or YAML format.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub show_managed_fields: bool,
    /// If true, ignore any errors in templates when a field or map key is missing in the
    /// template. Only applies to golang and jsonpath output formats.
    #[arg(
        long,
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true
    )]
    pub allow_missing_template_keys: bool,
}

/// A parsed `-o`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Format {
    /// No `-o`: the verb's default (a table for `get`, the operation line for writers).
    Default,
    Wide,
    Json,
    Yaml,
    Name,
    /// `jsonpath=…` (the template; `as_json` for `jsonpath-as-json`).
    JsonPath {
        template: String,
        as_json: bool,
    },
    /// `go-template=…` / `template=…`.
    GoTemplate(String),
    /// `custom-columns=…` (the spec, or the file's contents).
    CustomColumns(String),
}

impl Format {
    /// Whether the format prints whole objects in a machine-readable way (kubectl then
    /// asks the server for objects, not tables).
    pub fn is_human(&self) -> bool {
        matches!(self, Format::Default | Format::Wide)
    }
}

fn read_template_file(path: &str) -> Result<String> {
    std::fs::read_to_string(path)
        .map_err(|e| CliError::msg(format!("error reading --template {path}, {e}")))
}

impl PrintFlags {
    /// The format, checking the template flags as kubectl does. `get` accepts `wide` and
    /// `custom-columns`; other verbs only the object formats.
    pub fn format(&self, for_get: bool) -> Result<Format> {
        let mut output = self.output.clone().unwrap_or_default();
        let template_arg = self.template.clone().unwrap_or_default();
        if output.is_empty() && !template_arg.is_empty() {
            output = "go-template".into();
        }
        if output.is_empty() {
            return Ok(Format::Default);
        }
        let (name, value) = match output.split_once('=') {
            Some((n, v)) => (n.to_string(), Some(v.to_string())),
            None => (output.clone(), None),
        };
        let template = || -> Result<String> {
            let t = value.clone().unwrap_or_else(|| template_arg.clone());
            if t.is_empty() {
                return Err(CliError::msg(
                    "template format specified but no template given",
                ));
            }
            Ok(t)
        };
        let unmatched = || {
            let formats = if for_get {
                "custom-columns,custom-columns-file,go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,wide,yaml"
            } else {
                OBJECT_FORMATS
            };
            CliError::msg(format!(
                "unable to match a printer suitable for the output format \"{output}\", allowed formats are: {formats}"
            ))
        };
        Ok(match name.as_str() {
            "json" if value.is_none() => Format::Json,
            "yaml" if value.is_none() => Format::Yaml,
            "name" if value.is_none() => Format::Name,
            "wide" if value.is_none() && for_get => Format::Wide,
            "jsonpath" => Format::JsonPath {
                template: template()?,
                as_json: false,
            },
            "jsonpath-as-json" => Format::JsonPath {
                template: template()?,
                as_json: true,
            },
            "jsonpath-file" => Format::JsonPath {
                template: read_template_file(&template()?)?,
                as_json: false,
            },
            "go-template" | "template" => Format::GoTemplate(template()?),
            "go-template-file" | "templatefile" => {
                Format::GoTemplate(read_template_file(&template()?)?)
            }
            "custom-columns" if for_get => match value {
                Some(v) if !v.is_empty() => Format::CustomColumns(v),
                _ => {
                    return Err(CliError::msg(
                        "custom-columns format specified but no custom columns given",
                    ));
                }
            },
            "custom-columns-file" if for_get => match value {
                Some(v) if !v.is_empty() => Format::CustomColumns(columns::spec_from_file(
                    &std::fs::read_to_string(&v)
                        .map_err(|e| CliError::msg(format!("error reading {v}: {e}")))?,
                )?),
                _ => {
                    return Err(CliError::msg(
                        "custom-columns format specified but no custom columns given",
                    ));
                }
            },
            _ => return Err(unmatched()),
        })
    }
}

/// `--dry-run`: kubectl's strategies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DryRun {
    #[default]
    None,
    Client,
    Server,
}

impl DryRun {
    /// Parses a `--dry-run` value as kubectl does (`unchanged` is the value of a bare
    /// `--dry-run`; the booleans are deprecated spellings). The second element is
    /// kubectl's deprecation warning, if any.
    pub fn parse_with_warning(value: &str) -> Result<(DryRun, Option<String>), String> {
        match value {
            "client" => Ok((DryRun::Client, None)),
            "server" => Ok((DryRun::Server, None)),
            "none" | "" => Ok((DryRun::None, None)),
            "unchanged" => Ok((
                DryRun::Client,
                Some("--dry-run is deprecated and can be replaced with --dry-run=client.".into()),
            )),
            other => match parse_go_bool(other) {
                Some(true) => Ok((
                    DryRun::Client,
                    Some(format!(
                        "--dry-run={other} is deprecated (boolean value) and can be replaced with --dry-run=client."
                    )),
                )),
                Some(false) => Ok((
                    DryRun::None,
                    Some(format!(
                        "--dry-run={other} is deprecated (boolean value) and can be replaced with --dry-run=none."
                    )),
                )),
                None => Err(format!(
                    "Invalid dry-run value ({other}). Must be \"none\", \"server\", or \"client\"."
                )),
            },
        }
    }

    /// The `(dry run)` / `(server dry run)` suffix of operation lines.
    pub fn suffix(self) -> &'static str {
        match self {
            DryRun::None => "",
            DryRun::Client => " (dry run)",
            DryRun::Server => " (server dry run)",
        }
    }

    /// The `dryRun=All` query parameter for server dry runs (with a leading `&`), else "".
    pub fn query(self) -> &'static str {
        match self {
            DryRun::Server => "&dryRun=All",
            _ => "",
        }
    }
}

impl std::str::FromStr for DryRun {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        DryRun::parse_with_warning(s).map(|(d, _)| d)
    }
}

/// Go's `strconv.ParseBool`.
fn parse_go_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    }
}

/// `--dry-run[=none|client|server]`, to flatten into a verb's `Args`; call
/// [`DryRunFlag::resolve`] to get the strategy (it prints kubectl's deprecation warnings
/// and fails on bad values with kubectl's message).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DryRunFlag {
    /// Must be "none", "server", or "client". If client strategy, only print the object
    /// that would be sent, without sending it. If server strategy, submit server-side
    /// request without persisting the resource.
    #[arg(
        long = "dry-run",
        num_args = 0..=1,
        default_missing_value = "unchanged",
        require_equals = true,
        value_name = "none|client|server"
    )]
    pub dry_run: Option<String>,
}

impl DryRunFlag {
    pub fn resolve(&self, ctx: &Ctx) -> Result<DryRun> {
        let Some(v) = &self.dry_run else {
            return Ok(DryRun::None);
        };
        let (d, warning) = DryRun::parse_with_warning(v).map_err(CliError::Msg)?;
        if let Some(w) = warning {
            warn(ctx, &w);
        }
        Ok(d)
    }
}

/// Writes a klog-style warning line (`W1126 12:32:30.412865   23431 helpers.go:717] …`)
/// as kubectl does for deprecations.
pub fn warn(ctx: &Ctx, message: &str) {
    let now = jiff::Zoned::now();
    let line = format!(
        "W{} {:>7} helpers.go:717] {message}",
        now.strftime("%m%d %H:%M:%S%.6f"),
        std::process::id()
    );
    let _ = writeln!(ctx.err(), "{line}");
}

/// Removes `metadata.managedFields` (from an object, or from every item of a list).
pub fn omit_managed_fields(obj: &mut Value) {
    if let Some(m) = obj.get_mut("metadata").and_then(|m| m.as_object_mut()) {
        m.remove("managedFields");
    }
    if let Some(items) = obj.get_mut("items").and_then(|i| i.as_array_mut()) {
        for item in items {
            if let Some(m) = item.get_mut("metadata").and_then(|m| m.as_object_mut()) {
                m.remove("managedFields");
            }
        }
    }
}

/// kubectl's name of an object: `pod/x`, `deployment.apps/x` (from its apiVersion and
/// kind).
pub fn object_name(obj: &Value) -> Result<String> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if kind.is_empty() {
        return Err(CliError::msg(format!(
            "missing kind for resource with name {name}"
        )));
    }
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let group = match api_version.split_once('/') {
        Some((g, _)) => g,
        None => "",
    };
    Ok(if group.is_empty() {
        format!("{}/{name}", kind.to_lowercase())
    } else {
        format!("{}.{group}/{name}", kind.to_lowercase())
    })
}

/// Whether a JSON value is a list (`kind` ends in `List` and it has `items`).
pub fn is_list(obj: &Value) -> bool {
    obj.get("items").is_some_and(Value::is_array)
        && obj
            .get("kind")
            .and_then(Value::as_str)
            .is_some_and(|k| k.ends_with("List"))
}

/// kubectl's `List` of several objects (what `get -o yaml|json` prints for more than one).
pub fn list_of(items: Vec<Value>) -> Value {
    serde_json::json!({
        "apiVersion": "v1",
        "items": items,
        "kind": "List",
        "metadata": {"resourceVersion": ""},
    })
}

/// Go's `json.MarshalIndent(v, "", "    ")` (with its HTML escaping) and a newline.
pub fn to_json_pretty(v: &Value) -> String {
    let mut buf = Vec::new();
    let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
    let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
    let _ = serde::Serialize::serialize(v, &mut ser);
    let mut s = go_html_escape(&String::from_utf8_lossy(&buf));
    s.push('\n');
    s
}

/// Go's `json.Marshal` compact form (with its HTML escaping).
pub fn to_json_compact(v: &Value) -> String {
    go_html_escape(&v.to_string())
}

/// Go's JSON encoder escapes `<`, `>`, `&` (they only occur inside strings in JSON text).
fn go_html_escape(s: &str) -> String {
    if !s.contains(['<', '>', '&', '\u{2028}', '\u{2029}']) {
        return s.to_string();
    }
    s.replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
        .replace('\u{2028}', "\\u2028")
        .replace('\u{2029}', "\\u2029")
}

/// Renders one object (or list) in a non-table format into a string.
pub fn render(flags: &PrintFlags, format: &Format, obj: &Value) -> Result<String> {
    match format {
        Format::Json | Format::Yaml => {
            let mut obj = obj.clone();
            if !flags.show_managed_fields {
                omit_managed_fields(&mut obj);
            }
            Ok(if *format == Format::Json {
                to_json_pretty(&obj)
            } else {
                yaml::to_yaml(&obj)
            })
        }
        Format::Name => {
            let mut out = String::new();
            if is_list(obj) {
                for item in obj["items"].as_array().into_iter().flatten() {
                    out.push_str(&object_name(item)?);
                    out.push('\n');
                }
            } else {
                out.push_str(&object_name(obj)?);
                out.push('\n');
            }
            Ok(out)
        }
        Format::JsonPath { template, as_json } => {
            jsonpath::execute(template, obj, *as_json, flags.allow_missing_template_keys)
        }
        Format::GoTemplate(t) => template::execute(t, obj, flags.allow_missing_template_keys),
        Format::CustomColumns(spec) => custom_columns(spec, obj, false),
        Format::Default | Format::Wide => Ok(yaml::to_yaml(obj)),
    }
}

/// `-o custom-columns` over an object or each item of a list.
pub fn custom_columns(spec: &str, obj: &Value, no_headers: bool) -> Result<String> {
    let cols = columns::parse_spec(spec)?;
    let items: Vec<&Value> = if is_list(obj) {
        obj["items"].as_array().into_iter().flatten().collect()
    } else {
        vec![obj]
    };
    let mut t = table::TextTable::default();
    if !no_headers {
        t.push(cols.iter().map(|c| c.header.clone()).collect());
    }
    for item in items {
        t.push(columns::row(&cols, item)?);
    }
    Ok(t.render())
}

/// Prints one object (or a list) as `-o` asks; with no `-o` it prints YAML (kubectl's
/// verbs that print objects by default, like `create --dry-run=client -o yaml`, always
/// pass `-o`).
pub fn print_object(ctx: &Ctx, flags: &PrintFlags, obj: &Value) -> Result<()> {
    let format = flags.format(false)?;
    let text = render(flags, &format, obj)?;
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}

/// What a writing verb prints: `deployment.apps/nginx created` (plus ` (dry run)` or
/// ` (server dry run)`), or the object when `-o` is given (only its name for `-o name`).
pub fn print_operation(
    ctx: &Ctx,
    flags: &PrintFlags,
    obj: &Value,
    operation: &str,
    dry_run: DryRun,
) -> Result<()> {
    let format = flags.format(false)?;
    if format == Format::Default {
        let text = operation_line(obj, operation, dry_run)?;
        ctx.out().write_all(text.as_bytes())?;
        return Ok(());
    }
    print_object(ctx, flags, obj)
}

/// `kind.group/name operation (dry run)\n` for an object or each item of a list.
pub fn operation_line(obj: &Value, operation: &str, dry_run: DryRun) -> Result<String> {
    let mut out = String::new();
    let items: Vec<&Value> = if is_list(obj) {
        obj["items"].as_array().into_iter().flatten().collect()
    } else {
        vec![obj]
    };
    for item in items {
        out.push_str(&object_name(item)?);
        if !operation.is_empty() {
            out.push(' ');
            out.push_str(operation);
            out.push_str(dry_run.suffix());
        }
        out.push('\n');
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn flags(o: &str) -> PrintFlags {
        PrintFlags {
            output: Some(o.into()),
            allow_missing_template_keys: true,
            ..Default::default()
        }
    }

    #[test]
    fn formats() {
        assert_eq!(flags("json").format(false).unwrap(), Format::Json);
        assert_eq!(flags("wide").format(true).unwrap(), Format::Wide);
        let e = flags("wide").format(false).unwrap_err().to_string();
        assert_eq!(
            e,
            "error: unable to match a printer suitable for the output format \"wide\", allowed formats are: go-template,go-template-file,json,jsonpath,jsonpath-as-json,jsonpath-file,name,template,templatefile,yaml"
        );
        assert_eq!(
            flags("jsonpath").format(true).unwrap_err().to_string(),
            "error: template format specified but no template given"
        );
        let f = PrintFlags {
            template: Some("{{.a}}".into()),
            ..Default::default()
        };
        assert_eq!(f.format(true).unwrap(), Format::GoTemplate("{{.a}}".into()));
    }

    #[test]
    fn dry_run_values() {
        assert_eq!(
            DryRun::parse_with_warning("client").unwrap(),
            (DryRun::Client, None)
        );
        assert_eq!(
            DryRun::parse_with_warning("server").unwrap().0,
            DryRun::Server
        );
        let (d, w) = DryRun::parse_with_warning("true").unwrap();
        assert_eq!(d, DryRun::Client);
        assert_eq!(
            w.unwrap(),
            "--dry-run=true is deprecated (boolean value) and can be replaced with --dry-run=client."
        );
        assert_eq!(
            DryRun::parse_with_warning("unchanged").unwrap().0,
            DryRun::Client
        );
        assert_eq!(
            DryRun::parse_with_warning("bogus").unwrap_err(),
            "Invalid dry-run value (bogus). Must be \"none\", \"server\", or \"client\"."
        );
    }

    #[test]
    fn operation_lines() {
        let d =
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "nginx"}});
        assert_eq!(
            operation_line(&d, "created", DryRun::None).unwrap(),
            "deployment.apps/nginx created\n"
        );
        assert_eq!(
            operation_line(&d, "created", DryRun::Server).unwrap(),
            "deployment.apps/nginx created (server dry run)\n"
        );
        let p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}});
        assert_eq!(
            operation_line(&p, "labeled", DryRun::Client).unwrap(),
            "pod/x labeled (dry run)\n"
        );
        assert_eq!(
            render(&flags("name"), &Format::Name, &p).unwrap(),
            "pod/x\n"
        );
    }

    #[test]
    fn json_like_go() {
        let v = json!({"b": [], "a": {"x": "<&>"}});
        assert_eq!(
            to_json_pretty(&v),
            "{\n    \"a\": {\n        \"x\": \"\\u003c\\u0026\\u003e\"\n    },\n    \"b\": []\n}\n"
        );
        let mut m = json!({"metadata": {"name": "a", "managedFields": []}});
        omit_managed_fields(&mut m);
        assert_eq!(m, json!({"metadata": {"name": "a"}}));
    }
}
