//! The kernel side of the overlay ([`crate::overlay`]): the VXLAN device, its routes,
//! neighbour and forwarding-database entries over rtnetlink, and the packet-filter rules
//! that keep pod-to-pod traffic between nodes free of NAT.
//!
//! [`Kernel`] is the real one (rtnetlink, and `iptables` for the rules: the CNI plugins
//! on this machine drive iptables too); [`FakeDataplane`] keeps the same state in memory
//! for tests.

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Mutex;

use async_trait::async_trait;
use futures::TryStreamExt;
use rtnetlink::packet_route::AddressFamily;
use rtnetlink::packet_route::address::AddressAttribute;
use rtnetlink::packet_route::link::{InfoData, InfoVxlan, LinkAttribute, LinkInfo, LinkMessage};
use rtnetlink::packet_route::neighbour::{
    NeighbourAddress, NeighbourAttribute, NeighbourFlags, NeighbourMessage, NeighbourState,
};
use rtnetlink::packet_route::route::{RouteAddress, RouteAttribute, RouteMessage};
use rtnetlink::{Handle, LinkUnspec, LinkVxlan, RouteMessageBuilder};

use crate::Error;
use crate::overlay::{Change, DeviceState, Mac, Subnet};

/// The VXLAN device to have.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VxlanSpec {
    pub name: String,
    pub vni: u32,
    pub port: u16,
    /// The node's address: the device's local end, and how its MTU is found.
    pub local: Ipv4Addr,
}

/// The device as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Vtep {
    pub mac: Mac,
    /// The device's MTU: its underlay's less [`crate::overlay::OVERHEAD`].
    pub mtu: u32,
}

/// The kernel operations the overlay needs.
#[async_trait]
pub trait Dataplane: Send + Sync {
    /// Creates the device if missing, or recreates it when its VNI, port or local address
    /// differ; sets it up. Returns its MAC and MTU.
    async fn ensure_device(&self, spec: &VxlanSpec) -> Result<Vtep, Error>;
    /// What the device holds (routes, permanent neighbours, FDB entries, addresses).
    async fn device_state(&self, device: &str) -> Result<DeviceState, Error>;
    /// Makes one change to the device.
    async fn apply(&self, device: &str, change: &Change) -> Result<(), Error>;
    /// The IPv4 addresses of this network namespace.
    async fn local_addresses(&self) -> Result<BTreeSet<Ipv4Addr>, Error>;
    /// The packet-filter rules of pod subnet `local` (rule set `id`): traffic from it to
    /// the `peers`' subnets is not masqueraded, and forwarded traffic from or to it is
    /// accepted (hosts whose FORWARD policy is DROP).
    async fn set_filter_rules(
        &self,
        id: &str,
        local: Subnet,
        peers: &[Subnet],
    ) -> Result<(), Error>;
}

/// The names of rule set `id`'s chains: (nat, filter).
pub fn chain_names(id: &str) -> (String, String) {
    (format!("RKUBE-OVL-{id}"), format!("RKUBE-FWD-{id}"))
}

/// The real dataplane: rtnetlink on this process's network namespace.
pub struct Kernel {
    handle: Handle,
}

fn nl(what: &str) -> impl Fn(rtnetlink::Error) -> Error + '_ {
    move |e| Error::Netlink(format!("{what}: {e}"))
}

fn is_exists(e: &rtnetlink::Error) -> bool {
    matches!(e, rtnetlink::Error::NetlinkError(m) if m.raw_code() == -libc::EEXIST)
}

fn is_missing(e: &rtnetlink::Error) -> bool {
    matches!(e, rtnetlink::Error::NetlinkError(m)
        if m.raw_code() == -libc::ENOENT || m.raw_code() == -libc::ESRCH || m.raw_code() == -libc::ENODEV)
}

impl Kernel {
    /// Opens a netlink connection (its task runs on the current tokio runtime).
    pub fn connect() -> Result<Kernel, Error> {
        let (conn, handle, _) = rtnetlink::new_connection()
            .map_err(|e| Error::Netlink(format!("opening a netlink socket: {e}")))?;
        tokio::spawn(conn);
        Ok(Kernel { handle })
    }

