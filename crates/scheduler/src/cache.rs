//! The scheduler's cache: nodes with the pods bound or assumed on them, and the
//! per-topology-domain counters that make PodTopologySpread and InterPodAffinity cost
//! the same however many pods are bound.
//!
//! A counter counts, per value of one topology key, the pods of some namespaces that a
//! label selector matches. It is built by one pass over the pods the first time a pod
//! needs it, then kept current on every add and remove (a pod only visits the counters
//! indexed under one of its own labels), so a scheduling cycle reads counts instead of
//! walking every bound pod as upstream's PreScore does. The pass is skipped when no pod
//! in the cache carries the selector's exact-match label (a Deployment's first pods:
//! its ReplicaSet's counters start at zero), and looking a counter up builds no string.
//!
//! **Invariant:** a pod is on at most one node; `NodeInfo` sums equal the sum of its pods;
//! every live counter equals a full recount over the cache's pods.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::hash::{BuildHasher, RandomState};
use std::sync::Arc;

use api::selector::LabelSelector;

use crate::model::{NO_DOMAIN, Namespaces, NodeInfo, PodInfo};

/// Matching pods per domain of one topology key.
#[derive(Debug)]
pub struct Counter {
    namespaces: Namespaces,
    selector: LabelSelector,
    /// The topology key's id in the cache's [`Domains`].
    key: usize,
    /// Counts by domain id (a domain without pods may be absent).
    by_domain: Vec<u32>,
    pub total: u32,
}

impl Counter {
    /// The count in the domain with this id.
    fn at(&self, domain: u32) -> u32 {
        self.by_domain.get(domain as usize).copied().unwrap_or(0)
    }

    fn counts(&self, pod: &PodInfo) -> bool {
        !pod.deleting
            && self.namespaces.contains(&pod.namespace)
            && self.selector.matches_labels(&pod.labels)
    }

    fn apply(&mut self, pod: &PodInfo, node: &NodeInfo, sign: i32) {
        let domain = node.domain(self.key);
        if domain == NO_DOMAIN || !self.counts(pod) {
            return;
        }
        let i = domain as usize;
        if self.by_domain.len() <= i {
            self.by_domain.resize(i + 1, 0);
        }
        if sign > 0 {
            self.by_domain[i] += 1;
            self.total += 1;
        } else {
            self.by_domain[i] = self.by_domain[i].saturating_sub(1);
            self.total = self.total.saturating_sub(1);
        }
    }
}

/// Topology domains as numbers: each topology key some counter counts by gets an id, and
/// each of its values a domain id, so that counters are vectors and a node's domain is an
/// index ([`NodeInfo::domains`]) rather than a label lookup and a string hash per node.
/// Ids are never reused (a value no node has any more keeps its id).
#[derive(Debug, Default)]
pub struct Domains {
    key_ids: HashMap<String, usize>,
    keys: Vec<String>,
    /// Per key id: value → domain id, and the values by id.
    ids: Vec<HashMap<String, u32>>,
    values: Vec<Vec<String>>,
}

impl Domains {
    /// How many domain ids a key has handed out.
    pub fn len(&self, key: usize) -> usize {
        self.values.get(key).map_or(0, Vec::len)
    }

    /// The id of `value` of key `key`, if any node had it.
    pub fn id(&self, key: usize, value: &str) -> Option<u32> {
        self.ids.get(key)?.get(value).copied()
    }

    fn intern_key(&mut self, key: &str) -> (usize, bool) {
        if let Some(&k) = self.key_ids.get(key) {
            return (k, false);
        }
        let k = self.keys.len();
        self.keys.push(key.to_string());
        self.key_ids.insert(key.to_string(), k);
        self.ids.push(HashMap::new());
        self.values.push(Vec::new());
        (k, true)
    }

    fn intern(&mut self, key: usize, value: &str) -> u32 {
        if let Some(&d) = self.ids[key].get(value) {
            return d;
        }
        let d = u32::try_from(self.values[key].len()).unwrap_or(NO_DOMAIN - 1);
        self.values[key].push(value.to_string());
        self.ids[key].insert(value.to_string(), d);
        d
    }

    /// A node's domain ids, from its labels.
    fn of(&mut self, labels: &BTreeMap<String, String>) -> Vec<u32> {
        (0..self.keys.len())
            .map(|k| match labels.get(&self.keys[k]) {
                Some(v) => self.intern(k, v),
                None => NO_DOMAIN,
            })
            .collect()
    }
}

/// One label pair's place in the cache: the counters whose selector requires it exactly,
/// and how many cached pods carry it.
#[derive(Debug, Default)]
struct LabelEntry {
    counters: Vec<usize>,
    pods: u32,
}

