//! Whether a webhook is called for a request (upstream's `predicates/rules`,
//! `predicates/namespace`, `predicates/object` and `ShouldCallHook`).

use api::ApiError;
use api::selector::LabelSelector;
use serde_json::Value;

use super::config::{Hook, Rule};
use crate::{Attributes, Cluster, Operation};

fn exact_or_wildcard(items: &[String], requested: &str) -> bool {
    items.iter().any(|i| i == "*" || i == requested)
}

fn is_namespace_resource(a: &Attributes) -> bool {
    a.resource.group.is_empty() && a.resource.version == "v1" && a.resource.kind == "namespaces"
}

/// `rules.Matcher.Matches`: scope, operation, group, version, and resource/subresource
/// (`*` is every resource without a subresource, `*/*` everything, `pods/*` every
/// subresource of pods, `*/status` every status subresource).
pub fn rule_matches(rule: &Rule, a: &Attributes) -> bool {
    let scope = match rule.scope.as_str() {
        "*" | "" => true,
        "Namespaced" => !is_namespace_resource(a) && !a.namespace.is_empty(),
        "Cluster" => is_namespace_resource(a) || a.namespace.is_empty(),
        _ => false,
    };
    let op = a.operation.as_str();
    let operation = rule.operations.iter().any(|o| o == "*" || o == op);
    let resource = rule.resources.iter().any(|rs| {
        let (res, sub) = rs.split_once('/').unwrap_or((rs.as_str(), ""));
        (res == "*" || res == a.resource.kind) && (sub == "*" || sub == a.subresource)
    });
    scope
        && operation
        && exact_or_wildcard(&rule.api_groups, &a.resource.group)
        && exact_or_wildcard(&rule.api_versions, &a.resource.version)
        && resource
}

/// `IsExemptAdmissionConfigurationResource`: webhook and admission-policy configurations
/// are never sent to webhooks (so a broken webhook can always be removed).
pub fn is_exempt(a: &Attributes) -> bool {
    a.kind.group == "admissionregistration.k8s.io"
        && matches!(
            a.kind.kind.as_str(),
            "ValidatingWebhookConfiguration"
                | "MutatingWebhookConfiguration"
                | "ValidatingAdmissionPolicy"
                | "ValidatingAdmissionPolicyBinding"
                | "MutatingAdmissionPolicy"
                | "MutatingAdmissionPolicyBinding"
        )
}

fn labels_of(obj: &Value) -> serde_json::Map<String, Value> {
    obj.get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// The labels of the request's namespace, read once per request (`GetNamespaceLabels`):
/// a Namespace's own labels when it is created or updated, otherwise the stored
/// namespace's (a missing namespace is upstream's 404).
#[derive(Default)]
pub struct NamespaceLabels {
    cached: Option<Result<serde_json::Map<String, Value>, ApiError>>,
}

impl NamespaceLabels {
    pub(crate) async fn get(
        &mut self,
        a: &Attributes,
        cluster: &dyn Cluster,
    ) -> Result<serde_json::Map<String, Value>, ApiError> {
        if a.resource.kind == "namespaces"
            && a.subresource.is_empty()
            && matches!(a.operation, Operation::Create | Operation::Update)
        {
            return Ok(a.object.as_ref().map(labels_of).unwrap_or_default());
        }
        if let Some(c) = &self.cached {
            return c.clone();
        }
        let result = {
            // A request on a Namespace names it; anything else is in it.
            let name = if a.namespace.is_empty() {
                a.name.as_str()
            } else {
                a.namespace.as_str()
            };
            match cluster.get("", "namespaces", "", name).await {
                Ok(Some(ns)) => Ok(labels_of(&ns)),
                Ok(None) => Err(ApiError::not_found(
                    api::status::GroupResource {
                        group: "",
                        resource: "namespaces",
                    },
                    name,
                )),
                Err(e) => Err(ApiError::internal(e.message)),
            }
        };
        self.cached = Some(result.clone());
        result
    }
}

fn selector_error(e: &str) -> ApiError {
    ApiError::internal(e)
}

/// `ShouldCallHook` without `matchConditions` and without equivalent resources (every
/// rkube resource is served in one version, so `matchPolicy: Equivalent` finds no other
/// resource to match): `Ok(true)` when the webhook is called. A selector that does not
/// match, or no matching rule, skips the webhook; selector and namespace errors count only
/// otherwise, as upstream's.
pub async fn should_call(
    hook: &Hook,
    a: &Attributes,
    cluster: &dyn Cluster,
    namespace: &mut NamespaceLabels,
) -> Result<bool, ApiError> {
    let object = match &hook.object_selector {
        Err(e) => Err(selector_error(e)),
        Ok(sel) if sel.is_empty() => Ok(true),
        Ok(sel) => {
            let matches = |o: &Option<Value>| o.as_ref().is_some_and(|o| sel.matches_object(o));
            Ok(matches(&a.object) || matches(&a.old_object))
        }
    };
    if matches!(object, Ok(false)) || !hook.rules.iter().any(|r| rule_matches(r, a)) {
        return Ok(false);
    }
    // namespaceSelector: cluster-scoped requests other than namespaces always match.
    if !(a.namespace.is_empty() && a.resource.kind != "namespaces") {
        let sel: &LabelSelector = hook
            .namespace_selector
            .as_ref()
            .map_err(|e| selector_error(e))?;
        if !sel.is_empty() {
            let labels = namespace.get(a, cluster).await?;
            if !sel.matches_labels(&labels) {
                return Ok(false);
            }
        }
    }
    object?;
    match_conditions(hook, a)
}

/// Upstream's webhook `matchConditions`: every condition true calls the webhook, any false
/// skips it; an error skips it under `failurePolicy: Ignore` and fails the request
/// otherwise.
fn match_conditions(hook: &Hook, a: &Attributes) -> Result<bool, ApiError> {
    if hook.match_conditions.is_empty() {
        return Ok(true);
    }
    let object = a.object.clone().unwrap_or(Value::Null);
    let old_object = a.old_object.clone().unwrap_or(Value::Null);
    let request = crate::policy::validating::request_value(a);
    let vars = [
        ("object", &object),
        ("oldObject", &old_object),
        ("request", &request),
    ];
    let mut errors = Vec::new();
    for source in &hook.match_conditions {
        let result = crate::policy::cel::Expr::compile(source).and_then(|e| {
            e.eval(&vars)
                .map_err(|err| format!("expression '{source}' resulted in error: {err}"))
        });
        match result {
            Ok(cel::Value::Bool(false)) => return Ok(false),
            Ok(cel::Value::Bool(true)) => {}
            Ok(other) => errors.push(format!("must evaluate to bool but got {other:?}")),
            Err(e) => errors.push(e),
        }
    }
    if errors.is_empty() {
        return Ok(true);
    }
    if hook.ignore_failures {
        tracing::warn!(webhook = %hook.name, errors = ?errors, "matchConditions failed; the webhook is skipped");
        return Ok(false);
    }
    let detail = if errors.len() == 1 {
        errors.remove(0)
    } else {
        format!("[{}]", errors.join(", "))
    };
    Err(super::review::internal_error(
        &super::review::calling_error(
            &hook.name,
            &format!("failed to evaluate match conditions: {detail}"),
        ),
    ))
}
