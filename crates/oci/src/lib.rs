//! OCI images built by rkube itself, with no registry and no network.
//!
//! [`write_archive`] turns a root filesystem directory into an OCI image archive (the
//! `oci-archive` format: a tar of an OCI image layout with one gzip layer) that
//! `ctr images import` and `skopeo copy oci-archive:…` accept. Output is deterministic:
//! the same tree and config always give the same digests. [`Rootfs`] assembles such a
//! directory (host binaries with their shared libraries, files, dirs, symlinks), and
//! [`pause_image`] builds the sandbox ("pause") image every pod's sandbox runs.
//! [`write_docker_archive`] writes the same kind of image in `docker save`'s format (the
//! air-gap tarballs k3s imports).

mod archive;
mod docker;
mod reference;
mod rootfs;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

pub use archive::write_archive;
pub use docker::{DockerArchiveId, write_docker_archive};
pub use reference::normalize_reference;
pub use rootfs::{Rootfs, parse_ldd, shared_libraries};

/// The name of rkube's sandbox image, the one [`pause_image`] builds (CRI `sandbox_image`).
pub const PAUSE_IMAGE: &str = "docker.io/rkube/pause:3.10";

/// Errors of this crate.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading or creating a file of the root filesystem failed.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// Writing the archive to its destination failed.
    #[error("writing the image archive: {0}")]
    Write(std::io::Error),
    /// Encoding the image's JSON documents failed.
    #[error("encoding image JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A file type an image layer does not carry (devices, fifos, sockets).
    #[error("{}: unsupported file type (only regular files, directories and symlinks)", .0.display())]
    Unsupported(PathBuf),
    /// A path inside the image that is not absolute or climbs out of the root.
    #[error("invalid path in the image {0:?}: it must be absolute and must not contain '..'")]
    InvalidPath(String),
    /// `ldd` could not tell which libraries a binary needs.
    #[error("ldd {}: {message}", binary.display())]
    Ldd { binary: PathBuf, message: String },
    /// An image reference that cannot be normalized.
    #[error("invalid image reference {reference:?}: {reason}")]
    InvalidReference { reference: String, reason: String },
}

impl Error {
    pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
        move |source| Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// What the image runs, as in the `config` object of the OCI image config (the fields of a
/// Dockerfile's ENTRYPOINT, CMD, ENV, WORKDIR, USER, EXPOSE, LABEL and STOPSIGNAL).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageConfig {
    pub entrypoint: Vec<String>,
    pub cmd: Vec<String>,
    /// `KEY=VALUE` entries.
    pub env: Vec<String>,
    pub working_dir: Option<String>,
    pub user: Option<String>,
    /// `PORT/PROTO` entries, e.g. `80/tcp` (a bare `80` means tcp).
    pub exposed_ports: Vec<String>,
    pub labels: BTreeMap<String, String>,
    /// STOPSIGNAL, e.g. `SIGQUIT` (CRI's StopContainer sends it; default SIGTERM).
    pub stop_signal: Option<String>,
}

/// The identity of a written image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageId {
    /// The full reference the archive names the image by.
    pub reference: String,
    /// `sha256:…` of the image config: the image ID `crictl images` shows.
    pub config_digest: String,
    /// `sha256:…` of the manifest: the digest a registry serves the image under.
    pub manifest_digest: String,
    /// `sha256:…` of the uncompressed layer (the config's `rootfs.diff_ids[0]`).
    pub diff_id: String,
}

impl std::fmt::Display for ImageId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.reference, self.manifest_digest)
    }
}

/// The default `PATH` of Linux images (Docker's).
pub const DEFAULT_PATH_ENV: &str =
    "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// Writes the pause image: `pause_binary` as `/pause` (with the shared libraries it needs),
/// entrypoint `["/pause"]`, named [`PAUSE_IMAGE`].
pub fn pause_image(pause_binary: &Path, out: impl Write) -> Result<ImageId, Error> {
    let dir = tempfile::Builder::new()
        .prefix("rkube-pause-rootfs")
        .tempdir()
        .map_err(Error::io(&std::env::temp_dir()))?;
    let rootfs = Rootfs::new(dir.path().join("rootfs"))?;
    rootfs.binary_as(pause_binary, "/pause")?;
    let config = ImageConfig {
        entrypoint: vec!["/pause".into()],
        env: vec![DEFAULT_PATH_ENV.into()],
        user: Some("65535:65535".into()),
        ..ImageConfig::default()
    };
    write_archive(rootfs.path(), PAUSE_IMAGE, &config, out)
}
