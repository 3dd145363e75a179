//! `kubectl exec POD|TYPE/NAME [-c C] [-i] [-t] -- COMMAND…`: a WebSocket
//! `pods/<name>/exec` session ([`crate::stream::remote_command`]) with stdin, stdout and
//! stderr, a raw terminal and its size for `-t`, and the remote exit code as ours.

use std::io::{Read, Write};
use std::time::Duration;

use tokio::sync::mpsc;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::pods;
use crate::stream::{self, ExecEnd, ExecIo};

#[derive(clap::Args, Debug)]
pub struct Args {
    /// POD or TYPE/NAME (anything else before `--` is refused as kubectl does).
    #[arg(num_args = 0..)]
    pub args: Vec<String>,
    /// The command and its arguments, after `--`.
    #[arg(last = true, num_args = 0..)]
    pub command: Vec<String>,
    /// Container name. If omitted, the kubectl.kubernetes.io/default-container
    /// annotation or the first container is chosen.
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Pass stdin to the container.
    #[arg(short = 'i', long)]
    pub stdin: bool,
    /// Stdin is a TTY.
    #[arg(short = 't', long)]
    pub tty: bool,
    /// Only print output from the remote session.
    #[arg(short = 'q', long)]
    pub quiet: bool,
    /// The length of time to wait until at least one pod is running.
    #[arg(long, default_value = "1m0s")]
    pub pod_running_timeout: String,
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::usage("kubectl exec", msg)
}

/// Which streams an exec session has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Streams {
    pub stdin: bool,
    pub stdout: bool,
    pub stderr: bool,
    pub tty: bool,
}

impl Streams {
    /// Output and errors, no input, no terminal (what `cp` and scripts use).
    pub const OUTPUT: Streams = Streams {
        stdin: false,
        stdout: true,
        stderr: true,
        tty: false,
    };
}

/// The `pods/<name>/exec` path with upstream's `PodExecOptions` parameters.
pub fn exec_path(ns: &str, pod: &str, container: &str, command: &[String], s: Streams) -> String {
    let mut pairs: Vec<(&str, &str)> = command.iter().map(|c| ("command", c.as_str())).collect();
    pairs.push(("container", container));
    for (name, on) in [
        ("stderr", s.stderr),
        ("stdin", s.stdin),
        ("stdout", s.stdout),
        ("tty", s.tty),
    ] {
        if on {
            pairs.push((name, "true"));
        }
    }
    format!(
        "/api/v1/namespaces/{ns}/pods/{pod}/exec?{}",
        stream::query(&pairs)
    )
}

/// Where the `Defaulted container` notice goes (the exec's error stream, which `cp`
/// points at stdout or discards).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Notice {
    Stderr,
    Stdout,
    Quiet,
}

/// The pod (`POD` or `TYPE/NAME`) and the container to run in, as kubectl's exec and
/// cp choose them.
pub async fn pod_and_container(
    ctx: &Ctx,
    ns: &str,
    arg: &str,
    container: Option<&str>,
    notice_to: Notice,
    timeout: Duration,
) -> Result<(String, String)> {
    let (pod, _) = pods::pod_for_arg(ctx, ns, arg, timeout, pods::most_active).await?;
    let phase = pod["status"]["phase"].as_str().unwrap_or_default();
    if phase == "Succeeded" || phase == "Failed" {
        return Err(CliError::msg(format!(
            "cannot exec into a container in a completed pod; current phase is {phase}"
        )));
    }
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    // kubectl 1.33 leaves a named container to the server to check.
    let container = match container.filter(|c| !c.is_empty()) {
        Some(c) => c.to_string(),
        None => {
            let (c, notice) = pods::default_container(&pod, None)?;
            match (notice, notice_to) {
                (Some(n), Notice::Stderr) => {
                    let _ = writeln!(ctx.err(), "{n}");
                }
                (Some(n), Notice::Stdout) => {
                    let _ = writeln!(ctx.out(), "{n}");
                }
                _ => {}
            }
            c
        }
    };
    Ok((name, container))
}

/// The end of a remote command as kubectl reports it.
pub fn finish(ctx: &Ctx, end: ExecEnd) -> Result<()> {
    match end {
        ExecEnd::Success => Ok(()),
        ExecEnd::ExitCode(code) => {
            let _ = writeln!(ctx.err(), "command terminated with exit code {code}");
            Err(CliError::Exit(code))
        }
        ExecEnd::Failure(m) => Err(CliError::Msg(m)),
    }
}

