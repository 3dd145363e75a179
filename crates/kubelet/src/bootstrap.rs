//! Joining a cluster with a bootstrap token, as upstream's kubeadm discovery plus kubelet
//! TLS bootstrapping:
//!
//! 1. fetch `kube-public/cluster-info` (authenticated with the token over a TLS
//!    connection that does not trust the server yet) and accept its server CA only if the
//!    `jws-kubeconfig-<token id>` signature verifies with the token ([`api::jws`]);
//! 2. over TLS verified with that CA, create a CertificateSigningRequest for
//!    `system:node:<name>` in `system:nodes` (signer
//!    `kubernetes.io/kube-apiserver-client-kubelet`), which the server approves for the
//!    token's group, and wait for the certificate;
//! 3. write `DIR/kubelet.kubeconfig` with it, and read the client CA the kubelet API
//!    verifies the API server with (`kube-system/extension-apiserver-authentication`).
//!
//! A valid kubeconfig from an earlier join (certificate not expiring within a day) is
//! reused.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use http::Request;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};

use crate::Error;

const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

/// The agent's credentials after joining.
#[derive(Debug, Clone)]
pub struct Credentials {
    /// `DIR/kubelet.kubeconfig`: the node's client certificate and the server CA.
    pub kubeconfig: PathBuf,
    /// `DIR/client-ca.crt`: the cluster's client CA.
    pub client_ca: PathBuf,
}

fn err(m: impl Into<String>) -> Error {
    Error::Other(m.into())
}

/// One HTTPS request to the server: `(status, body)`.
async fn request(
    server: &url_parts::Server,
    tls: &Arc<rustls::ClientConfig>,
    method: http::Method,
    path: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> Result<(u16, Value), Error> {
    let io = httpproxy::dial(
        &server.host,
        server.port,
        Some(tls),
        Duration::from_secs(15),
    )
    .await
    .map_err(|e| err(e.to_string()))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| err(e.to_string()))?;
    tokio::spawn(conn);
    let mut b = Request::builder()
        .method(method)
        .uri(path)
        .header(http::header::HOST, server.authority())
        .header(http::header::ACCEPT, "application/json")
        .header(http::header::USER_AGENT, "rkube-agent");
    if let Some(t) = token {
        b = b.header(http::header::AUTHORIZATION, format!("Bearer {t}"));
    }
    let bytes = match body {
        Some(v) => {
            b = b.header(http::header::CONTENT_TYPE, "application/json");
            v.to_string().into_bytes()
        }
        None => Vec::new(),
    };
    let req = b
        .body(Full::new(bytes::Bytes::from(bytes)))
        .map_err(|e| err(e.to_string()))?;
    let resp = tokio::time::timeout(Duration::from_secs(30), sender.send_request(req))
        .await
        .map_err(|_| err(format!("{path}: timed out")))?
        .map_err(|e| err(e.to_string()))?;
    let status = resp.status().as_u16();
    let body = resp
        .into_body()
        .collect()
        .await
        .map_err(|e| err(e.to_string()))?
        .to_bytes();
    let v = serde_json::from_slice(&body).unwrap_or(Value::Null);
    Ok((status, v))
}

mod url_parts {
    /// The server's host and port from `https://host[:port]`.
    pub struct Server {
        pub host: String,
        pub port: u16,
    }

    impl Server {
        pub fn parse(url: &str) -> Option<Server> {
            let uri: http::Uri = url.parse().ok()?;
            if uri.scheme_str() != Some("https") {
                return None;
            }
            Some(Server {
                host: uri.host()?.trim_matches(['[', ']']).to_string(),
                port: uri.port_u16().unwrap_or(443),
            })
        }

        pub fn authority(&self) -> String {
            if self.host.contains(':') {
                format!("[{}]:{}", self.host, self.port)
            } else {
                format!("{}:{}", self.host, self.port)
            }
        }
    }
}

fn verified_tls(
    ca_pem: &[u8],
    client: Option<(&str, &str)>,
) -> Result<Arc<rustls::ClientConfig>, Error> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let mut roots = rustls::RootCertStore::empty();
    for c in CertificateDer::pem_slice_iter(ca_pem) {
        let c = c.map_err(|e| err(format!("server CA: {e}")))?;
        roots.add(c).map_err(|e| err(format!("server CA: {e}")))?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| err(e.to_string()))?
        .with_root_certificates(roots);
    let mut cfg = match client {
        Some((cert, key)) => {
            let certs = CertificateDer::pem_slice_iter(cert.as_bytes())
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| err(e.to_string()))?;
            let key =
                PrivateKeyDer::from_pem_slice(key.as_bytes()).map_err(|e| err(e.to_string()))?;
            builder
                .with_client_auth_cert(certs, key)
                .map_err(|e| err(e.to_string()))?
        }
        None => builder.with_no_client_auth(),
    };
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// The server CA from cluster-info, verified with the token's signature.
pub fn ca_from_cluster_info(
    cm: &Value,
    token_id: &str,
    token_secret: &str,
) -> Result<Vec<u8>, Error> {
    let kubeconfig = cm["data"]["kubeconfig"]
        .as_str()
        .ok_or_else(|| err("cluster-info has no kubeconfig"))?;
    let sig = cm["data"][api::jws::signature_key(token_id)]
        .as_str()
        .ok_or_else(|| {
            err(format!(
                "cluster-info is not signed for token id {token_id:?}"
            ))
        })?;
    if !api::jws::verify_detached(sig, kubeconfig, token_id, token_secret) {
        return Err(err(
            "cluster-info's signature does not match the join token",
        ));
    }
    let parsed: Value =
        serde_yaml_ng::from_str(kubeconfig).map_err(|e| err(format!("cluster-info: {e}")))?;
    let data = parsed["clusters"][0]["cluster"]["certificate-authority-data"]
        .as_str()
        .ok_or_else(|| err("cluster-info has no certificate authority"))?;
    B64.decode(data.trim())
        .map_err(|e| err(format!("cluster-info certificate authority: {e}")))
}

