//! `kubectl explain`: a resource's (or field's) documentation from the server's OpenAPI v3
//! document of its group-version, rendered as kubectl 1.33's `plaintext` template
//! (`pkg/explain/v2/templates/plaintext.tmpl`): KIND/VERSION, FIELD, DESCRIPTION and
//! FIELDS (`--recursive`: the field tree). The `/openapi/v3` index is fetched each time; the
//! group-version document, whose URL carries its hash, comes from the HTTP cache when the
//! cached copy has that hash.

use std::collections::HashSet;
use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::discovery::{HttpCache, cache_root, split_group_version};
use crate::error::{CliError, Result};
use crate::mapper::Mapping;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Print the fields of fields (Currently only 1 level deep).
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub recursive: Option<bool>,
    /// Get different explanations for particular API version (API group/version).
    #[arg(long = "api-version")]
    pub api_version: Option<String>,
    /// Format in which to render the schema (plaintext, plaintext-openapiv2).
    #[arg(short = 'o', long = "output", default_value = "plaintext")]
    pub output: String,
    pub resource: Vec<String>,
}

/// A JSON value's truth as Go templates see it (empty strings, maps, lists, 0, false and
/// nil are false).
fn truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
    }
}

fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    v.get(key).filter(|x| truthy(Some(x)))
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or_default()
}

/// `additionalProperties` when it is a (non-empty) schema rather than a boolean.
fn additional(v: &Value) -> Option<&Value> {
    get(v, "additionalProperties").filter(|a| !a.is_boolean())
}

/// mitchellh/go-wordwrap's `WrapString`: breaks lines at whitespace so they fit in `lim`
/// columns (a longer word stays whole).
pub fn wrap(s: &str, lim: usize) -> String {
    let mut buf = String::new();
    let mut current = 0usize;
    let mut word = String::new();
    let mut space = String::new();
    let (mut word_len, mut space_len) = (0usize, 0usize);
    for c in s.chars() {
        if c == '\n' {
            if word.is_empty() {
                if current + space_len <= lim {
                    buf.push_str(&space);
                }
            } else {
                buf.push_str(&space);
                buf.push_str(&word);
            }
            space.clear();
            word.clear();
            space_len = 0;
            word_len = 0;
            buf.push('\n');
            current = 0;
        } else if c.is_whitespace() && c != '\u{a0}' {
            if space.is_empty() || !word.is_empty() {
                current += space_len + word_len;
                buf.push_str(&space);
                buf.push_str(&word);
                space.clear();
                word.clear();
                space_len = 0;
                word_len = 0;
            }
            space.push(c);
            space_len += 1;
        } else {
            word.push(c);
            word_len += 1;
            if current + space_len + word_len > lim && word_len < lim {
                buf.push('\n');
                current = 0;
                space.clear();
                space_len = 0;
            }
        }
    }
    if word.is_empty() {
        if current + space_len <= lim {
            buf.push_str(&space);
        }
    } else {
        buf.push_str(&space);
        buf.push_str(&word);
    }
    buf
}

/// The template's `indent`: `n` spaces before the text and after each newline.
fn indent(n: usize, s: &str) -> String {
    let pad = " ".repeat(n);
    format!("{pad}{}", s.replace('\n', &format!("\n{pad}")))
}

/// Go's `%v` of a JSON value inside the template.
fn go_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<nil>".into(),
        Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i64),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            let parts: Vec<String> = keys
                .iter()
                .map(|k| format!("{k}:{}", go_value(&m[k.as_str()])))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
        Value::Array(a) => format!("[{}]", a.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Bool(b) => b.to_string(),
    }
}

/// The renderer of the plaintext template over one OpenAPI v3 document.
pub struct Explainer<'a> {
    doc: &'a Value,
}

impl<'a> Explainer<'a> {
    pub fn new(doc: &'a Value) -> Self {
        Explainer { doc }
    }

