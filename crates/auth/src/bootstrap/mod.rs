//! The default RBAC policy the API server creates at start-up (upstream's
//! `plugin/pkg/auth/authorizer/rbac/bootstrappolicy`: `policy.go`, `controller_policy.go`,
//! `namespace_policy.go`), as `k8s-openapi` objects in upstream's order, with upstream's
//! `kubernetes.io/bootstrapping: rbac-defaults` label and
//! `rbac.authorization.kubernetes.io/autoupdate: "true"` annotation on every object.
//!
//! Some rules and roles depend on feature gates; [`Features::default`] holds Kubernetes
//! 1.33's defaults for the gates the policy consults.

mod controllers;
mod namespaces;
mod policy;

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{
    ClusterRole, ClusterRoleBinding, PolicyRule, Role, RoleBinding, RoleRef, Subject,
};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use crate::aggregation::aggregate_all;
use crate::error::AuthError;
use crate::rbac::{GROUP_KIND, RBAC_GROUP, SERVICE_ACCOUNT_KIND, StaticRbac, USER_KIND};
use crate::rules::{PolicyRuleBuilder, new_rule};

pub use controllers::{controller_role_bindings, controller_roles};
pub use namespaces::{namespace_role_bindings, namespace_roles};
pub use policy::{node_rules, policy_cluster_role_bindings, policy_cluster_roles};

/// Label key put on every bootstrap object.
pub const BOOTSTRAPPING_LABEL: &str = "kubernetes.io/bootstrapping";
/// Value of [`BOOTSTRAPPING_LABEL`].
pub const BOOTSTRAPPING_LABEL_VALUE: &str = "rbac-defaults";
/// Annotation telling the API server to reconcile the object at start-up
/// (`rbacv1.AutoUpdateAnnotationKey`).
pub const AUTOUPDATE_ANNOTATION: &str = "rbac.authorization.kubernetes.io/autoupdate";
/// Label selecting roles aggregated into `admin`.
pub const AGGREGATE_TO_ADMIN: &str = "rbac.authorization.k8s.io/aggregate-to-admin";
/// Label selecting roles aggregated into `edit`.
pub const AGGREGATE_TO_EDIT: &str = "rbac.authorization.k8s.io/aggregate-to-edit";
/// Label selecting roles aggregated into `view`.
pub const AGGREGATE_TO_VIEW: &str = "rbac.authorization.k8s.io/aggregate-to-view";
/// Prefix of the controllers' roles; each is bound to the service account
/// `kube-system/<name without prefix>`.
pub const CONTROLLER_ROLE_PREFIX: &str = "system:controller:";

/// The feature gates the bootstrap policy consults. `Default` is Kubernetes 1.33's default
/// for each.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Features {
    /// `DynamicResourceAllocation` (beta, off in 1.33).
    pub dynamic_resource_allocation: bool,
    /// `ClusterTrustBundle` (beta, off in 1.33).
    pub cluster_trust_bundle: bool,
    /// `ComponentFlagz` (alpha, off).
    pub component_flagz: bool,
    /// `ComponentStatusz` (alpha, off).
    pub component_statusz: bool,
    /// `KubeletFineGrainedAuthz` (beta, on in 1.33).
    pub kubelet_fine_grained_authz: bool,
    /// `MultiCIDRServiceAllocator` (GA, on in 1.33).
    pub multi_cidr_service_allocator: bool,
    /// `StatefulSetAutoDeletePVC` (GA, on).
    pub stateful_set_auto_delete_pvc: bool,
    /// `VolumeAttributesClass` (beta, off in 1.33).
    pub volume_attributes_class: bool,
    /// `StorageVersionAPI` (alpha, off).
    pub storage_version_api: bool,
    /// `APIServerIdentity` (beta, on).
    pub api_server_identity: bool,
    /// `StorageVersionMigrator` (alpha, off).
    pub storage_version_migrator: bool,
    /// `SELinuxChangePolicy` (beta, on in 1.33).
    pub selinux_change_policy: bool,
}

impl Default for Features {
    fn default() -> Self {
        Features {
            dynamic_resource_allocation: false,
            cluster_trust_bundle: false,
            component_flagz: false,
            component_statusz: false,
            kubelet_fine_grained_authz: true,
            multi_cidr_service_allocator: true,
            stateful_set_auto_delete_pvc: true,
            volume_attributes_class: false,
            storage_version_api: false,
            api_server_identity: true,
            storage_version_migrator: false,
            selinux_change_policy: true,
        }
    }
}

/// Every bootstrap ClusterRole with the default features: the policy roles, then the
/// controllers' roles (upstream's `BootstrapPolicy`). Aggregated roles (`admin`, `edit`,
/// `view`) have no rules yet; see [`aggregated_cluster_roles`].
pub fn cluster_roles() -> Vec<ClusterRole> {
    cluster_roles_with(&Features::default())
}

