//! `rkube bench schedule`: simulated nodes (in this process, as kwok would run), pods
//! created through Deployments, and the time from each pod's creation to its binding,
//! with the scheduler's own figures from the server's `/metrics` and the server's RSS.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::api::{
    cpu_secs, rss_mb, settled_rss_mb, spawn_server, spawn_server_with, thread_cpu_secs,
};
use super::{AbortOnDrop, Latencies};

/// What the bench's own watch reads of a pod: its uid, node and phase. serde skips the rest
/// unread; decoding whole pods made this watch a fifth of the bench process's CPU, taken
/// from the components it measures on a small machine.
#[derive(Clone, Debug, serde::Deserialize)]
struct WatchedPod {
    #[serde(
        default,
        deserialize_with = "runtime::leanmeta::without_managed_fields"
    )]
    metadata: ObjectMeta,
    #[serde(default)]
    spec: WatchedSpec,
    #[serde(default)]
    status: WatchedStatus,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
struct WatchedStatus {
    phase: Option<String>,
}

#[derive(Clone, Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct WatchedSpec {
    node_name: Option<String>,
}

runtime::pod_resource!(WatchedPod, |p| p.metadata);

#[derive(clap::Args, Debug)]
pub struct ScheduleArgs {
    /// Simulated nodes.
    #[arg(long, default_value_t = 1000)]
    nodes: u32,
    /// Pods, created through Deployments.
    #[arg(long, default_value_t = 5000)]
    pods: u32,
    /// Replicas per Deployment.
    #[arg(long, default_value_t = 1000)]
    per_deployment: u32,
    /// Give up after this many seconds.
    #[arg(long, default_value_t = 900)]
    timeout: u64,
    /// Run the controller manager and the scheduler as processes of their own (as
    /// upstream runs them), to report each one's memory; scheduler-only figures are then
    /// not available (they come from the server's /metrics).
    #[arg(long)]
    split: bool,
}

/// The controller manager and scheduler of a `--split` run, killed on drop.
struct Components {
    children: Vec<(&'static str, std::process::Child)>,
}

impl Components {
    fn start(kubeconfig: &std::path::Path) -> anyhow::Result<Components> {
        let mut children = Vec::new();
        for (name, extra) in [
            (
                "controller-manager",
                &[
                    "--cluster-cidr",
                    "10.64.0.0/10",
                    "--leader-elect",
                    "false",
                    "--secure-port",
                    "0",
                ][..],
            ),
            (
                "scheduler",
                &["--leader-elect", "false", "--secure-port", "0"][..],
            ),
        ] {
            let child = std::process::Command::new(std::env::current_exe()?)
                .arg(name)
                .arg("--kubeconfig")
                .arg(kubeconfig)
                .args(extra)
                .env("RUST_LOG", "warn")
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .with_context(|| format!("starting the {name}"))?;
            children.push((name, child));
        }
        Ok(Components { children })
    }

