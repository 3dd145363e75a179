//! The registry's side of admission: the attributes of a write, running the chain at
//! upstream's points (mutating after decoding and defaulting, validating after the
//! strategy's validation, both before the store), and [`admission::Cluster`] over the
//! watch caches for the plugins.

use std::sync::Arc;

use admission::{Attributes, Gvk, Operation};
use api::ApiError;
use serde_json::{Value, json};

use super::{Precondition, Registry, Resource, WriteOptions};

/// What the registry knows of a write, for [`Registry::admission_attributes`].
pub struct Write<'a> {
    pub operation: Operation,
    pub subresource: Option<&'a str>,
    pub namespace: &'a str,
    pub name: &'a str,
    pub object: Option<Value>,
    pub old_object: Option<Value>,
}

/// The admission chain's two phases.
#[derive(Clone, Copy)]
enum Phase {
    Mutating,
    Validating,
}

fn options(op: Operation, opts: &WriteOptions) -> Option<Value> {
    let kind = match op {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return None,
    };
    let mut o = json!({"kind": kind, "apiVersion": "meta.k8s.io/v1"});
    if opts.dry_run {
        o["dryRun"] = json!(["All"]);
    }
    if let Some(m) = &opts.field_manager
        && op != Operation::Delete
    {
        o["fieldManager"] = json!(m);
    }
    Some(o)
}

impl Registry {
    /// Installs the admission chain (once, at start-up; before that every write is
    /// admitted).
    pub fn set_admission(&self, chain: Arc<admission::Chain>) {
        let _ = self.admission.set(chain);
    }

    /// The admission attributes of a write of `r`.
    pub fn admission_attributes(r: &Resource, w: Write<'_>, opts: &WriteOptions) -> Attributes {
        let sub = w.subresource.and_then(|s| r.info.subresource(s));
        let kind = match sub {
            Some(s) => Gvk {
                group: s.group.clone(),
                version: s.version.clone(),
                kind: s.kind.clone(),
            },
            None => Gvk {
                group: r.info.group.clone(),
                version: r.info.version.clone(),
                kind: r.info.kind.clone(),
            },
        };
        Attributes {
            operation: w.operation,
            kind,
            resource: Gvk {
                group: r.info.group.clone(),
                version: r.info.version.clone(),
                kind: r.info.plural.clone(),
            },
            subresource: w.subresource.unwrap_or_default().to_string(),
            namespace: w.namespace.to_string(),
            name: w.name.to_string(),
            object: w.object,
            old_object: w.old_object,
            user: opts.user.clone(),
            dry_run: opts.dry_run,
            options: options(w.operation, opts),
            warnings: opts.warnings.clone(),
            audit_annotations: opts.audit_annotations.clone(),
        }
    }

