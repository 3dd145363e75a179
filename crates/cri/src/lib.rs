//! The Container Runtime Interface (CRI) v1, as the kubelet speaks it.
//!
//! - [`v1`]: the messages and gRPC stubs generated from the vendored `proto/api.proto`
//!   (kubernetes/cri-api v0.33.0).
//! - [`RuntimeService`] / [`ImageService`]: the calls the kubelet makes, as traits.
//! - [`remote::RemoteRuntime`]: both traits over a runtime's unix socket.
//! - [`fake::FakeRuntime`]: both traits in memory, scriptable, for kubelet tests.
//! - [`containerd`]: containerd run by us (config, registry mirrors, supervision).

pub mod containerd;
pub mod fake;
pub mod remote;
mod service;

pub use service::{ImageService, RuntimeService};

/// The generated CRI v1 messages and gRPC stubs (`runtime.v1`).
#[allow(clippy::all, clippy::pedantic, missing_docs, rust_2018_idioms)]
pub mod v1 {
    tonic::include_proto!("runtime.v1");
}

/// What a CRI call can fail with.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
    /// The runtime answered with a gRPC error.
    #[error("{}: {}", .0.code(), .0.message())]
    Status(#[from] tonic::Status),
    /// The runtime's socket could not be reached.
    #[error("connecting to the runtime at {endpoint}: {message}")]
    Connect { endpoint: String, message: String },
    /// The call did not finish within its deadline.
    #[error("{call} timed out after {after:?}")]
    Timeout {
        call: &'static str,
        after: std::time::Duration,
    },
    /// A local operation around the runtime failed (files, processes, mounts).
    #[error("{context}: {message}")]
    Io { context: String, message: String },
    /// containerd (run by us) failed to start or answer, or a `ctr` command failed.
    #[error("containerd: {0}")]
    Containerd(String),
}

impl Error {
    /// Whether the runtime said the object does not exist (gRPC `NotFound`).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Error::Status(s) if s.code() == tonic::Code::NotFound)
    }
}
