//! Ownership tracking for creates, updates and patches.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use fieldmanager::{
    FieldManager, FieldSet, ManagedFieldsEntry, ObjectSchema, Path, revert_timestamp_only_changes,
};
use serde_json::json;

const T0: u64 = 1_700_000_000;

fn created_deployment() -> serde_json::Value {
    json!({
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}
            }
        }
    })
}

#[test]
fn create_tracks_what_differs_from_the_zero_object() {
    let defs = defs();
    let fm = deployments(&defs);
    let obj = fm.update(None, &created_deployment(), "kubectl-create", at(T0));
    let e = entry(&obj, "kubectl-create", "Update");
    assert_eq!(e["apiVersion"], "apps/v1");
    assert_eq!(e["time"], "2023-11-14T22:13:20Z");
    assert_eq!(e["fieldsType"], "FieldsV1");
    assert!(e.get("subresource").is_none());
    // As upstream: no "." on struct fields present in the zero object (metadata, spec,
    // template), "." on the maps and list items that appear.
    assert_eq!(
        fields_of(&obj, "kubectl-create", "Update"),
        r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:replicas":{},"f:selector":{},"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{}}}}}}}"#
    );
    // The object itself is left as given.
    let mut without = obj.clone();
    without["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("managedFields");
    assert_eq!(without, created_deployment());
}

#[test]
fn updates_merge_into_one_entry_per_manager_and_version() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(fm.update(None, &created_deployment(), "creator", at(T0)));
    let mut a = live.clone();
    a["metadata"]["labels"]["a"] = json!("1");
    let live = fm.update(Some(&live), &a, "editor", at(T0 + 10));
    let mut b = live.clone();
    b["metadata"]["labels"]["b"] = json!("2");
    let live = fm.update(Some(&live), &b, "editor", at(T0 + 20));
    assert_eq!(entries(&live).len(), 2);
    assert_eq!(
        entry(&live, "editor", "Update")["time"],
        "2023-11-14T22:13:40Z"
    );
    assert_eq!(
        fields_of(&live, "editor", "Update"),
        r#"{"f:metadata":{"f:labels":{"f:a":{},"f:b":{}}}}"#
    );
    // A write that changes nothing leaves managedFields (and their times) alone.
    let same = fm.update(Some(&live), &live, "editor", at(T0 + 30));
    assert_eq!(same, live);
    let same = fm.update(Some(&live), &live, "someone-else", at(T0 + 30));
    assert_eq!(same, live);
}

#[test]
fn removed_fields_leave_every_manager() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let mut edited = live.clone();
    edited["metadata"].as_object_mut().unwrap().remove("labels");
    let obj = fm.update(Some(&live), &edited, "editor", at(T0 + 1));
    assert!(!owns(
        &obj,
        "kubectl",
        "Apply",
        &Path::fields(&["metadata", "labels", "app"])
    ));
    // Removing is not owning: the editor gets no entry.
    assert!(entries(&obj).iter().all(|e| e["manager"] != "editor"));
}

#[test]
fn the_oldest_update_entries_are_capped_into_ancient_changes() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut live = stored(fm.update(None, &created_deployment(), "creator", at(T0)));
    for i in 0..11u64 {
        let mut next = live.clone();
        next["metadata"]["labels"][format!("l{i}")] = json!("x");
        live = fm.update(Some(&live), &next, &format!("m{i:02}"), at(T0 + 1 + i));
    }
    let e = entries(&live);
    assert_eq!(e.len(), 10);
    let managers: Vec<&str> = e.iter().map(|x| x["manager"].as_str().unwrap()).collect();
    assert!(managers.contains(&"ancient-changes"));
    assert!(!managers.contains(&"creator"));
    assert!(!managers.contains(&"m00"));
    let bucket = entry(&live, "ancient-changes", "Update");
    assert_eq!(bucket["apiVersion"], "apps/v1");
    // The bucket takes the time of the newest entry merged into it.
    assert_eq!(bucket["time"], "2023-11-14T22:13:22Z");
    let set = FieldSet::from_fields_v1(&bucket["fieldsV1"]).unwrap();
    assert!(set.has(Path::fields(&["spec", "replicas"]).elements()));
    assert!(set.has(Path::fields(&["metadata", "labels", "l0"]).elements()));

    let small = deployments(&defs).with_max_update_managers(2);
    let mut next = live.clone();
    next["metadata"]["labels"]["z"] = json!("z");
    let capped = small.update(Some(&live), &next, "late", at(T0 + 100));
    assert_eq!(entries(&capped).len(), 2);
}

#[test]
fn an_empty_list_or_entry_resets_managed_fields() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    for reset in [json!([]), json!([{}])] {
        let mut next = live.clone();
        next["metadata"]["managedFields"] = reset;
        next["metadata"]["labels"]["x"] = json!("y");
        let obj = fm.update(Some(&live), &next, "editor", at(T0 + 1));
        assert!(obj["metadata"].get("managedFields").is_none(), "{obj:#}");
        assert_eq!(obj["metadata"]["labels"]["x"], "y");
    }
}

