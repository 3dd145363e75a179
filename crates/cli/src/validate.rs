//! Client-side validation: the checks kubectl makes before it sends anything, with its
//! wording. A failure here ends the command with exit code 1 and no request.
//!
//! What kubectl 1.33 checks on the client (and so do we): image references against
//! `distribution/reference`'s grammar (`Invalid image name "NGINX": invalid reference
//! format`), required flags and the NAME argument, `--labels`/`--selector` syntax,
//! `--env` names (`IsEnvVarName`), `--annotations` pairs, `--restart` and
//! `--image-pull-policy` values, `--port` numbers, ConfigMap/Secret keys
//! (`IsConfigMapKey`), service port pairs, and the flag combinations each generator
//! refuses. What it leaves to the server (object names, label key/value syntax, negative
//! replicas, cron schedules) we leave to the server too, so the messages and the
//! `--dry-run=client` output stay kubectl's.

use std::collections::BTreeMap;

use crate::error::{CliError, Result};

/// `reference.ErrReferenceInvalidFormat`'s text.
pub const INVALID_REFERENCE_FORMAT: &str = "invalid reference format";

/// Whether `s` matches `distribution/reference`'s `ReferenceRegexp` (anchored):
/// `[domain[:port]/]path[/path…][:tag][@digest]`.
pub fn is_valid_image_reference(s: &str) -> bool {
    let (rest, digest) = match s.split_once('@') {
        Some((r, d)) => (r, Some(d)),
        None => (s, None),
    };
    if let Some(d) = digest
        && !is_digest(d)
    {
        return false;
    }
    // A tag can only follow the last path component (no component holds ':' or '/'),
    // so split the last component at its first ':'.
    let last_start = rest.rfind('/').map(|i| i + 1).unwrap_or(0);
    let (name, tag) = match rest[last_start..].find(':') {
        Some(i) => (&rest[..last_start + i], Some(&rest[last_start + i + 1..])),
        None => (rest, None),
    };
    if let Some(t) = tag
        && !is_tag(t)
    {
        return false;
    }
    let components: Vec<&str> = name.split('/').collect();
    let without_domain = components.iter().all(|c| is_path_component(c));
    let with_domain = components.len() > 1
        && is_domain_and_port(components[0])
        && components[1..].iter().all(|c| is_path_component(c));
    without_domain || with_domain
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]+(?:(?:[._]|__|[-]+)[a-z0-9]+)*`
fn is_path_component(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    let alnum_run = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && is_lower_alnum(b[*i]) {
            *i += 1;
        }
        *i > start
    };
    if !alnum_run(&mut i) {
        return false;
    }
    while i < b.len() {
        // A separator: one '.', one '_', "__", or any run of '-'.
        match b[i] {
            b'.' => i += 1,
            b'_' => {
                i += 1;
                if i < b.len() && b[i] == b'_' {
                    i += 1;
                }
            }
            b'-' => {
                while i < b.len() && b[i] == b'-' {
                    i += 1;
                }
            }
            _ => return false,
        }
        if !alnum_run(&mut i) {
            return false;
        }
    }
    true
}

/// `(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])`
fn is_domain_name_component(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'-')
}

/// `(?:domainName|\[[a-fA-F0-9:]+\])(?::[0-9]+)?`
fn is_domain_and_port(s: &str) -> bool {
    let (host, port) = if s.starts_with('[') {
        match s.find(']') {
            Some(i) => {
                let after = &s[i + 1..];
                let port = match after.strip_prefix(':') {
                    Some(p) => Some(p),
                    None if after.is_empty() => None,
                    None => return false,
                };
                (&s[..=i], port)
            }
            None => return false,
        }
    } else {
        match s.split_once(':') {
            Some((h, p)) => (h, Some(p)),
            None => (s, None),
        }
    };
    if let Some(p) = port
        && (p.is_empty() || !p.bytes().all(|c| c.is_ascii_digit()))
    {
        return false;
    }
    if let Some(inner) = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        return !inner.is_empty() && inner.bytes().all(|c| c.is_ascii_hexdigit() || c == b':');
    }
    host.split('.').all(is_domain_name_component)
}

/// `[\w][\w.-]{0,127}`
fn is_tag(s: &str) -> bool {
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 128
        && word(b[0])
        && b[1..].iter().all(|&c| word(c) || c == b'.' || c == b'-')
}

/// `[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*[:][[:xdigit:]]{32,}`
fn is_digest(s: &str) -> bool {
    let Some((algo, hex)) = s.split_once(':') else {
        return false;
    };
    if hex.len() < 32 || !hex.bytes().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    algo.split(['-', '_', '+', '.']).all(|part| {
        let b = part.as_bytes();
        !b.is_empty() && b[0].is_ascii_alphabetic() && b.iter().all(u8::is_ascii_alphanumeric)
    })
}

/// `run`'s image check: `--image is required`, then the reference grammar.
pub fn image_for_run(image: &str) -> Result<()> {
    if image.is_empty() {
        return Err(CliError::msg("--image is required"));
    }
    if !is_valid_image_reference(image) {
        return Err(CliError::msg(format!(
            "Invalid image name \"{image}\": {INVALID_REFERENCE_FORMAT}"
        )));
    }
    Ok(())
}

/// kubectl's `generate.ParseLabels` (`a=b,c=d`; no key/value syntax checks, those are the
/// server's).
pub fn parse_labels(spec: &str) -> Result<BTreeMap<String, String>> {
    if spec.is_empty() {
        return Err(CliError::msg("no label spec passed"));
    }
    let mut labels = BTreeMap::new();
    for item in spec.split(',') {
        let parts: Vec<&str> = item.split('=').collect();
        if parts.len() != 2 {
            return Err(CliError::msg(format!("unexpected label spec: {item}")));
        }
        if parts[0].is_empty() {
            return Err(CliError::msg("unexpected empty label key"));
        }
        labels.insert(parts[0].to_string(), parts[1].to_string());
    }
    Ok(labels)
}

/// kubectl's `parseEnvs`: `NAME=value`, NAME an `IsEnvVarName`.
pub fn parse_envs(envs: &[String]) -> Result<Vec<(String, String)>> {
    envs.iter()
        .map(|env| {
            let bad = || CliError::msg(format!("invalid env: {env}"));
            let (name, value) = env.split_once('=').ok_or_else(bad)?;
            if name.is_empty() || !api::validation::names::is_env_var_name(name).is_empty() {
                return Err(bad());
            }
            Ok((name.to_string(), value.to_string()))
        })
        .collect()
}

/// kubectl's `cmdutil.ParsePairs(…, "annotations", false)`: `key=value` each (a `key-`
/// removal is not allowed here).
pub fn parse_pairs(pairs: &[String], what: &str) -> Result<BTreeMap<String, String>> {
    let mut out = BTreeMap::new();
    for p in pairs {
        match p.split_once('=') {
            Some((k, v)) if !k.is_empty() => {
                out.insert(k.to_string(), v.to_string());
            }
            _ => return Err(CliError::msg(format!("invalid {what} format: {p}"))),
        }
    }
    Ok(out)
}

/// `run --restart`: one of `Always`, `OnFailure`, `Never` (empty: `Always`, or
/// `OnFailure` with `-i`).
pub fn restart_policy(value: &str, interactive: bool) -> Result<&'static str, String> {
    match value {
        "" if interactive => Ok("OnFailure"),
        "" | "Always" => Ok("Always"),
        "OnFailure" => Ok("OnFailure"),
        "Never" => Ok("Never"),
        other => Err(format!("invalid restart policy: {other}")),
    }
}

/// `--image-pull-policy`: empty (server default), `Always`, `IfNotPresent`, `Never`.
pub fn image_pull_policy(value: &str) -> Result<(), String> {
    match value {
        "" | "Always" | "IfNotPresent" | "Never" => Ok(()),
        other => Err(format!("invalid image pull policy: {other}")),
    }
}

/// Go's `strconv.Atoi` and its error text.
pub fn atoi(s: &str) -> Result<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(CliError::msg(format!(
            "strconv.Atoi: parsing \"{s}\": invalid syntax"
        )));
    }
    s.parse::<i64>()
        .map_err(|_| CliError::msg(format!("strconv.Atoi: parsing \"{s}\": value out of range")))
}

/// `IsConfigMapKey` errors joined as kubectl does (`sep` is "," for ConfigMaps, ";" for
/// Secrets).
pub fn config_map_key_errors(key: &str, sep: &str) -> Option<String> {
    let errs = api::validation::names::is_config_map_key(key);
    (!errs.is_empty()).then(|| errs.join(sep))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn image_references_as_distribution_reference() {
        for ok in [
            "nginx",
            "nginx:1.27",
            "nginx:latest",
            "library/nginx",
            "docker.io/library/nginx:1.2.3",
            "localhost:5000/foo/bar:tag",
            "localhost:5000",
            "Registry.Example.COM/ns/app",
            "Upper/app",
            "[::1]:5000/app",
            "a__b/c--d/e.f_g",
            "foo/bar_baz@sha256:0123456789012345678901234567890123456789012345678901234567890123",
            "nginx:1@sha256:01234567890123456789012345678901",
            "my-registry-1.example.com:443/team/app:v1.0-rc_1",
        ] {
            assert!(is_valid_image_reference(ok), "{ok} should be valid");
        }
        for bad in [
            "NGINX",
            "nginx:",
            "nginx:-bad",
            ":tag",
            "nginx@sha256:short",
            "nginx@",
            "a_.b",
            "a___b",
            "-nginx",
            "nginx-",
            "foo//bar",
            "foo/",
            "/foo",
            "upper/App",
            "nginx:1:2",
            "host:port/app",
            "nginx with space",
            "",
        ] {
            assert!(!is_valid_image_reference(bad), "{bad} should be invalid");
        }
        let long_tag = format!("nginx:{}", "a".repeat(128));
        assert!(is_valid_image_reference(&long_tag));
        let too_long = format!("nginx:{}", "a".repeat(129));
        assert!(!is_valid_image_reference(&too_long));
    }

    #[test]
    fn run_image_messages() {
        assert_eq!(
            image_for_run("NGINX").unwrap_err().to_string(),
            "error: Invalid image name \"NGINX\": invalid reference format"
        );
        assert_eq!(
            image_for_run("").unwrap_err().to_string(),
            "error: --image is required"
        );
        image_for_run("nginx:1.27").unwrap();
    }

    #[test]
    fn labels_envs_pairs() {
        assert_eq!(
            parse_labels("a=b,c=d")
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>(),
            vec![("a".into(), "b".into()), ("c".into(), "d".into())]
        );
        assert_eq!(
            parse_labels("a").unwrap_err().to_string(),
            "error: unexpected label spec: a"
        );
        assert_eq!(
            parse_labels("=b").unwrap_err().to_string(),
            "error: unexpected empty label key"
        );
        assert_eq!(
            parse_labels("a=b=c").unwrap_err().to_string(),
            "error: unexpected label spec: a=b=c"
        );
        assert_eq!(
            parse_envs(&["A=b=c".into()]).unwrap(),
            vec![("A".into(), "b=c".into())]
        );
        for bad in ["1A=b", "A", "=x"] {
            assert_eq!(
                parse_envs(&[bad.into()]).unwrap_err().to_string(),
                format!("error: invalid env: {bad}")
            );
        }
        assert_eq!(
            parse_pairs(&["foo".into()], "annotations")
                .unwrap_err()
                .to_string(),
            "error: invalid annotations format: foo"
        );
    }

    #[test]
    fn policies_and_numbers() {
        assert_eq!(restart_policy("", false), Ok("Always"));
        assert_eq!(restart_policy("", true), Ok("OnFailure"));
        assert_eq!(restart_policy("Never", false), Ok("Never"));
        assert_eq!(
            restart_policy("Sometimes", false),
            Err("invalid restart policy: Sometimes".into())
        );
        assert!(image_pull_policy("IfNotPresent").is_ok());
        assert_eq!(
            image_pull_policy("Foo"),
            Err("invalid image pull policy: Foo".into())
        );
        assert_eq!(atoi("80").unwrap(), 80);
        assert_eq!(
            atoi("abc").unwrap_err().to_string(),
            "error: strconv.Atoi: parsing \"abc\": invalid syntax"
        );
        assert!(config_map_key_errors("a b", ",").is_some());
        assert!(config_map_key_errors("a.b", ",").is_none());
    }
}
