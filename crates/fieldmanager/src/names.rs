//! Manager names and the request checks around field management, with upstream's messages:
//! the default manager derived from the User-Agent, `fieldManager` and `force` validation,
//! validation of managedFields entries, and the name and namespace checks of a patched or
//! applied object.

use api::status::FieldError;
use serde_json::Value;

use crate::error::Error;
use crate::managed::{FIELDS_V1, ManagedFieldsEntry, ManagerId};
use api::gofmt::is_print;

/// The longest `fieldManager` upstream accepts, in bytes.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// The longest subresource name in a managedFields entry.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;

/// The manager of a request: its `fieldManager`, or else the User-Agent's prefix.
pub fn manager_or_user_agent(field_manager: &str, user_agent: &str) -> String {
    if field_manager.is_empty() {
        prefix_from_user_agent(user_agent)
    } else {
        field_manager.to_string()
    }
}

/// The User-Agent up to its first `/`, without unprintable characters, cut to at most 128
/// bytes (`kubectl/v1.30.0 (linux/amd64) …` → `kubectl`).
pub fn prefix_from_user_agent(user_agent: &str) -> String {
    let head = user_agent.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in head.chars() {
        if !is_print(c) {
            continue;
        }
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}

/// Upstream's `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn validate_field_manager(field_manager: &str, field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(field, FIELD_MANAGER_MAX_LENGTH));
    }
    for (i, c) in field_manager.char_indices() {
        if !is_print(c) {
            errs.push(FieldError::invalid(
                field,
                field_manager,
                format!("invalid character U+{:04X} (at position {i})", c as u32),
            ));
        }
    }
    errs
}

/// The fieldManager and force checks of upstream's `ValidatePatchOptions` (an apply needs a
/// fieldManager; other patches may not set force). The server answers a failure with
/// `ApiError::invalid("meta.k8s.io", "PatchOptions", "", &errs)`.
pub fn validate_patch_options(
    field_manager: &str,
    force: Option<bool>,
    apply: bool,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if apply {
        if field_manager.is_empty() {
            errs.push(FieldError::required(
                "fieldManager",
                "is required for apply patch",
            ));
        }
    } else if force.is_some() {
        errs.push(FieldError::forbidden(
            "force",
            "may not be specified for non-apply patch",
        ));
    }
    errs.extend(validate_field_manager(field_manager, "fieldManager"));
    errs
}

/// Upstream's `ValidateManagedFields` for `metadata.managedFields` (field paths like
/// `metadata.managedFields[0].operation`).
pub fn validate_managed_fields(entries: &[ManagedFieldsEntry], field: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (i, e) in entries.iter().enumerate() {
        let at = |child: &str| format!("{field}[{i}].{child}");
        match e.operation.as_str() {
            "" => errs.push(FieldError::required(at("operation"), "must not be empty")),
            ManagerId::APPLY | ManagerId::UPDATE => {}
            other => errs.push(FieldError::not_supported(
                at("operation"),
                other,
                &[ManagerId::APPLY, ManagerId::UPDATE],
            )),
        }
        if !e.fields_type.is_empty() && e.fields_type != FIELDS_V1 {
            errs.push(FieldError::invalid(
                at("fieldsType"),
                e.fields_type.as_str(),
                "must be `FieldsV1`",
            ));
        }
        errs.extend(validate_field_manager(&e.manager, &at("manager")));
        if e.subresource.len() > MAX_SUBRESOURCE_NAME_LENGTH {
            errs.push(FieldError::too_long(
                at("subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH,
            ));
        }
    }
    errs
}

/// Upstream's namespace check of a written object: an object without a namespace takes the
/// request's, a cluster-scoped request clears it, a different one is a Bad Request.
pub fn ensure_namespace(obj: &mut Value, request_namespace: &str) -> Result<(), Error> {
    let current = obj
        .get("metadata")
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    if current == request_namespace {
        return Ok(());
    }
    if !current.is_empty() && !request_namespace.is_empty() {
        return Err(Error::BadRequest(
            "the namespace of the provided object does not match the namespace sent on the request"
                .to_string(),
        ));
    }
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if request_namespace.is_empty() {
            meta.remove("namespace");
        } else {
            meta.insert(
                "namespace".into(),
                Value::String(request_namespace.to_string()),
            );
        }
    } else if let Some(root) = obj.as_object_mut()
        && !request_namespace.is_empty()
    {
        root.insert(
            "metadata".into(),
            serde_json::json!({ "namespace": request_namespace }),
        );
    }
    Ok(())
}

