//! The node IPAM controller's range allocator (upstream's
//! `pkg/controller/nodeipam/ipam/range_allocator.go` over `cidrset`): every node gets one
//! pod CIDR of `--node-cidr-mask-size` bits carved out of `--cluster-cidr`, written once to
//! `spec.podCIDR` / `spec.podCIDRs` and never changed.
//!
//! [`CidrSet`] is upstream's `CidrSet` (IPv4 only): a bitmap of the node-sized blocks of the
//! cluster CIDR, `occupy` and `release` of any CIDR inside it, and `allocate_next`, which
//! scans from the block after the last allocation and wraps around. [`plan`] is the pure
//! decision over a set of nodes (existing pod CIDRs occupied first, then one allocation per
//! node without one); [`run_node_ipam`] is the loop over the node informer.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use k8s_openapi::api::core::v1::Node;
use kube::Client;
use kube::api::{Api, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{ObjectRef, Store};
use runtime::workqueue::WorkQueue;
use serde_json::json;

use crate::informers::{self, Informer, Next};

/// The default `--cluster-cidr` (k3s's).
pub const DEFAULT_CLUSTER_CIDR: &str = "10.42.0.0/16";
/// The default `--node-cidr-mask-size` for IPv4.
pub const DEFAULT_NODE_MASK: u8 = 24;

/// Upstream's bound on the bitmap (`clusterSubnetMaxDiff` is 16 for IPv6; IPv4 is bounded
/// here so a `/0` cluster with `/32` nodes cannot ask for half a gigabyte).
const MAX_MASK_DIFF: u8 = 24;

/// The event reason upstream records when no CIDR is left for a node.
pub const REASON_CIDR_NOT_AVAILABLE: &str = "CIDRNotAvailable";

/// What the allocator refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// Go's `net.ParseCIDR` error.
    #[error("invalid CIDR address: {0}")]
    InvalidCidr(String),
    /// An IPv6 CIDR (rkube's pod network is IPv4 for now).
    #[error("IPv6 CIDR {0} is not supported: the cluster CIDR must be IPv4")]
    NotIpv4(String),
    /// The node mask is wider than the cluster CIDR or longer than an address.
    #[error(
        "Controller: Invalid --cluster-cidr, mask size of cluster CIDR must be less than or equal to --node-cidr-mask-size configured for CIDR family"
    )]
    InvalidMask,
    /// Upstream's `ErrCIDRSetSubNetTooBig`.
    #[error("New CIDR set failed; the node CIDR size is too big")]
    SubnetTooBig,
    /// A CIDR that does not overlap the cluster CIDR.
    #[error("cidr {cidr} is out the range of cluster cidr {cluster}")]
    OutOfRange { cidr: String, cluster: String },
    /// No block is left for a node (upstream records the `CIDRNotAvailable` event).
    #[error("Node {node} status is now: CIDRNotAvailable")]
    CidrNotAvailable { node: String },
}

impl Error {
    /// The event reason of this error, as upstream's recorder gives it.
    pub fn reason(&self) -> Option<&'static str> {
        match self {
            Error::CidrNotAvailable { .. } => Some(REASON_CIDR_NOT_AVAILABLE),
            _ => None,
        }
    }
}

/// An IPv4 network: its (masked) address and prefix length.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Ipv4Cidr {
    pub addr: Ipv4Addr,
    pub prefix: u8,
}

fn mask_bits(prefix: u8) -> u32 {
    if prefix == 0 {
        0
    } else {
        u32::MAX << (32 - u32::from(prefix.min(32)))
    }
}

impl Ipv4Cidr {
    /// The network of `addr/prefix` (host bits cleared, as Go's `ParseCIDR` returns it).
    pub fn new(addr: Ipv4Addr, prefix: u8) -> Ipv4Cidr {
        let prefix = prefix.min(32);
        Ipv4Cidr {
            addr: Ipv4Addr::from(u32::from(addr) & mask_bits(prefix)),
            prefix,
        }
    }

