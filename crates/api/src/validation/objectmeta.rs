//! Object metadata validation on JSON values: upstream's `ValidateObjectMeta`,
//! `ValidateObjectMetaUpdate` (`k8s.io/apimachinery/pkg/api/validation`), the finalizer rule
//! `k8s.io/kubernetes/pkg/apis/core/validation` adds for built-in types, and the label,
//! annotation, owner reference, finalizer and managed fields rules they are made of.
//!
//! Upstream validates typed `ObjectMeta`; a JSON value can hold any shape, so every reader
//! here is total: a field of the wrong JSON type yields a `FieldValueTypeInvalid` error in the
//! form upstream's schema validation uses (`metadata.labels in body must be of type object:
//! "string"`), and the checks that need that field are skipped. `null` is read as absent, as
//! Go's decoder does.

use serde_json::{Map, Value};

use super::names::{is_qualified_name, is_valid_label_value, validate_namespace_name};
use crate::gofmt::{go_quote, go_string_slice, go_unicode, is_print};
use crate::status::{FieldError, FieldErrorType};

/// `FieldImmutableErrorMsg`.
pub const FIELD_IMMUTABLE_ERROR_MSG: &str = "field is immutable";
/// `TotalAnnotationSizeLimitB`: 256 KiB for all annotation keys and values together.
pub const TOTAL_ANNOTATION_SIZE_LIMIT_B: usize = 256 * 1024;
/// `IsNegativeErrorMsg`.
pub const IS_NEGATIVE_ERROR_MSG: &str = "must be greater than or equal to 0";
/// `FieldManagerMaxLength`.
pub const FIELD_MANAGER_MAX_LENGTH: usize = 128;
/// `MaxSubresourceNameLength`.
pub const MAX_SUBRESOURCE_NAME_LENGTH: usize = 256;
/// `metav1.FinalizerOrphanDependents`.
pub const FINALIZER_ORPHAN_DEPENDENTS: &str = "orphan";
/// `metav1.FinalizerDeleteDependents`.
pub const FINALIZER_DELETE_DEPENDENTS: &str = "foregroundDeletion";
/// `corev1.FinalizerKubernetes`.
pub const FINALIZER_KUBERNETES: &str = "kubernetes";
/// Finalizer names that need no domain prefix.
pub const STANDARD_FINALIZERS: [&str; 3] = [
    FINALIZER_KUBERNETES,
    FINALIZER_ORPHAN_DEPENDENTS,
    FINALIZER_DELETE_DEPENDENTS,
];

/// A name rule as upstream's `ValidateNameFunc`: `(name, is_prefix) -> messages`.
pub type ValidateNameFn<'a> = &'a dyn Fn(&str, bool) -> Vec<String>;

// ---------------------------------------------------------------------------------------
// Paths and JSON readers.

// Paths are pushed together rather than formatted: validators build one per field they
// visit, error or not, and `format!` made that a visible share of a pod create.

/// `path.name`, or `name` at the root.
pub(crate) fn child(path: &str, name: &str) -> String {
    let mut s = String::with_capacity(path.len() + 1 + name.len());
    s.push_str(path);
    if !path.is_empty() {
        s.push('.');
    }
    s.push_str(name);
    s
}

/// `path[i]`.
pub(crate) fn index(path: &str, i: usize) -> String {
    let mut s = String::with_capacity(path.len() + 6);
    s.push_str(path);
    s.push('[');
    push_decimal(&mut s, i);
    s.push(']');
    s
}

/// `path[key]` (a map entry, as upstream's `field.Path.Key` prints it).
pub(crate) fn key(path: &str, key: &str) -> String {
    let mut s = String::with_capacity(path.len() + 2 + key.len());
    s.push_str(path);
    s.push('[');
    s.push_str(key);
    s.push(']');
    s
}

fn push_decimal(s: &mut String, i: usize) {
    if i >= 10 {
        push_decimal(s, i / 10);
    }
    s.extend(char::from_digit((i % 10) as u32, 10));
}

/// The JSON type name upstream's schema validation reports.
pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A value of the wrong JSON type: `FieldValueTypeInvalid`, as the schema validator words it.
pub(crate) fn type_invalid(path: &str, expected: &str, actual: &Value) -> FieldError {
    let actual = json_type(actual);
    FieldError {
        kind: FieldErrorType::TypeInvalid,
        field: path.to_string(),
        bad_value: Some(Value::String(actual.to_string())),
        detail: format!(
            "{path} in body must be of type {expected}: {}",
            go_quote(actual)
        ),
    }
}

/// A string field: absent or null is `""`; the wrong type is reported and gives `None`.
pub(crate) fn read_str<'a>(
    m: &'a Map<String, Value>,
    name: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<&'a str> {
    match m.get(name) {
        None | Some(Value::Null) => Some(""),
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            errs.push(type_invalid(&child(path, name), "string", other));
            None
        }
    }
}

/// An integer field (`int64`): absent or null is `None`.
fn read_i64(
    m: &Map<String, Value>,
    name: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Result<Option<i64>, ()> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) if n.as_i64().is_some() => Ok(n.as_i64()),
        Some(other) => {
            errs.push(type_invalid(&child(path, name), "integer", other));
            Err(())
        }
    }
}

/// A `map[string]string` field as `(key, value)` pairs in key order; entries whose value is
/// not a string are reported and left out. `None` when the field is not an object.
fn read_string_map<'a>(
    v: Option<&'a Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Vec<(&'a str, &'a str)>> {
    match v {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Object(m)) => {
            let mut out = Vec::with_capacity(m.len());
            for (k, v) in m {
                match v {
                    Value::String(s) => out.push((k.as_str(), s.as_str())),
                    other => errs.push(type_invalid(&key(path, k), "string", other)),
                }
            }
            Some(out)
        }
        Some(other) => {
            errs.push(type_invalid(path, "object", other));
            None
        }
    }
}

/// A `[]string` field; non-string items are reported and left out.
fn read_string_list<'a>(
    v: Option<&'a Value>,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<Vec<&'a str>> {
    match v {
        None | Some(Value::Null) => Some(Vec::new()),
        Some(Value::Array(items)) => {
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::String(s) => out.push(s.as_str()),
                    other => errs.push(type_invalid(&index(path, i), "string", other)),
                }
            }
            Some(out)
        }
        Some(other) => {
            errs.push(type_invalid(path, "array", other));
            None
        }
    }
}

