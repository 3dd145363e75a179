//! `rkube bench podstartup`: pod start-up on a real node. A fresh `rkube server` with its
//! own node (containerd started by rkube, runc, the CNI bridge) in a temporary data
//! directory, a local `docker-registry` holding the demo images as its `docker.io` mirror,
//! the images pulled once by a warm-up pod; then
//!
//! - (a) the seed Deployment (`kubectl create deployment nginx --image=nginx
//!   --replicas=3`) created, waited for (all 3 Ready as a watch sees them) and deleted,
//!   `--runs` times;
//! - (b) `--pods` bare pods (`nginx:1.22`, `IfNotPresent`) created at `--rate` pods/s,
//!   each from its creation to all its containers running as a watch sees them.
//!
//! Per pod, the stages come from what the API shows, on the machine's one clock: the
//! watch's observations (created, bound, the kubelet's first status, running, Ready) and
//! the events' occurrence times, which upstream's event names carry in nanoseconds
//! (`<pod>.<hex unix nanos>`): `Scheduled`, `Pulling`, `Pulled`, `Created`, `Started`.
//! The kubelet's own per-stage histograms come from its `/metrics` through the API
//! server's node proxy.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Node, Pod, ServiceAccount};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;

use super::schedule::client_for;
use super::{AbortOnDrop, Latencies};

#[derive(clap::Args, Debug)]
pub struct PodStartupArgs {
    /// Runs of the 3-replica Deployment (scenario a).
    #[arg(long, default_value_t = 10)]
    runs: u32,
    /// Bare pods in scenario (b); 0 skips it.
    #[arg(long, default_value_t = 100)]
    pods: u32,
    /// Creation rate of scenario (b), pods per second.
    #[arg(long, default_value_t = 5.0)]
    rate: f64,
    /// The demo image archives (`scripts/build-images.sh DIR`); default the test cache
    /// `<target>/rkube-images/demo`, built when missing.
    #[arg(long)]
    images: Option<PathBuf>,
    /// Keep the server's temporary directory (its log) instead of deleting it.
    #[arg(long)]
    keep: bool,
    /// `RUST_LOG` of the server.
    #[arg(long, default_value = "warn")]
    log: String,
    /// Give up on one wait after this many seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
}

const NS: &str = "bench";

/// The server with its node, stopped and cleaned up (`rkube killall`) on drop.
struct NodeServer {
    child: Option<std::process::Child>,
    dir: Option<tempfile::TempDir>,
    kubeconfig: PathBuf,
    node: String,
}

impl NodeServer {
    /// Fails when the server has exited (with the end of its log).
    fn check(&mut self) -> anyhow::Result<()> {
        if let Some(c) = self.child.as_mut()
            && let Ok(Some(st)) = c.try_wait()
        {
            let log = self
                .dir
                .as_ref()
                .and_then(|d| std::fs::read_to_string(d.path().join("server.log")).ok())
                .unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(20).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            anyhow::bail!("rkube server exited with {st}:\n{}", tail.join("\n"));
        }
        Ok(())
    }

    fn data(&self) -> PathBuf {
        self.dir
            .as_ref()
            .map(|d| d.path().join("data"))
            .unwrap_or_default()
    }
}

impl Drop for NodeServer {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = std::process::Command::new("kill")
                .args(["-TERM", &c.id().to_string()])
                .status();
            let deadline = Instant::now() + Duration::from_secs(20);
            while Instant::now() < deadline {
                if let Ok(Some(_)) = c.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(100));
            }
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Ok(exe) = std::env::current_exe() {
            let _ = std::process::Command::new(exe)
                .args(["killall", "--data-dir"])
                .arg(self.data().join("agent"))
                .output();
        }
    }
}

