//! The API server judged by the real kube-rs client (`kube` 5): lists with selectors and
//! pagination, watches resumed from a resourceVersion (and from a compacted one), the
//! runtime's watcher and reflector, server-side apply with conflicts, the status
//! subresource, CustomResourceDefinitions through discovery and `DynamicObject`, and
//! optimistic concurrency. Each test runs its own `rkube server` on SQLite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
    VersionMatch, WatchEvent, WatchParams,
};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::core::Status;
use kube::discovery::{self, Discovery, Scope};
use kube::runtime::{WatchStreamExt, reflector, watcher};
use kube::{Client, Config, ResourceExt};
use serde_json::{Value, json};
use testkit::RkubeServer;

/// How long one test's client work may take before it is declared hung.
const TEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Runs `work` on a fresh multi-thread runtime, failing the test if it hangs.
fn run<T>(server: &RkubeServer, work: impl Future<Output = T>) -> T {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        match tokio::time::timeout(TEST_TIMEOUT, work).await {
            Ok(v) => v,
            Err(_) => panic!(
                "test did not finish in {TEST_TIMEOUT:?}; server log:\n{}",
                server.log_tail()
            ),
        }
    })
}

/// Runs `f` with a kube client for `server` on a fresh multi-thread runtime.
fn with_client<F, Fut, T>(server: &RkubeServer, f: F) -> T
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = T>,
{
    run(server, async {
        let kubeconfig = Kubeconfig::read_from(&server.kubeconfig).unwrap();
        let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
            .await
            .unwrap();
        f(Client::try_from(config).unwrap()).await
    })
}

/// The `Status` of a failed request, or a panic naming what happened instead.
fn api_error<T: std::fmt::Debug>(res: Result<T, kube::Error>, what: &str) -> Status {
    match res {
        Err(kube::Error::Api(s)) => *s,
        other => panic!("{what}: expected an API error, got {other:?}"),
    }
}

/// The config map every namespace gets (the root CA bundle, as upstream publishes it).
const ROOT_CA: &str = "kube-root-ca.crt";

/// Creates a namespace and waits for its root CA bundle, so lists in it are predictable.
async fn create_namespace(client: &Client, name: &str) {
    let ns: Namespace = serde_json::from_value(json!({"metadata": {"name": name}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), name);
    eventually("the root CA bundle", Duration::from_secs(10), || {
        let cms = cms.clone();
        async move { cms.get_opt(ROOT_CA).await.ok().flatten() }
    })
    .await;
}

fn config_map(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    let data: BTreeMap<&str, &str> = data.iter().copied().collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels},
        "data": data,
    }))
    .unwrap()
}

/// The names of the test's own config maps (the root CA bundle left out).
fn names<'a>(items: impl IntoIterator<Item = &'a ConfigMap>) -> BTreeSet<String> {
    items
        .into_iter()
        .map(ResourceExt::name_any)
        .filter(|n| n != ROOT_CA)
        .collect()
}

/// Polls `check` every 50 ms until it returns `Some`, for at most `limit`.
async fn eventually<T, Fut>(what: &str, limit: Duration, mut check: impl FnMut() -> Fut) -> T
where
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + limit;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "timed out after {limit:?} waiting for {what}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[test]
fn list_with_selectors_and_pagination() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-list";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let mut all = BTreeSet::new();
        let mut tier_a = BTreeSet::new();
        for i in 0..25 {
            let name = format!("cm-{i:02}");
            let tier = if i % 2 == 0 { "a" } else { "b" };
            let cm = config_map(&name, &[("tier", tier), ("app", "kc")], &[("i", "x")]);
            api.create(&PostParams::default(), &cm).await.unwrap();
            all.insert(name.clone());
            if tier == "a" {
                tier_a.insert(name);
            }
        }
        let tier_b: BTreeSet<String> = all.difference(&tier_a).cloned().collect();

        let everything = api.list(&ListParams::default()).await.unwrap();
        assert_eq!(names(&everything.items), all);
        let total = everything.items.len();

        // Label selectors, equality- and set-based.
        for (selector, want) in [
            ("tier=a", &tier_a),
            ("tier==a", &tier_a),
            ("tier!=a", &tier_b),
            ("tier in (a)", &tier_a),
            ("tier notin (a)", &tier_b),
            ("tier in (a,b),app=kc", &all),
            ("tier", &all),
        ] {
            let got = api
                .list(&ListParams::default().labels(selector))
                .await
                .unwrap();
            assert_eq!(&names(&got.items), want, "labelSelector {selector:?}");
        }
        let none = api
            .list(&ListParams::default().labels("!tier"))
            .await
            .unwrap();
        assert!(names(&none.items).is_empty(), "labelSelector !tier");

        // Field selectors.
        let one = api
            .list(&ListParams::default().fields("metadata.name=cm-07"))
            .await
            .unwrap();
        assert_eq!(names(&one.items), BTreeSet::from(["cm-07".to_string()]));
        let rest = api
            .list(&ListParams::default().fields("metadata.name!=cm-07"))
            .await
            .unwrap();
        assert_eq!(rest.items.len(), total - 1);
        let both = api
            .list(
                &ListParams::default()
                    .fields("metadata.name=cm-08")
                    .labels("tier=a"),
            )
            .await
            .unwrap();
        assert_eq!(names(&both.items), BTreeSet::from(["cm-08".to_string()]));
        let bad = api.list(&ListParams::default().fields("data.i=x")).await;
        let e = api_error(bad, "unsupported field selector");
        assert_eq!(e.code, 400, "{e:?}");

        // Pagination: every name exactly once, pages of at most 10, one snapshot.
        let mut seen = Vec::new();
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        let mut snapshot_rv = None;
        loop {
            let mut lp = ListParams::default().limit(10);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = api.list(&lp).await.unwrap();
            assert!(page.items.len() <= 10);
            let consumed = seen.len() + page.items.len();
            seen.extend(page.items.iter().map(ResourceExt::name_any));
            let remaining = page.metadata.remaining_item_count;
            pages.push(page.items.len());
            // Every page of one paginated list is read at the first page's revision.
            let rv = page.metadata.resource_version.clone().unwrap();
            assert_eq!(*snapshot_rv.get_or_insert(rv.clone()), rv);
            // Between the first and later pages a write must not show up.
            if token.is_none() {
                api.create(
                    &PostParams::default(),
                    &config_map("zz-late", &[("tier", "c")], &[]),
                )
                .await
                .unwrap();
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                assert_eq!(remaining, None);
                break;
            }
            // (Continued pages: see `remaining_item_count_of_continued_pages`.)
            if pages.len() == 1 {
                assert_eq!(
                    remaining,
                    Some((total - consumed) as i64),
                    "remainingItemCount after {consumed} of {total}"
                );
            }
            assert!(pages.len() < 10, "pagination does not end: {pages:?}");
        }
        assert_eq!(
            pages,
            vec![10, 10, 6],
            "25 config maps and the root CA bundle"
        );
        let mut unique: BTreeSet<String> = seen.iter().cloned().collect();
        assert_eq!(unique.len(), seen.len(), "a name seen twice: {seen:?}");
        unique.remove(ROOT_CA);
        assert_eq!(unique, all);

        // Pagination with a label selector: pages are full until the last one.
        let mut seen_a = Vec::new();
        let mut pages = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().labels("tier=a").limit(5);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = api.list(&lp).await.unwrap();
            pages.push(page.items.len());
            seen_a.extend(page.items.iter().map(ResourceExt::name_any));
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() {
                break;
            }
            assert!(pages.len() < 10, "pagination does not end: {pages:?}");
        }
        assert_eq!(pages, vec![5, 5, 3]);
        assert_eq!(seen_a.iter().cloned().collect::<BTreeSet<_>>(), tier_a);
        assert_eq!(seen_a.len(), tier_a.len());
    });
}

