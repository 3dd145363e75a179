//! The Node authorizer (upstream's `plugin/pkg/auth/authorizer/node`): a kubelet
//! (`system:node:<name>` in `system:nodes`) may read only the secrets, config maps,
//! persistent volume claims and volumes that pods bound to its node use, create tokens only
//! for those pods' service accounts, touch only its own Lease, CSINode and Node, and list
//! pods only with the `spec.nodeName=<itself>` field selector. Everything else is judged by
//! the static `system:node` rules. Writes to nodes and pods are allowed here and narrowed by
//! the NodeRestriction admission plugin.
//!
//! Upstream keeps an incrementally maintained graph; here the relationships are computed on
//! demand from the pods bound to the node ([`NodeGraphSource`]), which the API server
//! answers from its watch cache.

use std::sync::Arc;

use k8s_openapi::api::rbac::v1::PolicyRule;
use serde_json::Value;

use crate::attributes::{Attributes, Decision, NODES_GROUP, UserInfo, UserRules};
use crate::authorizer::Authorizer;
use crate::rules::rule_allows;

/// Prefix of node user names.
pub const NODE_USER_PREFIX: &str = "system:node:";
/// The namespace of node leases.
pub const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";

/// The cluster state the Node authorizer looks at.
pub trait NodeGraphSource: Send + Sync {
    /// The pods bound to `node` (`spec.nodeName`), in `namespace` ("" = every namespace).
    fn pods_on_node(&self, node: &str, namespace: &str) -> Vec<Arc<Value>>;

    /// `spec.volumeName` of the claim `namespace/name`, when it exists and is bound.
    fn claim_volume(&self, namespace: &str, name: &str) -> Option<String>;
}

/// `NodeIdentity`: the node name of a node user (`Some("")` for a node user without a
/// name), `None` for anyone else.
pub fn node_identity(user: &UserInfo) -> Option<&str> {
    if !user.in_group(NODES_GROUP) {
        return None;
    }
    user.name.strip_prefix(NODE_USER_PREFIX)
}

/// What a pod refers to (upstream's `VisitPodSecretNames`, `VisitPodConfigmapNames`, the
/// claims of its volumes and its service account).
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PodRefs {
    pub secrets: Vec<String>,
    pub config_maps: Vec<String>,
    pub claims: Vec<String>,
    pub service_account: String,
}

fn str_at<'a>(v: &'a Value, path: &[&str]) -> Option<&'a str> {
    let mut cur = v;
    for p in path {
        cur = cur.get(*p)?;
    }
    cur.as_str().filter(|s| !s.is_empty())
}

/// The names a pod refers to.
pub fn pod_refs(pod: &Value) -> PodRefs {
    let mut refs = PodRefs::default();
    let spec = &pod["spec"];
    let push = |list: &mut Vec<String>, name: Option<&str>| {
        if let Some(n) = name
            && !list.iter().any(|x| x == n)
        {
            list.push(n.to_string());
        }
    };
    for s in spec["imagePullSecrets"].as_array().into_iter().flatten() {
        push(&mut refs.secrets, str_at(s, &["name"]));
    }
    let containers = ["containers", "initContainers", "ephemeralContainers"]
        .iter()
        .flat_map(|k| spec[*k].as_array().into_iter().flatten());
    for c in containers {
        for e in c["envFrom"].as_array().into_iter().flatten() {
            push(&mut refs.secrets, str_at(e, &["secretRef", "name"]));
            push(&mut refs.config_maps, str_at(e, &["configMapRef", "name"]));
        }
        for e in c["env"].as_array().into_iter().flatten() {
            push(
                &mut refs.secrets,
                str_at(e, &["valueFrom", "secretKeyRef", "name"]),
            );
            push(
                &mut refs.config_maps,
                str_at(e, &["valueFrom", "configMapKeyRef", "name"]),
            );
        }
    }
    let pod_name = str_at(pod, &["metadata", "name"]).unwrap_or_default();
    for v in spec["volumes"].as_array().into_iter().flatten() {
        push(&mut refs.secrets, str_at(v, &["secret", "secretName"]));
        push(&mut refs.config_maps, str_at(v, &["configMap", "name"]));
        for src in v["projected"]["sources"].as_array().into_iter().flatten() {
            push(&mut refs.secrets, str_at(src, &["secret", "name"]));
            push(&mut refs.config_maps, str_at(src, &["configMap", "name"]));
        }
        push(&mut refs.secrets, str_at(v, &["azureFile", "secretName"]));
        for plugin in [
            "cephfs",
            "cinder",
            "flexVolume",
            "iscsi",
            "rbd",
            "scaleIO",
            "storageos",
        ] {
            push(&mut refs.secrets, str_at(v, &[plugin, "secretRef", "name"]));
        }
        push(
            &mut refs.secrets,
            str_at(v, &["csi", "nodePublishSecretRef", "name"]),
        );
        push(
            &mut refs.claims,
            str_at(v, &["persistentVolumeClaim", "claimName"]),
        );
        if v.get("ephemeral").is_some_and(|e| !e.is_null())
            && let Some(vol) = str_at(v, &["name"])
        {
            push(&mut refs.claims, Some(&format!("{pod_name}-{vol}")));
        }
    }
    refs.service_account = str_at(spec, &["serviceAccountName"])
        .unwrap_or("default")
        .to_string();
    refs
}

