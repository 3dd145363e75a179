//! The generic registry: every resource, built-in or custom, is served by the same code over
//! the store, with a small [`Strategy`] per resource for what differs.
//!
//! Objects are JSON values in the working form; the store holds them as JSON without
//! `metadata.resourceVersion` (the store revision is the resource version).

mod admit;
pub mod cache;
pub mod convert;
pub mod custom;
mod metacheck;
mod namespaces;
pub mod packed;
pub mod services;
mod sparse;
pub mod stored;
pub mod strategy;
pub mod virtuals;

use std::collections::HashMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;

use api::catalog::ResourceInfo;
use api::status::GroupResource;
use api::{ApiError, FieldError};
use bytes::Bytes;
use serde_json::{Map, Value, json};
use store::{Backend, Clock, StoreError};

pub use admit::Write as AdmissionWrite;
pub use cache::{CachedObject, Cacher, EventType, FieldsFn, Meta, Predicate, WatchMsg};

/// Storage prefixes served without a watch cache (upstream's `DefaultWatchCacheSizes`).
const UNCACHED: &[&str] = &["/registry/events"];
pub use strategy::Strategy;

use crate::authn::UserInfo;

/// How unknown and duplicate fields are treated (`fieldValidation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    Warn,
    Strict,
}

impl FieldValidation {
    pub fn parse(v: Option<&str>) -> Result<Self, ApiError> {
        match v {
            None | Some("") | Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some(other) => Err(ApiError::bad_request(format!(
                "fieldValidation parameter unsupported: {other}; valid values are Ignore, Warn, Strict"
            ))),
        }
    }

    /// What the decoder's unknown fields become: an error under `Strict` (upstream's
    /// "`<prefix>`strict decoding error: unknown field ..." with `prefix` such as
    /// `Pod in version "v1" cannot be handled as a Pod: `), warnings under `Warn`.
    pub fn unknown_fields(self, fields: &[String], prefix: &str) -> Result<Vec<String>, ApiError> {
        if fields.is_empty() || self == FieldValidation::Ignore {
            return Ok(Vec::new());
        }
        let list: Vec<String> = fields
            .iter()
            .map(|f| format!("unknown field \"{f}\""))
            .collect();
        if self == FieldValidation::Strict {
            return Err(ApiError::bad_request(format!(
                "{prefix}strict decoding error: {}",
                list.join(", ")
            )));
        }
        Ok(list)
    }
}

/// Who writes and how.
#[derive(Clone, Debug)]
pub struct WriteOptions {
    pub user: UserInfo,
    pub user_agent: String,
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    /// A server-side apply: managed fields are computed by the apply itself.
    pub apply: bool,
    /// `includeUninitialized=true`: the request may see and update objects whose
    /// initializers have not finished, and a create returns without waiting for them.
    pub include_uninitialized: bool,
    /// The request's warnings (admission plugins add to them).
    pub warnings: admission::Warnings,
    /// The request's audit annotations (admission plugins add to them).
    pub audit_annotations: admission::AuditAnnotations,
}

/// A served resource.
pub struct Resource {
    pub info: ResourceInfo,
    pub strategy: Arc<dyn Strategy>,
    pub cacher: Arc<Cacher>,
    /// Table columns of a custom resource (from its CRD's additionalPrinterColumns).
    pub columns: Option<printers::CustomColumns>,
    /// Cached objects as admission reads them: parsed and converted to this version once
    /// per revision.
    parsed: crate::memo::ParsedMemo<PARSED_PER_RESOURCE>,
}

/// How many parsed objects a resource keeps for admission's reads (the few each request
/// consults: its namespace, service account, the cluster's priority classes and the
/// like; a list of more is parsed without the memo).
const PARSED_PER_RESOURCE: usize = 64;

impl Resource {
    pub fn gr(&self) -> GroupResource<'_> {
        GroupResource {
            group: &self.info.group,
            resource: &self.info.plural,
        }
    }

    pub fn has_status(&self) -> bool {
        self.info.subresource("status").is_some()
    }

    /// A cached object of this resource parsed and converted to this version, shared:
    /// parsed once per revision of the object.
    pub fn parsed(&self, o: &CachedObject) -> Option<Arc<Value>> {
        self.parsed.get_or_parse(o.key(), o.rv, || self.parse(o))
    }

    /// The object at `key` as the watch cache has it, parsed (see [`Resource::parsed`]).
    pub fn cached_parsed(&self, key: &str) -> Option<Arc<Value>> {
        let o = self.cacher.get(key)?;
        self.parsed(&o)
    }

    /// A cached object of this resource parsed and converted to this version, unshared.
    pub fn parse(&self, o: &CachedObject) -> Option<Value> {
        o.value().map(|v| convert::from_storage(&self.info, v))
    }
}

/// The result of a write.
#[derive(Debug)]
pub struct Written {
    pub object: Value,
    pub warnings: Vec<String>,
    /// A create (201) rather than an update (200).
    pub created: bool,
    /// `object` as JSON, when the bytes written to the store are it (no conversion): a
    /// JSON response is these bytes with the new resourceVersion spliced in, not a second
    /// encoding of the object.
    pub json: Option<Bytes>,
}

impl Written {
    /// A write's result without its JSON.
    pub fn of(object: Value, warnings: Vec<String>, created: bool) -> Written {
        Written {
            object,
            warnings,
            created,
            json: None,
        }
    }
}

/// The JSON of an object of `r` just written as `stored` at `rv`, when that is the
/// served form (see [`Written::json`]).
fn served_json(r: &Resource, stored: &[u8], rv: store::Revision) -> Option<Bytes> {
    (!convert::needs_conversion(&r.info)).then(|| stored::with_resource_version(stored, rv))
}

/// The served resources, in order, with indexes by group, version and plural or kind
/// (every request looks its resource up, and admission plugins several more).
pub struct Served {
    list: Vec<Arc<Resource>>,
    /// group → version → plural → position in `list` (the first one wins).
    plurals: Index,
    /// group → version → kind → position in `list`.
    kinds: Index,
    /// group → plural → position of its first served version.
    first_version: HashMap<String, HashMap<String, usize>>,
}

type Index = HashMap<String, HashMap<String, HashMap<String, usize>>>;

impl Served {
    fn new(list: Vec<Arc<Resource>>) -> Served {
        let mut plurals = Index::new();
        let mut kinds = Index::new();
        let mut first_version: HashMap<String, HashMap<String, usize>> = HashMap::new();
        for (i, r) in list.iter().enumerate() {
            let info = &r.info;
            for (index, name) in [(&mut plurals, &info.plural), (&mut kinds, &info.kind)] {
                index
                    .entry(info.group.clone())
                    .or_default()
                    .entry(info.version.clone())
                    .or_default()
                    .entry(name.clone())
                    .or_insert(i);
            }
            first_version
                .entry(info.group.clone())
                .or_default()
                .entry(info.plural.clone())
                .or_insert(i);
        }
        Served {
            list,
            plurals,
            kinds,
            first_version,
        }
    }

    fn at(&self, i: Option<&usize>) -> Option<&Arc<Resource>> {
        i.and_then(|&i| self.list.get(i))
    }

    /// The resource `group/version plural`.
    pub fn by_plural(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.at(self.plurals.get(group)?.get(version)?.get(plural))
    }

    /// The resource serving `group/version kind`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<&Arc<Resource>> {
        self.at(self.kinds.get(group)?.get(version)?.get(kind))
    }

    /// The resource `group/plural` in its first served version.
    pub fn first_version(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.at(self.first_version.get(group)?.get(plural))
    }
}

impl std::ops::Deref for Served {
    type Target = [Arc<Resource>];

    fn deref(&self) -> &[Arc<Resource>] {
        &self.list
    }
}

