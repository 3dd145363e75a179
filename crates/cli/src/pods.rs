//! Finding the pod (and container) a streaming command talks to, as kubectl's
//! `polymorphichelpers` and `podcmd` do: `POD` or `TYPE/NAME` (a workload's or a
//! service's selector, then the first pod in upstream's order), the default container
//! with its `Defaulted container …` notice, and upstream's messages.

use std::cmp::Ordering;
use std::time::Duration;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;

fn mapping(group: &str, version: &str, resource: &str, kind: &str) -> Mapping {
    Mapping {
        group: group.into(),
        version: version.into(),
        resource: resource.into(),
        kind: kind.into(),
        namespaced: true,
    }
}

/// The resources a streaming command can name, without discovery (kubectl knows them
/// from its scheme): `None` for other names.
pub fn builtin_mapping(arg: &str) -> Option<Mapping> {
    let lower = arg.to_ascii_lowercase();
    let (name, group) = match lower.split_once('.') {
        Some((n, g)) => (n.to_string(), Some(g.to_string())),
        None => (lower, None),
    };
    let m = match name.as_str() {
        "pod" | "pods" | "po" => mapping("", "v1", "pods", "Pod"),
        "service" | "services" | "svc" => mapping("", "v1", "services", "Service"),
        "replicationcontroller" | "replicationcontrollers" | "rc" => {
            mapping("", "v1", "replicationcontrollers", "ReplicationController")
        }
        "deployment" | "deployments" | "deploy" => {
            mapping("apps", "v1", "deployments", "Deployment")
        }
        "replicaset" | "replicasets" | "rs" => mapping("apps", "v1", "replicasets", "ReplicaSet"),
        "statefulset" | "statefulsets" | "sts" => {
            mapping("apps", "v1", "statefulsets", "StatefulSet")
        }
        "daemonset" | "daemonsets" | "ds" => mapping("apps", "v1", "daemonsets", "DaemonSet"),
        "job" | "jobs" => mapping("batch", "v1", "jobs", "Job"),
        _ => return None,
    };
    match group {
        None => Some(m),
        Some(g) if g == m.group || (m.group.is_empty() && g == "v1") => Some(m),
        Some(g) if g.ends_with(&format!(".{}", m.group)) || g == format!("v1.{}", m.group) => {
            Some(m)
        }
        Some(_) => None,
    }
}

/// `POD` or `TYPE/NAME` (`TYPE NAME` is not accepted by the streaming commands).
pub async fn resolve_arg(ctx: &Ctx, arg: &str) -> Result<(Mapping, String)> {
    let Some((kind, name)) = arg.split_once('/') else {
        return Ok((mapping("", "v1", "pods", "Pod"), arg.to_string()));
    };
    if name.is_empty() {
        return Err(CliError::msg(
            "arguments in resource/name form must have a single resource and name",
        ));
    }
    let m = match builtin_mapping(kind) {
        Some(m) => m,
        None => ctx.mapper().await?.resolve(kind)?,
    };
    Ok((m, name.to_string()))
}

/// GETs the named object.
pub async fn get_object(ctx: &Ctx, ns: &str, m: &Mapping, name: &str) -> Result<Value> {
    let client = ctx.client().await?;
    client.get_json(&m.object_path(Some(ns), name)).await
}

fn label_map(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

/// A `metav1.LabelSelector` as its string form (upstream's `LabelSelectorAsSelector`:
/// requirements sorted by key, set values sorted).
pub fn label_selector_string(sel: &Value) -> String {
    let mut reqs: Vec<(String, String)> = sel["matchLabels"]
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), format!("{k}={}", v.as_str().unwrap_or_default())))
                .collect()
        })
        .unwrap_or_default();
    for e in sel["matchExpressions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
    {
        let key = e["key"].as_str().unwrap_or_default();
        let mut values: Vec<String> = e["values"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        values.sort();
        let req = match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            _ => continue,
        };
        reqs.push((key.to_string(), req));
    }
    reqs.sort_by(|a, b| a.0.cmp(&b.0));
    let reqs: Vec<String> = reqs.into_iter().map(|(_, r)| r).collect();
    reqs.join(",")
}

