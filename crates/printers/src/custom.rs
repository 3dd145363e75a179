//! Custom resources: the columns of a CRD version's `additionalPrinterColumns`, as
//! upstream's `apiextensions-apiserver` table convertor prints them.

use crate::descriptions::{OBJECT_META_CREATION_TIMESTAMP, OBJECT_META_NAME};
use crate::jsonpath::{Item, JsonPath};
use crate::table::ColumnDefinition;
use crate::time::{Nanos, human_duration, parse_rfc3339, sub};
use crate::value::{self, as_int, string};
use api::gofmt::{self, GoNumber, go_number};
use serde_json::Value;
use std::borrow::Cow;

/// One entry of a CRD version's `additionalPrinterColumns`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PrinterColumn {
    pub name: String,
    /// `integer`, `number`, `string`, `boolean` or `date`.
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    /// A JSONPath relative to the object, e.g. `.status.replicas`.
    pub json_path: String,
}

impl PrinterColumn {
    /// Reads a column from its JSON form in a CRD (`name`, `type`, `format`, `description`,
    /// `priority`, `jsonPath`); missing fields are empty.
    pub fn from_json(v: &Value) -> PrinterColumn {
        PrinterColumn {
            name: string(v, &["name"]).to_string(),
            type_: string(v, &["type"]).to_string(),
            format: string(v, &["format"]).to_string(),
            description: string(v, &["description"]).to_string(),
            priority: v
                .get("priority")
                .and_then(as_int)
                .and_then(|p| i32::try_from(p).ok())
                .unwrap_or(0),
            json_path: string(v, &["jsonPath"]).to_string(),
        }
    }

    /// The column a CRD version without printer columns gets: `Age`, a date from
    /// `.metadata.creationTimestamp`.
    pub fn age() -> PrinterColumn {
        PrinterColumn {
            name: "Age".to_string(),
            type_: "date".to_string(),
            format: String::new(),
            description: OBJECT_META_CREATION_TIMESTAMP.to_string(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".to_string(),
        }
    }
}

/// The printer columns of a served version of a CRD (an `apiextensions.k8s.io/v1`
/// `CustomResourceDefinition` as JSON): that version's `additionalPrinterColumns`, or the
/// single `Age` column when it has none (or the version is not found).
pub fn printer_columns(crd: &Value, version: &str) -> Vec<PrinterColumn> {
    let columns: Vec<PrinterColumn> = value::list(crd, &["spec", "versions"])
        .iter()
        .find(|v| string(v, &["name"]) == version)
        .map(|v| {
            value::list(v, &["additionalPrinterColumns"])
                .iter()
                .map(PrinterColumn::from_json)
                .collect()
        })
        .unwrap_or_default();
    if columns.is_empty() {
        vec![PrinterColumn::age()]
    } else {
        columns
    }
}

/// A CRD version's columns, ready to print: JSONPaths parsed once, to be reused for every
/// list and watch of that version.
#[derive(Clone, Debug)]
pub struct CustomColumns {
    pub(crate) definitions: Vec<ColumnDefinition>,
    columns: Vec<(String, JsonPath)>,
    error: Option<String>,
}

impl CustomColumns {
    /// Prepares columns. As upstream, a column whose JSONPath does not parse ends the list:
    /// it and the columns after it are left out, and [`CustomColumns::error`] says why.
    pub fn new(columns: &[PrinterColumn]) -> CustomColumns {
        let mut definitions = vec![ColumnDefinition {
            name: Cow::Borrowed("Name"),
            type_: Cow::Borrowed("string"),
            format: Cow::Borrowed("name"),
            description: Cow::Borrowed(OBJECT_META_NAME),
            priority: 0,
        }];
        let mut parsed = Vec::with_capacity(columns.len());
        let mut error = None;
        for c in columns {
            let path = match JsonPath::parse(&format!("{{{}}}", c.json_path)) {
                Ok(p) => p,
                Err(_) => {
                    error = Some(format!(
                        "unrecognized column definition {}",
                        gofmt::go_quote(&c.json_path)
                    ));
                    break;
                }
            };
            let description = if c.description.is_empty() {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    c.json_path
                )
            } else {
                c.description.clone()
            };
            definitions.push(ColumnDefinition {
                name: Cow::Owned(c.name.clone()),
                type_: Cow::Owned(c.type_.clone()),
                format: Cow::Owned(c.format.clone()),
                description: Cow::Owned(description),
                priority: c.priority,
            });
            parsed.push((c.type_.clone(), path));
        }
        CustomColumns {
            definitions,
            columns: parsed,
            error,
        }
    }

    /// The column definitions: `Name`, then the columns.
    pub fn definitions(&self) -> &[ColumnDefinition] {
        &self.definitions
    }

    /// Why the column list was cut short, if it was.
    pub fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// The cells of one object: its name, then one cell per column.
    pub(crate) fn cells(&self, obj: &Value, now: Nanos) -> Vec<Value> {
        let mut cells = Vec::with_capacity(1 + self.columns.len());
        cells.push(Value::String(value::name(obj).to_string()));
        for (ty, path) in &self.columns {
            cells.push(match path.first(obj) {
                None => Value::Null,
                Some(item) if ty == "string" => Value::String(item_text(&item)),
                Some(item) => typed_cell(ty, &item, now),
            });
        }
        cells
    }
}