/// One pod the cache knows.
#[derive(Clone, Debug)]
struct PodEntry {
    info: Arc<PodInfo>,
    node: String,
    assumed: bool,
}

/// Nodes, bound and assumed pods, and counters.
#[derive(Debug, Default)]
pub struct Cache {
    nodes: Vec<NodeInfo>,
    /// How many of `nodes` are present (node objects, not placeholders).
    present: usize,
    index: HashMap<String, usize>,
    pods: HashMap<String, PodEntry>,
    counters: Vec<Counter>,
    /// The topology keys counters count by, and their values, as numbers.
    domain_ids: Domains,
    /// Counters by the hash of what they count (namespaces, selector, topology key);
    /// candidates are compared in full.
    counter_index: HashMap<u64, Vec<usize>>,
    counter_hasher: RandomState,
    /// Label key → value → the counters indexed under that pair and the cached pods
    /// carrying it (looked up by `&str`, without building a key).
    by_label: HashMap<String, HashMap<String, LabelEntry>>,
    /// Counters without an exact-match label (visited by every pod).
    unindexed: Vec<usize>,
    /// Domains per topology key: value → number of nodes (built lazily).
    domains: HashMap<String, HashMap<String, u32>>,
    /// Bound pods with required anti-affinity terms.
    anti_pods: HashSet<String>,
    /// Bumped whenever node objects change (an added, removed or relabelled node).
    pub node_generation: u64,
    /// The selectors of Services and controllers (for default spreading).
    pub owner_selectors: crate::topology::OwnerSelectors,
    /// How many nodes hold each image (`None`: to be recounted).
    image_spread: Option<HashMap<String, i64>>,
    /// Pending pods nominated to a node by preemption, by node (upstream's nominator).
    nominated: HashMap<String, Vec<Arc<PodInfo>>>,
    /// PodDisruptionBudgets, by `namespace/name`, for preemption.
    pdbs: HashMap<String, Pdb>,
}

/// A PodDisruptionBudget as preemption reads it.
#[derive(Clone, Debug)]
pub struct Pdb {
    pub uid: String,
    pub namespace: String,
    /// An empty or invalid selector selects nothing here (as upstream's preemption).
    pub selector: api::selector::LabelSelector,
    pub disruptions_allowed: i32,
    /// `status.disruptedPods`: pods whose eviction was already counted.
    pub disrupted: HashSet<String>,
}

impl Pdb {
    /// From a PodDisruptionBudget object.
    pub fn from_api(pdb: &k8s_openapi::api::policy::v1::PodDisruptionBudget) -> Pdb {
        let spec = pdb.spec.clone().unwrap_or_default();
        let selector = api::selector::LabelSelector::from_metav1(spec.selector.as_ref())
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(api::selector::LabelSelector::nothing);
        let status = pdb.status.as_ref();
        Pdb {
            uid: pdb.metadata.uid.clone().unwrap_or_default(),
            namespace: pdb.metadata.namespace.clone().unwrap_or_default(),
            selector,
            disruptions_allowed: status.map_or(0, |s| s.disruptions_allowed),
            disrupted: status
                .and_then(|s| s.disrupted_pods.as_ref())
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
        }
    }
}

impl Cache {
    pub fn new() -> Cache {
        Cache::default()
    }

    /// The nodes that exist, in a stable order.
    pub fn nodes(&self) -> impl Iterator<Item = &NodeInfo> {
        self.nodes.iter().filter(|n| n.present)
    }

    pub fn node_count(&self) -> usize {
        self.present
    }

    /// All node slots (indexable by position; some may be absent).
    pub fn node_slots(&self) -> &[NodeInfo] {
        &self.nodes
    }

    pub fn node(&self, name: &str) -> Option<&NodeInfo> {
        self.index.get(name).map(|i| &self.nodes[*i])
    }

    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Whether the pod is in the cache as assumed (bound by us, not yet confirmed).
    pub fn is_assumed(&self, uid: &str) -> bool {
        self.pods.get(uid).is_some_and(|p| p.assumed)
    }

    pub fn pod_node(&self, uid: &str) -> Option<&str> {
        self.pods.get(uid).map(|p| p.node.as_str())
    }

    fn slot(&mut self, name: &str) -> usize {
        if let Some(i) = self.index.get(name) {
            return *i;
        }
        self.nodes.push(NodeInfo {
            name: name.to_string(),
            ..NodeInfo::default()
        });
        let i = self.nodes.len() - 1;
        self.index.insert(name.to_string(), i);
        i
    }

