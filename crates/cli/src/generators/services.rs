//! `create service clusterip|nodeport|loadbalancer|externalname` and `expose`'s Service
//! (with the selector, ports and protocols taken from the exposed object as kubectl's
//! `polymorphichelpers` do).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{object_meta, string_map};
use crate::error::{CliError, Result};
use crate::validate::{atoi, parse_labels};

/// A `targetPort` (IntOrString) from text: a number when it parses, else a name.
fn int_or_string(s: &str) -> Value {
    match s.parse::<i64>() {
        Ok(n) if i32::try_from(n).is_ok() => json!(n),
        _ => json!(s),
    }
}

/// `create service`'s `--tcp` pair `port[:targetPort]`.
pub fn parse_tcp(pair: &str) -> Result<(i64, Value)> {
    let parts: Vec<&str> = pair.split(':').collect();
    let port_text = parts[0];
    let port = match port_text.parse::<i64>() {
        Ok(p) if (0..=65535).contains(&p) => p,
        Ok(_) => {
            return Err(CliError::msg(format!(
                "port \"{port_text}\" out of range (must be 0-65535)"
            )));
        }
        Err(_) => {
            return Err(CliError::msg(format!(
                "strconv.ParseUint: parsing \"{port_text}\": invalid syntax"
            )));
        }
    };
    if parts.len() == 1 {
        return Ok((port, json!(port)));
    }
    let target = parts[1];
    match target.parse::<i64>() {
        Ok(n) => {
            let errs = api::validation::names::is_valid_port_num(n);
            if !errs.is_empty() {
                return Err(CliError::msg(errs.join(",")));
            }
            Ok((port, json!(n)))
        }
        Err(_) => {
            let errs = api::validation::names::is_valid_port_name(target);
            if !errs.is_empty() {
                return Err(CliError::msg(errs.join(",")));
            }
            Ok((port, json!(target)))
        }
    }
}

/// `create service <type>`'s options.
#[derive(Debug, Clone, Default)]
pub struct CreateService {
    pub name: String,
    /// `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName`.
    pub service_type: String,
    pub tcp: Vec<String>,
    pub cluster_ip: String,
    pub node_port: i64,
    pub external_name: String,
}

impl CreateService {
    /// kubectl's `ServiceOptions.Validate`.
    pub fn validate(&self) -> Result<()> {
        if self.cluster_ip == "None" && self.service_type != "ClusterIP" {
            return Err(CliError::msg(
                "ClusterIP=None can only be used with ClusterIP service type",
            ));
        }
        if self.cluster_ip != "None" && self.tcp.is_empty() && self.service_type != "ExternalName" {
            return Err(CliError::msg(
                "at least one tcp port specifier must be provided",
            ));
        }
        if self.service_type == "ExternalName"
            && !api::validation::names::is_dns1123_subdomain(&self.external_name).is_empty()
        {
            return Err(CliError::msg(format!(
                "invalid service external name {}",
                self.external_name
            )));
        }
        Ok(())
    }

    pub fn generate(&self) -> Result<Value> {
        let mut ports = Vec::new();
        for pair in &self.tcp {
            let (port, target) = parse_tcp(pair)?;
            let mut p = json!({
                "name": pair.replace(':', "-"),
                "protocol": "TCP",
                "port": port,
                "targetPort": target,
            });
            if self.node_port != 0 {
                p["nodePort"] = json!(self.node_port);
            }
            ports.push(p);
        }
        let labels = BTreeMap::from([("app".to_string(), self.name.clone())]);
        let mut spec = json!({"selector": string_map(&labels), "type": self.service_type});
        if !ports.is_empty() {
            spec["ports"] = Value::Array(ports);
        }
        if !self.cluster_ip.is_empty() {
            spec["clusterIP"] = json!(self.cluster_ip);
        }
        if !self.external_name.is_empty() {
            spec["externalName"] = json!(self.external_name);
        }
        Ok(json!({
            "kind": "Service",
            "apiVersion": "v1",
            "metadata": object_meta(&self.name, Some(&labels), None),
            "spec": spec,
            "status": {"loadBalancer": {}},
        }))
    }
}

