//! Pod admission (upstream's `lifecycle.predicateAdmitHandler` with the scheduler's
//! `noderesources` fit, `nodeports` and the OS checks): whether a new pod fits the node
//! next to the pods already admitted. Pure.

use k8s_openapi::api::core::v1::{Node, Pod};

use super::spec::{limit, request};

/// Why a pod was rejected: the status reason and message (the event and the pod's
/// `Pod was rejected: <message>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    pub reason: String,
    pub message: String,
}

/// What the node offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allocatable {
    pub cpu_milli: i64,
    pub memory: i64,
    pub pods: i64,
}

impl Allocatable {
    /// From the Node's `status.allocatable` (falling back to capacity, then `max_pods`
    /// and unlimited cpu/memory).
    pub fn of(node: Option<&Node>, max_pods: u32) -> Allocatable {
        let status = node.and_then(|n| n.status.as_ref());
        let get = |name: &str| {
            status
                .and_then(|s| s.allocatable.as_ref().or(s.capacity.as_ref()))
                .and_then(|m| m.get(name))
                .and_then(|q| api::kinds::validate::quantity::Quantity::parse(&q.0).ok())
        };
        Allocatable {
            cpu_milli: get("cpu").map_or(i64::MAX, |q| q.milli_value()),
            memory: get("memory").map_or(i64::MAX, |q| q.value()),
            pods: get("pods").map_or(i64::from(max_pods), |q| q.value()),
        }
    }
}

/// A pod's effective requests (`max(sum of containers, max of init containers)` plus
/// overhead): millicores and bytes.
pub fn pod_requests(pod: &Pod) -> (i64, i64) {
    let Some(spec) = pod.spec.as_ref() else {
        return (0, 0);
    };
    let req = |c, name| request(c, name).map_or(0, |q| q.milli_value());
    let (mut cpu, mut mem) = (0i64, 0i64);
    for c in &spec.containers {
        cpu = cpu.saturating_add(req(c, "cpu"));
        mem = mem.saturating_add(request(c, "memory").map_or(0, |q| q.value()));
    }
    for c in spec.init_containers.iter().flatten() {
        cpu = cpu.max(req(c, "cpu"));
        mem = mem.max(request(c, "memory").map_or(0, |q| q.value()));
    }
    for (name, q) in spec.overhead.iter().flatten() {
        if let Ok(q) = api::kinds::validate::quantity::Quantity::parse(&q.0) {
            match name.as_str() {
                "cpu" => cpu = cpu.saturating_add(q.milli_value()),
                "memory" => mem = mem.saturating_add(q.value()),
                _ => {}
            }
        }
    }
    let _ = limit;
    (cpu, mem)
}

fn host_ports(pod: &Pod) -> Vec<(String, String, i32)> {
    let mut out = Vec::new();
    let Some(spec) = pod.spec.as_ref() else {
        return out;
    };
    for c in spec
        .containers
        .iter()
        .chain(spec.init_containers.iter().flatten())
    {
        for p in c.ports.iter().flatten() {
            if let Some(hp) = p.host_port.filter(|h| *h > 0) {
                let ip = p
                    .host_ip
                    .clone()
                    .filter(|i| !i.is_empty())
                    .unwrap_or_else(|| "0.0.0.0".into());
                out.push((ip, p.protocol.clone().unwrap_or_else(|| "TCP".into()), hp));
            }
        }
    }
    out
}

fn ports_conflict(a: &(String, String, i32), b: &(String, String, i32)) -> bool {
    a.2 == b.2 && a.1 == b.1 && (a.0 == b.0 || a.0 == "0.0.0.0" || b.0 == "0.0.0.0")
}

