//! The bootstrap policy, checked through the RBAC authorizer as a cluster would use it.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;

use auth::attributes::{ALL_AUTHENTICATED, ALL_UNAUTHENTICATED, KUBE_SCHEDULER};
use auth::bootstrap::{self, Features};
use auth::rbac::RBAC_GROUP;
use auth::{
    Attributes, Authorizer, Decision, PolicyRuleBuilder, RbacAuthorizer, StaticRbac, Union,
    UserInfo,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

fn policy() -> StaticRbac {
    bootstrap::static_rbac().expect("bootstrap policy aggregates")
}

/// The bootstrap policy plus a RoleBinding of ClusterRole `role` to user `user` in `ns`.
fn with_binding(role: &str, user: &str, ns: &str) -> RbacAuthorizer<StaticRbac> {
    let binding = RoleBinding {
        metadata: ObjectMeta {
            name: Some(format!("{user}-{role}")),
            namespace: Some(ns.into()),
            ..ObjectMeta::default()
        },
        role_ref: RoleRef {
            api_group: RBAC_GROUP.into(),
            kind: "ClusterRole".into(),
            name: role.into(),
        },
        subjects: Some(vec![Subject {
            api_group: Some(RBAC_GROUP.into()),
            kind: "User".into(),
            name: user.into(),
            namespace: None,
        }]),
    };
    RbacAuthorizer::new(policy().with_role_binding(binding))
}

fn authed(name: &str) -> UserInfo {
    UserInfo::new(name, [ALL_AUTHENTICATED])
}

fn allowed(a: &dyn Authorizer, attrs: &Attributes) -> bool {
    a.authorize(attrs).0 == Decision::Allow
}

fn res(user: &UserInfo, verb: &str, group: &str, resource: &str, ns: &str) -> Attributes {
    Attributes::resource(user.clone(), verb, group, resource).in_namespace(ns)
}

#[test]
fn view_reads_workloads_but_not_secrets() {
    let a = with_binding("view", "viewer", "team");
    let u = authed("viewer");
    for (group, resource) in [
        ("", "pods"),
        ("", "configmaps"),
        ("", "services"),
        ("apps", "deployments"),
        ("batch", "jobs"),
        ("discovery.k8s.io", "endpointslices"),
    ] {
        for verb in ["get", "list", "watch"] {
            assert!(
                allowed(&a, &res(&u, verb, group, resource, "team")),
                "view should {verb} {resource}"
            );
        }
    }
    assert!(allowed(
        &a,
        &res(&u, "get", "", "pods", "team").with_subresource("log")
    ));
    assert!(!allowed(&a, &res(&u, "get", "", "secrets", "team")));
    assert!(!allowed(&a, &res(&u, "list", "", "secrets", "team")));
    assert!(!allowed(&a, &res(&u, "create", "", "pods", "team")));
    assert!(!allowed(
        &a,
        &res(&u, "create", "", "pods", "team").with_subresource("exec")
    ));
    assert!(!allowed(
        &a,
        &res(&u, "get", "rbac.authorization.k8s.io", "roles", "team")
    ));
    // Only in the bound namespace.
    assert!(!allowed(&a, &res(&u, "get", "", "pods", "other")));
}

#[test]
fn edit_writes_workloads_and_admin_manages_rbac() {
    let a = with_binding("edit", "editor", "team");
    let u = authed("editor");
    assert!(allowed(
        &a,
        &res(&u, "create", "apps", "deployments", "team")
    ));
    assert!(allowed(
        &a,
        &res(&u, "update", "apps", "deployments", "team").with_subresource("scale")
    ));
    assert!(allowed(&a, &res(&u, "get", "", "secrets", "team")));
    assert!(allowed(&a, &res(&u, "delete", "", "pods", "team")));
    assert!(allowed(
        &a,
        &res(&u, "create", "", "pods", "team").with_subresource("exec")
    ));
    // edit includes view.
    assert!(allowed(
        &a,
        &res(&u, "get", "apps", "controllerrevisions", "team")
    ));
    assert!(!allowed(
        &a,
        &res(&u, "create", "rbac.authorization.k8s.io", "roles", "team")
    ));
    assert!(!allowed(
        &a,
        &res(&u, "update", "", "resourcequotas", "team")
    ));

    let a = with_binding("admin", "boss", "team");
    let u = authed("boss");
    assert!(allowed(
        &a,
        &res(&u, "create", "rbac.authorization.k8s.io", "roles", "team")
    ));
    assert!(allowed(
        &a,
        &res(
            &u,
            "create",
            "authorization.k8s.io",
            "localsubjectaccessreviews",
            "team"
        )
    ));
    assert!(allowed(
        &a,
        &res(&u, "create", "apps", "deployments", "team")
    ));
    assert!(!allowed(&a, &res(&u, "create", "", "nodes", "")));
}

#[test]
fn aggregated_roles_match_their_parts() {
    let roles = bootstrap::aggregated_cluster_roles().unwrap();
    let get = |name: &str| {
        roles
            .iter()
            .find(|r| r.metadata.name.as_deref() == Some(name))
            .unwrap_or_else(|| panic!("{name} missing"))
            .rules
            .clone()
            .unwrap_or_default()
    };
    let view = get("view");
    assert_eq!(view, get("system:aggregate-to-view"));
    let edit = get("edit");
    // edit = system:aggregate-to-edit, then view (selected roles sorted by name).
    let mut expected = get("system:aggregate-to-edit");
    expected.extend(view.clone());
    assert_eq!(edit, expected);
    let admin = get("admin");
    let mut expected = edit.clone();
    expected.extend(get("system:aggregate-to-admin"));
    assert_eq!(admin, expected);
}

#[test]
fn scheduler_binds_pods() {
    let a = RbacAuthorizer::new(policy());
    let sched = UserInfo::new(KUBE_SCHEDULER, [ALL_AUTHENTICATED]);
    let bind = res(&sched, "create", "", "pods", "default").with_subresource("binding");
    let (decision, reason) = a.authorize(&bind);
    assert_eq!(decision, Decision::Allow);
    assert_eq!(
        reason,
        r#"RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler""#
    );
    assert!(allowed(
        &a,
        &res(&sched, "create", "", "bindings", "default")
    ));
    assert!(allowed(&a, &res(&sched, "list", "", "nodes", "")));
    assert!(allowed(
        &a,
        &res(&sched, "update", "", "persistentvolumes", "")
    ));
    assert!(allowed(
        &a,
        &res(
            &sched,
            "update",
            "coordination.k8s.io",
            "leases",
            "kube-system"
        )
        .named("kube-scheduler")
    ));
    assert!(!allowed(
        &a,
        &res(&sched, "update", "coordination.k8s.io", "leases", "default").named("other")
    ));
    assert!(!allowed(&a, &res(&sched, "create", "", "pods", "default")));
    assert!(!allowed(&a, &res(&sched, "get", "", "secrets", "default")));
}

#[test]
fn node_role_content() {
    let roles = bootstrap::cluster_roles();
    let node = roles
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some("system:node"))
        .unwrap();
    let rules = node.rules.clone().unwrap();
    assert_eq!(rules, bootstrap::node_rules(&Features::default()));
    assert_eq!(rules.len(), 22);
    let rule = |verbs: &[&str], group: &str, resources: &[&str]| {
        PolicyRuleBuilder::new(verbs)
            .groups(&[group])
            .resources(resources)
            .build()
    };
    assert_eq!(
        rules[0],
        rule(&["create"], "authentication.k8s.io", &["tokenreviews"])
    );
    assert_eq!(
        rules[3],
        rule(&["create", "get", "list", "watch"], "", &["nodes"])
    );
    assert_eq!(
        rules[11],
        rule(&["get", "list", "watch"], "", &["configmaps", "secrets"])
    );
    assert_eq!(
        rules[15],
        rule(
            &["create", "delete", "get", "patch", "update"],
            "coordination.k8s.io",
            &["leases"]
        )
    );
    assert_eq!(
        rules[21],
        rule(
            &["get", "list", "watch"],
            "node.k8s.io",
            &["runtimeclasses"]
        )
    );
    // The legacy system:node binding has no subjects: nodes are authorized by the Node
    // authorizer, so a node user gets nothing from RBAC alone.
    let binding = bootstrap::cluster_role_bindings()
        .into_iter()
        .find(|b| b.metadata.name.as_deref() == Some("system:node"))
        .unwrap();
    assert_eq!(binding.subjects, None);
    let a = RbacAuthorizer::new(policy());
    let node_user = UserInfo::new("system:node:n1", ["system:nodes", ALL_AUTHENTICATED]);
    assert!(!allowed(
        &a,
        &res(&node_user, "get", "", "secrets", "default")
    ));
    // DRA and ClusterTrustBundle rules come with their gates.
    let all = Features {
        dynamic_resource_allocation: true,
        cluster_trust_bundle: true,
        ..Features::default()
    };
    assert_eq!(bootstrap::node_rules(&all).len(), 25);
}

