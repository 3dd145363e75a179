//! `create namespace|serviceaccount|quota|priorityclass|poddisruptionbudget|token`.

use serde_json::{Map, Value, json};

use super::object_meta;
use crate::error::{CliError, Result};

/// `create namespace`.
pub fn namespace(name: &str) -> Value {
    json!({
        "kind": "Namespace",
        "apiVersion": "v1",
        "metadata": object_meta(name, None, None),
        "spec": {},
        "status": {},
    })
}

/// `create serviceaccount`.
pub fn service_account(name: &str) -> Value {
    json!({
        "kind": "ServiceAccount",
        "apiVersion": "v1",
        "metadata": object_meta(name, None, None),
    })
}

/// `create quota --hard=… --scopes=…`.
pub fn quota(name: &str, hard: &str, scopes: &str) -> Result<Value> {
    let mut spec = Map::new();
    if !hard.is_empty() {
        let mut list = Map::new();
        for statement in hard.split(',') {
            let parts: Vec<&str> = statement.split('=').collect();
            if parts.len() != 2 {
                return Err(CliError::msg(format!(
                    "Invalid argument syntax {statement}, expected <resource>=<value>"
                )));
            }
            let q =
                api::kinds::validate::quantity::Quantity::parse(parts[1]).map_err(CliError::msg)?;
            list.insert(parts[0].to_string(), json!(q.canonical()));
        }
        spec.insert("hard".into(), Value::Object(list));
    }
    if !scopes.is_empty() {
        let mut list = Vec::new();
        for s in scopes.split(',') {
            if s.is_empty() {
                return Err(CliError::msg("invalid resource quota scope \"\""));
            }
            list.push(json!(s));
        }
        spec.insert("scopes".into(), Value::Array(list));
    }
    Ok(json!({
        "kind": "ResourceQuota",
        "apiVersion": "v1",
        "metadata": object_meta(name, None, None),
        "spec": spec,
        "status": {},
    }))
}

/// `create priorityclass`.
pub fn priority_class(
    name: &str,
    value: i32,
    global_default: bool,
    description: &str,
    preemption_policy: &str,
) -> Value {
    let mut pc = json!({
        "kind": "PriorityClass",
        "apiVersion": "scheduling.k8s.io/v1",
        "metadata": object_meta(name, None, None),
        "value": value,
        "preemptionPolicy": preemption_policy,
    });
    if global_default {
        pc["globalDefault"] = json!(true);
    }
    if !description.is_empty() {
        pc["description"] = json!(description);
    }
    pc
}

fn is_count_or_percent(s: &str) -> bool {
    let digits = s.strip_suffix('%').unwrap_or(s);
    !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
}

/// `intstr.Parse`: a number when it is one, else the string.
fn int_or_string(s: &str) -> Value {
    match s.parse::<i32>() {
        Ok(n) => json!(n),
        Err(_) => json!(s),
    }
}

/// `create poddisruptionbudget`.
pub fn pdb(
    name: &str,
    selector: &str,
    min_available: &str,
    max_unavailable: &str,
) -> Result<Value> {
    if selector.is_empty() {
        return Err(CliError::msg("a selector must be specified"));
    }
    if min_available.is_empty() && max_unavailable.is_empty() {
        return Err(CliError::msg(
            "one of min-available or max-unavailable must be specified",
        ));
    }
    if !min_available.is_empty() && !max_unavailable.is_empty() {
        return Err(CliError::msg(
            "min-available and max-unavailable cannot be both specified",
        ));
    }
    if !min_available.is_empty() && !is_count_or_percent(min_available) {
        return Err(CliError::msg("invalid format specified for min-available"));
    }
    if !max_unavailable.is_empty() && !is_count_or_percent(max_unavailable) {
        return Err(CliError::msg(
            "invalid format specified for max-unavailable",
        ));
    }
    let sel = api::selector::parse_to_label_selector(selector)
        .map_err(|e| CliError::msg(e.to_string()))?;
    let mut spec = json!({
        "selector": serde_json::to_value(&sel).map_err(|e| CliError::msg(e.to_string()))?,
    });
    if !min_available.is_empty() {
        spec["minAvailable"] = int_or_string(min_available);
    } else {
        spec["maxUnavailable"] = int_or_string(max_unavailable);
    }
    Ok(json!({
        "kind": "PodDisruptionBudget",
        "apiVersion": "policy/v1",
        "metadata": object_meta(name, None, None),
        "spec": spec,
        "status": {"disruptionsAllowed": 0, "currentHealthy": 0, "desiredHealthy": 0, "expectedPods": 0},
    }))
}

