//! API validation of `ValidatingAdmissionPolicy` and `ValidatingAdmissionPolicyBinding`
//! (upstream's `pkg/apis/admissionregistration/validation`), CEL compilation included: the
//! API server adds these errors to the generic ones (a 422 `Invalid` on create and update).

use api::status::FieldError;
use api::validation::names::{is_dns1123_subdomain, is_qualified_name};
use serde_json::Value;

use super::cel::Expr;
use crate::webhook::config::strings;

const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// The errors of a `group` `kind` object this module validates (none for other kinds).
pub fn validate(group: &str, kind: &str, obj: &Value) -> Vec<FieldError> {
    match (group, kind) {
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => policy(obj),
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => binding(obj),
        _ => Vec::new(),
    }
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v[k].as_str().unwrap_or_default()
}

fn list(v: &Value, k: &str) -> Vec<Value> {
    v[k].as_array().cloned().unwrap_or_default()
}

/// A required expression that must compile.
fn expression(errs: &mut Vec<FieldError>, field: String, source: &Value, required: &str) {
    let text = source.as_str().unwrap_or_default();
    if text.trim().is_empty() {
        errs.push(FieldError::required(field, required));
    } else if let Err(e) = Expr::compile(text) {
        errs.push(FieldError::invalid(field, text, e));
    }
}

