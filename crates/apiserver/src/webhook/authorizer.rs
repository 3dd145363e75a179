//! `--authorization-mode=Webhook` (upstream's `plugin/pkg/authorizer/webhook`): each
//! decision is a `SubjectAccessReview` POSTed to the server of
//! `--authorization-webhook-config-file`; `status.allowed` allows, `status.denied` denies,
//! neither is no opinion (with the webhook's reason). Answers are cached by the review's
//! spec, allowed ones for `--authorization-webhook-cache-authorized-ttl` (5m), others for
//! `--authorization-webhook-cache-unauthorized-ttl` (30s). A failed call (after one retry)
//! is no opinion with an empty reason, as upstream's `decisionOnError` (the error is logged).
//!
//! [`auth::Authorizer::authorize`] is synchronous and runs on the server's tokio worker
//! threads, so the HTTP call cannot simply be awaited. It runs on a dedicated thread with
//! its own single-threaded runtime (so it never depends on, or deadlocks, the caller's
//! runtime, whatever its flavour); the caller waits on a std channel, inside
//! `tokio::task::block_in_place` when it is on a multi-threaded runtime so that the
//! runtime moves its other tasks off the blocked worker. Cached answers never block.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use auth::{Attributes, Authorizer, Decision, UserInfo, UserRules};
use serde_json::{Map, Value, json};

use super::client::Kubeconfig;

/// How long one call may take (upstream's webhook client timeout).
const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// Pause before the single retry.
const RETRY_AFTER: Duration = Duration::from_millis(500);
/// Requests with more requester-controlled bytes than this are not cached.
const MAX_CACHED_ATTRIBUTE_BYTES: usize = 10_000;
/// Entries kept before the cache is pruned.
const MAX_ENTRIES: usize = 10_000;

/// The webhook authorizer's flags.
#[derive(Clone, Debug)]
pub struct WebhookAuthzConfig {
    /// `--authorization-webhook-config-file` (kubeconfig format).
    pub config_file: Option<PathBuf>,
    /// `--authorization-webhook-version`: `v1` (default) or `v1beta1`.
    pub version: String,
    /// `--authorization-webhook-cache-authorized-ttl` (default 5m).
    pub authorized_ttl: Duration,
    /// `--authorization-webhook-cache-unauthorized-ttl` (default 30s).
    pub unauthorized_ttl: Duration,
}

impl Default for WebhookAuthzConfig {
    fn default() -> Self {
        WebhookAuthzConfig {
            config_file: None,
            version: "v1".into(),
            authorized_ttl: Duration::from_secs(300),
            unauthorized_ttl: Duration::from_secs(30),
        }
    }
}

/// A `SubjectAccessReview` answer (`status`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Verdict {
    allowed: bool,
    denied: bool,
    reason: String,
}

type Job = (
    Vec<u8>,
    std::sync::mpsc::SyncSender<Result<(u16, Vec<u8>), String>>,
);

/// Sends one review and waits for the HTTP answer (blocking).
pub type Poster = Box<dyn Fn(Vec<u8>) -> Result<(u16, Vec<u8>), String> + Send + Sync>;

/// The webhook authorizer.
pub struct WebhookAuthorizer {
    version: String,
    authorized_ttl: Duration,
    unauthorized_ttl: Duration,
    cache: Mutex<HashMap<String, (Verdict, Instant)>>,
    post: Poster,
}

/// `fieldSelectorToAuthorizationAPI`: the requirements of a raw field selector.
fn field_requirements(raw: &str) -> Vec<Value> {
    let Ok(sel) = api::selector::FieldSelector::parse(raw) else {
        return Vec::new();
    };
    sel.requirements()
        .iter()
        .map(|r| {
            let op = match r.operator {
                api::selector::FieldOperator::NotEquals => "NotIn",
                _ => "In",
            };
            json!({"key": r.field, "operator": op, "values": [r.value]})
        })
        .collect()
}

fn put(m: &mut Map<String, Value>, k: &str, v: &str) {
    if !v.is_empty() {
        m.insert(k.into(), json!(v));
    }
}

