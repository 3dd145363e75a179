//! Events, `core/v1` and `events.k8s.io`: `LAST SEEN TYPE REASON OBJECT MESSAGE`, wide
//! `SUBOBJECT SOURCE FIRST SEEN COUNT NAME`.
//!
//! Upstream prints both APIs from the internal event type; an `events.k8s.io` event's fields
//! are read under their names in that API (`regarding`, `note`, `deprecatedCount`, …), as
//! the conversion to the internal type maps them.

use super::{Col, Ctx, NAME, Printer, Row, col, i, s, wide};
use crate::descriptions::*;
use crate::time::ZERO;
use crate::time::timestamp;
use crate::value::{at, int, is_present, is_set, name, string};
use serde_json::Value;

const COLUMNS: &[Col] = &[
    col("Last Seen", "string", EVENT_LAST_TIMESTAMP),
    col("Type", "string", EVENT_TYPE),
    col("Reason", "string", EVENT_REASON),
    col("Object", "string", EVENT_INVOLVED_OBJECT),
    wide("Subobject", "string", OBJECT_REFERENCE_FIELD_PATH),
    wide("Source", "string", EVENT_SOURCE),
    col("Message", "string", EVENT_MESSAGE),
    wide("First Seen", "string", EVENT_FIRST_TIMESTAMP),
    wide("Count", "string", EVENT_COUNT),
    Col {
        priority: 1,
        ..NAME
    },
];

pub(crate) const EVENT: Printer = Printer {
    columns: COLUMNS,
    row: event_row,
};

/// Field names of the internal event's fields in one API.
struct Fields {
    first: &'static str,
    last: &'static str,
    count: &'static str,
    object: &'static str,
    source: &'static str,
    reporting_controller: &'static str,
    message: &'static str,
}

const CORE: Fields = Fields {
    first: "firstTimestamp",
    last: "lastTimestamp",
    count: "count",
    object: "involvedObject",
    source: "source",
    reporting_controller: "reportingComponent",
    message: "message",
};

const EVENTS_API: Fields = Fields {
    first: "deprecatedFirstTimestamp",
    last: "deprecatedLastTimestamp",
    count: "deprecatedCount",
    object: "regarding",
    source: "deprecatedSource",
    reporting_controller: "reportingController",
    message: "note",
};

/// Whether an event is in the `events.k8s.io` form.
fn is_events_api(obj: &Value) -> bool {
    match string(obj, &["apiVersion"]) {
        v if v.starts_with("events.k8s.io/") => true,
        "" => {
            !is_present(obj, &["involvedObject"])
                && (is_present(obj, &["regarding"]) || is_present(obj, &["note"]))
        }
        _ => false,
    }
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

fn event_row(obj: &Value, ctx: &Ctx) -> Row {
    let f = if is_events_api(obj) {
        &EVENTS_API
    } else {
        &CORE
    };

    let first = timestamp(at(obj, &[f.first]));
    let first_seen = if first == ZERO {
        ctx.since(at(obj, &["eventTime"]))
    } else {
        ctx.since(at(obj, &[f.first]))
    };
    let mut last_seen = if timestamp(at(obj, &[f.last])) == ZERO {
        first_seen.clone()
    } else {
        ctx.since(at(obj, &[f.last]))
    };
    let mut count = int(obj, &[f.count]);
    if is_set(obj, &["series"]) {
        last_seen = ctx.since(at(obj, &["series", "lastObservedTime"]));
        count = int(obj, &["series", "count"]);
    } else if count == 0 {
        // Singleton events have no count in the new API.
        count = 1;
    }

    let kind = string(obj, &[f.object, "kind"]).to_lowercase();
    let object_name = string(obj, &[f.object, "name"]);
    let target = if object_name.is_empty() {
        kind
    } else {
        format!("{kind}/{object_name}")
    };

    let component = first_non_empty(
        string(obj, &[f.source, "component"]),
        string(obj, &[f.reporting_controller]),
    );
    let instance = first_non_empty(
        string(obj, &[f.source, "host"]),
        string(obj, &["reportingInstance"]),
    );
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };

    vec![
        s(last_seen),
        s(string(obj, &["type"])),
        s(string(obj, &["reason"])),
        s(target),
        s(string(obj, &[f.object, "fieldPath"])),
        s(source),
        s(string(obj, &[f.message]).trim()),
        s(first_seen),
        i(count),
        s(name(obj)),
    ]
    .into()
}
