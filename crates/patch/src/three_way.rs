//! The patches `kubectl apply` computes on the client: upstream's three-way strategic merge
//! patch (`strategicpatch.CreateThreeWayMergePatch` with `overwrite=true`) for built-in
//! types, and the three-way JSON merge patch (`jsonmergepatch.CreateThreeWayJSONMergePatch`)
//! for custom resources and other types the client has no schema for.
//!
//! Both take `original` (the last-applied configuration, `null` when there is none),
//! `modified` (the manifest as it will be applied, with its new last-applied annotation) and
//! `current` (the live object) and yield a patch that, applied by the server to the live
//! object, sets what `modified` sets and removes what `original` set and `modified` no
//! longer does, leaving fields set by others alone.
//!
//! The strategic patch is the union of two diffs: additions and changes from `current` to
//! `modified` (`diffMaps` ignoring deletions), and deletions from `original` to `modified`
//! (ignoring changes and additions), merged with upstream's client-side `mergeMap` (no
//! parallel-list merging, unmatched `null`s kept). Lists with the `merge` strategy are
//! diffed item by item on their merge key (`$patch: delete` items,
//! `$deleteFromPrimitiveList/<field>`, `$setElementOrder/<field>`), fields with `retainKeys`
//! get their `$retainKeys` list, as upstream builds them.

use serde_json::{Map, Value};

use api::gofmt::{GoType, v as go_v};
use api::schema::SchemaLookup;

use crate::gofmt::go_eq;
use crate::gosort::slice_stable;
use crate::schema_meta::{Node, PatchMeta, Schemas};
use crate::strategic::{
    DELETE_DIRECTIVE, DELETE_FROM_PRIMITIVE_LIST_PREFIX, DIRECTIVE_MARKER, MERGE_DIRECTIVE,
    REPLACE_DIRECTIVE, RETAIN_KEYS_DIRECTIVE, RETAIN_KEYS_STRATEGY, SET_ELEMENT_ORDER_PREFIX,
    remove_directives,
};

type Result<T> = std::result::Result<T, String>;

#[derive(Clone, Copy, Default)]
struct DiffOptions {
    set_element_order: bool,
    ignore_changes_and_additions: bool,
    ignore_deletions: bool,
    build_retain_keys_directive: bool,
}

/// `strategicpatch.CreateThreeWayMergePatch(original, modified, current, schema, true)`:
/// the strategic merge patch `kubectl apply` sends for a built-in type. `schema` is the
/// type's schema (e.g. `{"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"}`)
/// resolved through `lookup`. Errors carry upstream's messages.
pub fn three_way_strategic_merge_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
    schema: &Value,
    lookup: &dyn SchemaLookup,
) -> Result<Value> {
    let original = as_map(original)?;
    let modified = as_map(modified)?;
    let current = as_map(current)?;
    let differ = Differ {
        schemas: Schemas { lookup },
    };
    let root = differ.schemas.classify(schema);
    let delta = differ.diff_maps(
        &current,
        &modified,
        &root,
        DiffOptions {
            ignore_deletions: true,
            set_element_order: true,
            ..DiffOptions::default()
        },
    )?;
    let deletions = differ.diff_maps(
        &original,
        &modified,
        &root,
        DiffOptions {
            set_element_order: true,
            ignore_changes_and_additions: true,
            ..DiffOptions::default()
        },
    )?;
    let patch = differ.merge_map(deletions, delta, &root)?;
    Ok(Value::Object(patch))
}

/// `strategicpatch.CreateTwoWayMergePatch(original, modified, schema)` (with
/// `$setElementOrder` directives): the patch `kubectl edit` and `kubectl set` send for a
/// built-in type, `schema` resolved through `lookup` as for
/// [`three_way_strategic_merge_patch`] (`null`: no type information, maps merge and lists
/// replace). Preconditions (apiVersion, kind, name unchanged) are the caller's.
pub fn two_way_strategic_merge_patch(
    original: &Value,
    modified: &Value,
    schema: &Value,
    lookup: &dyn SchemaLookup,
) -> Result<Value> {
    let original = as_map(original)?;
    let modified = as_map(modified)?;
    let differ = Differ {
        schemas: Schemas { lookup },
    };
    let root = differ.schemas.classify(schema);
    let options = DiffOptions {
        set_element_order: true,
        ..DiffOptions::default()
    };
    Ok(Value::Object(
        differ.diff_maps(&original, &modified, &root, options)?,
    ))
}

