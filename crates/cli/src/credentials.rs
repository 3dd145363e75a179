//! Client credentials decorated on each request, as client-go's transport does: a bearer
//! token (`token`, `tokenFile`, `--token`), basic auth, an OIDC id-token
//! (`auth-provider: oidc`, refreshed with the refresh-token at the issuer's token endpoint
//! when expired, the new tokens written back to the kubeconfig), and exec credential
//! plugins (`client.authentication.k8s.io/v1`, `KUBERNETES_EXEC_INFO`, the credential
//! cached until its `expirationTimestamp` and forgotten on a 401).

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde_json::Value;

use crate::error::{CliError, Result};
use crate::klog::Logger;
use crate::kubeconfig::{ExecConfig, Rules};

/// How requests authenticate (besides a TLS client certificate).
#[derive(Clone, Default)]
pub enum Auth {
    #[default]
    None,
    Bearer(String),
    Basic(String, String),
    Exec(Arc<ExecPlugin>),
    Oidc(Arc<Oidc>),
}

impl std::fmt::Debug for Auth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let name = match self {
            Auth::None => "None",
            Auth::Bearer(_) => "Bearer",
            Auth::Basic(..) => "Basic",
            Auth::Exec(_) => "Exec",
            Auth::Oidc(_) => "Oidc",
        };
        f.write_str(name)
    }
}

/// What one request carries.
#[derive(Clone, Default, Debug, PartialEq)]
pub struct Credential {
    pub bearer: Option<String>,
    pub basic: Option<(String, String)>,
    /// A client certificate and key (PEM) from an exec plugin.
    pub cert: Option<(Vec<u8>, Vec<u8>)>,
}

impl Credential {
    /// The `Authorization` header value.
    pub fn authorization(&self) -> Option<String> {
        if let Some(t) = &self.bearer {
            return Some(format!("Bearer {t}"));
        }
        self.basic.as_ref().map(|(u, p)| {
            format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{u}:{p}"))
            )
        })
    }

    pub fn client_cert(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        self.cert.clone()
    }
}

impl Auth {
    /// The credential for the next request (running the exec plugin or refreshing the
    /// OIDC token when needed).
    pub async fn credential(&self, log: &Logger) -> Result<Credential> {
        match self {
            Auth::None => Ok(Credential::default()),
            Auth::Bearer(t) => Ok(Credential {
                bearer: Some(t.clone()),
                ..Credential::default()
            }),
            Auth::Basic(u, p) => Ok(Credential {
                basic: Some((u.clone(), p.clone())),
                ..Credential::default()
            }),
            Auth::Exec(e) => e.credential().await,
            Auth::Oidc(o) => Ok(Credential {
                bearer: Some(Box::pin(o.id_token(log)).await?),
                ..Credential::default()
            }),
        }
    }

    /// After a 401: an exec plugin runs again for the next request.
    pub fn forget(&self) {
        if let Auth::Exec(e) = self
            && let Ok(mut c) = e.cache.try_lock()
        {
            *c = None;
        }
    }
}

fn unable(m: impl std::fmt::Display) -> CliError {
    CliError::Transport(format!("Unable to connect to the server: {m}"))
}

// ---------------------------------------------------------------------------------------
// Exec plugins.

/// An exec credential plugin with its cached credential.
pub struct ExecPlugin {
    config: ExecConfig,
    /// `spec.cluster` when `provideClusterInfo`.
    cluster: Option<Value>,
    cache: tokio::sync::Mutex<Option<(Credential, Option<jiff::Timestamp>)>>,
}

const INSTALL_HINT_HELP: &str = "\n\nIt looks like you are trying to use a client-go credential plugin that is not installed.\n\nTo learn more about this feature, consult the documentation available at:\n      https://kubernetes.io/docs/reference/access-authn-authz/authentication/#client-go-credential-plugins";

impl ExecPlugin {
    pub fn new(config: ExecConfig, cluster: Option<Value>) -> Self {
        ExecPlugin {
            config,
            cluster,
            cache: tokio::sync::Mutex::new(None),
        }
    }

