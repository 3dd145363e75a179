//! `create role|clusterrole|rolebinding|clusterrolebinding`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{object_meta, string_map};
use crate::error::{CliError, Result};

const RBAC: &str = "rbac.authorization.k8s.io/v1";
const VALID_RESOURCE_VERBS: &[&str] = &[
    "*",
    "get",
    "delete",
    "list",
    "create",
    "update",
    "patch",
    "watch",
    "proxy",
    "deletecollection",
    "use",
    "bind",
    "escalate",
    "impersonate",
];
const VALID_NON_RESOURCE_VERBS: &[&str] = &[
    "*", "get", "post", "put", "delete", "patch", "head", "options",
];

/// One `--resource` as typed: `resource[.group][/subresource]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ResourceArg {
    pub resource: String,
    pub group: String,
    pub subresource: String,
}

/// kubectl's parsing of `--resource` values (a bare `*` alone wins).
pub fn parse_resources(values: &[String]) -> Vec<ResourceArg> {
    let mut out = Vec::new();
    for r in values {
        let (main, sub) = match r.split_once('/') {
            Some((m, s)) => (m, s.to_string()),
            None => (r.as_str(), String::new()),
        };
        let (resource, group) = match main.split_once('.') {
            Some((res, g)) => (res.to_string(), g.to_string()),
            None => (main.to_string(), String::new()),
        };
        let arg = ResourceArg {
            resource,
            group,
            subresource: sub,
        };
        if arg.resource == "*" && !main.contains('.') && !r.contains('/') {
            return vec![arg];
        }
        out.push(arg);
    }
    out
}

/// Verbs without duplicates (`*` alone wins).
pub fn dedup_verbs(verbs: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for v in verbs {
        if v == "*" {
            return vec!["*".into()];
        }
        if !out.contains(v) {
            out.push(v.clone());
        }
    }
    out
}

pub fn dedup(items: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for i in items {
        if !out.contains(i) {
            out.push(i.clone());
        }
    }
    out
}

fn special_verb_targets(verb: &str) -> Option<&'static [(&'static str, &'static str)]> {
    Some(match verb {
        "use" => &[
            ("policy", "podsecuritypolicies"),
            ("extensions", "podsecuritypolicies"),
        ],
        "bind" | "escalate" => &[
            ("rbac.authorization.k8s.io", "roles"),
            ("rbac.authorization.k8s.io", "clusterroles"),
        ],
        "impersonate" => &[
            ("", "users"),
            ("", "serviceaccounts"),
            ("", "groups"),
            ("authentication.k8s.io", "userextras"),
            ("authentication.k8s.io", "uids"),
        ],
        _ => return None,
    })
}

/// kubectl's `Validate` of a Role's verbs and resources (`resolved` are the resources
/// after REST mapping: (group, plural)); the warnings for non-standard verbs are
/// returned to be printed.
pub fn validate_role(
    verbs: &[String],
    resources: &[ResourceArg],
    resolved: &[(String, String)],
) -> Result<Vec<String>> {
    if verbs.is_empty() {
        return Err(CliError::msg("at least one verb must be specified"));
    }
    let warnings = verbs
        .iter()
        .filter(|v| !VALID_RESOURCE_VERBS.contains(&v.as_str()))
        .map(|v| format!("Warning: '{v}' is not a standard resource verb"))
        .collect();
    if resources.is_empty() {
        return Err(CliError::msg("at least one resource must be specified"));
    }
    validate_resources(verbs, resources, resolved)?;
    Ok(warnings)
}

fn validate_resources(
    verbs: &[String],
    resources: &[ResourceArg],
    resolved: &[(String, String)],
) -> Result<()> {
    for (r, (group, resource)) in resources.iter().zip(resolved) {
        if r.resource.is_empty() {
            return Err(CliError::msg(
                "resource must be specified if apiGroup/subresource specified",
            ));
        }
        if r.resource == "*" {
            return Ok(());
        }
        for v in verbs {
            if let Some(targets) = special_verb_targets(v)
                && !targets.iter().any(|(g, res)| g == group && res == resource)
            {
                return Err(CliError::msg(format!(
                    "can not perform '{v}' on '{resource}' in group '{group}'"
                )));
            }
        }
    }
    Ok(())
}