    fn base(&self) -> u32 {
        u32::from(self.addr)
    }

    fn last(&self) -> u32 {
        self.base() | !mask_bits(self.prefix)
    }

    /// Whether `ip` is inside this network.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        u32::from(ip) & mask_bits(self.prefix) == self.base()
    }
}

impl fmt::Display for Ipv4Cidr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

impl FromStr for Ipv4Cidr {
    type Err = Error;

    /// Go's `net.ParseCIDR` for IPv4 (`10.42.1.7/24` is the network `10.42.1.0/24`).
    fn from_str(s: &str) -> Result<Self, Error> {
        let invalid = || Error::InvalidCidr(s.to_string());
        let (ip, mask) = s.split_once('/').ok_or_else(invalid)?;
        if ip.contains(':') {
            return match ip.parse::<std::net::Ipv6Addr>() {
                Ok(_) => Err(Error::NotIpv4(s.to_string())),
                Err(_) => Err(invalid()),
            };
        }
        let ip: Ipv4Addr = ip.parse().map_err(|_| invalid())?;
        if mask.is_empty() || !mask.bytes().all(|b| b.is_ascii_digit()) || mask.len() > 3 {
            return Err(invalid());
        }
        let prefix: u8 = mask.parse().map_err(|_| invalid())?;
        if prefix > 32 {
            return Err(invalid());
        }
        Ok(Ipv4Cidr::new(ip, prefix))
    }
}

/// Upstream's `CidrSet`: which node-sized blocks of the cluster CIDR are used.
#[derive(Debug, Clone)]
pub struct CidrSet {
    cluster: Ipv4Cidr,
    node_mask: u8,
    max: usize,
    allocated: usize,
    next_candidate: usize,
    used: Vec<u64>,
}

impl CidrSet {
    /// A set over `cluster` handing out blocks of `node_mask` bits (`NewCIDRSet`).
    pub fn new(cluster: Ipv4Cidr, node_mask: u8) -> Result<CidrSet, Error> {
        if node_mask < cluster.prefix || node_mask > 32 {
            return Err(Error::InvalidMask);
        }
        let diff = node_mask - cluster.prefix;
        if diff > MAX_MASK_DIFF {
            return Err(Error::SubnetTooBig);
        }
        let max = 1usize << diff;
        Ok(CidrSet {
            cluster,
            node_mask,
            max,
            allocated: 0,
            next_candidate: 0,
            used: vec![0; max.div_ceil(64)],
        })
    }

    /// [`CidrSet::new`] from the flags' text.
    pub fn parse(cluster: &str, node_mask: u8) -> Result<CidrSet, Error> {
        CidrSet::new(cluster.parse()?, node_mask)
    }

    pub fn cluster(&self) -> Ipv4Cidr {
        self.cluster
    }

    pub fn node_mask(&self) -> u8 {
        self.node_mask
    }

    /// How many blocks the cluster CIDR holds.
    pub fn capacity(&self) -> usize {
        self.max
    }

    /// How many blocks are used.
    pub fn allocated(&self) -> usize {
        self.allocated
    }

    fn bit(&self, i: usize) -> bool {
        self.used[i / 64] & (1 << (i % 64)) != 0
    }

    /// Sets bit `i` to `on`; whether it changed.
    fn set_bit(&mut self, i: usize, on: bool) -> bool {
        if self.bit(i) == on {
            return false;
        }
        self.used[i / 64] ^= 1 << (i % 64);
        true
    }

    fn block(&self, index: usize) -> Ipv4Cidr {
        let shift = 32 - u32::from(self.node_mask);
        // index < 2^diff, so the shifted value stays inside the host bits of the cluster.
        let offset = u32::try_from(index)
            .ok()
            .and_then(|i| i.checked_shl(shift))
            .unwrap_or(0);
        Ipv4Cidr::new(Ipv4Addr::from(self.cluster.base() | offset), self.node_mask)
    }