#[test]
fn every_binding_references_an_existing_role() {
    let cluster_roles: BTreeSet<String> = bootstrap::cluster_roles()
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    for binding in bootstrap::cluster_role_bindings() {
        assert_eq!(binding.role_ref.kind, "ClusterRole");
        assert_eq!(binding.role_ref.api_group, RBAC_GROUP);
        assert!(
            cluster_roles.contains(&binding.role_ref.name),
            "{:?} refers to a missing role",
            binding.metadata.name
        );
    }
    let roles: BTreeSet<(String, String)> = bootstrap::roles()
        .into_iter()
        .map(|r| (r.metadata.namespace.unwrap(), r.metadata.name.unwrap()))
        .collect();
    for binding in bootstrap::role_bindings() {
        let ns = binding.metadata.namespace.clone().unwrap();
        let found = match binding.role_ref.kind.as_str() {
            "Role" => roles.contains(&(ns, binding.role_ref.name.clone())),
            "ClusterRole" => cluster_roles.contains(&binding.role_ref.name),
            other => panic!("unexpected kind {other}"),
        };
        assert!(
            found,
            "{:?} refers to a missing role",
            binding.metadata.name
        );
    }
    // With every gate on, the same holds.
    let all = Features {
        dynamic_resource_allocation: true,
        cluster_trust_bundle: true,
        component_flagz: true,
        component_statusz: true,
        kubelet_fine_grained_authz: true,
        multi_cidr_service_allocator: true,
        stateful_set_auto_delete_pvc: true,
        volume_attributes_class: true,
        storage_version_api: true,
        api_server_identity: true,
        storage_version_migrator: true,
        selinux_change_policy: true,
    };
    let names: BTreeSet<String> = bootstrap::cluster_roles_with(&all)
        .into_iter()
        .filter_map(|r| r.metadata.name)
        .collect();
    for binding in bootstrap::cluster_role_bindings_with(&all) {
        assert!(names.contains(&binding.role_ref.name));
    }
}

