//! Table-driven validation tests per kind. Expected messages follow upstream's
//! `validation_test.go` cases and what the upstream API server answers (written in our
//! own data).

#![allow(clippy::panic, clippy::expect_used, clippy::unwrap_used)]

mod kinds_common;

use kinds_common::*;
use serde_json::{Value, json};

const APPS: &str = "apps";
const BATCH: &str = "batch";
const RBAC: &str = "rbac.authorization.k8s.io";

type Edits = &'static [(&'static str, Option<&'static str>)];

/// One case: edits on the kind's valid base object (JSON text values; `None` deletes)
/// and the messages expected (`~` prefix: a fragment contained in some message).
struct Case {
    name: &'static str,
    edits: Edits,
    expect: &'static [&'static str],
}

fn run_cases(group: &str, kind: &str, base: &Value, cases: &[Case]) {
    let ok = create_errors(group, kind, base);
    assert!(ok.is_empty(), "{kind} base object is invalid: {ok:?}");
    for c in cases {
        let edits: Vec<(&str, Option<Value>)> = c
            .edits
            .iter()
            .map(|(p, v)| {
                let v = v.map(|t| serde_json::from_str(t).unwrap_or_else(|e| panic!("{t}: {e}")));
                (*p, v)
            })
            .collect();
        let obj = edit(base, &edits);
        let errs = create_errors(group, kind, &obj);
        if c.expect.is_empty() {
            assert!(
                errs.is_empty(),
                "{kind}/{}: unexpected errors {errs:?}",
                c.name
            );
        }
        for e in c.expect {
            match e.strip_prefix('~') {
                Some(fragment) => {
                    assert!(
                        errs.iter().any(|m| m.contains(fragment)),
                        "{kind}/{}: no error containing\n  {fragment}\namong\n  {}",
                        c.name,
                        errs.join("\n  ")
                    );
                }
                None => assert!(
                    errs.iter().any(|m| m == e),
                    "{kind}/{}: expected\n  {e}\namong\n  {}",
                    c.name,
                    errs.join("\n  ")
                ),
            }
        }
    }
}

fn pod_spec() -> Value {
    json!({"containers": [{"name": "c", "image": "nginx"}]})
}

fn deployment() -> Value {
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": pod_spec()}
        }
    })
}

const DNS_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";

