//! The EndpointSlice controller (upstream's `pkg/controller/endpointslice` and the
//! reconciler of `k8s.io/endpointslice`): for every Service with a selector, slices of at
//! most `--max-endpoints-per-slice` endpoints (one per selected pod with an IP of the
//! slice's address type, with ready/serving/terminating conditions, node, zone, target
//! and hostname), grouped by the pod's resolved ports, owned by the Service and labelled
//! `kubernetes.io/service-name` and `endpointslice.kubernetes.io/managed-by`.
//! [`reconcile`] is upstream's churn-minimising reconciler as a pure function (update
//! slices in place, fill the fullest first, reuse slices that would be deleted, keep one
//! placeholder slice for a Service without endpoints); [`run_endpointslices`] feeds it
//! from informers and writes as the `endpointslice-controller` service account.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Node, ObjectReference, Service};
use k8s_openapi::api::discovery::v1::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Client;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::events::{EventType, KubeSink, Recorder, RecorderConfig};
use runtime::workqueue::WorkQueue;

use crate::cachedpod::CachedPod;
use crate::informers::{self, Informer, Next};
use crate::services::{self, HEADLESS_LABEL, TRIGGER_TIME_ANNOTATION, TriggerTimeTracker};
use crate::util::lock;

/// The `endpointslice.kubernetes.io/managed-by` value of this controller's slices.
pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
/// `discovery.LabelServiceName`.
pub const LABEL_SERVICE_NAME: &str = "kubernetes.io/service-name";
/// `discovery.LabelManagedBy`.
pub const LABEL_MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
/// `v1.LabelTopologyZone`.
pub const LABEL_ZONE: &str = "topology.kubernetes.io/zone";
/// Upstream's default `--max-endpoints-per-slice`.
pub const DEFAULT_MAX_ENDPOINTS_PER_SLICE: usize = 100;
/// Upstream's `endpointSliceChangeMinSyncDelay`.
const SLICE_CHANGE_DELAY: Duration = Duration::from_secs(1);

/// The address types of a Service's slices (`getAddressTypesForService`): its IP
/// families, else its cluster IP's family, else — headless — both.
pub fn address_types(svc: &Service) -> BTreeSet<&'static str> {
    let spec = svc.spec.as_ref();
    let mut out = BTreeSet::new();
    for f in spec
        .and_then(|s| s.ip_families.as_ref())
        .into_iter()
        .flatten()
    {
        match f.as_str() {
            "IPv4" => {
                out.insert("IPv4");
            }
            "IPv6" => {
                out.insert("IPv6");
            }
            _ => {}
        }
    }
    if !out.is_empty() {
        return out;
    }
    if services::is_service_ip_set(svc) {
        let ip = spec
            .and_then(|s| s.cluster_ip.as_deref())
            .unwrap_or_default();
        out.insert(if services::is_ipv6(ip) {
            "IPv6"
        } else {
            "IPv4"
        });
        return out;
    }
    ["IPv4", "IPv6"].into_iter().collect()
}

