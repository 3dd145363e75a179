//! The catalog of served resources: what discovery advertises, how URLs map to resources,
//! where each resource is stored.
//!
//! Built-in resources are listed in [`builtin`]; custom resources are added at run time
//! from CustomResourceDefinitions, with the same [`ResourceInfo`] shape.

use std::fmt;

/// A group and version, e.g. `apps/v1`; the core group is `""` (`v1`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GroupVersion {
    pub group: String,
    pub version: String,
}

impl GroupVersion {
    pub fn new(group: &str, version: &str) -> Self {
        GroupVersion {
            group: group.to_string(),
            version: version.to_string(),
        }
    }

    /// Parses an `apiVersion` value (`v1`, `apps/v1`).
    pub fn parse(api_version: &str) -> Option<Self> {
        match api_version.split_once('/') {
            None if !api_version.is_empty() => Some(GroupVersion::new("", api_version)),
            Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => {
                Some(GroupVersion::new(g, v))
            }
            _ => None,
        }
    }

    /// The `apiVersion` string.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }
}

impl fmt::Display for GroupVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.api_version())
    }
}

/// A subresource served under a resource, e.g. `pods/status`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubresourceInfo {
    pub name: String,
    /// The group, version and kind the subresource speaks (`autoscaling/v1 Scale` for
    /// `scale`; the parent's for `status`).
    pub group: String,
    pub version: String,
    pub kind: String,
    pub verbs: Vec<String>,
}

impl SubresourceInfo {
    /// Whether this is a connect subresource (upstream's `rest.Connecter`: `pods/log`,
    /// `exec`, `attach`, `portforward`, `proxy`), which streams instead of serving an
    /// object of its kind.
    pub fn is_connect(&self) -> bool {
        matches!(
            self.name.as_str(),
            "log" | "exec" | "attach" | "portforward" | "proxy"
        )
    }
}

/// One resource of one group version.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourceInfo {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Lower-case plural, the URL segment: `deployments`.
    pub plural: String,
    /// Lower-case singular: `deployment`.
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    pub subresources: Vec<SubresourceInfo>,
    /// Store key prefix without a trailing slash: `/registry/deployments`. Objects live at
    /// `<prefix>/<namespace>/<name>` or, cluster-scoped, `<prefix>/<name>`.
    pub storage_prefix: String,
    /// Versions of the same objects share storage; the one that is written.
    pub storage_version: String,
}

impl ResourceInfo {
    pub fn group_version(&self) -> GroupVersion {
        GroupVersion::new(&self.group, &self.version)
    }

    pub fn api_version(&self) -> String {
        self.group_version().api_version()
    }

    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// `deployments.apps`, or `pods` for the core group, as upstream's error messages name
    /// resources.
    pub fn qualified_resource(&self) -> String {
        qualified(&self.plural, &self.group)
    }

    /// `Deployment.apps`, or `Pod`.
    pub fn qualified_kind(&self) -> String {
        qualified(&self.kind, &self.group)
    }

    pub fn subresource(&self, name: &str) -> Option<&SubresourceInfo> {
        self.subresources.iter().find(|s| s.name == name)
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == verb)
    }

    /// The store key of one object.
    pub fn key(&self, namespace: Option<&str>, name: &str) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/{name}", self.storage_prefix),
            _ => format!("{}/{name}", self.storage_prefix),
        }
    }

    /// The store prefix of a list: one namespace, or everything.
    pub fn list_prefix(&self, namespace: Option<&str>) -> String {
        match namespace {
            Some(ns) if self.namespaced => format!("{}/{ns}/", self.storage_prefix),
            _ => format!("{}/", self.storage_prefix),
        }
    }

    /// Whether `kind`, `plural`, `singular` or a short name equals `name` (case-insensitive
    /// for kinds, as kubectl resolves them).
    pub fn answers_to(&self, name: &str) -> bool {
        self.plural == name
            || self.singular == name
            || self.kind.eq_ignore_ascii_case(name)
            || self.short_names.iter().any(|s| s == name)
    }
}

fn qualified(name: &str, group: &str) -> String {
    if group.is_empty() {
        name.to_string()
    } else {
        format!("{name}.{group}")
    }
}

/// Verbs of an ordinary stored resource.
pub const STANDARD_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

