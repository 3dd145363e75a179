//! Walks over values guided by their schema, as structured-merge-diff's `typed` package does
//! them: the field set an object sets, validation of applied configurations, comparison of
//! two objects, the apply merge, removal of fields, and reconciling field sets with schema
//! changes. Plus the zero values of typed (built-in) objects.
//!
//! Applied configurations are validated before they are walked. Stored objects are walked
//! leniently: upstream only ever sees them valid, so where it would fail on them (an
//! undeclared field, a list item without its keys) these walks deduce the field or address
//! the item by index instead.

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