/// `jsonmergepatch.CreateThreeWayJSONMergePatch(original, modified, current)` with the
/// preconditions kubectl sets (apiVersion, kind and metadata.name unchanged; their
/// violation is kubectl's "At least one of apiVersion, kind and name was changed").
pub fn three_way_json_merge_patch(
    original: &Value,
    modified: &Value,
    current: &Value,
) -> Result<Value> {
    let original = Value::Object(as_map(original)?);
    let modified = Value::Object(as_map(modified)?);
    let current = Value::Object(as_map(current)?);
    let add_and_change = keep_or_delete_null(&create_merge_patch(&current, &modified), false);
    let deletions = keep_or_delete_null(&create_merge_patch(&original, &modified), true);
    let mut patch = deletions;
    merge_into(&mut patch, add_and_change);
    let changed = patch.contains_key("apiVersion")
        || patch.contains_key("kind")
        || patch
            .get("metadata")
            .and_then(Value::as_object)
            .is_some_and(|m| m.contains_key("name"));
    if changed {
        return Err("At least one of apiVersion, kind and name was changed".to_string());
    }
    Ok(Value::Object(patch))
}

fn as_map(v: &Value) -> Result<Map<String, Value>> {
    match v {
        Value::Null => Ok(Map::new()),
        Value::Object(m) => Ok(m.clone()),
        _ => Err("invalid JSON document".to_string()),
    }
}

/// evanphx/json-patch's `CreateMergePatch` of two objects.
fn create_merge_patch(original: &Value, modified: &Value) -> Map<String, Value> {
    let mut patch = Map::new();
    let (Some(o), Some(m)) = (original.as_object(), modified.as_object()) else {
        return patch;
    };
    for (k, mv) in m {
        match o.get(k) {
            None => {
                patch.insert(k.clone(), mv.clone());
            }
            Some(ov) => match (ov, mv) {
                (Value::Object(_), Value::Object(_)) => {
                    let sub = create_merge_patch(ov, mv);
                    if !sub.is_empty() {
                        patch.insert(k.clone(), Value::Object(sub));
                    }
                }
                _ => {
                    if !json_equal(ov, mv) {
                        patch.insert(k.clone(), mv.clone());
                    }
                }
            },
        }
    }
    for k in o.keys() {
        if !m.contains_key(k) {
            patch.insert(k.clone(), Value::Null);
        }
    }
    patch
}

/// Equality of JSON values as Go compares decoded documents (numbers by value).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, p)| y.get(k).is_some_and(|q| json_equal(p, q)))
        }
        _ => a == b,
    }
}

/// `keepOrDeleteNullInObj`: only the `null`s (deletions) of a merge patch, or everything
/// but them.
fn keep_or_delete_null(m: &Map<String, Value>, keep_null: bool) -> Map<String, Value> {
    let mut out = Map::new();
    for (k, v) in m {
        match v {
            Value::Null => {
                if keep_null {
                    out.insert(k.clone(), Value::Null);
                }
            }
            Value::Object(sub) if sub.is_empty() => {
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
            Value::Object(sub) => {
                let filtered = keep_or_delete_null(sub, keep_null);
                if !filtered.is_empty() {
                    out.insert(k.clone(), Value::Object(filtered));
                }
            }
            _ => {
                if !keep_null {
                    out.insert(k.clone(), v.clone());
                }
            }
        }
    }
    out
}

/// JSON merge of a patch without `null`s into another patch.
fn merge_into(doc: &mut Map<String, Value>, patch: Map<String, Value>) {
    for (k, v) in patch {
        match (doc.get_mut(&k), v) {
            (Some(Value::Object(d)), Value::Object(p)) => merge_into(d, p),
            (_, v) => {
                doc.insert(k, v);
            }
        }
    }
}

fn bad_arg_type(expected: &str, actual: &Value) -> String {
    format!(
        "expected a {expected}, but received a {}",
        GoType::of(actual).name()
    )
}

fn no_merge_key(m: &Map<String, Value>, key: &str) -> String {
    format!(
        "map: {} does not contain declared merge key: {key}",
        api::gofmt::v_map(m)
    )
}

/// `extractRetainKeysPatchStrategy`.
fn retain_keys_strategy(strategies: &[String]) -> Result<(bool, String)> {
    match strategies {
        [] => Ok((false, String::new())),
        [one] if one == RETAIN_KEYS_STRATEGY => Ok((true, String::new())),
        [one] => Ok((false, one.clone())),
        [a, b] if a == RETAIN_KEYS_STRATEGY => Ok((true, b.clone())),
        [a, b] if b == RETAIN_KEYS_STRATEGY => Ok((true, a.clone())),
        _ => Err(format!(
            "unexpected patch strategy: [{}]",
            strategies.join(" ")
        )),
    }
}

/// `sort.Sort` of scalars by their `%v` (a stable sort: equal renderings are equal values
/// for the lists patches hold).
fn sort_scalars(list: &mut [Value]) {
    list.sort_by_cached_key(go_v);
}

/// Upstream's `deduplicateScalars` (which moves the last item into a duplicate's place).
fn deduplicate_scalars(mut s: Vec<Value>) -> Vec<Value> {
    let mut length = s.len().saturating_sub(1);
    let mut i = 0;
    while i < length {
        let mut j = i + 1;
        while j <= length {
            if go_eq(&s[i], &s[j]) == Some(true) {
                s[j] = s[length].clone();
                s.truncate(length);
                length = length.saturating_sub(1);
            } else {
                j += 1;
            }
        }
        i += 1;
    }
    s
}

/// The Go type of the items of lists, as `sliceElementType` checks them.
fn slice_element_type(lists: &[&[Value]]) -> Result<GoType> {
    let mut prev: Option<GoType> = None;
    for list in lists {
        for item in *list {
            let t = GoType::of(item);
            match prev {
                None => {
                    if t == GoType::Slice {
                        return Err("lists of lists are not supported".to_string());
                    }
                    prev = Some(t);
                }
                Some(p) if p != t => {
                    let rendered: Vec<String> =
                        lists.iter().map(|l| api::gofmt::v_list(l)).collect();
                    return Err(format!(
                        "list element types are not identical: [{}]",
                        rendered.join(" ")
                    ));
                }
                Some(_) => {}
            }
        }
    }
    prev.ok_or_else(|| "no elements in any of the given slices".to_string())
}

/// `index`: where an item is in a list (by merge key for maps).
fn index_of(list: &[Value], item: &Value, merge_key: &str, kind: GoType) -> Option<usize> {
    let key = |v: &Value| -> Value {
        if kind == GoType::Map {
            v.get(merge_key).cloned().unwrap_or(Value::Null)
        } else {
            v.clone()
        }
    };
    let wanted = key(item);
    list.iter()
        .position(|v| go_eq(&wanted, &key(v)) == Some(true))
}

struct Differ<'s> {
    schemas: Schemas<'s>,
}

