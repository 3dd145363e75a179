//! Strategic merge patch, applied as upstream's API server applies it
//! (`k8s.io/apimachinery/pkg/util/strategicpatch`: `StrategicMergeMapPatch`, `mergeMap`,
//! `mergeSlice` with `MergeParallelList` and `IgnoreUnmatchedNulls`), with the field
//! metadata read from OpenAPI schemas instead of Go struct tags.
//!
//! What upstream does, and so what this does:
//! - maps merge key by key; `null` removes a key; a value of another type replaces;
//! - lists replace, unless the field's `x-kubernetes-patch-strategy` is `merge`: lists of
//!   maps then merge item by item on the `x-kubernetes-patch-merge-key`, lists of scalars
//!   become the union of both (without duplicates);
//! - a field with strategy `replace` takes the patch's map as is;
//! - directives: `$patch: replace|delete` in a map, `$patch: replace|delete` items in a
//!   merged list, `$retainKeys`, `$setElementOrder/<field>`, `$deleteFromPrimitiveList/<field>`;
//! - merged lists are ordered as upstream orders them: the patch's items (or those of the
//!   `$setElementOrder` list) in the patch's order, with the items only the server has
//!   interleaved in their own relative order: a server item goes before a patch item only
//!   if both are in the server's list and it comes first there (so new items come first);
//! - upstream merges lists in place, and in corner cases (lists of scalars with duplicates,
//!   deletions followed by additions) Go's reuse of a slice's spare room changes the order;
//!   this is reproduced for the lists of a stored object, which have no spare room;
//! - fields the schema does not know fail when both sides hold a map or a list there
//!   ("unable to find api field ..."), as upstream's struct lookup does; where there is no
//!   schema at all, nothing fails and lists replace.
//!
//! The members of a patch map are applied in key order; upstream applies them in Go's
//! (random) map order, which matters only for which of several errors is reported, and
//! when a patch holds both `x` and `$deleteFromPrimitiveList/x` without
//! `$setElementOrder/x` (kubectl's patches, marshalled with sorted keys, list the deletions
//! first, which is the order used here).
//!
//! Values that are added whole keep what upstream keeps: directives and `null`s inside list
//! items that are appended, and directive keys (`$setElementOrder/...`, `$retainKeys`) of
//! maps that did not exist; upstream drops them when it decodes the result into the typed
//! object, as unknown fields or zero values.

use serde_json::{Map, Value};

use api::schema::SchemaLookup;

use crate::error::PatchError;
use crate::gofmt::{self, GoType, go_eq};
use crate::gosort::slice_stable;
use crate::schema_meta::{Node, PatchMeta, Schemas};
use crate::{MAX_DEPTH, UPSTREAM_NIL_DEREFERENCE};

pub(crate) const DIRECTIVE_MARKER: &str = "$patch";
pub(crate) const DELETE_DIRECTIVE: &str = "delete";
pub(crate) const REPLACE_DIRECTIVE: &str = "replace";
pub(crate) const MERGE_DIRECTIVE: &str = "merge";
pub(crate) const RETAIN_KEYS_STRATEGY: &str = "retainKeys";
pub(crate) const RETAIN_KEYS_DIRECTIVE: &str = "$retainKeys";
pub(crate) const DELETE_FROM_PRIMITIVE_LIST_PREFIX: &str = "$deleteFromPrimitiveList";
pub(crate) const SET_ELEMENT_ORDER_PREFIX: &str = "$setElementOrder";

type Result<T> = std::result::Result<T, PatchError>;

