//! What a simulated kubelet reports for its pods: the QoS class, the status of a running
//! pod, and the per-node pool of pod IPs carved from `spec.podCIDR`.

use std::collections::HashSet;
use std::net::Ipv4Addr;

use k8s_openapi::api::core::v1::{Container, Pod};
use serde_json::{Value, json};

/// Upstream's `ComputePodQOS` ([`api::qos`]).
pub fn qos_class(pod: &Pod) -> &'static str {
    api::qos::of_pod(pod).as_str()
}

/// What the running status of a pod needs from its spec and current status, kept only
/// while the pod waits for it (a few strings instead of the whole pod).
#[derive(Debug, Clone, PartialEq)]
pub struct PodSummary {
    /// Regular containers: name, image.
    pub containers: Vec<(String, String)>,
    /// Init containers: name, image, restartable (a sidecar keeps running).
    pub init_containers: Vec<(String, String, bool)>,
    pub qos_class: String,
    pub host_network: bool,
    /// The existing `PodScheduled` condition, kept as is.
    pub scheduled: Option<Value>,
    /// The existing `status.startTime`, kept as is.
    pub start_time: Option<String>,
}

impl PodSummary {
    pub fn of(pod: &Pod) -> PodSummary {
        let spec = pod.spec.as_ref();
        let image = |c: &Container| c.image.clone().unwrap_or_default();
        let status = pod.status.as_ref();
        PodSummary {
            containers: spec
                .map(|s| {
                    s.containers
                        .iter()
                        .map(|c| (c.name.clone(), image(c)))
                        .collect()
                })
                .unwrap_or_default(),
            init_containers: spec
                .and_then(|s| s.init_containers.as_ref())
                .map(|cs| {
                    cs.iter()
                        .map(|c| {
                            let sidecar = c.restart_policy.as_deref() == Some("Always");
                            (c.name.clone(), image(c), sidecar)
                        })
                        .collect()
                })
                .unwrap_or_default(),
            qos_class: status
                .and_then(|s| s.qos_class.clone())
                .filter(|q| !q.is_empty())
                .unwrap_or_else(|| qos_class(pod).to_string()),
            host_network: spec.and_then(|s| s.host_network).unwrap_or(false),
            scheduled: status
                .and_then(|s| s.conditions.as_ref())
                .and_then(|cs| cs.iter().find(|c| c.type_ == "PodScheduled"))
                .and_then(|c| serde_json::to_value(c).ok()),
            start_time: status
                .and_then(|s| s.start_time.as_ref())
                .map(|t| crate::objects::time(t.0)),
        }
    }
}

fn condition(kind: &str, now: &str) -> Value {
    json!({"type": kind, "status": "True", "lastProbeTime": null, "lastTransitionTime": now})
}

/// The status the kubelet writes for a pod whose containers all run and are ready
/// (`generateAPIPodStatus` with the status manager's normalization: regular container
/// statuses sorted by name, init containers in spec order, completed with exit code 0,
/// sidecars running).
pub fn running_status(
    pod: &PodSummary,
    uid: &str,
    host_ip: Ipv4Addr,
    pod_ip: Ipv4Addr,
    now: &str,
) -> Value {
    let container_id = |name: &str| format!("sim://{uid}-{name}");
    let running = |name: &str, image: &str| {
        json!({
            "name": name,
            "state": {"running": {"startedAt": now}},
            "lastState": {},
            "ready": true,
            "restartCount": 0,
            "image": image,
            "imageID": format!("sim://{image}"),
            "containerID": container_id(name),
            "started": true,
        })
    };
    let mut containers: Vec<&(String, String)> = pod.containers.iter().collect();
    containers.sort_by(|a, b| a.0.cmp(&b.0));
    let init: Vec<Value> = pod
        .init_containers
        .iter()
        .map(|(name, image, sidecar)| {
            if *sidecar {
                running(name, image)
            } else {
                json!({
                    "name": name,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                        "startedAt": now, "finishedAt": now, "containerID": container_id(name)}},
                    "lastState": {},
                    "ready": true,
                    "restartCount": 0,
                    "image": image,
                    "imageID": format!("sim://{image}"),
                    "containerID": container_id(name),
                    "started": false,
                })
            }
        })
        .collect();
    let scheduled = pod
        .scheduled
        .clone()
        .unwrap_or_else(|| condition("PodScheduled", now));
    let mut status = json!({
        "phase": "Running",
        "conditions": [
            condition("PodReadyToStartContainers", now),
            condition("Initialized", now),
            condition("Ready", now),
            condition("ContainersReady", now),
            scheduled,
        ],
        "hostIP": host_ip.to_string(),
        "hostIPs": [{"ip": host_ip.to_string()}],
        "podIP": pod_ip.to_string(),
        "podIPs": [{"ip": pod_ip.to_string()}],
        "startTime": pod.start_time.as_deref().unwrap_or(now),
        "containerStatuses": containers.iter().map(|(n, i)| running(n, i)).collect::<Vec<_>>(),
        "qosClass": pod.qos_class,
    });
    if !init.is_empty() {
        status["initContainerStatuses"] = Value::Array(init);
    }
    status
}

