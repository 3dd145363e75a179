//! The Endpoints controller (upstream's `pkg/controller/endpoint`): one Endpoints object
//! per Service with a selector, named as the Service, listing the selected pods' IPs —
//! ready ones under `addresses`, the others under `notReadyAddresses` — per resolved
//! target port, repacked as upstream's `RepackSubsets`, truncated at 1000 addresses with
//! the `endpoints.kubernetes.io/over-capacity: truncated` annotation. [`plan`] is the pure
//! decision; [`run_endpoints`] feeds it from the Service, pod and Endpoints informers and
//! writes as the `endpoint-controller` service account.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{
    EndpointAddress, EndpointPort, EndpointSubset, Endpoints, ObjectReference, Service,
};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, KubeSink, Recorder, RecorderConfig};
use runtime::workqueue::WorkQueue;

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next};
use crate::services::{self, HEADLESS_LABEL, TRIGGER_TIME_ANNOTATION, TriggerTimeTracker, is_ipv6};
use crate::util::lock;

/// Upstream's `maxCapacity`: the most addresses an Endpoints object holds.
pub const MAX_CAPACITY: usize = 1000;
/// `v1.EndpointsOverCapacity`.
pub const OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";
/// The annotation leader election records sit under (such Endpoints are never cleaned up).
const LEADER_ANNOTATION: &str = "control-plane.alpha.kubernetes.io/leader";

/// `podToEndpointAddressForService`: the pod's address in the Service's first IP family
/// (from `ipFamilies`, else the cluster IP, else — headless — the pod IP), with its node
/// and a reference to the pod; `None` when the pod has no IP of that family.
pub fn pod_address(svc: &Service, pod: &CachedPod) -> Option<EndpointAddress> {
    let spec = svc.spec.as_ref();
    let ipv6 = match spec
        .and_then(|s| s.ip_families.as_ref())
        .and_then(|f| f.first())
    {
        Some(family) => family == "IPv6",
        None if services::is_service_ip_set(svc) => is_ipv6(
            spec.and_then(|s| s.cluster_ip.as_deref())
                .unwrap_or_default(),
        ),
        None => is_ipv6(
            pod.status
                .as_ref()
                .and_then(|s| s.pod_ip.as_deref())
                .unwrap_or_default(),
        ),
    };
    let ip = services::pod_ips(pod)
        .into_iter()
        .find(|ip| is_ipv6(ip) == ipv6)?;
    Some(EndpointAddress {
        ip,
        hostname: None,
        node_name: Some(
            pod.spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
        ),
        target_ref: Some(pod_reference(pod)),
    })
}

/// The `targetRef` of a pod's endpoint.
pub fn pod_reference(pod: &CachedPod) -> ObjectReference {
    ObjectReference {
        kind: Some("Pod".into()),
        namespace: pod.metadata.namespace.clone(),
        name: pod.metadata.name.clone(),
        uid: pod.metadata.uid.clone(),
        ..Default::default()
    }
}

fn none_if_empty<T>(v: Vec<T>) -> Option<Vec<T>> {
    if v.is_empty() { None } else { Some(v) }
}

/// The subsets the selected `pods` give (before repacking): one subset per pod and
/// resolved port (upstream's `addEndpointSubset`), ready or not as the pod's Ready
/// condition says unless the Service publishes not-ready addresses.
fn raw_subsets(svc: &Service, pods: &[&CachedPod]) -> Vec<EndpointSubset> {
    let spec = svc.spec.clone().unwrap_or_default();
    let tolerate_unready = spec.publish_not_ready_addresses.unwrap_or(false);
    let ports = spec.ports.clone().unwrap_or_default();
    let mut subsets = Vec::new();
    for pod in pods {
        if !services::should_pod_be_in_endpoints(pod, tolerate_unready) {
            continue;
        }
        let Some(mut addr) = pod_address(svc, pod) else {
            tracing::debug!(pod = ?pod.metadata.name, "no pod IP of the service's family");
            continue;
        };
        if services::should_set_hostname(pod, svc) {
            addr.hostname = pod.spec.as_ref().and_then(|s| s.hostname.clone());
        }
        let ready = tolerate_unready || services::is_pod_ready(pod);
        let subset = |port: Option<EndpointPort>| {
            let (addresses, not_ready) = if ready {
                (Some(vec![addr.clone()]), None)
            } else {
                (None, Some(vec![addr.clone()]))
            };
            EndpointSubset {
                addresses,
                not_ready_addresses: not_ready,
                ports: port.map(|p| vec![p]),
            }
        };
        if ports.is_empty() {
            // A headless Service may have no ports.
            if services::is_headless(svc) {
                subsets.push(subset(None));
            }
            continue;
        }
        for sp in &ports {
            let Some(number) = services::find_port(pod, sp) else {
                tracing::debug!(pod = ?pod.metadata.name, port = ?sp.name, "no suitable port");
                continue;
            };
            subsets.push(subset(Some(EndpointPort {
                name: sp.name.clone().filter(|n| !n.is_empty()),
                port: number,
                protocol: Some(services::port_protocol(sp).to_string()),
                app_protocol: sp.app_protocol.clone(),
            })));
        }
    }
    subsets
}

