//! Authentication. The TLS layer accepts any client certificate (proving possession of its
//! key) and the x509 authenticator verifies the chain against `--client-ca-file`, so a
//! certificate from another CA is a 401 like any other bad credential, as upstream does.
//!
//! The request authenticators form upstream's union chain
//! (`k8s.io/apiserver/pkg/authentication/request/union`): x509, then basic auth from
//! `--basic-auth-file`, then bearer tokens from `--token-auth-file`, then service-account
//! JWTs ([`crate::serviceaccount`]); the first that
//! authenticates wins, rejections are aggregated, and only a request that carried no
//! credentials at all may fall through to the anonymous user (`--anonymous-auth`,
//! upstream's `union.NewFailOnError(chain, anonymous)`).

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use base64::Engine;
use http::HeaderMap;

use rustls::DigitallySignedStruct;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DistinguishedName, RootCertStore, SignatureScheme};

/// The authenticated user of a request (the authorizers' type).
pub use auth::UserInfo;

/// Accepts every client certificate at the TLS layer, advertising the client CA's subject
/// as a hint, and checks the handshake signatures.
#[derive(Debug)]
pub struct DeferredClientVerifier {
    hints: Vec<DistinguishedName>,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl DeferredClientVerifier {
    pub fn new(roots: &RootCertStore) -> Self {
        DeferredClientVerifier {
            hints: roots.subjects(),
            algorithms: rustls::crypto::ring::default_provider().signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for DeferredClientVerifier {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// The x509 client-certificate authenticator: CN is the user, O the groups.
pub struct X509Authenticator {
    verifier: Arc<dyn ClientCertVerifier>,
}

impl X509Authenticator {
    pub fn new(roots: Arc<RootCertStore>) -> Result<Self, crate::Error> {
        let verifier = WebPkiClientVerifier::builder_with_provider(
            roots,
            Arc::new(rustls::crypto::ring::default_provider()),
        )
        .build()
        .map_err(|e| crate::Error::Tls(format!("client CA: {e}")))?;
        Ok(X509Authenticator { verifier })
    }

    /// The user of a verified certificate chain, or why it is not accepted.
    pub fn authenticate(&self, chain: &[CertificateDer<'static>]) -> Result<UserInfo, String> {
        self.authenticate_until(chain).map(|(user, _)| user)
    }

    /// As [`Self::authenticate`], with the leaf's expiry (seconds since the epoch) so a
    /// connection can reuse the verdict until then instead of verifying the chain's
    /// signatures on every request.
    pub fn authenticate_until(
        &self,
        chain: &[CertificateDer<'static>],
    ) -> Result<(UserInfo, i64), String> {
        let (leaf, intermediates) = chain
            .split_first()
            .ok_or_else(|| "no client certificate".to_string())?;
        self.verifier
            .verify_client_cert(leaf, intermediates, UnixTime::now())
            .map_err(|e| format!("verifying certificate: {e}"))?;
        let (_, cert) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| format!("parsing certificate: {e}"))?;
        let subject = cert.subject();
        let name = subject
            .iter_common_name()
            .next()
            .and_then(|cn| cn.as_str().ok())
            .unwrap_or_default()
            .to_string();
        if name.is_empty() {
            return Err("certificate has no common name".into());
        }
        let groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        let not_after = cert.validity().not_after.timestamp();
        Ok((
            UserInfo {
                name,
                uid: String::new(),
                groups,
                extra: BTreeMap::new(),
            },
            not_after,
        ))
    }
}

/// The verdict of one authenticator on one request.
#[derive(Debug, PartialEq, Eq)]
pub enum AuthResult {
    /// The credentials of this kind were valid.
    User(UserInfo),
    /// The request carries no credentials of this kind.
    NoCredentials,
    /// The request carries credentials of this kind and they are not valid (the reason
    /// never contains the credentials).
    Rejected(String),
    /// Rejected after a lookup in the server's caches found nothing: the caller may ask
    /// again once the caches have caught up with the store (a token minted for an object
    /// created a moment ago).
    Unseen(String),
}

/// One request authenticator (upstream's `authenticator.Request`).
pub trait Authenticator: Send + Sync {
    fn authenticate(&self, headers: &HeaderMap, peer: &crate::handlers::Peer) -> AuthResult;
}

/// Compares two secrets in time independent of where they differ (the length is not
/// secret, as with Go's `subtle.ConstantTimeCompare`).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

/// Reads a CSV file as Go's `encoding/csv` reader with `FieldsPerRecord = -1`: fields
/// separated by commas, double-quoted fields with `""` escapes (which may span lines),
/// blank lines skipped. Returns each record with the line it starts on.
pub fn parse_csv(text: &str) -> Result<Vec<(usize, Vec<String>)>, String> {
    let mut records = Vec::new();
    let mut chars = text.chars().peekable();
    let mut line = 1usize;
    loop {
        // Skip blank lines.
        while let Some(&c) = chars.peek() {
            if c == '\n' {
                line += 1;
                chars.next();
            } else if c == '\r' {
                chars.next();
            } else {
                break;
            }
        }
        if chars.peek().is_none() {
            return Ok(records);
        }
        let start = line;
        let mut fields = Vec::new();
        let mut column = 1usize;
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                chars.next();
                column += 1;
                loop {
                    match chars.next() {
                        None => {
                            return Err(format!(
                                "parse error on line {line}, column {column}: extraneous or missing \" in quoted-field"
                            ));
                        }
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            column += 2;
                            field.push('"');
                        }
                        Some('"') => {
                            column += 1;
                            match chars.peek() {
                                None | Some(',') | Some('\n') | Some('\r') => break,
                                Some(_) => {
                                    return Err(format!(
                                        "parse error on line {line}, column {column}: extraneous or missing \" in quoted-field"
                                    ));
                                }
                            }
                        }
                        Some('\n') => {
                            line += 1;
                            column = 1;
                            field.push('\n');
                        }
                        Some(c) => {
                            column += 1;
                            field.push(c);
                        }
                    }
                }
            } else {
                while let Some(&c) = chars.peek() {
                    match c {
                        ',' | '\n' => break,
                        '\r' if matches!(chars.clone().nth(1), None | Some('\n')) => break,
                        '"' => {
                            return Err(format!(
                                "parse error on line {line}, column {column}: bare \" in non-quoted-field"
                            ));
                        }
                        _ => {
                            field.push(c);
                            column += 1;
                            chars.next();
                        }
                    }
                }
            }
            fields.push(field);
            match chars.next() {
                Some(',') => column += 1,
                Some('\r') => {
                    if chars.peek() == Some(&'\n') {
                        chars.next();
                    }
                    line += 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    break;
                }
                None => break,
                Some(_) => {}
            }
        }
        records.push((start, fields));
    }
}

fn read_file(path: &Path, what: &str) -> Result<String, crate::Error> {
    std::fs::read_to_string(path)
        .map_err(|e| crate::Error::Config(format!("{what} {}: {e}", path.display())))
}

fn user_of(record: &[String]) -> UserInfo {
    UserInfo {
        name: record[1].clone(),
        uid: record[2].clone(),
        groups: record
            .get(3)
            .map(|g| g.split(',').map(str::to_string).collect())
            .unwrap_or_default(),
        extra: BTreeMap::new(),
    }
}

/// `--token-auth-file`: upstream's `tokenfile` (`token,user,uid[,"group1,group2"]`, extra
/// columns ignored) behind the `Authorization: Bearer` request authenticator.
pub struct TokenFile {
    tokens: Vec<(String, UserInfo)>,
}

impl TokenFile {
    pub fn load(path: &Path) -> Result<TokenFile, crate::Error> {
        let text = read_file(path, "token auth file")?;
        Self::parse(&text)
            .map_err(|e| crate::Error::Config(format!("token auth file '{}': {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<TokenFile, String> {
        let mut tokens: Vec<(String, UserInfo)> = Vec::new();
        for (n, (line, record)) in parse_csv(text)?.into_iter().enumerate() {
            if record.len() < 3 {
                return Err(format!(
                    "line {line}: must have at least 3 columns (token, user name, user uid), found {}",
                    record.len()
                ));
            }
            if record[0].is_empty() {
                tracing::warn!(record = n + 1, line, "empty token in the token auth file");
                continue;
            }
            let user = user_of(&record);
            // As upstream's map, a later line wins over an earlier one with the same token.
            if let Some(slot) = tokens
                .iter_mut()
                .find(|(t, _)| constant_time_eq(t.as_bytes(), record[0].as_bytes()))
            {
                tracing::warn!(
                    record = n + 1,
                    line,
                    "duplicate token in the token auth file"
                );
                slot.1 = user;
            } else {
                tokens.push((record[0].clone(), user));
            }
        }
        Ok(TokenFile { tokens })
    }

    /// The user of `token`, comparing against every entry in constant time.
    fn lookup(&self, token: &str) -> Option<&UserInfo> {
        let mut found = None;
        for (t, user) in &self.tokens {
            if constant_time_eq(t.as_bytes(), token.as_bytes()) {
                found = Some(user);
            }
        }
        found
    }
}

impl Authenticator for TokenFile {
    /// Upstream's `bearertoken` authenticator: the header is trimmed, split on the first
    /// two spaces, the scheme compared case-insensitively, and an empty token (two spaces
    /// after `Bearer`) means no credentials.
    fn authenticate(&self, headers: &HeaderMap, _peer: &crate::handlers::Peer) -> AuthResult {
        let Some(token) = bearer_token(headers) else {
            return AuthResult::NoCredentials;
        };
        match self.lookup(token) {
            Some(user) => AuthResult::User(user.clone()),
            None => AuthResult::Rejected("invalid bearer token".into()),
        }
    }
}

fn authorization(headers: &HeaderMap) -> Option<&str> {
    // Go's `Header.Get`: the first value.
    headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
}

/// The token of an `Authorization: Bearer <token>` header, as upstream's `bearertoken`.
pub fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let auth = authorization(headers)?.trim();
    if auth.is_empty() {
        return None;
    }
    let mut parts = auth.splitn(3, ' ');
    let scheme = parts.next()?;
    let token = parts.next()?;
    if !scheme.eq_ignore_ascii_case("bearer") || token.is_empty() {
        return None;
    }
    Some(token)
}

/// The user and password of an `Authorization: Basic` header, as Go's `Request.BasicAuth`.
pub fn basic_credentials(headers: &HeaderMap) -> Option<(String, String)> {
    let auth = authorization(headers)?;
    let prefix = auth.get(..6)?;
    if !prefix.eq_ignore_ascii_case("basic ") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(&auth[6..])
        .ok()?;
    let decoded = String::from_utf8(decoded).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_string(), password.to_string()))
}

/// `--basic-auth-file`: the password file of upstream before 1.19
/// (`password,user,uid[,"group1,group2"]`), users keyed by name.
pub struct BasicAuthFile {
    users: HashMap<String, (String, UserInfo)>,
}

impl BasicAuthFile {
    pub fn load(path: &Path) -> Result<BasicAuthFile, crate::Error> {
        let text = read_file(path, "basic auth file")?;
        Self::parse(&text)
            .map_err(|e| crate::Error::Config(format!("basic auth file '{}': {e}", path.display())))
    }

    pub fn parse(text: &str) -> Result<BasicAuthFile, String> {
        let mut users = HashMap::new();
        for (n, (line, record)) in parse_csv(text)?.into_iter().enumerate() {
            if record.len() < 3 {
                return Err(format!(
                    "line {line}: must have at least 3 columns (password, user name, user uid), found {}",
                    record.len()
                ));
            }
            let user = user_of(&record);
            if users.contains_key(&user.name) {
                tracing::warn!(user = %user.name, record = n + 1, line, "duplicate user name in the basic auth file");
            }
            users.insert(user.name.clone(), (record[0].clone(), user));
        }
        Ok(BasicAuthFile { users })
    }
}

impl Authenticator for BasicAuthFile {
    fn authenticate(&self, headers: &HeaderMap, _peer: &crate::handlers::Peer) -> AuthResult {
        let Some((name, password)) = basic_credentials(headers) else {
            return AuthResult::NoCredentials;
        };
        match self.users.get(&name) {
            Some((expected, user))
                if constant_time_eq(expected.as_bytes(), password.as_bytes()) =>
            {
                AuthResult::User(user.clone())
            }
            _ => AuthResult::Rejected("invalid username/password combination".into()),
        }
    }
}

impl Authenticator for X509Authenticator {
    /// Upstream's x509 request authenticator: no client certificate means no credentials;
    /// the verdict is computed once per connection and the leaf's expiry checked on every
    /// request.
    fn authenticate(&self, _headers: &HeaderMap, peer: &crate::handlers::Peer) -> AuthResult {
        if peer.certs.is_empty() {
            return AuthResult::NoCredentials;
        }
        let verdict = peer
            .x509
            .get_or_init(|| self.authenticate_until(&peer.certs));
        match verdict {
            Ok((user, not_after)) => {
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_secs() as i64);
                if now > *not_after {
                    AuthResult::Rejected(
                        "verifying certificate: the certificate has expired".into(),
                    )
                } else {
                    AuthResult::User(user.clone())
                }
            }
            Err(e) => AuthResult::Rejected(e.clone()),
        }
    }
}

/// Why a request is not authenticated.
#[derive(Debug, PartialEq, Eq)]
pub enum Unauthenticated {
    /// No authenticator found credentials of its kind.
    NoCredentials,
    /// Credentials were presented and rejected; the aggregate of the reasons, as upstream's
    /// `utilerrors.NewAggregate` prints it.
    Rejected(String),
    /// As `Rejected`, but one authenticator's lookup in the caches found nothing: worth
    /// asking again once they have caught up.
    Unseen(String),
}

impl Unauthenticated {
    /// Why, for the log.
    pub fn reason(self) -> String {
        match self {
            Unauthenticated::NoCredentials => "no credentials".to_string(),
            Unauthenticated::Rejected(r) | Unauthenticated::Unseen(r) => r,
        }
    }
}

/// The authenticators of the server in order, plus anonymous access.
pub struct Chain {
    pub authenticators: Vec<Box<dyn Authenticator>>,
    /// `--anonymous-auth`: a request without credentials is `system:anonymous`.
    pub anonymous: bool,
}

impl Chain {
    /// Runs the union: the first authenticator that returns a user wins; its user gets
    /// `system:authenticated` (upstream's `AuthenticatedGroupAdder`).
    pub fn authenticate(
        &self,
        headers: &HeaderMap,
        peer: &crate::handlers::Peer,
    ) -> Result<UserInfo, Unauthenticated> {
        let mut errors = Vec::new();
        let mut unseen = false;
        for a in &self.authenticators {
            match a.authenticate(headers, peer) {
                AuthResult::User(mut user) => {
                    add_authenticated_group(&mut user);
                    return Ok(user);
                }
                AuthResult::NoCredentials => {}
                AuthResult::Rejected(reason) => errors.push(reason),
                AuthResult::Unseen(reason) => {
                    unseen = true;
                    errors.push(reason);
                }
            }
        }
        // Upstream's bearer-token authenticator: a token no token authenticator accepts
        // is an invalid one, never an anonymous request.
        if errors.is_empty() && bearer_token(headers).is_some() {
            errors.push("invalid bearer token".into());
        }
        let reason = match errors.len() {
            0 if self.anonymous => return Ok(UserInfo::anonymous()),
            0 => return Err(Unauthenticated::NoCredentials),
            1 => errors.remove(0),
            _ => format!("[{}]", errors.join(", ")),
        };
        Err(if unseen {
            Unauthenticated::Unseen(reason)
        } else {
            Unauthenticated::Rejected(reason)
        })
    }
}

/// Upstream's `AuthenticatedGroupAdder`: every user but the anonymous one is in
/// `system:authenticated`.
fn add_authenticated_group(user: &mut UserInfo) {
    if user.is_anonymous()
        || user
            .groups
            .iter()
            .any(|g| g == "system:authenticated" || g == "system:unauthenticated")
    {
        return;
    }
    user.groups.push("system:authenticated".into());
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::handlers::Peer;
    use http::HeaderValue;

    fn headers(auth: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            http::header::AUTHORIZATION,
            HeaderValue::from_str(auth).unwrap(),
        );
        h
    }

    #[test]
    fn csv_as_go() {
        let r = parse_csv("a,b,c,\"g1,g2\"\n\n\"x\"\"y\",u,1\r\nlast,l,2").unwrap();
        assert_eq!(
            r,
            vec![
                (1, vec!["a".into(), "b".into(), "c".into(), "g1,g2".into()]),
                (3, vec!["x\"y".into(), "u".into(), "1".into()]),
                (4, vec!["last".into(), "l".into(), "2".into()]),
            ]
        );
        let multi = parse_csv("\"a\nb\",u,1\nt,v,2\n").unwrap();
        assert_eq!(multi[1].0, 3);
        assert!(parse_csv("a\"b,c\n").unwrap_err().contains("bare \""));
        assert!(parse_csv("\"abc,d\n").unwrap_err().contains("quoted-field"));
        assert!(parse_csv("\"a\"b,c\n").unwrap_err().contains("line 1"));
        assert_eq!(parse_csv("").unwrap(), vec![]);
    }

    #[test]
    fn token_file() {
        let f =
            TokenFile::parse("t1,alice,uid1,\"dev,ops\",ignored\nt2,bob,uid2\n,empty,3\n").unwrap();
        let alice = f.lookup("t1").unwrap();
        assert_eq!(alice.name, "alice");
        assert_eq!(alice.uid, "uid1");
        assert_eq!(alice.groups, vec!["dev", "ops"]);
        assert!(f.lookup("t2").unwrap().groups.is_empty());
        assert!(f.lookup("").is_none());
        assert!(f.lookup("t3").is_none());
        let e = TokenFile::parse("t1,a,1\n\nt2,b\n").err().unwrap();
        assert_eq!(
            e,
            "line 3: must have at least 3 columns (token, user name, user uid), found 2"
        );
        // A duplicate token: the later line wins.
        let f = TokenFile::parse("t,a,1\nt,b,2\n").unwrap();
        assert_eq!(f.lookup("t").unwrap().name, "b");
    }

    #[test]
    fn bearer_header_as_upstream() {
        assert_eq!(bearer_token(&headers("Bearer abc")), Some("abc"));
        assert_eq!(bearer_token(&headers("bEaReR abc")), Some("abc"));
        // The header is trimmed first: trailing whitespace does not reach the token.
        assert_eq!(bearer_token(&headers("Bearer abc  ")), Some("abc"));
        // Split on the first two spaces: the rest is dropped.
        assert_eq!(bearer_token(&headers("Bearer abc def")), Some("abc"));
        // Two spaces: an empty token is no credentials.
        assert_eq!(bearer_token(&headers("Bearer  abc")), None);
        assert_eq!(bearer_token(&headers("Bearer")), None);
        assert_eq!(bearer_token(&headers("Basic abc")), None);
        assert_eq!(bearer_token(&HeaderMap::new()), None);
    }

    #[test]
    fn basic_auth() {
        let f = BasicAuthFile::parse("pw,alice,1,\"g\"\n").unwrap();
        let peer = Peer::default();
        let good = format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:pw")
        );
        match f.authenticate(&headers(&good), &peer) {
            AuthResult::User(u) => assert_eq!(
                (u.name.as_str(), u.groups),
                ("alice", vec!["g".to_string()])
            ),
            other => panic!("{other:?}"),
        }
        let bad = format!(
            "basic {}",
            base64::engine::general_purpose::STANDARD.encode("alice:pw2")
        );
        assert_eq!(
            f.authenticate(&headers(&bad), &peer),
            AuthResult::Rejected("invalid username/password combination".into())
        );
        assert_eq!(
            f.authenticate(&headers("Bearer x"), &peer),
            AuthResult::NoCredentials
        );
        assert!(
            BasicAuthFile::parse("pw,alice\n")
                .err()
                .unwrap()
                .starts_with("line 1:")
        );
    }

