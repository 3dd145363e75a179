//! Upstream's `k8s.io/apimachinery/pkg/util/validation` string checks, the name functions of
//! `pkg/api/validation` (`NameIsDNSSubdomain`, ...) and `pkg/api/validation/path`.
//!
//! Every check returns the list of upstream's messages (empty when valid). Upstream matches
//! anchored regular expressions whose character classes are all ASCII; the matchers below
//! work on bytes, so any non-ASCII byte fails a class just as any non-ASCII rune does in Go,
//! and lengths are byte lengths as Go's `len`.

use crate::status::FieldError;

/// Longest name part of a qualified name (and of a label key).
pub const QUALIFIED_NAME_MAX_LENGTH: usize = 63;
/// `LabelValueMaxLength`.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;
/// `DNS1123LabelMaxLength`.
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// `DNS1123SubdomainMaxLength`.
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// `DNS1035LabelMaxLength`.
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;

const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_UNDERSCORE_ERR_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const WILDCARD_DNS1123_SUBDOMAIN_FMT: &str =
    "\\*\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const WILDCARD_DNS1123_SUBDOMAIN_ERR_MSG: &str = "a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, which must consist of lower case alphanumeric characters, '-' or '.' and end with an alphanumeric character";
const C_IDENTIFIER_FMT: &str = "[A-Za-z_][A-Za-z0-9_]*";
const C_IDENTIFIER_ERR_MSG: &str = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'";
const PERCENT_FMT: &str = "[0-9]+%";
const PERCENT_ERR_MSG: &str =
    "a valid percent string must be a numeric string followed by an ending '%'";
const HTTP_HEADER_NAME_FMT: &str = "[-A-Za-z0-9]+";
const HTTP_HEADER_NAME_ERR_MSG: &str =
    "a valid HTTP header must consist of alphanumeric characters or '-'";
const ENV_VAR_NAME_FMT: &str = "[-._a-zA-Z][-._a-zA-Z0-9]*";
const ENV_VAR_NAME_ERR_MSG: &str = "a valid environment variable name must consist of alphabetic characters, digits, '_', '-', or '.', and must not start with a digit";
const RELAXED_ENV_VAR_NAME_ERR_MSG: &str = "a valid environment variable name must consist only of printable ASCII characters other than '='";
const CONFIG_MAP_KEY_FMT: &str = "[-._a-zA-Z0-9]+";
const CONFIG_MAP_KEY_ERR_MSG: &str =
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
const HTTP_PATH_FMT: &str = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+";

// ---------------------------------------------------------------------------------------
// Message builders (upstream's exported helpers).

/// `MaxLenError`: `must be no more than 63 characters`.
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `RegexError`: the message, examples and the regular expression used.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut out = format!("{msg} (e.g. ");
    for (i, example) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push('\'');
        out.push_str(example);
        out.push_str("', ");
    }
    out.push_str("regex used for validation is '");
    out.push_str(fmt);
    out.push_str("')");
    out
}

/// `EmptyError`: `must be non-empty`.
pub fn empty_error() -> String {
    "must be non-empty".to_string()
}

/// `InclusiveRangeError`: `must be between 1 and 65535, inclusive`.
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

