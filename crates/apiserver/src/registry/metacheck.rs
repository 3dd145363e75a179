//! Object metadata checks shared by every write.

use api::FieldError;
use api::kinds::validate::NameRule;
use api::validation::{
    validate_object_meta, validate_object_meta_generic, validate_object_meta_update,
    validate_object_meta_update_generic,
};
use serde_json::Value;

use super::Resource;

/// The name rule of a resource, as upstream's registry strategies choose it (custom
/// resources: DNS subdomains).
fn name_rule(r: &Resource) -> NameRule {
    api::kinds::validate::name_rule(&r.info.group, &r.info.kind)
}

fn meta(obj: &Value) -> &Value {
    obj.get("metadata").unwrap_or(&Value::Null)
}

/// Object metadata validation (name, namespace, labels, annotations, owner references…).
pub fn object_meta(r: &Resource, obj: &Value) -> Vec<FieldError> {
    let rule = name_rule(r);
    if rule == NameRule::None {
        // core/v1 Events: upstream validates only their own fields.
        return Vec::new();
    }
    let f = move |name: &str, prefix: bool| api::kinds::validate::name_errors(rule, name, prefix);
    if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        validate_object_meta(meta(obj), r.info.namespaced, &f, "metadata")
    } else {
        validate_object_meta_generic(meta(obj), r.info.namespaced, &f, "metadata")
    }
}

/// Metadata rules on update (immutable name, namespace, uid…).
pub fn object_meta_update(r: &Resource, new: &Value, old: &Value) -> Vec<FieldError> {
    if api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        validate_object_meta_update(meta(new), meta(old), "metadata")
    } else {
        validate_object_meta_update_generic(meta(new), meta(old), "metadata")
    }
}
