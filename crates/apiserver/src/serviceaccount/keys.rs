//! The keys of service-account tokens: PEM files read as upstream's `keyutil` reads them
//! (`ParsePublicKeysPEM` for `--service-account-key-file`, `ParsePrivateKeyPEM` for
//! `--service-account-signing-key-file`), the generated key of a server without one, and
//! upstream's key ID (`keyIDFromPublicKey`: the unpadded base64url SHA-256 of the PKIX
//! public key).
//!
//! RSA keys sign RS256 (and verify RS*/PS*), ECDSA P-256 keys ES256, P-384 keys ES384. The
//! small DER reader and writer here only walk the fixed structures of PKCS #1, PKCS #8,
//! SEC 1 and SubjectPublicKeyInfo; `ring` checks the keys themselves.

use base64::Engine;
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey};
use ring::signature::{self, KeyPair};
use sha2::Digest;

const OID_RSA: &[u8] = &[0x2a, 0x86, 0x48, 0x86, 0xf7, 0x0d, 0x01, 0x01, 0x01];
const OID_EC: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01];
const OID_P256: &[u8] = &[0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID_P384: &[u8] = &[0x2b, 0x81, 0x04, 0x00, 0x22];

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;
const OCTET_STRING: u8 = 0x04;
const NULL: u8 = 0x05;
const OID: u8 = 0x06;
const CONTEXT_0: u8 = 0xa0;

/// The kind of a key, which fixes the algorithms it signs and verifies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyType {
    P256,
    P384,
    Rsa,
}

impl KeyType {
    /// The algorithm tokens signed with this key use (upstream's signers: RS256 for RSA,
    /// ES256 / ES384 by curve).
    pub fn signing_algorithm(self) -> Algorithm {
        match self {
            KeyType::P256 => Algorithm::ES256,
            KeyType::P384 => Algorithm::ES384,
            KeyType::Rsa => Algorithm::RS256,
        }
    }

    /// Whether a token whose header names `alg` may be verified with this key (never an
    /// HMAC algorithm: a public key is not a shared secret).
    pub fn accepts(self, alg: Algorithm) -> bool {
        match self {
            KeyType::P256 => alg == Algorithm::ES256,
            KeyType::P384 => alg == Algorithm::ES384,
            KeyType::Rsa => matches!(
                alg,
                Algorithm::RS256
                    | Algorithm::RS384
                    | Algorithm::RS512
                    | Algorithm::PS256
                    | Algorithm::PS384
                    | Algorithm::PS512
            ),
        }
    }

    fn curve_oid(self) -> Option<&'static [u8]> {
        match self {
            KeyType::P256 => Some(OID_P256),
            KeyType::P384 => Some(OID_P384),
            KeyType::Rsa => None,
        }
    }

    fn of_curve(oid: &[u8]) -> Result<KeyType, String> {
        match oid {
            OID_P256 => Ok(KeyType::P256),
            OID_P384 => Ok(KeyType::P384),
            _ => Err("unsupported elliptic curve (only P-256 and P-384 are)".into()),
        }
    }
}

/// A key that verifies token signatures.
#[derive(Clone)]
pub struct PublicKey {
    pub kind: KeyType,
    /// Upstream's key ID of the key.
    pub kid: String,
    key: DecodingKey,
}

impl std::fmt::Debug for PublicKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PublicKey")
            .field("kind", &self.kind)
            .field("kid", &self.kid)
            .finish()
    }
}

impl PublicKey {
    /// `raw`: the PKCS #1 `RSAPublicKey` of an RSA key, the uncompressed point of an EC key.
    fn new(kind: KeyType, raw: &[u8]) -> PublicKey {
        let kid = key_id(&spki(kind, raw));
        let key = match kind {
            KeyType::Rsa => DecodingKey::from_rsa_der(raw),
            KeyType::P256 | KeyType::P384 => DecodingKey::from_ec_der(raw),
        };
        PublicKey { kind, kid, key }
    }

    /// Whether `signature` (base64url) is this key's signature of `message` with `alg`.
    pub fn verify(&self, alg: Algorithm, message: &[u8], signature: &str) -> bool {
        self.kind.accepts(alg)
            && jsonwebtoken::crypto::verify(signature, message, &self.key, alg).unwrap_or(false)
    }
}