fn policy(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    match spec["failurePolicy"].as_str() {
        None => errs.push(FieldError::required("spec.failurePolicy", "")),
        Some("Fail" | "Ignore") => {}
        Some(other) => errs.push(FieldError::not_supported(
            "spec.failurePolicy",
            other,
            &["Fail", "Ignore"],
        )),
    }
    if let Some(pk) = spec.get("paramKind").filter(|p| !p.is_null()) {
        if str_of(pk, "apiVersion").is_empty() {
            errs.push(FieldError::required("spec.paramKind.apiVersion", ""));
        }
        if str_of(pk, "kind").is_empty() {
            errs.push(FieldError::required("spec.paramKind.kind", ""));
        }
    }
    match spec.get("matchConstraints").filter(|m| !m.is_null()) {
        None => errs.push(FieldError::required("spec.matchConstraints", "")),
        Some(m) => {
            match_resources(&mut errs, "spec.matchConstraints", m);
            if list(m, "resourceRules").is_empty() {
                errs.push(FieldError::required(
                    "spec.matchConstraints.resourceRules",
                    "",
                ));
            }
        }
    }
    let conditions = list(spec, "matchConditions");
    if conditions.len() > 64 {
        errs.push(FieldError::too_many(
            "spec.matchConditions",
            conditions.len(),
            64,
        ));
    }
    let mut names: Vec<&str> = Vec::new();
    for (i, c) in conditions.iter().enumerate() {
        let field = format!("spec.matchConditions[{i}]");
        let name = str_of(c, "name");
        if name.is_empty() {
            errs.push(FieldError::required(format!("{field}.name"), ""));
        } else {
            for e in is_qualified_name(name) {
                errs.push(FieldError::invalid(format!("{field}.name"), name, e));
            }
            if names.contains(&name) {
                errs.push(FieldError::duplicate(format!("{field}.name"), name));
            }
            names.push(name);
        }
        expression(
            &mut errs,
            format!("{field}.expression"),
            &c["expression"],
            "",
        );
    }
    for (i, v) in list(spec, "variables").iter().enumerate() {
        let field = format!("spec.variables[{i}]");
        let name = str_of(v, "name");
        let identifier = name
            .chars()
            .next()
            .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
            && name.chars().all(|c| c == '_' || c.is_ascii_alphanumeric())
            && !RESERVED.contains(&name);
        if name.trim().is_empty() {
            errs.push(FieldError::required(
                format!("{field}.name"),
                "name is not specified",
            ));
        } else if !identifier {
            errs.push(FieldError::invalid(
                format!("{field}.name"),
                name,
                "name is not a valid CEL identifier",
            ));
        }
        expression(
            &mut errs,
            format!("{field}.expression"),
            &v["expression"],
            "expression is not specified",
        );
    }
    let validations = list(spec, "validations");
    let annotations = list(spec, "auditAnnotations");
    if validations.is_empty() && annotations.is_empty() {
        for f in ["spec.validations", "spec.auditAnnotations"] {
            errs.push(FieldError::required(
                f,
                "validations or auditAnnotations must contain at least one item",
            ));
        }
    }
    for (i, v) in validations.iter().enumerate() {
        let field = format!("spec.validations[{i}]");
        expression(
            &mut errs,
            format!("{field}.expression"),
            &v["expression"],
            "expression is not specified",
        );
        if let Some(m) = v["messageExpression"].as_str() {
            if m.trim().is_empty() {
                errs.push(FieldError::invalid(
                    format!("{field}.messageExpression"),
                    m,
                    "must be non-empty if specified",
                ));
            } else if let Err(e) = Expr::compile(m) {
                errs.push(FieldError::invalid(
                    format!("{field}.messageExpression"),
                    m,
                    e,
                ));
            }
        }
        if let Some(m) = v["message"].as_str() {
            if m.trim().is_empty() {
                errs.push(FieldError::invalid(
                    format!("{field}.message"),
                    m,
                    "message must be non-empty if specified",
                ));
            } else if m.trim().contains(['\n', '\r']) {
                errs.push(FieldError::invalid(
                    format!("{field}.message"),
                    m,
                    "message must not contain line breaks",
                ));
            }
        }
        if let Some(r) = v["reason"].as_str()
            && !matches!(r, "Forbidden" | "Invalid" | "RequestEntityTooLarge")
        {
            errs.push(FieldError::not_supported(
                format!("{field}.reason"),
                r,
                &["Forbidden", "Invalid", "RequestEntityTooLarge"],
            ));
        }
    }
    if annotations.len() > 20 {
        errs.push(FieldError::invalid(
            "spec.auditAnnotations",
            Value::Array(annotations.clone()),
            "must not have more than 20 auditAnnotations",
        ));
    }
    let policy_name = api::meta::name(obj).unwrap_or_default();
    let mut keys: Vec<&str> = Vec::new();
    for (i, a) in annotations.iter().enumerate() {
        let field = format!("spec.auditAnnotations[{i}]");
        let key = str_of(a, "key");
        if keys.contains(&key) {
            errs.push(FieldError::duplicate(format!("{field}.key"), key));
        }
        keys.push(key);
        if policy_name.is_empty() {
            errs.push(FieldError::invalid(
                format!("{field}.key"),
                key,
                "requires metadata.name be non-empty",
            ));
        } else {
            let qualified = format!("{policy_name}/{key}");
            for e in is_qualified_name(&qualified) {
                errs.push(FieldError::invalid(
                    format!("{field}.key"),
                    qualified.as_str(),
                    e,
                ));
            }
        }
        let value = str_of(a, "valueExpression");
        if value.trim().len() > 5120 {
            errs.push(FieldError::required(
                format!("{field}.valueExpression"),
                "must not exceed 5120 bytes in length",
            ));
        } else {
            expression(
                &mut errs,
                format!("{field}.valueExpression"),
                &a["valueExpression"],
                "valueExpression is not specified",
            );
        }
    }
    errs
}

/// Checks a list of rule entries: required, and `*` alone.
fn star_list(errs: &mut Vec<FieldError>, field: &str, items: &[String], what: &str) {
    if items.is_empty() {
        errs.push(FieldError::required(field, ""));
    } else if items.len() > 1 && items.iter().any(|i| i == "*") {
        errs.push(FieldError::invalid(
            field,
            Value::from(items.to_vec()),
            format!("if '*' is present, must not specify other {what}"),
        ));
    }
}