/// [`cluster_roles`] for the given features.
pub fn cluster_roles_with(features: &Features) -> Vec<ClusterRole> {
    let mut roles = policy_cluster_roles(features);
    roles.extend(controller_roles(features));
    roles
}

/// Every bootstrap ClusterRoleBinding with the default features: the policy bindings, then
/// one per controller role.
pub fn cluster_role_bindings() -> Vec<ClusterRoleBinding> {
    cluster_role_bindings_with(&Features::default())
}

/// [`cluster_role_bindings`] for the given features.
pub fn cluster_role_bindings_with(features: &Features) -> Vec<ClusterRoleBinding> {
    let mut bindings = policy_cluster_role_bindings(features);
    bindings.extend(controller_role_bindings(features));
    bindings
}

/// Every bootstrap Role (in `kube-system`, then `kube-public`).
pub fn roles() -> Vec<Role> {
    namespace_roles()
}

/// Every bootstrap RoleBinding (in `kube-system`, then `kube-public`).
pub fn role_bindings() -> Vec<RoleBinding> {
    namespace_role_bindings()
}

/// [`cluster_roles`] after running the aggregation controller to a fixed point, so `admin`,
/// `edit` and `view` hold their aggregated rules, as in a running cluster.
pub fn aggregated_cluster_roles() -> Result<Vec<ClusterRole>, AuthError> {
    let mut roles = cluster_roles();
    aggregate_all(&mut roles)?;
    Ok(roles)
}

/// The whole bootstrap policy (aggregated) as an in-memory RBAC source.
pub fn static_rbac() -> Result<StaticRbac, AuthError> {
    let mut rbac = StaticRbac::new();
    for role in aggregated_cluster_roles()? {
        rbac.add_cluster_role(role);
    }
    for binding in cluster_role_bindings() {
        rbac.add_cluster_role_binding(binding);
    }
    for role in roles() {
        rbac.add_role(role);
    }
    for binding in role_bindings() {
        rbac.add_role_binding(binding);
    }
    Ok(rbac)
}

/// `ClusterRolesToAggregate`: the pre-aggregation role names and the roles their old rules
/// move to when upgrading (`admin` → `system:aggregate-to-admin`, and so on).
pub fn cluster_roles_to_aggregate() -> Vec<(&'static str, &'static str)> {
    vec![
        ("admin", "system:aggregate-to-admin"),
        ("edit", "system:aggregate-to-edit"),
        ("view", "system:aggregate-to-view"),
    ]
}

/// `ClusterRoleBindingsToSplit`: source binding name → the default binding its subjects are
/// copied to when upgrading (`system:discovery` → `system:public-info-viewer`).
pub fn cluster_role_bindings_to_split() -> Vec<(String, ClusterRoleBinding)> {
    cluster_role_bindings()
        .into_iter()
        .filter(|b| b.metadata.name.as_deref() == Some("system:public-info-viewer"))
        .map(|b| ("system:discovery".to_string(), b))
        .collect()
}

// Helpers shared by the policy files.

pub(crate) const READ: &[&str] = &["get", "list", "watch"];
pub(crate) const WRITE: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
pub(crate) const READ_WRITE: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
pub(crate) const READ_UPDATE: &[&str] = &["get", "list", "watch", "update", "patch"];

pub(crate) const LEGACY_GROUP: &str = "";
pub(crate) const APPS_GROUP: &str = "apps";
pub(crate) const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";
pub(crate) const AUTHORIZATION_GROUP: &str = "authorization.k8s.io";
pub(crate) const AUTOSCALING_GROUP: &str = "autoscaling";
pub(crate) const BATCH_GROUP: &str = "batch";
pub(crate) const CERTIFICATES_GROUP: &str = "certificates.k8s.io";
pub(crate) const COORDINATION_GROUP: &str = "coordination.k8s.io";
pub(crate) const DISCOVERY_GROUP: &str = "discovery.k8s.io";
pub(crate) const EXTENSIONS_GROUP: &str = "extensions";
pub(crate) const POLICY_GROUP: &str = "policy";
pub(crate) const RESOURCE_GROUP: &str = "resource.k8s.io";
pub(crate) const STORAGE_GROUP: &str = "storage.k8s.io";
pub(crate) const RES_METRICS_GROUP: &str = "metrics.k8s.io";
pub(crate) const CUSTOM_METRICS_GROUP: &str = "custom.metrics.k8s.io";
pub(crate) const EXTERNAL_METRICS_GROUP: &str = "external.metrics.k8s.io";
pub(crate) const NETWORKING_GROUP: &str = "networking.k8s.io";
pub(crate) const EVENTS_GROUP: &str = "events.k8s.io";
pub(crate) const INTERNAL_APISERVER_GROUP: &str = "internal.apiserver.k8s.io";
pub(crate) const ADMISSION_REGISTRATION_GROUP: &str = "admissionregistration.k8s.io";
pub(crate) const STORAGE_VERSION_MIGRATION_GROUP: &str = "storagemigration.k8s.io";
pub(crate) const NODE_GROUP: &str = "node.k8s.io";

