//! `rkube bench kubectl`: start-up of `rkube kubectl get pods` against the real kubectl's
//! with a warm discovery cache, run alternately against the same server, reported
//! hyperfine-style (mean ± σ, range, median, p90) with the ratio.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use clap::Args;

#[derive(Args, Debug)]
pub struct KubectlArgs {
    /// Measure against a running server through this kubeconfig. Without it a fresh
    /// `rkube server --disable-agent` is started.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Timed runs of each client.
    #[arg(long, default_value_t = 30)]
    runs: usize,
    /// Untimed runs of each client first (they also warm the cache).
    #[arg(long, default_value_t = 3)]
    warmup: usize,
    /// The real kubectl (default: `kubectl.1.33` beside the `kubectl` on PATH, else
    /// `kubectl`).
    #[arg(long)]
    kubectl: Option<PathBuf>,
}

/// `kubectl.1.33` beside the `kubectl` on PATH when there is one, else `kubectl`.
fn default_kubectl() -> PathBuf {
    let on_path = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect::<Vec<_>>())
        .unwrap_or_default()
        .into_iter()
        .map(|d| d.join("kubectl"))
        .find(|p| p.exists());
    if let Some(k) = on_path {
        let real = std::fs::canonicalize(&k).unwrap_or(k.clone());
        if let Some(v133) = real.parent().map(|d| d.join("kubectl.1.33"))
            && v133.exists()
        {
            return v133;
        }
        return k;
    }
    PathBuf::from("kubectl")
}

/// Timings of one client, in milliseconds.
#[derive(Debug, Default, Clone)]
struct Sample(Vec<f64>);

impl Sample {
    fn sorted(&self) -> Vec<f64> {
        let mut v = self.0.clone();
        v.sort_by(f64::total_cmp);
        v
    }

    fn mean(&self) -> f64 {
        if self.0.is_empty() {
            return 0.0;
        }
        self.0.iter().sum::<f64>() / self.0.len() as f64
    }

    fn stddev(&self) -> f64 {
        if self.0.len() < 2 {
            return 0.0;
        }
        let m = self.mean();
        (self.0.iter().map(|x| (x - m).powi(2)).sum::<f64>() / (self.0.len() - 1) as f64).sqrt()
    }

    fn quantile(&self, q: f64) -> f64 {
        let v = self.sorted();
        if v.is_empty() {
            return 0.0;
        }
        let idx = ((v.len() - 1) as f64 * q).round() as usize;
        v[idx.min(v.len() - 1)]
    }
}

fn print_sample(n: usize, name: &str, s: &Sample) {
    let v = s.sorted();
    println!("Benchmark {n}: {name}");
    println!(
        "  Time (mean ± σ):   {:>7.1} ms ± {:>5.1} ms",
        s.mean(),
        s.stddev()
    );
    println!(
        "  Range (min … max): {:>7.1} ms … {:>5.1} ms    {} runs",
        v.first().copied().unwrap_or_default(),
        v.last().copied().unwrap_or_default(),
        v.len()
    );
    println!(
        "  Median / p90:      {:>7.1} ms / {:>5.1} ms",
        s.quantile(0.5),
        s.quantile(0.9)
    );
    println!();
}

/// One run of a client: its wall time; fails with its stderr when it fails.
fn time_run(cmd: &mut Command) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let out = cmd.output().context("cannot run the client")?;
    let took = started.elapsed();
    if !out.status.success() {
        bail!(
            "{:?} failed: {}",
            cmd.get_program(),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(took)
}

fn client(program: &Path, prefix: &[&str], kubeconfig: &Path, home: &Path) -> Command {
    let mut c = Command::new(program);
    c.args(prefix)
        .args(["get", "pods"])
        .env("KUBECONFIG", kubeconfig)
        .env("HOME", home)
        .env_remove("KUBECACHEDIR")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null());
    c
}

pub async fn run(args: KubectlArgs) -> anyhow::Result<()> {
    let spawned = match &args.kubeconfig {
        Some(_) => None,
        None => Some(super::api::spawn_server()?),
    };
    let kubeconfig = match (&args.kubeconfig, &spawned) {
        (Some(k), _) => k.clone(),
        (None, Some(s)) => s.kubeconfig.clone(),
        (None, None) => bail!("no server"),
    };
    let kubectl = args.kubectl.clone().unwrap_or_else(default_kubectl);
    let ours = std::env::current_exe()?;
    let home = tempfile::Builder::new()
        .prefix("rkube-bench-kubectl-")
        .tempdir()?;
    let ours_cmd = || client(&ours, &["kubectl"], &kubeconfig, home.path());
    let real_cmd = || client(&kubectl, &[], &kubeconfig, home.path());

    // Wait until the server answers (a spawned one writes its kubeconfig first).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if kubeconfig.exists() && ours_cmd().output().is_ok_and(|o| o.status.success()) {
            break;
        }
        if Instant::now() > deadline {
            bail!("the server did not answer `get pods` within 60 s");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for _ in 0..args.warmup {
        time_run(&mut ours_cmd())?;
        time_run(&mut real_cmd())?;
    }
    let (mut a, mut b) = (Sample::default(), Sample::default());
    for _ in 0..args.runs {
        a.0.push(time_run(&mut ours_cmd())?.as_secs_f64() * 1000.0);
        b.0.push(time_run(&mut real_cmd())?.as_secs_f64() * 1000.0);
    }
    let ours_name = "rkube kubectl get pods";
    let real_name = format!("{} get pods", kubectl.display());
    print_sample(1, ours_name, &a);
    print_sample(2, &real_name, &b);
    let ratio = if a.mean() > 0.0 {
        b.mean() / a.mean()
    } else {
        0.0
    };
    println!("Summary");
    if ratio >= 1.0 {
        println!("  {ours_name} ran {ratio:.2} times faster than {real_name}");
    } else if ratio > 0.0 {
        println!(
            "  {real_name} ran {:.2} times faster than {ours_name}",
            1.0 / ratio
        );
    }
    println!(
        "kubectl-bench runs={} ours_ms={:.2} kubectl_ms={:.2} ratio={:.2}",
        args.runs,
        a.mean(),
        b.mean(),
        ratio
    );
    Ok(())
}
