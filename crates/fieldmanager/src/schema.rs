//! How server-side apply reads an OpenAPI v3 schema: the conversion upstream performs
//! (kube-openapi's `schemaconv`) into structured-merge-diff atoms, done lazily on the JSON
//! schema.
//!
//! - `type: object` is a map: its `properties` are named fields; other keys take the type of
//!   `additionalProperties`, or are "deduced" when there are no properties (or unknown fields
//!   are preserved), or are not allowed. `x-kubernetes-map-type: atomic` makes it one leaf.
//! - `type: array` is a list: `x-kubernetes-list-type` `map` (items keyed by
//!   `x-kubernetes-list-map-keys`), `set` (items keyed by value) or `atomic`; without it,
//!   `x-kubernetes-patch-strategy: merge` makes it associative (keyed by the merge key, or a
//!   set), anything else atomic.
//! - A schema without `type` accepts scalars, lists and maps.
//! - `Quantity` is an untyped scalar and `RawExtension` an untyped atomic value, whatever
//!   their schemas say.

use std::fmt;

use api::schema::{SchemaLookup, ref_name};
use serde_json::{Map, Value};

const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
const MAX_REF_DEPTH: usize = 32;

/// A lookup with no definitions (for schemaless custom resources).
struct NoDefinitions;

impl SchemaLookup for NoDefinitions {
    fn definition(&self, _name: &str) -> Option<&Value> {
        None
    }
}

static NO_DEFINITIONS: NoDefinitions = NoDefinitions;

/// The schema of the objects of one kind, as field management needs it.
#[derive(Clone, Copy)]
pub struct ObjectSchema<'a> {
    pub(crate) lookup: &'a dyn SchemaLookup,
    pub(crate) root: Option<&'a Value>,
    /// Objects are Go structs upstream: their zero values (empty nested structs, nulls for
    /// required pointers) are part of the typed object the field manager compares.
    pub(crate) structured: bool,
    /// The global `preserveUnknownFields` of upstream's type converter.
    pub(crate) preserve_unknown_fields: bool,
}

impl fmt::Debug for ObjectSchema<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ObjectSchema")
            .field("root", &self.root)
            .field("structured", &self.structured)
            .field("preserve_unknown_fields", &self.preserve_unknown_fields)
            .finish_non_exhaustive()
    }
}

impl<'a> ObjectSchema<'a> {
    /// A built-in kind: `root` is its definition (e.g. `io.k8s.api.apps.v1.Deployment`),
    /// references resolve through `lookup`. Zero values of non-pointer struct fields
    /// (`default: {}`, or the zero scalar for non-omitempty fields) and nulls for required
    /// fields are part of the objects compared, as upstream's typed objects have them.
    pub fn builtin(root: &'a Value, lookup: &'a dyn SchemaLookup) -> Self {
        ObjectSchema {
            lookup,
            root: Some(root),
            structured: true,
            preserve_unknown_fields: false,
        }
    }

    /// A custom resource with a structural schema (objects are unstructured upstream).
    pub fn custom(root: &'a Value, lookup: &'a dyn SchemaLookup) -> Self {
        ObjectSchema {
            lookup,
            root: Some(root),
            structured: false,
            preserve_unknown_fields: false,
        }
    }

