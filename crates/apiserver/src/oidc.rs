//! OpenID Connect ID tokens as bearer tokens: upstream's `--oidc-*` flags and its token
//! authenticator (`plugin/pkg/authenticator/token/oidc` over go-oidc's `IDTokenVerifier`).
//!
//! A token is looked at only when its unverified `iss` claim is the configured issuer;
//! any other token is no business of this authenticator (the chain goes on). The issuer's
//! discovery document (`<issuer>/.well-known/openid-configuration`) and its key set
//! (`jwks_uri`) are fetched in the background over HTTPS (trusting `--oidc-ca-file`, else
//! the system's roots), retried every 10 s until they answer; until then tokens of the
//! issuer are refused with "authenticator not initialized". A token no cached key verifies
//! asks for a new fetch of the key set (the issuer may have rotated its keys), at most one
//! per second.
//!
//! Checks, in go-oidc's order: audience has `--oidc-client-id`, not expired, `nbf` (one
//! minute leeway), algorithm in `--oidc-signing-algs`, signature; then the claims: the
//! user name (`--oidc-username-claim`, with a verified e-mail when it is `email`), groups
//! (a string or a list), and every `--oidc-required-claim`. Tokens are never logged.
//!
//! Left out: distributed claims (`_claim_names`), and the structured
//! `AuthenticationConfiguration` file.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use base64::Engine;
use http::HeaderMap;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;
use store::Clock;

use crate::authn::{AuthResult, Authenticator, UserInfo, bearer_token};

/// The algorithms `--oidc-signing-algs` accepts (upstream's allow-list).
const ALLOWED_ALGS: &[&str] = &[
    "RS256", "RS384", "RS512", "ES256", "ES384", "ES512", "PS256", "PS384", "PS512",
];

/// go-oidc's leeway on `nbf`.
const NBF_LEEWAY_MS: i64 = 60_000;

/// How often discovery is retried until it succeeds (upstream polls every 10 s).
const RETRY: Duration = Duration::from_secs(10);

/// The fewest time between two fetches of the key set.
const MIN_REFRESH: Duration = Duration::from_secs(1);

/// How long a fetched key set is used before it is fetched again anyway.
const MAX_KEY_AGE: Duration = Duration::from_secs(3600);

/// The `--oidc-*` flags as given.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--oidc-issuer-url` (https only); none: no OIDC authenticator.
    pub issuer_url: Option<String>,
    /// `--oidc-client-id`: the audience tokens must have.
    pub client_id: Option<String>,
    /// `--oidc-ca-file`: the CA of the issuer's serving certificate (default: system roots).
    pub ca_file: Option<PathBuf>,
    /// `--oidc-username-claim` (default `sub`).
    pub username_claim: String,
    /// `--oidc-username-prefix` (none: `<issuer>#` unless the claim is `email`; `-`: none).
    pub username_prefix: Option<String>,
    /// `--oidc-groups-claim`.
    pub groups_claim: Option<String>,
    /// `--oidc-groups-prefix`.
    pub groups_prefix: String,
    /// `--oidc-required-claim key=value`, repeatable.
    pub required_claims: Vec<String>,
    /// `--oidc-signing-algs` (default `RS256`).
    pub signing_algs: Vec<String>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            issuer_url: None,
            client_id: None,
            ca_file: None,
            username_claim: "sub".into(),
            username_prefix: None,
            groups_claim: None,
            groups_prefix: String::new(),
            required_claims: Vec::new(),
            signing_algs: vec!["RS256".into()],
        }
    }
}

/// The checked configuration of the authenticator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub issuer: String,
    pub client_id: String,
    pub username_claim: String,
    pub username_prefix: String,
    pub groups_claim: Option<String>,
    pub groups_prefix: String,
    pub required_claims: Vec<(String, String)>,
    pub signing_algs: Vec<String>,
}