#[test]
fn managed_fields_sent_by_the_client_are_used() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let live = fm
        .apply(
            Some(&live),
            &json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {"replicas": 3}}),
            "scaler",
            false,
            at(T0 + 1),
        )
        .unwrap()
        .object;
    // The client drops the scaler's entry.
    let mut next = live.clone();
    let kept: Vec<serde_json::Value> = entries(&live)
        .into_iter()
        .filter(|e| e["manager"] != "scaler")
        .collect();
    next["metadata"]["managedFields"] = json!(kept);
    let obj = fm.update(Some(&live), &next, "editor", at(T0 + 2));
    assert_eq!(entries(&obj).len(), 1);
    assert_eq!(entries(&obj)[0]["manager"], "kubectl");

    // Unreadable managedFields in the request fall back to the live object's.
    let mut bad = live.clone();
    bad["metadata"]["managedFields"] = json!([{"manager": 1}]);
    let obj = fm.update(Some(&live), &bad, "editor", at(T0 + 3));
    assert_eq!(
        obj["metadata"]["managedFields"],
        live["metadata"]["managedFields"]
    );
}

#[test]
fn status_writes_are_tracked_under_the_subresource() {
    let defs = defs();
    let fm = deployments(&defs);
    let status_fm = FieldManager::new(
        ObjectSchema::builtin(deployment_root(&defs), &defs),
        deployment_gvk(),
    )
    .with_subresource("status")
    .with_reset_fields(FieldSet::from_paths(&[Path::fields(&["spec"])]));
    let live = stored(fm.update(None, &created_deployment(), "creator", at(T0)));

    let mut next = live.clone();
    next["status"] = json!({"replicas": 1, "observedGeneration": 1});
    // What the request says about managedFields is ignored on subresources.
    next["metadata"]["managedFields"] = json!([]);
    let obj = status_fm.update(Some(&live), &next, "kube-controller-manager", at(T0 + 5));
    let e = entry(&obj, "kube-controller-manager", "Update");
    assert_eq!(e["subresource"], "status");
    assert_eq!(
        fields_of(&obj, "kube-controller-manager", "Update"),
        r#"{"f:status":{"f:observedGeneration":{},"f:replicas":{}}}"#
    );
    assert!(owns(
        &obj,
        "creator",
        "Update",
        &Path::fields(&["spec", "replicas"])
    ));

    // Through the main resource, status changes are nobody's.
    let mut next = obj.clone();
    next["status"]["replicas"] = json!(2);
    let obj2 = fm.update(Some(&obj), &next, "someone", at(T0 + 6));
    assert!(entries(&obj2).iter().all(|e| e["manager"] != "someone"));
    assert!(owns(
        &obj2,
        "kube-controller-manager",
        "Update",
        &Path::fields(&["status", "replicas"])
    ));
}

#[test]
fn a_manager_without_a_name_is_unknown() {
    let defs = defs();
    let fm = deployments(&defs);
    let obj = fm.update(None, &created_deployment(), "", at(T0));
    assert_eq!(entries(&obj)[0]["manager"], "unknown");
}

#[test]
fn sets_follow_schema_changes_to_atomic() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut live = stored(created_deployment());
    // Written when the selector was granular: its keys are owned one by one.
    live["metadata"]["managedFields"] = json!([{
        "manager": "old", "operation": "Update", "apiVersion": "apps/v1",
        "time": "2023-01-01T00:00:00Z", "fieldsType": "FieldsV1",
        "fieldsV1": {"f:spec": {"f:selector": {"f:matchLabels": {".": {}, "f:app": {}}}, "f:replicas": {}}}
    }]);
    let mut next = live.clone();
    next["metadata"]["labels"]["x"] = json!("y");
    let obj = fm.update(Some(&live), &next, "editor", at(T0));
    assert_eq!(
        fields_of(&obj, "old", "Update"),
        r#"{"f:spec":{"f:replicas":{},"f:selector":{}}}"#
    );
}

#[test]
fn undecodable_live_managed_fields_stop_tracking() {
    let defs = defs();
    let fm = deployments(&defs);
    let mut live = stored(created_deployment());
    live["metadata"]["managedFields"] = json!([{
        "manager": "old", "operation": "Patch", "apiVersion": "apps/v1", "fieldsType": "FieldsV1"
    }]);
    let mut next = live.clone();
    next["spec"]["replicas"] = json!(2);
    let obj = fm.update(Some(&live), &next, "editor", at(T0));
    assert!(obj["metadata"].get("managedFields").is_none());
    // Apply refuses to work on them.
    let err = fm
        .apply(Some(&live), &web_config(1, "x"), "kubectl", false, at(T0))
        .unwrap_err();
    assert_eq!(err.code(), 500);
    assert_eq!(
        err.to_string(),
        "failed to decode managed fields: operation must be `Apply` or `Update`"
    );
}

#[test]
fn timestamp_only_changes_can_be_reverted() {
    let defs = defs();
    let fm = deployments(&defs);
    let live = stored(
        fm.apply(None, &web_config(3, "nginx"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    // An update that rewrites a field with its own value bumps no time (nothing changes).
    let obj = fm.update(Some(&live), &live, "kubectl", at(T0 + 5));
    assert_eq!(obj, live);
    // A hand-made timestamp-only change is reverted.
    let mut bumped = live.clone();
    bumped["metadata"]["managedFields"][0]["time"] = json!("2030-01-01T00:00:00Z");
    assert!(revert_timestamp_only_changes(&mut bumped, &live));
    assert_eq!(bumped, live);
}

#[test]
fn entries_read_back() {
    let defs = defs();
    let fm = deployments(&defs);
    let obj = fm.update(None, &created_deployment(), "creator", at(T0));
    let list = ManagedFieldsEntry::list_of(&obj).unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!(list[0].manager, "creator");
    assert_eq!(list[0].time, Some(T0 as i64));
    assert!(
        list[0]
            .field_set()
            .unwrap()
            .has(Path::fields(&["spec", "replicas"]).elements())
    );
    assert_eq!(list[0].to_value(), entries(&obj)[0]);
}
