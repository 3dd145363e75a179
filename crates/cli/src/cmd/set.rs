//! `kubectl set image`: new images for the containers and init containers of pods and pod
//! templates, sent as a two-way strategic merge patch (as kubectl computes it).

use std::io::Write;

use http::Method;
use serde_json::Value;

use crate::cmd::targets::{self, FileFlags, Selection};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    pub command: SetCommand,
}

#[derive(clap::Subcommand, Debug)]
pub enum SetCommand {
    /// Update the image of a pod template.
    Image(ImageArgs),
    /// Update resource requests/limits on objects with pod templates.
    Resources(ResourcesArgs),
    /// Update environment variables on a pod template.
    Env(EnvArgs),
}

#[derive(clap::Args, Debug)]
pub struct EnvArgs {
    /// RESOURCE/NAME KEY_1=VAL_1 ... KEY_N=VAL_N.
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    /// The names of containers in the selected pod templates to change (wildcards allowed).
    #[arg(short = 'c', long = "containers", default_value = "*")]
    pub containers: String,
    /// The name of a resource from which to inject environment variables.
    #[arg(long)]
    pub from: Option<String>,
    /// Prefix to append to variable names.
    #[arg(long, default_value = "")]
    pub prefix: String,
    /// Specify a key-value pair for an environment variable to set into each container.
    #[arg(short = 'e', long = "env")]
    pub env: Vec<String>,
    /// Comma-separated list of keys to import from specified resource.
    #[arg(long, value_delimiter = ',')]
    pub keys: Vec<String>,
    /// If true, display the environment and any changes in the standard format.
    #[arg(long)]
    pub list: bool,
    /// If true, show secret or configmap references when listing variables.
    #[arg(long)]
    pub resolve: bool,
    /// If true, set env will NOT contact api-server but run locally.
    #[arg(long)]
    pub local: bool,
    /// If true, select all resources in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// If true, allow environment to be overwritten.
    #[arg(
        long,
        num_args = 0..=1,
        default_value = "true",
        default_missing_value = "true",
        require_equals = true,
        action = clap::ArgAction::Set
    )]
    pub overwrite: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager", default_value = "kubectl-set")]
    pub field_manager: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
}

#[derive(clap::Args, Debug)]
pub struct ResourcesArgs {
    /// (-f FILENAME | TYPE NAME).
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    /// Select all resources, in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// The names of containers in the selected pod templates to change (wildcards allowed).
    #[arg(short = 'c', long = "containers", default_value = "*")]
    pub containers: String,
    /// If true, set resources will NOT contact api-server but run locally.
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// The resource requirement limits for this container (e.g. 'cpu=100m,memory=256Mi').
    #[arg(long, default_value = "")]
    pub limits: String,
    /// The resource requirement requests for this container.
    #[arg(long, default_value = "")]
    pub requests: String,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager", default_value = "kubectl-set")]
    pub field_manager: String,
    #[command(flatten)]
    pub print: PrintFlags,
}

#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// (-f FILENAME | TYPE NAME) CONTAINER_NAME_1=CONTAINER_IMAGE_1 ...
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    /// Select all resources, in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// If true, set image will NOT contact api-server but run locally.
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager", default_value = "kubectl-set")]
    pub field_manager: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match args.command {
        SetCommand::Image(a) => image(ctx, a).await,
        SetCommand::Resources(a) => resources(ctx, a).await,
        SetCommand::Env(a) => env(ctx, a).await,
    }
}

