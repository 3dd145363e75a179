//! Field management over the real built-in schemas of `api::schema::builtin()`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::{at, entries, fields_of, owns, stored, web_config};
use fieldmanager::{FieldManager, FieldSet, GroupVersionKind, ObjectSchema, Path};
use serde_json::{Value, json};

const T0: u64 = 1_700_000_000;

fn manager(group: &str, version: &str, kind: &str) -> FieldManager<'static> {
    let schemas = api::schema::builtin();
    let name = schemas.definition_for(group, version, kind).unwrap();
    let root = schemas.get(name).unwrap();
    FieldManager::new(
        ObjectSchema::builtin(root, schemas),
        GroupVersionKind::new(group, version, kind),
    )
    .with_reset_fields(FieldSet::from_paths(&[Path::fields(&["status"])]))
}

/// Kinds whose objects carry ObjectMeta.
fn object_kinds() -> Vec<(&'static str, &'static str, &'static str, &'static str)> {
    let schemas = api::schema::builtin();
    schemas
        .kinds()
        .into_iter()
        .filter(|(_, _, _, def)| {
            let meta = &schemas.get(def).unwrap()["properties"]["metadata"];
            api::schema::resolve(schemas, meta)
                .get("properties")
                .is_some_and(|p| p.get("labels").is_some())
        })
        .collect()
}

#[test]
fn every_kind_applies_and_tracks_updates() {
    let kinds = object_kinds();
    assert!(kinds.len() > 20);
    for (g, v, k, _) in kinds {
        let fm = manager(g, v, k);
        let gvk = GroupVersionKind::new(g, v, k);
        let cfg = json!({
            "apiVersion": gvk.api_version(), "kind": k,
            "metadata": {"name": "x", "labels": {"a": "b"}}
        });
        let out = fm
            .apply(None, &cfg, "m", false, at(T0))
            .unwrap_or_else(|e| panic!("{gvk}: {e}"));
        assert_eq!(
            fields_of(&out.object, "m", "Apply"),
            r#"{"f:metadata":{"f:labels":{"f:a":{}}}}"#,
            "{gvk}"
        );
        let live = stored(out.object);
        assert!(
            fm.apply(Some(&live), &cfg, "m", false, at(T0 + 1))
                .unwrap()
                .no_op,
            "{gvk}"
        );

        let created = fm.update(None, &cfg, "creator", at(T0));
        assert_eq!(
            fields_of(&created, "creator", "Update"),
            r#"{"f:metadata":{"f:labels":{".":{},"f:a":{}}}}"#,
            "{gvk}"
        );
    }
}

#[test]
fn deployments_over_the_builtin_schema() {
    let fm = manager("apps", "v1", "Deployment");
    let live = stored(
        fm.apply(None, &web_config(3, "nginx:1.25"), "kubectl", false, at(T0))
            .unwrap()
            .object,
    );
    let set = FieldSet::from_fields_v1(&entries(&live)[0]["fieldsV1"]).unwrap();
    assert!(set.has(Path::fields(&["spec", "selector"]).elements()));
    assert!(
        fields_of(&live, "kubectl", "Apply").contains(
            r#""f:containers":{"k:{\"name\":\"nginx\"}":{".":{},"f:image":{},"f:name":{}"#
        )
    );
    assert!(
        fm.apply(
            Some(&live),
            &web_config(3, "nginx:1.25"),
            "kubectl",
            false,
            at(T0 + 1)
        )
        .unwrap()
        .no_op
    );
    let err = fm
        .apply(
            Some(&live),
            &web_config(5, "nginx:1.25"),
            "helm",
            false,
            at(T0 + 2),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "Apply failed with 1 conflict: conflict with \"kubectl\": .spec.replicas"
    );
    let mut scaled = live.clone();
    scaled["spec"]["replicas"] = json!(9);
    let obj = fm.update(Some(&live), &scaled, "hpa", at(T0 + 3));
    assert!(owns(
        &obj,
        "hpa",
        "Update",
        &Path::fields(&["spec", "replicas"])
    ));
    assert!(!owns(
        &obj,
        "kubectl",
        "Apply",
        &Path::fields(&["spec", "replicas"])
    ));
}

#[test]
fn pods_and_config_maps_over_the_builtin_schema() {
    let fm = manager("", "v1", "Pod");
    let pod = json!({
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {
            "containers": [{"name": "c", "image": "busybox", "env": [{"name": "A", "value": "1"}]}],
            "volumes": [{"name": "data", "emptyDir": {}}],
            "tolerations": [{"key": "k", "operator": "Exists"}]
        }
    });
    let obj = fm
        .apply(None, &pod, "kubectl", false, at(T0))
        .unwrap()
        .object;
    let fields = fields_of(&obj, "kubectl", "Apply");
    assert!(
        fields.contains(r#""f:env":{"k:{\"name\":\"A\"}":{".":{},"f:name":{},"f:value":{}}}"#),
        "{fields}"
    );
    assert!(fields.contains(r#""f:tolerations":{}"#), "{fields}");
    assert!(
        fields.contains(
            r#""f:volumes":{"k:{\"name\":\"data\"}":{".":{},"f:emptyDir":{},"f:name":{}}}"#
        ),
        "{fields}"
    );

    let fm = manager("", "v1", "ConfigMap");
    let cm = |data: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": data});
    let live = stored(
        fm.apply(None, &cm(json!({"a": "1"})), "one", false, at(T0))
            .unwrap()
            .object,
    );
    let obj = fm
        .apply(
            Some(&live),
            &cm(json!({"b": "2"})),
            "two",
            false,
            at(T0 + 1),
        )
        .unwrap()
        .object;
    assert_eq!(obj["data"], json!({"a": "1", "b": "2"}));
    assert_eq!(fields_of(&obj, "two", "Apply"), r#"{"f:data":{"f:b":{}}}"#);
}
