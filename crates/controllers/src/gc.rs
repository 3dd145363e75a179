//! The garbage collector's decisions (upstream's `pkg/controller/garbagecollector`) as pure
//! functions, over the kinds the controller manager caches so far (Deployments,
//! ReplicaSets, Pods):
//!
//! - a dependent all of whose owners are gone (no live object with the owner's uid) is
//!   deleted in the background;
//! - an owner being deleted with the `orphan` finalizer first has its references removed
//!   from its dependents, then loses the finalizer;
//! - an owner being deleted with the `foregroundDeletion` finalizer has its dependents
//!   deleted (in the foreground themselves), and loses the finalizer once none is left.
//!
//! Owners of kinds the collector does not cache are assumed alive.

use serde_json::Value;

/// The kinds the collector knows.
pub const KINDS: &[&str] = &["Deployment", "ReplicaSet", "Pod"];

/// What to do about one object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Delete the object (it is an orphan of deleted owners), background propagation.
    DeleteOrphan,
    /// Remove the references to `owner_uid` from these dependents (names).
    Orphan { dependents: Vec<String> },
    /// Delete these dependents in the foreground.
    DeleteDependents(Vec<String>),
    /// Remove this finalizer from the object.
    RemoveFinalizer(&'static str),
}

fn refs(obj: &Value) -> Vec<&Value> {
    obj["metadata"]["ownerReferences"]
        .as_array()
        .map(|r| r.iter().collect())
        .unwrap_or_default()
}

fn name(obj: &Value) -> String {
    obj["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn has_finalizer(obj: &Value, f: &str) -> bool {
    obj["metadata"]["finalizers"]
        .as_array()
        .is_some_and(|l| l.iter().any(|x| x == f))
}

/// The actions for `obj`, given whether an object of a kind with a uid exists
/// (`alive(kind, uid)`) and the objects that reference `obj` as an owner (`dependents`).
pub fn plan(obj: &Value, alive: &dyn Fn(&str, &str) -> bool, dependents: &[&Value]) -> Vec<Action> {
    let mut actions = Vec::new();
    let deleting = !obj["metadata"]["deletionTimestamp"].is_null();
    // As a dependent: every owner gone.
    let owners = refs(obj);
    if !deleting
        && !owners.is_empty()
        && owners.iter().all(|o| {
            let kind = o["kind"].as_str().unwrap_or_default();
            KINDS.contains(&kind) && !alive(kind, o["uid"].as_str().unwrap_or_default())
        })
    {
        actions.push(Action::DeleteOrphan);
        return actions;
    }
    // As an owner being deleted.
    if deleting {
        let names: Vec<String> = dependents.iter().map(|d| name(d)).collect();
        if has_finalizer(obj, "orphan") {
            if !names.is_empty() {
                actions.push(Action::Orphan { dependents: names });
            } else {
                actions.push(Action::RemoveFinalizer("orphan"));
            }
        } else if has_finalizer(obj, "foregroundDeletion") {
            let live: Vec<String> = dependents
                .iter()
                .filter(|d| d["metadata"]["deletionTimestamp"].is_null())
                .map(|d| name(d))
                .collect();
            if names.is_empty() {
                actions.push(Action::RemoveFinalizer("foregroundDeletion"));
            } else if !live.is_empty() {
                actions.push(Action::DeleteDependents(live));
            }
        }
    }
    actions
}

/// The references of `dependent` without those to `owner_uid` (for orphaning).
pub fn without_owner(dependent: &Value, owner_uid: &str) -> Vec<Value> {
    refs(dependent)
        .into_iter()
        .filter(|o| o["uid"] != owner_uid)
        .cloned()
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn obj(name: &str, uid: &str, owner: Option<(&str, &str)>) -> Value {
        let mut o = json!({"metadata": {"name": name, "uid": uid}});
        if let Some((kind, uid)) = owner {
            o["metadata"]["ownerReferences"] = json!([{"kind": kind, "name": "x", "uid": uid}]);
        }
        o
    }

    #[test]
    fn orphans_of_deleted_owners_go() {
        let alive = |_: &str, uid: &str| uid == "live";
        let rs = obj("rs", "rs-uid", Some(("Deployment", "gone")));
        assert_eq!(plan(&rs, &alive, &[]), vec![Action::DeleteOrphan]);
        let rs = obj("rs", "rs-uid", Some(("Deployment", "live")));
        assert_eq!(plan(&rs, &alive, &[]), vec![]);
        // Unknown owner kinds are assumed alive; no owners: nothing to do.
        let odd = obj("p", "p", Some(("Job", "gone")));
        assert_eq!(plan(&odd, &alive, &[]), vec![]);
        assert_eq!(plan(&obj("p", "p", None), &alive, &[]), vec![]);
    }

    #[test]
    fn orphan_and_foreground_finalizers() {
        let alive = |_: &str, _: &str| true;
        let mut d = obj("d", "d-uid", None);
        d["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        d["metadata"]["finalizers"] = json!(["orphan"]);
        let rs = obj("rs", "rs-uid", Some(("Deployment", "d-uid")));
        assert_eq!(
            plan(&d, &alive, &[&rs]),
            vec![Action::Orphan {
                dependents: vec!["rs".into()]
            }]
        );
        assert_eq!(
            plan(&d, &alive, &[]),
            vec![Action::RemoveFinalizer("orphan")]
        );
        assert_eq!(without_owner(&rs, "d-uid"), Vec::<Value>::new());

        d["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        assert_eq!(
            plan(&d, &alive, &[&rs]),
            vec![Action::DeleteDependents(vec!["rs".into()])]
        );
        // Dependents already going: wait.
        let mut going = rs.clone();
        going["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        assert_eq!(plan(&d, &alive, &[&going]), vec![]);
        assert_eq!(
            plan(&d, &alive, &[]),
            vec![Action::RemoveFinalizer("foregroundDeletion")]
        );
    }
}
