//! Create-only resources that store nothing (upstream's `rest.Creater` without a
//! `Store`): the request's object goes in, a computed object comes out with `201 Created`.
//! The catalog lists them with verbs `["create"]` and no storage prefix; discovery
//! advertises them like any other resource. `bindings` is not one of them: it writes pods.

use api::ApiError;
use api::catalog::ResourceInfo;
use serde_json::{Map, Value, json};

use crate::authn::UserInfo;

/// One virtual resource's create.
pub trait VirtualResource: Send + Sync {
    /// The object to return for `object`, created by `user` at `now` (RFC 3339).
    fn create(&self, object: Value, user: &UserInfo, now: &str) -> Result<Value, ApiError>;
}

/// `authentication.k8s.io` `SelfSubjectReview`: the requesting user as the server sees it
/// (upstream's `pkg/registry/authentication/selfsubjectreview`).
struct SelfSubjectReview;

impl VirtualResource for SelfSubjectReview {
    fn create(&self, object: Value, user: &UserInfo, now: &str) -> Result<Value, ApiError> {
        let mut user_info = Map::new();
        user_info.insert("username".into(), json!(user.name));
        if !user.uid.is_empty() {
            user_info.insert("uid".into(), json!(user.uid));
        }
        if !user.groups.is_empty() {
            user_info.insert("groups".into(), json!(user.groups));
        }
        if !user.extra.is_empty() {
            user_info.insert("extra".into(), json!(user.extra));
        }
        Ok(json!({
            "kind": "SelfSubjectReview",
            "apiVersion": object.get("apiVersion").cloned().unwrap_or(json!("authentication.k8s.io/v1")),
            "metadata": {"creationTimestamp": now},
            "status": {"userInfo": user_info},
        }))
    }
}

/// The virtual resource serving `info`, if it is one.
pub fn lookup(info: &ResourceInfo) -> Option<&'static dyn VirtualResource> {
    if !info.storage_prefix.is_empty() {
        return None;
    }
    match (info.group.as_str(), info.plural.as_str()) {
        ("authentication.k8s.io", "selfsubjectreviews") => Some(&SelfSubjectReview),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
                &user,
                "2026-01-01T00:00:00Z",
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