    /// A custom resource without a schema: every map is granular, every list atomic.
    pub fn deduced() -> ObjectSchema<'static> {
        ObjectSchema {
            lookup: &NO_DEFINITIONS,
            root: None,
            structured: false,
            preserve_unknown_fields: false,
        }
    }

    /// Sets upstream's global `preserveUnknownFields` (a v1beta1 CRD with
    /// `spec.preserveUnknownFields: true`): unknown fields anywhere are deduced.
    pub fn preserving_unknown_fields(mut self, preserve: bool) -> Self {
        self.preserve_unknown_fields = preserve;
        self
    }

    pub(crate) fn root_ref(&self) -> TypeRef<'a> {
        match self.root {
            Some(node) => TypeRef::Node {
                node,
                preserve: self.preserve_unknown_fields,
            },
            None => TypeRef::Deduced,
        }
    }

    /// The atom a type reference stands for.
    pub(crate) fn resolve(&self, tr: TypeRef<'a>) -> Atom<'a> {
        match tr {
            TypeRef::Deduced => Atom::deduced(),
            TypeRef::UntypedAtomic => Atom::untyped_atomic(),
            TypeRef::Empty => Atom::default(),
            TypeRef::Node { node, preserve } => match reference(node) {
                Some(name) => self.resolve_named(name, map_type(node)),
                None => self.parse(node, preserve),
            },
        }
    }

    fn resolve_named(&self, name: &str, overridden: Option<Rel>) -> Atom<'a> {
        if name == QUANTITY {
            return Atom::scalar(Scalar::Untyped);
        }
        if name == RAW_EXTENSION {
            return Atom::untyped_atomic();
        }
        let Some(mut def) = self.lookup.definition(name) else {
            // Upstream fails on a dangling reference; deducing keeps apply usable when a
            // definition is missing.
            return Atom::deduced();
        };
        for _ in 0..MAX_REF_DEPTH {
            match reference(def).and_then(|n| self.lookup.definition(n)) {
                Some(next) => def = next,
                None => break,
            }
        }
        let mut atom = self.parse(def, self.preserve_unknown_fields);
        if let Some(rel) = overridden {
            if let Some(m) = atom.map.as_mut() {
                m.rel = rel;
            } else if let Some(l) = atom.list.as_mut() {
                l.rel = rel;
            }
        }
        atom
    }

    fn parse(&self, node: &'a Value, preserve: bool) -> Atom<'a> {
        let preserve = preserve
            || node.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        let typ = match node.get("type") {
            Some(Value::String(s)) => s.as_str(),
            Some(Value::Array(a)) => a.first().and_then(Value::as_str).unwrap_or(""),
            _ => "",
        };
        match typ {
            "" => Atom {
                scalar: Some(Scalar::Untyped),
                list: Some(parse_list(node, preserve)),
                map: Some(parse_object(node, preserve)),
            },
            "object" => Atom {
                map: Some(parse_object(node, preserve)),
                ..Atom::default()
            },
            "array" => Atom {
                list: Some(parse_list(node, preserve)),
                ..Atom::default()
            },
            "integer" | "number" => Atom::scalar(Scalar::Numeric),
            "boolean" => Atom::scalar(Scalar::Boolean),
            "string" => match node.get("format").and_then(Value::as_str).unwrap_or("") {
                "" | "byte" => Atom::scalar(Scalar::String),
                _ => Atom::scalar(Scalar::Untyped),
            },
            _ => Atom::scalar(Scalar::Untyped),
        }
    }

    /// Whether a reference is upstream's `__untyped_deduced_` (or an inlined untyped scalar).
    pub(crate) fn is_untyped_deduced_ref(&self, tr: TypeRef<'a>) -> bool {
        match tr {
            TypeRef::Deduced => true,
            TypeRef::Node { node, preserve } => {
                reference(node).is_none()
                    && self.parse(node, preserve).scalar == Some(Scalar::Untyped)
            }
            TypeRef::UntypedAtomic | TypeRef::Empty => false,
        }
    }

    /// A map with no declared fields whose values are deduced (upstream skips reconciling
    /// those).
    pub(crate) fn is_untyped_deduced_map(&self, m: &MapType<'a>) -> bool {
        !m.has_fields() && self.is_untyped_deduced_ref(m.elem)
    }
}

/// The definition a schema references: its `$ref`, or that of the single member of `allOf`.
pub(crate) fn reference(node: &Value) -> Option<&str> {
    let r = node.get("$ref").and_then(Value::as_str).or_else(|| {
        match node
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([only]) => only.get("$ref").and_then(Value::as_str),
            _ => None,
        }
    })?;
    Some(ref_name(r).unwrap_or(r))
}

fn map_type(node: &Value) -> Option<Rel> {
    match node.get("x-kubernetes-map-type").and_then(Value::as_str) {
        Some("atomic") => Some(Rel::Atomic),
        Some("granular") => Some(Rel::Separable),
        _ => None,
    }
}

