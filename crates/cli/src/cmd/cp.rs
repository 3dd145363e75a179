//! `kubectl cp SRC DEST` with one side `[[namespace/]pod:]path`: tar over exec, as
//! upstream does. To a pod: `test -d DEST` decides whether the source goes inside it,
//! then our tar archive (names relative to the destination's directory) is piped into
//! `tar -xmf - -C DIR`. From a pod: `tar cf - SRC` runs there (its stderr, e.g. busybox's
//! `tar: removing leading '/' from member names`, goes to our stdout as upstream's) and
//! the archive is unpacked here with upstream's checks (prefix, paths outside the
//! destination, symlinks skipped with a warning).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::cmd::exec::{Notice, Streams, exec_path, finish, pod_and_container};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::stream::{self, ExecEnd, ExecIo};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// `<file-spec-src> <file-spec-dest>`.
    #[arg(num_args = 0..)]
    pub args: Vec<String>,
    /// Container name. If omitted, the kubectl.kubernetes.io/default-container
    /// annotation or the first container is chosen.
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// The copied file/directory's ownership and permissions will not be preserved in
    /// the container.
    #[arg(long)]
    pub no_preserve: bool,
    /// Set number of retries to complete a copy operation from a container (0: none,
    /// negative: infinite).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub retries: i64,
}

/// `[[namespace/]pod:]path`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileSpec {
    pub namespace: Option<String>,
    pub pod: Option<String>,
    pub file: String,
}

const BAD_SPEC: &str = "filespec must match the canonical format: [[namespace/]pod:]file/path";

fn strip_trailing_slash(f: &str) -> String {
    if f.len() > 1 && f.ends_with('/') {
        f[..f.len() - 1].to_string()
    } else {
        f.to_string()
    }
}

/// Upstream's `extractFileSpec`.
pub fn extract_file_spec(arg: &str) -> std::result::Result<FileSpec, String> {
    match arg.find(':') {
        Some(0) => Err(BAD_SPEC.into()),
        None => Ok(FileSpec {
            namespace: None,
            pod: None,
            file: strip_trailing_slash(arg),
        }),
        Some(i) => {
            let (pod, file) = (&arg[..i], &arg[i + 1..]);
            let file = strip_trailing_slash(&file.replace('\\', "/"));
            let pieces: Vec<&str> = pod.split('/').collect();
            match pieces.as_slice() {
                [p] => Ok(FileSpec {
                    namespace: None,
                    pod: Some(p.to_string()),
                    file,
                }),
                [ns, p] => Ok(FileSpec {
                    namespace: Some(ns.to_string()),
                    pod: Some(p.to_string()),
                    file,
                }),
                _ => Err(BAD_SPEC.into()),
            }
        }
    }
}

/// Go's `path.Clean` (slash-separated).
pub fn clean(p: &str) -> String {
    if p.is_empty() {
        return ".".into();
    }
    let rooted = p.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in p.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|l| *l != "..") {
                    parts.pop();
                } else if !rooted {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (rooted, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".into(),
        (false, false) => joined,
    }
}

fn dir(p: &str) -> String {
    let c = clean(p);
    match c.rfind('/') {
        Some(0) => "/".into(),
        Some(i) => c[..i].to_string(),
        None => ".".into(),
    }
}

fn base(p: &str) -> String {
    let c = clean(p);
    if c == "/" {
        return "/".into();
    }
    c.rsplit('/').next().unwrap_or_default().to_string()
}

fn join(a: &str, b: &str) -> String {
    if a.is_empty() {
        return clean(b);
    }
    if b.is_empty() {
        return clean(a);
    }
    clean(&format!("{a}/{b}"))
}

/// Upstream's `stripPathShortcuts`: leading `../` removed, `.`/`..` become empty, and a
/// leading `/` dropped.
pub fn strip_path_shortcuts(p: &str) -> String {
    let mut s = p;
    while let Some(rest) = s.strip_prefix("../") {
        s = rest;
    }
    if s == "." || s == ".." {
        return String::new();
    }
    s.strip_prefix('/').unwrap_or(s).to_string()
}

