//! Built-in admission plugins through the real kubectl: LimitRanger defaults visible in the
//! created pod and its min/max refusal, DefaultTolerationSeconds, NamespaceLifecycle (system
//! namespaces cannot be deleted, terminating namespaces take no new objects), ResourceQuota,
//! ServiceAccount (default account, token volume, pull secrets, with the per-namespace
//! account and root CA bundle the server keeps), and `--disable-admission-plugins` / unknown
//! plugin names, Priority (system classes, global default), AlwaysPullImages, and
//! NodeRestriction (a kubelet, impersonated, confined to its node and pods).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use serde_json::{Value, json};
use testkit::RkubeServer;

fn pod(name: &str, resources: Value) -> String {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "dev"},
        "spec": {"containers": [{"name": "web", "image": "registry.local/web:1", "resources": resources}]},
    })
    .to_string()
}

const LIMITS: &str = r#"{"apiVersion":"v1","kind":"LimitRange","metadata":{"name":"limits","namespace":"dev"},
"spec":{"limits":[{"type":"Container","default":{"cpu":"500m","memory":"128Mi"},"defaultRequest":{"cpu":"100m"},"min":{"cpu":"50m"},"max":{"cpu":"1"}},
{"type":"PersistentVolumeClaim","max":{"storage":"10Gi"}}]}}"#;

