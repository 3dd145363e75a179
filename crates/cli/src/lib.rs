//! `rkube kubectl`: our own kubectl. The seeds' client stages each live in one module:
//! kubeconfig loading and client auth (`kubeconfig`, `transport`), discovery with its
//! disk cache and REST mapping (`discovery`, `mapper`), client-side validation
//! (`validate`), generators (`cmd::run`, `cmd::create`, `cmd::expose`), printers
//! (`output`), and one module per verb under `cmd`.

pub mod cmd;
pub mod credentials;
pub mod ctx;
pub mod discovery;
pub mod duration;
pub mod error;
pub mod generators;
pub mod klog;
pub mod kubeconfig;
pub mod manifest;
pub mod mapper;
pub mod output;
pub mod pods;
pub mod resource;
pub mod stream;
pub mod transport;
pub mod twoway;
pub mod validate;

use std::ffi::OsString;

use clap::{Parser, Subcommand};

use crate::ctx::{Ctx, GlobalFlags, Io};
use crate::error::CliError;

#[derive(Parser, Debug)]
#[command(
    name = "kubectl",
    about = "kubectl controls the Kubernetes cluster manager.",
    disable_version_flag = true,
    disable_help_subcommand = true
)]
struct Kubectl {
    #[command(flatten)]
    global: GlobalFlags,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Create a resource from a file or from stdin, or with a generator.
    Create(cmd::create::Args),
    /// Take a replication controller, service, deployment or pod and expose it as a new
    /// Kubernetes service.
    Expose(cmd::expose::Args),
    /// Run a particular image on the cluster.
    Run(cmd::run::Args),
    /// Set specific features on objects.
    Set(cmd::set::Args),
    /// Get documentation for a resource.
    Explain(cmd::explain::Args),
    /// Display one or many resources.
    Get(cmd::get::Args),
    /// Edit a resource on the server.
    Edit(cmd::edit::Args),
    /// Delete resources by file names, stdin, resources and names, or by resources and
    /// label selector.
    Delete(cmd::delete::Args),
    /// Manage the rollout of a resource.
    Rollout(cmd::rollout::Args),
    /// Set a new size for a deployment, replica set, or replication controller.
    Scale(cmd::scale::Args),
    /// Display resource (CPU/memory) usage.
    Top(cmd::top::Args),
    /// Mark node as unschedulable.
    Cordon(cmd::node::CordonArgs),
    /// Mark node as schedulable.
    Uncordon(cmd::node::CordonArgs),
    /// Drain node in preparation for maintenance.
    Drain(cmd::node::DrainArgs),
    /// Update the taints on one or more nodes.
    Taint(cmd::node::TaintArgs),
    /// Show details of a specific resource or group of resources.
    Describe(cmd::describe::Args),
    /// Print the logs for a container in a pod.
    Logs(cmd::logs::Args),
    /// Execute a command in a container.
    Exec(cmd::exec::Args),
    /// Forward one or more local ports to a pod.
    PortForward(cmd::port_forward::Args),
    /// Copy files and directories to and from containers.
    Cp(cmd::cp::Args),
    /// Inspect authorization.
    Auth(cmd::auth::Args),
    /// Diff the live version against a would-be applied version.
    Diff(cmd::diff::Args),
    /// Apply a configuration to a resource by file name or stdin.
    Apply(cmd::apply::Args),
    /// Update fields of a resource.
    Patch(cmd::patch::Args),
    /// Replace a resource by file name or stdin.
    Replace(cmd::replace::Args),
    /// Experimental: Wait for a specific condition on one or many resources.
    Wait(cmd::wait::Args),
    /// Update the labels on a resource.
    Label(cmd::label::Args),
    /// Update the annotations on a resource.
    Annotate(cmd::label::Args),
    /// Print the supported API resources on the server.
    ApiResources(cmd::api_resources::Args),
    /// Print the supported API versions on the server, in the form of "group/version".
    ApiVersions(cmd::api_versions::Args),
    /// Display addresses of the control plane and services with label
    /// kubernetes.io/cluster-service=true.
    ClusterInfo(cmd::cluster_info::Args),
    /// Modify kubeconfig files.
    Config(cmd::config::Args),
    /// Print the client and server version information.
    Version(cmd::version::Args),
}