/// `remainingItemCount` is, as upstream's etcd3 store computes it for an unfiltered list,
/// the number of objects after the page in the list's snapshot.
#[test]
fn remaining_item_count_of_continued_pages() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-remaining";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..25 {
            let cm = config_map(&format!("cm-{i:02}"), &[], &[]);
            api.create(&PostParams::default(), &cm).await.unwrap();
        }
        let total = api.list(&ListParams::default()).await.unwrap().items.len();
        let mut remaining = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut lp = ListParams::default().limit(10);
            if let Some(t) = &token {
                lp = lp.continue_token(t);
            }
            let page = api.list(&lp).await.unwrap();
            remaining.push(page.metadata.remaining_item_count);
            if token.is_none() {
                // A write after the first page is not part of the snapshot.
                let late = config_map("zz-late", &[], &[]);
                api.create(&PostParams::default(), &late).await.unwrap();
            }
            token = page.metadata.continue_.filter(|t| !t.is_empty());
            if token.is_none() || remaining.len() > 5 {
                break;
            }
        }
        let total = total as i64;
        assert_eq!(remaining, vec![Some(total - 10), Some(total - 20), None]);
    });
}

/// Reads the next `n` watch events (bookmarks skipped), failing after 10 s.
async fn next_events<S>(stream: &mut S, n: usize) -> Vec<(String, String, String)>
where
    S: futures::Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin,
{
    let mut out = Vec::new();
    while out.len() < n {
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("no watch event after {out:?}"))
            .unwrap_or_else(|| panic!("watch ended after {out:?}"))
            .unwrap();
        let (kind, obj) = match ev {
            WatchEvent::Added(o) => ("ADDED", o),
            WatchEvent::Modified(o) => ("MODIFIED", o),
            WatchEvent::Deleted(o) => ("DELETED", o),
            WatchEvent::Bookmark(_) => continue,
            WatchEvent::Error(e) => panic!("watch error after {out:?}: {e:?}"),
        };
        out.push((
            kind.to_string(),
            obj.name_any(),
            obj.data
                .unwrap_or_default()
                .get("v")
                .cloned()
                .unwrap_or_default(),
        ));
    }
    out
}

#[test]
fn watch_resumes_from_resource_version() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-watch";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        api.create(
            &PostParams::default(),
            &config_map("w0", &[], &[("v", "0")]),
        )
        .await
        .unwrap();
        let rv = api
            .list(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();

        // Changes after the list, made before anyone watches.
        api.create(
            &PostParams::default(),
            &config_map("w1", &[], &[("v", "1")]),
        )
        .await
        .unwrap();
        api.patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "2"}})),
        )
        .await
        .unwrap();
        api.delete("w1", &DeleteParams::default()).await.unwrap();
        api.create(
            &PostParams::default(),
            &config_map("w2", &[("keep", "yes")], &[("v", "3")]),
        )
        .await
        .unwrap();

        let mut stream = api
            .watch(&WatchParams::default().timeout(30), &rv)
            .await
            .unwrap()
            .boxed();
        let got = next_events(&mut stream, 4).await;
        let want = [
            ("ADDED", "w1", "1"),
            ("MODIFIED", "w1", "2"),
            ("DELETED", "w1", "2"),
            ("ADDED", "w2", "3"),
        ]
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()));
        assert_eq!(got, want);

        // The same watch goes on delivering live changes.
        api.patch(
            "w0",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "4"}})),
        )
        .await
        .unwrap();
        let got = next_events(&mut stream, 1).await;
        assert_eq!(got, vec![("MODIFIED".into(), "w0".into(), "4".into())]);

        // A watch with a label selector from the same revision sees only what matches.
        let mut stream = api
            .watch(&WatchParams::default().labels("keep=yes").timeout(30), &rv)
            .await
            .unwrap()
            .boxed();
        let got = next_events(&mut stream, 1).await;
        assert_eq!(got, vec![("ADDED".into(), "w2".into(), "3".into())]);

        // Resuming from the revision of an event skips that event and everything before.
        let w2_rv = api.get("w2").await.unwrap().resource_version().unwrap();
        let mut stream = api
            .watch(&WatchParams::default().timeout(30), &w2_rv)
            .await
            .unwrap()
            .boxed();
        let got = next_events(&mut stream, 1).await;
        assert_eq!(got, vec![("MODIFIED".into(), "w0".into(), "4".into())]);
    });
}