/// The kinds `create token --bound-object-kind` accepts, with their apiVersions.
pub const BOUND_OBJECT_KINDS: &[(&str, &str)] = &[("Node", "v1"), ("Pod", "v1"), ("Secret", "v1")];

/// Go's `time.ParseDuration` in nanoseconds (negative for `-…`), on the shared parser.
pub fn parse_go_duration(s: &str) -> Result<i128> {
    let (neg, d) = crate::duration::parse_go_duration(s).map_err(CliError::msg)?;
    let nanos = i128::try_from(d.as_nanos()).unwrap_or(i128::MAX);
    Ok(if neg { -nanos } else { nanos })
}

/// `create token`'s TokenRequest, after kubectl's checks.
pub fn token_request(
    audiences: &[String],
    duration_nanos: i128,
    bound_kind: &str,
    bound_name: &str,
    bound_uid: &str,
) -> Result<Value> {
    if duration_nanos < 0 {
        return Err(CliError::msg(
            "--duration must be greater than or equal to 0",
        ));
    }
    if duration_nanos % 1_000_000_000 != 0 {
        return Err(CliError::msg(
            "--duration cannot be expressed in units less than seconds",
        ));
    }
    if audiences.iter().any(String::is_empty) {
        return Err(CliError::msg("--audience must not be an empty string"));
    }
    if bound_kind.is_empty() {
        if !bound_name.is_empty() {
            return Err(CliError::msg(
                "--bound-object-name can only be set if --bound-object-kind is provided",
            ));
        }
        if !bound_uid.is_empty() {
            return Err(CliError::msg(
                "--bound-object-uid can only be set if --bound-object-kind is provided",
            ));
        }
    }
    let mut spec =
        json!({"audiences": if audiences.is_empty() { Value::Null } else { json!(audiences) }});
    if duration_nanos > 0 {
        spec["expirationSeconds"] = json!(duration_nanos / 1_000_000_000);
    }
    if !bound_kind.is_empty() {
        let Some((_, api_version)) = BOUND_OBJECT_KINDS.iter().find(|(k, _)| *k == bound_kind)
        else {
            let kinds: Vec<&str> = BOUND_OBJECT_KINDS.iter().map(|(k, _)| *k).collect();
            return Err(CliError::msg(format!(
                "supported --bound-object-kind values are {}",
                kinds.join(", ")
            )));
        };
        if bound_name.is_empty() {
            return Err(CliError::msg(
                "--bound-object-name is required if --bound-object-kind is provided",
            ));
        }
        let mut r = json!({"kind": bound_kind, "apiVersion": api_version, "name": bound_name});
        if !bound_uid.is_empty() {
            r["uid"] = json!(bound_uid);
        }
        spec["boundObjectRef"] = r;
    }
    Ok(json!({
        "kind": "TokenRequest",
        "apiVersion": "authentication.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": spec,
        "status": {"token": "", "expirationTimestamp": null},
    }))
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// kubectl's ingress rule check: a prefix matching
/// `^[\w*.-]*/.*=[\w-]+:[\w-]+` (the TLS suffix is optional and the match unanchored).
pub fn is_valid_ingress_rule(rule: &str) -> bool {
    let host_end = rule
        .find(|c: char| !(is_word(c) || matches!(c, '*' | '-' | '.')))
        .unwrap_or(rule.len());
    let rest = &rule[host_end..];
    if !rest.starts_with('/') {
        return false;
    }
    let svc = |s: &str| -> bool {
        let name_len = s
            .find(|c: char| !(is_word(c) || c == '-'))
            .unwrap_or(s.len());
        if name_len == 0 || !s[name_len..].starts_with(':') {
            return false;
        }
        s[name_len + 1..]
            .chars()
            .next()
            .is_some_and(|c| is_word(c) || c == '-')
    };
    rest.char_indices()
        .take_while(|(_, c)| *c != '\n')
        .any(|(i, c)| c == '=' && svc(&rest[i + 1..]))
}

fn ingress_backend(service: &str) -> Value {
    let mut parts = service.split(':');
    let name = parts.next().unwrap_or_default();
    let port = parts.next().unwrap_or_default();
    let port = match port.parse::<i32>() {
        Ok(n) => json!({"number": n}),
        Err(_) => json!({"name": port}),
    };
    json!({"service": {"name": name, "port": port}})
}

/// `create ingress NAME --rule=host/path=svc:port[,tls[=secret]] …`.
pub fn ingress(
    name: &str,
    class: &str,
    rules: &[String],
    default_backend: &str,
    annotations: &[String],
) -> Result<Value> {
    if default_backend.is_empty() && rules.is_empty() {
        return Err(CliError::msg(
            "not enough information provided: every ingress has to either specify a default-backend (which catches all traffic) or a list of rules (which catch specific paths)",
        ));
    }
    for rule in rules {
        if !is_valid_ingress_rule(rule) {
            return Err(CliError::msg(format!(
                "rule {rule} is invalid and should be in format host/path=svcname:svcport[,tls[=secret]]"
            )));
        }
    }
    let mut ann = std::collections::BTreeMap::new();
    for a in annotations {
        match a.split_once('=') {
            Some((k, v)) => {
                ann.insert(k.to_string(), v.to_string());
            }
            None => {
                return Err(CliError::msg(format!(
                    "annotation {a} is invalid and should be in format key=[value]"
                )));
            }
        }
    }
    if !default_backend.is_empty() && default_backend.split(':').count() != 2 {
        return Err(CliError::msg(
            "default-backend should be in format servicename:serviceport",
        ));
    }
    let mut spec = Map::new();
    if !class.is_empty() {
        spec.insert("ingressClassName".into(), json!(class));
    }
    if !default_backend.is_empty() {
        spec.insert("defaultBackend".into(), ingress_backend(default_backend));
    }
    // TLS entries: one per secret, hosts gathered (kubectl's buildTLSRules).
    let mut tls: Vec<(Vec<String>, String)> = Vec::new();
    let mut seen_hosts: Vec<String> = Vec::new();
    for rule in rules {
        let parts: Vec<&str> = rule.split(',').collect();
        if parts.len() != 2 {
            continue;
        }
        let host = rule.split('/').next().unwrap_or_default().to_string();
        let secret_parts: Vec<&str> = parts[1].split('=').collect();
        let secret = if secret_parts.len() > 1 {
            secret_parts[1].to_string()
        } else {
            String::new()
        };
        if seen_hosts.contains(&host) {
            continue;
        }
        if let Some(entry) = tls.iter_mut().find(|(_, s)| *s == secret) {
            entry.0.push(host.clone());
            seen_hosts.push(host);
            continue;
        }
        let hosts = if host.is_empty() {
            Vec::new()
        } else {
            vec![host.clone()]
        };
        if !secret.is_empty() || !hosts.is_empty() {
            tls.push((hosts, secret));
        }
        seen_hosts.push(host);
    }
    if !tls.is_empty() {
        spec.insert(
            "tls".into(),
            Value::Array(
                tls.into_iter()
                    .map(|(hosts, secret)| {
                        let mut t = Map::new();
                        if !hosts.is_empty() {
                            t.insert("hosts".into(), json!(hosts));
                        }
                        if !secret.is_empty() {
                            t.insert("secretName".into(), json!(secret));
                        }
                        Value::Object(t)
                    })
                    .collect(),
            ),
        );
    }
    let mut out_rules: Vec<(String, Vec<Value>)> = Vec::new();
    for rule in rules {
        let without_tls = rule.split(',').next().unwrap_or_default();
        let (host, path_svc) = without_tls.split_once('/').unwrap_or((without_tls, ""));
        let (path, service) = path_svc.split_once('=').unwrap_or((path_svc, ""));
        let mut path = format!("/{path}");
        let mut path_type = "Exact";
        if path.ends_with('*') {
            path_type = "Prefix";
            path.pop();
        }
        let p = json!({"path": path, "pathType": path_type, "backend": ingress_backend(service)});
        match out_rules.iter_mut().find(|(h, _)| h == host) {
            Some((_, paths)) => paths.push(p),
            None => out_rules.push((host.to_string(), vec![p])),
        }
    }
    if !out_rules.is_empty() {
        spec.insert(
            "rules".into(),
            Value::Array(
                out_rules
                    .into_iter()
                    .map(|(host, paths)| {
                        let mut r = json!({"http": {"paths": paths}});
                        if !host.is_empty() {
                            r["host"] = json!(host);
                        }
                        r
                    })
                    .collect(),
            ),
        );
    }
    Ok(json!({
        "kind": "Ingress",
        "apiVersion": "networking.k8s.io/v1",
        "metadata": object_meta(name, None, Some(&ann)),
        "spec": spec,
        "status": {"loadBalancer": {}},
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn small_generators_as_kubectl() {
        assert_eq!(
            namespace("ns1"),
            json!({"kind": "Namespace", "apiVersion": "v1",
                   "metadata": {"name": "ns1", "creationTimestamp": null}, "spec": {}, "status": {}})
        );
        assert_eq!(
            quota("q", "cpu=1000m,pods=2", "BestEffort").unwrap()["spec"],
            json!({"hard": {"cpu": "1", "pods": "2"}, "scopes": ["BestEffort"]})
        );
        assert_eq!(
            quota("q", "cpu", "").unwrap_err().to_string(),
            "error: Invalid argument syntax cpu, expected <resource>=<value>"
        );
        assert_eq!(
            priority_class("pc", 1000, true, "d", "Never"),
            json!({"kind": "PriorityClass", "apiVersion": "scheduling.k8s.io/v1",
                   "metadata": {"name": "pc", "creationTimestamp": null},
                   "value": 1000, "globalDefault": true, "description": "d", "preemptionPolicy": "Never"})
        );
        assert_eq!(
            pdb("p", "app=x", "1", "").unwrap()["spec"],
            json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "x"}}})
        );
        let p = pdb("p", "app in (a,b),x=y", "", "10%").unwrap();
        assert_eq!(
            p["spec"],
            json!({"selector": {"matchLabels": {"x": "y"},
                     "matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "b"]}]},
                   "maxUnavailable": "10%"})
        );
        assert_eq!(
            pdb("p", "a=b", "x", "").unwrap_err().to_string(),
            "error: invalid format specified for min-available"
        );
    }

    #[test]
    fn ingresses_as_kubectl() {
        let ing = ingress(
            "ing",
            "c",
            &[
                "foo.com/bar=svc:80,tls=sec".into(),
                "foo.com/*=svc2:http".into(),
            ],
            "def:http",
            &["a=b".into()],
        )
        .unwrap();
        assert_eq!(
            ing,
            json!({"kind": "Ingress", "apiVersion": "networking.k8s.io/v1",
              "metadata": {"name": "ing", "creationTimestamp": null, "annotations": {"a": "b"}},
              "spec": {"ingressClassName": "c",
                "defaultBackend": {"service": {"name": "def", "port": {"name": "http"}}},
                "tls": [{"hosts": ["foo.com"], "secretName": "sec"}],
                "rules": [{"host": "foo.com", "http": {"paths": [
                  {"path": "/bar", "pathType": "Exact", "backend": {"service": {"name": "svc", "port": {"number": 80}}}},
                  {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "svc2", "port": {"name": "http"}}}}]}}]},
              "status": {"loadBalancer": {}}})
        );
        assert!(is_valid_ingress_rule("/path=svc:80"));
        assert!(!is_valid_ingress_rule("foo.com=svc:80"));
        assert!(!is_valid_ingress_rule("foo.com/p=svc"));
        assert!(ingress("i", "", &[], "", &[]).is_err());
    }

    #[test]
    fn token_requests() {
        assert_eq!(parse_go_duration("10m").unwrap(), 600_000_000_000);
        assert_eq!(parse_go_duration("1h30m").unwrap(), 5_400_000_000_000);
        assert!(parse_go_duration("10").is_err());
        let t = token_request(&["a".into()], 600_000_000_000, "Pod", "p", "").unwrap();
        assert_eq!(
            t["spec"],
            json!({"audiences": ["a"], "expirationSeconds": 600,
                   "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "p"}})
        );
        assert_eq!(
            token_request(&[], 1_500_000_000, "", "", "")
                .unwrap_err()
                .to_string(),
            "error: --duration cannot be expressed in units less than seconds"
        );
        assert_eq!(
            token_request(&[], 0, "Job", "x", "")
                .unwrap_err()
                .to_string(),
            "error: supported --bound-object-kind values are Node, Pod, Secret"
        );
    }
}