/// The pod IPs of one node: its `spec.podCIDR` without the network address (`.0`), the
/// gateway (`.1`) and the broadcast address, handed out by a counter that wraps around and
/// skips addresses in use.
#[derive(Debug, Clone)]
pub struct IpPool {
    cidr: String,
    base: u32,
    size: u32,
    next: u32,
    used: HashSet<u32>,
}

/// A `spec.podCIDR` that is not an IPv4 CIDR.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid CIDR address: {0}")]
pub struct InvalidCidr(pub String);

const FIRST: u32 = 2;

impl IpPool {
    pub fn new(cidr: &str) -> Result<IpPool, InvalidCidr> {
        let bad = || InvalidCidr(cidr.to_string());
        let (ip, prefix) = cidr.split_once('/').ok_or_else(bad)?;
        let ip: Ipv4Addr = ip.parse().map_err(|_| bad())?;
        if prefix.is_empty() || prefix.len() > 2 || !prefix.bytes().all(|b| b.is_ascii_digit()) {
            return Err(bad());
        }
        let prefix: u32 = prefix.parse().map_err(|_| bad())?;
        if prefix > 32 {
            return Err(bad());
        }
        let size = 1u64 << (32 - prefix);
        let mask = !((size - 1) as u32);
        Ok(IpPool {
            cidr: cidr.to_string(),
            base: u32::from(ip) & mask,
            size: u32::try_from(size.min(u64::from(u32::MAX))).unwrap_or(u32::MAX),
            next: FIRST,
            used: HashSet::new(),
        })
    }

    /// The CIDR this pool was made from.
    pub fn cidr(&self) -> &str {
        &self.cidr
    }

    /// The usable offsets: `FIRST ..= size - 2`.
    fn last(&self) -> u32 {
        self.size.saturating_sub(2)
    }

    fn offset(&self, ip: Ipv4Addr) -> Option<u32> {
        let o = u32::from(ip).wrapping_sub(self.base);
        (o >= FIRST && o <= self.last()).then_some(o)
    }

    /// Whether `ip` is a pod address of this pool.
    pub fn contains(&self, ip: Ipv4Addr) -> bool {
        self.offset(ip).is_some()
    }

    /// How many addresses are in use.
    pub fn in_use(&self) -> usize {
        self.used.len()
    }

    /// The next free address after the last one handed out, wrapping; `None` when all
    /// are in use.
    pub fn allocate(&mut self) -> Option<Ipv4Addr> {
        let last = self.last();
        if last < FIRST {
            return None;
        }
        let count = last - FIRST + 1;
        if self.used.len() as u64 >= u64::from(count) {
            return None;
        }
        let mut o = self.next.clamp(FIRST, last);
        for _ in 0..count {
            if !self.used.contains(&o) {
                self.used.insert(o);
                self.next = if o == last { FIRST } else { o + 1 };
                return Some(Ipv4Addr::from(self.base.wrapping_add(o)));
            }
            o = if o == last { FIRST } else { o + 1 };
        }
        None
    }

    /// Marks `ip` in use (a pod already running with it); false when it is not ours.
    pub fn mark(&mut self, ip: Ipv4Addr) -> bool {
        match self.offset(ip) {
            Some(o) => {
                self.used.insert(o);
                true
            }
            None => false,
        }
    }