impl<'s> Differ<'s> {
    /// `diffMaps`.
    fn diff_maps(
        &self,
        original: &Map<String, Value>,
        modified: &Map<String, Value>,
        node: &Node<'s>,
        opts: DiffOptions,
    ) -> Result<Map<String, Value>> {
        let mut patch = Map::new();
        let mut retain_keys: Vec<Value> = Vec::new();
        for (key, modified_value) in modified {
            if opts.build_retain_keys_directive && !modified_value.is_null() {
                retain_keys.push(Value::String(key.clone()));
            }
            let Some(original_value) = original.get(key) else {
                if !opts.ignore_changes_and_additions {
                    patch.insert(key.clone(), modified_value.clone());
                }
                continue;
            };
            if key == DIRECTIVE_MARKER {
                match (original_value.as_str(), modified_value.as_str()) {
                    (Some(o), Some(m)) => {
                        if o != m {
                            patch.insert(key.clone(), modified_value.clone());
                        }
                        continue;
                    }
                    _ => return Err(format!("invalid value for special key: {DIRECTIVE_MARKER}")),
                }
            }
            if GoType::of(original_value) != GoType::of(modified_value) {
                if !opts.ignore_changes_and_additions {
                    patch.insert(key.clone(), modified_value.clone());
                }
                continue;
            }
            match (original_value, modified_value) {
                (Value::Object(o), Value::Object(m)) => {
                    self.handle_map_diff(key, o, m, &mut patch, node, opts)?;
                }
                (Value::Array(o), Value::Array(m)) => {
                    self.handle_slice_diff(key, o, m, &mut patch, node, opts)?;
                }
                _ => replace_if_not_equal(key, original_value, modified_value, &mut patch, opts),
            }
        }
        if !opts.ignore_deletions {
            for key in original.keys() {
                if !modified.contains_key(key) {
                    patch.insert(key.clone(), Value::Null);
                }
            }
        }
        let has_additional = original
            .iter()
            .any(|(k, v)| !v.is_null() && !modified.contains_key(k));
        if !retain_keys.is_empty() && (!patch.is_empty() || has_additional) {
            sort_scalars(&mut retain_keys);
            patch.insert(RETAIN_KEYS_DIRECTIVE.to_string(), Value::Array(retain_keys));
        }
        Ok(patch)
    }

    fn handle_map_diff(
        &self,
        key: &str,
        original: &Map<String, Value>,
        modified: &Map<String, Value>,
        patch: &mut Map<String, Value>,
        node: &Node<'s>,
        mut opts: DiffOptions,
    ) -> Result<()> {
        let (sub, meta) = match self.schemas.lookup_struct(node, key) {
            Ok(found) => found,
            Err(e) => {
                if json_equal(
                    &Value::Object(original.clone()),
                    &Value::Object(modified.clone()),
                ) {
                    return Ok(());
                }
                return Err(e);
            }
        };
        let (retain, strategy) = retain_keys_strategy(&meta.strategies)?;
        opts.build_retain_keys_directive = retain;
        if strategy == REPLACE_DIRECTIVE {
            if !opts.ignore_changes_and_additions {
                patch.insert(key.to_string(), Value::Object(modified.clone()));
            }
            return Ok(());
        }
        let value = self.diff_maps(original, modified, &sub, opts)?;
        if !value.is_empty() {
            patch.insert(key.to_string(), Value::Object(value));
        }
        Ok(())
    }

