//! Service-account JWTs: the claims this server issues (upstream's `pkg/serviceaccount`
//! `Claims` and `LegacyClaims`) and their verification (`JWTTokenAuthenticator` with the
//! bound-token `validator` and the `legacyValidator`), as pure functions of the token, the
//! time and a view of the cluster's objects.
//!
//! A token is "ours" when it is a compact JWS whose unverified `iss` is one of the accepted
//! issuers (or the legacy issuer); anything else gets no opinion, so the next authenticator
//! may try it. A token of ours is accepted only with a valid signature of one of the
//! verification keys, an audience among the API audiences, `nbf`/`exp`/`iat` valid with
//! upstream's one-minute leeway, and the service account (and the bound pod, secret or
//! node) still there with the same UID.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::{Map, Value, json};

use super::keys::{PublicKey, SigningKey};
use crate::authn::UserInfo;
use crate::memo::{DigestMemo, Sha256};

/// The issuer of legacy (secret-based) tokens.
pub const LEGACY_ISSUER: &str = "kubernetes/serviceaccount";

/// The expiration kubelet asks for that triggers the extension to a year (1 h 7 s).
pub const WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS: i64 = 60 * 60 + 7;

/// The extended expiration of such tokens (a year).
pub const EXPIRATION_EXTENSION_SECONDS: i64 = 24 * 365 * 60 * 60;

/// go-jose's `DefaultLeeway`.
const LEEWAY_MS: i64 = 60_000;

const POD_NAME_KEY: &str = "authentication.kubernetes.io/pod-name";
const POD_UID_KEY: &str = "authentication.kubernetes.io/pod-uid";
const NODE_NAME_KEY: &str = "authentication.kubernetes.io/node-name";
const NODE_UID_KEY: &str = "authentication.kubernetes.io/node-uid";
const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

const LEGACY_NAMESPACE: &str = "kubernetes.io/serviceaccount/namespace";
const LEGACY_SECRET_NAME: &str = "kubernetes.io/serviceaccount/secret.name";
const LEGACY_SA_NAME: &str = "kubernetes.io/serviceaccount/service-account.name";
const LEGACY_SA_UID: &str = "kubernetes.io/serviceaccount/service-account.uid";

/// The label of legacy token secrets the token cleaner invalidated.
const LEGACY_TOKEN_INVALIDATED_LABEL: &str = "kubernetes.io/legacy-token-invalid-since";

/// The kinds of objects a token refers to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ObjectKind {
    ServiceAccount,
    Pod,
    Secret,
    Node,
}

impl ObjectKind {
    /// The resource, as the API's errors name it.
    pub fn plural(self) -> &'static str {
        match self {
            ObjectKind::ServiceAccount => "serviceaccounts",
            ObjectKind::Pod => "pods",
            ObjectKind::Secret => "secrets",
            ObjectKind::Node => "nodes",
        }
    }
}

/// What the verifier reads of the cluster (the server's watch caches; a map in tests).
pub trait Objects: Send + Sync {
    /// The object, or `None` when there is none (`namespace` is empty for nodes). Shared:
    /// every request with a token reads its service account.
    fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<Arc<Value>>;

    /// Waits, bounded, until the objects reflect every write the store held when called.
    /// A token whose objects were missing is checked once more after it, as upstream's
    /// token getter reads the store when its informer misses: a token minted for an
    /// object created a moment ago is not refused because the cache lags. The default
    /// has nothing to wait for.
    fn catch_up(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(std::future::ready(()))
    }
}

/// The verdict on a bearer token.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a service-account token of this server: no opinion.
    NotOurs,
    User(UserInfo),
    /// One of ours, not valid (the reason never contains the token).
    Rejected(String),
}

/// How tokens are verified.
#[derive(Clone, Debug)]
pub struct Verifier {
    /// The accepted issuers of bound tokens (`--service-account-issuer`).
    pub issuers: Vec<String>,
    /// The API audiences (`--api-audiences`).
    pub audiences: Vec<String>,
    /// The verification keys (`--service-account-key-file`).
    pub keys: Vec<PublicKey>,
    /// Tokens whose signature and claims were verified, so a client sending the same
    /// token on every request costs one signature check, not one per request.
    pub(crate) verified: VerifiedTokens,
}

/// A token that parsed as ours, with a valid signature, decoded.
#[derive(Debug)]
pub(crate) struct Decoded {
    legacy: bool,
    claims: Claims,
    payload: Value,
}

/// The memo of verified tokens by the SHA-256 of their text. It holds only what the
/// token itself proves (its signature, issuer and claims); whether its objects still
/// exist and whether it has expired are checked on every request, so caching never
/// keeps a revoked token alive (upstream's token cache accepts one for up to 10 s). Each
/// holds its decoded payload, about 1.5 KB, so at most 4,096 (about 6 MB) are held
/// however many tokens clients send; those past the bound are checked again.
pub(crate) type VerifiedTokens = DigestMemo<Arc<Decoded>, 4_096>;

