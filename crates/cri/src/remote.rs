//! [`RemoteRuntime`]: both CRI services over a runtime's unix socket (gRPC, tonic), as
//! upstream's `remote.NewRemoteRuntimeService` / `NewRemoteImageService`.
//!
//! The channel is lazy and reconnects by itself: nothing is dialled until the first call,
//! and a runtime that restarts (containerd supervised by us) is reached again on the next
//! call. Every call has a deadline, the runtime request timeout (upstream's
//! `--runtime-request-timeout`, default 2 minutes), except `PullImage` (none, as upstream)
//! and `ExecSync` (its own timeout plus the request timeout, to leave the runtime time to
//! clean up). Messages may be 16 MiB both ways (upstream's `maxMsgSize`).

use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use hyper_util::rt::TokioIo;
use tonic::transport::{Channel, Endpoint, Uri};

use crate::v1;
use crate::v1::image_service_client::ImageServiceClient;
use crate::v1::runtime_service_client::RuntimeServiceClient;
use crate::{Error, ImageService, RuntimeService};

/// Upstream's default `--runtime-request-timeout`.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(120);

/// Upstream's `maxMsgSize` for CRI messages, both ways.
pub const MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// How long dialling the socket may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A CRI runtime reached over its unix socket.
#[derive(Debug, Clone)]
pub struct RemoteRuntime {
    endpoint: String,
    timeout: Duration,
    runtime: RuntimeServiceClient<Channel>,
    images: ImageServiceClient<Channel>,
}

/// The socket path of a CRI endpoint: `unix:///path` or `/path`.
///
/// # Errors
/// `Connect` for any other scheme (upstream supports only unix sockets on Linux).
pub fn socket_path(endpoint: &str) -> Result<PathBuf, Error> {
    let path = if let Some(rest) = endpoint.strip_prefix("unix://") {
        rest
    } else if endpoint.starts_with('/') {
        endpoint
    } else {
        return Err(Error::Connect {
            endpoint: endpoint.to_string(),
            message: "only unix socket endpoints (unix:///path or /path) are supported".into(),
        });
    };
    if !path.starts_with('/') {
        return Err(Error::Connect {
            endpoint: endpoint.to_string(),
            message: "the socket path must be absolute".into(),
        });
    }
    Ok(PathBuf::from(path))
}

impl RemoteRuntime {
    /// A client of the runtime at `endpoint` (`unix:///path` or `/path`) whose calls time
    /// out after `timeout` (see the module docs for the exceptions). Does not dial: the
    /// first call does, and later calls redial if the runtime went away.
    ///
    /// # Errors
    /// `Connect` when the endpoint is not a unix socket path.
    pub fn connect(endpoint: &str, timeout: Duration) -> Result<RemoteRuntime, Error> {
        let path = socket_path(endpoint)?;
        // The URI is only a placeholder for HTTP/2's `:authority`; the connector ignores it.
        let channel = Endpoint::from_static("http://localhost")
            .connect_timeout(CONNECT_TIMEOUT)
            .connect_with_connector_lazy(tower::service_fn(move |_: Uri| {
                let path = path.clone();
                async move {
                    let stream = tokio::net::UnixStream::connect(path).await?;
                    Ok::<_, std::io::Error>(TokioIo::new(stream))
                }
            }));
        Ok(RemoteRuntime {
            endpoint: endpoint.to_string(),
            timeout,
            runtime: RuntimeServiceClient::new(channel.clone())
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
            images: ImageServiceClient::new(channel)
                .max_decoding_message_size(MAX_MESSAGE_SIZE)
                .max_encoding_message_size(MAX_MESSAGE_SIZE),
        })
    }

    /// The endpoint this client talks to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The per-call deadline.
    pub fn timeout(&self) -> Duration {
        self.timeout
    }