/// kubectl's `generateResourcePolicyRules`: one rule per API group (groups sorted),
/// plus one for the non-resource URLs.
pub fn policy_rules(
    verbs: &[String],
    resources: &[ResourceArg],
    resolved: &[(String, String)],
    resource_names: &[String],
    non_resource_urls: &[String],
) -> Vec<Value> {
    let mut by_group: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (r, (group, resource)) in resources.iter().zip(resolved) {
        let mut res = resource.clone();
        if !r.subresource.is_empty() {
            res = format!("{res}/{}", r.subresource);
        }
        let list = by_group.entry(group.clone()).or_default();
        if !list.contains(&res) {
            list.push(res);
        }
    }
    let mut rules = Vec::new();
    for (group, res) in by_group {
        let mut rule = json!({"verbs": verbs, "apiGroups": [group], "resources": res});
        if !resource_names.is_empty() {
            rule["resourceNames"] = json!(resource_names);
        }
        rules.push(rule);
    }
    if !non_resource_urls.is_empty() {
        rules.push(json!({"verbs": verbs, "nonResourceURLs": non_resource_urls}));
    }
    rules
}

/// `create role`.
pub fn role(name: &str, rules: Vec<Value>) -> Value {
    json!({
        "kind": "Role",
        "apiVersion": RBAC,
        "metadata": object_meta(name, None, None),
        "rules": rules,
    })
}

/// `create clusterrole`'s checks beyond a Role's.
pub fn validate_cluster_role(
    verbs: &[String],
    resources: &[ResourceArg],
    resolved: &[(String, String)],
    resource_names: &[String],
    non_resource_urls: &[String],
    aggregation_rule: &BTreeMap<String, String>,
) -> Result<Vec<String>> {
    if !aggregation_rule.is_empty() {
        if !non_resource_urls.is_empty()
            || !verbs.is_empty()
            || !resources.is_empty()
            || !resource_names.is_empty()
        {
            return Err(CliError::msg(
                "aggregation rule must be specified without nonResourceURLs, verbs, resources or resourceNames",
            ));
        }
        return Ok(Vec::new());
    }
    if verbs.is_empty() {
        return Err(CliError::msg("at least one verb must be specified"));
    }
    if resources.is_empty() && non_resource_urls.is_empty() {
        return Err(CliError::msg(
            "one of resource or nonResourceURL must be specified",
        ));
    }
    let mut warnings = Vec::new();
    if !resources.is_empty() {
        warnings.extend(
            verbs
                .iter()
                .filter(|v| !VALID_RESOURCE_VERBS.contains(&v.as_str()))
                .map(|v| format!("Warning: '{v}' is not a standard resource verb")),
        );
        validate_resources(verbs, resources, resolved)?;
    }
    if !non_resource_urls.is_empty() {
        for v in verbs {
            if !VALID_NON_RESOURCE_VERBS.contains(&v.as_str()) {
                return Err(CliError::msg(format!(
                    "invalid verb: '{v}' for nonResourceURL"
                )));
            }
        }
        for url in non_resource_urls {
            if url == "*" {
                continue;
            }
            if !url.starts_with('/') {
                return Err(CliError::msg("nonResourceURL should start with /"));
            }
            if url[..url.len() - 1].contains('*') {
                return Err(CliError::msg(
                    "nonResourceURL only supports wildcard matches when '*' is at the end",
                ));
            }
        }
    }
    Ok(warnings)
}

/// `create clusterrole`.
pub fn cluster_role(
    name: &str,
    rules: Vec<Value>,
    aggregation_rule: &BTreeMap<String, String>,
) -> Value {
    let mut cr = json!({
        "kind": "ClusterRole",
        "apiVersion": RBAC,
        "metadata": object_meta(name, None, None),
    });
    if aggregation_rule.is_empty() {
        cr["rules"] = Value::Array(rules);
    } else {
        cr["rules"] = Value::Null;
        cr["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": string_map(aggregation_rule)}]});
    }
    cr
}

/// The subjects of a binding: users, groups, then `namespace:name` service accounts.
pub fn subjects(
    users: &[String],
    groups: &[String],
    service_accounts: &[String],
) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    for u in users {
        out.push(json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": u}));
    }
    for g in groups {
        out.push(json!({"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": g}));
    }
    for sa in service_accounts {
        let parts: Vec<&str> = sa.split(':').collect();
        if parts.len() != 2 {
            return Err(CliError::msg("serviceaccount must be <namespace>:<name>"));
        }
        out.push(json!({"kind": "ServiceAccount", "name": parts[1], "namespace": parts[0]}));
    }
    Ok(out)
}

