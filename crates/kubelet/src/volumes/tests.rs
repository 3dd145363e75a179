//! Unit tests of the volume manager over a temp root, [`FakeSource`], [`FakeMounter`] and
//! [`FakeClock`].

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::net::IpAddr;
use std::os::unix::fs::PermissionsExt;
use std::sync::atomic::{AtomicUsize, Ordering};

use k8s_openapi::api::authentication::v1::TokenRequestStatus;
use serde_json::{Value, json};

use super::*;

struct Env {
    _tmp: tempfile::TempDir,
    config: Arc<KubeletConfig>,
    source: Arc<FakeSource>,
    mounter: Arc<FakeMounter>,
    clock: Arc<FakeClock>,
    volumes: Volumes,
    tokens_issued: Arc<AtomicUsize>,
}

fn t(s: &str) -> jiff::Timestamp {
    s.parse().unwrap()
}

fn env() -> Env {
    let tmp = tempfile::tempdir().unwrap();
    let config = Arc::new(KubeletConfig::new(
        "node-1",
        tmp.path().join("kubelet"),
        IpAddr::from([10, 0, 0, 1]),
    ));
    let source = Arc::new(FakeSource::new());
    let mounter = Arc::new(FakeMounter::new());
    let clock = Arc::new(FakeClock::new(t("2024-05-01T10:00:00Z")));
    let issued = Arc::new(AtomicUsize::new(0));
    {
        let clock = clock.clone();
        let issued = issued.clone();
        source.set_token_responder(Box::new(move |_ns, sa, req| {
            let n = issued.fetch_add(1, Ordering::SeqCst) + 1;
            let exp = req.spec.expiration_seconds.unwrap_or(3600);
            let mut out = req.clone();
            out.status = Some(TokenRequestStatus {
                token: format!("token-{sa}-{n}"),
                expiration_timestamp: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    clock.now() + jiff::SignedDuration::from_secs(exp),
                ),
            });
            Ok(out)
        }));
    }
    let mut alloc = Allocatable::new();
    alloc.insert("cpu".into(), Quantity::parse("2").unwrap());
    alloc.insert("memory".into(), Quantity::parse("4Gi").unwrap());
    let volumes = Volumes::new(config.clone(), source.clone(), mounter.clone())
        .with_clock(clock.clone())
        .with_cache_ttl(Duration::ZERO)
        .with_node_allocatable(alloc);
    Env {
        _tmp: tmp,
        config,
        source,
        mounter,
        clock,
        volumes,
        tokens_issued: issued,
    }
}

fn pod(volumes: Value) -> Pod {
    serde_json::from_value(json!({
        "metadata": {
            "name": "web", "namespace": "ns", "uid": "uid-1",
            "labels": {"app": "web", "tier": "front"}
        },
        "spec": {
            "serviceAccountName": "builder",
            "containers": [{
                "name": "c",
                "resources": {"limits": {"memory": "256Mi"}}
            }],
            "volumes": volumes
        }
    }))
    .unwrap()
}

fn cm(name: &str, data: Value) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "ns"},
        "data": data
    }))
    .unwrap()
}