    fn index_of(&self, ip: u32) -> Result<usize, Error> {
        let shift = 32 - u32::from(self.node_mask);
        let index = (self.cluster.base() ^ ip).checked_shr(shift).unwrap_or(0) as usize;
        if index >= self.max {
            return Err(Error::OutOfRange {
                cidr: format!("{}/{}", Ipv4Addr::from(ip), self.node_mask),
                cluster: self.cluster.to_string(),
            });
        }
        Ok(index)
    }

    /// The blocks `cidr` covers (`getBeginningAndEndIndices`): a CIDR wider than a block
    /// covers several, one inside a block covers that block, one containing the whole
    /// cluster CIDR covers everything.
    fn range_of(&self, cidr: Ipv4Cidr) -> Result<(usize, usize), Error> {
        let overlaps = self.cluster.contains(cidr.addr) || cidr.contains(self.cluster.addr);
        if !overlaps {
            return Err(Error::OutOfRange {
                cidr: cidr.to_string(),
                cluster: self.cluster.to_string(),
            });
        }
        if self.cluster.prefix >= cidr.prefix {
            return Ok((0, self.max - 1));
        }
        let node = mask_bits(self.node_mask);
        let begin = self.index_of(cidr.base() & node)?;
        let end = self.index_of(cidr.last() & node)?;
        Ok((begin, end))
    }

    /// Marks the blocks of `cidr` used (`Occupy`; occupying a used block is no error).
    pub fn occupy(&mut self, cidr: Ipv4Cidr) -> Result<(), Error> {
        let (begin, end) = self.range_of(cidr)?;
        for i in begin..=end {
            if self.set_bit(i, true) {
                self.allocated += 1;
            }
        }
        Ok(())
    }

    /// Marks the blocks of `cidr` free (`Release`; releasing a free block is no error).
    pub fn release(&mut self, cidr: Ipv4Cidr) -> Result<(), Error> {
        let (begin, end) = self.range_of(cidr)?;
        for i in begin..=end {
            if self.set_bit(i, false) {
                self.allocated -= 1;
            }
        }
        Ok(())
    }

    /// The next free block, scanning from the one after the last allocation and wrapping
    /// (`AllocateNext`); `None` when every block is used.
    pub fn allocate_next(&mut self) -> Option<Ipv4Cidr> {
        if self.allocated == self.max {
            return None;
        }
        let mut candidate = self.next_candidate;
        for _ in 0..self.max {
            if !self.bit(candidate) {
                break;
            }
            candidate = (candidate + 1) % self.max;
        }
        self.next_candidate = (candidate + 1) % self.max;
        self.set_bit(candidate, true);
        self.allocated += 1;
        Some(self.block(candidate))
    }
}

/// What [`plan`] decided: the CIDR for each node that had none, and the nodes it could
/// not serve.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    pub allocations: Vec<(String, Ipv4Cidr)>,
    pub errors: Vec<(String, Error)>,
}

/// The allocator's pass over `nodes` (name, `spec.podCIDR`): every existing pod CIDR is
/// occupied first (upstream does it for the whole node list before handling any node),
/// then each node without one, in order, gets the next free block. A pod CIDR that does not
/// parse or lies outside the cluster CIDR, and a node left without a block
/// ([`Error::CidrNotAvailable`]), are reported and skipped.
pub fn plan(set: &mut CidrSet, nodes: &[(String, Option<String>)]) -> Plan {
    let mut out = Plan::default();
    for (name, cidr) in nodes {
        let Some(cidr) = cidr.as_deref().filter(|c| !c.is_empty()) else {
            continue;
        };
        if let Err(e) = cidr.parse().and_then(|c| set.occupy(c)) {
            out.errors.push((name.clone(), e));
        }
    }
    for (name, cidr) in nodes {
        if cidr.as_deref().is_some_and(|c| !c.is_empty()) {
            continue;
        }
        match set.allocate_next() {
            Some(c) => out.allocations.push((name.clone(), c)),
            None => out
                .errors
                .push((name.clone(), Error::CidrNotAvailable { node: name.clone() })),
        }
    }
    out
}

