//! REST mapping: from what a user types (`deploy`, `deployments.apps`,
//! `deployment.v1.apps`, a manifest's apiVersion and kind) to a group, version and
//! resource, from discovery.
//!
//! The rules are client-go's `restmapper` (a `PriorityRESTMapper` over discovery with the
//! shortcut expander) and kubectl's `Builder.mappingFor`: short names are expanded first
//! (case-sensitively, unless the text is some resource's plural or singular), then the
//! lowercased text is matched against plurals and singulars — in a group given exactly, else
//! by group prefix — and the first match in priority order wins: groups in discovery order
//! (the core group and `apps` first), each group's preferred version before its others.
//! Failing that, the text is tried as a kind. A miss on a cache that this process did not
//! write re-runs discovery once (`resolve_fresh`, `for_kind_fresh`), as kubectl's
//! `DeferredDiscoveryRESTMapper` does, so a CRD created a moment ago is found.

use tokio::sync::OnceCell;

use crate::ctx::Ctx;
use crate::discovery::{Discovery, DiscoveryClient, split_group_version};
use crate::error::{CliError, Result};

/// One resource as discovery describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mapping {
    /// Empty for the core group.
    pub group: String,
    pub version: String,
    /// The plural (`deployments`).
    pub resource: String,
    pub kind: String,
    pub namespaced: bool,
}

impl Mapping {
    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `pods` or `deployments.apps`, as kubectl names a resource in messages.
    pub fn group_resource(&self) -> String {
        if self.group.is_empty() {
            self.resource.clone()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }

    /// `pod` or `deployment.apps`, as kubectl prints `-o name` and operation results.
    pub fn kind_group(&self) -> String {
        let kind = self.kind.to_lowercase();
        if self.group.is_empty() {
            kind
        } else {
            format!("{kind}.{}", self.group)
        }
    }

    fn prefix(&self) -> String {
        if self.group.is_empty() {
            format!("/api/{}", self.version)
        } else {
            format!("/apis/{}/{}", self.group, self.version)
        }
    }

    /// The collection's path: in `namespace` for a namespaced resource given one, else
    /// across all namespaces (or cluster-scoped).
    pub fn collection_path(&self, namespace: Option<&str>) -> String {
        match namespace.filter(|_| self.namespaced) {
            Some(ns) => format!("{}/namespaces/{ns}/{}", self.prefix(), self.resource),
            None => format!("{}/{}", self.prefix(), self.resource),
        }
    }

    /// One object's path (`namespace` is ignored for cluster-scoped resources).
    pub fn object_path(&self, namespace: Option<&str>, name: &str) -> String {
        format!("{}/{name}", self.collection_path(namespace))
    }
}

/// One resource of the mapper: its mapping and what else discovery says of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resource {
    pub mapping: Mapping,
    /// The singular name (lowercased kind when discovery leaves it empty).
    pub singular: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<String>,
    /// Whether this is the group's preferred version.
    pub preferred: bool,
}

/// A short name and what it stands for, in discovery order.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Shortcut {
    group: String,
    short: String,
    plural: String,
}

/// The mapper of one command run.
#[derive(Debug, Clone, Default)]
pub struct Mapper {
    /// Every resource's mapping (subresources left out), in priority order.
    pub mappings: Vec<Mapping>,
    /// The same resources with their names, verbs and categories.
    resources: Vec<Resource>,
    /// Group-resources by discovery order (every version), for short names and categories.
    discovery_order: Vec<Resource>,
    shortcuts: Vec<Shortcut>,
    /// Whether discovery came from this process (a miss is then not retried).
    fresh: bool,
    /// The mapper of a re-discovery after a miss; once there, every lookup uses it.
    refreshed: OnceCell<Box<Mapper>>,
}

/// The three parts of `resource.version.group` (kubectl's `ParseResourceArg` /
/// `ParseKindArg`): `Some((name, version, group))` when there are two dots or more, and
/// (name, group) split at the first dot.
/// `(name, version, group)` of a fully specified argument.
type Full<'a> = Option<(&'a str, &'a str, &'a str)>;

fn parse_arg(arg: &str) -> (Full<'_>, (&str, &str)) {
    let full = if arg.matches('.').count() >= 2 {
        let mut it = arg.splitn(3, '.');
        match (it.next(), it.next(), it.next()) {
            (Some(r), Some(v), Some(g)) => Some((r, v, g)),
            _ => None,
        }
    } else {
        None
    };
    let short = arg.split_once('.').unwrap_or((arg, ""));
    (full, short)
}