    fn node_changed(&mut self) {
        self.node_generation += 1;
        self.domains.clear();
        self.image_spread = None;
    }

    /// A node was added or updated; true when the change may let pods fit (a new node,
    /// or new labels, taints, allocatable resources or schedulability).
    pub fn set_node(&mut self, node: &k8s_openapi::api::core::v1::Node) -> bool {
        let name = node.metadata.name.clone().unwrap_or_default();
        let i = self.slot(&name);
        let before = &self.nodes[i];
        let (labels, taints, alloc, unsched, was_present) = (
            before.labels.clone(),
            before.taints.clone(),
            before.allocatable.clone(),
            before.unschedulable,
            before.present,
        );
        let had_pods = !before.pods.is_empty();
        let images_before = self.nodes[i].images.len();
        self.nodes[i].set_node(node);
        if images_before != 0 || !self.nodes[i].images.is_empty() {
            self.image_spread = None;
        }
        let after = &self.nodes[i];
        let relabelled = labels != after.labels;
        let relevant = !was_present
            || relabelled
            || taints != after.taints
            || alloc != after.allocatable
            || unsched != after.unschedulable;
        if !was_present {
            self.present += 1;
        }
        if !was_present || relabelled {
            self.nodes[i].domains = self.domain_ids.of(&self.nodes[i].labels);
            self.node_changed();
        }
        if relabelled && had_pods {
            // Domains moved: counters are recounted when next needed.
            self.drop_counters();
        }
        relevant
    }

    /// A node was deleted (kept as a placeholder while pods still name it).
    pub fn remove_node(&mut self, name: &str) {
        let Some(&i) = self.index.get(name) else {
            return;
        };
        if self.nodes[i].present {
            self.present -= 1;
        }
        self.nodes[i].present = false;
        if !self.nodes[i].pods.is_empty() {
            self.drop_counters();
        }
        self.nodes[i].labels.clear();
        self.nodes[i].domains.clear();
        self.node_changed();
        if self.nodes[i].pods.is_empty() {
            self.index.remove(name);
            self.nodes.swap_remove(i);
            if let Some(moved) = self.nodes.get(i) {
                self.index.insert(moved.name.clone(), i);
            }
        }
    }

    /// Adds (`sign > 0`) or removes a pod's counts and its labels' pod counts.
    fn count(&mut self, pod: &PodInfo, node_slot: usize, sign: i32) {
        let node = &self.nodes[node_slot];
        let mut visited: Vec<usize> = self.unindexed.clone();
        for (k, v) in &pod.labels {
            if sign > 0 {
                // Keys are copied only for a pair not yet in the index.
                let values = match self.by_label.get_mut(k) {
                    Some(values) => values,
                    None => self.by_label.entry(k.to_string()).or_default(),
                };
                let entry = match values.get_mut(v) {
                    Some(entry) => entry,
                    None => values.entry(v.to_string()).or_default(),
                };
                visited.extend(entry.counters.iter().copied());
                entry.pods += 1;
            } else if let Some(values) = self.by_label.get_mut(k)
                && let Some(entry) = values.get_mut(v)
            {
                visited.extend(entry.counters.iter().copied());
                entry.pods = entry.pods.saturating_sub(1);
                if entry.pods == 0 && entry.counters.is_empty() {
                    values.remove(v);
                    if values.is_empty() {
                        self.by_label.remove(k);
                    }
                }
            }
        }
        visited.sort_unstable();
        visited.dedup();
        for c in visited {
            self.counters[c].apply(pod, node, sign);
        }
    }

    fn place(&mut self, info: Arc<PodInfo>, node: &str, assumed: bool) {
        let i = self.slot(node);
        self.count(&info, i, 1);
        if !info.anti_affinity.is_empty() {
            self.anti_pods.insert(info.uid.clone());
        }
        self.nodes[i].add_pod(Arc::clone(&info));
        self.pods.insert(
            info.uid.clone(),
            PodEntry {
                info,
                node: node.to_string(),
                assumed,
            },
        );
    }

    fn unplace(&mut self, uid: &str) -> Option<PodEntry> {
        let entry = self.pods.remove(uid)?;
        self.anti_pods.remove(uid);
        if let Some(&i) = self.index.get(&entry.node) {
            self.count(&entry.info, i, -1);
            self.nodes[i].remove_pod(uid);
            if !self.nodes[i].present && self.nodes[i].pods.is_empty() {
                let name = entry.node.clone();
                self.index.remove(&name);
                self.nodes.swap_remove(i);
                if let Some(moved) = self.nodes.get(i) {
                    self.index.insert(moved.name.clone(), i);
                }
            }
        }
        Some(entry)
    }

