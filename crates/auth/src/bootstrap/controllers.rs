//! The controllers' roles, each bound to the controller's service account in `kube-system`
//! (upstream's `controller_policy.go`).

use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule};

use super::{
    ADMISSION_REGISTRATION_GROUP, APPS_GROUP, AUTHORIZATION_GROUP, AUTOSCALING_GROUP, BATCH_GROUP,
    CERTIFICATES_GROUP, CONTROLLER_ROLE_PREFIX, COORDINATION_GROUP, CUSTOM_METRICS_GROUP,
    DISCOVERY_GROUP, EXTENSIONS_GROUP, EXTERNAL_METRICS_GROUP, Features, INTERNAL_APISERVER_GROUP,
    KUBE_APISERVER_CLIENT_KUBELET_SIGNER, KUBE_APISERVER_CLIENT_SIGNER, KUBELET_SERVING_SIGNER,
    LEGACY_GROUP, LEGACY_UNKNOWN_SIGNER, NETWORKING_GROUP, POLICY_GROUP, RES_METRICS_GROUP,
    RESOURCE_GROUP, STORAGE_GROUP, STORAGE_VERSION_MIGRATION_GROUP, cluster_binding, cluster_role,
    events_rule, rule, subjects,
};

/// `legacytokentracking.ConfigMapName`.
const LEGACY_TOKEN_TRACKING_CONFIGMAP: &str =
    "kube-apiserver-legacy-service-account-token-tracking";

