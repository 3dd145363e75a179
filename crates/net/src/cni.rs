//! The CNI network configuration of a node's pods.
//!
//! containerd's CRI plugin reads the first `*.conflist` of its `cni.conf_dir` and runs the
//! plugins itself for every sandbox: `bridge` puts the pod's veth on the node's bridge
//! (the gateway of the pod CIDR, with IP masquerade for traffic leaving the CIDR and
//! hairpin mode so a pod reaches itself through a Service), `host-local` hands out the
//! pod's IP from the node's `spec.podCIDR` and keeps one file per allocated IP under
//! `/var/lib/cni/networks/<network>/`, `firewall` accepts the pods' traffic in the
//! FORWARD chain (so pods work on hosts whose FORWARD policy is DROP), `portmap`
//! implements `hostPort`.
//!
//! Version 1.0.0 of the spec: containerd 1.6's libcni and Debian's plugins 1.1.1 both
//! speak it (checked: bridge, host-local, firewall and portmap ADD/DEL at 1.0.0 here).
//! `bandwidth` is left out (it needs the `ifb` module, and there is no `modprobe` here).

use std::collections::BTreeSet;
use std::io::Write;
use std::net::IpAddr;
use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::Error;

/// The CNI spec version of the configuration we write.
pub const CNI_VERSION: &str = "1.0.0";

/// Where host-local keeps its allocations by default (`<dir>/<network>/<ip>`).
pub const DEFAULT_IPAM_DATA_DIR: &str = "/var/lib/cni/networks";

/// The top-level key that marks a conflist as written by us, so a later write may remove
/// it (libcni ignores keys it does not know).
const MANAGED_KEY: &str = "rkube.io/managed";

/// A node's pod network: one Linux bridge, the pod CIDR on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BridgeNetwork {
    /// The CNI network name (e.g. `rkube`); host-local's state directory is named after it.
    pub name: String,
    /// The bridge device (e.g. `rkube0`), unique per agent on one machine.
    pub bridge: String,
    /// The node's pod CIDR (`spec.podCIDR`), e.g. `10.42.0.0/24`.
    pub subnet: String,
    /// The MTU of the bridge and the pods' interfaces (`None`: the plugin's default).
    pub mtu: Option<u32>,
    /// Hairpin mode on the pods' bridge ports (a pod reaching itself through a Service).
    pub hairpin: bool,
}

/// Parses `a.b.c.d/n` (or an IPv6 CIDR) into its address and prefix length.
pub fn parse_cidr(cidr: &str) -> Result<(IpAddr, u8), Error> {
    let bad = || Error::Invalid(format!("invalid CIDR address: {cidr}"));
    let (addr, prefix) = cidr.split_once('/').ok_or_else(bad)?;
    let addr: IpAddr = addr.parse().map_err(|_| bad())?;
    let prefix: u8 = prefix.parse().map_err(|_| bad())?;
    let max = if addr.is_ipv4() { 32 } else { 128 };
    if prefix > max {
        return Err(bad());
    }
    Ok((addr, prefix))
}

/// The conflist of `net` (pure).
pub fn conflist(net: &BridgeNetwork) -> Value {
    let default_route = match parse_cidr(&net.subnet) {
        Ok((IpAddr::V6(_), _)) => "::/0",
        _ => "0.0.0.0/0",
    };
    let mut bridge = json!({
        "type": "bridge",
        "bridge": net.bridge,
        "isGateway": true,
        "ipMasq": true,
        "hairpinMode": net.hairpin,
        "ipam": {
            "type": "host-local",
            "ranges": [[{"subnet": net.subnet}]],
            "routes": [{"dst": default_route}],
        },
    });
    if let Some(mtu) = net.mtu {
        bridge["mtu"] = json!(mtu);
    }
    json!({
        "cniVersion": CNI_VERSION,
        "name": net.name,
        MANAGED_KEY: true,
        "plugins": [
            bridge,
            {"type": "firewall"},
            {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true},
        ],
    })
}

/// The file name of `net`'s conflist: `10-<name>.conflist`.
pub fn conflist_file_name(net: &BridgeNetwork) -> String {
    format!("10-{}.conflist", net.name)
}

