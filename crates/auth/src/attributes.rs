//! What an authorizer is asked about: the user, the request's attributes, and the answer.
//! Upstream: `k8s.io/apiserver/pkg/authentication/user` and
//! `k8s.io/apiserver/pkg/authorization/authorizer/interfaces.go`.

use std::collections::BTreeMap;

/// Group of the privileged loopback identities; always allowed (`user.SystemPrivilegedGroup`).
pub const SYSTEM_PRIVILEGED_GROUP: &str = "system:masters";
/// Group every node identity belongs to (`user.NodesGroup`).
pub const NODES_GROUP: &str = "system:nodes";
/// Group allowed to read the monitoring endpoints (`user.MonitoringGroup`).
pub const MONITORING_GROUP: &str = "system:monitoring";
/// Group of every unauthenticated request (`user.AllUnauthenticated`).
pub const ALL_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Group of every authenticated request (`user.AllAuthenticated`).
pub const ALL_AUTHENTICATED: &str = "system:authenticated";
/// The anonymous user's name (`user.Anonymous`).
pub const ANONYMOUS: &str = "system:anonymous";
/// The API server's own loopback user (`user.APIServerUser`).
pub const APISERVER_USER: &str = "system:apiserver";
/// kube-proxy's user (`user.KubeProxy`).
pub const KUBE_PROXY: &str = "system:kube-proxy";
/// The controller manager's user (`user.KubeControllerManager`).
pub const KUBE_CONTROLLER_MANAGER: &str = "system:kube-controller-manager";
/// The scheduler's user (`user.KubeScheduler`).
pub const KUBE_SCHEDULER: &str = "system:kube-scheduler";

/// Prefix of service-account user names (`system:serviceaccount:<ns>:<name>`).
pub const SERVICE_ACCOUNT_USERNAME_PREFIX: &str = "system:serviceaccount:";
/// Separator between a service account's namespace and name in its user name.
pub const SERVICE_ACCOUNT_USERNAME_SEPARATOR: &str = ":";
/// Prefix of the per-namespace service-account group (`system:serviceaccounts:<ns>`).
pub const SERVICE_ACCOUNT_GROUP_PREFIX: &str = "system:serviceaccounts:";
/// Group of every service account (`system:serviceaccounts`).
pub const ALL_SERVICE_ACCOUNTS_GROUP: &str = "system:serviceaccounts";

/// An authenticated identity (upstream's `user.Info` / `user.DefaultInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    /// The name that uniquely identifies the user.
    pub name: String,
    /// A unique value that changes when a user of the same name is re-created.
    pub uid: String,
    /// The groups the user belongs to.
    pub groups: Vec<String>,
    /// Extra authenticator-specific information (keys lower-case).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// The anonymous user (`system:anonymous` in `system:unauthenticated`).
    pub fn anonymous() -> Self {
        UserInfo::new(ANONYMOUS, [ALL_UNAUTHENTICATED])
    }

    /// Whether this is the anonymous user.
    pub fn is_anonymous(&self) -> bool {
        self.name == ANONYMOUS
    }

    /// A user with a name and groups, no uid and no extra.
    pub fn new<N, G, S>(name: N, groups: G) -> Self
    where
        N: Into<String>,
        G: IntoIterator<Item = S>,
        S: Into<String>,
    {
        UserInfo {
            name: name.into(),
            uid: String::new(),
            groups: groups.into_iter().map(Into::into).collect(),
            extra: BTreeMap::new(),
        }
    }

    /// The identity of service account `namespace/name` as the service-account token
    /// authenticator builds it: `system:serviceaccount:<ns>:<name>` in the groups
    /// `system:serviceaccounts` and `system:serviceaccounts:<ns>` (`serviceaccount.UserInfo`;
    /// the authenticator adds `system:authenticated` on top).
    pub fn service_account(namespace: &str, name: &str) -> Self {
        UserInfo {
            name: service_account_username(namespace, name),
            uid: String::new(),
            groups: vec![
                ALL_SERVICE_ACCOUNTS_GROUP.to_string(),
                format!("{SERVICE_ACCOUNT_GROUP_PREFIX}{namespace}"),
            ],
            extra: BTreeMap::new(),
        }
    }

    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// `serviceaccount.MakeUsername`: `system:serviceaccount:<namespace>:<name>`.