    /// The template's `resolveRef`: a `#/…` reference followed through the document's maps.
    fn resolve_ref(&self, reference: &str) -> Option<&'a Value> {
        let fragment = reference.strip_prefix('#')?;
        let mut cur = self.doc;
        for k in fragment.split('/').filter(|k| !k.is_empty()) {
            cur = cur.get(k).filter(|v| v.is_object())?;
        }
        cur.is_object().then_some(cur)
    }

    /// `or (resolveRef $ref) schema`.
    fn resolved(&self, schema: &'a Value) -> &'a Value {
        self.resolve_ref(str_of(schema, "$ref"))
            .filter(|r| truthy(Some(r)))
            .unwrap_or(schema)
    }

    /// The template `typeGuess`.
    fn type_guess(&self, schema: &Value) -> String {
        if !truthy(Some(schema)) {
            return "Object".into();
        }
        if let Some(items) = get(schema, "items") {
            return format!("[]{}", self.type_guess(items));
        }
        if let Some(ap) = additional(schema) {
            return format!("map[string]{}", self.type_guess(ap));
        }
        if let Some(all) = get(schema, "allOf").and_then(Value::as_array)
            && !truthy(schema.get("properties"))
            && all.len() == 1
        {
            return self.type_guess(&all[0]);
        }
        let reference = str_of(schema, "$ref");
        if !reference.is_empty() {
            let target = self.resolve_ref(reference).filter(|t| truthy(Some(t)));
            let ty = target.and_then(|t| get(t, "type"));
            return match ty {
                Some(t) if t.as_str() != Some("object") => go_value(t),
                _ => {
                    let name = reference.rsplit('/').next().unwrap_or_default();
                    let short = name.rsplit('.').next().unwrap_or_default();
                    if short.is_empty() {
                        "Object".into()
                    } else {
                        short.to_string()
                    }
                }
            };
        }
        match get(schema, "type") {
            Some(Value::String(t)) if t == "object" => "Object".into(),
            Some(t) => go_value(t),
            None => "Object".into(),
        }
    }

    /// The template `extractEnum`.
    fn extract_enum(&self, schema: &Value, long: bool, limit: i64, indent_amount: usize) -> String {
        let Some(values) = get(schema, "enum").and_then(Value::as_array) else {
            return String::new();
        };
        let limit = if limit == 0 { -1 } else { limit };
        let mut out = if long {
            "ENUM:".to_string()
        } else {
            format!("\n{}enum: ", " ".repeat(indent_amount))
        };
        for (i, e) in values.iter().enumerate() {
            if limit > -1 && i as i64 >= limit {
                out.push_str(", ....");
                break;
            }
            if i > 0 && !long {
                out.push_str(", ");
            } else if long {
                out.push_str("\n    ");
            }
            if e.as_str() == Some("") {
                out.push_str("\"\"");
            } else {
                out.push_str(&go_value(e));
            }
        }
        out
    }

    /// The template `description`: the schema's description and those of its `allOf`,
    /// `items` and `additionalProperties`, each followed by a newline.
    fn description(&self, schema: &'a Value) -> String {
        let r = self.resolved(schema);
        if !truthy(Some(r)) {
            return String::new();
        }
        let mut s = String::new();
        if let Some(d) = get(r, "description") {
            s.push_str(&go_value(d));
            s.push('\n');
        }
        for a in r
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            s.push_str(&self.description(a));
        }
        if let Some(items) = get(r, "items") {
            s.push_str(&self.description(items));
        }
        if let Some(ap) = additional(r) {
            s.push_str(&self.description(ap));
        }
        s
    }

    /// The template `fieldDetail`.
    fn field_detail(&self, name: &str, parent: &Value, short: bool, level: usize) -> String {
        let ind = level * 2;
        let field = parent
            .get("properties")
            .and_then(|p| p.get(name))
            .unwrap_or(&Value::Null);
        let mut out = format!("{}\t<{}>", indent(ind, name), self.type_guess(field));
        let required = parent
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)));
        if required {
            out.push_str(" -required-");
        }
        out.push_str(&self.extract_enum(field, false, 4, ind));
        out.push('\n');
        if !short {
            let d = get(field, "description")
                .map(go_value)
                .unwrap_or_else(|| "<no description>".into());
            out.push_str(&indent(ind + 2, &wrap(&d, 78usize.saturating_sub(ind))));
            out.push_str("\n\n");
        }
        out
    }

    /// The template `fieldList`.
    fn field_list(
        &self,
        schema: &'a Value,
        level: usize,
        history: &HashSet<String>,
        recursive: bool,
    ) -> String {
        let reference = str_of(schema, "$ref");
        if !reference.is_empty() && history.contains(reference) {
            return String::new();
        }
        let mut next = history.clone();
        next.insert(reference.to_string());
        let r = self.resolved(schema);
        let mut out = String::new();
        if let Some(props) = r.get("properties").and_then(Value::as_object) {
            let mut keys: Vec<&String> = props.keys().collect();
            keys.sort();
            for k in keys {
                out.push_str(&self.field_detail(k, r, recursive, level));
                if recursive {
                    out.push_str(&self.field_list(&props[k.as_str()], level + 1, &next, recursive));
                }
            }
        }
        for a in r
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            out.push_str(&self.field_list(a, level, &next, recursive));
        }
        if let Some(items) = get(r, "items") {
            out.push_str(&self.field_list(items, level, &next, recursive));
        }
        if let Some(ap) = additional(r) {
            out.push_str(&self.field_list(ap, level, &next, recursive));
        }
        out
    }

    /// The template `output`: follows the field path, then prints FIELD (for the last
    /// step), DESCRIPTION and FIELDS. Empty when the path leads nowhere.
    fn output(
        &self,
        schema: &'a Value,
        history: &HashSet<String>,
        path: &[String],
        recursive: bool,
    ) -> String {
        let reference = str_of(schema, "$ref");
        let mut next = history.clone();
        next.insert(reference.to_string());
        let r = self.resolved(schema);
        let mut out = String::new();
        if path.is_empty() {
            out.push_str("DESCRIPTION:\n");
            let d = self.description(r);
            let d = if d.is_empty() {
                "<empty>".to_string()
            } else {
                d
            };
            out.push_str(&indent(4, &wrap(&d, 76)));
            out.push('\n');
            let fields = self.field_list(r, 1, &HashSet::new(), recursive);
            if !fields.is_empty() {
                out.push_str("FIELDS:\n");
                out.push_str(&fields);
            }
        } else if !reference.is_empty() && history.contains(reference) {
            // A cycle.
        } else if let Some(sub) = get(r, "properties").and_then(|p| get(p, &path[0])) {
            if path.len() == 1 {
                out.push_str(&format!("FIELD: {} <{}>\n", path[0], self.type_guess(sub)));
                out.push_str(&self.extract_enum(sub, true, -1, 0));
                out.push_str("\n\n");
            }
            out.push_str(&self.output(sub, &HashSet::new(), &path[1..], recursive));
        } else if let Some(items) = get(r, "items") {
            out.push_str(&self.output(items, &next, path, recursive));
        } else if let Some(ap) = additional(r) {
            out.push_str(&self.output(ap, &next, path, recursive));
        } else {
            for a in r
                .get("allOf")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let o = self.output(a, &next, path, recursive);
                if !o.is_empty() {
                    out.push_str(&o);
                    break;
                }
            }
        }
        out
    }

    /// The whole template for a group-version-resource and a field path: the text, and the
    /// error (kubectl's wording, with its `error: ` prefix) that ended it early, if any.
    pub fn render(
        &self,
        gvr: &Mapping,
        path: &[String],
        recursive: bool,
    ) -> (String, Option<String>) {
        let prefix = if gvr.group.is_empty() {
            "/api".to_string()
        } else {
            format!("/apis/{}", gvr.group)
        };
        let (v, r) = (&gvr.version, &gvr.resource);
        let searches = [
            format!("{prefix}/{v}/{r}"),
            format!("{prefix}/{v}/{r}/{{name}}"),
            format!("{prefix}/{v}/namespaces/{{namespace}}/{r}"),
            format!("{prefix}/{v}/namespaces/{{namespace}}/{r}/{{name}}"),
        ];
        let mut gvk: Option<&Value> = None;
        for p in &searches {
            let Some(element) = self.doc.get("paths").and_then(|ps| get(ps, p)) else {
                continue;
            };
            for method in ["get", "post", "put", "patch", "delete"] {
                if let Some(op) = get(element, method) {
                    gvk = op.get("x-kubernetes-group-version-kind");
                    if truthy(gvk) {
                        break;
                    }
                }
            }
        }
        let Some(gvk) = gvk.filter(|g| truthy(Some(g))) else {
            return (
                String::new(),
                Some(format!(
                    "error: GVR ({}/{}, Resource={}) not found in OpenAPI schema",
                    gvr.group, gvr.version, gvr.resource
                )),
            );
        };
        let mut out = String::new();
        if let Some(g) = get(gvk, "group") {
            out.push_str(&format!("GROUP:      {}\n", go_value(g)));
        }
        out.push_str(&format!(
            "KIND:       {}\nVERSION:    {}\n\n",
            go_value(gvk.get("kind").unwrap_or(&Value::Null)),
            go_value(gvk.get("version").unwrap_or(&Value::Null)),
        ));
        let schemas = self
            .doc
            .get("components")
            .and_then(|c| c.get("schemas"))
            .and_then(Value::as_object);
        let mut names: Vec<&String> = schemas.map(|s| s.keys().collect()).unwrap_or_default();
        names.sort();
        for name in names {
            let Some(schema) = schemas.and_then(|s| s.get(name.as_str())) else {
                continue;
            };
            let matches = schema
                .get("x-kubernetes-group-version-kind")
                .and_then(Value::as_array)
                .is_some_and(|l| l.iter().any(|x| x == gvk));
            if !matches {
                continue;
            }
            let body = self.output(schema, &HashSet::new(), path, recursive);
            if body.is_empty() {
                let field = path.last().cloned().unwrap_or_default();
                return (
                    out,
                    Some(format!("error: field \"{field}\" does not exist")),
                );
            }
            out.push_str(&body);
            out.push('\n');
            return (out, None);
        }
        (
            out,
            Some(format!(
                "error: GVK {} not found in OpenAPI schema",
                go_value(gvk)
            )),
        )
    }
}