fn match_resources(errs: &mut Vec<FieldError>, path: &str, m: &Value) {
    match m["matchPolicy"].as_str() {
        None => errs.push(FieldError::required(format!("{path}.matchPolicy"), "")),
        Some("Equivalent" | "Exact") => {}
        Some(other) => errs.push(FieldError::not_supported(
            format!("{path}.matchPolicy"),
            other,
            &["Equivalent", "Exact"],
        )),
    }
    for sel in ["namespaceSelector", "objectSelector"] {
        let field = format!("{path}.{sel}");
        if m[sel].is_null() {
            errs.push(FieldError::required(field, ""));
        } else if let Err(e) = api::selector::LabelSelector::from_label_selector(&m[sel]) {
            errs.push(FieldError::invalid(field, m[sel].clone(), e.to_string()));
        }
    }
    for key in ["resourceRules", "excludeResourceRules"] {
        for (i, r) in m[key].as_array().into_iter().flatten().enumerate() {
            let field = format!("{path}.{key}[{i}]");
            let ops = strings(r, "operations");
            star_list(errs, &format!("{field}.operations"), &ops, "operations");
            for (j, op) in ops.iter().enumerate() {
                if !matches!(
                    op.as_str(),
                    "*" | "CONNECT" | "CREATE" | "DELETE" | "UPDATE"
                ) {
                    errs.push(FieldError::not_supported(
                        format!("{field}.operations[{j}]"),
                        op.as_str(),
                        &["*", "CONNECT", "CREATE", "DELETE", "UPDATE"],
                    ));
                }
            }
            star_list(
                errs,
                &format!("{field}.apiGroups"),
                &strings(r, "apiGroups"),
                "API groups",
            );
            star_list(
                errs,
                &format!("{field}.apiVersions"),
                &strings(r, "apiVersions"),
                "API versions",
            );
            let resources = strings(r, "resources");
            if resources.is_empty() {
                errs.push(FieldError::required(format!("{field}.resources"), ""));
            }
            for (j, res) in resources.iter().enumerate() {
                if res.is_empty() {
                    errs.push(FieldError::required(format!("{field}.resources[{j}]"), ""));
                }
            }
            if let Some(scope) = r["scope"].as_str()
                && !matches!(scope, "*" | "Cluster" | "Namespaced")
            {
                errs.push(FieldError::not_supported(
                    format!("{field}.scope"),
                    scope,
                    &["*", "Cluster", "Namespaced"],
                ));
            }
        }
    }
}