pub fn service_account_username(namespace: &str, name: &str) -> String {
    format!(
        "{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}{SERVICE_ACCOUNT_USERNAME_SEPARATOR}{name}"
    )
}

/// `serviceaccount.MatchesUsername`: whether `username` is exactly the user name of service
/// account `namespace/name`.
pub fn service_account_matches_username(namespace: &str, name: &str, username: &str) -> bool {
    username
        .strip_prefix(SERVICE_ACCOUNT_USERNAME_PREFIX)
        .and_then(|rest| rest.strip_prefix(namespace))
        .and_then(|rest| rest.strip_prefix(SERVICE_ACCOUNT_USERNAME_SEPARATOR))
        .is_some_and(|rest| rest == name)
}

/// The attributes of one request an authorizer decides on (upstream's `AttributesRecord`).
///
/// For a resource request (`resource_request == true`) `verb` is the Kubernetes verb (`get`,
/// `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, `proxy`, or a
/// special verb such as `bind`, `escalate`, `impersonate`, `approve`); for a non-resource
/// request it is the lower-cased HTTP method's verb (`get`, `put`, `post`, `patch`, `delete`)
/// and `path` holds the URL path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Attributes {
    /// Who is asking.
    pub user: UserInfo,
    /// The verb.
    pub verb: String,
    /// The object's namespace, empty for cluster-scoped requests.
    pub namespace: String,
    /// The API group (`""` for the core group).
    pub api_group: String,
    /// The API version requested (`*` when any).
    pub api_version: String,
    /// The resource (plural, lower-case).
    pub resource: String,
    /// The subresource, if any.
    pub subresource: String,
    /// The object's name, when the request names one.
    pub name: String,
    /// True for requests to API resources, false for other paths (`/healthz`, `/api`).
    pub resource_request: bool,
    /// The request path.
    pub path: String,
    /// The request's field selector, raw (`spec.nodeName=n1`), for list and watch.
    pub field_selector: String,
}

impl Attributes {
    /// A resource request: `verb` on `resource` in `api_group` (cluster-wide, no name; set
    /// the rest with the builder methods).
    pub fn resource(user: UserInfo, verb: &str, api_group: &str, resource: &str) -> Self {
        Attributes {
            user,
            verb: verb.to_string(),
            api_group: api_group.to_string(),
            resource: resource.to_string(),
            resource_request: true,
            ..Attributes::default()
        }
    }

    /// A non-resource request: `verb` on URL `path`.
    pub fn non_resource(user: UserInfo, verb: &str, path: &str) -> Self {
        Attributes {
            user,
            verb: verb.to_string(),
            path: path.to_string(),
            resource_request: false,
            ..Attributes::default()
        }
    }

    /// Sets the namespace.
    #[must_use]
    pub fn in_namespace(mut self, namespace: &str) -> Self {
        self.namespace = namespace.to_string();
        self
    }

    /// Sets the subresource.
    #[must_use]
    pub fn with_subresource(mut self, subresource: &str) -> Self {
        self.subresource = subresource.to_string();
        self
    }

    /// Sets the object name.
    #[must_use]
    pub fn named(mut self, name: &str) -> Self {
        self.name = name.to_string();
        self
    }

    /// Sets the API version.
    #[must_use]
    pub fn with_api_version(mut self, api_version: &str) -> Self {
        self.api_version = api_version.to_string();
        self
    }

    /// Sets the request path.
    #[must_use]
    pub fn with_path(mut self, path: &str) -> Self {
        self.path = path.to_string();
        self
    }

    /// `IsReadOnly`: the request has no side effects (`get`, `list`, `watch`).
    pub fn is_read_only(&self) -> bool {
        matches!(self.verb.as_str(), "get" | "list" | "watch")
    }
}

