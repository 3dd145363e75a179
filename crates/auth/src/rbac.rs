//! The RBAC authorizer: upstream's `plugin/pkg/auth/authorizer/rbac/rbac.go` over the
//! `DefaultRuleResolver` of `pkg/registry/rbac/validation/rule.go`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use api::gofmt::go_quote;
use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};

use crate::attributes::{
    Attributes, Decision, NonResourceRule, ResourceRule, UserInfo, UserRules,
    service_account_matches_username,
};
use crate::authorizer::Authorizer;
use crate::error::{AuthError, aggregate_messages};
use crate::rules::rule_allows;

/// `rbacv1.UserKind`.
pub const USER_KIND: &str = "User";
/// `rbacv1.GroupKind`.
pub const GROUP_KIND: &str = "Group";
/// `rbacv1.ServiceAccountKind`.
pub const SERVICE_ACCOUNT_KIND: &str = "ServiceAccount";
/// The RBAC API group (`rbacv1.GroupName`).
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";

/// A read-only view of the RBAC objects the authorizer resolves rules from (upstream's
/// `RoleGetter`, `RoleBindingLister`, `ClusterRoleGetter`, `ClusterRoleBindingLister`). The
/// API server implements it over its watch caches; [`StaticRbac`] is an in-memory one.
pub trait RbacSource: Send + Sync {
    /// The ClusterRole `name`, if it exists.
    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>>;
    /// The Role `namespace/name`, if it exists.
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>>;
    /// Every ClusterRoleBinding.
    fn cluster_role_bindings(&self) -> Vec<Arc<ClusterRoleBinding>>;
    /// Every RoleBinding in `namespace`.
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<RoleBinding>>;
}

impl<T: RbacSource + ?Sized> RbacSource for Arc<T> {
    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        (**self).cluster_role(name)
    }
    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        (**self).role(namespace, name)
    }
    fn cluster_role_bindings(&self) -> Vec<Arc<ClusterRoleBinding>> {
        (**self).cluster_role_bindings()
    }
    fn role_bindings(&self, namespace: &str) -> Vec<Arc<RoleBinding>> {
        (**self).role_bindings(namespace)
    }
}

/// An in-memory [`RbacSource`]: lists of objects, looked up by name. ClusterRole and
/// ClusterRoleBinding lists keep insertion order; a later object with the same name (and
/// namespace) replaces an earlier one.
#[derive(Clone, Debug, Default)]
pub struct StaticRbac {
    cluster_roles: BTreeMap<String, Arc<ClusterRole>>,
    roles: BTreeMap<(String, String), Arc<Role>>,
    cluster_role_bindings: Vec<Arc<ClusterRoleBinding>>,
    role_bindings: Vec<Arc<RoleBinding>>,
}

fn name_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn namespace_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> String {
    meta.namespace.clone().unwrap_or_default()
}

impl StaticRbac {
    /// An empty policy (every request gets no opinion).
    pub fn new() -> Self {
        StaticRbac::default()
    }

    /// Adds (or replaces) a ClusterRole.
    pub fn add_cluster_role(&mut self, role: ClusterRole) {
        self.cluster_roles
            .insert(name_of(&role.metadata), Arc::new(role));
    }

    /// Adds (or replaces) a Role.
    pub fn add_role(&mut self, role: Role) {
        let key = (namespace_of(&role.metadata), name_of(&role.metadata));
        self.roles.insert(key, Arc::new(role));
    }

    /// Adds (or replaces, by name) a ClusterRoleBinding.
    pub fn add_cluster_role_binding(&mut self, binding: ClusterRoleBinding) {
        let name = name_of(&binding.metadata);
        self.cluster_role_bindings
            .retain(|b| name.is_empty() || name_of(&b.metadata) != name);
        self.cluster_role_bindings.push(Arc::new(binding));
    }

    /// Adds (or replaces, by namespace and name) a RoleBinding.
    pub fn add_role_binding(&mut self, binding: RoleBinding) {
        let name = name_of(&binding.metadata);
        let namespace = namespace_of(&binding.metadata);
        self.role_bindings.retain(|b| {
            name.is_empty()
                || name_of(&b.metadata) != name
                || namespace_of(&b.metadata) != namespace
        });
        self.role_bindings.push(Arc::new(binding));
    }

    /// Builder form of [`StaticRbac::add_cluster_role`].
    #[must_use]
    pub fn with_cluster_role(mut self, role: ClusterRole) -> Self {
        self.add_cluster_role(role);
        self
    }

