//! Values printed as Go prints them in upstream's messages: `%q` (`strconv.Quote`), `%#v` of a
//! `[]string`, `%#U` of a rune, and `unicode.IsPrint`.
//!
//! Upstream's error texts embed user input through these verbs, so matching the wire means
//! matching Go's escaping, not Rust's `{:?}`.

use std::fmt::Write as _;

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
}