/// Applies a strategic merge patch to `doc` (an object), as upstream's API server does.
///
/// `schema` is the schema of the document's type: a reference
/// (`{"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}`) or the definition
/// itself; `lookup` resolves the references in it. A `null` schema (or `{}`) means no type
/// information: maps merge, lists replace, nothing fails for unknown fields.
///
/// A `null` patch changes nothing; a patch that is not an object is refused with the
/// decoder's message, as the API server refuses it (400).
pub fn strategic_merge_patch(
    doc: &Value,
    patch: &Value,
    schema: &Value,
    lookup: &dyn SchemaLookup,
) -> Result<Value> {
    let patch = match patch {
        Value::Object(map) => map,
        Value::Null => return Ok(doc.clone()),
        Value::Array(_) => return Err(PatchError::StrategicPatchNotObject { found: "array" }),
        Value::String(_) => return Err(PatchError::StrategicPatchNotObject { found: "string" }),
        Value::Number(_) => return Err(PatchError::StrategicPatchNotObject { found: "number" }),
        Value::Bool(_) => return Err(PatchError::StrategicPatchNotObject { found: "bool" }),
    };
    if patch.values().map(gofmt::depth).max().unwrap_or(0) + 1 > MAX_DEPTH {
        return Err(PatchError::TooDeep { limit: MAX_DEPTH });
    }
    let original = match doc {
        Value::Object(map) => map.clone(),
        Value::Null => Map::new(),
        _ => return Err(PatchError::BadJsonDoc),
    };
    let schemas = Schemas { lookup };
    let merger = Merger { schemas };
    let root = merger.schemas.classify(schema);
    let merged = merger.merge_map(original, patch.clone(), &root)?;
    Ok(Value::Object(merged))
}

fn merge_err(msg: impl Into<String>) -> PatchError {
    PatchError::StrategicMerge(msg.into())
}

fn panic_uncomparable(t: GoType) -> PatchError {
    PatchError::UpstreamPanic(format!(
        "runtime error: comparing uncomparable type {}",
        t.name()
    ))
}

fn panic_unhashable(t: GoType) -> PatchError {
    PatchError::UpstreamPanic(format!(
        "runtime error: hash of unhashable type {}",
        t.name()
    ))
}

/// Go's `==` between two decoded values; an error where Go panics.
fn eq(a: &Value, b: &Value) -> Result<bool> {
    go_eq(a, b).ok_or_else(|| panic_uncomparable(GoType::of(a)))
}

/// Refuses values Go cannot use as map keys.
fn hashable(v: &Value) -> Result<()> {
    match GoType::of(v) {
        t @ (GoType::Map | GoType::Slice) => Err(panic_unhashable(t)),
        _ => Ok(()),
    }
}

/// `mergepatch.ErrBadArgType`.
fn bad_arg_type(expected: GoType, actual: Option<&Value>) -> PatchError {
    let actual = actual.map_or(GoType::Nil, GoType::of);
    merge_err(format!(
        "expected a {}, but received a {}",
        expected.s(),
        actual.s()
    ))
}

/// `mergepatch.ErrNoMergeKey`.
fn no_merge_key(m: &Map<String, Value>, key: &str) -> PatchError {
    merge_err(format!(
        "map: {} does not contain declared merge key: {key}",
        gofmt::v_map(m)
    ))
}

/// `mergepatch.ErrBadPatchType`.
fn bad_patch_type(t: &Value, m: &Map<String, Value>) -> PatchError {
    merge_err(format!(
        "unknown patch type: {} in map: {}",
        gofmt::s(t),
        gofmt::v_map(m)
    ))
}

fn as_map(v: &Value) -> Result<&Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| bad_arg_type(GoType::Map, Some(v)))
}

fn is_delete_directive(m: &Map<String, Value>) -> bool {
    m.get(DIRECTIVE_MARKER).and_then(Value::as_str) == Some(DELETE_DIRECTIVE)
}

/// `extractKey`: the field a `$setElementOrder/...` or `$deleteFromPrimitiveList/...` key
/// is about.
fn extract_key(s: &str, prefix: &str) -> Result<String> {
    match s.split_once('/') {
        Some((head, tail)) if head == prefix => Ok(tail.to_string()),
        _ => Err(match prefix {
            DELETE_FROM_PRIMITIVE_LIST_PREFIX => PatchError::BadPatchFormatForPrimitiveList,
            _ => PatchError::BadPatchFormatForSetElementOrderList,
        }),
    }
}

/// `extractRetainKeysPatchStrategy`: the strategy besides `retainKeys`.
fn other_strategy(meta: &PatchMeta) -> Result<String> {
    let s = &meta.strategies;
    match s.len() {
        0 => Ok(String::new()),
        1 if s[0] == RETAIN_KEYS_STRATEGY => Ok(String::new()),
        1 => Ok(s[0].clone()),
        2 if s[0] == RETAIN_KEYS_STRATEGY => Ok(s[1].clone()),
        2 if s[1] == RETAIN_KEYS_STRATEGY => Ok(s[0].clone()),
        _ => Err(merge_err(format!(
            "unexpected patch strategy: {}",
            gofmt::v_strings(s)
        ))),
    }
}

