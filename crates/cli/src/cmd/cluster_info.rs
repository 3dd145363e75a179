//! `kubectl cluster-info`: the control plane's address and the services labelled
//! `kubernetes.io/cluster-service=true` (in `kube-system`, or `-n`).

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `dump`: not supported.
    sub: Option<String>,
}

/// `utilnet.JoinSchemeNamePort`.
fn join_scheme_name_port(scheme: &str, name: &str, port: &str) -> String {
    if !scheme.is_empty() {
        format!("{scheme}:{name}:{port}")
    } else if !port.is_empty() {
        format!("{name}:{port}")
    } else {
        name.to_string()
    }
}

/// The `NAME is running at LINK` line of one service.
pub fn service_line(host: &str, svc: &Value) -> String {
    let meta = &svc["metadata"];
    let svc_name = meta["name"].as_str().unwrap_or_default();
    let ns = meta["namespace"].as_str().unwrap_or_default();
    let ingress = svc["status"]["loadBalancer"]["ingress"]
        .as_array()
        .and_then(|a| a.first());
    let ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    let link = match ingress {
        Some(ing) => {
            let ip = ing["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| ing["hostname"].as_str())
                .unwrap_or_default();
            ports
                .iter()
                .map(|p| format!("http://{ip}:{} ", p["port"].as_i64().unwrap_or(0)))
                .collect::<String>()
        }
        None => {
            let mut name = svc_name.to_string();
            if let Some(p) = ports.first() {
                let pname = p["name"].as_str().unwrap_or_default();
                let scheme = if pname == "https" || p["port"].as_i64() == Some(443) {
                    "https"
                } else {
                    ""
                };
                name = join_scheme_name_port(scheme, svc_name, pname);
            }
            format!("{host}/api/v1/namespaces/{ns}/services/{name}/proxy")
        }
    };
    let label = meta["labels"]["kubernetes.io/name"]
        .as_str()
        .filter(|s| !s.is_empty())
        .unwrap_or(svc_name);
    format!("{label} is running at {link}")
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    if let Some(sub) = &args.sub {
        if sub == "dump" {
            return Err(CliError::msg(
                "`kubectl cluster-info dump` is not supported by rkube kubectl",
            ));
        }
        return Err(CliError::msg(format!(
            "unknown command {sub:?} for \"kubectl cluster-info\""
        )));
    }
    let client = ctx.client().await?;
    let ns = ctx
        .global
        .namespace
        .clone()
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "kube-system".into());
    let host = ctx
        .global
        .server
        .clone()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| client.server.clone());
    let list = client
        .get_json(&format!(
            "/api/v1/namespaces/{ns}/services?labelSelector=kubernetes.io%2Fcluster-service%3Dtrue"
        ))
        .await?;
    let mut out = format!("Kubernetes control plane is running at {host}\n");
    for svc in list["items"].as_array().into_iter().flatten() {
        out.push_str(&service_line(&host, svc));
        out.push('\n');
    }
    out.push_str(
        "\nTo further debug and diagnose cluster problems, use 'kubectl cluster-info dump'.\n",
    );
    ctx.out().write_all(out.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_links() {
        let svc = serde_json::json!({
            "metadata": {"name": "kube-dns", "namespace": "kube-system", "labels": {"kubernetes.io/name": "CoreDNS"}},
            "spec": {"ports": [{"name": "dns", "port": 53}]}
        });
        assert_eq!(
            service_line("https://h:6443", &svc),
            "CoreDNS is running at https://h:6443/api/v1/namespaces/kube-system/services/kube-dns:dns/proxy"
        );
        let svc = serde_json::json!({
            "metadata": {"name": "m", "namespace": "kube-system"},
            "spec": {"ports": [{"name": "", "port": 443}]}
        });
        assert_eq!(
            service_line("https://h", &svc),
            "m is running at https://h/api/v1/namespaces/kube-system/services/https:m:/proxy"
        );
    }
}
