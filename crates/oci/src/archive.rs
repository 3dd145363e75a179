//! The archive writer: one gzip layer of a directory tree, the image config, the manifest,
//! `index.json` and `oci-layout`, all in one tar (the `oci-archive` format).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::Path;

use flate2::Compression;
use serde::Serialize;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::{Error, ImageConfig, ImageId, normalize_reference};

/// Every file's mtime in the layer and the archive: fixed, so identical trees give
/// identical digests.
pub(crate) const MTIME: u64 = 0;
/// The image's `created` time, fixed for the same reason.
pub(crate) const CREATED: &str = "1970-01-01T00:00:00Z";

pub(crate) const MEDIA_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
pub(crate) const MEDIA_INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub(crate) const MEDIA_CONFIG: &str = "application/vnd.oci.image.config.v1+json";
pub(crate) const MEDIA_LAYER: &str = "application/vnd.oci.image.layer.v1.tar+gzip";

/// A writer that hashes and counts what passes through it.
struct Digesting<W> {
    inner: W,
    hasher: Sha256,
    len: u64,
}

impl<W: Write> Digesting<W> {
    fn new(inner: W) -> Self {
        Digesting {
            inner,
            hasher: Sha256::new(),
            len: 0,
        }
    }

    fn finish(self) -> (W, String, u64) {
        (
            self.inner,
            format!("sha256:{:x}", self.hasher.finalize()),
            self.len,
        )
    }
}

impl<W: Write> Write for Digesting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

pub(crate) fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{:x}", Sha256::digest(bytes))
}

/// The Go architecture name of the machine this runs on (images carry the host's binaries).
pub(crate) fn go_arch() -> &'static str {
    match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        "s390x" => "s390x",
        "riscv64" => "riscv64",
        other => other,
    }
}

pub(crate) struct Layer {
    pub(crate) gzipped: Vec<u8>,
    pub(crate) digest: String,
    pub(crate) diff_id: String,
}

/// Writes `rootfs` as a single-layer OCI image named `reference` (normalized to its full
/// form, e.g. `nginx` → `docker.io/library/nginx:latest`) into `out` as an OCI image
/// archive. `index.json` names the manifest with both `org.opencontainers.image.ref.name`
/// and `io.containerd.image.name` set to the full reference, so `ctr images import` names
/// the image by it.
pub fn write_archive(
    rootfs: &Path,
    reference: &str,
    config: &ImageConfig,
    out: impl Write,
) -> Result<ImageId, Error> {
    let reference = normalize_reference(reference)?;
    let layer = build_layer(rootfs)?;

    let config_json = serde_json::to_vec(&image_config_json(config, &layer.diff_id))?;
    let config_digest = sha256(&config_json);
    let manifest = json!({
        "schemaVersion": 2,
        "mediaType": MEDIA_MANIFEST,
        "config": {
            "mediaType": MEDIA_CONFIG,
            "digest": config_digest,
            "size": config_json.len(),
        },
        "layers": [{
            "mediaType": MEDIA_LAYER,
            "digest": layer.digest,
            "size": layer.gzipped.len(),
        }],
    });
    let manifest_json = serde_json::to_vec(&manifest)?;
    let manifest_digest = sha256(&manifest_json);
    let index = json!({
        "schemaVersion": 2,
        "mediaType": MEDIA_INDEX,
        "manifests": [{
            "mediaType": MEDIA_MANIFEST,
            "digest": manifest_digest,
            "size": manifest_json.len(),
            "platform": {"architecture": go_arch(), "os": "linux"},
            "annotations": {
                "io.containerd.image.name": reference,
                "org.opencontainers.image.ref.name": reference,
            },
        }],
    });
    let index_json = serde_json::to_vec(&index)?;

    let mut tar = tar::Builder::new(out);
    tar.mode(tar::HeaderMode::Deterministic);
    let put_dir = |tar: &mut tar::Builder<_>, path: &str| -> io::Result<()> {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Directory);
        h.set_mode(0o755);
        h.set_mtime(MTIME);
        h.set_size(0);
        tar.append_data(&mut h, path, io::empty())
    };
    let put_file = |tar: &mut tar::Builder<_>, path: &str, data: &[u8]| -> io::Result<()> {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Regular);
        h.set_mode(0o644);
        h.set_mtime(MTIME);
        h.set_size(data.len() as u64);
        tar.append_data(&mut h, path, data)
    };
    let blob = |d: &str| format!("blobs/sha256/{}", d.trim_start_matches("sha256:"));
    (|| -> io::Result<()> {
        put_file(&mut tar, "oci-layout", br#"{"imageLayoutVersion":"1.0.0"}"#)?;
        put_file(&mut tar, "index.json", &index_json)?;
        put_dir(&mut tar, "blobs/")?;
        put_dir(&mut tar, "blobs/sha256/")?;
        put_file(&mut tar, &blob(&layer.digest), &layer.gzipped)?;
        put_file(&mut tar, &blob(&config_digest), &config_json)?;
        put_file(&mut tar, &blob(&manifest_digest), &manifest_json)?;
        tar.into_inner()?.flush()
    })()
    .map_err(Error::Write)?;

    Ok(ImageId {
        reference,
        config_digest,
        manifest_digest,
        diff_id: layer.diff_id,
    })
}

