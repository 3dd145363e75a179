//! The Endpoints and EndpointSlice controllers seen with the real kubectl 1.33, over
//! `rkube server` and three simulated nodes (pods become Running and Ready with IPs):
//! `kubectl expose` of a Deployment gets an Endpoints object and an EndpointSlice listing
//! the ready pods with their target port, nodes and zones; both follow a scale-down; hand
//! edits are undone; a named target port resolves per pod; a Service without selector is
//! left alone; deleting the Service removes its Endpoints, and its slices go with it
//! through their owner reference.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde_json::{Value, json};
use testkit::{RkubeServer, SimNodes, wait_for};

const V: Option<&str> = Some("1.33");

/// The ready addresses of an Endpoints object and their ports (as `ip:port`).
fn ready_addresses(ep: &Value) -> Vec<(Value, Vec<i64>)> {
    let mut out = Vec::new();
    for s in ep["subsets"].as_array().into_iter().flatten() {
        let ports: Vec<i64> = s["ports"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| p["port"].as_i64())
            .collect();
        for a in s["addresses"].as_array().into_iter().flatten() {
            out.push((a.clone(), ports.clone()));
        }
    }
    out
}

fn not_ready_count(ep: &Value) -> usize {
    ep["subsets"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|s| s["notReadyAddresses"].as_array().map_or(0, Vec::len))
        .sum()
}

fn slices_of(server: &RkubeServer, svc: &str) -> Vec<Value> {
    let sel = format!("kubernetes.io/service-name={svc}");
    server
        .try_get_json(&["endpointslices", "-l", &sel])
        .and_then(|l| l["items"].as_array().cloned())
        .unwrap_or_default()
}

