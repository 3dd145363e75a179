//! Create-only resources that store nothing (upstream's `rest.Creater` without a
//! `Store`): the request's object goes in, a computed object comes out with `201 Created`.
//! The catalog lists them with verbs `["create"]` and no storage prefix; discovery
//! advertises them like any other resource. `bindings` is not one of them: it writes pods.

use api::catalog::ResourceInfo;
use api::{ApiError, FieldError};
use auth::Authorizer;
use serde_json::{Map, Value, json};

use crate::authn::UserInfo;

/// What a virtual create may use besides the request's object.
pub struct Ctx<'a> {
    /// The requesting user.
    pub user: &'a UserInfo,
    /// Now, RFC 3339.
    pub now: &'a str,
    /// The request's namespace ("" for cluster-scoped resources).
    pub namespace: &'a str,
    /// The server's authorizer chain.
    pub authz: &'a dyn Authorizer,
    /// Authenticates a bearer token for audiences (for `TokenReview`): the user and the
    /// audiences it is valid for, or why not.
    #[allow(clippy::type_complexity)]
    pub authenticate_token:
        &'a (dyn Fn(&str, &[String]) -> Result<(UserInfo, Vec<String>), String> + Send + Sync),
}

/// One virtual resource's create.
pub trait VirtualResource: Send + Sync {
    /// The object to return for `object`.
    fn create(&self, object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError>;
}

/// `authentication.k8s.io/v1` `UserInfo` of a user (empty fields left out).
pub(crate) fn user_info(user: &UserInfo) -> Value {
    let mut m = Map::new();
    m.insert("username".into(), json!(user.name));
    if !user.uid.is_empty() {
        m.insert("uid".into(), json!(user.uid));
    }
    if !user.groups.is_empty() {
        m.insert("groups".into(), json!(user.groups));
    }
    if !user.extra.is_empty() {
        m.insert("extra".into(), json!(user.extra));
    }
    Value::Object(m)
}

/// `authentication.k8s.io` `SelfSubjectReview`: the requesting user as the server sees it
/// (upstream's `pkg/registry/authentication/selfsubjectreview`).
struct SelfSubjectReview;

impl VirtualResource for SelfSubjectReview {
    fn create(&self, object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let (user_info, now) = (user_info(ctx.user), ctx.now);
        Ok(json!({
            "kind": "SelfSubjectReview",
            "apiVersion": object.get("apiVersion").cloned().unwrap_or(json!("authentication.k8s.io/v1")),
            "metadata": {"creationTimestamp": now},
            "status": {"userInfo": user_info},
        }))
    }
}

const AUTHZ_GROUP: &str = "authorization.k8s.io";

fn present(v: &Value) -> bool {
    !v.is_null()
}

/// `ValidateSubjectAccessReviewSpec` (`check_user`: the non-self kinds need a user or a
/// group).
fn validate_spec(spec: &Value, check_user: bool) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let ra = &spec["resourceAttributes"];
    let nra = &spec["nonResourceAttributes"];
    if present(ra) && present(nra) {
        errs.push(FieldError::invalid(
            "spec.nonResourceAttributes",
            nra.clone(),
            "cannot be specified in combination with resourceAttributes",
        ));
    }
    if !present(ra) && !present(nra) {
        errs.push(FieldError::invalid(
            "spec.resourceAttributes",
            Value::Null,
            "exactly one of nonResourceAttributes or resourceAttributes must be specified",
        ));
    }
    if check_user {
        let user = spec["user"].as_str().unwrap_or_default();
        let no_groups = spec["groups"].as_array().is_none_or(|g| g.is_empty());
        if user.is_empty() && no_groups {
            errs.push(FieldError::invalid(
                "spec.user",
                user,
                "at least one of user or group must be specified",
            ));
        }
    }
    errs
}

