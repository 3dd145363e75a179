//! JSON values as structured-merge-diff treats them: its total order (`value.Compare`), its
//! equality (integers and floats compare numerically), and the renderings upstream prints —
//! Go's `%v` and `%q` in messages, and encoding/json (sorted keys, HTML escaping) in
//! serialized path elements and annotations.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};
use unicode_general_category::{GeneralCategory, get_general_category};

/// The kinds a value can have, in structured-merge-diff's order.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    Float(f64),
    Int(i64),
    Str,
    Bool,
    List,
    Map,
    Null,
}

fn kind(v: &Value) -> Kind {
    match v {
        Value::Number(n) => number_kind(n),
        Value::String(_) => Kind::Str,
        Value::Bool(_) => Kind::Bool,
        Value::Array(_) => Kind::List,
        Value::Object(_) => Kind::Map,
        Value::Null => Kind::Null,
    }
}

/// Integers that fit an int64 are integers (as upstream's JSON decoding makes them); other
/// numbers are floats.
fn number_kind(n: &Number) -> Kind {
    if let Some(i) = n.as_i64() {
        Kind::Int(i)
    } else {
        Kind::Float(n.as_f64().unwrap_or(0.0))
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    if a < b {
        Ordering::Less
    } else if a == b {
        Ordering::Equal
    } else {
        Ordering::Greater
    }
}

/// structured-merge-diff's total order over values: floats, then integers (the two compared
/// numerically with each other), strings, booleans, lists, maps, null.
pub(crate) fn compare(lhs: &Value, rhs: &Value) -> Ordering {
    let (l, r) = (kind(lhs), kind(rhs));
    match (l, r) {
        (Kind::Float(a), Kind::Float(b)) => return float_cmp(a, b),
        (Kind::Float(a), Kind::Int(b)) => return float_cmp(a, b as f64),
        (Kind::Float(_), _) => return Ordering::Less,
        (Kind::Int(a), Kind::Float(b)) => return float_cmp(a as f64, b),
        (_, Kind::Float(_)) => return Ordering::Greater,
        _ => {}
    }
    match (l, r) {
        (Kind::Int(a), Kind::Int(b)) => return a.cmp(&b),
        (Kind::Int(_), _) => return Ordering::Less,
        (_, Kind::Int(_)) => return Ordering::Greater,
        _ => {}
    }
    match (lhs, rhs) {
        (Value::String(a), Value::String(b)) => return a.as_bytes().cmp(b.as_bytes()),
        (Value::String(_), _) => return Ordering::Less,
        (_, Value::String(_)) => return Ordering::Greater,
        _ => {}
    }
    match (lhs, rhs) {
        (Value::Bool(a), Value::Bool(b)) => return a.cmp(b),
        (Value::Bool(_), _) => return Ordering::Less,
        (_, Value::Bool(_)) => return Ordering::Greater,
        _ => {}
    }
    match (lhs, rhs) {
        (Value::Array(a), Value::Array(b)) => return list_compare(a, b),
        (Value::Array(_), _) => return Ordering::Less,
        (_, Value::Array(_)) => return Ordering::Greater,
        _ => {}
    }
    match (lhs, rhs) {
        (Value::Object(a), Value::Object(b)) => map_compare(a, b),
        (Value::Object(_), _) => Ordering::Less,
        (_, Value::Object(_)) => Ordering::Greater,
        _ => Ordering::Equal,
    }
}

fn list_compare(a: &[Value], b: &[Value]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        let c = compare(x, y);
        if c != Ordering::Equal {
            return c;
        }
    }
    a.len().cmp(&b.len())
}

