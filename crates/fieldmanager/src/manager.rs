//! The field manager: server-side apply and ownership tracking for other writes, as
//! upstream's default field manager chains them (version check, last-applied annotation
//! upgrade and sync, tracking from the first apply, capping of update entries, manager
//! identifiers, timestamps, stripping of metadata fields, structured merge).

use std::collections::BTreeMap;
use std::fmt;
use std::sync::LazyLock;
use std::time::SystemTime;

use serde_json::{Map, Value};

use crate::conflict::{Conflict, Conflicts};
use crate::error::Error;
use crate::managed::{
    EntryRef, Managed, ManagedFieldsEntry, ManagerId, VersionedSet, set_managed_fields,
    unix_seconds, without_managed_fields,
};
use crate::path::Path;
use crate::schema::ObjectSchema;
use crate::set::FieldSet;
use crate::typed::{Comparison, join_errors};
use crate::value;

/// How many update entries upstream keeps before merging the oldest into `ancient-changes`.
pub const DEFAULT_MAX_UPDATE_MANAGERS: usize = 10;
/// The annotation client-side apply keeps its last configuration in.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// Upstream's limit on the total size of an object's annotations.
pub const TOTAL_ANNOTATION_SIZE_LIMIT: usize = 256 * 1024;

/// The manager that owns what an object held before its first apply.
pub const BEFORE_FIRST_APPLY: &str = "before-first-apply";
/// The manager the oldest update entries are merged into.
pub const ANCIENT_CHANGES: &str = "ancient-changes";
const CURRENT_OPERATION: &str = "current-operation";
/// The manager name whose applies upgrade from, and keep in sync, client-side apply.
const KUBECTL: &str = "kubectl";

/// A group, version and kind.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct GroupVersionKind {
    pub group: String,
    pub version: String,
    pub kind: String,
}

impl GroupVersionKind {
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        kind: impl Into<String>,
    ) -> Self {
        GroupVersionKind {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
        }
    }

    /// `v1` or `apps/v1`.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// The kind an object says it is, read as upstream reads unstructured objects: an
    /// `apiVersion` with more than one `/` (or a non-string one) makes the whole kind empty.
    pub fn of_object(obj: &Value) -> GroupVersionKind {
        let text = |k: &str| obj.get(k).and_then(Value::as_str).unwrap_or("");
        let api_version = text("apiVersion");
        let kind = text("kind").to_string();
        if api_version.is_empty() || api_version == "/" {
            return GroupVersionKind::new("", "", kind);
        }
        match api_version.matches('/').count() {
            0 => GroupVersionKind::new("", api_version, kind),
            1 => {
                let (g, v) = api_version.split_once('/').unwrap_or(("", api_version));
                GroupVersionKind::new(g, v, kind)
            }
            _ => GroupVersionKind::default(),
        }
    }
}

impl fmt::Display for GroupVersionKind {
    /// As upstream prints a GroupVersionKind: `apps/v1, Kind=Deployment`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}, Kind={}", self.group, self.version, self.kind)
    }
}

/// The result of an apply.
#[derive(Clone, Debug, PartialEq)]
pub struct ApplyOutcome {
    /// The object to store, with its managedFields.
    pub object: Value,
    /// The object equals the live one, managedFields included: nothing to write (a re-apply
    /// of the same configuration by the same manager).
    pub no_op: bool,
}

/// Field management for one resource (or one of its subresources) at one version.
#[derive(Clone, Debug)]
pub struct FieldManager<'a> {
    schema: ObjectSchema<'a>,
    gvk: GroupVersionKind,
    subresource: String,
    reset_fields: FieldSet,
    max_update_managers: usize,
}

type Step = (Value, Managed);

impl<'a> FieldManager<'a> {
    /// A field manager for objects of `gvk` (the version requests are served in) described
    /// by `schema`.
    pub fn new(schema: ObjectSchema<'a>, gvk: GroupVersionKind) -> Self {
        FieldManager {
            schema,
            gvk,
            subresource: String::new(),
            reset_fields: FieldSet::new(),
            max_update_managers: DEFAULT_MAX_UPDATE_MANAGERS,
        }
    }