    /// The `KUBERNETES_EXEC_INFO` document.
    pub fn exec_info(&self, interactive: bool) -> Value {
        let mut spec = serde_json::json!({ "interactive": interactive });
        if let (Some(c), Value::Object(m)) = (&self.cluster, &mut spec) {
            m.insert("cluster".into(), c.clone());
        }
        serde_json::json!({
            "kind": "ExecCredential",
            "apiVersion": self.config.api_version,
            "spec": spec,
        })
    }

    fn interactive(&self) -> Result<bool> {
        use std::io::IsTerminal;
        let tty = std::io::stdin().is_terminal();
        match self.config.interactive_mode.as_str() {
            "Never" => Ok(false),
            "Always" => {
                if tty {
                    Ok(true)
                } else {
                    Err(unable(
                        "getting credentials: exec plugin cannot support interactive mode: standard input is not a terminal",
                    ))
                }
            }
            _ => Ok(tty),
        }
    }

    async fn credential(&self) -> Result<Credential> {
        let mut cache = self.cache.lock().await;
        if let Some((cred, expiry)) = cache.as_ref() {
            let fresh = expiry.is_none_or(|e| jiff::Timestamp::now() < e);
            if fresh {
                return Ok(cred.clone());
            }
        }
        let (cred, expiry) = self.run().await?;
        *cache = Some((cred.clone(), expiry));
        Ok(cred)
    }

    async fn run(&self) -> Result<(Credential, Option<jiff::Timestamp>)> {
        let c = &self.config;
        if !matches!(
            c.api_version.as_str(),
            "client.authentication.k8s.io/v1" | "client.authentication.k8s.io/v1beta1"
        ) {
            return Err(unable(format!(
                "exec plugin: invalid apiVersion {:?}",
                c.api_version
            )));
        }
        let interactive = self.interactive()?;
        let mut cmd = tokio::process::Command::new(&c.command);
        cmd.args(c.args.iter().flatten());
        for e in c.env.iter().flatten() {
            cmd.env(&e.name, &e.value);
        }
        cmd.env(
            "KUBERNETES_EXEC_INFO",
            self.exec_info(interactive).to_string(),
        );
        cmd.stdin(if interactive {
            std::process::Stdio::inherit()
        } else {
            std::process::Stdio::null()
        });
        cmd.stdout(std::process::Stdio::piped());
        cmd.stderr(std::process::Stdio::inherit());
        let out = match cmd.output().await {
            Ok(o) => o,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let mut m = format!(
                    "getting credentials: exec: executable {} not found{INSTALL_HINT_HELP}",
                    c.command
                );
                if !c.install_hint.is_empty() {
                    m.push_str(&format!("\n\n{}", c.install_hint));
                }
                return Err(unable(m));
            }
            Err(e) => return Err(unable(format!("getting credentials: exec: {e}"))),
        };
        if !out.status.success() {
            return Err(unable(format!(
                "getting credentials: exec: executable {} failed with exit code {}",
                c.command,
                out.status.code().unwrap_or(-1)
            )));
        }
        parse_exec_output(&c.api_version, &out.stdout)
            .map_err(|m| unable(format!("getting credentials: {m}")))
    }
}