/// The 410 of a watch: upstream answers 200 and sends an ERROR event with a 410 Status;
/// an immediate 410 response is accepted too.
async fn expect_watch_gone(api: &Api<ConfigMap>, rv: &str) -> Status {
    match api.watch(&WatchParams::default().timeout(10), rv).await {
        Err(kube::Error::Api(s)) => *s,
        Err(e) => panic!("watch from {rv}: {e:?}"),
        Ok(stream) => {
            let mut stream = stream.boxed();
            loop {
                let ev = tokio::time::timeout(Duration::from_secs(10), stream.next())
                    .await
                    .unwrap_or_else(|_| panic!("watch from {rv}: neither events nor an error"))
                    .unwrap_or_else(|| panic!("watch from {rv} ended without an error"));
                match ev {
                    Ok(WatchEvent::Error(s)) => return *s,
                    Ok(WatchEvent::Bookmark(_)) => {}
                    Ok(other) => panic!("watch from {rv}: expected 410, got {other:?}"),
                    Err(kube::Error::Api(s)) => return *s,
                    Err(e) => panic!("watch from {rv}: {e:?}"),
                }
            }
        }
    }
}

#[test]
fn watch_and_list_from_compacted_revision_are_gone() {
    let mut server = RkubeServer::start_with(&["--etcd-compaction-interval", "1s"]);
    let ns = "kc-compact";
    let early_rv = with_client(&server, |client| async move {
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for i in 0..12 {
            api.create(
                &PostParams::default(),
                &config_map(&format!("c{i:02}"), &[], &[("v", "0")]),
            )
            .await
            .unwrap();
        }
        let first_page = api.list(&ListParams::default().limit(5)).await.unwrap();
        let early_rv = first_page.metadata.resource_version.clone().unwrap();
        let token = first_page.metadata.continue_.clone().unwrap();
        for v in 1..=30 {
            api.patch(
                "c00",
                &PatchParams::default(),
                &Patch::Merge(json!({"data": {"v": v.to_string()}})),
            )
            .await
            .unwrap();
        }

        // The compactor runs every second and compacts to what it saw one interval ago.
        let gone = eventually(
            "compaction of the early revision",
            Duration::from_secs(15),
            || {
                let api = api.clone();
                let early_rv = early_rv.clone();
                async move {
                    let lp = ListParams::default()
                        .at(&early_rv)
                        .matching(VersionMatch::Exact);
                    match api.list(&lp).await {
                        Ok(_) => None,
                        Err(kube::Error::Api(s)) if s.code == 410 => Some(*s),
                        Err(e) => panic!("exact list at {early_rv}: {e:?}"),
                    }
                }
            },
        )
        .await;
        assert_eq!(gone.reason, "Expired", "{gone:?}");

        // A continue token of the compacted revision: 410 too.
        let e = api_error(
            api.list(&ListParams::default().limit(5).continue_token(&token))
                .await,
            "continue at a compacted revision",
        );
        assert_eq!(e.code, 410, "{e:?}");
        assert_eq!(e.reason, "Expired", "{e:?}");

        // Watches are served by the watch cache, which keeps its own window of events
        // whatever the datastore compacted (as upstream's): resuming from the early
        // revision still works while the window reaches back that far.
        let mut stream = api
            .watch(&WatchParams::default().timeout(30), &early_rv)
            .await
            .unwrap()
            .boxed();
        let got = next_events(&mut stream, 30).await;
        let want: Vec<(String, String, String)> = (1..=30)
            .map(|v| ("MODIFIED".into(), "c00".into(), v.to_string()))
            .collect();
        assert_eq!(got, want);
        early_rv
    });

    // A restarted server's watch cache starts at the current revision: the early revision
    // is neither in its window nor in the (compacted) datastore.
    server.restart();
    with_client(&server, |client| async move {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        for rv in [early_rv.as_str(), "1"] {
            let e = expect_watch_gone(&api, rv).await;
            assert_eq!(e.code, 410, "watch from {rv}: {e:?}");
            assert_eq!(e.reason, "Expired", "watch from {rv}: {e:?}");
            assert!(
                e.message.contains("too old resource version"),
                "watch from {rv}: {e:?}"
            );
        }

        // Reads and watches at the current revision are unaffected.
        let now = api.list(&ListParams::default()).await.unwrap();
        assert_eq!(names(&now.items).len(), 12);
        let c00 = now.items.iter().find(|c| c.name_any() == "c00").unwrap();
        assert_eq!(c00.data.as_ref().unwrap()["v"], "30");
        let rv = now.metadata.resource_version.unwrap();
        let mut stream = api
            .watch(&WatchParams::default().timeout(30), &rv)
            .await
            .unwrap()
            .boxed();
        api.patch(
            "c00",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "31"}})),
        )
        .await
        .unwrap();
        let got = next_events(&mut stream, 1).await;
        assert_eq!(got, vec![("MODIFIED".into(), "c00".into(), "31".into())]);
    });
}