    /// Builder form of [`StaticRbac::add_role`].
    #[must_use]
    pub fn with_role(mut self, role: Role) -> Self {
        self.add_role(role);
        self
    }

    /// Builder form of [`StaticRbac::add_cluster_role_binding`].
    #[must_use]
    pub fn with_cluster_role_binding(mut self, binding: ClusterRoleBinding) -> Self {
        self.add_cluster_role_binding(binding);
        self
    }

    /// Builder form of [`StaticRbac::add_role_binding`].
    #[must_use]
    pub fn with_role_binding(mut self, binding: RoleBinding) -> Self {
        self.add_role_binding(binding);
        self
    }

    /// Every ClusterRole, by name.
    pub fn cluster_roles(&self) -> impl Iterator<Item = &Arc<ClusterRole>> {
        self.cluster_roles.values()
    }
}

impl RbacSource for StaticRbac {
    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        self.cluster_roles.get(name).cloned()
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        self.roles
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn cluster_role_bindings(&self) -> Vec<Arc<ClusterRoleBinding>> {
        self.cluster_role_bindings.clone()
    }

    fn role_bindings(&self, namespace: &str) -> Vec<Arc<RoleBinding>> {
        self.role_bindings
            .iter()
            .filter(|b| b.metadata.namespace.as_deref().unwrap_or("") == namespace)
            .cloned()
            .collect()
    }
}

/// Where a rule came from: the binding and the subject of it that matched the user.
/// `Display` is upstream's describer text, used in `RBAC: allowed by ...` reasons.
#[derive(Clone, Copy, Debug)]
pub enum RuleSource<'a> {
    /// A rule granted through a ClusterRoleBinding.
    ClusterRoleBinding {
        /// The binding.
        binding: &'a ClusterRoleBinding,
        /// Its first subject that applies to the user.
        subject: &'a Subject,
    },
    /// A rule granted through a RoleBinding.
    RoleBinding {
        /// The binding.
        binding: &'a RoleBinding,
        /// Its first subject that applies to the user.
        subject: &'a Subject,
    },
}

fn describe_subject(s: &Subject, binding_namespace: &str) -> String {
    if s.kind == SERVICE_ACCOUNT_KIND {
        let ns = match s.namespace.as_deref() {
            Some(ns) if !ns.is_empty() => ns,
            _ => binding_namespace,
        };
        return format!("{} {}", s.kind, go_quote(&format!("{}/{}", s.name, ns)));
    }
    format!("{} {}", s.kind, go_quote(&s.name))
}

impl fmt::Display for RuleSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RuleSource::ClusterRoleBinding { binding, subject } => write!(
                f,
                "ClusterRoleBinding {} of {} {} to {}",
                go_quote(binding.metadata.name.as_deref().unwrap_or("")),
                binding.role_ref.kind,
                go_quote(&binding.role_ref.name),
                describe_subject(subject, "")
            ),
            RuleSource::RoleBinding { binding, subject } => {
                let ns = binding.metadata.namespace.as_deref().unwrap_or("");
                write!(
                    f,
                    "RoleBinding {} of {} {} to {}",
                    go_quote(&format!(
                        "{}/{}",
                        binding.metadata.name.as_deref().unwrap_or(""),
                        ns
                    )),
                    binding.role_ref.kind,
                    go_quote(&binding.role_ref.name),
                    describe_subject(subject, ns)
                )
            }
        }
    }
}

/// What the rule visitor sees: a rule with its source, or an error met while resolving.
#[derive(Debug)]
pub enum Visit<'a> {
    /// A rule the user holds.
    Rule {
        /// The binding that grants it.
        source: RuleSource<'a>,
        /// The rule.
        rule: &'a PolicyRule,
    },
    /// A binding whose role could not be resolved.
    Error(AuthError),
}

/// `appliesToUser`: whether one binding subject designates the user. A ServiceAccount
/// subject without a namespace takes the binding's namespace (`namespace`, empty for
/// ClusterRoleBindings, in which case it applies to nobody).
pub fn applies_to_user(user: &UserInfo, subject: &Subject, namespace: &str) -> bool {
    match subject.kind.as_str() {
        USER_KIND => user.name == subject.name,
        GROUP_KIND => user.in_group(&subject.name),
        SERVICE_ACCOUNT_KIND => {
            let sa_namespace = match subject.namespace.as_deref() {
                Some(ns) if !ns.is_empty() => ns,
                _ => namespace,
            };
            !sa_namespace.is_empty()
                && service_account_matches_username(sa_namespace, &subject.name, &user.name)
        }
        _ => false,
    }
}

