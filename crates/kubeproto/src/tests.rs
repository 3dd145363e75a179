//! Unit tests on hand-built protobuf: the special types, Go's omitempty and pointer rules,
//! the envelope, and the table against the OpenAPI schemas of the built-in types.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::generated::{KINDS, MESSAGES, META_KINDS};
use crate::table::{INLINE, Label, NO_JSON, Special, Ty};
use crate::wire::{FIXED64, LEN, VARINT, put_bytes, put_key, put_varint};
use crate::{Error, decode, decode_with_defaults, envelope, is_envelope, supports};

/// A protobuf message under construction.
#[derive(Default, Clone)]
struct Pb(Vec<u8>);

impl Pb {
    fn new() -> Pb {
        Pb::default()
    }
    fn int(mut self, n: u32, v: i64) -> Pb {
        put_key(&mut self.0, n, VARINT);
        put_varint(&mut self.0, v as u64);
        self
    }
    fn str(mut self, n: u32, s: &str) -> Pb {
        put_bytes(&mut self.0, n, s.as_bytes());
        self
    }
    fn bytes(mut self, n: u32, b: &[u8]) -> Pb {
        put_bytes(&mut self.0, n, b);
        self
    }
    fn msg(self, n: u32, m: Pb) -> Pb {
        self.bytes(n, &m.0)
    }
    fn double(mut self, n: u32, d: f64) -> Pb {
        put_key(&mut self.0, n, FIXED64);
        self.0.extend_from_slice(&d.to_le_bytes());
        self
    }
    fn entry(self, n: u32, k: &str, v: Pb) -> Pb {
        self.msg(n, Pb::new().str(1, k).msg(2, v))
    }
    fn entry_str(self, n: u32, k: &str, v: &str) -> Pb {
        self.msg(n, Pb::new().str(1, k).str(2, v))
    }
}

fn body(api_version: &str, kind: &str, raw: &Pb) -> Vec<u8> {
    let mut out = b"k8s\x00".to_vec();
    let tm = Pb::new().str(1, api_version).str(2, kind);
    put_bytes(&mut out, 1, &tm.0);
    put_bytes(&mut out, 2, &raw.0);
    put_bytes(&mut out, 4, b"application/vnd.kubernetes.protobuf");
    out
}

fn dec(api_version: &str, kind: &str, raw: Pb) -> Value {
    decode(&body(api_version, kind, &raw)).unwrap()
}

fn meta(name: &str) -> Pb {
    // As gogo writes ObjectMeta: non-pointer scalars always, creationTimestamp as an empty
    // Time.
    Pb::new()
        .str(1, name)
        .str(2, "")
        .str(3, "")
        .str(5, "")
        .int(7, 0)
        .msg(8, Pb::new())
        .str(15, "")
}

#[test]
fn envelope_errors() {
    assert_eq!(decode(b""), Err(Error::Empty));
    assert_eq!(decode(b"k8s\x00"), Err(Error::Empty));
    assert_eq!(decode(b"{\"kind\":\"Pod\"}"), Err(Error::NotProtobuf));
    assert!(!is_envelope(b"{}"));
    assert!(is_envelope(b"k8s\x00\x0a"));
    let no_kind = body("v1", "", &Pb::new());
    assert!(matches!(decode(&no_kind), Err(Error::MissingKind { .. })));
    let no_version = body("", "Pod", &Pb::new());
    assert!(matches!(
        decode(&no_version),
        Err(Error::MissingVersion { .. })
    ));
    let unknown = body("example.com/v1", "Widget", &Pb::new());
    let err = decode(&unknown).unwrap_err();
    assert!(err.is_unsupported_kind());
    assert_eq!(
        err.to_string(),
        "protobuf is not supported for kind \"Widget\" in version \"example.com/v1\"; send JSON or YAML"
    );
    // Defaults from the URL fill in what the envelope leaves out.
    let v = decode_with_defaults(&no_version, "v1", "Pod").unwrap();
    assert_eq!(v["apiVersion"], "v1");
    let v = decode_with_defaults(&body("apps/", "", &Pb::new()), "apps/v1", "Deployment").unwrap();
    assert_eq!(
        (&v["apiVersion"], &v["kind"]),
        (&json!("apps/v1"), &json!("Deployment"))
    );
    let b = body("v1", "Pod", &Pb::new().str(1, "x"));
    let env = envelope(&b).unwrap();
    assert_eq!(env.content_type, "application/vnd.kubernetes.protobuf");
    assert_eq!(env.raw, Pb::new().str(1, "x").0.as_slice());
}