    fn handle_slice_diff(
        &self,
        key: &str,
        original: &[Value],
        modified: &[Value],
        patch: &mut Map<String, Value>,
        node: &Node<'s>,
        mut opts: DiffOptions,
    ) -> Result<()> {
        let (item, meta) = match self.schemas.lookup_slice(node, key) {
            Ok(found) => found,
            Err(e) => {
                if json_equal(
                    &Value::Array(original.to_vec()),
                    &Value::Array(modified.to_vec()),
                ) {
                    return Ok(());
                }
                return Err(e);
            }
        };
        let (retain, strategy) = retain_keys_strategy(&meta.strategies)?;
        if strategy != MERGE_DIRECTIVE {
            replace_if_not_equal(
                key,
                &Value::Array(original.to_vec()),
                &Value::Array(modified.to_vec()),
                patch,
                opts,
            );
            return Ok(());
        }
        opts.build_retain_keys_directive = retain;
        let (add, delete, order) =
            self.diff_lists(original, modified, &item, &meta.merge_key, opts)?;
        if !add.is_empty() {
            patch.insert(key.to_string(), Value::Array(add));
        }
        if !delete.is_empty() {
            patch.insert(
                format!("{DELETE_FROM_PRIMITIVE_LIST_PREFIX}/{key}"),
                Value::Array(delete),
            );
        }
        if !order.is_empty() {
            patch.insert(
                format!("{SET_ELEMENT_ORDER_PREFIX}/{key}"),
                Value::Array(order),
            );
        }
        Ok(())
    }

    /// `diffLists`: the patch list, the parallel deletion list (scalars) and the
    /// `$setElementOrder` list of a merged list.
    #[allow(clippy::type_complexity)]
    fn diff_lists(
        &self,
        original: &[Value],
        modified: &[Value],
        item: &Node<'s>,
        merge_key: &str,
        opts: DiffOptions,
    ) -> Result<(Vec<Value>, Vec<Value>, Vec<Value>)> {
        if original.is_empty() {
            if modified.is_empty() || opts.ignore_changes_and_additions {
                return Ok((vec![], vec![], vec![]));
            }
            return Ok((modified.to_vec(), vec![], vec![]));
        }
        let kind = slice_element_type(&[original, modified])?;
        match kind {
            GoType::Map => {
                let (patch, delete) =
                    self.diff_lists_of_maps(original, modified, item, merge_key, opts)?;
                let mut patch = normalize_slice_order(patch, modified, merge_key, kind)?;
                let order_same = is_order_same(original, modified, merge_key);
                patch.extend(delete);
                let mut order = Vec::new();
                if opts.set_element_order
                    && ((!opts.ignore_changes_and_additions && (!patch.is_empty() || !order_same))
                        || (!opts.ignore_deletions && !patch.is_empty()))
                {
                    for v in modified {
                        let mut m = Map::new();
                        m.insert(
                            merge_key.to_string(),
                            v.get(merge_key).cloned().unwrap_or(Value::Null),
                        );
                        order.push(Value::Object(m));
                    }
                }
                Ok((patch, vec![], order))
            }
            GoType::Slice => Err("lists of lists are not supported".to_string()),
            _ => {
                let (add, delete) = diff_lists_of_scalars(original, modified, opts);
                let add = normalize_slice_order(add, modified, merge_key, kind)?;
                let mut order = Vec::new();
                if opts.set_element_order
                    && ((!opts.ignore_deletions && !delete.is_empty())
                        || (!opts.ignore_changes_and_additions
                            && !json_equal(
                                &Value::Array(original.to_vec()),
                                &Value::Array(modified.to_vec()),
                            )))
                {
                    order = modified.to_vec();
                }
                Ok((add, delete, order))
            }
        }
    }

    /// `diffListsOfMaps`: changes and additions, and `$patch: delete` items.
    #[allow(clippy::type_complexity)]
    fn diff_lists_of_maps(
        &self,
        original: &[Value],
        modified: &[Value],
        item: &Node<'s>,
        merge_key: &str,
        opts: DiffOptions,
    ) -> Result<(Vec<Value>, Vec<Value>)> {
        let keyed = |list: &[Value]| -> Result<Vec<(String, Map<String, Value>, Value)>> {
            let mut out = Vec::new();
            for v in list {
                let Value::Object(m) = v else {
                    return Err(bad_arg_type("map[string]interface {}", v));
                };
                let Some(k) = m.get(merge_key) else {
                    return Err(no_merge_key(m, merge_key));
                };
                out.push((go_v(k), m.clone(), k.clone()));
            }
            out.sort_by(|a, b| a.0.cmp(&b.0));
            Ok(out)
        };
        let original = keyed(original)?;
        let modified = keyed(modified)?;
        let mut patch = Vec::new();
        let mut deletions = Vec::new();
        let (mut i, mut j) = (0, 0);
        loop {
            let o = original.get(i);
            let m = modified.get(j);
            match (o, m) {
                (None, None) => break,
                (Some((ok, om, _)), Some((mk, mm, mv))) if ok == mk => {
                    let mut value = self.diff_maps(om, mm, item, opts)?;
                    if !value.is_empty() {
                        value.insert(merge_key.to_string(), mv.clone());
                        patch.push(Value::Object(value));
                    }
                    i += 1;
                    j += 1;
                }
                (None, Some((_, mm, _))) => {
                    if !opts.ignore_changes_and_additions {
                        patch.push(Value::Object(mm.clone()));
                    }
                    j += 1;
                }
                (Some((ok, _, _)), Some((mk, mm, _))) if ok > mk => {
                    if !opts.ignore_changes_and_additions {
                        patch.push(Value::Object(mm.clone()));
                    }
                    j += 1;
                }
                (Some((_, _, ov)), _) => {
                    if !opts.ignore_deletions {
                        let mut d = Map::new();
                        d.insert(merge_key.to_string(), ov.clone());
                        d.insert(
                            DIRECTIVE_MARKER.to_string(),
                            Value::String(DELETE_DIRECTIVE.to_string()),
                        );
                        deletions.push(Value::Object(d));
                    }
                    i += 1;
                }
            }
        }
        Ok((patch, deletions))
    }

