//! The Deployment controller's arithmetic (upstream's `pkg/controller/deployment/util`
//! and `rolling.go`), as pure functions: the pod-template hash that names ReplicaSets,
//! `maxSurge`/`maxUnavailable` resolution, and the rolling update's scale-up of the new
//! ReplicaSet and scale-down of the old ones (unhealthy replicas first, then the oldest
//! ReplicaSets, never below the minimum available).

use serde_json::Value;

use crate::history::{canonical, safe_encode};

/// Upstream's default `maxSurge` and `maxUnavailable`.
pub const DEFAULT_SURGE: &str = "25%";
pub const DEFAULT_UNAVAILABLE: &str = "25%";

/// The `pod-template-hash` of a pod template (`ComputeHash`): FNV-1a 32 of the template
/// (canonical JSON here; upstream hashes its Go struct dump, which only has to be stable
/// within one cluster) and the collision count, encoded with `SafeEncodeString`.
pub fn template_hash(template: &Value, collision_count: Option<u32>) -> String {
    let text = canonical(template);
    let mut hash: u32 = 0x811c_9dc5;
    let mut feed = |bytes: &[u8]| {
        for b in bytes {
            hash ^= u32::from(*b);
            hash = hash.wrapping_mul(0x0100_0193);
        }
    };
    feed(text.as_bytes());
    if let Some(c) = collision_count {
        feed(&c.to_le_bytes());
    }
    safe_encode(&hash.to_string())
}

/// `GetScaledValueFromIntOrPercent`: an int as is, `N%` of `total` rounded up or down.
pub fn scaled(value: &Value, total: i64, round_up: bool) -> Result<i64, String> {
    match value {
        Value::Number(n) => n
            .as_i64()
            .ok_or_else(|| format!("invalid value for IntOrString: {n}")),
        Value::String(s) => {
            let pct: i64 = s
                .strip_suffix('%')
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| {
                    "invalid value for IntOrString: invalid type: string is not a percentage"
                        .to_string()
                })?;
            let product = pct.saturating_mul(total);
            Ok(if round_up {
                (product + 99).div_euclid(100)
            } else {
                product.div_euclid(100)
            })
        }
        _ => Err("invalid value for IntOrString: invalid type: neither int nor percentage".into()),
    }
}

/// `ResolveFenceposts`: (maxSurge, maxUnavailable) for `desired` replicas; surge rounds
/// up, unavailability down, and both zero means one unavailable.
pub fn resolve_fenceposts(
    max_surge: &Value,
    max_unavailable: &Value,
    desired: i64,
) -> Result<(i64, i64), String> {
    let surge_v = if max_surge.is_null() {
        Value::from(DEFAULT_SURGE)
    } else {
        max_surge.clone()
    };
    let unavailable_v = if max_unavailable.is_null() {
        Value::from(DEFAULT_UNAVAILABLE)
    } else {
        max_unavailable.clone()
    };
    let surge = scaled(&surge_v, desired, true)?;
    let mut unavailable = scaled(&unavailable_v, desired, false)?;
    if surge == 0 && unavailable == 0 {
        unavailable = 1;
    }
    Ok((surge, unavailable))
}

/// One ReplicaSet as the rollout sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rs {
    pub name: String,
    /// `spec.replicas`.
    pub replicas: i64,
    /// `status.availableReplicas`.
    pub available: i64,
    /// Creation time (ms), for oldest-first scale-down.
    pub created_ms: i64,
}

fn rolling(deployment: &Value) -> bool {
    deployment["spec"]["strategy"]["type"].as_str() != Some("Recreate")
}

fn desired(deployment: &Value) -> i64 {
    deployment["spec"]["replicas"].as_i64().unwrap_or(1).max(0)
}

fn fenceposts(deployment: &Value) -> (i64, i64) {
    let ru = &deployment["spec"]["strategy"]["rollingUpdate"];
    resolve_fenceposts(&ru["maxSurge"], &ru["maxUnavailable"], desired(deployment))
        .unwrap_or((0, 1))
}

/// `MaxUnavailable`: the deployment's maxUnavailable, at most its replicas (0 when not
/// rolling or scaled to zero).
pub fn max_unavailable(deployment: &Value) -> i64 {
    let want = desired(deployment);
    if !rolling(deployment) || want == 0 {
        return 0;
    }
    fenceposts(deployment).1.min(want)
}

/// `NewRSNewReplicas`: the replicas the new ReplicaSet may have now.
pub fn new_rs_replicas(deployment: &Value, all: &[Rs], new: &Rs) -> i64 {
    let want = desired(deployment);
    if !rolling(deployment) {
        return want;
    }
    let (surge, _) = fenceposts(deployment);
    let current: i64 = all.iter().map(|r| r.replicas).sum();
    let max_total = want + surge;
    if current >= max_total {
        return new.replicas;
    }
    let up = (max_total - current).min(want - new.replicas);
    new.replicas + up.max(0)
}

