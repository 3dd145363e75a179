//! Rows of every other built-in kind with a printer: the cells upstream's printers produce
//! for realistic objects (cases modelled on upstream's printers_test.go).

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use serde_json::{Value, json};

fn obj(kind: &str, name: &str, age: i64, rest: Value) -> Value {
    let mut o = json!({"kind": kind, "metadata": meta(name, age)});
    if let (Some(o), Some(rest)) = (o.as_object_mut(), rest.as_object()) {
        for (k, v) in rest {
            o.insert(k.clone(), v.clone());
        }
    }
    o
}

fn template(containers: Value) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": containers}})
}

fn two_containers() -> Value {
    json!([
        {"name": "fake-container1", "image": "fake-image1"},
        {"name": "fake-container2", "image": "fake-image2"}
    ])
}

#[test]
fn deployments() {
    let d = obj(
        "Deployment",
        "test1",
        10 * DAY,
        json!({
            "spec": {
                "replicas": 5,
                "template": template(two_containers()),
                "selector": {"matchLabels": {"foo": "bar"}}
            },
            "status": {"replicas": 10, "updatedReplicas": 2, "availableReplicas": 1, "unavailableReplicas": 4}
        }),
    );
    assert_eq!(
        cells("deployments.apps", &d),
        [
            json!("test1"),
            json!("0/5"),
            json!(2),
            json!(1),
            json!("10d"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("foo=bar")
        ]
    );
    // No replicas (defaulted to 1), no selector, a bad selector.
    let bare = obj("Deployment", "bare", 30, json!({}));
    assert_eq!(
        cells("deployments.apps", &bare),
        [
            json!("bare"),
            json!("0/1"),
            json!(0),
            json!(0),
            json!("30s"),
            json!(""),
            json!(""),
            json!("")
        ]
    );
    let bad = obj(
        "Deployment",
        "bad",
        30,
        json!({"spec": {"selector": {"matchLabels": {"a b": "c"}}}}),
    );
    assert_eq!(cells("deployments.apps", &bad)[7], "<invalid>");
}

#[test]
fn replica_sets_and_controllers() {
    let rs = obj(
        "ReplicaSet",
        "web-7d4b9c",
        2 * HOUR,
        json!({
            "spec": {"replicas": 5, "template": template(two_containers()),
                     "selector": {"matchLabels": {"foo": "bar"}}},
            "status": {"replicas": 5, "readyReplicas": 2}
        }),
    );
    assert_eq!(
        cells("replicasets.apps", &rs),
        [
            json!("web-7d4b9c"),
            json!(5),
            json!(5),
            json!(2),
            json!("120m"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("foo=bar")
        ]
    );
    let rc = obj(
        "ReplicationController",
        "rc1",
        3 * DAY + 2 * HOUR,
        json!({
            "spec": {"replicas": 2, "template": template(json!([{"name": "c", "image": "i"}]))},
            "status": {"replicas": 2, "readyReplicas": 1}
        }),
    );
    // The selector is defaulted to the template's labels.
    assert_eq!(
        cells("replicationcontrollers", &rc),
        [
            json!("rc1"),
            json!(2),
            json!(2),
            json!(1),
            json!("3d2h"),
            json!("c"),
            json!("i"),
            json!("app=web")
        ]
    );
}

#[test]
fn daemon_sets_and_stateful_sets() {
    let ds = obj(
        "DaemonSet",
        "test1",
        0,
        json!({
            "spec": {
                "template": {"spec": {"containers": two_containers(),
                                      "nodeSelector": {"kubernetes.io/os": "linux"}}},
                "selector": {"matchLabels": {"foo": "bar"},
                             "matchExpressions": [{"key": "tier", "operator": "In", "values": ["b", "a"]}]}
            },
            "status": {"currentNumberScheduled": 2, "desiredNumberScheduled": 3, "numberReady": 1,
                       "updatedNumberScheduled": 2, "numberAvailable": 0}
        }),
    );
    assert_eq!(
        cells("daemonsets.apps", &ds),
        [
            json!("test1"),
            json!(3),
            json!(2),
            json!(1),
            json!(2),
            json!(0),
            json!("kubernetes.io/os=linux"),
            json!("0s"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("foo=bar,tier in (a,b)")
        ]
    );
    let sts = obj(
        "StatefulSet",
        "web",
        45 * MINUTE,
        json!({"spec": {"replicas": 5, "template": template(two_containers())},
               "status": {"replicas": 5, "readyReplicas": 1}}),
    );
    assert_eq!(
        cells("statefulsets.apps", &sts),
        [
            json!("web"),
            json!("1/5"),
            json!("45m"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2")
        ]
    );
}

#[test]
fn jobs() {
    let job = |spec: Value, status: Value| {
        obj("Job", "job1", HOUR, json!({"spec": spec, "status": status}))
    };
    let containers = json!({"spec": {"containers": two_containers()}});
    let j = job(
        json!({"completions": 2, "template": containers,
               "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "abc"}}}),
        json!({"succeeded": 1, "startTime": ago(10 * MINUTE)}),
    );
    assert_eq!(
        cells("jobs.batch", &j),
        [
            json!("job1"),
            json!("Running"),
            json!("1/2"),
            json!("10m"),
            json!("60m"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("batch.kubernetes.io/controller-uid=abc")
        ]
    );
    let done = job(
        json!({"completions": 2}),
        json!({"succeeded": 2, "startTime": ago(20 * MINUTE), "completionTime": ago(10 * MINUTE + 30),
               "conditions": [{"type": "Complete", "status": "True"}]}),
    );
    assert_eq!(
        cells("jobs.batch", &done)[1..4],
        [json!("Complete"), json!("2/2"), json!("9m30s")]
    );
    let failed = job(
        json!({"parallelism": 2}),
        json!({"failed": 6, "startTime": ago(DAY),
               "conditions": [{"type": "FailureTarget", "status": "True"},
                              {"type": "Failed", "status": "True"}]}),
    );
    assert_eq!(
        cells("jobs.batch", &failed)[1..4],
        [json!("Failed"), json!("0/1 of 2"), json!("24h")]
    );
    let suspended = job(
        json!({"completions": 3, "suspend": true}),
        json!({"conditions": [{"type": "Suspended", "status": "True"}]}),
    );
    assert_eq!(
        cells("jobs.batch", &suspended)[1..4],
        [json!("Suspended"), json!("0/3"), json!("")]
    );
    let mut deleting = job(json!({"parallelism": 1}), json!({}));
    deleting["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(
        cells("jobs.batch", &deleting)[1..3],
        [json!("Terminating"), json!("0/1")]
    );
    let target = job(
        json!({}),
        json!({"conditions": [{"type": "FailureTarget", "status": "True"}]}),
    );
    assert_eq!(cells("jobs.batch", &target)[1], "FailureTarget");
    // Empty selector.
    assert_eq!(cells("jobs.batch", &target)[7], "<none>");
}

#[test]
fn cron_jobs() {
    let cj = obj(
        "CronJob",
        "cronjob1",
        0,
        json!({
            "spec": {"schedule": "0/5 * * * ?", "suspend": false,
                     "jobTemplate": {"spec": {"template": {"spec": {"containers": two_containers()}}}}},
            "status": {"lastScheduleTime": ago(0)}
        }),
    );
    assert_eq!(
        cells("cronjobs.batch", &cj),
        [
            json!("cronjob1"),
            json!("0/5 * * * ?"),
            json!("<none>"),
            json!("False"),
            json!(0),
            json!("0s"),
            json!("0s"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("<none>")
        ]
    );
    let cj = obj(
        "CronJob",
        "nightly",
        30 * DAY,
        json!({
            "spec": {"schedule": "0 2 * * *", "timeZone": "Europe/Paris", "suspend": true},
            "status": {"active": [{"name": "nightly-1"}, {"name": "nightly-2"}]}
        }),
    );
    assert_eq!(
        cells("cronjobs.batch", &cj)[1..7],
        [
            json!("0 2 * * *"),
            json!("Europe/Paris"),
            json!("True"),
            json!(2),
            json!("<none>"),
            json!("30d")
        ]
    );
    // `suspend` missing: defaulted to false.
    let cj = obj("CronJob", "x", 0, json!({"spec": {"schedule": "@daily"}}));
    assert_eq!(cells("cronjobs.batch", &cj)[3], "False");
}

#[test]
fn services() {
    let svc = |name: &str, spec: Value, status: Value| {
        obj(
            "Service",
            name,
            DAY,
            json!({"spec": spec, "status": status}),
        )
    };
    let lb = svc(
        "service1",
        json!({"clusterIPs": ["1.2.3.4"], "type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}]}),
        json!({"loadBalancer": {"ingress": [{"ip": "3.4.5.6"}, {"ip": "2.3.4.5"}]}}),
    );
    assert_eq!(
        cells("services", &lb),
        [
            json!("service1"),
            json!("LoadBalancer"),
            json!("1.2.3.4"),
            json!("2.3.4.5,3.4.5.6"),
            json!("80/TCP"),
            json!("24h"),
            json!("<none>")
        ]
    );
    let pending = svc(
        "service2",
        json!({"clusterIP": "1.3.4.5", "type": "LoadBalancer",
               "ports": [{"port": 80, "protocol": "TCP"}, {"port": 8090, "protocol": "UDP"},
                         {"port": 8000, "protocol": "TCP"}, {"port": 7777, "protocol": "SCTP"}]}),
        json!({}),
    );
    assert_eq!(
        cells("services", &pending)[3..5],
        [
            json!("<pending>"),
            json!("80/TCP,8090/UDP,8000/TCP,7777/SCTP")
        ]
    );
    // The server prints wide: long ingress lists are not elided.
    let long = svc(
        "service4",
        json!({"clusterIPs": ["1.5.6.7"], "type": "LoadBalancer", "ports": [{"port": 80, "protocol": "TCP"}],
               "selector": {"foo": "bar"}}),
        json!({"loadBalancer": {"ingress": [{"ip": "2.3.4.5"}, {"ip": "3.4.5.6"},
                                             {"ip": "5.6.7.8", "hostname": "host5678"}]}}),
    );
    assert_eq!(cells("services", &long)[3], "2.3.4.5,3.4.5.6,5.6.7.8");
    assert_eq!(cells("services", &long)[6], "foo=bar");
    let with_external = svc(
        "lb-ext",
        json!({"clusterIP": "10.0.0.9", "type": "LoadBalancer", "externalIPs": ["9.9.9.9"],
               "ports": [{"port": 443, "nodePort": 31443, "protocol": "TCP"}]}),
        json!({"loadBalancer": {"ingress": [{"hostname": "lb.example.com"}]}}),
    );
    assert_eq!(
        cells("services", &with_external)[3..5],
        [json!("lb.example.com,9.9.9.9"), json!("443:31443/TCP")]
    );
    let node_port = svc(
        "np",
        json!({"clusterIP": "10.96.0.20", "clusterIPs": ["10.96.0.20"], "type": "NodePort",
               "ports": [{"port": 80, "nodePort": 30080}], "selector": {"app": "web", "a": "1"}}),
        json!({}),
    );
    assert_eq!(
        cells("services", &node_port)[1..],
        [
            json!("NodePort"),
            json!("10.96.0.20"),
            json!("<none>"),
            json!("80:30080/TCP"),
            json!("24h"),
            json!("a=1,app=web")
        ]
    );
    let headless = svc(
        "db",
        json!({"clusterIP": "None", "ports": [{"port": 5432, "protocol": "TCP"}], "externalIPs": ["1.1.1.1", "2.2.2.2"]}),
        json!({}),
    );
    assert_eq!(
        cells("services", &headless)[1..5],
        [
            json!("ClusterIP"),
            json!("None"),
            json!("1.1.1.1,2.2.2.2"),
            json!("5432/TCP")
        ]
    );
    let external_name = svc(
        "ext",
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
        json!({}),
    );
    assert_eq!(
        cells("services", &external_name)[1..5],
        [
            json!("ExternalName"),
            json!("<none>"),
            json!("db.example.com"),
            json!("<none>")
        ]
    );
    let odd = svc("odd", json!({"type": "Weird"}), json!({}));
    assert_eq!(cells("services", &odd)[3], "<unknown>");
}

#[test]
fn endpoints_and_slices() {
    let ep = obj(
        "Endpoints",
        "web",
        MINUTE,
        json!({"subsets": [
            {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}], "ports": [{"port": 80}, {"port": 443}]}
        ]}),
    );
    assert_eq!(
        cells("endpoints", &ep),
        [
            json!("web"),
            json!("10.0.0.1:80,10.0.0.2:80,10.0.0.1:443 + 1 more..."),
            json!("60s")
        ]
    );
    let headless = obj(
        "Endpoints",
        "h",
        MINUTE,
        json!({"subsets": [{"addresses": [{"ip": "fd00::1"}]}, {"addresses": [{"ip": "fd00::2"}], "ports": [{"port": 53}]}]}),
    );
    assert_eq!(cells("endpoints", &headless)[1], "fd00::1,[fd00::2]:53");
    let none = obj("Endpoints", "n", MINUTE, json!({}));
    assert_eq!(cells("endpoints", &none)[1], "<none>");
    let empty = obj(
        "Endpoints",
        "e",
        MINUTE,
        json!({"subsets": [{"ports": [{"port": 80}]}]}),
    );
    assert_eq!(cells("endpoints", &empty)[1], "");

    let slice = obj(
        "EndpointSlice",
        "web-abc12",
        MINUTE,
        json!({
            "addressType": "IPv4",
            "ports": [{"name": "http", "port": 80, "protocol": "TCP"}, {"name": "named"}, {},
                      {"port": 9090}],
            "endpoints": [{"addresses": ["10.1.0.1"]}, {"addresses": ["10.1.0.2", "10.1.0.3", "10.1.0.4"]}]
        }),
    );
    assert_eq!(
        cells("endpointslices.discovery.k8s.io", &slice),
        [
            json!("web-abc12"),
            json!("IPv4"),
            json!("80,named,* + 1 more..."),
            json!("10.1.0.1,10.1.0.2,10.1.0.3 + 1 more..."),
            json!("60s")
        ]
    );
    let empty = obj("EndpointSlice", "e", MINUTE, json!({"addressType": "IPv6"}));
    assert_eq!(
        cells("endpointslices.discovery.k8s.io", &empty)[2..4],
        [json!("<unset>"), json!("<unset>")]
    );
}

#[test]
fn nodes() {
    let node = |name: &str, extra: Value| obj("Node", name, 120 * DAY, extra);
    let status = |n: &Value| cells("nodes", n)[1].as_str().unwrap().to_string();
    let ready = json!({"conditions": [{"type": "Ready", "status": "True"}]});
    assert_eq!(status(&node("foo1", json!({"status": ready}))), "Ready");
    assert_eq!(
        status(&node(
            "foo2",
            json!({"spec": {"unschedulable": true}, "status": ready})
        )),
        "Ready,SchedulingDisabled"
    );
    assert_eq!(
        status(&node(
            "foo4",
            json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}})
        )),
        "NotReady"
    );
    assert_eq!(
        status(&node(
            "foo5",
            json!({"spec": {"unschedulable": true}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})
        )),
        "NotReady,SchedulingDisabled"
    );
    assert_eq!(
        status(&node(
            "foo6",
            json!({"status": {"conditions": [{"type": "InvalidValue", "status": "True"}]}})
        )),
        "Unknown"
    );
    assert_eq!(
        status(&node(
            "foo9",
            json!({"spec": {"unschedulable": true}, "status": {"conditions": [{}]}})
        )),
        "Unknown,SchedulingDisabled"
    );

    let full = node(
        "cp-1",
        json!({
            "metadata": {"name": "cp-1", "creationTimestamp": ago(120 * DAY), "labels": {
                "node-role.kubernetes.io/master": "", "node-role.kubernetes.io/control-plane": "",
                "node-role.kubernetes.io/proxy": "", "kubernetes.io/role": "node", "kubernetes.io/os": "linux"}},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "ExternalIP", "address": "2.2.2.2"}, {"type": "InternalIP", "address": "3.3.3.3"},
                              {"type": "ExternalIP", "address": "4.4.4.4"}, {"type": "Hostname", "address": "cp-1"}],
                "nodeInfo": {"kubeletVersion": "v1.33.1", "osImage": "Debian GNU/Linux 13 (trixie)",
                             "kernelVersion": "6.12.0-1-amd64", "containerRuntimeVersion": "containerd://2.1.1"}
            }
        }),
    );
    assert_eq!(
        cells("nodes", &full),
        [
            json!("cp-1"),
            json!("Ready"),
            json!("control-plane,master,node,proxy"),
            json!("120d"),
            json!("v1.33.1"),
            json!("3.3.3.3"),
            json!("2.2.2.2"),
            json!("Debian GNU/Linux 13 (trixie)"),
            json!("6.12.0-1-amd64"),
            json!("containerd://2.1.1")
        ]
    );
    let bare = node("127.0.0.1", json!({}));
    assert_eq!(
        cells("nodes", &bare),
        [
            json!("127.0.0.1"),
            json!("Unknown"),
            json!("<none>"),
            json!("120d"),
            json!(""),
            json!("<none>"),
            json!("<none>"),
            json!("<unknown>"),
            json!("<unknown>"),
            json!("<unknown>")
        ]
    );
}

#[test]
fn core_events() {
    let event = |extra: Value| {
        let mut e = obj(
            "Event",
            "event1",
            3 * DAY,
            json!({"apiVersion": "v1", "type": "Normal", "reason": "Event Reason",
                   "message": "Message Data\n", "involvedObject": {}}),
        );
        for (k, v) in extra.as_object().unwrap() {
            e[k] = v.clone();
        }
        e
    };
    let e = event(json!({
        "source": {"component": "kubelet", "host": "Node1"},
        "firstTimestamp": ago(3 * DAY), "lastTimestamp": ago(2 * DAY), "count": 6
    }));
    assert_eq!(
        cells("events", &e),
        [
            json!("2d"),
            json!("Normal"),
            json!("Event Reason"),
            json!(""),
            json!(""),
            json!("kubelet, Node1"),
            json!("Message Data"),
            json!("3d"),
            json!(6),
            json!("event1")
        ]
    );
    // Without firstTimestamp: the event time.
    let e = event(
        json!({"eventTime": format!("{}.000000Z", &ago(3 * DAY)[..19]),
                         "lastTimestamp": ago(2 * DAY), "count": 1}),
    );
    assert_eq!(cells("events", &e)[7], "3d");
    // Without lastTimestamp: first seen.
    let e = event(json!({"firstTimestamp": ago(3 * DAY)}));
    assert_eq!(cells("events", &e)[0], "3d");
    assert_eq!(cells("events", &e)[8], 1);
    // A series.
    let e = event(json!({"eventTime": ago(3 * DAY),
                         "series": {"count": 2, "lastObservedTime": ago(2 * DAY)}}));
    let c = cells("events", &e);
    assert_eq!(
        (&c[0], &c[7], &c[8]),
        (&json!("2d"), &json!("3d"), &json!(2))
    );
    // Reporting controller and instance stand in for an empty source.
    let e = event(
        json!({"reportingComponent": "kubelet", "reportingInstance": "test",
                         "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{app}"}}),
    );
    let c = cells("events", &e);
    assert_eq!(c[3], "pod/web-0");
    assert_eq!(c[4], "spec.containers{app}");
    assert_eq!(c[5], "kubelet, test");
    assert_eq!(c[0], "<unknown>");
    let e = event(json!({"involvedObject": {"kind": "Node"}, "source": {"component": "kubelet"}}));
    let c = cells("events", &e);
    assert_eq!((&c[3], &c[5]), (&json!("node"), &json!("kubelet")));
}

#[test]
fn events_api_events() {
    let e = json!({
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        "metadata": meta("web-0.17d", 2 * HOUR),
        "eventTime": format!("{}.123456Z", &ago(2 * HOUR)[..19]),
        "reportingController": "default-scheduler",
        "reportingInstance": "default-scheduler-cp-1",
        "action": "Binding",
        "reason": "Scheduled",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "web-0"},
        "note": "Successfully assigned default/web-0 to node-1",
        "type": "Normal"
    });
    // The event time is 0.123456s younger than two hours.
    assert_eq!(
        cells("events.events.k8s.io", &e),
        [
            json!("119m"),
            json!("Normal"),
            json!("Scheduled"),
            json!("pod/web-0"),
            json!(""),
            json!("default-scheduler, default-scheduler-cp-1"),
            json!("Successfully assigned default/web-0 to node-1"),
            json!("119m"),
            json!(1),
            json!("web-0.17d")
        ]
    );
    let old_style = json!({
        "apiVersion": "events.k8s.io/v1",
        "metadata": meta("x", HOUR),
        "deprecatedFirstTimestamp": ago(HOUR),
        "deprecatedLastTimestamp": ago(MINUTE * 5),
        "deprecatedCount": 4,
        "deprecatedSource": {"component": "kubelet", "host": "node-1"},
        "regarding": {"kind": "Pod", "name": "p"},
        "type": "Warning",
        "reason": "BackOff",
        "note": "Back-off restarting failed container"
    });
    let c = cells("events.events.k8s.io", &old_style);
    assert_eq!(
        c[..9],
        [
            json!("5m"),
            json!("Warning"),
            json!("BackOff"),
            json!("pod/p"),
            json!(""),
            json!("kubelet, node-1"),
            json!("Back-off restarting failed container"),
            json!("60m"),
            json!(4)
        ]
    );
}

