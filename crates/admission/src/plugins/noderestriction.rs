//! `NodeRestriction` (upstream's `plugin/pkg/admission/noderestriction`): what the Node
//! authorizer lets a kubelet (`system:node:<name>` in `system:nodes`) write, narrowed to its
//! own objects. A node creates only mirror pods bound to itself (owned by its Node, using no
//! secrets, config maps, claims or service account) and deletes, evicts and updates the
//! status of only the pods bound to it; it modifies only its own Node, never its taints,
//! config source or labels outside the kubelet's set; it updates only the status capacity
//! and conditions of claims; it asks tokens only bound to its own pods; it touches only its
//! own Lease (in `kube-node-lease`) and CSINode, and asks only for its own certificates.

use std::collections::BTreeSet;
use std::sync::Arc;

use api::ApiError;
use serde_json::Value;

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const NODE_LEASE_NAMESPACE: &str = "kube-node-lease";
const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";

/// The labels a kubelet sets on its Node (`kubeletapis.IsKubeletLabel`), besides any in
/// the `kubelet.kubernetes.io` and `node.kubernetes.io` namespaces.
const KUBELET_LABELS: &[&str] = &[
    "kubernetes.io/hostname",
    "kubernetes.io/arch",
    "kubernetes.io/os",
    "beta.kubernetes.io/arch",
    "beta.kubernetes.io/os",
    "beta.kubernetes.io/instance-type",
    "node.kubernetes.io/instance-type",
    "failure-domain.beta.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region",
    "topology.kubernetes.io/zone",
    "topology.kubernetes.io/region",
];

/// Reads the subject common name of a PEM certificate request (the API server's parser).
pub type CsrCommonName = Arc<dyn Fn(&[u8]) -> Result<String, String> + Send + Sync>;

#[derive(Default)]
pub struct NodeRestriction {
    /// Without a parser, node certificate requests are not checked here (the CSR signer
    /// still is).
    pub csr_common_name: Option<CsrCommonName>,
}

fn label_namespace(key: &str) -> &str {
    key.split_once('/').map_or("", |(ns, _)| ns)
}

fn in_namespace(ns: &str, domain: &str) -> bool {
    ns == domain || ns.ends_with(&format!(".{domain}"))
}

fn is_kubelet_label(key: &str) -> bool {
    let ns = label_namespace(key);
    KUBELET_LABELS.contains(&key)
        || in_namespace(ns, "kubelet.kubernetes.io")
        || in_namespace(ns, "node.kubernetes.io")
}

/// Labels added, removed or changed that a node may not touch (`getForbiddenLabels`).
fn forbidden_labels(new: &Value, old: &Value) -> Vec<String> {
    let labels = |o: &Value| -> Vec<(String, String)> {
        o["metadata"]["labels"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
            .collect()
    };
    let (a, b) = (labels(new), labels(old));
    let modified: BTreeSet<&String> = a
        .iter()
        .filter(|x| !b.contains(x))
        .chain(b.iter().filter(|x| !a.contains(x)))
        .map(|(k, _)| k)
        .collect();
    modified
        .into_iter()
        .filter(|k| {
            let ns = label_namespace(k);
            let kubernetes = in_namespace(ns, "kubernetes.io") || in_namespace(ns, "k8s.io");
            in_namespace(ns, "node-restriction.kubernetes.io")
                || (kubernetes && !is_kubelet_label(k))
        })
        .cloned()
        .collect()
}

fn node_name_of(pod: &Value) -> &str {
    pod["spec"]["nodeName"].as_str().unwrap_or_default()
}

/// A PVC with what a node may change blanked out.
fn pvc_fixed_part(pvc: &Value) -> Value {
    let mut v = pvc.clone();
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.remove("resourceVersion");
        meta.remove("managedFields");
    }
    if let Some(status) = v.get_mut("status").and_then(Value::as_object_mut) {
        for key in [
            "capacity",
            "conditions",
            "allocatedResources",
            "allocatedResourceStatuses",
        ] {
            status.remove(key);
        }
    }
    v
}