/// The tar archive of the local `src` with names under `dest_base` (upstream's
/// `makeTar`/`recursiveTar`: empty directories get an entry, symlinks stay links).
pub fn make_tar(src: &Path, dest_base: &str) -> Result<Vec<u8>> {
    let mut b = tar::Builder::new(Vec::new());
    b.follow_symlinks(false);
    add_tree(&mut b, src, dest_base)?;
    Ok(b.into_inner()?)
}

fn add_tree(b: &mut tar::Builder<Vec<u8>>, path: &Path, name: &str) -> Result<()> {
    let meta = std::fs::symlink_metadata(path)?;
    if meta.is_dir() {
        let mut entries: Vec<_> = std::fs::read_dir(path)?.collect::<std::io::Result<_>>()?;
        entries.sort_by_key(|e| e.file_name());
        if entries.is_empty() {
            b.append_path_with_name(path, name)?;
        }
        for e in entries {
            let child = e.file_name().to_string_lossy().into_owned();
            add_tree(b, &e.path(), &join(name, &child))?;
        }
        return Ok(());
    }
    b.append_path_with_name(path, name)?;
    Ok(())
}

/// Where an archive member goes locally, or `None` when it is outside `dest` (upstream's
/// `isRelative` check).
pub fn member_destination(dest: &str, member_rest: &str) -> Option<String> {
    let base = clean(dest);
    let target = join(dest, &member_rest.replace('\\', "/"));
    let inside = if base == "." {
        target != ".." && !target.starts_with("../") && !target.starts_with('/')
    } else if base == "/" {
        true
    } else {
        target == base || target.starts_with(&format!("{base}/"))
    };
    inside.then_some(target)
}

/// Runs `command` in the pod: stdin from `input`, stdout to `out`, stderr to `err`.
async fn exec_collect(
    ctx: &Ctx,
    path: &str,
    input: Option<Vec<u8>>,
    out: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
    err: &mut (dyn FnMut(&[u8]) -> std::io::Result<()> + Send),
) -> Result<ExecEnd> {
    let client = ctx.client().await?;
    let stdin = input.map(|data| {
        let (tx, rx) = mpsc::channel(4);
        tokio::spawn(async move {
            for chunk in data.chunks(32 * 1024) {
                if tx.send(chunk.to_vec()).await.is_err() {
                    return;
                }
            }
        });
        rx
    });
    stream::remote_command(
        client,
        path,
        ExecIo {
            stdin,
            stdout: Some(out),
            stderr: Some(err),
            resize: None,
        },
    )
    .await
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if a.args.len() != 2 {
        return Err(CliError::msg("source and destination are required"));
    }
    let src = extract_file_spec(&a.args[0]).map_err(CliError::msg)?;
    let dest = extract_file_spec(&a.args[1]).map_err(CliError::msg)?;
    if src.pod.is_some() && dest.pod.is_some() {
        return Err(CliError::msg(
            "one of src or dest must be a local file specification",
        ));
    }
    if src.file.is_empty() || dest.file.is_empty() {
        return Err(CliError::msg("filepath can not be empty"));
    }
    if src.pod.is_some() {
        return copy_from_pod(ctx, &a, &src, &dest).await;
    }
    if dest.pod.is_some() {
        return copy_to_pod(ctx, &a, &src, &dest).await;
    }
    Err(CliError::msg(
        "one of src or dest must be a remote file specification",
    ))
}

async fn target(
    ctx: &Ctx,
    a: &Args,
    spec: &FileSpec,
    notice: Notice,
) -> Result<(String, String, String)> {
    let ns = match &spec.namespace {
        Some(ns) => ns.clone(),
        None => ctx.namespace().await?,
    };
    let pod = spec.pod.clone().unwrap_or_default();
    let (pod, container) = pod_and_container(
        ctx,
        &ns,
        &pod,
        a.container.as_deref(),
        notice,
        Duration::from_secs(60),
    )
    .await?;
    Ok((ns, pod, container))
}

