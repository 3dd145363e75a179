//! The in-process transport (`apiserver::inprocess`): a kube-rs client whose requests go
//! straight to the server's handler, over a server on the in-memory store. Reads, writes
//! and watches work (the watch body streams), and the security chain runs as for a
//! network request: the client certificate is verified against the client CA (a
//! self-signed one is a 401), bearer tokens are verified (a forged one is a 401), and an
//! identity without rights gets a 403.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use apiserver::inprocess::InProcess;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Pod, ServiceAccount};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use serde_json::{Value, json};

struct Env {
    _dir: tempfile::TempDir,
    running: apiserver::Running,
}

async fn start() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let mut config = apiserver::Config::new(dir.path());
    config.bind_address = [127, 0, 0, 1].into();
    config.https_port = 0;
    config.compaction_interval = Duration::ZERO;
    let running = apiserver::start(
        config,
        Arc::new(store::memory::MemoryBackend::new()),
        Arc::new(store::SystemClock),
    )
    .await
    .unwrap();
    Env { _dir: dir, running }
}

impl Env {
    /// A client presenting a client certificate of the server's client CA.
    fn cert_client(&self, cn: &str, groups: &[&str]) -> kube::Client {
        let (cert, _key) = self.running.pki.issue_client(cn, groups).unwrap();
        InProcess::with_certificates(Arc::clone(&self.running.server), cert.as_bytes())
            .unwrap()
            .client()
    }

    fn token_client(&self, token: &str) -> kube::Client {
        InProcess::with_token(Arc::clone(&self.running.server), token)
            .unwrap()
            .client()
    }
}

/// The user the server sees (`SelfSubjectReview`).
async fn whoami(client: &kube::Client) -> Result<String, kube::Error> {
    let body = json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"});
    let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
        .header("content-type", "application/json")
        .body(serde_json::to_vec(&body).unwrap())
        .unwrap();
    let answer: Value = client.request(req).await?;
    Ok(answer["status"]["userInfo"]["username"]
        .as_str()
        .unwrap_or_default()
        .to_string())
}

fn code(r: Result<impl std::fmt::Debug, kube::Error>) -> u16 {
    match r {
        Err(kube::Error::Api(s)) => s.code,
        other => panic!("expected an API error, got {other:?}"),
    }
}

