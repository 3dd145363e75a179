//! DefaultPreemption (PostFilter): when a pod fits nowhere, find a node where evicting
//! lower-priority pods makes room, keeping as many of them as still fit — those whose
//! eviction would violate a PodDisruptionBudget first, then the others, highest priority
//! first (upstream's `selectVictimsOnNode`) — and pick the node as upstream's
//! `pickOneNodeForPreemption` does: the fewest PDB violations, then the lowest
//! highest-victim priority, then the lowest priority sum, then the fewest victims.
//! Nodes that failed for reasons preemption cannot fix (taints, affinity, node name) are
//! not candidates.

use std::sync::Arc;

use crate::cache::{Cache, Pdb};
use crate::framework::{Algorithm, CycleState, Diagnosis, Profile, histogram};
use crate::model::PodInfo;

/// Where room was found, and the pods to evict for it.
#[derive(Clone, Debug)]
pub struct Preemption {
    pub node: String,
    pub victims: Vec<Arc<PodInfo>>,
}

pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// Runs DefaultPreemption for `pod` after `diagnosis`; the error is PostFilter's message.
pub fn preempt(
    profile: &Profile,
    pod: &PodInfo,
    cache: &Cache,
    diagnosis: &Diagnosis,
) -> Result<Preemption, String> {
    if pod.preempt_never {
        return Err("preemption: not eligible due to preemptionPolicy=Never.".into());
    }
    if diagnosis.pre_filter.is_some() {
        return Err(format!(
            "preemption: 0/{n} nodes are available: {n} {NOT_HELPFUL}.",
            n = diagnosis.num_nodes
        ));
    }
    let empty = CycleState::default();
    let mut best: Option<((usize, i32, i64, usize), Preemption)> = None;
    let mut reasons: Vec<Vec<String>> = Vec::new();
    for (slot, fail) in &diagnosis.node_failures {
        if fail.unresolvable {
            reasons.push(vec![NOT_HELPFUL.to_string()]);
            continue;
        }
        let Some(node) = cache.node_slots().get(*slot) else {
            continue;
        };
        let mut candidates: Vec<Arc<PodInfo>> = node
            .pods
            .iter()
            .filter(|p| p.priority < pod.priority && !p.deleting)
            .cloned()
            .collect();
        if candidates.is_empty() {
            reasons.push(vec![NO_VICTIMS.to_string()]);
            continue;
        }
        let mut trial = node.clone();
        for v in &candidates {
            trial.remove_pod(&v.uid);
        }
        if Algorithm::run_filters(profile, pod, &trial, cache, &empty).is_some() {
            reasons.push(vec![NO_VICTIMS.to_string()]);
            continue;
        }
        // Reprieve as many as possible: first those whose eviction would violate a
        // budget, then the others, each group highest priority first.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.priority));
        let pdbs: Vec<&Pdb> = cache.pdbs().collect();
        let (violating, others) = split_by_pdb_violation(&candidates, &pdbs);
        let mut victims = Vec::new();
        let mut violations = 0usize;
        for (group, counts) in [(violating, true), (others, false)] {
            for v in group {
                trial.add_pod(Arc::clone(&v));
                if Algorithm::run_filters(profile, pod, &trial, cache, &empty).is_some() {
                    trial.remove_pod(&v.uid);
                    victims.push(v);
                    if counts {
                        violations += 1;
                    }
                }
            }
        }
        let highest = victims.iter().map(|v| v.priority).max().unwrap_or(i32::MIN);
        let sum: i64 = victims.iter().map(|v| i64::from(v.priority)).sum();
        let rank = (violations, highest, sum, victims.len());
        if best.as_ref().is_none_or(|(r, _)| rank < *r) {
            best = Some((
                rank,
                Preemption {
                    node: node.name.clone(),
                    victims,
                },
            ));
        }
    }
    match best {
        Some((_, p)) => Ok(p),
        None => {
            let lists: Vec<&[String]> = reasons.iter().map(Vec::as_slice).collect();
            Err(format!(
                "preemption: 0/{} nodes are available:{}",
                diagnosis.num_nodes,
                histogram(&lists)
            ))
        }
    }
}

/// upstream's `filterPodsWithPDBViolation`: in order, each pod uses up one allowed
/// disruption of every budget selecting it (unless already counted in the budget's
/// `disruptedPods`); a pod that takes a budget below zero would violate it.
pub fn split_by_pdb_violation(
    pods: &[Arc<PodInfo>],
    pdbs: &[&Pdb],
) -> (Vec<Arc<PodInfo>>, Vec<Arc<PodInfo>>) {
    let mut allowed: Vec<i32> = pdbs.iter().map(|p| p.disruptions_allowed).collect();
    let mut violating = Vec::new();
    let mut others = Vec::new();
    for pod in pods {
        let mut violated = false;
        if !pod.labels.is_empty() {
            for (i, pdb) in pdbs.iter().enumerate() {
                if pdb.namespace != pod.namespace
                    || !pdb.selector.matches_labels(&pod.labels)
                    || pdb.disrupted.contains(&pod.name)
                {
                    continue;
                }
                allowed[i] -= 1;
                if allowed[i] < 0 {
                    violated = true;
                }
            }
        }
        if violated {
            violating.push(Arc::clone(pod));
        } else {
            others.push(Arc::clone(pod));
        }
    }
    (violating, others)
}