#[test]
fn names_are_unique_and_metadata_is_upstreams() {
    let mut seen = BTreeSet::new();
    for role in bootstrap::cluster_roles() {
        let name = role.metadata.name.clone().unwrap();
        assert!(seen.insert(name.clone()), "duplicate role {name}");
        let labels = role.metadata.labels.clone().unwrap();
        assert_eq!(
            labels
                .get("kubernetes.io/bootstrapping")
                .map(String::as_str),
            Some("rbac-defaults"),
            "{name}"
        );
        let annotations = role.metadata.annotations.clone().unwrap();
        assert_eq!(
            annotations
                .get("rbac.authorization.kubernetes.io/autoupdate")
                .map(String::as_str),
            Some("true")
        );
    }
    let mut seen = BTreeSet::new();
    for binding in bootstrap::cluster_role_bindings() {
        let name = binding.metadata.name.clone().unwrap();
        assert!(seen.insert(name.clone()), "duplicate binding {name}");
        assert!(
            binding
                .metadata
                .labels
                .unwrap()
                .contains_key("kubernetes.io/bootstrapping")
        );
    }
    for role in bootstrap::roles() {
        assert!(
            role.metadata
                .annotations
                .unwrap()
                .contains_key("rbac.authorization.kubernetes.io/autoupdate")
        );
    }
    for binding in bootstrap::role_bindings() {
        assert!(
            binding
                .metadata
                .labels
                .unwrap()
                .contains_key("kubernetes.io/bootstrapping")
        );
    }
}

