//! Images: the pull policy and back-off of upstream's `imageManager.EnsureImageExists`,
//! and the registry credentials of the pod's `imagePullSecrets` matched to an image as
//! the credential provider's keyring does.

use std::collections::BTreeMap;

use base64::Engine;
use cri::v1;
use k8s_openapi::api::core::v1::Secret;

/// A credential from a pull secret, for registry `key` (host with an optional path).
/// Its `Debug` form hides the password, so no log line can carry it.
#[derive(Clone, PartialEq, Eq)]
pub struct Credential {
    pub key: String,
    pub username: String,
    pub password: String,
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credential")
            .field("key", &self.key)
            .field("username", &self.username)
            .field("password", &"<redacted>")
            .finish()
    }
}

impl Credential {
    /// The CRI credential, as upstream's keyring hands it over: user and password only.
    /// `server_address` stays empty: the key already chose the registry, and containerd
    /// 1.6 parses a non-empty one as a URL (a bare `host:port` key fails to parse, which
    /// fails the pull).
    pub fn auth_config(&self) -> v1::AuthConfig {
        v1::AuthConfig {
            username: self.username.clone(),
            password: self.password.clone(),
            ..Default::default()
        }
    }
}

/// Normalizes a registry key as the keyring does: scheme and `/v1/`-style suffixes
/// dropped, `index.docker.io` → `docker.io`.
fn normalize_key(key: &str) -> String {
    let mut k = key.trim();
    for p in ["https://", "http://"] {
        if let Some(rest) = k.strip_prefix(p) {
            k = rest;
        }
    }
    let mut k = k.trim_end_matches('/').to_string();
    for suffix in ["/v1", "/v2"] {
        if let Some(rest) = k.strip_suffix(suffix) {
            k = rest.to_string();
        }
    }
    if k == "index.docker.io" || k == "registry-1.docker.io" {
        k = "docker.io".into();
    }
    k
}

#[derive(serde::Deserialize, Default)]
struct Entry {
    #[serde(default)]
    auth: String,
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
}

#[derive(serde::Deserialize)]
struct DockerConfigJson {
    #[serde(default)]
    auths: BTreeMap<String, Entry>,
}

fn entry_credential(key: &str, e: &Entry) -> Option<Credential> {
    let (mut user, mut pass) = (e.username.clone(), e.password.clone());
    if !e.auth.is_empty() {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(e.auth.trim())
            .ok()?;
        let text = String::from_utf8(decoded).ok()?;
        let (u, p) = text.split_once(':')?;
        user = u.to_string();
        pass = p.to_string();
    }
    if user.is_empty() && pass.is_empty() {
        return None;
    }
    Some(Credential {
        key: normalize_key(key),
        username: user,
        password: pass,
    })
}

/// The credentials of pull secrets (`kubernetes.io/dockerconfigjson` and
/// `kubernetes.io/dockercfg`); unreadable entries are skipped.
pub fn credentials(secrets: &[Secret]) -> Vec<Credential> {
    let mut out = Vec::new();
    for s in secrets {
        let data = s.data.as_ref();
        let get = |k: &str| data.and_then(|d| d.get(k)).map(|b| b.0.clone());
        match s.type_.as_deref() {
            Some("kubernetes.io/dockerconfigjson") => {
                if let Some(bytes) = get(".dockerconfigjson")
                    && let Ok(cfg) = serde_json::from_slice::<DockerConfigJson>(&bytes)
                {
                    out.extend(cfg.auths.iter().filter_map(|(k, e)| entry_credential(k, e)));
                }
            }
            Some("kubernetes.io/dockercfg") => {
                if let Some(bytes) = get(".dockercfg")
                    && let Ok(cfg) = serde_json::from_slice::<BTreeMap<String, Entry>>(&bytes)
                {
                    out.extend(cfg.iter().filter_map(|(k, e)| entry_credential(k, e)));
                }
            }
            _ => {}
        }
    }
    out
}

/// The registry host and repository path of an image (`nginx` → `docker.io`,
/// `library/nginx`).
pub fn registry_and_path(image: &str) -> (String, String) {
    let name = image.split('@').next().unwrap_or(image);
    let (first, rest) = match name.split_once('/') {
        Some((f, r)) if f.contains('.') || f.contains(':') || f == "localhost" => {
            (f.to_string(), r.to_string())
        }
        _ => {
            let path = if name.contains('/') {
                name.to_string()
            } else {
                format!("library/{name}")
            };
            ("docker.io".to_string(), path)
        }
    };
    // Drop the tag.
    let path = match rest.rsplit_once(':') {
        Some((p, tag)) if !tag.contains('/') => p.to_string(),
        _ => rest,
    };
    (normalize_key(&first), path)
}

fn host_matches(pattern: &str, host: &str) -> bool {
    // `*.example.com` globs one label per `*`.
    let pp: Vec<&str> = pattern.split('.').collect();
    let hp: Vec<&str> = host.split('.').collect();
    if pp.len() != hp.len() {
        return false;
    }
    pp.iter().zip(&hp).all(|(p, h)| *p == "*" || p == h)
}