/// The JSON pointer of the pod spec in an object of `kind` (kubectl's
/// `UpdatePodSpecForObject`), or `None` for kinds without one (pure).
pub fn pod_spec_pointer(kind: &str) -> Option<&'static str> {
    match kind {
        "Pod" => Some("/spec"),
        "ReplicationController"
        | "Deployment"
        | "DaemonSet"
        | "ReplicaSet"
        | "StatefulSet"
        | "Job" => Some("/spec/template/spec"),
        "CronJob" => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

/// Sets `image` on the containers named `name` (or all for `*`) in a list; whether one
/// matched (pure).
fn set_image(containers: Option<&mut Value>, name: &str, image: &str) -> bool {
    let mut found = false;
    if let Some(list) = containers.and_then(Value::as_array_mut) {
        for c in list {
            if name == "*" || c["name"].as_str() == Some(name) {
                c["image"] = Value::String(image.to_string());
                found = true;
            }
        }
    }
    found
}

/// Applies `container=image` pairs to an object's pod spec; the messages of containers
/// not found (pure).
pub fn update_images(obj: &mut Value, images: &[(String, String)]) -> Result<Vec<String>, String> {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let Some(ptr) = pod_spec_pointer(&kind) else {
        return Err(format!(
            "the object is not a pod or does not have a pod template: *v1.{kind}"
        ));
    };
    let mut missing = Vec::new();
    let Some(spec) = obj.pointer_mut(ptr) else {
        return Ok(images
            .iter()
            .map(|(n, _)| format!("error: unable to find container named \"{n}\""))
            .collect());
    };
    for (name, image) in images {
        let init = set_image(spec.get_mut("initContainers"), name, image);
        let main = set_image(spec.get_mut("containers"), name, image);
        if !init && !main {
            missing.push(format!("error: unable to find container named \"{name}\""));
        }
    }
    Ok(missing)
}

async fn image(ctx: &Ctx, args: ImageArgs) -> Result<()> {
    let dry_run = args.dry_run.resolve(ctx)?;
    args.print.format(false)?;
    let (resources, pairs) = targets::resources_and_pairs(&args.args, "image")?;
    let (images, _) = targets::parse_pairs(&pairs, "image", false)?;

    let mut items: Vec<(Option<String>, Value)> = Vec::new();
    if args.local {
        if !resources.is_empty() {
            return Err(CliError::msg(
                "error: you must specify resources by --filename when --local is set.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'",
            ));
        }
        for (_, d) in targets::read_documents(ctx, &args.files)? {
            items.push((None, d));
        }
    } else if !resources.is_empty() || !args.files.filenames.is_empty() {
        items = fetch(
            ctx,
            &resources,
            &args.files,
            args.selector.as_deref(),
            args.all,
        )
        .await?;
    }

    let mut problems = Vec::new();
    if args.all && args.selector.as_deref().is_some_and(|s| !s.is_empty()) {
        problems.push("cannot set --all and --selector at the same time".to_string());
    }
    if resources.is_empty() && args.files.filenames.is_empty() {
        problems.push(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>"
                .to_string(),
        );
    }
    if images.is_empty() {
        problems.push("at least one image update is required".to_string());
    } else if images.len() > 1 && images.iter().any(|(n, _)| n == "*") {
        problems.push("all containers are already specified by *, but saw more than one container_name=container_image pairs".to_string());
    }
    if args.local && dry_run == DryRun::Server {
        problems.push(
            "cannot specify --local and --dry-run=server - did you mean --dry-run=client?"
                .to_string(),
        );
    }
    if !problems.is_empty() {
        return Err(aggregate(problems));
    }

    let mut errors: Vec<String> = Vec::new();
    let change = Change {
        print: &args.print,
        field_manager: &args.field_manager,
        dry_run,
        op: "image updated",
        failure: "error: failed to patch image update to pod template: ",
    };
    for (path, before) in items {
        let mut after = before.clone();
        match update_images(&mut after, &images) {
            Ok(missing) => errors.extend(missing),
            Err(e) => {
                let name = object_name(path.as_deref(), &before);
                errors.push(format!("error: {name} {e}"));
                continue;
            }
        }
        if let Err(e) = change.send(ctx, path, &before, &after).await {
            errors.push(e);
        }
    }
    finish(errors)
}

/// kubectl's `populateResourceListV1`: `cpu=100m,memory=256Mi` into canonical quantities
/// (pure).
pub fn parse_resource_list(spec: &str) -> Result<Vec<(String, String)>> {
    let mut out: Vec<(String, String)> = Vec::new();
    for kv in spec.split(',').filter(|kv| !kv.is_empty()) {
        let parts: Vec<&str> = kv.split('=').collect();
        if parts.len() != 2 {
            return Err(CliError::msg(format!(
                "Invalid argument syntax {kv}, expected <resource>=<value>"
            )));
        }
        let q = api::kinds::validate::quantity::Quantity::parse(parts[1]).map_err(CliError::msg)?;
        out.retain(|(k, _)| k != parts[0]);
        out.push((parts[0].to_string(), q.canonical()));
    }
    Ok(out)
}

/// kubectl's container selector: `*` wildcards (pure).
pub fn select_string(s: &str, spec: &str) -> bool {
    if spec == "*" {
        return true;
    }
    if !spec.contains('*') {
        return s == spec;
    }
    let parts: Vec<&str> = spec.split('*').collect();
    let mut pos = 0;
    for (i, part) in parts.iter().enumerate() {
        if part.is_empty() {
            continue;
        }
        match s[pos..].find(part) {
            Some(at) if !(i == 0 && at != 0) => pos += at + part.len(),
            _ => return false,
        }
    }
    parts.last().is_none_or(|l| l.is_empty() || s.ends_with(l))
}

/// Sets limits and requests on the selected containers and init containers of an
/// object's pod spec; whether any container was selected (pure).
pub fn update_resources(
    obj: &mut Value,
    selector: &str,
    limits: &[(String, String)],
    requests: &[(String, String)],
) -> Result<bool, String> {
    let kind = obj["kind"].as_str().unwrap_or_default().to_string();
    let Some(ptr) = pod_spec_pointer(&kind) else {
        return Err(format!(
            "the object is not a pod or does not have a pod template: *v1.{kind}"
        ));
    };
    let Some(spec) = obj.pointer_mut(ptr) else {
        return Ok(false);
    };
    let mut found = false;
    for field in ["containers", "initContainers"] {
        for c in spec
            .get_mut(field)
            .and_then(Value::as_array_mut)
            .into_iter()
            .flatten()
        {
            if !select_string(c["name"].as_str().unwrap_or_default(), selector) {
                continue;
            }
            found = true;
            for (key, list) in [("limits", limits), ("requests", requests)] {
                if list.is_empty() {
                    continue;
                }
                if !c["resources"].is_object() {
                    c["resources"] = Value::Object(serde_json::Map::new());
                }
                if !c["resources"][key].is_object() {
                    c["resources"][key] = Value::Object(serde_json::Map::new());
                }
                for (k, v) in list {
                    c["resources"][key][k] = Value::String(v.clone());
                }
            }
        }
    }
    Ok(found)
}

async fn resources(ctx: &Ctx, args: ResourcesArgs) -> Result<()> {
    let dry_run = args.dry_run.resolve(ctx)?;
    args.print.format(false)?;
    let mut items: Vec<(Option<String>, Value)> = Vec::new();
    if args.local {
        if !args.args.is_empty() {
            return Err(CliError::msg(
                "error: you must specify resources by --filename when --local is set.\nExample resource specifications include:\n   '-f rsrc.yaml'\n   '--filename=rsrc.json'",
            ));
        }
        for (_, d) in targets::read_documents(ctx, &args.files)? {
            items.push((None, d));
        }
    } else {
        items = fetch(
            ctx,
            &args.args,
            &args.files,
            args.selector.as_deref(),
            args.all,
        )
        .await?;
    }
    if args.local && dry_run == DryRun::Server {
        return Err(CliError::msg(
            "cannot specify --local and --dry-run=server - did you mean --dry-run=client?",
        ));
    }
    if args.all && args.selector.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(CliError::msg(
            "cannot set --all and --selector at the same time",
        ));
    }
    if args.limits.is_empty() && args.requests.is_empty() {
        return Err(CliError::msg(
            "you must specify an update to requests or limits (in the form of --requests/--limits)",
        ));
    }
    let limits = parse_resource_list(&args.limits)?;
    let requests = parse_resource_list(&args.requests)?;

    let mut errors: Vec<String> = Vec::new();
    let change = Change {
        print: &args.print,
        field_manager: &args.field_manager,
        dry_run,
        op: "resource requirements updated",
        failure: "error: failed to patch resources update to pod template ",
    };
    for (path, before) in items {
        let mut after = before.clone();
        match update_resources(&mut after, &args.containers, &limits, &requests) {
            Ok(true) => {}
            Ok(false) => {
                errors.push(format!(
                    "error: unable to find container named {}",
                    args.containers
                ));
                continue;
            }
            Err(e) => {
                let name = object_name(path.as_deref(), &before);
                errors.push(format!("error: {name} {e}"));
                continue;
            }
        }
        if let Err(e) = change.send(ctx, path, &before, &after).await {
            errors.push(e);
        }
    }
    finish(errors)
}

