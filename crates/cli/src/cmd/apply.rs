//! `kubectl apply -f`: client-side apply as kubectl 1.33 does it (the
//! `kubectl.kubernetes.io/last-applied-configuration` annotation; create when the object
//! is absent, else a three-way patch: strategic merge for built-in types, JSON merge for
//! the others), and `--server-side` (an `application/apply-patch+yaml` PATCH).
//!
//! Everything is read and mapped first; a document that fails to decode, validate or map
//! is not applied (nor, for decoding and validation, the ones after it in its file), the
//! others are, and the errors are printed after them (exit 1).

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::manifest::{
    self, FilenameArgs, Info, LAST_APPLIED, ServerSideFlags, ValidateFlag, Validation,
};
use crate::output::{self, DryRun, DryRunFlag, PrintFlags};
use crate::transport::Request;

/// How many times a patch is recomputed when the server reports a conflict (kubectl's
/// `maxPatchRetry`).
const MAX_PATCH_RETRY: usize = 5;

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
    pub apply: ServerSideFlags,
    /// Automatically resolve conflicts between the modified and live configuration by
    /// using values from the modified configuration.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", require_equals = true)]
    pub overwrite: bool,
    /// If true, immediately remove resources from API and bypass graceful deletion (with
    /// a conflict or invalid patch: delete and re-create).
    #[arg(long)]
    pub force: bool,
    /// Automatically delete resource objects that do not appear in the configs (not
    /// supported by rkube kubectl).
    #[arg(long)]
    pub prune: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// If true, use openapi to calculate diff when the openapi presents and the resource
    /// can be found in the openapi spec. Otherwise, fall back to use baked-in types.
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, num_args = 0..=1,
          default_missing_value = "true", require_equals = true)]
    pub openapi_patch: bool,
}

