//! The store's typed errors.

use crate::{KeyValue, Revision};

/// Everything a [`crate::Backend`] call can fail with.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The key does not exist (or no longer exists).
    #[error("key not found: {key}")]
    NotFound { key: String },

    /// `create` of a key that already exists.
    #[error("key already exists: {key}")]
    AlreadyExists { key: String },

    /// A compare-and-swap precondition failed. `current` is the object as it is now
    /// (`None` when the key is gone), so callers can retry without another read.
    #[error("conflict on {key}: expected revision {expected}, current {}", current.as_ref().map_or(0, |kv| kv.mod_revision))]
    Conflict {
        key: String,
        expected: Revision,
        current: Option<Box<KeyValue>>,
    },

    /// The requested revision was compacted away; `compacted` is the oldest revision still
    /// available, `current` the newest.
    #[error(
        "revision {requested} has been compacted (compacted up to {compacted}, current {current})"
    )]
    Compacted {
        requested: Revision,
        compacted: Revision,
        current: Revision,
    },

    /// The requested revision is newer than anything the store has committed.
    #[error("revision {requested} is in the future (current {current})")]
    FutureRevision {
        requested: Revision,
        current: Revision,
    },

    /// A key or prefix that the store refuses (empty, relative, control characters, too long).
    #[error("invalid key {key:?}: {reason}")]
    InvalidKey { key: String, reason: &'static str },

    /// A value larger than the store accepts.
    #[error("value of {size} bytes for {key} exceeds the limit of {limit} bytes")]
    TooLarge {
        key: String,
        size: usize,
        limit: usize,
    },

    /// The datastore cannot be reached or is shutting down; retrying later may succeed.
    #[error("datastore unavailable: {0}")]
    Unavailable(String),

    /// Anything else: corruption, a bug, an unexpected reply. Never retried blindly.
    #[error("datastore internal error: {0}")]
    Internal(String),
}

impl StoreError {
    pub fn internal(e: impl std::fmt::Display) -> Self {
        StoreError::Internal(e.to_string())
    }

    pub fn unavailable(e: impl std::fmt::Display) -> Self {
        StoreError::Unavailable(e.to_string())
    }

    pub fn is_not_found(&self) -> bool {
        matches!(self, StoreError::NotFound { .. })
    }

    pub fn is_conflict(&self) -> bool {
        matches!(self, StoreError::Conflict { .. })
    }
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;
