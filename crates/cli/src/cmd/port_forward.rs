//! `kubectl port-forward POD|TYPE/NAME [LOCAL:]REMOTE… [--address …]`: one SPDY
//! connection tunnelled in a WebSocket to `pods/<name>/portforward`
//! ([`crate::stream::PortForwarder`]), local listeners, and per accepted connection an
//! error and a data stream, until interrupted or the connection to the pod is lost.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::time::Duration;

use futures::StreamExt;
use futures::stream::FuturesUnordered;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::pods;
use crate::stream::{PfEvent, PortForwarder};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// TYPE/NAME (or POD) and the ports, `[LOCAL:]REMOTE`.
    #[arg(num_args = 0..)]
    pub args: Vec<String>,
    /// Addresses to listen on (comma separated). Only accepts IP addresses or localhost.
    #[arg(long, value_delimiter = ',', default_value = "localhost")]
    pub address: Vec<String>,
    /// The length of time to wait until at least one pod is running.
    #[arg(long, default_value = "1m0s")]
    pub pod_running_timeout: String,
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::usage("kubectl port-forward", msg)
}

/// One forwarded port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Forward {
    /// 0: any free port.
    pub local: u16,
    pub remote: u16,
}

/// client-go's `parsePorts` (`8080:80`, `80`, `:80`).
pub fn parse_ports(specs: &[String]) -> std::result::Result<Vec<Forward>, String> {
    let mut out = Vec::new();
    for spec in specs {
        let parts: Vec<&str> = spec.split(':').collect();
        let (local, remote) = match parts.as_slice() {
            [p] => (*p, *p),
            [l, r] => (if l.is_empty() { "0" } else { *l }, *r),
            _ => return Err(format!("invalid port format '{spec}'")),
        };
        let local: u16 = local.parse().map_err(|_| {
            format!(
                "error parsing local port '{local}': {}",
                parse_uint_error(local)
            )
        })?;
        let remote_n: u16 = remote.parse().map_err(|_| {
            format!(
                "error parsing remote port '{remote}': {}",
                parse_uint_error(remote)
            )
        })?;
        if remote_n == 0 {
            return Err("remote port must be > 0".into());
        }
        out.push(Forward {
            local,
            remote: remote_n,
        });
    }
    Ok(out)
}

/// Go's `strconv.ParseUint(s, 10, 16)` error text.
fn parse_uint_error(s: &str) -> String {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        format!("strconv.ParseUint: parsing \"{s}\": value out of range")
    } else {
        format!("strconv.ParseUint: parsing \"{s}\": invalid syntax")
    }
}

fn container_port_by_name(pod: &Value, name: &str) -> Option<i64> {
    pod["spec"]["containers"]
        .as_array()?
        .iter()
        .flat_map(|c| c["ports"].as_array().cloned().unwrap_or_default())
        .find(|p| p["name"].as_str() == Some(name))
        .and_then(|p| p["containerPort"].as_i64())
}

/// Upstream's `convertPodNamedPortToNumber`: named remote ports become numbers.
pub fn pod_named_ports(pod: &Value, ports: &[String]) -> std::result::Result<Vec<String>, String> {
    let name = pod["metadata"]["name"].as_str().unwrap_or_default();
    ports
        .iter()
        .map(|p| {
            let (local, remote) = match p.split_once(':') {
                Some((l, r)) => (Some(l), r),
                None => (None, p.as_str()),
            };
            if remote.parse::<i64>().is_ok() {
                return Ok(p.clone());
            }
            let n = container_port_by_name(pod, remote)
                .ok_or_else(|| format!("Pod '{name}' does not have a named port '{remote}'"))?;
            Ok(match local {
                Some(l) => format!("{l}:{n}"),
                None => n.to_string(),
            })
        })
        .collect()
}