    /// Upstream's client-side `mergeMap` (`MergeOptions{}`: parallel lists are carried,
    /// not applied; unmatched `null`s are kept).
    fn merge_map(
        &self,
        mut original: Map<String, Value>,
        mut patch: Map<String, Value>,
        node: &Node<'s>,
    ) -> Result<Map<String, Value>> {
        if let Some(directive) = patch.get(DIRECTIVE_MARKER).cloned() {
            return match directive.as_str() {
                Some(REPLACE_DIRECTIVE) => {
                    patch.remove(DIRECTIVE_MARKER);
                    Ok(patch)
                }
                Some(DELETE_DIRECTIVE) => Ok(Map::new()),
                _ => Err(format!(
                    "Unknown patch type: {} in map: {}",
                    go_v(&directive),
                    api::gofmt::v_map(&patch)
                )),
            };
        }
        // $retainKeys: carried over (both diffs build the same list).
        if let Some(retain) = patch.remove(RETAIN_KEYS_DIRECTIVE) {
            match original.get(RETAIN_KEYS_DIRECTIVE) {
                Some(existing) if !json_equal(existing, &retain) => {
                    return Err(format!(
                        "{} and {} are not deep equal: this may happen when calculating the 3-way diff patch",
                        go_v(existing),
                        go_v(&retain)
                    ));
                }
                Some(_) => {}
                None => {
                    original.insert(RETAIN_KEYS_DIRECTIVE.to_string(), retain);
                }
            }
        }
        self.merge_set_element_order(&mut original, &mut patch, node)?;
        for (k, patch_value) in patch {
            if k.starts_with(DELETE_FROM_PRIMITIVE_LIST_PREFIX) {
                original.insert(k, patch_value);
                continue;
            }
            if patch_value.is_null() {
                original.insert(k, Value::Null);
                continue;
            }
            let Some(original_value) = original.remove(&k) else {
                if let Some(v) = remove_directives(patch_value) {
                    original.insert(k, v);
                }
                continue;
            };
            if GoType::of(&original_value) != GoType::of(&patch_value) {
                if let Some(v) = remove_directives(patch_value) {
                    original.insert(k, v);
                }
                continue;
            }
            match (original_value, patch_value) {
                (Value::Object(o), Value::Object(p)) => {
                    let (sub, meta) = self.schemas.lookup_struct(node, &k)?;
                    let (_, strategy) = retain_keys_strategy(&meta.strategies)?;
                    let merged = if strategy == REPLACE_DIRECTIVE {
                        p
                    } else {
                        self.merge_map(o, p, &sub)?
                    };
                    original.insert(k, Value::Object(merged));
                }
                (Value::Array(o), Value::Array(p)) => {
                    let (sub, meta) = self.schemas.lookup_slice(node, &k)?;
                    let merged = self.merge_slice_handler(o, p, &sub, &meta)?;
                    original.insert(k, Value::Array(merged));
                }
                (_, p) => {
                    if let Some(v) = remove_directives(p) {
                        original.insert(k, v);
                    }
                }
            }
        }
        Ok(original)
    }

