//! Attribute-based access control (`--authorization-mode=ABAC`): upstream's
//! `pkg/auth/authorizer/abac/abac.go` with the policy formats of `pkg/apis/abac` (`v1beta1`
//! lines and unversioned `v0` lines, converted as upstream converts them).
//!
//! The policy file holds one JSON object per line; blank lines and lines starting with `#`
//! are skipped. A line with `apiVersion` and `kind` is a versioned policy
//! (`{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec":
//! {...}}`); a line without them is a `v0` policy (`{"user": "alice", "readonly": true}`).

use serde::Deserialize;
use serde_json::Value;

use crate::attributes::{
    ALL_AUTHENTICATED, Attributes, Decision, NonResourceRule, ResourceRule, UserInfo, UserRules,
};
use crate::authorizer::Authorizer;
use crate::error::AuthError;
use crate::rules::non_resource_path_matches;

/// The ABAC API group.
pub const ABAC_GROUP: &str = "abac.authorization.kubernetes.io";

/// One policy rule in upstream's internal form (`abac.PolicySpec`), after conversion from
/// the file's version.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbacPolicy {
    /// The user the rule applies to; `*` for all users.
    pub user: String,
    /// The group the rule applies to; `*` for all groups.
    pub group: String,
    /// When true, only read-only requests (`get`, `list`, `watch`) match.
    pub readonly: bool,
    /// API group of resource requests; `*` for all.
    pub api_group: String,
    /// Resource of resource requests; `*` for all.
    pub resource: String,
    /// Namespace of resource requests; `*` for all (including cluster-scoped requests).
    pub namespace: String,
    /// Path of non-resource requests; `*` for all, `/foo/*` for the paths under `/foo/`.
    pub non_resource_path: String,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct V0Policy {
    user: Option<String>,
    group: Option<String>,
    readonly: Option<bool>,
    resource: Option<String>,
    namespace: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct V1beta1Policy {
    spec: Option<V1beta1Spec>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct V1beta1Spec {
    user: Option<String>,
    group: Option<String>,
    readonly: Option<bool>,
    api_group: Option<String>,
    resource: Option<String>,
    namespace: Option<String>,
    non_resource_path: Option<String>,
}

/// The `v0` → internal conversion: no user and group means all authenticated users, `*`
/// user or group means all authenticated users, an empty namespace or resource means all,
/// every API group matches, and leaving both namespace and resource empty also allows every
/// non-resource path.
fn convert_v0(p: V0Policy) -> AbacPolicy {
    let user = p.user.unwrap_or_default();
    let group = p.group.unwrap_or_default();
    let namespace = p.namespace.unwrap_or_default();
    let resource = p.resource.unwrap_or_default();
    let mut out = AbacPolicy {
        user: user.clone(),
        group: group.clone(),
        readonly: p.readonly.unwrap_or(false),
        api_group: "*".to_string(),
        namespace: namespace.clone(),
        resource: resource.clone(),
        non_resource_path: String::new(),
    };
    if user.is_empty() && group.is_empty() {
        out.group = ALL_AUTHENTICATED.to_string();
    }
    if user == "*" || group == "*" {
        out.group = ALL_AUTHENTICATED.to_string();
        out.user = String::new();
    }
    if namespace.is_empty() {
        out.namespace = "*".to_string();
    }
    if resource.is_empty() {
        out.resource = "*".to_string();
    }
    if namespace.is_empty() && resource.is_empty() {
        out.non_resource_path = "*".to_string();
    }
    out
}

/// The `v1beta1` → internal conversion: fields as they are, except that a `*` user or group
/// means all authenticated users.
fn convert_v1beta1(p: V1beta1Policy) -> AbacPolicy {
    let s = p.spec.unwrap_or_default();
    let mut out = AbacPolicy {
        user: s.user.unwrap_or_default(),
        group: s.group.unwrap_or_default(),
        readonly: s.readonly.unwrap_or(false),
        api_group: s.api_group.unwrap_or_default(),
        resource: s.resource.unwrap_or_default(),
        namespace: s.namespace.unwrap_or_default(),
        non_resource_path: s.non_resource_path.unwrap_or_default(),
    };
    if out.user == "*" || out.group == "*" {
        out.group = ALL_AUTHENTICATED.to_string();
        out.user = String::new();
    }
    out
}

/// How one line is to be read.
enum LineFormat {
    V0,
    V1beta1,
}

/// Decodes one policy line. `Ok((policy, unversioned))`.
fn decode_line(line: &str) -> Result<(AbacPolicy, bool), String> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
    let Value::Object(object) = &value else {
        return Err(
            "couldn't get version/kind; json parse error: the line is not a JSON object".into(),
        );
    };
    let string_field = |key: &str| -> Result<String, String> {
        match object.get(key) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(format!(
                "couldn't get version/kind; json parse error: {key} is not a string: {other}"
            )),
        }
    };
    let api_version = string_field("apiVersion")?;
    let kind = string_field("kind")?;
    let format = if api_version.is_empty() || kind.is_empty() {
        // Missing version or kind: an unversioned (v0) policy.
        LineFormat::V0
    } else if kind == "Policy" && api_version == format!("{ABAC_GROUP}/v1beta1") {
        LineFormat::V1beta1
    } else if kind == "Policy" && api_version == format!("{ABAC_GROUP}/v0") {
        LineFormat::V0
    } else {
        return Err(format!(
            "no kind {} is registered for version {} in scheme \"pkg/apis/abac/register.go\"",
            api::gofmt::go_quote(&kind),
            api::gofmt::go_quote(&api_version)
        ));
    };
    match format {
        LineFormat::V0 => {
            let p: V0Policy = serde_json::from_value(value).map_err(|e| e.to_string())?;
            Ok((convert_v0(p), api_version.is_empty() || kind.is_empty()))
        }
        LineFormat::V1beta1 => {
            let p: V1beta1Policy = serde_json::from_value(value).map_err(|e| e.to_string())?;
            Ok((convert_v1beta1(p), false))
        }
    }
}

