//! Detached JWS signatures of bootstrap tokens, as upstream's
//! `k8s.io/cluster-bootstrap/token/jws`: the bootstrap signer signs the `kubeconfig` of
//! the `kube-public/cluster-info` ConfigMap with each bootstrap token (HS256 keyed by the
//! token's secret, `kid` = the token's id) and stores the signature, without its payload
//! (`<header>..<signature>`), as `jws-kubeconfig-<token id>`. A joining node fetches
//! cluster-info without trusting the server yet and accepts the CA in it only if the
//! signature verifies with its token.

use base64::Engine;

const B64URL: base64::engine::GeneralPurpose = base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The key of the signature for token `id` in cluster-info.
pub fn signature_key(token_id: &str) -> String {
    format!("jws-kubeconfig-{token_id}")
}

fn sign(header_b64: &str, content: &str, secret: &str) -> String {
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes());
    let signing_input = format!("{header_b64}.{}", B64URL.encode(content));
    B64URL.encode(ring::hmac::sign(&key, signing_input.as_bytes()).as_ref())
}

/// The detached signature of `content` with the token `id.secret`.
pub fn detached_signature(content: &str, token_id: &str, token_secret: &str) -> String {
    let header = serde_json::json!({"alg": "HS256", "kid": token_id}).to_string();
    let header_b64 = B64URL.encode(header);
    let sig = sign(&header_b64, content, token_secret);
    format!("{header_b64}..{sig}")
}

/// Whether `detached` is a valid signature of `content` by the token `id.secret`
/// (HS256 and the token's `kid` required; compared in constant time).
pub fn verify_detached(detached: &str, content: &str, token_id: &str, token_secret: &str) -> bool {
    let mut parts = detached.split('.');
    let (Some(header_b64), Some(""), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let Ok(header) = B64URL.decode(header_b64) else {
        return false;
    };
    let Ok(header) = serde_json::from_slice::<serde_json::Value>(&header) else {
        return false;
    };
    if header["alg"] != "HS256" || header["kid"] != token_id {
        return false;
    }
    let Ok(given) = B64URL.decode(sig) else {
        return false;
    };
    let key = ring::hmac::Key::new(ring::hmac::HMAC_SHA256, token_secret.as_bytes());
    let signing_input = format!("{header_b64}.{}", B64URL.encode(content));
    ring::hmac::verify(&key, signing_input.as_bytes(), &given).is_ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn signs_and_verifies() {
        let sig = detached_signature("kubeconfig text", "abcdef", "0123456789abcdef");
        assert!(sig.contains(".."));
        assert!(verify_detached(
            &sig,
            "kubeconfig text",
            "abcdef",
            "0123456789abcdef"
        ));
        assert!(!verify_detached(
            &sig,
            "kubeconfig text!",
            "abcdef",
            "0123456789abcdef"
        ));
        assert!(!verify_detached(
            &sig,
            "kubeconfig text",
            "abcdef",
            "0123456789abcdeX"
        ));
        assert!(!verify_detached(
            &sig,
            "kubeconfig text",
            "zzzzzz",
            "0123456789abcdef"
        ));
        assert!(!verify_detached("garbage", "x", "abcdef", "s"));
        assert_eq!(signature_key("abcdef"), "jws-kubeconfig-abcdef");
    }
}
