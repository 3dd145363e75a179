//! A throwaway certificate authority for tests that need TLS.

use std::path::{Path, PathBuf};

use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};

/// A CA whose certificate and key are written to a directory.
pub struct TestCa {
    issuer: Issuer<'static, KeyPair>,
    dir: PathBuf,
    /// PEM file of the CA certificate.
    pub ca_file: PathBuf,
}

/// A certificate and key issued by a [`TestCa`], as PEM files.
#[derive(Clone, Debug)]
pub struct Issued {
    pub cert_file: PathBuf,
    pub key_file: PathBuf,
}

impl TestCa {
    /// A new CA named `name`, written under `dir`.
    pub fn new(dir: &Path, name: &str) -> TestCa {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("CA key: {e}"));
        let mut params =
            CertificateParams::new(Vec::<String>::new()).unwrap_or_else(|e| panic!("{e}"));
        params.distinguished_name.push(DnType::CommonName, name);
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
        let cert = params
            .self_signed(&key)
            .unwrap_or_else(|e| panic!("CA cert: {e}"));
        let ca_file = dir.join(format!("{name}-ca.crt"));
        std::fs::write(&ca_file, cert.pem()).unwrap_or_else(|e| panic!("{e}"));
        TestCa {
            issuer: Issuer::new(params, key),
            dir: dir.to_path_buf(),
            ca_file,
        }
    }

    /// Issues a certificate for `common_name` with the given SANs (DNS names or IPs), usable
    /// for TLS servers and clients.
    pub fn issue(&self, file_stem: &str, common_name: &str, sans: &[&str]) -> Issued {
        let key = KeyPair::generate().unwrap_or_else(|e| panic!("key: {e}"));
        let sans: Vec<String> = sans.iter().map(|s| s.to_string()).collect();
        let mut params = CertificateParams::new(sans).unwrap_or_else(|e| panic!("{e}"));
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let cert = params
            .signed_by(&key, &self.issuer)
            .unwrap_or_else(|e| panic!("cert: {e}"));
        let cert_file = self.dir.join(format!("{file_stem}.crt"));
        let key_file = self.dir.join(format!("{file_stem}.key"));
        std::fs::write(&cert_file, cert.pem()).unwrap_or_else(|e| panic!("{e}"));
        std::fs::write(&key_file, key.serialize_pem()).unwrap_or_else(|e| panic!("{e}"));
        Issued {
            cert_file,
            key_file,
        }
    }
}
