//! Properties of request-body decoding, from the raw bytes (`http::decode_body`, content-type
//! parsing) through typed decoding, defaulting and validation (`Registry::create` and
//! `Registry::replace` as dry runs over an in-memory store):
//!
//! - arbitrary bytes under every content type never panic, and fail with the code upstream
//!   uses (400; 415 only for a protobuf kind that cannot be read as protobuf);
//! - arbitrary JSON documents shaped like objects (random nesting, random keys, wrong types
//!   for known fields) never panic, and fail only with 400 (undecodable) or 422 (invalid);
//! - valid ConfigMaps and Pods round-trip through JSON, YAML and protobuf bodies, and
//!   through create (modulo upstream's defaults, which are idempotent);
//! - every truncation of a valid JSON document is a 400;
//! - absurd nesting (10 000 levels) is an error, never a stack overflow.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, OnceLock};

use api::ApiError;
use apiserver::Registry;
use apiserver::authn::UserInfo;
use apiserver::http::{ContentType, content_type, decode_body};
use apiserver::registry::{FieldValidation, Resource, WriteOptions};
use base64::Engine as _;
use http::{HeaderMap, HeaderValue, header};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

/// Cases per property (`PROPTEST_CASES` overrides, for a longer hunt).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(256)
}

fn config() -> ProptestConfig {
    ProptestConfig {
        cases: cases(),
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

// ----- a registry over an in-memory store -----

struct Env {
    rt: tokio::runtime::Runtime,
    registry: Arc<Registry>,
}

/// The registry, with the `default` namespace and an existing ConfigMap `target` and Pod
/// `target` for updates.
fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let registry = rt.block_on(async {
            let registry = Registry::new(
                Arc::new(store::memory::MemoryBackend::new()),
                Arc::new(store::SystemClock),
                std::time::Duration::from_secs(3600),
                apiserver::registry::services::Cidr::parse("10.43.0.0/16").unwrap(),
                ("127.0.0.1".into(), 6443),
            );
            let opts = write_options(false, FieldValidation::Strict);
            let ns = registry.lookup("", "v1", "namespaces").unwrap();
            registry
                .create(
                    &ns,
                    None,
                    json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}}),
                    &opts,
                )
                .await
                .unwrap();
            let cms = registry.lookup("", "v1", "configmaps").unwrap();
            registry
                .create(
                    &cms,
                    Some("default"),
                    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "target"}, "data": {"a": "b"}}),
                    &opts,
                )
                .await
                .unwrap();
            let pods = registry.lookup("", "v1", "pods").unwrap();
            registry
                .create(
                    &pods,
                    Some("default"),
                    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "target"},
                           "spec": {"containers": [{"name": "c", "image": "nginx"}]}}),
                    &opts,
                )
                .await
                .unwrap();
            registry
        });
        Env { rt, registry }
    })
}

