//! A container's environment, as upstream's `makeEnvironmentVariables`: `envFrom`
//! (ConfigMaps and Secrets, with prefix, invalid names skipped), then `env` (values with
//! `$(VAR)` expansion, `fieldRef`, `resourceFieldRef`, `configMapKeyRef`,
//! `secretKeyRef`), then the service environment variables (`getServiceEnvVarMap`,
//! `envvars.FromServices`) for names not already set. Pure: the caller fetches the
//! referenced objects first ([`references`]).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use api::kinds::validate::quantity::Quantity;
use k8s_openapi::api::core::v1::{ConfigMap, Container, Pod, Secret, Service};

use super::spec::{expand, limit, pod_name, pod_namespace, pod_uid, request};

/// The objects a container's environment names: ConfigMap and Secret names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct References {
    pub config_maps: BTreeSet<String>,
    pub secrets: BTreeSet<String>,
}

/// The ConfigMaps and Secrets `c`'s environment reads.
pub fn references(c: &Container) -> References {
    let mut r = References::default();
    for from in c.env_from.iter().flatten() {
        if let Some(cm) = &from.config_map_ref {
            r.config_maps.insert(cm.name.clone());
        }
        if let Some(s) = &from.secret_ref {
            r.secrets.insert(s.name.clone());
        }
    }
    for e in c.env.iter().flatten() {
        if let Some(vf) = &e.value_from {
            if let Some(k) = &vf.config_map_key_ref {
                r.config_maps.insert(k.name.clone());
            }
            if let Some(k) = &vf.secret_key_ref {
                r.secrets.insert(k.name.clone());
            }
        }
    }
    r
}

/// What the environment is computed from besides the pod and container.
#[derive(Debug, Clone, Default)]
pub struct EnvInputs<'a> {
    /// Fetched ConfigMaps of the pod's namespace (absent: not found).
    pub config_maps: HashMap<String, ConfigMap>,
    pub secrets: HashMap<String, Secret>,
    /// Every Service the kubelet knows (all namespaces).
    pub services: &'a [Service],
    pub pod_ips: Vec<String>,
    pub host_ips: Vec<String>,
    /// Node allocatable cpu (millicores) and memory (bytes), the default of
    /// `resourceFieldRef` limits.
    pub node_cpu_milli: i64,
    pub node_memory: i64,
}

/// The environment, or a `CreateContainerConfigError` message.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environment {
    pub vars: Vec<(String, String)>,
    /// Warnings to record (`InvalidEnvironmentVariableNames`).
    pub warnings: Vec<String>,
}

/// `IsEnvVarName`: `[-._a-zA-Z][-._a-zA-Z0-9]*`.
pub fn is_env_var_name(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_ascii_alphabetic() || matches!(c, '-' | '.' | '_') => {}
        _ => return false,
    }
    chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_'))
}

fn env_var_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

fn is_ip_set(s: &Service) -> bool {
    s.spec
        .as_ref()
        .and_then(|s| s.cluster_ip.as_deref())
        .is_some_and(|ip| !ip.is_empty() && ip != "None")
}

fn join_host_port(host: &str, port: i32) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `envvars.FromServices` for one service.
pub fn service_env(service: &Service) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let Some(spec) = service.spec.as_ref() else {
        return out;
    };
    let ports = spec.ports.as_deref().unwrap_or(&[]);
    let ip = spec.cluster_ip.clone().unwrap_or_default();
    let prefix = env_var_name(service.metadata.name.as_deref().unwrap_or_default());
    out.push((format!("{prefix}_SERVICE_HOST"), ip.clone()));
    let port_name = format!("{prefix}_SERVICE_PORT");
    if let Some(first) = ports.first() {
        out.push((port_name.clone(), first.port.to_string()));
    }
    for p in ports {
        if let Some(n) = p.name.as_deref().filter(|n| !n.is_empty()) {
            out.push((
                format!("{port_name}_{}", env_var_name(n)),
                p.port.to_string(),
            ));
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let proto = p.protocol.as_deref().unwrap_or("TCP");
        let lower = proto.to_lowercase();
        let url = format!("{lower}://{}", join_host_port(&ip, p.port));
        if i == 0 {
            out.push((format!("{prefix}_PORT"), url.clone()));
        }
        let pp = format!("{prefix}_PORT_{}_{}", p.port, proto.to_uppercase());
        out.push((pp.clone(), url));
        out.push((format!("{pp}_PROTO"), lower));
        out.push((format!("{pp}_PORT"), p.port.to_string()));
        out.push((format!("{pp}_ADDR"), ip.clone()));
    }
    out
}