/// The key that signs the tokens this server issues.
#[derive(Clone)]
pub struct SigningKey {
    pub public: PublicKey,
    key: EncodingKey,
}

impl std::fmt::Debug for SigningKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SigningKey")
            .field("public", &self.public)
            .finish_non_exhaustive()
    }
}

impl SigningKey {
    /// Signs `claims` as a compact JWS with upstream's header (`alg` and `kid`, no `typ`).
    pub fn sign(&self, claims: &serde_json::Value) -> Result<String, String> {
        let mut header = jsonwebtoken::Header::new(self.public.kind.signing_algorithm());
        header.typ = None;
        header.kid = Some(self.public.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.key).map_err(|e| e.to_string())
    }

    /// A fresh ECDSA P-256 key, with its PKCS #8 PEM (what a server without
    /// `--service-account-signing-key-file` keeps in its data dir).
    pub fn generate() -> Result<(SigningKey, String), String> {
        let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)
            .map_err(|e| format!("generating the service account key: {e}"))?;
        let pem = pair.serialize_pem();
        let key = signing_key_from_pem(pem.as_bytes())?;
        Ok((key, pem))
    }
}

/// One DER element: `(tag, contents, rest)`.
fn der_read(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, rest) = rest.split_first()?;
    let (len, rest) = if first < 0x80 {
        (usize::from(first), rest)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, &rest[n..])
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// The contents of the next element, which must have tag `tag`.
fn der_expect<'a>(input: &mut &'a [u8], tag: u8) -> Option<&'a [u8]> {
    let (t, value, rest) = der_read(input)?;
    if t != tag {
        return None;
    }
    *input = rest;
    Some(value)
}

fn der_write(tag: u8, contents: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = contents.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(contents);
    out
}

/// The DER `SubjectPublicKeyInfo` of a key (what Go's `MarshalPKIXPublicKey` produces).
fn spki(kind: KeyType, raw: &[u8]) -> Vec<u8> {
    let algorithm = match kind.curve_oid() {
        None => [der_write(OID, OID_RSA), der_write(NULL, &[])].concat(),
        Some(curve) => [der_write(OID, OID_EC), der_write(OID, curve)].concat(),
    };
    let mut bits = vec![0u8];
    bits.extend_from_slice(raw);
    der_write(
        SEQUENCE,
        &[
            der_write(SEQUENCE, &algorithm),
            der_write(BIT_STRING, &bits),
        ]
        .concat(),
    )
}

/// Upstream's `keyIDFromPublicKey`.
fn key_id(spki_der: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(spki_der))
}

/// The key of a DER `SubjectPublicKeyInfo`.
fn public_from_spki(der: &[u8]) -> Result<PublicKey, String> {
    let bad = || "malformed public key".to_string();
    let mut outer = der;
    let mut spki = der_expect(&mut outer, SEQUENCE).ok_or_else(bad)?;
    let mut algorithm = der_expect(&mut spki, SEQUENCE).ok_or_else(bad)?;
    let bits = der_expect(&mut spki, BIT_STRING).ok_or_else(bad)?;
    let oid = der_expect(&mut algorithm, OID).ok_or_else(bad)?;
    let (&unused, raw) = bits.split_first().ok_or_else(bad)?;
    if unused != 0 {
        return Err(bad());
    }
    match oid {
        OID_RSA => {
            rsa_components(raw).ok_or_else(bad)?;
            Ok(PublicKey::new(KeyType::Rsa, raw))
        }
        OID_EC => {
            let curve = der_expect(&mut algorithm, OID).ok_or_else(bad)?;
            let kind = KeyType::of_curve(curve)?;
            let len = if kind == KeyType::P256 { 65 } else { 97 };
            if raw.len() != len || raw[0] != 0x04 {
                return Err("unsupported EC point encoding (must be uncompressed)".into());
            }
            Ok(PublicKey::new(kind, raw))
        }
        _ => Err("public key is not a RSA or ECDSA key".into()),
    }
}

/// The modulus and exponent of a PKCS #1 `RSAPublicKey`.
fn rsa_components(der: &[u8]) -> Option<(&[u8], &[u8])> {
    let mut outer = der;
    let mut seq = der_expect(&mut outer, SEQUENCE)?;
    let n = der_expect(&mut seq, INTEGER)?;
    let e = der_expect(&mut seq, INTEGER)?;
    Some((n, e))
}

