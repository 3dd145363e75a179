//! Messages to JSON, as upstream's Go types unmarshal them from protobuf and marshal them to
//! JSON: the wire values are read the way gogo-protobuf's generated `Unmarshal` reads them
//! (last scalar wins, repeated occurrences of a message field merge, unknown fields are
//! skipped), then written the way encoding/json writes the Go struct (`omitempty`,
//! pointers, inlined structs, and the types with their own `MarshalJSON`).

use base64::Engine as _;
use serde_json::{Map, Number, Value};

use crate::Error;
use crate::generated::MESSAGES;
use crate::table::{F, INLINE, Label, Message, NO_JSON, POINTER, REQUIRED, Special, Ty};
use crate::wire::{FIXED64, LEN, Raw, Reader, VARINT};

/// Messages nested deeper than this are refused.
pub const MAX_DEPTH: usize = 100;

/// Decoding state: the nesting depth and what is left of the output budget.
pub(crate) struct Decoder {
    depth: usize,
    /// JSON values that may still be produced. Empty messages expand to their Go zero value,
    /// so a small input could otherwise ask for a large output.
    budget: usize,
}

/// The value of a field, or why it is left out.
enum Out {
    Value(Value),
    Omit,
}

fn prefix(path: &str, mut err: Error) -> Error {
    match &mut err {
        Error::Malformed { path: p, .. } | Error::Unrepresentable { path: p, .. } => {
            if p.is_empty() || p.starts_with('[') {
                *p = format!("{path}{p}");
            } else {
                *p = format!("{path}.{p}");
            }
        }
        _ => {}
    }
    err
}

fn malformed(reason: impl Into<String>) -> Error {
    Error::Malformed {
        path: String::new(),
        reason: reason.into(),
    }
}

fn unrepresentable(reason: impl Into<String>) -> Error {
    Error::Unrepresentable {
        path: String::new(),
        reason: reason.into(),
    }
}

fn message_def(idx: u16) -> Result<&'static Message, Error> {
    MESSAGES
        .get(usize::from(idx))
        .ok_or_else(|| malformed("internal: message index out of range"))
}

fn wire_type_ok(f: &F, raw: &Raw<'_>) -> bool {
    let wt = raw.wire_type();
    match (f.label(), f.ty()) {
        (Label::Map, _) => wt == LEN,
        (_, Ty::String | Ty::Bytes | Ty::Message(_)) => wt == LEN,
        (label, Ty::Bool | Ty::Int32 | Ty::Int64) => {
            wt == VARINT || (label == Label::Repeated && wt == LEN)
        }
        (label, Ty::Double) => wt == FIXED64 || (label == Label::Repeated && wt == LEN),
    }
}

/// A scalar as read: before its JSON form is chosen.
#[derive(Debug, Clone, Copy)]
enum Scalar<'a> {
    Str(&'a [u8]),
    Bytes(&'a [u8]),
    Bool(bool),
    Int(i64),
    Double(f64),
}

impl Scalar<'_> {
    fn is_zero(&self) -> bool {
        match self {
            Scalar::Str(b) | Scalar::Bytes(b) => b.is_empty(),
            Scalar::Bool(b) => !b,
            Scalar::Int(i) => *i == 0,
            Scalar::Double(d) => *d == 0.0,
        }
    }

    fn to_json(self) -> Result<Value, Error> {
        Ok(match self {
            Scalar::Str(b) => Value::String(String::from_utf8_lossy(b).into_owned()),
            Scalar::Bytes(b) => Value::String(base64::engine::general_purpose::STANDARD.encode(b)),
            Scalar::Bool(b) => Value::Bool(b),
            Scalar::Int(i) => Value::Number(i.into()),
            Scalar::Double(d) => float(d)?,
        })
    }
}

