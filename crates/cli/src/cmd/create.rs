//! `kubectl create <generator>`: the generators of [`crate::generators`] behind kubectl's
//! flags, checks, messages and exit codes; `create -f` is [`crate::cmd::create_files`]
//! when no generator is named.
//!
//! Every generator runs the same way: parse and check the flags (client-side validation:
//! nothing is sent on a failure), build the object, then `--dry-run=client` prints it (with
//! `metadata.namespace` when `-n` was given), else POST it (`?dryRun=All` for
//! `--dry-run=server`, `fieldManager`, `fieldValidation`) and print the answer or
//! `kind.group/name created`.

use std::collections::BTreeMap;
use std::io::Write;

use clap::Subcommand;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::generators::{self, config, misc, rbac, services, workloads};
use crate::mapper::Mapping;
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
#[group(skip)]
pub struct Args {
    #[command(subcommand)]
    pub generator: Option<Generator>,
    /// `create -f` (helper "apply"'s module), when no generator is named.
    #[command(flatten)]
    pub files: crate::cmd::create_files::Args,
}

/// The flags every `create <generator>` has.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct Common {
    #[command(flatten)]
    pub print: PrintFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// If true, the configuration of current object will be saved in its annotation.
    #[arg(long)]
    pub save_config: bool,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-create")]
    pub field_manager: String,
    /// Must be one of: strict (or true), warn, ignore (or false).
    #[arg(
        long,
        num_args = 0..=1,
        default_missing_value = "strict",
        require_equals = true,
        default_value = "strict"
    )]
    pub validate: String,
}

/// `NAME [-- COMMAND [args…]]`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct NameArgs {
    /// The name (exactly one).
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// The command after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    pub command: Vec<String>,
}

impl NameArgs {
    /// kubectl's `NameFromCommandArgs`.
    pub fn name(&self, cmd: &str) -> Result<String> {
        if self.names.len() != 1 {
            return Err(CliError::usage(
                format!("kubectl create {cmd}"),
                format!("exactly one NAME is required, got {}", self.names.len()),
            ));
        }
        Ok(self.names[0].clone())
    }
}

#[derive(Subcommand, Debug)]
pub enum Generator {
    /// Create a deployment with the specified name.
    #[command(alias = "deploy")]
    Deployment(DeploymentArgs),
    /// Create a job with the specified name.
    Job(JobArgs),
    /// Create a cron job with the specified name.
    #[command(alias = "cj")]
    Cronjob(CronJobArgs),
    /// Create a config map from a local file, directory or literal value.
    #[command(alias = "cm")]
    Configmap(ConfigMapArgs),
    /// Create a secret using a specified subcommand.
    Secret(SecretArgs),
    /// Create a service using a specified subcommand.
    #[command(alias = "svc")]
    Service(ServiceArgs),
    /// Create a namespace with the specified name.
    #[command(alias = "ns")]
    Namespace(PlainArgs),
    /// Create a service account with the specified name.
    #[command(alias = "sa")]
    Serviceaccount(PlainArgs),
    /// Create a role with single rule.
    Role(RoleArgs),
    /// Create a cluster role.
    Clusterrole(ClusterRoleArgs),
    /// Create a role binding for a particular role or cluster role.
    Rolebinding(RoleBindingArgs),
    /// Create a cluster role binding for a particular cluster role.
    Clusterrolebinding(ClusterRoleBindingArgs),
    /// Create a quota with the specified name.
    #[command(alias = "resourcequota")]
    Quota(QuotaArgs),
    /// Create a priority class with the specified name.
    #[command(alias = "pc")]
    Priorityclass(PriorityClassArgs),
    /// Create a pod disruption budget with the specified name.
    #[command(alias = "pdb")]
    Poddisruptionbudget(PdbArgs),
    /// Create an ingress with the specified name.
    #[command(alias = "ing")]
    Ingress(IngressArgs),
    /// Request a service account token.
    Token(TokenArgs),
}

#[derive(clap::Args, Debug)]
pub struct IngressArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Ingress Class to be used.
    #[arg(long, default_value = "")]
    pub class: String,
    /// Rule in format host/path=service:port[,tls=secretname] (repeatable).
    #[arg(long)]
    pub rule: Vec<String>,
    /// Default service for backend, in format of svcname:port.
    #[arg(long, default_value = "")]
    pub default_backend: String,
    /// Annotation to insert in the ingress object, in the format annotation=value.
    #[arg(long)]
    pub annotation: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct DeploymentArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Image names to run (repeatable, comma-separated).
    #[arg(long, value_delimiter = ',')]
    pub image: Vec<String>,
    /// The containerPort that this deployment exposes.
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub port: i32,
    /// Number of replicas to create. Default is 1.
    #[arg(short = 'r', long, default_value_t = 1, allow_negative_numbers = true)]
    pub replicas: i32,
}