impl Options {
    /// Checks the flags as upstream's `BuiltInAuthenticationOptions.Validate` does; `None`
    /// when no issuer is configured.
    pub fn settings(&self) -> Result<Option<Settings>, String> {
        let Some(issuer) = self.issuer_url.as_deref().filter(|s| !s.is_empty()) else {
            if self.client_id.as_deref().is_some_and(|c| !c.is_empty()) {
                return Err("oidc-issuer-url and oidc-client-id must be specified together".into());
            }
            return Ok(None);
        };
        let client_id = self
            .client_id
            .clone()
            .filter(|c| !c.is_empty())
            .ok_or("oidc-issuer-url and oidc-client-id must be specified together")?;
        let uri: http::Uri = issuer
            .parse()
            .map_err(|e| format!("oidc-issuer-url ({issuer:?}) is not a valid URL: {e}"))?;
        if uri.scheme_str() != Some("https") {
            return Err(format!(
                "'oidc-issuer-url' ({issuer:?}) has invalid scheme ({:?}), require 'https'",
                uri.scheme_str().unwrap_or_default()
            ));
        }
        if self.username_claim.is_empty() {
            return Err("oidc-username-claim must not be empty".into());
        }
        for alg in &self.signing_algs {
            if !ALLOWED_ALGS.contains(&alg.as_str()) {
                return Err(format!(
                    "oidc-signing-algs: unsupported signing alg {alg:?} (allowed: {})",
                    ALLOWED_ALGS.join(", ")
                ));
            }
        }
        let mut required_claims = Vec::new();
        for kv in &self.required_claims {
            let (k, v) = kv
                .split_once('=')
                .ok_or_else(|| format!("oidc-required-claim: {kv:?} is not key=value"))?;
            required_claims.push((k.to_string(), v.to_string()));
        }
        let username_prefix = match self.username_prefix.as_deref() {
            Some("-") => String::new(),
            Some(p) if !p.is_empty() => p.to_string(),
            _ if self.username_claim != "email" => format!("{issuer}#"),
            _ => String::new(),
        };
        let signing_algs = if self.signing_algs.is_empty() {
            vec!["RS256".to_string()]
        } else {
            self.signing_algs.clone()
        };
        Ok(Some(Settings {
            issuer: issuer.to_string(),
            client_id,
            username_claim: self.username_claim.clone(),
            username_prefix,
            groups_claim: self.groups_claim.clone().filter(|g| !g.is_empty()),
            groups_prefix: self.groups_prefix.clone(),
            required_claims,
            signing_algs,
        }))
    }
}

/// One verification key of the issuer.
#[derive(Clone)]
struct Key {
    kid: String,
    key: DecodingKey,
}

/// The issuer's key set (its `jwks_uri` document).
#[derive(Clone, Default)]
pub struct KeySet {
    keys: Vec<Key>,
}

impl std::fmt::Debug for KeySet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.keys.iter().map(|k| k.kid.as_str()).collect();
        f.debug_struct("KeySet").field("kids", &kids).finish()
    }
}

impl KeySet {
    /// Parses a JWK set: signature keys of the kinds we verify (RSA and EC); other keys
    /// (encryption keys, unknown types or curves) are skipped.
    pub fn parse(body: &[u8]) -> Result<KeySet, String> {
        let doc: Value = serde_json::from_slice(body)
            .map_err(|e| format!("oidc: failed to decode keys: {e}"))?;
        let list = doc["keys"]
            .as_array()
            .ok_or("oidc: failed to decode keys: no \"keys\" list")?;
        let mut keys = Vec::new();
        for jwk in list {
            if jwk["use"].as_str().is_some_and(|u| u != "sig") {
                continue;
            }
            let Ok(parsed) = serde_json::from_value::<jsonwebtoken::jwk::Jwk>(jwk.clone()) else {
                continue;
            };
            let Ok(key) = DecodingKey::from_jwk(&parsed) else {
                continue;
            };
            keys.push(Key {
                kid: jwk["kid"].as_str().unwrap_or_default().to_string(),
                key,
            });
        }
        Ok(KeySet { keys })
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// The verdict on one bearer token.
#[derive(Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not a token of the configured issuer.
    NotOurs,
    User(UserInfo),
    /// A token of the issuer that is not valid; `refresh_keys` when no key of the cached
    /// set verified it.
    Rejected {
        reason: String,
        refresh_keys: bool,
    },
}

fn rejected(reason: impl Into<String>) -> Verdict {
    Verdict::Rejected {
        reason: reason.into(),
        refresh_keys: false,
    }
}

fn b64(part: &str) -> Option<Vec<u8>> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(part)
        .ok()
}

/// Upstream's `hasCorrectIssuer`: three parts whose payload's `iss` is `issuer`.
fn issued_by(token: &str, issuer: &str) -> Option<Value> {
    let parts: Vec<&str> = token.split('.').collect();
    let [_, payload, _] = parts[..] else {
        return None;
    };
    let claims: Value = serde_json::from_slice(&b64(payload)?).ok()?;
    (claims.get("iss").and_then(Value::as_str) == Some(issuer)).then_some(claims)
}