    /// `mergePatchIntoOriginal` without parallel-list merging: `$setElementOrder` lists move
    /// to the result, and the lists they order are merged and ordered by them.
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
            let Some(order) = patch.remove(&key) else {
                continue;
            };
            match original.get(&key) {
                Some(existing) if !json_equal(existing, &order) => {
                    return Err("invalid patch format of setElementOrder list".to_string());
                }
                Some(_) => {}
                None => {
                    original.insert(key.clone(), order.clone());
                }
            }
            let Value::Array(order) = order else {
                return Err(bad_arg_type("[]interface {}", &order));
            };
            let field = key
                .strip_prefix(SET_ELEMENT_ORDER_PREFIX)
                .and_then(|k| k.strip_prefix('/'))
                .ok_or_else(|| format!("failed to find the key in {key}"))?
                .to_string();
            let original_list = match original.get(&field) {
                None => None,
                Some(Value::Array(l)) => Some(l.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let patch_list = match patch.get(&field) {
                None => None,
                Some(Value::Array(l)) => Some(l.clone()),
                Some(other) => return Err(bad_arg_type("[]interface {}", other)),
            };
            let (sub, meta) = self.schemas.lookup_slice(node, &field)?;
            let merged = match (&original_list, &patch_list) {
                (Some(o), None) => o.clone(),
                (None, Some(p)) => match remove_directives(Value::Array(p.clone())) {
                    Some(Value::Array(v)) => v,
                    _ => continue,
                },
                (Some(o), Some(p)) => {
                    self.merge_slice_handler(o.clone(), p.clone(), &sub, &meta)?
                }
                (None, None) => continue,
            };
            let merge_key = meta.merge_key.as_str();
            let (patch_items, server_only) = partition(&merged, &order, merge_key);
            let o = original_list.unwrap_or_default();
            let p = patch_list.unwrap_or_default();
            let kind = slice_element_type(&[&o, &p])?;
            let both =
                normalize_element_order(patch_items, server_only, &order, &o, merge_key, kind)?;
            original.insert(field.clone(), Value::Array(both));
            patch.remove(&field);
        }
        Ok(())
    }

    /// `mergeSliceHandler` (never a deletion list on the client).
    fn merge_slice_handler(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        item: &Node<'s>,
        meta: &PatchMeta,
    ) -> Result<Vec<Value>> {
        let (_, strategy) = retain_keys_strategy(&meta.strategies)?;
        if strategy != MERGE_DIRECTIVE {
            return Ok(patch);
        }
        self.merge_slice(original, patch, item, &meta.merge_key)
    }

    /// `mergeSlice` without parallel lists.
    fn merge_slice(
        &self,
        original: Vec<Value>,
        patch: Vec<Value>,
        item: &Node<'s>,
        merge_key: &str,
    ) -> Result<Vec<Value>> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let kind = slice_element_type(&[&original, &patch])?;
        let (merged, original, patch) = if kind != GoType::Map {
            let mut both = original.clone();
            both.extend(patch.iter().cloned());
            (deduplicate_scalars(both), original, patch)
        } else {
            if merge_key.is_empty() {
                return Err("cannot merge lists without merge key".to_string());
            }
            let (original, patch) = merge_special_elements(original, patch, merge_key)?;
            let mut merged = original.clone();
            for p in &patch {
                let Value::Object(pm) = p else {
                    return Err(bad_arg_type("map[string]interface {}", p));
                };
                let Some(value) = pm.get(merge_key) else {
                    return Err(no_merge_key(pm, merge_key));
                };
                let found = merged.iter().position(|o| {
                    o.get(merge_key)
                        .is_some_and(|ov| go_eq(ov, value) == Some(true))
                });
                match found {
                    Some(idx) => {
                        let Value::Object(om) = merged[idx].clone() else {
                            return Err(format!("value for key {idx} is not a map"));
                        };
                        let m = self.merge_map(om, pm.clone(), item)?;
                        merged[idx] = Value::Object(m);
                    }
                    None => merged.push(p.clone()),
                }
            }
            (merged, original, patch)
        };
        let (patch_items, server_only) = partition(&merged, &patch, merge_key);
        normalize_element_order(patch_items, server_only, &patch, &original, merge_key, kind)
    }
}

fn replace_if_not_equal(
    key: &str,
    original: &Value,
    modified: &Value,
    patch: &mut Map<String, Value>,
    opts: DiffOptions,
) {
    if opts.ignore_changes_and_additions || json_equal(original, modified) {
        return;
    }
    patch.insert(key.to_string(), modified.clone());
}

fn is_order_same(original: &[Value], modified: &[Value], merge_key: &str) -> bool {
    original.len() == modified.len()
        && original
            .iter()
            .zip(modified)
            .all(|(o, m)| match (o.get(merge_key), m.get(merge_key)) {
                (Some(a), Some(b)) => go_eq(a, b) == Some(true),
                _ => false,
            })
}

/// `diffListsOfScalars`: additions and (deduplicated) deletions.
fn diff_lists_of_scalars(
    original: &[Value],
    modified: &[Value],
    opts: DiffOptions,
) -> (Vec<Value>, Vec<Value>) {
    let mut o: Vec<Value> = original.to_vec();
    let mut m: Vec<Value> = modified.to_vec();
    sort_scalars(&mut o);
    sort_scalars(&mut m);
    let (mut i, mut j) = (0, 0);
    let mut add = Vec::new();
    let mut delete = Vec::new();
    loop {
        match (o.get(i), m.get(j)) {
            (None, None) => break,
            (Some(a), Some(b)) if go_v(a) == go_v(b) => {
                i += 1;
                j += 1;
            }
            (None, Some(b)) => {
                if !opts.ignore_changes_and_additions {
                    add.push(b.clone());
                }
                j += 1;
            }
            (Some(a), Some(b)) if go_v(a) > go_v(b) => {
                if !opts.ignore_changes_and_additions {
                    add.push(b.clone());
                }
                j += 1;
            }
            (Some(a), _) => {
                if !opts.ignore_deletions {
                    delete.push(a.clone());
                }
                i += 1;
            }
        }
    }
    (add, deduplicate_scalars(delete))
}