#[derive(clap::Args, Debug)]
pub struct JobArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Image name to run.
    #[arg(long, default_value = "")]
    pub image: String,
    /// The name of the resource to create a Job from (only cronjob is supported).
    #[arg(long, default_value = "")]
    pub from: String,
}

#[derive(clap::Args, Debug)]
pub struct CronJobArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Image name to run.
    #[arg(long)]
    pub image: Option<String>,
    /// A schedule in the Cron format the job should be run with.
    #[arg(long)]
    pub schedule: Option<String>,
    /// job's restart policy. supported values: OnFailure, Never
    #[arg(long, default_value = "")]
    pub restart: String,
}

/// `--from-file`, `--from-literal`, `--from-env-file`, `--append-hash`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct SourceFlags {
    /// Key files ([key=]source), or directories.
    #[arg(long, value_delimiter = ',')]
    pub from_file: Vec<String>,
    /// A key and literal value (key=value).
    #[arg(long)]
    pub from_literal: Vec<String>,
    /// Files of key=val lines.
    #[arg(long, value_delimiter = ',')]
    pub from_env_file: Vec<String>,
    /// Append a hash of the object to its name.
    #[arg(long)]
    pub append_hash: bool,
}

impl SourceFlags {
    fn sources(&self) -> config::Sources {
        config::Sources {
            files: self.from_file.clone(),
            literals: self.from_literal.clone(),
            env_files: self.from_env_file.clone(),
            append_hash: self.append_hash,
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct ConfigMapArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sources: SourceFlags,
}

#[derive(clap::Args, Debug)]
pub struct SecretArgs {
    #[command(subcommand)]
    pub kind: SecretKind,
}

#[derive(Subcommand, Debug)]
pub enum SecretKind {
    /// Create a secret from a local file, directory, or literal value.
    Generic(SecretGenericArgs),
    /// Create a secret for use with a Docker registry.
    DockerRegistry(SecretDockerArgs),
    /// Create a TLS secret.
    Tls(SecretTlsArgs),
}

#[derive(clap::Args, Debug)]
pub struct SecretGenericArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub sources: SourceFlags,
    /// The type of secret to create.
    #[arg(long = "type", default_value = "")]
    pub secret_type: String,
}

#[derive(clap::Args, Debug)]
pub struct SecretDockerArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    #[arg(long, default_value = "")]
    pub docker_username: String,
    #[arg(long, default_value = "")]
    pub docker_password: String,
    #[arg(long, default_value = "")]
    pub docker_email: String,
    #[arg(long, default_value = "https://index.docker.io/v1/")]
    pub docker_server: String,
    #[arg(long, value_delimiter = ',')]
    pub from_file: Vec<String>,
    #[arg(long)]
    pub append_hash: bool,
}

#[derive(clap::Args, Debug)]
pub struct SecretTlsArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Path to PEM encoded public key certificate.
    #[arg(long, default_value = "")]
    pub cert: String,
    /// Path to private key associated with given certificate.
    #[arg(long, default_value = "")]
    pub key: String,
    #[arg(long)]
    pub append_hash: bool,
}

#[derive(clap::Args, Debug)]
pub struct ServiceArgs {
    #[command(subcommand)]
    pub kind: ServiceKind,
}

#[derive(Subcommand, Debug)]
pub enum ServiceKind {
    /// Create a ClusterIP service.
    Clusterip(ClusterIpArgs),
    /// Create a NodePort service.
    Nodeport(NodePortArgs),
    /// Create a LoadBalancer service.
    Loadbalancer(ServiceTypeArgs),
    /// Create an ExternalName service.
    Externalname(ExternalNameArgs),
}

/// The flags every `create service <type>` has.
#[derive(clap::Args, Debug)]
pub struct ServiceTypeArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Port pairs can be specified as '<port>:<targetPort>'.
    #[arg(long, value_delimiter = ',')]
    pub tcp: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct ClusterIpArgs {
    #[command(flatten)]
    pub base: ServiceTypeArgs,
    /// Assign your own ClusterIP or set to 'None' for a 'headless' service.
    #[arg(long, default_value = "")]
    pub clusterip: String,
}

