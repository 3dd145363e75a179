//! Human tables: the server's `meta.k8s.io/v1` `Table` decorated as kubectl's
//! `HumanReadablePrinter` does (priority columns for `-o wide`, `NAMESPACE` for `-A`,
//! `kind/name` when several kinds print, `-L` and `--show-labels` columns), laid out as Go's
//! `tabwriter` with kubectl's settings (minimum width 6, padding 3, widths remembered
//! between flushes for `--watch`).

use serde_json::Value;

/// kubectl's tabwriter settings (`printers.GetNewTabWriter`).
const MIN_WIDTH: usize = 6;
const PADDING: usize = 3;

/// Lines of tab-separated cells, laid out as Go's `tabwriter` lays them out: every cell but
/// the last of a line is padded to its column's width.
#[derive(Debug, Default, Clone)]
pub struct TextTable {
    rows: Vec<Vec<String>>,
    /// Column widths remembered from earlier flushes (liggitt/tabwriter's
    /// `RememberWidths`), so watch output stays aligned.
    remembered: Vec<usize>,
}

impl TextTable {
    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Lays out the rows and forgets them (keeping the widths).
    pub fn flush(&mut self) -> String {
        let mut widths = self.remembered.clone();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                if i + 1 == row.len() {
                    break;
                }
                let w = (cell.chars().count() + PADDING).max(MIN_WIDTH);
                if i >= widths.len() {
                    widths.push(w);
                } else if widths[i] < w {
                    widths[i] = w;
                }
            }
        }
        let mut out = String::new();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate() {
                out.push_str(cell);
                if i + 1 < row.len() {
                    let pad = widths[i].saturating_sub(cell.chars().count());
                    for _ in 0..pad {
                        out.push(' ');
                    }
                }
            }
            out.push('\n');
        }
        self.rows.clear();
        self.remembered = widths;
        out
    }

    /// Lays out the rows (a one-shot table).
    pub fn render(&mut self) -> String {
        self.flush()
    }

    /// Forgets remembered widths (kubectl does between resource kinds).
    pub fn reset_widths(&mut self) {
        self.remembered.clear();
    }
}

/// How to decorate a table (kubectl's `PrintOptions`).
#[derive(Debug, Clone, Default)]
pub struct HumanOptions {
    pub wide: bool,
    pub no_headers: bool,
    pub with_namespace: bool,
    /// `pod`, `deployment.apps`: prefix names with `kind/` (several kinds print).
    pub kind_prefix: Option<String>,
    pub show_labels: bool,
    /// `-L` keys.
    pub label_columns: Vec<String>,
}

/// A cell as kubectl prints it (`fmt.Sprint` of the decoded JSON value); line breaks cut
/// the cell with `...`.
pub fn cell_text(v: &Value) -> String {
    let s = match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        Value::Number(n) => super::yaml::go_number(n),
        Value::Bool(b) => b.to_string(),
        other => go_sprint(other),
    };
    match s.find(['\n', '\r', '\u{c}']) {
        Some(i) => format!("{}...", &s[..i]),
        None => s,
    }
}

/// Go's `fmt.Sprint` of a decoded JSON value (`map[a:1 b:x]`, `[a b]`).
pub fn go_sprint(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => super::yaml::go_number(n),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(go_sprint).collect::<Vec<_>>().join(" ")
        ),
        Value::Object(m) => format!(
            "map[{}]",
            m.iter()
                .map(|(k, v)| format!("{k}:{}", go_sprint(v)))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    }
}

/// `k=v,k2=v2` sorted by key, or `<none>` (apimachinery's `labels.FormatLabels`).
pub fn format_labels(labels: Option<&Value>) -> String {
    let mut pairs: Vec<String> = labels
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    if pairs.is_empty() {
        return "<none>".into();
    }
    pairs.sort();
    pairs.join(",")
}

/// The metadata of a table row's embedded object (`PartialObjectMetadata` or the object).
fn row_metadata(row: &Value) -> Option<&Value> {
    row.pointer("/object/metadata")
}

