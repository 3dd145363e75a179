//! `kubectl edit`: the objects are written to a temporary file with kubectl's comment
//! header, `$KUBE_EDITOR`/`$EDITOR`/`vi` is run on it, and the difference is sent as a
//! two-way strategic merge patch (built-in kinds) or a JSON merge patch (others). Invalid
//! edits re-open the file with the server's reasons in the header.

use std::io::Write;
use std::path::{Path, PathBuf};

use http::Method;
use serde_json::{Value, json};

use crate::cmd::targets::{self, FileFlags, Selection, Target};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{DryRun, PrintFlags, print_operation, to_json_pretty, yaml::to_yaml};
use crate::transport::Request;
use crate::twoway::{TwoWayError, builtin_schema, create_merge_patch, create_two_way};

const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

#[derive(clap::Args, Debug)]
pub struct Args {
    /// (RESOURCE/NAME | -f FILENAME).
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    /// Output the patch if the resource is edited.
    #[arg(long = "output-patch")]
    pub output_patch: bool,
    /// Defaults to the line ending native to your platform.
    #[arg(long = "windows-line-endings")]
    pub windows_line_endings: bool,
    /// Must be one of: strict (or true), warn, ignore (or false).
    #[arg(long, num_args = 0..=1, default_missing_value = "strict", require_equals = true)]
    pub validate: Option<String>,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager", default_value = "kubectl-edit")]
    pub field_manager: String,
    /// If true, the configuration of current object will be saved in its annotation.
    #[arg(long = "save-config")]
    pub save_config: bool,
    /// If specified, edit will operate on the subresource of the requested object.
    #[arg(long)]
    pub subresource: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
}

/// One reason shown in the header of a re-opened file.
#[derive(Debug, Clone, Default)]
pub struct Reason {
    pub head: String,
    pub other: Vec<String>,
}

/// kubectl's `hashOnLineBreak`.
fn hash_on_line_break(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut r = String::new();
    for (i, ch) in chars.iter().enumerate() {
        if *ch == '\n' && chars.get(i + 1).is_some_and(|c| *c != '#') {
            r.push_str("\n# ");
        } else {
            r.push(*ch);
        }
    }
    r
}

/// The comment header of the edited file (pure).
pub fn header(reasons: &[Reason]) -> String {
    let mut h = String::from(
        "# Please edit the object below. Lines beginning with a '#' will be ignored,\n# and an empty file will abort the edit. If an error occurs while saving this file will be\n# reopened with the relevant failures.\n#\n",
    );
    for r in reasons {
        if r.other.is_empty() {
            h.push_str(&format!("# {}\n", hash_on_line_break(&r.head)));
        } else {
            h.push_str(&format!("# {}:\n", hash_on_line_break(&r.head)));
        }
        for o in &r.other {
            h.push_str(&format!("# * {}\n", hash_on_line_break(o)));
        }
        h.push_str("#\n");
    }
    h
}

/// kubectl's `ManualStrip`: drops comment lines (pure).
pub fn manual_strip(text: &str) -> String {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut out = String::new();
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim();
        if t.starts_with('#') && !t.starts_with("#!") {
            continue;
        }
        out.push_str(line);
        if i < lines.len() - 1 {
            out.push('\n');
        }
    }
    out
}

/// kubectl's `StripComments`: the document as data when it parses, else without comments
/// (pure).
fn stripped(text: &str) -> String {
    let mut docs = Vec::new();
    match targets::parse_documents(text, "edited-file", &mut docs) {
        Ok(()) => Value::Array(docs).to_string(),
        Err(_) => manual_strip(text),
    }
}

/// Whether the file has a line that is neither empty nor a comment (pure).
pub fn has_lines(text: &str) -> bool {
    text.lines().any(|l| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    })
}