fn write_options(dry_run: bool, field_validation: FieldValidation) -> WriteOptions {
    WriteOptions {
        user: UserInfo {
            name: "admin".into(),
            uid: String::new(),
            groups: vec!["system:masters".into()],
            extra: Default::default(),
        },
        user_agent: "decoder-props".into(),
        dry_run,
        field_manager: None,
        field_validation,
        apply: false,
        include_uninitialized: false,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

/// The resources the object properties run against: (group, version, plural, kind).
const TARGETS: &[(&str, &str, &str, &str)] = &[
    ("", "v1", "configmaps", "ConfigMap"),
    ("", "v1", "secrets", "Secret"),
    ("", "v1", "pods", "Pod"),
    ("", "v1", "services", "Service"),
    ("", "v1", "namespaces", "Namespace"),
    ("apps", "v1", "deployments", "Deployment"),
    ("batch", "v1", "jobs", "Job"),
    ("rbac.authorization.k8s.io", "v1", "roles", "Role"),
    (
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
    ),
];

fn resource(group: &str, version: &str, plural: &str) -> Arc<Resource> {
    env()
        .registry
        .lookup(group, version, plural)
        .unwrap_or_else(|| panic!("{group}/{version} {plural} is not served"))
}

fn namespace_for(r: &Resource) -> Option<&'static str> {
    r.info.namespaced.then_some("default")
}

/// A dry-run create.
fn create(r: &Resource, body: Value, fv: FieldValidation) -> Result<Value, ApiError> {
    let e = env();
    e.rt.block_on(
        e.registry
            .create(r, namespace_for(r), body, &write_options(true, fv)),
    )
    .map(|w| w.object)
}

/// A dry-run update of the existing object `target`.
fn replace(r: &Resource, body: Value, fv: FieldValidation) -> Result<Value, ApiError> {
    let e = env();
    e.rt.block_on(e.registry.replace(
        r,
        namespace_for(r),
        "target",
        None,
        body,
        &write_options(true, fv),
    ))
    .map(|w| w.object)
}

/// The error is an upstream-shaped `Status` with one of `codes`.
fn assert_error(e: &ApiError, codes: &[u16], what: &str) {
    assert!(
        codes.contains(&e.code),
        "{what}: got {} {:?} ({}), expected one of {codes:?}",
        e.code,
        e.reason,
        e.message
    );
    let s = e.to_status();
    assert_eq!(s["kind"], "Status", "{what}: {s}");
    assert_eq!(s["apiVersion"], "v1", "{what}: {s}");
    assert_eq!(s["status"], "Failure", "{what}: {s}");
    assert_eq!(s["code"], e.code, "{what}: {s}");
    let reason = s["reason"].as_str().unwrap_or_default();
    let expected_reason = match e.code {
        400 => "BadRequest",
        404 => "NotFound",
        409 => "", // AlreadyExists or Conflict
        413 => "RequestEntityTooLarge",
        415 => "UnsupportedMediaType",
        422 => "Invalid",
        _ => "",
    };
    if !expected_reason.is_empty() {
        assert_eq!(reason, expected_reason, "{what}: {s}");
    }
    if e.code == 422 {
        assert!(
            s["details"]["causes"]
                .as_array()
                .is_some_and(|c| !c.is_empty()),
            "{what}: an Invalid error names its causes: {s}"
        );
    }
}

// ----- strategies -----

const ALL_TYPES: &[ContentType] = &[
    ContentType::Json,
    ContentType::Yaml,
    ContentType::Protobuf,
    ContentType::JsonPatch,
    ContentType::MergePatch,
    ContentType::StrategicMergePatch,
    ContentType::ApplyPatch,
];

fn any_content_type() -> impl Strategy<Value = ContentType> {
    proptest::sample::select(ALL_TYPES)
}

/// Keys that mean something somewhere in the built-in kinds, plus arbitrary ones.
fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => proptest::sample::select(vec![
            "apiVersion", "kind", "metadata", "name", "generateName", "namespace", "labels",
            "annotations", "finalizers", "ownerReferences", "resourceVersion", "uid",
            "creationTimestamp", "deletionTimestamp", "generation", "managedFields", "spec",
            "status", "data", "binaryData", "stringData", "type", "immutable", "containers",
            "initContainers", "image", "ports", "containerPort", "protocol", "env", "value",
            "valueFrom", "replicas", "selector", "matchLabels", "matchExpressions", "template",
            "volumes", "resources", "limits", "requests", "cpu", "memory", "clusterIP",
            "clusterIPs", "targetPort", "port", "nodePort", "rules", "verbs", "apiGroups",
            "versions", "served", "storage", "schema", "openAPIV3Schema", "properties",
            "x-kubernetes-preserve-unknown-fields", "group", "names", "plural", "scope",
            "restartPolicy", "nodeName", "command", "args", "securityContext", "key",
            "operator", "values", "items", "path", "mode", "fieldsV1", "manager",
        ])
        .prop_map(str::to_string),
        1 => "[a-zA-Z0-9._/-]{0,12}",
        1 => any::<String>(),
    ]
}

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        // Binary fractions with short decimal forms: serde_json (without its
        // `float_roundtrip` feature) parses those exactly; see `json_floats_round_trip`.
        (-(1i64 << 40)..(1i64 << 40)).prop_map(|n| Value::from(n as f64 / 4.0)),
        proptest::sample::select(vec![
            "",
            "a",
            "A",
            "nginx",
            "TCP",
            "Always",
            "1Gi",
            "100m",
            "-1",
            "0",
            "true",
            "null",
            "a..b",
            "UPPER",
            "x/y",
            "2024-01-01T00:00:00Z",
            "not-a-time",
            "ClusterIP",
        ])
        .prop_map(Value::from),
        "[a-z0-9.-]{0,20}".prop_map(Value::from),
        any::<String>().prop_map(Value::from),
    ]
}

