//! JSON values as structured-merge-diff treats them: its total order (`value.Compare`), its
//! equality (integers and floats compare numerically), and the renderings of its own that
//! upstream prints (`value.ToString` in paths, `%#v` in messages). Go's `%v`, `%q` and `%T`
//! are [`api::gofmt`]'s; JSON is written as json-iterator writes it ([`write_json`]).

use std::cmp::Ordering;
use std::fmt::Write as _;

use api::gofmt::{self, GoNumber, JsonEncoder, go_number, go_quote};
use serde_json::{Map, Number, Value};

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
    match go_number(n) {
        GoNumber::Int(i) => Kind::Int(i),
        GoNumber::Float(f) => Kind::Float(f),
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
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Float(f) => gofmt::float_v(f),
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

/// Appends `s` as a JSON string the way structured-merge-diff's json-iterator encoder
/// writes it.
pub(crate) fn write_json_string(out: &mut String, s: &str) {
    gofmt::write_json_string(out, s, JsonEncoder::JsonIter);
}

/// Appends `v` as structured-merge-diff's json-iterator encoder writes an unstructured
/// value: compact, map keys sorted, HTML characters escaped.
pub(crate) fn write_json(out: &mut String, v: &Value) {
    gofmt::write_json(out, v, JsonEncoder::JsonIter);
}

/// An unstructured value as Go's `%#v` prints it.
pub(crate) fn go_sharp_v(v: &Value) -> String {
    match v {
        Value::Null => "interface {}(nil)".to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Float(f) => gofmt::float_v(f),
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

    fn to_json(v: &Value) -> String {
        let mut out = String::new();
        write_json(&mut out, v);
        out
    }

    #[test]
    fn go_renderings() {
        assert_eq!(to_display(&json!("nginx")), "\"nginx\"");
        assert_eq!(to_display(&json!(80)), "80");
        assert_eq!(to_display(&json!(1e6)), "1e+06");
        assert_eq!(to_display(&json!(100000.0)), "100000");
        assert_eq!(to_display(&json!(0.5)), "0.5");
        assert_eq!(to_display(&json!(0.00001)), "1e-05");
        assert_eq!(
            to_json(&json!({"b": "<&>", "a": [1, 2.5, 1e21, 1e-7]})),
            "{\"a\":[1,2.5,1e+21,1e-7],\"b\":\"\\u003c\\u0026\\u003e\"}"
        );
        // json-iterator's escapes, not encoding/json's `\b`.
        assert_eq!(to_json(&json!("\u{8}\u{c}")), "\"\\u0008\\u000c\"");
        assert_eq!(
            go_sharp_v(&json!({"a": [1, "x", null]})),
            "map[string]interface {}{\"a\":[]interface {}{1, \"x\", interface {}(nil)}}"
        );
    }
}
