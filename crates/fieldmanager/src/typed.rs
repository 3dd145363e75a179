//! Walks over values guided by their schema, as structured-merge-diff's `typed` package does
//! them: the field set an object sets, validation of applied configurations, comparison of
//! two objects, the apply merge, removal of fields, and reconciling field sets with schema
//! changes. Plus the zero values of typed (built-in) objects.
//!
//! Applied configurations are validated before they are walked. Stored objects are walked
//! leniently: upstream only ever sees them valid, so where it would fail on them (an
//! undeclared field, a list item without its keys) these walks deduce the field or address
//! the item by index instead.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

use serde_json::{Map, Value};

use crate::path::{PathElement, sort_key_fields};
use crate::schema::{Atom, ListType, MapType, ObjectSchema, Rel, Scalar, TypeRef, reference};
use crate::set::FieldSet;
use crate::value::{self, go_sharp_v, is_empty_map};
use api::gofmt::{self, GoType, go_quote};

/// How deep zero values are built (non-pointer structs cannot nest endlessly; this guards
/// against cyclic schemas).
const MAX_ZERO_DEPTH: usize = 64;

static NULL: Value = Value::Null;

/// The fields added, modified and removed between two objects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Comparison {
    pub removed: FieldSet,
    pub modified: FieldSet,
    pub added: FieldSet,
}

impl Comparison {
    /// The comparison without the given fields and everything under them.
    pub(crate) fn excluding(self, fields: &FieldSet) -> Comparison {
        if fields.is_empty() {
            return self;
        }
        Comparison {
            removed: self.removed.recursive_difference(fields),
            modified: self.modified.recursive_difference(fields),
            added: self.added.recursive_difference(fields),
        }
    }
}

/// One validation error: where (upstream's path string) and what.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ValidationError {
    pub path: String,
    pub message: String,
}

impl ValidationError {
    fn new(message: String) -> Self {
        ValidationError {
            path: String::new(),
            message,
        }
    }
}

/// Validation errors joined as upstream's `ValidationErrors.Error()` does.
pub(crate) fn join_errors(errs: &[ValidationError]) -> String {
    let one = |e: &ValidationError| {
        if e.path.is_empty() {
            e.message.clone()
        } else {
            format!("{}: {}", e.path, e.message)
        }
    };
    match errs {
        [e] => one(e),
        _ => {
            let mut lines = vec!["errors:".to_string()];
            lines.extend(errs.iter().map(|e| format!("  {}", one(e))));
            lines.join("\n")
        }
    }
}

fn prefixed(mut errs: Vec<ValidationError>, prefix: &str) -> Vec<ValidationError> {
    for e in &mut errs {
        e.path = format!("{prefix}{}", e.path);
    }
    errs
}

/// Go's `%q` of a string slice: `["a" "b"]`.
fn quote_slice(items: &[&str]) -> String {
    let parts: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[{}]", parts.join(" "))
}

impl<'a> ObjectSchema<'a> {
    // ---------------------------------------------------------------- list items

    /// The path element of a list item (upstream's `listItemToPathElement`).
    pub(crate) fn item_pe(&self, l: &ListType<'a>, item: &Value) -> Result<PathElement, String> {
        if l.rel != Rel::Associative {
            return Err("invalid indexing of non-associative list".to_string());
        }
        if l.keys.is_empty() {
            return match item {
                Value::Object(_) => {
                    Err("associative list without keys has an element that's a map type".into())
                }
                Value::Array(_) => {
                    Err("not supported: associative list with lists as elements".into())
                }
                Value::Null => Err(
                    "associative list without keys has an element that's an explicit null".into(),
                ),
                v => Ok(PathElement::Value(v.clone())),
            };
        }
        let obj = match item {
            Value::Null => {
                return Err("associative list with keys may not have a null element".into());
            }
            Value::Object(m) => m,
            _ => return Err("associative list with keys may not have non-map elements".into()),
        };
        let mut fields = Vec::with_capacity(l.keys.len());
        for key in &l.keys {
            if let Some(v) = obj.get(*key) {
                fields.push((key.to_string(), v.clone()));
                continue;
            }
            match self.key_default(l, key) {
                Err(e) => return Err(format!("couldn't find default value for {key}: {e}")),
                Ok(Some(d)) => fields.push((key.to_string(), d.clone())),
                Ok(None) => {}
            }
        }
        if fields.is_empty() {
            return Err(format!(
                "associative list with keys has an element that omits all key fields {} (and doesn't have default values for any key fields)",
                quote_slice(&l.keys)
            ));
        }
        sort_key_fields(&mut fields);
        Ok(PathElement::Key(fields))
    }