/// The next event of a watch, within 10 s.
async fn next_event<T>(
    events: &mut (impl futures::Stream<Item = Result<T, kube::Error>> + Unpin),
) -> T {
    tokio::time::timeout(Duration::from_secs(10), events.try_next())
        .await
        .expect("no watch event within 10 s")
        .unwrap()
        .unwrap()
}

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_writes_and_watches_with_a_client_certificate() {
    let env = start().await;
    let client = env.cert_client("in-process-admin", &["system:masters"]);
    assert_eq!(whoami(&client).await.unwrap(), "in-process-admin");
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let created = cms
        .create(&PostParams::default(), &config_map("one"))
        .await
        .unwrap();
    assert!(created.metadata.resource_version.is_some());
    let got = cms.get("one").await.unwrap();
    assert_eq!(got.data.unwrap()["k"], "v");
    let list = cms.list(&ListParams::default()).await.unwrap();
    assert!(
        list.items
            .iter()
            .any(|c| c.metadata.name.as_deref() == Some("one"))
    );
    assert_eq!(
        code(cms.create(&PostParams::default(), &config_map("one")).await),
        409
    );

    // A watch from the list's revision streams the next create.
    let rv = list.metadata.resource_version.unwrap();
    let mut events = cms
        .watch(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap()
        .boxed();
    cms.create(&PostParams::default(), &config_map("two"))
        .await
        .unwrap();
    let event = next_event(&mut events).await;
    match event {
        WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_deref(), Some("two")),
        other => panic!("expected ADDED two, got {other:?}"),
    }

    // A server-side apply is counted as APPLY, a merge patch as PATCH.
    let apply = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "two", "namespace": "default"}, "data": {"k": "applied"}});
    cms.patch(
        "two",
        &PatchParams::apply("test").force(),
        &Patch::Apply(&apply),
    )
    .await
    .unwrap();
    cms.patch(
        "two",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"m": "1"}})),
    )
    .await
    .unwrap();

    // The requests went through the server's request metrics.
    let metrics = env
        .running
        .server
        .metrics
        .render(&env.running.server.registry);
    assert!(
        metrics
            .lines()
            .any(|l| l.starts_with("apiserver_request_total")
                && l.contains("resource=\"configmaps\"")
                && l.contains("verb=\"WATCH\"")),
        "{metrics}"
    );
    // As upstream prints them: the code first, then the labels in order; a series per
    // code; creates (not watches) timed, whatever their code (two made, one refused).
    let labels = "component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"POST\",version=\"v1\"";
    for line in [
        format!("apiserver_request_total{{code=\"201\",{labels}}} 2"),
        format!("apiserver_request_total{{code=\"409\",{labels}}} 1"),
        format!("apiserver_request_duration_seconds_count{{{labels}}} 3"),
        format!("apiserver_request_duration_seconds_bucket{{{labels},le=\"+Inf\"}} 3"),
        "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"APPLY\",version=\"v1\"} 1".to_string(),
        "apiserver_request_total{code=\"200\",component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"resource\",subresource=\"\",verb=\"PATCH\",version=\"v1\"} 1".to_string(),
    ] {
        assert!(metrics.lines().any(|l| l == line), "no {line} in {metrics}");
    }
    assert!(
        !metrics.contains("apiserver_request_duration_seconds_count{component=\"apiserver\",dry_run=\"\",group=\"\",resource=\"configmaps\",scope=\"namespace\",subresource=\"\",verb=\"WATCH\""),
        "{metrics}"
    );
}

/// A watch whose client reads late gets the burst queued for it (sent as fewer, bigger
/// frames) whole and in order.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_queued_for_a_watch_arrives_whole_and_in_order() {
    let env = start().await;
    let client = env.cert_client("in-process-admin", &["system:masters"]);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let rv = cms
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut events = cms
        .watch(&WatchParams::default().timeout(60), &rv)
        .await
        .unwrap()
        .boxed();
    let names: Vec<String> = (0..300).map(|i| format!("burst-{i:03}")).collect();
    for name in &names {
        cms.create(&PostParams::default(), &config_map(name))
            .await
            .unwrap();
    }
    for want in &names {
        match next_event(&mut events).await {
            WatchEvent::Added(cm) => assert_eq!(cm.metadata.name.as_ref(), Some(want)),
            other => panic!("unexpected {other:?}"),
        }
    }
}