/// `create rolebinding` (exactly one of `role` / `cluster_role`).
pub fn role_binding(
    name: &str,
    role: &str,
    cluster_role: &str,
    subjects: Vec<Value>,
) -> Result<Value> {
    let role_ref = match (role.is_empty(), cluster_role.is_empty()) {
        (false, true) => {
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role})
        }
        (true, false) => {
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role})
        }
        _ => {
            return Err(CliError::msg(
                "exactly one of clusterrole or role must be specified",
            ));
        }
    };
    let mut rb = json!({
        "kind": "RoleBinding",
        "apiVersion": RBAC,
        "metadata": object_meta(name, None, None),
        "roleRef": role_ref,
    });
    if !subjects.is_empty() {
        rb["subjects"] = Value::Array(subjects);
    }
    Ok(rb)
}

/// `create clusterrolebinding`.
pub fn cluster_role_binding(name: &str, cluster_role: &str, subjects: Vec<Value>) -> Value {
    let mut b = json!({
        "kind": "ClusterRoleBinding",
        "apiVersion": RBAC,
        "metadata": object_meta(name, None, None),
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role},
    });
    if !subjects.is_empty() {
        b["subjects"] = Value::Array(subjects);
    }
    b
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn roles_as_kubectl() {
        let res = parse_resources(&["pods".into(), "deployments.apps".into(), "pods/log".into()]);
        let resolved = vec![
            (String::new(), "pods".to_string()),
            ("apps".to_string(), "deployments".to_string()),
            (String::new(), "pods".to_string()),
        ];
        let verbs = dedup_verbs(&["get".into(), "list".into(), "get".into()]);
        assert!(validate_role(&verbs, &res, &resolved).unwrap().is_empty());
        let rules = policy_rules(&verbs, &res, &resolved, &["a".into()], &[]);
        assert_eq!(
            role("r", rules),
            json!({"kind": "Role", "apiVersion": "rbac.authorization.k8s.io/v1",
              "metadata": {"name": "r", "creationTimestamp": null},
              "rules": [
                {"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"], "resourceNames": ["a"]},
                {"verbs": ["get", "list"], "apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["a"]}]})
        );
        assert_eq!(
            validate_role(&["use".into()], &res[..1], &resolved[..1])
                .unwrap_err()
                .to_string(),
            "error: can not perform 'use' on 'pods' in group ''"
        );
        assert_eq!(
            validate_role(&["frob".into()], &res[..1], &resolved[..1]).unwrap(),
            vec!["Warning: 'frob' is not a standard resource verb".to_string()]
        );
        assert_eq!(parse_resources(&["*".into(), "pods".into()]).len(), 1);
    }

    #[test]
    fn cluster_roles_and_bindings() {
        let agg = BTreeMap::from([("a".to_string(), "b".to_string())]);
        validate_cluster_role(&[], &[], &[], &[], &[], &agg).unwrap();
        assert_eq!(
            cluster_role("cr2", vec![], &agg),
            json!({"kind": "ClusterRole", "apiVersion": "rbac.authorization.k8s.io/v1",
              "metadata": {"name": "cr2", "creationTimestamp": null}, "rules": null,
              "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"a": "b"}}]}})
        );
        assert_eq!(
            validate_cluster_role(
                &["get".into()],
                &[],
                &[],
                &[],
                &["/a*b".into()],
                &BTreeMap::new()
            )
            .unwrap_err()
            .to_string(),
            "error: nonResourceURL only supports wildcard matches when '*' is at the end"
        );
        let subs = subjects(&["u".into()], &["g".into()], &["default:sa".into()]).unwrap();
        let rb = role_binding("rb", "r", "", subs).unwrap();
        assert_eq!(
            rb["subjects"][2],
            json!({"kind": "ServiceAccount", "name": "sa", "namespace": "default"})
        );
        assert_eq!(rb["roleRef"]["kind"], "Role");
        assert!(role_binding("rb", "", "", vec![]).is_err());
        assert!(subjects(&[], &[], &["sa".into()]).is_err());
    }
}