/// A numeric date claim (seconds, possibly fractional) as milliseconds.
fn date_ms(v: &Value) -> Option<i64> {
    v.as_i64()
        .map(|s| s.saturating_mul(1000))
        .or_else(|| v.as_f64().map(|f| (f * 1000.0) as i64))
}

/// Go's `%q` of a string list.
fn quote_list(list: &[String]) -> String {
    let items: Vec<String> = list.iter().map(|s| format!("{s:?}")).collect();
    format!("[{}]", items.join(" "))
}

/// The JSON type name as Go's decoder words it in "cannot unmarshal X".
fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Verifies `token` against `settings` and the issuer's `keys` (none: not fetched yet) at
/// `now_ms`, as upstream's authenticator over go-oidc's verifier.
pub fn verify(settings: &Settings, keys: Option<&KeySet>, token: &str, now_ms: i64) -> Verdict {
    let Some(claims) = issued_by(token, &settings.issuer) else {
        return Verdict::NotOurs;
    };
    let Some(keys) = keys else {
        return rejected("oidc: authenticator not initialized");
    };
    let fail = |e: String| rejected(format!("oidc: verify token: {e}"));
    let mut parts = token.split('.');
    let (Some(header), Some(payload), Some(signature)) = (parts.next(), parts.next(), parts.next())
    else {
        return fail("oidc: malformed jwt: compact JWS format must have three parts".into());
    };
    let Some(header_value) = b64(header).and_then(|h| serde_json::from_slice::<Value>(&h).ok())
    else {
        return fail("oidc: malformed jwt: invalid protected header".into());
    };
    // The audience.
    let audience: Vec<String> = match &claims["aud"] {
        Value::String(s) => vec![s.clone()],
        Value::Array(items) => items
            .iter()
            .filter_map(|a| a.as_str().map(str::to_string))
            .collect(),
        _ => Vec::new(),
    };
    if !audience.contains(&settings.client_id) {
        return fail(format!(
            "oidc: expected audience {:?} got {}",
            settings.client_id,
            quote_list(&audience)
        ));
    }
    // Expiry (a token without `exp` expired at the zero time) and not-before.
    let expiry = date_ms(&claims["exp"]).unwrap_or(i64::MIN);
    if expiry < now_ms {
        let shown = if expiry == i64::MIN {
            "0001-01-01T00:00:00Z".to_string()
        } else {
            crate::registry::rfc3339(expiry)
        };
        return fail(format!("oidc: token is expired (Token Expiry: {shown})"));
    }
    if let Some(nbf) = date_ms(&claims["nbf"])
        && now_ms + NBF_LEEWAY_MS < nbf
    {
        return fail(format!(
            "oidc: current time {} before the nbf (not before) time: {}",
            crate::registry::rfc3339(now_ms),
            crate::registry::rfc3339(nbf)
        ));
    }
    // The algorithm, then the signature.
    let alg_name = header_value["alg"].as_str().unwrap_or_default();
    if !settings.signing_algs.iter().any(|a| a == alg_name) {
        return fail(format!(
            "oidc: id token signed with unsupported algorithm, expected {} got {alg_name:?}",
            quote_list(&settings.signing_algs)
        ));
    }
    let Ok(alg) = alg_name.parse::<Algorithm>() else {
        return fail(format!("oidc: unsupported algorithm {alg_name:?}"));
    };
    let kid = header_value["kid"].as_str().unwrap_or_default();
    let message = format!("{header}.{payload}");
    let verified = keys
        .keys
        .iter()
        .filter(|k| kid.is_empty() || k.kid == kid)
        .any(|k| {
            jsonwebtoken::crypto::verify(signature, message.as_bytes(), &k.key, alg)
                .unwrap_or(false)
        });
    if !verified {
        return Verdict::Rejected {
            reason: "oidc: verify token: failed to verify signature: failed to verify id token \
                     signature"
                .into(),
            refresh_keys: true,
        };
    }
    match user_of(settings, &claims) {
        Ok(user) => Verdict::User(user),
        Err(e) => rejected(e),
    }
}