/// kubectl's `info.ObjectName()`: `deployments/nginx` (from the request path; for local
/// objects, from the kind).
fn object_name(path: Option<&str>, obj: &Value) -> String {
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    let resource = match path.and_then(|p| p.rsplit('/').nth(1)) {
        Some(r) => r.to_string(),
        None => format!(
            "{}s",
            obj["kind"].as_str().unwrap_or_default().to_lowercase()
        ),
    };
    format!("{resource}/{name}")
}

/// kubectl's `SplitEnvironmentFromResources` (pure).
pub fn split_env(args: &[String]) -> Option<(Vec<String>, Vec<String>)> {
    let mut resources = Vec::new();
    let mut env = Vec::new();
    for s in args {
        let is_env = s.find('=').is_some_and(|i| i > 0) || s.ends_with('-');
        match (env.is_empty(), is_env) {
            (_, true) => env.push(s.clone()),
            (true, false) => resources.push(s.clone()),
            (false, false) => return None,
        }
    }
    Some((resources, env))
}

/// kubectl's `ParseEnv` (without `-` for stdin): variables to set and names to remove
/// (pure).
pub fn parse_env(spec: &[String]) -> Result<(Vec<Value>, Vec<String>)> {
    let mut env: Vec<Value> = Vec::new();
    let mut remove = Vec::new();
    for s in spec {
        if s == "-" {
            return Err(CliError::msg("when '-' is used, STDIN must be open"));
        } else if let Some((k, v)) = s.split_once('=') {
            let errs = api::validation::names::is_env_var_name(k);
            if !errs.is_empty() {
                return Err(CliError::msg(format!(
                    "{:?} is not a valid key name: {}",
                    k,
                    errs.join(";")
                )));
            }
            env.push(serde_json::json!({"name": k, "value": v}));
        } else if let Some(k) = s.strip_suffix('-') {
            remove.push(k.to_string());
        } else {
            return Err(CliError::msg(format!("unknown environment variable: {s}")));
        }
    }
    if remove
        .iter()
        .any(|r| env.iter().any(|e| e["name"].as_str() == Some(r)))
    {
        return Err(CliError::msg(
            "can not both modify and remove the same environment variable in the same command",
        ));
    }
    Ok((env, remove))
}

