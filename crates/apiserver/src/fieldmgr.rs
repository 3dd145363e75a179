//! Server-side apply and managed fields, glued to the `fieldmanager` crate: which schema a
//! resource's objects follow, which fields each endpoint resets, who the manager is.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use api::ApiError;
use fieldmanager::{FieldManager, FieldSet, GroupVersionKind, ObjectSchema, PathElement};
use serde_json::Value;

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
pub fn track_create(r: &Resource, obj: &mut Value, opts: &WriteOptions, registry: &Registry) {
    if opts.apply {
        return;
    }
    manager_for(r, None).update_in_place(None, obj, &manager_name(opts), now(registry));
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
    // Upstream's `pods/binding` writes the pod through storage directly, past the field
    // manager: a bound pod's managedFields do not name the scheduler.
    if opts.apply || (subresource == Some("binding") && r.info.plural == "pods") {
        return;
    }
    manager_for(r, subresource).update_in_place(Some(old), new, &manager_name(opts), now(registry));
    fieldmanager::revert_timestamp_only_changes(new, old);
}
