//! The plugins that count pods per topology domain, over the cache's incremental
//! counters ([`crate::cache::Counter`]): `PodTopologySpread` (with upstream's system
//! default constraints, built from the Services and the controller selecting the pod) and
//! `InterPodAffinity` (required and preferred affinity and anti-affinity, and the
//! required anti-affinity of pods already bound).
//!
//! Known differences from upstream, by design of the counters: spreading counts the
//! matching pods of every node of a domain (upstream leaves out nodes the incoming pod's
//! node affinity excludes, which only differs when a domain mixes such nodes), and the
//! preferred terms of bound pods towards the incoming pod are not scored.

use std::collections::{BTreeMap, HashMap, HashSet};

use api::selector::LabelSelector;

use crate::cache::Cache;
use crate::framework::{CycleState, Fail, MAX_NODE_SCORE, Plugin};
use crate::model::{NO_DOMAIN, Namespaces, NodeInfo, PodInfo, SpreadConstraint, WhenUnsatisfiable};
use crate::plugins::node_matches_affinity;

pub const ERR_SPREAD: &str = "node(s) didn't match pod topology spread constraints";
pub const ERR_SPREAD_LABEL: &str =
    "node(s) didn't match pod topology spread constraints (missing required label)";
pub const ERR_AFFINITY: &str = "node(s) didn't match pod affinity rules";
pub const ERR_ANTI_AFFINITY: &str = "node(s) didn't match pod anti-affinity rules";
pub const ERR_EXISTING_ANTI_AFFINITY: &str =
    "node(s) didn't satisfy existing pods anti-affinity rules";

/// The selectors of the objects that upstream's `DefaultSelector` consults.
#[derive(Debug, Default)]
pub struct OwnerSelectors {
    /// Services' `spec.selector` per namespace, by name.
    pub services: HashMap<String, BTreeMap<String, BTreeMap<String, String>>>,
    /// `(kind, namespace, name)` → the selector of a ReplicaSet, StatefulSet or
    /// ReplicationController.
    pub controllers: HashMap<(String, String, String), LabelSelector>,
}

impl OwnerSelectors {
    /// Upstream's `DefaultSelector`: the Services selecting the pod merged, plus its
    /// controller's selector.
    pub fn default_selector(&self, pod: &PodInfo) -> LabelSelector {
        let mut set: BTreeMap<&str, &str> = BTreeMap::new();
        for sel in self
            .services
            .get(&pod.namespace)
            .into_iter()
            .flat_map(|m| m.values())
        {
            if !sel.is_empty() && sel.iter().all(|(k, v)| pod.labels.get(k) == Some(v)) {
                for (k, v) in sel {
                    set.insert(k, v);
                }
            }
        }
        let mut selector = LabelSelector::from_set(set);
        if let Some((kind, name)) = &pod.controller
            && let Some(owner) =
                self.controllers
                    .get(&(kind.clone(), pod.namespace.clone(), name.clone()))
        {
            selector = selector.add_requirements(owner.requirements().iter().cloned());
        }
        selector
    }
}

/// How `PodTopologySpread` defaults constraints for pods that have none.
#[derive(Clone, Debug)]
pub enum Defaulting {
    /// Upstream's system defaults: hostname (maxSkew 3) and zone (maxSkew 5), both
    /// ScheduleAnyway.
    System,
    /// `defaultingType: List` with these constraints (their selectors are ignored; the
    /// default selector is used).
    List(Vec<(i32, String, WhenUnsatisfiable)>),
}

/// `PodTopologySpread`.
pub struct PodTopologySpread {
    pub defaulting: Defaulting,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread {
            defaulting: Defaulting::System,
        }
    }
}

struct SpreadFilterState {
    /// (counter, global minimum, self match, maxSkew)
    constraints: Vec<(usize, u32, u32, i32)>,
}

struct SpreadScoreState {
    /// (counter, weight, maxSkew)
    constraints: Vec<(usize, f64, i32)>,
    /// Nodes without every key are ignored (not with the system defaults).
    require_all: bool,
}