/// The claims this server puts in a bound token, before signing.
#[derive(Clone, Debug, Default)]
pub struct BoundToken<'a> {
    pub issuer: &'a str,
    pub namespace: &'a str,
    pub service_account: (&'a str, &'a str),
    pub audiences: &'a [String],
    /// Issued at (seconds since the epoch).
    pub now: i64,
    pub expiration_seconds: i64,
    /// Seconds after `now` from which the token is stale (0: not set).
    pub warn_after: i64,
    /// `(name, uid)` of the bound objects (a pod may come with its node; the node's UID may
    /// be empty).
    pub pod: Option<(&'a str, &'a str)>,
    pub secret: Option<(&'a str, &'a str)>,
    pub node: Option<(&'a str, &'a str)>,
    /// The `jti` claim.
    pub id: &'a str,
}

fn reference((name, uid): (&str, &str)) -> Value {
    let mut m = Map::new();
    if !name.is_empty() {
        m.insert("name".into(), json!(name));
    }
    if !uid.is_empty() {
        m.insert("uid".into(), json!(uid));
    }
    Value::Object(m)
}

impl BoundToken<'_> {
    /// The JWT claims (upstream's `Claims`, with the issuer `GenerateToken` adds).
    pub fn claims(&self) -> Value {
        let mut k8s = Map::new();
        if !self.namespace.is_empty() {
            k8s.insert("namespace".into(), json!(self.namespace));
        }
        k8s.insert("serviceaccount".into(), reference(self.service_account));
        if let Some(p) = self.pod {
            k8s.insert("pod".into(), reference(p));
        }
        if let Some(s) = self.secret {
            k8s.insert("secret".into(), reference(s));
        }
        if let Some(n) = self.node {
            k8s.insert("node".into(), reference(n));
        }
        if self.warn_after != 0 {
            k8s.insert("warnafter".into(), json!(self.now + self.warn_after));
        }
        let mut claims = json!({
            "iss": self.issuer,
            "sub": auth::attributes::service_account_username(self.namespace, self.service_account.0),
            "aud": self.audiences,
            "iat": self.now,
            "nbf": self.now,
            "exp": self.now + self.expiration_seconds,
            "kubernetes.io": k8s,
        });
        if !self.id.is_empty() {
            claims["jti"] = json!(self.id);
        }
        claims
    }
}

/// The claims of a legacy token stored in a `kubernetes.io/service-account-token` Secret
/// (upstream's `LegacyClaims`), for `SigningKey::sign`.
pub fn legacy_claims(namespace: &str, sa_name: &str, sa_uid: &str, secret_name: &str) -> Value {
    json!({
        "iss": LEGACY_ISSUER,
        "sub": auth::attributes::service_account_username(namespace, sa_name),
        LEGACY_NAMESPACE: namespace,
        LEGACY_SECRET_NAME: secret_name,
        LEGACY_SA_NAME: sa_name,
        LEGACY_SA_UID: sa_uid,
    })
}

/// Signs `claims` (the helper tests and the token issuer share).
pub fn sign(key: &SigningKey, claims: &Value) -> Result<String, String> {
    key.sign(claims)
}

fn b64(part: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part.trim_end_matches('='))
        .ok()
}

/// The `aud` claim of a token's payload, unverified (call only for a verified token).
pub fn unverified_audiences(token: &str) -> Vec<String> {
    let payload = token
        .split('.')
        .nth(1)
        .and_then(b64)
        .and_then(|p| serde_json::from_slice::<Value>(&p).ok())
        .unwrap_or_default();
    Claims::parse(&payload)
        .map(|c| c.audience)
        .unwrap_or_default()
}

/// Go's `%q` of a string list: `["a" "b"]`.
fn quote_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one message as it is, several (without
/// duplicates) in brackets.
fn aggregate(errors: &[String]) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for e in errors {
        if !seen.contains(&e.as_str()) {
            seen.push(e);
        }
    }
    if errors.len() == 1 || seen.len() == 1 {
        seen.first().map(|s| s.to_string()).unwrap_or_default()
    } else {
        format!("[{}]", seen.join(", "))
    }
}

/// The registered claims of a token (go-jose's `jwt.Claims`).
#[derive(Debug, Default)]
struct Claims {
    issuer: String,
    subject: String,
    audience: Vec<String>,
    expiry: Option<i64>,
    not_before: Option<i64>,
    issued_at: Option<i64>,
    id: String,
}

fn string_claim(payload: &Value, name: &str) -> Result<String, String> {
    match payload.get(name) {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(_) => Err(format!("invalid claims: {name} is not a string")),
    }
}

fn date_claim(payload: &Value, name: &str) -> Result<Option<i64>, String> {
    match payload.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .or_else(|| n.as_f64().map(|f| f as i64))
            .map(Some)
            .ok_or_else(|| format!("invalid claims: {name} is not a date")),
        Some(_) => Err(format!("invalid claims: {name} is not a date")),
    }
}