fn parse_object(node: &Value, preserve: bool) -> MapType<'_> {
    let props = node.get("properties").and_then(Value::as_object);
    let has_props = props.is_some_and(|p| !p.is_empty());
    let elem = match node.get("additionalProperties") {
        None | Some(Value::Null) => {
            if preserve || !has_props {
                TypeRef::Deduced
            } else {
                TypeRef::Empty
            }
        }
        Some(Value::Bool(true)) => TypeRef::Deduced,
        Some(Value::Bool(false)) => TypeRef::Empty,
        Some(schema @ Value::Object(_)) => TypeRef::Node {
            node: schema,
            preserve,
        },
        Some(_) => TypeRef::Deduced,
    };
    MapType {
        node: Some(node),
        props,
        preserve,
        elem,
        rel: map_type(node).unwrap_or(Rel::Separable),
    }
}

fn parse_list(node: &Value, preserve: bool) -> ListType<'_> {
    let (rel, keys) = list_relationship(node);
    let elem = match node.get("items") {
        Some(items @ Value::Object(_)) => TypeRef::Node {
            node: items,
            preserve,
        },
        Some(Value::Array(_)) => TypeRef::Deduced,
        _ => TypeRef::UntypedAtomic,
    };
    ListType { elem, rel, keys }
}

fn list_relationship(node: &Value) -> (Rel, Vec<&str>) {
    if let Some(list_type) = node.get("x-kubernetes-list-type") {
        return match list_type.as_str() {
            Some("set") => (Rel::Associative, Vec::new()),
            Some("map") => {
                let keys = node
                    .get("x-kubernetes-list-map-keys")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                (Rel::Associative, keys)
            }
            _ => (Rel::Atomic, Vec::new()),
        };
    }
    if let Some(strategy) = node.get("x-kubernetes-patch-strategy") {
        return match strategy.as_str() {
            Some("merge") | Some("merge,retainKeys") => {
                match node
                    .get("x-kubernetes-patch-merge-key")
                    .and_then(Value::as_str)
                {
                    Some(key) => (Rel::Associative, vec![key]),
                    None => (Rel::Associative, Vec::new()),
                }
            }
            _ => (Rel::Atomic, Vec::new()),
        };
    }
    (Rel::Atomic, Vec::new())
}

/// A reference to a type.
#[derive(Clone, Copy, Debug)]
pub(crate) enum TypeRef<'a> {
    /// A schema node (a `$ref` to a definition, or an inlined schema); `preserve` is the
    /// preserve-unknown-fields state inherited by inlined schemas.
    Node { node: &'a Value, preserve: bool },
    /// Upstream's `__untyped_deduced_`: scalars, atomic lists, granular maps of deduced values.
    Deduced,
    /// Upstream's `__untyped_atomic_`: scalars, atomic lists, atomic maps.
    UntypedAtomic,
    /// No type: fields of this kind are not allowed.
    Empty,
}

impl TypeRef<'_> {
    pub(crate) fn is_empty(&self) -> bool {
        matches!(self, TypeRef::Empty)
    }
}

/// How the elements of a container relate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rel {
    /// The container is one leaf.
    Atomic,
    /// List items are identified by key or value.
    Associative,
    /// Map entries are independent.
    Separable,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scalar {
    Numeric,
    String,
    Boolean,
    Untyped,
}

#[derive(Clone, Debug)]
pub(crate) struct ListType<'a> {
    pub elem: TypeRef<'a>,
    pub rel: Rel,
    pub keys: Vec<&'a str>,
}

#[derive(Clone, Debug)]
pub(crate) struct MapType<'a> {
    node: Option<&'a Value>,
    props: Option<&'a Map<String, Value>>,
    preserve: bool,
    pub elem: TypeRef<'a>,
    pub rel: Rel,
}

impl<'a> MapType<'a> {
    fn untyped(elem: TypeRef<'a>, rel: Rel) -> Self {
        MapType {
            node: None,
            props: None,
            preserve: false,
            elem,
            rel,
        }
    }