    /// Writes go through this subresource (e.g. `status`): entries record it, and the
    /// request's managedFields are ignored on updates.
    pub fn with_subresource(mut self, subresource: impl Into<String>) -> Self {
        self.subresource = subresource.into();
        self
    }

    /// Fields the registry strategy resets on writes through this (sub)resource (e.g.
    /// `status` for the main resource, `spec` and more for `status`): nobody gains or loses
    /// their ownership by writing them here.
    pub fn with_reset_fields(mut self, fields: FieldSet) -> Self {
        self.reset_fields = fields;
        self
    }

    /// Overrides how many update entries are kept (upstream: 10).
    pub fn with_max_update_managers(mut self, max: usize) -> Self {
        self.max_update_managers = max;
        self
    }

    fn api_version(&self) -> String {
        self.gvk.api_version()
    }

    /// A new empty object of the kind.
    fn new_object(&self) -> Value {
        self.schema.new_object(&self.api_version(), &self.gvk.kind)
    }

    // =========================================================================== apply

    /// Server-side apply of `applied` by `manager` onto `live` (`None` when the object does
    /// not exist yet). `force` takes over conflicting fields.
    ///
    /// The returned object still goes through the registry as any write does (defaulting,
    /// the strategy's resets, validation, name checks).
    pub fn apply(
        &self,
        live: Option<&Value>,
        applied: &Value,
        manager: &str,
        force: bool,
        now: SystemTime,
    ) -> Result<ApplyOutcome, Error> {
        let now = unix_seconds(now);
        let live_obj = match live {
            Some(l) => l.clone(),
            None => self.new_object(),
        };
        if !live_obj.is_object() {
            return Err(Error::Internal(
                "couldn't get accessor: object does not implement the Object interfaces"
                    .to_string(),
            ));
        }
        let managed = Managed::decode_object(&live_obj)
            .map_err(|e| Error::Internal(format!("failed to decode managed fields: {e}")))?;
        let live_obj = without_managed_fields(&live_obj);

        let applied_gvk = GroupVersionKind::of_object(applied);
        if applied_gvk != self.gvk {
            return Err(Error::BadRequest(format!(
                "invalid object type: {applied_gvk}"
            )));
        }

        let (mut obj, managed) =
            self.apply_upgrading_client_side(&live_obj, applied, managed, manager, force, now)?;
        if manager == KUBECTL && has_last_applied(&obj) {
            set_last_applied(&mut obj, &build_last_applied(applied));
        }
        set_managed_fields(&mut obj, managed.encode());
        let no_op = live.is_some_and(|l| *l == obj);
        Ok(ApplyOutcome { object: obj, no_op })
    }

    /// Upstream's last-applied manager: `kubectl`'s conflicts on fields whose values its
    /// client-side last-applied configuration still matches are not conflicts.
    fn apply_upgrading_client_side(
        &self,
        live: &Value,
        applied: &Value,
        managed: Managed,
        manager: &str,
        force: bool,
        now: i64,
    ) -> Result<Step, Error> {
        let first = self.apply_tracking_first(live, applied, managed.clone(), manager, force, now);
        if manager != KUBECTL {
            return first;
        }
        let conflicts = match first {
            Err(Error::Conflict(c)) => c,
            other => return other,
        };
        let Some(allowed) = self.allowed_conflicts_from_last_applied(live) else {
            return Err(Error::Conflict(conflicts));
        };
        let paths: Vec<Path> = conflicts.0.iter().map(|c| c.path.clone()).collect();
        let conflict_set = FieldSet::from_paths(&paths);
        if !conflict_set.difference(&allowed).is_empty() {
            let remaining = conflicts
                .0
                .into_iter()
                .filter(|c| !allowed.has(c.path.elements()))
                .collect();
            return Err(Error::Conflict(Conflicts(remaining)));
        }
        self.apply_tracking_first(live, applied, managed, manager, true, now)
    }

    /// The fields of the last-applied annotation whose values the live object still has.
    fn allowed_conflicts_from_last_applied(&self, live: &Value) -> Option<FieldSet> {
        let text = annotation(live, LAST_APPLIED_ANNOTATION).filter(|s| !s.is_empty())?;
        let last: Value = serde_json::from_str(text).ok()?;
        if !last.is_object() || GroupVersionKind::of_object(&last) != self.gvk {
            return None;
        }
        if !self.schema.validate(&last).is_empty() {
            return None;
        }
        let live_t = self.schema.typed_view(live);
        let set = self.schema.field_set(&last);
        let c = self.schema.compare(&last, &live_t);
        Some(
            set.difference(&c.modified)
                .difference(&c.added)
                .difference(&c.removed),
        )
    }