/// `getEndpointPorts`: the Service's ports resolved on the pod (those it lacks left out).
pub fn endpoint_ports(svc: &Service, pod: &CachedPod) -> Vec<EndpointPort> {
    let ports = svc
        .spec
        .as_ref()
        .and_then(|s| s.ports.clone())
        .unwrap_or_default();
    ports
        .iter()
        .filter_map(|sp| {
            let number = services::find_port(pod, sp)?;
            Some(EndpointPort {
                name: Some(sp.name.clone().unwrap_or_default()),
                port: Some(number),
                protocol: Some(services::port_protocol(sp).to_string()),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// `podToEndpoint`: the pod's endpoint in a slice of `address_type`. `ready` is never
/// true for a terminating pod unless the Service publishes not-ready addresses;
/// `serving` is the Ready condition.
pub fn pod_to_endpoint(
    pod: &CachedPod,
    zone: Option<&str>,
    svc: &Service,
    address_type: &str,
) -> Endpoint {
    let serving = services::is_pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let publish = svc
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let ready = publish || (serving && !terminating);
    let addresses = services::pod_ips(pod)
        .into_iter()
        .filter_map(|ip| ip.parse::<std::net::IpAddr>().ok())
        .filter(|ip| ip.is_ipv6() == (address_type == "IPv6"))
        .map(|ip| ip.to_string())
        .collect();
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    Endpoint {
        addresses,
        conditions: Some(EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        }),
        target_ref: Some(crate::endpoints::pod_reference(pod)),
        node_name,
        zone: zone.filter(|z| !z.is_empty()).map(str::to_string),
        hostname: services::should_set_hostname(pod, svc)
            .then(|| pod.spec.as_ref().and_then(|s| s.hostname.clone()))
            .flatten(),
        ..Default::default()
    }
}

/// `NewPortMapKey`: the ports, sorted, as a key (no ports and empty ports are the same).
fn port_map_key(ports: &[EndpointPort]) -> String {
    let mut each: Vec<String> = ports
        .iter()
        .map(|p| serde_json::to_string(p).unwrap_or_default())
        .collect();
    each.sort();
    each.join("|")
}

/// `hashEndpoint`: an endpoint's identity — its addresses, hostname and target.
fn endpoint_key(e: &Endpoint) -> String {
    let mut addrs = e.addresses.clone();
    addrs.sort();
    let r = e.target_ref.as_ref();
    format!(
        "{}/{}/{}/{}",
        addrs.join(","),
        e.hostname.as_deref().unwrap_or_default(),
        r.and_then(|r| r.namespace.as_deref()).unwrap_or_default(),
        r.and_then(|r| r.name.as_deref()).unwrap_or_default()
    )
}

fn conditions(e: &Endpoint) -> (Option<bool>, Option<bool>, Option<bool>) {
    let c = e.conditions.clone().unwrap_or_default();
    (c.ready, c.serving, c.terminating)
}

fn without_rv(r: Option<&ObjectReference>) -> Option<ObjectReference> {
    r.map(|r| ObjectReference {
        resource_version: None,
        ..r.clone()
    })
}

/// `EndpointsEqualBeyondHash`: node, zone, conditions and target (its resourceVersion
/// aside) are the same.
fn endpoints_equal_beyond_key(a: &Endpoint, b: &Endpoint) -> bool {
    a.node_name == b.node_name
        && a.zone == b.zone
        && conditions(a) == conditions(b)
        && without_rv(a.target_ref.as_ref()) == without_rv(b.target_ref.as_ref())
}

/// `setEndpointSliceLabels`: the labels a slice of the Service should carry (the
/// Service's, the headless label for a Service without cluster IP, the service-name and
/// managed-by labels) and whether the non-reserved ones differ from the slice's.
fn slice_labels(
    slice_labels: Option<&BTreeMap<String, String>>,
    svc: &Service,
) -> (BTreeMap<String, String>, bool) {
    let reserved =
        |k: &str| k == LABEL_SERVICE_NAME || k == LABEL_MANAGED_BY || k == HEADLESS_LABEL;
    let current: BTreeMap<String, String> = slice_labels
        .into_iter()
        .flatten()
        .filter(|(k, _)| !reserved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut labels: BTreeMap<String, String> = svc
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(k, _)| !reserved(k))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let changed = current != labels;
    if !services::is_service_ip_set(svc) {
        labels.insert(HEADLESS_LABEL.into(), String::new());
    }
    labels.insert(
        LABEL_SERVICE_NAME.into(),
        svc.metadata.name.clone().unwrap_or_default(),
    );
    labels.insert(LABEL_MANAGED_BY.into(), CONTROLLER_NAME.into());
    (labels, changed)
}

/// Whether the slice is owned by the Service (`ownedBy`).
pub fn owned_by(slice: &EndpointSlice, svc: &Service) -> bool {
    slice.metadata.owner_references.iter().flatten().any(|o| {
        Some(&o.uid) == svc.metadata.uid.as_ref() && o.kind == "Service" && o.api_version == "v1"
    })
}

/// Whether this controller manages the slice (its managed-by label).
pub fn managed_by_controller(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(LABEL_MANAGED_BY))
        .is_some_and(|v| v == CONTROLLER_NAME)
}

/// `newEndpointSlice`: an empty slice for the Service (named by the server from
/// `<service>-`), owned by it.
fn new_slice(svc: &Service, ports: Vec<EndpointPort>, address_type: &str) -> EndpointSlice {
    let name = svc.metadata.name.clone().unwrap_or_default();
    let (labels, _) = slice_labels(None, svc);
    EndpointSlice {
        metadata: ObjectMeta {
            generate_name: Some(format!("{name}-")),
            namespace: svc.metadata.namespace.clone(),
            labels: Some(labels),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "Service".into(),
                name,
                uid: svc.metadata.uid.clone().unwrap_or_default(),
                controller: Some(true),
                block_owner_deletion: Some(true),
            }]),
            ..Default::default()
        },
        address_type: address_type.into(),
        endpoints: Vec::new(),
        ports: Some(ports),
    }
}

/// `placeholderSliceCompare`: the same namespace, labels, address type, ports and
/// endpoints (none), whatever the rest of the metadata.
fn same_placeholder(a: &EndpointSlice, b: &EndpointSlice) -> bool {
    let labels = |s: &EndpointSlice| s.metadata.labels.clone().unwrap_or_default();
    a.metadata.namespace == b.metadata.namespace
        && labels(a) == labels(b)
        && a.address_type == b.address_type
        && a.endpoints == b.endpoints
        && a.ports.clone().unwrap_or_default() == b.ports.clone().unwrap_or_default()
}

/// What to write for one Service.
#[derive(Debug, Default, PartialEq)]
pub struct Plan {
    /// New slices (with `generateName`).
    pub create: Vec<EndpointSlice>,
    /// Slices to replace, by name.
    pub update: Vec<EndpointSlice>,
    /// Slices to delete.
    pub delete: Vec<EndpointSlice>,
    /// Problems that call for another sync (pods on nodes that do not exist).
    pub errors: Vec<String>,
}

/// The desired endpoints of one port mapping, by identity.
type EndpointSet = BTreeMap<String, Endpoint>;

