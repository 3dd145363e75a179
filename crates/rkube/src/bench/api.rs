//! `rkube bench api`: the API server under load from N clients over TLS with client
//! certificates: creates, gets, updates, a list of 10,000 pods, watch delivery, and the
//! server's memory.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use base64::Engine;
use bytes::Bytes;
use clap::Args;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http2::SendRequest;
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use serde_json::{Value, json};

use super::Latencies;

#[derive(Args, Debug)]
pub struct ApiArgs {
    /// Concurrent clients, each with its own HTTP/2 connection.
    #[arg(long, default_value_t = 16)]
    clients: usize,
    /// Duration of each timed phase.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Measure an already running server through this kubeconfig (client certificate
    /// credentials). Without it a fresh `rkube server --disable-agent` is started.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The running server's process id, for its memory figures (with --kubeconfig).
    #[arg(long)]
    server_pid: Option<u32>,
    /// Number of pods in the list phase.
    #[arg(long, default_value_t = 10_000)]
    list_pods: usize,
}

/// Connection details from a kubeconfig.
struct Target {
    host: String,
    port: u16,
    tls: Arc<rustls::ClientConfig>,
}

fn b64(v: &Value) -> anyhow::Result<Vec<u8>> {
    let s = v.as_str().context("kubeconfig field is not a string")?;
    Ok(base64::engine::general_purpose::STANDARD.decode(s)?)
}

fn load_target(path: &std::path::Path) -> anyhow::Result<Target> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let cfg: Value = serde_yaml_ng::from_str(&text)?;
    let current = cfg["current-context"].as_str().unwrap_or_default();
    let ctx = cfg["contexts"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == current))
        .context("kubeconfig: current context not found")?;
    let cluster_name = ctx["context"]["cluster"].as_str().unwrap_or_default();
    let user_name = ctx["context"]["user"].as_str().unwrap_or_default();
    let cluster = cfg["clusters"]
        .as_array()
        .and_then(|a| a.iter().find(|c| c["name"] == cluster_name))
        .context("kubeconfig: cluster not found")?;
    let user = cfg["users"]
        .as_array()
        .and_then(|a| a.iter().find(|u| u["name"] == user_name))
        .context("kubeconfig: user not found")?;
    let server = cluster["cluster"]["server"]
        .as_str()
        .context("kubeconfig: no server")?;
    let url: http::Uri = server.parse()?;
    let host = url
        .host()
        .context("server URL has no host")?
        .trim_matches(|c| c == '[' || c == ']')
        .to_string();
    let port = url.port_u16().unwrap_or(443);
    let mut roots = rustls::RootCertStore::empty();
    for c in
        CertificateDer::pem_slice_iter(&b64(&cluster["cluster"]["certificate-authority-data"])?)
    {
        roots.add(c?)?;
    }
    let certs: Vec<CertificateDer<'static>> =
        CertificateDer::pem_slice_iter(&b64(&user["user"]["client-certificate-data"])?)
            .collect::<Result<_, _>>()?;
    let key = PrivateKeyDer::from_pem_slice(&b64(&user["user"]["client-key-data"])?)?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_client_auth_cert(certs, key)?;
    tls.alpn_protocols = vec![b"h2".to_vec()];
    Ok(Target {
        host,
        port,
        tls: Arc::new(tls),
    })
}

/// One HTTP/2 connection.
#[derive(Clone)]
struct Conn {
    send: SendRequest<Full<Bytes>>,
    authority: String,
}

async fn connect(t: &Target) -> anyhow::Result<Conn> {
    let tcp = tokio::net::TcpStream::connect((t.host.as_str(), t.port)).await?;
    tcp.set_nodelay(true)?;
    let name = ServerName::try_from(t.host.clone())?;
    let tls = tokio_rustls::TlsConnector::from(Arc::clone(&t.tls))
        .connect(name, tcp)
        .await?;
    let (send, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(tls)).await?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    Ok(Conn {
        send,
        authority: format!("{}:{}", t.host, t.port),
    })
}

impl Conn {
    async fn request(
        &mut self,
        method: http::Method,
        path: &str,
        body: Option<Vec<u8>>,
    ) -> anyhow::Result<(u16, Bytes)> {
        let req = http::Request::builder()
            .method(method)
            .uri(format!("https://{}{path}", self.authority))
            .header(http::header::CONTENT_TYPE, "application/json")
            .header(http::header::ACCEPT, "application/json")
            .body(Full::new(Bytes::from(body.unwrap_or_default())))?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok((status, body))
    }
}

/// Resident memory of a process in MiB.
pub(super) fn rss_mb(pid: u32) -> Option<f64> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kb: f64 = s
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kb / 1024.0)
}