/// Upstream's `translateServicePortToTargetPort`: service ports become the pod's
/// target ports (the local port stays the service port unless given).
pub fn service_ports(
    svc: &Value,
    pod: &Value,
    ports: &[String],
) -> std::result::Result<Vec<String>, String> {
    let svc_name = svc["metadata"]["name"].as_str().unwrap_or_default();
    let svc_ports = svc["spec"]["ports"].as_array().cloned().unwrap_or_default();
    ports
        .iter()
        .map(|p| {
            let (local, remote) = match p.split_once(':') {
                Some((l, r)) => (Some(l.to_string()), r),
                None => (None, p.as_str()),
            };
            let found = match remote.parse::<i64>() {
                Ok(n) => svc_ports.iter().find(|sp| sp["port"].as_i64() == Some(n)),
                Err(_) => svc_ports
                    .iter()
                    .find(|sp| sp["name"].as_str() == Some(remote)),
            };
            let Some(sp) = found else {
                return Err(match remote.parse::<i64>() {
                    Ok(n) => format!("Service {svc_name} does not have a service port {n}"),
                    Err(_) => format!("Service '{svc_name}' does not have a named port '{remote}'"),
                });
            };
            let port = sp["port"].as_i64().unwrap_or_default();
            let target = match &sp["targetPort"] {
                Value::Number(n) => n.as_i64().unwrap_or(port),
                Value::String(s) => match s.parse::<i64>() {
                    Ok(n) => n,
                    Err(_) => container_port_by_name(pod, s).ok_or_else(|| {
                        format!(
                            "Pod '{}' does not have a named port '{s}'",
                            pod["metadata"]["name"].as_str().unwrap_or_default()
                        )
                    })?,
                },
                _ => port,
            };
            let local = local.unwrap_or_else(|| port.to_string());
            Ok(if local == target.to_string() {
                local
            } else {
                format!("{local}:{target}")
            })
        })
        .collect()
}

/// The addresses to listen on: `localhost` is 127.0.0.1 and ::1.
pub fn listen_addresses(addrs: &[String]) -> std::result::Result<Vec<(IpAddr, bool)>, String> {
    let mut out = Vec::new();
    for a in addrs {
        let a = a.trim();
        if a == "localhost" {
            out.push((IpAddr::V4(Ipv4Addr::LOCALHOST), true));
            out.push((IpAddr::V6(Ipv6Addr::LOCALHOST), true));
        } else {
            let ip: IpAddr = a.parse().map_err(|_| format!("{a} is not a valid IP"))?;
            out.push((ip, false));
        }
    }
    Ok(out)
}

fn host_port(ip: IpAddr, port: u16) -> String {
    SocketAddr::new(ip, port).to_string()
}

