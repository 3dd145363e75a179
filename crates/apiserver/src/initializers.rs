//! The seeds' initializers (upstream's alpha `Initializers` admission plugin and store
//! behaviour, Kubernetes 1.7–1.13): on create, the names of every
//! `InitializerConfiguration` initializer whose rules match the resource are appended to
//! `metadata.initializers.pending`; the object is stored but hidden from get, list and watch
//! (unless `includeUninitialized=true`) until the initializers have removed themselves, one
//! at a time from the front; a `metadata.initializers.result` with `status: Failure` deletes
//! the object. Updating an uninitialized object, or setting initializers on create, needs the
//! `initialize` verb on the resource.
//!
//! It runs after the mutating plugins and the RBAC escalation check, before validation and
//! the validating plugins, as the seeds order the chain.

use std::sync::Arc;

use admission::{Attributes, Cluster, Operation, Plugin};
use api::kinds::initializers::{InitializerConfiguration, pending};
use api::status::GroupResource;
use api::{ApiError, FieldError};
use auth::Authorizer;
use serde_json::{Value, json};

const GROUP: &str = "admissionregistration.k8s.io";
const PLURAL: &str = "initializerconfigurations";

/// The initializers step of the admission chain.
pub struct Initializers {
    pub authorizer: Arc<auth::Union>,
}

fn gr(a: &Attributes) -> GroupResource<'_> {
    GroupResource {
        group: &a.resource.group,
        resource: &a.resource.kind,
    }
}

/// The initializer names configured for `group/version resource`, configurations in name
/// order, initializers in their listed order, each name once.
pub fn configured(
    configs: &[InitializerConfiguration],
    group: &str,
    version: &str,
    resource: &str,
) -> Vec<String> {
    let mut sorted: Vec<&InitializerConfiguration> = configs.iter().collect();
    sorted.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    let mut out: Vec<String> = Vec::new();
    for c in sorted {
        for i in c.initializers.iter().flatten() {
            let matches = i
                .rules
                .iter()
                .flatten()
                .any(|r| r.matches(group, version, resource));
            if matches && !i.name.is_empty() && !out.contains(&i.name) {
                out.push(i.name.clone());
            }
        }
    }
    out
}

/// The update transition of the pending list: unchanged, or its first name removed.
/// Anything else is refused with the field error upstream's validation gives.
pub fn check_transition(old: &[String], new: &[String]) -> Result<(), FieldError> {
    if new == old || (!old.is_empty() && new == &old[1..]) {
        return Ok(());
    }
    if old.is_empty() {
        return Err(FieldError::invalid(
            "metadata.initializers",
            Value::Null,
            "field is immutable once initialization has completed",
        ));
    }
    Err(FieldError::forbidden(
        "metadata.initializers.pending",
        format!(
            "only the first pending initializer ({:?}) may be removed, by that initializer",
            old[0]
        ),
    ))
}

impl Initializers {
    fn can_initialize(&self, a: &Attributes, message: &str) -> Result<(), ApiError> {
        let name = if a.operation == Operation::Create {
            ""
        } else {
            a.name.as_str()
        };
        let attributes = auth::Attributes::resource(
            a.user.clone(),
            "initialize",
            &a.resource.group,
            &a.resource.kind,
        )
        .in_namespace(&a.namespace)
        .named(name);
        let (decision, reason) = self.authorizer.authorize(&attributes);
        if decision == auth::Decision::Allow {
            return Ok(());
        }
        let why = if reason.is_empty() {
            message.to_string()
        } else {
            format!("{message}: {reason}")
        };
        Err(ApiError::forbidden(gr(a), &a.name, &why))
    }