/// The subsets for the Service's selected `pods`, repacked and sorted.
pub fn desired_subsets(svc: &Service, pods: &[&CachedPod]) -> Vec<EndpointSubset> {
    repack_subsets(raw_subsets(svc, pods))
}

/// An address's identity while repacking: its IP and its target's uid.
type AddrKey = (String, String);

fn addr_key(a: &EndpointAddress) -> AddrKey {
    (
        a.ip.clone(),
        a.target_ref
            .as_ref()
            .and_then(|r| r.uid.clone())
            .unwrap_or_default(),
    )
}

/// A port as a map key (`None` is the sentinel of subsets without ports).
type PortKey = Option<(Option<String>, i32, Option<String>, Option<String>)>;

fn port_key(p: &EndpointPort) -> PortKey {
    Some((
        p.name.clone(),
        p.port,
        p.protocol.clone(),
        p.app_protocol.clone(),
    ))
}

/// Upstream's `RepackSubsets`: subsets regrouped so that each lists the addresses
/// offering exactly the same ports (an address ready on any subset of a port counts as
/// ready for it), then sorted.
pub fn repack_subsets(subsets: Vec<EndpointSubset>) -> Vec<EndpointSubset> {
    // Every distinct address once (the first copy seen), and per port its addresses.
    let mut all: BTreeMap<AddrKey, EndpointAddress> = BTreeMap::new();
    let mut by_port: BTreeMap<PortKey, BTreeMap<AddrKey, bool>> = BTreeMap::new();
    let mut ports_of: BTreeMap<PortKey, EndpointPort> = BTreeMap::new();
    for s in &subsets {
        let mut keys: Vec<PortKey> = Vec::new();
        for p in s.ports.iter().flatten() {
            let k = port_key(p);
            ports_of.entry(k.clone()).or_insert_with(|| p.clone());
            keys.push(k);
        }
        if keys.is_empty() {
            keys.push(None);
        }
        let addrs = s
            .addresses
            .iter()
            .flatten()
            .map(|a| (a, true))
            .chain(s.not_ready_addresses.iter().flatten().map(|a| (a, false)));
        for (a, ready) in addrs {
            let k = addr_key(a);
            all.entry(k.clone()).or_insert_with(|| a.clone());
            for port in &keys {
                let set = by_port.entry(port.clone()).or_default();
                let entry = set.entry(k.clone()).or_insert(ready);
                *entry |= ready;
            }
        }
    }
    // Ports grouped by the (identical) address sets offering them.
    let mut groups: BTreeMap<Vec<(AddrKey, bool)>, Vec<EndpointPort>> = BTreeMap::new();
    for (port, addrs) in by_port {
        let set: Vec<(AddrKey, bool)> = addrs.into_iter().collect();
        let ports = groups.entry(set).or_default();
        if let Some(p) = port.and_then(|k| ports_of.get(&Some(k)).cloned()) {
            ports.push(p);
        }
    }
    let mut out: Vec<EndpointSubset> = groups
        .into_iter()
        .map(|(set, ports)| {
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for (k, r) in set {
                if let Some(a) = all.get(&k) {
                    if r {
                        ready.push(a.clone());
                    } else {
                        not_ready.push(a.clone());
                    }
                }
            }
            EndpointSubset {
                addresses: none_if_empty(ready),
                not_ready_addresses: none_if_empty(not_ready),
                ports: none_if_empty(ports),
            }
        })
        .collect();
    sort_subsets(&mut out);
    out
}