impl Claims {
    fn parse(payload: &Value) -> Result<Claims, String> {
        let audience = match payload.get("aud") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::String(s)) => vec![s.clone()],
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| a.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or("invalid claims: aud is not a string or a list of strings")?,
            Some(_) => {
                return Err("invalid claims: aud is not a string or a list of strings".into());
            }
        };
        Ok(Claims {
            issuer: string_claim(payload, "iss")?,
            subject: string_claim(payload, "sub")?,
            audience,
            expiry: date_claim(payload, "exp")?,
            not_before: date_claim(payload, "nbf")?,
            issued_at: date_claim(payload, "iat")?,
            id: string_claim(payload, "jti")?,
        })
    }

    /// go-jose's `Validate` with `Expected{Time: now}` and the default leeway.
    fn validate_time(&self, now_ms: i64) -> Result<(), String> {
        if let Some(nbf) = self.not_before
            && now_ms + LEEWAY_MS < nbf.saturating_mul(1000)
        {
            return Err("service account token is not valid yet".into());
        }
        if let Some(exp) = self.expiry
            && now_ms - LEEWAY_MS > exp.saturating_mul(1000)
        {
            return Err("service account token has expired".into());
        }
        if let Some(iat) = self.issued_at
            && now_ms + LEEWAY_MS < iat.saturating_mul(1000)
        {
            return Err("service account token is issued in the future".into());
        }
        Ok(())
    }
}

/// A reference claim (`{name, uid}`).
#[derive(Debug, Default)]
struct Ref {
    name: String,
    uid: String,
}

fn ref_claim(k8s: &Value, name: &str) -> Option<Ref> {
    let r = k8s.get(name).filter(|v| !v.is_null())?;
    Some(Ref {
        name: r["name"].as_str().unwrap_or_default().to_string(),
        uid: r["uid"].as_str().unwrap_or_default().to_string(),
    })
}

fn uid_of(obj: &Value) -> &str {
    obj["metadata"]["uid"].as_str().unwrap_or_default()
}

/// The deletion timestamp of an object (milliseconds since the epoch).
fn deleted_at(obj: &Value) -> Option<i64> {
    let ts = obj["metadata"]["deletionTimestamp"].as_str()?;
    ts.parse::<jiff::Timestamp>()
        .ok()
        .map(|t| t.as_millisecond())
}

/// What a valid token says about its user (upstream's `ServiceAccountInfo`).
#[derive(Debug, Default)]
struct ServiceAccountInfo {
    namespace: String,
    name: String,
    uid: String,
    pod_name: String,
    pod_uid: String,
    node_name: String,
    node_uid: String,
    credential_id: String,
}

impl ServiceAccountInfo {
    fn user(self) -> UserInfo {
        let mut user = UserInfo::service_account(&self.namespace, &self.name);
        user.uid = self.uid;
        let mut extra = BTreeMap::new();
        if !self.pod_name.is_empty() && !self.pod_uid.is_empty() {
            extra.insert(POD_NAME_KEY.to_string(), vec![self.pod_name]);
            extra.insert(POD_UID_KEY.to_string(), vec![self.pod_uid]);
        }
        if !self.credential_id.is_empty() {
            extra.insert(CREDENTIAL_ID_KEY.to_string(), vec![self.credential_id]);
        }
        if !self.node_name.is_empty() {
            extra.insert(NODE_NAME_KEY.to_string(), vec![self.node_name]);
            if !self.node_uid.is_empty() {
                extra.insert(NODE_UID_KEY.to_string(), vec![self.node_uid]);
            }
        }
        user.extra = extra;
        user
    }
}

fn not_found(kind: ObjectKind, name: &str) -> String {
    format!("{} {name:?} not found", kind.plural())
}

