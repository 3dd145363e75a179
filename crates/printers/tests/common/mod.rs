//! Helpers shared by the integration tests: a fixed clock, timestamps relative to it, and
//! one-row tables.

#![allow(dead_code)]

use api::catalog::{ResourceInfo, builtin};
use api::k8s::jiff::{SignedDuration, Timestamp};
use printers::{IncludeObject, TableOptions, to_table};
use serde_json::Value;

/// The instant every test's ages are computed against.
pub fn now() -> Timestamp {
    "2024-06-01T12:00:00Z".parse().unwrap()
}

/// The RFC 3339 timestamp `secs` seconds before [`now`].
pub fn ago(secs: i64) -> String {
    let t = now() - SignedDuration::from_secs(secs);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

pub const MINUTE: i64 = 60;
pub const HOUR: i64 = 3600;
pub const DAY: i64 = 86_400;

/// A built-in resource by group and plural.
pub fn resource(group: &str, plural: &str) -> ResourceInfo {
    builtin()
        .into_iter()
        .find(|r| r.group == group && r.plural == plural)
        .unwrap_or_else(|| panic!("no resource {plural}.{group}"))
}

/// The table of some objects of a resource (`plural` or `plural.group`).
pub fn table(resource_name: &str, items: &[&Value], options: TableOptions) -> Value {
    let (plural, group) = resource_name.split_once('.').unwrap_or((resource_name, ""));
    to_table(&resource(group, plural), items, &options, now())
}

/// The cells of one object's row.
pub fn cells(resource_name: &str, obj: &Value) -> Vec<Value> {
    let t = table(resource_name, &[obj], IncludeObject::None.into());
    t["rows"][0]["cells"].as_array().unwrap().clone()
}

/// The column names of a table.
pub fn column_names(t: &Value) -> Vec<String> {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_string())
        .collect()
}

/// What `kubectl get` prints as the header (no `-o wide`): priority-0 columns, upper case.
pub fn header(t: &Value) -> String {
    t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["priority"] == 0)
        .map(|c| c["name"].as_str().unwrap().to_uppercase())
        .collect::<Vec<_>>()
        .join(" ")
}

/// Object metadata with a name and a creation time `age` seconds ago.
pub fn meta(name: &str, age: i64) -> Value {
    serde_json::json!({
        "name": name,
        "namespace": "default",
        "uid": "6a9f1c1e-0000-4000-8000-000000000001",
        "resourceVersion": "42",
        "creationTimestamp": ago(age),
    })
}