/// kubectl's `updateEnv`: replaces variables in place, drops removed ones, appends new
/// ones (pure).
pub fn update_env(existing: &[Value], env: &[Value], remove: &[String]) -> Vec<Value> {
    let name = |v: &Value| v["name"].as_str().unwrap_or_default().to_string();
    let mut covered: Vec<String> = remove.to_vec();
    let mut out = Vec::new();
    for e in existing {
        let n = name(e);
        if covered.contains(&n) {
            continue;
        }
        if let Some(newer) = env.iter().find(|x| name(x) == n) {
            covered.push(n);
            out.push(newer.clone());
            continue;
        }
        out.push(e.clone());
    }
    for e in env {
        let n = name(e);
        if covered.contains(&n) {
            continue;
        }
        covered.push(n);
        out.push(e.clone());
    }
    out
}

/// kubectl's `GetEnvVarRefString`.
fn env_ref_string(from: &Value) -> String {
    if let Some(r) = from.get("configMapKeyRef") {
        return format!(
            "configmap {}, key {}",
            r["name"].as_str().unwrap_or_default(),
            r["key"].as_str().unwrap_or_default()
        );
    }
    if let Some(r) = from.get("secretKeyRef") {
        return format!(
            "secret {}, key {}",
            r["name"].as_str().unwrap_or_default(),
            r["key"].as_str().unwrap_or_default()
        );
    }
    if let Some(r) = from.get("fieldRef") {
        return format!("field path {}", r["fieldPath"].as_str().unwrap_or_default());
    }
    if let Some(r) = from.get("resourceFieldRef") {
        let c = r["containerName"].as_str().unwrap_or_default();
        let prefix = if c.is_empty() {
            String::new()
        } else {
            format!("{c}/")
        };
        return format!(
            "resource field {prefix}{}",
            r["resource"].as_str().unwrap_or_default()
        );
    }
    String::new()
}

