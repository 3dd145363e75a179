//! `kubectl top pod|node`, as kubectl's `pkg/cmd/top`: discovery first; without the
//! `metrics.k8s.io` group (rkube runs no metrics-server) it fails as kubectl does, with
//! `error: Metrics API not available`; with it, the usage tables.

use std::io::Write;

use serde_json::Value;

use crate::cmd::watchutil;
use crate::ctx::Ctx;
use crate::error::{CliError, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Display resource (CPU/memory) usage of pods.
    #[command(visible_aliases = ["pods", "po"])]
    Pod(PodArgs),
    /// Display resource (CPU/memory) usage of nodes.
    #[command(visible_aliases = ["nodes", "no"])]
    Node(NodeArgs),
}

#[derive(clap::Args, Debug)]
struct PodArgs {
    name: Option<String>,
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(long = "field-selector")]
    field_selector: Option<String>,
    #[arg(long = "sort-by")]
    sort_by: Option<String>,
    #[arg(long)]
    containers: bool,
    #[arg(short = 'A', long = "all-namespaces")]
    all_namespaces: bool,
    #[arg(long = "no-headers")]
    no_headers: bool,
    #[arg(long = "use-protocol-buffers", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = true, action = clap::ArgAction::Set)]
    use_protocol_buffers: bool,
    #[arg(long)]
    sum: bool,
}

#[derive(clap::Args, Debug)]
struct NodeArgs {
    name: Option<String>,
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(long = "sort-by")]
    sort_by: Option<String>,
    #[arg(long = "no-headers")]
    no_headers: bool,
    #[arg(long = "use-protocol-buffers", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = true, action = clap::ArgAction::Set)]
    use_protocol_buffers: bool,
    #[arg(long = "show-capacity")]
    show_capacity: bool,
}

/// Whether discovery's group list serves a metrics API version kubectl supports.
pub fn metrics_api_available(groups: &Value) -> bool {
    groups["groups"].as_array().is_some_and(|gs| {
        gs.iter().any(|g| {
            g["name"] == "metrics.k8s.io"
                && g["versions"]
                    .as_array()
                    .is_some_and(|vs| vs.iter().any(|v| v["version"] == "v1beta1"))
        })
    })
}

fn validate_sort(sort: &Option<String>) -> Result<()> {
    match sort.as_deref() {
        None | Some("") | Some("cpu") | Some("memory") => Ok(()),
        Some(_) => Err(CliError::msg("--sort-by accepts only cpu or memory")),
    }
}

async fn require_metrics(ctx: &Ctx) -> Result<()> {
    let client = ctx.client().await?;
    client.get_json("/api").await?;
    let groups = client.get_json("/apis").await?;
    if metrics_api_available(&groups) {
        Ok(())
    } else {
        Err(CliError::msg("Metrics API not available"))
    }
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match args.cmd {
        Sub::Pod(a) => top_pod(ctx, a).await,
        Sub::Node(a) => top_node(ctx, a).await,
    }
}

/// CPU as millicores from a quantity (`250m`, `1`, `123456n`, `1500u`).
pub fn cpu_millis(q: &str) -> i64 {
    let (num, scale) = split_quantity(q);
    (num * scale * 1000.0).ceil() as i64
}

/// Memory in bytes from a quantity (`128Mi`, `1Gi`, `1000k`, `12345`).
pub fn mem_bytes(q: &str) -> i64 {
    let (num, scale) = split_quantity(q);
    (num * scale) as i64
}

fn split_quantity(q: &str) -> (f64, f64) {
    let idx = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))
        .unwrap_or(q.len());
    let num: f64 = q[..idx].parse().unwrap_or(0.0);
    let scale = match &q[idx..] {
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "" => 1.0,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "Ki" => 1024.0,
        "Mi" => 1024.0 * 1024.0,
        "Gi" => 1024.0 * 1024.0 * 1024.0,
        "Ti" => 1024f64.powi(4),
        _ => 1.0,
    };
    (num, scale)
}

