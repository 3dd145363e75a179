//! An existing CRI runtime (`--container-runtime-endpoint`, as k3s's): rkube neither
//! starts nor stops it, so what rkube does for the containerd it runs itself is checked
//! here instead, once at start:
//!
//! - the sandbox (pause) image: when the runtime's configured sandbox image is ours
//!   ([`oci::PAUSE_IMAGE`]) and absent, rkube imports it (`ctr images import` over the
//!   runtime's socket, as for its own containerd); another sandbox image is the runtime's
//!   business (containerd pulls it at the first sandbox), and is only reported when absent;
//! - the CNI configuration: the node writes its conflist into `KubeletConfig::cni_conf_dir`
//!   (`--cni-conf-dir`); when the runtime says it reads another directory, that is logged
//!   as an error with the flag to pass;
//! - the cgroup driver: rkube's kubelet uses `cgroupfs`; a runtime configured for systemd
//!   cgroups is reported.
//!
//! What the runtime is configured with comes from CRI `Status` with `verbose`: containerd
//! puts its CRI plugin configuration as JSON under the `config` key of `info` (1.6:
//! `sandboxImage`, `cni.confDir`, `containerd.runtimes.<name>.options.SystemdCgroup`,
//! `systemdCgroup`; 2.x: `pinnedImages.sandbox`). A runtime that does not say (another
//! CRI implementation) is used as it is, with a warning naming what it must provide.

use std::path::{Path, PathBuf};
use std::time::Duration;

use cri::{ImageService, RuntimeService, v1};
use serde_json::Value;

use crate::Error;

/// What the runtime says it is configured with (from `Status` `verbose`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RuntimeInfo {
    /// The sandbox (pause) image, normalized (`docker.io/…:tag`).
    pub sandbox_image: Option<String>,
    /// The directory its CRI plugin loads CNI network configurations from.
    pub cni_conf_dir: Option<PathBuf>,
    /// Whether it places containers with the systemd cgroup driver.
    pub systemd_cgroup: bool,
}

/// The runtime's configuration from a verbose `Status` answer; `None` when it carries
/// none (not containerd's CRI plugin, or not verbose). Pure.
pub fn runtime_info(status: &v1::StatusResponse) -> Option<RuntimeInfo> {
    let config: Value = serde_json::from_str(status.info.get("config")?).ok()?;
    let sandbox_image = config["sandboxImage"]
        .as_str()
        .or_else(|| config["pinnedImages"]["sandbox"].as_str())
        .filter(|s| !s.is_empty())
        .map(|s| oci::normalize_reference(s).unwrap_or_else(|_| s.to_string()));
    let cni_conf_dir = config["cni"]["confDir"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(PathBuf::from);
    let runtimes_systemd = config["containerd"]["runtimes"]
        .as_object()
        .is_some_and(|rs| {
            rs.values()
                .any(|r| r["options"]["SystemdCgroup"].as_bool() == Some(true))
        });
    Some(RuntimeInfo {
        sandbox_image,
        cni_conf_dir,
        systemd_cgroup: runtimes_systemd || config["systemdCgroup"].as_bool() == Some(true),
    })
}

/// What to do about the sandbox image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PauseAction {
    /// The runtime has its sandbox image: nothing to do.
    Present,
    /// The sandbox image is ours and missing: import it.
    Import,
    /// Another image, missing: the runtime pulls it at the first sandbox (it must be
    /// pullable from the node).
    PulledByRuntime(String),
    /// The runtime does not say which image it uses.
    Unknown,
}

/// Decides from the runtime's sandbox image and whether the runtime has it. Pure.
pub fn pause_action(sandbox_image: Option<&str>, present: bool) -> PauseAction {
    match sandbox_image {
        None => PauseAction::Unknown,
        Some(_) if present => PauseAction::Present,
        Some(image) if image == oci::PAUSE_IMAGE => PauseAction::Import,
        Some(image) => PauseAction::PulledByRuntime(image.to_string()),
    }
}

/// Whether two directories are the same (canonical paths when they exist).
fn same_dir(a: &Path, b: &Path) -> bool {
    let canon = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    canon(a) == canon(b)
}

