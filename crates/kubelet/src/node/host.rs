//! What the node reports about the machine it runs on (upstream gets it from cAdvisor's
//! `MachineInfo` and `VersionInfo`): probed once at start by [`HostFacts::probe`], the
//! parsing kept in pure functions.

use std::path::Path;

/// The machine's facts, as the node status needs them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostFacts {
    /// Online CPUs.
    pub cpus: u32,
    /// `MemTotal` in bytes.
    pub memory_bytes: u64,
    /// `SwapTotal` in bytes (`nodeInfo.swap.capacity`).
    pub swap_bytes: u64,
    /// Size of the filesystem holding the kubelet's root directory, in bytes.
    pub ephemeral_storage_bytes: u64,
    /// Huge pages reserved on the machine: (page size in bytes, total bytes).
    pub hugepages: Vec<(u64, u64)>,
    /// `/etc/machine-id`.
    pub machine_id: String,
    /// `/sys/class/dmi/id/product_uuid` (empty when not readable, as cAdvisor).
    pub system_uuid: String,
    /// `/proc/sys/kernel/random/boot_id`.
    pub boot_id: String,
    /// `uname -r`.
    pub kernel_version: String,
    /// `PRETTY_NAME` of `/etc/os-release`.
    pub os_image: String,
}

fn read_trimmed(path: &str) -> String {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

impl HostFacts {
    /// Reads the facts of this machine; `root_dir` is the kubelet's root directory (its
    /// filesystem is the node's ephemeral storage). Unreadable facts are left empty/zero
    /// (the Ready condition then reports the missing capacity).
    pub fn probe(root_dir: &Path) -> HostFacts {
        let cpus = std::fs::read_to_string("/sys/devices/system/cpu/online")
            .ok()
            .and_then(|s| count_cpu_list(&s))
            .or_else(|| {
                std::thread::available_parallelism()
                    .ok()
                    .and_then(|n| u32::try_from(n.get()).ok())
            })
            .unwrap_or(0);
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let ephemeral_storage_bytes = filesystem_size(root_dir).unwrap_or_else(|e| {
            tracing::warn!(dir = %root_dir.display(), error = %e, "cannot size the root filesystem");
            0
        });
        let mut hugepages = Vec::new();
        if let Ok(dir) = std::fs::read_dir("/sys/kernel/mm/hugepages") {
            for entry in dir.flatten() {
                let name = entry.file_name().to_string_lossy().to_string();
                let Some(size) = parse_hugepage_dir(&name) else {
                    continue;
                };
                let count: u64 = std::fs::read_to_string(entry.path().join("nr_hugepages"))
                    .ok()
                    .and_then(|s| s.trim().parse().ok())
                    .unwrap_or(0);
                hugepages.push((size, size.saturating_mul(count)));
            }
        }
        hugepages.sort();
        HostFacts {
            cpus,
            memory_bytes: meminfo_bytes(&meminfo, "MemTotal").unwrap_or(0),
            swap_bytes: meminfo_bytes(&meminfo, "SwapTotal").unwrap_or(0),
            ephemeral_storage_bytes,
            hugepages,
            machine_id: read_trimmed("/etc/machine-id"),
            system_uuid: read_trimmed("/sys/class/dmi/id/product_uuid"),
            boot_id: read_trimmed("/proc/sys/kernel/random/boot_id"),
            kernel_version: read_trimmed("/proc/sys/kernel/osrelease"),
            os_image: os_pretty_name(
                &std::fs::read_to_string("/etc/os-release").unwrap_or_default(),
            )
            .unwrap_or_else(|| "Linux".to_string()),
        }
    }
}

/// The size in bytes of the filesystem holding `path` (`statvfs`: blocks × fragment size).
pub fn filesystem_size(path: &Path) -> std::io::Result<u64> {
    // The root directory may not exist yet: size its nearest existing ancestor.
    let mut p = path;
    while !p.exists() {
        match p.parent() {
            Some(parent) => p = parent,
            None => break,
        }
    }
    let st = rustix::fs::statvfs(p).map_err(std::io::Error::from)?;
    Ok(st.f_blocks.saturating_mul(st.f_frsize))
}

/// Counts the CPUs of a kernel CPU list (`0-3,8,10-11`).
pub fn count_cpu_list(list: &str) -> Option<u32> {
    let list = list.trim();
    if list.is_empty() {
        return None;
    }
    let mut n = 0u32;
    for part in list.split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (u32, u32) = (a.trim().parse().ok()?, b.trim().parse().ok()?);
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<u32>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

/// A `/proc/meminfo` field in bytes (`MemTotal:  24683656 kB`).
pub fn meminfo_bytes(meminfo: &str, field: &str) -> Option<u64> {
    meminfo.lines().find_map(|line| {
        let (name, rest) = line.split_once(':')?;
        if name.trim() != field {
            return None;
        }
        let mut words = rest.split_whitespace();
        let value: u64 = words.next()?.parse().ok()?;
        match words.next() {
            Some("kB") => value.checked_mul(1024),
            None => Some(value),
            Some(_) => None,
        }
    })
}

/// `PRETTY_NAME` of an os-release file, unquoted.
pub fn os_pretty_name(os_release: &str) -> Option<String> {
    os_release.lines().find_map(|line| {
        let value = line.trim().strip_prefix("PRETTY_NAME=")?;
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .or_else(|| value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')))
            .unwrap_or(value);
        Some(value.to_string())
    })
}

/// The page size in bytes of a `/sys/kernel/mm/hugepages` entry (`hugepages-2048kB`).
pub fn parse_hugepage_dir(name: &str) -> Option<u64> {
    let kb: u64 = name
        .strip_prefix("hugepages-")?
        .strip_suffix("kB")?
        .parse()
        .ok()?;
    kb.checked_mul(1024)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(count_cpu_list("0-1\n"), Some(2));
        assert_eq!(count_cpu_list("0"), Some(1));
        assert_eq!(count_cpu_list("0-3,8,10-11"), Some(7));
        assert_eq!(count_cpu_list(""), None);
        assert_eq!(count_cpu_list("3-1"), None);
        assert_eq!(count_cpu_list("x"), None);
    }

    #[test]
    fn meminfo() {
        let text = "MemTotal:       24683656 kB\nMemFree:        10823904 kB\nSwapTotal:             0 kB\nHugePages_Total:       0\n";
        assert_eq!(meminfo_bytes(text, "MemTotal"), Some(24683656 * 1024));
        assert_eq!(meminfo_bytes(text, "SwapTotal"), Some(0));
        assert_eq!(meminfo_bytes(text, "HugePages_Total"), Some(0));
        assert_eq!(meminfo_bytes(text, "Nope"), None);
    }

    #[test]
    fn os_release() {
        let text = "NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n";
        assert_eq!(
            os_pretty_name(text).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            os_pretty_name("PRETTY_NAME=Plain").as_deref(),
            Some("Plain")
        );
        assert_eq!(os_pretty_name("NAME=x"), None);
    }

    #[test]
    fn hugepage_dirs() {
        assert_eq!(parse_hugepage_dir("hugepages-2048kB"), Some(2 << 20));
        assert_eq!(parse_hugepage_dir("hugepages-1048576kB"), Some(1 << 30));
        assert_eq!(parse_hugepage_dir("other"), None);
    }

    #[test]
    fn probes_this_machine() {
        let dir = tempfile::tempdir().unwrap();
        let facts = HostFacts::probe(&dir.path().join("not/yet"));
        assert!(facts.cpus >= 1);
        assert!(facts.memory_bytes > 0);
        assert!(facts.ephemeral_storage_bytes > 0);
        assert!(!facts.kernel_version.is_empty());
        assert!(!facts.os_image.is_empty());
    }
}