#[test]
fn kinds_cover_the_catalog_and_the_extra_groups() {
    for r in api::catalog::builtin() {
        let av = r.api_version();
        // The seeds' InitializerConfiguration has no protobuf form (clients send JSON).
        if r.kind == "InitializerConfiguration" {
            continue;
        }
        assert!(supports(&av, &r.kind), "{av} {}", r.kind);
        if r.has_verb("list") {
            assert!(supports(&av, &r.list_kind()), "{av} {}", r.list_kind());
        }
        // Connect subresources (`pods/exec`, …) take no body.
        for s in r.subresources.iter().filter(|s| !s.is_connect()) {
            let sav = if s.group.is_empty() {
                s.version.clone()
            } else {
                format!("{}/{}", s.group, s.version)
            };
            assert!(supports(&sav, &s.kind), "{sav} {}", s.kind);
        }
    }
    for (av, kind) in [
        ("authorization.k8s.io/v1", "SubjectAccessReview"),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
        ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("authentication.k8s.io/v1", "TokenReview"),
        ("authentication.k8s.io/v1", "SelfSubjectReview"),
        ("certificates.k8s.io/v1", "CertificateSigningRequest"),
        ("certificates.k8s.io/v1", "CertificateSigningRequestList"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfigurationList",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        ),
        ("networking.k8s.io/v1", "Ingress"),
        ("networking.k8s.io/v1", "NetworkPolicyList"),
        ("networking.k8s.io/v1", "IngressClass"),
        ("storage.k8s.io/v1", "StorageClass"),
        ("storage.k8s.io/v1", "CSIDriver"),
        ("policy/v1", "Eviction"),
        ("autoscaling/v1", "Scale"),
        ("meta.k8s.io/v1", "DeleteOptions"),
        ("apps/v1", "DeleteOptions"),
        ("v1", "Status"),
    ] {
        assert!(supports(av, kind), "{av} {kind}");
    }
    for (kind_list, sorted) in [(
        KINDS
            .windows(2)
            .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1)),
        META_KINDS.windows(2).all(|w| w[0].0 < w[1].0),
    )]
    .iter()
    .map(|(a, b)| (*a, *b))
    {
        assert!(kind_list && sorted, "kind tables must be sorted");
    }
}

/// The definition name in the OpenAPI documents of a protobuf message.
fn definition_name(message: &str) -> String {
    let rest = message.trim_start_matches("k8s.io.");
    format!(
        "io.k8s.{}",
        rest.replace("apiextensions_apiserver", "apiextensions-apiserver")
    )
}

/// The JSON names a message writes, inlined structs expanded.
fn json_names(idx: u16, out: &mut BTreeSet<String>) {
    let m = &MESSAGES[usize::from(idx)];
    for f in m.fields {
        if f.has(NO_JSON) {
            continue;
        }
        if f.has(INLINE) {
            if let Ty::Message(i) = f.ty() {
                json_names(i, out);
            }
        } else {
            out.insert(f.json().to_string());
        }
    }
}

/// Fields of the table (Kubernetes 1.35) that the built-in schemas (1.33) do not have yet.
const NEWER_FIELDS: &[(&str, &str)] = &[
    ("k8s.io.api.core.v1.Container", "restartPolicyRules"),
    (
        "k8s.io.api.core.v1.EphemeralContainer",
        "restartPolicyRules",
    ),
    ("k8s.io.api.core.v1.EnvVarSource", "fileKeyRef"),
    ("k8s.io.api.core.v1.NodeStatus", "declaredFeatures"),
    ("k8s.io.api.core.v1.PodSpec", "hostnameOverride"),
    ("k8s.io.api.core.v1.PodSpec", "workloadRef"),
    ("k8s.io.api.core.v1.PodStatus", "allocatedResources"),
    (
        "k8s.io.api.core.v1.PodStatus",
        "extendedResourceClaimStatus",
    ),
    ("k8s.io.api.core.v1.PodStatus", "resources"),
    ("k8s.io.api.core.v1.VolumeProjection", "podCertificate"),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition",
        "observedGeneration",
    ),
    (
        "k8s.io.apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        "observedGeneration",
    ),
];

