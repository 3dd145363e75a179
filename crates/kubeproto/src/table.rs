//! The shape of the decoding table: protobuf messages, their fields (number, JSON name,
//! wire type, message type, label) and the Go JSON semantics of each field.
//!
//! The table itself is [`crate::generated`]; see `tests/generate_table.rs` for how it is made.

/// A field's value type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ty {
    String,
    Bytes,
    Bool,
    Int32,
    Int64,
    Double,
    /// A message, by its index in [`crate::generated::MESSAGES`].
    Message(u16),
}

/// Whether a field holds one value, a list, or a `map<string, Ty>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Label {
    Single,
    Repeated,
    Map,
}

/// The Go field is a pointer: a present zero value is still written.
pub(crate) const POINTER: u8 = 1;
/// The Go json tag has no `omitempty`: the field is always written.
pub(crate) const REQUIRED: u8 = 2;
/// An embedded struct inlined into its parent's JSON object.
pub(crate) const INLINE: u8 = 4;
/// No JSON form of its own (read by the message's special encoding).
pub(crate) const NO_JSON: u8 = 8;

/// One field of a message.
#[derive(Clone, Copy, Debug)]
pub(crate) struct F(
    /// Field number.
    pub u32,
    /// JSON name.
    pub &'static str,
    pub Label,
    pub Ty,
    /// `POINTER | REQUIRED | INLINE | NO_JSON`.
    pub u8,
);

impl F {
    pub(crate) fn tag(&self) -> u32 {
        self.0
    }
    pub(crate) fn json(&self) -> &'static str {
        self.1
    }
    pub(crate) fn label(&self) -> Label {
        self.2
    }
    pub(crate) fn ty(&self) -> Ty {
        self.3
    }
    pub(crate) fn has(&self, flag: u8) -> bool {
        self.4 & flag != 0
    }
}

/// Messages whose Go types have their own JSON encoding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Special {
    None,
    /// `meta/v1.Time`: RFC 3339 seconds, `null` when zero.
    Time,
    /// `meta/v1.MicroTime`: RFC 3339 with microseconds, `null` when zero.
    MicroTime,
    /// `meta/v1.Duration`: Go's `time.Duration` string.
    Duration,
    /// `resource.Quantity`: its string.
    Quantity,
    /// `intstr.IntOrString`: a number or a string.
    IntOrString,
    /// `runtime.RawExtension`: embedded JSON, `null` when empty.
    RawExtension,
    /// `meta/v1.FieldsV1`: embedded JSON, `null` when empty.
    FieldsV1,
    /// `apiextensions/v1.JSON`: embedded JSON, `null` when empty.
    Json,
    /// `apiextensions/v1.JSONSchemaPropsOrArray`.
    SchemaOrArray,
    /// `apiextensions/v1.JSONSchemaPropsOrBool`.
    SchemaOrBool,
    /// `apiextensions/v1.JSONSchemaPropsOrStringArray`.
    SchemaOrStringArray,
    /// A Go slice type wrapped in a message for protobuf (`+protobuf.nullable=true`, one
    /// repeated field `items`): a JSON array.
    List,
}

/// One message.
#[derive(Debug)]
pub(crate) struct Message {
    /// Full protobuf name, e.g. `k8s.io.api.apps.v1.Deployment`.
    pub name: &'static str,
    pub special: Special,
    /// Sorted by field number.
    pub fields: &'static [F],
}

/// A kind a request body can carry: `(apiVersion, kind, message index)`.
pub(crate) type Kind = (&'static str, &'static str, u16);
