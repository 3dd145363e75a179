//! Values printed as Go's standard library prints them, so that upstream's messages and
//! serializations come out byte for byte:
//!
//! - `strconv`: [`is_print`] (`unicode.IsPrint`), [`go_quote`] / [`go_quote_bytes`]
//!   (`Quote`, the `%q` verb), and float formatting: [`format_float_e`], [`format_float_f`],
//!   and [`float_v`] (`'g'` with the shortest precision, which is also `%v`);
//! - `time`: a `Duration` as `String()` prints it ([`go_duration`]);
//! - `fmt`: `%#v` of a `[]string` ([`go_string_slice`]), `%#U` of a rune ([`go_unicode`]),
//!   `%v` and `%s` of decoded JSON values ([`v`], [`v_map`], [`v_list`], [`s`]), and `%T`
//!   ([`GoType::name`]);
//! - `encoding/json`: [`json`], [`write_json`], [`write_json_string`], [`json_string_len`]
//!   and [`float_json`], with json-iterator's variant of the string escapes
//!   ([`JsonEncoder`]);
//! - the Go types Kubernetes' JSON decoding gives values: [`GoNumber`] (`int64` or
//!   `float64`) and [`GoType`];
//! - Prometheus's Go client: a label value in the text format ([`label_value`]).
//!
//! Upstream's error texts embed user input through these verbs, so matching the wire means
//! matching Go's escaping and number formatting, not Rust's `{:?}` and `{}`.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};
use unicode_general_category::{GeneralCategory, get_general_category};

/// Go's `unicode.IsPrint` (and `strconv.IsPrint`): letters, marks, numbers, punctuation,
/// symbols and the ASCII space.
pub fn is_print(c: char) -> bool {
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

/// Go's `strconv.Quote` (the `%q` verb on a string): double quotes, `\"` and `\\`, the
/// C escapes for `\a\b\f\n\r\t\v`, `\xNN` for other ASCII controls, `\uNNNN`/`\UNNNNNNNN`
/// for other characters that are not printable; printable characters as they are.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        push_escaped(&mut out, c);
    }
    out.push('"');
    out
}

/// Go's `strconv.Quote` of bytes that may not be UTF-8: invalid bytes become `\xNN`.
pub fn go_quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() + 2);
    out.push('"');
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            push_escaped(&mut out, c);
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out.push('"');
    out
}

fn push_escaped(out: &mut String, c: char) {
    if c == '"' || c == '\\' {
        out.push('\\');
        out.push(c);
        return;
    }
    if is_print(c) {
        out.push(c);
        return;
    }
    match c {
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

/// Go's `%#v` of a `[]string`: `[]string{"a", "b"}`, `[]string{}` when empty, and
/// `[]string(nil)` for a nil slice (`None`).
pub fn go_string_slice<S: AsRef<str>>(values: Option<&[S]>) -> String {
    match values {
        None => "[]string(nil)".to_string(),
        Some(vs) => {
            let parts: Vec<String> = vs.iter().map(|v| go_quote(v.as_ref())).collect();
            format!("[]string{{{}}}", parts.join(", "))
        }
    }
}

/// Go's `%#U` of a rune: `U+0041 'A'` when printable, `U+0007` otherwise.
pub fn go_unicode(c: char) -> String {
    if is_print(c) {
        format!("U+{:04X} '{c}'", c as u32)
    } else {
        format!("U+{:04X}", c as u32)
    }
}

/// A JSON number as Kubernetes' JSON decoding keeps it: `int64` when the literal is an
/// integer that fits, `float64` otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum GoNumber {
    Int(i64),
    Float(f64),
}

/// The Go type of a decoded JSON number.
pub fn go_number(n: &Number) -> GoNumber {
    match n.as_i64() {
        Some(i) => GoNumber::Int(i),
        None => GoNumber::Float(n.as_f64().unwrap_or(0.0)),
    }
}

/// The dynamic Go type of a decoded JSON value (`reflect.TypeOf` of the `interface{}`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GoType {
    Nil,
    Bool,
    Int64,
    Float64,
    String,
    Map,
    Slice,
}

impl GoType {
    pub fn of(value: &Value) -> GoType {
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

    /// The type's name as `%T` prints it (`<nil>` for a nil interface).
    pub fn name(self) -> &'static str {
        match self {
            GoType::Nil => "<nil>",
            GoType::Bool => "bool",
            GoType::Int64 => "int64",
            GoType::Float64 => "float64",
            GoType::String => "string",
            GoType::Map => "map[string]interface {}",
            GoType::Slice => "[]interface {}",
        }
    }

