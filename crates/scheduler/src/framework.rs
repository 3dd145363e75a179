//! The scheduling framework: plugins at upstream's extension points (PreFilter, Filter,
//! PostFilter, PreScore, Score, NormalizeScore, Reserve, Permit, PreBind, Bind), a profile
//! that orders them with weights, and one scheduling cycle as a pure function of a pod and
//! the cache: feasible nodes (sampled as upstream's `percentageOfNodesToScore`), weighted
//! normalized scores, the chosen node or a `FitError`.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::Cache;
use crate::model::{NodeInfo, PodInfo};

/// The highest score a plugin gives a node.
pub const MAX_NODE_SCORE: i64 = 100;

/// Why a node (or every node) does not fit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fail {
    pub reasons: Vec<String>,
    /// `UnschedulableAndUnresolvable`: preempting pods would not help.
    pub unresolvable: bool,
}

impl Fail {
    pub fn new(reason: impl Into<String>) -> Fail {
        Fail {
            reasons: vec![reason.into()],
            unresolvable: false,
        }
    }

    pub fn unresolvable(reason: impl Into<String>) -> Fail {
        Fail {
            reasons: vec![reason.into()],
            unresolvable: true,
        }
    }
}

/// What a plugin computed for the pod being scheduled (upstream's CycleState). A few
/// entries, read once per plugin and node: a short list beats hashing the key each time.
#[derive(Default)]
pub struct CycleState {
    data: Vec<(&'static str, Box<dyn Any + Send + Sync>)>,
}

impl CycleState {
    pub fn write<T: Any + Send + Sync>(&mut self, key: &'static str, v: T) {
        let v: Box<dyn Any + Send + Sync> = Box::new(v);
        match self.data.iter_mut().find(|(k, _)| *k == key) {
            Some(slot) => slot.1 = v,
            None => self.data.push((key, v)),
        }
    }

    pub fn read<T: Any>(&self, key: &'static str) -> Option<&T> {
        self.data
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, b)| b.downcast_ref())
    }

    /// Fills `out` with `score` of each node of `nodes` given what PreScore left under
    /// `key`, read once (every node scores 0 without it): a Score plugin's `score_all`.
    pub fn score_each_with<T: Any>(
        &self,
        key: &'static str,
        nodes: &[usize],
        cache: &Cache,
        out: &mut [i64],
        score: impl Fn(&T, &NodeInfo) -> i64,
    ) {
        match self.read::<T>(key) {
            Some(s) => score_each(nodes, cache, out, |node| score(s, node)),
            None => out.fill(0),
        }
    }
}

/// A Permit plugin's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Permit {
    Allow,
    Reject(String),
}

/// A scheduling plugin; every extension point defaults to doing nothing.
pub trait Plugin: Send + Sync {
    fn name(&self) -> &'static str;

    /// Computes what Filter needs; an error rejects the pod on every node.
    fn pre_filter(
        &self,
        _pod: &PodInfo,
        _cache: &mut Cache,
        _state: &mut CycleState,
    ) -> Result<(), Fail> {
        Ok(())
    }

    /// Whether the pod fits on the node (`None`: it does).
    fn filter(
        &self,
        _pod: &PodInfo,
        _node: &NodeInfo,
        _cache: &Cache,
        _state: &CycleState,
    ) -> Option<Fail> {
        None
    }

    /// Computes what Score needs over the feasible nodes.
    fn pre_score(
        &self,
        _pod: &PodInfo,
        _cache: &mut Cache,
        _nodes: &[usize],
        _state: &mut CycleState,
    ) {
    }

    /// The node's raw score (`-1`: ignored by this plugin, 0 after normalizing).
    fn score(&self, _pod: &PodInfo, _node: &NodeInfo, _cache: &Cache, _state: &CycleState) -> i64 {
        0
    }

    /// The raw scores of the feasible nodes `nodes` (slots in the cache), into `out` (one
    /// per node). Node by node by default; a plugin with per-cycle state overrides it to
    /// read that state once per cycle rather than once per node.
    fn score_all(
        &self,
        pod: &PodInfo,
        nodes: &[usize],
        cache: &Cache,
        state: &CycleState,
        out: &mut [i64],
    ) {
        score_each(nodes, cache, out, |node| {
            self.score(pod, node, cache, state)
        });
    }

    /// Scales raw scores to 0–100.
    fn normalize(&self, _scores: &mut [i64]) {}

    fn reserve(&self, _pod: &PodInfo, _node: &str) -> Result<(), String> {
        Ok(())
    }

    fn unreserve(&self, _pod: &PodInfo, _node: &str) {}

    fn permit(&self, _pod: &PodInfo, _node: &str) -> Permit {
        Permit::Allow
    }

    fn pre_bind(&self, _pod: &PodInfo, _node: &str) -> Result<(), String> {
        Ok(())
    }
}

/// Fills `out` with `score` of each node of `nodes` (slots in the cache), in order.
pub fn score_each(
    nodes: &[usize],
    cache: &Cache,
    out: &mut [i64],
    mut score: impl FnMut(&NodeInfo) -> i64,
) {
    for (s, &i) in out.iter_mut().zip(nodes) {
        *s = score(&cache.node_slots()[i]);
    }
}