/// `reconcileOldReplicaSets` without IO: the old ReplicaSets' new replica counts
/// (only those that change), unhealthy replicas cleaned up first, then the oldest scaled
/// down, keeping `replicas - maxUnavailable` available.
pub fn scale_down_old(deployment: &Value, old: &[Rs], new: &Rs) -> Vec<(String, i64)> {
    let old_count: i64 = old.iter().map(|r| r.replicas).sum();
    if old_count == 0 {
        return Vec::new();
    }
    let all_count = old_count + new.replicas;
    let min_available = desired(deployment) - max_unavailable(deployment);
    let new_unavailable = new.replicas - new.available;
    let max_scaled_down = all_count - min_available - new_unavailable;
    if max_scaled_down <= 0 {
        return Vec::new();
    }
    let mut sorted: Vec<Rs> = old.to_vec();
    sorted.sort_by(|a, b| a.created_ms.cmp(&b.created_ms).then(a.name.cmp(&b.name)));
    // Unhealthy replicas first: they cost no availability.
    let mut cleaned = 0;
    for rs in sorted.iter_mut() {
        if cleaned >= max_scaled_down {
            break;
        }
        if rs.replicas == 0 || rs.available >= rs.replicas {
            continue;
        }
        let down = (max_scaled_down - cleaned).min(rs.replicas - rs.available);
        rs.replicas -= down;
        cleaned += down;
    }
    // Then available ones, oldest first, down to the minimum available.
    let available: i64 = sorted
        .iter()
        .map(|r| r.available.min(r.replicas))
        .sum::<i64>()
        + new.available;
    if available > min_available {
        let mut to_scale = available - min_available;
        for rs in sorted.iter_mut() {
            if to_scale <= 0 {
                break;
            }
            if rs.replicas == 0 {
                continue;
            }
            let down = rs.replicas.min(to_scale);
            rs.replicas -= down;
            to_scale -= down;
        }
    }
    sorted
        .into_iter()
        .filter(|r| {
            old.iter()
                .any(|o| o.name == r.name && o.replicas != r.replicas)
        })
        .map(|r| (r.name, r.replicas))
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn deployment(replicas: i64, surge: Value, unavailable: Value) -> Value {
        json!({"spec": {"replicas": replicas, "strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}}}})
    }

    fn rs(name: &str, replicas: i64, available: i64, created_ms: i64) -> Rs {
        Rs {
            name: name.into(),
            replicas,
            available,
            created_ms,
        }
    }

    #[test]
    fn hashes_are_stable_and_safe() {
        let t = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "web:1"}]}});
        let h = template_hash(&t, None);
        assert!(!h.is_empty() && h.len() <= 10);
        assert!(
            h.bytes().all(|b| crate::history::ALPHANUMS.contains(&b)),
            "{h}"
        );
        // Key order does not matter; content and the collision count do.
        let same = json!({"spec": {"containers": [{"image": "web:1", "name": "c"}]}, "metadata": {"labels": {"app": "web"}}});
        assert_eq!(template_hash(&same, None), h);
        let other = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "web:2"}]}});
        assert_ne!(template_hash(&other, None), h);
        assert_ne!(template_hash(&t, Some(1)), h);
    }

    #[test]
    fn fenceposts_round_as_upstream() {
        assert_eq!(
            resolve_fenceposts(&json!("25%"), &json!("25%"), 10),
            Ok((3, 2))
        );
        assert_eq!(
            resolve_fenceposts(&Value::Null, &Value::Null, 3),
            Ok((1, 0))
        );
        assert_eq!(resolve_fenceposts(&json!(0), &json!(0), 5), Ok((0, 1)));
        assert_eq!(resolve_fenceposts(&json!(2), &json!("50%"), 5), Ok((2, 2)));
        assert!(resolve_fenceposts(&json!("x"), &json!(1), 5).is_err());
    }

    #[test]
    fn rolling_update_scales_within_surge_and_unavailability() {
        // 3 replicas, surge 1, unavailable 0: the new RS grows one at a time.
        let d = deployment(3, json!(1), json!(0));
        let old = rs("old", 3, 3, 1);
        let new = rs("new", 0, 0, 2);
        let all = [old.clone(), new.clone()];
        assert_eq!(new_rs_replicas(&d, &all, &new), 1);
        // The new pod is not available yet: nothing old may go.
        let new = rs("new", 1, 0, 2);
        assert_eq!(scale_down_old(&d, std::slice::from_ref(&old), &new), vec![]);
        // Available now: one old replica goes.
        let new = rs("new", 1, 1, 2);
        assert_eq!(
            scale_down_old(&d, std::slice::from_ref(&old), &new),
            vec![("old".to_string(), 2)]
        );
        // At the surge limit the new RS waits.
        let all = [old, new.clone()];
        assert_eq!(new_rs_replicas(&d, &all, &new), 1);
    }

    #[test]
    fn unhealthy_old_replicas_go_first_and_oldest_first() {
        let d = deployment(4, json!(0), json!(1));
        let oldest = rs("oldest", 2, 2, 1);
        let broken = rs("broken", 2, 0, 2);
        let new = rs("new", 0, 0, 3);
        // min available 3; 4 total, none new: 1 may go, taken from the broken RS.
        let plan = scale_down_old(&d, &[oldest, broken], &new);
        assert_eq!(plan, vec![("broken".to_string(), 1)]);
        // With every old replica healthy, the oldest RS shrinks first.
        let d = deployment(4, json!(0), json!(2));
        let plan = scale_down_old(&d, &[rs("a", 2, 2, 1), rs("b", 2, 2, 2)], &new);
        assert_eq!(plan, vec![("a".to_string(), 0)]);
    }

    #[test]
    fn recreate_and_zero_replicas() {
        let mut d = deployment(3, json!(1), json!(1));
        d["spec"]["strategy"] = json!({"type": "Recreate"});
        assert_eq!(max_unavailable(&d), 0);
        assert_eq!(new_rs_replicas(&d, &[], &rs("new", 0, 0, 1)), 3);
        let z = deployment(0, json!(1), json!(1));
        assert_eq!(max_unavailable(&z), 0);
    }
}

