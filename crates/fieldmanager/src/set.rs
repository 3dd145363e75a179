//! Field sets: a trie of path elements, the ownership unit of managedFields, with the set
//! algebra structured-merge-diff defines and the fieldsV1 encoding.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::{Map, Value};

use crate::error::Error;
use crate::path::{Path, PathElement};
use crate::value;

/// A set of fields. `members` are the elements of this level that belong to the set;
/// `children` the elements under which deeper fields belong to it (an element can be both).
/// Children are never empty.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSet {
    members: BTreeSet<PathElement>,
    children: BTreeMap<PathElement, FieldSet>,
}

impl FieldSet {
    /// The empty set.
    pub fn new() -> Self {
        FieldSet::default()
    }

    /// A set of the given paths.
    pub fn from_paths<'a, I>(paths: I) -> Self
    where
        I: IntoIterator<Item = &'a Path>,
    {
        let mut s = FieldSet::new();
        for p in paths {
            s.insert(p.elements());
        }
        s
    }

    /// Adds the field at `path` (its parents are not added). The empty path names the whole
    /// object, which nobody owns: it is ignored.
    pub fn insert(&mut self, path: &[PathElement]) {
        match path {
            [] => {}
            [last] => {
                self.members.insert(last.clone());
            }
            [first, rest @ ..] => self.children.entry(first.clone()).or_default().insert(rest),
        }
    }

    /// Whether the field at `path` is a member.
    pub fn has(&self, path: &[PathElement]) -> bool {
        match path {
            [] => false,
            [last] => self.members.contains(last),
            [first, rest @ ..] => self.children.get(first).is_some_and(|c| c.has(rest)),
        }
    }

    /// Whether the set has no member at any depth.
    pub fn is_empty(&self) -> bool {
        self.members.is_empty() && self.children.values().all(FieldSet::is_empty)
    }

    /// The number of members at every depth.
    pub fn len(&self) -> usize {
        self.members.len() + self.children.values().map(FieldSet::len).sum::<usize>()
    }

    /// The members of this level.
    pub fn members(&self) -> impl Iterator<Item = &PathElement> {
        self.members.iter()
    }

    /// The children of this level with their subsets.
    pub fn children(&self) -> impl Iterator<Item = (&PathElement, &FieldSet)> {
        self.children.iter()
    }

    pub(crate) fn has_member(&self, pe: &PathElement) -> bool {
        self.members.contains(pe)
    }

    pub(crate) fn child(&self, pe: &PathElement) -> Option<&FieldSet> {
        self.children.get(pe)
    }

    pub(crate) fn insert_member(&mut self, pe: PathElement) {
        self.members.insert(pe);
    }

    /// Adds `sub` under `pe`.
    pub(crate) fn insert_child(&mut self, pe: PathElement, sub: FieldSet) {
        if sub.is_empty() {
            return;
        }
        match self.children.get_mut(&pe) {
            Some(mine) => mine.union_in_place(&sub),
            None => {
                self.children.insert(pe, sub);
            }
        }
    }

    /// The paths under `pe`, without it (empty when there are none).
    pub fn with_prefix(&self, pe: &PathElement) -> FieldSet {
        self.children.get(pe).cloned().unwrap_or_default()
    }

    /// The members of either set.
    pub fn union(&self, other: &FieldSet) -> FieldSet {
        let mut out = self.clone();
        out.union_in_place(other);
        out
    }

    pub(crate) fn union_in_place(&mut self, other: &FieldSet) {
        self.members.extend(other.members.iter().cloned());
        for (pe, child) in &other.children {
            match self.children.get_mut(pe) {
                Some(mine) => mine.union_in_place(child),
                None => {
                    self.children.insert(pe.clone(), child.clone());
                }
            }
        }
    }

