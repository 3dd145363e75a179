//! The Kubernetes-specific OpenAPI extensions of the built-in types' fields: how
//! strategic-merge-patch merges lists (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`) and how server-side apply identifies list items and map
//! entries (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`).
//!
//! This is API semantics taken from upstream's type definitions (struct tags and `+listType`
//! markers) of Kubernetes 1.33; the schema builder injects it into the generated definitions.
//!
//! Each entry names a definition and a JSON field: a field's `patchStrategy`/`patchMergeKey`
//! struct tags become `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`; its
//! `+listType`/`+listMapKey` markers become `x-kubernetes-list-type` and
//! `x-kubernetes-list-map-keys`; its `+mapType` (or `+structType`) marker becomes
//! `x-kubernetes-map-type`. An entry with an empty `field` applies to the definition itself:
//! a struct marked `+structType=atomic` carries `x-kubernetes-map-type: atomic` on its
//! definition (e.g. `io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector`).
//!
//! Fields of structs embedded inline are listed under the definition that embeds them, as
//! upstream's OpenAPI flattens them (e.g. `EphemeralContainerCommon`'s fields appear under
//! `io.k8s.api.core.v1.EphemeralContainer`). Types that have no definition in the served
//! OpenAPI (list options, `Table`, ...) are not listed.

/// The extensions of one field of one definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldExt {
    /// Definition name, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub definition: &'static str,
    /// JSON field name, e.g. `containers`; empty for the definition itself.
    pub field: &'static str,
    /// `x-kubernetes-patch-strategy`: `merge`, `replace`, `retainKeys`, `merge,retainKeys`.
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set`, `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` (with `list_type: map`).
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`: `atomic`, `granular` (for objects and maps).
    pub map_type: Option<&'static str>,
}

impl FieldExt {
    /// A field with no extension yet; the builder methods below add them.
    pub const fn new(definition: &'static str, field: &'static str) -> Self {
        FieldExt {
            definition,
            field,
            patch_strategy: None,
            patch_merge_key: None,
            list_type: None,
            list_map_keys: &[],
            map_type: None,
        }
    }

    /// `patchStrategy:"merge"` with `patchMergeKey:"<key>"`.
    pub const fn merge(self, key: &'static str) -> Self {
        self.strategy("merge").merge_key(key)
    }

    /// `patchStrategy:"<strategy>"`.
    pub const fn strategy(self, strategy: &'static str) -> Self {
        FieldExt {
            patch_strategy: Some(strategy),
            ..self
        }
    }

    /// `patchMergeKey:"<key>"`.
    pub const fn merge_key(self, key: &'static str) -> Self {
        FieldExt {
            patch_merge_key: Some(key),
            ..self
        }
    }

    /// `+listType=atomic`.
    pub const fn atomic(self) -> Self {
        FieldExt {
            list_type: Some("atomic"),
            ..self
        }
    }

    /// `+listType=set`.
    pub const fn set(self) -> Self {
        FieldExt {
            list_type: Some("set"),
            ..self
        }
    }

    /// `+listType=map` with its `+listMapKey` markers, in order.
    pub const fn list_map(self, keys: &'static [&'static str]) -> Self {
        FieldExt {
            list_type: Some("map"),
            list_map_keys: keys,
            ..self
        }
    }

    /// `+mapType=<type>` (or `+structType=<type>` on a struct-typed field).
    pub const fn map_type(self, map_type: &'static str) -> Self {
        FieldExt {
            map_type: Some(map_type),
            ..self
        }
    }
}

const fn f(definition: &'static str, field: &'static str) -> FieldExt {
    FieldExt::new(definition, field)
}

