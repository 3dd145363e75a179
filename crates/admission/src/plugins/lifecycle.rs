//! `NamespaceLifecycle` (upstream's `plugin/namespace/lifecycle`): the system namespaces
//! cannot be deleted, and nothing is created in a namespace that is missing or being
//! terminated. (The registry itself refuses creates in missing or terminating namespaces even
//! when the plugin is off; this plugin adds upstream's cause and the immortal namespaces.)

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
            return Err(forbidden(
                a,
                format!(
                    "unable to create new content in namespace {} because it is being terminated",
                    a.namespace
                ),
            ));
        }
        Ok(())
    }
}