/// The kinds of objects whose relationship to a node is looked up.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Vertex {
    Secret,
    ConfigMap,
    Claim,
    Volume,
    ServiceAccount,
    Pod,
}

/// The Node authorizer.
pub struct NodeAuthorizer<S> {
    source: S,
    node_rules: Vec<PolicyRule>,
}

type Verdict = (Decision, String);

fn no(reason: impl Into<String>) -> Verdict {
    (Decision::NoOpinion, reason.into())
}

fn yes() -> Verdict {
    (Decision::Allow, String::new())
}

/// Whether a field selector (`a=b,c==d`) requires `field` to equal `value`.
fn selects(selector: &str, field: &str, value: &str) -> bool {
    selector.split(',').any(|term| {
        let term = term.trim();
        term.strip_prefix(field)
            .and_then(|rest| rest.strip_prefix("==").or_else(|| rest.strip_prefix('=')))
            .is_some_and(|v| v == value)
    })
}

impl<S: NodeGraphSource> NodeAuthorizer<S> {
    /// A Node authorizer over `source`, falling back to `node_rules` (upstream's
    /// `bootstrappolicy.NodeRules()`).
    pub fn new(source: S, node_rules: Vec<PolicyRule>) -> Self {
        NodeAuthorizer { source, node_rules }
    }

    /// `hasPathFrom`: whether a pod bound to `node` leads to the object.
    fn related(&self, node: &str, vertex: Vertex, namespace: &str, name: &str) -> bool {
        match vertex {
            Vertex::Volume => self.source.pods_on_node(node, "").iter().any(|pod| {
                let ns = str_at(pod, &["metadata", "namespace"]).unwrap_or_default();
                pod_refs(pod)
                    .claims
                    .iter()
                    .any(|c| self.source.claim_volume(ns, c).as_deref() == Some(name))
            }),
            _ => self.source.pods_on_node(node, namespace).iter().any(|pod| {
                if vertex == Vertex::Pod {
                    return str_at(pod, &["metadata", "name"]) == Some(name);
                }
                let refs = pod_refs(pod);
                match vertex {
                    Vertex::Secret => refs.secrets.iter().any(|s| s == name),
                    Vertex::ConfigMap => refs.config_maps.iter().any(|s| s == name),
                    Vertex::Claim => refs.claims.iter().any(|s| s == name),
                    Vertex::ServiceAccount => refs.service_account == name,
                    Vertex::Pod | Vertex::Volume => false,
                }
            }),
        }
    }

    fn authorize_related(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if a.name.is_empty() {
            return no("No Object name found");
        }
        if self.related(node, vertex, &a.namespace, &a.name) {
            return yes();
        }
        no(format!(
            "no relationship found between node '{node}' and this object"
        ))
    }

    fn read_namespaced(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if !matches!(a.verb.as_str(), "get" | "list" | "watch") {
            return no("can only read resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot read subresource");
        }
        if a.namespace.is_empty() {
            return no("can only read namespaced object of this type");
        }
        self.authorize_related(node, vertex, a)
    }

    fn get_only(&self, node: &str, vertex: Vertex, a: &Attributes) -> Verdict {
        if a.verb != "get" {
            return no("can only get individual resources of this type");
        }
        if !a.subresource.is_empty() {
            return no("cannot get subresource");
        }
        self.authorize_related(node, vertex, a)
    }

    fn own_named(&self, node: &str, a: &Attributes, what: &str, sub_msg: &str) -> Verdict {
        if !matches!(
            a.verb.as_str(),
            "get" | "create" | "update" | "patch" | "delete"
        ) {
            return no(format!(
                "can only get, create, update, patch, or delete a {what}"
            ));
        }
        if !sub_msg.is_empty() && !a.subresource.is_empty() {
            return no(sub_msg);
        }
        if a.verb != "create" && a.name != node {
            return no(format!(
                "can only access {what} with the same name as the requesting node"
            ));
        }
        yes()
    }

