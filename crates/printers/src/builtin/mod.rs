//! The printers of built-in kinds: upstream's `pkg/printers/internalversion` handlers, one
//! column list and one row function per kind.
//!
//! The API server always prints wide (`GenerateOptions{Wide: true}`): rows carry every
//! column, and the wide ones are marked with priority 1 in the column definitions.

mod apps;
mod batch;
mod cluster;
mod core;
mod events;
mod pod;

use crate::descriptions::{OBJECT_META_CREATION_TIMESTAMP, OBJECT_META_NAME};
use crate::time::{Nanos, since, timestamp};
use crate::value;
use serde_json::Value;

/// A column definition (`meta.k8s.io/v1` `TableColumnDefinition`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Col {
    pub(crate) name: &'static str,
    pub(crate) ty: &'static str,
    pub(crate) format: &'static str,
    pub(crate) description: &'static str,
    pub(crate) priority: i32,
}

/// A column shown by default.
pub(crate) const fn col(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 0,
    }
}

/// A column shown only with `-o wide` (priority 1).
pub(crate) const fn wide(name: &'static str, ty: &'static str, description: &'static str) -> Col {
    Col {
        name,
        ty,
        format: "",
        description,
        priority: 1,
    }
}

/// The `Name` column every printer starts with.
pub(crate) const NAME: Col = Col {
    name: "Name",
    ty: "string",
    format: "name",
    description: OBJECT_META_NAME,
    priority: 0,
};

/// The `Age` column.
pub(crate) const AGE: Col = col("Age", "string", OBJECT_META_CREATION_TIMESTAMP);

pub(crate) const CONTAINERS: Col = wide(
    "Containers",
    "string",
    "Names of each container in the template.",
);
pub(crate) const IMAGES: Col = wide(
    "Images",
    "string",
    "Images referenced by each container in the template.",
);

/// What a row function sees besides the object.
pub(crate) struct Ctx {
    /// The instant ages are computed against.
    pub(crate) now: Nanos,
}

impl Ctx {
    /// `translateTimestampSince` of a timestamp field.
    pub(crate) fn since(&self, v: Option<&Value>) -> String {
        since(self.now, timestamp(v))
    }

    /// The age of an object (`metadata.creationTimestamp`).
    pub(crate) fn age(&self, obj: &Value) -> String {
        self.since(value::at(obj, &["metadata", "creationTimestamp"]))
    }
}

/// One row: its cells and, for pods that have finished, the row conditions.
pub(crate) struct Row {
    pub(crate) cells: Vec<Value>,
    pub(crate) conditions: Option<Value>,
}

