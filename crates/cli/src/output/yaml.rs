//! YAML as kubectl writes it (`sigs.k8s.io/yaml` over go-yaml v2): keys sorted, two-space
//! indentation with sequences at their key's indentation, strings plain when go-yaml
//! would leave them plain, single-quoted when plain is not allowed, double-quoted when they
//! would read back as another type (`"true"`, `"1"`, timestamps, `""`), literal blocks for
//! multi-line strings. (go-yaml folds long plain strings at 80 columns; we do not — the
//! documents read back the same.)

use serde_json::Value;

/// One document (no `---`), ending with a newline.
pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => emit_map(&mut out, m, 0),
        Value::Array(a) if !a.is_empty() => emit_seq(&mut out, a, 0),
        other => {
            out.push_str(&scalar(other, 0));
            out.push('\n');
        }
    }
    out
}

fn pad(out: &mut String, n: usize) {
    for _ in 0..n {
        out.push(' ');
    }
}

fn emit_map(out: &mut String, m: &serde_json::Map<String, Value>, indent: usize) {
    let mut first = true;
    for (k, v) in m {
        if !first {
            pad(out, indent);
        }
        first = false;
        out.push_str(&string_scalar(k, indent));
        out.push(':');
        emit_value_after_key(out, v, indent);
    }
}

/// Writes a mapping value after `key:` (the key's line is at `indent`).
fn emit_value_after_key(out: &mut String, v: &Value, indent: usize) {
    match v {
        Value::Object(m) if !m.is_empty() => {
            out.push('\n');
            pad(out, indent + 2);
            emit_map(out, m, indent + 2);
        }
        Value::Array(a) if !a.is_empty() => {
            out.push('\n');
            pad(out, indent);
            emit_seq(out, a, indent);
        }
        other => {
            out.push(' ');
            write_scalar(out, other, indent + 2);
            out.push('\n');
        }
    }
}

fn emit_seq(out: &mut String, a: &[Value], indent: usize) {
    let mut first = true;
    for v in a {
        if !first {
            pad(out, indent);
        }
        first = false;
        out.push('-');
        match v {
            Value::Object(m) if !m.is_empty() => {
                out.push(' ');
                emit_map(out, m, indent + 2);
            }
            Value::Array(inner) if !inner.is_empty() => {
                out.push(' ');
                emit_seq(out, inner, indent + 2);
            }
            other => {
                out.push(' ');
                write_scalar(out, other, indent + 2);
                out.push('\n');
            }
        }
    }
}

/// go-yaml's best width: plain and single-quoted scalars break at a space past it.
const BEST_WIDTH: usize = 80;

/// Writes a value scalar at the current column, folding long plain and single-quoted
/// strings as go-yaml does (a space after column 80 becomes a line break to `indent`).
fn write_scalar(out: &mut String, v: &Value, indent: usize) {
    let text = scalar(v, indent);
    let foldable = match v {
        Value::String(s) => matches!(choose_style(s), Style::Plain | Style::Single),
        _ => false,
    };
    if !foldable {
        out.push_str(&text);
        return;
    }
    let line_start = out.rfind('\n').map_or(0, |i| i + 1);
    let mut column = out[line_start..].chars().count();
    let chars: Vec<char> = text.chars().collect();
    let quoted = chars.first() == Some(&'\'');
    let n = chars.len();
    let mut prev_space = false;
    for (i, &c) in chars.iter().enumerate() {
        if c == ' ' {
            let inner_ok = !quoted || (i > 1 && i + 2 < n);
            let next_space = chars.get(i + 1) == Some(&' ');
            if !prev_space && column > BEST_WIDTH && !next_space && inner_ok {
                out.push('\n');
                pad(out, indent);
                column = indent;
                prev_space = true;
                continue;
            }
            prev_space = true;
        } else {
            prev_space = false;
        }
        out.push(c);
        column += 1;
    }
}

fn scalar(v: &Value, indent: usize) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => string_scalar(s, indent),
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
    }
}

/// Numbers as Go formats `int64` and `float64` (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let f = n.as_f64().unwrap_or_default();
    go_float(f)
}