/// kubectl's last-applied annotation for `--save-config`: the object without the
/// annotation, as JSON (pure).
pub fn with_last_applied(obj: &Value) -> Value {
    // kubectl's `GetModifiedConfiguration`: the annotations map without the annotation
    // (kept, even empty), serialized, then set as the annotation.
    let mut out = obj.clone();
    if !out["metadata"].is_object() {
        out["metadata"] = json!({});
    }
    let mut annotations = out["metadata"]["annotations"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    annotations.remove(LAST_APPLIED);
    out["metadata"]["annotations"] = Value::Object(annotations);
    let text = format!("{}\n", crate::output::to_json_compact(&out));
    out["metadata"]["annotations"][LAST_APPLIED] = Value::String(text);
    out
}

/// The patch `edit` sends for one object: `(content type, patch)` (pure).
pub fn edit_patch(original: &Value, edited: &Value) -> Result<(&'static str, Value)> {
    let changed = || CliError::msg("At least one of apiVersion, kind and name was changed");
    let api_version = edited["apiVersion"].as_str().unwrap_or_default();
    let kind = edited["kind"].as_str().unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    match builtin_schema(group, version, kind) {
        Some(schema) => match create_two_way(original, edited, &schema, api::schema::builtin()) {
            Ok(p) => Ok(("application/strategic-merge-patch+json", p)),
            Err(TwoWayError::PreconditionFailed) => Err(changed()),
            Err(TwoWayError::Other(m)) => Err(CliError::msg(m)),
        },
        None => {
            let p = create_merge_patch(original, edited);
            let touched = ["apiVersion", "kind", "managedFields"]
                .iter()
                .any(|k| p.get(*k).is_some())
                || p.pointer("/metadata/name").is_some();
            if touched {
                return Err(changed());
            }
            Ok(("application/merge-patch+json", p))
        }
    }
}

fn editor_command() -> (String, Vec<String>, bool) {
    let editor = ["KUBE_EDITOR", "EDITOR"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
        .unwrap_or_else(|| "vi".to_string());
    if !editor.contains(' ') {
        return (editor, Vec::new(), false);
    }
    if !editor.contains(['"', '\'', '\\']) {
        let mut parts = editor.split(' ').map(str::to_string);
        let prog = parts.next().unwrap_or_default();
        return (prog, parts.collect(), false);
    }
    let shell = std::env::var("SHELL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "/bin/bash".into());
    (shell, vec!["-c".into(), editor], true)
}

fn launch_editor(path: &Path) -> Result<()> {
    let (prog, mut args, shell) = editor_command();
    let abs = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    if shell {
        if let Some(last) = args.last_mut() {
            *last = format!("{last} {:?}", abs.display().to_string());
        }
    } else {
        args.push(abs.display().to_string());
    }
    let status = std::process::Command::new(&prog)
        .args(&args)
        .stdin(std::process::Stdio::inherit())
        .stdout(std::process::Stdio::inherit())
        .stderr(std::process::Stdio::inherit())
        .status()
        .map_err(|e| {
            CliError::msg(format!(
                "unable to launch the editor \"{}\": {e}",
                std::iter::once(prog.clone())
                    .chain(args.clone())
                    .collect::<Vec<_>>()
                    .join(" ")
            ))
        })?;
    if !status.success() {
        return Err(CliError::msg(format!(
            "there was a problem with the editor \"{}\"",
            std::iter::once(prog)
                .chain(args)
                .collect::<Vec<_>>()
                .join(" ")
        )));
    }
    Ok(())
}

fn temp_file(ext: &str, content: &str) -> Result<PathBuf> {
    let dir = std::env::temp_dir();
    for i in 0..1000u32 {
        let n = std::process::id() as u64 * 1000
            + u64::from(i)
            + std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos() as u64)
                .unwrap_or(0);
        let p = dir.join(format!("kubectl-edit-{n}{ext}"));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
        {
            f.write_all(content.as_bytes())?;
            return Ok(p);
        }
    }
    Err(CliError::msg("cannot create a temporary file"))
}

fn preserved(ctx: &Ctx, err: CliError, path: Option<&Path>) -> CliError {
    if let Some(p) = path
        && p.exists()
    {
        let _ = writeln!(
            ctx.err(),
            "A copy of your changes has been stored to \"{}\"",
            p.display()
        );
    }
    err
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let json_format = match args.print.output.as_deref() {
        Some("json") => true,
        Some("yaml") | None | Some("") => false,
        Some(_) => {
            args.print.format(false)?;
            false
        }
    };
    let sel = Selection {
        args: &args.args,
        files: Some(&args.files),
        all: true,
        fetch: true,
        require_names: false,
        ..Selection::default()
    };
    let found = targets::find(ctx, &sel).await?;
    if !found.errors.is_empty() {
        return targets::finish(ctx, found.errors);
    }
    let mut originals: Vec<Target> = found.targets;
    if let Some(sub) = &args.subresource {
        let client = ctx.client().await?;
        for t in &mut originals {
            t.object = Some(client.get_json(&format!("{}/{sub}", t.path())).await?);
        }
    }
    if originals.is_empty() {
        return Err(CliError::msg("edit cancelled, no objects found"));
    }
    // The editor never shows managedFields; they are kept aside per UID and put back on
    // both sides before the patch is computed (kubectl's `restoreManagedFields`).
    let mut shown: Vec<Value> = Vec::new();
    let mut managed: Vec<(String, Value)> = Vec::new();
    for t in &mut originals {
        let mut o = t.object.clone().unwrap_or(Value::Null);
        if let Some(m) = o["metadata"].as_object_mut()
            && let Some(mf) = m.remove("managedFields")
        {
            let uid = m.get("uid").and_then(Value::as_str).unwrap_or_default();
            managed.push((uid.to_string(), mf));
        }
        shown.push(o);
    }
    let restore = |obj: &mut Value| {
        let uid = obj["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if let Some((_, mf)) = managed.iter().find(|(u, _)| *u == uid)
            && obj["metadata"].is_object()
        {
            obj["metadata"]["managedFields"] = mf.clone();
        }
    };
    let original_doc = if shown.len() == 1 {
        shown[0].clone()
    } else {
        json!({"apiVersion": "v1", "items": shown, "kind": "List", "metadata": {}})
    };
    let (ext, body) = if json_format {
        (".json", to_json_pretty(&original_doc))
    } else {
        (".yaml", to_yaml(&original_doc))
    };
    let original_text = if json_format {
        body.clone()
    } else {
        format!("{}{body}", header(&[]))
    };

    let mut reasons: Vec<Reason> = Vec::new();
    let mut edited = String::new();
    let mut contains_error = false;
    let mut results_file: Option<PathBuf> = None;
    loop {
        let mut buf = if json_format {
            String::new()
        } else {
            header(&reasons)
        };
        if contains_error {
            buf.push_str(&manual_strip(&edited));
        } else {
            buf.push_str(&body);
        }
        if args.windows_line_endings {
            buf = buf.replace('\n', "\r\n");
        }
        let file = temp_file(ext, &buf)?;
        if let Err(e) = launch_editor(&file) {
            return Err(preserved(ctx, e, results_file.as_deref()));
        }
        let previous = std::mem::take(&mut edited);
        edited = std::fs::read_to_string(&file)
            .map_err(|e| preserved(ctx, CliError::from(e), Some(&file)))?
            .replace("\r\n", "\n");
        if contains_error && stripped(&previous) == stripped(&edited) {
            return Err(preserved(
                ctx,
                CliError::msg("Edit cancelled, no valid changes were saved."),
                Some(&file),
            ));
        }
        if let Some(old) = results_file.take() {
            let _ = std::fs::remove_file(old);
        }
        if stripped(&original_text) == stripped(&edited) {
            let _ = std::fs::remove_file(&file);
            let _ = writeln!(ctx.err(), "Edit cancelled, no changes made.");
            return Ok(());
        }
        if !has_lines(&edited) {
            let _ = std::fs::remove_file(&file);
            let _ = writeln!(ctx.err(), "Edit cancelled, saved file was empty.");
            return Ok(());
        }
        results_file = Some(file.clone());
        reasons.clear();
        let mut docs = Vec::new();
        if let Err(e) = targets::parse_documents(&edited, "edited-file", &mut docs) {
            contains_error = true;
            let msg = e.to_string();
            let msg = msg.trim_start_matches("error: ");
            reasons.push(Reason {
                head: format!("The edited file had a syntax error: {msg}"),
                other: Vec::new(),
            });
            continue;
        }
        let mut retryable = 0;
        let mut notfound = 0;
        let mut to_edit = 0;
        for mut doc in docs {
            let uid = doc["metadata"]["uid"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            let Some(orig) = originals.iter().find(|t| {
                t.object
                    .as_ref()
                    .and_then(|o| o["metadata"]["uid"].as_str())
                    == Some(uid.as_str())
            }) else {
                return Err(preserved(
                    ctx,
                    CliError::msg(format!("no original object found for {doc}")),
                    Some(&file),
                ));
            };
            let original = orig.object.clone().unwrap_or(Value::Null);
            restore(&mut doc);
            if args.save_config {
                doc = with_last_applied(&doc);
            }
            if original == doc {
                print_operation(ctx, &args.print, &doc, "skipped", DryRun::None)?;
                continue;
            }
            let (ct, patch) =
                edit_patch(&original, &doc).map_err(|e| preserved(ctx, e, Some(&file)))?;
            if args.output_patch {
                let _ = writeln!(ctx.out(), "Patch: {patch}");
            }
            let mut path = orig.path();
            if let Some(sub) = &args.subresource {
                path = format!("{path}/{sub}");
            }
            let url = format!(
                "{path}?fieldManager={}",
                targets::query_escape(&args.field_manager)
            );
            let req = Request::new(Method::PATCH, url)
                .json(&patch)
                .content_type(ct);
            let resource = orig.mapping.group_resource();
            let name = &orig.name;
            let result = async { ctx.client().await?.send(req).await?.json() }.await;
            match result {
                Ok(obj) => print_operation(ctx, &args.print, &obj, "edited", DryRun::None)?,
                Err(CliError::Api(s)) if s.code == 422 || s.reason == "Invalid" => {
                    to_edit += 1;
                    let other = s.status["details"]["causes"]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|c| {
                            format!(
                                "{}: {}",
                                c["field"].as_str().unwrap_or_default(),
                                c["message"].as_str().unwrap_or_default()
                            )
                        })
                        .collect();
                    reasons.push(Reason {
                        head: format!("{resource} \"{name}\" was not valid"),
                        other,
                    });
                    let _ = writeln!(ctx.err(), "error: {resource} \"{name}\" is invalid");
                }
                Err(e) if e.is_not_found() => {
                    notfound += 1;
                    let _ = writeln!(
                        ctx.err(),
                        "error: {resource} \"{name}\" could not be found on the server"
                    );
                }
                Err(e) => {
                    retryable += 1;
                    let msg = match &e {
                        CliError::Api(s) => s.message.clone(),
                        other => other.to_string(),
                    };
                    let _ = writeln!(
                        ctx.err(),
                        "error: {resource} \"{name}\" could not be patched: {msg}"
                    );
                }
            }
        }
        if retryable > 0 {
            let _ = writeln!(
                ctx.err(),
                "You can run `kubectl replace -f {}` to try this update again.",
                file.display()
            );
            return Err(CliError::Exit(1));
        }
        if notfound > 0 {
            let _ = writeln!(
                ctx.err(),
                "The edits you made on deleted resources have been saved to \"{}\"",
                file.display()
            );
            return Err(CliError::Exit(1));
        }
        if to_edit == 0 {
            let _ = std::fs::remove_file(&file);
            return Ok(());
        }
        contains_error = true;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_with_reasons() {
        let h = header(&[Reason {
            head: "deployments.apps \"x\" was not valid".into(),
            other: vec![
                "spec.replicas: Invalid value: -1: must be greater than or equal to 0".into(),
            ],
        }]);
        assert!(h.starts_with("# Please edit the object below."));
        assert!(h.ends_with(
            "#\n# deployments.apps \"x\" was not valid:\n# * spec.replicas: Invalid value: -1: must be greater than or equal to 0\n#\n"
        ));
    }

    #[test]
    fn strip_and_lines() {
        assert_eq!(manual_strip("# a\nb: 1\n  # c\n#!x\n"), "b: 1\n#!x\n");
        assert!(!has_lines("# x\n\n   \n"));
        assert!(has_lines("# x\na: b\n"));
        assert_eq!(stripped("# h\na: 1\n"), stripped("a: 1 # c\n"));
    }

    #[test]
    fn patches_by_kind() {
        let o = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c","uid":"u"},"data":{"a":"1"}});
        let mut e = o.clone();
        e["data"]["a"] = json!("2");
        let (ct, p) = edit_patch(&o, &e).unwrap();
        assert_eq!(ct, "application/strategic-merge-patch+json");
        assert_eq!(p, json!({"data":{"a":"2"}}));
        let crd = json!({"apiVersion":"example.com/v1","kind":"Thing","metadata":{"name":"c"},"spec":{"l":[1,2]}});
        let mut e = crd.clone();
        e["spec"]["l"] = json!([1]);
        let (ct, p) = edit_patch(&crd, &e).unwrap();
        assert_eq!(ct, "application/merge-patch+json");
        assert_eq!(p, json!({"spec":{"l":[1]}}));
        let mut renamed = crd.clone();
        renamed["metadata"]["name"] = json!("d");
        assert_eq!(
            edit_patch(&crd, &renamed).unwrap_err().to_string(),
            "error: At least one of apiVersion, kind and name was changed"
        );
    }

    #[test]
    fn save_config_annotation() {
        let o = json!({"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}});
        let a = with_last_applied(&o);
        assert_eq!(
            a["metadata"]["annotations"][LAST_APPLIED],
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{},\"name\":\"c\"}}\n"
        );
    }
}