/// CPU seconds (user and system) a process has used so far, from `/proc/<pid>/stat`.
pub(super) fn cpu_secs(pid: u32) -> Option<f64> {
    stat_cpu_secs(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?).map(|(_, s)| s)
}

/// A `/proc/…/stat` line's command name and CPU seconds (user and system).
fn stat_cpu_secs(s: &str) -> Option<(&str, f64)> {
    // The command name (field 2) may hold spaces; the fields after it are plain numbers.
    let (open, close) = (s.find('(')?, s.rfind(')')?);
    let mut fields = s.get(close + 1..)?.split_whitespace();
    // utime and stime are fields 14 and 15, the 12th and 13th after the name.
    let utime: f64 = fields.nth(11)?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    // Linux reports them in USER_HZ, which is 100 on every architecture it runs on.
    Some((s.get(open + 1..close)?, (utime + stime) / 100.0))
}

/// CPU seconds of a process's live threads, summed by thread name (the kernel's `comm`,
/// at most 15 bytes: `controller-mana` for the in-process controller manager's threads).
/// Threads that have exited are in the process's total only.
pub(super) fn thread_cpu_secs(pid: u32) -> std::collections::BTreeMap<String, f64> {
    let mut out = std::collections::BTreeMap::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return out;
    };
    for task in tasks.flatten() {
        let Ok(s) = std::fs::read_to_string(task.path().join("stat")) else {
            continue;
        };
        if let Some((name, secs)) = stat_cpu_secs(&s) {
            *out.entry(name.to_string()).or_insert(0.0) += secs;
        }
    }
    out
}

/// Resident memory of a process once it has settled: sampled every second until it has
/// not dropped by more than 1% for three samples (at most 30 s), so freed pages that the
/// allocator returns to the system after its decay time (jemalloc: 10 s) are not counted
/// as held.
pub(super) async fn settled_rss_mb(pid: u32) -> f64 {
    let mut last = rss_mb(pid).unwrap_or(0.0);
    let mut steady = 0;
    for _ in 0..30 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        let now = rss_mb(pid).unwrap_or(0.0);
        if now >= last * 0.99 {
            steady += 1;
            if steady >= 3 {
                return now;
            }
        } else {
            steady = 0;
        }
        last = now;
    }
    last
}

/// A server started for the benchmark, killed on drop.
pub(super) struct Spawned {
    pub(super) child: std::process::Child,
    _dir: tempfile::TempDir,
    pub(super) kubeconfig: PathBuf,
}

impl Drop for Spawned {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(super) fn spawn_server() -> anyhow::Result<Spawned> {
    spawn_server_with(&[])
}

/// A server for a benchmark with extra flags (e.g. `--disable-controller-manager`).
pub(super) fn spawn_server_with(extra: &[&str]) -> anyhow::Result<Spawned> {
    let dir = tempfile::Builder::new()
        .prefix("rkube-bench-api-")
        .tempdir_in("/var/tmp")?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let data = dir.path().join("data");
    let log = std::fs::File::create(dir.path().join("server.log"))?;
    let child = std::process::Command::new(std::env::current_exe()?)
        .args([
            "server",
            "--disable-agent",
            // Room for a /24 per node at thousands of simulated nodes.
            "--cluster-cidr",
            "10.64.0.0/10",
            "--bind-address",
            "127.0.0.1",
            "--https-port",
            &port.to_string(),
        ])
        .arg("--data-dir")
        .arg(&data)
        .args(super::COMPONENT_ENDPOINTS_OFF)
        .args(extra)
        .env("RUST_LOG", "warn")
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()?;
    Ok(Spawned {
        child,
        kubeconfig: data.join("admin.kubeconfig"),
        _dir: dir,
    })
}

async fn wait_ready(t: &Target) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(mut c) = connect(t).await
            && let Ok((200, _)) = c.request(http::Method::GET, "/readyz", None).await
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("the server did not become ready");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Runs `f` on every client for `secs`, collecting latencies of successful calls.
async fn phase<F, Fut>(conns: &[Conn], secs: u64, f: F) -> anyhow::Result<(Latencies, f64)>
where
    F: Fn(Conn, usize, u64) -> Fut + Send + Sync + 'static + Clone,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let (c, stop, f) = (c.clone(), Arc::clone(&stop), f.clone());
        tasks.push(tokio::spawn(async move {
            let mut lat = Latencies::default();
            let mut n = 0u64;
            while !stop.load(Ordering::Relaxed) {
                let t = Instant::now();
                f(c.clone(), i, n).await?;
                lat.record(t.elapsed());
                n += 1;
            }
            anyhow::Ok(lat)
        }));
    }
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    let mut all = Latencies::default();
    for t in tasks {
        all.merge(t.await??);
    }
    let rate = all.count() as f64 / started.elapsed().as_secs_f64();
    Ok((all, rate))
}

