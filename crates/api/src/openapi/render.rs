//! Renders the route model to OpenAPI v3 and Swagger 2.0 JSON, in upstream's layout.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Map, Value, json};

use super::routes::{Body, Operation, Param, PathItem, Response};
use crate::schema::{GVK_EXTENSION, Schemas, V2_REF_PREFIX, V3_REF_PREFIX};
use sha2::{Digest, Sha512};

/// Responses every operation may give (upstream's `CommonResponses`).
const UNAUTHORIZED: (u16, &str) = (401, "Unauthorized");

fn gvk_value(gvk: &(String, String, String)) -> Value {
    json!({"group": gvk.0, "kind": gvk.2, "version": gvk.1})
}

fn v3_param(p: &Param) -> Value {
    let mut out = Map::new();
    out.insert(
        "description".into(),
        Value::String(p.description.to_string()),
    );
    out.insert("in".into(), p.location.key().into());
    out.insert("name".into(), p.name.into());
    if p.required {
        out.insert("required".into(), Value::Bool(true));
    }
    out.insert("schema".into(), json!({"type": p.ty, "uniqueItems": true}));
    Value::Object(out)
}

fn v2_param(p: &Param) -> Value {
    let mut out = Map::new();
    out.insert(
        "description".into(),
        Value::String(p.description.to_string()),
    );
    out.insert("in".into(), p.location.key().into());
    out.insert("name".into(), p.name.into());
    if p.required {
        out.insert("required".into(), Value::Bool(true));
    }
    out.insert("type".into(), p.ty.into());
    out.insert("uniqueItems".into(), Value::Bool(true));
    Value::Object(out)
}

fn v3_ref(definition: &str) -> Value {
    json!({ "$ref": format!("{V3_REF_PREFIX}{definition}") })
}

fn v2_ref(definition: &str) -> Value {
    json!({ "$ref": format!("{V2_REF_PREFIX}{definition}") })
}

fn extensions(op: &Operation, out: &mut Map<String, Value>) {
    if let Some(action) = op.action {
        out.insert("x-kubernetes-action".into(), action.into());
    }
    if let Some(gvk) = &op.gvk {
        out.insert(GVK_EXTENSION.into(), gvk_value(gvk));
    }
}

fn v3_request_body(body: &Body) -> Value {
    let content: Map<String, Value> = body
        .consumes
        .iter()
        .map(|c| (c.to_string(), json!({ "schema": v3_ref(&body.definition) })))
        .collect();
    let mut out = Map::new();
    out.insert("content".into(), Value::Object(content));
    if body.required {
        out.insert("required".into(), Value::Bool(true));
    }
    Value::Object(out)
}

fn v3_responses(op: &Operation) -> Value {
    let mut out = Map::new();
    for Response {
        code,
        description,
        definition,
    } in &op.responses
    {
        let mut r = Map::new();
        if let Some(def) = definition {
            let content: Map<String, Value> = op
                .produces
                .iter()
                .map(|p| (p.to_string(), json!({ "schema": v3_ref(def) })))
                .collect();
            r.insert("content".into(), Value::Object(content));
        }
        r.insert("description".into(), (*description).into());
        out.insert(code.to_string(), Value::Object(r));
    }
    out.insert(
        UNAUTHORIZED.0.to_string(),
        json!({ "description": UNAUTHORIZED.1 }),
    );
    Value::Object(out)
}

fn v2_responses(op: &Operation) -> Value {
    let mut out = Map::new();
    for Response {
        code,
        description,
        definition,
    } in &op.responses
    {
        let mut r = Map::new();
        r.insert("description".into(), (*description).into());
        if let Some(def) = definition {
            r.insert("schema".into(), v2_ref(def));
        }
        out.insert(code.to_string(), Value::Object(r));
    }
    out.insert(
        UNAUTHORIZED.0.to_string(),
        json!({ "description": UNAUTHORIZED.1 }),
    );
    Value::Object(out)
}

fn v3_operation(op: &Operation) -> Value {
    let mut out = Map::new();
    out.insert("description".into(), Value::String(op.description.clone()));
    out.insert("operationId".into(), Value::String(op.operation_id.clone()));
    if !op.params.is_empty() {
        out.insert(
            "parameters".into(),
            Value::Array(op.params.iter().map(v3_param).collect()),
        );
    }
    if let Some(body) = &op.body {
        out.insert("requestBody".into(), v3_request_body(body));
    }
    out.insert("responses".into(), v3_responses(op));
    out.insert("tags".into(), json!([op.tag]));
    extensions(op, &mut out);
    Value::Object(out)
}

fn v2_operation(op: &Operation) -> Value {
    let mut out = Map::new();
    let consumes: &[&str] = match &op.body {
        Some(body) => body.consumes,
        None => &["*/*"],
    };
    out.insert("consumes".into(), json!(consumes));
    out.insert("description".into(), Value::String(op.description.clone()));
    out.insert("operationId".into(), Value::String(op.operation_id.clone()));
    let mut params: Vec<Value> = Vec::new();
    if let Some(body) = &op.body {
        let mut b = Map::new();
        b.insert("in".into(), "body".into());
        b.insert("name".into(), "body".into());
        if body.required {
            b.insert("required".into(), Value::Bool(true));
        }
        b.insert("schema".into(), v2_ref(&body.definition));
        params.push(Value::Object(b));
    }
    params.extend(op.params.iter().map(v2_param));
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    out.insert("produces".into(), json!(op.produces));
    out.insert("responses".into(), v2_responses(op));
    out.insert("schemes".into(), json!(["https"]));
    out.insert("tags".into(), json!([op.tag]));
    extensions(op, &mut out);
    Value::Object(out)
}

