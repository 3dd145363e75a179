//! Server-side apply and `metadata.managedFields`, as upstream implements them
//! (`sigs.k8s.io/structured-merge-diff` and `k8s.io/apimachinery/pkg/util/managedfields`).
//!
//! - [`FieldSet`], [`Path`], [`PathElement`]: sets of fields, their algebra, the fieldsV1
//!   encoding (`f:name`, `k:{"name":"x"}`, `v:value`, `i:3`, `"."`) byte for byte, and paths
//!   as conflict messages print them (`.spec.containers[name="nginx"].image`).
//! - [`ObjectSchema`]: how a kind's OpenAPI v3 schema (through [`api::schema::SchemaLookup`])
//!   tells granular from atomic: list-map items keyed by their keys (with schema defaults for
//!   missing keys), set items by value, atomic lists and maps as one leaf, lists atomic and
//!   maps granular by default, unknown fields deduced where unknown fields are preserved.
//! - [`field_set_of`]: the fields an object sets.
//! - [`FieldManager`]: [`FieldManager::apply`] (merge, prune, conflicts, force, the
//!   client-side-apply upgrade for `kubectl`) and [`FieldManager::update`] (ownership of
//!   creates, updates and patches: `before-first-apply`, entries merged per manager,
//!   `ancient-changes` capping, subresources, reset fields, timestamps).
//! - [`Error`]: conflicts (409 with `FieldManagerConflict` causes) and upstream's other
//!   answers, as `Status` bodies.
//! - [`names`]: default manager from the User-Agent, `fieldManager`/`force` validation,
//!   managedFields validation, name and namespace checks.
//!
//! Objects are JSON values. Field order within objects is not significant to this crate; maps
//! it builds (managedFields entries, fieldsV1) are built in upstream's order, which shows on
//! the wire when `serde_json`'s `preserve_order` is enabled.
//!
//! The registry's part: call [`FieldManager::update`] on every create, update and non-apply
//! patch after defaulting (`live: None` on create), and [`FieldManager::apply`] for apply
//! patches, before the strategy prepares, validates and stores the object; then
//! [`revert_timestamp_only_changes`] after the strategy, and skip the write when
//! [`ApplyOutcome::no_op`] or when the object is unchanged.

mod conflict;
mod error;
mod managed;
mod manager;
pub mod names;
mod path;
mod schema;
mod set;
mod typed;
mod value;

pub use conflict::{CAUSE_FIELD_MANAGER_CONFLICT, Conflict, Conflicts};
pub use error::Error;
pub use managed::{
    FIELDS_V1, ManagedFieldsEntry, ManagerId, format_time, parse_time,
    revert_timestamp_only_changes, unix_seconds, validate_managed_fields,
};
pub use manager::{
    ANCIENT_CHANGES, ApplyOutcome, BEFORE_FIRST_APPLY, DEFAULT_MAX_UPDATE_MANAGERS, FieldManager,
    GroupVersionKind, LAST_APPLIED_ANNOTATION, TOTAL_ANNOTATION_SIZE_LIMIT,
};
pub use path::{Path, PathElement};
pub use schema::ObjectSchema;
pub use set::FieldSet;

use serde_json::Value;

/// The fields `obj` sets, as structured-merge-diff computes them for an applied
/// configuration (`ToFieldSet`).
pub fn field_set_of(obj: &Value, schema: &ObjectSchema<'_>) -> FieldSet {
    schema.field_set(obj)
}

/// Checks an object against its schema as upstream checks applied configurations (types,
/// declared fields, list keys, no duplicate items). The error text is upstream's.
pub fn validate_object(obj: &Value, schema: &ObjectSchema<'_>) -> Result<(), String> {
    let errs = schema.validate(obj);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(typed::join_errors(&errs))
    }
}

/// The fields that are set differently in `old` and `new`: `(added, modified, removed)`.
pub fn compare_objects(
    old: &Value,
    new: &Value,
    schema: &ObjectSchema<'_>,
) -> (FieldSet, FieldSet, FieldSet) {
    let c = schema.compare(old, new);
    (c.added, c.modified, c.removed)
}
