//! What a real container sees of its pod, through the real kubectl 1.33: configMap,
//! secret, downwardAPI, emptyDir (disk and memory) and hostPath volumes, environment
//! variables from values, fields, config maps and secrets, the service-account token
//! projected by the kube-api-access volume (a token the API server accepts), the pod's
//! cgroup with the limits of its spec under the QoS hierarchy, and the kubelet's
//! `/metrics` (with the pod start-up histogram) through `nodes/proxy`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::json;
use testkit::node::NodeCluster;
use testkit::wait_for;

const KUBECTL: Option<&str> = Some("1.33");

fn exec(c: &NodeCluster, pod: &str, cmd: &[&str]) -> String {
    let mut args = vec!["exec", pod, "--"];
    args.extend_from_slice(cmd);
    c.server.kubectl_ok(KUBECTL, &args)
}

#[test]
fn containers_see_their_volumes_env_token_and_cgroup() {
    let c = NodeCluster::start();
    let s = &c.server;
    let host_dir = tempfile::tempdir().unwrap();
    std::fs::write(host_dir.path().join("from-host"), "host file\n").unwrap();

    s.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "configmap",
            "settings",
            "--from-literal=color=blue",
            "--from-literal=size=10",
        ],
    );
    s.kubectl_ok(
        KUBECTL,
        &[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=password=s3cret",
        ],
    );
    s.create_json(&json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "reader", "labels": {"app": "reader", "tier": "test"}},
        "spec": {
            "terminationGracePeriodSeconds": 1,
            "containers": [{
                "name": "c", "image": "busybox:1.36", "command": ["sleep", "3600"],
                "resources": {"requests": {"cpu": "100m", "memory": "32Mi"},
                              "limits": {"cpu": "500m", "memory": "64Mi"}},
                "env": [
                    {"name": "PLAIN", "value": "hello"},
                    {"name": "MY_POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "MY_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "COLOR", "valueFrom": {"configMapKeyRef": {"name": "settings", "key": "color"}}},
                    {"name": "PASSWORD", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
                    {"name": "GREETING", "value": "$(PLAIN) from $(MY_POD)"},
                ],
                "envFrom": [{"configMapRef": {"name": "settings"}, "prefix": "CFG_"}],
                "volumeMounts": [
                    {"name": "settings", "mountPath": "/etc/settings"},
                    {"name": "creds", "mountPath": "/etc/creds"},
                    {"name": "info", "mountPath": "/etc/podinfo"},
                    {"name": "scratch", "mountPath": "/scratch"},
                    {"name": "mem", "mountPath": "/mem"},
                    {"name": "host", "mountPath": "/host", "readOnly": true},
                ],
            }],
            "volumes": [
                {"name": "settings", "configMap": {"name": "settings"}},
                {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}},
                {"name": "info", "downwardAPI": {"items": [
                    {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
                    {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
                ]}},
                {"name": "scratch", "emptyDir": {}},
                {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}},
                {"name": "host", "hostPath": {"path": host_dir.path().to_str().unwrap(), "type": "Directory"}},
            ],
        },
    }));
    wait_for("reader Running", 90, || {
        (s.get_json(&["pod", "reader"])["status"]["phase"] == "Running").then_some(())
    });
    let pod = s.get_json(&["pod", "reader"]);
    let ip = pod["status"]["podIP"].as_str().unwrap().to_string();
    let uid = pod["metadata"]["uid"].as_str().unwrap().to_string();
    assert_eq!(pod["status"]["qosClass"], "Burstable");

    // Environment.
    let env = exec(&c, "reader", &["env"]);
    for want in [
        "PLAIN=hello".to_string(),
        "MY_POD=reader".to_string(),
        format!("MY_IP={ip}"),
        "COLOR=blue".to_string(),
        "PASSWORD=s3cret".to_string(),
        "GREETING=hello from reader".to_string(),
        "CFG_size=10".to_string(),
        "KUBERNETES_SERVICE_HOST=".to_string(),
    ] {
        assert!(env.contains(&want), "{want} missing from:\n{env}");
    }

    // Volumes.
    assert_eq!(exec(&c, "reader", &["cat", "/etc/settings/color"]), "blue");
    assert_eq!(
        exec(&c, "reader", &["cat", "/etc/creds/password"]),
        "s3cret"
    );
    let mode = exec(
        &c,
        "reader",
        &["stat", "-L", "-c", "%a", "/etc/creds/password"],
    );
    assert_eq!(mode.trim(), "400");
    let labels = exec(&c, "reader", &["cat", "/etc/podinfo/labels"]);
    assert!(
        labels.contains("app=\"reader\"") && labels.contains("tier=\"test\""),
        "{labels}"
    );
    exec(
        &c,
        "reader",
        &["sh", "-c", "echo x > /scratch/f && echo y > /mem/f"],
    );
    let mounts = exec(&c, "reader", &["cat", "/proc/mounts"]);
    assert!(
        mounts
            .lines()
            .any(|l| l.contains(" /mem ") && l.starts_with("tmpfs")),
        "{mounts}"
    );
    assert_eq!(
        exec(&c, "reader", &["cat", "/host/from-host"]),
        "host file\n"
    );
    let out = s.kubectl_v(
        KUBECTL,
        &["exec", "reader", "--", "sh", "-c", "echo no > /host/x"],
    );
    assert!(!out.status.success(), "a readOnly hostPath is writable");

    // The configMap update reaches the volume (the kubelet's cache lives a minute).
    s.kubectl_ok(
        KUBECTL,
        &[
            "patch",
            "configmap",
            "settings",
            "--type=merge",
            "-p",
            r#"{"data":{"color":"green"}}"#,
        ],
    );
    wait_for("the new config in the volume", 120, || {
        (exec(&c, "reader", &["cat", "/etc/settings/color"]) == "green").then_some(())
    });

    // The projected service-account token is one the API server accepts.
    let token = exec(
        &c,
        "reader",
        &["cat", "/var/run/secrets/kubernetes.io/serviceaccount/token"],
    );
    let kubeconfig = s.user_kubeconfig("sa", &format!("    token: {}", token.trim()));
    let who = s.kubectl_with(
        &kubeconfig,
        &[
            "auth",
            "whoami",
            "-o",
            "jsonpath={.status.userInfo.username}",
        ],
    );
    assert_eq!(
        String::from_utf8_lossy(&who.stdout),
        "system:serviceaccount:default:default",
        "{}",
        String::from_utf8_lossy(&who.stderr)
    );
    let ns = exec(
        &c,
        "reader",
        &[
            "cat",
            "/var/run/secrets/kubernetes.io/serviceaccount/namespace",
        ],
    );
    assert_eq!(ns, "default");

    // The pod's cgroup under kubepods/burstable carries its limits.
    let memory = std::path::PathBuf::from(format!(
        "/sys/fs/cgroup/memory/kubepods/burstable/pod{uid}/memory.limit_in_bytes"
    ));
    let v2 = std::path::PathBuf::from(format!(
        "/sys/fs/cgroup/kubepods/burstable/pod{uid}/memory.max"
    ));
    let limit = std::fs::read_to_string(&memory)
        .or_else(|_| std::fs::read_to_string(&v2))
        .unwrap_or_else(|e| panic!("no pod cgroup ({e})"));
    assert_eq!(limit.trim(), (64 * 1024 * 1024).to_string());

    // The kubelet's metrics through the API server.
    let metrics = s.kubectl_ok(
        KUBECTL,
        &[
            "get",
            "--raw",
            &format!("/api/v1/nodes/{}/proxy/metrics", c.node),
        ],
    );
    assert!(
        metrics.contains("kubelet_pod_start_duration_seconds"),
        "{metrics}"
    );
    // Its client's requests, as client-go counts them.
    assert!(
        metrics.contains("rest_client_requests_total{code=\"200\",host=")
            && metrics.contains("rest_client_request_duration_seconds_bucket{host="),
        "{metrics}"
    );

    // Its `sleep` as PID 1 ignores SIGTERM: a short grace period, not 30 s.
    s.kubectl_ok(
        KUBECTL,
        &["delete", "pod", "reader", "--grace-period=1", "--wait=true"],
    );
}
