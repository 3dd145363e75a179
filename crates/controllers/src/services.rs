//! What the Endpoints and EndpointSlice controllers share (upstream's
//! `k8s.io/endpointslice/util`): which pods a Service selects, which Services a pod
//! change concerns, how a Service port resolves on a pod, the
//! `endpoints.kubernetes.io/last-change-trigger-time` tracker, and the worker loop with
//! upstream's retry budget.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use api::selector::LabelSelector;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Service, ServicePort};

use crate::cachedpod::CachedPod;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::runtime::reflector::Store;
use runtime::workqueue::WorkQueue;

use crate::informers::{self, Informer, Next};
use crate::run::object_key;

/// `v1.IsHeadlessService`: the label both controllers put on the objects of a Service
/// without a cluster IP.
pub const HEADLESS_LABEL: &str = "service.kubernetes.io/headless";
/// `v1.EndpointsLastChangeTriggerTime`.
pub const TRIGGER_TIME_ANNOTATION: &str = "endpoints.kubernetes.io/last-change-trigger-time";
/// How often a failing key is retried before it is dropped (upstream's `maxRetries`).
pub const MAX_RETRIES: u32 = 15;

/// The Service's selector as the controllers use it: `None` when the Service has none
/// (such Services get no endpoints from the controllers). An empty map counts as none,
/// as upstream's controller manager decodes it (protobuf gives it a nil map).
pub fn service_selector(svc: &Service) -> Option<LabelSelector> {
    let sel = svc.spec.as_ref()?.selector.as_ref()?;
    if sel.is_empty() {
        return None;
    }
    Some(LabelSelector::from_set(
        sel.iter().map(|(k, v)| (k.as_str(), v.as_str())),
    ))
}

fn labels_match(sel: &LabelSelector, labels: Option<&BTreeMap<String, String>>) -> bool {
    sel.matches(|k| labels.and_then(|l| l.get(k)).map(String::as_str))
}

/// The pods of the Service's namespace its selector matches.
pub fn selected_pods<'a>(svc: &Service, pods: &'a [Arc<CachedPod>]) -> Vec<&'a CachedPod> {
    let Some(sel) = service_selector(svc) else {
        return Vec::new();
    };
    let ns = svc.metadata.namespace.as_deref();
    pods.iter()
        .map(AsRef::as_ref)
        .filter(|p| p.metadata.namespace.as_deref() == ns)
        .filter(|p| labels_match(&sel, p.metadata.labels.as_ref()))
        .collect()
}

/// `getServicesForPod`: the keys of the Services of `ns` whose selector matches `labels`.
pub fn services_for_labels(
    services: &[Arc<Service>],
    ns: &str,
    labels: Option<&BTreeMap<String, String>>,
) -> BTreeSet<String> {
    services
        .iter()
        .filter(|s| s.metadata.namespace.as_deref() == Some(ns))
        .filter(|s| service_selector(s).is_some_and(|sel| labels_match(&sel, labels)))
        .map(|s| object_key(&s.metadata))
        .collect()
}

/// `IsPodReady`.
pub fn is_pod_ready(pod: &CachedPod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

fn ready_condition(pod: &CachedPod) -> Option<&k8s_openapi::api::core::v1::PodCondition> {
    pod.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == "Ready")
}

/// The pod's IPs (`status.podIPs`, else `status.podIP`).
pub fn pod_ips(pod: &CachedPod) -> Vec<String> {
    let Some(st) = pod.status.as_ref() else {
        return Vec::new();
    };
    let ips: Vec<String> = st
        .pod_ips
        .iter()
        .flatten()
        .map(|p| p.ip.clone())
        .filter(|ip| !ip.is_empty())
        .collect();
    if !ips.is_empty() {
        return ips;
    }
    st.pod_ip
        .iter()
        .filter(|ip| !ip.is_empty())
        .cloned()
        .collect()
}

/// Whether `ip` is an IPv6 address.
pub fn is_ipv6(ip: &str) -> bool {
    ip.parse::<std::net::Ipv6Addr>().is_ok()
}