/// Every bootstrap rule is valid (upstream builds them with `RuleOrDie`) and has its lists
/// sorted.
#[test]
fn every_rule_is_valid_and_sorted() {
    let mut all: Vec<PolicyRule> = Vec::new();
    for role in bootstrap::cluster_roles() {
        all.extend(role.rules.unwrap_or_default());
    }
    for role in bootstrap::roles() {
        all.extend(role.rules.unwrap_or_default());
    }
    for rule in all {
        let sorted = |v: &[String]| v.windows(2).all(|w| w[0] <= w[1]);
        assert!(!rule.verbs.is_empty());
        assert!(sorted(&rule.verbs), "{rule:?}");
        for list in [
            &rule.api_groups,
            &rule.resources,
            &rule.resource_names,
            &rule.non_resource_urls,
        ]
        .into_iter()
        .flatten()
        {
            assert!(!list.is_empty(), "{rule:?}");
            assert!(sorted(list), "{rule:?}");
        }
        let urls = rule.non_resource_urls.is_some();
        let resources = rule.resources.is_some();
        assert!(urls != resources, "{rule:?}");
        if resources {
            assert!(rule.api_groups.is_some(), "{rule:?}");
        }
    }
}

#[test]
fn controllers_we_run_have_their_roles() {
    let a = RbacAuthorizer::new(policy());
    let sa = |name: &str| {
        let mut u = UserInfo::service_account("kube-system", name);
        u.groups.push(ALL_AUTHENTICATED.into());
        u
    };
    let cases: &[(&str, &str, &str, &str, &str)] = &[
        ("deployment-controller", "create", "apps", "replicasets", ""),
        (
            "deployment-controller",
            "update",
            "apps",
            "deployments",
            "status",
        ),
        ("replicaset-controller", "create", "", "pods", ""),
        (
            "replication-controller",
            "update",
            "",
            "replicationcontrollers",
            "status",
        ),
        ("daemon-set-controller", "create", "", "pods", "binding"),
        (
            "statefulset-controller",
            "create",
            "",
            "persistentvolumeclaims",
            "",
        ),
        (
            "statefulset-controller",
            "delete",
            "",
            "persistentvolumeclaims",
            "",
        ),
        ("job-controller", "update", "batch", "jobs", "status"),
        ("cronjob-controller", "create", "batch", "jobs", ""),
        (
            "namespace-controller",
            "deletecollection",
            "apps",
            "deployments",
            "",
        ),
        (
            "namespace-controller",
            "update",
            "",
            "namespaces",
            "finalize",
        ),
        (
            "generic-garbage-collector",
            "patch",
            "apps",
            "replicasets",
            "",
        ),
        (
            "endpoint-controller",
            "create",
            "",
            "endpoints",
            "restricted",
        ),
        (
            "endpointslice-controller",
            "create",
            "discovery.k8s.io",
            "endpointslices",
            "",
        ),
        (
            "service-account-controller",
            "create",
            "",
            "serviceaccounts",
            "",
        ),
        ("node-controller", "patch", "", "nodes", "status"),
        ("ttl-controller", "patch", "", "nodes", ""),
        (
            "disruption-controller",
            "get",
            "apps",
            "statefulsets",
            "scale",
        ),
        (
            "pv-protection-controller",
            "update",
            "",
            "persistentvolumes",
            "",
        ),
        (
            "pvc-protection-controller",
            "update",
            "",
            "persistentvolumeclaims",
            "",
        ),
        (
            "resourcequota-controller",
            "update",
            "",
            "resourcequotas",
            "status",
        ),
        ("root-ca-cert-publisher", "create", "", "configmaps", ""),
        (
            "persistent-volume-binder",
            "create",
            "",
            "persistentvolumes",
            "",
        ),
    ];
    for (controller, verb, group, resource, sub) in cases {
        let attrs = res(&sa(controller), verb, group, resource, "default").with_subresource(sub);
        let (decision, reason) = a.authorize(&attrs);
        assert_eq!(
            decision,
            Decision::Allow,
            "{controller} {verb} {resource}/{sub}"
        );
        assert_eq!(
            reason,
            format!(
                "RBAC: allowed by ClusterRoleBinding \"system:controller:{controller}\" of ClusterRole \"system:controller:{controller}\" to ServiceAccount \"{controller}/kube-system\""
            )
        );
    }
    // A controller's account gets nothing beyond its role.
    assert!(!allowed(
        &a,
        &res(&sa("ttl-controller"), "delete", "", "pods", "default")
    ));
    assert!(!allowed(
        &a,
        &res(
            &sa("replicaset-controller"),
            "get",
            "",
            "secrets",
            "default"
        )
    ));
}

