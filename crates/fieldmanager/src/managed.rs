//! `metadata.managedFields`: the entries' wire form, upstream's manager identifiers, and the
//! decoded form the field manager works on (one field set per manager identifier, with its
//! apiVersion, whether it was applied, and its time).

use std::collections::BTreeMap;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::set::FieldSet;

/// The only `fieldsType` there is.
pub const FIELDS_V1: &str = "FieldsV1";

/// One entry of `metadata.managedFields`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ManagedFieldsEntry {
    pub manager: String,
    /// `Apply` or `Update`.
    pub operation: String,
    pub api_version: String,
    /// Seconds since the Unix epoch (serialized as RFC 3339, in UTC, to the second).
    pub time: Option<i64>,
    pub fields_type: String,
    /// The raw `fieldsV1` value.
    pub fields_v1: Option<Value>,
    pub subresource: String,
}

impl ManagedFieldsEntry {
    /// Whether every field is empty (`{}`), which resets managedFields on an update.
    pub fn is_empty(&self) -> bool {
        *self == ManagedFieldsEntry::default()
    }

    /// The entry's field set.
    pub fn field_set(&self) -> Result<FieldSet, Error> {
        match &self.fields_v1 {
            Some(v) => FieldSet::from_fields_v1(v),
            None => Ok(FieldSet::new()),
        }
    }

    /// The JSON form, fields in upstream's order (manager, operation, apiVersion, time,
    /// fieldsType, fieldsV1, subresource), empty ones left out.
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: &str| {
            if !v.is_empty() {
                m.insert(k.to_string(), Value::String(v.to_string()));
            }
        };
        put("manager", &self.manager);
        put("operation", &self.operation);
        put("apiVersion", &self.api_version);
        if let Some(t) = self.time {
            m.insert("time".into(), Value::String(format_time(t)));
        }
        if !self.fields_type.is_empty() {
            m.insert("fieldsType".into(), Value::String(self.fields_type.clone()));
        }
        if let Some(f) = &self.fields_v1 {
            m.insert("fieldsV1".into(), f.clone());
        }
        if !self.subresource.is_empty() {
            m.insert(
                "subresource".into(),
                Value::String(self.subresource.clone()),
            );
        }
        Value::Object(m)
    }

    /// Reads one entry as upstream's unstructured conversion does: `None` when a field has
    /// the wrong type or the time does not parse.
    pub fn from_value(v: &Value) -> Option<ManagedFieldsEntry> {
        EntryRef::of(v).map(EntryRef::into_entry)
    }

    /// The entries of an object's `metadata.managedFields`: `None` when absent, null, or
    /// unreadable (as upstream's unstructured accessor returns nil).
    pub fn list_of(obj: &Value) -> Option<Vec<ManagedFieldsEntry>> {
        EntryRef::list_of(obj).map(|l| l.into_iter().map(EntryRef::into_entry).collect())
    }

    /// The entry read in place.
    #[cfg(test)]
    pub(crate) fn as_ref(&self) -> EntryRef<'_> {
        EntryRef {
            manager: &self.manager,
            operation: &self.operation,
            api_version: &self.api_version,
            time: self.time,
            fields_type: &self.fields_type,
            fields_v1: self.fields_v1.as_ref(),
            subresource: &self.subresource,
        }
    }

    /// [`ManagedFieldsEntry::to_value`] without copying the strings and fieldsV1.
    pub fn into_value(self) -> Value {
        let mut m = Map::new();
        let mut put = |k: &str, v: String| {
            if !v.is_empty() {
                m.insert(k.to_string(), Value::String(v));
            }
        };
        put("manager", self.manager);
        put("operation", self.operation);
        put("apiVersion", self.api_version);
        if let Some(t) = self.time {
            m.insert("time".into(), Value::String(format_time(t)));
        }
        if !self.fields_type.is_empty() {
            m.insert("fieldsType".into(), Value::String(self.fields_type));
        }
        if let Some(f) = self.fields_v1 {
            m.insert("fieldsV1".into(), f);
        }
        if !self.subresource.is_empty() {
            m.insert("subresource".into(), Value::String(self.subresource));
        }
        Value::Object(m)
    }
}

