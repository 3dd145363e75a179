//! Image pull secrets on the wire: a real `docker-registry` that requires HTTP basic
//! authentication (htpasswd, bcrypt), a busybox image pushed there, and the kubelet on
//! real containerd pulling it with the credentials of the pod's `imagePullSecrets`,
//! created with the real kubectl 1.33 (`kubectl create secret docker-registry`):
//! without a secret and with a wrong password the pull fails (`ErrImagePull`, then
//! `ImagePullBackOff`, the event naming the registry's 401); with the right one the pod
//! runs, also when the secret comes from the pod's ServiceAccount (the ServiceAccount
//! admission copies the account's `imagePullSecrets` into the pod). The password shows
//! in no event and no log.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use base64::Engine as _;
use serde_json::{Value, json};
use testkit::images::demo_archive;
use testkit::node::NodeCluster;
use testkit::registry::Registry;
use testkit::wait_for;

use std::time::{Duration, Instant};

const KUBECTL: Option<&str> = Some("1.33");
const USER: &str = "puller";
/// Distinctive, so that a leak is found by a plain text search.
const PASSWORD: &str = "Zq7-pull-PASSWORD-41d9c";
const WRONG_PASSWORD: &str = "Zq7-wrong-PASSWORD-7e2a1";

fn pod(name: &str, image: &str, extra: Value) -> Value {
    let mut spec = json!({
        "containers": [{
            "name": "c", "image": image, "imagePullPolicy": "Always",
            "command": ["sh", "-c", "echo pulled-with-credentials; sleep 3600"],
        }],
        "terminationGracePeriodSeconds": 1,
    });
    for (k, v) in extra.as_object().into_iter().flatten() {
        spec[k] = v.clone();
    }
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "labels": {"test": "pull-secrets"}},
        "spec": spec})
}

fn waiting_reason(p: &Value) -> Option<String> {
    p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]
        .as_str()
        .map(str::to_string)
}

/// The messages of the events about pod `name`.
fn event_messages(c: &NodeCluster, name: &str) -> Vec<String> {
    c.server.events_about(name)
}

/// Waits until pod `name` cannot pull its image and an event says why: the registry
/// refused the request (401).
fn wait_pull_refused(c: &NodeCluster, name: &str) -> String {
    wait_for(
        &format!("{name}: ErrImagePull / ImagePullBackOff"),
        60,
        || {
            let p = c.server.get_json(&["pod", name]);
            let reason = waiting_reason(&p)?;
            (reason == "ErrImagePull" || reason == "ImagePullBackOff").then_some(())
        },
    );
    wait_for(
        &format!("{name}: a Failed event naming the 401"),
        30,
        || {
            event_messages(c, name)
                .into_iter()
                .find(|m| m.contains("Failed to pull image") && m.contains("401 Unauthorized"))
        },
    )
}

fn wait_running(c: &NodeCluster, name: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let p = c.server.get_json(&["pod", name]);
        if p["status"]["phase"] == "Running" {
            return p;
        }
        assert!(
            Instant::now() < deadline,
            "{name} not Running after 60 s: {}\nevents: {:#?}",
            p["status"],
            event_messages(c, name)
        );
        std::thread::sleep(Duration::from_millis(300));
    }
}