impl From<Vec<Value>> for Row {
    fn from(cells: Vec<Value>) -> Self {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// A kind's printer.
pub(crate) struct Printer {
    pub(crate) columns: &'static [Col],
    pub(crate) row: fn(&Value, &Ctx) -> Row,
}

/// A string cell.
pub(crate) fn s(v: impl Into<String>) -> Value {
    Value::String(v.into())
}

/// An integer cell.
pub(crate) fn i(v: impl Into<i64>) -> Value {
    Value::from(v.into())
}

/// A count cell (`int64(len(…))`).
pub(crate) fn n(v: usize) -> Value {
    Value::from(i64::try_from(v).unwrap_or(i64::MAX))
}

/// `layoutContainerCells`: container names and images, each joined by `,`.
pub(crate) fn container_cells(containers: &[Value]) -> (String, String) {
    let names: Vec<&str> = containers
        .iter()
        .map(|c| value::string(c, &["name"]))
        .collect();
    let images: Vec<&str> = containers
        .iter()
        .map(|c| value::string(c, &["image"]))
        .collect();
    (names.join(","), images.join(","))
}

/// `printBoolPtr`: `True`, `False`, or `<unset>`.
pub(crate) fn bool_ptr(v: Option<bool>) -> &'static str {
    match v {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    }
}

/// The printer of a kind, by API group and kind (any version).
pub(crate) fn lookup(group: &str, kind: &str) -> Option<&'static Printer> {
    Some(match (group, kind) {
        ("", "Pod") => &pod::POD,
        ("", "PodTemplate") => &apps::POD_TEMPLATE,
        ("", "ReplicationController") => &apps::REPLICATION_CONTROLLER,
        ("", "Service") => &core::SERVICE,
        ("", "Endpoints") => &core::ENDPOINTS,
        ("", "Node") => &core::NODE,
        ("", "Event") | ("events.k8s.io", "Event") => &events::EVENT,
        ("", "Namespace") => &core::NAMESPACE,
        ("", "Secret") => &core::SECRET,
        ("", "ServiceAccount") => &core::SERVICE_ACCOUNT,
        ("", "PersistentVolume") => &core::PERSISTENT_VOLUME,
        ("", "PersistentVolumeClaim") => &core::PERSISTENT_VOLUME_CLAIM,
        ("", "ConfigMap") => &core::CONFIG_MAP,
        ("", "ResourceQuota") => &core::RESOURCE_QUOTA,
        ("", "ComponentStatus") => &core::COMPONENT_STATUS,
        ("apps" | "extensions", "Deployment") => &apps::DEPLOYMENT,
        ("apps" | "extensions", "ReplicaSet") => &apps::REPLICA_SET,
        ("apps" | "extensions", "DaemonSet") => &apps::DAEMON_SET,
        ("apps", "StatefulSet") => &apps::STATEFUL_SET,
        ("apps", "ControllerRevision") => &apps::CONTROLLER_REVISION,
        ("policy", "PodDisruptionBudget") => &apps::POD_DISRUPTION_BUDGET,
        ("batch", "Job") => &batch::JOB,
        ("batch", "CronJob") => &batch::CRON_JOB,
        ("discovery.k8s.io", "EndpointSlice") => &core::ENDPOINT_SLICE,
        ("rbac.authorization.k8s.io", "RoleBinding") => &cluster::ROLE_BINDING,
        ("rbac.authorization.k8s.io", "ClusterRoleBinding") => &cluster::CLUSTER_ROLE_BINDING,
        ("coordination.k8s.io", "Lease") => &cluster::LEASE,
        ("scheduling.k8s.io", "PriorityClass") => &cluster::PRIORITY_CLASS,
        ("networking.k8s.io", "Ingress") => &cluster::INGRESS,
        ("networking.k8s.io", "IngressClass") => &cluster::INGRESS_CLASS,
        ("networking.k8s.io", "NetworkPolicy") => &cluster::NETWORK_POLICY,
        ("storage.k8s.io", "StorageClass") => &cluster::STORAGE_CLASS,
        ("node.k8s.io", "RuntimeClass") => &cluster::RUNTIME_CLASS,
        ("admissionregistration.k8s.io", "MutatingWebhookConfiguration") => {
            &cluster::MUTATING_WEBHOOK_CONFIGURATION
        }
        ("admissionregistration.k8s.io", "ValidatingWebhookConfiguration") => {
            &cluster::VALIDATING_WEBHOOK_CONFIGURATION
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicy") => {
            &cluster::VALIDATING_ADMISSION_POLICY
        }
        ("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding") => {
            &cluster::VALIDATING_ADMISSION_POLICY_BINDING
        }
        ("certificates.k8s.io", "CertificateSigningRequest") => {
            &cluster::CERTIFICATE_SIGNING_REQUEST
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn containers() {
        let cs = [
            json!({"name": "a", "image": "x:1"}),
            json!({"name": "b"}),
            json!(3),
        ];
        assert_eq!(
            container_cells(&cs),
            ("a,b,".to_string(), "x:1,,".to_string())
        );
        assert_eq!(container_cells(&[]), (String::new(), String::new()));
    }
}