// ---------------------------------------------------------------------------------------
// The loop.

/// How often upstream retries the patch before giving up on one attempt.
const UPDATE_RETRIES: usize = 3;

struct Shared {
    nodes: Store<Node>,
    queue: WorkQueue<String>,
    writer: Client,
    state: Mutex<State>,
}

struct State {
    set: CidrSet,
    /// CIDRs taken for nodes whose `spec.podCIDR` the cache does not show yet.
    reserved: HashMap<String, Ipv4Cidr>,
    /// Nodes told `CIDRNotAvailable` since they last got a CIDR (one event and one log
    /// line each, however often they are retried).
    starved: HashSet<String>,
}

impl Shared {
    fn state(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }
}

fn pod_cidr(node: &Node) -> Option<&str> {
    let spec = node.spec.as_ref()?;
    spec.pod_cidrs
        .as_ref()
        .and_then(|c| c.first())
        .or(spec.pod_cidr.as_ref())
        .map(String::as_str)
        .filter(|c| !c.is_empty())
}

fn node_name(node: &Node) -> String {
    node.metadata.name.clone().unwrap_or_default()
}

/// A node with a pod CIDR: occupy it, and give back what was reserved for the node if the
/// cache now shows another CIDR (set by someone else).
fn observe(state: &mut State, name: &str, cidr: &str) {
    state.starved.remove(name);
    match cidr.parse::<Ipv4Cidr>() {
        Ok(c) => {
            if let Err(e) = state.set.occupy(c) {
                tracing::warn!(node = name, cidr, error = %e, "cannot occupy the node's pod CIDR");
            }
            if let Some(r) = state.reserved.remove(name)
                && r != c
            {
                tracing::info!(node = name, reserved = %r, cidr, "node already has a pod CIDR; releasing the reserved one");
                let _ = state.set.release(r);
            }
        }
        Err(e) => tracing::warn!(node = name, cidr, error = %e, "node has an invalid pod CIDR"),
    }
}