/// `(controller name without the prefix, rules)` for every enabled controller, in
/// upstream's order. One `push` per upstream `addControllerRole` call, some behind feature
/// gates.
#[allow(clippy::vec_init_then_push)]
fn controllers(features: &Features) -> Vec<(&'static str, Vec<PolicyRule>)> {
    let mut c: Vec<(&'static str, Vec<PolicyRule>)> = Vec::new();
    c.push((
        "attachdetach-controller",
        vec![
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumes", "persistentvolumeclaims"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            rule(&["patch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes/status"])
                .build(),
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
            rule(&["get", "create", "delete", "list", "watch"])
                .groups(&[STORAGE_GROUP])
                .resources(&["volumeattachments"])
                .build(),
            rule(&["get", "watch", "list"])
                .groups(&[STORAGE_GROUP])
                .resources(&["csidrivers"])
                .build(),
            rule(&["get", "watch", "list"])
                .groups(&[STORAGE_GROUP])
                .resources(&["csinodes"])
                .build(),
        ],
    ));
    c.push((
        "clusterrole-aggregation-controller",
        vec![
            // Full control over clusterroles, to write any aggregated rules.
            rule(&["escalate", "get", "list", "watch", "update", "patch"])
                .groups(&["rbac.authorization.k8s.io"])
                .resources(&["clusterroles"])
                .build(),
        ],
    ));
    c.push((
        "cronjob-controller",
        vec![
            rule(&["get", "list", "watch", "update"])
                .groups(&[BATCH_GROUP])
                .resources(&["cronjobs"])
                .build(),
            rule(&[
                "get", "list", "watch", "create", "update", "delete", "patch",
            ])
            .groups(&[BATCH_GROUP])
            .resources(&["jobs"])
            .build(),
            rule(&["update"])
                .groups(&[BATCH_GROUP])
                .resources(&["cronjobs/status"])
                .build(),
            rule(&["update"])
                .groups(&[BATCH_GROUP])
                .resources(&["cronjobs/finalizers"])
                .build(),
            rule(&["list", "watch", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "daemon-set-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["daemonsets"])
                .build(),
            rule(&["update"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["daemonsets/status"])
                .build(),
            rule(&["update"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["daemonsets/finalizers"])
                .build(),
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            rule(&["list", "watch", "create", "delete", "patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            rule(&["create"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/binding"])
                .build(),
            rule(&[
                "get", "list", "watch", "create", "delete", "update", "patch",
            ])
            .groups(&[APPS_GROUP])
            .resources(&["controllerrevisions"])
            .build(),
            events_rule(),
        ],
    ));
    c.push((
        "deployment-controller",
        vec![
            rule(&["get", "list", "watch", "update"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["deployments"])
                .build(),
            rule(&["update"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["deployments/status"])
                .build(),
            rule(&["update"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["deployments/finalizers"])
                .build(),
            rule(&[
                "get", "list", "watch", "create", "update", "patch", "delete",
            ])
            .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
            .resources(&["replicasets"])
            .build(),
            rule(&["get", "list", "watch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "disruption-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[EXTENSIONS_GROUP, APPS_GROUP])
                .resources(&["deployments"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
                .resources(&["replicasets"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["replicationcontrollers"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[POLICY_GROUP])
                .resources(&["poddisruptionbudgets"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[APPS_GROUP])
                .resources(&["statefulsets"])
                .build(),
            rule(&["update"])
                .groups(&[POLICY_GROUP])
                .resources(&["poddisruptionbudgets/status"])
                .build(),
            rule(&["patch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/status"])
                .build(),
            rule(&["get"])
                .groups(&["*"])
                .resources(&["*/scale"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "endpoint-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services", "pods"])
                .build(),
            rule(&["get", "list", "watch", "create", "update", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["endpoints"])
                .build(),
            rule(&["create"])
                .groups(&[LEGACY_GROUP])
                .resources(&["endpoints/restricted"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "endpointslice-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services", "pods", "nodes"])
                .build(),
            // Setting the service's finalizers lets the controller own slices with
            // blockOwnerDeletion.
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services/finalizers"])
                .build(),
            rule(&["get", "list", "watch", "create", "update", "delete"])
                .groups(&[DISCOVERY_GROUP])
                .resources(&["endpointslices"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "endpointslicemirroring-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services", "endpoints"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services/finalizers"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["endpoints/finalizers"])
                .build(),
            rule(&["get", "list", "watch", "create", "update", "delete"])
                .groups(&[DISCOVERY_GROUP])
                .resources(&["endpointslices"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "expand-controller",
        vec![
            rule(&["get", "list", "watch", "update", "patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumes"])
                .build(),
            rule(&["update", "patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims/status"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims"])
                .build(),
            events_rule(),
            // Volume plugin: portworx.
            rule(&["get"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services"])
                .build(),
        ],
    ));
    c.push((
        "ephemeral-volume-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/finalizers"])
                .build(),
            rule(&["get", "list", "watch", "create"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims"])
                .build(),
            events_rule(),
        ],
    ));
    if features.dynamic_resource_allocation {
        c.push((
            "resource-claim-controller",
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["pods"])
                    .build(),
                rule(&["update"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["pods/finalizers"])
                    .build(),
                rule(&["get", "list", "watch", "create", "delete"])
                    .groups(&[RESOURCE_GROUP])
                    .resources(&["resourceclaims"])
                    .build(),
                rule(&["update", "patch"])
                    .groups(&[RESOURCE_GROUP])
                    .resources(&["resourceclaims", "resourceclaims/status"])
                    .build(),
                rule(&["update", "patch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["pods/status"])
                    .build(),
                events_rule(),
            ],
        ));
    }
    c.push((
        "generic-garbage-collector",
        vec![
            // list/watch, selective gets and updates against any resource.
            rule(&["get", "list", "watch", "patch", "update", "delete"])
                .groups(&["*"])
                .resources(&["*"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "horizontal-pod-autoscaler",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[AUTOSCALING_GROUP])
                .resources(&["horizontalpodautoscalers"])
                .build(),
            rule(&["update"])
                .groups(&[AUTOSCALING_GROUP])
                .resources(&["horizontalpodautoscalers/status"])
                .build(),
            rule(&["get", "update"])
                .groups(&["*"])
                .resources(&["*/scale"])
                .build(),
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            // Resource, custom and external metrics.
            rule(&["list", "watch"])
                .groups(&[RES_METRICS_GROUP])
                .resources(&["pods"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[CUSTOM_METRICS_GROUP])
                .resources(&["*"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[EXTERNAL_METRICS_GROUP])
                .resources(&["*"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "job-controller",
        vec![
            rule(&["get", "list", "watch", "update", "patch"])
                .groups(&[BATCH_GROUP])
                .resources(&["jobs"])
                .build(),
            rule(&["update"])
                .groups(&[BATCH_GROUP])
                .resources(&["jobs/status"])
                .build(),
            rule(&["update"])
                .groups(&[BATCH_GROUP])
                .resources(&["jobs/finalizers"])
                .build(),
            rule(&["list", "watch", "create", "delete", "patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "namespace-controller",
        vec![
            rule(&["get", "list", "watch", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["namespaces"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["namespaces/finalize", "namespaces/status"])
                .build(),
            rule(&["get", "list", "watch", "delete", "deletecollection"])
                .groups(&["*"])
                .resources(&["*"])
                .build(),
        ],
    ));
    c.push((
        "node-controller",
        vec![
            rule(&["get", "list", "watch", "update", "delete", "patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            rule(&["patch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes/status"])
                .build(),
            // Pod deletion.
            rule(&["patch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/status"])
                .build(),
            rule(&["list", "watch", "get", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "persistent-volume-binder",
        vec![
            rule(&["get", "list", "watch", "update", "create", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumes"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumes/status"])
                .build(),
            rule(&["get", "list", "watch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims/status"])
                .build(),
            rule(&["list", "watch", "get", "create", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[STORAGE_GROUP])
                .resources(&["storageclasses"])
                .build(),
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            events_rule(),
            // recyclerClient.WatchPod.
            rule(&["watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["events"])
                .build(),
            // Volume plugin: portworx.
            rule(&["get"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services"])
                .build(),
        ],
    ));
    c.push((
        "pod-garbage-collector",
        vec![
            rule(&["list", "watch", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            rule(&["patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/status"])
                .build(),
        ],
    ));
    c.push((
        "replicaset-controller",
        vec![
            rule(&["get", "list", "watch", "update"])
                .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
                .resources(&["replicasets"])
                .build(),
            rule(&["update"])
                .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
                .resources(&["replicasets/status"])
                .build(),
            rule(&["update"])
                .groups(&[APPS_GROUP, EXTENSIONS_GROUP])
                .resources(&["replicasets/finalizers"])
                .build(),
            rule(&["list", "watch", "patch", "create", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "replication-controller",
        vec![
            // 1.0 controllers needed get and update.
            rule(&["get", "list", "watch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["replicationcontrollers"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["replicationcontrollers/status"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["replicationcontrollers/finalizers"])
                .build(),
            rule(&["list", "watch", "patch", "create", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "resourcequota-controller",
        vec![
            // Quota counts anything, so it reads everything.
            rule(&["list", "watch"])
                .groups(&["*"])
                .resources(&["*"])
                .build(),
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["resourcequotas/status"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "route-controller",
        vec![
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            rule(&["patch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes/status"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "service-account-controller",
        vec![
            rule(&["create"])
                .groups(&[LEGACY_GROUP])
                .resources(&["serviceaccounts"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "service-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services"])
                .build(),
            rule(&["patch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["services/status"])
                .build(),
            rule(&["list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            events_rule(),
        ],
    ));
    if features.multi_cidr_service_allocator {
        c.push((
            "service-cidrs-controller",
            vec![
                rule(&["get", "list", "watch", "patch", "update"])
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["servicecidrs"])
                    .build(),
                rule(&["patch", "update"])
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["servicecidrs/finalizers"])
                    .build(),
                rule(&["patch", "update"])
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["servicecidrs/status"])
                    .build(),
                rule(&["get", "list", "watch"])
                    .groups(&[NETWORKING_GROUP])
                    .resources(&["ipaddresses"])
                    .build(),
                events_rule(),
            ],
        ));
    }
    let mut statefulset = vec![
        rule(&["list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods"])
            .build(),
        rule(&["get", "list", "watch"])
            .groups(&[APPS_GROUP])
            .resources(&["statefulsets"])
            .build(),
        rule(&["update"])
            .groups(&[APPS_GROUP])
            .resources(&["statefulsets/status"])
            .build(),
        rule(&["update"])
            .groups(&[APPS_GROUP])
            .resources(&["statefulsets/finalizers"])
            .build(),
        rule(&["get", "create", "delete", "update", "patch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["pods"])
            .build(),
        rule(&[
            "get", "create", "delete", "update", "patch", "list", "watch",
        ])
        .groups(&[APPS_GROUP])
        .resources(&["controllerrevisions"])
        .build(),
        rule(&["get", "create", "list", "watch"])
            .groups(&[LEGACY_GROUP])
            .resources(&["persistentvolumeclaims"])
            .build(),
        events_rule(),
    ];
    if features.stateful_set_auto_delete_pvc {
        statefulset.push(
            rule(&["update", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims"])
                .build(),
        );
        statefulset.push(
            rule(&["update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods/finalizers"])
                .build(),
        );
    }
    c.push(("statefulset-controller", statefulset));
    c.push((
        "ttl-controller",
        vec![
            rule(&["update", "patch", "list", "watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["nodes"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "certificate-controller",
        vec![
            rule(&["get", "list", "watch", "delete"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&["certificatesigningrequests"])
                .build(),
            rule(&["update"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&[
                    "certificatesigningrequests/status",
                    "certificatesigningrequests/approval",
                ])
                .build(),
            rule(&["approve"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&["signers"])
                .names(&[KUBE_APISERVER_CLIENT_KUBELET_SIGNER])
                .build(),
            rule(&["sign"])
                .groups(&[CERTIFICATES_GROUP])
                .resources(&["signers"])
                .names(&[
                    LEGACY_UNKNOWN_SIGNER,
                    KUBE_APISERVER_CLIENT_SIGNER,
                    KUBE_APISERVER_CLIENT_KUBELET_SIGNER,
                    KUBELET_SERVING_SIGNER,
                ])
                .build(),
            rule(&["create"])
                .groups(&[AUTHORIZATION_GROUP])
                .resources(&["subjectaccessreviews"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "pvc-protection-controller",
        vec![
            rule(&["get", "list", "watch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumeclaims"])
                .build(),
            rule(&["list", "watch", "get"])
                .groups(&[LEGACY_GROUP])
                .resources(&["pods"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "pv-protection-controller",
        vec![
            rule(&["get", "list", "watch", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["persistentvolumes"])
                .build(),
            events_rule(),
        ],
    ));
    if features.volume_attributes_class {
        c.push((
            "volumeattributesclass-protection-controller",
            vec![
                rule(&["list", "watch", "get"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumeclaims"])
                    .build(),
                rule(&["list", "watch", "get"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumes"])
                    .build(),
                rule(&["get", "list", "watch", "update"])
                    .groups(&[STORAGE_GROUP])
                    .resources(&["volumeattributesclasses"])
                    .build(),
                events_rule(),
            ],
        ));
    }
    c.push((
        "ttl-after-finished-controller",
        vec![
            rule(&["get", "list", "watch", "delete"])
                .groups(&[BATCH_GROUP])
                .resources(&["jobs"])
                .build(),
            events_rule(),
        ],
    ));
    c.push((
        "root-ca-cert-publisher",
        vec![
            rule(&["create", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["configmaps"])
                .build(),
            events_rule(),
        ],
    ));
    if features.cluster_trust_bundle {
        c.push((
            "kube-apiserver-serving-clustertrustbundle-publisher",
            vec![
                rule(&["attest"])
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["signers"])
                    .names(&["kubernetes.io/kube-apiserver-serving"])
                    .build(),
                rule(&["create", "update", "delete", "list", "watch"])
                    .groups(&[CERTIFICATES_GROUP])
                    .resources(&["clustertrustbundles"])
                    .build(),
                events_rule(),
            ],
        ));
    }
    c.push((
        "validatingadmissionpolicy-status-controller",
        vec![
            rule(&["get", "list", "watch"])
                .groups(&[ADMISSION_REGISTRATION_GROUP])
                .resources(&["validatingadmissionpolicies"])
                .build(),
            rule(&["get", "patch", "update"])
                .groups(&[ADMISSION_REGISTRATION_GROUP])
                .resources(&["validatingadmissionpolicies/status"])
                .build(),
            events_rule(),
        ],
    ));
    if features.storage_version_api && features.api_server_identity {
        c.push((
            "storage-version-garbage-collector",
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[COORDINATION_GROUP])
                    .resources(&["leases"])
                    .build(),
                rule(&["get", "list", "watch", "patch", "update", "delete"])
                    .groups(&[INTERNAL_APISERVER_GROUP])
                    .resources(&["storageversions"])
                    .build(),
                rule(&["get", "patch", "update"])
                    .groups(&[INTERNAL_APISERVER_GROUP])
                    .resources(&["storageversions/status"])
                    .build(),
            ],
        ));
    }
    c.push((
        "legacy-service-account-token-cleaner",
        vec![
            rule(&["get"])
                .groups(&[LEGACY_GROUP])
                .resources(&["configmaps"])
                .names(&[LEGACY_TOKEN_TRACKING_CONFIGMAP])
                .build(),
            rule(&["patch", "delete"])
                .groups(&[LEGACY_GROUP])
                .resources(&["secrets"])
                .build(),
        ],
    ));
    if features.storage_version_migrator {
        c.push((
            "storage-version-migrator-controller",
            vec![
                // list for the current resourceVersion, patch for server-side apply, create
                // because applying a deleted object is a create.
                rule(&["list", "watch", "create", "patch"])
                    .groups(&["*"])
                    .resources(&["*"])
                    .build(),
                rule(&["update"])
                    .groups(&[STORAGE_VERSION_MIGRATION_GROUP])
                    .resources(&["storageversionmigrations/status"])
                    .build(),
            ],
        ));
    }
    if features.selinux_change_policy {
        c.push((
            "selinux-warning-controller",
            vec![
                events_rule(),
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumes"])
                    .build(),
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["persistentvolumeclaims"])
                    .build(),
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["pods"])
                    .build(),
                rule(&["get", "list", "watch"])
                    .groups(&[STORAGE_GROUP])
                    .resources(&["csidrivers"])
                    .build(),
            ],
        ));
    }
    c
}

/// `ControllerRoles()`: one `system:controller:<name>` ClusterRole per controller.
pub fn controller_roles(features: &Features) -> Vec<ClusterRole> {
    controllers(features)
        .into_iter()
        .map(|(name, rules)| cluster_role(&format!("{CONTROLLER_ROLE_PREFIX}{name}"), rules))
        .collect()
}

/// `ControllerRoleBindings()`: each controller role bound to the service account
/// `kube-system/<name>`.
pub fn controller_role_bindings(features: &Features) -> Vec<ClusterRoleBinding> {
    controllers(features)
        .into_iter()
        .map(|(name, _)| {
            cluster_binding(
                &format!("{CONTROLLER_ROLE_PREFIX}{name}"),
                subjects().sas("kube-system", &[name]),
            )
        })
        .collect()
}