/// The public key of a certificate.
fn public_from_certificate(der: &[u8]) -> Result<PublicKey, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("parsing certificate: {e}"))?;
    public_from_spki(cert.public_key().raw)
}

/// A PKCS #1 `RSAPrivateKey`.
fn signing_from_pkcs1(der: &[u8]) -> Result<SigningKey, String> {
    let pair = signature::RsaKeyPair::from_der(der).map_err(|e| format!("RSA key: {e}"))?;
    Ok(SigningKey {
        public: PublicKey::new(KeyType::Rsa, pair.public().as_ref()),
        key: EncodingKey::from_rsa_der(der),
    })
}

/// An EC key in PKCS #8 on `kind`'s curve.
fn signing_from_ec_pkcs8(kind: KeyType, der: &[u8]) -> Result<SigningKey, String> {
    let alg = match kind {
        KeyType::P256 => &signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        KeyType::P384 => &signature::ECDSA_P384_SHA384_FIXED_SIGNING,
        KeyType::Rsa => return Err("not an EC key".into()),
    };
    let rng = ring::rand::SystemRandom::new();
    let pair = signature::EcdsaKeyPair::from_pkcs8(alg, der, &rng)
        .map_err(|e| format!("ECDSA key: {e}"))?;
    Ok(SigningKey {
        public: PublicKey::new(kind, pair.public_key().as_ref()),
        key: EncodingKey::from_ec_der(der),
    })
}

/// A PKCS #8 `PrivateKeyInfo` holding an RSA or ECDSA key.
fn signing_from_pkcs8(der: &[u8]) -> Result<SigningKey, String> {
    let bad = || "malformed PKCS #8 private key".to_string();
    let mut outer = der;
    let mut info = der_expect(&mut outer, SEQUENCE).ok_or_else(bad)?;
    der_expect(&mut info, INTEGER).ok_or_else(bad)?;
    let mut algorithm = der_expect(&mut info, SEQUENCE).ok_or_else(bad)?;
    let private = der_expect(&mut info, OCTET_STRING).ok_or_else(bad)?;
    match der_expect(&mut algorithm, OID).ok_or_else(bad)? {
        OID_RSA => signing_from_pkcs1(private),
        OID_EC => {
            let curve = der_expect(&mut algorithm, OID).ok_or_else(bad)?;
            signing_from_ec_pkcs8(KeyType::of_curve(curve)?, der)
        }
        _ => Err("private key is not a RSA or ECDSA key".into()),
    }
}

/// A SEC 1 `ECPrivateKey` (`openssl ecparam -genkey`), re-wrapped as PKCS #8 for `ring`.
fn signing_from_sec1(der: &[u8]) -> Result<SigningKey, String> {
    let bad = || "malformed EC private key".to_string();
    let mut outer = der;
    let mut key = der_expect(&mut outer, SEQUENCE).ok_or_else(bad)?;
    der_expect(&mut key, INTEGER).ok_or_else(bad)?;
    der_expect(&mut key, OCTET_STRING).ok_or_else(bad)?;
    let mut params = der_expect(&mut key, CONTEXT_0)
        .ok_or_else(|| "EC private key without its curve is not supported".to_string())?;
    let curve = der_expect(&mut params, OID).ok_or_else(bad)?;
    let kind = KeyType::of_curve(curve)?;
    let algorithm = [der_write(OID, OID_EC), der_write(OID, curve)].concat();
    let pkcs8 = der_write(
        SEQUENCE,
        &[
            der_write(INTEGER, &[0]),
            der_write(SEQUENCE, &algorithm),
            der_write(OCTET_STRING, der),
        ]
        .concat(),
    );
    signing_from_ec_pkcs8(kind, &pkcs8)
}

fn pem_blocks(data: &[u8]) -> Vec<x509_parser::pem::Pem> {
    x509_parser::pem::Pem::iter_from_buffer(data)
        .map_while(Result::ok)
        .collect()
}

