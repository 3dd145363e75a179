//! Service-account tokens: the keys (`--service-account-key-file`,
//! `--service-account-signing-key-file`, or a key generated in the data dir), the bearer
//! JWT authenticator (legacy and bound tokens, upstream's `pkg/serviceaccount`), and the
//! `TokenRequest` subresource that issues bound tokens
//! (`POST /api/v1/namespaces/<ns>/serviceaccounts/<name>/token`, upstream's
//! `pkg/registry/core/serviceaccount/storage/token.go`).
//!
//! The authenticator reads service accounts, pods, secrets and nodes from the watch
//! caches; `TokenRequest` reads them from the store.

pub mod jwt;
pub mod keys;
mod request;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use http::HeaderMap;
use serde_json::Value;
use store::Clock;

use crate::Error;
use crate::authn::{AuthResult, Authenticator};
use crate::registry::{Registry, Resource};
pub use jwt::{ObjectKind, Objects, Verdict, Verifier};
pub use keys::{PublicKey, SigningKey};

/// The issuer when `--service-account-issuer` is not given (k3s's).
pub const DEFAULT_ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

/// The service-account flags.
#[derive(Clone, Debug)]
pub struct Options {
    /// `--service-account-key-file`: PEM files of the keys that verify tokens.
    pub key_files: Vec<PathBuf>,
    /// `--service-account-signing-key-file`: the PEM private key that signs tokens (none:
    /// `<data-dir>/tls/service.key`, generated on first start).
    pub signing_key_file: Option<PathBuf>,
    /// `--service-account-issuer`: the first issues, all are accepted.
    pub issuers: Vec<String>,
    /// `--api-audiences` (empty: the issuers).
    pub api_audiences: Vec<String>,
    /// `--service-account-max-token-expiration` (zero: no maximum).
    pub max_token_expiration: Duration,
    /// `--service-account-extend-token-expiration`.
    pub extend_token_expiration: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            key_files: Vec::new(),
            signing_key_file: None,
            issuers: vec![DEFAULT_ISSUER.to_string()],
            api_audiences: Vec::new(),
            max_token_expiration: Duration::ZERO,
            extend_token_expiration: true,
        }
    }
}

/// The keys, loaded at start-up (a bad file stops the start).
pub struct Keys {
    signer: SigningKey,
    verify: Vec<PublicKey>,
}

fn read(path: &Path, flag: &str) -> Result<Vec<u8>, Error> {
    std::fs::read(path).map_err(|e| Error::Config(format!("{flag} {}: {e}", path.display())))
}

impl Keys {
    /// Loads the keys the options name; without a signing key, the one in `tls_dir`
    /// (`service.key`, created when missing), which then also verifies.
    pub fn load(options: &Options, tls_dir: &Path) -> Result<Keys, Error> {
        validate(options)?;
        let (signer, generated) = match &options.signing_key_file {
            Some(path) => {
                let key =
                    keys::signing_key_from_pem(&read(path, "--service-account-signing-key-file")?)
                        .map_err(|e| {
                            Error::Config(format!(
                                "--service-account-signing-key-file {}: {e}",
                                path.display()
                            ))
                        })?;
                (key, false)
            }
            None => (load_or_generate(&tls_dir.join("service.key"))?, true),
        };
        let mut verify: Vec<PublicKey> = Vec::new();
        for path in &options.key_files {
            let found = keys::public_keys_from_pem(&read(path, "--service-account-key-file")?)
                .map_err(|e| {
                    Error::Config(format!(
                        "--service-account-key-file {}: {e}",
                        path.display()
                    ))
                })?;
            verify.extend(found);
        }
        let signer_verifies = verify.iter().any(|k| k.kid == signer.public.kid);
        if !signer_verifies {
            if options.key_files.is_empty() || generated {
                verify.push(signer.public.clone());
            } else {
                tracing::warn!(
                    "the --service-account-signing-key-file key is not among the --service-account-key-file keys: the tokens it signs will not authenticate"
                );
            }
        }
        Ok(Keys { signer, verify })
    }
}