impl SpreadScoreState {
    /// A node's raw score: the matching pods in its domains, weighted (`-1`: ignored).
    fn score(&self, node: &NodeInfo, cache: &Cache) -> i64 {
        if self.constraints.is_empty() {
            return 0;
        }
        // Nodes without every key are ignored (upstream's IgnoredNodes).
        if self.require_all
            && self
                .constraints
                .iter()
                .any(|(id, ..)| cache.count_on(*id, node).is_none())
        {
            return -1;
        }
        let mut score = 0.0;
        for (id, weight, max_skew) in &self.constraints {
            let Some(count) = cache.count_on(*id, node) else {
                continue;
            };
            let count = f64::from(count);
            score += count * weight + f64::from(max_skew - 1);
        }
        score.round() as i64
    }
}

impl PodTopologySpread {
    /// The pod's constraints of one kind, or the defaults of that kind when it has none.
    fn constraints(
        &self,
        pod: &PodInfo,
        cache: &Cache,
        when: WhenUnsatisfiable,
    ) -> Vec<SpreadConstraint> {
        if !pod.spread.is_empty() {
            return pod
                .spread
                .iter()
                .filter(|c| c.when_unsatisfiable == when)
                .cloned()
                .collect();
        }
        let defaults: Vec<(i32, String, WhenUnsatisfiable)> = match &self.defaulting {
            Defaulting::System => vec![
                (
                    3,
                    "kubernetes.io/hostname".into(),
                    WhenUnsatisfiable::ScheduleAnyway,
                ),
                (
                    5,
                    "topology.kubernetes.io/zone".into(),
                    WhenUnsatisfiable::ScheduleAnyway,
                ),
            ],
            Defaulting::List(l) => l.clone(),
        };
        let defaults: Vec<_> = defaults.into_iter().filter(|d| d.2 == when).collect();
        if defaults.is_empty() {
            return Vec::new();
        }
        let selector = cache.owner_selectors.default_selector(pod);
        if selector.is_empty() {
            return Vec::new();
        }
        defaults
            .into_iter()
            .map(|(max_skew, topology_key, when)| SpreadConstraint {
                max_skew,
                topology_key,
                when_unsatisfiable: when,
                selector: selector.clone(),
                min_domains: None,
                honor_node_affinity: true,
                honor_node_taints: false,
            })
            .collect()
    }
}

/// The domains a constraint may place into: those of the nodes the pod's node affinity
/// (and, with `nodeTaintsPolicy: Honor`, taints) admit.
fn eligible_domains(
    pod: &PodInfo,
    c: &SpreadConstraint,
    all_keys: &[&str],
    cache: &mut Cache,
) -> HashSet<String> {
    let restricts = (c.honor_node_affinity
        && (!pod.node_selector.is_empty() || pod.required_terms.is_some()))
        || c.honor_node_taints
        || all_keys.len() > 1;
    if !restricts {
        return cache.domains(&c.topology_key).keys().cloned().collect();
    }
    cache
        .nodes()
        .filter(|n| !c.honor_node_affinity || node_matches_affinity(pod, n))
        .filter(|n| {
            !c.honor_node_taints
                || n.taints.iter().all(|t| {
                    !matches!(
                        t.effect,
                        crate::model::Effect::NoSchedule | crate::model::Effect::NoExecute
                    ) || pod.tolerations.iter().any(|tol| tol.tolerates(t))
                })
        })
        .filter(|n| all_keys.iter().all(|k| n.labels.contains_key(*k)))
        .filter_map(|n| n.labels.get(&c.topology_key).cloned())
        .collect()
}

