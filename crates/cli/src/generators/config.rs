//! `create configmap` and `create secret generic|docker-registry|tls`: keys from
//! literals, files, directories and env files, with kubectl's checks and messages, and
//! `--append-hash`.

use std::collections::BTreeMap;
use std::path::Path;

use base64::Engine;
use serde_json::{Map, Value, json};
use sha2::Digest;

use super::object_meta;
use crate::error::{CliError, Result};
use crate::validate::config_map_key_errors;

fn b64(data: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(data)
}

/// `util.ParseLiteralSource`: `key=value` (the value may hold `=`).
pub fn parse_literal_source(source: &str) -> Result<(String, String)> {
    match source.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k.to_string(), v.to_string())),
        _ => Err(CliError::msg(format!(
            "invalid literal source {source}, expected key=value"
        ))),
    }
}

/// `util.ParseFileSource`: `path` (key = base name) or `key=path`.
pub fn parse_file_source(source: &str) -> Result<(String, String)> {
    let n = source.matches('=').count();
    if n == 0 {
        let base = source
            .trim_end_matches('/')
            .rsplit('/')
            .next()
            .filter(|b| !b.is_empty())
            .unwrap_or(if source.starts_with('/') { "/" } else { "." });
        return Ok((base.to_string(), source.to_string()));
    }
    if n == 1 && source.starts_with('=') {
        return Err(CliError::msg(format!(
            "key name for file path {} missing",
            &source[1..]
        )));
    }
    if n == 1 && source.ends_with('=') {
        return Err(CliError::msg(format!(
            "file path for key name {} missing",
            &source[..source.len() - 1]
        )));
    }
    if n > 1 {
        return Err(CliError::msg("key names or file paths cannot contain '='"));
    }
    let (k, p) = source.split_once('=').unwrap_or_default();
    Ok((k.to_string(), p.to_string()))
}

fn stat_error(path: &str, e: &std::io::Error) -> CliError {
    let text = match e.kind() {
        std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    };
    CliError::msg(format!("error reading {path}: {text}"))
}

/// Each (key, path) a `--from-file` source names: the file, or every regular file of a
/// directory.
fn file_entries(source: &str) -> Result<Vec<(String, String)>> {
    let (key, path) = parse_file_source(source)?;
    let meta = std::fs::metadata(&path).map_err(|e| stat_error(&path, &e))?;
    if !meta.is_dir() {
        return Ok(vec![(key, path)]);
    }
    if source.contains('=') {
        return Err(CliError::msg("cannot give a key name for a directory path"));
    }
    let mut entries: Vec<_> = std::fs::read_dir(&path)
        .map_err(|e| CliError::msg(format!("error listing files in {path}: {e}")))?
        .filter_map(|e| e.ok())
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let p = Path::new(&path).join(&name).to_string_lossy().into_owned();
            (name, p)
        })
        .collect();
    entries.sort();
    Ok(entries)
}

fn read(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| stat_error(path, &e))
}

/// `cmdutil.AddFromEnvFile`: `KEY=value` lines (`KEY` alone takes the environment's
/// value), `#` comments and blank lines skipped.
pub fn env_file_pairs(path: &str, kind_dir_message: &str) -> Result<Vec<(String, String)>> {
    let meta = std::fs::metadata(path).map_err(|e| stat_error(path, &e))?;
    if meta.is_dir() {
        return Err(CliError::msg(kind_dir_message));
    }
    let data = read(path)?;
    let mut out = Vec::new();
    for (i, raw) in data.split(|b| *b == b'\n').enumerate() {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let Ok(mut line) = std::str::from_utf8(raw) else {
            return Err(CliError::msg(format!(
                "env file {path} contains invalid utf8 bytes at line {}: {raw:?}",
                i + 1
            )));
        };
        if i == 0 {
            line = line.trim_start_matches('\u{feff}');
        }
        let line = line.trim_start();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (key, value) = match line.split_once('=') {
            Some((k, v)) => (k, Some(v)),
            None => (line, None),
        };
        let errs = api::validation::names::is_env_var_name(key);
        if !errs.is_empty() {
            return Err(CliError::msg(format!(
                "\"{key}\" is not a valid key name: {}",
                errs.join(";")
            )));
        }
        let value = match value {
            Some(v) => v.to_string(),
            None => std::env::var(key).unwrap_or_default(),
        };
        out.push((key.to_string(), value));
    }
    Ok(out)
}

