//! `ValidatingAdmissionPolicy` (upstream's `plugin/policy/validating`): policies
//! (`admissionregistration.k8s.io/v1` `ValidatingAdmissionPolicy`) are CEL validations;
//! bindings (`ValidatingAdmissionPolicyBinding`) apply them, narrowed by their own match
//! resources, with parameters (`paramKind` / `paramRef`) and validation actions (`Deny`
//! refuses, `Warn` warns, `Audit` annotates the audit event).
//!
//! Per request: every policy with bindings (by name, for a stable order) whose
//! `matchConstraints` match; per matching binding the parameters are looked up; for each
//! parameter (or once without) `matchConditions` filter, then every validation is
//! evaluated; a failed one gives its `messageExpression`, `message` or
//! `failed expression: …`; evaluation and configuration errors follow `failurePolicy`.
//! The first denial is the answer, 422 `Invalid` unless the validation names another
//! reason.
//!
//! Differences from upstream: no type checking (a non-bool result is a denial at
//! run time, not a compile error), no `authorizer` variable, no `matchPolicy: Equivalent`
//! conversions (rkube serves each resource in one version), no cost budget; variables are
//! evaluated before the expressions that use them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use api::ApiError;
use api::selector::LabelSelector;
use api::status::Reason;
use serde_json::{Value, json};

use super::cel::{Expr, to_json};
use crate::chain::forbidden;
use crate::webhook::config::{Rule, strings};
use crate::webhook::matching::{NamespaceLabels, rule_matches};
use crate::{Attributes, Cluster, Operation, Plugin};

const GROUP: &str = "admissionregistration.k8s.io";
const FAILURE_ANNOTATION: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The resources policies never see (upstream's exclusions).
const EXEMPT: &[(&str, &str)] = &[
    (GROUP, "validatingadmissionpolicies"),
    (GROUP, "validatingadmissionpolicybindings"),
    (GROUP, "mutatingadmissionpolicies"),
    (GROUP, "mutatingadmissionpolicybindings"),
    ("authentication.k8s.io", "selfsubjectreviews"),
    ("authentication.k8s.io", "tokenreviews"),
    ("authorization.k8s.io", "localsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectaccessreviews"),
    ("authorization.k8s.io", "selfsubjectrulesreviews"),
    ("authorization.k8s.io", "subjectaccessreviews"),
];

type Compiled = Result<Expr, String>;

struct Validation {
    expression: Compiled,
    source: String,
    message: String,
    message_expression: Option<Compiled>,
    reason: String,
}

/// A policy with its expressions compiled.
struct Policy {
    name: String,
    ignore_failures: bool,
    param_kind: Option<(String, String)>,
    match_constraints: Value,
    match_conditions: Vec<(String, Compiled)>,
    variables: Vec<(String, Compiled)>,
    validations: Vec<Validation>,
    audit_annotations: Vec<(String, Compiled)>,
}

fn compile(v: &Value) -> Compiled {
    Expr::compile(v.as_str().unwrap_or_default())
}

impl Policy {
    fn parse(obj: &Value) -> Policy {
        let spec = &obj["spec"];
        let list = |k: &str| spec[k].as_array().cloned().unwrap_or_default();
        Policy {
            name: api::meta::name(obj).unwrap_or_default().to_string(),
            ignore_failures: spec["failurePolicy"] == "Ignore",
            param_kind: spec["paramKind"].as_object().map(|pk| {
                (
                    pk.get("apiVersion")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    pk.get("kind")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                )
            }),
            match_constraints: spec["matchConstraints"].clone(),
            match_conditions: list("matchConditions")
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        compile(&c["expression"]),
                    )
                })
                .collect(),
            variables: list("variables")
                .iter()
                .map(|c| {
                    (
                        c["name"].as_str().unwrap_or_default().to_string(),
                        compile(&c["expression"]),
                    )
                })
                .collect(),
            validations: list("validations")
                .iter()
                .map(|v| Validation {
                    expression: compile(&v["expression"]),
                    source: v["expression"].as_str().unwrap_or_default().to_string(),
                    message: v["message"].as_str().unwrap_or_default().trim().to_string(),
                    message_expression: v
                        .get("messageExpression")
                        .and_then(Value::as_str)
                        .filter(|m| !m.trim().is_empty())
                        .map(Expr::compile),
                    reason: v["reason"].as_str().unwrap_or_default().to_string(),
                })
                .collect(),
            audit_annotations: list("auditAnnotations")
                .iter()
                .map(|a| {
                    (
                        a["key"].as_str().unwrap_or_default().to_string(),
                        compile(&a["valueExpression"]),
                    )
                })
                .collect(),
        }
    }
}