/// Runs the node IPAM range allocator over `nodes` until the process ends: every node
/// without `spec.podCIDR` gets the next free `/node_mask` block of `cluster_cidr`, written
/// with a merge patch of `spec.podCIDR` and `spec.podCIDRs`. Returns once the workers run;
/// an invalid `cluster_cidr` / `node_mask` is an error before anything starts.
pub async fn run_node_ipam(
    nodes: Arc<Informer<Node>>,
    writer: Client,
    cluster_cidr: &str,
    node_mask: u8,
) -> Result<(), Error> {
    let set = CidrSet::parse(cluster_cidr, node_mask)?;
    let mut events = nodes.subscribe();
    let shared = Arc::new(Shared {
        nodes: nodes.store.clone(),
        queue: WorkQueue::named("cidrallocator_node"),
        writer,
        state: Mutex::new(State {
            set,
            reserved: HashMap::new(),
            starved: HashSet::new(),
        }),
    });
    nodes.synced().await;
    // Everything listed: occupy every existing pod CIDR before allocating any.
    {
        let listed: Vec<(String, Option<String>)> = shared
            .nodes
            .state()
            .iter()
            .map(|n| (node_name(n), pod_cidr(n).map(str::to_string)))
            .collect();
        let mut state = shared.state();
        let plan = plan(&mut state.set, &listed);
        for (node, e) in &plan.errors {
            tracing::warn!(node, error = %e, "node IPAM");
        }
        for (node, cidr) in plan.allocations {
            state.reserved.insert(node.clone(), cidr);
            shared.queue.add(node);
        }
        // Nodes left without a block are retried by their next event.
        for (node, e) in plan.errors {
            if e.reason().is_some() {
                shared.queue.add(node);
            }
        }
    }
    let s = Arc::clone(&shared);
    tokio::spawn(async move {
        loop {
            match informers::next(&mut events).await {
                Next::Apply(n) => {
                    let name = node_name(&n);
                    match pod_cidr(&n) {
                        Some(c) => observe(&mut s.state(), &name, c),
                        None => s.queue.add(name),
                    }
                }
                Next::Delete(n) => {
                    let name = node_name(&n);
                    let mut state = s.state();
                    state.starved.remove(&name);
                    if let Some(r) = state.reserved.remove(&name) {
                        let _ = state.set.release(r);
                    }
                    if let Some(c) = pod_cidr(&n).and_then(|c| c.parse().ok()) {
                        tracing::debug!(node = name, cidr = %c, "releasing the pod CIDR of a deleted node");
                        let _ = state.set.release(c);
                    }
                }
                Next::Other => {}
                Next::Resync => {
                    for n in s.nodes.state() {
                        let name = node_name(&n);
                        match pod_cidr(&n) {
                            Some(c) => observe(&mut s.state(), &name, c),
                            None => s.queue.add(name),
                        }
                    }
                }
                Next::Closed => break,
            }
        }
    });
    for _ in 0..4 {
        let s = Arc::clone(&shared);
        tokio::spawn(async move {
            while let Some(name) = s.queue.get().await {
                match sync(&s, &name).await {
                    Ok(()) => s.queue.forget(&name),
                    Err(SyncError::Allocate(_)) => s.queue.add_rate_limited(name.clone()),
                    Err(e) => {
                        tracing::info!(controller = "nodeipam", node = %name, error = %e, "sync failed; retrying");
                        s.queue.add_rate_limited(name.clone());
                    }
                }
                s.queue.done(&name);
            }
        });
    }
    Ok(())
}

/// Why one sync of a node failed (retried with back-off).
#[derive(Debug, thiserror::Error)]
enum SyncError {
    #[error("{0}")]
    Allocate(Error),
    #[error("patching the node: {0}")]
    Patch(kube::Error),
}

/// `AllocateOrOccupyCIDR` + `updateCIDRsAllocation` for one node.
async fn sync(s: &Shared, name: &str) -> Result<(), SyncError> {
    let Some(node) = s.nodes.get(&ObjectRef::new(name)) else {
        let mut state = s.state();
        if let Some(r) = state.reserved.remove(name) {
            let _ = state.set.release(r);
        }
        return Ok(());
    };
    if let Some(c) = pod_cidr(&node) {
        observe(&mut s.state(), name, c);
        return Ok(());
    }
    let reserved = {
        let mut state = s.state();
        match state.reserved.get(name) {
            Some(c) => Some(*c),
            None => state.set.allocate_next().inspect(|c| {
                state.reserved.insert(name.to_string(), *c);
            }),
        }
    };
    let Some(cidr) = reserved else {
        let e = Error::CidrNotAvailable {
            node: name.to_string(),
        };
        let (first, cluster) = {
            let mut state = s.state();
            (state.starved.insert(name.to_string()), state.set.cluster())
        };
        if first {
            tracing::warn!(node = name, %cluster, "{e}: no pod CIDR left");
            record_event(s, &node, &e).await;
        }
        return Err(SyncError::Allocate(e));
    };
    let api: Api<Node> = Api::all(s.writer.clone());
    let patch = json!({"spec": {"podCIDR": cidr.to_string(), "podCIDRs": [cidr.to_string()]}});
    let mut last = None;
    for _ in 0..UPDATE_RETRIES {
        match api
            .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                tracing::info!(node = name, cidr = %cidr, "set node PodCIDR");
                return Ok(());
            }
            Err(kube::Error::Api(e)) if e.code == 404 => {
                let mut state = s.state();
                if let Some(r) = state.reserved.remove(name) {
                    let _ = state.set.release(r);
                }
                return Ok(());
            }
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The reservation is kept (the write may have gone through): the retry patches the
    // same CIDR, and the cache showing another one releases it.
    match last {
        Some(e) => Err(SyncError::Patch(e)),
        None => Ok(()),
    }
}

