//! Core kinds: services, endpoints, endpoint slices, nodes, namespaces, config maps,
//! secrets, service accounts, volumes and claims, resource quotas, component statuses.

use super::{AGE, Col, Ctx, NAME, Printer, Row, col, n, s, wide};
use crate::descriptions::*;
use crate::quantity;
use crate::selector::format_labels;
use crate::value::{
    at, int, is_present, is_set, list, map_entry, map_len, name, object, opt_int, opt_string,
    string,
};
use serde_json::Value;
use std::collections::BTreeSet;

const SERVICE_COLUMNS: &[Col] = &[
    NAME,
    col("Type", "string", SERVICE_SPEC_TYPE),
    col("Cluster-IP", "string", SERVICE_SPEC_CLUSTER_IP),
    col("External-IP", "string", SERVICE_SPEC_EXTERNAL_IPS),
    col("Port(s)", "string", SERVICE_SPEC_PORTS),
    AGE,
    wide("Selector", "string", SERVICE_SPEC_SELECTOR),
];

pub(crate) const SERVICE: Printer = Printer {
    columns: SERVICE_COLUMNS,
    row: service_row,
};

fn strings(v: &[Value]) -> Vec<&str> {
    v.iter().map(|x| x.as_str().unwrap_or("")).collect()
}