    /// The type of a declared field.
    pub(crate) fn field(&self, name: &str) -> Option<TypeRef<'a>> {
        self.props?.get(name).map(|node| TypeRef::Node {
            node,
            preserve: self.preserve,
        })
    }

    /// The schema of a declared field.
    pub(crate) fn field_schema(&self, name: &str) -> Option<&'a Value> {
        self.props?.get(name)
    }

    /// The type of a key: its declared type, or the type of other keys.
    pub(crate) fn type_of(&self, name: &str) -> TypeRef<'a> {
        self.field(name).unwrap_or(self.elem)
    }

    /// Like [`MapType::type_of`], but keys that are not allowed are deduced rather than
    /// rejected (for stored objects, which upstream never sees with undeclared fields).
    pub(crate) fn type_of_lenient(&self, name: &str) -> TypeRef<'a> {
        match self.type_of(name) {
            TypeRef::Empty => TypeRef::Deduced,
            t => t,
        }
    }

    pub(crate) fn has_fields(&self) -> bool {
        self.props.is_some_and(|p| !p.is_empty())
    }

    /// The `default` of a declared field.
    pub(crate) fn field_default(&self, name: &str) -> Option<&'a Value> {
        self.props?.get(name)?.get("default")
    }

    /// The declared fields with their schemas.
    pub(crate) fn fields(&self) -> impl Iterator<Item = (&'a String, &'a Value)> {
        self.props.into_iter().flat_map(|p| p.iter())
    }

    /// Whether a field is listed in `required`.
    pub(crate) fn is_required(&self, name: &str) -> bool {
        self.node
            .and_then(|n| n.get("required"))
            .and_then(Value::as_array)
            .is_some_and(|r| r.iter().any(|x| x.as_str() == Some(name)))
    }
}

/// What a type accepts: any of a scalar, a list, a map.
#[derive(Clone, Debug, Default)]
pub(crate) struct Atom<'a> {
    pub scalar: Option<Scalar>,
    pub list: Option<ListType<'a>>,
    pub map: Option<MapType<'a>>,
}

impl<'a> Atom<'a> {
    fn scalar(s: Scalar) -> Self {
        Atom {
            scalar: Some(s),
            ..Atom::default()
        }
    }

    fn deduced() -> Self {
        Atom {
            scalar: Some(Scalar::Untyped),
            list: Some(ListType {
                elem: TypeRef::UntypedAtomic,
                rel: Rel::Atomic,
                keys: Vec::new(),
            }),
            map: Some(MapType::untyped(TypeRef::Deduced, Rel::Separable)),
        }
    }

    fn untyped_atomic() -> Self {
        Atom {
            scalar: Some(Scalar::Untyped),
            list: Some(ListType {
                elem: TypeRef::UntypedAtomic,
                rel: Rel::Atomic,
                keys: Vec::new(),
            }),
            map: Some(MapType::untyped(TypeRef::UntypedAtomic, Rel::Atomic)),
        }
    }