/// Upstream's `SortSubsets`: addresses by IP then target uid, ports and subsets in a
/// fixed order (upstream orders the last two by hash; any fixed order compares the same).
pub fn sort_subsets(subsets: &mut [EndpointSubset]) {
    for s in subsets.iter_mut() {
        for list in [&mut s.addresses, &mut s.not_ready_addresses]
            .into_iter()
            .flatten()
        {
            list.sort_by_key(addr_key);
        }
        if let Some(ports) = s.ports.as_mut() {
            ports.sort_by_key(port_key);
        }
    }
    subsets.sort_by_key(|s| serde_json::to_string(s).unwrap_or_default());
}

/// The subsets in a canonical form for comparing: empty lists as absent, target
/// references without resourceVersion, sorted.
fn canonical(subsets: Option<&Vec<EndpointSubset>>) -> Vec<EndpointSubset> {
    let mut out: Vec<EndpointSubset> = subsets
        .into_iter()
        .flatten()
        .map(|s| {
            let clean = |l: &Option<Vec<EndpointAddress>>| {
                none_if_empty(
                    l.iter()
                        .flatten()
                        .map(|a| {
                            let mut a = a.clone();
                            if let Some(r) = a.target_ref.as_mut() {
                                r.resource_version = None;
                            }
                            a
                        })
                        .collect(),
                )
            };
            EndpointSubset {
                addresses: clean(&s.addresses),
                not_ready_addresses: clean(&s.not_ready_addresses),
                ports: s.ports.clone().and_then(none_if_empty),
            }
        })
        .collect();
    sort_subsets(&mut out);
    out
}

fn address_count(subsets: &[EndpointSubset]) -> usize {
    subsets
        .iter()
        .map(|s| {
            s.addresses.as_ref().map_or(0, Vec::len)
                + s.not_ready_addresses.as_ref().map_or(0, Vec::len)
        })
        .sum()
}

/// `capacityAnnotationSetCorrectly`: under capacity and without the annotation.
fn capacity_annotation_set_correctly(ep: &Endpoints) -> bool {
    let subsets = ep.subsets.as_deref().unwrap_or_default();
    if address_count(subsets) > MAX_CAPACITY {
        return false;
    }
    !ep.metadata
        .annotations
        .as_ref()
        .is_some_and(|a| a.contains_key(OVER_CAPACITY_ANNOTATION))
}

/// `truncateEndpoints`: over [`MAX_CAPACITY`] addresses, keeps ready addresses first,
/// each subset its proportional (rounded up) share. Returns whether it truncated.
pub fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let ready: usize = subsets
        .iter()
        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
        .sum();
    let not_ready: usize = subsets
        .iter()
        .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
        .sum();
    if ready + not_ready <= MAX_CAPACITY {
        return false;
    }
    let truncate_ready = ready > MAX_CAPACITY;
    let (max, total) = if truncate_ready {
        (MAX_CAPACITY, ready)
    } else {
        (MAX_CAPACITY - ready, not_ready)
    };
    let mut can_be_added = max;
    for s in subsets.iter_mut() {
        let in_subset = if truncate_ready {
            s.addresses.as_ref().map_or(0, Vec::len)
        } else {
            s.not_ready_addresses.as_ref().map_or(0, Vec::len)
        };
        let share = (in_subset * max).div_ceil(total).min(can_be_added);
        if truncate_ready {
            if let Some(a) = s.addresses.as_mut() {
                a.truncate(share);
                can_be_added -= a.len();
            }
            s.not_ready_addresses = None;
        } else if let Some(a) = s.not_ready_addresses.as_mut() {
            a.truncate(share);
            can_be_added -= a.len();
        }
    }
    true
}

/// What to do with a Service's Endpoints.
#[derive(Debug, PartialEq)]
pub enum Action {
    Nothing,
    Create(Endpoints),
    Update(Endpoints),
}

fn labels_of(m: &Option<BTreeMap<String, String>>) -> BTreeMap<String, String> {
    m.clone().unwrap_or_default()
}