/// Upstream's `strings.ToLower`: rune by rune with Go's simple mappings.
fn go_to_lower(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c == '\u{130}' {
            // Go maps U+0130 to 'i' alone; Rust's full mapping adds a combining dot.
            out.push('i');
        } else {
            out.extend(c.to_lowercase());
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// Timestamps (`metav1.Time`).

/// An instant as `metav1.Time` holds it after decoding RFC 3339 text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Time {
    secs: i64,
    nanos: u32,
}

fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = i64::from((m + 9) % 12);
    let doy = (153 * mp + 2) / 5 + i64::from(d) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

fn digits(s: &[u8]) -> Option<u32> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0u32, |acc, &b| {
        acc.checked_mul(10)?.checked_add(u32::from(b - b'0'))
    })
}

/// Go's `time.Parse(time.RFC3339, s)`: `2006-01-02T15:04:05Z07:00`, with an optional
/// fractional second.
fn parse_rfc3339(s: &str) -> Option<Time> {
    let b = s.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || b[10] != b'T' || b[13] != b':' {
        return None;
    }
    if b[16] != b':' {
        return None;
    }
    let year = digits(&b[0..4])?;
    let month = digits(&b[5..7])?;
    let day = digits(&b[8..10])?;
    let hour = digits(&b[11..13])?;
    let minute = digits(&b[14..16])?;
    let second = digits(&b[17..19])?;
    let mut rest = &b[19..];
    let mut nanos = 0u32;
    if let Some(frac) = rest.strip_prefix(b".").or_else(|| rest.strip_prefix(b",")) {
        let n = frac.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        for (i, &c) in frac[..n].iter().enumerate() {
            if i < 9 {
                nanos += u32::from(c - b'0') * 10u32.pow(8 - i as u32);
            }
        }
        rest = &frac[n..];
    }
    let offset_secs: i64 = match rest {
        b"Z" => 0,
        [sign @ (b'+' | b'-'), h1, h2, b':', m1, m2] => {
            let oh = digits(&[*h1, *h2])?;
            let om = digits(&[*m1, *m2])?;
            if oh > 23 || om > 59 {
                return None;
            }
            let off = i64::from(oh * 3600 + om * 60);
            if *sign == b'-' { -off } else { off }
        }
        _ => return None,
    };
    let y = i64::from(year);
    if !(1..=12).contains(&month)
        || day < 1
        || day > days_in_month(y, month)
        || hour > 23
        || minute > 59
        || second > 59
    {
        return None;
    }
    let days = days_from_civil(y, month, day);
    let secs = days * 86_400 + i64::from(hour * 3600 + minute * 60 + second) - offset_secs;
    Some(Time { secs, nanos })
}

impl Time {
    const ZERO: Time = Time {
        // 0001-01-01T00:00:00Z, Go's zero time.
        secs: -62_135_596_800,
        nanos: 0,
    };

    /// Go's `time.Time.String()` in UTC: `2006-01-02 15:04:05.999999999 +0000 UTC`.
    fn go_string(&self) -> String {
        let days = self.secs.div_euclid(86_400);
        let tod = self.secs.rem_euclid(86_400);
        let (y, m, d) = civil_from_days(days);
        let mut s = format!(
            "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
            tod / 3600,
            (tod / 60) % 60,
            tod % 60
        );
        if self.nanos != 0 {
            let frac = format!("{:09}", self.nanos);
            s.push('.');
            s.push_str(frac.trim_end_matches('0'));
        }
        s.push_str(" +0000 UTC");
        s
    }
}

/// A `metav1.Time` field: `Ok(None)` when absent or null; the wrong type or unparsable text
/// is reported and gives `Err`.
fn read_time(
    m: &Map<String, Value>,
    name: &str,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Result<Option<Time>, ()> {
    match m.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => match parse_rfc3339(s) {
            Some(t) => Ok(Some(t)),
            None => {
                let p = child(path, name);
                errs.push(FieldError {
                    kind: FieldErrorType::TypeInvalid,
                    field: p.clone(),
                    bad_value: Some(Value::String(s.clone())),
                    detail: format!("{p} in body must be of type date-time: {}", go_quote(s)),
                });
                Err(())
            }
        },
        Some(other) => {
            errs.push(type_invalid(&child(path, name), "string", other));
            Err(())
        }
    }
}

// ---------------------------------------------------------------------------------------
// Labels, annotations, finalizers, owner references, managed fields.

/// `ValidateLabelName`: a label key must be a qualified name.
pub fn validate_label_name(label_name: &str, path: &str) -> Vec<FieldError> {
    is_qualified_name(label_name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, label_name, msg))
        .collect()
}

/// `ValidateLabels` over `(key, value)` pairs: keys are qualified names, values label values.
/// Errors carry the map's path itself (`metadata.labels`), as upstream's do.
pub fn validate_labels_map<'a>(
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, v) in labels {
        errs.extend(validate_label_name(k, path));
        for msg in is_valid_label_value(v) {
            errs.push(FieldError::invalid(path, v, msg));
        }
    }
    errs
}

/// `ValidateLabels` on a JSON map (`null` or absent is empty).
pub fn validate_labels(labels: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(pairs) = read_string_map(labels, path, &mut errs) {
        errs.extend(validate_labels_map(pairs, path));
    }
    errs
}

/// `ValidateAnnotationsSize`: whether keys and values together stay within 256 KiB.
pub fn annotations_size_ok<'a>(annotations: impl IntoIterator<Item = (&'a str, &'a str)>) -> bool {
    let total: usize = annotations
        .into_iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    total <= TOTAL_ANNOTATION_SIZE_LIMIT_B
}

/// `ValidateAnnotations` over `(key, value)` pairs: keys are qualified names ignoring case,
/// and the total size is limited.
pub fn validate_annotations_map<'a>(
    annotations: impl IntoIterator<Item = (&'a str, &'a str)> + Clone,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    for (k, _) in annotations.clone() {
        for msg in is_qualified_name(&go_to_lower(k)) {
            errs.push(FieldError::invalid(path, k, msg));
        }
    }
    if !annotations_size_ok(annotations) {
        errs.push(FieldError::too_long(path, TOTAL_ANNOTATION_SIZE_LIMIT_B));
    }
    errs
}

/// `ValidateAnnotations` on a JSON map.
pub fn validate_annotations(annotations: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if let Some(pairs) = read_string_map(annotations, path, &mut errs) {
        errs.extend(validate_annotations_map(pairs.iter().copied(), path));
    }
    errs
}

/// `ValidateFinalizerName`: a qualified name.
pub fn validate_finalizer_name(name: &str, path: &str) -> Vec<FieldError> {
    is_qualified_name(name)
        .into_iter()
        .map(|msg| FieldError::invalid(path, name, msg))
        .collect()
}

/// The built-in types' rule (`validateKubeFinalizerName`): a name without `/` must be one of
/// the standard finalizers.
pub fn validate_kube_finalizer_name(name: &str, path: &str) -> Vec<FieldError> {
    if !name.contains('/') && !STANDARD_FINALIZERS.contains(&name) {
        return vec![FieldError::invalid(
            path,
            name,
            "name is neither a standard finalizer name nor is it fully qualified",
        )];
    }
    Vec::new()
}

