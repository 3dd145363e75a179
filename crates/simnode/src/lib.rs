//! Simulated nodes for scale tests, as kwok does: `count` Node objects that look like
//! registered kubelets (capacity, Ready and pressure conditions, addresses, node info),
//! their Leases in `kube-node-lease` renewed as a kubelet renews them, and every pod bound
//! to one of them reported Running (status as the kubelet writes it, IP from the node's
//! `spec.podCIDR`) and, once deleted gracefully, deleted for good — without running anything.
//!
//! [`objects`] builds the Node and Lease, [`pods`] the pod status, the QoS class and the
//! per-node IP pool, all pure; [`run`] is the loop through the API server.

pub mod objects;
pub mod pods;
mod sim;

use std::net::Ipv4Addr;
use std::time::Duration;

pub use sim::run;

/// The label every simulated node carries.
pub const SIMULATED_LABEL: &str = "rkube.io/simulated";

/// What to simulate.
#[derive(Debug, Clone)]
pub struct Config {
    /// Nodes are `<prefix>-0` … `<prefix>-<count-1>`.
    pub prefix: String,
    pub count: u32,
    /// Capacity (and allocatable) of each node.
    pub cpu: String,
    pub memory: String,
    pub pods: u32,
    pub ephemeral_storage: String,
    /// `leaseDurationSeconds`; the lease is renewed every quarter of it (10 s for 40 s,
    /// as the kubelet).
    pub lease_seconds: u32,
    /// How often each node's conditions get a fresh heartbeat.
    pub status_interval: Duration,
    /// How many writes may be in flight at once.
    pub concurrency: usize,
    /// `status.nodeInfo.kubeletVersion`.
    pub kubelet_version: String,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            prefix: "sim-node".into(),
            count: 1,
            cpu: "32".into(),
            memory: "256Gi".into(),
            pods: 110,
            ephemeral_storage: "1Ti".into(),
            lease_seconds: 40,
            status_interval: Duration::from_secs(60),
            concurrency: 64,
            kubelet_version: "v1.33.0".into(),
        }
    }
}

/// A configuration that cannot be simulated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    #[error("invalid --{flag} {value:?}: {reason}")]
    Invalid {
        flag: &'static str,
        value: String,
        reason: String,
    },
}

fn invalid(flag: &'static str, value: impl ToString, reason: impl ToString) -> Error {
    Error::Invalid {
        flag,
        value: value.to_string(),
        reason: reason.to_string(),
    }
}

impl Config {
    /// Checks the flags: quantities parse, names are valid DNS subdomains, periods are
    /// positive.
    pub fn validate(&self) -> Result<(), Error> {
        use api::kinds::validate::quantity::Quantity;
        for (flag, v) in [
            ("cpu", &self.cpu),
            ("memory", &self.memory),
            ("ephemeral-storage", &self.ephemeral_storage),
        ] {
            match Quantity::parse(v) {
                Ok(q) if !q.is_negative() => {}
                Ok(_) => return Err(invalid(flag, v, "must not be negative")),
                Err(e) => return Err(invalid(flag, v, e)),
            }
        }
        let last = node_name(&self.prefix, self.count.saturating_sub(1));
        let name_ok = !self.prefix.is_empty()
            && last.len() <= 253
            && self.prefix.split('.').all(|l| {
                !l.is_empty()
                    && l.len() <= 63
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
            });
        if !name_ok {
            return Err(invalid(
                "prefix",
                &self.prefix,
                "node names must be lowercase RFC 1123 subdomains",
            ));
        }
        if self.count == 0 {
            return Err(invalid("count", self.count, "must be at least 1"));
        }
        if self.lease_seconds == 0 {
            return Err(invalid(
                "lease-seconds",
                self.lease_seconds,
                "must be positive",
            ));
        }
        if self.status_interval.is_zero() {
            return Err(invalid("status-interval", "0s", "must be positive"));
        }
        Ok(())
    }

    /// How often a lease is renewed: a quarter of its duration (upstream's
    /// `renewIntervalFraction` 0.25), at least one second.
    pub fn renew_interval(&self) -> Duration {
        Duration::from_millis(u64::from(self.lease_seconds) * 250).max(Duration::from_secs(1))
    }
}

/// The name of node `i`.
pub fn node_name(prefix: &str, i: u32) -> String {
    format!("{prefix}-{i}")
}

/// The index of a node named by [`node_name`] with `prefix`, if below `count`.
pub fn node_index(prefix: &str, count: u32, name: &str) -> Option<u32> {
    let digits = name.strip_prefix(prefix)?.strip_prefix('-')?;
    if digits.is_empty()
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse::<u32>().ok().filter(|i| *i < count)
}

/// The InternalIP of node `i`: `10.0.x.y`, `y` in 1..=254 (then the second octet grows
/// beyond 65,024 nodes).
pub fn node_ip(i: u32) -> Ipv4Addr {
    let host = i / 254;
    let y = (i % 254 + 1) as u8;
    let x = (host % 256) as u8;
    let second = ((host / 256) % 256) as u8;
    Ipv4Addr::new(10, second, x, y)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn names_and_indices() {
        assert_eq!(node_name("sim-node", 7), "sim-node-7");
        assert_eq!(node_index("sim-node", 10, "sim-node-7"), Some(7));
        assert_eq!(node_index("sim-node", 10, "sim-node-0"), Some(0));
        assert_eq!(node_index("sim-node", 10, "sim-node-10"), None);
        assert_eq!(node_index("sim-node", 10, "sim-node-07"), None);
        assert_eq!(node_index("sim-node", 10, "sim-node-"), None);
        assert_eq!(node_index("sim-node", 10, "sim-node-x"), None);
        assert_eq!(node_index("sim-node", 10, "sim-nodes-1"), None);
        assert_eq!(node_index("sim-node", 10, "other-1"), None);
    }

    #[test]
    fn node_ips_are_distinct_and_avoid_0_and_255() {
        assert_eq!(node_ip(0), Ipv4Addr::new(10, 0, 0, 1));
        assert_eq!(node_ip(253), Ipv4Addr::new(10, 0, 0, 254));
        assert_eq!(node_ip(254), Ipv4Addr::new(10, 0, 1, 1));
        let all: std::collections::HashSet<Ipv4Addr> = (0..70_000).map(node_ip).collect();
        assert_eq!(all.len(), 70_000);
        assert!(
            all.iter()
                .all(|ip| ip.octets()[3] != 0 && ip.octets()[3] != 255)
        );
    }

    #[test]
    fn validation() {
        let ok = Config::default();
        ok.validate().unwrap();
        assert_eq!(ok.renew_interval(), Duration::from_secs(10));
        let bad = Config {
            memory: "lots".into(),
            ..Config::default()
        };
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .starts_with("invalid --memory \"lots\"")
        );
        for c in [
            Config {
                prefix: "Sim".into(),
                ..Config::default()
            },
            Config {
                count: 0,
                ..Config::default()
            },
            Config {
                lease_seconds: 0,
                ..Config::default()
            },
            Config {
                cpu: "-1".into(),
                ..Config::default()
            },
        ] {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }
}