/// The sources of a ConfigMap or generic Secret.
#[derive(Debug, Clone, Default)]
pub struct Sources {
    pub files: Vec<String>,
    pub literals: Vec<String>,
    pub env_files: Vec<String>,
    pub append_hash: bool,
}

impl Sources {
    /// `from-env-file cannot be combined with from-file or from-literal`.
    pub fn validate(&self) -> Result<()> {
        if !self.env_files.is_empty() && (!self.files.is_empty() || !self.literals.is_empty()) {
            return Err(CliError::msg(
                "from-env-file cannot be combined with from-file or from-literal",
            ));
        }
        Ok(())
    }
}

/// kubectl's `hash.encodeHash(sha256(json))`: ten hex digits with 0,1,3,a,e replaced.
fn encode_hash(encoded: &str) -> String {
    let hex: String = sha2::Sha256::digest(encoded.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    hex[..10]
        .chars()
        .map(|c| match c {
            '0' => 'g',
            '1' => 'h',
            '3' => 'k',
            'a' => 'm',
            'e' => 't',
            c => c,
        })
        .collect()
}

/// `create configmap`.
pub fn configmap(name: &str, src: &Sources) -> Result<Value> {
    let mut data: BTreeMap<String, String> = BTreeMap::new();
    let mut binary: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    let mut add = |key: &str, value: Vec<u8>| -> Result<()> {
        if let Some(errs) = config_map_key_errors(key, ",") {
            return Err(CliError::msg(format!(
                "\"{key}\" is not a valid key name for a ConfigMap: {errs}"
            )));
        }
        if data.contains_key(key) {
            return Err(CliError::msg(format!(
                "cannot add key \"{key}\", another key by that name already exists in Data for ConfigMap \"{name}\""
            )));
        }
        if binary.contains_key(key) {
            return Err(CliError::msg(format!(
                "cannot add key \"{key}\", another key by that name already exists in BinaryData for ConfigMap \"{name}\""
            )));
        }
        match String::from_utf8(value) {
            Ok(s) => {
                data.insert(key.to_string(), s);
            }
            Err(e) => {
                binary.insert(key.to_string(), e.into_bytes());
            }
        }
        Ok(())
    };
    for source in &src.files {
        for (key, path) in file_entries(source)? {
            add(&key, read(&path)?)?;
        }
    }
    for source in &src.literals {
        let (k, v) = parse_literal_source(source)?;
        add(&k, v.into_bytes())?;
    }
    for path in &src.env_files {
        for (k, v) in env_file_pairs(path, "env config file cannot be a directory")? {
            add(&k, v.into_bytes())?;
        }
    }
    let data_json: Map<String, Value> = data.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let binary_json: Map<String, Value> = binary
        .iter()
        .map(|(k, v)| (k.clone(), json!(b64(v))))
        .collect();
    let mut final_name = name.to_string();
    if src.append_hash {
        let mut m = json!({"kind": "ConfigMap", "name": name, "data": data_json});
        if !binary_json.is_empty() {
            m["binaryData"] = Value::Object(binary_json.clone());
        }
        final_name = format!(
            "{name}-{}",
            encode_hash(&crate::output::to_json_compact(&m))
        );
    }
    let mut cm = json!({
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": object_meta(&final_name, None, None),
    });
    if !data_json.is_empty() {
        cm["data"] = Value::Object(data_json);
    }
    if !binary_json.is_empty() {
        cm["binaryData"] = Value::Object(binary_json);
    }
    Ok(cm)
}

/// A Secret of `type` with `data` (raw bytes), hashed into the name with `append_hash`.
fn secret(
    name: &str,
    secret_type: &str,
    data: &BTreeMap<String, Vec<u8>>,
    append_hash: bool,
) -> Value {
    let data_json: Map<String, Value> = data
        .iter()
        .map(|(k, v)| (k.clone(), json!(b64(v))))
        .collect();
    let mut final_name = name.to_string();
    if append_hash {
        let m = json!({"kind": "Secret", "type": secret_type, "name": name, "data": data_json});
        final_name = format!(
            "{name}-{}",
            encode_hash(&crate::output::to_json_compact(&m))
        );
    }
    let mut s = json!({
        "kind": "Secret",
        "apiVersion": "v1",
        "metadata": object_meta(&final_name, None, None),
    });
    if !data_json.is_empty() {
        s["data"] = Value::Object(data_json);
    }
    if !secret_type.is_empty() {
        s["type"] = json!(secret_type);
    }
    s
}

fn add_secret_key(data: &mut BTreeMap<String, Vec<u8>>, key: &str, value: Vec<u8>) -> Result<()> {
    if let Some(errs) = config_map_key_errors(key, ";") {
        return Err(CliError::msg(format!(
            "\"{key}\" is not valid key name for a Secret {errs}"
        )));
    }
    if data.contains_key(key) {
        return Err(CliError::msg(format!(
            "cannot add key {key}, another key by that name already exists"
        )));
    }
    data.insert(key.to_string(), value);
    Ok(())
}

/// `create secret generic`.
pub fn secret_generic(name: &str, secret_type: &str, src: &Sources) -> Result<Value> {
    let mut data = BTreeMap::new();
    for source in &src.literals {
        let (k, v) = parse_literal_source(source)?;
        add_secret_key(&mut data, &k, v.into_bytes())?;
    }
    for source in &src.files {
        for (key, path) in file_entries(source)? {
            add_secret_key(&mut data, &key, read(&path)?)?;
        }
    }
    for path in &src.env_files {
        for (k, v) in env_file_pairs(path, "env secret file cannot be a directory")? {
            add_secret_key(&mut data, &k, v.into_bytes())?;
        }
    }
    Ok(secret(name, secret_type, &data, src.append_hash))
}

/// Go's `json.Marshal` of a string (with its HTML escaping).
fn go_string(s: &str) -> String {
    crate::output::to_json_compact(&json!(s))
}

/// The `.dockerconfigjson` of `create secret docker-registry`, byte for byte as kubectl's
/// `json.Marshal(DockerConfigJSON)` (struct field order: username, password, email, auth).
pub fn docker_config_json(username: &str, password: &str, email: &str, server: &str) -> String {
    let auth = b64(format!("{username}:{password}").as_bytes());
    let mut entry = format!(
        "\"username\":{},\"password\":{}",
        go_string(username),
        go_string(password)
    );
    if !email.is_empty() {
        entry.push_str(&format!(",\"email\":{}", go_string(email)));
    }
    entry.push_str(&format!(",\"auth\":{}", go_string(&auth)));
    format!("{{\"auths\":{{{}:{{{entry}}}}}}}", go_string(server))
}

/// `create secret docker-registry`.
pub fn secret_docker_registry(
    name: &str,
    username: &str,
    password: &str,
    email: &str,
    server: &str,
    from_files: &[String],
    append_hash: bool,
) -> Result<Value> {
    if from_files.is_empty() && (username.is_empty() || password.is_empty() || server.is_empty()) {
        return Err(CliError::msg(
            "either --from-file or the combination of --docker-username, --docker-password and --docker-server is required",
        ));
    }
    let mut data = BTreeMap::new();
    if from_files.is_empty() {
        data.insert(
            ".dockerconfigjson".to_string(),
            docker_config_json(username, password, email, server).into_bytes(),
        );
    } else {
        for source in from_files {
            for (key, path) in file_entries(source)? {
                add_secret_key(&mut data, &key, read(&path)?)?;
            }
        }
    }
    Ok(secret(
        name,
        "kubernetes.io/dockerconfigjson",
        &data,
        append_hash,
    ))
}

/// `create secret tls --cert --key`.
pub fn secret_tls(name: &str, cert: &str, key: &str, append_hash: bool) -> Result<Value> {
    if cert.is_empty() || key.is_empty() {
        return Err(CliError::msg("key and cert must be specified"));
    }
    let readf = |f: &str| {
        std::fs::read(f).map_err(|e| {
            let text = match e.kind() {
                std::io::ErrorKind::NotFound => "no such file or directory".to_string(),
                _ => e.to_string(),
            };
            CliError::msg(format!("Cannot read file {f}, open {f}: {text}"))
        })
    };
    let cert_pem = readf(cert)?;
    let key_pem = readf(key)?;
    let has_block = |data: &[u8], what: &str| String::from_utf8_lossy(data).contains(what);
    if !has_block(&cert_pem, "-----BEGIN CERTIFICATE-----") {
        return Err(CliError::msg(
            "tls: failed to find any PEM data in certificate input",
        ));
    }
    if !has_block(&key_pem, "PRIVATE KEY-----") {
        return Err(CliError::msg(
            "tls: failed to find any PEM data in key input",
        ));
    }
    let data = BTreeMap::from([
        ("tls.crt".to_string(), cert_pem),
        ("tls.key".to_string(), key_pem),
    ]);
    Ok(secret(name, "kubernetes.io/tls", &data, append_hash))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn configmap_sources() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        std::fs::write(d.join("a.txt"), "hello").unwrap();
        std::fs::write(d.join("bin"), [0xff, 0xfe]).unwrap();
        std::fs::write(d.join("e.env"), "# c\n\nK1=v1\n  K2=v=2\n").unwrap();
        let src = Sources {
            files: vec![d.to_string_lossy().into_owned()],
            literals: vec!["lit=x=y".into()],
            ..Default::default()
        };
        let cm = configmap("cm", &src).unwrap();
        assert_eq!(
            cm["data"],
            json!({"a.txt": "hello", "e.env": "# c\n\nK1=v1\n  K2=v=2\n", "lit": "x=y"})
        );
        assert_eq!(cm["binaryData"], json!({"bin": "//4="}));
        let env = Sources {
            env_files: vec![d.join("e.env").to_string_lossy().into_owned()],
            ..Default::default()
        };
        assert_eq!(
            configmap("cm", &env).unwrap()["data"],
            json!({"K1": "v1", "K2": "v=2"})
        );
        let dup = Sources {
            literals: vec!["a=1".into(), "a=2".into()],
            ..Default::default()
        };
        assert_eq!(
            configmap("cm", &dup).unwrap_err().to_string(),
            "error: cannot add key \"a\", another key by that name already exists in Data for ConfigMap \"cm\""
        );
        let bad = Sources {
            literals: vec!["a b=1".into()],
            ..Default::default()
        };
        assert!(configmap("cm", &bad).unwrap_err().to_string().starts_with(
            "error: \"a b\" is not a valid key name for a ConfigMap: a valid config key must consist"
        ));
        assert_eq!(
            parse_literal_source("=x").unwrap_err().to_string(),
            "error: invalid literal source =x, expected key=value"
        );
        assert_eq!(
            parse_file_source("k=").unwrap_err().to_string(),
            "error: file path for key name k missing"
        );
        let missing = Sources {
            files: vec!["/nonexistent/zz".into()],
            ..Default::default()
        };
        assert_eq!(
            configmap("cm", &missing).unwrap_err().to_string(),
            "error: error reading /nonexistent/zz: no such file or directory"
        );
        // Empty configmap: no data at all.
        assert!(
            configmap("cm", &Sources::default())
                .unwrap()
                .get("data")
                .is_none()
        );
    }

    #[test]
    fn hashes_as_kubectl() {
        // Upstream's hash_test.go: ConfigMap "" with no data → "42745tchd9"; Secret "" of
        // type "my-type" with no data → "t75bgf6ctb".
        let cm = configmap(
            "",
            &Sources {
                append_hash: true,
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(cm["metadata"]["name"], "-42745tchd9");
        let s = secret("", "my-type", &BTreeMap::new(), true);
        assert_eq!(s["metadata"]["name"], "-t75bgf6ctb");
    }

    #[test]
    fn secrets_as_kubectl() {
        let s = secret_generic(
            "s",
            "",
            &Sources {
                literals: vec!["a=b".into()],
                ..Default::default()
            },
        )
        .unwrap();
        assert_eq!(
            s,
            json!({"kind": "Secret", "apiVersion": "v1",
                   "metadata": {"name": "s", "creationTimestamp": null}, "data": {"a": "Yg=="}})
        );
        let d = secret_docker_registry("d", "u", "p", "e", "r.io", &[], false).unwrap();
        assert_eq!(
            d["data"][".dockerconfigjson"],
            "eyJhdXRocyI6eyJyLmlvIjp7InVzZXJuYW1lIjoidSIsInBhc3N3b3JkIjoicCIsImVtYWlsIjoiZSIsImF1dGgiOiJkVHB3In19fQ=="
        );
        assert_eq!(d["type"], "kubernetes.io/dockerconfigjson");
        assert!(secret_docker_registry("d", "", "p", "", "r.io", &[], false).is_err());
    }
}