    /// A pod bound to a node was added or updated (confirming an assumed one); terminal
    /// pods leave the cache.
    pub fn set_pod(&mut self, info: PodInfo) {
        if info.terminal || info.node_name.is_empty() {
            self.remove_pod(&info.uid);
            return;
        }
        if let Some(old) = self.pods.get(&info.uid)
            && old.node == info.node_name
            && !old.assumed
            && !pod_changed_for_cache(&old.info, &info)
        {
            return;
        }
        self.unplace(&info.uid);
        let node = info.node_name.clone();
        self.place(Arc::new(info), &node, false);
    }

    pub fn remove_pod(&mut self, uid: &str) {
        self.unplace(uid);
    }

    /// Puts a pod on a node before its binding is written.
    pub fn assume(&mut self, info: Arc<PodInfo>, node: &str) {
        self.unplace(&info.uid);
        self.place(info, node, true);
    }

    /// Records that pending `pod` waits for room on `node` (freed by preemption); it
    /// replaces any earlier nomination of the pod.
    pub fn nominate(&mut self, pod: Arc<PodInfo>, node: &str) {
        self.clear_nomination(&pod.uid);
        self.nominated
            .entry(node.to_string())
            .or_default()
            .push(pod);
    }

    /// Forgets the nomination of the pod with `uid` (bound, deleted, or no longer
    /// nominated).
    pub fn clear_nomination(&mut self, uid: &str) {
        self.nominated.retain(|_, pods| {
            pods.retain(|p| p.uid != uid);
            !pods.is_empty()
        });
    }

    /// The pods nominated to `node`.
    pub fn nominated_on(&self, node: &str) -> &[Arc<PodInfo>] {
        self.nominated.get(node).map_or(&[], Vec::as_slice)
    }

    pub fn set_pdb(&mut self, key: String, pdb: Pdb) {
        self.pdbs.insert(key, pdb);
    }

    pub fn remove_pdb(&mut self, key: &str) {
        self.pdbs.remove(key);
    }

    /// After a relist: drops the budgets whose uid it did not see.
    pub fn retain_pdbs(&mut self, seen: &HashSet<String>) {
        self.pdbs.retain(|_, p| seen.contains(&p.uid));
    }

    pub fn pdbs(&self) -> impl Iterator<Item = &Pdb> {
        self.pdbs.values()
    }

    /// Takes back an assumed pod whose binding failed.
    pub fn forget(&mut self, uid: &str) {
        if self.is_assumed(uid) {
            self.unplace(uid);
        }
    }

    fn drop_counters(&mut self) {
        self.counters.clear();
        self.counter_index.clear();
        self.by_label.retain(|_, values| {
            values.retain(|_, e| {
                e.counters.clear();
                e.pods > 0
            });
            !values.is_empty()
        });
        self.unindexed.clear();
    }

    /// The counter for `(namespaces, selector, topology_key)`, built on first use.
    pub fn counter(
        &mut self,
        namespaces: &Namespaces,
        selector: &LabelSelector,
        topology_key: &str,
    ) -> usize {
        let hash = self
            .counter_hasher
            .hash_one((namespaces, selector, topology_key));
        let found = self.counter_index.get(&hash).and_then(|ids| {
            ids.iter().copied().find(|&id| {
                let c = &self.counters[id];
                c.namespaces == *namespaces
                    && c.selector == *selector
                    && self.domain_ids.keys[c.key] == topology_key
            })
        });
        if let Some(id) = found {
            return id;
        }
        let (key_id, new_key) = self.domain_ids.intern_key(topology_key);
        if new_key {
            for n in &mut self.nodes {
                n.domains = self.domain_ids.of(&n.labels);
            }
        }
        let mut counter = Counter {
            namespaces: namespaces.clone(),
            selector: selector.clone(),
            key: key_id,
            by_domain: Vec::new(),
            total: 0,
        };
        let exact = selector
            .requirements()
            .iter()
            .find_map(|r| selector.requires_exact_match(r.key()).map(|v| (r.key(), v)));
        // Only pods carrying the exact-match label can count: none cached, none to count.
        let carried = exact.is_none_or(|(k, v)| {
            self.by_label
                .get(k)
                .and_then(|values| values.get(v))
                .is_some_and(|e| e.pods > 0)
        });
        if carried {
            for entry in self.pods.values() {
                if let Some(&i) = self.index.get(&entry.node) {
                    counter.apply(&entry.info, &self.nodes[i], 1);
                }
            }
        }
        let id = self.counters.len();
        self.counters.push(counter);
        self.counter_index.entry(hash).or_default().push(id);
        match exact {
            Some((k, v)) => self
                .by_label
                .entry(k.to_string())
                .or_default()
                .entry(v.to_string())
                .or_default()
                .counters
                .push(id),
            None => self.unindexed.push(id),
        }
        id
    }

