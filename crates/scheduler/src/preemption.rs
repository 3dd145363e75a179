//! DefaultPreemption (PostFilter): when a pod fits nowhere, find a node where evicting
//! lower-priority pods makes room, keeping as many of them as still fit (highest priority
//! first), and pick the node as upstream's `pickOneNodeForPreemption` does: the lowest
//! highest-victim priority, then the lowest priority sum, then the fewest victims.
//! Nodes that failed for reasons preemption cannot fix (taints, affinity, node name) are
//! not candidates. PodDisruptionBudgets are not consulted yet.

use std::sync::Arc;

use crate::cache::Cache;
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
    let mut best: Option<((i32, i64, usize), Preemption)> = None;
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
        // Reprieve as many as possible, highest priority first.
        candidates.sort_by_key(|c| std::cmp::Reverse(c.priority));
        let mut victims = Vec::new();
        for v in candidates {
            trial.add_pod(Arc::clone(&v));
            if Algorithm::run_filters(profile, pod, &trial, cache, &empty).is_some() {
                trial.remove_pod(&v.uid);
                victims.push(v);
            }
        }
        let highest = victims.iter().map(|v| v.priority).max().unwrap_or(i32::MIN);
        let sum: i64 = victims.iter().map(|v| i64::from(v.priority)).sum();
        let rank = (highest, sum, victims.len());
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