/// The bound-token validator (upstream's `validator.Validate`).
fn validate_bound(
    claims: &Claims,
    payload: &Value,
    now_ms: i64,
    objects: &dyn Objects,
) -> Result<ServiceAccountInfo, String> {
    claims.validate_time(now_ms)?;
    // Things deleted before now - leeway are gone.
    let gone = |obj: &Value| deleted_at(obj).is_some_and(|t| t < now_ms - LEEWAY_MS);
    let k8s = &payload["kubernetes.io"];
    let namespace = k8s["namespace"].as_str().unwrap_or_default();
    let sa = ref_claim(k8s, "serviceaccount").unwrap_or_default();
    let service_account = objects
        .get(ObjectKind::ServiceAccount, namespace, &sa.name)
        .ok_or_else(|| not_found(ObjectKind::ServiceAccount, &sa.name))?;
    if uid_of(&service_account) != sa.uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({})",
            uid_of(&service_account),
            sa.uid
        ));
    }
    if gone(&service_account) {
        return Err(format!(
            "service account {namespace}/{} has been deleted",
            sa.name
        ));
    }
    let invalidated = || "service account token has been invalidated".to_string();
    if let Some(secret_ref) = ref_claim(k8s, "secret") {
        let secret = objects
            .get(ObjectKind::Secret, namespace, &secret_ref.name)
            .ok_or_else(invalidated)?;
        if uid_of(&secret) != secret_ref.uid {
            return Err(format!(
                "secret UID ({}) does not match service account secret ref claim ({})",
                uid_of(&secret),
                secret_ref.uid
            ));
        }
        if gone(&secret) {
            return Err(invalidated());
        }
    }
    let mut info = ServiceAccountInfo {
        namespace: namespace.to_string(),
        name: sa.name,
        uid: sa.uid,
        credential_id: if claims.id.is_empty() {
            String::new()
        } else {
            format!("JTI={}", claims.id)
        },
        ..Default::default()
    };
    let pod_ref = ref_claim(k8s, "pod");
    if let Some(pod_ref) = &pod_ref {
        let pod = objects
            .get(ObjectKind::Pod, namespace, &pod_ref.name)
            .ok_or_else(invalidated)?;
        if uid_of(&pod) != pod_ref.uid {
            return Err(format!(
                "pod UID ({}) does not match service account pod ref claim ({})",
                uid_of(&pod),
                pod_ref.uid
            ));
        }
        if gone(&pod) {
            return Err(invalidated());
        }
        info.pod_name = pod_ref.name.clone();
        info.pod_uid = pod_ref.uid.clone();
    }
    if let Some(node_ref) = ref_claim(k8s, "node") {
        if pod_ref.is_none() {
            // A token bound to the node itself: the node must still be there.
            let node = objects
                .get(ObjectKind::Node, "", &node_ref.name)
                .ok_or_else(invalidated)?;
            if uid_of(&node) != node_ref.uid {
                return Err(format!(
                    "node UID ({}) does not match service account node ref claim ({})",
                    uid_of(&node),
                    node_ref.uid
                ));
            }
            if gone(&node) {
                return Err(invalidated());
            }
        }
        // For a pod-bound token the node claims are information only.
        info.node_name = node_ref.name;
        info.node_uid = node_ref.uid;
    }
    Ok(info)
}

/// The legacy-token validator (upstream's `legacyValidator` with lookup on): the token
/// must still be the one its Secret holds.
fn validate_legacy(
    token: &str,
    claims: &Claims,
    payload: &Value,
    objects: &dyn Objects,
) -> Result<ServiceAccountInfo, String> {
    let field = |key: &str| payload[key].as_str().unwrap_or_default().to_string();
    if claims.subject.is_empty() {
        return Err("sub claim is missing".into());
    }
    let namespace = field(LEGACY_NAMESPACE);
    if namespace.is_empty() {
        return Err("namespace claim is missing".into());
    }
    let secret_name = field(LEGACY_SECRET_NAME);
    if secret_name.is_empty() {
        return Err("secretName claim is missing".into());
    }
    let sa_name = field(LEGACY_SA_NAME);
    if sa_name.is_empty() {
        return Err("serviceAccountName claim is missing".into());
    }
    let sa_uid = field(LEGACY_SA_UID);
    if sa_uid.is_empty() {
        return Err("serviceAccountUID claim is missing".into());
    }
    if !auth::attributes::service_account_matches_username(&namespace, &sa_name, &claims.subject) {
        return Err("sub claim is invalid".into());
    }
    let invalidated = || "token has been invalidated".to_string();
    let secret = objects
        .get(ObjectKind::Secret, &namespace, &secret_name)
        .ok_or_else(invalidated)?;
    if deleted_at(&secret).is_some() {
        return Err(invalidated());
    }
    let stored = secret["data"]["token"]
        .as_str()
        .and_then(|t| base64::engine::general_purpose::STANDARD.decode(t).ok())
        .unwrap_or_default();
    if !crate::authn::constant_time_eq(&stored, token.as_bytes()) {
        return Err("token does not match server's copy".into());
    }
    let service_account = objects
        .get(ObjectKind::ServiceAccount, &namespace, &sa_name)
        .ok_or_else(|| not_found(ObjectKind::ServiceAccount, &sa_name))?;
    if deleted_at(&service_account).is_some() {
        return Err(format!(
            "service account {namespace}/{sa_name} has been deleted"
        ));
    }
    if uid_of(&service_account) != sa_uid {
        return Err(format!(
            "service account UID ({}) does not match claim ({sa_uid})",
            uid_of(&service_account)
        ));
    }
    if secret["metadata"]["labels"][LEGACY_TOKEN_INVALIDATED_LABEL]
        .as_str()
        .is_some_and(|s| !s.is_empty())
    {
        return Err(invalidated());
    }
    Ok(ServiceAccountInfo {
        namespace,
        name: sa_name,
        uid: sa_uid,
        ..Default::default()
    })
}

