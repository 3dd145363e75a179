//! OpenAPI schemas of the built-in types, with the Kubernetes extensions that patching and
//! server-side apply rely on (`x-kubernetes-patch-merge-key`, `x-kubernetes-list-type`, …),
//! and of custom resources, built from their CustomResourceDefinitions.
//!
//! Schemas are OpenAPI v3 schema objects as JSON values, in the form upstream publishes at
//! `/openapi/v3`: references are written `#/components/schemas/<definition name>` (e.g.
//! `io.k8s.api.apps.v1.Deployment`), and a reference that carries a description or an
//! extension is wrapped as the single member of `allOf`. Kinds carry
//! `x-kubernetes-group-version-kind`.
//!
//! [`builtin`] holds the definitions of every type reachable from the kinds of
//! [`crate::catalog::builtin`] (their List kinds, the subresources' kinds, and the meta types
//! the API speaks: `Status`, `DeleteOptions`, `WatchEvent`, discovery lists, …). It is built
//! once, on first use. [`Schemas::with_custom_resources`] layers the definitions of custom
//! resources over it without copying it, so a server rebuilds only that small layer when
//! CustomResourceDefinitions change. [`v2`] converts definitions to the Swagger 2.0 form
//! served at `/openapi/v2`.
//!
//! Definitions are kept as compact JSON text and parsed into trees only when looked up
//! ([`Schemas::get`], [`SchemaLookup`]); documents are written from the text
//! ([`Schemas::get_json`]). So the resident cost is about the size of the text (≈ 0.6 MB for
//! the built-in catalog) plus the trees actually used.

mod builtin;
pub mod crd;
pub mod extensions;
mod fixups;
mod initializers;
pub mod v2;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{LazyLock, OnceLock};

use serde_json::Value;

pub use crd::CustomResourceVersion;

/// How OpenAPI v3 documents reference a definition.
pub const V3_REF_PREFIX: &str = "#/components/schemas/";
/// How Swagger 2.0 documents reference a definition.
pub const V2_REF_PREFIX: &str = "#/definitions/";
/// The extension naming the group, version and kind of a definition (a list of
/// `{group, kind, version}` maps) or of an operation (one map).
pub const GVK_EXTENSION: &str = "x-kubernetes-group-version-kind";

/// Names of the definitions the API machinery itself speaks.
pub mod names {
    pub const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";
    pub const LIST_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta";
    pub const STATUS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Status";
    pub const DELETE_OPTIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions";
    pub const WATCH_EVENT: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent";
    pub const PATCH: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Patch";
    pub const API_RESOURCE_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIResourceList";
    pub const API_GROUP: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroup";
    pub const API_GROUP_LIST: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIGroupList";
    pub const API_VERSIONS: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.APIVersions";
    pub const VERSION_INFO: &str = "io.k8s.apimachinery.pkg.version.Info";
    pub const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
    pub const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";
    pub const TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.Time";
    pub const MICRO_TIME: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.MicroTime";
    pub const RAW_EXTENSION: &str = "io.k8s.apimachinery.pkg.runtime.RawExtension";
}

/// Where definitions are looked up by name.
pub trait SchemaLookup: Send + Sync {
    /// A definition by its name, e.g. `io.k8s.api.core.v1.PodSpec`.
    fn definition(&self, name: &str) -> Option<&Value>;
}

/// The definition name a `$ref` points at (`#/components/schemas/X` or
/// `#/definitions/X`).
pub fn ref_name(reference: &str) -> Option<&str> {
    reference
        .strip_prefix(V3_REF_PREFIX)
        .or_else(|| reference.strip_prefix(V2_REF_PREFIX))
}

/// Follows `$ref` (directly, or as the single member of `allOf`, as OpenAPI v3 wraps
/// references that carry a description) until a schema with content is reached. Unknown
/// references resolve to the schema itself.
pub fn resolve<'a>(lookup: &'a dyn SchemaLookup, mut schema: &'a Value) -> &'a Value {
    for _ in 0..32 {
        let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
            match schema
                .get("allOf")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
            {
                Some([only]) => only.get("$ref").and_then(Value::as_str),
                _ => None,
            }
        });
        match reference
            .and_then(ref_name)
            .and_then(|n| lookup.definition(n))
        {
            Some(next) => schema = next,
            None => return schema,
        }
    }
    schema
}

