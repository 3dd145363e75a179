//! The inter-host pod network: a second node on another "host" (a network namespace
//! joined to this one by a veth pair, so its bridge, routes and iptables are its own and
//! its pods are reachable only through the VXLAN overlay) and pods talking across it,
//! without NAT, as the Kubernetes network model asks.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::SocketAddr;
use std::process::Command;

use serde_json::{Value, json};
use testkit::netns::{Forward, Host};
use testkit::node::{AgentOptions, AgentProcess, NodeCluster, http_get, in_cidr};
use testkit::wait_for;

const KUBECTL: Option<&str> = Some("1.33");

fn pod_on(name: &str, node: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": {"app": "overlay"}},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "containers": [{"name": "web", "image": "nginx:1.22"}],
        },
    })
}

fn ready_ip(c: &NodeCluster, name: &str) -> String {
    wait_for(&format!("pod {name} Ready"), 120, || {
        let p = c.server.try_get_json(&["pod", name])?;
        let ready = p["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        ready.then(|| p["status"]["podIP"].as_str().map(str::to_string))?
    })
}

fn exec(c: &NodeCluster, pod: &str, cmd: &[&str]) -> String {
    let mut args = vec!["exec", pod, "--"];
    args.extend_from_slice(cmd);
    c.server.kubectl_ok(KUBECTL, &args)
}

fn pod_cidr(c: &NodeCluster, node: &str) -> String {
    c.server.get_json(&["node", node])["spec"]["podCIDR"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn pods_on_two_hosts_reach_each_other_over_vxlan_without_nat() {
    let n = 1 + (std::process::id() % 250) as u8;
    let host = Host::create(n);
    let host_ip = host.host_ip.to_string();
    let c = NodeCluster::start_on(&host_ip, &["--tls-san", &host_ip]);
    // The API server and the registry listen on this host's loopback; the other host
    // reaches them through relays on the veth address.
    let api = Forward::start(
        SocketAddr::new(host.host_ip.into(), 0),
        SocketAddr::from(([127, 0, 0, 1], c.server.port)),
    );
    let registry_port: u16 = c
        .registry
        .host()
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let registry = Forward::start(
        SocketAddr::new(host.host_ip.into(), 0),
        SocketAddr::from(([127, 0, 0, 1], registry_port)),
    );
    let other = format!("far-{n}");
    let agent = AgentProcess::start_with(
        &c,
        &other,
        &AgentOptions {
            host: Some(&host),
            server: Some(format!("https://{}", api.listen)),
            node_ip: Some(host.ip.to_string()),
            mirror: Some(format!("http://{}", registry.listen)),
        },
    );

    let mut agent = Some(agent);
    let run = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        checks(&c, &mut agent, &other)
    }));
    if let Err(e) = run {
        eprintln!("--- server log ---\n{}", c.server.log_tail());
        if let Some(a) = &agent {
            eprintln!("--- agent log ---\n{}", a.log());
        }
        std::panic::resume_unwind(e);
    }
    drop(agent);
    drop((api, registry));
    drop(c);
    drop(host);
}

fn checks(c: &NodeCluster, agent: &mut Option<AgentProcess>, other: &str) {
    // Each node published its VTEP.
    for node in [c.node.as_str(), other] {
        let n = wait_for(&format!("{node}'s VTEP annotation"), 30, || {
            let n = c.server.try_get_json(&["node", node])?;
            n["metadata"]["annotations"]["overlay.rkube.io/vtep-mac"]
                .is_string()
                .then_some(n)
        });
        assert!(n["metadata"]["annotations"]["overlay.rkube.io/public-ip"].is_string());
    }

    let s = &c.server;
    for (name, node) in [("near", c.node.as_str()), ("far", other)] {
        let path = s.data_dir().join(format!("{name}.json"));
        std::fs::write(&path, pod_on(name, node).to_string()).unwrap();
        s.kubectl_ok(KUBECTL, &["apply", "-f", path.to_str().unwrap()]);
    }
    let near_ip = ready_ip(c, "near");
    let far_ip = ready_ip(c, "far");
    let far_cidr = pod_cidr(c, other);
    assert!(in_cidr(&near_ip, &pod_cidr(c, &c.node)), "{near_ip}");
    assert!(in_cidr(&far_ip, &far_cidr), "{far_ip} in {far_cidr}");

    // This host routes the far node's pod CIDR through the VXLAN device.
    let route = Command::new("ip")
        .args(["route", "show", &far_cidr])
        .output()
        .unwrap();
    let route = String::from_utf8_lossy(&route.stdout).into_owned();
    assert!(
        route.contains("dev rkube.vxlan") && route.contains("onlink"),
        "{route}"
    );

    // Host → far pod.
    let (status, body) = wait_for("the far pod over the overlay", 30, || {
        http_get(&far_ip, 80, "/?from-host").ok()
    });
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("nginx"), "{body}");

    // Pod → pod, both ways; the far pod sees the near pod's own address (no NAT).
    let page = exec(
        c,
        "near",
        &["wget", "-qO-", &format!("http://{far_ip}/?from-near")],
    );
    assert!(page.contains("nginx"), "{page}");
    let page = exec(
        c,
        "far",
        &["wget", "-qO-", &format!("http://{near_ip}/?from-far")],
    );
    assert!(page.contains("nginx"), "{page}");
    let far_log = s.kubectl_ok(KUBECTL, &["logs", "far"]);
    let line = far_log
        .lines()
        .find(|l| l.contains("/?from-near"))
        .unwrap_or_else(|| panic!("no access-log line for /from-near:\n{far_log}"));
    assert!(line.starts_with(&format!("{near_ip} ")), "{line}");
    let near_log = s.kubectl_ok(KUBECTL, &["logs", "near"]);
    let line = near_log
        .lines()
        .find(|l| l.contains("/?from-far"))
        .unwrap_or_else(|| panic!("no access-log line for /from-far:\n{near_log}"));
    assert!(line.starts_with(&format!("{far_ip} ")), "{line}");

    // The far node leaves: its route goes with its Node.
    s.kubectl_ok(KUBECTL, &["delete", "pod", "far", "--wait=true"]);
    drop(agent.take());
    s.kubectl_ok(KUBECTL, &["delete", "node", other]);
    wait_for("the far node's route removed", 30, || {
        let out = Command::new("ip")
            .args(["route", "show", &far_cidr])
            .output()
            .ok()?;
        out.stdout.is_empty().then_some(())
    });
}