#[derive(clap::Args, Debug)]
pub struct NodePortArgs {
    #[command(flatten)]
    pub base: ServiceTypeArgs,
    /// Port used to expose the service on each node in a cluster.
    #[arg(long, default_value_t = 0)]
    pub node_port: i64,
}

#[derive(clap::Args, Debug)]
pub struct ExternalNameArgs {
    #[command(flatten)]
    pub base: ServiceTypeArgs,
    /// External name of service.
    #[arg(long, default_value = "")]
    pub external_name: String,
}

#[derive(clap::Args, Debug)]
pub struct PlainArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(clap::Args, Debug)]
pub struct RoleArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// Verb that applies to the resources contained in the rule.
    #[arg(long, value_delimiter = ',')]
    pub verb: Vec<String>,
    /// Resource that the rule applies to.
    #[arg(long, value_delimiter = ',')]
    pub resource: Vec<String>,
    /// Resource in the white list that the rule applies to (repeatable).
    #[arg(long)]
    pub resource_name: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct ClusterRoleArgs {
    #[command(flatten)]
    pub role: RoleArgs,
    /// A partial url that user should have access to.
    #[arg(long, value_delimiter = ',')]
    pub non_resource_url: Vec<String>,
    /// An aggregation label selector for combining ClusterRoles.
    #[arg(long, value_delimiter = ',')]
    pub aggregation_rule: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct SubjectFlags {
    /// Usernames to bind to the role (repeatable).
    #[arg(long)]
    pub user: Vec<String>,
    /// Groups to bind to the role (repeatable).
    #[arg(long)]
    pub group: Vec<String>,
    /// Service accounts to bind to the role, in the format <namespace>:<name>.
    #[arg(long)]
    pub serviceaccount: Vec<String>,
}

#[derive(clap::Args, Debug)]
pub struct RoleBindingArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub subjects: SubjectFlags,
    /// ClusterRole this RoleBinding should reference.
    #[arg(long, default_value = "")]
    pub clusterrole: String,
    /// Role this RoleBinding should reference.
    #[arg(long, default_value = "")]
    pub role: String,
}

#[derive(clap::Args, Debug)]
pub struct ClusterRoleBindingArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    #[command(flatten)]
    pub subjects: SubjectFlags,
    /// ClusterRole this ClusterRoleBinding should reference.
    #[arg(long)]
    pub clusterrole: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct QuotaArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// A comma-delimited set of resource=quantity pairs that define a hard limit.
    #[arg(long, default_value = "")]
    pub hard: String,
    /// A comma-delimited set of quota scopes that must all match each object tracked by
    /// the quota.
    #[arg(long, default_value = "")]
    pub scopes: String,
}

#[derive(clap::Args, Debug)]
pub struct PriorityClassArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// the value of this priority class.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub value: i32,
    /// Whether this PriorityClass should be considered as the default priority.
    #[arg(long)]
    pub global_default: bool,
    /// Guidelines on when this priority class should be used.
    #[arg(long, default_value = "")]
    pub description: String,
    /// The policy for preempting pods with lower priority.
    #[arg(long, default_value = "PreemptLowerPriority")]
    pub preemption_policy: String,
}

#[derive(clap::Args, Debug)]
pub struct PdbArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub common: Common,
    /// The minimum number or percentage of available pods this budget requires.
    #[arg(long, default_value = "")]
    pub min_available: String,
    /// The maximum number or percentage of unavailable pods this budget requires.
    #[arg(long, default_value = "")]
    pub max_unavailable: String,
    /// A label selector to use for this budget.
    #[arg(long, default_value = "")]
    pub selector: String,
}

#[derive(clap::Args, Debug)]
pub struct TokenArgs {
    #[command(flatten)]
    pub name: NameArgs,
    #[command(flatten)]
    pub print: PrintFlags,
    /// Audience of the requested token (repeatable).
    #[arg(long)]
    pub audience: Vec<String>,
    /// Requested lifetime of the issued token.
    #[arg(long, default_value = "0s")]
    pub duration: String,
    /// Kind of an object to bind the token to.
    #[arg(long, default_value = "")]
    pub bound_object_kind: String,
    /// Name of an object to bind the token to.
    #[arg(long, default_value = "")]
    pub bound_object_name: String,
    /// UID of an object to bind the token to.
    #[arg(long, default_value = "")]
    pub bound_object_uid: String,
}