/// Maps compare by their keys in lexical order, as upstream's `MapCompare` zips them.
fn map_compare(a: &Map<String, Value>, b: &Map<String, Value>) -> Ordering {
    if a.is_empty() && b.is_empty() {
        return Ordering::Equal;
    }
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort_unstable_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
    keys.dedup();
    for (i, key) in keys.into_iter().enumerate() {
        let c = if i == a.len() {
            Ordering::Less
        } else if i == b.len() {
            Ordering::Greater
        } else {
            match (a.get(key), b.get(key)) {
                (None, _) => Ordering::Greater,
                (_, None) => Ordering::Less,
                (Some(x), Some(y)) => compare(x, y),
            }
        };
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// structured-merge-diff's equality: deep, with integers and floats equal when numerically
/// equal.
pub(crate) fn equal(lhs: &Value, rhs: &Value) -> bool {
    match (kind(lhs), kind(rhs)) {
        (Kind::Float(a), Kind::Float(b)) => return a == b,
        (Kind::Float(a), Kind::Int(b)) | (Kind::Int(b), Kind::Float(a)) => return a == b as f64,
        (Kind::Int(a), Kind::Int(b)) => return a == b,
        _ => {}
    }
    match (lhs, rhs) {
        (Value::String(a), Value::String(b)) => a == b,
        (Value::Bool(a), Value::Bool(b)) => a == b,
        (Value::Null, Value::Null) => true,
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| equal(x, y))
        }
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().all(|(k, x)| b.get(k).is_some_and(|y| equal(x, y)))
        }
        _ => false,
    }
}

/// A value as upstream's `value.ToString` renders it in paths: strings quoted as Go's `%q`,
/// numbers and booleans bare, lists as `[a,b]`, maps as `k=v` pairs.
pub(crate) fn to_display(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::Number(n) => match number_kind(n) {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => go_float_v(f),
            _ => n.to_string(),
        },
        Value::String(s) => go_quote(s),
        Value::Bool(b) => b.to_string(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(to_display).collect();
            format!("[{}]", parts.join(","))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            let mut out = String::new();
            for k in keys {
                if let Some(x) = m.get(k) {
                    let _ = write!(out, "{k}={}", to_display(x));
                }
            }
            out
        }
    }
}

/// Whether Go's `unicode.IsPrint` holds: letters, marks, numbers, punctuation, symbols and
/// the ASCII space.
pub(crate) fn is_go_print(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    use GeneralCategory as G;
    matches!(
        get_general_category(c),
        G::UppercaseLetter
            | G::LowercaseLetter
            | G::TitlecaseLetter
            | G::ModifierLetter
            | G::OtherLetter
            | G::NonspacingMark
            | G::SpacingMark
            | G::EnclosingMark
            | G::DecimalNumber
            | G::LetterNumber
            | G::OtherNumber
            | G::ConnectorPunctuation
            | G::DashPunctuation
            | G::OpenPunctuation
            | G::ClosePunctuation
            | G::InitialPunctuation
            | G::FinalPunctuation
            | G::OtherPunctuation
            | G::MathSymbol
            | G::CurrencySymbol
            | G::ModifierSymbol
            | G::OtherSymbol
    )
}

/// A string quoted as Go's `strconv.Quote` (`%q`) does.
pub(crate) fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if is_go_print(c) => out.push(c),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push('"');
    out
}

/// The shortest decimal digits of `f` and its decimal exponent, from Rust's `{:e}`:
/// `(mantissa text, exponent)`, e.g. `("1.5", 6)` for 1.5e6.
fn float_parts(f: f64) -> (String, i32) {
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((mantissa, exp)) => (mantissa.to_string(), exp.parse().unwrap_or(0)),
        None => (s, 0),
    }
}

fn exponent_form(mantissa: &str, exp: i32, min_digits: usize) -> String {
    let sign = if exp < 0 { '-' } else { '+' };
    format!(
        "{mantissa}e{sign}{:0width$}",
        exp.unsigned_abs(),
        width = min_digits
    )
}

/// A float as Go's `%v` prints it: `%g` with the shortest precision, which switches to the
/// exponent form when the decimal exponent is below -4 or at least 6 (`1e+06`, `100000`).
fn go_float_v(f: f64) -> String {
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let (mantissa, exp) = float_parts(f);
    if !(-4..6).contains(&exp) {
        exponent_form(&mantissa, exp, 2)
    } else {
        format!("{f}")
    }
}

/// A float as Go's encoding/json writes it: plain decimal, or the exponent form (with Go's
/// `e-7` clean-up) below 1e-6 and from 1e21 on.
fn go_float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let (mantissa, exp) = float_parts(f);
        // Go prints at least two exponent digits, then trims `e-07` to `e-7`.
        let min = if exp < 0 { 1 } else { 2 };
        exponent_form(&mantissa, exp, min)
    } else if f == 0.0 {
        if f.is_sign_negative() { "-0" } else { "0" }.to_string()
    } else {
        format!("{f}")
    }
}

