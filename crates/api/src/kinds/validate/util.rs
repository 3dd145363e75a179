//! Shared pieces of the per-kind validators: field paths, total accessors on JSON values,
//! and the string validators of `k8s.io/apimachinery/pkg/util/validation` with upstream's
//! messages.

use std::collections::BTreeMap;
use std::fmt;

use serde_json::{Map, Value};

use crate::status::{FieldError, FieldErrorType};

pub(crate) type Errs = Vec<FieldError>;

/// A field path as upstream's `field.Path` prints it: `spec.containers[0].ports[1]`,
/// map keys as `data[key]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct P(String);

impl P {
    pub(crate) fn new(s: &str) -> P {
        P(s.to_string())
    }

    /// The empty path (used for errors about the whole object).
    pub(crate) fn root() -> P {
        P(String::new())
    }

    pub(crate) fn child(&self, name: &str) -> P {
        P(crate::validation::objectmeta::child(&self.0, name))
    }

    pub(crate) fn index(&self, i: usize) -> P {
        P(crate::validation::objectmeta::index(&self.0, i))
    }

    pub(crate) fn key(&self, k: &str) -> P {
        P(crate::validation::objectmeta::key(&self.0, k))
    }

    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for P {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&P> for String {
    fn from(p: &P) -> String {
        p.0.clone()
    }
}

impl From<P> for String {
    fn from(p: P) -> String {
        p.0
    }
}

// ---------------------------------------------------------------------------------------
// Field error shorthands.

pub(crate) fn required(p: &P, detail: &str) -> FieldError {
    FieldError::required(p, detail)
}

pub(crate) fn invalid(p: &P, value: impl Into<Value>, detail: &str) -> FieldError {
    FieldError::invalid(p, value, detail)
}

pub(crate) fn forbidden(p: &P, detail: &str) -> FieldError {
    FieldError::forbidden(p, detail)
}

pub(crate) fn duplicate(p: &P, value: impl Into<Value>) -> FieldError {
    FieldError::duplicate(p, value)
}

pub(crate) fn not_found(p: &P, value: impl Into<Value>) -> FieldError {
    FieldError::not_found(p, value)
}

pub(crate) fn not_supported(p: &P, value: impl Into<Value>, valid: &[&str]) -> FieldError {
    FieldError::not_supported(p, value, valid)
}

pub(crate) fn too_many(p: &P, actual: usize, max: usize) -> FieldError {
    FieldError::too_many(p, actual, max)
}

/// `field.TooLong`: `Too long: may not be more than N bytes`.
pub(crate) fn too_long(p: &P, max: usize) -> FieldError {
    FieldError::too_long(p, max)
}

/// The deprecated `field.TooLongMaxLength`: `Too long: may not be longer than N`.
pub(crate) fn too_long_max_length(p: &P, max: usize) -> FieldError {
    FieldError {
        kind: FieldErrorType::TooLong,
        field: p.into(),
        bad_value: None,
        detail: format!("may not be longer than {max}"),
    }
}

/// `field.NotFound` with a detail (upstream sets `Detail` after construction).
pub(crate) fn not_found_detail(p: &P, value: impl Into<Value>, detail: String) -> FieldError {
    FieldError {
        kind: FieldErrorType::NotFound,
        field: p.into(),
        bad_value: Some(value.into()),
        detail,
    }
}

/// `field.Duplicate` with a detail.
pub(crate) fn duplicate_detail(p: &P, value: impl Into<Value>, detail: &str) -> FieldError {
    FieldError {
        kind: FieldErrorType::Duplicate,
        field: p.into(),
        bad_value: Some(value.into()),
        detail: detail.to_string(),
    }
}

pub(crate) const FIELD_IMMUTABLE: &str = "field is immutable";
pub(crate) const IS_NEGATIVE: &str = "must be greater than or equal to 0";

/// `ValidateImmutableField`: `Invalid value: <new>: field is immutable`.
pub(crate) fn immutable(new: Option<&Value>, old: Option<&Value>, p: &P) -> Errs {
    if semantic_eq(new, old) {
        Vec::new()
    } else {
        vec![invalid(
            p,
            new.cloned().unwrap_or(Value::Null),
            FIELD_IMMUTABLE,
        )]
    }
}

/// Equality of two optional JSON values as `apiequality.Semantic.DeepEqual` sees the Go
/// structs they decode to: absent, `null`, empty lists and maps, `""`, `0` and `false`
/// are all the zero value.
pub(crate) fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    fn is_zero(v: Option<&Value>) -> bool {
        match v {
            None | Some(Value::Null) | Some(Value::Bool(false)) => true,
            Some(Value::String(s)) => s.is_empty(),
            Some(Value::Number(n)) => n.as_f64() == Some(0.0),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::Object(m)) => m.values().all(|v| is_zero(Some(v))),
            _ => false,
        }
    }
    fn norm(v: &Value) -> Value {
        match v {
            Value::Object(m) => Value::Object(
                m.iter()
                    .filter(|(_, v)| !is_zero(Some(v)))
                    .map(|(k, v)| (k.clone(), norm(v)))
                    .collect(),
            ),
            Value::Array(a) => Value::Array(a.iter().map(norm).collect()),
            other => other.clone(),
        }
    }
    match (is_zero(a), is_zero(b)) {
        (true, true) => true,
        (false, false) => match (a, b) {
            (Some(x), Some(y)) => norm(x) == norm(y),
            _ => false,
        },
        _ => false,
    }
}