/// Upstream's `syncService` decision for a Service with a selector: the Endpoints
/// `current` should become, or nothing when its subsets (semantically), labels and
/// capacity annotation are already right. `trigger` is the trigger-time tracker's answer.
pub fn plan(
    svc: &Service,
    pods: &[&CachedPod],
    current: Option<&Endpoints>,
    trigger: Option<Timestamp>,
) -> Action {
    let subsets = desired_subsets(svc, pods);
    let svc_labels = labels_of(&svc.metadata.labels);
    let create = current.is_none_or(|c| c.metadata.resource_version.is_none());
    if let Some(cur) = current
        && !create
    {
        let mut cur_labels = labels_of(&cur.metadata.labels);
        cur_labels.remove(HEADLESS_LABEL);
        if canonical(cur.subsets.as_ref()) == canonical(Some(&subsets))
            && cur_labels == svc_labels
            && capacity_annotation_set_correctly(cur)
        {
            return Action::Nothing;
        }
    }
    let mut ep = match current {
        Some(c) if !create => c.clone(),
        _ => Endpoints {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: svc.metadata.name.clone(),
                namespace: svc.metadata.namespace.clone(),
                ..Default::default()
            },
            subsets: None,
        },
    };
    let mut subsets = subsets;
    let mut annotations = labels_of(&ep.metadata.annotations);
    match trigger {
        Some(t) => {
            annotations.insert(
                TRIGGER_TIME_ANNOTATION.into(),
                services::format_trigger_time(t),
            );
        }
        None => {
            annotations.remove(TRIGGER_TIME_ANNOTATION);
        }
    }
    if truncate(&mut subsets) {
        annotations.insert(OVER_CAPACITY_ANNOTATION.into(), "truncated".into());
    } else {
        annotations.remove(OVER_CAPACITY_ANNOTATION);
    }
    let mut labels = svc_labels;
    if services::is_service_ip_set(svc) {
        labels.remove(HEADLESS_LABEL);
    } else {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    ep.subsets = none_if_empty(subsets);
    ep.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    ep.metadata.labels = (!labels.is_empty()).then_some(labels);
    if create {
        Action::Create(ep)
    } else {
        Action::Update(ep)
    }
}

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("endpoints informer cache is out of date, resource version {0} already processed")]
    Stale(String),
}

/// Whether an API error says the namespace is terminating.
pub(crate) fn namespace_terminating(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.details.as_ref().is_some_and(|d| d.causes.iter().any(|c| c.reason == "NamespaceTerminating")))
}

struct Shared {
    services: Store<Service>,
    pods: Arc<Informer<CachedPod>>,
    endpoints: Store<Endpoints>,
    queue: WorkQueue<String>,
    writer: Client,
    events: Recorder,
    triggers: Mutex<TriggerTimeTracker>,
    /// Per Service key, the resourceVersion of the Endpoints we last replaced (upstream's
    /// `staleEndpointsTracker`): a cache still showing it is out of date.
    stale: Mutex<HashMap<String, String>>,
}

/// Runs the Endpoints controller with `workers` workers until the process ends.
pub async fn run_endpoints(
    services: Arc<Informer<Service>>,
    pods: Arc<Informer<CachedPod>>,
    endpoints: Arc<Informer<Endpoints>>,
    writer: Client,
    workers: usize,
) {
    let shared = Arc::new(Shared {
        services: services.store.clone(),
        pods: Arc::clone(&pods),
        endpoints: endpoints.store.clone(),
        queue: WorkQueue::named("endpoint"),
        events: Recorder::spawn(
            KubeSink::new(writer.clone()),
            RecorderConfig::new("endpoint-controller", ""),
        ),
        writer,
        triggers: Mutex::new(TriggerTimeTracker::default()),
        stale: Mutex::new(HashMap::new()),
    });
    services::follow_services_and_pods(&services, &pods, &shared.queue);
    // Endpoints events: a deleted one is re-made (upstream), a changed one of a Service
    // with a selector is checked again, so hand edits are corrected.
    let mut ep_events = endpoints.subscribe();
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut ep_events).await {
                Next::Delete(ep) => s.queue.add(crate::run::object_key(&ep.metadata)),
                Next::Apply(ep) => {
                    let ns = ep.metadata.namespace.as_deref().unwrap_or_default();
                    let name = ep.metadata.name.as_deref().unwrap_or_default();
                    let managed = s
                        .services
                        .get(&ObjectRef::new(name).within(ns))
                        .is_some_and(|svc| services::service_selector(&svc).is_some());
                    if managed {
                        s.queue.add(crate::run::object_key(&ep.metadata));
                    }
                }
                Next::Other => {}
                Next::Resync => services::enqueue_all(&s.services, &s.queue),
                Next::Closed => break,
            }
        }
    });
    services.synced().await;
    pods.synced().await;
    endpoints.synced().await;
    services::enqueue_all(&shared.services, &shared.queue);
    services::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "endpoint",
        |s, key| async move { sync(&s, &key).await },
    );
    // `checkLeftoverEndpoints`: Endpoints whose Service went away while we were not
    // running are deleted by their sync.
    for ep in shared.endpoints.state() {
        let leader = ep
            .metadata
            .annotations
            .as_ref()
            .is_some_and(|a| a.contains_key(LEADER_ANNOTATION));
        if !leader {
            shared.queue.add(crate::run::object_key(&ep.metadata));
        }
    }
}