/// The user a verified token's claims name.
fn user_of(settings: &Settings, claims: &Value) -> Result<UserInfo, String> {
    let claim = &settings.username_claim;
    let username = match claims.get(claim.as_str()) {
        None => {
            return Err(format!(
                "oidc: parse username claims {claim:?}: claim not present"
            ));
        }
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "oidc: parse username claims {claim:?}: json: cannot unmarshal {} into Go value \
                 of type string",
                json_type(other)
            ));
        }
    };
    if claim == "email"
        && let Some(verified) = claims.get("email_verified")
    {
        match verified {
            Value::Bool(true) => {}
            Value::Bool(false) => return Err("oidc: email not verified".into()),
            other => {
                return Err(format!(
                    "oidc: parse 'email_verified' claim: json: cannot unmarshal {} into Go value \
                     of type bool",
                    json_type(other)
                ));
            }
        }
    }
    let mut user = UserInfo::new(
        format!("{}{username}", settings.username_prefix),
        Vec::<String>::new(),
    );
    if let Some(groups_claim) = &settings.groups_claim
        && let Some(value) = claims.get(groups_claim.as_str())
    {
        let groups: Vec<String> = match value {
            Value::String(s) => vec![s.clone()],
            Value::Array(items) => items
                .iter()
                .map(|g| g.as_str().map(str::to_string))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| {
                    format!(
                        "oidc: parse groups claim {groups_claim:?}: json: cannot unmarshal array \
                         into Go value of type string"
                    )
                })?,
            other => {
                return Err(format!(
                    "oidc: parse groups claim {groups_claim:?}: json: cannot unmarshal {} into Go \
                     value of type string",
                    json_type(other)
                ));
            }
        };
        user.groups = groups
            .into_iter()
            .map(|g| format!("{}{g}", settings.groups_prefix))
            .collect();
    }
    for (name, want) in &settings.required_claims {
        let got = match claims.get(name.as_str()) {
            None => {
                return Err(format!(
                    "oidc: required claim {name} not present in ID token"
                ));
            }
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(format!(
                    "oidc: parse claim {name}: json: cannot unmarshal {} into Go value of type \
                     string",
                    json_type(other)
                ));
            }
        };
        if &got != want {
            return Err(format!(
                "oidc: required claim {name} value does not match. Got = {got}, want = {want}"
            ));
        }
    }
    Ok(user)
}

/// GETs a URL of the issuer: `(status, body)` or Go's wording of the failure.
#[async_trait::async_trait]
pub trait Fetch: Send + Sync {
    async fn get(&self, url: &str) -> Result<(u16, Vec<u8>), String>;
}

/// [`Fetch`] over HTTPS with the server's client.
pub struct HttpsFetch {
    tls: Arc<rustls::ClientConfig>,
}

impl HttpsFetch {
    /// Trusts the PEM bundle at `ca_file`, else the system's roots.
    pub fn new(ca_file: Option<&std::path::Path>) -> Result<HttpsFetch, String> {
        let roots = match ca_file {
            Some(path) => {
                let pem = std::fs::read(path)
                    .map_err(|e| format!("oidc-ca-file {}: {e}", path.display()))?;
                crate::webhook::client::roots_from_pem(&pem)
                    .map_err(|e| format!("oidc-ca-file {}: {e}", path.display()))?
            }
            None => crate::webhook::client::system_roots(),
        };
        Ok(HttpsFetch {
            tls: crate::webhook::client::tls_config(roots, None)?,
        })
    }
}

#[async_trait::async_trait]
impl Fetch for HttpsFetch {
    async fn get(&self, url: &str) -> Result<(u16, Vec<u8>), String> {
        crate::webhook::client::get(&self.tls, url, Duration::from_secs(30)).await
    }
}

/// The bearer-token authenticator of one issuer; [`OidcAuthenticator::run`] keeps its keys.
pub struct OidcAuthenticator {
    settings: Settings,
    keys: RwLock<Option<Arc<KeySet>>>,
    refresh: tokio::sync::Notify,
    clock: Arc<dyn Clock>,
}

impl OidcAuthenticator {
    pub fn new(settings: Settings, clock: Arc<dyn Clock>) -> OidcAuthenticator {
        OidcAuthenticator {
            settings,
            keys: RwLock::new(None),
            refresh: tokio::sync::Notify::new(),
            clock,
        }
    }

    fn keys(&self) -> Option<Arc<KeySet>> {
        self.keys.read().ok().and_then(|k| k.clone())
    }

    fn set_keys(&self, keys: KeySet) {
        if let Ok(mut k) = self.keys.write() {
            *k = Some(Arc::new(keys));
        }
    }