/// How a server failure of a create is reported: kubectl's typed generators wrap it
/// (`error: failed to create deployment: …`), the others print it as `CheckErr` does.
#[derive(Debug, Clone, Copy)]
pub enum Wrap {
    /// `error: <prefix><server message>`.
    Prefix(&'static str),
    /// The server's error as kubectl's `CheckErr` prints it.
    Raw,
}

/// kubectl's `fieldValidation` from `--validate`.
pub fn field_validation(v: &str) -> Result<&'static str> {
    match v.to_lowercase().as_str() {
        "strict" | "true" => Ok("Strict"),
        "warn" => Ok("Warn"),
        "ignore" | "false" => Ok("Ignore"),
        _ => Err(CliError::msg(format!(
            "invalid - validate option \"{v}\"; must be one of: strict (or true), warn, ignore (or false)"
        ))),
    }
}

/// kubectl's `CheckErr` rendering of a server failure: an `Invalid` status as
/// `The Kind "name" is invalid: field: message` (several causes on `* ` lines); other
/// failures unchanged.
pub fn kubectl_error(e: CliError) -> CliError {
    let CliError::Api(s) = &e else {
        return e;
    };
    if s.reason != "Invalid" {
        return e;
    }
    let details = s.status.get("details");
    let Some(details) = details.filter(|d| d.is_object()) else {
        return e;
    };
    let kind = details
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = details
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let mut head = if kind.is_empty() && name.is_empty() {
        format!("The request is invalid: {}", s.message)
    } else {
        format!("The {kind} {} is invalid", go_quote(name))
    };
    let causes: Vec<String> = details
        .get("causes")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|c| {
            let field = c.get("field").and_then(Value::as_str).unwrap_or_default();
            let msg = c.get("message").and_then(Value::as_str).unwrap_or_default();
            if field.is_empty() {
                msg.to_string()
            } else {
                format!("{field}: {msg}")
            }
        })
        .collect();
    match causes.len() {
        0 => {}
        1 => head = format!("{head}: {}", causes[0]),
        _ => {
            head.push_str(": ");
            for c in &causes {
                head.push_str(&format!("\n* {c}"));
            }
        }
    }
    CliError::Raw(head)
}

/// Go's `%q` of a plain string.
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// One object to create, and how.
pub struct Creation<'a> {
    pub mapping: Mapping,
    pub namespace: String,
    pub dry_run: DryRun,
    pub field_manager: &'a str,
    /// `fieldValidation` (`None`: not sent, as `run` and `expose`).
    pub field_validation: Option<&'static str>,
    pub wrap: Wrap,
}

/// POSTs `obj` (kubectl's `Create`): `?dryRun=All&fieldManager=…&fieldValidation=…`.
/// Returns what the server answered.
pub async fn send_create(ctx: &Ctx, c: &Creation<'_>, obj: &Value) -> Result<Value> {
    let mut query = Vec::new();
    if c.dry_run == DryRun::Server {
        query.push("dryRun=All".to_string());
    }
    if !c.field_manager.is_empty() {
        query.push(format!(
            "fieldManager={}",
            crate::cmd::targets::query_escape(c.field_manager)
        ));
    }
    if let Some(v) = c.field_validation {
        query.push(format!("fieldValidation={v}"));
    }
    let ns = c.mapping.namespaced.then_some(c.namespace.as_str());
    let mut path = c.mapping.collection_path(ns);
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let client = ctx.client().await?;
    let req = Request::new(http::Method::POST, path).json(obj);
    match client.send(req).await?.json() {
        Ok(v) => Ok(v),
        Err(CliError::Api(s)) => match c.wrap {
            Wrap::Prefix(p) => Err(CliError::msg(format!("{p}{}", s.message))),
            Wrap::Raw => Err(kubectl_error(CliError::Api(s))),
        },
        Err(e) => Err(e),
    }
}

/// The common tail of every generator: `--save-config`, then print (client dry run) or
/// create and print.
async fn finish(ctx: &Ctx, common: &Common, mut obj: Value, wrap: Wrap) -> Result<()> {
    let dry_run = common.dry_run.resolve(ctx)?;
    let validation = field_validation(&common.validate)?;
    // Check -o before anything is sent.
    common.print.format(false)?;
    let api_version = obj
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let kind = obj
        .get("kind")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let mapping = generators::builtin_mapping(&api_version, &kind)
        .ok_or_else(|| CliError::msg(format!("no mapping for {kind}")))?;
    if common.save_config {
        generators::add_last_applied(&mut obj);
    }
    let namespace = ctx.namespace().await?;
    if ctx.namespace_explicit() && mapping.namespaced {
        generators::set_namespace(&mut obj, &namespace);
    }
    if dry_run == DryRun::Client {
        return print_operation(ctx, &common.print, &obj, "created", dry_run);
    }
    let creation = Creation {
        mapping,
        namespace,
        dry_run,
        field_manager: &common.field_manager,
        field_validation: Some(validation),
        wrap,
    };
    let created = send_create(ctx, &creation, &obj).await?;
    print_operation(ctx, &common.print, &created, "created", dry_run)
}