/// What one object's apply came to.
struct Applied {
    object: Value,
    operation: &'static str,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    args.files.check("apply")?;
    let dry_run = args.dry_run.resolve(ctx)?;
    if args.apply.force_conflicts && !args.apply.server_side {
        return Err(CliError::msg(
            "--force-conflicts only works with --server-side",
        ));
    }
    if args.apply.server_side && dry_run == DryRun::Client {
        return Err(CliError::msg(
            "--dry-run=client doesn't work with --server-side (did you mean --dry-run=server instead?)",
        ));
    }
    if args.apply.server_side && args.force {
        return Err(CliError::msg("--force cannot be used with --server-side"));
    }
    if dry_run == DryRun::Server && args.force {
        return Err(CliError::msg(
            "--dry-run=server cannot be used with --force",
        ));
    }
    if args.prune {
        return Err(CliError::msg("--prune is not supported by rkube kubectl"));
    }
    if args.selector.is_some() {
        return Err(CliError::msg(
            "-l/--selector is not supported by rkube kubectl apply",
        ));
    }
    let validation = args.validate.resolve()?;
    let format = args.print.format(false)?;
    let print_objects = args
        .print
        .output
        .as_deref()
        .is_some_and(|o| !o.is_empty() && o != "name");
    let _ = format;
    let field_manager = args.apply.field_manager();
    let items = manifest::load(ctx, &args.files, validation).await?;
    let (infos, mut errors) = manifest::split(items);
    if infos.is_empty() && errors.is_empty() {
        return Err(CliError::msg("no objects passed to apply"));
    }
    let mut printed = Vec::new();
    for info in infos {
        if info.name.is_empty() {
            let generate = info
                .object
                .pointer("/metadata/generateName")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if !generate.is_empty() {
                errors.push(CliError::msg(format!(
                    "from {generate}: cannot use generate name with apply"
                )));
                continue;
            }
        }
        let result = if args.apply.server_side {
            server_side(ctx, &args, &info, &field_manager, validation, dry_run).await
        } else {
            client_side(ctx, &args, &info, &field_manager, validation, dry_run).await
        };
        match result {
            Ok(applied) => {
                warn_if_deleting(ctx, &applied.object);
                if print_objects {
                    printed.push(applied.object);
                } else {
                    let mut shown = applied.object;
                    if shown.get("kind").is_none() {
                        shown = info.object.clone();
                    }
                    output::print_operation(ctx, &args.print, &shown, applied.operation, dry_run)?;
                }
            }
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() && print_objects && !printed.is_empty() {
        let obj = if printed.len() == 1 {
            printed.remove(0)
        } else {
            // kubectl prints a corev1.List (`metadata: {}`).
            serde_json::json!({"apiVersion": "v1", "items": printed, "kind": "List", "metadata": {}})
        };
        output::print_object(ctx, &args.print, &obj)?;
    }
    manifest::finish(ctx, errors)
}

fn warn_if_deleting(ctx: &Ctx, obj: &Value) {
    if obj
        .pointer("/metadata/deletionTimestamp")
        .is_some_and(|t| !t.is_null())
    {
        let name = obj
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let _ = writeln!(
            ctx.err(),
            "Warning: Detected changes to resource {name} which is currently being deleted."
        );
    }
}

fn query(field_manager: &str, validation: Validation, dry_run: DryRun) -> String {
    format!(
        "fieldManager={}{}{}",
        crate::resource::encode(field_manager),
        validation.query(),
        dry_run.query()
    )
}

/// `--server-side`: the whole object as an apply patch.
async fn server_side(
    ctx: &Ctx,
    args: &Args,
    info: &Info,
    field_manager: &str,
    validation: Validation,
    dry_run: DryRun,
) -> Result<Applied> {
    let client = ctx.client().await?;
    let path = format!(
        "{}?{}&force={}",
        info.path(),
        query(field_manager, validation, dry_run),
        args.apply.force_conflicts
    );
    let body = api::gofmt::json(&info.object);
    let mut req =
        Request::new(http::Method::PATCH, path).content_type("application/apply-patch+yaml");
    req.body = Some(body.into_bytes());
    let resp = client.send(req).await?;
    match resp.json() {
        Ok(object) => Ok(Applied {
            object,
            operation: "serverside-applied",
        }),
        Err(CliError::Api(s)) if s.code == 409 => Err(CliError::msg(format!(
            "{}\nPlease review the fields above--they currently have other managers. Here\n\
are the ways you can resolve this warning:\n\
* If you intend to manage all of these fields, please re-run the apply\n  \
command with the `--force-conflicts` flag.\n\
* If you do not intend to manage all of the fields, please edit your\n  \
manifest to remove references to the fields that should keep their\n  \
current managers.\n\
* You may co-own fields by updating your manifest to match the existing\n  \
value; in this case, you'll become the manager if the other manager(s)\n  \
stop managing the field (remove it from their configuration).\n\
See https://kubernetes.io/docs/reference/using-api/server-side-apply/#conflicts",
            s.message
        ))),
        Err(e) => Err(e),
    }
}

/// Client-side apply of one object.
async fn client_side(
    ctx: &Ctx,
    args: &Args,
    info: &Info,
    field_manager: &str,
    validation: Validation,
    dry_run: DryRun,
) -> Result<Applied> {
    let client = ctx.client().await?;
    let (modified, _) = manifest::modified_configuration(&info.object, true);
    let modified: Value = serde_json::from_str(&modified).unwrap_or(Value::Null);
    let current = match client.get_json(&info.path()).await {
        Ok(c) => c,
        Err(e) if e.is_not_found() => {
            let mut obj = info.object.clone();
            manifest::set_last_applied(&mut obj);
            manifest::prune_nulls(&mut obj);
            if dry_run == DryRun::Client {
                return Ok(Applied {
                    object: obj,
                    operation: "created",
                });
            }
            let path = format!(
                "{}?{}",
                info.collection_path(),
                query(field_manager, validation, dry_run)
            );
            let created = client
                .send(Request::new(http::Method::POST, path).json(&obj))
                .await?
                .json()
                .map_err(|e| manifest::add_source("creating", &info.source, e))?;
            return Ok(Applied {
                object: created,
                operation: "created",
            });
        }
        Err(e) => {
            return Err(manifest::add_source(
                &format!(
                    "retrieving current configuration of:\n{}\nfrom server for:",
                    info_string(info)
                ),
                &info.source,
                e,
            ));
        }
    };
    let has_annotation = current
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(LAST_APPLIED));
    if !has_annotation {
        let _ = writeln!(
            ctx.err(),
            "Warning: resource {} is missing the {LAST_APPLIED} annotation which is required by kubectl apply. kubectl apply should only be used on resources created declaratively by either kubectl create --save-config or kubectl apply. The missing annotation will be patched automatically.",
            object_name(info)
        );
    }
    let mut current = current;
    let mut attempt = 1;
    loop {
        let (patch, patch_type) = compute_patch(info, &modified, &current)?;
        if patch.as_object().is_some_and(|m| m.is_empty()) {
            return Ok(Applied {
                object: current,
                operation: "unchanged",
            });
        }
        if dry_run == DryRun::Client {
            let patched = apply_locally(info, &current, &patch, patch_type)?;
            return Ok(Applied {
                object: patched,
                operation: "configured",
            });
        }
        let path = format!(
            "{}?{}",
            info.path(),
            query(field_manager, validation, dry_run)
        );
        let mut req = Request::new(http::Method::PATCH, path).content_type(patch_type);
        req.body = Some(api::gofmt::json(&patch).into_bytes());
        match client.send(req).await?.json() {
            Ok(object) => {
                return Ok(Applied {
                    object,
                    operation: "configured",
                });
            }
            Err(e) if e.status_code() == Some(409) && attempt < MAX_PATCH_RETRY => {
                attempt += 1;
                if attempt > 3 {
                    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
                }
                current = client.get_json(&info.path()).await?;
            }
            Err(e) if args.force && matches!(e.status_code(), Some(409) | Some(422)) => {
                return delete_and_create(ctx, info, &modified, field_manager, validation).await;
            }
            Err(e) => {
                return Err(manifest::add_source(
                    &format!(
                        "applying patch:\n{}\nto:\n{}\nfor:",
                        api::gofmt::json(&patch),
                        info_string(info)
                    ),
                    &info.source,
                    e,
                ));
            }
        }
    }
}

/// `--force` after a patch the server refused: delete the object and create the modified
/// configuration.
async fn delete_and_create(
    ctx: &Ctx,
    info: &Info,
    modified: &Value,
    field_manager: &str,
    validation: Validation,
) -> Result<Applied> {
    let client = ctx.client().await?;
    let mut req = Request::new(http::Method::DELETE, info.path());
    req = req.json(&serde_json::json!({"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}));
    let _ = client.send(req).await?.ok();
    // Wait for the object to be gone.
    for _ in 0..300 {
        match client.get_json(&info.path()).await {
            Err(e) if e.is_not_found() => break,
            _ => tokio::time::sleep(std::time::Duration::from_millis(100)).await,
        }
    }
    let path = format!(
        "{}?{}",
        info.collection_path(),
        query(field_manager, validation, DryRun::None)
    );
    let created = client
        .send(Request::new(http::Method::POST, path).json(modified))
        .await?
        .json()?;
    Ok(Applied {
        object: created,
        operation: "configured",
    })
}

/// The three-way patch and its content type: strategic merge for the built-in types,
/// JSON merge for the others.
pub fn compute_patch(
    info: &Info,
    modified: &Value,
    current: &Value,
) -> Result<(Value, &'static str)> {
    let original: Value = current
        .pointer(&format!(
            "/metadata/annotations/{}",
            LAST_APPLIED.replace('~', "~0").replace('/', "~1")
        ))
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or(Value::Null);
    let m = &info.mapping;
    match crate::twoway::builtin_schema(&m.group, &m.version, &m.kind) {
        Some(schema) => {
            let patch = patch::three_way_strategic_merge_patch(
                &original,
                modified,
                current,
                &schema,
                api::schema::builtin(),
            )
            .map_err(|e| create_patch_error(&original, modified, current, &e))?;
            Ok((patch, "application/strategic-merge-patch+json"))
        }
        None => {
            let patch = patch::three_way_json_merge_patch(&original, modified, current)
                .map_err(|e| create_patch_error(&original, modified, current, &e))?;
            Ok((patch, "application/merge-patch+json"))
        }
    }
}

fn create_patch_error(original: &Value, modified: &Value, current: &Value, e: &str) -> CliError {
    CliError::msg(format!(
        "creating patch with:\noriginal:\n{}\nmodified:\n{}\ncurrent:\n{}\nfor: {e}",
        api::gofmt::json(original),
        api::gofmt::json(modified),
        api::gofmt::json(current)
    ))
}

/// `--dry-run=client`: the patch applied to the live object here.
fn apply_locally(info: &Info, current: &Value, patch: &Value, patch_type: &str) -> Result<Value> {
    if patch_type == "application/merge-patch+json" {
        return Ok(patch::merge_patch(current, patch));
    }
    let m = &info.mapping;
    let schema =
        crate::twoway::builtin_schema(&m.group, &m.version, &m.kind).unwrap_or(Value::Null);
    patch::strategic_merge_patch(current, patch, &schema, api::schema::builtin())
        .map_err(|e| CliError::msg(format!("applying patch locally: {e}")))
}

/// kubectl's `info.ObjectName()`: `configmaps/x`, `deployments.apps/x`.
fn object_name(info: &Info) -> String {
    format!("{}/{}", info.mapping.group_resource(), info.name)
}

/// The start of kubectl's `Info.String()` (without the object dump).
fn info_string(info: &Info) -> String {
    let m = &info.mapping;
    let gv = if m.group.is_empty() {
        format!("/{}", m.version)
    } else {
        format!("{}/{}", m.group, m.version)
    };
    format!(
        "Resource: \"{gv}, Resource={}\", GroupVersionKind: \"{gv}, Kind={}\"\nName: \"{}\", Namespace: \"{}\"",
        m.resource,
        m.kind,
        info.name,
        info.namespace.clone().unwrap_or_default()
    )
}
