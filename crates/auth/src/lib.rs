//! Authorization decisions for the API server, with upstream Kubernetes' semantics and
//! messages. Pure logic: no IO, no async.
//!
//! - [`attributes`]: the user ([`UserInfo`]), the request ([`Attributes`]) and the answer
//!   ([`Decision`], [`UserRules`] for `SelfSubjectRulesReview`).
//! - [`authorizer`]: the [`Authorizer`] trait, [`AlwaysAllow`], [`AlwaysDeny`], the
//!   `system:masters` [`PrivilegedGroups`] shortcut and the [`Union`] chain.
//! - [`rbac`]: the [`RbacAuthorizer`] over an [`RbacSource`] snapshot (the API server's watch
//!   caches, or the in-memory [`StaticRbac`]).
//! - [`rules`]: policy-rule matching (`RuleAllows` and its helpers) and the rule builder.
//! - [`escalation`]: `Covers`, `ConfirmNoEscalation` and the `escalate`/`bind` checks.
//! - [`aggregation`]: the ClusterRole aggregation controller's computation.
//! - [`abac`]: the ABAC authorizer and its policy-file format.
//! - [`bootstrap`]: the default roles and bindings the API server creates.

pub mod abac;
pub mod aggregation;
pub mod attributes;
pub mod authorizer;
pub mod bootstrap;
pub mod error;
pub mod escalation;
mod gofmt;
pub mod node;
pub mod rbac;
pub mod rules;

pub use abac::{AbacAuthorizer, AbacPolicy};
pub use aggregation::{aggregate, aggregate_all};
pub use attributes::{
    Attributes, Decision, NonResourceRule, ResourceRule, SYSTEM_PRIVILEGED_GROUP, UserInfo,
    UserRules,
};
pub use authorizer::{AlwaysAllow, AlwaysDeny, Authorizer, PrivilegedGroups, Union};
pub use error::AuthError;
pub use escalation::{confirm_no_escalation, covers};
pub use node::{NodeAuthorizer, NodeGraphSource};
pub use rbac::{RbacAuthorizer, RbacSource, ResolvedRules, StaticRbac};
pub use rules::{PolicyRuleBuilder, rule_allows};