/// Every field of a built-in type that carries one of the extensions, and every definition
/// that is atomic as a whole (empty `field`), sorted by definition and field.
pub const FIELD_EXTENSIONS: &[FieldExt] = &[
    // MatchResources
    f("io.k8s.api.admissionregistration.v1.MatchResources", "").map_type("atomic"),
    f(
        "io.k8s.api.admissionregistration.v1.MatchResources",
        "excludeResourceRules",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.MatchResources",
        "resourceRules",
    )
    .atomic(),
    // MutatingWebhook
    f(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "admissionReviewVersions",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "matchConditions",
    )
    .merge("name")
    .list_map(&["name"]),
    f(
        "io.k8s.api.admissionregistration.v1.MutatingWebhook",
        "rules",
    )
    .atomic(),
    // MutatingWebhookConfiguration
    f(
        "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        "webhooks",
    )
    .merge("name")
    .list_map(&["name"]),
    // NamedRuleWithOperations
    f(
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        "",
    )
    .map_type("atomic"),
    f(
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        "apiGroups",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        "apiVersions",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        "resourceNames",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.NamedRuleWithOperations",
        "resources",
    )
    .atomic(),
    // ParamKind
    f("io.k8s.api.admissionregistration.v1.ParamKind", "").map_type("atomic"),
    // ParamRef
    f("io.k8s.api.admissionregistration.v1.ParamRef", "").map_type("atomic"),
    // RuleWithOperations
    f(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "apiGroups",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "apiVersions",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "operations",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.RuleWithOperations",
        "resources",
    )
    .atomic(),
    // TypeChecking
    f(
        "io.k8s.api.admissionregistration.v1.TypeChecking",
        "expressionWarnings",
    )
    .atomic(),
    // ValidatingAdmissionPolicyBindingSpec
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec",
        "validationActions",
    )
    .set(),
    // ValidatingAdmissionPolicySpec
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "auditAnnotations",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "matchConditions",
    )
    .merge("name")
    .list_map(&["name"]),
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "validations",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        "variables",
    )
    .merge("name")
    .list_map(&["name"]),
    // ValidatingAdmissionPolicyStatus
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyStatus",
        "conditions",
    )
    .list_map(&["type"]),
    // ValidatingWebhook
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "admissionReviewVersions",
    )
    .atomic(),
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "matchConditions",
    )
    .merge("name")
    .list_map(&["name"]),
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhook",
        "rules",
    )
    .atomic(),
    // ValidatingWebhookConfiguration
    f(
        "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        "webhooks",
    )
    .merge("name")
    .list_map(&["name"]),
    // Variable
    f("io.k8s.api.admissionregistration.v1.Variable", "").map_type("atomic"),
    // DaemonSetStatus
    f("io.k8s.api.apps.v1.DaemonSetStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // DeploymentSpec
    f("io.k8s.api.apps.v1.DeploymentSpec", "strategy").strategy("retainKeys"),
    // DeploymentStatus
    f("io.k8s.api.apps.v1.DeploymentStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // ReplicaSetStatus
    f("io.k8s.api.apps.v1.ReplicaSetStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // StatefulSetSpec
    f("io.k8s.api.apps.v1.StatefulSetSpec", "volumeClaimTemplates").atomic(),
    // StatefulSetStatus
    f("io.k8s.api.apps.v1.StatefulSetStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // TokenRequestSpec
    f("io.k8s.api.authentication.v1.TokenRequestSpec", "audiences").atomic(),
    // TokenReviewSpec
    f("io.k8s.api.authentication.v1.TokenReviewSpec", "audiences").atomic(),
    // TokenReviewStatus
    f(
        "io.k8s.api.authentication.v1.TokenReviewStatus",
        "audiences",
    )
    .atomic(),
    // UserInfo
    f("io.k8s.api.authentication.v1.UserInfo", "groups").atomic(),
    // FieldSelectorAttributes
    f(
        "io.k8s.api.authorization.v1.FieldSelectorAttributes",
        "requirements",
    )
    .atomic(),
    // LabelSelectorAttributes
    f(
        "io.k8s.api.authorization.v1.LabelSelectorAttributes",
        "requirements",
    )
    .atomic(),
    // NonResourceRule
    f(
        "io.k8s.api.authorization.v1.NonResourceRule",
        "nonResourceURLs",
    )
    .atomic(),
    f("io.k8s.api.authorization.v1.NonResourceRule", "verbs").atomic(),
    // ResourceRule
    f("io.k8s.api.authorization.v1.ResourceRule", "apiGroups").atomic(),
    f("io.k8s.api.authorization.v1.ResourceRule", "resourceNames").atomic(),
    f("io.k8s.api.authorization.v1.ResourceRule", "resources").atomic(),
    f("io.k8s.api.authorization.v1.ResourceRule", "verbs").atomic(),
    // SubjectAccessReviewSpec
    f(
        "io.k8s.api.authorization.v1.SubjectAccessReviewSpec",
        "groups",
    )
    .atomic(),
    // SubjectRulesReviewStatus
    f(
        "io.k8s.api.authorization.v1.SubjectRulesReviewStatus",
        "nonResourceRules",
    )
    .atomic(),
    f(
        "io.k8s.api.authorization.v1.SubjectRulesReviewStatus",
        "resourceRules",
    )
    .atomic(),
    // CrossVersionObjectReference
    f("io.k8s.api.autoscaling.v1.CrossVersionObjectReference", "").map_type("atomic"),
    // CronJobStatus
    f("io.k8s.api.batch.v1.CronJobStatus", "active").atomic(),
    // JobStatus
    f("io.k8s.api.batch.v1.JobStatus", "conditions")
        .merge("type")
        .atomic(),
    // PodFailurePolicy
    f("io.k8s.api.batch.v1.PodFailurePolicy", "rules").atomic(),
    // PodFailurePolicyOnExitCodesRequirement
    f(
        "io.k8s.api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
        "values",
    )
    .set(),
    // PodFailurePolicyRule
    f(
        "io.k8s.api.batch.v1.PodFailurePolicyRule",
        "onPodConditions",
    )
    .atomic(),
    // SuccessPolicy
    f("io.k8s.api.batch.v1.SuccessPolicy", "rules").atomic(),
    // UncountedTerminatedPods
    f("io.k8s.api.batch.v1.UncountedTerminatedPods", "failed").set(),
    f("io.k8s.api.batch.v1.UncountedTerminatedPods", "succeeded").set(),
    // CertificateSigningRequestSpec
    f(
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        "groups",
    )
    .atomic(),
    f(
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        "request",
    )
    .atomic(),
    f(
        "io.k8s.api.certificates.v1.CertificateSigningRequestSpec",
        "usages",
    )
    .atomic(),
    // CertificateSigningRequestStatus
    f(
        "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
        "certificate",
    )
    .atomic(),
    f(
        "io.k8s.api.certificates.v1.CertificateSigningRequestStatus",
        "conditions",
    )
    .list_map(&["type"]),
    // Capabilities
    f("io.k8s.api.core.v1.Capabilities", "add").atomic(),
    f("io.k8s.api.core.v1.Capabilities", "drop").atomic(),
    // CephFSPersistentVolumeSource
    f(
        "io.k8s.api.core.v1.CephFSPersistentVolumeSource",
        "monitors",
    )
    .atomic(),
    // CephFSVolumeSource
    f("io.k8s.api.core.v1.CephFSVolumeSource", "monitors").atomic(),
    // ComponentStatus
    f("io.k8s.api.core.v1.ComponentStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // ConfigMapKeySelector
    f("io.k8s.api.core.v1.ConfigMapKeySelector", "").map_type("atomic"),
    // ConfigMapProjection
    f("io.k8s.api.core.v1.ConfigMapProjection", "items").atomic(),
    // ConfigMapVolumeSource
    f("io.k8s.api.core.v1.ConfigMapVolumeSource", "items").atomic(),
    // Container
    f("io.k8s.api.core.v1.Container", "args").atomic(),
    f("io.k8s.api.core.v1.Container", "command").atomic(),
    f("io.k8s.api.core.v1.Container", "env")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.Container", "envFrom").atomic(),
    f("io.k8s.api.core.v1.Container", "ports")
        .merge("containerPort")
        .list_map(&["containerPort", "protocol"]),
    f("io.k8s.api.core.v1.Container", "resizePolicy").atomic(),
    f("io.k8s.api.core.v1.Container", "volumeDevices")
        .merge("devicePath")
        .list_map(&["devicePath"]),
    f("io.k8s.api.core.v1.Container", "volumeMounts")
        .merge("mountPath")
        .list_map(&["mountPath"]),
    // ContainerImage
    f("io.k8s.api.core.v1.ContainerImage", "names").atomic(),
    // ContainerStatus
    f(
        "io.k8s.api.core.v1.ContainerStatus",
        "allocatedResourcesStatus",
    )
    .merge("name")
    .list_map(&["name"]),
    f("io.k8s.api.core.v1.ContainerStatus", "volumeMounts")
        .merge("mountPath")
        .list_map(&["mountPath"]),
    // DownwardAPIProjection
    f("io.k8s.api.core.v1.DownwardAPIProjection", "items").atomic(),
    // DownwardAPIVolumeSource
    f("io.k8s.api.core.v1.DownwardAPIVolumeSource", "items").atomic(),
    // EndpointAddress
    f("io.k8s.api.core.v1.EndpointAddress", "").map_type("atomic"),
    // EndpointPort
    f("io.k8s.api.core.v1.EndpointPort", "").map_type("atomic"),
    // EndpointSubset
    f("io.k8s.api.core.v1.EndpointSubset", "addresses").atomic(),
    f("io.k8s.api.core.v1.EndpointSubset", "notReadyAddresses").atomic(),
    f("io.k8s.api.core.v1.EndpointSubset", "ports").atomic(),
    // Endpoints
    f("io.k8s.api.core.v1.Endpoints", "subsets").atomic(),
    // EphemeralContainer
    f("io.k8s.api.core.v1.EphemeralContainer", "args").atomic(),
    f("io.k8s.api.core.v1.EphemeralContainer", "command").atomic(),
    f("io.k8s.api.core.v1.EphemeralContainer", "env")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.EphemeralContainer", "envFrom").atomic(),
    f("io.k8s.api.core.v1.EphemeralContainer", "ports")
        .merge("containerPort")
        .list_map(&["containerPort", "protocol"]),
    f("io.k8s.api.core.v1.EphemeralContainer", "resizePolicy").atomic(),
    f("io.k8s.api.core.v1.EphemeralContainer", "volumeDevices")
        .merge("devicePath")
        .list_map(&["devicePath"]),
    f("io.k8s.api.core.v1.EphemeralContainer", "volumeMounts")
        .merge("mountPath")
        .list_map(&["mountPath"]),
    // ExecAction
    f("io.k8s.api.core.v1.ExecAction", "command").atomic(),
    // FCVolumeSource
    f("io.k8s.api.core.v1.FCVolumeSource", "targetWWNs").atomic(),
    f("io.k8s.api.core.v1.FCVolumeSource", "wwids").atomic(),
    // HTTPGetAction
    f("io.k8s.api.core.v1.HTTPGetAction", "httpHeaders").atomic(),
    // HostAlias
    f("io.k8s.api.core.v1.HostAlias", "hostnames").atomic(),
    // ISCSIPersistentVolumeSource
    f("io.k8s.api.core.v1.ISCSIPersistentVolumeSource", "portals").atomic(),
    // ISCSIVolumeSource
    f("io.k8s.api.core.v1.ISCSIVolumeSource", "portals").atomic(),
    // LimitRangeSpec
    f("io.k8s.api.core.v1.LimitRangeSpec", "limits").atomic(),
    // LinuxContainerUser
    f(
        "io.k8s.api.core.v1.LinuxContainerUser",
        "supplementalGroups",
    )
    .atomic(),
    // LoadBalancerIngress
    f("io.k8s.api.core.v1.LoadBalancerIngress", "ports").atomic(),
    // LoadBalancerStatus
    f("io.k8s.api.core.v1.LoadBalancerStatus", "ingress").atomic(),
    // LocalObjectReference
    f("io.k8s.api.core.v1.LocalObjectReference", "").map_type("atomic"),
    // NamespaceSpec
    f("io.k8s.api.core.v1.NamespaceSpec", "finalizers").atomic(),
    // NamespaceStatus
    f("io.k8s.api.core.v1.NamespaceStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // NodeAffinity
    f(
        "io.k8s.api.core.v1.NodeAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    .atomic(),
    // NodeSelector
    f("io.k8s.api.core.v1.NodeSelector", "").map_type("atomic"),
    f("io.k8s.api.core.v1.NodeSelector", "nodeSelectorTerms").atomic(),
    // NodeSelectorRequirement
    f("io.k8s.api.core.v1.NodeSelectorRequirement", "values").atomic(),
    // NodeSelectorTerm
    f("io.k8s.api.core.v1.NodeSelectorTerm", "").map_type("atomic"),
    f("io.k8s.api.core.v1.NodeSelectorTerm", "matchExpressions").atomic(),
    f("io.k8s.api.core.v1.NodeSelectorTerm", "matchFields").atomic(),
    // NodeSpec
    f("io.k8s.api.core.v1.NodeSpec", "podCIDRs")
        .strategy("merge")
        .set(),
    f("io.k8s.api.core.v1.NodeSpec", "taints").atomic(),
    // NodeStatus
    f("io.k8s.api.core.v1.NodeStatus", "addresses")
        .merge("type")
        .list_map(&["type"]),
    f("io.k8s.api.core.v1.NodeStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    f("io.k8s.api.core.v1.NodeStatus", "images").atomic(),
    f("io.k8s.api.core.v1.NodeStatus", "runtimeHandlers").atomic(),
    f("io.k8s.api.core.v1.NodeStatus", "volumesAttached").atomic(),
    f("io.k8s.api.core.v1.NodeStatus", "volumesInUse").atomic(),
    // ObjectFieldSelector
    f("io.k8s.api.core.v1.ObjectFieldSelector", "").map_type("atomic"),
    // ObjectReference
    f("io.k8s.api.core.v1.ObjectReference", "").map_type("atomic"),
    // PersistentVolumeClaimSpec
    f(
        "io.k8s.api.core.v1.PersistentVolumeClaimSpec",
        "accessModes",
    )
    .atomic(),
    // PersistentVolumeClaimStatus
    f(
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "accessModes",
    )
    .atomic(),
    f(
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "allocatedResourceStatuses",
    )
    .map_type("granular"),
    f(
        "io.k8s.api.core.v1.PersistentVolumeClaimStatus",
        "conditions",
    )
    .merge("type")
    .list_map(&["type"]),
    // PersistentVolumeSpec
    f("io.k8s.api.core.v1.PersistentVolumeSpec", "accessModes").atomic(),
    f("io.k8s.api.core.v1.PersistentVolumeSpec", "claimRef").map_type("granular"),
    f("io.k8s.api.core.v1.PersistentVolumeSpec", "mountOptions").atomic(),
    // PodAffinity
    f(
        "io.k8s.api.core.v1.PodAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    .atomic(),
    f(
        "io.k8s.api.core.v1.PodAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    )
    .atomic(),
    // PodAffinityTerm
    f("io.k8s.api.core.v1.PodAffinityTerm", "matchLabelKeys").atomic(),
    f("io.k8s.api.core.v1.PodAffinityTerm", "mismatchLabelKeys").atomic(),
    f("io.k8s.api.core.v1.PodAffinityTerm", "namespaces").atomic(),
    // PodAntiAffinity
    f(
        "io.k8s.api.core.v1.PodAntiAffinity",
        "preferredDuringSchedulingIgnoredDuringExecution",
    )
    .atomic(),
    f(
        "io.k8s.api.core.v1.PodAntiAffinity",
        "requiredDuringSchedulingIgnoredDuringExecution",
    )
    .atomic(),
    // PodDNSConfig
    f("io.k8s.api.core.v1.PodDNSConfig", "nameservers").atomic(),
    f("io.k8s.api.core.v1.PodDNSConfig", "options").atomic(),
    f("io.k8s.api.core.v1.PodDNSConfig", "searches").atomic(),
    // PodSecurityContext
    f(
        "io.k8s.api.core.v1.PodSecurityContext",
        "supplementalGroups",
    )
    .atomic(),
    f("io.k8s.api.core.v1.PodSecurityContext", "sysctls").atomic(),
    // PodSpec
    f("io.k8s.api.core.v1.PodSpec", "containers")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "ephemeralContainers")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "hostAliases")
        .merge("ip")
        .list_map(&["ip"]),
    f("io.k8s.api.core.v1.PodSpec", "imagePullSecrets")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "initContainers")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "nodeSelector").map_type("atomic"),
    f("io.k8s.api.core.v1.PodSpec", "readinessGates").atomic(),
    f("io.k8s.api.core.v1.PodSpec", "resourceClaims")
        .strategy("merge,retainKeys")
        .merge_key("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "schedulingGates")
        .merge("name")
        .list_map(&["name"]),
    f("io.k8s.api.core.v1.PodSpec", "tolerations").atomic(),
    f("io.k8s.api.core.v1.PodSpec", "topologySpreadConstraints")
        .merge("topologyKey")
        .list_map(&["topologyKey", "whenUnsatisfiable"]),
    f("io.k8s.api.core.v1.PodSpec", "volumes")
        .strategy("merge,retainKeys")
        .merge_key("name")
        .list_map(&["name"]),
    // PodStatus
    f("io.k8s.api.core.v1.PodStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    f("io.k8s.api.core.v1.PodStatus", "containerStatuses").atomic(),
    f("io.k8s.api.core.v1.PodStatus", "ephemeralContainerStatuses").atomic(),
    f("io.k8s.api.core.v1.PodStatus", "hostIPs")
        .merge("ip")
        .atomic(),
    f("io.k8s.api.core.v1.PodStatus", "initContainerStatuses").atomic(),
    f("io.k8s.api.core.v1.PodStatus", "podIPs")
        .merge("ip")
        .list_map(&["ip"]),
    f("io.k8s.api.core.v1.PodStatus", "resourceClaimStatuses")
        .strategy("merge,retainKeys")
        .merge_key("name")
        .list_map(&["name"]),
    // ProjectedVolumeSource
    f("io.k8s.api.core.v1.ProjectedVolumeSource", "sources").atomic(),
    // RBDPersistentVolumeSource
    f("io.k8s.api.core.v1.RBDPersistentVolumeSource", "monitors").atomic(),
    // RBDVolumeSource
    f("io.k8s.api.core.v1.RBDVolumeSource", "monitors").atomic(),
    // ReplicationControllerSpec
    f("io.k8s.api.core.v1.ReplicationControllerSpec", "selector").map_type("atomic"),
    // ReplicationControllerStatus
    f(
        "io.k8s.api.core.v1.ReplicationControllerStatus",
        "conditions",
    )
    .merge("type")
    .list_map(&["type"]),
    // ResourceFieldSelector
    f("io.k8s.api.core.v1.ResourceFieldSelector", "").map_type("atomic"),
    // ResourceQuotaSpec
    f("io.k8s.api.core.v1.ResourceQuotaSpec", "scopes").atomic(),
    // ResourceRequirements
    f("io.k8s.api.core.v1.ResourceRequirements", "claims").list_map(&["name"]),
    // ResourceStatus
    f("io.k8s.api.core.v1.ResourceStatus", "resources").list_map(&["resourceID"]),
    // ScopeSelector
    f("io.k8s.api.core.v1.ScopeSelector", "").map_type("atomic"),
    f("io.k8s.api.core.v1.ScopeSelector", "matchExpressions").atomic(),
    // ScopedResourceSelectorRequirement
    f(
        "io.k8s.api.core.v1.ScopedResourceSelectorRequirement",
        "values",
    )
    .atomic(),
    // SecretKeySelector
    f("io.k8s.api.core.v1.SecretKeySelector", "").map_type("atomic"),
    // SecretProjection
    f("io.k8s.api.core.v1.SecretProjection", "items").atomic(),
    // SecretReference
    f("io.k8s.api.core.v1.SecretReference", "").map_type("atomic"),
    // SecretVolumeSource
    f("io.k8s.api.core.v1.SecretVolumeSource", "items").atomic(),
    // ServiceAccount
    f("io.k8s.api.core.v1.ServiceAccount", "imagePullSecrets").atomic(),
    f("io.k8s.api.core.v1.ServiceAccount", "secrets")
        .merge("name")
        .list_map(&["name"]),
    // ServiceSpec
    f("io.k8s.api.core.v1.ServiceSpec", "clusterIPs").atomic(),
    f("io.k8s.api.core.v1.ServiceSpec", "externalIPs").atomic(),
    f("io.k8s.api.core.v1.ServiceSpec", "ipFamilies").atomic(),
    f("io.k8s.api.core.v1.ServiceSpec", "loadBalancerSourceRanges").atomic(),
    f("io.k8s.api.core.v1.ServiceSpec", "ports")
        .merge("port")
        .list_map(&["port", "protocol"]),
    f("io.k8s.api.core.v1.ServiceSpec", "selector").map_type("atomic"),
    // ServiceStatus
    f("io.k8s.api.core.v1.ServiceStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // TopologySelectorLabelRequirement
    f(
        "io.k8s.api.core.v1.TopologySelectorLabelRequirement",
        "values",
    )
    .atomic(),
    // TopologySelectorTerm
    f("io.k8s.api.core.v1.TopologySelectorTerm", "").map_type("atomic"),
    f(
        "io.k8s.api.core.v1.TopologySelectorTerm",
        "matchLabelExpressions",
    )
    .atomic(),
    // TopologySpreadConstraint
    f(
        "io.k8s.api.core.v1.TopologySpreadConstraint",
        "matchLabelKeys",
    )
    .atomic(),
    // TypedLocalObjectReference
    f("io.k8s.api.core.v1.TypedLocalObjectReference", "").map_type("atomic"),
    // Endpoint
    f("io.k8s.api.discovery.v1.Endpoint", "addresses").set(),
    // EndpointHints
    f("io.k8s.api.discovery.v1.EndpointHints", "forNodes").atomic(),
    f("io.k8s.api.discovery.v1.EndpointHints", "forZones").atomic(),
    // EndpointPort
    f("io.k8s.api.discovery.v1.EndpointPort", "").map_type("atomic"),
    // EndpointSlice
    f("io.k8s.api.discovery.v1.EndpointSlice", "endpoints").atomic(),
    f("io.k8s.api.discovery.v1.EndpointSlice", "ports").atomic(),
    // HTTPIngressRuleValue
    f("io.k8s.api.networking.v1.HTTPIngressRuleValue", "paths").atomic(),
    // IPBlock
    f("io.k8s.api.networking.v1.IPBlock", "except").atomic(),
    // IngressLoadBalancerIngress
    f(
        "io.k8s.api.networking.v1.IngressLoadBalancerIngress",
        "ports",
    )
    .atomic(),
    // IngressLoadBalancerStatus
    f(
        "io.k8s.api.networking.v1.IngressLoadBalancerStatus",
        "ingress",
    )
    .atomic(),
    // IngressSpec
    f("io.k8s.api.networking.v1.IngressSpec", "rules").atomic(),
    f("io.k8s.api.networking.v1.IngressSpec", "tls").atomic(),
    // IngressTLS
    f("io.k8s.api.networking.v1.IngressTLS", "hosts").atomic(),
    // NetworkPolicyEgressRule
    f("io.k8s.api.networking.v1.NetworkPolicyEgressRule", "ports").atomic(),
    f("io.k8s.api.networking.v1.NetworkPolicyEgressRule", "to").atomic(),
    // NetworkPolicyIngressRule
    f("io.k8s.api.networking.v1.NetworkPolicyIngressRule", "from").atomic(),
    f("io.k8s.api.networking.v1.NetworkPolicyIngressRule", "ports").atomic(),
    // NetworkPolicySpec
    f("io.k8s.api.networking.v1.NetworkPolicySpec", "egress").atomic(),
    f("io.k8s.api.networking.v1.NetworkPolicySpec", "ingress").atomic(),
    f("io.k8s.api.networking.v1.NetworkPolicySpec", "policyTypes").atomic(),
    // ServiceBackendPort
    f("io.k8s.api.networking.v1.ServiceBackendPort", "").map_type("atomic"),
    // ServiceCIDRSpec
    f("io.k8s.api.networking.v1.ServiceCIDRSpec", "cidrs").atomic(),
    // ServiceCIDRStatus
    f("io.k8s.api.networking.v1.ServiceCIDRStatus", "conditions")
        .merge("type")
        .list_map(&["type"]),
    // PodDisruptionBudgetSpec
    f("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector").strategy("replace"),
    // PodDisruptionBudgetStatus
    f(
        "io.k8s.api.policy.v1.PodDisruptionBudgetStatus",
        "conditions",
    )
    .merge("type")
    .list_map(&["type"]),
    // AggregationRule
    f("io.k8s.api.rbac.v1.AggregationRule", "clusterRoleSelectors").atomic(),
    // ClusterRole
    f("io.k8s.api.rbac.v1.ClusterRole", "rules").atomic(),
    // ClusterRoleBinding
    f("io.k8s.api.rbac.v1.ClusterRoleBinding", "subjects").atomic(),
    // PolicyRule
    f("io.k8s.api.rbac.v1.PolicyRule", "apiGroups").atomic(),
    f("io.k8s.api.rbac.v1.PolicyRule", "nonResourceURLs").atomic(),
    f("io.k8s.api.rbac.v1.PolicyRule", "resourceNames").atomic(),
    f("io.k8s.api.rbac.v1.PolicyRule", "resources").atomic(),
    f("io.k8s.api.rbac.v1.PolicyRule", "verbs").atomic(),
    // Role
    f("io.k8s.api.rbac.v1.Role", "rules").atomic(),
    // RoleBinding
    f("io.k8s.api.rbac.v1.RoleBinding", "subjects").atomic(),
    // RoleRef
    f("io.k8s.api.rbac.v1.RoleRef", "").map_type("atomic"),
    // Subject
    f("io.k8s.api.rbac.v1.Subject", "").map_type("atomic"),
    // CSIDriverSpec
    f("io.k8s.api.storage.v1.CSIDriverSpec", "tokenRequests").atomic(),
    f(
        "io.k8s.api.storage.v1.CSIDriverSpec",
        "volumeLifecycleModes",
    )
    .set(),
    // CSINodeDriver
    f("io.k8s.api.storage.v1.CSINodeDriver", "topologyKeys").atomic(),
    // CSINodeSpec
    f("io.k8s.api.storage.v1.CSINodeSpec", "drivers")
        .merge("name")
        .list_map(&["name"]),
    // StorageClass
    f("io.k8s.api.storage.v1.StorageClass", "allowedTopologies").atomic(),
    f("io.k8s.api.storage.v1.StorageClass", "mountOptions").atomic(),
    // CustomResourceDefinitionNames
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames",
        "categories",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames",
        "shortNames",
    )
    .atomic(),
    // CustomResourceDefinitionSpec
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        "versions",
    )
    .atomic(),
    // CustomResourceDefinitionStatus
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "conditions",
    )
    .list_map(&["type"]),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "storedVersions",
    )
    .atomic(),
    // CustomResourceDefinitionVersion
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        "additionalPrinterColumns",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        "selectableFields",
    )
    .atomic(),
    // JSONSchemaProps
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "allOf",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "anyOf",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "enum",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "oneOf",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "required",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "x-kubernetes-list-map-keys",
    )
    .atomic(),
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
        "x-kubernetes-validations",
    )
    .merge("rule")
    .list_map(&["rule"]),
    // WebhookConversion
    f(
        "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.WebhookConversion",
        "conversionReviewVersions",
    )
    .atomic(),
    // APIGroup
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup",
        "serverAddressByClientCIDRs",
    )
    .atomic(),
    f("io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup", "versions").atomic(),
    // APIGroupList
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList",
        "groups",
    )
    .atomic(),
    // APIResource
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
        "categories",
    )
    .atomic(),
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResource",
        "shortNames",
    )
    .atomic(),
    // APIResourceList
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList",
        "resources",
    )
    .atomic(),
    // APIVersions
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "serverAddressByClientCIDRs",
    )
    .atomic(),
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions",
        "versions",
    )
    .atomic(),
    // DeleteOptions
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions",
        "dryRun",
    )
    .atomic(),
    // FieldSelectorRequirement
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
        "values",
    )
    .atomic(),
    // LabelSelector
    f("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector", "").map_type("atomic"),
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
        "matchExpressions",
    )
    .atomic(),
    // LabelSelectorRequirement
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        "values",
    )
    .atomic(),
    // ObjectMeta
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "finalizers",
    )
    .strategy("merge")
    .set(),
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "managedFields",
    )
    .atomic(),
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
        "ownerReferences",
    )
    .merge("uid")
    .list_map(&["uid"]),
    // OwnerReference
    f("io.k8s.apimachinery.pkg.apis.meta.v1.OwnerReference", "").map_type("atomic"),
    // Status
    f("io.k8s.apimachinery.pkg.apis.meta.v1.Status", "details").atomic(),
    // StatusDetails
    f(
        "io.k8s.apimachinery.pkg.apis.meta.v1.StatusDetails",
        "causes",
    )
    .atomic(),
];