/// The ABAC authorizer: a list of policies; a request is allowed when any policy matches,
/// otherwise there is no opinion (reason `No policy matched.`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AbacAuthorizer {
    policies: Vec<AbacPolicy>,
    unversioned_lines: usize,
}

impl AbacAuthorizer {
    /// Parses a policy file's contents (`NewFromFile` without the file). Errors name the
    /// line (counting from 1, blank and comment lines included).
    pub fn from_policy_file_contents(contents: &str) -> Result<Self, AuthError> {
        Self::from_policy_file(contents, "")
    }

    /// As [`AbacAuthorizer::from_policy_file_contents`], naming `path` in errors as upstream
    /// does (`error reading policy file <path>, line <n>: <line>: <cause>`).
    pub fn from_policy_file(contents: &str, path: &str) -> Result<Self, AuthError> {
        let mut out = AbacAuthorizer::default();
        for (index, raw) in contents.split('\n').enumerate() {
            // bufio.ScanLines drops a trailing \r.
            let line = raw.strip_suffix('\r').unwrap_or(raw);
            let trimmed = line.trim();
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            match decode_line(line) {
                Ok((policy, unversioned)) => {
                    out.policies.push(policy);
                    if unversioned {
                        out.unversioned_lines += 1;
                    }
                }
                Err(message) => {
                    return Err(AuthError::AbacPolicyLine {
                        path: path.to_string(),
                        line: index + 1,
                        data: line.to_string(),
                        message,
                    });
                }
            }
        }
        Ok(out)
    }

    /// An authorizer over already-converted policies.
    pub fn from_policies(policies: Vec<AbacPolicy>) -> Self {
        AbacAuthorizer {
            policies,
            unversioned_lines: 0,
        }
    }

    /// The policies, in file order.
    pub fn policies(&self) -> &[AbacPolicy] {
        &self.policies
    }

    /// How many lines were unversioned (`v0`); upstream logs a warning when there are some.
    pub fn unversioned_lines(&self) -> usize {
        self.unversioned_lines
    }
}