fn arb_json() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::btree_map(key(), inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Metadata: each known field either plausible or of an arbitrary (often wrong) type.
fn arb_metadata() -> impl Strategy<Value = Value> {
    let name = prop_oneof![
        3 => "[a-z0-9]([-a-z0-9.]{0,20}[a-z0-9])?".prop_map(Value::from),
        1 => any::<String>().prop_map(Value::from),
        1 => arb_json(),
    ];
    let string_map = prop_oneof![
        2 => proptest::collection::btree_map("[a-zA-Z0-9./_-]{0,20}", "[a-zA-Z0-9._-]{0,10}", 0..4)
            .prop_map(|m| json!(m)),
        1 => arb_json(),
    ];
    (
        proptest::option::of(name),
        proptest::option::of(prop_oneof![Just(json!("gen-")), arb_json()]),
        proptest::option::of(prop_oneof![Just(json!("default")), arb_json()]),
        proptest::option::of(string_map.clone()),
        proptest::option::of(string_map),
        proptest::collection::btree_map(key(), arb_json(), 0..3),
    )
        .prop_map(
            |(name, generate_name, namespace, labels, annotations, extra)| {
                let mut m: Map<String, Value> = extra.into_iter().collect();
                for (k, v) in [
                    ("name", name),
                    ("generateName", generate_name),
                    ("namespace", namespace),
                    ("labels", labels),
                    ("annotations", annotations),
                ] {
                    if let Some(v) = v {
                        m.insert(k.into(), v);
                    }
                }
                Value::Object(m)
            },
        )
}

/// An object for one of the targets: mostly the right type meta, metadata as above (or
/// not an object at all), and arbitrary other fields.
fn arb_object() -> impl Strategy<Value = (usize, Value)> {
    (
        0..TARGETS.len(),
        prop_oneof![4 => Just(None), 1 => proptest::option::of(arb_json())],
        prop_oneof![4 => arb_metadata(), 1 => arb_json()],
        proptest::collection::btree_map(key(), arb_json(), 0..5),
    )
        .prop_map(|(i, type_meta, metadata, fields)| {
            let (group, version, _, kind) = TARGETS[i];
            let mut m: Map<String, Value> = fields.into_iter().collect();
            let api_version = if group.is_empty() {
                version.to_string()
            } else {
                format!("{group}/{version}")
            };
            match type_meta {
                None => {
                    m.insert("apiVersion".into(), json!(api_version));
                    m.insert("kind".into(), json!(kind));
                }
                Some(v) => {
                    m.insert("kind".into(), v);
                }
            }
            m.insert("metadata".into(), metadata);
            (i, Value::Object(m))
        })
}

fn field_validation() -> impl Strategy<Value = FieldValidation> {
    proptest::sample::select(vec![
        FieldValidation::Strict,
        FieldValidation::Warn,
        FieldValidation::Ignore,
    ])
}

fn dns_label() -> impl Strategy<Value = String> {
    "[a-z]([-a-z0-9]{0,14}[a-z0-9])?"
}

fn dns_subdomain() -> impl Strategy<Value = String> {
    "[a-z0-9]([-a-z0-9]{0,14}[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]{0,8}[a-z0-9])?){0,2}"
}

fn label_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(
        "([a-z]{1,8}\\.example\\.com/)?[a-z]([-a-z0-9_.]{0,10}[a-z0-9])?",
        "([A-Za-z0-9]([-A-Za-z0-9_.]{0,10}[A-Za-z0-9])?)?",
        0..4,
    )
}

fn annotation_map() -> impl Strategy<Value = BTreeMap<String, String>> {
    proptest::collection::btree_map(
        "([a-z]{1,8}\\.example\\.com/)?[a-z]([-a-z0-9_.]{0,10}[a-z0-9])?",
        any::<String>(),
        0..3,
    )
}

/// A valid ConfigMap, as a client would send it.
#[derive(Clone, Debug)]
struct ConfigMap {
    name: String,
    labels: BTreeMap<String, String>,
    annotations: BTreeMap<String, String>,
    data: BTreeMap<String, String>,
    binary: BTreeMap<String, Vec<u8>>,
    immutable: Option<bool>,
}

impl ConfigMap {
    fn json(&self) -> Value {
        let mut meta = json!({"name": self.name});
        if !self.labels.is_empty() {
            meta["labels"] = json!(self.labels);
        }
        if !self.annotations.is_empty() {
            meta["annotations"] = json!(self.annotations);
        }
        let mut v = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta});
        if !self.data.is_empty() {
            v["data"] = json!(self.data);
        }
        if !self.binary.is_empty() {
            let b64 = base64::engine::general_purpose::STANDARD;
            let m: BTreeMap<&String, String> = self
                .binary
                .iter()
                .map(|(k, v)| (k, b64.encode(v)))
                .collect();
            v["binaryData"] = json!(m);
        }
        if let Some(i) = self.immutable {
            v["immutable"] = json!(i);
        }
        v
    }

    /// The body a Go client sends (`k8s\0` + runtime.Unknown), written as gogo-protobuf
    /// writes a `v1.ConfigMap`.
    fn protobuf(&self) -> Vec<u8> {
        let mut meta = Pb::default().str(1, &self.name).str(2, "").str(3, "");
        meta = meta.str(5, "").str(6, "").int(7, 0).msg(8, Pb::default());
        for (k, v) in &self.labels {
            meta = meta.msg(11, Pb::default().str(1, k).str(2, v));
        }
        for (k, v) in &self.annotations {
            meta = meta.msg(12, Pb::default().str(1, k).str(2, v));
        }
        meta = meta.str(15, "");
        let mut cm = Pb::default().msg(1, meta);
        for (k, v) in &self.data {
            cm = cm.msg(2, Pb::default().str(1, k).str(2, v));
        }
        for (k, v) in &self.binary {
            cm = cm.msg(3, Pb::default().str(1, k).bytes(2, v));
        }
        if let Some(i) = self.immutable {
            cm = cm.int(4, i64::from(i));
        }
        let mut out = b"k8s\x00".to_vec();
        let type_meta = Pb::default().str(1, "v1").str(2, "ConfigMap");
        let env = Pb::default()
            .msg(1, type_meta)
            .msg(2, cm)
            .str(3, "")
            .str(4, "application/vnd.kubernetes.protobuf");
        out.extend_from_slice(&env.0);
        out
    }
}