/// `reconcileByPortMapping`: the slices of one set of ports. Returns the creates,
/// updates and deletes.
fn reconcile_port_mapping(
    svc: &Service,
    existing: &[&EndpointSlice],
    mut desired: EndpointSet,
    ports: &[EndpointPort],
    address_type: &str,
    max: usize,
) -> (Vec<EndpointSlice>, Vec<EndpointSlice>, Vec<EndpointSlice>) {
    let mut by_name: BTreeMap<String, EndpointSlice> = BTreeMap::new();
    let mut unchanged: BTreeSet<String> = BTreeSet::new();
    let mut to_update: BTreeSet<String> = BTreeSet::new();
    let mut to_delete: BTreeSet<String> = BTreeSet::new();
    // 1. Keep the existing endpoints still desired (updated when they changed).
    for slice in existing {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let mut kept: Vec<Endpoint> = Vec::new();
        let mut endpoint_updated = false;
        for e in &slice.endpoints {
            if let Some(want) = desired.remove(&endpoint_key(e)) {
                if !endpoints_equal_beyond_key(&want, e) {
                    endpoint_updated = true;
                }
                kept.push(want);
            }
        }
        let (labels, labels_changed) = slice_labels(slice.metadata.labels.as_ref(), svc);
        if endpoint_updated || kept.len() != slice.endpoints.len() {
            if kept.is_empty() {
                to_delete.insert(name.clone());
                by_name.insert(name, (*slice).clone());
            } else {
                let mut s = (*slice).clone();
                s.endpoints = kept;
                s.metadata.labels = Some(labels);
                to_update.insert(name.clone());
                by_name.insert(name, s);
            }
        } else if labels_changed {
            let mut s = (*slice).clone();
            s.metadata.labels = Some(labels);
            to_update.insert(name.clone());
            by_name.insert(name, s);
        } else {
            unchanged.insert(name.clone());
            by_name.insert(name, (*slice).clone());
        }
    }
    // 2. Fill the slices being updated anyway, the fullest first.
    if !desired.is_empty() && !to_update.is_empty() {
        let mut order: Vec<String> = to_update.iter().cloned().collect();
        order.sort_by_key(|n| std::cmp::Reverse(by_name.get(n).map_or(0, |s| s.endpoints.len())));
        for n in order {
            let Some(s) = by_name.get_mut(&n) else {
                continue;
            };
            while s.endpoints.len() < max {
                let Some((_, e)) = desired.pop_first() else {
                    break;
                };
                s.endpoints.push(e);
            }
        }
    }
    // 3. What remains goes into the unchanged slice that it fills best when it fits in
    //    one, else into new slices.
    let mut creates: Vec<EndpointSlice> = Vec::new();
    while !desired.is_empty() {
        let mut fill: Option<String> = None;
        if desired.len() < max && !unchanged.is_empty() {
            let mut closest = max;
            for n in &unchanged {
                let len = by_name.get(n).map_or(0, |s| s.endpoints.len());
                if len + desired.len() <= max {
                    let diff = max - (len + desired.len());
                    if diff < closest {
                        closest = diff;
                        fill = Some(n.clone());
                        if diff == 0 {
                            break;
                        }
                    }
                }
            }
        }
        let mut slice = match &fill {
            Some(n) => by_name
                .get(n)
                .cloned()
                .unwrap_or_else(|| new_slice(svc, ports.to_vec(), address_type)),
            None => new_slice(svc, ports.to_vec(), address_type),
        };
        while slice.endpoints.len() < max {
            let Some((_, e)) = desired.pop_first() else {
                break;
            };
            slice.endpoints.push(e);
        }
        match fill {
            Some(n) => {
                unchanged.remove(&n);
                to_update.insert(n.clone());
                by_name.insert(n, slice);
            }
            None => creates.push(slice),
        }
    }
    let pick = |names: &BTreeSet<String>| -> Vec<EndpointSlice> {
        names
            .iter()
            .filter_map(|n| by_name.get(n).cloned())
            .collect()
    };
    (creates, pick(&to_update), pick(&to_delete))
}

/// `reconcileByAddressType` plus `finalize`'s rewriting: the creates, updates and
/// deletes for the Service's slices of one address type.
fn reconcile_address_type(
    svc: &Service,
    pods: &[&CachedPod],
    node_zone: &dyn Fn(&str) -> Option<Option<String>>,
    existing: &[&EndpointSlice],
    address_type: &str,
    max: usize,
    plan: &mut Plan,
) {
    let mut to_create: Vec<EndpointSlice> = Vec::new();
    let mut to_update: Vec<EndpointSlice> = Vec::new();
    let mut to_delete: Vec<EndpointSlice> = Vec::new();
    let mut existing_by_ports: BTreeMap<String, Vec<&EndpointSlice>> = BTreeMap::new();
    for s in existing {
        if owned_by(s, svc) {
            existing_by_ports
                .entry(port_map_key(s.ports.as_deref().unwrap_or_default()))
                .or_default()
                .push(s);
        } else {
            to_delete.push((*s).clone());
        }
    }
    let publish = svc
        .spec
        .as_ref()
        .and_then(|s| s.publish_not_ready_addresses)
        .unwrap_or(false);
    let mut desired: BTreeMap<String, (Vec<EndpointPort>, EndpointSet)> = BTreeMap::new();
    for pod in pods {
        if !services::should_pod_be_in_endpoints(pod, true) {
            continue;
        }
        let ports = endpoint_ports(svc, pod);
        let key = port_map_key(&ports);
        let entry = desired
            .entry(key)
            .or_insert_with(|| (ports, EndpointSet::new()));
        let node = pod
            .spec
            .as_ref()
            .and_then(|s| s.node_name.as_deref())
            .unwrap_or_default();
        let zone = match node_zone(node) {
            Some(zone) => zone,
            None if publish => None,
            None => {
                plan.errors.push(format!(
                    "skipping Pod {} for Service {}/{}: Node {node} Not Found",
                    pod.metadata.name.as_deref().unwrap_or_default(),
                    svc.metadata.namespace.as_deref().unwrap_or_default(),
                    svc.metadata.name.as_deref().unwrap_or_default()
                ));
                continue;
            }
        };
        let e = pod_to_endpoint(pod, zone.as_deref(), svc, address_type);
        if !e.addresses.is_empty() {
            entry.1.insert(endpoint_key(&e), e);
        }
    }
    for (key, (ports, set)) in &desired {
        let existing = existing_by_ports.get(key).cloned().unwrap_or_default();
        let (c, u, d) =
            reconcile_port_mapping(svc, &existing, set.clone(), ports, address_type, max);
        to_create.extend(c);
        to_update.extend(u);
        to_delete.extend(d);
    }
    for (key, slices) in &existing_by_ports {
        if !desired.contains_key(key) {
            to_delete.extend(slices.iter().map(|s| (*s).clone()));
        }
    }
    // A Service without endpoints keeps one placeholder slice.
    if existing.len() == to_delete.len() && to_create.is_empty() {
        let placeholder = new_slice(svc, Vec::new(), address_type);
        if to_delete.len() == 1 && same_placeholder(&to_delete[0], &placeholder) {
            to_delete.clear();
        } else {
            to_create.push(placeholder);
        }
    }
    // Creates become updates of slices that would be deleted (same type, ours).
    let mut i = 0;
    while i < to_delete.len() && !to_create.is_empty() {
        if to_delete[i].address_type == address_type && owned_by(&to_delete[i], svc) {
            let old = to_delete.remove(i);
            if let Some(mut slice) = to_create.pop() {
                slice.metadata.name = old.metadata.name;
                to_update.push(slice);
            }
        } else {
            i += 1;
        }
    }
    plan.create.extend(to_create);
    plan.update.extend(to_update);
    plan.delete.extend(to_delete);
}