fn read(p: &Path) -> String {
    std::fs::read_to_string(p).unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

fn data_link(dir: &Path) -> PathBuf {
    std::fs::read_link(dir.join("..data")).unwrap()
}

#[tokio::test]
async fn pod_dirs_are_made() {
    let e = env();
    let out = e.volumes.setup(&pod(json!([]))).await.unwrap();
    assert!(out.paths.is_empty());
    let d = e.config.pod_dir("uid-1");
    for sub in ["volumes", "plugins", "containers"] {
        assert!(d.join(sub).is_dir(), "{sub}");
    }
    assert_eq!(mode(&d), 0o750);
}

#[tokio::test]
async fn empty_dir_on_disk_and_in_memory() {
    let e = env();
    let p = pod(json!([
        {"name": "scratch", "emptyDir": {}},
        {"name": "mem", "emptyDir": {"medium": "Memory", "sizeLimit": "64Mi"}},
        {"name": "mem2", "emptyDir": {"medium": "Memory"}}
    ]));
    let out = e.volumes.setup(&p).await.unwrap();
    let scratch = e.volumes.volume_dir("uid-1", EMPTY_DIR_PLUGIN, "scratch");
    assert_eq!(out.paths["scratch"], scratch);
    assert!(scratch.ends_with("pods/uid-1/volumes/kubernetes.io~empty-dir/scratch"));
    assert_eq!(mode(&scratch), 0o777);
    let mem = e.volumes.volume_dir("uid-1", EMPTY_DIR_PLUGIN, "mem");
    let mem2 = e.volumes.volume_dir("uid-1", EMPTY_DIR_PLUGIN, "mem2");
    assert_eq!(
        e.mounter.calls(),
        vec![
            MountCall::Tmpfs {
                dir: mem.clone(),
                size_bytes: Some(64 << 20)
            },
            // No sizeLimit: the pod's memory limit (below node allocatable).
            MountCall::Tmpfs {
                dir: mem2.clone(),
                size_bytes: Some(256 << 20)
            },
        ]
    );
    // Again: nothing new is mounted.
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(e.mounter.calls().len(), 2);

    e.volumes.teardown("uid-1").await.unwrap();
    assert!(e.mounter.mounted().is_empty());
    assert!(!e.config.pod_dir("uid-1").exists());
    // Tolerant of a pod that is already gone.
    e.volumes.teardown("uid-1").await.unwrap();
    e.volumes.teardown("never-there").await.unwrap();
}

#[test]
fn memory_volume_sizes() {
    let p = pod(json!([]));
    assert_eq!(
        memory_volume_size(Some(1000 << 20), &p, None),
        Some(256 << 20)
    );
    assert_eq!(
        memory_volume_size(Some(100 << 20), &p, None),
        Some(100 << 20)
    );
    assert_eq!(memory_volume_size(None, &p, Some(1 << 20)), Some(1 << 20));
    assert_eq!(
        memory_volume_size(Some(1 << 30), &p, Some(2 << 30)),
        Some(256 << 20)
    );
    let mut best_effort = p.clone();
    best_effort.spec.as_mut().unwrap().containers[0].resources = None;
    assert_eq!(memory_volume_size(None, &best_effort, None), None);
}

#[tokio::test]
async fn host_path_checks() {
    let e = env();
    let dir = e._tmp.path().join("host/data");
    let p = pod(json!([
        {"name": "h", "hostPath": {"path": dir.to_str().unwrap(), "type": "DirectoryOrCreate"}}
    ]));
    let out = e.volumes.setup(&p).await.unwrap();
    assert_eq!(out.paths["h"], dir);
    assert!(dir.is_dir());

    let file = e._tmp.path().join("host/file");
    let p = pod(json!([
        {"name": "h", "hostPath": {"path": file.to_str().unwrap(), "type": "Directory"}}
    ]));
    match e.volumes.setup(&p).await.unwrap_err() {
        Error::Volume { volume, message } => {
            assert_eq!(volume, "h");
            assert_eq!(
                message,
                format!(
                    "hostPath type check failed: {} is not a directory",
                    file.display()
                )
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn config_map_write_update_and_cache() {
    let mut e = env();
    e.source
        .put_config_map(cm("cfg", json!({"a": "1", "b": "2"})));
    let p = pod(json!([
        {"name": "cfg", "configMap": {"name": "cfg", "defaultMode": 0o640}}
    ]));
    let out = e.volumes.setup(&p).await.unwrap();
    let dir = e.volumes.volume_dir("uid-1", CONFIG_MAP_PLUGIN, "cfg");
    assert_eq!(out.paths["cfg"], dir);
    assert_eq!(read(&dir.join("a")), "1");
    assert_eq!(mode(&dir.join("a")), 0o640);
    assert_eq!(
        std::fs::read_link(dir.join("a")).unwrap(),
        Path::new("..data/a")
    );
    let first = data_link(&dir);

    // Unchanged: no new data dir.
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(data_link(&dir), first);

    // Changed: `..data` swapped, removed key gone.
    e.source.put_config_map(cm("cfg", json!({"a": "10"})));
    e.volumes.setup(&p).await.unwrap();
    assert_ne!(data_link(&dir), first);
    assert_eq!(read(&dir.join("a")), "10");
    assert!(std::fs::symlink_metadata(dir.join("b")).is_err());
    assert!(!dir.join(&first).exists());

    // With a TTL, the cached object is used until it expires.
    e.volumes = Volumes::new(e.config.clone(), e.source.clone(), e.mounter.clone())
        .with_clock(e.clock.clone());
    e.volumes.setup(&p).await.unwrap();
    e.source.clear_calls();
    e.source.put_config_map(cm("cfg", json!({"a": "11"})));
    e.clock.advance(Duration::from_secs(30));
    e.volumes.setup(&p).await.unwrap();
    assert!(e.source.calls().is_empty());
    assert_eq!(read(&dir.join("a")), "10");
    e.clock.advance(Duration::from_secs(31));
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(e.source.calls().len(), 1);
    assert_eq!(read(&dir.join("a")), "11");
}

#[tokio::test]
async fn config_map_items_optional_and_missing() {
    let e = env();
    e.source.put_config_map(cm("cfg", json!({"a": "1"})));
    let p = pod(json!([
        {"name": "cfg", "configMap": {"name": "cfg", "items": [
            {"key": "a", "path": "dir/x.conf", "mode": 0o400}
        ]}},
        {"name": "opt", "configMap": {"name": "absent", "optional": true}}
    ]));
    let out = e.volumes.setup(&p).await.unwrap();
    let dir = &out.paths["cfg"];
    assert_eq!(read(&dir.join("dir/x.conf")), "1");
    assert_eq!(mode(&dir.join("dir/x.conf")), 0o400);
    assert_eq!(
        std::fs::read_link(dir.join("dir")).unwrap(),
        Path::new("..data/dir")
    );
    // The optional missing config map is an empty volume.
    let opt = &out.paths["opt"];
    assert_eq!(std::fs::read_dir(opt).unwrap().count(), 2); // `..data` and its dir

    let p = pod(json!([{"name": "cfg", "configMap": {"name": "absent"}}]));
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume cfg: configmap \"absent\" not found"
    );
    let p = pod(
        json!([{"name": "cfg", "configMap": {"name": "cfg", "items": [{"key": "zz", "path": "z"}]}}]),
    );
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume cfg: configmap references non-existent config key: zz"
    );
}

#[tokio::test]
async fn secret_on_tmpfs_with_decoded_data() {
    let e = env();
    e.source.put_secret(
        serde_json::from_value(json!({
            "metadata": {"name": "s", "namespace": "ns"},
            "data": {"password": "aHVudGVyMg=="}
        }))
        .unwrap(),
    );
    let p = pod(json!([{"name": "s", "secret": {"secretName": "s", "defaultMode": 0o400}}]));
    let out = e.volumes.setup(&p).await.unwrap();
    let dir = e.volumes.volume_dir("uid-1", SECRET_PLUGIN, "s");
    assert_eq!(out.paths["s"], dir);
    assert_eq!(read(&dir.join("password")), "hunter2");
    assert_eq!(mode(&dir.join("password")), 0o400);
    assert_eq!(e.mounter.mounted(), vec![dir.clone()]);

    let p = pod(json!([{"name": "s", "secret": {"secretName": "nope"}}]));
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume s: secret \"nope\" not found"
    );
    e.volumes.teardown("uid-1").await.unwrap();
    assert!(e.mounter.mounted().is_empty());
}

#[tokio::test]
async fn downward_api_volume() {
    let e = env();
    let p = pod(json!([{"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}},
        {"path": "mem", "resourceFieldRef": {"containerName": "c", "resource": "limits.memory", "divisor": "1Mi"}},
        {"path": "cpu", "resourceFieldRef": {"containerName": "c", "resource": "limits.cpu"}}
    ]}}]));
    let out = e.volumes.setup(&p).await.unwrap();
    let dir = &out.paths["info"];
    assert!(dir.ends_with("kubernetes.io~downward-api/info"));
    assert_eq!(read(&dir.join("labels")), "app=\"web\"\ntier=\"front\"");
    assert_eq!(read(&dir.join("name")), "web");
    assert_eq!(read(&dir.join("mem")), "256");
    assert_eq!(
        read(&dir.join("cpu")),
        "2",
        "node allocatable when no limit"
    );
    assert_eq!(mode(&dir.join("name")), 0o644);
}