    fn node_object(&self, node: &str, a: &Attributes) -> Verdict {
        match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "create" | "update" | "patch") | ("status", "update" | "patch") => yes(),
            ("", "get" | "list" | "watch") => {
                if a.name == node {
                    yes()
                } else if a.name.is_empty() {
                    no(format!(
                        "node '{node}' cannot read all nodes, only its own Node object"
                    ))
                } else {
                    no(format!(
                        "node '{node}' cannot read '{}', only its own Node object",
                        a.name
                    ))
                }
            }
            _ => no(""),
        }
    }

    fn pod(&self, node: &str, a: &Attributes) -> Verdict {
        match (a.subresource.as_str(), a.verb.as_str()) {
            ("", "get") => self.get_only(node, Vertex::Pod, a),
            ("", "list" | "watch") => {
                if selects(&a.field_selector, "spec.nodeName", node) {
                    yes()
                } else if !a.name.is_empty() {
                    self.authorize_related(node, Vertex::Pod, a)
                } else {
                    no("can only list/watch pods with spec.nodeName field selector")
                }
            }
            ("", "create" | "delete") | ("status", "update" | "patch") | ("eviction", "create") => {
                yes()
            }
            _ => no(""),
        }
    }
}

impl<S: NodeGraphSource> Authorizer for NodeAuthorizer<S> {
    fn authorize(&self, a: &Attributes) -> (Decision, String) {
        let Some(node) = node_identity(&a.user) else {
            return no("");
        };
        if node.is_empty() {
            return no(format!("unknown node for user {:?}", a.user.name));
        }
        if a.resource_request {
            let verdict = match (a.api_group.as_str(), a.resource.as_str()) {
                ("", "secrets") => Some(self.read_namespaced(node, Vertex::Secret, a)),
                ("", "configmaps") => Some(self.read_namespaced(node, Vertex::ConfigMap, a)),
                ("", "persistentvolumeclaims") => Some(if a.subresource == "status" {
                    if matches!(a.verb.as_str(), "update" | "patch") {
                        self.authorize_related(node, Vertex::Claim, a)
                    } else {
                        no("can only get/update/patch this type")
                    }
                } else {
                    self.get_only(node, Vertex::Claim, a)
                }),
                ("", "persistentvolumes") => Some(self.get_only(node, Vertex::Volume, a)),
                ("", "serviceaccounts") => Some(if a.verb != "create" || a.name.is_empty() {
                    no("can only create tokens for individual service accounts")
                } else if a.subresource != "token" {
                    no("can only create token subresource of serviceaccount")
                } else {
                    self.authorize_related(node, Vertex::ServiceAccount, a)
                }),
                ("coordination.k8s.io", "leases") => Some(
                    if a.namespace != NODE_LEASE_NAMESPACE
                        && matches!(
                            a.verb.as_str(),
                            "get" | "create" | "update" | "patch" | "delete"
                        )
                    {
                        no(format!(
                            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
                        ))
                    } else {
                        self.own_named(node, a, "node lease", "")
                    },
                ),
                ("storage.k8s.io", "csinodes") => Some(self.own_named(
                    node,
                    a,
                    "CSINode",
                    "cannot authorize CSINode subresources",
                )),
                ("", "nodes") => Some(self.node_object(node, a)),
                ("", "pods") => Some(self.pod(node, a)),
                _ => None,
            };
            if let Some(v) = verdict {
                return v;
            }
        }
        if self.node_rules.iter().any(|r| rule_allows(a, r)) {
            return yes();
        }
        no("")
    }