impl Verifier {
    /// Parses `token` as one of ours and checks its signature and issuer: what the
    /// token alone proves, whatever the time and the objects.
    fn decode(&self, token: &str) -> Result<Decoded, Verdict> {
        // Upstream's hasCorrectIssuer: the unverified payload names one of our issuers.
        if token.trim_start().starts_with('{') {
            return Err(Verdict::NotOurs);
        }
        let parts: Vec<&str> = token.split('.').collect();
        let [header, payload, signature] = parts[..] else {
            return Err(Verdict::NotOurs);
        };
        let Some(payload_value) = b64(payload)
            .and_then(|p| serde_json::from_slice::<Value>(&p).ok())
            .filter(Value::is_object)
        else {
            return Err(Verdict::NotOurs);
        };
        let issuer = match payload_value.get("iss") {
            None | Some(Value::Null) => "",
            Some(Value::String(s)) => s.as_str(),
            Some(_) => return Err(Verdict::NotOurs),
        };
        let legacy = issuer == LEGACY_ISSUER;
        if !legacy && !self.issuers.iter().any(|i| i == issuer) {
            return Err(Verdict::NotOurs);
        }
        // A JWS we cannot parse is no token of ours either.
        let Some(header_value) = b64(header)
            .and_then(|h| serde_json::from_slice::<Value>(&h).ok())
            .filter(Value::is_object)
        else {
            return Err(Verdict::NotOurs);
        };
        let Some(alg) = header_value["alg"].as_str() else {
            return Err(Verdict::NotOurs);
        };
        if b64(signature).is_none() {
            return Err(Verdict::NotOurs);
        }
        let kid = header_value["kid"].as_str().unwrap_or_default();
        let keys: Vec<&PublicKey> = self
            .keys
            .iter()
            .filter(|k| kid.is_empty() || k.kid == kid)
            .collect();
        if keys.is_empty() {
            return Err(Verdict::Rejected("invalid signature, no keys found".into()));
        }
        let alg = alg.parse::<jsonwebtoken::Algorithm>().ok();
        let message = format!("{header}.{payload}");
        let mut errors = Vec::new();
        let verified = keys.iter().any(|key| {
            let ok = alg.is_some_and(|a| key.kind.accepts(a))
                && alg.is_some_and(|a| key.verify(a, message.as_bytes(), signature));
            if !ok {
                errors.push(match alg {
                    Some(a) if key.kind.accepts(a) => {
                        "go-jose/go-jose: error in cryptographic primitive".to_string()
                    }
                    _ => "go-jose/go-jose: unknown/unsupported algorithm".to_string(),
                });
            }
            ok
        });
        if !verified {
            return Err(Verdict::Rejected(aggregate(&errors)));
        }
        let claims = match Claims::parse(&payload_value) {
            Ok(c) => c,
            Err(e) => return Err(Verdict::Rejected(e)),
        };
        if !legacy && !self.issuers.contains(&claims.issuer) {
            return Err(Verdict::Rejected(format!(
                "token issuer {:?} is invalid",
                claims.issuer
            )));
        }
        Ok(Decoded {
            legacy,
            claims,
            payload: payload_value,
        })
    }