    fn pids(&self) -> impl Iterator<Item = (&'static str, u32)> + '_ {
        self.children.iter().map(|(n, c)| (*n, c.id()))
    }

    fn rss(&self) -> Vec<(&'static str, f64)> {
        self.children
            .iter()
            .map(|(n, c)| (*n, rss_mb(c.id()).unwrap_or(0.0)))
            .collect()
    }
}

impl Drop for Components {
    fn drop(&mut self) {
        for (_, c) in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

#[derive(Default)]
struct Seen {
    created: HashMap<String, Instant>,
    done: HashSet<String>,
    bound: usize,
    /// Bound pods the simulated nodes have since reported Running.
    running: HashSet<String>,
    latencies: Latencies,
    last_bound: Option<Instant>,
}

fn lock(m: &Mutex<Seen>) -> std::sync::MutexGuard<'_, Seen> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

pub(super) async fn client_for(kubeconfig: &std::path::Path) -> anyhow::Result<kube::Client> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if kubeconfig.exists()
            && let Ok(c) = runtime::client_for(kubeconfig, "rkube-bench").await
        {
            let req = http::Request::get("/readyz").body(Vec::new())?;
            if c.request_text(req).await.is_ok() {
                return Ok(c);
            }
        }
        anyhow::ensure!(Instant::now() < deadline, "the server did not start");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// The sum of a metric's samples (every label set) in `/metrics` text.
fn metric_sum(text: &str, name: &str) -> f64 {
    text.lines()
        .filter(|l| {
            l.strip_prefix(name)
                .is_some_and(|rest| rest.starts_with(' ') || rest.starts_with('{'))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

/// Sums the scheduler's `scheduled` attempts and their seconds from `/metrics`.
fn scheduled_from_metrics(text: &str) -> (f64, f64) {
    let mut count = 0.0;
    let mut sum = 0.0;
    for line in text.lines() {
        let value = |l: &str| {
            l.rsplit(' ')
                .next()
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        };
        if line.starts_with("scheduler_scheduling_attempt_duration_seconds_count{")
            && line.contains("result=\"scheduled\"")
        {
            count += value(line);
        } else if line.starts_with("scheduler_scheduling_attempt_duration_seconds_sum{")
            && line.contains("result=\"scheduled\"")
        {
            sum += value(line);
        }
    }
    (count, sum)
}

/// The in-process server's CPU between two readings of its threads, by component: the
/// controller manager's and scheduler's runtimes (threads named after them), the SQLite
/// writer, and the API server's runtime with the rest (threads that exited included).
fn by_component(
    before: &std::collections::BTreeMap<String, f64>,
    after: &std::collections::BTreeMap<String, f64>,
    total: f64,
) -> String {
    let used = |name: &str| {
        after.get(name).copied().unwrap_or(0.0) - before.get(name).copied().unwrap_or(0.0)
    };
    let parts = [
        ("controller manager", used("controller-mana")),
        ("scheduler", used("scheduler")),
        ("SQLite writer", used("rkube-sqlite-wr")),
    ];
    let rest = total - parts.iter().map(|(_, s)| s).sum::<f64>();
    std::iter::once(("API server", rest))
        .chain(parts)
        .map(|(name, s)| format!("{name} {:.1} s", s.max(0.0)))
        .collect::<Vec<_>>()
        .join(", ")
}

pub async fn run(args: ScheduleArgs) -> anyhow::Result<()> {
    let server = if args.split {
        spawn_server_with(&["--disable-controller-manager", "--disable-scheduler"])?
    } else {
        spawn_server()?
    };
    let pid = server.child.id();
    let client = client_for(&server.kubeconfig).await?;
    let components = if args.split {
        Some(Components::start(&server.kubeconfig)?)
    } else {
        None
    };
    println!(
        "schedule-bench: server pid {pid}, {} simulated nodes, {} pods in Deployments of {}",
        args.nodes, args.pods, args.per_deployment
    );
    let idle = rss_mb(pid).unwrap_or(0.0);
    let sim = simnode::Config {
        prefix: "bench-node".into(),
        count: args.nodes,
        concurrency: 128,
        ..simnode::Config::default()
    };
    let sim_client = client.clone();
    // Stopped (with every task of the simulation) before the server, however this ends.
    let mut sim = AbortOnDrop(tokio::spawn(async move {
        if let Err(e) = simnode::run(sim_client, sim).await {
            tracing::error!(error = %e, "simulated nodes stopped");
        }
    }));
    let nodes: Api<Node> = Api::all(client.clone());
    let started = Instant::now();
    let deadline = started + Duration::from_secs(args.timeout);
    loop {
        let list = nodes.list(&ListParams::default()).await?;
        let ready = list
            .items
            .iter()
            .filter(|n| {
                n.spec
                    .as_ref()
                    .and_then(|s| s.taints.as_ref())
                    .is_none_or(|t| t.iter().all(|t| t.effect != "NoSchedule"))
                    && n.spec.as_ref().and_then(|s| s.pod_cidr.as_ref()).is_some()
            })
            .count();
        if ready >= args.nodes as usize {
            break;
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {ready} of {} nodes became schedulable",
            args.nodes
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let with_nodes = rss_mb(pid).unwrap_or(0.0);
    println!(
        "nodes ready in {:.1} s, server rss {with_nodes:.1} MB (idle {idle:.1} MB)",
        started.elapsed().as_secs_f64()
    );
    // The nodes' own load (lease renewals, status heartbeats), which goes on under the
    // pods' work: part of the server's CPU in the measured window is this.
    let nodes_only = Duration::from_secs(5);
    let before = cpu_secs(pid);
    tokio::time::sleep(nodes_only).await;
    if let (Some(a), Some(b)) = (before, cpu_secs(pid)) {
        println!(
            "server cpu with nodes only: {:.2} cores (lease renewals and heartbeats)",
            (b - a) / nodes_only.as_secs_f64()
        );
    }

    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    let ns = serde_json::from_value(json!({"metadata": {"name": "bench"}}))?;
    namespaces.create(&PostParams::default(), &ns).await?;
    // Wait for the namespace's default service account (pods need it).
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "bench");
    while accounts.get_opt("default").await?.is_none() {
        anyhow::ensure!(Instant::now() < deadline, "no default service account");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    let seen = Arc::new(Mutex::new(Seen::default()));
    let watched = Arc::clone(&seen);
    let watch_api: Api<WatchedPod> = Api::namespaced(client.clone(), "bench");
    // With back-off: a watch retried at once against a server that is gone never yields,
    // and the runtime could not shut down.
    let mut watching = AbortOnDrop(tokio::spawn(async move {
        let mut stream =
            std::pin::pin!(watcher(watch_api, watcher::Config::default()).default_backoff());
        while let Some(e) = stream.next().await {
            let Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) = e else {
                continue;
            };
            let now = Instant::now();
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let mut s = lock(&watched);
            if p.status.phase.as_deref() == Some("Running") {
                s.running.insert(uid.clone());
            }
            if s.done.contains(&uid) {
                continue;
            }
            let created = *s.created.entry(uid.clone()).or_insert(now);
            let bound = p.spec.node_name.is_some();
            if bound {
                s.created.remove(&uid);
                s.done.insert(uid);
                s.bound += 1;
                s.latencies.record(now.duration_since(created));
                s.last_bound = Some(now);
            }
        }
    }));

    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), "bench");
    // Every process the run uses, for the CPU each spends on the pods.
    let mut processes = vec![("server", pid)];
    processes.extend(components.iter().flat_map(Components::pids));
    processes.push(("bench (simulated nodes)", std::process::id()));
    let cpu_at_start: Vec<f64> = processes
        .iter()
        .map(|(_, p)| cpu_secs(*p).unwrap_or(0.0))
        .collect();
    let threads_at_start = thread_cpu_secs(pid);
    let t0 = Instant::now();
    let mut left = args.pods;
    let mut i = 0;
    while left > 0 {
        let replicas = left.min(args.per_deployment.max(1));
        left -= replicas;
        let d = json!({"metadata": {"name": format!("bench-{i}")},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": format!("bench-{i}")}},
                "template": {"metadata": {"labels": {"app": format!("bench-{i}")}},
                    "spec": {"containers": [{"name": "c", "image": "registry.local/bench:1",
                        "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}}}});
        deployments
            .create(&PostParams::default(), &serde_json::from_value(d)?)
            .await
            .context("creating a Deployment")?;
        i += 1;
    }
    let mut peak = with_nodes;
    let mut last_report = Instant::now();
    loop {
        let (bound, seen_pods) = {
            let s = lock(&seen);
            (s.bound, s.bound + s.created.len())
        };
        peak = peak.max(rss_mb(pid).unwrap_or(0.0));
        if bound >= args.pods as usize {
            break;
        }
        if last_report.elapsed() >= Duration::from_secs(10) {
            println!(
                "  {bound} of {} bound ({seen_pods} created) after {:.0} s",
                args.pods,
                t0.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "only {bound} of {} pods were bound in time",
            args.pods
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let threads_used = thread_cpu_secs(pid);
    let cpu_used: Vec<f64> = processes
        .iter()
        .zip(&cpu_at_start)
        .map(|((_, p), start)| cpu_secs(*p).unwrap_or(0.0) - start)
        .collect();
    let (bound_at, latencies) = {
        let s = lock(&seen);
        (
            s.last_bound.unwrap_or_else(Instant::now),
            s.latencies.clone(),
        )
    };
    let e2e_secs = bound_at.duration_since(t0).as_secs_f64();
    let pods_per_s = f64::from(args.pods) / e2e_secs.max(1e-9);
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let metrics = client.request_text(req).await.unwrap_or_default();
    let (scheduled, busy) = scheduled_from_metrics(&metrics);
    let scheduler_only = if busy > 0.0 { scheduled / busy } else { 0.0 };
    // Let the simulated kubelets finish reporting pods Running (their status patches
    // stream on after the last binding), then take the server's resident memory.
    let settle_deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let running = lock(&seen).running.len();
        if running >= args.pods as usize {
            // The whole life of the pods: their status writes are done too (lease renewals
            // and heartbeats go on meanwhile, so this grows with the time it took).
            let server_cpu = cpu_secs(pid).unwrap_or(0.0) - cpu_at_start[0];
            println!(
                "all pods running {:.1} s after the last was bound; server cpu from the first creation: {server_cpu:.1} s, {:.2} ms per pod",
                bound_at.elapsed().as_secs_f64(),
                server_cpu * 1000.0 / f64::from(args.pods.max(1)),
            );
            break;
        }
        if Instant::now() >= settle_deadline {
            println!(
                "only {running} of {} pods running when memory was taken",
                args.pods
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    tokio::time::sleep(Duration::from_secs(5)).await;
    let rss = rss_mb(pid).unwrap_or(0.0);
    let settled = settled_rss_mb(pid).await;
    println!(
        "end to end: {} pods bound in {e2e_secs:.2} s = {pods_per_s:.0} pods/s (creation → bound p50 {:.1} ms, p99 {:.1} ms)",
        args.pods,
        latencies.p50_ms(),
        latencies.p99_ms()
    );
    let cpu_total: f64 = cpu_used.iter().sum();
    println!(
        "cpu from the first creation to the last binding: {} = {cpu_total:.1} s, {:.2} ms per pod",
        processes
            .iter()
            .zip(&cpu_used)
            .map(|((name, _), s)| format!("{name} {s:.1} s"))
            .collect::<Vec<_>>()
            .join(", "),
        cpu_total * 1000.0 / f64::from(args.pods.max(1)),
    );
    if args.split {
        // The scheduler's cycle metrics are in its own process, not the server's.
        println!("scheduler only: not measured with --split (run without it)");
    } else {
        println!(
            "server cpu by thread: {} (the components' requests run the API server's handlers on their own threads)",
            by_component(&threads_at_start, &threads_used, cpu_used[0])
        );
        println!(
            "scheduler only: {scheduled:.0} scheduling cycles in {busy:.2} s of cycle time = {scheduler_only:.0} pods/s"
        );
    }
    println!(
        "server rss: {rss:.1} MB after, {settled:.1} MB settled, {peak:.1} MB peak, {with_nodes:.1} MB with nodes only"
    );
    // Where the server's memory is: the allocator's live heap against what it holds, and
    // the watch cache's share of the heap.
    let req = http::Request::get("/metrics").body(Vec::new())?;
    let settled_metrics = client.request_text(req).await.unwrap_or_default();
    let mb = |name: &str| metric_sum(&settled_metrics, name) / (1024.0 * 1024.0);
    println!(
        "server heap: {:.1} MB live, {:.1} MB held by the allocator; watch cache {:.1} MB of objects, {:.1} MB of history",
        mb("rkube_heap_allocated_bytes"),
        mb("rkube_heap_resident_bytes"),
        mb("rkube_watch_cache_object_bytes"),
        mb("rkube_watch_cache_history_bytes"),
    );
    println!(
        "server object versions alive: {:.0} ({:.1} MB of bodies) for {:.0} cached objects and {:.0} history events",
        metric_sum(&settled_metrics, "rkube_watch_cache_live_versions"),
        mb("rkube_watch_cache_live_body_bytes"),
        metric_sum(&settled_metrics, "apiserver_storage_objects"),
        metric_sum(&settled_metrics, "rkube_watch_cache_history_events"),
    );
    println!(
        "server watch cache by resource: {}",
        ["pods", "nodes", "leases.coordination.k8s.io"]
            .iter()
            .map(|r| {
                let of = |name: &str| {
                    metric_sum(&settled_metrics, &format!("{name}{{resource=\"{r}\"}}"))
                };
                format!(
                    "{r} {:.1} MB of objects ({:.0} uncompressed) and {:.1} MB of history",
                    of("rkube_watch_cache_object_bytes") / (1024.0 * 1024.0),
                    of("rkube_watch_cache_plain_objects"),
                    of("rkube_watch_cache_history_bytes") / (1024.0 * 1024.0),
                )
            })
            .collect::<Vec<_>>()
            .join(", ")
    );
    println!(
        "server watchers: {:.0}, {:.0} messages queued for them",
        metric_sum(&settled_metrics, "rkube_watch_cache_watchers"),
        metric_sum(&settled_metrics, "rkube_watch_cache_queued_messages"),
    );
    for (name, mb) in components.as_ref().map(Components::rss).unwrap_or_default() {
        println!("{name} rss: {mb:.1} MB (settled with the server)");
    }
    println!(
        "vs upstream 1.28 on this machine: {:.0}x its 125 pods/s (limits lifted), {:.0}x its 20 pods/s (default client limits)",
        pods_per_s / 125.0,
        pods_per_s / 20.0
    );
    println!(
        "schedule-bench nodes={} pods={} pods_per_s={pods_per_s:.0} rss_mb={settled:.0}",
        args.nodes, args.pods
    );
    watching.stop().await;
    sim.stop().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_cpu_splits_by_thread_name() {
        let before = [("controller-mana", 1.0), ("tokio-rt-worker", 5.0)]
            .map(|(n, s)| (n.to_string(), s))
            .into();
        let after = [
            ("controller-mana", 3.5),
            ("scheduler", 2.0),
            ("rkube-sqlite-wr", 1.0),
            ("tokio-rt-worker", 9.0),
        ]
        .map(|(n, s)| (n.to_string(), s))
        .into();
        // 10 s in all: 2.5 + 2 + 1 named, the other 4.5 the API server's (its workers'
        // 4 s and threads that exited).
        assert_eq!(
            by_component(&before, &after, 10.0),
            "API server 4.5 s, controller manager 2.5 s, scheduler 2.0 s, SQLite writer 1.0 s"
        );
    }

    #[test]
    fn this_process_threads_are_read() {
        let threads = thread_cpu_secs(std::process::id());
        assert!(!threads.is_empty());
        assert!(threads.values().all(|s| *s >= 0.0));
    }
}