#[test]
fn built_in_plugins() {
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "dev"]);
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], LIMITS);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // LimitRanger defaults and its annotation.
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &pod("p1", json!({})));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "p1", "-n", "dev", "-o", "json"])).unwrap();
    assert_eq!(
        p["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m", "memory": "128Mi"}})
    );
    assert_eq!(
        p["metadata"]["annotations"]["kubernetes.io/limit-ranger"],
        "LimitRanger plugin set: cpu, memory request for container web; cpu, memory limit for container web"
    );
    // A claim over the PersistentVolumeClaim maximum.
    let claim = json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "big", "namespace": "dev"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "20Gi"}}}});
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &claim.to_string());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("persistentvolumeclaims \"big\" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // DefaultTolerationSeconds.
    let tolerations = p["spec"]["tolerations"].as_array().unwrap();
    for key in [
        "node.kubernetes.io/not-ready",
        "node.kubernetes.io/unreachable",
    ] {
        assert!(
            tolerations.iter().any(|t| t["key"] == key
                && t["tolerationSeconds"] == 300
                && t["effect"] == "NoExecute"),
            "{tolerations:?}"
        );
    }
    // Below min / above max: refused with upstream's message.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-"],
        &pod(
            "p2",
            json!({"requests": {"cpu": "10m"}, "limits": {"cpu": "2"}}),
        ),
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (Forbidden): error when creating \"STDIN\": pods \"p2\" is forbidden: [minimum cpu usage per Container is 50m, but request is 10m, maximum cpu usage per Container is 1, but limit is 2]"),
        "{err}"
    );

    // NamespaceLifecycle: system namespaces stay.
    let out = server.kubectl_v(Some("1.33"), &["delete", "namespace", "kube-system"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("namespaces \"kube-system\" is forbidden: this namespace may not be deleted"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A namespace kept Terminating by a finalizer takes no new objects.
    let out = server.kubectl_stdin(
        Some("1.33"),
        &["create", "-f", "-"],
        r#"{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"going","finalizers":["example.com/hold"]}}"#,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let _ = server.kubectl_v(
        Some("1.33"),
        &["delete", "namespace", "going", "--wait=false"],
    );
    let out = server.kubectl_v(Some("1.33"), &["create", "configmap", "new", "-n", "going"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("because it is being terminated"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn plugins_can_be_disabled_and_unknown_names_fail() {
    let server = RkubeServer::start_with(&[
        "--disable-admission-plugins=LimitRanger,DefaultTolerationSeconds",
    ]);
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "dev"]);
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], LIMITS);
    assert!(out.status.success());
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &pod("p1", json!({})));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "p1", "-n", "dev", "-o", "json"])).unwrap();
    assert!(
        p["spec"]["containers"][0]["resources"]
            .as_object()
            .is_none_or(|r| r.is_empty()),
        "{p}"
    );
    assert!(p["spec"]["tolerations"].is_null(), "{p}");

    let out = std::process::Command::new(testkit::rkube_binary())
        .args(["server", "--enable-admission-plugins=Nope", "--data-dir"])
        .arg(server.dir.path().join("other"))
        .args(["--https-port", "1", "--disable-agent"])
        .args([
            "--controller-manager-secure-port",
            "0",
            "--scheduler-secure-port",
            "0",
        ])
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("enable-admission-plugins plugin \"Nope\" is unknown"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn resource_quota_is_exact_under_concurrent_creates() {
    let server = std::sync::Arc::new(RkubeServer::start());
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "q"]);
    // The namespace's root CA bundle is one of its config maps, as upstream: with it in
    // place, a hard limit of 6 leaves room for exactly five more.
    server.wait_for_object(&["get", "configmap", "kube-root-ca.crt", "-n", "q"]);
    k(&[
        "create",
        "quota",
        "objects",
        "-n",
        "q",
        "--hard=configmaps=6,pods=1",
    ]);
    let handles: Vec<_> = (0..10)
        .map(|i| {
            let server = std::sync::Arc::clone(&server);
            std::thread::spawn(move || {
                let name = format!("cm-{i}");
                server.kubectl_v(Some("1.33"), &["create", "configmap", &name, "-n", "q"])
            })
        })
        .collect();
    let outs: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let created = outs.iter().filter(|o| o.status.success()).count();
    assert_eq!(created, 5, "exactly the quota's hard limit is created");
    for o in outs.iter().filter(|o| !o.status.success()) {
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            err.contains("is forbidden: exceeded quota: objects, requested: configmaps=1, used: configmaps=6, limited: configmaps=6"),
            "{err}"
        );
    }
    let used = |res: &str| {
        k(&[
            "get",
            "quota",
            "objects",
            "-n",
            "q",
            "-o",
            &format!("jsonpath={{.status.used.{res}}}"),
        ])
    };
    assert_eq!(used("configmaps"), "6");
    let names = k(&["get", "configmaps", "-n", "q", "-o", "name"]);
    assert_eq!(names.lines().count(), 6, "{names}");
    // A delete gives the usage back.
    let first = names
        .lines()
        .find(|l| l.contains("/cm-"))
        .unwrap()
        .to_string();
    k(&["delete", &first, "-n", "q"]);
    assert_eq!(used("configmaps"), "5");
    // A create that admission charged but the store refused (the name is taken) gives
    // its usage back once the quota is recounted.
    let taken = names
        .lines()
        .nth(1)
        .unwrap()
        .trim_start_matches("configmap/")
        .to_string();
    let out = server.kubectl_v(Some("1.33"), &["create", "configmap", &taken, "-n", "q"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("already exists"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // (Usage is lowered once the quota has been quiet for 20 s.)
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while used("configmaps") != "5" {
        assert!(
            std::time::Instant::now() < deadline,
            "the quota was never recounted"
        );
        std::thread::sleep(std::time::Duration::from_millis(500));
    }
    // Pods: upstream's message through kubectl run.
    k(&["run", "one", "-n", "q", "--image=registry.local/web:1"]);
    let out = server.kubectl_v(
        Some("1.33"),
        &["run", "two", "-n", "q", "--image=registry.local/web:1"],
    );
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("Error from server (Forbidden): pods \"two\" is forbidden: exceeded quota: objects, requested: pods=1, used: pods=1, limited: pods=1"),
        "{err}"
    );

    // Scopes: a BestEffort quota counts only pods without requests or limits; services.
    k(&["create", "namespace", "scoped"]);
    k(&[
        "create",
        "quota",
        "best-effort",
        "-n",
        "scoped",
        "--hard=pods=1",
        "--scopes=BestEffort",
    ]);
    k(&[
        "create",
        "quota",
        "lb",
        "-n",
        "scoped",
        "--hard=services.loadbalancers=0",
    ]);
    // A new quota shows its usage without waiting for a charge.
    testkit::eventually("the new quota's status", || {
        k(&[
            "get",
            "quota",
            "lb",
            "-n",
            "scoped",
            "-o",
            "jsonpath={.status.used.services\\.loadbalancers}",
        ]) == "0"
    });
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "scoped"]);
    k(&["run", "be1", "-n", "scoped", "--image=registry.local/web:1"]);
    let out = server.kubectl_v(
        Some("1.33"),
        &["run", "be2", "-n", "scoped", "--image=registry.local/web:1"],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "exceeded quota: best-effort, requested: pods=1, used: pods=1, limited: pods=1"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let burstable = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "burst", "namespace": "scoped"},
        "spec": {"containers": [{"name": "c", "image": "registry.local/web:1", "resources": {"requests": {"cpu": "100m"}}}]}});
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &burstable.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    k(&[
        "create",
        "service",
        "clusterip",
        "inside",
        "-n",
        "scoped",
        "--tcp=80",
    ]);
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "create",
            "service",
            "loadbalancer",
            "outside",
            "-n",
            "scoped",
            "--tcp=80",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("exceeded quota: lb, requested: services.loadbalancers=1, used: services.loadbalancers=0, limited: services.loadbalancers=0"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn service_account_admission() {
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    k(&["create", "namespace", "sa"]);
    // Every namespace gets its default account and the root CA bundle (the server's CA).
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "sa"]);
    server.wait_for_object(&["get", "configmap", "kube-root-ca.crt", "-n", "sa"]);
    let bundle = k(&[
        "get",
        "configmap",
        "kube-root-ca.crt",
        "-n",
        "sa",
        "-o",
        "jsonpath={.data.ca\\.crt}",
    ]);
    let ca = std::fs::read_to_string(server.dir.path().join("data/tls/server-ca.crt")).unwrap();
    assert_eq!(bundle.trim(), ca.trim());

    // A pod without an account runs as `default`, with the projected token volume mounted
    // read-only in every container.
    k(&["run", "web", "-n", "sa", "--image=registry.local/web:1"]);
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "web", "-n", "sa", "-o", "json"])).unwrap();
    assert_eq!(p["spec"]["serviceAccountName"], "default");
    let volume = &p["spec"]["volumes"][0];
    let vname = volume["name"].as_str().unwrap();
    assert!(vname.starts_with("kube-api-access-"), "{volume}");
    assert_eq!(
        volume["projected"]["sources"][0]["serviceAccountToken"],
        json!({"expirationSeconds": 3607, "path": "token"})
    );
    assert_eq!(
        volume["projected"]["sources"][1]["configMap"]["name"],
        "kube-root-ca.crt"
    );
    assert_eq!(volume["projected"]["defaultMode"], 420);
    assert_eq!(
        p["spec"]["containers"][0]["volumeMounts"],
        json!([{"name": vname, "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}])
    );

    // An account's pull secrets are inherited; its automount choice is honoured.
    let robot = json!({
        "apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": "robot", "namespace": "sa"},
        "automountServiceAccountToken": false,
        "imagePullSecrets": [{"name": "regcred"}],
    });
    let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &robot.to_string());
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    k(&[
        "run",
        "bot",
        "-n",
        "sa",
        "--image=registry.local/web:1",
        "--overrides={\"spec\":{\"serviceAccountName\":\"robot\"}}",
    ]);
    let p: Value =
        serde_json::from_str(&k(&["get", "pod", "bot", "-n", "sa", "-o", "json"])).unwrap();
    assert_eq!(p["spec"]["imagePullSecrets"], json!([{"name": "regcred"}]));
    assert!(p["spec"]["volumes"].is_null(), "{}", p["spec"]);

    // A missing account is refused with upstream's message.
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "run",
            "ghost",
            "-n",
            "sa",
            "--image=registry.local/web:1",
            "--overrides={\"spec\":{\"serviceAccountName\":\"nope\"}}",
        ],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "pods \"ghost\" is forbidden: error looking up service account sa/nope: serviceaccount \"nope\" not found"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // A deleted default account comes back.
    k(&["delete", "serviceaccount", "default", "-n", "sa"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "sa"]);
}