/// The definition name a schema references: its own `$ref`, or that of the single member of
/// its `allOf`.
pub fn referenced_name(schema: &Value) -> Option<&str> {
    let reference = schema.get("$ref").and_then(Value::as_str).or_else(|| {
        match schema
            .get("allOf")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
        {
            Some([only]) => only.get("$ref").and_then(Value::as_str),
            _ => None,
        }
    })?;
    ref_name(reference)
}

/// One kind and the definition that describes it.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct KindEntry {
    group: String,
    version: String,
    kind: String,
    definition: String,
}

/// One definition, held as compact JSON text and parsed on first access: most servers
/// never need most definitions as trees (documents are written from the text), so the
/// resident cost stays near the size of the text.
#[derive(Debug)]
struct Def {
    text: Box<str>,
    /// Swagger 2.0 text, where it is not a plain conversion of the v3 form (custom
    /// resources).
    v2_text: Option<Box<str>>,
    /// The definitions this one references.
    refs: Box<[Box<str>]>,
    value: OnceLock<Value>,
}

impl Def {
    fn new(value: &Value, v2: Option<&Value>) -> Def {
        let mut refs = Vec::new();
        collect_refs(value, &mut refs);
        refs.sort();
        refs.dedup();
        Def {
            text: serde_json::to_string(value).unwrap_or_default().into(),
            v2_text: v2.map(|v| serde_json::to_string(v).unwrap_or_default().into()),
            refs: refs.into_iter().map(String::into_boxed_str).collect(),
            value: OnceLock::new(),
        }
    }

    fn value(&self) -> &Value {
        self.value
            .get_or_init(|| serde_json::from_str(&self.text).unwrap_or(Value::Null))
    }

    /// The tree, without keeping it if it was not parsed yet.
    fn transient(&self) -> std::borrow::Cow<'_, Value> {
        match self.value.get() {
            Some(v) => std::borrow::Cow::Borrowed(v),
            None => {
                std::borrow::Cow::Owned(serde_json::from_str(&self.text).unwrap_or(Value::Null))
            }
        }
    }
}

/// A set of definitions: the built-in ones ([`builtin`]), or custom resources' layered over
/// them ([`Schemas::with_custom_resources`]).
#[derive(Debug)]
pub struct Schemas {
    /// This layer's definitions.
    definitions: BTreeMap<String, Def>,
    /// This layer's kinds, sorted.
    kinds: Vec<KindEntry>,
    /// The built-in layer under a custom one.
    base: Option<&'static Schemas>,
}

static BUILTIN: LazyLock<Schemas> =
    LazyLock::new(|| builtin::build(&crate::catalog::builtin(), extensions::FIELD_EXTENSIONS));

/// The definitions of the built-in types, built on first use.
pub fn builtin() -> &'static Schemas {
    &BUILTIN
}

/// The definition name of a built-in kind (or List kind), e.g. `("apps", "v1", "Deployment")`
/// → `io.k8s.api.apps.v1.Deployment`.
pub fn definition_for(group: &str, version: &str, kind: &str) -> Option<&'static str> {
    builtin().definition_for(group, version, kind)
}