/// `expose`'s options (kubectl's `ExposeServiceOptions` after introspection).
#[derive(Debug, Clone, Default)]
pub struct Expose {
    pub name: String,
    pub default_name: String,
    pub selector: String,
    pub labels: String,
    pub port: String,
    /// Several ports (`a,b`) found by introspection.
    pub ports: String,
    pub protocol: String,
    /// `port/protocol,…` found by introspection.
    pub protocols: String,
    pub target_port: String,
    pub external_ip: String,
    pub service_type: String,
    pub load_balancer_ip: String,
    pub session_affinity: String,
    pub cluster_ip: String,
}

fn parse_protocols(s: &str) -> Result<BTreeMap<String, Vec<String>>> {
    let mut m: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for item in s.split(',') {
        let parts: Vec<&str> = item.split('/').collect();
        if parts.len() != 2 {
            return Err(CliError::msg(format!(
                "unexpected port protocol mapping: {item}"
            )));
        }
        if parts[0].is_empty() {
            return Err(CliError::msg("unexpected empty port"));
        }
        if parts[1].is_empty() {
            return Err(CliError::msg("unexpected empty protocol"));
        }
        m.entry(parts[0].to_string())
            .or_default()
            .push(parts[1].to_string());
    }
    Ok(m)
}

impl Expose {
    /// kubectl's `ExposeServiceOptions.createService`.
    pub fn generate(&self) -> Result<Value> {
        if self.selector.is_empty() {
            return Err(CliError::msg("selector must be specified"));
        }
        let selector = parse_labels(&self.selector)?;
        let labels = if self.labels.is_empty() {
            BTreeMap::new()
        } else {
            parse_labels(&self.labels)?
        };
        let name = if self.name.is_empty() {
            &self.default_name
        } else {
            &self.name
        };
        if name.is_empty() {
            return Err(CliError::msg("name must be specified"));
        }
        let protocols = if self.protocols.is_empty() {
            BTreeMap::new()
        } else {
            parse_protocols(&self.protocols)?
        };
        let port_string = if self.ports.is_empty() {
            &self.port
        } else {
            &self.ports
        };
        let mut ports = Vec::new();
        if !port_string.is_empty() {
            let list: Vec<&str> = port_string.split(',').collect();
            for (i, p) in list.iter().enumerate() {
                let port = atoi(p)?;
                let port_name = if list.len() > 1 {
                    format!("port-{}", i + 1)
                } else {
                    String::new()
                };
                let mut protocol = self.protocol.clone();
                if protocol.is_empty() {
                    protocol = "TCP".into();
                    if let Some(found) = protocols.get(*p) {
                        if found.len() == 1 {
                            protocol = found[0].clone();
                        } else {
                            for proto in found {
                                ports.push(json!({
                                    "name": format!("port-{}-{}", i + 1, proto.to_lowercase()),
                                    "protocol": proto,
                                    "port": port,
                                }));
                            }
                            continue;
                        }
                    }
                }
                let mut sp = json!({"protocol": protocol, "port": port});
                if !port_name.is_empty() {
                    sp["name"] = json!(port_name);
                }
                ports.push(sp);
            }
        }
        for p in &mut ports {
            p["targetPort"] = if self.target_port.is_empty() {
                p["port"].clone()
            } else {
                int_or_string(&self.target_port)
            };
        }
        let mut spec = json!({"selector": string_map(&selector)});
        if !ports.is_empty() {
            spec["ports"] = Value::Array(ports);
        }
        if !self.external_ip.is_empty() {
            spec["externalIPs"] = json!([self.external_ip]);
        }
        if !self.service_type.is_empty() {
            spec["type"] = json!(self.service_type);
        }
        if self.service_type == "LoadBalancer" && !self.load_balancer_ip.is_empty() {
            spec["loadBalancerIP"] = json!(self.load_balancer_ip);
        }
        match self.session_affinity.as_str() {
            "" => {}
            "None" | "ClientIP" => spec["sessionAffinity"] = json!(self.session_affinity),
            other => {
                return Err(CliError::msg(format!("unknown session affinity: {other}")));
            }
        }
        if !self.cluster_ip.is_empty() {
            spec["clusterIP"] = json!(self.cluster_ip);
        }
        Ok(json!({
            "kind": "Service",
            "apiVersion": "v1",
            "metadata": object_meta(name, Some(&labels), None),
            "spec": spec,
            "status": {"loadBalancer": {}},
        }))
    }
}