    /// The verdict on `token` now; asks for fresh keys when none verified it.
    pub fn check(&self, token: &str) -> Verdict {
        let keys = self.keys();
        let verdict = verify(&self.settings, keys.as_deref(), token, self.clock.now_ms());
        if let Verdict::Rejected {
            refresh_keys: true, ..
        } = verdict
        {
            self.refresh.notify_one();
        }
        verdict
    }

    /// Discovers the issuer (retrying every 10 s), then keeps its key set: fetched again
    /// when a token fails to verify (at most once a second), and every hour. Runs until
    /// the task is dropped.
    pub async fn run(self: Arc<Self>, fetch: Arc<dyn Fetch>) {
        let jwks_uri = loop {
            match discover(fetch.as_ref(), &self.settings.issuer).await {
                Ok(uri) => break uri,
                Err(e) => {
                    tracing::error!(error = %e, "oidc authenticator: initializing plugin");
                    tokio::time::sleep(RETRY).await;
                }
            }
        };
        loop {
            let wait = match fetch_keys(fetch.as_ref(), &jwks_uri).await {
                Ok(keys) => {
                    tracing::info!(issuer = %self.settings.issuer, keys = keys.len(), "oidc: key set fetched");
                    self.set_keys(keys);
                    MAX_KEY_AGE
                }
                Err(e) => {
                    tracing::warn!(error = %e, "oidc: fetching keys");
                    RETRY
                }
            };
            tokio::time::sleep(MIN_REFRESH).await;
            let _ = tokio::time::timeout(wait, self.refresh.notified()).await;
        }
    }
}