    /// The verdict on `token` at `now_ms` for `audiences` (a `TokenReview`'s own).
    pub fn authenticate_for(
        &self,
        token: &str,
        now_ms: i64,
        objects: &dyn Objects,
        audiences: &[String],
    ) -> Verdict {
        let key = Sha256::of(token.as_bytes());
        let decoded = match self.verified.get(&key) {
            Some(d) => d,
            None => match self.decode(token) {
                Ok(d) => {
                    let d = Arc::new(d);
                    self.verified.put(key, Arc::clone(&d));
                    d
                }
                Err(verdict) => return verdict,
            },
        };
        let Decoded {
            legacy,
            ref claims,
            payload: ref payload_value,
        } = *decoded;
        let token_audiences = if claims.audience.is_empty() {
            // Legacy tokens have no audience: they are for the API server.
            audiences.to_vec()
        } else {
            claims.audience.clone()
        };
        let matching = token_audiences
            .iter()
            .any(|a| audiences.iter().any(|b| a == b));
        if !matching && !audiences.is_empty() {
            return Verdict::Rejected(format!(
                "token audiences {} is invalid for the target audiences {}",
                quote_list(&token_audiences),
                quote_list(audiences)
            ));
        }
        let info = if legacy {
            validate_legacy(token, claims, payload_value, objects)
        } else {
            validate_bound(claims, payload_value, now_ms, objects)
        };
        match info {
            Ok(info) => Verdict::User(info.user()),
            Err(e) => Verdict::Rejected(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Mutex;

    use super::*;

    const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";
    const NOW: i64 = 1_750_000_000;

    #[derive(Default)]
    struct Fake(Mutex<HashMap<(ObjectKind, String, String), Value>>);

    impl Fake {
        fn put(&self, kind: ObjectKind, ns: &str, name: &str, uid: &str) {
            self.put_value(
                kind,
                ns,
                name,
                json!({"metadata": {"name": name, "namespace": ns, "uid": uid}}),
            );
        }

        fn put_value(&self, kind: ObjectKind, ns: &str, name: &str, v: Value) {
            self.0
                .lock()
                .unwrap()
                .insert((kind, ns.to_string(), name.to_string()), v);
        }

        fn remove(&self, kind: ObjectKind, ns: &str, name: &str) {
            self.0
                .lock()
                .unwrap()
                .remove(&(kind, ns.to_string(), name.to_string()));
        }
    }

    impl Objects for Fake {
        fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<Arc<Value>> {
            self.0
                .lock()
                .unwrap()
                .get(&(kind, namespace.to_string(), name.to_string()))
                .cloned()
                .map(Arc::new)
        }
    }

    struct Env {
        key: SigningKey,
        verifier: Verifier,
        objects: Fake,
    }

    fn env() -> Env {
        let (key, _) = SigningKey::generate().unwrap();
        let verifier = Verifier {
            issuers: vec![ISSUER.into(), "https://old.example".into()],
            audiences: vec![ISSUER.into(), "rkube".into()],
            keys: vec![key.public.clone()],
            verified: VerifiedTokens::default(),
        };
        let objects = Fake::default();
        objects.put(ObjectKind::ServiceAccount, "ns1", "robot", "sa-uid-1");
        Env {
            key,
            verifier,
            objects,
        }
    }

    fn audiences() -> Vec<String> {
        vec![ISSUER.to_string()]
    }

    impl Env {
        fn bound(&self, f: impl for<'a> FnOnce(&mut BoundToken<'a>)) -> String {
            self.bound_for(&audiences(), f)
        }

        fn bound_for<'a>(&self, auds: &'a [String], f: impl FnOnce(&mut BoundToken<'a>)) -> String {
            let mut t = BoundToken {
                issuer: ISSUER,
                namespace: "ns1",
                service_account: ("robot", "sa-uid-1"),
                audiences: auds,
                now: NOW,
                expiration_seconds: 3600,
                id: "jti-1",
                ..Default::default()
            };
            f(&mut t);
            sign(&self.key, &t.claims()).unwrap()
        }

        fn check(&self, token: &str, now_s: i64) -> Verdict {
            self.verifier.authenticate_for(
                token,
                now_s * 1000,
                &self.objects,
                &self.verifier.audiences,
            )
        }

        fn rejected(&self, token: &str, now_s: i64) -> String {
            match self.check(token, now_s) {
                Verdict::Rejected(r) => r,
                other => panic!("expected a rejection, got {other:?}"),
            }
        }
    }

    #[test]
    fn valid_bound_token() {
        let e = env();
        let token = e.bound(|_| {});
        let Verdict::User(user) = e.check(&token, NOW + 10) else {
            panic!("not accepted");
        };
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.uid, "sa-uid-1");
        assert_eq!(
            user.groups,
            vec!["system:serviceaccounts", "system:serviceaccounts:ns1"]
        );
        assert_eq!(
            user.extra.get(CREDENTIAL_ID_KEY),
            Some(&vec!["JTI=jti-1".to_string()])
        );
        assert!(!user.extra.contains_key(POD_NAME_KEY));
        // Every accepted issuer is accepted.
        let token = e.bound(|t| t.issuer = "https://old.example");
        assert!(matches!(e.check(&token, NOW), Verdict::User(_)));
    }

    #[test]
    fn claims_shape() {
        let auds = audiences();
        let t = BoundToken {
            issuer: ISSUER,
            namespace: "ns1",
            service_account: ("robot", "u1"),
            audiences: &auds,
            now: 100,
            expiration_seconds: 600,
            warn_after: 30,
            pod: Some(("p", "pu")),
            node: Some(("n", "")),
            id: "j",
            ..Default::default()
        };
        assert_eq!(
            t.claims(),
            json!({
                "iss": ISSUER, "sub": "system:serviceaccount:ns1:robot", "aud": [ISSUER],
                "iat": 100, "nbf": 100, "exp": 700, "jti": "j",
                "kubernetes.io": {
                    "namespace": "ns1",
                    "serviceaccount": {"name": "robot", "uid": "u1"},
                    "pod": {"name": "p", "uid": "pu"},
                    "node": {"name": "n"},
                    "warnafter": 130,
                },
            })
        );
    }

    #[test]
    fn expiry_and_not_before_with_leeway() {
        let e = env();
        let token = e.bound(|_| {});
        // exp = NOW + 3600; a minute of leeway.
        assert!(matches!(e.check(&token, NOW + 3600 + 60), Verdict::User(_)));
        assert_eq!(
            e.rejected(&token, NOW + 3600 + 61),
            "service account token has expired"
        );
        // nbf = iat = NOW.
        assert!(matches!(e.check(&token, NOW - 60), Verdict::User(_)));
        assert_eq!(
            e.rejected(&token, NOW - 61),
            "service account token is not valid yet"
        );
        let mut claims = BoundToken {
            issuer: ISSUER,
            namespace: "ns1",
            service_account: ("robot", "sa-uid-1"),
            audiences: &audiences(),
            now: NOW,
            expiration_seconds: 3600,
            ..Default::default()
        }
        .claims();
        claims.as_object_mut().unwrap().remove("nbf");
        claims["iat"] = json!(NOW + 600);
        let token = sign(&e.key, &claims).unwrap();
        assert_eq!(
            e.rejected(&token, NOW),
            "service account token is issued in the future"
        );
    }

    #[test]
    fn wrong_audience() {
        let e = env();
        let token = e.bound_for(&["vault".to_string()], |_| {});
        assert_eq!(
            e.rejected(&token, NOW),
            "token audiences [\"vault\"] is invalid for the target audiences [\"https://kubernetes.default.svc.cluster.local\" \"rkube\"]"
        );
        // One matching audience is enough.
        let token = e.bound_for(&["vault".to_string(), "rkube".to_string()], |_| {});
        assert!(matches!(e.check(&token, NOW), Verdict::User(_)));
    }

    #[test]
    fn other_issuers_are_not_ours() {
        let e = env();
        let token = e.bound(|t| t.issuer = "https://accounts.example.com");
        assert_eq!(e.check(&token, NOW), Verdict::NotOurs);
        assert_eq!(e.check("opaque-static-token", NOW), Verdict::NotOurs);
        assert_eq!(e.check("a.b.c", NOW), Verdict::NotOurs);
        assert_eq!(e.check("{\"iss\":\"x\"}.a.b", NOW), Verdict::NotOurs);
    }

    #[test]
    fn tampered_signature_and_payload() {
        let e = env();
        let token = e.bound(|_| {});
        let (rest, sig) = token.rsplit_once('.').unwrap();
        // Flip one character of the signature.
        let mut bytes = sig.as_bytes().to_vec();
        bytes[5] = if bytes[5] == b'A' { b'B' } else { b'A' };
        let tampered = format!("{rest}.{}", String::from_utf8(bytes).unwrap());
        assert_eq!(
            e.rejected(&tampered, NOW),
            "go-jose/go-jose: error in cryptographic primitive"
        );
        // A payload changed after signing (another service account).
        let parts: Vec<&str> = token.split('.').collect();
        let mut payload: Value = serde_json::from_slice(&b64(parts[1]).unwrap()).unwrap();
        payload["kubernetes.io"]["serviceaccount"]["name"] = json!("admin");
        let forged = format!(
            "{}.{}.{}",
            parts[0],
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .encode(serde_json::to_vec(&payload).unwrap()),
            parts[2]
        );
        assert_eq!(
            e.rejected(&forged, NOW),
            "go-jose/go-jose: error in cryptographic primitive"
        );
        // alg "none" with no signature, and HS256 with the public key as secret.
        let none_header =
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let unsigned = format!("{none_header}.{}.", parts[1]);
        assert_eq!(
            e.rejected(&unsigned, NOW),
            "go-jose/go-jose: unknown/unsupported algorithm"
        );
    }

    #[test]
    fn unknown_key() {
        let e = env();
        let (other, _) = SigningKey::generate().unwrap();
        let auds = audiences();
        let claims = BoundToken {
            issuer: ISSUER,
            namespace: "ns1",
            service_account: ("robot", "sa-uid-1"),
            audiences: &auds,
            now: NOW,
            expiration_seconds: 3600,
            ..Default::default()
        }
        .claims();
        // With its kid: no key has it.
        let token = sign(&other, &claims).unwrap();
        assert_eq!(e.rejected(&token, NOW), "invalid signature, no keys found");
        // Without a kid: every key is tried and fails.
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
        header.typ = None;
        let der = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .unwrap()
            .serialize_der();
        let key = jsonwebtoken::EncodingKey::from_ec_der(&der);
        let token = jsonwebtoken::encode(&header, &claims, &key).unwrap();
        assert_eq!(
            e.rejected(&token, NOW),
            "go-jose/go-jose: error in cryptographic primitive"
        );
    }

    #[test]
    fn verified_tokens_are_remembered_but_rechecked_against_time_and_objects() {
        let e = env();
        let token = e.bound(|_| {});
        assert!(matches!(e.check(&token, NOW), Verdict::User(_)));
        assert!(matches!(e.check(&token, NOW + 1), Verdict::User(_)));
        assert_eq!(
            e.verifier.verified.len(),
            1,
            "one signature check per token"
        );
        // What the memo holds proves the signature, never that the token is still good.
        assert_eq!(
            e.rejected(&token, NOW + 7200),
            "service account token has expired"
        );
        e.objects.remove(ObjectKind::ServiceAccount, "ns1", "robot");
        assert_eq!(
            e.rejected(&token, NOW),
            "serviceaccounts \"robot\" not found"
        );
        // A token that fails its signature check is never remembered.
        let mut forged = token.clone();
        forged.truncate(forged.len() - 4);
        forged.push_str("AAAA");
        assert!(matches!(e.check(&forged, NOW), Verdict::Rejected(_)));
        assert_eq!(e.verifier.verified.len(), 1);
    }

    #[test]
    fn deleted_and_recreated_service_account() {
        let e = env();
        let token = e.bound(|_| {});
        e.objects.remove(ObjectKind::ServiceAccount, "ns1", "robot");
        assert_eq!(
            e.rejected(&token, NOW),
            "serviceaccounts \"robot\" not found"
        );
        e.objects
            .put(ObjectKind::ServiceAccount, "ns1", "robot", "sa-uid-2");
        assert_eq!(
            e.rejected(&token, NOW),
            "service account UID (sa-uid-2) does not match claim (sa-uid-1)"
        );
        // Being deleted: still valid for a minute after the deletion timestamp.
        e.objects.put_value(
            ObjectKind::ServiceAccount,
            "ns1",
            "robot",
            json!({"metadata": {"uid": "sa-uid-1", "deletionTimestamp": crate::registry::rfc3339(NOW * 1000)}}),
        );
        assert!(matches!(e.check(&token, NOW + 30), Verdict::User(_)));
        assert_eq!(
            e.rejected(&token, NOW + 90),
            "service account ns1/robot has been deleted"
        );
    }

    #[test]
    fn pod_bound_token() {
        let e = env();
        e.objects.put(ObjectKind::Pod, "ns1", "web", "pod-uid-1");
        let token = e.bound(|t| {
            t.pod = Some(("web", "pod-uid-1"));
            t.node = Some(("node-a", "node-uid-a"));
        });
        let Verdict::User(user) = e.check(&token, NOW) else {
            panic!("not accepted");
        };
        assert_eq!(user.extra[POD_NAME_KEY], vec!["web"]);
        assert_eq!(user.extra[POD_UID_KEY], vec!["pod-uid-1"]);
        // The node of a pod-bound token is not looked up.
        assert_eq!(user.extra[NODE_NAME_KEY], vec!["node-a"]);
        assert_eq!(user.extra[NODE_UID_KEY], vec!["node-uid-a"]);
        e.objects.put(ObjectKind::Pod, "ns1", "web", "pod-uid-2");
        assert_eq!(
            e.rejected(&token, NOW),
            "pod UID (pod-uid-2) does not match service account pod ref claim (pod-uid-1)"
        );
        e.objects.remove(ObjectKind::Pod, "ns1", "web");
        assert_eq!(
            e.rejected(&token, NOW),
            "service account token has been invalidated"
        );
    }

    #[test]
    fn secret_and_node_bound_tokens() {
        let e = env();
        e.objects.put(ObjectKind::Secret, "ns1", "s", "secret-uid");
        let token = e.bound(|t| t.secret = Some(("s", "secret-uid")));
        assert!(matches!(e.check(&token, NOW), Verdict::User(_)));
        e.objects.put(ObjectKind::Secret, "ns1", "s", "other");
        assert_eq!(
            e.rejected(&token, NOW),
            "secret UID (other) does not match service account secret ref claim (secret-uid)"
        );
        e.objects.put(ObjectKind::Node, "", "n1", "node-uid");
        let token = e.bound(|t| t.node = Some(("n1", "node-uid")));
        let Verdict::User(user) = e.check(&token, NOW) else {
            panic!("not accepted");
        };
        assert_eq!(user.extra[NODE_NAME_KEY], vec!["n1"]);
        e.objects.remove(ObjectKind::Node, "", "n1");
        assert_eq!(
            e.rejected(&token, NOW),
            "service account token has been invalidated"
        );
    }

    #[test]
    fn legacy_tokens() {
        let e = env();
        let token = sign(
            &e.key,
            &legacy_claims("ns1", "robot", "sa-uid-1", "robot-token"),
        )
        .unwrap();
        // No secret holding it.
        assert_eq!(e.rejected(&token, NOW), "token has been invalidated");
        let stored = |t: &str| json!({"metadata": {"uid": "s1"}, "data": {"token": base64::engine::general_purpose::STANDARD.encode(t)}});
        e.objects
            .put_value(ObjectKind::Secret, "ns1", "robot-token", stored("other"));
        assert_eq!(
            e.rejected(&token, NOW),
            "token does not match server's copy"
        );
        e.objects
            .put_value(ObjectKind::Secret, "ns1", "robot-token", stored(&token));
        let Verdict::User(user) = e.check(&token, NOW) else {
            panic!("not accepted");
        };
        assert_eq!(user.name, "system:serviceaccount:ns1:robot");
        assert_eq!(user.uid, "sa-uid-1");
        assert!(user.extra.is_empty());
        // Legacy tokens carry no audience: the API's are implied.
        e.objects
            .put(ObjectKind::ServiceAccount, "ns1", "robot", "sa-uid-9");
        assert_eq!(
            e.rejected(&token, NOW),
            "service account UID (sa-uid-9) does not match claim (sa-uid-1)"
        );
    }

    #[test]
    fn aggregate_like_go() {
        assert_eq!(aggregate(&["a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "a".into()]), "a");
        assert_eq!(aggregate(&["a".into(), "b".into()]), "[a, b]");
    }
}
