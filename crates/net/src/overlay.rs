//! The inter-host pod network: a VXLAN overlay in the style of flannel's `vxlan` backend.
//!
//! Every node has one VXLAN device ([`DEVICE`], VNI [`VNI`], UDP port [`PORT`]) whose
//! local address is the node's IP. A node publishes the device's MAC address (the VTEP
//! MAC) in an annotation of its Node ([`MAC_ANNOTATION`]); every other node then knows,
//! for each peer with a pod CIDR:
//!
//! - a route `<peer pod CIDR> via <peer VTEP IP> dev rkube.vxlan onlink`, the VTEP IP being
//!   the network address of the peer's pod CIDR (e.g. `10.42.1.0`), which the peer puts
//!   on its device as a /32;
//! - a permanent neighbour (ARP) entry `<peer VTEP IP> lladdr <peer VTEP MAC>`;
//! - a forwarding-database entry `<peer VTEP MAC> dst <peer node IP>`, which tells the
//!   kernel to which host the encapsulated frame goes.
//!
//! Peers whose node IP is an address of this very network namespace (several agents on
//! one machine, as in tests) need none of this: their bridges are local, and the kernel
//! routes between them.
//!
//! This module is pure: [`peers`] reads the Node objects, [`desired`] says what the
//! device should hold and [`diff`] the changes from what it holds; the kernel side is the
//! [`crate::dataplane::Dataplane`] trait.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use k8s_openapi::api::core::v1::Node;

use crate::Error;

/// The VXLAN device of a network namespace (shared by agents sharing the namespace).
pub const DEVICE: &str = "rkube.vxlan";
/// The VXLAN network identifier.
pub const VNI: u32 = 1;
/// The VXLAN UDP port (the Linux kernel's historical default, flannel's too).
pub const PORT: u16 = 8472;
/// The bytes VXLAN encapsulation adds to a packet (outer IPv4, UDP, VXLAN, Ethernet).
pub const OVERHEAD: u32 = 50;
/// The Node annotation holding the node's VTEP MAC address.
pub const MAC_ANNOTATION: &str = "overlay.rkube.io/vtep-mac";
/// The Node annotation holding the address other nodes send its encapsulated traffic to.
pub const PUBLIC_IP_ANNOTATION: &str = "overlay.rkube.io/public-ip";

/// A MAC address.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Mac(pub [u8; 6]);

impl Mac {
    /// Parses `aa:bb:cc:dd:ee:ff`.
    pub fn parse(s: &str) -> Option<Mac> {
        let mut out = [0u8; 6];
        let mut parts = s.trim().split(':');
        for b in &mut out {
            let p = parts.next()?;
            if p.len() != 2 {
                return None;
            }
            *b = u8::from_str_radix(p, 16).ok()?;
        }
        parts.next().is_none().then_some(Mac(out))
    }
}

impl fmt::Display for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [a, b, c, d, e, g] = self.0;
        write!(f, "{a:02x}:{b:02x}:{c:02x}:{d:02x}:{e:02x}:{g:02x}")
    }
}

impl fmt::Debug for Mac {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An IPv4 subnet, held by its network address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Subnet {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

impl Subnet {
    /// Parses an IPv4 CIDR; the host bits are cleared. IPv6 is refused.
    pub fn parse(cidr: &str) -> Result<Subnet, Error> {
        match crate::cni::parse_cidr(cidr)? {
            (IpAddr::V4(a), prefix) => Ok(Subnet::new(a, prefix)),
            (IpAddr::V6(_), _) => Err(Error::Invalid(format!(
                "the VXLAN overlay carries IPv4 pod networks only, not {cidr}"
            ))),
        }
    }

    /// The subnet of `addr/prefix` (host bits cleared).
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Subnet {
        let prefix = prefix.min(32);
        let mask = if prefix == 0 {
            0
        } else {
            u32::MAX << (32 - u32::from(prefix))
        };
        Subnet {
            addr: Ipv4Addr::from(u32::from(addr) & mask),
            prefix,
        }
    }