/// `ValidateNonnegativeField`.
pub(crate) fn nonnegative(value: i64, p: &P) -> Errs {
    if value < 0 {
        vec![invalid(p, value, IS_NEGATIVE)]
    } else {
        Vec::new()
    }
}

/// Nonnegative check of an optional integer field.
pub(crate) fn nonnegative_opt(obj: &Value, key: &str, p: &P) -> Errs {
    match int(obj, key) {
        Some(v) => nonnegative(v, &p.child(key)),
        None => Vec::new(),
    }
}

// ---------------------------------------------------------------------------------------
// Total accessors: odd shapes read as absent.

static EMPTY: Vec<Value> = Vec::new();

/// A field that is present and not `null`.
pub(crate) fn get<'a>(v: &'a Value, key: &str) -> Option<&'a Value> {
    match v.get(key) {
        Some(Value::Null) | None => None,
        Some(x) => Some(x),
    }
}

/// A nested field by path of keys.
pub(crate) fn get_in<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a Value> {
    let mut cur = v;
    for k in keys {
        cur = get(cur, k)?;
    }
    Some(cur)
}

/// A string field, `""` when absent or not a string.
pub(crate) fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// A string field when present (even empty).
pub(crate) fn opt_s<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

pub(crate) fn arr<'a>(v: &'a Value, key: &str) -> &'a [Value] {
    v.get(key)
        .and_then(Value::as_array)
        .map_or(&EMPTY[..], Vec::as_slice)
}

pub(crate) fn obj<'a>(v: &'a Value, key: &str) -> Option<&'a Map<String, Value>> {
    v.get(key).and_then(Value::as_object)
}

pub(crate) fn int(v: &Value, key: &str) -> Option<i64> {
    let x = v.get(key)?;
    x.as_i64().or_else(|| {
        x.as_u64()
            .map(|u| i64::try_from(u).unwrap_or(i64::MAX))
            .or_else(|| x.as_f64().map(|f| f as i64))
    })
}

pub(crate) fn boolean(v: &Value, key: &str) -> Option<bool> {
    v.get(key).and_then(Value::as_bool)
}

pub(crate) fn is_true(v: &Value, key: &str) -> bool {
    boolean(v, key) == Some(true)
}

/// Number of entries of a map or list field (0 when absent).
pub(crate) fn len_of(v: &Value, key: &str) -> usize {
    match v.get(key) {
        Some(Value::Object(m)) => m.len(),
        Some(Value::Array(a)) => a.len(),
        _ => 0,
    }
}