/// `ValidateFinalizers` on a JSON list: each name is a qualified name, and `orphan` and
/// `foregroundDeletion` exclude each other.
pub fn validate_finalizers(finalizers: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(list) = read_string_list(finalizers, path, &mut errs) else {
        return errs;
    };
    for f in &list {
        errs.extend(validate_finalizer_name(f, path));
    }
    if list.contains(&FINALIZER_ORPHAN_DEPENDENTS) && list.contains(&FINALIZER_DELETE_DEPENDENTS) {
        errs.push(FieldError::invalid(
            path,
            finalizers.cloned().unwrap_or(Value::Null),
            format!(
                "finalizer {FINALIZER_ORPHAN_DEPENDENTS} and {FINALIZER_DELETE_DEPENDENTS} cannot be both set"
            ),
        ));
    }
    errs
}

/// `ValidateNoNewFinalizers`: while an object is being deleted, finalizers can only go.
pub fn validate_no_new_finalizers(new: &[&str], old: &[&str], path: &str) -> Vec<FieldError> {
    let mut extra: Vec<&str> = new.iter().copied().filter(|f| !old.contains(f)).collect();
    extra.sort_unstable();
    extra.dedup();
    if extra.is_empty() {
        return Vec::new();
    }
    vec![FieldError::forbidden(
        path,
        format!(
            "no new finalizers can be added if the object is being deleted, found new finalizers {}",
            go_string_slice(Some(&extra))
        ),
    )]
}

/// `schema.FromAPIVersionAndKind` then the group and version: `(group, version)`.
fn parse_group_version(api_version: &str) -> (&str, &str) {
    if api_version.is_empty() || api_version == "/" {
        return ("", "");
    }
    match api_version.matches('/').count() {
        0 => ("", api_version),
        1 => api_version.split_once('/').unwrap_or(("", "")),
        _ => ("", ""),
    }
}

/// `ValidateOwnerReferences` on a JSON list: apiVersion (with a version), kind, name and uid
/// are required, Events cannot own, and at most one reference is the controller.
pub fn validate_owner_references(refs: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = match refs {
        None | Some(Value::Null) => return errs,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(type_invalid(path, "array", other));
            return errs;
        }
    };
    let mut first_controller: Option<String> = None;
    for (i, item) in items.iter().enumerate() {
        let item_path = index(path, i);
        let Value::Object(r) = item else {
            errs.push(type_invalid(&item_path, "object", item));
            continue;
        };
        let api_version = read_str(r, "apiVersion", &item_path, &mut errs);
        let kind = read_str(r, "kind", &item_path, &mut errs);
        let name = read_str(r, "name", &item_path, &mut errs);
        let uid = read_str(r, "uid", &item_path, &mut errs);
        let controller = match r.get("controller") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                errs.push(type_invalid(
                    &child(&item_path, "controller"),
                    "boolean",
                    other,
                ));
                false
            }
        };
        match r.get("blockOwnerDeletion") {
            None | Some(Value::Null | Value::Bool(_)) => {}
            Some(other) => errs.push(type_invalid(
                &child(&item_path, "blockOwnerDeletion"),
                "boolean",
                other,
            )),
        }
        // Upstream reports these on the list's path, without the index.
        let (group, version) = parse_group_version(api_version.unwrap_or(""));
        if let Some(api_version) = api_version
            && version.is_empty()
        {
            errs.push(FieldError::invalid(
                child(path, "apiVersion"),
                api_version,
                "version must not be empty",
            ));
        }
        if let Some(kind) = kind
            && kind.is_empty()
        {
            errs.push(FieldError::invalid(
                child(path, "kind"),
                kind,
                "kind must not be empty",
            ));
        }
        if let Some(name) = name
            && name.is_empty()
        {
            errs.push(FieldError::invalid(
                child(path, "name"),
                name,
                "name must not be empty",
            ));
        }
        if let Some(uid) = uid
            && uid.is_empty()
        {
            errs.push(FieldError::invalid(
                child(path, "uid"),
                uid,
                "uid must not be empty",
            ));
        }
        let kind = kind.unwrap_or("");
        if group.is_empty() && version == "v1" && kind == "Event" {
            errs.push(FieldError::invalid(
                path,
                item.clone(),
                format!("{group}/{version}, Kind={kind} is disallowed from being an owner"),
            ));
        }
        if controller {
            let current = format!("{kind}/{}", name.unwrap_or(""));
            match &first_controller {
                Some(first) => errs.push(FieldError::invalid(
                    path,
                    Value::Array(items.clone()),
                    format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for {first} and {current}"
                    ),
                )),
                None => first_controller = Some(current),
            }
        }
    }
    errs
}

/// `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn validate_field_manager(field_manager: &str, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    if field_manager.len() > FIELD_MANAGER_MAX_LENGTH {
        errs.push(FieldError::too_long(path, FIELD_MANAGER_MAX_LENGTH));
    }
    for (i, c) in field_manager.char_indices() {
        if !is_print(c) {
            errs.push(FieldError::invalid(
                path,
                field_manager,
                format!("invalid character {} (at position {i})", go_unicode(c)),
            ));
        }
    }
    errs
}

/// `ValidateManagedFields` on a JSON list.
pub fn validate_managed_fields(managed_fields: Option<&Value>, path: &str) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let items = match managed_fields {
        None | Some(Value::Null) => return errs,
        Some(Value::Array(items)) => items,
        Some(other) => {
            errs.push(type_invalid(path, "array", other));
            return errs;
        }
    };
    for (i, item) in items.iter().enumerate() {
        let p = index(path, i);
        let Value::Object(entry) = item else {
            errs.push(type_invalid(&p, "object", item));
            continue;
        };
        if let Some(op) = read_str(entry, "operation", &p, &mut errs)
            && op != "Apply"
            && op != "Update"
        {
            errs.push(FieldError::invalid(
                child(&p, "operation"),
                op,
                "must be `Apply` or `Update`",
            ));
        }
        if let Some(ft) = read_str(entry, "fieldsType", &p, &mut errs)
            && !ft.is_empty()
            && ft != "FieldsV1"
        {
            errs.push(FieldError::invalid(
                child(&p, "fieldsType"),
                ft,
                "must be `FieldsV1`",
            ));
        }
        if let Some(manager) = read_str(entry, "manager", &p, &mut errs) {
            errs.extend(validate_field_manager(manager, &child(&p, "manager")));
        }
        if let Some(sub) = read_str(entry, "subresource", &p, &mut errs)
            && sub.len() > MAX_SUBRESOURCE_NAME_LENGTH
        {
            errs.push(FieldError::too_long(
                child(&p, "subresource"),
                MAX_SUBRESOURCE_NAME_LENGTH,
            ));
        }
        match entry.get("time") {
            None | Some(Value::Null) => {}
            Some(Value::String(_)) => {
                let _ = read_time(entry, "time", &p, &mut errs);
            }
            Some(other) => errs.push(type_invalid(&child(&p, "time"), "string", other)),
        }
        match entry.get("fieldsV1") {
            None | Some(Value::Null | Value::Object(_)) => {}
            Some(other) => errs.push(type_invalid(&child(&p, "fieldsV1"), "object", other)),
        }
    }
    errs
}