/// kubectl's `SplitAndParseResourceRequestWithMatchingPrefix`: the resource (the first
/// match whose `resource.group` prefixes the argument, else the highest-priority one) and
/// the field path after it.
pub fn split_request(arg: &str, candidates: &[Mapping]) -> Option<(Mapping, Vec<String>)> {
    let arg = arg.strip_suffix('.').unwrap_or(arg);
    let fields = |s: &str| -> Vec<String> {
        s.split('.')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect()
    };
    for m in candidates {
        let gr = m.group_resource();
        if let Some(rest) = arg.strip_prefix(&gr) {
            return Some((m.clone(), fields(rest)));
        }
    }
    let first = candidates.first()?;
    let rest = arg.split_once('.').map(|(_, r)| r).unwrap_or("");
    Some((first.clone(), fields(rest)))
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    if args.resource.is_empty() {
        return Err(CliError::msg(
            "You must specify the type of resource to explain. Use \"kubectl api-resources\" for a complete list of supported resources.",
        ));
    }
    if args.resource.len() > 1 {
        return Err(CliError::msg(
            "We accept only this format: explain RESOURCE",
        ));
    }
    if args.output != "plaintext" {
        return Err(CliError::msg(format!(
            "unsupported output format: {}; only plaintext is built",
            args.output
        )));
    }
    let arg = &args.resource[0];
    let mapper = ctx.mapper().await?;
    let name = arg.split('.').next().unwrap_or_default();
    let mut candidates = mapper.resources_for(name);
    if candidates.is_empty() && mapper.refresh(ctx).await? {
        candidates = mapper.resources_for(name);
    }
    {
        let warnings = mapper.resolve_with_warnings(name).1;
        let mut err = ctx.err();
        for w in warnings {
            let _ = writeln!(err, "Warning: {w}");
        }
    }
    let not_found = || {
        let _ = writeln!(
            ctx.err(),
            "the server doesn't have a resource type \"{name}\""
        );
        CliError::Exit(1)
    };
    let (mut gvr, fields) = match &args.api_version {
        None => split_request(arg, &candidates).ok_or_else(not_found)?,
        Some(_) => {
            let first = candidates.first().cloned().ok_or_else(not_found)?;
            let fields = arg
                .split('.')
                .skip(1)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
            (first, fields)
        }
    };
    if let Some(av) = &args.api_version {
        let (g, v) = split_group_version(av);
        gvr.group = g.to_string();
        gvr.version = v.to_string();
    }
    let client = ctx.client().await?;
    let cache = HttpCache::new(&cache_root(ctx.global.cache_dir.as_deref()));
    let index_bytes = cache
        .fetch(client, "/openapi/v3?timeout=32s", "application/json, */*")
        .await
        .map_err(|e| {
            CliError::msg(format!(
                "failed to fetch list of groupVersions: {}",
                plain(&e)
            ))
        })?;
    let index: Value = serde_json::from_slice(&index_bytes)
        .map_err(|e| CliError::msg(format!("failed to fetch list of groupVersions: {e}")))?;
    let resource_path = if gvr.group.is_empty() {
        format!("api/{}", gvr.version)
    } else {
        format!("apis/{}/{}", gvr.group, gvr.version)
    };
    let Some(url) = index
        .get("paths")
        .and_then(|p| p.get(&resource_path))
        .and_then(|p| p.get("serverRelativeURL"))
        .and_then(Value::as_str)
    else {
        return Err(CliError::msg(format!(
            "couldn't find resource for \"{}/{}, Resource={}\"",
            gvr.group, gvr.version, gvr.resource
        )));
    };
    let sep = if url.contains('?') { '&' } else { '?' };
    let doc_bytes = cache
        .fetch(
            client,
            &format!("{url}{sep}timeout=32s"),
            "application/json",
        )
        .await
        .map_err(|e| {
            CliError::msg(format!(
                "failed to fetch openapi schema for {resource_path}: {}",
                plain(&e)
            ))
        })?;
    let doc: Value = serde_json::from_slice(&doc_bytes).map_err(|e| {
        CliError::msg(format!(
            "failed to parse openapi schema for {resource_path}: {e}"
        ))
    })?;
    let (text, err) = Explainer::new(&doc).render(&gvr, &fields, args.recursive.unwrap_or(false));
    ctx.out().write_all(text.as_bytes())?;
    match err {
        None => Ok(()),
        Some(e) => Err(CliError::msg(e.strip_prefix("error: ").unwrap_or(&e))),
    }
}

