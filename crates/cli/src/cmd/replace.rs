//! `kubectl replace -f`: PUT each object of the manifests (with the live
//! resourceVersion when the manifest has none), `--force` deleting and re-creating.

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::Result;
use crate::manifest::{self, FilenameArgs, Info, SaveConfigFlag, ValidateFlag, Validation};
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;

#[derive(clap::Args, Debug, Clone, Default)]
pub struct Args {
    #[command(flatten)]
    pub files: FilenameArgs,
    #[command(flatten)]
    pub print: PrintFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    #[command(flatten)]
    pub validate: ValidateFlag,
    #[command(flatten)]
    pub save_config: SaveConfigFlag,
    /// If true, immediately remove resources from API and bypass graceful deletion. Note
    /// that immediate deletion of some resources may result in inconsistency or data loss
    /// and requires confirmation.
    #[arg(long)]
    pub force: bool,
    /// Period of time in seconds given to the resource to terminate gracefully (with
    /// --force).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub grace_period: i64,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-replace")]
    pub field_manager: String,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    args.files.check("replace")?;
    let dry_run = args.dry_run.resolve(ctx)?;
    let validation = args.validate.resolve()?;
    args.print.format(false)?;
    let items = manifest::load(ctx, &args.files, validation).await?;
    let mut errors = Vec::new();
    if args.force {
        // kubectl deletes everything first, then creates.
        let (infos, errs) = manifest::split(items);
        errors.extend(errs);
        let client = ctx.client().await?;
        for info in &infos {
            let mut body = serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1"});
            if args.grace_period >= 0 {
                body["gracePeriodSeconds"] = Value::from(args.grace_period);
            }
            let resp = client
                .send(Request::new(http::Method::DELETE, info.path()).json(&body))
                .await?;
            match resp.ok() {
                Ok(_) => {
                    let _ = writeln!(
                        ctx.out(),
                        "{} \"{}\" deleted",
                        info.mapping.kind_group(),
                        info.name
                    );
                    wait_gone(ctx, info).await?;
                }
                Err(e) if e.is_not_found() => {}
                Err(e) => errors.push(e),
            }
        }
        for mut info in infos {
            args.save_config.update_annotation(&mut info.object);
            let path = format!(
                "{}?fieldManager={}{}",
                info.collection_path(),
                crate::resource::encode(&args.field_manager),
                validation.query()
            );
            if let Some(m) = info
                .object
                .get_mut("metadata")
                .and_then(Value::as_object_mut)
            {
                m.remove("resourceVersion");
            }
            match client
                .send(Request::new(http::Method::POST, path).json(&info.object))
                .await?
                .json()
            {
                Ok(obj) => print_operation(ctx, &args.print, &obj, "replaced", DryRun::None)?,
                Err(e) => errors.push(manifest::add_source("replacing", &info.source, e)),
            }
        }
        return manifest::finish(ctx, errors);
    }
    let (infos, load_errors) = manifest::split(items);
    for mut info in infos {
        args.save_config.update_annotation(&mut info.object);
        if dry_run == DryRun::Client {
            print_operation(ctx, &args.print, &info.object, "replaced", dry_run)?;
            continue;
        }
        match replace_one(ctx, &info, &args.field_manager, validation, dry_run).await {
            Ok(obj) => print_operation(ctx, &args.print, &obj, "replaced", dry_run)?,
            Err(e) => errors.push(manifest::add_source("replacing", &info.source, e)),
        }
    }
    errors.extend(load_errors);
    manifest::finish(ctx, errors)
}

/// client-go's `Helper.Replace(overwrite=true)`: the live resourceVersion when the
/// manifest has none, then PUT.
async fn replace_one(
    ctx: &Ctx,
    info: &Info,
    field_manager: &str,
    validation: Validation,
    dry_run: DryRun,
) -> Result<Value> {
    let client = ctx.client().await?;
    let mut obj = info.object.clone();
    let has_version = obj
        .pointer("/metadata/resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|v| !v.is_empty());
    if !has_version
        && let Ok(live) = client.get_json(&info.path()).await
        && let Some(rv) = live.pointer("/metadata/resourceVersion").cloned()
        && let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("resourceVersion".into(), rv);
    }
    let path = format!(
        "{}?fieldManager={}{}{}",
        info.path(),
        crate::resource::encode(field_manager),
        validation.query(),
        dry_run.query()
    );
    client
        .send(Request::new(http::Method::PUT, path).json(&obj))
        .await?
        .json()
}

async fn wait_gone(ctx: &Ctx, info: &Info) -> Result<()> {
    let client = ctx.client().await?;
    for _ in 0..600 {
        match client.get_json(&info.path()).await {
            Err(e) if e.is_not_found() => return Ok(()),
            Err(e) => return Err(e),
            Ok(_) => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    Ok(())
}