/// Metadata-only lists and watches (`as=PartialObjectMetadata`, what the garbage
/// collector's informers ask for) carry each object's whole metadata and nothing else.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metadata_only_lists_and_watches() {
    let env = start().await;
    let client = env.cert_client("in-process-admin", &["system:masters"]);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut one = config_map("one");
    one.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    one.metadata.annotations = Some([("note".to_string(), "a \"quoted\" é".to_string())].into());
    let created = cms.create(&PostParams::default(), &one).await.unwrap();

    let list = cms.list_metadata(&ListParams::default()).await.unwrap();
    assert_eq!(list.types.kind, "PartialObjectMetadataList");
    assert_eq!(list.types.api_version, "meta.k8s.io/v1");
    let item = list
        .items
        .iter()
        .find(|m| m.metadata.name.as_deref() == Some("one"))
        .expect("one is listed");
    assert_eq!(item.metadata, created.metadata);
    // Nothing but the metadata, as JSON on the wire.
    let req = http::Request::get("/api/v1/namespaces/default/configmaps")
        .header(
            "accept",
            "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1",
        )
        .body(Vec::new())
        .unwrap();
    let raw: Value = client.request(req).await.unwrap();
    let first = raw["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == "one")
        .unwrap();
    let keys: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["apiVersion", "kind", "metadata"]);
    assert_eq!(first["kind"], "PartialObjectMetadata");
    assert_eq!(first["metadata"]["annotations"]["note"], "a \"quoted\" é");

    let rv = list.metadata.resource_version.unwrap();
    let mut events = cms
        .watch_metadata(&WatchParams::default().timeout(30), &rv)
        .await
        .unwrap()
        .boxed();
    let two = cms
        .create(&PostParams::default(), &config_map("two"))
        .await
        .unwrap();
    cms.delete("one", &Default::default()).await.unwrap();
    for (want_name, want_meta) in [("two", &two.metadata), ("one", &created.metadata)] {
        let event = next_event(&mut events).await;
        match event {
            WatchEvent::Added(m) if want_name == "two" => {
                assert_eq!(&m.metadata, want_meta);
                assert_eq!(m.types.unwrap().kind, "PartialObjectMetadata");
            }
            WatchEvent::Deleted(m) if want_name == "one" => {
                assert_eq!(m.metadata.name.as_deref(), Some("one"));
                assert_eq!(m.metadata.labels, want_meta.labels);
            }
            other => panic!("expected an event for {want_name}, got {other:?}"),
        }
    }
}

/// Creates of one request body (a controller's, with `generateName`) get the same
/// managedFields, whether computed or remembered; another body gets its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn creates_of_one_body_are_managed_alike() {
    let env = start().await;
    let client = env.cert_client("in-process-admin", &["system:masters"]);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let body = |data: Value| -> ConfigMap {
        serde_json::from_value(
            json!({"metadata": {"generateName": "cm-", "labels": {"app": "a"}},
                                      "data": data}),
        )
        .unwrap()
    };
    let pp = PostParams {
        field_manager: Some("controller".into()),
        ..Default::default()
    };
    let fields = |cm: &ConfigMap| -> Vec<(String, String, Value)> {
        cm.metadata
            .managed_fields
            .iter()
            .flatten()
            .map(|m| {
                (
                    m.manager.clone().unwrap_or_default(),
                    m.operation.clone().unwrap_or_default(),
                    serde_json::to_value(&m.fields_v1).unwrap(),
                )
            })
            .collect()
    };
    let first = cms.create(&pp, &body(json!({"k": "v"}))).await.unwrap();
    let second = cms.create(&pp, &body(json!({"k": "v"}))).await.unwrap();
    assert_ne!(first.metadata.name, second.metadata.name);
    assert_eq!(fields(&first), fields(&second));
    assert_eq!(
        fields(&first),
        [(
            "controller".to_string(),
            "Update".to_string(),
            json!({"f:data": {".": {}, "f:k": {}}, "f:metadata": {"f:generateName": {}, "f:labels": {".": {}, "f:app": {}}}})
        )]
    );
    assert!(second.metadata.managed_fields.unwrap()[0].time.is_some());
    // Another body, or another manager, is its own.
    let other = cms
        .create(&pp, &body(json!({"k": "v", "j": "w"})))
        .await
        .unwrap();
    assert_eq!(
        fields(&other)[0].2["f:data"],
        json!({".": {}, "f:j": {}, "f:k": {}})
    );
    let by_other = cms
        .create(&PostParams::default(), &body(json!({"k": "v"})))
        .await
        .unwrap();
    assert_ne!(fields(&by_other)[0].0, "controller");
    assert_eq!(fields(&by_other)[0].2, fields(&first)[0].2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_security_chain_runs() {
    let env = start().await;
    // Authenticated, but without rights: RBAC's 403.
    let nobody = env.cert_client("nobody", &[]);
    assert_eq!(whoami(&nobody).await.unwrap(), "nobody");
    let cms: Api<ConfigMap> = Api::namespaced(nobody, "default");
    assert_eq!(code(cms.list(&ListParams::default()).await), 403);
    assert_eq!(
        code(cms.create(&PostParams::default(), &config_map("x")).await),
        403
    );

    // A certificate the client CA did not sign: 401, whatever it claims.
    let forged = rcgen::generate_simple_self_signed(vec!["admin".to_string()]).unwrap();
    let forged = InProcess::with_certificates(
        Arc::clone(&env.running.server),
        forged.cert.pem().as_bytes(),
    )
    .unwrap()
    .client();
    assert_eq!(code(whoami(&forged).await), 401);
    let cms: Api<ConfigMap> = Api::namespaced(forged, "default");
    assert_eq!(code(cms.list(&ListParams::default()).await), 401);

    // Not a certificate at all: no transport.
    assert!(InProcess::with_certificates(Arc::clone(&env.running.server), b"junk").is_err());

    // A forged bearer token: 401.
    assert_eq!(code(whoami(&env.token_client("not-a-token")).await), 401);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn service_account_tokens() {
    let env = start().await;
    let admin = env.cert_client("in-process-admin", &["system:masters"]);
    let accounts: Api<ServiceAccount> = Api::namespaced(admin.clone(), "default");
    let sa: ServiceAccount =
        serde_json::from_value(json!({"metadata": {"name": "robot"}})).unwrap();
    accounts.create(&PostParams::default(), &sa).await.unwrap();
    let req = http::Request::post("/api/v1/namespaces/default/serviceaccounts/robot/token")
        .header("content-type", "application/json")
        .body(
            serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}))
            .unwrap(),
        )
        .unwrap();
    let answer: Value = admin.request(req).await.unwrap();
    let token = answer["status"]["token"].as_str().unwrap();

    let robot = env.token_client(token);
    assert_eq!(
        whoami(&robot).await.unwrap(),
        "system:serviceaccount:default:robot"
    );
    let cms: Api<ConfigMap> = Api::namespaced(robot, "default");
    assert_eq!(code(cms.list(&ListParams::default()).await), 403);
}

