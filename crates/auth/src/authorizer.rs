//! The authorizer interface and the simple authorizers of upstream's chain:
//! `authorizerfactory` (always-allow, always-deny, privileged groups) and `union`.

use std::sync::Arc;

use crate::attributes::{
    Attributes, Decision, NonResourceRule, ResourceRule, SYSTEM_PRIVILEGED_GROUP, UserInfo,
    UserRules,
};
use crate::error::aggregate_messages;

/// Decides on requests and lists a user's rules (upstream's `authorizer.Authorizer` plus
/// `authorizer.RuleResolver`).
pub trait Authorizer: Send + Sync {
    /// The decision on one request and its reason (may be empty). Upstream's callers put
    /// a non-empty reason after the `Forbidden` message.
    fn authorize(&self, attributes: &Attributes) -> (Decision, String);

    /// The rules `user` holds in `namespace` (`""`: cluster-wide rules only), for
    /// `SelfSubjectRulesReview`.
    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules;
}

impl<T: Authorizer + ?Sized> Authorizer for Arc<T> {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        (**self).authorize(attributes)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        (**self).rules_for(user, namespace)
    }
}

impl<T: Authorizer + ?Sized> Authorizer for Box<T> {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        (**self).authorize(attributes)
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        (**self).rules_for(user, namespace)
    }
}

/// `--authorization-mode=AlwaysAllow`: allows everything (empty reason); its rules are
/// `*` on everything.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysAllow;

impl Authorizer for AlwaysAllow {
    fn authorize(&self, _attributes: &Attributes) -> (Decision, String) {
        (Decision::Allow, String::new())
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        let all = || vec!["*".to_string()];
        UserRules {
            resource_rules: vec![ResourceRule {
                verbs: all(),
                api_groups: all(),
                resources: all(),
                resource_names: Vec::new(),
            }],
            non_resource_rules: vec![NonResourceRule {
                verbs: all(),
                non_resource_urls: all(),
            }],
            incomplete: false,
            evaluation_error: None,
        }
    }
}

/// `--authorization-mode=AlwaysDeny`. As upstream, it answers `NoOpinion` (with reason
/// `Everything is forbidden.`), so a chain of it alone forbids everything while later
/// authorizers may still allow; it holds no rules.
#[derive(Clone, Copy, Debug, Default)]
pub struct AlwaysDeny;

impl Authorizer for AlwaysDeny {
    fn authorize(&self, _attributes: &Attributes) -> (Decision, String) {
        (Decision::NoOpinion, "Everything is forbidden.".to_string())
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        UserRules::default()
    }
}

/// Allows every request of a user in one of the given groups, with an empty reason
/// (`authorizerfactory.NewPrivilegedGroups`); no opinion otherwise. kube-apiserver puts one
/// for `system:masters` in front of every configured chain. It is not a rule resolver
/// upstream, so its [`Authorizer::rules_for`] is empty.
#[derive(Clone, Debug)]
pub struct PrivilegedGroups {
    groups: Vec<String>,
}

impl PrivilegedGroups {
    /// An authorizer allowing members of `groups`.
    pub fn new<I, S>(groups: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        PrivilegedGroups {
            groups: groups.into_iter().map(Into::into).collect(),
        }
    }

    /// The `system:masters` superuser authorizer.
    pub fn system_masters() -> Self {
        PrivilegedGroups::new([SYSTEM_PRIVILEGED_GROUP])
    }
}

impl Authorizer for PrivilegedGroups {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        let privileged = attributes
            .user
            .groups
            .iter()
            .any(|g| self.groups.iter().any(|p| p == g));
        if privileged {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, String::new())
        }
    }

    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        UserRules::default()
    }
}

/// A chain of authorizers (upstream's `union`): the first `Allow` or `Deny` wins with its
/// own reason; when every authorizer has no opinion the answer is `NoOpinion` with the
/// non-empty reasons joined by newlines. `rules_for` concatenates every authorizer's rules,
/// is incomplete when any is, and aggregates the evaluation errors.
pub struct Union {
    chain: Vec<Box<dyn Authorizer>>,
}