async fn dispatch(ctx: &Ctx, command: Command) -> Result<(), CliError> {
    use cmd::*;
    match command {
        Command::Create(a) => create::run(ctx, a).await,
        Command::Expose(a) => expose::run(ctx, a).await,
        Command::Run(a) => run::run(ctx, a).await,
        Command::Set(a) => set::run(ctx, a).await,
        Command::Explain(a) => explain::run(ctx, a).await,
        Command::Get(a) => get::run(ctx, a).await,
        Command::Edit(a) => edit::run(ctx, a).await,
        Command::Delete(a) => delete::run(ctx, a).await,
        Command::Rollout(a) => rollout::run(ctx, a).await,
        Command::Scale(a) => scale::run(ctx, a).await,
        Command::Top(a) => top::run(ctx, a).await,
        Command::Cordon(a) => node::cordon(ctx, a, true).await,
        Command::Uncordon(a) => node::cordon(ctx, a, false).await,
        Command::Drain(a) => node::drain(ctx, a).await,
        Command::Taint(a) => node::taint(ctx, a).await,
        Command::Describe(a) => describe::run(ctx, a).await,
        Command::Logs(a) => logs::run(ctx, a).await,
        Command::Exec(a) => exec::run(ctx, a).await,
        Command::PortForward(a) => port_forward::run(ctx, a).await,
        Command::Cp(a) => cp::run(ctx, a).await,
        Command::Auth(a) => auth::run(ctx, a).await,
        Command::Diff(a) => diff::run(ctx, a).await,
        Command::Apply(a) => apply::run(ctx, a).await,
        Command::Patch(a) => patch::run(ctx, a).await,
        Command::Replace(a) => replace::run(ctx, a).await,
        Command::Wait(a) => wait::run(ctx, a).await,
        Command::Label(a) => label::run(ctx, a, label::Which::Labels).await,
        Command::Annotate(a) => label::run(ctx, a, label::Which::Annotations).await,
        Command::ApiResources(a) => api_resources::run(ctx, a).await,
        Command::ApiVersions(a) => api_versions::run(ctx, a).await,
        Command::ClusterInfo(a) => cluster_info::run(ctx, a).await,
        Command::Config(a) => config::run(ctx, a).await,
        Command::Version(a) => version::run(ctx, a).await,
    }
}

/// The command path of a command line (`kubectl config view`): its leading words that
/// name subcommands.
fn command_path(args: &[String]) -> String {
    use clap::CommandFactory;
    let mut cmd = Kubectl::command();
    let mut path = vec!["kubectl".to_string()];
    for a in args {
        if a.starts_with('-') {
            continue;
        }
        let next = cmd
            .get_subcommands()
            .find(|c| c.get_name() == a || c.get_all_aliases().any(|al| al == a))
            .cloned();
        match next {
            Some(c) => {
                path.push(c.get_name().to_string());
                cmd = c;
            }
            None => break,
        }
    }
    path.join(" ")
}

/// kubectl's wording for a command line clap refused (cobra's messages with their
/// `See '… --help' for usage.` line).
fn usage_error(e: &clap::Error, args: &[String]) -> String {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    let value = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => s.clone(),
        Some(ContextValue::Strings(s)) => s.join(", "),
        _ => String::new(),
    };
    let path = command_path(args);
    let see = format!("See '{path} --help' for usage.");
    match e.kind() {
        ErrorKind::InvalidSubcommand => {
            let sub = value(ContextKind::InvalidSubcommand);
            if path == "kubectl" {
                format!("error: unknown command \"{sub}\" for \"kubectl\"")
            } else {
                format!("error: unknown command \"{sub}\"\nSee '{path} -h' for help and examples")
            }
        }
        ErrorKind::UnknownArgument => {
            let arg = value(ContextKind::InvalidArg);
            let flag = arg.split('=').next().unwrap_or_default();
            if flag.starts_with("--") {
                format!("error: unknown flag: {flag}\n{see}")
            } else if flag.starts_with('-') {
                format!(
                    "error: unknown shorthand flag: '{}' in {arg}\n{see}",
                    flag.trim_start_matches('-')
                        .chars()
                        .next()
                        .unwrap_or_default()
                )
            } else {
                format!("error: unknown command \"{arg}\" for \"{path}\"")
            }
        }
        ErrorKind::InvalidValue if value(ContextKind::InvalidValue).is_empty() => {
            // What was typed last decides the form: `'o' in -o` or `--output`.
            let arg = value(ContextKind::InvalidArg);
            let long = arg
                .split_whitespace()
                .next()
                .unwrap_or_default()
                .to_string();
            let short = e
                .get(ContextKind::InvalidArg)
                .and(args.last())
                .filter(|a| a.len() == 2 && a.starts_with('-') && !a.starts_with("--"))
                .cloned();
            match short {
                Some(s) => format!(
                    "error: flag needs an argument: '{}' in {s}\n{see}",
                    s.trim_start_matches('-')
                ),
                None => format!("error: flag needs an argument: {long}\n{see}"),
            }
        }
        _ => {
            let text = e.render().to_string();
            let first = text.lines().next().unwrap_or_default();
            first.to_string()
        }
    }
}

/// Runs kubectl with `args` (without the program name) on this process's streams and
/// returns its exit code.
pub fn main(args: Vec<OsString>) -> i32 {
    let words: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    let argv = std::iter::once(OsString::from("kubectl")).chain(args);
    let parsed = match Kubectl::try_parse_from(argv) {
        Ok(p) => p,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp
                | ErrorKind::DisplayVersion
                | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand => {
                    let _ = e.print();
                    0
                }
                _ => {
                    eprintln!("{}", usage_error(&e, &words));
                    1
                }
            };
        }
    };
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("error: cannot start: {e}");
            return 1;
        }
    };
    let ctx = Ctx::new(parsed.global, Io::std());
    match runtime.block_on(dispatch(&ctx, parsed.command)) {
        Ok(()) => 0,
        Err(e) => {
            let text = e.to_string();
            if !text.is_empty() {
                let _ = writeln!(ctx.err(), "{text}");
            }
            e.exit_code()
        }
    }
}

use std::io::Write;
