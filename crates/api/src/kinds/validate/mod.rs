//! Upstream's validation of the built-in kinds (`pkg/apis/<group>/validation`).
use serde_json::Value;

use crate::status::FieldError;

/// Create validation of `group/version kind`.
pub fn create(_group: &str, _version: &str, _kind: &str, _obj: &Value) -> Vec<FieldError> {
    Vec::new()
}

/// Update validation of `group/version kind`.
pub fn update(
    _group: &str,
    _version: &str,
    _kind: &str,
    _new: &Value,
    _old: &Value,
) -> Vec<FieldError> {
    Vec::new()
}