/// Reads this process's stdin on its own thread (a blocking read cannot be cancelled; the
/// thread ends with the process) into a channel whose end is stdin's end.
pub fn stdin_channel() -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel(8);
    std::thread::spawn(move || {
        let mut input = std::io::stdin();
        let mut buf = vec![0u8; 32 * 1024];
        loop {
            match input.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => {
                    if tx.blocking_send(buf[..n].to_vec()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// The terminal in raw mode until dropped.
struct RawTerminal {
    saved: rustix::termios::Termios,
}

impl RawTerminal {
    fn enter() -> Option<RawTerminal> {
        let fd = rustix::stdio::stdin();
        let saved = rustix::termios::tcgetattr(fd).ok()?;
        let mut raw = saved.clone();
        raw.make_raw();
        rustix::termios::tcsetattr(fd, rustix::termios::OptionalActions::Now, &raw).ok()?;
        Some(RawTerminal { saved })
    }
}

impl Drop for RawTerminal {
    fn drop(&mut self) {
        let _ = rustix::termios::tcsetattr(
            rustix::stdio::stdin(),
            rustix::termios::OptionalActions::Now,
            &self.saved,
        );
    }
}

fn terminal_size() -> Option<(u16, u16)> {
    for fd in [rustix::stdio::stdout(), rustix::stdio::stdin()] {
        if let Ok(ws) = rustix::termios::tcgetwinsize(fd)
            && ws.ws_col > 0
        {
            return Some((ws.ws_col, ws.ws_row));
        }
    }
    None
}

/// The terminal's size now and after every `SIGWINCH`.
fn size_channel() -> mpsc::Receiver<(u16, u16)> {
    let (tx, rx) = mpsc::channel(4);
    tokio::spawn(async move {
        if let Some(s) = terminal_size()
            && tx.send(s).await.is_err()
        {
            return;
        }
        let Ok(mut winch) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change())
        else {
            return;
        };
        while winch.recv().await.is_some() {
            if let Some(s) = terminal_size()
                && tx.send(s).await.is_err()
            {
                return;
            }
        }
    });
    rx
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    // Upstream's Complete/Validate: `exec POD -- CMD`; `exec POD CMD` is refused.
    if a.args.len() > 1 {
        return Err(usage(
            "exec [POD] [COMMAND] is not supported anymore. Use exec [POD] -- [COMMAND] instead",
        ));
    }
    let Some(arg) = a.args.first().cloned() else {
        return Err(CliError::msg(
            "pod, type/name or --filename must be specified",
        ));
    };
    if a.command.is_empty() {
        return Err(CliError::msg(
            "you must specify at least one command for the container",
        ));
    }
    let timeout = pods::parse_duration(&a.pod_running_timeout).map_err(usage)?;
    let ns = ctx.namespace().await?;
    let notice = if a.quiet {
        Notice::Quiet
    } else {
        Notice::Stderr
    };
    let (pod, container) =
        pod_and_container(ctx, &ns, &arg, a.container.as_deref(), notice, timeout).await?;

    // Upstream's SetupTTY.
    let mut tty = a.tty && a.stdin;
    if tty && !rustix::termios::isatty(rustix::stdio::stdin()) {
        tty = false;
        if !a.quiet {
            let _ = writeln!(
                ctx.err(),
                "Unable to use a TTY - input is not a terminal or the right kind of file"
            );
        }
    }
    let streams = Streams {
        stdin: a.stdin,
        stdout: true,
        stderr: !tty,
        tty,
    };
    let path = exec_path(&ns, &pod, &container, &a.command, streams);
    let client = ctx.client().await?;
    let raw = if tty { RawTerminal::enter() } else { None };
    let mut out = |b: &[u8]| -> std::io::Result<()> {
        let mut o = ctx.out();
        o.write_all(b)?;
        o.flush()
    };
    let mut err = |b: &[u8]| -> std::io::Result<()> {
        let mut e = ctx.err();
        e.write_all(b)?;
        e.flush()
    };
    let io = ExecIo {
        stdin: a.stdin.then(stdin_channel),
        stdout: Some(&mut out),
        stderr: if tty { None } else { Some(&mut err) },
        resize: tty.then(size_channel),
    };
    let end = stream::remote_command(client, &path, io).await;
    drop(raw);
    finish(ctx, end?)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    #[test]
    fn parses_command_after_dash() {
        let t =
            T::try_parse_from(["exec", "-it", "p", "-c", "x", "--", "sh", "-c", "ls -l"]).unwrap();
        assert_eq!(t.a.args, ["p"]);
        assert_eq!(t.a.command, ["sh", "-c", "ls -l"]);
        assert!(t.a.stdin && t.a.tty);
        let t = T::try_parse_from(["exec", "p", "ls"]).unwrap();
        assert_eq!(t.a.args, ["p", "ls"]);
        assert!(t.a.command.is_empty());
    }

    #[test]
    fn path_has_upstream_parameters() {
        let p = exec_path(
            "ns",
            "p",
            "c",
            &["sh".into(), "-c".into(), "echo a b".into()],
            Streams {
                stdin: true,
                ..Streams::OUTPUT
            },
        );
        assert_eq!(
            p,
            "/api/v1/namespaces/ns/pods/p/exec?command=sh&command=-c&command=echo+a+b&container=c&stderr=true&stdin=true&stdout=true"
        );
    }
}