/// The credentials that apply to `image`, most specific first (the keyring's lookup:
/// host matches with globs and ports, then the key's path is a prefix of the image's).
pub fn credentials_for(image: &str, creds: &[Credential]) -> Vec<Credential> {
    let (host, path) = registry_and_path(image);
    let mut matched: Vec<&Credential> = creds
        .iter()
        .filter(|c| {
            let (khost, kpath) = match c.key.split_once('/') {
                Some((h, p)) => (h, p),
                None => (c.key.as_str(), ""),
            };
            host_matches(khost, &host)
                && (kpath.is_empty() || path == kpath || path.starts_with(&format!("{kpath}/")))
        })
        .collect();
    matched.sort_by_key(|c| std::cmp::Reverse(c.key.len()));
    matched.into_iter().cloned().collect()
}

/// What `EnsureImageExists` decides before talking to the runtime.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PullDecision {
    /// Use the present image.
    UsePresent,
    /// Pull it.
    Pull,
    /// `ErrImageNeverPull` with its message.
    NeverPull(String),
}

/// `shouldPullImage` with the policy defaulted as the API server does (`Always` for
/// `:latest` or untagged images, else `IfNotPresent`).
pub fn pull_decision(image: &str, policy: Option<&str>, present: bool) -> PullDecision {
    let policy = policy.filter(|p| !p.is_empty()).unwrap_or_else(|| {
        let untagged_or_latest = {
            let name = image.rsplit('/').next().unwrap_or(image);
            !image.contains('@') && (!name.contains(':') || name.ends_with(":latest"))
        };
        if untagged_or_latest {
            "Always"
        } else {
            "IfNotPresent"
        }
    });
    match policy {
        "Never" if present => PullDecision::UsePresent,
        "Never" => PullDecision::NeverPull(format!(
            "Container image \"{image}\" is not present with pull policy of Never"
        )),
        "IfNotPresent" if present => PullDecision::UsePresent,
        _ => PullDecision::Pull,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn policies() {
        assert_eq!(
            pull_decision("nginx:1.25", Some("IfNotPresent"), true),
            PullDecision::UsePresent
        );
        assert_eq!(
            pull_decision("nginx:1.25", Some("IfNotPresent"), false),
            PullDecision::Pull
        );
        assert_eq!(
            pull_decision("nginx:1.25", Some("Always"), true),
            PullDecision::Pull
        );
        assert_eq!(
            pull_decision("nginx:1.25", Some("Never"), true),
            PullDecision::UsePresent
        );
        assert_eq!(
            pull_decision("nginx:1.25", Some("Never"), false),
            PullDecision::NeverPull(
                "Container image \"nginx:1.25\" is not present with pull policy of Never".into()
            )
        );
        assert_eq!(pull_decision("nginx", None, true), PullDecision::Pull);
        assert_eq!(
            pull_decision("localhost:5000/nginx:1", None, true),
            PullDecision::UsePresent
        );
    }

    #[test]
    fn registries() {
        assert_eq!(
            registry_and_path("nginx"),
            ("docker.io".into(), "library/nginx".into())
        );
        assert_eq!(
            registry_and_path("user/app:1"),
            ("docker.io".into(), "user/app".into())
        );
        assert_eq!(
            registry_and_path("127.0.0.1:5000/demo/web:v1"),
            ("127.0.0.1:5000".into(), "demo/web".into())
        );
        assert_eq!(
            registry_and_path("ghcr.io/o/r@sha256:abc"),
            ("ghcr.io".into(), "o/r".into())
        );
    }

    #[test]
    fn pull_secrets_match_registries() {
        let auth = base64::engine::general_purpose::STANDARD.encode("bob:pw");
        let cfg = json!({"auths": {
            "https://index.docker.io/v1/": {"auth": auth},
            "registry.example.com/team": {"username": "team", "password": "t"},
            "*.corp.io": {"username": "glob", "password": "g"},
        }});
        let s: Secret = serde_json::from_value(json!({
            "metadata": {"name": "s"},
            "type": "kubernetes.io/dockerconfigjson",
            "data": {".dockerconfigjson": base64::engine::general_purpose::STANDARD.encode(cfg.to_string())}
        }))
        .unwrap();
        let old: Secret = serde_json::from_value(json!({
            "metadata": {"name": "o"},
            "type": "kubernetes.io/dockercfg",
            "data": {".dockercfg": base64::engine::general_purpose::STANDARD.encode(
                json!({"127.0.0.1:5000": {"username": "local", "password": "l"}}).to_string())}
        }))
        .unwrap();
        let creds = credentials(&[s, old]);
        assert_eq!(creds.len(), 4);
        let c = credentials_for("nginx:1", &creds);
        assert_eq!(c[0].username, "bob");
        assert_eq!(c[0].password, "pw");
        assert_eq!(
            credentials_for("registry.example.com/team/app", &creds)[0].username,
            "team"
        );
        assert!(credentials_for("registry.example.com/other/app", &creds).is_empty());
        assert_eq!(credentials_for("a.corp.io/x", &creds)[0].username, "glob");
        assert_eq!(
            credentials_for("127.0.0.1:5000/demo:1", &creds)[0].username,
            "local"
        );
        assert!(credentials_for("quay.io/x", &creds).is_empty());
        let auth = credentials_for("127.0.0.1:5000/demo:1", &creds)[0].auth_config();
        assert_eq!(
            (auth.username.as_str(), auth.password.as_str()),
            ("local", "l")
        );
        assert_eq!(auth.server_address, "");
        let shown = format!("{:?}", creds);
        assert!(
            !shown.contains("pw") && shown.contains("<redacted>"),
            "{shown}"
        );
    }
}
