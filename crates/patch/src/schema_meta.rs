//! Patch metadata from OpenAPI schemas, answering the questions upstream's
//! `PatchMetaFromStruct` answers from Go struct tags: what type a field has, and its patch
//! strategy and merge key.

use api::schema::{SchemaLookup, ref_name};
use serde_json::{Map, Value};

use crate::gofmt;

/// `x-kubernetes-patch-strategy`.
const PATCH_STRATEGY: &str = "x-kubernetes-patch-strategy";
/// `x-kubernetes-patch-merge-key`.
const PATCH_MERGE_KEY: &str = "x-kubernetes-patch-merge-key";

/// The type of a value, as far as patching needs it: upstream's `reflect.Type`.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Node<'s> {
    /// No schema information (no schema, an unresolvable reference, a free-form value):
    /// every lookup succeeds without metadata.
    Unknown,
    /// A struct: an object schema with properties (or none: a struct without JSON fields,
    /// such as `RawExtension`). `name` is the Go type name, for messages.
    Struct {
        name: &'s str,
        properties: Option<&'s Map<String, Value>>,
    },
    /// A map (`additionalProperties`).
    Map,
    /// A list, with its items' schema.
    Slice { items: Option<&'s Value> },
    /// A scalar, named as Go names its kind (`string`, `int32`, `int64`, `bool`, ...).
    Scalar(&'static str),
}

impl<'s> Node<'s> {
    /// Go's `Kind().String()` of the type.
    pub(crate) fn kind_name(&self) -> &'static str {
        match self {
            Node::Unknown => "interface",
            Node::Struct { .. } => "struct",
            Node::Map => "map",
            Node::Slice { .. } => "slice",
            Node::Scalar(k) => k,
        }
    }
}

/// `patchStrategy` (split on commas) and `patchMergeKey` of a field.
#[derive(Clone, Debug, Default)]
pub(crate) struct PatchMeta {
    pub(crate) strategies: Vec<String>,
    pub(crate) merge_key: String,
}

pub(crate) struct Schemas<'s> {
    pub(crate) lookup: &'s dyn SchemaLookup,
}

