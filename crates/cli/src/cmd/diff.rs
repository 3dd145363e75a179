//! `kubectl diff -f`: the live objects against what applying the manifests would make of
//! them (a server-side dry run: the client-side apply patch, or an apply patch with
//! `--server-side`, or a create), written as YAML into `LIVE-*` and `MERGED-*` temporary
//! directories and compared with `diff -u -N` (or `$KUBECTL_EXTERNAL_DIFF`). Secrets'
//! values are masked as kubectl masks them. Exit status: 0 no differences, 1 differences,
//! more than 1 an error.

use std::path::Path;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::manifest::{self, FilenameArgs, Info, ServerSideFlags, ValidateFlag};
use crate::output;
use crate::transport::Request;

/// How many times an object that keeps changing is diffed (kubectl's `maxRetries`).
const MAX_RETRIES: usize = 4;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    #[command(flatten)]
    pub files: FilenameArgs,
    #[command(flatten)]
    pub validate: ValidateFlag,
    #[command(flatten)]
    pub apply: ServerSideFlags,
    /// If true, include managed fields in the diff.
    #[arg(long)]
    pub show_managed_fields: bool,
    /// If true, include Secret's data values in the diff.
    #[arg(long)]
    pub show_secrets: bool,
    /// Number of objects to process in parallel when diffing against the live version.
    #[arg(long, default_value_t = 1)]
    pub concurrency: u32,
    /// Include resources that would be deleted by pruning (not supported by rkube kubectl).
    #[arg(long)]
    pub prune: bool,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match run_inner(ctx, args).await {
        Ok(()) => Ok(()),
        // Differences found, or the diff program's own status.
        Err(CliError::Exit(code)) => Err(CliError::Exit(code)),
        // kubectl's CheckDiffErr: errors exit with 2 (kubectl's code plus one).
        Err(e) => {
            let text = e.to_string();
            if !text.is_empty() {
                use std::io::Write;
                let _ = writeln!(ctx.err(), "{text}");
            }
            Err(CliError::Exit(e.exit_code() + 1))
        }
    }
}