/// Every served resource.
pub struct Registry {
    pub store: Arc<dyn Backend>,
    pub clock: Arc<dyn Clock>,
    resources: RwLock<Arc<Served>>,
    cachers: std::sync::Mutex<HashMap<String, Arc<Cacher>>>,
    event_ttl: Duration,
    pub service_range: services::Cidr,
    /// Bumped whenever the set of served resources changes (CRDs).
    generation: std::sync::atomic::AtomicU64,
    /// The schemas of the custom resources served now.
    custom_schemas: RwLock<Vec<api::schema::CustomResourceVersion>>,
    /// The address and port other hosts and pods reach this API server at.
    pub advertise: String,
    pub advertise_port: u16,
    /// The admission chain, installed once at start-up.
    admission: std::sync::OnceLock<Arc<admission::Chain>>,
    /// The managedFields of recent creates (see `fieldmgr::track_create`).
    pub(crate) created_fields: crate::fieldmgr::CreateMemo,
}

/// The strategy's decoding of `obj`, keeping `metadata.initializers` (which the typed
/// `ObjectMeta` no longer has) as it was.
pub fn decode_keeping_initializers(
    r: &Resource,
    obj: &Value,
) -> Result<api::kinds::Decoded, ApiError> {
    let initializers = obj["metadata"].get("initializers").cloned();
    let Some(initializers) = initializers else {
        return r.strategy.decode(&r.info, obj);
    };
    let mut stripped = obj.clone();
    if let Some(m) = stripped["metadata"].as_object_mut() {
        m.remove("initializers");
    }
    let mut decoded = r.strategy.decode(&r.info, &stripped)?;
    if !initializers.is_null()
        && let Some(m) = decoded.object["metadata"].as_object_mut()
    {
        m.insert("initializers".into(), initializers);
    }
    Ok(decoded)
}

/// [`decode_keeping_initializers`] of `patched`, a patch applied to the stored `old`, which
/// decodes only the top-level fields the patch changed: the others are `old`'s, decoded
/// when it was written. Decoding a built-in kind is per field (a field's typed form does
/// not depend on its siblings), so a status patch decodes the status, not the whole pod.
/// Anything else (a top-level field removed, a custom resource, a field that fails) is
/// decoded whole, so errors and unknown-field paths read exactly as a full decode's.
pub fn decode_patched(
    r: &Resource,
    old: &Value,
    mut patched: Value,
) -> Result<api::kinds::Decoded, ApiError> {
    let changed = changed_fields(r, old, &patched);
    let Some((changed, obj)) = changed.zip(patched.as_object_mut()) else {
        return decode_keeping_initializers(r, &patched);
    };
    // The changed fields move out of the object and back, decoded or as they were.
    let partial: Map<String, Value> = changed
        .iter()
        .filter_map(|k| Some((k.clone(), obj.remove(k)?)))
        .collect();
    let mut partial = Value::Object(partial);
    match decode_keeping_initializers(r, &partial) {
        Ok(api::kinds::Decoded {
            object: Value::Object(mut typed),
            unknown_fields,
        }) => {
            for k in changed {
                if let Some(v) = typed.remove(&k) {
                    obj.insert(k, v);
                }
            }
            Ok(api::kinds::Decoded {
                object: patched,
                unknown_fields,
            })
        }
        _ => {
            if let Some(p) = partial.as_object_mut() {
                obj.append(p);
            }
            decode_keeping_initializers(r, &patched)
        }
    }
}

/// The top-level fields of `patched` to decode: those that differ from `old`'s, and
/// `apiVersion` and `kind` (which the typed form checks, and writes even when absent).
/// `None` when the whole object must be decoded: not a built-in kind, or a field of `old`
/// removed (which may be one the type requires).
fn changed_fields(r: &Resource, old: &Value, patched: &Value) -> Option<Vec<String>> {
    if !api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind) {
        return None;
    }
    let (old, new) = (old.as_object()?, patched.as_object()?);
    if old.keys().any(|k| !new.contains_key(k)) {
        return None;
    }
    let typed_writes = ["apiVersion", "kind"];
    let differ = new
        .iter()
        .filter(|(k, v)| !typed_writes.contains(&k.as_str()) && old.get(*k) != Some(*v))
        .map(|(k, _)| k.clone());
    Some(
        typed_writes
            .map(String::from)
            .into_iter()
            .chain(differ)
            .collect(),
    )
}

/// An API error for a store error about object `name` of `r`.
pub fn store_error(r: &Resource, name: &str, e: StoreError) -> ApiError {
    match e {
        StoreError::NotFound { .. } => ApiError::not_found(r.gr(), name),
        StoreError::AlreadyExists { .. } => ApiError::already_exists(r.gr(), name),
        StoreError::Conflict { .. } => ApiError::conflict(r.gr(), name, ApiError::MODIFIED),
        StoreError::Compacted {
            requested,
            compacted,
            ..
        } => ApiError::gone(format!(
            "too old resource version: {requested} ({compacted})"
        )),
        StoreError::FutureRevision { requested, current } => {
            let mut e = ApiError::timeout(format!(
                "Too large resource version: {requested}, current: {current}"
            ));
            e.push_cause(api::status::Cause {
                reason: "ResourceVersionTooLarge".into(),
                message: "Too large resource version".into(),
                field: String::new(),
            });
            e
        }
        StoreError::TooLarge { .. } => ApiError::too_large(store::MAX_VALUE_BYTES),
        StoreError::InvalidKey { reason, .. } => {
            ApiError::bad_request(format!("invalid name: {reason}"))
        }
        StoreError::Unavailable(m) => ApiError::unavailable(m),
        StoreError::Internal(m) => ApiError::internal(m),
    }
}

/// A failed precondition of a write: a conflict.
fn precondition_failed(
    r: &Resource,
    name: &str,
    what: &str,
    wanted: &str,
    found: &str,
) -> ApiError {
    ApiError::conflict(
        r.gr(),
        name,
        &format!(
            "Precondition failed: {what} in precondition: {wanted}, {what} in object meta: {found}"
        ),
    )
}

/// Upstream's `metav1.Now()` rendering: RFC 3339, seconds, UTC.
pub fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_string())
}

/// `prefix` plus five random characters, as upstream's name generator.
pub fn generate_name(prefix: &str) -> String {
    api::meta::generated_name(prefix, uuid::Uuid::new_v4().as_bytes())
}

impl Registry {
    pub fn new(
        store: Arc<dyn Backend>,
        clock: Arc<dyn Clock>,
        event_ttl: Duration,
        service_range: services::Cidr,
        advertise: (String, u16),
    ) -> Arc<Registry> {
        let reg = Arc::new(Registry {
            store,
            clock,
            resources: RwLock::new(Arc::new(Served::new(Vec::new()))),
            cachers: std::sync::Mutex::new(HashMap::new()),
            event_ttl,
            service_range,
            generation: std::sync::atomic::AtomicU64::new(0),
            custom_schemas: RwLock::new(Vec::new()),
            advertise: advertise.0,
            advertise_port: advertise.1,
            admission: std::sync::OnceLock::new(),
            created_fields: crate::fieldmgr::CreateMemo::default(),
        });
        let builtin: Vec<Arc<Resource>> = api::catalog::builtin()
            .into_iter()
            .map(|info| {
                let strategy: Arc<dyn Strategy> =
                    Arc::from(strategy::builtin_for(&info, reg.event_ttl));
                reg.make_resource(info, strategy, None)
            })
            .collect();
        if let Ok(mut r) = reg.resources.write() {
            *r = Arc::new(Served::new(builtin));
        }
        reg
    }

    fn make_resource(
        &self,
        info: ResourceInfo,
        strategy: Arc<dyn Strategy>,
        columns: Option<printers::CustomColumns>,
    ) -> Arc<Resource> {
        let prefix = format!("{}/", info.storage_prefix);
        let cacher = {
            let mut cachers = match self.cachers.lock() {
                Ok(g) => g,
                Err(p) => p.into_inner(),
            };
            Arc::clone(cachers.entry(prefix.clone()).or_insert_with(|| {
                let s = Arc::clone(&strategy);
                let fields: FieldsFn = Arc::new(move |v: &Value| s.fields(v));
                let store = Arc::clone(&self.store);
                // As upstream's default watch cache sizes: Events (many, short-lived, read
                // rarely) are served from the store. Resources that store nothing
                // (bindings, reviews) have no prefix and no cache: a cache of "/" would be
                // a second copy of every stored object.
                if info.storage_prefix.is_empty()
                    || UNCACHED.contains(&info.storage_prefix.as_str())
                {
                    Cacher::uncached(store, prefix, fields)
                } else {
                    Cacher::start(store, prefix, fields)
                }
            }))
        };
        Arc::new(Resource {
            info,
            strategy,
            cacher,
            columns,
            parsed: Default::default(),
        })
    }

