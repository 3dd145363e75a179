//! Server-side apply and managed fields, glued to the `fieldmanager` crate: which schema a
//! resource's objects follow, which fields each endpoint resets, who the manager is.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use api::ApiError;
use fieldmanager::{
    FieldManager, FieldSet, GroupVersionKind, ManagedFieldsEntry, ObjectSchema, PathElement,
};
use serde_json::Value;

use crate::memo::{DigestMemo, Sha256};
use crate::registry::{Registry, Resource, WriteOptions};

/// The schema the objects of `r` follow.
fn schema_of(r: &Resource) -> ObjectSchema<'_> {
    if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        let schemas = api::schema::builtin();
        if let Some(root) =
            api::schema::definition_for(&r.info.group, &r.info.version, &r.info.kind)
                .and_then(|name| schemas.get(name))
        {
            return ObjectSchema::builtin(root, schemas);
        }
        return ObjectSchema::deduced();
    }
    match r.strategy.openapi_schema() {
        // The published schema refers to the built-in ObjectMeta.
        Some(root) => ObjectSchema::custom(root, api::schema::builtin()),
        None => ObjectSchema::deduced(),
    }
}

fn field(name: &str) -> FieldSet {
    let mut s = FieldSet::new();
    s.insert(&[PathElement::Field(name.to_string())]);
    s
}

/// The field manager of an endpoint: the main resource resets `status` when the resource
/// has a status subresource; the status subresource resets `spec`.
fn manager_for<'a>(r: &'a Resource, subresource: Option<&str>) -> FieldManager<'a> {
    let gvk = GroupVersionKind::new(
        r.info.group.as_str(),
        r.info.version.as_str(),
        r.info.kind.as_str(),
    );
    let fm = FieldManager::new(schema_of(r), gvk);
    match subresource {
        Some("status") => fm
            .with_subresource("status")
            .with_reset_fields(field("spec")),
        Some(other) => fm.with_subresource(other),
        None if r.has_status() => fm.with_reset_fields(field("status")),
        None => fm,
    }
}

fn now(registry: &Registry) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(u64::try_from(registry.clock.now_ms()).unwrap_or(0))
}

/// The manager a write is recorded under.
pub fn manager_name(opts: &WriteOptions) -> String {
    fieldmanager::names::manager_or_user_agent(
        opts.field_manager.as_deref().unwrap_or(""),
        &opts.user_agent,
    )
}

fn fm_error(e: fieldmanager::Error) -> ApiError {
    ApiError::from_status(e.code(), e.to_status())
}

/// What an apply request addresses.
pub struct ApplyTarget<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub subresource: Option<&'a str>,
    pub force: bool,
}

/// Applies an `application/apply-patch+yaml` configuration to the live object (`None`:
/// the object does not exist and the apply creates it).
pub fn apply(
    r: &Resource,
    live: Option<&Value>,
    applied: &Value,
    opts: &WriteOptions,
    target: &ApplyTarget<'_>,
    registry: &Registry,
) -> Result<Value, ApiError> {
    fieldmanager::names::check_name(applied, target.name, target.namespace).map_err(fm_error)?;
    let manager = manager_name(opts);
    let force = target.force;
    let outcome = manager_for(r, target.subresource)
        .apply(live, applied, &manager, force, now(registry))
        .map_err(fm_error)?;
    Ok(outcome.object)
}

/// managedFields of a new object written by create (or update/patch creating it).
///
/// They depend only on the resource's schema, the manager and the request's object, so
/// the ones of a request seen lately are reused (with the time of this write): the pods a
/// controller creates from one template differ only in what the server adds later (name,
/// uid), and the field comparison is most of what such a create costs.
pub fn track_create(r: &Resource, obj: &mut Value, opts: &WriteOptions, registry: &Registry) {
    if opts.apply {
        return;
    }
    let manager = manager_name(opts);
    let now = now(registry);
    // Custom resources' schemas change with their definitions; requests that carry
    // managedFields of their own start from those.
    let memo_key = (api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind)
        && obj["metadata"]
            .get("managedFields")
            .is_none_or(Value::is_null))
    .then(|| create_key(r, &manager, obj));
    if let Some(key) = &memo_key
        && let Some(mut entry) = registry.created_fields.get(key)
    {
        entry.time = Some(fieldmanager::unix_seconds(now));
        api::meta::metadata_mut(obj).insert(
            "managedFields".into(),
            Value::Array(vec![entry.into_value()]),
        );
        return;
    }
    manager_for(r, None).update_in_place(None, obj, &manager, now);
    if let Some(key) = memo_key
        && let Some([entry]) = ManagedFieldsEntry::list_of(obj).as_deref()
        && entry.time.is_some()
    {
        registry.created_fields.put(key, entry.clone());
    }
}