/// `getServiceEnvVarMap`: the `kubernetes` service of `default` always, the services of
/// `namespace` when service links are on.
pub fn service_env_map(
    services: &[Service],
    namespace: &str,
    enable_service_links: bool,
) -> BTreeMap<String, String> {
    let mut chosen: BTreeMap<String, &Service> = BTreeMap::new();
    for s in services {
        if !is_ip_set(s) {
            continue;
        }
        let name = s.metadata.name.clone().unwrap_or_default();
        let ns = s.metadata.namespace.as_deref().unwrap_or_default();
        if ns == "default" && name == "kubernetes" {
            chosen.entry(name).or_insert(s);
        } else if ns == namespace && enable_service_links {
            chosen.insert(name, s);
        }
    }
    let mut m = BTreeMap::new();
    for s in chosen.values() {
        for (k, v) in service_env(s) {
            m.insert(k, v);
        }
    }
    m
}

/// Formats a map as the downward API does (`key="value"` lines, sorted, escaped).
fn format_map(m: Option<&BTreeMap<String, String>>) -> String {
    let mut lines = Vec::new();
    for (k, v) in m.into_iter().flatten() {
        let escaped = v
            .replace('\\', "\\\\")
            .replace('\n', "\\n")
            .replace('"', "\\\"");
        lines.push(format!("{k}=\"{escaped}\""));
    }
    lines.join("\n")
}

/// `ExtractFieldPathAsString` and the kubelet's own fields (`podFieldSelectorRuntimeValue`).
pub fn field_value(
    pod: &Pod,
    path: &str,
    pod_ips: &[String],
    host_ips: &[String],
) -> Result<String, String> {
    let spec = pod.spec.as_ref();
    let subscript = |prefix: &str| -> Option<String> {
        let rest = path.strip_prefix(prefix)?.strip_prefix("['")?;
        rest.strip_suffix("']").map(str::to_string)
    };
    Ok(match path {
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()).unwrap_or_default(),
        "spec.serviceAccountName" => spec
            .and_then(|s| s.service_account_name.clone())
            .unwrap_or_default(),
        "status.hostIP" => host_ips.first().cloned().unwrap_or_default(),
        "status.hostIPs" => host_ips.join(","),
        "status.podIP" => pod_ips.first().cloned().unwrap_or_default(),
        "status.podIPs" => pod_ips.join(","),
        "metadata.name" => pod_name(pod).to_string(),
        "metadata.namespace" => pod_namespace(pod).to_string(),
        "metadata.uid" => pod_uid(pod).to_string(),
        "metadata.labels" => format_map(pod.metadata.labels.as_ref()),
        "metadata.annotations" => format_map(pod.metadata.annotations.as_ref()),
        _ => {
            if let Some(k) = subscript("metadata.labels") {
                pod.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get(&k).cloned())
                    .unwrap_or_default()
            } else if let Some(k) = subscript("metadata.annotations") {
                pod.metadata
                    .annotations
                    .as_ref()
                    .and_then(|l| l.get(&k).cloned())
                    .unwrap_or_default()
            } else {
                return Err(format!("unsupported fieldPath: {path}"));
            }
        }
    })
}

/// `containerResourceRuntimeValue`: limits default to the node's allocatable; values are
/// rounded up to the divisor.
pub fn resource_value(
    c: &Container,
    resource: &str,
    divisor: Option<&str>,
    node_cpu_milli: i64,
    node_memory: i64,
) -> Result<String, String> {
    let divisor = match divisor.filter(|d| !d.is_empty()) {
        Some(d) => Quantity::parse(d).map_err(|e| format!("invalid divisor {d:?}: {e}"))?,
        None => Quantity::from_int(1),
    };
    let ceil_div = |a: i64, b: i64| -> i64 {
        if b <= 0 {
            return 0;
        }
        (a + b - 1).div_euclid(b)
    };
    match resource {
        "limits.cpu" => {
            let v = limit(c, "cpu").map_or(node_cpu_milli, |q| q.milli_value());
            Ok(ceil_div(v, divisor.milli_value()).to_string())
        }
        "requests.cpu" => {
            let v = request(c, "cpu").map_or(0, |q| q.milli_value());
            Ok(ceil_div(v, divisor.milli_value()).to_string())
        }
        "limits.memory" => {
            let v = limit(c, "memory").map_or(node_memory, |q| q.value());
            Ok(ceil_div(v, divisor.value()).to_string())
        }
        "requests.memory" => {
            let v = request(c, "memory").map_or(0, |q| q.value());
            Ok(ceil_div(v, divisor.value()).to_string())
        }
        "limits.ephemeral-storage" | "requests.ephemeral-storage" => {
            let v = if resource.starts_with("limits") {
                limit(c, "ephemeral-storage")
            } else {
                request(c, "ephemeral-storage")
            }
            .map_or(0, |q| q.value());
            Ok(ceil_div(v, divisor.value()).to_string())
        }
        other => Err(format!("unsupported container resource : {other}")),
    }
}