#[derive(Serialize)]
#[serde(rename_all = "PascalCase")]
struct RunConfig<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    user: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    exposed_ports: BTreeMap<String, Value>,
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    env: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    entrypoint: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    cmd: &'a [String],
    #[serde(skip_serializing_if = "Option::is_none")]
    working_dir: Option<&'a str>,
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    labels: &'a BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop_signal: Option<&'a str>,
}

pub(crate) fn image_config_json(config: &ImageConfig, diff_id: &str) -> Value {
    let exposed_ports = config
        .exposed_ports
        .iter()
        .map(|p| {
            let p = if p.contains('/') {
                p.clone()
            } else {
                format!("{p}/tcp")
            };
            (p, json!({}))
        })
        .collect();
    let run = RunConfig {
        user: config.user.as_deref(),
        exposed_ports,
        env: &config.env,
        entrypoint: &config.entrypoint,
        cmd: &config.cmd,
        working_dir: config.working_dir.as_deref(),
        labels: &config.labels,
        stop_signal: config.stop_signal.as_deref(),
    };
    json!({
        "created": CREATED,
        "architecture": go_arch(),
        "os": "linux",
        "config": run,
        "rootfs": {"type": "layers", "diff_ids": [diff_id]},
        "history": [{"created": CREATED, "created_by": "rkube image pack"}],
    })
}

/// The layer: every entry under `rootfs`, sorted, with fixed mtimes. Files owned by the
/// owner of `rootfs` itself are stored as owned by root (0:0), so a tree assembled by any
/// user is root's in the image; other owners are kept.
pub(crate) fn build_layer(rootfs: &Path) -> Result<Layer, Error> {
    let root_meta = std::fs::metadata(rootfs).map_err(Error::io(rootfs))?;
    if !root_meta.is_dir() {
        return Err(Error::Io {
            path: rootfs.to_path_buf(),
            source: io::Error::new(io::ErrorKind::NotADirectory, "not a directory"),
        });
    }
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(3) // Unix, whatever the building host
        .write(Digesting::new(Vec::new()), Compression::default());
    let mut tar = tar::Builder::new(Digesting::new(gz));
    tar.follow_symlinks(false);
    let owner = (root_meta.uid(), root_meta.gid());
    add_tree(&mut tar, rootfs, Path::new(""), owner)?;
    let finish = || -> io::Result<(Vec<u8>, String, String)> {
        let (gz, diff_id, _) = tar.into_inner()?.finish();
        let (gzipped, digest, _) = gz.finish()?.finish();
        Ok((gzipped, digest, diff_id))
    };
    let (gzipped, digest, diff_id) = finish().map_err(Error::Write)?;
    Ok(Layer {
        gzipped,
        digest,
        diff_id,
    })
}

