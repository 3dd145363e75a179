//! `rkube image`: pack a root filesystem directory as an OCI image archive, and import
//! image archives into the node's containerd (its `k8s.io` namespace, where CRI sees them).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use clap::{Args, Subcommand};

/// The node's containerd socket under a data dir (`<data-dir>/agent/containerd/containerd.sock`).
pub fn containerd_socket(data_dir: &Path) -> PathBuf {
    data_dir
        .join("agent")
        .join("containerd")
        .join("containerd.sock")
}

#[derive(Subcommand, Debug)]
pub enum ImageCommand {
    /// Pack a root filesystem directory as an OCI image archive (one layer, deterministic).
    Pack(PackArgs),
    /// Import OCI or docker-archive tars into the node's containerd (namespace k8s.io).
    Import(ImportArgs),
}

#[derive(Args, Debug)]
pub struct PackArgs {
    /// The directory holding the image's root filesystem.
    pub rootfs: PathBuf,
    /// The image reference, e.g. `nginx:1.22` (normalized: `docker.io/library/nginx:1.22`).
    #[arg(long)]
    pub name: String,
    /// ENTRYPOINT: a JSON array (`'["nginx","-g","daemon off;"]'`) or one element per flag.
    #[arg(long, allow_hyphen_values = true)]
    pub entrypoint: Vec<String>,
    /// CMD: a JSON array or one element per flag.
    #[arg(long, allow_hyphen_values = true)]
    pub cmd: Vec<String>,
    /// An environment variable `KEY=VALUE` (repeatable).
    #[arg(long)]
    pub env: Vec<String>,
    /// WORKDIR.
    #[arg(long)]
    pub workdir: Option<String>,
    /// USER (`name`, `uid`, `uid:gid`).
    #[arg(long)]
    pub user: Option<String>,
    /// EXPOSE `PORT[/PROTO]` (repeatable).
    #[arg(long)]
    pub expose: Vec<String>,
    /// LABEL `KEY=VALUE` (repeatable).
    #[arg(long)]
    pub label: Vec<String>,
    /// STOPSIGNAL, e.g. `SIGQUIT`.
    #[arg(long)]
    pub stop_signal: Option<String>,
    /// The archive to write.
    #[arg(short, long)]
    pub output: PathBuf,
}

#[derive(Args, Debug)]
pub struct ImportArgs {
    /// Image archives (OCI or docker-archive tars).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The containerd socket; default `<data-dir>/agent/containerd/containerd.sock`.
    #[arg(long)]
    pub address: Option<PathBuf>,
    /// The rkube data dir whose agent's containerd receives the images.
    #[arg(long, default_value = "/var/lib/rkube/server")]
    pub data_dir: PathBuf,
}

/// A list flag given either as one JSON array or as one element per occurrence.
pub fn json_or_list(values: &[String]) -> anyhow::Result<Vec<String>> {
    match values {
        [one] if one.trim_start().starts_with('[') => serde_json::from_str(one)
            .with_context(|| format!("{one:?} is not a JSON array of strings")),
        _ => Ok(values.to_vec()),
    }
}

/// The image config the pack flags describe.
pub fn pack_config(args: &PackArgs) -> anyhow::Result<oci::ImageConfig> {
    for e in &args.env {
        if !e.contains('=') || e.starts_with('=') {
            bail!("--env {e:?}: expected KEY=VALUE");
        }
    }
    let mut labels = BTreeMap::new();
    for l in &args.label {
        let Some((k, v)) = l.split_once('=') else {
            bail!("--label {l:?}: expected KEY=VALUE");
        };
        labels.insert(k.to_string(), v.to_string());
    }
    for p in &args.expose {
        let (port, proto) = p.split_once('/').unwrap_or((p, "tcp"));
        if port.parse::<u16>().is_err() || !matches!(proto, "tcp" | "udp" | "sctp") {
            bail!("--expose {p:?}: expected PORT[/tcp|udp|sctp]");
        }
    }
    Ok(oci::ImageConfig {
        entrypoint: json_or_list(&args.entrypoint).context("--entrypoint")?,
        cmd: json_or_list(&args.cmd).context("--cmd")?,
        env: args.env.clone(),
        working_dir: args.workdir.clone(),
        user: args.user.clone(),
        exposed_ports: args.expose.clone(),
        labels,
        stop_signal: args.stop_signal.clone(),
    })
}

