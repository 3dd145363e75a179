//! Policy-rule matching and construction: upstream's `pkg/apis/rbac/v1/evaluation_helpers.go`
//! (`VerbMatches`, `APIGroupMatches`, `ResourceMatches`, `ResourceNameMatches`,
//! `NonResourceURLMatches`, `CompactString`), `RuleAllows` from the RBAC authorizer, and the
//! `PolicyRuleBuilder` of `pkg/apis/rbac/v1/helpers.go`.

use k8s_openapi::api::rbac::v1::PolicyRule;

use crate::attributes::Attributes;
use crate::error::AuthError;
use crate::gofmt::quote_slice;

/// `rbacv1.VerbAll`.
pub const VERB_ALL: &str = "*";
/// `rbacv1.APIGroupAll`.
pub const API_GROUP_ALL: &str = "*";
/// `rbacv1.ResourceAll`.
pub const RESOURCE_ALL: &str = "*";
/// `rbacv1.NonResourceAll`.
pub const NON_RESOURCE_ALL: &str = "*";

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or(&[])
}

/// `VerbMatches`: the rule lists `*` or the verb itself.
pub fn verb_matches(rule: &PolicyRule, requested_verb: &str) -> bool {
    rule.verbs
        .iter()
        .any(|v| v == VERB_ALL || v == requested_verb)
}

/// `APIGroupMatches`: the rule lists `*` or the group itself.
pub fn api_group_matches(rule: &PolicyRule, requested_group: &str) -> bool {
    list(&rule.api_groups)
        .iter()
        .any(|g| g == API_GROUP_ALL || g == requested_group)
}

/// `ResourceMatches`: `combined_requested_resource` is `resource` or `resource/subresource`.
/// A rule resource matches when it is `*`, equal to the combined resource, or (for a
/// subresource request) exactly `*/<subresource>`.
pub fn resource_matches(
    rule: &PolicyRule,
    combined_requested_resource: &str,
    requested_subresource: &str,
) -> bool {
    list(&rule.resources).iter().any(|r| {
        if r == RESOURCE_ALL || r == combined_requested_resource {
            return true;
        }
        !requested_subresource.is_empty()
            && r.len() == requested_subresource.len() + 2
            && r.starts_with("*/")
            && r.ends_with(requested_subresource)
    })
}

/// `ResourceNameMatches`: a rule without resource names matches every name; otherwise the
/// name must be listed (so a request without a name, such as `list`, does not match a rule
/// limited to names).
pub fn resource_name_matches(rule: &PolicyRule, requested_name: &str) -> bool {
    let names = list(&rule.resource_names);
    names.is_empty() || names.iter().any(|n| n == requested_name)
}

/// `NonResourceURLMatches`: `*`, the exact path, or a rule URL ending in `*` whose prefix
/// (the URL with its trailing `*`s removed) starts the requested path.
pub fn non_resource_url_matches(rule: &PolicyRule, requested_url: &str) -> bool {
    list(&rule.non_resource_urls)
        .iter()
        .any(|u| non_resource_path_matches(u, requested_url))
}

/// One non-resource URL pattern against a path (shared by RBAC and ABAC).
pub(crate) fn non_resource_path_matches(pattern: &str, path: &str) -> bool {
    pattern == NON_RESOURCE_ALL
        || pattern == path
        || (pattern.ends_with('*') && path.starts_with(pattern.trim_end_matches('*')))
}

/// `RuleAllows`: whether one rule allows the request.
pub fn rule_allows(attributes: &Attributes, rule: &PolicyRule) -> bool {
    if attributes.resource_request {
        let combined = if attributes.subresource.is_empty() {
            attributes.resource.clone()
        } else {
            format!("{}/{}", attributes.resource, attributes.subresource)
        };
        return verb_matches(rule, &attributes.verb)
            && api_group_matches(rule, &attributes.api_group)
            && resource_matches(rule, &combined, &attributes.subresource)
            && resource_name_matches(rule, &attributes.name);
    }
    verb_matches(rule, &attributes.verb) && non_resource_url_matches(rule, &attributes.path)
}