    fn key_default(&self, l: &ListType<'a>, key: &str) -> Result<Option<&'a Value>, String> {
        match self.resolve(l.elem).map {
            Some(m) => Ok(m.field_default(key)),
            None => Err("associative list may not have non-map types".to_string()),
        }
    }

    /// The path element of an item of a stored object: by key or value, or by index when the
    /// item cannot be keyed.
    fn item_pe_lenient(&self, l: &ListType<'a>, i: usize, item: &Value) -> PathElement {
        self.item_pe(l, item)
            .unwrap_or(PathElement::Index(i64::try_from(i).unwrap_or(i64::MAX)))
    }

    // ---------------------------------------------------------------- field sets

    /// The fields `v` sets (upstream's `ToFieldSet`).
    pub(crate) fn field_set(&self, v: &Value) -> FieldSet {
        let mut set = FieldSet::new();
        let mut path = Vec::new();
        self.fs_walk(v, self.root_ref(), &mut path, &mut set);
        set
    }

    fn fs_walk(&self, v: &Value, tr: TypeRef<'a>, path: &mut Vec<PathElement>, set: &mut FieldSet) {
        let atom = self.resolve(tr).deduce(Some(v));
        if let Some(m) = &atom.map {
            if m.rel == Rel::Atomic {
                set.insert(path);
                return;
            }
            let Some(obj) = v.as_object() else {
                return;
            };
            for (k, child) in obj {
                let declared = m.field(k);
                path.push(PathElement::Field(k.clone()));
                self.fs_walk(child, m.type_of_lenient(k), path, set);
                if child.is_null() || is_empty_map(child) || declared.is_none() {
                    set.insert(path);
                }
                path.pop();
            }
        } else if atom.scalar.is_some() {
            set.insert(path);
        } else if let Some(l) = &atom.list {
            if l.rel == Rel::Atomic {
                set.insert(path);
                return;
            }
            let Some(items) = v.as_array() else {
                return;
            };
            let pes: Vec<PathElement> = items
                .iter()
                .enumerate()
                .map(|(i, item)| self.item_pe_lenient(l, i, item))
                .collect();
            let mut seen = BTreeSet::new();
            let mut duplicates = BTreeSet::new();
            for pe in &pes {
                if seen.contains(pe) {
                    if duplicates.insert(pe.clone()) {
                        path.push(pe.clone());
                        set.insert(path);
                        path.pop();
                    }
                } else {
                    seen.insert(pe.clone());
                }
            }
            for (item, pe) in items.iter().zip(pes) {
                if duplicates.contains(&pe) {
                    continue;
                }
                path.push(pe);
                self.fs_walk(item, l.elem, path, set);
                set.insert(path);
                path.pop();
            }
        }
    }

    // ---------------------------------------------------------------- validation

    /// Validates an applied configuration against the schema (upstream's `AsTyped` without
    /// duplicates allowed).
    pub(crate) fn validate(&self, v: &Value) -> Vec<ValidationError> {
        self.validate_node(v, self.root_ref(), false)
    }

    fn validate_node(&self, v: &Value, tr: TypeRef<'a>, allow_dups: bool) -> Vec<ValidationError> {
        let atom = self.resolve(tr).deduce(Some(v));
        if let Some(m) = &atom.map {
            return self.validate_map(m, v, allow_dups);
        }
        if let Some(s) = atom.scalar {
            return validate_scalar(s, v)
                .map(|msg| vec![ValidationError::new(msg)])
                .unwrap_or_default();
        }
        if let Some(l) = &atom.list {
            return self.validate_list(l, v, allow_dups);
        }
        let name = match tr {
            TypeRef::Node { node, .. } => node
                .get("$ref")
                .and_then(Value::as_str)
                .map(|r| format!("named type: {r}"))
                .unwrap_or_else(|| "inlined".to_string()),
            _ => "inlined".to_string(),
        };
        vec![ValidationError::new(format!(
            "schema error: invalid atom: {name}"
        ))]
    }

    fn validate_map(&self, m: &MapType<'a>, v: &Value, allow_dups: bool) -> Vec<ValidationError> {
        let obj = match v {
            Value::Null => return Vec::new(),
            Value::Object(obj) => obj,
            other => {
                return vec![ValidationError::new(format!(
                    "expected map, got &{{{}}}",
                    gofmt::v(other)
                ))];
            }
        };
        let mut errs = Vec::new();
        for (k, child) in obj {
            let pe = PathElement::Field(k.clone());
            let tr = match m.field(k) {
                Some(t) => t,
                None if m.elem.is_empty() => {
                    errs.push(ValidationError {
                        path: pe.to_string(),
                        message: "field not declared in schema".to_string(),
                    });
                    break;
                }
                None => m.elem,
            };
            errs.extend(prefixed(
                self.validate_node(child, tr, allow_dups),
                &pe.to_string(),
            ));
        }
        errs
    }

    fn validate_list(&self, l: &ListType<'a>, v: &Value, allow_dups: bool) -> Vec<ValidationError> {
        let items = match v {
            Value::Null => return Vec::new(),
            Value::Array(items) => items,
            other => {
                return vec![ValidationError::new(format!(
                    "expected list, got &{{{}}}",
                    gofmt::v(other)
                ))];
            }
        };
        let mut errs = Vec::new();
        let mut observed = BTreeSet::new();
        for (i, item) in items.iter().enumerate() {
            let pe = if l.rel != Rel::Associative {
                PathElement::Index(i64::try_from(i).unwrap_or(i64::MAX))
            } else {
                match self.item_pe(l, item) {
                    Ok(pe) => pe,
                    Err(e) => {
                        errs.push(ValidationError::new(format!("element {i}: {e}")));
                        return errs;
                    }
                }
            };
            if l.rel == Rel::Associative {
                if observed.contains(&pe) && !allow_dups {
                    errs.push(ValidationError::new(format!(
                        "duplicate entries for key {pe}"
                    )));
                }
                observed.insert(pe.clone());
            }
            errs.extend(prefixed(
                self.validate_node(item, l.elem, allow_dups),
                &pe.to_string(),
            ));
        }
        errs
    }

    // ---------------------------------------------------------------- comparison

    /// What changed from `lhs` to `rhs` (upstream's `Compare`).
    pub(crate) fn compare(&self, lhs: &Value, rhs: &Value) -> Comparison {
        let mut c = Comparison::default();
        let mut path = Vec::new();
        self.cmp_node(Some(lhs), Some(rhs), self.root_ref(), &mut path, &mut c);
        c
    }

    /// What changed from one stored object to another, as [`ObjectSchema::compare`] finds it
    /// between their typed views without `metadata.managedFields`, less what is at or under
    /// a member of `prune` ([`Comparison::excluding`]):
    ///
    /// `compare(typed_view(strip(lhs)), typed_view(strip(rhs))).excluding(prune)`
    ///
    /// (`lhs` as it is when `lhs_typed`: the zero object of a create). Neither object is
    /// copied: subtrees equal on both sides are skipped (equal values have equal typed views
    /// and compare equal), zero values are built only for fields missing on one side, and
    /// only subtrees that differ and are not granular maps on both sides are made typed.
    pub(crate) fn compare_stored(
        &self,
        lhs: &Value,
        lhs_typed: bool,
        rhs: &Value,
        prune: &FieldSet,
    ) -> Comparison {
        let mut walk = LazyCompare {
            schema: self,
            path: Vec::new(),
            c: Comparison::default(),
        };
        let fills = Fills {
            lhs: self.structured && !lhs_typed,
            rhs: self.structured,
        };
        let prune = (!prune.is_empty()).then_some(prune);
        walk.node(lhs, rhs, self.root_ref(), 0, fills, Level::Root, prune);
        match prune {
            Some(p) => walk.c.excluding(p),
            None => walk.c,
        }
    }

    fn cmp_node(
        &self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: TypeRef<'a>,
        path: &mut Vec<PathElement>,
        c: &mut Comparison,
    ) {
        if lhs.is_none() && rhs.is_none() {
            return;
        }
        let atom = self.resolve(tr);
        let al = atom.deduce(lhs);
        let ar = atom.deduce(rhs);
        let mut leaf = false;
        if rhs.is_none() {
            self.cmp_handle(&al, lhs, rhs, path, &mut leaf, c);
        } else if lhs.is_none() || al.same_shape(&ar) {
            self.cmp_handle(&ar, lhs, rhs, path, &mut leaf, c);
        } else {
            // The kinds differ: upstream walks the old value's kind on a copy of its walker
            // (whose recorded changes stay), then the new value's.
            let mut copy_leaf = leaf;
            self.cmp_handle(&al, lhs, rhs, path, &mut copy_leaf, c);
            self.cmp_handle(&ar, lhs, rhs, path, &mut leaf, c);
        }
        if !leaf {
            if lhs.is_none() {
                c.added.insert(path);
            } else if rhs.is_none() {
                c.removed.insert(path);
            }
        }
    }

    fn cmp_handle(
        &self,
        atom: &Atom<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
        leaf: &mut bool,
        c: &mut Comparison,
    ) {
        if let Some(m) = &atom.map {
            self.cmp_map(m, lhs, rhs, path, leaf, c);
        } else if atom.scalar.is_some() {
            cmp_leaf(lhs, rhs, path, leaf, c);
        } else if let Some(l) = &atom.list {
            self.cmp_list(l, lhs, rhs, path, leaf, c);
        }
    }

    fn cmp_map(
        &self,
        m: &MapType<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
        leaf: &mut bool,
        c: &mut Comparison,
    ) {
        let lm = lhs.and_then(Value::as_object);
        let rm = rhs.and_then(Value::as_object);
        let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
        if m.rel == Rel::Atomic || empty {
            cmp_leaf(lhs, rhs, path, leaf, c);
            return;
        }
        for (k, lv, rv) in zip_maps(lm, rm) {
            path.push(PathElement::Field(k.clone()));
            self.cmp_node(lv, rv, m.type_of_lenient(k), path, c);
            path.pop();
        }
    }

    fn cmp_list(
        &self,
        l: &ListType<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        path: &mut Vec<PathElement>,
        leaf: &mut bool,
        c: &mut Comparison,
    ) {
        let la = lhs.and_then(Value::as_array);
        let ra = rhs.and_then(Value::as_array);
        let empty = la.is_none_or(Vec::is_empty) && ra.is_none_or(Vec::is_empty);
        if l.rel == Rel::Atomic || empty {
            cmp_leaf(lhs, rhs, path, leaf, c);
            return;
        }
        let mut all: Vec<PathElement> = Vec::new();
        let mut lvals: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for (i, item) in la.into_iter().flatten().enumerate() {
            let pe = self.item_pe_lenient(l, i, item);
            let entry = lvals.entry(pe.clone()).or_default();
            if entry.is_empty() {
                all.push(pe);
            }
            entry.push(item);
        }
        let mut rvals: BTreeMap<PathElement, Vec<&Value>> = BTreeMap::new();
        for (i, item) in ra.into_iter().flatten().enumerate() {
            let pe = self.item_pe_lenient(l, i, item);
            let entry = rvals.entry(pe.clone()).or_default();
            if entry.is_empty() && !lvals.contains_key(&pe) {
                all.push(pe);
            }
            entry.push(item);
        }
        for pe in all {
            let ll = lvals.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
            let rl = rvals.get(&pe).map(Vec::as_slice).unwrap_or(&[]);
            path.push(pe);
            if ll.len() <= 1 && rl.len() <= 1 {
                self.cmp_node(ll.first().copied(), rl.first().copied(), l.elem, path, c);
            } else if ll.len() >= 2 && rl.len() >= 2 {
                let same =
                    ll.len() == rl.len() && ll.iter().zip(rl).all(|(a, b)| value::equal(a, b));
                if !same {
                    c.modified.insert(path);
                }
            } else if ll.len() >= 2 {
                if let Some(r) = rl.first() {
                    self.cmp_node(None, Some(r), l.elem, path, c);
                }
                c.removed.insert(path);
            } else {
                if let Some(lv) = ll.first() {
                    self.cmp_node(Some(lv), None, l.elem, path, c);
                }
                c.added.insert(path);
            }
            path.pop();
        }
    }

    // ---------------------------------------------------------------- merge

    /// Merges an applied configuration into an object (upstream's `Merge` with "keep the
    /// right-hand side"): the configuration's values win, list items merge by key in the
    /// order upstream gives them.
    pub(crate) fn merge(&self, lhs: &Value, rhs: &Value) -> Value {
        self.merge_node(Some(lhs), Some(rhs), self.root_ref())
            .unwrap_or(Value::Null)
    }

    fn merge_node(
        &self,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
        tr: TypeRef<'a>,
    ) -> Option<Value> {
        if lhs.is_none() && rhs.is_none() {
            return None;
        }
        let atom = self.resolve(tr);
        // When both sides are present with different kinds, upstream also walks the old
        // side's kind, but on a copy whose output is dropped.
        let atom = if rhs.is_some() {
            atom.deduce(rhs)
        } else {
            atom.deduce(lhs)
        };
        if let Some(m) = &atom.map {
            self.merge_map(m, lhs, rhs)
        } else if atom.scalar.is_some() {
            rhs.or(lhs).cloned()
        } else if let Some(l) = &atom.list {
            self.merge_list(l, lhs, rhs)
        } else {
            rhs.or(lhs).cloned()
        }
    }

    fn merge_map(
        &self,
        m: &MapType<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
    ) -> Option<Value> {
        let lm = lhs.and_then(Value::as_object);
        let rm = rhs.and_then(Value::as_object);
        let empty = lm.is_none_or(Map::is_empty) && rm.is_none_or(Map::is_empty);
        if m.rel == Rel::Atomic || empty {
            return rhs.or(lhs).cloned();
        }
        let mut out = Map::new();
        for (k, lv, rv) in zip_maps(lm, rm) {
            if let Some(v) = self.merge_node(lv, rv, m.type_of_lenient(k)) {
                out.insert(k.clone(), v);
            }
        }
        (!out.is_empty()).then_some(Value::Object(out))
    }

    fn merge_list(
        &self,
        l: &ListType<'a>,
        lhs: Option<&Value>,
        rhs: Option<&Value>,
    ) -> Option<Value> {
        let la = lhs.and_then(Value::as_array);
        let ra = rhs.and_then(Value::as_array);
        let empty = la.is_none_or(Vec::is_empty) && ra.is_none_or(Vec::is_empty);
        if l.rel == Rel::Atomic || empty {
            return rhs.or(lhs).cloned();
        }
        let litems: &[Value] = la.map(Vec::as_slice).unwrap_or(&[]);
        let ritems: &[Value] = ra.map(Vec::as_slice).unwrap_or(&[]);

        // The configuration's items (validated: keyed, no duplicates).
        let mut rpes = Vec::with_capacity(ritems.len());
        let mut robs: BTreeMap<PathElement, &Value> = BTreeMap::new();
        for (i, item) in ritems.iter().enumerate() {
            let pe = self.item_pe_lenient(l, i, item);
            if robs.contains_key(&pe) {
                continue;
            }
            robs.insert(pe.clone(), item);
            rpes.push(pe);
        }
        // The live object's items; a duplicated key merges as null.
        let mut lpes = Vec::with_capacity(litems.len());
        let mut lobs: BTreeMap<PathElement, &Value> = BTreeMap::new();
        for (i, item) in litems.iter().enumerate() {
            let pe = self.item_pe_lenient(l, i, item);
            if lobs.contains_key(&pe) {
                lobs.insert(pe.clone(), &NULL);
            } else {
                lobs.insert(pe.clone(), item);
            }
            lpes.push(pe);
        }

        let mut shared: VecDeque<&PathElement> =
            rpes.iter().filter(|pe| lobs.contains_key(*pe)).collect();
        let mut next_shared = shared.pop_front();
        let mut merged_rhs: BTreeSet<PathElement> = BTreeSet::new();
        let mut out = Vec::with_capacity(litems.len().max(ritems.len()));
        let (llen, rlen) = (lpes.len(), rpes.len());
        let (mut li, mut ri) = (0, 0);
        let mut budget = 2 * (llen + rlen) + 2;
        while li < llen || ri < rlen {
            if budget == 0 {
                break;
            }
            budget -= 1;
            if li < llen && ri < rlen {
                let pe = &lpes[li];
                if *pe == rpes[ri] {
                    merged_rhs.insert(pe.clone());
                    let lc = lobs.get(pe).copied();
                    let rc = robs.get(pe).copied();
                    if let Some(v) = self.merge_node(lc, rc, l.elem) {
                        out.push(v);
                    }
                    li += 1;
                    ri += 1;
                    next_shared = shared.pop_front();
                    continue;
                }
                if robs.contains_key(pe) && next_shared.is_some_and(|ns| ns != pe) {
                    // Shared with the configuration, but its turn comes later.
                    li += 1;
                    continue;
                }
            }
            if li < llen {
                let pe = &lpes[li];
                if !robs.contains_key(pe) {
                    if let Some(v) = self.merge_node(litems.get(li), None, l.elem) {
                        out.push(v);
                    }
                    li += 1;
                    continue;
                } else if merged_rhs.contains(pe) {
                    li += 1;
                }
            }
            if ri < rlen {
                let pe = &rpes[ri];
                merged_rhs.insert(pe.clone());
                let lc = lobs.get(pe).copied();
                let rc = robs.get(pe).copied();
                if let Some(v) = self.merge_node(lc, rc, l.elem) {
                    out.push(v);
                }
                ri += 1;
                if next_shared.is_some_and(|ns| ns == pe) {
                    next_shared = shared.pop_front();
                }
            }
        }
        (!out.is_empty()).then_some(Value::Array(out))
    }

    // ---------------------------------------------------------------- removal

    /// `v` without the members of `set` (upstream's `RemoveItems`): a member map entry or list
    /// item is dropped with everything under it; containers emptied by the removal become
    /// null.
    pub(crate) fn remove_items(&self, v: &Value, set: &FieldSet) -> Value {
        self.remove_node(v, set, self.root_ref())
    }

    fn remove_node(&self, v: &Value, set: &FieldSet, tr: TypeRef<'a>) -> Value {
        let atom = self.resolve(tr).deduce(Some(v));
        if let Some(m) = &atom.map {
            let Some(obj) = v.as_object() else {
                return Value::Null;
            };
            if obj.is_empty() || m.rel == Rel::Atomic {
                return Value::Null;
            }
            let mut out = Map::new();
            for (k, child) in obj {
                let pe = PathElement::Field(k.clone());
                if set.has_member(&pe) {
                    continue;
                }
                let nv = match set.child(&pe) {
                    Some(sub) if !sub.is_empty() => {
                        self.remove_node(child, sub, m.type_of_lenient(k))
                    }
                    _ => child.clone(),
                };
                out.insert(k.clone(), nv);
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Object(out)
            }
        } else if atom.scalar.is_some() {
            v.clone()
        } else if let Some(l) = &atom.list {
            let Some(items) = v.as_array() else {
                return Value::Null;
            };
            if items.is_empty() || l.rel == Rel::Atomic {
                return Value::Null;
            }
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let pe = self.item_pe_lenient(l, i, item);
                if set.has_member(&pe) {
                    continue;
                }
                match set.child(&pe) {
                    Some(sub) if !sub.is_empty() => out.push(self.remove_node(item, sub, l.elem)),
                    _ => out.push(item.clone()),
                }
            }
            if out.is_empty() {
                Value::Null
            } else {
                Value::Array(out)
            }
        } else {
            Value::Null
        }
    }