#[test]
fn json_names_match_the_openapi_schemas() {
    let schemas = api::schema::builtin();
    let mut checked = 0;
    let mut problems = Vec::new();
    for (i, m) in MESSAGES.iter().enumerate() {
        if m.special != Special::None {
            continue;
        }
        let Some(def) = schemas.get(&definition_name(m.name)) else {
            continue;
        };
        let Some(props) = def.get("properties").and_then(Value::as_object) else {
            continue;
        };
        let mut names = BTreeSet::new();
        json_names(i as u16, &mut names);
        // Kinds' apiVersion and kind come from the envelope, not the message.
        let expected: BTreeSet<String> = props
            .keys()
            .filter(|k| names.contains(*k) || (*k != "apiVersion" && *k != "kind"))
            // The seeds' `metadata.initializers` (upstream's 1.7–1.13 alpha) is served in
            // JSON only: kubectl 1.27+ never sends it in protobuf.
            .filter(|k| {
                !(m.name == "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
                    && *k == "initializers")
            })
            .cloned()
            .collect();
        // Fields newer than the Kubernetes version of the schemas (k8s-openapi's v1_33).
        for newer in NEWER_FIELDS.iter().filter(|(m, _)| *m == MESSAGES[i].name) {
            names.remove(newer.1);
        }
        if names != expected {
            problems.push(format!(
                "{}: table {:?} schema {:?}",
                m.name,
                names.difference(&expected).collect::<Vec<_>>(),
                expected.difference(&names).collect::<Vec<_>>()
            ));
        }
        checked += 1;
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    assert!(checked > 300, "only {checked} definitions checked");
}

#[test]
fn table_is_consistent() {
    for (i, m) in MESSAGES.iter().enumerate() {
        assert!(
            m.fields.windows(2).all(|w| w[0].tag() < w[1].tag()),
            "{}: fields not sorted",
            m.name
        );
        for f in m.fields {
            if let Ty::Message(t) = f.ty() {
                assert!(usize::from(t) < MESSAGES.len(), "{}", m.name);
            }
            if f.has(INLINE) {
                assert!(
                    matches!(f.ty(), Ty::Message(_)) && f.label() == Label::Single,
                    "{}",
                    m.name
                );
            }
        }
        if m.special == Special::List {
            assert_eq!(m.fields.len(), 1, "{}", m.name);
        }
        let _ = i;
    }
}

#[test]
fn omitempty_and_pointers() {
    // DeploymentSpec: replicas is *int32 (a present 0 is kept), minReadySeconds is int32
    // with omitempty (a present 0 is dropped), strategy a struct (always written).
    let container = Pb::new()
        .str(1, "c")
        .str(2, "img")
        .msg(8, Pb::new())
        .str(13, "")
        .str(14, "");
    let template = Pb::new().msg(2, Pb::new().msg(2, container));
    let spec = Pb::new()
        .int(1, 0)
        .int(5, 0)
        .msg(3, template)
        .msg(4, Pb::new());
    let v = dec(
        "apps/v1",
        "Deployment",
        Pb::new().msg(1, meta("d")).msg(2, spec),
    );
    assert_eq!(
        v,
        json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "creationTimestamp": null},
            "spec": {
                "replicas": 0,
                "selector": null,
                "strategy": {},
                "template": {
                    "metadata": {"creationTimestamp": null},
                    "spec": {"containers": [{"name": "c", "image": "img", "resources": {}}]}
                }
            },
            "status": {}
        })
    );
}