/// A path item of a v3 document.
pub(crate) fn v3_path_item(item: &PathItem) -> Value {
    let mut p = Map::new();
    if !item.params.is_empty() {
        p.insert(
            "parameters".into(),
            Value::Array(item.params.iter().map(v3_param).collect()),
        );
    }
    for op in &item.operations {
        p.insert(op.method.key().into(), v3_operation(op));
    }
    Value::Object(p)
}

/// A path item of a v2 document.
pub(crate) fn v2_path_item(item: &PathItem) -> Value {
    let mut p = Map::new();
    if !item.params.is_empty() {
        p.insert(
            "parameters".into(),
            Value::Array(item.params.iter().map(v2_param).collect()),
        );
    }
    for op in &item.operations {
        p.insert(op.method.key().into(), v2_operation(op));
    }
    Value::Object(p)
}

/// The definitions the operations reference (bodies and responses).
pub(crate) fn referenced_definitions(paths: &BTreeMap<String, PathItem>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for item in paths.values() {
        for op in &item.operations {
            if let Some(body) = &op.body {
                out.insert(body.definition.clone());
            }
            for r in &op.responses {
                if let Some(d) = &r.definition {
                    out.insert(d.clone());
                }
            }
        }
    }
    out
}

/// Where a document is written: a buffer, or a hash computed without one.
pub(crate) trait Sink {
    fn put(&mut self, bytes: &[u8]);
}

impl Sink for Vec<u8> {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Sink for Sha512 {
    fn put(&mut self, bytes: &[u8]) {
        self.update(bytes);
    }
}

struct SinkWriter<'a, S: Sink>(&'a mut S);

impl<S: Sink> std::io::Write for SinkWriter<'_, S> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.put(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn put_json<S: Sink>(sink: &mut S, value: &Value) {
    // Writing into a sink cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer(SinkWriter(sink), value);
}

fn put_key<S: Sink>(sink: &mut S, first: &mut bool, key: &str) {
    if !*first {
        sink.put(b",");
    }
    *first = false;
    put_json(sink, &Value::String(key.to_string()));
    sink.put(b":");
}

/// Writes a v3 document: the paths and the closure of the definitions they reference,
/// keys sorted. The definitions are copied as text, without building trees.
pub(crate) fn write_v3_document<S: Sink>(
    sink: &mut S,
    paths: &BTreeMap<String, PathItem>,
    schemas: &Schemas,
    title: &str,
    version: &str,
) {
    let roots = referenced_definitions(paths);
    let names = schemas.closure(roots.iter().map(String::as_str));
    sink.put(b"{\"components\":{\"schemas\":{");
    let mut first = true;
    for name in &names {
        if let Some(text) = schemas.get_json(name) {
            put_key(sink, &mut first, name);
            sink.put(text.as_bytes());
        }
    }
    sink.put(b"},\"securitySchemes\":");
    put_json(sink, &v2_security_definitions());
    sink.put(b"},\"info\":");
    put_json(sink, &json!({ "title": title, "version": version }));
    sink.put(b",\"openapi\":\"3.0.0\",\"paths\":{");
    let mut first = true;
    for (path, item) in paths {
        put_key(sink, &mut first, path);
        put_json(sink, &v3_path_item(item));
    }
    sink.put(b"}}");
}

/// `security` of the v2 document.
pub(crate) fn v2_security() -> Value {
    json!([{ "BearerToken": [] }])
}

/// `securityDefinitions` of the v2 document, `components.securitySchemes` of v3 ones.
pub(crate) fn v2_security_definitions() -> Value {
    json!({
        "BearerToken": {
            "description": "Bearer Token authentication",
            "in": "header",
            "name": "authorization",
            "type": "apiKey",
        }
    })
}

/// Writes the v2 document: every path and every definition, in v2 form, keys sorted. One
/// definition is converted at a time.
pub(crate) fn write_v2_document<S: Sink>(
    sink: &mut S,
    paths: &BTreeMap<String, PathItem>,
    schemas: &Schemas,
    title: &str,
    version: &str,
) {
    sink.put(b"{\"definitions\":{");
    let mut first = true;
    for name in schemas.names() {
        if let Some(def) = schemas.v2_definition(name) {
            put_key(sink, &mut first, name);
            put_json(sink, &def);
        }
    }
    sink.put(b"},\"info\":");
    put_json(sink, &json!({ "title": title, "version": version }));
    sink.put(b",\"paths\":{");
    let mut first = true;
    for (path, item) in paths {
        put_key(sink, &mut first, path);
        put_json(sink, &v2_path_item(item));
    }
    sink.put(b"},\"security\":");
    put_json(sink, &v2_security());
    sink.put(b",\"securityDefinitions\":");
    put_json(sink, &v2_security_definitions());
    sink.put(b",\"swagger\":\"2.0\"}");
}