    /// Deletes device `name`; a missing device is not an error.
    pub async fn delete_device(&self, name: &str) -> Result<(), Error> {
        match self.link(name).await? {
            Some(l) => match self.handle.link().del(l.header.index).execute().await {
                Ok(()) => Ok(()),
                Err(e) if is_missing(&e) => Ok(()),
                Err(e) => Err(nl("deleting a device")(e)),
            },
            None => Ok(()),
        }
    }

    async fn link(&self, name: &str) -> Result<Option<LinkMessage>, Error> {
        let mut links = self
            .handle
            .link()
            .get()
            .match_name(name.to_string())
            .execute();
        match links.try_next().await {
            Ok(l) => Ok(l),
            Err(e) if is_missing(&e) => Ok(None),
            Err(e) => Err(nl("looking up a link")(e)),
        }
    }

    async fn index(&self, name: &str) -> Result<u32, Error> {
        self.link(name)
            .await?
            .map(|l| l.header.index)
            .ok_or_else(|| Error::Netlink(format!("device {name} is missing")))
    }

    /// The MTU of the link holding `addr`.
    async fn underlay_mtu(&self, addr: Ipv4Addr) -> Result<Option<u32>, Error> {
        let mut addrs = self.handle.address().get().execute();
        let mut index = None;
        while let Some(a) = addrs.try_next().await.map_err(nl("listing addresses"))? {
            let holds = a.attributes.iter().any(|at| {
                matches!(at, AddressAttribute::Address(IpAddr::V4(v)) | AddressAttribute::Local(IpAddr::V4(v)) if *v == addr)
            });
            if holds {
                index = Some(a.header.index);
            }
        }
        let Some(index) = index else { return Ok(None) };
        let mut links = self.handle.link().get().match_index(index).execute();
        let link = links.try_next().await.map_err(nl("looking up a link"))?;
        Ok(link.and_then(|l| {
            l.attributes.iter().find_map(|a| match a {
                LinkAttribute::Mtu(m) => Some(*m),
                _ => None,
            })
        }))
    }
}

/// (VNI, port, local) of a VXLAN link message.
fn vxlan_params(link: &LinkMessage) -> (Option<u32>, Option<u16>, Option<Ipv4Addr>) {
    let mut out = (None, None, None);
    for a in &link.attributes {
        if let LinkAttribute::LinkInfo(infos) = a {
            for i in infos {
                if let LinkInfo::Data(InfoData::Vxlan(vs)) = i {
                    for v in vs {
                        match v {
                            InfoVxlan::Id(id) => out.0 = Some(*id),
                            InfoVxlan::Port(p) => out.1 = Some(*p),
                            InfoVxlan::Local(l) => out.2 = Some(*l),
                            _ => {}
                        }
                    }
                }
            }
        }
    }
    out
}

fn mac_of(link: &LinkMessage) -> Option<Mac> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::Address(b) => <[u8; 6]>::try_from(b.as_slice()).ok().map(Mac),
        _ => None,
    })
}

fn mtu_of(link: &LinkMessage) -> Option<u32> {
    link.attributes.iter().find_map(|a| match a {
        LinkAttribute::Mtu(m) => Some(*m),
        _ => None,
    })
}

fn route_message(index: u32, dst: Subnet, via: Ipv4Addr) -> RouteMessage {
    RouteMessageBuilder::<Ipv4Addr>::new()
        .destination_prefix(dst.addr, dst.prefix)
        .gateway(via)
        .output_interface(index)
        .onlink()
        .build()
}

fn neighbour_message(index: u32, ip: Ipv4Addr) -> NeighbourMessage {
    let mut m = NeighbourMessage::default();
    m.header.family = AddressFamily::Inet;
    m.header.ifindex = index;
    m.attributes
        .push(NeighbourAttribute::Destination(NeighbourAddress::Inet(ip)));
    m
}

fn fdb_message(index: u32, mac: Mac, dst: Ipv4Addr) -> NeighbourMessage {
    let mut m = NeighbourMessage::default();
    m.header.family = AddressFamily::Bridge;
    m.header.ifindex = index;
    m.header.flags = NeighbourFlags::Own;
    m.header.state = NeighbourState::Permanent;
    m.attributes
        .push(NeighbourAttribute::LinkLayerAddress(mac.0.to_vec()));
    m.attributes
        .push(NeighbourAttribute::Destination(NeighbourAddress::Inet(dst)));
    m
}