    // ---------------------------------------------------------------- named fields

    /// The set plus, as members, every declared (struct) field it has children under
    /// (upstream's `EnsureNamedFieldsAreMembers`).
    pub(crate) fn ensure_named_fields_are_members(&self, set: &FieldSet) -> FieldSet {
        self.ensure_named(set, self.root_ref())
    }

    fn ensure_named(&self, set: &FieldSet, tr: TypeRef<'a>) -> FieldSet {
        let atom = self.resolve(tr);
        let mut out = FieldSet::new();
        for m in set.members() {
            out.insert_member(m.clone());
        }
        for (pe, child) in set.children() {
            let ctr = match (pe, &atom.map, &atom.list) {
                (PathElement::Field(name), Some(m), _) => match m.field(name) {
                    Some(t) => {
                        out.insert_member(pe.clone());
                        t
                    }
                    None => m.elem,
                },
                (PathElement::Key(_), _, Some(l)) => l.elem,
                _ => TypeRef::Empty,
            };
            out.insert_child(pe.clone(), self.ensure_named(child, ctr));
        }
        out
    }

    // ---------------------------------------------------------------- schema changes

    /// A manager's set adjusted to the current schema (upstream's
    /// `ReconcileFieldSetWithSchema`): fields under a container that became atomic are
    /// replaced by the container. `None` when nothing changes.
    pub(crate) fn reconcile(&self, set: &FieldSet) -> Option<FieldSet> {
        let mut acc = Reconciled::default();
        let mut path = Vec::new();
        self.reconcile_node(Some(set), self.root_ref(), &mut path, false, &mut acc);
        if !acc.touched {
            return None;
        }
        Some(set.recursive_difference(&acc.remove).union(&acc.add))
    }

