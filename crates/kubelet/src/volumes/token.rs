//! Service-account tokens of projected volumes, cached in memory and refreshed as
//! upstream's token manager (`pkg/kubelet/token/token_manager.go`): a token is reused
//! until it is older than 80% of its lifetime or older than 24 hours; when a refresh
//! fails, the cached token is used while it has not expired.

use std::collections::HashMap;
use std::sync::Mutex;

use k8s_openapi::api::authentication::v1::TokenRequest;

/// How long a token is used at most, whatever its lifetime (upstream's `maxTTL`).
pub const MAX_TTL_SECONDS: i64 = 24 * 3600;

/// A cached token's identity: the pod, the volume, the service account and what the token
/// was requested with.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TokenKey {
    pub pod_uid: String,
    pub volume: String,
    pub namespace: String,
    pub service_account: String,
    pub audience: String,
    pub expiration_seconds: i64,
}

fn expiration(tr: &TokenRequest) -> Option<jiff::Timestamp> {
    tr.status.as_ref().map(|s| s.expiration_timestamp.0)
}

/// Whether the token's expiration time has passed.
pub fn expired(now: jiff::Timestamp, tr: &TokenRequest) -> bool {
    expiration(tr).is_none_or(|exp| now > exp)
}

/// Upstream's `requiresRefresh` (without its random jitter): the token is older than 24 h,
/// or within the last 20% of its lifetime.
pub fn requires_refresh(now: jiff::Timestamp, tr: &TokenRequest) -> bool {
    let Some(exp_secs) = tr.spec.expiration_seconds else {
        return false;
    };
    let Some(exp) = expiration(tr) else {
        return true;
    };
    let secs = |s: i64| jiff::SignedDuration::from_secs(s);
    let iat = exp - secs(exp_secs);
    if now > iat + secs(MAX_TTL_SECONDS) {
        return true;
    }
    now > exp - secs(exp_secs * 20 / 100)
}

/// The tokens of every pod's projected volumes.
#[derive(Debug, Default)]
pub struct TokenCache {
    entries: Mutex<HashMap<TokenKey, TokenRequest>>,
}

impl TokenCache {
    pub fn get(&self, key: &TokenKey) -> Option<TokenRequest> {
        self.entries.lock().ok()?.get(key).cloned()
    }

    pub fn set(&self, key: TokenKey, tr: TokenRequest) {
        if let Ok(mut e) = self.entries.lock() {
            e.insert(key, tr);
        }
    }

    /// Forgets a pod's tokens (its volumes are torn down).
    pub fn remove_pod(&self, pod_uid: &str) {
        if let Ok(mut e) = self.entries.lock() {
            e.retain(|k, _| k.pod_uid != pod_uid);
        }
    }

    /// Forgets expired tokens (upstream's periodic cleanup).
    pub fn remove_expired(&self, now: jiff::Timestamp) {
        if let Ok(mut e) = self.entries.lock() {
            e.retain(|_, tr| !expired(now, tr));
        }
    }

    pub fn len(&self) -> usize {
        self.entries.lock().map(|e| e.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tr(exp_secs: i64, expires: &str) -> TokenRequest {
        serde_json::from_value(json!({
            "spec": {"audiences": [], "expirationSeconds": exp_secs},
            "status": {"token": "t", "expirationTimestamp": expires}
        }))
        .unwrap()
    }

    fn t(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    #[test]
    fn refresh_after_80_percent() {
        // Issued 10:00, expires 11:00 (3600 s): refresh after 10:48.
        let tok = tr(3600, "2024-01-01T11:00:00Z");
        assert!(!requires_refresh(t("2024-01-01T10:00:00Z"), &tok));
        assert!(!requires_refresh(t("2024-01-01T10:48:00Z"), &tok));
        assert!(requires_refresh(t("2024-01-01T10:48:01Z"), &tok));
        assert!(!expired(t("2024-01-01T10:59:59Z"), &tok));
        assert!(expired(t("2024-01-01T11:00:01Z"), &tok));
    }

    #[test]
    fn refresh_after_24_hours() {
        // A one-week token is refreshed after a day, long before 80% of its life.
        let tok = tr(7 * 86400, "2024-01-08T00:00:00Z");
        assert!(!requires_refresh(t("2024-01-01T23:59:59Z"), &tok));
        assert!(requires_refresh(t("2024-01-02T00:00:01Z"), &tok));
    }

    #[test]
    fn cache_forgets_pods_and_expired_tokens() {
        let c = TokenCache::default();
        let key = |uid: &str| TokenKey {
            pod_uid: uid.into(),
            volume: "v".into(),
            namespace: "ns".into(),
            service_account: "sa".into(),
            audience: String::new(),
            expiration_seconds: 3600,
        };
        c.set(key("a"), tr(3600, "2024-01-01T11:00:00Z"));
        c.set(key("b"), tr(3600, "2024-01-01T12:00:00Z"));
        c.remove_pod("a");
        assert!(c.get(&key("a")).is_none());
        assert_eq!(c.len(), 1);
        c.remove_expired(t("2024-01-01T12:00:01Z"));
        assert!(c.is_empty());
    }
}
