//! Upstream's `AtomicWriter` (`pkg/volume/util/atomic_writer.go`): the content of a
//! configMap/secret/downwardAPI/projected volume is written into a fresh hidden
//! timestamped directory (`..2006_01_02_15_04_05.<random>`), then the `..data` symlink is
//! swapped to it with one `rename` (atomic), and each top-level user-visible name is a
//! symlink `name -> ..data/name`. Names that left the payload are removed afterwards, then
//! the previous timestamped directory. Nothing is written when the content did not change.

use std::collections::{BTreeMap, BTreeSet};
use std::io::ErrorKind;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::Error;

/// One file of a volume's payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileProjection {
    pub data: Vec<u8>,
    /// Permission bits (`defaultMode` or the item's `mode`).
    pub mode: u32,
}

/// A volume's content: relative path → file.
pub type Payload = BTreeMap<String, FileProjection>;

/// The symlink to the current timestamped directory.
pub const DATA_DIR_NAME: &str = "..data";
const NEW_DATA_DIR_NAME: &str = "..data_tmp";
const MAX_FILE_NAME_LENGTH: usize = 255;
const MAX_PATH_LENGTH: usize = 4096;

/// Upstream's `validatePath`: relative, no `..` element, not starting with `..`, names at
/// most 255 bytes, the whole at most 4096.
pub fn validate_path(target: &str) -> Result<(), String> {
    if target.is_empty() {
        return Err("invalid path: must not be empty: \"\"".into());
    }
    if target.starts_with('/') {
        return Err(format!("invalid path: must be relative path: {target}"));
    }
    if target.len() > MAX_PATH_LENGTH {
        return Err(format!(
            "invalid path: must be less than or equal to {MAX_PATH_LENGTH} characters"
        ));
    }
    let items: Vec<&str> = target.split('/').collect();
    for item in &items {
        if *item == ".." {
            return Err(format!("invalid path: must not contain '..': {target}"));
        }
        if item.len() > MAX_FILE_NAME_LENGTH {
            return Err(format!(
                "invalid path: filenames must be less than or equal to {MAX_FILE_NAME_LENGTH} characters"
            ));
        }
    }
    if items[0].starts_with("..") && items[0].len() > 2 {
        return Err(format!("invalid path: must not start with '..': {target}"));
    }
    Ok(())
}

/// Go's `path.Clean` of a relative path without `..` elements.
pub fn clean_path(p: &str) -> String {
    let parts: Vec<&str> = p
        .split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .collect();
    if parts.is_empty() {
        ".".into()
    } else {
        parts.join("/")
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Every path below `dir` (files and directories, symlinks not followed), relative to it.
fn walk(dir: &Path) -> Result<BTreeSet<String>, Error> {
    fn rec(root: &Path, dir: &Path, out: &mut BTreeSet<String>) -> Result<(), Error> {
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let entry = entry.map_err(io(dir))?;
            let path = entry.path();
            if let Ok(rel) = path.strip_prefix(root) {
                out.insert(rel.to_string_lossy().into_owned());
            }
            if entry.file_type().map_err(io(&path))?.is_dir() {
                rec(root, &path, out)?;
            }
        }
        Ok(())
    }
    let mut out = BTreeSet::new();
    match rec(dir, dir, &mut out) {
        Err(Error::Io { source, .. }) if source.kind() == ErrorKind::NotFound => Ok(out),
        r => r.map(|()| out),
    }
}

/// The user-visible paths of the old version that the new payload no longer has (parents
/// of new files are kept).
fn paths_to_remove(old: &BTreeSet<String>, payload: &Payload) -> BTreeSet<String> {
    let mut new = BTreeSet::new();
    for file in payload.keys() {
        let mut p = file.as_str();
        loop {
            new.insert(p.to_string());
            match p.rfind('/') {
                Some(i) => p = &p[..i],
                None => break,
            }
        }
    }
    old.difference(&new).cloned().collect()
}

fn should_write(payload: &Payload, old_ts: &Path) -> Result<bool, Error> {
    for (path, file) in payload {
        let full = old_ts.join(path);
        match std::fs::symlink_metadata(&full) {
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(true),
            _ => {}
        }
        let on_disk = std::fs::read(&full).map_err(io(&full))?;
        if on_disk != file.data {
            return Ok(true);
        }
    }
    Ok(false)
}

static COUNTER: AtomicU64 = AtomicU64::new(0);

fn random_suffix(now: jiff::Timestamp) -> u32 {
    // Unique enough for a temp-dir name (creation retries on a clash): splitmix64 of the
    // time, the process and a counter.
    let mut x = (now.as_nanosecond() as u64)
        ^ (u64::from(std::process::id()) << 32)
        ^ COUNTER
            .fetch_add(1, Ordering::Relaxed)
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    (x ^ (x >> 31)) as u32
}

/// The name of a new timestamped directory: `..2006_01_02_15_04_05.<random>` (UTC).
pub fn timestamp_dir_prefix(now: jiff::Timestamp) -> String {
    now.strftime("..%Y_%m_%d_%H_%M_%S.").to_string()
}

fn new_timestamp_dir(target: &Path, now: jiff::Timestamp) -> Result<PathBuf, Error> {
    let prefix = timestamp_dir_prefix(now);
    let mut last = None;
    for _ in 0..100 {
        let dir = target.join(format!("{prefix}{}", random_suffix(now)));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                // 0755 whatever the umask, so group and others can traverse it.
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                    .map_err(io(&dir))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => last = Some(e),
            Err(e) => return Err(io(&dir)(e)),
        }
    }
    Err(io(target)(last.unwrap_or_else(|| {
        std::io::Error::other("cannot create a timestamped directory")
    })))
}