impl WebhookAuthorizer {
    /// Reads the kubeconfig and starts the calling thread.
    pub fn new(config: &WebhookAuthzConfig) -> Result<WebhookAuthorizer, String> {
        let path = config
            .config_file
            .as_ref()
            .ok_or("authorization-mode Webhook's authorization config file not passed")?;
        let kubeconfig = Kubeconfig::load(path)?;
        let (jobs, mut rx) = tokio::sync::mpsc::unbounded_channel::<Job>();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("authorization webhook runtime: {e}"))?;
        std::thread::Builder::new()
            .name("authz-webhook".into())
            .spawn(move || {
                runtime.block_on(async move {
                    while let Some((body, reply)) = rx.recv().await {
                        let kc = kubeconfig.clone();
                        tokio::spawn(async move {
                            let _ = reply.send(kc.post(body, CALL_TIMEOUT).await);
                        });
                    }
                });
            })
            .map_err(|e| format!("authorization webhook thread: {e}"))?;
        let post: Poster = Box::new(move |body| {
            let (tx, rx) = std::sync::mpsc::sync_channel(1);
            jobs.send((body, tx))
                .map_err(|_| "the authorization webhook thread is gone".to_string())?;
            rx.recv_timeout(CALL_TIMEOUT + Duration::from_secs(5))
                .map_err(|e| format!("no answer from the authorization webhook: {e}"))?
        });
        WebhookAuthorizer::with_poster(config, post)
    }

    /// An authorizer sending its reviews through `post` (tests use a fake).
    pub fn with_poster(
        config: &WebhookAuthzConfig,
        post: Poster,
    ) -> Result<WebhookAuthorizer, String> {
        if !matches!(config.version.as_str(), "v1" | "v1beta1") {
            return Err(format!(
                "--authorization-webhook-version: unsupported version {:?} (v1, v1beta1)",
                config.version
            ));
        }
        Ok(WebhookAuthorizer {
            version: config.version.clone(),
            authorized_ttl: config.authorized_ttl,
            unauthorized_ttl: config.unauthorized_ttl,
            cache: Mutex::new(HashMap::new()),
            post,
        })
    }

    /// The review's `spec` (also the cache key).
    fn spec(&self, a: &Attributes) -> Value {
        let mut spec = Map::new();
        if a.resource_request {
            let mut ra = Map::new();
            put(&mut ra, "namespace", &a.namespace);
            put(&mut ra, "verb", &a.verb);
            put(&mut ra, "group", &a.api_group);
            put(&mut ra, "version", &a.api_version);
            put(&mut ra, "resource", &a.resource);
            put(&mut ra, "subresource", &a.subresource);
            put(&mut ra, "name", &a.name);
            let reqs = field_requirements(&a.field_selector);
            if !reqs.is_empty() {
                ra.insert("fieldSelector".into(), json!({"requirements": reqs}));
            }
            spec.insert("resourceAttributes".into(), Value::Object(ra));
        } else {
            let mut na = Map::new();
            put(&mut na, "path", &a.path);
            put(&mut na, "verb", &a.verb);
            spec.insert("nonResourceAttributes".into(), Value::Object(na));
        }
        put(&mut spec, "user", &a.user.name);
        if !a.user.groups.is_empty() {
            let key = if self.version == "v1beta1" {
                "group"
            } else {
                "groups"
            };
            spec.insert(key.into(), json!(a.user.groups));
        }
        if !a.user.extra.is_empty() {
            spec.insert("extra".into(), json!(a.user.extra));
        }
        put(&mut spec, "uid", &a.user.uid);
        Value::Object(spec)
    }

    /// Calls the webhook (one retry on failure).
    fn review(&self, spec: &Value) -> Result<Verdict, String> {
        let body = json!({
            "apiVersion": format!("authorization.k8s.io/{}", self.version),
            "kind": "SubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": spec,
            "status": {"allowed": false},
        });
        let bytes = serde_json::to_vec(&body).map_err(|e| e.to_string())?;
        let mut last = String::new();
        for attempt in 0..2 {
            if attempt > 0 {
                std::thread::sleep(RETRY_AFTER);
            }
            match (self.post)(bytes.clone()) {
                Ok((code, body)) if (200..300).contains(&code) => {
                    let v: Value = serde_json::from_slice(&body)
                        .map_err(|e| format!("couldn't get version/kind; json parse error: {e}"))?;
                    let st = &v["status"];
                    return Ok(Verdict {
                        allowed: st["allowed"].as_bool().unwrap_or(false),
                        denied: st["denied"].as_bool().unwrap_or(false),
                        reason: st["reason"].as_str().unwrap_or("").to_string(),
                    });
                }
                Ok((code, body)) => {
                    last = admission::webhook::review::unexpected_response(code, &body);
                    // Only server-side trouble is worth a retry.
                    if code < 500 && code != 429 {
                        break;
                    }
                }
                Err(e) => last = e,
            }
        }
        Err(last)
    }

    fn cached(&self, key: &str) -> Option<Verdict> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .get(key)
            .filter(|(_, until)| *until > Instant::now())
            .map(|(v, _)| v.clone())
    }

    fn remember(&self, key: String, verdict: Verdict) {
        let ttl = if verdict.allowed {
            self.authorized_ttl
        } else {
            self.unauthorized_ttl
        };
        if ttl.is_zero() {
            return;
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if cache.len() >= MAX_ENTRIES {
            let now = Instant::now();
            cache.retain(|_, (_, until)| *until > now);
            if cache.len() >= MAX_ENTRIES {
                cache.clear();
            }
        }
        cache.insert(key, (verdict, Instant::now() + ttl));
    }
}