impl Mapper {
    /// Discovery (through the disk cache) into a mapper.
    pub async fn load(ctx: &Ctx) -> Result<Mapper> {
        let mut d = DiscoveryClient::for_ctx(ctx).await?;
        let discovery = d.discover().await?;
        Ok(Mapper::from_discovery(&discovery, d.fresh()))
    }

    /// Discovery ignoring the disk cache (re-fetched and written back).
    pub async fn load_invalidated(ctx: &Ctx) -> Result<Mapper> {
        let mut d = DiscoveryClient::for_ctx(ctx).await?;
        d.invalidate();
        let discovery = d.discover().await?;
        Ok(Mapper::from_discovery(&discovery, true))
    }

    /// The mapper of a discovery result; `fresh` when it did not come from an older cache.
    pub fn from_discovery(d: &Discovery, fresh: bool) -> Mapper {
        let resource =
            |group: &str, version: &str, preferred: bool, r: &crate::discovery::ApiResource| {
                let singular = if r.singular_name.is_empty() {
                    r.kind.to_lowercase()
                } else {
                    r.singular_name.clone()
                };
                Resource {
                    mapping: Mapping {
                        group: group.to_string(),
                        version: version.to_string(),
                        resource: r.name.clone(),
                        kind: r.kind.clone(),
                        namespaced: r.namespaced,
                    },
                    singular,
                    short_names: r.short_names.clone(),
                    categories: r.categories.clone(),
                    verbs: r.verbs.clone(),
                    preferred,
                }
            };
        let mut resources = Vec::new();
        let mut discovery_order = Vec::new();
        let mut shortcuts = Vec::new();
        for g in &d.groups {
            let preferred = &g.preferred_version.version;
            let mut versions: Vec<&str> = Vec::new();
            if !preferred.is_empty()
                && d.resources
                    .contains_key(&crate::discovery::group_version(&g.name, preferred))
            {
                versions.push(preferred);
            }
            for v in &g.versions {
                if v.version != *preferred {
                    versions.push(&v.version);
                }
            }
            for v in versions {
                let gv = crate::discovery::group_version(&g.name, v);
                let Some(list) = d.resources.get(&gv) else {
                    continue;
                };
                for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
                    resources.push(resource(&g.name, v, v == preferred, r));
                }
            }
            for v in &g.versions {
                let gv = crate::discovery::group_version(&g.name, &v.version);
                let Some(list) = d.resources.get(&gv) else {
                    continue;
                };
                for r in list.resources.iter().filter(|r| !r.name.contains('/')) {
                    for s in &r.short_names {
                        shortcuts.push(Shortcut {
                            group: g.name.clone(),
                            short: s.clone(),
                            plural: r.name.clone(),
                        });
                    }
                    discovery_order.push(resource(&g.name, &v.version, v.version == *preferred, r));
                }
            }
        }
        Mapper {
            mappings: resources.iter().map(|r| r.mapping.clone()).collect(),
            resources,
            discovery_order,
            shortcuts,
            fresh,
            refreshed: OnceCell::new(),
        }
    }

    /// The mapper lookups go to: the re-discovered one after a miss, else this one.
    fn current(&self) -> &Mapper {
        match self.refreshed.get() {
            Some(m) => m.current(),
            None => self,
        }
    }

    /// Every resource (subresources left out) in priority order.
    pub fn resources(&self) -> &[Resource] {
        &self.current().resources
    }

    /// What discovery says of a mapping's resource (verbs, short names, categories).
    pub fn info(&self, m: &Mapping) -> Option<&Resource> {
        self.current().resources.iter().find(|r| {
            r.mapping.group == m.group
                && r.mapping.version == m.version
                && r.mapping.resource == m.resource
        })
    }

    /// client-go's `shortcutExpander.expandResourceShortcut`: (resource, group, whether the
    /// version still applies) and the warnings about ambiguous short names.
    fn expand(&self, resource: &str, group: &str) -> (String, String, bool, Vec<String>) {
        let in_group = |g: &str| group.is_empty() || g == group;
        if self.discovery_order.iter().any(|r| {
            in_group(&r.mapping.group) && (r.mapping.resource == resource || r.singular == resource)
        }) {
            return (resource.to_string(), group.to_string(), true, Vec::new());
        }
        let mut found: Option<&Shortcut> = None;
        let mut warnings = Vec::new();
        for s in self
            .shortcuts
            .iter()
            .filter(|s| in_group(&s.group) && s.short == resource)
        {
            match found {
                Some(f) if f.group == s.group && f.plural == s.plural => {}
                Some(_) => {
                    let long = if s.group.is_empty() {
                        s.plural.clone()
                    } else {
                        format!("{}.{}", s.plural, s.group)
                    };
                    let w = format!(
                        "short name \"{resource}\" could also match lower priority resource {long}"
                    );
                    if !warnings.contains(&w) {
                        warnings.push(w);
                    }
                }
                None => found = Some(s),
            }
        }
        if let Some(f) = found {
            return (f.plural.clone(), f.group.clone(), false, warnings);
        }
        if !group.is_empty()
            && let Some(s) = self
                .shortcuts
                .iter()
                .find(|s| s.group.starts_with(group) && s.short == resource)
        {
            return (s.plural.clone(), s.group.clone(), false, Vec::new());
        }
        (resource.to_string(), group.to_string(), true, Vec::new())
    }

    /// client-go's `ResourceFor` on the priority mapper behind the shortcut expander.
    fn resource_for(
        &self,
        resource: &str,
        group: &str,
        version: &str,
    ) -> (Option<&Resource>, Vec<String>) {
        let (resource, group, keep_version, warnings) = self.expand(resource, group);
        let version = if keep_version { version } else { "" };
        let resource = resource.to_lowercase();
        let named = |r: &&Resource| r.mapping.resource == resource || r.singular == resource;
        let found = match (group.is_empty(), version.is_empty()) {
            (false, false) => self
                .resources
                .iter()
                .filter(named)
                .find(|r| r.mapping.group == group && r.mapping.version == version),
            (false, true) => self
                .resources
                .iter()
                .filter(named)
                .find(|r| r.mapping.group == group)
                .or_else(|| {
                    self.resources
                        .iter()
                        .filter(named)
                        .find(|r| r.mapping.group.starts_with(group.as_str()))
                }),
            (true, false) => self
                .resources
                .iter()
                .filter(named)
                .find(|r| r.mapping.version == version),
            (true, true) => self.resources.iter().find(named),
        };
        (found, warnings)
    }

    /// client-go's `ResourcesFor` of a bare resource name (short names expanded): every
    /// match in priority order (kubectl `explain` picks among them by group prefix).
    pub fn resources_for(&self, resource: &str) -> Vec<Mapping> {
        let m = self.current();
        let (resource, group, _, _) = m.expand(resource, "");
        let resource = resource.to_lowercase();
        m.resources
            .iter()
            .filter(|r| {
                (group.is_empty() || r.mapping.group == group)
                    && (r.mapping.resource == resource || r.singular == resource)
            })
            .map(|r| r.mapping.clone())
            .collect()
    }

    /// client-go's `RESTMapping(groupKind, version)`: the kind (as written, or its
    /// lowercase form) in exactly that group, in `version` or the highest-priority one.
    fn kind_for(&self, group: &str, kind: &str, version: &str) -> Option<&Resource> {
        self.resources.iter().find(|r| {
            r.mapping.group == group
                && (r.mapping.kind == kind || r.mapping.kind.to_lowercase() == kind)
                && (version.is_empty() || r.mapping.version == version)
        })
    }

    /// kubectl's `Builder.mappingFor`, with the warnings it prints about short names.
    pub fn resolve_with_warnings(&self, arg: &str) -> (Result<Mapping>, Vec<String>) {
        let m = self.current();
        let (full, (name, group)) = parse_arg(arg);
        let mut warnings = Vec::new();
        if let Some((r, v, g)) = full {
            let (found, w) = m.resource_for(r, g, v);
            warnings.extend(w);
            if let Some(found) = found {
                return (Ok(found.mapping.clone()), warnings);
            }
        }
        let (found, w) = m.resource_for(name, group, "");
        warnings.extend(w);
        if let Some(found) = found {
            return (Ok(found.mapping.clone()), warnings);
        }
        if let Some((k, v, g)) = full
            && let Some(found) = m.kind_for(g, k, v)
        {
            return (Ok(found.mapping.clone()), warnings);
        }
        if let Some(found) = m.kind_for(group, name, "") {
            return (Ok(found.mapping.clone()), warnings);
        }
        (
            Err(CliError::msg(format!(
                "the server doesn't have a resource type \"{name}\""
            ))),
            warnings,
        )
    }

    /// The mapping for a resource argument (`po`, `pods`, `pod`, `deployments.apps`,
    /// `deployment.v1.apps`, `Deployment`).
    pub fn resolve(&self, arg: &str) -> Result<Mapping> {
        self.resolve_with_warnings(arg).0
    }

    /// The mapping for a manifest's `apiVersion` and `kind`. The error is
    /// `CliError::Msg("no matches for kind \"K\" in version \"g/v\"")` (kubectl prefixes it
    /// with `resource mapping not found for name: … from …:`).
    pub fn for_kind(&self, api_version: &str, kind: &str) -> Result<Mapping> {
        let (group, version) = split_group_version(api_version);
        match self.current().kind_for(group, kind, version) {
            Some(r) if !version.is_empty() => Ok(r.mapping.clone()),
            _ => Err(CliError::msg(format!(
                "no matches for kind \"{kind}\" in version \"{api_version}\""
            ))),
        }
    }

    /// The resources of a category (`all`), in discovery order, each group-resource once
    /// in its priority version (kubectl's category expander).
    pub fn categories(&self, name: &str) -> Vec<Mapping> {
        let m = self.current();
        let mut out: Vec<Mapping> = Vec::new();
        for r in m
            .discovery_order
            .iter()
            .filter(|r| r.categories.iter().any(|c| c == name))
        {
            if out
                .iter()
                .any(|o| o.group == r.mapping.group && o.resource == r.mapping.resource)
            {
                continue;
            }
            if let (Some(found), _) = m.resource_for(&r.mapping.resource, &r.mapping.group, "") {
                out.push(found.mapping.clone());
            }
        }
        out
    }

    /// Whether discovery came from this process (a miss is then real).
    pub fn is_fresh(&self) -> bool {
        self.current().fresh
    }

    /// Re-runs discovery past the cache once, when the cache was not this process's (kubectl's
    /// `DeferredDiscoveryRESTMapper` reset on a miss). True when it did.
    pub async fn refresh(&self, ctx: &Ctx) -> Result<bool> {
        if self.fresh || self.refreshed.initialized() {
            return Ok(false);
        }
        self.refreshed
            .get_or_try_init(|| async { Mapper::load_invalidated(ctx).await.map(Box::new) })
            .await?;
        Ok(true)
    }

    /// [`Mapper::resolve`], re-discovering once on a miss (a CRD created since the cache was
    /// written), printing the short-name warnings kubectl prints.
    pub async fn resolve_fresh(&self, ctx: &Ctx, arg: &str) -> Result<Mapping> {
        let (r, warnings) = self.resolve_with_warnings(arg);
        let r = match r {
            Err(_) if self.refresh(ctx).await? => {
                let (r, w) = self.resolve_with_warnings(arg);
                print_warnings(ctx, &w);
                return r;
            }
            r => r,
        };
        print_warnings(ctx, &warnings);
        r
    }

    /// [`Mapper::for_kind`], re-discovering once on a miss.
    pub async fn for_kind_fresh(
        &self,
        ctx: &Ctx,
        api_version: &str,
        kind: &str,
    ) -> Result<Mapping> {
        match self.for_kind(api_version, kind) {
            Err(_) if self.refresh(ctx).await? => self.for_kind(api_version, kind),
            r => r,
        }
    }
}