    /// Runs one call with `deadline` (None: no deadline), mapping errors.
    async fn call<T, Fut>(
        &self,
        name: &'static str,
        deadline: Option<Duration>,
        fut: impl FnOnce(Option<Duration>) -> Fut,
    ) -> Result<T, Error>
    where
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let result = match deadline {
            Some(d) => match tokio::time::timeout(d, fut(Some(d))).await {
                Ok(r) => r,
                Err(_) => {
                    return Err(Error::Timeout {
                        call: name,
                        after: d,
                    });
                }
            },
            None => fut(None).await,
        };
        result
            .map(tonic::Response::into_inner)
            .map_err(|status| self.map_status(name, deadline, status))
    }

    fn map_status(
        &self,
        name: &'static str,
        deadline: Option<Duration>,
        status: tonic::Status,
    ) -> Error {
        // The runtime's DeadlineExceeded, or tonic's own client-side `grpc-timeout`.
        if (status.code() == tonic::Code::DeadlineExceeded || is_timeout_expired(&status))
            && let Some(after) = deadline
        {
            return Error::Timeout { call: name, after };
        }
        if status.code() == tonic::Code::Unavailable && is_transport_error(&status) {
            return Error::Connect {
                endpoint: self.endpoint.clone(),
                message: status_chain(&status),
            };
        }
        Error::Status(status)
    }

    fn runtime(&self) -> RuntimeServiceClient<Channel> {
        self.runtime.clone()
    }

    fn images(&self) -> ImageServiceClient<Channel> {
        self.images.clone()
    }
}

/// Whether the status is tonic's own for a connection that could not be made or broke
/// (as opposed to an `Unavailable` the runtime answered).
fn is_transport_error(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if e.is::<tonic::transport::Error>() || e.is::<std::io::Error>() {
            return true;
        }
        source = e.source();
    }
    false
}

fn is_timeout_expired(status: &tonic::Status) -> bool {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        if e.is::<tonic::TimeoutExpired>() {
            return true;
        }
        source = e.source();
    }
    false
}

fn status_chain(status: &tonic::Status) -> String {
    let mut message = status.message().to_string();
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(status);
    while let Some(e) = source {
        let text = e.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        source = e.source();
    }
    message
}

fn request<T>(message: T, deadline: Option<Duration>) -> tonic::Request<T> {
    let mut r = tonic::Request::new(message);
    if let Some(d) = deadline {
        r.set_timeout(d);
    }
    r
}

#[async_trait]
impl RuntimeService for RemoteRuntime {
    async fn version(&self) -> Result<v1::VersionResponse, Error> {
        let mut c = self.runtime();
        self.call("Version", Some(self.timeout), |d| async move {
            c.version(request(
                v1::VersionRequest {
                    version: "v1".into(),
                },
                d,
            ))
            .await
        })
        .await
    }

    async fn status(&self, verbose: bool) -> Result<v1::StatusResponse, Error> {
        let mut c = self.runtime();
        self.call("Status", Some(self.timeout), |d| async move {
            c.status(request(v1::StatusRequest { verbose }, d)).await
        })
        .await
    }

    async fn update_pod_cidr(&self, pod_cidr: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::UpdateRuntimeConfigRequest {
            runtime_config: Some(v1::RuntimeConfig {
                network_config: Some(v1::NetworkConfig {
                    pod_cidr: pod_cidr.to_string(),
                }),
            }),
        };
        self.call("UpdateRuntimeConfig", Some(self.timeout), |d| async move {
            c.update_runtime_config(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn run_pod_sandbox(
        &self,
        config: &v1::PodSandboxConfig,
        runtime_handler: &str,
    ) -> Result<String, Error> {
        let mut c = self.runtime();
        let msg = v1::RunPodSandboxRequest {
            config: Some(config.clone()),
            runtime_handler: runtime_handler.to_string(),
        };
        let r = self
            .call("RunPodSandbox", Some(self.timeout), |d| async move {
                c.run_pod_sandbox(request(msg, d)).await
            })
            .await?;
        if r.pod_sandbox_id.is_empty() {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "PodSandboxId is not set for sandbox {:?}",
                config.metadata
            ))));
        }
        Ok(r.pod_sandbox_id)
    }