/// The demo archives: `dir` or the test cache, built by `scripts/build-images.sh`.
fn demo_images(dir: Option<PathBuf>) -> anyhow::Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let dir = match dir {
        Some(d) => d,
        None => exe
            .parent()
            .and_then(Path::parent)
            .context("binary location")?
            .join("rkube-images")
            .join("demo"),
    };
    let ready = testkit::images::DEMO_IMAGES
        .iter()
        .all(|(f, _)| dir.join(f).is_file());
    if !ready {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/build-images.sh");
        println!("building the demo images into {}", dir.display());
        let st = std::process::Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .env("RKUBE", &exe)
            .status()?;
        anyhow::ensure!(st.success(), "{} failed", script.display());
    }
    Ok(dir)
}

fn spawn_node_server(
    registry: &str,
    cidr: &str,
    octet: u8,
    log: &str,
    keep: bool,
) -> anyhow::Result<NodeServer> {
    let dir = tempfile::Builder::new()
        .prefix("rkube-bench-pods-")
        .tempdir_in("/var/tmp")?;
    let port = testkit::free_port();
    let kubelet_port = testkit::free_port();
    let node = format!("bench-{octet}-{kubelet_port}");
    let data = dir.path().join("data");
    let out = std::fs::File::create(dir.path().join("server.log"))?;
    let child = std::process::Command::new(std::env::current_exe()?)
        .arg("server")
        .arg("--data-dir")
        .arg(&data)
        .args(["--https-port", &port.to_string()])
        .args(["--bind-address", "127.0.0.1"])
        .args(["--node-name", &node])
        .args(["--kubelet-port", &kubelet_port.to_string()])
        .args(super::COMPONENT_ENDPOINTS_OFF)
        .args(["--node-ip", "127.0.0.1"])
        .args(["--cluster-cidr", cidr])
        .args(["--registry-mirror", &format!("docker.io=http://{registry}")])
        .env("RUST_LOG", log)
        .stdin(std::process::Stdio::null())
        .stdout(out.try_clone()?)
        .stderr(out)
        .spawn()?;
    let mut dir = Some(dir);
    if keep && let Some(d) = dir.as_mut() {
        d.disable_cleanup(true);
        println!("server directory (kept): {}", d.path().display());
    }
    Ok(NodeServer {
        child: Some(child),
        kubeconfig: data.join("admin.kubeconfig"),
        dir,
        node,
    })
}

/// What the watch saw of one pod, as wall-clock times.
#[derive(Debug, Default, Clone)]
struct Seen {
    name: String,
    created: Option<Timestamp>,
    /// When the bench sent its create (scenario b).
    requested: Option<Timestamp>,
    bound: Option<Timestamp>,
    /// The kubelet's first status (hostIP set).
    kubelet: Option<Timestamp>,
    running: Option<Timestamp>,
    ready: Option<Timestamp>,
}

type Watched = Arc<Mutex<HashMap<String, Seen>>>;

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn all_running(p: &Pod) -> bool {
    let want = p.spec.as_ref().map_or(0, |s| s.containers.len());
    let running = p
        .status
        .as_ref()
        .and_then(|s| s.container_statuses.as_ref())
        .map_or(0, |cs| {
            cs.iter()
                .filter(|c| c.state.as_ref().is_some_and(|s| s.running.is_some()))
                .count()
        });
    want > 0 && running == want
}