/// `ShouldPodBeInEndpoints`: not terminal, with an IP, and not terminating unless
/// `include_terminating`.
pub fn should_pod_be_in_endpoints(pod: &CachedPod, include_terminating: bool) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    if matches!(phase, Some("Succeeded" | "Failed")) {
        return false;
    }
    if pod_ips(pod).is_empty() {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// `ShouldSetHostname`: the pod's `hostname` is published when its `subdomain` is the
/// Service's name (same namespace).
pub fn should_set_hostname(pod: &CachedPod, svc: &Service) -> bool {
    let spec = pod.spec.as_ref();
    let hostname = spec.and_then(|s| s.hostname.as_deref()).unwrap_or_default();
    let subdomain = spec
        .and_then(|s| s.subdomain.as_deref())
        .unwrap_or_default();
    !hostname.is_empty()
        && subdomain == svc.metadata.name.as_deref().unwrap_or_default()
        && svc.metadata.namespace == pod.metadata.namespace
}

/// `IsServiceIPSet`: a cluster IP other than `None`.
pub fn is_service_ip_set(svc: &Service) -> bool {
    let ip = svc
        .spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .unwrap_or_default();
    !ip.is_empty() && ip != "None"
}

/// Whether the Service is headless (`clusterIP: None`).
pub fn is_headless(svc: &Service) -> bool {
    svc.spec.as_ref().and_then(|s| s.cluster_ip.as_deref()) == Some("None")
}

/// The Service port's protocol (defaulted `TCP`).
pub fn port_protocol(p: &ServicePort) -> &str {
    p.protocol.as_deref().unwrap_or("TCP")
}

/// `FindPort`: the pod's port a Service port targets — the number, or the named port
/// of a container (or of a sidecar init container) with the same protocol.
pub fn find_port(pod: &CachedPod, svc_port: &ServicePort) -> Option<i32> {
    match svc_port.target_port.as_ref() {
        None => Some(svc_port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            let spec = pod.spec.as_ref()?;
            let proto = port_protocol(svc_port);
            let sidecars = spec
                .init_containers
                .iter()
                .flatten()
                .filter(|c| c.restart_policy.as_deref() == Some("Always"));
            spec.containers
                .iter()
                .chain(sidecars)
                .flat_map(|c| c.ports.iter().flatten())
                .find(|p| {
                    p.name.as_deref() == Some(name.as_str())
                        && p.protocol.as_deref().unwrap_or("TCP") == proto
                })
                .map(|p| p.container_port)
        }
    }
}

/// What of a pod matters to the endpoints, to tell which pod updates concern its
/// Services (upstream's `podEndpointsChanged`). It borrows from the pod, so the previous
/// version of each pod is kept as the informer's shared object, not as a copy.
#[derive(Clone, Debug, PartialEq)]
pub struct PodView<'a> {
    pub namespace: &'a str,
    pub labels: Option<&'a BTreeMap<String, String>>,
    hostname: (Option<&'a str>, Option<&'a str>),
    deleting: bool,
    ready: bool,
    ips: Vec<&'a str>,
}