async fn env(ctx: &Ctx, args: EnvArgs) -> Result<()> {
    if args.all && args.selector.as_deref().is_some_and(|s| !s.is_empty()) {
        return Err(CliError::msg(
            "cannot set --all and --selector at the same time",
        ));
    }
    let Some((resources, env_args)) = split_env(&args.args) else {
        return Err(CliError::msg(format!(
            "all resources must be specified before environment changes: {}",
            args.args.join(" ")
        )));
    };
    let dry_run = args.dry_run.resolve(ctx)?;
    args.print.format(false)?;
    if args.local && dry_run == DryRun::Server {
        return Err(CliError::msg(
            "cannot specify --local and --dry-run=server - did you mean --dry-run=client?",
        ));
    }
    if args.files.filenames.is_empty() && resources.is_empty() {
        return Err(CliError::msg(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>",
        ));
    }
    if args.list && args.print.output.as_deref().is_some_and(|o| !o.is_empty()) {
        return Err(CliError::msg(
            "--list and --output may not be specified together",
        ));
    }
    if !args.keys.is_empty() && args.from.is_none() {
        return Err(CliError::msg(
            "when specifying --keys, a configmap or secret must be provided with --from",
        ));
    }
    let spec: Vec<String> = args.env.iter().chain(&env_args).cloned().collect();
    let (mut vars, remove) = parse_env(&spec)?;
    if let Some(from) = &args.from {
        let sel = Selection {
            args: std::slice::from_ref(from),
            fetch: true,
            require_names: true,
            ..Selection::default()
        };
        let found = targets::find(ctx, &sel).await?;
        if !found.errors.is_empty() {
            return targets::finish(ctx, found.errors);
        }
        for t in found.targets {
            let obj = t.object.unwrap_or(Value::Null);
            let ref_key = match obj["kind"].as_str() {
                Some("Secret") => "secretKeyRef",
                Some("ConfigMap") => "configMapKeyRef",
                _ => return Err(CliError::msg("unsupported resource specified in --from")),
            };
            let mut keys: Vec<String> = obj["data"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default();
            keys.sort();
            for key in keys {
                if !args.keys.is_empty() && !args.keys.contains(&key) {
                    continue;
                }
                let name: String = key
                    .chars()
                    .map(|c| {
                        if c.is_ascii_alphanumeric() || c == '_' {
                            c
                        } else {
                            '_'
                        }
                    })
                    .collect::<String>()
                    .to_uppercase();
                if name != key {
                    let _ = writeln!(ctx.err(), "Warning: key {key} transferred to {name}");
                }
                let mut v = serde_json::json!({"name": name, "valueFrom": {}});
                v["valueFrom"][ref_key] = serde_json::json!({"name": t.name, "key": key});
                vars.push(v);
            }
        }
    }
    if !args.prefix.is_empty() {
        for v in &mut vars {
            let n = format!("{}{}", args.prefix, v["name"].as_str().unwrap_or_default());
            v["name"] = Value::String(n);
        }
    }

    let mut items: Vec<(Option<String>, Value)> = Vec::new();
    if args.local {
        for (_, d) in targets::read_documents(ctx, &args.files)? {
            items.push((None, d));
        }
    } else {
        items = fetch(
            ctx,
            &resources,
            &args.files,
            args.selector.as_deref(),
            args.all,
        )
        .await?;
    }

    let mut errors: Vec<String> = Vec::new();
    let change = Change {
        print: &args.print,
        field_manager: &args.field_manager,
        dry_run,
        op: "env updated",
        failure: "error: failed to patch env update to pod template: ",
    };
    for (path, before) in items {
        let mut after = before.clone();
        let kind = before["kind"].as_str().unwrap_or_default().to_string();
        let obj_name = before["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let Some(ptr) = pod_spec_pointer(&kind) else {
            errors.push(format!(
                "error: {} the object is not a pod or does not have a pod template: *v1.{kind}",
                object_name(path.as_deref(), &before)
            ));
            continue;
        };
        let mut failed = None;
        let mut matched = false;
        if let Some(spec) = after.pointer_mut(ptr) {
            for field in ["containers", "initContainers"] {
                for c in spec
                    .get_mut(field)
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                {
                    let cname = c["name"].as_str().unwrap_or_default().to_string();
                    if !select_string(&cname, &args.containers) {
                        continue;
                    }
                    matched = true;
                    let existing = c["env"].as_array().cloned().unwrap_or_default();
                    if !args.overwrite {
                        for v in &vars {
                            let n = v["name"].as_str().unwrap_or_default();
                            if let Some(cur) =
                                existing.iter().find(|e| e["name"].as_str() == Some(n))
                                && cur["value"] != v["value"]
                            {
                                failed.get_or_insert(format!(
                                    "'{n}' already has a value ({}), and --overwrite is false",
                                    cur["value"].as_str().unwrap_or_default()
                                ));
                            }
                        }
                    }
                    let updated = update_env(&existing, &vars, &remove);
                    if args.list {
                        let mut out = ctx.out();
                        let _ = writeln!(out, "# {kind} {obj_name}, container {cname}");
                        for e in &updated {
                            match e.get("valueFrom") {
                                Some(from) if !from.is_null() => {
                                    let _ = writeln!(
                                        out,
                                        "# {} from {}",
                                        e["name"].as_str().unwrap_or_default(),
                                        env_ref_string(from)
                                    );
                                }
                                _ => {
                                    let _ = writeln!(
                                        out,
                                        "{}={}",
                                        e["name"].as_str().unwrap_or_default(),
                                        e["value"].as_str().unwrap_or_default()
                                    );
                                }
                            }
                        }
                    }
                    if updated.is_empty() {
                        if let Some(m) = c.as_object_mut() {
                            m.remove("env");
                        }
                    } else {
                        c["env"] = Value::Array(updated);
                    }
                }
            }
        }
        if !matched {
            let _ = writeln!(
                ctx.err(),
                "Warning: {kind}/{obj_name} does not have any containers matching {:?}",
                args.containers
            );
        }
        if let Some(f) = failed {
            errors.push(format!(
                "error: {} {f}",
                object_name(path.as_deref(), &before)
            ));
            continue;
        }
        if args.list {
            continue;
        }
        if let Err(e) = change.send(ctx, path, &before, &after).await {
            errors.push(e);
        }
    }
    if args.list || errors.is_empty() {
        Ok(())
    } else {
        Err(aggregate(errors))
    }
}

/// The objects the arguments name (`-f`, `-l`, `--all`), fetched, with their paths; a
/// lookup failure is the command's error.
async fn fetch(
    ctx: &Ctx,
    resources: &[String],
    files: &FileFlags,
    selector: Option<&str>,
    all: bool,
) -> Result<Vec<(Option<String>, Value)>> {
    let sel = Selection {
        args: resources,
        files: Some(files),
        selector,
        all,
        fetch: true,
        require_names: !all,
        ..Selection::default()
    };
    let found = targets::find(ctx, &sel).await?;
    if !found.errors.is_empty() {
        // Always an error when there are errors.
        targets::finish(ctx, found.errors)?;
    }
    Ok(found
        .targets
        .into_iter()
        .filter_map(|t| {
            let path = t.path();
            t.object.map(|o| (Some(path), o))
        })
        .collect())
}

/// The common tail of `set image|resources|env` for one changed object.
struct Change<'a> {
    print: &'a PrintFlags,
    field_manager: &'a str,
    dry_run: DryRun,
    /// The operation printed (`image updated`).
    op: &'a str,
    /// What precedes the server's message when the PATCH fails.
    failure: &'a str,
}