/// A klog error line (`E1126 12:00:00.000000 …] "Unhandled Error" err="…"`), as
/// upstream's `runtime.HandleError` prints.
fn klog_error(msg: &str) -> String {
    let now = jiff::Zoned::now();
    format!(
        "E{} {:>7} portforward.go:424] \"Unhandled Error\" err={:?}",
        now.strftime("%m%d %H:%M:%S%.6f"),
        std::process::id(),
        msg
    )
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if a.args.len() < 2 {
        return Err(usage(
            "TYPE/NAME and list of ports are required for port-forward",
        ));
    }
    let timeout = pods::parse_duration(&a.pod_running_timeout).map_err(usage)?;
    let ns = ctx.namespace().await?;
    let arg = &a.args[0];
    let (m, name) = pods::resolve_arg(ctx, arg).await?;
    let obj = pods::get_object(ctx, &ns, &m, &name).await?;
    let is_pod = m.resource == "pods" && m.group.is_empty();
    let pod = if is_pod {
        obj.clone()
    } else {
        pods::pod_for_arg(ctx, &ns, arg, timeout, pods::most_active)
            .await?
            .0
    };
    let specs = &a.args[1..];
    let specs = if m.resource == "services" && m.group.is_empty() {
        service_ports(&obj, &pod, specs).map_err(CliError::msg)?
    } else {
        pod_named_ports(&pod, specs).map_err(CliError::msg)?
    };
    let mut forwards = parse_ports(&specs).map_err(CliError::msg)?;
    let addresses = listen_addresses(&a.address).map_err(CliError::msg)?;
    let phase = pod["status"]["phase"].as_str().unwrap_or_default();
    if phase != "Running" {
        return Err(CliError::msg(format!(
            "unable to forward port because pod is not running. Current status={phase}"
        )));
    }
    let pod_name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();

    let client = ctx.client().await?;
    let path = format!("/api/v1/namespaces/{ns}/pods/{pod_name}/portforward");
    let (forwarder, mut lost) =
        PortForwarder::connect(client, &path)
            .await
            .map_err(|e| match e {
                CliError::Api(_) => e,
                other => CliError::msg(format!(
                    "error upgrading connection: {}",
                    other.to_string().trim_start_matches("error: ")
                )),
            })?;

    // Listeners, as client-go's `listenOnPort` for each address.
    let mut listeners: Vec<(TcpListener, Forward)> = Vec::new();
    for f in forwards.iter_mut() {
        let mut errors = Vec::new();
        let mut any = false;
        for (ip, _) in &addresses {
            match TcpListener::bind(SocketAddr::new(*ip, f.local)).await {
                Ok(l) => {
                    let port = l.local_addr().map(|a| a.port()).unwrap_or(f.local);
                    if f.local == 0 {
                        f.local = port;
                    }
                    let _ = writeln!(
                        ctx.out(),
                        "Forwarding from {} -> {}",
                        host_port(*ip, port),
                        f.remote
                    );
                    listeners.push((l, *f));
                    any = true;
                }
                Err(e) => errors.push(format!(
                    "unable to create listener: Error listen tcp{} {}: {e}",
                    if ip.is_ipv4() { "4" } else { "6" },
                    host_port(*ip, f.local)
                )),
            }
        }
        if !any {
            let _ = writeln!(
                ctx.err(),
                "Unable to listen on port {}: Listeners failed to create with the following errors: [{}]",
                f.local,
                errors.join(" ")
            );
        }
    }
    if listeners.is_empty() {
        let list: Vec<String> = forwards
            .iter()
            .map(|f| format!("{{{} {}}}", f.local, f.remote))
            .collect();
        return Err(CliError::msg(format!(
            "Unable to listen on any of the requested ports: [{}]",
            list.join(" ")
        )));
    }
    let _ = ctx.out().flush();

    let mut conns = FuturesUnordered::new();
    let interrupt = tokio::signal::ctrl_c();
    tokio::pin!(interrupt);
    loop {
        let accept = futures::future::select_all(
            listeners
                .iter()
                .map(|(l, f)| Box::pin(async move { (l.accept().await, *f) })),
        );
        tokio::select! {
            ((accepted, f), _, _) = accept => {
                let Ok((conn, _)) = accepted else { continue };
                {
                    let mut out = ctx.out();
                    let _ = writeln!(out, "Handling connection for {}", f.local);
                    let _ = out.flush();
                }
                conns.push(handle(ctx, forwarder.clone(), conn, f));
            }
            Some(fatal) = conns.next(), if !conns.is_empty() => {
                if fatal {
                    return Err(CliError::msg("lost connection to pod"));
                }
            }
            _ = &mut lost => return Err(CliError::msg("lost connection to pod")),
            _ = &mut interrupt => return Ok(()),
        }
    }
}