impl Union {
    /// A chain of the given authorizers, in order.
    pub fn new(chain: Vec<Box<dyn Authorizer>>) -> Self {
        Union { chain }
    }

    /// kube-apiserver's chain: the `system:masters` superuser authorizer first, then the
    /// configured ones (`--authorization-mode` order).
    pub fn with_superuser(configured: Vec<Box<dyn Authorizer>>) -> Self {
        let mut chain: Vec<Box<dyn Authorizer>> = Vec::with_capacity(configured.len() + 1);
        chain.push(Box::new(PrivilegedGroups::system_masters()));
        chain.extend(configured);
        Union { chain }
    }

    /// Appends an authorizer at the end of the chain.
    pub fn push(&mut self, authorizer: Box<dyn Authorizer>) {
        self.chain.push(authorizer);
    }

    /// The number of authorizers in the chain.
    pub fn len(&self) -> usize {
        self.chain.len()
    }

    /// Whether the chain is empty (then everything is `NoOpinion`).
    pub fn is_empty(&self) -> bool {
        self.chain.is_empty()
    }
}

impl Authorizer for Union {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        let mut reasons: Vec<String> = Vec::new();
        for authorizer in &self.chain {
            let (decision, reason) = authorizer.authorize(attributes);
            match decision {
                Decision::Allow | Decision::Deny => return (decision, reason),
                Decision::NoOpinion => {
                    if !reason.is_empty() {
                        reasons.push(reason);
                    }
                }
            }
        }
        (Decision::NoOpinion, reasons.join("\n"))
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut out = UserRules::default();
        let mut errors = Vec::new();
        for authorizer in &self.chain {
            let rules = authorizer.rules_for(user, namespace);
            out.incomplete |= rules.incomplete;
            if let Some(e) = rules.evaluation_error {
                errors.push(e);
            }
            out.resource_rules.extend(rules.resource_rules);
            out.non_resource_rules.extend(rules.non_resource_rules);
        }
        out.evaluation_error = aggregate_messages(errors);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scripted authorizer for chain tests.
    struct Fixed(Decision, &'static str, UserRules);

    impl Authorizer for Fixed {
        fn authorize(&self, _attributes: &Attributes) -> (Decision, String) {
            (self.0, self.1.to_string())
        }
        fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
            self.2.clone()
        }
    }

    fn attrs(groups: &[&str]) -> Attributes {
        Attributes::resource(
            UserInfo::new("u", groups.iter().copied()),
            "get",
            "",
            "pods",
        )
    }

    #[test]
    fn always_allow_and_deny() {
        assert_eq!(
            AlwaysAllow.authorize(&attrs(&[])),
            (Decision::Allow, String::new())
        );
        assert_eq!(
            AlwaysDeny.authorize(&attrs(&[])),
            (Decision::NoOpinion, "Everything is forbidden.".to_string())
        );
        let rules = AlwaysAllow.rules_for(&UserInfo::default(), "ns");
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(rules.resource_rules[0].resources, vec!["*"]);
        assert_eq!(rules.non_resource_rules[0].non_resource_urls, vec!["*"]);
        assert_eq!(
            AlwaysDeny.rules_for(&UserInfo::default(), "ns"),
            UserRules::default()
        );
    }

    #[test]
    fn privileged_groups() {
        let masters = PrivilegedGroups::system_masters();
        assert_eq!(
            masters.authorize(&attrs(&["system:masters"])).0,
            Decision::Allow
        );
        assert_eq!(
            masters.authorize(&attrs(&["a", "system:masters"])).0,
            Decision::Allow
        );
        assert_eq!(
            masters.authorize(&attrs(&["system:master"])),
            (Decision::NoOpinion, String::new())
        );
        assert_eq!(masters.authorize(&attrs(&[])).0, Decision::NoOpinion);
        let two = PrivilegedGroups::new(["a", "b"]);
        assert_eq!(two.authorize(&attrs(&["b"])).0, Decision::Allow);
    }