    /// The members of both sets.
    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.intersection(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if let Some(theirs) = other.children.get(pe) {
                let i = child.intersection(theirs);
                if !i.is_empty() {
                    children.insert(pe.clone(), i);
                }
            }
        }
        FieldSet { members, children }
    }

    /// The members of `self` that are not members of `other` (a parent minus a child is still
    /// the parent; a child minus its parent is still the child).
    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            match other.children.get(pe) {
                Some(theirs) => {
                    let d = child.difference(theirs);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Like [`FieldSet::difference`], but a member of `other` also removes everything under
    /// it from `self`.
    pub fn recursive_difference(&self, other: &FieldSet) -> FieldSet {
        let members = self.members.difference(&other.members).cloned().collect();
        let mut children = BTreeMap::new();
        for (pe, child) in &self.children {
            if other.members.contains(pe) {
                continue;
            }
            match other.children.get(pe) {
                Some(theirs) => {
                    let d = child.recursive_difference(theirs);
                    if !d.is_empty() {
                        children.insert(pe.clone(), d);
                    }
                }
                None => {
                    children.insert(pe.clone(), child.clone());
                }
            }
        }
        FieldSet { members, children }
    }

    /// Every member as a path, in upstream's iteration order: the members of a level (sorted),
    /// then each child's paths in element order.
    pub fn paths(&self) -> Vec<Path> {
        let mut out = Vec::new();
        let mut prefix = Vec::new();
        self.collect_paths(&mut prefix, &mut out);
        out
    }

    fn collect_paths(&self, prefix: &mut Vec<PathElement>, out: &mut Vec<Path>) {
        for m in &self.members {
            let mut p = prefix.clone();
            p.push(m.clone());
            out.push(Path(p));
        }
        for (pe, child) in &self.children {
            prefix.push(pe.clone());
            child.collect_paths(prefix, out);
            prefix.pop();
        }
    }

    /// The fieldsV1 encoding, byte for byte as upstream writes it (elements in order, an item
    /// that is both a member and a parent marked with `".":{}`).
    pub fn to_json_string(&self) -> String {
        let mut out = String::from("{");
        self.emit(false, &mut out);
        out.push('}');
        out
    }

    fn emit(&self, include_self: bool, out: &mut String) {
        let mut first = true;
        let mut sep = |out: &mut String| {
            if !first {
                out.push(',');
            }
            first = false;
        };
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            sep(out);
            out.push_str("\".\":{}");
        }
        for (pe, member, child) in self.merged() {
            sep(out);
            value::write_json_string(out, &pe.serialize());
            out.push(':');
            match child {
                None => out.push_str("{}"),
                Some(c) => {
                    out.push('{');
                    c.emit(member, out);
                    out.push('}');
                }
            }
        }
    }

    /// Members and children merged in element order: `(element, is member, subset)`.
    fn merged(&self) -> Vec<(&PathElement, bool, Option<&FieldSet>)> {
        let mut out = Vec::with_capacity(self.members.len() + self.children.len());
        let mut members = self.members.iter().peekable();
        let mut children = self.children.iter().peekable();
        loop {
            match (members.peek(), children.peek()) {
                (Some(m), Some((c, set))) => match (*m).cmp(*c) {
                    std::cmp::Ordering::Less => {
                        out.push((*m, true, None));
                        members.next();
                    }
                    std::cmp::Ordering::Greater => {
                        out.push((*c, false, Some(*set)));
                        children.next();
                    }
                    std::cmp::Ordering::Equal => {
                        out.push((*c, true, Some(*set)));
                        members.next();
                        children.next();
                    }
                },
                (Some(m), None) => {
                    out.push((*m, true, None));
                    members.next();
                }
                (None, Some((c, set))) => {
                    out.push((*c, false, Some(*set)));
                    children.next();
                }
                (None, None) => break,
            }
        }
        out
    }

    /// The fieldsV1 encoding as a JSON value (maps built in upstream's key order).
    pub fn to_fields_v1(&self) -> Value {
        Value::Object(self.to_map(false))
    }

    fn to_map(&self, include_self: bool) -> Map<String, Value> {
        let mut m = Map::new();
        if include_self && !(self.members.is_empty() && self.children.is_empty()) {
            m.insert(".".to_string(), Value::Object(Map::new()));
        }
        for (pe, member, child) in self.merged() {
            let v = match child {
                None => Map::new(),
                Some(c) => c.to_map(member),
            };
            m.insert(pe.serialize(), Value::Object(v));
        }
        m
    }

    /// Parses a fieldsV1 value. Keys with an unknown prefix are dropped, as upstream does;
    /// `null` is the empty set.
    pub fn from_fields_v1(v: &Value) -> Result<FieldSet, Error> {
        match v {
            Value::Null => Ok(FieldSet::new()),
            Value::Object(m) => Ok(read_level(m)?.0.unwrap_or_default()),
            other => Err(Error::InvalidFields(format!(
                "fieldsV1 must be an object, got {}",
                api::gofmt::GoType::of(other).name()
            ))),
        }
    }

    /// Parses fieldsV1 JSON text.
    pub fn from_json_str(s: &str) -> Result<FieldSet, Error> {
        let v: Value = serde_json::from_str(s).map_err(|e| Error::InvalidFields(e.to_string()))?;
        FieldSet::from_fields_v1(&v)
    }
}

