//! The scheduler's compact view of pods and nodes: what the plugins read, parsed once from
//! the API objects when they arrive (quantities to integers, selectors compiled), so a
//! scheduling cycle never touches JSON and the cache holds a few hundred bytes per pod.

use std::collections::BTreeMap;
use std::sync::Arc;

use api::kinds::validate::quantity::Quantity;
use api::selector::LabelSelector;
use k8s_openapi::api::core::v1::{
    Node, NodeSelectorRequirement, NodeSelectorTerm as ApiTerm, Pod, PodAffinityTerm,
    ResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as ApiQuantity;

/// Upstream's default requests for scoring pods that request nothing (100m CPU, 200 MiB).
pub const DEFAULT_MILLI_CPU: i64 = 100;
pub const DEFAULT_MEMORY: i64 = 200 * 1024 * 1024;

/// Amounts of resources: CPU in millicores, the rest in units.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resources {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub pods: i64,
    /// Extended resources and hugepages, sorted by name.
    pub scalar: Vec<(Arc<str>, i64)>,
}

impl Resources {
    /// The amount of `name` (`cpu` in millicores).
    pub fn get(&self, name: &str) -> i64 {
        match name {
            "cpu" => self.milli_cpu,
            "memory" => self.memory,
            "ephemeral-storage" => self.ephemeral_storage,
            "pods" => self.pods,
            _ => self
                .scalar
                .iter()
                .find(|(k, _)| k.as_ref() == name)
                .map_or(0, |(_, v)| *v),
        }
    }

    fn slot(&mut self, name: &str) -> &mut i64 {
        match name {
            "cpu" => &mut self.milli_cpu,
            "memory" => &mut self.memory,
            "ephemeral-storage" => &mut self.ephemeral_storage,
            "pods" => &mut self.pods,
            _ => {
                let at = match self.scalar.binary_search_by(|(k, _)| k.as_ref().cmp(name)) {
                    Ok(i) => i,
                    Err(i) => {
                        self.scalar.insert(i, (Arc::from(name), 0));
                        i
                    }
                };
                &mut self.scalar[at].1
            }
        }
    }

    pub fn set(&mut self, name: &str, v: i64) {
        *self.slot(name) = v;
    }

    /// Adds `other` (`sign` 1) or takes it away (`sign` -1).
    pub fn add(&mut self, other: &Resources, sign: i64) {
        self.milli_cpu += sign * other.milli_cpu;
        self.memory += sign * other.memory;
        self.ephemeral_storage += sign * other.ephemeral_storage;
        self.pods += sign * other.pods;
        for (k, v) in &other.scalar {
            *self.slot(k) += sign * v;
        }
    }

    /// Each resource the larger of the two.
    fn max_with(&mut self, other: &Resources) {
        self.milli_cpu = self.milli_cpu.max(other.milli_cpu);
        self.memory = self.memory.max(other.memory);
        self.ephemeral_storage = self.ephemeral_storage.max(other.ephemeral_storage);
        for (k, v) in &other.scalar {
            let s = self.slot(k);
            *s = (*s).max(*v);
        }
    }

    /// Parsed from an API resource list (unparseable quantities count as zero).
    pub fn from_list(list: Option<&BTreeMap<String, ApiQuantity>>) -> Resources {
        let mut r = Resources::default();
        for (k, v) in list.into_iter().flatten() {
            let Ok(q) = Quantity::parse(&v.0) else {
                continue;
            };
            let amount = if k == "cpu" {
                q.milli_value()
            } else {
                q.value()
            };
            r.set(k, amount);
        }
        r
    }

    /// The names of the resources with a non-zero amount.
    pub fn names(&self) -> Vec<&str> {
        let mut out = Vec::new();
        for (n, v) in [
            ("cpu", self.milli_cpu),
            ("memory", self.memory),
            ("ephemeral-storage", self.ephemeral_storage),
        ] {
            if v != 0 {
                out.push(n);
            }
        }
        out.extend(
            self.scalar
                .iter()
                .filter(|(_, v)| *v != 0)
                .map(|(k, _)| k.as_ref()),
        );
        out
    }
}

