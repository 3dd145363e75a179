//! `kubectl delete`: resources by name, `TYPE/NAME`, `-f`, `-l`, `--all`, `-A`,
//! `--field-selector`; cascade modes (`propagationPolicy`), grace periods (`--now`,
//! `--force`), waiting until the objects are gone, `--ignore-not-found`, dry runs, `-o name`.

use std::io::Write;
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use crate::cmd::targets::{self, FileFlags, Selection, SelectorFlags, Target};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{DryRun, DryRunFlag};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// TYPE [NAME…] or TYPE/NAME….
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    #[command(flatten)]
    pub select: SelectorFlags,
    /// Delete all resources, in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// If true, immediately remove resources from API and bypass graceful deletion.
    #[arg(long)]
    pub force: bool,
    /// Must be "background", "orphan", or "foreground".
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "background",
        require_equals = true,
        default_value = "background"
    )]
    pub cascade: String,
    /// If true, resources are signaled for immediate shutdown (same as --grace-period=1).
    #[arg(long)]
    pub now: bool,
    /// Period of time in seconds given to the resource to terminate gracefully.
    #[arg(long = "grace-period", default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// The length of time to wait before giving up on a delete.
    #[arg(long, default_value = "0s")]
    pub timeout: String,
    /// Treat "resource not found" as a successful delete.
    #[arg(
        long = "ignore-not-found",
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true
    )]
    pub ignore_not_found: Option<bool>,
    /// If true, wait for resources to be gone before returning.
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true,
        default_value = "true",
        action = clap::ArgAction::Set
    )]
    pub wait: bool,
    /// Output mode. Use "-o name" for shorter output (resource/name).
    #[arg(short = 'o', long = "output")]
    pub output: Option<String>,
    /// Raw URI to DELETE to the server.
    #[arg(long)]
    pub raw: Option<String>,
    /// If true, delete resource only when user confirms.
    #[arg(short = 'i', long)]
    pub interactive: bool,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
}

/// `--cascade` into a propagation policy; the deprecated boolean forms give a warning
/// (pure).
pub fn parse_cascade(value: &str) -> Result<(&'static str, Option<String>)> {
    let boolean = match value {
        "1" | "t" | "T" | "true" | "TRUE" | "True" => Some(true),
        "0" | "f" | "F" | "false" | "FALSE" | "False" => Some(false),
        _ => None,
    };
    match boolean {
        Some(true) => Ok((
            "Background",
            Some(format!(
                "warning: --cascade={value} is deprecated (boolean value) and can be replaced with --cascade=background."
            )),
        )),
        Some(false) => Ok((
            "Orphan",
            Some(format!(
                "warning: --cascade={value} is deprecated (boolean value) and can be replaced with --cascade=orphan."
            )),
        )),
        None => match value {
            "orphan" => Ok(("Orphan", None)),
            "foreground" => Ok(("Foreground", None)),
            "background" => Ok(("Background", None)),
            _ => Err(CliError::msg(format!(
                "invalid cascade value ({value}). Must be \"background\", \"foreground\", or \"orphan\""
            ))),
        },
    }
}

/// The grace period kubectl sends, from `--grace-period`, `--now` and `--force` (pure).
pub fn effective_grace(grace: i64, now: bool, force: bool) -> Result<i64> {
    let mut g = grace;
    if now {
        if g != -1 {
            return Err(CliError::msg(
                "--now and --grace-period cannot be specified together",
            ));
        }
        g = 1;
    }
    if g == 0 && !force {
        g = 1;
    }
    if force && g < 0 {
        g = 0;
    }
    Ok(g)
}

/// The body of the DELETE request.
pub fn delete_options(grace: i64, policy: &str, dry_run: DryRun) -> Value {
    let mut o = json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": policy});
    if grace >= 0 {
        o["gracePeriodSeconds"] = json!(grace);
    }
    if dry_run == DryRun::Server {
        o["dryRun"] = json!(["All"]);
    }
    o
}

/// kubectl's `AddSourceToErr`: a server failure about an object from a file names the file.
pub fn with_source(err: CliError, verb: &str, source: Option<&str>) -> CliError {
    match (err, source) {
        (CliError::Api(mut s), Some(src)) => {
            s.message = format!("error when {verb} \"{src}\": {}", s.message);
            CliError::Api(s)
        }
        (e, _) => e,
    }
}