    // Upstream's union_test cases: first allow/deny wins, all no-opinion is no opinion.
    #[test]
    fn union_decisions() {
        let cases: Vec<(Vec<Decision>, Decision)> = vec![
            (vec![], Decision::NoOpinion),
            (
                vec![Decision::NoOpinion, Decision::NoOpinion],
                Decision::NoOpinion,
            ),
            (vec![Decision::NoOpinion, Decision::Allow], Decision::Allow),
            (vec![Decision::Allow, Decision::Deny], Decision::Allow),
            (vec![Decision::Deny, Decision::Allow], Decision::Deny),
            (
                vec![Decision::NoOpinion, Decision::Deny, Decision::Allow],
                Decision::Deny,
            ),
        ];
        for (decisions, want) in cases {
            let chain: Vec<Box<dyn Authorizer>> = decisions
                .iter()
                .map(|d| Box::new(Fixed(*d, "", UserRules::default())) as Box<dyn Authorizer>)
                .collect();
            assert_eq!(Union::new(chain).authorize(&attrs(&[])).0, want);
        }
    }

    #[test]
    fn union_reasons() {
        let chain: Vec<Box<dyn Authorizer>> = vec![
            Box::new(Fixed(Decision::NoOpinion, "first", UserRules::default())),
            Box::new(Fixed(Decision::NoOpinion, "", UserRules::default())),
            Box::new(Fixed(Decision::NoOpinion, "third", UserRules::default())),
        ];
        assert_eq!(
            Union::new(chain).authorize(&attrs(&[])),
            (Decision::NoOpinion, "first\nthird".to_string())
        );
        let chain: Vec<Box<dyn Authorizer>> = vec![
            Box::new(Fixed(Decision::NoOpinion, "first", UserRules::default())),
            Box::new(Fixed(Decision::Deny, "nope", UserRules::default())),
        ];
        assert_eq!(
            Union::new(chain).authorize(&attrs(&[])),
            (Decision::Deny, "nope".to_string())
        );
    }

    #[test]
    fn superuser_chain() {
        let chain = Union::with_superuser(vec![Box::new(AlwaysDeny)]);
        assert_eq!(chain.len(), 2);
        assert_eq!(
            chain.authorize(&attrs(&["system:masters"])),
            (Decision::Allow, String::new())
        );
        assert_eq!(
            chain.authorize(&attrs(&["system:authenticated"])),
            (Decision::NoOpinion, "Everything is forbidden.".to_string())
        );
        // The superuser authorizer adds no rules.
        assert_eq!(
            chain.rules_for(&UserInfo::new("u", ["system:masters"]), ""),
            UserRules::default()
        );
    }

    #[test]
    fn union_rules() {
        let one = UserRules {
            resource_rules: vec![ResourceRule {
                verbs: vec!["get".into()],
                ..ResourceRule::default()
            }],
            non_resource_rules: vec![],
            incomplete: false,
            evaluation_error: Some("e1".into()),
        };
        let two = UserRules {
            resource_rules: vec![],
            non_resource_rules: vec![NonResourceRule {
                verbs: vec!["get".into()],
                non_resource_urls: vec!["/x".into()],
            }],
            incomplete: true,
            evaluation_error: Some("e2".into()),
        };
        let chain: Vec<Box<dyn Authorizer>> = vec![
            Box::new(Fixed(Decision::NoOpinion, "", one)),
            Box::new(Fixed(Decision::NoOpinion, "", two)),
        ];
        let rules = Union::new(chain).rules_for(&UserInfo::default(), "ns");
        assert_eq!(rules.resource_rules.len(), 1);
        assert_eq!(rules.non_resource_rules.len(), 1);
        assert!(rules.incomplete);
        assert_eq!(rules.evaluation_error.as_deref(), Some("[e1, e2]"));
    }
}