/// `pods/binding` as upstream's `BindingREST`: admission sees the Binding, the pod is
/// written straight through storage (no field manager entry, no pod validation), the
/// PodScheduled condition is replaced whole, and every refusal is the upstream one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binding_assigns_a_pod_as_upstream() {
    let env = start().await;
    let client = env.cert_client("in-process-admin", &["system:masters"]);
    let sas: Api<ServiceAccount> = Api::namespaced(client.clone(), "default");
    sas.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "default"}})).unwrap(),
    )
    .await
    .unwrap();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let pod = |name: &str, gated: bool| -> Pod {
        let mut spec = json!({"containers": [{"name": "c", "image": "busybox"}],
                              "automountServiceAccountToken": false});
        if gated {
            spec["schedulingGates"] = json!([{"name": "example.com/gate"}]);
        }
        serde_json::from_value(json!({"metadata": {"name": name}, "spec": spec})).unwrap()
    };
    let created = pods
        .create(&PostParams::default(), &pod("a", false))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    // An earlier failed attempt left PodScheduled=False with a reason and a message.
    pods.patch_status(
        "a",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"status": {"conditions": [{
            "type": "PodScheduled", "status": "False", "reason": "Unschedulable",
            "message": "0/1 nodes are available"}]}})),
    )
    .await
    .unwrap();
    let bind = |pod: &str, body: Value, dry_run: bool| {
        let client = client.clone();
        let url = format!(
            "/api/v1/namespaces/default/pods/{pod}/binding{}",
            if dry_run { "?dryRun=All" } else { "" }
        );
        async move {
            let req = http::Request::post(url)
                .header("content-type", "application/json")
                .body(serde_json::to_vec(&body).unwrap())
                .unwrap();
            client.request::<Value>(req).await
        }
    };
    let binding = |name: &str, uid: &str, node: &str| {
        json!({"apiVersion": "v1", "kind": "Binding",
               "metadata": {"name": name, "uid": uid, "annotations": {"bound-by": "test"}},
               "target": {"kind": "Node", "name": node}})
    };
    let message = |r: Result<Value, kube::Error>| match r {
        Err(kube::Error::Api(s)) => (s.code, s.message),
        other => panic!("expected an API error, got {other:?}"),
    };

    // Refusals before the pod is touched.
    assert_eq!(
        message(bind("a", binding("b", &uid, "n1"), false).await),
        (
            400,
            "name in URL does not match name in Binding object".to_string()
        )
    );
    let (code_, msg) = message(bind("a", binding("a", &uid, ""), false).await);
    assert_eq!(code_, 422, "{msg}");
    assert!(msg.contains("target.name: Required value"), "{msg}");
    let (code_, msg) = message(bind("a", binding("a", "other-uid", "n1"), false).await);
    assert_eq!(code_, 409, "{msg}");
    assert!(
        msg.contains(&format!(
            "Precondition failed: UID in precondition: other-uid, UID in object meta: {uid}"
        )),
        "{msg}"
    );
    assert_eq!(
        message(bind("missing", binding("missing", "", "n1"), false).await).0,
        404
    );
    // A dry run answers as the write would and writes nothing.
    bind("a", binding("a", &uid, "n1"), true).await.unwrap();
    assert_eq!(pods.get("a").await.unwrap().spec.unwrap().node_name, None);

    let answer = bind("a", binding("a", &uid, "n1"), false).await.unwrap();
    assert_eq!(answer["status"], "Success");
    assert_eq!(answer["code"], 201);
    let bound = pods.get("a").await.unwrap();
    assert_eq!(
        bound.spec.as_ref().unwrap().node_name.as_deref(),
        Some("n1")
    );
    assert_eq!(
        bound.metadata.annotations.as_ref().unwrap()["bound-by"],
        "test"
    );
    let conditions = bound.status.as_ref().unwrap().conditions.clone().unwrap();
    let scheduled = conditions
        .iter()
        .find(|c| c.type_ == "PodScheduled")
        .unwrap();
    assert_eq!(scheduled.status, "True");
    assert_eq!(scheduled.reason, None);
    assert_eq!(scheduled.message, None);
    assert!(scheduled.last_transition_time.is_some());
    let managers: Vec<String> = bound
        .metadata
        .managed_fields
        .iter()
        .flatten()
        .map(|m| format!("{:?}/{:?}", m.manager, m.subresource))
        .collect();
    assert!(
        !managers.iter().any(|m| m.contains("binding")),
        "{managers:?}"
    );
    assert_ne!(
        bound.metadata.resource_version,
        created.metadata.resource_version
    );

    // Bound once only; a gated pod is not bound at all.
    let (code_, msg) = message(bind("a", binding("a", &uid, "n2"), false).await);
    assert_eq!(
        (code_, msg.as_str()),
        (
            409,
            "Operation cannot be fulfilled on pods/binding \"a\": pod a is already assigned to node \"n1\""
        )
    );
    pods.create(&PostParams::default(), &pod("gated", true))
        .await
        .unwrap();
    let (code_, msg) = message(bind("gated", binding("gated", "", "n1"), false).await);
    assert_eq!(code_, 409, "{msg}");
    assert!(
        msg.ends_with("pod gated has non-empty .spec.schedulingGates"),
        "{msg}"
    );
    // A binding without annotations leaves the pod without any (no empty map).
    pods.create(&PostParams::default(), &pod("plain", false))
        .await
        .unwrap();
    bind(
        "plain",
        json!({"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "plain"},
               "target": {"name": "n1"}}),
        false,
    )
    .await
    .unwrap();
    let plain = pods.get("plain").await.unwrap();
    assert_eq!(plain.spec.unwrap().node_name.as_deref(), Some("n1"));
    assert_eq!(plain.metadata.annotations, None);
}
