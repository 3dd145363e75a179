//! Kubernetes protobuf request bodies (`application/vnd.kubernetes.protobuf`) decoded to
//! the JSON objects the server works on.
//!
//! Since client-go 1.32, typed clients (every `kubectl create …` subcommand, `kubectl auth
//! can-i`, `kubectl create token`, evictions, …) send protobuf bodies with no fallback to
//! JSON. [`decode`] turns such a body into exactly the JSON object upstream's JSON serializer
//! writes for the same Go object: JSON field names, `apiVersion`/`kind` from the envelope,
//! `metav1.Time`/`MicroTime` as RFC 3339 strings (`null` when zero), `Duration` as Go prints
//! it, `Quantity` as its string, `IntOrString` as a number or a string, `RawExtension` and
//! `JSON` as embedded JSON, bytes as base64, maps as objects, and fields left out exactly
//! where Go's `omitempty` leaves them out (pointers keep present zero values; structs are
//! always written; fields without `omitempty` are always written).
//!
//! A body is the envelope: the magic `k8s\0`, then a `runtime.Unknown` message holding the
//! type (`apiVersion`, `kind`), the object's own encoding (`raw`), and content encoding and
//! type (ignored, as upstream ignores them).
//!
//! The decoder is driven by a table (`src/generated.rs`) of every message reachable from the
//! covered group versions (the GA groups of Kubernetes 1.35 that rkube serves or clients
//! post to: core, apps, batch, autoscaling v1/v2, policy, rbac, scheduling, coordination,
//! discovery, events, networking, storage, node, flowcontrol, admissionregistration,
//! authentication, authorization, certificates, apiextensions, meta): field numbers, wire and
//! message types from the `k8s-pb` crate's sources, JSON names and Go JSON semantics from
//! `data/go-json.tsv`; `tests/generate_table.rs` regenerates it. It is total: malformed
//! input, wrong wire types, absurd lengths and deep nesting are [`Error`]s, never panics;
//! nothing is allocated from a length read off the wire, and the output is bounded by a
//! budget proportional to the input.
//!
//! Quantities are passed through as sent (after a syntax check), not canonicalized as
//! upstream's `ParseQuantity` + `String()` would: Go clients send canonical forms already,
//! and the server treats JSON bodies the same way.

mod decode;
#[rustfmt::skip]
mod generated;
mod table;
#[cfg(test)]
mod tests;
mod time;
mod wire;

use serde_json::Value;

pub use decode::MAX_DEPTH;

/// The four bytes every Kubernetes protobuf body starts with.
pub const MAGIC: &[u8; 4] = b"k8s\x00";

/// The media type of Kubernetes protobuf bodies.
pub const CONTENT_TYPE: &str = "application/vnd.kubernetes.protobuf";

/// Why a body could not be decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Nothing after the magic (or no body at all).
    #[error("empty body")]
    Empty,
    /// The body does not start with `k8s\0`.
    #[error(
        "provided data does not appear to be a protobuf message, expected prefix [107 56 115 0]"
    )]
    NotProtobuf,
    /// The envelope names no kind.
    #[error("Object 'Kind' is missing in protobuf envelope (apiVersion {api_version:?})")]
    MissingKind { api_version: String },
    /// The envelope names no version.
    #[error("Object 'apiVersion' is missing in protobuf envelope (kind {kind:?})")]
    MissingVersion { kind: String },
    /// A kind this decoder does not know (custom resources are never protobuf).
    #[error(
        "protobuf is not supported for kind {kind:?} in version {api_version:?}; send JSON or YAML"
    )]
    UnsupportedKind { api_version: String, kind: String },
    /// Bytes that are not valid protobuf for the message.
    #[error("malformed protobuf{}: {reason}", at(path))]
    Malformed { path: String, reason: String },
    /// Valid protobuf that upstream could not write as JSON either (invalid embedded JSON,
    /// an impossible `IntOrString`, a non-finite float, a bad quantity).
    #[error("cannot convert protobuf{} to JSON: {reason}", at(path))]
    Unrepresentable { path: String, reason: String },
    /// Messages nested deeper than [`MAX_DEPTH`].
    #[error("protobuf object nested more than {0} levels deep")]
    TooDeep(usize),
    /// The JSON form would be out of proportion to the body.
    #[error("protobuf object expands to too large a JSON object")]
    TooLarge,
}

fn at(path: &str) -> String {
    if path.is_empty() {
        String::new()
    } else {
        format!(" at {path}")
    }
}

impl Error {
    /// Whether the body may be fine but its kind cannot be read as protobuf (the server
    /// answers 415 Unsupported Media Type); otherwise the body is bad (400).
    pub fn is_unsupported_kind(&self) -> bool {
        matches!(self, Error::UnsupportedKind { .. })
    }
}

/// Whether `body` starts with the Kubernetes protobuf magic (`k8s\0`).
pub fn is_envelope(body: &[u8]) -> bool {
    body.starts_with(MAGIC)
}