/// What the Deployment controller does in one sync.
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// Create this ReplicaSet (the new one of the current template).
    Create(Value),
    /// Set a ReplicaSet's `spec.replicas`.
    Scale(String, i64),
    /// Delete an old ReplicaSet beyond `revisionHistoryLimit`.
    Delete(String),
    /// Give a ReplicaSet that became the new one again (a rollback) the next revision, as
    /// upstream's `SetNewReplicaSetAnnotations`.
    SetRevision(String, i64),
}

/// The revision the Deployment is at: its new ReplicaSet's, after any bump.
pub fn current_revision(deployment: &Value, owned: &[&Value]) -> Option<i64> {
    let new = find_new(deployment, owned)?;
    let max_old = owned
        .iter()
        .filter(|rs| rs["metadata"]["uid"] != new["metadata"]["uid"])
        .map(|rs| revision_of(rs))
        .max()
        .unwrap_or(0);
    Some(revision_of(new).max(max_old + 1))
}

const REVISION: &str = "deployment.kubernetes.io/revision";
const HASH_LABEL: &str = "pod-template-hash";

/// A template without its `pod-template-hash` label, for `EqualIgnoreHash`.
fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    let mut no_labels = false;
    if let Some(labels) = t["metadata"]["labels"].as_object_mut() {
        labels.remove(HASH_LABEL);
        no_labels = labels.is_empty();
    }
    if no_labels && let Some(meta) = t["metadata"].as_object_mut() {
        meta.remove("labels");
    }
    if t["metadata"]
        .as_object()
        .is_some_and(serde_json::Map::is_empty)
        && let Some(o) = t.as_object_mut()
    {
        o.remove("metadata");
    }
    t
}

fn revision_of(rs: &Value) -> i64 {
    rs["metadata"]["annotations"][REVISION]
        .as_str()
        .and_then(|r| r.parse().ok())
        .unwrap_or(0)
}

fn rs_state(rs: &Value) -> Rs {
    Rs {
        name: rs["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string(),
        replicas: rs["spec"]["replicas"].as_i64().unwrap_or(1),
        available: rs["status"]["availableReplicas"].as_i64().unwrap_or(0),
        created_ms: crate::pods::time_ms(&rs["metadata"]["creationTimestamp"]).unwrap_or(0),
    }
}

/// The owned ReplicaSet whose template is the Deployment's (`FindNewReplicaSet`: the
/// oldest of those that match).
pub fn find_new<'a>(deployment: &Value, owned: &[&'a Value]) -> Option<&'a Value> {
    let want = canonical(&without_hash(&deployment["spec"]["template"]));
    let mut matching: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|rs| canonical(&without_hash(&rs["spec"]["template"])) == want)
        .collect();
    matching
        .sort_by_key(|rs| crate::pods::time_ms(&rs["metadata"]["creationTimestamp"]).unwrap_or(0));
    matching.first().copied()
}

/// The new ReplicaSet of the Deployment's template (`getNewReplicaSet` when none exists):
/// `<deployment>-<hash>`, the hash as label and selector, the next revision.
pub fn new_replica_set(deployment: &Value, owned: &[&Value], replicas: i64) -> Value {
    let collision = deployment["status"]["collisionCount"]
        .as_u64()
        .and_then(|c| u32::try_from(c).ok());
    let hash = template_hash(&deployment["spec"]["template"], collision);
    let name = deployment["metadata"]["name"].as_str().unwrap_or_default();
    let mut template = deployment["spec"]["template"].clone();
    template["metadata"]["labels"][HASH_LABEL] = Value::from(hash.as_str());
    let mut selector = deployment["spec"]["selector"].clone();
    selector["matchLabels"][HASH_LABEL] = Value::from(hash.as_str());
    let revision = owned.iter().map(|rs| revision_of(rs)).max().unwrap_or(0) + 1;
    let (surge, _) = fenceposts(deployment);
    let mut labels = deployment["spec"]["template"]["metadata"]["labels"].clone();
    labels[HASH_LABEL] = Value::from(hash.as_str());
    serde_json::json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {
            "name": format!("{name}-{hash}"),
            "namespace": deployment["metadata"]["namespace"].clone(),
            "labels": labels,
            "annotations": {
                REVISION: revision.to_string(),
                "deployment.kubernetes.io/desired-replicas": desired(deployment).to_string(),
                "deployment.kubernetes.io/max-replicas": (desired(deployment) + if rolling(deployment) { surge } else { 0 }).to_string(),
            },
            "ownerReferences": [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": name,
                "uid": deployment["metadata"]["uid"].clone(),
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "replicas": replicas,
            "minReadySeconds": deployment["spec"]["minReadySeconds"].as_i64().unwrap_or(0),
            "selector": selector,
            "template": template,
        },
    })
}

const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX_REPLICAS: &str = "deployment.kubernetes.io/max-replicas";

/// `MaxSurge`: the resolved surge of a rolling Deployment, 0 otherwise.
fn max_surge(deployment: &Value) -> i64 {
    if rolling(deployment) {
        fenceposts(deployment).0
    } else {
        0
    }
}

/// The `desired-replicas` and `max-replicas` annotations a ReplicaSet scaled by this
/// Deployment carries (`SetReplicasAnnotations`).
pub fn replicas_annotations(deployment: &Value) -> (i64, i64) {
    let want = desired(deployment);
    (want, want + max_surge(deployment))
}

fn annotation_i64(rs: &Value, key: &str) -> Option<i64> {
    rs["metadata"]["annotations"][key]
        .as_str()
        .and_then(|v| v.parse().ok())
}

fn spec_replicas(rs: &Value) -> i64 {
    rs["spec"]["replicas"].as_i64().unwrap_or(1)
}

fn created(rs: &Value) -> i64 {
    crate::pods::time_ms(&rs["metadata"]["creationTimestamp"]).unwrap_or(0)
}