/// Runs `f`, which blocks, telling a multi-threaded tokio runtime to move its other tasks
/// off this worker thread meanwhile.
fn blocking<T>(f: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(h) if h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(f)
        }
        _ => f(),
    }
}

/// `shouldCache`: requester-controlled attributes small enough to be cached.
fn should_cache(a: &Attributes) -> bool {
    [
        &a.namespace,
        &a.verb,
        &a.api_group,
        &a.api_version,
        &a.resource,
        &a.subresource,
        &a.name,
        &a.path,
    ]
    .iter()
    .map(|s| s.len())
    .sum::<usize>()
        < MAX_CACHED_ATTRIBUTE_BYTES
}

impl Authorizer for WebhookAuthorizer {
    fn authorize(&self, a: &Attributes) -> (Decision, String) {
        let spec = self.spec(a);
        let key = spec.to_string();
        let verdict = match self.cached(&key) {
            Some(v) => v,
            None => match blocking(|| self.review(&spec)) {
                Ok(v) => {
                    if should_cache(a) {
                        self.remember(key, v.clone());
                    }
                    v
                }
                Err(e) => {
                    tracing::warn!(error = %e, "Failed to make webhook authorizer request");
                    return (Decision::NoOpinion, String::new());
                }
            },
        };
        match (verdict.allowed, verdict.denied) {
            (true, true) => {
                tracing::warn!(
                    "webhook subject access review returned both allow and deny response"
                );
                (Decision::Deny, verdict.reason)
            }
            (_, true) => (Decision::Deny, verdict.reason),
            (true, false) => (Decision::Allow, verdict.reason),
            (false, false) => (Decision::NoOpinion, verdict.reason),
        }
    }

    /// Upstream's webhook authorizer resolves no rules.
    fn rules_for(&self, _user: &UserInfo, _namespace: &str) -> UserRules {
        UserRules {
            incomplete: true,
            evaluation_error: Some(
                "webhook authorizer does not support user rule resolution".into(),
            ),
            ..UserRules::default()
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// An authorizer over a fake webhook answering `status` to every review; the reviews
    /// it received.
    fn fake(
        config: WebhookAuthzConfig,
        answer: impl Fn(&Value) -> Result<(u16, Value), String> + Send + Sync + 'static,
    ) -> (WebhookAuthorizer, Arc<Mutex<Vec<Value>>>) {
        let seen: Arc<Mutex<Vec<Value>>> = Arc::default();
        let seen2 = Arc::clone(&seen);
        let post: Poster = Box::new(move |body| {
            let review: Value = serde_json::from_slice(&body).unwrap();
            seen2.lock().unwrap().push(review.clone());
            answer(&review).map(|(code, v)| (code, serde_json::to_vec(&v).unwrap()))
        });
        (WebhookAuthorizer::with_poster(&config, post).unwrap(), seen)
    }

    fn status(s: Value) -> Result<(u16, Value), String> {
        Ok((
            200,
            json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "status": s}),
        ))
    }

    fn pods(user: &str, verb: &str) -> Attributes {
        let mut u = UserInfo::new(user, ["system:authenticated"]);
        u.uid = format!("uid-{user}");
        Attributes::resource(u, verb, "", "pods")
            .in_namespace("default")
            .with_api_version("v1")
    }