// ---------------------------------------------------------------------------------------
// Byte-level matchers for upstream's anchored regular expressions.

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$`
fn matches_qualified_name(s: &[u8]) -> bool {
    match s {
        [] => false,
        [only] => is_alnum(*only),
        [first, middle @ .., last] => {
            is_alnum(*first)
                && is_alnum(*last)
                && middle
                    .iter()
                    .all(|&b| is_alnum(b) || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

/// `^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns1123_label(s: &[u8]) -> bool {
    match s {
        [] => false,
        [only] => is_lower_alnum(*only),
        [first, middle @ .., last] => {
            is_lower_alnum(*first)
                && is_lower_alnum(*last)
                && middle.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
    }
}

/// `^<label>(\.<label>)*$` with the RFC 1123 label above.
fn matches_dns1123_subdomain(s: &[u8]) -> bool {
    s.split(|&b| b == b'.').all(matches_dns1123_label)
}

/// `^_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`
fn matches_dns1123_label_with_underscore(s: &[u8]) -> bool {
    let s = s.strip_prefix(b"_").unwrap_or(s);
    match s {
        [] => false,
        [only] => is_lower_alnum(*only),
        [first, middle @ .., last] => {
            is_lower_alnum(*first)
                && is_lower_alnum(*last)
                && middle
                    .iter()
                    .all(|&b| is_lower_alnum(b) || b == b'-' || b == b'_')
        }
    }
}

fn matches_dns1123_subdomain_with_underscore(s: &[u8]) -> bool {
    s.split(|&b| b == b'.')
        .all(matches_dns1123_label_with_underscore)
}

/// `^[a-z]([-a-z0-9]*[a-z0-9])?$`
fn matches_dns1035_label(s: &[u8]) -> bool {
    match s {
        [] => false,
        [only] => only.is_ascii_lowercase(),
        [first, middle @ .., last] => {
            first.is_ascii_lowercase()
                && is_lower_alnum(*last)
                && middle.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
    }
}

/// `^[A-Za-z_][A-Za-z0-9_]*$`
fn matches_c_identifier(s: &[u8]) -> bool {
    match s {
        [] => false,
        [first, rest @ ..] => {
            (first.is_ascii_alphabetic() || *first == b'_')
                && rest.iter().all(|&b| is_alnum(b) || b == b'_')
        }
    }
}

/// `^[<class>]+$` for a class given as a predicate.
fn matches_plus(s: &[u8], class: impl Fn(u8) -> bool) -> bool {
    !s.is_empty() && s.iter().all(|&b| class(b))
}

// ---------------------------------------------------------------------------------------
// The checks.

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name part of at most
/// 63 characters that starts and ends with an alphanumeric character.
pub fn is_qualified_name(value: &str) -> Vec<String> {
    qualified_name_errors(value.as_bytes())
}

fn qualified_name_errors(value: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&[u8]> = value.split(|&b| b == b'/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                for msg in dns1123_subdomain_errors(prefix) {
                    errs.push(format!("prefix part {msg}"));
                }
            }
            *name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR_MSG,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > QUALIFIED_NAME_MAX_LENGTH {
        errs.push(format!(
            "name part {}",
            max_len_error(QUALIFIED_NAME_MAX_LENGTH)
        ));
    }
    if !matches_qualified_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR_MSG,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or at most 63 characters that start and end with an
/// alphanumeric character with `-`, `_`, `.` between.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name(value.as_bytes()) {
        errs.push(regex_error(
            LABEL_VALUE_ERR_MSG,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsDNS1123Label`.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    dns1123_label_errors(value.as_bytes())
}

fn dns1123_label_errors(value: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            // A valid subdomain but not a label: with the length checked, it must be dots.
            errs.push("must not contain dots".to_string());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR_MSG,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    dns1123_subdomain_errors(value.as_bytes())
}

fn dns1123_subdomain_errors(value: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1123SubdomainWithUnderscore` (its message names the plain subdomain's regex, as
/// upstream's does).
pub fn is_dns1123_subdomain_with_underscore(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain_with_underscore(value.as_bytes()) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_UNDERSCORE_ERR_MSG,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    dns1035_label_errors(value.as_bytes())
}

fn dns1035_label_errors(value: &[u8]) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_dns1035_label(value) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR_MSG,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsWildcardDNS1123Subdomain`: `*.` followed by a DNS subdomain.
pub fn is_wildcard_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    let ok = value
        .as_bytes()
        .strip_prefix(b"*.")
        .is_some_and(matches_dns1123_subdomain);
    if !ok {
        errs.push(regex_error(
            WILDCARD_DNS1123_SUBDOMAIN_ERR_MSG,
            WILDCARD_DNS1123_SUBDOMAIN_FMT,
            &["*.example.com"],
        ));
    }
    errs
}

/// `IsCIdentifier`: format only, no length limit.
pub fn is_c_identifier(value: &str) -> Vec<String> {
    if matches_c_identifier(value.as_bytes()) {
        Vec::new()
    } else {
        vec![regex_error(
            C_IDENTIFIER_ERR_MSG,
            C_IDENTIFIER_FMT,
            &["my_name", "MY_NAME", "MyName"],
        )]
    }
}

/// `IsValidPortNum`: 1 to 65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsInRange`.
pub fn is_in_range(value: i64, min: i64, max: i64) -> Vec<String> {
    if value >= min && value <= max {
        Vec::new()
    } else {
        vec![inclusive_range_error(min, max)]
    }
}

/// `IsValidGroupID`: 0 to 2^31-1.
pub fn is_valid_group_id(gid: i64) -> Vec<String> {
    is_in_range(gid, 0, i64::from(i32::MAX))
}

/// `IsValidUserID`: 0 to 2^31-1.
pub fn is_valid_user_id(uid: i64) -> Vec<String> {
    is_in_range(uid, 0, i64::from(i32::MAX))
}

/// `IsValidPortName` (IANA service names): at most 15 of `[-a-z0-9]`, at least one letter,
/// no `--`, no leading or trailing `-`.
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let bytes = port.as_bytes();
    let mut errs = Vec::new();
    if bytes.len() > 15 {
        errs.push(max_len_error(15));
    }
    if !matches_plus(bytes, |b| is_lower_alnum(b) || b == b'-') {
        errs.push(
            "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_string(),
        );
    }
    if !bytes.iter().any(u8::is_ascii_lowercase) {
        errs.push("must contain at least one letter (a-z)".to_string());
    }
    if port.contains("--") {
        errs.push("must not contain consecutive hyphens".to_string());
    }
    if bytes.first() == Some(&b'-') || bytes.last() == Some(&b'-') {
        errs.push("must not begin or end with a hyphen".to_string());
    }
    errs
}

/// `IsValidPercent`: digits then `%`.
pub fn is_valid_percent(percent: &str) -> Vec<String> {
    let ok = percent
        .as_bytes()
        .strip_suffix(b"%")
        .is_some_and(|digits| matches_plus(digits, |b| b.is_ascii_digit()));
    if ok {
        Vec::new()
    } else {
        vec![regex_error(PERCENT_ERR_MSG, PERCENT_FMT, &["1%", "93%"])]
    }
}

/// `IsHTTPHeaderName`.
pub fn is_http_header_name(value: &str) -> Vec<String> {
    if matches_plus(value.as_bytes(), |b| is_alnum(b) || b == b'-') {
        Vec::new()
    } else {
        vec![regex_error(
            HTTP_HEADER_NAME_ERR_MSG,
            HTTP_HEADER_NAME_FMT,
            &["X-Header-Name"],
        )]
    }
}

/// `IsEnvVarName`.
pub fn is_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let ok = match value.as_bytes() {
        [] => false,
        [first, rest @ ..] => {
            (first.is_ascii_alphabetic() || matches!(first, b'-' | b'.' | b'_'))
                && rest
                    .iter()
                    .all(|&b| is_alnum(b) || matches!(b, b'-' | b'.' | b'_'))
        }
    };
    if !ok {
        errs.push(regex_error(
            ENV_VAR_NAME_ERR_MSG,
            ENV_VAR_NAME_FMT,
            &["my.env-name", "MY_ENV.NAME", "MyEnvName1"],
        ));
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

/// `IsRelaxedEnvVarName`: printable ASCII other than `=`.
pub fn is_relaxed_env_var_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.is_empty() {
        errs.push(format!("environment variable name {}", empty_error()));
    }
    if value
        .chars()
        .any(|c| !c.is_ascii() || !crate::gofmt::is_print(c) || c == '=')
    {
        errs.push(RELAXED_ENV_VAR_NAME_ERR_MSG.to_string());
    }
    errs
}

/// `IsConfigMapKey`: at most 253 of `[-._a-zA-Z0-9]`, not `.`, `..` or `..`-prefixed.
pub fn is_config_map_key(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_plus(value.as_bytes(), |b| {
        is_alnum(b) || matches!(b, b'-' | b'.' | b'_')
    }) {
        errs.push(regex_error(
            CONFIG_MAP_KEY_ERR_MSG,
            CONFIG_MAP_KEY_FMT,
            &["key.name", "KEY_NAME", "key-name"],
        ));
    }
    errs.extend(has_chdir_prefix(value));
    errs
}

fn has_chdir_prefix(value: &str) -> Option<String> {
    if value == "." {
        Some("must not be '.'".to_string())
    } else if value == ".." {
        Some("must not be '..'".to_string())
    } else if value.starts_with("..") {
        Some("must not start with '..'".to_string())
    } else {
        None
    }
}

/// `IsFullyQualifiedName` (deprecated upstream, still used): a DNS subdomain of at least
/// three segments.
pub fn is_fully_qualified_name(path: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 3 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least three segments separated by dots",
        )];
    }
    Vec::new()
}

/// `IsFullyQualifiedDomainName`: a DNS subdomain of at least two segments, each a DNS
/// label; a trailing `.` is accepted.
pub fn is_fully_qualified_domain_name(path: &str, name: &str) -> Vec<FieldError> {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let errs = is_dns1123_label(label);
        if !errs.is_empty() {
            return vec![FieldError::invalid(path, label, errs.join(","))];
        }
    }
    Vec::new()
}

