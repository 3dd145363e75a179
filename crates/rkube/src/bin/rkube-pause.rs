//! `rkube-pause`: PID 1 of every pod sandbox (the pause image's `/pause`).
//!
//! It holds the sandbox's namespaces open by existing: it blocks, reaps every child that
//! is re-parented to it (on SIGCHLD, a `waitpid(-1, WNOHANG)` loop), and exits 0 on
//! SIGTERM or SIGINT. It prints nothing unless misused (`-v` prints the version).

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => {}
        [v] if v == "-v" => {
            #[allow(clippy::print_stdout)]
            {
                println!("rkube-pause v{}", env!("CARGO_PKG_VERSION"));
            }
            return ExitCode::SUCCESS;
        }
        _ => {
            eprintln!(
                "usage: rkube-pause [-v]\n(the pause process of a pod sandbox: it takes no arguments)"
            );
            return ExitCode::from(2);
        }
    }
    match signals::run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("rkube-pause: {e}");
            ExitCode::from(1)
        }
    }
}

#[allow(unsafe_code)]
mod signals {
    use std::io;

    /// Never runs (the signals stay blocked and are taken with `sigwait`); installing it
    /// matters because PID 1 of a PID namespace drops signals whose action is the default.
    extern "C" fn noop(_: libc::c_int) {}

    fn check(rc: libc::c_int) -> io::Result<()> {
        if rc == -1 {
            Err(io::Error::last_os_error())
        } else {
            Ok(())
        }
    }

    pub fn run() -> io::Result<()> {
        let wanted = [libc::SIGCHLD, libc::SIGTERM, libc::SIGINT];
        // SAFETY: a zeroed sigset_t is valid storage; sigemptyset/sigaddset initialize it.
        let mut set: libc::sigset_t = unsafe { std::mem::zeroed() };
        // SAFETY: `set` is a valid, exclusively borrowed sigset_t.
        check(unsafe { libc::sigemptyset(&mut set) })?;
        for sig in wanted {
            // SAFETY: as above; `sig` is a valid signal number.
            check(unsafe { libc::sigaddset(&mut set, sig) })?;
            // SAFETY: a zeroed sigaction is valid; we set the handler to a plain
            // `extern "C" fn(c_int)` that does nothing, with an empty mask.
            let mut action: libc::sigaction = unsafe { std::mem::zeroed() };
            action.sa_sigaction = noop as extern "C" fn(libc::c_int) as libc::sighandler_t;
            // SAFETY: `action` is fully initialized; the old action is not requested.
            check(unsafe { libc::sigaction(sig, &action, std::ptr::null_mut()) })?;
        }
        // SAFETY: `set` is initialized; the process is single-threaded, so the mask of
        // this thread is the process's.
        check(unsafe { libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) })?;
        loop {
            let mut sig: libc::c_int = 0;
            // SAFETY: `set` is initialized and `sig` is a valid out pointer.
            let rc = unsafe { libc::sigwait(&set, &mut sig) };
            if rc != 0 {
                return Err(io::Error::from_raw_os_error(rc));
            }
            match sig {
                libc::SIGTERM | libc::SIGINT => return Ok(()),
                _ => reap(),
            }
        }
    }

    /// Reaps every exited child without blocking.
    fn reap() {
        loop {
            let mut status: libc::c_int = 0;
            // SAFETY: `status` is a valid out pointer; WNOHANG never blocks.
            let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
            if pid <= 0 {
                return;
            }
        }
    }
}