/// Upstream's checks of the service-account flags.
fn validate(options: &Options) -> Result<(), Error> {
    if options.issuers.is_empty() {
        return Err(Error::Config(
            "service-account-issuer is a required flag".into(),
        ));
    }
    let mut seen: Vec<&str> = Vec::new();
    for issuer in &options.issuers {
        if issuer.is_empty() {
            return Err(Error::Config(
                "service-account-issuer should not be an empty string".into(),
            ));
        }
        if seen.contains(&issuer.as_str()) {
            return Err(Error::Config(format!(
                "service-account-issuer {issuer:?} is already specified"
            )));
        }
        seen.push(issuer);
    }
    let max = options.max_token_expiration;
    if !max.is_zero() {
        if max < Duration::from_secs(3600) || max > Duration::from_secs(1 << 32) {
            return Err(Error::Config(
                "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
                    .into(),
            ));
        }
        if options.extend_token_expiration
            && max < Duration::from_secs(jwt::EXPIRATION_EXTENSION_SECONDS as u64)
        {
            tracing::warn!(
                "service-account-extend-token-expiration is true, enabling tokens valid up to {} seconds, which is longer than service-account-max-token-expiration set to {}s",
                jwt::EXPIRATION_EXTENSION_SECONDS,
                max.as_secs()
            );
        }
    }
    Ok(())
}

/// The key in `path`, or a new one written there (owner-only) when there is none.
fn load_or_generate(path: &Path) -> Result<SigningKey, Error> {
    if path.exists() {
        let pem = read(path, "service account key")?;
        return keys::signing_key_from_pem(&pem)
            .map_err(|e| Error::Config(format!("service account key {}: {e}", path.display())));
    }
    let (key, pem) = SigningKey::generate().map_err(Error::Config)?;
    crate::pki::write_private_file(path, &pem)?;
    tracing::info!(path = %path.display(), "generated the service account signing key");
    Ok(key)
}

/// The server's service-account tokens: verification and issuance.
pub struct Tokens {
    verifier: Verifier,
    signer: SigningKey,
    max_expiration_seconds: i64,
    extend_expiration: bool,
    objects: Arc<dyn Objects>,
    clock: Arc<dyn Clock>,
}

impl Tokens {
    pub fn new(
        keys: Keys,
        options: &Options,
        objects: Arc<dyn Objects>,
        clock: Arc<dyn Clock>,
    ) -> Tokens {
        let audiences = if options.api_audiences.is_empty() {
            options.issuers.clone()
        } else {
            options.api_audiences.clone()
        };
        Tokens {
            verifier: Verifier {
                issuers: options.issuers.clone(),
                audiences,
                keys: keys.verify,
                verified: jwt::VerifiedTokens::default(),
            },
            signer: keys.signer,
            max_expiration_seconds: i64::try_from(options.max_token_expiration.as_secs())
                .unwrap_or(i64::MAX),
            extend_expiration: options.extend_token_expiration,
            objects,
            clock,
        }
    }

    /// The API audiences.
    pub fn audiences(&self) -> &[String] {
        &self.verifier.audiences
    }

    /// The issuer of the tokens this server signs.
    pub fn issuer(&self) -> &str {
        self.verifier
            .issuers
            .first()
            .map(String::as_str)
            .unwrap_or(DEFAULT_ISSUER)
    }

    /// The verdict on a bearer token now for `audiences`, and whether it is a rejection
    /// after a lookup found nothing (it may change once the caches catch up).
    fn verdict(&self, token: &str, audiences: &[String]) -> (Verdict, bool) {
        let noting = Noting {
            objects: self.objects.as_ref(),
            missed: AtomicBool::new(false),
        };
        let verdict =
            self.verifier
                .authenticate_for(token, self.clock.now_ms(), &noting, audiences);
        let unseen = matches!(verdict, Verdict::Rejected(_)) && noting.missed.into_inner();
        (verdict, unseen)
    }

