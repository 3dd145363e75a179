//! ClusterRole aggregation: the rules a ClusterRole with an `aggregationRule` must hold, as
//! upstream's `clusterroleaggregation` controller computes them.

use api::selector::LabelSelector;
use k8s_openapi::api::rbac::v1::{ClusterRole, PolicyRule};

use crate::error::AuthError;
use crate::rules::{rule_lists_semantically_equal, rules_semantically_equal};

/// The rules `cluster_role` aggregates from `all_cluster_roles`, or `None` when it has no
/// `aggregationRule` (then the controller leaves it alone).
///
/// For each selector in order, the matching ClusterRoles (other than `cluster_role` itself)
/// are taken sorted by name, and each of their rules is appended unless a semantically
/// equal rule is already there. A selector that cannot be converted is an error.
pub fn aggregate<'a, I>(
    cluster_role: &ClusterRole,
    all_cluster_roles: I,
) -> Result<Option<Vec<PolicyRule>>, AuthError>
where
    I: IntoIterator<Item = &'a ClusterRole>,
{
    let Some(rule) = &cluster_role.aggregation_rule else {
        return Ok(None);
    };
    let own_name = cluster_role.metadata.name.as_deref().unwrap_or("");
    let mut candidates: Vec<&ClusterRole> = all_cluster_roles.into_iter().collect();
    candidates.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));

    let mut rules: Vec<PolicyRule> = Vec::new();
    for selector in rule.cluster_role_selectors.as_deref().unwrap_or(&[]) {
        let selector = LabelSelector::from_metav1(Some(selector))?;
        for role in &candidates {
            if role.metadata.name.as_deref().unwrap_or("") == own_name {
                continue;
            }
            let matches = match &role.metadata.labels {
                Some(labels) => selector.matches_labels(labels),
                None => selector.matches(|_| None),
            };
            if !matches {
                continue;
            }
            for r in role.rules.as_deref().unwrap_or(&[]) {
                if !rules.iter().any(|have| rules_semantically_equal(have, r)) {
                    rules.push(r.clone());
                }
            }
        }
    }
    Ok(Some(rules))
}

/// Whether the controller would write `aggregated` into `cluster_role` (its current rules
/// differ semantically).
pub fn needs_update(cluster_role: &ClusterRole, aggregated: &[PolicyRule]) -> bool {
    !rule_lists_semantically_equal(cluster_role.rules.as_deref().unwrap_or(&[]), aggregated)
}

