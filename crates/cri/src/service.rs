//! The two CRI services as traits, shaped like upstream's `internalapi.RuntimeService` and
//! `internalapi.ImageManagerService`: what the kubelet calls, in the generated [`v1`]
//! types. [`crate::remote::RemoteRuntime`] implements both over a runtime's unix socket;
//! [`crate::fake::FakeRuntime`] implements both in memory for tests.

use std::time::Duration;

use async_trait::async_trait;

use crate::Error;
use crate::v1;

/// The runtime half of the CRI: sandboxes, containers, exec/attach/port-forward and the
/// runtime's own status.
#[async_trait]
pub trait RuntimeService: Send + Sync {
    /// `Version`: the runtime's name and versions.
    async fn version(&self) -> Result<v1::VersionResponse, Error>;
    /// `Status`: the runtime's `RuntimeReady`/`NetworkReady` conditions.
    async fn status(&self, verbose: bool) -> Result<v1::StatusResponse, Error>;
    /// `UpdateRuntimeConfig` with the node's pod CIDR.
    async fn update_pod_cidr(&self, pod_cidr: &str) -> Result<(), Error>;

    /// `RunPodSandbox`: creates and starts the sandbox (pause container, network); returns
    /// its id.
    async fn run_pod_sandbox(
        &self,
        config: &v1::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, Error>;
    /// `StopPodSandbox`: stops every container of the sandbox and tears its network down.
    /// Idempotent.
    async fn stop_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error>;
    /// `RemovePodSandbox`: removes a stopped sandbox and its containers. Idempotent.
    async fn remove_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error>;
    /// `PodSandboxStatus`.
    async fn pod_sandbox_status(
        &self,
        sandbox_id: &str,
        verbose: bool,
    ) -> Result<v1::PodSandboxStatusResponse, Error>;
    /// `ListPodSandbox`.
    async fn list_pod_sandbox(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, Error>;

    /// `CreateContainer` in a sandbox; returns the container id.
    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &v1::ContainerConfig,
        sandbox_config: &v1::PodSandboxConfig,
    ) -> Result<String, Error>;
    /// `StartContainer`.
    async fn start_container(&self, container_id: &str) -> Result<(), Error>;
    /// `StopContainer`: SIGTERM, then SIGKILL after `timeout` (0: at once). Idempotent.
    async fn stop_container(&self, container_id: &str, timeout: Duration) -> Result<(), Error>;
    /// `RemoveContainer`. Idempotent.
    async fn remove_container(&self, container_id: &str) -> Result<(), Error>;
    /// `ListContainers`.
    async fn list_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<v1::Container>, Error>;
    /// `ContainerStatus`.
    async fn container_status(
        &self,
        container_id: &str,
        verbose: bool,
    ) -> Result<v1::ContainerStatusResponse, Error>;
    /// `ReopenContainerLog`.
    async fn reopen_container_log(&self, container_id: &str) -> Result<(), Error>;

    /// `ExecSync`: runs `cmd` in the container and waits at most `timeout` (0: no limit).
    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<v1::ExecSyncResponse, Error>;
    /// `Exec`: the URL of the runtime's streaming server for this exec.
    async fn exec(&self, request: v1::ExecRequest) -> Result<v1::ExecResponse, Error>;
    /// `Attach`: the URL of the runtime's streaming server for this attach.
    async fn attach(&self, request: v1::AttachRequest) -> Result<v1::AttachResponse, Error>;
    /// `PortForward`: the URL of the runtime's streaming server for this port-forward.
    async fn port_forward(
        &self,
        request: v1::PortForwardRequest,
    ) -> Result<v1::PortForwardResponse, Error>;

    /// `ListContainerStats`.
    async fn list_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<v1::ContainerStats>, Error>;
}

/// The image half of the CRI.
#[async_trait]
pub trait ImageService: Send + Sync {
    /// `ListImages`.
    async fn list_images(&self, filter: Option<v1::ImageFilter>) -> Result<Vec<v1::Image>, Error>;
    /// `ImageStatus`: `None` when the image is not present.
    async fn image_status(&self, image: &v1::ImageSpec) -> Result<Option<v1::Image>, Error>;
    /// `PullImage` with optional registry credentials; returns the image reference (digest)
    /// the runtime resolved.
    async fn pull_image(
        &self,
        image: &v1::ImageSpec,
        auth: Option<v1::AuthConfig>,
        sandbox_config: Option<&v1::PodSandboxConfig>,
    ) -> Result<String, Error>;
    /// `RemoveImage`. Idempotent.
    async fn remove_image(&self, image: &v1::ImageSpec) -> Result<(), Error>;
    /// `ImageFsInfo`.
    async fn image_fs_info(&self) -> Result<v1::ImageFsInfoResponse, Error>;
}