    /// Upstream's skip-non-applied manager: before the first apply to an object without
    /// managedFields, what it holds becomes `before-first-apply`'s.
    fn apply_tracking_first(
        &self,
        live: &Value,
        applied: &Value,
        managed: Managed,
        manager: &str,
        force: bool,
        now: i64,
    ) -> Result<Step, Error> {
        let (live, managed) = if managed.fields.is_empty() {
            let empty = self.new_object();
            let managed =
                self.update_capped(&empty, true, live, managed, BEFORE_FIRST_APPLY, now)?;
            (live.clone(), managed)
        } else {
            (live.clone(), managed)
        };
        let id = self.manager_id(manager, ManagerId::APPLY);
        let (obj, mut managed) = self.apply_stripped(&live, applied, managed, &id, force)?;
        let obj = match obj {
            Some(o) => {
                managed.times.insert(id, Some(now));
                o
            }
            None => live,
        };
        Ok((obj, managed))
    }

    fn apply_stripped(
        &self,
        live: &Value,
        applied: &Value,
        managed: Managed,
        id: &str,
        force: bool,
    ) -> Result<(Option<Value>, Managed), Error> {
        let (obj, mut managed) = self.apply_structured(live, applied, managed, id, force)?;
        strip_meta(&mut managed, id);
        Ok((obj, managed))
    }

    /// The structured merge: merge, prune what the manager stopped applying, move ownership.
    /// `None` for the object when it does not change.
    fn apply_structured(
        &self,
        live: &Value,
        applied: &Value,
        managed: Managed,
        id: &str,
        force: bool,
    ) -> Result<(Option<Value>, Managed), Error> {
        if has_managed_fields_list(applied) {
            return Err(Error::BadRequest(
                "metadata.managedFields must be nil".to_string(),
            ));
        }
        let errs = self.schema.validate(applied);
        if !errs.is_empty() {
            return Err(Error::Internal(format!(
                "failed to create typed patch object ({}): {}",
                gvknn(applied),
                join_errors(&errs)
            )));
        }
        let live_t = self.schema.typed_view(live);
        let version = self.api_version();
        let mut managers = self.reconcile_all(managed.fields);
        let merged = self.schema.merge(&live_t, applied);
        let last = managers.get(id).cloned();
        let set = self
            .schema
            .field_set(applied)
            .recursive_difference(&self.reset_fields);
        managers.insert(
            id.to_string(),
            VersionedSet {
                set,
                api_version: version.clone(),
                applied: true,
            },
        );
        let merged = self.prune(merged, &managers, last.as_ref());
        let c = self
            .schema
            .compare(&live_t, &merged)
            .excluding(&self.reset_fields);
        let managers = self
            .take_ownership(&c, managers, id, force)
            .map_err(Error::Conflict)?;
        let obj = (!value::equal(&live_t, &merged)).then_some(merged);
        Ok((
            obj,
            Managed {
                fields: managers,
                times: managed.times,
            },
        ))
    }

    /// Removes what the applier applied last time but not now, unless someone else owns it.
    fn prune(
        &self,
        merged: Value,
        managers: &BTreeMap<String, VersionedSet>,
        last: Option<&VersionedSet>,
    ) -> Value {
        let Some(last) = last.filter(|l| !l.set.is_empty()) else {
            return merged;
        };
        let s = &self.schema;
        let last_named = s.ensure_named_fields_are_members(&last.set);
        let pruned = s.remove_items(&merged, &last_named);

        // Add back what any manager (the applier's new configuration included) owns.
        let mut owned = FieldSet::new();
        for vs in managers.values() {
            owned.union_in_place(&vs.set);
        }
        let merged_set = s.ensure_named_fields_are_members(&s.field_set(&merged));
        let pruned_set = s.ensure_named_fields_are_members(&s.field_set(&pruned));
        let owned = s.ensure_named_fields_are_members(&owned);
        let pruned = s.remove_items(&merged, &merged_set.difference(&pruned_set.union(&owned)));

        // Only what the applier owned last time may go.
        let pruned_set = s.ensure_named_fields_are_members(&s.field_set(&pruned));
        s.remove_items(
            &merged,
            &merged_set.difference(&pruned_set).intersection(&last_named),
        )
    }