#[test]
fn deployment_create() {
    run_cases(
        APPS,
        "Deployment",
        &deployment(),
        &[
            Case {
                name: "selector required",
                edits: &[("spec/selector", None)],
                expect: &["spec.selector: Required value"],
            },
            Case {
                name: "empty selector",
                edits: &[("spec/selector", Some("{}"))],
                expect: &[
                    "~spec.selector: Invalid value: ",
                    "~empty selector is invalid for deployment",
                ],
            },
            Case {
                name: "selector does not match",
                edits: &[("spec/template/metadata/labels", Some(r#"{"app":"other"}"#))],
                expect: &[
                    "~spec.template.metadata.labels: Invalid value: ",
                    "~`selector` does not match template `labels`",
                ],
            },
            Case {
                name: "negative replicas",
                edits: &[("spec/replicas", Some("-1"))],
                expect: &["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
            },
            Case {
                name: "restartPolicy Never",
                edits: &[("spec/template/spec/restartPolicy", Some(r#""Never""#))],
                expect: &[
                    r#"spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#,
                ],
            },
            Case {
                name: "strategy type",
                edits: &[("spec/strategy", Some(r#"{"type":"Bogus"}"#))],
                // Upstream reports the whole strategy at `spec.strategy`.
                expect: &[
                    r#"spec.strategy: Unsupported value: {"type":"Bogus"}: supported values: "Recreate", "RollingUpdate""#,
                ],
            },
            Case {
                name: "recreate with rollingUpdate",
                edits: &[(
                    "spec/strategy",
                    Some(r#"{"type":"Recreate","rollingUpdate":{"maxSurge":1}}"#),
                )],
                expect: &[
                    "spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'",
                ],
            },
            Case {
                name: "both zero",
                edits: &[(
                    "spec/strategy/rollingUpdate",
                    Some(r#"{"maxSurge":0,"maxUnavailable":0}"#),
                )],
                expect: &[
                    "spec.strategy.rollingUpdate.maxUnavailable: Invalid value: 0: may not be 0 when `maxSurge` is 0",
                ],
            },
            Case {
                name: "both zero percent",
                edits: &[(
                    "spec/strategy/rollingUpdate",
                    Some(r#"{"maxSurge":"0%","maxUnavailable":"0%"}"#),
                )],
                expect: &[
                    r#"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "0%": may not be 0 when `maxSurge` is 0"#,
                ],
            },
            Case {
                name: "maxUnavailable above 100%",
                edits: &[(
                    "spec/strategy/rollingUpdate",
                    Some(r#"{"maxUnavailable":"110%"}"#),
                )],
                expect: &[
                    r#"spec.strategy.rollingUpdate.maxUnavailable: Invalid value: "110%": must not be greater than 100%"#,
                ],
            },
            Case {
                name: "bad percent",
                edits: &[("spec/strategy/rollingUpdate", Some(r#"{"maxSurge":"abc"}"#))],
                expect: &[
                    r#"spec.strategy.rollingUpdate.maxSurge: Invalid value: "abc": a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used for validation is '[0-9]+%')"#,
                ],
            },
            Case {
                name: "negative maxSurge",
                edits: &[("spec/strategy/rollingUpdate", Some(r#"{"maxSurge":-1}"#))],
                expect: &[
                    "spec.strategy.rollingUpdate.maxSurge: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "negative revisionHistoryLimit",
                edits: &[("spec/revisionHistoryLimit", Some("-2"))],
                expect: &[
                    "spec.revisionHistoryLimit: Invalid value: -2: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "progressDeadline not above minReadySeconds",
                edits: &[
                    ("spec/progressDeadlineSeconds", Some("5")),
                    ("spec/minReadySeconds", Some("5")),
                ],
                expect: &[
                    "spec.progressDeadlineSeconds: Invalid value: 5: must be greater than minReadySeconds",
                ],
            },
            Case {
                name: "container errors carry the template path",
                edits: &[("spec/template/spec/containers/0/image", None)],
                expect: &["spec.template.spec.containers[0].image: Required value"],
            },
            Case {
                name: "ok with explicit strategy",
                edits: &[
                    (
                        "spec/strategy",
                        Some(
                            r#"{"type":"RollingUpdate","rollingUpdate":{"maxSurge":"50%","maxUnavailable":0}}"#,
                        ),
                    ),
                    ("spec/replicas", Some("0")),
                ],
                expect: &[],
            },
        ],
    );
}

#[test]
fn deployment_selector_is_immutable() {
    let old = deployment();
    let new = edit(
        &old,
        &[
            ("spec/selector/matchLabels/tier", Some(json!("x"))),
            ("spec/template/metadata/labels/tier", Some(json!("x"))),
        ],
    );
    let errs = update_errors(APPS, "Deployment", &new, &old);
    assert_contains(&errs, "spec.selector: Invalid value: ");
    assert_contains(&errs, ": field is immutable");
    // Scaling is fine.
    let scaled = edit(&old, &[("spec/replicas", Some(json!(5)))]);
    assert!(update_errors(APPS, "Deployment", &scaled, &old).is_empty());
}

#[test]
fn replica_set_daemon_set_stateful_set() {
    let rs = json!({
        "metadata": {"name": "rs", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec()}}
    });
    run_cases(
        APPS,
        "ReplicaSet",
        &rs,
        &[
            Case {
                name: "mismatch",
                edits: &[("spec/template/metadata/labels", Some(r#"{"a":"c"}"#))],
                expect: &["~`selector` does not match template `labels`"],
            },
            Case {
                name: "negative replicas",
                edits: &[("spec/replicas", Some("-3"))],
                expect: &["spec.replicas: Invalid value: -3: must be greater than or equal to 0"],
            },
            Case {
                name: "empty selector",
                edits: &[("spec/selector", Some("{}"))],
                expect: &["~empty selector is invalid for deployment"],
            },
        ],
    );

    let ds = json!({
        "metadata": {"name": "ds", "namespace": "default"},
        "spec": {"selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec()}}
    });
    run_cases(
        APPS,
        "DaemonSet",
        &ds,
        &[
            Case {
                // Upstream has no Required check for DaemonSets: a nil selector
                // matches nothing.
                name: "selector missing",
                edits: &[("spec/selector", None)],
                expect: &[
                    r#"spec.template.metadata.labels: Invalid value: {"a":"b"}: `selector` does not match template `labels`"#,
                ],
            },
            Case {
                name: "empty selector",
                edits: &[("spec/selector", Some("{}"))],
                expect: &[
                    "spec.selector: Invalid value: {}: empty selector is invalid for daemonset",
                ],
            },
            Case {
                name: "mismatch",
                edits: &[("spec/template/metadata/labels", Some(r#"{"a":"c"}"#))],
                expect: &["~`selector` does not match template `labels`"],
            },
            Case {
                name: "restartPolicy",
                edits: &[("spec/template/spec/restartPolicy", Some(r#""OnFailure""#))],
                expect: &[
                    r#"spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always""#,
                ],
            },
            Case {
                name: "update strategy type",
                edits: &[("spec/updateStrategy", Some(r#"{"type":"Sometimes"}"#))],
                // Upstream reports the whole strategy at `spec.updateStrategy`.
                expect: &[
                    r#"spec.updateStrategy: Unsupported value: {"type":"Sometimes"}: supported values: "RollingUpdate", "OnDelete""#,
                ],
            },
            Case {
                name: "both zero",
                edits: &[(
                    "spec/updateStrategy",
                    Some(
                        r#"{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0,"maxSurge":0}}"#,
                    ),
                )],
                expect: &[
                    "spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0",
                ],
            },
            Case {
                name: "both set",
                edits: &[(
                    "spec/updateStrategy",
                    Some(
                        r#"{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":1,"maxSurge":"10%"}}"#,
                    ),
                )],
                expect: &[
                    r#"spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: "10%": may not be set when maxUnavailable is non-zero"#,
                ],
            },
        ],
    );
    let new = edit(
        &ds,
        &[
            ("spec/selector/matchLabels", Some(json!({"a": "c"}))),
            ("spec/template/metadata/labels", Some(json!({"a": "c"}))),
        ],
    );
    assert_contains(
        &update_errors(APPS, "DaemonSet", &new, &ds),
        "field is immutable",
    );

    let sts = json!({
        "metadata": {"name": "db", "namespace": "default"},
        "spec": {"serviceName": "db", "selector": {"matchLabels": {"a": "b"}}, "template": {"metadata": {"labels": {"a": "b"}}, "spec": pod_spec()}}
    });
    run_cases(
        APPS,
        "StatefulSet",
        &sts,
        &[
            Case {
                name: "pod management policy",
                edits: &[("spec/podManagementPolicy", Some(r#""Random""#))],
                expect: &[
                    r#"spec.podManagementPolicy: Invalid value: "Random": must be 'OrderedReady' or 'Parallel'"#,
                ],
            },
            Case {
                name: "mismatch",
                edits: &[("spec/template/metadata/labels", Some(r#"{"a":"c"}"#))],
                expect: &["~`selector` does not match template `labels`"],
            },
            Case {
                name: "negative replicas",
                edits: &[("spec/replicas", Some("-1"))],
                expect: &["spec.replicas: Invalid value: -1: must be greater than or equal to 0"],
            },
        ],
    );
    let new = edit(&sts, &[("spec/serviceName", Some(json!("other")))]);
    assert_has(
        &update_errors(APPS, "StatefulSet", &new, &sts),
        "spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
    );
    let scaled = edit(&sts, &[("spec/replicas", Some(json!(3)))]);
    assert!(update_errors(APPS, "StatefulSet", &scaled, &sts).is_empty());
}

fn pod() -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": pod_spec()})
}

#[test]
fn pod_create() {
    run_cases(
        "",
        "Pod",
        &pod(),
        &[
            Case {
                name: "containers required",
                edits: &[("spec/containers", Some("[]"))],
                expect: &["spec.containers: Required value"],
            },
            Case {
                name: "container name",
                edits: &[("spec/containers/0/name", Some(r#""Bad_Name""#))],
                expect: &[
                    "~spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of",
                ],
            },
            Case {
                name: "container name required",
                edits: &[("spec/containers/0/name", None)],
                expect: &["spec.containers[0].name: Required value"],
            },
            Case {
                name: "duplicate container",
                edits: &[(
                    "spec/containers/1",
                    Some(r#"{"name":"c","image":"busybox"}"#),
                )],
                expect: &[r#"spec.containers[1].name: Duplicate value: "c""#],
            },
            Case {
                name: "image required",
                edits: &[("spec/containers/0/image", None)],
                expect: &["spec.containers[0].image: Required value"],
            },
            Case {
                name: "port out of range",
                edits: &[(
                    "spec/containers/0/ports",
                    Some(r#"[{"containerPort":70000}]"#),
                )],
                expect: &[
                    "spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive",
                ],
            },
            Case {
                name: "port required",
                edits: &[("spec/containers/0/ports", Some(r#"[{"containerPort":0}]"#))],
                expect: &["spec.containers[0].ports[0].containerPort: Required value"],
            },
            Case {
                name: "port protocol",
                edits: &[(
                    "spec/containers/0/ports",
                    Some(r#"[{"containerPort":80,"protocol":"HTTP"}]"#),
                )],
                expect: &[
                    r#"spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP""#,
                ],
            },
            Case {
                name: "port name too long",
                edits: &[(
                    "spec/containers/0/ports",
                    Some(r#"[{"containerPort":80,"name":"abcdefghijklmnopq"}]"#),
                )],
                expect: &[
                    r#"spec.containers[0].ports[0].name: Invalid value: "abcdefghijklmnopq": must be no more than 15 characters"#,
                ],
            },
            Case {
                name: "port name needs a letter",
                edits: &[(
                    "spec/containers/0/ports",
                    Some(r#"[{"containerPort":80,"name":"123"}]"#),
                )],
                expect: &[
                    r#"spec.containers[0].ports[0].name: Invalid value: "123": must contain at least one letter (a-z)"#,
                ],
            },
            Case {
                name: "duplicate port names",
                edits: &[(
                    "spec/containers/0/ports",
                    Some(
                        r#"[{"containerPort":80,"name":"http"},{"containerPort":81,"name":"http"}]"#,
                    ),
                )],
                expect: &[r#"spec.containers[0].ports[1].name: Duplicate value: "http""#],
            },
            Case {
                name: "env name with =",
                edits: &[(
                    "spec/containers/0/env",
                    Some(r#"[{"name":"A=B","value":"x"}]"#),
                )],
                expect: &[
                    r#"spec.containers[0].env[0].name: Invalid value: "A=B": a valid environment variable name must consist only of printable ASCII characters other than '='"#,
                ],
            },
            Case {
                name: "relaxed env names are fine",
                edits: &[(
                    "spec/containers/0/env",
                    Some(r#"[{"name":"1-my.var","value":"x"}]"#),
                )],
                expect: &[],
            },
            Case {
                name: "env name required",
                edits: &[("spec/containers/0/env", Some(r#"[{"value":"x"}]"#))],
                expect: &["spec.containers[0].env[0].name: Required value"],
            },
            Case {
                name: "requests above limits",
                edits: &[(
                    "spec/containers/0/resources",
                    Some(r#"{"requests":{"cpu":"2"},"limits":{"cpu":"1"}}"#),
                )],
                expect: &[
                    r#"spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1"#,
                ],
            },
            Case {
                name: "negative quantity",
                edits: &[(
                    "spec/containers/0/resources",
                    Some(r#"{"limits":{"memory":"-1Gi"}}"#),
                )],
                expect: &[
                    r#"spec.containers[0].resources.limits[memory]: Invalid value: "-1Gi": must be greater than or equal to 0"#,
                ],
            },
            Case {
                name: "duplicate volumes",
                edits: &[(
                    "spec/volumes",
                    Some(r#"[{"name":"v","emptyDir":{}},{"name":"v","emptyDir":{}}]"#),
                )],
                expect: &[r#"spec.volumes[1].name: Duplicate value: "v""#],
            },
            Case {
                name: "two volume sources",
                edits: &[(
                    "spec/volumes",
                    Some(r#"[{"name":"v","emptyDir":{},"configMap":{"name":"cm"}}]"#),
                )],
                expect: &[
                    "spec.volumes[0].configMap: Forbidden: may not specify more than 1 volume type",
                ],
            },
            Case {
                name: "mount of unknown volume",
                edits: &[(
                    "spec/containers/0/volumeMounts",
                    Some(r#"[{"name":"missing","mountPath":"/data"}]"#),
                )],
                expect: &[r#"spec.containers[0].volumeMounts[0].name: Not found: "missing""#],
            },
            Case {
                name: "mount path required",
                edits: &[
                    ("spec/volumes", Some(r#"[{"name":"v","emptyDir":{}}]"#)),
                    (
                        "spec/containers/0/volumeMounts",
                        Some(r#"[{"name":"v","mountPath":""}]"#),
                    ),
                ],
                expect: &["spec.containers[0].volumeMounts[0].mountPath: Required value"],
            },
            Case {
                name: "restart policy",
                edits: &[("spec/restartPolicy", Some(r#""Sometimes""#))],
                expect: &[
                    r#"spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never""#,
                ],
            },
            Case {
                name: "dns policy",
                edits: &[("spec/dnsPolicy", Some(r#""Google""#))],
                expect: &[
                    r#"spec.dnsPolicy: Unsupported value: "Google": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None""#,
                ],
            },
            Case {
                name: "probe without handler",
                edits: &[(
                    "spec/containers/0/livenessProbe",
                    Some(r#"{"periodSeconds":10}"#),
                )],
                expect: &[
                    "spec.containers[0].livenessProbe: Required value: must specify a handler type",
                ],
            },
            Case {
                name: "probe with two handlers",
                edits: &[(
                    "spec/containers/0/readinessProbe",
                    Some(r#"{"exec":{"command":["true"]},"tcpSocket":{"port":80}}"#),
                )],
                expect: &[
                    "spec.containers[0].readinessProbe.tcpSocket: Forbidden: may not specify more than 1 handler type",
                ],
            },
            Case {
                name: "liveness successThreshold",
                edits: &[(
                    "spec/containers/0/livenessProbe",
                    Some(r#"{"exec":{"command":["true"]},"successThreshold":2}"#),
                )],
                expect: &[
                    "spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1",
                ],
            },
            Case {
                name: "negative runAsUser",
                edits: &[("spec/securityContext", Some(r#"{"runAsUser":-1}"#))],
                expect: &[
                    "spec.securityContext.runAsUser: Invalid value: -1: must be between 0 and 2147483647, inclusive",
                ],
            },
            Case {
                name: "negative grace period",
                edits: &[("spec/terminationGracePeriodSeconds", Some("-1"))],
                expect: &[],
            },
            Case {
                name: "image pull policy",
                edits: &[("spec/containers/0/imagePullPolicy", Some(r#""Sometimes""#))],
                expect: &[
                    r#"spec.containers[0].imagePullPolicy: Unsupported value: "Sometimes": supported values: "Always", "IfNotPresent", "Never""#,
                ],
            },
        ],
    );
}

#[test]
fn pod_update_rules() {
    let old = pod();
    let new = edit(&old, &[("spec/containers/0/name", Some(json!("d")))]);
    let errs = update_errors("", "Pod", &new, &old);
    assert_contains(
        &errs,
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
    );
    // A diff of the change follows the list (upstream prints a `cmp.Diff`).
    assert_contains(
        &errs,
        "\n- spec.containers[0].name: \"c\"\n+ spec.containers[0].name: \"d\"\n",
    );
    // What kubectl sends back: the stored (defaulted) pod with a new image.
    let stored = created("", "Pod", &old);
    let image = edit(
        &stored,
        &[("spec/containers/0/image", Some(json!("nginx:1.27")))],
    );
    let errs = update_errors("", "Pod", &image, &stored);
    assert!(errs.is_empty(), "{errs:?}");
    // A bare new image changes the defaulted imagePullPolicy too, which is forbidden.
    let bare = edit(
        &old,
        &[("spec/containers/0/image", Some(json!("nginx:1.27")))],
    );
    assert_contains(
        &update_errors("", "Pod", &bare, &stored),
        "spec: Forbidden: pod updates may not change fields other than",
    );
}

fn service() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "svc", "namespace": "default"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    })
}

#[test]
fn service_create() {
    run_cases(
        "",
        "Service",
        &service(),
        &[
            Case {
                name: "ports required",
                edits: &[("spec/ports", Some("[]"))],
                expect: &["spec.ports: Required value"],
            },
            Case {
                name: "headless without ports",
                edits: &[
                    ("spec/ports", Some("[]")),
                    ("spec/clusterIP", Some(r#""None""#)),
                ],
                expect: &[],
            },
            Case {
                name: "port zero",
                edits: &[("spec/ports/0/port", Some("0"))],
                expect: &[
                    "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                ],
            },
            Case {
                name: "port protocol",
                edits: &[("spec/ports/0/protocol", Some(r#""ICMP""#))],
                expect: &[
                    r#"spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP""#,
                ],
            },
            Case {
                name: "type",
                edits: &[("spec/type", Some(r#""Magic""#))],
                expect: &[
                    r#"spec.type: Unsupported value: "Magic": supported values: "ClusterIP", "ExternalName", "LoadBalancer", "NodePort""#,
                ],
            },
            Case {
                name: "bad clusterIP",
                edits: &[("spec/clusterIP", Some(r#""10.0.0.300""#))],
                expect: &[
                    "~spec.clusterIPs[0]: Invalid value: \"10.0.0.300\": must be a valid IP address",
                ],
            },
            Case {
                name: "multiple ports need names",
                edits: &[("spec/ports/1", Some(r#"{"port":81}"#))],
                expect: &["spec.ports[1].name: Required value"],
            },
            Case {
                name: "duplicate port names",
                edits: &[
                    ("spec/ports/0/name", Some(r#""a""#)),
                    ("spec/ports/1", Some(r#"{"port":81,"name":"a"}"#)),
                ],
                expect: &[r#"spec.ports[1].name: Duplicate value: "a""#],
            },
            Case {
                name: "externalName required",
                edits: &[
                    ("spec/type", Some(r#""ExternalName""#)),
                    ("spec/selector", None),
                ],
                expect: &["spec.externalName: Required value"],
            },
            Case {
                name: "nodePort on ClusterIP",
                edits: &[("spec/ports/0/nodePort", Some("30080"))],
                expect: &[
                    "spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
                ],
            },
            Case {
                name: "session affinity",
                edits: &[("spec/sessionAffinity", Some(r#""Sticky""#))],
                expect: &[
                    r#"spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None""#,
                ],
            },
            Case {
                name: "targetPort name",
                edits: &[("spec/ports/0/targetPort", Some(r#""not_valid""#))],
                expect: &["~spec.ports[0].targetPort: Invalid value: \"not_valid\": "],
            },
            Case {
                name: "NodePort ok",
                edits: &[
                    ("spec/type", Some(r#""NodePort""#)),
                    ("spec/ports/0/nodePort", Some("30080")),
                ],
                expect: &[],
            },
        ],
    );
}

#[test]
fn service_cluster_ip_is_immutable() {
    let old = edit(&service(), &[("spec/clusterIP", Some(json!("10.96.0.10")))]);
    let new = edit(&old, &[("spec/clusterIP", Some(json!("10.96.0.11")))]);
    let errs = update_errors("", "Service", &new, &old);
    assert_has(
        &errs,
        r#"spec.clusterIPs[0]: Invalid value: ["10.96.0.11"]: may not change once set"#,
    );
}

#[test]
fn config_map_and_secret() {
    let cm = json!({"metadata": {"name": "cm", "namespace": "default"}, "data": {"key.name": "v"}});
    run_cases(
        "",
        "ConfigMap",
        &cm,
        &[
            Case {
                name: "bad key",
                edits: &[("data/a b", Some(r#""x""#))],
                expect: &[
                    r#"data[a b]: Invalid value: "a b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"#,
                ],
            },
            Case {
                name: "dot key",
                edits: &[("data/..", Some(r#""x""#))],
                expect: &[r#"data[..]: Invalid value: "..": must not be '..'"#],
            },
            Case {
                name: "duplicate between data and binaryData",
                edits: &[("binaryData/key.name", Some(r#""eA==""#))],
                expect: &[
                    r#"data[key.name]: Invalid value: "key.name": duplicate of key present in binaryData"#,
                ],
            },
        ],
    );
    let big = edit(
        &cm,
        &[("data/big", Some(json!("x".repeat(1024 * 1024 + 1))))],
    );
    assert_has(
        &create_errors("", "ConfigMap", &big),
        // Upstream reports the whole object (an empty path).
        ": Too long: may not be more than 1048576 bytes",
    );
    let immutable = edit(&cm, &[("immutable", Some(json!(true)))]);
    let changed = edit(&immutable, &[("data/key.name", Some(json!("w")))]);
    assert_has(
        &update_errors("", "ConfigMap", &changed, &immutable),
        "data: Forbidden: field is immutable when `immutable` is set",
    );
    let unset = edit(&immutable, &[("immutable", Some(json!(false)))]);
    assert_contains(
        &update_errors("", "ConfigMap", &unset, &immutable),
        "immutable: Forbidden: field is immutable when `immutable` is set",
    );

    let secret = json!({"metadata": {"name": "s", "namespace": "default"}, "data": {"k": "dg=="}});
    run_cases(
        "",
        "Secret",
        &secret,
        &[
            Case {
                name: "bad key",
                edits: &[("data/a:b", Some(r#""dg==""#))],
                expect: &[
                    "~data[a:b]: Invalid value: \"a:b\": a valid config key must consist of alphanumeric characters",
                ],
            },
            Case {
                name: "dockerconfigjson",
                edits: &[("type", Some(r#""kubernetes.io/dockerconfigjson""#))],
                expect: &["data[.dockerconfigjson]: Required value"],
            },
            Case {
                name: "tls",
                edits: &[("type", Some(r#""kubernetes.io/tls""#))],
                expect: &[
                    "data[tls.crt]: Required value",
                    "data[tls.key]: Required value",
                ],
            },
            Case {
                name: "service account token",
                edits: &[("type", Some(r#""kubernetes.io/service-account-token""#))],
                expect: &[
                    "metadata.annotations[kubernetes.io/service-account.name]: Required value",
                ],
            },
        ],
    );
    let typed = edit(&secret, &[("type", Some(json!("Opaque")))]);
    let retyped = edit(
        &typed,
        &[
            ("type", Some(json!("kubernetes.io/basic-auth"))),
            ("data/username", Some(json!("dQ=="))),
        ],
    );
    assert_contains(
        &update_errors("", "Secret", &retyped, &typed),
        "type: Invalid value: \"kubernetes.io/basic-auth\": field is immutable",
    );
}

#[test]
fn namespace_and_name_rules() {
    use api::kinds::validate::{NameRule, name_errors, name_rule};
    assert_eq!(name_rule("", "Namespace"), NameRule::DnsLabel);
    assert_eq!(name_rule("", "ConfigMap"), NameRule::DnsSubdomain);
    assert_eq!(name_rule("", "Service"), NameRule::Dns1035Label);
    assert_eq!(name_rule(RBAC, "ClusterRole"), NameRule::PathSegment);
    assert_eq!(name_rule(APPS, "Deployment"), NameRule::DnsSubdomain);
    assert_eq!(
        name_errors(NameRule::DnsLabel, "My.NS", false),
        vec![DNS_LABEL_MSG]
    );
    assert!(name_errors(NameRule::DnsSubdomain, "a.b-c", false).is_empty());
    assert_eq!(
        name_errors(NameRule::Dns1035Label, "1svc", false),
        vec![
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
        ]
    );
    assert_eq!(
        name_errors(NameRule::PathSegment, "..", false),
        vec!["may not be '..'"]
    );
    assert_eq!(
        name_errors(NameRule::PathSegment, "a%b", false),
        vec!["may not contain '%'"]
    );

    let ns = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes"]}});
    assert!(create_errors("", "Namespace", &ns).is_empty());
    let bad = edit(&ns, &[("spec/finalizers", Some(json!(["bad finalizer"])))]);
    assert_contains(
        &create_errors("", "Namespace", &bad),
        "spec.finalizers: Invalid value: \"bad finalizer\"",
    );
}

#[test]
fn rbac() {
    let role = json!({"metadata": {"name": "r", "namespace": "default"}, "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
    run_cases(
        RBAC,
        "Role",
        &role,
        &[
            Case {
                name: "verbs required",
                edits: &[("rules/0/verbs", Some("[]"))],
                expect: &["rules[0].verbs: Required value: verbs must contain at least one value"],
            },
            Case {
                name: "apiGroups required",
                edits: &[("rules/0/apiGroups", None)],
                expect: &[
                    "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
                ],
            },
            Case {
                name: "nonResourceURLs in namespaced role",
                edits: &[(
                    "rules/0",
                    Some(r#"{"nonResourceURLs":["/healthz"],"verbs":["get"]}"#),
                )],
                expect: &[
                    "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: namespaced rules cannot apply to non-resource URLs",
                ],
            },
        ],
    );
    let cr = json!({"metadata": {"name": "cr"}, "rules": [{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]});
    run_cases(
        RBAC,
        "ClusterRole",
        &cr,
        &[Case {
            name: "mixed resource and nonResource",
            edits: &[
                ("rules/0/resources", Some(r#"["pods"]"#)),
                ("rules/0/apiGroups", Some(r#"[""]"#)),
            ],
            expect: &[
                "rules[0].nonResourceURLs: Invalid value: [\"/healthz\"]: rules cannot apply to both regular resources and non-resource URLs",
            ],
        }],
    );
    let rb = json!({
        "metadata": {"name": "rb", "namespace": "default"},
        "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "r"},
        "subjects": [{"kind": "User", "name": "alice"}]
    });
    run_cases(
        RBAC,
        "RoleBinding",
        &rb,
        &[
            Case {
                name: "roleRef kind",
                edits: &[("roleRef/kind", Some(r#""Group""#))],
                expect: &[
                    r#"roleRef.kind: Unsupported value: "Group": supported values: "Role", "ClusterRole""#,
                ],
            },
            Case {
                name: "roleRef name",
                edits: &[("roleRef/name", Some(r#""""#))],
                expect: &["roleRef.name: Required value"],
            },
            Case {
                name: "subject kind",
                edits: &[("subjects/0/kind", Some(r#""Robot""#))],
                expect: &[
                    r#"subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group""#,
                ],
            },
            Case {
                name: "service account namespace",
                edits: &[(
                    "subjects/0",
                    Some(r#"{"kind":"ServiceAccount","name":"default"}"#),
                )],
                expect: &[],
            },
        ],
    );
    let crb = json!({
        "metadata": {"name": "crb"},
        "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "cr"},
        "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"}]
    });
    run_cases(
        RBAC,
        "ClusterRoleBinding",
        &crb,
        &[
            Case {
                name: "roleRef kind",
                edits: &[("roleRef/kind", Some(r#""Role""#))],
                expect: &[
                    r#"roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole""#,
                ],
            },
            Case {
                name: "service account needs namespace",
                edits: &[("subjects/0/namespace", None)],
                expect: &["subjects[0].namespace: Required value"],
            },
        ],
    );
    let changed = edit(&rb, &[("roleRef/name", Some(json!("other")))]);
    assert_contains(
        &update_errors(RBAC, "RoleBinding", &changed, &rb),
        "roleRef: Invalid value: ",
    );
    assert_contains(
        &update_errors(RBAC, "RoleBinding", &changed, &rb),
        ": cannot change roleRef",
    );
}

#[test]
fn priority_class_pdb_lease_endpoint_slice() {
    let pc = json!({"metadata": {"name": "high"}, "value": 1000});
    run_cases(
        "scheduling.k8s.io",
        "PriorityClass",
        &pc,
        &[
            Case {
                name: "value too high",
                edits: &[("value", Some("2000000000"))],
                expect: &[
                    "value: Forbidden: maximum allowed value of a user defined priority is 1000000000",
                ],
            },
            Case {
                name: "system prefix",
                edits: &[("metadata/name", Some(r#""system-foo""#))],
                expect: &[
                    "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. error: system-foo is not a known system priority class",
                ],
            },
            Case {
                name: "preemption policy",
                edits: &[("preemptionPolicy", Some(r#""Sometimes""#))],
                expect: &[
                    r#"preemptionPolicy: Unsupported value: "Sometimes": supported values: "PreemptLowerPriority", "Never""#,
                ],
            },
        ],
    );
    let changed = edit(&pc, &[("value", Some(json!(5)))]);
    assert_has(
        &update_errors("scheduling.k8s.io", "PriorityClass", &changed, &pc),
        "value: Forbidden: may not be changed in an update.",
    );

    let pdb = json!({"metadata": {"name": "pdb", "namespace": "default"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}});
    run_cases(
        "policy",
        "PodDisruptionBudget",
        &pdb,
        &[
            Case {
                name: "both",
                edits: &[("spec/maxUnavailable", Some("1"))],
                expect: &[
                    "~spec: Invalid value: ",
                    "~minAvailable and maxUnavailable cannot be both set",
                ],
            },
            Case {
                name: "percent above 100",
                edits: &[("spec/minAvailable", Some(r#""150%""#))],
                expect: &[
                    r#"spec.minAvailable: Invalid value: "150%": must not be greater than 100%"#,
                ],
            },
            Case {
                name: "negative",
                edits: &[("spec/minAvailable", Some("-1"))],
                expect: &[
                    "spec.minAvailable: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "eviction policy",
                edits: &[("spec/unhealthyPodEvictionPolicy", Some(r#""Never""#))],
                expect: &[
                    r#"spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", "IfHealthyBudget""#,
                ],
            },
        ],
    );

    let lease = json!({"metadata": {"name": "l", "namespace": "default"}, "spec": {"holderIdentity": "me", "leaseDurationSeconds": 15}});
    run_cases(
        "coordination.k8s.io",
        "Lease",
        &lease,
        &[
            Case {
                name: "duration",
                edits: &[("spec/leaseDurationSeconds", Some("0"))],
                expect: &["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"],
            },
            Case {
                name: "transitions",
                edits: &[("spec/leaseTransitions", Some("-1"))],
                expect: &[
                    "spec.leaseTransitions: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
        ],
    );

    let eps = json!({
        "metadata": {"name": "s-abc", "namespace": "default"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["10.1.2.3"]}],
        "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]
    });
    run_cases(
        "discovery.k8s.io",
        "EndpointSlice",
        &eps,
        &[
            Case {
                name: "address type",
                edits: &[("addressType", Some(r#""IPv5""#))],
                expect: &[
                    r#"addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6""#,
                ],
            },
            Case {
                name: "address type required",
                edits: &[("addressType", None)],
                expect: &["addressType: Required value"],
            },
            Case {
                name: "bad address",
                edits: &[("endpoints/0/addresses/0", Some(r#""10.1.2""#))],
                expect: &["~endpoints[0].addresses[0]: Invalid value: \"10.1.2\": "],
            },
            Case {
                name: "addresses required",
                edits: &[("endpoints/0/addresses", Some("[]"))],
                expect: &["~endpoints[0].addresses: Required value"],
            },
        ],
    );
    let retyped = edit(
        &eps,
        &[
            ("addressType", Some(json!("IPv6"))),
            ("endpoints", Some(json!([]))),
        ],
    );
    assert_contains(
        &update_errors("discovery.k8s.io", "EndpointSlice", &retyped, &eps),
        "addressType: Invalid value: \"IPv6\": field is immutable",
    );
}

fn job() -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "pi", "namespace": "default", "uid": "7d2b6c3e-0000-4000-8000-000000000001"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "perl"}]}}}
    })
}

#[test]
fn job_create() {
    run_cases(
        BATCH,
        "Job",
        &job(),
        &[
            Case {
                name: "restart policy",
                edits: &[("spec/template/spec/restartPolicy", Some(r#""Always""#))],
                expect: &[
                    r#"spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never""#,
                ],
            },
            Case {
                name: "negative parallelism",
                edits: &[("spec/parallelism", Some("-1"))],
                expect: &[
                    "spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "negative backoff",
                edits: &[("spec/backoffLimit", Some("-1"))],
                expect: &[
                    "spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "activeDeadlineSeconds",
                edits: &[("spec/activeDeadlineSeconds", Some("-1"))],
                expect: &[
                    "spec.activeDeadlineSeconds: Invalid value: -1: must be greater than or equal to 0",
                ],
            },
            Case {
                name: "indexed requires completions",
                edits: &[
                    ("spec/completionMode", Some(r#""Indexed""#)),
                    ("spec/parallelism", Some("2")),
                ],
                expect: &["spec.completions: Required value: when completion mode is Indexed"],
            },
            Case {
                name: "completion mode",
                edits: &[("spec/completionMode", Some(r#""Sometimes""#))],
                expect: &[
                    r#"spec.completionMode: Unsupported value: "Sometimes": supported values: "NonIndexed", "Indexed""#,
                ],
            },
        ],
    );
}

#[test]
fn job_template_is_immutable() {
    let old = job();
    let new = edit(
        &old,
        &[(
            "spec/template/spec/containers/0/image",
            Some(json!("perl:5")),
        )],
    );
    let errs = update_errors(BATCH, "Job", &new, &old);
    assert_contains(&errs, "spec.template: Invalid value: ");
    assert_contains(&errs, "field is immutable");
}

#[test]
fn cron_job_create() {
    let cj = json!({
        "metadata": {"name": "hello", "namespace": "default"},
        "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}}}
    });
    run_cases(
        BATCH,
        "CronJob",
        &cj,
        &[
            Case {
                name: "schedule fields",
                edits: &[("spec/schedule", Some(r#""bad""#))],
                expect: &[
                    r#"spec.schedule: Invalid value: "bad": expected exactly 5 fields, found 1: [bad]"#,
                ],
            },
            Case {
                name: "schedule required",
                edits: &[("spec/schedule", Some(r#""""#))],
                expect: &["spec.schedule: Required value"],
            },
            Case {
                name: "descriptor",
                edits: &[("spec/schedule", Some(r#""@hourly""#))],
                expect: &[],
            },
            Case {
                name: "every",
                edits: &[("spec/schedule", Some(r#""@every 1h30m""#))],
                expect: &[],
            },
            Case {
                name: "minute out of range",
                edits: &[("spec/schedule", Some(r#""61 * * * *""#))],
                expect: &[
                    r#"spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61"#,
                ],
            },
            Case {
                name: "TZ in schedule",
                edits: &[("spec/schedule", Some(r#""TZ=UTC 0 * * * *""#))],
                expect: &[
                    r#"spec.schedule: Invalid value: "TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead"#,
                ],
            },
            Case {
                name: "time zone",
                edits: &[("spec/timeZone", Some(r#""Mars/Olympus""#))],
                expect: &[
                    r#"spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus"#,
                ],
            },
            Case {
                name: "good time zone",
                edits: &[("spec/timeZone", Some(r#""Europe/Berlin""#))],
                expect: &[],
            },
            Case {
                name: "concurrency policy",
                edits: &[("spec/concurrencyPolicy", Some(r#""Sometimes""#))],
                expect: &[
                    r#"spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace""#,
                ],
            },
            Case {
                name: "name too long",
                edits: &[(
                    "metadata/name",
                    Some(r#""a-very-long-cron-job-name-that-exceeds-the-fifty-two-limit""#),
                )],
                expect: &[
                    r#"metadata.name: Invalid value: "a-very-long-cron-job-name-that-exceeds-the-fifty-two-limit": must be no more than 52 characters"#,
                ],
            },
            Case {
                name: "template restart policy",
                edits: &[(
                    "spec/jobTemplate/spec/template/spec/restartPolicy",
                    Some(r#""Always""#),
                )],
                expect: &["~spec.jobTemplate.spec.template.spec.restartPolicy: "],
            },
        ],
    );
}

fn crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {"size": {"type": "integer"}}}}}}
            }]
        }
    })
}

#[test]
fn crd_create() {
    run_cases(
        "apiextensions.k8s.io",
        "CustomResourceDefinition",
        &crd(),
        &[
            Case {
                name: "name",
                edits: &[("metadata/name", Some(r#""gadgets.example.com""#))],
                expect: &[
                    r#"metadata.name: Invalid value: "gadgets.example.com": must be spec.names.plural+"."+spec.group"#,
                ],
            },
            Case {
                name: "group needs a dot",
                edits: &[
                    ("spec/group", Some(r#""example""#)),
                    ("metadata/name", Some(r#""widgets.example""#)),
                ],
                expect: &[
                    r#"spec.group: Invalid value: "example": should be a domain with at least one dot"#,
                ],
            },
            Case {
                name: "scope",
                edits: &[("spec/scope", Some(r#""Global""#))],
                expect: &[
                    r#"spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced""#,
                ],
            },
            Case {
                name: "no storage version",
                edits: &[("spec/versions/0/storage", Some("false"))],
                expect: &[
                    "~spec.versions: Invalid value: ",
                    "~must have exactly one version marked as storage version",
                ],
            },
            Case {
                name: "two storage versions",
                edits: &[(
                    "spec/versions/1",
                    Some(
                        r#"{"name":"v2","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}"#,
                    ),
                )],
                expect: &["~must have exactly one version marked as storage version"],
            },
            Case {
                name: "schema required",
                edits: &[("spec/versions/0/schema", None)],
                expect: &[
                    "spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required",
                ],
            },
            Case {
                name: "plural must be lowercase",
                edits: &[
                    ("spec/names/plural", Some(r#""Widgets""#)),
                    ("metadata/name", Some(r#""Widgets.example.com""#)),
                ],
                expect: &[
                    "~spec.names.plural: Invalid value: \"Widgets\": a DNS-1035 label must consist of",
                ],
            },
            Case {
                name: "kind required",
                edits: &[("spec/names/kind", Some(r#""""#))],
                expect: &["spec.names.kind: Required value"],
            },
            Case {
                name: "no versions",
                edits: &[("spec/versions", Some("[]"))],
                expect: &["~spec.versions: Invalid value: "],
            },
            Case {
                name: "non-structural",
                edits: &[(
                    "spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/type",
                    None,
                )],
                expect: &[
                    "~spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[size].type: Required value: must not be empty for specified object fields",
                ],
            },
        ],
    );
}

#[test]
fn pvc_pv_and_friends() {
    let pvc = json!({
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    });
    run_cases(
        "",
        "PersistentVolumeClaim",
        &pvc,
        &[
            Case {
                name: "access modes",
                edits: &[("spec/accessModes", Some("[]"))],
                expect: &["spec.accessModes: Required value: at least 1 access mode is required"],
            },
            Case {
                name: "unknown access mode",
                edits: &[("spec/accessModes", Some(r#"["ReadSometimes"]"#))],
                expect: &[
                    r#"spec.accessModes: Unsupported value: "ReadSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod""#,
                ],
            },
            Case {
                name: "storage request",
                edits: &[("spec/resources/requests", Some("{}"))],
                expect: &["spec.resources[storage]: Required value"],
            },
        ],
    );
    let bigger = edit(
        &pvc,
        &[("spec/accessModes", Some(json!(["ReadWriteMany"])))],
    );
    assert_contains(
        &update_errors("", "PersistentVolumeClaim", &bigger, &pvc),
        "spec: Forbidden: spec is immutable after creation except resources.requests",
    );

    let pv = json!({
        "metadata": {"name": "pv1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "hostPath": {"path": "/data"}}
    });
    run_cases(
        "",
        "PersistentVolume",
        &pv,
        &[
            Case {
                name: "source required",
                edits: &[("spec/hostPath", None)],
                expect: &["spec: Required value: must specify a volume type"],
            },
            Case {
                name: "capacity",
                edits: &[("spec/capacity", None)],
                expect: &["spec.capacity: Required value"],
            },
            Case {
                name: "reclaim policy",
                edits: &[("spec/persistentVolumeReclaimPolicy", Some(r#""Keep""#))],
                expect: &[
                    r#"spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain""#,
                ],
            },
        ],
    );

    let rq = json!({"metadata": {"name": "q", "namespace": "default"}, "spec": {"hard": {"pods": "10", "requests.cpu": "4"}}});
    run_cases(
        "",
        "ResourceQuota",
        &rq,
        &[Case {
            name: "negative",
            edits: &[("spec/hard/pods", Some(r#""-1""#))],
            expect: &[
                r#"spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0"#,
            ],
        }],
    );

    let lr = json!({"metadata": {"name": "lr", "namespace": "default"}, "spec": {"limits": [{"type": "Container", "max": {"cpu": "2"}, "min": {"cpu": "100m"}}]}});
    run_cases(
        "",
        "LimitRange",
        &lr,
        &[Case {
            name: "min above max",
            edits: &[("spec/limits/0/min/cpu", Some(r#""3""#))],
            expect: &[
                "~spec.limits[0].min[cpu]: Invalid value: \"3\": min value 3 is greater than max value 2",
            ],
        }],
    );
}

#[test]
fn events() {
    let ev = json!({
        "metadata": {"name": "pod.123", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "pod", "namespace": "default"},
        "reason": "Started", "message": "Started container", "type": "Normal",
        "source": {"component": "kubelet"}
    });
    assert!(
        create_errors("", "Event", &ev).is_empty(),
        "{:?}",
        create_errors("", "Event", &ev)
    );
    let wrong_ns = edit(&ev, &[("involvedObject/namespace", Some(json!("other")))]);
    assert_has(
        &create_errors("", "Event", &wrong_ns),
        r#"involvedObject.namespace: Invalid value: "other": does not match event.namespace"#,
    );

    let ev2 = json!({
        "metadata": {"name": "e", "namespace": "default"},
        "eventTime": "2024-01-01T00:00:00.000000Z",
        "reportingController": "example.com/ctl", "reportingInstance": "ctl-1",
        "action": "Create", "reason": "Created", "type": "Normal",
        "regarding": {"kind": "Pod", "name": "p", "namespace": "default"}
    });
    run_cases(
        "events.k8s.io",
        "Event",
        &ev2,
        &[
            Case {
                name: "eventTime",
                edits: &[("eventTime", None)],
                expect: &["eventTime: Required value"],
            },
            Case {
                name: "type",
                edits: &[("type", Some(r#""Bad""#))],
                // Upstream passes "" as the bad value.
                expect: &[r#"type: Invalid value: "": has invalid value: Bad"#],
            },
            Case {
                name: "reportingController",
                edits: &[("reportingController", Some(r#""""#))],
                expect: &["reportingController: Required value"],
            },
        ],
    );
}

#[test]
fn pod_ephemeral_containers() {
    use api::kinds::{defaults, validate};
    let old = created("", "Pod", &pod());
    let mut new = old.clone();
    set(
        &mut new,
        "spec/ephemeralContainers",
        json!([{"name": "debugger", "image": "busybox", "stdin": true, "tty": true, "targetContainerName": "c"}]),
    );
    // Other spec changes through this subresource are dropped.
    set(&mut new, "spec/containers/0/image", json!("other"));
    defaults::prepare_for_ephemeral_containers_update(&mut new, &old);
    assert_eq!(at(&new, "spec/containers/0/image"), &json!("nginx"));
    assert_eq!(
        at(&new, "spec/ephemeralContainers/0/imagePullPolicy"),
        &json!("Always")
    );
    let errs = validate::pod_ephemeral_containers_update(&new, &old);
    assert!(errs.is_empty(), "{errs:?}");

    let mut removed = new.clone();
    set(&mut removed, "spec/ephemeralContainers", json!([]));
    let errs: Vec<String> = validate::pod_ephemeral_containers_update(&removed, &new)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_has(
        &errs,
        "spec.ephemeralContainers: Forbidden: existing ephemeral containers \"debugger\" may not be removed\n",
    );

    let mut bad = old.clone();
    set(
        &mut bad,
        "spec/ephemeralContainers",
        json!([{"name": "c", "image": "busybox", "ports": [{"containerPort": 80}]}]),
    );
    let errs: Vec<String> = validate::pod_ephemeral_containers_update(&bad, &old)
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_contains(
        &errs,
        "spec.ephemeralContainers[0].name: Duplicate value: \"c\"",
    );
}

/// Objects as the kubectl generators (`kubectl create ...`, `run`, `expose`) and the
/// built-in controllers send them are accepted.
#[test]
fn kubectl_generated_objects_are_valid() {
    let tls_crt = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t";
    let cases: Vec<(&str, &str, Value)> = vec![
        (
            "apps",
            "Deployment",
            json!({
                "apiVersion": "apps/v1", "kind": "Deployment",
                "metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}, "name": "nginx"},
                "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx"}}, "strategy": {},
                    "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                        "spec": {"containers": [{"image": "nginx", "name": "nginx", "ports": [{"containerPort": 80}], "resources": {}}]}}},
                "status": {}
            }),
        ),
        (
            "",
            "Pod",
            json!({
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": "nginx", "creationTimestamp": null, "labels": {"run": "nginx"}},
                "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst"},
                "status": {}
            }),
        ),
        (
            "",
            "Pod",
            json!({
                "kind": "Pod", "apiVersion": "v1",
                "metadata": {"name": "busybox", "labels": {"run": "busybox"}},
                "spec": {"containers": [{"name": "busybox", "image": "busybox", "args": ["sleep", "3600"], "stdin": true, "tty": true,
                    "env": [{"name": "FOO", "value": "bar"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "200m", "memory": "128Mi"}}}],
                    "restartPolicy": "Never"}
            }),
        ),
        (
            "",
            "Service",
            json!({
                "kind": "Service", "apiVersion": "v1",
                "metadata": {"name": "nginx", "labels": {"app": "nginx"}},
                "spec": {"ports": [{"protocol": "TCP", "port": 80, "targetPort": 80}], "selector": {"app": "nginx"}},
                "status": {"loadBalancer": {}}
            }),
        ),
        (
            "",
            "Service",
            json!({
                "metadata": {"name": "my-ns", "labels": {"app": "my-ns"}},
                "spec": {"ports": [{"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080, "nodePort": 0}],
                    "selector": {"app": "my-ns"}, "type": "NodePort"},
                "status": {"loadBalancer": {}}
            }),
        ),
        (
            "",
            "Service",
            json!({
                "metadata": {"name": "my-lb"},
                "spec": {"ports": [{"name": "5678-8080", "protocol": "TCP", "port": 5678, "targetPort": 8080}],
                    "selector": {"app": "my-lb"}, "type": "LoadBalancer"}
            }),
        ),
        (
            "",
            "Service",
            json!({
                "metadata": {"name": "my-cs"},
                "spec": {"clusterIP": "None", "selector": {"app": "my-cs"}, "type": "ClusterIP"}
            }),
        ),
        (
            "",
            "Service",
            json!({
                "metadata": {"name": "my-ext"},
                "spec": {"type": "ExternalName", "externalName": "bar.com", "selector": {"app": "my-ext"}}
            }),
        ),
        (
            "batch",
            "Job",
            json!({
                "kind": "Job", "apiVersion": "batch/v1",
                "metadata": {"name": "my-job", "uid": "4f1b0a34-7d43-4d0e-9a6e-3c1f0f1e2d3c"},
                "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": "my-job", "image": "busybox", "resources": {}}], "restartPolicy": "Never"}}},
                "status": {}
            }),
        ),
        (
            "batch",
            "CronJob",
            json!({
                "kind": "CronJob", "apiVersion": "batch/v1",
                "metadata": {"name": "my-job"},
                "spec": {"schedule": "*/1 * * * *", "jobTemplate": {"metadata": {"name": "my-job"},
                    "spec": {"template": {"metadata": {}, "spec": {"containers": [{"name": "my-job", "image": "busybox", "resources": {}}], "restartPolicy": "OnFailure"}}}}},
                "status": {}
            }),
        ),
        (
            "",
            "Secret",
            json!({"metadata": {"name": "s"}, "data": {"a": "Yg=="}}),
        ),
        (
            "",
            "Secret",
            json!({
                "metadata": {"name": "reg"}, "type": "kubernetes.io/dockerconfigjson",
                "data": {".dockerconfigjson": "eyJhdXRocyI6eyJyZWcuaW8iOnsidXNlcm5hbWUiOiJ1IiwicGFzc3dvcmQiOiJwIiwiYXV0aCI6ImRUcHcifX19"}
            }),
        ),
        (
            "",
            "Secret",
            json!({
                "metadata": {"name": "tls"}, "type": "kubernetes.io/tls",
                "data": {"tls.crt": tls_crt, "tls.key": tls_crt}
            }),
        ),
        (
            "",
            "ConfigMap",
            json!({"metadata": {"name": "c"}, "data": {"k": "v", "app.properties": "a=b\n"}}),
        ),
        (
            "rbac.authorization.k8s.io",
            "Role",
            json!({
                "metadata": {"name": "pod-reader"},
                "rules": [{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]},
                          {"verbs": ["get"], "apiGroups": ["apps"], "resources": ["deployments/scale"], "resourceNames": ["web"]}]
            }),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRole",
            json!({
                "metadata": {"name": "logs"},
                "rules": [{"verbs": ["get"], "nonResourceURLs": ["/logs/*"]}, {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]
            }),
        ),
        (
            "rbac.authorization.k8s.io",
            "RoleBinding",
            json!({
                "metadata": {"name": "rb"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
                "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "bob"},
                             {"kind": "ServiceAccount", "name": "sa", "namespace": "default"},
                             {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}]
            }),
        ),
        (
            "rbac.authorization.k8s.io",
            "ClusterRoleBinding",
            json!({
                "metadata": {"name": "system:crb"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "kube-system"}]
            }),
        ),
        (
            "",
            "ResourceQuota",
            json!({"metadata": {"name": "q"}, "spec": {"hard": {"cpu": "1", "memory": "1G", "pods": "2", "requests.storage": "10Gi", "count/deployments.apps": "5"}}}),
        ),
        (
            "policy",
            "PodDisruptionBudget",
            json!({"metadata": {"name": "p"}, "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "nginx"}}}}),
        ),
        (
            "policy",
            "PodDisruptionBudget",
            json!({"metadata": {"name": "p"}, "spec": {"maxUnavailable": "50%", "selector": {"matchLabels": {"app": "nginx"}}}}),
        ),
        (
            "scheduling.k8s.io",
            "PriorityClass",
            json!({"metadata": {"name": "high"}, "value": 1000, "globalDefault": false, "description": "x", "preemptionPolicy": "PreemptLowerPriority"}),
        ),
        (
            "",
            "Namespace",
            json!({"metadata": {"name": "x"}, "spec": {}, "status": {}}),
        ),
        ("", "ServiceAccount", json!({"metadata": {"name": "x"}})),
        (
            "autoscaling",
            "Scale",
            json!({"metadata": {"name": "nginx", "namespace": "default"}, "spec": {"replicas": 5}}),
        ),
        (
            "coordination.k8s.io",
            "Lease",
            json!({
                "metadata": {"name": "kube-scheduler", "namespace": "kube-system"},
                "spec": {"holderIdentity": "node-1_abc", "leaseDurationSeconds": 15, "acquireTime": "2024-01-01T00:00:00.000000Z",
                         "renewTime": "2024-01-01T00:00:10.000000Z", "leaseTransitions": 0}
            }),
        ),
        (
            "discovery.k8s.io",
            "EndpointSlice",
            json!({
                "metadata": {"name": "nginx-abcde", "namespace": "default", "labels": {"kubernetes.io/service-name": "nginx", "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.244.0.5"], "conditions": {"ready": true, "serving": true, "terminating": false},
                    "nodeName": "node-1", "targetRef": {"kind": "Pod", "name": "nginx-1", "namespace": "default", "uid": "u"}, "zone": "z"}],
                "ports": [{"name": "", "port": 80, "protocol": "TCP"}]
            }),
        ),
        (
            "",
            "Endpoints",
            json!({
                "metadata": {"name": "nginx", "namespace": "default"},
                "subsets": [{"addresses": [{"ip": "10.244.0.5", "nodeName": "node-1", "targetRef": {"kind": "Pod", "name": "nginx-1", "namespace": "default"}}],
                             "ports": [{"port": 80, "protocol": "TCP"}]}]
            }),
        ),
        (
            "events.k8s.io",
            "Event",
            json!({
                "metadata": {"name": "nginx.17a", "namespace": "default"},
                "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "default-scheduler",
                "reportingInstance": "default-scheduler-node-1", "action": "Binding", "reason": "Scheduled",
                "regarding": {"kind": "Pod", "name": "nginx", "namespace": "default", "apiVersion": "v1"},
                "note": "Successfully assigned default/nginx to node-1", "type": "Normal"
            }),
        ),
        (
            "",
            "Event",
            json!({
                "metadata": {"name": "nginx.17b", "namespace": "default"},
                "involvedObject": {"kind": "Pod", "name": "nginx", "namespace": "default", "apiVersion": "v1", "fieldPath": "spec.containers{nginx}"},
                "reason": "Pulled", "message": "Container image already present", "source": {"component": "kubelet", "host": "node-1"},
                "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:00:00Z", "count": 1, "type": "Normal",
                "reportingComponent": "kubelet", "reportingInstance": "node-1"
            }),
        ),
        (
            "",
            "Node",
            json!({
                "metadata": {"name": "node-1", "labels": {"kubernetes.io/hostname": "node-1", "kubernetes.io/os": "linux"}},
                "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"], "taints": [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
                "status": {"capacity": {"cpu": "2", "memory": "4016300Ki", "pods": "110", "ephemeral-storage": "61255492Ki", "hugepages-2Mi": "0"},
                           "addresses": [{"type": "InternalIP", "address": "172.18.0.2"}, {"type": "Hostname", "address": "node-1"}],
                           "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
                           "nodeInfo": {"architecture": "amd64", "bootID": "b", "containerRuntimeVersion": "containerd://1.7", "kernelVersion": "6", "kubeProxyVersion": "", "kubeletVersion": "v1.33.0", "machineID": "m", "operatingSystem": "linux", "osImage": "Debian", "systemUUID": "s"}}
            }),
        ),
        (
            "",
            "PersistentVolumeClaim",
            json!({
                "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}}
            }),
        ),
        (
            "apps",
            "StatefulSet",
            json!({
                "metadata": {"name": "web"},
                "spec": {"serviceName": "nginx", "replicas": 2, "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {"containers": [{"name": "nginx", "image": "registry.k8s.io/nginx-slim:0.24",
                        "ports": [{"containerPort": 80, "name": "web"}], "volumeMounts": [{"name": "www", "mountPath": "/usr/share/nginx/html"}]}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}
            }),
        ),
        (
            "apps",
            "DaemonSet",
            json!({
                "metadata": {"name": "fluentd", "namespace": "kube-system"},
                "spec": {"selector": {"matchLabels": {"name": "fluentd"}},
                    "template": {"metadata": {"labels": {"name": "fluentd"}}, "spec": {
                        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
                        "containers": [{"name": "fluentd", "image": "quay.io/fluentd_elasticsearch/fluentd:v2.5.2",
                            "resources": {"limits": {"memory": "200Mi"}, "requests": {"cpu": "100m", "memory": "200Mi"}},
                            "volumeMounts": [{"name": "varlog", "mountPath": "/var/log"}]}],
                        "terminationGracePeriodSeconds": 30,
                        "volumes": [{"name": "varlog", "hostPath": {"path": "/var/log"}}]}}}
            }),
        ),
        (
            "apps",
            "ControllerRevision",
            json!({"metadata": {"name": "web-6d4cf56db6"}, "data": {"spec": {}}, "revision": 1}),
        ),
        (
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            json!({
                "metadata": {"name": "crontabs.stable.example.com"},
                "spec": {"group": "stable.example.com", "scope": "Namespaced",
                    "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "shortNames": ["ct"]},
                    "versions": [{"name": "v1", "served": true, "storage": true,
                        "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
                            "cronSpec": {"type": "string"}, "image": {"type": "string"}, "replicas": {"type": "integer"}}}}}},
                        "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas", "statusReplicasPath": ".status.replicas"}},
                        "additionalPrinterColumns": [{"name": "Spec", "type": "string", "jsonPath": ".spec.cronSpec"}]}]}
            }),
        ),
    ];
    for (group, kind, obj) in cases {
        let mut obj = obj;
        if at(&obj, "metadata/namespace").is_null()
            && !matches!(
                kind,
                "Namespace"
                    | "Node"
                    | "ClusterRole"
                    | "ClusterRoleBinding"
                    | "PriorityClass"
                    | "CustomResourceDefinition"
            )
        {
            set(&mut obj, "metadata/namespace", json!("default"));
        }
        let errs = create_errors(group, kind, &obj);
        assert!(
            errs.is_empty(),
            "{kind} {}: {errs:?}",
            at(&obj, "metadata/name")
        );
        // Re-applying the stored object is a valid no-op update.
        let stored = created(group, kind, &obj);
        let errs = update_errors(group, kind, &stored, &stored);
        assert!(errs.is_empty(), "{kind} update: {errs:?}");
    }
}

#[test]
fn node_updates() {
    let node = json!({
        "metadata": {"name": "node-1"},
        "spec": {"podCIDR": "10.244.0.0/24", "podCIDRs": ["10.244.0.0/24"]},
        "status": {"capacity": {"cpu": "2"}}
    });
    let stored = created("", "Node", &node);
    // kubectl cordon / taint.
    let cordoned = edit(
        &stored,
        &[
            ("spec/unschedulable", Some(json!(true))),
            (
                "spec/taints",
                Some(json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}])),
            ),
        ],
    );
    let errs = update_errors("", "Node", &cordoned, &stored);
    assert!(errs.is_empty(), "{errs:?}");
    let bad_taint = edit(
        &stored,
        &[(
            "spec/taints",
            Some(json!([{"key": "k", "effect": "Sometimes"}])),
        )],
    );
    assert_has(
        &update_errors("", "Node", &bad_taint, &stored),
        // Upstream reports node taints under `metadata` (its field path's parent).
        r#"metadata.taints[0].effect: Unsupported value: "Sometimes": supported values: "NoSchedule", "PreferNoSchedule", "NoExecute""#,
    );
    let recidr = edit(
        &stored,
        &[
            ("spec/podCIDR", Some(json!("10.245.0.0/24"))),
            ("spec/podCIDRs", Some(json!(["10.245.0.0/24"]))),
        ],
    );
    assert_contains(
        &update_errors("", "Node", &recidr, &stored),
        "spec.podCIDRs: Forbidden: node updates may not change podCIDR except from \"\" to valid",
    );
}