/// Upstream's `RecordNodeStatusChange` event (best effort).
async fn record_event(s: &Shared, node: &Node, e: &Error) {
    let Some(reason) = e.reason() else { return };
    let name = node_name(node);
    let at = jiff::Timestamp::now();
    let now = at.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    // Node events live in `default` (the node is cluster-scoped), named `<node>.<unix nanos
    // in hex>` as upstream's recorder names them.
    let event = json!({
        "metadata": {"name": format!("{name}.{:x}", at.as_nanosecond()), "namespace": "default"},
        "involvedObject": {"kind": "Node", "name": name, "apiVersion": "v1",
            "uid": node.metadata.uid.as_deref().unwrap_or_default()},
        "reason": reason,
        "message": format!("Node {name} status is now: {reason}"),
        "source": {"component": "cidrAllocator"},
        "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": "Normal",
    });
    let Ok(event) = serde_json::from_value::<k8s_openapi::api::core::v1::Event>(event) else {
        return;
    };
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(s.writer.clone(), "default");
    if let Err(err) = api.create(&PostParams::default(), &event).await {
        tracing::debug!(node = name, error = %err, "cannot record the CIDRNotAvailable event");
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn cidr(s: &str) -> Ipv4Cidr {
        s.parse().unwrap()
    }

    fn set(cluster: &str, mask: u8) -> CidrSet {
        CidrSet::parse(cluster, mask).unwrap()
    }

    #[test]
    fn parses_like_go_parse_cidr() {
        assert_eq!(cidr("10.42.1.7/24").to_string(), "10.42.1.0/24");
        assert_eq!(cidr("0.0.0.0/0").to_string(), "0.0.0.0/0");
        assert_eq!(cidr("10.42.0.0/032").to_string(), "10.42.0.0/32");
        for bad in [
            "10.42.0.0",
            "10.42.0.0/33",
            "10.42.0/16",
            "10.42.0.0/",
            "10.42.0.0/-1",
            "10.42.0.0/+8",
            "x/8",
            "",
        ] {
            assert_eq!(
                bad.parse::<Ipv4Cidr>(),
                Err(Error::InvalidCidr(bad.to_string())),
                "{bad}"
            );
        }
        assert_eq!(
            "fd00::/64".parse::<Ipv4Cidr>(),
            Err(Error::NotIpv4("fd00::/64".into()))
        );
        assert_eq!(
            Error::InvalidCidr("x".into()).to_string(),
            "invalid CIDR address: x"
        );
        assert!(cidr("10.42.0.0/16").contains("10.42.255.3".parse().unwrap()));
        assert!(!cidr("10.42.0.0/16").contains("10.43.0.0".parse().unwrap()));
    }

    #[test]
    fn invalid_masks() {
        assert_eq!(
            CidrSet::parse("10.42.0.0/16", 8).unwrap_err(),
            Error::InvalidMask
        );
        assert_eq!(
            CidrSet::parse("10.42.0.0/16", 33).unwrap_err(),
            Error::InvalidMask
        );
        assert_eq!(
            CidrSet::parse("0.0.0.0/0", 32).unwrap_err(),
            Error::SubnetTooBig
        );
        assert_eq!(
            CidrSet::parse("10.42.0.0/16/1", 24).unwrap_err(),
            Error::InvalidCidr("10.42.0.0/16/1".into())
        );
        assert!(
            Error::InvalidMask
                .to_string()
                .contains("mask size of cluster CIDR must be less than or equal to")
        );
        let s = set("10.42.0.0/16", 16);
        assert_eq!(s.capacity(), 1);
        assert_eq!(set(DEFAULT_CLUSTER_CIDR, DEFAULT_NODE_MASK).capacity(), 256);
    }

    #[test]
    fn allocates_in_order_from_the_start() {
        let mut s = set("10.42.0.0/16", 24);
        let got: Vec<String> = (0..3)
            .map(|_| s.allocate_next().unwrap().to_string())
            .collect();
        assert_eq!(got, ["10.42.0.0/24", "10.42.1.0/24", "10.42.2.0/24"]);
        // Upstream's index-to-block table.
        let mut s = set("192.168.5.219/28", 32);
        for _ in 0..5 {
            s.allocate_next();
        }
        assert_eq!(s.allocate_next().unwrap().to_string(), "192.168.5.213/32");
    }

    #[test]
    fn fully_allocated_then_release_and_reuse() {
        let mut s = set("127.123.234.0/30", 30);
        assert_eq!(s.allocate_next().unwrap().to_string(), "127.123.234.0/30");
        assert_eq!(s.allocate_next(), None);
        s.release(cidr("127.123.234.0/30")).unwrap();
        assert_eq!(s.allocate_next().unwrap().to_string(), "127.123.234.0/30");
        assert_eq!(s.allocate_next(), None);
    }

    #[test]
    fn scan_continues_after_the_last_allocation_and_wraps() {
        let mut s = set("10.42.0.0/16", 24);
        let all: Vec<Ipv4Cidr> = (0..256).map(|_| s.allocate_next().unwrap()).collect();
        assert_eq!(s.allocate_next(), None);
        // Released blocks come back in scan order, starting after the last allocation.
        s.release(all[5]).unwrap();
        s.release(all[3]).unwrap();
        assert_eq!(s.allocate_next(), Some(all[3]));
        assert_eq!(s.allocate_next(), Some(all[5]));
        assert_eq!(s.allocate_next(), None);
        // Release everything: allocation resumes after block 5, not from 0.
        for c in &all {
            s.release(*c).unwrap();
        }
        assert_eq!(s.allocated(), 0);
        assert_eq!(s.allocate_next(), Some(all[6]));
        let again: Vec<Ipv4Cidr> = (0..255).map(|_| s.allocate_next().unwrap()).collect();
        assert_eq!(again[0], all[7]);
        assert_eq!(again[248], all[255]);
        assert_eq!(again[249], all[0]);
        assert_eq!(again[254], all[5]);
        assert_eq!(s.allocate_next(), None);
    }

    #[test]
    fn occupy_and_release_count_once() {
        // Upstream's TestDoubleOccupyRelease.
        let mut s = set("10.42.0.0/16", 24);
        let ops = [
            ("10.42.5.0/24", true, 1),
            ("10.42.9.0/24", true, 2),
            ("10.42.8.0/22", true, 5),
            ("10.42.9.0/24", true, 5),
            ("10.42.9.0/24", false, 4),
            ("10.42.9.0/24", false, 4),
            ("10.42.4.0/22", false, 3),
        ];
        for (c, occupy, n) in ops {
            if occupy {
                s.occupy(cidr(c)).unwrap();
            } else {
                s.release(cidr(c)).unwrap();
            }
            assert_eq!(s.allocated(), n, "{c}");
        }
        for i in 0..253 {
            assert!(s.allocate_next().is_some(), "{i}");
        }
        assert_eq!(s.allocate_next(), None);
    }

    #[test]
    fn occupy_ranges_and_out_of_range() {
        let mut s = set("127.0.0.0/8", 16);
        s.occupy(cidr("127.0.0.0/8")).unwrap();
        assert_eq!(s.allocated(), 256);
        let mut s = set("127.0.0.0/8", 16);
        s.occupy(cidr("0.0.0.0/0")).unwrap();
        assert_eq!(s.allocated(), 256);
        let mut s = set("127.0.0.0/8", 16);
        s.occupy(cidr("127.123.4.0/24")).unwrap();
        assert_eq!(s.allocated(), 1);
        assert!(s.bit(123));
        let mut s = set("192.168.0.0/16", 24);
        assert_eq!(
            s.occupy(cidr("127.168.224.0/24")).unwrap_err(),
            Error::OutOfRange {
                cidr: "127.168.224.0/24".into(),
                cluster: "192.168.0.0/16".into()
            }
        );
        assert_eq!(
            s.occupy(cidr("127.168.224.0/24")).unwrap_err().to_string(),
            "cidr 127.168.224.0/24 is out the range of cluster cidr 192.168.0.0/16"
        );
        assert!(s.release(cidr("10.0.0.0/24")).is_err());
    }

    #[test]
    fn occupied_blocks_are_skipped() {
        // Upstream's TestCIDRSet_AllocationOccupied: occupy the upper half, allocate the
        // lower half in order, then nothing is left.
        let mut s = set("127.123.234.0/16", 24);
        for i in 128..256u32 {
            s.occupy(Ipv4Cidr::new(Ipv4Addr::from(0x7f7b_0000 | (i << 8)), 24))
                .unwrap();
        }
        for i in 0..128u32 {
            assert_eq!(
                s.allocate_next().unwrap(),
                Ipv4Cidr::new(Ipv4Addr::from(0x7f7b_0000 | (i << 8)), 24)
            );
        }
        assert_eq!(s.allocate_next(), None);
    }

    fn nodes(list: &[(&str, Option<&str>)]) -> Vec<(String, Option<String>)> {
        list.iter()
            .map(|(n, c)| (n.to_string(), c.map(str::to_string)))
            .collect()
    }

    #[test]
    fn plan_occupies_existing_cidrs_first() {
        let mut s = set("10.42.0.0/16", 24);
        let p = plan(
            &mut s,
            &nodes(&[
                ("a", None),
                ("b", Some("10.42.0.0/24")),
                ("c", Some("")),
                ("d", Some("10.42.2.0/24")),
            ]),
        );
        assert_eq!(
            p.allocations,
            vec![
                ("a".to_string(), cidr("10.42.1.0/24")),
                ("c".to_string(), cidr("10.42.3.0/24")),
            ]
        );
        assert!(p.errors.is_empty());
        assert_eq!(s.allocated(), 4);
    }

    #[test]
    fn plan_reports_exhaustion_and_garbage() {
        let mut s = set("10.42.0.0/23", 24);
        let p = plan(
            &mut s,
            &nodes(&[
                ("x", Some("garbage")),
                ("y", Some("10.99.0.0/24")),
                ("a", None),
                ("b", None),
                ("c", None),
            ]),
        );
        assert_eq!(p.allocations.len(), 2);
        assert_eq!(
            p.errors,
            vec![
                ("x".to_string(), Error::InvalidCidr("garbage".into())),
                (
                    "y".to_string(),
                    Error::OutOfRange {
                        cidr: "10.99.0.0/24".into(),
                        cluster: "10.42.0.0/23".into()
                    }
                ),
                (
                    "c".to_string(),
                    Error::CidrNotAvailable { node: "c".into() }
                ),
            ]
        );
        let e = &p.errors[2].1;
        assert_eq!(e.reason(), Some("CIDRNotAvailable"));
        assert_eq!(e.to_string(), "Node c status is now: CIDRNotAvailable");
        assert_eq!(p.errors[0].1.reason(), None);
        // A deleted node's block is reused.
        s.release(p.allocations[0].1).unwrap();
        let p2 = plan(&mut s, &nodes(&[("c", None)]));
        assert_eq!(p2.allocations, vec![("c".to_string(), p.allocations[0].1)]);
    }
}