#[test]
fn pull_secrets_against_an_authenticating_registry() {
    let c = NodeCluster::start();
    let s = &c.server;
    let registry = Registry::start_with_auth(&[(USER, PASSWORD)]);
    registry.push(&demo_archive("busybox-1.36.tar"), "private/busybox:1.36");
    let server = registry.host();
    let image = format!("{server}/private/busybox:1.36");

    // Secrets as a user makes them, with the real kubectl.
    for (name, password) in [("regcred", PASSWORD), ("badcred", WRONG_PASSWORD)] {
        s.kubectl_ok(
            KUBECTL,
            &[
                "create",
                "secret",
                "docker-registry",
                name,
                &format!("--docker-server={server}"),
                &format!("--docker-username={USER}"),
                &format!("--docker-password={password}"),
            ],
        );
    }
    let secret = s.get_json(&["secret", "regcred"]);
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    s.create_json(&json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "pulls"}, "imagePullSecrets": [{"name": "regcred"}]}));

    s.create_json(&pod("anonymous", &image, json!({})));
    s.create_json(&pod(
        "with-secret",
        &image,
        json!({"imagePullSecrets": [{"name": "regcred"}]}),
    ));
    s.create_json(&pod(
        "wrong-password",
        &image,
        json!({"imagePullSecrets": [{"name": "badcred"}]}),
    ));
    s.create_json(&pod(
        "from-account",
        &image,
        json!({"serviceAccountName": "pulls"}),
    ));

    // The ServiceAccount admission gave the pod its account's pull secrets.
    assert_eq!(
        s.get_json(&["pod", "from-account"])["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}])
    );

    // The right credentials: the image is pulled and the container runs.
    for name in ["with-secret", "from-account"] {
        let p = wait_running(&c, name);
        let st = &p["status"]["containerStatuses"][0];
        assert_eq!(st["image"], image, "{st}");
        assert!(st["state"]["running"].is_object(), "{st}");
        let events = event_messages(&c, name);
        assert!(
            events
                .iter()
                .any(|m| m.contains("Successfully pulled image")),
            "{events:?}"
        );
        let logs = wait_for(&format!("{name} output"), 20, || {
            let out = s.kubectl_v(KUBECTL, &["logs", name]);
            let t = String::from_utf8_lossy(&out.stdout).into_owned();
            t.contains("pulled-with-credentials").then_some(t)
        });
        assert!(logs.contains("pulled-with-credentials"));
    }

    // No credentials, or wrong ones: the registry says 401, the pod backs off. (The image
    // is on the node by now, but `Always` pulls every time, through the registry.)
    for name in ["anonymous", "wrong-password"] {
        let event = wait_pull_refused(&c, name);
        assert!(event.contains(&image), "{event}");
        let p = s.get_json(&["pod", name]);
        assert_eq!(p["status"]["phase"], "Pending", "{p}");
    }
    // The wrong password did reach the registry, as the secret's user, and was refused.
    // (logrus quotes the message: the user name in it is escaped.)
    let refused = format!(r#"error authenticating user \"{USER}\""#);
    assert!(registry.log().contains(&refused), "{}", registry.log());
    wait_for("anonymous: ImagePullBackOff in kubectl get", 60, || {
        let out = s.kubectl_ok(KUBECTL, &["get", "pod", "anonymous"]);
        out.contains("ImagePullBackOff").then_some(())
    });

    // The password shows nowhere: not in events, pod statuses, the server's (and
    // kubelet's) log, nor containerd's.
    let user_pass = base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{PASSWORD}"));
    let wrong_pass =
        base64::engine::general_purpose::STANDARD.encode(format!("{USER}:{WRONG_PASSWORD}"));
    let events = s.kubectl_ok(KUBECTL, &["get", "events", "-A", "-o", "json"]);
    let pods = s.kubectl_ok(KUBECTL, &["get", "pods", "-A", "-o", "json"]);
    let server_log = std::fs::read_to_string(s.dir.path().join("server.log")).unwrap();
    let containerd_log =
        std::fs::read_to_string(s.data_dir().join("agent/containerd/containerd.log"))
            .unwrap_or_default();
    for (what, text) in [
        ("events", &events),
        ("pods", &pods),
        ("server log", &server_log),
        ("containerd log", &containerd_log),
        ("registry log", &registry.log()),
    ] {
        for secret in [PASSWORD, WRONG_PASSWORD, &user_pass, &wrong_pass] {
            assert!(!text.contains(secret), "{what} contains a password");
        }
    }
}