#[test]
fn delete_options_keep_a_zero_grace_period() {
    let v = dec(
        "meta.k8s.io/v1",
        "DeleteOptions",
        Pb::new()
            .int(1, 0)
            .str(4, "Foreground")
            .str(5, "All")
            .msg(2, Pb::new().str(1, "uid-1")),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
            "propagationPolicy": "Foreground", "dryRun": ["All"], "preconditions": {"uid": "uid-1"}})
    );
    // Typed clients of other groups name their own group version.
    let v = dec("apps/v1", "DeleteOptions", Pb::new().int(3, 0));
    assert_eq!(
        v,
        json!({"apiVersion": "apps/v1", "kind": "DeleteOptions", "orphanDependents": false})
    );
}

#[test]
fn eviction() {
    let v = dec(
        "policy/v1",
        "Eviction",
        Pb::new()
            .msg(1, Pb::new().str(1, "p").str(3, "ns"))
            .msg(2, Pb::new().int(1, 30)),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "policy/v1", "kind": "Eviction",
            "metadata": {"name": "p", "namespace": "ns", "creationTimestamp": null},
            "deleteOptions": {"gracePeriodSeconds": 30}})
    );
}

#[test]
fn times_durations_quantities_int_or_string() {
    // Lease: MicroTime acquireTime, int32 pointers; Time in ObjectMeta.deletionTimestamp.
    let v = dec(
        "coordination.k8s.io/v1",
        "Lease",
        Pb::new()
            .msg(
                1,
                Pb::new()
                    .str(1, "l")
                    .msg(8, Pb::new().int(1, 1_700_000_000).int(2, 999))
                    .msg(9, Pb::new()),
            )
            .msg(
                2,
                Pb::new()
                    .str(1, "me")
                    .int(2, 15)
                    .msg(3, Pb::new().int(1, 1_700_000_000).int(2, 123_456_789))
                    .msg(4, Pb::new()),
            ),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "l", "creationTimestamp": "2023-11-14T22:13:20Z", "deletionTimestamp": null},
            "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15,
                "acquireTime": "2023-11-14T22:13:20.123456Z", "renewTime": null}})
    );
    // ResourceQuota hard: map<string, Quantity>; a Quantity with no string is "0".
    let v = dec(
        "v1",
        "ResourceQuota",
        Pb::new().msg(
            2,
            Pb::new()
                .entry(1, "cpu", Pb::new().str(1, "500m"))
                .entry(1, "pods", Pb::new()),
        ),
    );
    assert_eq!(v["spec"], json!({"hard": {"cpu": "500m", "pods": "0"}}));
    let bad = body(
        "v1",
        "ResourceQuota",
        &Pb::new().msg(2, Pb::new().entry(1, "cpu", Pb::new().str(1, "lots"))),
    );
    let err = decode(&bad).unwrap_err();
    assert!(
        matches!(&err, Error::Unrepresentable { path, .. } if path == "spec.hard[cpu]"),
        "{err}"
    );
    // Service ports: IntOrString as a number and as a string.
    let v = dec(
        "v1",
        "Service",
        Pb::new().msg(
            2,
            Pb::new()
                .msg(
                    1,
                    Pb::new()
                        .str(1, "a")
                        .int(3, 80)
                        .msg(4, Pb::new().int(1, 0).int(2, 8080)),
                )
                .msg(
                    1,
                    Pb::new()
                        .str(1, "b")
                        .int(3, 443)
                        .msg(4, Pb::new().int(1, 1).str(3, "https")),
                ),
        ),
    );
    assert_eq!(
        v["spec"]["ports"],
        json!([{"name": "a", "port": 80, "targetPort": 8080}, {"name": "b", "port": 443, "targetPort": "https"}])
    );
    let bad = body(
        "v1",
        "Service",
        &Pb::new().msg(2, Pb::new().msg(1, Pb::new().msg(4, Pb::new().int(1, 7)))),
    );
    assert!(matches!(decode(&bad), Err(Error::Unrepresentable { .. })));
    // FlowSchema? No Duration there; TokenRequest has expirationSeconds; a meta Duration
    // appears nowhere in the covered kinds' JSON, so it is checked directly in time.rs.
}

