//! Upstream's defaulting of the built-in kinds (`pkg/apis/<group>/<version>/defaults.go`,
//! the generated `SetObjectDefaults_<Kind>`), and what the registry strategies do to an
//! object before it is validated and stored (`PrepareForCreate` / `PrepareForUpdate` in
//! `pkg/registry/<group>/<resource>/strategy.go`).
//!
//! - [`apply`] runs on every decoded object (create, update, and objects read back), as
//!   upstream's decoder does. It is idempotent.
//! - [`prepare_for_create`] and [`prepare_for_update`] are the strategies' hooks for the
//!   main resource: status reset or preserved, `metadata.generation` set or bumped,
//!   Namespace finalizers, Pod status, Job selector generation, Service field
//!   normalization, and the fields of features off by default in 1.33 dropped (unless
//!   the old object already used them). [`prepare_for_status_update`] is the `/status`
//!   subresource's hook, [`prepare_for_ephemeral_containers_update`] the Pod
//!   `/ephemeralcontainers` one. Each ends by applying the defaults again (upstream's
//!   response is decoded, so defaulted, from what was stored); call them after the UID
//!   was assigned (Jobs derive their selector from it) and validate what they leave.
//!
//! Quantities in resource lists are rounded up to milli precision and rewritten in
//! canonical form (`0.5` → `500m`), as upstream's defaulting and serialization do.
//! Feature gates are taken at their Kubernetes 1.33 defaults. Nothing here panics,
//! whatever the shape of the input.

mod kinds;
mod pod;
mod strategy;
mod webhooks;

use serde_json::{Map, Value};

use super::validate::quantity;

pub use strategy::{
    prepare_for_create, prepare_for_ephemeral_containers_update, prepare_for_status_update,
    prepare_for_update,
};

/// Applies the defaults of `group/version kind` to `obj` in place.
pub fn apply(group: &str, _version: &str, kind: &str, obj: &mut Value) {
    kinds::apply(group, kind, obj);
}

// ---------------------------------------------------------------------------------------
// Helpers on JSON objects.

pub(crate) fn obj_mut(v: &mut Value) -> Option<&mut Map<String, Value>> {
    v.as_object_mut()
}

fn is_unset(v: Option<&Value>) -> bool {
    matches!(v, None | Some(Value::Null))
}

/// Sets `key` when it is absent or `null` (Go pointer fields).
pub(crate) fn default_if_absent(m: &mut Map<String, Value>, key: &str, value: Value) {
    if is_unset(m.get(key)) {
        m.insert(key.to_string(), value);
    }
}

/// Sets `key` when it is absent, `null` or `""` (Go string fields).
pub(crate) fn default_str(m: &mut Map<String, Value>, key: &str, value: Value) {
    let unset = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        _ => false,
    };
    if unset {
        m.insert(key.to_string(), value);
    }
}

/// Sets `key` when it is absent, `null` or `0` (Go integer fields).
pub(crate) fn default_zero(m: &mut Map<String, Value>, key: &str, value: Value) {
    let unset = match m.get(key) {
        None | Some(Value::Null) => true,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        _ => false,
    };
    if unset {
        m.insert(key.to_string(), value);
    }
}

/// The object at `key`, created (or replaced when it is not an object). Always `Some`;
/// the `Option` keeps the accessor total without an unreachable branch.
pub(crate) fn ensure_obj<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    let v = m
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !v.is_object() {
        *v = Value::Object(Map::new());
    }
    v.as_object_mut()
}

/// Calls `f` on every object element of the list at `key`.
pub(crate) fn each_obj_mut(
    m: &mut Map<String, Value>,
    key: &str,
    mut f: impl FnMut(&mut Map<String, Value>),
) {
    if let Some(list) = m.get_mut(key).and_then(Value::as_array_mut) {
        for item in list.iter_mut() {
            if let Some(o) = item.as_object_mut() {
                f(o);
            }
        }
    }
}

/// Rewrites a quantity in canonical form; `round` rounds up to milli precision first
/// (`SetDefaults_ResourceList`). Unparsable values are left as they are.
pub(crate) fn canonical_quantity(v: &mut Value, round: bool) {
    if let Some(Ok(mut q)) = quantity::from_json(v) {
        if round {
            q.round_up_milli();
        }
        *v = Value::String(q.canonical());
    }
}

/// `SetDefaults_ResourceList` on the map at `key`.
pub(crate) fn resource_list(m: &mut Map<String, Value>, key: &str) {
    if let Some(list) = m.get_mut(key).and_then(Value::as_object_mut) {
        for v in list.values_mut() {
            canonical_quantity(v, true);
        }
    }
}