/// A [`ManagedFieldsEntry`] read in place, its strings and fieldsV1 borrowed from the object.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct EntryRef<'v> {
    pub manager: &'v str,
    pub operation: &'v str,
    pub api_version: &'v str,
    pub time: Option<i64>,
    pub fields_type: &'v str,
    pub fields_v1: Option<&'v Value>,
    pub subresource: &'v str,
}

impl<'v> EntryRef<'v> {
    /// As [`ManagedFieldsEntry::from_value`].
    pub(crate) fn of(v: &'v Value) -> Option<EntryRef<'v>> {
        let m = v.as_object()?;
        let text = |k: &str| -> Option<&'v str> {
            match m.get(k) {
                None | Some(Value::Null) => Some(""),
                Some(Value::String(s)) => Some(s.as_str()),
                Some(_) => None,
            }
        };
        let time = match m.get("time") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(parse_time(s)?),
            Some(_) => return None,
        };
        Some(EntryRef {
            manager: text("manager")?,
            operation: text("operation")?,
            api_version: text("apiVersion")?,
            time,
            fields_type: text("fieldsType")?,
            fields_v1: m.get("fieldsV1").filter(|f| !f.is_null()),
            subresource: text("subresource")?,
        })
    }

    /// As [`ManagedFieldsEntry::list_of`].
    pub(crate) fn list_of(obj: &'v Value) -> Option<Vec<EntryRef<'v>>> {
        let items = obj.get("metadata")?.get("managedFields")?.as_array()?;
        items.iter().map(EntryRef::of).collect()
    }

    pub(crate) fn into_entry(self) -> ManagedFieldsEntry {
        ManagedFieldsEntry {
            manager: self.manager.to_string(),
            operation: self.operation.to_string(),
            api_version: self.api_version.to_string(),
            time: self.time,
            fields_type: self.fields_type.to_string(),
            fields_v1: self.fields_v1.cloned(),
            subresource: self.subresource.to_string(),
        }
    }

    /// As [`ManagedFieldsEntry::is_empty`].
    pub(crate) fn is_empty(&self) -> bool {
        self.manager.is_empty()
            && self.operation.is_empty()
            && self.api_version.is_empty()
            && self.time.is_none()
            && self.fields_type.is_empty()
            && self.fields_v1.is_none()
            && self.subresource.is_empty()
    }

    /// Equal but for the time.
    fn same_but_time(&self, other: &EntryRef<'_>) -> bool {
        self.manager == other.manager
            && self.operation == other.operation
            && self.api_version == other.api_version
            && self.fields_type == other.fields_type
            && self.fields_v1 == other.fields_v1
            && self.subresource == other.subresource
    }
}

/// RFC 3339 in UTC to the second, as `metav1.Time` serializes.
pub fn format_time(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// Parses an RFC 3339 time to seconds since the epoch (fractions dropped, as `metav1.Time`
/// keeps seconds).
pub fn parse_time(s: &str) -> Option<i64> {
    s.parse::<jiff::Timestamp>().ok().map(|t| t.as_second())
}

/// Seconds since the epoch of a system time.
pub fn unix_seconds(t: SystemTime) -> i64 {
    jiff::Timestamp::try_from(t)
        .map(|t| t.as_second())
        .unwrap_or(0)
}

/// The parts of an entry that identify a manager.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ManagerId {
    pub manager: String,
    pub operation: String,
    /// Only for `Update` entries; appliers keep one entry whatever version they apply.
    pub api_version: String,
    pub subresource: String,
}

impl ManagerId {
    pub const APPLY: &'static str = "Apply";
    pub const UPDATE: &'static str = "Update";

    /// Upstream's identifier: the JSON of the entry reduced to these fields.
    pub fn identifier(&self) -> String {
        identifier(
            &self.manager,
            &self.operation,
            &self.api_version,
            &self.subresource,
        )
    }

    /// The identifier of an entry (apiVersion dropped for appliers).
    pub fn of_entry(e: &ManagedFieldsEntry) -> ManagerId {
        ManagerId {
            manager: e.manager.clone(),
            operation: e.operation.clone(),
            api_version: if e.operation == Self::APPLY {
                String::new()
            } else {
                e.api_version.clone()
            },
            subresource: e.subresource.clone(),
        }
    }

