//! Renders JSON values the way Go's `fmt` renders the `interface{}` values upstream's patch
//! code decodes them into (`map[string]interface {}`, `[]interface {}`, `string`, `int64`,
//! `float64`, `bool`, `nil`), so that error messages quote documents exactly as upstream's do.

use std::cmp::Ordering;
use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

use crate::MAX_DEPTH;

/// The dynamic Go type of a decoded JSON value (`reflect.TypeOf`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum GoType {
    Nil,
    Bool,
    Int64,
    Float64,
    String,
    Map,
    Slice,
}

impl GoType {
    pub(crate) fn of(value: &Value) -> GoType {
        match value {
            Value::Null => GoType::Nil,
            Value::Bool(_) => GoType::Bool,
            Value::Number(n) => match go_number(n) {
                GoNumber::Int(_) => GoType::Int64,
                GoNumber::Float(_) => GoType::Float64,
            },
            Value::String(_) => GoType::String,
            Value::Object(_) => GoType::Map,
            Value::Array(_) => GoType::Slice,
        }
    }

    /// `reflect.Type.String()`, as `%s` prints it (a nil type prints as `%!s(<nil>)`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            GoType::Nil => "%!s(<nil>)",
            GoType::Bool => "bool",
            GoType::Int64 => "int64",
            GoType::Float64 => "float64",
            GoType::String => "string",
            GoType::Map => "map[string]interface {}",
            GoType::Slice => "[]interface {}",
        }
    }
}

/// A JSON number as Kubernetes' JSON decoder keeps it: `int64` when the literal is an
/// integer that fits, `float64` otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum GoNumber {
    Int(i64),
    Float(f64),
}

pub(crate) fn go_number(n: &Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(0.0)),
    }
}

/// Go's `==` on two decoded values: `None` where Go panics (both are maps, or both are
/// slices: "comparing uncomparable type").
pub(crate) fn go_eq(a: &Value, b: &Value) -> Option<bool> {
    let (ta, tb) = (GoType::of(a), GoType::of(b));
    if ta != tb {
        return Some(false);
    }
    Some(match (a, b) {
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        (Value::Number(x), Value::Number(y)) => match (go_number(x), go_number(y)) {
            (GoNumber::Int(i), GoNumber::Int(j)) => i == j,
            (GoNumber::Float(f), GoNumber::Float(g)) => f == g,
            _ => false,
        },
        _ => return None,
    })
}

/// `%v` of a decoded value.
#[cfg(test)]
pub(crate) fn v(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Verb::V, 0);
    out
}

/// `%v` of a map.
pub(crate) fn v_map(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, map, Verb::V, 0);
    out
}

/// `%v` of a list.
pub(crate) fn v_list(list: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, list, Verb::V, 0);
    out
}

/// `%v` of a list of lists (`fmt.Sprint` of `[][]interface{}`).
pub(crate) fn v_lists(lists: &[&[Value]]) -> String {
    let mut out = String::from("[");
    for (i, list) in lists.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_list(&mut out, list, Verb::V, 1);
    }
    out.push(']');
    out
}

/// `%s` of a decoded value.
pub(crate) fn s(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Verb::S, 0);
    out
}

/// `%v` of a `[]string`.
pub(crate) fn v_strings(items: &[String]) -> String {
    format!("[{}]", items.join(" "))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    V,
    S,
}

fn write_value(out: &mut String, value: &Value, verb: Verb, depth: usize) {
    if depth > MAX_DEPTH {
        out.push_str("...");
        return;
    }
    match value {
        Value::Object(map) => write_map(out, map, verb, depth),
        Value::Array(list) => write_list(out, list, verb, depth),
        Value::String(s) => out.push_str(s),
        scalar => match verb {
            Verb::V => write_scalar(out, scalar),
            Verb::S => {
                if scalar.is_null() {
                    out.push_str("%!s(<nil>)");
                } else {
                    out.push_str("%!s(");
                    out.push_str(GoType::of(scalar).name());
                    out.push('=');
                    write_scalar(out, scalar);
                    out.push(')');
                }
            }
        },
    }
}

fn write_scalar(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("<nil>"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => {
                let _ = write!(out, "{i}");
            }
            GoNumber::Float(f) => out.push_str(&float_v(f)),
        },
        Value::String(s) => out.push_str(s),
        Value::Object(_) | Value::Array(_) => {}
    }
}

fn write_map(out: &mut String, map: &Map<String, Value>, verb: Verb, depth: usize) {
    let mut keys: Vec<&String> = map.keys().collect();
    keys.sort();
    out.push_str("map[");
    for (i, key) in keys.into_iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        out.push_str(key);
        out.push(':');
        if let Some(value) = map.get(key) {
            write_value(out, value, verb, depth + 1);
        }
    }
    out.push(']');
}

fn write_list(out: &mut String, list: &[Value], verb: Verb, depth: usize) {
    out.push('[');
    for (i, value) in list.iter().enumerate() {
        if i > 0 {
            out.push(' ');
        }
        write_value(out, value, verb, depth + 1);
    }
    out.push(']');
}