/// The volume the ServiceAccount admission plugin injects.
fn kube_api_access() -> Value {
    json!({"name": "kube-api-access-abcde", "projected": {"defaultMode": 0o644, "sources": [
        {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
        {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}
    ]}})
}

#[tokio::test]
async fn projected_kube_api_access_and_token_refresh() {
    let e = env();
    e.source
        .put_config_map(cm("kube-root-ca.crt", json!({"ca.crt": "PEM"})));
    let p = pod(json!([kube_api_access()]));
    let out = e.volumes.setup(&p).await.unwrap();
    let dir = e
        .volumes
        .volume_dir("uid-1", PROJECTED_PLUGIN, "kube-api-access-abcde");
    assert_eq!(out.paths["kube-api-access-abcde"], dir);
    assert_eq!(read(&dir.join("token")), "token-builder-1");
    assert_eq!(read(&dir.join("ca.crt")), "PEM");
    assert_eq!(read(&dir.join("namespace")), "ns");
    assert_eq!(mode(&dir.join("token")), 0o644);
    assert_eq!(e.mounter.mounted(), vec![dir.clone()]);

    // The request: default audience, the volume's lifetime, bound to the pod.
    let req = e
        .source
        .calls()
        .into_iter()
        .find_map(|c| match c {
            SourceCall::Token {
                namespace,
                service_account,
                request,
            } => Some((namespace, service_account, request)),
            _ => None,
        })
        .unwrap();
    assert_eq!((req.0.as_str(), req.1.as_str()), ("ns", "builder"));
    assert!(req.2.spec.audiences.is_empty());
    assert_eq!(req.2.spec.expiration_seconds, Some(3607));
    let bound = req.2.spec.bound_object_ref.clone().unwrap();
    assert_eq!(bound.kind.as_deref(), Some("Pod"));
    assert_eq!(bound.api_version.as_deref(), Some("v1"));
    assert_eq!(bound.name.as_deref(), Some("web"));
    assert_eq!(bound.uid.as_deref(), Some("uid-1"));

    // Before 80% of 3607 s (2885.6 s): the cached token, nothing written.
    let first = data_link(&dir);
    e.clock.advance(Duration::from_secs(2885));
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(e.tokens_issued.load(Ordering::SeqCst), 1);
    assert_eq!(data_link(&dir), first);

    // After: a new token, swapped in.
    e.clock.advance(Duration::from_secs(2));
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(e.tokens_issued.load(Ordering::SeqCst), 2);
    assert_eq!(read(&dir.join("token")), "token-builder-2");
    assert_ne!(data_link(&dir), first);
    assert_eq!(e.volumes.cached_tokens(), 1);

    e.volumes.teardown("uid-1").await.unwrap();
    assert_eq!(e.volumes.cached_tokens(), 0);
    assert!(!e.config.pod_dir("uid-1").exists());
}

#[tokio::test]
async fn token_refresh_failure_keeps_the_valid_token() {
    let e = env();
    let p = pod(json!([{"name": "tok", "projected": {"sources": [
        {"serviceAccountToken": {"audience": "vault", "expirationSeconds": 600, "path": "t"}}
    ]}}]));
    e.volumes.setup(&p).await.unwrap();
    let dir = e.volumes.volume_dir("uid-1", PROJECTED_PLUGIN, "tok");
    assert_eq!(read(&dir.join("t")), "token-builder-1");
    e.source
        .set_token_responder(Box::new(|_, _, _| Err(Error::Other("boom".into()))));
    e.clock.advance(Duration::from_secs(590));
    e.volumes.setup(&p).await.unwrap();
    assert_eq!(read(&dir.join("t")), "token-builder-1");
    e.clock.advance(Duration::from_secs(20));
    let err = e.volumes.setup(&p).await.unwrap_err().to_string();
    assert!(err.contains("expired and refresh failed: boom"), "{err}");
    // The expired token is then forgotten.
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume tok: failed to fetch token: boom"
    );

    // A pod that never had one.
    let mut p2 = p.clone();
    p2.metadata.uid = Some("uid-2".into());
    assert_eq!(
        e.volumes.setup(&p2).await.unwrap_err().to_string(),
        "volume tok: failed to fetch token: boom"
    );
}