    /// `%s` of the `reflect.Type`: its name, but `%!s(<nil>)` for a nil type.
    pub fn s(self) -> &'static str {
        match self {
            GoType::Nil => "%!s(<nil>)",
            t => t.name(),
        }
    }
}

/// The shortest decimal digits that round-trip `|f|`, and the position of the decimal point
/// relative to them: `|f| = 0.d1d2… × 10^point` (`("0", 1)` for zero).
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

/// `strconv.FormatFloat(f, 'e', -1, 64)` of a finite `f`: `1e+06`, `-1.5e-07`.
pub fn format_float_e(f: f64) -> String {
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

/// `strconv.FormatFloat(f, 'f', -1, 64)` of a finite `f`: the shortest digits, no exponent.
pub fn format_float_f(f: f64) -> String {
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

/// A Prometheus label value as Go's client writes it in the text format: `\\`, `"` and
/// newlines escaped.
pub fn label_value(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// `%v` of a `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`): the shortest digits that
/// round-trip, in exponent form when the decimal exponent is below -4 or at least 6
/// (`1e+06`, `1e-05`), else plain (`123456`, `0.0001`).
pub fn float_v(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    let (digits, point) = shortest_digits(f);
    let exp = if digits == "0" { 0 } else { point - 1 };
    if (-4..6).contains(&exp) {
        format_float_f(f)
    } else {
        format_float_e(f)
    }
}

/// `encoding/json`'s rendering of a `float64` (json-iterator's is the same): plain from
/// 1e-6 and below 1e21, else the exponent form with Go's clean-up of `e-07` to `e-7`
/// (`1e-7`, `1e+21`).
pub fn float_json(f: f64) -> String {
    let abs = f.abs();
    if abs != 0.0 && !(1e-6..1e21).contains(&abs) {
        let s = format_float_e(f);
        match s.split_once("e-0") {
            Some((m, e)) if e.len() == 1 => format!("{m}e-{e}"),
            _ => s,
        }
    } else {
        format_float_f(f)
    }
}

/// Values nested deeper than this print as `...` in [`v`] and [`s`]. Go has no such limit;
/// this keeps the recursion bounded (serde_json itself parses no deeper than 128).
const MAX_FMT_DEPTH: usize = 128;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Verb {
    V,
    S,
}

/// `%v` of a decoded value: `map[a:1 b:[x <nil>]]`, bare strings, `<nil>`.
pub fn v(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Verb::V, 0);
    out
}

/// `%v` of a `map[string]interface{}`.
pub fn v_map(map: &Map<String, Value>) -> String {
    let mut out = String::new();
    write_map(&mut out, map, Verb::V, 0);
    out
}

/// `%v` of a `[]interface{}`.
pub fn v_list(list: &[Value]) -> String {
    let mut out = String::new();
    write_list(&mut out, list, Verb::V, 0);
    out
}

/// `%s` of a decoded value: as `%v` for strings, maps and lists, `%!s(int64=1)` for other
/// scalars and `%!s(<nil>)` for nil.
pub fn s(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value, Verb::S, 0);
    out
}

fn write_value(out: &mut String, value: &Value, verb: Verb, depth: usize) {
    if depth > MAX_FMT_DEPTH {
        out.push_str("...");
        return;
    }
    match value {
        Value::Object(map) => write_map(out, map, verb, depth),
        Value::Array(list) => write_list(out, list, verb, depth),
        Value::String(s) => out.push_str(s),
        Value::Null if verb == Verb::S => out.push_str("%!s(<nil>)"),
        scalar if verb == Verb::S => {
            out.push_str("%!s(");
            out.push_str(GoType::of(scalar).name());
            out.push('=');
            write_scalar(out, scalar);
            out.push(')');
        }
        scalar => write_scalar(out, scalar),
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

/// Which of Go's JSON encoders to mirror. They differ only in how a string's `\b` and `\f`
/// are escaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonEncoder {
    /// `encoding/json` (Go 1.22 and later): `\b` and `\f`.
    Std,
    /// json-iterator's `ConfigCompatibleWithStandardLibrary`, which structured-merge-diff
    /// (before v6) serializes field sets and path elements with: `\u0008` and `\u000c`.
    JsonIter,
}

/// How a character stands in a JSON string: as it is, as a two-character escape (`\n`), or
/// as `\uXXXX`. Both encoders escape HTML's `<`, `>`, `&` and U+2028, U+2029.
enum JsonChar {
    Plain,
    Short(char),
    Unicode,
}

fn json_char(c: char, encoder: JsonEncoder) -> JsonChar {
    match c {
        '"' | '\\' => JsonChar::Short(c),
        '\n' => JsonChar::Short('n'),
        '\r' => JsonChar::Short('r'),
        '\t' => JsonChar::Short('t'),
        '\u{8}' if encoder == JsonEncoder::Std => JsonChar::Short('b'),
        '\u{c}' if encoder == JsonEncoder::Std => JsonChar::Short('f'),
        '<' | '>' | '&' | '\u{2028}' | '\u{2029}' => JsonChar::Unicode,
        c if (c as u32) < 0x20 => JsonChar::Unicode,
        _ => JsonChar::Plain,
    }
}

/// Appends `s` as a JSON string the way `encoder` writes it.
pub fn write_json_string(out: &mut String, s: &str, encoder: JsonEncoder) {
    out.push('"');
    for c in s.chars() {
        match json_char(c, encoder) {
            JsonChar::Plain => out.push(c),
            JsonChar::Short(e) => {
                out.push('\\');
                out.push(e);
            }
            JsonChar::Unicode => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
        }
    }
    out.push('"');
}

/// The length in bytes of what [`write_json_string`] writes for `s`.
pub fn json_string_len(s: &str, encoder: JsonEncoder) -> usize {
    2 + s
        .chars()
        .map(|c| match json_char(c, encoder) {
            JsonChar::Plain => c.len_utf8(),
            JsonChar::Short(_) => 2,
            JsonChar::Unicode => 6,
        })
        .sum::<usize>()
}

/// Appends `v` as `encoder` marshals an unstructured value: compact, map keys sorted,
/// numbers as their Go types print them ([`GoNumber`], [`float_json`]).
pub fn write_json(out: &mut String, v: &Value, encoder: JsonEncoder) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match go_number(n) {
            GoNumber::Int(i) => {
                let _ = write!(out, "{i}");
            }
            GoNumber::Float(f) => out.push_str(&float_json(f)),
        },
        Value::String(s) => write_json_string(out, s, encoder),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json(out, item, encoder);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (k, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_json_string(out, k, encoder);
                out.push(':');
                write_json(out, item, encoder);
            }
            out.push('}');
        }
    }
}

