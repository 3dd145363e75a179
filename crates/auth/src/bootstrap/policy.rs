//! The cluster-wide default roles and bindings (upstream's `policy.go`).

use std::collections::BTreeMap;

use k8s_openapi::api::rbac::v1::{AggregationRule, ClusterRole, ClusterRoleBinding, PolicyRule};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

use super::{
    AGGREGATE_TO_ADMIN, AGGREGATE_TO_EDIT, AGGREGATE_TO_VIEW, APPS_GROUP, AUTHENTICATION_GROUP,
    AUTHORIZATION_GROUP, AUTOSCALING_GROUP, BATCH_GROUP, CERTIFICATES_GROUP, COORDINATION_GROUP,
    DISCOVERY_GROUP, EXTENSIONS_GROUP, Features, KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
    KUBE_APISERVER_CLIENT_SIGNER, KUBELET_SERVING_SIGNER, LEGACY_GROUP, LEGACY_UNKNOWN_SIGNER,
    NETWORKING_GROUP, NODE_GROUP, POLICY_GROUP, READ, READ_UPDATE, READ_WRITE, RESOURCE_GROUP,
    STORAGE_GROUP, WRITE, bootstrap_meta, cluster_binding, cluster_role, events_rule,
    labeled_cluster_role, rule, subjects,
};
use crate::attributes::{
    ALL_AUTHENTICATED, ALL_SERVICE_ACCOUNTS_GROUP, ALL_UNAUTHENTICATED, KUBE_CONTROLLER_MANAGER,
    KUBE_PROXY, KUBE_SCHEDULER, MONITORING_GROUP, NODES_GROUP, SYSTEM_PRIVILEGED_GROUP,
};

/// rkube's own role (not upstream's): the node agent's overlay network reads every Node
/// (their pod CIDRs, addresses and VTEP annotations), which the Node authorizer no
/// longer lets a node do (`AuthorizeNodeWithSelectors`). As k3s grants its flannel.
pub const OVERLAY_ROLE_NAME: &str = "rkube:overlay";

const SYSTEM_NODE_ROLE_NAME: &str = "system:node";

