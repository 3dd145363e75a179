//! The offline demo images (`scripts/build-images.sh`) and the pause image, built once per
//! machine into a cache shared by every test process (`<target>/rkube-images`).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use crate::rkube_binary;

/// The demo archives `scripts/build-images.sh` builds: (file, full image reference).
pub const DEMO_IMAGES: &[(&str, &str)] = &[
    ("nginx-latest.tar", "docker.io/library/nginx:latest"),
    ("nginx-1.22.tar", "docker.io/library/nginx:1.22"),
    ("nginx-1.22-r2.tar", "docker.io/library/nginx:1.22-r2"),
    ("busybox-latest.tar", "docker.io/library/busybox:latest"),
    ("busybox-1.36.tar", "docker.io/library/busybox:1.36"),
];

/// A script of the workspace's `scripts/`. Found from the running test's crate directory
/// (cargo and nextest set `CARGO_MANIFEST_DIR` for the test process; every crate sits at
/// `crates/<name>`), not from the path this crate was compiled at: the build directory is
/// shared across clones, and a clone that is gone may have compiled it last.
pub fn script(name: &str) -> PathBuf {
    let crate_dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    crate_dir.join("../../scripts").join(name)
}

/// The shared cache directory: `<target>/rkube-images` (beside the profile directories of
/// the test binaries), created when missing.
pub fn cache_dir() -> PathBuf {
    let bin = rkube_binary();
    let dir = bin
        .parent()
        .and_then(Path::parent)
        .map(|target| target.join("rkube-images"))
        .unwrap_or_else(|| std::env::temp_dir().join("rkube-images"));
    std::fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    dir
}

/// The directory holding the demo archives (see [`DEMO_IMAGES`]) and `images.tsv`, built
/// on first use by `scripts/build-images.sh` (which locks the directory, so parallel test
/// processes wait for one build, and skips the build when its stamp matches).
pub fn demo_images() -> PathBuf {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = cache_dir().join("demo");
        let script = script("build-images.sh");
        let out = Command::new("bash")
            .arg(&script)
            .arg(&dir)
            .env("RKUBE", rkube_binary())
            .output()
            .unwrap_or_else(|e| panic!("running {}: {e}", script.display()));
        assert!(
            out.status.success(),
            "{} {} failed: {}{}",
            script.display(),
            dir.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        dir
    })
    .clone()
}

/// One demo archive by file name (e.g. `nginx-latest.tar`).
pub fn demo_archive(file: &str) -> PathBuf {
    let p = demo_images().join(file);
    assert!(p.is_file(), "no demo archive {}", p.display());
    p
}

/// The pause image archive ([`oci::PAUSE_IMAGE`], built from this workspace's
/// `rkube-pause`), written once per test process (atomically) into the cache.
pub fn pause_archive() -> PathBuf {
    static PATH: OnceLock<PathBuf> = OnceLock::new();
    PATH.get_or_init(|| {
        let pause = rkube_binary().with_file_name("rkube-pause");
        assert!(pause.is_file(), "{} missing", pause.display());
        let dir = cache_dir();
        let path = dir.join("pause.tar");
        let tmp = dir.join(format!("pause.tar.{}", std::process::id()));
        let file = std::fs::File::create(&tmp)
            .unwrap_or_else(|e| panic!("creating {}: {e}", tmp.display()));
        oci::pause_image(&pause, std::io::BufWriter::new(file))
            .unwrap_or_else(|e| panic!("building the pause image: {e}"));
        std::fs::rename(&tmp, &path).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
        path
    })
    .clone()
}
