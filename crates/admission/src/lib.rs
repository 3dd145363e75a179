//! The admission chain (upstream's `k8s.io/apiserver/pkg/admission` and the plugins of
//! `plugin/pkg/admission`).
//!
//! A write reaches admission after decoding and defaulting: every *mutating* plugin that
//! handles the operation may change the object ([`Plugin::admit`]), in the chain's order;
//! after the registry's own validation every *validating* plugin may refuse it
//! ([`Plugin::validate`]), again in order. The first error fails the request with the
//! plugin's `Status`.
//!
//! Plugins see cluster state only through [`Cluster`] (the API server implements it over
//! its watch caches and registry; [`fake::FakeCluster`] is the in-memory one for tests), so
//! their logic is testable without IO.

pub mod chain;
pub mod fake;
pub mod plugins;
pub mod policy;
pub mod webhook;

use std::sync::Arc;

use api::ApiError;
use serde_json::Value;

pub use chain::{Chain, ChainConfig, ConfigError};

/// The operation being admitted (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// Upstream's spelling (`CREATE`, `UPDATE`, `DELETE`, `CONNECT`), as in webhook rules
    /// and `AdmissionReview`.
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// A group, version and kind (or resource).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Gvk {
    pub group: String,
    pub version: String,
    pub kind: String,
}

/// What a plugin is asked about (`admission.Attributes`).
#[derive(Clone, Debug)]
pub struct Attributes {
    pub operation: Operation,
    /// The object's group, version and kind as served by the request.
    pub kind: Gvk,
    /// The resource's group, version and plural (`kind` field holds the plural).
    pub resource: Gvk,
    /// The subresource (`status`, `binding`, `scale`, …), empty for the main resource.
    pub subresource: String,
    /// The namespace ("" for cluster-scoped objects).
    pub namespace: String,
    /// The object's name; empty on a create with `generateName`.
    pub name: String,
    /// The new object (create, update); `None` on delete and connect.
    pub object: Option<Value>,
    /// The current object (update, delete).
    pub old_object: Option<Value>,
    /// The requesting user.
    pub user: auth::UserInfo,
    /// `dryRun=All`: plugins with side effects must have none.
    pub dry_run: bool,
    /// The operation's options (`CreateOptions`, `UpdateOptions`, `DeleteOptions`) as JSON.
    pub options: Option<Value>,
    /// Warnings for the client, returned as `Warning` headers whatever the outcome.
    pub warnings: Warnings,
    /// Annotations for the request's audit event (upstream's `AddAnnotation`).
    pub audit_annotations: AuditAnnotations,
}

/// The audit annotations of one request: shared by clones; a key set twice keeps its
/// first value, as upstream's `attributesRecord.AddAnnotation`.
#[derive(Clone, Debug, Default)]
pub struct AuditAnnotations(
    std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, String>>>,
);

impl AuditAnnotations {
    pub fn add(&self, key: impl Into<String>, value: impl Into<String>) {
        if let Ok(mut m) = self.0.lock() {
            m.entry(key.into()).or_insert_with(|| value.into());
        }
    }

    /// The annotations so far, leaving none.
    pub fn take(&self) -> std::collections::BTreeMap<String, String> {
        self.0
            .lock()
            .map(|mut m| std::mem::take(&mut *m))
            .unwrap_or_default()
    }
}

/// The warnings of one request (upstream's `warning.AddWarning` on the request context):
/// shared by clones, identical messages kept once, in the order they came.
#[derive(Clone, Debug, Default)]
pub struct Warnings(std::sync::Arc<std::sync::Mutex<Vec<String>>>);

impl Warnings {
    /// Adds `message` unless it is empty or already there.
    pub fn add(&self, message: impl Into<String>) {
        let message = message.into();
        if message.is_empty() {
            return;
        }
        if let Ok(mut list) = self.0.lock()
            && !list.contains(&message)
        {
            list.push(message);
        }
    }

    /// The warnings so far, leaving none.
    pub fn take(&self) -> Vec<String> {
        self.0
            .lock()
            .map(|mut l| std::mem::take(&mut *l))
            .unwrap_or_default()
    }

    /// A copy of the warnings so far.
    pub fn list(&self) -> Vec<String> {
        self.0.lock().map(|l| l.clone()).unwrap_or_default()
    }
}

impl Attributes {
    /// The attributes of `op` on `group`/`plural` (version `v1`) `namespace`/`name`, with no
    /// object, an empty kind and user, and no options; callers fill in the rest.
    pub fn on(op: Operation, group: &str, plural: &str, namespace: &str, name: &str) -> Self {
        Attributes {
            operation: op,
            kind: Gvk::default(),
            resource: Gvk {
                group: group.into(),
                version: "v1".into(),
                kind: plural.into(),
            },
            subresource: String::new(),
            namespace: namespace.into(),
            name: name.into(),
            object: None,
            old_object: None,
            user: auth::UserInfo::default(),
            dry_run: false,
            options: None,
            warnings: Warnings::default(),
            audit_annotations: AuditAnnotations::default(),
        }
    }

    /// Whether the request is on the given group and plural, main resource or subresource.
    pub fn is(&self, group: &str, plural: &str) -> bool {
        self.resource.group == group && self.resource.kind == plural
    }

    /// Whether the request is on the main resource `group`/`plural` (no subresource).
    pub fn is_main(&self, group: &str, plural: &str) -> bool {
        self.is(group, plural) && self.subresource.is_empty()
    }
}

/// One admission plugin. A plugin is mutating, validating or both (`MutationInterface`,
/// `ValidationInterface`); the default methods admit everything.
#[async_trait::async_trait]
pub trait Plugin: Send + Sync {
    /// The plugin's registered name (`--enable-admission-plugins`).
    fn name(&self) -> &'static str;

    /// Whether the plugin looks at this operation at all (`Handles`).
    fn handles(&self, op: Operation) -> bool;

    /// Whether [`Plugin::admit`] does anything.
    fn mutating(&self) -> bool {
        false
    }

    /// Whether [`Plugin::validate`] does anything.
    fn validating(&self) -> bool {
        false
    }

    /// May change `a.object`; an error refuses the request.
    async fn admit(&self, _a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        Ok(())
    }

    /// May refuse the request; never changes it.
    async fn validate(&self, _a: &Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        Ok(())
    }
}

/// Cluster state as admission plugins see it (upstream's listers and a client).
///
/// Reads come from the API server's watch caches (as upstream's informers); `update`
/// is a compare-and-swap write through the registry (`metadata.resourceVersion` of
/// `object` is the precondition; a stale one is a 409 Conflict).
#[async_trait::async_trait]
pub trait Cluster: Send + Sync {
    /// The object `group`/`plural` `namespace`/`name` (namespace "" for cluster-scoped).
    /// Shared, not copied: plugins read cluster objects on every request, and the
    /// registry hands out one parsed copy per object revision.
    async fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Value>>, ApiError>;

    /// Every object of `group`/`plural` in `namespace` ("" = all namespaces or
    /// cluster-scoped).
    async fn list(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
    ) -> Result<Vec<Arc<Value>>, ApiError>;

    /// The served resource of `group`/`version` `kind`: its plural and whether it is
    /// namespaced (for a policy's `paramKind`).
    async fn resource_for_kind(
        &self,
        _group: &str,
        _version: &str,
        _kind: &str,
    ) -> Option<(String, bool)> {
        None
    }

    /// Writes `object` (main resource, or `subresource` such as `status`), failing with a
    /// conflict when its resourceVersion is not the current one. Returns the written object.
    async fn update(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
        object: Value,
    ) -> Result<Value, ApiError>;
}
