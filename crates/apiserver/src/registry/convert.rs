//! Conversions between served versions and the stored version. Only Events have two
//! served forms of one storage: core/v1 Event (stored) and events.k8s.io/v1 Event.

use api::catalog::ResourceInfo;
use serde_json::{Map, Value};

const PAIRS: &[(&str, &str)] = &[
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    ("reportingComponent", "reportingController"),
];

fn rename(obj: Value, to_events: bool, api_version: &str) -> Value {
    let Value::Object(map) = obj else { return obj };
    let mut out = Map::with_capacity(map.len());
    for (k, v) in map {
        let key = PAIRS
            .iter()
            .find_map(|(core, ev)| {
                if to_events && k == *core {
                    Some(ev.to_string())
                } else if !to_events && k == *ev {
                    Some(core.to_string())
                } else {
                    None
                }
            })
            .unwrap_or(k);
        out.insert(key, v);
    }
    out.insert("apiVersion".into(), Value::String(api_version.to_string()));
    Value::Object(out)
}

fn is_events_api(info: &ResourceInfo) -> bool {
    info.group == "events.k8s.io" && info.kind == "Event"
}

/// Whether stored objects differ from what `info` serves.
pub fn needs_conversion(info: &ResourceInfo) -> bool {
    is_events_api(info)
        || (info.storage_version != info.version && !info.storage_version.is_empty())
}

fn set_api_version(mut obj: Value, api_version: String) -> Value {
    if let Some(m) = obj.as_object_mut() {
        m.insert("apiVersion".into(), Value::String(api_version));
    }
    obj
}

/// The stored form of an object received in `info`'s version: core/v1 for Events, the
/// storage version for custom resources served in several versions (conversion strategy
/// None: only `apiVersion` differs).
pub fn to_storage(info: &ResourceInfo, obj: Value) -> Value {
    if is_events_api(info) {
        rename(obj, false, "v1")
    } else if needs_conversion(info) {
        set_api_version(obj, format!("{}/{}", info.group, info.storage_version))
    } else {
        obj
    }
}

/// The form served for `info` of a stored object.
pub fn from_storage(info: &ResourceInfo, obj: Value) -> Value {
    if is_events_api(info) {
        rename(obj, true, &info.api_version())
    } else if info.storage_version != info.version {
        set_api_version(obj, info.api_version())
    } else {
        obj
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn events_round_trip() {
        let info = api::catalog::builtin()
            .into_iter()
            .find(|r| r.group == "events.k8s.io")
            .unwrap();
        let core = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"}, "involvedObject": {"name": "p"}, "message": "hi", "reason": "X"});
        let ev = from_storage(&info, core.clone());
        assert_eq!(ev["apiVersion"], "events.k8s.io/v1");
        assert_eq!(ev["regarding"]["name"], "p");
        assert_eq!(ev["note"], "hi");
        assert_eq!(to_storage(&info, ev), core);
    }
}
