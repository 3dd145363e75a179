//! Discovery: `/api`, `/apis`, `/api/v1`, `/apis/<group>[/<version>]`, in the legacy form
//! and as aggregated discovery (`apidiscovery.k8s.io/v2` and `v2beta1`).

use std::collections::BTreeMap;

use api::catalog::{GROUP_ORDER, ResourceInfo};
use base64::Engine;
use serde_json::{Value, json};
use sha2::Digest;

/// The aggregated-discovery versions a client may ask for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Aggregated {
    V2,
    V2Beta1,
}

impl Aggregated {
    pub fn content_type(self) -> &'static str {
        match self {
            Aggregated::V2 => {
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            }
            Aggregated::V2Beta1 => {
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
            }
        }
    }

    fn api_version(self) -> &'static str {
        match self {
            Aggregated::V2 => "apidiscovery.k8s.io/v2",
            Aggregated::V2Beta1 => "apidiscovery.k8s.io/v2beta1",
        }
    }
}

/// Whether the `Accept` header asks for aggregated discovery (first match wins, as the
/// client lists its preferences in order).
pub fn wants_aggregated(accept: &str) -> Option<Aggregated> {
    for r in crate::http::media_ranges(accept) {
        if r.param("g") == Some("apidiscovery.k8s.io")
            && r.param("as") == Some("APIGroupDiscoveryList")
        {
            match r.param("v") {
                Some("v2") => return Some(Aggregated::V2),
                Some("v2beta1") => return Some(Aggregated::V2Beta1),
                _ => continue,
            }
        }
        if r.mime == "application/json" || r.mime == "*/*" {
            return None;
        }
    }
    None
}

fn storage_version_hash(r: &ResourceInfo) -> String {
    let digest =
        sha2::Sha256::digest(format!("{}/{}/{}", r.group, r.storage_version, r.kind).as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest[..8])
}

fn group_rank(group: &str) -> usize {
    GROUP_ORDER
        .iter()
        .position(|g| *g == group)
        .unwrap_or(GROUP_ORDER.len())
}

/// Resources grouped as group → version → resources, groups in upstream's order.
fn grouped<'a>(
    resources: &'a [&'a ResourceInfo],
) -> Vec<(&'a str, BTreeMap<&'a str, Vec<&'a ResourceInfo>>)> {
    let mut groups: Vec<(&str, BTreeMap<&str, Vec<&ResourceInfo>>)> = Vec::new();
    for r in resources {
        match groups.iter_mut().find(|(g, _)| *g == r.group) {
            Some((_, versions)) => versions.entry(&r.version).or_default().push(r),
            None => {
                let mut versions = BTreeMap::new();
                versions.insert(r.version.as_str(), vec![*r]);
                groups.push((&r.group, versions));
            }
        }
    }
    groups.sort_by(|a, b| group_rank(a.0).cmp(&group_rank(b.0)).then(a.0.cmp(b.0)));
    groups
}

/// Versions of a group, preferred (newest by Kubernetes version ordering) first.
fn sorted_versions<'a>(versions: &BTreeMap<&'a str, Vec<&'a ResourceInfo>>) -> Vec<&'a str> {
    let mut v: Vec<&str> = versions.keys().copied().collect();
    v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
    v
}

/// Kubernetes version ordering: GA > beta > alpha, higher numbers first.
fn version_priority(v: &str) -> (u8, u32, u32) {
    let rest = v.strip_prefix('v').unwrap_or(v);
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let major = digits.parse().unwrap_or(0);
    let tail = &rest[digits.len()..];
    let (stage, minor) = if tail.is_empty() {
        (3, 0)
    } else if let Some(n) = tail.strip_prefix("beta") {
        (2, n.parse().unwrap_or(0))
    } else if let Some(n) = tail.strip_prefix("alpha") {
        (1, n.parse().unwrap_or(0))
    } else {
        (0, 0)
    };
    (stage, major, minor)
}

/// `/api`.
pub fn api_versions(server_address: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    })
}

fn group_json(group: &str, versions: &BTreeMap<&str, Vec<&ResourceInfo>>) -> Value {
    let ordered = sorted_versions(versions);
    let entries: Vec<Value> = ordered
        .iter()
        .map(|v| json!({"groupVersion": format!("{group}/{v}"), "version": v}))
        .collect();
    json!({
        "name": group,
        "versions": entries,
        "preferredVersion": entries.first().cloned().unwrap_or(Value::Null),
    })
}

/// `/apis`.
pub fn api_group_list(resources: &[&ResourceInfo]) -> Value {
    let groups: Vec<Value> = grouped(resources)
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, versions)| group_json(g, versions))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

/// `/apis/<group>`.
pub fn api_group(resources: &[&ResourceInfo], group: &str) -> Option<Value> {
    grouped(resources)
        .iter()
        .find(|(g, _)| *g == group && !g.is_empty())
        .map(|(g, versions)| {
            let mut v = group_json(g, versions);
            if let Some(m) = v.as_object_mut() {
                m.insert("kind".into(), json!("APIGroup"));
                m.insert("apiVersion".into(), json!("v1"));
            }
            v
        })
}