/// `loadBalancerStatusStringer` (wide: never truncated): ingress IPs, else hostnames, sorted
/// and de-duplicated.
fn load_balancer_ingress(obj: &Value) -> String {
    let set: BTreeSet<&str> = list(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .filter_map(|ing| {
            let ip = string(ing, &["ip"]);
            let host = string(ing, &["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn service_external_ip(obj: &Value, ty: &str) -> String {
    let external = strings(list(obj, &["spec", "externalIPs"]));
    match ty {
        "ClusterIP" | "NodePort" => {
            if external.is_empty() {
                "<none>".to_string()
            } else {
                external.join(",")
            }
        }
        "LoadBalancer" => {
            let lb = load_balancer_ingress(obj);
            if !external.is_empty() {
                let mut results: Vec<&str> = Vec::new();
                if !lb.is_empty() {
                    results.extend(lb.split(','));
                }
                results.extend(external);
                results.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".to_string()
            }
        }
        "ExternalName" => string(obj, &["spec", "externalName"]).to_string(),
        _ => "<unknown>".to_string(),
    }
}

/// `makePortString`: `80/TCP`, `80:30080/TCP` with a node port.
fn service_ports(obj: &Value) -> String {
    let pieces: Vec<String> = list(obj, &["spec", "ports"])
        .iter()
        .map(|p| {
            let port = int(p, &["port"]);
            // `protocol` is defaulted to TCP.
            let protocol = match string(p, &["protocol"]) {
                "" => "TCP",
                other => other,
            };
            let node_port = int(p, &["nodePort"]);
            if node_port > 0 {
                format!("{port}:{node_port}/{protocol}")
            } else {
                format!("{port}/{protocol}")
            }
        })
        .collect();
    pieces.join(",")
}

fn service_row(obj: &Value, ctx: &Ctx) -> Row {
    // `type` is defaulted to ClusterIP.
    let ty = match string(obj, &["spec", "type"]) {
        "" => "ClusterIP",
        other => other,
    };
    let cluster_ip = match string(obj, &["spec", "clusterIP"]) {
        "" => list(obj, &["spec", "clusterIPs"])
            .first()
            .and_then(Value::as_str)
            .unwrap_or("<none>"),
        ip => ip,
    };
    let ports = match service_ports(obj) {
        p if p.is_empty() => "<none>".to_string(),
        p => p,
    };
    vec![
        s(name(obj)),
        s(ty),
        s(cluster_ip),
        s(service_external_ip(obj, ty)),
        s(ports),
        s(ctx.age(obj)),
        s(format_labels(object(obj, &["spec", "selector"]))),
    ]
    .into()
}

const ENDPOINTS_COLUMNS: &[Col] = &[NAME, col("Endpoints", "string", ENDPOINTS_SUBSETS), AGE];

pub(crate) const ENDPOINTS: Printer = Printer {
    columns: ENDPOINTS_COLUMNS,
    row: endpoints_row,
};

/// `net.JoinHostPort`.
fn join_host_port(host: &str, port: i64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

const MAX_LISTED: usize = 3;

/// `formatEndpoints` with all ports: the first three `ip:port`, then `+ N more...`.
fn format_endpoints(obj: &Value) -> String {
    let subsets = list(obj, &["subsets"]);
    if subsets.is_empty() {
        return "<none>".to_string();
    }
    let mut listed: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = list(ss, &["addresses"]);
        let ports = list(ss, &["ports"]);
        if ports.is_empty() {
            count += addresses.len();
            for addr in addresses {
                if listed.len() == MAX_LISTED {
                    more = true;
                    break;
                }
                listed.push(string(addr, &["ip"]).to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for addr in addresses {
                if listed.len() == MAX_LISTED {
                    more = true;
                    break;
                }
                listed.push(join_host_port(string(addr, &["ip"]), int(port, &["port"])));
            }
        }
    }
    let joined = listed.join(",");
    if more {
        format!("{joined} + {} more...", count - MAX_LISTED)
    } else {
        joined
    }
}

fn endpoints_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![s(name(obj)), s(format_endpoints(obj)), s(ctx.age(obj))].into()
}

const ENDPOINT_SLICE_COLUMNS: &[Col] = &[
    NAME,
    col("AddressType", "string", ENDPOINT_SLICE_ADDRESS_TYPE),
    col("Ports", "string", ENDPOINT_SLICE_PORTS),
    col("Endpoints", "string", ENDPOINT_SLICE_ENDPOINTS),
    AGE,
];

pub(crate) const ENDPOINT_SLICE: Printer = Printer {
    columns: ENDPOINT_SLICE_COLUMNS,
    row: endpoint_slice_row,
};

/// `listWithMoreString`: `<unset>` when empty.
fn list_with_more(listed: &[String], more: bool, count: usize) -> String {
    let joined = listed.join(",");
    if more {
        return format!("{joined} + {} more...", count - MAX_LISTED);
    }
    if joined.is_empty() {
        return "<unset>".to_string();
    }
    joined
}

fn endpoint_slice_row(obj: &Value, ctx: &Ctx) -> Row {
    let mut ports = Vec::new();
    let mut more = false;
    let mut count = 0;
    for p in list(obj, &["ports"]) {
        if ports.len() < MAX_LISTED {
            let num = match (opt_int(p, &["port"]), opt_string(p, &["name"])) {
                (Some(port), _) => port.to_string(),
                (None, Some(name)) => name.to_string(),
                (None, None) => "*".to_string(),
            };
            ports.push(num);
        } else if ports.len() == MAX_LISTED {
            more = true;
        }
        count += 1;
    }
    let ports = list_with_more(&ports, more, count);

    let mut addresses = Vec::new();
    let mut more = false;
    let mut count = 0;
    for endpoint in list(obj, &["endpoints"]) {
        for address in list(endpoint, &["addresses"]) {
            if addresses.len() < MAX_LISTED {
                addresses.push(address.as_str().unwrap_or("").to_string());
            } else if addresses.len() == MAX_LISTED {
                more = true;
            }
            count += 1;
        }
    }
    let endpoints = list_with_more(&addresses, more, count);
    vec![
        s(name(obj)),
        s(string(obj, &["addressType"])),
        s(ports),
        s(endpoints),
        s(ctx.age(obj)),
    ]
    .into()
}

const NODE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the node"),
    col("Roles", "string", "The roles of the node"),
    AGE,
    col("Version", "string", NODE_SYSTEM_INFO_KUBELET_VERSION),
    wide("Internal-IP", "string", NODE_STATUS_ADDRESSES),
    wide("External-IP", "string", NODE_STATUS_ADDRESSES),
    wide("OS-Image", "string", NODE_SYSTEM_INFO_OS_IMAGE),
    wide("Kernel-Version", "string", NODE_SYSTEM_INFO_KERNEL_VERSION),
    wide(
        "Container-Runtime",
        "string",
        NODE_SYSTEM_INFO_CONTAINER_RUNTIME_VERSION,
    ),
];

pub(crate) const NODE: Printer = Printer {
    columns: NODE_COLUMNS,
    row: node_row,
};

const LABEL_NODE_ROLE_PREFIX: &str = "node-role.kubernetes.io/";
const NODE_LABEL_ROLE: &str = "kubernetes.io/role";

/// `findNodeRoles`: `node-role.kubernetes.io/<role>` labels and the `kubernetes.io/role`
/// label's value, sorted and de-duplicated.
fn node_roles(obj: &Value) -> String {
    let mut roles = BTreeSet::new();
    for (k, v) in object(obj, &["metadata", "labels"]).into_iter().flatten() {
        if let Some(role) = k.strip_prefix(LABEL_NODE_ROLE_PREFIX) {
            if !role.is_empty() {
                roles.insert(role);
            }
        } else if k == NODE_LABEL_ROLE
            && let Some(role) = v.as_str().filter(|r| !r.is_empty())
        {
            roles.insert(role);
        }
    }
    if roles.is_empty() {
        return "<none>".to_string();
    }
    roles.into_iter().collect::<Vec<_>>().join(",")
}

fn node_address<'a>(obj: &'a Value, ty: &str) -> &'a str {
    list(obj, &["status", "addresses"])
        .iter()
        .find(|a| string(a, &["type"]) == ty)
        .map_or("<none>", |a| string(a, &["address"]))
}

fn node_row(obj: &Value, ctx: &Ctx) -> Row {
    // The last Ready condition wins, as in upstream's map of conditions.
    let ready = list(obj, &["status", "conditions"])
        .iter()
        .rev()
        .find(|c| string(c, &["type"]) == "Ready");
    let mut status = vec![match ready {
        Some(c) if string(c, &["status"]) == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if crate::value::boolean(obj, &["spec", "unschedulable"]) {
        status.push("SchedulingDisabled");
    }
    let info = |field: &str| string(obj, &["status", "nodeInfo", field]);
    let or_unknown = |v: &str| {
        if v.is_empty() {
            "<unknown>".to_string()
        } else {
            v.to_string()
        }
    };
    vec![
        s(name(obj)),
        s(status.join(",")),
        s(node_roles(obj)),
        s(ctx.age(obj)),
        s(info("kubeletVersion")),
        s(node_address(obj, "InternalIP")),
        s(node_address(obj, "ExternalIP")),
        s(or_unknown(info("osImage"))),
        s(or_unknown(info("kernelVersion"))),
        s(or_unknown(info("containerRuntimeVersion"))),
    ]
    .into()
}

const NAMESPACE_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "The status of the namespace"),
    AGE,
];

pub(crate) const NAMESPACE: Printer = Printer {
    columns: NAMESPACE_COLUMNS,
    row: namespace_row,
};

fn namespace_row(obj: &Value, ctx: &Ctx) -> Row {
    // `status.phase` is defaulted to Active.
    let phase = match string(obj, &["status", "phase"]) {
        "" => "Active",
        other => other,
    };
    vec![s(name(obj)), s(phase), s(ctx.age(obj))].into()
}

const SECRET_COLUMNS: &[Col] = &[
    NAME,
    col("Type", "string", SECRET_TYPE),
    col("Data", "string", SECRET_DATA),
    AGE,
];

pub(crate) const SECRET: Printer = Printer {
    columns: SECRET_COLUMNS,
    row: secret_row,
};

fn secret_row(obj: &Value, ctx: &Ctx) -> Row {
    // `type` is defaulted to Opaque.
    let ty = match string(obj, &["type"]) {
        "" => "Opaque",
        other => other,
    };
    vec![
        s(name(obj)),
        s(ty),
        n(map_len(obj, &["data"])),
        s(ctx.age(obj)),
    ]
    .into()
}

const SERVICE_ACCOUNT_COLUMNS: &[Col] =
    &[NAME, col("Secrets", "string", SERVICE_ACCOUNT_SECRETS), AGE];

pub(crate) const SERVICE_ACCOUNT: Printer = Printer {
    columns: SERVICE_ACCOUNT_COLUMNS,
    row: service_account_row,
};

fn service_account_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        n(list(obj, &["secrets"]).len()),
        s(ctx.age(obj)),
    ]
    .into()
}

const CONFIG_MAP_COLUMNS: &[Col] = &[NAME, col("Data", "string", CONFIG_MAP_DATA), AGE];

pub(crate) const CONFIG_MAP: Printer = Printer {
    columns: CONFIG_MAP_COLUMNS,
    row: config_map_row,
};

fn config_map_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        n(map_len(obj, &["data"]) + map_len(obj, &["binaryData"])),
        s(ctx.age(obj)),
    ]
    .into()
}