/// An insertion-ordered map of names to values (a later set keeps the first position).
#[derive(Default)]
struct Ordered {
    order: Vec<String>,
    values: HashMap<String, String>,
}

impl Ordered {
    fn set(&mut self, k: String, v: String) {
        if !self.values.contains_key(&k) {
            self.order.push(k.clone());
        }
        self.values.insert(k, v);
    }
    fn into_vec(mut self) -> Vec<(String, String)> {
        self.order
            .into_iter()
            .filter_map(|k| self.values.remove(&k).map(|v| (k, v)))
            .collect()
    }
}

fn bytes_to_string(b: &k8s_openapi::ByteString) -> String {
    String::from_utf8_lossy(&b.0).into_owned()
}

/// `makeEnvironmentVariables`; the error is the `CreateContainerConfigError` message.
pub fn make_environment(
    pod: &Pod,
    c: &Container,
    inputs: &EnvInputs<'_>,
) -> Result<Environment, String> {
    let ns = pod_namespace(pod);
    let links = pod
        .spec
        .as_ref()
        .and_then(|s| s.enable_service_links)
        .unwrap_or(true);
    let service_env = service_env_map(inputs.services, ns, links);
    let mut env = Ordered::default();
    let mut warnings = Vec::new();
    for from in c.env_from.iter().flatten() {
        let prefix = from.prefix.clone().unwrap_or_default();
        if let Some(r) = &from.config_map_ref {
            let Some(cm) = inputs.config_maps.get(&r.name) else {
                if r.optional == Some(true) {
                    continue;
                }
                return Err(format!("configmap \"{}\" not found", r.name));
            };
            let mut invalid = Vec::new();
            for (k, v) in cm.data.iter().flatten() {
                let key = format!("{prefix}{k}");
                if !is_env_var_name(&key) {
                    invalid.push(key);
                    continue;
                }
                env.set(key, v.clone());
            }
            if !invalid.is_empty() {
                invalid.sort();
                warnings.push(format!(
                    "Keys [{}] from the EnvFrom configMap {ns}/{} were skipped since they are considered invalid environment variable names.",
                    invalid.join(", "),
                    r.name
                ));
            }
        }
        if let Some(r) = &from.secret_ref {
            let Some(s) = inputs.secrets.get(&r.name) else {
                if r.optional == Some(true) {
                    continue;
                }
                return Err(format!("secret \"{}\" not found", r.name));
            };
            let mut invalid = Vec::new();
            for (k, v) in s.data.iter().flatten() {
                let key = format!("{prefix}{k}");
                if !is_env_var_name(&key) {
                    invalid.push(key);
                    continue;
                }
                env.set(key, bytes_to_string(v));
            }
            if !invalid.is_empty() {
                invalid.sort();
                warnings.push(format!(
                    "Keys [{}] from the EnvFrom secret {ns}/{} were skipped since they are considered invalid environment variable names.",
                    invalid.join(", "),
                    r.name
                ));
            }
        }
    }
    for e in c.env.iter().flatten() {
        let mut value = e.value.clone().unwrap_or_default();
        if !value.is_empty() {
            let lookup = |name: &str| {
                env.values
                    .get(name)
                    .cloned()
                    .or_else(|| service_env.get(name).cloned())
            };
            value = expand(&value, &lookup);
        } else if let Some(vf) = &e.value_from {
            if let Some(f) = &vf.field_ref {
                value = field_value(pod, &f.field_path, &inputs.pod_ips, &inputs.host_ips)?;
            } else if let Some(r) = &vf.resource_field_ref {
                let target = match r.container_name.as_deref().filter(|n| !n.is_empty()) {
                    Some(name) => pod
                        .spec
                        .as_ref()
                        .and_then(|s| {
                            s.containers
                                .iter()
                                .chain(s.init_containers.iter().flatten())
                                .find(|x| x.name == name)
                        })
                        .unwrap_or(c),
                    None => c,
                };
                value = resource_value(
                    target,
                    &r.resource,
                    r.divisor.as_ref().map(|d| d.0.as_str()),
                    inputs.node_cpu_milli,
                    inputs.node_memory,
                )?;
            } else if let Some(r) = &vf.config_map_key_ref {
                let optional = r.optional == Some(true);
                match inputs.config_maps.get(&r.name) {
                    None if optional => continue,
                    None => return Err(format!("configmap \"{}\" not found", r.name)),
                    Some(cm) => match cm.data.as_ref().and_then(|d| d.get(&r.key)) {
                        Some(v) => value = v.clone(),
                        None if optional => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in ConfigMap {ns}/{}",
                                r.key, r.name
                            ));
                        }
                    },
                }
            } else if let Some(r) = &vf.secret_key_ref {
                let optional = r.optional == Some(true);
                match inputs.secrets.get(&r.name) {
                    None if optional => continue,
                    None => return Err(format!("secret \"{}\" not found", r.name)),
                    Some(s) => match s.data.as_ref().and_then(|d| d.get(&r.key)) {
                        Some(v) => value = bytes_to_string(v),
                        None if optional => continue,
                        None => {
                            return Err(format!(
                                "couldn't find key {} in Secret {ns}/{}",
                                r.key, r.name
                            ));
                        }
                    },
                }
            }
        }
        env.set(e.name.clone(), value);
    }
    for (k, v) in service_env {
        if !env.values.contains_key(&k) {
            env.set(k, v);
        }
    }
    Ok(Environment {
        vars: env.into_vec(),
        warnings,
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;
    use serde_json::json;

    fn svc(ns: &str, name: &str, ip: &str, ports: serde_json::Value) -> Service {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "spec": {"clusterIP": ip, "ports": ports}
        }))
        .unwrap()
    }

    fn get<'a>(vars: &'a [(String, String)], k: &str) -> Option<&'a str> {
        vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn service_variables_as_upstream() {
        let s = svc(
            "ns",
            "my-svc",
            "10.0.0.5",
            json!([{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "dns", "port": 53, "protocol": "UDP"}]),
        );
        let vars = service_env(&s);
        let want = [
            ("MY_SVC_SERVICE_HOST", "10.0.0.5"),
            ("MY_SVC_SERVICE_PORT", "80"),
            ("MY_SVC_SERVICE_PORT_HTTP", "80"),
            ("MY_SVC_SERVICE_PORT_DNS", "53"),
            ("MY_SVC_PORT", "tcp://10.0.0.5:80"),
            ("MY_SVC_PORT_80_TCP", "tcp://10.0.0.5:80"),
            ("MY_SVC_PORT_80_TCP_PROTO", "tcp"),
            ("MY_SVC_PORT_80_TCP_PORT", "80"),
            ("MY_SVC_PORT_80_TCP_ADDR", "10.0.0.5"),
            ("MY_SVC_PORT_53_UDP", "udp://10.0.0.5:53"),
            ("MY_SVC_PORT_53_UDP_PROTO", "udp"),
            ("MY_SVC_PORT_53_UDP_PORT", "53"),
            ("MY_SVC_PORT_53_UDP_ADDR", "10.0.0.5"),
        ];
        let got: Vec<(&str, &str)> = vars.iter().map(|(a, b)| (a.as_str(), b.as_str())).collect();
        assert_eq!(got, want);
    }

    #[test]
    fn service_links_and_the_kubernetes_service() {
        let services = vec![
            svc(
                "default",
                "kubernetes",
                "10.43.0.1",
                json!([{"name": "https", "port": 443}]),
            ),
            svc("ns", "db", "10.43.0.9", json!([{"port": 5432}])),
            svc("ns", "headless", "None", json!([{"port": 1}])),
            svc("other", "x", "10.43.0.7", json!([{"port": 1}])),
        ];
        let m = service_env_map(&services, "ns", true);
        assert_eq!(m["KUBERNETES_SERVICE_HOST"], "10.43.0.1");
        assert_eq!(m["KUBERNETES_SERVICE_PORT_HTTPS"], "443");
        assert_eq!(m["DB_SERVICE_HOST"], "10.43.0.9");
        assert!(!m.contains_key("HEADLESS_SERVICE_HOST"));
        assert!(!m.contains_key("X_SERVICE_HOST"));
        let m = service_env_map(&services, "ns", false);
        assert!(m.contains_key("KUBERNETES_SERVICE_HOST"));
        assert!(!m.contains_key("DB_SERVICE_HOST"));
    }

    #[test]
    fn full_environment() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "x", "b": "q\""}},
            "spec": {"nodeName": "n1", "serviceAccountName": "sa", "containers": [{
                "name": "c",
                "resources": {"limits": {"memory": "64Mi"}, "requests": {"cpu": "250m"}},
                "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "CM_"},
                            {"secretRef": {"name": "missing", "optional": true}}],
                "env": [
                    {"name": "A", "value": "a"},
                    {"name": "B", "value": "$(A)-$(CM_k)-$(DB_SERVICE_HOST)-$(NOPE)"},
                    {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                    {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
                    {"name": "LABELS", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels"}}},
                    {"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                    {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                    {"name": "HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
                    {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                    {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "requests.cpu", "divisor": "1m"}}},
                    {"name": "CPULIM", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
                    {"name": "PASS", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                    {"name": "OPT", "valueFrom": {"secretKeyRef": {"name": "s", "key": "none", "optional": true}}},
                    {"name": "DB_SERVICE_HOST", "value": "mine"},
                ],
            }]}
        }))
        .unwrap();
        let cm: ConfigMap = serde_json::from_value(
            json!({"metadata": {"name": "cm"}, "data": {"k": "v", "bad key": "x"}}),
        )
        .unwrap();
        let s: Secret =
            serde_json::from_value(json!({"metadata": {"name": "s"}, "data": {"pw": "c2VjcmV0"}}))
                .unwrap();
        let services = vec![svc("ns", "db", "10.43.0.9", json!([{"port": 5432}]))];
        let inputs = EnvInputs {
            config_maps: [("cm".to_string(), cm)].into(),
            secrets: [("s".to_string(), s)].into(),
            services: &services,
            pod_ips: vec!["10.88.0.2".into()],
            host_ips: vec!["192.168.1.1".into()],
            node_cpu_milli: 2000,
            node_memory: 1 << 30,
        };
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let env = make_environment(&pod, c, &inputs).unwrap();
        let v = &env.vars;
        assert_eq!(get(v, "CM_k"), Some("v"));
        assert_eq!(get(v, "B"), Some("a-v-10.43.0.9-$(NOPE)"));
        assert_eq!(get(v, "NAME"), Some("p"));
        assert_eq!(get(v, "APP"), Some("x"));
        assert_eq!(get(v, "LABELS"), Some("app=\"x\"\nb=\"q\\\"\""));
        assert_eq!(get(v, "NODE"), Some("n1"));
        assert_eq!(get(v, "IP"), Some("10.88.0.2"));
        assert_eq!(get(v, "HOST"), Some("192.168.1.1"));
        assert_eq!(get(v, "MEM"), Some("64"));
        assert_eq!(get(v, "CPU"), Some("250"));
        assert_eq!(get(v, "CPULIM"), Some("2"));
        assert_eq!(get(v, "PASS"), Some("secret"));
        assert_eq!(get(v, "OPT"), None);
        // Explicit variables win over service ones.
        assert_eq!(get(v, "DB_SERVICE_HOST"), Some("mine"));
        assert_eq!(get(v, "DB_SERVICE_PORT"), Some("5432"));
        assert_eq!(env.warnings.len(), 1);
        assert!(
            env.warnings[0].contains("[CM_bad key]"),
            "{:?}",
            env.warnings
        );
        // Order: envFrom, env, services.
        assert_eq!(v[0].0, "CM_k");
    }

    #[test]
    fn missing_references_are_config_errors() {
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "env": [
                {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "k"}}}]}]}
        }))
        .unwrap();
        let c = &pod.spec.as_ref().unwrap().containers[0];
        let err = make_environment(&pod, c, &EnvInputs::default()).unwrap_err();
        assert_eq!(err, "configmap \"cm\" not found");
        let cm: ConfigMap =
            serde_json::from_value(json!({"metadata": {"name": "cm"}, "data": {}})).unwrap();
        let inputs = EnvInputs {
            config_maps: [("cm".to_string(), cm)].into(),
            ..Default::default()
        };
        let err = make_environment(&pod, c, &inputs).unwrap_err();
        assert_eq!(err, "couldn't find key k in ConfigMap ns/cm");
        assert_eq!(references(c).config_maps.len(), 1);
    }
}
