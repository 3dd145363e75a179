//! Authorization: the `--authorization-mode` chain, the RBAC source over the watch caches,
//! request attributes and upstream's `Forbidden` answer, the bootstrap policy's
//! reconciliation at start (upstream's `ensure-rbac` post-start hook) and the ClusterRole
//! aggregation controller.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::ApiError;
use api::k8s::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use api::k8s::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use auth::{Attributes, Authorizer, RbacSource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::Error;
use crate::registry::cache::Cacher;
use crate::registry::{Precondition, Registry, Resource, WriteOptions};
use crate::requestinfo::RequestInfo;

const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
const AUTOUPDATE: &str = "rbac.authorization.kubernetes.io/autoupdate";

/// The parsed objects of one watch cache, re-parsed only when the cache changed.
struct Parsed<T> {
    cacher: Arc<Cacher>,
    state: Mutex<(u64, Arc<T>)>,
}

impl<T: Default> Parsed<T> {
    fn new(cacher: Arc<Cacher>) -> Self {
        Parsed {
            cacher,
            // No cache reaches this generation, so the first read parses.
            state: Mutex::new((u64::MAX, Arc::new(T::default()))),
        }
    }

    fn get(&self, build: impl FnOnce(&Cacher) -> T) -> Arc<T> {
        let generation = self.cacher.generation();
        let mut st = match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        if st.0 != generation {
            *st = (generation, Arc::new(build(&self.cacher)));
        }
        Arc::clone(&st.1)
    }
}

fn parse_all<T: DeserializeOwned>(cacher: &Cacher) -> Vec<Arc<T>> {
    let (items, _) = cacher.list(&|_| true, "");
    items
        .iter()
        .filter_map(|o| match serde_json::from_slice::<T>(&o.json()) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(key = %o.key(), error = %e, "cannot decode an RBAC object");
                None
            }
        })
        .collect()
}

fn name_of(meta: &ObjectMeta) -> String {
    meta.name.clone().unwrap_or_default()
}

fn namespace_of(meta: &ObjectMeta) -> String {
    meta.namespace.clone().unwrap_or_default()
}

/// The RBAC objects of the watch caches, as the RBAC authorizer reads them. Each kind is
/// parsed once per change of its cache; between changes a request costs a map lookup per
/// role and a walk over the bindings.
pub struct CacheRbac {
    cluster_roles: Parsed<HashMap<String, Arc<ClusterRole>>>,
    roles: Parsed<HashMap<(String, String), Arc<Role>>>,
    cluster_role_bindings: Parsed<Vec<Arc<ClusterRoleBinding>>>,
    role_bindings: Parsed<HashMap<String, Vec<Arc<RoleBinding>>>>,
}

fn cacher(registry: &Registry, plural: &str) -> Result<Arc<Cacher>, Error> {
    registry
        .lookup(RBAC_GROUP, "v1", plural)
        .map(|r| Arc::clone(&r.cacher))
        .ok_or_else(|| Error::Config(format!("RBAC: {plural}.{RBAC_GROUP} is not served")))
}

impl CacheRbac {
    pub fn new(registry: &Registry) -> Result<CacheRbac, Error> {
        Ok(CacheRbac {
            cluster_roles: Parsed::new(cacher(registry, "clusterroles")?),
            roles: Parsed::new(cacher(registry, "roles")?),
            cluster_role_bindings: Parsed::new(cacher(registry, "clusterrolebindings")?),
            role_bindings: Parsed::new(cacher(registry, "rolebindings")?),
        })
    }
}

impl RbacSource for CacheRbac {
    fn cluster_role(&self, name: &str) -> Option<Arc<ClusterRole>> {
        self.cluster_roles
            .get(|c| {
                parse_all::<ClusterRole>(c)
                    .into_iter()
                    .map(|r| (name_of(&r.metadata), r))
                    .collect()
            })
            .get(name)
            .cloned()
    }

    fn role(&self, namespace: &str, name: &str) -> Option<Arc<Role>> {
        self.roles
            .get(|c| {
                parse_all::<Role>(c)
                    .into_iter()
                    .map(|r| ((namespace_of(&r.metadata), name_of(&r.metadata)), r))
                    .collect()
            })
            .get(&(namespace.to_string(), name.to_string()))
            .cloned()
    }

    fn cluster_role_bindings(&self) -> Vec<Arc<ClusterRoleBinding>> {
        self.cluster_role_bindings
            .get(parse_all::<ClusterRoleBinding>)
            .as_ref()
            .clone()
    }