#[test]
fn priority_and_always_pull_images() {
    let server = RkubeServer::start_with(&["--enable-admission-plugins=AlwaysPullImages"]);
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    // The system classes exist from the start and cannot be deleted.
    let classes = k(&["get", "priorityclasses", "-o", "name"]);
    assert!(
        classes.contains("priorityclass.scheduling.k8s.io/system-node-critical")
            && classes.contains("priorityclass.scheduling.k8s.io/system-cluster-critical"),
        "{classes}"
    );
    let out = server.kubectl_v(
        Some("1.33"),
        &["delete", "priorityclass", "system-node-critical"],
    );
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "priorityclasses.scheduling.k8s.io \"system-node-critical\" is forbidden: this is a system priority class and cannot be deleted"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    k(&["create", "priorityclass", "high", "--value=1000"]);
    k(&[
        "create",
        "priorityclass",
        "fallback",
        "--value=5",
        "--global-default",
    ]);
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "create",
            "priorityclass",
            "other",
            "--value=6",
            "--global-default",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "PriorityClass fallback is already marked as default. Only one default can exist"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let spec = |name: &str| -> Value {
        let p: Value = serde_json::from_str(&k(&["get", "pod", name, "-o", "json"])).unwrap();
        p["spec"].clone()
    };
    k(&[
        "run",
        "vip",
        "--image=registry.local/web:1",
        "--image-pull-policy=IfNotPresent",
        "--overrides={\"spec\":{\"priorityClassName\":\"high\"}}",
    ]);
    let vip = spec("vip");
    assert_eq!(vip["priority"], 1000);
    assert_eq!(vip["preemptionPolicy"], "PreemptLowerPriority");
    // AlwaysPullImages overrides the requested policy.
    assert_eq!(vip["containers"][0]["imagePullPolicy"], "Always");
    k(&["run", "plain", "--image=registry.local/web:1"]);
    let plain = spec("plain");
    assert_eq!(
        (
            plain["priorityClassName"].clone(),
            plain["priority"].clone()
        ),
        (json!("fallback"), json!(5))
    );
    let out = server.kubectl_v(
        Some("1.33"),
        &[
            "run",
            "nope",
            "--image=registry.local/web:1",
            "--overrides={\"spec\":{\"priorityClassName\":\"missing\"}}",
        ],
    );
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("pods \"nope\" is forbidden: no PriorityClass with name missing was found"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn node_restriction() {
    let server = RkubeServer::start();
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    for n in ["n1", "n2"] {
        let node = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}});
        let out = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &node.to_string());
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    // TaintNodesByCondition: new nodes start not ready for scheduling.
    let taints = k(&["get", "node", "n1", "-o", "jsonpath={.spec.taints}"]);
    assert_eq!(
        serde_json::from_str::<Value>(&taints).unwrap(),
        json!([{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}])
    );
    for (name, node) in [("on-n1", "n1"), ("on-n2", "n2")] {
        k(&[
            "run",
            name,
            "--image=registry.local/web:1",
            &format!("--overrides={{\"spec\":{{\"nodeName\":\"{node}\"}}}}"),
        ]);
    }
    // The kubelet of n1, by impersonation (what its own certificate would say).
    let as_n1 = |args: &[&str]| {
        let mut all = vec!["--as=system:node:n1", "--as-group=system:nodes"];
        all.extend_from_slice(args);
        let out = server.kubectl_v(Some("1.33"), &all);
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let refused = |args: &[&str], why: &str| {
        let (ok, err) = as_n1(args);
        assert!(!ok && err.contains(why), "{args:?}: {err}");
    };
    // Its own node: kubelet labels yes; taints, restricted labels and other nodes no.
    let (ok, err) = as_n1(&["label", "node", "n1", "topology.kubernetes.io/zone=z1"]);
    assert!(ok, "{err}");
    // The Node authorizer already refuses reading another node (so no `kubectl label`,
    // which reads first); a blind PUT reaches admission.
    let other = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n2", "labels": {"topology.kubernetes.io/zone": "z1"}}});
    let out = server.kubectl_stdin(
        Some("1.33"),
        &[
            "--as=system:node:n1",
            "--as-group=system:nodes",
            "replace",
            "--raw",
            "/api/v1/nodes/n2",
            "-f",
            "-",
        ],
        &other.to_string(),
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("node \"n1\" is not allowed to modify node \"n2\""),
        "{err}"
    );
    refused(
        &["taint", "node", "n1", "k=v:NoSchedule"],
        "node \"n1\" is not allowed to modify taints",
    );
    refused(
        &[
            "label",
            "node",
            "n1",
            "node-restriction.kubernetes.io/pool=gold",
        ],
        "is not allowed to modify labels: node-restriction.kubernetes.io/pool",
    );
    // Pods: only mirror pods, only deletes of its own.
    refused(
        &[
            "run",
            "sneaky",
            "--image=registry.local/web:1",
            "--overrides={\"spec\":{\"nodeName\":\"n1\"}}",
        ],
        "node \"n1\" can only create mirror pods",
    );
    refused(
        &["delete", "pod", "on-n2"],
        "pods \"on-n2\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself",
    );
    let (ok, err) = as_n1(&["delete", "pod", "on-n1", "--wait=false"]);
    assert!(ok, "{err}");
}

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn pod_security_levels_from_namespace_labels() {
    let files = tempfile::tempdir().unwrap();
    let policy = files.path().join("audit.yaml");
    std::fs::write(
        &policy,
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources:\n  - group: \"\"\n    resources: [\"pods\"]\n",
    )
    .unwrap();
    let log = files.path().join("audit.log");
    let server = RkubeServer::start_with(&[
        "--audit-policy-file",
        policy.to_str().unwrap(),
        "--audit-log-path",
        log.to_str().unwrap(),
    ]);
    let k = |args: &[&str]| server.kubectl_ok(Some("1.33"), args);
    let run = |args: &[&str]| server.kubectl_v(Some("1.33"), args);
    k(&["create", "namespace", "secure"]);
    k(&["create", "namespace", "lenient"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "secure"]);
    server.wait_for_object(&["get", "serviceaccount", "default", "-n", "lenient"]);
    k(&["run", "old", "--image=registry.local/web:1", "-n", "secure"]);

    // Raising enforce warns about the pod already there (it stays).
    let o = run(&[
        "label",
        "namespace",
        "secure",
        "pod-security.kubernetes.io/enforce=restricted",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Warning: existing pods in namespace \"secure\" violate the new PodSecurity enforce level \"restricted:latest\""),
        "{}",
        stderr(&o)
    );
    assert!(
        stderr(&o).contains("Warning: old: allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile"),
        "{}",
        stderr(&o)
    );

    // Enforce: refused with upstream's message.
    let o = run(&["run", "web", "--image=registry.local/web:1", "-n", "secure"]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Error from server (Forbidden): pods \"web\" is forbidden: violates PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"web\" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container \"web\" must set securityContext.capabilities.drop=[\"ALL\"]), runAsNonRoot != true (pod or container \"web\" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container \"web\" must set securityContext.seccompProfile.type to \"RuntimeDefault\" or \"Localhost\")"),
        "{}",
        stderr(&o)
    );
    // A pod that meets restricted is created.
    let good = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good", "namespace": "secure"}, "spec": {
        "securityContext": {"runAsNonRoot": true, "runAsUser": 1000, "seccompProfile": {"type": "RuntimeDefault"}},
        "containers": [{"name": "c", "image": "registry.local/web:1", "securityContext": {
            "allowPrivilegeEscalation": false, "capabilities": {"drop": ["ALL"]}}}]}});
    let o = server.kubectl_stdin(Some("1.33"), &["create", "-f", "-"], &good.to_string());
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(!stderr(&o).contains("Warning"), "{}", stderr(&o));
    // Workloads are only warned about.
    let o = run(&[
        "create",
        "deployment",
        "d",
        "--image=registry.local/web:1",
        "-n",
        "secure",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Warning: would violate PodSecurity \"restricted:latest\": allowPrivilegeEscalation != false (container \"web\""),
        "{}",
        stderr(&o)
    );

    // Warn only: created with a warning.
    k(&[
        "label",
        "namespace",
        "lenient",
        "pod-security.kubernetes.io/warn=baseline",
    ]);
    let o = run(&[
        "run",
        "priv",
        "--image=registry.local/web:1",
        "-n",
        "lenient",
        "--privileged",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("Warning: would violate PodSecurity \"baseline:latest\": privileged (container \"priv\" must not set securityContext.privileged=true)"),
        "{}",
        stderr(&o)
    );

    // Bad labels are refused.
    let o = run(&[
        "label",
        "namespace",
        "lenient",
        "pod-security.kubernetes.io/enforce=strict",
    ]);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("Namespace \"lenient\" is invalid: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: \"strict\": must be one of privileged, baseline, restricted"),
        "{}",
        stderr(&o)
    );

    // The audit log carries the policy and the refusal's violations.
    testkit::eventually("the PodSecurity audit annotations", || {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        text.lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .any(|e| {
                e["objectRef"]["resource"] == "pods"
                    && e["objectRef"]["namespace"] == "secure"
                    && e["responseStatus"]["code"] == 403
                    && e["stage"] == "ResponseComplete"
                    && e["annotations"]["pod-security.kubernetes.io/enforce-policy"]
                        == "restricted:latest"
            })
    });
}

