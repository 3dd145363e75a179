//! Conversion is total and fast: arbitrary JSON never panics, 10,000 pods convert quickly.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use api::catalog::builtin;
use common::*;
use printers::{
    CustomColumns, IncludeObject, PrinterColumn, Table, TableOptions, custom_table, to_table,
};
use proptest::prelude::*;
use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

/// Arbitrary JSON, with strings that look like the values printers parse (timestamps,
/// quantities, states) mixed with noise.
fn arb_json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_map(|f| serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)),
        prop_oneof![
            Just("2024-05-31T10:20:30Z"),
            Just("0001-01-01T00:00:00Z"),
            Just("1Gi"),
            Just("1.5"),
            Just("Always"),
            Just("True"),
            Just("Ready"),
            Just("Completed"),
            Just("LoadBalancer"),
            Just("In"),
            Just(""),
        ]
        .prop_map(|s| Value::String(s.to_string())),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            prop::collection::btree_map(
                prop_oneof![
                    Just("metadata".to_string()),
                    Just("name".to_string()),
                    Just("spec".to_string()),
                    Just("status".to_string()),
                    Just("state".to_string()),
                    Just("type".to_string()),
                    "[a-zA-Z]{1,8}",
                ],
                inner,
                0..5
            )
            .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// An object whose well-known fields (at the paths printers read) hold arbitrary JSON.
fn arb_object() -> impl Strategy<Value = Value> {
    const PATHS: &[&[&str]] = &[
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "creationTimestamp"],
        &["metadata", "deletionTimestamp"],
        &["metadata", "labels"],
        &["metadata", "annotations"],
        &["metadata", "ownerReferences"],
        &["spec"],
        &["spec", "containers"],
        &["spec", "initContainers"],
        &["spec", "selector"],
        &["spec", "selector", "matchExpressions"],
        &["spec", "template", "spec", "containers"],
        &["spec", "ports"],
        &["spec", "type"],
        &["spec", "replicas"],
        &["spec", "capacity"],
        &["spec", "claimRef"],
        &["status"],
        &["status", "phase"],
        &["status", "conditions"],
        &["status", "containerStatuses"],
        &["status", "initContainerStatuses"],
        &["status", "loadBalancer", "ingress"],
        &["status", "hard"],
        &["status", "used"],
        &["status", "addresses"],
        &["subsets"],
        &["endpoints"],
        &["series"],
        &["involvedObject"],
        &["regarding"],
        &["firstTimestamp"],
        &["eventTime"],
        &["subjects"],
        &["roleRef"],
    ];
    prop::collection::vec((0..PATHS.len(), arb_json()), 0..12).prop_map(|entries| {
        let mut obj = Value::Object(Map::new());
        for (i, v) in entries {
            set_path(&mut obj, PATHS[i], v);
        }
        obj
    })
}

fn set_path(obj: &mut Value, path: &[&str], v: Value) {
    let mut cur = obj;
    for (i, key) in path.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if i + 1 == path.len() {
            m.insert((*key).to_string(), v);
            return;
        }
        cur = m.entry((*key).to_string()).or_insert_with(|| json!({}));
    }
}