    /// Runs one phase of the chain on the write and hands the objects back (as admitted,
    /// and the old one), sparing callers a copy of each.
    async fn run_phase(
        &self,
        phase: Phase,
        r: &Resource,
        w: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<(Option<Value>, Option<Value>), ApiError> {
        let Some(chain) = self.admission.get() else {
            return Ok((w.object, w.old_object));
        };
        let mut a = Self::admission_attributes(r, w, opts);
        match phase {
            Phase::Mutating => chain.admit(&mut a, self).await?,
            Phase::Validating => chain.validate(&a, self).await?,
        }
        Ok((a.object, a.old_object))
    }

    /// Runs the mutating plugins; returns the (possibly changed) object.
    pub(crate) async fn admit(
        &self,
        r: &Resource,
        w: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<Option<Value>, ApiError> {
        Ok(self.run_phase(Phase::Mutating, r, w, opts).await?.0)
    }

    /// Runs the mutating plugins and hands back the object as admitted and the old object.
    pub(crate) async fn admit_returning(
        &self,
        r: &Resource,
        w: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<(Option<Value>, Option<Value>), ApiError> {
        self.run_phase(Phase::Mutating, r, w, opts).await
    }

    /// Runs the validating plugins and hands the (unchanged) objects back.
    pub(crate) async fn validate_admission_returning(
        &self,
        r: &Resource,
        w: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<(Option<Value>, Option<Value>), ApiError> {
        self.run_phase(Phase::Validating, r, w, opts).await
    }

    /// Runs the validating plugins.
    pub(crate) async fn validate_admission(
        &self,
        r: &Resource,
        w: Write<'_>,
        opts: &WriteOptions,
    ) -> Result<(), ApiError> {
        self.run_phase(Phase::Validating, r, w, opts)
            .await
            .map(|_| ())
    }

    /// The served resource `group`/`plural` (its first served version).
    fn resource_of(&self, group: &str, plural: &str) -> Result<Arc<Resource>, ApiError> {
        self.all()
            .first_version(group, plural)
            .cloned()
            .ok_or_else(|| {
                ApiError::internal(format!("the server does not serve {plural}.{group}"))
            })
    }

    /// Writes `object` (main resource or `subresource`) if its `metadata.resourceVersion`
    /// is still the current one: a stale one is a 409 Conflict, never retried.
    pub(crate) async fn write_at(
        &self,
        r: &Resource,
        subresource: Option<&str>,
        object: Value,
        opts: &WriteOptions,
    ) -> Result<super::Written, ApiError> {
        let ns = api::meta::namespace(&object)
            .filter(|n| !n.is_empty())
            .map(str::to_string);
        let name = api::meta::name(&object).unwrap_or_default().to_string();
        let rv = api::meta::resource_version(&object).map(str::to_string);
        self.update_with(r, ns.as_deref(), &name, subresource, opts, |_| {
            Ok((
                object.clone(),
                Vec::new(),
                Precondition {
                    resource_version: rv.clone(),
                    ..Default::default()
                },
            ))
        })
        .await
    }

    pub(crate) fn system_options() -> WriteOptions {
        WriteOptions {
            user: auth::UserInfo::new(
                auth::attributes::APISERVER_USER,
                [auth::SYSTEM_PRIVILEGED_GROUP],
            ),
            user_agent: "rkube-apiserver/admission".into(),
            dry_run: false,
            field_manager: None,
            field_validation: super::FieldValidation::Ignore,
            apply: false,
            include_uninitialized: true,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }
}

#[async_trait::async_trait]
impl admission::Cluster for Registry {
    async fn get(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
        name: &str,
    ) -> Result<Option<Arc<Value>>, ApiError> {
        let r = self.resource_of(group, plural)?;
        let ns = (!namespace.is_empty()).then_some(namespace);
        let key = r.info.key(ns, name);
        Ok(r.cached_parsed(&key))
    }

    async fn list(
        &self,
        group: &str,
        plural: &str,
        namespace: &str,
    ) -> Result<Vec<Arc<Value>>, ApiError> {
        let r = self.resource_of(group, plural)?;
        let under = if namespace.is_empty() {
            format!("{}/", r.info.storage_prefix)
        } else {
            format!("{}/{namespace}/", r.info.storage_prefix)
        };
        let (items, _) = r.cacher.list(&|_| true, &under);
        // A list bigger than the memo (PodSecurity's of a namespace's pods) would only
        // push out what it holds.
        if items.len() > super::PARSED_PER_RESOURCE / 2 {
            return Ok(items
                .iter()
                .filter_map(|o| r.parse(o).map(Arc::new))
                .collect());
        }
        Ok(items.iter().filter_map(|o| r.parsed(o)).collect())
    }

    async fn resource_for_kind(
        &self,
        group: &str,
        version: &str,
        kind: &str,
    ) -> Option<(String, bool)> {
        self.all()
            .by_kind(group, version, kind)
            .map(|r| (r.info.plural.clone(), r.info.namespaced))
    }

    async fn update(
        &self,
        group: &str,
        plural: &str,
        subresource: &str,
        object: Value,
    ) -> Result<Value, ApiError> {
        let r = self.resource_of(group, plural)?;
        let sub = (!subresource.is_empty()).then_some(subresource);
        let w = self
            .write_at(&r, sub, object, &Self::system_options())
            .await?;
        Ok(w.object)
    }
}