    fn reconcile_node(
        &self,
        set: Option<&FieldSet>,
        tr: TypeRef<'a>,
        path: &mut Vec<PathElement>,
        is_atomic: bool,
        acc: &mut Reconciled,
    ) {
        let atom = self.resolve(tr);
        if let Some(m) = &atom.map {
            if self.is_untyped_deduced_map(m) {
                return;
            }
            if !is_atomic && m.rel == Rel::Atomic {
                if set.is_some_and(|s| !s.is_empty()) {
                    acc.mark(path);
                }
                return;
            }
            if let Some(s) = set {
                self.reconcile_children(s, path, acc, |pe| match pe {
                    PathElement::Field(name) => m.field(name).unwrap_or(m.elem),
                    _ => m.elem,
                });
            }
        } else if atom.scalar.is_some() {
        } else if let Some(l) = &atom.list {
            if !is_atomic && l.rel == Rel::Atomic {
                acc.mark(path);
                return;
            }
            if let Some(s) = set {
                self.reconcile_children(s, path, acc, |_| l.elem);
            }
        }
    }

    fn reconcile_children(
        &self,
        s: &FieldSet,
        path: &mut Vec<PathElement>,
        acc: &mut Reconciled,
        type_of: impl Fn(&PathElement) -> TypeRef<'a>,
    ) {
        let mut visit = |pe: &PathElement, is_member: bool, acc: &mut Reconciled| {
            let tr = type_of(pe);
            if tr.is_empty() {
                return;
            }
            let child = s.child(pe);
            path.push(pe.clone());
            self.reconcile_node(child, tr, path, is_member && child.is_none(), acc);
            path.pop();
        };
        for (pe, _) in s.children() {
            if !s.has_member(pe) {
                visit(pe, false, acc);
            }
        }
        for pe in s.members() {
            visit(pe, true, acc);
        }
    }