fn config_map() -> impl Strategy<Value = ConfigMap> {
    let data_key =
        "[-._a-zA-Z0-9]{1,20}".prop_filter("not . nor ..*", |k| k != "." && !k.starts_with(".."));
    (
        dns_subdomain(),
        label_map(),
        annotation_map(),
        proptest::collection::btree_map(data_key.clone(), any::<String>(), 0..5),
        proptest::collection::btree_map(
            data_key,
            proptest::collection::vec(any::<u8>(), 0..16),
            0..3,
        ),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(name, labels, annotations, data, mut binary, immutable)| {
            binary.retain(|k, _| !data.contains_key(k));
            ConfigMap {
                name,
                labels,
                annotations,
                data,
                binary,
                immutable,
            }
        })
}

/// A protobuf message under construction.
#[derive(Default, Clone)]
struct Pb(Vec<u8>);

impl Pb {
    fn varint(&mut self, mut v: u64) {
        loop {
            let b = (v & 0x7f) as u8;
            v >>= 7;
            if v == 0 {
                self.0.push(b);
                return;
            }
            self.0.push(b | 0x80);
        }
    }
    fn int(mut self, n: u32, v: i64) -> Pb {
        self.varint(u64::from(n) << 3);
        self.varint(v as u64);
        self
    }
    fn bytes(mut self, n: u32, b: &[u8]) -> Pb {
        self.varint((u64::from(n) << 3) | 2);
        self.varint(b.len() as u64);
        self.0.extend_from_slice(b);
        self
    }
    fn str(self, n: u32, s: &str) -> Pb {
        self.bytes(n, s.as_bytes())
    }
    fn msg(self, n: u32, m: Pb) -> Pb {
        self.bytes(n, &m.0)
    }
}

/// A valid Pod, as a client would send it.
fn pod() -> impl Strategy<Value = Value> {
    let container = (
        "[a-z]{1,8}(:[a-z0-9]{1,5})?",
        proptest::collection::btree_set(1u16..=65535, 0..3),
        proptest::collection::btree_map("[A-Z_][A-Z0-9_]{0,10}", "[ -~]{0,12}", 0..3),
        proptest::option::of(proptest::sample::select(vec![
            "Always",
            "IfNotPresent",
            "Never",
        ])),
    );
    (
        dns_subdomain(),
        label_map(),
        proptest::collection::btree_map(dns_label(), container, 1..4),
        proptest::option::of(proptest::sample::select(vec![
            "Always",
            "OnFailure",
            "Never",
        ])),
    )
        .prop_map(|(name, labels, containers, restart)| {
            let containers: Vec<Value> = containers
                .into_iter()
                .map(|(cname, (image, ports, env, pull))| {
                    let mut c = json!({"name": cname, "image": image});
                    if !ports.is_empty() {
                        c["ports"] = json!(
                            ports
                                .iter()
                                .map(|p| json!({"containerPort": p}))
                                .collect::<Vec<_>>()
                        );
                    }
                    if !env.is_empty() {
                        c["env"] = json!(
                            env.iter()
                                .map(|(k, v)| json!({"name": k, "value": v}))
                                .collect::<Vec<_>>()
                        );
                    }
                    if let Some(p) = pull {
                        c["imagePullPolicy"] = json!(p);
                    }
                    c
                })
                .collect();
            let mut v = json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": name},
                "spec": {"containers": containers},
            });
            if !labels.is_empty() {
                v["metadata"]["labels"] = json!(labels);
            }
            if let Some(r) = restart {
                v["spec"]["restartPolicy"] = json!(r);
            }
            v
        })
}

/// `sub` is contained in `sup`: every field of an object in `sub` is in `sup` with a
/// contained value; arrays match element-wise; scalars are equal.
fn contained(sub: &Value, sup: &Value) -> bool {
    match (sub, sup) {
        (Value::Object(a), Value::Object(b)) => a
            .iter()
            .all(|(k, v)| b.get(k).is_some_and(|w| contained(v, w))),
        (Value::Array(a), Value::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| contained(x, y))
        }
        _ => sub == sup,
    }
}

/// What a create adds to metadata (and a protobuf body's zero `creationTimestamp`).
fn strip_server_fields(mut v: Value) -> Value {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        for f in [
            "uid",
            "creationTimestamp",
            "generation",
            "namespace",
            "resourceVersion",
            "managedFields",
        ] {
            m.remove(f);
        }
    }
    v
}

/// The JSON pointers of every value below the root.
fn pointers(v: &Value, at: String, out: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            for (k, child) in m {
                let p = format!("{at}/{}", k.replace('~', "~0").replace('/', "~1"));
                out.push(p.clone());
                pointers(child, p, out);
            }
        }
        Value::Array(a) => {
            for (i, child) in a.iter().enumerate() {
                let p = format!("{at}/{i}");
                out.push(p.clone());
                pointers(child, p, out);
            }
        }
        _ => {}
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

// ----- properties -----