impl Schemas {
    /// The definitions of the built-in types (same as [`builtin`]).
    pub fn builtin() -> &'static Schemas {
        builtin()
    }

    fn from_parts(
        definitions: BTreeMap<String, Def>,
        mut kinds: Vec<KindEntry>,
        base: Option<&'static Schemas>,
    ) -> Schemas {
        kinds.sort();
        kinds.dedup_by(|a, b| a.group == b.group && a.version == b.version && a.kind == b.kind);
        Schemas {
            definitions,
            kinds,
            base,
        }
    }

    /// The built-in definitions plus those of the given custom resource versions (kind and
    /// List kind of each), as upstream's apiextensions-apiserver publishes them. Only the
    /// custom definitions are held here; the built-in ones are shared.
    pub fn with_custom_resources(versions: &[CustomResourceVersion]) -> Schemas {
        let base = builtin();
        let mut definitions = BTreeMap::new();
        let mut kinds = Vec::new();
        for version in versions {
            let built = crd::build(version);
            for (name, published) in [
                (version.definition_name(), built.kind),
                (version.list_definition_name(), built.list),
            ] {
                kinds.push(KindEntry {
                    group: version.group.clone(),
                    version: version.version.clone(),
                    kind: published.kind,
                    definition: name.clone(),
                });
                definitions.insert(name, Def::new(&published.v3, Some(&published.v2)));
            }
        }
        Schemas::from_parts(definitions, kinds, Some(base))
    }

    /// The definition name of a kind (or List kind) of this set.
    pub fn definition_for(&self, group: &str, version: &str, kind: &str) -> Option<&str> {
        let own = self
            .kinds
            .binary_search_by(|e| {
                (e.group.as_str(), e.version.as_str(), e.kind.as_str()).cmp(&(group, version, kind))
            })
            .ok()
            .and_then(|i| self.kinds.get(i))
            .map(|e| e.definition.as_str());
        own.or_else(|| {
            self.base
                .and_then(|b| b.definition_for(group, version, kind))
        })
    }

    fn def(&self, name: &str) -> Option<&Def> {
        self.definitions
            .get(name)
            .or_else(|| self.base.and_then(|b| b.def(name)))
    }

    /// A definition by name, OpenAPI v3 form.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.def(name).map(Def::value)
    }

    /// A definition by name as compact JSON text (OpenAPI v3 form), without parsing it.
    pub fn get_json(&self, name: &str) -> Option<&str> {
        self.def(name).map(|d| &*d.text)
    }

    /// Whether the definition belongs to a custom resource (rather than a built-in type).
    pub fn is_custom(&self, name: &str) -> bool {
        self.base.is_some() && self.definitions.contains_key(name)
    }

    /// Every definition name, sorted.
    pub fn names(&self) -> Vec<&str> {
        let mut names: BTreeSet<&str> = self.definitions.keys().map(String::as_str).collect();
        if let Some(base) = self.base {
            names.extend(base.names());
        }
        names.into_iter().collect()
    }

    /// Every kind of this set (built-in and custom) as `(group, version, kind, definition)`,
    /// sorted.
    pub fn kinds(&self) -> Vec<(&str, &str, &str, &str)> {
        let mut out: BTreeMap<(&str, &str, &str), &str> = BTreeMap::new();
        if let Some(base) = self.base {
            for (g, v, k, d) in base.kinds() {
                out.insert((g, v, k), d);
            }
        }
        for e in &self.kinds {
            out.insert(
                (e.group.as_str(), e.version.as_str(), e.kind.as_str()),
                e.definition.as_str(),
            );
        }
        out.into_iter().map(|((g, v, k), d)| (g, v, k, d)).collect()
    }

    /// A definition in the Swagger 2.0 form served at `/openapi/v2` (references to
    /// `#/definitions/`, no `allOf` wrapping, no defaults, `int-or-string` formats).
    pub fn v2_definition(&self, name: &str) -> Option<Value> {
        let def = self.def(name)?;
        if let Some(v2) = &def.v2_text {
            return serde_json::from_str(v2).ok();
        }
        Some(v2::definition_to_v2(name, &def.transient()))
    }

    /// The names of the given definitions and of every definition they reference,
    /// transitively. Unknown names are left out.
    pub fn closure<'a, I>(&self, roots: I) -> BTreeSet<String>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<String> = roots.into_iter().map(str::to_string).collect();
        while let Some(name) = stack.pop() {
            if seen.contains(&name) {
                continue;
            }
            let Some(def) = self.def(&name) else {
                continue;
            };
            stack.extend(
                def.refs
                    .iter()
                    .filter(|r| !seen.contains(&***r))
                    .map(|r| r.to_string()),
            );
            seen.insert(name);
        }
        seen
    }
}