async fn copy_to_pod(ctx: &Ctx, a: &Args, src: &FileSpec, dest: &FileSpec) -> Result<()> {
    let local = PathBuf::from(&src.file);
    if std::fs::symlink_metadata(&local).is_err() {
        return Err(CliError::msg(format!(
            "{} doesn't exist in local filesystem",
            src.file
        )));
    }
    // Is the destination a directory? Then the source goes inside it (that exec's
    // streams, notices included, are discarded).
    let (ns, pod, container) = target(ctx, a, dest, Notice::Quiet).await?;
    let test = exec_path(
        &ns,
        &pod,
        &container,
        &["test".into(), "-d".into(), dest.file.clone()],
        Streams::OUTPUT,
    );
    let mut discard = |_: &[u8]| Ok(());
    let mut discard_err = |_: &[u8]| Ok(());
    let is_dir = tokio::time::timeout(
        Duration::from_secs(30),
        exec_collect(ctx, &test, None, &mut discard, &mut discard_err),
    )
    .await
    .map_err(|_| CliError::msg("context deadline exceeded"))?;
    let mut dest_file = dest.file.clone();
    if matches!(is_dir, Ok(ExecEnd::Success)) {
        dest_file = join(&dest_file, &base(&src.file));
    }
    let archive = make_tar(&local, &base(&dest_file))?;
    let mut command: Vec<String> = if a.no_preserve {
        vec![
            "tar".into(),
            "--no-same-permissions".into(),
            "--no-same-owner".into(),
            "-xmf".into(),
            "-".into(),
        ]
    } else {
        vec!["tar".into(), "-xmf".into(), "-".into()]
    };
    let dest_dir = dir(&dest_file);
    if !dest_dir.is_empty() {
        command.push("-C".into());
        command.push(dest_dir);
    }
    // Upstream resolves the pod and container again for this exec.
    let (ns, pod, container) = target(ctx, a, dest, Notice::Stderr).await?;
    let streams = Streams {
        stdin: true,
        ..Streams::OUTPUT
    };
    let path = exec_path(&ns, &pod, &container, &command, streams);
    let mut out = |b: &[u8]| ctx.out().write_all(b);
    let mut err = |b: &[u8]| ctx.err().write_all(b);
    let end = exec_collect(ctx, &path, Some(archive), &mut out, &mut err).await?;
    finish(ctx, end)
}

async fn copy_from_pod(ctx: &Ctx, a: &Args, src: &FileSpec, dest: &FileSpec) -> Result<()> {
    // The tar exec's error stream is our stdout, notices included.
    let (ns, pod, container) = target(ctx, a, src, Notice::Stdout).await?;
    let mut archive: Vec<u8> = Vec::new();
    let mut tries = 0i64;
    loop {
        let command: Vec<String> = if a.retries != 0 {
            let escaped = src.file.replace('\'', r"'\''");
            vec![
                "sh".into(),
                "-c".into(),
                format!("tar cf - '{escaped}' | tail -c+{}", archive.len() + 1),
            ]
        } else {
            vec!["tar".into(), "cf".into(), "-".into(), src.file.clone()]
        };
        let path = exec_path(&ns, &pod, &container, &command, Streams::OUTPUT);
        let mut chunk_sink = |b: &[u8]| {
            archive.extend_from_slice(b);
            Ok(())
        };
        // The remote tar's complaints go to our stdout, as upstream's.
        let mut err = |b: &[u8]| ctx.out().write_all(b);
        let end = exec_collect(ctx, &path, None, &mut chunk_sink, &mut err).await;
        match end {
            Ok(ExecEnd::Success) => break,
            Ok(other) if a.retries == 0 => {
                unpack(ctx, &ns, &pod, src, dest, &archive)?;
                return finish(ctx, other);
            }
            Err(e) if a.retries == 0 => return Err(e),
            _ => {
                if a.retries > 0 && tries >= a.retries {
                    let _ = writeln!(ctx.out(), "Dropping out copy after {tries} retries");
                    break;
                }
                tries += 1;
                let _ = writeln!(
                    ctx.out(),
                    "Resuming copy at {} bytes, retry {tries}/{}",
                    archive.len(),
                    a.retries
                );
            }
        }
    }
    unpack(ctx, &ns, &pod, src, dest, &archive)
}

