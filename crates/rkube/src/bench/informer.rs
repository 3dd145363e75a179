//! `rkube bench informer`: memory per cached object. A server holds N pods shaped like a
//! Deployment's (labels, owner reference, a container with requests, env and probes);
//! this process measures its own heap before and after (1) the controllers' shared pod
//! informer has listed them all (the ReplicaSet controller's syncs read those cached pods
//! in place) and (2) the garbage collector's graph holds a node for each, and prints the
//! difference per pod beside the pod's JSON size. The
//! pods are first given a running pod's status (conditions, container statuses, IPs),
//! as a node reports it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, ListParams, PostParams};
use kube::core::{ApiResource, DynamicObject, PartialObjectMeta};
use serde_json::json;

use super::api::{settled_rss_mb, spawn_server_with};
use super::schedule::client_for;

#[derive(clap::Args, Debug)]
pub struct InformerArgs {
    /// Pods to cache.
    #[arg(long, default_value_t = 10_000)]
    pods: u32,
}

fn pod(i: u32) -> serde_json::Value {
    let rs = i / 100;
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": format!("web-{rs:05}-{i:06}"), "namespace": "default",
            "labels": {"app": "web", "pod-template-hash": format!("{rs:05}")},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "name": format!("web-{rs:05}"), "uid": format!("00000000-0000-0000-0000-{rs:012}"),
                "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": {"containers": [{
            "name": "web", "image": "registry.local/web:1",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "MODE", "value": "bench"}],
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
            "readinessProbe": {"httpGet": {"path": "/", "port": 80}},
        }]},
    })
}

/// A running pod's status, as a node (here simulated) reports it.
fn running_status(i: u32) -> serde_json::Value {
    let now = "2026-01-01T00:00:00Z";
    let condition = |t: &str| json!({"type": t, "status": "True", "lastProbeTime": null, "lastTransitionTime": now});
    json!({"status": {
        "phase": "Running",
        "conditions": [condition("PodReadyToStartContainers"), condition("Initialized"),
            condition("Ready"), condition("ContainersReady"), condition("PodScheduled")],
        "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}],
        "podIP": format!("10.42.{}.{}", i / 250, i % 250 + 2),
        "podIPs": [{"ip": format!("10.42.{}.{}", i / 250, i % 250 + 2)}],
        "startTime": now,
        "containerStatuses": [{"name": "web", "state": {"running": {"startedAt": now}},
            "lastState": {}, "ready": true, "restartCount": 0, "image": "registry.local/web:1",
            "imageID": "registry.local/web@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
            "containerID": format!("containerd://{i:064x}"), "started": true}],
        "qosClass": "Burstable",
    }})
}

/// Runs `f(i)` for every `i` below `n`, 16 at a time.
async fn for_each_pod<F, Fut>(n: u32, f: F) -> anyhow::Result<()>
where
    F: Fn(u32) -> Fut + Clone + Send + 'static,
    Fut: std::future::Future<Output = anyhow::Result<()>> + Send,
{
    let next = Arc::new(std::sync::atomic::AtomicU32::new(0));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (next, f) = (Arc::clone(&next), f.clone());
        tasks.push(tokio::spawn(async move {
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                if i >= n {
                    return anyhow::Ok(());
                }
                f(i).await?;
            }
        }));
    }
    for t in tasks {
        t.await??;
    }
    Ok(())
}

/// The heap this process holds live, in MiB, from jemalloc's own accounting: exact, and
/// unlike RSS blind to freed pages the allocator keeps for reuse (a list's decoding frees
/// more than the cache it leaves behind).
fn heap_mb() -> f64 {
    let _ = tikv_jemalloc_ctl::epoch::advance();
    tikv_jemalloc_ctl::stats::allocated::read().map_or(0.0, |b| b as f64 / (1024.0 * 1024.0))
}

pub async fn run(args: InformerArgs) -> anyhow::Result<()> {
    let server = spawn_server_with(&["--disable-controller-manager", "--disable-scheduler"])?;
    let client = client_for(&server.kubeconfig).await?;
    let api: Api<Pod> = Api::namespaced(client.clone(), "default");
    // Without the controller manager, the default service account (which admission
    // needs) is made here.
    let accounts: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(client.clone(), "default");
    if accounts.get_opt("default").await?.is_none() {
        let sa = serde_json::from_value(json!({"metadata": {"name": "default"}}))?;
        accounts.create(&PostParams::default(), &sa).await?;
    }
    let started = Instant::now();
    let creating = api.clone();
    for_each_pod(args.pods, move |i| {
        let api = creating.clone();
        async move {
            let p: Pod = serde_json::from_value(pod(i))?;
            api.create(&PostParams::default(), &p).await?;
            Ok(())
        }
    })
    .await?;
    let patching = api.clone();
    for_each_pod(args.pods, move |i| {
        let api = patching.clone();
        async move {
            let name = pod(i)["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string();
            api.patch_status(
                &name,
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(running_status(i)),
            )
            .await?;
            Ok(())
        }
    })
    .await?;
    println!(
        "informer-bench: {} pods created and running in {:.1} s",
        args.pods,
        started.elapsed().as_secs_f64()
    );
    let sample = api.list(&ListParams::default().limit(100)).await?;
    let json_bytes = sample
        .items
        .iter()
        .map(|p| serde_json::to_vec(p).map(|v| v.len()).unwrap_or(0))
        .sum::<usize>()
        / sample.items.len().max(1);
    drop(sample);

    let n = f64::from(args.pods.max(1));
    let before = heap_mb();
    let informer =
        controllers::informers::Informer::<controllers::cachedpod::CachedPod>::start_trimmed(
            Api::all(client.clone()),
            controllers::informers::trim_pod,
            controllers::informers::POD_INDEXERS,
        );
    informer.synced().await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cached = informer.store.state().len();
    let with_informer = heap_mb();
    let informer_bytes = (with_informer - before) * 1024.0 * 1024.0 / n;

    let ar = ApiResource::erase::<Pod>(&());
    let metas: Api<PartialObjectMeta<DynamicObject>> = Api::all_with(client.clone(), &ar);
    let mut graph = controllers::gc::Graph::new();
    let before_graph = heap_mb();
    let list = metas.list(&ListParams::default()).await?;
    for o in &list.items {
        if let Some(meta) = controllers::gcloop::meta_of(&ar, &o.metadata) {
            graph.apply(controllers::gc::Change::Upsert { source: 0, meta });
        }
    }
    drop(list);
    let with_graph = heap_mb();
    let graph_bytes = (with_graph - before_graph) * 1024.0 * 1024.0 / n;
    let server_rss = settled_rss_mb(server.child.id()).await;
    println!(
        "pod json {json_bytes} B; informer cached {cached} pods: +{:.1} MB ({informer_bytes:.0} B/pod); gc graph {} nodes: +{:.1} MB ({graph_bytes:.0} B/pod); server rss {server_rss:.1} MB",
        with_informer - before,
        graph.len(),
        with_graph - before_graph,
    );
    println!(
        "informer-bench pods={} json_bytes={json_bytes} informer_bytes_per_pod={informer_bytes:.0} gc_bytes_per_pod={graph_bytes:.0} server_rss_mb={server_rss:.1}",
        args.pods
    );
    drop(informer);
    Ok(())
}