/// The header (unless `no_headers` or there are no rows) and the rows of a server table,
/// decorated.
pub fn table_lines(table: &Value, opts: &HumanOptions) -> (Option<Vec<String>>, Vec<Vec<String>>) {
    let columns: Vec<&Value> = table
        .get("columnDefinitions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let visible: Vec<bool> = columns
        .iter()
        .map(|c| opts.wide || c.get("priority").and_then(Value::as_i64).unwrap_or(0) == 0)
        .collect();
    let name_column = opts.kind_prefix.as_ref().and_then(|_| {
        columns.iter().position(|c| {
            c.get("format").and_then(Value::as_str) == Some("name")
                && c.get("type").and_then(Value::as_str) == Some("string")
        })
    });
    let rows: Vec<&Value> = table
        .get("rows")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect();
    let mut header = None;
    if !opts.no_headers && !rows.is_empty() {
        let mut h = Vec::new();
        if opts.with_namespace {
            h.push("NAMESPACE".to_string());
        }
        for (i, c) in columns.iter().enumerate() {
            if visible[i] {
                h.push(
                    c.get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_uppercase(),
                );
            }
        }
        for l in &opts.label_columns {
            h.push(l.rsplit('/').next().unwrap_or_default().to_uppercase());
        }
        if opts.show_labels {
            h.push("LABELS".into());
        }
        header = Some(h);
    }
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let meta = row_metadata(row);
        let mut cells = Vec::new();
        if opts.with_namespace {
            cells.push(
                meta.and_then(|m| m.get("namespace"))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        let row_cells: Vec<&Value> = row
            .get("cells")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .collect();
        for (i, _) in columns.iter().enumerate() {
            if !visible[i] {
                continue;
            }
            let mut text = row_cells.get(i).map(|v| cell_text(v)).unwrap_or_default();
            if Some(i) == name_column
                && let Some(k) = &opts.kind_prefix
            {
                text = format!("{k}/{text}");
            }
            cells.push(text);
        }
        let labels = meta.and_then(|m| m.get("labels"));
        for key in &opts.label_columns {
            cells.push(
                labels
                    .and_then(|l| l.get(key))
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .to_string(),
            );
        }
        if opts.show_labels {
            cells.push(format_labels(labels));
        }
        out.push(cells);
    }
    (header, out)
}

/// The watch-event column kubectl adds with `--output-watch-events`.
pub fn format_event_type(t: &str) -> &str {
    match t {
        "ADDED" => "ADDED   ",
        "MODIFIED" => "MODIFIED",
        "DELETED" => "DELETED ",
        "ERROR" => "ERROR   ",
        other => other,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn table() -> Value {
        json!({
            "kind": "Table",
            "columnDefinitions": [
                {"name": "Name", "type": "string", "format": "name", "priority": 0},
                {"name": "Ready", "type": "string", "format": "", "priority": 0},
                {"name": "IP", "type": "string", "format": "", "priority": 1},
                {"name": "Restarts", "type": "integer", "format": "", "priority": 0},
            ],
            "rows": [
                {"cells": ["nginx-1", "1/1", "10.0.0.1", 0], "object": {"metadata": {"name": "nginx-1", "namespace": "default", "labels": {"b": "2", "a": "1"}}}},
                {"cells": ["x", "0/1", null, 12], "object": {"metadata": {"name": "x", "namespace": "kube-system"}}},
            ]
        })
    }

    fn render(opts: &HumanOptions) -> String {
        let (h, rows) = table_lines(&table(), opts);
        let mut t = TextTable::default();
        if let Some(h) = h {
            t.push(h);
        }
        for r in rows {
            t.push(r);
        }
        t.render()
    }

    #[test]
    fn plain_and_wide() {
        assert_eq!(
            render(&HumanOptions::default()),
            "NAME      READY   RESTARTS\nnginx-1   1/1     0\nx         0/1     12\n"
        );
        assert_eq!(
            render(&HumanOptions {
                wide: true,
                ..Default::default()
            }),
            "NAME      READY   IP         RESTARTS\nnginx-1   1/1     10.0.0.1   0\nx         0/1                12\n"
        );
    }

    #[test]
    fn decorated() {
        let out = render(&HumanOptions {
            with_namespace: true,
            kind_prefix: Some("pod".into()),
            show_labels: true,
            label_columns: vec!["example.com/b".into()],
            ..Default::default()
        });
        assert_eq!(
            out,
            "NAMESPACE     NAME          READY   RESTARTS   B     LABELS\ndefault       pod/nginx-1   1/1     0                a=1,b=2\nkube-system   pod/x         0/1     12               <none>\n"
        );
        let (h, rows) = table_lines(
            &json!({"columnDefinitions": [], "rows": []}),
            &HumanOptions::default(),
        );
        assert!(h.is_none() && rows.is_empty());
    }

    #[test]
    fn cells() {
        assert_eq!(cell_text(&json!("a\nb")), "a...");
        assert_eq!(cell_text(&json!(1.5)), "1.5");
        assert_eq!(go_sprint(&json!({"a": [1, "x"]})), "map[a:[1 x]]");
    }
}
