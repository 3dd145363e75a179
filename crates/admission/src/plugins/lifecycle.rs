//! `NamespaceLifecycle` (upstream's `plugin/namespace/lifecycle`): the system namespaces
//! cannot be deleted, and nothing is created in a namespace that is missing or being
//! terminated. (The registry itself refuses creates in missing or terminating namespaces,
//! with the same message and `NamespaceTerminating` cause, even when the plugin is off;
//! this plugin adds the immortal namespaces.)

use api::ApiError;
use api::status::GroupResource;

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

/// Namespaces that may never be deleted.
pub const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

pub struct NamespaceLifecycle;

#[async_trait::async_trait]
impl Plugin for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(
            op,
            Operation::Create | Operation::Update | Operation::Delete
        )
    }
    fn validating(&self) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        let is_namespace = a.kind.group.is_empty() && a.kind.kind == "Namespace";
        if a.operation == Operation::Delete && is_namespace && IMMORTAL.contains(&a.name.as_str()) {
            return Err(ApiError::forbidden(
                GroupResource {
                    group: &a.resource.group,
                    resource: &a.resource.kind,
                },
                &a.name,
                "this namespace may not be deleted",
            ));
        }
        if a.namespace.is_empty() || is_namespace || a.operation != Operation::Create {
            return Ok(());
        }
        if a.resource.group == "authorization.k8s.io" {
            return Ok(());
        }
        let Some(ns) = cluster.get("", "namespaces", "", &a.namespace).await? else {
            return Err(ApiError::not_found(
                GroupResource {
                    group: "",
                    resource: "namespaces",
                },
                &a.namespace,
            ));
        };
        if ns["status"]["phase"] == "Terminating" || api::meta::deletion_timestamp(&ns).is_some() {
            let mut e = forbidden(
                a,
                format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    a.namespace
                ),
            );
            e.push_cause(api::status::Cause {
                reason: "NamespaceTerminating".into(),
                message: format!("namespace {} is being terminated", a.namespace),
                field: "metadata.namespace".into(),
            });
            return Err(e);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::Gvk;
    use crate::fake::FakeCluster;

    fn create_cm(ns: &str, name: &str) -> Attributes {
        let gvk = |kind: &str| Gvk {
            group: String::new(),
            version: "v1".into(),
            kind: kind.into(),
        };
        Attributes {
            operation: Operation::Create,
            kind: gvk("ConfigMap"),
            resource: gvk("configmaps"),
            subresource: String::new(),
            namespace: ns.into(),
            name: name.into(),
            object: Some(json!({"metadata": {"name": name, "namespace": ns}})),
            old_object: None,
            user: auth::UserInfo::new("alice", ["system:authenticated"]),
            dry_run: false,
            options: None,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    #[tokio::test]
    async fn no_content_in_missing_or_terminating_namespaces() {
        let c = FakeCluster::new();
        c.put(
            "",
            "namespaces",
            json!({"metadata": {"name": "live"}, "status": {"phase": "Active"}}),
        );
        c.put(
            "",
            "namespaces",
            json!({"metadata": {"name": "doomed", "deletionTimestamp": "2025-01-01T00:00:00Z"},
                "status": {"phase": "Terminating"}}),
        );
        let p = NamespaceLifecycle;
        assert!(p.validate(&create_cm("live", "a"), &c).await.is_ok());
        let e = p.validate(&create_cm("gone", "a"), &c).await.unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (404, "namespaces \"gone\" not found")
        );
        let e = p.validate(&create_cm("doomed", "a"), &c).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "configmaps \"a\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
        );
        assert_eq!(
            e.to_status()["details"]["causes"],
            json!([{"reason": "NamespaceTerminating",
                "message": "namespace doomed is being terminated", "field": "metadata.namespace"}])
        );
    }
}