impl Change<'_> {
    /// The two-way patch from `before` to `after`; nothing when it is empty, else print
    /// `after` (client dry run or a local object) or PATCH `path` and print the answer.
    /// `Err` is the message to aggregate.
    async fn send(
        &self,
        ctx: &Ctx,
        path: Option<String>,
        before: &Value,
        after: &Value,
    ) -> Result<(), String> {
        let patch = two_way(before, after)?;
        if patch.as_object().is_some_and(|m| m.is_empty()) {
            return Ok(());
        }
        let Some(path) = path.filter(|_| self.dry_run != DryRun::Client) else {
            return print_operation(ctx, self.print, after, self.op, self.dry_run)
                .map_err(|e| e.to_string());
        };
        match send_patch(ctx, &path, self.field_manager, self.dry_run, &patch).await {
            Ok(actual) => print_operation(ctx, self.print, &actual, self.op, self.dry_run)
                .map_err(|e| e.to_string()),
            Err(e) => {
                let msg = match &e {
                    CliError::Api(s) => s.message.clone(),
                    other => other.to_string(),
                };
                Err(format!("{}{msg}", self.failure))
            }
        }
    }
}

/// The two-way strategic merge patch between an object before and after a change.
fn two_way(before: &Value, after: &Value) -> Result<Value, String> {
    let kind = before["kind"].as_str().unwrap_or_default();
    let api_version = before["apiVersion"].as_str().unwrap_or_default();
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    let schema = crate::twoway::builtin_schema(group, version, kind).unwrap_or(Value::Null);
    crate::twoway::create_two_way(before, after, &schema, api::schema::builtin())
        .map_err(|e| format!("error: {e:?}"))
}

