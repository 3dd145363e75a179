//! The crate's error type, and how each error reaches the client as upstream's `Status`.

use api::status::{ApiError, Cause, Reason};
use serde_json::{Map, Value, json};

use crate::conflict::Conflicts;

/// Everything that can go wrong in field management.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum Error {
    /// An apply conflicts with fields owned by other managers: 409 Conflict, with one
    /// `FieldManagerConflict` cause per conflicting field.
    #[error("{}", .0.message())]
    Conflict(Conflicts),
    /// The request is malformed: 400 Bad Request (wrong apiVersion or kind in an applied
    /// configuration, managedFields in it, name or namespace mismatch).
    #[error("{0}")]
    BadRequest(String),
    /// What upstream returns as a plain error (an invalid applied configuration, undecodable
    /// managedFields on the live object): 500 with no reason, the message as is.
    #[error("{0}")]
    Internal(String),
    /// A fieldsV1 document or a path element that does not parse.
    #[error("{0}")]
    InvalidFields(String),
}

impl Error {
    /// The HTTP status code upstream answers with.
    pub fn code(&self) -> u16 {
        match self {
            Error::Conflict(_) => 409,
            Error::BadRequest(_) => 400,
            Error::Internal(_) | Error::InvalidFields(_) => 500,
        }
    }

    /// The `Status.reason`, if upstream sets one.
    pub fn reason(&self) -> Option<Reason> {
        match self {
            Error::Conflict(_) => Some(Reason::Conflict),
            Error::BadRequest(_) => Some(Reason::BadRequest),
            Error::Internal(_) | Error::InvalidFields(_) => None,
        }
    }

    /// The `details.causes` (conflicts only).
    pub fn causes(&self) -> Vec<Cause> {
        match self {
            Error::Conflict(c) => c.causes(),
            _ => Vec::new(),
        }
    }

    /// The `Status` object exactly as upstream writes it.
    pub fn to_status(&self) -> Value {
        let mut status = Map::new();
        status.insert("kind".into(), json!("Status"));
        status.insert("apiVersion".into(), json!("v1"));
        status.insert("metadata".into(), json!({}));
        status.insert("status".into(), json!("Failure"));
        status.insert("message".into(), json!(self.to_string()));
        if let Some(r) = self.reason() {
            status.insert("reason".into(), json!(r.as_str()));
        }
        let causes = self.causes();
        if !causes.is_empty() {
            let list: Vec<Value> = causes
                .iter()
                .map(|c| json!({"reason": c.reason, "message": c.message, "field": c.field}))
                .collect();
            status.insert("details".into(), json!({ "causes": list }));
        }
        status.insert("code".into(), json!(self.code()));
        Value::Object(status)
    }

    /// The error as the api crate's [`ApiError`]. Errors upstream leaves without a reason
    /// become `InternalError` with the message unchanged (use [`Error::to_status`] for the
    /// exact upstream body).
    pub fn to_api_error(&self) -> ApiError {
        let mut e = ApiError::new(
            self.code(),
            self.reason().unwrap_or(Reason::InternalError),
            self.to_string(),
        );
        for c in self.causes() {
            e.push_cause(c);
        }
        e
    }
}