/// `GetAccessModesAsString`: `RWO,ROX,RWX,RWOP`, in that order, de-duplicated.
fn access_modes(modes: &[Value]) -> String {
    let has = |m: &str| modes.iter().any(|v| v.as_str() == Some(m));
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(mode, _)| has(mode))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

const BETA_STORAGE_CLASS_ANNOTATION: &str = "volume.beta.kubernetes.io/storage-class";

fn beta_storage_class(obj: &Value) -> Option<&str> {
    map_entry(
        object(obj, &["metadata", "annotations"]),
        BETA_STORAGE_CLASS_ANNOTATION,
    )
}

/// The phase of a volume or claim: defaulted to Pending, `Terminating` while deleted.
fn volume_phase(obj: &Value) -> &str {
    if is_present(obj, &["metadata", "deletionTimestamp"]) {
        return "Terminating";
    }
    match string(obj, &["status", "phase"]) {
        "" => "Pending",
        other => other,
    }
}

/// `spec.volumeMode`, defaulted to Filesystem.
fn volume_mode(obj: &Value) -> &str {
    opt_string(obj, &["spec", "volumeMode"]).unwrap_or("Filesystem")
}

fn volume_attributes_class(obj: &Value) -> &str {
    opt_string(obj, &["spec", "volumeAttributesClassName"]).unwrap_or("<unset>")
}