    #[test]
    fn union_chain() {
        let tokens = TokenFile::parse("t1,alice,1,system:masters\nt2,bob,2\n").unwrap();
        let basic = BasicAuthFile::parse("pw,carol,3\n").unwrap();
        let chain = Chain {
            authenticators: vec![Box::new(tokens), Box::new(basic)],
            anonymous: false,
        };
        let peer = Peer::default();
        let bob = chain.authenticate(&headers("Bearer t2"), &peer).unwrap();
        assert_eq!(bob.groups, vec!["system:authenticated"]);
        let alice = chain.authenticate(&headers("Bearer t1"), &peer).unwrap();
        assert_eq!(alice.groups, vec!["system:masters", "system:authenticated"]);
        assert_eq!(
            chain.authenticate(&headers("Bearer nope"), &peer),
            Err(Unauthenticated::Rejected("invalid bearer token".into()))
        );
        assert_eq!(
            chain.authenticate(&HeaderMap::new(), &peer),
            Err(Unauthenticated::NoCredentials)
        );
        let anon = Chain {
            anonymous: true,
            ..chain
        };
        assert_eq!(
            anon.authenticate(&HeaderMap::new(), &peer),
            Ok(UserInfo::anonymous())
        );
        // Rejected credentials never fall through to anonymous.
        assert!(anon.authenticate(&headers("Bearer nope"), &peer).is_err());
    }

