//! The Kubernetes-specific OpenAPI extensions of the built-in types' fields: how
//! strategic-merge-patch merges lists (`x-kubernetes-patch-strategy`,
//! `x-kubernetes-patch-merge-key`) and how server-side apply identifies list items and map
//! entries (`x-kubernetes-list-type`, `x-kubernetes-list-map-keys`, `x-kubernetes-map-type`).
//!
//! This is API semantics taken from upstream's type definitions (struct tags and `+listType`
//! markers); the schema builder injects it into the generated definitions.

/// The extensions of one field of one definition.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FieldExt {
    /// Definition name, e.g. `io.k8s.api.core.v1.PodSpec`.
    pub definition: &'static str,
    /// JSON field name, e.g. `containers`.
    pub field: &'static str,
    /// `x-kubernetes-patch-strategy`: `merge`, `replace`, `retainKeys`, `merge,retainKeys`.
    pub patch_strategy: Option<&'static str>,
    /// `x-kubernetes-patch-merge-key`.
    pub patch_merge_key: Option<&'static str>,
    /// `x-kubernetes-list-type`: `atomic`, `set`, `map`.
    pub list_type: Option<&'static str>,
    /// `x-kubernetes-list-map-keys` (with `list_type: map`).
    pub list_map_keys: &'static [&'static str],
    /// `x-kubernetes-map-type`: `atomic`, `granular` (for objects and maps).
    pub map_type: Option<&'static str>,
}

/// Every field of a built-in type that carries one of the extensions.
pub const FIELD_EXTENSIONS: &[FieldExt] = &[];
