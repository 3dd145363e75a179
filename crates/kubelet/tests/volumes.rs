//! The volume manager against a real `rkube server` and the real kubectl: a ConfigMap, a
//! Secret and a ServiceAccount made with kubectl, a Pod created through the API (so the
//! ServiceAccount admission injects its `kube-api-access-*` volume, no node needed), then
//! `setup` over the real client into a temp root: files, modes, a projected token the
//! server accepts (TokenReview); a ConfigMap update swapped in through `..data`; teardown.
//! As root, tmpfs volumes are really mounted (and unmounted at the end, even on failure).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::core::v1::{ConfigMap, Pod};
use kube::Client;
use kube::api::{Api, PostParams};
use kubelet::volumes::mounter::{parse_mountinfo, select_under};
use kubelet::volumes::{FakeMounter, KubeSource, Mounter, SystemMounter, Volumes};
use kubelet::{KubeletConfig, VolumeManager};
use serde_json::json;
use testkit::RkubeServer;

fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("Uid:"))
                .map(|v| v.split_whitespace().nth(1) == Some("0"))
        })
        .unwrap_or(false)
}

/// Unmounts whatever is still mounted under the test's root when the test ends.
struct UnmountGuard(PathBuf);

impl Drop for UnmountGuard {
    fn drop(&mut self) {
        let text = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
        let root = std::fs::canonicalize(&self.0).unwrap_or_else(|_| self.0.clone());
        for m in select_under(&parse_mountinfo(&text), &root) {
            let _ = std::process::Command::new("umount").arg(&m).status();
        }
    }
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

async fn client(server: &RkubeServer) -> Client {
    runtime::client_from(&server.kubeconfig).await.unwrap()
}

const POD: &str = r#"{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
  "spec": {
    "serviceAccountName": "builder",
    "nodeName": "no-such-node",
    "containers": [{"name": "c", "image": "example.invalid/app:1",
      "volumeMounts": [
        {"name": "cfg", "mountPath": "/etc/app"},
        {"name": "creds", "mountPath": "/etc/creds"},
        {"name": "info", "mountPath": "/etc/info"},
        {"name": "scratch", "mountPath": "/scratch"}
      ]}],
    "volumes": [
      {"name": "cfg", "configMap": {"name": "app-config"}},
      {"name": "creds", "secret": {"secretName": "app-secret", "defaultMode": 256}},
      {"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]}},
      {"name": "scratch", "emptyDir": {"medium": "Memory", "sizeLimit": "16Mi"}}
    ]
  }
}"#;

#[test]
fn volumes_against_a_real_server() {
    let server = RkubeServer::start();
    let v = Some("1.33");
    server.kubectl_ok(
        v,
        &[
            "create",
            "configmap",
            "app-config",
            "--from-literal=greeting=hello",
        ],
    );
    server.kubectl_ok(
        v,
        &[
            "create",
            "secret",
            "generic",
            "app-secret",
            "--from-literal=password=s3cret",
        ],
    );
    server.kubectl_ok(v, &["create", "serviceaccount", "builder"]);
    let out = server.kubectl_stdin(v, &["create", "-f", "-"], POD);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let root = tempfile::Builder::new()
        .prefix("rkube-volumes-")
        .tempdir()
        .unwrap();
    let _guard = UnmountGuard(root.path().to_path_buf());
    let real_mounts = is_root();
    if !real_mounts {
        eprintln!("not root: tmpfs mounts are faked");
    }

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = client(&server).await;
        let pod = Api::<Pod>::namespaced(client.clone(), "default")
            .get("web")
            .await
            .unwrap();
        let uid = pod.metadata.uid.clone().unwrap();
        let access = pod
            .spec
            .as_ref()
            .unwrap()
            .volumes
            .iter()
            .flatten()
            .find(|v| v.name.starts_with("kube-api-access-"))
            .expect("the ServiceAccount admission injects kube-api-access")
            .name
            .clone();

        let config = Arc::new(KubeletConfig::new(
            "no-such-node",
            root.path().join("kubelet"),
            IpAddr::from([127, 0, 0, 1]),
        ));
        let mounter: Arc<dyn Mounter> = if real_mounts {
            Arc::new(SystemMounter)
        } else {
            Arc::new(FakeMounter::new())
        };
        let volumes = Volumes::new(
            config.clone(),
            Arc::new(KubeSource::new(client.clone())),
            mounter.clone(),
        )
        .with_cache_ttl(Duration::ZERO);

        let got = volumes.setup(&pod).await.unwrap();
        let mut names: Vec<&str> = got.paths.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(
            names,
            vec!["cfg", "creds", "info", access.as_str(), "scratch"]
        );

        let cfg = &got.paths["cfg"];
        assert_eq!(read(&cfg.join("greeting")), "hello");
        assert_eq!(mode(&cfg.join("greeting")), 0o644);
        let creds = &got.paths["creds"];
        assert_eq!(read(&creds.join("password")), "s3cret");
        assert_eq!(mode(&creds.join("password")), 0o400);
        assert_eq!(read(&got.paths["info"].join("labels")), "app=\"web\"");
        let scratch = &got.paths["scratch"];
        assert!(scratch.is_dir());

        // tmpfs for memory emptyDir, secret and projected volumes.
        let mounted = mounter.mounts_under(root.path()).await.unwrap();
        let canon = |p: &Path| std::fs::canonicalize(p).unwrap();
        for p in [scratch, creds, &got.paths[&access]] {
            assert!(
                mounted.iter().any(|m| *m == canon(p) || m == p),
                "{} not mounted in {mounted:?}",
                p.display()
            );
        }

        // The projected kube-api-access volume.
        let api_access = &got.paths[&access];
        assert_eq!(read(&api_access.join("namespace")), "default");
        let root_ca = Api::<ConfigMap>::namespaced(client.clone(), "default")
            .get("kube-root-ca.crt")
            .await
            .unwrap();
        assert_eq!(
            read(&api_access.join("ca.crt")),
            root_ca.data.unwrap()["ca.crt"]
        );
        let token = read(&api_access.join("token"));
        assert_eq!(token.split('.').count(), 3, "a JWT: {token}");
        let review: TokenReview = serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "spec": {"token": token}
        }))
        .unwrap();
        let review = Api::<TokenReview>::all(client.clone())
            .create(&PostParams::default(), &review)
            .await
            .unwrap();
        let status = review.status.unwrap();
        assert_eq!(status.authenticated, Some(true), "{status:?}");
        assert_eq!(
            status.user.unwrap().username.as_deref(),
            Some("system:serviceaccount:default:builder")
        );

        // Unchanged: the same data dir; then a ConfigMap update is swapped in.
        let link = |d: &Path| std::fs::read_link(d.join("..data")).unwrap();
        let before = link(cfg);
        volumes.setup(&pod).await.unwrap();
        assert_eq!(link(cfg), before);
        assert_eq!(read(&api_access.join("token")), token, "token reused");
        server.kubectl_ok(
            v,
            &[
                "patch",
                "configmap",
                "app-config",
                "-p",
                r#"{"data":{"greeting":"bonjour","extra":"x"}}"#,
            ],
        );
        volumes.setup(&pod).await.unwrap();
        assert_ne!(link(cfg), before);
        assert_eq!(read(&cfg.join("greeting")), "bonjour");
        assert_eq!(read(&cfg.join("extra")), "x");
        assert!(!cfg.join(&before).exists(), "old data dir removed");

        volumes.teardown(&uid).await.unwrap();
        assert!(!config.pod_dir(&uid).exists());
        assert!(mounter.mounts_under(root.path()).await.unwrap().is_empty());
    });
}