/// An error's text without the `error: ` kubectl adds when printing.
fn plain(e: &CliError) -> String {
    let s = e.to_string();
    s.strip_prefix("error: ").map(str::to_string).unwrap_or(s)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn word_wrap_as_go_wordwrap() {
        assert_eq!(wrap("aaa bbb ccc", 7), "aaa bbb\nccc");
        assert_eq!(wrap("a verylongwordhere b", 5), "a\nverylongwordhere\nb");
        assert_eq!(wrap("line one\nline two\n", 76), "line one\nline two\n");
        assert_eq!(indent(4, "a\nb\n"), "    a\n    b\n    ");
    }

    fn doc() -> Value {
        json!({
            "paths": {
                "/apis/apps/v1/namespaces/{namespace}/widgets": {
                    "get": {"x-kubernetes-group-version-kind": {"group": "apps", "kind": "Widget", "version": "v1"}}
                }
            },
            "components": {"schemas": {
                "io.x.Widget": {
                    "description": "Widget is a thing.",
                    "type": "object",
                    "required": ["spec"],
                    "properties": {
                        "spec": {"description": "The spec.", "allOf": [{"$ref": "#/components/schemas/io.x.WidgetSpec"}]},
                        "kind": {"description": "Kind.", "type": "string"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                        "mode": {"type": "string", "enum": ["", "A", "B", "C", "D"]}
                    },
                    "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Widget", "version": "v1"}]
                },
                "io.x.WidgetSpec": {
                    "description": "WidgetSpec is the spec.",
                    "type": "object",
                    "properties": {
                        "size": {"description": "The size.", "type": "integer"},
                        "self": {"$ref": "#/components/schemas/io.x.WidgetSpec"},
                        "q": {"$ref": "#/components/schemas/io.x.Quantity"}
                    }
                },
                "io.x.Quantity": {"type": "string"}
            }}
        })
    }

    fn widgets() -> Mapping {
        Mapping {
            group: "apps".into(),
            version: "v1".into(),
            resource: "widgets".into(),
            kind: "Widget".into(),
            namespaced: true,
        }
    }

    #[test]
    fn renders_the_plaintext_template() {
        let d = doc();
        let e = Explainer::new(&d);
        let (text, err) = e.render(&widgets(), &[], false);
        assert!(err.is_none());
        assert_eq!(
            text,
            "GROUP:      apps\nKIND:       Widget\nVERSION:    v1\n\nDESCRIPTION:\n    Widget is a thing.\n    \nFIELDS:\n  \
             kind\t<string>\n    Kind.\n\n  \
             labels\t<map[string]string>\n    <no description>\n\n  \
             mode\t<string>\n  enum: \"\", A, B, C, ....\n    <no description>\n\n  \
             spec\t<WidgetSpec> -required-\n    The spec.\n\n  \
             tags\t<[]string>\n    <no description>\n\n\n"
        );
        let (text, err) = e.render(&widgets(), &["spec".into()], false);
        assert!(err.is_none());
        assert!(text.contains("FIELD: spec <WidgetSpec>\n\n\nDESCRIPTION:\n    The spec.\n    WidgetSpec is the spec.\n    \nFIELDS:\n  q\t<string>\n"), "{text}");
        let (text, _) = e.render(&widgets(), &["mode".into()], false);
        assert!(
            text.contains("FIELD: mode <string>\nENUM:\n    \"\"\n    A\n    B\n    C\n    D\n\n"),
            "{text}"
        );
        // Recursive: cycles stop.
        let (text, _) = e.render(&widgets(), &[], true);
        assert!(text.contains("  spec\t<WidgetSpec> -required-\n    q\t<string>\n    self\t<WidgetSpec>\n    size\t<integer>\n  tags\t<[]string>\n"), "{text}");
        let (text, err) = e.render(&widgets(), &["spec".into(), "nope".into()], false);
        assert_eq!(err.as_deref(), Some("error: field \"nope\" does not exist"));
        assert!(text.ends_with("VERSION:    v1\n\n"));
        let mut other = widgets();
        other.resource = "gadgets".into();
        assert_eq!(
            e.render(&other, &[], false).1.as_deref(),
            Some("error: GVR (apps/v1, Resource=gadgets) not found in OpenAPI schema")
        );
    }

    #[test]
    fn request_splitting() {
        let pods = Mapping {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            kind: "Pod".into(),
            namespaced: true,
        };
        let (m, f) = split_request("pods.spec.containers", std::slice::from_ref(&pods)).unwrap();
        assert_eq!(
            (m.resource.as_str(), f),
            ("pods", vec!["spec".to_string(), "containers".to_string()])
        );
        let (m, f) = split_request("widgets.apps.spec", &[widgets()]).unwrap();
        assert_eq!((m.group.as_str(), f), ("apps", vec!["spec".to_string()]));
        let (_, f) = split_request("wd.spec.size", &[widgets()]).unwrap();
        assert_eq!(f, vec!["spec", "size"]);
        assert!(split_request("x", &[]).is_none());
    }
}
