//! The protobuf encoding of a Swagger 2.0 document that client-go asks for with
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` (message
//! `openapi.v2.Document` of github.com/google/gnostic-models, which kube-openapi's handler
//! produces from the JSON document). Hand-encoded in the protobuf wire format; field numbers
//! are those of that message schema. Values that the schema keeps as YAML text (`Any`:
//! vendor extensions, defaults, enums, examples) are written as JSON, which is YAML.

use serde_json::{Map, Value};

/// The parts of a v2 document, produced one path item and one definition at a time so
/// that the whole document never exists as a tree.
pub(crate) struct Parts<'a> {
    pub swagger: &'a str,
    pub info: &'a Value,
    pub paths: &'a mut dyn Iterator<Item = (String, Value)>,
    pub definitions: &'a mut dyn Iterator<Item = (String, Value)>,
    pub security: &'a Value,
    pub security_definitions: &'a Value,
}

/// Encodes a v2 document as `openapi.v2.Document`.
pub(crate) fn encode_parts(parts: Parts<'_>) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, parts.swagger);
    if let Some(info) = parts.info.as_object() {
        w.message(2, &encode_info(info));
    }
    let mut paths = Writer::default();
    for (path, item) in parts.paths {
        if let Some(item) = item.as_object() {
            paths.message(2, &named(&path, 2, &encode_path_item(item)));
        }
    }
    w.message(8, &paths.buf);
    drop(paths);
    let mut defs = Writer::default();
    for (name, schema) in parts.definitions {
        defs.message(1, &named(&name, 2, &encode_schema(&schema)));
    }
    w.message(9, &defs.buf);
    drop(defs);
    if let Some(security) = parts.security.as_array() {
        for requirement in security.iter().filter_map(Value::as_object) {
            w.message(12, &encode_security_requirement(requirement));
        }
    }
    if let Some(defs) = parts.security_definitions.as_object() {
        let mut d = Writer::default();
        for (name, item) in defs {
            d.message(1, &named(name, 2, &encode_security_definition(item)));
        }
        w.message(13, &d.buf);
    }
    w.buf
}

/// Encodes a whole v2 document (JSON value) as `openapi.v2.Document`.
#[cfg(test)]
pub(crate) fn encode_document(doc: &Value) -> Vec<u8> {
    let empty = Value::Null;
    let object = |key: &str| -> Vec<(String, Value)> {
        doc.get(key)
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    encode_parts(Parts {
        swagger: str_of(doc.get("swagger")),
        info: doc.get("info").unwrap_or(&empty),
        paths: &mut object("paths").into_iter(),
        definitions: &mut object("definitions").into_iter(),
        security: doc.get("security").unwrap_or(&empty),
        security_definitions: doc.get("securityDefinitions").unwrap_or(&empty),
    })
}

#[derive(Default)]
struct Writer {
    buf: Vec<u8>,
}

impl Writer {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.buf.push((v as u8 & 0x7f) | 0x80);
            v >>= 7;
        }
        self.buf.push(v as u8);
    }

    fn key(&mut self, field: u32, wire_type: u8) {
        self.varint((u64::from(field) << 3) | u64::from(wire_type));
    }

    fn bytes(&mut self, field: u32, data: &[u8]) {
        self.key(field, 2);
        self.varint(data.len() as u64);
        self.buf.extend_from_slice(data);
    }

    /// A proto3 string field: omitted when empty.
    fn string(&mut self, field: u32, s: &str) {
        if !s.is_empty() {
            self.bytes(field, s.as_bytes());
        }
    }

    /// A repeated string field from a JSON array (or a single string).
    fn strings(&mut self, field: u32, v: Option<&Value>) {
        match v {
            Some(Value::Array(items)) => {
                for s in items.iter().filter_map(Value::as_str) {
                    self.bytes(field, s.as_bytes());
                }
            }
            Some(Value::String(s)) => self.bytes(field, s.as_bytes()),
            _ => {}
        }
    }

    /// A sub-message (always written, even when empty: presence matters).
    fn message(&mut self, field: u32, encoded: &[u8]) {
        self.bytes(field, encoded);
    }

    /// A proto3 bool field: omitted when false.
    fn boolean(&mut self, field: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(field, 0);
            self.varint(1);
        }
    }

    /// A bool inside a oneof: written even when false.
    fn oneof_bool(&mut self, field: u32, b: bool) {
        self.key(field, 0);
        self.varint(u64::from(b));
    }

    /// A proto3 double field: omitted when zero or absent.
    fn double(&mut self, field: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64)
            && f != 0.0
        {
            self.key(field, 1);
            self.buf.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// A proto3 int64 field: omitted when zero or absent.
    fn int64(&mut self, field: u32, v: Option<&Value>) {
        let n = v.and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)));
        if let Some(n) = n
            && n != 0
        {
            self.key(field, 0);
            self.varint(n as u64);
        }
    }

    /// An `Any` (YAML text) field.
    fn any(&mut self, field: u32, v: &Value) {
        self.message(field, &encode_any(v));
    }
}

fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or_default()
}

/// `Named*` messages: `name = 1`, value at `value_field` (always 2).
fn named(name: &str, value_field: u32, value: &[u8]) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, name);
    w.message(value_field, value);
    w.buf
}

/// `Any { yaml = 2 }`.
fn encode_any(v: &Value) -> Vec<u8> {
    let mut text = serde_json::to_string(v).unwrap_or_default();
    text.push('\n');
    let mut w = Writer::default();
    w.string(2, &text);
    w.buf
}

/// Vendor extensions (`x-` keys) as repeated `NamedAny` at `field`.
fn vendor_extensions(w: &mut Writer, field: u32, map: &Map<String, Value>) {
    for (k, v) in map.iter().filter(|(k, _)| k.starts_with("x-")) {
        w.message(field, &named(k, 2, &encode_any(v)));
    }
}

fn encode_info(info: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, str_of(info.get("title")));
    w.string(2, str_of(info.get("version")));
    w.string(3, str_of(info.get("description")));
    w.string(4, str_of(info.get("termsOfService")));
    vendor_extensions(&mut w, 7, info);
    w.buf
}

fn encode_path_item(item: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.string(1, str_of(item.get("$ref")));
    for (method, field) in [
        ("get", 2),
        ("put", 3),
        ("post", 4),
        ("delete", 5),
        ("options", 6),
        ("head", 7),
        ("patch", 8),
    ] {
        if let Some(op) = item.get(method).and_then(Value::as_object) {
            w.message(field, &encode_operation(op));
        }
    }
    if let Some(params) = item.get("parameters").and_then(Value::as_array) {
        for p in params.iter().filter_map(Value::as_object) {
            w.message(9, &encode_parameters_item(p));
        }
    }
    vendor_extensions(&mut w, 10, item);
    w.buf
}

fn encode_operation(op: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.strings(1, op.get("tags"));
    w.string(2, str_of(op.get("summary")));
    w.string(3, str_of(op.get("description")));
    w.string(5, str_of(op.get("operationId")));
    w.strings(6, op.get("produces"));
    w.strings(7, op.get("consumes"));
    if let Some(params) = op.get("parameters").and_then(Value::as_array) {
        for p in params.iter().filter_map(Value::as_object) {
            w.message(8, &encode_parameters_item(p));
        }
    }
    if let Some(responses) = op.get("responses").and_then(Value::as_object) {
        w.message(9, &encode_responses(responses));
    }
    w.strings(10, op.get("schemes"));
    w.boolean(11, op.get("deprecated"));
    vendor_extensions(&mut w, 13, op);
    w.buf
}

/// `ParametersItem { Parameter parameter = 1; JsonReference json_reference = 2; }`.
fn encode_parameters_item(p: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    if let Some(r) = p.get("$ref").and_then(Value::as_str) {
        let mut j = Writer::default();
        j.string(1, r);
        j.string(2, str_of(p.get("description")));
        w.message(2, &j.buf);
        return w.buf;
    }
    let mut param = Writer::default();
    match str_of(p.get("in")) {
        "body" => {
            let mut b = Writer::default();
            b.string(1, str_of(p.get("description")));
            b.string(2, str_of(p.get("name")));
            b.string(3, "body");
            b.boolean(4, p.get("required"));
            if let Some(schema) = p.get("schema") {
                b.message(5, &encode_schema(schema));
            }
            vendor_extensions(&mut b, 6, p);
            param.message(1, &b.buf);
        }
        location => {
            // NonBodyParameter: header = 1, formData = 2, query = 3, path = 4.
            let (oneof_field, encoded) = match location {
                "query" => (3, encode_query_parameter(p)),
                "formData" => (2, encode_query_parameter(p)),
                "header" => (1, encode_path_parameter(p)),
                _ => (4, encode_path_parameter(p)),
            };
            let mut nb = Writer::default();
            nb.message(oneof_field, &encoded);
            param.message(2, &nb.buf);
        }
    }
    w.message(1, &param.buf);
    w.buf
}

/// `QueryParameterSubSchema` (same layout as `FormDataParameterSubSchema`).
fn encode_query_parameter(p: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.boolean(1, p.get("required"));
    w.string(2, str_of(p.get("in")));
    w.string(3, str_of(p.get("description")));
    w.string(4, str_of(p.get("name")));
    w.boolean(5, p.get("allowEmptyValue"));
    w.string(6, str_of(p.get("type")));
    w.string(7, str_of(p.get("format")));
    w.string(9, str_of(p.get("collectionFormat")));
    if let Some(d) = p.get("default") {
        w.any(10, d);
    }
    w.boolean(20, p.get("uniqueItems"));
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        for v in values {
            w.any(21, v);
        }
    }
    vendor_extensions(&mut w, 23, p);
    w.buf
}

/// `PathParameterSubSchema` (same layout as `HeaderParameterSubSchema`).
fn encode_path_parameter(p: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    w.boolean(1, p.get("required"));
    w.string(2, str_of(p.get("in")));
    w.string(3, str_of(p.get("description")));
    w.string(4, str_of(p.get("name")));
    w.string(5, str_of(p.get("type")));
    w.string(6, str_of(p.get("format")));
    w.string(8, str_of(p.get("collectionFormat")));
    if let Some(d) = p.get("default") {
        w.any(9, d);
    }
    w.boolean(19, p.get("uniqueItems"));
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        for v in values {
            w.any(20, v);
        }
    }
    vendor_extensions(&mut w, 22, p);
    w.buf
}

fn encode_responses(responses: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    for (code, r) in responses.iter().filter(|(k, _)| !k.starts_with("x-")) {
        let Some(r) = r.as_object() else {
            continue;
        };
        let mut value = Writer::default();
        if let Some(reference) = r.get("$ref").and_then(Value::as_str) {
            let mut j = Writer::default();
            j.string(1, reference);
            value.message(2, &j.buf);
        } else {
            let mut resp = Writer::default();
            resp.string(1, str_of(r.get("description")));
            if let Some(schema) = r.get("schema") {
                let mut item = Writer::default();
                item.message(1, &encode_schema(schema));
                resp.message(2, &item.buf);
            }
            vendor_extensions(&mut resp, 5, r);
            value.message(1, &resp.buf);
        }
        w.message(1, &named(code, 2, &value.buf));
    }
    vendor_extensions(&mut w, 2, responses);
    w.buf
}

/// `Schema`.
pub(crate) fn encode_schema(schema: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(s) = schema.as_object() else {
        return w.buf;
    };
    w.string(1, str_of(s.get("$ref")));
    w.string(2, str_of(s.get("format")));
    w.string(3, str_of(s.get("title")));
    w.string(4, str_of(s.get("description")));
    if let Some(d) = s.get("default") {
        w.any(5, d);
    }
    w.double(6, s.get("multipleOf"));
    w.double(7, s.get("maximum"));
    w.boolean(8, s.get("exclusiveMaximum"));
    w.double(9, s.get("minimum"));
    w.boolean(10, s.get("exclusiveMinimum"));
    w.int64(11, s.get("maxLength"));
    w.int64(12, s.get("minLength"));
    w.string(13, str_of(s.get("pattern")));
    w.int64(14, s.get("maxItems"));
    w.int64(15, s.get("minItems"));
    w.boolean(16, s.get("uniqueItems"));
    w.int64(17, s.get("maxProperties"));
    w.int64(18, s.get("minProperties"));
    w.strings(19, s.get("required"));
    if let Some(values) = s.get("enum").and_then(Value::as_array) {
        for v in values {
            w.any(20, v);
        }
    }
    match s.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            let mut ap = Writer::default();
            ap.oneof_bool(2, *b);
            w.message(21, &ap.buf);
        }
        Some(ap @ Value::Object(_)) => {
            let mut item = Writer::default();
            item.message(1, &encode_schema(ap));
            w.message(21, &item.buf);
        }
        _ => {}
    }
    if s.contains_key("type") {
        let mut t = Writer::default();
        t.strings(1, s.get("type"));
        w.message(22, &t.buf);
    }
    match s.get("items") {
        Some(items @ Value::Object(_)) => {
            let mut item = Writer::default();
            item.message(1, &encode_schema(items));
            w.message(23, &item.buf);
        }
        Some(Value::Array(items)) => {
            let mut item = Writer::default();
            for i in items {
                item.message(1, &encode_schema(i));
            }
            w.message(23, &item.buf);
        }
        _ => {}
    }
    if let Some(all_of) = s.get("allOf").and_then(Value::as_array) {
        for member in all_of {
            w.message(24, &encode_schema(member));
        }
    }
    if let Some(props) = s.get("properties").and_then(Value::as_object) {
        let mut p = Writer::default();
        for (name, prop) in props {
            p.message(1, &named(name, 2, &encode_schema(prop)));
        }
        w.message(25, &p.buf);
    }
    w.string(26, str_of(s.get("discriminator")));
    w.boolean(27, s.get("readOnly"));
    if let Some(example) = s.get("example") {
        w.any(30, example);
    }
    vendor_extensions(&mut w, 31, s);
    w.buf
}

fn encode_security_requirement(requirement: &Map<String, Value>) -> Vec<u8> {
    let mut w = Writer::default();
    for (name, scopes) in requirement {
        let mut array = Writer::default();
        array.strings(1, Some(scopes));
        w.message(1, &named(name, 2, &array.buf));
    }
    w.buf
}

fn encode_security_definition(item: &Value) -> Vec<u8> {
    let mut w = Writer::default();
    let Some(item) = item.as_object() else {
        return w.buf;
    };
    match str_of(item.get("type")) {
        "apiKey" => {
            let mut k = Writer::default();
            k.string(1, "apiKey");
            k.string(2, str_of(item.get("name")));
            k.string(3, str_of(item.get("in")));
            k.string(4, str_of(item.get("description")));
            vendor_extensions(&mut k, 5, item);
            w.message(2, &k.buf);
        }
        "basic" => {
            let mut b = Writer::default();
            b.string(1, "basic");
            b.string(2, str_of(item.get("description")));
            vendor_extensions(&mut b, 3, item);
            w.message(1, &b.buf);
        }
        _ => {}
    }
    w.buf
}

#[cfg(test)]
pub(crate) mod wire {
    //! A minimal protobuf reader for tests: fields of one message by number.

    #[derive(Debug, Clone, PartialEq)]
    pub enum Field<'a> {
        Varint(u64),
        Fixed64(u64),
        Bytes(&'a [u8]),
    }

    pub fn fields(mut buf: &[u8]) -> Vec<(u32, Field<'_>)> {
        fn varint(buf: &mut &[u8]) -> u64 {
            let mut out = 0u64;
            let mut shift = 0;
            loop {
                let b = buf[0];
                *buf = &buf[1..];
                out |= u64::from(b & 0x7f) << shift;
                if b & 0x80 == 0 {
                    return out;
                }
                shift += 7;
            }
        }
        let mut out = Vec::new();
        while !buf.is_empty() {
            let key = varint(&mut buf);
            let field = (key >> 3) as u32;
            match key & 7 {
                0 => out.push((field, Field::Varint(varint(&mut buf)))),
                1 => {
                    let (v, rest) = buf.split_at(8);
                    buf = rest;
                    out.push((
                        field,
                        Field::Fixed64(u64::from_le_bytes(v.try_into().unwrap())),
                    ));
                }
                2 => {
                    let len = varint(&mut buf) as usize;
                    let (v, rest) = buf.split_at(len);
                    buf = rest;
                    out.push((field, Field::Bytes(v)));
                }
                other => panic!("unexpected wire type {other}"),
            }
        }
        out
    }

    pub fn get(buf: &[u8], field: u32) -> Vec<&[u8]> {
        fields(buf)
            .into_iter()
            .filter_map(|(f, v)| match v {
                Field::Bytes(b) if f == field => Some(b),
                _ => None,
            })
            .collect()
    }

    pub fn string(buf: &[u8], field: u32) -> String {
        get(buf, field)
            .first()
            .map(|b| String::from_utf8(b.to_vec()).unwrap())
            .unwrap_or_default()
    }

    /// The value of a `Named*` entry with the given name in repeated field `field`.
    pub fn named<'a>(buf: &'a [u8], field: u32, name: &str) -> Option<&'a [u8]> {
        get(buf, field)
            .into_iter()
            .find(|entry| string(entry, 1) == name)
            .and_then(|entry| get(entry, 2).first().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::wire::{Field, fields, get, named, string};
    use super::{Value, encode_document, encode_schema};
    use serde_json::json;

    #[test]
    fn schema_encoding() {
        let s = json!({
            "description": "d",
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"$ref": "#/definitions/X", "description": "ref"},
                "b": {"type": "array", "items": {"type": "string"}},
                "c": {"type": "object", "additionalProperties": false},
                "n": {"type": "integer", "maximum": 10, "minLength": 3},
            },
            "x-kubernetes-group-version-kind": [{"group": "", "kind": "K", "version": "v1"}],
        });
        let b = encode_schema(&s);
        assert_eq!(string(&b, 4), "d");
        assert_eq!(string(get(&b, 22)[0], 1), "object");
        assert_eq!(string(&b, 19), "a");
        let props = get(&b, 25)[0];
        let a = named(props, 1, "a").unwrap();
        assert_eq!(string(a, 1), "#/definitions/X");
        let bb = named(props, 1, "b").unwrap();
        let items = get(bb, 23)[0];
        assert_eq!(string(get(items, 1)[0], 4), "");
        assert_eq!(string(get(get(items, 1)[0], 22)[0], 1), "string");
        let c = named(props, 1, "c").unwrap();
        assert_eq!(fields(get(c, 21)[0]), vec![(2, Field::Varint(0))]);
        let n = named(props, 1, "n").unwrap();
        let f = fields(n);
        assert!(f.contains(&(7, Field::Fixed64(10f64.to_bits()))));
        assert!(f.contains(&(12, Field::Varint(3))));
        let ext = named(&b, 31, "x-kubernetes-group-version-kind").unwrap();
        let yaml = string(ext, 2);
        let parsed: Value = serde_json::from_str(yaml.trim()).unwrap();
        assert_eq!(parsed[0]["kind"], "K");
    }

    #[test]
    fn document_encoding() {
        let doc = json!({
            "swagger": "2.0",
            "info": {"title": "Kubernetes", "version": "v1.33.0"},
            "paths": {
                "/api/v1/namespaces/{namespace}/pods/{name}": {
                    "parameters": [{"in": "path", "name": "name", "required": true, "type": "string", "uniqueItems": true}],
                    "patch": {
                        "consumes": ["application/merge-patch+json"],
                        "parameters": [
                            {"in": "body", "name": "body", "required": true, "schema": {"$ref": "#/definitions/P"}},
                            {"in": "query", "name": "fieldValidation", "type": "string", "uniqueItems": true}
                        ],
                        "responses": {"200": {"description": "OK", "schema": {"$ref": "#/definitions/Pod"}}},
                        "x-kubernetes-group-version-kind": {"group": "", "kind": "Pod", "version": "v1"}
                    }
                }
            },
            "definitions": {"Pod": {"type": "object", "properties": {}}},
            "security": [{"BearerToken": []}],
            "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
        });
        let b = encode_document(&doc);
        assert_eq!(string(&b, 1), "2.0");
        assert_eq!(string(get(&b, 2)[0], 2), "v1.33.0");
        let paths = get(&b, 8)[0];
        let item = named(paths, 2, "/api/v1/namespaces/{namespace}/pods/{name}").unwrap();
        let patch = get(item, 8)[0];
        assert_eq!(string(patch, 7), "application/merge-patch+json");
        let params = get(patch, 8);
        assert_eq!(params.len(), 2);
        let body = get(get(params[0], 1)[0], 1)[0];
        assert_eq!(string(body, 2), "body");
        let query = get(get(get(params[1], 1)[0], 2)[0], 3)[0];
        assert_eq!(string(query, 4), "fieldValidation");
        let gvk = named(patch, 13, "x-kubernetes-group-version-kind").unwrap();
        assert!(string(gvk, 2).contains("\"kind\":\"Pod\""));
        let path_param = get(get(get(get(item, 9)[0], 1)[0], 2)[0], 4)[0];
        assert_eq!(string(path_param, 4), "name");
        let defs = get(&b, 9)[0];
        assert!(named(defs, 1, "Pod").is_some());
        let sec = get(&b, 13)[0];
        let key = get(named(sec, 1, "BearerToken").unwrap(), 2)[0];
        assert_eq!(string(key, 2), "authorization");
    }
}