    /// The VTEP address of the node owning this pod subnet: its network address.
    pub fn vtep_ip(&self) -> Ipv4Addr {
        self.addr
    }
}

impl fmt::Display for Subnet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// Another node, as the overlay needs it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peer {
    pub node: String,
    pub subnet: Subnet,
    pub public_ip: Ipv4Addr,
    pub mac: Mac,
}

/// The address a node's encapsulated traffic goes to: its public-IP annotation, else its
/// first `InternalIP`, else its first IPv4 address of any type.
pub fn public_ip(node: &Node) -> Option<Ipv4Addr> {
    let annotated = node
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(PUBLIC_IP_ANNOTATION))
        .and_then(|s| s.parse().ok());
    let addresses = node
        .status
        .as_ref()
        .and_then(|s| s.addresses.as_deref())
        .unwrap_or_default();
    let of_type = |ty: Option<&str>| {
        addresses
            .iter()
            .filter(|a| ty.is_none_or(|t| a.type_ == t))
            .find_map(|a| a.address.parse::<Ipv4Addr>().ok())
    };
    annotated
        .or_else(|| of_type(Some("InternalIP")))
        .or_else(|| of_type(None))
}

/// The first IPv4 pod CIDR of a node.
pub fn pod_subnet(node: &Node) -> Option<Subnet> {
    let spec = node.spec.as_ref()?;
    let cidrs = spec.pod_cidrs.iter().flatten().chain(spec.pod_cidr.iter());
    cidrs.filter_map(|c| Subnet::parse(c).ok()).next()
}

/// The peers of node `me` among `nodes`: every other node with an IPv4 pod CIDR, a VTEP
/// MAC and a public IP that is not an address of this network namespace (`local`).
/// Sorted by node name.
pub fn peers<'a>(
    me: &str,
    nodes: impl IntoIterator<Item = &'a Node>,
    local: &BTreeSet<Ipv4Addr>,
) -> Vec<Peer> {
    let mut out: Vec<Peer> = nodes
        .into_iter()
        .filter_map(|n| {
            let name = n.metadata.name.as_deref()?;
            if name == me || n.metadata.deletion_timestamp.is_some() {
                return None;
            }
            let mac = n
                .metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(MAC_ANNOTATION))
                .and_then(|m| Mac::parse(m))?;
            let public_ip = public_ip(n)?;
            if local.contains(&public_ip) || public_ip.is_loopback() {
                return None;
            }
            Some(Peer {
                node: name.to_string(),
                subnet: pod_subnet(n)?,
                public_ip,
                mac,
            })
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// What a VXLAN device holds that the overlay manages.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DeviceState {
    /// IPv4 addresses (as /32) on the device.
    pub addresses: BTreeSet<Ipv4Addr>,
    /// Routes through the device: destination → gateway.
    pub routes: BTreeMap<Subnet, Ipv4Addr>,
    /// Permanent neighbour entries: IP → MAC.
    pub neighbours: BTreeMap<Ipv4Addr, Mac>,
    /// Forwarding-database entries: MAC → remote host.
    pub fdb: BTreeMap<Mac, Ipv4Addr>,
}

/// What the device of a node whose pod subnet is `local` should hold, given its peers.
pub fn desired(local: Subnet, peers: &[Peer]) -> DeviceState {
    let mut s = DeviceState::default();
    s.addresses.insert(local.vtep_ip());
    for p in peers {
        s.routes.insert(p.subnet, p.subnet.vtep_ip());
        s.neighbours.insert(p.subnet.vtep_ip(), p.mac);
        s.fdb.insert(p.mac, p.public_ip);
    }
    s
}

/// One change to a device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    AddAddress(Ipv4Addr),
    /// Adds the FDB entry; an entry for the same MAC with another destination is removed
    /// first (a [`Change::DelFdb`] precedes it).
    SetFdb {
        mac: Mac,
        dst: Ipv4Addr,
    },
    DelFdb {
        mac: Mac,
        dst: Ipv4Addr,
    },
    /// Adds or replaces the neighbour entry.
    SetNeighbour {
        ip: Ipv4Addr,
        mac: Mac,
    },
    DelNeighbour {
        ip: Ipv4Addr,
        mac: Mac,
    },
    /// Adds or replaces the route (`onlink`, through the device).
    SetRoute {
        dst: Subnet,
        via: Ipv4Addr,
    },
    DelRoute {
        dst: Subnet,
        via: Ipv4Addr,
    },
}