    // ---------------------------------------------------------------- zero values

    /// The object upstream's typed conversion sees for `v`: for built-in kinds, every
    /// non-pointer struct field is present (empty structs, zero scalars of non-omitempty
    /// fields, nulls for required fields without a zero default). Other kinds: `v` itself.
    pub(crate) fn typed_view(&self, v: &Value) -> Value {
        if self.structured {
            self.zero_fill(v, self.root_ref(), 0, &mut Vec::new())
        } else {
            v.clone()
        }
    }

    /// A new, empty object of the kind (upstream's `Creater.New`): the zero value of a
    /// built-in kind, `{apiVersion, kind}` for others.
    pub(crate) fn new_object(&self, api_version: &str, kind: &str) -> Value {
        let mut base = Map::new();
        base.insert("apiVersion".into(), Value::String(api_version.to_string()));
        base.insert("kind".into(), Value::String(kind.to_string()));
        let base = Value::Object(base);
        self.typed_view(&base)
    }

    /// `v` with the zero values of its missing struct fields. `building` holds the
    /// definitions whose zero values are being built (a cycle of them ends the recursion).
    fn zero_fill(
        &self,
        v: &Value,
        tr: TypeRef<'a>,
        depth: usize,
        building: &mut Vec<&'a str>,
    ) -> Value {
        if depth > MAX_ZERO_DEPTH {
            return v.clone();
        }
        let atom = self.resolve(tr).deduce(Some(v));
        match v {
            Value::Object(obj) => {
                let Some(m) = &atom.map else {
                    return v.clone();
                };
                let mut out = Map::new();
                for (k, child) in obj {
                    let ctr = m.type_of_lenient(k);
                    out.insert(k.clone(), self.zero_fill(child, ctr, depth + 1, building));
                }
                for (name, prop) in m.fields() {
                    if obj.contains_key(name) {
                        continue;
                    }
                    if let Some(z) = self.zero_of_field(m, name, prop, depth, building) {
                        out.insert(name.clone(), z);
                    }
                }
                Value::Object(out)
            }
            Value::Array(items) => match &atom.list {
                Some(l) => Value::Array(
                    items
                        .iter()
                        .map(|item| self.zero_fill(item, l.elem, depth + 1, building))
                        .collect(),
                ),
                None => v.clone(),
            },
            _ => v.clone(),
        }
    }

    /// The zero value of a missing struct field, if the Go zero struct has it.
    fn zero_of_field(
        &self,
        m: &MapType<'a>,
        name: &str,
        prop: &'a Value,
        depth: usize,
        building: &mut Vec<&'a str>,
    ) -> Option<Value> {
        match prop.get("default") {
            Some(d) if is_zero_default(d) => {
                if !is_empty_map(d) {
                    return Some(d.clone());
                }
                let tr = m.field(name)?;
                let definition = reference(prop);
                if let Some(def) = definition {
                    if building.contains(&def) {
                        return None;
                    }
                    building.push(def);
                }
                let z = self.zero_fill(&Value::Object(Map::new()), tr, depth + 1, building);
                if definition.is_some() {
                    building.pop();
                }
                Some(z)
            }
            Some(_) => None,
            None if m.is_required(name) => Some(Value::Null),
            None => None,
        }
    }
}

/// Whether a schema default is the zero value openapi-gen enforces for non-pointer,
/// non-omitempty fields (`{}` for structs, `""`, `0`, `false`).
fn is_zero_default(d: &Value) -> bool {
    match d {
        Value::Object(m) => m.is_empty(),
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::Bool(b) => !b,
        _ => false,
    }
}

#[derive(Default)]
struct Reconciled {
    touched: bool,
    remove: FieldSet,
    add: FieldSet,
}

impl Reconciled {
    fn mark(&mut self, path: &[PathElement]) {
        self.touched = true;
        self.remove.insert(path);
        self.add.insert(path);
    }
}

fn cmp_leaf(
    lhs: Option<&Value>,
    rhs: Option<&Value>,
    path: &[PathElement],
    leaf: &mut bool,
    c: &mut Comparison,
) {
    if *leaf {
        return;
    }
    *leaf = true;
    match (lhs, rhs) {
        (None, _) => c.added.insert(path),
        (_, None) => c.removed.insert(path),
        (Some(l), Some(r)) => {
            if !value::equal(r, l) {
                c.modified.insert(path);
            }
        }
    }
}

/// Which sides of a lazy comparison stand for their typed views (zero values filled in)
/// rather than for themselves.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Fills {
    lhs: bool,
    rhs: bool,
}

/// Where a lazy comparison is: `metadata.managedFields` is left out of both objects.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Metadata,
    Other,
}

impl Level {
    fn child(self, key: &str) -> Level {
        match self {
            Level::Root if key == "metadata" => Level::Metadata,
            _ => Level::Other,
        }
    }

    /// Whether `key` is left out at this level.
    fn skips(self, key: &str) -> bool {
        self == Level::Metadata && key == "managedFields"
    }
}

