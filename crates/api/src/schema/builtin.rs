//! The built-in definitions: generated from `k8s-openapi`'s schemas (its types implement
//! `schemars::JsonSchema` under upstream's definition names), then brought to the shape of
//! upstream's published spec by [`super::fixups`].

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiextensions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apiregistration;
use k8s_openapi::{ListableResource, Resource, api};
use schemars::JsonSchema;
use schemars::generate::{SchemaGenerator, SchemaSettings};
use serde_json::Value;

use super::extensions::FieldExt;
use super::{Def, KindEntry, Schemas, fixups, names};
use crate::catalog::ResourceInfo;

/// One type `k8s-openapi` knows: its kind, List kind, definition name and generator.
pub(super) struct TypeEntry {
    pub group: &'static str,
    pub version: &'static str,
    pub kind: &'static str,
    pub list_kind: Option<&'static str>,
    pub name: fn() -> Cow<'static, str>,
    pub add: fn(&mut SchemaGenerator),
}

macro_rules! listable {
    ($($ty:ty),* $(,)?) => {
        [$(TypeEntry {
            group: <$ty as Resource>::GROUP,
            version: <$ty as Resource>::VERSION,
            kind: <$ty as Resource>::KIND,
            list_kind: Some(<$ty as ListableResource>::LIST_KIND),
            name: <$ty as JsonSchema>::schema_name,
            add: |g: &mut SchemaGenerator| {
                g.subschema_for::<$ty>();
            },
        }),*]
    };
}

macro_rules! single {
    ($($ty:ty),* $(,)?) => {
        [$(TypeEntry {
            group: <$ty as Resource>::GROUP,
            version: <$ty as Resource>::VERSION,
            kind: <$ty as Resource>::KIND,
            list_kind: None,
            name: <$ty as JsonSchema>::schema_name,
            add: |g: &mut SchemaGenerator| {
                g.subschema_for::<$ty>();
            },
        }),*]
    };
}

/// Every kind of the generally available API groups of Kubernetes 1.33. Only those the
/// catalog serves (and [`ALWAYS`]) are built; the others are here so that a kind added to the
/// catalog gets its schema without touching this file.
fn table() -> Vec<TypeEntry> {
    use api::core::v1 as core;
    let mut out: Vec<TypeEntry> = Vec::with_capacity(80);
    out.extend(listable![
        core::ComponentStatus,
        core::ConfigMap,
        core::Endpoints,
        core::Event,
        core::LimitRange,
        core::Namespace,
        core::Node,
        core::PersistentVolume,
        core::PersistentVolumeClaim,
        core::Pod,
        core::PodTemplate,
        core::ReplicationController,
        core::ResourceQuota,
        core::Secret,
        core::Service,
        core::ServiceAccount,
        api::admissionregistration::v1::MutatingWebhookConfiguration,
        api::admissionregistration::v1::ValidatingAdmissionPolicy,
        api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
        api::admissionregistration::v1::ValidatingWebhookConfiguration,
        apiextensions::CustomResourceDefinition,
        apiregistration::APIService,
        api::apps::v1::ControllerRevision,
        api::apps::v1::DaemonSet,
        api::apps::v1::Deployment,
        api::apps::v1::ReplicaSet,
        api::apps::v1::StatefulSet,
        api::autoscaling::v1::HorizontalPodAutoscaler,
        api::autoscaling::v2::HorizontalPodAutoscaler,
        api::batch::v1::CronJob,
        api::batch::v1::Job,
        api::certificates::v1::CertificateSigningRequest,
        api::coordination::v1::Lease,
        api::discovery::v1::EndpointSlice,
        api::events::v1::Event,
        api::flowcontrol::v1::FlowSchema,
        api::flowcontrol::v1::PriorityLevelConfiguration,
        api::networking::v1::IPAddress,
        api::networking::v1::Ingress,
        api::networking::v1::IngressClass,
        api::networking::v1::NetworkPolicy,
        api::networking::v1::ServiceCIDR,
        api::node::v1::RuntimeClass,
        api::policy::v1::PodDisruptionBudget,
        api::rbac::v1::ClusterRole,
        api::rbac::v1::ClusterRoleBinding,
        api::rbac::v1::Role,
        api::rbac::v1::RoleBinding,
        api::scheduling::v1::PriorityClass,
        api::storage::v1::CSIDriver,
        api::storage::v1::CSINode,
        api::storage::v1::CSIStorageCapacity,
        api::storage::v1::StorageClass,
        api::storage::v1::VolumeAttachment,
    ]);
    out.extend(single![
        core::Binding,
        api::autoscaling::v1::Scale,
        api::policy::v1::Eviction,
        api::authentication::v1::TokenRequest,
        api::authentication::v1::TokenReview,
        api::authentication::v1::SelfSubjectReview,
        api::authorization::v1::LocalSubjectAccessReview,
        api::authorization::v1::SelfSubjectAccessReview,
        api::authorization::v1::SelfSubjectRulesReview,
        api::authorization::v1::SubjectAccessReview,
        meta::APIGroup,
        meta::APIGroupList,
        meta::APIResourceList,
        meta::APIVersions,
        meta::Status,
    ]);
    out
}