/// One level of fieldsV1: the subset below it (if any) and whether the level's own element is
/// a member (`"."`, or no children at all).
fn read_level(m: &Map<String, Value>) -> Result<(Option<FieldSet>, bool), Error> {
    let mut children: Option<FieldSet> = None;
    let mut is_member = false;
    for (key, v) in m {
        if key == "." {
            is_member = true;
            continue;
        }
        let Some(pe) = PathElement::parse(key)? else {
            continue;
        };
        let (grand, child_is_member) = match v {
            Value::Null => (None, true),
            Value::Object(inner) => read_level(inner)?,
            other => {
                return Err(Error::InvalidFields(format!(
                    "parsing key {key:?}: expected an object, got {}",
                    api::gofmt::GoType::of(other).name()
                )));
            }
        };
        if child_is_member {
            children
                .get_or_insert_with(FieldSet::new)
                .members
                .insert(pe.clone());
        }
        if let Some(g) = grand {
            children
                .get_or_insert_with(FieldSet::new)
                .children
                .insert(pe, g);
        }
    }
    if children.is_none() {
        is_member = true;
    }
    Ok((children, is_member))
}

impl fmt::Display for FieldSet {
    /// One path per line, as upstream's `Set.String`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let lines: Vec<String> = self.paths().iter().map(ToString::to_string).collect();
        f.write_str(&lines.join("\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn p(parts: &[&str]) -> Path {
        Path::fields(parts)
    }

    #[test]
    fn algebra() {
        let a = FieldSet::from_paths(&[p(&["a", "b"]), p(&["a", "c"]), p(&["d"])]);
        let b = FieldSet::from_paths(&[p(&["a", "b"]), p(&["a"]), p(&["e"])]);
        assert_eq!(
            a.union(&b),
            FieldSet::from_paths(&[
                p(&["a", "b"]),
                p(&["a", "c"]),
                p(&["d"]),
                p(&["a"]),
                p(&["e"])
            ])
        );
        assert_eq!(a.intersection(&b), FieldSet::from_paths(&[p(&["a", "b"])]));
        assert_eq!(
            a.difference(&b),
            FieldSet::from_paths(&[p(&["a", "c"]), p(&["d"])])
        );
        assert_eq!(
            a.recursive_difference(&b),
            FieldSet::from_paths(&[p(&["d"])])
        );
        assert!(a.has(&p(&["a", "b"]).0));
        assert!(!a.has(&p(&["a"]).0));
        assert_eq!(a.len(), 3);
        assert!(a.difference(&a).is_empty());
        let mut empty_root = FieldSet::new();
        empty_root.insert(&[]);
        assert!(empty_root.is_empty());
    }

    #[test]
    fn iteration_order_is_members_first() {
        let s = FieldSet::from_paths(&[
            p(&["spec", "template", "x"]),
            p(&["spec", "replicas"]),
            p(&["metadata", "labels", "app"]),
            p(&["kind"]),
        ]);
        let shown: Vec<String> = s.paths().iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            [
                ".kind",
                ".metadata.labels.app",
                ".spec.replicas",
                ".spec.template.x"
            ]
        );
    }

    #[test]
    fn fields_v1_round_trip() {
        let text = r#"{"f:metadata":{"f:labels":{".":{},"f:app":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{},"f:ports":{".":{},"k:{\"containerPort\":80,\"protocol\":\"TCP\"}":{".":{},"f:containerPort":{}}}}},"f:finalizers":{"v:\"a\"":{},"v:\"b\"":{}},"f:replicas":{}}}"#;
        let s = FieldSet::from_json_str(text).unwrap();
        assert_eq!(s.to_json_string(), text);
        assert_eq!(FieldSet::from_fields_v1(&s.to_fields_v1()).unwrap(), s);
        assert!(s.has(&p(&["metadata", "labels"]).0));
        assert!(!s.has(&p(&["metadata"]).0));
    }

    #[test]
    fn fields_v1_normalizes_order_and_drops_unknown() {
        let s = FieldSet::from_fields_v1(&json!({
            "i:2": {}, "v:3": {}, "k:{ \"b\":1, \"a\":2}": {}, "f:z": {}, "v:\"x\"": {},
            "x:future": {}, "f:a": {"y:unknown": {}}
        }))
        .unwrap();
        assert_eq!(
            s.to_json_string(),
            r#"{"f:a":{},"f:z":{},"k:{\"a\":2,\"b\":1}":{},"v:3":{},"v:\"x\"":{},"i:2":{}}"#
        );
        assert!(FieldSet::from_fields_v1(&json!({"f:a": 1})).is_err());
        assert!(FieldSet::from_fields_v1(&json!({"k:{": {}})).is_err());
        assert!(FieldSet::from_fields_v1(&json!(null)).unwrap().is_empty());
        assert_eq!(FieldSet::new().to_json_string(), "{}");
    }
}
