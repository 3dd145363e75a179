//! The `meta.k8s.io` `Table` and its serialization in upstream's field order.

use crate::builtin::{self, Col};
use crate::custom::CustomColumns;
use crate::descriptions::OBJECT_META_CREATION_TIMESTAMP;
use crate::{IncludeObject, TableOptions, TableVersion, time, value};
use api::catalog::ResourceInfo;
use api::k8s::jiff::Timestamp;
use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};
use std::borrow::Cow;

/// A column definition (`TableColumnDefinition`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnDefinition {
    pub name: Cow<'static, str>,
    /// An OpenAPI type: `string`, `integer`, `number`, `boolean`, or `date`.
    pub type_: Cow<'static, str>,
    /// An OpenAPI format; `name` for the column holding the object's name.
    pub format: Cow<'static, str>,
    pub description: Cow<'static, str>,
    /// 0 for the columns shown by default, 1 (or more) for those shown by `-o wide`.
    pub priority: i32,
}

impl From<&Col> for ColumnDefinition {
    fn from(c: &Col) -> Self {
        ColumnDefinition {
            name: Cow::Borrowed(c.name),
            type_: Cow::Borrowed(c.ty),
            format: Cow::Borrowed(c.format),
            description: Cow::Borrowed(c.description),
            priority: c.priority,
        }
    }
}

impl Serialize for ColumnDefinition {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(5))?;
        m.serialize_entry("name", &self.name)?;
        m.serialize_entry("type", &self.type_)?;
        m.serialize_entry("format", &self.format)?;
        m.serialize_entry("description", &self.description)?;
        m.serialize_entry("priority", &self.priority)?;
        m.end()
    }
}

/// A table's list metadata (`ListMeta`): empty fields are left out.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct ListMeta {
    resource_version: Option<String>,
    continue_token: Option<String>,
    remaining_item_count: Option<i64>,
}

impl ListMeta {
    pub(crate) fn new(
        resource_version: Option<&str>,
        continue_token: Option<&str>,
        remaining_item_count: Option<i64>,
    ) -> Self {
        let non_empty = |s: Option<&str>| s.filter(|s| !s.is_empty()).map(str::to_string);
        ListMeta {
            resource_version: non_empty(resource_version),
            continue_token: non_empty(continue_token),
            remaining_item_count,
        }
    }

    pub(crate) fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or_else(|_| Value::Object(Map::new()))
    }
}

impl Serialize for ListMeta {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        if let Some(rv) = &self.resource_version {
            m.serialize_entry("resourceVersion", rv)?;
        }
        if let Some(c) = &self.continue_token {
            m.serialize_entry("continue", c)?;
        }
        if let Some(n) = &self.remaining_item_count {
            m.serialize_entry("remainingItemCount", n)?;
        }
        m.end()
    }
}

/// One row: the cells, the row conditions (finished pods), and the object it was made from.
#[derive(Clone, Debug, PartialEq)]
pub struct TableRow<'a> {
    pub cells: Vec<Value>,
    /// `TableRowCondition`s, e.g. `[{"type": "Completed", "status": "True", …}]`.
    pub conditions: Option<Value>,
    /// The object, embedded as the table's [`IncludeObject`] says.
    pub object: &'a Value,
}

/// A `meta.k8s.io` `Table` of borrowed objects. It serializes as upstream's does: `kind`,
/// `apiVersion`, `metadata`, `columnDefinitions` (`null` without headers), `rows`; each row
/// with `cells`, `conditions` (when any) and `object` (`null`, a `PartialObjectMetadata`,
/// or the object).
#[derive(Clone, Debug, PartialEq)]
pub struct Table<'a> {
    version: TableVersion,
    include_object: IncludeObject,
    metadata: ListMeta,
    /// `None` without headers.
    pub columns: Option<Vec<ColumnDefinition>>,
    /// `None` serializes as `null` (the default convertor's empty list).
    pub rows: Option<Vec<TableRow<'a>>>,
}

fn nanos(t: Timestamp) -> time::Nanos {
    t.as_nanosecond()
}

impl<'a> Table<'a> {
    fn new(
        options: &TableOptions,
        columns: Vec<ColumnDefinition>,
        rows: Option<Vec<TableRow<'a>>>,
    ) -> Self {
        Table {
            version: options.version,
            include_object: options.include_object,
            metadata: ListMeta::default(),
            columns: (!options.no_headers).then_some(columns),
            rows,
        }
    }