/// Writes `net`'s conflist into `dir` as `10-<name>.conflist`, atomically (a temporary
/// file renamed over it), and removes the other conflists we wrote there, so the runtime
/// never sees two. Files we did not write are left alone. Returns the written path.
pub fn write_conflist(dir: &Path, net: &BridgeNetwork) -> Result<PathBuf, Error> {
    parse_cidr(&net.subnet)?;
    if net.name.is_empty() || net.name.contains('/') || net.bridge.is_empty() {
        return Err(Error::Invalid(format!(
            "invalid CNI network name {:?} or bridge {:?}",
            net.name, net.bridge
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    let name = conflist_file_name(net);
    let path = dir.join(&name);
    let tmp = dir.join(format!(".{name}.tmp"));
    let mut text = serde_json::to_vec_pretty(&conflist(net))
        .map_err(|e| Error::Invalid(format!("encoding the conflist: {e}")))?;
    text.push(b'\n');
    {
        let mut f = std::fs::File::create(&tmp).map_err(|e| Error::io(&tmp, e))?;
        f.write_all(&text).map_err(|e| Error::io(&tmp, e))?;
        f.sync_all().map_err(|e| Error::io(&tmp, e))?;
    }
    std::fs::rename(&tmp, &path).map_err(|e| Error::io(&path, e))?;
    for other in ours(dir)? {
        if other != path {
            match std::fs::remove_file(&other) {
                Ok(()) => tracing::info!(path = %other.display(), "removed an old CNI conflist"),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(Error::io(&other, e)),
            }
        }
    }
    Ok(path)
}

/// The `*.conflist` files in `dir` that carry our mark.
fn ours(dir: &Path) -> Result<Vec<PathBuf>, Error> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        if path.extension().and_then(|e| e.to_str()) != Some("conflist") {
            continue;
        }
        let Ok(text) = std::fs::read(&path) else {
            continue;
        };
        if let Ok(v) = serde_json::from_slice::<Value>(&text)
            && v[MANAGED_KEY] == json!(true)
        {
            found.push(path);
        }
    }
    found.sort();
    Ok(found)
}

/// The IPs host-local has allocated for `network` under the default data directory.
pub fn allocated_ips(network: &str) -> Result<Vec<IpAddr>, Error> {
    allocated_ips_in(Path::new(DEFAULT_IPAM_DATA_DIR), network)
}

/// The IPs host-local has allocated for `network` under `data_dir` (one file per IP,
/// named by it; `lock` and `last_reserved_ip.*` are skipped), sorted. A network that
/// never allocated anything has none.
pub fn allocated_ips_in(data_dir: &Path, network: &str) -> Result<Vec<IpAddr>, Error> {
    let dir = data_dir.join(network);
    let entries = match std::fs::read_dir(&dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(Error::io(&dir, e)),
    };
    let mut ips = BTreeSet::new();
    for entry in entries {
        let entry = entry.map_err(|e| Error::io(&dir, e))?;
        if let Some(ip) = entry
            .file_name()
            .to_str()
            .and_then(|n| n.parse::<IpAddr>().ok())
        {
            ips.insert(ip);
        }
    }
    Ok(ips.into_iter().collect())
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    fn net() -> BridgeNetwork {
        BridgeNetwork {
            name: "rkube".into(),
            bridge: "rkube0".into(),
            subnet: "10.42.1.0/24".into(),
            mtu: None,
            hairpin: true,
        }
    }

    #[test]
    fn conflist_shape() {
        let c = conflist(&net());
        assert_eq!(c["cniVersion"], "1.0.0");
        assert_eq!(c["name"], "rkube");
        let plugins = c["plugins"].as_array().unwrap();
        assert_eq!(plugins.len(), 3);
        let b = &plugins[0];
        assert_eq!(b["type"], "bridge");
        assert_eq!(b["bridge"], "rkube0");
        assert_eq!(b["isGateway"], true);
        assert_eq!(b["ipMasq"], true);
        assert_eq!(b["hairpinMode"], true);
        assert!(b.get("mtu").is_none());
        assert_eq!(
            b["ipam"],
            json!({"type": "host-local", "ranges": [[{"subnet": "10.42.1.0/24"}]],
                "routes": [{"dst": "0.0.0.0/0"}]})
        );
        assert_eq!(plugins[1], json!({"type": "firewall"}));
        assert_eq!(
            plugins[2],
            json!({"type": "portmap", "capabilities": {"portMappings": true}, "snat": true})
        );
        let mut n = net();
        n.mtu = Some(1450);
        n.hairpin = false;
        n.subnet = "fd00:42::/64".into();
        let c = conflist(&n);
        assert_eq!(c["plugins"][0]["mtu"], 1450);
        assert_eq!(c["plugins"][0]["hairpinMode"], false);
        assert_eq!(c["plugins"][0]["ipam"]["routes"][0]["dst"], "::/0");
    }

    #[test]
    fn cidrs() {
        assert_eq!(
            parse_cidr("10.42.0.0/16").unwrap(),
            ("10.42.0.0".parse().unwrap(), 16)
        );
        assert!(parse_cidr("10.42.0.0").is_err());
        assert!(parse_cidr("10.42.0.0/33").is_err());
        assert!(parse_cidr("x/8").is_err());
        assert!(parse_cidr("fd00::/129").is_err());
    }

    #[test]
    fn write_replaces_our_old_files_only() {
        let dir = tempfile::tempdir().unwrap();
        let foreign = dir.path().join("05-other.conflist");
        std::fs::write(
            &foreign,
            r#"{"cniVersion":"0.4.0","name":"x","plugins":[]}"#,
        )
        .unwrap();
        let mut old = net();
        old.name = "old".into();
        let old_path = write_conflist(dir.path(), &old).unwrap();
        assert!(old_path.ends_with("10-old.conflist"));
        let path = write_conflist(dir.path(), &net()).unwrap();
        assert_eq!(path, dir.path().join("10-rkube.conflist"));
        assert!(!old_path.exists());
        assert!(foreign.exists());
        let v: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        assert_eq!(v, conflist(&net()));
        // Rewriting is idempotent and leaves no temporary file.
        write_conflist(dir.path(), &net()).unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(names, ["05-other.conflist", "10-rkube.conflist"]);
        let mut bad = net();
        bad.subnet = "nope".into();
        assert!(write_conflist(dir.path(), &bad).is_err());
    }

    #[test]
    fn allocations() {
        let dir = tempfile::tempdir().unwrap();
        assert!(allocated_ips_in(dir.path(), "rkube").unwrap().is_empty());
        let d = dir.path().join("rkube");
        std::fs::create_dir_all(&d).unwrap();
        for f in [
            "10.42.1.3",
            "10.42.1.2",
            "lock",
            "last_reserved_ip.0",
            "fd00::5",
        ] {
            std::fs::write(d.join(f), "x").unwrap();
        }
        let ips = allocated_ips_in(dir.path(), "rkube").unwrap();
        let want: Vec<IpAddr> = ["10.42.1.2", "10.42.1.3", "fd00::5"]
            .iter()
            .map(|s| s.parse().unwrap())
            .collect();
        assert_eq!(ips, want);
    }
}
