//! `rkube sim-nodes`: simulated nodes for scale tests (like kwok). Nodes, their Leases
//! and the pods bound to them are kept alive through the API server until SIGTERM or
//! Ctrl-C; the nodes are left in place on exit.

use std::path::PathBuf;
use std::time::Duration;

use clap::Args;

#[derive(Args, Debug)]
pub struct SimNodesArgs {
    /// Kubeconfig of a user allowed to write nodes, leases and pods (e.g. the admin's).
    #[arg(long)]
    pub kubeconfig: PathBuf,
    /// How many nodes to simulate.
    #[arg(long)]
    pub count: u32,
    /// Node names are `<prefix>-<index>`.
    #[arg(long, default_value = "sim-node")]
    pub prefix: String,
    /// CPU capacity of each node.
    #[arg(long, default_value = "32")]
    pub cpu: String,
    /// Memory capacity of each node.
    #[arg(long, default_value = "256Gi")]
    pub memory: String,
    /// Pod capacity of each node.
    #[arg(long, default_value_t = 110)]
    pub pods: u32,
    /// Lease duration; each lease is renewed every quarter of it.
    #[arg(long, default_value_t = 40)]
    pub lease_seconds: u32,
    /// How often each node's conditions get a fresh heartbeat.
    #[arg(long, default_value = "60s", value_parser = super::server::parse_duration)]
    pub status_interval: Duration,
    /// How many writes may be in flight at once.
    #[arg(long, default_value_t = 64)]
    pub concurrency: usize,
}

/// Runs the simulation until SIGTERM or Ctrl-C.
pub async fn run(args: SimNodesArgs) -> anyhow::Result<()> {
    let config = simnode::Config {
        prefix: args.prefix,
        count: args.count,
        cpu: args.cpu,
        memory: args.memory,
        pods: args.pods,
        lease_seconds: args.lease_seconds,
        status_interval: args.status_interval,
        concurrency: args.concurrency,
        ..simnode::Config::default()
    };
    config.validate()?;
    let client = runtime::client_for(&args.kubeconfig, "rkube-sim-nodes").await?;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = simnode::run(client, config) => r?,
        _ = term.recv() => tracing::info!("SIGTERM: stopping; the simulated nodes stay"),
        _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: stopping; the simulated nodes stay"),
    }
    Ok(())
}