#[test]
fn runtime_watcher_and_reflector_converge() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-reflector";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        api.create(
            &PostParams::default(),
            &config_map("r0", &[], &[("v", "0")]),
        )
        .await
        .unwrap();

        // One reflector with the classic list+watch, one with streaming lists.
        let mut stores = Vec::new();
        let mut tasks = Vec::new();
        for config in [
            watcher::Config::default(),
            watcher::Config::default().streaming_lists(),
        ] {
            let (reader, writer) = reflector::store::<ConfigMap>();
            let stream = reflector(writer, watcher(api.clone(), config))
                .default_backoff()
                .applied_objects();
            tasks.push(tokio::spawn(async move {
                let mut stream = std::pin::pin!(stream);
                while let Some(ev) = stream.next().await {
                    if let Err(e) = ev {
                        eprintln!("watcher error: {e}");
                    }
                }
            }));
            tokio::time::timeout(Duration::from_secs(10), reader.wait_until_ready())
                .await
                .expect("reflector never ready")
                .unwrap();
            stores.push(reader);
        }

        let state = |store: &reflector::Store<ConfigMap>| -> BTreeMap<String, String> {
            store
                .state()
                .iter()
                .filter(|cm| cm.name_any() != ROOT_CA)
                .map(|cm| {
                    let v = cm
                        .data
                        .as_ref()
                        .and_then(|d| d.get("v").cloned())
                        .unwrap_or_default();
                    (cm.name_any(), v)
                })
                .collect()
        };
        let converge = |want: BTreeMap<String, String>| {
            let stores = stores.clone();
            async move {
                for store in &stores {
                    eventually(
                        &format!("the store to hold {want:?}"),
                        Duration::from_secs(10),
                        || {
                            let got = state(store);
                            let ok = got == want;
                            async move { ok.then_some(()) }
                        },
                    )
                    .await;
                }
            }
        };
        let want = |pairs: &[(&str, &str)]| -> BTreeMap<String, String> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        converge(want(&[("r0", "0")])).await;

        for i in 1..=3 {
            api.create(
                &PostParams::default(),
                &config_map(&format!("r{i}"), &[], &[("v", "0")]),
            )
            .await
            .unwrap();
        }
        converge(want(&[("r0", "0"), ("r1", "0"), ("r2", "0"), ("r3", "0")])).await;

        api.patch(
            "r2",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"v": "changed"}})),
        )
        .await
        .unwrap();
        api.delete("r1", &DeleteParams::default()).await.unwrap();
        converge(want(&[("r0", "0"), ("r2", "changed"), ("r3", "0")])).await;

        // Objects of other namespaces stay out of a namespaced reflector.
        create_namespace(&client, "kc-elsewhere").await;
        Api::<ConfigMap>::namespaced(client.clone(), "kc-elsewhere")
            .create(&PostParams::default(), &config_map("other", &[], &[]))
            .await
            .unwrap();
        api.delete("r3", &DeleteParams::default()).await.unwrap();
        converge(want(&[("r0", "0"), ("r2", "changed")])).await;

        for t in tasks {
            t.abort();
        }
    });
}

fn deployment(name: &str, replicas: i64) -> Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]},
            },
        },
    })
}

/// The managedFields entries of an object as (manager, operation, subresource, fieldsV1).
fn managed(obj: &impl ResourceExt) -> Vec<(String, String, String, Value)> {
    obj.managed_fields()
        .iter()
        .map(|m| {
            (
                m.manager.clone().unwrap_or_default(),
                m.operation.clone().unwrap_or_default(),
                m.subresource.clone().unwrap_or_default(),
                m.fields_v1
                    .as_ref()
                    .map(|f| f.0.clone())
                    .unwrap_or_default(),
            )
        })
        .collect()
}

#[test]
fn server_side_apply_conflicts_and_force() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-apply";
        create_namespace(&client, ns).await;
        let api: Api<Deployment> = Api::namespaced(client.clone(), ns);

        let (by_a, web) = (
            PatchParams::apply("mgr-a"),
            Patch::Apply(deployment("web", 2)),
        );
        let apply_web = || api.patch("web", &by_a, &web);
        let d = apply_web().await.unwrap();
        assert_eq!(d.spec.as_ref().unwrap().replicas, Some(2));
        assert_eq!(d.metadata.generation, Some(1));
        let mf = managed(&d);
        assert_eq!(mf.len(), 1, "{mf:?}");
        let (manager, op, sub, fields) = &mf[0];
        assert_eq!(
            (manager.as_str(), op.as_str(), sub.as_str()),
            ("mgr-a", "Apply", "")
        );
        assert!(fields["f:spec"]["f:replicas"].is_object(), "{fields}");
        assert!(
            fields["f:spec"]["f:template"]["f:spec"]["f:containers"]["k:{\"name\":\"web\"}"]
                ["f:image"]
                .is_object(),
            "{fields}"
        );

        // Re-applying the same configuration is a no-op: it leaves the resourceVersion
        // as it found it. (The Deployment controller writes status meanwhile, so "as it
        // found it" is read just before; a write of its own would move it every time.)
        let mut unchanged_by_apply = false;
        for _ in 0..20 {
            let before = api.get("web").await.unwrap();
            let again = apply_web().await.unwrap();
            assert_eq!(again.metadata.generation, Some(1));
            if again.resource_version() == before.resource_version() {
                unchanged_by_apply = true;
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        assert!(unchanged_by_apply, "re-applying kept writing the object");

        // Another manager setting a field mgr-a owns to another value: a conflict.
        let other = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {"replicas": 5},
        });
        let e = api_error(
            api.patch(
                "web",
                &PatchParams::apply("mgr-b"),
                &Patch::Apply(other.clone()),
            )
            .await,
            "conflicting apply",
        );
        assert_eq!(e.code, 409, "{e:?}");
        assert_eq!(e.reason, "Conflict", "{e:?}");
        assert!(
            e.message.contains("mgr-a") && e.message.contains(".spec.replicas"),
            "{e:?}"
        );
        let causes = e
            .details
            .as_ref()
            .map(|d| d.causes.clone())
            .unwrap_or_default();
        assert!(
            causes
                .iter()
                .any(|c| c.reason == "FieldManagerConflict" && c.field == ".spec.replicas"),
            "{causes:?}"
        );
        let unchanged = api.get("web").await.unwrap();
        assert_eq!(unchanged.spec.as_ref().unwrap().replicas, Some(2));

        // Forced: mgr-b takes spec.replicas over.
        let forced = api
            .patch(
                "web",
                &PatchParams::apply("mgr-b").force(),
                &Patch::Apply(other),
            )
            .await
            .unwrap();
        assert_eq!(forced.spec.as_ref().unwrap().replicas, Some(5));
        assert_eq!(forced.metadata.generation, Some(2));
        let mf = managed(&forced);
        let by = |name: &str| {
            mf.iter()
                .find(|m| m.0 == name)
                .unwrap_or_else(|| panic!("no managedFields entry of {name}: {mf:?}"))
                .clone()
        };
        let (_, op_b, _, fields_b) = by("mgr-b");
        assert_eq!(op_b, "Apply");
        assert!(fields_b["f:spec"]["f:replicas"].is_object(), "{fields_b}");
        let (_, _, _, fields_a) = by("mgr-a");
        assert!(fields_a["f:spec"]["f:replicas"].is_null(), "{fields_a}");
        assert!(fields_a["f:spec"]["f:selector"].is_object(), "{fields_a}");

        // The rest of mgr-a's configuration is still there.
        let c = &forced
            .spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers;
        assert_eq!(c[0].image.as_deref(), Some("nginx:1.27"));

        // mgr-a applying without replicas gives the field up without a conflict.
        let mut without = deployment("web", 0);
        without["spec"].as_object_mut().unwrap().remove("replicas");
        let d = api
            .patch("web", &PatchParams::apply("mgr-a"), &Patch::Apply(without))
            .await
            .unwrap();
        assert_eq!(d.spec.as_ref().unwrap().replicas, Some(5));
    });
}

