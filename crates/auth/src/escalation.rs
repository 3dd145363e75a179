//! Escalation prevention: a user may only create or update a role whose rules they already
//! hold, unless they are a superuser or may `escalate`; and may only bind a role they may
//! `bind`. Upstream: `component-helpers/auth/rbac/validation/policy_comparator.go` (`Covers`),
//! `pkg/registry/rbac/validation/policy_compact.go` (`CompactRules`), `rule.go`
//! (`ConfirmNoEscalation`) and `pkg/registry/rbac/escalation_check.go`.

use k8s_openapi::api::rbac::v1::{PolicyRule, RoleRef};

use crate::attributes::{Attributes, SYSTEM_PRIVILEGED_GROUP, UserInfo};
use crate::error::AuthError;
use crate::rbac::{RBAC_GROUP, ResolvedRules};
use crate::rules::{API_GROUP_ALL, RESOURCE_ALL, VERB_ALL, compact_string, new_rule};

fn list(v: &Option<Vec<String>>) -> &[String] {
    v.as_deref().unwrap_or(&[])
}

fn one(s: &str) -> Option<Vec<String>> {
    Some(vec![s.to_string()])
}

/// `BreakdownRule`: the rule split into rules of one group, one resource, one verb and at
/// most one resource name, then one rule per non-resource URL and verb.
pub fn breakdown_rule(rule: &PolicyRule) -> Vec<PolicyRule> {
    let mut out = Vec::new();
    for group in list(&rule.api_groups) {
        for resource in list(&rule.resources) {
            for verb in &rule.verbs {
                let names = list(&rule.resource_names);
                if names.is_empty() {
                    out.push(PolicyRule {
                        api_groups: one(group),
                        resources: one(resource),
                        verbs: vec![verb.clone()],
                        ..PolicyRule::default()
                    });
                } else {
                    for name in names {
                        out.push(PolicyRule {
                            api_groups: one(group),
                            resources: one(resource),
                            verbs: vec![verb.clone()],
                            resource_names: one(name),
                            non_resource_urls: None,
                        });
                    }
                }
            }
        }
    }
    for url in list(&rule.non_resource_urls) {
        for verb in &rule.verbs {
            out.push(PolicyRule {
                non_resource_urls: one(url),
                verbs: vec![verb.clone()],
                ..PolicyRule::default()
            });
        }
    }
    out
}

fn has(set: &[String], element: &str) -> bool {
    set.iter().any(|s| s == element)
}

fn has_all(set: &[String], contains: &[String]) -> bool {
    contains.iter().all(|c| has(set, c))
}

/// `resourceCoversAll`: `*`, every resource listed, or each missing `resource/subresource`
/// covered by a `*/subresource` entry.
fn resource_covers_all(set: &[String], covers: &[String]) -> bool {
    if has(set, RESOURCE_ALL) || has_all(set, covers) {
        return true;
    }
    covers.iter().all(|path| {
        if has(set, path) {
            return true;
        }
        match path.split_once('/') {
            Some((_, sub)) => has(set, &format!("*/{sub}")),
            None => false,
        }
    })
}

/// `nonResourceURLCovers`: equal, or the owner ends in `*` and its prefix starts the path.
pub fn non_resource_url_covers(owner: &str, sub: &str) -> bool {
    // Upstream's NonResourceURLCovers is the matcher's rule.
    crate::rules::non_resource_path_matches(owner, sub)
}

fn non_resource_urls_cover_all(set: &[String], covers: &[String]) -> bool {
    covers
        .iter()
        .all(|path| set.iter().any(|owner| non_resource_url_covers(owner, path)))
}