/// A float as Go's encoding/json writes it, read back by a JSON parser: integral values
/// print without a fraction (and so read back as integers).
fn float(d: f64) -> Result<Value, Error> {
    if !d.is_finite() {
        return Err(unrepresentable(format!(
            "json: unsupported value: {d} (floats must be finite)"
        )));
    }
    if d.fract() == 0.0 && d.abs() < 9.0e18 {
        return Ok(Value::Number((d as i64).into()));
    }
    Number::from_f64(d)
        .map(Value::Number)
        .ok_or_else(|| unrepresentable("json: unsupported float"))
}

fn scalar(ty: Ty, raw: Raw<'_>) -> Result<Scalar<'_>, Error> {
    Ok(match (ty, raw) {
        (Ty::String, Raw::Bytes(b)) => Scalar::Str(b),
        (Ty::Bytes, Raw::Bytes(b)) => Scalar::Bytes(b),
        (Ty::Bool, Raw::Varint(v)) => Scalar::Bool(v != 0),
        // gogo shifts the varint into an int32: the low 32 bits.
        (Ty::Int32, Raw::Varint(v)) => Scalar::Int(i64::from(v as u32 as i32)),
        (Ty::Int64, Raw::Varint(v)) => Scalar::Int(v as i64),
        (Ty::Double, Raw::Fixed64(v)) => Scalar::Double(f64::from_bits(v)),
        _ => return Err(malformed("wrong wire type")),
    })
}

/// The elements of a repeated scalar field: each occurrence, or packed runs.
fn repeated_scalars<'a>(ty: Ty, raws: &[Raw<'a>]) -> Result<Vec<Scalar<'a>>, Error> {
    let mut out = Vec::new();
    for raw in raws {
        match (ty, raw) {
            (Ty::Bool | Ty::Int32 | Ty::Int64, Raw::Bytes(b)) => {
                let mut r = Reader::new(b);
                while !r.is_empty() {
                    let v = r.varint().map_err(|e| malformed(e.0))?;
                    out.push(scalar(ty, Raw::Varint(v))?);
                }
            }
            (Ty::Double, Raw::Bytes(b)) => {
                let mut r = Reader::new(b);
                while !r.is_empty() {
                    let v = r.fixed64().map_err(|e| malformed(e.0))?;
                    out.push(Scalar::Double(f64::from_bits(v)));
                }
            }
            _ => out.push(scalar(ty, *raw)?),
        }
    }
    Ok(out)
}

fn zero_scalar(ty: Ty) -> Value {
    match ty {
        Ty::String => Value::String(String::new()),
        Ty::Bool => Value::Bool(false),
        Ty::Int32 | Ty::Int64 | Ty::Double => Value::Number(0.into()),
        // A nil []byte.
        Ty::Bytes | Ty::Message(_) => Value::Null,
    }
}

fn bytes_of<'a>(raws: &[Raw<'a>]) -> Vec<&'a [u8]> {
    raws.iter()
        .filter_map(|r| match r {
            Raw::Bytes(b) => Some(*b),
            _ => None,
        })
        .collect()
}

impl Decoder {
    pub(crate) fn new(input_len: usize) -> Self {
        Decoder {
            depth: 0,
            budget: input_len.saturating_mul(2).saturating_add(10_000),
        }
    }

    fn spend(&mut self) -> Result<(), Error> {
        self.budget = self.budget.checked_sub(1).ok_or(Error::TooLarge)?;
        Ok(())
    }