/// `subjectMatches`: a policy naming a user must name this user (or `*`); a policy naming a
/// group must name one of the user's groups (or `*`); a policy naming neither matches
/// nobody.
pub fn subject_matches(p: &AbacPolicy, user: &UserInfo) -> bool {
    let mut matched = false;
    if !p.user.is_empty() {
        if p.user == "*" {
            matched = true;
        } else {
            matched = p.user == user.name;
            if !matched {
                return false;
            }
        }
    }
    if !p.group.is_empty() {
        if p.group == "*" {
            matched = true;
        } else {
            matched = user.groups.contains(&p.group);
            if !matched {
                return false;
            }
        }
    }
    matched
}

fn verb_matches(p: &AbacPolicy, a: &Attributes) -> bool {
    a.is_read_only() || !p.readonly
}

fn non_resource_matches(p: &AbacPolicy, a: &Attributes) -> bool {
    !a.resource_request
        && !p.non_resource_path.is_empty()
        && non_resource_path_matches(&p.non_resource_path, &a.path)
}

fn resource_matches(p: &AbacPolicy, a: &Attributes) -> bool {
    a.resource_request
        && (p.namespace == "*" || p.namespace == a.namespace)
        && (p.resource == "*" || p.resource == a.resource)
        && (p.api_group == "*" || p.api_group == a.api_group)
}

/// Whether one policy allows the request.
pub fn policy_matches(p: &AbacPolicy, a: &Attributes) -> bool {
    subject_matches(p, &a.user)
        && verb_matches(p, a)
        && (resource_matches(p, a) || non_resource_matches(p, a))
}

fn verbs(readonly: bool) -> Vec<String> {
    if readonly {
        vec!["get".into(), "list".into(), "watch".into()]
    } else {
        vec!["*".into()]
    }
}

impl Authorizer for AbacAuthorizer {
    fn authorize(&self, attributes: &Attributes) -> (Decision, String) {
        if self.policies.iter().any(|p| policy_matches(p, attributes)) {
            (Decision::Allow, String::new())
        } else {
            (Decision::NoOpinion, "No policy matched.".to_string())
        }
    }

