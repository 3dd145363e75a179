//! Assembling a root filesystem directory from host files.

use std::os::unix::fs::PermissionsExt;
use std::path::{Component, Path, PathBuf};
use std::process::Command;

use crate::Error;

/// A root filesystem being assembled in a host directory. Paths are the ones inside the
/// image (absolute, e.g. `/etc/passwd`); missing parent directories are created 0755.
#[derive(Debug, Clone)]
pub struct Rootfs {
    root: PathBuf,
}

impl Rootfs {
    /// Uses (and creates when missing) the host directory `root`.
    pub fn new(root: impl Into<PathBuf>) -> Result<Self, Error> {
        let root = root.into();
        std::fs::create_dir_all(&root).map_err(Error::io(&root))?;
        set_mode(&root, 0o755)?;
        Ok(Rootfs { root })
    }

    /// The host directory holding the tree (what [`crate::write_archive`] takes).
    pub fn path(&self) -> &Path {
        &self.root
    }

    /// The host path of `image_path`, which must be absolute and free of `..`.
    pub fn host_path(&self, image_path: &str) -> Result<PathBuf, Error> {
        let p = Path::new(image_path);
        if !p.is_absolute() {
            return Err(Error::InvalidPath(image_path.to_string()));
        }
        let mut out = self.root.clone();
        for c in p.components() {
            match c {
                Component::RootDir | Component::CurDir => {}
                Component::Normal(n) => out.push(n),
                Component::ParentDir | Component::Prefix(_) => {
                    return Err(Error::InvalidPath(image_path.to_string()));
                }
            }
        }
        Ok(out)
    }

    fn parent_dirs(&self, host: &Path) -> Result<(), Error> {
        if let Some(parent) = host.parent()
            && !parent.is_dir()
        {
            self.mkdirs(parent)?;
        }
        Ok(())
    }

    /// Creates the missing directories down to `host` (inside the root), each 0755.
    fn mkdirs(&self, host: &Path) -> Result<(), Error> {
        let rel = host.strip_prefix(&self.root).unwrap_or(host);
        let mut cur = self.root.clone();
        for c in rel.components() {
            cur.push(c);
            if !cur.is_dir() {
                std::fs::create_dir(&cur).map_err(Error::io(&cur))?;
                set_mode(&cur, 0o755)?;
            }
        }
        Ok(())
    }

    /// A directory with `mode` (e.g. `0o1777` for `/tmp`); parents are created 0755.
    pub fn dir(&self, path: &str, mode: u32) -> Result<(), Error> {
        let host = self.host_path(path)?;
        self.mkdirs(&host)?;
        set_mode(&host, mode)
    }

    /// A regular file holding `contents`, with `mode`.
    pub fn file(&self, path: &str, contents: &[u8], mode: u32) -> Result<(), Error> {
        let host = self.host_path(path)?;
        self.parent_dirs(&host)?;
        remove_if_symlink(&host)?;
        std::fs::write(&host, contents).map_err(Error::io(&host))?;
        set_mode(&host, mode)
    }

    /// A symbolic link at `path` pointing to `target` (kept as given, relative or absolute);
    /// replaces what was there.
    pub fn symlink(&self, path: &str, target: &str) -> Result<(), Error> {
        let host = self.host_path(path)?;
        self.parent_dirs(&host)?;
        if host.symlink_metadata().is_ok() {
            std::fs::remove_file(&host).map_err(Error::io(&host))?;
        }
        std::os::unix::fs::symlink(target, &host).map_err(Error::io(&host))
    }

    /// Copies the host file `host` (following symlinks) to `path`, keeping its mode.
    pub fn copy(&self, host: &Path, path: &str) -> Result<(), Error> {
        let dest = self.host_path(path)?;
        self.parent_dirs(&dest)?;
        remove_if_symlink(&dest)?;
        std::fs::copy(host, &dest).map_err(Error::io(host))?;
        let mode = std::fs::metadata(host)
            .map_err(Error::io(host))?
            .permissions()
            .mode();
        set_mode(&dest, mode & 0o7777)
    }

    /// Copies the host binary `host` to the same path in the image, with every shared
    /// library `ldd` says it needs (and the dynamic loader), each at its host path.
    pub fn binary(&self, host: &Path) -> Result<(), Error> {
        let path = host
            .to_str()
            .ok_or_else(|| Error::InvalidPath(host.display().to_string()))?;
        self.binary_as(host, path)
    }

    /// As [`Rootfs::binary`], with the binary itself at `path` in the image.
    pub fn binary_as(&self, host: &Path, path: &str) -> Result<(), Error> {
        self.copy(host, path)?;
        for lib in shared_libraries(host)? {
            let Some(image_path) = lib.to_str() else {
                return Err(Error::InvalidPath(lib.display().to_string()));
            };
            self.copy(&lib, image_path)?;
        }
        Ok(())
    }
}

fn set_mode(path: &Path, mode: u32) -> Result<(), Error> {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(Error::io(path))
}

fn remove_if_symlink(path: &Path) -> Result<(), Error> {
    if path.symlink_metadata().is_ok_and(|m| m.is_symlink()) {
        std::fs::remove_file(path).map_err(Error::io(path))?;
    }
    Ok(())
}