const PERSISTENT_VOLUME_COLUMNS: &[Col] = &[
    NAME,
    col("Capacity", "string", PERSISTENT_VOLUME_SPEC_CAPACITY),
    col(
        "Access Modes",
        "string",
        PERSISTENT_VOLUME_SPEC_ACCESS_MODES,
    ),
    col(
        "Reclaim Policy",
        "string",
        PERSISTENT_VOLUME_SPEC_PERSISTENT_VOLUME_RECLAIM_POLICY,
    ),
    col("Status", "string", PERSISTENT_VOLUME_STATUS_PHASE),
    col("Claim", "string", PERSISTENT_VOLUME_SPEC_CLAIM_REF),
    col("StorageClass", "string", "StorageClass of the pv"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pv",
    ),
    col("Reason", "string", PERSISTENT_VOLUME_STATUS_REASON),
    AGE,
    wide("VolumeMode", "string", PERSISTENT_VOLUME_SPEC_VOLUME_MODE),
];

pub(crate) const PERSISTENT_VOLUME: Printer = Printer {
    columns: PERSISTENT_VOLUME_COLUMNS,
    row: persistent_volume_row,
};

fn persistent_volume_row(obj: &Value, ctx: &Ctx) -> Row {
    let claim = if is_set(obj, &["spec", "claimRef"]) {
        format!(
            "{}/{}",
            string(obj, &["spec", "claimRef", "namespace"]),
            string(obj, &["spec", "claimRef", "name"])
        )
    } else {
        String::new()
    };
    // `persistentVolumeReclaimPolicy` is defaulted to Retain.
    let reclaim = match string(obj, &["spec", "persistentVolumeReclaimPolicy"]) {
        "" => "Retain",
        other => other,
    };
    let class = beta_storage_class(obj).unwrap_or(string(obj, &["spec", "storageClassName"]));
    vec![
        s(name(obj)),
        s(quantity::format(at(obj, &["spec", "capacity", "storage"]))),
        s(access_modes(list(obj, &["spec", "accessModes"]))),
        s(reclaim),
        s(volume_phase(obj)),
        s(claim),
        s(class),
        s(volume_attributes_class(obj)),
        s(string(obj, &["status", "reason"])),
        s(ctx.age(obj)),
        s(volume_mode(obj)),
    ]
    .into()
}

