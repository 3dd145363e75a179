//! `kubectl patch`: a strategic merge, JSON merge or JSON patch (`-p` or `--patch-file`,
//! JSON or YAML) sent to the server, or applied locally for `--local` and
//! `--dry-run=client`; `--subresource=status|scale`.

use http::Method;
use serde_json::Value;

use crate::cmd::targets::{self, FileFlags, Selection};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// (-f FILENAME | TYPE NAME).
    pub args: Vec<String>,
    /// The patch to be applied to the resource JSON file.
    #[arg(short = 'p', long = "patch")]
    pub patch: Option<String>,
    /// A file containing a patch to be applied to the resource.
    #[arg(long = "patch-file")]
    pub patch_file: Option<String>,
    /// The type of patch being provided; one of [json merge strategic].
    #[arg(long = "type", default_value = "strategic")]
    pub patch_type: String,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    #[command(flatten)]
    pub files: FileFlags,
    /// If true, patch will operate on the content of the file, not the server-side
    /// resource.
    #[arg(long)]
    pub local: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager", default_value = "kubectl-patch")]
    pub field_manager: String,
    /// If specified, patch will operate on the subresource of the requested object.
    #[arg(long)]
    pub subresource: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
}

/// The kinds of patch and their content types.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

impl PatchType {
    /// Parses `--type` as kubectl does (case-insensitive) (pure).
    pub fn parse(s: &str) -> Result<PatchType> {
        match s.to_lowercase().as_str() {
            "json" => Ok(PatchType::Json),
            "merge" => Ok(PatchType::Merge),
            "strategic" | "" => Ok(PatchType::Strategic),
            _ => Err(CliError::msg(format!(
                "--type must be one of [json merge strategic], not \"{s}\""
            ))),
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Json => "application/json-patch+json",
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
        }
    }
}

/// apimachinery's `yaml.ToJSON`: text starting with `{` is JSON as is, anything else is
/// converted from YAML (pure).
pub fn patch_to_json(text: &str) -> Result<Vec<u8>, String> {
    if text.trim_start().starts_with('{') {
        return Ok(text.as_bytes().to_vec());
    }
    let v: Value = serde_yaml_ng::from_str(text).map_err(|e| {
        // libyaml's problem, without the context and location serde adds (Go prints
        // only the problem).
        let msg = e.to_string();
        let msg = msg.split(", while").next().unwrap_or_default();
        let msg = msg.split(" at line ").next().unwrap_or_default();
        format!("yaml: {msg}")
    })?;
    Ok(v.to_string().into_bytes())
}

/// Go's `schema.GroupVersionKind.String()`.
pub fn gvk_string(m: &Mapping) -> String {
    format!("{}/{}, Kind={}", m.group, m.version, m.kind)
}