/// One scheduler profile (`schedulerName`): the plugins enabled at each point.
#[derive(Clone)]
pub struct Profile {
    pub scheduler_name: String,
    pub pre_filter: Vec<Arc<dyn Plugin>>,
    pub filter: Vec<Arc<dyn Plugin>>,
    pub pre_score: Vec<Arc<dyn Plugin>>,
    pub score: Vec<(Arc<dyn Plugin>, i64)>,
    pub reserve: Vec<Arc<dyn Plugin>>,
    pub permit: Vec<Arc<dyn Plugin>>,
    pub pre_bind: Vec<Arc<dyn Plugin>>,
    /// DefaultPreemption at PostFilter.
    pub preemption: bool,
    /// `percentageOfNodesToScore` (0: adaptive, as upstream).
    pub percentage_of_nodes_to_score: i32,
}

impl std::fmt::Debug for Profile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names = |v: &[Arc<dyn Plugin>]| v.iter().map(|p| p.name()).collect::<Vec<_>>();
        f.debug_struct("Profile")
            .field("scheduler_name", &self.scheduler_name)
            .field("filter", &names(&self.filter))
            .field(
                "score",
                &self
                    .score
                    .iter()
                    .map(|(p, w)| (p.name(), *w))
                    .collect::<Vec<_>>(),
            )
            .field("preemption", &self.preemption)
            .finish()
    }
}

/// Upstream's `numFeasibleNodesToFind`.
pub fn num_feasible_nodes_to_find(percentage: i32, all: usize) -> usize {
    const MIN_FEASIBLE: usize = 100;
    const MIN_PERCENTAGE: i64 = 5;
    if all < MIN_FEASIBLE || percentage >= 100 {
        return all;
    }
    let mut pct = i64::from(percentage);
    if pct <= 0 {
        pct = 50 - i64::try_from(all / 125).unwrap_or(i64::MAX);
        if pct < MIN_PERCENTAGE {
            pct = MIN_PERCENTAGE;
        }
    }
    let n = usize::try_from(i64::try_from(all).unwrap_or(i64::MAX) * pct / 100).unwrap_or(all);
    n.max(MIN_FEASIBLE)
}

/// The outcome of a failed cycle: every node's failure, for the message and preemption.
#[derive(Clone, Debug, Default)]
pub struct Diagnosis {
    pub num_nodes: usize,
    /// Per node slot: why it failed.
    pub node_failures: Vec<(usize, Fail)>,
    /// A PreFilter rejection (applies to every node).
    pub pre_filter: Option<Fail>,
    /// PostFilter's (preemption's) message.
    pub post_filter: Option<String>,
}

impl Diagnosis {
    /// Upstream's `FitError` message:
    /// `0/3 nodes are available: 3 Insufficient cpu. preemption: …`.
    pub fn message(&self) -> String {
        let mut msg = format!("0/{} nodes are available:", self.num_nodes);
        match &self.pre_filter {
            Some(f) => {
                msg.push(' ');
                msg.push_str(&f.reasons.join(", "));
                msg.push('.');
            }
            None => {
                let reasons: Vec<&[String]> = self
                    .node_failures
                    .iter()
                    .map(|(_, f)| f.reasons.as_slice())
                    .collect();
                msg.push_str(&histogram(&reasons));
            }
        }
        if let Some(p) = &self.post_filter {
            msg.push(' ');
            msg.push_str(p);
        }
        msg
    }
}

/// ` 1 Insufficient cpu, 2 node(s) were unschedulable.` (sorted as upstream).
pub fn histogram(reasons: &[&[String]]) -> String {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for list in reasons {
        for r in list.iter() {
            *counts.entry(r.as_str()).or_default() += 1;
        }
    }
    let mut items: Vec<String> = counts.iter().map(|(r, n)| format!("{n} {r}")).collect();
    items.sort();
    let mut out = String::new();
    if !items.is_empty() {
        out.push(' ');
        out.push_str(&items.join(", "));
    }
    out.push('.');
    out
}

/// Upstream's `FitError` message over the nodes' reasons (no PostFilter part).
pub fn fit_error(num_nodes: usize, reasons_per_node: &[Vec<String>]) -> String {
    let lists: Vec<&[String]> = reasons_per_node.iter().map(Vec::as_slice).collect();
    format!("0/{num_nodes} nodes are available:{}", histogram(&lists))
}

/// Where a cycle placed a pod.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Placement {
    pub node: String,
    /// How many nodes were evaluated and found feasible.
    pub evaluated: usize,
    pub feasible: usize,
}

/// The scheduling algorithm's state across cycles.
#[derive(Debug)]
pub struct Algorithm {
    /// Where the next cycle starts looking (upstream's `nextStartNodeIndex`).
    next_start: usize,
    rng: u64,
}

impl Default for Algorithm {
    fn default() -> Self {
        Algorithm::new(0x9e37_79b9_7f4a_7c15)
    }
}

impl Algorithm {
    pub fn new(seed: u64) -> Algorithm {
        Algorithm {
            next_start: 0,
            rng: seed | 1,
        }
    }