fn warning(ctx: &Ctx, msg: &str) {
    let _ = writeln!(ctx.err(), "Warning: {msg}");
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let (policy, cascade_warning) = parse_cascade(&args.cascade)?;
    if let Some(w) = cascade_warning {
        let _ = writeln!(ctx.err(), "{w}");
    }
    let mut ignore_not_found = args.ignore_not_found.unwrap_or(false);
    let selecting = args.select.label().is_some() || args.select.field().is_some();
    if (args.all || selecting) && args.ignore_not_found.is_none() {
        ignore_not_found = true;
    }
    let grace = effective_grace(args.grace_period, args.now, args.force)?;
    let dry_run = args.dry_run.resolve(ctx)?;
    let timeout = targets::duration_flag("timeout", &args.timeout)?;

    if let Some(raw) = &args.raw {
        return raw_delete(ctx, raw).await;
    }

    let sel = Selection {
        args: &args.args,
        files: Some(&args.files),
        selector: args.select.selector.as_deref(),
        field_selector: args.select.field_selector.as_deref(),
        all: args.all,
        all_namespaces: args.all_namespaces,
        fetch: false,
        require_names: true,
    };
    // kubectl's Complete resolves the arguments before Validate checks the flags.
    let found = targets::find(ctx, &sel).await?;

    let output = args.output.clone().unwrap_or_default();
    if !output.is_empty() && output != "name" {
        return Err(CliError::msg(format!(
            "unexpected -o output mode: {output}. We only support '-o name'"
        )));
    }
    if args.all && args.select.field().is_some() {
        return Err(CliError::msg(
            "cannot set --all and --field-selector at the same time",
        ));
    }
    if grace == 0 && args.force {
        warning(
            ctx,
            "Immediate deletion does not wait for confirmation that the running resource has been terminated. The resource may continue to run on the cluster indefinitely.",
        );
    } else if grace > 0 && args.force {
        return Err(CliError::msg(
            "--force and --grace-period greater than 0 cannot be specified together",
        ));
    }

    let mut errors: Vec<CliError> = found
        .errors
        .into_iter()
        .filter(|e| !(ignore_not_found && e.is_not_found()))
        .collect();
    let mut todo = found.targets;

    if args.interactive {
        if todo.is_empty() && errors.is_empty() {
            let _ = writeln!(ctx.out(), "No resources found");
            return Ok(());
        }
        if !confirm(ctx, &todo)? {
            let _ = writeln!(ctx.out(), "deletion is cancelled");
            return Ok(());
        }
    }

    let warn_cluster_scope = ctx.namespace_explicit() && !args.all_namespaces;
    let mut warned = false;
    let mut deleted: Vec<(Target, Option<String>)> = Vec::new();
    let mut count = 0usize;
    for t in todo.drain(..) {
        count += 1;
        if warn_cluster_scope && !warned && !t.mapping.namespaced {
            warning(
                ctx,
                "deleting cluster-scoped resources, not scoped to the provided namespace",
            );
            warned = true;
        }
        if dry_run == DryRun::Client {
            print_deleted(ctx, &t, &output, grace, dry_run);
            continue;
        }
        let body = delete_options(grace, policy, dry_run);
        let req = Request::new(Method::DELETE, t.path()).json(&body);
        let resp = ctx.client().await?.send(req).await?;
        match resp.json() {
            Ok(v) => {
                print_deleted(ctx, &t, &output, grace, dry_run);
                let uid = if v["kind"] == "Status" {
                    v["details"]["uid"].as_str().map(str::to_string)
                } else {
                    v["metadata"]["uid"].as_str().map(str::to_string)
                };
                deleted.push((t, uid));
            }
            Err(e) if ignore_not_found && e.is_not_found() => {
                deleted.push((t, None));
            }
            Err(e) => errors.push(with_source(e, "deleting", t.source.as_deref())),
        }
    }
    if count == 0 {
        let _ = writeln!(ctx.out(), "No resources found");
        return targets::finish(ctx, errors);
    }
    if args.wait && dry_run == DryRun::None && !deleted.is_empty() {
        let timeout = if timeout.is_zero() {
            Duration::from_secs(168 * 3600)
        } else {
            timeout
        };
        if let Err(e) = wait_deleted(ctx, &deleted, timeout).await {
            match e.status_code() {
                Some(403) | Some(405) => {}
                _ => errors.push(e),
            }
        }
    }
    targets::finish(ctx, errors)
}

