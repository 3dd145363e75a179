//! The server's certificates: a serving CA and a client CA (kept across restarts), the
//! serving certificate (re-issued at every start, so its addresses stay current) and the
//! admin client certificate, plus `admin.kubeconfig`.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use base64::Engine;
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose, SanType,
};

use crate::Error;

/// Paths of everything the server reads at start.
#[derive(Clone, Debug)]
pub struct Pki {
    pub dir: PathBuf,
    pub server_ca_cert: PathBuf,
    pub client_ca_cert: PathBuf,
    pub client_ca_key: PathBuf,
    pub serving_cert: PathBuf,
    pub serving_key: PathBuf,
    pub admin_cert: PathBuf,
    pub admin_key: PathBuf,
}

const CA_DAYS: i64 = 3650;
const LEAF_DAYS: i64 = 365;

fn io_err(path: &Path, e: std::io::Error) -> Error {
    Error::Pki(format!("{}: {e}", path.display()))
}

fn pki_err(e: rcgen::Error) -> Error {
    Error::Pki(e.to_string())
}

fn validity(params: &mut CertificateParams, days: i64) {
    let now = std::time::SystemTime::now();
    params.not_before = (now - std::time::Duration::from_secs(3600)).into();
    params.not_after =
        (now + std::time::Duration::from_secs(u64::try_from(days * 86400).unwrap_or(0))).into();
}

/// Writes a file readable by its owner only.
pub(crate) fn write_private_file(path: &Path, contents: &str) -> Result<(), Error> {
    write_private(path, contents)
}

fn write_private(path: &Path, contents: &str) -> Result<(), Error> {
    std::fs::write(path, contents).map_err(|e| io_err(path, e))?;
    set_mode(path, 0o600)
}

fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .map_err(|e| io_err(path, e))
}