    /// The verdict on a bearer token now for `audiences` (none: the API audiences), as
    /// `TokenReview` asks it.
    pub fn review_token(&self, token: &str, audiences: &[String]) -> Review {
        let asked: &[String] = if audiences.is_empty() {
            &self.verifier.audiences
        } else {
            audiences
        };
        let (verdict, unseen) = self.verdict(token, asked);
        let granted = match &verdict {
            Verdict::User(_) => {
                let of_token = jwt::unverified_audiences(token);
                if of_token.is_empty() {
                    // Legacy tokens have no audience: they are for the API.
                    asked.to_vec()
                } else {
                    asked
                        .iter()
                        .filter(|a| of_token.contains(a))
                        .cloned()
                        .collect()
                }
            }
            _ => Vec::new(),
        };
        Review {
            verdict,
            audiences: granted,
            unseen,
        }
    }

    /// Waits, bounded, until the objects tokens are checked against reflect every write
    /// the store held when called: a rejection that was [`Review::unseen`] is then asked
    /// once more.
    pub async fn catch_up(&self) {
        self.objects.catch_up().await;
    }

    /// Signs `claims` with the signing key.
    pub fn sign(&self, claims: &Value) -> Result<String, String> {
        self.signer.sign(claims)
    }
}

impl Authenticator for Arc<Tokens> {
    fn authenticate(&self, headers: &HeaderMap, _peer: &crate::handlers::Peer) -> AuthResult {
        let Some(token) = crate::authn::bearer_token(headers) else {
            return AuthResult::NoCredentials;
        };
        match self.verdict(token, &self.verifier.audiences) {
            (Verdict::NotOurs, _) => AuthResult::NoCredentials,
            (Verdict::User(user), _) => AuthResult::User(user),
            (Verdict::Rejected(reason), true) => {
                tracing::debug!(%reason, "service account token rejected; checking again once the caches catch up");
                AuthResult::Unseen(reason)
            }
            (Verdict::Rejected(reason), false) => {
                tracing::debug!(%reason, "service account token rejected");
                AuthResult::Rejected(reason)
            }
        }
    }
}

/// A `TokenReview`'s answer from the service-account tokens.
#[derive(Debug)]
pub struct Review {
    pub verdict: Verdict,
    /// The audiences the token is valid for: those of the token among the asked ones.
    pub audiences: Vec<String>,
    /// A rejection after a lookup found nothing: it may change once the caches catch up.
    pub unseen: bool,
}

/// [`Objects`] that notes whether a lookup found nothing.
struct Noting<'a> {
    objects: &'a dyn Objects,
    missed: AtomicBool,
}

impl Objects for Noting<'_> {
    fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let found = self.objects.get(kind, namespace, name);
        if found.is_none() {
            self.missed.store(true, Ordering::Relaxed);
        }
        found
    }
}

/// [`Objects`] over the registry's watch caches (objects parsed once per revision).
pub struct CacheObjects {
    caches: Vec<(ObjectKind, Arc<Resource>)>,
    /// The store the caches follow (its current revision is what they catch up to).
    store: Arc<dyn store::Backend>,
}

impl CacheObjects {
    pub fn new(registry: &Registry) -> Result<CacheObjects, Error> {
        let mut caches = Vec::new();
        for kind in [
            ObjectKind::ServiceAccount,
            ObjectKind::Pod,
            ObjectKind::Secret,
            ObjectKind::Node,
        ] {
            let r = registry
                .lookup("", "v1", kind.plural())
                .ok_or_else(|| Error::Config(format!("no {} resource", kind.plural())))?;
            caches.push((kind, r));
        }
        Ok(CacheObjects {
            caches,
            store: Arc::clone(&registry.store),
        })
    }
}

impl Objects for CacheObjects {
    fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<Arc<Value>> {
        let (_, r) = self.caches.iter().find(|(k, _)| *k == kind)?;
        let ns = (!namespace.is_empty()).then_some(namespace);
        let obj = r.cacher.get(&r.info.key(ns, name))?;
        if obj.uninitialized {
            return None;
        }
        r.parsed(&obj)
    }