/// What one validation concluded.
struct Decision {
    deny: bool,
    message: String,
    reason: String,
    /// The index in `spec.validations`, for audit annotations.
    index: usize,
}

/// The request's CEL variables.
struct Vars {
    object: Value,
    old_object: Value,
    request: Value,
    params: Value,
    namespace_object: Value,
    variables: Value,
    variable_errors: BTreeMap<String, String>,
}

impl Vars {
    fn bindings(&self) -> Vec<(&str, &Value)> {
        vec![
            ("object", &self.object),
            ("oldObject", &self.old_object),
            ("request", &self.request),
            ("params", &self.params),
            ("namespaceObject", &self.namespace_object),
            ("variables", &self.variables),
        ]
    }

    /// Evaluates `expr`: its value, or upstream's error text.
    fn eval(&self, expr: &Compiled) -> Result<cel::Value, String> {
        let expr = expr
            .as_ref()
            .map_err(|e| format!("compilation error: {e}"))?;
        for (name, err) in &self.variable_errors {
            if expr.source.contains(&format!("variables.{name}")) {
                return Err(format!(
                    "expression '{}' resulted in error: composited variable {name:?} fails to evaluate: {err}",
                    expr.source
                ));
            }
        }
        expr.eval(&self.bindings())
            .map_err(|e| format!("expression '{}' resulted in error: {e}", expr.source))
    }
}

/// `request` as CEL sees it (admission/v1 `AdmissionRequest` without uid and objects).
pub(crate) fn request_value(a: &Attributes) -> Value {
    let kind = json!({"group": a.kind.group, "version": a.kind.version, "kind": a.kind.kind});
    let resource = json!({"group": a.resource.group, "version": a.resource.version, "resource": a.resource.kind});
    let mut user = json!({"username": a.user.name});
    if !a.user.uid.is_empty() {
        user["uid"] = json!(a.user.uid);
    }
    if !a.user.groups.is_empty() {
        user["groups"] = json!(a.user.groups);
    }
    if !a.user.extra.is_empty() {
        user["extra"] = json!(a.user.extra);
    }
    json!({
        "kind": kind, "resource": resource, "subResource": a.subresource,
        "requestKind": kind, "requestResource": resource, "requestSubResource": a.subresource,
        "name": a.name, "namespace": a.namespace, "operation": a.operation.as_str(),
        "userInfo": user, "dryRun": a.dry_run, "options": a.options.clone().unwrap_or(Value::Null),
    })
}

/// The namespace as `namespaceObject` shows it: metadata without owner references and
/// managed fields, `spec.finalizers`, `status.phase` and `status.conditions`.
fn namespace_value(ns: &Value) -> Value {
    let mut meta = serde_json::Map::new();
    for k in [
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ] {
        if let Some(v) = ns["metadata"].get(k) {
            meta.insert(k.into(), v.clone());
        }
    }
    json!({
        "metadata": meta,
        "spec": {"finalizers": ns["spec"]["finalizers"].clone()},
        "status": {"phase": ns["status"]["phase"].clone(), "conditions": ns["status"]["conditions"].clone()},
    })
}

fn rule_of(r: &Value) -> Rule {
    Rule {
        operations: strings(r, "operations"),
        api_groups: strings(r, "apiGroups"),
        api_versions: strings(r, "apiVersions"),
        resources: strings(r, "resources"),
        scope: r["scope"].as_str().unwrap_or("*").to_string(),
    }
}