    fn random(&mut self) -> u64 {
        // xorshift64*: tie-breaking only.
        self.rng ^= self.rng >> 12;
        self.rng ^= self.rng << 25;
        self.rng ^= self.rng >> 27;
        self.rng.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Runs the filters of `profile` for `pod` on one node slot.
    pub fn run_filters(
        profile: &Profile,
        pod: &PodInfo,
        node: &NodeInfo,
        cache: &Cache,
        state: &CycleState,
    ) -> Option<Fail> {
        // As upstream: the first failing plugin decides the node's status.
        profile
            .filter
            .iter()
            .find_map(|p| p.filter(pod, node, cache, state))
    }

    /// upstream's `RunFilterPluginsWithNominatedPods`: on a node where pods of at least
    /// this pod's priority are nominated (they wait for room freed by preemption), the
    /// filters must pass with those pods counted as if placed, and also without them.
    /// (Counted for resources, pod count and ports; the topology counters do not see them.)
    pub fn run_filters_with_nominated(
        profile: &Profile,
        pod: &PodInfo,
        node: &NodeInfo,
        cache: &Cache,
        state: &CycleState,
    ) -> Option<Fail> {
        let nominated: Vec<&Arc<PodInfo>> = cache
            .nominated_on(&node.name)
            .iter()
            .filter(|p| p.uid != pod.uid && p.priority >= pod.priority)
            .collect();
        if !nominated.is_empty() {
            let mut with = node.clone();
            for p in nominated {
                with.add_pod(Arc::clone(p));
            }
            if let Some(f) = Self::run_filters(profile, pod, &with, cache, state) {
                return Some(f);
            }
        }
        Self::run_filters(profile, pod, node, cache, state)
    }

    /// One scheduling cycle: the node for `pod`, or why there is none.
    pub fn schedule(
        &mut self,
        profile: &Profile,
        pod: &PodInfo,
        cache: &mut Cache,
    ) -> Result<Placement, Diagnosis> {
        let num_nodes = cache.node_count();
        let mut diagnosis = Diagnosis {
            num_nodes,
            ..Diagnosis::default()
        };
        if num_nodes == 0 {
            return Err(diagnosis);
        }
        let mut state = CycleState::default();
        for p in &profile.pre_filter {
            if let Err(f) = p.pre_filter(pod, cache, &mut state) {
                diagnosis.pre_filter = Some(f);
                return Err(diagnosis);
            }
        }
        // A nominated node (from an earlier preemption) is tried first.
        if !pod.nominated_node_name.is_empty()
            && let Some(node) = cache.node(&pod.nominated_node_name)
            && node.present
            && Self::run_filters_with_nominated(profile, pod, node, cache, &state).is_none()
        {
            return Ok(Placement {
                node: pod.nominated_node_name.clone(),
                evaluated: 1,
                feasible: 1,
            });
        }
        let slots = cache.node_slots().len();
        let want = num_feasible_nodes_to_find(profile.percentage_of_nodes_to_score, num_nodes);
        let mut feasible: Vec<usize> = Vec::with_capacity(want.min(slots));
        let mut processed = 0;
        let start = if slots == 0 {
            0
        } else {
            self.next_start % slots
        };
        for k in 0..slots {
            let i = (start + k) % slots;
            let node = &cache.node_slots()[i];
            if !node.present {
                continue;
            }
            processed += 1;
            match Self::run_filters_with_nominated(profile, pod, node, cache, &state) {
                None => {
                    feasible.push(i);
                    if feasible.len() >= want {
                        break;
                    }
                }
                Some(f) => diagnosis.node_failures.push((i, f)),
            }
        }
        if slots > 0 {
            self.next_start = (start + processed) % slots;
        }
        if feasible.is_empty() {
            return Err(diagnosis);
        }
        let evaluated = processed;
        let n_feasible = feasible.len();
        if feasible.len() == 1 {
            let node = cache.node_slots()[feasible[0]].name.clone();
            return Ok(Placement {
                node,
                evaluated,
                feasible: n_feasible,
            });
        }
        for p in &profile.pre_score {
            p.pre_score(pod, cache, &feasible, &mut state);
        }
        let mut totals = vec![0i64; feasible.len()];
        let mut scores = vec![0i64; feasible.len()];
        for (p, weight) in &profile.score {
            p.score_all(pod, &feasible, cache, &state, &mut scores);
            p.normalize(&mut scores);
            for (t, s) in totals.iter_mut().zip(&scores) {
                *t += (*s).max(0) * weight;
            }
        }
        // The highest total; ties broken at random (upstream's reservoir sampling).
        let mut best = 0;
        let mut ties = 0u64;
        for (k, t) in totals.iter().enumerate() {
            if *t > totals[best] {
                best = k;
                ties = 1;
            } else if *t == totals[best] {
                ties += 1;
                if self.random().is_multiple_of(ties) {
                    best = k;
                }
            }
        }
        Ok(Placement {
            node: cache.node_slots()[feasible[best]].name.clone(),
            evaluated,
            feasible: n_feasible,
        })
    }
}