proptest! {
    #![proptest_config(config())]

    /// Arbitrary bytes never panic the decoder; errors are 400 (415 only for protobuf).
    #[test]
    fn arbitrary_bytes_never_panic(
        ct in any_content_type(),
        prefix in proptest::sample::select(vec![
            &b""[..], b"k8s\x00", b"{", b"[", b"---\n", b"apiVersion: v1\n", b"\xef\xbb\xbf",
        ]),
        bytes in proptest::collection::vec(any::<u8>(), 0..256),
        target in 0..TARGETS.len(),
    ) {
        let (group, version, _, kind) = TARGETS[target];
        let api_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
        let mut body = prefix.to_vec();
        body.extend_from_slice(&bytes);
        match decode_body(&body, ct, Some((&api_version, kind))) {
            Ok(_) => {}
            Err(e) => {
                let codes: &[u16] = if ct == ContentType::Protobuf { &[400, 415] } else { &[400] };
                assert_error(&e, codes, &format!("{ct:?} {body:?}"));
            }
        }
    }

    /// Arbitrary text (valid UTF-8, YAML- and JSON-ish) never panics either.
    #[test]
    fn arbitrary_text_never_panics(
        ct in any_content_type(),
        text in "[-{}\\[\\]:,\"'&*!|>#%@`?a-z0-9 \\n\\t]{0,200}",
    ) {
        if let Err(e) = decode_body(text.as_bytes(), ct, Some(("v1", "ConfigMap"))) {
            let codes: &[u16] = if ct == ContentType::Protobuf { &[400, 415] } else { &[400] };
            assert_error(&e, codes, &format!("{ct:?} {text:?}"));
        }
    }

    /// Any Content-Type header parses to a known body format or a 415.
    #[test]
    fn content_type_header_is_total(raw in any::<String>(), known in any_content_type_name(), params in "(;[ a-z]{0,8}=[ a-z0-9\"]{0,8}){0,3}") {
        for value in [raw.clone(), format!("{known}{params}"), format!("{}{params}", known.to_uppercase())] {
            let Ok(hv) = HeaderValue::from_str(&value) else { continue };
            let mut h = HeaderMap::new();
            h.insert(header::CONTENT_TYPE, hv);
            if let Err(e) = content_type(&h) {
                assert_error(&e, &[415], &value);
            }
        }
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(&format!("{known}{params}")).unwrap());
        prop_assert!(content_type(&h).is_ok(), "{known}{params}");
    }

    /// JSON documents shaped like objects, with wrong types and random fields anywhere:
    /// decoding the body gives back the document; creating or updating it (dry run) never
    /// panics and fails only with 400 or 422.
    #[test]
    fn arbitrary_objects_fail_cleanly((target, obj) in arb_object(), fv in field_validation(), yaml in any::<bool>()) {
        let (group, version, plural, kind) = TARGETS[target];
        let r = resource(group, version, plural);
        let bytes = serde_json::to_vec(&obj).unwrap();
        let decoded = decode_body(&bytes, ContentType::Json, Some((&r.info.api_version(), kind))).unwrap();
        prop_assert_eq!(&decoded, &obj);
        if yaml {
            let text = serde_yaml_ng::to_string(&obj).unwrap();
            let from_yaml = decode_body(text.as_bytes(), ContentType::Yaml, None).unwrap();
            prop_assert_eq!(&from_yaml, &obj, "YAML:\n{}", text);
        }
        if let Err(e) = create(&r, decoded.clone(), fv) {
            assert_error(&e, &[400, 422], &format!("create {plural} {obj}"));
        }
        if matches!(plural, "configmaps" | "pods")
            && let Err(e) = replace(&r, decoded, fv)
        {
            // A resourceVersion in the body is a precondition: a mismatch is a 409.
            assert_error(&e, &[400, 409, 422], &format!("update {plural} {obj}"));
            if e.code == 409 {
                prop_assert!(obj["metadata"].get("resourceVersion").is_some(), "{}: {}", e.message, obj);
            }
        }
    }

    /// A valid Pod or ConfigMap with one value somewhere replaced by an arbitrary one (of the
    /// wrong type, out of range, …) or removed: 400 or 422, never a panic or a 500.
    #[test]
    fn mutated_valid_objects_fail_cleanly(
        p in pod(),
        cm in config_map(),
        which in any::<proptest::sample::Index>(),
        replacement in proptest::option::of(arb_json()),
        fv in field_validation(),
    ) {
        for (plural, mut doc) in [("pods", p), ("configmaps", cm.json())] {
            let mut paths = Vec::new();
            pointers(&doc, String::new(), &mut paths);
            let path = &paths[which.index(paths.len())];
            let (parent, last) = path.rsplit_once('/').unwrap();
            match (doc.pointer_mut(parent).unwrap(), &replacement) {
                (Value::Object(m), Some(v)) => { m.insert(unescape(last), v.clone()); }
                (Value::Object(m), None) => { m.remove(&unescape(last)); }
                (Value::Array(a), Some(v)) => a[last.parse::<usize>().unwrap()] = v.clone(),
                (Value::Array(a), None) => { a.remove(last.parse::<usize>().unwrap()); }
                _ => unreachable!(),
            }
            let r = resource("", "v1", plural);
            if let Err(e) = create(&r, doc.clone(), fv) {
                assert_error(&e, &[400, 422], &format!("create {plural} with {path} changed: {doc}"));
            }
            if let Err(e) = replace(&r, doc.clone(), fv) {
                assert_error(&e, &[400, 409, 422], &format!("update {plural} with {path} changed: {doc}"));
            }
        }
    }

    /// Valid ConfigMaps: the same object from JSON, YAML and protobuf bodies; typed decoding
    /// keeps every field and reports none unknown; a create stores exactly what was sent
    /// plus the server's metadata.
    #[test]
    fn config_maps_round_trip(cm in config_map()) {
        let expected = cm.json();
        let json_bytes = serde_json::to_vec(&expected).unwrap();
        let from_json = decode_body(&json_bytes, ContentType::Json, Some(("v1", "ConfigMap"))).unwrap();
        prop_assert_eq!(&from_json, &expected);

        let yaml = serde_yaml_ng::to_string(&expected).unwrap();
        let from_yaml = decode_body(yaml.as_bytes(), ContentType::Yaml, Some(("v1", "ConfigMap"))).unwrap();
        prop_assert_eq!(&from_yaml, &expected, "YAML:\n{}", yaml);

        let from_pb = decode_body(&cm.protobuf(), ContentType::Protobuf, Some(("v1", "ConfigMap"))).unwrap();
        // Go writes a zero creationTimestamp as null; nothing else differs.
        prop_assert_eq!(&from_pb["metadata"]["creationTimestamp"], &Value::Null);
        prop_assert_eq!(strip_server_fields(from_pb), expected.clone());

        let typed = api::kinds::decode("", "v1", "ConfigMap", &from_json).unwrap().unwrap();
        prop_assert_eq!(&typed.object, &expected);
        prop_assert!(typed.unknown_fields.is_empty(), "{:?}", typed.unknown_fields);

        let r = resource("", "v1", "configmaps");
        let created = create(&r, from_json, FieldValidation::Strict).unwrap();
        prop_assert_eq!(&created["metadata"]["namespace"], "default");
        prop_assert!(created["metadata"]["uid"].is_string());
        prop_assert!(created["metadata"]["creationTimestamp"].is_string());
        prop_assert_eq!(strip_server_fields(created), expected);
    }

    /// Valid Pods: decoding keeps every field sent; create adds upstream's defaults, and
    /// those are a fixed point (defaulting or decoding again changes nothing).
    #[test]
    fn pods_round_trip(p in pod()) {
        let bytes = serde_json::to_vec(&p).unwrap();
        let decoded = decode_body(&bytes, ContentType::Json, Some(("v1", "Pod"))).unwrap();
        prop_assert_eq!(&decoded, &p);
        let yaml = serde_yaml_ng::to_string(&p).unwrap();
        prop_assert_eq!(&decode_body(yaml.as_bytes(), ContentType::Yaml, None).unwrap(), &p);

        let r = resource("", "v1", "pods");
        let created = create(&r, decoded, FieldValidation::Strict)
            .unwrap_or_else(|e| panic!("valid pod refused: {e} {:?}\n{p}", e.causes()));
        prop_assert!(contained(&p, &created), "sent {}\ncreated {}", p, created);
        // Upstream's defaults.
        prop_assert_eq!(&created["spec"]["dnsPolicy"], "ClusterFirst");
        prop_assert_eq!(&created["spec"]["schedulerName"], "default-scheduler");
        if p["spec"]["restartPolicy"].is_null() {
            prop_assert_eq!(&created["spec"]["restartPolicy"], "Always");
        }
        for c in created["spec"]["containers"].as_array().unwrap() {
            prop_assert_eq!(&c["terminationMessagePath"], "/dev/termination-log");
            let image = c["image"].as_str().unwrap();
            if let Some(policy) = c["imagePullPolicy"].as_str() {
                let sent = p["spec"]["containers"].as_array().unwrap().iter()
                    .find(|s| s["name"] == c["name"]).unwrap();
                let expected = match sent["imagePullPolicy"].as_str() {
                    Some(s) => s,
                    None if !image.contains(':') || image.ends_with(":latest") => "Always",
                    None => "IfNotPresent",
                };
                prop_assert_eq!(policy, expected, "{}", image);
            } else {
                prop_assert!(false, "no imagePullPolicy on {}", c);
            }
            for port in c["ports"].as_array().into_iter().flatten() {
                prop_assert_eq!(&port["protocol"], "TCP");
            }
        }
        let mut again = created.clone();
        r.strategy.default(&r.info, &mut again);
        prop_assert_eq!(&again, &created, "defaulting is not idempotent");
        let redecoded = r.strategy.decode(&r.info, &created).unwrap();
        prop_assert_eq!(&redecoded.object, &created);
        prop_assert!(redecoded.unknown_fields.is_empty(), "{:?}", redecoded.unknown_fields);
    }

    /// Every proper prefix of a valid JSON document is a 400, under every JSON content type.
    #[test]
    fn truncated_json_is_a_bad_request(cm in config_map(), p in pod(), cut in any::<proptest::sample::Index>(), pretty in any::<bool>()) {
        for doc in [cm.json(), p] {
            let bytes = if pretty { serde_json::to_vec_pretty(&doc).unwrap() } else { serde_json::to_vec(&doc).unwrap() };
            let n = cut.index(bytes.len());
            for ct in [ContentType::Json, ContentType::MergePatch, ContentType::StrategicMergePatch] {
                let e = decode_body(&bytes[..n], ct, Some(("v1", "ConfigMap"))).unwrap_err();
                assert_error(&e, &[400], &format!("{ct:?} {}", String::from_utf8_lossy(&bytes[..n])));
            }
        }
    }

    /// Truncated protobuf and YAML bodies are values or 400s, never panics.
    #[test]
    fn truncated_protobuf_and_yaml_never_panic(cm in config_map(), cut in any::<proptest::sample::Index>()) {
        let pb = cm.protobuf();
        let n = cut.index(pb.len());
        if let Err(e) = decode_body(&pb[..n], ContentType::Protobuf, Some(("v1", "ConfigMap"))) {
            assert_error(&e, &[400], &format!("protobuf cut at {n}"));
        }
        let yaml = serde_yaml_ng::to_string(&cm.json()).unwrap();
        let n = cut.index(yaml.len());
        let cut_yaml = &yaml.as_bytes()[..n];
        if let Err(e) = decode_body(cut_yaml, ContentType::Yaml, None) {
            assert_error(&e, &[400], &format!("YAML cut at {n}"));
        }
    }
}