    // ========================================================================== update

    /// Ownership tracking for a create, update or patch by `manager` (already defaulted from
    /// the User-Agent if the request had no fieldManager): `live` is the stored object
    /// (`None` on create), `new` the object about to be stored (defaults applied). Returns
    /// `new` with its managedFields set. As upstream's `UpdateNoErrors`, it never fails: on an
    /// internal error the live object's managedFields are kept.
    pub fn update(
        &self,
        live: Option<&Value>,
        new: &Value,
        manager: &str,
        now: SystemTime,
    ) -> Value {
        let mut out = new.clone();
        self.update_in_place(live, &mut out, manager, now);
        out
    }

    /// [`FieldManager::update`] on the object about to be stored itself: sets its
    /// managedFields without copying it.
    pub fn update_in_place(
        &self,
        live: Option<&Value>,
        new: &mut Value,
        manager: &str,
        now: SystemTime,
    ) {
        let now = unix_seconds(now);
        let zero;
        let live_obj = match live {
            Some(l) => l,
            None => {
                zero = self.new_object();
                &zero
            }
        };
        if !live_obj.is_object() || !new.is_object() {
            return;
        }
        let managed = self.decode_live_or_new(live_obj, new);
        // The object is stored without the managedFields it came with, then gets its own.
        set_managed_fields(new, None);
        match self.update_object(live_obj, live.is_none(), new, managed, manager, now) {
            Ok(managed) => set_managed_fields(new, managed.encode()),
            Err(_) => set_managed_fields(new, ManagedFieldsEntry::list_of(live_obj)),
        }
    }

    /// The managedFields of `new` (stripped of its own) updated from `live`'s.
    /// `live_is_typed`: `live` is already a typed view (the new object of a create).
    fn update_object(
        &self,
        live: &Value,
        live_is_typed: bool,
        new: &Value,
        managed: Managed,
        manager: &str,
        now: i64,
    ) -> Result<Managed, Error> {
        if managed.fields.is_empty() && !uid(live).is_empty() {
            // Managed fields were emptied: tracking resumes with the next apply.
            return Ok(managed);
        }
        self.update_capped(live, live_is_typed, new, managed, manager, now)
    }

    /// Which managedFields an update starts from: the live object's for subresources; else
    /// the request's (an empty list, or one empty entry, resets them), falling back to the
    /// live object's when the request has none or they do not decode.
    fn decode_live_or_new(&self, live: &Value, new: &Value) -> Managed {
        let from_live = || Managed::decode_object(live).unwrap_or_default();
        if !self.subresource.is_empty() {
            return from_live();
        }
        let requested = EntryRef::list_of(new);
        if let Some(entries) = &requested {
            let reset = entries.is_empty() || (entries.len() == 1 && entries[0].is_empty());
            if reset {
                return Managed::default();
            }
        }
        match requested.map(Managed::decode_refs) {
            Some(Ok(m)) if !m.fields.is_empty() => m,
            _ => from_live(),
        }
    }

    /// An update through upstream's cap-managers manager: the update, then the oldest update
    /// entries merged into `ancient-changes` buckets beyond the cap.
    fn update_capped(
        &self,
        live: &Value,
        live_is_typed: bool,
        new: &Value,
        managed: Managed,
        manager: &str,
        now: i64,
    ) -> Result<Managed, Error> {
        let id = self.manager_id(manager, ManagerId::UPDATE);
        let managed = self.update_timestamped(live, live_is_typed, new, managed, &id, now)?;
        Ok(self.cap_update_managers(managed))
    }