    /// An authenticator that finds its object missing from the caches.
    struct Unseeing;

    impl Authenticator for Unseeing {
        fn authenticate(&self, headers: &HeaderMap, _peer: &Peer) -> AuthResult {
            match bearer_token(headers) {
                Some("fresh") => AuthResult::Unseen("serviceaccounts \"robot\" not found".into()),
                _ => AuthResult::NoCredentials,
            }
        }
    }

    #[test]
    fn a_rejection_from_a_cache_miss_is_unseen() {
        let chain = Chain {
            authenticators: vec![
                Box::new(TokenFile::parse("t1,alice,1\n").unwrap()),
                Box::new(Unseeing),
            ],
            anonymous: true,
        };
        let peer = Peer::default();
        let outcome = chain.authenticate(&headers("Bearer fresh"), &peer);
        assert_eq!(
            outcome,
            Err(Unauthenticated::Unseen(
                "[invalid bearer token, serviceaccounts \"robot\" not found]".into()
            ))
        );
        assert_eq!(
            outcome.unwrap_err().reason(),
            "[invalid bearer token, serviceaccounts \"robot\" not found]"
        );
        assert!(chain.authenticate(&headers("Bearer t1"), &peer).is_ok());
        assert_eq!(
            chain.authenticate(&headers("Bearer nope"), &peer),
            Err(Unauthenticated::Rejected("invalid bearer token".into()))
        );
    }

    #[test]
    fn constant_time() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"ab"));
    }
}