    /// Parses an identifier back (unknown parts empty).
    pub fn parse(identifier: &str) -> ManagerId {
        let v: Value = serde_json::from_str(identifier).unwrap_or(Value::Null);
        let field = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        ManagerId {
            manager: field("manager"),
            operation: field("operation"),
            api_version: field("apiVersion"),
            subresource: field("subresource"),
        }
    }
}

/// [`ManagerId::identifier`] of its parts.
fn identifier(manager: &str, operation: &str, api_version: &str, subresource: &str) -> String {
    let mut out = String::with_capacity(
        48 + manager.len() + operation.len() + api_version.len() + subresource.len(),
    );
    out.push('{');
    let mut first = true;
    for (k, v) in [
        ("manager", manager),
        ("operation", operation),
        ("apiVersion", api_version),
        ("subresource", subresource),
    ] {
        if v.is_empty() {
            continue;
        }
        if !first {
            out.push(',');
        }
        first = false;
        // Upstream marshals the identifier with encoding/json.
        api::gofmt::write_json_string(&mut out, k, api::gofmt::JsonEncoder::Std);
        out.push(':');
        api::gofmt::write_json_string(&mut out, v, api::gofmt::JsonEncoder::Std);
    }
    out.push('}');
    out
}

/// What a manager owns, in which version, and whether it applied it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct VersionedSet {
    pub set: FieldSet,
    pub api_version: String,
    pub applied: bool,
}

/// Decoded managedFields: sets and times by manager identifier.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Managed {
    pub fields: BTreeMap<String, VersionedSet>,
    pub times: BTreeMap<String, Option<i64>>,
}

impl Managed {
    /// Decodes entries as upstream's `DecodeManagedFields`.
    #[cfg(test)]
    pub(crate) fn decode(entries: &[ManagedFieldsEntry]) -> Result<Managed, String> {
        Managed::decode_refs(entries.iter().map(ManagedFieldsEntry::as_ref))
    }

    /// Decodes entries read in place as upstream's `DecodeManagedFields`.
    pub(crate) fn decode_refs<'v>(
        entries: impl IntoIterator<Item = EntryRef<'v>>,
    ) -> Result<Managed, String> {
        let mut out = Managed::default();
        for (i, e) in entries.into_iter().enumerate() {
            if e.operation != ManagerId::APPLY && e.operation != ManagerId::UPDATE {
                return Err("operation must be `Apply` or `Update`".to_string());
            }
            if e.api_version.is_empty() {
                return Err("apiVersion must not be empty".to_string());
            }
            match e.fields_type {
                FIELDS_V1 => {}
                "" => return Err(format!("missing fieldsType in managed fields entry {i}")),
                other => {
                    return Err(format!(
                        "invalid fieldsType {} in managed fields entry {i}",
                        api::gofmt::go_quote(other)
                    ));
                }
            }
            let applied = e.operation == ManagerId::APPLY;
            let id = identifier(
                e.manager,
                e.operation,
                if applied { "" } else { e.api_version },
                e.subresource,
            );
            let set = match e.fields_v1 {
                Some(v) => FieldSet::from_fields_v1(v),
                None => Ok(FieldSet::new()),
            }
            .map_err(|err| {
                format!("error decoding versioned set from {id}: error decoding set: {err}")
            })?;
            out.fields.insert(
                id.clone(),
                VersionedSet {
                    set,
                    api_version: e.api_version.to_string(),
                    applied,
                },
            );
            out.times.insert(id, e.time);
        }
        Ok(out)
    }

    /// Decodes an object's managedFields; absent or unreadable ones are empty.
    pub(crate) fn decode_object(obj: &Value) -> Result<Managed, String> {
        match EntryRef::list_of(obj) {
            Some(entries) => Managed::decode_refs(entries),
            None => Ok(Managed::default()),
        }
    }

    /// Encodes as upstream's `encodeManagedFields`: `None` when there is no manager, else
    /// the entries sorted by operation, time, manager, apiVersion, subresource.
    pub(crate) fn encode(&self) -> Option<Vec<ManagedFieldsEntry>> {
        if self.fields.is_empty() {
            return None;
        }
        let mut entries: Vec<ManagedFieldsEntry> = self
            .fields
            .iter()
            .map(|(id, vs)| {
                let parsed = ManagerId::parse(id);
                ManagedFieldsEntry {
                    manager: parsed.manager,
                    operation: if vs.applied {
                        ManagerId::APPLY.to_string()
                    } else {
                        parsed.operation
                    },
                    api_version: vs.api_version.clone(),
                    time: self.times.get(id).copied().flatten(),
                    fields_type: FIELDS_V1.to_string(),
                    fields_v1: Some(vs.set.to_fields_v1()),
                    subresource: parsed.subresource,
                }
            })
            .collect();
        entries.sort_by(|p, q| {
            p.operation
                .cmp(&q.operation)
                .then(p.time.unwrap_or(0).cmp(&q.time.unwrap_or(0)))
                .then_with(|| p.manager.cmp(&q.manager))
                .then_with(|| p.api_version.cmp(&q.api_version))
                .then_with(|| p.subresource.cmp(&q.subresource))
        });
        Some(entries)
    }
}