    /// The update recorded under a placeholder manager, then merged into the manager's entry
    /// with a new timestamp if it changed anything.
    fn update_timestamped(
        &self,
        live: &Value,
        live_is_typed: bool,
        new: &Value,
        managed: Managed,
        id: &str,
        now: i64,
    ) -> Result<Managed, Error> {
        let mut managed =
            self.update_structured(live, live_is_typed, new, managed, CURRENT_OPERATION)?;
        strip_meta(&mut managed, CURRENT_OPERATION);
        if let Some(vs) = managed.fields.remove(CURRENT_OPERATION) {
            let set = match managed.fields.get(id) {
                Some(prev) => vs.set.union(&prev.set),
                None => vs.set,
            };
            managed.fields.insert(
                id.to_string(),
                VersionedSet {
                    set,
                    api_version: vs.api_version,
                    applied: vs.applied,
                },
            );
            managed.times.insert(id.to_string(), Some(now));
        }
        Ok(managed)
    }

    /// Upstream's `Updater.Update` of `live` into `new` (both without managedFields, which
    /// the comparison leaves out).
    fn update_structured(
        &self,
        live: &Value,
        live_is_typed: bool,
        new: &Value,
        managed: Managed,
        id: &str,
    ) -> Result<Managed, Error> {
        let c = self
            .schema
            .compare_stored(live, live_is_typed, new, &self.reset_fields);
        let managers = self.reconcile_all(managed.fields);
        let mut managers = self
            .take_ownership(&c, managers, id, true)
            .map_err(Error::Conflict)?;
        let previous = managers
            .get(id)
            .map(|vs| vs.set.clone())
            .unwrap_or_default();
        let set = previous
            .difference(&c.removed)
            .union(&c.modified)
            .union(&c.added)
            .recursive_difference(&self.reset_fields);
        if set.is_empty() {
            managers.remove(id);
        } else {
            managers.insert(
                id.to_string(),
                VersionedSet {
                    set,
                    api_version: self.api_version(),
                    applied: false,
                },
            );
        }
        Ok(Managed {
            fields: managers,
            times: managed.times,
        })
    }

    // ========================================================================== shared

    fn manager_id(&self, manager: &str, operation: &str) -> String {
        ManagerId {
            manager: if manager.is_empty() {
                "unknown".to_string()
            } else {
                manager.to_string()
            },
            operation: operation.to_string(),
            api_version: if operation == ManagerId::APPLY {
                String::new()
            } else {
                self.api_version()
            },
            subresource: self.subresource.clone(),
        }
        .identifier()
    }

    /// Every manager's set reconciled with the current schema.
    fn reconcile_all(
        &self,
        fields: BTreeMap<String, VersionedSet>,
    ) -> BTreeMap<String, VersionedSet> {
        fields
            .into_iter()
            .map(|(id, mut vs)| {
                if let Some(r) = self.schema.reconcile(&vs.set) {
                    vs.set = r;
                }
                (id, vs)
            })
            .collect()
    }

    /// Upstream's `Updater.update`: other managers lose the fields whose values change (a
    /// conflict unless forced) and the fields that are removed.
    /// `c`: the comparison of the old and new objects, without the reset fields.
    fn take_ownership(
        &self,
        c: &Comparison,
        mut managers: BTreeMap<String, VersionedSet>,
        workflow: &str,
        force: bool,
    ) -> Result<BTreeMap<String, VersionedSet>, Conflicts> {
        let changed = c.modified.union(&c.added);
        let mut conflicts: Vec<(String, FieldSet)> = Vec::new();
        let mut removed: Vec<String> = Vec::new();
        for (id, vs) in &managers {
            if id == workflow {
                continue;
            }
            let conflict = vs.set.intersection(&changed);
            if !conflict.is_empty() {
                conflicts.push((id.clone(), conflict));
            }
            if !c.removed.is_empty() {
                removed.push(id.clone());
            }
        }
        if !force && !conflicts.is_empty() {
            let list = conflicts
                .iter()
                .flat_map(|(id, set)| {
                    set.paths().into_iter().map(move |path| Conflict {
                        manager: id.clone(),
                        path,
                    })
                })
                .collect();
            return Err(Conflicts(list));
        }
        for (id, conflict) in &conflicts {
            if let Some(vs) = managers.get_mut(id) {
                vs.set = vs.set.difference(conflict);
            }
        }
        for id in &removed {
            if let Some(vs) = managers.get_mut(id) {
                vs.set = vs.set.difference(&c.removed);
            }
        }
        managers.retain(|_, vs| !vs.set.is_empty());
        Ok(managers)
    }

