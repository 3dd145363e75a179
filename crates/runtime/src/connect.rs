//! How a component makes its clients of the API server: over HTTPS from a kubeconfig file
//! (a component in a process of its own), or through a [`Connector`] to an API server
//! running in the same process (`rkube server`'s controller manager and scheduler), which
//! hands each request to the server's handler without TLS, HTTP framing or a socket.
//!
//! Either way the client presents the same identity: the kubeconfig's client certificate
//! (or token), or a service account's bearer token; the server authenticates, authorizes
//! and admits in-process requests exactly as it does network ones.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::Error;

/// What an in-process client presents to the API server, as it would over TLS.
#[derive(Clone, PartialEq, Eq)]
pub enum Identity {
    /// A client certificate chain (PEM, leaf first), as the TLS handshake would present it.
    Certificate(Vec<u8>),
    /// A bearer token (the `Authorization` header).
    Token(String),
}

impl std::fmt::Debug for Identity {
    /// Never prints the token.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Identity::Certificate(pem) => write!(f, "Certificate({} bytes)", pem.len()),
            Identity::Token(_) => f.write_str("Token(<redacted>)"),
        }
    }
}

/// Makes clients that reach an API server running in this process.
pub trait Connector: Send + Sync {
    /// A client whose every request carries `identity`, and `user_agent` when given (a
    /// request that sets its own keeps it).
    fn connect(&self, identity: &Identity, user_agent: Option<&str>)
    -> Result<kube::Client, Error>;
}

/// How a component makes its clients: always from its kubeconfig's identity, over HTTPS
/// or, when the API server runs in the same process, through its [`Connector`].
#[derive(Clone)]
pub struct ClientSource {
    kubeconfig: PathBuf,
    in_process: Option<Arc<dyn Connector>>,
    /// The `User-Agent` every client sends ([`crate::user_agent`]).
    user_agent: Option<String>,
}

impl std::fmt::Debug for ClientSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientSource")
            .field("kubeconfig", &self.kubeconfig)
            .field("in_process", &self.in_process.is_some())
            .field("user_agent", &self.user_agent)
            .finish()
    }
}

impl ClientSource {
    /// Clients over HTTPS, as the kubeconfig file describes them.
    pub fn kubeconfig(kubeconfig: impl Into<PathBuf>) -> ClientSource {
        ClientSource {
            kubeconfig: kubeconfig.into(),
            in_process: None,
            user_agent: None,
        }
    }

    /// Clients through `connector`, with the kubeconfig file's credentials.
    pub fn in_process(
        kubeconfig: impl Into<PathBuf>,
        connector: Arc<dyn Connector>,
    ) -> ClientSource {
        ClientSource {
            kubeconfig: kubeconfig.into(),
            in_process: Some(connector),
            user_agent: None,
        }
    }

    /// The same clients, for the component named `component` (e.g. `kube-scheduler`):
    /// their requests carry its [`crate::user_agent`], so the API server names it as the
    /// field manager of what they write, as upstream's components are named.
    pub fn for_component(mut self, component: &str) -> ClientSource {
        self.user_agent = Some(crate::user_agent(component));
        self
    }

    /// The same clients (transport, `User-Agent`) with another kubeconfig's identity.
    pub fn with_kubeconfig(&self, kubeconfig: impl Into<PathBuf>) -> ClientSource {
        ClientSource {
            kubeconfig: kubeconfig.into(),
            ..self.clone()
        }
    }

    /// The kubeconfig file (its identity; for HTTPS also the server and its CA).
    pub fn kubeconfig_path(&self) -> &Path {
        &self.kubeconfig
    }

    /// A client with the kubeconfig's identity.
    pub async fn client(&self) -> Result<kube::Client, Error> {
        match &self.in_process {
            None => crate::client_with(&self.kubeconfig, self.user_agent.as_deref(), |_| {}).await,
            Some(connector) => connector.connect(
                &kubeconfig_identity(&self.kubeconfig)?,
                self.user_agent.as_deref(),
            ),
        }
    }