/// A CA loaded from (or created at) `<dir>/<name>.crt|.key`.
fn load_or_create_ca(
    dir: &Path,
    name: &str,
) -> Result<(Issuer<'static, KeyPair>, PathBuf, PathBuf), Error> {
    let cert_path = dir.join(format!("{name}.crt"));
    let key_path = dir.join(format!("{name}.key"));
    if cert_path.exists() && key_path.exists() {
        let key_pem = std::fs::read_to_string(&key_path).map_err(|e| io_err(&key_path, e))?;
        let cert_pem = std::fs::read_to_string(&cert_path).map_err(|e| io_err(&cert_path, e))?;
        let key = KeyPair::from_pem(&key_pem).map_err(pki_err)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(pki_err)?;
        return Ok((issuer, cert_path, key_path));
    }
    let key = KeyPair::generate().map_err(pki_err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(pki_err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, format!("rkube-{name}@{}", unix_now()));
    params.distinguished_name = dn;
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    validity(&mut params, CA_DAYS);
    let cert = params.self_signed(&key).map_err(pki_err)?;
    std::fs::write(&cert_path, cert.pem()).map_err(|e| io_err(&cert_path, e))?;
    write_private(&key_path, &key.serialize_pem())?;
    Ok((Issuer::new(params, key), cert_path, key_path))
}

fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Issues a leaf certificate.
fn issue(
    issuer: &Issuer<'_, KeyPair>,
    cn: &str,
    orgs: &[&str],
    sans: &[SanType],
    server: bool,
) -> Result<(String, String), Error> {
    let key = KeyPair::generate().map_err(pki_err)?;
    let mut params = CertificateParams::new(Vec::<String>::new()).map_err(pki_err)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, cn);
    for o in orgs {
        dn.push(DnType::OrganizationName, *o);
    }
    params.distinguished_name = dn;
    params.subject_alt_names = sans.to_vec();
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![if server {
        ExtendedKeyUsagePurpose::ServerAuth
    } else {
        ExtendedKeyUsagePurpose::ClientAuth
    }];
    params.use_authority_key_identifier_extension = true;
    validity(&mut params, LEAF_DAYS);
    let cert = params.signed_by(&key, issuer).map_err(pki_err)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// The names and addresses the serving certificate covers: the `kubernetes` Service's
/// names, the host's name and addresses, `extra` (`--tls-san`), and `addresses` (the
/// Service's cluster IP and the advertised address, as upstream's self-signed
/// certificate names them).
pub fn serving_sans(extra: &[String], addresses: impl IntoIterator<Item = IpAddr>) -> Vec<SanType> {
    let mut sans = Vec::new();
    for dns in [
        "localhost",
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
    ] {
        if let Ok(name) = dns.try_into() {
            sans.push(SanType::DnsName(name));
        }
    }
    let mut ips: Vec<IpAddr> = vec![IpAddr::from([127, 0, 0, 1])];
    if let Ok(ifaces) = if_addrs::get_if_addrs() {
        ips.extend(ifaces.into_iter().map(|i| i.ip()));
    }
    ips.extend(addresses);
    if let Ok(host) = std::fs::read_to_string("/etc/hostname")
        && let Ok(name) = host.trim().to_string().try_into()
    {
        sans.push(SanType::DnsName(name));
    }
    for e in extra {
        match e.parse::<IpAddr>() {
            Ok(ip) => ips.push(ip),
            Err(_) => {
                if let Ok(name) = e.clone().try_into() {
                    sans.push(SanType::DnsName(name));
                }
            }
        }
    }
    ips.sort();
    ips.dedup();
    sans.extend(ips.into_iter().map(SanType::IpAddress));
    sans
}

impl Pki {
    /// Loads the CAs (creating them on first start), issues a fresh serving certificate,
    /// and creates the admin certificate when missing.
    pub fn ensure(data_dir: &Path, sans: &[SanType]) -> Result<Pki, Error> {
        let dir = data_dir.join("tls");
        std::fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
        set_mode(&dir, 0o700)?;
        let (server_ca, server_ca_cert, _) = load_or_create_ca(&dir, "server-ca")?;
        let (client_ca, client_ca_cert, client_ca_key) = load_or_create_ca(&dir, "client-ca")?;

        let serving_cert = dir.join("serving-kube-apiserver.crt");
        let serving_key = dir.join("serving-kube-apiserver.key");
        let (cert, key) = issue(&server_ca, "kube-apiserver", &[], sans, true)?;
        std::fs::write(&serving_cert, cert).map_err(|e| io_err(&serving_cert, e))?;
        write_private(&serving_key, &key)?;

        let admin_cert = dir.join("client-admin.crt");
        let admin_key = dir.join("client-admin.key");
        if !(admin_cert.exists() && admin_key.exists()) {
            let (cert, key) = issue(&client_ca, "admin", &["system:masters"], &[], false)?;
            std::fs::write(&admin_cert, cert).map_err(|e| io_err(&admin_cert, e))?;
            write_private(&admin_key, &key)?;
        }
        Ok(Pki {
            dir,
            server_ca_cert,
            client_ca_cert,
            client_ca_key,
            serving_cert,
            serving_key,
            admin_cert,
            admin_key,
        })
    }

    /// Issues a client certificate signed by the client CA (for component identities).
    pub fn issue_client(&self, cn: &str, orgs: &[&str]) -> Result<(String, String), Error> {
        let key_pem = std::fs::read_to_string(&self.client_ca_key)
            .map_err(|e| io_err(&self.client_ca_key, e))?;
        let cert_pem = std::fs::read_to_string(&self.client_ca_cert)
            .map_err(|e| io_err(&self.client_ca_cert, e))?;
        let key = KeyPair::from_pem(&key_pem).map_err(pki_err)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(pki_err)?;
        issue(&issuer, cn, orgs, &[], false)
    }

    /// Signs a certificate request with the client CA for `secs` seconds: a client
    /// certificate for the request's subject (its SANs dropped), PEM.
    pub fn sign_client_request(
        &self,
        req: &mut rcgen::CertificateSigningRequestParams,
        secs: u64,
    ) -> Result<String, Error> {
        let key_pem = std::fs::read_to_string(&self.client_ca_key)
            .map_err(|e| io_err(&self.client_ca_key, e))?;
        let cert_pem = std::fs::read_to_string(&self.client_ca_cert)
            .map_err(|e| io_err(&self.client_ca_cert, e))?;
        let key = KeyPair::from_pem(&key_pem).map_err(pki_err)?;
        let issuer = Issuer::from_ca_cert_pem(&cert_pem, key).map_err(pki_err)?;
        let params = &mut req.params;
        params.subject_alt_names.clear();
        params.is_ca = rcgen::IsCa::NoCa;
        params.key_usages = vec![
            KeyUsagePurpose::DigitalSignature,
            KeyUsagePurpose::KeyEncipherment,
        ];
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        params.use_authority_key_identifier_extension = true;
        let now = std::time::SystemTime::now();
        params.not_before = (now - std::time::Duration::from_secs(300)).into();
        params.not_after = (now + std::time::Duration::from_secs(secs)).into();
        let cert = req.signed_by(&issuer).map_err(pki_err)?;
        Ok(cert.pem())
    }

    /// Writes a kubeconfig with the server CA and a client certificate embedded.
    pub fn write_kubeconfig(
        &self,
        path: &Path,
        server_url: &str,
        user: &str,
        cert_pem: &str,
        key_pem: &str,
    ) -> Result<(), Error> {
        let ca =
            std::fs::read(&self.server_ca_cert).map_err(|e| io_err(&self.server_ca_cert, e))?;
        let b64 = base64::engine::general_purpose::STANDARD;
        let config = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{
                "name": "default",
                "cluster": {
                    "server": server_url,
                    "certificate-authority-data": b64.encode(ca),
                },
            }],
            "users": [{
                "name": user,
                "user": {
                    "client-certificate-data": b64.encode(cert_pem),
                    "client-key-data": b64.encode(key_pem),
                },
            }],
            "contexts": [{
                "name": "default",
                "context": {"cluster": "default", "user": user},
            }],
            "current-context": "default",
            "preferences": {},
        });
        let yaml = serde_yaml_ng::to_string(&config).map_err(|e| Error::Pki(e.to_string()))?;
        let tmp = path.with_extension("tmp");
        write_private(&tmp, &yaml)?;
        std::fs::rename(&tmp, path).map_err(|e| io_err(path, e))
    }

    /// Writes the admin kubeconfig (`DIR/admin.kubeconfig`).
    pub fn write_admin_kubeconfig(&self, path: &Path, server_url: &str) -> Result<(), Error> {
        let cert =
            std::fs::read_to_string(&self.admin_cert).map_err(|e| io_err(&self.admin_cert, e))?;
        let key =
            std::fs::read_to_string(&self.admin_key).map_err(|e| io_err(&self.admin_key, e))?;
        self.write_kubeconfig(path, server_url, "admin", &cert, &key)
    }
}