    #[test]
    fn decisions_and_the_review_sent() {
        let (a, seen) = fake(WebhookAuthzConfig::default(), |r| {
            match r["spec"]["user"].as_str() {
                Some("hooked") => status(json!({"allowed": true, "reason": "ok"})),
                Some("blocked") => {
                    status(json!({"allowed": false, "denied": true, "reason": "nope"}))
                }
                Some("both") => status(json!({"allowed": true, "denied": true})),
                _ => status(json!({"allowed": false, "reason": "no idea"})),
            }
        });
        assert_eq!(
            a.authorize(&pods("hooked", "list")),
            (Decision::Allow, "ok".into())
        );
        assert_eq!(
            a.authorize(&pods("blocked", "list")),
            (Decision::Deny, "nope".into())
        );
        assert_eq!(a.authorize(&pods("both", "list")).0, Decision::Deny);
        assert_eq!(
            a.authorize(&pods("other", "list")),
            (Decision::NoOpinion, "no idea".into())
        );
        let first = seen.lock().unwrap()[0].clone();
        assert_eq!(
            first,
            json!({
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "metadata": {"creationTimestamp": null},
                "spec": {
                    "resourceAttributes": {"namespace": "default", "verb": "list", "version": "v1", "resource": "pods"},
                    "user": "hooked", "groups": ["system:authenticated"], "uid": "uid-hooked",
                },
                "status": {"allowed": false},
            })
        );
        // Non-resource requests and field selectors.
        let nr =
            Attributes::non_resource(UserInfo::new("x", Vec::<String>::new()), "get", "/healthz");
        a.authorize(&nr);
        let mut sel = pods("x", "list");
        sel.field_selector = "spec.nodeName=n1,metadata.name!=p".into();
        a.authorize(&sel);
        let seen = seen.lock().unwrap();
        assert_eq!(
            seen[4]["spec"],
            json!({"nonResourceAttributes": {"path": "/healthz", "verb": "get"}, "user": "x"})
        );
        assert_eq!(
            seen[5]["spec"]["resourceAttributes"]["fieldSelector"],
            json!({"requirements": [
                {"key": "metadata.name", "operator": "NotIn", "values": ["p"]},
                {"key": "spec.nodeName", "operator": "In", "values": ["n1"]},
            ]})
        );
    }

    #[test]
    fn answers_are_cached_for_their_ttl() {
        let config = WebhookAuthzConfig {
            authorized_ttl: Duration::from_secs(300),
            unauthorized_ttl: Duration::from_millis(100),
            ..WebhookAuthzConfig::default()
        };
        let (a, seen) = fake(config, |r| {
            status(json!({"allowed": r["spec"]["user"] == "hooked"}))
        });
        let calls = || seen.lock().unwrap().len();
        a.authorize(&pods("hooked", "list"));
        a.authorize(&pods("hooked", "list"));
        assert_eq!(calls(), 1);
        // Another verb is another question.
        a.authorize(&pods("hooked", "get"));
        assert_eq!(calls(), 2);
        a.authorize(&pods("other", "list"));
        a.authorize(&pods("other", "list"));
        assert_eq!(calls(), 3);
        std::thread::sleep(Duration::from_millis(150));
        a.authorize(&pods("other", "list"));
        assert_eq!(calls(), 4);
        a.authorize(&pods("hooked", "list"));
        assert_eq!(calls(), 4);
    }

    #[test]
    fn failures_are_no_opinion_after_one_retry() {
        let n = Arc::new(AtomicUsize::new(0));
        let n2 = Arc::clone(&n);
        let (a, _) = fake(WebhookAuthzConfig::default(), move |_| {
            n2.fetch_add(1, Ordering::SeqCst);
            Err("Post \"https://x\": dial tcp: connect: connection refused".into())
        });
        assert_eq!(
            a.authorize(&pods("hooked", "list")),
            (Decision::NoOpinion, String::new())
        );
        assert_eq!(n.load(Ordering::SeqCst), 2);
        // Not cached.
        a.authorize(&pods("hooked", "list"));
        assert_eq!(n.load(Ordering::SeqCst), 4);
        // A client error is not retried.
        let (a, seen) = fake(WebhookAuthzConfig::default(), |_| Ok((403, json!({}))));
        assert_eq!(a.authorize(&pods("hooked", "list")).0, Decision::NoOpinion);
        assert_eq!(seen.lock().unwrap().len(), 1);
    }

    #[test]
    fn v1beta1_and_rules() {
        let config = WebhookAuthzConfig {
            version: "v1beta1".into(),
            ..WebhookAuthzConfig::default()
        };
        let (a, seen) = fake(config, |_| status(json!({"allowed": true})));
        a.authorize(&pods("hooked", "list"));
        let r = seen.lock().unwrap()[0].clone();
        assert_eq!(r["apiVersion"], "authorization.k8s.io/v1beta1");
        assert_eq!(r["spec"]["group"], json!(["system:authenticated"]));
        let rules = a.rules_for(&UserInfo::default(), "ns");
        assert!(rules.incomplete);
        assert!(rules.resource_rules.is_empty());
        let bad = WebhookAuthzConfig {
            version: "v2".into(),
            ..WebhookAuthzConfig::default()
        };
        assert!(WebhookAuthorizer::with_poster(&bad, Box::new(|_| Err(String::new()))).is_err());
    }
}
