//! The tables themselves: every catalog kind has upstream's columns, the `Table` and row
//! shapes, `includeObject`, watch headers, the default convertor.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use api::catalog::builtin;
use common::*;
use printers::{
    IncludeObject, TableOptions, TableVersion, default_table, has_printer, set_list_meta, to_table,
};
use serde_json::{Value, json};

/// Upstream's column names (all of them, as the server prints wide) for each catalog kind.
fn expected_columns(group: &str, plural: &str) -> &'static [&'static str] {
    const DEFAULT: &[&str] = &["Name", "Created At"];
    const EVENTS: &[&str] = &[
        "Last Seen",
        "Type",
        "Reason",
        "Object",
        "Subobject",
        "Source",
        "Message",
        "First Seen",
        "Count",
        "Name",
    ];
    const BINDINGS: &[&str] = &["Name", "Role", "Age", "Users", "Groups", "ServiceAccounts"];
    match (group, plural) {
        ("", "bindings") => DEFAULT,
        ("", "configmaps") => &["Name", "Data", "Age"],
        ("", "endpoints") => &["Name", "Endpoints", "Age"],
        ("", "events") => EVENTS,
        ("", "limitranges") => DEFAULT,
        ("", "namespaces") => &["Name", "Status", "Age"],
        ("", "nodes") => &[
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
            "Internal-IP",
            "External-IP",
            "OS-Image",
            "Kernel-Version",
            "Container-Runtime",
        ],
        ("", "persistentvolumeclaims") => &[
            "Name",
            "Status",
            "Volume",
            "Capacity",
            "Access Modes",
            "StorageClass",
            "VolumeAttributesClass",
            "Age",
            "VolumeMode",
        ],
        ("", "persistentvolumes") => &[
            "Name",
            "Capacity",
            "Access Modes",
            "Reclaim Policy",
            "Status",
            "Claim",
            "StorageClass",
            "VolumeAttributesClass",
            "Reason",
            "Age",
            "VolumeMode",
        ],
        ("", "pods") => &[
            "Name",
            "Ready",
            "Status",
            "Restarts",
            "Age",
            "IP",
            "Node",
            "Nominated Node",
            "Readiness Gates",
        ],
        ("", "podtemplates") => &["Name", "Containers", "Images", "Pod Labels"],
        ("", "replicationcontrollers") => &[
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("", "resourcequotas") => &["Name", "Request", "Limit", "Age"],
        ("", "secrets") => &["Name", "Type", "Data", "Age"],
        ("", "serviceaccounts") => &["Name", "Secrets", "Age"],
        ("", "services") => &[
            "Name",
            "Type",
            "Cluster-IP",
            "External-IP",
            "Port(s)",
            "Age",
            "Selector",
        ],
        ("apps", "controllerrevisions") => &["Name", "Controller", "Revision", "Age"],
        ("apps", "daemonsets") => &[
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Up-to-date",
            "Available",
            "Node Selector",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("apps", "deployments") => &[
            "Name",
            "Ready",
            "Up-to-date",
            "Available",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("apps", "replicasets") => &[
            "Name",
            "Desired",
            "Current",
            "Ready",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("apps", "statefulsets") => &["Name", "Ready", "Age", "Containers", "Images"],
        ("batch", "cronjobs") => &[
            "Name",
            "Schedule",
            "Timezone",
            "Suspend",
            "Active",
            "Last Schedule",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("batch", "jobs") => &[
            "Name",
            "Status",
            "Completions",
            "Duration",
            "Age",
            "Containers",
            "Images",
            "Selector",
        ],
        ("coordination.k8s.io", "leases") => &["Name", "Holder", "Age"],
        ("discovery.k8s.io", "endpointslices") => {
            &["Name", "AddressType", "Ports", "Endpoints", "Age"]
        }
        ("events.k8s.io", "events") => EVENTS,
        ("policy", "poddisruptionbudgets") => &[
            "Name",
            "Min Available",
            "Max Unavailable",
            "Allowed Disruptions",
            "Age",
        ],
        ("rbac.authorization.k8s.io", "clusterrolebindings") => BINDINGS,
        ("rbac.authorization.k8s.io", "clusterroles") => DEFAULT,
        ("rbac.authorization.k8s.io", "rolebindings") => BINDINGS,
        ("rbac.authorization.k8s.io", "roles") => DEFAULT,
        ("scheduling.k8s.io", "priorityclasses") => {
            &["Name", "Value", "Global-Default", "Age", "PreemptionPolicy"]
        }
        ("apiextensions.k8s.io", "customresourcedefinitions") => DEFAULT,
        // Create-only reviews: upstream has no printer, the default table.
        ("authentication.k8s.io", _) | ("authorization.k8s.io", _) => DEFAULT,
        // The seeds' initializers: upstream 1.13 had no printer for them.
        ("admissionregistration.k8s.io", "initializerconfigurations") => DEFAULT,
        ("certificates.k8s.io", "certificatesigningrequests") => &[
            "Name",
            "Age",
            "SignerName",
            "Requestor",
            "RequestedDuration",
            "Condition",
        ],
        (
            "admissionregistration.k8s.io",
            "mutatingwebhookconfigurations" | "validatingwebhookconfigurations",
        ) => &["Name", "Webhooks", "Age"],
        ("admissionregistration.k8s.io", "validatingadmissionpolicies") => {
            &["Name", "Validations", "ParamKind", "Age"]
        }
        ("admissionregistration.k8s.io", "validatingadmissionpolicybindings") => {
            &["Name", "PolicyName", "ParamRef", "Age"]
        }
        _ => panic!("no expected columns for {plural}.{group}: add upstream's"),
    }
}

#[test]
fn every_catalog_kind_has_upstreams_columns() {
    for r in builtin() {
        let o = json!({"metadata": meta("x", HOUR)});
        let t = to_table(&r, &[&o], &TableOptions::default(), now());
        let names = column_names(&t);
        assert_eq!(names, expected_columns(&r.group, &r.plural), "{}", r.plural);
        let cells = t["rows"][0]["cells"].as_array().unwrap();
        assert_eq!(
            cells.len(),
            names.len(),
            "{}: one cell per column",
            r.plural
        );
        let default = names == ["Name", "Created At"];
        assert_eq!(has_printer(&r), !default, "{}", r.plural);
        for c in t["columnDefinitions"].as_array().unwrap() {
            let mut keys: Vec<&String> = c.as_object().unwrap().keys().collect();
            keys.sort();
            assert_eq!(
                keys,
                ["description", "format", "name", "priority", "type"],
                "{}",
                r.plural
            );
            assert!(
                ["string", "integer", "number", "boolean", "date"]
                    .contains(&c["type"].as_str().unwrap()),
                "{}",
                r.plural
            );
        }
    }
}

#[test]
fn headers_as_kubectl_prints_them() {
    let cases = [
        ("pods", "NAME READY STATUS RESTARTS AGE"),
        ("jobs.batch", "NAME STATUS COMPLETIONS DURATION AGE"),
        ("services", "NAME TYPE CLUSTER-IP EXTERNAL-IP PORT(S) AGE"),
        ("nodes", "NAME STATUS ROLES AGE VERSION"),
        ("events", "LAST SEEN TYPE REASON OBJECT MESSAGE"),
        ("deployments.apps", "NAME READY UP-TO-DATE AVAILABLE AGE"),
        (
            "cronjobs.batch",
            "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE",
        ),
        ("leases.coordination.k8s.io", "NAME HOLDER AGE"),
        ("roles.rbac.authorization.k8s.io", "NAME CREATED AT"),
    ];
    for (resource, want) in cases {
        let t = table(resource, &[], TableOptions::default());
        assert_eq!(header(&t), want, "{resource}");
    }
    let pods = table("pods", &[], TableOptions::default());
    let priorities: Vec<i64> = pods["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["priority"].as_i64().unwrap())
        .collect();
    assert_eq!(priorities, [0, 0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(pods["columnDefinitions"][0]["format"], "name");
    assert_eq!(pods["columnDefinitions"][1]["format"], "");
    assert!(
        pods["columnDefinitions"][0]["description"]
            .as_str()
            .unwrap()
            .starts_with("Name must be unique within a namespace.")
    );
    // The events' Name column is a wide one that keeps the name format.
    let events = table("events", &[], TableOptions::default());
    assert_eq!(events["columnDefinitions"][9]["format"], "name");
    assert_eq!(events["columnDefinitions"][9]["priority"], 1);
}

#[test]
fn table_shape_and_include_object() {
    let mut pod = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta("web-0", MINUTE),
        "spec": {"containers": [{"name": "app", "image": "nginx"}]},
        "status": {"phase": "Pending"}
    });
    pod["metadata"]["labels"] = json!({"app": "web"});

    let t = table("pods", &[&pod], TableOptions::default());
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({}));
    let row = &t["rows"][0];
    let mut keys: Vec<&String> = row.as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["cells", "object"]);
    assert_eq!(
        row["object"],
        json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": pod["metadata"]})
    );

    let t = table("pods", &[&pod], IncludeObject::Object.into());
    assert_eq!(t["rows"][0]["object"], pod);

    let t = table("pods", &[&pod], IncludeObject::None.into());
    assert_eq!(t["rows"][0]["object"], Value::Null);

    let beta = TableOptions {
        version: TableVersion::V1Beta1,
        ..TableOptions::default()
    };
    let t = table("pods", &[&pod], beta);
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1beta1");
    assert_eq!(t["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1beta1");

    // Watch events after the first carry no column definitions.
    let no_headers = TableOptions {
        no_headers: true,
        ..TableOptions::default()
    };
    let t = table("pods", &[&pod], no_headers);
    assert_eq!(t["columnDefinitions"], Value::Null);
    assert_eq!(t["rows"][0]["cells"][0], "web-0");

    // An empty list: rows is an empty list for printers.
    let t = table("pods", &[], TableOptions::default());
    assert_eq!(t["rows"], json!([]));

    // An object without metadata still embeds an (empty) metadata.
    let t = table("pods", &[&json!({})], TableOptions::default());
    assert_eq!(t["rows"][0]["object"]["metadata"], json!({}));
    assert_eq!(t["rows"][0]["cells"][0], "");

    let mut t = table("pods", &[&pod], TableOptions::default());
    set_list_meta(&mut t, Some("1234"), Some("token"), Some(7));
    assert_eq!(
        t["metadata"],
        json!({"resourceVersion": "1234", "continue": "token", "remainingItemCount": 7})
    );
    set_list_meta(&mut t, Some("99"), Some(""), None);
    assert_eq!(t["metadata"], json!({"resourceVersion": "99"}));
}

#[test]
fn default_convertor() {
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "pod-reader", "namespace": "default",
                     "creationTimestamp": "2024-05-31T10:20:30.5+02:00"},
        "rules": []
    });
    let t = table(
        "roles.rbac.authorization.k8s.io",
        &[&role],
        TableOptions::default(),
    );
    assert_eq!(
        t["columnDefinitions"],
        json!([
            {"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": t["columnDefinitions"][0]["description"]},
            {"name": "Created At", "type": "date", "format": "", "priority": 0,
             "description": t["columnDefinitions"][1]["description"]}
        ])
    );
    assert!(
        t["columnDefinitions"][1]["description"]
            .as_str()
            .unwrap()
            .starts_with("CreationTimestamp is a timestamp")
    );
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["pod-reader", "2024-05-31T08:20:30Z"])
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");
    role["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("creationTimestamp");
    let t = default_table(&[&role], &TableOptions::default(), now());
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["pod-reader", "0001-01-01T00:00:00Z"])
    );
    // An empty list has no rows at all, as upstream's default convertor.
    let t = default_table(&[], &TableOptions::default(), now());
    assert_eq!(t["rows"], Value::Null);
    let t = default_table(
        &[],
        &TableOptions {
            no_headers: true,
            ..TableOptions::default()
        },
        now(),
    );
    assert_eq!(t["columnDefinitions"], Value::Null);
}

#[test]
fn malformed_objects_still_get_rows() {
    let weird = [
        json!(null),
        json!(42),
        json!("pod"),
        json!([1, 2]),
        json!({"metadata": "x", "spec": [], "status": 7}),
        json!({"metadata": {"name": 5, "creationTimestamp": "yesterday"},
               "spec": {"containers": "many", "replicas": "3", "selector": [1]},
               "status": {"conditions": {"a": 1}, "containerStatuses": [null, 1, {"state": "x"}]}}),
    ];
    for r in builtin() {
        for o in &weird {
            let t = to_table(&r, &[o], &TableOptions::default(), now());
            let cells = t["rows"][0]["cells"].as_array().unwrap();
            assert_eq!(
                cells.len(),
                t["columnDefinitions"].as_array().unwrap().len(),
                "{} {o}",
                r.plural
            );
        }
    }
    let bad = &weird[5];
    assert_eq!(
        cells("pods", bad)[..5],
        [
            json!(""),
            json!("0/0"),
            json!(""),
            json!("0"),
            json!("<unknown>")
        ]
    );
}