/// A `NamedRuleWithOperations`: the rule and its `resourceNames`.
fn named_rule_matches(r: &Value, a: &Attributes) -> bool {
    let names = strings(r, "resourceNames");
    rule_matches(&rule_of(r), a) && (names.is_empty() || names.contains(&a.name))
}

/// Upstream's `matching.Matches` of `MatchResources` (`criteria`).
async fn criteria_match(
    criteria: &Value,
    a: &Attributes,
    cluster: &dyn Cluster,
    namespace: &mut NamespaceLabels,
) -> Result<bool, ApiError> {
    if criteria.is_null() {
        return Ok(true);
    }
    let mut deferred: Option<ApiError> = None;
    if !(a.namespace.is_empty() && a.resource.kind != "namespaces") {
        match LabelSelector::from_label_selector(&criteria["namespaceSelector"]) {
            Ok(sel) if sel.is_empty() || criteria["namespaceSelector"].is_null() => {}
            Ok(sel) => match namespace.get(a, cluster).await {
                Ok(labels) if !sel.matches_labels(&labels) => return Ok(false),
                Ok(_) => {}
                Err(e) => deferred = Some(e),
            },
            Err(e) => deferred = Some(ApiError::internal(e.to_string())),
        }
    }
    if !criteria["objectSelector"].is_null() {
        match LabelSelector::from_label_selector(&criteria["objectSelector"]) {
            Ok(sel) if sel.is_empty() => {}
            Ok(sel) => {
                let m = |o: &Option<Value>| o.as_ref().is_some_and(|o| sel.matches_object(o));
                if !m(&a.object) && !m(&a.old_object) {
                    return Ok(false);
                }
            }
            Err(e) => deferred = Some(ApiError::internal(e.to_string())),
        }
    }
    let rules = |k: &str| criteria[k].as_array().cloned().unwrap_or_default();
    if rules("excludeResourceRules")
        .iter()
        .any(|r| named_rule_matches(r, a))
    {
        return Ok(false);
    }
    let include = rules("resourceRules");
    if !include.is_empty() && !include.iter().any(|r| named_rule_matches(r, a)) {
        return Ok(false);
    }
    match deferred {
        Some(e) => Err(e),
        None => Ok(true),
    }
}

/// The plugin, with a cache of compiled policies by uid and resourceVersion.
#[derive(Default)]
pub struct ValidatingAdmissionPolicy {
    compiled: Mutex<HashMap<String, (String, Arc<Policy>)>>,
}

impl ValidatingAdmissionPolicy {
    fn policy(&self, obj: &Value) -> Arc<Policy> {
        let uid = api::meta::uid(obj).unwrap_or_default().to_string();
        let rv = api::meta::resource_version(obj)
            .unwrap_or_default()
            .to_string();
        if let Ok(cache) = self.compiled.lock()
            && let Some((cached_rv, p)) = cache.get(&uid)
            && *cached_rv == rv
            && !uid.is_empty()
        {
            return Arc::clone(p);
        }
        let p = Arc::new(Policy::parse(obj));
        if let Ok(mut cache) = self.compiled.lock() {
            if cache.len() > 4096 {
                cache.clear();
            }
            cache.insert(uid, (rv, Arc::clone(&p)));
        }
        p
    }
}