impl Plugin for PodTopologySpread {
    fn name(&self) -> &'static str {
        "PodTopologySpread"
    }

    fn pre_filter(
        &self,
        pod: &PodInfo,
        cache: &mut Cache,
        state: &mut CycleState,
    ) -> Result<(), Fail> {
        let hard = self.constraints(pod, cache, WhenUnsatisfiable::DoNotSchedule);
        let keys: Vec<String> = hard.iter().map(|c| c.topology_key.clone()).collect();
        let key_refs: Vec<&str> = keys.iter().map(String::as_str).collect();
        let mut out = Vec::new();
        for c in &hard {
            let ns = Namespaces::List(vec![pod.namespace.clone()]);
            let id = cache.counter(&ns, &c.selector, &c.topology_key);
            let eligible = eligible_domains(pod, c, &key_refs, cache);
            let min = if c
                .min_domains
                .is_some_and(|m| usize::try_from(m).unwrap_or(0) > eligible.len())
            {
                0
            } else {
                eligible
                    .iter()
                    .map(|d| cache.count_in(id, d))
                    .min()
                    .unwrap_or(0)
            };
            let self_match = u32::from(c.selector.matches_labels(&pod.labels));
            out.push((id, min, self_match, c.max_skew));
        }
        state.write(
            "PodTopologySpread/filter",
            SpreadFilterState { constraints: out },
        );
        Ok(())
    }

    fn filter(
        &self,
        _: &PodInfo,
        node: &NodeInfo,
        cache: &Cache,
        state: &CycleState,
    ) -> Option<Fail> {
        let s = state.read::<SpreadFilterState>("PodTopologySpread/filter")?;
        if s.constraints
            .iter()
            .any(|(id, ..)| cache.count_on(*id, node).is_none())
        {
            return Some(Fail::unresolvable(ERR_SPREAD_LABEL));
        }
        for (id, min, self_match, max_skew) in &s.constraints {
            let count = cache.count_on(*id, node)?;
            let skew = i64::from(count) + i64::from(*self_match) - i64::from(*min);
            if skew > i64::from(*max_skew) {
                return Some(Fail::new(ERR_SPREAD));
            }
        }
        None
    }

    fn pre_score(&self, pod: &PodInfo, cache: &mut Cache, nodes: &[usize], state: &mut CycleState) {
        let soft = self.constraints(pod, cache, WhenUnsatisfiable::ScheduleAnyway);
        let mut out = Vec::new();
        for c in &soft {
            let ns = Namespaces::List(vec![pod.namespace.clone()]);
            let id = cache.counter(&ns, &c.selector, &c.topology_key);
            let key = cache.counter_key(id);
            let domains = nodes
                .iter()
                .map(|i| cache.node_slots()[*i].domain(key))
                .filter(|d| *d != NO_DOMAIN);
            let size = if c.topology_key == "kubernetes.io/hostname" {
                domains.count()
            } else {
                let mut seen = vec![false; cache.domain_ids().len(key)];
                domains
                    .filter(|d| !std::mem::replace(&mut seen[*d as usize], true))
                    .count()
            };
            let weight = ((size + 2) as f64).ln();
            out.push((id, weight, c.max_skew));
        }
        let require_all = !pod.spread.is_empty() || !matches!(self.defaulting, Defaulting::System);
        state.write(
            "PodTopologySpread/score",
            SpreadScoreState {
                constraints: out,
                require_all,
            },
        );
    }

    fn score(&self, _: &PodInfo, node: &NodeInfo, cache: &Cache, state: &CycleState) -> i64 {
        match state.read::<SpreadScoreState>("PodTopologySpread/score") {
            Some(s) => s.score(node, cache),
            None => 0,
        }
    }

    fn score_all(
        &self,
        _: &PodInfo,
        nodes: &[usize],
        cache: &Cache,
        state: &CycleState,
        out: &mut [i64],
    ) {
        state.score_each_with(
            "PodTopologySpread/score",
            nodes,
            cache,
            out,
            |s: &SpreadScoreState, node| s.score(node, cache),
        );
    }

    fn normalize(&self, scores: &mut [i64]) {
        let valid = scores.iter().copied().filter(|s| *s >= 0);
        let (min, max) = valid.fold((i64::MAX, 0i64), |(lo, hi), s| (lo.min(s), hi.max(s)));
        for s in scores.iter_mut() {
            if *s < 0 {
                *s = 0;
            } else if max == 0 {
                *s = MAX_NODE_SCORE;
            } else {
                *s = MAX_NODE_SCORE * (max + min - *s) / max;
            }
        }
    }
}

/// `InterPodAffinity`.
#[derive(Default)]
pub struct InterPodAffinity;

struct AffinityFilterState {
    /// Required affinity terms' counters.
    affinity: Vec<usize>,
    /// No pod matches any affinity term and the pod matches all of its own.
    affinity_waived: bool,
    /// Required anti-affinity terms' counters.
    anti: Vec<usize>,
    /// `(topology key, value)` domains that bound pods' anti-affinity forbids.
    forbidden: HashSet<(String, String)>,
}

struct AffinityScoreState {
    /// (counter, signed weight)
    terms: Vec<(usize, i64)>,
}