fn configmap(name: &str, ns: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": ns, "labels": {"bench": "api"}},
        "data": {"key": "value", "config.yaml": "a: 1\nb: [x, y]\n"},
    }))
    .unwrap_or_default()
}

fn pod(name: &str, ns: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": {"app": "bench"}},
        "spec": {"containers": [{"name": "c", "image": "registry.local/app:1.0", "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]},
    }))
    .unwrap_or_default()
}

pub async fn run(args: ApiArgs) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let spawned = match &args.kubeconfig {
        Some(_) => None,
        None => Some(spawn_server()?),
    };
    let kubeconfig = match (&args.kubeconfig, &spawned) {
        (Some(k), _) => k.clone(),
        (None, Some(s)) => {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !s.kubeconfig.exists() {
                if Instant::now() > deadline {
                    bail!("the server wrote no kubeconfig");
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
            s.kubeconfig.clone()
        }
        (None, None) => bail!("no server"),
    };
    let pid = args.server_pid.or(spawned.as_ref().map(|s| s.child.id()));
    let target = load_target(&kubeconfig)?;
    wait_ready(&target).await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let rss_idle = pid.and_then(rss_mb);

    let ns = format!("bench-{}", std::process::id());
    let mut admin = connect(&target).await?;
    let body = serde_json::to_vec(
        &json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
    )?;
    let (code, resp) = admin
        .request(http::Method::POST, "/api/v1/namespaces", Some(body))
        .await?;
    if code != 201 {
        bail!(
            "creating the namespace failed ({code}): {}",
            String::from_utf8_lossy(&resp)
        );
    }
    let mut conns = Vec::new();
    for _ in 0..args.clients.max(1) {
        conns.push(connect(&target).await?);
    }

    // Watch delivery: a watcher on the namespace's configmaps.
    let (watch_tx, watch_rx) = tokio::sync::oneshot::channel::<()>();
    let watcher = {
        let mut c = connect(&target).await?;
        let path = format!("/api/v1/namespaces/{ns}/configmaps?watch=1&resourceVersion=0");
        let epoch = Instant::now();
        let sent = Arc::new(std::sync::Mutex::new(std::collections::HashMap::<
            String,
            Instant,
        >::new()));
        let sent_w = Arc::clone(&sent);
        let handle = tokio::spawn(async move {
            let mut lat = Latencies::default();
            let req = http::Request::builder()
                .uri(format!("https://{}{path}", c.authority))
                .body(Full::new(Bytes::new()));
            let Ok(req) = req else { return lat };
            if c.send.ready().await.is_err() {
                return lat;
            }
            let Ok(resp) = c.send.send_request(req).await else {
                return lat;
            };
            let mut body = resp.into_body();
            let mut buf = Vec::new();
            let mut stop = watch_rx;
            loop {
                let frame = tokio::select! {
                    f = body.frame() => f,
                    _ = &mut stop => break,
                };
                let Some(Ok(frame)) = frame else { break };
                if let Ok(data) = frame.into_data() {
                    buf.extend_from_slice(&data);
                    while let Some(pos) = buf.iter().position(|b| *b == b'\n') {
                        let line: Vec<u8> = buf.drain(..=pos).collect();
                        if let Ok(ev) = serde_json::from_slice::<Value>(&line)
                            && ev["type"] == "ADDED"
                            && let Some(name) = ev["object"]["metadata"]["name"].as_str()
                            && let Ok(map) = sent_w.lock()
                            && let Some(at) = map.get(name)
                        {
                            lat.record(at.elapsed());
                        }
                    }
                }
            }
            let _ = epoch;
            lat
        });
        (handle, sent)
    };
    tokio::time::sleep(Duration::from_millis(300)).await;

    // Creates.
    let sent = Arc::clone(&watcher.1);
    let ns_c = ns.clone();
    let (create, creates_per_s) = phase(&conns, args.seconds, move |mut c, i, n| {
        let (ns, sent) = (ns_c.clone(), Arc::clone(&sent));
        async move {
            let name = format!("cm-{i}-{n}");
            if let Ok(mut map) = sent.lock() {
                map.insert(name.clone(), Instant::now());
            }
            let (code, body) = c
                .request(
                    http::Method::POST,
                    &format!("/api/v1/namespaces/{ns}/configmaps"),
                    Some(configmap(&name, &ns)),
                )
                .await?;
            if code != 201 {
                bail!("create failed ({code}): {}", String::from_utf8_lossy(&body));
            }
            Ok(())
        }
    })
    .await?;
    let _ = watch_tx.send(());
    let watch = watcher.0.await.unwrap_or_default();
    let created_per_client = (create.count() / conns.len().max(1)).max(1) as u64;

    // Gets of what was created.
    let ns_g = ns.clone();
    let (get, gets_per_s) = phase(&conns, args.seconds, move |mut c, i, n| {
        let ns = ns_g.clone();
        async move {
            let name = format!("cm-{i}-{}", (n * 7919) % created_per_client);
            let (code, _) = c
                .request(
                    http::Method::GET,
                    &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
                    None,
                )
                .await?;
            if code != 200 && code != 404 {
                bail!("get failed ({code})");
            }
            Ok(())
        }
    })
    .await?;

    // Updates (unconditional PUTs of each client's own objects).
    let ns_u = ns.clone();
    let (update, updates_per_s) = phase(&conns, args.seconds, move |mut c, i, n| {
        let ns = ns_u.clone();
        async move {
            let name = format!("cm-{i}-{}", n % created_per_client);
            let mut obj: Value = serde_json::from_slice(&configmap(&name, &ns))?;
            obj["data"]["key"] = json!(format!("v{n}"));
            let (code, body) = c
                .request(
                    http::Method::PUT,
                    &format!("/api/v1/namespaces/{ns}/configmaps/{name}"),
                    Some(serde_json::to_vec(&obj)?),
                )
                .await?;
            if code != 200 && code != 404 {
                bail!("update failed ({code}): {}", String::from_utf8_lossy(&body));
            }
            Ok(())
        }
    })
    .await?;

    // A list of many pods.
    let total = args.list_pods;
    let per = total.div_ceil(conns.len().max(1));
    let mut tasks = Vec::new();
    for (i, c) in conns.iter().enumerate() {
        let (mut c, ns) = (c.clone(), ns.clone());
        tasks.push(tokio::spawn(async move {
            for j in (i * per)..((i + 1) * per).min(total) {
                let (code, body) = c
                    .request(
                        http::Method::POST,
                        &format!("/api/v1/namespaces/{ns}/pods"),
                        Some(pod(&format!("pod-{j:05}"), &ns)),
                    )
                    .await?;
                if code != 201 {
                    bail!(
                        "pod create failed ({code}): {}",
                        String::from_utf8_lossy(&body)
                    );
                }
            }
            anyhow::Ok(())
        }));
    }
    for t in tasks {
        t.await??;
    }
    let mut list_times = Vec::new();
    for _ in 0..3 {
        let t = Instant::now();
        let (code, body) = admin
            .request(
                http::Method::GET,
                &format!("/api/v1/namespaces/{ns}/pods"),
                None,
            )
            .await?;
        list_times.push(t.elapsed().as_secs_f64() * 1000.0);
        if code != 200 {
            bail!("list failed ({code})");
        }
        let v: Value = serde_json::from_slice(&body)?;
        let n = v["items"].as_array().map_or(0, Vec::len);
        if n != total {
            bail!("list returned {n} pods, expected {total}");
        }
    }
    list_times.sort_by(f64::total_cmp);
    let list_ms = list_times[list_times.len() / 2];
    let rss_after = pid.and_then(rss_mb);

    let fmt_rss = |r: Option<f64>| r.map_or_else(|| "n/a".to_string(), |v| format!("{v:.1}"));
    println!("{:<28}{:>12}", "metric", "value");
    println!("{:<28}{:>12}", "clients", args.clients);
    println!("{:<28}{:>12.0}", "creates/s", creates_per_s);
    println!("{:<28}{:>12.2}", "create p50 ms", create.p50_ms());
    println!("{:<28}{:>12.2}", "create p99 ms", create.p99_ms());
    println!("{:<28}{:>12.0}", "gets/s", gets_per_s);
    println!("{:<28}{:>12.2}", "get p50 ms", get.p50_ms());
    println!("{:<28}{:>12.2}", "get p99 ms", get.p99_ms());
    println!("{:<28}{:>12.0}", "updates/s", updates_per_s);
    println!("{:<28}{:>12.2}", "update p99 ms", update.p99_ms());
    println!("{:<28}{:>12.1}", format!("list {total} pods ms"), list_ms);
    println!("{:<28}{:>12.2}", "watch delivery p50 ms", watch.p50_ms());
    println!("{:<28}{:>12.2}", "watch delivery p99 ms", watch.p99_ms());
    println!("{:<28}{:>12}", "server RSS idle MB", fmt_rss(rss_idle));
    println!("{:<28}{:>12}", "server RSS after MB", fmt_rss(rss_after));
    println!(
        "api-bench clients={} creates_per_s={:.0} create_p99_ms={:.2} gets_per_s={:.0} get_p99_ms={:.2} list10k_ms={:.1} rss_mb={}",
        args.clients,
        creates_per_s,
        create.p99_ms(),
        gets_per_s,
        get.p99_ms(),
        list_ms,
        fmt_rss(rss_idle)
    );
    drop(spawned);
    Ok(())
}