/// Whether `metadata` is empty (a client's `creationTimestamp: null` and `managedFields`
/// do not count), optionally ignoring the namespace.
fn metadata_empty(obj: &Value, except_namespace: bool) -> bool {
    match obj.get("metadata") {
        None | Some(Value::Null) => true,
        Some(Value::Object(m)) => m.iter().all(|(k, v)| {
            v.is_null()
                || k == "managedFields"
                || (except_namespace && k == "namespace")
                || (v.as_str() == Some(""))
                || v.as_object().is_some_and(|o| o.is_empty())
        }),
        Some(_) => false,
    }
}

fn str_of(v: &Value, k: &str) -> String {
    v[k].as_str().unwrap_or_default().to_string()
}

/// `ResourceAttributesFrom` / `NonResourceAttributesFrom`.
fn attributes_of(user: UserInfo, spec: &Value) -> auth::Attributes {
    let ra = &spec["resourceAttributes"];
    if present(ra) {
        auth::Attributes {
            user,
            verb: str_of(ra, "verb"),
            namespace: str_of(ra, "namespace"),
            api_group: str_of(ra, "group"),
            api_version: str_of(ra, "version"),
            resource: str_of(ra, "resource"),
            subresource: str_of(ra, "subresource"),
            name: str_of(ra, "name"),
            resource_request: true,
            path: String::new(),
            field_selector: ra["fieldSelector"]["rawSelector"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        }
    } else {
        let nra = &spec["nonResourceAttributes"];
        auth::Attributes {
            user,
            verb: str_of(nra, "verb"),
            path: str_of(nra, "path"),
            ..Default::default()
        }
    }
}

/// The user a spec names: `<name_field>`, `uid`, `groups`, `extra` (a `SubjectAccessReview`
/// names it in `user`, a CertificateSigningRequest in `username`).
pub(crate) fn user_of_spec(spec: &Value, name_field: &str) -> UserInfo {
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let mut user = UserInfo {
        name: str_of(spec, name_field),
        uid: str_of(spec, "uid"),
        groups: strings(&spec["groups"]),
        ..Default::default()
    };
    if let Some(extra) = spec["extra"].as_object() {
        for (k, v) in extra {
            user.extra.insert(k.clone(), strings(v));
        }
    }
    user
}

/// The user a `SubjectAccessReview` asks about (`spec.user`, `uid`, `groups`, `extra`).
fn spec_user(spec: &Value) -> UserInfo {
    user_of_spec(spec, "user")
}

/// `object` with `status` set; a missing `metadata.creationTimestamp` is `null`, as Go
/// renders the zero time of these never-stored objects.
fn with_status(mut object: Value, status: Value) -> Value {
    if let Some(m) = object.as_object_mut() {
        m.insert("status".into(), status);
        let meta = m.entry("metadata").or_insert_with(|| json!({}));
        if let Some(meta) = meta.as_object_mut() {
            meta.entry("creationTimestamp").or_insert(Value::Null);
        }
    }
    object
}

/// The review with its `status` from the authorizer's answer.
fn answered(object: Value, authz: &dyn Authorizer, attributes: &auth::Attributes) -> Value {
    let (decision, reason) = authz.authorize(attributes);
    let mut status = Map::new();
    status.insert("allowed".into(), json!(decision == auth::Decision::Allow));
    if decision == auth::Decision::Deny {
        status.insert("denied".into(), json!(true));
    }
    if !reason.is_empty() {
        status.insert("reason".into(), json!(reason));
    }
    with_status(object, Value::Object(status))
}

fn invalid(kind: &str, errs: &[FieldError]) -> ApiError {
    ApiError::invalid(AUTHZ_GROUP, kind, "", errs)
}

/// `authorization.k8s.io` `SubjectAccessReview` (may `spec.user` do this?) and
/// `SelfSubjectAccessReview` (may I do this?).
struct AccessReview {
    kind: &'static str,
    /// Self reviews ask about the requesting user, others about `spec.user`.
    about_self: bool,
}

impl VirtualResource for AccessReview {
    fn create(&self, object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let spec = &object["spec"];
        let mut errs = validate_spec(spec, !self.about_self);
        if !metadata_empty(&object, false) {
            errs.push(FieldError::invalid(
                "metadata",
                object["metadata"].clone(),
                "must be empty",
            ));
        }
        if !errs.is_empty() {
            return Err(invalid(self.kind, &errs));
        }
        let user = if self.about_self {
            ctx.user.clone()
        } else {
            spec_user(spec)
        };
        let attributes = attributes_of(user, spec);
        Ok(answered(object, ctx.authz, &attributes))
    }
}

/// `authorization.k8s.io` `LocalSubjectAccessReview`: a `SubjectAccessReview` limited to
/// the request's namespace.
struct LocalSubjectAccessReview;

impl VirtualResource for LocalSubjectAccessReview {
    fn create(&self, mut object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let spec = object["spec"].clone();
        let object_ns = api::meta::namespace(&object)
            .unwrap_or_default()
            .to_string();
        if object_ns.is_empty() && !ctx.namespace.is_empty() {
            api::meta::set_str(&mut object, "namespace", ctx.namespace.to_string());
        }
        let namespace = api::meta::namespace(&object)
            .unwrap_or_default()
            .to_string();
        let mut errs = validate_spec(&spec, true);
        if !metadata_empty(&object, true) {
            errs.push(FieldError::invalid(
                "metadata",
                object["metadata"].clone(),
                "must be empty except for namespace",
            ));
        }
        let ra = &spec["resourceAttributes"];
        if present(ra) && str_of(ra, "namespace") != namespace {
            errs.push(FieldError::invalid(
                "spec.resourceAttributes.namespace",
                str_of(ra, "namespace"),
                "must match metadata.namespace",
            ));
        }
        if present(&spec["nonResourceAttributes"]) {
            errs.push(FieldError::invalid(
                "spec.nonResourceAttributes",
                spec["nonResourceAttributes"].clone(),
                "disallowed on this kind of request",
            ));
        }
        if !errs.is_empty() {
            return Err(invalid("LocalSubjectAccessReview", &errs));
        }
        if ctx.namespace.is_empty() {
            return Err(ApiError::bad_request(
                "namespace is required on this type: ",
            ));
        }
        if ctx.namespace != namespace {
            return Err(ApiError::bad_request(format!(
                "spec.resourceAttributes.namespace must match namespace: {}",
                ctx.namespace
            )));
        }
        let attributes = attributes_of(spec_user(&spec), &spec);
        Ok(answered(object, ctx.authz, &attributes))
    }
}

/// `authorization.k8s.io` `SelfSubjectRulesReview`: what may I do in `spec.namespace`?
struct SelfSubjectRulesReview;

impl VirtualResource for SelfSubjectRulesReview {
    fn create(&self, object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let namespace = object["spec"]["namespace"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if namespace.is_empty() {
            return Err(ApiError::bad_request("no namespace on request"));
        }
        let rules = ctx.authz.rules_for(ctx.user, &namespace);
        let resource_rules: Vec<api::k8s::api::authorization::v1::ResourceRule> =
            rules.resource_rules.into_iter().map(Into::into).collect();
        let non_resource_rules: Vec<api::k8s::api::authorization::v1::NonResourceRule> = rules
            .non_resource_rules
            .into_iter()
            .map(Into::into)
            .collect();
        let mut status = json!({
            "resourceRules": resource_rules,
            "nonResourceRules": non_resource_rules,
            "incomplete": rules.incomplete,
        });
        if let Some(e) = rules.evaluation_error {
            status["evaluationError"] = json!(e);
        }
        Ok(with_status(object, status))
    }
}

/// `authentication.k8s.io` `TokenReview`: who is this bearer token?
struct TokenReview;

impl VirtualResource for TokenReview {
    fn create(&self, object: Value, ctx: &Ctx<'_>) -> Result<Value, ApiError> {
        let token = object["spec"]["token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        if token.is_empty() {
            return Err(ApiError::invalid(
                "authentication.k8s.io",
                "TokenReview",
                "",
                &[FieldError::required("spec.token", "")],
            ));
        }
        let asked: Vec<String> = object["spec"]["audiences"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect();
        let status = match (ctx.authenticate_token)(&token, &asked) {
            Ok((user, granted)) => {
                let mut st = json!({"authenticated": true, "user": user_info(&user)});
                if !granted.is_empty() {
                    st["audiences"] = json!(granted);
                }
                st
            }
            Err(e) => json!({"user": {}, "error": e}),
        };
        Ok(with_status(object, status))
    }
}

/// The virtual resource serving `info`, if it is one.
pub fn lookup(info: &ResourceInfo) -> Option<&'static dyn VirtualResource> {
    if !info.storage_prefix.is_empty() {
        return None;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("authentication.k8s.io", "selfsubjectreviews") => Some(&SelfSubjectReview),
        ("authentication.k8s.io", "tokenreviews") => Some(&TokenReview),
        (AUTHZ_GROUP, "subjectaccessreviews") => Some(&AccessReview {
            kind: "SubjectAccessReview",
            about_self: false,
        }),
        (AUTHZ_GROUP, "localsubjectaccessreviews") => Some(&LocalSubjectAccessReview),
        (AUTHZ_GROUP, "selfsubjectaccessreviews") => Some(&AccessReview {
            kind: "SelfSubjectAccessReview",
            about_self: true,
        }),
        (AUTHZ_GROUP, "selfsubjectrulesreviews") => Some(&SelfSubjectRulesReview),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use auth::rules::PolicyRuleBuilder;

    fn no_tokens(_: &str, _: &[String]) -> Result<(UserInfo, Vec<String>), String> {
        Err("no".into())
    }

    fn ctx<'a>(user: &'a UserInfo, namespace: &'a str, authz: &'a dyn Authorizer) -> Ctx<'a> {
        Ctx {
            user,
            now: "2026-01-01T00:00:00Z",
            namespace,
            authz,
            authenticate_token: &no_tokens,
        }
    }

    fn virtual_of(plural: &str) -> &'static dyn VirtualResource {
        let info = api::catalog::builtin()
            .into_iter()
            .find(|r| r.plural == plural)
            .unwrap();
        lookup(&info).unwrap()
    }

    fn rbac() -> auth::RbacAuthorizer<auth::StaticRbac> {
        use api::k8s::api::rbac::v1::{ClusterRole, RoleBinding, RoleRef, Subject};
        let role = ClusterRole {
            metadata: api::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("pod-reader".into()),
                ..Default::default()
            },
            rules: Some(vec![
                PolicyRuleBuilder::new(&["get", "list"])
                    .groups(&[""])
                    .resources(&["pods"])
                    .build(),
            ]),
            ..Default::default()
        };
        let binding = RoleBinding {
            metadata: api::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some("b".into()),
                namespace: Some("dev".into()),
                ..Default::default()
            },
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "ClusterRole".into(),
                name: "pod-reader".into(),
            },
            subjects: Some(vec![Subject {
                kind: "User".into(),
                name: "alice".into(),
                ..Default::default()
            }]),
        };
        auth::RbacAuthorizer::new(
            auth::StaticRbac::new()
                .with_cluster_role(role)
                .with_role_binding(binding),
        )
    }

    #[test]
    fn subject_access_review_answers_for_the_spec_user() {
        let admin = UserInfo::new("admin", ["system:masters"]);
        let authz = rbac();
        let sar = virtual_of("subjectaccessreviews");
        let ask = |ns: &str, verb: &str| {
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "metadata": {"creationTimestamp": null},
                "spec": {"user": "alice", "resourceAttributes": {"namespace": ns, "verb": verb, "resource": "pods"}}})
        };
        let out = sar
            .create(ask("dev", "list"), &ctx(&admin, "", &authz))
            .unwrap();
        assert_eq!(out["status"]["allowed"], json!(true));
        assert!(
            out["status"]["reason"]
                .as_str()
                .unwrap()
                .starts_with("RBAC: allowed by RoleBinding")
        );
        let out = sar
            .create(ask("prod", "list"), &ctx(&admin, "", &authz))
            .unwrap();
        assert_eq!(out["status"], json!({"allowed": false}));
        let out = sar
            .create(ask("dev", "delete"), &ctx(&admin, "", &authz))
            .unwrap();
        assert_eq!(out["status"]["allowed"], json!(false));

        // No user or group, and neither kind of attributes.
        let e = sar
            .create(json!({"spec": {}}), &ctx(&admin, "", &authz))
            .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains(
                "exactly one of nonResourceAttributes or resourceAttributes must be specified"
            ),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("at least one of user or group must be specified"),
            "{}",
            e.message
        );
        // Metadata must be empty.
        let e = sar
            .create(json!({"metadata": {"name": "x"}, "spec": {"user": "a", "nonResourceAttributes": {"path": "/x", "verb": "get"}}}), &ctx(&admin, "", &authz))
            .unwrap_err();
        assert!(
            e.message.contains("metadata: Invalid value"),
            "{}",
            e.message
        );
    }

    #[test]
    fn self_and_local_reviews() {
        let alice = UserInfo::new("alice", ["system:authenticated"]);
        let authz = rbac();
        let out = virtual_of("selfsubjectaccessreviews")
            .create(
                json!({"spec": {"resourceAttributes": {"namespace": "dev", "verb": "get", "resource": "pods"}}}),
                &ctx(&alice, "", &authz),
            )
            .unwrap();
        assert_eq!(out["status"]["allowed"], json!(true));

        let local = virtual_of("localsubjectaccessreviews");
        let body = json!({"spec": {"user": "alice", "resourceAttributes": {"namespace": "dev", "verb": "get", "resource": "pods"}}});
        let out = local
            .create(body.clone(), &ctx(&alice, "dev", &authz))
            .unwrap();
        assert_eq!(out["status"]["allowed"], json!(true));
        assert_eq!(out["metadata"]["namespace"], json!("dev"));
        let e = local
            .create(body, &ctx(&alice, "prod", &authz))
            .unwrap_err();
        assert_eq!(e.code, 422);
        assert!(
            e.message.contains("must match metadata.namespace"),
            "{}",
            e.message
        );

        let rules = virtual_of("selfsubjectrulesreviews")
            .create(
                json!({"spec": {"namespace": "dev"}}),
                &ctx(&alice, "", &authz),
            )
            .unwrap();
        assert_eq!(
            rules["status"]["resourceRules"],
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
        );
        assert_eq!(rules["status"]["incomplete"], json!(false));
        let e = virtual_of("selfsubjectrulesreviews")
            .create(json!({"spec": {}}), &ctx(&alice, "", &authz))
            .unwrap_err();
        assert_eq!(e.message, "no namespace on request");
    }

    #[test]
    fn self_subject_review() {
        let info = api::catalog::builtin()
            .into_iter()
            .find(|r| r.plural == "selfsubjectreviews")
            .unwrap();
        let v = lookup(&info).unwrap();
        let mut user = UserInfo {
            name: "alice".into(),
            uid: "42".into(),
            groups: vec!["dev".into(), "system:authenticated".into()],
            ..Default::default()
        };
        user.extra.insert("scopes".into(), vec!["a".into()]);
        let out = v
            .create(
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}),
                &ctx(&user, "", &auth::AlwaysDeny),
            )
            .unwrap();
        assert_eq!(
            out,
            json!({
                "kind": "SelfSubjectReview",
                "apiVersion": "authentication.k8s.io/v1",
                "metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"},
                "status": {"userInfo": {
                    "username": "alice", "uid": "42",
                    "groups": ["dev", "system:authenticated"],
                    "extra": {"scopes": ["a"]},
                }},
            })
        );
    }
}