    fn rules_for(&self, user: &UserInfo, _namespace: &str) -> UserRules {
        if node_identity(user).is_some() {
            return UserRules {
                incomplete: true,
                evaluation_error: Some(
                    "node authorizer does not support user rule resolution".into(),
                ),
                ..UserRules::default()
            };
        }
        UserRules::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Pods(Vec<Arc<Value>>, Vec<(String, String, String)>);

    impl NodeGraphSource for Pods {
        fn pods_on_node(&self, node: &str, namespace: &str) -> Vec<Arc<Value>> {
            self.0
                .iter()
                .filter(|p| p["spec"]["nodeName"] == node)
                .filter(|p| namespace.is_empty() || p["metadata"]["namespace"] == namespace)
                .cloned()
                .collect()
        }
        fn claim_volume(&self, namespace: &str, name: &str) -> Option<String> {
            self.1
                .iter()
                .find(|(ns, n, _)| ns == namespace && n == name)
                .map(|(_, _, v)| v.clone())
        }
    }

    fn authorizer() -> NodeAuthorizer<Pods> {
        let pod = |name: &str, node: &str, secret: &str| {
            Arc::new(json!({
                "metadata": {"name": name, "namespace": "app"},
                "spec": {
                    "nodeName": node,
                    "serviceAccountName": format!("sa-{name}"),
                    "containers": [{"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": format!("cm-{name}"), "key": "k"}}}]}],
                    "volumes": [
                        {"name": "s", "secret": {"secretName": secret}},
                        {"name": "d", "persistentVolumeClaim": {"claimName": format!("claim-{name}")}},
                    ],
                },
            }))
        };
        let source = Pods(
            vec![pod("p1", "n1", "s1"), pod("p2", "n2", "s2")],
            vec![
                ("app".into(), "claim-p1".into(), "pv1".into()),
                ("app".into(), "claim-p2".into(), "pv2".into()),
            ],
        );
        let rules = crate::bootstrap::node_rules(&crate::bootstrap::Features::default());
        NodeAuthorizer::new(source, rules)
    }

    fn node(name: &str) -> UserInfo {
        UserInfo::new(
            format!("system:node:{name}"),
            ["system:nodes", "system:authenticated"],
        )
    }

    fn ask(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> Attributes {
        Attributes::resource(node("n1"), verb, group, resource)
            .in_namespace(ns)
            .named(name)
    }

    #[test]
    fn node_reads_only_what_its_pods_use() {
        let a = authorizer();
        let allow = |x: Attributes| a.authorize(&x).0 == Decision::Allow;
        assert!(allow(ask("get", "", "secrets", "app", "s1")));
        assert!(!allow(ask("get", "", "secrets", "app", "s2")));
        assert_eq!(
            a.authorize(&ask("get", "", "secrets", "app", "s2")).1,
            "no relationship found between node 'n1' and this object"
        );
        assert!(!allow(ask("update", "", "secrets", "app", "s1")));
        assert!(allow(ask("get", "", "configmaps", "app", "cm-p1")));
        assert!(!allow(ask("get", "", "configmaps", "app", "cm-p2")));
        assert!(allow(ask(
            "get",
            "",
            "persistentvolumeclaims",
            "app",
            "claim-p1"
        )));
        assert!(!allow(ask(
            "get",
            "",
            "persistentvolumeclaims",
            "app",
            "claim-p2"
        )));
        assert!(allow(ask("get", "", "persistentvolumes", "", "pv1")));
        assert!(!allow(ask("get", "", "persistentvolumes", "", "pv2")));
        assert!(allow(
            ask("create", "", "serviceaccounts", "app", "sa-p1").with_subresource("token")
        ));
        assert!(!allow(
            ask("create", "", "serviceaccounts", "app", "sa-p2").with_subresource("token")
        ));
        // Own node, lease, pods.
        assert!(allow(ask("get", "", "nodes", "", "n1")));
        assert!(!allow(ask("get", "", "nodes", "", "n2")));
        assert!(allow(ask(
            "update",
            "coordination.k8s.io",
            "leases",
            "kube-node-lease",
            "n1"
        )));
        assert!(!allow(ask(
            "update",
            "coordination.k8s.io",
            "leases",
            "kube-node-lease",
            "n2"
        )));
        assert!(!allow(ask(
            "update",
            "coordination.k8s.io",
            "leases",
            "default",
            "n1"
        )));
        let mut list = ask("list", "", "pods", "", "");
        assert!(!allow(list.clone()));
        list.field_selector = "spec.nodeName=n1".into();
        assert!(allow(list.clone()));
        list.field_selector = "spec.nodeName=n2".into();
        assert!(!allow(list));
        assert!(allow(ask("get", "", "pods", "app", "p1")));
        assert!(!allow(ask("get", "", "pods", "app", "p2")));
        assert!(allow(
            ask("patch", "", "pods", "app", "p2").with_subresource("status")
        ));
        // The static node rules: services may be listed, deployments not.
        assert!(allow(ask("list", "", "services", "", "")));
        assert!(!allow(ask("list", "apps", "deployments", "", "")));
        // Not a node: no opinion.
        let mut other = ask("get", "", "secrets", "app", "s1");
        other.user = UserInfo::new("system:node:n1", ["dev"]);
        assert_eq!(a.authorize(&other), (Decision::NoOpinion, String::new()));
    }
}