fn write_payload_to_dir(payload: &Payload, dir: &Path) -> Result<(), Error> {
    for (path, file) in payload {
        let full = dir.join(path);
        if let Some(parent) = full.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        std::fs::write(&full, &file.data).map_err(io(&full))?;
        // The mode exactly, whatever the umask.
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(file.mode))
            .map_err(io(&full))?;
    }
    Ok(())
}

fn create_user_visible_files(target: &Path, payload: &Payload) -> Result<(), Error> {
    for path in payload.keys() {
        let top = path.split('/').next().unwrap_or(path);
        let visible = target.join(top);
        match std::fs::read_link(&visible) {
            Err(e) if e.kind() == ErrorKind::NotFound => {
                let to = Path::new(DATA_DIR_NAME).join(top);
                std::os::unix::fs::symlink(&to, &visible).map_err(io(&visible))?;
            }
            _ => {}
        }
    }
    Ok(())
}

/// Writes `payload` into `target_dir` (which must exist) as upstream's
/// `AtomicWriter.Write`; `now` names the timestamped directory. Returns whether anything
/// was written (`false`: the content on disk was already this payload).
pub fn write(target_dir: &Path, payload: &Payload, now: jiff::Timestamp) -> Result<bool, Error> {
    // (1) validate and clean the paths.
    let mut clean = Payload::new();
    for (path, file) in payload {
        validate_path(path).map_err(Error::Other)?;
        clean.insert(clean_path(path), file.clone());
    }
    std::fs::metadata(target_dir).map_err(io(target_dir))?;

    // (2) the current timestamped directory.
    let data_dir = target_dir.join(DATA_DIR_NAME);
    let old_ts = match std::fs::read_link(&data_dir) {
        Ok(p) => Some(p),
        Err(e) if e.kind() == ErrorKind::NotFound => None,
        Err(e) => return Err(io(&data_dir)(e)),
    };

    // (3)-(4) what to remove, and whether anything changed.
    let mut remove = BTreeSet::new();
    if let Some(old) = &old_ts {
        let old_path = target_dir.join(old);
        remove = paths_to_remove(&walk(&old_path)?, &clean);
        if !should_write(&clean, &old_path)? && remove.is_empty() {
            tracing::trace!(dir = %target_dir.display(), "no update required");
            return Ok(false);
        }
    }

    // (5)-(6) the new timestamped directory with the payload.
    let ts_dir = new_timestamp_dir(target_dir, now)?;
    if let Err(e) = write_payload_to_dir(&clean, &ts_dir) {
        let _ = std::fs::remove_dir_all(&ts_dir);
        return Err(e);
    }
    let ts_name = ts_dir
        .file_name()
        .map(PathBuf::from)
        .unwrap_or_else(|| ts_dir.clone());

    // (7) user-visible symlinks for new top-level names.
    create_user_visible_files(target_dir, &clean)?;

    // (8)-(9) `..data_tmp` -> new dir, renamed over `..data`.
    let new_data_dir = target_dir.join(NEW_DATA_DIR_NAME);
    let _ = std::fs::remove_file(&new_data_dir);
    if let Err(e) = std::os::unix::fs::symlink(&ts_name, &new_data_dir) {
        let _ = std::fs::remove_dir_all(&ts_dir);
        return Err(io(&new_data_dir)(e));
    }
    if let Err(e) = std::fs::rename(&new_data_dir, &data_dir) {
        let _ = std::fs::remove_file(&new_data_dir);
        let _ = std::fs::remove_dir_all(&ts_dir);
        return Err(io(&data_dir)(e));
    }

    // (10) user-visible names that left the payload (only top-level symlinks).
    for p in remove.iter().filter(|p| !p.contains('/')) {
        let full = target_dir.join(p);
        match std::fs::remove_file(&full) {
            Ok(()) => {}
            Err(e) if e.kind() == ErrorKind::NotFound => {}
            Err(e) => return Err(io(&full)(e)),
        }
    }

    // (11) the previous timestamped directory.
    if let Some(old) = old_ts {
        let old_path = target_dir.join(old);
        if old_path != ts_dir {
            match std::fs::remove_dir_all(&old_path) {
                Ok(()) => {}
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io(&old_path)(e)),
            }
        }
    }
    Ok(true)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn file(s: &str, mode: u32) -> FileProjection {
        FileProjection {
            data: s.as_bytes().to_vec(),
            mode,
        }
    }

    fn payload(entries: &[(&str, &str)]) -> Payload {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), file(v, 0o644)))
            .collect()
    }

    fn ts(s: &str) -> jiff::Timestamp {
        s.parse().unwrap()
    }

    fn names(dir: &Path) -> BTreeSet<String> {
        std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn paths_are_validated_as_upstream() {
        assert!(validate_path("a/b").is_ok());
        assert!(validate_path("..a").is_err());
        assert!(validate_path("..").is_err());
        assert!(validate_path("a/../b").is_err());
        assert_eq!(
            validate_path("/abs").unwrap_err(),
            "invalid path: must be relative path: /abs"
        );
        assert_eq!(
            validate_path("").unwrap_err(),
            "invalid path: must not be empty: \"\""
        );
        assert!(validate_path(&"x".repeat(256)).is_err());
        assert_eq!(clean_path("a//./b/"), "a/b");
    }

    #[test]
    fn timestamp_dir_name_format() {
        assert_eq!(
            timestamp_dir_prefix(ts("2016-02-01T15:04:05Z")),
            "..2016_02_01_15_04_05."
        );
    }

    #[test]
    fn write_update_and_remove() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let t0 = ts("2024-01-02T03:04:05Z");

        let p1 = payload(&[("a", "1"), ("sub/b", "2"), ("c", "3")]);
        assert!(write(dir, &p1, t0).unwrap());
        let data = std::fs::read_link(dir.join("..data")).unwrap();
        let data1 = data.to_string_lossy().into_owned();
        assert!(data1.starts_with("..2024_01_02_03_04_05."), "{data1}");
        assert_eq!(
            std::fs::read_link(dir.join("a")).unwrap(),
            Path::new("..data/a")
        );
        assert_eq!(
            std::fs::read_link(dir.join("sub")).unwrap(),
            Path::new("..data/sub")
        );
        assert_eq!(std::fs::read_to_string(dir.join("sub/b")).unwrap(), "2");
        let mode = std::fs::metadata(dir.join(&data1))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);

        // Same content: nothing written, same data dir.
        assert!(!write(dir, &p1, t0).unwrap());
        assert_eq!(
            std::fs::read_link(dir.join("..data")).unwrap(),
            Path::new(&data1)
        );

        // Changed content and a removed name: new data dir, old one gone, `c` gone.
        let p2 = payload(&[("a", "10"), ("sub/b", "2")]);
        assert!(write(dir, &p2, t0).unwrap());
        let data2 = std::fs::read_link(dir.join("..data")).unwrap();
        assert_ne!(data2, Path::new(&data1));
        assert_eq!(std::fs::read_to_string(dir.join("a")).unwrap(), "10");
        assert!(!dir.join(&data1).exists());
        assert!(std::fs::symlink_metadata(dir.join("c")).is_err());
        let mut expect = BTreeSet::from(["..data".to_string(), "a".into(), "sub".into()]);
        expect.insert(data2.to_string_lossy().into_owned());
        assert_eq!(names(dir), expect);

        // Removing everything leaves only `..data` and its directory.
        assert!(write(dir, &Payload::new(), t0).unwrap());
        assert_eq!(names(dir).len(), 2);
    }

    #[test]
    fn modes_are_exact() {
        let tmp = tempfile::tempdir().unwrap();
        let mut p = Payload::new();
        p.insert("x".into(), file("x", 0o400));
        p.insert("y".into(), file("y", 0o777));
        write(tmp.path(), &p, ts("2024-01-01T00:00:00Z")).unwrap();
        let m = |n: &str| {
            std::fs::metadata(tmp.path().join(n))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(m("x"), 0o400);
        assert_eq!(m("y"), 0o777);
    }

    #[test]
    fn invalid_payload_writes_nothing() {
        let tmp = tempfile::tempdir().unwrap();
        let p = payload(&[("../escape", "x")]);
        assert!(write(tmp.path(), &p, ts("2024-01-01T00:00:00Z")).is_err());
        assert!(names(tmp.path()).is_empty());
    }
}