/// The parameters of a binding: `[Null]` without `paramKind` or `paramRef`.
async fn params_of(
    policy: &Policy,
    binding: &Value,
    a: &Attributes,
    cluster: &dyn Cluster,
) -> Result<Vec<Value>, String> {
    let Some((api_version, kind)) = &policy.param_kind else {
        return Ok(vec![Value::Null]);
    };
    let param_ref = &binding["spec"]["paramRef"];
    if param_ref.is_null() {
        return Ok(vec![Value::Null]);
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let Some((plural, namespaced)) = cluster.resource_for_kind(group, version, kind).await else {
        return Err(format!(
            "failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
        ));
    };
    let ref_ns = param_ref["namespace"].as_str().unwrap_or_default();
    let namespace = if namespaced {
        let ns = if ref_ns.is_empty() {
            a.namespace.as_str()
        } else {
            ref_ns
        };
        if ns.is_empty() {
            return Err(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            );
        }
        ns.to_string()
    } else {
        if !ref_ns.is_empty() {
            return Err(
                "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
            );
        }
        String::new()
    };
    let name = param_ref["name"].as_str().unwrap_or_default();
    let found = if !name.is_empty() {
        if !param_ref["selector"].is_null() {
            return Err("paramRef.name and paramRef.selector are mutually exclusive".into());
        }
        cluster
            .get(group, &plural, &namespace, name)
            .await
            .map_err(|e| e.message)?
            .into_iter()
            .collect::<Vec<_>>()
    } else if !param_ref["selector"].is_null() {
        let sel = LabelSelector::from_label_selector(&param_ref["selector"])
            .map_err(|e| e.to_string())?;
        cluster
            .list(group, &plural, &namespace)
            .await
            .map_err(|e| e.message)?
            .into_iter()
            .filter(|o| sel.matches_object(o))
            .collect()
    } else {
        return Err("one of name or selector must be provided".into());
    };
    if found.is_empty() && param_ref["parameterNotFoundAction"] == "Deny" {
        return Err(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        );
    }
    Ok(found
        .into_iter()
        .map(|p| {
            let mut p = Arc::unwrap_or_clone(p);
            if p["apiVersion"].is_null() {
                p["apiVersion"] = json!(api_version);
                p["kind"] = json!(kind);
            }
            p
        })
        .collect())
}

/// An audit annotation's key and value (or why it has none).
type AuditValue = (String, Result<String, String>);

/// One policy with one parameter: its decisions and audit annotation values.
fn validate_one(policy: &Policy, vars: &mut Vars) -> (Vec<Decision>, Vec<AuditValue>) {
    let on_error = |message: String, index: usize| Decision {
        deny: !policy.ignore_failures,
        message,
        reason: String::new(),
        index,
    };
    // matchConditions (without variables): any false skips; errors per failurePolicy.
    let mut errors = Vec::new();
    for (_, cond) in &policy.match_conditions {
        match vars.eval(cond) {
            Ok(cel::Value::Bool(false)) => return (Vec::new(), Vec::new()),
            Ok(cel::Value::Bool(true)) => {}
            Ok(other) => errors.push(format!("must evaluate to bool but got {other:?}")),
            Err(e) => errors.push(e),
        }
    }
    if !errors.is_empty() {
        if policy.ignore_failures {
            return (Vec::new(), Vec::new());
        }
        errors.dedup();
        let message = if errors.len() == 1 {
            errors.remove(0)
        } else {
            format!("[{}]", errors.join(", "))
        };
        return (vec![on_error(message, 0)], Vec::new());
    }
    // Variables, in order (each sees the ones before it).
    let mut values = serde_json::Map::new();
    for (name, expr) in &policy.variables {
        vars.variables = Value::Object(values.clone());
        match vars.eval(expr) {
            Ok(v) => {
                values.insert(name.clone(), to_json(&v));
            }
            Err(e) => {
                vars.variable_errors.insert(name.clone(), e);
            }
        }
    }
    vars.variables = Value::Object(values);
    let mut decisions = Vec::new();
    for (i, v) in policy.validations.iter().enumerate() {
        match vars.eval(&v.expression) {
            Err(e) => decisions.push(on_error(e, i)),
            Ok(cel::Value::Bool(true)) => {}
            Ok(_) => {
                let from_expression = v
                    .message_expression
                    .as_ref()
                    .and_then(|m| vars.eval(m).ok())
                    .and_then(|m| match m {
                        cel::Value::String(s) => Some(s.trim().to_string()),
                        _ => None,
                    })
                    .filter(|m| !m.is_empty() && m.len() <= 5 * 1024 && !m.contains('\n'));
                let message = from_expression.unwrap_or_else(|| {
                    if v.message.is_empty() {
                        format!("failed expression: {}", v.source.trim())
                    } else {
                        v.message.clone()
                    }
                });
                decisions.push(Decision {
                    deny: true,
                    message,
                    reason: v.reason.clone(),
                    index: i,
                });
            }
        }
    }
    let annotations = policy
        .audit_annotations
        .iter()
        .filter_map(|(key, expr)| match vars.eval(expr) {
            Ok(cel::Value::String(s)) if !s.trim().is_empty() => {
                Some((key.clone(), Ok(s.trim().chars().take(10 * 1024).collect())))
            }
            Ok(cel::Value::String(_) | cel::Value::Null) => None,
            Ok(other) => Some((
                key.clone(),
                Err(format!(
                    "valueExpression '{}' resulted in unsupported return type: {other:?}. Return type must be either string or null.",
                    expr.as_ref().map(|e| e.source.as_str()).unwrap_or_default()
                )),
            )),
            Err(_) if policy.ignore_failures => None,
            Err(e) => Some((key.clone(), Err(e))),
        })
        .collect();
    (decisions, annotations)
}

fn reason_code(reason: &str) -> (Reason, u16) {
    match reason {
        "Forbidden" => (Reason::Forbidden, 403),
        "Unauthorized" => (Reason::Unauthorized, 401),
        "RequestEntityTooLarge" => (Reason::RequestEntityTooLarge, 413),
        _ => (Reason::Invalid, 422),
    }
}

#[async_trait::async_trait]
impl Plugin for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionPolicy"
    }
    fn handles(&self, _op: Operation) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if EXEMPT.iter().any(|(g, r)| a.is(g, r)) {
            return Ok(());
        }
        let mut bindings = cluster
            .list(GROUP, "validatingadmissionpolicybindings", "")
            .await?;
        if bindings.is_empty() {
            return Ok(());
        }
        bindings.sort_by(|x, y| api::meta::name(x).cmp(&api::meta::name(y)));
        let mut policies = cluster
            .list(GROUP, "validatingadmissionpolicies", "")
            .await?;
        policies.sort_by(|x, y| api::meta::name(x).cmp(&api::meta::name(y)));
        let mut namespace = NamespaceLabels::default();
        // (policy, binding, decision) of the first denial.
        let mut denied: Option<(String, Option<String>, Decision)> = None;
        let mut deny = |policy: &str, binding: Option<&str>, d: Decision| {
            if denied.is_none() {
                denied = Some((policy.to_string(), binding.map(str::to_string), d));
            }
        };
        let mut base: Option<Vars> = None;
        for policy_obj in &policies {
            let policy_name = api::meta::name(policy_obj).unwrap_or_default();
            let mine: Vec<&Value> = bindings
                .iter()
                .map(|b| &**b)
                .filter(|b| b["spec"]["policyName"] == policy_name)
                .collect();
            if mine.is_empty() {
                continue;
            }
            let policy = self.policy(policy_obj);
            let config_error = |binding: Option<&str>, e: String| Decision {
                deny: !policy.ignore_failures,
                message: match binding {
                    Some(_) => format!("failed to configure binding: {e}"),
                    None => format!("failed to configure policy: {e}"),
                },
                reason: String::new(),
                index: 0,
            };
            if policy.match_constraints.is_null() {
                deny(
                    &policy.name,
                    None,
                    config_error(
                        None,
                        "policy contained no match constraints, a required field".into(),
                    ),
                );
                continue;
            }
            match criteria_match(&policy.match_constraints, a, cluster, &mut namespace).await {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    deny(&policy.name, None, config_error(None, e.message));
                    continue;
                }
            }
            let mut annotations: BTreeMap<String, Vec<String>> = BTreeMap::new();
            for binding in mine {
                let binding_name = api::meta::name(binding).unwrap_or_default().to_string();
                match criteria_match(
                    &binding["spec"]["matchResources"],
                    a,
                    cluster,
                    &mut namespace,
                )
                .await
                {
                    Ok(true) => {}
                    Ok(false) => continue,
                    Err(e) => {
                        deny(
                            &policy.name,
                            Some(&binding_name),
                            config_error(Some(&binding_name), e.message),
                        );
                        continue;
                    }
                }
                let params = match params_of(&policy, binding, a, cluster).await {
                    Ok(p) => p,
                    Err(e) => {
                        let d = config_error(Some(&binding_name), e);
                        if d.deny {
                            deny(&policy.name, Some(&binding_name), d);
                        }
                        continue;
                    }
                };
                if base.is_none() {
                    let ns_name = if a.resource.group.is_empty() && a.resource.kind == "namespaces"
                    {
                        ""
                    } else {
                        a.namespace.as_str()
                    };
                    let namespace_object = if ns_name.is_empty() {
                        Value::Null
                    } else {
                        match cluster.get("", "namespaces", "", ns_name).await? {
                            Some(ns) => namespace_value(&ns),
                            None => {
                                return Err(ApiError::not_found(
                                    api::status::GroupResource {
                                        group: "",
                                        resource: "namespaces",
                                    },
                                    ns_name,
                                ));
                            }
                        }
                    };
                    base = Some(Vars {
                        object: if a.operation == Operation::Delete {
                            Value::Null
                        } else {
                            a.object.clone().unwrap_or(Value::Null)
                        },
                        old_object: a.old_object.clone().unwrap_or(Value::Null),
                        request: request_value(a),
                        params: Value::Null,
                        namespace_object,
                        variables: json!({}),
                        variable_errors: BTreeMap::new(),
                    });
                }
                let Some(template) = base.as_ref() else {
                    continue;
                };
                let actions = strings(&binding["spec"], "validationActions");
                for param in params {
                    let mut vars = Vars {
                        object: template.object.clone(),
                        old_object: template.old_object.clone(),
                        request: template.request.clone(),
                        params: param,
                        namespace_object: template.namespace_object.clone(),
                        variables: json!({}),
                        variable_errors: BTreeMap::new(),
                    };
                    let (decisions, audit) = validate_one(&policy, &mut vars);
                    for d in decisions.into_iter().filter(|d| d.deny) {
                        for action in &actions {
                            match action.as_str() {
                                "Deny" => deny(
                                    &policy.name,
                                    Some(&binding_name),
                                    Decision {
                                        deny: true,
                                        message: d.message.clone(),
                                        reason: d.reason.clone(),
                                        index: d.index,
                                    },
                                ),
                                "Warn" => a.warnings.add(format!(
                                    "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{binding_name}': {}",
                                    policy.name, d.message
                                )),
                                "Audit" => a.audit_annotations.add(
                                    FAILURE_ANNOTATION,
                                    json!([{
                                        "message": d.message,
                                        "policy": policy.name,
                                        "binding": binding_name,
                                        "expressionIndex": d.index,
                                        "validationActions": actions,
                                    }])
                                    .to_string(),
                                ),
                                _ => {}
                            }
                        }
                    }
                    for (key, value) in audit {
                        match value {
                            Ok(v) => {
                                let list = annotations.entry(key).or_default();
                                if !list.contains(&v) {
                                    list.push(v);
                                }
                            }
                            Err(e) => deny(
                                &policy.name,
                                Some(&binding_name),
                                Decision {
                                    deny: true,
                                    message: e,
                                    reason: String::new(),
                                    index: 0,
                                },
                            ),
                        }
                    }
                }
            }
            for (key, values) in annotations {
                a.audit_annotations
                    .add(format!("{}/{key}", policy.name), values.join(", "));
            }
        }
        let Some((policy, binding, d)) = denied else {
            return Ok(());
        };
        let message = match binding {
            Some(b) => format!(
                "ValidatingAdmissionPolicy '{policy}' with binding '{b}' denied request: {}",
                d.message
            ),
            None => format!(
                "ValidatingAdmissionPolicy '{policy}' denied request: {}",
                d.message
            ),
        };
        let mut e = forbidden(a, &message);
        let (reason, code) = reason_code(&d.reason);
        e.reason = reason;
        e.code = code;
        e.push_cause(api::status::Cause {
            reason: String::new(),
            message,
            field: String::new(),
        });
        Err(e)
    }
}

#[cfg(test)]
mod tests;