#[async_trait]
impl Dataplane for Kernel {
    async fn ensure_device(&self, spec: &VxlanSpec) -> Result<Vtep, Error> {
        let underlay = self.underlay_mtu(spec.local).await?.ok_or_else(|| {
            Error::Netlink(format!(
                "no interface of this network namespace has the node address {}",
                spec.local
            ))
        })?;
        let mtu = underlay.saturating_sub(crate::overlay::OVERHEAD);
        if let Some(link) = self.link(&spec.name).await? {
            let (vni, port, local) = vxlan_params(&link);
            if (vni, port, local) != (Some(spec.vni), Some(spec.port), Some(spec.local)) {
                tracing::info!(device = %spec.name, ?vni, ?port, ?local, "recreating the VXLAN device");
                self.handle
                    .link()
                    .del(link.header.index)
                    .execute()
                    .await
                    .map_err(nl("deleting the VXLAN device"))?;
            }
        }
        if self.link(&spec.name).await?.is_none() {
            let msg = LinkVxlan::new(&spec.name, spec.vni)
                .port(spec.port)
                .local(spec.local)
                .learning(false)
                .mtu(mtu)
                .build();
            match self.handle.link().add(msg).execute().await {
                Ok(()) => {}
                Err(e) if is_exists(&e) => {}
                Err(e) => return Err(nl("creating the VXLAN device")(e)),
            }
        }
        let index = self.index(&spec.name).await?;
        self.handle
            .link()
            .set(LinkUnspec::new_with_index(index).up().build())
            .execute()
            .await
            .map_err(nl("setting the VXLAN device up"))?;
        let link = self
            .link(&spec.name)
            .await?
            .ok_or_else(|| Error::Netlink(format!("device {} vanished", spec.name)))?;
        let mac = mac_of(&link)
            .ok_or_else(|| Error::Netlink(format!("device {} has no MAC address", spec.name)))?;
        Ok(Vtep {
            mac,
            mtu: mtu_of(&link).unwrap_or(mtu),
        })
    }

    async fn device_state(&self, device: &str) -> Result<DeviceState, Error> {
        let index = self.index(device).await?;
        let mut s = DeviceState::default();

        let mut addrs = self
            .handle
            .address()
            .get()
            .set_link_index_filter(index)
            .execute();
        while let Some(a) = addrs.try_next().await.map_err(nl("listing addresses"))? {
            for at in &a.attributes {
                if let AddressAttribute::Address(IpAddr::V4(v)) = at {
                    s.addresses.insert(*v);
                }
            }
        }

        let mut routes = self
            .handle
            .route()
            .get(RouteMessageBuilder::<Ipv4Addr>::new().build())
            .execute();
        while let Some(r) = routes.try_next().await.map_err(nl("listing routes"))? {
            let mut oif = None;
            let mut dst = None;
            let mut via = None;
            for at in &r.attributes {
                match at {
                    RouteAttribute::Oif(i) => oif = Some(*i),
                    RouteAttribute::Destination(RouteAddress::Inet(d)) => dst = Some(*d),
                    RouteAttribute::Gateway(RouteAddress::Inet(g)) => via = Some(*g),
                    _ => {}
                }
            }
            if oif == Some(index)
                && let (Some(d), Some(g)) = (dst, via)
            {
                s.routes
                    .insert(Subnet::new(d, r.header.destination_prefix_length), g);
            }
        }

        for family in [AddressFamily::Inet, AddressFamily::Bridge] {
            let mut neigh = self
                .handle
                .neighbours()
                .get()
                .set_address_family(family)
                .execute();
            while let Some(n) = neigh.try_next().await.map_err(nl("listing neighbours"))? {
                if n.header.ifindex != index || n.header.state != NeighbourState::Permanent {
                    continue;
                }
                let mut ip = None;
                let mut mac = None;
                for at in &n.attributes {
                    match at {
                        NeighbourAttribute::Destination(NeighbourAddress::Inet(d)) => {
                            ip = Some(*d);
                        }
                        // In the bridge family the destination comes undecoded.
                        NeighbourAttribute::Destination(NeighbourAddress::Other(b)) => {
                            ip = <[u8; 4]>::try_from(b.as_slice()).ok().map(Ipv4Addr::from);
                        }
                        NeighbourAttribute::LinkLayerAddress(b) => {
                            mac = <[u8; 6]>::try_from(b.as_slice()).ok().map(Mac);
                        }
                        _ => {}
                    }
                }
                match (family, ip, mac) {
                    (AddressFamily::Inet, Some(ip), Some(mac)) => {
                        s.neighbours.insert(ip, mac);
                    }
                    (AddressFamily::Bridge, Some(dst), Some(mac)) => {
                        s.fdb.insert(mac, dst);
                    }
                    _ => {}
                }
            }
        }
        Ok(s)
    }

