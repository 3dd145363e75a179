//! `fsGroup` ownership of a volume (upstream `volume.SetVolumeOwnership`, Linux): every
//! file and directory gets the group `fsGroup`, group read (and write unless the volume is
//! read-only) and, for directories, group execute and setgid. Symlinks are re-grouped but
//! never chmod-ed. With `fsGroupChangePolicy: OnRootMismatch` nothing is done when the
//! volume's root already has the group and the bits.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use crate::Error;

const RW_MASK: u32 = 0o660;
const RO_MASK: u32 = 0o440;
const EXEC_MASK: u32 = 0o110;
const SETGID: u32 = 0o2000;

/// The mode a file of a volume gets: `mode` with the group bits added.
pub fn owned_mode(mode: u32, is_dir: bool, read_only: bool) -> u32 {
    let mut mask = if read_only { RO_MASK } else { RW_MASK };
    if is_dir {
        mask |= SETGID | EXEC_MASK;
    }
    (mode & 0o7777) | mask
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> Error + '_ {
    move |source| Error::Io {
        path: path.to_path_buf(),
        source,
    }
}

fn root_matches(dir: &Path, gid: u32, read_only: bool) -> Result<bool, Error> {
    let m = std::fs::metadata(dir).map_err(io(dir))?;
    if m.gid() != gid {
        return Ok(false);
    }
    let want = owned_mode(0, true, read_only);
    Ok(m.permissions().mode() & want == want)
}

fn change(path: &Path, gid: u32, read_only: bool) -> Result<(), Error> {
    std::os::unix::fs::lchown(path, None, Some(gid)).map_err(io(path))?;
    let m = std::fs::symlink_metadata(path).map_err(io(path))?;
    if m.file_type().is_symlink() {
        return Ok(());
    }
    let mode = owned_mode(m.permissions().mode(), m.is_dir(), read_only);
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(io(path))?;
    if m.is_dir() {
        for entry in std::fs::read_dir(path).map_err(io(path))? {
            let entry = entry.map_err(io(path))?;
            change(&entry.path(), gid, read_only)?;
        }
    }
    Ok(())
}

/// Applies `fs_group` to everything under `dir` (see the module docs).
pub fn set_volume_ownership(
    dir: &Path,
    fs_group: i64,
    read_only: bool,
    on_root_mismatch: bool,
) -> Result<(), Error> {
    let gid =
        u32::try_from(fs_group).map_err(|_| Error::Other(format!("invalid fsGroup {fs_group}")))?;
    if on_root_mismatch && root_matches(dir, gid, read_only)? {
        return Ok(());
    }
    change(dir, gid, read_only)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn modes() {
        assert_eq!(owned_mode(0o600, false, true), 0o640);
        assert_eq!(owned_mode(0o644, false, false), 0o664);
        assert_eq!(owned_mode(0o755, true, true), 0o2755);
        assert_eq!(owned_mode(0o700, true, false), 0o2770);
    }

    #[test]
    fn applies_group_and_bits_without_following_symlinks() {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path().join("v");
        std::fs::create_dir(&d).unwrap();
        std::fs::write(d.join("f"), "x").unwrap();
        std::fs::set_permissions(d.join("f"), std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::write(tmp.path().join("outside"), "x").unwrap();
        std::fs::set_permissions(
            tmp.path().join("outside"),
            std::fs::Permissions::from_mode(0o600),
        )
        .unwrap();
        std::os::unix::fs::symlink(tmp.path().join("outside"), d.join("l")).unwrap();
        // Our own group: allowed for any user.
        let gid = std::fs::metadata(tmp.path()).unwrap().gid();
        set_volume_ownership(&d, i64::from(gid), true, false).unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode(&d.join("f")), 0o640);
        assert_eq!(mode(&d) & 0o2000, 0o2000);
        assert_eq!(mode(&tmp.path().join("outside")), 0o600);
    }
}