#[test]
fn bytes_maps_and_lists() {
    let v = dec(
        "v1",
        "Secret",
        Pb::new()
            .msg(1, meta("s"))
            .msg(2, Pb::new().str(1, "k").bytes(2, &[0xff, 0x00, 0x01]))
            .msg(2, Pb::new().str(1, "empty").bytes(2, b""))
            .str(3, "Opaque")
            .entry_str(4, "plain", "text"),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "s", "creationTimestamp": null},
            "data": {"k": "/wAB", "empty": ""}, "type": "Opaque", "stringData": {"plain": "text"}})
    );
    // SubjectAccessReview extra: map<string, ExtraValue>, ExtraValue a wrapped []string.
    let v = dec(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        Pb::new()
            .msg(1, meta(""))
            .msg(
                2,
                Pb::new()
                    .str(3, "alice")
                    .str(4, "g1")
                    .str(4, "g2")
                    .entry(5, "scopes", Pb::new().str(1, "a").str(1, "b"))
                    .entry(5, "none", Pb::new())
                    .msg(1, Pb::new().str(2, "get").str(3, "").str(5, "pods")),
            )
            .msg(3, Pb::new().int(1, 0)),
    );
    assert_eq!(
        v,
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "metadata": {"creationTimestamp": null},
            "spec": {"user": "alice", "groups": ["g1", "g2"],
                "extra": {"scopes": ["a", "b"], "none": null},
                "resourceAttributes": {"verb": "get", "resource": "pods"}},
            "status": {"allowed": false}})
    );
}

#[test]
fn inlined_structs() {
    // Volume inlines VolumeSource; Probe inlines ProbeHandler.
    let pod_spec = Pb::new()
        .msg(
            1,
            Pb::new()
                .str(1, "v")
                .msg(2, Pb::new().msg(2, Pb::new().str(1, "Memory"))),
        )
        .msg(
            2,
            Pb::new().str(1, "c").msg(
                10,
                Pb::new()
                    .msg(
                        1,
                        Pb::new().msg(
                            2,
                            Pb::new()
                                .str(1, "/healthz")
                                .msg(2, Pb::new().int(1, 1).str(3, "http")),
                        ),
                    )
                    .int(2, 5),
            ),
        );
    let v = dec("v1", "Pod", Pb::new().msg(2, pod_spec));
    assert_eq!(
        v["spec"]["volumes"],
        json!([{"name": "v", "emptyDir": {"medium": "Memory"}}])
    );
    assert_eq!(
        v["spec"]["containers"][0]["livenessProbe"],
        json!({"httpGet": {"path": "/healthz", "port": "http"}, "initialDelaySeconds": 5})
    );
}

#[test]
fn crds_embed_json_and_schema_unions() {
    let props = Pb::new()
        .str(5, "object")
        .entry(
            29,
            "replicas",
            Pb::new().str(5, "integer").double(9, 10.0).double(11, 0.5),
        )
        .entry(
            29,
            "tags",
            Pb::new()
                .str(5, "array")
                .msg(24, Pb::new().msg(1, Pb::new().str(5, "string"))),
        )
        .entry(
            29,
            "any",
            Pb::new()
                .msg(8, Pb::new().bytes(1, br#"{"a": [1, true]}"#))
                .int(38, 1),
        )
        .msg(30, Pb::new().int(1, 0))
        .msg(20, Pb::new().bytes(1, b"\"x\""))
        .entry(32, "dep", Pb::new().str(2, "a").str(2, "b"));
    let crd_version = Pb::new()
        .str(1, "v1")
        .int(2, 1)
        .int(3, 1)
        .msg(4, Pb::new().msg(1, props));
    let spec = Pb::new()
        .str(1, "example.com")
        .msg(3, Pb::new().str(1, "widgets").str(4, "Widget"))
        .str(4, "Namespaced")
        .msg(7, crd_version);
    let v = dec(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        Pb::new().msg(1, meta("widgets.example.com")).msg(2, spec),
    );
    assert_eq!(
        v["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        json!({
            "type": "object",
            "properties": {
                "replicas": {"type": "integer", "maximum": 10, "minimum": 0.5},
                "tags": {"type": "array", "items": {"type": "string"}},
                "any": {"default": {"a": [1, true]}, "x-kubernetes-preserve-unknown-fields": true}
            },
            "additionalProperties": false,
            "enum": ["x"],
            "dependencies": {"dep": ["a", "b"]}
        })
    );
    assert_eq!(v["spec"]["versions"][0]["served"], true);
    let bad = body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &Pb::new().msg(
            2,
            Pb::new().msg(
                7,
                Pb::new().msg(
                    4,
                    Pb::new().msg(1, Pb::new().msg(8, Pb::new().bytes(1, b"{nope"))),
                ),
            ),
        ),
    );
    let err = decode(&bad).unwrap_err();
    assert!(
        matches!(&err, Error::Unrepresentable { path, .. } if path == "spec.versions[0].schema.openAPIV3Schema.default"),
        "{err}"
    );
}