/// Serves one local connection; true when it failed in a way that ends the command (an
/// error from the pod's side closes the whole connection, as upstream does).
async fn handle(ctx: &Ctx, forwarder: PortForwarder, conn: TcpStream, f: Forward) -> bool {
    let mut pf = match forwarder.open(f.remote).await {
        Ok(pf) => pf,
        Err(e) => {
            let _ = writeln!(
                ctx.err(),
                "{}",
                klog_error(&format!(
                    "error creating forwarding stream for port {} -> {}: {}",
                    f.local,
                    f.remote,
                    e.to_string().trim_start_matches("error: ")
                ))
            );
            return true;
        }
    };
    let (mut rd, mut wr) = conn.into_split();
    let mut events = std::mem::replace(&mut pf.events, tokio::sync::mpsc::unbounded_channel().1);
    let mut error: Option<Option<String>> = None;
    {
        let pf = &pf;
        let local_to_remote = async move {
            let mut buf = vec![0u8; 32 * 1024];
            loop {
                match rd.read(&mut buf).await {
                    Ok(0) => {
                        pf.close_write();
                        std::future::pending::<()>().await;
                    }
                    Ok(n) => pf.send(buf[..n].to_vec()),
                    Err(_) => return,
                }
            }
        };
        let remote_to_local = async {
            while let Some(ev) = events.recv().await {
                match ev {
                    PfEvent::Data(d) => {
                        if wr.write_all(&d).await.is_err() {
                            break;
                        }
                    }
                    PfEvent::Fin => break,
                    PfEvent::ErrorDone(m) => error = Some(m),
                }
            }
        };
        tokio::select! {
            _ = local_to_remote => {}
            _ = remote_to_local => {}
        }
    }
    let _ = wr.shutdown().await;
    // Always expect the error stream's end (it may carry nothing).
    if error.is_none() {
        let wait = async {
            while let Some(ev) = events.recv().await {
                if let PfEvent::ErrorDone(m) = ev {
                    return Some(m);
                }
            }
            None
        };
        error = tokio::time::timeout(Duration::from_secs(30), wait)
            .await
            .ok()
            .flatten();
    }
    pf.remove();
    if let Some(Some(m)) = error {
        let _ = writeln!(
            ctx.err(),
            "{}",
            klog_error(&format!(
                "an error occurred forwarding {} -> {}: {m}",
                f.local, f.remote
            ))
        );
        return true;
    }
    false
}

use std::io::Write;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn ports() {
        assert_eq!(
            parse_ports(&s(&["8080:80", "80", ":443"])).unwrap(),
            [
                Forward {
                    local: 8080,
                    remote: 80
                },
                Forward {
                    local: 80,
                    remote: 80
                },
                Forward {
                    local: 0,
                    remote: 443
                }
            ]
        );
        assert_eq!(
            parse_ports(&s(&["a:80"])).unwrap_err(),
            "error parsing local port 'a': strconv.ParseUint: parsing \"a\": invalid syntax"
        );
        assert_eq!(
            parse_ports(&s(&["8080:0"])).unwrap_err(),
            "remote port must be > 0"
        );
        assert_eq!(
            parse_ports(&s(&["1:2:3"])).unwrap_err(),
            "invalid port format '1:2:3'"
        );
        assert!(
            parse_ports(&s(&["70000"]))
                .unwrap_err()
                .contains("value out of range")
        );
    }

    #[test]
    fn named_and_service_ports() {
        let pod = json!({"metadata": {"name": "web"}, "spec": {"containers": [
            {"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]}});
        assert_eq!(
            pod_named_ports(&pod, &s(&["http", "9000:http", "81"])).unwrap(),
            ["8080", "9000:8080", "81"]
        );
        assert_eq!(
            pod_named_ports(&pod, &s(&["nope"])).unwrap_err(),
            "Pod 'web' does not have a named port 'nope'"
        );
        let svc = json!({"metadata": {"name": "svc"}, "spec": {"ports": [
            {"name": "web", "port": 80, "targetPort": "http"},
            {"port": 81, "targetPort": 81}]}});
        assert_eq!(
            service_ports(&svc, &pod, &s(&["80", "web", "7000:81"])).unwrap(),
            ["80:8080", "80:8080", "7000:81"]
        );
        assert_eq!(
            service_ports(&svc, &pod, &s(&["99"])).unwrap_err(),
            "Service svc does not have a service port 99"
        );
    }

    #[test]
    fn addresses() {
        let a = listen_addresses(&s(&["localhost", "0.0.0.0"])).unwrap();
        assert_eq!(a.len(), 3);
        assert_eq!(host_port(a[1].0, 80), "[::1]:80");
        assert_eq!(
            listen_addresses(&s(&["nope"])).unwrap_err(),
            "nope is not a valid IP"
        );
    }
}