/// `strconv.FormatFloat(f, 'g', -1, 64)`.
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return "0".into();
    }
    // Shortest round-trip digits in exponent form, then choose Go's %g layout.
    let e = format!("{f:e}");
    let (mant, exp) = e.split_once('e').unwrap_or((&e, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mant) = match mant.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mant),
    };
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let eprec = 6;
    let mut s = String::new();
    if neg {
        s.push('-');
    }
    if exp < -4 || exp >= eprec {
        s.push_str(&digits[..1]);
        if digits.len() > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if exp < 0 { '-' } else { '+' });
        s.push_str(&format!("{:02}", exp.abs()));
    } else if exp < 0 {
        s.push_str("0.");
        for _ in 0..(-exp - 1) {
            s.push('0');
        }
        s.push_str(&digits);
    } else {
        let point = usize::try_from(exp + 1).unwrap_or(0);
        if digits.len() <= point {
            s.push_str(&digits);
            for _ in digits.len()..point {
                s.push('0');
            }
        } else {
            s.push_str(&digits[..point]);
            s.push('.');
            s.push_str(&digits[point..]);
        }
    }
    s
}

/// Whether go-yaml v2 would read a plain scalar as something other than a string.
fn resolves_to_non_string(s: &str) -> bool {
    if s.is_empty() {
        return true;
    }
    match s {
        "~" | "null" | "Null" | "NULL" | "true" | "True" | "TRUE" | "false" | "False" | "FALSE"
        | "y" | "Y" | "yes" | "Yes" | "YES" | "n" | "N" | "no" | "No" | "NO" | "on" | "On"
        | "ON" | "off" | "Off" | "OFF" | ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF"
        | "-.inf" | "-.Inf" | "-.INF" | ".nan" | ".NaN" | ".NAN" | "<<" => {
            return true;
        }
        _ => {}
    }
    let first = s.as_bytes()[0];
    if first.is_ascii_digit() || matches!(first, b'-' | b'+' | b'.') {
        let plain = s.replace('_', "");
        if plain.parse::<i64>().is_ok() || plain.parse::<f64>().is_ok() {
            return true;
        }
        let body = plain.trim_start_matches(['-', '+']);
        if let Some(hex) = body.strip_prefix("0x")
            && !hex.is_empty()
            && hex.chars().all(|c| c.is_ascii_hexdigit())
        {
            return true;
        }
        if let Some(bin) = body.strip_prefix("0b")
            && !bin.is_empty()
            && bin.chars().all(|c| c == '0' || c == '1')
        {
            return true;
        }
        // Base-60 numbers (`1:20`), which go-yaml v2 refuses to write plain.
        if body.contains(':')
            && body
                .split(':')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit() || c == '.'))
        {
            return true;
        }
        if is_timestamp(s) {
            return true;
        }
    }
    false
}

/// go-yaml's timestamp formats: `2006-1-2T15:4:5.999999999Z07:00`, `2006-1-2t…`,
/// `2006-1-2 15:4:5.999999999`, `2006-1-2`.
fn is_timestamp(s: &str) -> bool {
    let b = s.as_bytes();
    // A date: four digits, '-', one or two digits, '-', one or two digits.
    let mut i = 0;
    let digits = |i: &mut usize, min: usize, max: usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() && *i - start < max {
            *i += 1;
        }
        *i - start >= min
    };
    if !digits(&mut i, 4, 4) || i >= b.len() || b[i] != b'-' {
        return false;
    }
    i += 1;
    if !digits(&mut i, 1, 2) || i >= b.len() || b[i] != b'-' {
        return false;
    }
    i += 1;
    if !digits(&mut i, 1, 2) {
        return false;
    }
    if i == b.len() {
        return true;
    }
    if !matches!(b[i], b'T' | b't' | b' ') {
        return false;
    }
    // Anything time-like after the date is a timestamp to go-yaml if it parses; be
    // generous: hh:mm:ss with optional fraction and zone.
    let rest = &s[i + 1..];
    let mut parts = rest.splitn(3, ':');
    let h = parts.next().unwrap_or_default();
    let m = parts.next().unwrap_or_default();
    let sec = parts.next().unwrap_or_default();
    !h.is_empty()
        && h.len() <= 2
        && h.chars().all(|c| c.is_ascii_digit())
        && !m.is_empty()
        && m.len() <= 2
        && m.chars().all(|c| c.is_ascii_digit())
        && !sec.is_empty()
        && sec.as_bytes()[0].is_ascii_digit()
}

fn printable(c: char) -> bool {
    c == '\n'
        || (' '..='~').contains(&c)
        || c == '\u{85}'
        || (('\u{a0}'..='\u{d7ff}').contains(&c))
        || (('\u{e000}'..='\u{fffd}').contains(&c) && c != '\u{feff}')
        || ('\u{10000}'..='\u{10ffff}').contains(&c)
}

#[derive(PartialEq)]
enum Style {
    Plain,
    Single,
    Double,
    Literal,
}

