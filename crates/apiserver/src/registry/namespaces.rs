//! What namespaces do differently from the generic registry (upstream's
//! `pkg/registry/core/namespace`): a DELETE only starts the termination — it sets
//! `deletionTimestamp` and `status.phase: Terminating` and keeps the object while
//! `spec.finalizers` (the namespace controller's `kubernetes` token) or
//! `metadata.finalizers` remain; the `finalize` subresource changes everything but the
//! status (`namespaceFinalizeStrategy`); and an update leaving a terminating namespace
//! with neither kind of finalizer removes it (`ShouldDeleteNamespaceDuringUpdate`).

use api::ApiError;
use api::status::GroupResource;
use serde_json::{Value, json};

use super::Resource;

pub(super) fn is_namespace(r: &Resource) -> bool {
    r.info.group.is_empty() && r.info.plural == "namespaces"
}

/// `spec.finalizers` of a namespace.
pub(super) fn spec_finalizers(obj: &Value) -> Vec<&str> {
    obj["spec"]["finalizers"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// What a DELETE does to a namespace.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum OnDelete {
    /// Start terminating: set the deletion timestamp and the phase, with these
    /// `metadata.finalizers`.
    Terminate(Vec<String>),
    /// Already terminating and its content not yet finalized: answer with the object.
    Keep,
    /// The generic registry's delete (removed at once unless metadata finalizers remain).
    Generic,
}

/// Upstream's `REST.Delete`: the first request switches the namespace to terminating
/// (with the `orphan` / `foregroundDeletion` finalizers the propagation policy asks for);
/// later ones only delete it once `spec.finalizers` is empty. A namespace without any
/// finalizer is deleted at once.
pub(super) fn on_delete(obj: &Value, propagation: Option<&str>) -> OnDelete {
    let spec = spec_finalizers(obj);
    if api::meta::deletion_timestamp(obj).is_some() {
        return if spec.is_empty() {
            OnDelete::Generic
        } else {
            OnDelete::Keep
        };
    }
    let finalizers = deletion_finalizers(&api::meta::finalizers(obj), propagation);
    if spec.is_empty() && finalizers.is_empty() {
        OnDelete::Generic
    } else {
        OnDelete::Terminate(finalizers)
    }
}

/// `shouldHaveOrphanFinalizer` and `shouldHaveDeleteDependentsFinalizer`: a propagation
/// policy decides both; without one the current finalizers stay.
pub(super) fn deletion_finalizers(current: &[&str], propagation: Option<&str>) -> Vec<String> {
    let mut out: Vec<String> = current.iter().map(|f| f.to_string()).collect();
    let Some(policy) = propagation else {
        return out;
    };
    for (finalizer, wanted) in [
        ("orphan", policy == "Orphan"),
        ("foregroundDeletion", policy == "Foreground"),
    ] {
        let has = out.iter().any(|f| f == finalizer);
        if wanted && !has {
            out.push(finalizer.to_string());
        } else if !wanted && has {
            out.retain(|f| f != finalizer);
        }
    }
    out
}

/// The first DELETE's change (no `deletionGracePeriodSeconds`: upstream's namespace
/// storage updates the object itself instead of going through graceful deletion).
pub(super) fn mark_terminating(obj: &mut Value, now: &str, finalizers: Vec<String>) {
    let m = api::meta::metadata_mut(obj);
    m.insert("deletionTimestamp".into(), Value::String(now.to_string()));
    if finalizers.is_empty() {
        m.remove("finalizers");
    } else {
        m.insert("finalizers".into(), json!(finalizers));
    }
    if let Some(o) = obj.as_object_mut() {
        let status = o.entry("status").or_insert_with(|| json!({}));
        if !status.is_object() {
            *status = json!({});
        }
        if let Some(s) = status.as_object_mut() {
            s.insert("phase".into(), json!("Terminating"));
        }
    }
}

/// NamespaceLifecycle's refusal of a create in a terminating namespace: 403 with the
/// `NamespaceTerminating` cause.
pub(super) fn terminating_error(gr: GroupResource<'_>, name: &str, namespace: &str) -> ApiError {
    let mut e = ApiError::forbidden(
        gr,
        name,
        &format!(
            "unable to create new content in namespace {namespace} because it is being terminated"
        ),
    );
    e.push_cause(api::status::Cause {
        reason: "NamespaceTerminating".into(),
        message: format!("namespace {namespace} is being terminated"),
        field: "metadata.namespace".into(),
    });
    e
}

/// `namespaceFinalizeStrategy.PrepareForUpdate`: the status stays as it was.
pub(super) fn prepare_for_finalize(new: &mut Value, old: &Value) {
    if let Some(m) = new.as_object_mut() {
        match old.get("status") {
            Some(s) => {
                m.insert("status".into(), s.clone());
            }
            None => {
                m.remove("status");
            }
        }
    }
}

/// `ShouldDeleteNamespaceDuringUpdate`: besides the generic rule (being deleted, no
/// metadata finalizers left), a namespace also needs an empty `spec.finalizers`.
pub(super) fn may_remove_on_update(r: &Resource, new: &Value) -> bool {
    !is_namespace(r) || spec_finalizers(new).is_empty()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use store::Backend;

    use super::*;
    use crate::registry::{DeleteOptions, FieldValidation, Registry, WriteOptions};

    #[test]
    fn delete_decisions() {
        let active = json!({"metadata": {"name": "a"}, "spec": {"finalizers": ["kubernetes"]}});
        assert_eq!(on_delete(&active, None), OnDelete::Terminate(vec![]));
        assert_eq!(
            on_delete(&active, Some("Orphan")),
            OnDelete::Terminate(vec!["orphan".into()])
        );
        let bare = json!({"metadata": {"name": "a"}, "spec": {}});
        assert_eq!(on_delete(&bare, Some("Background")), OnDelete::Generic);
        assert_eq!(
            on_delete(&bare, Some("Foreground")),
            OnDelete::Terminate(vec!["foregroundDeletion".into()])
        );
        let held = json!({"metadata": {"name": "a", "finalizers": ["example.com/x", "orphan"]}});
        assert_eq!(
            on_delete(&held, Some("Background")),
            OnDelete::Terminate(vec!["example.com/x".into()])
        );
        assert_eq!(
            on_delete(&held, None),
            OnDelete::Terminate(vec!["example.com/x".into(), "orphan".into()])
        );
        let terminating = json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"finalizers": ["kubernetes"]}});
        assert_eq!(on_delete(&terminating, Some("Orphan")), OnDelete::Keep);
        let finalized = json!({"metadata": {"name": "a", "deletionTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {}});
        assert_eq!(on_delete(&finalized, None), OnDelete::Generic);
    }

    fn opts() -> WriteOptions {
        WriteOptions {
            user: crate::authn::UserInfo {
                name: "admin".into(),
                uid: String::new(),
                groups: vec!["system:masters".into()],
                extra: Default::default(),
            },
            user_agent: "test".into(),
            dry_run: false,
            field_manager: Some("test".into()),
            field_validation: FieldValidation::Strict,
            apply: false,
            include_uninitialized: false,
            warnings: Default::default(),
            audit_annotations: Default::default(),
        }
    }

    fn registry() -> (Arc<Registry>, Arc<dyn Backend>) {
        let store: Arc<dyn Backend> = Arc::new(store::memory::MemoryBackend::new());
        let reg = Registry::new(
            Arc::clone(&store),
            Arc::new(store::SystemClock),
            Duration::from_secs(3600),
            crate::registry::services::Cidr::parse("10.43.0.0/16").unwrap(),
            ("127.0.0.1".into(), 6443),
        );
        (reg, store)
    }

    async fn stored(store: &Arc<dyn Backend>, name: &str) -> Option<Value> {
        store
            .get(&format!("/registry/namespaces/{name}"))
            .await
            .unwrap()
            .map(|kv| serde_json::from_slice(&kv.value).unwrap())
    }

    #[tokio::test]
    async fn namespace_lifecycle() {
        let (reg, store) = registry();
        let ns = reg.lookup("", "v1", "namespaces").unwrap();
        let cms = reg.lookup("", "v1", "configmaps").unwrap();
        let o = opts();
        let created = reg
            .create(
                &ns,
                None,
                json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "doomed"}}),
                &o,
            )
            .await
            .unwrap()
            .object;
        assert_eq!(created["spec"]["finalizers"], json!(["kubernetes"]));
        assert_eq!(created["status"]["phase"], "Active");
        reg.create(
            &cms,
            Some("doomed"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}),
            &o,
        )
        .await
        .unwrap();

        // A wrong UID precondition is a conflict and changes nothing.
        let wrong = DeleteOptions {
            precondition_uid: Some("nope".into()),
            ..Default::default()
        };
        let e = reg
            .delete(&ns, None, "doomed", &wrong, &o)
            .await
            .unwrap_err();
        assert_eq!(e.code, 409);
        assert!(
            e.message
                .contains("Precondition failed: UID in precondition: nope")
        );

        // The first delete only starts the termination.
        let background = DeleteOptions {
            propagation: Some("Background".into()),
            ..Default::default()
        };
        let (obj, gone) = reg
            .delete(&ns, None, "doomed", &background, &o)
            .await
            .unwrap();
        assert!(!gone);
        assert_eq!(obj["status"]["phase"], "Terminating");
        assert!(obj["metadata"]["deletionTimestamp"].is_string());
        assert!(obj["metadata"]["deletionGracePeriodSeconds"].is_null());
        let kept = stored(&store, "doomed").await.unwrap();
        assert_eq!(kept["status"]["phase"], "Terminating");
        assert_eq!(kept["spec"]["finalizers"], json!(["kubernetes"]));

        // No new content in it (once the namespace cache has seen the change).
        ns.cacher.sync(Duration::from_secs(3)).await.unwrap();
        let e = reg
            .create(
                &cms,
                Some("doomed"),
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}),
                &o,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "configmaps \"d\" is forbidden: unable to create new content in namespace doomed because it is being terminated"
        );
        let status = e.to_status();
        assert_eq!(status["reason"], "Forbidden");
        assert_eq!(
            status["details"]["causes"],
            json!([{"reason": "NamespaceTerminating", "message": "namespace doomed is being terminated",
                "field": "metadata.namespace"}])
        );

        // A second delete answers with the namespace, unchanged.
        let (again, gone) = reg
            .delete(&ns, None, "doomed", &DeleteOptions::default(), &o)
            .await
            .unwrap();
        assert!(!gone);
        assert_eq!(
            again["metadata"]["deletionTimestamp"],
            obj["metadata"]["deletionTimestamp"]
        );

        // An update cannot drop spec.finalizers (only finalize can).
        let mut edited = again.clone();
        edited["spec"]["finalizers"] = json!([]);
        edited["metadata"]["labels"] = json!({"a": "b"});
        let w = reg
            .replace(&ns, None, "doomed", None, edited, &o)
            .await
            .unwrap();
        assert_eq!(w.object["spec"]["finalizers"], json!(["kubernetes"]));
        assert!(stored(&store, "doomed").await.is_some());

        // finalize keeps the status; emptying spec.finalizers removes the namespace.
        let mut body = w.object.clone();
        body["spec"]["finalizers"] = json!([]);
        body["status"] = json!({"phase": "Active"});
        let w = reg
            .replace(&ns, None, "doomed", Some("finalize"), body, &o)
            .await
            .unwrap();
        assert_eq!(w.object["status"]["phase"], "Terminating");
        assert!(stored(&store, "doomed").await.is_none());
    }

    #[tokio::test]
    async fn metadata_finalizers_hold_a_namespace() {
        let (reg, store) = registry();
        let ns = reg.lookup("", "v1", "namespaces").unwrap();
        let o = opts();
        reg.create(
            &ns,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "held", "finalizers": ["example.com/hold"]}}),
            &o,
        )
        .await
        .unwrap();
        reg.delete(&ns, None, "held", &DeleteOptions::default(), &o)
            .await
            .unwrap();
        // The content is finalized, the metadata finalizer still holds it.
        let current = reg.get(&ns, None, "held").await.unwrap();
        let mut body = current.clone();
        body["spec"]["finalizers"] = json!([]);
        let w = reg
            .replace(&ns, None, "held", Some("finalize"), body, &o)
            .await
            .unwrap();
        assert_eq!(w.object["spec"]["finalizers"], json!([]));
        let kept = stored(&store, "held").await.unwrap();
        assert_eq!(kept["metadata"]["finalizers"], json!(["example.com/hold"]));
        // A finalizer name must be qualified.
        let mut bad = reg.get(&ns, None, "held").await.unwrap();
        bad["spec"]["finalizers"] = json!(["nope"]);
        let e = reg
            .replace(&ns, None, "held", Some("finalize"), bad, &o)
            .await
            .unwrap_err();
        assert_eq!(e.code, 422, "{}", e.message);
        // Removing the last metadata finalizer removes it.
        let mut body = reg.get(&ns, None, "held").await.unwrap();
        body["metadata"]["finalizers"] = json!([]);
        reg.replace(&ns, None, "held", None, body, &o)
            .await
            .unwrap();
        assert!(stored(&store, "held").await.is_none());
    }

    #[tokio::test]
    async fn a_terminating_namespace_with_metadata_finalizers_waits_for_spec_ones() {
        let (reg, store) = registry();
        let ns = reg.lookup("", "v1", "namespaces").unwrap();
        let o = opts();
        reg.create(
            &ns,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "both", "finalizers": ["example.com/hold"]}}),
            &o,
        )
        .await
        .unwrap();
        reg.delete(&ns, None, "both", &DeleteOptions::default(), &o)
            .await
            .unwrap();
        // The metadata finalizer goes first: spec.finalizers still hold it.
        let mut body = reg.get(&ns, None, "both").await.unwrap();
        body["metadata"]["finalizers"] = json!([]);
        reg.replace(&ns, None, "both", None, body, &o)
            .await
            .unwrap();
        assert!(stored(&store, "both").await.is_some());
        let mut body = reg.get(&ns, None, "both").await.unwrap();
        body["spec"]["finalizers"] = json!([]);
        reg.replace(&ns, None, "both", Some("finalize"), body, &o)
            .await
            .unwrap();
        assert!(stored(&store, "both").await.is_none());
    }

    #[tokio::test]
    async fn a_namespace_without_finalizers_goes_at_once() {
        let (reg, store) = registry();
        let ns = reg.lookup("", "v1", "namespaces").unwrap();
        let o = opts();
        reg.create(
            &ns,
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "light"}}),
            &o,
        )
        .await
        .unwrap();
        // Finalized before anyone deleted it.
        let mut body = reg.get(&ns, None, "light").await.unwrap();
        body["spec"]["finalizers"] = json!([]);
        reg.replace(&ns, None, "light", Some("finalize"), body, &o)
            .await
            .unwrap();
        assert!(stored(&store, "light").await.is_some());
        let (_, gone) = reg
            .delete(&ns, None, "light", &DeleteOptions::default(), &o)
            .await
            .unwrap();
        assert!(gone);
        assert!(stored(&store, "light").await.is_none());
    }
}