#[test]
fn discovery_and_public_info() {
    let a = Union::with_superuser(vec![Box::new(RbacAuthorizer::new(policy()))]);
    let anon = UserInfo::new("system:anonymous", [ALL_UNAUTHENTICATED]);
    let user = authed("someone");
    let get = |u: &UserInfo, path: &str| Attributes::non_resource(u.clone(), "get", path);
    for path in ["/healthz", "/livez", "/readyz", "/version", "/version/"] {
        assert!(allowed(&a, &get(&anon, path)), "anonymous {path}");
    }
    for path in ["/api", "/apis/apps/v1", "/openapi/v3", "/metrics", "/"] {
        assert!(!allowed(&a, &get(&anon, path)), "anonymous {path}");
    }
    for path in [
        "/api",
        "/api/v1",
        "/apis",
        "/apis/apps/v1",
        "/openapi/v2",
        "/version",
    ] {
        assert!(allowed(&a, &get(&user, path)), "authenticated {path}");
    }
    assert!(!allowed(&a, &get(&user, "/metrics")));
    assert!(!allowed(
        &a,
        &Attributes::non_resource(user.clone(), "post", "/api")
    ));
    // Every authenticated user may review their own access.
    assert!(allowed(
        &a,
        &res(
            &user,
            "create",
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            ""
        )
    ));
    assert!(allowed(
        &a,
        &res(
            &user,
            "create",
            "authentication.k8s.io",
            "selfsubjectreviews",
            ""
        )
    ));
    assert!(!allowed(&a, &res(&user, "list", "", "pods", "default")));
    // system:monitoring reads metrics.
    let monitor = UserInfo::new("prom", ["system:monitoring", ALL_AUTHENTICATED]);
    assert!(allowed(&a, &get(&monitor, "/metrics")));
    assert!(allowed(&a, &get(&monitor, "/readyz/etcd")));
    // system:masters passes through the superuser authorizer, with an empty reason.
    let admin = UserInfo::new("root", ["system:masters", ALL_AUTHENTICATED]);
    assert_eq!(
        a.authorize(&res(&admin, "delete", "", "nodes", "")),
        (Decision::Allow, String::new())
    );
}

#[test]
fn self_subject_rules_of_a_plain_user() {
    let a = RbacAuthorizer::new(policy());
    let rules = a.rules_for(&authed("someone"), "default");
    assert!(!rules.incomplete);
    assert_eq!(rules.evaluation_error, None);
    let resources: BTreeSet<String> = rules
        .resource_rules
        .iter()
        .flat_map(|r| r.resources.clone())
        .collect();
    assert_eq!(
        resources,
        BTreeSet::from([
            "selfsubjectaccessreviews".to_string(),
            "selfsubjectrulesreviews".to_string(),
            "selfsubjectreviews".to_string(),
        ])
    );
    let urls: BTreeSet<String> = rules
        .non_resource_rules
        .iter()
        .flat_map(|r| r.non_resource_urls.clone())
        .collect();
    assert!(urls.contains("/api/*"));
    assert!(urls.contains("/healthz"));
}

