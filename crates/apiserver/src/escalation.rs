//! RBAC privilege-escalation prevention (upstream's policy-based storages of
//! `pkg/registry/rbac/{role,clusterrole,rolebinding,clusterrolebinding}/policybased`): a
//! user may write a role only with rules they hold themselves (or the `escalate` verb), and
//! bind a role only when they hold its rules (or the `bind` verb). Setting or keeping a
//! ClusterRole's `aggregationRule` needs `*` on everything.
//!
//! It runs in the admission chain's position upstream's storage wrappers take: after the
//! mutating plugins (on the object as it will be validated and stored), before validation.

use std::sync::Arc;

use admission::{Attributes, Cluster, Operation, Plugin};
use api::ApiError;
use api::k8s::api::rbac::v1::{PolicyRule, RoleRef};
use api::status::GroupResource;
use auth::Authorizer;
use auth::escalation::{
    binding_attributes, escalation_allowed, full_authority, role_escalation_attributes,
};
use serde_json::Value;

use crate::authz::CacheRbac;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// The escalation checks, over the server's authorizer chain and RBAC rule resolver.
pub struct Escalation {
    pub authorizer: Arc<auth::Union>,
    pub rbac: auth::RbacAuthorizer<Arc<CacheRbac>>,
}

/// `IsOnlyMutatingGCFields`: the update changes nothing but owner references, finalizers
/// and deletion fields (so an object on its way out can always be finalized).
fn only_gc_fields(new: &Value, old: &Value) -> bool {
    let strip = |v: &Value| {
        let mut v = v.clone();
        if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
            for f in [
                "ownerReferences",
                "finalizers",
                "selfLink",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "resourceVersion",
                "managedFields",
            ] {
                m.remove(f);
            }
        }
        v
    };
    strip(new) == strip(old)
}

fn rules_of(obj: &Value) -> Result<Vec<PolicyRule>, ApiError> {
    match obj.get("rules") {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(r) => serde_json::from_value(r.clone())
            .map_err(|e| ApiError::bad_request(format!("rules: {e}"))),
    }
}

fn has_aggregation_rule(obj: Option<&Value>) -> bool {
    obj.and_then(|o| o["aggregationRule"]["clusterRoleSelectors"].as_array())
        .is_some_and(|s| !s.is_empty())
}

impl Escalation {
    fn allowed(&self, a: &auth::Attributes) -> bool {
        self.authorizer.authorize(a).0 == auth::Decision::Allow
    }

    fn confirm(&self, a: &Attributes, rules: &[PolicyRule]) -> Result<(), String> {
        self.rbac
            .confirm_no_escalation(&a.user, &a.namespace, rules)
            .map_err(|e| e.to_string())
    }

    fn check_role(&self, a: &Attributes, obj: &Value) -> Result<(), String> {
        // `RoleEscalationAuthorized` asks with the request's name: none on a create.
        let url_name = if a.operation == Operation::Create {
            ""
        } else {
            a.name.as_str()
        };
        if let Some(attrs) = role_escalation_attributes(
            &a.user,
            &a.resource.group,
            &a.resource.kind,
            url_name,
            &a.namespace,
        ) && self.allowed(&attrs)
        {
            return Ok(());
        }
        if let (Operation::Update, Some(old)) = (a.operation, &a.old_object)
            && only_gc_fields(obj, old)
        {
            return Ok(());
        }
        self.confirm(a, &rules_of(obj).map_err(|e| e.message)?)?;
        if a.resource.kind == "clusterroles"
            && (has_aggregation_rule(Some(obj)) || has_aggregation_rule(a.old_object.as_ref()))
            && self.confirm(a, &full_authority()).is_err()
        {
            return Err("must have cluster-admin privileges to use the aggregationRule".into());
        }
        Ok(())
    }

    fn check_binding(&self, a: &Attributes, obj: &Value) -> Result<(), String> {
        if let (Operation::Update, Some(old)) = (a.operation, &a.old_object)
            && only_gc_fields(obj, old)
        {
            return Ok(());
        }
        let role_ref: RoleRef =
            serde_json::from_value(obj["roleRef"].clone()).map_err(|e| format!("roleRef: {e}"))?;
        if let Some(attrs) = binding_attributes(&a.user, &role_ref, &a.namespace)
            && self.allowed(&attrs)
        {
            return Ok(());
        }
        let rules = self
            .rbac
            .role_reference_rules(&role_ref, &a.namespace)
            .map_err(|e| e.to_string())?;
        self.confirm(a, &rules)
    }
}

#[async_trait::async_trait]
impl Plugin for Escalation {
    fn name(&self) -> &'static str {
        "RBACEscalationPrevention"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.resource.group != RBAC_GROUP || !a.subresource.is_empty() {
            return Ok(());
        }
        if escalation_allowed(&a.user) {
            return Ok(());
        }
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let verdict = match a.resource.kind.as_str() {
            "roles" | "clusterroles" => self.check_role(a, obj),
            "rolebindings" | "clusterrolebindings" => self.check_binding(a, obj),
            _ => Ok(()),
        };
        verdict.map_err(|reason| {
            let name = api::meta::name(obj).unwrap_or_default();
            ApiError::forbidden(
                GroupResource {
                    group: RBAC_GROUP,
                    resource: &a.resource.kind,
                },
                name,
                &reason,
            )
        })
    }
}