struct Def {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    short: &'static [&'static str],
    categories: &'static [&'static str],
    verbs: &'static [&'static str],
    /// `status`, `scale`, `binding`, `eviction`.
    subs: &'static [&'static str],
    storage: &'static str,
}

const ALL: &[&str] = &["all"];
const NO_DELETECOLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

const DEFS: &[Def] = &[
    // core/v1
    Def {
        group: "",
        version: "v1",
        kind: "Binding",
        plural: "bindings",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    Def {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
        short: &["cm"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/configmaps",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Endpoints",
        plural: "endpoints",
        namespaced: true,
        short: &["ep"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/services/endpoints",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        short: &["ev"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/events",
    },
    Def {
        group: "",
        version: "v1",
        kind: "LimitRange",
        plural: "limitranges",
        namespaced: true,
        short: &["limits"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/limitranges",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
        short: &["ns"],
        categories: &[],
        verbs: NO_DELETECOLLECTION,
        subs: &["status", "finalize"],
        storage: "/registry/namespaces",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Node",
        plural: "nodes",
        namespaced: false,
        short: &["no"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["proxy", "status"],
        storage: "/registry/minions",
    },
    Def {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        namespaced: true,
        short: &["pvc"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/persistentvolumeclaims",
    },
    Def {
        group: "",
        version: "v1",
        kind: "PersistentVolume",
        plural: "persistentvolumes",
        namespaced: false,
        short: &["pv"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/persistentvolumes",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Pod",
        plural: "pods",
        namespaced: true,
        short: &["po"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &[
            "attach",
            "binding",
            "eviction",
            "exec",
            "log",
            "portforward",
            "proxy",
            "status",
        ],
        storage: "/registry/pods",
    },
    Def {
        group: "",
        version: "v1",
        kind: "PodTemplate",
        plural: "podtemplates",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/podtemplates",
    },
    Def {
        group: "",
        version: "v1",
        kind: "ReplicationController",
        plural: "replicationcontrollers",
        namespaced: true,
        short: &["rc"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status", "scale"],
        storage: "/registry/controllers",
    },
    Def {
        group: "",
        version: "v1",
        kind: "ResourceQuota",
        plural: "resourcequotas",
        namespaced: true,
        short: &["quota"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/resourcequotas",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Secret",
        plural: "secrets",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/secrets",
    },
    Def {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        namespaced: true,
        short: &["sa"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["token"],
        storage: "/registry/serviceaccounts",
    },
    Def {
        group: "",
        version: "v1",
        kind: "Service",
        plural: "services",
        namespaced: true,
        short: &["svc"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/services/specs",
    },
    // apps/v1
    Def {
        group: "apps",
        version: "v1",
        kind: "ControllerRevision",
        plural: "controllerrevisions",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/controllerrevisions",
    },
    Def {
        group: "apps",
        version: "v1",
        kind: "DaemonSet",
        plural: "daemonsets",
        namespaced: true,
        short: &["ds"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/daemonsets",
    },
    Def {
        group: "apps",
        version: "v1",
        kind: "Deployment",
        plural: "deployments",
        namespaced: true,
        short: &["deploy"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status", "scale"],
        storage: "/registry/deployments",
    },
    Def {
        group: "apps",
        version: "v1",
        kind: "ReplicaSet",
        plural: "replicasets",
        namespaced: true,
        short: &["rs"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status", "scale"],
        storage: "/registry/replicasets",
    },
    Def {
        group: "apps",
        version: "v1",
        kind: "StatefulSet",
        plural: "statefulsets",
        namespaced: true,
        short: &["sts"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status", "scale"],
        storage: "/registry/statefulsets",
    },
    // batch/v1
    Def {
        group: "batch",
        version: "v1",
        kind: "CronJob",
        plural: "cronjobs",
        namespaced: true,
        short: &["cj"],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/cronjobs",
    },
    Def {
        group: "batch",
        version: "v1",
        kind: "Job",
        plural: "jobs",
        namespaced: true,
        short: &[],
        categories: ALL,
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/jobs",
    },
    // coordination.k8s.io/v1
    Def {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/leases",
    },
    // discovery.k8s.io/v1
    Def {
        group: "discovery.k8s.io",
        version: "v1",
        kind: "EndpointSlice",
        plural: "endpointslices",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/endpointslices",
    },
    // events.k8s.io/v1 shares storage with core/v1 events.
    Def {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        short: &["ev"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/events",
    },
    // authentication.k8s.io/v1
    Def {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "SelfSubjectReview",
        plural: "selfsubjectreviews",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    Def {
        group: "authentication.k8s.io",
        version: "v1",
        kind: "TokenReview",
        plural: "tokenreviews",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    // authorization.k8s.io/v1
    Def {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "LocalSubjectAccessReview",
        plural: "localsubjectaccessreviews",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    Def {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SelfSubjectAccessReview",
        plural: "selfsubjectaccessreviews",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    Def {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SelfSubjectRulesReview",
        plural: "selfsubjectrulesreviews",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    Def {
        group: "authorization.k8s.io",
        version: "v1",
        kind: "SubjectAccessReview",
        plural: "subjectaccessreviews",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: &["create"],
        subs: &[],
        storage: "",
    },
    // admissionregistration.k8s.io/v1alpha1: the seeds' initializers (upstream removed
    // them in 1.14; rkube serves them as the seeds describe).
    Def {
        group: "admissionregistration.k8s.io",
        version: "v1alpha1",
        kind: "InitializerConfiguration",
        plural: "initializerconfigurations",
        namespaced: false,
        short: &[],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/initializerconfigurations",
    },
    // certificates.k8s.io/v1
    Def {
        group: "certificates.k8s.io",
        version: "v1",
        kind: "CertificateSigningRequest",
        plural: "certificatesigningrequests",
        namespaced: false,
        short: &["csr"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["approval", "status"],
        storage: "/registry/certificatesigningrequests",
    },
    // policy/v1
    Def {
        group: "policy",
        version: "v1",
        kind: "PodDisruptionBudget",
        plural: "poddisruptionbudgets",
        namespaced: true,
        short: &["pdb"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/poddisruptionbudgets",
    },
    // rbac.authorization.k8s.io/v1
    Def {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRoleBinding",
        plural: "clusterrolebindings",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/clusterrolebindings",
    },
    Def {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "ClusterRole",
        plural: "clusterroles",
        namespaced: false,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/clusterroles",
    },
    Def {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "RoleBinding",
        plural: "rolebindings",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/rolebindings",
    },
    Def {
        group: "rbac.authorization.k8s.io",
        version: "v1",
        kind: "Role",
        plural: "roles",
        namespaced: true,
        short: &[],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/roles",
    },
    // scheduling.k8s.io/v1
    Def {
        group: "scheduling.k8s.io",
        version: "v1",
        kind: "PriorityClass",
        plural: "priorityclasses",
        namespaced: false,
        short: &["pc"],
        categories: &[],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/priorityclasses",
    },
    // admissionregistration.k8s.io/v1: dynamic admission webhooks.
    Def {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "MutatingWebhookConfiguration",
        plural: "mutatingwebhookconfigurations",
        namespaced: false,
        short: &[],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/mutatingwebhookconfigurations",
    },
    Def {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingWebhookConfiguration",
        plural: "validatingwebhookconfigurations",
        namespaced: false,
        short: &[],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/validatingwebhookconfigurations",
    },
    Def {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicy",
        plural: "validatingadmissionpolicies",
        namespaced: false,
        short: &[],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/validatingadmissionpolicies",
    },
    Def {
        group: "admissionregistration.k8s.io",
        version: "v1",
        kind: "ValidatingAdmissionPolicyBinding",
        plural: "validatingadmissionpolicybindings",
        namespaced: false,
        short: &[],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &[],
        storage: "/registry/validatingadmissionpolicybindings",
    },
    // apiextensions.k8s.io/v1
    Def {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        namespaced: false,
        short: &["crd", "crds"],
        categories: &["api-extensions"],
        verbs: STANDARD_VERBS,
        subs: &["status"],
        storage: "/registry/apiextensions.k8s.io/customresourcedefinitions",
    },
];

fn subresource(parent: &Def, name: &str) -> SubresourceInfo {
    let (group, version, kind, verbs): (&str, &str, &str, &[&str]) = match name {
        "status" => (parent.group, parent.version, parent.kind, STATUS_VERBS),
        "scale" => ("autoscaling", "v1", "Scale", STATUS_VERBS),
        "binding" => ("", "v1", "Binding", &["create"]),
        "eviction" => ("policy", "v1", "Eviction", &["create"]),
        "token" => ("authentication.k8s.io", "v1", "TokenRequest", &["create"]),
        "finalize" => (parent.group, parent.version, parent.kind, &["update"]),
        "approval" => (parent.group, parent.version, parent.kind, STATUS_VERBS),
        // The connect subresources (upstream's `rest.Connecter`s).
        "log" => (parent.group, parent.version, parent.kind, &["get"]),
        "exec" => ("", "v1", "PodExecOptions", &["create", "get"]),
        "attach" => ("", "v1", "PodAttachOptions", &["create", "get"]),
        "portforward" => ("", "v1", "PodPortForwardOptions", &["create", "get"]),
        "proxy" => (
            "",
            "v1",
            if parent.kind == "Node" {
                "NodeProxyOptions"
            } else {
                "PodProxyOptions"
            },
            &["create", "delete", "get", "patch", "update"],
        ),
        other => (parent.group, parent.version, other, &[]),
    };
    SubresourceInfo {
        name: name.to_string(),
        group: group.to_string(),
        version: version.to_string(),
        kind: kind.to_string(),
        verbs: strings(verbs),
    }
}

/// Every built-in resource, in discovery order (groups as upstream orders them).
pub fn builtin() -> Vec<ResourceInfo> {
    DEFS.iter()
        .map(|d| ResourceInfo {
            group: d.group.to_string(),
            version: d.version.to_string(),
            kind: d.kind.to_string(),
            plural: d.plural.to_string(),
            singular: d.kind.to_ascii_lowercase(),
            namespaced: d.namespaced,
            short_names: strings(d.short),
            categories: strings(d.categories),
            verbs: strings(d.verbs),
            subresources: d.subs.iter().map(|s| subresource(d, s)).collect(),
            storage_prefix: d.storage.to_string(),
            storage_version: if d.group == "events.k8s.io" {
                // Stored as core/v1 Events, as upstream does.
                "v1".to_string()
            } else {
                d.version.to_string()
            },
        })
        .collect()
}

/// Group order in discovery, as upstream's aggregator lists them (legacy core first).
pub const GROUP_ORDER: &[&str] = &[
    "",
    "apiregistration.k8s.io",
    "apps",
    "events.k8s.io",
    "authentication.k8s.io",
    "authorization.k8s.io",
    "autoscaling",
    "batch",
    "certificates.k8s.io",
    "networking.k8s.io",
    "policy",
    "rbac.authorization.k8s.io",
    "storage.k8s.io",
    "admissionregistration.k8s.io",
    "apiextensions.k8s.io",
    "scheduling.k8s.io",
    "coordination.k8s.io",
    "node.k8s.io",
    "discovery.k8s.io",
    "flowcontrol.apiserver.k8s.io",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalog_is_consistent() {
        let all = builtin();
        for r in &all {
            assert_eq!(r.plural, r.plural.to_ascii_lowercase());
            // Create-only resources (bindings, reviews) store nothing.
            if r.verbs != ["create"] {
                assert!(r.storage_prefix.starts_with("/registry/"), "{}", r.plural);
            }
            let dupes = all
                .iter()
                .filter(|o| o.group == r.group && o.version == r.version && o.plural == r.plural)
                .count();
            assert_eq!(dupes, 1, "{} listed twice", r.plural);
        }
        let deploy = all.iter().find(|r| r.plural == "deployments").unwrap();
        assert_eq!(deploy.qualified_resource(), "deployments.apps");
        assert_eq!(deploy.qualified_kind(), "Deployment.apps");
        assert_eq!(
            deploy.key(Some("default"), "nginx"),
            "/registry/deployments/default/nginx"
        );
        assert_eq!(deploy.subresource("scale").unwrap().kind, "Scale");
        let node = all.iter().find(|r| r.plural == "nodes").unwrap();
        assert_eq!(node.key(None, "n1"), "/registry/minions/n1");
        assert!(node.answers_to("no") && node.answers_to("Node") && node.answers_to("node"));
    }

    #[test]
    fn group_versions() {
        assert_eq!(GroupVersion::parse("v1"), Some(GroupVersion::new("", "v1")));
        assert_eq!(
            GroupVersion::parse("apps/v1").unwrap().api_version(),
            "apps/v1"
        );
        for bad in ["", "/v1", "apps/", "a/b/c"] {
            assert_eq!(GroupVersion::parse(bad), None, "{bad}");
        }
    }
}