/// Upstream's name check of a patched or applied object against the URL.
pub fn check_name(obj: &Value, url_name: &str, url_namespace: &str) -> Result<(), Error> {
    let meta = |k: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    let name = meta("name");
    if name != url_name {
        return Err(Error::BadRequest(format!(
            "the name of the object ({name}) does not match the name on the URL ({url_name})"
        )));
    }
    let namespace = meta("namespace");
    if !url_namespace.is_empty() && !namespace.is_empty() && namespace != url_namespace {
        return Err(Error::BadRequest(format!(
            "the namespace of the object ({namespace}) does not match the namespace on the request ({url_namespace})"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn user_agent_prefix() {
        assert_eq!(
            manager_or_user_agent("", "kubectl/v1.30.2 (linux/amd64) kubernetes/3968350"),
            "kubectl"
        );
        assert_eq!(manager_or_user_agent("mine", "kubectl/v1"), "mine");
        assert_eq!(prefix_from_user_agent("a\u{7}b\u{200b}c/d"), "abc");
        assert_eq!(prefix_from_user_agent(""), "");
        let long = "é".repeat(100);
        let p = prefix_from_user_agent(&long);
        assert_eq!(p.len(), 128);
    }

    #[test]
    fn field_manager_validation() {
        assert!(validate_field_manager("kubectl", "fieldManager").is_empty());
        let long = "x".repeat(129);
        assert_eq!(
            validate_field_manager(&long, "fieldManager")[0].to_string(),
            "fieldManager: Too long: may not be more than 128 bytes"
        );
        let bad = validate_field_manager("a\u{1}", "fieldManager");
        assert_eq!(bad[0].detail, "invalid character U+0001 (at position 1)");
        assert_eq!(bad[0].field, "fieldManager");
        assert_eq!(
            validate_patch_options("", None, true)[0].to_string(),
            "fieldManager: Required value: is required for apply patch"
        );
        assert_eq!(
            validate_patch_options("", Some(true), false)[0].to_string(),
            "force: Forbidden: may not be specified for non-apply patch"
        );
        assert!(validate_patch_options("kubectl", Some(true), true).is_empty());
    }

    #[test]
    fn managed_fields_validation() {
        let entries = [
            ManagedFieldsEntry {
                operation: "Patch".into(),
                fields_type: "FieldsV2".into(),
                ..Default::default()
            },
            ManagedFieldsEntry::default(),
        ];
        let msgs: Vec<String> = validate_managed_fields(&entries, "metadata.managedFields")
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            msgs,
            [
                "metadata.managedFields[0].operation: Unsupported value: \"Patch\": supported values: \"Apply\", \"Update\"",
                "metadata.managedFields[0].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`",
                "metadata.managedFields[1].operation: Required value: must not be empty",
            ]
        );
    }

    #[test]
    fn name_and_namespace_checks() {
        let obj = json!({"metadata": {"name": "a", "namespace": "ns"}});
        assert!(check_name(&obj, "a", "ns").is_ok());
        assert_eq!(
            check_name(&obj, "b", "ns").unwrap_err().to_string(),
            "the name of the object (a) does not match the name on the URL (b)"
        );
        assert_eq!(
            check_name(&json!({}), "b", "").unwrap_err().to_string(),
            "the name of the object () does not match the name on the URL (b)"
        );
        let mut o = json!({"metadata": {"name": "a"}});
        ensure_namespace(&mut o, "ns").unwrap();
        assert_eq!(o["metadata"]["namespace"], "ns");
        let mut o = json!({"metadata": {"name": "a", "namespace": "other"}});
        assert_eq!(ensure_namespace(&mut o, "ns").unwrap_err().code(), 400);
        let mut o = json!({"metadata": {"name": "a", "namespace": "x"}});
        ensure_namespace(&mut o, "").unwrap();
        assert!(o["metadata"].get("namespace").is_none());
    }
}