    fn role_bindings(&self, namespace: &str) -> Vec<Arc<RoleBinding>> {
        self.role_bindings
            .get(|c| {
                let mut by_ns: HashMap<String, Vec<Arc<RoleBinding>>> = HashMap::new();
                for b in parse_all::<RoleBinding>(c) {
                    by_ns.entry(namespace_of(&b.metadata)).or_default().push(b);
                }
                by_ns
            })
            .get(namespace)
            .cloned()
            .unwrap_or_default()
    }
}

/// The Node authorizer's view of the cluster: pods by `spec.nodeName` and claims, read from
/// the watch caches at each decision (the pods of one node, parsed on demand).
pub struct CacheNodeGraph {
    pods: Arc<Cacher>,
    claims: Arc<Cacher>,
}

impl CacheNodeGraph {
    pub fn new(registry: &Registry) -> Result<CacheNodeGraph, Error> {
        let find = |plural: &str| {
            registry
                .lookup("", "v1", plural)
                .map(|r| Arc::clone(&r.cacher))
                .ok_or_else(|| Error::Config(format!("no {plural} resource")))
        };
        Ok(CacheNodeGraph {
            pods: find("pods")?,
            claims: find("persistentvolumeclaims")?,
        })
    }
}

impl auth::NodeGraphSource for CacheNodeGraph {
    fn pods_on_node(&self, node: &str, namespace: &str) -> Vec<Arc<Value>> {
        let under = if namespace.is_empty() {
            "/registry/pods/".to_string()
        } else {
            format!("/registry/pods/{namespace}/")
        };
        let (items, _) = self
            .pods
            .list(&|o| o.field("spec.nodeName") == Some(node), &under);
        items
            .iter()
            .filter_map(|o| o.value())
            .map(Arc::new)
            .collect()
    }

    fn claim_volume(&self, namespace: &str, name: &str) -> Option<String> {
        let o = self.claims.get(&format!(
            "/registry/persistentvolumeclaims/{namespace}/{name}"
        ))?;
        o.value()?["spec"]["volumeName"]
            .as_str()
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    }
}

/// The authorizer chain of `--authorization-mode` (a comma list), after the
/// `system:masters` superuser authorizer.
pub fn chain(
    modes: &[String],
    policy_file: Option<&std::path::Path>,
    webhook: &crate::webhook::WebhookAuthzConfig,
    registry: &Registry,
    rbac: &Arc<CacheRbac>,
) -> Result<auth::Union, Error> {
    let mut configured: Vec<Box<dyn Authorizer>> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    for mode in modes.iter().map(|m| m.trim()).filter(|m| !m.is_empty()) {
        if seen.contains(&mode) {
            return Err(Error::Config(format!(
                "--authorization-mode: {mode:?} specified more than once"
            )));
        }
        seen.push(mode);
        match mode {
            "AlwaysAllow" => configured.push(Box::new(auth::AlwaysAllow)),
            "AlwaysDeny" => configured.push(Box::new(auth::AlwaysDeny)),
            "RBAC" => configured.push(Box::new(auth::RbacAuthorizer::new(Arc::clone(rbac)))),
            "Node" => configured.push(Box::new(auth::NodeAuthorizer::new(
                CacheNodeGraph::new(registry)?,
                auth::bootstrap::node_rules(&auth::bootstrap::Features::default()),
            ))),
            "ABAC" => {
                let path = policy_file.ok_or_else(|| {
                    Error::Config(
                        "authorization-mode ABAC's authorization policy file not passed".into(),
                    )
                })?;
                let contents = std::fs::read_to_string(path)
                    .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
                let abac =
                    auth::AbacAuthorizer::from_policy_file(&contents, &path.display().to_string())
                        .map_err(|e| Error::Config(e.to_string()))?;
                configured.push(Box::new(abac));
            }
            "Webhook" => configured.push(Box::new(
                crate::webhook::WebhookAuthorizer::new(webhook).map_err(Error::Config)?,
            )),
            other => {
                return Err(Error::Config(format!(
                    "--authorization-mode: unknown authorization mode {other:?} (supported: AlwaysAllow, AlwaysDeny, ABAC, Webhook, RBAC, Node)"
                )));
            }
        }
    }
    if configured.is_empty() {
        return Err(Error::Config(
            "--authorization-mode: at least one authorization mode must be passed".into(),
        ));
    }
    if webhook.config_file.is_some() && !seen.contains(&"Webhook") {
        return Err(Error::Config(
            "cannot specify --authorization-webhook-config-file without mode Webhook".into(),
        ));
    }
    if policy_file.is_some() && !seen.contains(&"ABAC") {
        return Err(Error::Config(
            "cannot specify --authorization-policy-file without mode ABAC".into(),
        ));
    }
    Ok(auth::Union::with_superuser(configured))
}