#[test]
fn merging_unknown_fields_and_last_wins() {
    // Two occurrences of metadata merge; a repeated scalar takes the last; unknown fields
    // (any wire type) are skipped.
    let mut raw = Pb::new()
        .msg(1, Pb::new().str(1, "first").entry_str(11, "a", "1"))
        .msg(1, Pb::new().str(1, "second").entry_str(11, "b", "2"))
        .int(999, 5)
        .str(998, "x");
    put_key(&mut raw.0, 997, crate::wire::FIXED32);
    raw.0.extend_from_slice(&[1, 2, 3, 4]);
    let v = dec("v1", "ConfigMap", raw);
    assert_eq!(v["metadata"]["name"], "second");
    assert_eq!(v["metadata"]["labels"], json!({"a": "1", "b": "2"}));
}

#[test]
fn malformed_input_is_an_error() {
    // Wrong wire type for a known field.
    let bad = body("v1", "ConfigMap", &Pb::new().int(1, 3));
    let err = decode(&bad).unwrap_err();
    assert!(
        matches!(&err, Error::Malformed { path, .. } if path == "metadata"),
        "{err}"
    );
    // A length running past the end.
    let mut raw = Pb::new();
    put_key(&mut raw.0, 1, LEN);
    put_varint(&mut raw.0, 1 << 40);
    assert!(matches!(
        decode(&body("v1", "ConfigMap", &raw)),
        Err(Error::Malformed { .. })
    ));
    // Truncated everywhere.
    let good = body(
        "v1",
        "ConfigMap",
        &Pb::new().msg(1, meta("cm")).entry_str(2, "k", "v"),
    );
    assert!(decode(&good).is_ok());
    for n in 0..good.len() {
        let _ = decode(&good[..n]);
    }
    // Invalid UTF-8 becomes U+FFFD, as Go's encoding/json writes it.
    let v = dec(
        "v1",
        "ConfigMap",
        Pb::new().bytes(2, &Pb::new().str(1, "k").bytes(2, &[b'a', 0xff]).0),
    );
    assert_eq!(v["data"]["k"], "a\u{fffd}");
}

#[test]
fn deep_nesting_is_refused() {
    // JSONSchemaProps.not nests without bound.
    let mut schema = Pb::new().str(5, "string");
    for _ in 0..200 {
        schema = Pb::new().msg(28, schema);
    }
    let raw = Pb::new().msg(
        2,
        Pb::new().msg(7, Pb::new().msg(4, Pb::new().msg(1, schema))),
    );
    assert_eq!(
        decode(&body(
            "apiextensions.k8s.io/v1",
            "CustomResourceDefinition",
            &raw
        )),
        Err(Error::TooDeep(crate::MAX_DEPTH))
    );
}

#[test]
fn output_is_bounded() {
    // Empty PodList items each expand to a zero Pod; the budget caps the expansion.
    let mut raw = Vec::new();
    for _ in 0..200_000 {
        put_bytes(&mut raw, 2, b"");
    }
    match decode(&body("v1", "PodList", &Pb(raw))) {
        Ok(v) => assert_eq!(v["items"].as_array().map(Vec::len), Some(200_000)),
        Err(e) => assert_eq!(e, Error::TooLarge),
    }
}
