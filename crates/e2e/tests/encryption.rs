//! Encryption at rest with the real kubectl: `--encryption-provider-config` makes Secrets
//! stored as `k8s:enc:aescbc:v1:<key>:…` in the SQLite datastore (read back here with the
//! `sqlite3` CLI), kubectl still reads them in clear, other resources stay plain, and a key
//! rotation (new key first, old key kept) keeps old Secrets readable and re-encrypts them on
//! rewrite.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::process::Command;

use testkit::RkubeServer;

const KEY1: &str = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const KEY2: &str = "ZmVkY2JhOTg3NjU0MzIxMGZlZGNiYTk4NzY1NDMyMTA=";

fn config(keys: &[(&str, &str)]) -> String {
    let mut s = String::from(
        "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n  - resources: [\"secrets\"]\n    providers:\n      - aescbc:\n          keys:\n",
    );
    for (name, secret) in keys {
        s.push_str(&format!(
            "            - name: {name}\n              secret: {secret}\n"
        ));
    }
    s.push_str("      - identity: {}\n");
    s
}

/// The newest stored value of `key`, as the datastore holds it.
fn stored(db: &Path, key: &str) -> Vec<u8> {
    let out = Command::new("sqlite3")
        .arg(db)
        .arg(format!(
            "SELECT hex(value) FROM kv_log WHERE key = '{key}' AND deleted = 0 ORDER BY revision DESC LIMIT 1"
        ))
        .output()
        .unwrap_or_else(|e| panic!("sqlite3 (apt-get install sqlite3): {e}"));
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let hex = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

#[test]
fn secrets_are_encrypted_at_rest() {
    let files = tempfile::tempdir().unwrap();
    let cfg = files.path().join("encryption.yaml");
    std::fs::write(&cfg, config(&[("key1", KEY1)])).unwrap();
    let mut server =
        RkubeServer::start_with(&["--encryption-provider-config", cfg.to_str().unwrap()]);
    let db = server.dir.path().join("data/db/state.db");

    server.kubectl_ok(
        Some("1.33"),
        &[
            "create",
            "secret",
            "generic",
            "s1",
            "--from-literal=password=hunter2-plaintext",
        ],
    );
    server.kubectl_ok(
        Some("1.33"),
        &["create", "configmap", "c1", "--from-literal=k=visible"],
    );

    let raw = stored(&db, "/registry/secrets/default/s1");
    assert!(
        raw.starts_with(b"k8s:enc:aescbc:v1:key1:"),
        "{:?}",
        String::from_utf8_lossy(&raw)
    );
    assert!(!contains(&raw, b"hunter2-plaintext"));
    assert!(!contains(&raw, b"aHVudGVyMi1wbGFpbnRleHQ="));
    assert!(!contains(&raw, b"\"s1\""), "metadata is encrypted too");
    assert!(contains(
        &stored(&db, "/registry/configmaps/default/c1"),
        b"visible"
    ));

    let pw = server.kubectl_ok(
        Some("1.33"),
        &["get", "secret", "s1", "-o", "jsonpath={.data.password}"],
    );
    assert_eq!(pw, "aHVudGVyMi1wbGFpbnRleHQ=");

    // Rotation: key2 writes, key1 still reads.
    std::fs::write(&cfg, config(&[("key2", KEY2), ("key1", KEY1)])).unwrap();
    server.restart();
    let pw = server.kubectl_ok(
        Some("1.33"),
        &["get", "secret", "s1", "-o", "jsonpath={.data.password}"],
    );
    assert_eq!(pw, "aHVudGVyMi1wbGFpbnRleHQ=");
    assert!(stored(&db, "/registry/secrets/default/s1").starts_with(b"k8s:enc:aescbc:v1:key1:"));
    let json = server.kubectl_ok(Some("1.33"), &["get", "secret", "s1", "-o", "json"]);
    let out = server.kubectl_stdin(Some("1.33"), &["replace", "-f", "-"], &json);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // A replace with no change writes nothing; touch it so it is rewritten.
    server.kubectl_ok(Some("1.33"), &["annotate", "secret", "s1", "rotated=yes"]);
    assert!(stored(&db, "/registry/secrets/default/s1").starts_with(b"k8s:enc:aescbc:v1:key2:"));

    // Without the key, the secret cannot be read: an error, never ciphertext. The
    // secrets' watch cache cannot fill, so the server is live but not ready (as
    // upstream's informer-sync check fails while its secrets informer cannot list).
    std::fs::write(&cfg, config(&[("key3", KEY1)])).unwrap();
    server.restart_live();
    let out = server.kubectl_v(Some("1.33"), &["get", "secret", "s1"]);
    assert!(!out.status.success());
    let out = server.kubectl_v(Some("1.33"), &["get", "--raw", "/readyz"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("[-]informer-sync failed: reason withheld"),
        "{err}"
    );
}