/// `IsDomainPrefixedPath`: `acme.io/foo`, a DNS subdomain then an HTTP path.
pub fn is_domain_prefixed_path(path: &str, dp_path: &str) -> Vec<FieldError> {
    if dp_path.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let Some((host, rest)) = dp_path
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![FieldError::invalid(
            path,
            dp_path,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Vec<FieldError> = is_dns1123_subdomain(host)
        .into_iter()
        .map(|msg| FieldError::invalid(path, host, msg))
        .collect();
    let path_ok = matches_plus(rest.as_bytes(), |b| {
        is_alnum(b) || b"/-._~%!$&'()*+,;=:".contains(&b)
    });
    if !path_ok {
        errs.push(FieldError::invalid(
            path,
            rest,
            regex_error("Invalid path", HTTP_PATH_FMT, &[]),
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Name functions (`ValidateNameFunc`): `prefix` is true for `generateName`, where a suffix
// will be appended.

/// Upstream's `maskTrailingDash`: for a prefix longer than one byte that ends in `-`, the
/// last *two* bytes are replaced by `a` (upstream's exact behaviour).
fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, [u8]> {
    let bytes = name.as_bytes();
    if bytes.len() > 1 && bytes.ends_with(b"-") {
        let mut masked = bytes[..bytes.len() - 2].to_vec();
        masked.push(b'a');
        std::borrow::Cow::Owned(masked)
    } else {
        std::borrow::Cow::Borrowed(bytes)
    }
}

/// `NameIsDNSSubdomain`: most resources.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_subdomain_errors(&mask_trailing_dash(name))
    } else {
        dns1123_subdomain_errors(name.as_bytes())
    }
}

/// `NameIsDNSLabel`: namespaces, nodes' leases' ... resources named as DNS labels.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1123_label_errors(&mask_trailing_dash(name))
    } else {
        dns1123_label_errors(name.as_bytes())
    }
}

/// `NameIsDNS1035Label`: services.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        dns1035_label_errors(&mask_trailing_dash(name))
    } else {
        dns1035_label_errors(name.as_bytes())
    }
}