async fn run_inner(ctx: &Ctx, args: Args) -> Result<()> {
    args.files.check("diff")?;
    if args.prune {
        return Err(CliError::msg(
            "--prune is not supported by rkube kubectl diff",
        ));
    }
    let validation = args.validate.resolve()?;
    let field_manager = args.apply.field_manager();
    let items = manifest::load(ctx, &args.files, validation).await?;
    let mut pairs = Vec::new();
    let mut errors = Vec::new();
    for item in items {
        match item {
            Ok(info) => match live_and_merged(ctx, &args, &info, &field_manager).await {
                Ok(pair) => pairs.push((file_name(&info), pair)),
                Err(e) => errors.push(e),
            },
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        return Err(aggregate(errors));
    }
    let live_dir = TempDir::new("LIVE")?;
    let merged_dir = TempDir::new("MERGED")?;
    for (name, (live, merged)) in pairs {
        let (live, merged) = prepare(live, merged, args.show_managed_fields, args.show_secrets);
        write_yaml(&live_dir.0.join(&name), live.as_ref())?;
        write_yaml(&merged_dir.0.join(&name), merged.as_ref())?;
    }
    run_diff(ctx, &live_dir.0, &merged_dir.0).await
}

/// Several errors as one (printed on their own lines).
fn aggregate(errors: Vec<CliError>) -> CliError {
    if errors.len() == 1 {
        return errors.into_iter().next().unwrap_or(CliError::Exit(1));
    }
    CliError::Raw(
        errors
            .iter()
            .map(manifest::aggregate_text)
            .collect::<Vec<_>>()
            .join("\n"),
    )
}

/// kubectl's file name of an object in the diff directories:
/// `[group.]version.Kind.namespace.name`.
pub fn file_name(info: &Info) -> String {
    let m = &info.mapping;
    let group = if m.group.is_empty() {
        String::new()
    } else {
        format!("{}.", m.group)
    };
    format!(
        "{group}{}.{}.{}.{}",
        m.version,
        m.kind,
        info.namespace.clone().unwrap_or_default(),
        info.name
    )
}

/// The live object (if any) and what the server would make of the manifest.
async fn live_and_merged(
    ctx: &Ctx,
    args: &Args,
    info: &Info,
    field_manager: &str,
) -> Result<(Option<Value>, Option<Value>)> {
    let client = ctx.client().await?;
    let mut last_err = None;
    for attempt in 1..=MAX_RETRIES {
        let live = match client.get_json(&info.path()).await {
            Ok(v) => Some(v),
            Err(e) if e.is_not_found() => None,
            Err(e) => return Err(e),
        };
        let force = attempt == MAX_RETRIES;
        match merged(ctx, args, info, field_manager, live.as_ref(), force).await {
            Ok(m) => return Ok((live, Some(m))),
            Err(e) if e.status_code() == Some(409) && !args.apply.server_side => last_err = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(last_err.unwrap_or(CliError::Exit(1)))
}

async fn merged(
    ctx: &Ctx,
    args: &Args,
    info: &Info,
    field_manager: &str,
    live: Option<&Value>,
    force: bool,
) -> Result<Value> {
    let client = ctx.client().await?;
    let fm = crate::resource::encode(field_manager);
    if args.apply.server_side {
        let path = format!(
            "{}?dryRun=All&fieldManager={fm}&force={}",
            info.path(),
            args.apply.force_conflicts
        );
        let mut req =
            Request::new(http::Method::PATCH, path).content_type("application/apply-patch+yaml");
        req.body = Some(api::gofmt::json(&info.object).into_bytes());
        return client.send(req).await?.json();
    }
    let Some(live) = live else {
        let path = format!("{}?dryRun=All&fieldManager={fm}", info.collection_path());
        return client
            .send(Request::new(http::Method::POST, path).json(&info.object))
            .await?
            .json();
    };
    let (modified, _) = manifest::modified_configuration(&info.object, false);
    let modified: Value = serde_json::from_str(&modified).unwrap_or(Value::Null);
    let (mut patch, patch_type) = super::apply::compute_patch(info, &modified, live)?;
    if patch.as_object().is_some_and(|m| m.is_empty()) {
        return Ok(live.clone());
    }
    if !force
        && let Some(rv) = live.pointer("/metadata/resourceVersion").cloned()
        && let Some(p) = patch.as_object_mut()
    {
        let meta = p
            .entry("metadata")
            .or_insert_with(|| Value::Object(Default::default()));
        if let Some(m) = meta.as_object_mut() {
            m.insert("resourceVersion".into(), rv);
        }
    }
    let path = format!("{}?dryRun=All&fieldManager={fm}", info.path());
    let mut req = Request::new(http::Method::PATCH, path).content_type(patch_type);
    req.body = Some(api::gofmt::json(&patch).into_bytes());
    client.send(req).await?.json()
}

/// Drops managed fields and masks Secret data as kubectl does before writing the files.
pub fn prepare(
    live: Option<Value>,
    merged: Option<Value>,
    show_managed_fields: bool,
    show_secrets: bool,
) -> (Option<Value>, Option<Value>) {
    let strip = |v: Option<Value>| {
        v.map(|mut v| {
            if !show_managed_fields {
                output::omit_managed_fields(&mut v);
            }
            v
        })
    };
    let (mut live, mut merged) = (strip(live), strip(merged));
    let is_secret = merged.as_ref().is_some_and(|m| {
        m.get("apiVersion").and_then(Value::as_str) == Some("v1")
            && m.get("kind").and_then(Value::as_str) == Some("Secret")
    });
    if is_secret && !show_secrets {
        mask_secret(live.as_mut(), merged.as_mut());
    }
    (live, merged)
}

/// kubectl's `Masker`: every value of `data` becomes `***`, or `*** (before)` /
/// `*** (after)` where both sides have the key with different values.
fn mask_secret(from: Option<&mut Value>, to: Option<&mut Value>) {
    let mut empty_from = Value::Null;
    let mut empty_to = Value::Null;
    let from = from.unwrap_or(&mut empty_from);
    let to = to.unwrap_or(&mut empty_to);
    let from_data = from.get("data").and_then(Value::as_object).cloned();
    let to_data = to.get("data").and_then(Value::as_object).cloned();
    let mut f = from_data.clone().unwrap_or_default();
    let mut t = to_data.clone().unwrap_or_default();
    for (k, fv) in from_data.iter().flatten() {
        if let Some(tv) = to_data.as_ref().and_then(|d| d.get(k)) {
            if fv != tv {
                f.insert(k.clone(), Value::from("*** (before)"));
                t.insert(k.clone(), Value::from("*** (after)"));
                continue;
            }
            t.insert(k.clone(), Value::from("***"));
        }
        f.insert(k.clone(), Value::from("***"));
    }
    for k in to_data.iter().flatten().map(|(k, _)| k) {
        if !from_data.as_ref().is_some_and(|d| d.contains_key(k)) {
            t.insert(k.clone(), Value::from("***"));
        }
    }
    if from_data.is_some()
        && let Some(o) = from.as_object_mut()
    {
        o.insert("data".into(), Value::Object(f));
    }
    if to_data.is_some()
        && let Some(o) = to.as_object_mut()
    {
        o.insert("data".into(), Value::Object(t));
    }
}

fn write_yaml(path: &Path, v: Option<&Value>) -> Result<()> {
    let text = v.map(output::yaml::to_yaml).unwrap_or_default();
    std::fs::write(path, text)?;
    Ok(())
}

/// A temporary directory (`$TMPDIR/LIVE-123456789`), removed on drop.
struct TempDir(std::path::PathBuf);

impl TempDir {
    fn new(prefix: &str) -> Result<TempDir> {
        let base = std::env::temp_dir();
        let seed = std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0);
        for i in 0..1000u64 {
            let n = (seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(i * 1442695040888963407))
                % 1_000_000_000;
            let p = base.join(format!("{prefix}-{n}"));
            match std::fs::create_dir(&p) {
                Ok(()) => return Ok(TempDir(p)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(e.into()),
            }
        }
        Err(CliError::msg("cannot create a temporary directory"))
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The diff program and its arguments: `$KUBECTL_EXTERNAL_DIFF` (its first word, then only
/// the words made of letters, digits, `-` and `=`), else `diff -u -N`.
pub fn diff_command(env: Option<&str>, from: &str, to: &str) -> (String, Vec<String>) {
    match env.filter(|e| !e.is_empty()) {
        Some(e) => {
            let mut words = e.split(' ');
            let program = words.next().unwrap_or_default().to_string();
            let mut args: Vec<String> = words
                .filter(|w| {
                    !w.is_empty()
                        && w.chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '=')
                })
                .map(str::to_string)
                .collect();
            args.push(from.to_string());
            args.push(to.to_string());
            (program, args)
        }
        None => (
            "diff".to_string(),
            vec!["-u".into(), "-N".into(), from.into(), to.into()],
        ),
    }
}

async fn run_diff(ctx: &Ctx, from: &Path, to: &Path) -> Result<()> {
    let env = std::env::var("KUBECTL_EXTERNAL_DIFF").ok();
    let (program, argv) = diff_command(
        env.as_deref(),
        &from.display().to_string(),
        &to.display().to_string(),
    );
    let out = tokio::process::Command::new(&program)
        .args(&argv)
        .stdin(std::process::Stdio::null())
        .output()
        .await
        .map_err(|e| {
            CliError::msg(format!(
                "failed to run \"{program}\": exec: \"{program}\": {}",
                if e.kind() == std::io::ErrorKind::NotFound {
                    "executable file not found in $PATH".to_string()
                } else {
                    e.to_string()
                }
            ))
        })?;
    {
        use std::io::Write;
        ctx.out().write_all(&out.stdout)?;
        ctx.err().write_all(&out.stderr)?;
    }
    match out.status.code() {
        Some(0) => Ok(()),
        Some(1) => Err(CliError::Exit(1)),
        Some(code) => Err(CliError::msg(format!(
            "failed to run \"{program}\": exit status {code}"
        ))),
        None => Err(CliError::msg(format!(
            "failed to run \"{program}\": signal"
        ))),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn external_diff_words() {
        let (p, a) = diff_command(Some("colordiff -N -u --x=$(rm) a;b"), "L", "M");
        assert_eq!(p, "colordiff");
        assert_eq!(a, vec!["-N", "-u", "L", "M"]);
        let (p, a) = diff_command(None, "L", "M");
        assert_eq!(
            (p.as_str(), a),
            (
                "diff",
                vec!["-u".to_string(), "-N".into(), "L".into(), "M".into()]
            )
        );
    }

    #[test]
    fn masks_secrets() {
        let live = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "MQ==", "b": "Mg==", "c": "Mw=="}, "metadata": {"managedFields": []}});
        let merged = json!({"apiVersion": "v1", "kind": "Secret", "data": {"a": "MQ==", "b": "OQ==", "d": "NA=="}});
        let (l, m) = prepare(Some(live), Some(merged), false, false);
        let (l, m) = (l.unwrap(), m.unwrap());
        assert_eq!(
            l["data"],
            json!({"a": "***", "b": "*** (before)", "c": "***"})
        );
        assert_eq!(
            m["data"],
            json!({"a": "***", "b": "*** (after)", "d": "***"})
        );
        assert!(l["metadata"].get("managedFields").is_none());
    }
}