    /// Gives `ip` back.
    pub fn release(&mut self, ip: Ipv4Addr) {
        if let Some(o) = self.offset(ip) {
            self.used.remove(&o);
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    fn with_resources(containers: Value) -> Pod {
        pod(json!({"metadata": {"name": "p"}, "spec": {"containers": containers}}))
    }

    #[test]
    fn qos_classes() {
        let c = |res: Value| json!({"name": "c", "image": "i", "resources": res});
        assert_eq!(
            qos_class(&with_resources(json!([c(json!({}))]))),
            "BestEffort"
        );
        // Zero quantities and other resources do not count.
        assert_eq!(
            qos_class(&with_resources(json!([c(
                json!({"requests": {"cpu": "0", "nvidia.com/gpu": "1"}})
            )]))),
            "BestEffort"
        );
        let both = json!({"cpu": "1", "memory": "1Gi"});
        assert_eq!(
            qos_class(&with_resources(json!([c(
                json!({"requests": both, "limits": both})
            )]))),
            "Guaranteed"
        );
        // Equal values written differently are equal.
        assert_eq!(
            qos_class(&with_resources(json!([c(json!({
                "requests": {"cpu": "1000m", "memory": "1073741824"},
                "limits": {"cpu": "1", "memory": "1Gi"}}))]))),
            "Guaranteed"
        );
        assert_eq!(
            qos_class(&with_resources(json!([c(
                json!({"requests": {"cpu": "500m", "memory": "1Gi"}, "limits": both})
            )]))),
            "Burstable"
        );
        // Only a cpu limit: not guaranteed.
        assert_eq!(
            qos_class(&with_resources(json!([c(
                json!({"requests": {"cpu": "1"}, "limits": {"cpu": "1"}})
            )]))),
            "Burstable"
        );
        // One guaranteed container and one without resources.
        assert_eq!(
            qos_class(&with_resources(json!([
                c(json!({"requests": both, "limits": both})),
                {"name": "d", "image": "i"}
            ]))),
            "Burstable"
        );
        // Init containers count.
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {
            "containers": [c(json!({"requests": both, "limits": both}))],
            "initContainers": [{"name": "i", "image": "i",
                "resources": {"requests": {"cpu": "1"}}}]}}));
        assert_eq!(qos_class(&p), "Burstable");
    }

    fn summary() -> PodSummary {
        PodSummary::of(&pod(json!({
            "metadata": {"name": "p", "uid": "u"},
            "spec": {
                "containers": [{"name": "web", "image": "nginx:1"}, {"name": "app", "image": "app:2"}],
                "initContainers": [{"name": "setup", "image": "busybox"},
                    {"name": "proxy", "image": "envoy", "restartPolicy": "Always"}],
            },
            "status": {"phase": "Pending", "qosClass": "BestEffort", "conditions": [
                {"type": "PodScheduled", "status": "True",
                 "lastTransitionTime": "2025-01-01T00:00:00Z"}]},
        })))
    }

    #[test]
    fn summary_keeps_only_what_the_status_needs() {
        let s = summary();
        assert_eq!(
            s.containers,
            vec![
                ("web".to_string(), "nginx:1".to_string()),
                ("app".to_string(), "app:2".to_string())
            ]
        );
        assert_eq!(s.init_containers[1], ("proxy".into(), "envoy".into(), true));
        assert_eq!(s.qos_class, "BestEffort");
        assert_eq!(
            s.scheduled.as_ref().unwrap()["lastTransitionTime"],
            "2025-01-01T00:00:00Z"
        );
        assert!(!s.host_network);
        assert_eq!(s.start_time, None);
        // Without a qosClass in the status it is computed.
        let p = pod(json!({"metadata": {"name": "p"}, "spec": {"containers": [
            {"name": "c", "image": "i", "resources": {"limits": {"cpu": "1", "memory": "1Gi"},
                "requests": {"cpu": "1", "memory": "1Gi"}}}]}}));
        assert_eq!(PodSummary::of(&p).qos_class, "Guaranteed");
    }

    #[test]
    fn running_status_is_what_the_kubelet_writes() {
        let now = "2025-01-02T03:04:05Z";
        let st = running_status(
            &summary(),
            "u",
            "10.0.0.1".parse().unwrap(),
            "10.42.0.2".parse().unwrap(),
            now,
        );
        assert_eq!(st["phase"], "Running");
        let types: Vec<&str> = st["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["type"].as_str().unwrap())
            .collect();
        assert_eq!(
            types,
            [
                "PodReadyToStartContainers",
                "Initialized",
                "Ready",
                "ContainersReady",
                "PodScheduled"
            ]
        );
        assert!(
            st["conditions"]
                .as_array()
                .unwrap()
                .iter()
                .all(|c| c["status"] == "True")
        );
        assert_eq!(
            st["conditions"][4]["lastTransitionTime"],
            "2025-01-01T00:00:00Z"
        );
        assert_eq!(st["hostIP"], "10.0.0.1");
        assert_eq!(st["hostIPs"], json!([{"ip": "10.0.0.1"}]));
        assert_eq!(st["podIP"], "10.42.0.2");
        assert_eq!(st["podIPs"], json!([{"ip": "10.42.0.2"}]));
        assert_eq!(st["startTime"], now);
        assert_eq!(st["qosClass"], "BestEffort");
        let cs = st["containerStatuses"].as_array().unwrap();
        // Sorted by name.
        assert_eq!(cs[0]["name"], "app");
        assert_eq!(cs[1]["name"], "web");
        assert_eq!(cs[1]["state"]["running"]["startedAt"], now);
        assert_eq!(cs[1]["ready"], true);
        assert_eq!(cs[1]["started"], true);
        assert_eq!(cs[1]["restartCount"], 0);
        assert_eq!(cs[1]["image"], "nginx:1");
        assert_eq!(cs[1]["containerID"], "sim://u-web");
        let init = st["initContainerStatuses"].as_array().unwrap();
        assert_eq!(init[0]["name"], "setup");
        assert_eq!(init[0]["state"]["terminated"]["reason"], "Completed");
        assert_eq!(init[0]["state"]["terminated"]["exitCode"], 0);
        assert_eq!(init[0]["ready"], true);
        assert_eq!(init[1]["state"]["running"]["startedAt"], now);
        // It decodes as a PodStatus.
        serde_json::from_value::<k8s_openapi::api::core::v1::PodStatus>(st).unwrap();
        // No init containers: no initContainerStatuses.
        let mut s = summary();
        s.init_containers.clear();
        s.scheduled = None;
        let st = running_status(
            &s,
            "u",
            "10.0.0.1".parse().unwrap(),
            "10.0.0.1".parse().unwrap(),
            now,
        );
        assert!(st.get("initContainerStatuses").is_none());
        assert_eq!(st["conditions"][4]["lastTransitionTime"], now);
    }

    #[test]
    fn ip_pool_counts_up_skipping_network_gateway_and_broadcast() {
        let mut p = IpPool::new("10.42.1.0/24").unwrap();
        assert_eq!(p.allocate(), Some("10.42.1.2".parse().unwrap()));
        assert_eq!(p.allocate(), Some("10.42.1.3".parse().unwrap()));
        assert!(p.mark("10.42.1.4".parse().unwrap()));
        assert!(!p.mark("10.42.1.1".parse().unwrap()));
        assert!(!p.mark("10.42.2.4".parse().unwrap()));
        assert_eq!(p.allocate(), Some("10.42.1.5".parse().unwrap()));
        p.release("10.42.1.2".parse().unwrap());
        // The counter goes on; released addresses come back after the wrap.
        let rest: Vec<Ipv4Addr> = std::iter::from_fn(|| p.allocate()).collect();
        assert_eq!(rest.len(), 250);
        assert_eq!(rest[0], "10.42.1.6".parse::<Ipv4Addr>().unwrap());
        assert_eq!(
            rest[rest.len() - 2],
            "10.42.1.254".parse::<Ipv4Addr>().unwrap()
        );
        assert_eq!(
            rest[rest.len() - 1],
            "10.42.1.2".parse::<Ipv4Addr>().unwrap()
        );
        assert_eq!(p.in_use(), 253);
        assert_eq!(p.allocate(), None);
        p.release("10.42.1.100".parse().unwrap());
        assert_eq!(p.allocate(), Some("10.42.1.100".parse().unwrap()));
    }

    #[test]
    fn ip_pool_edges() {
        assert_eq!(
            IpPool::new("10.42.1.0/30").unwrap().allocate(),
            Some("10.42.1.2".parse().unwrap())
        );
        assert_eq!(IpPool::new("10.42.1.0/31").unwrap().allocate(), None);
        assert_eq!(IpPool::new("10.42.1.0/32").unwrap().allocate(), None);
        let p = IpPool::new("10.42.1.9/24").unwrap();
        assert!(p.contains("10.42.1.9".parse().unwrap()));
        assert_eq!(p.cidr(), "10.42.1.9/24");
        for bad in ["", "10.42.1.0", "10.42.1.0/33", "fd00::/64", "10.42.1.0/x"] {
            assert_eq!(IpPool::new(bad).unwrap_err(), InvalidCidr(bad.into()));
        }
    }
}