    /// The part of the atom that applies to `v` (upstream's `deduceAtom`): the whole atom
    /// for an absent or null value, or one whose kind the atom does not accept.
    pub(crate) fn deduce(&self, v: Option<&Value>) -> Atom<'a> {
        let pick = match v {
            Some(Value::Number(_) | Value::String(_) | Value::Bool(_)) if self.scalar.is_some() => {
                Some(Atom {
                    scalar: self.scalar,
                    ..Atom::default()
                })
            }
            Some(Value::Array(_)) if self.list.is_some() => Some(Atom {
                list: self.list.clone(),
                ..Atom::default()
            }),
            Some(Value::Object(_)) if self.map.is_some() => Some(Atom {
                map: self.map.clone(),
                ..Atom::default()
            }),
            _ => None,
        };
        pick.unwrap_or_else(|| self.clone())
    }

    /// Whether two atoms deduced from the same type are the same.
    pub(crate) fn same_shape(&self, other: &Atom<'_>) -> bool {
        self.scalar.is_some() == other.scalar.is_some()
            && self.list.is_some() == other.list.is_some()
            && self.map.is_some() == other.map.is_some()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    struct Defs(BTreeMap<String, Value>);
    impl SchemaLookup for Defs {
        fn definition(&self, name: &str) -> Option<&Value> {
            self.0.get(name)
        }
    }

    #[test]
    fn conversion_rules() {
        let mut m = BTreeMap::new();
        m.insert(
            "Sel".to_string(),
            json!({"type": "object", "x-kubernetes-map-type": "atomic", "properties": {"a": {"type": "string"}}}),
        );
        m.insert(QUANTITY.to_string(), json!({"type": "object"}));
        let defs = Defs(m);
        let root = json!({
            "type": "object",
            "properties": {
                "sel": {"allOf": [{"$ref": "#/components/schemas/Sel"}]},
                "granular": {"allOf": [{"$ref": "#/components/schemas/Sel"}], "x-kubernetes-map-type": "granular"},
                "q": {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.api.resource.Quantity"},
                "plain": {"type": "array", "items": {"type": "string"}},
                "merge": {"type": "array", "items": {"type": "object"}, "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
                "set": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
                "map": {"type": "array", "items": {"type": "object"}, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"]},
                "any": {},
                "ios": {"type": "string", "format": "int-or-string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}}
            }
        });
        let s = ObjectSchema::custom(&root, &defs);
        let top = s.resolve(s.root_ref());
        let m = top.map.as_ref().unwrap();
        assert!(m.field("nope").is_none());
        assert!(m.elem.is_empty());
        let get = |name: &str| s.resolve(m.field(name).unwrap());
        assert_eq!(get("sel").map.unwrap().rel, Rel::Atomic);
        assert_eq!(get("granular").map.unwrap().rel, Rel::Separable);
        assert_eq!(get("q").scalar, Some(Scalar::Untyped));
        assert!(get("q").map.is_none());
        assert_eq!(get("plain").list.unwrap().rel, Rel::Atomic);
        let merge = get("merge").list.unwrap();
        assert_eq!((merge.rel, merge.keys), (Rel::Associative, vec!["name"]));
        let set = get("set").list.unwrap();
        assert_eq!((set.rel, set.keys.len()), (Rel::Associative, 0));
        assert_eq!(get("map").list.unwrap().keys, vec!["port", "protocol"]);
        let any = get("any");
        assert!(any.scalar.is_some() && any.list.is_some() && any.map.is_some());
        assert_eq!(get("ios").scalar, Some(Scalar::Untyped));
        let labels = get("labels").map.unwrap();
        assert!(!labels.has_fields());
        assert!(!s.is_untyped_deduced_map(&labels));
        assert!(s.is_untyped_deduced_map(&any.map.unwrap()));
    }

    #[test]
    fn preserve_unknown_fields_inherits_into_inlined_schemas() {
        let root = json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
        });
        let s = ObjectSchema::custom(&root, &NO_DEFINITIONS);
        let top = s.resolve(s.root_ref()).map.unwrap();
        assert!(matches!(top.elem, TypeRef::Deduced));
        let spec = s.resolve(top.field("spec").unwrap()).map.unwrap();
        assert!(matches!(spec.elem, TypeRef::Deduced));
        let plain = json!({"type": "object", "properties": {"a": {"type": "string"}}});
        let s = ObjectSchema::custom(&plain, &NO_DEFINITIONS);
        assert!(s.resolve(s.root_ref()).map.unwrap().elem.is_empty());
    }

    #[test]
    fn deduce_picks_the_matching_part() {
        let a = Atom::deduced();
        assert!(a.deduce(Some(&json!(1))).map.is_none());
        assert!(a.deduce(Some(&json!({}))).map.is_some());
        assert!(a.deduce(Some(&json!({}))).scalar.is_none());
        assert!(a.deduce(Some(&json!(null))).same_shape(&a));
        let only_map = Atom {
            map: a.map.clone(),
            ..Atom::default()
        };
        assert!(only_map.deduce(Some(&json!("x"))).same_shape(&only_map));
    }
}