fn required(flag: &str, value: Option<&String>) -> Result<String> {
    value
        .cloned()
        .ok_or_else(|| CliError::msg(format!("required flag(s) \"{flag}\" not set")))
}

fn parse_map_pairs(items: &[String]) -> Result<BTreeMap<String, String>> {
    let mut m = BTreeMap::new();
    for item in items {
        match item.split_once('=') {
            Some((k, v)) => {
                m.insert(k.to_string(), v.to_string());
            }
            None => {
                return Err(CliError::msg(format!(
                    "invalid argument \"{}\" for \"--aggregation-rule\" flag: {item} must be formatted as key=value",
                    items.join(",")
                )));
            }
        }
    }
    Ok(m)
}

/// Resolves `--resource` values through discovery as kubectl's `ResourceFor` does
/// (short names, singulars, inferred groups); an unknown type is the mapper's error.
async fn resolve_resources(
    ctx: &Ctx,
    resources: &[rbac::ResourceArg],
) -> Result<Vec<(String, String)>> {
    let mut out = Vec::new();
    let mut mapper = None;
    for r in resources {
        if r.resource.is_empty() || r.resource == "*" {
            out.push((r.group.clone(), r.resource.clone()));
            continue;
        }
        if mapper.is_none() {
            mapper = Some(ctx.mapper().await?);
        }
        let arg = if r.group.is_empty() {
            r.resource.clone()
        } else {
            format!("{}.{}", r.resource, r.group)
        };
        match mapper.map(|m| m.resolve(&arg)) {
            Some(Ok(m)) => out.push((m.group, m.resource)),
            Some(Err(e)) => return Err(e),
            None => out.push((r.group.clone(), r.resource.clone())),
        }
    }
    Ok(out)
}

/// `create rolebinding|clusterrolebinding --user` is the subjects' flag: in kubectl it
/// shadows the global `--user` (the kubeconfig user), but clap also hands its values to
/// the global flag. The bindings then run on a context without that global `--user`
/// (on the process's streams, which is what `main` uses).
fn subject_ctx(ctx: &Ctx) -> Option<Ctx> {
    ctx.global.user.as_ref()?;
    let mut global = ctx.global.clone();
    global.user = None;
    Some(Ctx::new(global, crate::ctx::Io::std()))
}