fn choose_style(s: &str) -> Style {
    if resolves_to_non_string(s) {
        return Style::Double;
    }
    let special = s.chars().any(|c| !printable(c));
    if special {
        return Style::Double;
    }
    if s.contains('\n') {
        // A literal block needs no trailing spaces before breaks and no leading space
        // problems; otherwise double quotes.
        if s.contains(" \n") {
            return Style::Double;
        }
        return Style::Literal;
    }
    let bytes = s.as_bytes();
    let first = s.chars().next().unwrap_or(' ');
    let mut plain = true;
    if matches!(
        first,
        '#' | ','
            | '['
            | ']'
            | '{'
            | '}'
            | '&'
            | '*'
            | '!'
            | '|'
            | '>'
            | '\''
            | '"'
            | '%'
            | '@'
            | '`'
    ) {
        plain = false;
    }
    if matches!(first, '-' | '?' | ':') && (bytes.len() == 1 || bytes[1] == b' ') {
        plain = false;
    }
    if s.starts_with("---") || s.starts_with("...") {
        plain = false;
    }
    if s.starts_with(' ') || s.ends_with(' ') {
        plain = false;
    }
    if s.contains(": ") || s.contains(" #") || s.ends_with(':') {
        plain = false;
    }
    if plain { Style::Plain } else { Style::Single }
}

fn string_scalar(s: &str, indent: usize) -> String {
    match choose_style(s) {
        Style::Plain => s.to_string(),
        Style::Single => format!("'{}'", s.replace('\'', "''")),
        Style::Double => double_quoted(s),
        Style::Literal => {
            let mut out = String::from("|");
            if s.starts_with(' ') {
                out.push('2');
            }
            let trailing = s.len() - s.trim_end_matches('\n').len();
            match trailing {
                0 => out.push('-'),
                1 => {}
                _ => out.push('+'),
            }
            let body = if trailing == 1 { &s[..s.len() - 1] } else { s };
            let body = if trailing > 1 {
                &body[..body.len() - 1]
            } else {
                body
            };
            for line in body.split('\n') {
                out.push('\n');
                if !line.is_empty() {
                    for _ in 0..indent.max(2) {
                        out.push(' ');
                    }
                    out.push_str(line);
                }
            }
            out
        }
    }
}

fn double_quoted(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\0' => out.push_str("\\0"),
            c if printable(c) => out.push(c),
            c if (c as u32) <= 0xff => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if (c as u32) <= 0xffff => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push_str(&format!("\\U{:08X}", c as u32)),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn like_kubectl() {
        let v = json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"creationTimestamp": null, "labels": {"app": "x"}, "name": "x",
                          "annotations": {"rev": "1", "t": "2024-05-01T10:00:00Z", "e": "", "m": "a: b"}},
            "spec": {"replicas": 1, "strategy": {}, "template": {"spec": {"containers": [
                {"image": "nginx", "name": "nginx", "resources": {}, "args": ["a", "true"]}
            ]}}},
            "status": {}
        });
        let y = to_yaml(&v);
        assert_eq!(
            y,
            "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  annotations:\n    e: \"\"\n    m: 'a: b'\n    rev: \"1\"\n    t: \"2024-05-01T10:00:00Z\"\n  creationTimestamp: null\n  labels:\n    app: x\n  name: x\nspec:\n  replicas: 1\n  strategy: {}\n  template:\n    spec:\n      containers:\n      - args:\n        - a\n        - \"true\"\n        image: nginx\n        name: nginx\n        resources: {}\nstatus: {}\n"
        );
        let back: Value = serde_yaml_ng::from_str(&y).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn folds_long_strings() {
        let v = json!({"metadata": {"annotations": {"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters."}}});
        assert_eq!(
            to_yaml(&v),
            "metadata:\n  annotations:\n    kubernetes.io/description: Contains a CA bundle that can be used to verify the\n      kube-apiserver when using internal endpoints such as the internal service IP\n      or kubernetes.default.svc. No other usage is guaranteed across distributions\n      of Kubernetes clusters.\n"
        );
        let back: Value = serde_yaml_ng::from_str(&to_yaml(&v)).unwrap();
        assert_eq!(back, v);
    }

    #[test]
    fn multiline_and_floats() {
        let v =
            json!({"a": "x\ny\n", "b": "x\ny", "c": 0.5, "d": [[1, 2], {"k": "v"}], "e": "x\n\n"});
        let y = to_yaml(&v);
        let back: Value = serde_yaml_ng::from_str(&y).unwrap();
        assert_eq!(back, v, "{y}");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(0.5), "0.5");
        assert_eq!(go_float(123.25), "123.25");
        assert_eq!(go_float(1e-5), "1e-05");
    }
}
