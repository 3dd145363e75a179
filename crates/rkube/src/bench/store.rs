//! `rkube bench store`: throughput and latency of the storage backends, side by side.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use clap::{Args, ValueEnum};
use futures::StreamExt;
use store::etcd::{EtcdBackend, EtcdOptions};
use store::memory::MemoryBackend;
use store::sqlite::SqliteBackend;
use store::{Backend, Event, ListOptions, WatchOptions};

use super::Latencies;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum BackendKind {
    Sqlite,
    Etcd,
    Memory,
}

#[derive(Args, Debug)]
pub struct StoreArgs {
    /// Backends to measure, comma-separated.
    #[arg(long, value_enum, value_delimiter = ',', default_value = "sqlite,etcd")]
    backend: Vec<BackendKind>,
    /// Concurrent writers (and readers in the read phase).
    #[arg(long, default_value_t = 64)]
    writers: usize,
    /// Duration of each timed phase.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Size of each stored value, like a small Kubernetes object.
    #[arg(long, default_value_t = 1024)]
    value_bytes: usize,
    /// An existing etcd to measure; without it a temporary single-member etcd is started
    /// (Debian's etcd-server, fsync on, on loopback).
    #[arg(long)]
    etcd_endpoint: Option<String>,
    /// Where the SQLite file and the temporary etcd live (default: a temp dir under /var/tmp).
    #[arg(long)]
    data_dir: Option<PathBuf>,
}

/// The figures of one backend.
#[derive(Debug, Default)]
struct Report {
    creates_per_s: f64,
    create: Latencies,
    updates_per_s: f64,
    update: Latencies,
    gets_per_s: f64,
    get: Latencies,
    list10k_ms: f64,
    watch: Latencies,
}

pub async fn run(args: StoreArgs) -> anyhow::Result<()> {
    let base = match &args.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::Builder::new().prefix("bench-").tempdir_in(d)?
        }
        None => tempfile::Builder::new()
            .prefix("rkube-bench-")
            .tempdir_in("/var/tmp")?,
    };
    let mut reports = Vec::new();
    for kind in &args.backend {
        let (backend, _guard): (Arc<dyn Backend>, Option<testkit::Etcd>) = match kind {
            BackendKind::Memory => (Arc::new(MemoryBackend::new()), None),
            BackendKind::Sqlite => (
                Arc::new(SqliteBackend::open(base.path().join("sqlite/state.db"))?),
                None,
            ),
            BackendKind::Etcd => match &args.etcd_endpoint {
                Some(ep) => (
                    Arc::new(EtcdBackend::connect(EtcdOptions::from_endpoints(ep)?).await?),
                    None,
                ),
                None => {
                    let etcd = tokio::task::spawn_blocking(testkit::Etcd::start).await?;
                    let opts = EtcdOptions::from_endpoints(&etcd.endpoint_list())?;
                    (Arc::new(EtcdBackend::connect(opts).await?), Some(etcd))
                }
            },
        };
        eprintln!("measuring {} ...", backend.name());
        let report = measure(backend, &args)
            .await
            .with_context(|| format!("benchmarking {kind:?}"))?;
        reports.push((*kind, report));
    }
    print_table(&reports);
    for (kind, r) in &reports {
        println!(
            "store-bench backend={} writers={} writes_per_s={:.0} p99_ms={:.2}",
            format!("{kind:?}").to_lowercase(),
            args.writers,
            r.creates_per_s,
            r.create.p99_ms()
        );
    }
    Ok(())
}

fn value(epoch: Instant, size: usize) -> Bytes {
    let mut v = format!("{:020}|", epoch.elapsed().as_nanos()).into_bytes();
    v.resize(size.max(21), b'x');
    Bytes::from(v)
}

fn sent_at(epoch: Instant, value: &[u8]) -> Option<Instant> {
    let ns: u64 = std::str::from_utf8(value.get(..20)?).ok()?.parse().ok()?;
    Some(epoch + Duration::from_nanos(ns))
}

