//! Service IP and node port allocation. Each allocated address or port is a key in the
//! store (`/registry/ipaddresses/<ip>`, `/registry/servicenodeports/<port>`) created with
//! compare-and-swap, so several API servers on one etcd never hand out the same one.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use api::{ApiError, FieldError};
use bytes::Bytes;
use serde_json::{Value, json};
use store::{Backend, StoreError};

/// A CIDR range.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cidr {
    pub base: IpAddr,
    pub prefix: u8,
}

impl Cidr {
    pub fn parse(s: &str) -> Result<Cidr, String> {
        let (ip, len) = s
            .split_once('/')
            .ok_or_else(|| format!("{s:?} is not a CIDR"))?;
        let base: IpAddr = ip.parse().map_err(|_| format!("{s:?} is not a CIDR"))?;
        let prefix: u8 = len.parse().map_err(|_| format!("{s:?} is not a CIDR"))?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        if prefix > max || prefix + 2 > max {
            return Err(format!("{s:?}: the range is too small"));
        }
        Ok(Cidr { base, prefix })
    }

    fn bits(&self) -> u32 {
        if self.base.is_ipv4() { 32 } else { 128 }
    }

    /// Usable addresses (without the network address and, for IPv4, the broadcast).
    pub fn size(&self) -> u128 {
        let host_bits = self.bits() - u32::from(self.prefix);
        let all = 1u128.checked_shl(host_bits).unwrap_or(u128::MAX);
        if self.base.is_ipv4() {
            all.saturating_sub(2)
        } else {
            all.saturating_sub(1)
        }
    }

    fn base_u128(&self) -> u128 {
        match self.base {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        }
    }

    /// The `n`-th usable address (1-based offset from the network address).
    pub fn nth(&self, n: u128) -> IpAddr {
        let host_bits = self.bits() - u32::from(self.prefix);
        let mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |v| v - 1);
        let network = self.base_u128() & !mask;
        let v = network + n;
        match self.base {
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::from(u32::try_from(v).unwrap_or(0))),
            IpAddr::V6(_) => IpAddr::V6(Ipv6Addr::from(v)),
        }
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        if ip.is_ipv4() != self.base.is_ipv4() {
            return false;
        }
        let host_bits = self.bits() - u32::from(self.prefix);
        let mask = 1u128.checked_shl(host_bits).map_or(u128::MAX, |v| v - 1);
        let v = match ip {
            IpAddr::V4(v4) => u128::from(u32::from(v4)),
            IpAddr::V6(v6) => u128::from(v6),
        };
        (v & !mask) == (self.base_u128() & !mask)
    }
}

/// Upstream's default node port range.
pub const NODE_PORTS: std::ops::RangeInclusive<u32> = 30000..=32767;

fn ip_key(ip: &IpAddr) -> String {
    format!("/registry/ipaddresses/{}", ip.to_string().replace(':', "-"))
}

fn port_key(port: u32, protocol: &str) -> String {
    format!(
        "/registry/servicenodeports/{}-{port}",
        protocol.to_ascii_lowercase()
    )
}

fn owner(svc: &Value) -> Bytes {
    Bytes::from(
        json!({
            "namespace": api::meta::namespace(svc).unwrap_or_default(),
            "name": api::meta::name(svc).unwrap_or_default(),
        })
        .to_string(),
    )
}

fn random_u128() -> u128 {
    u128::from_le_bytes(*uuid::Uuid::new_v4().as_bytes())
}

fn invalid(svc: &Value, field: &str, value: Value, detail: String) -> ApiError {
    ApiError::invalid(
        "",
        "Service",
        api::meta::name(svc).unwrap_or_default(),
        &[FieldError::invalid(field, value, detail)],
    )
}

/// Claims a specific key; `false` when someone else holds it.
async fn claim(store: &dyn Backend, key: &str, svc: &Value) -> Result<bool, ApiError> {
    match store.create(key, owner(svc), None).await {
        Ok(_) => Ok(true),
        Err(StoreError::AlreadyExists { .. }) => Ok(false),
        Err(e) => Err(ApiError::internal(e)),
    }
}

/// Allocates the cluster IP and node ports a new Service needs, writing them into it.
/// Returns the keys claimed (to release if the create fails).
pub async fn allocate(
    store: &dyn Backend,
    range: &Cidr,
    svc: &mut Value,
) -> Result<Vec<String>, ApiError> {
    let mut claimed = Vec::new();
    match allocate_inner(store, range, svc, &mut claimed).await {
        Ok(()) => Ok(claimed),
        Err(e) => {
            release_keys(store, &claimed).await;
            Err(e)
        }
    }
}