fn arb_json_path() -> impl Strategy<Value = String> {
    prop_oneof![
        "[.a-z\\[\\]0-9*?@()='\"<>!:, -]{0,24}",
        Just(".spec.x".to_string()),
        Just(".status.conditions[?(@.type==\"Ready\")].status".to_string()),
        Just("..name".to_string()),
        Just(".spec.list[-1:]".to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn any_object_any_kind_gets_a_row(obj in arb_object(), raw in arb_json()) {
        for r in builtin() {
            for o in [&obj, &raw] {
                for include in [IncludeObject::None, IncludeObject::Metadata, IncludeObject::Object] {
                    let t = to_table(&r, &[o], &include.into(), now());
                    let cols = t["columnDefinitions"].as_array().map_or(0, Vec::len);
                    prop_assert_eq!(t["rows"][0]["cells"].as_array().map_or(0, Vec::len), cols);
                }
            }
        }
    }

    #[test]
    fn any_json_path_any_object(paths in prop::collection::vec((arb_json_path(), "integer|number|string|boolean|date|other"), 1..4), obj in arb_json()) {
        let columns: Vec<PrinterColumn> = paths
            .into_iter()
            .map(|(json_path, ty)| PrinterColumn { name: "C".into(), type_: ty, json_path, ..PrinterColumn::default() })
            .collect();
        let cols = CustomColumns::new(&columns);
        let t = custom_table(&cols, &[&obj], &TableOptions::default(), now());
        let n = t["columnDefinitions"].as_array().map_or(0, Vec::len);
        prop_assert_eq!(t["rows"][0]["cells"].as_array().map_or(0, Vec::len), n);
    }
}

fn realistic_pod(i: usize) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("web-{i}"),
            "generateName": "web-",
            "namespace": "default",
            "uid": format!("5f0c6c36-{i:04}-4a57-9a7e-3d1c2f3b4a5b"),
            "resourceVersion": format!("{}", 1000 + i),
            "creationTimestamp": ago((i as i64 % 1000) * 37),
            "labels": {"app": "web", "pod-template-hash": "7d4b9c6f5d"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web-7d4b9c6f5d",
                                 "uid": "0b3a", "controller": true, "blockOwnerDeletion": true}],
            "managedFields": [{"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1",
                               "time": ago(100), "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}}]
        },
        "spec": {
            "containers": [{"name": "nginx", "image": "nginx:1.27", "ports": [{"containerPort": 80}]},
                           {"name": "sidecar", "image": "envoy:1.30"}],
            "nodeName": format!("node-{}", i % 50),
            "restartPolicy": "Always"
        },
        "status": {
            "phase": "Running",
            "podIP": format!("10.244.{}.{}", i / 250, i % 250),
            "podIPs": [{"ip": format!("10.244.{}.{}", i / 250, i % 250)}],
            "conditions": [{"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "True"},
                           {"type": "ContainersReady", "status": "True"}, {"type": "PodScheduled", "status": "True"}],
            "containerStatuses": [
                {"name": "nginx", "ready": true, "restartCount": i % 3, "started": true,
                 "state": {"running": {"startedAt": ago(600)}},
                 "lastState": if !i.is_multiple_of(3) { json!({"terminated": {"exitCode": 1, "finishedAt": ago(700)}}) } else { json!({}) }},
                {"name": "sidecar", "ready": true, "restartCount": 0, "started": true,
                 "state": {"running": {"startedAt": ago(600)}}}
            ]
        }
    })
}

/// CPU time this thread has run, from the scheduler's accounting (nanoseconds), so that
/// the measurement does not count time spent waiting for a core on a busy machine.
fn thread_cpu_nanos() -> Option<u64> {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The best of three runs of `f` (after a warm-up), in CPU time where the system reports
/// it, else in wall time.
fn best_of_three(mut f: impl FnMut()) -> Duration {
    f();
    (0..3)
        .map(|_| {
            let cpu = thread_cpu_nanos();
            let wall = Instant::now();
            f();
            match (cpu, thread_cpu_nanos()) {
                (Some(a), Some(b)) => Duration::from_nanos(b.saturating_sub(a)),
                _ => wall.elapsed(),
            }
        })
        .min()
        .unwrap_or_default()
}

#[test]
fn ten_thousand_pods() {
    let pods: Vec<Value> = (0..10_000).map(realistic_pod).collect();
    let items: Vec<&Value> = pods.iter().collect();
    let r = resource("", "pods");
    let opts = TableOptions::default();

    let t = to_table(&r, &items, &opts, now());
    assert_eq!(t["rows"].as_array().unwrap().len(), 10_000);
    assert_eq!(
        t["rows"][1]["cells"].as_array().unwrap()[..4],
        [
            json!("web-1"),
            json!("2/2"),
            json!("Running"),
            json!("1 (11m ago)")
        ]
    );

    let converted = best_of_three(|| {
        let table = Table::builtin(&r, &items, &opts, now());
        assert_eq!(table.rows.as_ref().map_or(0, Vec::len), 10_000);
    });
    // What a server does next: write the table out, the objects' metadata included.
    let mut bytes = 0;
    let served = best_of_three(|| {
        let table = Table::builtin(&r, &items, &opts, now());
        bytes = serde_json::to_vec(&table).unwrap().len();
    });
    let as_value = best_of_three(|| {
        assert!(to_table(&r, &items, &opts, now()).is_object());
    });
    eprintln!(
        "10,000 pods: converted in {converted:?}; written out in {served:?} ({bytes} bytes); \
         as a JSON value in {as_value:?}"
    );
    // The budget is for optimized builds; unoptimized test builds get a looser bound.
    let budget = if cfg!(debug_assertions) { 5_000 } else { 100 };
    assert!(converted.as_millis() < budget, "took {converted:?}");
}