fn any_content_type_name() -> impl Strategy<Value = &'static str> {
    proptest::sample::select(vec![
        "application/json",
        "application/yaml",
        "application/vnd.kubernetes.protobuf",
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ])
}

#[test]
fn content_types_map_to_formats() {
    let cases = [
        ("application/json", Some(ContentType::Json)),
        ("application/json; charset=utf-8", Some(ContentType::Json)),
        ("Application/JSON", Some(ContentType::Json)),
        ("application/yaml", Some(ContentType::Yaml)),
        (
            "application/vnd.kubernetes.protobuf",
            Some(ContentType::Protobuf),
        ),
        ("application/json-patch+json", Some(ContentType::JsonPatch)),
        (
            "application/merge-patch+json",
            Some(ContentType::MergePatch),
        ),
        (
            "application/strategic-merge-patch+json",
            Some(ContentType::StrategicMergePatch),
        ),
        (
            "application/apply-patch+yaml",
            Some(ContentType::ApplyPatch),
        ),
        ("text/plain", None),
        ("application/xml", None),
        ("application/cbor", None),
        ("multipart/form-data; boundary=x", None),
    ];
    for (raw, want) in cases {
        let mut h = HeaderMap::new();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_str(raw).unwrap());
        match (content_type(&h), want) {
            (Ok(got), Some(want)) => assert_eq!(got, want, "{raw}"),
            (Err(e), None) => assert_error(&e, &[415], raw),
            (got, want) => panic!("{raw}: got {got:?}, want {want:?}"),
        }
    }
}