fn table(ctx: &Ctx, header: &[&str], rows: &[Vec<String>], no_headers: bool) {
    let mut all: Vec<Vec<String>> = Vec::new();
    if !no_headers {
        all.push(header.iter().map(|s| s.to_string()).collect());
    }
    all.extend(rows.iter().cloned());
    let cols = header.len();
    let widths: Vec<usize> = (0..cols)
        .map(|i| all.iter().map(|r| r[i].len()).max().unwrap_or(0))
        .collect();
    let mut out = ctx.out();
    for r in &all {
        let mut line = String::new();
        for (i, cell) in r.iter().enumerate() {
            if i + 1 == cols {
                line.push_str(cell);
            } else {
                line.push_str(&format!("{cell:<w$}", w = widths[i] + 3));
            }
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
}

async fn top_node(ctx: &Ctx, a: NodeArgs) -> Result<()> {
    validate_sort(&a.sort_by)?;
    let _ = a.use_protocol_buffers;
    require_metrics(ctx).await?;
    let client = ctx.client().await?;
    let sel = a
        .selector
        .as_deref()
        .map(|s| format!("?labelSelector={}", watchutil::encode(s)))
        .unwrap_or_default();
    let metrics: Vec<Value> = match &a.name {
        Some(n) => vec![
            client
                .get_json(&format!("/apis/metrics.k8s.io/v1beta1/nodes/{n}"))
                .await?,
        ],
        None => client
            .get_json(&format!("/apis/metrics.k8s.io/v1beta1/nodes{sel}"))
            .await?["items"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    };
    if metrics.is_empty() {
        return Err(CliError::msg("metrics not available yet"));
    }
    let nodes = client.get_json(&format!("/api/v1/nodes{sel}")).await?;
    let field = if a.show_capacity {
        "capacity"
    } else {
        "allocatable"
    };
    let mut rows: Vec<(i64, i64, Vec<String>)> = Vec::new();
    for m in &metrics {
        let name = m["metadata"]["name"].as_str().unwrap_or_default();
        let cpu = cpu_millis(m["usage"]["cpu"].as_str().unwrap_or("0"));
        let mem = mem_bytes(m["usage"]["memory"].as_str().unwrap_or("0"));
        let node = nodes["items"]
            .as_array()
            .and_then(|ns| ns.iter().find(|n| n["metadata"]["name"] == name));
        let (cpu_pct, mem_pct) = match node {
            Some(n) => {
                let ac = cpu_millis(n["status"][field]["cpu"].as_str().unwrap_or("0"));
                let am = mem_bytes(n["status"][field]["memory"].as_str().unwrap_or("0"));
                (
                    if ac > 0 {
                        format!("{}%", cpu * 100 / ac)
                    } else {
                        "<unknown>".into()
                    },
                    if am > 0 {
                        format!("{}%", mem * 100 / am)
                    } else {
                        "<unknown>".into()
                    },
                )
            }
            None => ("<unknown>".into(), "<unknown>".into()),
        };
        rows.push((
            cpu,
            mem,
            vec![
                name.to_string(),
                format!("{cpu}m"),
                cpu_pct,
                format!("{}Mi", mem / (1024 * 1024)),
                mem_pct,
            ],
        ));
    }
    match a.sort_by.as_deref() {
        Some("cpu") => rows.sort_by_key(|r| std::cmp::Reverse(r.0)),
        Some("memory") => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
        _ => {}
    }
    let rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.2).collect();
    table(
        ctx,
        &["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"],
        &rows,
        a.no_headers,
    );
    Ok(())
}

async fn top_pod(ctx: &Ctx, a: PodArgs) -> Result<()> {
    validate_sort(&a.sort_by)?;
    let _ = a.use_protocol_buffers;
    require_metrics(ctx).await?;
    let client = ctx.client().await?;
    let ns = ctx.namespace().await?;
    let mut params = Vec::new();
    if let Some(s) = &a.selector {
        params.push(format!("labelSelector={}", watchutil::encode(s)));
    }
    if let Some(s) = &a.field_selector {
        params.push(format!("fieldSelector={}", watchutil::encode(s)));
    }
    let q = if params.is_empty() {
        String::new()
    } else {
        format!("?{}", params.join("&"))
    };
    let base = if a.all_namespaces {
        "/apis/metrics.k8s.io/v1beta1/pods".to_string()
    } else {
        format!("/apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods")
    };
    let metrics: Vec<Value> = match &a.name {
        Some(n) => vec![client.get_json(&format!("{base}/{n}")).await?],
        None => client.get_json(&format!("{base}{q}")).await?["items"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
    };
    if metrics.is_empty() {
        let _ = writeln!(ctx.err(), "No resources found in {ns} namespace.");
        return Ok(());
    }
    let mut rows: Vec<(i64, i64, Vec<String>)> = Vec::new();
    let (mut total_cpu, mut total_mem) = (0, 0);
    for m in &metrics {
        let name = m["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let pns = m["metadata"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let containers = m["containers"].as_array().cloned().unwrap_or_default();
        let mut pod_cpu = 0;
        let mut pod_mem = 0;
        for c in &containers {
            let cpu = cpu_millis(c["usage"]["cpu"].as_str().unwrap_or("0"));
            let mem = mem_bytes(c["usage"]["memory"].as_str().unwrap_or("0"));
            pod_cpu += cpu;
            pod_mem += mem;
            if a.containers {
                let mut row = Vec::new();
                if a.all_namespaces {
                    row.push(pns.clone());
                }
                row.extend([
                    name.clone(),
                    c["name"].as_str().unwrap_or_default().to_string(),
                    format!("{cpu}m"),
                    format!("{}Mi", mem / (1024 * 1024)),
                ]);
                rows.push((cpu, mem, row));
            }
        }
        total_cpu += pod_cpu;
        total_mem += pod_mem;
        if !a.containers {
            let mut row = Vec::new();
            if a.all_namespaces {
                row.push(pns);
            }
            row.extend([
                name,
                format!("{pod_cpu}m"),
                format!("{}Mi", pod_mem / (1024 * 1024)),
            ]);
            rows.push((pod_cpu, pod_mem, row));
        }
    }
    match a.sort_by.as_deref() {
        Some("cpu") => rows.sort_by_key(|r| std::cmp::Reverse(r.0)),
        Some("memory") => rows.sort_by_key(|r| std::cmp::Reverse(r.1)),
        _ => {}
    }
    let mut header = Vec::new();
    if a.all_namespaces {
        header.push("NAMESPACE");
    }
    header.push(if a.containers { "POD" } else { "NAME" });
    if a.containers {
        header.push("NAME");
    }
    header.extend(["CPU(cores)", "MEMORY(bytes)"]);
    let mut rows: Vec<Vec<String>> = rows.into_iter().map(|r| r.2).collect();
    if a.sum {
        let mut blank = vec![String::new(); header.len() - 2];
        blank.extend(["________".to_string(), "________".to_string()]);
        rows.push(blank);
        let mut sum = vec![String::new(); header.len() - 2];
        sum.extend([
            format!("{total_cpu}m"),
            format!("{}Mi", total_mem / (1024 * 1024)),
        ]);
        rows.push(sum);
    }
    table(ctx, &header, &rows, a.no_headers);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn metrics_discovery() {
        assert!(!metrics_api_available(&json!({"groups":[{"name":"apps",
            "versions":[{"version":"v1"}]}]})));
        assert!(metrics_api_available(
            &json!({"groups":[{"name":"metrics.k8s.io",
            "versions":[{"version":"v1beta1"}]}]})
        ));
    }

    #[test]
    fn quantities() {
        assert_eq!(cpu_millis("250m"), 250);
        assert_eq!(cpu_millis("2"), 2000);
        assert_eq!(cpu_millis("123456789n"), 124);
        assert_eq!(mem_bytes("128Mi"), 128 * 1024 * 1024);
        assert_eq!(mem_bytes("1000k"), 1_000_000);
    }
}