/// `ValidateNamespaceName` (= `NameIsDNSLabel`).
pub fn validate_namespace_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_label(name, prefix)
}

/// `ValidateServiceAccountName` (= `NameIsDNSSubdomain`).
pub fn validate_service_account_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_subdomain(name, prefix)
}

/// `path.IsValidPathSegmentName`: not `.` or `..`, no `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    for illegal in [".", ".."] {
        if name == illegal {
            return vec![format!("may not be '{illegal}'")];
        }
    }
    is_valid_path_segment_prefix(name)
}

/// `path.IsValidPathSegmentPrefix`: no `/` or `%`.
pub fn is_valid_path_segment_prefix(name: &str) -> Vec<String> {
    ["/", "%"]
        .iter()
        .filter(|illegal| name.contains(*illegal))
        .map(|illegal| format!("may not contain '{illegal}'"))
        .collect()
}

/// `path.ValidatePathSegmentName`: the rule every object name must meet to be stored.
pub fn validate_path_segment_name(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_valid_path_segment_prefix(name)
    } else {
        is_valid_path_segment_name(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(errs: Vec<String>, v: &str) {
        assert!(errs.is_empty(), "expected {v:?} valid, got {errs:?}");
    }
    fn bad(errs: Vec<String>, v: &str) {
        assert!(!errs.is_empty(), "expected {v:?} invalid");
    }

    #[test]
    fn dns1123_label_upstream_cases() {
        let good = [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
        ];
        for v in good {
            ok(is_dns1123_label(v), v);
        }
        ok(is_dns1123_label(&"a".repeat(63)), "63 a");
        let bad_values = [
            "", "A", "ABC", "aBc", "A1", "A-1", "1-A", "-", "a-", "-a", "1-", "-1", "_", "a_",
            "_a", "a_b", "1_", "_1", "1_2", ".", "a.", ".a", "a.b", "1.", ".1", "1.2", " ", "a ",
            " a", "a b", "1 ", " 1", "1 2",
        ];
        for v in bad_values {
            bad(is_dns1123_label(v), v);
        }
        assert_eq!(
            is_dns1123_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert_eq!(
            is_dns1123_label("A"),
            vec![
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn dns1123_subdomain_upstream_cases() {
        let good = [
            "a",
            "ab",
            "abc",
            "a1",
            "a-1",
            "a--1--2--b",
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "a.a",
            "ab.a",
            "abc.a",
            "a1.a",
            "a-1.a",
            "a--1--2--b.a",
            "a.1",
            "ab.1",
            "abc.1",
            "a1.1",
            "a-1.1",
            "a--1--2--b.1",
            "0.a",
            "01.a",
            "012.a",
            "1a.a",
            "1-a.a",
            "0.1",
            "01.1",
            "012.1",
            "1a.1",
            "1-a.1",
            "1--a--b--2.1",
            "a.b.c.d.e",
            "aa.bb.cc.dd.ee",
            "1.2.3.4.5",
            "11.22.33.44.55",
        ];
        for v in good {
            ok(is_dns1123_subdomain(v), v);
        }
        ok(is_dns1123_subdomain(&"a".repeat(253)), "253 a");
        let bad_values = [
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a..b",
            "1.",
            ".1",
            "1..2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
            "A.a",
            "aB.a",
            "ab.A",
            "A1.a",
            "a1.A",
            "A.1",
            "aB.1",
            "A1.1",
            "1A.1",
            "0.A",
            "01.A",
            "012.A",
            "1A.a",
            "1a.A",
            "A.B.C.D.E",
            "AA.BB.CC.DD.EE",
            "a.B.c.d.e",
            "aa.bB.cc.dd.ee",
            "a@b",
            "a,b",
            "a_b",
            "a;b",
            "a:b",
            "a%b",
            "a?b",
            "a$b",
            "a\n",
            "é",
        ];
        for v in bad_values {
            bad(is_dns1123_subdomain(v), v);
        }
        assert_eq!(
            is_dns1123_subdomain(&"a".repeat(254)),
            vec!["must be no more than 253 characters"]
        );
        assert_eq!(
            is_dns1123_subdomain("Foo"),
            vec![
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        ok(
            is_dns1123_subdomain_with_underscore("_a._b-c_d.e"),
            "underscore",
        );
        bad(is_dns1123_subdomain_with_underscore("a_"), "a_");
        bad(is_dns1123_subdomain_with_underscore("__a"), "__a");
    }

    #[test]
    fn dns1035_label_upstream_cases() {
        for v in ["a", "ab", "abc", "a1", "a-1", "a--1--2--b"] {
            ok(is_dns1035_label(v), v);
        }
        ok(is_dns1035_label(&"a".repeat(63)), "63 a");
        let bad_values = [
            "0",
            "01",
            "012",
            "1a",
            "1-a",
            "1--a--b--2",
            "",
            "A",
            "ABC",
            "aBc",
            "A1",
            "A-1",
            "1-A",
            "-",
            "a-",
            "-a",
            "1-",
            "-1",
            "_",
            "a_",
            "_a",
            "a_b",
            "1_",
            "_1",
            "1_2",
            ".",
            "a.",
            ".a",
            "a.b",
            "1.",
            ".1",
            "1.2",
            " ",
            "a ",
            " a",
            "a b",
            "1 ",
            " 1",
            "1 2",
        ];
        for v in bad_values {
            bad(is_dns1035_label(v), v);
        }
        assert_eq!(
            is_dns1035_label(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(
            is_dns1035_label("1a"),
            vec![
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
            ]
        );
    }

    #[test]
    fn c_identifier_upstream_cases() {
        for v in [
            "a",
            "ab",
            "abc",
            "a1",
            "_a",
            "a_",
            "a_b",
            "a_1",
            "a__1__2__b",
            "__abc_123",
            "A",
            "AB",
            "AbC",
            "A1",
            "_A",
            "A_",
            "A_B",
            "A_1",
            "A__1__2__B",
            "__123_ABC",
        ] {
            ok(is_c_identifier(v), v);
        }
        for v in [
            "", "1", "123", "1a", "-", "a-", "-a", "1-", "-1", "1_", "1_2", ".", "a.", ".a", "a.b",
            "1.", ".1", "1.2", " ", "a ", " a", "a b", "1 ", " 1", "1 2", "#a#",
        ] {
            bad(is_c_identifier(v), v);
        }
    }

    #[test]
    fn numbers() {
        for v in [1, 2, 1000, 16384, 32768, 65535] {
            assert!(is_valid_port_num(v).is_empty());
        }
        for v in [0, -1, 65536, 100000] {
            assert_eq!(
                is_valid_port_num(v),
                vec!["must be between 1 and 65535, inclusive"]
            );
        }
        assert!(is_in_range(1, 0, 10).is_empty());
        assert!(is_in_range(25, 10, 25).is_empty());
        assert!(!is_in_range(5, -4, 2).is_empty());
        for v in [0, 1, 1000, 65535, 2147483647] {
            assert!(is_valid_group_id(v).is_empty());
            assert!(is_valid_user_id(v).is_empty());
        }
        for v in [-1, -1003, 2147483648, 4147483647] {
            assert_eq!(
                is_valid_user_id(v),
                vec!["must be between 0 and 2147483647, inclusive"]
            );
            assert!(!is_valid_group_id(v).is_empty());
        }
    }

    #[test]
    fn port_names() {
        for v in [
            "telnet",
            "re-mail-ck",
            "pop3",
            "a",
            "a-1",
            "1-a",
            "a-1-b-2-c",
            "1-a-2-b-3",
        ] {
            ok(is_valid_port_name(v), v);
        }
        for v in [
            "longerthan15characters",
            "",
            "aaaaaaaaaaaaaaaa",
            "12345",
            "1-2-3-4",
            "-begin",
            "end-",
            "two--hyphens",
            "whois++",
        ] {
            bad(is_valid_port_name(v), v);
        }
        assert_eq!(
            is_valid_port_name("-A-"),
            vec![
                "must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)",
                "must contain at least one letter (a-z)",
                "must not begin or end with a hyphen",
            ]
        );
    }

    #[test]
    fn qualified_names_upstream_cases() {
        let good = [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "now-with-dashes/simple",
            "now-with-dashes/now-with-dashes",
            "now.with.dots/simple",
            "now-with.dashes-and.dots/simple",
            "1-num.2-num/3-num",
            "1234/5678",
            "1.2.3.4/5678",
            "Uppercase_Is_OK_123",
            "example.com/Uppercase_Is_OK_123",
            "requests.storage-foo",
        ];
        for v in good {
            ok(is_qualified_name(v), v);
        }
        ok(is_qualified_name(&"a".repeat(63)), "63");
        ok(
            is_qualified_name(&format!("{}/{}", "a".repeat(253), "b".repeat(63))),
            "253/63",
        );
        let bad_values = [
            "nospecialchars%^=@",
            "cantendwithadash-",
            "-cantstartwithadash-",
            "only/one/slash",
            "Example.com/abc",
            "example_com/abc",
            "example.com/",
            "/simple",
        ];
        for v in bad_values {
            bad(is_qualified_name(v), v);
        }
        bad(is_qualified_name(&"a".repeat(64)), "64");
        bad(
            is_qualified_name(&format!("{}/abc", "a".repeat(254))),
            "254/",
        );
        assert_eq!(
            is_qualified_name("a/b/c"),
            vec![
                "a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            ]
        );
        assert_eq!(
            is_qualified_name("/x"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(
            is_qualified_name("x/"),
            vec![
                "name part must be non-empty",
                "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
            ]
        );
        assert_eq!(
            is_qualified_name(&"a".repeat(64)),
            vec!["name part must be no more than 63 characters"]
        );
        assert_eq!(
            is_qualified_name("Ab_/x"),
            vec![
                "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
    }

    #[test]
    fn label_values_upstream_cases() {
        for v in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "end-with-num-1",
            "1234",
            "",
        ] {
            ok(is_valid_label_value(v), v);
        }
        ok(is_valid_label_value(&"a".repeat(63)), "63");
        for v in [
            "nospecialchars%^=@",
            "Tama-nui-te-rā.is.Māori.sun",
            "\\backslashes\\are\\bad",
            "-starts-with-dash",
            "ends-with-dash-",
            ".starts.with.dot",
            "ends.with.dot.",
        ] {
            bad(is_valid_label_value(v), v);
        }
        assert_eq!(
            is_valid_label_value(&"a".repeat(64)),
            vec!["must be no more than 63 characters"]
        );
        assert_eq!(
            is_valid_label_value("-a"),
            vec![
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
            ]
        );
    }

    #[test]
    fn header_percent_env_configmap() {
        for v in [
            "Accept-Encoding",
            "Host",
            "If-Modified-Since",
            "X-Forwarded-For",
            "a",
            "-a",
            "a-",
            "--abc-123",
            "A--1--2--B",
        ] {
            ok(is_http_header_name(v), v);
        }
        for v in [
            "Host:",
            "X-Forwarded-For:",
            "X-@Home",
            "",
            "_",
            "a_",
            "a.b",
            " ",
            "a b",
            "#a#",
            "^",
            ",",
            ";",
            "=",
            "<",
            "?",
            "@",
            "{",
        ] {
            bad(is_http_header_name(v), v);
        }
        for v in ["0%", "00000%", "1%", "01%", "99%", "100%", "101%"] {
            ok(is_valid_percent(v), v);
        }
        for v in [
            "", "0", "100", "0.0%", "99.9%", "hundred", " 1%", "1% ", "-0%", "-1%", "+1%", "%",
        ] {
            bad(is_valid_percent(v), v);
        }
        for v in [
            "a",
            "good",
            "good-good",
            "still.good",
            "this.is.also.good",
            ".so.is.this",
            "THIS_IS_GOOD",
            "so_is_this_17",
        ] {
            ok(is_config_map_key(v), v);
        }
        for v in [".", "..", "..bad", "b*d", "bad!&bad"] {
            bad(is_config_map_key(v), v);
        }
        assert_eq!(is_config_map_key(".."), vec!["must not be '..'"]);
        ok(is_env_var_name("my.env-name"), "env");
        ok(is_env_var_name("-x"), "env");
        bad(is_env_var_name("1x"), "env");
        assert_eq!(is_env_var_name("..a"), vec!["must not start with '..'"]);
        ok(is_relaxed_env_var_name("1 x"), "relaxed");
        assert_eq!(
            is_relaxed_env_var_name(""),
            vec!["environment variable name must be non-empty"]
        );
        bad(is_relaxed_env_var_name("a=b"), "relaxed");
        bad(is_relaxed_env_var_name("a\tb"), "relaxed");
        bad(is_relaxed_env_var_name("é"), "relaxed");
    }

    #[test]
    fn wildcard_and_domains() {
        for v in ["*.example.com", "*.bar.com", "*.foo.bar.com"] {
            ok(is_wildcard_dns1123_subdomain(v), v);
        }
        for v in ["*.*.bar.com", "*.foo.*.com", "*bar.com", "f*.bar.com", "*"] {
            bad(is_wildcard_dns1123_subdomain(v), v);
        }
        for v in [
            "a.com",
            "k8s.io",
            "dev.k8s.io",
            "dev.k8s.io.",
            "foo.example.com",
            "10.0.0.1",
            "hyphens-are-good.k8s.io",
        ] {
            assert!(is_fully_qualified_domain_name("", v).is_empty(), "{v}");
        }
        for v in [
            ".",
            "...",
            ".io",
            "com",
            ".com",
            "Dev.k8s.io",
            ".foo.example.com",
            "a..b",
        ] {
            assert!(!is_fully_qualified_domain_name("", v).is_empty(), "{v}");
        }
        assert_eq!(
            is_fully_qualified_domain_name("spec.host", "com")[0].to_string(),
            "spec.host: Invalid value: \"com\": should be a domain with at least two segments separated by dots"
        );
        let long_label = format!("{}.k8s.io", "a".repeat(64));
        assert!(!is_fully_qualified_domain_name("", &long_label).is_empty());
        assert!(is_fully_qualified_name("p", "a.b.c").is_empty());
        assert_eq!(
            is_fully_qualified_name("p", "a.b")[0].to_string(),
            "p: Invalid value: \"a.b\": should be a domain with at least three segments separated by dots"
        );
        assert_eq!(
            is_fully_qualified_name("p", "")[0].to_string(),
            "p: Required value"
        );
        assert!(is_domain_prefixed_path("p", "acme.io/foo").is_empty());
        assert_eq!(
            is_domain_prefixed_path("p", "acme.io")[0].to_string(),
            "p: Invalid value: \"acme.io\": must be a domain-prefixed path (such as \"acme.io/foo\")"
        );
        assert_eq!(
            is_domain_prefixed_path("p", "acme.io/a b")[0].to_string(),
            "p: Invalid value: \"a b\": Invalid path (regex used for validation is '[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+')"
        );
        assert_eq!(is_domain_prefixed_path("p", "Acme/x").len(), 1);
    }

    #[test]
    fn name_functions() {
        assert!(name_is_dns_subdomain("foo-", true).is_empty());
        assert!(!name_is_dns_subdomain("foo-", false).is_empty());
        assert!(name_is_dns_label("a-", true).is_empty());
        assert!(name_is_dns1035_label("ab-", true).is_empty());
        // Upstream's maskTrailingDash drops two bytes: "1-" becomes "a", valid for 1035.
        assert!(name_is_dns1035_label("1-", true).is_empty());
        assert!(!name_is_dns1035_label("1", true).is_empty());
        // A single "-" is not masked.
        assert!(!name_is_dns_subdomain("-", true).is_empty());
        // The cut may split a multi-byte character: no panic, still invalid.
        assert!(!name_is_dns_subdomain("aé-", true).is_empty());
        assert!(!name_is_dns_label("é-", true).is_empty());
        assert_eq!(
            validate_namespace_name("a.b", false),
            vec!["must not contain dots"]
        );
        assert!(validate_service_account_name("a.b", false).is_empty());
    }

    #[test]
    fn path_segments() {
        assert_eq!(
            validate_path_segment_name(".", false),
            vec!["may not be '.'"]
        );
        assert_eq!(
            validate_path_segment_name("..", false),
            vec!["may not be '..'"]
        );
        assert!(validate_path_segment_name("..", true).is_empty());
        assert_eq!(
            validate_path_segment_name("a/b%c", false),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert_eq!(
            validate_path_segment_name("a%", true),
            vec!["may not contain '%'"]
        );
        assert!(validate_path_segment_name("Any thing: ok!", false).is_empty());
    }
}
