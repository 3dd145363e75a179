//! The default plugins over the compact model, with upstream's reasons and scoring
//! formulas: NodeUnschedulable, NodeName, TaintToleration, NodeAffinity, NodePorts,
//! NodeResourcesFit (LeastAllocated / MostAllocated / RequestedToCapacityRatio),
//! NodeResourcesBalancedAllocation and ImageLocality. PodTopologySpread and
//! InterPodAffinity live in [`crate::topology`].

use std::sync::Arc;

use crate::cache::Cache;
use crate::framework::{CycleState, Fail, MAX_NODE_SCORE, Plugin, score_each};
use crate::model::{Effect, NodeInfo, PodInfo, Taint, normalize_image};

pub const ERR_UNSCHEDULABLE: &str = "node(s) were unschedulable";
pub const ERR_NODE_NAME: &str = "node(s) didn't match the requested node name";
pub const ERR_NODE_AFFINITY: &str = "node(s) didn't match Pod's node affinity/selector";
pub const ERR_NODE_PORTS: &str = "node(s) didn't have free ports for the requested pod ports";
pub const ERR_TOO_MANY_PODS: &str = "Too many pods";

/// `NodeUnschedulable`.
pub struct NodeUnschedulable;

impl Plugin for NodeUnschedulable {
    fn name(&self) -> &'static str {
        "NodeUnschedulable"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        if !node.unschedulable {
            return None;
        }
        let taint = Taint {
            key: "node.kubernetes.io/unschedulable".into(),
            value: String::new(),
            effect: Effect::NoSchedule,
        };
        (!pod.tolerations.iter().any(|t| t.tolerates(&taint)))
            .then(|| Fail::unresolvable(ERR_UNSCHEDULABLE))
    }
}

/// `NodeName`.
pub struct NodeName;

impl Plugin for NodeName {
    fn name(&self) -> &'static str {
        "NodeName"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        (!pod.node_name.is_empty() && pod.node_name != node.name)
            .then(|| Fail::unresolvable(ERR_NODE_NAME))
    }
}

/// `TaintToleration`: filter on NoSchedule/NoExecute, score by intolerable
/// PreferNoSchedule taints.
pub struct TaintToleration;

impl Plugin for TaintToleration {
    fn name(&self) -> &'static str {
        "TaintToleration"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        node.taints
            .iter()
            .filter(|t| matches!(t.effect, Effect::NoSchedule | Effect::NoExecute))
            .find(|t| !pod.tolerations.iter().any(|tol| tol.tolerates(t)))
            .map(|t| {
                Fail::unresolvable(format!(
                    "node(s) had untolerated taint {{{}: {}}}",
                    t.key, t.value
                ))
            })
    }

    fn score(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> i64 {
        let n = node
            .taints
            .iter()
            .filter(|t| t.effect == Effect::PreferNoSchedule)
            .filter(|t| {
                !pod.tolerations
                    .iter()
                    .filter(|tol| tol.effect.is_none_or(|e| e == Effect::PreferNoSchedule))
                    .any(|tol| tol.tolerates(t))
            })
            .count();
        i64::try_from(n).unwrap_or(i64::MAX)
    }

    fn normalize(&self, scores: &mut [i64]) {
        default_normalize(scores, true);
    }
}

/// `NodeAffinity`: `nodeSelector` and required terms; preferred terms' weights as score.
pub struct NodeAffinity;

/// Whether the node satisfies the pod's node selector and required affinity.
pub fn node_matches_affinity(pod: &PodInfo, node: &NodeInfo) -> bool {
    let selector_ok = pod
        .node_selector
        .iter()
        .all(|(k, v)| node.labels.get(k) == Some(v));
    let terms_ok = match &pod.required_terms {
        None => true,
        Some(terms) => terms.iter().any(|t| t.matches(node)),
    };
    selector_ok && terms_ok
}

impl Plugin for NodeAffinity {
    fn name(&self) -> &'static str {
        "NodeAffinity"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        (!node_matches_affinity(pod, node)).then(|| Fail::unresolvable(ERR_NODE_AFFINITY))
    }

    fn score(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> i64 {
        pod.preferred_terms
            .iter()
            .filter(|(_, t)| t.matches(node))
            .map(|(w, _)| i64::from(*w))
            .sum()
    }

    fn normalize(&self, scores: &mut [i64]) {
        default_normalize(scores, false);
    }
}

/// `NodePorts`.
pub struct NodePorts;

impl Plugin for NodePorts {
    fn name(&self) -> &'static str {
        "NodePorts"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        let clash = pod
            .host_ports
            .iter()
            .any(|w| node.used_ports.iter().any(|u| w.conflicts(u)));
        clash.then(|| Fail::new(ERR_NODE_PORTS))
    }
}

