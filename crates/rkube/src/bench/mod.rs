//! `rkube bench …`: benchmarks that print figures (never assertions).

// Benchmarks report on stdout.
#![allow(clippy::print_stdout)]

mod api;
mod informer;
mod kubectl;
mod podstartup;
mod schedule;
mod store;

use std::time::Duration;

use clap::Subcommand;

/// `rkube server` flags that keep its in-process components off their fixed ports (10257,
/// 10259), so a bench runs beside a cluster on the same machine.
const COMPONENT_ENDPOINTS_OFF: [&str; 4] = [
    "--controller-manager-secure-port",
    "0",
    "--scheduler-secure-port",
    "0",
];

#[derive(Subcommand, Debug)]
pub enum Bench {
    /// Storage backends: writes, reads, lists and watch delivery.
    Store(store::StoreArgs),
    /// The API server over TLS: creates, gets, updates, a 10k-pod list, watch delivery, RSS.
    Api(api::ApiArgs),
    /// The scheduler over simulated nodes: pods from Deployments, creation → bound.
    Schedule(schedule::ScheduleArgs),
    /// Memory per cached object: the controllers' pod informer and the garbage
    /// collector's graph over N pods.
    Informer(informer::InformerArgs),
    /// Pod start-up on a real node (containerd, the demo images behind a local registry):
    /// the 3-replica seed Deployment until all Ready, and pods at a steady rate, per stage.
    Podstartup(podstartup::PodStartupArgs),
    /// Start-up of `rkube kubectl get pods` against the real kubectl's, warm cache.
    Kubectl(kubectl::KubectlArgs),
}

/// A background task of a bench, aborted when dropped: however the bench ends, its watches
/// and simulated nodes do not outlive it (and keep writing to a server that is gone).
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl AbortOnDrop {
    /// Aborts the task and waits until it is gone.
    async fn stop(&mut self) {
        self.0.abort();
        let _ = (&mut self.0).await;
    }
}

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

pub async fn run(which: Bench) -> anyhow::Result<()> {
    match which {
        Bench::Store(args) => store::run(args).await,
        Bench::Api(args) => api::run(args).await,
        Bench::Schedule(args) => schedule::run(args).await,
        Bench::Informer(args) => informer::run(args).await,
        Bench::Podstartup(args) => podstartup::run(args).await,
        Bench::Kubectl(args) => kubectl::run(args).await,
    }
}

/// Recorded latencies, in microseconds.
#[derive(Debug, Default, Clone)]
pub struct Latencies(Vec<u32>);

impl Latencies {
    pub fn record(&mut self, d: Duration) {
        self.0
            .push(u32::try_from(d.as_micros()).unwrap_or(u32::MAX));
    }

    pub fn merge(&mut self, other: Latencies) {
        self.0.extend(other.0);
    }

    pub fn count(&self) -> usize {
        self.0.len()
    }

    fn quantile_ms(&self, q: f64) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        let mut v = self.0.clone();
        v.sort_unstable();
        let idx = ((v.len() - 1) as f64 * q).round() as usize;
        f64::from(v[idx.min(v.len() - 1)]) / 1000.0
    }

    pub fn mean_ms(&self) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.iter().map(|v| f64::from(*v)).sum::<f64>() / self.0.len() as f64 / 1000.0
    }

    pub fn p50_ms(&self) -> f64 {
        self.quantile_ms(0.50)
    }

    pub fn p99_ms(&self) -> f64 {
        self.quantile_ms(0.99)
    }
}