/// Kinds whose definitions are always built: what discovery, errors and the common
/// subresources speak.
const ALWAYS: &[(&str, &str, &str)] = &[
    ("", "v1", "Status"),
    ("", "v1", "APIVersions"),
    ("", "v1", "APIGroupList"),
    ("", "v1", "APIGroup"),
    ("", "v1", "APIResourceList"),
    ("", "v1", "Binding"),
    ("autoscaling", "v1", "Scale"),
    ("policy", "v1", "Eviction"),
    ("authentication.k8s.io", "v1", "TokenRequest"),
];

/// Definitions without a kind of their own that documents reference.
fn add_meta_types(g: &mut SchemaGenerator) {
    g.subschema_for::<meta::DeleteOptions>();
    g.subschema_for::<meta::WatchEvent<api::core::v1::ConfigMap>>();
    g.subschema_for::<meta::Patch>();
    g.subschema_for::<meta::ListMeta>();
    g.subschema_for::<meta::ObjectMeta>();
    g.subschema_for::<k8s_openapi::apimachinery::pkg::version::Info>();
}

/// Names of the definitions registered under every group version (upstream lists each group
/// version in their `x-kubernetes-group-version-kind`).
const PER_GROUP_VERSION: &[(&str, &str)] = &[
    (names::DELETE_OPTIONS, "DeleteOptions"),
    (names::WATCH_EVENT, "WatchEvent"),
];

