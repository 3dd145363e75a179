//! The node's Lease in `kube-node-lease` (upstream's `component-helpers/apimachinery/lease`
//! controller as the kubelet runs it): held by the node's name, renewed every quarter of
//! its duration, owned by the Node so it goes when the Node does.

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta, OwnerReference};

/// Upstream's `kube-node-lease` namespace.
pub const LEASE_NAMESPACE: &str = "kube-node-lease";

/// How often the lease is renewed: a quarter of its duration (upstream's
/// `renewIntervalFraction`), 10 s for 40 s.
pub fn renew_interval(duration_seconds: i32) -> std::time::Duration {
    let ms = u64::try_from(duration_seconds.max(1)).unwrap_or(40) * 1000 / 4;
    std::time::Duration::from_millis(ms)
}

/// The lease to write (upstream's `newLease`): a copy of `base` (or a fresh lease held by
/// `node_name` for `duration_seconds`) with `renewTime = now`, and an owner reference to
/// the Node when it has none and the Node's uid is known.
pub fn new_lease(
    base: Option<&Lease>,
    node_name: &str,
    duration_seconds: i32,
    node_uid: Option<&str>,
    now: Timestamp,
) -> Lease {
    let mut lease = match base {
        Some(b) => b.clone(),
        None => Lease {
            metadata: ObjectMeta {
                name: Some(node_name.to_string()),
                namespace: Some(LEASE_NAMESPACE.to_string()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                holder_identity: Some(node_name.to_string()),
                lease_duration_seconds: Some(duration_seconds),
                ..LeaseSpec::default()
            }),
        },
    };
    lease.spec.get_or_insert_with(LeaseSpec::default).renew_time = Some(MicroTime(now));
    let has_owner = lease
        .metadata
        .owner_references
        .as_ref()
        .is_some_and(|o| !o.is_empty());
    if !has_owner && let Some(uid) = node_uid {
        lease.metadata.owner_references = Some(vec![OwnerReference {
            api_version: "v1".into(),
            kind: "Node".into(),
            name: node_name.to_string(),
            uid: uid.to_string(),
            ..OwnerReference::default()
        }]);
    }
    lease
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn fresh_and_renewed() {
        let now: Timestamp = "2025-03-01T10:00:00.123456Z".parse().unwrap();
        let l = new_lease(None, "node-a", 40, Some("uid-1"), now);
        assert_eq!(
            serde_json::to_value(&l).unwrap(),
            json!({
                "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                "metadata": {"name": "node-a", "namespace": "kube-node-lease",
                    "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": "node-a", "uid": "uid-1"}]},
                "spec": {"holderIdentity": "node-a", "leaseDurationSeconds": 40,
                    "renewTime": "2025-03-01T10:00:00.123456Z"},
            })
        );
        // Without the node's uid: no owner yet; a later renewal adds it.
        let l = new_lease(None, "node-a", 40, None, now);
        assert!(l.metadata.owner_references.is_none());
        let later: Timestamp = "2025-03-01T10:00:10Z".parse().unwrap();
        let r = new_lease(Some(&l), "node-a", 40, Some("uid-2"), later);
        assert_eq!(r.spec.as_ref().unwrap().renew_time, Some(MicroTime(later)));
        assert_eq!(
            r.metadata.owner_references.as_ref().unwrap()[0].uid,
            "uid-2"
        );
        // An existing owner is kept.
        let r2 = new_lease(Some(&r), "node-a", 40, Some("uid-3"), later);
        assert_eq!(
            r2.metadata.owner_references.as_ref().unwrap()[0].uid,
            "uid-2"
        );
        assert_eq!(renew_interval(40), std::time::Duration::from_secs(10));
    }
}