/// [`ObjectSchema::compare_stored`]'s walk.
struct LazyCompare<'s, 'a> {
    schema: &'s ObjectSchema<'a>,
    path: Vec<PathElement>,
    c: Comparison,
}

impl<'a> LazyCompare<'_, 'a> {
    /// Compares the typed views of two present values at `depth` (as `zero_fill` counts it).
    #[allow(clippy::too_many_arguments)]
    fn node(
        &mut self,
        l: &Value,
        r: &Value,
        tr: TypeRef<'a>,
        depth: usize,
        fills: Fills,
        level: Level,
        prune: Option<&FieldSet>,
    ) {
        // `zero_fill` leaves values this deep as they are.
        let fills = if depth > MAX_ZERO_DEPTH {
            Fills {
                lhs: false,
                rhs: false,
            }
        } else {
            fills
        };
        // Equal values have equal typed views (with or without managedFields), which compare
        // equal. (Objects as a whole rarely are: not worth the look.)
        if fills.lhs == fills.rhs && level != Level::Root && l == r {
            return;
        }
        if let (Value::Object(lm), Value::Object(rm)) = (l, r) {
            let atom = self.schema.resolve(tr);
            let (al, ar) = (atom.deduce(Some(l)), atom.deduce(Some(r)));
            if al.same_shape(&ar)
                && let Some(m) = &ar.map
                && m.rel != Rel::Atomic
                && lm.keys().any(|k| !level.skips(k))
                && rm.keys().any(|k| !level.skips(k))
            {
                self.map(m, lm, rm, depth, fills, level, prune);
                return;
            }
        }
        let tl = self.typed(l, tr, depth, fills.lhs, level);
        let trv = self.typed(r, tr, depth, fills.rhs, level);
        self.schema
            .cmp_node(Some(&tl), Some(&trv), tr, &mut self.path, &mut self.c);
    }

    /// Two granular maps, both with entries: their keys one by one, as `cmp_map` walks the
    /// typed maps (whose other keys are the zero values of declared fields).
    #[allow(clippy::too_many_arguments)]
    fn map(
        &mut self,
        m: &MapType<'a>,
        lm: &Map<String, Value>,
        rm: &Map<String, Value>,
        depth: usize,
        fills: Fills,
        level: Level,
        prune: Option<&FieldSet>,
    ) {
        let has = |map: &Map<String, Value>, k: &str| !level.skips(k) && map.contains_key(k);
        for (k, lv) in lm {
            if level.skips(k) {
                continue;
            }
            let rv = rm.get(k);
            self.child(m, k, Some(lv), rv, depth, fills, level, prune);
        }
        for (k, rv) in rm {
            if level.skips(k) || lm.contains_key(k) {
                continue;
            }
            self.child(m, k, None, Some(rv), depth, fills, level, prune);
        }
        if fills.lhs != fills.rhs {
            // Declared fields neither side has: the filled side has their zero values.
            for (name, _) in m.fields() {
                if has(lm, name) || has(rm, name) {
                    continue;
                }
                self.child(m, name, None, None, depth, fills, level, prune);
            }
        }
    }

    /// The entry `k` of two maps at `depth`, present on either side or none.
    #[allow(clippy::too_many_arguments)]
    fn child(
        &mut self,
        m: &MapType<'a>,
        k: &str,
        lv: Option<&Value>,
        rv: Option<&Value>,
        depth: usize,
        fills: Fills,
        level: Level,
        prune: Option<&FieldSet>,
    ) {
        let pe = PathElement::Field(k.to_string());
        if prune.is_some_and(|p| p.has_member(&pe)) {
            return;
        }
        let cprune = prune.and_then(|p| p.child(&pe));
        let ctr = m.type_of_lenient(k);
        let clevel = level.child(k);
        self.path.push(pe);
        if let (Some(lv), Some(rv)) = (lv, rv) {
            self.node(lv, rv, ctr, depth + 1, fills, clevel, cprune);
        } else {
            let tl = self.side(m, k, lv, ctr, depth, fills.lhs, clevel);
            let trv = self.side(m, k, rv, ctr, depth, fills.rhs, clevel);
            if tl.is_some() || trv.is_some() {
                self.schema.cmp_node(
                    tl.as_deref(),
                    trv.as_deref(),
                    ctr,
                    &mut self.path,
                    &mut self.c,
                );
            }
        }
        self.path.pop();
    }

    /// The typed view of entry `k` of a map at `depth` on one side: its value's, the zero
    /// value of a declared field when the side is filled, or none.
    #[allow(clippy::too_many_arguments)]
    fn side<'v>(
        &self,
        m: &MapType<'a>,
        k: &str,
        v: Option<&'v Value>,
        ctr: TypeRef<'a>,
        depth: usize,
        fill: bool,
        level: Level,
    ) -> Option<Cow<'v, Value>> {
        match v {
            Some(v) => Some(self.typed(v, ctr, depth + 1, fill, level)),
            None if fill => self.zero_of(m, k, depth).map(Cow::Owned),
            None => None,
        }
    }

    /// The zero value `zero_fill` gives a declared field missing from a map at `depth`.
    fn zero_of(&self, m: &MapType<'a>, k: &str, depth: usize) -> Option<Value> {
        let prop = m.field_schema(k)?;
        self.schema
            .zero_of_field(m, k, prop, depth, &mut Vec::new())
    }

    /// A value's typed view (without managedFields at the root and in metadata).
    fn typed<'v>(
        &self,
        v: &'v Value,
        tr: TypeRef<'a>,
        depth: usize,
        fill: bool,
        level: Level,
    ) -> Cow<'v, Value> {
        let v = match (level, v) {
            (Level::Root, Value::Object(root))
                if root
                    .get("metadata")
                    .and_then(Value::as_object)
                    .is_some_and(|m| m.contains_key("managedFields")) =>
            {
                let mut copy = v.clone();
                if let Some(Value::Object(meta)) = copy.get_mut("metadata") {
                    meta.remove("managedFields");
                }
                Cow::Owned(copy)
            }
            (Level::Metadata, Value::Object(meta)) if meta.contains_key("managedFields") => {
                let mut copy = meta.clone();
                copy.remove("managedFields");
                Cow::Owned(Value::Object(copy))
            }
            _ => Cow::Borrowed(v),
        };
        if fill {
            Cow::Owned(self.schema.zero_fill(&v, tr, depth, &mut Vec::new()))
        } else {
            v
        }
    }
}

type ZipItem<'v> = (&'v String, Option<&'v Value>, Option<&'v Value>);