impl<'a> PodView<'a> {
    pub fn of(pod: &'a CachedPod) -> PodView<'a> {
        let spec = pod.spec.as_ref();
        PodView {
            namespace: pod.metadata.namespace.as_deref().unwrap_or_default(),
            labels: pod.metadata.labels.as_ref().filter(|l| !l.is_empty()),
            hostname: (
                spec.and_then(|s| s.hostname.as_deref()),
                spec.and_then(|s| s.subdomain.as_deref()),
            ),
            deleting: pod.metadata.deletion_timestamp.is_some(),
            ready: is_pod_ready(pod),
            ips: pod
                .status
                .as_ref()
                .and_then(|s| s.pod_ips.as_ref())
                .map(|ips| ips.iter().map(|i| i.ip.as_str()).collect())
                .unwrap_or_default(),
        }
    }
}

/// `GetServicesToUpdateOnPodChange` (with `addPod`/`deletePod` when there is no old or
/// no new view): the Services whose endpoints a pod change may alter.
pub fn services_to_update(
    services: &[Arc<Service>],
    old: Option<&PodView<'_>>,
    new: Option<&PodView<'_>>,
) -> BTreeSet<String> {
    match (old, new) {
        (None, None) => BTreeSet::new(),
        (Some(p), None) | (None, Some(p)) => services_for_labels(services, p.namespace, p.labels),
        (Some(old), Some(new)) => {
            let labels_changed = old.labels != new.labels || old.hostname != new.hostname;
            let pod_changed =
                old.deleting != new.deleting || old.ready != new.ready || old.ips != new.ips;
            if !labels_changed && !pod_changed {
                return BTreeSet::new();
            }
            let now = services_for_labels(services, new.namespace, new.labels);
            if !labels_changed {
                return now;
            }
            let before = services_for_labels(services, old.namespace, old.labels);
            if pod_changed {
                now.union(&before).cloned().collect()
            } else {
                now.symmetric_difference(&before).cloned().collect()
            }
        }
    }
}

/// Upstream's `TriggerTimeTracker`: per Service, the pod trigger times (their Ready
/// condition's `lastTransitionTime`) and Service trigger time (its creation) seen at the
/// last sync. The time to publish is the earliest one that changed since (the Service's
/// creation for a Service seen for the first time), or none.
#[derive(Debug, Default)]
pub struct TriggerTimeTracker {
    states: HashMap<String, ServiceState>,
}

#[derive(Debug, Default, Clone)]
struct ServiceState {
    service: Option<Timestamp>,
    pods: HashMap<String, Timestamp>,
}

impl TriggerTimeTracker {
    /// `ComputeEndpointLastChangeTriggerTime`; updates the state.
    pub fn compute(&mut self, key: &str, svc: &Service, pods: &[&CachedPod]) -> Option<Timestamp> {
        let known = self.states.get(key);
        let was_known = known.is_some();
        let state = known.cloned().unwrap_or_default();
        let mut min: Option<Timestamp> = None;
        let mut pod_times = HashMap::new();
        for pod in pods {
            let Some(t) = ready_condition(pod)
                .and_then(|c| c.last_transition_time.as_ref())
                .map(|t| t.0)
            else {
                continue;
            };
            let name = pod.metadata.name.clone().unwrap_or_default();
            if state.pods.get(&name).is_none_or(|last| t > *last) {
                min = Some(min.map_or(t, |m| m.min(t)));
            }
            pod_times.insert(name, t);
        }
        let svc_time = svc.metadata.creation_timestamp.as_ref().map(|t| t.0);
        if let Some(t) = svc_time
            && state.service.is_none_or(|last| t > last)
        {
            min = Some(min.map_or(t, |m| m.min(t)));
        }
        self.states.insert(
            key.to_string(),
            ServiceState {
                service: svc_time,
                pods: pod_times,
            },
        );
        if was_known { min } else { svc_time }
    }

