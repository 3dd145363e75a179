//! The crate's one error type.

use api::gofmt::go_quote;

use crate::gofmt::quote_slice;

/// Everything that can go wrong while resolving, checking or loading authorization policy.
/// `Display` gives upstream's message for each case.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// A binding's role reference names a role that does not exist: upstream's lister
    /// `NotFound` (`clusterrole.rbac.authorization.k8s.io "x" not found`). `resource` is
    /// the singular resource the listers name: `role` or `clusterrole`.
    #[error("{resource}.rbac.authorization.k8s.io {} not found", go_quote(.name))]
    RoleNotFound {
        /// `role` or `clusterrole`.
        resource: &'static str,
        /// The name the binding refers to.
        name: String,
    },

    /// A role reference whose kind is neither `Role` nor `ClusterRole`.
    #[error("unsupported role reference kind: {}", go_quote(.0))]
    UnsupportedRoleRefKind(String),

    /// `ConfirmNoEscalation`: the user tries to grant rules they do not hold themselves.
    /// `missing` holds the compact descriptions of the uncovered rules, sorted and unique
    /// as upstream prints them; `resolution_errors` the text of the errors met while
    /// resolving the user's own rules, if any.
    #[error("{}", escalation_message(.user, .groups, .missing, .resolution_errors.as_deref()))]
    Escalation {
        /// The user's name.
        user: String,
        /// The user's groups.
        groups: Vec<String>,
        /// `CompactString` of each rule the user does not hold.
        missing: Vec<String>,
        /// The aggregate of the rule-resolution errors, when there were some.
        resolution_errors: Option<String>,
    },

    /// Setting an `aggregationRule` on a ClusterRole needs `*` on everything.
    #[error("must have cluster-admin privileges to use the aggregationRule")]
    AggregationRuleNeedsClusterAdmin,

    /// A `PolicyRuleBuilder` that does not describe a valid rule (upstream's `Rule()`).
    #[error("{0}")]
    InvalidRule(String),

    /// An aggregation rule's label selector that cannot be turned into a selector.
    #[error(transparent)]
    Selector(#[from] api::selector::SelectorError),

    /// A line of an ABAC policy file that does not parse, in upstream's
    /// `error reading policy file <path>, line <n>: <line>: <cause>` form.
    #[error("error reading policy file {path}, line {line}: {data}: {message}")]
    AbacPolicyLine {
        /// The policy file's path as given (may be empty).
        path: String,
        /// One-based line number, counting blank and comment lines.
        line: usize,
        /// The line's text.
        data: String,
        /// Why it was rejected.
        message: String,
    },
}

fn escalation_message(
    user: &str,
    groups: &[String],
    missing: &[String],
    resolution_errors: Option<&str>,
) -> String {
    let mut msg = format!(
        "user {} (groups={}) is attempting to grant RBAC permissions not currently held:\n{}",
        go_quote(user),
        quote_slice(groups),
        missing.join("\n")
    );
    if let Some(errors) = resolution_errors {
        // Upstream prints a `[]error` holding the one aggregate with `%v`.
        msg.push_str(&format!("; resolution errors: [{errors}]"));
    }
    msg
}

/// Joins error messages as `k8s.io/apimachinery`'s `NewAggregate(...).Error()` does: one
/// alone, several de-duplicated (first occurrence wins) as `[a, b]`. `None` for no errors.
pub fn aggregate_messages<I, S>(messages: I) -> Option<String>
where
    I: IntoIterator<Item = S>,
    S: AsRef<str>,
{
    let all: Vec<String> = messages
        .into_iter()
        .map(|m| m.as_ref().to_string())
        .collect();
    match all.len() {
        0 => None,
        1 => all.into_iter().next(),
        _ => {
            let mut seen: Vec<String> = Vec::new();
            for m in all {
                if !seen.contains(&m) {
                    seen.push(m);
                }
            }
            if seen.len() == 1 {
                seen.into_iter().next()
            } else {
                Some(format!("[{}]", seen.join(", ")))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_messages_match_listers() {
        let e = AuthError::RoleNotFound {
            resource: "clusterrole",
            name: "missing".into(),
        };
        assert_eq!(
            e.to_string(),
            r#"clusterrole.rbac.authorization.k8s.io "missing" not found"#
        );
        assert_eq!(
            AuthError::UnsupportedRoleRefKind("Foo".into()).to_string(),
            r#"unsupported role reference kind: "Foo""#
        );
    }

    #[test]
    fn aggregate_formats_like_upstream() {
        assert_eq!(aggregate_messages(Vec::<String>::new()), None);
        assert_eq!(aggregate_messages(["a"]), Some("a".into()));
        assert_eq!(aggregate_messages(["a", "a"]), Some("a".into()));
        assert_eq!(aggregate_messages(["a", "b", "a"]), Some("[a, b]".into()));
    }

    #[test]
    fn escalation_message_format() {
        let e = AuthError::Escalation {
            user: "bob".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            missing: vec![
                r#"{APIGroups:[""], Resources:["pods"], Verbs:["get"]}"#.into(),
                r#"{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}"#.into(),
            ],
            resolution_errors: None,
        };
        assert_eq!(
            e.to_string(),
            "user \"bob\" (groups=[\"dev\" \"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"get\"]}\n{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}"
        );
        let e = AuthError::Escalation {
            user: "bob".into(),
            groups: vec![],
            missing: vec!["x".into()],
            resolution_errors: Some("boom".into()),
        };
        assert_eq!(
            e.to_string(),
            "user \"bob\" (groups=[]) is attempting to grant RBAC permissions not currently held:\nx; resolution errors: [boom]"
        );
    }
}