/// The keys of two maps with their values on each side: the left map's keys, then the keys
/// only the right one has.
fn zip_maps<'v>(
    lhs: Option<&'v Map<String, Value>>,
    rhs: Option<&'v Map<String, Value>>,
) -> Vec<ZipItem<'v>> {
    let mut out = Vec::new();
    if let Some(l) = lhs {
        for (k, v) in l {
            out.push((k, Some(v), rhs.and_then(|r| r.get(k))));
        }
    }
    if let Some(r) = rhs {
        for (k, v) in r {
            if lhs.is_some_and(|l| l.contains_key(k)) {
                continue;
            }
            out.push((k, None, Some(v)));
        }
    }
    out
}

/// Upstream's message for a scalar of the wrong type.
fn validate_scalar(s: Scalar, v: &Value) -> Option<String> {
    let ok = matches!(
        (s, v),
        (_, Value::Null)
            | (Scalar::Numeric, Value::Number(_))
            | (Scalar::String, Value::String(_))
            | (Scalar::Boolean, Value::Bool(_))
            | (
                Scalar::Untyped,
                Value::Number(_) | Value::String(_) | Value::Bool(_)
            )
    );
    if ok {
        return None;
    }
    Some(match s {
        Scalar::Numeric => format!(
            "expected numeric (int or float), got {}",
            GoType::of(v).name()
        ),
        Scalar::String => format!(
            "expected string, got &value.valueUnstructured{{Value:{}}}",
            go_sharp_v(v)
        ),
        Scalar::Boolean => format!("expected boolean, got &{{{}}}", gofmt::v(v)),
        Scalar::Untyped => format!("expected any scalar, got &{{{}}}", gofmt::v(v)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::schema::SchemaLookup;
    use serde_json::json;
    use std::collections::BTreeMap;

    struct Defs(BTreeMap<String, Value>);
    impl SchemaLookup for Defs {
        fn definition(&self, name: &str) -> Option<&Value> {
            self.0.get(name)
        }
    }

    fn r(name: &str) -> Value {
        json!({"allOf": [{"$ref": format!("#/components/schemas/{name}")}], "default": {}})
    }

    #[test]
    fn zero_values_of_cyclic_defaults_terminate() {
        let mut m = BTreeMap::new();
        m.insert(
            "A".to_string(),
            json!({"type": "object", "properties": {"b": r("B"), "n": {"type": "integer", "default": 0}}}),
        );
        m.insert(
            "B".to_string(),
            json!({"type": "object", "properties": {"a": r("A"), "c": r("A"), "s": {"type": "string", "default": "x"}}}),
        );
        let defs = Defs(m);
        let root = json!({"type": "object", "required": ["p"], "properties": {
            "a": r("A"), "p": {"type": "array", "items": {"type": "string"}}, "kind": {"type": "string"}
        }});
        let s = ObjectSchema::builtin(&root, &defs);
        let zero = s.new_object("v1", "K");
        assert_eq!(
            zero,
            json!({"apiVersion": "v1", "kind": "K", "p": null, "a": {"n": 0, "b": {}}})
        );
        // Present values are kept, missing zero fields added inside them.
        let filled = s.typed_view(&json!({"a": {"b": {"a": {}}}}));
        assert_eq!(filled["p"], Value::Null);
        assert_eq!(filled["a"]["n"], 0);
        assert_eq!(filled["a"]["b"]["a"]["n"], 0);
        assert_eq!(filled["a"]["b"]["c"]["n"], 0);
        assert!(filled["a"]["b"].get("s").is_none());
    }

    #[test]
    fn remove_items_leaves_emptied_containers_null() {
        let root = json!({"type": "object", "properties": {
            "spec": {"type": "object", "properties": {"m": {"type": "object", "additionalProperties": {"type": "string"}}}}
        }});
        let defs = Defs(BTreeMap::new());
        let s = ObjectSchema::custom(&root, &defs);
        let v = json!({"spec": {"m": {"a": "1"}}, "other": 1});
        let mut set = FieldSet::new();
        set.insert(&[
            PathElement::field("spec"),
            PathElement::field("m"),
            PathElement::field("a"),
        ]);
        assert_eq!(
            s.remove_items(&v, &set),
            json!({"spec": {"m": null}, "other": 1})
        );
        let mut whole = FieldSet::new();
        whole.insert(&[PathElement::field("spec")]);
        assert_eq!(s.remove_items(&v, &whole), json!({"other": 1}));
    }
}

/// [`ObjectSchema::compare_stored`] against its definition, on the built-in Pod schema and
/// on schemas of custom resources, over a table of objects and seeded random mutations of
/// them.
#[cfg(test)]
mod stored_comparison_tests {
    use super::*;
    use crate::managed::without_managed_fields;
    use crate::path::Path;
    use serde_json::json;

    /// The definition: the typed views of both objects without managedFields, compared,
    /// less the pruned fields.
    fn reference(
        s: &ObjectSchema<'_>,
        l: &Value,
        l_typed: bool,
        r: &Value,
        prune: &FieldSet,
    ) -> Comparison {
        let l = without_managed_fields(l);
        let l = if l_typed { l } else { s.typed_view(&l) };
        let r = s.typed_view(&without_managed_fields(r));
        s.compare(&l, &r).excluding(prune)
    }

    fn check(s: &ObjectSchema<'_>, l: &Value, r: &Value, what: &str) {
        let prunes = [
            FieldSet::new(),
            FieldSet::from_paths(&[Path::fields(&["status"])]),
            FieldSet::from_paths(&[Path::fields(&["spec"])]),
            FieldSet::from_paths(&[
                Path::fields(&["metadata", "labels"]),
                Path::fields(&["spec", "containers"]),
            ]),
        ];
        for prune in &prunes {
            assert_eq!(
                s.compare_stored(l, false, r, prune),
                reference(s, l, false, r, prune),
                "{what}: {l} → {r}, pruning {prune}"
            );
            // A create: the left side is the zero object, already typed.
            let zero = s.typed_view(l);
            assert_eq!(
                s.compare_stored(&zero, true, r, prune),
                reference(s, &zero, true, r, prune),
                "{what} (typed left side): {zero} → {r}, pruning {prune}"
            );
        }
    }

    fn pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "web-1", "namespace": "default", "uid": "u1",
                "labels": {"app": "web"},
                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                    "uid": "r1", "controller": true}],
                "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                    "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:labels": {}}}}]
            },
            "spec": {
                "containers": [
                    {"name": "a", "image": "nginx", "ports": [{"containerPort": 80, "protocol": "TCP"}],
                     "resources": {"limits": {"cpu": "1"}}, "env": [{"name": "X", "value": "1"}]},
                    {"name": "b", "image": "busybox", "command": ["sh"]}
                ],
                "tolerations": [{"key": "k", "operator": "Exists"}],
                "securityContext": {},
                "restartPolicy": "Always"
            },
            "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True"}]}
        })
    }

    fn table() -> Vec<(&'static str, Value)> {
        let base = pod();
        let with = |f: &dyn Fn(&mut Value)| {
            let mut v = base.clone();
            f(&mut v);
            v
        };
        vec![
            ("same", base.clone()),
            ("bound", with(&|v| v["spec"]["nodeName"] = json!("n1"))),
            (
                "running",
                with(&|v| {
                    v["status"] = json!({"phase": "Running", "podIP": "10.0.0.1",
                        "conditions": [{"type": "Ready", "status": "True"}],
                        "containerStatuses": [{"name": "a", "ready": true, "restartCount": 0,
                            "image": "nginx", "imageID": "", "state": {"running": {}}}]})
                }),
            ),
            (
                "image",
                with(&|v| v["spec"]["containers"][0]["image"] = json!("nginx:2")),
            ),
            (
                "container removed",
                with(&|v| {
                    if let Some(a) = v["spec"]["containers"].as_array_mut() {
                        a.pop();
                    }
                }),
            ),
            (
                "duplicate container",
                with(&|v| {
                    let c = v["spec"]["containers"][0].clone();
                    if let Some(a) = v["spec"]["containers"].as_array_mut() {
                        a.push(c);
                    }
                }),
            ),
            (
                "managedFields only",
                with(&|v| v["metadata"]["managedFields"] = json!([])),
            ),
            (
                "managedFields gone",
                with(&|v| {
                    if let Some(m) = v["metadata"].as_object_mut() {
                        m.remove("managedFields");
                    }
                }),
            ),
            (
                "metadata only managedFields",
                with(&|v| v["metadata"] = json!({"managedFields": []})),
            ),
            ("metadata empty", with(&|v| v["metadata"] = json!({}))),
            ("metadata not a map", with(&|v| v["metadata"] = json!("x"))),
            ("metadata null", with(&|v| v["metadata"] = Value::Null)),
            ("spec empty", with(&|v| v["spec"] = json!({}))),
            ("spec a string", with(&|v| v["spec"] = json!("x"))),
            (
                "security context gone",
                with(&|v| {
                    if let Some(m) = v["spec"].as_object_mut() {
                        m.remove("securityContext");
                    }
                }),
            ),
            (
                "unknown field",
                with(&|v| v["spec"]["nope"] = json!({"a": [1, {"b": null}]})),
            ),
            (
                "labels",
                with(&|v| v["metadata"]["labels"] = json!({"app": "web", "tier": "x"})),
            ),
            (
                "atomic owner",
                with(&|v| v["metadata"]["ownerReferences"][0]["controller"] = json!(false)),
            ),
            (
                "int as float",
                with(&|v| v["spec"]["containers"][0]["ports"][0]["containerPort"] = json!(80.0)),
            ),
            ("empty", json!({})),
            ("only kind", json!({"apiVersion": "v1", "kind": "Pod"})),
        ]
    }

    struct NoDefs;

    impl api::schema::SchemaLookup for NoDefs {
        fn definition(&self, _name: &str) -> Option<&Value> {
            None
        }
    }

    /// A small deterministic generator (an LCG), enough to pick mutations.
    struct Rng(u64);

    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((self.0 >> 33) as usize) % n.max(1)
        }
    }

    /// Changes one random place of `v`.
    fn mutate(v: &mut Value, rng: &mut Rng) {
        const KEYS: &[&str] = &[
            "spec",
            "status",
            "metadata",
            "labels",
            "containers",
            "name",
            "image",
            "ports",
            "nodeName",
            "conditions",
            "managedFields",
            "securityContext",
            "x",
        ];
        let stop = rng.below(4) == 0;
        match v {
            Value::Object(m) if !m.is_empty() && !stop => {
                let i = rng.below(m.len());
                if let Some(k) = m.keys().nth(i).cloned() {
                    match rng.below(8) {
                        0 => {
                            m.remove(&k);
                        }
                        _ => {
                            if let Some(child) = m.get_mut(&k) {
                                mutate(child, rng);
                            }
                        }
                    }
                }
            }
            Value::Array(a) if !a.is_empty() && !stop => {
                let i = rng.below(a.len());
                match rng.below(6) {
                    0 => {
                        a.remove(i);
                    }
                    1 => {
                        let c = a[i].clone();
                        a.push(c);
                    }
                    _ => mutate(&mut a[i], rng),
                }
            }
            _ => {
                *v = match rng.below(8) {
                    0 => Value::Null,
                    1 => json!({}),
                    2 => json!([]),
                    3 => json!("s"),
                    4 => json!(0),
                    5 => json!({KEYS[rng.below(KEYS.len())]: "v"}),
                    6 => json!([{"name": "a", "image": "i"}]),
                    _ => json!(true),
                };
            }
        }
    }

    fn pod_schema() -> ObjectSchema<'static> {
        let schemas = api::schema::builtin();
        let name = schemas.definition_for("", "v1", "Pod").unwrap();
        ObjectSchema::builtin(schemas.get(name).unwrap(), schemas)
    }

    fn fuzz(s: &ObjectSchema<'_>, seed: u64, rounds: usize) {
        let mut rng = Rng(seed);
        let objects: Vec<Value> = table().into_iter().map(|(_, v)| v).collect();
        for round in 0..rounds {
            let mut l = objects[rng.below(objects.len())].clone();
            let mut r = l.clone();
            for _ in 0..=rng.below(3) {
                mutate(&mut l, &mut rng);
            }
            for _ in 0..=rng.below(3) {
                mutate(&mut r, &mut rng);
            }
            check(s, &l, &r, &format!("round {round}"));
        }
    }

    #[test]
    fn pods_table() {
        let s = pod_schema();
        let objects = table();
        for (ln, l) in &objects {
            for (rn, r) in &objects {
                check(&s, l, r, &format!("{ln} → {rn}"));
            }
        }
    }

    #[test]
    fn pods_fuzzed() {
        fuzz(&pod_schema(), 1, 1500);
    }

    #[test]
    fn custom_and_schemaless_fuzzed() {
        let root = json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"}, "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {
                "containers": {"type": "array", "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}, "image": {"type": "string"}}}},
                "nodeName": {"type": "string"}
            }},
            "status": {"type": "object", "additionalProperties": {"type": "string"}}
        }});
        let none = NoDefs;
        let custom = ObjectSchema::custom(&root, &none);
        fuzz(&custom, 2, 800);
        fuzz(&ObjectSchema::deduced(), 3, 800);
    }
}