/// `RulesAllow`: whether any of the rules allows the request.
pub fn rules_allow(attributes: &Attributes, rules: &[PolicyRule]) -> bool {
    rules.iter().any(|r| rule_allows(attributes, r))
}

/// `CompactString`: the short form used in escalation errors, such as
/// `{APIGroups:["apps"], Resources:["deployments"], Verbs:["create" "delete"]}`; empty
/// fields are left out.
pub fn compact_string(rule: &PolicyRule) -> String {
    let mut parts = Vec::new();
    for (label, values) in [
        ("APIGroups", list(&rule.api_groups)),
        ("Resources", list(&rule.resources)),
        ("NonResourceURLs", list(&rule.non_resource_urls)),
        ("ResourceNames", list(&rule.resource_names)),
        ("Verbs", rule.verbs.as_slice()),
    ] {
        if !values.is_empty() {
            parts.push(format!("{label}:{}", quote_slice(values)));
        }
    }
    format!("{{{}}}", parts.join(", "))
}

/// `rbacv1helpers.String`: `PolicyRule` followed by the compact form.
pub fn rule_string(rule: &PolicyRule) -> String {
    format!("PolicyRule{}", compact_string(rule))
}

/// `equality.Semantic.DeepEqual` on two rules: like `==`, but an absent list equals an
/// empty one.
pub fn rules_semantically_equal(a: &PolicyRule, b: &PolicyRule) -> bool {
    a.verbs == b.verbs
        && list(&a.api_groups) == list(&b.api_groups)
        && list(&a.resources) == list(&b.resources)
        && list(&a.resource_names) == list(&b.resource_names)
        && list(&a.non_resource_urls) == list(&b.non_resource_urls)
}

/// `equality.Semantic.DeepEqual` on two rule lists (absent and empty lists are equal).
pub fn rule_lists_semantically_equal(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| rules_semantically_equal(x, y))
}

/// Builds a [`PolicyRule`] the way upstream's bootstrap policy writes them
/// (`rbacv1helpers.NewRule(verbs...).Groups(...).Resources(...).RuleOrDie()`): every list
/// comes out sorted.
#[derive(Clone, Debug, Default)]
pub struct PolicyRuleBuilder {
    verbs: Vec<String>,
    api_groups: Vec<String>,
    resources: Vec<String>,
    resource_names: Vec<String>,
    non_resource_urls: Vec<String>,
}

fn strings(values: &[&str]) -> Vec<String> {
    values.iter().map(|s| (*s).to_string()).collect()
}

impl PolicyRuleBuilder {
    /// `NewRule(verbs...)`.
    pub fn new(verbs: &[&str]) -> Self {
        PolicyRuleBuilder {
            verbs: strings(verbs),
            ..PolicyRuleBuilder::default()
        }
    }

    /// Adds API groups.
    #[must_use]
    pub fn groups(mut self, groups: &[&str]) -> Self {
        self.api_groups.extend(strings(groups));
        self
    }

    /// Adds resources.
    #[must_use]
    pub fn resources(mut self, resources: &[&str]) -> Self {
        self.resources.extend(strings(resources));
        self
    }

    /// Adds resource names.
    #[must_use]
    pub fn names(mut self, names: &[&str]) -> Self {
        self.resource_names.extend(strings(names));
        self
    }

    /// Adds non-resource URLs.
    #[must_use]
    pub fn urls(mut self, urls: &[&str]) -> Self {
        self.non_resource_urls.extend(strings(urls));
        self
    }