#[tokio::test]
async fn token_mode_with_fs_group() {
    let e = env();
    let mut p = pod(json!([{"name": "tok", "projected": {"sources": [
        {"serviceAccountToken": {"path": "t"}}
    ]}}]));
    // Our own group, so the test needs no privileges.
    let gid = std::os::unix::fs::MetadataExt::gid(&std::fs::metadata(e._tmp.path()).unwrap());
    p.spec.as_mut().unwrap().security_context =
        Some(serde_json::from_value(json!({"fsGroup": gid})).unwrap());
    let out = e.volumes.setup(&p).await.unwrap();
    assert_eq!(mode(&out.paths["tok"].join("t")), 0o640);
}

#[tokio::test]
async fn projected_errors_are_aggregated() {
    let e = env();
    let p = pod(json!([{"name": "pv", "projected": {"sources": [
        {"configMap": {"name": "gone"}},
        {"clusterTrustBundle": {"name": "b", "path": "b.pem"}},
        {"secret": {"name": "opt", "optional": true}}
    ]}}]));
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume pv: [configmap \"gone\" not found, clusterTrustBundle projections are not supported by rkube's kubelet]"
    );
}

#[tokio::test]
async fn unsupported_volume_types_and_missing_uid() {
    let e = env();
    let p = pod(json!([{"name": "claim", "persistentVolumeClaim": {"claimName": "c"}}]));
    assert_eq!(
        e.volumes.setup(&p).await.unwrap_err().to_string(),
        "volume claim: no volume plugin matched: persistentVolumeClaim volumes are not supported by rkube's kubelet"
    );
    let mut p = pod(json!([]));
    p.metadata.uid = None;
    assert!(e.volumes.setup(&p).await.is_err());
}

#[tokio::test]
async fn teardown_refuses_to_delete_through_a_mount_it_cannot_unmount() {
    struct Stuck(FakeMounter);
    #[async_trait]
    impl Mounter for Stuck {
        async fn mount_tmpfs(&self, dir: &Path, size: Option<i64>) -> Result<(), Error> {
            self.0.mount_tmpfs(dir, size).await
        }
        async fn unmount(&self, _dir: &Path) -> Result<(), Error> {
            Ok(())
        }
        async fn mounts_under(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
            self.0.mounts_under(dir).await
        }
    }
    let e = env();
    let volumes = Volumes::new(
        e.config.clone(),
        e.source.clone(),
        Arc::new(Stuck(FakeMounter::new())),
    );
    let p = pod(json!([{"name": "m", "emptyDir": {"medium": "Memory"}}]));
    volumes.setup(&p).await.unwrap();
    let err = volumes.teardown("uid-1").await.unwrap_err().to_string();
    assert!(err.contains("still has mounts"), "{err}");
    assert!(e.config.pod_dir("uid-1").exists());
}