fn name_of(rs: &Value) -> String {
    rs["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// `isScalingEvent`: an active ReplicaSet was scaled for another `spec.replicas` than the
/// Deployment's (its `desired-replicas` annotation differs).
pub fn is_scaling_event(deployment: &Value, owned: &[&Value]) -> bool {
    let want = desired(deployment);
    owned
        .iter()
        .filter(|rs| spec_replicas(rs) > 0)
        .any(|rs| annotation_i64(rs, DESIRED).is_some_and(|d| d != want))
}

/// `FindActiveOrLatest`: the only active ReplicaSet, or, with none active, the new one or
/// else the newest old one; `None` when several are active.
fn active_or_latest<'a>(new: Option<&'a Value>, old: &[&'a Value]) -> Option<&'a Value> {
    let mut all: Vec<&Value> = old.to_vec();
    all.sort_by_key(|rs| std::cmp::Reverse(created(rs)));
    let newest_old = all.first().copied();
    all.extend(new);
    let active: Vec<&Value> = all.into_iter().filter(|rs| spec_replicas(rs) > 0).collect();
    match active.len() {
        0 => new.or(newest_old),
        1 => active.first().copied(),
        _ => None,
    }
}

/// `IsSaturated`: the new ReplicaSet runs all the Deployment's replicas, available.
fn saturated(deployment: &Value, rs: &Value) -> bool {
    let want = desired(deployment);
    spec_replicas(rs) == want
        && annotation_i64(rs, DESIRED) == Some(want)
        && rs["status"]["availableReplicas"].as_i64().unwrap_or(0) == want
}

/// `getReplicaSetFraction`: this ReplicaSet's share of a resize, from the size the
/// Deployment had when it was last scaled (its `max-replicas` annotation).
fn fraction(deployment: &Value, rs: &Value) -> i64 {
    let want = desired(deployment);
    if want == 0 {
        return -spec_replicas(rs);
    }
    let max = want + max_surge(deployment);
    let before = annotation_i64(rs, MAX_REPLICAS)
        .unwrap_or_else(|| deployment["status"]["replicas"].as_i64().unwrap_or(0));
    if before == 0 {
        return 0;
    }
    // Rounded half away from zero, as Go's math.Round.
    #[allow(clippy::cast_precision_loss, clippy::cast_possible_truncation)]
    let size = ((spec_replicas(rs) * max) as f64 / before as f64).round() as i64;
    size - spec_replicas(rs)
}

/// `GetReplicaSetProportion`.
fn proportion(deployment: &Value, rs: &Value, to_add: i64, added: i64) -> i64 {
    if spec_replicas(rs) == 0 || to_add == 0 || to_add == added {
        return 0;
    }
    let f = fraction(deployment, rs);
    let allowed = to_add - added;
    if to_add > 0 {
        f.min(allowed)
    } else {
        f.max(allowed)
    }
}

/// upstream's `scale`: the sizes after a scaling event (or for a paused Deployment). One
/// active ReplicaSet takes the whole size; a saturated new one leaves the old ones at
/// zero; otherwise a rolling Deployment's active ReplicaSets share the change in
/// proportion to their sizes, the leftover going to the largest. Returns every
/// ReplicaSet whose size or replica annotations must change.
pub fn scale(deployment: &Value, new: Option<&Value>, old: &[&Value]) -> Vec<(String, i64)> {
    let want = desired(deployment);
    let (ann_desired, ann_max) = replicas_annotations(deployment);
    let stale = |rs: &Value| {
        annotation_i64(rs, DESIRED) != Some(ann_desired)
            || annotation_i64(rs, MAX_REPLICAS) != Some(ann_max)
    };
    if let Some(rs) = active_or_latest(new, old) {
        return if spec_replicas(rs) != want || stale(rs) {
            vec![(name_of(rs), want)]
        } else {
            Vec::new()
        };
    }
    if let Some(n) = new
        && saturated(deployment, n)
    {
        return old
            .iter()
            .filter(|rs| spec_replicas(rs) > 0)
            .map(|rs| (name_of(rs), 0))
            .collect();
    }
    if !rolling(deployment) {
        return Vec::new();
    }
    let mut active: Vec<&Value> = old
        .iter()
        .copied()
        .chain(new)
        .filter(|rs| spec_replicas(rs) > 0)
        .collect();
    let total: i64 = active.iter().map(|rs| spec_replicas(rs)).sum();
    let allowed = if want > 0 {
        want + max_surge(deployment)
    } else {
        0
    };
    let to_add = allowed - total;
    if to_add > 0 {
        // Larger first; among equals, newer first.
        active.sort_by_key(|rs| {
            (
                std::cmp::Reverse(spec_replicas(rs)),
                std::cmp::Reverse(created(rs)),
            )
        });
    } else if to_add < 0 {
        // Larger first; among equals, older first.
        active.sort_by_key(|rs| (std::cmp::Reverse(spec_replicas(rs)), created(rs)));
    }
    let mut added = 0;
    let mut sizes: Vec<(String, i64, i64)> = Vec::new();
    for rs in &active {
        let p = proportion(deployment, rs, to_add, added);
        added += p;
        sizes.push((name_of(rs), spec_replicas(rs), spec_replicas(rs) + p));
    }
    if let Some(first) = sizes.first_mut()
        && to_add != 0
    {
        first.2 = (first.2 + to_add - added).max(0);
    }
    sizes
        .into_iter()
        .zip(active)
        .filter(|((_, from, to), rs)| from != to || stale(rs))
        .map(|((name, _, to), _)| (name, to))
        .collect()
}

/// One sync of a Deployment over the ReplicaSets it owns: the new ReplicaSet created or
/// scaled within the surge, old ones scaled down within the unavailability budget
/// (Recreate: old ones to zero first), and old ReplicaSets beyond `revisionHistoryLimit`
/// deleted. A paused Deployment, or one whose size changed, is only resized (see [`scale`]).
pub fn plan(deployment: &Value, owned: &[&Value]) -> Vec<Action> {
    let mut actions = Vec::new();
    if !deployment["metadata"]["deletionTimestamp"].is_null() {
        return actions;
    }
    let want = desired(deployment);
    let new = find_new(deployment, owned);
    let old: Vec<&Value> = owned
        .iter()
        .copied()
        .filter(|rs| new.is_none_or(|n| n["metadata"]["uid"] != rs["metadata"]["uid"]))
        .collect();
    let old_states: Vec<Rs> = old.iter().map(|rs| rs_state(rs)).collect();
    let paused = deployment["spec"]["paused"] == true;
    if let Some(new_rs) = new {
        sync_revision(new_rs, &old, &mut actions);
    }
    if paused || is_scaling_event(deployment, owned) {
        // upstream's `sync`: resize only (proportionally during a rollout), no rollout
        // step and no new ReplicaSet.
        for (name, replicas) in scale(deployment, new, &old) {
            actions.push(Action::Scale(name, replicas));
        }
        history_cleanup(deployment, &old, &mut actions);
        return actions;
    }
    match new {
        None => {
            let replicas = if rolling(deployment) {
                let empty = Rs {
                    name: String::new(),
                    replicas: 0,
                    available: 0,
                    created_ms: 0,
                };
                let mut all = old_states.clone();
                all.push(empty.clone());
                new_rs_replicas(deployment, &all, &empty)
            } else if old_states.iter().all(|r| r.replicas == 0) {
                want
            } else {
                0
            };
            actions.push(Action::Create(new_replica_set(deployment, owned, replicas)));
        }
        Some(new_rs) => {
            let new_state = rs_state(new_rs);
            let mut all = old_states.clone();
            all.push(new_state.clone());
            let target = if rolling(deployment) {
                if new_state.replicas > want {
                    want
                } else {
                    new_rs_replicas(deployment, &all, &new_state)
                }
            } else if old_states.iter().all(|r| r.replicas == 0) {
                want
            } else {
                0
            };
            if target != new_state.replicas {
                actions.push(Action::Scale(new_state.name.clone(), target));
            }
            if rolling(deployment) {
                for (name, replicas) in scale_down_old(deployment, &old_states, &new_state) {
                    actions.push(Action::Scale(name, replicas));
                }
            } else {
                for r in old_states.iter().filter(|r| r.replicas > 0) {
                    actions.push(Action::Scale(r.name.clone(), 0));
                }
            }
        }
    }
    history_cleanup(deployment, &old, &mut actions);
    actions
}

/// A ReplicaSet that became the new one again (a rollback) takes the next revision, as
/// upstream's `SetNewReplicaSetAnnotations`.
fn sync_revision(new_rs: &Value, old: &[&Value], actions: &mut Vec<Action>) {
    let max_old = old.iter().map(|rs| revision_of(rs)).max().unwrap_or(0);
    if revision_of(new_rs) <= max_old {
        actions.push(Action::SetRevision(name_of(new_rs), max_old + 1));
    }
}

/// `cleanupDeployment`: old ReplicaSets with nothing left, beyond `revisionHistoryLimit`,
/// oldest revision first.
fn history_cleanup(deployment: &Value, old: &[&Value], actions: &mut Vec<Action>) {
    let limit = deployment["spec"]["revisionHistoryLimit"]
        .as_i64()
        .unwrap_or(10)
        .max(0);
    let mut empty_old: Vec<&Value> = old
        .iter()
        .copied()
        .filter(|rs| {
            rs["spec"]["replicas"].as_i64().unwrap_or(1) == 0
                && rs["status"]["replicas"].as_i64().unwrap_or(0) == 0
                && rs["metadata"]["deletionTimestamp"].is_null()
        })
        .collect();
    empty_old.sort_by_key(|rs| revision_of(rs));
    let excess = i64::try_from(empty_old.len()).unwrap_or(0) - limit;
    for rs in empty_old
        .iter()
        .take(usize::try_from(excess.max(0)).unwrap_or(0))
    {
        actions.push(Action::Delete(name_of(rs)));
    }
}

/// Upstream's `DeploymentTimedOut`: no progress recorded for `secs` since the Progressing
/// condition's `lastUpdateTime` — never after a finished rollout (`NewReplicaSetAvailable`:
/// pods of a complete Deployment going unavailable, after a node restart, is not a rollout
/// that stalled, however long ago it finished).
fn timed_out(progressing: Option<&Value>, secs: i64, now: &str) -> bool {
    let Some(c) = progressing else {
        return false;
    };
    if c["reason"] == "NewReplicaSetAvailable" {
        return false;
    }
    let parse = |v: &Value| v.as_str().and_then(|s| s.parse::<jiff::Timestamp>().ok());
    let (Some(from), Some(now)) = (parse(&c["lastUpdateTime"]), parse(&Value::from(now))) else {
        return false;
    };
    from.as_second() + secs < now.as_second()
}

/// When the controller should look again for a stuck rollout: the seconds left before
/// the progress deadline (`None`: no deadline to watch).
pub fn recheck_after(deployment: &Value, status: &Value) -> Option<u64> {
    let secs = deployment["spec"]["progressDeadlineSeconds"]
        .as_i64()
        .filter(|d| *d < i64::from(i32::MAX))?;
    let c = status["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Progressing")?;
    if c["status"] != "True" || c["reason"] != "ReplicaSetUpdated" {
        return None;
    }
    u64::try_from(secs + 1).ok()
}

/// The Deployment's `status` (`calculateStatus` and the Available / Progressing
/// conditions) from its ReplicaSets at `now` (RFC 3339).
pub fn status(deployment: &Value, owned: &[&Value], now: &str) -> Value {
    let sum = |k: &str| -> i64 {
        owned
            .iter()
            .map(|rs| rs["status"][k].as_i64().unwrap_or(0))
            .sum()
    };
    let new = find_new(deployment, owned);
    let updated = new.map_or(0, |rs| rs["status"]["replicas"].as_i64().unwrap_or(0));
    let (replicas, ready, available) = (
        sum("replicas"),
        sum("readyReplicas"),
        sum("availableReplicas"),
    );
    let want = desired(deployment);
    let min_available = want - max_unavailable(deployment);
    let mut conditions: Vec<Value> = deployment["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let progressing = conditions
        .iter()
        .find(|c| c["type"] == "Progressing")
        .cloned();
    let reason_was = progressing
        .as_ref()
        .and_then(|c| c["reason"].as_str().map(str::to_string))
        .unwrap_or_default();
    // `force`: write the condition anew (a fresh lastUpdateTime) even when its reason
    // and status stay, as upstream does for every step of progress.
    let mut set = |ty: &str, status: &str, reason: &str, message: String, force: bool| {
        let existing = conditions.iter().position(|c| c["type"] == ty);
        let transition = existing
            .filter(|i| conditions[*i]["status"] == status)
            .map(|i| conditions[i]["lastTransitionTime"].clone())
            .unwrap_or_else(|| Value::from(now));
        let c = serde_json::json!({"type": ty, "status": status, "reason": reason, "message": message,
            "lastUpdateTime": now, "lastTransitionTime": transition});
        match existing {
            Some(i)
                if !force
                    && conditions[i]["reason"] == reason
                    && conditions[i]["status"] == status => {}
            Some(i) => conditions[i] = c,
            None => conditions.push(c),
        }
    };
    if available >= min_available {
        set(
            "Available",
            "True",
            "MinimumReplicasAvailable",
            "Deployment has minimum availability.".into(),
            false,
        );
    } else {
        set(
            "Available",
            "False",
            "MinimumReplicasUnavailable",
            "Deployment does not have minimum availability.".into(),
            false,
        );
    }
    let prev = &deployment["status"];
    let prev_of = |k: &str| prev[k].as_i64().unwrap_or(0);
    // upstream's `DeploymentProgressing`: more updated, ready or available replicas, or
    // fewer old ones, than the last status recorded.
    let moved = updated > prev_of("updatedReplicas")
        || ready > prev_of("readyReplicas")
        || available > prev_of("availableReplicas")
        || replicas - updated < prev_of("replicas") - prev_of("updatedReplicas");
    let paused = deployment["spec"]["paused"] == true;
    // `math.MaxInt32` (or no value) means no deadline.
    let deadline = deployment["spec"]["progressDeadlineSeconds"]
        .as_i64()
        .filter(|d| *d < i64::from(i32::MAX));
    if paused {
        set(
            "Progressing",
            "Unknown",
            "DeploymentPaused",
            "Deployment is paused".into(),
            false,
        );
    } else if let Some(rs) = new {
        let rs_name = rs["metadata"]["name"].as_str().unwrap_or_default();
        let complete = updated == want && replicas == want && available == want;
        if complete {
            set(
                "Progressing",
                "True",
                "NewReplicaSetAvailable",
                format!("ReplicaSet \"{rs_name}\" has successfully progressed."),
                false,
            );
        } else if reason_was == "DeploymentPaused" {
            set(
                "Progressing",
                "Unknown",
                "DeploymentResumed",
                "Deployment is resumed".into(),
                true,
            );
        } else if moved || progressing.is_none() {
            set(
                "Progressing",
                "True",
                "ReplicaSetUpdated",
                format!("ReplicaSet \"{rs_name}\" is progressing."),
                true,
            );
        } else if let Some(secs) = deadline
            && reason_was != "ProgressDeadlineExceeded"
            && timed_out(progressing.as_ref(), secs, now)
        {
            set(
                "Progressing",
                "False",
                "ProgressDeadlineExceeded",
                format!("ReplicaSet \"{rs_name}\" has timed out progressing."),
                false,
            );
        }
    }
    let mut st = serde_json::json!({
        "observedGeneration": deployment["metadata"]["generation"].clone(),
        "replicas": replicas,
        "updatedReplicas": updated,
        "readyReplicas": ready,
        "availableReplicas": available,
        "unavailableReplicas": (want - available).max(0),
        "conditions": conditions,
    });
    if let Some(c) = deployment["status"]["collisionCount"].as_i64() {
        st["collisionCount"] = Value::from(c);
    }
    st
}

#[cfg(test)]
mod plan_tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn deployment(replicas: i64, image: &str) -> Value {
        json!({"metadata": {"name": "web", "namespace": "default", "uid": "d-uid", "generation": 2},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web"}},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}}}})
    }

    fn stored(rs: &Value, replicas: i64, available: i64, created: &str) -> Value {
        let mut rs = rs.clone();
        rs["metadata"]["uid"] = json!(format!("uid-{}", rs["metadata"]["name"].as_str().unwrap()));
        rs["metadata"]["creationTimestamp"] = json!(created);
        rs["spec"]["replicas"] = json!(replicas);
        rs["status"] = json!({"replicas": replicas, "availableReplicas": available, "readyReplicas": available});
        rs
    }

    fn scaled_for(rs: &Value, desired: i64, max: i64) -> Value {
        let mut rs = rs.clone();
        rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] =
            json!(desired.to_string());
        rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] =
            json!(max.to_string());
        rs
    }

    #[test]
    fn a_resize_during_a_rollout_is_shared_in_proportion() {
        // 10 replicas (surge 25% → 3, so 13 at most) mid-rollout: old 7, new 6.
        let mut d = deployment(10, "web:1");
        d["spec"]["strategy"]["rollingUpdate"] =
            json!({"maxSurge": "25%", "maxUnavailable": "25%"});
        let old_rs = new_replica_set(&deployment(10, "web:0"), &[], 7);
        let new_rs = new_replica_set(&d, &[&old_rs], 6);
        let old_rs = scaled_for(&stored(&old_rs, 7, 7, "2026-01-01T00:00:00Z"), 10, 13);
        let new_rs = scaled_for(&stored(&new_rs, 6, 3, "2026-01-02T00:00:00Z"), 10, 13);
        let (old_name, new_name) = (name_of(&old_rs), name_of(&new_rs));
        assert!(!is_scaling_event(&d, &[&old_rs, &new_rs]));

        // Up to 15 (surge 4, 19 at most): +6 shared 3 and 3.
        let mut up = d.clone();
        up["spec"]["replicas"] = json!(15);
        assert!(is_scaling_event(&up, &[&old_rs, &new_rs]));
        let mut actions = plan(&up, &[&old_rs, &new_rs]);
        actions.sort_by_key(|a| format!("{a:?}"));
        let mut want = vec![
            Action::Scale(old_name.clone(), 10),
            Action::Scale(new_name.clone(), 9),
        ];
        want.sort_by_key(|a| format!("{a:?}"));
        assert_eq!(actions, want);
        // Down to 5 (surge 2, 7 at most): -6 shared -3 and -3.
        let mut down = d.clone();
        down["spec"]["replicas"] = json!(5);
        let mut actions = plan(&down, &[&old_rs, &new_rs]);
        actions.sort_by_key(|a| format!("{a:?}"));
        let mut want = vec![
            Action::Scale(old_name.clone(), 4),
            Action::Scale(new_name.clone(), 3),
        ];
        want.sort_by_key(|a| format!("{a:?}"));
        assert_eq!(actions, want);
        // To zero: everything goes.
        let mut zero = d.clone();
        zero["spec"]["replicas"] = json!(0);
        let mut actions = plan(&zero, &[&old_rs, &new_rs]);
        actions.sort_by_key(|a| format!("{a:?}"));
        let mut want = vec![Action::Scale(old_name, 0), Action::Scale(new_name, 0)];
        want.sort_by_key(|a| format!("{a:?}"));
        assert_eq!(actions, want);
    }

    #[test]
    fn a_resize_with_one_active_replica_set_or_a_saturated_new_one() {
        let d = deployment(3, "web:1");
        let rs = scaled_for(
            &stored(&new_replica_set(&d, &[], 3), 3, 3, "2026-01-01T00:00:00Z"),
            3,
            4,
        );
        let mut more = d.clone();
        more["spec"]["replicas"] = json!(5);
        assert_eq!(plan(&more, &[&rs]), vec![Action::Scale(name_of(&rs), 5)]);
        // A paused Deployment follows its size the same way, without rolling out.
        let mut paused = more.clone();
        paused["spec"]["paused"] = json!(true);
        paused["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:2");
        assert_eq!(plan(&paused, &[&rs]), vec![Action::Scale(name_of(&rs), 5)]);
        // The new ReplicaSet saturated: stale old ones go to zero.
        let old = scaled_for(
            &stored(
                &new_replica_set(&deployment(3, "web:0"), &[], 1),
                1,
                1,
                "2025-12-01T00:00:00Z",
            ),
            2,
            3,
        );
        assert_eq!(scale(&d, Some(&rs), &[&old]), vec![(name_of(&old), 0)]);
    }

    #[test]
    fn first_sync_creates_the_new_replica_set() {
        let d = deployment(3, "web:1");
        let actions = plan(&d, &[]);
        let [Action::Create(rs)] = actions.as_slice() else {
            panic!("{actions:?}");
        };
        let hash = rs["metadata"]["labels"]["pod-template-hash"]
            .as_str()
            .unwrap();
        assert_eq!(rs["metadata"]["name"], format!("web-{hash}"));
        assert_eq!(
            rs["spec"]["selector"]["matchLabels"]["pod-template-hash"],
            hash
        );
        assert_eq!(
            rs["spec"]["template"]["metadata"]["labels"]["pod-template-hash"],
            hash
        );
        assert_eq!(rs["metadata"]["annotations"][REVISION], "1");
        assert_eq!(rs["spec"]["replicas"], 3);
        assert_eq!(rs["metadata"]["ownerReferences"][0]["kind"], "Deployment");
        // Stored and found again: nothing more to do.
        let rs = stored(rs, 3, 3, "2026-01-01T00:00:00Z");
        assert_eq!(plan(&d, &[&rs]), vec![]);
        let st = status(&d, &[&rs], "2026-01-01T00:01:00Z");
        assert_eq!(st["updatedReplicas"], 3);
        assert_eq!(st["conditions"][1]["reason"], "NewReplicaSetAvailable");
    }

    #[test]
    fn a_new_template_rolls_over_within_the_budget() {
        let v1 = deployment(3, "web:1");
        let Action::Create(old) = plan(&v1, &[])[0].clone() else {
            panic!()
        };
        let old = stored(&old, 3, 3, "2026-01-01T00:00:00Z");
        let v2 = deployment(3, "web:2");
        let actions = plan(&v2, &[&old]);
        let [Action::Create(new)] = actions.as_slice() else {
            panic!("{actions:?}")
        };
        assert_eq!(new["spec"]["replicas"], 1, "maxSurge 1");
        assert_eq!(new["metadata"]["annotations"][REVISION], "2");
        assert_ne!(new["metadata"]["name"], old["metadata"]["name"]);
        // The new pod available: one old replica goes, the new RS may grow by one.
        let new = stored(new, 1, 1, "2026-01-01T00:05:00Z");
        let actions = plan(&v2, &[&old, &new]);
        assert!(
            actions.contains(&Action::Scale(
                old["metadata"]["name"].as_str().unwrap().into(),
                2
            )),
            "{actions:?}"
        );
        // Paused: nothing moves.
        let mut paused = v2.clone();
        paused["spec"]["paused"] = json!(true);
        assert_eq!(plan(&paused, &[&old, &new]), vec![]);
    }

    #[test]
    fn recreate_scales_old_to_zero_first_and_history_is_pruned() {
        let mut d = deployment(2, "web:1");
        d["spec"]["strategy"] = json!({"type": "Recreate"});
        d["spec"]["revisionHistoryLimit"] = json!(1);
        let Action::Create(a) = plan(&d, &[])[0].clone() else {
            panic!()
        };
        let a = stored(&a, 2, 2, "2026-01-01T00:00:00Z");
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:2");
        let actions = plan(&d, &[&a]);
        let [Action::Create(b)] = actions.as_slice() else {
            panic!("{actions:?}")
        };
        assert_eq!(b["spec"]["replicas"], 0, "old pods first");
        let b = stored(b, 0, 0, "2026-01-01T00:01:00Z");
        let actions = plan(&d, &[&a, &b]);
        assert_eq!(
            actions,
            vec![Action::Scale(
                a["metadata"]["name"].as_str().unwrap().into(),
                0
            )]
        );
        let a0 = stored(&a, 0, 0, "2026-01-01T00:00:00Z");
        let actions = plan(&d, &[&a0, &b]);
        assert_eq!(
            actions,
            vec![Action::Scale(
                b["metadata"]["name"].as_str().unwrap().into(),
                2
            )]
        );
        // Two empty old ReplicaSets with a limit of 1: the oldest revision goes.
        d["spec"]["template"]["spec"]["containers"][0]["image"] = json!("web:3");
        let b0 = stored(&b, 0, 0, "2026-01-01T00:01:00Z");
        let actions = plan(&d, &[&a0, &b0]);
        assert!(
            actions.contains(&Action::Delete(
                a0["metadata"]["name"].as_str().unwrap().into()
            )),
            "{actions:?}"
        );
    }

    #[test]
    fn a_stuck_rollout_exceeds_its_progress_deadline() {
        let mut d = json!({"metadata": {"name": "web", "namespace": "default", "uid": "d", "generation": 2},
            "spec": {"replicas": 2, "progressDeadlineSeconds": 60, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}});
        let template = new_replica_set(&d, &[], 2);
        let new = |available: i64| {
            let mut rs = template.clone();
            rs["metadata"]["uid"] = json!("rs");
            rs["status"] =
                json!({"replicas": 2, "readyReplicas": available, "availableReplicas": available});
            rs
        };
        let rs = new(0);
        let st = status(&d, &[&rs], "2026-01-01T00:00:00Z");
        let progressing = |st: &Value| {
            st["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .find(|c| c["type"] == "Progressing")
                .cloned()
                .unwrap()
        };
        assert_eq!(progressing(&st)["reason"], "ReplicaSetUpdated");
        assert_eq!(recheck_after(&d, &st), Some(61));
        d["status"] = st;
        // Nothing moved for 30 s: still within the deadline.
        let st = status(&d, &[&rs], "2026-01-01T00:00:30Z");
        assert_eq!(progressing(&st)["reason"], "ReplicaSetUpdated");
        // 61 s without progress.
        let st = status(&d, &[&rs], "2026-01-01T00:01:01Z");
        let c = progressing(&st);
        assert_eq!(c["status"], "False");
        assert_eq!(c["reason"], "ProgressDeadlineExceeded");
        assert_eq!(
            c["message"],
            format!(
                "ReplicaSet \"{}\" has timed out progressing.",
                rs["metadata"]["name"].as_str().unwrap()
            )
        );
        // Progress again (a replica became available): progressing anew.
        d["status"] = st;
        let st = status(&d, &[&new(1)], "2026-01-01T00:02:00Z");
        assert_eq!(progressing(&st)["reason"], "ReplicaSetUpdated");
        assert_eq!(progressing(&st)["status"], "True");
        // Paused.
        d["spec"]["paused"] = json!(true);
        let st = status(&d, &[&new(1)], "2026-01-01T00:03:00Z");
        assert_eq!(progressing(&st)["reason"], "DeploymentPaused");
        // Complete, then (hours later, its node restarted) its pods unavailable: not a
        // stalled rollout, as upstream's `DeploymentTimedOut` decides.
        d["spec"]["paused"] = json!(false);
        d["status"] = status(&d, &[&new(2)], "2026-01-01T00:04:00Z");
        assert_eq!(
            progressing(&d["status"])["reason"],
            "NewReplicaSetAvailable"
        );
        assert_eq!(recheck_after(&d, &d["status"]), None);
        let st = status(&d, &[&new(0)], "2026-01-01T05:00:00Z");
        assert_eq!(progressing(&st)["reason"], "NewReplicaSetAvailable");
        assert_eq!(progressing(&st)["status"], "True");
    }
}