/// Reads an `ExecCredential` a plugin printed.
pub fn parse_exec_output(
    api_version: &str,
    stdout: &[u8],
) -> std::result::Result<(Credential, Option<jiff::Timestamp>), String> {
    let v: Value = serde_json::from_slice(stdout).map_err(|e| format!("decoding stdout: {e}"))?;
    let got = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    if got != api_version {
        return Err(format!(
            "exec plugin is configured to use API version {api_version}, plugin returned version {got}"
        ));
    }
    let status = v
        .get("status")
        .filter(|s| s.is_object())
        .ok_or("exec plugin didn't return a status field")?;
    let s = |k: &str| {
        status
            .get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let token = s("token");
    let cert = s("clientCertificateData");
    let key = s("clientKeyData");
    if token.is_none() && cert.is_none() && key.is_none() {
        return Err("exec plugin didn't return a token or cert/key pair".into());
    }
    if cert.is_some() != key.is_some() {
        return Err("exec plugin returned only certificate or key, not both".into());
    }
    let expiry = match s("expirationTimestamp") {
        Some(t) => Some(
            t.parse::<jiff::Timestamp>()
                .map_err(|e| format!("decoding stdout: expirationTimestamp: {e}"))?,
        ),
        None => None,
    };
    Ok((
        Credential {
            bearer: token,
            basic: None,
            cert: cert.zip(key).map(|(c, k)| (c.into_bytes(), k.into_bytes())),
        },
        expiry,
    ))
}

// ---------------------------------------------------------------------------------------
// OIDC.

/// The `oidc` auth provider.
pub struct Oidc {
    config: tokio::sync::Mutex<BTreeMap<String, String>>,
    user: String,
    rules: Rules,
}

/// Whether a JWT's `exp` is more than 10 s away (client-go's `idTokenExpired`, inverted).
pub fn id_token_valid(token: &str, now: jiff::Timestamp) -> std::result::Result<bool, String> {
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 {
        return Err("ID Token is not a valid JWT".into());
    }
    let payload = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(parts[1].trim_end_matches('='))
        .map_err(|e| format!("illegal base64 data in the ID Token: {e}"))?;
    let claims: Value = serde_json::from_slice(&payload).map_err(|e| e.to_string())?;
    let exp = claims.get("exp").and_then(Value::as_f64).unwrap_or(0.0);
    Ok(now.as_second() as f64 + 10.0 < exp)
}

impl Oidc {
    pub fn new(config: BTreeMap<String, String>, user: String, rules: Rules) -> Self {
        Oidc {
            config: tokio::sync::Mutex::new(config),
            user,
            rules,
        }
    }

    async fn id_token(&self, log: &Logger) -> Result<String> {
        let mut cfg = self.config.lock().await;
        let get = |k: &str| cfg.get(k).cloned().unwrap_or_default();
        if get("idp-issuer-url").is_empty() {
            return Err(CliError::msg("Must provide idp-issuer-url"));
        }
        if get("client-id").is_empty() {
            return Err(CliError::msg("Must provide client-id"));
        }
        let id_token = get("id-token");
        if !id_token.is_empty()
            && id_token_valid(&id_token, jiff::Timestamp::now()).map_err(unable)?
        {
            return Ok(id_token);
        }
        let refresh = get("refresh-token");
        if refresh.is_empty() {
            return Err(unable(
                "No valid id-token, and cannot refresh without refresh-token",
            ));
        }
        let ca = match (
            get("idp-certificate-authority-data"),
            get("idp-certificate-authority"),
        ) {
            (d, _) if !d.is_empty() => Some(
                base64::engine::general_purpose::STANDARD
                    .decode(d.trim())
                    .map_err(|e| CliError::msg(format!("illegal base64 data: {e}")))?,
            ),
            (_, f) if !f.is_empty() => Some(std::fs::read(&f)?),
            _ => None,
        };
        let issuer = get("idp-issuer-url");
        let well_known = format!(
            "{}/.well-known/openid-configuration",
            issuer.trim_end_matches('/')
        );
        let (code, body) =
            crate::transport::one_shot("GET", &well_known, ca.as_deref(), &[], None, log).await?;
        if code != 200 {
            return Err(unable(format!(
                "failed to refresh token: oidc: discovery through endpoint {well_known} failed: {code}"
            )));
        }
        let doc: Value = serde_json::from_slice(&body)
            .map_err(|e| unable(format!("failed to refresh token: {e}")))?;
        let token_url = doc
            .get("token_endpoint")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                unable("failed to refresh token: no token_endpoint in the discovery document")
            })?
            .to_string();
        let form = format!(
            "grant_type=refresh_token&refresh_token={}",
            form_escape(&refresh)
        );
        let basic = base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            form_escape(&get("client-id")),
            form_escape(&get("client-secret"))
        ));
        let headers = [
            (
                "Content-Type".to_string(),
                "application/x-www-form-urlencoded".to_string(),
            ),
            ("Authorization".to_string(), format!("Basic {basic}")),
        ];
        let (code, body) = crate::transport::one_shot(
            "POST",
            &token_url,
            ca.as_deref(),
            &headers,
            Some(form.into_bytes()),
            log,
        )
        .await?;
        if !(200..300).contains(&code) {
            return Err(unable(format!(
                "failed to refresh token: oauth2: cannot fetch token: {code}\nResponse: {}",
                String::from_utf8_lossy(&body)
            )));
        }
        let tok: Value = serde_json::from_slice(&body)
            .map_err(|e| unable(format!("failed to refresh token: {e}")))?;
        let Some(new_id) = tok.get("id_token").and_then(Value::as_str) else {
            return Err(unable(
                "token response did not contain an id_token, either the scope \"openid\" wasn't requested upon login, or the provider doesn't support id_tokens as part of the refresh response",
            ));
        };
        let mut new_cfg = cfg.clone();
        if let Some(rt) = tok.get("refresh_token").and_then(Value::as_str)
            && !rt.is_empty()
        {
            new_cfg.insert("refresh-token".into(), rt.to_string());
        }
        new_cfg.insert("id-token".into(), new_id.to_string());
        self.persist(&new_cfg, log)
            .map_err(|e| CliError::msg(format!("could not persist new tokens: {e}")))?;
        *cfg = new_cfg;
        Ok(new_id.to_string())
    }

    /// client-go's `persister`: the user's auth-provider config in its file.
    fn persist(&self, new_cfg: &BTreeMap<String, String>, log: &Logger) -> Result<()> {
        let quiet = Logger::new(0, Arc::new(|_: &str| {}));
        let _ = log;
        let start = crate::kubeconfig::load_rules(&self.rules, &quiet)?;
        let mut new = start.clone();
        if let Some(u) = new.users.get_mut(&self.user)
            && let Some(ap) = &mut u.auth_provider
        {
            ap.config = new_cfg.clone();
            return crate::kubeconfig::modify(&self.rules, &start, &new, false);
        }
        Ok(())
    }
}