/// The top-level paths where `a` and `b` differ, for the refusal message.
fn differing_paths(a: &Value, b: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for section in ["metadata", "spec", "status"] {
        let (x, y) = (&a[section], &b[section]);
        let keys: BTreeSet<&String> = x
            .as_object()
            .into_iter()
            .flatten()
            .chain(y.as_object().into_iter().flatten())
            .map(|(k, _)| k)
            .collect();
        out.extend(
            keys.into_iter()
                .filter(|k| x.get(k.as_str()) != y.get(k.as_str()))
                .map(|k| format!("{section}.{k}")),
        );
    }
    out
}

impl NodeRestriction {
    async fn pod(&self, a: &Attributes, node: &str, cluster: &dyn Cluster) -> Result<(), ApiError> {
        match a.subresource.as_str() {
            "" => match a.operation {
                Operation::Create => self.pod_create(a, node, cluster).await,
                Operation::Delete => {
                    let pod = existing_pod(a, &a.name, cluster).await?;
                    if node_name_of(&pod) != node {
                        return Err(forbidden(
                            a,
                            format!(
                                "node {node:?} can only delete pods with spec.nodeName set to itself"
                            ),
                        ));
                    }
                    Ok(())
                }
                op => Err(forbidden(
                    a,
                    format!(
                        "unexpected operation {:?}, node {node:?} can only create and delete mirror pods",
                        op.as_str()
                    ),
                )),
            },
            "status" => {
                if a.operation != Operation::Update {
                    return Err(forbidden(
                        a,
                        format!("unexpected operation {:?}", a.operation.as_str()),
                    ));
                }
                let old = a.old_object.as_ref().cloned().unwrap_or_default();
                if node_name_of(&old) != node {
                    return Err(forbidden(
                        a,
                        format!(
                            "node {node:?} can only update pod status for pods with spec.nodeName set to itself"
                        ),
                    ));
                }
                let new = a.object.as_ref().cloned().unwrap_or_default();
                let labels = |o: &Value| {
                    o["metadata"]["labels"]
                        .as_object()
                        .cloned()
                        .unwrap_or_default()
                };
                if labels(&new) != labels(&old) {
                    return Err(forbidden(
                        a,
                        format!("node {node:?} cannot update labels through pod status"),
                    ));
                }
                Ok(())
            }
            "eviction" => {
                if a.operation != Operation::Create {
                    return Err(forbidden(
                        a,
                        format!("unexpected operation {}", a.operation.as_str()),
                    ));
                }
                let name = if a.name.is_empty() {
                    a.object
                        .as_ref()
                        .and_then(api::meta::name)
                        .unwrap_or_default()
                        .to_string()
                } else {
                    a.name.clone()
                };
                if name.is_empty() {
                    return Err(forbidden(a, "could not determine pod from request data"));
                }
                let pod = existing_pod(a, &name, cluster).await?;
                if node_name_of(&pod) != node {
                    return Err(forbidden(
                        a,
                        format!("node {node} can only evict pods with spec.nodeName set to itself"),
                    ));
                }
                Ok(())
            }
            other => Err(forbidden(
                a,
                format!(
                    "unexpected pod subresource {other:?}, only 'status' and 'eviction' are allowed"
                ),
            )),
        }
    }

