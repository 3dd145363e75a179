//! `-o jsonpath=…`: client-go's JSONPath templates (through `printers::jsonpath`, which
//! also serves the server's printer columns), with kubectl's error wording.

use serde_json::Value;

use crate::error::{CliError, Result};

/// Runs a template over an object (or kubectl's `List`).
pub fn execute(template: &str, obj: &Value, as_json: bool, allow_missing: bool) -> Result<String> {
    // Parse first so syntax errors get kubectl's parse wording.
    if let Err(e) = printers::jsonpath::execute(template, &Value::Null, false, true)
        && is_parse_error(&e)
    {
        return Err(CliError::msg(format!(
            "error parsing jsonpath {template}, {e}"
        )));
    }
    printers::jsonpath::execute(template, obj, as_json, allow_missing).map_err(|e| {
        CliError::msg(format!(
            "error executing jsonpath {template:?}: Error executing template: {e}. Printing more information for debugging the template:\n\ttemplate was:\n\t\t{template}\n\tobject given to jsonpath engine was:\n\t\t{}\n\n",
            obj
        ))
    })
}

fn is_parse_error(e: &str) -> bool {
    e.starts_with("unclosed")
        || e.starts_with("unterminated")
        || e.starts_with("unrecognized character")
        || e.starts_with("invalid array index")
        || e.starts_with("invalid multiple")
        || e.starts_with("cannot parse number")
        || e.starts_with("unquote string")
        || e.starts_with("array index")
        || e == "invalid action"
}

/// kubectl's relaxed JSONPath for custom columns and `--sort-by`: `.a.b`, `a.b` and
/// `{.a.b}` all mean `{.a.b}`.
pub fn relaxed(expr: &str) -> Result<String> {
    let e = expr.trim();
    if e.is_empty() {
        return Err(CliError::msg(
            "unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'",
        ));
    }
    let inner = if e.starts_with('{') && e.ends_with('}') {
        &e[1..e.len() - 1]
    } else {
        e
    };
    let inner = inner.strip_prefix('.').unwrap_or(inner);
    Ok(format!("{{.{inner}}}"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn runs_and_errors() {
        let o = json!({"metadata": {"name": "x"}});
        assert_eq!(execute("{.metadata.name}", &o, false, true).unwrap(), "x");
        let e = execute("{.metadata.name", &o, false, true)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("error: error parsing jsonpath {.metadata.name, unclosed action"),
            "{e}"
        );
        assert_eq!(relaxed("metadata.name").unwrap(), "{.metadata.name}");
        assert_eq!(relaxed(".metadata.name").unwrap(), "{.metadata.name}");
        assert_eq!(relaxed("{.metadata.name}").unwrap(), "{.metadata.name}");
    }
}