/// A `map[string]string` field, in key order (upstream iterates maps in random order;
/// sorted order keeps our errors deterministic).
pub(crate) fn str_map<'a>(v: &'a Value, key: &str) -> BTreeMap<&'a str, &'a str> {
    obj(v, key)
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.as_str(), v.as_str().unwrap_or("")))
                .collect()
        })
        .unwrap_or_default()
}

pub(crate) fn str_list<'a>(v: &'a Value, key: &str) -> Vec<&'a str> {
    arr(v, key)
        .iter()
        .map(|x| x.as_str().unwrap_or(""))
        .collect()
}

/// The value printed for an integer field in errors (`null` when absent).
pub(crate) fn jv(v: &Value, key: &str) -> Value {
    v.get(key).cloned().unwrap_or(Value::Null)
}

// ---------------------------------------------------------------------------------------
// Messages of k8s.io/apimachinery/pkg/util/validation: the shared implementations.

pub(crate) use crate::validation::names::{
    inclusive_range_error, is_config_map_key, is_dns1035_label, is_dns1123_label,
    is_dns1123_subdomain, is_dns1123_subdomain_with_underscore, is_http_header_name,
    is_qualified_name, is_relaxed_env_var_name, is_valid_label_value, is_valid_path_segment_name,
    is_valid_percent, is_valid_port_name, is_valid_port_num, is_valid_user_id, name_is_dns_label,
    name_is_dns_subdomain, name_is_dns1035_label, regex_error,
};

/// `^[A-Za-z0-9/\-._~%!$&'()*+,;=:]+$`
pub(crate) fn is_http_path(v: &str) -> bool {
    !v.is_empty()
        && v.bytes()
            .all(|c| c.is_ascii_alphanumeric() || b"/-._~%!$&'()*+,;=:".contains(&c))
}

