//! `kubectl expose (-f FILE | TYPE NAME)`: a Service for a deployment, replica set,
//! replication controller, pod or service, its selector, ports and protocols taken from
//! the object as kubectl's `polymorphichelpers` take them.

use serde_json::Value;

use crate::cmd::create::{Creation, Wrap, send_create};
use crate::cmd::targets::{self, FileFlags, Selection};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::generators::{self, services};
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// TYPE NAME or TYPE/NAME.
    pub args: Vec<String>,
    #[command(flatten)]
    pub files: FileFlags,
    #[command(flatten)]
    pub print: PrintFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// The network protocol for the service to be created. Default is 'TCP'.
    #[arg(long, default_value = "")]
    pub protocol: String,
    /// The port that the service should serve on (copied from the resource if unset).
    #[arg(long, default_value = "")]
    pub port: String,
    /// Type for this service: ClusterIP, NodePort, LoadBalancer, or ExternalName.
    #[arg(long = "type", default_value = "")]
    pub service_type: String,
    /// IP to assign to the LoadBalancer.
    #[arg(long, default_value = "")]
    pub load_balancer_ip: String,
    /// A label selector to use for this service (equality-based only).
    #[arg(long, default_value = "")]
    pub selector: String,
    /// Labels to apply to the service created by this call.
    #[arg(short = 'l', long, default_value = "")]
    pub labels: String,
    /// Name or number for the port on the container that the service should direct
    /// traffic to.
    #[arg(long, default_value = "")]
    pub target_port: String,
    /// Additional external IP address to accept for the service.
    #[arg(long, default_value = "")]
    pub external_ip: String,
    /// The name for the newly created object.
    #[arg(long, default_value = "")]
    pub name: String,
    /// If non-empty, the session affinity for the service: 'None', 'ClientIP'.
    #[arg(long, default_value = "")]
    pub session_affinity: String,
    /// ClusterIP to be assigned to the service ('None' for a headless service).
    #[arg(long, default_value = "")]
    pub cluster_ip: String,
    /// An inline JSON override for the generated object.
    #[arg(long, default_value = "")]
    pub overrides: String,
    /// The method used to override the generated object: json, merge, or strategic.
    #[arg(long, default_value = "merge")]
    pub override_type: String,
    /// Name of the manager used to track field ownership.
    #[arg(long, default_value = "kubectl-expose")]
    pub field_manager: String,
    /// Save the configuration of the object in its annotation.
    #[arg(long)]
    pub save_config: bool,
}

/// kubectl's service generation for one exposed object (pure).
pub fn service_for(a: &Args, obj: &Value, group: &str, kind: &str) -> Result<Value> {
    services::can_be_exposed(group, kind)?;
    let name = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let default_name: String = name.chars().take(63).collect();
    let selector = if a.selector.is_empty() {
        services::selector_for(obj).map_err(|e| {
            CliError::msg(format!(
                "couldn't retrieve selectors via --selector flag or introspection: {}",
                e.to_string().trim_start_matches("error: ")
            ))
        })?
    } else {
        a.selector.clone()
    };
    let mut port = a.port.clone();
    let mut ports = String::new();
    if port.is_empty() {
        let found = services::ports_for(obj);
        match found.len() {
            0 if a.cluster_ip != "None" => {
                return Err(CliError::msg(
                    "couldn't find port via --port flag or introspection",
                ));
            }
            0 => {}
            1 => port = found[0].clone(),
            _ => ports = found.join(","),
        }
    }
    let labels = if a.labels.is_empty() {
        obj.pointer("/metadata/labels")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                    .collect::<Vec<_>>()
                    .join(",")
            })
            .unwrap_or_default()
    } else {
        a.labels.clone()
    };
    let e = services::Expose {
        name: a.name.clone(),
        default_name,
        selector,
        labels,
        port,
        ports,
        protocol: a.protocol.clone(),
        protocols: services::protocols_for(obj),
        target_port: a.target_port.clone(),
        external_ip: a.external_ip.clone(),
        service_type: a.service_type.clone(),
        load_balancer_ip: a.load_balancer_ip.clone(),
        session_affinity: a.session_affinity.clone(),
        cluster_ip: a.cluster_ip.clone(),
    };
    let svc = e.generate()?;
    crate::cmd::run::apply_overrides(&svc, &a.overrides, &a.override_type)
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let dry_run = a.dry_run.resolve(ctx)?;
    a.print.format(false)?;
    let sel = Selection {
        args: &a.args,
        files: Some(&a.files),
        // kubectl's builder GETs named objects; objects from `-f` are used as written.
        fetch: a.files.filenames.is_empty(),
        require_names: true,
        ..Default::default()
    };
    let found = targets::find(ctx, &sel).await?;
    let mut errors = found.errors;
    let namespace = ctx.namespace().await?;
    for t in found.targets {
        let Some(obj) = &t.object else { continue };
        let result = async {
            let mut svc = service_for(&a, obj, &t.mapping.group, &t.mapping.kind)?;
            if dry_run == DryRun::Client {
                if ctx.namespace_explicit() {
                    generators::set_namespace(&mut svc, &namespace);
                }
                return print_operation(ctx, &a.print, &svc, "exposed", dry_run);
            }
            if a.save_config {
                generators::add_last_applied(&mut svc);
            }
            let mapping = ctx.mapper().await?.for_kind("v1", "Service")?;
            let creation = Creation {
                mapping,
                namespace: t.namespace.clone().unwrap_or_else(|| namespace.clone()),
                dry_run,
                field_manager: &a.field_manager,
                field_validation: None,
                wrap: Wrap::Raw,
            };
            let created = send_create(ctx, &creation, &svc).await?;
            print_operation(ctx, &a.print, &created, "exposed", dry_run)
        }
        .await;
        if let Err(e) = result {
            errors.push(e);
        }
    }
    targets::finish(ctx, errors)
}