/// `appliesTo`: the index of the first subject designating the user, if any.
pub fn applies_to(user: &UserInfo, subjects: &[Subject], namespace: &str) -> Option<usize> {
    subjects
        .iter()
        .position(|s| applies_to_user(user, s, namespace))
}

/// The rules a user holds in a namespace and the errors met while resolving them
/// (upstream's `RulesFor` result: the rules are valid even when errors were met).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ResolvedRules {
    /// Every rule granted, in binding order (ClusterRoleBindings first).
    pub rules: Vec<PolicyRule>,
    /// The role references that could not be resolved.
    pub errors: Vec<AuthError>,
}

impl ResolvedRules {
    /// The errors as upstream's aggregate text, `None` when there were none.
    pub fn error_message(&self) -> Option<String> {
        aggregate_messages(self.errors.iter().map(ToString::to_string))
    }
}

/// The RBAC authorizer over an [`RbacSource`]. Allows a request when any rule the user holds
/// (through ClusterRoleBindings, then RoleBindings in the request's namespace) allows it;
/// otherwise it has no opinion. Never denies.
#[derive(Clone, Debug)]
pub struct RbacAuthorizer<S> {
    source: S,
}

/// The rules of a role reference, borrowed from the role object that holds them.
enum RoleRules {
    Role(Arc<Role>),
    ClusterRole(Arc<ClusterRole>),
}

impl RoleRules {
    fn rules(&self) -> &[PolicyRule] {
        let rules = match self {
            RoleRules::Role(r) => &r.rules,
            RoleRules::ClusterRole(r) => &r.rules,
        };
        rules.as_deref().unwrap_or(&[])
    }
}

impl<S: RbacSource> RbacAuthorizer<S> {
    /// An authorizer reading policy from `source`.
    pub fn new(source: S) -> Self {
        RbacAuthorizer { source }
    }

    /// The policy source.
    pub fn source(&self) -> &S {
        &self.source
    }

    fn role_ref_rules(&self, role_ref: &RoleRef, namespace: &str) -> Result<RoleRules, AuthError> {
        match role_ref.kind.as_str() {
            "Role" => self
                .source
                .role(namespace, &role_ref.name)
                .map(RoleRules::Role)
                .ok_or_else(|| AuthError::RoleNotFound {
                    resource: "role",
                    name: role_ref.name.clone(),
                }),
            "ClusterRole" => self
                .source
                .cluster_role(&role_ref.name)
                .map(RoleRules::ClusterRole)
                .ok_or_else(|| AuthError::RoleNotFound {
                    resource: "clusterrole",
                    name: role_ref.name.clone(),
                }),
            other => Err(AuthError::UnsupportedRoleRefKind(other.to_string())),
        }
    }

    /// `GetRoleReferenceRules`: the rules of the role a binding refers to. `namespace` is the
    /// binding's namespace (empty for a ClusterRoleBinding).
    pub fn role_reference_rules(
        &self,
        role_ref: &RoleRef,
        namespace: &str,
    ) -> Result<Vec<PolicyRule>, AuthError> {
        self.role_ref_rules(role_ref, namespace)
            .map(|r| r.rules().to_vec())
    }

    /// `VisitRulesFor`: calls `visitor` with each rule `user` holds in `namespace` (cluster
    /// bindings first, then the namespace's role bindings, in listing order) and each
    /// resolution error; stops as soon as `visitor` returns false.
    pub fn visit_rules_for(
        &self,
        user: &UserInfo,
        namespace: &str,
        visitor: &mut dyn FnMut(Visit<'_>) -> bool,
    ) {
        for binding in self.source.cluster_role_bindings() {
            let subjects = binding.subjects.as_deref().unwrap_or(&[]);
            let Some(index) = applies_to(user, subjects, "") else {
                continue;
            };
            let role = match self.role_ref_rules(&binding.role_ref, "") {
                Ok(role) => role,
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                    continue;
                }
            };
            let source = RuleSource::ClusterRoleBinding {
                binding: &binding,
                subject: &subjects[index],
            };
            for rule in role.rules() {
                if !visitor(Visit::Rule { source, rule }) {
                    return;
                }
            }
        }

        if namespace.is_empty() {
            return;
        }
        for binding in self.source.role_bindings(namespace) {
            let subjects = binding.subjects.as_deref().unwrap_or(&[]);
            let Some(index) = applies_to(user, subjects, namespace) else {
                continue;
            };
            let role = match self.role_ref_rules(&binding.role_ref, namespace) {
                Ok(role) => role,
                Err(e) => {
                    if !visitor(Visit::Error(e)) {
                        return;
                    }
                    continue;
                }
            };
            let source = RuleSource::RoleBinding {
                binding: &binding,
                subject: &subjects[index],
            };
            for rule in role.rules() {
                if !visitor(Visit::Rule { source, rule }) {
                    return;
                }
            }
        }
    }