/// Upstream's `ValidateManagedFields` of an object's managedFields (absent ones are valid):
/// why they cannot be decoded.
pub fn validate_managed_fields(obj: &Value) -> Result<(), String> {
    let Some(list) = obj.get("metadata").and_then(|m| m.get("managedFields")) else {
        return Ok(());
    };
    if list.is_null() {
        return Ok(());
    }
    let entries = EntryRef::list_of(obj)
        .ok_or_else(|| "managedFields must be a list of managed fields entries".to_string())?;
    Managed::decode_refs(entries).map(|_| ())
}

/// Sets (or, with `None`, removes) an object's `metadata.managedFields`.
pub(crate) fn set_managed_fields(obj: &mut Value, entries: Option<Vec<ManagedFieldsEntry>>) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match entries {
        None => {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("managedFields");
            }
        }
        Some(entries) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                meta.insert(
                    "managedFields".into(),
                    Value::Array(
                        entries
                            .into_iter()
                            .map(ManagedFieldsEntry::into_value)
                            .collect(),
                    ),
                );
            }
        }
    }
}

/// The object without `metadata.managedFields`.
pub(crate) fn without_managed_fields(obj: &Value) -> Value {
    let mut out = obj.clone();
    set_managed_fields(&mut out, None);
    out
}

/// `without_managed_fields(a) == without_managed_fields(b)`, without copying either.
fn equal_without_managed_fields(a: &Value, b: &Value) -> bool {
    let (Some(ra), Some(rb)) = (a.as_object(), b.as_object()) else {
        return a == b;
    };
    ra.len() == rb.len()
        && ra.iter().all(|(k, va)| {
            rb.get(k).is_some_and(|vb| {
                if k != "metadata" {
                    return va == vb;
                }
                match (va.as_object(), vb.as_object()) {
                    (Some(ma), Some(mb)) => {
                        let kept = |m: &Map<String, Value>| {
                            m.len() - usize::from(m.contains_key("managedFields"))
                        };
                        kept(ma) == kept(mb)
                            && ma
                                .iter()
                                .filter(|(k, _)| *k != "managedFields")
                                .all(|(k, x)| mb.get(k) == Some(x))
                    }
                    _ => va == vb,
                }
            })
        })
}