/// The extensions of `field` of `definition`, if it has any.
pub fn field_ext(definition: &str, field: &str) -> Option<&'static FieldExt> {
    FIELD_EXTENSIONS
        .iter()
        .find(|e| e.definition == definition && e.field == field)
}

/// The `x-kubernetes-map-type` of a whole definition (`+structType=atomic`), if it has one.
pub fn definition_map_type(definition: &str) -> Option<&'static str> {
    field_ext(definition, "").and_then(|e| e.map_type)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    const CORE: &str = "io.k8s.api.core.v1.";
    const META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.";

    fn get(definition: &str, field: &str) -> FieldExt {
        *field_ext(definition, field)
            .unwrap_or_else(|| panic!("no extensions for {definition}.{field}"))
    }

    #[test]
    fn pod_spec_lists() {
        let containers = get(&format!("{CORE}PodSpec"), "containers");
        assert_eq!(containers.patch_strategy, Some("merge"));
        assert_eq!(containers.patch_merge_key, Some("name"));
        assert_eq!(containers.list_type, Some("map"));
        assert_eq!(containers.list_map_keys, &["name"]);

        let volumes = get(&format!("{CORE}PodSpec"), "volumes");
        assert_eq!(volumes.patch_strategy, Some("merge,retainKeys"));
        assert_eq!(volumes.patch_merge_key, Some("name"));
        assert_eq!(volumes.list_type, Some("map"));

        let init = get(&format!("{CORE}PodSpec"), "initContainers");
        assert_eq!(init.patch_merge_key, Some("name"));

        let tolerations = get(&format!("{CORE}PodSpec"), "tolerations");
        assert_eq!(tolerations.patch_strategy, None);
        assert_eq!(tolerations.list_type, Some("atomic"));

        let node_selector = get(&format!("{CORE}PodSpec"), "nodeSelector");
        assert_eq!(node_selector.map_type, Some("atomic"));

        let spread = get(&format!("{CORE}PodSpec"), "topologySpreadConstraints");
        assert_eq!(spread.patch_merge_key, Some("topologyKey"));
        assert_eq!(spread.list_map_keys, &["topologyKey", "whenUnsatisfiable"]);
    }

    #[test]
    fn container_lists() {
        for def in ["Container", "EphemeralContainer"] {
            let def = format!("{CORE}{def}");
            let ports = get(&def, "ports");
            assert_eq!(ports.patch_strategy, Some("merge"));
            assert_eq!(ports.patch_merge_key, Some("containerPort"));
            assert_eq!(ports.list_type, Some("map"));
            assert_eq!(ports.list_map_keys, &["containerPort", "protocol"]);

            let env = get(&def, "env");
            assert_eq!(env.patch_strategy, Some("merge"));
            assert_eq!(env.patch_merge_key, Some("name"));
            assert_eq!(env.list_map_keys, &["name"]);

            let mounts = get(&def, "volumeMounts");
            assert_eq!(mounts.patch_merge_key, Some("mountPath"));

            assert_eq!(get(&def, "command").list_type, Some("atomic"));
            assert_eq!(get(&def, "args").list_type, Some("atomic"));
        }
    }

    #[test]
    fn object_meta() {
        let finalizers = get(&format!("{META}ObjectMeta"), "finalizers");
        assert_eq!(finalizers.patch_strategy, Some("merge"));
        assert_eq!(finalizers.patch_merge_key, None);
        assert_eq!(finalizers.list_type, Some("set"));

        let owners = get(&format!("{META}ObjectMeta"), "ownerReferences");
        assert_eq!(owners.patch_strategy, Some("merge"));
        assert_eq!(owners.patch_merge_key, Some("uid"));
        assert_eq!(owners.list_type, Some("map"));
        assert_eq!(owners.list_map_keys, &["uid"]);

        let managed = get(&format!("{META}ObjectMeta"), "managedFields");
        assert_eq!(managed.list_type, Some("atomic"));

        assert!(field_ext(&format!("{META}ObjectMeta"), "labels").is_none());
        assert_eq!(
            definition_map_type(&format!("{META}LabelSelector")),
            Some("atomic")
        );
        assert_eq!(
            definition_map_type(&format!("{META}OwnerReference")),
            Some("atomic")
        );
        assert_eq!(definition_map_type(&format!("{META}ObjectMeta")), None);
    }

    #[test]
    fn other_groups() {
        let strategy = get("io.k8s.api.apps.v1.DeploymentSpec", "strategy");
        assert_eq!(strategy.patch_strategy, Some("retainKeys"));
        assert_eq!(strategy.list_type, None);

        let conditions = get("io.k8s.api.apps.v1.DeploymentStatus", "conditions");
        assert_eq!(conditions.patch_merge_key, Some("type"));

        let job = get("io.k8s.api.batch.v1.JobStatus", "conditions");
        assert_eq!(job.patch_merge_key, Some("type"));
        assert_eq!(job.list_type, Some("atomic"));

        let pdb = get("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "selector");
        assert_eq!(pdb.patch_strategy, Some("replace"));

        let ports = get(&format!("{CORE}ServiceSpec"), "ports");
        assert_eq!(ports.patch_merge_key, Some("port"));
        assert_eq!(ports.list_map_keys, &["port", "protocol"]);

        let pod_cidrs = get(&format!("{CORE}NodeSpec"), "podCIDRs");
        assert_eq!(pod_cidrs.patch_strategy, Some("merge"));
        assert_eq!(pod_cidrs.list_type, Some("set"));

        let claim_ref = get(&format!("{CORE}PersistentVolumeSpec"), "claimRef");
        assert_eq!(claim_ref.map_type, Some("granular"));

        let rules = get("io.k8s.api.rbac.v1.ClusterRole", "rules");
        assert_eq!(rules.list_type, Some("atomic"));

        let webhooks = get(
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
            "webhooks",
        );
        assert_eq!(webhooks.patch_merge_key, Some("name"));

        let validations = get(
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaProps",
            "x-kubernetes-validations",
        );
        assert_eq!(validations.patch_merge_key, Some("rule"));

        let drivers = get("io.k8s.api.storage.v1.CSINodeSpec", "drivers");
        assert_eq!(drivers.patch_merge_key, Some("name"));
    }

    #[test]
    fn no_duplicates_and_sorted() {
        let mut seen = BTreeSet::new();
        for e in FIELD_EXTENSIONS {
            assert!(
                seen.insert((e.definition, e.field)),
                "{}.{} listed twice",
                e.definition,
                e.field
            );
        }
        let keys: Vec<_> = FIELD_EXTENSIONS
            .iter()
            .map(|e| (e.definition, e.field))
            .collect();
        let mut sorted = keys.clone();
        sorted.sort();
        assert_eq!(keys, sorted, "FIELD_EXTENSIONS is not sorted");
    }

    #[test]
    fn values_are_well_formed() {
        for e in FIELD_EXTENSIONS {
            let name = format!("{}.{}", e.definition, e.field);
            assert!(e.definition.starts_with("io.k8s."), "{name}");
            if let Some(s) = e.patch_strategy {
                assert!(
                    ["merge", "replace", "retainKeys", "merge,retainKeys"].contains(&s),
                    "{name}: {s}"
                );
            }
            if e.patch_merge_key.is_some() {
                assert!(
                    e.patch_strategy.is_some_and(|s| s.contains("merge")),
                    "{name}"
                );
            }
            if let Some(t) = e.list_type {
                assert!(["atomic", "set", "map"].contains(&t), "{name}: {t}");
            }
            assert_eq!(
                e.list_type == Some("map"),
                !e.list_map_keys.is_empty(),
                "{name}"
            );
            if let Some(t) = e.map_type {
                assert!(["atomic", "granular"].contains(&t), "{name}: {t}");
            }
            assert!(
                e.patch_strategy.is_some() || e.list_type.is_some() || e.map_type.is_some(),
                "{name} has no extension"
            );
        }
        let whole: Vec<_> = FIELD_EXTENSIONS
            .iter()
            .filter(|e| e.field.is_empty())
            .collect();
        assert_eq!(whole.len(), 26);
        for e in whole {
            assert_eq!(e.map_type, Some("atomic"), "{}", e.definition);
            assert_eq!(e.patch_strategy, None, "{}", e.definition);
            assert_eq!(e.list_type, None, "{}", e.definition);
        }
    }
}