    /// The rule with every list sorted, without validation (for rules known to be valid).
    pub fn build(self) -> PolicyRule {
        fn sorted(mut v: Vec<String>) -> Option<Vec<String>> {
            if v.is_empty() {
                return None;
            }
            v.sort();
            Some(v)
        }
        let mut verbs = self.verbs;
        verbs.sort();
        PolicyRule {
            verbs,
            api_groups: sorted(self.api_groups),
            resources: sorted(self.resources),
            resource_names: sorted(self.resource_names),
            non_resource_urls: sorted(self.non_resource_urls),
        }
    }

    /// `Rule()`: the rule, after upstream's checks (verbs required; either non-resource URLs
    /// alone or resources with API groups).
    pub fn rule(self) -> Result<PolicyRule, AuthError> {
        if self.verbs.is_empty() {
            return Err(AuthError::InvalidRule("verbs are required".into()));
        }
        if !self.non_resource_urls.is_empty() {
            if !self.api_groups.is_empty()
                || !self.resources.is_empty()
                || !self.resource_names.is_empty()
            {
                return Err(AuthError::InvalidRule(
                    "non-resource rule may not have apiGroups, resources, or resourceNames".into(),
                ));
            }
        } else if !self.resources.is_empty() {
            if self.api_groups.is_empty() {
                return Err(AuthError::InvalidRule(
                    "resource rule must have apiGroups".into(),
                ));
            }
        } else {
            return Err(AuthError::InvalidRule(
                "a rule must have either nonResourceURLs or resources".into(),
            ));
        }
        Ok(self.build())
    }
}