async fn send_patch(
    ctx: &Ctx,
    path: &str,
    field_manager: &str,
    dry_run: DryRun,
    patch: &Value,
) -> Result<Value> {
    let url = format!(
        "{path}?fieldManager={}{}",
        targets::query_escape(field_manager),
        dry_run.query()
    );
    let req = Request::new(Method::PATCH, url)
        .json(patch)
        .content_type("application/strategic-merge-patch+json");
    ctx.client().await?.send(req).await?.json()
}

/// Success when nothing failed, else the failures as one aggregate error.
fn finish(errors: Vec<String>) -> Result<()> {
    if errors.is_empty() {
        Ok(())
    } else {
        Err(aggregate(errors))
    }
}

/// kubectl's aggregate error: each message on its own line, `error: ` once in front of
/// those that lack it.
fn aggregate(msgs: Vec<String>) -> CliError {
    let lines: Vec<String> = msgs
        .into_iter()
        .map(|m| {
            let m = m.trim_end().to_string();
            if m.starts_with("error: ") {
                m
            } else {
                format!("error: {m}")
            }
        })
        .collect();
    if lines.len() == 1 {
        return CliError::Raw(lines[0].clone());
    }
    // Go's MultipleErrors prints "[" + the errors joined by ", " + "]" only via
    // utilerrors' Error(); kubectl's CheckErr prints one per line.
    CliError::Raw(lines.join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn images_on_containers_and_init_containers() {
        let mut d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"n"},
            "spec":{"template":{"spec":{"initContainers":[{"name":"init","image":"a"}],
            "containers":[{"name":"nginx","image":"nginx"},{"name":"side","image":"s"}]}}}});
        let before = d.clone();
        let missing = update_images(
            &mut d,
            &[
                ("nginx".into(), "nginx:1.25".into()),
                ("foo".into(), "x".into()),
            ],
        )
        .unwrap();
        assert_eq!(
            missing,
            vec!["error: unable to find container named \"foo\"".to_string()]
        );
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["image"],
            "nginx:1.25"
        );
        let schema = crate::twoway::builtin_schema("apps", "v1", "Deployment").unwrap();
        let p =
            crate::twoway::create_two_way(&before, &d, &schema, api::schema::builtin()).unwrap();
        assert_eq!(
            p,
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"nginx"},{"name":"side"}],
                "containers":[{"image":"nginx:1.25","name":"nginx"}]}}}})
        );
        let mut all = before.clone();
        update_images(&mut all, &[("*".into(), "busybox".into())]).unwrap();
        assert_eq!(
            all["spec"]["template"]["spec"]["initContainers"][0]["image"],
            "busybox"
        );
        assert_eq!(
            all["spec"]["template"]["spec"]["containers"][1]["image"],
            "busybox"
        );
        let mut svc = json!({"kind":"Service"});
        assert!(update_images(&mut svc, &[("a".into(), "b".into())]).is_err());
    }

    #[test]
    fn resources_and_selectors() {
        assert_eq!(
            parse_resource_list("cpu=0.5,memory=1024Mi").unwrap(),
            vec![
                ("cpu".to_string(), "500m".to_string()),
                ("memory".to_string(), "1Gi".to_string())
            ]
        );
        assert_eq!(
            parse_resource_list("cpu").unwrap_err().to_string(),
            "error: Invalid argument syntax cpu, expected <resource>=<value>"
        );
        assert!(select_string("nginx", "ng*"));
        assert!(select_string("nginx", "*inx"));
        assert!(!select_string("nginx", "side*"));
        let mut d = json!({"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"n"},
            "spec":{"template":{"spec":{"containers":[{"name":"nginx","image":"nginx"},{"name":"side","image":"s"}]}}}});
        let before = d.clone();
        assert!(update_resources(&mut d, "nginx", &[("cpu".into(), "200m".into())], &[]).unwrap());
        assert_eq!(
            d["spec"]["template"]["spec"]["containers"][0]["resources"],
            json!({"limits":{"cpu":"200m"}})
        );
        assert!(d["spec"]["template"]["spec"]["containers"][1]["resources"].is_null());
        assert_eq!(
            two_way(&before, &d).unwrap(),
            json!({"spec":{"template":{"spec":{
                "$setElementOrder/containers":[{"name":"nginx"},{"name":"side"}],
                "containers":[{"name":"nginx","resources":{"limits":{"cpu":"200m"}}}]}}}})
        );
        assert!(!update_resources(&mut d, "nope", &[("cpu".into(), "1".into())], &[]).unwrap());
    }

    #[test]
    fn env_parsing_and_update() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            split_env(&s(&["deploy/x", "A=1", "B-"])).unwrap(),
            (s(&["deploy/x"]), s(&["A=1", "B-"]))
        );
        assert!(split_env(&s(&["deploy/x", "A=1", "y"])).is_none());
        let (env, rm) = parse_env(&s(&["A=1", "B-"])).unwrap();
        assert_eq!(env, vec![json!({"name":"A","value":"1"})]);
        assert_eq!(rm, s(&["B"]));
        assert!(
            parse_env(&s(&["1A=x"]))
                .unwrap_err()
                .to_string()
                .starts_with("error: \"1A\" is not a valid key name: ")
        );
        let existing = vec![
            json!({"name":"A","value":"0"}),
            json!({"name":"B","value":"b"}),
        ];
        assert_eq!(
            update_env(
                &existing,
                &[
                    json!({"name":"C","value":"c"}),
                    json!({"name":"A","value":"1"})
                ],
                &s(&["B"])
            ),
            vec![
                json!({"name":"A","value":"1"}),
                json!({"name":"C","value":"c"})
            ]
        );
    }

    #[test]
    fn cronjob_pointer() {
        assert_eq!(
            pod_spec_pointer("CronJob"),
            Some("/spec/jobTemplate/spec/template/spec")
        );
        assert_eq!(pod_spec_pointer("Service"), None);
    }
}