#[test]
fn status_subresource_is_split_from_the_main_resource() {
    // (Without the controllers: the Deployment controller would write status itself.)
    let server = RkubeServer::start_with(&["--disable-controller-manager"]);
    with_client(&server, |client| async move {
        let ns = "kc-status";
        // (No root CA bundle to wait for: the controller manager publishes it.)
        let namespace: Namespace =
            serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .unwrap();
        let api: Api<Deployment> = Api::namespaced(client.clone(), ns);

        // A create ignores status.
        let mut with_status = deployment("web", 3);
        with_status["status"] = json!({"replicas": 42});
        let d: Deployment = serde_json::from_value(with_status).unwrap();
        let created = api.create(&PostParams::default(), &d).await.unwrap();
        assert_ne!(
            created.status.as_ref().and_then(|s| s.replicas),
            Some(42),
            "create kept status"
        );
        let spec_before = created.spec.clone();

        // Status through the subresource: status set, spec (and generation) untouched.
        let patched = api
            .patch_status(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "spec": {"replicas": 9},
                    "status": {"replicas": 3, "readyReplicas": 2, "observedGeneration": 1},
                })),
            )
            .await
            .unwrap();
        let st = patched.status.clone().unwrap();
        assert_eq!(st.replicas, Some(3));
        assert_eq!(st.ready_replicas, Some(2));
        assert_eq!(st.observed_generation, Some(1));
        assert_eq!(patched.spec, spec_before, "a status patch changed spec");
        assert_eq!(patched.metadata.generation, Some(1));
        let via_get = api.get_status("web").await.unwrap();
        assert_eq!(via_get.status.unwrap().ready_replicas, Some(2));

        // A patch of the main resource changes spec, not status.
        let patched = api
            .patch(
                "web",
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "spec": {"replicas": 4},
                    "status": {"replicas": 100, "readyReplicas": 100},
                })),
            )
            .await
            .unwrap();
        assert_eq!(patched.spec.as_ref().unwrap().replicas, Some(4));
        assert_eq!(patched.metadata.generation, Some(2));
        let st = patched.status.clone().unwrap();
        assert_eq!((st.replicas, st.ready_replicas), (Some(3), Some(2)));

        // So does a replace.
        let mut d = api.get("web").await.unwrap();
        d.status.as_mut().unwrap().replicas = Some(77);
        d.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert("replaced".into(), "yes".into());
        let replaced = api
            .replace("web", &PostParams::default(), &d)
            .await
            .unwrap();
        assert_eq!(
            replaced.labels().get("replaced").map(String::as_str),
            Some("yes")
        );
        assert_eq!(replaced.status.as_ref().unwrap().replicas, Some(3));
        assert_eq!(
            replaced.metadata.generation,
            Some(2),
            "metadata/status-only change bumped generation"
        );

        // And a replace of the status subresource changes only status.
        let mut d = api.get("web").await.unwrap();
        d.status.as_mut().unwrap().replicas = Some(4);
        d.spec.as_mut().unwrap().replicas = Some(1);
        let replaced = api
            .replace_status("web", &PostParams::default(), &d)
            .await
            .unwrap();
        assert_eq!(replaced.status.as_ref().unwrap().replicas, Some(4));
        assert_eq!(replaced.spec.as_ref().unwrap().replicas, Some(4));
    });
}

fn crontab_crd() -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "crontabs.stable.example.com"},
        "spec": {
            "group": "stable.example.com",
            "scope": "Namespaced",
            "names": {
                "plural": "crontabs",
                "singular": "crontab",
                "kind": "CronTab",
                "shortNames": ["ct"],
            },
            "versions": [{
                "name": "v1",
                "served": true,
                "storage": true,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {
                            "type": "object",
                            "properties": {
                                "cronSpec": {"type": "string"},
                                "image": {"type": "string"},
                                "replicas": {"type": "integer"},
                            },
                        },
                        "status": {
                            "type": "object",
                            "properties": {"phase": {"type": "string"}},
                        },
                    },
                }},
            }],
        },
    }))
    .unwrap()
}