    /// `DeleteService`.
    pub fn delete(&mut self, key: &str) {
        self.states.remove(key);
    }
}

/// The annotation value of a trigger time (Go's RFC 3339 with nanoseconds, trailing
/// zeros dropped).
pub fn format_trigger_time(t: Timestamp) -> String {
    t.to_string()
}

/// Feeds `queue` from Service events (every change of a Service, its deletion) and pod
/// events (the Services a pod change concerns, by its old and new labels).
pub fn follow_services_and_pods(
    services: &Arc<Informer<Service>>,
    pods: &Arc<Informer<CachedPod>>,
    queue: &WorkQueue<String>,
) {
    let mut svc_events = services.subscribe();
    let q = queue.clone();
    let store = services.store.clone();
    tokio::spawn(async move {
        loop {
            match informers::next(&mut svc_events).await {
                Next::Apply(s) | Next::Delete(s) => q.add(object_key(&s.metadata)),
                Next::Other => {}
                Next::Resync => enqueue_all(&store, &q),
                Next::Closed => break,
            }
        }
    });
    let mut pod_events = pods.subscribe();
    let q = queue.clone();
    let store = services.store.clone();
    let pod_store = pods.store.clone();
    tokio::spawn(async move {
        // Each pod's last version, to compare an update with: the informer's own object
        // (shared, not a copy). A list's objects are the store's only once it ends, so at
        // the start and end of one this is re-read from the store (which also forgets pods
        // deleted while the watch was down).
        let mut seen: HashMap<String, Arc<CachedPod>> = HashMap::new();
        loop {
            let (pod, gone) = match informers::next(&mut pod_events).await {
                Next::Apply(p) => (p, false),
                Next::Delete(p) => (p, true),
                Next::Other => {
                    seen = pod_store
                        .state()
                        .into_iter()
                        .map(|p| (p.metadata.uid.clone().unwrap_or_default(), p))
                        .collect();
                    continue;
                }
                Next::Resync => {
                    seen.clear();
                    enqueue_all(&store, &q);
                    continue;
                }
                Next::Closed => break,
            };
            let uid = pod.metadata.uid.clone().unwrap_or_default();
            let old = if gone {
                seen.remove(&uid)
            } else {
                seen.insert(uid, Arc::clone(&pod))
            };
            let view = PodView::of(&pod);
            let keys = if gone {
                services_to_update(&store.state(), None, Some(&view))
            } else {
                let old = old.as_deref().map(PodView::of);
                services_to_update(&store.state(), old.as_ref(), Some(&view))
            };
            for key in keys {
                q.add(key);
            }
        }
    });
}

/// Queues every cached Service.
pub fn enqueue_all(services: &Store<Service>, queue: &WorkQueue<String>) {
    for s in services.state() {
        queue.add(object_key(&s.metadata));
    }
}

/// Starts `workers` workers running `sync` on the keys of `queue`, in a span per
/// reconcile: a success forgets the key's back-off, a failure retries it rate-limited
/// up to [`MAX_RETRIES`] times (upstream's `handleErr`).
pub fn spawn_workers<S, F, Fut, E>(
    shared: &Arc<S>,
    queue: &WorkQueue<String>,
    workers: usize,
    controller: &'static str,
    sync: F,
) where
    S: Send + Sync + 'static,
    F: Fn(Arc<S>, String) -> Fut + Copy + Send + 'static,
    Fut: std::future::Future<Output = Result<(), E>> + Send,
    E: std::fmt::Display,
{
    for _ in 0..workers.max(1) {
        let s = Arc::clone(shared);
        let queue = queue.clone();
        tokio::spawn(async move {
            while let Some(key) = queue.get().await {
                let span = tracing::debug_span!("reconcile", controller, %key);
                let result =
                    tracing::Instrument::instrument(sync(Arc::clone(&s), key.clone()), span).await;
                match result {
                    Ok(()) => queue.forget(&key),
                    Err(e) if queue.num_requeues(&key) < MAX_RETRIES => {
                        tracing::info!(controller, %key, error = %e, "sync failed; retrying");
                        queue.add_rate_limited(key.clone());
                    }
                    Err(e) => {
                        tracing::warn!(controller, %key, error = %e, "retry budget exceeded; dropping the key");
                        queue.forget(&key);
                    }
                }
                queue.done(&key);
            }
        });
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
pub(crate) mod tests {
    use super::*;
    use serde_json::{Value, json};

    pub(crate) fn svc(v: Value) -> Service {
        serde_json::from_value(v).unwrap()
    }

    /// A pod `name` on `node` with `ip`, ready or not, labelled `app=web`.
    pub(crate) fn pod(name: &str, ip: &str, ready: bool) -> CachedPod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                "labels": {"app": "web"}},
            "spec": {"nodeName": "node-a", "containers": [{"name": "c", "image": "i",
                "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}]}]},
            "status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                "conditions": [{"type": "Ready", "status": if ready {"True"} else {"False"},
                    "lastTransitionTime": "2024-01-01T00:00:10Z"}]}
        }))
        .unwrap()
    }

    pub(crate) fn web_service() -> Service {
        svc(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "svc-uid",
                "creationTimestamp": "2024-01-01T00:00:00Z", "labels": {"team": "a"}},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.43.0.10",
                "ipFamilies": ["IPv4"],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
        }))
    }

    #[test]
    fn selector_none_and_empty_select_nothing() {
        let p = Arc::new(pod("a", "10.0.0.1", true));
        let mut s = web_service();
        assert_eq!(selected_pods(&s, std::slice::from_ref(&p)).len(), 1);
        s.spec.as_mut().unwrap().selector = Some(BTreeMap::new());
        assert!(selected_pods(&s, std::slice::from_ref(&p)).is_empty());
        s.spec.as_mut().unwrap().selector = None;
        assert!(selected_pods(&s, &[p]).is_empty());
    }

    #[test]
    fn find_port_by_number_and_name() {
        let p = pod("a", "10.0.0.1", true);
        let mut sp: ServicePort =
            serde_json::from_value(json!({"port": 80, "protocol": "TCP", "targetPort": "http"}))
                .unwrap();
        assert_eq!(find_port(&p, &sp), Some(8080));
        sp.protocol = Some("UDP".into());
        assert_eq!(find_port(&p, &sp), None);
        sp.target_port = Some(IntOrString::String("nope".into()));
        sp.protocol = Some("TCP".into());
        assert_eq!(find_port(&p, &sp), None);
        sp.target_port = Some(IntOrString::Int(9000));
        assert_eq!(find_port(&p, &sp), Some(9000));
        // A sidecar's named port counts.
        let p: CachedPod = serde_json::from_value(json!({"spec": {"containers": [],
            "initContainers": [{"name": "s", "restartPolicy": "Always",
                "ports": [{"name": "side", "containerPort": 7000}]}]}}))
        .unwrap();
        sp.target_port = Some(IntOrString::String("side".into()));
        assert_eq!(find_port(&p, &sp), Some(7000));
    }

    #[test]
    fn pods_in_endpoints() {
        let mut p = pod("a", "10.0.0.1", true);
        assert!(should_pod_be_in_endpoints(&p, false));
        p.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            Timestamp::UNIX_EPOCH,
        ));
        assert!(!should_pod_be_in_endpoints(&p, false));
        assert!(should_pod_be_in_endpoints(&p, true));
        let mut p = pod("b", "10.0.0.2", true);
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(!should_pod_be_in_endpoints(&p, true));
        let mut p = pod("c", "10.0.0.3", true);
        p.status.as_mut().unwrap().pod_ip = None;
        p.status.as_mut().unwrap().pod_ips = None;
        assert!(!should_pod_be_in_endpoints(&p, true));
    }

    #[test]
    fn pod_changes_concern_old_and_new_services() {
        let web = Arc::new(web_service());
        let mut other = web_service();
        other.metadata.name = Some("other".into());
        other.spec.as_mut().unwrap().selector =
            Some([("app".to_string(), "other".to_string())].into());
        let services = vec![web, Arc::new(other)];
        let a = pod("a", "10.0.0.1", true);
        let v1 = PodView::of(&a);
        assert_eq!(
            services_to_update(&services, None, Some(&v1)),
            ["default/web".to_string()].into()
        );
        // Nothing relevant changed.
        assert!(services_to_update(&services, Some(&v1), Some(&v1)).is_empty());
        // Readiness changed: the current services.
        let mut b = a.clone();
        b.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
        let v2 = PodView::of(&b);
        assert_eq!(
            services_to_update(&services, Some(&v1), Some(&v2)),
            ["default/web".to_string()].into()
        );
        // Labels changed only: the services gained or lost.
        let mut c = a.clone();
        c.metadata.labels = Some([("app".to_string(), "other".to_string())].into());
        let v3 = PodView::of(&c);
        assert_eq!(
            services_to_update(&services, Some(&v1), Some(&v3)),
            ["default/other".to_string(), "default/web".to_string()].into()
        );
    }

    #[test]
    fn trigger_times() {
        let s = web_service();
        let mut t = TriggerTimeTracker::default();
        let a = pod("a", "10.0.0.1", true);
        // First sync: the Service's creation.
        let first = t.compute("default/web", &s, &[&a]).unwrap();
        assert_eq!(format_trigger_time(first), "2024-01-01T00:00:00Z");
        // Nothing changed: none.
        assert_eq!(t.compute("default/web", &s, &[&a]), None);
        // A pod that became ready later: its transition.
        let mut b = pod("b", "10.0.0.2", true);
        b.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].last_transition_time =
            Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                "2024-01-01T00:01:00.5Z".parse().unwrap(),
            ));
        let t2 = t.compute("default/web", &s, &[&a, &b]).unwrap();
        assert_eq!(format_trigger_time(t2), "2024-01-01T00:01:00.5Z");
        t.delete("default/web");
        assert!(t.compute("default/web", &s, &[&a, &b]).is_some());
    }
}