async fn allocate_inner(
    store: &dyn Backend,
    range: &Cidr,
    svc: &mut Value,
    claimed: &mut Vec<String>,
) -> Result<(), ApiError> {
    let ty = svc["spec"]["type"]
        .as_str()
        .unwrap_or("ClusterIP")
        .to_string();
    if ty != "ExternalName" {
        match svc["spec"]["clusterIP"].as_str().unwrap_or_default() {
            "None" => {
                svc["spec"]["clusterIPs"] = json!(["None"]);
            }
            "" => {
                let size = range.size();
                let mut ip = None;
                // Random probing, then a sweep, so a nearly full range still allocates.
                for attempt in 0..(64 + size.min(65_536)) {
                    let n = if attempt < 64 {
                        2 + random_u128() % size.saturating_sub(1).max(1)
                    } else {
                        2 + (attempt - 64) % size.saturating_sub(1).max(1)
                    };
                    let candidate = range.nth(n);
                    let key = ip_key(&candidate);
                    if claim(store, &key, svc).await? {
                        claimed.push(key);
                        ip = Some(candidate);
                        break;
                    }
                }
                let ip = ip.ok_or_else(|| {
                    invalid(
                        svc,
                        "spec.clusterIPs",
                        json!([]),
                        "failed to allocate IP: range is full".into(),
                    )
                })?;
                svc["spec"]["clusterIP"] = json!(ip.to_string());
                svc["spec"]["clusterIPs"] = json!([ip.to_string()]);
            }
            requested => {
                let ip: IpAddr = requested.parse().map_err(|_| {
                    invalid(
                        svc,
                        "spec.clusterIPs[0]",
                        json!(requested),
                        "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)".into(),
                    )
                })?;
                if !range.contains(ip) {
                    return Err(invalid(
                        svc,
                        "spec.clusterIPs",
                        json!([requested]),
                        format!(
                            "failed to allocate IP {requested}: the provided IP ({requested}) is not in the valid range. The range of valid IPs is {}/{}",
                            range.base, range.prefix
                        ),
                    ));
                }
                let key = ip_key(&ip);
                if !claim(store, &key, svc).await? {
                    return Err(invalid(
                        svc,
                        "spec.clusterIPs",
                        json!([requested]),
                        format!(
                            "failed to allocate IP {requested}: provided IP is already allocated"
                        ),
                    ));
                }
                claimed.push(key);
                svc["spec"]["clusterIPs"] = json!([requested]);
            }
        }
        let family = if svc["spec"]["clusterIP"]
            .as_str()
            .is_some_and(|s| s.contains(':'))
        {
            "IPv6"
        } else {
            "IPv4"
        };
        if svc["spec"]["clusterIP"] != "None" {
            svc["spec"]["ipFamilies"] = json!([family]);
        }
    }
    allocate_node_ports(store, svc, claimed).await
}

/// Node ports for NodePort and LoadBalancer services (ports that have none yet).
pub async fn allocate_node_ports(
    store: &dyn Backend,
    svc: &mut Value,
    claimed: &mut Vec<String>,
) -> Result<(), ApiError> {
    let ty = svc["spec"]["type"]
        .as_str()
        .unwrap_or("ClusterIP")
        .to_string();
    if ty != "NodePort" && ty != "LoadBalancer" {
        return Ok(());
    }
    let snapshot = svc.clone();
    let Some(ports) = svc["spec"]["ports"].as_array_mut() else {
        return Ok(());
    };
    let span = u128::from(NODE_PORTS.end() - NODE_PORTS.start() + 1);
    for (i, port) in ports.iter_mut().enumerate() {
        let protocol = port["protocol"].as_str().unwrap_or("TCP").to_string();
        match port["nodePort"].as_u64() {
            Some(p) if p > 0 => {
                let p = u32::try_from(p).unwrap_or(0);
                if !NODE_PORTS.contains(&p) {
                    return Err(invalid(
                        &snapshot,
                        &format!("spec.ports[{i}].nodePort"),
                        json!(p),
                        format!(
                            "provided port is not in the valid range. The range of valid ports is {}-{}",
                            NODE_PORTS.start(),
                            NODE_PORTS.end()
                        ),
                    ));
                }
                let key = port_key(p, &protocol);
                if claimed.contains(&key) {
                    continue;
                }
                if !claim(store, &key, &snapshot).await? {
                    return Err(invalid(
                        &snapshot,
                        &format!("spec.ports[{i}].nodePort"),
                        json!(p),
                        "provided port is already allocated".into(),
                    ));
                }
                claimed.push(key);
            }
            _ => {
                let mut got = None;
                for attempt in 0..(64 + span) {
                    let offset = if attempt < 64 {
                        random_u128() % span
                    } else {
                        (attempt - 64) % span
                    };
                    let p = NODE_PORTS.start() + u32::try_from(offset).unwrap_or(0);
                    let key = port_key(p, &protocol);
                    if claim(store, &key, &snapshot).await? {
                        claimed.push(key);
                        got = Some(p);
                        break;
                    }
                }
                let p = got.ok_or_else(|| {
                    invalid(
                        &snapshot,
                        &format!("spec.ports[{i}].nodePort"),
                        json!(0),
                        "range is full".into(),
                    )
                })?;
                port["nodePort"] = json!(p);
            }
        }
    }
    Ok(())
}