    /// `RulesFor` of the rule resolver: every rule `user` holds in `namespace`, plus the
    /// resolution errors.
    pub fn resolve_rules(&self, user: &UserInfo, namespace: &str) -> ResolvedRules {
        let mut out = ResolvedRules::default();
        self.visit_rules_for(user, namespace, &mut |visit| {
            match visit {
                Visit::Rule { rule, .. } => out.rules.push(rule.clone()),
                Visit::Error(e) => out.errors.push(e),
            }
            true
        });
        out
    }

    /// `ConfirmNoEscalation` for this policy: `Ok` when the rules `user` holds in
    /// `namespace` cover `requested`, otherwise upstream's escalation error.
    pub fn confirm_no_escalation(
        &self,
        user: &UserInfo,
        namespace: &str,
        requested: &[PolicyRule],
    ) -> Result<(), AuthError> {
        let owner = self.resolve_rules(user, namespace);
        crate::escalation::confirm_no_escalation(user, &owner, requested)
    }
}

impl<S: RbacSource> Authorizer for RbacAuthorizer<S> {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        let mut allowed_by: Option<String> = None;
        let mut errors: Vec<String> = Vec::new();
        self.visit_rules_for(&attributes.user, &attributes.namespace, &mut |visit| {
            match visit {
                Visit::Rule { source, rule } => {
                    if rule_allows(attributes, rule) {
                        allowed_by = Some(format!("RBAC: allowed by {source}"));
                        return false;
                    }
                }
                Visit::Error(e) => errors.push(e.to_string()),
            }
            true
        });
        if let Some(reason) = allowed_by {
            return (Decision::Allow, reason);
        }
        let reason = aggregate_messages(errors)
            .map(|e| format!("RBAC: {e}"))
            .unwrap_or_default();
        (Decision::NoOpinion, reason)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let resolved = self.resolve_rules(user, namespace);
        let mut out = UserRules {
            evaluation_error: resolved.error_message(),
            ..UserRules::default()
        };
        for rule in resolved.rules {
            let resources = rule.resources.unwrap_or_default();
            let urls = rule.non_resource_urls.unwrap_or_default();
            if !resources.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: rule.verbs.clone(),
                    api_groups: rule.api_groups.unwrap_or_default(),
                    resources,
                    resource_names: rule.resource_names.unwrap_or_default(),
                });
            }
            if !urls.is_empty() {
                out.non_resource_rules.push(NonResourceRule {
                    verbs: rule.verbs,
                    non_resource_urls: urls,
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::new_rule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    /// `newRule("verbs", "groups", "resources", "urls")` of upstream's tests: comma lists,
    /// where an empty string is one empty element (as `strings.Split` gives).
    fn rule(verbs: &str, groups: &str, resources: &str, urls: &str) -> PolicyRule {
        let split = |s: &str| Some(s.split(',').map(str::to_string).collect::<Vec<_>>());
        PolicyRule {
            verbs: s_split(verbs),
            api_groups: split(groups),
            resources: split(resources),
            non_resource_urls: split(urls),
            resource_names: None,
        }
    }

    fn s_split(s: &str) -> Vec<String> {
        s.split(',').map(str::to_string).collect()
    }

    fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_string()),
            namespace: namespace.map(str::to_string),
            ..ObjectMeta::default()
        }
    }

    fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: meta(name, None),
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn role(namespace: &str, name: &str, rules: Vec<PolicyRule>) -> Role {
        Role {
            metadata: meta(name, Some(namespace)),
            rules: Some(rules),
        }
    }

    /// Subjects written `Kind:name` (and `ServiceAccount:ns:name` for a namespaced SA).
    fn subjects(list: &[&str]) -> Vec<Subject> {
        list.iter()
            .map(|s| {
                let (kind, rest) = s.split_once(':').unwrap_or((s, ""));
                match kind {
                    SERVICE_ACCOUNT_KIND => {
                        let (ns, name) = match rest.split_once(':') {
                            Some((ns, name)) => (Some(ns.to_string()), name),
                            None => (None, rest),
                        };
                        Subject {
                            kind: kind.into(),
                            name: name.into(),
                            namespace: ns,
                            api_group: Some(String::new()),
                        }
                    }
                    _ => Subject {
                        kind: kind.into(),
                        name: rest.into(),
                        namespace: None,
                        api_group: Some(RBAC_GROUP.into()),
                    },
                }
            })
            .collect()
    }

    fn crb(name: &str, role: &str, subs: &[&str]) -> ClusterRoleBinding {
        ClusterRoleBinding {
            metadata: meta(name, None),
            role_ref: RoleRef {
                api_group: RBAC_GROUP.into(),
                kind: "ClusterRole".into(),
                name: role.into(),
            },
            subjects: Some(subjects(subs)),
        }
    }

    fn rb(namespace: &str, name: &str, kind: &str, role: &str, subs: &[&str]) -> RoleBinding {
        RoleBinding {
            metadata: meta(name, Some(namespace)),
            role_ref: RoleRef {
                api_group: RBAC_GROUP.into(),
                kind: kind.into(),
                name: role.into(),
            },
            subjects: Some(subjects(subs)),
        }
    }

    fn user(name: &str, groups: &str) -> UserInfo {
        UserInfo::new(name, groups.split(',').filter(|g| !g.is_empty()))
    }

    fn res(u: &UserInfo, verb: &str, resource: &str, sub: &str, ns: &str) -> Attributes {
        Attributes::resource(u.clone(), verb, "", resource)
            .with_subresource(sub)
            .in_namespace(ns)
    }

    // Upstream's TestAuthorizer table.
    #[test]
    fn authorizer_table() {
        // Case 1: a ClusterRole bound in ns1 through a RoleBinding.
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role("admin", vec![rule("*", "*", "*", "*")]))
            .with_role_binding(rb(
                "ns1",
                "admin",
                "ClusterRole",
                "admin",
                &["User:admin", "Group:admins"],
            ));
        let a = RbacAuthorizer::new(src);
        let pass = [
            res(&user("admin", ""), "get", "Pods", "", "ns1"),
            res(&user("admin", ""), "watch", "Pods", "", "ns1"),
            res(&user("admin", "group1"), "watch", "Foobar", "", "ns1"),
            res(&user("joe", "admins"), "watch", "Foobar", "", "ns1"),
            res(&user("joe", "group1,admins"), "watch", "Foobar", "", "ns1"),
        ];
        let fail = [
            res(&user("admin", ""), "GET", "Pods", "", "ns2"),
            res(&user("admin", ""), "GET", "Nodes", "", ""),
            res(&user("admin", "admins"), "GET", "Pods", "", "ns2"),
            res(&user("admin", "admins"), "GET", "Nodes", "", ""),
        ];
        for attrs in &pass {
            assert_eq!(a.authorize(attrs).0, Decision::Allow, "{attrs:?}");
        }
        for attrs in &fail {
            assert_eq!(a.authorize(attrs).0, Decision::NoOpinion, "{attrs:?}");
        }

        // Case 2: non-resource URLs through ClusterRoleBindings.
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role(
                "non-resource-url-getter",
                vec![rule("get", "", "", "/apis")],
            ))
            .with_cluster_role(cluster_role(
                "non-resource-url",
                vec![rule("*", "", "", "/apis")],
            ))
            .with_cluster_role(cluster_role(
                "non-resource-url-prefix",
                vec![rule("get", "", "", "/apis/*")],
            ))
            .with_cluster_role_binding(crb(
                "a",
                "non-resource-url-getter",
                &["User:foo", "Group:bar"],
            ))
            .with_cluster_role_binding(crb("b", "non-resource-url", &["User:admin", "Group:admin"]))
            .with_cluster_role_binding(crb(
                "c",
                "non-resource-url-prefix",
                &["User:prefixed", "Group:prefixed"],
            ));
        let a = RbacAuthorizer::new(src);
        let nr = |u: UserInfo, verb: &str, path: &str| Attributes::non_resource(u, verb, path);
        let pass = [
            nr(user("foo", ""), "get", "/apis"),
            nr(user("", "bar"), "get", "/apis"),
            nr(user("admin", ""), "get", "/apis"),
            nr(user("", "admin"), "get", "/apis"),
            nr(user("admin", ""), "watch", "/apis"),
            nr(user("", "admin"), "watch", "/apis"),
            nr(user("prefixed", ""), "get", "/apis/v1"),
            nr(user("", "prefixed"), "get", "/apis/v1"),
            nr(user("prefixed", ""), "get", "/apis/v1/foobar"),
            nr(user("", "prefixed"), "get", "/apis/v1/foorbar"),
        ];
        let fail = [
            nr(user("foo", ""), "watch", "/apis"),
            nr(user("", "bar"), "watch", "/apis"),
            nr(user("foo", ""), "get", "/api/v1"),
            nr(user("", "bar"), "get", "/api/v1"),
            nr(user("admin", ""), "get", "/api/v1"),
            nr(user("", "admin"), "get", "/api/v1"),
            nr(user("prefixed", ""), "get", "/api/v1"),
            nr(user("", "prefixed"), "get", "/api/v1"),
        ];
        for attrs in &pass {
            assert_eq!(a.authorize(attrs).0, Decision::Allow, "{attrs:?}");
        }
        for attrs in &fail {
            assert_eq!(a.authorize(attrs).0, Decision::NoOpinion, "{attrs:?}");
        }

        // Cases 3 and 4: subresource resolution.
        for (resources, pass_sub, fail_sub) in
            [("pods", "", "status"), ("pods/status", "status", "")]
        {
            let src = StaticRbac::new()
                .with_cluster_role(cluster_role("admin", vec![rule("*", "*", resources, "*")]))
                .with_role_binding(rb(
                    "ns1",
                    "admin",
                    "ClusterRole",
                    "admin",
                    &["User:admin", "Group:admins"],
                ));
            let a = RbacAuthorizer::new(src);
            let admin = user("admin", "");
            assert_eq!(
                a.authorize(&res(&admin, "get", "pods", pass_sub, "ns1")).0,
                Decision::Allow
            );
            assert_eq!(
                a.authorize(&res(&admin, "get", "pods", fail_sub, "ns1")).0,
                Decision::NoOpinion
            );
        }
    }

    #[test]
    fn allow_reasons_name_binding_role_and_subject() {
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role(
                "reader",
                vec![
                    new_rule(&["get"])
                        .groups(&[""])
                        .resources(&["pods"])
                        .build(),
                ],
            ))
            .with_role(role(
                "ns1",
                "writer",
                vec![
                    new_rule(&["create"])
                        .groups(&[""])
                        .resources(&["pods"])
                        .build(),
                ],
            ))
            .with_cluster_role_binding(crb("read-all", "reader", &["User:alice", "Group:g"]))
            .with_role_binding(rb(
                "ns1",
                "write",
                "Role",
                "writer",
                &["Group:other", "ServiceAccount:builder"],
            ));
        let a = RbacAuthorizer::new(src);
        let alice = user("alice", "");
        assert_eq!(
            a.authorize(&res(&alice, "get", "pods", "", "ns1")),
            (
                Decision::Allow,
                r#"RBAC: allowed by ClusterRoleBinding "read-all" of ClusterRole "reader" to User "alice""#
                    .to_string()
            )
        );
        let bob = user("bob", "g");
        assert_eq!(
            a.authorize(&res(&bob, "get", "pods", "", "")).1,
            r#"RBAC: allowed by ClusterRoleBinding "read-all" of ClusterRole "reader" to Group "g""#
        );
        let sa = UserInfo::service_account("ns1", "builder");
        assert_eq!(
            a.authorize(&res(&sa, "create", "pods", "", "ns1")),
            (
                Decision::Allow,
                r#"RBAC: allowed by RoleBinding "write/ns1" of Role "writer" to ServiceAccount "builder/ns1""#
                    .to_string()
            )
        );
        // The RoleBinding only counts in its own namespace.
        assert_eq!(
            a.authorize(&res(&sa, "create", "pods", "", "ns2")),
            (Decision::NoOpinion, String::new())
        );
    }

    #[test]
    fn missing_roles_are_reported_but_do_not_block() {
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role(
                "reader",
                vec![
                    new_rule(&["get"])
                        .groups(&[""])
                        .resources(&["pods"])
                        .build(),
                ],
            ))
            .with_cluster_role_binding(crb("gone", "missing", &["User:alice"]))
            .with_cluster_role_binding(crb("read", "reader", &["User:alice"]))
            .with_role_binding(rb("ns1", "gone-role", "Role", "nope", &["User:alice"]))
            .with_role_binding(rb("ns1", "weird", "Thing", "x", &["User:alice"]));
        let a = RbacAuthorizer::new(src);
        let alice = user("alice", "");
        // Allowed despite the broken binding listed first.
        assert_eq!(
            a.authorize(&res(&alice, "get", "pods", "", "ns1")).0,
            Decision::Allow
        );
        assert_eq!(
            a.authorize(&res(&alice, "delete", "pods", "", "ns1")),
            (
                Decision::NoOpinion,
                r#"RBAC: [clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "nope" not found, unsupported role reference kind: "Thing"]"#
                    .to_string()
            )
        );
        assert_eq!(
            a.authorize(&res(&alice, "delete", "pods", "", "")),
            (
                Decision::NoOpinion,
                r#"RBAC: clusterrole.rbac.authorization.k8s.io "missing" not found"#.to_string()
            )
        );
        let rules = a.rules_for(&alice, "ns1");
        assert_eq!(rules.resource_rules.len(), 1);
        assert!(!rules.incomplete);
        assert_eq!(
            rules.evaluation_error.as_deref(),
            Some(
                r#"[clusterrole.rbac.authorization.k8s.io "missing" not found, role.rbac.authorization.k8s.io "nope" not found, unsupported role reference kind: "Thing"]"#
            )
        );
    }

    // appliesTo cases (upstream's rule_test TestAppliesTo).
    #[test]
    fn applies_to_subjects() {
        type Case = (
            &'static str,
            Vec<Subject>,
            UserInfo,
            &'static str,
            Option<usize>,
        );
        let cases: Vec<Case> = vec![
            (
                "single subject that matches username",
                subjects(&["User:foobar"]),
                user("foobar", ""),
                "",
                Some(0),
            ),
            (
                "multiple subjects, one that matches username",
                subjects(&["User:barfoo", "User:foobar"]),
                user("foobar", ""),
                "",
                Some(1),
            ),
            (
                "multiple subjects, none that match username",
                subjects(&["User:barfoo", "User:foobar"]),
                user("zimzam", ""),
                "",
                None,
            ),
            (
                "multiple subjects, one that matches group",
                subjects(&["Group:barfoo", "Group:foobar"]),
                user("zimzam", "foobar"),
                "",
                Some(1),
            ),
            (
                "multiple subjects, one that matches group, should ignore namespace",
                subjects(&["Group:barfoo", "Group:foobar"]),
                user("zimzam", "foobar"),
                "namespace1",
                Some(1),
            ),
            (
                "multiple subjects, one that matches group, one that matches service account",
                subjects(&[
                    "Group:barfoo",
                    "Group:foobar",
                    "ServiceAccount:kube-system:default",
                ]),
                user("system:serviceaccount:kube-system:default", ""),
                "default",
                Some(2),
            ),
            (
                "service account with no namespace in the binding's namespace",
                subjects(&["ServiceAccount:default"]),
                user("system:serviceaccount:default:default", ""),
                "default",
                Some(0),
            ),
            (
                "service account with no namespace in a cluster binding",
                subjects(&["ServiceAccount:default"]),
                user("system:serviceaccount:default:default", ""),
                "",
                None,
            ),
            (
                "service account in another namespace",
                subjects(&["ServiceAccount:other:default"]),
                user("system:serviceaccount:default:default", ""),
                "default",
                None,
            ),
            (
                "user names are not service accounts",
                subjects(&["User:default"]),
                user("system:serviceaccount:default:default", ""),
                "default",
                None,
            ),
            (
                "unknown kinds never apply",
                vec![Subject {
                    kind: "Robot".into(),
                    name: "foobar".into(),
                    ..Subject::default()
                }],
                user("foobar", "foobar"),
                "ns",
                None,
            ),
        ];
        for (name, subs, u, ns, want) in cases {
            assert_eq!(applies_to(&u, &subs, ns), want, "{name}");
        }
    }

    #[test]
    fn service_account_groups_match_group_subjects() {
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role(
                "r",
                vec![
                    new_rule(&["get"])
                        .groups(&[""])
                        .resources(&["pods"])
                        .build(),
                ],
            ))
            .with_role_binding(rb(
                "ns1",
                "sas",
                "ClusterRole",
                "r",
                &["Group:system:serviceaccounts:ns1"],
            ))
            .with_role_binding(rb(
                "ns2",
                "all-sas",
                "ClusterRole",
                "r",
                &["Group:system:serviceaccounts"],
            ));
        let a = RbacAuthorizer::new(src);
        let sa1 = UserInfo::service_account("ns1", "x");
        let sa3 = UserInfo::service_account("ns3", "x");
        assert_eq!(
            a.authorize(&res(&sa1, "get", "pods", "", "ns1")).0,
            Decision::Allow
        );
        assert_eq!(
            a.authorize(&res(&sa3, "get", "pods", "", "ns1")).0,
            Decision::NoOpinion
        );
        assert_eq!(
            a.authorize(&res(&sa3, "get", "pods", "", "ns2")).0,
            Decision::Allow
        );
    }

    #[test]
    fn rules_for_splits_resource_and_non_resource_rules() {
        let src = StaticRbac::new()
            .with_cluster_role(cluster_role(
                "mixed",
                vec![
                    new_rule(&["get"])
                        .groups(&[""])
                        .resources(&["pods"])
                        .build(),
                    new_rule(&["get"]).urls(&["/healthz"]).build(),
                    // A malformed rule with both halves is reported in both lists.
                    rule("list", "", "nodes", "/x"),
                ],
            ))
            .with_cluster_role_binding(crb("m", "mixed", &["Group:g"]));
        let a = RbacAuthorizer::new(src);
        let rules = a.rules_for(&user("u", "g"), "");
        assert_eq!(
            rules.resource_rules,
            vec![
                ResourceRule {
                    verbs: vec!["get".into()],
                    api_groups: vec!["".into()],
                    resources: vec!["pods".into()],
                    resource_names: vec![],
                },
                ResourceRule {
                    verbs: vec!["list".into()],
                    api_groups: vec!["".into()],
                    resources: vec!["nodes".into()],
                    resource_names: vec![],
                },
            ]
        );
        assert_eq!(
            rules.non_resource_rules,
            vec![
                NonResourceRule {
                    verbs: vec!["get".into()],
                    non_resource_urls: vec!["/healthz".into()],
                },
                NonResourceRule {
                    verbs: vec!["list".into()],
                    non_resource_urls: vec!["/x".into()],
                },
            ]
        );
        assert_eq!(rules.evaluation_error, None);
        assert_eq!(a.rules_for(&user("v", ""), ""), UserRules::default());
    }

    #[test]
    fn static_rbac_replaces_by_name() {
        let mut src = StaticRbac::new();
        src.add_cluster_role_binding(crb("b", "r1", &["User:a"]));
        src.add_cluster_role_binding(crb("b", "r2", &["User:a"]));
        src.add_role_binding(rb("ns", "b", "Role", "r1", &["User:a"]));
        src.add_role_binding(rb("other", "b", "Role", "r1", &["User:a"]));
        src.add_role_binding(rb("ns", "b", "Role", "r2", &["User:a"]));
        let crbs = src.cluster_role_bindings();
        assert_eq!(crbs.len(), 1);
        assert_eq!(crbs[0].role_ref.name, "r2");
        let rbs = src.role_bindings("ns");
        assert_eq!(rbs.len(), 1);
        assert_eq!(rbs[0].role_ref.name, "r2");
        assert_eq!(src.role_bindings("other").len(), 1);
        src.add_role(role("ns", "r", vec![]));
        assert!(src.role("ns", "r").is_some());
        assert!(src.role("other", "r").is_none());
    }

    #[test]
    fn cluster_role_binding_to_role_kind_is_not_found() {
        // A ClusterRoleBinding referring to a Role looks it up with an empty namespace.
        let mut binding = crb("b", "r", &["User:a"]);
        binding.role_ref.kind = "Role".into();
        let src = StaticRbac::new()
            .with_role(role("ns", "r", vec![rule("*", "*", "*", "*")]))
            .with_cluster_role_binding(binding);
        let a = RbacAuthorizer::new(src);
        assert_eq!(
            a.authorize(&res(&user("a", ""), "get", "pods", "", "ns")),
            (
                Decision::NoOpinion,
                r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.to_string()
            )
        );
    }
}