#[test]
fn config_and_identity() {
    let cm = obj(
        "ConfigMap",
        "kube-root-ca.crt",
        DAY,
        json!({"data": {"ca.crt": "…", "x": "y"}, "binaryData": {"b": "AA=="}}),
    );
    assert_eq!(
        cells("configmaps", &cm),
        [json!("kube-root-ca.crt"), json!(3), json!("24h")]
    );
    let secret = obj(
        "Secret",
        "tls",
        DAY,
        json!({"type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}}),
    );
    assert_eq!(
        cells("secrets", &secret),
        [
            json!("tls"),
            json!("kubernetes.io/tls"),
            json!(2),
            json!("24h")
        ]
    );
    let opaque = obj("Secret", "o", DAY, json!({}));
    assert_eq!(cells("secrets", &opaque)[1..3], [json!("Opaque"), json!(0)]);
    let sa = obj(
        "ServiceAccount",
        "sa1",
        0,
        json!({"secrets": [{"name": "Secret1"}, {"name": "Secret2"}]}),
    );
    assert_eq!(
        cells("serviceaccounts", &sa),
        [json!("sa1"), json!(2), json!("0s")]
    );
    let ns = obj(
        "Namespace",
        "kube-system",
        100 * DAY,
        json!({"status": {"phase": "Active"}}),
    );
    assert_eq!(
        cells("namespaces", &ns),
        [json!("kube-system"), json!("Active"), json!("100d")]
    );
    let mut gone = obj(
        "Namespace",
        "gone",
        100 * DAY,
        json!({"status": {"phase": "Terminating"}}),
    );
    assert_eq!(cells("namespaces", &gone)[1], "Terminating");
    gone.as_object_mut().unwrap().remove("status");
    assert_eq!(cells("namespaces", &gone)[1], "Active");
}

#[test]
fn volumes_and_claims() {
    let pv = obj(
        "PersistentVolume",
        "pv-1",
        DAY,
        json!({
            "spec": {"capacity": {"storage": "1536Mi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                     "claimRef": {"namespace": "default", "name": "data"}, "storageClassName": "standard",
                     "persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Block"},
            "status": {"phase": "Bound"}
        }),
    );
    assert_eq!(
        cells("persistentvolumes", &pv),
        [
            json!("pv-1"),
            json!("1536Mi"),
            json!("RWO,RWX"),
            json!("Delete"),
            json!("Bound"),
            json!("default/data"),
            json!("standard"),
            json!("<unset>"),
            json!(""),
            json!("24h"),
            json!("Block")
        ]
    );
    let mut released = obj(
        "PersistentVolume",
        "pv-2",
        DAY,
        json!({
            "metadata": {"name": "pv-2", "creationTimestamp": ago(DAY),
                         "annotations": {"volume.beta.kubernetes.io/storage-class": "beta"}},
            "spec": {"capacity": {"storage": "2048Mi"}, "storageClassName": "ignored",
                     "volumeAttributesClassName": "gold"},
            "status": {"phase": "Failed", "reason": "Recycling failed"}
        }),
    );
    assert_eq!(
        cells("persistentvolumes", &released),
        [
            json!("pv-2"),
            json!("2Gi"),
            json!(""),
            json!("Retain"),
            json!("Failed"),
            json!(""),
            json!("beta"),
            json!("gold"),
            json!("Recycling failed"),
            json!("24h"),
            json!("Filesystem")
        ]
    );
    released["metadata"]["deletionTimestamp"] = json!(ago(1));
    assert_eq!(cells("persistentvolumes", &released)[4], "Terminating");
    let bare = obj("PersistentVolume", "bare", DAY, json!({}));
    assert_eq!(
        cells("persistentvolumes", &bare)[1..5],
        [json!("0"), json!(""), json!("Retain"), json!("Pending")]
    );

    let bound = obj(
        "PersistentVolumeClaim",
        "data",
        DAY,
        json!({
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                     "storageClassName": "standard", "volumeName": "pv-1", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "accessModes": ["ReadWriteOnce", "ReadWriteOncePod"],
                       "capacity": {"storage": "1024Mi"}}
        }),
    );
    assert_eq!(
        cells("persistentvolumeclaims", &bound),
        [
            json!("data"),
            json!("Bound"),
            json!("pv-1"),
            json!("1Gi"),
            json!("RWO,RWOP"),
            json!("standard"),
            json!("<unset>"),
            json!("24h"),
            json!("Filesystem")
        ]
    );
    let pending = obj(
        "PersistentVolumeClaim",
        "pending",
        MINUTE,
        json!({"spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}}),
    );
    assert_eq!(
        cells("persistentvolumeclaims", &pending),
        [
            json!("pending"),
            json!("Pending"),
            json!(""),
            json!(""),
            json!(""),
            json!(""),
            json!("<unset>"),
            json!("60s"),
            json!("Filesystem")
        ]
    );
}

#[test]
fn quotas_budgets_revisions_templates() {
    let quota = obj(
        "ResourceQuota",
        "compute",
        HOUR,
        json!({"status": {
            "hard": {"pods": "10", "requests.cpu": "1", "requests.memory": "1Gi", "limits.memory": "2Gi", "limits": "3"},
            "used": {"pods": "1", "requests.cpu": "0.5", "requests.memory": "512Mi"}
        }}),
    );
    assert_eq!(
        cells("resourcequotas", &quota),
        [
            json!("compute"),
            json!("limits: 0/3, pods: 1/10, requests.cpu: 500m/1, requests.memory: 512Mi/1Gi"),
            json!("limits.memory: 0/2Gi"),
            json!("60m")
        ]
    );
    let pdb = obj(
        "PodDisruptionBudget",
        "web",
        HOUR,
        json!({"spec": {"minAvailable": 2}, "status": {"disruptionsAllowed": 1}}),
    );
    assert_eq!(
        cells("poddisruptionbudgets.policy", &pdb),
        [
            json!("web"),
            json!("2"),
            json!("N/A"),
            json!(1),
            json!("60m")
        ]
    );
    let pdb = obj(
        "PodDisruptionBudget",
        "db",
        HOUR,
        json!({"spec": {"maxUnavailable": "25%"}}),
    );
    assert_eq!(
        cells("poddisruptionbudgets.policy", &pdb)[1..4],
        [json!("N/A"), json!("25%"), json!(0)]
    );
    let rev = obj(
        "ControllerRevision",
        "web-6c9f8d7b5",
        HOUR,
        json!({
            "metadata": {"name": "web-6c9f8d7b5", "creationTimestamp": ago(HOUR), "ownerReferences": [
                {"apiVersion": "v1", "kind": "Pod", "name": "other", "uid": "1"},
                {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "web", "uid": "2", "controller": true}
            ]},
            "revision": 3
        }),
    );
    assert_eq!(
        cells("controllerrevisions.apps", &rev),
        [
            json!("web-6c9f8d7b5"),
            json!("statefulset.apps/web"),
            json!(3),
            json!("60m")
        ]
    );
    let orphan = obj("ControllerRevision", "o", HOUR, json!({"revision": 1}));
    assert_eq!(cells("controllerrevisions.apps", &orphan)[1], "<none>");
    let core_owner = obj(
        "ControllerRevision",
        "c",
        HOUR,
        json!({"metadata": {"name": "c", "ownerReferences": [
            {"apiVersion": "v1", "kind": "ReplicationController", "name": "rc", "controller": true}]}}),
    );
    assert_eq!(
        cells("controllerrevisions.apps", &core_owner)[1],
        "replicationcontroller/rc"
    );

    let pt = obj(
        "PodTemplate",
        "pod-template-2",
        HOUR,
        json!({"template": {"metadata": {"labels": {"foo": "bar"}}, "spec": {"containers": two_containers()}}}),
    );
    assert_eq!(
        cells("podtemplates", &pt),
        [
            json!("pod-template-2"),
            json!("fake-container1,fake-container2"),
            json!("fake-image1,fake-image2"),
            json!("foo=bar")
        ]
    );
    let empty = obj(
        "PodTemplate",
        "pod-template-1",
        HOUR,
        json!({"template": {"spec": {"containers": []}}}),
    );
    assert_eq!(
        cells("podtemplates", &empty),
        [
            json!("pod-template-1"),
            json!(""),
            json!(""),
            json!("<none>")
        ]
    );
}

#[test]
fn rbac_leases_priority_classes() {
    let subjects = json!([
        {"kind": "User", "name": "alice"},
        {"kind": "ServiceAccount", "namespace": "kube-system", "name": "deployer"},
        {"kind": "Group", "name": "system:masters"},
        {"kind": "User", "name": "bob"},
        {"kind": "Other", "name": "x"}
    ]);
    let rb = obj(
        "RoleBinding",
        "binding1",
        DAY,
        json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "extension-apiserver-authentication-reader"},
               "subjects": subjects}),
    );
    assert_eq!(
        cells("rolebindings.rbac.authorization.k8s.io", &rb),
        [
            json!("binding1"),
            json!("Role/extension-apiserver-authentication-reader"),
            json!("24h"),
            json!("alice, bob"),
            json!("system:masters"),
            json!("kube-system/deployer")
        ]
    );
    let crb = obj(
        "ClusterRoleBinding",
        "cluster-admin",
        DAY,
        json!({"roleRef": {"kind": "ClusterRole", "name": "cluster-admin"}}),
    );
    assert_eq!(
        cells("clusterrolebindings.rbac.authorization.k8s.io", &crb),
        [
            json!("cluster-admin"),
            json!("ClusterRole/cluster-admin"),
            json!("24h"),
            json!(""),
            json!(""),
            json!("")
        ]
    );
    let lease = obj(
        "Lease",
        "kube-scheduler",
        DAY,
        json!({"spec": {"holderIdentity": "cp-1_0c5e"}}),
    );
    assert_eq!(
        cells("leases.coordination.k8s.io", &lease),
        [json!("kube-scheduler"), json!("cp-1_0c5e"), json!("24h")]
    );
    let pc = obj(
        "PriorityClass",
        "system-node-critical",
        DAY,
        json!({"value": 2000001000, "globalDefault": false}),
    );
    assert_eq!(
        cells("priorityclasses.scheduling.k8s.io", &pc),
        [
            json!("system-node-critical"),
            json!(2000001000),
            json!(false),
            json!("24h"),
            json!("PreemptLowerPriority")
        ]
    );
    let pc = obj(
        "PriorityClass",
        "batch",
        DAY,
        json!({"value": -5, "globalDefault": true, "preemptionPolicy": "Never"}),
    );
    assert_eq!(
        cells("priorityclasses.scheduling.k8s.io", &pc)[1..],
        [json!(-5), json!(true), json!("24h"), json!("Never")]
    );
}
