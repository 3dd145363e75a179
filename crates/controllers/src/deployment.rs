//! The Deployment controller's arithmetic (upstream's `pkg/controller/deployment/util`
//! and `rolling.go`), as pure functions: the pod-template hash that names ReplicaSets,
//! `maxSurge`/`maxUnavailable` resolution, and the rolling update's scale-up of the new
//! ReplicaSet and scale-down of the old ones (unhealthy replicas first, then the oldest
//! ReplicaSets, never below the minimum available).

use serde_json::Value;

/// The characters of upstream's `rand.SafeEncodeString` (no vowels, no look-alikes).
const ALPHANUMS: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";

/// Upstream's default `maxSurge` and `maxUnavailable`.
pub const DEFAULT_SURGE: &str = "25%";
pub const DEFAULT_UNAVAILABLE: &str = "25%";

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String((*k).clone()).to_string());
                out.push(':');
                write_canonical(&m[*k], out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The `pod-template-hash` of a pod template (`ComputeHash`): FNV-1a 32 of the template
/// (canonical JSON here; upstream hashes its Go struct dump, which only has to be stable
/// within one cluster) and the collision count, encoded with `SafeEncodeString`.
pub fn template_hash(template: &Value, collision_count: Option<u32>) -> String {
    let mut text = String::new();
    write_canonical(template, &mut text);
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
    hash.to_string()
        .bytes()
        .map(|b| char::from(ALPHANUMS[usize::from(b) % ALPHANUMS.len()]))
        .collect()
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
        assert!(h.bytes().all(|b| ALPHANUMS.contains(&b)), "{h}");
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