/// How `NodeResourcesFit` scores.
#[derive(Clone, Debug, PartialEq)]
pub enum ScoringStrategy {
    LeastAllocated,
    MostAllocated,
    /// Utilization (0–100) → score (0–10) points, linearly interpolated.
    RequestedToCapacityRatio(Vec<(i64, i64)>),
}

/// `NodeResourcesFit`.
pub struct NodeResourcesFit {
    pub strategy: ScoringStrategy,
    /// Scored resources and their weights.
    pub resources: Vec<(String, i64)>,
    /// Resources whose insufficiency is ignored (`ignoredResources`).
    pub ignored: Vec<String>,
}

impl Default for NodeResourcesFit {
    fn default() -> Self {
        NodeResourcesFit {
            strategy: ScoringStrategy::LeastAllocated,
            resources: vec![("cpu".into(), 1), ("memory".into(), 1)],
            ignored: Vec::new(),
        }
    }
}

/// The node's requested amount of `resource` with the pod, as scoring counts it (CPU and
/// memory with upstream's non-zero defaults), and the allocatable amount.
fn requested_with(pod: &PodInfo, node: &NodeInfo, resource: &str) -> (i64, i64) {
    let alloc = node.allocatable.get(resource);
    let req = match resource {
        "cpu" => node.non_zero_cpu + pod.non_zero_cpu,
        "memory" => node.non_zero_memory + pod.non_zero_memory,
        r => node.requested.get(r) + pod.requests.get(r),
    };
    (req, alloc)
}

/// `NodeResourcesFit` filter reasons (empty: fits).
pub fn insufficient(pod: &PodInfo, node: &NodeInfo, ignored: &[String]) -> Vec<String> {
    let mut reasons = Vec::new();
    if node.pod_count + 1 > node.allocatable.pods {
        reasons.push(ERR_TOO_MANY_PODS.to_string());
    }
    let (want, free, used) = (&pod.requests, &node.allocatable, &node.requested);
    // The named resources without looking them up by name (this runs for every node of
    // every cycle), then the scalar ones; all in `Resources::names` order.
    for (res, want, free, used) in [
        ("cpu", want.milli_cpu, free.milli_cpu, used.milli_cpu),
        ("memory", want.memory, free.memory, used.memory),
        (
            "ephemeral-storage",
            want.ephemeral_storage,
            free.ephemeral_storage,
            used.ephemeral_storage,
        ),
    ] {
        if want != 0 && want > free - used && !ignored.iter().any(|i| i == res) {
            reasons.push(format!("Insufficient {res}"));
        }
    }
    for (res, want) in want.scalar.iter().filter(|(_, v)| *v != 0) {
        let res: &str = res;
        if *want > free.get(res) - used.get(res) && !ignored.iter().any(|i| i == res) {
            reasons.push(format!("Insufficient {res}"));
        }
    }
    reasons
}

impl Plugin for NodeResourcesFit {
    fn name(&self) -> &'static str {
        "NodeResourcesFit"
    }

    fn filter(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> Option<Fail> {
        let reasons = insufficient(pod, node, &self.ignored);
        (!reasons.is_empty()).then_some(Fail {
            reasons,
            unresolvable: false,
        })
    }

    fn score(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> i64 {
        let mut sum = 0i64;
        let mut weights = 0i64;
        for (res, weight) in &self.resources {
            let (req, alloc) = requested_with(pod, node, res);
            if alloc == 0 {
                continue;
            }
            let s = match &self.strategy {
                ScoringStrategy::LeastAllocated => {
                    if req > alloc {
                        0
                    } else {
                        (alloc - req) * MAX_NODE_SCORE / alloc
                    }
                }
                ScoringStrategy::MostAllocated => req.min(alloc) * MAX_NODE_SCORE / alloc,
                ScoringStrategy::RequestedToCapacityRatio(shape) => {
                    broken_linear(shape, (req.min(alloc) * MAX_NODE_SCORE) / alloc)
                }
            };
            sum += s * weight;
            weights += weight;
        }
        if weights == 0 { 0 } else { sum / weights }
    }
}

/// Upstream's `buildBrokenLinearFunction` over `(utilization, score 0–10)` points, with
/// scores scaled to 0–100.
fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    let scale = MAX_NODE_SCORE / 10;
    for (i, &(u, s)) in shape.iter().enumerate() {
        if p <= u {
            if i == 0 {
                return s * scale;
            }
            let (u0, s0) = shape[i - 1];
            return (s0 * scale) + (s * scale - s0 * scale) * (p - u0) / (u - u0).max(1);
        }
    }
    shape.last().map_or(0, |(_, s)| s * scale)
}

/// `NodeResourcesBalancedAllocation`: 100 when the requested fractions of the scored
/// resources are equal.
pub struct BalancedAllocation {
    pub resources: Vec<String>,
}