/// A taint or toleration effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    NoSchedule,
    PreferNoSchedule,
    NoExecute,
}

impl Effect {
    fn parse(s: &str) -> Option<Effect> {
        match s {
            "NoSchedule" => Some(Effect::NoSchedule),
            "PreferNoSchedule" => Some(Effect::PreferNoSchedule),
            "NoExecute" => Some(Effect::NoExecute),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: Effect,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Toleration {
    pub key: String,
    /// `operator: Exists` (any value).
    pub exists: bool,
    pub value: String,
    /// `None`: every effect.
    pub effect: Option<Effect>,
}

impl Toleration {
    /// `Toleration.ToleratesTaint`.
    pub fn tolerates(&self, taint: &Taint) -> bool {
        if self.effect.is_some_and(|e| e != taint.effect) {
            return false;
        }
        if !self.key.is_empty() && self.key != taint.key {
            return false;
        }
        self.exists || self.value == taint.value
    }
}

/// A node selector operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    In,
    NotIn,
    Exists,
    DoesNotExist,
    Gt,
    Lt,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: Op,
    pub values: Vec<String>,
}

impl Requirement {
    fn from_api(r: &NodeSelectorRequirement) -> Option<Requirement> {
        let op = match r.operator.as_str() {
            "In" => Op::In,
            "NotIn" => Op::NotIn,
            "Exists" => Op::Exists,
            "DoesNotExist" => Op::DoesNotExist,
            "Gt" => Op::Gt,
            "Lt" => Op::Lt,
            _ => return None,
        };
        Some(Requirement {
            key: r.key.clone(),
            op,
            values: r.values.clone().unwrap_or_default(),
        })
    }

    pub fn matches(&self, value: Option<&str>) -> bool {
        match self.op {
            Op::In => value.is_some_and(|v| self.values.iter().any(|x| x == v)),
            Op::NotIn => value.is_none_or(|v| !self.values.iter().any(|x| x == v)),
            Op::Exists => value.is_some(),
            Op::DoesNotExist => value.is_none(),
            Op::Gt | Op::Lt => {
                let (Some(v), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|b| b.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.op == Op::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A compiled `NodeSelectorTerm` (a term with an invalid operator matches nothing, as
/// upstream's `nodeaffinity.NewNodeSelector` errors make it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeSelectorTerm {
    pub exprs: Vec<Requirement>,
    pub fields: Vec<Requirement>,
    pub valid: bool,
}

impl NodeSelectorTerm {
    fn from_api(t: &ApiTerm) -> NodeSelectorTerm {
        let mut valid = true;
        let mut conv = |list: &Option<Vec<NodeSelectorRequirement>>| -> Vec<Requirement> {
            list.iter()
                .flatten()
                .filter_map(|r| {
                    let out = Requirement::from_api(r);
                    valid &= out.is_some();
                    out
                })
                .collect()
        };
        let exprs = conv(&t.match_expressions);
        let fields = conv(&t.match_fields);
        NodeSelectorTerm {
            exprs,
            fields,
            valid,
        }
    }

    /// All expressions and fields match (an empty term matches nothing).
    pub fn matches(&self, node: &NodeInfo) -> bool {
        if !self.valid || (self.exprs.is_empty() && self.fields.is_empty()) {
            return false;
        }
        self.exprs
            .iter()
            .all(|r| r.matches(node.labels.get(&r.key).map(String::as_str)))
            && self
                .fields
                .iter()
                .all(|r| r.key == "metadata.name" && r.matches(Some(&node.name)))
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostPort {
    pub ip: String,
    pub protocol: String,
    pub port: i32,
}

impl HostPort {
    pub fn conflicts(&self, other: &HostPort) -> bool {
        self.port == other.port
            && self.protocol == other.protocol
            && (self.ip == other.ip || self.ip == "0.0.0.0" || other.ip == "0.0.0.0")
    }
}

/// Which namespaces a pod affinity term covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Namespaces {
    /// Every namespace (an empty `namespaceSelector`).
    All,
    /// These (sorted; the pod's own when the term names none).
    List(Vec<String>),
}

impl Namespaces {
    pub fn contains(&self, ns: &str) -> bool {
        match self {
            Namespaces::All => true,
            Namespaces::List(l) => l.iter().any(|n| n == ns),
        }
    }
}

/// A compiled pod (anti-)affinity term.
#[derive(Clone, Debug)]
pub struct AffinityTerm {
    pub namespaces: Namespaces,
    pub selector: LabelSelector,
    pub topology_key: String,
    /// The weight of a preferred term (0 for required ones).
    pub weight: i32,
}

impl AffinityTerm {
    fn from_api(t: &PodAffinityTerm, own_ns: &str, weight: i32) -> Option<AffinityTerm> {
        let selector = LabelSelector::from_metav1(t.label_selector.as_ref())
            .unwrap_or_else(|_| LabelSelector::nothing());
        let namespaces = match (&t.namespaces, &t.namespace_selector) {
            (_, Some(sel))
                if sel.match_labels.as_ref().is_none_or(BTreeMap::is_empty)
                    && sel.match_expressions.as_ref().is_none_or(Vec::is_empty) =>
            {
                Namespaces::All
            }
            (Some(list), _) if !list.is_empty() => {
                let mut l = list.clone();
                l.sort();
                l.dedup();
                Namespaces::List(l)
            }
            _ => Namespaces::List(vec![own_ns.to_string()]),
        };
        Some(AffinityTerm {
            namespaces,
            selector,
            topology_key: t.topology_key.clone(),
            weight,
        })
    }

    /// Whether `pod` is one this term selects.
    pub fn matches(&self, pod: &PodInfo) -> bool {
        self.namespaces.contains(&pod.namespace) && self.selector.matches_labels(&pod.labels)
    }
}

/// `whenUnsatisfiable` of a spread constraint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WhenUnsatisfiable {
    DoNotSchedule,
    ScheduleAnyway,
}

/// A topology spread constraint.
#[derive(Clone, Debug)]
pub struct SpreadConstraint {
    pub max_skew: i32,
    pub topology_key: String,
    pub when_unsatisfiable: WhenUnsatisfiable,
    pub selector: LabelSelector,
    pub min_domains: Option<i32>,
    /// `nodeAffinityPolicy: Honor` (the default).
    pub honor_node_affinity: bool,
    /// `nodeTaintsPolicy: Honor` (default Ignore).
    pub honor_node_taints: bool,
}

/// A pod's labels, compact: sorted pairs in one allocation. The scheduler keeps every
/// pod's, and a `BTreeMap` of a pod's two or three labels costs about 700 bytes (its leaf
/// node is sized for eleven), these about 130.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PodLabels(Box<[(Box<str>, Box<str>)]>);

impl PodLabels {
    pub fn get(&self, key: &str) -> Option<&str> {
        let i = self.0.binary_search_by(|(k, _)| (**k).cmp(key)).ok()?;
        self.0.get(i).map(|(_, v)| &**v)
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Sets `key` to `value`.
    pub fn insert(&mut self, key: &str, value: &str) {
        let mut pairs = std::mem::take(&mut self.0).into_vec();
        match pairs.binary_search_by(|(k, _)| (**k).cmp(key)) {
            Ok(i) => {
                if let Some(pair) = pairs.get_mut(i) {
                    pair.1 = value.into();
                }
            }
            Err(i) => pairs.insert(i, (key.into(), value.into())),
        }
        self.0 = pairs.into_boxed_slice();
    }
}

impl From<&BTreeMap<String, String>> for PodLabels {
    fn from(labels: &BTreeMap<String, String>) -> Self {
        PodLabels(
            labels
                .iter()
                .map(|(k, v)| (k.as_str().into(), v.as_str().into()))
                .collect(),
        )
    }
}

impl api::selector::Labels for PodLabels {
    fn get_label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

impl<'a> IntoIterator for &'a PodLabels {
    type Item = (&'a str, &'a str);
    type IntoIter = std::iter::Map<
        std::slice::Iter<'a, (Box<str>, Box<str>)>,
        fn(&'a (Box<str>, Box<str>)) -> (&'a str, &'a str),
    >;

    fn into_iter(self) -> Self::IntoIter {
        self.0.iter().map(|(k, v)| (&**k, &**v))
    }
}

/// A pod as the scheduler sees it.
#[derive(Clone, Debug, Default)]
pub struct PodInfo {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub labels: PodLabels,
    pub scheduler_name: String,
    /// `spec.nodeName` (empty while unscheduled).
    pub node_name: String,
    pub nominated_node_name: String,
    pub priority: i32,
    pub preempt_never: bool,
    pub requests: Resources,
    /// CPU and memory with upstream's non-zero defaults, for scoring.
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    pub tolerations: Vec<Toleration>,
    pub node_selector: Vec<(String, String)>,
    /// Required node affinity terms (ORed); `None` when there are none.
    pub required_terms: Option<Vec<NodeSelectorTerm>>,
    pub preferred_terms: Vec<(i32, NodeSelectorTerm)>,
    pub host_ports: Vec<HostPort>,
    pub spread: Vec<SpreadConstraint>,
    pub affinity: Vec<AffinityTerm>,
    pub anti_affinity: Vec<AffinityTerm>,
    pub preferred_affinity: Vec<AffinityTerm>,
    pub preferred_anti_affinity: Vec<AffinityTerm>,
    pub images: Vec<String>,
    /// `(kind, name)` of the controller owning the pod.
    pub controller: Option<(String, String)>,
    pub deleting: bool,
    /// Terminal (Succeeded or Failed): no longer counted on its node.
    pub terminal: bool,
    /// Creation time in seconds since the epoch (queue order among equal priorities).
    pub created: i64,
    /// The `PodScheduled` condition's status is `False` with reason `Unschedulable`.
    pub marked_unschedulable: bool,
    /// That condition's message.
    pub unschedulable_message: String,
}

fn requirements(r: Option<&ResourceRequirements>) -> Resources {
    Resources::from_list(r.and_then(|r| r.requests.as_ref()))
}

impl PodInfo {
    /// Parsed from a pod object.
    pub fn from_pod(pod: &Pod) -> PodInfo {
        let meta = &pod.metadata;
        let spec = pod.spec.clone().unwrap_or_default();
        let namespace = meta.namespace.clone().unwrap_or_default();
        // Requests as upstream's `resource.PodRequests`: containers summed, raised to any
        // init container's (restartable sidecars added), plus overhead.
        let mut requests = Resources::default();
        for c in &spec.containers {
            requests.add(&requirements(c.resources.as_ref()), 1);
        }
        let mut sidecars = Resources::default();
        for c in spec.init_containers.iter().flatten() {
            let r = requirements(c.resources.as_ref());
            if c.restart_policy.as_deref() == Some("Always") {
                sidecars.add(&r, 1);
                requests.add(&r, 1);
            } else {
                let mut with_sidecars = r;
                with_sidecars.add(&sidecars, 1);
                requests.max_with(&with_sidecars);
            }
        }
        let overhead = Resources::from_list(spec.overhead.as_ref());
        requests.add(&overhead, 1);
        let non_zero_cpu = if requests.milli_cpu == 0 {
            DEFAULT_MILLI_CPU
        } else {
            requests.milli_cpu
        };
        let non_zero_memory = if requests.memory == 0 {
            DEFAULT_MEMORY
        } else {
            requests.memory
        };
        let tolerations = spec
            .tolerations
            .iter()
            .flatten()
            .map(|t| Toleration {
                key: t.key.clone().unwrap_or_default(),
                exists: t.operator.as_deref() == Some("Exists"),
                value: t.value.clone().unwrap_or_default(),
                effect: t.effect.as_deref().and_then(Effect::parse),
            })
            .collect();
        let affinity = spec.affinity.clone().unwrap_or_default();
        let node_aff = affinity.node_affinity.unwrap_or_default();
        let required_terms = node_aff
            .required_during_scheduling_ignored_during_execution
            .map(|s| {
                s.node_selector_terms
                    .iter()
                    .map(NodeSelectorTerm::from_api)
                    .collect()
            });
        let preferred_terms = node_aff
            .preferred_during_scheduling_ignored_during_execution
            .iter()
            .flatten()
            .map(|p| (p.weight, NodeSelectorTerm::from_api(&p.preference)))
            .collect();
        let pod_aff = affinity.pod_affinity.unwrap_or_default();
        let pod_anti = affinity.pod_anti_affinity.unwrap_or_default();
        let req_terms = |terms: Option<Vec<PodAffinityTerm>>| -> Vec<AffinityTerm> {
            terms
                .iter()
                .flatten()
                .filter_map(|t| AffinityTerm::from_api(t, &namespace, 0))
                .collect()
        };
        let pref_terms = |terms: Option<
            Vec<k8s_openapi::api::core::v1::WeightedPodAffinityTerm>,
        >| {
            terms
                .iter()
                .flatten()
                .filter_map(|t| AffinityTerm::from_api(&t.pod_affinity_term, &namespace, t.weight))
                .collect::<Vec<_>>()
        };
        let host_ports = spec
            .init_containers
            .iter()
            .flatten()
            .chain(spec.containers.iter())
            .flat_map(|c| c.ports.iter().flatten())
            .filter_map(|p| {
                let port = p.host_port.filter(|p| *p > 0)?;
                Some(HostPort {
                    ip: p
                        .host_ip
                        .clone()
                        .filter(|s| !s.is_empty())
                        .unwrap_or_else(|| "0.0.0.0".into()),
                    protocol: p.protocol.clone().unwrap_or_else(|| "TCP".into()),
                    port,
                })
            })
            .collect();
        let labels = meta
            .labels
            .as_ref()
            .map(PodLabels::from)
            .unwrap_or_default();
        let spread = spec
            .topology_spread_constraints
            .iter()
            .flatten()
            .map(|c| {
                let mut selector = LabelSelector::from_metav1(c.label_selector.as_ref())
                    .unwrap_or_else(|_| LabelSelector::nothing());
                // matchLabelKeys: the pod's values for those keys join the selector.
                let extra: Vec<(&str, &str)> = c
                    .match_label_keys
                    .iter()
                    .flatten()
                    .filter_map(|k| labels.get(k).map(|v| (k.as_str(), v)))
                    .collect();
                if !extra.is_empty() {
                    let more = LabelSelector::from_set(extra);
                    selector = selector.add_requirements(more.requirements().iter().cloned());
                }
                SpreadConstraint {
                    max_skew: c.max_skew,
                    topology_key: c.topology_key.clone(),
                    when_unsatisfiable: if c.when_unsatisfiable == "ScheduleAnyway" {
                        WhenUnsatisfiable::ScheduleAnyway
                    } else {
                        WhenUnsatisfiable::DoNotSchedule
                    },
                    selector,
                    min_domains: c.min_domains,
                    honor_node_affinity: c.node_affinity_policy.as_deref() != Some("Ignore"),
                    honor_node_taints: c.node_taints_policy.as_deref() == Some("Honor"),
                }
            })
            .collect();
        let status = pod.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or_default();
        let unschedulable = status
            .and_then(|s| s.conditions.as_ref())
            .into_iter()
            .flatten()
            .find(|c| {
                c.type_ == "PodScheduled"
                    && c.status == "False"
                    && c.reason.as_deref() == Some("Unschedulable")
            });
        let marked_unschedulable = unschedulable.is_some();
        let unschedulable_message = unschedulable
            .and_then(|c| c.message.clone())
            .unwrap_or_default();
        PodInfo {
            name: meta.name.clone().unwrap_or_default(),
            uid: meta.uid.clone().unwrap_or_default(),
            resource_version: meta.resource_version.clone().unwrap_or_default(),
            labels,
            scheduler_name: spec
                .scheduler_name
                .clone()
                .unwrap_or_else(|| "default-scheduler".into()),
            node_name: spec.node_name.clone().unwrap_or_default(),
            nominated_node_name: status
                .and_then(|s| s.nominated_node_name.clone())
                .unwrap_or_default(),
            priority: spec.priority.unwrap_or(0),
            preempt_never: spec.preemption_policy.as_deref() == Some("Never"),
            requests,
            non_zero_cpu,
            non_zero_memory,
            tolerations,
            node_selector: spec
                .node_selector
                .clone()
                .unwrap_or_default()
                .into_iter()
                .collect(),
            required_terms,
            preferred_terms,
            host_ports,
            spread,
            affinity: req_terms(pod_aff.required_during_scheduling_ignored_during_execution),
            anti_affinity: req_terms(pod_anti.required_during_scheduling_ignored_during_execution),
            preferred_affinity: pref_terms(
                pod_aff.preferred_during_scheduling_ignored_during_execution,
            ),
            preferred_anti_affinity: pref_terms(
                pod_anti.preferred_during_scheduling_ignored_during_execution,
            ),
            images: spec
                .containers
                .iter()
                .filter_map(|c| c.image.clone())
                .collect(),
            controller: meta
                .owner_references
                .iter()
                .flatten()
                .find(|o| o.controller == Some(true))
                .map(|o| (o.kind.clone(), o.name.clone())),
            deleting: meta.deletion_timestamp.is_some(),
            terminal: matches!(phase, "Succeeded" | "Failed"),
            created: meta
                .creation_timestamp
                .as_ref()
                .map_or(0, |t| t.0.as_second()),
            marked_unschedulable,
            unschedulable_message,
            namespace,
        }
    }

    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.namespace, self.name)
    }
}

/// A node as the scheduler's cache holds it, with the pods bound or assumed there.
#[derive(Clone, Debug, Default)]
pub struct NodeInfo {
    pub name: String,
    pub labels: BTreeMap<String, String>,
    pub taints: Vec<Taint>,
    pub unschedulable: bool,
    pub allocatable: Resources,
    /// Requests of the pods on the node.
    pub requested: Resources,
    pub non_zero_cpu: i64,
    pub non_zero_memory: i64,
    pub pod_count: i64,
    pub used_ports: Vec<HostPort>,
    /// Image names (every tag and digest name) and sizes.
    pub images: BTreeMap<String, i64>,
    /// The pods on the node (shared with the cache's pod table).
    pub pods: Vec<Arc<PodInfo>>,
    /// Whether a node object exists (a node may be known only from its pods).
    pub present: bool,
    /// The node's domain id of each topology key the cache counts by (its
    /// [`crate::cache::Domains`]), [`NO_DOMAIN`] where it lacks the label; kept by the
    /// cache whenever the labels or the keys change.
    pub domains: Vec<u32>,
}

/// A node's domain of a topology key it lacks.
pub const NO_DOMAIN: u32 = u32::MAX;

impl NodeInfo {
    /// Parsed from a node object (pods are added by the cache).
    pub fn from_node(node: &Node) -> NodeInfo {
        let mut info = NodeInfo::default();
        info.set_node(node);
        info
    }

    /// The node's domain id of topology key `key` (an id of the cache's
    /// [`crate::cache::Domains`]), or [`NO_DOMAIN`].
    pub fn domain(&self, key: usize) -> u32 {
        self.domains.get(key).copied().unwrap_or(NO_DOMAIN)
    }

    /// Replaces the node part, keeping the pods.
    pub fn set_node(&mut self, node: &Node) {
        let spec = node.spec.clone().unwrap_or_default();
        let status = node.status.clone().unwrap_or_default();
        self.name = node.metadata.name.clone().unwrap_or_default();
        self.labels = node.metadata.labels.clone().unwrap_or_default();
        self.taints = spec
            .taints
            .iter()
            .flatten()
            .filter_map(|t| {
                Some(Taint {
                    key: t.key.clone(),
                    value: t.value.clone().unwrap_or_default(),
                    effect: Effect::parse(&t.effect)?,
                })
            })
            .collect();
        self.unschedulable = spec.unschedulable == Some(true);
        self.allocatable = Resources::from_list(status.allocatable.as_ref());
        self.images = status
            .images
            .iter()
            .flatten()
            .flat_map(|i| {
                let size = i.size_bytes.unwrap_or(0);
                i.names
                    .iter()
                    .flatten()
                    .map(move |n| (normalize_image(n), size))
            })
            .collect();
        self.present = true;
    }

    pub fn add_pod(&mut self, pod: Arc<PodInfo>) {
        self.requested.add(&pod.requests, 1);
        self.non_zero_cpu += pod.non_zero_cpu;
        self.non_zero_memory += pod.non_zero_memory;
        self.pod_count += 1;
        self.used_ports.extend(pod.host_ports.iter().cloned());
        self.pods.push(pod);
    }

    /// Removes the pod with `uid`; false when it is not here.
    pub fn remove_pod(&mut self, uid: &str) -> bool {
        let Some(at) = self.pods.iter().position(|p| p.uid == uid) else {
            return false;
        };
        let pod = self.pods.swap_remove(at);
        self.requested.add(&pod.requests, -1);
        self.non_zero_cpu -= pod.non_zero_cpu;
        self.non_zero_memory -= pod.non_zero_memory;
        self.pod_count -= 1;
        for hp in &pod.host_ports {
            if let Some(i) = self.used_ports.iter().position(|u| u == hp) {
                self.used_ports.swap_remove(i);
            }
        }
        true
    }
}

/// An image reference as nodes report it: `nginx` → `docker.io/library/nginx:latest`.
pub fn normalize_image(name: &str) -> String {
    let (repo, suffix) = match name.find('@') {
        Some(at) => (&name[..at], &name[at..]),
        None => {
            let slash = name.rfind('/').map_or(0, |i| i + 1);
            match name[slash..].find(':') {
                Some(c) => (&name[..slash + c], &name[slash + c..]),
                None => (name, ":latest"),
            }
        }
    };
    let first = repo.split('/').next().unwrap_or_default();
    let has_domain =
        repo.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost");
    let repo = if has_domain {
        repo.to_string()
    } else if repo.contains('/') {
        format!("docker.io/{repo}")
    } else {
        format!("docker.io/library/{repo}")
    };
    format!("{repo}{suffix}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pod_labels_are_sorted_pairs_read_as_a_map() {
        let map: BTreeMap<String, String> = [("b", "2"), ("a", "1"), ("c", "")]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        let mut labels = PodLabels::from(&map);
        assert_eq!(labels.get("a"), Some("1"));
        assert_eq!(labels.get("c"), Some(""));
        assert_eq!(labels.get("d"), None);
        assert_eq!(
            labels.iter().collect::<Vec<_>>(),
            [("a", "1"), ("b", "2"), ("c", "")]
        );
        let selector = LabelSelector::from_set([("a", "1"), ("b", "2")]);
        assert!(selector.matches_labels(&labels));
        labels.insert("b", "3");
        labels.insert("0", "z");
        assert!(!selector.matches_labels(&labels));
        assert_eq!(
            (&labels).into_iter().map(|(k, _)| k).collect::<Vec<_>>(),
            ["0", "a", "b", "c"]
        );
        assert!(PodLabels::default().is_empty());
    }

    #[test]
    fn images_are_normalized_as_docker_references() {
        assert_eq!(normalize_image("nginx"), "docker.io/library/nginx:latest");
        assert_eq!(
            normalize_image("nginx:1.25"),
            "docker.io/library/nginx:1.25"
        );
        assert_eq!(normalize_image("me/app"), "docker.io/me/app:latest");
        assert_eq!(
            normalize_image("registry.local:5000/web:1"),
            "registry.local:5000/web:1"
        );
        assert_eq!(
            normalize_image("localhost/x@sha256:ab"),
            "localhost/x@sha256:ab"
        );
    }

    #[test]
    fn resources_add_and_remove_extended_ones() {
        let mut a = Resources::default();
        let mut b = Resources::default();
        b.set("cpu", 500);
        b.set("example.com/gpu", 2);
        a.add(&b, 1);
        a.add(&b, 1);
        assert_eq!(a.get("cpu"), 1000);
        assert_eq!(a.get("example.com/gpu"), 4);
        a.add(&b, -1);
        assert_eq!(a.get("example.com/gpu"), 2);
        assert_eq!(a.names(), vec!["cpu", "example.com/gpu"]);
    }
}
