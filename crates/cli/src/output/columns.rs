//! `-o custom-columns=HEADER:.path,…` and `-o custom-columns-file=…`, as kubectl's
//! `CustomColumnsPrinter`: each column a relaxed JSONPath, several results joined with
//! commas, `<none>` for no result.

use serde_json::Value;

use crate::error::{CliError, Result};

/// One column.
#[derive(Debug, Clone, PartialEq)]
pub struct Column {
    pub header: String,
    /// The JSONPath template (`{.metadata.name}`).
    pub template: String,
}

/// Parses `NAME:.metadata.name,RSRC:.metadata.resourceVersion`.
pub fn parse_spec(spec: &str) -> Result<Vec<Column>> {
    if spec.is_empty() {
        return Err(CliError::msg(
            "custom-columns format specified but no custom columns given",
        ));
    }
    let mut cols = Vec::new();
    for part in spec.split(',') {
        let Some((header, path)) = part.split_once(':') else {
            return Err(CliError::msg(format!(
                "unexpected custom-columns spec: {part}, expected <header>:<json-path-expr>"
            )));
        };
        let template = super::jsonpath::relaxed(path)?;
        cols.push(Column {
            header: header.to_string(),
            template,
        });
    }
    Ok(cols)
}

/// A custom-columns file (a line of headers, a line of paths) as a spec.
pub fn spec_from_file(text: &str) -> Result<String> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let headers: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    let paths: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    if headers.len() != paths.len() {
        return Err(CliError::msg(format!(
            "number of columns ({}) does not match number of JSON paths ({})",
            headers.len(),
            paths.len()
        )));
    }
    Ok(headers
        .iter()
        .zip(paths)
        .map(|(h, p)| format!("{h}:{p}"))
        .collect::<Vec<_>>()
        .join(","))
}

/// One object's cells.
pub fn row(cols: &[Column], obj: &Value) -> Result<Vec<String>> {
    let mut cells = Vec::with_capacity(cols.len());
    for c in cols {
        let text = printers::jsonpath::execute(&c.template, obj, true, true)
            .ok()
            .and_then(|_| values(&c.template, obj))
            .unwrap_or_default();
        cells.push(if text.is_empty() {
            "<none>".into()
        } else {
            text
        });
    }
    Ok(cells)
}

/// The column's results joined with commas (Go's `fmt.Sprint` of each).
fn values(template: &str, obj: &Value) -> Option<String> {
    let json = printers::jsonpath::execute(template, obj, true, true).ok()?;
    let arr: Value = serde_json::from_str(&json).ok()?;
    let items: Vec<String> = arr
        .as_array()?
        .iter()
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => super::table::go_sprint(other),
        })
        .collect();
    Some(items.join(","))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn columns() {
        let cols = parse_spec("NAME:.metadata.name,PORTS:spec.ports[*].port,X:.nope").unwrap();
        let o =
            json!({"metadata": {"name": "a"}, "spec": {"ports": [{"port": 80}, {"port": 443}]}});
        assert_eq!(row(&cols, &o).unwrap(), vec!["a", "80,443", "<none>"]);
        assert!(parse_spec("NAME").is_err());
        assert_eq!(
            spec_from_file("NAME   KIND\n.metadata.name  .kind\n").unwrap(),
            "NAME:.metadata.name,KIND:.kind"
        );
    }
}
