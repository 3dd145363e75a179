//! `rkube`: one binary for the whole cluster (see ARCHITECTURE.md).

mod bench;
mod cmd;

/// jemalloc instead of glibc's malloc: the API server, informers and watch fan-out
/// allocate and free many small objects from many threads, where glibc's arenas spent a
/// third of the server's CPU (and their fragmentation doubled its RSS).
/// (The `system-alloc` feature builds with glibc's malloc instead, for heap profilers such
/// as heaptrack that interpose `malloc`.)
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

/// jemalloc's settings, read when it starts (`MALLOC_CONF` in the environment overrides
/// them): its background thread returns freed pages to the system after 2 s rather than
/// 10 s, which after a burst (a relist, thousands of pods at once) is 5–10% less RSS on
/// the API server, at no measurable CPU cost.
#[cfg(not(feature = "system-alloc"))]
#[allow(unsafe_code, non_upper_case_globals)]
#[unsafe(export_name = "malloc_conf")]
static malloc_conf: &[u8; 20] = b"dirty_decay_ms:2000\0";

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(
    name = "rkube",
    version,
    about = "A Kubernetes-compatible container orchestrator"
)]
struct Cli {
    /// Log filter (tracing's EnvFilter syntax); RUST_LOG overrides it.
    #[arg(long, global = true, default_value = "info")]
    log_level: String,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Print the version.
    Version,
    /// Run the control plane (API server) on an embedded or etcd datastore.
    Server(Box<cmd::server::ServerArgs>),
    /// Run the controller manager against an API server.
    ControllerManager(Box<cmd::components::ControllerManagerArgs>),
    /// Run the scheduler against an API server.
    Scheduler(Box<cmd::components::SchedulerArgs>),
    /// Simulate nodes (like kwok) for scale tests: Nodes, Leases and running pods
    /// without containers.
    SimNodes(Box<cmd::simnodes::SimNodesArgs>),
    /// Run a node (kubelet on containerd) that joins a server with its token.
    Agent(Box<cmd::agent::AgentArgs>),
    /// Remove every pod of a stopped agent from its containerd, unmount what it left and
    /// delete its bridge (as k3s-killall.sh).
    Killall(cmd::agent::KillallArgs),
    /// Build OCI image archives and import them into the node's containerd.
    Image {
        #[command(subcommand)]
        which: cmd::image::ImageCommand,
    },
    /// Our own kubectl (`rkube kubectl get pods`); its flags are kubectl's.
    Kubectl,
    /// Run a benchmark and print its figures.
    Bench {
        #[command(subcommand)]
        which: bench::Bench,
    },
}

fn init_tracing(level: &str) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .or_else(|_| tracing_subscriber::EnvFilter::try_new(level))
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// `rkube kubectl …` (or the binary called as `kubectl`, as k3s's symlink): our own
/// kubectl, parsed by its own command line rather than rkube's.
fn kubectl_args() -> Option<Vec<std::ffi::OsString>> {
    let mut args = std::env::args_os();
    let argv0 = args.next()?;
    let called = std::path::Path::new(&argv0)
        .file_name()
        .is_some_and(|n| n == "kubectl");
    if called {
        return Some(args.collect());
    }
    let rest: Vec<_> = args.collect();
    match rest.first() {
        Some(first) if first == "kubectl" => Some(rest[1..].to_vec()),
        _ => None,
    }
}

fn main() -> anyhow::Result<()> {
    if let Some(args) = kubectl_args() {
        std::process::exit(cli::main(args));
    }
    let cli = Cli::parse();
    init_tracing(&cli.log_level);
    match cli.command {
        Command::Version => {
            #[allow(clippy::print_stdout)]
            {
                println!("rkube version v{}", env!("CARGO_PKG_VERSION"));
            }
            Ok(())
        }
        Command::Server(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(cmd::server::run(*args))
        }
        Command::ControllerManager(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(cmd::components::controller_manager(*args)),
        Command::Scheduler(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(cmd::components::scheduler(*args)),
        Command::SimNodes(args) => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(cmd::simnodes::run(*args))
        }
        Command::Agent(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(cmd::agent::run(*args)),
        Command::Killall(args) => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(cmd::agent::killall(args)),
        Command::Kubectl => std::process::exit(cli::main(Vec::new())),
        Command::Image { which } => tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
            .block_on(cmd::image::run(which)),
        Command::Bench { which } => {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()?;
            rt.block_on(bench::run(which))
        }
    }
}