fn endpoints_reference(ep: &Endpoints) -> ObjectReference {
    ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("Endpoints".into()),
        namespace: ep.metadata.namespace.clone(),
        name: ep.metadata.name.clone(),
        uid: ep.metadata.uid.clone(),
        resource_version: ep.metadata.resource_version.clone(),
        field_path: None,
    }
}

/// One `syncService`.
async fn sync(s: &Shared, key: &str) -> Result<(), SyncError> {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let api: Api<Endpoints> = Api::namespaced(s.writer.clone(), ns);
    let Some(svc) = s.services.get(&ObjectRef::new(name).within(ns)) else {
        // The Service is gone: so are its Endpoints.
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => {}
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
        lock(&s.triggers).delete(key);
        lock(&s.stale).remove(key);
        return Ok(());
    };
    let spec = svc.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") || services::service_selector(&svc).is_none() {
        return Ok(());
    }
    // Only the Service's namespace (the informer's namespace index).
    let all_pods = s.pods.by_index("namespace", ns);
    let pods = services::selected_pods(&svc, &all_pods);
    let trigger = lock(&s.triggers).compute(key, &svc, &pods);
    let current = s.endpoints.get(&ObjectRef::new(name).within(ns));
    if let Some(cur) = &current
        && let Some(rv) = cur.metadata.resource_version.as_deref()
        && lock(&s.stale).get(key).is_some_and(|stale| stale == rv)
    {
        return Err(SyncError::Stale(rv.to_string()));
    }
    let post = PostParams::default();
    match plan(&svc, &pods, current.as_deref(), trigger) {
        Action::Nothing => Ok(()),
        Action::Create(ep) => match api.create(&post, &ep).await {
            Ok(_) => Ok(()),
            Err(e) if namespace_terminating(&e) => Ok(()),
            Err(e) => {
                s.events.event(
                    &endpoints_reference(&ep),
                    EventType::Warning,
                    "FailedToCreateEndpoint",
                    &format!("Failed to create endpoint for service {ns}/{name}: {e}"),
                );
                Err(e.into())
            }
        },
        Action::Update(ep) => match api.replace(name, &post, &ep).await {
            Ok(updated) => {
                let old = ep.metadata.resource_version.clone().unwrap_or_default();
                if updated.metadata.resource_version.as_deref() != Some(old.as_str()) {
                    lock(&s.stale).insert(key.to_string(), old);
                }
                Ok(())
            }
            Err(e) => {
                s.events.event(
                    &endpoints_reference(&ep),
                    EventType::Warning,
                    "FailedToUpdateEndpoint",
                    &format!("Failed to update endpoint {ns}/{name}: {e}"),
                );
                Err(e.into())
            }
        },
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::services::tests::{pod, svc, web_service};
    use serde_json::json;

    fn ips(list: &Option<Vec<EndpointAddress>>) -> Vec<String> {
        list.iter().flatten().map(|a| a.ip.clone()).collect()
    }

    fn created(a: Action) -> Endpoints {
        match a {
            Action::Create(ep) => ep,
            other => panic!("expected a create, got {other:?}"),
        }
    }

    fn t0() -> Option<Timestamp> {
        Some("2024-01-01T00:00:00Z".parse().unwrap())
    }

    #[test]
    fn ready_and_not_ready_addresses_with_target_refs() {
        let s = web_service();
        let (a, b, c) = (
            pod("a", "10.0.0.2", true),
            pod("b", "10.0.0.1", true),
            pod("c", "10.0.0.3", false),
        );
        let ep = created(plan(&s, &[&a, &b, &c], None, t0()));
        assert_eq!(ep.metadata.name.as_deref(), Some("web"));
        assert_eq!(ep.metadata.namespace.as_deref(), Some("default"));
        let subsets = ep.subsets.clone().unwrap();
        assert_eq!(subsets.len(), 1);
        assert_eq!(ips(&subsets[0].addresses), ["10.0.0.1", "10.0.0.2"]);
        assert_eq!(ips(&subsets[0].not_ready_addresses), ["10.0.0.3"]);
        let port = &subsets[0].ports.as_ref().unwrap()[0];
        assert_eq!((port.name.as_deref(), port.port), (Some("http"), 8080));
        assert_eq!(port.protocol.as_deref(), Some("TCP"));
        let addr = &subsets[0].addresses.as_ref().unwrap()[0];
        assert_eq!(addr.node_name.as_deref(), Some("node-a"));
        let r = addr.target_ref.as_ref().unwrap();
        assert_eq!(
            (
                r.kind.as_deref(),
                r.name.as_deref(),
                r.uid.as_deref(),
                r.namespace.as_deref()
            ),
            (Some("Pod"), Some("b"), Some("uid-b"), Some("default"))
        );
        // Labels from the service, the trigger time annotation.
        assert_eq!(ep.metadata.labels.as_ref().unwrap()["team"], "a");
        assert_eq!(
            ep.metadata.annotations.as_ref().unwrap()[TRIGGER_TIME_ANNOTATION],
            "2024-01-01T00:00:00Z"
        );
        // Unchanged: nothing to write, whatever the trigger time says.
        let mut cur = ep.clone();
        cur.metadata.resource_version = Some("5".into());
        assert_eq!(plan(&s, &[&c, &a, &b], Some(&cur), None), Action::Nothing);
        // A pod becoming ready: an update keeping the resourceVersion.
        let c2 = pod("c", "10.0.0.3", true);
        let Action::Update(up) = plan(&s, &[&a, &b, &c2], Some(&cur), None) else {
            panic!()
        };
        assert_eq!(up.metadata.resource_version.as_deref(), Some("5"));
        assert_eq!(ips(&up.subsets.as_ref().unwrap()[0].addresses).len(), 3);
        assert!(
            up.subsets.as_ref().unwrap()[0]
                .not_ready_addresses
                .is_none()
        );
        assert!(
            !up.metadata
                .annotations
                .unwrap_or_default()
                .contains_key(TRIGGER_TIME_ANNOTATION)
        );
    }

    #[test]
    fn publish_not_ready_terminating_and_terminal_pods() {
        let mut s = web_service();
        let ready = pod("a", "10.0.0.1", true);
        let unready = pod("b", "10.0.0.2", false);
        let mut terminating = pod("c", "10.0.0.3", true);
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        let mut done = pod("d", "10.0.0.4", true);
        done.status.as_mut().unwrap().phase = Some("Failed".into());
        let mut no_ip = pod("e", "", true);
        no_ip.status.as_mut().unwrap().pod_ips = None;
        let pods = [&ready, &unready, &terminating, &done, &no_ip];
        let ep = created(plan(&s, &pods, None, None));
        let sub = &ep.subsets.unwrap()[0];
        assert_eq!(ips(&sub.addresses), ["10.0.0.1"]);
        assert_eq!(ips(&sub.not_ready_addresses), ["10.0.0.2"]);
        s.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let ep = created(plan(&s, &pods, None, None));
        let sub = &ep.subsets.unwrap()[0];
        assert_eq!(ips(&sub.addresses), ["10.0.0.1", "10.0.0.2", "10.0.0.3"]);
        assert!(sub.not_ready_addresses.is_none());
    }

    #[test]
    fn named_ports_and_pods_without_them() {
        let s = svc(json!({
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "10.43.0.10",
                "ports": [
                    {"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http"},
                    {"name": "metrics", "port": 9090, "protocol": "TCP", "targetPort": 9090}]}
        }));
        let a = pod("a", "10.0.0.1", true);
        let mut b = pod("b", "10.0.0.2", true);
        b.spec.as_mut().unwrap().containers[0].ports = None;
        let ep = created(plan(&s, &[&a, &b], None, None));
        let subsets = ep.subsets.unwrap();
        // a offers both ports, b only the numbered one: each port with its addresses.
        assert_eq!(subsets.len(), 2);
        let port_of = |s: &EndpointSubset| {
            let p = s.ports.as_ref().unwrap();
            assert_eq!(p.len(), 1);
            p[0].port
        };
        let http = subsets.iter().find(|s| port_of(s) == 8080).unwrap();
        assert_eq!(ips(&http.addresses), ["10.0.0.1"]);
        assert_eq!(
            http.ports.as_ref().unwrap()[0].name.as_deref(),
            Some("http")
        );
        let metrics = subsets.iter().find(|s| port_of(s) == 9090).unwrap();
        assert_eq!(ips(&metrics.addresses), ["10.0.0.1", "10.0.0.2"]);
        // With b offering both too: one subset with both ports.
        let b = pod("b", "10.0.0.2", true);
        let ep = created(plan(&s, &[&a, &b], None, None));
        let subsets = ep.subsets.unwrap();
        assert_eq!(subsets.len(), 1);
        assert_eq!(subsets[0].ports.as_ref().unwrap().len(), 2);
        assert_eq!(ips(&subsets[0].addresses), ["10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn hostname_when_subdomain_is_the_service() {
        let s = web_service();
        let mut a = pod("a", "10.0.0.1", true);
        a.spec.as_mut().unwrap().hostname = Some("host-a".into());
        let ep = created(plan(&s, &[&a], None, None));
        assert_eq!(
            ep.subsets.as_ref().unwrap()[0].addresses.as_ref().unwrap()[0].hostname,
            None
        );
        a.spec.as_mut().unwrap().subdomain = Some("web".into());
        let ep = created(plan(&s, &[&a], None, None));
        assert_eq!(
            ep.subsets.as_ref().unwrap()[0].addresses.as_ref().unwrap()[0]
                .hostname
                .as_deref(),
            Some("host-a")
        );
    }

    #[test]
    fn headless_label_and_portless_headless() {
        let s = svc(json!({
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "None"}
        }));
        let a = pod("a", "10.0.0.1", true);
        let ep = created(plan(&s, &[&a], None, None));
        assert_eq!(ep.metadata.labels.as_ref().unwrap()[HEADLESS_LABEL], "");
        let sub = &ep.subsets.as_ref().unwrap()[0];
        assert!(sub.ports.is_none());
        assert_eq!(ips(&sub.addresses), ["10.0.0.1"]);
        // The headless label is not a difference from the service's labels.
        let mut cur = ep.clone();
        cur.metadata.resource_version = Some("3".into());
        assert_eq!(plan(&s, &[&a], Some(&cur), None), Action::Nothing);
        // A hand-edited label is.
        cur.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("x".into(), "y".into());
        assert!(matches!(
            plan(&s, &[&a], Some(&cur), None),
            Action::Update(_)
        ));
    }

    #[test]
    fn no_pods_gives_empty_endpoints() {
        let s = web_service();
        let ep = created(plan(&s, &[], None, None));
        assert!(ep.subsets.is_none());
    }

    #[test]
    fn semantic_comparison_ignores_order_and_resource_versions() {
        let s = web_service();
        let a = pod("a", "10.0.0.1", true);
        let b = pod("b", "10.0.0.2", true);
        let mut cur = created(plan(&s, &[&a, &b], None, None));
        cur.metadata.resource_version = Some("9".into());
        let sub = &mut cur.subsets.as_mut().unwrap()[0];
        sub.addresses.as_mut().unwrap().reverse();
        sub.addresses.as_mut().unwrap()[0]
            .target_ref
            .as_mut()
            .unwrap()
            .resource_version = Some("77".into());
        sub.not_ready_addresses = Some(Vec::new());
        assert_eq!(plan(&s, &[&a, &b], Some(&cur), None), Action::Nothing);
    }

    #[test]
    fn repack_merges_ports_and_readiness() {
        let addr = |ip: &str| EndpointAddress {
            ip: ip.into(),
            ..Default::default()
        };
        let port = |n: i32| EndpointPort {
            port: n,
            ..Default::default()
        };
        let subsets = vec![
            EndpointSubset {
                addresses: Some(vec![addr("1.1.1.1")]),
                ports: Some(vec![port(80)]),
                ..Default::default()
            },
            EndpointSubset {
                addresses: Some(vec![addr("1.1.1.1")]),
                ports: Some(vec![port(443)]),
                ..Default::default()
            },
            EndpointSubset {
                not_ready_addresses: Some(vec![addr("2.2.2.2")]),
                ports: Some(vec![port(80)]),
                ..Default::default()
            },
            // Ready on one copy wins.
            EndpointSubset {
                addresses: Some(vec![addr("2.2.2.2")]),
                ports: Some(vec![port(80)]),
                ..Default::default()
            },
        ];
        let out = repack_subsets(subsets);
        // Port 80: both addresses (2.2.2.2 ready on one copy: ready); port 443: one.
        assert_eq!(out.len(), 2);
        let on = |port: i32| {
            out.iter()
                .find(|s| s.ports.as_ref().unwrap()[0].port == port)
                .unwrap()
        };
        assert_eq!(ips(&on(80).addresses), ["1.1.1.1", "2.2.2.2"]);
        assert!(on(80).not_ready_addresses.is_none());
        assert_eq!(ips(&on(443).addresses), ["1.1.1.1"]);
    }

    #[test]
    fn truncation_over_capacity() {
        let s = web_service();
        let pods: Vec<CachedPod> = (0..1100)
            .map(|i| {
                pod(
                    &format!("p{i}"),
                    &format!("10.1.{}.{}", i / 250, i % 250),
                    i % 2 == 0,
                )
            })
            .collect();
        let refs: Vec<&CachedPod> = pods.iter().collect();
        let ep = created(plan(&s, &refs, None, None));
        let sub = &ep.subsets.as_ref().unwrap()[0];
        // All 550 ready addresses kept, the not-ready ones cut to the remaining 450.
        assert_eq!(sub.addresses.as_ref().unwrap().len(), 550);
        assert_eq!(sub.not_ready_addresses.as_ref().unwrap().len(), 450);
        assert_eq!(
            ep.metadata.annotations.as_ref().unwrap()[OVER_CAPACITY_ANNOTATION],
            "truncated"
        );
        // More than 1000 ready: only ready ones, 1000 of them.
        let ready: Vec<CachedPod> = (0..1200)
            .map(|i| {
                pod(
                    &format!("r{i}"),
                    &format!("10.2.{}.{}", i / 250, i % 250),
                    true,
                )
            })
            .collect();
        let refs: Vec<&CachedPod> = ready.iter().collect();
        let ep = created(plan(&s, &refs, None, None));
        let sub = &ep.subsets.as_ref().unwrap()[0];
        assert_eq!(sub.addresses.as_ref().unwrap().len(), 1000);
        assert!(sub.not_ready_addresses.is_none());
        // Back under capacity: the annotation goes.
        let mut cur = ep.clone();
        cur.metadata.resource_version = Some("1".into());
        let Action::Update(up) = plan(&s, &refs[..10], Some(&cur), None) else {
            panic!()
        };
        assert!(
            !up.metadata
                .annotations
                .unwrap_or_default()
                .contains_key(OVER_CAPACITY_ANNOTATION)
        );
    }

    #[test]
    fn ip_family_of_the_service() {
        let mut s = web_service();
        s.spec.as_mut().unwrap().ip_families = Some(vec!["IPv6".into()]);
        let mut a = pod("a", "10.0.0.1", true);
        assert!(pod_address(&s, &a).is_none());
        a.status.as_mut().unwrap().pod_ips = Some(vec![
            serde_json::from_value(json!({"ip": "10.0.0.1"})).unwrap(),
            serde_json::from_value(json!({"ip": "fd00::1"})).unwrap(),
        ]);
        assert_eq!(pod_address(&s, &a).unwrap().ip, "fd00::1");
    }
}
