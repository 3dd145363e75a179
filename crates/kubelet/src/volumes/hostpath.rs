//! hostPath volumes (`pkg/volume/hostpath`): the host path itself, after upstream's
//! `type` check. [`plan`] is the pure decision; [`check`] observes the path and acts.

use std::io::ErrorKind;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// What is at a host path (upstream's `hostutil.FileType`; anything that is not a
/// directory, socket or device counts as a file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileType {
    Directory,
    File,
    Socket,
    CharDevice,
    BlockDevice,
}

/// What [`plan`] decided to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// The path is acceptable as it is.
    Nothing,
    /// `DirectoryOrCreate` of a missing path: create it (0755, with parents).
    MakeDir,
    /// `FileOrCreate` of a missing path: create an empty file (0644).
    MakeFile,
}

/// Upstream's `checkTypeInternal`: `observed` is what is at `path` (`None`: nothing).
pub fn plan(path: &str, kind: Option<&str>, observed: Option<FileType>) -> Result<Action, String> {
    if path.split('/').any(|p| p == "..") {
        return Err(format!("invalid HostPath `{path}`: must not contain '..'"));
    }
    let fail = |what: &str| {
        Err(format!(
            "hostPath type check failed: {path} is not a {what}"
        ))
    };
    let is = |t: FileType| observed == Some(t);
    match kind.unwrap_or_default() {
        "" => Ok(Action::Nothing),
        "DirectoryOrCreate" if observed.is_none() => Ok(Action::MakeDir),
        "DirectoryOrCreate" | "Directory" if is(FileType::Directory) => Ok(Action::Nothing),
        "DirectoryOrCreate" | "Directory" => fail("directory"),
        "FileOrCreate" if observed.is_none() => Ok(Action::MakeFile),
        "FileOrCreate" | "File" if is(FileType::File) => Ok(Action::Nothing),
        "FileOrCreate" | "File" => fail("file"),
        "Socket" if is(FileType::Socket) => Ok(Action::Nothing),
        "Socket" => fail("socket file"),
        "CharDevice" if is(FileType::CharDevice) => Ok(Action::Nothing),
        "CharDevice" => fail("character device"),
        "BlockDevice" if is(FileType::BlockDevice) => Ok(Action::Nothing),
        "BlockDevice" => fail("block device"),
        other => Err(format!("{other} is an invalid volume type")),
    }
}

/// What is at `path`, following symlinks (upstream `os.Stat`); `None` when nothing is.
pub fn file_type(path: &Path) -> Result<Option<FileType>, String> {
    match std::fs::metadata(path) {
        Ok(m) => {
            let t = m.file_type();
            Ok(Some(if t.is_dir() {
                FileType::Directory
            } else if t.is_socket() {
                FileType::Socket
            } else if t.is_char_device() {
                FileType::CharDevice
            } else if t.is_block_device() {
                FileType::BlockDevice
            } else {
                FileType::File
            }))
        }
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!("stat {}: {e}", path.display())),
    }
}

/// Checks (and for the `…OrCreate` types, creates) a hostPath volume's path.
pub fn check(path: &str, kind: Option<&str>) -> Result<(), String> {
    let p = Path::new(path);
    let observed = match kind.unwrap_or_default() {
        "" => None,
        _ => file_type(p)?,
    };
    match plan(path, kind, observed)? {
        Action::Nothing => Ok(()),
        Action::MakeDir => {
            let mut b = std::fs::DirBuilder::new();
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o755);
            match b.recursive(true).create(p) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(format!("mkdir {path}: {e}")),
            }
        }
        Action::MakeFile => {
            // Upstream creates the file only, not its parent directory.
            match std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o644)
                .open(p)
            {
                Ok(_) => Ok(()),
                Err(e) if e.kind() == ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(format!("open {path}: {e}")),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn plans_as_upstream() {
        use FileType::*;
        assert_eq!(plan("/x", None, None), Ok(Action::Nothing));
        assert_eq!(plan("/x", Some(""), Some(File)), Ok(Action::Nothing));
        assert_eq!(
            plan("/x", Some("DirectoryOrCreate"), None),
            Ok(Action::MakeDir)
        );
        assert_eq!(
            plan("/x", Some("DirectoryOrCreate"), Some(File)),
            Err("hostPath type check failed: /x is not a directory".into())
        );
        assert_eq!(
            plan("/x", Some("Directory"), None),
            Err("hostPath type check failed: /x is not a directory".into())
        );
        assert_eq!(plan("/x", Some("FileOrCreate"), None), Ok(Action::MakeFile));
        assert_eq!(
            plan("/x", Some("File"), Some(Directory)),
            Err("hostPath type check failed: /x is not a file".into())
        );
        assert_eq!(
            plan("/x", Some("Socket"), Some(File)),
            Err("hostPath type check failed: /x is not a socket file".into())
        );
        assert_eq!(
            plan("/x", Some("CharDevice"), Some(BlockDevice)),
            Err("hostPath type check failed: /x is not a character device".into())
        );
        assert_eq!(
            plan("/x", Some("BlockDevice"), None),
            Err("hostPath type check failed: /x is not a block device".into())
        );
        assert_eq!(
            plan("/x", Some("Socket"), Some(Socket)),
            Ok(Action::Nothing)
        );
        assert_eq!(
            plan("/x", Some("Weird"), None),
            Err("Weird is an invalid volume type".into())
        );
        assert_eq!(
            plan("/a/../b", None, None),
            Err("invalid HostPath `/a/../b`: must not contain '..'".into())
        );
    }

    #[test]
    fn creates_and_checks_on_disk() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("a/b");
        let ds = d.to_str().unwrap();
        check(ds, Some("DirectoryOrCreate")).unwrap();
        assert_eq!(
            std::fs::metadata(&d).unwrap().permissions().mode() & 0o777,
            0o755
        );
        check(ds, Some("Directory")).unwrap();
        assert_eq!(
            check(ds, Some("File")).unwrap_err(),
            format!("hostPath type check failed: {ds} is not a file")
        );
        let f = d.join("f");
        let fs = f.to_str().unwrap();
        check(fs, Some("FileOrCreate")).unwrap();
        assert_eq!(
            std::fs::metadata(&f).unwrap().permissions().mode() & 0o777,
            0o644
        );
        check(fs, Some("File")).unwrap();
        // The parent of a FileOrCreate path is not created (as upstream).
        let orphan = tmp.path().join("no/such/f");
        assert!(check(orphan.to_str().unwrap(), Some("FileOrCreate")).is_err());
        assert!(check("/dev/null", Some("CharDevice")).is_ok());
        assert!(check("/dev/null", Some("BlockDevice")).is_err());
    }
}