/// Upstream's `Reconcile`: the writes that make the Service's slices (`existing`: those
/// labelled as its and managed by this controller, none being deleted) list the
/// endpoints of `pods`. `node_zone` gives a node's zone label (`Some(None)` for a node
/// without one, `None` for a node that does not exist). Creates and updates carry the
/// trigger-time annotation (or lose it when `trigger` is `None`); nothing is created for
/// a Service being deleted.
pub fn reconcile(
    svc: &Service,
    pods: &[&CachedPod],
    node_zone: &dyn Fn(&str) -> Option<Option<String>>,
    existing: &[&EndpointSlice],
    max_endpoints_per_slice: usize,
    trigger: Option<Timestamp>,
) -> Plan {
    let max = max_endpoints_per_slice.max(1);
    let mut plan = Plan::default();
    let types = address_types(svc);
    let mut unsupported: Vec<EndpointSlice> = Vec::new();
    let mut by_type: BTreeMap<&str, Vec<&EndpointSlice>> = BTreeMap::new();
    for s in existing {
        match types.get(s.address_type.as_str()) {
            Some(t) => by_type.entry(t).or_default().push(s),
            None => unsupported.push((*s).clone()),
        }
    }
    for t in &types {
        let slices = by_type.get(t).cloned().unwrap_or_default();
        reconcile_address_type(svc, pods, node_zone, &slices, t, max, &mut plan);
    }
    plan.delete.extend(unsupported);
    if svc.metadata.deletion_timestamp.is_some() {
        plan.create.clear();
    }
    for s in plan.create.iter_mut().chain(plan.update.iter_mut()) {
        let mut annotations = s.metadata.annotations.clone().unwrap_or_default();
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
        s.metadata.annotations = (!annotations.is_empty()).then_some(annotations);
    }
    plan
}

/// A slice's generation as this controller last wrote it, or its deletion expected.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Tracked {
    Generation(i64),
    DeletionExpected,
}

/// Upstream's `EndpointSliceTracker`: the generations of the slices this controller
/// wrote, per Service, so its own writes coming back through the informer are not
/// mistaken for someone else's, and a cache that has not caught up is detected.
#[derive(Debug, Default)]
pub struct SliceTracker {
    by_service: HashMap<String, HashMap<String, Tracked>>,
}

fn service_key_of(slice: &EndpointSlice) -> Option<String> {
    let name = slice.metadata.labels.as_ref()?.get(LABEL_SERVICE_NAME)?;
    if name.is_empty() {
        return None;
    }
    Some(crate::run::key_of(
        slice.metadata.namespace.as_deref().unwrap_or_default(),
        name,
    ))
}

fn uid_of(slice: &EndpointSlice) -> String {
    slice.metadata.uid.clone().unwrap_or_default()
}

impl SliceTracker {
    fn entry(&mut self, slice: &EndpointSlice) -> Option<&mut HashMap<String, Tracked>> {
        let key = service_key_of(slice)?;
        Some(self.by_service.entry(key).or_default())
    }

    fn tracked(&self, slice: &EndpointSlice) -> Option<Option<Tracked>> {
        let gens = self.by_service.get(&service_key_of(slice)?)?;
        Some(gens.get(&uid_of(slice)).copied())
    }

    /// `Update`: the slice as written.
    pub fn update(&mut self, slice: &EndpointSlice) {
        let g = slice.metadata.generation.unwrap_or(0);
        if let Some(gens) = self.entry(slice) {
            gens.insert(uid_of(slice), Tracked::Generation(g));
        }
    }

    /// `ExpectDeletion`.
    pub fn expect_deletion(&mut self, slice: &EndpointSlice) {
        if let Some(gens) = self.entry(slice) {
            gens.insert(uid_of(slice), Tracked::DeletionExpected);
        }
    }

    /// `Has`.
    pub fn has(&self, slice: &EndpointSlice) -> bool {
        matches!(self.tracked(slice), Some(Some(_)))
    }

    /// `ShouldSync`: a slice not written by this controller, or changed since.
    pub fn should_sync(&self, slice: &EndpointSlice) -> bool {
        match self.tracked(slice) {
            None | Some(None) => true,
            Some(Some(Tracked::DeletionExpected)) => true,
            Some(Some(Tracked::Generation(g))) => slice.metadata.generation.unwrap_or(0) > g,
        }
    }

    /// `HandleDeletion`: forgets the slice; false when its deletion was not expected.
    pub fn handle_deletion(&mut self, slice: &EndpointSlice) -> bool {
        let Some(key) = service_key_of(slice) else {
            return true;
        };
        match self.by_service.get_mut(&key) {
            Some(gens) => !matches!(gens.remove(&uid_of(slice)), Some(Tracked::Generation(_))),
            None => true,
        }
    }

    /// `StaleSlices`: the cache shows an older generation than was written, a slice whose
    /// deletion is expected, or misses a slice that was written.
    pub fn stale_slices(&self, service_key: &str, slices: &[&EndpointSlice]) -> bool {
        let Some(gens) = self.by_service.get(service_key) else {
            return false;
        };
        let mut provided: BTreeSet<String> = BTreeSet::new();
        for s in slices {
            let uid = uid_of(s);
            match gens.get(&uid) {
                Some(Tracked::DeletionExpected) => return true,
                Some(Tracked::Generation(g)) if *g > s.metadata.generation.unwrap_or(0) => {
                    return true;
                }
                _ => {}
            }
            provided.insert(uid);
        }
        gens.iter()
            .any(|(uid, t)| *t != Tracked::DeletionExpected && !provided.contains(uid))
    }

    /// `DeleteService`.
    pub fn delete_service(&mut self, service_key: &str) {
        self.by_service.remove(service_key);
    }
}

/// Why a sync failed (it is retried).
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error(transparent)]
    Api(#[from] kube::Error),
    #[error("EndpointSlice informer cache is out of date")]
    Stale,
    #[error("{0}")]
    Reconcile(String),
}