#[test]
fn validating_admission_policies_with_cel() {
    let server = RkubeServer::start();
    let apply =
        |doc: Value| server.kubectl_stdin(Some("1.33"), &["apply", "-f", "-"], &doc.to_string());
    let ok = |o: std::process::Output| assert!(o.status.success(), "{}", stderr(&o));
    ok(apply(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "max-replicas"},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "object.spec.replicas <= int(params.data.maxReplicas)",
                "messageExpression": "'replicas must be at most ' + params.data.maxReplicas"}],
        },
    })));
    ok(apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "limits", "namespace": "default"}, "data": {"maxReplicas": "3"}})));
    ok(apply(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "max-replicas-binding"},
        "spec": {"policyName": "max-replicas", "validationActions": ["Deny"],
            "paramRef": {"name": "limits", "namespace": "default", "parameterNotFoundAction": "Deny"}},
    })));
    // The policies are read from the watch cache: the first refusal may take a moment.
    let mut refusal = String::new();
    testkit::eventually("the policy refuses 5 replicas", || {
        let o = server.kubectl_v(
            Some("1.33"),
            &[
                "create",
                "deployment",
                "big",
                "--image=registry.local/web:1",
                "--replicas=5",
            ],
        );
        refusal = stderr(&o);
        !o.status.success()
    });
    assert!(
        refusal.contains("deployments.apps \"big\" is forbidden: ValidatingAdmissionPolicy 'max-replicas' with binding 'max-replicas-binding' denied request: replicas must be at most 3"),
        "{refusal}"
    );
    ok(server.kubectl_v(
        Some("1.33"),
        &[
            "create",
            "deployment",
            "small",
            "--image=registry.local/web:1",
            "--replicas=2",
        ],
    ));
    // An update past the limit is refused too (the scale subresource is another resource
    // for the rules, as upstream).
    let o = server.kubectl_v(
        Some("1.33"),
        &[
            "patch",
            "deployment",
            "small",
            "-p",
            r#"{"spec":{"replicas":4}}"#,
        ],
    );
    assert!(
        !o.status.success() && stderr(&o).contains("replicas must be at most 3"),
        "{}",
        stderr(&o)
    );

    // A Warn binding: created, with kubectl's warning.
    ok(apply(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "team-label"},
        "spec": {
            "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["deployments"]}]},
            "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels",
                "message": "deployments need a team label"}],
        },
    })));
    ok(apply(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "team-label-warn"},
        "spec": {"policyName": "team-label", "validationActions": ["Warn"]},
    })));
    let mut warned = String::new();
    testkit::eventually("the warn binding warns", || {
        let name = format!("w{}", warned.len() % 1000);
        let o = server.kubectl_v(
            Some("1.33"),
            &[
                "create",
                "deployment",
                &name,
                "--image=registry.local/web:1",
            ],
        );
        assert!(o.status.success(), "{}", stderr(&o));
        warned = stderr(&o);
        warned.contains("Warning:")
    });
    assert!(
        warned.contains("Warning: Validation failed for ValidatingAdmissionPolicy 'team-label' with binding 'team-label-warn': deployments need a team label"),
        "{warned}"
    );

    // Tables and validation.
    let table = server.kubectl_ok(Some("1.33"), &["get", "validatingadmissionpolicies"]);
    assert!(
        table.contains("VALIDATIONS") && table.contains("PARAMKIND"),
        "{table}"
    );
    assert!(table.contains("v1/ConfigMap"), "{table}");
    let table = server.kubectl_ok(Some("1.33"), &["get", "validatingadmissionpolicybindings"]);
    assert!(
        table.contains("POLICYNAME") && table.contains("default/limits"),
        "{table}"
    );
    let o = apply(json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "broken"},
        "spec": {"matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                "operations": ["CREATE"], "resources": ["pods"]}]},
            "validations": [{"expression": "object.spec.containers.all(c, "}]},
    }));
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("spec.validations[0].expression: Invalid value: \"object.spec.containers.all(c, \": compilation failed"),
        "{}",
        stderr(&o)
    );
}