    fn rules_for(&self, user: &UserInfo, namespace: &str) -> UserRules {
        let mut out = UserRules::default();
        for p in &self.policies {
            if !subject_matches(p, user) || !(p.namespace == "*" || p.namespace == namespace) {
                continue;
            }
            if !p.resource.is_empty() {
                out.resource_rules.push(ResourceRule {
                    verbs: verbs(p.readonly),
                    api_groups: vec![p.api_group.clone()],
                    resources: vec![p.resource.clone()],
                    resource_names: Vec::new(),
                });
            }
            if !p.non_resource_path.is_empty() {
                out.non_resource_rules.push(NonResourceRule {
                    verbs: verbs(p.readonly),
                    non_resource_urls: vec![p.non_resource_path.clone()],
                });
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE_POLICY_FILE: &str = r#"{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group":"system:authenticated",  "nonResourcePath": "*", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"group":"system:unauthenticated", "nonResourcePath": "*", "readonly": true}}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"admin",     "namespace": "*",              "resource": "*",         "apiGroup": "*"                   }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"scheduler", "namespace": "*",              "resource": "pods",                       "readonly": true }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"scheduler", "namespace": "*",              "resource": "bindings"                                     }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"kubelet",   "namespace": "*",              "resource": "pods",                       "readonly": true }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"kubelet",   "namespace": "*",              "resource": "services",                   "readonly": true }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"kubelet",   "namespace": "*",              "resource": "endpoints",                  "readonly": true }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"kubelet",   "namespace": "*",              "resource": "events"                                       }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"alice",     "namespace": "projectCaribou", "resource": "*",         "apiGroup": "*"                   }}
{"apiVersion": "abac.authorization.kubernetes.io/v1beta1", "kind": "Policy", "spec": {"user":"bob",       "namespace": "projectCaribou", "resource": "*",         "apiGroup": "*", "readonly": true }}
"#;

    fn authed(name: &str) -> UserInfo {
        UserInfo::new(name, [ALL_AUTHENTICATED])
    }

    /// A request as upstream's tables build it: a resource request when a namespace or a
    /// resource is given.
    fn req(
        u: &UserInfo,
        verb: &str,
        resource: &str,
        group: &str,
        ns: &str,
        path: &str,
    ) -> Attributes {
        Attributes {
            user: u.clone(),
            verb: verb.into(),
            resource: resource.into(),
            api_group: group.into(),
            namespace: ns.into(),
            path: path.into(),
            resource_request: !ns.is_empty() || !resource.is_empty(),
            ..Attributes::default()
        }
    }

    #[test]
    fn loads_files() {
        assert_eq!(
            AbacAuthorizer::from_policy_file_contents("").map(|a| a.policies().len()),
            Ok(0)
        );
        let one = AbacAuthorizer::from_policy_file_contents(
            r#"{"user":"scheduler",  "readonly": true, "resource": "pods", "namespace":"ns1"}"#,
        );
        assert_eq!(one.map(|a| a.unversioned_lines()), Ok(1));
        let two = AbacAuthorizer::from_policy_file_contents(
            "{\"user\":\"scheduler\",  \"readonly\": true, \"resource\": \"pods\"}\r\n{\"user\":\"scheduler\",  \"readonly\": true, \"resource\": \"services\"}\n",
        );
        assert_eq!(two.map(|a| a.policies().len()), Ok(2));
        let example = AbacAuthorizer::from_policy_file_contents(EXAMPLE_POLICY_FILE);
        assert_eq!(
            example
                .as_ref()
                .map(|a| (a.policies().len(), a.unversioned_lines())),
            Ok((11, 0))
        );
    }

    #[test]
    fn bad_lines_name_their_line() {
        let contents = "# comment\n\n{\"user\":\"a\"}\n{not json}\n";
        let err = AbacAuthorizer::from_policy_file(contents, "/etc/abac.jsonl");
        let Err(AuthError::AbacPolicyLine {
            path,
            line,
            data,
            message,
        }) = err
        else {
            panic!("expected a line error, got {err:?}")
        };
        assert_eq!(
            (path.as_str(), line, data.as_str()),
            ("/etc/abac.jsonl", 4, "{not json}")
        );
        assert!(message.starts_with("couldn't get version/kind; json parse error: "));
        let err = AbacAuthorizer::from_policy_file_contents(
            r#"{"apiVersion": "abac.authorization.kubernetes.io/v1", "kind": "Policy", "spec": {}}"#,
        );
        assert_eq!(
            err.map_err(|e| e.to_string()),
            Err(r#"error reading policy file , line 1: {"apiVersion": "abac.authorization.kubernetes.io/v1", "kind": "Policy", "spec": {}}: no kind "Policy" is registered for version "abac.authorization.kubernetes.io/v1" in scheme "pkg/apis/abac/register.go""#.to_string())
        );
        let err = AbacAuthorizer::from_policy_file_contents(r#"{"user": 3}"#);
        assert!(matches!(
            err,
            Err(AuthError::AbacPolicyLine { line: 1, .. })
        ));
        let err = AbacAuthorizer::from_policy_file_contents("[1]");
        assert!(matches!(
            err,
            Err(AuthError::AbacPolicyLine { line: 1, .. })
        ));
    }

    // Upstream's TestAuthorizeV0.
    #[test]
    fn authorize_v0() {
        let a = AbacAuthorizer::from_policy_file_contents(
            r#"{                    "readonly": true, "resource": "events"   }
{"user":"scheduler", "readonly": true, "resource": "pods"     }
{"user":"scheduler",                   "resource": "bindings" }
{"user":"kubelet",   "readonly": true, "resource": "bindings" }
{"user":"kubelet",                     "resource": "events"   }
{"user":"alice",                                              "namespace": "projectCaribou"}
{"user":"bob",       "readonly": true,                        "namespace": "projectCaribou"}
"#,
        );
        let Ok(a) = a else { panic!("{a:?}") };
        let (s, al, c) = (authed("scheduler"), authed("alice"), authed("chuck"));
        let allow = Decision::Allow;
        let no = Decision::NoOpinion;
        let cases = [
            (req(&s, "list", "pods", "", "ns1", ""), allow),
            (req(&s, "list", "pods", "", "", ""), allow),
            (req(&s, "create", "pods", "", "ns1", ""), no),
            (req(&s, "create", "pods", "", "", ""), no),
            (req(&s, "get", "bindings", "", "ns1", ""), allow),
            (req(&s, "get", "bindings", "", "", ""), allow),
            (req(&al, "get", "pods", "", "projectCaribou", ""), allow),
            (req(&al, "get", "widgets", "", "projectCaribou", ""), allow),
            (req(&al, "get", "", "", "projectCaribou", ""), allow),
            (req(&al, "update", "pods", "", "projectCaribou", ""), allow),
            (
                req(&al, "update", "widgets", "", "projectCaribou", ""),
                allow,
            ),
            (req(&al, "update", "", "", "projectCaribou", ""), allow),
            (
                req(&al, "update", "foo", "bar", "projectCaribou", ""),
                allow,
            ),
            (req(&al, "get", "pods", "", "ns1", ""), no),
            (req(&al, "get", "widgets", "", "ns1", ""), no),
            (req(&al, "get", "", "", "ns1", ""), no),
            (req(&c, "get", "events", "", "ns1", ""), allow),
            (req(&c, "get", "events", "", "", ""), allow),
            (req(&c, "update", "events", "", "ns1", ""), no),
            (req(&c, "get", "pods", "", "ns1", ""), no),
            (req(&c, "get", "floop", "", "ns1", ""), no),
            (req(&c, "get", "", "", "", "/"), no),
        ];
        for (i, (attrs, want)) in cases.iter().enumerate() {
            assert_eq!(a.authorize(attrs).0, *want, "case {i}: {attrs:?}");
        }
        assert_eq!(
            a.authorize(&req(&c, "get", "pods", "", "ns1", "")).1,
            "No policy matched."
        );
    }

    // Upstream's TestAuthorizeV1beta1.
    #[test]
    fn authorize_v1beta1() {
        let a = AbacAuthorizer::from_policy_file_contents(
            r#"
		 # Comment line, after a blank line
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*",         "readonly": true,                                                        "nonResourcePath": "/api"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*",                                                                                  "nonResourcePath": "/custom"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*",                                                                                  "nonResourcePath": "/root/*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"noresource",                                                                         "nonResourcePath": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"*",         "readonly": true, "resource": "events",   "namespace": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"scheduler", "readonly": true, "resource": "pods",     "namespace": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"scheduler",                   "resource": "bindings", "namespace": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"kubelet",   "readonly": true, "resource": "bindings", "namespace": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"kubelet",                     "resource": "events",   "namespace": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"alice",                       "resource": "*",        "namespace": "projectCaribou"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"bob",       "readonly": true, "resource": "*",        "namespace": "projectCaribou"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"debbie",                      "resource": "pods",     "namespace": "projectCaribou"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"apigroupuser",                "resource": "*",        "namespace": "projectAnyGroup",   "apiGroup": "*"}}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"apigroupuser",                "resource": "*",        "namespace": "projectEmptyGroup", "apiGroup": "" }}
		 {"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{"user":"apigroupuser",                "resource": "*",        "namespace": "projectXGroup",     "apiGroup": "x"}}"#,
        );
        let Ok(a) = a else { panic!("{a:?}") };
        let s = authed("scheduler");
        let al = authed("alice");
        let c = authed("chuck");
        let d = authed("debbie");
        let nr = authed("noresource");
        let ag = authed("apigroupuser");
        let allow = Decision::Allow;
        let no = Decision::NoOpinion;
        let cases = [
            (req(&s, "list", "pods", "", "ns1", ""), allow),
            (req(&s, "list", "pods", "", "", ""), allow),
            (req(&s, "create", "pods", "", "ns1", ""), no),
            (req(&s, "create", "pods", "", "", ""), no),
            (req(&s, "get", "bindings", "", "ns1", ""), allow),
            (req(&s, "get", "bindings", "", "", ""), allow),
            (req(&al, "get", "pods", "", "projectCaribou", ""), allow),
            (req(&al, "get", "widgets", "", "projectCaribou", ""), allow),
            (req(&al, "get", "", "", "projectCaribou", ""), allow),
            (req(&al, "update", "pods", "", "projectCaribou", ""), allow),
            (
                req(&al, "update", "widgets", "", "projectCaribou", ""),
                allow,
            ),
            (req(&al, "update", "", "", "projectCaribou", ""), allow),
            (req(&al, "get", "pods", "", "ns1", ""), no),
            (req(&al, "get", "widgets", "", "ns1", ""), no),
            (req(&al, "get", "", "", "ns1", ""), no),
            (req(&d, "update", "pods", "", "projectCaribou", ""), allow),
            (req(&c, "get", "events", "", "ns1", ""), allow),
            (req(&c, "get", "events", "", "", ""), allow),
            (req(&c, "update", "events", "", "ns1", ""), no),
            (req(&c, "get", "pods", "", "ns1", ""), no),
            (req(&c, "get", "floop", "", "ns1", ""), no),
            (req(&c, "get", "", "", "", "/"), no),
            (req(&c, "get", "", "", "", "/api"), allow),
            (req(&c, "create", "", "", "", "/api"), no),
            (req(&c, "update", "", "", "", "/custom"), allow),
            (req(&c, "get", "", "", "", "/root"), no),
            (req(&c, "get", "", "", "", "/root/"), allow),
            (req(&c, "get", "", "", "", "/root/test/1/2/3"), allow),
            (req(&nr, "get", "", "", "", ""), allow),
            (req(&nr, "get", "", "", "", "/"), allow),
            (req(&nr, "get", "", "", "", "/foo/bar/baz"), allow),
            (req(&nr, "get", "", "", "bar", "/"), no),
            (req(&nr, "get", "foo", "", "bar", "/foo/bar/baz"), no),
            (req(&ag, "get", "foo", "x", "projectAnyGroup", ""), allow),
            (req(&ag, "get", "foo", "x", "projectEmptyGroup", ""), no),
            (req(&ag, "get", "foo", "x", "projectXGroup", ""), allow),
        ];
        for (i, (attrs, want)) in cases.iter().enumerate() {
            assert_eq!(a.authorize(attrs).0, *want, "case {i}: {attrs:?}");
        }
    }

    // Upstream's TestSubjectMatches, through the line parser.
    #[test]
    fn subject_matching() {
        let unauthed = UserInfo::new("system:anonymous", ["system:unauthenticated"]);
        let foo = UserInfo::new("Foo", [ALL_AUTHENTICATED]);
        let foo_groups = UserInfo::new("Foo", ["A", "B", "C", ALL_AUTHENTICATED]);
        let v0 = |user: &str, group: &str| format!(r#"{{"user":"{user}","group":"{group}"}}"#);
        let v1 = |user: &str, group: &str| {
            format!(
                r#"{{"apiVersion":"abac.authorization.kubernetes.io/v1beta1","kind":"Policy","spec":{{"user":"{user}","group":"{group}"}}}}"#
            )
        };
        type Case = (String, UserInfo, bool);
        let mut cases: Vec<Case> = Vec::new();
        for (mk, v0_empty_matches_authed) in [
            (&v0 as &dyn Fn(&str, &str) -> String, true),
            (&v1 as &dyn Fn(&str, &str) -> String, false),
        ] {
            cases.extend([
                (mk("", ""), unauthed.clone(), false),
                (mk("*", ""), unauthed.clone(), false),
                (mk("", "*"), unauthed.clone(), false),
                (mk("", ""), foo.clone(), v0_empty_matches_authed),
                (
                    mk("", ""),
                    UserInfo::new("Foo", ["a", "b", ALL_AUTHENTICATED]),
                    v0_empty_matches_authed,
                ),
                (mk("Foo", ""), unauthed.clone(), false),
                (
                    mk("Foo", ""),
                    UserInfo::new("Bar", [ALL_AUTHENTICATED]),
                    false,
                ),
                (
                    mk("Foo", ""),
                    UserInfo::new("foo", [ALL_AUTHENTICATED]),
                    false,
                ),
                (
                    mk("Foo", ""),
                    UserInfo::new("FooBar", [ALL_AUTHENTICATED]),
                    false,
                ),
                (mk("Foo", ""), foo.clone(), true),
                (mk("", "Foo"), unauthed.clone(), false),
                (
                    mk("", "A"),
                    UserInfo::new("FooBar", ["B", ALL_AUTHENTICATED]),
                    false,
                ),
                (mk("", "b"), foo_groups.clone(), false),
                (
                    mk("", "B"),
                    UserInfo::new("Foo", ["A", "BBB", "C", ALL_AUTHENTICATED]),
                    false,
                ),
                (mk("", "B"), foo_groups.clone(), true),
                (
                    mk("Foo", "B"),
                    UserInfo::new("Bar", ["A", "B", "C", ALL_AUTHENTICATED]),
                    false,
                ),
                (mk("Foo", "D"), foo_groups.clone(), false),
                (mk("Foo", "B"), foo_groups.clone(), true),
            ]);
        }
        for (line, user, want) in cases {
            let a = AbacAuthorizer::from_policy_file_contents(&line);
            let Ok(a) = a else { panic!("{line}: {a:?}") };
            assert_eq!(
                subject_matches(&a.policies()[0], &user),
                want,
                "{line} vs {user:?}"
            );
        }
    }

    // Upstream's TestRulesFor.
    #[test]
    fn rules_for_table() {
        let a = AbacAuthorizer::from_policy_file_contents(
            r#"
{                    "readonly": true, "resource": "events"   }
{"user":"scheduler", "readonly": true, "resource": "pods"     }
{"user":"scheduler",                   "resource": "bindings" }
{"user":"kubelet",   "readonly": true, "resource": "pods"     }
{"user":"kubelet",                     "resource": "events"   }
{"user":"alice",                                              "namespace": "projectCaribou"}
{"user":"bob",       "readonly": true,                        "namespace": "projectCaribou"}
{"user":"bob",       "readonly": true,                                                     "nonResourcePath": "*"}
{"group":"a",                          "resource": "bindings" }
{"group":"b",        "readonly": true,                                                     "nonResourcePath": "*"}
"#,
        );
        let Ok(a) = a else { panic!("{a:?}") };
        let ro = || vec!["get".to_string(), "list".to_string(), "watch".to_string()];
        let all = || vec!["*".to_string()];
        let rr = |verbs: Vec<String>, resource: &str| ResourceRule {
            verbs,
            api_groups: vec!["*".into()],
            resources: vec![resource.into()],
            resource_names: vec![],
        };
        let nrr = |verbs: Vec<String>| NonResourceRule {
            verbs,
            non_resource_urls: vec!["*".into()],
        };
        let cases = [
            (
                authed("scheduler"),
                "ns1",
                vec![rr(ro(), "events"), rr(ro(), "pods"), rr(all(), "bindings")],
                vec![],
            ),
            (
                UserInfo::new("kubelet", ["a", "b"]),
                "ns1",
                vec![
                    rr(ro(), "pods"),
                    rr(all(), "events"),
                    rr(all(), "bindings"),
                    rr(ro(), "*"),
                ],
                vec![nrr(ro())],
            ),
            (
                authed("alice"),
                "projectCaribou",
                vec![rr(ro(), "events"), rr(all(), "*")],
                vec![],
            ),
            (
                authed("bob"),
                "projectCaribou",
                vec![rr(ro(), "events"), rr(ro(), "*"), rr(ro(), "*")],
                vec![nrr(ro())],
            ),
            (
                UserInfo::new("chuck", ["a", "b"]),
                "ns1",
                vec![rr(all(), "bindings"), rr(ro(), "*")],
                vec![nrr(ro())],
            ),
        ];
        for (user, ns, resource_rules, non_resource_rules) in cases {
            let got = a.rules_for(&user, ns);
            assert_eq!(got.resource_rules, resource_rules, "{user:?}");
            assert_eq!(got.non_resource_rules, non_resource_rules, "{user:?}");
            assert!(!got.incomplete);
        }
    }
}