    async fn stop_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::StopPodSandboxRequest {
            pod_sandbox_id: sandbox_id.to_string(),
        };
        self.call("StopPodSandbox", Some(self.timeout), |d| async move {
            c.stop_pod_sandbox(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn remove_pod_sandbox(&self, sandbox_id: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::RemovePodSandboxRequest {
            pod_sandbox_id: sandbox_id.to_string(),
        };
        self.call("RemovePodSandbox", Some(self.timeout), |d| async move {
            c.remove_pod_sandbox(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn pod_sandbox_status(
        &self,
        sandbox_id: &str,
        verbose: bool,
    ) -> Result<v1::PodSandboxStatusResponse, Error> {
        let mut c = self.runtime();
        let msg = v1::PodSandboxStatusRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            verbose,
        };
        self.call("PodSandboxStatus", Some(self.timeout), |d| async move {
            c.pod_sandbox_status(request(msg, d)).await
        })
        .await
    }

    async fn list_pod_sandbox(
        &self,
        filter: Option<v1::PodSandboxFilter>,
    ) -> Result<Vec<v1::PodSandbox>, Error> {
        let mut c = self.runtime();
        let msg = v1::ListPodSandboxRequest { filter };
        self.call("ListPodSandbox", Some(self.timeout), |d| async move {
            c.list_pod_sandbox(request(msg, d)).await
        })
        .await
        .map(|r| r.items)
    }

    async fn create_container(
        &self,
        sandbox_id: &str,
        config: &v1::ContainerConfig,
        sandbox_config: &v1::PodSandboxConfig,
    ) -> Result<String, Error> {
        let mut c = self.runtime();
        let msg = v1::CreateContainerRequest {
            pod_sandbox_id: sandbox_id.to_string(),
            config: Some(config.clone()),
            sandbox_config: Some(sandbox_config.clone()),
        };
        let r = self
            .call("CreateContainer", Some(self.timeout), |d| async move {
                c.create_container(request(msg, d)).await
            })
            .await?;
        if r.container_id.is_empty() {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "ContainerId is not set for container {:?}",
                config.metadata
            ))));
        }
        Ok(r.container_id)
    }

    async fn start_container(&self, container_id: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::StartContainerRequest {
            container_id: container_id.to_string(),
        };
        self.call("StartContainer", Some(self.timeout), |d| async move {
            c.start_container(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn stop_container(&self, container_id: &str, timeout: Duration) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::StopContainerRequest {
            container_id: container_id.to_string(),
            timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        };
        // Upstream: the runtime timeout plus the grace period.
        let deadline = self.timeout.saturating_add(timeout);
        self.call("StopContainer", Some(deadline), |d| async move {
            c.stop_container(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn remove_container(&self, container_id: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::RemoveContainerRequest {
            container_id: container_id.to_string(),
        };
        self.call("RemoveContainer", Some(self.timeout), |d| async move {
            c.remove_container(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn list_containers(
        &self,
        filter: Option<v1::ContainerFilter>,
    ) -> Result<Vec<v1::Container>, Error> {
        let mut c = self.runtime();
        let msg = v1::ListContainersRequest { filter };
        self.call("ListContainers", Some(self.timeout), |d| async move {
            c.list_containers(request(msg, d)).await
        })
        .await
        .map(|r| r.containers)
    }

    async fn container_status(
        &self,
        container_id: &str,
        verbose: bool,
    ) -> Result<v1::ContainerStatusResponse, Error> {
        let mut c = self.runtime();
        let msg = v1::ContainerStatusRequest {
            container_id: container_id.to_string(),
            verbose,
        };
        self.call("ContainerStatus", Some(self.timeout), |d| async move {
            c.container_status(request(msg, d)).await
        })
        .await
    }

    async fn reopen_container_log(&self, container_id: &str) -> Result<(), Error> {
        let mut c = self.runtime();
        let msg = v1::ReopenContainerLogRequest {
            container_id: container_id.to_string(),
        };
        self.call("ReopenContainerLog", Some(self.timeout), |d| async move {
            c.reopen_container_log(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn exec_sync(
        &self,
        container_id: &str,
        cmd: Vec<String>,
        timeout: Duration,
    ) -> Result<v1::ExecSyncResponse, Error> {
        let mut c = self.runtime();
        let msg = v1::ExecSyncRequest {
            container_id: container_id.to_string(),
            cmd,
            timeout: i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX),
        };
        // Upstream: no deadline without a timeout, else the timeout plus the runtime's.
        let deadline = (!timeout.is_zero()).then(|| self.timeout.saturating_add(timeout));
        self.call("ExecSync", deadline, |d| async move {
            c.exec_sync(request(msg, d)).await
        })
        .await
    }

    async fn exec(&self, msg: v1::ExecRequest) -> Result<v1::ExecResponse, Error> {
        let mut c = self.runtime();
        self.call("Exec", Some(self.timeout), |d| async move {
            c.exec(request(msg, d)).await
        })
        .await
    }

    async fn attach(&self, msg: v1::AttachRequest) -> Result<v1::AttachResponse, Error> {
        let mut c = self.runtime();
        self.call("Attach", Some(self.timeout), |d| async move {
            c.attach(request(msg, d)).await
        })
        .await
    }

    async fn port_forward(
        &self,
        msg: v1::PortForwardRequest,
    ) -> Result<v1::PortForwardResponse, Error> {
        let mut c = self.runtime();
        self.call("PortForward", Some(self.timeout), |d| async move {
            c.port_forward(request(msg, d)).await
        })
        .await
    }

    async fn list_container_stats(
        &self,
        filter: Option<v1::ContainerStatsFilter>,
    ) -> Result<Vec<v1::ContainerStats>, Error> {
        let mut c = self.runtime();
        let msg = v1::ListContainerStatsRequest { filter };
        self.call("ListContainerStats", Some(self.timeout), |d| async move {
            c.list_container_stats(request(msg, d)).await
        })
        .await
        .map(|r| r.stats)
    }
}

#[async_trait]
impl ImageService for RemoteRuntime {
    async fn list_images(&self, filter: Option<v1::ImageFilter>) -> Result<Vec<v1::Image>, Error> {
        let mut c = self.images();
        let msg = v1::ListImagesRequest { filter };
        self.call("ListImages", Some(self.timeout), |d| async move {
            c.list_images(request(msg, d)).await
        })
        .await
        .map(|r| r.images)
    }

    async fn image_status(&self, image: &v1::ImageSpec) -> Result<Option<v1::Image>, Error> {
        let mut c = self.images();
        let msg = v1::ImageStatusRequest {
            image: Some(image.clone()),
            verbose: false,
        };
        let r = self
            .call("ImageStatus", Some(self.timeout), |d| async move {
                c.image_status(request(msg, d)).await
            })
            .await?;
        match r.image {
            Some(i) if i.id.is_empty() || i.size == 0 => Err(Error::Status(
                tonic::Status::unknown(format!("id or size of image {:?} is not set", image.image)),
            )),
            other => Ok(other),
        }
    }

    async fn pull_image(
        &self,
        image: &v1::ImageSpec,
        auth: Option<v1::AuthConfig>,
        sandbox_config: Option<&v1::PodSandboxConfig>,
    ) -> Result<String, Error> {
        let mut c = self.images();
        let msg = v1::PullImageRequest {
            image: Some(image.clone()),
            auth,
            sandbox_config: sandbox_config.cloned(),
        };
        let r = self
            .call("PullImage", None, |d| async move {
                c.pull_image(request(msg, d)).await
            })
            .await?;
        if r.image_ref.is_empty() {
            return Err(Error::Status(tonic::Status::unknown(format!(
                "imageRef of image {:?} is not set",
                image.image
            ))));
        }
        Ok(r.image_ref)
    }

    async fn remove_image(&self, image: &v1::ImageSpec) -> Result<(), Error> {
        let mut c = self.images();
        let msg = v1::RemoveImageRequest {
            image: Some(image.clone()),
        };
        self.call("RemoveImage", Some(self.timeout), |d| async move {
            c.remove_image(request(msg, d)).await
        })
        .await
        .map(|_| ())
    }

    async fn image_fs_info(&self) -> Result<v1::ImageFsInfoResponse, Error> {
        let mut c = self.images();
        self.call("ImageFsInfo", Some(self.timeout), |d| async move {
            c.image_fs_info(request(v1::ImageFsInfoRequest {}, d)).await
        })
        .await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn endpoints() {
        assert_eq!(
            socket_path("unix:///run/x/containerd.sock").unwrap(),
            PathBuf::from("/run/x/containerd.sock")
        );
        assert_eq!(
            socket_path("/run/x.sock").unwrap(),
            PathBuf::from("/run/x.sock")
        );
        assert!(socket_path("tcp://127.0.0.1:1").is_err());
        assert!(socket_path("unix://relative.sock").is_err());
    }

    #[tokio::test]
    async fn missing_socket_is_a_connect_error() {
        let dir = std::env::temp_dir().join(format!("cri-remote-{}", std::process::id()));
        let rt = RemoteRuntime::connect(
            &format!("unix://{}/nothing.sock", dir.display()),
            Duration::from_secs(5),
        )
        .unwrap();
        let err = rt.version().await.unwrap_err();
        assert!(matches!(err, Error::Connect { .. }), "{err:?}");
    }

    #[tokio::test]
    async fn a_runtime_that_never_answers_times_out() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("silent.sock");
        let listener = tokio::net::UnixListener::bind(&path).unwrap();
        // Accepts and holds connections, never speaks HTTP/2.
        let server = tokio::spawn(async move {
            let mut held = Vec::new();
            while let Ok((s, _)) = listener.accept().await {
                held.push(s);
            }
        });
        let rt =
            RemoteRuntime::connect(path.to_str().unwrap(), Duration::from_millis(300)).unwrap();
        let err = rt.list_pod_sandbox(None).await.unwrap_err();
        assert!(
            matches!(err, Error::Timeout { call: "ListPodSandbox", after } if after == Duration::from_millis(300)),
            "{err:?}"
        );
        server.abort();
    }
}