    /// A client presenting `token` (e.g. a service account's) instead of the kubeconfig's
    /// credentials, to the same server.
    pub async fn client_with_token(&self, token: &str) -> Result<kube::Client, Error> {
        if let Some(connector) = &self.in_process {
            return connector.connect(
                &Identity::Token(token.to_string()),
                self.user_agent.as_deref(),
            );
        }
        crate::client_with(&self.kubeconfig, self.user_agent.as_deref(), |config| {
            config.auth_info = kube::config::AuthInfo {
                token: Some(token.to_string().into()),
                ..Default::default()
            };
        })
        .await
    }
}

/// The identity the kubeconfig's current context presents: its client certificate, else
/// its token.
pub fn kubeconfig_identity(kubeconfig: &Path) -> Result<Identity, Error> {
    use base64::Engine as _;
    let fail = |message: String| Error::Kubeconfig {
        path: kubeconfig.display().to_string(),
        message,
    };
    let config =
        kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| fail(e.to_string()))?;
    let user = config
        .current_context
        .as_deref()
        .and_then(|name| config.contexts.iter().find(|c| c.name == name))
        .and_then(|c| c.context.as_ref())
        .and_then(|c| c.user.as_deref());
    let named = match user {
        Some(u) => config.auth_infos.iter().find(|a| a.name == u),
        None if config.auth_infos.len() == 1 => config.auth_infos.first(),
        None => None,
    };
    let auth = named
        .and_then(|a| a.auth_info.as_ref())
        .ok_or_else(|| fail("no user for the current context".into()))?;
    if let Some(data) = &auth.client_certificate_data {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(data.trim())
            .map_err(|e| fail(format!("client-certificate-data: {e}")))?;
        return Ok(Identity::Certificate(pem));
    }
    if let Some(file) = &auth.client_certificate {
        let pem =
            std::fs::read(file).map_err(|e| fail(format!("client-certificate {file}: {e}")))?;
        return Ok(Identity::Certificate(pem));
    }
    if auth.token.is_some() {
        // The secret string serializes as itself (kube-rs does not re-export `secrecy`).
        let value = serde_json::to_value(auth).map_err(|e| fail(format!("token: {e}")))?;
        if let Some(token) = value["token"].as_str() {
            return Ok(Identity::Token(token.to_string()));
        }
    }
    if let Some(file) = &auth.token_file {
        let token =
            std::fs::read_to_string(file).map_err(|e| fail(format!("token-file {file}: {e}")))?;
        return Ok(Identity::Token(token.trim().to_string()));
    }
    Err(fail(
        "no client certificate or token to present in-process".into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn write(dir: &Path, user: &str) -> PathBuf {
        let path = dir.join("kubeconfig");
        let text = format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\nclusters:\n- name: k\n  cluster:\n    server: https://127.0.0.1:6443\ncontexts:\n- name: c\n  context:\n    cluster: k\n    user: u\nusers:\n- name: other\n  user:\n    token: nope\n- name: u\n  user:\n{user}"
        );
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn identity_of_the_current_context() {
        let dir = std::env::temp_dir().join(format!("rkube-connect-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // "-----BEGIN CERTIFICATE-----" base64-encoded.
        let path = write(
            &dir,
            "    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg==\n    client-key-data: eA==\n",
        );
        assert_eq!(
            kubeconfig_identity(&path).unwrap(),
            Identity::Certificate(b"-----BEGIN CERTIFICATE-----\n".to_vec())
        );
        let path = write(&dir, "    token: abc\n");
        assert_eq!(
            kubeconfig_identity(&path).unwrap(),
            Identity::Token("abc".into())
        );
        let path = write(&dir, "    username: x\n");
        assert!(kubeconfig_identity(&path).is_err());
        assert_eq!(
            format!("{:?}", Identity::Token("secret".into())),
            "Token(<redacted>)"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