/// The shared libraries (and loader) the host binary needs, from `ldd`. A static binary
/// needs none.
pub fn shared_libraries(binary: &Path) -> Result<Vec<PathBuf>, Error> {
    let ldd_error = |message: String| Error::Ldd {
        binary: binary.to_path_buf(),
        message,
    };
    let out = Command::new("ldd")
        .arg(binary)
        .env("LC_ALL", "C")
        .output()
        .map_err(|e| ldd_error(format!("cannot run ldd: {e}")))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        if stdout.contains("not a dynamic executable")
            || stderr.contains("not a dynamic executable")
        {
            return Ok(Vec::new());
        }
        return Err(ldd_error(format!(
            "{}: {}",
            out.status,
            stderr.trim().lines().last().unwrap_or("")
        )));
    }
    parse_ldd(&stdout).map_err(ldd_error)
}

/// Parses `ldd` output into the paths of the libraries it lists, in order: `name => /path
/// (0x…)` lines give `/path`, a bare `/path (0x…)` line is the dynamic loader; the vDSO and
/// "statically linked" give nothing. A library `ldd` reports as `not found` is an error.
pub fn parse_ldd(output: &str) -> Result<Vec<PathBuf>, String> {
    let mut libs = Vec::new();
    for line in output.lines() {
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let target = match line.split_once("=>") {
            Some((name, rest)) => {
                let rest = rest.trim();
                if rest.starts_with("not found") {
                    return Err(format!("library {} not found", name.trim()));
                }
                rest
            }
            None => line,
        };
        let path = target.split(" (").next().unwrap_or("").trim();
        if path.starts_with('/') {
            let p = PathBuf::from(path);
            if !libs.contains(&p) {
                libs.push(p);
            }
        }
    }
    Ok(libs)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_ldd_of_a_dynamic_binary() {
        let out = "\tlinux-vdso.so.1 (0x00007ffd5a9f2000)\n\
                   \tlibcrypt.so.1 => /lib/x86_64-linux-gnu/libcrypt.so.1 (0x00007f0e1c000000)\n\
                   \tlibpcre2-8.so.0 => /lib/x86_64-linux-gnu/libpcre2-8.so.0 (0x00007f0e1bf66000)\n\
                   \tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007f0e1bd85000)\n\
                   \t/lib64/ld-linux-x86-64.so.2 (0x00007f0e1c2c9000)\n";
        assert_eq!(
            parse_ldd(out).unwrap(),
            [
                "/lib/x86_64-linux-gnu/libcrypt.so.1",
                "/lib/x86_64-linux-gnu/libpcre2-8.so.0",
                "/lib/x86_64-linux-gnu/libc.so.6",
                "/lib64/ld-linux-x86-64.so.2",
            ]
            .map(PathBuf::from)
        );
    }

    #[test]
    fn parses_static_and_odd_lines() {
        assert!(parse_ldd("\tstatically linked\n").unwrap().is_empty());
        assert!(parse_ldd("").unwrap().is_empty());
        // Old glibc printed the vDSO with an empty target; duplicates are listed once.
        let out = "linux-gate.so.1 =>  (0xb7f0f000)\n\
                   libc.so.6 => /lib/libc.so.6 (0xb7d9b000)\n\
                   libc.so.6 => /lib/libc.so.6 (0xb7d9b000)\n";
        assert_eq!(parse_ldd(out).unwrap(), [PathBuf::from("/lib/libc.so.6")]);
    }

    #[test]
    fn missing_library_is_an_error() {
        let err = parse_ldd("\tlibfoo.so.1 => not found\n").unwrap_err();
        assert!(err.contains("libfoo.so.1"), "{err}");
    }

    #[test]
    fn rootfs_builds_files_dirs_links_and_binaries() {
        let dir = tempfile::tempdir().unwrap();
        let r = Rootfs::new(dir.path().join("root")).unwrap();
        r.file("/etc/passwd", b"root:x:0:0::/root:/bin/sh\n", 0o644)
            .unwrap();
        r.dir("/tmp", 0o1777).unwrap();
        r.symlink("/var/log/nginx/access.log", "/dev/stdout")
            .unwrap();
        r.symlink("/var/log/nginx/access.log", "/dev/stderr")
            .unwrap();
        assert!(matches!(
            r.file("../x", b"", 0o644),
            Err(Error::InvalidPath(_))
        ));
        assert!(matches!(
            r.file("/a/../../x", b"", 0o644),
            Err(Error::InvalidPath(_))
        ));
        let root = r.path();
        assert_eq!(
            std::fs::read(root.join("etc/passwd")).unwrap(),
            b"root:x:0:0::/root:/bin/sh\n"
        );
        let mode = |p: &str| {
            std::fs::metadata(root.join(p))
                .unwrap()
                .permissions()
                .mode()
                & 0o7777
        };
        assert_eq!(mode("tmp"), 0o1777);
        assert_eq!(mode("etc"), 0o755);
        assert_eq!(
            std::fs::read_link(root.join("var/log/nginx/access.log")).unwrap(),
            Path::new("/dev/stderr")
        );
        // A dynamic host binary brings its libraries and loader.
        if Path::new("/bin/ls").exists() && Command::new("ldd").arg("--version").output().is_ok() {
            r.binary(Path::new("/bin/ls")).unwrap();
            assert!(root.join("bin/ls").is_file());
            let libs = shared_libraries(Path::new("/bin/ls")).unwrap();
            assert!(!libs.is_empty());
            for lib in libs {
                let inside = root.join(lib.strip_prefix("/").unwrap());
                assert!(inside.is_file(), "{} missing", inside.display());
            }
        }
    }
}