fn print_warnings(ctx: &Ctx, warnings: &[String]) {
    let mut err = ctx.err();
    for w in warnings {
        let _ = writeln!(err, "{w}");
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    let Some(generator) = args.generator else {
        return crate::cmd::create_files::run(ctx, args.files).await;
    };
    // The bindings' `--user` is the subjects' flag, not the kubeconfig user's.
    let child = match &generator {
        Generator::Rolebinding(_) | Generator::Clusterrolebinding(_) => subject_ctx(ctx),
        _ => None,
    };
    let ctx = child.as_ref().unwrap_or(ctx);
    let (common, obj, wrap) = match generator {
        Generator::Deployment(a) => {
            if a.image.is_empty() {
                return Err(CliError::msg("required flag(s) \"image\" not set"));
            }
            let name = a.name.name("deployment")?;
            if a.image.len() > 1 && !a.name.command.is_empty() {
                return Err(CliError::msg(
                    "cannot specify multiple --image options and command",
                ));
            }
            let obj = workloads::deployment(&name, &a.image, a.replicas, a.port, &a.name.command);
            (a.common, obj, Wrap::Prefix("failed to create deployment: "))
        }
        Generator::Job(a) => {
            let name = a.name.name("job")?;
            if a.image.is_empty() == a.from.is_empty() {
                return Err(CliError::msg("either --image or --from must be specified"));
            }
            if !a.name.command.is_empty() && !a.from.is_empty() {
                return Err(CliError::msg("cannot specify --from and command"));
            }
            let obj = if !a.image.is_empty() {
                workloads::job(&name, &a.image, &a.name.command)
            } else {
                let from = job_source(ctx, &a.from).await?;
                workloads::job_from_cronjob(&name, &from)
            };
            (a.common, obj, Wrap::Prefix("failed to create job: "))
        }
        Generator::Cronjob(a) => {
            let image = required("image", a.image.as_ref())?;
            let schedule = required("schedule", a.schedule.as_ref())?;
            let name = a.name.name("cronjob")?;
            let obj = workloads::cronjob(&name, &image, &schedule, &a.restart, &a.name.command);
            (a.common, obj, Wrap::Prefix("failed to create cronjob: "))
        }
        Generator::Configmap(a) => {
            let name = a.name.name("configmap")?;
            let src = a.sources.sources();
            src.validate()?;
            let obj = config::configmap(&name, &src)?;
            (a.common, obj, Wrap::Prefix("failed to create configmap: "))
        }
        Generator::Secret(s) => match s.kind {
            SecretKind::Generic(a) => {
                let name = a.name.name("secret generic")?;
                let src = a.sources.sources();
                src.validate()?;
                let obj = config::secret_generic(&name, &a.secret_type, &src)?;
                (a.common, obj, Wrap::Prefix("failed to create secret "))
            }
            SecretKind::DockerRegistry(a) => {
                let name = a.name.name("secret docker-registry")?;
                let obj = config::secret_docker_registry(
                    &name,
                    &a.docker_username,
                    &a.docker_password,
                    &a.docker_email,
                    &a.docker_server,
                    &a.from_file,
                    a.append_hash,
                )?;
                (a.common, obj, Wrap::Prefix("failed to create secret "))
            }
            SecretKind::Tls(a) => {
                let name = a.name.name("secret tls")?;
                let obj = config::secret_tls(&name, &a.cert, &a.key, a.append_hash)?;
                (a.common, obj, Wrap::Prefix("failed to create secret "))
            }
        },
        Generator::Service(s) => {
            let (a, mut svc, cmd, prefix) = match s.kind {
                ServiceKind::Clusterip(a) => {
                    let svc = services::CreateService {
                        service_type: "ClusterIP".into(),
                        cluster_ip: a.clusterip,
                        ..Default::default()
                    };
                    (
                        a.base,
                        svc,
                        "service clusterip",
                        "failed to create ClusterIP service: ",
                    )
                }
                ServiceKind::Nodeport(a) => {
                    let svc = services::CreateService {
                        service_type: "NodePort".into(),
                        node_port: a.node_port,
                        ..Default::default()
                    };
                    (
                        a.base,
                        svc,
                        "service nodeport",
                        "failed to create NodePort service: ",
                    )
                }
                ServiceKind::Loadbalancer(a) => {
                    let svc = services::CreateService {
                        service_type: "LoadBalancer".into(),
                        ..Default::default()
                    };
                    (
                        a,
                        svc,
                        "service loadbalancer",
                        "failed to create LoadBalancer service: ",
                    )
                }
                ServiceKind::Externalname(a) => {
                    if a.external_name.is_empty() {
                        return Err(CliError::msg("required flag(s) \"external-name\" not set"));
                    }
                    let svc = services::CreateService {
                        service_type: "ExternalName".into(),
                        external_name: a.external_name,
                        ..Default::default()
                    };
                    (
                        a.base,
                        svc,
                        "service externalname",
                        "failed to create ExternalName service: ",
                    )
                }
            };
            svc.name = a.name.name(cmd)?;
            svc.tcp = a.tcp.clone();
            svc.validate()?;
            let obj = svc.generate()?;
            (a.common, obj, Wrap::Prefix(prefix))
        }
        Generator::Namespace(a) => {
            let name = a.name.name("namespace")?;
            (a.common, misc::namespace(&name), Wrap::Raw)
        }
        Generator::Serviceaccount(a) => {
            let name = a.name.name("serviceaccount")?;
            (
                a.common,
                misc::service_account(&name),
                Wrap::Prefix("failed to create serviceaccount: "),
            )
        }
        Generator::Role(a) => {
            let name = a.name.name("role")?;
            let verbs = rbac::dedup_verbs(&a.verb);
            let resources = rbac::parse_resources(&a.resource);
            let names = rbac::dedup(&a.resource_name);
            if verbs.is_empty() {
                return Err(CliError::msg("at least one verb must be specified"));
            }
            if resources.is_empty() {
                return Err(CliError::msg("at least one resource must be specified"));
            }
            let resolved = resolve_resources(ctx, &resources).await?;
            let warnings = rbac::validate_role(&verbs, &resources, &resolved)?;
            print_warnings(ctx, &warnings);
            let rules = rbac::policy_rules(&verbs, &resources, &resolved, &names, &[]);
            (a.common, rbac::role(&name, rules), Wrap::Raw)
        }
        Generator::Clusterrole(a) => {
            let r = &a.role;
            let name = r.name.name("clusterrole")?;
            let verbs = rbac::dedup_verbs(&r.verb);
            let resources = rbac::parse_resources(&r.resource);
            let names = rbac::dedup(&r.resource_name);
            let urls = rbac::dedup(&a.non_resource_url);
            let agg = parse_map_pairs(&a.aggregation_rule)?;
            let resolved = if agg.is_empty() && !verbs.is_empty() {
                resolve_resources(ctx, &resources).await?
            } else {
                resources
                    .iter()
                    .map(|x| (x.group.clone(), x.resource.clone()))
                    .collect()
            };
            let warnings =
                rbac::validate_cluster_role(&verbs, &resources, &resolved, &names, &urls, &agg)?;
            print_warnings(ctx, &warnings);
            let rules = if agg.is_empty() {
                rbac::policy_rules(&verbs, &resources, &resolved, &names, &urls)
            } else {
                Vec::new()
            };
            (
                a.role.common,
                rbac::cluster_role(&name, rules, &agg),
                Wrap::Raw,
            )
        }
        Generator::Rolebinding(a) => {
            let name = a.name.name("rolebinding")?;
            let subjects = rbac::subjects(
                &a.subjects.user,
                &a.subjects.group,
                &a.subjects.serviceaccount,
            )?;
            let obj = rbac::role_binding(&name, &a.role, &a.clusterrole, subjects)?;
            (
                a.common,
                obj,
                Wrap::Prefix("failed to create rolebinding: "),
            )
        }
        Generator::Clusterrolebinding(a) => {
            let cluster_role = required("clusterrole", a.clusterrole.as_ref())?;
            let name = a.name.name("clusterrolebinding")?;
            let subjects = rbac::subjects(
                &a.subjects.user,
                &a.subjects.group,
                &a.subjects.serviceaccount,
            )?;
            let obj = rbac::cluster_role_binding(&name, &cluster_role, subjects);
            (
                a.common,
                obj,
                Wrap::Prefix("failed to create clusterrolebinding: "),
            )
        }
        Generator::Quota(a) => {
            let name = a.name.name("quota")?;
            let obj = misc::quota(&name, &a.hard, &a.scopes)?;
            (a.common, obj, Wrap::Prefix("failed to create quota: "))
        }
        Generator::Priorityclass(a) => {
            let name = a.name.name("priorityclass")?;
            let obj = misc::priority_class(
                &name,
                a.value,
                a.global_default,
                &a.description,
                &a.preemption_policy,
            );
            (
                a.common,
                obj,
                Wrap::Prefix("failed to create priorityclass: "),
            )
        }
        Generator::Poddisruptionbudget(a) => {
            let name = a.name.name("poddisruptionbudget")?;
            let obj = misc::pdb(&name, &a.selector, &a.min_available, &a.max_unavailable)?;
            (
                a.common,
                obj,
                Wrap::Prefix("failed to create poddisruptionbudgets: "),
            )
        }
        Generator::Ingress(a) => {
            let name = a.name.name("ingress")?;
            let obj = misc::ingress(&name, &a.class, &a.rule, &a.default_backend, &a.annotation)?;
            (a.common, obj, Wrap::Prefix("failed to create ingress: "))
        }
        Generator::Token(a) => return token(ctx, a).await,
    };
    finish(ctx, &common, obj, wrap).await
}

/// `create job --from=cronjob/<name>`: the CronJob from the server.
async fn job_source(ctx: &Ctx, from: &str) -> Result<Value> {
    let (kind, name) = from
        .split_once('/')
        .ok_or_else(|| CliError::msg("resource(s) were provided, but no name was specified"))?;
    let mapper = ctx.mapper().await?;
    let mapping = mapper.resolve(kind)?;
    let ns = ctx.namespace().await?;
    let obj = ctx
        .client()
        .await?
        .get_json(&mapping.object_path(Some(&ns), name))
        .await?;
    if obj.get("kind").and_then(Value::as_str) != Some("CronJob") {
        let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
        return Err(CliError::msg(format!("unknown object type *v1.{kind}")));
    }
    Ok(obj)
}

/// `create token SA`: a TokenRequest to `serviceaccounts/<sa>/token`; prints the token
/// (no newline when stdout is not a terminal, as kubectl).
async fn token(ctx: &Ctx, a: TokenArgs) -> Result<()> {
    let name = a.name.name("token")?;
    let duration = misc::parse_go_duration(&a.duration).map_err(|e| {
        CliError::msg(format!(
            "invalid argument \"{}\" for \"--duration\" flag: {}",
            a.duration,
            e.to_string().trim_start_matches("error: ")
        ))
    })?;
    let body = misc::token_request(
        &a.audience,
        duration,
        &a.bound_object_kind,
        &a.bound_object_name,
        &a.bound_object_uid,
    )?;
    let format = a.print.format(false)?;
    let ns = ctx.namespace().await?;
    let path = format!("/api/v1/namespaces/{ns}/serviceaccounts/{name}/token");
    let client = ctx.client().await?;
    let resp = match client
        .send(Request::new(http::Method::POST, path).json(&body))
        .await?
        .json()
    {
        Ok(v) => v,
        Err(CliError::Api(s)) => {
            return Err(CliError::msg(format!(
                "failed to create token: {}",
                s.message
            )));
        }
        Err(e) => return Err(e),
    };
    let token = resp
        .pointer("/status/token")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    if token.is_empty() {
        return Err(CliError::msg(
            "failed to create token: no token in server response",
        ));
    }
    if format != crate::output::Format::Default {
        return crate::output::print_object(ctx, &a.print, &resp);
    }
    use std::io::IsTerminal;
    let mut out = ctx.out();
    if std::io::stdout().is_terminal() {
        writeln!(out, "{token}")?;
    } else {
        write!(out, "{token}")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use clap::{CommandFactory, Parser};

    #[derive(Parser, Debug)]
    struct Cli {
        #[command(flatten)]
        a: Args,
    }

    fn parse(args: &[&str]) -> Result<Args, clap::Error> {
        Cli::try_parse_from(std::iter::once("create").chain(args.iter().copied())).map(|c| c.a)
    }

    #[test]
    fn command_line_shape() {
        Cli::command().debug_assert();
        let a = parse(&[
            "deployment",
            "web",
            "--image=a,b",
            "-r",
            "2",
            "--",
            "sleep",
            "1",
        ])
        .unwrap();
        let Some(Generator::Deployment(d)) = a.generator else {
            panic!("not a deployment")
        };
        assert_eq!(d.image, vec!["a", "b"]);
        assert_eq!(d.replicas, 2);
        assert_eq!(d.port, -1);
        assert_eq!(d.name.names, vec!["web"]);
        assert_eq!(d.name.command, vec!["sleep", "1"]);
        assert_eq!(d.common.field_manager, "kubectl-create");
        assert_eq!(d.name.name("deployment").unwrap(), "web");
        let a = parse(&["deploy", "a", "b", "--image=x"]).unwrap();
        let Some(Generator::Deployment(d)) = a.generator else {
            panic!("not a deployment")
        };
        assert_eq!(
            d.name.name("deployment").unwrap_err().to_string(),
            "error: exactly one NAME is required, got 2\nSee 'kubectl create deployment -h' for help and examples"
        );
        assert!(parse(&["secret", "generic", "s", "--from-literal=a=b"]).is_ok());
        assert!(parse(&["svc", "clusterip", "s", "--tcp=80:8080,81"]).is_ok());
        assert!(parse(&["-f", "x.yaml"]).unwrap().generator.is_none());
    }

    #[test]
    fn invalid_errors_as_check_err() {
        let status = serde_json::json!({
            "kind": "Status", "status": "Failure", "reason": "Invalid", "code": 422,
            "message": "Pod \"Foo\" is invalid: …",
            "details": {"name": "Foo", "kind": "Pod", "causes": [
                {"field": "metadata.name", "message": "Invalid value: \"Foo\": bad"},
                {"field": "spec.containers[0].name", "message": "Invalid value: \"Foo\": bad"}]}});
        let e = crate::transport::status_error(
            http::StatusCode::UNPROCESSABLE_ENTITY,
            status.to_string().as_bytes(),
        );
        assert_eq!(
            kubectl_error(e).to_string(),
            "The Pod \"Foo\" is invalid: \n* metadata.name: Invalid value: \"Foo\": bad\n* spec.containers[0].name: Invalid value: \"Foo\": bad"
        );
        assert_eq!(field_validation("true").unwrap(), "Strict");
        assert_eq!(field_validation("ignore").unwrap(), "Ignore");
        assert!(field_validation("x").is_err());
    }
}