/// Applies a patch to an object on the client (pure).
pub fn apply_locally(obj: &Value, patch: &[u8], pt: PatchType, m: &Mapping) -> Result<Value> {
    let patch: Value = serde_json::from_slice(patch)
        .map_err(|e| CliError::msg(format!("error decoding patch: {e}")))?;
    match pt {
        PatchType::Json => ::patch::json_patch(obj, &patch).map_err(|e| {
            let msg = e.to_string();
            match msg.split_once("doc is missing key: ") {
                Some((_, key)) => {
                    CliError::msg(format!("Object to be patched is missing field ({key})"))
                }
                None => CliError::msg(msg),
            }
        }),
        PatchType::Merge => Ok(::patch::merge_patch(obj, &patch)),
        PatchType::Strategic => {
            let kind = obj["kind"].as_str().unwrap_or(&m.kind);
            let Some(schema) = crate::twoway::builtin_schema(&m.group, &m.version, kind) else {
                return Err(CliError::msg(format!(
                    "strategic merge patch is not supported for {} locally, try --type merge",
                    gvk_string(m)
                )));
            };
            ::patch::strategic_merge_patch(obj, &patch, &schema, api::schema::builtin())
                .map_err(|e| CliError::msg(e.to_string()))
        }
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let dry_run = args.dry_run.resolve(ctx)?;
    args.print.format(false)?;
    let patch_given = args.patch.as_deref().is_some_and(|p| !p.is_empty());
    let file_given = args.patch_file.as_deref().is_some_and(|p| !p.is_empty());
    if patch_given && file_given {
        return Err(CliError::msg(
            "cannot specify --patch and --patch-file together",
        ));
    }
    if !patch_given && !file_given {
        return Err(CliError::msg(
            "must specify --patch or --patch-file containing the contents of the patch",
        ));
    }
    if args.local && !args.args.is_empty() {
        return Err(CliError::msg("cannot specify --local and server resources"));
    }
    if args.local && dry_run == DryRun::Server {
        return Err(CliError::msg(
            "cannot specify --local and --dry-run=server - did you mean --dry-run=client?",
        ));
    }
    let pt = PatchType::parse(&args.patch_type)?;
    let raw = match &args.patch_file {
        Some(f) if file_given => std::fs::read_to_string(f).map_err(|e| {
            let reason = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                _ => e.to_string(),
            };
            CliError::msg(format!("unable to read patch file: open {f}: {reason}"))
        })?,
        _ => args.patch.clone().unwrap_or_default(),
    };
    let patch_bytes = patch_to_json(&raw).map_err(|e| {
        CliError::msg(format!(
            "unable to parse \"{}\": {e}",
            args.patch.clone().unwrap_or_default()
        ))
    })?;
    if let Some(sub) = &args.subresource
        && !matches!(sub.as_str(), "status" | "scale")
    {
        return Err(CliError::msg(format!(
            "invalid subresource value: \"{sub}\". Must be one of [status scale]"
        )));
    }

    let (items, mut errors) = if args.local {
        let docs = targets::read_documents(ctx, &args.files)?;
        let mapper = ctx.mapper().await?;
        let mut items = Vec::new();
        for (_, d) in docs {
            let m = mapper
                .for_kind_fresh(
                    ctx,
                    d["apiVersion"].as_str().unwrap_or_default(),
                    d["kind"].as_str().unwrap_or_default(),
                )
                .await?;
            items.push((None, m, d));
        }
        (items, Vec::new())
    } else {
        let sel = Selection {
            args: &args.args,
            files: Some(&args.files),
            fetch: false,
            require_names: true,
            ..Selection::default()
        };
        let found = targets::find(ctx, &sel).await?;
        let mut errors = found.errors;
        let mut items = Vec::new();
        let client = ctx.client().await?;
        for t in found.targets {
            let path = match &args.subresource {
                Some(s) => format!("{}/{s}", t.path()),
                None => t.path(),
            };
            // An object from a file is taken as it is (kubectl's builder does not fetch
            // it), so "(no change)" is judged against the file.
            if t.source.is_some()
                && args.subresource.is_none()
                && let Some(obj) = t.object.clone()
            {
                items.push((Some(path), t.mapping.clone(), obj));
                continue;
            }
            match client.get_json(&path).await {
                Ok(obj) => items.push((Some(path), t.mapping.clone(), obj)),
                Err(e) => errors.push(e),
            }
        }
        (items, errors)
    };

    let mut count = 0;
    for (path, mapping, obj) in items {
        count += 1;
        let result = async {
            match path {
                Some(path) if dry_run != DryRun::Client => {
                    let url = format!(
                        "{path}?fieldManager={}{}",
                        targets::query_escape(&args.field_manager),
                        dry_run.query()
                    );
                    let mut req = Request::new(Method::PATCH, url).content_type(pt.content_type());
                    req.body = Some(patch_bytes.clone());
                    let resp = ctx.client().await?.send(req).await?;
                    let patched = match resp.json() {
                        Ok(v) => v,
                        Err(e) if e.status_code() == Some(415) => {
                            let msg = match &e {
                                CliError::Api(s) => s.message.clone(),
                                other => other.to_string(),
                            };
                            return Err(CliError::msg(format!(
                                "{} is not supported by {}: {msg}",
                                pt.content_type(),
                                gvk_string(&mapping)
                            )));
                        }
                        Err(e) => return Err(e),
                    };
                    let op = if patched != obj {
                        "patched"
                    } else {
                        "patched (no change)"
                    };
                    print_operation(ctx, &args.print, &patched, op, dry_run)
                }
                _ => {
                    let patched = apply_locally(&obj, &patch_bytes, pt, &mapping)?;
                    let op = if patched != obj {
                        "patched"
                    } else {
                        "patched (no change)"
                    };
                    print_operation(ctx, &args.print, &patched, op, dry_run)
                }
            }
        }
        .await;
        if let Err(e) = result {
            errors.push(e);
        }
    }
    if count == 0 && errors.is_empty() {
        return Err(CliError::msg("no objects passed to patch"));
    }
    targets::finish(ctx, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deploy_mapping() -> Mapping {
        Mapping {
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            kind: "Deployment".into(),
            namespaced: true,
        }
    }

    #[test]
    fn types_and_yaml() {
        assert_eq!(PatchType::parse("JSON").unwrap(), PatchType::Json);
        assert_eq!(
            PatchType::parse("foo").unwrap_err().to_string(),
            "error: --type must be one of [json merge strategic], not \"foo\""
        );
        assert_eq!(patch_to_json("{bad").unwrap(), b"{bad".to_vec());
        assert_eq!(
            patch_to_json("spec:\n  replicas: 2").unwrap(),
            br#"{"spec":{"replicas":2}}"#.to_vec()
        );
        assert!(patch_to_json(": :").is_err());
    }

    #[test]
    fn local_patches() {
        let m = deploy_mapping();
        let obj = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},
            "spec":{"template":{"spec":{"containers":[{"name":"a","image":"x"},{"name":"b","image":"y"}]}}}});
        let p = br#"{"spec":{"template":{"spec":{"containers":[{"name":"b","image":"z"}]}}}}"#;
        let s = apply_locally(&obj, p, PatchType::Strategic, &m).unwrap();
        assert_eq!(s["spec"]["template"]["spec"]["containers"][1]["image"], "z");
        assert_eq!(s["spec"]["template"]["spec"]["containers"][0]["image"], "x");
        let mp = apply_locally(&obj, p, PatchType::Merge, &m).unwrap();
        assert_eq!(
            mp["spec"]["template"]["spec"]["containers"],
            json!([{"name":"b","image":"z"}])
        );
        let jp = br#"[{"op":"replace","path":"/metadata/name","value":"e"}]"#;
        assert_eq!(
            apply_locally(&obj, jp, PatchType::Json, &m).unwrap()["metadata"]["name"],
            "e"
        );
        let crd = Mapping {
            group: "stable.example.com".into(),
            version: "v1".into(),
            resource: "crontabs".into(),
            kind: "CronTab".into(),
            namespaced: true,
        };
        let e = apply_locally(
            &json!({"kind":"CronTab"}),
            b"{}",
            PatchType::Strategic,
            &crd,
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "error: strategic merge patch is not supported for stable.example.com/v1, Kind=CronTab locally, try --type merge"
        );
    }
}
