//! `kubectl create -f`: POST each object of the manifests (`configmap/x created`),
//! continuing over failures (`AlreadyExists`, …) and exiting 1 if any failed, as kubectl.
//! `kubectl create` (helper "generators") flattens [`Args`] and calls [`run`] when no
//! generator subcommand is given.

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::manifest::{self, FilenameArgs, SaveConfigFlag, ValidateFlag};
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
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-create")]
    pub field_manager: String,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    args.files.check("create")?;
    let dry_run = args.dry_run.resolve(ctx)?;
    let validation = args.validate.resolve()?;
    args.print.format(false)?;
    let items = manifest::load(ctx, &args.files, validation).await?;
    // kubectl reports the errors of reading and mapping after those of the requests.
    let (infos, load_errors) = manifest::split(items);
    let mut errors = Vec::new();
    let mut count = 0;
    for mut info in infos {
        args.save_config.update_annotation(&mut info.object);
        let mut shown = info.object.clone();
        if dry_run != DryRun::Client {
            let client = ctx.client().await?;
            let path = format!(
                "{}?fieldManager={}{}{}",
                info.collection_path(),
                crate::resource::encode(&args.field_manager),
                validation.query(),
                dry_run.query()
            );
            let resp = client
                .send(Request::new(http::Method::POST, path).json(&info.object))
                .await?;
            match resp.json() {
                Ok(obj) => shown = obj,
                Err(e) => {
                    errors.push(manifest::add_source("creating", &info.source, e));
                    continue;
                }
            }
        }
        count += 1;
        print_operation(ctx, &args.print, &shown, "created", dry_run)?;
    }
    errors.extend(load_errors);
    if count == 0 && errors.is_empty() {
        return Err(CliError::msg("no objects passed to create"));
    }
    manifest::finish(ctx, errors)
}
