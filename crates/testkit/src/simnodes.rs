//! `rkube sim-nodes` as a test fixture: simulated nodes for a running [`RkubeServer`],
//! killed on drop.

use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use crate::{RkubeServer, rkube_binary};

/// A running `rkube sim-nodes` process.
pub struct SimNodes {
    child: Child,
    log: PathBuf,
}

impl SimNodes {
    /// Starts `rkube sim-nodes --kubeconfig <admin> ARGS` (e.g. `--count 3`); its log goes
    /// to `<server dir>/sim-nodes-<tag>.log`.
    pub fn start(server: &RkubeServer, tag: &str, args: &[&str]) -> SimNodes {
        let log = server.dir.path().join(format!("sim-nodes-{tag}.log"));
        let out = std::fs::File::create(&log)
            .unwrap_or_else(|e| panic!("creating {}: {e}", log.display()));
        let err = out
            .try_clone()
            .unwrap_or_else(|e| panic!("cloning {}: {e}", log.display()));
        let child = Command::new(rkube_binary())
            .arg("sim-nodes")
            .arg("--kubeconfig")
            .arg(&server.kubeconfig)
            .args(args)
            .env("RUST_LOG", "info,simnode=debug")
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("starting rkube sim-nodes: {e}"));
        SimNodes { child, log }
    }

    /// What the process logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Kills the process (its nodes go silent).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for SimNodes {
    fn drop(&mut self) {
        self.kill();
    }
}