/// `mergeSliceWithSpecialElements`: applies `$patch: delete|replace` items of the patch.
fn merge_special_elements(
    mut original: Vec<Value>,
    patch: Vec<Value>,
    merge_key: &str,
) -> Result<(Vec<Value>, Vec<Value>)> {
    let mut plain = Vec::new();
    let mut replace = false;
    for v in patch {
        let Value::Object(m) = &v else {
            return Err(bad_arg_type("map[string]interface {}", &v));
        };
        match m.get(DIRECTIVE_MARKER) {
            None => plain.push(v),
            Some(d) if d.as_str() == Some(DELETE_DIRECTIVE) => {
                let Some(value) = m.get(merge_key) else {
                    return Err(no_merge_key(m, merge_key));
                };
                original.retain(|o| {
                    o.get(merge_key)
                        .is_none_or(|ov| go_eq(ov, value) != Some(true))
                });
            }
            Some(d) if d.as_str() == Some(REPLACE_DIRECTIVE) => replace = true,
            Some(d) if d.as_str() == Some(MERGE_DIRECTIVE) => {
                return Err("merging lists cannot yet be specified in the patch".to_string());
            }
            Some(d) => {
                return Err(format!(
                    "Unknown patch type: {} in map: {}",
                    go_v(d),
                    api::gofmt::v_map(m)
                ));
            }
        }
    }
    if replace {
        return Ok((plain, Vec::new()));
    }
    Ok((original, plain))
}

/// The items of `merged` present in `by` (by merge key for maps), and the others.
fn partition(merged: &[Value], by: &[Value], merge_key: &str) -> (Vec<Value>, Vec<Value>) {
    let mut present = Vec::new();
    let mut others = Vec::new();
    for v in merged {
        let found = if merge_key.is_empty() {
            by.iter().any(|b| go_eq(b, v) == Some(true))
        } else {
            let key = v.get(merge_key);
            by.iter().any(|b| match (b.get(merge_key), key) {
                (Some(x), Some(y)) => go_eq(x, y) == Some(true),
                _ => false,
            })
        };
        if found {
            present.push(v.clone());
        } else {
            others.push(v.clone());
        }
    }
    (present, others)
}

/// `normalizeSliceOrder`: `to_sort` in the order of `order` (deletion items last).
fn normalize_slice_order(
    mut to_sort: Vec<Value>,
    order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let mut to_delete = Vec::new();
    if kind == GoType::Map {
        for v in to_sort.iter().chain(order) {
            let Value::Object(m) = v else {
                return Err(bad_arg_type("map[string]interface {}", v));
            };
            if !m.contains_key(merge_key) {
                return Err(no_merge_key(m, merge_key));
            }
        }
        let (keep, delete): (Vec<Value>, Vec<Value>) = to_sort.into_iter().partition(|v| {
            v.get(DIRECTIVE_MARKER).and_then(Value::as_str) != Some(DELETE_DIRECTIVE)
        });
        to_sort = keep;
        to_delete = delete;
    }
    let less = |a: &Value, b: &Value| -> bool {
        match (
            index_of(order, a, merge_key, kind),
            index_of(order, b, merge_key, kind),
        ) {
            (Some(i), Some(j)) => i < j,
            _ => true,
        }
    };
    slice_stable(&mut to_sort, &less);
    to_sort.extend(to_delete);
    Ok(to_sort)
}