    fn catch_up(&self) -> futures::future::BoxFuture<'_, ()> {
        Box::pin(async {
            // One revision for all four caches: they follow the same store.
            let current = match self.store.current_revision().await {
                Ok(rev) => rev,
                Err(e) => {
                    tracing::debug!(error = %e, "the token caches cannot catch up");
                    return;
                }
            };
            let waits = self
                .caches
                .iter()
                .map(|(_, r)| r.cacher.wait_for(current, CATCH_UP));
            if !futures::future::join_all(waits)
                .await
                .into_iter()
                .all(|ok| ok)
            {
                tracing::debug!(
                    revision = current,
                    "the token caches did not catch up in time"
                );
            }
        })
    }
}

/// How long a token whose objects were missing waits for the caches (a client's
/// request; the store answers its revision in milliseconds when it is up).
const CATCH_UP: Duration = Duration::from_secs(3);

#[cfg(test)]
mod tests {
    use super::*;

    fn kids(keys: &Keys) -> Vec<String> {
        keys.verify.iter().map(|k| k.kid.clone()).collect()
    }

    /// Objects whose cache lags: a service account created a moment ago appears only
    /// once asked to catch up.
    #[derive(Default)]
    struct Lagging {
        caught_up: AtomicBool,
    }

    impl Objects for Lagging {
        fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<Arc<Value>> {
            let seen = self.caught_up.load(Ordering::SeqCst)
                && kind == ObjectKind::ServiceAccount
                && (namespace, name) == ("default", "robot");
            seen.then(|| Arc::new(serde_json::json!({"metadata": {"uid": "uid-1"}})))
        }

