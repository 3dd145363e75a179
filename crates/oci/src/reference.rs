//! Image references, normalized as Docker and containerd's CRI do
//! (`nginx` → `docker.io/library/nginx:latest`).

use crate::Error;

/// Returns the full form of an image reference: a registry domain (`docker.io` when the
/// first component is not one: no `.`, no `:`, not `localhost`), `library/` for single
/// component Docker Hub names, and `:latest` when neither a tag nor a digest is given.
pub fn normalize_reference(reference: &str) -> Result<String, Error> {
    let invalid = |reason: &str| Error::InvalidReference {
        reference: reference.to_string(),
        reason: reason.to_string(),
    };
    if reference.is_empty() {
        return Err(invalid("empty"));
    }
    if reference
        .chars()
        .any(|c| c.is_whitespace() || c.is_control())
    {
        return Err(invalid("contains whitespace"));
    }
    // Split off a digest, then a tag (a ':' after the last '/').
    let (name_tag, digest) = match reference.split_once('@') {
        Some((n, d)) => (n, Some(d)),
        None => (reference, None),
    };
    if let Some(d) = digest {
        let Some((alg, hex)) = d.split_once(':') else {
            return Err(invalid("digest must be ALGORITHM:HEX"));
        };
        if alg.is_empty() || hex.is_empty() || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(invalid("digest must be ALGORITHM:HEX"));
        }
    }
    let last_slash = name_tag.rfind('/').map_or(0, |i| i + 1);
    let (name, tag) = match name_tag[last_slash..].rfind(':') {
        Some(i) => (
            &name_tag[..last_slash + i],
            Some(&name_tag[last_slash + i + 1..]),
        ),
        None => (name_tag, None),
    };
    if let Some(t) = tag {
        let valid = !t.is_empty()
            && t.len() <= 128
            && t.chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-'))
            && !t.starts_with(['.', '-']);
        if !valid {
            return Err(invalid("invalid tag"));
        }
    }
    let mut parts: Vec<&str> = name.split('/').collect();
    let domain = if parts.len() > 1
        && (parts[0].contains('.') || parts[0].contains(':') || parts[0] == "localhost")
    {
        parts.remove(0).to_string()
    } else {
        "docker.io".to_string()
    };
    if parts.iter().any(|p| {
        p.is_empty()
            || !p.chars().all(|c| {
                c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '_' | '-')
            })
            || !p.starts_with(|c: char| c.is_ascii_alphanumeric())
            || !p.ends_with(|c: char| c.is_ascii_alphanumeric())
    }) {
        return Err(invalid(
            "repository path components must be lowercase letters, digits and separators",
        ));
    }
    if domain == "docker.io" && parts.len() == 1 {
        parts.insert(0, "library");
    }
    let mut out = format!("{domain}/{}", parts.join("/"));
    match (tag, digest) {
        (Some(t), _) => {
            out.push(':');
            out.push_str(t);
        }
        (None, None) => out.push_str(":latest"),
        (None, Some(_)) => {}
    }
    if let Some(d) = digest {
        out.push('@');
        out.push_str(d);
    }
    Ok(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn normalizes_like_docker() {
        let cases = [
            ("nginx", "docker.io/library/nginx:latest"),
            ("nginx:1.22", "docker.io/library/nginx:1.22"),
            ("rkube/pause:3.10", "docker.io/rkube/pause:3.10"),
            (
                "docker.io/library/nginx:latest",
                "docker.io/library/nginx:latest",
            ),
            ("localhost/foo", "localhost/foo:latest"),
            ("127.0.0.1:5000/a/b:c", "127.0.0.1:5000/a/b:c"),
            ("registry.k8s.io/pause:3.10", "registry.k8s.io/pause:3.10"),
            (
                "busybox@sha256:abcdef",
                "docker.io/library/busybox@sha256:abcdef",
            ),
            ("a/b/c:1-r2", "docker.io/a/b/c:1-r2"),
        ];
        for (input, want) in cases {
            assert_eq!(normalize_reference(input).unwrap(), want, "{input}");
        }
    }

    #[test]
    fn rejects_invalid_references() {
        for bad in [
            "",
            "Nginx",
            "nginx:",
            "nginx:-x",
            "a//b",
            "nginx latest",
            "x@sha256",
            "/abs",
        ] {
            assert!(normalize_reference(bad).is_err(), "{bad:?} accepted");
        }
    }
}