fn print_deleted(ctx: &Ctx, t: &Target, output: &str, grace: i64, dry_run: DryRun) {
    let kind = t.mapping.kind_group();
    let line = if output == "name" {
        format!("{kind}/{}", t.name)
    } else {
        let op = if grace == 0 {
            "force deleted"
        } else {
            "deleted"
        };
        format!("{kind} \"{}\" {op}{}", t.name, dry_run.suffix())
    };
    let _ = writeln!(ctx.out(), "{line}");
}

fn confirm(ctx: &Ctx, todo: &[Target]) -> Result<bool> {
    {
        let mut out = ctx.out();
        let _ = writeln!(
            out,
            "You are about to delete the following {} resource(s):",
            todo.len()
        );
        for t in todo {
            let _ = writeln!(out, "{}", t.display());
        }
        let _ = write!(out, "Do you want to continue? (y/n): ");
        let _ = out.flush();
    }
    let input = ctx.read_stdin()?;
    let answer = String::from_utf8_lossy(&input);
    Ok(answer
        .split_whitespace()
        .next()
        .is_some_and(|w| w.eq_ignore_ascii_case("y")))
}

async fn raw_delete(ctx: &Ctx, raw: &str) -> Result<()> {
    if !raw.starts_with('/') {
        return Err(CliError::msg(format!(
            "--raw must be a valid URL path: parse \"{raw}\": invalid URI for request"
        )));
    }
    let resp = ctx
        .client()
        .await?
        .send(Request::new(Method::DELETE, raw))
        .await?;
    let ok = resp.status.is_success();
    ctx.out().write_all(&resp.body)?;
    if ok { Ok(()) } else { Err(CliError::Exit(1)) }
}

/// Waits until each object is gone (NotFound, or replaced by one with another UID), as
/// kubectl's `wait --for=delete`.
async fn wait_deleted(
    ctx: &Ctx,
    deleted: &[(Target, Option<String>)],
    timeout: Duration,
) -> Result<()> {
    let client = ctx.client().await?;
    let deadline = Instant::now() + timeout;
    for (t, uid) in deleted {
        loop {
            match client.get_json(&t.path()).await {
                Err(e) if e.is_not_found() => break,
                Err(e) => return Err(e),
                Ok(obj) => {
                    let current = obj["metadata"]["uid"].as_str();
                    if uid.is_some() && current != uid.as_deref() {
                        break;
                    }
                }
            }
            if Instant::now() >= deadline {
                return Err(CliError::msg(format!(
                    "timed out waiting for the condition on {}/{}",
                    t.mapping.group_resource(),
                    t.name
                )));
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cascade_values() {
        assert_eq!(parse_cascade("background").unwrap().0, "Background");
        assert_eq!(parse_cascade("orphan").unwrap().0, "Orphan");
        assert_eq!(parse_cascade("foreground").unwrap().0, "Foreground");
        let (p, w) = parse_cascade("false").unwrap();
        assert_eq!(p, "Orphan");
        assert_eq!(
            w.unwrap(),
            "warning: --cascade=false is deprecated (boolean value) and can be replaced with --cascade=orphan."
        );
        assert_eq!(parse_cascade("true").unwrap().0, "Background");
        assert_eq!(
            parse_cascade("bad").unwrap_err().to_string(),
            "error: invalid cascade value (bad). Must be \"background\", \"foreground\", or \"orphan\""
        );
    }

    #[test]
    fn grace_rules() {
        assert_eq!(effective_grace(-1, false, false).unwrap(), -1);
        assert_eq!(effective_grace(-1, true, false).unwrap(), 1);
        assert!(effective_grace(3, true, false).is_err());
        assert_eq!(effective_grace(0, false, false).unwrap(), 1);
        assert_eq!(effective_grace(0, false, true).unwrap(), 0);
        assert_eq!(effective_grace(-1, false, true).unwrap(), 0);
        assert_eq!(effective_grace(5, false, true).unwrap(), 5);
    }

    #[test]
    fn options_body() {
        assert_eq!(
            delete_options(-1, "Orphan", DryRun::None),
            json!({"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Orphan"})
        );
        assert_eq!(
            delete_options(0, "Background", DryRun::Server)["dryRun"],
            json!(["All"])
        );
    }
}