/// The changes taking a device from `current` to `want`: stale routes, neighbours and
/// FDB entries are removed before new ones are written (so a peer that changed its MAC
/// or host never has two), and in an order where each route's neighbour and FDB entry
/// exist before the route. Addresses are only ever added: agents sharing a network
/// namespace share the device, and each owns only its own VTEP address.
pub fn diff(current: &DeviceState, want: &DeviceState) -> Vec<Change> {
    let mut out = Vec::new();
    for (dst, via) in &current.routes {
        if want.routes.get(dst) != Some(via) {
            out.push(Change::DelRoute {
                dst: *dst,
                via: *via,
            });
        }
    }
    for (ip, mac) in &current.neighbours {
        if want.neighbours.get(ip) != Some(mac) {
            out.push(Change::DelNeighbour { ip: *ip, mac: *mac });
        }
    }
    for (mac, dst) in &current.fdb {
        if want.fdb.get(mac) != Some(dst) {
            out.push(Change::DelFdb {
                mac: *mac,
                dst: *dst,
            });
        }
    }
    for ip in want.addresses.difference(&current.addresses) {
        out.push(Change::AddAddress(*ip));
    }
    for (mac, dst) in &want.fdb {
        if current.fdb.get(mac) != Some(dst) {
            out.push(Change::SetFdb {
                mac: *mac,
                dst: *dst,
            });
        }
    }
    for (ip, mac) in &want.neighbours {
        if current.neighbours.get(ip) != Some(mac) {
            out.push(Change::SetNeighbour { ip: *ip, mac: *mac });
        }
    }
    for (dst, via) in &want.routes {
        if current.routes.get(dst) != Some(via) {
            out.push(Change::SetRoute {
                dst: *dst,
                via: *via,
            });
        }
    }
    out
}