/// The attributes the authorizers decide on (upstream's `GetAuthorizerAttributes`).
pub fn attributes(info: &RequestInfo, user: &crate::authn::UserInfo) -> Attributes {
    Attributes {
        user: user.clone(),
        verb: info.verb.clone(),
        namespace: info.namespace.clone(),
        api_group: info.api_group.clone(),
        api_version: info.api_version.clone(),
        resource: info.resource.clone(),
        subresource: info.subresource.clone(),
        name: info.name.clone(),
        resource_request: info.is_resource_request,
        path: info.path.clone(),
        field_selector: info.field_selector.clone(),
    }
}

/// `responsewriters.ForbiddenStatusError`: upstream's message and details.
pub fn forbidden(a: &Attributes, reason: &str) -> ApiError {
    let sanitize = |s: String| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let msg = if !a.resource_request {
        format!("User {:?} cannot {} path {:?}", a.user.name, a.verb, a.path)
    } else {
        let mut resource = a.resource.clone();
        if !a.subresource.is_empty() {
            resource = format!("{resource}/{}", a.subresource);
        }
        if a.namespace.is_empty() {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} at the cluster scope",
                a.user.name, a.verb, resource, a.api_group
            )
        } else {
            format!(
                "User {:?} cannot {} resource {:?} in API group {:?} in the namespace {:?}",
                a.user.name, a.verb, resource, a.api_group, a.namespace
            )
        }
    };
    let mut msg = sanitize(msg);
    if !reason.is_empty() {
        msg = format!("{msg}: {reason}");
    }
    if a.resource.is_empty() && a.api_group.is_empty() {
        return ApiError::new(
            403,
            api::status::Reason::Forbidden,
            format!("forbidden: {msg}"),
        );
    }
    ApiError::forbidden(
        api::status::GroupResource {
            group: &a.api_group,
            resource: &a.resource,
        },
        &a.name,
        &msg,
    )
}

fn to_body<T: Serialize>(obj: &T) -> Option<Value> {
    serde_json::to_value(obj).ok()
}

fn merge_maps(
    expected: &Option<std::collections::BTreeMap<String, String>>,
    existing: &mut Option<std::collections::BTreeMap<String, String>>,
) -> bool {
    let Some(expected) = expected else {
        return false;
    };
    let target = existing.get_or_insert_with(Default::default);
    let mut changed = false;
    for (k, v) in expected {
        if !target.contains_key(k) {
            target.insert(k.clone(), v.clone());
            changed = true;
        }
    }
    changed
}

fn protected(meta: &ObjectMeta) -> bool {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(AUTOUPDATE))
        .is_some_and(|v| v == "false")
}

/// One bootstrap object's reconciliation against the stored one: `Some(new)` when it
/// must be written.
type Reconcile<'a> = dyn Fn(&Value) -> Option<Value> + Send + Sync + 'a;

async fn ensure(
    registry: &Registry,
    r: &Resource,
    ns: Option<&str>,
    name: &str,
    expected: Value,
    reconcile: &Reconcile<'_>,
    opts: &WriteOptions,
) {
    let key = r.info.key(ns, name);
    let existing = r.cacher.get(&key).and_then(|o| o.value());
    let Some(existing) = existing else {
        match registry.create(r, ns, expected, opts).await {
            Ok(_) => tracing::debug!(kind = %r.info.kind, name, "created bootstrap RBAC object"),
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(kind = %r.info.kind, name, error = %e, "cannot create bootstrap RBAC object")
            }
        }
        return;
    };
    if reconcile(&existing).is_none() {
        return;
    }
    let result = registry
        .update_with(r, ns, name, None, opts, |old| {
            let old = old.ok_or_else(|| ApiError::not_found(r.gr(), name))?;
            let new = reconcile(old).unwrap_or_else(|| old.clone());
            Ok((new, Vec::new(), Precondition::default()))
        })
        .await;
    match result {
        Ok(_) => tracing::info!(kind = %r.info.kind, name, "reconciled bootstrap RBAC object"),
        Err(e) => {
            tracing::warn!(kind = %r.info.kind, name, error = %e, "cannot reconcile bootstrap RBAC object")
        }
    }
}