/// `ValidateNonnegativeField`.
pub fn validate_nonnegative_field(value: i64, path: &str) -> Vec<FieldError> {
    if value < 0 {
        vec![FieldError::invalid(path, value, IS_NEGATIVE_ERROR_MSG)]
    } else {
        Vec::new()
    }
}

/// `ValidateImmutableField` on JSON values: `field is immutable` with the new value when they
/// differ (absent and `null` are the same).
pub fn validate_immutable_field(
    new: Option<&Value>,
    old: Option<&Value>,
    path: &str,
) -> Vec<FieldError> {
    let norm = |v: Option<&Value>| v.filter(|v| !v.is_null()).cloned();
    let (n, o) = (norm(new), norm(old));
    if n == o {
        return Vec::new();
    }
    vec![FieldError::invalid(
        path,
        n.unwrap_or_else(|| Value::String("null".to_string())),
        FIELD_IMMUTABLE_ERROR_MSG,
    )]
}

// ---------------------------------------------------------------------------------------
// ObjectMeta.

fn as_meta<'a>(
    meta: &'a Value,
    path: &str,
    errs: &mut Vec<FieldError>,
) -> Option<&'a Map<String, Value>> {
    static EMPTY: std::sync::OnceLock<Map<String, Value>> = std::sync::OnceLock::new();
    match meta {
        Value::Object(m) => Some(m),
        Value::Null => Some(EMPTY.get_or_init(Map::new)),
        other => {
            errs.push(type_invalid(path, "object", other));
            None
        }
    }
}

/// `ValidateObjectMetaAccessor` (apimachinery): metadata on create, for every resource —
/// custom resources use exactly this. `meta` is the `metadata` object; `path` is usually
/// `"metadata"`. Expects `generateName` to have been turned into a name already.
pub fn validate_object_meta_generic(
    meta: &Value,
    requires_namespace: bool,
    name_fn: ValidateNameFn<'_>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(m) = as_meta(meta, path, &mut errs) else {
        return errs;
    };
    if let Some(generate_name) = read_str(m, "generateName", path, &mut errs)
        && !generate_name.is_empty()
    {
        for msg in name_fn(generate_name, true) {
            errs.push(FieldError::invalid(
                child(path, "generateName"),
                generate_name,
                msg,
            ));
        }
    }
    match read_str(m, "name", path, &mut errs) {
        Some("") => errs.push(FieldError::required(
            child(path, "name"),
            "name or generateName is required",
        )),
        Some(name) => {
            for msg in name_fn(name, false) {
                errs.push(FieldError::invalid(child(path, "name"), name, msg));
            }
        }
        None => {}
    }
    let namespace = read_str(m, "namespace", path, &mut errs);
    if requires_namespace {
        match namespace {
            Some("") => errs.push(FieldError::required(child(path, "namespace"), "")),
            Some(ns) => {
                for msg in validate_namespace_name(ns, false) {
                    errs.push(FieldError::invalid(child(path, "namespace"), ns, msg));
                }
            }
            None => {}
        }
    } else if namespace.is_some_and(|ns| !ns.is_empty()) {
        errs.push(FieldError::forbidden(
            child(path, "namespace"),
            "not allowed on this type",
        ));
    }
    if let Ok(generation) = read_i64(m, "generation", path, &mut errs) {
        errs.extend(validate_nonnegative_field(
            generation.unwrap_or(0),
            &child(path, "generation"),
        ));
    }
    errs.extend(validate_labels(m.get("labels"), &child(path, "labels")));
    errs.extend(validate_annotations(
        m.get("annotations"),
        &child(path, "annotations"),
    ));
    errs.extend(validate_owner_references(
        m.get("ownerReferences"),
        &child(path, "ownerReferences"),
    ));
    errs.extend(validate_finalizers(
        m.get("finalizers"),
        &child(path, "finalizers"),
    ));
    errs.extend(validate_managed_fields(
        m.get("managedFields"),
        &child(path, "managedFields"),
    ));
    errs
}

/// The built-in types' `ValidateObjectMeta` (`k8s.io/kubernetes/pkg/apis/core/validation`):
/// [`validate_object_meta_generic`] plus the standard-finalizer rule on each
/// `metadata.finalizers[i]`.
pub fn validate_object_meta(
    meta: &Value,
    requires_namespace: bool,
    name_fn: ValidateNameFn<'_>,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = validate_object_meta_generic(meta, requires_namespace, name_fn, path);
    errs.extend(kube_finalizer_errors(meta, path));
    errs
}

fn kube_finalizer_errors(meta: &Value, path: &str) -> Vec<FieldError> {
    let fpath = child(path, "finalizers");
    let Some(Value::Array(items)) = meta.get("finalizers") else {
        return Vec::new();
    };
    items
        .iter()
        .enumerate()
        .filter_map(|(i, f)| Some((i, f.as_str()?)))
        .flat_map(|(i, f)| validate_kube_finalizer_name(f, &index(&fpath, i)))
        .collect()
}