fn print_warnings(ctx: &Ctx, warnings: &[String]) {
    if warnings.is_empty() {
        return;
    }
    use std::io::Write;
    let mut err = ctx.err();
    for w in warnings {
        let _ = writeln!(err, "Warning: {w}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::discovery::{ApiGroup, ApiResource, ApiResourceList, GroupVersionForDiscovery};
    use std::collections::BTreeMap;

    fn res(
        name: &str,
        singular: &str,
        kind: &str,
        ns: bool,
        short: &[&str],
        cats: &[&str],
    ) -> ApiResource {
        ApiResource {
            name: name.into(),
            singular_name: singular.into(),
            namespaced: ns,
            kind: kind.into(),
            verbs: vec!["get".into(), "list".into()],
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: cats.iter().map(|s| s.to_string()).collect(),
            ..ApiResource::default()
        }
    }

    /// A canned discovery: core, apps, events.k8s.io, autoscaling (v2 preferred, v1),
    /// batch, storage.k8s.io, a CRD group with a short name clashing with core's `po`.
    fn canned() -> Discovery {
        let mut groups = Vec::new();
        let mut resources = BTreeMap::new();
        let mut add = |group: &str, versions: &[&str], lists: Vec<(&str, Vec<ApiResource>)>| {
            let gvs: Vec<GroupVersionForDiscovery> = versions
                .iter()
                .map(|v| GroupVersionForDiscovery {
                    group_version: crate::discovery::group_version(group, v),
                    version: v.to_string(),
                })
                .collect();
            groups.push(ApiGroup {
                name: group.into(),
                preferred_version: gvs[0].clone(),
                versions: gvs,
            });
            for (v, rs) in lists {
                let gv = crate::discovery::group_version(group, v);
                resources.insert(
                    gv.clone(),
                    ApiResourceList {
                        group_version: gv,
                        resources: rs,
                        ..ApiResourceList::default()
                    },
                );
            }
        };
        add(
            "",
            &["v1"],
            vec![(
                "v1",
                vec![
                    res("pods", "pod", "Pod", true, &["po"], &["all"]),
                    res("pods/status", "pod", "Pod", true, &[], &[]),
                    res("services", "service", "Service", true, &["svc"], &["all"]),
                    res("events", "event", "Event", true, &["ev"], &[]),
                    res("nodes", "node", "Node", false, &["no"], &[]),
                    res("endpoints", "endpoints", "Endpoints", true, &["ep"], &[]),
                ],
            )],
        );
        add(
            "apps",
            &["v1"],
            vec![(
                "v1",
                vec![
                    res(
                        "deployments",
                        "deployment",
                        "Deployment",
                        true,
                        &["deploy"],
                        &["all"],
                    ),
                    res(
                        "replicasets",
                        "replicaset",
                        "ReplicaSet",
                        true,
                        &["rs"],
                        &["all"],
                    ),
                ],
            )],
        );
        add(
            "events.k8s.io",
            &["v1"],
            vec![(
                "v1",
                vec![res("events", "event", "Event", true, &["ev"], &[])],
            )],
        );
        add(
            "autoscaling",
            &["v2", "v1"],
            vec![
                (
                    "v2",
                    vec![res(
                        "horizontalpodautoscalers",
                        "horizontalpodautoscaler",
                        "HorizontalPodAutoscaler",
                        true,
                        &["hpa"],
                        &["all"],
                    )],
                ),
                (
                    "v1",
                    vec![res(
                        "horizontalpodautoscalers",
                        "horizontalpodautoscaler",
                        "HorizontalPodAutoscaler",
                        true,
                        &["hpa"],
                        &["all"],
                    )],
                ),
            ],
        );
        add(
            "batch",
            &["v1"],
            vec![("v1", vec![res("jobs", "job", "Job", true, &[], &["all"])])],
        );
        add(
            "storage.k8s.io",
            &["v1"],
            vec![(
                "v1",
                vec![res(
                    "storageclasses",
                    "storageclass",
                    "StorageClass",
                    false,
                    &["sc"],
                    &[],
                )],
            )],
        );
        add(
            "example.com",
            &["v1", "v1beta1"],
            vec![
                (
                    "v1",
                    vec![res("widgets", "widget", "Widget", true, &["po", "wd"], &[])],
                ),
                (
                    "v1beta1",
                    vec![
                        res("widgets", "widget", "Widget", true, &["po", "wd"], &[]),
                        res("gadgets", "", "Gadget", false, &[], &[]),
                    ],
                ),
            ],
        );
        Discovery { groups, resources }
    }

    fn mapper() -> Mapper {
        Mapper::from_discovery(&canned(), true)
    }

    fn gvr(m: &Mapping) -> String {
        format!("{}/{}/{}", m.group, m.version, m.resource)
    }

    #[test]
    fn names_short_names_singulars_and_kinds() {
        let m = mapper();
        for arg in ["po", "pods", "pod", "Pod", "PODS", "Pods"] {
            assert_eq!(gvr(&m.resolve(arg).unwrap()), "/v1/pods", "{arg}");
        }
        for arg in [
            "deploy",
            "deployments",
            "deployment",
            "Deployment",
            "deployments.apps",
            "deployment.apps",
            "deployment.v1.apps",
            "deployments.v1.apps",
            "deploy.apps",
            "deploy.v1.apps",
            "Deployment.apps",
            "Deployment.v1.apps",
        ] {
            assert_eq!(
                gvr(&m.resolve(arg).unwrap()),
                "apps/v1/deployments",
                "{arg}"
            );
        }
        // Group prefixes, as `storageclass.storage`.
        assert_eq!(
            gvr(&m.resolve("storageclass.storage").unwrap()),
            "storage.k8s.io/v1/storageclasses"
        );
        assert_eq!(
            gvr(&m.resolve("sc.storage").unwrap()),
            "storage.k8s.io/v1/storageclasses"
        );
        // A singular missing from discovery is the lowercased kind.
        assert_eq!(
            gvr(&m.resolve("gadget").unwrap()),
            "example.com/v1beta1/gadgets"
        );
        // Short names are case-sensitive (kubectl refuses `DEPLOY`).
        assert!(m.resolve("DEPLOY").is_err());
    }

    #[test]
    fn priority_core_first_and_preferred_versions() {
        let m = mapper();
        assert_eq!(gvr(&m.resolve("events").unwrap()), "/v1/events");
        assert_eq!(gvr(&m.resolve("ev").unwrap()), "/v1/events");
        assert_eq!(
            gvr(&m.resolve("events.events.k8s.io").unwrap()),
            "events.k8s.io/v1/events"
        );
        assert_eq!(
            gvr(&m.resolve("hpa").unwrap()),
            "autoscaling/v2/horizontalpodautoscalers"
        );
        assert_eq!(
            gvr(&m
                .resolve("horizontalpodautoscalers.v1.autoscaling")
                .unwrap()),
            "autoscaling/v1/horizontalpodautoscalers"
        );
        assert_eq!(
            gvr(&m.resolve("widgets").unwrap()),
            "example.com/v1/widgets"
        );
        assert_eq!(
            gvr(&m.resolve("widget.v1beta1.example.com").unwrap()),
            "example.com/v1beta1/widgets"
        );
        // `po` is core's, with a warning about the CRD's.
        let (r, w) = m.resolve_with_warnings("po");
        assert_eq!(gvr(&r.unwrap()), "/v1/pods");
        assert_eq!(
            w,
            vec!["short name \"po\" could also match lower priority resource widgets.example.com"]
        );
        assert_eq!(
            gvr(&m.resolve("po.example.com").unwrap()),
            "example.com/v1/widgets"
        );
    }

    #[test]
    fn errors_as_kubectl() {
        let m = mapper();
        assert_eq!(
            m.resolve("foo").unwrap_err().to_string(),
            "error: the server doesn't have a resource type \"foo\""
        );
        assert_eq!(
            m.resolve("foo.bar").unwrap_err().to_string(),
            "error: the server doesn't have a resource type \"foo\""
        );
        assert_eq!(
            m.resolve("deployments.v2.apps").unwrap_err().to_string(),
            "error: the server doesn't have a resource type \"deployments\""
        );
        assert!(m.resolve("pods/status").is_err());
    }

    #[test]
    fn kinds_of_manifests() {
        let m = mapper();
        assert_eq!(gvr(&m.for_kind("v1", "Pod").unwrap()), "/v1/pods");
        assert_eq!(
            gvr(&m.for_kind("apps/v1", "Deployment").unwrap()),
            "apps/v1/deployments"
        );
        assert_eq!(
            gvr(&m
                .for_kind("autoscaling/v1", "HorizontalPodAutoscaler")
                .unwrap()),
            "autoscaling/v1/horizontalpodautoscalers"
        );
        assert!(!m.for_kind("v1", "Node").unwrap().namespaced);
        assert_eq!(
            m.for_kind("apps/v9", "Deployment").unwrap_err().to_string(),
            "error: no matches for kind \"Deployment\" in version \"apps/v9\""
        );
        assert!(m.for_kind("v1", "Deployment").is_err());
        assert!(m.for_kind("", "Pod").is_err());
    }

    #[test]
    fn category_all() {
        let m = mapper();
        let all: Vec<String> = m.categories("all").iter().map(gvr).collect();
        assert_eq!(
            all,
            vec![
                "/v1/pods",
                "/v1/services",
                "apps/v1/deployments",
                "apps/v1/replicasets",
                "autoscaling/v2/horizontalpodautoscalers",
                "batch/v1/jobs",
            ]
        );
        assert!(m.categories("nope").is_empty());
    }

    #[test]
    fn mapping_paths() {
        let m = mapper();
        let d = m.resolve("deploy").unwrap();
        assert_eq!(
            d.collection_path(Some("ns")),
            "/apis/apps/v1/namespaces/ns/deployments"
        );
        assert_eq!(
            m.resolve("no").unwrap().object_path(Some("ns"), "n1"),
            "/api/v1/nodes/n1"
        );
        assert_eq!(m.info(&d).unwrap().short_names, vec!["deploy"]);
    }
}
