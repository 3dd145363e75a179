//! tmpfs mounts for memory-backed volumes (`emptyDir.medium: Memory`, secret and projected
//! volumes). [`SystemMounter`] runs `mount`/`umount` and reads `/proc/self/mountinfo`;
//! [`FakeMounter`] records the calls and keeps its own mount table.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use async_trait::async_trait;

use crate::Error;

/// Mounts and unmounts tmpfs file systems and lists the mount table.
#[async_trait]
pub trait Mounter: Send + Sync {
    /// Mounts a new tmpfs on `dir` (`mount -t tmpfs [-o size=<bytes>] tmpfs <dir>`).
    async fn mount_tmpfs(&self, dir: &Path, size_bytes: Option<i64>) -> Result<(), Error>;
    /// Unmounts whatever is mounted on `dir`.
    async fn unmount(&self, dir: &Path) -> Result<(), Error>;
    /// The mount points at or below `dir`.
    async fn mounts_under(&self, dir: &Path) -> Result<Vec<PathBuf>, Error>;
}

/// The mount options upstream's emptyDir gives a tmpfs.
pub fn tmpfs_options(size_bytes: Option<i64>) -> Vec<String> {
    match size_bytes {
        Some(n) if n > 0 => vec![format!("size={n}")],
        _ => Vec::new(),
    }
}

/// The mount points listed in a `/proc/<pid>/mountinfo` text (field 5, with the kernel's
/// octal escapes of space, tab, newline and backslash undone).
pub fn parse_mountinfo(text: &str) -> Vec<PathBuf> {
    text.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .map(|p| PathBuf::from(unescape_octal(p)))
        .collect()
}

fn unescape_octal(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\'
            && i + 3 < b.len()
            && b[i + 1..i + 4].iter().all(|c| (b'0'..=b'7').contains(c))
        {
            let v = (b[i + 1] - b'0') as u32 * 64
                + (b[i + 2] - b'0') as u32 * 8
                + (b[i + 3] - b'0') as u32;
            out.push(v as u8);
            i += 4;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `dir`'s mount points among `all`, deepest first (the order to unmount them in).
pub fn select_under(all: &[PathBuf], dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = all.iter().filter(|p| p.starts_with(dir)).cloned().collect();
    v.sort();
    v.dedup();
    v.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    v
}

/// The real [`Mounter`]: the `mount` and `umount` commands (needs root).
#[derive(Debug, Clone, Default)]
pub struct SystemMounter;

async fn run(cmd: &str, args: &[String]) -> Result<(), Error> {
    let out = tokio::process::Command::new(cmd)
        .args(args)
        .output()
        .await
        .map_err(|e| Error::Other(format!("{cmd}: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Other(format!(
            "{cmd} {} failed ({}): {}",
            args.join(" "),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

#[async_trait]
impl Mounter for SystemMounter {
    async fn mount_tmpfs(&self, dir: &Path, size_bytes: Option<i64>) -> Result<(), Error> {
        let mut args = vec!["-t".to_string(), "tmpfs".to_string()];
        let opts = tmpfs_options(size_bytes);
        if !opts.is_empty() {
            args.push("-o".into());
            args.push(opts.join(","));
        }
        args.push("tmpfs".into());
        args.push(dir.display().to_string());
        run("mount", &args).await
    }

    async fn unmount(&self, dir: &Path) -> Result<(), Error> {
        run("umount", &[dir.display().to_string()]).await
    }

    async fn mounts_under(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        let path = Path::new("/proc/self/mountinfo");
        let text = tokio::fs::read_to_string(path)
            .await
            .map_err(|source| Error::Io {
                path: path.into(),
                source,
            })?;
        let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
        Ok(select_under(&parse_mountinfo(&text), &dir))
    }
}

/// What a [`FakeMounter`] was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MountCall {
    Tmpfs {
        dir: PathBuf,
        size_bytes: Option<i64>,
    },
    Unmount {
        dir: PathBuf,
    },
}

/// A [`Mounter`] that mounts nothing: it records the calls and keeps a mount table.
#[derive(Debug, Default)]
pub struct FakeMounter {
    calls: Mutex<Vec<MountCall>>,
    mounted: Mutex<BTreeSet<PathBuf>>,
}

impl FakeMounter {
    pub fn new() -> Self {
        Self::default()
    }

    /// Every call so far, oldest first.
    pub fn calls(&self) -> Vec<MountCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// What is mounted now.
    pub fn mounted(&self) -> Vec<PathBuf> {
        self.mounted
            .lock()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }
}

#[async_trait]
impl Mounter for FakeMounter {
    async fn mount_tmpfs(&self, dir: &Path, size_bytes: Option<i64>) -> Result<(), Error> {
        if let Ok(mut c) = self.calls.lock() {
            c.push(MountCall::Tmpfs {
                dir: dir.into(),
                size_bytes,
            });
        }
        if let Ok(mut m) = self.mounted.lock() {
            m.insert(dir.into());
        }
        Ok(())
    }

    async fn unmount(&self, dir: &Path) -> Result<(), Error> {
        if let Ok(mut c) = self.calls.lock() {
            c.push(MountCall::Unmount { dir: dir.into() });
        }
        let removed = self
            .mounted
            .lock()
            .map(|mut m| m.remove(dir))
            .unwrap_or(false);
        if removed {
            Ok(())
        } else {
            Err(Error::Other(format!(
                "umount: {}: not mounted",
                dir.display()
            )))
        }
    }

    async fn mounts_under(&self, dir: &Path) -> Result<Vec<PathBuf>, Error> {
        Ok(select_under(&self.mounted(), dir))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn mountinfo_is_parsed_with_escapes() {
        let text = "22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n\
                    90 22 0:50 / /var/lib/k\\040x/v rw - tmpfs tmpfs rw\n";
        assert_eq!(
            parse_mountinfo(text),
            vec![PathBuf::from("/"), PathBuf::from("/var/lib/k x/v")]
        );
    }

    #[test]
    fn mounts_under_are_deepest_first() {
        let all = vec![
            PathBuf::from("/"),
            PathBuf::from("/p/a"),
            PathBuf::from("/p/a/b"),
            PathBuf::from("/pp"),
            PathBuf::from("/p"),
        ];
        assert_eq!(
            select_under(&all, Path::new("/p")),
            vec![
                PathBuf::from("/p/a/b"),
                PathBuf::from("/p/a"),
                PathBuf::from("/p")
            ]
        );
    }

    #[test]
    fn tmpfs_size_option() {
        assert_eq!(tmpfs_options(Some(1 << 20)), vec!["size=1048576"]);
        assert!(tmpfs_options(None).is_empty());
        assert!(tmpfs_options(Some(0)).is_empty());
    }
}