/// Appends `s` as a JSON string the way Go's encoders do (HTML-sensitive characters and the
/// line and paragraph separators escaped).
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends `v` as Go's encoding/json writes an unstructured value: compact, map keys sorted.
pub(crate) fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if n.is_f64() {
                out.push_str(&go_float_json(n.as_f64().unwrap_or(0.0)));
            } else {
                let _ = write!(out, "{n}");
            }
        }
        Value::String(s) => write_json_string(out, s),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut entries: Vec<(&String, &Value)> = m.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, x)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, x);
            }
            out.push('}');
        }
    }
}

/// `v` as Go's encoding/json writes it.
pub(crate) fn to_json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v);
    out
}

/// The Go type name `%T` prints for an unstructured value.
pub(crate) fn go_type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) => match number_kind(n) {
            Kind::Int(_) => "int64",
            _ => "float64",
        },
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// An unstructured value as Go's `%v` prints it (`map[a:1]`, `[1 2]`, bare strings).
pub(crate) fn go_v(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match number_kind(n) {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => go_float_v(f),
            _ => n.to_string(),
        },
        Value::String(s) => s.clone(),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_v).collect();
            format!("[{}]", parts.join(" "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            let parts: Vec<String> = keys
                .into_iter()
                .filter_map(|k| m.get(k).map(|x| format!("{k}:{}", go_v(x))))
                .collect();
            format!("map[{}]", parts.join(" "))
        }
    }
}

/// An unstructured value as Go's `%#v` prints it.
pub(crate) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match number_kind(n) {
            Kind::Int(i) => i.to_string(),
            Kind::Float(f) => go_float_v(f),
            _ => n.to_string(),
        },
        Value::String(s) => go_quote(s),
        Value::Array(items) => {
            let parts: Vec<String> = items.iter().map(go_sharp_v).collect();
            format!("[]interface {{}}{{{}}}", parts.join(", "))
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort_unstable();
            let parts: Vec<String> = keys
                .into_iter()
                .filter_map(|k| {
                    m.get(k)
                        .map(|x| format!("{}:{}", go_quote(k), go_sharp_v(x)))
                })
                .collect();
            format!("map[string]interface {{}}{{{}}}", parts.join(", "))
        }
    }
}

/// Whether a value is an empty map (upstream's "empty map" test for struct fields).
pub(crate) fn is_empty_map(v: &Value) -> bool {
    v.as_object().is_some_and(Map::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn order_matches_upstream() {
        let ordered = [
            json!(1.5),
            json!(2),
            json!(2.5),
            json!("a"),
            json!("b"),
            json!(false),
            json!(true),
            json!([1]),
            json!([1, 2]),
            json!({"a": 1}),
            json!(null),
        ];
        for (i, a) in ordered.iter().enumerate() {
            for (j, b) in ordered.iter().enumerate() {
                assert_eq!(compare(a, b), i.cmp(&j), "{a} vs {b}");
            }
        }
        assert_eq!(compare(&json!(80), &json!(80.0)), Ordering::Equal);
        assert!(equal(&json!(80), &json!(80.0)));
        assert!(!equal(&json!(80), &json!("80")));
        assert!(equal(&json!({"a": [1, 2.0]}), &json!({"a": [1.0, 2]})));
    }

    #[test]
    fn go_renderings() {
        assert_eq!(to_display(&json!("nginx")), "\"nginx\"");
        assert_eq!(to_display(&json!(80)), "80");
        assert_eq!(to_display(&json!(1e6)), "1e+06");
        assert_eq!(to_display(&json!(100000.0)), "100000");
        assert_eq!(to_display(&json!(0.5)), "0.5");
        assert_eq!(to_display(&json!(0.00001)), "1e-05");
        assert_eq!(go_quote("a\"b\\c\n\u{1}é"), "\"a\\\"b\\\\c\\n\\x01é\"");
        assert_eq!(go_quote("\u{200b}"), "\"\\u200b\"");
        assert_eq!(
            to_json(&json!({"b": "<&>", "a": [1, 2.5, 1e21, 1e-7]})),
            "{\"a\":[1,2.5,1e+21,1e-7],\"b\":\"\\u003c\\u0026\\u003e\"}"
        );
        assert_eq!(go_v(&json!({"a": [1, "x"]})), "map[a:[1 x]]");
        assert_eq!(go_type_name(&json!("x")), "string");
    }
}