/// Applies `changes` to `state` as the kernel would (used by the fake dataplane and to
/// check [`diff`]).
pub fn apply(state: &mut DeviceState, change: &Change) {
    match change {
        Change::AddAddress(ip) => {
            state.addresses.insert(*ip);
        }
        Change::SetFdb { mac, dst } => {
            state.fdb.insert(*mac, *dst);
        }
        Change::DelFdb { mac, dst } => {
            if state.fdb.get(mac) == Some(dst) {
                state.fdb.remove(mac);
            }
        }
        Change::SetNeighbour { ip, mac } => {
            state.neighbours.insert(*ip, *mac);
        }
        Change::DelNeighbour { ip, .. } => {
            state.neighbours.remove(ip);
        }
        Change::SetRoute { dst, via } => {
            state.routes.insert(*dst, *via);
        }
        Change::DelRoute { dst, .. } => {
            state.routes.remove(dst);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    fn node(name: &str, cidr: Option<&str>, ip: &str, mac: Option<&str>) -> Node {
        let mut annotations = serde_json::Map::new();
        if let Some(m) = mac {
            annotations.insert(MAC_ANNOTATION.into(), json!(m));
        }
        serde_json::from_value(json!({
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"podCIDR": cidr},
            "status": {"addresses": [
                {"type": "Hostname", "address": name},
                {"type": "InternalIP", "address": ip},
            ]},
        }))
        .unwrap()
    }

    fn subnet(s: &str) -> Subnet {
        Subnet::parse(s).unwrap()
    }

    #[test]
    fn macs_and_subnets_parse_and_print() {
        let m = Mac::parse("0a:1B:2c:3d:4e:5f").unwrap();
        assert_eq!(m.to_string(), "0a:1b:2c:3d:4e:5f");
        for bad in [
            "",
            "0a:1b:2c:3d:4e",
            "0a:1b:2c:3d:4e:5f:00",
            "0a:1b:2c:3d:4e:zz",
            "a:1b:2c:3d:4e:5f",
        ] {
            assert_eq!(Mac::parse(bad), None, "{bad}");
        }
        let s = subnet("10.42.3.7/24");
        assert_eq!(s.to_string(), "10.42.3.0/24");
        assert_eq!(s.vtep_ip(), Ipv4Addr::new(10, 42, 3, 0));
        assert!(Subnet::parse("fd00::/64").is_err());
        assert!(Subnet::parse("10.0.0.0").is_err());
        assert_eq!(
            Subnet::new(Ipv4Addr::new(1, 2, 3, 4), 0).to_string(),
            "0.0.0.0/0"
        );
    }

    #[test]
    fn peers_skip_self_local_and_incomplete_nodes() {
        let nodes = [
            node(
                "a",
                Some("10.42.0.0/24"),
                "192.168.1.1",
                Some("02:00:00:00:00:01"),
            ),
            node(
                "b",
                Some("10.42.1.0/24"),
                "192.168.1.2",
                Some("02:00:00:00:00:02"),
            ),
            node("c", None, "192.168.1.3", Some("02:00:00:00:00:03")),
            node("d", Some("10.42.3.0/24"), "192.168.1.4", None),
            node(
                "e",
                Some("10.42.4.0/24"),
                "192.168.1.1",
                Some("02:00:00:00:00:05"),
            ),
            node(
                "f",
                Some("10.42.5.0/24"),
                "127.0.0.1",
                Some("02:00:00:00:00:06"),
            ),
        ];
        let local: BTreeSet<Ipv4Addr> = ["192.168.1.1".parse().unwrap()].into();
        let ps = peers("a", &nodes, &local);
        assert_eq!(ps.len(), 1);
        assert_eq!(ps[0].node, "b");
        assert_eq!(ps[0].subnet, subnet("10.42.1.0/24"));
        assert_eq!(ps[0].public_ip, Ipv4Addr::new(192, 168, 1, 2));

        let mut annotated = nodes[1].clone();
        annotated
            .metadata
            .annotations
            .get_or_insert_default()
            .insert(PUBLIC_IP_ANNOTATION.into(), "172.16.0.9".into());
        assert_eq!(public_ip(&annotated), Some(Ipv4Addr::new(172, 16, 0, 9)));
    }

    #[test]
    fn desired_state_holds_a_route_neighbour_and_fdb_entry_per_peer() {
        let peers = vec![Peer {
            node: "b".into(),
            subnet: subnet("10.42.1.0/24"),
            public_ip: Ipv4Addr::new(192, 168, 1, 2),
            mac: Mac([2, 0, 0, 0, 0, 2]),
        }];
        let d = desired(subnet("10.42.0.0/24"), &peers);
        assert_eq!(d.addresses, [Ipv4Addr::new(10, 42, 0, 0)].into());
        assert_eq!(
            d.routes[&subnet("10.42.1.0/24")],
            Ipv4Addr::new(10, 42, 1, 0)
        );
        assert_eq!(
            d.neighbours[&Ipv4Addr::new(10, 42, 1, 0)],
            Mac([2, 0, 0, 0, 0, 2])
        );
        assert_eq!(
            d.fdb[&Mac([2, 0, 0, 0, 0, 2])],
            Ipv4Addr::new(192, 168, 1, 2)
        );
    }

    #[test]
    fn diff_converges_removes_stale_entries_first_and_keeps_foreign_addresses() {
        let mac_b = Mac([2, 0, 0, 0, 0, 2]);
        let mac_b2 = Mac([2, 0, 0, 0, 0, 0x22]);
        let mut current = desired(
            subnet("10.42.0.0/24"),
            &[
                Peer {
                    node: "b".into(),
                    subnet: subnet("10.42.1.0/24"),
                    public_ip: Ipv4Addr::new(192, 168, 1, 2),
                    mac: mac_b,
                },
                Peer {
                    node: "gone".into(),
                    subnet: subnet("10.42.9.0/24"),
                    public_ip: Ipv4Addr::new(192, 168, 1, 9),
                    mac: Mac([2, 0, 0, 0, 0, 9]),
                },
            ],
        );
        current.addresses.insert(Ipv4Addr::new(10, 42, 7, 0));
        // b was recreated: new MAC, new host.
        let want = desired(
            subnet("10.42.0.0/24"),
            &[Peer {
                node: "b".into(),
                subnet: subnet("10.42.1.0/24"),
                public_ip: Ipv4Addr::new(192, 168, 1, 3),
                mac: mac_b2,
            }],
        );
        let changes = diff(&current, &want);
        let first_set = changes
            .iter()
            .position(|c| matches!(c, Change::SetFdb { .. }))
            .unwrap();
        assert!(changes[..first_set].iter().all(|c| matches!(
            c,
            Change::DelRoute { .. } | Change::DelNeighbour { .. } | Change::DelFdb { .. }
        )));
        assert!(changes.contains(&Change::DelRoute {
            dst: subnet("10.42.9.0/24"),
            via: Ipv4Addr::new(10, 42, 9, 0)
        }));
        for c in &changes {
            apply(&mut current, c);
        }
        let mut expect = want.clone();
        expect.addresses.insert(Ipv4Addr::new(10, 42, 7, 0));
        assert_eq!(current, expect);
        assert!(
            diff(&current, &want).is_empty(),
            "a second pass changes nothing"
        );
    }
}