/// go-oidc's `NewProvider`: the discovery document's `jwks_uri`, after checking that it
/// names the configured issuer.
pub async fn discover(fetch: &dyn Fetch, issuer: &str) -> Result<String, String> {
    let url = format!(
        "{}/.well-known/openid-configuration",
        issuer.trim_end_matches('/')
    );
    let (status, body) = fetch.get(&url).await?;
    if status != 200 {
        return Err(format!(
            "{status} {}: {}",
            http::StatusCode::from_u16(status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or_default(),
            String::from_utf8_lossy(&body)
        ));
    }
    let doc: Value = serde_json::from_slice(&body)
        .map_err(|e| format!("oidc: failed to decode provider discovery object: {e}"))?;
    let got = doc["issuer"].as_str().unwrap_or_default();
    if got != issuer {
        return Err(format!(
            "oidc: issuer did not match the issuer returned by provider, expected {issuer:?} got \
             {got:?}"
        ));
    }
    doc["jwks_uri"]
        .as_str()
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .ok_or_else(|| "oidc: provider discovery object has no jwks_uri".into())
}

async fn fetch_keys(fetch: &dyn Fetch, jwks_uri: &str) -> Result<KeySet, String> {
    let (status, body) = fetch
        .get(jwks_uri)
        .await
        .map_err(|e| format!("fetching keys {e}"))?;
    if status != 200 {
        return Err(format!(
            "oidc: get keys failed: {status} {}",
            String::from_utf8_lossy(&body)
        ));
    }
    KeySet::parse(&body)
}

impl Authenticator for Arc<OidcAuthenticator> {
    fn authenticate(&self, headers: &HeaderMap, _peer: &crate::handlers::Peer) -> AuthResult {
        let Some(token) = bearer_token(headers) else {
            return AuthResult::NoCredentials;
        };
        match self.check(token) {
            Verdict::NotOurs => AuthResult::NoCredentials,
            Verdict::User(user) => AuthResult::User(user),
            Verdict::Rejected { reason, .. } => AuthResult::Rejected(reason),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use std::sync::Mutex;

    use serde_json::json;

    use super::*;

    const ISSUER: &str = "https://issuer.example";
    const NOW_MS: i64 = 1_800_000_000_000;

    /// An ES256 key pair: the signing key and its JWK.
    struct TestKey {
        encoding: jsonwebtoken::EncodingKey,
        jwk: Value,
    }

    impl TestKey {
        fn new(kid: &str) -> TestKey {
            let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
            let encoding = jsonwebtoken::EncodingKey::from_ec_der(&pair.serialize_der());
            let raw = pair.public_key_raw();
            let b = |s: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
            let jwk = json!({
                "kty": "EC", "crv": "P-256", "use": "sig", "alg": "ES256", "kid": kid,
                "x": b(&raw[1..33]), "y": b(&raw[33..65]),
            });
            TestKey { encoding, jwk }
        }

        fn sign(&self, claims: &Value) -> String {
            let mut header = jsonwebtoken::Header::new(Algorithm::ES256);
            header.kid = self.jwk["kid"].as_str().map(str::to_string);
            jsonwebtoken::encode(&header, claims, &self.encoding).unwrap()
        }
    }

    fn keyset(keys: &[&TestKey]) -> KeySet {
        let doc = json!({"keys": keys.iter().map(|k| k.jwk.clone()).collect::<Vec<_>>()});
        KeySet::parse(&serde_json::to_vec(&doc).unwrap()).unwrap()
    }

    fn options() -> Options {
        Options {
            issuer_url: Some(ISSUER.into()),
            client_id: Some("rkube".into()),
            groups_claim: Some("groups".into()),
            groups_prefix: "oidc:".into(),
            signing_algs: vec!["ES256".into()],
            ..Options::default()
        }
    }

    fn settings() -> Settings {
        options().settings().unwrap().unwrap()
    }

    fn claims() -> Value {
        json!({
            "iss": ISSUER, "aud": ["rkube", "other"], "sub": "alice-id",
            "email": "alice@example.com", "email_verified": true,
            "groups": ["dev", "ops"], "exp": NOW_MS / 1000 + 600, "iat": NOW_MS / 1000,
        })
    }

    fn reason(v: Verdict) -> String {
        match v {
            Verdict::Rejected { reason, .. } => reason,
            other => panic!("not rejected: {other:?}"),
        }
    }

    #[test]
    fn flags_are_checked_as_upstream() {
        assert_eq!(Options::default().settings(), Ok(None));
        let no_client = Options {
            client_id: None,
            ..options()
        };
        assert!(
            no_client
                .settings()
                .unwrap_err()
                .contains("specified together")
        );
        let http = Options {
            issuer_url: Some("http://issuer".into()),
            ..options()
        };
        assert_eq!(
            http.settings().unwrap_err(),
            "'oidc-issuer-url' (\"http://issuer\") has invalid scheme (\"http\"), require 'https'"
        );
        let bad_alg = Options {
            signing_algs: vec!["HS256".into()],
            ..options()
        };
        assert!(bad_alg.settings().unwrap_err().contains("\"HS256\""));
        let bad_required = Options {
            required_claims: vec!["novalue".into()],
            ..options()
        };
        assert!(bad_required.settings().is_err());
        // The user-name prefix: issuer# by default, none for email, none for "-".
        assert_eq!(settings().username_prefix, "https://issuer.example#");
        let email = Options {
            username_claim: "email".into(),
            ..options()
        };
        assert_eq!(email.settings().unwrap().unwrap().username_prefix, "");
        let dash = Options {
            username_prefix: Some("-".into()),
            ..options()
        };
        assert_eq!(dash.settings().unwrap().unwrap().username_prefix, "");
        let custom = Options {
            username_prefix: Some("corp:".into()),
            ..options()
        };
        assert_eq!(custom.settings().unwrap().unwrap().username_prefix, "corp:");
    }

    #[test]
    fn valid_token() {
        let key = TestKey::new("k1");
        let keys = keyset(&[&key]);
        let token = key.sign(&claims());
        match verify(&settings(), Some(&keys), &token, NOW_MS) {
            Verdict::User(u) => {
                assert_eq!(u.name, "https://issuer.example#alice-id");
                assert_eq!(u.groups, vec!["oidc:dev", "oidc:ops"]);
            }
            other => panic!("{other:?}"),
        }
        // A single-string audience and a single-string group.
        let mut c = claims();
        c["aud"] = json!("rkube");
        c["groups"] = json!("admins");
        match verify(&settings(), Some(&keys), &key.sign(&c), NOW_MS) {
            Verdict::User(u) => assert_eq!(u.groups, vec!["oidc:admins"]),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_issuers_and_non_jwts_are_not_ours() {
        let key = TestKey::new("k1");
        let keys = keyset(&[&key]);
        let mut c = claims();
        c["iss"] = json!("https://elsewhere");
        assert_eq!(
            verify(&settings(), Some(&keys), &key.sign(&c), NOW_MS),
            Verdict::NotOurs
        );
        assert_eq!(
            verify(&settings(), Some(&keys), "opaque-token", NOW_MS),
            Verdict::NotOurs
        );
        assert_eq!(
            verify(&settings(), Some(&keys), "a.b.c.d", NOW_MS),
            Verdict::NotOurs
        );
        // Ours, but before the keys are known.
        assert_eq!(
            reason(verify(&settings(), None, &key.sign(&claims()), NOW_MS)),
            "oidc: authenticator not initialized"
        );
    }

    #[test]
    fn rejections() {
        let key = TestKey::new("k1");
        let keys = keyset(&[&key]);
        let check = |c: &Value| reason(verify(&settings(), Some(&keys), &key.sign(c), NOW_MS));
        let mut c = claims();
        c["aud"] = json!("someone-else");
        assert_eq!(
            check(&c),
            "oidc: verify token: oidc: expected audience \"rkube\" got [\"someone-else\"]"
        );
        let mut c = claims();
        c["exp"] = json!(NOW_MS / 1000 - 1);
        assert!(
            check(&c).starts_with("oidc: verify token: oidc: token is expired (Token Expiry: ")
        );
        let mut c = claims();
        c.as_object_mut().unwrap().remove("exp");
        assert!(check(&c).contains("token is expired"));
        let mut c = claims();
        c["nbf"] = json!(NOW_MS / 1000 + 120);
        assert!(check(&c).contains("before the nbf (not before) time"));
        // Within the minute of leeway.
        c["nbf"] = json!(NOW_MS / 1000 + 30);
        assert!(matches!(
            verify(&settings(), Some(&keys), &key.sign(&c), NOW_MS),
            Verdict::User(_)
        ));
        let mut c = claims();
        c.as_object_mut().unwrap().remove("sub");
        assert_eq!(
            check(&c),
            "oidc: parse username claims \"sub\": claim not present"
        );
        let mut c = claims();
        c["groups"] = json!([1, 2]);
        assert!(check(&c).starts_with("oidc: parse groups claim \"groups\""));
    }

    #[test]
    fn algorithms_and_signatures() {
        let key = TestKey::new("k1");
        let keys = keyset(&[&key]);
        // The default RS256-only list refuses an ES256 token.
        let rs_only = Options {
            signing_algs: vec![],
            ..options()
        }
        .settings()
        .unwrap()
        .unwrap();
        assert_eq!(
            reason(verify(&rs_only, Some(&keys), &key.sign(&claims()), NOW_MS)),
            "oidc: verify token: oidc: id token signed with unsupported algorithm, expected \
             [\"RS256\"] got \"ES256\""
        );
        // Signed by a key the set does not have: refused, and the keys should be refreshed.
        let other = TestKey::new("k1");
        match verify(&settings(), Some(&keys), &other.sign(&claims()), NOW_MS) {
            Verdict::Rejected {
                reason,
                refresh_keys,
            } => {
                assert!(refresh_keys);
                assert!(reason.contains("failed to verify id token signature"));
            }
            v => panic!("{v:?}"),
        }
        // A payload changed after signing.
        let token = key.sign(&claims());
        let parts: Vec<&str> = token.split('.').collect();
        let mut forged = claims();
        forged["sub"] = json!("mallory");
        let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(serde_json::to_vec(&forged).unwrap());
        let forged = format!("{}.{payload}.{}", parts[0], parts[2]);
        assert!(
            reason(verify(&settings(), Some(&keys), &forged, NOW_MS)).contains("failed to verify")
        );
        // alg "none" with no signature is refused by the algorithm list.
        let none = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(br#"{"alg":"none"}"#);
        let unsigned = format!("{none}.{}.", parts[1]);
        assert!(
            reason(verify(&settings(), Some(&keys), &unsigned, NOW_MS))
                .contains("unsupported algorithm")
        );
    }

    #[test]
    fn email_and_required_claims() {
        let key = TestKey::new("k1");
        let keys = keyset(&[&key]);
        let s = Options {
            username_claim: "email".into(),
            required_claims: vec!["hd=example.com".into()],
            ..options()
        }
        .settings()
        .unwrap()
        .unwrap();
        let check = |c: &Value| verify(&s, Some(&keys), &key.sign(c), NOW_MS);
        let mut c = claims();
        c["hd"] = json!("example.com");
        match check(&c) {
            Verdict::User(u) => assert_eq!(u.name, "alice@example.com"),
            v => panic!("{v:?}"),
        }
        c["email_verified"] = json!(false);
        assert_eq!(reason(check(&c)), "oidc: email not verified");
        c["email_verified"] = json!("yes");
        assert!(reason(check(&c)).starts_with("oidc: parse 'email_verified' claim"));
        let mut c = claims();
        assert_eq!(
            reason(check(&c)),
            "oidc: required claim hd not present in ID token"
        );
        c["hd"] = json!("evil.com");
        assert_eq!(
            reason(check(&c)),
            "oidc: required claim hd value does not match. Got = evil.com, want = example.com"
        );
    }

    #[test]
    fn key_sets_skip_what_they_cannot_use() {
        let key = TestKey::new("k1");
        let doc = json!({"keys": [
            key.jwk,
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac"},
            {"kty": "EC", "crv": "P-256", "use": "enc", "kid": "enc", "x": "AA", "y": "AA"},
            {"kty": "weird"},
        ]});
        let set = KeySet::parse(&serde_json::to_vec(&doc).unwrap()).unwrap();
        // The HMAC key parses as a JWK but only the signature key of a public kind is kept
        // for asymmetric algorithms; the encryption key and the unknown type are dropped.
        assert!(set.keys.iter().any(|k| k.kid == "k1"));
        assert!(!set.keys.iter().any(|k| k.kid == "enc"));
        assert!(KeySet::parse(b"{}").is_err());
        assert!(KeySet::parse(b"not json").is_err());
    }

    /// A fake issuer: the discovery document and a key set that can change.
    struct FakeIssuer {
        jwks: Mutex<Value>,
        gets: Mutex<Vec<String>>,
        discovery_issuer: String,
    }

    #[async_trait::async_trait]
    impl Fetch for FakeIssuer {
        async fn get(&self, url: &str) -> Result<(u16, Vec<u8>), String> {
            self.gets.lock().unwrap().push(url.to_string());
            if url == format!("{ISSUER}/.well-known/openid-configuration") {
                let doc =
                    json!({"issuer": self.discovery_issuer, "jwks_uri": format!("{ISSUER}/keys")});
                return Ok((200, serde_json::to_vec(&doc).unwrap()));
            }
            if url == format!("{ISSUER}/keys") {
                return Ok((
                    200,
                    serde_json::to_vec(&*self.jwks.lock().unwrap()).unwrap(),
                ));
            }
            Ok((404, b"not found".to_vec()))
        }
    }

    #[tokio::test]
    async fn discovery_checks_the_issuer() {
        let fake = FakeIssuer {
            jwks: Mutex::new(json!({"keys": []})),
            gets: Mutex::default(),
            discovery_issuer: "https://impostor".into(),
        };
        assert_eq!(
            discover(&fake, ISSUER).await.unwrap_err(),
            "oidc: issuer did not match the issuer returned by provider, expected \
             \"https://issuer.example\" got \"https://impostor\""
        );
        assert!(
            discover(&fake, "https://issuer.example/other")
                .await
                .unwrap_err()
                .starts_with("404 Not Found")
        );
    }

    #[tokio::test]
    async fn keys_are_fetched_and_refreshed_on_rotation() {
        let k1 = TestKey::new("k1");
        let k2 = TestKey::new("k2");
        let fake = Arc::new(FakeIssuer {
            jwks: Mutex::new(json!({"keys": [k1.jwk]})),
            gets: Mutex::default(),
            discovery_issuer: ISSUER.into(),
        });
        let clock: Arc<dyn Clock> = Arc::new(store::ManualClock::new(NOW_MS));
        let auth = Arc::new(OidcAuthenticator::new(settings(), clock));
        let task = tokio::spawn(Arc::clone(&auth).run(Arc::clone(&fake) as Arc<dyn Fetch>));
        let wait_for = |want: &'static str, token: String| {
            let auth = Arc::clone(&auth);
            async move {
                for _ in 0..100 {
                    match auth.check(&token) {
                        Verdict::User(u) if u.name.ends_with(want) => return,
                        _ => tokio::time::sleep(Duration::from_millis(100)).await,
                    }
                }
                panic!("never authenticated");
            }
        };
        wait_for("alice-id", k1.sign(&claims())).await;
        // The issuer rotates to k2: the first k2 token triggers a refresh.
        *fake.jwks.lock().unwrap() = json!({"keys": [k2.jwk]});
        wait_for("alice-id", k2.sign(&claims())).await;
        let key_gets = fake
            .gets
            .lock()
            .unwrap()
            .iter()
            .filter(|u| u.ends_with("/keys"))
            .count();
        assert!(key_gets >= 2, "{key_gets}");
        task.abort();
    }
}