/// `ruleCovers`: whether `owner` covers `sub`, a rule broken down by [`breakdown_rule`].
fn rule_covers(owner: &PolicyRule, sub: &PolicyRule) -> bool {
    let verbs = has(&owner.verbs, VERB_ALL) || has_all(&owner.verbs, &sub.verbs);
    let groups = has(list(&owner.api_groups), API_GROUP_ALL)
        || has_all(list(&owner.api_groups), list(&sub.api_groups));
    let resources = resource_covers_all(list(&owner.resources), list(&sub.resources));
    let urls =
        non_resource_urls_cover_all(list(&owner.non_resource_urls), list(&sub.non_resource_urls));
    let owner_names = list(&owner.resource_names);
    let sub_names = list(&sub.resource_names);
    let names = if sub_names.is_empty() {
        owner_names.is_empty()
    } else {
        owner_names.is_empty() || has_all(owner_names, sub_names)
    };
    verbs && groups && resources && names && urls
}

/// `Covers`: whether `owner_rules` allow everything `servant_rules` allow, and the
/// broken-down servant rules that no owner rule covers. Wildcards are only covered by the
/// same wildcard: `*` verbs by `*`, `*` resources by `*`, and so on.
pub fn covers(owner_rules: &[PolicyRule], servant_rules: &[PolicyRule]) -> (bool, Vec<PolicyRule>) {
    let uncovered: Vec<PolicyRule> = servant_rules
        .iter()
        .flat_map(breakdown_rule)
        .filter(|sub| !owner_rules.iter().any(|owner| rule_covers(owner, sub)))
        .collect();
    (uncovered.is_empty(), uncovered)
}

/// `CompactRules`: merges rules naming exactly one group and one resource (and at most one
/// resource name, no URLs) that differ only in verbs; other rules are kept as they are.
/// Complex rules come first, then the merged ones in order of first appearance.
pub fn compact_rules(rules: &[PolicyRule]) -> Vec<PolicyRule> {
    type Key = (String, String, Option<String>);
    let mut compacted: Vec<PolicyRule> = Vec::with_capacity(rules.len());
    let mut simple: Vec<(Key, PolicyRule)> = Vec::new();
    for rule in rules {
        let groups = list(&rule.api_groups);
        let resources = list(&rule.resources);
        let names = list(&rule.resource_names);
        let is_simple = names.len() <= 1
            && list(&rule.non_resource_urls).is_empty()
            && groups.len() == 1
            && resources.len() == 1;
        if !is_simple {
            compacted.push(rule.clone());
            continue;
        }
        let key = (
            groups[0].clone(),
            resources[0].clone(),
            names.first().cloned(),
        );
        match simple.iter_mut().find(|(k, _)| *k == key) {
            Some((_, existing)) => existing.verbs.extend(rule.verbs.iter().cloned()),
            None => simple.push((key, rule.clone())),
        }
    }
    compacted.extend(simple.into_iter().map(|(_, r)| r));
    compacted
}

/// `ConfirmNoEscalation`: `Ok` when `owner` (the rules `user` holds in the request's
/// namespace, see [`crate::RbacAuthorizer::resolve_rules`]) covers `requested`; otherwise
/// the error listing the compacted missing rules, sorted and unique, and the resolution
/// errors met while gathering the owner's rules.
pub fn confirm_no_escalation(
    user: &UserInfo,
    owner: &ResolvedRules,
    requested: &[PolicyRule],
) -> Result<(), AuthError> {
    let (covered, missing) = covers(&owner.rules, requested);
    if covered {
        return Ok(());
    }
    let mut descriptions: Vec<String> =
        compact_rules(&missing).iter().map(compact_string).collect();
    descriptions.sort();
    descriptions.dedup();
    Err(AuthError::Escalation {
        user: user.name.clone(),
        groups: user.groups.clone(),
        missing: descriptions,
        resolution_errors: owner.error_message(),
    })
}

/// `EscalationAllowed`: members of `system:masters` may create any role.
pub fn escalation_allowed(user: &UserInfo) -> bool {
    user.in_group(SYSTEM_PRIVILEGED_GROUP)
}

/// The rules `*` on every resource and every URL: what a user must hold to set a
/// ClusterRole's `aggregationRule` (the policy-based ClusterRole storage's `fullAuthority`).
pub fn full_authority() -> Vec<PolicyRule> {
    vec![
        new_rule(&["*"]).groups(&["*"]).resources(&["*"]).build(),
        new_rule(&["*"]).urls(&["*"]).build(),
    ]
}