    /// Merges the oldest update entries into per-version `ancient-changes` buckets until at
    /// most the cap remain (upstream's algorithm, ties broken by identifier).
    fn cap_update_managers(&self, mut managed: Managed) -> Managed {
        let mut updaters: Vec<String> = managed
            .fields
            .iter()
            .filter(|(_, vs)| !vs.applied)
            .map(|(id, _)| id.clone())
            .collect();
        if updaters.len() <= self.max_update_managers {
            return managed;
        }
        let seconds = |m: &Managed, id: &str| m.times.get(id).copied().flatten().unwrap_or(0);
        updaters.sort_by(|a, b| {
            seconds(&managed, a)
                .cmp(&seconds(&managed, b))
                .then_with(|| a.cmp(b))
        });
        let mut first_of_version: BTreeMap<String, String> = BTreeMap::new();
        let mut length = updaters.len();
        for id in &updaters {
            if length <= self.max_update_managers {
                break;
            }
            let Some(vs) = managed.fields.get(id).cloned() else {
                continue;
            };
            let time = managed.times.get(id).copied().flatten();
            let bucket = ManagerId {
                manager: ANCIENT_CHANGES.to_string(),
                operation: ManagerId::UPDATE.to_string(),
                api_version: vs.api_version.clone(),
                subresource: String::new(),
            }
            .identifier();
            match first_of_version.get(&vs.api_version) {
                Some(first) => {
                    if !managed.fields.contains_key(&bucket)
                        && let Some(s) = managed.fields.remove(first)
                    {
                        managed.fields.insert(bucket.clone(), s);
                    }
                    let existing = managed
                        .fields
                        .get(&bucket)
                        .map(|b| b.set.clone())
                        .unwrap_or_default();
                    managed.fields.insert(
                        bucket.clone(),
                        VersionedSet {
                            set: vs.set.union(&existing),
                            api_version: vs.api_version.clone(),
                            applied: vs.applied,
                        },
                    );
                    managed.fields.remove(id);
                    length -= 1;
                    managed.times.insert(bucket, time);
                }
                None => {
                    first_of_version.insert(vs.api_version.clone(), id.clone());
                }
            }
        }
        managed
    }
}

/// Fields nobody owns: type and object metadata the server sets.
static STRIP_SET: LazyLock<FieldSet> = LazyLock::new(|| {
    let mut s = FieldSet::new();
    for p in [
        &["apiVersion"][..],
        &["kind"],
        &["metadata"],
        &["metadata", "name"],
        &["metadata", "namespace"],
        &["metadata", "creationTimestamp"],
        &["metadata", "selfLink"],
        &["metadata", "uid"],
        &["metadata", "clusterName"],
        &["metadata", "generation"],
        &["metadata", "managedFields"],
        &["metadata", "resourceVersion"],
    ] {
        s.insert(Path::fields(p).elements());
    }
    s
});

fn strip_meta(managed: &mut Managed, id: &str) {
    let Some(vs) = managed.fields.get_mut(id) else {
        return;
    };
    vs.set = vs.set.difference(&STRIP_SET);
    if vs.set.is_empty() {
        managed.fields.remove(id);
    }
}

/// Whether an applied configuration carries managedFields (a list whose items all read as
/// entries; upstream's accessor treats anything else as none).
fn has_managed_fields_list(obj: &Value) -> bool {
    ManagedFieldsEntry::list_of(obj).is_some()
}

fn uid(obj: &Value) -> &str {
    obj.get("metadata")
        .and_then(|m| m.get("uid"))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// `namespace/name; group/version, Kind=kind`, as upstream names objects in errors.
fn gvknn(obj: &Value) -> String {
    let meta = |k: &str| {
        obj.get("metadata")
            .and_then(|m| m.get(k))
            .and_then(Value::as_str)
            .unwrap_or("")
    };
    format!(
        "{}/{}; {}",
        meta("namespace"),
        meta("name"),
        GroupVersionKind::of_object(obj)
    )
}

fn annotation<'v>(obj: &'v Value, key: &str) -> Option<&'v str> {
    obj.get("metadata")?.get("annotations")?.get(key)?.as_str()
}