fn binding(obj: &Value) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let spec = &obj["spec"];
    let policy_name = str_of(spec, "policyName");
    if policy_name.is_empty() {
        errs.push(FieldError::required("spec.policyName", ""));
    } else {
        for e in is_dns1123_subdomain(policy_name) {
            errs.push(FieldError::invalid("spec.policyName", policy_name, e));
        }
    }
    if let Some(p) = spec.get("paramRef").filter(|p| !p.is_null()) {
        let name = str_of(p, "name");
        let selector = !p["selector"].is_null();
        if !name.is_empty() && selector {
            for f in ["spec.paramRef.name", "spec.paramRef.selector"] {
                errs.push(FieldError::forbidden(
                    f,
                    "name and selector are mutually exclusive",
                ));
            }
        } else if name.is_empty() && !selector {
            errs.push(FieldError::required(
                "spec.paramRef",
                "one of name or selector must be specified",
            ));
        }
        match p["parameterNotFoundAction"].as_str() {
            None | Some("") => errs.push(FieldError::required(
                "spec.paramRef.parameterNotFoundAction",
                "",
            )),
            Some("Deny" | "Allow") => {}
            Some(other) => errs.push(FieldError::not_supported(
                "spec.paramRef.parameterNotFoundAction",
                other,
                &["Deny", "Allow"],
            )),
        }
    }
    if let Some(m) = spec.get("matchResources").filter(|m| !m.is_null()) {
        match_resources(&mut errs, "spec.matchResources", m);
    }
    let actions = strings(spec, "validationActions");
    if actions.is_empty() {
        errs.push(FieldError::required(
            "spec.validationActions",
            "at least one validation action is required",
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for (i, a) in actions.iter().enumerate() {
        let field = format!("spec.validationActions[{i}]");
        if !matches!(a.as_str(), "Audit" | "Deny" | "Warn") {
            errs.push(FieldError::not_supported(
                field,
                a.as_str(),
                &["Audit", "Deny", "Warn"],
            ));
        } else if seen.contains(&a.as_str()) {
            errs.push(FieldError::duplicate(field, a.as_str()));
        }
        seen.push(a);
    }
    if seen.contains(&"Deny") && seen.contains(&"Warn") {
        errs.push(FieldError::invalid(
            "spec.validationActions",
            Value::from(actions.clone()),
            "must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
        ));
    }
    errs
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use serde_json::json;

    use super::*;

    fn messages(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn policies() {
        let good = json!({"metadata": {"name": "p"}, "spec": {
            "failurePolicy": "Fail",
            "matchConstraints": {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["deployments"], "scope": "*"}]},
            "validations": [{"expression": "object.spec.replicas <= 5", "reason": "Forbidden"}],
        }});
        assert!(policy(&good).is_empty(), "{:?}", messages(&policy(&good)));
        let bad = json!({"metadata": {"name": "p"}, "spec": {
            "failurePolicy": "Sometimes",
            "variables": [{"name": "1x", "expression": "1"}],
            "validations": [{"expression": "object.spec.replicas <=", "message": "a\nb", "reason": "Unauthorized"}],
        }});
        let m = messages(&policy(&bad));
        assert!(m.contains(&"spec.failurePolicy: Unsupported value: \"Sometimes\": supported values: \"Fail\", \"Ignore\"".to_string()), "{m:?}");
        assert!(
            m.contains(&"spec.matchConstraints: Required value".to_string()),
            "{m:?}"
        );
        assert!(m.contains(&"spec.variables[0].name: Invalid value: \"1x\": name is not a valid CEL identifier".to_string()), "{m:?}");
        assert!(m.iter().any(|e| e.starts_with("spec.validations[0].expression: Invalid value: \"object.spec.replicas <=\": compilation failed:")), "{m:?}");
        assert!(m.contains(&"spec.validations[0].message: Invalid value: \"a\\nb\": message must not contain line breaks".to_string()), "{m:?}");
        assert!(m.contains(&"spec.validations[0].reason: Unsupported value: \"Unauthorized\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\"".to_string()), "{m:?}");
        let empty = json!({"metadata": {"name": "p"}, "spec": {"failurePolicy": "Fail", "matchConstraints": good["spec"]["matchConstraints"].clone()}});
        assert_eq!(
            messages(&policy(&empty)),
            vec![
                "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
                "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item",
            ]
        );
    }

    #[test]
    fn bindings() {
        let ok = json!({"spec": {"policyName": "p", "validationActions": ["Deny", "Audit"],
            "paramRef": {"name": "x", "parameterNotFoundAction": "Allow"}}});
        assert!(binding(&ok).is_empty(), "{:?}", messages(&binding(&ok)));
        let bad = json!({"spec": {"validationActions": ["Deny", "Warn", "Deny", "Shout"],
            "paramRef": {"name": "x", "selector": {}}}});
        let m = messages(&binding(&bad));
        assert!(
            m.contains(&"spec.policyName: Required value".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(
                &"spec.paramRef.name: Forbidden: name and selector are mutually exclusive"
                    .to_string()
            ),
            "{m:?}"
        );
        assert!(
            m.contains(&"spec.paramRef.parameterNotFoundAction: Required value".to_string()),
            "{m:?}"
        );
        assert!(
            m.contains(&"spec.validationActions[2]: Duplicate value: \"Deny\"".to_string()),
            "{m:?}"
        );
        assert!(m.contains(&"spec.validationActions[3]: Unsupported value: \"Shout\": supported values: \"Audit\", \"Deny\", \"Warn\"".to_string()), "{m:?}");
        assert!(
            m.iter()
                .any(|e| e.contains("must not contain both Deny and Warn")),
            "{m:?}"
        );
        let none = json!({"spec": {"policyName": "p"}});
        assert_eq!(
            messages(&binding(&none)),
            vec![
                "spec.validationActions: Required value: at least one validation action is required"
            ]
        );
    }
}