/// Upstream's `computeReconciledRole` in union mode: add missing labels, annotations,
/// rules and aggregation selectors, never remove anything; protected objects
/// (`autoupdate: "false"`) are left alone.
fn reconcile_cluster_role(expected: &ClusterRole, existing: &Value) -> Option<Value> {
    let mut current: ClusterRole = serde_json::from_value(existing.clone()).ok()?;
    if protected(&current.metadata) {
        return None;
    }
    let mut changed = merge_maps(&expected.metadata.labels, &mut current.metadata.labels);
    changed |= merge_maps(
        &expected.metadata.annotations,
        &mut current.metadata.annotations,
    );
    let have = current.rules.clone().unwrap_or_default();
    let (_, missing) = auth::covers(&have, expected.rules.as_deref().unwrap_or(&[]));
    // Rules of aggregated roles belong to the aggregation controller.
    if !missing.is_empty() && expected.aggregation_rule.is_none() {
        current.rules.get_or_insert_with(Vec::new).extend(missing);
        changed = true;
    }
    if let Some(want) = &expected.aggregation_rule {
        let agg = current
            .aggregation_rule
            .get_or_insert_with(Default::default);
        let selectors = agg.cluster_role_selectors.get_or_insert_with(Vec::new);
        for s in want.cluster_role_selectors.as_deref().unwrap_or(&[]) {
            if !selectors.contains(s) {
                selectors.push(s.clone());
                changed = true;
            }
        }
    }
    if changed { to_body(&current) } else { None }
}

fn reconcile_role(expected: &Role, existing: &Value) -> Option<Value> {
    let mut current: Role = serde_json::from_value(existing.clone()).ok()?;
    if protected(&current.metadata) {
        return None;
    }
    let mut changed = merge_maps(&expected.metadata.labels, &mut current.metadata.labels);
    changed |= merge_maps(
        &expected.metadata.annotations,
        &mut current.metadata.annotations,
    );
    let have = current.rules.clone().unwrap_or_default();
    let (_, missing) = auth::covers(&have, expected.rules.as_deref().unwrap_or(&[]));
    if !missing.is_empty() {
        current.rules.get_or_insert_with(Vec::new).extend(missing);
        changed = true;
    }
    if changed { to_body(&current) } else { None }
}

/// Upstream's `computeReconciledRoleBinding` in union mode (a changed roleRef, which
/// upstream fixes by re-creating the binding, is only reported).
fn reconcile_subjects(
    expected_meta: &ObjectMeta,
    expected_subjects: &[api::k8s::api::rbac::v1::Subject],
    meta: &mut ObjectMeta,
    subjects: &mut Option<Vec<api::k8s::api::rbac::v1::Subject>>,
) -> bool {
    let mut changed = merge_maps(&expected_meta.labels, &mut meta.labels);
    changed |= merge_maps(&expected_meta.annotations, &mut meta.annotations);
    let have = subjects.get_or_insert_with(Vec::new);
    for s in expected_subjects {
        if !have.contains(s) {
            have.push(s.clone());
            changed = true;
        }
    }
    changed
}

fn reconcile_crb(expected: &ClusterRoleBinding, existing: &Value) -> Option<Value> {
    let mut current: ClusterRoleBinding = serde_json::from_value(existing.clone()).ok()?;
    if protected(&current.metadata) {
        return None;
    }
    if current.role_ref != expected.role_ref {
        tracing::warn!(name = %name_of(&current.metadata), "bootstrap ClusterRoleBinding has another roleRef; left alone");
        return None;
    }
    let changed = reconcile_subjects(
        &expected.metadata,
        expected.subjects.as_deref().unwrap_or(&[]),
        &mut current.metadata,
        &mut current.subjects,
    );
    if changed { to_body(&current) } else { None }
}

fn reconcile_rb(expected: &RoleBinding, existing: &Value) -> Option<Value> {
    let mut current: RoleBinding = serde_json::from_value(existing.clone()).ok()?;
    if protected(&current.metadata) {
        return None;
    }
    if current.role_ref != expected.role_ref {
        tracing::warn!(name = %name_of(&current.metadata), "bootstrap RoleBinding has another roleRef; left alone");
        return None;
    }
    let changed = reconcile_subjects(
        &expected.metadata,
        expected.subjects.as_deref().unwrap_or(&[]),
        &mut current.metadata,
        &mut current.subjects,
    );
    if changed { to_body(&current) } else { None }
}