    /// Every served resource (a snapshot).
    pub fn all(&self) -> Arc<Served> {
        match self.resources.read() {
            Ok(r) => Arc::clone(&r),
            Err(p) => Arc::clone(&p.into_inner()),
        }
    }

    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        self.all().by_plural(group, version, plural).cloned()
    }

    /// The resource serving `group/version kind`.
    pub fn by_kind(&self, group: &str, version: &str, kind: &str) -> Option<Arc<Resource>> {
        self.all().by_kind(group, version, kind).cloned()
    }

    /// A counter that changes whenever the served resources change.
    pub fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// The schemas of the served custom resources (for OpenAPI).
    pub fn custom_schemas(&self) -> Vec<api::schema::CustomResourceVersion> {
        match self.custom_schemas.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    /// Replaces the custom resources (from CustomResourceDefinitions) and their schemas.
    pub fn set_custom(
        &self,
        custom: Vec<custom::CustomResource>,
        schemas: Vec<api::schema::CustomResourceVersion>,
    ) {
        let before: Vec<ResourceInfo> = self.all().iter().map(|r| r.info.clone()).collect();
        let mut list: Vec<Arc<Resource>> = self
            .all()
            .iter()
            .filter(|r| {
                api::kinds::is_builtin(&r.info.group, &r.info.version, &r.info.kind)
                    || r.info.plural == "bindings"
            })
            .cloned()
            .collect();
        for c in custom {
            // Keep the existing resource (and its cache) when nothing changed.
            let same = self.all().iter().find(|r| r.info == c.info).cloned();
            list.push(match same {
                Some(r) => r,
                None => self.make_resource(c.info, c.strategy, Some(c.columns)),
            });
        }
        let changed =
            before.len() != list.len() || before.iter().zip(list.iter()).any(|(a, b)| *a != b.info);
        if let Ok(mut r) = self.resources.write() {
            *r = Arc::new(Served::new(list));
        }
        if let Ok(mut s) = self.custom_schemas.write()
            && *s != schemas
        {
            *s = schemas;
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            return;
        }
        if changed {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    }

    pub(crate) fn now(&self) -> String {
        rfc3339(self.clock.now_ms())
    }

    // ----- reads -----

    /// The current object, straight from the store.
    pub async fn get(&self, r: &Resource, ns: Option<&str>, name: &str) -> Result<Value, ApiError> {
        self.read_current(r, &r.info.key(ns, name), name)
            .await?
            .map(|(_, obj)| obj)
            .ok_or_else(|| ApiError::not_found(r.gr(), name))
    }

    /// The stored object at `key` and its revision, checked against storage's
    /// `Preconditions` (see [`Registry::checked`]).
    async fn read_checked(
        &self,
        r: &Resource,
        key: &str,
        name: &str,
        uid: Option<&str>,
        resource_version: Option<&str>,
        hide_uninitialized: bool,
    ) -> Result<(i64, Value), ApiError> {
        let found = self.read_current(r, key, name).await?;
        Self::checked(r, name, found, uid, resource_version, hide_uninitialized)
    }

    /// An object `found` with its revision, checked against storage's `Preconditions` (a
    /// conflict when they fail); absent (or uninitialized, when `hide_uninitialized`) is a
    /// 404.
    fn checked(
        r: &Resource,
        name: &str,
        found: Option<(i64, Value)>,
        uid: Option<&str>,
        resource_version: Option<&str>,
        hide_uninitialized: bool,
    ) -> Result<(i64, Value), ApiError> {
        let (rev, obj) = found
            .filter(|(_, o)| !(hide_uninitialized && api::kinds::initializers::is_uninitialized(o)))
            .ok_or_else(|| ApiError::not_found(r.gr(), name))?;
        if let Some(uid) = uid {
            let found = api::meta::uid(&obj).unwrap_or_default();
            if found != uid {
                return Err(precondition_failed(r, name, "UID", uid, found));
            }
        }
        match resource_version {
            Some(rv) if rv.parse::<i64>().ok() != Some(rev) => Err(precondition_failed(
                r,
                name,
                "ResourceVersion",
                rv,
                &rev.to_string(),
            )),
            _ => Ok((rev, obj)),
        }
    }

    /// The object at `key` as the watch cache has it, in its served form, with its
    /// revision: a write's first guess at the current object (upstream's cacher hands
    /// `GuaranteedUpdate` the same), sparing a read of the store. The cache may lag the
    /// store, so `None` (absent, or not cached) says nothing, and whatever fails on a
    /// cached object is tried again on the stored one.
    fn read_cached(&self, r: &Resource, key: &str) -> Option<(i64, Value)> {
        // An uncached prefix's `get` sees nothing.
        let o = r.cacher.get(key)?;
        Some((o.rv, r.parse(&o)?))
    }

    /// The stored object at `key` in its served form, with its revision (`None`: absent).
    async fn read_current(
        &self,
        r: &Resource,
        key: &str,
        name: &str,
    ) -> Result<Option<(i64, Value)>, ApiError> {
        let Some(kv) = self
            .store
            .get(key)
            .await
            .map_err(|e| store_error(r, name, e))?
        else {
            return Ok(None);
        };
        let obj = stored::decode_stored(&kv.value, kv.mod_revision)
            .ok_or_else(|| ApiError::internal(format!("stored object {key} is not valid JSON")))?;
        Ok(Some((kv.mod_revision, convert::from_storage(&r.info, obj))))
    }

    // ----- writes -----

    fn check_type_meta(&self, r: &Resource, obj: &Value) -> Result<(), ApiError> {
        let (api_version, kind) = api::meta::type_meta(obj);
        let expected = r.info.api_version();
        match kind {
            None | Some("") => {
                return Err(ApiError::bad_request(format!(
                    "Object 'Kind' is missing in '{}'",
                    truncate(&obj.to_string(), 256)
                )));
            }
            Some(k) if k != r.info.kind => {
                return Err(ApiError::bad_request(format!(
                    "the kind in the body ({k}) does not match the expected kind ({})",
                    r.info.kind
                )));
            }
            _ => {}
        }
        match api_version {
            None | Some("") => Err(ApiError::bad_request(format!(
                "Object 'apiVersion' is missing in '{}'",
                truncate(&obj.to_string(), 256)
            ))),
            Some(v) if v != expected => Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({expected})"
            ))),
            _ => Ok(()),
        }
    }

    fn check_namespace(r: &Resource, ns: Option<&str>, obj: &mut Value) -> Result<(), ApiError> {
        match (r.info.namespaced, ns, api::meta::namespace(obj)) {
            (true, Some(url), Some(body)) if url != body => Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            )),
            (true, Some(url), None) => {
                api::meta::set_str(obj, "namespace", url);
                Ok(())
            }
            (false, _, Some(_)) => {
                api::meta::remove(obj, "namespace");
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Decoding with unknown-field handling per `fieldValidation`.
    fn decode(
        &self,
        r: &Resource,
        obj: &Value,
        fv: FieldValidation,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let decoded = decode_keeping_initializers(r, obj)?;
        let mut warnings = Vec::new();
        if !decoded.unknown_fields.is_empty() {
            warnings.extend(fv.unknown_fields(
                &decoded.unknown_fields,
                &format!(
                    "{} in version \"{}\" cannot be handled as a {}: ",
                    r.info.kind, r.info.version, r.info.kind
                ),
            )?);
        }
        Ok((decoded.object, warnings))
    }

    /// `name` is the object's name as admission saw it (before name generation).
    async fn check_namespace_exists(
        &self,
        r: &Resource,
        ns: Option<&str>,
        name: &str,
    ) -> Result<(), ApiError> {
        let Some(ns) = ns.filter(|_| r.info.namespaced) else {
            return Ok(());
        };
        let ns_res = GroupResource {
            group: "",
            resource: "namespaces",
        };
        // As upstream's NamespaceLifecycle: the namespace cache first, the store when the
        // cache does not have it (yet).
        let key = format!("/registry/namespaces/{ns}");
        let namespaces = self.all().first_version("", "namespaces").cloned();
        let cached = namespaces.as_ref().and_then(|r| r.cached_parsed(&key));
        let namespace = match cached {
            Some(v) => v,
            None => {
                let raw = self
                    .store
                    .get(&key)
                    .await
                    .map_err(ApiError::internal)?
                    .ok_or_else(|| ApiError::not_found(ns_res, ns))?
                    .value;
                Arc::new(serde_json::from_slice(&raw).unwrap_or_default())
            }
        };
        let terminating = api::meta::deletion_timestamp(&namespace).is_some()
            || namespace["status"]["phase"] == "Terminating";
        if terminating {
            return Err(namespaces::terminating_error(r.gr(), name, ns));
        }
        Ok(())
    }

    fn invalid(r: &Resource, name: &str, errs: &[FieldError]) -> ApiError {
        ApiError::invalid(&r.info.group, &r.info.kind, name, errs)
    }

    /// POST: creates an object.
    pub async fn create(
        &self,
        r: &Resource,
        ns: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        self.check_type_meta(r, &body)?;
        let (mut obj, mut warnings) = self.decode(r, &body, opts.field_validation)?;
        Self::check_namespace(r, ns, &mut obj)?;
        r.strategy.default(&r.info, &mut obj);
        // Upstream's create handler: the managed fields are those of the request as decoded
        // and defaulted, before mutating admission and before the name, uid and status are
        // set (what admission adds, a token volume say, is nobody's).
        crate::fieldmgr::track_create(r, &mut obj, opts, self);
        let managed_before_admission = obj
            .get("metadata")
            .and_then(|m| m.get("managedFields"))
            .cloned();
        let namespace = api::meta::namespace(&obj).unwrap_or_default().to_string();
        let requested_name = api::meta::name(&obj).unwrap_or_default().to_string();
        let mut obj = self
            .admit(
                r,
                admit::Write {
                    operation: admission::Operation::Create,
                    subresource: None,
                    namespace: &namespace,
                    name: &requested_name,
                    object: Some(obj),
                    old_object: None,
                },
                opts,
            )
            .await?
            .ok_or_else(|| ApiError::internal("admission removed the object"))?;
        crate::fieldmgr::keep_valid_after_admission(
            &mut obj,
            managed_before_admission,
            &mut warnings,
        );

        // The name in errors before name generation (admission's `extractResourceName`).
        let admission_name = api::meta::name(&obj)
            .or_else(|| api::meta::generate_name(&obj))
            .filter(|n| !n.is_empty())
            .unwrap_or("Unknown")
            .to_string();
        if api::meta::name(&obj).is_none()
            && let Some(prefix) = api::meta::generate_name(&obj).map(str::to_string)
        {
            api::meta::set_str(&mut obj, "name", generate_name(&prefix));
        }
        {
            let m = api::meta::metadata_mut(&mut obj);
            for f in [
                "resourceVersion",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "selfLink",
            ] {
                m.remove(f);
            }
            m.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
            m.insert("creationTimestamp".into(), json!(self.now()));
        }
        r.strategy.prepare_for_create(&r.info, &mut obj);

        let name = api::meta::name(&obj).unwrap_or_default().to_string();
        let mut errs = metacheck::object_meta(r, &obj);
        errs.extend(r.strategy.validate(&r.info, &obj));
        if !errs.is_empty() {
            return Err(Self::invalid(r, &name, &errs));
        }
        self.check_namespace_exists(r, api::meta::namespace(&obj), &admission_name)
            .await?;
        let namespace = api::meta::namespace(&obj).unwrap_or_default().to_string();
        let (admitted, _) = self
            .validate_admission_returning(
                r,
                admit::Write {
                    operation: admission::Operation::Create,
                    subresource: None,
                    namespace: &namespace,
                    name: &name,
                    object: Some(obj),
                    old_object: None,
                },
                opts,
            )
            .await?;
        let mut obj = admitted.ok_or_else(|| ApiError::internal("admission removed the object"))?;

        if opts.dry_run {
            return Ok(Written::of(obj, warnings, true));
        }
        let key = r.info.key(api::meta::namespace(&obj), &name);
        let claimed = if is_service(r) {
            services::allocate(&*self.store, &self.service_range, &mut obj).await?
        } else {
            Vec::new()
        };
        let bytes = Bytes::from(stored::encode(&r.info, &mut obj));
        let ttl = r.strategy.ttl();
        let kv = match self.store.create(&key, bytes.clone(), ttl).await {
            Ok(kv) => kv,
            Err(e) => {
                if !claimed.is_empty() {
                    services::release(&*self.store, &obj).await;
                }
                return Err(store_error(r, &name, e));
            }
        };
        api::meta::set_str(&mut obj, "resourceVersion", kv.mod_revision.to_string());
        Ok(Written {
            json: served_json(r, &bytes, kv.mod_revision),
            object: obj,
            warnings,
            created: true,
        })
    }

    /// Finishes an update computed by `mutate` from the current object: validation,
    /// generation, managed fields, compare-and-swap (retried when the client gave no
    /// resourceVersion), and the final removal of objects whose last finalizer is gone.
    ///
    /// `mutate` gets the current object (`None` when it does not exist) and returns the new
    /// one plus warnings; it may be called again after a conflict.
    pub async fn update_with<F>(
        &self,
        r: &Resource,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        opts: &WriteOptions,
        mut mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(Option<&Value>) -> Result<(Value, Vec<String>, Precondition), ApiError>,
    {
        let key = r.info.key(ns, name);
        for attempt in 0..16 {
            // The first attempt starts from the watch cache's copy (a dry run from the
            // store's); anything that fails on it (a conflict, a refused patch, an
            // admission denial, an object that looks absent or unchanged) is tried again on
            // the stored object, whose verdict stands.
            let cached = if attempt == 0 && !opts.dry_run {
                self.read_cached(r, &key)
            } else {
                None
            };
            let fresh = cached.is_none();
            let found = match cached {
                Some(c) => Some(c),
                None => self.read_current(r, &key, name).await?,
            };
            let (current, old) = found.unzip();
            if let Some(o) = &old
                && !opts.include_uninitialized
                && api::kinds::initializers::is_uninitialized(o)
            {
                if !fresh {
                    continue;
                }
                return Err(ApiError::not_found(r.gr(), name));
            }
            let (new, warnings, precondition) = match mutate(old.as_ref()) {
                Ok(m) => m,
                Err(_) if !fresh => continue,
                Err(e) => return Err(e),
            };
            let outcome = match (old, &current) {
                (None, _) => {
                    if !r.strategy.allow_create_on_update() && !precondition.create_allowed {
                        return Err(ApiError::not_found(r.gr(), name));
                    }
                    if subresource.is_some() {
                        return Err(ApiError::not_found(r.gr(), name));
                    }
                    let mut w = self.create(r, ns, new, opts).await?;
                    w.warnings.splice(0..0, warnings);
                    return Ok(w);
                }
                (Some(old), Some(rev)) => {
                    let admitted = self
                        .admit_returning(
                            r,
                            admit::Write {
                                operation: admission::Operation::Update,
                                subresource,
                                namespace: ns.unwrap_or_default(),
                                name,
                                object: Some(new),
                                old_object: Some(old),
                            },
                            opts,
                        )
                        .await;
                    let (admitted, kept) = match admitted {
                        Ok(a) => a,
                        Err(_) if !fresh => continue,
                        Err(e) => return Err(e),
                    };
                    let (Some(new), Some(old)) = (admitted, kept) else {
                        return Err(ApiError::internal("admission removed the object"));
                    };
                    self.finish_update(
                        r,
                        name,
                        subresource,
                        opts,
                        old,
                        new,
                        *rev,
                        &precondition,
                        fresh,
                    )
                    .await
                }
                (Some(_), None) => return Err(ApiError::internal("inconsistent read")),
            };
            match outcome {
                Err(_) if !fresh => continue,
                Err(Retry::Conflict) if precondition.resource_version.is_none() => continue,
                Err(Retry::Conflict) => {
                    return Err(ApiError::conflict(r.gr(), name, ApiError::MODIFIED));
                }
                Err(Retry::Fail(e)) => return Err(e),
                Ok(mut w) => {
                    w.warnings.splice(0..0, warnings);
                    return Ok(w);
                }
            }
        }
        Err(ApiError::conflict(r.gr(), name, ApiError::MODIFIED))
    }

    /// A write straight through storage, as upstream's `Storage.GuaranteedUpdate`: `mutate`
    /// changes the current object in place, which is written back with compare-and-swap and
    /// read again after a conflict (unless the precondition names a resourceVersion). No
    /// admission, validation, defaulting or field manager: the caller (`pods/binding`) ran
    /// its own on the request's object. Preconditions fail with a conflict; the object
    /// missing (or uninitialized) is a 404.
    pub async fn guaranteed_update<F>(
        &self,
        r: &Resource,
        ns: Option<&str>,
        name: &str,
        precondition: &Precondition,
        opts: &WriteOptions,
        mut mutate: F,
    ) -> Result<Written, ApiError>
    where
        F: FnMut(&mut Value) -> Result<(), ApiError>,
    {
        let key = r.info.key(ns, name);
        let checked = |found| {
            Self::checked(
                r,
                name,
                found,
                precondition.uid.as_deref(),
                precondition.resource_version.as_deref(),
                !opts.include_uninitialized,
            )
        };
        for attempt in 0..16 {
            // First from the watch cache's copy when it meets the preconditions; whatever
            // fails on it is tried again on the stored object (see `update_with`).
            let cached = if attempt == 0 && !opts.dry_run {
                checked(self.read_cached(r, &key)).ok()
            } else {
                None
            };
            let fresh = cached.is_none();
            let (rev, mut obj) = match cached {
                Some(c) => c,
                None => checked(self.read_current(r, &key, name).await?)?,
            };
            match mutate(&mut obj) {
                Ok(()) => {}
                Err(_) if !fresh => continue,
                Err(e) => return Err(e),
            }
            if opts.dry_run {
                return Ok(Written::of(obj, Vec::new(), false));
            }
            let bytes = Bytes::from(stored::encode(&r.info, &mut obj));
            match self
                .store
                .update(&key, bytes.clone(), rev, r.strategy.ttl())
                .await
            {
                Ok(kv) => {
                    api::meta::set_str(&mut obj, "resourceVersion", kv.mod_revision.to_string());
                    return Ok(Written {
                        json: served_json(r, &bytes, kv.mod_revision),
                        object: obj,
                        warnings: Vec::new(),
                        created: false,
                    });
                }
                Err(StoreError::Conflict { .. } | StoreError::NotFound { .. }) if !fresh => {}
                Err(StoreError::Conflict { .. }) if precondition.resource_version.is_none() => {}
                Err(StoreError::Conflict { .. }) => {
                    return Err(ApiError::conflict(r.gr(), name, ApiError::MODIFIED));
                }
                Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(r.gr(), name)),
                Err(e) => return Err(store_error(r, name, e)),
            }
        }
        Err(ApiError::conflict(r.gr(), name, ApiError::MODIFIED))
    }

    #[allow(clippy::too_many_arguments)]
    async fn finish_update(
        &self,
        r: &Resource,
        name: &str,
        subresource: Option<&str>,
        opts: &WriteOptions,
        old: Value,
        mut new: Value,
        current_rev: i64,
        precondition: &Precondition,
        fresh: bool,
    ) -> Result<Written, Retry> {
        if let Some(rv) = &precondition.resource_version
            && rv.parse::<i64>().ok() != Some(current_rev)
        {
            return Err(Retry::Conflict);
        }
        if let Some(uid) = &precondition.uid
            && api::meta::uid(&old) != Some(uid.as_str())
        {
            return Err(Retry::Fail(precondition_failed(
                r,
                name,
                "UID",
                uid,
                api::meta::uid(&old).unwrap_or_default(),
            )));
        }
        // Fields the client cannot change.
        {
            let old_meta = api::meta::metadata(&old);
            let m = api::meta::metadata_mut(&mut new);
            for f in [
                "uid",
                "creationTimestamp",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "generation",
                "selfLink",
            ] {
                match old_meta.and_then(|o| o.get(f)) {
                    Some(v) => {
                        m.insert(f.to_string(), v.clone());
                    }
                    None => {
                        m.remove(f);
                    }
                }
            }
            m.insert("resourceVersion".into(), json!(current_rev.to_string()));
        }
        // The scale subresource writes the main object through its main strategy (as
        // upstream's ScaleREST does); only its managedFields are the subresource's.
        let main = matches!(subresource, None | Some("scale"));
        match subresource {
            Some("status") => {
                r.strategy
                    .prepare_for_status_update(&r.info, &mut new, &old);
                if is_csr(r) {
                    crate::csr::prepare_for_status_update(&mut new, &old, &self.now())
                        .map_err(|e| Retry::Fail(Self::invalid(r, name, &[e])))?;
                }
            }
            Some("approval") if is_csr(r) => {
                crate::csr::prepare_for_approval_update(&mut new, &old, &self.now());
            }
            Some("finalize") if namespaces::is_namespace(r) => {
                namespaces::prepare_for_finalize(&mut new, &old);
            }
            _ if main => r.strategy.prepare_for_update(&r.info, &mut new, &old),
            _ => {}
        }
        // Once deletion started, finalizers may only be removed, never added.
        if api::meta::deletion_timestamp(&old).is_some() {
            let old_f = api::meta::finalizers(&old);
            let added: Vec<&str> = api::meta::finalizers(&new)
                .into_iter()
                .filter(|f| !old_f.contains(f))
                .collect();
            if !added.is_empty() {
                return Err(Retry::Fail(Self::invalid(
                    r,
                    name,
                    &[FieldError::forbidden(
                        "metadata.finalizers",
                        format!(
                            "no new finalizers can be added if the object is being deleted, found new finalizers {added:?}"
                        ),
                    )],
                )));
            }
        }
        let mut errs = metacheck::object_meta(r, &new);
        errs.extend(metacheck::object_meta_update(r, &new, &old));
        if subresource == Some("finalize") && namespaces::is_namespace(r) {
            // `ValidateNamespaceFinalizeUpdate`: the finalizer names.
            errs.extend(r.strategy.validate(&r.info, &new));
        }
        if main {
            // Initializers may still shape an uninitialized object as a create would.
            if api::kinds::initializers::is_uninitialized(&old) {
                errs.extend(r.strategy.validate(&r.info, &new));
            } else {
                errs.extend(r.strategy.validate_update(&r.info, &new, &old));
            }
        }
        if !errs.is_empty() {
            return Err(Retry::Fail(Self::invalid(r, name, &errs)));
        }
        let namespace = api::meta::namespace(&new).unwrap_or_default().to_string();
        let (admitted, kept) = self
            .validate_admission_returning(
                r,
                admit::Write {
                    operation: admission::Operation::Update,
                    subresource,
                    namespace: &namespace,
                    name,
                    object: Some(new),
                    old_object: Some(old),
                },
                opts,
            )
            .await
            .map_err(Retry::Fail)?;
        let (Some(mut new), Some(old)) = (admitted, kept) else {
            return Err(Retry::Fail(ApiError::internal(
                "admission removed the object",
            )));
        };
        crate::fieldmgr::track_update(r, &old, &mut new, subresource, opts, self);

        if equal_but_versions(&new, &old) {
            if !fresh {
                // Unchanged from the cache's copy, which may be behind the store: only the
                // stored object can say the write is a no-op.
                return Err(Retry::Conflict);
            }
            // Nothing changed: no write, same resourceVersion (as upstream).
            return Ok(Written::of(old, Vec::new(), false));
        }
        if opts.dry_run {
            return Ok(Written::of(new, Vec::new(), false));
        }
        let key = r.info.key(api::meta::namespace(&new), name);
        // An initializer failed the object: it is stored with the result (so that watchers
        // and the waiting creator see why), then deleted.
        let mut current_rev = current_rev;
        if api::kinds::initializers::failure(&new).is_some() {
            let bytes = stored::encode(&r.info, &mut new);
            current_rev = match self
                .store
                .update(&key, Bytes::from(bytes), current_rev, r.strategy.ttl())
                .await
            {
                Ok(kv) => kv.mod_revision,
                Err(StoreError::Conflict { .. }) => return Err(Retry::Conflict),
                Err(e) => return Err(Retry::Fail(store_error(r, name, e))),
            };
        }
        // The last finalizer of an object being deleted is gone, or an initializer failed
        // it: delete it now. As upstream's `ShouldDeleteDuringUpdate`, not while the
        // stored object's grace period runs (a gracefully deleted pod's status writes keep
        // it until the kubelet's final delete).
        let grace_over = old["metadata"]["deletionGracePeriodSeconds"]
            .as_i64()
            .is_none_or(|g| g == 0);
        if api::kinds::initializers::failure(&new).is_some()
            || (api::meta::deletion_timestamp(&old).is_some()
                && grace_over
                && api::meta::finalizers(&new).is_empty()
                && namespaces::may_remove_on_update(r, &new))
        {
            return match self.store.delete(&key, Some(current_rev)).await {
                Ok(d) => {
                    if is_service(r) {
                        services::release(&*self.store, &new).await;
                    }
                    api::meta::set_str(&mut new, "resourceVersion", d.revision.to_string());
                    Ok(Written::of(new, Vec::new(), false))
                }
                Err(StoreError::Conflict { .. }) => Err(Retry::Conflict),
                Err(e) => Err(Retry::Fail(store_error(r, name, e))),
            };
        }
        let mut claimed = Vec::new();
        if is_service(r) && subresource.is_none() {
            services::allocate_node_ports(&*self.store, &mut new, &mut claimed)
                .await
                .map_err(Retry::Fail)?;
        }
        let bytes = Bytes::from(stored::encode(&r.info, &mut new));
        match self
            .store
            .update(&key, bytes.clone(), current_rev, r.strategy.ttl())
            .await
        {
            Ok(kv) => {
                if is_service(r) {
                    services::release_dropped(&*self.store, &old, &new).await;
                }
                api::meta::set_str(&mut new, "resourceVersion", kv.mod_revision.to_string());
                Ok(Written {
                    json: served_json(r, &bytes, kv.mod_revision),
                    object: new,
                    warnings: Vec::new(),
                    created: false,
                })
            }
            Err(e) => {
                if !claimed.is_empty() {
                    // Release the node ports claimed for this failed write only.
                    let keep = services::keys_of(&old);
                    for k in claimed.iter().filter(|k| !keep.contains(k)) {
                        let _ = self.store.delete(k, None).await;
                    }
                }
                match e {
                    StoreError::Conflict { .. } => Err(Retry::Conflict),
                    StoreError::NotFound { .. } => {
                        Err(Retry::Fail(ApiError::not_found(r.gr(), name)))
                    }
                    e => Err(Retry::Fail(store_error(r, name, e))),
                }
            }
        }
    }

    /// PUT of a whole object (main resource or status).
    pub async fn replace(
        &self,
        r: &Resource,
        ns: Option<&str>,
        name: &str,
        subresource: Option<&str>,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<Written, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        self.check_type_meta(r, &body)?;
        let (mut obj, warnings) = self.decode(r, &body, opts.field_validation)?;
        Self::check_namespace(r, ns, &mut obj)?;
        match api::meta::name(&obj) {
            Some(n) if n != name => {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({n}) does not match the name on the URL ({name})"
                )));
            }
            None => api::meta::set_str(&mut obj, "name", name),
            _ => {}
        }
        r.strategy.default(&r.info, &mut obj);
        let precondition = Precondition {
            resource_version: api::meta::resource_version(&obj).map(str::to_string),
            uid: None,
            create_allowed: false,
        };
        self.update_with(r, ns, name, subresource, opts, |_| {
            Ok((obj.clone(), warnings.clone(), precondition.clone()))
        })
        .await
    }

    /// DELETE of one object. Returns the object (as deleted, or marked for deletion) and
    /// whether it is gone already.
    pub async fn delete(
        &self,
        r: &Resource,
        ns: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
        wopts: &WriteOptions,
    ) -> Result<(Value, bool), ApiError> {
        let key = r.info.key(ns, name);
        let delete_write = |old_object: Option<Value>| admit::Write {
            operation: admission::Operation::Delete,
            subresource: None,
            namespace: ns.unwrap_or_default(),
            name,
            object: None,
            old_object,
        };
        self.admit(r, delete_write(None), wopts).await?;
        for _ in 0..16 {
            let (rev, mut obj) = self
                .read_checked(
                    r,
                    &key,
                    name,
                    opts.precondition_uid.as_deref(),
                    opts.precondition_rv.as_deref(),
                    false,
                )
                .await?;
            self.validate_admission(r, delete_write(Some(obj.clone())), wopts)
                .await?;
            // Finalizers the propagation policy asks for.
            let mut finalizers: Vec<String> = api::meta::finalizers(&obj)
                .into_iter()
                .map(str::to_string)
                .collect();
            match opts.propagation.as_deref() {
                Some("Foreground") => {
                    if !finalizers.iter().any(|f| f == "foregroundDeletion") {
                        finalizers.push("foregroundDeletion".into());
                    }
                    finalizers.retain(|f| f != "orphan");
                }
                Some("Orphan") => {
                    if !finalizers.iter().any(|f| f == "orphan") {
                        finalizers.push("orphan".into());
                    }
                    finalizers.retain(|f| f != "foregroundDeletion");
                }
                Some("Background") | None => {}
                Some(other) => {
                    return Err(Self::invalid(
                        r,
                        name,
                        &[FieldError::not_supported(
                            "propagationPolicy",
                            other,
                            &["Foreground", "Background", "Orphan"],
                        )],
                    ));
                }
            }
            if namespaces::is_namespace(r) {
                match namespaces::on_delete(&obj, opts.propagation.as_deref()) {
                    namespaces::OnDelete::Keep => return Ok((obj, false)),
                    namespaces::OnDelete::Generic => {}
                    namespaces::OnDelete::Terminate(finalizers) => {
                        namespaces::mark_terminating(&mut obj, &self.now(), finalizers);
                        if wopts.dry_run {
                            return Ok((obj, false));
                        }
                        let bytes = stored::encode(&r.info, &mut obj);
                        match self
                            .store
                            .update(&key, Bytes::from(bytes), rev, r.strategy.ttl())
                            .await
                        {
                            Ok(kv) => {
                                api::meta::set_str(
                                    &mut obj,
                                    "resourceVersion",
                                    kv.mod_revision.to_string(),
                                );
                                return Ok((obj, false));
                            }
                            Err(StoreError::Conflict { .. }) => continue,
                            Err(StoreError::NotFound { .. }) => {
                                return Err(ApiError::not_found(r.gr(), name));
                            }
                            Err(e) => return Err(store_error(r, name, e)),
                        }
                    }
                }
            }
            let grace = self.grace_period(r, &obj, opts.grace_period_seconds);
            let graceful = grace.is_some_and(|g| g > 0);
            if finalizers.is_empty() && !graceful {
                if wopts.dry_run {
                    return Ok((obj, true));
                }
                match self.store.delete(&key, Some(rev)).await {
                    Ok(d) => {
                        if is_service(r) {
                            services::release(&*self.store, &obj).await;
                        }
                        api::meta::set_str(&mut obj, "resourceVersion", d.revision.to_string());
                        return Ok((obj, true));
                    }
                    Err(StoreError::Conflict { .. }) => continue,
                    Err(StoreError::NotFound { .. }) => {
                        return Err(ApiError::not_found(r.gr(), name));
                    }
                    Err(e) => return Err(store_error(r, name, e)),
                }
            }
            // Mark for deletion: finalizers run (or the kubelet finishes the pod) first.
            let already = api::meta::deletion_timestamp(&obj).is_some();
            {
                let now_ms = self.clock.now_ms();
                let m = api::meta::metadata_mut(&mut obj);
                if !already {
                    let at = now_ms + grace.unwrap_or(0) * 1000;
                    m.insert("deletionTimestamp".into(), json!(rfc3339(at)));
                }
                let current_grace = m.get("deletionGracePeriodSeconds").and_then(Value::as_i64);
                let g = match (current_grace, grace) {
                    (Some(c), Some(n)) => c.min(n),
                    (Some(c), None) => c,
                    (None, n) => n.unwrap_or(0),
                };
                m.insert("deletionGracePeriodSeconds".into(), json!(g));
                m.insert("finalizers".into(), json!(finalizers));
                if finalizers.is_empty() {
                    m.remove("finalizers");
                }
            }
            if wopts.dry_run {
                return Ok((obj, false));
            }
            let bytes = stored::encode(&r.info, &mut obj);
            match self
                .store
                .update(&key, Bytes::from(bytes), rev, r.strategy.ttl())
                .await
            {
                Ok(kv) => {
                    api::meta::set_str(&mut obj, "resourceVersion", kv.mod_revision.to_string());
                    return Ok((obj, false));
                }
                Err(StoreError::Conflict { .. }) => continue,
                Err(StoreError::NotFound { .. }) => return Err(ApiError::not_found(r.gr(), name)),
                Err(e) => return Err(store_error(r, name, e)),
            }
        }
        Err(ApiError::conflict(r.gr(), name, ApiError::MODIFIED))
    }

    /// Pods bound to a node are deleted gracefully (the kubelet finishes them); everything
    /// else immediately unless a grace period is asked for.
    fn grace_period(&self, r: &Resource, obj: &Value, requested: Option<i64>) -> Option<i64> {
        if r.info.group.is_empty() && r.info.plural == "pods" {
            let bound = obj["spec"]["nodeName"]
                .as_str()
                .is_some_and(|n| !n.is_empty());
            let terminal = matches!(
                obj["status"]["phase"].as_str(),
                Some("Succeeded" | "Failed")
            );
            if !bound || terminal {
                return Some(0);
            }
            let default = obj["spec"]["terminationGracePeriodSeconds"]
                .as_i64()
                .unwrap_or(30);
            return Some(requested.unwrap_or(default).max(0));
        }
        // Only pods are deleted gracefully; every other object goes at once.
        let _ = requested;
        None
    }
}