    async fn apply(&self, device: &str, change: &Change) -> Result<(), Error> {
        let index = self.index(device).await?;
        let h = &self.handle;
        let res = match *change {
            Change::AddAddress(ip) => h.address().add(index, IpAddr::V4(ip), 32).execute().await,
            Change::SetFdb { mac, dst } => {
                h.neighbours()
                    .add_bridge(index, &mac.0)
                    .destination(IpAddr::V4(dst))
                    .flags(NeighbourFlags::Own)
                    .replace()
                    .execute()
                    .await
            }
            Change::DelFdb { mac, dst } => {
                h.neighbours()
                    .del(fdb_message(index, mac, dst))
                    .execute()
                    .await
            }
            Change::SetNeighbour { ip, mac } => {
                h.neighbours()
                    .add(index, IpAddr::V4(ip))
                    .link_layer_address(&mac.0)
                    .state(NeighbourState::Permanent)
                    .replace()
                    .execute()
                    .await
            }
            Change::DelNeighbour { ip, .. } => {
                h.neighbours()
                    .del(neighbour_message(index, ip))
                    .execute()
                    .await
            }
            Change::SetRoute { dst, via } => {
                h.route()
                    .add(route_message(index, dst, via))
                    .replace()
                    .execute()
                    .await
            }
            Change::DelRoute { dst, via } => {
                h.route()
                    .del(route_message(index, dst, via))
                    .execute()
                    .await
            }
        };
        match res {
            Ok(()) => Ok(()),
            Err(e) if matches!(change, Change::AddAddress(_)) && is_exists(&e) => Ok(()),
            Err(e)
                if matches!(
                    change,
                    Change::DelFdb { .. } | Change::DelNeighbour { .. } | Change::DelRoute { .. }
                ) && is_missing(&e) =>
            {
                Ok(())
            }
            Err(e) => Err(Error::Netlink(format!("{change:?} on {device}: {e}"))),
        }
    }

    async fn local_addresses(&self) -> Result<BTreeSet<Ipv4Addr>, Error> {
        let mut out = BTreeSet::new();
        let mut addrs = self.handle.address().get().execute();
        while let Some(a) = addrs.try_next().await.map_err(nl("listing addresses"))? {
            for at in &a.attributes {
                if let AddressAttribute::Address(IpAddr::V4(v))
                | AddressAttribute::Local(IpAddr::V4(v)) = at
                {
                    out.insert(*v);
                }
            }
        }
        Ok(out)
    }

    async fn set_filter_rules(
        &self,
        id: &str,
        local: Subnet,
        peers: &[Subnet],
    ) -> Result<(), Error> {
        let (nat, fwd) = chain_names(id);
        let local = local.to_string();
        ensure_chain("nat", "POSTROUTING", &nat).await?;
        iptables(&["-t", "nat", "-F", &nat]).await?;
        for p in peers {
            let p = p.to_string();
            iptables(&[
                "-t", "nat", "-A", &nat, "-s", &local, "-d", &p, "-j", "ACCEPT",
            ])
            .await?;
        }
        ensure_chain("filter", "FORWARD", &fwd).await?;
        iptables(&["-t", "filter", "-F", &fwd]).await?;
        iptables(&["-t", "filter", "-A", &fwd, "-s", &local, "-j", "ACCEPT"]).await?;
        iptables(&["-t", "filter", "-A", &fwd, "-d", &local, "-j", "ACCEPT"]).await?;
        Ok(())
    }
}