fn has_last_applied(obj: &Value) -> bool {
    annotation(obj, LAST_APPLIED_ANNOTATION).is_some_and(|s| !s.is_empty())
}

/// An object's annotations as upstream's accessor reads them: nulls as empty strings; `None`
/// when absent or when a value is not a string.
fn string_annotations(obj: &Value) -> Option<Map<String, Value>> {
    let m = obj.get("metadata")?.get("annotations")?.as_object()?;
    let mut out = Map::new();
    for (k, v) in m {
        match v {
            Value::String(_) => {
                out.insert(k.clone(), v.clone());
            }
            Value::Null => {
                out.insert(k.clone(), Value::String(String::new()));
            }
            _ => return None,
        }
    }
    Some(out)
}

fn put_annotations(obj: &mut Value, annotations: Option<Map<String, Value>>) {
    let Some(root) = obj.as_object_mut() else {
        return;
    };
    match annotations {
        None => {
            if let Some(Value::Object(meta)) = root.get_mut("metadata") {
                meta.remove("annotations");
            }
        }
        Some(a) => {
            let meta = root
                .entry("metadata")
                .or_insert_with(|| Value::Object(Map::new()));
            if !meta.is_object() {
                *meta = Value::Object(Map::new());
            }
            if let Value::Object(meta) = meta {
                meta.insert("annotations".into(), Value::Object(a));
            }
        }
    }
}

/// The applied configuration without the last-applied annotation, as Go's JSON encoder
/// writes it (sorted keys, trailing newline).
fn build_last_applied(applied: &Value) -> String {
    let mut copy = applied.clone();
    let annotations = string_annotations(&copy).map(|mut a| {
        a.remove(LAST_APPLIED_ANNOTATION);
        a
    });
    put_annotations(&mut copy, annotations);
    // Upstream's last-applied updater encodes with encoding/json.
    let mut text = api::gofmt::json(&copy);
    text.push('\n');
    text
}

fn set_last_applied(obj: &mut Value, text: &str) {
    let mut annotations = string_annotations(obj).unwrap_or_default();
    annotations.insert(
        LAST_APPLIED_ANNOTATION.to_string(),
        Value::String(text.to_string()),
    );
    let size: usize = annotations
        .iter()
        .map(|(k, v)| k.len() + v.as_str().map_or(0, str::len))
        .sum();
    if size > TOTAL_ANNOTATION_SIZE_LIMIT {
        annotations.remove(LAST_APPLIED_ANNOTATION);
    }
    put_annotations(obj, Some(annotations));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn gvk_of_objects() {
        assert_eq!(
            GroupVersionKind::of_object(&json!({"apiVersion": "apps/v1", "kind": "Deployment"})),
            GroupVersionKind::new("apps", "v1", "Deployment")
        );
        assert_eq!(
            GroupVersionKind::of_object(&json!({"apiVersion": "v1", "kind": "Pod"})).to_string(),
            "/v1, Kind=Pod"
        );
        assert_eq!(
            GroupVersionKind::of_object(&json!({})).to_string(),
            "/, Kind="
        );
        assert_eq!(
            GroupVersionKind::of_object(&json!({"apiVersion": "a/b/c", "kind": "X"})),
            GroupVersionKind::default()
        );
    }

    #[test]
    fn last_applied_text() {
        let applied = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "x", "annotations": {LAST_APPLIED_ANNOTATION: "old", "a": "<b>"}},
            "data": {"k": 1.5}
        });
        assert_eq!(
            build_last_applied(&applied),
            "{\"apiVersion\":\"v1\",\"data\":{\"k\":1.5},\"kind\":\"ConfigMap\",\"metadata\":{\"annotations\":{\"a\":\"\\u003cb\\u003e\"},\"name\":\"x\"}}\n"
        );
        let mut obj = json!({"metadata": {}});
        set_last_applied(&mut obj, "{}\n");
        assert!(has_last_applied(&obj));
        let mut big =
            json!({"metadata": {"annotations": {"x": "y".repeat(TOTAL_ANNOTATION_SIZE_LIMIT)}}});
        set_last_applied(&mut big, "{}\n");
        assert!(!has_last_applied(&big));
    }
}
