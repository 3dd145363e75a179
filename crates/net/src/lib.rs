//! Pod networking on a node.
//!
//! - [`cni`]: the CNI network configuration containerd applies to every pod sandbox
//!   (`bridge` + `host-local` over the node's pod CIDR + `portmap`), and what host-local
//!   has allocated.
//! - [`dns`]: the DNS settings of a pod (upstream kubelet's `pkg/kubelet/network/dns`).
//! - [`overlay`]: the VXLAN overlay between nodes (pure: peers, desired device state,
//!   changes), and [`dataplane`], its kernel side (rtnetlink, iptables) and a fake.

pub mod cni;
pub mod dataplane;
pub mod dns;
pub mod overlay;

use std::path::PathBuf;

/// What pod networking can fail with.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// An input that cannot be used (a bad subnet, an unknown DNS policy, …).
    #[error("{0}")]
    Invalid(String),
    /// A netlink or packet-filter operation failed.
    #[error("{0}")]
    Netlink(String),
}

impl Error {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