fn is_ready(p: &Pod) -> bool {
    p.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn spawn_watch(pods: Api<Pod>, seen: Watched) -> AbortOnDrop {
    AbortOnDrop(tokio::spawn(async move {
        // With back-off: a watch retried at once against a server that is gone never
        // yields, and the runtime could not shut down.
        let mut stream =
            std::pin::pin!(watcher(pods, watcher::Config::default()).default_backoff());
        while let Some(e) = stream.next().await {
            let now = Timestamp::now();
            let p = match e {
                Ok(watcher::Event::Apply(p) | watcher::Event::InitApply(p)) => p,
                _ => continue,
            };
            let uid = p.metadata.uid.clone().unwrap_or_default();
            let mut s = lock(&seen);
            let e = s.entry(uid).or_default();
            e.name = p.metadata.name.clone().unwrap_or_default();
            e.created.get_or_insert(now);
            if p.spec.as_ref().and_then(|s| s.node_name.as_ref()).is_some() {
                e.bound.get_or_insert(now);
            }
            if p.status.as_ref().and_then(|s| s.host_ip.as_ref()).is_some() {
                e.kubelet.get_or_insert(now);
            }
            if all_running(&p) {
                e.running.get_or_insert(now);
            }
            if is_ready(&p) {
                e.ready.get_or_insert(now);
            }
        }
    }))
}

/// The occurrence time upstream's event names carry (`<object>.<hex unix nanos>`).
fn event_time(e: &Event) -> Option<Timestamp> {
    let name = e.metadata.name.as_deref()?;
    let hex = name.rsplit('.').next()?;
    let nanos = i128::from_str_radix(hex, 16).ok()?;
    Timestamp::from_nanosecond(nanos).ok()
}

/// Per pod uid: reason → first occurrence.
async fn pod_events(
    client: &kube::Client,
) -> anyhow::Result<HashMap<String, BTreeMap<String, Timestamp>>> {
    let events: Api<Event> = Api::namespaced(client.clone(), NS);
    let mut out: HashMap<String, BTreeMap<String, Timestamp>> = HashMap::new();
    for e in events.list(&ListParams::default()).await?.items {
        let (Some(uid), Some(reason), Some(at)) = (
            e.involved_object.uid.clone(),
            e.reason.clone(),
            event_time(&e),
        ) else {
            continue;
        };
        let m = out.entry(uid).or_default();
        let slot = m.entry(reason).or_insert(at);
        if at < *slot {
            *slot = at;
        }
    }
    Ok(out)
}

const STAGES: &[&str] = &[
    "controller",
    "schedule",
    "kubelet sees",
    "sandbox",
    "pull",
    "create",
    "start",
    "status visible",
    "ready visible",
    "total",
];

/// Stage → latencies.
#[derive(Default)]
struct Breakdown(BTreeMap<&'static str, Latencies>);

fn dur(a: Option<Timestamp>, b: Option<Timestamp>) -> Option<Duration> {
    let (a, b) = (a?, b?);
    let ns = b.as_nanosecond() - a.as_nanosecond();
    Some(Duration::from_nanos(u64::try_from(ns.max(0)).unwrap_or(0)))
}

impl Breakdown {
    fn add(&mut self, stage: &'static str, d: Option<Duration>) {
        if let Some(d) = d {
            self.0.entry(stage).or_default().record(d);
        }
    }

    /// One pod: `origin` is when its creation was asked for (the Deployment's POST, or
    /// the pod's own).
    fn pod(&mut self, origin: Timestamp, s: &Seen, ev: Option<&BTreeMap<String, Timestamp>>) {
        let get = |r: &str| ev.and_then(|m| m.get(r)).copied();
        let scheduled = get("Scheduled").or(s.bound);
        let pulling = get("Pulling");
        let pulled = get("Pulled");
        let first_image = pulling.or(pulled);
        let created_c = get("Created");
        let started = get("Started");
        let created = s.requested.or(s.created);
        if s.requested.is_none() {
            self.add("controller", dur(Some(origin), created));
        }
        self.add("schedule", dur(created, scheduled));
        self.add("kubelet sees", dur(scheduled, s.kubelet));
        self.add("sandbox", dur(s.kubelet, first_image));
        self.add(
            "pull",
            if pulling.is_some() {
                dur(pulling, pulled)
            } else {
                Some(Duration::ZERO)
            },
        );
        self.add("create", dur(pulled, created_c));
        self.add("start", dur(created_c, started));
        self.add("status visible", dur(started, s.running));
        self.add("ready visible", dur(s.running, s.ready));
        self.add("total", dur(Some(origin), s.running.max(s.ready)));
    }

    fn print(&self, title: &str) {
        println!("{title}");
        println!(
            "  {:<16} {:>6} {:>9} {:>9} {:>9}",
            "stage", "n", "p50 ms", "p99 ms", "mean ms"
        );
        for st in STAGES {
            if let Some(l) = self.0.get(st) {
                println!(
                    "  {st:<16} {:>6} {:>9.1} {:>9.1} {:>9.1}",
                    l.count(),
                    l.p50_ms(),
                    l.p99_ms(),
                    l.mean_ms()
                );
            }
        }
    }
}

async fn wait_until<F>(
    server: &mut NodeServer,
    what: &str,
    timeout: Duration,
    mut f: F,
) -> anyhow::Result<()>
where
    F: FnMut() -> bool,
{
    let deadline = Instant::now() + timeout;
    while !f() {
        server.check()?;
        anyhow::ensure!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(())
}

async fn wait_node(client: &kube::Client, node: &str, timeout: Duration) -> anyhow::Result<()> {
    let nodes: Api<Node> = Api::all(client.clone());
    let deadline = Instant::now() + timeout;
    loop {
        if let Some(n) = nodes.get_opt(node).await? {
            let ready = n
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
            let spec = n.spec.as_ref();
            let cidr = spec.and_then(|s| s.pod_cidr.as_ref()).is_some();
            let untainted = spec
                .and_then(|s| s.taints.as_ref())
                .is_none_or(|ts| ts.iter().all(|t| !t.key.starts_with("node.kubernetes.io/")));
            if ready && cidr && untainted {
                return Ok(());
            }
        }
        anyhow::ensure!(Instant::now() < deadline, "node {node} not Ready");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Waits until the namespace has no pods.
async fn wait_no_pods(
    server: &mut NodeServer,
    pods: &Api<Pod>,
    timeout: Duration,
) -> anyhow::Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        server.check()?;
        if pods.list(&ListParams::default()).await?.items.is_empty() {
            return Ok(());
        }
        anyhow::ensure!(Instant::now() < deadline, "pods not gone");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `pods/<name>` with `image` and `IfNotPresent`, as `kubectl run` would create it.
fn bare_pod(name: &str, image: &str) -> anyhow::Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"run": name}},
        "spec": {"containers": [{"name": name, "image": image,
            "imagePullPolicy": "IfNotPresent", "resources": {}}],
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"}
    }))?)
}