/// `canAdmitPod`: the node's OS, resources, pod count and host ports.
pub fn admit(
    pod: &Pod,
    admitted: &[&Pod],
    node: Option<&Node>,
    alloc: Allocatable,
) -> Result<(), Rejection> {
    let spec = pod.spec.as_ref();
    if let Some(os) = spec.and_then(|s| s.os.as_ref())
        && os.name != "linux"
    {
        return Err(Rejection {
            reason: "PodOSNotSupported".into(),
            message: "Failed to admit pod as the OS field doesn't match node OS".into(),
        });
    }
    if let Some(sel) = spec.and_then(|s| s.node_selector.as_ref())
        && let Some(os) = sel.get("kubernetes.io/os")
    {
        let node_os = node
            .and_then(|n| n.metadata.labels.as_ref())
            .and_then(|l| l.get("kubernetes.io/os"))
            .map_or("linux", String::as_str);
        if os != node_os {
            return Err(Rejection {
                reason: "PodOSSelectorNodeLabelDoesNotMatch".into(),
                message:
                    "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label"
                        .into(),
            });
        }
    }
    let pods_used = i64::try_from(admitted.len()).unwrap_or(i64::MAX);
    if pods_used + 1 > alloc.pods {
        return Err(insufficient("pods", 1, pods_used, alloc.pods));
    }
    let (cpu, mem) = pod_requests(pod);
    let (mut used_cpu, mut used_mem) = (0i64, 0i64);
    for p in admitted {
        let (c, m) = pod_requests(p);
        used_cpu = used_cpu.saturating_add(c);
        used_mem = used_mem.saturating_add(m);
    }
    if cpu > 0 && used_cpu.saturating_add(cpu) > alloc.cpu_milli {
        return Err(insufficient("cpu", cpu, used_cpu, alloc.cpu_milli));
    }
    if mem > 0 && used_mem.saturating_add(mem) > alloc.memory {
        return Err(insufficient("memory", mem, used_mem, alloc.memory));
    }
    let mine = host_ports(pod);
    let theirs: Vec<_> = admitted.iter().flat_map(|p| host_ports(p)).collect();
    if mine
        .iter()
        .any(|a| theirs.iter().any(|b| ports_conflict(a, b)))
    {
        return Err(Rejection {
            reason: "NodePorts".into(),
            message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports".into(),
        });
    }
    Ok(())
}

fn insufficient(resource: &str, requested: i64, used: i64, capacity: i64) -> Rejection {
    Rejection {
        reason: format!("OutOf{resource}"),
        message: format!(
            "Node didn't have enough resource: {resource}, requested: {requested}, used: {used}, capacity: {capacity}"
        ),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(cpu: &str, mem: &str, host_port: Option<i32>) -> Pod {
        let mut c = json!({"name": "c", "resources": {"requests": {"cpu": cpu, "memory": mem}}});
        if let Some(hp) = host_port {
            c["ports"] = json!([{"containerPort": 80, "hostPort": hp}]);
        }
        serde_json::from_value(json!({"metadata": {"name": "p"}, "spec": {"containers": [c]}}))
            .unwrap()
    }

    fn alloc() -> Allocatable {
        Allocatable {
            cpu_milli: 1000,
            memory: 1 << 30,
            pods: 2,
        }
    }

    #[test]
    fn resources() {
        let big = pod("1500m", "1Mi", None);
        let r = admit(&big, &[], None, alloc()).unwrap_err();
        assert_eq!(r.reason, "OutOfcpu");
        assert_eq!(
            r.message,
            "Node didn't have enough resource: cpu, requested: 1500, used: 0, capacity: 1000"
        );
        let a = pod("600m", "512Mi", None);
        let b = pod("300m", "600Mi", None);
        let r = admit(&b, &[&a], None, alloc()).unwrap_err();
        assert_eq!(r.reason, "OutOfmemory");
        assert!(admit(&pod("300m", "100Mi", None), &[&a], None, alloc()).is_ok());
        let r = admit(&pod("1m", "1", None), &[&a, &a], None, alloc()).unwrap_err();
        assert_eq!(r.reason, "OutOfpods");
        assert_eq!(
            r.message,
            "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
        );
    }

    #[test]
    fn ports_and_os() {
        let a = pod("1m", "1", Some(8080));
        let r = admit(&pod("1m", "1", Some(8080)), &[&a], None, alloc()).unwrap_err();
        assert_eq!(r.reason, "NodePorts");
        assert!(admit(&pod("1m", "1", Some(8081)), &[&a], None, alloc()).is_ok());
        let mut w = pod("1m", "1", None);
        w.spec.as_mut().unwrap().os = Some(k8s_openapi::api::core::v1::PodOS {
            name: "windows".into(),
        });
        assert_eq!(
            admit(&w, &[], None, alloc()).unwrap_err().reason,
            "PodOSNotSupported"
        );
    }

    #[test]
    fn allocatable_from_node() {
        let n: Node = serde_json::from_value(
            json!({"status": {"allocatable": {"cpu": "2", "memory": "1Gi", "pods": "10"}}}),
        )
        .unwrap();
        assert_eq!(
            Allocatable::of(Some(&n), 110),
            Allocatable {
                cpu_milli: 2000,
                memory: 1 << 30,
                pods: 10
            }
        );
        assert_eq!(Allocatable::of(None, 110).pods, 110);
    }
}