fn add_tree<W: Write>(
    tar: &mut tar::Builder<W>,
    dir: &Path,
    rel: &Path,
    owner: (u32, u32),
) -> Result<(), Error> {
    let mut names: Vec<OsString> = std::fs::read_dir(dir)
        .map_err(Error::io(dir))?
        .map(|e| e.map(|e| e.file_name()))
        .collect::<io::Result<_>>()
        .map_err(Error::io(dir))?;
    names.sort();
    for name in names {
        let host = dir.join(&name);
        let path = rel.join(&name);
        let meta = std::fs::symlink_metadata(&host).map_err(Error::io(&host))?;
        let mut h = tar::Header::new_gnu();
        h.set_mtime(MTIME);
        h.set_mode(meta.mode() & 0o7777);
        h.set_uid(u64::from(if meta.uid() == owner.0 {
            0
        } else {
            meta.uid()
        }));
        h.set_gid(u64::from(if meta.gid() == owner.1 {
            0
        } else {
            meta.gid()
        }));
        let ft = meta.file_type();
        if ft.is_dir() {
            h.set_entry_type(tar::EntryType::Directory);
            h.set_size(0);
            tar.append_data(&mut h, &path, io::empty())
                .map_err(Error::Write)?;
            add_tree(tar, &host, &path, owner)?;
        } else if ft.is_file() {
            h.set_entry_type(tar::EntryType::Regular);
            h.set_size(meta.len());
            let f = std::fs::File::open(&host).map_err(Error::io(&host))?;
            tar.append_data(&mut h, &path, f).map_err(Error::Write)?;
        } else if ft.is_symlink() {
            let target = std::fs::read_link(&host).map_err(Error::io(&host))?;
            h.set_entry_type(tar::EntryType::Symlink);
            h.set_size(0);
            h.set_mode(0o777);
            tar.append_link(&mut h, &path, &target)
                .map_err(Error::Write)?;
        } else {
            return Err(Error::Unsupported(host));
        }
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
pub(crate) mod tests {
    use super::*;
    use std::io::Read;

    fn sample_tree(dir: &Path) {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::create_dir_all(dir.join("tmp")).unwrap();
        std::fs::write(dir.join("bin/hello"), b"#!/bin/sh\necho hi\n").unwrap();
        std::os::unix::fs::symlink("hello", dir.join("bin/hi")).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(
            dir.join("bin/hello"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        std::fs::set_permissions(dir.join("tmp"), std::fs::Permissions::from_mode(0o1777)).unwrap();
    }

    /// The files of a tar archive, by path.
    pub(crate) fn entries(archive: &[u8]) -> BTreeMap<String, Vec<u8>> {
        let mut out = BTreeMap::new();
        let mut t = tar::Archive::new(archive);
        for e in t.entries().unwrap() {
            let mut e = e.unwrap();
            let p = e.path().unwrap().to_string_lossy().into_owned();
            let mut v = Vec::new();
            e.read_to_end(&mut v).unwrap();
            out.insert(p, v);
        }
        out
    }

    #[test]
    fn identical_trees_give_identical_archives() {
        let a = tempfile::tempdir().unwrap();
        let b = tempfile::tempdir().unwrap();
        sample_tree(a.path());
        sample_tree(b.path());
        let mut out_a = Vec::new();
        let mut out_b = Vec::new();
        let cfg = ImageConfig {
            cmd: vec!["/bin/hello".into()],
            ..ImageConfig::default()
        };
        let id_a = write_archive(a.path(), "hello", &cfg, &mut out_a).unwrap();
        let id_b = write_archive(b.path(), "hello", &cfg, &mut out_b).unwrap();
        assert_eq!(id_a, id_b);
        assert_eq!(out_a, out_b);
        assert_eq!(id_a.reference, "docker.io/library/hello:latest");
    }

    #[test]
    fn archive_is_a_consistent_oci_layout() {
        let dir = tempfile::tempdir().unwrap();
        sample_tree(dir.path());
        let cfg = ImageConfig {
            entrypoint: vec!["/bin/hello".into()],
            cmd: vec!["x".into()],
            env: vec!["A=b".into()],
            working_dir: Some("/tmp".into()),
            user: Some("65534".into()),
            exposed_ports: vec!["80".into(), "53/udp".into()],
            labels: [("k".to_string(), "v".to_string())].into(),
            stop_signal: Some("SIGQUIT".into()),
        };
        let mut out = Vec::new();
        let id = write_archive(dir.path(), "docker.io/x/y:1", &cfg, &mut out).unwrap();
        let files = entries(&out);
        let blob = |d: &str| files[&format!("blobs/sha256/{}", &d[7..])].clone();
        assert_eq!(files["oci-layout"], br#"{"imageLayoutVersion":"1.0.0"}"#);

        let index: Value = serde_json::from_slice(&files["index.json"]).unwrap();
        let desc = &index["manifests"][0];
        assert_eq!(desc["digest"], id.manifest_digest);
        assert_eq!(
            desc["annotations"]["io.containerd.image.name"],
            "docker.io/x/y:1"
        );
        assert_eq!(
            desc["annotations"]["org.opencontainers.image.ref.name"],
            "docker.io/x/y:1"
        );

        let manifest_bytes = blob(&id.manifest_digest);
        assert_eq!(sha256(&manifest_bytes), id.manifest_digest);
        let manifest: Value = serde_json::from_slice(&manifest_bytes).unwrap();
        assert_eq!(manifest["mediaType"], MEDIA_MANIFEST);
        assert_eq!(manifest["config"]["digest"], id.config_digest);
        let config: Value = serde_json::from_slice(&blob(&id.config_digest)).unwrap();
        assert_eq!(config["os"], "linux");
        assert_eq!(config["rootfs"]["diff_ids"][0], id.diff_id);
        assert_eq!(config["config"]["Entrypoint"], json!(["/bin/hello"]));
        assert_eq!(config["config"]["Cmd"], json!(["x"]));
        assert_eq!(config["config"]["Env"], json!(["A=b"]));
        assert_eq!(config["config"]["WorkingDir"], "/tmp");
        assert_eq!(config["config"]["User"], "65534");
        assert_eq!(
            config["config"]["ExposedPorts"],
            json!({"53/udp": {}, "80/tcp": {}})
        );
        assert_eq!(config["config"]["Labels"], json!({"k": "v"}));
        assert_eq!(config["config"]["StopSignal"], "SIGQUIT");

        // The layer: gzip whose digest is the manifest's, whose content hashes to diff_id.
        let layer_digest = manifest["layers"][0]["digest"].as_str().unwrap();
        let gz = blob(layer_digest);
        assert_eq!(sha256(&gz), layer_digest);
        assert_eq!(manifest["layers"][0]["size"], gz.len());
        let mut raw = Vec::new();
        flate2::read::GzDecoder::new(&gz[..])
            .read_to_end(&mut raw)
            .unwrap();
        assert_eq!(sha256(&raw), id.diff_id);
        let mut t = tar::Archive::new(&raw[..]);
        let mut seen = Vec::new();
        for e in t.entries().unwrap() {
            let e = e.unwrap();
            let h = e.header();
            assert_eq!(h.uid().unwrap(), 0);
            assert_eq!(h.gid().unwrap(), 0);
            assert_eq!(h.mtime().unwrap(), MTIME);
            let p = e.path().unwrap().to_string_lossy().into_owned();
            let mode = h.mode().unwrap();
            match p.trim_end_matches('/') {
                "bin/hello" => assert_eq!(mode, 0o755),
                "tmp" => assert_eq!(mode, 0o1777),
                "bin/hi" => {
                    assert_eq!(h.entry_type(), tar::EntryType::Symlink);
                    assert_eq!(e.link_name().unwrap().unwrap().to_str(), Some("hello"));
                }
                _ => {}
            }
            seen.push(p.trim_end_matches('/').to_string());
        }
        assert_eq!(seen, ["bin", "bin/hello", "bin/hi", "tmp"]);
    }

    #[test]
    fn empty_config_fields_are_omitted() {
        let v = image_config_json(&ImageConfig::default(), "sha256:0");
        assert_eq!(v["config"], json!({}));
        assert_eq!(v["architecture"], go_arch());
    }
}