/// Runs the aggregation controller to a fixed point over a set of ClusterRoles: every
/// aggregated role gets its rules recomputed until nothing changes, so roles aggregating
/// other aggregated roles (`admin` ← `edit` ← `view`) settle. Returns how many updates were
/// made. A cycle of aggregated roles that never settles stops after as many passes as
/// there are roles, plus one.
pub fn aggregate_all(cluster_roles: &mut [ClusterRole]) -> Result<usize, AuthError> {
    let mut updates = 0;
    for _ in 0..=cluster_roles.len() {
        let mut changed = false;
        for i in 0..cluster_roles.len() {
            let Some(rules) = aggregate(&cluster_roles[i], cluster_roles.iter())? else {
                continue;
            };
            if needs_update(&cluster_roles[i], &rules) {
                cluster_roles[i].rules = Some(rules);
                changed = true;
                updates += 1;
            }
        }
        if !changed {
            break;
        }
    }
    Ok(updates)
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::rules::new_rule;
    use k8s_openapi::api::rbac::v1::AggregationRule;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
        LabelSelector as MetaSelector, LabelSelectorRequirement, ObjectMeta,
    };

    fn role(name: &str, labels: &[(&str, &str)], rules: Vec<PolicyRule>) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                labels: if labels.is_empty() {
                    None
                } else {
                    Some(
                        labels
                            .iter()
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .collect(),
                    )
                },
                ..ObjectMeta::default()
            },
            rules: Some(rules),
            aggregation_rule: None,
        }
    }

    fn match_labels(pairs: &[(&str, &str)]) -> MetaSelector {
        MetaSelector {
            match_labels: Some(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect::<BTreeMap<_, _>>(),
            ),
            match_expressions: None,
        }
    }

    fn aggregated(name: &str, selectors: Vec<MetaSelector>) -> ClusterRole {
        ClusterRole {
            metadata: ObjectMeta {
                name: Some(name.into()),
                ..ObjectMeta::default()
            },
            rules: None,
            aggregation_rule: Some(AggregationRule {
                cluster_role_selectors: Some(selectors),
            }),
        }
    }

    fn get(resource: &str) -> PolicyRule {
        new_rule(&["get"])
            .groups(&[""])
            .resources(&[resource])
            .build()
    }

    // Upstream's clusterroleaggregation controller test cases.
    #[test]
    fn aggregation_cases() {
        let no_aggregation = role("hammer", &[], vec![get("pods")]);
        assert_eq!(aggregate(&no_aggregation, [&no_aggregation]), Ok(None));

        // No matching roles: empty rules.
        let target = aggregated("target", vec![match_labels(&[("foo", "bar")])]);
        let other = role("other", &[], vec![get("pods")]);
        assert_eq!(aggregate(&target, [&target, &other]), Ok(Some(vec![])));

        // Union of matching roles, sorted by name, deduplicated.
        let b = role("b", &[("foo", "bar")], vec![get("secrets"), get("pods")]);
        let a = role("a", &[("foo", "bar")], vec![get("pods"), get("nodes")]);
        let c = role("c", &[("foo", "baz")], vec![get("configmaps")]);
        let got = aggregate(&target, [&b, &target, &c, &a]);
        assert_eq!(
            got,
            Ok(Some(vec![get("pods"), get("nodes"), get("secrets")]))
        );

        // Several selectors: in selector order, then by name.
        let target = aggregated(
            "target",
            vec![
                match_labels(&[("foo", "baz")]),
                match_labels(&[("foo", "bar")]),
            ],
        );
        let got = aggregate(&target, [&b, &target, &c, &a]);
        assert_eq!(
            got,
            Ok(Some(vec![
                get("configmaps"),
                get("pods"),
                get("nodes"),
                get("secrets")
            ]))
        );

        // A role never aggregates itself even when its labels match.
        let mut selfish = aggregated("a", vec![match_labels(&[("foo", "bar")])]);
        selfish.metadata.labels = Some(BTreeMap::from([("foo".into(), "bar".into())]));
        let got = aggregate(&selfish, [&selfish, &b]);
        assert_eq!(got, Ok(Some(vec![get("secrets"), get("pods")])));
    }

    #[test]
    fn expressions_and_bad_selectors() {
        let b = role("b", &[("tier", "x")], vec![get("pods")]);
        let c = role("c", &[], vec![get("nodes")]);
        let exists = aggregated(
            "t",
            vec![MetaSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "Exists".into(),
                    values: None,
                }]),
            }],
        );
        assert_eq!(aggregate(&exists, [&b, &c]), Ok(Some(vec![get("pods")])));
        let not_exists = aggregated(
            "t",
            vec![MetaSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "DoesNotExist".into(),
                    values: None,
                }]),
            }],
        );
        assert_eq!(
            aggregate(&not_exists, [&b, &c]),
            Ok(Some(vec![get("nodes")]))
        );
        // An empty selector selects everything.
        let everything = aggregated("t", vec![MetaSelector::default()]);
        assert_eq!(
            aggregate(&everything, [&b, &c]),
            Ok(Some(vec![get("pods"), get("nodes")]))
        );
        let bad = aggregated(
            "t",
            vec![MetaSelector {
                match_labels: None,
                match_expressions: Some(vec![LabelSelectorRequirement {
                    key: "tier".into(),
                    operator: "Near".into(),
                    values: None,
                }]),
            }],
        );
        assert!(matches!(aggregate(&bad, [&b]), Err(AuthError::Selector(_))));
    }

    #[test]
    fn fixed_point_over_chains() {
        let mut roles = vec![
            aggregated("admin", vec![match_labels(&[("to-admin", "true")])]),
            {
                let mut edit = aggregated("edit", vec![match_labels(&[("to-edit", "true")])]);
                edit.metadata.labels = Some(BTreeMap::from([("to-admin".into(), "true".into())]));
                edit
            },
            role("edit-extra", &[("to-edit", "true")], vec![get("secrets")]),
            role("admin-extra", &[("to-admin", "true")], vec![get("roles")]),
        ];
        // admin (roles only, edit still empty), edit, then admin again with edit's rules.
        let updates = aggregate_all(&mut roles);
        assert_eq!(updates, Ok(3));
        assert_eq!(roles[1].rules, Some(vec![get("secrets")]));
        assert_eq!(roles[0].rules, Some(vec![get("roles"), get("secrets")]));
        assert_eq!(aggregate_all(&mut roles), Ok(0));
        assert!(!needs_update(&roles[0], &[get("roles"), get("secrets")]));
    }
}