    /// The fields of a message as read from all its occurrences (concatenated occurrences
    /// merge, as protobuf specifies), grouped by the table's field order.
    fn collect<'a>(msg: &Message, parts: &[&'a [u8]]) -> Result<Vec<Vec<Raw<'a>>>, Error> {
        let mut slots: Vec<Vec<Raw<'a>>> = vec![Vec::new(); msg.fields.len()];
        for part in parts {
            let mut r = Reader::new(part);
            while let Some((number, raw)) = r.field().map_err(|e| malformed(e.0))? {
                let Some(raw) = raw else { continue };
                let Ok(i) = msg.fields.binary_search_by_key(&number, F::tag) else {
                    continue;
                };
                let (Some(f), Some(slot)) = (msg.fields.get(i), slots.get_mut(i)) else {
                    continue;
                };
                if !wire_type_ok(f, &raw) {
                    return Err(prefix(
                        f.json(),
                        malformed(format!(
                            "wrong wire type {} for field {number} of {}",
                            raw.wire_type(),
                            msg.name
                        )),
                    ));
                }
                slot.push(raw);
            }
        }
        Ok(slots)
    }

    /// A message (all its occurrences) as JSON.
    pub(crate) fn message(&mut self, idx: u16, parts: &[&[u8]]) -> Result<Value, Error> {
        let msg = message_def(idx)?;
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(Error::TooDeep(MAX_DEPTH));
        }
        self.spend()?;
        let result = self.message_inner(msg, parts);
        self.depth -= 1;
        result
    }

    fn message_inner(&mut self, msg: &Message, parts: &[&[u8]]) -> Result<Value, Error> {
        if msg.special != Special::None {
            return self.special(msg, parts);
        }
        let slots = Self::collect(msg, parts)?;
        let mut object = Map::new();
        let mut inlined: Vec<Map<String, Value>> = Vec::new();
        for (f, raws) in msg.fields.iter().zip(&slots) {
            if f.has(NO_JSON) {
                continue;
            }
            let out = self.field(f, raws).map_err(|e| prefix(f.json(), e))?;
            match out {
                Out::Omit => {}
                Out::Value(Value::Object(m)) if f.has(INLINE) => inlined.push(m),
                Out::Value(_) if f.has(INLINE) => {}
                Out::Value(v) => {
                    object.insert(f.json().to_string(), v);
                }
            }
        }
        // Go gives the shallower field precedence over an inlined struct's.
        for m in inlined {
            for (k, v) in m {
                object.entry(k).or_insert(v);
            }
        }
        Ok(Value::Object(object))
    }

    /// Whether a message-typed field holds a Go slice (omitted by `omitempty` when empty).
    fn is_list(ty: Ty) -> bool {
        match ty {
            Ty::Message(i) => MESSAGES
                .get(usize::from(i))
                .is_some_and(|m| m.special == Special::List),
            _ => false,
        }
    }

    fn field(&mut self, f: &F, raws: &[Raw<'_>]) -> Result<Out, Error> {
        let pointer = f.has(POINTER);
        let required = f.has(REQUIRED);
        match (f.label(), f.ty()) {
            (Label::Single, Ty::Message(idx)) => {
                if raws.is_empty() && pointer {
                    return Ok(if required {
                        Out::Value(Value::Null)
                    } else {
                        Out::Omit
                    });
                }
                // A struct value is always written (omitempty never omits structs); an
                // absent one is its zero value.
                let value = self.message(idx, &bytes_of(raws))?;
                if Self::is_list(f.ty()) && !pointer && !required && value.is_null() {
                    return Ok(Out::Omit);
                }
                Ok(Out::Value(value))
            }
            (Label::Single, ty) => {
                self.spend()?;
                match raws.last() {
                    Some(raw) => {
                        let v = scalar(ty, *raw)?;
                        if !pointer && !required && v.is_zero() {
                            Ok(Out::Omit)
                        } else {
                            Ok(Out::Value(v.to_json()?))
                        }
                    }
                    None if pointer => Ok(if required {
                        Out::Value(Value::Null)
                    } else {
                        Out::Omit
                    }),
                    None if required => Ok(Out::Value(zero_scalar(ty))),
                    None => Ok(Out::Omit),
                }
            }
            (Label::Repeated, ty) => {
                let items = self.repeated(ty, raws)?;
                Ok(match items {
                    Some(items) => Out::Value(Value::Array(items)),
                    None if required => Out::Value(Value::Null),
                    None => Out::Omit,
                })
            }
            (Label::Map, ty) => {
                if raws.is_empty() {
                    return Ok(if required {
                        Out::Value(Value::Null)
                    } else {
                        Out::Omit
                    });
                }
                Ok(Out::Value(self.map(ty, raws)?))
            }
        }
    }

    /// The elements of a repeated field; `None` when there are none (a nil Go slice).
    fn repeated(&mut self, ty: Ty, raws: &[Raw<'_>]) -> Result<Option<Vec<Value>>, Error> {
        let mut items = Vec::new();
        match ty {
            Ty::Message(idx) => {
                for (i, raw) in raws.iter().enumerate() {
                    let Raw::Bytes(b) = raw else {
                        return Err(malformed("wrong wire type"));
                    };
                    let v = self
                        .message(idx, &[b])
                        .map_err(|e| prefix(&format!("[{i}]"), e))?;
                    items.push(v);
                }
            }
            ty => {
                for s in repeated_scalars(ty, raws)? {
                    self.spend()?;
                    items.push(s.to_json()?);
                }
            }
        }
        Ok((!items.is_empty()).then_some(items))
    }

    fn map(&mut self, ty: Ty, raws: &[Raw<'_>]) -> Result<Value, Error> {
        let mut object = Map::new();
        for raw in raws {
            let Raw::Bytes(entry) = raw else {
                return Err(malformed("wrong wire type"));
            };
            self.spend()?;
            let mut key: &[u8] = &[];
            let mut values: Vec<Raw<'_>> = Vec::new();
            let mut r = Reader::new(entry);
            while let Some((number, raw)) = r.field().map_err(|e| malformed(e.0))? {
                let Some(raw) = raw else { continue };
                match number {
                    1 => match raw {
                        Raw::Bytes(b) => key = b,
                        _ => return Err(malformed("wrong wire type for a map key")),
                    },
                    2 => values.push(raw),
                    _ => {}
                }
            }
            let key = String::from_utf8_lossy(key).into_owned();
            let value = match ty {
                Ty::Message(idx) => {
                    let parts = values
                        .iter()
                        .map(|r| match r {
                            Raw::Bytes(b) => Ok(*b),
                            _ => Err(malformed("wrong wire type for a map value")),
                        })
                        .collect::<Result<Vec<_>, _>>()?;
                    // Go's generated code keeps the last occurrence of the value.
                    let last: Vec<&[u8]> = parts.last().copied().into_iter().collect();
                    self.message(idx, &last)
                        .map_err(|e| prefix(&format!("[{key}]"), e))?
                }
                ty => match values.last() {
                    Some(raw) => scalar(ty, *raw)
                        .and_then(Scalar::to_json)
                        .map_err(|e| prefix(&format!("[{key}]"), e))?,
                    None => zero_scalar(ty),
                },
            };
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }

    /// Fields of a special message by number: the last occurrence of each scalar, and all
    /// occurrences of repeated ones.
    fn special(&mut self, msg: &Message, parts: &[&[u8]]) -> Result<Value, Error> {
        // Types with a hand-written Unmarshal reset on each occurrence: the last one counts.
        let resets = matches!(
            msg.special,
            Special::Time | Special::MicroTime | Special::Quantity
        );
        let own: Vec<&[u8]> = if resets {
            parts.last().copied().into_iter().collect()
        } else {
            parts.to_vec()
        };
        let empty = own.iter().all(|p| p.is_empty());
        let slots = Self::collect(msg, &own)?;
        let get = |tag: u32| -> &[Raw<'_>] {
            msg.fields
                .iter()
                .position(|f| f.tag() == tag)
                .and_then(|i| slots.get(i))
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        let int = |tag: u32| -> i64 {
            match get(tag).last() {
                Some(Raw::Varint(v)) => *v as i64,
                _ => 0,
            }
        };
        let last_bytes = |tag: u32| -> Option<&[u8]> {
            match get(tag).last() {
                Some(Raw::Bytes(b)) => Some(*b),
                _ => None,
            }
        };
        match msg.special {
            Special::None => Err(malformed("internal: not a special message")),
            Special::Time => {
                if empty {
                    return Ok(Value::Null);
                }
                crate::time::rfc3339(int(1), 0, false).map_err(unrepresentable)
            }
            Special::MicroTime => {
                if empty {
                    return Ok(Value::Null);
                }
                // nanos is an int32: its low 32 bits, truncated to microseconds.
                let nanos = i64::from(int(2) as u32 as i32);
                crate::time::rfc3339(int(1), nanos - nanos % 1000, true).map_err(unrepresentable)
            }
            Special::Duration => Ok(Value::String(crate::time::go_duration(int(1)))),
            Special::Quantity => match last_bytes(1) {
                None => Ok(Value::String("0".to_string())),
                Some(b) => {
                    let s = String::from_utf8_lossy(b).into_owned();
                    if !crate::time::quantity_syntax(&s) {
                        return Err(unrepresentable(format!(
                            "quantities must match the regular expression \
                             '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$' (got {s:?})"
                        )));
                    }
                    Ok(Value::String(s))
                }
            },
            Special::IntOrString => match int(1) {
                0 => Ok(Value::Number(i64::from(int(2) as u32 as i32).into())),
                1 => Ok(Value::String(
                    String::from_utf8_lossy(last_bytes(3).unwrap_or_default()).into_owned(),
                )),
                _ => Err(unrepresentable("impossible IntOrString.Type")),
            },
            Special::RawExtension | Special::FieldsV1 => match last_bytes(1) {
                None => Ok(Value::Null),
                Some(b) => embedded_json(b),
            },
            Special::Json => match last_bytes(1) {
                Some(b) if !b.is_empty() => embedded_json(b),
                _ => Ok(Value::Null),
            },
            Special::SchemaOrArray => {
                let schemas = self.special_field(msg, &slots, 2)?;
                if let Some(Value::Array(items)) = schemas.filter(|v| !is_empty_array(v)) {
                    return Ok(Value::Array(items));
                }
                Ok(self.special_field(msg, &slots, 1)?.unwrap_or(Value::Null))
            }
            Special::SchemaOrBool => {
                if let Some(schema) = self.special_field(msg, &slots, 2)? {
                    return Ok(schema);
                }
                Ok(Value::Bool(int(1) != 0))
            }
            Special::SchemaOrStringArray => {
                if let Some(p) = self
                    .special_field(msg, &slots, 2)?
                    .filter(|v| !is_empty_array(v))
                {
                    return Ok(p);
                }
                Ok(self.special_field(msg, &slots, 1)?.unwrap_or(Value::Null))
            }
            Special::List => Ok(self
                .special_field(msg, &slots, 1)?
                .filter(|v| !is_empty_array(v))
                .unwrap_or(Value::Null)),
        }
    }

    /// A field of a special message, decoded as a plain field; `None` when absent.
    fn special_field(
        &mut self,
        msg: &Message,
        slots: &[Vec<Raw<'_>>],
        tag: u32,
    ) -> Result<Option<Value>, Error> {
        let Some(i) = msg.fields.iter().position(|f| f.tag() == tag) else {
            return Ok(None);
        };
        let (Some(f), Some(raws)) = (msg.fields.get(i), slots.get(i)) else {
            return Ok(None);
        };
        if raws.is_empty() {
            return Ok(None);
        }
        match (f.label(), f.ty()) {
            (Label::Single, Ty::Message(idx)) => Ok(Some(self.message(idx, &bytes_of(raws))?)),
            (Label::Repeated, ty) => Ok(self.repeated(ty, raws)?.map(Value::Array)),
            _ => Err(malformed("internal: unexpected special field")),
        }
    }
}

fn is_empty_array(v: &Value) -> bool {
    matches!(v, Value::Array(a) if a.is_empty())
}

/// Embedded JSON (`RawExtension`, `FieldsV1`, `JSON`): written as is by Go, so it must be
/// JSON.
fn embedded_json(b: &[u8]) -> Result<Value, Error> {
    serde_json::from_slice(b)
        .map_err(|e| unrepresentable(format!("embedded object is not valid JSON: {e}")))
}