/// `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits that
/// round-trip, in exponent form when the decimal exponent is below -4 or at least 6.
pub(crate) fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    // Rust's `{:e}` gives the shortest round-tripping digits: "-1.2345e6".
    let repr = format!("{f:e}");
    let (negative, rest) = match repr.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, repr.as_str()),
    };
    let (mantissa, exp) = rest.split_once('e').unwrap_or((rest, "0"));
    let exp: i64 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let mut out = String::new();
    if negative {
        out.push('-');
    }
    if !(-4..6).contains(&exp) {
        let mut chars = digits.chars();
        if let Some(first) = chars.next() {
            out.push(first);
        }
        let tail: String = chars.collect();
        if !tail.is_empty() {
            out.push('.');
            out.push_str(&tail);
        }
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.unsigned_abs());
    } else {
        // Decimal point after `exp + 1` digits.
        let point = exp + 1;
        let n = i64::try_from(digits.len()).unwrap_or(i64::MAX);
        match point.cmp(&0) {
            Ordering::Less | Ordering::Equal => {
                out.push_str("0.");
                for _ in 0..(-point) {
                    out.push('0');
                }
                out.push_str(&digits);
            }
            Ordering::Greater if point >= n => {
                out.push_str(&digits);
                for _ in 0..(point - n) {
                    out.push('0');
                }
            }
            Ordering::Greater => {
                let split = usize::try_from(point).unwrap_or(0);
                out.push_str(&digits[..split]);
                out.push('.');
                out.push_str(&digits[split..]);
            }
        }
    }
    out
}

/// Go's `strconv.Quote` (`%q`).
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || c == '\u{feff}' => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// The length of Go's `json.Marshal` of a value (which escapes `<`, `>`, `&`, U+2028 and
/// U+2029), as upstream's JSON patch counts the bytes a `copy` adds.
pub(crate) fn go_json_len(value: &Value) -> u64 {
    let mut total: u64 = 0;
    let mut stack: Vec<&Value> = vec![value];
    while let Some(v) = stack.pop() {
        total = total.saturating_add(match v {
            Value::Null => 4,
            Value::Bool(true) => 4,
            Value::Bool(false) => 5,
            Value::Number(n) => n.to_string().len() as u64,
            Value::String(s) => string_len(s),
            Value::Array(items) => {
                stack.extend(items.iter());
                // brackets and commas
                2 + items.len().saturating_sub(1) as u64
            }
            Value::Object(map) => {
                stack.extend(map.values());
                let keys: u64 = map.keys().map(|k| string_len(k) + 1).sum();
                2 + keys + map.len().saturating_sub(1) as u64
            }
        });
    }
    total
}

fn string_len(s: &str) -> u64 {
    let mut n: u64 = 2;
    for c in s.chars() {
        n += match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => 6,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8() as u64,
        };
    }
    n
}

/// Go's `strings.EqualFold`-style comparison of JSON field names, as the JSON decoder
/// matches a key to a struct field when no field has exactly that name.
pub(crate) fn equal_fold(a: &str, b: &str) -> bool {
    let mut x = a.chars();
    let mut y = b.chars();
    loop {
        match (x.next(), y.next()) {
            (None, None) => return true,
            (Some(c), Some(d)) => {
                if c != d && !c.to_lowercase().eq(d.to_lowercase()) {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// The nesting depth of a value: 0 for scalars, 1 + the deepest member for containers.
/// Iterative, so any value can be measured.
pub(crate) fn depth(value: &Value) -> usize {
    let mut max = 0;
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((v, d)) = stack.pop() {
        match v {
            Value::Array(items) => {
                max = max.max(d + 1);
                stack.extend(items.iter().map(|i| (i, d + 1)));
            }
            Value::Object(map) => {
                max = max.max(d + 1);
                stack.extend(map.values().map(|i| (i, d + 1)));
            }
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn formats_like_go() {
        assert_eq!(
            v(&json!({"name": "a", "b": [1, 2.5, null, true], "c": {}})),
            "map[b:[1 2.5 <nil> true] c:map[] name:a]"
        );
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
        assert_eq!(s(&json!({"a": 1})), "map[a:%!s(int64=1)]");
        assert_eq!(v_lists(&[&[json!("a"), json!("b")], &[]]), "[[a b] []]");
    }

    #[test]
    fn floats_like_go() {
        assert_eq!(float_v(1.5), "1.5");
        assert_eq!(float_v(100000.0), "100000");
        assert_eq!(float_v(1000000.0), "1e+06");
        assert_eq!(float_v(1234567.0), "1.234567e+06");
        assert_eq!(float_v(0.0001), "0.0001");
        assert_eq!(float_v(0.00001), "1e-05");
        assert_eq!(float_v(0.0), "0");
        assert_eq!(float_v(-2.25), "-2.25");
        assert_eq!(float_v(1e21), "1e+21");
        assert_eq!(float_v(1.8446744073709552e19), "1.8446744073709552e+19");
        assert_eq!(float_v(123.456), "123.456");
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("a\"b\\c\n"), r#""a\"b\\c\n""#);
        assert_eq!(quote("\u{1}é"), r#""\x01é""#);
    }

    #[test]
    fn go_equality() {
        assert_eq!(go_eq(&json!(1), &json!(1)), Some(true));
        assert_eq!(go_eq(&json!(1), &json!(1.0)), Some(false));
        assert_eq!(go_eq(&json!("a"), &json!({"a": 1})), Some(false));
        assert_eq!(go_eq(&json!({}), &json!({})), None);
        assert_eq!(go_eq(&Value::Null, &Value::Null), Some(true));
    }

    #[test]
    fn json_len_matches_go_marshal() {
        assert_eq!(go_json_len(&json!({"a": [1, "x<y"], "b": null})), 29);
        assert_eq!(go_json_len(&json!([])), 2);
        assert_eq!(go_json_len(&json!({})), 2);
        assert_eq!(go_json_len(&json!("é")), 4);
    }

    #[test]
    fn depth_of_values() {
        assert_eq!(depth(&json!(1)), 0);
        assert_eq!(depth(&json!([])), 1);
        assert_eq!(depth(&json!({"a": [{"b": 1}]})), 3);
    }
}