    async fn pod_create(
        &self,
        a: &Attributes,
        node: &str,
        cluster: &dyn Cluster,
    ) -> Result<(), ApiError> {
        let pod = a.object.as_ref().cloned().unwrap_or_default();
        if pod["metadata"]["annotations"]
            .get(MIRROR_ANNOTATION)
            .is_none()
        {
            return Err(forbidden(
                a,
                format!(
                    "pod does not have {MIRROR_ANNOTATION:?} annotation, node {node:?} can only create mirror pods"
                ),
            ));
        }
        if node_name_of(&pod) != node {
            return Err(forbidden(
                a,
                format!("node {node:?} can only create pods with spec.nodeName set to itself"),
            ));
        }
        let owners = pod["metadata"]["ownerReferences"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let owner = match owners.as_slice() {
            [] => {
                return Err(forbidden(
                    a,
                    format!(
                        "node {node:?} can only create pods with an owner reference set to itself"
                    ),
                ));
            }
            [one] => one,
            _ => {
                return Err(forbidden(
                    a,
                    format!(
                        "node {node:?} can only create pods with a single owner reference set to itself"
                    ),
                ));
            }
        };
        if owner["apiVersion"] != "v1" || owner["kind"] != "Node" || owner["name"] != node {
            return Err(forbidden(
                a,
                format!("node {node:?} can only create pods with an owner reference set to itself"),
            ));
        }
        if owner["controller"].as_bool() != Some(true) {
            return Err(forbidden(
                a,
                format!(
                    "node {node:?} can only create pods with a controller owner reference set to itself"
                ),
            ));
        }
        if owner["blockOwnerDeletion"].as_bool() == Some(true) {
            return Err(forbidden(
                a,
                format!("node {node:?} must not set blockOwnerDeletion on an owner reference"),
            ));
        }
        let Some(node_obj) = cluster.get("", "nodes", "", node).await? else {
            return Err(ApiError::not_found(
                api::status::GroupResource {
                    group: "",
                    resource: "nodes",
                },
                node,
            ));
        };
        let (want, got) = (
            owner["uid"].as_str().unwrap_or_default(),
            api::meta::uid(&node_obj).unwrap_or_default(),
        );
        if want != got {
            return Err(forbidden(
                a,
                format!("node {node} UID mismatch: expected {want} got {got}"),
            ));
        }
        if !pod["spec"]["serviceAccountName"]
            .as_str()
            .unwrap_or_default()
            .is_empty()
        {
            return Err(forbidden(
                a,
                format!("node {node:?} can not create pods that reference a service account"),
            ));
        }
        let refs = auth::node::pod_refs(&pod);
        let what = if !refs.secrets.is_empty() {
            Some("secrets")
        } else if !refs.config_maps.is_empty() {
            Some("configmaps")
        } else if pod["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|v| v["projected"]["sources"].as_array().into_iter().flatten())
            .any(|s| s.get("clusterTrustBundle").is_some_and(|b| !b.is_null()))
        {
            Some("clustertrustbundles")
        } else if pod["spec"]["volumes"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|v| v.get("persistentVolumeClaim").is_some_and(|c| !c.is_null()))
        {
            Some("persistentvolumeclaims")
        } else {
            None
        };
        match what {
            Some(w) => Err(forbidden(
                a,
                format!("node {node:?} can not create pods that reference {w}"),
            )),
            None => Ok(()),
        }
    }

    fn node(&self, a: &Attributes, node: &str) -> Result<(), ApiError> {
        if a.name != node {
            return Err(forbidden(
                a,
                format!("node {node:?} is not allowed to modify node {:?}", a.name),
            ));
        }
        let new = a.object.as_ref().cloned().unwrap_or_default();
        let old = a.old_object.as_ref().cloned().unwrap_or_default();
        let config_source = |o: &Value| {
            o["spec"]
                .get("configSource")
                .filter(|c| !c.is_null())
                .cloned()
        };
        match a.operation {
            Operation::Create => {
                if config_source(&new).is_some() {
                    return Err(forbidden(
                        a,
                        format!(
                            "node {node:?} is not allowed to create pods with a non-nil configSource"
                        ),
                    ));
                }
                let bad = forbidden_labels(&new, &Value::Null);
                if !bad.is_empty() {
                    return Err(forbidden(
                        a,
                        format!(
                            "node {node:?} is not allowed to set the following labels: {}",
                            bad.join(", ")
                        ),
                    ));
                }
            }
            Operation::Update => {
                if let Some(cs) = config_source(&new)
                    && Some(cs) != config_source(&old)
                {
                    return Err(forbidden(
                        a,
                        format!(
                            "node {node:?} is not allowed to update configSource to a new non-nil configSource"
                        ),
                    ));
                }
                let taints = |o: &Value| {
                    o["spec"]["taints"]
                        .as_array()
                        .filter(|t| !t.is_empty())
                        .cloned()
                };
                if taints(&new) != taints(&old) {
                    return Err(forbidden(
                        a,
                        format!("node {node:?} is not allowed to modify taints"),
                    ));
                }
                let bad = forbidden_labels(&new, &old);
                if !bad.is_empty() {
                    return Err(forbidden(
                        a,
                        format!("is not allowed to modify labels: {}", bad.join(", ")),
                    ));
                }
            }
            _ => {}
        }
        Ok(())
    }

    async fn token_request(
        &self,
        a: &Attributes,
        node: &str,
        cluster: &dyn Cluster,
    ) -> Result<(), ApiError> {
        if a.operation != Operation::Create || a.subresource != "token" {
            return Ok(());
        }
        let tr = a.object.as_ref().cloned().unwrap_or_default();
        let r = &tr["spec"]["boundObjectRef"];
        let name = r["name"].as_str().unwrap_or_default();
        if r["apiVersion"] != "v1" || r["kind"] != "Pod" || name.is_empty() {
            return Err(forbidden(a, "node requested token not bound to a pod"));
        }
        let uid = r["uid"].as_str().unwrap_or_default();
        if uid.is_empty() {
            return Err(forbidden(
                a,
                "node requested token with a pod binding without a uid",
            ));
        }
        let pod = existing_pod(a, name, cluster).await?;
        if api::meta::uid(&pod) != Some(uid) {
            return Err(forbidden(
                a,
                format!(
                    "the UID in the bound object reference ({uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        if node_name_of(&pod) != node {
            return Err(forbidden(
                a,
                "node requested token bound to a pod scheduled on a different node",
            ));
        }
        Ok(())
    }

    fn csr(&self, a: &Attributes, node: &str) -> Result<(), ApiError> {
        let Some(parse) = &self.csr_common_name else {
            return Ok(());
        };
        if a.operation != Operation::Create {
            return Ok(());
        }
        let csr = a.object.as_ref().cloned().unwrap_or_default();
        let signer = csr["spec"]["signerName"].as_str().unwrap_or_default();
        if signer != KUBELET_SERVING_SIGNER && signer != KUBELET_CLIENT_SIGNER {
            return Ok(());
        }
        let request = csr["spec"]["request"].as_str().unwrap_or_default();
        let pem = base64::Engine::decode(&base64::engine::general_purpose::STANDARD, request)
            .unwrap_or_default();
        match parse(&pem) {
            Err(e) => Err(forbidden(a, format!("unable to parse csr: {e}"))),
            Ok(cn) if cn != format!("system:node:{node}") => Err(forbidden(
                a,
                format!("can only create a node CSR with CN=system:node:{node}"),
            )),
            Ok(_) => Ok(()),
        }
    }
}

/// The pod `name` in the request's namespace; a missing pod is a 404 (as upstream returns
/// the lookup's NotFound).
async fn existing_pod(
    a: &Attributes,
    name: &str,
    cluster: &dyn Cluster,
) -> Result<Arc<Value>, ApiError> {
    cluster
        .get("", "pods", &a.namespace, name)
        .await?
        .ok_or_else(|| {
            ApiError::not_found(
                api::status::GroupResource {
                    group: "",
                    resource: "pods",
                },
                name,
            )
        })
}

#[async_trait::async_trait]
impl Plugin for NodeRestriction {
    fn name(&self) -> &'static str {
        "NodeRestriction"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
    fn mutating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        let Some(node) = auth::node::node_identity(&a.user) else {
            return Ok(());
        };
        let node = node.to_string();
        if node.is_empty() {
            return Err(forbidden(
                a,
                format!("could not determine node from user {:?}", a.user.name),
            ));
        }
        let a: &Attributes = a;
        match (a.resource.group.as_str(), a.resource.kind.as_str()) {
            ("", "pods") => self.pod(a, &node, cluster).await,
            ("", "nodes") => self.node(a, &node),
            ("", "persistentvolumeclaims") => {
                if a.subresource != "status" {
                    return Err(forbidden(a, "may only update PVC status"));
                }
                if a.operation != Operation::Update {
                    return Err(forbidden(
                        a,
                        format!("unexpected operation {:?}", a.operation.as_str()),
                    ));
                }
                let new = pvc_fixed_part(a.object.as_ref().unwrap_or(&Value::Null));
                let old = pvc_fixed_part(a.old_object.as_ref().unwrap_or(&Value::Null));
                if new != old {
                    return Err(forbidden(
                        a,
                        format!(
                            "node {node:?} is not allowed to update fields other than status.quantity and status.conditions: {}",
                            differing_paths(&new, &old).join(", ")
                        ),
                    ));
                }
                Ok(())
            }
            ("", "serviceaccounts") => self.token_request(a, &node, cluster).await,
            ("coordination.k8s.io", "leases") => {
                if a.namespace != NODE_LEASE_NAMESPACE {
                    return Err(forbidden(
                        a,
                        format!(
                            "can only access leases in the {NODE_LEASE_NAMESPACE:?} system namespace"
                        ),
                    ));
                }
                if object_name(a) != node {
                    return Err(forbidden(
                        a,
                        "can only access node lease with the same name as the requesting node",
                    ));
                }
                Ok(())
            }
            ("storage.k8s.io", "csinodes") => {
                if object_name(a) != node {
                    return Err(forbidden(
                        a,
                        "can only access CSINode with the same name as the requesting node",
                    ));
                }
                Ok(())
            }
            ("certificates.k8s.io", "certificatesigningrequests") => self.csr(a, &node),
            _ => Ok(()),
        }
    }
}

/// The name a create names in its object, or the request's name otherwise.
fn object_name(a: &Attributes) -> String {
    if a.operation == Operation::Create {
        a.object
            .as_ref()
            .and_then(api::meta::name)
            .unwrap_or_default()
            .to_string()
    } else {
        a.name.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCluster;
    use serde_json::json;

    fn attrs(
        op: Operation,
        group: &str,
        plural: &str,
        sub: &str,
        ns: &str,
        name: &str,
    ) -> Attributes {
        Attributes {
            subresource: sub.into(),
            user: auth::UserInfo::new("system:node:n1", ["system:nodes", "system:authenticated"]),
            ..Attributes::on(op, group, plural, ns, name)
        }
    }

    async fn run(a: Attributes, c: &FakeCluster) -> Result<(), String> {
        let mut a = a;
        NodeRestriction::default()
            .admit(&mut a, c)
            .await
            .map_err(|e| e.message)
    }

    fn cluster() -> FakeCluster {
        let c = FakeCluster::new();
        c.put(
            "",
            "nodes",
            json!({"metadata": {"name": "n1", "uid": "node-uid"}}),
        );
        c.put("", "pods", json!({"metadata": {"name": "mine", "namespace": "ns", "uid": "u1"}, "spec": {"nodeName": "n1"}}));
        c.put("", "pods", json!({"metadata": {"name": "theirs", "namespace": "ns", "uid": "u2"}, "spec": {"nodeName": "n2"}}));
        c
    }

    #[tokio::test]
    async fn pods() {
        let c = cluster();
        let mirror = |owner: Value, spec: Value| json!({"metadata": {"name": "static", "annotations": {MIRROR_ANNOTATION: "h"}, "ownerReferences": owner}, "spec": spec});
        let own = json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "node-uid", "controller": true}]);
        let create = |obj: Value| {
            let mut a = attrs(Operation::Create, "", "pods", "", "ns", "static");
            a.object = Some(obj);
            a
        };
        run(create(mirror(own.clone(), json!({"nodeName": "n1"}))), &c)
            .await
            .unwrap();
        let cases = [
            (
                json!({"metadata": {"name": "x"}, "spec": {"nodeName": "n1"}}),
                "can only create mirror pods",
            ),
            (
                mirror(own.clone(), json!({"nodeName": "n2"})),
                "spec.nodeName set to itself",
            ),
            (
                mirror(json!([]), json!({"nodeName": "n1"})),
                "an owner reference set to itself",
            ),
            (
                mirror(
                    json!([{"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": "other", "controller": true}]),
                    json!({"nodeName": "n1"}),
                ),
                "UID mismatch: expected other got node-uid",
            ),
            (
                mirror(
                    own.clone(),
                    json!({"nodeName": "n1", "volumes": [{"name": "s", "secret": {"secretName": "s"}}]}),
                ),
                "reference secrets",
            ),
            (
                mirror(
                    own.clone(),
                    json!({"nodeName": "n1", "serviceAccountName": "x"}),
                ),
                "reference a service account",
            ),
        ];
        for (obj, why) in cases {
            let e = run(create(obj), &c).await.unwrap_err();
            assert!(e.contains(why), "{e} / {why}");
        }
        run(attrs(Operation::Delete, "", "pods", "", "ns", "mine"), &c)
            .await
            .unwrap();
        let e = run(attrs(Operation::Delete, "", "pods", "", "ns", "theirs"), &c)
            .await
            .unwrap_err();
        assert_eq!(
            e,
            "pods \"theirs\" is forbidden: node \"n1\" can only delete pods with spec.nodeName set to itself"
        );
        let mut st = attrs(Operation::Update, "", "pods", "status", "ns", "theirs");
        st.old_object = c.object("", "pods", "ns", "theirs");
        st.object = st.old_object.clone();
        assert!(
            run(st, &c)
                .await
                .unwrap_err()
                .contains("can only update pod status")
        );
        let e = run(attrs(Operation::Update, "", "pods", "", "ns", "mine"), &c)
            .await
            .unwrap_err();
        assert!(e.contains("can only create and delete mirror pods"), "{e}");
    }

    #[tokio::test]
    async fn nodes_leases_and_tokens() {
        let c = cluster();
        let e = run(attrs(Operation::Update, "", "nodes", "", "", "n2"), &c)
            .await
            .unwrap_err();
        assert!(
            e.ends_with("node \"n1\" is not allowed to modify node \"n2\""),
            "{e}"
        );
        let mut u = attrs(Operation::Update, "", "nodes", "status", "", "n1");
        u.old_object = Some(json!({"metadata": {"labels": {"kubernetes.io/hostname": "n1"}}}));
        u.object = Some(
            json!({"metadata": {"labels": {"kubernetes.io/hostname": "n1", "topology.kubernetes.io/zone": "z", "mine": "x"}}}),
        );
        run(u.clone(), &c).await.unwrap();
        u.object = Some(
            json!({"metadata": {"labels": {"node-restriction.kubernetes.io/pool": "x", "node-role.kubernetes.io/master": ""}}}),
        );
        let e = run(u.clone(), &c).await.unwrap_err();
        assert!(e.ends_with("is not allowed to modify labels: node-restriction.kubernetes.io/pool, node-role.kubernetes.io/master"), "{e}");
        u.object = Some(
            json!({"metadata": {"labels": {"kubernetes.io/hostname": "n1"}}, "spec": {"taints": [{"key": "k", "effect": "NoSchedule"}]}}),
        );
        assert!(
            run(u, &c)
                .await
                .unwrap_err()
                .ends_with("is not allowed to modify taints")
        );

        let e = run(
            attrs(
                Operation::Update,
                "coordination.k8s.io",
                "leases",
                "",
                "default",
                "n1",
            ),
            &c,
        )
        .await
        .unwrap_err();
        assert!(e.contains("can only access leases in the \"kube-node-lease\" system namespace"));
        run(
            attrs(
                Operation::Update,
                "coordination.k8s.io",
                "leases",
                "",
                NODE_LEASE_NAMESPACE,
                "n1",
            ),
            &c,
        )
        .await
        .unwrap();
        assert!(
            run(
                attrs(
                    Operation::Update,
                    "coordination.k8s.io",
                    "leases",
                    "",
                    NODE_LEASE_NAMESPACE,
                    "n2"
                ),
                &c
            )
            .await
            .is_err()
        );

        let token = |pod: &str, uid: &str| {
            let mut a = attrs(
                Operation::Create,
                "",
                "serviceaccounts",
                "token",
                "ns",
                "default",
            );
            a.object = Some(
                json!({"spec": {"boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": uid}}}),
            );
            a
        };
        run(token("mine", "u1"), &c).await.unwrap();
        assert!(
            run(token("theirs", "u2"), &c)
                .await
                .unwrap_err()
                .contains("scheduled on a different node")
        );
        assert!(
            run(token("mine", "old"), &c)
                .await
                .unwrap_err()
                .contains("does not match the UID in record")
        );
        assert!(
            run(token("mine", ""), &c)
                .await
                .unwrap_err()
                .contains("without a uid")
        );

        // Others are not restricted here.
        let mut other = attrs(Operation::Delete, "", "pods", "", "ns", "theirs");
        other.user = auth::UserInfo::new("alice", ["system:authenticated"]);
        run(other, &c).await.unwrap();
    }
}
