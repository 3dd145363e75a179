//! The few Go formatting verbs upstream's authorization messages use.

use api::gofmt::go_quote;

/// Go's `%q` of a `[]string`: each element quoted, space-separated, in brackets
/// (`["a" "b"]`, `[]` when empty).
pub(crate) fn quote_slice<S: AsRef<str>>(values: &[S]) -> String {
    let parts: Vec<String> = values.iter().map(|v| go_quote(v.as_ref())).collect();
    format!("[{}]", parts.join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_slices_like_go() {
        assert_eq!(quote_slice::<&str>(&[]), "[]");
        assert_eq!(quote_slice(&["a", ""]), r#"["a" ""]"#);
        assert_eq!(quote_slice(&["say \"hi\""]), r#"["say \"hi\""]"#);
    }
}