/// `IsDomainPrefixedPath`.
pub(crate) fn is_domain_prefixed_path(p: &P, v: &str) -> Errs {
    if v.is_empty() {
        return vec![required(p, "")];
    }
    let Some((host, path)) = v
        .split_once('/')
        .filter(|(h, r)| !h.is_empty() && !r.is_empty())
    else {
        return vec![invalid(
            p,
            v,
            "must be a domain-prefixed path (such as \"acme.io/foo\")",
        )];
    };
    let mut errs: Errs = is_dns1123_subdomain(host)
        .into_iter()
        .map(|m| invalid(p, host, &m))
        .collect();
    if !is_http_path(path) {
        errs.push(invalid(
            p,
            path,
            &regex_error("Invalid path", "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+", &[]),
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Names (k8s.io/apimachinery/pkg/api/validation/generic.go).

/// Each message of a name validator as an `Invalid` error at `p`.
pub(crate) fn name_errs(p: &P, name: &str, msgs: Vec<String>) -> Errs {
    msgs.into_iter().map(|m| invalid(p, name, &m)).collect()
}

/// `ValidateDNS1123Label` as a field error list.
pub(crate) fn dns_label(v: &str, p: &P) -> Errs {
    name_errs(p, v, is_dns1123_label(v))
}

pub(crate) fn dns_subdomain(v: &str, p: &P) -> Errs {
    name_errs(p, v, is_dns1123_subdomain(v))
}

pub(crate) fn qualified_name(v: &str, p: &P) -> Errs {
    name_errs(p, v, is_qualified_name(v))
}

// ---------------------------------------------------------------------------------------
// IP addresses and CIDRs as Go's `netutils.ParseIPSloppy` accepts them (IPv4 octets may
// have leading zeros).

fn parse_ipv4_sloppy(s: &str) -> Option<[u8; 4]> {
    let parts: Vec<&str> = s.split('.').collect();
    if parts.len() != 4 {
        return None;
    }
    let mut out = [0u8; 4];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty() || p.len() > 3 || !p.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        out[i] = p.parse::<u16>().ok().and_then(|n| u8::try_from(n).ok())?;
    }
    Some(out)
}

/// A parsed IP address, IPv4-mapped IPv6 addresses reported as IPv4 (as Go does).
pub(crate) fn parse_ip(s: &str) -> Option<std::net::IpAddr> {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
    if let Some(o) = parse_ipv4_sloppy(s) {
        return Some(IpAddr::V4(Ipv4Addr::from(o)));
    }
    if s.contains('%') {
        return None;
    }
    let v6: Ipv6Addr = s.parse().ok()?;
    Some(match v6.to_ipv4_mapped() {
        Some(v4) => IpAddr::V4(v4),
        None => IpAddr::V6(v6),
    })
}

pub(crate) fn is_ipv6_string(s: &str) -> bool {
    matches!(parse_ip(s), Some(std::net::IpAddr::V6(_)))
}

/// `validation.IsValidIP`.
pub(crate) fn valid_ip(p: &P, v: &str) -> Errs {
    if parse_ip(v).is_some() {
        Vec::new()
    } else {
        vec![invalid(
            p,
            v,
            "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
        )]
    }
}

pub(crate) fn parse_cidr(v: &str) -> Option<(std::net::IpAddr, u32)> {
    let (ip, bits) = v.split_once('/')?;
    if bits.is_empty() || !bits.bytes().all(|c| c.is_ascii_digit()) || bits.len() > 3 {
        return None;
    }
    let bits: u32 = bits.parse().ok()?;
    let addr = parse_ip(ip)?;
    let max = if ip.contains(':') { 128 } else { 32 };
    if bits > max {
        return None;
    }
    Some((addr, bits))
}

/// `validation.IsValidCIDR`.
pub(crate) fn valid_cidr(p: &P, v: &str) -> Errs {
    if parse_cidr(v).is_some() {
        Vec::new()
    } else {
        vec![invalid(
            p,
            v,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        )]
    }
}

/// `ValidateNonSpecialIP`.
pub(crate) fn non_special_ip(v: &str, p: &P) -> Errs {
    use std::net::IpAddr;
    let Some(ip) = parse_ip(v) else {
        return vec![invalid(p, v, "must be a valid IP address")];
    };
    let mut errs = Vec::new();
    let (unspecified, loopback, link_local, link_local_mc) = match ip {
        IpAddr::V4(a) => {
            let o = a.octets();
            (
                a.is_unspecified(),
                a.is_loopback(),
                o[0] == 169 && o[1] == 254,
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(a) => {
            let seg = a.segments();
            (
                a.is_unspecified(),
                a.is_loopback(),
                seg[0] & 0xffc0 == 0xfe80,
                seg[0] & 0xff0f == 0xff02,
            )
        }
    };
    if unspecified {
        errs.push(invalid(p, v, &format!("may not be unspecified ({v})")));
    }
    if loopback {
        errs.push(invalid(
            p,
            v,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ));
    }
    if link_local {
        errs.push(invalid(
            p,
            v,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ));
    }
    if link_local_mc {
        errs.push(invalid(
            p,
            v,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Labels and label selectors (k8s.io/apimachinery/pkg/apis/meta/v1/validation).

pub(crate) fn validate_label_name(k: &str, p: &P) -> Errs {
    qualified_name(k, p)
}

/// `ValidateLabels` of a `map[string]string` field.
pub(crate) fn validate_labels(m: Option<&Value>, p: &P) -> Errs {
    let mut errs = Vec::new();
    if let Some(Value::Object(m)) = m {
        for (k, v) in m {
            errs.extend(validate_label_name(k, p));
            let v = v.as_str().unwrap_or("");
            for msg in is_valid_label_value(v) {
                errs.push(invalid(p, v, &msg));
            }
        }
    }
    errs
}

/// `ValidateLabelSelector`.
pub(crate) fn validate_label_selector(
    sel: Option<&Value>,
    allow_invalid_values: bool,
    p: &P,
) -> Errs {
    let Some(sel) = sel else {
        return Vec::new();
    };
    let mut errs = validate_labels(get(sel, "matchLabels"), &p.child("matchLabels"));
    for (i, expr) in arr(sel, "matchExpressions").iter().enumerate() {
        let ep = p.child("matchExpressions").index(i);
        let op = s(expr, "operator");
        let nvalues = len_of(expr, "values");
        match op {
            "In" | "NotIn" => {
                if nvalues == 0 {
                    errs.push(required(
                        &ep.child("values"),
                        "must be specified when `operator` is 'In' or 'NotIn'",
                    ));
                }
            }
            "Exists" | "DoesNotExist" => {
                if nvalues > 0 {
                    errs.push(forbidden(
                        &ep.child("values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    ));
                }
            }
            _ => errs.push(invalid(
                &ep.child("operator"),
                op,
                "not a valid selector operator",
            )),
        }
        errs.extend(validate_label_name(s(expr, "key"), &ep.child("key")));
        if !allow_invalid_values {
            for (j, v) in str_list(expr, "values").iter().enumerate() {
                for msg in is_valid_label_value(v) {
                    errs.push(invalid(&ep.child("values").index(j), *v, &msg));
                }
            }
        }
    }
    errs
}

/// A label selector as `metav1.LabelSelectorAsSelector` builds it.
pub(crate) enum Selector {
    /// A nil selector: matches nothing.
    Nothing,
    /// Requirements, all of which must hold; empty matches everything.
    Reqs(Vec<Req>),
}

pub(crate) struct Req {
    key: String,
    op: String,
    values: Vec<String>,
}

impl Selector {
    /// `LabelSelectorAsSelector`; `None` when the selector is invalid.
    pub(crate) fn from_label_selector(sel: Option<&Value>) -> Option<Selector> {
        let Some(sel) = sel else {
            return Some(Selector::Nothing);
        };
        let mut reqs = Vec::new();
        for (k, v) in str_map(sel, "matchLabels") {
            if !is_qualified_name(k).is_empty() || !is_valid_label_value(v).is_empty() {
                return None;
            }
            reqs.push(Req {
                key: k.to_string(),
                op: "In".to_string(),
                values: vec![v.to_string()],
            });
        }
        for expr in arr(sel, "matchExpressions") {
            let key = s(expr, "key");
            let op = s(expr, "operator");
            let values: Vec<String> = str_list(expr, "values")
                .iter()
                .map(|v| v.to_string())
                .collect();
            if !is_qualified_name(key).is_empty() {
                return None;
            }
            match op {
                "In" | "NotIn" => {
                    if values.is_empty()
                        || values.iter().any(|v| !is_valid_label_value(v).is_empty())
                    {
                        return None;
                    }
                }
                "Exists" | "DoesNotExist" => {
                    if !values.is_empty() {
                        return None;
                    }
                }
                _ => return None,
            }
            reqs.push(Req {
                key: key.to_string(),
                op: op.to_string(),
                values,
            });
        }
        Some(Selector::Reqs(reqs))
    }

    /// `Selector.Empty()`: true for the match-everything selector.
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, Selector::Reqs(r) if r.is_empty())
    }

    pub(crate) fn matches(&self, labels: &BTreeMap<&str, &str>) -> bool {
        match self {
            Selector::Nothing => false,
            Selector::Reqs(reqs) => reqs.iter().all(|r| {
                let got = labels.get(r.key.as_str());
                match r.op.as_str() {
                    "In" => got.is_some_and(|g| r.values.iter().any(|v| v == g)),
                    "NotIn" => got.is_none_or(|g| !r.values.iter().any(|v| v == g)),
                    "Exists" => got.is_some(),
                    "DoesNotExist" => got.is_none(),
                    _ => false,
                }
            }),
        }
    }
}

/// The labels of a template (`<obj>.metadata.labels`).
pub(crate) fn template_labels(template: Option<&Value>) -> BTreeMap<&str, &str> {
    template
        .and_then(|t| get(t, "metadata"))
        .map(|m| str_map(m, "labels"))
        .unwrap_or_default()
}

/// The `labels` map value printed in errors (`null` when absent).
pub(crate) fn template_labels_value(template: Option<&Value>) -> Value {
    template
        .and_then(|t| get_in(t, &["metadata", "labels"]))
        .cloned()
        .unwrap_or(Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Our JSON selector validation matches the shared typed one.
    #[test]
    fn selector_validation_agrees_with_shared() {
        use crate::selector::{LabelSelectorValidationOptions, validate_label_selector_json};
        let cases = [
            serde_json::json!({"matchLabels": {"a": "b", "Bad Key": "x", "k": "bad value!"}}),
            serde_json::json!({"matchExpressions": [
                {"key": "a", "operator": "In"},
                {"key": "b", "operator": "Exists", "values": ["x"]},
                {"key": "c", "operator": "Near", "values": ["x"]},
                {"key": "", "operator": "NotIn", "values": ["ok", "not ok"]}
            ]}),
            serde_json::json!({}),
        ];
        for sel in &cases {
            let ours = validate_label_selector(Some(sel), false, &P::new("spec").child("selector"));
            let theirs = validate_label_selector_json(
                Some(sel),
                LabelSelectorValidationOptions::default(),
                "spec.selector",
            );
            let fmt = |e: &[FieldError]| e.iter().map(ToString::to_string).collect::<Vec<_>>();
            assert_eq!(fmt(&ours), fmt(&theirs), "{sel}");
        }
    }

    #[test]
    fn paths() {
        let p = P::new("spec").child("containers").index(0).key("cpu");
        assert_eq!(p.as_str(), "spec.containers[0][cpu]");
        assert_eq!(P::root().child("a").as_str(), "a");
    }

    #[test]
    fn dns_messages() {
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        assert!(is_dns1123_label("Abc")[0].starts_with("a lowercase RFC 1123 label"));
        assert!(is_dns1123_label("abc").is_empty());
        assert!(is_dns1123_subdomain("a.b-c").is_empty());
        assert!(!is_dns1123_subdomain("a..b").is_empty());
        assert_eq!(is_dns1123_label(&"a".repeat(64)).len(), 1);
        assert!(is_dns1035_label("1abc")[0].starts_with("a DNS-1035 label"));
    }

    #[test]
    fn qualified_names() {
        assert!(is_qualified_name("example.com/MyName").is_empty());
        assert_eq!(
            is_qualified_name("/a"),
            vec!["prefix part must be non-empty"]
        );
        assert_eq!(is_qualified_name("a/b/c").len(), 1);
        assert!(is_valid_label_value("").is_empty());
        assert_eq!(is_valid_label_value("-a").len(), 1);
    }

    #[test]
    fn ports_and_env() {
        assert!(is_valid_port_name("http").is_empty());
        assert_eq!(
            is_valid_port_name("-1"),
            vec![
                "must contain at least one letter (a-z)",
                "must not begin or end with a hyphen"
            ]
        );
        assert!(is_relaxed_env_var_name("1FOO").is_empty());
        assert_eq!(is_relaxed_env_var_name("A=B").len(), 1);
        assert_eq!(is_config_map_key("..a").len(), 1);
        assert_eq!(is_config_map_key("a b").len(), 1);
    }

    #[test]
    fn ips() {
        assert!(parse_ip("10.0.0.1").is_some());
        assert!(parse_ip("010.000.0.1").is_some());
        assert!(parse_ip("::1").is_some());
        assert!(parse_ip("1.2.3").is_none());
        assert!(parse_cidr("10.0.0.0/8").is_some());
        assert!(parse_cidr("10.0.0.0/33").is_none());
        assert_eq!(non_special_ip("127.0.0.1", &P::new("x")).len(), 1);
    }

    #[test]
    fn selectors() {
        let sel = serde_json::json!({"matchLabels": {"a": "b"}, "matchExpressions": [{"key": "c", "operator": "Exists"}]});
        let s = Selector::from_label_selector(Some(&sel)).unwrap();
        let mut l = BTreeMap::new();
        l.insert("a", "b");
        assert!(!s.matches(&l));
        l.insert("c", "");
        assert!(s.matches(&l));
        assert!(!Selector::from_label_selector(None).unwrap().matches(&l));
        assert!(semantic_eq(Some(&serde_json::json!({})), None));
        assert!(!semantic_eq(Some(&serde_json::json!({"a": 1})), None));
    }
}