async fn release_keys(store: &dyn Backend, keys: &[String]) {
    for k in keys {
        match store.delete(k, None).await {
            Ok(_) | Err(StoreError::NotFound { .. }) => {}
            Err(e) => tracing::warn!(key = %k, error = %e, "cannot release service allocation"),
        }
    }
}

/// The keys a Service holds.
pub fn keys_of(svc: &Value) -> Vec<String> {
    let mut keys = Vec::new();
    if let Some(ips) = svc["spec"]["clusterIPs"].as_array() {
        for ip in ips.iter().filter_map(Value::as_str) {
            if let Ok(ip) = ip.parse::<IpAddr>() {
                keys.push(ip_key(&ip));
            }
        }
    }
    if let Some(ports) = svc["spec"]["ports"].as_array() {
        for p in ports {
            if let Some(n) = p["nodePort"].as_u64().and_then(|n| u32::try_from(n).ok())
                && n > 0
            {
                keys.push(port_key(n, p["protocol"].as_str().unwrap_or("TCP")));
            }
        }
    }
    keys
}

/// Releases everything a deleted Service held.
pub async fn release(store: &dyn Backend, svc: &Value) {
    release_keys(store, &keys_of(svc)).await;
}

/// Releases node ports an updated Service no longer uses.
pub async fn release_dropped(store: &dyn Backend, old: &Value, new: &Value) {
    let keep = keys_of(new);
    let dropped: Vec<String> = keys_of(old)
        .into_iter()
        .filter(|k| !keep.contains(k))
        .collect();
    release_keys(store, &dropped).await;
}

#[cfg(test)]
mod tests {
    use super::*;
    use store::memory::MemoryBackend;

    #[test]
    fn cidrs() {
        let c = Cidr::parse("10.43.0.0/16").unwrap();
        assert_eq!(c.nth(1).to_string(), "10.43.0.1");
        assert_eq!(c.size(), 65534);
        assert!(c.contains("10.43.200.1".parse().unwrap()));
        assert!(!c.contains("10.44.0.1".parse().unwrap()));
        assert!(Cidr::parse("10.0.0.0/31").is_err());
        assert!(Cidr::parse("bad").is_err());
    }

    #[tokio::test]
    async fn allocation() {
        let store = MemoryBackend::new();
        let range = Cidr::parse("10.43.0.0/28").unwrap();
        let mut a = json!({"metadata": {"name": "a", "namespace": "d"}, "spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}});
        let keys = allocate(&store, &range, &mut a).await.unwrap();
        assert_eq!(keys.len(), 2);
        let ip = a["spec"]["clusterIP"].as_str().unwrap().to_string();
        assert!(range.contains(ip.parse().unwrap()));
        assert_ne!(ip, "10.43.0.1");
        let np = a["spec"]["ports"][0]["nodePort"].as_u64().unwrap();
        assert!(NODE_PORTS.contains(&(np as u32)));
        // The same IP again is refused, and nothing leaks.
        let mut b = json!({"metadata": {"name": "b"}, "spec": {"clusterIP": ip, "ports": []}});
        let e = allocate(&store, &range, &mut b).await.unwrap_err();
        assert!(e.message.contains("already allocated"), "{}", e.message);
        // Fill the range: 14 usable, one taken by a, .1 reserved by policy of probing from 2.
        let mut n = 0;
        loop {
            let mut s = json!({"metadata": {"name": format!("s{n}")}, "spec": {"ports": []}});
            if allocate(&store, &range, &mut s).await.is_err() {
                break;
            }
            n += 1;
        }
        assert_eq!(n, 12);
        release(&store, &a).await;
        let mut c = json!({"metadata": {"name": "c"}, "spec": {"ports": []}});
        allocate(&store, &range, &mut c).await.unwrap();
    }
}