const PERSISTENT_VOLUME_CLAIM_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", PERSISTENT_VOLUME_CLAIM_STATUS_PHASE),
    col("Volume", "string", PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_NAME),
    col(
        "Capacity",
        "string",
        PERSISTENT_VOLUME_CLAIM_STATUS_CAPACITY,
    ),
    col(
        "Access Modes",
        "string",
        PERSISTENT_VOLUME_CLAIM_STATUS_ACCESS_MODES,
    ),
    col("StorageClass", "string", "StorageClass of the pvc"),
    col(
        "VolumeAttributesClass",
        "string",
        "VolumeAttributesClass of the pvc",
    ),
    AGE,
    wide(
        "VolumeMode",
        "string",
        PERSISTENT_VOLUME_CLAIM_SPEC_VOLUME_MODE,
    ),
];

pub(crate) const PERSISTENT_VOLUME_CLAIM: Printer = Printer {
    columns: PERSISTENT_VOLUME_CLAIM_COLUMNS,
    row: persistent_volume_claim_row,
};

fn persistent_volume_claim_row(obj: &Value, ctx: &Ctx) -> Row {
    let volume = string(obj, &["spec", "volumeName"]);
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            quantity::format(at(obj, &["status", "capacity", "storage"])),
            access_modes(list(obj, &["status", "accessModes"])),
        )
    };
    let class = beta_storage_class(obj)
        .or_else(|| opt_string(obj, &["spec", "storageClassName"]))
        .unwrap_or("");
    vec![
        s(name(obj)),
        s(volume_phase(obj)),
        s(volume),
        s(capacity),
        s(modes),
        s(class),
        s(volume_attributes_class(obj)),
        s(ctx.age(obj)),
        s(volume_mode(obj)),
    ]
    .into()
}

const RESOURCE_QUOTA_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Request",
        "string",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    col(
        "Limit",
        "string",
        "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
    ),
    AGE,
];

pub(crate) const RESOURCE_QUOTA: Printer = Printer {
    columns: RESOURCE_QUOTA_COLUMNS,
    row: resource_quota_row,
};

fn resource_quota_row(obj: &Value, ctx: &Ctx) -> Row {
    let hard = object(obj, &["status", "hard"]);
    let used = object(obj, &["status", "used"]);
    let mut resources: Vec<&String> = hard.into_iter().flat_map(|m| m.keys()).collect();
    resources.sort_by(|a, b| a.as_bytes().cmp(b.as_bytes()));
    let mut requests: Vec<String> = Vec::new();
    let mut limits: Vec<String> = Vec::new();
    for resource in resources {
        let entry = format!(
            "{resource}: {}/{}",
            quantity::format(used.and_then(|m| m.get(resource.as_str()))),
            quantity::format(hard.and_then(|m| m.get(resource.as_str())))
        );
        let mut pieces = resource.split('.');
        let is_limit = pieces.next() == Some("limits") && pieces.next().is_some();
        if is_limit {
            limits.push(entry);
        } else {
            requests.push(entry);
        }
    }
    vec![
        s(name(obj)),
        s(requests.join(", ")),
        s(limits.join(", ")),
        s(ctx.age(obj)),
    ]
    .into()
}

const COMPONENT_STATUS_COLUMNS: &[Col] = &[
    NAME,
    col("Status", "string", "Status of the component conditions"),
    col("Message", "string", "Message of the component conditions"),
    col("Error", "string", "Error of the component conditions"),
];

pub(crate) const COMPONENT_STATUS: Printer = Printer {
    columns: COMPONENT_STATUS_COLUMNS,
    row: component_status_row,
};

fn component_status_row(obj: &Value, _ctx: &Ctx) -> Row {
    let healthy = list(obj, &["conditions"])
        .iter()
        .find(|c| string(c, &["type"]) == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => (
            if string(c, &["status"]) == "True" {
                "Healthy"
            } else {
                "Unhealthy"
            },
            string(c, &["message"]),
            string(c, &["error"]),
        ),
        None => ("Unknown", "", ""),
    };
    vec![s(name(obj)), s(status), s(message), s(error)].into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn host_ports() {
        assert_eq!(join_host_port("10.0.0.1", 80), "10.0.0.1:80");
        assert_eq!(join_host_port("fd00::1", 80), "[fd00::1]:80");
    }

    #[test]
    fn modes() {
        let m = [
            json!("ReadWriteMany"),
            json!("ReadWriteOnce"),
            json!("ReadWriteOnce"),
        ];
        assert_eq!(access_modes(&m), "RWO,RWX");
        assert_eq!(access_modes(&[]), "");
    }
}
