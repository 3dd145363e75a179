//! Text renderings as Go's standard library produces them, where a cell's bytes come from
//! Go formatting: `fmt.Print` of a float (`%v`), `encoding/json.Marshal` of a map or list
//! (sorted keys, HTML-safe escaping), and `%q` for error messages.

use serde_json::Value;
use std::fmt::Write as _;

/// The shortest decimal digits that round-trip `f` (without sign), and the position of the
/// decimal point relative to them: `f = 0.d1d2… × 10^point`.
fn shortest_digits(f: f64) -> (String, i32) {
    // `{:e}` prints the shortest round-trip digits: `1.2345e6`, `5e-7`, `0e0`.
    let s = format!("{:e}", f.abs());
    let (mantissa, exp) = s.split_once('e').unwrap_or((s.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    (digits, exp + 1)
}

fn sign(f: f64) -> &'static str {
    if f.is_sign_negative() { "-" } else { "" }
}

/// `strconv.FormatFloat(f, 'e', -1, 64)`: `1e+06`, `1.5e-07`.
fn format_e(f: f64) -> String {
    let (digits, point) = shortest_digits(f);
    let exp = if digits == "0" { 0 } else { point - 1 };
    let mut out = String::from(sign(f));
    out.push_str(&digits[..1]);
    if digits.len() > 1 {
        out.push('.');
        out.push_str(&digits[1..]);
    }
    let _ = write!(out, "e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs());
    out
}

/// `strconv.FormatFloat(f, 'f', -1, 64)`: shortest digits, no exponent.
fn format_f(f: f64) -> String {
    let (digits, point) = shortest_digits(f);
    let mut out = String::from(sign(f));
    if digits == "0" {
        out.push('0');
        return out;
    }
    let nd = digits.len() as i32;
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', point.unsigned_abs() as usize));
        out.push_str(&digits);
    } else if point >= nd {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (point - nd) as usize));
    } else {
        out.push_str(&digits[..point as usize]);
        out.push('.');
        out.push_str(&digits[point as usize..]);
    }
    out
}

/// Go's `fmt.Print` of a `float64` (`%v`, i.e. `%g` with the shortest precision): `%e` form
/// when the exponent is below -4 or at least 6 (`1e+06`), else plain (`123456`, `0.0001`).
pub(crate) fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let (digits, point) = shortest_digits(f);
    let exp = if digits == "0" { 0 } else { point - 1 };
    if !(-4..6).contains(&exp) {
        format_e(f)
    } else {
        format_f(f)
    }
}

/// `encoding/json`'s rendering of a `float64`: plain below 1e21 and from 1e-6, else
/// exponent form with a minimal negative exponent (`1e-7`, `1e+21`).
pub(crate) fn float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format_e(f);
        // Go cleans `e-07` up to `e-7`.
        match s.split_once("e-0") {
            Some((m, e)) if e.len() == 1 => format!("{m}e-{e}"),
            _ => s,
        }
    } else {
        format_f(f)
    }
}

/// A JSON number as Go's unstructured decoding holds it: `int64` when it is an integer that
/// fits, else `float64`.
pub(crate) enum GoNumber {
    Int(i64),
    Float(f64),
}

pub(crate) fn go_number(n: &serde_json::Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(0.0)),
    }
}

fn write_json_string(out: &mut String, s: &str) {
    out.push('"');
    for ch in s.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => {
                let _ = write!(out, "\\u{:04x}", u32::from(ch));
            }
            c if u32::from(c) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_json(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => {
                let _ = write!(out, "{i}");
            }
            GoNumber::Float(f) => out.push_str(&float_json(f)),
        },
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
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k);
                out.push(':');
                write_json(out, item);
            }
            out.push('}');
        }
    }
}

/// `encoding/json.Marshal` of an unstructured value: compact, map keys sorted, `<`, `>`,
/// `&`, U+2028 and U+2029 escaped as `\u…`.
pub(crate) fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v);
    out
}

/// Go's `%q` of a string: double-quoted with Go escapes, non-printable characters escaped.
pub(crate) fn quote(s: &str) -> String {
    let mut out = String::from("\"");
    for ch in s.chars() {
        match ch {
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
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_like_fmt_print() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.5, "1.5"),
            (100000.0, "100000"),
            (123456.0, "123456"),
            (1000000.0, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1e100, "1e+100"),
            (12.345, "12.345"),
        ];
        for (f, want) in cases {
            assert_eq!(float_v(*f), *want, "{f}");
        }
    }

    #[test]
    fn floats_like_encoding_json() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (3.0, "3"),
            (1.5, "1.5"),
            (1e20, "100000000000000000000"),
            (1e21, "1e+21"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.5e-10, "1.5e-10"),
            (-123.25, "-123.25"),
        ];
        for (f, want) in cases {
            assert_eq!(float_json(*f), *want, "{f}");
        }
    }

    #[test]
    fn json_like_go() {
        let v = json!({"b": [1, 2.5, true, null], "a": "<x & y>\n\u{2028}\u{1}", "c": {}});
        assert_eq!(
            json(&v),
            r#"{"a":"\u003cx \u0026 y\u003e\n\u2028\u0001","b":[1,2.5,true,null],"c":{}}"#
        );
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(quote("Full"), "\"Full\"");
        assert_eq!(quote("a\"b\\\n\u{1}"), "\"a\\\"b\\\\\\n\\x01\"");
    }
}
