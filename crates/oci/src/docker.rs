//! The docker-archive writer: the format of `docker save` (and of k3s's air-gap image
//! tarballs) — `manifest.json`, `repositories`, the image config as `<hex>.json` and each
//! layer as an uncompressed `<id>/layer.tar` beside its legacy `VERSION` and `json` — for
//! a single-layer image of a directory tree. Deterministic, as [`crate::write_archive`].

use std::io::{self, Read, Write};
use std::path::Path;

use serde_json::json;

use crate::archive::{CREATED, MTIME, build_layer, go_arch, image_config_json, sha256};
use crate::{Error, ImageConfig, normalize_reference};

/// The identity of a written docker-archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DockerArchiveId {
    /// The full reference (`docker.io/library/busybox:1.36`): what containerd names the
    /// image after importing it.
    pub reference: String,
    /// The name in `manifest.json`'s `RepoTags`, in Docker's familiar form
    /// (`busybox:1.36`), as `docker save` writes it.
    pub repo_tag: String,
    /// `sha256:…` of the image config: the image ID.
    pub config_digest: String,
    /// `sha256:…` of the (uncompressed) layer.
    pub diff_id: String,
}

/// Docker's familiar form of a full reference: `docker.io/library/x:t` → `x:t`,
/// `docker.io/u/x:t` → `u/x:t`, other registries unchanged.
fn familiar(full: &str) -> String {
    match full.strip_prefix("docker.io/") {
        Some(rest) => match rest.strip_prefix("library/") {
            Some(name) if !name.contains('/') => name.to_string(),
            _ => rest.to_string(),
        },
        None => full.to_string(),
    }
}

/// Writes `rootfs` as a single-layer image named `reference` (a tag: docker-archives name
/// images by `RepoTags`, never by digest) into `out` in the docker-archive format that
/// `docker save` writes and `docker load` / `ctr images import` read.
pub fn write_docker_archive(
    rootfs: &Path,
    reference: &str,
    config: &ImageConfig,
    out: impl Write,
) -> Result<DockerArchiveId, Error> {
    let full = normalize_reference(reference)?;
    if full.contains('@') {
        return Err(Error::InvalidReference {
            reference: reference.to_string(),
            reason: "a docker-archive names its image by tag, not by digest".into(),
        });
    }
    let repo_tag = familiar(&full);
    // The repository and tag of `repositories`: split at the tag's ':' (after the last '/').
    let (repo, tag) = match repo_tag.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => (r.to_string(), t.to_string()),
        _ => (repo_tag.clone(), "latest".to_string()),
    };

    let layer = build_layer(rootfs)?;
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(&layer.gzipped[..])
        .read_to_end(&mut raw)
        .map_err(Error::Write)?;
    let config_json = serde_json::to_vec(&image_config_json(config, &layer.diff_id))?;
    let config_digest = sha256(&config_json);
    let config_file = format!("{}.json", hex(&config_digest));
    // The legacy (v1) layer ID: with one layer, the layer's own digest serves.
    let layer_id = hex(&layer.diff_id).to_string();
    let layer_file = format!("{layer_id}/layer.tar");
    let legacy_json = serde_json::to_vec(&json!({
        "id": layer_id,
        "created": CREATED,
        "os": "linux",
        "architecture": go_arch(),
    }))?;
    let manifest = serde_json::to_vec(&json!([{
        "Config": config_file,
        "RepoTags": [repo_tag],
        "Layers": [layer_file],
    }]))?;
    let repositories = serde_json::to_vec(&json!({ repo: { tag: layer_id } }))?;

    let mut tar = tar::Builder::new(out);
    tar.mode(tar::HeaderMode::Deterministic);
    (|| -> io::Result<()> {
        put_dir(&mut tar, &format!("{layer_id}/"))?;
        put_file(&mut tar, &format!("{layer_id}/VERSION"), b"1.0")?;
        put_file(&mut tar, &format!("{layer_id}/json"), &legacy_json)?;
        put_file(&mut tar, &layer_file, &raw)?;
        put_file(&mut tar, &config_file, &config_json)?;
        put_file(&mut tar, "manifest.json", &manifest)?;
        put_file(&mut tar, "repositories", &repositories)?;
        tar.into_inner()?.flush()
    })()
    .map_err(Error::Write)?;

    Ok(DockerArchiveId {
        reference: full,
        repo_tag,
        config_digest,
        diff_id: layer.diff_id,
    })
}

fn hex(digest: &str) -> &str {
    digest.trim_start_matches("sha256:")
}

fn put_dir<W: Write>(tar: &mut tar::Builder<W>, path: &str) -> io::Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Directory);
    h.set_mode(0o755);
    h.set_mtime(MTIME);
    h.set_size(0);
    tar.append_data(&mut h, path, io::empty())
}