/// Builds the built-in definitions for the kinds of `catalog`.
pub(super) fn build(catalog: &[ResourceInfo], field_extensions: &[FieldExt]) -> Schemas {
    let mut wanted: BTreeSet<(String, String, String)> = BTreeSet::new();
    let mut group_versions: BTreeSet<(String, String)> = BTreeSet::new();
    for r in catalog {
        wanted.insert((r.group.clone(), r.version.clone(), r.kind.clone()));
        group_versions.insert((r.group.clone(), r.version.clone()));
        for s in &r.subresources {
            wanted.insert((s.group.clone(), s.version.clone(), s.kind.clone()));
        }
    }
    for (g, v, k) in ALWAYS {
        wanted.insert((g.to_string(), v.to_string(), k.to_string()));
    }

    let mut kinds: Vec<KindEntry> = Vec::new();
    let mut lists: Vec<(KindEntry, String)> = Vec::new();
    let mut generators: Vec<fn(&mut SchemaGenerator)> = Vec::new();
    for entry in table() {
        let key = (
            entry.group.to_string(),
            entry.version.to_string(),
            entry.kind.to_string(),
        );
        if !wanted.contains(&key) {
            continue;
        }
        generators.push(entry.add);
        let name = (entry.name)().into_owned();
        if let Some(list_kind) = entry.list_kind {
            let list_name = match name.strip_suffix(entry.kind) {
                Some(prefix) => format!("{prefix}{list_kind}"),
                None => format!("{name}List"),
            };
            lists.push((
                KindEntry {
                    group: entry.group.to_string(),
                    version: entry.version.to_string(),
                    kind: list_kind.to_string(),
                    definition: list_name,
                },
                name.clone(),
            ));
        }
        kinds.push(KindEntry {
            group: entry.group.to_string(),
            version: entry.version.to_string(),
            kind: entry.kind.to_string(),
            definition: name,
        });
    }
    generators.push(add_meta_types);

    // InitializerConfiguration has no `k8s-openapi` type: its definitions are hand-written.
    let mut ic_defs = None;
    if wanted.contains(&(
        "admissionregistration.k8s.io".to_string(),
        "v1alpha1".to_string(),
        "InitializerConfiguration".to_string(),
    )) {
        let (name, defs) = super::initializers::initializer_configuration();
        let entry = |kind: &str, definition: String| KindEntry {
            group: "admissionregistration.k8s.io".into(),
            version: "v1alpha1".into(),
            kind: kind.into(),
            definition,
        };
        kinds.push(entry("InitializerConfiguration", name.to_string()));
        lists.push((
            entry("InitializerConfigurationList", format!("{name}List")),
            name.to_string(),
        ));
        ic_defs = Some(defs);
    }
    let mut gvks: BTreeMap<String, Vec<(String, String, String)>> = BTreeMap::new();
    for k in kinds.iter().chain(lists.iter().map(|(l, _)| l)) {
        gvks.entry(k.definition.clone()).or_default().push((
            k.group.clone(),
            k.version.clone(),
            k.kind.clone(),
        ));
    }
    for (definition, kind) in PER_GROUP_VERSION {
        let list = gvks.entry(definition.to_string()).or_default();
        for (g, v) in &group_versions {
            list.push((g.clone(), v.clone(), kind.to_string()));
        }
    }

    // One type's closure at a time, so that only one closure exists as trees; the finished
    // definitions are kept as text.
    let mut finished: BTreeMap<String, Def> = BTreeMap::new();
    let settings = SchemaSettings::openapi3().with(|s| s.meta_schema = None);
    let mut structs: BTreeSet<String> = BTreeSet::new();
    let finish = |mut defs: BTreeMap<String, Value>,
                  finished: &mut BTreeMap<String, Def>,
                  structs: &mut BTreeSet<String>| {
        defs.retain(|name, _| !finished.contains_key(name));
        fixups::special_types(&mut defs);
        fixups::drop_required_metadata(&mut defs);
        for (name, def) in defs.iter_mut() {
            if let Some(list) = gvks.get(name) {
                fixups::set_gvk(def, list);
            }
        }
        fixups::apply_field_extensions(&mut defs, field_extensions);
        structs.extend(fixups::struct_names(&defs));
        fixups::apply_defaults(&mut defs, structs);
        for (name, value) in defs {
            finished.insert(name, Def::new(&value, None));
        }
    };
    for add in generators {
        let mut generator = settings.clone().into_generator();
        add(&mut generator);
        let defs: BTreeMap<String, Value> = generator.take_definitions(true).into_iter().collect();
        structs.extend(fixups::struct_names(&defs));
        finish(defs, &mut finished, &mut structs);
    }
    if let Some(defs) = ic_defs.take() {
        structs.extend(fixups::struct_names(&defs));
        finish(defs, &mut finished, &mut structs);
    }
    let mut list_defs = BTreeMap::new();
    for (list, item_definition) in &lists {
        let item_kind = kinds
            .iter()
            .find(|k| k.definition == *item_definition)
            .map(|k| k.kind.as_str())
            .unwrap_or_default();
        let def = fixups::list_definition(item_definition, item_kind, &list.kind);
        list_defs.insert(list.definition.clone(), def);
    }
    finish(list_defs, &mut finished, &mut structs);

    kinds.extend(lists.into_iter().map(|(l, _)| l));
    Schemas::from_parts(finished, kinds, None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;
    use serde_json::json;

    #[test]
    fn table_names_match_kinds() {
        for e in table() {
            let name = (e.name)();
            assert!(
                name.ends_with(&format!(".{}", e.kind)),
                "{name} / {}",
                e.kind
            );
        }
    }

    #[test]
    fn builds_only_what_the_catalog_serves() {
        let pods: Vec<ResourceInfo> = catalog::builtin()
            .into_iter()
            .filter(|r| r.plural == "pods")
            .collect();
        let s = build(&pods, &[]);
        assert!(s.get("io.k8s.api.core.v1.Pod").is_some());
        assert!(s.get("io.k8s.api.core.v1.PodList").is_some());
        assert!(s.get("io.k8s.api.policy.v1.Eviction").is_some());
        assert!(s.get("io.k8s.api.apps.v1.Deployment").is_none());
        let del = s.get(names::DELETE_OPTIONS).unwrap();
        assert_eq!(
            del[super::super::GVK_EXTENSION],
            json!([{"group": "", "kind": "DeleteOptions", "version": "v1"}])
        );
    }

    #[test]
    fn field_extensions_are_injected() {
        let deploy: Vec<ResourceInfo> = catalog::builtin()
            .into_iter()
            .filter(|r| r.plural == "deployments")
            .collect();
        let exts = [
            FieldExt {
                definition: "io.k8s.api.core.v1.PodSpec",
                field: "containers",
                patch_strategy: Some("merge"),
                patch_merge_key: Some("name"),
                list_type: Some("map"),
                list_map_keys: &["name"],
                map_type: None,
            },
            FieldExt {
                definition: "io.k8s.api.apps.v1.DeploymentSpec",
                field: "selector",
                patch_strategy: None,
                patch_merge_key: None,
                list_type: None,
                list_map_keys: &[],
                map_type: Some("atomic"),
            },
            FieldExt {
                definition: "io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector",
                field: "",
                patch_strategy: None,
                patch_merge_key: None,
                list_type: None,
                list_map_keys: &[],
                map_type: Some("atomic"),
            },
            FieldExt {
                definition: "io.k8s.api.core.v1.NoSuchType",
                field: "x",
                patch_strategy: Some("merge"),
                patch_merge_key: None,
                list_type: None,
                list_map_keys: &[],
                map_type: None,
            },
        ];
        let s = build(&deploy, &exts);
        let containers = &s.get("io.k8s.api.core.v1.PodSpec").unwrap()["properties"]["containers"];
        assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
        assert_eq!(containers["x-kubernetes-patch-merge-key"], "name");
        assert_eq!(containers["x-kubernetes-list-type"], "map");
        assert_eq!(containers["x-kubernetes-list-map-keys"], json!(["name"]));
        assert_eq!(containers["type"], "array");
        let selector =
            &s.get("io.k8s.api.apps.v1.DeploymentSpec").unwrap()["properties"]["selector"];
        assert_eq!(selector["x-kubernetes-map-type"], "atomic");
        assert!(
            selector.get("$ref").is_none(),
            "refs with siblings are wrapped"
        );
        assert_eq!(
            super::super::referenced_name(selector),
            Some("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
        );
        let ls = s
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.LabelSelector")
            .unwrap();
        assert_eq!(ls["x-kubernetes-map-type"], "atomic");
    }
}