/// `ValidateObjectMetaAccessorUpdate` (apimachinery): what an update may change. Type errors
/// are reported for `new` only; `old` (as stored) is read leniently.
pub fn validate_object_meta_update_generic(
    new: &Value,
    old: &Value,
    path: &str,
) -> Vec<FieldError> {
    let mut errs = Vec::new();
    let Some(n) = as_meta(new, path, &mut errs) else {
        return errs;
    };
    let mut ignored = Vec::new();
    let o = as_meta(old, path, &mut ignored).unwrap_or(n);

    // Finalizers cannot be added while the object is being deleted.
    if matches!(
        read_time(o, "deletionTimestamp", path, &mut ignored),
        Ok(Some(_))
    ) {
        let fpath = child(path, "finalizers");
        let new_f = read_string_list(n.get("finalizers"), &fpath, &mut errs);
        let old_f = read_string_list(o.get("finalizers"), &fpath, &mut ignored).unwrap_or_default();
        if let Some(new_f) = new_f {
            errs.extend(validate_no_new_finalizers(&new_f, &old_f, &fpath));
        }
    }

    if let Some("") = read_str(n, "resourceVersion", path, &mut errs) {
        errs.push(FieldError::invalid(
            child(path, "resourceVersion"),
            "",
            "must be specified for an update",
        ));
    }

    let new_generation = read_i64(n, "generation", path, &mut errs);
    let old_generation = read_i64(o, "generation", path, &mut ignored);
    if let (Ok(new_gen), Ok(old_gen)) = (new_generation, old_generation) {
        let (new_gen, old_gen) = (new_gen.unwrap_or(0), old_gen.unwrap_or(0));
        if new_gen < old_gen {
            errs.push(FieldError::invalid(
                child(path, "generation"),
                new_gen,
                "must not be decremented",
            ));
        }
    }

    for field in ["name", "namespace", "uid"] {
        let new_v = read_str(n, field, path, &mut errs);
        let old_v = read_str(o, field, path, &mut ignored).unwrap_or("");
        if let Some(new_v) = new_v
            && new_v != old_v
        {
            errs.push(FieldError::invalid(
                child(path, field),
                new_v,
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }

    // creationTimestamp is a value: absent is the zero time.
    if let Ok(new_t) = read_time(n, "creationTimestamp", path, &mut errs) {
        let old_t = read_time(o, "creationTimestamp", path, &mut ignored)
            .ok()
            .flatten();
        let (new_t, old_t) = (new_t.unwrap_or(Time::ZERO), old_t.unwrap_or(Time::ZERO));
        if new_t != old_t {
            errs.push(FieldError::invalid(
                child(path, "creationTimestamp"),
                new_t.go_string(),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    // deletionTimestamp is a pointer: absent is nil, shown as "null".
    if let Ok(new_t) = read_time(n, "deletionTimestamp", path, &mut errs) {
        let old_t = read_time(o, "deletionTimestamp", path, &mut ignored)
            .ok()
            .flatten();
        if new_t != old_t {
            errs.push(FieldError::invalid(
                child(path, "deletionTimestamp"),
                new_t.map_or_else(|| "null".to_string(), |t| t.go_string()),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }
    if let Ok(new_g) = read_i64(n, "deletionGracePeriodSeconds", path, &mut errs) {
        let old_g = read_i64(o, "deletionGracePeriodSeconds", path, &mut ignored)
            .ok()
            .flatten();
        if new_g != old_g {
            errs.push(FieldError::invalid(
                child(path, "deletionGracePeriodSeconds"),
                new_g.map_or_else(|| Value::String("null".to_string()), Value::from),
                FIELD_IMMUTABLE_ERROR_MSG,
            ));
        }
    }

    errs.extend(validate_labels(n.get("labels"), &child(path, "labels")));
    errs.extend(validate_annotations(
        n.get("annotations"),
        &child(path, "annotations"),
    ));
    errs.extend(validate_owner_references(
        n.get("ownerReferences"),
        &child(path, "ownerReferences"),
    ));
    errs.extend(validate_managed_fields(
        n.get("managedFields"),
        &child(path, "managedFields"),
    ));
    errs
}

/// The built-in types' `ValidateObjectMetaUpdate`: [`validate_object_meta_update_generic`]
/// plus the standard-finalizer rule on the new finalizers.
pub fn validate_object_meta_update(new: &Value, old: &Value, path: &str) -> Vec<FieldError> {
    let mut errs = validate_object_meta_update_generic(new, old, path);
    errs.extend(kube_finalizer_errors(new, path));
    errs
}

/// The warnings custom resources get for finalizers added by a create or update (upstream's
/// apiextensions `generateWarningsFromObj`): for each added name, in sorted order, its
/// qualified-name problems and, without a domain, a hint unless it is standard. `new` and
/// `old` are `metadata` objects.
pub fn custom_resource_finalizer_warnings(new: &Value, old: Option<&Value>) -> Vec<String> {
    let strings = |v: Option<&Value>| -> Vec<String> {
        v.and_then(|m| m.get("finalizers"))
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(|f| f.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let old_f = strings(old);
    let mut added: Vec<String> = strings(Some(new))
        .into_iter()
        .filter(|f| !old_f.contains(f))
        .collect();
    added.sort_unstable();
    added.dedup();
    let p = "metadata.finalizers";
    let mut warnings = Vec::new();
    for f in &added {
        for msg in is_qualified_name(f) {
            warnings.push(format!("{p}: {}: {msg}", go_quote(f)));
        }
        if !f.contains('/') && !STANDARD_FINALIZERS.contains(&f.as_str()) {
            warnings.push(format!(
                "{p}: {}: prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers",
                go_quote(f)
            ));
        }
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::names::name_is_dns_subdomain;
    use serde_json::json;

    fn strings(errs: &[FieldError]) -> Vec<String> {
        errs.iter().map(ToString::to_string).collect()
    }

    fn accept_all(_: &str, _: bool) -> Vec<String> {
        Vec::new()
    }

    #[test]
    fn paths_print_as_upstreams_field_path() {
        assert_eq!(child("", "spec"), "spec");
        assert_eq!(child("spec", "containers"), "spec.containers");
        for (i, want) in [(0, "c[0]"), (7, "c[7]"), (10, "c[10]"), (1203, "c[1203]")] {
            assert_eq!(index("c", i), want);
        }
        assert_eq!(index("", 3), "[3]");
        assert_eq!(key("data", "a.b"), "data[a.b]");
        assert_eq!(
            index(&key(&child("metadata", "labels"), "k"), usize::MAX),
            format!("metadata.labels[k][{}]", usize::MAX)
        );
    }

    #[test]
    fn custom_name_function() {
        let name_fn = |s: &str, _prefix: bool| {
            if s == "test" {
                Vec::new()
            } else {
                vec!["name-gen".to_string()]
            }
        };
        let errs = validate_object_meta(
            &json!({"name": "test", "generateName": "foo"}),
            false,
            &name_fn,
            "field",
        );
        assert_eq!(
            strings(&errs),
            vec!["field.generateName: Invalid value: \"foo\": name-gen"]
        );
    }

    #[test]
    fn name_required_and_validated() {
        let errs = validate_object_meta(&json!({}), false, &name_is_dns_subdomain, "metadata");
        assert_eq!(
            strings(&errs),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        let errs = validate_object_meta(
            &json!({"name": "Foo"}),
            false,
            &name_is_dns_subdomain,
            "metadata",
        );
        assert_eq!(
            strings(&errs),
            vec![
                "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
            ]
        );
        // Trailing dash allowed in generateName.
        let errs = validate_object_meta(
            &json!({"name": "test", "generateName": "foo-"}),
            false,
            &name_is_dns_subdomain,
            "field",
        );
        assert!(errs.is_empty(), "{errs:?}");
    }

    #[test]
    fn namespaces() {
        let errs = validate_object_meta(
            &json!({"name": "test", "namespace": "foo.bar"}),
            true,
            &accept_all,
            "field",
        );
        assert_eq!(
            strings(&errs),
            vec!["field.namespace: Invalid value: \"foo.bar\": must not contain dots"]
        );
        let long = "a".repeat(64);
        let errs = validate_object_meta(
            &json!({"name": "test", "namespace": format!("{long}A")}),
            true,
            &accept_all,
            "field",
        );
        assert_eq!(errs.len(), 2);
        let errs = validate_object_meta(&json!({"name": "t"}), true, &accept_all, "metadata");
        assert_eq!(strings(&errs), vec!["metadata.namespace: Required value"]);
        let errs = validate_object_meta(
            &json!({"name": "t", "namespace": "x"}),
            false,
            &accept_all,
            "metadata",
        );
        assert_eq!(
            strings(&errs),
            vec!["metadata.namespace: Forbidden: not allowed on this type"]
        );
    }

    #[test]
    fn generation_labels_annotations() {
        let errs = validate_object_meta(
            &json!({"name": "t", "generation": -1, "labels": {"a/b/c": "x", "ok": "-bad"}}),
            false,
            &accept_all,
            "metadata",
        );
        let got = strings(&errs);
        assert_eq!(
            got[0],
            "metadata.generation: Invalid value: -1: must be greater than or equal to 0"
        );
        assert!(got[1].starts_with(
            "metadata.labels: Invalid value: \"a/b/c\": a qualified name must consist of"
        ));
        assert!(got[2].starts_with(
            "metadata.labels: Invalid value: \"-bad\": a valid label must be an empty string"
        ));
        assert_eq!(got.len(), 3);
    }

    #[test]
    fn annotations_upstream_cases() {
        let limit = TOTAL_ANNOTATION_SIZE_LIMIT_B;
        let good = [
            json!({"simple": "bar"}),
            json!({"now-with-dashes": "bar"}),
            json!({"1-starts-with-num": "bar"}),
            json!({"1234": "bar"}),
            json!({"simple/simple": "bar"}),
            json!({"now-with-dashes/simple": "bar"}),
            json!({"now-with-dashes/now-with-dashes": "bar"}),
            json!({"now.with.dots/simple": "bar"}),
            json!({"now-with.dashes-and.dots/simple": "bar"}),
            json!({"1-num.2-num/3-num": "bar"}),
            json!({"1234/5678": "bar"}),
            json!({"1.2.3.4/5678": "bar"}),
            json!({"UpperCase123": "bar"}),
            json!({"Example.COM/X": "bar"}),
            json!({"a": "b".repeat(limit - 1)}),
            json!({"a": "b".repeat(limit / 2 - 1), "c": "d".repeat(limit / 2 - 1)}),
        ];
        for a in &good {
            assert!(validate_annotations(Some(a), "field").is_empty());
        }
        let bad = [
            (
                json!({"nospecialchars^=@": "bar"}),
                "name part must consist of",
            ),
            (
                json!({"cantendwithadash-": "bar"}),
                "name part must consist of",
            ),
            (
                json!({"only/one/slash": "bar"}),
                "a qualified name must consist of",
            ),
            (json!({"a".repeat(254): "bar"}), "must be no more than"),
        ];
        for (a, expect) in &bad {
            let errs = validate_annotations(Some(a), "field");
            assert_eq!(errs.len(), 1, "{a}");
            assert!(errs[0].detail.contains(expect), "{}", errs[0].detail);
        }
        for a in [
            json!({"a": "b".repeat(limit)}),
            json!({"a": "b".repeat(limit / 2), "c": "d".repeat(limit / 2)}),
        ] {
            let errs = validate_annotations(Some(&a), "metadata.annotations");
            assert_eq!(
                strings(&errs),
                vec!["metadata.annotations: Too long: may not be more than 262144 bytes"]
            );
        }
    }

    #[test]
    fn owner_references_upstream_cases() {
        let meta =
            |refs: Value| json!({"name": "test", "namespace": "test", "ownerReferences": refs});
        let ok = validate_object_meta(
            &meta(
                json!([{"apiVersion": "customresourceVersion", "kind": "customresourceKind", "name": "name", "uid": "1"}]),
            ),
            true,
            &accept_all,
            "field",
        );
        assert!(ok.is_empty(), "{ok:?}");
        let event = validate_object_meta(
            &meta(json!([{"apiVersion": "v1", "kind": "Event", "name": "name", "uid": "1"}])),
            true,
            &accept_all,
            "field",
        );
        assert_eq!(event.len(), 1);
        assert!(
            event[0]
                .detail
                .ends_with("/v1, Kind=Event is disallowed from being an owner")
        );
        let one_controller = validate_object_meta(
            &meta(json!([
                {"apiVersion": "v", "kind": "k", "name": "name", "uid": "1", "controller": false},
                {"apiVersion": "v", "kind": "k", "name": "name", "uid": "2", "controller": true},
                {"apiVersion": "v", "kind": "k", "name": "name", "uid": "3", "controller": false},
                {"apiVersion": "v", "kind": "k", "name": "name", "uid": "4"},
            ])),
            true,
            &accept_all,
            "field",
        );
        assert!(one_controller.is_empty());
        let two = validate_object_meta(
            &meta(json!([
                {"apiVersion": "customresourceVersion", "kind": "customresourceKind1", "name": "name", "uid": "1", "controller": false},
                {"apiVersion": "customresourceVersion", "kind": "customresourceKind2", "name": "name", "uid": "2", "controller": true},
                {"apiVersion": "customresourceVersion", "kind": "customresourceKind3", "name": "name", "uid": "3", "controller": true},
                {"apiVersion": "customresourceVersion", "kind": "customresourceKind4", "name": "name", "uid": "4"},
            ])),
            true,
            &accept_all,
            "field",
        );
        assert_eq!(two.len(), 1);
        assert_eq!(two[0].field, "field.ownerReferences");
        assert_eq!(
            two[0].detail,
            "Only one reference can have Controller set to true. Found \"true\" in references for customresourceKind2/name and customresourceKind3/name"
        );
        let missing = validate_owner_references(
            Some(&json!([{"apiVersion": "apps/"}])),
            "metadata.ownerReferences",
        );
        assert_eq!(
            strings(&missing),
            vec![
                "metadata.ownerReferences.apiVersion: Invalid value: \"apps/\": version must not be empty",
                "metadata.ownerReferences.kind: Invalid value: \"\": kind must not be empty",
                "metadata.ownerReferences.name: Invalid value: \"\": name must not be empty",
                "metadata.ownerReferences.uid: Invalid value: \"\": uid must not be empty",
            ]
        );
        let too_many_slashes = validate_owner_references(
            Some(&json!([{"apiVersion": "a/b/c", "kind": "K", "name": "n", "uid": "u"}])),
            "p",
        );
        assert_eq!(too_many_slashes.len(), 1);
    }

    #[test]
    fn finalizers() {
        let errs = validate_object_meta(
            &json!({"name": "test", "finalizers": ["orphan", "foregroundDeletion"]}),
            false,
            &name_is_dns_subdomain,
            "field",
        );
        assert_eq!(errs.len(), 1);
        assert_eq!(errs[0].field, "field.finalizers");
        assert_eq!(
            errs[0].detail,
            "finalizer orphan and foregroundDeletion cannot be both set"
        );
        let errs = validate_object_meta(
            &json!({"name": "t", "finalizers": ["kubernetes", "example.com/x", "custom", "a b"]}),
            false,
            &accept_all,
            "metadata",
        );
        let got = strings(&errs);
        assert_eq!(got.len(), 3, "{got:?}");
        assert!(
            got[0].starts_with(
                "metadata.finalizers: Invalid value: \"a b\": name part must consist of"
            )
        );
        assert_eq!(
            got[1],
            "metadata.finalizers[2]: Invalid value: \"custom\": name is neither a standard finalizer name nor is it fully qualified"
        );
        assert_eq!(
            got[2],
            "metadata.finalizers[3]: Invalid value: \"a b\": name is neither a standard finalizer name nor is it fully qualified"
        );
        // The generic flavour (custom resources) has no standard-name rule.
        let generic = validate_object_meta_generic(
            &json!({"name": "t", "finalizers": ["custom"]}),
            false,
            &accept_all,
            "metadata",
        );
        assert!(generic.is_empty());
        assert_eq!(
            custom_resource_finalizer_warnings(
                &json!({"finalizers": ["custom", "a/b", "Bad_", "custom", "orphan"]}),
                None
            ),
            vec![
                "metadata.finalizers: \"Bad_\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')".to_string(),
                "metadata.finalizers: \"Bad_\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers".to_string(),
                "metadata.finalizers: \"custom\": prefer a domain-qualified finalizer name to avoid accidental conflicts with other finalizer writers".to_string(),
            ]
        );
        assert!(
            custom_resource_finalizer_warnings(
                &json!({"finalizers": ["custom"]}),
                Some(&json!({"finalizers": ["custom"]}))
            )
            .is_empty()
        );
    }

    #[test]
    fn managed_fields() {
        let errs = validate_managed_fields(
            Some(&json!([
                {"operation": "Apply", "fieldsType": "FieldsV1", "manager": "kubectl", "time": "2024-01-02T03:04:05Z", "fieldsV1": {}},
                {"operation": "Patch", "fieldsType": "FieldsV2", "manager": "a\u{7}b", "subresource": "s".repeat(257)},
            ])),
            "metadata.managedFields",
        );
        let got = strings(&errs);
        assert_eq!(got.len(), 4, "{got:?}");
        assert_eq!(
            got[0],
            "metadata.managedFields[1].operation: Invalid value: \"Patch\": must be `Apply` or `Update`"
        );
        assert_eq!(
            got[1],
            "metadata.managedFields[1].fieldsType: Invalid value: \"FieldsV2\": must be `FieldsV1`"
        );
        assert_eq!(errs[2].field, "metadata.managedFields[1].manager");
        assert_eq!(errs[2].detail, "invalid character U+0007 (at position 1)");
        assert_eq!(
            got[3],
            "metadata.managedFields[1].subresource: Too long: may not be more than 256 bytes"
        );
        let errs = validate_field_manager(&"m".repeat(129), "fieldManager");
        assert_eq!(
            strings(&errs),
            vec!["fieldManager: Too long: may not be more than 128 bytes"]
        );
    }

    #[test]
    fn update_deletion_fields_upstream_cases() {
        let now = "1970-01-01T00:16:40Z";
        let later = "1970-01-01T00:33:20Z";
        let base = |extra: Value| {
            let mut m = json!({"name": "test", "resourceVersion": "1"});
            if let (Value::Object(m), Value::Object(e)) = (&mut m, extra) {
                m.extend(e);
            }
            m
        };
        let cases: Vec<(Value, Value, Vec<&str>)> = vec![
            (base(json!({})), base(json!({})), vec![]),
            (
                base(json!({"deletionTimestamp": now, "deletionGracePeriodSeconds": 30})),
                base(json!({"deletionTimestamp": now, "deletionGracePeriodSeconds": 30})),
                vec![],
            ),
            (
                base(json!({})),
                base(json!({"deletionTimestamp": now})),
                vec![
                    "field.deletionTimestamp: Invalid value: \"1970-01-01 00:16:40 +0000 UTC\": field is immutable",
                ],
            ),
            (
                base(json!({"deletionTimestamp": now})),
                base(json!({})),
                vec!["field.deletionTimestamp: Invalid value: \"null\": field is immutable"],
            ),
            (
                base(json!({"deletionTimestamp": now})),
                base(json!({"deletionTimestamp": later})),
                vec![
                    "field.deletionTimestamp: Invalid value: \"1970-01-01 00:33:20 +0000 UTC\": field is immutable",
                ],
            ),
            (
                base(json!({})),
                base(json!({"deletionGracePeriodSeconds": 30})),
                vec!["field.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"],
            ),
            (
                base(json!({"deletionGracePeriodSeconds": 30})),
                base(json!({})),
                vec![
                    "field.deletionGracePeriodSeconds: Invalid value: \"null\": field is immutable",
                ],
            ),
            (
                base(json!({"deletionGracePeriodSeconds": 30})),
                base(json!({"deletionGracePeriodSeconds": 40})),
                vec!["field.deletionGracePeriodSeconds: Invalid value: 40: field is immutable"],
            ),
        ];
        for (old, new, want) in cases {
            let got = strings(&validate_object_meta_update(&new, &old, "field"));
            assert_eq!(got, want, "old {old} new {new}");
        }
        // Same instant written differently is the same time.
        let a = base(json!({"creationTimestamp": "2024-01-02T03:04:05Z"}));
        let b = base(json!({"creationTimestamp": "2024-01-02T05:04:05+02:00"}));
        assert!(validate_object_meta_update(&a, &b, "metadata").is_empty());
    }

    #[test]
    fn update_creation_timestamp_and_generation() {
        let with_time = json!({"name": "test", "resourceVersion": "1", "creationTimestamp": "1970-01-01T00:00:10Z"});
        let without = json!({"name": "test", "resourceVersion": "1"});
        let later = json!({"name": "test", "resourceVersion": "1", "creationTimestamp": "1970-01-01T00:00:11Z"});
        assert_eq!(
            strings(&validate_object_meta_update(&without, &with_time, "field")),
            vec![
                "field.creationTimestamp: Invalid value: \"0001-01-01 00:00:00 +0000 UTC\": field is immutable"
            ]
        );
        assert_eq!(
            validate_object_meta_update(&with_time, &without, "field").len(),
            1
        );
        assert_eq!(
            strings(&validate_object_meta_update(&with_time, &later, "field")),
            vec![
                "field.creationTimestamp: Invalid value: \"1970-01-01 00:00:10 +0000 UTC\": field is immutable"
            ]
        );
        let gen_ = |g: i64| json!({"name": "test", "resourceVersion": "1", "generation": g});
        assert_eq!(
            strings(&validate_object_meta_update(&gen_(4), &gen_(5), "field")),
            vec!["field.generation: Invalid value: 4: must not be decremented"]
        );
        assert!(validate_object_meta_update(&gen_(2), &gen_(1), "field").is_empty());
        assert!(validate_object_meta_update(&gen_(5), &gen_(5), "field").is_empty());
    }

    #[test]
    fn update_immutable_identity_and_resource_version() {
        let old = json!({"name": "a", "namespace": "ns", "uid": "u1", "resourceVersion": "5"});
        let new = json!({"name": "b", "namespace": "other", "uid": "u2"});
        assert_eq!(
            strings(&validate_object_meta_update(&new, &old, "metadata")),
            vec![
                "metadata.resourceVersion: Invalid value: \"\": must be specified for an update",
                "metadata.name: Invalid value: \"b\": field is immutable",
                "metadata.namespace: Invalid value: \"other\": field is immutable",
                "metadata.uid: Invalid value: \"u2\": field is immutable",
            ]
        );
    }

    #[test]
    fn update_finalizers_upstream_cases() {
        let mk = |del: bool, f: &[&str]| {
            let mut m = json!({"name": "test", "resourceVersion": "1", "finalizers": f});
            if del {
                m["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
            }
            m
        };
        let agg = |errs: Vec<FieldError>| crate::status::aggregate(&errs);
        let e =
            validate_object_meta_update(&mk(true, &["x/a", "y/b"]), &mk(true, &["x/a"]), "field");
        assert_eq!(
            agg(e),
            "field.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{\"y/b\"}"
        );
        let e = validate_object_meta_update(&mk(true, &["x/b"]), &mk(true, &["x/a"]), "field");
        assert!(agg(e).contains("x/b"));
        assert!(
            validate_object_meta_update(&mk(true, &["x/a"]), &mk(true, &["x/a", "y/b"]), "field")
                .is_empty()
        );
        assert!(
            validate_object_meta_update(&mk(false, &["x/a", "y/b"]), &mk(false, &["x/a"]), "field")
                .is_empty()
        );
        // Built-in flavour checks new names on update too.
        let e = validate_object_meta_update(&mk(false, &["bare"]), &mk(false, &[]), "metadata");
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "metadata.finalizers[0]");
        assert!(
            validate_object_meta_update_generic(&mk(false, &["bare"]), &mk(false, &[]), "metadata")
                .is_empty()
        );
    }

    #[test]
    fn wrong_json_types_are_field_errors() {
        let errs = validate_object_meta(
            &json!({"name": 5, "namespace": [], "generation": 1.5, "labels": "x",
                    "annotations": {"a": 1}, "ownerReferences": {}, "finalizers": [1],
                    "managedFields": [3]}),
            true,
            &name_is_dns_subdomain,
            "metadata",
        );
        let got = strings(&errs);
        assert!(got.contains(&"metadata.name: Invalid value: \"integer\": metadata.name in body must be of type string: \"integer\"".to_string()), "{got:?}");
        assert!(got.contains(&"metadata.labels: Invalid value: \"string\": metadata.labels in body must be of type object: \"string\"".to_string()));
        assert!(got.contains(&"metadata.annotations[a]: Invalid value: \"integer\": metadata.annotations[a] in body must be of type string: \"integer\"".to_string()));
        assert!(got.contains(&"metadata.generation: Invalid value: \"number\": metadata.generation in body must be of type integer: \"number\"".to_string()));
        assert_eq!(got.len(), 8, "{got:?}");
        assert!(errs.iter().all(|e| e.kind == FieldErrorType::TypeInvalid));
        let not_object = validate_object_meta(&json!("x"), true, &accept_all, "metadata");
        assert_eq!(not_object.len(), 1);
        let null_meta = validate_object_meta(&Value::Null, false, &accept_all, "metadata");
        assert_eq!(
            strings(&null_meta),
            vec!["metadata.name: Required value: name or generateName is required"]
        );
        let bad_time = validate_object_meta_update(
            &json!({"name": "a", "resourceVersion": "1", "creationTimestamp": "yesterday"}),
            &json!({"name": "a"}),
            "metadata",
        );
        assert_eq!(
            strings(&bad_time),
            vec![
                "metadata.creationTimestamp: Invalid value: \"yesterday\": metadata.creationTimestamp in body must be of type date-time: \"yesterday\""
            ]
        );
    }

    #[test]
    fn rfc3339() {
        let t = |s: &str| parse_rfc3339(s).map(|t| t.go_string());
        assert_eq!(
            t("1970-01-01T00:00:00Z").as_deref(),
            Some("1970-01-01 00:00:00 +0000 UTC")
        );
        assert_eq!(
            t("2024-02-29T23:59:59.500+01:30").as_deref(),
            Some("2024-02-29 22:29:59.5 +0000 UTC")
        );
        assert_eq!(t("0001-01-01T00:00:00Z"), Some(Time::ZERO.go_string()));
        assert_eq!(Time::ZERO.go_string(), "0001-01-01 00:00:00 +0000 UTC");
        for bad in [
            "",
            "2024-02-30T00:00:00Z",
            "2023-02-29T00:00:00Z",
            "2024-01-01 00:00:00Z",
            "2024-01-01T24:00:00Z",
            "2024-01-01T00:00:60Z",
            "2024-01-01T00:00:00",
            "2024-01-01T00:00:00.Z",
            "2024-01-01T00:00:00+0100",
            "2024-1-01T00:00:00Z",
            "２０２４-01-01T00:00:00Z",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn immutable_field_helper() {
        assert!(validate_immutable_field(None, Some(&Value::Null), "p").is_empty());
        assert_eq!(
            strings(&validate_immutable_field(None, Some(&json!("x")), "p")),
            vec!["p: Invalid value: \"null\": field is immutable"]
        );
        assert_eq!(
            strings(&validate_immutable_field(
                Some(&json!(3)),
                Some(&json!(2)),
                "p"
            )),
            vec!["p: Invalid value: 3: field is immutable"]
        );
    }
}