/// The pod selector of a workload or service (upstream's `SelectorsForObject`).
pub fn selector_for(obj: &Value) -> std::result::Result<String, String> {
    let kind = obj["kind"].as_str().unwrap_or_default();
    let name = obj["metadata"]["name"].as_str().unwrap_or_default();
    match kind {
        "Service" => {
            let sel = label_map(&obj["spec"]["selector"]);
            if sel.is_empty() {
                return Err(format!(
                    "invalid service '{name}': Service is defined without a selector"
                ));
            }
            Ok(sel.join(","))
        }
        "ReplicationController" => Ok(label_map(&obj["spec"]["selector"]).join(",")),
        "Deployment" | "ReplicaSet" | "StatefulSet" | "DaemonSet" | "Job" => {
            Ok(label_selector_string(&obj["spec"]["selector"]))
        }
        other => Err(format!("selector for *v1.{other} not implemented")),
    }
}

fn is_ready(p: &Value) -> bool {
    ready_time(p).is_some()
}

/// The Ready condition's transition time when the pod is ready.
fn ready_time(p: &Value) -> Option<String> {
    p["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready" && c["status"] == "True")
        .map(|c| c["lastTransitionTime"].as_str().unwrap_or("").to_string())
}

fn max_restarts(p: &Value) -> i64 {
    p["status"]["containerStatuses"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["restartCount"].as_i64())
                .max()
                .unwrap_or(0)
        })
        .unwrap_or(0)
}

fn assigned(p: &Value) -> bool {
    !p["spec"]["nodeName"]
        .as_str()
        .unwrap_or_default()
        .is_empty()
}