/// `polymorphichelpers.CanBeExposed`: the kinds `expose` accepts.
pub fn can_be_exposed(group: &str, kind: &str) -> Result<()> {
    match (group, kind) {
        ("", "ReplicationController" | "Service" | "Pod")
        | ("apps" | "extensions", "Deployment" | "ReplicaSet") => Ok(()),
        _ if group.is_empty() => Err(CliError::msg(format!("cannot expose a {kind}"))),
        _ => Err(CliError::msg(format!("cannot expose a {kind}.{group}"))),
    }
}

fn label_string(m: &serde_json::Map<String, Value>) -> String {
    m.iter()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect::<Vec<_>>()
        .join(",")
}

/// `polymorphichelpers.MapBasedSelectorForObject`: the `k=v,…` selector of the exposed
/// object.
pub fn selector_for(obj: &Value) -> Result<String> {
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or_default();
    let empty = serde_json::Map::new();
    match kind {
        "Pod" => {
            let labels = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if labels.is_empty() {
                return Err(CliError::msg("the pod has no labels and cannot be exposed"));
            }
            Ok(label_string(labels))
        }
        "Service" => {
            let sel = obj
                .pointer("/spec/selector")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if sel.is_empty() {
                return Err(CliError::msg("the service has no pod selector set"));
            }
            Ok(label_string(sel))
        }
        "ReplicationController" => Ok(label_string(
            obj.pointer("/spec/selector")
                .and_then(Value::as_object)
                .unwrap_or(&empty),
        )),
        "Deployment" | "ReplicaSet" => {
            let sel = obj.pointer("/spec/selector").cloned().unwrap_or(json!({}));
            if sel
                .get("matchExpressions")
                .and_then(Value::as_array)
                .is_some_and(|e| !e.is_empty())
            {
                return Err(CliError::msg(format!(
                    "couldn't convert expressions - \"{}\" to map-based selector format",
                    sel
                )));
            }
            Ok(label_string(
                sel.get("matchLabels")
                    .and_then(Value::as_object)
                    .unwrap_or(&empty),
            ))
        }
        other => Err(CliError::msg(format!(
            "cannot extract pod selector from {other}"
        ))),
    }
}

fn pod_spec_of(obj: &Value) -> Option<&Value> {
    match obj.get("kind").and_then(Value::as_str)? {
        "Pod" => obj.get("spec"),
        _ => obj.pointer("/spec/template/spec"),
    }
}

