//! Key and prefix rules shared by every backend.

use crate::{Result, StoreError};

/// The longest key the store accepts (etcd has no fixed limit; upstream names are at most
/// 253 characters, so real keys stay far below this).
pub const MAX_KEY_BYTES: usize = 4096;

fn check_common(key: &str) -> Result<()> {
    let invalid = |reason| {
        Err(StoreError::InvalidKey {
            key: key.chars().take(128).collect(),
            reason,
        })
    };
    if key.is_empty() {
        return invalid("must not be empty");
    }
    if !key.starts_with('/') {
        return invalid("must start with '/'");
    }
    if key.len() > MAX_KEY_BYTES {
        return invalid("longer than 4096 bytes");
    }
    if key.chars().any(|c| c.is_control()) {
        return invalid("must not contain control characters");
    }
    if key.split('/').any(|seg| seg == "." || seg == "..") {
        return invalid("must not contain '.' or '..' segments");
    }
    Ok(())
}

/// Checks a key that names one object: absolute, no control characters, no `.`/`..`
/// segments, no trailing or doubled `/`.
pub fn validate_key(key: &str) -> Result<()> {
    check_common(key)?;
    if key.ends_with('/') || key.contains("//") {
        return Err(StoreError::InvalidKey {
            key: key.chars().take(128).collect(),
            reason: "must not end with '/' or contain an empty segment",
        });
    }
    Ok(())
}

/// Checks a list/watch prefix: absolute, no control characters.
pub fn validate_prefix(prefix: &str) -> Result<()> {
    check_common(prefix)
}

/// The smallest string greater than every string that starts with `prefix`: the prefix with
/// its last character incremented (UTF-8 byte order equals code point order, so this is the
/// exclusive upper bound of the prefix's range). `None` when no such bound exists.
pub fn prefix_end(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        let mut next = last as u32 + 1;
        if (0xD800..=0xDFFF).contains(&next) {
            next = 0xE000;
        }
        if let Some(c) = char::from_u32(next) {
            chars.push(c);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys() {
        assert!(validate_key("/registry/pods/default/nginx").is_ok());
        for bad in [
            "",
            "registry/pods",
            "/registry/pods/",
            "/a//b",
            "/a/../b",
            "/a/./b",
            "/a/\0b",
            "/a/\nb",
        ] {
            assert!(
                matches!(validate_key(bad), Err(StoreError::InvalidKey { .. })),
                "{bad:?} should be refused"
            );
        }
        assert!(validate_key(&format!("/{}", "x".repeat(MAX_KEY_BYTES))).is_err());
        assert!(validate_prefix("/registry/pods/").is_ok());
        assert!(validate_prefix("/").is_ok());
        assert!(validate_prefix("pods/").is_err());
    }

    #[test]
    fn prefix_ends() {
        assert_eq!(prefix_end("/a/").as_deref(), Some("/a0"));
        assert_eq!(prefix_end("/a/b").as_deref(), Some("/a/c"));
        assert_eq!(prefix_end("/\u{D7FF}").as_deref(), Some("/\u{E000}"));
        assert_eq!(prefix_end("/x\u{10FFFF}").as_deref(), Some("/y"));
        assert_eq!(prefix_end(""), None);
        let p = "/registry/pods/";
        let end = prefix_end(p).unwrap_or_default();
        for k in [
            "/registry/pods/a",
            "/registry/pods/\u{10FFFF}",
            "/registry/pods/~~",
        ] {
            assert!(k >= p && k < end.as_str());
        }
        assert!("/registry/pods0" >= end.as_str());
    }
}

#[cfg(test)]
mod props {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every string that starts with the prefix sorts inside `[prefix, prefix_end)`, and
        /// the bound itself does not start with the prefix.
        #[test]
        fn prefix_end_bounds_the_range(prefix in "/[a-z\u{80}-\u{10FFFF}/]{0,8}", rest in ".{0,8}") {
            let end = prefix_end(&prefix).unwrap_or_default();
            let key = format!("{prefix}{rest}");
            prop_assert!(key.as_str() >= prefix.as_str());
            prop_assert!(key.as_str() < end.as_str());
            prop_assert!(!end.starts_with(&prefix));
        }

        /// Validation never panics, and what it accepts is a well-formed absolute key.
        #[test]
        fn validate_key_total(key in ".{0,64}") {
            if validate_key(&key).is_ok() {
                prop_assert!(key.starts_with('/'));
                prop_assert!(!key.ends_with('/'));
                prop_assert!(!key.chars().any(char::is_control));
            }
        }
    }
}