fn created(p: &Value) -> &str {
    p["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap_or_default()
}

/// `a` before `b` when `a` is earlier; empty times last (upstream's `afterOrZero`).
fn earlier_first(a: &str, b: &str) -> Ordering {
    match (a.is_empty(), b.is_empty()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.cmp(b),
    }
}

/// Upstream's `podutils.ByLogging`: the pod `logs TYPE/NAME` picks first.
pub fn by_logging(a: &Value, b: &Value) -> Ordering {
    let rank = |p: &Value| match p["status"]["phase"].as_str() {
        Some("Unknown") => 1,
        Some("Pending") => 2,
        _ => 0,
    };
    // More restarts first.
    pod_order(a, b, rank, |ra, rb| rb.cmp(&ra))
}

/// `sort.Reverse(podutils.ActivePods)`: the pod `exec`/`port-forward TYPE/NAME` pick
/// first (assigned, running, ready longest, fewest restarts, oldest).
pub fn most_active(a: &Value, b: &Value) -> Ordering {
    let rank = |p: &Value| match p["status"]["phase"].as_str() {
        Some("Running") => 0,
        Some("Unknown") => 1,
        Some("Pending") => 2,
        _ => 3,
    };
    pod_order(a, b, rank, |ra, rb| ra.cmp(&rb))
}

/// The comparison both orders share: assigned first, then by phase `rank`, ready first,
/// ready longest first, then `restarts` (the order of the two counts), oldest first.
fn pod_order(
    a: &Value,
    b: &Value,
    rank: impl Fn(&Value) -> u8,
    restarts: impl Fn(i64, i64) -> Ordering,
) -> Ordering {
    if assigned(a) != assigned(b) {
        return if assigned(a) {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if rank(a) != rank(b) {
        return rank(a).cmp(&rank(b));
    }
    if is_ready(a) != is_ready(b) {
        return if is_ready(a) {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    if is_ready(a) && is_ready(b) {
        let o = earlier_first(
            &ready_time(a).unwrap_or_default(),
            &ready_time(b).unwrap_or_default(),
        );
        if o != Ordering::Equal {
            return o;
        }
    }
    if max_restarts(a) != max_restarts(b) {
        return restarts(max_restarts(a), max_restarts(b));
    }
    earlier_first(created(a), created(b))
}

/// The pods matching `selector`, sorted; waits up to `timeout` for one to exist (as
/// upstream's `GetPodList` watches).
pub async fn list_pods(
    ctx: &Ctx,
    ns: &str,
    selector: &str,
    timeout: Duration,
    order: fn(&Value, &Value) -> Ordering,
) -> Result<Vec<Value>> {
    let client = ctx.client().await?;
    let path = format!(
        "/api/v1/namespaces/{ns}/pods?{}",
        crate::stream::query(&[("labelSelector", selector)])
    );
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        let list = client.get_json(&path).await?;
        let mut pods = list["items"].as_array().cloned().unwrap_or_default();
        if !pods.is_empty() {
            pods.sort_by(order);
            return Ok(pods);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(CliError::msg("timed out waiting for the condition"));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// The pod for `POD` or `TYPE/NAME`: a pod as is, else the first of the object's pods
/// in `order`, with how many there were.
pub async fn pod_for_arg(
    ctx: &Ctx,
    ns: &str,
    arg: &str,
    timeout: Duration,
    order: fn(&Value, &Value) -> Ordering,
) -> Result<(Value, usize)> {
    let (m, name) = resolve_arg(ctx, arg).await?;
    let obj = get_object(ctx, ns, &m, &name).await?;
    if m.resource == "pods" && m.group.is_empty() {
        return Ok((obj, 1));
    }
    let selector = selector_for(&obj)
        .map_err(|e| CliError::msg(format!("cannot attach to *v1.{}: {e}", m.kind)))?;
    let pods = list_pods(ctx, ns, &selector, timeout, order).await?;
    let n = pods.len();
    let first = pods
        .into_iter()
        .next()
        .ok_or_else(|| CliError::msg("timed out waiting for the condition"))?;
    Ok((first, n))
}

fn names(pod: &Value, field: &str) -> Vec<String> {
    pod["spec"][field]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| c["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether the pod has a container (regular, init or ephemeral) of this name.
pub fn has_container(pod: &Value, name: &str) -> bool {
    ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .any(|f| names(pod, f).iter().any(|n| n == name))
}

/// The container kind of `name` as a field path (`spec.containers{c}`…).
pub fn container_field(pod: &Value, name: &str) -> Option<&'static str> {
    [
        ("containers", "containers"),
        ("initContainers", "initContainers"),
        ("ephemeralContainers", "ephemeralContainers"),
    ]
    .iter()
    .find(|(f, _)| names(pod, f).iter().any(|n| n == name))
    .map(|(_, k)| *k)
}

/// Upstream's `AllContainerNames`: `a, b, dbg (ephem), setup (init)`.
pub fn all_container_names(pod: &Value) -> String {
    let mut out = names(pod, "containers");
    out.extend(
        names(pod, "ephemeralContainers")
            .into_iter()
            .map(|n| format!("{n} (ephem)")),
    );
    out.extend(
        names(pod, "initContainers")
            .into_iter()
            .map(|n| format!("{n} (init)")),
    );
    out.join(", ")
}

/// The annotation naming a pod's default container.
pub const DEFAULT_CONTAINER_ANNOTATION: &str = "kubectl.kubernetes.io/default-container";

/// kubectl 1.33's `FindOrDefaultContainerByName`: the container to use and the notice
/// to print (`Defaulted container "a" out of: a, b`). A default-container annotation
/// naming no container is ignored.
pub fn default_container(pod: &Value, name: Option<&str>) -> Result<(String, Option<String>)> {
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    if let Some(name) = name.filter(|n| !n.is_empty()) {
        if !has_container(pod, name) {
            return Err(CliError::msg(format!(
                "container {name} not found in pod {pod_name}"
            )));
        }
        return Ok((name.to_string(), None));
    }
    let annotated = pod["metadata"]["annotations"][DEFAULT_CONTAINER_ANNOTATION]
        .as_str()
        .filter(|s| !s.is_empty());
    if let Some(name) = annotated
        && has_container(pod, name)
    {
        return Ok((name.to_string(), None));
    }
    let containers = names(pod, "containers");
    let Some(first) = containers.first() else {
        return Err(CliError::msg(format!(
            "pod {}/{pod_name} does not have any containers",
            pod["metadata"]["namespace"].as_str().unwrap_or_default()
        )));
    };
    let more = containers.len() > 1
        || !names(pod, "initContainers").is_empty()
        || !names(pod, "ephemeralContainers").is_empty();
    let notice = more.then(|| {
        format!(
            "Defaulted container \"{first}\" out of: {}",
            all_container_names(pod)
        )
    });
    Ok((first.clone(), notice))
}

/// All container names in upstream's `--all-containers` order: init, regular, ephemeral.
pub fn every_container(pod: &Value) -> Vec<String> {
    let mut out = names(pod, "initContainers");
    out.extend(names(pod, "containers"));
    out.extend(names(pod, "ephemeralContainers"));
    out
}

/// Parses kubectl's `--pod-running-timeout` and `--since` (Go durations: `1h2m3.5s`,
/// `300ms`, `0`).
pub fn parse_duration(s: &str) -> std::result::Result<Duration, String> {
    // Unlike Go, a negative value is invalid here (as this flag's callers had it).
    let unsigned = s.strip_prefix('+').unwrap_or(s);
    if unsigned.starts_with('-') {
        return Err(format!("time: invalid duration \"{s}\""));
    }
    crate::duration::parse_go_duration(s).map(|(_, d)| d)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    #[test]
    fn builtin_types() {
        assert_eq!(builtin_mapping("deploy").unwrap().resource, "deployments");
        assert_eq!(
            builtin_mapping("deployments.apps").unwrap().resource,
            "deployments"
        );
        assert_eq!(builtin_mapping("po").unwrap().resource, "pods");
        assert_eq!(builtin_mapping("svc").unwrap().resource, "services");
        assert!(builtin_mapping("deployments.batch").is_none());
        assert!(builtin_mapping("cronjob").is_none());
    }

    #[test]
    fn selectors() {
        let d = json!({"kind": "Deployment", "spec": {"selector": {
            "matchLabels": {"b": "2", "a": "1"},
            "matchExpressions": [{"key": "t", "operator": "In", "values": ["y", "x"]},
                                 {"key": "u", "operator": "DoesNotExist"}]}}});
        assert_eq!(selector_for(&d).unwrap(), "a=1,b=2,t in (x,y),!u");
        let sel = json!({"matchLabels": {"a.b": "1", "a": "2", "z": "3"},
            "matchExpressions": [{"key": "m", "operator": "Exists"}]});
        assert_eq!(label_selector_string(&sel), "a=2,a.b=1,m,z=3");
        let s = json!({"kind": "Service", "metadata": {"name": "s"}, "spec": {}});
        assert_eq!(
            selector_for(&s).unwrap_err(),
            "invalid service 's': Service is defined without a selector"
        );
    }

    fn pod(name: &str, phase: &str, ready: Option<&str>, restarts: i64, node: bool) -> Value {
        let mut p = json!({"metadata": {"name": name, "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"nodeName": if node { "n" } else { "" }},
            "status": {"phase": phase, "containerStatuses": [{"restartCount": restarts}]}});
        if let Some(t) = ready {
            p["status"]["conditions"] =
                json!([{"type": "Ready", "status": "True", "lastTransitionTime": t}]);
        }
        p
    }

    #[test]
    fn pod_orders() {
        let mut pods = [
            pod("pending", "Pending", None, 0, true),
            pod("unassigned", "Pending", None, 0, false),
            pod(
                "new-ready",
                "Running",
                Some("2024-01-02T00:00:00Z"),
                0,
                true,
            ),
            pod(
                "old-ready",
                "Running",
                Some("2024-01-01T00:00:00Z"),
                0,
                true,
            ),
            pod("running", "Running", None, 3, true),
        ];
        pods.sort_by(by_logging);
        let names: Vec<&str> = pods
            .iter()
            .map(|p| p["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["old-ready", "new-ready", "running", "pending", "unassigned"]
        );
        pods.sort_by(most_active);
        assert_eq!(pods[0]["metadata"]["name"], "old-ready");
        assert_eq!(pods[4]["metadata"]["name"], "unassigned");
    }

    #[test]
    fn containers() {
        let p = json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": {
            "containers": [{"name": "a"}, {"name": "b"}],
            "initContainers": [{"name": "setup"}]}});
        assert_eq!(all_container_names(&p), "a, b, setup (init)");
        assert_eq!(
            default_container(&p, None).unwrap(),
            (
                "a".into(),
                Some("Defaulted container \"a\" out of: a, b, setup (init)".into())
            )
        );
        assert_eq!(
            default_container(&p, Some("b")).unwrap(),
            ("b".into(), None)
        );
        assert_eq!(
            default_container(&p, Some("x")).unwrap_err().to_string(),
            "error: container x not found in pod p"
        );
        let mut annotated = p.clone();
        annotated["metadata"]["annotations"] =
            json!({"kubectl.kubernetes.io/default-container": "b"});
        assert_eq!(
            default_container(&annotated, None).unwrap(),
            ("b".into(), None)
        );
        annotated["metadata"]["annotations"] =
            json!({"kubectl.kubernetes.io/default-container": "gone"});
        assert_eq!(default_container(&annotated, None).unwrap().0, "a");
        let single = json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a"}]}});
        assert_eq!(
            default_container(&single, None).unwrap(),
            ("a".into(), None)
        );
        assert_eq!(every_container(&p), ["setup", "a", "b"]);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1h").unwrap(), Duration::from_secs(3600));
        assert_eq!(parse_duration("1m30s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("300ms").unwrap(), Duration::from_millis(300));
        assert_eq!(parse_duration("0").unwrap(), Duration::ZERO);
        assert!(parse_duration("10").is_err());
        assert!(parse_duration("x").is_err());
    }
}