/// The kubelet's stage histograms: `(name{labels}, count, sum)` of every `_count`.
fn kubelet_stages(metrics: &str) -> Vec<(String, f64, f64)> {
    let mut sums: BTreeMap<String, f64> = BTreeMap::new();
    let mut counts: BTreeMap<String, f64> = BTreeMap::new();
    for line in metrics.lines().filter(|l| !l.starts_with('#')) {
        let Some((key, v)) = line.rsplit_once(' ') else {
            continue;
        };
        let Ok(v) = v.parse::<f64>() else { continue };
        let (name, labels) = key.split_once('{').unwrap_or((key, ""));
        let labels = labels.trim_end_matches('}');
        let wanted = name.starts_with("kubelet_pod_start_stage_duration_seconds")
            || name.starts_with("kubelet_pod_start_duration_seconds");
        if !wanted {
            continue;
        }
        if let Some(base) = name.strip_suffix("_sum") {
            sums.insert(format!("{base}{{{labels}}}"), v);
        } else if let Some(base) = name.strip_suffix("_count") {
            counts.insert(format!("{base}{{{labels}}}"), v);
        }
    }
    counts
        .into_iter()
        .map(|(k, c)| {
            let s = sums.get(&k).copied().unwrap_or(0.0);
            (k, c, s)
        })
        .collect()
}