/// A result printed as upstream's JSONPath printer prints it: maps and lists as JSON,
/// scalars as Go prints them, `null` as `<no value>`.
fn item_text(item: &Item<'_>) -> String {
    match item {
        Item::Json(Value::Null) => "<no value>".to_string(),
        Item::Json(v @ (Value::Object(_) | Value::Array(_))) => gofmt::json(v),
        Item::Json(Value::String(s)) => s.clone(),
        Item::Json(Value::Bool(b)) | Item::Bool(b) => b.to_string(),
        Item::Json(Value::Number(n)) => match go_number(n) {
            GoNumber::Int(i) => i.to_string(),
            GoNumber::Float(f) => gofmt::float_v(f),
        },
        Item::Text(s) => (*s).to_string(),
        Item::Int(i) => i.to_string(),
        Item::Float(f) => gofmt::float_v(*f),
        Item::Byte(b) => b.to_string(),
    }
}

/// A float cell as Go's JSON encoding writes it: integral values without a fraction.
fn float_cell(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9_007_199_254_740_992.0 {
        Value::from(f as i64)
    } else {
        serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number)
    }
}

/// `cellForJSONValue`: the cell of a non-string column, `null` when the value does not
/// have the column's type. Template literals are Go `int`s, which only string columns show.
fn typed_cell(ty: &str, item: &Item<'_>, now: Nanos) -> Value {
    let json = match item {
        Item::Json(v) => Some(*v),
        _ => None,
    };
    match (ty, json, item) {
        (_, Some(Value::Null), _) => Value::Null,
        ("integer", Some(Value::Number(n)), _) => match go_number(n) {
            GoNumber::Int(i) => Value::from(i),
            GoNumber::Float(f) => Value::from(f as i64),
        },
        ("integer", _, Item::Float(f)) => Value::from(*f as i64),
        ("number", Some(Value::Number(n)), _) => match go_number(n) {
            GoNumber::Int(i) => float_cell(i as f64),
            GoNumber::Float(f) => float_cell(f),
        },
        ("number", _, Item::Float(f)) => float_cell(*f),
        ("boolean", Some(Value::Bool(b)), _) | ("boolean", _, Item::Bool(b)) => Value::Bool(*b),
        ("date", Some(Value::String(s)), _) => Value::String(date_cell(s, now)),
        ("date", _, Item::Text(s)) => Value::String(date_cell(s, now)),
        _ => Value::Null,
    }
}

/// A date column: the age of an RFC 3339 timestamp, `<unknown>` for an empty or zero one,
/// `<invalid>` for one that does not parse.
fn date_cell(s: &str, now: Nanos) -> String {
    if s.is_empty() || s == "null" {
        return "<unknown>".to_string();
    }
    match parse_rfc3339(s) {
        None => "<invalid>".to_string(),
        Some(t) if t == crate::time::ZERO => "<unknown>".to_string(),
        Some(t) => human_duration(sub(now, t)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn columns_of_a_version() {
        let crd = json!({"spec": {"versions": [
            {"name": "v1", "additionalPrinterColumns": [
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas", "priority": 1}
            ]},
            {"name": "v2"}
        ]}});
        let v1 = printer_columns(&crd, "v1");
        assert_eq!(v1.len(), 1);
        assert_eq!(v1[0].priority, 1);
        assert_eq!(v1[0].json_path, ".spec.replicas");
        assert_eq!(printer_columns(&crd, "v2"), vec![PrinterColumn::age()]);
        assert_eq!(
            printer_columns(&json!(null), "v1"),
            vec![PrinterColumn::age()]
        );
    }

    #[test]
    fn unparsable_column_ends_the_list() {
        let cols = [
            PrinterColumn {
                name: "A".into(),
                type_: "string".into(),
                json_path: ".a".into(),
                ..Default::default()
            },
            PrinterColumn {
                name: "B".into(),
                type_: "string".into(),
                json_path: ".b[".into(),
                ..Default::default()
            },
            PrinterColumn {
                name: "C".into(),
                type_: "string".into(),
                json_path: ".c".into(),
                ..Default::default()
            },
        ];
        let c = CustomColumns::new(&cols);
        assert_eq!(c.definitions.len(), 2);
        assert_eq!(c.error(), Some("unrecognized column definition \".b[\""));
        assert_eq!(
            c.definitions[1].description,
            "Custom resource definition column (in JSONPath format): .a"
        );
    }

    #[test]
    fn typed_cells() {
        let now = parse_rfc3339("2024-01-01T01:00:00Z").unwrap();
        let v =
            json!({"i": 3, "f": 2.5, "b": true, "s": "x", "n": null, "d": "2024-01-01T00:00:00Z"});
        let get = |k: &str| Item::Json(&v[k]);
        assert_eq!(typed_cell("integer", &get("i"), now), json!(3));
        assert_eq!(typed_cell("integer", &get("f"), now), json!(2));
        assert_eq!(typed_cell("integer", &get("s"), now), Value::Null);
        assert_eq!(typed_cell("number", &get("i"), now), json!(3));
        assert_eq!(typed_cell("number", &get("f"), now), json!(2.5));
        assert_eq!(typed_cell("boolean", &get("b"), now), json!(true));
        assert_eq!(typed_cell("boolean", &get("i"), now), Value::Null);
        assert_eq!(typed_cell("date", &get("d"), now), json!("60m"));
        assert_eq!(typed_cell("date", &get("s"), now), json!("<invalid>"));
        assert_eq!(typed_cell("date", &get("n"), now), Value::Null);
        assert_eq!(typed_cell("integer", &Item::Int(4), now), Value::Null);
        assert_eq!(typed_cell("weird", &get("i"), now), Value::Null);
        assert_eq!(item_text(&get("n")), "<no value>");
        assert_eq!(
            item_text(&Item::Json(&json!({"b": 1, "a": [true]}))),
            r#"{"a":[true],"b":1}"#
        );
    }
}