/// `/api/v1` or `/apis/<group>/<version>`.
pub fn api_resource_list(resources: &[&ResourceInfo], group: &str, version: &str) -> Option<Value> {
    let in_gv: Vec<&&ResourceInfo> = resources
        .iter()
        .filter(|r| r.group == group && r.version == version)
        .collect();
    if in_gv.is_empty() {
        return None;
    }
    let mut list = Vec::new();
    for r in &in_gv {
        let mut e = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            e["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            e["categories"] = json!(r.categories);
        }
        if !r.storage_prefix.is_empty() {
            e["storageVersionHash"] = json!(storage_version_hash(r));
        }
        list.push(e);
        for s in &r.subresources {
            let mut e = json!({
                "name": format!("{}/{}", r.plural, s.name),
                "singularName": "",
                "namespaced": r.namespaced,
                "kind": s.kind,
                "verbs": s.verbs,
            });
            if s.group != r.group || s.version != r.version {
                e["group"] = json!(s.group);
                e["version"] = json!(s.version);
            }
            list.push(e);
        }
    }
    Some(json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": if group.is_empty() { version.to_string() } else { format!("{group}/{version}") },
        "resources": list,
    }))
}

fn aggregated_resource(r: &ResourceInfo) -> Value {
    let mut e = json!({
        "resource": r.plural,
        "responseKind": {"group": r.group, "version": r.version, "kind": r.kind},
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        e["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        e["categories"] = json!(r.categories);
    }
    if !r.subresources.is_empty() {
        e["subresources"] = Value::Array(
            r.subresources
                .iter()
                .map(|s| {
                    json!({
                        "subresource": s.name,
                        "responseKind": {"group": s.group, "version": s.version, "kind": s.kind},
                        "verbs": s.verbs,
                    })
                })
                .collect(),
        );
    }
    e
}

/// Aggregated discovery: `legacy` for `/api` (the core group), otherwise `/apis`.
pub fn aggregated(resources: &[&ResourceInfo], legacy: bool, which: Aggregated) -> Value {
    let items: Vec<Value> = grouped(resources)
        .iter()
        .filter(|(g, _)| g.is_empty() == legacy)
        .map(|(g, versions)| {
            let versions: Vec<Value> = sorted_versions(versions)
                .into_iter()
                .map(|v| {
                    let mut rs: Vec<&&ResourceInfo> = versions[v].iter().collect();
                    rs.sort_by(|a, b| a.plural.cmp(&b.plural));
                    json!({
                        "version": v,
                        "resources": rs.iter().map(|r| aggregated_resource(r)).collect::<Vec<_>>(),
                        "freshness": "Current",
                    })
                })
                .collect();
            let metadata = if g.is_empty() {
                json!({"creationTimestamp": null})
            } else {
                json!({"name": g, "creationTimestamp": null})
            };
            json!({"metadata": metadata, "versions": versions})
        })
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": which.api_version(),
        "metadata": {},
        "items": items,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents() {
        let all = api::catalog::builtin();
        let refs: Vec<&ResourceInfo> = all.iter().collect();
        let groups = api_group_list(&refs);
        assert_eq!(groups["groups"][0]["name"], "apps");
        let v1 = api_resource_list(&refs, "", "v1").unwrap();
        let pods = v1["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "pods")
            .unwrap();
        assert_eq!(pods["shortNames"][0], "po");
        assert!(
            v1["resources"]
                .as_array()
                .unwrap()
                .iter()
                .any(|r| r["name"] == "pods/status")
        );
        let apps = api_resource_list(&refs, "apps", "v1").unwrap();
        let scale = apps["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["name"] == "deployments/scale")
            .unwrap();
        assert_eq!(scale["group"], "autoscaling");
        let agg = aggregated(&refs, false, Aggregated::V2);
        assert_eq!(agg["items"][0]["metadata"]["name"], "apps");
        let core = aggregated(&refs, true, Aggregated::V2Beta1);
        assert_eq!(core["items"].as_array().unwrap().len(), 1);
        assert!(api_resource_list(&refs, "nope", "v1").is_none());
    }

    #[test]
    fn accept_headers() {
        assert_eq!(
            wants_aggregated(
                "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            ),
            Some(Aggregated::V2)
        );
        assert_eq!(
            wants_aggregated(
                "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"
            ),
            Some(Aggregated::V2Beta1)
        );
        assert_eq!(wants_aggregated("application/json, */*"), None);
    }

    #[test]
    fn version_order() {
        let mut v = vec!["v1beta1", "v1", "v2alpha1", "v2"];
        v.sort_by_key(|v| std::cmp::Reverse(version_priority(v)));
        assert_eq!(v, vec!["v2", "v1", "v1beta1", "v2alpha1"]);
    }
}