/// The managedFields entry of recent creates by [`create_key`]. Each is one object's,
/// a few KB; the creates that repeat are a few templates' at a time.
pub type CreateMemo = DigestMemo<ManagedFieldsEntry, 256>;

/// What determines a create's managedFields: the kind (and so its schema and reset
/// fields), the manager and the object as requested, hashed.
fn create_key(r: &Resource, manager: &str, obj: &Value) -> [u8; 32] {
    let mut h = Sha256::default();
    for part in [&r.info.group, &r.info.version, &r.info.kind] {
        h.update(part.as_bytes());
        h.update(b"\0");
    }
    h.update(manager.as_bytes());
    h.update(b"\0");
    // Writing to a digest cannot fail; an object that does not serialize is hashed as far
    // as it went, which is still only ever equal to itself.
    let _ = serde_json::to_writer(&mut h, obj);
    h.finish()
}

/// Upstream's `managedFieldsValidatingAdmissionController`: managedFields that mutating
/// admission left invalid are put back as they were before it, with a warning. `before`
/// is what the field manager wrote, valid by construction, so managedFields admission did
/// not touch are not decoded again.
pub fn keep_valid_after_admission(
    obj: &mut Value,
    before: Option<Value>,
    warnings: &mut Vec<String>,
) {
    // The field manager's own are valid: only a change by admission needs a look.
    if obj["metadata"].get("managedFields") == before.as_ref() {
        return;
    }
    let Err(e) = fieldmanager::validate_managed_fields(obj) else {
        return;
    };
    let meta = api::meta::metadata_mut(obj);
    match before {
        Some(before) => meta.insert("managedFields".into(), before),
        None => meta.remove("managedFields"),
    };
    warnings.push(format!(
        ".metadata.managedFields was in an invalid state after admission; this could be caused by an outdated mutating admission controller; please fix your requests: {e}"
    ));
}

/// managedFields of an updated object (set on `new` in place: the object is not copied).
pub fn track_update(
    r: &Resource,
    old: &Value,
    new: &mut Value,
    subresource: Option<&str>,
    opts: &WriteOptions,
    registry: &Registry,
) {
    if opts.apply {
        return;
    }
    manager_for(r, subresource).update_in_place(Some(old), new, &manager_name(opts), now(registry));
    fieldmanager::revert_timestamp_only_changes(new, old);
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn managed_fields_broken_by_admission_are_put_back() {
        let before = json!([{"manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                             "fieldsType": "FieldsV1", "fieldsV1": {"f:data": {}}}]);
        // Valid ones, changed or not, are kept as admission left them.
        let mut obj = json!({"metadata": {"name": "a", "managedFields": before.clone()}});
        let mut warnings = Vec::new();
        keep_valid_after_admission(&mut obj, Some(before.clone()), &mut warnings);
        assert_eq!(obj["metadata"]["managedFields"], before);
        assert!(warnings.is_empty());
        // Invalid ones are put back, with upstream's warning.
        for broken in [
            json!([{"manager": "m", "operation": "Bogus", "apiVersion": "v1", "fieldsType": "FieldsV1"}]),
            json!([{"manager": "m", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV2"}]),
            json!({"not": "a list"}),
        ] {
            let mut obj = json!({"metadata": {"name": "a", "managedFields": broken}});
            let mut warnings = Vec::new();
            keep_valid_after_admission(&mut obj, Some(before.clone()), &mut warnings);
            assert_eq!(obj["metadata"]["managedFields"], before);
            assert_eq!(warnings.len(), 1);
            assert!(
                warnings[0]
                    .starts_with(".metadata.managedFields was in an invalid state after admission"),
                "{warnings:?}"
            );
        }
        // Unchanged by admission: kept as they are.
        let odd = json!([{"operation": "x"}]);
        let mut obj = json!({"metadata": {"name": "a", "managedFields": odd.clone()}});
        let mut warnings = Vec::new();
        keep_valid_after_admission(&mut obj, Some(odd.clone()), &mut warnings);
        assert_eq!(obj["metadata"]["managedFields"], odd);
        assert!(warnings.is_empty());
        // None before: the broken ones go.
        let mut obj = json!({"metadata": {"name": "a", "managedFields": [{"operation": "x"}]}});
        keep_valid_after_admission(&mut obj, None, &mut Vec::new());
        assert!(obj["metadata"].get("managedFields").is_none());
    }
}