fn slice_endpoints(slices: &[Value]) -> Vec<Value> {
    slices
        .iter()
        .flat_map(|s| s["endpoints"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn endpoints_and_slices_follow_services_and_pods() {
    let server = RkubeServer::start();
    server.wait_for_object(&["get", "serviceaccount", "default"]);
    // The server binds 127.0.0.1: as upstream's, it advertises the host's address in the
    // `kubernetes` Endpoints (a loopback address is not a valid endpoint).
    let api = wait_for("the kubernetes endpoints", 30, || {
        server.try_get_json(&["endpoints", "kubernetes", "-n", "default"])
    });
    assert_eq!(ready_addresses(&api).len(), 1, "{api}");
    let ip: std::net::IpAddr = api["subsets"][0]["addresses"][0]["ip"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(!ip.is_loopback(), "{api}");
    assert_eq!(
        api["subsets"][0]["ports"][0]["port"],
        json!(server.port),
        "{api}"
    );
    let sim = SimNodes::start(&server, "ep", &["--count", "3"]);
    let nodes: Vec<String> = wait_for("3 Ready nodes", 30, || {
        let list = server.try_get_json(&["nodes"])?;
        let names: Vec<String> = list["items"]
            .as_array()?
            .iter()
            .filter(|n| {
                n["status"]["conditions"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .any(|c| c["type"] == "Ready" && c["status"] == "True")
                    && !n["spec"]["podCIDR"].is_null()
            })
            .filter_map(|n| n["metadata"]["name"].as_str().map(str::to_string))
            .collect();
        (names.len() == 3).then_some(names)
    });
    for (i, n) in nodes.iter().enumerate() {
        server.kubectl_ok(
            V,
            &[
                "label",
                "node",
                n,
                &format!("topology.kubernetes.io/zone=zone-{i}"),
            ],
        );
    }

    server.kubectl_ok(
        V,
        &[
            "create",
            "deployment",
            "web",
            "--image=registry.local/web:1",
            "--replicas=3",
            "--port=80",
        ],
    );
    server.kubectl_ok(
        V,
        &[
            "expose",
            "deployment",
            "web",
            "--port=8080",
            "--target-port=80",
        ],
    );

    // Endpoints: the three ready pods on port 80, with their pods and nodes.
    let ep = wait_for("3 ready addresses in endpoints/web", 40, || {
        let ep = server.try_get_json(&["endpoints", "web"])?;
        (ready_addresses(&ep).len() == 3).then_some(ep)
    });
    let pods = server.get_json(&["pods", "-l", "app=web"]);
    let pod_ips: Vec<&str> = pods["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["status"]["podIP"].as_str().unwrap())
        .collect();
    for (addr, ports) in ready_addresses(&ep) {
        assert_eq!(ports, [80], "{ep}");
        assert!(pod_ips.contains(&addr["ip"].as_str().unwrap()), "{ep}");
        assert_eq!(addr["targetRef"]["kind"], "Pod", "{ep}");
        assert!(addr["targetRef"]["uid"].is_string(), "{ep}");
        assert!(nodes.iter().any(|n| addr["nodeName"] == n.as_str()), "{ep}");
    }
    assert_eq!(ep["metadata"]["labels"]["app"], "web", "{ep}");
    // The trigger time is written when a pod or Service change triggered the write; as
    // upstream, a write without a newer trigger (two changes within one second of the
    // timestamps' resolution) drops it, so it is only checked when present.
    let trigger =
        &ep["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"];
    assert!(
        trigger.is_null()
            || trigger
                .as_str()
                .is_some_and(|t| t.parse::<jiff::Timestamp>().is_ok()),
        "{ep}"
    );

    // EndpointSlices: one slice of three ready endpoints, owned by the Service.
    let slices = wait_for("a slice with 3 ready endpoints", 30, || {
        let slices = slices_of(&server, "web");
        let eps = slice_endpoints(&slices);
        (eps.len() == 3 && eps.iter().all(|e| e["conditions"]["ready"] == true)).then_some(slices)
    });
    assert_eq!(slices.len(), 1, "{slices:?}");
    let slice = &slices[0];
    let svc = server.get_json(&["service", "web"]);
    assert!(
        slice["metadata"]["name"]
            .as_str()
            .unwrap()
            .starts_with("web-"),
        "{slice}"
    );
    assert_eq!(
        slice["metadata"]["name"].as_str().unwrap().len(),
        "web-".len() + 5
    );
    assert_eq!(slice["addressType"], "IPv4");
    assert_eq!(
        slice["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslice-controller.k8s.io"
    );
    let owner = &slice["metadata"]["ownerReferences"][0];
    assert_eq!(owner["kind"], "Service");
    assert_eq!(owner["uid"], svc["metadata"]["uid"]);
    assert_eq!(owner["controller"], true);
    assert_eq!(owner["blockOwnerDeletion"], true);
    assert_eq!(
        slice["ports"],
        json!([{"name": "", "port": 80, "protocol": "TCP"}])
    );
    for e in slice["endpoints"].as_array().unwrap() {
        let node = e["nodeName"].as_str().unwrap();
        let i = nodes.iter().position(|n| n == node).unwrap();
        assert_eq!(e["zone"], format!("zone-{i}"), "{e}");
        assert_eq!(e["targetRef"]["kind"], "Pod");
        assert_eq!(e["conditions"]["serving"], true);
        assert_eq!(e["conditions"]["terminating"], false);
    }

    // `kubectl describe service` shows the endpoints.
    let described = server.kubectl_ok(V, &["describe", "service", "web"]);
    let line = described
        .lines()
        .find(|l| l.starts_with("Endpoints:"))
        .unwrap_or_else(|| panic!("{described}"));
    assert_eq!(line.matches(":80").count(), 3, "{described}");

    // Scale to one: both shrink (terminating pods leave the Endpoints at once; the
    // slice keeps them, terminating, until they are gone).
    server.kubectl_ok(V, &["scale", "deployment", "web", "--replicas=1"]);
    wait_for("endpoints/web down to 1", 30, || {
        let ep = server.try_get_json(&["endpoints", "web"])?;
        (ready_addresses(&ep).len() == 1 && not_ready_count(&ep) == 0).then_some(())
    });
    let slices = wait_for("slices down to 1 endpoint", 30, || {
        let slices = slices_of(&server, "web");
        (slice_endpoints(&slices).len() == 1).then_some(slices)
    });
    assert_eq!(slices.len(), 1, "{slices:?}");
    let slice_name = slices[0]["metadata"]["name"].as_str().unwrap().to_string();
    assert_eq!(
        slice_name,
        slice["metadata"]["name"].as_str().unwrap(),
        "updated in place"
    );

    // Hand edits are undone: emptied Endpoints, a deleted slice.
    server.kubectl_ok(
        V,
        &[
            "patch",
            "endpoints",
            "web",
            "--type=merge",
            "-p",
            r#"{"subsets":null}"#,
        ],
    );
    wait_for("endpoints/web restored", 20, || {
        let ep = server.try_get_json(&["endpoints", "web"])?;
        (ready_addresses(&ep).len() == 1).then_some(())
    });
    server.kubectl_ok(V, &["delete", "endpointslice", &slice_name]);
    wait_for("a new slice for web", 20, || {
        let slices = slices_of(&server, "web");
        (slices.len() == 1
            && slices[0]["metadata"]["name"] != slice_name.as_str()
            && slice_endpoints(&slices).len() == 1)
            .then_some(())
    });

    // A named target port resolves on each pod; a pod without it is left out.
    let pod = |name: &str, ports: Value| {
        json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": "named"}},
            "spec": {"containers": [{"name": "c", "image": "registry.local/web:1",
                "ports": ports}]}})
    };
    server.apply_json(&pod(
        "named-a",
        json!([{"name": "http", "containerPort": 8081}]),
    ));
    server.apply_json(&pod(
        "named-b",
        json!([{"name": "http", "containerPort": 8082}]),
    ));
    server.apply_json(&pod(
        "named-c",
        json!([{"name": "other", "containerPort": 9000}]),
    ));
    server.apply_json(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "named", "namespace": "default"},
            "spec": {"selector": {"app": "named"},
                "ports": [{"name": "web", "port": 80, "targetPort": "http"}]}}));
    let ep = wait_for("endpoints/named with 2 ports", 40, || {
        let ep = server.try_get_json(&["endpoints", "named"])?;
        (ready_addresses(&ep).len() == 2).then_some(ep)
    });
    let mut ports: Vec<i64> = ready_addresses(&ep)
        .into_iter()
        .flat_map(|(_, p)| p)
        .collect();
    ports.sort_unstable();
    assert_eq!(ports, [8081, 8082], "{ep}");
    assert_eq!(ep["subsets"].as_array().unwrap().len(), 2, "{ep}");
    let slices = wait_for("slices of named", 30, || {
        let slices = slices_of(&server, "named");
        (slice_endpoints(&slices).len() == 3).then_some(slices)
    });
    // One slice per port set: 8081, 8082 and none (named-c).
    assert_eq!(slices.len(), 3, "{slices:?}");
    assert!(slices.iter().any(|s| s["ports"] == json!([])), "{slices:?}");

    // A Service without selector is left alone (its Endpoints are the user's).
    server.apply_json(&json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": "manual", "namespace": "default"},
            "spec": {"ports": [{"port": 80}]}}));
    server.apply_json(&json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "manual", "namespace": "default"},
            "subsets": [{"addresses": [{"ip": "192.0.2.10"}], "ports": [{"port": 80}]}]}));
    std::thread::sleep(Duration::from_secs(3));
    let ep = server.get_json(&["endpoints", "manual"]);
    assert_eq!(ep["subsets"][0]["addresses"][0]["ip"], "192.0.2.10", "{ep}");
    assert!(
        ep["metadata"]["annotations"]["endpoints.kubernetes.io/last-change-trigger-time"].is_null(),
        "{ep}"
    );
    assert!(slices_of(&server, "manual").iter().all(
        |s| s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"]
            != "endpointslice-controller.k8s.io"
    ));

    // Deleting the Service: its Endpoints are deleted by the controller, its slices by
    // the garbage collector (they are owned by the Service).
    server.kubectl_ok(V, &["delete", "service", "web"]);
    wait_for("endpoints/web deleted", 20, || {
        server
            .try_get_json(&["endpoints", "web"])
            .is_none()
            .then_some(())
    });
    wait_for("slices of web garbage-collected", 30, || {
        slices_of(&server, "web").is_empty().then_some(())
    });
    drop(sim);
}

/// `--advertise-address` is the address of the `kubernetes` Endpoints, as upstream's flag,
/// and one the serving certificate names.
#[test]
fn the_kubernetes_endpoints_follow_advertise_address() {
    let server = RkubeServer::start_with(&["--advertise-address", "192.0.2.10"]);
    let api = wait_for("the kubernetes endpoints", 30, || {
        server.try_get_json(&["endpoints", "kubernetes", "-n", "default"])
    });
    assert_eq!(
        api["subsets"][0]["addresses"],
        json!([{"ip": "192.0.2.10"}]),
        "{api}"
    );
    assert_eq!(
        api["subsets"][0]["ports"][0]["port"],
        json!(server.port),
        "{api}"
    );
    // The serving certificate names the advertised address (kubectl verifies the
    // certificate against the name it is told, here an address), and not another.
    let raw = |name: &str| {
        server.kubectl(&[
            &format!("--tls-server-name={name}"),
            "get",
            "--raw",
            "/healthz",
        ])
    };
    let ok = raw("192.0.2.10");
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );
    let refused = raw("192.0.2.11");
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("192.0.2.11"),
        "{err}"
    );
}