impl<'s> Schemas<'s> {
    /// The type a schema describes, following references.
    pub(crate) fn classify(&self, schema: &'s Value) -> Node<'s> {
        let mut name = self.root_name(schema);
        let mut schema = schema;
        for _ in 0..64 {
            match reference(schema) {
                Some(r) => {
                    let Some(def) = ref_name(r) else {
                        return Node::Unknown;
                    };
                    let Some(next) = self.lookup.definition(def) else {
                        return Node::Unknown;
                    };
                    name = def.rsplit('.').next().unwrap_or(def);
                    schema = next;
                }
                None => return shape(schema, name),
            }
        }
        Node::Unknown
    }

    /// The Go type name of a root schema given directly (not as a reference): the kind of
    /// its `x-kubernetes-group-version-kind`, if any.
    fn root_name(&self, schema: &'s Value) -> &'s str {
        schema
            .get("x-kubernetes-group-version-kind")
            .and_then(Value::as_array)
            .and_then(|gvks| gvks.first())
            .and_then(|gvk| gvk.get("kind"))
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    /// `LookupPatchMetadataForStruct`: the type and patch metadata of field `key` of a struct.
    pub(crate) fn lookup_struct(
        &self,
        node: &Node<'s>,
        key: &str,
    ) -> Result<(Node<'s>, PatchMeta), String> {
        match node {
            Node::Unknown => Ok((Node::Unknown, PatchMeta::default())),
            Node::Struct { name, properties } => {
                let field = properties.and_then(|props| {
                    props.get(key).or_else(|| {
                        props
                            .iter()
                            .find(|(k, _)| gofmt::equal_fold(k, key))
                            .map(|(_, v)| v)
                    })
                });
                let Some(field) = field else {
                    return Err(format!(
                        "unable to find api field in struct {name} for the json field {}",
                        gofmt::go_quote(key)
                    ));
                };
                let meta = PatchMeta {
                    strategies: field
                        .get(PATCH_STRATEGY)
                        .and_then(Value::as_str)
                        .map(|s| s.split(',').map(str::to_string).collect())
                        .unwrap_or_default(),
                    merge_key: field
                        .get(PATCH_MERGE_KEY)
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                };
                Ok((self.classify(field), meta))
            }
            other => Err(format!(
                "merging an object in json but data type is not struct, instead is: {}",
                other.kind_name()
            )),
        }
    }

    /// `LookupPatchMetadataForSlice`: the item type and patch metadata of list field `key`.
    pub(crate) fn lookup_slice(
        &self,
        node: &Node<'s>,
        key: &str,
    ) -> Result<(Node<'s>, PatchMeta), String> {
        if matches!(node, Node::Unknown) {
            return Ok((Node::Unknown, PatchMeta::default()));
        }
        let (field, meta) = self.lookup_struct(node, key)?;
        match field {
            Node::Slice { items } => {
                let item = items.map_or(Node::Unknown, |i| self.classify(i));
                if matches!(item, Node::Slice { .. }) {
                    return Err("unexpected slice of slice".to_string());
                }
                Ok((item, meta))
            }
            Node::Unknown => Ok((Node::Unknown, meta)),
            _ => Err(format!(
                "expected slice or array type, but got: {}",
                node.kind_name()
            )),
        }
    }
}

/// The reference a schema is: its `$ref`, or that of the single member of its `allOf`.
fn reference(schema: &Value) -> Option<&str> {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return Some(r);
    }
    match schema
        .get("allOf")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
    {
        Some([only]) => only.get("$ref").and_then(Value::as_str),
        _ => None,
    }
}

fn shape<'s>(schema: &'s Value, name: &'s str) -> Node<'s> {
    let Some(obj) = schema.as_object() else {
        return Node::Unknown;
    };
    if let Some(props) = obj.get("properties").and_then(Value::as_object) {
        return Node::Struct {
            name,
            properties: Some(props),
        };
    }
    let has_additional = obj
        .get("additionalProperties")
        .is_some_and(|a| !matches!(a, Value::Bool(false)));
    match obj.get("type").and_then(Value::as_str) {
        Some("object") if has_additional => Node::Map,
        Some("object") => {
            if obj
                .get("x-kubernetes-preserve-unknown-fields")
                .and_then(Value::as_bool)
                == Some(true)
            {
                Node::Unknown
            } else {
                Node::Struct {
                    name,
                    properties: None,
                }
            }
        }
        Some("array") => Node::Slice {
            items: obj.get("items"),
        },
        Some("string") => Node::Scalar("string"),
        Some("integer") => match obj.get("format").and_then(Value::as_str) {
            Some("int32") => Node::Scalar("int32"),
            _ => Node::Scalar("int64"),
        },
        Some("number") => match obj.get("format").and_then(Value::as_str) {
            Some("float") => Node::Scalar("float32"),
            _ => Node::Scalar("float64"),
        },
        Some("boolean") => Node::Scalar("bool"),
        _ if has_additional => Node::Map,
        _ if obj.contains_key("items") => Node::Slice {
            items: obj.get("items"),
        },
        _ => Node::Unknown,
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
    fn lookups() {
        let defs = Defs(BTreeMap::from([
            (
                "io.k8s.api.core.v1.PodSpec".to_string(),
                json!({"type": "object", "properties": {
                    "containers": {"type": "array", "items": {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"},
                                   "x-kubernetes-patch-strategy": "merge", "x-kubernetes-patch-merge-key": "name"},
                    "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
                    "raw": {"allOf": [{"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.runtime.RawExtension"}]}
                }}),
            ),
            (
                "io.k8s.api.core.v1.Container".to_string(),
                json!({"type": "object", "properties": {"name": {"type": "string"}}}),
            ),
            (
                "io.k8s.apimachinery.pkg.runtime.RawExtension".to_string(),
                json!({"type": "object"}),
            ),
        ]));
        let s = Schemas { lookup: &defs };
        let root_schema = json!({"$ref": "#/components/schemas/io.k8s.api.core.v1.PodSpec"});
        let root = s.classify(&root_schema);
        let (item, meta) = s.lookup_slice(&root, "containers").unwrap();
        assert!(matches!(
            item,
            Node::Struct {
                name: "Container",
                ..
            }
        ));
        assert_eq!(meta.strategies, vec!["merge"]);
        assert_eq!(meta.merge_key, "name");
        let (item, _) = s.lookup_slice(&root, "Containers").unwrap();
        assert!(matches!(item, Node::Struct { .. }));
        assert_eq!(
            s.lookup_struct(&root, "nope").unwrap_err(),
            "unable to find api field in struct PodSpec for the json field \"nope\""
        );
        let (map, _) = s.lookup_struct(&root, "nodeSelector").unwrap();
        assert_eq!(
            s.lookup_struct(&map, "a").unwrap_err(),
            "merging an object in json but data type is not struct, instead is: map"
        );
        let (raw, _) = s.lookup_struct(&root, "raw").unwrap();
        assert_eq!(
            s.lookup_struct(&raw, "a").unwrap_err(),
            "unable to find api field in struct RawExtension for the json field \"a\""
        );
        assert_eq!(
            s.lookup_slice(&root, "nodeSelector").unwrap_err(),
            "expected slice or array type, but got: struct"
        );
        let unknown = s.classify(&Value::Null);
        assert!(s.lookup_struct(&unknown, "x").is_ok());
        let dangling = json!({"$ref": "#/components/schemas/nope"});
        assert!(matches!(s.classify(&dangling), Node::Unknown));
    }
}