/// `capi.LegacyUnknownSignerName`.
pub(crate) const LEGACY_UNKNOWN_SIGNER: &str = "kubernetes.io/legacy-unknown";
/// `capi.KubeletServingSignerName`.
pub(crate) const KUBELET_SERVING_SIGNER: &str = "kubernetes.io/kubelet-serving";
/// `capi.KubeAPIServerClientSignerName`.
pub(crate) const KUBE_APISERVER_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// `capi.KubeAPIServerClientKubeletSignerName`.
pub(crate) const KUBE_APISERVER_CLIENT_KUBELET_SIGNER: &str =
    "kubernetes.io/kube-apiserver-client-kubelet";

/// `NewRule(verbs...)`.
pub(crate) fn rule(verbs: &[&str]) -> PolicyRuleBuilder {
    new_rule(verbs)
}

/// `eventsRule()`: create, update and patch events in the core and `events.k8s.io` groups.
pub(crate) fn events_rule() -> PolicyRule {
    rule(&["create", "update", "patch"])
        .groups(&[LEGACY_GROUP, EVENTS_GROUP])
        .resources(&["events"])
        .build()
}

/// `addDefaultMetadata`: the bootstrapping label and the autoupdate annotation, on top of
/// the object's own labels.
pub(crate) fn bootstrap_meta(
    name: &str,
    namespace: Option<&str>,
    labels: &[(&str, &str)],
) -> ObjectMeta {
    let mut all_labels: BTreeMap<String, String> = labels
        .iter()
        .map(|(k, v)| ((*k).to_string(), (*v).to_string()))
        .collect();
    all_labels.insert(
        BOOTSTRAPPING_LABEL.to_string(),
        BOOTSTRAPPING_LABEL_VALUE.to_string(),
    );
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: Some(all_labels),
        annotations: Some(BTreeMap::from([(
            AUTOUPDATE_ANNOTATION.to_string(),
            "true".to_string(),
        )])),
        ..ObjectMeta::default()
    }
}

/// A ClusterRole with rules and default metadata.
pub(crate) fn cluster_role(name: &str, rules: Vec<PolicyRule>) -> ClusterRole {
    ClusterRole {
        metadata: bootstrap_meta(name, None, &[]),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// A ClusterRole with extra labels.
pub(crate) fn labeled_cluster_role(
    name: &str,
    labels: &[(&str, &str)],
    rules: Vec<PolicyRule>,
) -> ClusterRole {
    ClusterRole {
        metadata: bootstrap_meta(name, None, labels),
        rules: Some(rules),
        aggregation_rule: None,
    }
}

/// Subjects as upstream's binding builders add them: users and groups in the RBAC API
/// group, service accounts with a namespace and no API group.
#[derive(Default)]
pub(crate) struct Subjects(Vec<Subject>);

impl Subjects {
    pub(crate) fn groups(mut self, groups: &[&str]) -> Self {
        for g in groups {
            self.0.push(Subject {
                api_group: Some(RBAC_GROUP.to_string()),
                kind: GROUP_KIND.to_string(),
                name: (*g).to_string(),
                namespace: None,
            });
        }
        self
    }

    pub(crate) fn users(mut self, users: &[&str]) -> Self {
        for u in users {
            self.0.push(Subject {
                api_group: Some(RBAC_GROUP.to_string()),
                kind: USER_KIND.to_string(),
                name: (*u).to_string(),
                namespace: None,
            });
        }
        self
    }

    pub(crate) fn sas(mut self, namespace: &str, names: &[&str]) -> Self {
        for n in names {
            self.0.push(Subject {
                api_group: None,
                kind: SERVICE_ACCOUNT_KIND.to_string(),
                name: (*n).to_string(),
                namespace: Some(namespace.to_string()),
            });
        }
        self
    }
}

pub(crate) fn subjects() -> Subjects {
    Subjects::default()
}

/// `NewClusterBinding(role)`: a binding named after the ClusterRole it binds.
pub(crate) fn cluster_binding(role: &str, subjects: Subjects) -> ClusterRoleBinding {
    ClusterRoleBinding {
        metadata: bootstrap_meta(role, None, &[]),
        role_ref: RoleRef {
            api_group: RBAC_GROUP.to_string(),
            kind: "ClusterRole".to_string(),
            name: role.to_string(),
        },
        subjects: if subjects.0.is_empty() {
            None
        } else {
            Some(subjects.0)
        },
    }
}

/// `NewRoleBinding(role, namespace)`: a binding named after the Role it binds.
pub(crate) fn role_binding(role: &str, namespace: &str, subjects: Subjects) -> RoleBinding {
    RoleBinding {
        metadata: bootstrap_meta(role, Some(namespace), &[]),
        role_ref: RoleRef {
            api_group: RBAC_GROUP.to_string(),
            kind: "Role".to_string(),
            name: role.to_string(),
        },
        subjects: Some(subjects.0),
    }
}