/// `normalizeElementOrder`: the patch's items in the patch's order, the server-only items
/// in the server's order, interleaved (`mergeSortedSlice`).
fn normalize_element_order(
    patch: Vec<Value>,
    server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    merge_key: &str,
    kind: GoType,
) -> Result<Vec<Value>> {
    let patch = normalize_slice_order(patch, patch_order, merge_key, kind)?;
    let server_only = normalize_slice_order(server_only, server_order, merge_key, kind)?;
    let mut out = Vec::with_capacity(patch.len() + server_only.len());
    let (mut i, mut j) = (0, 0);
    while i < server_only.len() || j < patch.len() {
        if i >= server_only.len() {
            out.push(patch[j].clone());
            j += 1;
        } else if j >= patch.len() {
            out.push(server_only[i].clone());
            i += 1;
        } else {
            let left = index_of(server_order, &server_only[i], merge_key, kind);
            let right = index_of(server_order, &patch[j], merge_key, kind);
            match (left, right) {
                (Some(l), Some(r)) if l < r => {
                    out.push(server_only[i].clone());
                    i += 1;
                }
                _ => {
                    out.push(patch[j].clone());
                    j += 1;
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    fn deployment() -> Value {
        json!({"$ref": "#/components/schemas/io.k8s.api.apps.v1.Deployment"})
    }

    fn smp(original: Value, modified: Value, current: Value) -> Value {
        three_way_strategic_merge_patch(
            &original,
            &modified,
            &current,
            &deployment(),
            api::schema::builtin(),
        )
        .unwrap()
    }

    #[test]
    fn two_way_diffs_with_and_without_schema() {
        let lookup = api::schema::builtin();
        let d = |image: &str| {
            json!({"spec": {"template": {"spec": {"containers": [
                {"name": "a", "image": "x"}, {"name": "b", "image": image}]}}}})
        };
        assert_eq!(
            two_way_strategic_merge_patch(&d("y"), &d("z"), &deployment(), lookup).unwrap(),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
                "containers": [{"image": "z", "name": "b"}]}}}})
        );
        // No type information: maps merge, lists replace.
        let o = json!({"a": {"b": 1, "c": 2}, "l": [1, 2]});
        let m = json!({"a": {"b": 1}, "l": [2]});
        assert_eq!(
            two_way_strategic_merge_patch(&o, &m, &Value::Null, lookup).unwrap(),
            json!({"a": {"c": null}, "l": [2]})
        );
    }

    #[test]
    fn unchanged_is_empty() {
        let m = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "a", "labels": {"x": "1"}},
            "spec": {"replicas": 2}});
        let mut current = m.clone();
        current["metadata"]["uid"] = json!("u");
        current["spec"]["strategy"] = json!({"type": "RollingUpdate"});
        assert_eq!(smp(m.clone(), m.clone(), current), json!({}));
    }

    #[test]
    fn removed_field_deleted_other_managers_kept() {
        let original = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2"}}, "spec": {"replicas": 2}});
        let modified =
            json!({"metadata": {"name": "a", "labels": {"x": "1"}}, "spec": {"replicas": 3}});
        let current = json!({"metadata": {"name": "a", "labels": {"x": "1", "y": "2", "z": "other"}}, "spec": {"replicas": 2, "paused": true}});
        assert_eq!(
            smp(original, modified, current),
            json!({"metadata": {"labels": {"y": null}}, "spec": {"replicas": 3}})
        );
    }

    #[test]
    fn merge_lists_by_key() {
        let c = |names: &[(&str, &str)]| -> Value {
            Value::Array(
                names
                    .iter()
                    .map(|(n, i)| json!({"name": n, "image": i}))
                    .collect(),
            )
        };
        let original =
            json!({"spec": {"template": {"spec": {"containers": c(&[("a", "1"), ("b", "1")])}}}});
        let modified = json!({"spec": {"template": {"spec": {"containers": c(&[("a", "2")])}}}});
        let current =
            json!({"spec": {"template": {"spec": {"containers": c(&[("a", "1"), ("b", "1")])}}}});
        assert_eq!(
            smp(original, modified, current),
            json!({"spec": {"template": {"spec": {
                "$setElementOrder/containers": [{"name": "a"}],
                "containers": [{"name": "a", "image": "2"}, {"name": "b", "$patch": "delete"}]
            }}}})
        );
    }

    #[test]
    fn primitive_merge_list_deletion() {
        // PodSpec.finalizers is not a merge list; ObjectMeta.finalizers is (merge strategy).
        let original = json!({"metadata": {"finalizers": ["a", "b"]}});
        let modified = json!({"metadata": {"finalizers": ["a"]}});
        let current = json!({"metadata": {"finalizers": ["a", "b", "c"]}});
        assert_eq!(
            smp(original, modified, current),
            json!({"metadata": {
                "$deleteFromPrimitiveList/finalizers": ["b"],
                "$setElementOrder/finalizers": ["a"]
            }})
        );
    }

    #[test]
    fn retain_keys() {
        // DeploymentStrategy has retainKeys.
        let original = json!({"spec": {"strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1}}}});
        let modified = json!({"spec": {"strategy": {"type": "Recreate"}}});
        let current = original.clone();
        assert_eq!(
            smp(original, modified, current),
            json!({"spec": {"strategy": {"$retainKeys": ["type"], "rollingUpdate": null, "type": "Recreate"}}})
        );
    }

    #[test]
    fn json_merge_three_way() {
        let original = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"a": 1, "b": [1, 2]}});
        let modified = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"b": [1], "c": {}}});
        let current = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "a"}, "spec": {"a": 1, "b": [1, 2], "d": 4}});
        assert_eq!(
            three_way_json_merge_patch(&original, &modified, &current).unwrap(),
            json!({"spec": {"a": null, "b": [1], "c": {}}})
        );
        let renamed = json!({"apiVersion": "x/v1", "kind": "K", "metadata": {"name": "b"}});
        assert_eq!(
            three_way_json_merge_patch(&original, &renamed, &current).unwrap_err(),
            "At least one of apiVersion, kind and name was changed"
        );
    }

    #[test]
    fn scalars_dedup_like_go() {
        let v = deduplicate_scalars(vec![json!("a"), json!("b"), json!("a"), json!("c")]);
        assert_eq!(v, vec![json!("a"), json!("b"), json!("c")]);
    }
}
