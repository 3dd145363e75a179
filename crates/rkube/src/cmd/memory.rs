//! The process's memory in `/metrics`: its resident set (as upstream's process collector
//! reports it, `process_resident_memory_bytes`) and the allocator's own accounting, which
//! tells the live heap from the pages the allocator keeps for reuse.

use apiserver::metrics::gauge;

/// The metrics, in Prometheus's text format.
pub(crate) fn render() -> String {
    let mut out = String::new();
    if let Some(rss) = resident_bytes() {
        gauge(
            &mut out,
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            rss,
        );
    }
    heap(&mut out);
    out
}

#[cfg(not(feature = "system-alloc"))]
fn heap(out: &mut String) {
    use tikv_jemalloc_ctl::{epoch, stats};
    // The statistics are a snapshot taken at the last epoch.
    if epoch::advance().is_err() {
        return;
    }
    let figures = [
        (
            "rkube_heap_allocated_bytes",
            "Bytes in the allocator's live allocations.",
            stats::allocated::read(),
        ),
        (
            "rkube_heap_resident_bytes",
            "Bytes in resident pages the allocator holds: live allocations, its metadata, and freed pages not yet returned to the system.",
            stats::resident::read(),
        ),
        (
            "rkube_heap_retained_bytes",
            "Bytes of virtual memory the allocator retains without backing pages, for reuse.",
            stats::retained::read(),
        ),
    ];
    for (name, help, value) in figures {
        if let Ok(v) = value {
            gauge(out, name, help, u64::try_from(v).unwrap_or(u64::MAX));
        }
    }
}

/// Built with the system allocator: no heap statistics.
#[cfg(feature = "system-alloc")]
fn heap(_out: &mut String) {}

/// `VmRSS` of `/proc/self/status`, in bytes.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn renders_resident_memory_and_heap() {
        let text = render();
        let value = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("{name} ")))
                .unwrap()
                .parse()
                .unwrap()
        };
        assert!(value("process_resident_memory_bytes") > 1024 * 1024);
        assert!(text.contains("# TYPE process_resident_memory_bytes gauge"));
        // Tests run with the system allocator unless the binary's global allocator is
        // linked in; either way the figures that are there parse.
        for l in text.lines().filter(|l| l.starts_with("rkube_heap_")) {
            let (_, v) = l.rsplit_once(' ').unwrap();
            v.parse::<u64>().unwrap();
        }
    }

    /// The settings `main.rs` gives jemalloc reach it (unless the environment overrides
    /// them).
    #[cfg(not(feature = "system-alloc"))]
    #[test]
    fn jemalloc_reads_the_built_in_settings() {
        if std::env::var_os("MALLOC_CONF").is_some() {
            return;
        }
        use tikv_jemalloc_ctl::{Access, AsName};
        let decay: libc::ssize_t = b"opt.dirty_decay_ms\0".name().read().unwrap();
        assert_eq!(decay, 2000);
    }
}
