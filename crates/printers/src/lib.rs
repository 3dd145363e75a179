//! Table conversion: the columns `kubectl get` prints, computed on the server.
//!
//! When a client asks for `application/json;as=Table;g=meta.k8s.io;v=v1`, upstream's API
//! server answers with a `meta.k8s.io/v1` `Table` instead of the object or list: column
//! definitions, then one row per object with its cells and an embedded object. This crate
//! builds those tables from objects held as JSON values, with upstream's columns and cell
//! logic (Kubernetes 1.33):
//!
//! - [`to_table`] for built-in resources: the kind's printer (upstream's
//!   `pkg/printers/internalversion`) when it has one ([`has_printer`]), else the default
//!   convertor's `Name`/`Created At` ([`default_table`]);
//! - [`custom_table`] for custom resources, from a CRD version's `additionalPrinterColumns`
//!   ([`printer_columns`], [`CustomColumns`]), with upstream's JSONPath dialect;
//! - [`IncludeObject`] and [`TableOptions`] for the request's `includeObject` parameter and
//!   the watch behaviour (column definitions only on the first event).
//!
//! The server always prints wide, as upstream does: every row carries every cell, and the
//! columns `kubectl get` hides without `-o wide` have priority 1. Conversion is total: an
//! object with missing or ill-typed fields still gets a row, with the cells upstream prints
//! for zero values.
//!
//! The table's list metadata (`resourceVersion`, `continue`, `remainingItemCount`) is the
//! caller's: tables come with an empty `metadata` to fill in ([`Table::set_list_meta`],
//! [`set_list_meta`]). For a single object, upstream puts the object's `resourceVersion`
//! there.
//!
//! [`Table`] is the table before it becomes JSON: it borrows the objects and serializes
//! (with `serde`) in upstream's field order, so a server can write it out without copying
//! any object. [`to_table`], [`default_table`] and [`custom_table`] return it as a
//! `serde_json::Value`.

mod builtin;
mod custom;
mod descriptions;
pub mod jsonpath;
mod quantity;
mod selector;
mod table;
mod time;
mod value;

pub use custom::{CustomColumns, PrinterColumn, printer_columns};
pub use table::{ColumnDefinition, Table, TableRow};
pub use time::human_duration;

use api::catalog::ResourceInfo;
use api::k8s::jiff::Timestamp;
use serde_json::Value;
use table::ListMeta;

/// The `includeObject` query parameter: what each row embeds as its `object`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum IncludeObject {
    /// `null`.
    None,
    /// A `PartialObjectMetadata` holding the object's `metadata` (upstream's default).
    #[default]
    Metadata,
    /// The whole object.
    Object,
}

/// An `includeObject` value upstream does not know; upstream answers 400 Bad Request with
/// this message (and only when the table has at least one row).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("unrecognized includeObject value: {}", api::gofmt::go_quote(.0))]
pub struct UnrecognizedIncludeObject(pub String);

impl IncludeObject {
    /// Parses the parameter's value; the empty string means the default, `Metadata`.
    pub fn parse(value: &str) -> Result<IncludeObject, UnrecognizedIncludeObject> {
        match value {
            "None" => Ok(IncludeObject::None),
            "Metadata" | "" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            other => Err(UnrecognizedIncludeObject(other.to_string())),
        }
    }

    /// Parses the parameter when present; absent means `Metadata`.
    pub fn from_query(value: Option<&str>) -> Result<IncludeObject, UnrecognizedIncludeObject> {
        IncludeObject::parse(value.unwrap_or(""))
    }
}

impl std::str::FromStr for IncludeObject {
    type Err = UnrecognizedIncludeObject;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IncludeObject::parse(s)
    }
}

/// The `meta.k8s.io` version of the table the client accepted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum TableVersion {
    #[default]
    V1,
    V1Beta1,
}

impl TableVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`: the table's and the embedded
    /// `PartialObjectMetadata`'s `apiVersion`.
    pub fn api_version(self) -> &'static str {
        match self {
            TableVersion::V1 => "meta.k8s.io/v1",
            TableVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// How to build a table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TableOptions {
    /// What each row embeds.
    pub include_object: IncludeObject,
    /// Leave `columnDefinitions` out (`null`): upstream does so for every watch event after
    /// the first.
    pub no_headers: bool,
    pub version: TableVersion,
}

impl From<IncludeObject> for TableOptions {
    fn from(include_object: IncludeObject) -> Self {
        TableOptions {
            include_object,
            ..TableOptions::default()
        }
    }
}

/// Whether the resource has its own printer; without one, tables have the default
/// `Name`/`Created At` columns. Keyed by group and kind, so any version of a kind prints
/// the same (`events.k8s.io` events print as `core/v1` ones, as upstream).
pub fn has_printer(resource: &ResourceInfo) -> bool {
    builtin::lookup(&resource.group, &resource.kind).is_some()
}

/// The table of built-in objects (one object for a get, the items of a list, or the object
/// of a watch event), with ages computed against `now`, as a JSON value.
/// [`Table::builtin`] gives the same table without copying the objects.
pub fn to_table(
    resource: &ResourceInfo,
    items: &[&Value],
    options: &TableOptions,
    now: Timestamp,
) -> Value {
    Table::builtin(resource, items, options, now).to_value()
}

/// Upstream's default table convertor, for resources without a printer: `Name` and
/// `Created At` (an RFC 3339 date, UTC). An empty list has `rows: null`, as upstream.
pub fn default_table(items: &[&Value], options: &TableOptions, now: Timestamp) -> Value {
    Table::default_convertor(items, options, now).to_value()
}

/// The table of custom resources, with the columns of their CRD version.
pub fn custom_table(
    columns: &CustomColumns,
    items: &[&Value],
    options: &TableOptions,
    now: Timestamp,
) -> Value {
    Table::custom(columns, items, options, now).to_value()
}

/// Sets the list metadata of a table built as a JSON value (see [`Table::set_list_meta`]).
pub fn set_list_meta(
    table: &mut Value,
    resource_version: Option<&str>,
    continue_token: Option<&str>,
    remaining_item_count: Option<i64>,
) {
    if let Some(obj) = table.as_object_mut() {
        let meta = ListMeta::new(resource_version, continue_token, remaining_item_count);
        obj.insert("metadata".into(), meta.to_value());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(""), Ok(IncludeObject::Metadata));
        assert_eq!(IncludeObject::from_query(None), Ok(IncludeObject::Metadata));
        assert_eq!("None".parse::<IncludeObject>(), Ok(IncludeObject::None));
        assert_eq!(IncludeObject::parse("Object"), Ok(IncludeObject::Object));
        let e = IncludeObject::parse("object").unwrap_err();
        assert_eq!(
            e.to_string(),
            "unrecognized includeObject value: \"object\""
        );
    }
}
