//! Bodies kubectl 1.33 sent (`tests/testdata/*.pb`, captured as `tests/kubectl.rs` captures
//! them) against the JSON kubectl 1.33 prints for the same command with `--dry-run=client
//! -o json` (`*.json`); and the decoder's totality on arbitrary and mutated input.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::print_stderr
)]

use std::path::PathBuf;

use proptest::prelude::*;
use serde_json::Value;

const FIXTURES: &[&str] = &[
    "cronjob",
    "deployment",
    "ingress",
    "pdb",
    "quota",
    "secret",
    "service",
];

/// The test data beside this crate, found at run time: the shared build directory may hold
/// this binary built from another clone of the repository, now gone.
fn testdata(name: &str) -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
        .join("tests/testdata")
        .join(name)
}

fn bodies() -> Vec<Vec<u8>> {
    FIXTURES
        .iter()
        .map(|n| std::fs::read(testdata(&format!("{n}.pb"))).unwrap())
        .collect()
}

#[test]
fn captured_bodies_decode_to_kubectls_json() {
    for name in FIXTURES {
        let body = std::fs::read(testdata(&format!("{name}.pb"))).unwrap();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(testdata(&format!("{name}.json"))).unwrap())
                .unwrap();
        assert!(kubeproto::is_envelope(&body));
        let decoded = kubeproto::decode(&body).unwrap();
        assert_eq!(decoded, expected, "{name}");
    }
}

#[test]
fn every_truncation_is_an_error_or_a_value() {
    for body in bodies() {
        for n in 0..body.len() {
            let _ = kubeproto::decode(&body[..n]);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = kubeproto::decode(&bytes);
        let mut framed = kubeproto::MAGIC.to_vec();
        framed.extend_from_slice(&bytes);
        let _ = kubeproto::decode(&framed);
        let _ = kubeproto::decode_with_defaults(&framed, "apps/v1", "Deployment");
    }

    #[test]
    fn arbitrary_objects_of_every_kind_never_panic(
        kind in 0usize..8,
        raw in proptest::collection::vec(any::<u8>(), 0..512),
    ) {
        let kinds = [
            ("apps/v1", "Deployment"),
            ("v1", "Pod"),
            ("v1", "Service"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("authorization.k8s.io/v1", "SubjectAccessReview"),
            ("meta.k8s.io/v1", "DeleteOptions"),
            ("v1", "PodList"),
            ("coordination.k8s.io/v1", "Lease"),
        ];
        let (api_version, kind) = kinds[kind];
        let _ = kubeproto::decode(&envelope(api_version, kind, &raw));
    }

    #[test]
    fn mutated_real_bodies_never_panic(
        which in 0usize..7,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..3), 1..8),
    ) {
        let mut body = bodies()[which].clone();
        for (at, byte, op) in edits {
            if body.is_empty() {
                break;
            }
            let at = at % body.len();
            match op {
                0 => body[at] = byte,
                1 => body.insert(at, byte),
                _ => {
                    body.remove(at);
                }
            }
        }
        let _ = kubeproto::decode(&body);
    }
}

/// An envelope around `raw`, written by hand.
fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    fn field(out: &mut Vec<u8>, number: u8, bytes: &[u8]) {
        out.push((number << 3) | 2);
        let mut len = bytes.len();
        while len >= 0x80 {
            out.push((len as u8) | 0x80);
            len >>= 7;
        }
        out.push(len as u8);
        out.extend_from_slice(bytes);
    }
    let mut type_meta = Vec::new();
    field(&mut type_meta, 1, api_version.as_bytes());
    field(&mut type_meta, 2, kind.as_bytes());
    let mut out = kubeproto::MAGIC.to_vec();
    field(&mut out, 1, &type_meta);
    field(&mut out, 2, raw);
    out
}