/// `encoding/json.Marshal` of an unstructured value.
pub fn json(v: &Value) -> String {
    let mut out = String::new();
    write_json(&mut out, v, JsonEncoder::Std);
    out
}

/// A `time.Duration` as Go's `String()` prints it (`0s`, `500ms`, `1.5s`, `1m20s`,
/// `12h0m0s`, `2562047h47m16.854775807s`).
pub fn go_duration(d: std::time::Duration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    if nanos < 1_000_000_000 {
        if nanos < 1_000 {
            return format!("{nanos}ns");
        }
        let (v, unit) = if nanos < 1_000_000 {
            (nanos as f64 / 1e3, "µs")
        } else {
            (nanos as f64 / 1e6, "ms")
        };
        let digits = format!("{v:.6}");
        return format!(
            "{}{unit}",
            digits.trim_end_matches('0').trim_end_matches('.')
        );
    }
    let total_secs = nanos / 1_000_000_000;
    let frac = nanos % 1_000_000_000;
    let (h, m, s) = (total_secs / 3600, (total_secs % 3600) / 60, total_secs % 60);
    let secs = if frac == 0 {
        format!("{s}")
    } else {
        let f = format!("{frac:09}");
        format!("{s}.{}", f.trim_end_matches('0'))
    };
    if h > 0 {
        format!("{h}h{m}m{secs}s")
    } else if m > 0 {
        format!("{m}m{secs}s")
    } else {
        format!("{secs}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quote_matches_strconv() {
        let cases = [
            ("", r#""""#),
            ("abc", r#""abc""#),
            ("a\"b\\c", r#""a\"b\\c""#),
            ("\u{7}\u{8}\u{c}\n\r\t\u{b}", r#""\a\b\f\n\r\t\v""#),
            ("\u{0}\u{1f}\u{7f}", r#""\x00\x1f\x7f""#),
            ("rā 日本", "\"rā 日本\""),
            ("\u{a0}", r#""\u00a0""#),
            ("\u{ad}", r#""\u00ad""#),
            ("\u{200b}", r#""\u200b""#),
            ("\u{feff}", r#""\ufeff""#),
            ("\u{e000}", r#""\ue000""#),
            ("\u{10ffff}", r#""\U0010ffff""#),
            ("😀", "\"😀\""),
        ];
        for (input, want) in cases {
            assert_eq!(go_quote(input), want, "{input:?}");
        }
        assert_eq!(go_quote_bytes(b"a\xffb"), r#""a\xffb""#);
    }

    #[test]
    fn string_slices() {
        assert_eq!(go_string_slice::<&str>(None), "[]string(nil)");
        assert_eq!(go_string_slice::<&str>(Some(&[])), "[]string{}");
        assert_eq!(
            go_string_slice(Some(&["a", "b\"c"])),
            r#"[]string{"a", "b\"c"}"#
        );
    }

    #[test]
    fn unicode_verb() {
        assert_eq!(go_unicode('\u{7}'), "U+0007");
        assert_eq!(go_unicode('x'), "U+0078 'x'");
        assert_eq!(go_unicode('\u{1f600}'), "U+1F600 '😀'");
    }

    #[test]
    fn floats_like_fmt_print() {
        let cases: &[(f64, &str)] = &[
            (0.0, "0"),
            (-0.0, "-0"),
            (1.5, "1.5"),
            (-2.25, "-2.25"),
            (100000.0, "100000"),
            (123456.0, "123456"),
            (1000000.0, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (-2.5e-7, "-2.5e-07"),
            (1e21, "1e+21"),
            (1e100, "1e+100"),
            (1.8446744073709552e19, "1.8446744073709552e+19"),
            (12.345, "12.345"),
            (123.456, "123.456"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
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
    fn values_like_fmt() {
        use serde_json::json;
        assert_eq!(
            v(&json!({"name": "a", "b": [1, 2.5, null, true], "c": {}})),
            "map[b:[1 2.5 <nil> true] c:map[] name:a]"
        );
        assert_eq!(v(&json!({"a": [1, "x"]})), "map[a:[1 x]]");
        assert_eq!(s(&json!(1)), "%!s(int64=1)");
        assert_eq!(s(&json!(1.5)), "%!s(float64=1.5)");
        assert_eq!(s(&json!(true)), "%!s(bool=true)");
        assert_eq!(s(&Value::Null), "%!s(<nil>)");
        assert_eq!(s(&json!({"a": 1})), "map[a:%!s(int64=1)]");
        assert_eq!(GoType::of(&json!("x")).name(), "string");
        assert_eq!(GoType::of(&json!(u64::MAX)).name(), "float64");
        assert_eq!(GoType::Nil.name(), "<nil>");
        assert_eq!(GoType::Nil.s(), "%!s(<nil>)");
    }

    #[test]
    fn json_like_go() {
        use serde_json::json;
        let v = json!({"b": [1, 2.5, true, null, 1e21, 1e-7], "a": "<x & y>\n\u{2028}\u{1}\u{8}", "c": {}});
        assert_eq!(
            json(&v),
            r#"{"a":"\u003cx \u0026 y\u003e\n\u2028\u0001\b","b":[1,2.5,true,null,1e+21,1e-7],"c":{}}"#
        );
        let mut out = String::new();
        write_json_string(&mut out, "\u{8}\u{c}\t", JsonEncoder::JsonIter);
        assert_eq!(out, r#""\u0008\u000c\t""#);
        for s in ["", "é<\u{8}\u{1}\"", "\u{2029}\u{c}x"] {
            for encoder in [JsonEncoder::Std, JsonEncoder::JsonIter] {
                let mut out = String::new();
                write_json_string(&mut out, s, encoder);
                assert_eq!(json_string_len(s, encoder), out.len(), "{s:?}");
            }
        }
    }

    #[test]
    fn go_durations() {
        use std::time::Duration;
        assert_eq!(go_duration(Duration::ZERO), "0s");
        assert_eq!(go_duration(Duration::from_secs(10)), "10s");
        assert_eq!(go_duration(Duration::from_secs(80)), "1m20s");
        assert_eq!(go_duration(Duration::from_secs(300)), "5m0s");
        assert_eq!(go_duration(Duration::from_secs(12 * 3600)), "12h0m0s");
        assert_eq!(go_duration(Duration::from_millis(1500)), "1.5s");
        assert_eq!(go_duration(Duration::from_millis(500)), "500ms");
        assert_eq!(go_duration(Duration::from_nanos(1_100)), "1.1µs");
        assert_eq!(go_duration(Duration::from_nanos(7)), "7ns");
    }
}