fn put_file<W: Write>(tar: &mut tar::Builder<W>, path: &str, data: &[u8]) -> io::Result<()> {
    let mut h = tar::Header::new_ustar();
    h.set_entry_type(tar::EntryType::Regular);
    h.set_mode(0o644);
    h.set_mtime(MTIME);
    h.set_size(data.len() as u64);
    tar.append_data(&mut h, path, data)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::Value;

    fn tree(dir: &Path) {
        std::fs::create_dir_all(dir.join("bin")).unwrap();
        std::fs::write(dir.join("bin/hello"), b"#!/bin/sh\necho hi\n").unwrap();
        std::os::unix::fs::symlink("hello", dir.join("bin/hi")).unwrap();
    }

    use crate::archive::tests::entries;

    #[test]
    fn familiar_names() {
        assert_eq!(familiar("docker.io/library/busybox:1"), "busybox:1");
        assert_eq!(familiar("docker.io/user/app:1"), "user/app:1");
        assert_eq!(familiar("docker.io/library/a/b:1"), "library/a/b:1");
        assert_eq!(familiar("ghcr.io/o/r:2"), "ghcr.io/o/r:2");
        assert_eq!(familiar("127.0.0.1:5000/x:3"), "127.0.0.1:5000/x:3");
    }

    #[test]
    fn archive_is_what_docker_save_writes() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path());
        let cfg = ImageConfig {
            cmd: vec!["/bin/hello".into()],
            env: vec![crate::DEFAULT_PATH_ENV.into()],
            ..ImageConfig::default()
        };
        let mut out = Vec::new();
        let id = write_docker_archive(dir.path(), "busybox:air", &cfg, &mut out).unwrap();
        assert_eq!(id.reference, "docker.io/library/busybox:air");
        assert_eq!(id.repo_tag, "busybox:air");

        let files = entries(&out);
        let layer_id = &id.diff_id[7..];
        let config_file = format!("{}.json", &id.config_digest[7..]);
        let names: Vec<&str> = files.keys().map(String::as_str).collect();
        let mut want = vec![
            format!("{layer_id}/"),
            format!("{layer_id}/VERSION"),
            format!("{layer_id}/json"),
            format!("{layer_id}/layer.tar"),
            config_file.clone(),
            "manifest.json".into(),
            "repositories".into(),
        ];
        want.sort();
        assert_eq!(names, want);

        let manifest: Value = serde_json::from_slice(&files["manifest.json"]).unwrap();
        assert_eq!(
            manifest,
            json!([{"Config": config_file, "RepoTags": ["busybox:air"],
                "Layers": [format!("{layer_id}/layer.tar")]}])
        );
        let repos: Value = serde_json::from_slice(&files["repositories"]).unwrap();
        assert_eq!(repos, json!({"busybox": {"air": layer_id}}));
        assert_eq!(files[&format!("{layer_id}/VERSION")], b"1.0");

        // The config names the layer by the digest of the uncompressed layer.tar.
        let config_bytes = &files[&config_file];
        assert_eq!(sha256(config_bytes), id.config_digest);
        let config: Value = serde_json::from_slice(config_bytes).unwrap();
        assert_eq!(config["rootfs"]["diff_ids"], json!([id.diff_id]));
        assert_eq!(config["config"]["Cmd"], json!(["/bin/hello"]));
        let layer = &files[&format!("{layer_id}/layer.tar")];
        assert_eq!(sha256(layer), id.diff_id);
        let inside: Vec<String> = tar::Archive::new(&layer[..])
            .entries()
            .unwrap()
            .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(inside, ["bin", "bin/hello", "bin/hi"]);

        // Deterministic, and the same layer and config as the OCI archive of the tree.
        let mut again = Vec::new();
        assert_eq!(
            write_docker_archive(dir.path(), "busybox:air", &cfg, &mut again).unwrap(),
            id
        );
        assert_eq!(again, out);
        let oci = crate::write_archive(dir.path(), "busybox:air", &cfg, io::sink()).unwrap();
        assert_eq!(oci.diff_id, id.diff_id);
        assert_eq!(oci.config_digest, id.config_digest);
    }

    #[test]
    fn names_keep_registries_and_reject_digests() {
        let dir = tempfile::tempdir().unwrap();
        tree(dir.path());
        let cfg = ImageConfig::default();
        let id =
            write_docker_archive(dir.path(), "127.0.0.1:5000/team/app", &cfg, io::sink()).unwrap();
        assert_eq!(id.repo_tag, "127.0.0.1:5000/team/app:latest");
        let digest = format!("busybox@sha256:{}", "a".repeat(64));
        let err = write_docker_archive(dir.path(), &digest, &cfg, io::sink()).unwrap_err();
        assert!(err.to_string().contains("by tag"), "{err}");
    }
}