async fn measure(s: Arc<dyn Backend>, args: &StoreArgs) -> anyhow::Result<Report> {
    let epoch = Instant::now();
    let phase = Duration::from_secs(args.seconds);
    let mut report = Report::default();

    // Watch delivery: a watcher on everything the create phase writes.
    let mut watch = s.watch("/bench/obj/", 0, WatchOptions::default()).await?;
    let (stop_watch, mut stopped) = tokio::sync::oneshot::channel::<()>();
    let watcher = tokio::spawn(async move {
        let mut lat = Latencies::default();
        loop {
            let ev = tokio::select! {
                ev = watch.next() => ev,
                _ = &mut stopped => break,
            };
            let ev = match ev {
                None => break,
                Some(Ok(ev)) => ev,
                Some(Err(e)) => {
                    eprintln!("watch ended: {e}");
                    break;
                }
            };
            if let Event::Put { kv, .. } = ev
                && let Some(at) = sent_at(epoch, &kv.value)
            {
                lat.record(at.elapsed());
            }
        }
        lat
    });

    // Creates.
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    let started = Instant::now();
    for w in 0..args.writers {
        let (s, stop, size) = (Arc::clone(&s), Arc::clone(&stop), args.value_bytes);
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::default();
            let mut keys = Vec::new();
            let mut i = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let key = format!("/bench/obj/w{w}-{i}");
                i += 1;
                let t = Instant::now();
                let kv = s.create(&key, value(epoch, size), None).await?;
                lat.record(t.elapsed());
                if keys.len() < 100 {
                    keys.push((key, kv.mod_revision));
                }
            }
            anyhow::Ok((lat, keys))
        }));
    }
    tokio::time::sleep(phase).await;
    stop.store(true, Ordering::Relaxed);
    let mut owned = Vec::new();
    for t in tasks {
        let (lat, keys) = t.await??;
        report.create.merge(lat);
        owned.push(keys);
    }
    report.creates_per_s = report.create.count() as f64 / started.elapsed().as_secs_f64();

    // Updates, each writer on its own keys so every compare-and-swap succeeds.
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    let started = Instant::now();
    for mut keys in owned {
        let (s, stop, size) = (Arc::clone(&s), Arc::clone(&stop), args.value_bytes);
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::default();
            let mut i = 0;
            while !stop.load(Ordering::Relaxed) && !keys.is_empty() {
                let slot = i % keys.len();
                i += 1;
                let (key, rev) = &keys[slot];
                let t = Instant::now();
                let kv = s.update(key, value(epoch, size), *rev, None).await?;
                lat.record(t.elapsed());
                keys[slot].1 = kv.mod_revision;
            }
            anyhow::Ok((lat, keys))
        }));
    }
    tokio::time::sleep(phase).await;
    stop.store(true, Ordering::Relaxed);
    let mut readable = Vec::new();
    for t in tasks {
        let (lat, keys) = t.await??;
        report.update.merge(lat);
        readable.extend(keys.into_iter().map(|(k, _)| k));
    }
    report.updates_per_s = report.update.count() as f64 / started.elapsed().as_secs_f64();

    // Gets.
    let readable = Arc::new(readable);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    let started = Instant::now();
    for r in 0..args.writers {
        let (s, stop, keys) = (Arc::clone(&s), Arc::clone(&stop), Arc::clone(&readable));
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::default();
            let mut i = r * 7919;
            while !stop.load(Ordering::Relaxed) && !keys.is_empty() {
                let key = &keys[i % keys.len()];
                i += 13;
                let t = Instant::now();
                s.get(key).await?;
                lat.record(t.elapsed());
            }
            anyhow::Ok(lat)
        }));
    }
    tokio::time::sleep(phase).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        report.get.merge(t.await??);
    }
    report.gets_per_s = report.get.count() as f64 / started.elapsed().as_secs_f64();

    // A list of 10,000 keys.
    let mut tasks = Vec::new();
    for w in 0..16 {
        let (s, size) = (Arc::clone(&s), args.value_bytes);
        tasks.push(tokio::spawn(async move {
            for i in (w..10_000).step_by(16) {
                s.create(&format!("/bench/list/{i:05}"), value(epoch, size), None)
                    .await?;
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let mut times = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let l = s.list(ListOptions::prefix("/bench/list/")).await?;
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        anyhow::ensure!(l.kvs.len() == 10_000, "list returned {} keys", l.kvs.len());
    }
    times.sort_by(f64::total_cmp);
    report.list10k_ms = times[times.len() / 2];

    let _ = stop_watch.send(());
    report.watch = watcher.await?;
    Ok(report)
}

fn print_table(reports: &[(BackendKind, Report)]) {
    let mut header = format!("{:<24}", "metric");
    for (kind, _) in reports {
        header.push_str(&format!("{:>14}", format!("{kind:?}").to_lowercase()));
    }
    println!("{header}");
    type Row = (&'static str, fn(&Report) -> String);
    let rows: [Row; 12] = [
        ("creates/s", |r| format!("{:.0}", r.creates_per_s)),
        ("create p50 ms", |r| format!("{:.2}", r.create.p50_ms())),
        ("create p99 ms", |r| format!("{:.2}", r.create.p99_ms())),
        ("updates/s", |r| format!("{:.0}", r.updates_per_s)),
        ("update p50 ms", |r| format!("{:.2}", r.update.p50_ms())),
        ("update p99 ms", |r| format!("{:.2}", r.update.p99_ms())),
        ("gets/s", |r| format!("{:.0}", r.gets_per_s)),
        ("get p50 ms", |r| format!("{:.3}", r.get.p50_ms())),
        ("get p99 ms", |r| format!("{:.3}", r.get.p99_ms())),
        ("list 10k keys ms", |r| format!("{:.1}", r.list10k_ms)),
        ("watch delivery p50 ms", |r| {
            format!("{:.2}", r.watch.p50_ms())
        }),
        ("watch delivery p99 ms", |r| {
            format!("{:.2}", r.watch.p99_ms())
        }),
    ];
    for (name, f) in rows {
        let mut line = format!("{name:<24}");
        for (_, r) in reports {
            line.push_str(&format!("{:>14}", f(r)));
        }
        println!("{line}");
    }
}
