//! Authentication. The TLS layer accepts any client certificate (proving possession of its
//! key) and the x509 authenticator verifies the chain against `--client-ca-file`, so a
//! certificate from another CA is a 401 like any other bad credential, as upstream does.

use std::sync::Arc;

use rustls::DigitallySignedStruct;
use rustls::client::danger::HandshakeSignatureValid;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::WebPkiClientVerifier;
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DistinguishedName, RootCertStore, SignatureScheme};

/// The authenticated user of a request.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct UserInfo {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
}

impl UserInfo {
    pub fn anonymous() -> UserInfo {
        UserInfo {
            name: "system:anonymous".into(),
            uid: String::new(),
            groups: vec!["system:unauthenticated".into()],
        }
    }

    pub fn is_anonymous(&self) -> bool {
        self.name == "system:anonymous"
    }
}

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
        let mut groups: Vec<String> = subject
            .iter_organization()
            .filter_map(|o| o.as_str().ok().map(str::to_string))
            .collect();
        groups.push("system:authenticated".into());
        let not_after = cert.validity().not_after.timestamp();
        Ok((
            UserInfo {
                name,
                uid: String::new(),
                groups,
            },
            not_after,
        ))
    }
}