fn pack(args: &PackArgs) -> anyhow::Result<()> {
    let config = pack_config(args)?;
    if !args.rootfs.is_dir() {
        bail!("{}: not a directory", args.rootfs.display());
    }
    // Write next to the destination, then rename: a reader never sees half an archive.
    let tmp = args
        .output
        .with_extension(format!("tmp.{}", std::process::id()));
    let file =
        std::fs::File::create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let result = oci::write_archive(
        &args.rootfs,
        &args.name,
        &config,
        std::io::BufWriter::new(file),
    );
    let id = match result {
        Ok(id) => id,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e).with_context(|| format!("packing {}", args.rootfs.display()));
        }
    };
    std::fs::rename(&tmp, &args.output)
        .with_context(|| format!("writing {}", args.output.display()))?;
    #[allow(clippy::print_stdout)]
    {
        println!(
            "{} {} manifest {}",
            id.reference, id.config_digest, id.manifest_digest
        );
    }
    Ok(())
}

/// Imports one archive into the containerd listening on `socket`, namespace `k8s.io`
/// (`ctr images import`; OCI archives are named by their `io.containerd.image.name`
/// annotations, docker-archives by their `RepoTags`).
pub async fn import(socket: &Path, file: &Path) -> anyhow::Result<()> {
    if !file.is_file() {
        bail!("{}: no such image archive", file.display());
    }
    if !socket.exists() {
        bail!(
            "containerd socket {} not found: is the rkube agent running?",
            socket.display()
        );
    }
    let out = tokio::process::Command::new("ctr")
        .arg("--address")
        .arg(socket)
        .args(["-n", "k8s.io", "images", "import"])
        .arg(file)
        .output()
        .await
        .map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                anyhow::anyhow!("ctr not found: install Debian package containerd")
            } else {
                anyhow::anyhow!("running ctr: {e}")
            }
        })?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let hint = if stderr.contains("connection refused") || stderr.contains("connect: ") {
            " (is the rkube agent running?)"
        } else {
            ""
        };
        bail!(
            "importing {}: ctr {}: {}{hint}",
            file.display(),
            out.status,
            stderr.trim()
        );
    }
    tracing::debug!(file = %file.display(), output = %String::from_utf8_lossy(&out.stdout).trim(), "imported image archive");
    Ok(())
}

pub async fn run(command: ImageCommand) -> anyhow::Result<()> {
    match command {
        ImageCommand::Pack(args) => pack(&args),
        ImageCommand::Import(args) => {
            let socket = args
                .address
                .clone()
                .unwrap_or_else(|| containerd_socket(&args.data_dir));
            for file in &args.files {
                import(&socket, file).await?;
                #[allow(clippy::print_stdout)]
                {
                    println!("imported {}", file.display());
                }
            }
            Ok(())
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        which: ImageCommand,
    }

    fn pack_args(args: &[&str]) -> PackArgs {
        let mut argv = vec!["x", "pack"];
        argv.extend_from_slice(args);
        match Cli::try_parse_from(argv).unwrap().which {
            ImageCommand::Pack(p) => p,
            ImageCommand::Import(_) => unreachable!(),
        }
    }

    #[test]
    fn list_flags_take_json_or_repeats() {
        let a = pack_args(&[
            "/r",
            "--name",
            "nginx",
            "-o",
            "o.tar",
            "--cmd",
            r#"["nginx","-g","daemon off;"]"#,
            "--entrypoint",
            "/bin/sh",
            "--entrypoint",
            "-c",
            "--env",
            "A=1",
            "--expose",
            "80",
            "--label",
            "k=v=w",
        ]);
        let c = pack_config(&a).unwrap();
        assert_eq!(c.cmd, ["nginx", "-g", "daemon off;"]);
        assert_eq!(c.entrypoint, ["/bin/sh", "-c"]);
        assert_eq!(c.env, ["A=1"]);
        assert_eq!(c.exposed_ports, ["80"]);
        assert_eq!(c.labels["k"], "v=w");
    }

    #[test]
    fn bad_flags_are_errors() {
        for bad in [
            &["--env", "NOEQUALS"][..],
            &["--expose", "http"],
            &["--expose", "80/icmp"],
            &["--label", "x"],
            &["--cmd", "[not json"],
        ] {
            let mut argv = vec!["/r", "--name", "n", "-o", "o"];
            argv.extend_from_slice(bad);
            assert!(pack_config(&pack_args(&argv)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn default_socket_is_under_the_data_dir() {
        assert_eq!(
            containerd_socket(Path::new("/var/lib/rkube/server")),
            Path::new("/var/lib/rkube/server/agent/containerd/containerd.sock")
        );
    }

    #[tokio::test]
    async fn import_explains_missing_inputs() {
        let dir = tempfile::tempdir().unwrap();
        let err = import(&dir.path().join("s.sock"), &dir.path().join("nope.tar"))
            .await
            .unwrap_err();
        assert!(err.to_string().contains("no such image archive"), "{err}");
        let f = dir.path().join("a.tar");
        std::fs::write(&f, b"").unwrap();
        let err = import(&dir.path().join("s.sock"), &f).await.unwrap_err();
        assert!(
            err.to_string().contains("is the rkube agent running?"),
            "{err}"
        );
    }
}