/// `polymorphichelpers.PortsForObject`: the exposed object's ports as strings.
pub fn ports_for(obj: &Value) -> Vec<String> {
    if obj.get("kind").and_then(Value::as_str) == Some("Service") {
        return obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|p| p.get("port").and_then(Value::as_i64))
            .map(|p| p.to_string())
            .collect();
    }
    pod_spec_of(obj)
        .and_then(|s| s.get("containers"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .flat_map(|c| {
            c.get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
        })
        .filter_map(|p| p.get("containerPort").and_then(Value::as_i64))
        .map(|p| p.to_string())
        .collect()
}

/// `polymorphichelpers.MultiProtocolsForObject` joined as `makeProtocols` does.
pub fn protocols_for(obj: &Value) -> String {
    let mut out = Vec::new();
    let mut push = |port: Option<i64>, proto: Option<&str>| {
        if let Some(port) = port {
            out.push(format!("{port}/{}", proto.unwrap_or("TCP")));
        }
    };
    if obj.get("kind").and_then(Value::as_str) == Some("Service") {
        for p in obj
            .pointer("/spec/ports")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            push(
                p.get("port").and_then(Value::as_i64),
                p.get("protocol").and_then(Value::as_str),
            );
        }
    } else {
        for c in pod_spec_of(obj)
            .and_then(|s| s.get("containers"))
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            for p in c
                .get("ports")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                push(
                    p.get("containerPort").and_then(Value::as_i64),
                    p.get("protocol").and_then(Value::as_str),
                );
            }
        }
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn create_services_as_kubectl() {
        let s = CreateService {
            name: "svc".into(),
            service_type: "ClusterIP".into(),
            tcp: vec!["80:8080".into()],
            ..Default::default()
        };
        s.validate().unwrap();
        assert_eq!(
            s.generate().unwrap(),
            json!({"kind": "Service", "apiVersion": "v1",
              "metadata": {"name": "svc", "creationTimestamp": null, "labels": {"app": "svc"}},
              "spec": {"ports": [{"name": "80-8080", "protocol": "TCP", "port": 80, "targetPort": 8080}],
                       "selector": {"app": "svc"}, "type": "ClusterIP"},
              "status": {"loadBalancer": {}}})
        );
        let en = CreateService {
            name: "en".into(),
            service_type: "ExternalName".into(),
            external_name: "example.com".into(),
            ..Default::default()
        };
        en.validate().unwrap();
        assert_eq!(
            en.generate().unwrap()["spec"],
            json!({"selector": {"app": "en"}, "type": "ExternalName", "externalName": "example.com"})
        );
        let none = CreateService {
            name: "x".into(),
            service_type: "ClusterIP".into(),
            ..Default::default()
        };
        assert_eq!(
            none.validate().unwrap_err().to_string(),
            "error: at least one tcp port specifier must be provided"
        );
        let np = CreateService {
            name: "np".into(),
            service_type: "NodePort".into(),
            cluster_ip: "None".into(),
            ..Default::default()
        };
        assert_eq!(
            np.validate().unwrap_err().to_string(),
            "error: ClusterIP=None can only be used with ClusterIP service type"
        );
        assert!(parse_tcp("80:http").is_ok());
        assert!(parse_tcp("x").is_err());
        assert!(parse_tcp("80:0").is_err());
    }

    #[test]
    fn expose_introspection() {
        let deploy = json!({"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
            "spec": {"selector": {"matchLabels": {"app": "nginx"}},
              "template": {"spec": {"containers": [{"name": "c", "ports": [
                {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 53, "protocol": "UDP"}]}]}}}});
        assert_eq!(selector_for(&deploy).unwrap(), "app=nginx");
        assert_eq!(ports_for(&deploy), vec!["80", "53"]);
        assert_eq!(protocols_for(&deploy), "80/TCP,53/UDP");
        let e = Expose {
            default_name: "nginx".into(),
            selector: "app=nginx".into(),
            labels: "app=nginx".into(),
            ports: "80,53".into(),
            protocols: "80/TCP,53/UDP".into(),
            ..Default::default()
        };
        assert_eq!(
            e.generate().unwrap()["spec"],
            json!({"selector": {"app": "nginx"}, "ports": [
                {"name": "port-1", "protocol": "TCP", "port": 80, "targetPort": 80},
                {"name": "port-2", "protocol": "UDP", "port": 53, "targetPort": 53}]})
        );
        let pod = json!({"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": []}});
        assert_eq!(
            selector_for(&pod).unwrap_err().to_string(),
            "error: the pod has no labels and cannot be exposed"
        );
        assert!(can_be_exposed("apps", "Deployment").is_ok());
        assert_eq!(
            can_be_exposed("batch", "Job").unwrap_err().to_string(),
            "error: cannot expose a Job.batch"
        );
    }
}