#[test]
fn custom_resources_through_discovery_and_dynamic_objects() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-crd";
        create_namespace(&client, ns).await;
        let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
        crds.create(&PostParams::default(), &crontab_crd())
            .await
            .unwrap();
        eventually("the CRD to be Established", Duration::from_secs(15), || {
            let crds = crds.clone();
            async move {
                let crd = crds.get("crontabs.stable.example.com").await.unwrap();
                let conds = crd.status?.conditions?;
                conds
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True")
                    .then_some(())
            }
        })
        .await;

        // Discovery: the group, the resource, its scope and verbs.
        let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
        let (ar, caps) = eventually("CronTab in discovery", Duration::from_secs(15), || {
            let client = client.clone();
            let gvk = gvk.clone();
            async move { discovery::pinned_kind(&client, &gvk).await.ok() }
        })
        .await;
        assert_eq!(ar.plural, "crontabs");
        assert_eq!(ar.api_version, "stable.example.com/v1");
        assert_eq!(caps.scope, Scope::Namespaced);
        assert!(caps.supports_operation(kube::discovery::verbs::WATCH));
        assert!(
            caps.subresources
                .iter()
                .any(|(sub, _)| sub.plural == "crontabs/status" || sub.plural == "status"),
            "{:?}",
            caps.subresources
        );
        let full = Discovery::new(client.clone())
            .filter(&["stable.example.com"])
            .run()
            .await
            .unwrap();
        let (ar2, _) = full
            .resolve_gvk(&gvk)
            .expect("CronTab not in full discovery");
        assert_eq!(ar2, ar);

        // Create, get, list, patch status.
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, &ar);
        let obj = DynamicObject::new("my-cron", &ar).data(json!({
            "spec": {"cronSpec": "* * * * */5", "image": "my-cron-image", "replicas": 2},
        }));
        let created = api.create(&PostParams::default(), &obj).await.unwrap();
        assert_eq!(created.metadata.namespace.as_deref(), Some(ns));
        assert!(created.metadata.uid.is_some());
        let got = api.get("my-cron").await.unwrap();
        assert_eq!(got.data["spec"]["replicas"], 2);
        assert_eq!(got.data["spec"]["cronSpec"], "* * * * */5");
        assert_eq!(got.types.as_ref().map(|t| t.kind.as_str()), Some("CronTab"));
        let list = api.list(&ListParams::default()).await.unwrap();
        assert_eq!(
            list.items
                .iter()
                .map(ResourceExt::name_any)
                .collect::<Vec<_>>(),
            vec!["my-cron"]
        );
        let st = api
            .patch_status(
                "my-cron",
                &PatchParams::default(),
                &Patch::Merge(json!({"status": {"phase": "Running"}, "spec": {"replicas": 7}})),
            )
            .await
            .unwrap();
        assert_eq!(st.data["status"]["phase"], "Running");
        assert_eq!(st.data["spec"]["replicas"], 2);

        // Server-side apply works on custom resources too, typed by the CRD's schema:
        // the creator (an Update manager) owns spec.image, so changing it conflicts
        // unless forced.
        let config = json!({
            "apiVersion": "stable.example.com/v1",
            "kind": "CronTab",
            "metadata": {"name": "my-cron", "labels": {"team": "a"}},
            "spec": {"image": "my-cron-image:2"},
        });
        let e = api_error(
            api.patch(
                "my-cron",
                &PatchParams::apply("kc-test"),
                &Patch::Apply(config.clone()),
            )
            .await,
            "conflicting apply of a custom resource",
        );
        assert_eq!(e.code, 409, "{e:?}");
        assert!(e.message.contains(".spec.image"), "{e:?}");
        let applied = api
            .patch(
                "my-cron",
                &PatchParams::apply("kc-test").force(),
                &Patch::Apply(config),
            )
            .await
            .unwrap();
        assert_eq!(applied.data["spec"]["image"], "my-cron-image:2");
        assert_eq!(applied.data["spec"]["replicas"], 2);
        assert_eq!(applied.labels().get("team").map(String::as_str), Some("a"));
        let mf = managed(&applied);
        let (_, op, _, fields) = mf
            .iter()
            .find(|m| m.0 == "kc-test")
            .unwrap_or_else(|| panic!("no kc-test in {mf:?}"));
        assert_eq!(op, "Apply");
        assert!(fields["f:spec"]["f:image"].is_object(), "{fields}");
        assert!(
            fields["f:metadata"]["f:labels"]["f:team"].is_object(),
            "{fields}"
        );

        // The schema is enforced: a string where an integer belongs is a 422.
        let bad = DynamicObject::new("bad-cron", &ar).data(json!({
            "spec": {"cronSpec": "* * * * */5", "replicas": "abc"},
        }));
        let e = api_error(
            api.create(&PostParams::default(), &bad).await,
            "schema violation",
        );
        assert_eq!(e.code, 422, "{e:?}");
        assert_eq!(e.reason, "Invalid", "{e:?}");
        assert!(e.message.contains("spec.replicas"), "{e:?}");
        let e = api_error(
            api.patch(
                "my-cron",
                &PatchParams::default(),
                &Patch::Merge(json!({"spec": {"replicas": "abc"}})),
            )
            .await,
            "schema violation by patch",
        );
        assert_eq!(e.code, 422, "{e:?}");
        let e = api_error(api.get("bad-cron").await, "get of a rejected object");
        assert_eq!(e.code, 404, "{e:?}");
    });
}

#[test]
fn update_with_stale_resource_version_conflicts() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-conflict";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        api.create(&PostParams::default(), &config_map("c", &[], &[("v", "0")]))
            .await
            .unwrap();
        let stale = api.get("c").await.unwrap();

        let mut first = stale.clone();
        first.data.as_mut().unwrap().insert("v".into(), "1".into());
        let updated = api
            .replace("c", &PostParams::default(), &first)
            .await
            .unwrap();
        assert_ne!(updated.resource_version(), stale.resource_version());

        let mut second = stale.clone();
        second.data.as_mut().unwrap().insert("v".into(), "2".into());
        let e = api_error(
            api.replace("c", &PostParams::default(), &second).await,
            "replace with a stale resourceVersion",
        );
        assert_eq!(e.code, 409, "{e:?}");
        assert_eq!(e.reason, "Conflict", "{e:?}");
        assert!(
            e.message
                .contains("the object has been modified; please apply your changes to the latest version and try again"),
            "{e:?}"
        );
        let now = api.get("c").await.unwrap();
        assert_eq!(now.data.unwrap()["v"], "1");

        // A patch with a stale resourceVersion precondition conflicts too.
        let e = api_error(
            api.patch(
                "c",
                &PatchParams::default(),
                &Patch::Merge(json!({
                    "metadata": {"resourceVersion": stale.resource_version().unwrap()},
                    "data": {"v": "3"},
                })),
            )
            .await,
            "patch with a stale resourceVersion",
        );
        assert_eq!(e.code, 409, "{e:?}");

        // A replace without resourceVersion is an unconditional update.
        let mut blind = stale;
        blind.metadata.resource_version = None;
        blind.data.as_mut().unwrap().insert("v".into(), "4".into());
        let e = api.replace("c", &PostParams::default(), &blind).await;
        // Upstream ConfigMaps allow unconditional update.
        assert_eq!(e.unwrap().data.unwrap()["v"], "4");
    });
}