/// Writes our pause image (from the `rkube-pause` binary `pause`) as an archive under
/// `data_dir/images` and returns its path.
///
/// # Errors
/// `Io` when the archive cannot be written, `Other` when the image cannot be built.
pub fn write_pause_archive(pause: &Path, data_dir: &Path) -> Result<PathBuf, Error> {
    let images = data_dir.join("images");
    std::fs::create_dir_all(&images).map_err(|source| Error::Io {
        path: images.clone(),
        source,
    })?;
    let archive = images.join("pause.tar");
    let file = std::fs::File::create(&archive).map_err(|source| Error::Io {
        path: archive.clone(),
        source,
    })?;
    oci::pause_image(pause, std::io::BufWriter::new(file))
        .map_err(|e| Error::Other(format!("building the pause image: {e}")))?;
    Ok(archive)
}

/// How long [`prepare`] waits for the runtime to answer.
pub const WAIT_FOR_RUNTIME: Duration = Duration::from_secs(30);

/// Checks an existing runtime at `endpoint` once at start (see the module docs):
/// imports our pause image when the runtime's sandbox image is ours and absent, and
/// logs what the operator must fix otherwise. Problems are logged, never fatal: the
/// node still registers and reports the runtime's own readiness.
pub async fn prepare(
    endpoint: &str,
    runtime: &dyn RuntimeService,
    images: &dyn ImageService,
    pause_binary: Option<&Path>,
    data_dir: &Path,
    cni_conf_dir: &Path,
) {
    let deadline = tokio::time::Instant::now() + WAIT_FOR_RUNTIME;
    let status = loop {
        match runtime.status(true).await {
            Ok(s) => break s,
            Err(e) if tokio::time::Instant::now() >= deadline => {
                tracing::error!(%endpoint, error = %e, "the container runtime does not answer; the node stays NotReady until it does");
                return;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    };
    let Some(info) = runtime_info(&status) else {
        tracing::warn!(
            %endpoint,
            cni_conf_dir = %cni_conf_dir.display(),
            "the container runtime does not report its configuration (not containerd?): it must provide its sandbox image, use the cgroupfs driver and load the CNI configuration rkube writes to cni_conf_dir"
        );
        return;
    };
    tracing::info!(
        %endpoint,
        sandbox_image = %info.sandbox_image.as_deref().unwrap_or("?"),
        cni_conf_dir = %info.cni_conf_dir.as_deref().map_or("?".into(), |d| d.display().to_string()),
        systemd_cgroup = info.systemd_cgroup,
        "the container runtime's configuration"
    );
    match &info.cni_conf_dir {
        Some(dir) if !same_dir(dir, cni_conf_dir) => tracing::error!(
            %endpoint,
            runtime_dir = %dir.display(),
            written_to = %cni_conf_dir.display(),
            "the container runtime loads its CNI configuration from another directory than the one this node writes to: pods get no network; pass --cni-conf-dir {}",
            dir.display()
        ),
        _ => {}
    }
    if info.systemd_cgroup {
        tracing::warn!(%endpoint, "the container runtime uses the systemd cgroup driver; rkube's kubelet places pods with cgroupfs (set SystemdCgroup = false)");
    }
    let present = match &info.sandbox_image {
        Some(image) => {
            let spec = v1::ImageSpec {
                image: image.clone(),
                ..Default::default()
            };
            match images.image_status(&spec).await {
                Ok(found) => found.is_some(),
                Err(e) => {
                    tracing::warn!(%image, error = %e, "asking the runtime for its sandbox image");
                    false
                }
            }
        }
        None => false,
    };
    match pause_action(info.sandbox_image.as_deref(), present) {
        PauseAction::Present => {
            tracing::info!(image = ?info.sandbox_image, "the runtime has its sandbox image");
        }
        PauseAction::Unknown => tracing::warn!(
            %endpoint,
            "the container runtime does not name its sandbox image; it must be able to get it"
        ),
        PauseAction::PulledByRuntime(image) => tracing::info!(
            %image,
            "the runtime's sandbox image is not present; the runtime pulls it at the first pod (it must be reachable from this node), or set its sandbox_image to {} to use rkube's",
            oci::PAUSE_IMAGE
        ),
        PauseAction::Import => import_pause(endpoint, pause_binary, data_dir).await,
    }
}

async fn import_pause(endpoint: &str, pause_binary: Option<&Path>, data_dir: &Path) {
    let Some(pause) = pause_binary else {
        tracing::error!(
            image = oci::PAUSE_IMAGE,
            "the runtime's sandbox image is rkube's pause image, which it lacks, and rkube-pause was not found beside the rkube binary to build it: pods cannot start (build it with `cargo build -p rkube`, or import it with `rkube image import`)"
        );
        return;
    };
    let socket = match cri::remote::socket_path(endpoint) {
        Ok(s) => s,
        Err(e) => {
            tracing::error!(%endpoint, error = %e, "cannot import the pause image");
            return;
        }
    };
    let imported = async {
        let pause = pause.to_path_buf();
        let dir = data_dir.to_path_buf();
        let archive = tokio::task::spawn_blocking(move || write_pause_archive(&pause, &dir))
            .await
            .map_err(|e| Error::Other(format!("building the pause image: {e}")))??;
        cri::containerd::import_image(&socket, &archive).await?;
        Ok::<(), Error>(())
    }
    .await;
    match imported {
        Ok(()) => tracing::info!(
            image = oci::PAUSE_IMAGE,
            %endpoint,
            "pause image imported into the container runtime"
        ),
        Err(e) => tracing::error!(
            image = oci::PAUSE_IMAGE,
            %endpoint,
            error = %e,
            "importing the pause image into the container runtime failed: pods cannot start until the runtime has it"
        ),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    fn status(config: Option<Value>) -> v1::StatusResponse {
        v1::StatusResponse {
            info: config
                .map(|c| [("config".to_string(), c.to_string())].into())
                .unwrap_or_default(),
            ..Default::default()
        }
    }

    #[test]
    fn reads_containerd_1_6_config() {
        let s = status(Some(serde_json::json!({
            "sandboxImage": "rkube/pause:3.10",
            "systemdCgroup": false,
            "cni": {"binDir": "/usr/lib/cni", "confDir": "/etc/cni/net.d", "maxConfNum": 1},
            "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": false}}}},
        })));
        let info = runtime_info(&s).unwrap();
        assert_eq!(info.sandbox_image.as_deref(), Some(oci::PAUSE_IMAGE));
        assert_eq!(info.cni_conf_dir, Some(PathBuf::from("/etc/cni/net.d")));
        assert!(!info.systemd_cgroup);

        let s = status(Some(serde_json::json!({
            "pinnedImages": {"sandbox": "registry.k8s.io/pause:3.10"},
            "containerd": {"runtimes": {"runc": {"options": {"SystemdCgroup": true}}}},
        })));
        let info = runtime_info(&s).unwrap();
        assert_eq!(
            info.sandbox_image.as_deref(),
            Some("registry.k8s.io/pause:3.10")
        );
        assert_eq!(info.cni_conf_dir, None);
        assert!(info.systemd_cgroup);

        assert_eq!(runtime_info(&status(None)), None);
    }

    #[test]
    fn pause_image_decisions() {
        assert_eq!(
            pause_action(Some(oci::PAUSE_IMAGE), false),
            PauseAction::Import
        );
        assert_eq!(
            pause_action(Some(oci::PAUSE_IMAGE), true),
            PauseAction::Present
        );
        assert_eq!(
            pause_action(Some("registry.k8s.io/pause:3.10"), false),
            PauseAction::PulledByRuntime("registry.k8s.io/pause:3.10".into())
        );
        assert_eq!(
            pause_action(Some("registry.k8s.io/pause:3.10"), true),
            PauseAction::Present
        );
        assert_eq!(pause_action(None, false), PauseAction::Unknown);
    }

    #[tokio::test]
    async fn a_silent_runtime_is_used_as_it_is() {
        // The fake answers Status without configuration: nothing is imported, no error.
        let fake = cri::fake::FakeRuntime::new();
        let dir = tempfile::tempdir().unwrap();
        prepare(
            "unix:///nonexistent.sock",
            &fake,
            &fake,
            None,
            dir.path(),
            dir.path(),
        )
        .await;
        assert!(!dir.path().join("images").exists());
    }
}
