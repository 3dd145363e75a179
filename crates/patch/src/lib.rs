//! JSON patch (RFC 6902), JSON merge patch (RFC 7386) and strategic merge patch, applied
//! exactly as upstream's API server applies them, on `serde_json::Value`s.
//!
//! - [`json_patch`]: `application/json-patch+json`, with evanphx/json-patch v4's behaviour
//!   and messages (the library upstream's API server uses).
//! - [`merge_patch`] / [`merge_patch_owned`] / [`merge_patch_document`]:
//!   `application/merge-patch+json`.
//! - [`strategic_merge_patch`]: `application/strategic-merge-patch+json`, with upstream's
//!   `k8s.io/apimachinery/pkg/util/strategicpatch` semantics; list strategies and merge keys
//!   come from the `x-kubernetes-patch-strategy` and `x-kubernetes-patch-merge-key`
//!   extensions of the type's OpenAPI schema ([`api::schema::extensions`]).
//!
//! Errors are [`PatchError`]s, whose messages are upstream's and which know the HTTP status
//! and `Status` object upstream's API server answers them with.
//!
//! Nothing here panics, whatever the input: where upstream's Go code would crash, the patch
//! is refused ([`PatchError::UpstreamPanic`]). Patches nesting deeper than [`MAX_DEPTH`]
//! are refused, so recursion stays shallow.

mod error;
mod gofmt;
mod gosort;
mod json_patch;
mod merge_patch;
mod schema_meta;
mod strategic;
mod three_way;

pub use error::PatchError;
pub use json_patch::{JsonPatchLimits, json_patch, json_patch_with_limits};
pub use merge_patch::{merge_patch, merge_patch_document, merge_patch_owned};
pub use strategic::strategic_merge_patch;
pub use three_way::{
    three_way_json_merge_patch, three_way_strategic_merge_patch, two_way_strategic_merge_patch,
};

/// The deepest nesting of objects and arrays a patch may have (and a JSON patch may create
/// in the document). It is `serde_json`'s parsing limit, so whatever a patch produces can be
/// parsed back.
pub const MAX_DEPTH: usize = 128;

/// The message of the Go runtime panic upstream hits on some inputs.
const UPSTREAM_NIL_DEREFERENCE: &str =
    "runtime error: invalid memory address or nil pointer dereference";
