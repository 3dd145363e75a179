//! Who may call the kubelet API, as upstream's kubelet (`pkg/kubelet/server/auth.go`,
//! webhook authentication and authorization): a client certificate signed by the client
//! CA, else a bearer token checked with a `TokenReview`; then a `SubjectAccessReview` for
//! the `nodes/<subresource>` the path maps to. Verdicts are cached as upstream's defaults
//! (tokens 2 min; authorizations 5 min allowed, 30 s denied).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::PostParams;

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

/// The authorization attributes of a kubelet API request: verb and `nodes` subresource.
pub fn request_attributes(method: &http::Method, path: &str) -> (&'static str, &'static str) {
    let verb = match *method {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "get",
    };
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    let sub = match first {
        "stats" => "stats",
        "metrics" => "metrics",
        "logs" => "log",
        "spec" => "spec",
        "checkpoint" => "checkpoint",
        "configz" => "configz",
        "healthz" => "healthz",
        "pods" => "pods",
        _ => "proxy",
    };
    (verb, sub)
}

/// The caller's identity from a verified client certificate: CN and organizations.
pub fn user_from_cert(der: &[u8]) -> Option<User> {
    let (_, cert) = x509_parser::parse_x509_certificate(der).ok()?;
    let subject = cert.subject();
    let name = subject
        .iter_common_name()
        .next()
        .and_then(|cn| cn.as_str().ok())?
        .to_string();
    let groups = subject
        .iter_organization()
        .filter_map(|o| o.as_str().ok().map(str::to_string))
        .collect();
    Some(User {
        name,
        uid: String::new(),
        groups,
    })
}

/// A cached authorization: who, verb, subresource.
type DecisionKey = (User, &'static str, &'static str);

/// Token and authorization reviews through the API server, with caches.
pub struct Reviewer {
    client: kube::Client,
    node_name: String,
    tokens: Mutex<HashMap<String, (Instant, Option<User>)>>,
    decisions: Mutex<HashMap<DecisionKey, (Instant, bool)>>,
}

const TOKEN_TTL: Duration = Duration::from_secs(120);
const ALLOWED_TTL: Duration = Duration::from_secs(300);
const DENIED_TTL: Duration = Duration::from_secs(30);

impl Reviewer {
    pub fn new(client: kube::Client, node_name: String) -> Reviewer {
        Reviewer {
            client,
            node_name,
            tokens: Mutex::new(HashMap::new()),
            decisions: Mutex::new(HashMap::new()),
        }
    }

    /// The user of a bearer token (`None`: not authenticated).
    pub async fn token(&self, token: &str) -> Option<User> {
        if let Ok(cache) = self.tokens.lock()
            && let Some((at, user)) = cache.get(token)
            && at.elapsed() < TOKEN_TTL
        {
            return user.clone();
        }
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: Some(token.to_string()),
                audiences: None,
            },
            ..Default::default()
        };
        let api: kube::Api<TokenReview> = kube::Api::all(self.client.clone());
        let user = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.and_then(|s| {
                if s.authenticated != Some(true) {
                    return None;
                }
                let u = s.user?;
                Some(User {
                    name: u.username.unwrap_or_default(),
                    uid: u.uid.unwrap_or_default(),
                    groups: u.groups.unwrap_or_default(),
                })
            }),
            Err(e) => {
                tracing::warn!(error = %e, "TokenReview failed");
                return None;
            }
        };
        if let Ok(mut cache) = self.tokens.lock() {
            if cache.len() > 10_000 {
                cache.clear();
            }
            cache.insert(token.to_string(), (Instant::now(), user.clone()));
        }
        user
    }

    /// Whether `user` may `verb` `nodes/<sub>` of this node.
    pub async fn authorize(&self, user: &User, verb: &'static str, sub: &'static str) -> bool {
        let key = (user.clone(), verb, sub);
        if let Ok(cache) = self.decisions.lock()
            && let Some((at, allowed)) = cache.get(&key)
            && at.elapsed() < if *allowed { ALLOWED_TTL } else { DENIED_TTL }
        {
            return *allowed;
        }
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(user.name.clone()),
                uid: (!user.uid.is_empty()).then(|| user.uid.clone()),
                groups: Some(user.groups.clone()),
                resource_attributes: Some(ResourceAttributes {
                    verb: Some(verb.to_string()),
                    resource: Some("nodes".into()),
                    subresource: Some(sub.to_string()),
                    name: Some(self.node_name.clone()),
                    version: Some("v1".into()),
                    ..Default::default()
                }),
                ..Default::default()
            },
            ..Default::default()
        };
        let api: kube::Api<SubjectAccessReview> = kube::Api::all(self.client.clone());
        let allowed = match api.create(&PostParams::default(), &review).await {
            Ok(r) => r.status.is_some_and(|s| s.allowed),
            Err(e) => {
                tracing::warn!(error = %e, "SubjectAccessReview failed");
                return false;
            }
        };
        if let Ok(mut cache) = self.decisions.lock() {
            if cache.len() > 10_000 {
                cache.clear();
            }
            cache.insert(key, (Instant::now(), allowed));
        }
        allowed
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn attributes_as_upstream() {
        use http::Method;
        assert_eq!(
            request_attributes(&Method::GET, "/metrics"),
            ("get", "metrics")
        );
        assert_eq!(
            request_attributes(&Method::GET, "/containerLogs/ns/p/c"),
            ("get", "proxy")
        );
        assert_eq!(
            request_attributes(&Method::POST, "/exec/ns/p/c"),
            ("create", "proxy")
        );
        assert_eq!(
            request_attributes(&Method::GET, "/stats/summary"),
            ("get", "stats")
        );
        assert_eq!(request_attributes(&Method::GET, "/pods"), ("get", "pods"));
        assert_eq!(request_attributes(&Method::GET, "/logs/"), ("get", "log"));
    }
}