        fn catch_up(&self) -> futures::future::BoxFuture<'_, ()> {
            self.caught_up.store(true, Ordering::SeqCst);
            Box::pin(std::future::ready(()))
        }
    }

    #[tokio::test]
    async fn a_token_for_an_object_the_cache_has_not_seen_is_asked_again() {
        const NOW_S: i64 = 1_800_000_000;
        let (signer, _) = SigningKey::generate().unwrap();
        let keys = Keys {
            verify: vec![signer.public.clone()],
            signer,
        };
        let lagging = Arc::new(Lagging::default());
        let objects: Arc<dyn Objects> = lagging.clone();
        let tokens = Arc::new(Tokens::new(
            keys,
            &Options::default(),
            objects,
            Arc::new(store::ManualClock::new(NOW_S * 1000)),
        ));
        let claims_of = |sa: &str, uid: &str| {
            let audiences = vec![DEFAULT_ISSUER.to_string()];
            jwt::BoundToken {
                issuer: DEFAULT_ISSUER,
                namespace: "default",
                service_account: (sa, uid),
                audiences: &audiences,
                now: NOW_S,
                expiration_seconds: 3600,
                ..Default::default()
            }
            .claims()
        };
        let mint = |sa: &str, uid: &str| tokens.sign(&claims_of(sa, uid)).unwrap();
        let headers = |token: &str| {
            let mut h = HeaderMap::new();
            h.insert(
                http::header::AUTHORIZATION,
                format!("Bearer {token}").parse().unwrap(),
            );
            h
        };
        let peer = crate::handlers::Peer::default();
        let robot = mint("robot", "uid-1");
        let gone = mint("ghost", "uid-2");
        let (other, _) = SigningKey::generate().unwrap();
        let forged = other.sign(&claims_of("robot", "uid-1")).unwrap();

        // Before the cache has the account: a rejection worth asking again.
        let AuthResult::Unseen(reason) = tokens.authenticate(&headers(&robot), &peer) else {
            panic!("a missing account is unseen");
        };
        assert!(reason.contains("robot"), "{reason}");
        let review = tokens.review_token(&robot, &[]);
        assert!(review.unseen && matches!(review.verdict, Verdict::Rejected(_)));
        // A bad signature proves nothing about the cache: a plain rejection.
        assert!(matches!(
            tokens.authenticate(&headers(&forged), &peer),
            AuthResult::Rejected(_)
        ));

        tokens.catch_up().await;
        let AuthResult::User(user) = tokens.authenticate(&headers(&robot), &peer) else {
            panic!("accepted once the cache caught up");
        };
        assert_eq!(user.name, "system:serviceaccount:default:robot");
        let review = tokens.review_token(&robot, &[]);
        assert!(!review.unseen && matches!(review.verdict, Verdict::User(_)));
        assert_eq!(review.audiences, vec![DEFAULT_ISSUER.to_string()]);
        // An account that really is not there stays refused (unseen every time: the
        // caller asks once more and then refuses).
        assert!(matches!(
            tokens.authenticate(&headers(&gone), &peer),
            AuthResult::Unseen(_)
        ));
    }

    #[test]
    fn generated_key_is_kept_and_verifies() {
        let dir = tempfile::tempdir().unwrap();
        let options = Options::default();
        let first = Keys::load(&options, dir.path()).unwrap();
        assert!(dir.path().join("service.key").exists());
        assert_eq!(kids(&first), vec![first.signer.public.kid.clone()]);
        let again = Keys::load(&options, dir.path()).unwrap();
        assert_eq!(again.signer.public.kid, first.signer.public.kid);
    }

    #[test]
    fn key_files_and_signing_key() {
        let dir = tempfile::tempdir().unwrap();
        let (a, a_pem) = SigningKey::generate().unwrap();
        let (b, b_pem) = SigningKey::generate().unwrap();
        std::fs::write(dir.path().join("a.pem"), &a_pem).unwrap();
        std::fs::write(dir.path().join("b.pem"), &b_pem).unwrap();
        let tls = dir.path().join("tls");
        std::fs::create_dir(&tls).unwrap();

        // Key files only: they verify, plus the generated signing key.
        let options = Options {
            key_files: vec![dir.path().join("b.pem")],
            ..Options::default()
        };
        let keys = Keys::load(&options, &tls).unwrap();
        assert_eq!(
            kids(&keys),
            vec![b.public.kid.clone(), keys.signer.public.kid.clone()]
        );

        // A signing key alone verifies too.
        let options = Options {
            signing_key_file: Some(dir.path().join("a.pem")),
            ..Options::default()
        };
        let keys = Keys::load(&options, &tls).unwrap();
        assert_eq!(keys.signer.public.kid, a.public.kid);
        assert_eq!(kids(&keys), vec![a.public.kid.clone()]);

        // Both given: exactly the key files, as upstream.
        let options = Options {
            signing_key_file: Some(dir.path().join("a.pem")),
            key_files: vec![dir.path().join("b.pem")],
            ..Options::default()
        };
        let keys = Keys::load(&options, &tls).unwrap();
        assert_eq!(kids(&keys), vec![b.public.kid.clone()]);

        // A missing file stops the start.
        let options = Options {
            key_files: vec![dir.path().join("missing.pem")],
            ..Options::default()
        };
        let Err(Error::Config(e)) = Keys::load(&options, &tls) else {
            panic!("a missing key file is an error");
        };
        assert!(e.starts_with("--service-account-key-file "), "{e}");
    }

    #[test]
    fn flag_validation() {
        let check = |options: Options| match validate(&options) {
            Err(Error::Config(e)) => e,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            check(Options {
                issuers: vec![],
                ..Options::default()
            }),
            "service-account-issuer is a required flag"
        );
        assert_eq!(
            check(Options {
                issuers: vec!["a".into(), "".into()],
                ..Options::default()
            }),
            "service-account-issuer should not be an empty string"
        );
        assert_eq!(
            check(Options {
                issuers: vec!["a".into(), "a".into()],
                ..Options::default()
            }),
            "service-account-issuer \"a\" is already specified"
        );
        assert_eq!(
            check(Options {
                max_token_expiration: Duration::from_secs(1800),
                ..Options::default()
            }),
            "the service-account-max-token-expiration must be between 1 hour and 2^32 seconds"
        );
        assert!(
            validate(&Options {
                max_token_expiration: Duration::from_secs(7200),
                ..Options::default()
            })
            .is_ok()
        );
    }
}
