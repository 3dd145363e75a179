//! Kubernetes API types and machinery for rkube, without IO.
//!
//! - [`catalog`]: the served resources (group, version, kind, plural, scope, verbs,
//!   subresources, storage prefix), as discovery and routing need them;
//! - [`status`]: API errors as upstream's `Status` objects, and field errors formatted as
//!   upstream formats them;
//! - [`meta`]: object metadata on JSON values, the registry's working form;
//! - [`selector`]: label and field selectors (parsing and matching, upstream's grammar);
//! - [`gofmt`]: values printed as Go's `fmt`, `strconv` and `encoding/json` print them, for
//!   upstream's messages and serializations byte for byte;
//! - [`health`]: the health endpoints' answers (`/healthz`, `/livez`, `/readyz`), as
//!   upstream's `healthz` package renders them;
//! - [`validation`]: names, labels, annotations and object metadata rules;
//! - [`schema`]: OpenAPI schemas of the built-in types;
//! - [`openapi`]: the `/openapi/v2` and `/openapi/v3` documents;
//! - [`quota`]: resource quota evaluation (usage per object, scopes, recounts);
//! - [`cron`]: cron schedules as robfig/cron's `ParseStandard` reads them, and their
//!   activation times;
//! - [`platform`]: the release served, Go's platform names and client-go's `User-Agent`
//!   form.
//!
//! Object types themselves are `k8s-openapi`'s, re-exported as [`k8s`].

pub mod catalog;
pub mod cron;
pub mod gofmt;
pub mod health;
pub mod jws;
pub mod kinds;
pub mod meta;
pub mod openapi;
pub mod platform;
pub mod qos;
pub mod quota;
pub mod schema;
pub mod selector;
pub mod status;
pub mod validation;

pub use k8s_openapi as k8s;
pub use status::{ApiError, FieldError};