/// 10 000 levels of nesting: an error, not a stack overflow, under every format.
#[test]
fn deep_nesting_is_an_error() {
    const DEPTH: usize = 10_000;
    let arrays = format!("{}{}", "[".repeat(DEPTH), "]".repeat(DEPTH));
    let objects = format!("{}1{}", "{\"a\":".repeat(DEPTH), "}".repeat(DEPTH));
    let in_object = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"x\"}},\"data\":{arrays}}}"
    );
    for doc in [&arrays, &objects, &in_object] {
        for ct in ALL_TYPES {
            if *ct == ContentType::Protobuf {
                continue;
            }
            let e = decode_body(doc.as_bytes(), *ct, Some(("v1", "ConfigMap"))).unwrap_err();
            assert_error(&e, &[400], &format!("{ct:?} nested {DEPTH} deep"));
        }
    }
    // YAML block style: `- - - … x`, a sequence nested 10 000 deep.
    let block = format!("{}x\n", "- ".repeat(DEPTH));
    for ct in [ContentType::Yaml, ContentType::ApplyPatch] {
        let e = decode_body(block.as_bytes(), ct, None).unwrap_err();
        assert_error(&e, &[400], "block YAML nested 10000 deep");
    }
    // Protobuf: JSONSchemaProps.not nests without bound.
    let mut schema = Pb::default().str(5, "string");
    for _ in 0..DEPTH {
        schema = Pb::default().msg(28, schema);
    }
    let raw = Pb::default().msg(
        2,
        Pb::default().msg(7, Pb::default().msg(4, Pb::default().msg(1, schema))),
    );
    let type_meta = Pb::default()
        .str(1, "apiextensions.k8s.io/v1")
        .str(2, "CustomResourceDefinition");
    let mut body = b"k8s\x00".to_vec();
    body.extend_from_slice(&Pb::default().msg(1, type_meta).msg(2, raw).0);
    let e = decode_body(
        &body,
        ContentType::Protobuf,
        Some(("apiextensions.k8s.io/v1", "CustomResourceDefinition")),
    )
    .unwrap_err();
    assert_error(&e, &[400], "protobuf nested 10000 deep");
}