/// `NodeRules`: the rules of `system:node` (the Node authorizer and the NodeRestriction
/// admission plugin narrow them to the node's own objects).
pub fn node_rules(features: &Features) -> Vec<PolicyRule> {
    let mut rules = vec![
        // Needed to check API access. These creates are non-mutating.
        rule(&["create"])
            .groups(&[AUTHENTICATION_GROUP])
            .resources(&["tokenreviews"])
            .build(),
        rule(&["create"])
            .groups(&[AUTHORIZATION_GROUP])
            .resources(&["subjectaccessreviews", "localsubjectaccessreviews"])
            .build(),
        // Service lister, for the service environment variables.
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["services"])
            .build(),
        // Nodes register and report their own Node objects.
        rule(&["create", "get", "list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        rule(&["update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes/status"])
            .build(),
        rule(&["update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        rule(&["create", "update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["events"])
            .build(),
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["pods"])
            .build(),
        // Mirror pods.
        rule(&["create", "delete"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods"])
            .build(),
        rule(&["update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods/status"])
            .build(),
        rule(&["create"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods/eviction"])
            .build(),
        // Secrets and config maps referenced by the node's pods.
        rule(&["get", "list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["secrets", "configmaps"])
            .build(),
        rule(&["get"])
            .groups(&[LEGACY_GROUP])
            .resources(&["persistentvolumeclaims", "persistentvolumes"])
            .build(),
        rule(&["get"])
            .groups(&[LEGACY_GROUP])
            .resources(&["endpoints"])
            .build(),
        // Certificate rotation.
        rule(&["create", "get", "list", "watch"])
            .groups(&[CERTIFICATES_GROUP])
            .resources(&["certificatesigningrequests"])
            .build(),
        // Node leases.
        rule(&["get", "create", "update", "patch", "delete"])
            .groups(&[COORDINATION_GROUP])
            .resources(&["leases"])
            .build(),
        // CSI.
        rule(&["get"])
            .groups(&[STORAGE_GROUP])
            .resources(&["volumeattachments"])
            .build(),
        // Tokens for the service accounts of the node's pods.
        rule(&["create"])
            .groups(&[LEGACY_GROUP])
            .resources(&["serviceaccounts/token"])
            .build(),
        // Status of the node's pods' claims (volume expansion).
        rule(&["get", "update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["persistentvolumeclaims/status"])
            .build(),
        rule(&["get", "watch", "list"])
            .groups(&[STORAGE_GROUP])
            .resources(&["csidrivers"])
            .build(),
        rule(&["get", "create", "update", "patch", "delete"])
            .groups(&[STORAGE_GROUP])
            .resources(&["csinodes"])
            .build(),
        rule(&["get", "list", "watch"])
            .groups(&[NODE_GROUP])
            .resources(&["runtimeclasses"])
            .build(),
    ];
    if features.dynamic_resource_allocation {
        rules.push(
            rule(&["get"])
                .groups(&[RESOURCE_GROUP])
                .resources(&["resourceclaims"])
                .build(),
        );
        rules.push(
            rule(&["deletecollection"])
                .groups(&[RESOURCE_GROUP])
                .resources(&["resourceslices"])
                .build(),
        );
    }
    if features.cluster_trust_bundle {
        rules.push(
            rule(&["get", "list", "watch"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&["clustertrustbundles"])
                .build(),
        );
    }
    rules
}

fn aggregated(name: &str, labels: &[(&str, &str)], selector_label: &str) -> ClusterRole {
    ClusterRole {
        metadata: bootstrap_meta(name, None, labels),
        rules: None,
        aggregation_rule: Some(AggregationRule {
            cluster_role_selectors: Some(vec![LabelSelector {
                match_labels: Some(BTreeMap::from([(
                    selector_label.to_string(),
                    "true".to_string(),
                )])),
                match_expressions: None,
            }]),
        }),
    }
}

/// `ClusterRoles()`: the default ClusterRoles, controllers' roles excepted.
pub fn policy_cluster_roles(features: &Features) -> Vec<ClusterRole> {
    let mut monitoring = vec![
        rule(&["get"])
            .urls(&[
                "/metrics",
                "/metrics/slis",
                "/livez",
                "/readyz",
                "/healthz",
                "/livez/*",
                "/readyz/*",
                "/healthz/*",
            ])
            .build(),
    ];
    if features.component_flagz {
        monitoring.push(rule(&["get"]).urls(&["/flagz"]).build());
    }
    if features.component_statusz {
        monitoring.push(rule(&["get"]).urls(&["/statusz"]).build());
    }

    let mut roles = vec![
        // A root role which can do anything.
        cluster_role(
            "cluster-admin",
            vec![
                rule(&["*"]).groups(&["*"]).resources(&["*"]).build(),
                rule(&["*"]).urls(&["*"]).build(),
            ],
        ),
        // Enough to check readiness and discover API versions.
        cluster_role(
            "system:discovery",
            vec![
                rule(&["get"])
                    .urls(&[
                        "/livez",
                        "/readyz",
                        "/healthz",
                        "/version",
                        "/version/",
                        "/openapi",
                        "/openapi/*",
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                    ])
                    .build(),
            ],
        ),
        cluster_role("system:monitoring", monitoring),
        // Enough for a user to learn about themselves.
        cluster_role(
            "system:basic-user",
            vec![
                rule(&["create"])
                    .groups(&[AUTHORIZATION_GROUP])
                    .resources(&["selfsubjectaccessreviews", "selfsubjectrulesreviews"])
                    .build(),
                rule(&["create"])
                    .groups(&[AUTHENTICATION_GROUP])
                    .resources(&["selfsubjectreviews"])
                    .build(),
            ],
        ),
        // Insensitive cluster information.
        cluster_role(
            "system:public-info-viewer",
            vec![
                rule(&["get"])
                    .urls(&["/livez", "/readyz", "/healthz", "/version", "/version/"])
                    .build(),
            ],
        ),
        // Namespace admin: edit plus granting permissions.
        aggregated("admin", &[], AGGREGATE_TO_ADMIN),
        // Namespace editor: every user-level action, nothing privileged.
        aggregated("edit", &[(AGGREGATE_TO_ADMIN, "true")], AGGREGATE_TO_EDIT),
        // Namespace viewer: read-only on non-escalating resources.
        aggregated("view", &[(AGGREGATE_TO_EDIT, "true")], AGGREGATE_TO_VIEW),
        labeled_cluster_role(
            "system:aggregate-to-admin",
            &[(AGGREGATE_TO_ADMIN, "true")],
            vec![
                rule(&["create"])
                    .groups(&[AUTHORIZATION_GROUP])
                    .resources(&["localsubjectaccessreviews"])
                    .build(),
                rule(READ_WRITE)
                    .groups(&["rbac.authorization.k8s.io"])
                    .resources(&["roles", "rolebindings"])
                    .build(),
            ],
        ),
        labeled_cluster_role(
            "system:aggregate-to-edit",
            &[(AGGREGATE_TO_EDIT, "true")],
            vec![
                // Read on escalating resources.
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&[
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ])
                    .build(),
                rule(&["impersonate"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["serviceaccounts"])
                    .build(),
                rule(WRITE)
                    .groups(&[LEGACY_GROUP])
                    .resources(&[
                        "pods",
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                    ])
                    .build(),
                rule(&["create"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["pods/eviction"])
                    .build(),
                rule(WRITE)
                    .groups(&[LEGACY_GROUP])
                    .resources(&[
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ])
                    .build(),
                rule(&["create"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["serviceaccounts/token"])
                    .build(),
                rule(WRITE)
                    .groups(&[APPS_GROUP])
                    .resources(&[
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ])
                    .build(),
                rule(WRITE)
                    .groups(&[AUTOSCALING_GROUP])
                    .resources(&["horizontalpodautoscalers"])
                    .build(),
                rule(WRITE)
                    .groups(&[BATCH_GROUP])
                    .resources(&["jobs", "cronjobs"])
                    .build(),
                rule(WRITE)
                    .groups(&[EXTENSIONS_GROUP])
                    .resources(&[
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "ingresses",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ])
                    .build(),
                rule(WRITE)
                    .groups(&[POLICY_GROUP])
                    .resources(&["poddisruptionbudgets"])
                    .build(),
                rule(WRITE)
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["networkpolicies", "ingresses"])
                    .build(),
                rule(READ_WRITE)
                    .groups(&[COORDINATION_GROUP])
                    .resources(&["leases"])
                    .build(),
            ],
        ),
        labeled_cluster_role(
            "system:aggregate-to-view",
            &[(AGGREGATE_TO_VIEW, "true")],
            vec![
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&[
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ])
                    .build(),
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&[
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ])
                    .build(),
                // Reading namespaces at namespace scope reads *this* namespace.
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&["namespaces"])
                    .build(),
                rule(READ)
                    .groups(&[DISCOVERY_GROUP])
                    .resources(&["endpointslices"])
                    .build(),
                rule(READ)
                    .groups(&[APPS_GROUP])
                    .resources(&[
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ])
                    .build(),
                rule(READ)
                    .groups(&[AUTOSCALING_GROUP])
                    .resources(&[
                        "horizontalpodautoscalers",
                        "horizontalpodautoscalers/status",
                    ])
                    .build(),
                rule(READ)
                    .groups(&[BATCH_GROUP])
                    .resources(&["jobs", "cronjobs", "cronjobs/status", "jobs/status"])
                    .build(),
                rule(READ)
                    .groups(&[EXTENSIONS_GROUP])
                    .resources(&[
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ])
                    .build(),
                rule(READ)
                    .groups(&[POLICY_GROUP])
                    .resources(&["poddisruptionbudgets", "poddisruptionbudgets/status"])
                    .build(),
                rule(READ)
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["networkpolicies", "ingresses", "ingresses/status"])
                    .build(),
            ],
        ),
        // Heapster's connections back to the API server.
        cluster_role(
            "system:heapster",
            vec![
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&["events", "pods", "nodes", "namespaces"])
                    .build(),
                rule(READ)
                    .groups(&[EXTENSIONS_GROUP])
                    .resources(&["deployments"])
                    .build(),
            ],
        ),
        // What nodes need to run pods.
        cluster_role(SYSTEM_NODE_ROLE_NAME, node_rules(features)),
        // node-problem-detector (not bound by default).
        cluster_role(
            "system:node-problem-detector",
            vec![
                rule(&["get"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["nodes"])
                    .build(),
                rule(&["patch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["nodes/status"])
                    .build(),
                events_rule(),
            ],
        ),
        // Bootstrapping a node's client certificates.
        cluster_role(
            "system:node-bootstrapper",
            vec![
                rule(&["create", "get", "list", "watch"])
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["certificatesigningrequests"])
                    .build(),
            ],
        ),
        // Authentication and authorization delegation.
        cluster_role(
            "system:auth-delegator",
            vec![
                rule(&["create"])
                    .groups(&[AUTHENTICATION_GROUP])
                    .resources(&["tokenreviews"])
                    .build(),
                rule(&["create"])
                    .groups(&[AUTHORIZATION_GROUP])
                    .resources(&["subjectaccessreviews"])
                    .build(),
            ],
        ),
        // The aggregator sees every service it may point to.
        cluster_role(
            "system:kube-aggregator",
            vec![
                rule(READ)
                    .groups(&[LEGACY_GROUP])
                    .resources(&["services", "endpoints"])
                    .build(),
            ],
        ),
        // Bootstrapping the controller manager: shared informers, service accounts and
        // secrets for the controllers' own identities.
        cluster_role(
            "system:kube-controller-manager",
            vec![
                events_rule(),
                // Leader election.
                rule(&["create"])
                    .groups(&[COORDINATION_GROUP])
                    .resources(&["leases"])
                    .build(),
                rule(&["get", "update"])
                    .groups(&[COORDINATION_GROUP])
                    .resources(&["leases"])
                    .names(&["kube-controller-manager"])
                    .build(),
                // Fundamental resources.
                rule(&["create"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["secrets", "serviceaccounts"])
                    .build(),
                rule(&["delete"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["secrets"])
                    .build(),
                rule(&["get"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["namespaces", "secrets", "serviceaccounts", "configmaps"])
                    .build(),
                rule(&["update"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["secrets", "serviceaccounts"])
                    .build(),
                // API access checks (non-mutating).
                rule(&["create"])
                    .groups(&[AUTHENTICATION_GROUP])
                    .resources(&["tokenreviews"])
                    .build(),
                rule(&["create"])
                    .groups(&[AUTHORIZATION_GROUP])
                    .resources(&["subjectaccessreviews"])
                    .build(),
                // Every shared informer.
                rule(&["list", "watch"])
                    .groups(&["*"])
                    .resources(&["*"])
                    .build(),
                rule(&["create"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["serviceaccounts/token"])
                    .build(),
            ],
        ),
        cluster_role(
            "system:kube-dns",
            vec![
                rule(&["list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["endpoints", "services"])
                    .build(),
            ],
        ),
        // External persistent volume provisioners.
        cluster_role(
            "system:persistent-volume-provisioner",
            vec![
                rule(&["get", "list", "watch", "create", "delete"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumes"])
                    .build(),
                // update for the lock annotations on claims.
                rule(&["get", "list", "watch", "update"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumeclaims"])
                    .build(),
                rule(READ)
                    .groups(&[STORAGE_GROUP])
                    .resources(&["storageclasses"])
                    .build(),
                // Provisioning success and failure events.
                rule(&["watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["events"])
                    .build(),
                events_rule(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            vec![
                rule(&["create"])
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["certificatesigningrequests/nodeclient"])
                    .build(),
            ],
        ),
        cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            vec![
                rule(&["create"])
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["certificatesigningrequests/selfnodeclient"])
                    .build(),
            ],
        ),
        cluster_role(
            "system:volume-scheduler",
            vec![
                rule(READ_UPDATE)
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumes"])
                    .build(),
                rule(READ)
                    .groups(&[STORAGE_GROUP])
                    .resources(&["storageclasses"])
                    .build(),
                rule(READ_UPDATE)
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumeclaims"])
                    .build(),
            ],
        ),
        signer_approver(
            "system:certificates.k8s.io:legacy-unknown-approver",
            LEGACY_UNKNOWN_SIGNER,
        ),
        signer_approver(
            "system:certificates.k8s.io:kubelet-serving-approver",
            KUBELET_SERVING_SIGNER,
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            KUBE_APISERVER_CLIENT_SIGNER,
        ),
        signer_approver(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
        ),
        // The ServiceAccountIssuerDiscovery endpoints (with the trailing-slash forms older
        // generated clients use).
        cluster_role(
            "system:service-account-issuer-discovery",
            vec![
                rule(&["get"])
                    .urls(&[
                        "/.well-known/openid-configuration",
                        "/.well-known/openid-configuration/",
                        "/openid/v1/jwks",
                        "/openid/v1/jwks/",
                    ])
                    .build(),
            ],
        ),
    ];

    // Full access to the kubelet API.
    let mut kubelet_api_admin = vec![
        rule(&["get", "list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        rule(&["proxy"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        rule(&["*"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"])
            .build(),
    ];
    if features.kubelet_fine_grained_authz {
        kubelet_api_admin.push(
            rule(&["*"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes/pods", "nodes/healthz", "nodes/configz"])
                .build(),
        );
    }
    roles.push(cluster_role("system:kubelet-api-admin", kubelet_api_admin));

    // kube-proxy.
    let mut node_proxier = vec![
        rule(&["list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["services", "endpoints"])
            .build(),
        rule(&["get", "list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        events_rule(),
    ];
    if features.multi_cidr_service_allocator {
        node_proxier.push(
            rule(&["list", "watch"])
                .groups(&[NETWORKING_GROUP])
                .resources(&["servicecidrs"])
                .build(),
        );
    }
    node_proxier.push(
        rule(&["list", "watch"])
            .groups(&[DISCOVERY_GROUP])
            .resources(&["endpointslices"])
            .build(),
    );
    roles.push(cluster_role("system:node-proxier", node_proxier));
    roles.push(cluster_role(
        OVERLAY_ROLE_NAME,
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
        ],
    ));

    roles.push(cluster_role(
        "system:kube-scheduler",
        kube_scheduler_rules(features),
    ));

    if features.cluster_trust_bundle {
        roles.push(cluster_role(
            "system:cluster-trust-bundle-discovery",
            vec![
                rule(READ)
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["clustertrustbundles"])
                    .build(),
            ],
        ));
    }
    roles
}

fn signer_approver(name: &str, signer: &str) -> ClusterRole {
    cluster_role(
        name,
        vec![
            rule(&["approve"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&["signers"])
                .names(&[signer])
                .build(),
        ],
    )
}

fn kube_scheduler_rules(features: &Features) -> Vec<PolicyRule> {
    let mut rules = vec![
        events_rule(),
        // Leader election.
        rule(&["create"])
            .groups(&[COORDINATION_GROUP])
            .resources(&["leases"])
            .build(),
        rule(&["get", "update", "list", "watch"])
            .groups(&[COORDINATION_GROUP])
            .resources(&["leases"])
            .names(&["kube-scheduler"])
            .build(),
        rule(READ_WRITE)
            .groups(&[COORDINATION_GROUP])
            .resources(&["leasecandidates"])
            .build(),
        // Fundamental resources.
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["nodes"])
            .build(),
        rule(&["get", "list", "watch", "delete"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods"])
            .build(),
        rule(&["create"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods/binding", "bindings"])
            .build(),
        rule(&["patch", "update"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods/status"])
            .build(),
        // Things that select pods.
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["services", "replicationcontrollers"])
            .build(),
        rule(READ)
            .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
            .resources(&["replicasets"])
            .build(),
        rule(READ)
            .groups(&[APPS_GROUP])
            .resources(&["statefulsets"])
            .build(),
        // Things pods use or that apply to them.
        rule(READ)
            .groups(&[POLICY_GROUP])
            .resources(&["poddisruptionbudgets"])
            .build(),
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["persistentvolumeclaims", "persistentvolumes"])
            .build(),
        // API access checks (non-mutating).
        rule(&["create"])
            .groups(&[AUTHENTICATION_GROUP])
            .resources(&["tokenreviews"])
            .build(),
        rule(&["create"])
            .groups(&[AUTHORIZATION_GROUP])
            .resources(&["subjectaccessreviews"])
            .build(),
        // Volume limits.
        rule(READ)
            .groups(&[STORAGE_GROUP])
            .resources(&["csinodes"])
            .build(),
        rule(&["get", "list", "watch"])
            .groups(&[STORAGE_GROUP])
            .resources(&["volumeattachments"])
            .build(),
        // namespaceSelector in pod affinity.
        rule(READ)
            .groups(&[LEGACY_GROUP])
            .resources(&["namespaces"])
            .build(),
        rule(READ)
            .groups(&[STORAGE_GROUP])
            .resources(&["csidrivers"])
            .build(),
        rule(READ)
            .groups(&[STORAGE_GROUP])
            .resources(&["csistoragecapacities"])
            .build(),
    ];
    if features.dynamic_resource_allocation {
        rules.extend([
            rule(READ)
                .groups(&[RESOURCE_GROUP])
                .resources(&["deviceclasses"])
                .build(),
            rule(READ_UPDATE)
                .groups(&[RESOURCE_GROUP])
                .resources(&["resourceclaims"])
                .build(),
            rule(READ_UPDATE)
                .groups(&[RESOURCE_GROUP])
                .resources(&["resourceclaims/status"])
                .build(),
            rule(READ_UPDATE)
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/finalizers"])
                .build(),
            rule(READ)
                .groups(&[RESOURCE_GROUP])
                .resources(&["resourceslices"])
                .build(),
        ]);
    }
    rules
}

/// `ClusterRoleBindings()`: the default ClusterRoleBindings, controllers' bindings excepted.
pub fn policy_cluster_role_bindings(features: &Features) -> Vec<ClusterRoleBinding> {
    let mut bindings = vec![
        cluster_binding(
            "cluster-admin",
            subjects().groups(&[SYSTEM_PRIVILEGED_GROUP]),
        ),
        cluster_binding("system:monitoring", subjects().groups(&[MONITORING_GROUP])),
        cluster_binding("system:discovery", subjects().groups(&[ALL_AUTHENTICATED])),
        cluster_binding("system:basic-user", subjects().groups(&[ALL_AUTHENTICATED])),
        cluster_binding(
            "system:public-info-viewer",
            subjects().groups(&[ALL_AUTHENTICATED, ALL_UNAUTHENTICATED]),
        ),
        cluster_binding("system:node-proxier", subjects().users(&[KUBE_PROXY])),
        cluster_binding(OVERLAY_ROLE_NAME, subjects().groups(&[NODES_GROUP])),
        cluster_binding(
            "system:kube-controller-manager",
            subjects().users(&[KUBE_CONTROLLER_MANAGER]),
        ),
        cluster_binding(
            "system:kube-dns",
            subjects().sas("kube-system", &["kube-dns"]),
        ),
        cluster_binding("system:kube-scheduler", subjects().users(&[KUBE_SCHEDULER])),
        cluster_binding(
            "system:volume-scheduler",
            subjects().users(&[KUBE_SCHEDULER]),
        ),
        // Deprecated since the Node authorizer: kept without subjects so that reconciliation
        // can remove old ones.
        cluster_binding(SYSTEM_NODE_ROLE_NAME, subjects()),
        // In-cluster workloads may read the OIDC discovery endpoints.
        cluster_binding(
            "system:service-account-issuer-discovery",
            subjects().groups(&[ALL_SERVICE_ACCOUNTS_GROUP]),
        ),
    ];
    if features.cluster_trust_bundle {
        bindings.push(cluster_binding(
            "system:cluster-trust-bundle-discovery",
            subjects().groups(&[ALL_SERVICE_ACCOUNTS_GROUP]),
        ));
    }
    bindings
}