/// The envelope's contents.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Envelope<'a> {
    pub api_version: String,
    pub kind: String,
    /// The object's own encoding.
    pub raw: &'a [u8],
    pub content_encoding: String,
    pub content_type: String,
}

fn wire_err(e: wire::WireError) -> Error {
    Error::Malformed {
        path: "envelope".to_string(),
        reason: e.0.to_string(),
    }
}

fn envelope_string(raw: Option<wire::Raw<'_>>) -> Result<Option<String>, Error> {
    match raw {
        Some(wire::Raw::Bytes(b)) => Ok(Some(String::from_utf8_lossy(b).into_owned())),
        Some(_) => Err(Error::Malformed {
            path: "envelope".to_string(),
            reason: "wrong wire type".to_string(),
        }),
        None => Ok(None),
    }
}

/// Reads the envelope (`k8s\0` + `runtime.Unknown`) without decoding the object.
pub fn envelope(body: &[u8]) -> Result<Envelope<'_>, Error> {
    if body.is_empty() {
        return Err(Error::Empty);
    }
    let data = body.strip_prefix(MAGIC).ok_or(Error::NotProtobuf)?;
    if data.is_empty() {
        return Err(Error::Empty);
    }
    let mut env = Envelope::default();
    let mut r = wire::Reader::new(data);
    while let Some((number, raw)) = r.field().map_err(wire_err)? {
        match number {
            1 => {
                let Some(wire::Raw::Bytes(type_meta)) = raw else {
                    if raw.is_some() {
                        return Err(wire_err(wire::WireError("wrong wire type for typeMeta")));
                    }
                    continue;
                };
                let mut t = wire::Reader::new(type_meta);
                while let Some((n, v)) = t.field().map_err(wire_err)? {
                    match n {
                        1 => {
                            if let Some(s) = envelope_string(v)? {
                                env.api_version = s;
                            }
                        }
                        2 => {
                            if let Some(s) = envelope_string(v)? {
                                env.kind = s;
                            }
                        }
                        _ => {}
                    }
                }
            }
            2 => match raw {
                Some(wire::Raw::Bytes(b)) => env.raw = b,
                Some(_) => return Err(wire_err(wire::WireError("wrong wire type for raw"))),
                None => {}
            },
            3 => {
                if let Some(s) = envelope_string(raw)? {
                    env.content_encoding = s;
                }
            }
            4 => {
                if let Some(s) = envelope_string(raw)? {
                    env.content_type = s;
                }
            }
            _ => {}
        }
    }
    Ok(env)
}

fn split_api_version(api_version: &str) -> (&str, &str) {
    match api_version.rsplit_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    }
}

/// The message of a kind.
fn message_for(api_version: &str, kind: &str) -> Option<u16> {
    if let Ok(i) = generated::KINDS.binary_search_by(|(a, k, _)| (*a, *k).cmp(&(api_version, kind)))
    {
        return generated::KINDS.get(i).map(|(_, _, m)| *m);
    }
    generated::META_KINDS
        .binary_search_by(|(k, _)| (*k).cmp(kind))
        .ok()
        .and_then(|i| generated::META_KINDS.get(i))
        .map(|(_, m)| *m)
}

/// Whether protobuf bodies of `apiVersion`/`kind` can be decoded.
pub fn supports(api_version: &str, kind: &str) -> bool {
    message_for(api_version, kind).is_some()
}

/// Decodes a protobuf body into the JSON object upstream would write for it.
pub fn decode(body: &[u8]) -> Result<Value, Error> {
    decode_with_defaults(body, "", "")
}

/// [`decode`], with the `apiVersion` and `kind` the request's URL implies filling in what the
/// envelope leaves empty (upstream's `copyKindDefaults`: the kind when missing; the group
/// and version when both are missing; the version when the group matches).
pub fn decode_with_defaults(
    body: &[u8],
    default_api_version: &str,
    default_kind: &str,
) -> Result<Value, Error> {
    let env = envelope(body)?;
    let mut kind = env.kind.clone();
    if kind.is_empty() {
        kind = default_kind.to_string();
    }
    let (group, version) = split_api_version(&env.api_version);
    let (default_group, default_version) = split_api_version(default_api_version);
    let api_version = match (group, version) {
        ("", "") => default_api_version.to_string(),
        (g, "") if g == default_group && !default_version.is_empty() => {
            format!("{g}/{default_version}")
        }
        _ => env.api_version.clone(),
    };
    if kind.is_empty() {
        return Err(Error::MissingKind { api_version });
    }
    if split_api_version(&api_version).1.is_empty() {
        return Err(Error::MissingVersion { kind });
    }
    let idx = message_for(&api_version, &kind).ok_or_else(|| Error::UnsupportedKind {
        api_version: api_version.clone(),
        kind: kind.clone(),
    })?;
    let mut decoder = decode::Decoder::new(body.len());
    let mut value = decoder.message(idx, &[env.raw])?;
    if let Value::Object(map) = &mut value {
        map.insert("apiVersion".to_string(), Value::String(api_version));
        map.insert("kind".to_string(), Value::String(kind));
    }
    Ok(value)
}