/// Nesting just under the JSON parser's limit goes through typed decoding, defaulting and
/// validation without trouble: as an unknown field (dropped, with a warning or a strict
/// error) and where a string is expected (400).
#[test]
fn nesting_under_the_parser_limit_is_handled() {
    let r = resource("", "v1", "configmaps");
    let nested = format!("{}{}", "[".repeat(120), "]".repeat(120));
    let unknown = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\"}},\"extra\":{nested}}}"
    );
    let body = decode_body(unknown.as_bytes(), ContentType::Json, None).unwrap();
    let e = create(&r, body.clone(), FieldValidation::Strict).unwrap_err();
    assert_error(&e, &[400], "strict unknown field");
    assert!(
        e.message.contains("unknown field \"extra\""),
        "{}",
        e.message
    );
    let ok = create(&r, body, FieldValidation::Warn).unwrap();
    assert!(ok.get("extra").is_none(), "{ok}");

    let wrong_type = format!(
        "{{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{{\"name\":\"deep\",\"labels\":{nested}}}}}"
    );
    let body = decode_body(wrong_type.as_bytes(), ContentType::Json, None).unwrap();
    let e = create(&r, body, FieldValidation::Strict).unwrap_err();
    assert_error(&e, &[400], "labels as a nested list");
}

/// Known fields of the wrong type are 400s (upstream: "... cannot be handled as a ...");
/// values of the right type that break the rules are 422s with causes.
#[test]
fn wrong_types_and_invalid_values() {
    let r = resource("", "v1", "configmaps");
    let bad_request = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": 7}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": ["a"]}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": 1}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": "x"}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": ["a"]}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": {"b": "c"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "binaryData": {"a": "not base64!"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "immutable": "yes"}),
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "x"}}),
        json!({"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}}),
        json!({"kind": "ConfigMap", "metadata": {"name": "x"}}),
        json!({"apiVersion": "v1", "metadata": {"name": "x"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "namespace": "other"}}),
        json!([]),
        json!("ConfigMap"),
        json!(null),
    ];
    for body in bad_request {
        let e = create(&r, body.clone(), FieldValidation::Strict).unwrap_err();
        assert_error(&e, &[400], &body.to_string());
    }
    let invalid = [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "UPPER"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a..b"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x".repeat(254)}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": ""}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "UPPER-"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a b": "c"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x", "labels": {"a": "-c"}}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a/b": "c"}}),
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x"}, "data": {"a": "1"}, "binaryData": {"a": "MQ=="}}),
    ];
    for body in invalid {
        let e = create(&r, body.clone(), FieldValidation::Strict).unwrap_err();
        assert_error(&e, &[422], &body.to_string());
    }
}

/// Every captured protobuf body (kubectl 1.33's) decodes through `decode_body` as through
/// `kubeproto`, and every truncation of it is a value or a 400.
#[test]
fn captured_protobuf_bodies() {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(
            || std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
            std::path::PathBuf::from,
        )
        .join("../kubeproto/tests/testdata");
    let mut seen = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "pb") {
            continue;
        }
        let body = std::fs::read(&path).unwrap();
        let expected: Value =
            serde_json::from_slice(&std::fs::read(path.with_extension("json")).unwrap()).unwrap();
        let api_version = expected["apiVersion"].as_str().unwrap().to_string();
        let kind = expected["kind"].as_str().unwrap().to_string();
        let got = decode_body(&body, ContentType::Protobuf, Some((&api_version, &kind))).unwrap();
        assert_eq!(got, expected, "{}", path.display());
        for n in 0..body.len() {
            if let Err(e) = decode_body(
                &body[..n],
                ContentType::Protobuf,
                Some((&api_version, &kind)),
            ) {
                assert_error(&e, &[400], &format!("{} cut at {n}", path.display()));
            }
        }
        seen.insert(kind);
    }
    assert!(seen.len() >= 5, "fixtures: {seen:?}");
}

/// Go's `encoding/json` parses every float exactly (`strconv.ParseFloat`); serde_json does
/// only with its `float_roundtrip` feature, so without it a number field of a custom
/// resource (or a CRD's `minimum`) can change in its last digit on the way in.
#[test]
fn json_floats_round_trip() {
    for f in [
        189_410_102_422.992_34_f64,
        0.1 + 0.2,
        1.0 / 3.0,
        2.2250738585072014e-308,
        1e300 / 7.0,
    ] {
        let body =
            serde_json::to_vec(&json!({"apiVersion": "v1", "kind": "ConfigMap", "x": f})).unwrap();
        let v = decode_body(&body, ContentType::Json, None).unwrap();
        assert_eq!(
            v["x"].as_f64(),
            Some(f),
            "{}",
            String::from_utf8_lossy(&body)
        );
    }
}