/// `discardNullValuesFromPatch`: removes `null` members of maps, at any depth.
fn discard_nulls(v: &mut Value) {
    crate::merge_patch::prune_nulls(v);
}

/// `removeDirectives`: drops maps holding `$patch` (and list items that are such maps);
/// `None` when the value itself is one.
pub(crate) fn remove_directives(v: Value) -> Option<Value> {
    match v {
        Value::Object(map) => {
            if map.contains_key(DIRECTIVE_MARKER) {
                return None;
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| remove_directives(v).map(|v| (k, v)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(
            items.into_iter().filter_map(remove_directives).collect(),
        )),
        other => Some(other),
    }
}

/// `sliceElementType`: the one type of all items of the lists.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType> {
    let mut prev: Option<GoType> = None;
    for list in lists {
        for v in list.iter() {
            let t = GoType::of(v);
            match prev {
                None => {
                    if t == GoType::Nil {
                        // Go reads the kind of a nil type here.
                        return Err(PatchError::UpstreamPanic(
                            UPSTREAM_NIL_DEREFERENCE.to_string(),
                        ));
                    }
                    if t == GoType::Slice {
                        return Err(PatchError::NoListOfLists);
                    }
                    prev = Some(t);
                }
                Some(p) if p != t => {
                    return Err(merge_err(format!(
                        "list element types are not identical: {}",
                        gofmt::v_lists(lists)
                    )));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| merge_err("no elements in any of the given slices"))
}

/// `findMapInSliceBasedOnKeyValue`: the index of the first map whose `key` equals `value`.
fn find_map_by_key(list: &[Value], key: &str, value: &Value) -> Result<Option<usize>> {
    for (i, v) in list.iter().enumerate() {
        let Some(m) = v.as_object() else {
            return Err(merge_err(format!("value for key {i} is not a map")));
        };
        if let Some(candidate) = m.get(key)
            && eq(candidate, value)?
        {
            return Ok(Some(i));
        }
    }
    Ok(None)
}

/// `validateMergeKeyInLists`.
fn validate_merge_key_in_lists(merge_key: &str, lists: &[&[Value]]) -> Result<()> {
    for list in lists {
        for item in list.iter() {
            let m = as_map(item)?;
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
    }
    Ok(())
}

/// `extractToDeleteItems`: the items to keep, and those that are `$patch: delete`.
fn extract_to_delete_items(list: Vec<Value>) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut keep = Vec::new();
    let mut delete = Vec::new();
    for v in list {
        let is_delete = is_delete_directive(as_map(&v)?);
        if is_delete {
            delete.push(v);
        } else {
            keep.push(v);
        }
    }
    Ok((keep, delete))
}

/// `index`: where an item is in `list` (by merge key for maps), `None` if absent.
fn index_of(list: &[Value], item: &Value, merge_key: &str, kind: GoType) -> Result<Option<usize>> {
    let key_of = |v: &Value| -> Value {
        v.as_object()
            .and_then(|m| m.get(merge_key))
            .cloned()
            .unwrap_or(Value::Null)
    };
    if kind == GoType::Map {
        let wanted = key_of(item);
        for (i, v) in list.iter().enumerate() {
            if eq(&wanted, &key_of(v))? {
                return Ok(Some(i));
            }
        }
    } else {
        for (i, v) in list.iter().enumerate() {
            if eq(item, v)? {
                return Ok(Some(i));
            }
        }
    }
    Ok(None)
}

/// `normalizeSliceOrder`: sorts `to_sort` by `order` (Go's stable sort with upstream's
/// comparison), `$patch: delete` items last.
fn normalize_slice_order(
    to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let mut to_sort = to_sort;
    let mut to_delete = Vec::new();
    if kind == GoType::Map {
        validate_merge_key_in_lists(merge_key, &[&to_sort, order])?;
        (to_sort, to_delete) = extract_to_delete_items(to_sort)?;
    }
    let mut keyed: Vec<(Option<usize>, Value)> = Vec::with_capacity(to_sort.len());
    for v in to_sort {
        keyed.push((index_of(order, &v, merge_key, kind)?, v));
    }
    slice_stable(&mut keyed, &|a, b| match (a.0, b.0) {
        (Some(i), Some(j)) => i < j,
        _ => true,
    });
    let mut out: Vec<Value> = keyed.into_iter().map(|(_, v)| v).collect();
    out.extend(to_delete);
    Ok(out)
}

/// `mergeSortedSlice`: interleaves the server-only items (`left`) into the patch items
/// (`right`): a server item goes first only if both are in the server's order and it comes
/// earlier there.
fn merge_sorted_slice(
    left: Vec<Value>,
    right: Vec<Value>,
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let mut out = Vec::with_capacity(left.len() + right.len());
    let mut left = left.into_iter().peekable();
    let mut right = right.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let li = index_of(server_order, l, merge_key, kind)?;
                let ri = index_of(server_order, r, merge_key, kind)?;
                matches!((li, ri), (Some(i), Some(j)) if i < j)
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        out.extend(next);
    }
    Ok(out)
}

/// `normalizeElementOrder`.
fn normalize_element_order(
    patch_items: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let patch_items = normalize_slice_order(patch_items, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    merge_sorted_slice(server_only, patch_items, server_order, merge_key, kind)
}

/// `partitionPrimitivesByPresentInList`.
fn partition_primitives(
    original: Vec<Value>,
    partition_by: &[Value],
) -> Result<(Vec<Value>, Vec<Value>)> {
    for v in partition_by {
        hashable(v)?;
    }
    let mut patch = Vec::new();
    let mut server_only = Vec::new();
    for v in original {
        hashable(&v)?;
        let mut found = false;
        for p in partition_by {
            if eq(&v, p)? {
                found = true;
                break;
            }
        }
        if found {
            patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((patch, server_only))
}

/// `partitionMapsByPresentInList`.
fn partition_maps(
    original: Vec<Value>,
    partition_by: &[Value],
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut patch = Vec::new();
    let mut server_only = Vec::new();
    for v in original {
        let m = as_map(&v)?;
        let Some(key_value) = m.get(merge_key) else {
            return Err(no_merge_key(m, merge_key));
        };
        if find_map_by_key(partition_by, merge_key, key_value)?.is_some() {
            patch.push(v);
        } else {
            server_only.push(v);
        }
    }
    Ok((patch, server_only))
}

/// `deduplicateScalars`, step for step: works in place and returns the new length; the
/// slots past it keep what Go's in-place algorithm leaves there.
fn dedup_in_place(s: &mut [Value]) -> Result<usize> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut length = s.len() - 1;
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if eq(&s[i], &s[j])? {
                s[j] = s[length].clone();
                length -= 1;
                // `j--` then the loop's `j++`: look at slot j again.
                continue;
            }
            j += 1;
        }
        i += 1;
    }
    Ok(length + 1)
}

/// `deleteFromSlice`.
fn delete_from_slice(current: Vec<Value>, to_delete: &[Value]) -> Result<Vec<Value>> {
    for v in to_delete {
        hashable(v)?;
    }
    let mut out = Vec::with_capacity(current.len());
    for v in current {
        hashable(&v)?;
        let mut found = false;
        for d in to_delete {
            if eq(&v, d)? {
                found = true;
                break;
            }
        }
        if !found {
            out.push(v);
        }
    }
    Ok(out)
}

/// What the caller of `mergeSlice` sees of the original list's backing array afterwards:
/// Go merges in place, so deletions shift items, merges overwrite them and appends may land
/// in slots freed by deletions. Upstream orders `$setElementOrder` lists by that view.
struct Backing {
    view: Vec<Value>,
    attached: bool,
}

impl Backing {
    fn new(original: &[Value], track: bool) -> Self {
        Backing {
            view: if track { original.to_vec() } else { Vec::new() },
            attached: track,
        }
    }

    /// `append(original[:i], original[i+1:]...)` on a list of length `len`.
    fn removed(&mut self, i: usize, len: usize) {
        if self.attached {
            for k in i..len.saturating_sub(1) {
                if let Some(next) = self.view.get(k + 1).cloned() {
                    self.view[k] = next;
                }
            }
        }
    }

    /// `original[i] = v`.
    fn set(&mut self, i: usize, v: &Value) {
        if self.attached
            && let Some(slot) = self.view.get_mut(i)
        {
            *slot = v.clone();
        }
    }

    /// `append(original, v)` on a list of length `len`.
    fn appended(&mut self, len: usize, v: &Value) {
        if self.attached {
            match self.view.get_mut(len) {
                Some(slot) => *slot = v.clone(),
                None => self.attached = false,
            }
        }
    }

    fn detach(&mut self) {
        self.attached = false;
    }
}

/// How `mergeSlice` merges a list.
#[derive(Clone, Copy)]
struct SliceArgs<'k> {
    /// The field's merge key (empty for none).
    merge_key: &'k str,
    /// Whether the patch list is a `$deleteFromPrimitiveList` list.
    is_delete_list: bool,
    /// The capacity of Go's slice holding the original list.
    capacity: usize,
    /// Whether to report what Go's backing array of the original list holds afterwards.
    track: bool,
}

/// The result of `mergeSlice`.
struct SliceMerge {
    items: Vec<Value>,
    /// The capacity of Go's resulting slice.
    capacity: usize,
    /// What Go's backing array of the original list holds afterwards, when tracked and
    /// changed in place.
    view: Option<Vec<Value>>,
}

impl SliceMerge {
    fn exact(items: Vec<Value>) -> Self {
        SliceMerge {
            capacity: items.len(),
            items,
            view: None,
        }
    }
}

struct Merger<'s> {
    schemas: Schemas<'s>,
}

impl<'s> Merger<'s> {
    /// `mergeMap`.
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        node: &Node<'s>,
    ) -> Result<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER) {
            return match directive.as_str() {
                Some(REPLACE_DIRECTIVE) => {
                    patch.remove(DIRECTIVE_MARKER);
                    Ok(patch)
                }
                Some(DELETE_DIRECTIVE) => Ok(Map::new()),
                _ => Err(bad_patch_type(directive, &patch)),
            };
        }

        apply_retain_keys(&mut original, &mut patch)?;
        self.merge_set_element_order(&mut original, &mut patch, node)?;

        // Lists this loop built by deleting items from a longer one: Go's slice keeps the
        // longer capacity, which matters when the same list is merged next.
        let mut capacities: Vec<(String, usize)> = Vec::new();
        for (key, patch_v) in patch {
            let (key, is_delete_list) = if key.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                (extract_key(&key, DELETE_FROM_PRIMITIVE_LIST_PREFIX)?, true)
            } else {
                (key, false)
            };

            if patch_v.is_null() {
                original.remove(&key);
                continue;
            }

            let Some(original_v) = original.remove(&key) else {
                if !is_delete_list {
                    let mut v = patch_v;
                    discard_nulls(&mut v);
                    if let Some(v) = remove_directives(v) {
                        original.insert(key, v);
                    }
                }
                continue;
            };

            if GoType::of(&original_v) != GoType::of(&patch_v) {
                if is_delete_list {
                    original.insert(key, original_v);
                } else {
                    let mut v = patch_v;
                    discard_nulls(&mut v);
                    if let Some(v) = remove_directives(v) {
                        original.insert(key, v);
                    }
                }
                continue;
            }

            match (original_v, patch_v) {
                (Value::Object(o), Value::Object(p)) => {
                    let (sub, meta) = self.schemas.lookup_struct(node, &key).map_err(merge_err)?;
                    let strategy = other_strategy(&meta)?;
                    let merged = if strategy == REPLACE_DIRECTIVE {
                        p
                    } else {
                        self.merge_map(o, p, &sub)?
                    };
                    original.insert(key, Value::Object(merged));
                }
                (Value::Array(o), Value::Array(p)) => {
                    let (sub, meta) = self.schemas.lookup_slice(node, &key).map_err(merge_err)?;
                    let strategy = other_strategy(&meta)?;
                    let capacity = capacities
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map_or(o.len(), |(_, c)| *c);
                    capacities.retain(|(k, _)| *k != key);
                    if strategy == MERGE_DIRECTIVE || is_delete_list {
                        let merged = self.merge_slice(
                            o,
                            p,
                            &sub,
                            SliceArgs {
                                merge_key: &meta.merge_key,
                                is_delete_list,
                                capacity,
                                track: false,
                            },
                        )?;
                        if merged.capacity > merged.items.len() {
                            capacities.push((key.clone(), merged.capacity));
                        }
                        original.insert(key, Value::Array(merged.items));
                    } else {
                        original.insert(key, Value::Array(p));
                    }
                }
                (_, p) => {
                    if let Some(v) = remove_directives(p) {
                        original.insert(key, v);
                    }
                }
            }
        }
        Ok(original)
    }

    /// `mergePatchIntoOriginal`: merges the lists that have a `$setElementOrder` directive
    /// and orders them by it.
    fn merge_set_element_order(
        &self,
        original: &mut Map<String, Value>,
        patch: &mut Map<String, Value>,
        node: &Node<'s>,
    ) -> Result<()> {
        let keys: Vec<String> = patch
            .keys()
            .filter(|k| k.starts_with(SET_ELEMENT_ORDER_PREFIX))
            .cloned()
            .collect();
        for key in keys {
            let Some(set_order) = patch.remove(&key) else {
                continue;
            };
            let Value::Array(set_order) = set_order else {
                return Err(bad_arg_type(GoType::Slice, Some(&set_order)));
            };
            let original_key = extract_key(&key, SET_ELEMENT_ORDER_PREFIX)?;

            let original_list = match original.get(&original_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(bad_arg_type(GoType::Slice, Some(other))),
            };
            let patch_list = match patch.get(&original_key) {
                None => None,
                Some(Value::Array(items)) => Some(items.clone()),
                Some(other) => return Err(bad_arg_type(GoType::Slice, Some(other))),
            };

            let (sub, meta) = self
                .schemas
                .lookup_slice(node, &original_key)
                .map_err(merge_err)?;
            let strategy = other_strategy(&meta)?;
            let merge_key = meta.merge_key.as_str();
            validate_patch_with_set_order(
                patch_list.as_deref().unwrap_or_default(),
                &set_order,
                merge_key,
            )?;

            let original_items = original_list.clone().unwrap_or_default();
            let patch_items = patch_list.clone().unwrap_or_default();
            let (merged, server_view) = match (original_list, patch_list) {
                (Some(o), None) => (o, None),
                (None, Some(p)) => match remove_directives(Value::Array(p)) {
                    Some(Value::Array(items)) => (items, None),
                    _ => continue,
                },
                (Some(o), Some(p)) => {
                    if strategy == MERGE_DIRECTIVE {
                        let capacity = o.len();
                        let merged = self.merge_slice(
                            o,
                            p,
                            &sub,
                            SliceArgs {
                                merge_key,
                                is_delete_list: false,
                                capacity,
                                track: true,
                            },
                        )?;
                        (merged.items, merged.view)
                    } else {
                        (p, None)
                    }
                }
                (None, None) => continue,
            };
            // What Go's `originalFieldValue` holds after merging in place.
            let server_order = server_view.unwrap_or(original_items);

            let (in_order, server_only) = if merge_key.is_empty() {
                partition_primitives(merged, &set_order)?
            } else {
                partition_maps(merged, &set_order, merge_key)?
            };
            let kind = slice_element_type(&[&server_order, &patch_items])?;
            let both = normalize_element_order(
                in_order,
                server_only,
                &set_order,
                &server_order,
                merge_key,
                kind,
            )?;
            original.insert(original_key.clone(), Value::Array(both));
            patch.remove(&original_key);
        }
        Ok(())
    }

    /// `mergeSlice`. `capacity` is the capacity of Go's slice holding `original` (its
    /// length, unless it was built by deleting items), which decides whether Go merges
    /// lists of scalars in place. With `track`, also returns what Go's backing array of the
    /// original list holds afterwards, if Go changed it in place.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        item: &Node<'s>,
        how: SliceArgs<'_>,
    ) -> Result<SliceMerge> {
        let SliceArgs {
            merge_key,
            is_delete_list,
            capacity,
            track,
        } = how;
        if original.is_empty() && patch.is_empty() {
            return Ok(SliceMerge::exact(original));
        }
        let kind = slice_element_type(&[&original, &patch])?;

        let (merged, server_order, patch, view) = if kind != GoType::Map {
            if is_delete_list {
                // `deleteFromSlice` allocates room for all of `original`.
                let capacity = original.len();
                let items = delete_from_slice(original, &patch)?;
                return Ok(SliceMerge {
                    items,
                    capacity,
                    view: None,
                });
            }
            // `append(original, patch...)` shares `original`'s array when it has room (always
            // when the patch is empty), and the in-place deduplication then rewrites what Go
            // orders the result by.
            let in_place = original.len() + patch.len() <= capacity.max(original.len());
            let original_len = original.len();
            let untouched = (!in_place).then(|| original.clone());
            let mut both = original;
            both.extend(patch.iter().cloned());
            let len = dedup_in_place(&mut both)?;
            let merged = both[..len].to_vec();
            let server_order = match untouched {
                Some(o) => o,
                None => {
                    both.truncate(original_len);
                    both
                }
            };
            let view = (track && in_place).then(|| server_order.clone());
            (merged, server_order, patch, view)
        } else {
            if merge_key.is_empty() {
                return Err(merge_err(format!(
                    "cannot merge lists without merge key for {}",
                    item.kind_name()
                )));
            }
            let mut backing = Backing::new(&original, track);
            let (original, patch) =
                merge_slice_with_special_elements(original, patch, merge_key, &mut backing)?;
            let kept = original.len();
            let merged = self.merge_slice_without_special_elements(
                original,
                &patch,
                merge_key,
                item,
                &mut backing,
            )?;
            // Go orders by its local `original`: the items after deletions, merged in place.
            let server_order = merged[..kept.min(merged.len())].to_vec();
            let view = track.then_some(backing.view);
            (merged, server_order, patch, view)
        };

        let (in_patch, server_only) = if merge_key.is_empty() {
            partition_primitives(merged, &patch)?
        } else {
            partition_maps(merged, &patch, merge_key)?
        };
        let items = normalize_element_order(
            in_patch,
            server_only,
            &patch,
            &server_order,
            merge_key,
            kind,
        )?;
        Ok(SliceMerge {
            capacity: items.len(),
            items,
            view,
        })
    }

    /// `mergeSliceWithoutSpecialElements`: merges each patch item into the original item
    /// with the same merge key, or appends it.
    fn merge_slice_without_special_elements(
        &self,
        mut original: Vec<Value>,
        patch: &[Value],
        merge_key: &str,
        item: &Node<'s>,
        backing: &mut Backing,
    ) -> Result<Vec<Value>> {
        for v in patch {
            let typed = as_map(v)?;
            let Some(merge_value) = typed.get(merge_key) else {
                return Err(no_merge_key(typed, merge_key));
            };
            match find_map_by_key(&original, merge_key, merge_value)? {
                Some(i) => {
                    let current = std::mem::take(&mut original[i]);
                    let Value::Object(current) = current else {
                        return Err(merge_err(format!("value for key {i} is not a map")));
                    };
                    let merged = Value::Object(self.merge_map(current, typed.clone(), item)?);
                    backing.set(i, &merged);
                    original[i] = merged;
                }
                None => {
                    backing.appended(original.len(), v);
                    original.push(v.clone());
                }
            }
        }
        Ok(original)
    }
}