/// Upstream's `ensure-rbac` post-start hook: creates the missing bootstrap ClusterRoles,
/// ClusterRoleBindings, Roles and RoleBindings and reconciles the existing ones.
pub async fn ensure_bootstrap_policy(registry: &Registry, opts: &WriteOptions) {
    let lookup = |plural: &str| registry.lookup(RBAC_GROUP, "v1", plural);
    let (Some(crs), Some(crbs), Some(roles), Some(rbs)) = (
        lookup("clusterroles"),
        lookup("clusterrolebindings"),
        lookup("roles"),
        lookup("rolebindings"),
    ) else {
        tracing::warn!("RBAC resources are not served: no bootstrap policy");
        return;
    };
    for r in [&crs, &crbs, &roles, &rbs] {
        if let Err(e) = r.cacher.sync(Duration::from_secs(10)).await {
            tracing::warn!(error = %e, "RBAC watch cache not in sync; bootstrap policy may be incomplete");
        }
    }
    for want in auth::bootstrap::cluster_roles() {
        let Some(body) = to_body(&want) else { continue };
        let name = name_of(&want.metadata);
        let f = |v: &Value| reconcile_cluster_role(&want, v);
        ensure(registry, &crs, None, &name, body, &f, opts).await;
    }
    for want in auth::bootstrap::cluster_role_bindings() {
        let Some(body) = to_body(&want) else { continue };
        let name = name_of(&want.metadata);
        let f = |v: &Value| reconcile_crb(&want, v);
        ensure(registry, &crbs, None, &name, body, &f, opts).await;
    }
    for want in auth::bootstrap::roles() {
        let Some(body) = to_body(&want) else { continue };
        let (ns, name) = (namespace_of(&want.metadata), name_of(&want.metadata));
        let f = |v: &Value| reconcile_role(&want, v);
        ensure(registry, &roles, Some(&ns), &name, body, &f, opts).await;
    }
    for want in auth::bootstrap::role_bindings() {
        let Some(body) = to_body(&want) else { continue };
        let (ns, name) = (namespace_of(&want.metadata), name_of(&want.metadata));
        let f = |v: &Value| reconcile_rb(&want, v);
        ensure(registry, &rbs, Some(&ns), &name, body, &f, opts).await;
    }
    tracing::info!("bootstrap RBAC policy ensured");
}

/// Upstream's `clusterroleaggregation` controller: whenever ClusterRoles change, every
/// ClusterRole with an `aggregationRule` gets the rules of the ClusterRoles it selects.
pub async fn run_aggregation(registry: Arc<Registry>, opts: WriteOptions) {
    let Some(crs) = registry.lookup(RBAC_GROUP, "v1", "clusterroles") else {
        return;
    };
    let mut changes = crs.cacher.changes();
    loop {
        changes.borrow_and_update();
        aggregate_once(&registry, &crs, &opts).await;
        if changes.changed().await.is_err() {
            return;
        }
        // Let a burst of changes settle.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn aggregate_once(registry: &Registry, crs: &Resource, opts: &WriteOptions) {
    let all: Vec<Arc<ClusterRole>> = parse_all(&crs.cacher);
    for role in all.iter().filter(|r| r.aggregation_rule.is_some()) {
        let rules = match auth::aggregate(role, all.iter().map(|r| r.as_ref())) {
            Ok(Some(rules)) => rules,
            Ok(None) => continue,
            Err(e) => {
                tracing::warn!(name = %name_of(&role.metadata), error = %e, "cannot aggregate ClusterRole");
                continue;
            }
        };
        if !auth::aggregation::needs_update(role, &rules) {
            continue;
        }
        let name = name_of(&role.metadata);
        let rules_value = match serde_json::to_value(&rules) {
            Ok(v) => v,
            Err(_) => continue,
        };
        let result = registry
            .update_with(crs, None, &name, None, opts, |old| {
                let mut new = old
                    .cloned()
                    .ok_or_else(|| ApiError::not_found(crs.gr(), &name))?;
                if let Some(obj) = new.as_object_mut() {
                    obj.insert("rules".into(), rules_value.clone());
                }
                Ok((new, Vec::new(), Precondition::default()))
            })
            .await;
        match result {
            Ok(_) => tracing::debug!(%name, "aggregated ClusterRole rules"),
            Err(e) => tracing::warn!(%name, error = %e, "cannot update aggregated ClusterRole"),
        }
    }
}