/// Shorthand for [`PolicyRuleBuilder::new`].
pub fn new_rule(verbs: &[&str]) -> PolicyRuleBuilder {
    PolicyRuleBuilder::new(verbs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::attributes::UserInfo;

    fn res(verb: &str, group: &str, resource: &str) -> Attributes {
        Attributes::resource(UserInfo::default(), verb, group, resource)
    }

    fn nonres(verb: &str, path: &str) -> Attributes {
        Attributes::non_resource(UserInfo::default(), verb, path)
    }

    // Upstream's TestRuleMatches table.
    #[test]
    fn rule_matches_table() {
        type Case = (&'static str, PolicyRule, Vec<(Attributes, bool)>);
        let tuple = |verb: &str, group: &str, resource: &str| res(verb, group, resource);
        let cases: Vec<Case> = vec![
            (
                "star verb, exact match other",
                new_rule(&["*"])
                    .groups(&["group1"])
                    .resources(&["resource1"])
                    .build(),
                vec![
                    (tuple("verb1", "group1", "resource1"), true),
                    (tuple("verb1", "group2", "resource1"), false),
                    (tuple("verb1", "group1", "resource2"), false),
                    (tuple("verb1", "group2", "resource2"), false),
                    (tuple("verb2", "group1", "resource1"), true),
                    (tuple("verb2", "group2", "resource1"), false),
                    (tuple("verb2", "group1", "resource2"), false),
                    (tuple("verb2", "group2", "resource2"), false),
                ],
            ),
            (
                "star group, exact match other",
                new_rule(&["verb1"])
                    .groups(&["*"])
                    .resources(&["resource1"])
                    .build(),
                vec![
                    (tuple("verb1", "group1", "resource1"), true),
                    (tuple("verb1", "group2", "resource1"), true),
                    (tuple("verb1", "group1", "resource2"), false),
                    (tuple("verb1", "group2", "resource2"), false),
                    (tuple("verb2", "group1", "resource1"), false),
                    (tuple("verb2", "group2", "resource1"), false),
                    (tuple("verb2", "group1", "resource2"), false),
                    (tuple("verb2", "group2", "resource2"), false),
                ],
            ),
            (
                "star resource, exact match other",
                new_rule(&["verb1"])
                    .groups(&["group1"])
                    .resources(&["*"])
                    .build(),
                vec![
                    (tuple("verb1", "group1", "resource1"), true),
                    (tuple("verb1", "group2", "resource1"), false),
                    (tuple("verb1", "group1", "resource2"), true),
                    (tuple("verb1", "group2", "resource2"), false),
                    (tuple("verb2", "group1", "resource1"), false),
                    (tuple("verb2", "group2", "resource1"), false),
                    (tuple("verb2", "group1", "resource2"), false),
                    (tuple("verb2", "group2", "resource2"), false),
                ],
            ),
            (
                "tuple expansion",
                new_rule(&["verb1", "verb2"])
                    .groups(&["group1", "group2"])
                    .resources(&["resource1", "resource2"])
                    .build(),
                vec![
                    (tuple("verb1", "group1", "resource1"), true),
                    (tuple("verb1", "group2", "resource1"), true),
                    (tuple("verb1", "group1", "resource2"), true),
                    (tuple("verb1", "group2", "resource2"), true),
                    (tuple("verb2", "group1", "resource1"), true),
                    (tuple("verb2", "group2", "resource1"), true),
                    (tuple("verb2", "group1", "resource2"), true),
                    (tuple("verb2", "group2", "resource2"), true),
                ],
            ),
            (
                "subresource expansion",
                new_rule(&["*"])
                    .groups(&["*"])
                    .resources(&["resource1/subresource1"])
                    .build(),
                vec![
                    (
                        tuple("verb1", "group1", "resource1").with_subresource("subresource1"),
                        true,
                    ),
                    (
                        tuple("verb1", "group2", "resource1").with_subresource("subresource2"),
                        false,
                    ),
                    (
                        tuple("verb1", "group1", "resource2").with_subresource("subresource1"),
                        false,
                    ),
                    (
                        tuple("verb1", "group2", "resource2").with_subresource("subresource1"),
                        false,
                    ),
                    (
                        tuple("verb2", "group1", "resource1").with_subresource("subresource1"),
                        true,
                    ),
                    (
                        tuple("verb2", "group2", "resource1").with_subresource("subresource2"),
                        false,
                    ),
                    (
                        tuple("verb2", "group1", "resource2").with_subresource("subresource1"),
                        false,
                    ),
                    (
                        tuple("verb2", "group2", "resource2").with_subresource("subresource1"),
                        false,
                    ),
                ],
            ),
            (
                "star nonresource, exact match other",
                new_rule(&["verb1"]).urls(&["*"]).build(),
                vec![
                    (nonres("verb1", "/foo"), true),
                    (nonres("verb1", "/foo/bar"), true),
                    (nonres("verb1", "/foo/baz"), true),
                    (nonres("verb1", "/foo/bar/one"), true),
                    (nonres("verb1", "/foo/baz/one"), true),
                    (nonres("verb2", "/foo"), false),
                    (nonres("verb2", "/foo/bar"), false),
                    (nonres("verb2", "/foo/baz"), false),
                    (nonres("verb2", "/foo/bar/one"), false),
                    (nonres("verb2", "/foo/baz/one"), false),
                ],
            ),
            (
                "star nonresource subpath",
                new_rule(&["verb1"]).urls(&["/foo/*"]).build(),
                vec![
                    (nonres("verb1", "/foo"), false),
                    (nonres("verb1", "/foo/bar"), true),
                    (nonres("verb1", "/foo/baz"), true),
                    (nonres("verb1", "/foo/bar/one"), true),
                    (nonres("verb1", "/foo/baz/one"), true),
                    (nonres("verb1", "/notfoo"), false),
                    (nonres("verb1", "/notfoo/bar"), false),
                    (nonres("verb1", "/notfoo/baz"), false),
                    (nonres("verb1", "/notfoo/bar/one"), false),
                    (nonres("verb1", "/notfoo/baz/one"), false),
                ],
            ),
            (
                "star verb, exact nonresource",
                new_rule(&["*"]).urls(&["/foo", "/foo/bar/one"]).build(),
                vec![
                    (nonres("verb1", "/foo"), true),
                    (nonres("verb1", "/foo/bar"), false),
                    (nonres("verb1", "/foo/baz"), false),
                    (nonres("verb1", "/foo/bar/one"), true),
                    (nonres("verb1", "/foo/baz/one"), false),
                    (nonres("verb2", "/foo"), true),
                    (nonres("verb2", "/foo/bar"), false),
                    (nonres("verb2", "/foo/baz"), false),
                    (nonres("verb2", "/foo/bar/one"), true),
                    (nonres("verb2", "/foo/baz/one"), false),
                ],
            ),
        ];
        for (name, rule, requests) in cases {
            for (attrs, want) in requests {
                assert_eq!(rule_allows(&attrs, &rule), want, "{name}: {attrs:?}");
            }
        }
    }

    #[test]
    fn subresource_wildcards() {
        let scale = new_rule(&["get"])
            .groups(&["*"])
            .resources(&["*/scale"])
            .build();
        let cases = [
            (
                res("get", "apps", "deployments").with_subresource("scale"),
                true,
            ),
            (
                res("get", "", "replicationcontrollers").with_subresource("scale"),
                true,
            ),
            (
                res("get", "apps", "deployments").with_subresource("status"),
                false,
            ),
            (res("get", "apps", "deployments"), false),
            // `*/scale` is not a prefix match: `*/scalex` needs the exact subresource.
            (
                res("get", "apps", "deployments").with_subresource("xscale"),
                false,
            ),
            (
                res("get", "apps", "deployments").with_subresource("scal"),
                false,
            ),
        ];
        for (attrs, want) in cases {
            assert_eq!(rule_allows(&attrs, &scale), want, "{attrs:?}");
        }
        // A plain resource rule does not cover its subresources.
        let pods = new_rule(&["*"]).groups(&["*"]).resources(&["pods"]).build();
        assert!(rule_allows(
            &res("get", "", "pods").in_namespace("ns1"),
            &pods
        ));
        assert!(!rule_allows(
            &res("get", "", "pods").with_subresource("status"),
            &pods
        ));
        let status = new_rule(&["*"])
            .groups(&["*"])
            .resources(&["pods/status"])
            .build();
        assert!(rule_allows(
            &res("get", "", "pods").with_subresource("status"),
            &status
        ));
        assert!(!rule_allows(&res("get", "", "pods"), &status));
        // `*` covers every subresource.
        let all = new_rule(&["*"]).groups(&["*"]).resources(&["*"]).build();
        assert!(rule_allows(
            &res("create", "", "pods").with_subresource("eviction"),
            &all
        ));
    }

    #[test]
    fn resource_names() {
        let rule = new_rule(&["get", "update"])
            .groups(&["coordination.k8s.io"])
            .resources(&["leases"])
            .names(&["kube-scheduler"])
            .build();
        let lease = |verb: &str, name: &str| res(verb, "coordination.k8s.io", "leases").named(name);
        assert!(rule_allows(&lease("get", "kube-scheduler"), &rule));
        assert!(!rule_allows(&lease("get", "other"), &rule));
        // A request without a name (list, create) does not match a name-limited rule.
        assert!(!rule_allows(&lease("get", ""), &rule));
        assert!(!rule_allows(&lease("list", ""), &rule));
    }

    #[test]
    fn verbs_and_groups_are_exact() {
        let rule = new_rule(&["get"])
            .groups(&[""])
            .resources(&["pods"])
            .build();
        assert!(rule_allows(&res("get", "", "pods"), &rule));
        assert!(!rule_allows(&res("GET", "", "pods"), &rule));
        assert!(!rule_allows(&res("get", "apps", "pods"), &rule));
        assert!(!rule_allows(&res("get", "", "Pods"), &rule));
        // Resource rules never match non-resource requests and the other way round.
        assert!(!rule_allows(&nonres("get", "pods"), &rule));
        let url = new_rule(&["get"]).urls(&["/healthz"]).build();
        assert!(!rule_allows(&res("get", "", "healthz"), &url));
        assert!(rule_allows(&nonres("get", "/healthz"), &url));
    }

    #[test]
    fn non_resource_patterns() {
        // Non-resource matching cases (upstream's NonResourceURLCovers table reused for the
        // matcher, whose semantics are the same).
        let cases = [
            ("*", "", true),
            ("*", "/", true),
            ("*", "/api", true),
            ("/*", "", false),
            ("/*", "/", true),
            ("/*", "/foo", true),
            ("/api", "/api", true),
            ("/apis", "/api", false),
            ("/api/v1", "/api", false),
            ("/api/v1", "/api/v1", true),
            ("/api/*", "/api/v1", true),
            ("/api/*", "/api", false),
            ("/api/*/*", "/api/v1", false),
            ("/*/v1/*", "/api/v1", false),
            // Every trailing `*` goes (`strings.TrimRight`).
            ("/api**", "/apis", true),
        ];
        for (pattern, path, want) in cases {
            assert_eq!(
                non_resource_path_matches(pattern, path),
                want,
                "{pattern} {path}"
            );
        }
    }

    #[test]
    fn builder_sorts_and_validates() {
        let rule = new_rule(&["watch", "get", "list"])
            .groups(&["extensions", "apps"])
            .resources(&["replicasets", "deployments"])
            .rule();
        assert_eq!(
            rule,
            Ok(PolicyRule {
                verbs: vec!["get".into(), "list".into(), "watch".into()],
                api_groups: Some(vec!["apps".into(), "extensions".into()]),
                resources: Some(vec!["deployments".into(), "replicasets".into()]),
                resource_names: None,
                non_resource_urls: None,
            })
        );
        assert_eq!(
            new_rule(&[]).urls(&["/x"]).rule(),
            Err(AuthError::InvalidRule("verbs are required".into()))
        );
        assert_eq!(
            new_rule(&["get"]).resources(&["pods"]).rule(),
            Err(AuthError::InvalidRule(
                "resource rule must have apiGroups".into()
            ))
        );
        assert_eq!(
            new_rule(&["get"]).groups(&[""]).urls(&["/x"]).rule(),
            Err(AuthError::InvalidRule(
                "non-resource rule may not have apiGroups, resources, or resourceNames".into()
            ))
        );
        assert_eq!(
            new_rule(&["get"]).groups(&[""]).rule(),
            Err(AuthError::InvalidRule(
                "a rule must have either nonResourceURLs or resources".into()
            ))
        );
    }

    #[test]
    fn compact_strings() {
        let rule = new_rule(&["get", "list"])
            .groups(&[""])
            .resources(&["pods"])
            .names(&["a"])
            .build();
        assert_eq!(
            compact_string(&rule),
            r#"{APIGroups:[""], Resources:["pods"], ResourceNames:["a"], Verbs:["get" "list"]}"#
        );
        assert_eq!(
            rule_string(&new_rule(&["*"]).urls(&["*"]).build()),
            r#"PolicyRule{NonResourceURLs:["*"], Verbs:["*"]}"#
        );
        let empty = PolicyRule::default();
        assert_eq!(compact_string(&empty), "{}");
    }

    #[test]
    fn semantic_equality_ignores_nil_versus_empty() {
        let a = PolicyRule {
            verbs: vec!["get".into()],
            api_groups: Some(vec!["".into()]),
            resources: Some(vec!["pods".into()]),
            resource_names: None,
            non_resource_urls: Some(vec![]),
        };
        let mut b = a.clone();
        b.resource_names = Some(vec![]);
        b.non_resource_urls = None;
        assert!(rules_semantically_equal(&a, &b));
        b.verbs.push("list".into());
        assert!(!rules_semantically_equal(&a, &b));
        assert!(rule_lists_semantically_equal(&[], &[]));
        assert!(!rule_lists_semantically_equal(
            std::slice::from_ref(&a),
            &[]
        ));
    }
}