/// Events have no watch cache (as upstream's default watch cache sizes): lists, field
/// selectors, watches from a list's resourceVersion and streaming lists all come from the
/// store and behave as for cached resources.
#[test]
fn events_are_served_from_the_store() {
    use k8s_openapi::api::core::v1::Event;
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-events";
        create_namespace(&client, ns).await;
        let api: Api<Event> = Api::namespaced(client.clone(), ns);
        let event = |name: &str, object: &str, reason: &str| -> Event {
            serde_json::from_value(json!({
                "metadata": {"name": name},
                "involvedObject": {"kind": "Pod", "namespace": ns, "name": object},
                "reason": reason, "message": "m", "type": "Normal",
                "source": {"component": "test"},
            }))
            .unwrap()
        };
        api.create(&PostParams::default(), &event("e1", "p1", "Scheduled"))
            .await
            .unwrap();
        api.create(&PostParams::default(), &event("e2", "p2", "Pulled"))
            .await
            .unwrap();
        let sel = ListParams::default().fields("involvedObject.name=p2");
        let listed = api.list(&sel).await.unwrap();
        let got: Vec<_> = listed.items.iter().map(|e| e.name_any()).collect();
        assert_eq!(got, ["e2"]);
        let rv = listed.metadata.resource_version.clone().unwrap();

        // A watch from the list's revision sees only later matching changes.
        let wp = WatchParams::default().fields("reason=Killing");
        let mut stream = api.watch(&wp, &rv).await.unwrap().boxed();
        api.create(&PostParams::default(), &event("e3", "p1", "Pulled"))
            .await
            .unwrap();
        api.create(&PostParams::default(), &event("e4", "p1", "Killing"))
            .await
            .unwrap();
        let ev = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        match ev {
            WatchEvent::Added(e) => assert_eq!(e.name_any(), "e4"),
            other => panic!("{other:?}"),
        }

        // kube-rs's streaming-list reflector converges on the same set.
        let (reader, writer) = reflector::store::<Event>();
        let task = tokio::spawn(
            reflector(
                writer,
                watcher(api.clone(), watcher::Config::default().streaming_lists()),
            )
            .default_backoff()
            .applied_objects()
            .for_each(|_| async {}),
        );
        eventually(
            "the reflector to hold four events",
            Duration::from_secs(20),
            || {
                let n = reader.state().len();
                async move { (n == 4).then_some(()) }
            },
        )
        .await;
        task.abort();
    });
}

/// Once a resource's watch cache holds 256 objects it keeps them compressed; what clients
/// read (lists, gets, watches) is unchanged.
#[test]
fn compressed_watch_cache_serves_the_same_objects() {
    let server = RkubeServer::start();
    with_client(&server, |client| async move {
        let ns = "kc-packed";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        let body = "server { listen 80; root /srv/www; } ".repeat(10);
        for i in 0..300 {
            let name = format!("cm-{i:03}");
            let value = format!("{body}{i}");
            api.create(
                &PostParams::default(),
                &config_map(&name, &[("n", &i.to_string())], &[("v", &value)]),
            )
            .await
            .unwrap();
        }
        let listed = api.list(&ListParams::default()).await.unwrap();
        let rv = listed.metadata.resource_version.clone().unwrap();
        let ours: Vec<&ConfigMap> = listed
            .items
            .iter()
            .filter(|c| c.name_any() != "kube-root-ca.crt")
            .collect();
        assert_eq!(ours.len(), 300);
        for (i, cm) in ours.iter().enumerate() {
            assert_eq!(cm.name_any(), format!("cm-{i:03}"));
            assert_eq!(cm.data.as_ref().unwrap()["v"], format!("{body}{i}"));
        }
        // Written after the cache filled (so compressed), read back by get and watch.
        let mut stream = api
            .watch(&WatchParams::default().labels("n=late"), &rv)
            .await
            .unwrap()
            .boxed();
        let late = format!("{body}late");
        api.create(
            &PostParams::default(),
            &config_map("late", &[("n", "late")], &[("v", &late)]),
        )
        .await
        .unwrap();
        assert_eq!(api.get("late").await.unwrap().data.unwrap()["v"], late);
        assert_eq!(
            next_events(&mut stream, 1).await,
            [("ADDED".to_string(), "late".to_string(), late.clone())]
        );
        // The server says it compresses.
        let metrics = client
            .request_text(http::Request::get("/metrics").body(vec![]).unwrap())
            .await
            .unwrap();
        let dict = metrics
            .lines()
            .find(|l| l.starts_with("rkube_watch_cache_dictionary_bytes{resource=\"configmaps\"}"))
            .unwrap_or_else(|| panic!("no configmaps dictionary line in:\n{metrics}"));
        let bytes: u64 = dict.rsplit(' ').next().unwrap().parse().unwrap();
        assert!(bytes > 0, "{dict}");
    });
}