const COMMENT: &str = "rkube overlay";

/// Runs `iptables -w ARGS`; its stderr is the error.
async fn iptables(args: &[&str]) -> Result<(), Error> {
    let out = tokio::process::Command::new("iptables")
        .arg("-w")
        .args(args)
        .output()
        .await
        .map_err(|e| Error::Netlink(format!("running iptables: {e}")))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(Error::Netlink(format!(
            "iptables {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )))
    }
}

/// Creates `chain` in `table` if missing and jumps to it first thing from `parent`.
async fn ensure_chain(table: &str, parent: &str, chain: &str) -> Result<(), Error> {
    if iptables(&["-t", table, "-L", chain, "-n"]).await.is_err() {
        iptables(&["-t", table, "-N", chain]).await?;
    }
    let jump = ["-j", chain, "-m", "comment", "--comment", COMMENT];
    let mut check = vec!["-t", table, "-C", parent];
    check.extend(jump);
    if iptables(&check).await.is_err() {
        let mut insert = vec!["-t", table, "-I", parent, "1"];
        insert.extend(jump);
        iptables(&insert).await?;
    }
    Ok(())
}

/// Removes rule set `id` (both chains and the jumps to them); what is missing is skipped.
pub async fn remove_filter_rules(id: &str) {
    let (nat, fwd) = chain_names(id);
    for (table, parent, chain) in [("nat", "POSTROUTING", nat), ("filter", "FORWARD", fwd)] {
        let _ = iptables(&[
            "-t",
            table,
            "-D",
            parent,
            "-j",
            &chain,
            "-m",
            "comment",
            "--comment",
            COMMENT,
        ])
        .await;
        let _ = iptables(&["-t", table, "-F", &chain]).await;
        let _ = iptables(&["-t", table, "-X", &chain]).await;
    }
}

/// An in-memory dataplane: one device, its state and the rules last set.
#[derive(Default)]
pub struct FakeDataplane {
    pub device: Mutex<Option<(VxlanSpec, DeviceState)>>,
    pub local: Mutex<BTreeSet<Ipv4Addr>>,
    pub rules: Mutex<Option<(String, Subnet, Vec<Subnet>)>>,
    /// The MAC the device gets.
    pub mac: Mac,
}

impl FakeDataplane {
    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The device's state (empty without a device).
    pub fn state(&self) -> DeviceState {
        Self::lock(&self.device)
            .as_ref()
            .map(|(_, s)| s.clone())
            .unwrap_or_default()
    }
}

#[async_trait]
impl Dataplane for FakeDataplane {
    async fn ensure_device(&self, spec: &VxlanSpec) -> Result<Vtep, Error> {
        let mut d = Self::lock(&self.device);
        if d.as_ref().is_none_or(|(s, _)| s != spec) {
            *d = Some((spec.clone(), DeviceState::default()));
        }
        Ok(Vtep {
            mac: self.mac,
            mtu: 1450,
        })
    }

    async fn device_state(&self, device: &str) -> Result<DeviceState, Error> {
        match &*Self::lock(&self.device) {
            Some((s, state)) if s.name == device => Ok(state.clone()),
            _ => Err(Error::Netlink(format!("device {device} is missing"))),
        }
    }

    async fn apply(&self, device: &str, change: &Change) -> Result<(), Error> {
        match &mut *Self::lock(&self.device) {
            Some((s, state)) if s.name == device => {
                crate::overlay::apply(state, change);
                Ok(())
            }
            _ => Err(Error::Netlink(format!("device {device} is missing"))),
        }
    }

    async fn local_addresses(&self) -> Result<BTreeSet<Ipv4Addr>, Error> {
        Ok(Self::lock(&self.local).clone())
    }

    async fn set_filter_rules(
        &self,
        id: &str,
        local: Subnet,
        peers: &[Subnet],
    ) -> Result<(), Error> {
        *Self::lock(&self.rules) = Some((id.to_string(), local, peers.to_vec()));
        Ok(())
    }
}