impl Default for BalancedAllocation {
    fn default() -> Self {
        BalancedAllocation {
            resources: vec!["cpu".into(), "memory".into()],
        }
    }
}

impl Plugin for BalancedAllocation {
    fn name(&self) -> &'static str {
        "NodeResourcesBalancedAllocation"
    }

    /// Upstream's `balancedResourceScorer` (its two-resource shortcut included), without a
    /// list per node: this runs for every scored node of every cycle.
    fn score(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, _: &CycleState) -> i64 {
        let fractions = || {
            self.resources.iter().filter_map(|r| {
                let (req, alloc) = requested_with(pod, node, r);
                (alloc > 0).then(|| (req as f64 / alloc as f64).min(1.0))
            })
        };
        let (mut n, mut total, mut first) = (0usize, 0.0, [0.0f64; 2]);
        for f in fractions() {
            if let Some(slot) = first.get_mut(n) {
                *slot = f;
            }
            n += 1;
            total += f;
        }
        let std = match n {
            2 => ((first[0] - first[1]) / 2.0).abs(),
            n if n > 2 => {
                let mean = total / n as f64;
                let sum: f64 = fractions().map(|f| (f - mean) * (f - mean)).sum();
                (sum / n as f64).sqrt()
            }
            _ => 0.0,
        };
        ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
    }
}

/// `ImageLocality`: nodes that already have the pod's images (weighted by how many nodes
/// have them) score higher.
pub struct ImageLocality;

const MB: i64 = 1024 * 1024;
const MIN_THRESHOLD: i64 = 23 * MB;
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// `ImageLocality`'s pre-score: how many nodes hold each of the pod's images.
struct ImageSpread {
    total_nodes: i64,
    per_image: Vec<(String, i64)>,
}

impl Plugin for ImageLocality {
    fn name(&self) -> &'static str {
        "ImageLocality"
    }

    fn pre_score(&self, pod: &PodInfo, cache: &mut Cache, _: &[usize], state: &mut CycleState) {
        // Images no node holds add nothing to any node's score.
        let per_image = pod
            .images
            .iter()
            .filter_map(|i| {
                let image = normalize_image(i);
                let n = cache.nodes_with_image(&image);
                (n > 0).then_some((image, n))
            })
            .collect();
        state.write(
            "ImageLocality",
            ImageSpread {
                total_nodes: i64::try_from(cache.node_count()).unwrap_or(1),
                per_image,
            },
        );
    }

    fn score(&self, pod: &PodInfo, node: &NodeInfo, _: &Cache, state: &CycleState) -> i64 {
        match state.read::<ImageSpread>("ImageLocality") {
            Some(spread) => image_score(pod, node, spread),
            None => 0,
        }
    }

    fn score_all(
        &self,
        pod: &PodInfo,
        nodes: &[usize],
        cache: &Cache,
        state: &CycleState,
        out: &mut [i64],
    ) {
        let Some(spread) = state.read::<ImageSpread>("ImageLocality") else {
            out.fill(0);
            return;
        };
        if spread.per_image.is_empty() {
            // No node holds any of the pod's images: every node scores alike.
            let first = nodes.first().map(|&i| &cache.node_slots()[i]);
            out.fill(first.map_or(0, |n| image_score(pod, n, spread)));
            return;
        }
        score_each(nodes, cache, out, |node| image_score(pod, node, spread));
    }
}

/// ImageLocality's score of a node: the sizes of the pod's images it holds, each scaled by
/// the share of nodes holding it, between the thresholds.
fn image_score(pod: &PodInfo, node: &NodeInfo, spread: &ImageSpread) -> i64 {
    let mut sum = 0i64;
    for (image, have) in &spread.per_image {
        if let Some(size) = node.images.get(image) {
            sum += size * have / spread.total_nodes.max(1);
        }
    }
    let containers = i64::try_from(pod.images.len().max(1)).unwrap_or(1);
    let max = MAX_CONTAINER_THRESHOLD * containers;
    let sum = sum.clamp(MIN_THRESHOLD, max);
    MAX_NODE_SCORE * (sum - MIN_THRESHOLD) / (max - MIN_THRESHOLD)
}

/// Upstream's `DefaultNormalizeScore`: scaled to 0–100 by the highest score (reversed: the
/// lowest raw score gets 100).
pub fn default_normalize(scores: &mut [i64], reverse: bool) {
    let max = scores.iter().copied().max().unwrap_or(0);
    for s in scores.iter_mut() {
        if max == 0 {
            *s = if reverse { MAX_NODE_SCORE } else { 0 };
            continue;
        }
        let scaled = *s * MAX_NODE_SCORE / max;
        *s = if reverse {
            MAX_NODE_SCORE - scaled
        } else {
            scaled
        };
    }
}

/// A shared handle to a plugin.
pub fn shared<P: Plugin + 'static>(p: P) -> Arc<dyn Plugin> {
    Arc::new(p)
}