/// `mergeSliceWithSpecialElements`: applies the `$patch` items of a merged list of maps.
/// Returns the new original and the patch without those items (empty after a `replace`).
fn merge_slice_with_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
    backing: &mut Backing,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut rest = Vec::with_capacity(patch.len());
    let mut replace = false;
    for v in patch {
        let typed = as_map(&v)?;
        let Some(directive) = typed.get(DIRECTIVE_MARKER) else {
            rest.push(v);
            continue;
        };
        match directive.as_str() {
            Some(DELETE_DIRECTIVE) => {
                let Some(merge_value) = typed.get(merge_key) else {
                    return Err(no_merge_key(typed, merge_key));
                };
                while let Some(i) = find_map_by_key(&original, merge_key, merge_value)? {
                    backing.removed(i, original.len());
                    original.remove(i);
                }
            }
            Some(REPLACE_DIRECTIVE) => replace = true,
            Some(MERGE_DIRECTIVE) => {
                return Err(merge_err(
                    "merging lists cannot yet be specified in the patch",
                ));
            }
            _ => return Err(bad_patch_type(directive, typed)),
        }
    }
    if replace {
        backing.detach();
        return Ok((rest, Vec::new()));
    }
    Ok((original, rest))
}

/// `applyRetainKeysDirective`: with `$retainKeys`, clears the original's keys missing from
/// the list, and refuses patch keys missing from it.
fn apply_retain_keys(
    original: &mut Map<String, Value>,
    patch: &mut Map<String, Value>,
) -> Result<()> {
    let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) else {
        return Ok(());
    };
    let Value::Array(retain) = retain else {
        return Err(PatchError::BadPatchFormatForRetainKeys);
    };
    for v in &retain {
        hashable(v)?;
    }
    let retained = |k: &str| retain.iter().any(|v| v.as_str() == Some(k));
    for (k, v) in patch.iter() {
        if v.is_null()
            || k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX)
            || k.starts_with(SET_ELEMENT_ORDER_PREFIX)
        {
            continue;
        }
        if !retained(k) {
            return Err(PatchError::BadPatchFormatForRetainKeys);
        }
    }
    original.retain(|k, _| retained(k));
    Ok(())
}