pub async fn run(args: PodStartupArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        Path::new("/usr/bin/containerd").exists(),
        "containerd is missing: run scripts/install-deps.sh (package containerd)"
    );
    let timeout = Duration::from_secs(args.timeout);
    let images = demo_images(args.images.clone())?;
    let registry = testkit::registry::Registry::start();
    for (file, reference) in testkit::images::DEMO_IMAGES {
        let repo_tag = reference.strip_prefix("docker.io/").unwrap_or(reference);
        registry.push(&images.join(file), repo_tag);
    }
    let lease = testkit::node::CidrLease::take();
    let mut server = spawn_node_server(
        &registry.host(),
        &lease.cidr(),
        lease.octet,
        &args.log,
        args.keep,
    )?;
    let client = client_for(&server.kubeconfig).await?;
    let started = Instant::now();
    wait_node(&client, &server.node, Duration::from_secs(120)).await?;
    println!(
        "podstartup-bench: node {} Ready in {:.1} s (pod network {}, registry mirror {})",
        server.node,
        started.elapsed().as_secs_f64(),
        lease.cidr(),
        registry.host()
    );
    let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": NS}}))?,
        )
        .await?;
    let accounts: Api<ServiceAccount> = Api::namespaced(client.clone(), NS);
    let deadline = Instant::now() + timeout;
    while accounts.get_opt("default").await?.is_none() {
        anyhow::ensure!(Instant::now() < deadline, "no default service account");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let pods: Api<Pod> = Api::namespaced(client.clone(), NS);
    let seen: Watched = Arc::new(Mutex::new(HashMap::new()));
    let mut watch = spawn_watch(pods.clone(), Arc::clone(&seen));

    // Warm-up: both images pulled ("images present"), containerd's first pod paid.
    for (i, image) in ["nginx:latest", "nginx:1.22"].iter().enumerate() {
        let name = format!("warmup-{i}");
        let t = Instant::now();
        pods.create(&PostParams::default(), &bare_pod(&name, image)?)
            .await?;
        wait_until(&mut server, &format!("{name} running"), timeout, || {
            lock(&seen)
                .values()
                .any(|s| s.name == name && s.running.is_some())
        })
        .await?;
        println!(
            "warm-up pod {name} ({image}) running after {:.0} ms",
            t.elapsed().as_secs_f64() * 1000.0
        );
    }
    pods.delete_collection(&DeleteParams::default(), &ListParams::default())
        .await?;
    wait_no_pods(&mut server, &pods, timeout).await?;
    lock(&seen).clear();

    // (a) The seed Deployment, as `kubectl create deployment nginx --image=nginx --replicas=3`.
    let deployments: Api<k8s_openapi::api::apps::v1::Deployment> =
        Api::namespaced(client.clone(), NS);
    let mut all_ready = Latencies::default();
    let mut per_pod_a = Breakdown::default();
    for run in 0..args.runs {
        let d = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx"}},
                "strategy": {},
                "template": {"metadata": {"labels": {"app": "nginx"}},
                    "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}}}
        });
        let origin = Timestamp::now();
        let t0 = Instant::now();
        deployments
            .create(&PostParams::default(), &serde_json::from_value(d)?)
            .await
            .context("creating the Deployment")?;
        wait_until(&mut server, "3 pods Ready", timeout, || {
            lock(&seen).values().filter(|s| s.ready.is_some()).count() >= 3
        })
        .await?;
        let took = t0.elapsed();
        all_ready.record(took);
        let events = pod_events(&client).await?;
        let snapshot: Vec<(String, Seen)> = lock(&seen)
            .iter()
            .map(|(u, s)| (u.clone(), s.clone()))
            .collect();
        for (uid, s) in &snapshot {
            per_pod_a.pod(origin, s, events.get(uid));
        }
        println!(
            "  run {:>2}: all 3 Ready after {:.0} ms",
            run + 1,
            took.as_secs_f64() * 1000.0
        );
        deployments
            .delete("nginx", &DeleteParams::default())
            .await?;
        wait_no_pods(&mut server, &pods, timeout).await?;
        let events: Api<Event> = Api::namespaced(client.clone(), NS);
        events
            .delete_collection(&DeleteParams::default(), &ListParams::default())
            .await?;
        lock(&seen).clear();
    }
    if args.runs > 0 {
        per_pod_a.print(
            "(a) Deployment nginx (image nginx = :latest, imagePullPolicy Always: one registry round trip per pod), 3 replicas, per pod:",
        );
        println!(
            "(a) all 3 Ready after the Deployment's POST: p50 {:.0} ms, p99 {:.0} ms, mean {:.0} ms over {} runs",
            all_ready.p50_ms(),
            all_ready.p99_ms(),
            all_ready.mean_ms(),
            all_ready.count()
        );
    }

    // (b) Bare pods at a steady rate.
    let mut per_pod_b = Breakdown::default();
    let mut to_running = Latencies::default();
    if args.pods > 0 {
        let gap = Duration::from_secs_f64(1.0 / args.rate.max(0.01));
        let t0 = Instant::now();
        let mut requested: HashMap<String, Timestamp> = HashMap::new();
        for i in 0..args.pods {
            let at = t0 + gap * i;
            tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
            let name = format!("pod-{i}");
            requested.insert(name.clone(), Timestamp::now());
            let p = pods.clone();
            let pod = bare_pod(&name, "nginx:1.22")?;
            tokio::spawn(async move {
                if let Err(e) = p.create(&PostParams::default(), &pod).await {
                    tracing::error!(error = %e, "creating a pod");
                }
            });
        }
        let n = args.pods as usize;
        wait_until(&mut server, "every pod running", timeout, || {
            lock(&seen).values().filter(|s| s.running.is_some()).count() >= n
        })
        .await?;
        // The Ready condition follows in the same status write, or the next.
        let _ = wait_until(
            &mut server,
            "every pod Ready",
            Duration::from_secs(10),
            || lock(&seen).values().filter(|s| s.ready.is_some()).count() >= n,
        )
        .await;
        println!(
            "(b) {n} pods at {:.1}/s: the last running {:.1} s after the first creation",
            args.rate,
            t0.elapsed().as_secs_f64()
        );
        let events = pod_events(&client).await?;
        let snapshot: Vec<(String, Seen)> = lock(&seen)
            .iter()
            .map(|(u, s)| (u.clone(), s.clone()))
            .collect();
        for (uid, mut s) in snapshot {
            s.requested = requested.get(&s.name).copied();
            if let Some(d) = dur(s.requested, s.running) {
                to_running.record(d);
            }
            per_pod_b.pod(
                s.requested.unwrap_or_else(Timestamp::now),
                &s,
                events.get(&uid),
            );
        }
        per_pod_b.print(&format!(
            "(b) {n} bare pods (nginx:1.22, IfNotPresent) at {:.1}/s, per pod (creation → all containers running as the watch saw it):",
            args.rate
        ));
    }

    let path = format!("/api/v1/nodes/{}/proxy/metrics", server.node);
    let req = http::Request::get(path).body(Vec::new())?;
    match client.request_text(req).await {
        Ok(text) => {
            let stages = kubelet_stages(&text);
            if !stages.is_empty() {
                println!("the kubelet's own figures (/metrics, all pods of the run):");
                for (k, c, s) in stages {
                    println!(
                        "  {k:<72} n={c:<5} mean {:.1} ms",
                        if c > 0.0 { s / c * 1000.0 } else { 0.0 }
                    );
                }
            }
        }
        Err(e) => println!("(the kubelet's /metrics: {e})"),
    }
    if args.runs > 0 {
        println!(
            "podstartup-deployment runs={} replicas=3 p50_ms={:.0} p99_ms={:.0}",
            all_ready.count(),
            all_ready.p50_ms(),
            all_ready.p99_ms()
        );
    }
    println!(
        "podstartup-bench pods={} p50_ms={:.0} p99_ms={:.0}",
        to_running.count(),
        to_running.p50_ms(),
        to_running.p99_ms()
    );
    watch.stop().await;
    drop(client);
    drop(server);
    drop(registry);
    drop(lease);
    Ok(())
}