/// Conditions a write must meet.
#[derive(Clone, Debug, Default)]
pub struct Precondition {
    /// The client's `metadata.resourceVersion`: the write fails with a conflict when stale.
    pub resource_version: Option<String>,
    pub uid: Option<String>,
    /// Server-side apply creates missing objects.
    pub create_allowed: bool,
}

/// DeleteOptions as far as the registry needs them.
#[derive(Clone, Debug, Default)]
pub struct DeleteOptions {
    pub grace_period_seconds: Option<i64>,
    pub propagation: Option<String>,
    pub precondition_uid: Option<String>,
    pub precondition_rv: Option<String>,
}

enum Retry {
    Conflict,
    Fail(ApiError),
}

fn is_csr(r: &Resource) -> bool {
    r.info.group == "certificates.k8s.io" && r.info.plural == "certificatesigningrequests"
}

fn is_service(r: &Resource) -> bool {
    r.info.group.is_empty() && r.info.plural == "services"
}

fn truncate(s: &str, n: usize) -> String {
    s.chars().take(n).collect()
}

/// Whether two objects are equal but for `metadata.resourceVersion` and the times of
/// their managedFields entries: "did anything change", compared in place.
fn equal_but_versions(a: &Value, b: &Value) -> bool {
    // The members of two maps, but `skip`, equal as `same` says.
    fn maps_equal(
        a: &Map<String, Value>,
        b: &Map<String, Value>,
        skip: Option<&str>,
        same: impl Fn(&str, &Value, &Value) -> bool,
    ) -> bool {
        let skipped = |k: &str| Some(k) == skip;
        let len =
            |m: &Map<String, Value>| m.len() - usize::from(skip.is_some_and(|k| m.contains_key(k)));
        len(a) == len(b)
            && a.iter()
                .filter(|(k, _)| !skipped(k))
                .all(|(k, v)| b.get(k).is_some_and(|w| same(k, v, w)))
    }
    // managedFields entries but their times.
    let entries_equal = |x: &Value, y: &Value| match (x.as_array(), y.as_array()) {
        (Some(x), Some(y)) => {
            x.len() == y.len()
                && x.iter()
                    .zip(y)
                    .all(|(e, f)| match (e.as_object(), f.as_object()) {
                        (Some(e), Some(f)) => maps_equal(e, f, Some("time"), |_, v, w| v == w),
                        _ => e == f,
                    })
        }
        _ => x == y,
    };
    let meta_equal = |x: &Value, y: &Value| match (x.as_object(), y.as_object()) {
        (Some(x), Some(y)) => maps_equal(x, y, Some("resourceVersion"), |k, v, w| {
            if k == "managedFields" {
                entries_equal(v, w)
            } else {
                v == w
            }
        }),
        _ => x == y,
    };
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => maps_equal(a, b, None, |k, v, w| {
            if k == "metadata" {
                meta_equal(v, w)
            } else {
                v == w
            }
        }),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A registry over `store`, on the system clock.
    fn registry_on(store: Arc<dyn Backend>) -> Arc<Registry> {
        Registry::new(
            store,
            Arc::new(store::SystemClock),
            std::time::Duration::from_secs(3600),
            services::Cidr::parse("10.43.0.0/16").unwrap(),
            ("127.0.0.1".into(), 6443),
        )
    }

    #[tokio::test]
    async fn only_stored_resources_have_a_cache_and_each_caches_its_own_prefix() {
        let store: Arc<dyn Backend> = Arc::new(store::memory::MemoryBackend::new());
        let reg = registry_on(store);
        let all = reg.all();
        let bindings = all
            .iter()
            .find(|r| r.info.plural == "bindings")
            .expect("bindings are served");
        assert!(bindings.info.storage_prefix.is_empty());
        // A cache of "/" would hold a second copy of everything stored.
        assert!(!bindings.cacher.is_cached());
        for r in all.iter().filter(|r| r.cacher.is_cached()) {
            assert!(!r.info.storage_prefix.is_empty(), "{}", r.info.plural);
        }
        let pods = reg.lookup("", "v1", "pods").unwrap();
        assert!(pods.cacher.is_cached());
    }

    /// Decoding only what a patch changed gives what decoding the whole patched object
    /// gives: the object, the unknown fields, and the errors.
    #[tokio::test]
    async fn a_patched_object_decodes_as_a_whole_one_would() {
        let reg = registry_on(Arc::new(store::memory::MemoryBackend::new()));
        let pods = reg.lookup("", "v1", "pods").unwrap();
        let stored = json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "namespace": "d", "resourceVersion": "7",
                         "labels": {"app": "web"}},
            "spec": {"containers": [{"name": "c", "image": "nginx",
                                     "resources": {"requests": {"cpu": "100m"}}}],
                     "nodeName": "n1"},
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled",
                       "status": "True", "lastProbeTime": null}]},
        });
        let old = decode_keeping_initializers(&pods, &stored).unwrap().object;
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = old.clone();
            f(&mut v);
            v
        };
        let cases = [
            with(&|_| {}),
            with(&|v| v["status"] = json!({"phase": "Running", "podIP": "10.42.0.5"})),
            with(&|v| v["status"]["bogus"] = json!(1)),
            with(&|v| v["status"]["hostIP"] = json!(5)),
            with(&|v| v["status"] = Value::Null),
            with(&|v| v["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80}])),
            with(&|v| v["spec"]["containers"] = json!("no")),
            with(&|v| v["spec"] = json!({"nodeName": "n2"})),
            with(&|v| v["metadata"]["labels"]["tier"] = json!("front")),
            with(&|v| v["metadata"]["initializers"] = json!({"pending": [{"name": "a.b.c"}]})),
            with(&|v| v["extra"] = json!({"x": 1})),
            with(&|v| v["kind"] = json!("Node")),
            with(&|v| {
                v.as_object_mut().unwrap().remove("apiVersion");
            }),
            with(&|v| {
                v.as_object_mut().unwrap().remove("status");
            }),
        ];
        // A status patch decodes the status alone.
        assert_eq!(
            changed_fields(&pods, &old, &cases[1]),
            Some(vec!["apiVersion".into(), "kind".into(), "status".into()])
        );
        for patched in cases {
            let whole = decode_keeping_initializers(&pods, &patched);
            let partial = decode_patched(&pods, &old, patched.clone());
            assert_eq!(partial, whole, "{patched}");
        }
        // The object the case list starts from decodes to itself.
        assert_eq!(
            decode_patched(&pods, &old, old.clone()).unwrap().object,
            old
        );
    }

    #[tokio::test]
    async fn served_resources_are_found_as_a_scan_in_order_finds_them() {
        let reg = registry_on(Arc::new(store::memory::MemoryBackend::new()));
        let all = reg.all();
        let scan = |f: &dyn Fn(&ResourceInfo) -> bool| all.iter().find(|r| f(&r.info)).cloned();
        for r in all.iter() {
            let i = &r.info;
            let same = |a: Option<Arc<Resource>>, b: Option<Arc<Resource>>| {
                assert!(a.zip(b).is_some_and(|(a, b)| Arc::ptr_eq(&a, &b)), "{i:?}");
            };
            same(
                reg.lookup(&i.group, &i.version, &i.plural),
                scan(&|x| x.group == i.group && x.version == i.version && x.plural == i.plural),
            );
            same(
                reg.by_kind(&i.group, &i.version, &i.kind),
                scan(&|x| x.group == i.group && x.version == i.version && x.kind == i.kind),
            );
            same(
                all.first_version(&i.group, &i.plural).cloned(),
                scan(&|x| x.group == i.group && x.plural == i.plural),
            );
        }
        assert!(reg.lookup("apps", "v1", "pods").is_none());
        assert!(reg.by_kind("", "v2", "Pod").is_none());
        assert!(all.first_version("nope", "pods").is_none());
    }

    /// A write starts from the watch cache's copy, which may lag the store: what the store
    /// holds decides. (A current-thread runtime: the cache cannot catch up with a write
    /// made straight to the store until the test awaits something that waits.)
    #[tokio::test]
    async fn writes_from_a_lagging_cache_act_on_the_stored_object() {
        let store: Arc<dyn Backend> = Arc::new(store::memory::MemoryBackend::new());
        let reg = registry_on(Arc::clone(&store));
        let cms = reg.lookup("", "v1", "configmaps").unwrap();
        let o = Registry::system_options();
        let namespaces = reg.lookup("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}});
        reg.create(&namespaces, None, ns, &o).await.unwrap();
        let key = "/registry/configmaps/default/c";
        let created = reg
            .create(
                &cms,
                Some("default"),
                json!({"apiVersion": "v1", "kind": "ConfigMap",
                       "metadata": {"name": "c", "namespace": "default"}, "data": {"a": "1"}}),
                &o,
            )
            .await
            .unwrap()
            .object;
        let rv = |v: &Value| {
            api::meta::resource_version(v)
                .unwrap()
                .parse::<i64>()
                .unwrap()
        };
        let caught_up = |at: i64| {
            let cms = Arc::clone(&cms);
            async move {
                while cms.cacher.get(key).is_none_or(|c| c.rv < at) {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
            }
        };
        caught_up(rv(&created)).await;
        // Behind the cache's back: a = 2.
        let behind = |value: &str| {
            let mut v = created.clone();
            v["data"]["a"] = json!(value);
            Bytes::from(stored::encode_for_store(v))
        };
        let current = store.get(key).await.unwrap().unwrap().mod_revision;
        let two = store.update(key, behind("2"), current, None).await.unwrap();
        assert!(
            cms.cacher.get(key).unwrap().rv < two.mod_revision,
            "the cache lags"
        );

        // Setting a = 1 is a no-op on the cache's copy but not on the store's: written.
        let set = |value: &'static str| {
            move |old: Option<&Value>| {
                let mut v = old.cloned().unwrap_or_default();
                v["data"]["a"] = json!(value);
                Ok((v, Vec::new(), Precondition::default()))
            }
        };
        let w = reg
            .update_with(&cms, Some("default"), "c", None, &o, set("1"))
            .await
            .unwrap();
        assert_eq!(w.object["data"]["a"], "1");
        assert!(rv(&w.object) > two.mod_revision);
        let stored_now = store.get(key).await.unwrap().unwrap();
        assert_eq!(stored_now.mod_revision, rv(&w.object));

        // A precondition on the store's newest resourceVersion holds though the cache is
        // behind it.
        caught_up(rv(&w.object)).await;
        let three = store
            .update(key, behind("3"), rv(&w.object), None)
            .await
            .unwrap();
        let precondition = Precondition {
            resource_version: Some(three.mod_revision.to_string()),
            ..Default::default()
        };
        let mut seen = Vec::new();
        let w = reg
            .update_with(&cms, Some("default"), "c", None, &o, |old| {
                let mut v = old.cloned().unwrap_or_default();
                seen.push(v["data"]["a"].clone());
                v["data"]["a"] = json!("4");
                Ok((v, Vec::new(), precondition.clone()))
            })
            .await
            .unwrap();
        assert_eq!(w.object["data"]["a"], "4");
        assert_eq!(
            seen,
            [json!("1"), json!("3")],
            "the cache's copy, then the store's"
        );

        // Straight through storage: the mutation applies to the stored object.
        caught_up(rv(&w.object)).await;
        let five = store
            .update(key, behind("5"), rv(&w.object), None)
            .await
            .unwrap();
        assert!(cms.cacher.get(key).unwrap().rv < five.mod_revision);
        let w = reg
            .guaranteed_update(
                &cms,
                Some("default"),
                "c",
                &Precondition::default(),
                &o,
                |v| {
                    let a = v["data"]["a"].as_str().unwrap_or_default().to_string();
                    v["data"]["a"] = json!(format!("{a}+"));
                    Ok(())
                },
            )
            .await
            .unwrap();
        assert_eq!(w.object["data"]["a"], "5+");
        let written: Value =
            serde_json::from_slice(&store.get(key).await.unwrap().unwrap().value).unwrap();
        assert_eq!(written["data"]["a"], "5+");
        // The served JSON is the written object at its new resourceVersion.
        let json: Value = serde_json::from_slice(w.json.as_ref().unwrap()).unwrap();
        assert_eq!(json, w.object);
    }

    #[test]
    fn objects_equal_but_for_versions_and_managed_times() {
        let a = json!({"kind": "Pod", "metadata": {"name": "p", "resourceVersion": "5",
            "managedFields": [{"manager": "m", "time": "2026-01-01T00:00:00Z", "fieldsV1": {"f:a": {}}}]},
            "spec": {"nodeName": "n"}});
        let mut b = a.clone();
        b["metadata"]["resourceVersion"] = json!("6");
        b["metadata"]["managedFields"][0]["time"] = json!("2026-01-02T00:00:00Z");
        assert!(equal_but_versions(&a, &b));
        // One without a resourceVersion, one managedFields entry without a time.
        let mut c = b.clone();
        api::meta::metadata_mut(&mut c).remove("resourceVersion");
        if let Some(e) = c["metadata"]["managedFields"][0].as_object_mut() {
            e.remove("time");
        }
        assert!(equal_but_versions(&a, &c));
        assert!(equal_but_versions(&c, &a));
        for (path, v) in [
            ("/spec/nodeName", json!("m")),
            ("/metadata/name", json!("q")),
            ("/metadata/managedFields/0/manager", json!("x")),
            ("/kind", json!("Node")),
        ] {
            let mut d = a.clone();
            if let Some(slot) = d.pointer_mut(path) {
                *slot = v;
            }
            assert!(!equal_but_versions(&a, &d), "{path}");
        }
        let mut more = a.clone();
        more["status"] = json!({});
        assert!(!equal_but_versions(&a, &more));
        assert!(!equal_but_versions(&more, &a));
        let mut extra_entry = a.clone();
        if let Some(mf) = extra_entry["metadata"]["managedFields"].as_array_mut() {
            mf.push(json!({"manager": "other"}));
        }
        assert!(!equal_but_versions(&a, &extra_entry));
        assert!(equal_but_versions(&json!(1), &json!(1)));
        assert!(!equal_but_versions(&json!([1]), &json!([2])));
    }
}
