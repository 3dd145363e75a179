//! The node agent (kubelet).
//!
//! - [`config`]: the settings every part shares.
//! - [`VolumeManager`] / [`CgroupManager`]: the seams between pod sync and the node's
//!   volumes and cgroups.

pub mod agent;
pub mod bootstrap;
pub mod cgroups;
pub mod config;
pub mod node;
pub mod overlay;
pub mod pod;
pub mod runtime_endpoint;
pub mod server;
pub mod volumes;

use std::collections::BTreeMap;
use std::path::PathBuf;

use async_trait::async_trait;
use k8s_openapi::api::core::v1::Pod;

pub use config::KubeletConfig;

/// What the kubelet can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("container runtime: {0}")]
    Cri(#[from] cri::Error),
    #[error("API server: {0}")]
    Api(#[from] kube::Error),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("volume {volume}: {message}")]
    Volume { volume: String, message: String },
    #[error("{0}")]
    Other(String),
}

/// The volumes of one pod, set up on the host: volume name → host path to bind-mount.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PodVolumes {
    pub paths: BTreeMap<String, PathBuf>,
}

/// Sets a pod's volumes up before its containers start and tears them down after its
/// sandbox is gone (upstream's volume manager + the in-tree plugins).
#[async_trait]
pub trait VolumeManager: Send + Sync {
    /// Makes every volume of `pod` ready under its pod directory (idempotent; refreshes
    /// configMap/secret/downwardAPI/projected content on every call).
    async fn setup(&self, pod: &Pod) -> Result<PodVolumes, Error>;
    /// Removes the pod's volumes (and its pod directory).
    async fn teardown(&self, pod_uid: &str) -> Result<(), Error>;
}

/// The pod-level cgroups under the QoS hierarchy (`kubepods`, `kubepods/burstable`,
/// `kubepods/besteffort`, `…/pod<uid>`).
pub trait CgroupManager: Send + Sync {
    /// Creates (or updates) the pod's cgroup with its limits; returns the cgroup parent to
    /// hand to CRI (`PodSandboxConfig.linux.cgroup_parent`).
    fn ensure_pod(&self, pod: &Pod) -> Result<String, Error>;
    /// Removes the pod's cgroup once its containers are gone.
    fn remove_pod(&self, pod: &Pod) -> Result<(), Error>;
}
