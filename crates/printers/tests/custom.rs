//! Custom resources: `additionalPrinterColumns` through upstream's CRD table convertor.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use printers::{
    CustomColumns, IncludeObject, PrinterColumn, TableOptions, custom_table, printer_columns,
};
use serde_json::{Value, json};

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": true, "storage": true, "additionalPrinterColumns": [
                    {"name": "Ready", "type": "string", "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status"},
                    {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                    {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
                    {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
                    {"name": "Ports", "type": "string", "jsonPath": ".spec.ports[*].port"},
                    {"name": "Selector", "type": "string", "jsonPath": ".spec.selector", "description": "The selector."},
                    {"name": "Synced", "type": "date", "jsonPath": ".status.lastSync"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ]},
                {"name": "v1beta1", "served": true, "storage": false}
            ]
        }
    })
}

fn widget(name: &str, spec: Value, status: Value) -> Value {
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": meta(name, 2 * DAY),
        "spec": spec,
        "status": status,
    })
}

#[test]
fn printer_columns_with_types() {
    let cols = CustomColumns::new(&printer_columns(&crd(), "v1"));
    assert_eq!(cols.error(), None);
    let w = widget(
        "w1",
        json!({"replicas": 3, "ratio": 0.25, "paused": false,
               "ports": [{"port": 80}, {"port": 443}],
               "selector": {"matchLabels": {"app": "w<1>"}}}),
        json!({"conditions": [{"type": "Synced", "status": "False"}, {"type": "Ready", "status": "True"}],
               "lastSync": ago(90)}),
    );
    let t = custom_table(&cols, &[&w], &TableOptions::default(), now());
    let names: Vec<&str> = t["columnDefinitions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "Name", "Ready", "Replicas", "Ratio", "Paused", "Ports", "Selector", "Synced", "Age"
        ]
    );
    assert_eq!(t["columnDefinitions"][3]["priority"], 1);
    assert_eq!(t["columnDefinitions"][2]["type"], "integer");
    assert_eq!(
        t["columnDefinitions"][1]["description"],
        "Custom resource definition column (in JSONPath format): .status.conditions[?(@.type==\"Ready\")].status"
    );
    assert_eq!(t["columnDefinitions"][6]["description"], "The selector.");
    assert_eq!(
        t["rows"][0]["cells"],
        json!([
            "w1",
            "True",
            3,
            0.25,
            false,
            "80",
            "{\"matchLabels\":{\"app\":\"w\\u003c1\\u003e\"}}",
            "90s",
            "2d"
        ])
    );
    assert_eq!(t["rows"][0]["object"]["kind"], "PartialObjectMetadata");

    // Missing values are null cells; wrong types too (except for string columns).
    let bare = widget(
        "w2",
        json!({"replicas": "three", "ratio": 2, "paused": "no"}),
        json!({}),
    );
    let t = custom_table(&cols, &[&bare], &IncludeObject::None.into(), now());
    assert_eq!(
        t["rows"][0]["cells"],
        json!(["w2", null, null, 2, null, null, null, null, "2d"])
    );

    // Bad dates.
    let odd = widget("w3", json!({}), json!({"lastSync": "yesterday"}));
    let t = custom_table(&cols, &[&odd], &IncludeObject::None.into(), now());
    assert_eq!(t["rows"][0]["cells"][7], "<invalid>");
    let odd = widget("w4", json!({}), json!({"lastSync": ""}));
    let t = custom_table(&cols, &[&odd], &IncludeObject::None.into(), now());
    assert_eq!(t["rows"][0]["cells"][7], "<unknown>");
}

#[test]
fn default_age_column() {
    let cols = CustomColumns::new(&printer_columns(&crd(), "v1beta1"));
    let w = widget("w", json!({}), json!({}));
    let t = custom_table(&cols, &[&w], &TableOptions::default(), now());
    assert_eq!(
        t["columnDefinitions"],
        json!([
            {"name": "Name", "type": "string", "format": "name", "priority": 0,
             "description": t["columnDefinitions"][0]["description"]},
            {"name": "Age", "type": "date", "format": "", "priority": 0,
             "description": t["columnDefinitions"][1]["description"]}
        ])
    );
    assert_eq!(t["rows"][0]["cells"], json!(["w", "2d"]));
    let t = custom_table(&cols, &[], &TableOptions::default(), now());
    assert_eq!(t["rows"], json!([]));
}

#[test]
fn string_columns_print_like_go() {
    let col = |path: &str| PrinterColumn {
        name: "X".into(),
        type_: "string".into(),
        json_path: path.into(),
        ..PrinterColumn::default()
    };
    let o = json!({
        "metadata": {"name": "o"},
        "spec": {"int": 7, "big": 1e6, "small": 0.00001, "float": 1.5, "t": true, "nil": null,
                 "list": ["a", 1], "empty": {}, "text": "hello"}
    });
    let cases = [
        (".spec.int", json!("7")),
        (".spec.big", json!("1e+06")),
        (".spec.small", json!("1e-05")),
        (".spec.float", json!("1.5")),
        (".spec.t", json!("true")),
        (".spec.nil", json!("<no value>")),
        (".spec.list", json!("[\"a\",1]")),
        (".spec.empty", json!("{}")),
        (".spec.text", json!("hello")),
        (".spec.list[1]", json!("1")),
        (".spec.list[5]", Value::Null),
        (".spec.missing", Value::Null),
        (".metadata.name", json!("o")),
    ];
    for (path, want) in cases {
        let cols = CustomColumns::new(&[col(path)]);
        let t = custom_table(&cols, &[&o], &IncludeObject::None.into(), now());
        assert_eq!(t["rows"][0]["cells"][1], want, "{path}");
    }
}

#[test]
fn bad_json_path_cuts_the_columns() {
    let mut crd = crd();
    crd["spec"]["versions"][0]["additionalPrinterColumns"][2]["jsonPath"] = json!(".spec.ratio[");
    let cols = CustomColumns::new(&printer_columns(&crd, "v1"));
    assert_eq!(
        cols.error(),
        Some("unrecognized column definition \".spec.ratio[\"")
    );
    let w = widget("w", json!({"replicas": 1}), json!({}));
    let t = custom_table(&cols, &[&w], &TableOptions::default(), now());
    assert_eq!(t["columnDefinitions"].as_array().unwrap().len(), 3);
    assert_eq!(t["rows"][0]["cells"], json!(["w", null, 1]));
}
