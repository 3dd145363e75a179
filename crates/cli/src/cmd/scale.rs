//! `kubectl scale`: a new size through the `scale` subresource — a merge patch, or with
//! preconditions (`--current-replicas`, `--resource-version`) a read and an update of the
//! `Scale`, retried on conflicts; `--timeout` waits for the replicas.

use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use crate::cmd::targets::{self, FileFlags, Selection, Target};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// (-f FILENAME | TYPE NAME).
    pub args: Vec<String>,
    /// Select all resources in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// Precondition for resource version.
    #[arg(long = "resource-version")]
    pub resource_version: Option<String>,
    /// Precondition for current size (-1 for no condition).
    #[arg(long = "current-replicas", default_value_t = -1, allow_negative_numbers = true)]
    pub current_replicas: i64,
    /// The new desired number of replicas. Required.
    #[arg(long, allow_negative_numbers = true)]
    pub replicas: Option<i64>,
    /// The length of time to wait before giving up on a scale operation.
    #[arg(long, default_value = "0s")]
    pub timeout: String,
    #[command(flatten)]
    pub files: FileFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
}

/// kubectl's precondition check on a `Scale` (pure).
pub fn check_precondition(scale: &Value, size: i64, rv: Option<&str>) -> Result<()> {
    let current = scale["spec"]["replicas"].as_i64().unwrap_or(0);
    if size != -1 && current != size {
        return Err(CliError::msg(format!(
            "Expected replicas to be {size}, was {current}"
        )));
    }
    let actual = scale["metadata"]["resourceVersion"]
        .as_str()
        .unwrap_or_default();
    if let Some(rv) = rv.filter(|r| !r.is_empty())
        && actual != rv
    {
        return Err(CliError::msg(format!(
            "Expected resource version to be {rv}, was {actual}"
        )));
    }
    Ok(())
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let Some(replicas) = args.replicas else {
        return Err(CliError::msg("required flag(s) \"replicas\" not set"));
    };
    let dry_run = args.dry_run.resolve(ctx)?;
    args.print.format(false)?;
    let timeout = targets::duration_flag("timeout", &args.timeout)?;
    if replicas < 0 {
        return Err(CliError::msg(
            "The --replicas=COUNT flag is required, and COUNT must be greater than or equal to 0",
        ));
    }
    if args.current_replicas < -1 {
        return Err(CliError::msg(
            "The --current-replicas must specify an integer of -1 or greater",
        ));
    }
    let sel = Selection {
        args: &args.args,
        files: Some(&args.files),
        selector: args.selector.as_deref(),
        all: args.all,
        fetch: true,
        require_names: true,
        ..Selection::default()
    };
    let found = targets::find(ctx, &sel).await?;
    let rv = args.resource_version.as_deref().filter(|r| !r.is_empty());
    if rv.is_some() && found.targets.len() > 1 {
        return Err(CliError::msg(
            "cannot use --resource-version with multiple resources",
        ));
    }
    if found.targets.is_empty() {
        let detail = found
            .errors
            .iter()
            .map(|e| match e {
                CliError::Api(s) => s.message.clone(),
                other => other.to_string().trim_start_matches("error: ").to_string(),
            })
            .collect::<Vec<_>>();
        return Err(CliError::msg(if detail.is_empty() {
            "no objects passed to scale".to_string()
        } else {
            format!("no objects passed to scale {}", detail.join("\n"))
        }));
    }
    let precondition = args.current_replicas != -1 || rv.is_some();
    for t in &found.targets {
        let obj = t.object.clone().unwrap_or(Value::Null);
        if dry_run == DryRun::Client {
            print_operation(ctx, &args.print, &obj, "scaled", dry_run)?;
            continue;
        }
        scale_one(
            ctx,
            t,
            replicas,
            precondition.then_some((args.current_replicas, rv)),
            dry_run,
        )
        .await?;
        if !timeout.is_zero() && dry_run == DryRun::None {
            wait_replicas(ctx, t, replicas, timeout).await?;
        }
        print_operation(ctx, &args.print, &obj, "scaled", dry_run)?;
    }
    targets::finish(ctx, found.errors)
}

async fn scale_one(
    ctx: &Ctx,
    t: &Target,
    replicas: i64,
    precondition: Option<(i64, Option<&str>)>,
    dry_run: DryRun,
) -> Result<()> {
    let client = ctx.client().await?;
    let path = format!("{}/scale", t.path());
    let query = match dry_run {
        DryRun::Server => "?dryRun=All",
        _ => "",
    };
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let result = match precondition {
            Some((size, rv)) => {
                let mut scale = client.get_json(&path).await?;
                check_precondition(&scale, size, rv)?;
                scale["spec"]["replicas"] = json!(replicas);
                let req = Request::new(Method::PUT, format!("{path}{query}")).json(&scale);
                client.send(req).await?.ok()
            }
            None => {
                let req = Request::new(Method::PATCH, format!("{path}{query}"))
                    .json(&json!({"spec": {"replicas": replicas}}))
                    .content_type("application/merge-patch+json");
                client.send(req).await?.ok()
            }
        };
        match result {
            Ok(_) => return Ok(()),
            Err(e) if e.status_code() == Some(409) && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// Waits until the scale's status reaches the desired replicas (kubectl's
/// `WaitForScaleHasDesiredReplicas`).
async fn wait_replicas(ctx: &Ctx, t: &Target, replicas: i64, timeout: Duration) -> Result<()> {
    let client = ctx.client().await?;
    let path = format!("{}/scale", t.path());
    let deadline = Instant::now() + timeout;
    loop {
        let scale = client.get_json(&path).await?;
        let spec = scale["spec"]["replicas"].as_i64().unwrap_or(0);
        let status = scale["status"]["replicas"].as_i64().unwrap_or(0);
        if spec != replicas || (spec == status && status == replicas) {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(CliError::msg(format!(
                "timed out waiting for \"{}\" to be synced",
                t.name
            )));
        }
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preconditions() {
        let s = json!({"metadata":{"resourceVersion":"224"},"spec":{"replicas":2}});
        assert!(check_precondition(&s, -1, None).is_ok());
        assert_eq!(
            check_precondition(&s, 5, None).unwrap_err().to_string(),
            "error: Expected replicas to be 5, was 2"
        );
        assert_eq!(
            check_precondition(&s, -1, Some("1"))
                .unwrap_err()
                .to_string(),
            "error: Expected resource version to be 1, was 224"
        );
        assert!(check_precondition(&s, 2, Some("224")).is_ok());
    }
}