impl SchemaLookup for Schemas {
    fn definition(&self, name: &str) -> Option<&Value> {
        self.get(name)
    }
}

/// Every definition name referenced by `$ref` inside a schema (extension values excluded).
pub(crate) fn collect_refs(schema: &Value, out: &mut Vec<String>) {
    match schema {
        Value::Object(map) => {
            for (key, value) in map {
                if key == "$ref" {
                    if let Some(name) = value.as_str().and_then(ref_name) {
                        out.push(name.to_string());
                    }
                } else if key == "properties" || key == "patternProperties" {
                    if let Some(props) = value.as_object() {
                        for p in props.values() {
                            collect_refs(p, out);
                        }
                    }
                } else if !key.starts_with("x-")
                    && key != "enum"
                    && key != "default"
                    && key != "example"
                {
                    collect_refs(value, out);
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                collect_refs(item, out);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Map(BTreeMap<String, Value>);
    impl SchemaLookup for Map {
        fn definition(&self, name: &str) -> Option<&Value> {
            self.0.get(name)
        }
    }

    #[test]
    fn resolve_follows_refs_and_allof() {
        let mut m = BTreeMap::new();
        m.insert("A".to_string(), json!({"$ref": "#/definitions/B"}));
        m.insert(
            "B".to_string(),
            json!({"type": "object", "description": "b"}),
        );
        let lookup = Map(m);
        let s = json!({"allOf": [{"$ref": "#/components/schemas/A"}], "description": "x"});
        assert_eq!(resolve(&lookup, &s)["description"], "b");
        let unknown = json!({"$ref": "#/components/schemas/Nope"});
        assert_eq!(resolve(&lookup, &unknown), &unknown);
        assert_eq!(referenced_name(&s), Some("A"));
        assert_eq!(referenced_name(&json!({"type": "string"})), None);
    }

    #[test]
    fn builtin_kinds_have_definitions() {
        let schemas = builtin();
        for r in crate::catalog::builtin() {
            let name = schemas
                .definition_for(&r.group, &r.version, &r.kind)
                .unwrap_or_else(|| panic!("no definition for {}", r.qualified_kind()));
            let def = schemas.get(name).unwrap();
            let gvks = def[GVK_EXTENSION].as_array().unwrap();
            assert!(
                gvks.iter().any(|g| g["group"] == r.group.as_str()
                    && g["version"] == r.version.as_str()
                    && g["kind"] == r.kind.as_str()),
                "{name} lacks its GVK"
            );
            if r.has_verb("list") {
                let list = schemas
                    .definition_for(&r.group, &r.version, &r.list_kind())
                    .unwrap_or_else(|| panic!("no list definition for {}", r.qualified_kind()));
                let list_def = schemas.get(list).unwrap();
                assert_eq!(list_def["required"], json!(["items"]));
                assert_eq!(
                    referenced_name(&list_def["properties"]["items"]["items"]),
                    Some(name)
                );
            }
            for sub in r.subresources.iter().filter(|s| !s.is_connect()) {
                assert!(
                    schemas
                        .definition_for(&sub.group, &sub.version, &sub.kind)
                        .is_some(),
                    "{}/{}",
                    r.plural,
                    sub.name
                );
            }
        }
        assert_eq!(
            definition_for("apps", "v1", "Deployment"),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        assert_eq!(
            definition_for("events.k8s.io", "v1", "Event"),
            Some("io.k8s.api.events.v1.Event")
        );
        assert_eq!(
            definition_for("", "v1", "Event"),
            Some("io.k8s.api.core.v1.Event")
        );
        assert_eq!(
            definition_for("", "v1", "Status"),
            Some("io.k8s.apimachinery.pkg.apis.meta.v1.Status")
        );
        assert_eq!(definition_for("apps", "v1", "Nope"), None);
    }

    #[test]
    fn every_reference_resolves() {
        let schemas = builtin();
        for name in schemas.names() {
            let mut refs = Vec::new();
            collect_refs(schemas.get(name).unwrap(), &mut refs);
            for r in refs {
                assert!(schemas.get(&r).is_some(), "{name} references missing {r}");
            }
        }
    }

    #[test]
    fn deployment_strategy_is_resolvable() {
        let schemas = builtin();
        let deploy = schemas.get("io.k8s.api.apps.v1.Deployment").unwrap();
        let spec = resolve(schemas, &deploy["properties"]["spec"]);
        let strategy = &spec["properties"]["strategy"];
        assert!(
            strategy["description"]
                .as_str()
                .unwrap()
                .contains("deployment strategy")
        );
        let resolved = resolve(schemas, strategy);
        assert_eq!(
            resolved["description"],
            "DeploymentStrategy describes how to replace existing pods with new ones."
        );
        let rolling = resolve(schemas, &resolved["properties"]["rollingUpdate"]);
        let surge = resolve(schemas, &rolling["properties"]["maxSurge"]);
        assert_eq!(surge["format"], "int-or-string");
    }

    #[test]
    fn upstream_shapes_of_special_types() {
        let s = builtin();
        let ios = s
            .get("io.k8s.apimachinery.pkg.util.intstr.IntOrString")
            .unwrap();
        assert_eq!(
            ios["oneOf"],
            json!([{"type": "integer"}, {"type": "string"}])
        );
        assert!(ios.get("x-kubernetes-int-or-string").is_none());
        let q = s
            .get("io.k8s.apimachinery.pkg.api.resource.Quantity")
            .unwrap();
        assert_eq!(q["oneOf"], json!([{"type": "string"}, {"type": "number"}]));
        let t = s.get("io.k8s.apimachinery.pkg.apis.meta.v1.Time").unwrap();
        assert_eq!(t["format"], "date-time");
        let raw = s
            .get("io.k8s.apimachinery.pkg.runtime.RawExtension")
            .unwrap();
        assert_eq!(raw["type"], "object");
        let json_def = s
            .get("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON")
            .unwrap();
        assert!(json_def.get("type").is_none());
        assert!(json_def["description"].is_string());
        // k8s-openapi marks metadata required; upstream does not.
        let pod = s.get("io.k8s.api.core.v1.Pod").unwrap();
        assert!(pod.get("required").is_none());
        assert_eq!(pod["properties"]["metadata"]["default"], json!({}));
        let del = s
            .get("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions")
            .unwrap();
        let gvks = del[GVK_EXTENSION].as_array().unwrap();
        assert!(gvks.contains(&json!({"group": "apps", "kind": "DeleteOptions", "version": "v1"})));
        assert!(gvks.contains(&json!({"group": "", "kind": "DeleteOptions", "version": "v1"})));
    }

    #[test]
    fn closure_contains_references() {
        let s = builtin();
        let c = s.closure(["io.k8s.api.apps.v1.Deployment"]);
        assert!(c.contains("io.k8s.api.core.v1.PodSpec"));
        assert!(c.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
        assert!(!c.contains("io.k8s.api.core.v1.Node"));
    }

    #[test]
    fn custom_layer_shares_builtin() {
        let crd = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "crontabs.stable.example.com"},
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}
                    }}}
                }]
            }
        });
        let versions = CustomResourceVersion::from_crd(&crd);
        let s = Schemas::with_custom_resources(&versions);
        let name = s
            .definition_for("stable.example.com", "v1", "CronTab")
            .unwrap();
        assert_eq!(name, "com.example.stable.v1.CronTab");
        assert!(s.is_custom(name));
        assert!(!s.is_custom("io.k8s.api.apps.v1.Deployment"));
        assert_eq!(
            s.definition_for("apps", "v1", "Deployment"),
            Some("io.k8s.api.apps.v1.Deployment")
        );
        let kinds = s.kinds();
        assert!(kinds.contains(&(
            "stable.example.com",
            "v1",
            "CronTabList",
            "com.example.stable.v1.CronTabList"
        )));
        assert!(kinds.iter().any(|k| k.2 == "Deployment"));
        assert!(s.names().contains(&"com.example.stable.v1.CronTab"));
        let c = s.closure([name]);
        assert!(c.contains("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"));
    }
}