/// Whether the PEM certificate is valid for at least another day.
fn cert_fresh(pem: &str) -> bool {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject;
    let Some(Ok(der)) = CertificateDer::pem_slice_iter(pem.as_bytes()).next() else {
        return false;
    };
    let Ok((_, cert)) = x509_parser::parse_x509_certificate(der.as_ref()) else {
        return false;
    };
    let now = jiff::Timestamp::now().as_second();
    cert.validity().not_after.timestamp() > now + 24 * 3600
}

/// Writes a kubeconfig for `server` with the CA and the client certificate.
fn write_kubeconfig(
    path: &Path,
    server: &str,
    ca: &[u8],
    cert: &str,
    key: &str,
    user: &str,
) -> Result<(), Error> {
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "default", "cluster": {
            "server": server, "certificate-authority-data": B64.encode(ca)}}],
        "users": [{"name": user, "user": {
            "client-certificate-data": B64.encode(cert),
            "client-key-data": B64.encode(key)}}],
        "contexts": [{"name": "default", "context": {"cluster": "default", "user": user}}],
        "current-context": "default",
        "preferences": {},
    });
    let text = serde_yaml_ng::to_string(&config).map_err(|e| err(e.to_string()))?;
    write_private(path, &text)
}

/// Writes `text` to `path` with mode 0600, atomically (temp file, then rename).
pub(crate) fn write_private(path: &Path, text: &str) -> Result<(), Error> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    let io = |source| Error::Io {
        path: path.to_path_buf(),
        source,
    };
    let tmp = path.with_extension("tmp");
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&tmp)
        .map_err(io)?;
    f.write_all(text.as_bytes()).map_err(io)?;
    std::fs::rename(&tmp, path).map_err(io)
}