/// The request `RoleEscalationAuthorized` asks the authorizer about: may `user` `escalate`
/// the role they are writing. `None` when the request is not about `roles` or
/// `clusterroles` of the RBAC group (then escalation is never authorized this way).
pub fn role_escalation_attributes(
    user: &UserInfo,
    api_group: &str,
    resource: &str,
    name: &str,
    namespace: &str,
) -> Option<Attributes> {
    if api_group != RBAC_GROUP || !matches!(resource, "roles" | "clusterroles") {
        return None;
    }
    Some(
        Attributes::resource(user.clone(), "escalate", api_group, resource)
            .with_api_version("*")
            .named(name)
            .in_namespace(namespace),
    )
}

/// The request `BindingAuthorized` asks the authorizer about: may `user` `bind` the role
/// `role_ref` names, checked in the binding's namespace (empty for ClusterRoleBindings).
/// `None` for a role reference kind other than `Role` or `ClusterRole`.
pub fn binding_attributes(
    user: &UserInfo,
    role_ref: &RoleRef,
    binding_namespace: &str,
) -> Option<Attributes> {
    let resource = match role_ref.kind.as_str() {
        "ClusterRole" => "clusterroles",
        "Role" => "roles",
        _ => return None,
    };
    Some(
        Attributes::resource(user.clone(), "bind", &role_ref.api_group, resource)
            .with_api_version("*")
            .named(&role_ref.name)
            .in_namespace(binding_namespace),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(groups: &[&str], verbs: &[&str], resources: &[&str]) -> PolicyRule {
        PolicyRule {
            api_groups: Some(groups.iter().map(|s| s.to_string()).collect()),
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            resources: Some(resources.iter().map(|s| s.to_string()).collect()),
            ..PolicyRule::default()
        }
    }

    fn named(mut rule: PolicyRule, names: &[&str]) -> PolicyRule {
        rule.resource_names = Some(names.iter().map(|s| s.to_string()).collect());
        rule
    }

    fn urls(verbs: &[&str], urls: &[&str]) -> PolicyRule {
        PolicyRule {
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            non_resource_urls: Some(urls.iter().map(|s| s.to_string()).collect()),
            ..PolicyRule::default()
        }
    }

    /// Upstream compares uncovered rules as sets of `reflect.DeepEqual` rules, where an
    /// empty `ResourceNames` list and a missing one differ; breakdown never produces empty
    /// lists, so comparing the compact strings is equivalent here.
    fn same_rules(a: &[PolicyRule], b: &[PolicyRule]) -> bool {
        let mut x: Vec<String> = a.iter().map(compact_string).collect();
        let mut y: Vec<String> = b.iter().map(compact_string).collect();
        x.sort();
        y.sort();
        x == y
    }

    // Upstream's policy_comparator_test cases.
    #[test]
    fn covers_table() {
        type Case = (
            &'static str,
            Vec<PolicyRule>,
            Vec<PolicyRule>,
            bool,
            Vec<PolicyRule>,
        );
        let cases: Vec<Case> = vec![
            (
                "exact match",
                vec![r(&["v1"], &["get"], &["builds"])],
                vec![r(&["v1"], &["get"], &["builds"])],
                true,
                vec![],
            ),
            (
                "subresource wildcard",
                vec![r(&["v1"], &["get"], &["*/scale"])],
                vec![r(&["v1"], &["get"], &["foo/scale"])],
                true,
                vec![],
            ),
            (
                "multiple rules covering single rule",
                vec![
                    r(&["v1"], &["delete"], &["deployments"]),
                    r(&["v1"], &["delete"], &["builds"]),
                    r(&["v1"], &["update"], &["builds", "deployments"]),
                ],
                vec![r(
                    &["v1"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                true,
                vec![],
            ),
            (
                "multiple API groups covering single rule",
                vec![
                    r(&["group1"], &["delete"], &["deployments"]),
                    r(&["group1"], &["delete"], &["builds"]),
                    r(&["group1"], &["update"], &["builds", "deployments"]),
                    r(&["group2"], &["delete"], &["deployments"]),
                    r(&["group2"], &["delete"], &["builds"]),
                    r(&["group2"], &["update"], &["builds", "deployments"]),
                ],
                vec![r(
                    &["group1", "group2"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                true,
                vec![],
            ),
            (
                "single API group covering multiple",
                vec![r(
                    &["group1", "group2"],
                    &["delete", "update"],
                    &["builds", "deployments"],
                )],
                vec![
                    r(&["group1"], &["delete"], &["deployments"]),
                    r(&["group1"], &["delete"], &["builds"]),
                    r(&["group1"], &["update"], &["builds", "deployments"]),
                    r(&["group2"], &["delete"], &["deployments"]),
                    r(&["group2"], &["delete"], &["builds"]),
                    r(&["group2"], &["update"], &["builds", "deployments"]),
                ],
                true,
                vec![],
            ),
            (
                "multiple rules missing single verb resource combination",
                vec![
                    r(&["v1"], &["delete", "update"], &["builds", "deployments"]),
                    r(&["v1"], &["delete"], &["pods"]),
                ],
                vec![r(
                    &["v1"],
                    &["delete", "update"],
                    &["builds", "deployments", "pods"],
                )],
                false,
                vec![r(&["v1"], &["update"], &["pods"])],
            ),
            (
                "API group star covering multiple",
                vec![r(&["*"], &["get"], &["roles"])],
                vec![r(&["group1", "group2"], &["get"], &["roles"])],
                true,
                vec![],
            ),
            (
                "enumeration not covering API group star",
                vec![r(&["dummy-group"], &["get"], &["roles"])],
                vec![r(&["*"], &["get"], &["roles"])],
                false,
                vec![r(&["*"], &["get"], &["roles"])],
            ),
            (
                "API group star covering star",
                vec![r(&["*"], &["get"], &["roles"])],
                vec![r(&["*"], &["get"], &["roles"])],
                true,
                vec![],
            ),
            (
                "verb star covering multiple",
                vec![r(&["v1"], &["*"], &["roles"])],
                vec![r(&["v1"], &["watch", "list"], &["roles"])],
                true,
                vec![],
            ),
            (
                "enumeration not covering verb star",
                vec![r(
                    &["v1"],
                    &["get", "list", "watch", "create", "update", "delete", "exec"],
                    &["roles"],
                )],
                vec![r(&["v1"], &["*"], &["roles"])],
                false,
                vec![r(&["v1"], &["*"], &["roles"])],
            ),
            (
                "verb star covering star",
                vec![r(&["v1"], &["*"], &["roles"])],
                vec![r(&["v1"], &["*"], &["roles"])],
                true,
                vec![],
            ),
            (
                "resource star covering multiple",
                vec![r(&["v1"], &["get"], &["*"])],
                vec![r(&["v1"], &["get"], &["resourcegroup:deployments"])],
                true,
                vec![],
            ),
            (
                "enumeration not covering resource star",
                vec![r(
                    &["v1"],
                    &["get"],
                    &["roles", "resourcegroup:deployments"],
                )],
                vec![r(&["v1"], &["get"], &["*"])],
                false,
                vec![r(&["v1"], &["get"], &["*"])],
            ),
            (
                "resource star covering star",
                vec![r(&["v1"], &["get"], &["*"])],
                vec![r(&["v1"], &["get"], &["*"])],
                true,
                vec![],
            ),
            (
                "resource name empty covering multiple",
                vec![named(r(&["v1"], &["get"], &["pods"]), &[])],
                vec![named(r(&["v1"], &["get"], &["pods"]), &["foo", "bar"])],
                true,
                vec![],
            ),
            (
                "enumeration not covering resource name empty",
                vec![named(r(&["v1"], &["get"], &["pods"]), &["foo", "bar"])],
                vec![named(r(&["v1"], &["get"], &["pods"]), &[])],
                false,
                vec![r(&["v1"], &["get"], &["pods"])],
            ),
            (
                "non-resource URLs",
                vec![urls(&["*"], &["/apis"])],
                vec![urls(&["*"], &["/apis"])],
                true,
                vec![],
            ),
            (
                "non-resource URLs star",
                vec![urls(&["*"], &["*"])],
                vec![urls(&["*"], &["/apis", "/apis/v1", "/"])],
                true,
                vec![],
            ),
            (
                "non-resource URLs star after prefix does not cover",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis", "/apis/v1"])],
                false,
                vec![urls(&["get"], &["/apis"])],
            ),
            (
                "non-resource URLs star after prefix",
                vec![urls(&["*"], &["/apis/*"])],
                vec![urls(&["get"], &["/apis/v1/foo", "/apis/v1"])],
                true,
                vec![],
            ),
            (
                "non-resource URLs with other fields",
                vec![{
                    let mut x = r(&["v1"], &["get"], &["builds"]);
                    x.non_resource_urls = Some(vec!["/apis".into()]);
                    x
                }],
                vec![{
                    let mut x = r(&["v1"], &["get"], &["builds"]);
                    x.non_resource_urls = Some(vec!["/apis".into()]);
                    x
                }],
                true,
                vec![],
            ),
            (
                "non-resource URLs with other fields failure",
                vec![r(&["v1"], &["get"], &["builds"])],
                vec![{
                    let mut x = r(&["v1"], &["get"], &["builds"]);
                    x.non_resource_urls = Some(vec!["/apis".into()]);
                    x
                }],
                false,
                vec![urls(&["get"], &["/apis"])],
            ),
        ];
        for (name, owner, servant, want_covered, want_uncovered) in cases {
            let (covered, uncovered) = covers(&owner, &servant);
            assert_eq!(covered, want_covered, "{name}");
            assert!(
                same_rules(&uncovered, &want_uncovered),
                "{name}: {uncovered:?}"
            );
        }
    }

    #[test]
    fn non_resource_url_covers_table() {
        let cases = [
            ("*", "/api", true),
            ("/api/*", "/api/v1", true),
            ("/api/*", "/api", false),
        ];
        for (owner, requested, want) in cases {
            assert_eq!(
                non_resource_url_covers(owner, requested),
                want,
                "{owner} {requested}"
            );
        }
    }

    #[test]
    fn subresource_star_is_only_covered_by_star() {
        // `*/scale` does not cover `foo/status`, and a plain resource does not cover its
        // subresources.
        let (ok, _) = covers(
            &[r(&["v1"], &["get"], &["*/scale"])],
            &[r(&["v1"], &["get"], &["foo/status"])],
        );
        assert!(!ok);
        let (ok, _) = covers(
            &[r(&["v1"], &["get"], &["foo"])],
            &[r(&["v1"], &["get"], &["foo/scale"])],
        );
        assert!(!ok);
        let (ok, _) = covers(
            &[r(&["v1"], &["get"], &["*/scale"])],
            &[r(&["v1"], &["get"], &["*/scale"])],
        );
        assert!(ok);
    }

    #[test]
    fn compacts_simple_rules() {
        let rules = vec![
            r(&["apps"], &["get"], &["deployments"]),
            urls(&["get"], &["/x"]),
            r(&["apps"], &["list"], &["deployments"]),
            named(r(&["apps"], &["get"], &["deployments"]), &["d"]),
            r(&[""], &["get"], &["pods"]),
            r(&["apps"], &["watch"], &["deployments"]),
            r(&["apps", "x"], &["get"], &["deployments"]),
        ];
        let out = compact_rules(&rules);
        let strings: Vec<String> = out.iter().map(compact_string).collect();
        assert_eq!(
            strings,
            vec![
                r#"{NonResourceURLs:["/x"], Verbs:["get"]}"#,
                r#"{APIGroups:["apps" "x"], Resources:["deployments"], Verbs:["get"]}"#,
                r#"{APIGroups:["apps"], Resources:["deployments"], Verbs:["get" "list" "watch"]}"#,
                r#"{APIGroups:["apps"], Resources:["deployments"], ResourceNames:["d"], Verbs:["get"]}"#,
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#,
            ]
        );
    }

    #[test]
    fn confirm_no_escalation_messages() {
        let user = UserInfo::new("bob", ["dev", "system:authenticated"]);
        let owner = ResolvedRules {
            rules: vec![r(&[""], &["get", "list"], &["pods"])],
            errors: vec![],
        };
        assert_eq!(
            confirm_no_escalation(&user, &owner, &[r(&[""], &["get"], &["pods"])]),
            Ok(())
        );
        let err = confirm_no_escalation(
            &user,
            &owner,
            &[r(
                &["", "apps"],
                &["get", "create", "delete"],
                &["pods", "deployments"],
            )],
        );
        let Err(err) = err else {
            panic!("expected an escalation error")
        };
        assert_eq!(
            err.to_string(),
            "user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
{APIGroups:[\"\"], Resources:[\"deployments\"], Verbs:[\"get\" \"create\" \"delete\"]}\n\
{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"create\" \"delete\"]}\n\
{APIGroups:[\"apps\"], Resources:[\"deployments\"], Verbs:[\"get\" \"create\" \"delete\"]}\n\
{APIGroups:[\"apps\"], Resources:[\"pods\"], Verbs:[\"get\" \"create\" \"delete\"]}"
        );
        let owner = ResolvedRules {
            rules: vec![],
            errors: vec![
                AuthError::RoleNotFound {
                    resource: "clusterrole",
                    name: "a".into(),
                },
                AuthError::RoleNotFound {
                    resource: "role",
                    name: "b".into(),
                },
            ],
        };
        let Err(err) = confirm_no_escalation(&user, &owner, &[urls(&["get"], &["/healthz"])])
        else {
            panic!("expected an escalation error")
        };
        assert!(err.to_string().ends_with(
            "{NonResourceURLs:[\"/healthz\"], Verbs:[\"get\"]}; resolution errors: [[clusterrole.rbac.authorization.k8s.io \"a\" not found, role.rbac.authorization.k8s.io \"b\" not found]]"
        ));
    }

    #[test]
    fn escalation_helpers() {
        assert!(escalation_allowed(&UserInfo::new("x", ["system:masters"])));
        assert!(!escalation_allowed(&UserInfo::new("system:masters", ["a"])));
        let user = UserInfo::new("x", ["g"]);
        let a = role_escalation_attributes(&user, RBAC_GROUP, "clusterroles", "edit", "");
        let Some(a) = a else {
            panic!("expected attributes")
        };
        assert_eq!(
            (
                a.verb.as_str(),
                a.resource.as_str(),
                a.name.as_str(),
                a.api_version.as_str()
            ),
            ("escalate", "clusterroles", "edit", "*")
        );
        assert!(a.resource_request);
        assert!(role_escalation_attributes(&user, RBAC_GROUP, "rolebindings", "x", "ns").is_none());
        assert!(role_escalation_attributes(&user, "", "roles", "x", "ns").is_none());
        let role_ref = RoleRef {
            api_group: RBAC_GROUP.into(),
            kind: "Role".into(),
            name: "r".into(),
        };
        let Some(b) = binding_attributes(&user, &role_ref, "ns1") else {
            panic!("expected attributes")
        };
        assert_eq!(
            (
                b.verb.as_str(),
                b.resource.as_str(),
                b.name.as_str(),
                b.namespace.as_str()
            ),
            ("bind", "roles", "r", "ns1")
        );
        let bad = RoleRef {
            kind: "Other".into(),
            ..role_ref
        };
        assert!(binding_attributes(&user, &bad, "ns1").is_none());
        let (ok, _) = covers(&full_authority(), &full_authority());
        assert!(ok);
    }
}