    pub fn counter_at(&self, id: usize) -> &Counter {
        &self.counters[id]
    }

    /// The count of counter `id` in `node`'s domain; `None` when the node lacks the
    /// counter's topology key.
    pub fn count_on(&self, id: usize, node: &NodeInfo) -> Option<u32> {
        let counter = &self.counters[id];
        let domain = node.domain(counter.key);
        (domain != NO_DOMAIN).then(|| counter.at(domain))
    }

    /// The count of counter `id` in the domain named `value`.
    pub fn count_in(&self, id: usize, value: &str) -> u32 {
        let counter = &self.counters[id];
        self.domain_ids
            .id(counter.key, value)
            .map_or(0, |d| counter.at(d))
    }

    /// Counter `id`'s non-zero counts by domain name.
    pub fn counts_by_domain(&self, id: usize) -> BTreeMap<String, u32> {
        let counter = &self.counters[id];
        let names = &self.domain_ids.values[counter.key];
        counter
            .by_domain
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(d, n)| (names[d].clone(), *n))
            .collect()
    }

    /// The id of the topology key counter `id` counts by (see [`NodeInfo::domain`]).
    pub fn counter_key(&self, id: usize) -> usize {
        self.counters[id].key
    }

    /// The topology keys and values in use, as numbers.
    pub fn domain_ids(&self) -> &Domains {
        &self.domain_ids
    }

    /// The domains of `topology_key` among existing nodes (value → node count).
    pub fn domains(&mut self, topology_key: &str) -> &HashMap<String, u32> {
        let nodes = &self.nodes;
        self.domains
            .entry(topology_key.to_string())
            .or_insert_with(|| {
                let mut map: HashMap<String, u32> = HashMap::new();
                for n in nodes.iter().filter(|n| n.present) {
                    if let Some(v) = n.labels.get(topology_key) {
                        *map.entry(v.clone()).or_default() += 1;
                    }
                }
                map
            })
    }

    /// How many existing nodes hold `image` (normalized), counted once per change of the
    /// nodes' image lists rather than once per pod.
    pub fn nodes_with_image(&mut self, image: &str) -> i64 {
        let nodes = &self.nodes;
        let spread = self.image_spread.get_or_insert_with(|| {
            let mut m: HashMap<String, i64> = HashMap::new();
            for n in nodes.iter().filter(|n| n.present) {
                for i in n.images.keys() {
                    *m.entry(i.clone()).or_default() += 1;
                }
            }
            m
        });
        spread.get(image).copied().unwrap_or(0)
    }

    /// The bound pods with required anti-affinity terms.
    pub fn anti_affinity_pods(&self) -> impl Iterator<Item = (&PodInfo, &NodeInfo)> {
        self.anti_pods.iter().filter_map(|uid| {
            let e = self.pods.get(uid)?;
            let n = self.index.get(&e.node).map(|i| &self.nodes[*i])?;
            Some((e.info.as_ref(), n))
        })
    }

    /// Every pod in the cache with its node name (for tests and preemption).
    pub fn pods(&self) -> impl Iterator<Item = (&PodInfo, &str)> {
        self.pods
            .values()
            .map(|e| (e.info.as_ref(), e.node.as_str()))
    }

    /// Rough bytes held per pod (for the memory report).
    pub fn approx_bytes(&self) -> usize {
        let per_pod: usize = self
            .pods
            .values()
            .map(|e| {
                std::mem::size_of::<PodInfo>()
                    + e.info.name.len()
                    + e.info.namespace.len()
                    + e.info.uid.len() * 2
                    + e.info
                        .labels
                        .iter()
                        .map(|(k, v)| k.len() + v.len() + 48)
                        .sum::<usize>()
            })
            .sum();
        per_pod + self.nodes.len() * std::mem::size_of::<NodeInfo>()
    }
}

/// Whether an update changes anything the cache derives from a bound pod.
fn pod_changed_for_cache(old: &PodInfo, new: &PodInfo) -> bool {
    old.labels != new.labels
        || old.deleting != new.deleting
        || old.requests != new.requests
        || old.host_ports != new.host_ports
        || old.anti_affinity.len() != new.anti_affinity.len()
}

/// A label map helper for tests.
pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}