/// Joins `server` with `token` as node `name`, keeping credentials in `dir`.
pub async fn join(server: &str, token: &str, name: &str, dir: &Path) -> Result<Credentials, Error> {
    let target = url_parts::Server::parse(server)
        .ok_or_else(|| err(format!("--server {server:?}: want https://host[:port]")))?;
    let (token_id, token_secret) = token
        .split_once('.')
        .filter(|(i, s)| i.len() == 6 && s.len() == 16)
        .ok_or_else(|| err("the join token must look like <6 chars>.<16 chars>"))?;
    std::fs::create_dir_all(dir).map_err(|source| Error::Io {
        path: dir.to_path_buf(),
        source,
    })?;
    let kubeconfig = dir.join("kubelet.kubeconfig");
    let client_ca_path = dir.join("client-ca.crt");
    let ca_path = dir.join("server-ca.crt");
    let cert_path = dir.join("kubelet-client.crt");
    let key_path = dir.join("kubelet-client.key");

    // 1. The server CA, trusted through the token's signature.
    let ca = match std::fs::read(&ca_path) {
        Ok(ca) => ca,
        Err(_) => {
            let insecure = httpproxy::insecure_tls(None).map_err(|e| err(e.to_string()))?;
            let (status, cm) = request(
                &target,
                &insecure,
                http::Method::GET,
                "/api/v1/namespaces/kube-public/configmaps/cluster-info",
                Some(token),
                None,
            )
            .await?;
            if status != 200 {
                return Err(err(format!(
                    "reading cluster-info: HTTP {status}: {}",
                    cm["message"].as_str().unwrap_or("is the join token valid?")
                )));
            }
            let ca = ca_from_cluster_info(&cm, token_id, token_secret)?;
            std::fs::write(&ca_path, &ca).map_err(|source| Error::Io {
                path: ca_path.clone(),
                source,
            })?;
            ca
        }
    };
    let tls = verified_tls(&ca, None)?;

    // 2. The node's client certificate.
    let user = format!("system:node:{name}");
    let existing = (
        std::fs::read_to_string(&cert_path),
        std::fs::read_to_string(&key_path),
    );
    let (cert, key) = match existing {
        (Ok(c), Ok(k)) if cert_fresh(&c) => (c, k),
        _ => {
            let key = rcgen::KeyPair::generate().map_err(|e| err(e.to_string()))?;
            let mut params = rcgen::CertificateParams::new(Vec::<String>::new())
                .map_err(|e| err(e.to_string()))?;
            params.distinguished_name = rcgen::DistinguishedName::new();
            params
                .distinguished_name
                .push(rcgen::DnType::OrganizationName, "system:nodes");
            params
                .distinguished_name
                .push(rcgen::DnType::CommonName, user.clone());
            let csr = params
                .serialize_request(&key)
                .map_err(|e| err(e.to_string()))?
                .pem()
                .map_err(|e| err(e.to_string()))?;
            let csr_name = format!("node-csr-{name}-{}", &uuid_like());
            let body = json!({
                "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
                "metadata": {"name": csr_name},
                "spec": {
                    "request": B64.encode(csr),
                    "signerName": "kubernetes.io/kube-apiserver-client-kubelet",
                    "usages": ["digital signature", "key encipherment", "client auth"],
                },
            });
            let (status, answer) = request(
                &target,
                &tls,
                http::Method::POST,
                "/apis/certificates.k8s.io/v1/certificatesigningrequests",
                Some(token),
                Some(body),
            )
            .await?;
            if status != 201 {
                return Err(err(format!(
                    "creating the certificate signing request: HTTP {status}: {}",
                    answer["message"].as_str().unwrap_or_default()
                )));
            }
            let path =
                format!("/apis/certificates.k8s.io/v1/certificatesigningrequests/{csr_name}");
            let mut cert = None;
            for _ in 0..600 {
                let (status, csr) =
                    request(&target, &tls, http::Method::GET, &path, Some(token), None).await?;
                if status == 200
                    && let Some(c) = csr["status"]["certificate"].as_str()
                    && !c.is_empty()
                {
                    cert = Some(B64.decode(c).map_err(|e| err(e.to_string()))?);
                    break;
                }
                if let Some(conds) = csr["status"]["conditions"].as_array()
                    && conds
                        .iter()
                        .any(|c| c["type"] == "Denied" || c["type"] == "Failed")
                {
                    return Err(err(format!(
                        "certificate signing request {csr_name} was denied"
                    )));
                }
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            let cert = cert.ok_or_else(|| {
                err(format!(
                    "certificate signing request {csr_name} was not signed (approve it with `kubectl certificate approve {csr_name}`)"
                ))
            })?;
            let cert = String::from_utf8(cert).map_err(|e| err(e.to_string()))?;
            let key = key.serialize_pem();
            std::fs::write(&cert_path, &cert).map_err(|source| Error::Io {
                path: cert_path.clone(),
                source,
            })?;
            write_private(&key_path, &key)?;
            (cert, key)
        }
    };
    write_kubeconfig(&kubeconfig, server, &ca, &cert, &key, &user)?;

    // 3. The client CA the kubelet API verifies the API server with.
    let node_tls = verified_tls(&ca, Some((&cert, &key)))?;
    let (status, cm) = request(
        &target,
        &node_tls,
        http::Method::GET,
        "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication",
        None,
        None,
    )
    .await?;
    match cm["data"]["client-ca-file"].as_str() {
        Some(pem) if status == 200 => {
            std::fs::write(&client_ca_path, pem).map_err(|source| Error::Io {
                path: client_ca_path.clone(),
                source,
            })?;
        }
        _ => {
            return Err(err(format!(
                "reading the client CA: HTTP {status}: {}",
                cm["message"].as_str().unwrap_or_default()
            )));
        }
    }
    Ok(Credentials {
        kubeconfig,
        client_ca: client_ca_path,
    })
}

/// A short random suffix for the CSR's name.
fn uuid_like() -> String {
    let bytes: [u8; 4] = rand::random();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn cluster_info_verification() {
        let ca = "-----BEGIN CERTIFICATE-----\nMII\n-----END CERTIFICATE-----\n";
        let kubeconfig = format!(
            "apiVersion: v1\nclusters:\n- cluster:\n    certificate-authority-data: {}\n    server: https://x:6443\n  name: ''\n",
            B64.encode(ca)
        );
        let sig = api::jws::detached_signature(&kubeconfig, "abcdef", "0123456789abcdef");
        let cm = json!({"data": {"kubeconfig": kubeconfig, "jws-kubeconfig-abcdef": sig}});
        assert_eq!(
            ca_from_cluster_info(&cm, "abcdef", "0123456789abcdef").unwrap(),
            ca.as_bytes()
        );
        assert!(ca_from_cluster_info(&cm, "abcdef", "0123456789abcdeX").is_err());
        assert!(ca_from_cluster_info(&cm, "zzzzzz", "0123456789abcdef").is_err());
        assert!(url_parts::Server::parse("http://x").is_none());
        let s = url_parts::Server::parse("https://127.0.0.1:6443").unwrap();
        assert_eq!(s.authority(), "127.0.0.1:6443");
    }
}