    /// The table of built-in objects: the kind's printer, or the default convertor when it
    /// has none ([`crate::has_printer`]).
    pub fn builtin(
        resource: &ResourceInfo,
        items: &[&'a Value],
        options: &TableOptions,
        now: Timestamp,
    ) -> Self {
        let Some(printer) = builtin::lookup(&resource.group, &resource.kind) else {
            return Table::default_convertor(items, options, now);
        };
        let ctx = builtin::Ctx { now: nanos(now) };
        let rows = items
            .iter()
            .map(|item| {
                let row = (printer.row)(item, &ctx);
                TableRow {
                    cells: row.cells,
                    conditions: row.conditions,
                    object: item,
                }
            })
            .collect();
        let columns = printer.columns.iter().map(ColumnDefinition::from).collect();
        Table::new(options, columns, Some(rows))
    }

    /// Upstream's default convertor: `Name` and `Created At`.
    pub fn default_convertor(items: &[&'a Value], options: &TableOptions, _now: Timestamp) -> Self {
        let columns = vec![
            ColumnDefinition::from(&builtin::NAME),
            ColumnDefinition {
                name: Cow::Borrowed("Created At"),
                type_: Cow::Borrowed("date"),
                format: Cow::Borrowed(""),
                description: Cow::Borrowed(OBJECT_META_CREATION_TIMESTAMP),
                priority: 0,
            },
        ];
        let rows = (!items.is_empty()).then(|| {
            items
                .iter()
                .map(|item| {
                    let created =
                        time::timestamp(value::at(item, &["metadata", "creationTimestamp"]));
                    TableRow {
                        cells: vec![
                            Value::String(value::name(item).to_string()),
                            Value::String(time::format_rfc3339(created)),
                        ],
                        conditions: None,
                        object: item,
                    }
                })
                .collect()
        });
        Table::new(options, columns, rows)
    }

    /// The table of custom resources, with the columns of their CRD version.
    pub fn custom(
        columns: &CustomColumns,
        items: &[&'a Value],
        options: &TableOptions,
        now: Timestamp,
    ) -> Self {
        let now = nanos(now);
        let rows = items
            .iter()
            .map(|item| TableRow {
                cells: columns.cells(item, now),
                conditions: None,
                object: item,
            })
            .collect();
        Table::new(options, columns.definitions.clone(), Some(rows))
    }

    /// Sets the list metadata, as upstream copies it from the list (or, for one object, its
    /// `resourceVersion`). Empty values are left out.
    pub fn set_list_meta(
        &mut self,
        resource_version: Option<&str>,
        continue_token: Option<&str>,
        remaining_item_count: Option<i64>,
    ) {
        self.metadata = ListMeta::new(resource_version, continue_token, remaining_item_count);
    }

    /// The table as a JSON value (the objects it embeds are copied).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

impl Serialize for Table<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(5))?;
        m.serialize_entry("kind", "Table")?;
        m.serialize_entry("apiVersion", self.version.api_version())?;
        m.serialize_entry("metadata", &self.metadata)?;
        m.serialize_entry("columnDefinitions", &self.columns)?;
        let rows = self.rows.as_ref().map(|rows| {
            rows.iter()
                .map(|row| RowSer {
                    row,
                    include: self.include_object,
                    version: self.version,
                })
                .collect::<Vec<_>>()
        });
        m.serialize_entry("rows", &rows)?;
        m.end()
    }
}

struct RowSer<'r, 'a> {
    row: &'r TableRow<'a>,
    include: IncludeObject,
    version: TableVersion,
}

impl Serialize for RowSer<'_, '_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(None)?;
        m.serialize_entry("cells", &self.row.cells)?;
        if let Some(c) = &self.row.conditions {
            m.serialize_entry("conditions", c)?;
        }
        match self.include {
            IncludeObject::None => m.serialize_entry("object", &Value::Null)?,
            IncludeObject::Object => m.serialize_entry("object", self.row.object)?,
            IncludeObject::Metadata => m.serialize_entry(
                "object",
                &PartialObjectMetadata {
                    metadata: self.row.object.get("metadata").filter(|m| m.is_object()),
                    version: self.version,
                },
            )?,
        }
        m.end()
    }
}

/// The `PartialObjectMetadata` upstream embeds for `includeObject=Metadata`.
struct PartialObjectMetadata<'a> {
    metadata: Option<&'a Value>,
    version: TableVersion,
}

impl Serialize for PartialObjectMetadata<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut m = serializer.serialize_map(Some(3))?;
        m.serialize_entry("kind", "PartialObjectMetadata")?;
        m.serialize_entry("apiVersion", self.version.api_version())?;
        match self.metadata {
            Some(meta) => m.serialize_entry("metadata", meta)?,
            None => m.serialize_entry("metadata", &Map::new())?,
        }
        m.end()
    }
}