impl AffinityScoreState {
    /// A node's raw score: the weighted count of matching pods in its domains.
    fn score(&self, node: &NodeInfo, cache: &Cache) -> i64 {
        self.terms
            .iter()
            .filter_map(|(id, w)| Some(i64::from(cache.count_on(*id, node)?) * w))
            .sum()
    }
}

impl Plugin for InterPodAffinity {
    fn name(&self) -> &'static str {
        "InterPodAffinity"
    }

    fn pre_filter(
        &self,
        pod: &PodInfo,
        cache: &mut Cache,
        state: &mut CycleState,
    ) -> Result<(), Fail> {
        let mut forbidden = HashSet::new();
        for (other, node) in cache.anti_affinity_pods() {
            for t in &other.anti_affinity {
                if t.matches(pod)
                    && let Some(v) = node.labels.get(&t.topology_key)
                {
                    forbidden.insert((t.topology_key.clone(), v.clone()));
                }
            }
        }
        let affinity: Vec<usize> = pod
            .affinity
            .iter()
            .map(|t| cache.counter(&t.namespaces, &t.selector, &t.topology_key))
            .collect();
        let anti: Vec<usize> = pod
            .anti_affinity
            .iter()
            .map(|t| cache.counter(&t.namespaces, &t.selector, &t.topology_key))
            .collect();
        let none_match = affinity.iter().all(|id| cache.counter_at(*id).total == 0);
        let matches_own = pod.affinity.iter().all(|t| t.matches(pod));
        state.write(
            "InterPodAffinity/filter",
            AffinityFilterState {
                affinity_waived: !affinity.is_empty() && none_match && matches_own,
                affinity,
                anti,
                forbidden,
            },
        );
        Ok(())
    }

    fn filter(
        &self,
        _: &PodInfo,
        node: &NodeInfo,
        cache: &Cache,
        state: &CycleState,
    ) -> Option<Fail> {
        let s = state.read::<AffinityFilterState>("InterPodAffinity/filter")?;
        if s.forbidden
            .iter()
            .any(|(k, v)| node.labels.get(k) == Some(v))
        {
            return Some(Fail::new(ERR_EXISTING_ANTI_AFFINITY));
        }
        for id in &s.anti {
            if cache.count_on(*id, node).is_some_and(|n| n > 0) {
                return Some(Fail::new(ERR_ANTI_AFFINITY));
            }
        }
        for id in &s.affinity {
            let Some(count) = cache.count_on(*id, node) else {
                return Some(Fail::unresolvable(ERR_AFFINITY));
            };
            if !s.affinity_waived && count == 0 {
                return Some(Fail::unresolvable(ERR_AFFINITY));
            }
        }
        None
    }

    fn pre_score(&self, pod: &PodInfo, cache: &mut Cache, _: &[usize], state: &mut CycleState) {
        let mut terms = Vec::new();
        for (list, sign) in [
            (&pod.preferred_affinity, 1),
            (&pod.preferred_anti_affinity, -1),
        ] {
            for t in list {
                let id = cache.counter(&t.namespaces, &t.selector, &t.topology_key);
                terms.push((id, sign * i64::from(t.weight)));
            }
        }
        state.write("InterPodAffinity/score", AffinityScoreState { terms });
    }

    fn score(&self, _: &PodInfo, node: &NodeInfo, cache: &Cache, state: &CycleState) -> i64 {
        match state.read::<AffinityScoreState>("InterPodAffinity/score") {
            Some(s) => s.score(node, cache),
            None => 0,
        }
    }

    fn score_all(
        &self,
        _: &PodInfo,
        nodes: &[usize],
        cache: &Cache,
        state: &CycleState,
        out: &mut [i64],
    ) {
        state.score_each_with(
            "InterPodAffinity/score",
            nodes,
            cache,
            out,
            |s: &AffinityScoreState, node| s.score(node, cache),
        );
    }

    fn normalize(&self, scores: &mut [i64]) {
        let min = scores.iter().copied().min().unwrap_or(0);
        let max = scores.iter().copied().max().unwrap_or(0);
        let diff = max - min;
        for s in scores.iter_mut() {
            *s = if diff > 0 {
                MAX_NODE_SCORE * (*s - min) / diff
            } else {
                0
            };
        }
    }
}
