//! The generic PLEG (upstream's `pleg/generic.go`): relist the runtime's sandboxes and
//! containers, compare each object's state with the previous relist, and report the pods
//! that changed so their workers sync.

use std::collections::{BTreeMap, BTreeSet};

use cri::RuntimeService;

use super::runtime::LABEL_POD_UID;
use crate::Error;

/// One relist: pod uid → object id → state (`s:`-prefixed ids are sandboxes).
pub type Snapshot = BTreeMap<String, BTreeMap<String, i32>>;

/// Lists the runtime's kubelet-managed objects.
pub async fn relist(runtime: &dyn RuntimeService) -> Result<Snapshot, Error> {
    let mut snap = Snapshot::new();
    for s in runtime.list_pod_sandbox(None).await? {
        if let Some(uid) = s.labels.get(LABEL_POD_UID) {
            snap.entry(uid.clone())
                .or_default()
                .insert(format!("s:{}", s.id), s.state);
        }
    }
    for c in runtime.list_containers(None).await? {
        if let Some(uid) = c.labels.get(LABEL_POD_UID) {
            snap.entry(uid.clone()).or_default().insert(c.id, c.state);
        }
    }
    Ok(snap)
}

/// The pods whose objects appeared, vanished or changed state between two relists.
pub fn changed(old: &Snapshot, new: &Snapshot) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for uid in old.keys().chain(new.keys()) {
        if old.get(uid) != new.get(uid) {
            out.insert(uid.clone());
        }
    }
    out
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn snap(entries: &[(&str, &str, i32)]) -> Snapshot {
        let mut s = Snapshot::new();
        for (uid, id, st) in entries {
            s.entry((*uid).into())
                .or_default()
                .insert((*id).into(), *st);
        }
        s
    }

    #[test]
    fn diffs() {
        let a = snap(&[("u1", "c1", 1), ("u2", "c2", 1)]);
        let b = snap(&[("u1", "c1", 2), ("u2", "c2", 1), ("u3", "s:x", 0)]);
        assert_eq!(changed(&a, &b), ["u1".to_string(), "u3".to_string()].into());
        let c = snap(&[("u2", "c2", 1)]);
        assert_eq!(changed(&a, &c), ["u1".to_string()].into());
        assert!(changed(&a, &a).is_empty());
    }
}