/// Upstream's `untarAll`.
fn unpack(
    ctx: &Ctx,
    ns: &str,
    pod: &str,
    src: &FileSpec,
    dest: &FileSpec,
    archive: &[u8],
) -> Result<()> {
    let prefix = strip_path_shortcuts(&clean(src.file.trim_start_matches(['/', '\\'])));
    let dest_root = dest.file.clone();
    let mut warned = false;
    let mut reader = tar::Archive::new(archive);
    let entries = reader.entries().map_err(|e| CliError::msg(e.to_string()))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| CliError::msg(e.to_string()))?;
        let name = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let Some(rest) = name.strip_prefix(prefix.as_str()) else {
            return Err(CliError::msg("tar contents corrupted"));
        };
        let Some(target) = member_destination(&dest_root, rest) else {
            let _ = writeln!(
                ctx.err(),
                "warning: file {:?} is outside target destination, skipping",
                join(&dest_root, rest)
            );
            continue;
        };
        let target_path = PathBuf::from(&target);
        if let Some(parent) = target_path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent)?;
        }
        let kind = entry.header().entry_type();
        if kind.is_dir() {
            std::fs::create_dir_all(&target_path)?;
            continue;
        }
        if kind.is_symlink() {
            let link = entry
                .link_name()
                .ok()
                .flatten()
                .map(|l| l.to_string_lossy().into_owned())
                .unwrap_or_default();
            if !warned {
                warned = true;
                let _ = writeln!(
                    ctx.err(),
                    "warning: skipping symlink: {target:?} -> {link:?} (consider using \"kubectl exec -n {ns:?} {pod:?} -- tar cf - {:?} | tar xf -\")",
                    src.file
                );
            } else {
                let _ = writeln!(
                    ctx.err(),
                    "warning: skipping symlink: {target:?} -> {link:?}"
                );
            }
            continue;
        }
        let mut f = std::fs::File::create(&target_path)?;
        std::io::copy(&mut entry, &mut f)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn file_specs() {
        assert_eq!(
            extract_file_spec("ns/pod:/tmp/x/").unwrap(),
            FileSpec {
                namespace: Some("ns".into()),
                pod: Some("pod".into()),
                file: "/tmp/x".into()
            }
        );
        assert_eq!(extract_file_spec("/local").unwrap().pod, None);
        assert_eq!(extract_file_spec(":x").unwrap_err(), BAD_SPEC);
        assert_eq!(extract_file_spec("a/b/c:x").unwrap_err(), BAD_SPEC);
    }

    #[test]
    fn paths() {
        assert_eq!(clean("/tmp//a/../b/"), "/tmp/b");
        assert_eq!(clean("../a"), "../a");
        assert_eq!(dir("/tmp/up.txt"), "/tmp");
        assert_eq!(dir("up.txt"), ".");
        assert_eq!(base("/tmp/tree/"), "tree");
        assert_eq!(strip_path_shortcuts("../../tmp/a"), "tmp/a");
        assert_eq!(strip_path_shortcuts(".."), "");
        assert_eq!(member_destination("/out", "/a/b").unwrap(), "/out/a/b");
        assert_eq!(member_destination("/out", "").unwrap(), "/out");
        assert_eq!(member_destination("/out", "/../../etc/passwd"), None);
    }

    #[test]
    fn tar_names_are_relative_to_the_destination() {
        let d = tempfile::tempdir().unwrap();
        let tree = d.path().join("tree");
        std::fs::create_dir_all(tree.join("empty")).unwrap();
        std::fs::write(tree.join("leaf"), "leaf\n").unwrap();
        std::os::unix::fs::symlink("leaf", tree.join("link")).unwrap();
        let archive = make_tar(&tree, "copy").unwrap();
        let mut names = Vec::new();
        for e in tar::Archive::new(&archive[..]).entries().unwrap() {
            let e = e.unwrap();
            names.push((
                e.path().unwrap().to_string_lossy().into_owned(),
                e.header().entry_type().is_symlink(),
            ));
        }
        assert_eq!(
            names,
            [
                ("copy/empty".into(), false),
                ("copy/leaf".into(), false),
                ("copy/link".into(), true)
            ]
        );
    }
}
