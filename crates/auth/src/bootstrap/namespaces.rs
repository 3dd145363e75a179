//! The namespaced default roles and bindings in `kube-system` and `kube-public` (upstream's
//! `namespace_policy.go`).

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};

use super::{
    CONTROLLER_ROLE_PREFIX, COORDINATION_GROUP, LEGACY_GROUP, bootstrap_meta, events_rule,
    role_binding, rule, subjects,
};
use crate::attributes::{KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER};

const KUBE_SYSTEM: &str = "kube-system";
const KUBE_PUBLIC: &str = "kube-public";

fn role(namespace: &str, name: &str, rules: Vec<k8s_openapi::api::rbac::v1::PolicyRule>) -> Role {
    Role {
        metadata: bootstrap_meta(name, Some(namespace), &[]),
        rules: Some(rules),
    }
}

fn leader_locking(component: &str) -> Role {
    role(
        KUBE_SYSTEM,
        &format!("system::leader-locking-{component}"),
        vec![
            rule(&["watch"])
                .groups(&[LEGACY_GROUP])
                .resources(&["configmaps"])
                .build(),
            rule(&["get", "update"])
                .groups(&[LEGACY_GROUP])
                .resources(&["configmaps"])
                .names(&[component])
                .build(),
            rule(&["get", "watch", "list", "create", "update"])
                .groups(&[COORDINATION_GROUP])
                .resources(&["leases"])
                .build(),
            rule(&["get", "watch", "list", "create", "update"])
                .groups(&[COORDINATION_GROUP])
                .resources(&["leasecandidates"])
                .build(),
        ],
    )
}

/// `NamespaceRoles()`, flattened: the `kube-system` roles, then the `kube-public` ones.
pub fn namespace_roles() -> Vec<Role> {
    let bootstrap_signer = format!("{CONTROLLER_ROLE_PREFIX}bootstrap-signer");
    vec![
        // Reading the authentication configuration published for extension API servers.
        role(
            KUBE_SYSTEM,
            "extension-apiserver-authentication-reader",
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["configmaps"])
                    .names(&["extension-apiserver-authentication"])
                    .build(),
            ],
        ),
        // The bootstrap signer inspects kube-system secrets.
        role(
            KUBE_SYSTEM,
            &bootstrap_signer,
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["secrets"])
                    .build(),
            ],
        ),
        // Cloud providers' config maps (deprecated since 1.10).
        role(
            KUBE_SYSTEM,
            &format!("{CONTROLLER_ROLE_PREFIX}cloud-provider"),
            vec![
                rule(&["create", "get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["configmaps"])
                    .build(),
            ],
        ),
        // The token cleaner removes secrets, in kube-system only.
        role(
            KUBE_SYSTEM,
            &format!("{CONTROLLER_ROLE_PREFIX}token-cleaner"),
            vec![
                rule(&["get", "list", "watch", "delete"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["secrets"])
                    .build(),
                events_rule(),
            ],
        ),
        leader_locking("kube-controller-manager"),
        leader_locking("kube-scheduler"),
        // The bootstrap signer writes its config map.
        role(
            KUBE_PUBLIC,
            &bootstrap_signer,
            vec![
                rule(&["get", "list", "watch"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["configmaps"])
                    .build(),
                rule(&["update"])
                    .groups(&[LEGACY_GROUP])
                    .resources(&["configmaps"])
                    .names(&["cluster-info"])
                    .build(),
                events_rule(),
            ],
        ),
    ]
}

/// `NamespaceRoleBindings()`, flattened: the `kube-system` bindings, then the
/// `kube-public` one.
pub fn namespace_role_bindings() -> Vec<RoleBinding> {
    let mut delegated_auth = role_binding(
        "extension-apiserver-authentication-reader",
        KUBE_SYSTEM,
        subjects().users(&[KUBE_CONTROLLER_MANAGER, KUBE_SCHEDULER]),
    );
    delegated_auth.metadata.name = Some("system::extension-apiserver-authentication-reader".into());
    let bootstrap_signer = format!("{CONTROLLER_ROLE_PREFIX}bootstrap-signer");
    vec![
        delegated_auth,
        role_binding(
            "system::leader-locking-kube-controller-manager",
            KUBE_SYSTEM,
            subjects().users(&[KUBE_CONTROLLER_MANAGER]).sas(
                KUBE_SYSTEM,
                &["kube-controller-manager", "leader-election-controller"],
            ),
        ),
        role_binding(
            "system::leader-locking-kube-scheduler",
            KUBE_SYSTEM,
            subjects()
                .users(&[KUBE_SCHEDULER])
                .sas(KUBE_SYSTEM, &["kube-scheduler"]),
        ),
        role_binding(
            &bootstrap_signer,
            KUBE_SYSTEM,
            subjects().sas(KUBE_SYSTEM, &["bootstrap-signer"]),
        ),
        role_binding(
            &format!("{CONTROLLER_ROLE_PREFIX}cloud-provider"),
            KUBE_SYSTEM,
            subjects().sas(KUBE_SYSTEM, &["cloud-provider"]),
        ),
        role_binding(
            &format!("{CONTROLLER_ROLE_PREFIX}token-cleaner"),
            KUBE_SYSTEM,
            subjects().sas(KUBE_SYSTEM, &["token-cleaner"]),
        ),
        role_binding(
            &bootstrap_signer,
            KUBE_PUBLIC,
            subjects().sas(KUBE_SYSTEM, &["bootstrap-signer"]),
        ),
    ]
}