struct Shared {
    services: Store<Service>,
    pods: Arc<Informer<CachedPod>>,
    slices: Store<EndpointSlice>,
    nodes: Store<Node>,
    queue: WorkQueue<String>,
    writer: Client,
    events: Recorder,
    triggers: Mutex<TriggerTimeTracker>,
    tracker: Mutex<SliceTracker>,
    max_endpoints_per_slice: usize,
}

/// Runs the EndpointSlice controller with `workers` workers until the process ends.
pub async fn run_endpointslices(
    services: Arc<Informer<Service>>,
    pods: Arc<Informer<CachedPod>>,
    slices: Arc<Informer<EndpointSlice>>,
    nodes: Arc<Informer<Node>>,
    writer: Client,
    workers: usize,
    max_endpoints_per_slice: usize,
) {
    let shared = Arc::new(Shared {
        services: services.store.clone(),
        pods: Arc::clone(&pods),
        slices: slices.store.clone(),
        nodes: nodes.store.clone(),
        queue: WorkQueue::named("endpoint_slice"),
        events: Recorder::spawn(
            KubeSink::new(writer.clone()),
            RecorderConfig::new("endpoint-slice-controller", ""),
        ),
        writer,
        triggers: Mutex::new(TriggerTimeTracker::default()),
        tracker: Mutex::new(SliceTracker::default()),
        max_endpoints_per_slice,
    });
    services::follow_services_and_pods(&services, &pods, &shared.queue);
    let mut slice_events = slices.subscribe();
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        // Per slice uid: its service-name label and whether it is ours, as last seen.
        let mut seen: HashMap<String, (Option<String>, bool)> = HashMap::new();
        loop {
            match informers::next(&mut slice_events).await {
                Next::Apply(slice) => {
                    let now = (service_key_of(&slice), managed_by_controller(&slice));
                    let before = seen.insert(uid_of(&slice), now.clone());
                    let should_sync = lock(&s.tracker).should_sync(&slice);
                    let queue = |k: &Option<String>| {
                        if let Some(k) = k {
                            s.queue.add_after(k.clone(), SLICE_CHANGE_DELAY);
                        }
                    };
                    match before {
                        Some((old_svc, _)) if old_svc != now.0 => {
                            queue(&now.0);
                            queue(&old_svc);
                        }
                        Some((_, was_ours)) if was_ours != now.1 => queue(&now.0),
                        _ if now.1 && should_sync => queue(&now.0),
                        _ => {}
                    }
                }
                Next::Delete(slice) => {
                    seen.remove(&uid_of(&slice));
                    if managed_by_controller(&slice) {
                        let mut t = lock(&s.tracker);
                        if t.has(&slice) && !t.handle_deletion(&slice) {
                            drop(t);
                            if let Some(k) = service_key_of(&slice) {
                                s.queue.add_after(k, SLICE_CHANGE_DELAY);
                            }
                        }
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
    slices.synced().await;
    nodes.synced().await;
    services::enqueue_all(&shared.services, &shared.queue);
    services::spawn_workers(
        &shared,
        &shared.queue,
        workers,
        "endpointslice",
        |s, key| async move { sync(&s, &key).await },
    );
}

/// One `syncService`.
async fn sync(s: &Shared, key: &str) -> Result<(), SyncError> {
    let (ns, name) = key.split_once('/').unwrap_or(("", key));
    let Some(svc) = s.services.get(&ObjectRef::new(name).within(ns)) else {
        lock(&s.triggers).delete(key);
        lock(&s.tracker).delete_service(key);
        return Ok(());
    };
    let spec = svc.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") || services::service_selector(&svc).is_none() {
        return Ok(());
    }
    // Only the Service's namespace (the informer's namespace index).
    let all_pods = s.pods.by_index("namespace", ns);
    let pods = services::selected_pods(&svc, &all_pods);
    let all_slices = s.slices.state();
    let slices: Vec<&EndpointSlice> = all_slices
        .iter()
        .map(AsRef::as_ref)
        .filter(|sl| sl.metadata.namespace.as_deref() == Some(ns))
        .filter(|sl| managed_by_controller(sl))
        .filter(|sl| service_key_of(sl).as_deref() == Some(key))
        .filter(|sl| sl.metadata.deletion_timestamp.is_none())
        .collect();
    if lock(&s.tracker).stale_slices(key, &slices) {
        return Err(SyncError::Stale);
    }
    let trigger = lock(&s.triggers).compute(key, &svc, &pods);
    let zone = |node: &str| -> Option<Option<String>> {
        let n = s.nodes.get(&ObjectRef::new(node))?;
        Some(
            n.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(LABEL_ZONE).cloned()),
        )
    };
    let plan = reconcile(
        &svc,
        &pods,
        &zone,
        &slices,
        s.max_endpoints_per_slice,
        trigger,
    );
    let result = write(s, ns, plan).await;
    if let Err(e) = &result {
        let svc_ref = ObjectReference {
            api_version: Some("v1".into()),
            kind: Some("Service".into()),
            namespace: svc.metadata.namespace.clone(),
            name: svc.metadata.name.clone(),
            uid: svc.metadata.uid.clone(),
            resource_version: svc.metadata.resource_version.clone(),
            field_path: None,
        };
        s.events.event(
            &svc_ref,
            EventType::Warning,
            "FailedToUpdateEndpointSlices",
            &format!("Error updating Endpoint Slices for Service {key}: {e}"),
        );
    }
    result
}

/// Carries a plan out (`finalize`): creates, updates, deletes, tracked.
async fn write(s: &Shared, ns: &str, plan: Plan) -> Result<(), SyncError> {
    let api: Api<EndpointSlice> = Api::namespaced(s.writer.clone(), ns);
    let post = PostParams::default();
    for slice in &plan.create {
        match api.create(&post, slice).await {
            Ok(created) => lock(&s.tracker).update(&created),
            Err(e) if crate::endpoints::namespace_terminating(&e) => return Ok(()),
            Err(e) => return Err(e.into()),
        }
    }
    for slice in &plan.update {
        let name = slice.metadata.name.clone().unwrap_or_default();
        let updated = api.replace(&name, &post, slice).await?;
        lock(&s.tracker).update(&updated);
    }
    for slice in &plan.delete {
        let name = slice.metadata.name.clone().unwrap_or_default();
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => lock(&s.tracker).expect_deletion(slice),
            Err(kube::Error::Api(e)) if e.code == 404 => {}
            Err(e) => return Err(e.into()),
        }
    }
    if plan.errors.is_empty() {
        Ok(())
    } else {
        Err(SyncError::Reconcile(plan.errors.join("; ")))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use crate::services::tests::{pod, svc, web_service};
    use serde_json::json;

    fn zone_a(node: &str) -> Option<Option<String>> {
        match node {
            "node-a" => Some(Some("zone-a".into())),
            "node-b" => Some(None),
            _ => None,
        }
    }

    fn pods(n: usize) -> Vec<CachedPod> {
        (0..n)
            .map(|i| {
                pod(
                    &format!("p{i:03}"),
                    &format!("10.0.{}.{}", i / 200, i % 200 + 1),
                    true,
                )
            })
            .collect()
    }

    /// The plan's creates given names and uids as the server would, as existing slices.
    fn as_existing(created: &[EndpointSlice], from: usize) -> Vec<EndpointSlice> {
        created
            .iter()
            .enumerate()
            .map(|(i, s)| {
                let mut s = s.clone();
                s.metadata.name = Some(format!("web-{}", i + from));
                s.metadata.uid = Some(format!("slice-uid-{}", i + from));
                s.metadata.generate_name = None;
                s.metadata.generation = Some(1);
                s
            })
            .collect()
    }

    fn count(slices: &[EndpointSlice]) -> usize {
        slices.iter().map(|s| s.endpoints.len()).sum()
    }

    #[test]
    fn new_service_gets_one_slice_with_ready_endpoints() {
        let s = web_service();
        let ps = pods(3);
        let refs: Vec<&CachedPod> = ps.iter().collect();
        let t = Some("2024-01-01T00:00:00Z".parse().unwrap());
        let plan = reconcile(&s, &refs, &zone_a, &[], 100, t);
        assert!(plan.update.is_empty() && plan.delete.is_empty() && plan.errors.is_empty());
        assert_eq!(plan.create.len(), 1);
        let slice = &plan.create[0];
        assert_eq!(slice.metadata.generate_name.as_deref(), Some("web-"));
        assert_eq!(slice.address_type, "IPv4");
        let labels = slice.metadata.labels.as_ref().unwrap();
        assert_eq!(labels[LABEL_SERVICE_NAME], "web");
        assert_eq!(labels[LABEL_MANAGED_BY], CONTROLLER_NAME);
        assert_eq!(labels["team"], "a");
        assert!(!labels.contains_key(HEADLESS_LABEL));
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("Service", "web", "svc-uid")
        );
        assert_eq!(
            (owner.controller, owner.block_owner_deletion),
            (Some(true), Some(true))
        );
        assert_eq!(
            slice.metadata.annotations.as_ref().unwrap()[TRIGGER_TIME_ANNOTATION],
            "2024-01-01T00:00:00Z"
        );
        let port = &slice.ports.as_ref().unwrap()[0];
        assert_eq!(port.name.as_deref(), Some("http"));
        assert_eq!(port.port, Some(8080));
        assert_eq!(port.protocol.as_deref(), Some("TCP"));
        assert_eq!(slice.endpoints.len(), 3);
        let e = &slice.endpoints[0];
        assert_eq!(e.addresses, ["10.0.0.1"]);
        assert_eq!(conditions(e), (Some(true), Some(true), Some(false)));
        assert_eq!(e.node_name.as_deref(), Some("node-a"));
        assert_eq!(e.zone.as_deref(), Some("zone-a"));
        assert_eq!(e.target_ref.as_ref().unwrap().name.as_deref(), Some("p000"));
    }

    #[test]
    fn conditions_of_unready_and_terminating_pods() {
        let mut s = web_service();
        let unready = pod("a", "10.0.0.1", false);
        let mut terminating = pod("b", "10.0.0.2", true);
        terminating.metadata.deletion_timestamp = Some(
            k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Timestamp::UNIX_EPOCH),
        );
        let mut done = pod("c", "10.0.0.3", true);
        done.status.as_mut().unwrap().phase = Some("Succeeded".into());
        let plan = reconcile(
            &s,
            &[&unready, &terminating, &done],
            &zone_a,
            &[],
            100,
            None,
        );
        let eps = &plan.create[0].endpoints;
        assert_eq!(eps.len(), 2);
        assert_eq!(conditions(&eps[0]), (Some(false), Some(false), Some(false)));
        assert_eq!(conditions(&eps[1]), (Some(false), Some(true), Some(true)));
        s.spec.as_mut().unwrap().publish_not_ready_addresses = Some(true);
        let plan = reconcile(&s, &[&unready, &terminating], &zone_a, &[], 100, None);
        let eps = &plan.create[0].endpoints;
        assert_eq!(conditions(&eps[0]), (Some(true), Some(false), Some(false)));
        assert_eq!(conditions(&eps[1]), (Some(true), Some(true), Some(true)));
    }

    #[test]
    fn no_endpoints_gives_a_placeholder_kept_across_syncs() {
        let s = web_service();
        let plan = reconcile(&s, &[], &zone_a, &[], 100, None);
        assert_eq!(plan.create.len(), 1);
        assert!(plan.create[0].endpoints.is_empty());
        assert_eq!(plan.create[0].ports.as_deref(), Some(&[][..]));
        let existing = as_existing(&plan.create, 0);
        let refs: Vec<&EndpointSlice> = existing.iter().collect();
        let again = reconcile(&s, &[], &zone_a, &refs, 100, None);
        assert_eq!(again, Plan::default());
        // Endpoints appear: the placeholder is reused (updated), not deleted.
        let p = pod("a", "10.0.0.1", true);
        let plan = reconcile(&s, &[&p], &zone_a, &refs, 100, None);
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.update.len(), 1);
        assert_eq!(plan.update[0].metadata.name.as_deref(), Some("web-0"));
        assert_eq!(plan.update[0].endpoints.len(), 1);
        // And when they go, the slice becomes a placeholder again in place.
        let existing = [plan.update[0].clone()];
        let refs: Vec<&EndpointSlice> = existing.iter().collect();
        let plan = reconcile(&s, &[], &zone_a, &refs, 100, None);
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        assert_eq!(plan.update.len(), 1);
        assert!(plan.update[0].endpoints.is_empty());
    }

    #[test]
    fn unchanged_slices_are_not_written() {
        let s = web_service();
        let ps = pods(3);
        let refs: Vec<&CachedPod> = ps.iter().collect();
        let plan = reconcile(&s, &refs, &zone_a, &[], 100, None);
        let mut existing = as_existing(&plan.create, 0);
        // A pod's resourceVersion in the target does not count.
        existing[0].endpoints[0]
            .target_ref
            .as_mut()
            .unwrap()
            .resource_version = Some("3".into());
        let srefs: Vec<&EndpointSlice> = existing.iter().collect();
        assert_eq!(
            reconcile(&s, &refs, &zone_a, &srefs, 100, None),
            Plan::default()
        );
        // A hand-edited endpoint condition is corrected.
        existing[0].endpoints[1].conditions = Some(EndpointConditions::default());
        let srefs: Vec<&EndpointSlice> = existing.iter().collect();
        let plan = reconcile(&s, &refs, &zone_a, &srefs, 100, None);
        assert_eq!(plan.update.len(), 1);
        assert_eq!(
            conditions(&plan.update[0].endpoints[1]),
            (Some(true), Some(true), Some(false))
        );
        // A Service label change updates the slice labels.
        let mut s2 = s.clone();
        s2.metadata.labels = Some([("team".to_string(), "b".to_string())].into());
        existing[0].endpoints[1].conditions = plan.update[0].endpoints[1].conditions.clone();
        let srefs: Vec<&EndpointSlice> = existing.iter().collect();
        let plan = reconcile(&s2, &refs, &zone_a, &srefs, 100, None);
        assert_eq!(plan.update.len(), 1);
        assert_eq!(
            plan.update[0].metadata.labels.as_ref().unwrap()["team"],
            "b"
        );
    }

    #[test]
    fn slices_hold_at_most_max_and_shrink_in_place() {
        let s = web_service();
        let ps = pods(250);
        let refs: Vec<&CachedPod> = ps.iter().collect();
        let plan = reconcile(&s, &refs, &zone_a, &[], 100, None);
        assert_eq!(plan.create.len(), 3);
        let mut sizes: Vec<usize> = plan.create.iter().map(|s| s.endpoints.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [50, 100, 100]);
        let existing = as_existing(&plan.create, 0);
        let srefs: Vec<&EndpointSlice> = existing.iter().collect();
        // Scale to 1: the slice holding it is updated, the others deleted.
        let plan = reconcile(&s, &refs[..1], &zone_a, &srefs, 100, None);
        assert!(plan.create.is_empty());
        assert_eq!(plan.update.len(), 1);
        assert_eq!(count(&plan.update), 1);
        assert_eq!(plan.delete.len(), 2);
        // New pods go to the unchanged slice they fit in best rather than a new one.
        let mut small = existing.clone();
        small[2].endpoints.truncate(40);
        let srefs: Vec<&EndpointSlice> = small.iter().collect();
        let fifty: Vec<&CachedPod> = refs.iter().take(240).copied().collect();
        let plan = reconcile(&s, &fifty, &zone_a, &srefs, 100, None);
        assert!(plan.create.is_empty() && plan.delete.is_empty(), "{plan:?}");
        assert_eq!(plan.update.len(), 1);
        assert_eq!(plan.update[0].endpoints.len(), 40);
    }

    #[test]
    fn fills_the_fullest_updated_slice_first() {
        let s = web_service();
        let ps = pods(150);
        let refs: Vec<&CachedPod> = ps.iter().collect();
        let plan = reconcile(&s, &refs, &zone_a, &[], 100, None);
        let existing = as_existing(&plan.create, 0);
        let srefs: Vec<&EndpointSlice> = existing.iter().collect();
        // One pod removed from each slice, then 5 new ones: both slices are updated, the
        // fuller first.
        let big = existing.iter().find(|s| s.endpoints.len() == 100).unwrap();
        let gone_big = big.endpoints[0]
            .target_ref
            .as_ref()
            .unwrap()
            .name
            .clone()
            .unwrap();
        let little = existing.iter().find(|s| s.endpoints.len() == 50).unwrap();
        let gone_little = little.endpoints[0]
            .target_ref
            .as_ref()
            .unwrap()
            .name
            .clone()
            .unwrap();
        let more = pods(155);
        let now: Vec<&CachedPod> = more
            .iter()
            .filter(|p| {
                let n = p.metadata.name.clone().unwrap();
                n != gone_big && n != gone_little
            })
            .collect();
        assert_eq!(now.len(), 153);
        let plan = reconcile(&s, &now, &zone_a, &srefs, 100, None);
        assert!(plan.create.is_empty() && plan.delete.is_empty());
        let mut sizes: Vec<usize> = plan.update.iter().map(|s| s.endpoints.len()).collect();
        sizes.sort_unstable();
        assert_eq!(sizes, [53, 100]);
    }

    #[test]
    fn port_groups_headless_and_named_ports() {
        let s = svc(json!({
            "metadata": {"name": "web", "namespace": "default", "uid": "svc-uid"},
            "spec": {"selector": {"app": "web"}, "clusterIP": "None", "ipFamilies": ["IPv4"],
                "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": "http",
                    "appProtocol": "http"}]}
        }));
        let a = pod("a", "10.0.0.1", true);
        let mut b = pod("b", "10.0.0.2", true);
        b.spec.as_mut().unwrap().containers[0]
            .ports
            .as_mut()
            .unwrap()[0]
            .container_port = 9000;
        let mut c = pod("c", "10.0.0.3", true);
        c.spec.as_mut().unwrap().containers[0].ports = None;
        let plan = reconcile(&s, &[&a, &b, &c], &zone_a, &[], 100, None);
        // Three port sets: 8080, 9000, none.
        assert_eq!(plan.create.len(), 3);
        for slice in &plan.create {
            assert_eq!(slice.endpoints.len(), 1);
            assert_eq!(slice.metadata.labels.as_ref().unwrap()[HEADLESS_LABEL], "");
            if let Some(p) = slice.ports.as_ref().unwrap().first() {
                assert_eq!(p.app_protocol.as_deref(), Some("http"));
            }
        }
        assert!(
            plan.create
                .iter()
                .any(|s| s.ports.as_ref().unwrap().is_empty())
        );
    }

    #[test]
    fn hostname_and_missing_nodes() {
        let s = web_service();
        let mut a = pod("a", "10.0.0.1", true);
        a.spec.as_mut().unwrap().hostname = Some("h".into());
        a.spec.as_mut().unwrap().subdomain = Some("web".into());
        let mut b = pod("b", "10.0.0.2", true);
        b.spec.as_mut().unwrap().node_name = Some("gone".into());
        let mut c = pod("c", "10.0.0.3", true);
        c.spec.as_mut().unwrap().node_name = Some("node-b".into());
        let plan = reconcile(&s, &[&a, &b, &c], &zone_a, &[], 100, None);
        assert_eq!(plan.errors.len(), 1);
        let eps = &plan.create[0].endpoints;
        assert_eq!(eps.len(), 2);
        assert_eq!(eps[0].hostname.as_deref(), Some("h"));
        assert_eq!(eps[1].zone, None);
        assert_eq!(eps[1].node_name.as_deref(), Some("node-b"));
    }

    #[test]
    fn dual_stack_and_unsupported_types() {
        let mut s = web_service();
        s.spec.as_mut().unwrap().ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
        let mut a = pod("a", "10.0.0.1", true);
        a.status.as_mut().unwrap().pod_ips = Some(vec![
            serde_json::from_value(json!({"ip": "10.0.0.1"})).unwrap(),
            serde_json::from_value(json!({"ip": "fd00:0::1"})).unwrap(),
        ]);
        let plan = reconcile(&s, &[&a], &zone_a, &[], 100, None);
        assert_eq!(plan.create.len(), 2);
        let v6 = plan
            .create
            .iter()
            .find(|s| s.address_type == "IPv6")
            .unwrap();
        assert_eq!(v6.endpoints[0].addresses, ["fd00::1"]);
        // Back to IPv4 only: the IPv6 slice goes.
        let existing = as_existing(&plan.create, 0);
        let refs: Vec<&EndpointSlice> = existing.iter().collect();
        s.spec.as_mut().unwrap().ip_families = Some(vec!["IPv4".into()]);
        let plan = reconcile(&s, &[&a], &zone_a, &refs, 100, None);
        assert!(plan.create.is_empty() && plan.update.is_empty());
        assert_eq!(plan.delete.len(), 1);
        assert_eq!(plan.delete[0].address_type, "IPv6");
    }

    #[test]
    fn slices_of_another_owner_are_replaced() {
        let s = web_service();
        let a = pod("a", "10.0.0.1", true);
        let plan = reconcile(&s, &[&a], &zone_a, &[], 100, None);
        let mut existing = as_existing(&plan.create, 0);
        // A slice left by an older Service of the same name.
        existing[0].metadata.owner_references.as_mut().unwrap()[0].uid = "old".into();
        let refs: Vec<&EndpointSlice> = existing.iter().collect();
        let plan = reconcile(&s, &[&a], &zone_a, &refs, 100, None);
        assert_eq!(plan.create.len(), 1);
        assert_eq!(plan.delete.len(), 1);
        assert!(plan.update.is_empty());
    }

    #[test]
    fn nothing_created_for_a_service_being_deleted() {
        let mut s = web_service();
        s.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            Timestamp::UNIX_EPOCH,
        ));
        let a = pod("a", "10.0.0.1", true);
        assert!(
            reconcile(&s, &[&a], &zone_a, &[], 100, None)
                .create
                .is_empty()
        );
    }

    #[test]
    fn tracker() {
        let mut slice: EndpointSlice = serde_json::from_value(json!({
            "metadata": {"name": "web-1", "namespace": "default", "uid": "u1", "generation": 2,
                "labels": {LABEL_SERVICE_NAME: "web", LABEL_MANAGED_BY: CONTROLLER_NAME}},
            "addressType": "IPv4", "endpoints": []
        }))
        .unwrap();
        let mut t = SliceTracker::default();
        assert!(t.should_sync(&slice) && !t.has(&slice));
        assert!(!t.stale_slices("default/web", &[&slice]));
        t.update(&slice);
        assert!(!t.should_sync(&slice) && t.has(&slice));
        // The cache has not seen it yet.
        assert!(t.stale_slices("default/web", &[]));
        assert!(!t.stale_slices("default/web", &[&slice]));
        // Someone else changed it.
        slice.metadata.generation = Some(3);
        assert!(t.should_sync(&slice));
        // An older generation in the cache is stale.
        t.update(&slice);
        slice.metadata.generation = Some(2);
        assert!(t.stale_slices("default/web", &[&slice]));
        // An unexpected deletion calls for a sync, an expected one not.
        assert!(!t.handle_deletion(&slice));
        t.expect_deletion(&slice);
        assert!(t.stale_slices("default/web", &[&slice]));
        assert!(t.handle_deletion(&slice));
        t.delete_service("default/web");
        assert!(!t.has(&slice));
    }
}