/// `url.QueryEscape`.
fn form_escape(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorization_headers() {
        let c = Credential {
            basic: Some(("a".into(), "b".into())),
            ..Credential::default()
        };
        assert_eq!(c.authorization().unwrap(), "Basic YTpi");
        let c = Credential {
            bearer: Some("t".into()),
            ..Credential::default()
        };
        assert_eq!(c.authorization().unwrap(), "Bearer t");
        assert_eq!(Credential::default().authorization(), None);
    }

    #[test]
    fn exec_output() {
        let v1 = "client.authentication.k8s.io/v1";
        let (c, e) = parse_exec_output(
            v1,
            br#"{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"tok","expirationTimestamp":"2030-01-01T00:00:00Z"}}"#,
        )
        .unwrap();
        assert_eq!(c.bearer.as_deref(), Some("tok"));
        assert!(e.is_some());
        let err = parse_exec_output(
            v1,
            br#"{"apiVersion":"client.authentication.k8s.io/v1beta1","status":{"token":"x"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "exec plugin is configured to use API version client.authentication.k8s.io/v1, plugin returned version client.authentication.k8s.io/v1beta1"
        );
        let err = parse_exec_output(v1, br#"{"apiVersion":"client.authentication.k8s.io/v1"}"#)
            .unwrap_err();
        assert_eq!(err, "exec plugin didn't return a status field");
        let err = parse_exec_output(
            v1,
            br#"{"apiVersion":"client.authentication.k8s.io/v1","status":{"clientCertificateData":"c"}}"#,
        )
        .unwrap_err();
        assert_eq!(
            err,
            "exec plugin returned only certificate or key, not both"
        );
    }

    #[test]
    fn exec_info_document() {
        let p = ExecPlugin::new(
            ExecConfig {
                api_version: "client.authentication.k8s.io/v1".into(),
                ..ExecConfig::default()
            },
            Some(serde_json::json!({"server": "https://s"})),
        );
        assert_eq!(
            p.exec_info(false),
            serde_json::json!({"kind": "ExecCredential", "apiVersion": "client.authentication.k8s.io/v1", "spec": {"interactive": false, "cluster": {"server": "https://s"}}})
        );
    }

    #[test]
    fn jwt_expiry() {
        let enc =
            |v: &Value| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string());
        let now = jiff::Timestamp::from_second(1_000_000).unwrap();
        let tok = |exp: i64| format!("h.{}.s", enc(&serde_json::json!({"exp": exp})));
        assert!(id_token_valid(&tok(1_000_100), now).unwrap());
        assert!(!id_token_valid(&tok(1_000_005), now).unwrap());
        assert!(id_token_valid("nope", now).is_err());
    }

    #[test]
    fn query_escape() {
        assert_eq!(form_escape("a b/c=d"), "a+b%2Fc%3Dd");
    }
}