/// The established TCP connections this process has open to `port` on any address:
/// its sockets (`/proc/self/fd`) found in the kernel's tables with that remote port.
fn connections_to(port: u16) -> usize {
    let ours: BTreeSet<String> = std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|l| {
            let l = l.to_string_lossy().into_owned();
            Some(l.strip_prefix("socket:[")?.strip_suffix(']')?.to_string())
        })
        .collect();
    ["/proc/self/net/tcp", "/proc/self/net/tcp6"]
        .iter()
        .flat_map(|t| {
            std::fs::read_to_string(t)
                .unwrap_or_default()
                .lines()
                .skip(1)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .filter(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let remote_port = cols
                .get(2)
                .and_then(|r| r.rsplit(':').next())
                .and_then(|p| u16::from_str_radix(p, 16).ok());
            remote_port == Some(port)
                && cols.get(3) == Some(&"01")
                && cols.get(9).is_some_and(|inode| ours.contains(*inode))
        })
        .count()
}

/// The managers of an object's managedFields, as `manager[/subresource]`.
fn managers(obj: &Value) -> BTreeSet<String> {
    obj["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| match m["subresource"].as_str() {
            Some(sub) if !sub.is_empty() => {
                format!("{}/{sub}", m["manager"].as_str().unwrap_or(""))
            }
            _ => m["manager"].as_str().unwrap_or("").to_string(),
        })
        .collect()
}

#[test]
fn component_clients_share_one_http2_connection_and_name_their_field_manager() {
    let server = RkubeServer::start();
    let _sim = testkit::SimNodes::start(&server, "h2", &["--count", "1"]);
    run(&server, async {
        let client = runtime::client_for(&server.kubeconfig, "rkube-e2e")
            .await
            .unwrap();
        let ns = "kc-h2";
        create_namespace(&client, ns).await;
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), ns);
        // A watch stays open through a burst of 100 concurrent creates: HTTP/2
        // multiplexes them all on one connection, where HTTP/1.1 needs one each.
        let mut watch = api
            .watch(&WatchParams::default(), "0")
            .await
            .unwrap()
            .boxed();
        let creates = (0..100).map(|i| {
            let api = api.clone();
            async move {
                api.create(
                    &PostParams::default(),
                    &config_map(&format!("cm-{i:03}"), &[], &[("i", &i.to_string())]),
                )
                .await
            }
        });
        for r in futures::future::join_all(creates).await {
            r.unwrap();
        }
        let seen = next_events(&mut watch, 100).await;
        assert_eq!(seen.len(), 100);
        assert_eq!(
            connections_to(server.port),
            1,
            "one connection for all requests"
        );
        // The User-Agent names the field manager, as upstream's components are named.
        let cm = serde_json::to_value(api.get("cm-000").await.unwrap()).unwrap();
        assert_eq!(managers(&cm), BTreeSet::from(["rkube-e2e".to_string()]));
    });
    // The server's own components (in-process) and the simulated node (HTTPS) name
    // themselves too: the controller manager created the pod, the node wrote its status.
    server.kubectl_ok(
        None,
        &[
            "create",
            "deployment",
            "web",
            "--image=registry.local/web:1",
        ],
    );
    let pod = testkit::wait_for("the pod running", 30, || {
        let pods = server.get_json(&["pods", "-l", "app=web", "--show-managed-fields"]);
        pods["items"]
            .as_array()
            .and_then(|items| items.first().cloned())
            .filter(|p| p["status"]["phase"] == "Running")
    });
    let on_pod = managers(&pod);
    println!("pod managers: {on_pod:?}");
    assert!(on_pod.contains("kube-controller-manager"), "{on_pod:?}");
    assert!(on_pod.contains("rkube-sim-nodes/status"), "{on_pod:?}");
    assert!(
        !on_pod.iter().any(|m| m.starts_with("unknown")),
        "{on_pod:?}"
    );
    // As upstream, binding does not go through the field manager.
    assert!(!on_pod.contains("kube-scheduler/binding"), "{on_pod:?}");
    // The server reports its memory as upstream's process collector does, and its heap.
    let metrics = server.kubectl_ok(None, &["get", "--raw", "/metrics"]);
    for name in [
        "process_resident_memory_bytes",
        "rkube_heap_allocated_bytes",
        "rkube_heap_resident_bytes",
    ] {
        let value: f64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{name} ")))
            .unwrap_or_else(|| panic!("{name} missing from /metrics"))
            .parse()
            .unwrap();
        assert!(value > 1e6, "{name} {value}");
    }
    // The controller manager in the process: its work queues under upstream's names, and
    // its informers' subscriber backlogs; the scheduler's attempts.
    let value = |series: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(&format!("{series} ")))
            .unwrap_or_else(|| panic!("{series} missing from /metrics"))
            .parse()
            .unwrap()
    };
    assert!(value("workqueue_adds_total{name=\"replicaset\"}") >= 1.0);
    // The in-process components' clients, under the server's address.
    let host = format!("host=\"127.0.0.1:{}\"", server.port);
    assert!(
        value(&format!(
            "rest_client_requests_total{{code=\"201\",{host},method=\"POST\"}}"
        )) >= 1.0
    );
    assert!(
        value(&format!(
            "rest_client_request_duration_seconds_count{{{host},verb=\"GET\"}}"
        )) >= 1.0
    );
    assert!(value("workqueue_adds_total{name=\"deployment\"}") >= 1.0);
    assert!(value("workqueue_work_duration_seconds_count{name=\"replicaset\"}") >= 1.0);
    assert!(value("workqueue_depth{name=\"garbage_collector_attempt_to_delete\"}") >= 0.0);
    assert!(
        metrics
            .contains("workqueue_queue_duration_seconds_bucket{name=\"deployment\",le=\"1e-06\"} "),
        "upstream's buckets, printed as Go prints them"
    );
    assert!(
        metrics.contains(
            "rkube_informer_subscriber_backlog{kind=\"Pod\",subscriber=\"crates/controllers/src/"
        ),
        "informer backlogs"
    );
    assert!(
        value(
            "scheduler_schedule_attempts_total{profile=\"default-scheduler\",result=\"scheduled\"}"
        ) >= 1.0
    );
    let rs = server.get_json(&["replicasets", "-l", "app=web", "--show-managed-fields"]);
    let rs_managers = managers(&rs["items"][0]);
    assert!(
        rs_managers.contains("kube-controller-manager"),
        "{rs_managers:?}"
    );
}