/// The signing key of a PEM file: its first RSA or ECDSA private key (`EC PRIVATE KEY`,
/// `RSA PRIVATE KEY` or PKCS #8 `PRIVATE KEY`); other blocks are skipped, as upstream's
/// `ParsePrivateKeyPEM` skips them.
pub fn signing_key_from_pem(data: &[u8]) -> Result<SigningKey, String> {
    for block in pem_blocks(data) {
        let der = &block.contents;
        match block.label.as_str() {
            "EC PRIVATE KEY" => return signing_from_sec1(der),
            "RSA PRIVATE KEY" => return signing_from_pkcs1(der),
            "PRIVATE KEY" => return signing_from_pkcs8(der),
            _ => {}
        }
    }
    Err("data does not contain a valid RSA or ECDSA private key".into())
}

/// The verification keys of a PEM file: every RSA or ECDSA public key, private key (its
/// public part) or certificate (its key) in it, as upstream's `ParsePublicKeysPEM`; other
/// blocks are skipped.
pub fn public_keys_from_pem(data: &[u8]) -> Result<Vec<PublicKey>, String> {
    let mut keys = Vec::new();
    for block in pem_blocks(data) {
        let der = &block.contents;
        let key = match block.label.as_str() {
            "PUBLIC KEY" => public_from_spki(der)?,
            "RSA PUBLIC KEY" => {
                rsa_components(der).ok_or("malformed RSA public key")?;
                PublicKey::new(KeyType::Rsa, der)
            }
            "CERTIFICATE" => public_from_certificate(der)?,
            "EC PRIVATE KEY" => signing_from_sec1(der)?.public,
            "RSA PRIVATE KEY" => signing_from_pkcs1(der)?.public,
            "PRIVATE KEY" => signing_from_pkcs8(der)?.public,
            _ => continue,
        };
        keys.push(key);
    }
    if keys.is_empty() {
        return Err("data does not contain any valid RSA or ECDSA public keys".into());
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_key_round_trips_through_pem() {
        let (key, pem) = SigningKey::generate().unwrap();
        assert_eq!(key.public.kind, KeyType::P256);
        let again = signing_key_from_pem(pem.as_bytes()).unwrap();
        assert_eq!(again.public.kid, key.public.kid);
        let publics = public_keys_from_pem(pem.as_bytes()).unwrap();
        assert_eq!(publics.len(), 1);
        assert_eq!(publics[0].kid, key.public.kid);
        // The kid is the SHA-256 of the PKIX key, 43 base64url characters.
        assert_eq!(key.public.kid.len(), 43);
    }

    #[test]
    fn sign_and_verify() {
        let (key, _) = SigningKey::generate().unwrap();
        let token = key.sign(&serde_json::json!({"sub": "x"})).unwrap();
        let parts: Vec<&str> = token.split('.').collect();
        assert_eq!(parts.len(), 3);
        let message = format!("{}.{}", parts[0], parts[1]);
        assert!(
            key.public
                .verify(Algorithm::ES256, message.as_bytes(), parts[2])
        );
        assert!(
            !key.public
                .verify(Algorithm::ES384, message.as_bytes(), parts[2])
        );
        assert!(
            !key.public
                .verify(Algorithm::HS256, message.as_bytes(), parts[2])
        );
        let (other, _) = SigningKey::generate().unwrap();
        assert!(
            !other
                .public
                .verify(Algorithm::ES256, message.as_bytes(), parts[2])
        );
        let header: serde_json::Value = serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(parts[0])
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            header,
            serde_json::json!({"alg": "ES256", "kid": key.public.kid})
        );
    }

    #[test]
    fn unknown_blocks_and_garbage() {
        assert!(public_keys_from_pem(b"nothing here").is_err());
        assert!(signing_key_from_pem(b"-----BEGIN FOO-----\nAAAA\n-----END FOO-----\n").is_err());
    }

    /// Runs openssl in `dir`; false when it is not installed.
    fn openssl(dir: &std::path::Path, args: &[&str]) -> bool {
        match std::process::Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
        {
            Ok(out) => {
                assert!(out.status.success(), "openssl {args:?}: {out:?}");
                true
            }
            Err(_) => false,
        }
    }

    #[test]
    fn openssl_keys() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let read = |name: &str| std::fs::read(d.join(name)).unwrap();
        if !openssl(d, &["genrsa", "-traditional", "-out", "rsa1.pem", "2048"]) {
            eprintln!("openssl not installed: skipped");
            return;
        }
        for args in [
            &[
                "pkcs8", "-topk8", "-nocrypt", "-in", "rsa1.pem", "-out", "rsa8.pem",
            ][..],
            &["rsa", "-in", "rsa1.pem", "-pubout", "-out", "rsa.pub"],
            &[
                "rsa",
                "-in",
                "rsa1.pem",
                "-RSAPublicKey_out",
                "-out",
                "rsa1.pub",
            ],
            &[
                "ecparam",
                "-name",
                "prime256v1",
                "-genkey",
                "-noout",
                "-out",
                "ec.pem",
            ],
            &[
                "pkcs8", "-topk8", "-nocrypt", "-in", "ec.pem", "-out", "ec8.pem",
            ],
            &["ec", "-in", "ec.pem", "-pubout", "-out", "ec.pub"],
            &[
                "ecparam",
                "-name",
                "secp384r1",
                "-genkey",
                "-noout",
                "-out",
                "ec384.pem",
            ],
            &[
                "ecparam",
                "-name",
                "secp521r1",
                "-genkey",
                "-noout",
                "-out",
                "ec521.pem",
            ],
            &[
                "req", "-x509", "-new", "-key", "ec.pem", "-subj", "/CN=sa", "-days", "1", "-out",
                "ec.crt",
            ],
        ] {
            assert!(openssl(d, args));
        }
        let rsa = signing_key_from_pem(&read("rsa1.pem")).unwrap();
        assert_eq!(rsa.public.kind, KeyType::Rsa);
        assert_eq!(rsa.public.kind.signing_algorithm(), Algorithm::RS256);
        let rsa8 = signing_key_from_pem(&read("rsa8.pem")).unwrap();
        assert_eq!(rsa8.public.kid, rsa.public.kid);
        // The kid is the same however the public key is written (it hashes the PKIX form).
        for public in ["rsa.pub", "rsa1.pub", "rsa1.pem", "rsa8.pem"] {
            let keys = public_keys_from_pem(&read(public)).unwrap();
            assert_eq!(keys[0].kid, rsa.public.kid, "{public}");
        }
        let ec = signing_key_from_pem(&read("ec.pem")).unwrap();
        assert_eq!(ec.public.kind, KeyType::P256);
        assert_eq!(
            signing_key_from_pem(&read("ec8.pem")).unwrap().public.kid,
            ec.public.kid
        );
        for public in ["ec.pub", "ec.pem", "ec8.pem", "ec.crt"] {
            let keys = public_keys_from_pem(&read(public)).unwrap();
            assert_eq!(keys[0].kid, ec.public.kid, "{public}");
        }
        let ec384 = signing_key_from_pem(&read("ec384.pem")).unwrap();
        assert_eq!(ec384.public.kind.signing_algorithm(), Algorithm::ES384);
        assert!(signing_key_from_pem(&read("ec521.pem")).is_err());

        // Tokens signed with each verify with the public key read from another file.
        for (key, public) in [(&rsa, "rsa.pub"), (&ec, "ec.pub"), (&ec384, "ec384.pem")] {
            let token = key.sign(&serde_json::json!({"sub": "x"})).unwrap();
            let (message, signature) = token.rsplit_once('.').unwrap();
            let keys = public_keys_from_pem(&read(public)).unwrap();
            let alg = key.public.kind.signing_algorithm();
            assert!(
                keys[0].verify(alg, message.as_bytes(), signature),
                "{public}"
            );
        }
        // A file with several keys (and other blocks) gives all of them.
        let mut bundle = read("rsa.pub");
        bundle.extend(
            b"-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n",
        );
        bundle.extend(read("ec.pub"));
        let keys = public_keys_from_pem(&bundle).unwrap();
        assert_eq!(keys.len(), 2);
    }

    #[test]
    fn der_lengths() {
        let long = vec![7u8; 300];
        let enc = der_write(OCTET_STRING, &long);
        assert_eq!(&enc[..4], &[0x04, 0x82, 0x01, 0x2c]);
        let (tag, value, rest) = der_read(&enc).unwrap();
        assert_eq!((tag, value.len(), rest.len()), (OCTET_STRING, 300, 0));
    }
}