    async fn admit_create(
        &self,
        a: &mut Attributes,
        cluster: &dyn Cluster,
    ) -> Result<(), ApiError> {
        let Some(obj) = a.object.as_ref() else {
            return Ok(());
        };
        let requested = pending(obj);
        let has_field = obj["metadata"]
            .get("initializers")
            .is_some_and(|v| !v.is_null());
        if has_field {
            self.can_initialize(
                a,
                "must have the initialize permission to set initializers on create",
            )?;
        }
        let configs: Vec<InitializerConfiguration> = cluster
            .list(GROUP, PLURAL, "")
            .await?
            .into_iter()
            .filter_map(|v| serde::Deserialize::deserialize(&*v).ok())
            .collect();
        let mut names = requested;
        for n in configured(
            &configs,
            &a.resource.group,
            &a.resource.version,
            &a.resource.kind,
        ) {
            if !names.contains(&n) {
                names.push(n);
            }
        }
        let Some(obj) = a.object.as_mut() else {
            return Ok(());
        };
        let meta = api::meta::metadata_mut(obj);
        if names.is_empty() {
            if !has_field {
                return Ok(());
            }
            meta.remove("initializers");
        } else {
            let pending: Vec<Value> = names.iter().map(|n| json!({"name": n})).collect();
            meta.insert("initializers".into(), json!({"pending": pending}));
        }
        Ok(())
    }

    fn admit_update(&self, a: &mut Attributes) -> Result<(), ApiError> {
        let (Some(new), Some(old)) = (a.object.as_ref(), a.old_object.as_ref()) else {
            return Ok(());
        };
        let old_field = old["metadata"]
            .get("initializers")
            .is_some_and(|v| !v.is_null());
        let new_field = new["metadata"]
            .get("initializers")
            .is_some_and(|v| !v.is_null());
        if !old_field && !new_field {
            return Ok(());
        }
        let (old_pending, new_pending) = (pending(old), pending(new));
        let failed = api::kinds::initializers::failure(new).is_some();
        if !failed && let Err(e) = check_transition(&old_pending, &new_pending) {
            return Err(ApiError::invalid(
                &a.kind.group,
                &a.kind.kind,
                &a.name,
                &[e],
            ));
        }
        self.can_initialize(
            a,
            "must have initialize permission to update uninitialized resources",
        )?;
        // The last initializer is gone and none failed: the object is initialized.
        if new_pending.is_empty()
            && !failed
            && let Some(obj) = a.object.as_mut()
        {
            api::meta::metadata_mut(obj).remove("initializers");
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Plugin for Initializers {
    fn name(&self) -> &'static str {
        "Initializers"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    fn mutating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if !a.subresource.is_empty() || (a.resource.group == GROUP && a.resource.kind == PLURAL) {
            return Ok(());
        }
        match a.operation {
            Operation::Create => self.admit_create(a, cluster).await,
            Operation::Update => self.admit_update(a),
            _ => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(name: &str, inits: &[(&str, &str)]) -> InitializerConfiguration {
        serde_json::from_value(json!({
            "metadata": {"name": name},
            "initializers": inits.iter().map(|(n, res)| json!({
                "name": n,
                "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "resources": [res]}],
            })).collect::<Vec<_>>(),
        }))
        .unwrap()
    }

    #[test]
    fn configured_names_in_configuration_order() {
        let configs = vec![
            config(
                "b",
                &[("two.example.com", "pods"), ("one.example.com", "*")],
            ),
            config(
                "a",
                &[("one.example.com", "pods"), ("svc.example.com", "services")],
            ),
        ];
        assert_eq!(
            configured(&configs, "", "v1", "pods"),
            vec!["one.example.com", "two.example.com"]
        );
        assert_eq!(
            configured(&configs, "", "v1", "services"),
            vec!["svc.example.com", "one.example.com"]
        );
        assert!(configured(&configs, "apps", "v1", "deployments").is_empty());
    }

    #[test]
    fn only_the_first_initializer_may_be_removed() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert!(check_transition(&s(&["a", "b"]), &s(&["a", "b"])).is_ok());
        assert!(check_transition(&s(&["a", "b"]), &s(&["b"])).is_ok());
        assert!(check_transition(&s(&["a"]), &s(&[])).is_ok());
        assert!(check_transition(&s(&["a", "b"]), &s(&["a"])).is_err());
        assert!(check_transition(&s(&["a", "b"]), &s(&["b", "a"])).is_err());
        assert!(check_transition(&s(&["a"]), &s(&["a", "c"])).is_err());
        let e = check_transition(&s(&[]), &s(&["x"])).unwrap_err();
        assert!(
            e.to_string()
                .contains("immutable once initialization has completed"),
            "{e}"
        );
    }
}