/// If an update changed nothing but managedFields timestamps, puts the old timestamps back
/// so that the write is a no-op (upstream's `IgnoreManagedFieldsTimestampsTransformer`, run
/// by the registry after the strategy's update preparation). Returns whether it did.
pub fn revert_timestamp_only_changes(new: &mut Value, old: &Value) -> bool {
    let restored = {
        let (Some(new_entries), Some(old_entries)) =
            (EntryRef::list_of(new), EntryRef::list_of(old))
        else {
            return false;
        };
        if new_entries.len() != old_entries.len() || new_entries.is_empty() {
            return false;
        }
        let times_unchanged = new_entries
            .iter()
            .zip(&old_entries)
            .all(|(n, o)| n.time == o.time);
        if times_unchanged {
            return false;
        }
        let same_modulo_time = new_entries
            .iter()
            .zip(&old_entries)
            .all(|(n, o)| n.same_but_time(o));
        if !same_modulo_time || !equal_without_managed_fields(new, old) {
            return false;
        }
        // Each new entry with the old time is the old entry.
        let restored: Vec<Value> = old_entries
            .iter()
            .map(|o| o.into_entry().into_value())
            .collect();
        restored
    };
    if let Some(Value::Object(meta)) = new.get_mut("metadata") {
        meta.insert("managedFields".into(), Value::Array(restored));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn identifiers_match_upstream_json() {
        let id = ManagerId {
            manager: "kubectl".into(),
            operation: "Update".into(),
            api_version: "apps/v1".into(),
            subresource: "status".into(),
        };
        assert_eq!(
            id.identifier(),
            r#"{"manager":"kubectl","operation":"Update","apiVersion":"apps/v1","subresource":"status"}"#
        );
        assert_eq!(ManagerId::parse(&id.identifier()), id);
        let apply = ManagerId::of_entry(&ManagedFieldsEntry {
            manager: "a<b".into(),
            operation: "Apply".into(),
            api_version: "v1".into(),
            ..Default::default()
        });
        assert_eq!(
            apply.identifier(),
            r#"{"manager":"a\u003cb","operation":"Apply"}"#
        );
    }

    #[test]
    fn times() {
        assert_eq!(format_time(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_time("2024-05-01T10:20:30Z"), Some(1714558830));
        assert_eq!(parse_time("2024-05-01T12:20:30.5+02:00"), Some(1714558830));
        assert_eq!(format_time(1714558830), "2024-05-01T10:20:30Z");
        assert_eq!(parse_time("yesterday"), None);
    }

    #[test]
    fn entry_round_trip_and_order() {
        let v = json!({
            "manager": "m", "operation": "Update", "apiVersion": "v1",
            "time": "2024-05-01T10:20:30Z", "fieldsType": "FieldsV1",
            "fieldsV1": {"f:data": {}}, "subresource": "status"
        });
        let e = ManagedFieldsEntry::from_value(&v).unwrap();
        assert_eq!(e.to_value(), v);
        assert!(ManagedFieldsEntry::from_value(&json!({"manager": 3})).is_none());
        assert!(ManagedFieldsEntry::from_value(&json!({"time": "never"})).is_none());
        assert!(
            ManagedFieldsEntry::from_value(&json!({}))
                .unwrap()
                .is_empty()
        );
    }

    #[test]
    fn decode_errors() {
        let bad_op = ManagedFieldsEntry {
            operation: "Patch".into(),
            api_version: "v1".into(),
            fields_type: FIELDS_V1.into(),
            ..Default::default()
        };
        assert_eq!(
            Managed::decode(&[bad_op]).unwrap_err(),
            "operation must be `Apply` or `Update`"
        );
        let no_type = ManagedFieldsEntry {
            operation: "Apply".into(),
            api_version: "v1".into(),
            ..Default::default()
        };
        assert_eq!(
            Managed::decode(std::slice::from_ref(&no_type)).unwrap_err(),
            "missing fieldsType in managed fields entry 0"
        );
        let other = ManagedFieldsEntry {
            fields_type: "FieldsV2".into(),
            ..no_type
        };
        assert_eq!(
            Managed::decode(&[other]).unwrap_err(),
            "invalid fieldsType \"FieldsV2\" in managed fields entry 0"
        );
    }

    #[test]
    fn timestamp_only_changes_are_reverted() {
        let entry = |t: &str| {
            json!({"manager": "m", "operation": "Apply", "apiVersion": "v1", "time": t,
                   "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}})
        };
        let old = json!({"metadata": {"name": "x", "managedFields": [entry("2024-01-01T00:00:00Z")]}, "data": {"a": "1"}});
        let mut new = json!({"metadata": {"name": "x", "managedFields": [entry("2024-01-02T00:00:00Z")]}, "data": {"a": "1"}});
        assert!(revert_timestamp_only_changes(&mut new, &old));
        assert_eq!(new, old);
        let mut changed = json!({"metadata": {"name": "x", "managedFields": [entry("2024-01-02T00:00:00Z")]}, "data": {"a": "2"}});
        assert!(!revert_timestamp_only_changes(&mut changed, &old));
    }
}