/// An authorizer's verdict (upstream's `authorizer.Decision`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decision {
    /// The authorizer allows the request; the chain stops.
    Allow,
    /// The authorizer denies the request; the chain stops.
    Deny,
    /// The authorizer has no opinion; the chain goes on to the next authorizer.
    NoOpinion,
}

/// One resource rule of a user, as a `SelfSubjectRulesReview` reports it
/// (`authorizer.DefaultResourceRuleInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceRule {
    /// Allowed verbs (`*` for all).
    pub verbs: Vec<String>,
    /// API groups (`*` for all).
    pub api_groups: Vec<String>,
    /// Resources, possibly `resource/subresource`, `*`, or `*/subresource`.
    pub resources: Vec<String>,
    /// Resource names the rule is limited to (empty: all).
    pub resource_names: Vec<String>,
}

/// One non-resource rule of a user (`authorizer.DefaultNonResourceRuleInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NonResourceRule {
    /// Allowed verbs (`*` for all).
    pub verbs: Vec<String>,
    /// URL paths; a trailing `*` matches any path with that prefix.
    pub non_resource_urls: Vec<String>,
}

fn none_if_empty(v: Vec<String>) -> Option<Vec<String>> {
    if v.is_empty() { None } else { Some(v) }
}

impl From<ResourceRule> for k8s_openapi::api::authorization::v1::ResourceRule {
    fn from(r: ResourceRule) -> Self {
        k8s_openapi::api::authorization::v1::ResourceRule {
            verbs: r.verbs,
            api_groups: none_if_empty(r.api_groups),
            resources: none_if_empty(r.resources),
            resource_names: none_if_empty(r.resource_names),
        }
    }
}

impl From<NonResourceRule> for k8s_openapi::api::authorization::v1::NonResourceRule {
    fn from(r: NonResourceRule) -> Self {
        k8s_openapi::api::authorization::v1::NonResourceRule {
            verbs: r.verbs,
            non_resource_urls: none_if_empty(r.non_resource_urls),
        }
    }
}

/// What `RulesFor` answers: the rules a user holds in a namespace, for
/// `SelfSubjectRulesReview`'s `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserRules {
    /// Rules on API resources.
    pub resource_rules: Vec<ResourceRule>,
    /// Rules on non-resource URLs.
    pub non_resource_rules: Vec<NonResourceRule>,
    /// True when an authorizer cannot enumerate its rules (the list is not complete).
    pub incomplete: bool,
    /// `status.evaluationError`: errors met while evaluating (the rules listed are still
    /// valid, rules being purely additive).
    pub evaluation_error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn service_account_user_names() {
        let sa = UserInfo::service_account("ns1", "builder");
        assert_eq!(sa.name, "system:serviceaccount:ns1:builder");
        assert_eq!(
            sa.groups,
            vec!["system:serviceaccounts", "system:serviceaccounts:ns1"]
        );
        // serviceaccount.MatchesUsername's table.
        let cases = [
            ("ns", "sa", "system:serviceaccount:ns:sa", true),
            ("ns", "sa", "system:serviceaccount:ns:sa2", false),
            ("ns", "sa", "system:serviceaccount:ns2:sa", false),
            ("ns", "sa", "system:serviceaccount:ns", false),
            ("ns", "sa", "system:serviceaccount:nssa", false),
            ("ns", "sa", "system:serviceaccounts:ns:sa", false),
            ("ns", "sa", "system:serviceaccount:ns:", false),
            ("", "", "system:serviceaccount::", true),
            ("ns", "sa", "", false),
            ("ns:a", "b", "system:serviceaccount:ns:a:b", true),
        ];
        for (ns, name, username, want) in cases {
            assert_eq!(
                service_account_matches_username(ns, name, username),
                want,
                "{ns}/{name} vs {username}"
            );
        }
    }

    #[test]
    fn read_only_verbs() {
        let u = UserInfo::new("u", Vec::<String>::new());
        for (verb, ro) in [
            ("get", true),
            ("list", true),
            ("watch", true),
            ("create", false),
            ("proxy", false),
            ("GET", false),
        ] {
            assert_eq!(
                Attributes::resource(u.clone(), verb, "", "pods").is_read_only(),
                ro
            );
        }
    }
}