#[test]
fn escalation_is_checked_against_held_rules() {
    let a = with_binding("view", "viewer", "team");
    let u = authed("viewer");
    let read_pods = PolicyRuleBuilder::new(&["get", "list"])
        .groups(&[""])
        .resources(&["pods"])
        .build();
    assert_eq!(
        a.confirm_no_escalation(&u, "team", std::slice::from_ref(&read_pods)),
        Ok(())
    );
    // Not in another namespace.
    assert!(a.confirm_no_escalation(&u, "other", &[read_pods]).is_err());
    let write = PolicyRuleBuilder::new(&["create", "get"])
        .groups(&[""])
        .resources(&["pods", "secrets"])
        .build();
    let err = a.confirm_no_escalation(&u, "team", &[write]).unwrap_err();
    assert_eq!(
        err.to_string(),
        "user \"viewer\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n\
{APIGroups:[\"\"], Resources:[\"pods\"], Verbs:[\"create\"]}\n\
{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"create\" \"get\"]}"
    );
    // cluster-admin holds everything, including the full authority aggregation needs.
    let root = UserInfo::new("root", ["system:masters"]);
    assert_eq!(
        a.confirm_no_escalation(&root, "", &auth::escalation::full_authority()),
        Ok(())
    );
}

#[test]
fn role_and_binding_counts() {
    let roles = bootstrap::cluster_roles();
    let controller_roles = roles
        .iter()
        .filter(|r| {
            r.metadata
                .name
                .as_deref()
                .is_some_and(|n| n.starts_with("system:controller:"))
        })
        .count();
    // 31 policy roles (and rkube's own `rkube:overlay`); 35 controller roles with 1.33's
    // default gates.
    assert_eq!(roles.len() - controller_roles, 31 + 1);
    assert_eq!(controller_roles, 35);
    assert_eq!(
        bootstrap::cluster_role_bindings().len(),
        12 + 1 + controller_roles
    );
    assert_eq!(bootstrap::roles().len(), 7);
    assert_eq!(bootstrap::role_bindings().len(), 7);
    assert_eq!(
        bootstrap::cluster_roles_to_aggregate(),
        vec![
            ("admin", "system:aggregate-to-admin"),
            ("edit", "system:aggregate-to-edit"),
            ("view", "system:aggregate-to-view"),
        ]
    );
    let split = bootstrap::cluster_role_bindings_to_split();
    assert_eq!(split.len(), 1);
    assert_eq!(split[0].0, "system:discovery");
}

#[test]
fn json_matches_upstream_shape() {
    let roles = bootstrap::cluster_roles();
    let basic = roles
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some("system:basic-user"))
        .unwrap();
    let json = serde_json::to_value(basic).unwrap();
    assert_eq!(
        json,
        serde_json::json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": {
                "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"},
                "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"},
                "name": "system:basic-user"
            },
            "rules": [
                {
                    "apiGroups": ["authorization.k8s.io"],
                    "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                    "verbs": ["create"]
                },
                {
                    "apiGroups": ["authentication.k8s.io"],
                    "resources": ["selfsubjectreviews"],
                    "verbs": ["create"]
                }
            ]
        })
    );
    let admin = roles
        .iter()
        .find(|r| r.metadata.name.as_deref() == Some("admin"))
        .unwrap();
    let json = serde_json::to_value(admin).unwrap();
    assert_eq!(
        json["aggregationRule"],
        serde_json::json!({"clusterRoleSelectors": [{"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}]})
    );
    let binding = bootstrap::cluster_role_bindings()
        .into_iter()
        .find(|b| b.metadata.name.as_deref() == Some("system:kube-dns"))
        .unwrap();
    assert_eq!(
        serde_json::to_value(&binding).unwrap()["subjects"],
        serde_json::json!([{"kind": "ServiceAccount", "name": "kube-dns", "namespace": "kube-system"}])
    );
}