/// `validatePatchWithSetOrderList`: the patch's items must appear in the
/// `$setElementOrder` list, in the same relative order.
fn validate_patch_with_set_order(
    patch_list: &[Value],
    set_order: &[Value],
    merge_key: &str,
) -> Result<()> {
    if set_order.is_empty() || patch_list.is_empty() {
        return Ok(());
    }
    let non_delete: Vec<Value> = if merge_key.is_empty() {
        patch_list.to_vec()
    } else {
        extract_to_delete_items(patch_list.to_vec())?.0
    };
    let (mut p, mut s) = (0, 0);
    while p < non_delete.len() && s < set_order.len() {
        if non_delete[p]
            .as_object()
            .is_some_and(|m| m.contains_key(DIRECTIVE_MARKER))
        {
            p += 1;
            continue;
        }
        if merge_key_value_equal(&non_delete[p], &set_order[s], merge_key)? {
            p += 1;
        }
        s += 1;
    }
    if p < non_delete.len() && s >= set_order.len() {
        return Err(merge_err(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ELEMENT_ORDER_PREFIX} list:\n{}\n",
            gofmt::v_list(patch_list),
            gofmt::v_list(set_order)
        )));
    }
    Ok(())
}

/// `mergeKeyValueEqual`.
fn merge_key_value_equal(left: &Value, right: &Value, merge_key: &str) -> Result<bool> {
    if merge_key.is_empty() {
        return eq(left, right);
    }
    let l = as_map(left)?;
    let r = as_map(right)?;
    let Some(lv) = l.get(merge_key) else {
        return Err(no_merge_key(l, merge_key));
    };
    let Some(rv) = r.get(merge_key) else {
        return Err(no_merge_key(r, merge_key));
    };
    eq(lv, rv)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn dedup_like_go() {
        let mut v = vec![json!("a"), json!("a"), json!("c"), json!("b")];
        let n = dedup_in_place(&mut v).unwrap();
        assert_eq!(&v[..n], &[json!("a"), json!("b"), json!("c")]);
        assert_eq!(v[3], json!("b"));
        let mut v = vec![json!(1), json!(1.0), json!(1)];
        let n = dedup_in_place(&mut v).unwrap();
        assert_eq!(&v[..n], &[json!(1), json!(1.0)]);
    }

    #[test]
    fn retain_keys_strategies() {
        let meta = |s: &[&str]| PatchMeta {
            strategies: s.iter().map(|s| s.to_string()).collect(),
            merge_key: String::new(),
        };
        assert_eq!(other_strategy(&meta(&[])).unwrap(), "");
        assert_eq!(other_strategy(&meta(&["retainKeys"])).unwrap(), "");
        assert_eq!(
            other_strategy(&meta(&["merge", "retainKeys"])).unwrap(),
            "merge"
        );
        assert_eq!(
            other_strategy(&meta(&["a", "b", "c"]))
                .unwrap_err()
                .to_string(),
            "unexpected patch strategy: [a b c]"
        );
    }

    #[test]
    fn extract_keys() {
        assert_eq!(
            extract_key("$setElementOrder/containers", SET_ELEMENT_ORDER_PREFIX).unwrap(),
            "containers"
        );
        assert_eq!(
            extract_key("$setElementOrderX/containers", SET_ELEMENT_ORDER_PREFIX),
            Err(PatchError::BadPatchFormatForSetElementOrderList)
        );
        assert_eq!(
            extract_key(
                "$deleteFromPrimitiveList",
                DELETE_FROM_PRIMITIVE_LIST_PREFIX
            ),
            Err(PatchError::BadPatchFormatForPrimitiveList)
        );
    }
}
