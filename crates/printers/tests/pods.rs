//! Pod rows: upstream's `printPod` cases (TestPrintPod, TestPrintPodWithRestartableInitContainer,
//! TestPrintPodwide, TestPrintPodConditions, TestPrintNonTerminatedPod) on our own objects,
//! plus the statuses `kubectl get pods` shows in practice.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::*;
use printers::IncludeObject;
use serde_json::{Value, json};

fn pod(name: &str, spec: Value, status: Value) -> Value {
    let mut p = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": meta(name, 5 * MINUTE),
        "spec": spec,
        "status": status,
    });
    if p["spec"].get("containers").is_none() {
        p["spec"]["containers"] = json!([{"name": "app", "image": "nginx:1.27"}]);
    }
    p
}

fn containers(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"name": format!("c{i}"), "image": "busybox"}))
            .collect(),
    )
}

/// `[name, ready, status, restarts, age]`.
fn row(p: &Value) -> Vec<String> {
    cells("pods", p)
        .iter()
        .take(5)
        .map(|c| c.as_str().unwrap().to_string())
        .collect()
}

fn running() -> Value {
    json!({"running": {"startedAt": ago(4 * MINUTE)}})
}

#[test]
fn readiness_restarts_and_phase() {
    // Two containers, one ready and running: phase shown, restarts summed.
    let p = pod(
        "test1",
        json!({"containers": containers(2)}),
        json!({"phase": "podPhase", "containerStatuses": [
            {"name": "c0", "ready": true, "restartCount": 3, "state": running()},
            {"name": "c1", "restartCount": 3}
        ]}),
    );
    assert_eq!(row(&p), ["test1", "1/2", "podPhase", "6", "5m"]);

    // A waiting reason overrides the phase.
    let p = pod(
        "test2",
        json!({"containers": containers(2)}),
        json!({"phase": "podPhase", "containerStatuses": [
            {"ready": true, "restartCount": 3, "state": running()},
            {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}}
        ]}),
    );
    assert_eq!(
        row(&p),
        ["test2", "1/2", "ContainerWaitingReason", "6", "5m"]
    );

    // The first container's reason wins (statuses are read last to first).
    let p = pod(
        "test3",
        json!({"containers": containers(2)}),
        json!({"phase": "podPhase", "containerStatuses": [
            {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}},
            {"restartCount": 3, "state": {"terminated": {"reason": "ContainerTerminatedReason"}}}
        ]}),
    );
    assert_eq!(
        row(&p),
        ["test3", "0/2", "ContainerWaitingReason", "6", "5m"]
    );

    // Ready without running is not counted.
    let p = pod(
        "test4",
        json!({"containers": containers(2)}),
        json!({"phase": "podPhase", "containerStatuses": [
            {"ready": true, "restartCount": 3, "state": running()},
            {"ready": true, "restartCount": 3}
        ]}),
    );
    assert_eq!(row(&p), ["test4", "1/2", "podPhase", "6", "5m"]);

    // status.reason overrides the phase.
    let p = pod(
        "test5",
        json!({"containers": containers(2)}),
        json!({"reason": "podReason", "phase": "podPhase", "containerStatuses": [
            {"ready": true, "restartCount": 3, "state": running()},
            {"ready": true, "restartCount": 3}
        ]}),
    );
    assert_eq!(row(&p), ["test5", "1/2", "podReason", "6", "5m"]);
}

#[test]
fn completed_container_next_to_running_one() {
    let statuses = json!([
        {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
        {"ready": true, "restartCount": 3, "state": running()}
    ]);
    let p = pod(
        "test6",
        json!({"containers": containers(2)}),
        json!({"phase": "Running", "containerStatuses": statuses}),
    );
    assert_eq!(row(&p), ["test6", "1/2", "NotReady", "6", "5m"]);
    let p = pod(
        "test6",
        json!({"containers": containers(2)}),
        json!({"phase": "Running", "containerStatuses": statuses, "conditions": [
            {"type": "Ready", "status": "True"}
        ]}),
    );
    assert_eq!(row(&p), ["test6", "1/2", "Running", "6", "5m"]);
}

#[test]
fn init_containers() {
    let restarted_10s_ago = json!({"terminated": {"finishedAt": ago(10), "exitCode": 1}});
    // One init container restarting, the container not running.
    let p = pod(
        "test7",
        json!({"initContainers": containers(1), "containers": containers(1)}),
        json!({"phase": "podPhase",
            "initContainerStatuses": [{"restartCount": 3, "state": running(), "lastState": restarted_10s_ago}],
            "containerStatuses": [{"state": {"waiting": {}}}]}),
    );
    assert_eq!(row(&p), ["test7", "0/1", "Init:0/1", "3 (10s ago)", "5m"]);

    // Two init containers, the first restarting.
    let p = pod(
        "test8",
        json!({"initContainers": containers(2), "containers": containers(1)}),
        json!({"phase": "podPhase",
            "initContainerStatuses": [
                {"restartCount": 3, "state": running(), "lastState": restarted_10s_ago},
                {"state": {"waiting": {}}}
            ],
            "containerStatuses": [{"state": {"waiting": {}}}]}),
    );
    assert_eq!(row(&p), ["test8", "0/1", "Init:0/2", "3 (10s ago)", "5m"]);

    // The first completed, the second restarting.
    let p = pod(
        "test9",
        json!({"initContainers": containers(2), "containers": containers(1)}),
        json!({"phase": "podPhase",
            "initContainerStatuses": [
                {"state": {"terminated": {}}},
                {"restartCount": 3, "state": running(), "lastState": restarted_10s_ago}
            ],
            "containerStatuses": [{"state": {"waiting": {}}}]}),
    );
    assert_eq!(row(&p), ["test9", "0/1", "Init:1/2", "3 (10s ago)", "5m"]);

    // Restarts of a completed init container count, the latest restart is shown.
    let p = pod(
        "test10",
        json!({"initContainers": containers(2), "containers": containers(1)}),
        json!({"phase": "podPhase",
            "initContainerStatuses": [
                {"restartCount": 2, "state": {"terminated": {}},
                 "lastState": {"terminated": {"finishedAt": ago(2 * MINUTE)}}},
                {"restartCount": 3, "state": running(), "lastState": restarted_10s_ago}
            ],
            "containerStatuses": [{"state": {"waiting": {}}}]}),
    );
    assert_eq!(row(&p), ["test10", "0/1", "Init:1/2", "5 (10s ago)", "5m"]);

    // Once initialized, only the containers' restarts count.
    let p = pod(
        "test11",
        json!({"initContainers": containers(1), "containers": containers(1)}),
        json!({"phase": "Running",
        "initContainerStatuses": [
            {"restartCount": 2, "state": {"terminated": {}},
             "lastState": {"terminated": {"finishedAt": ago(2 * MINUTE)}}}
        ],
        "containerStatuses": [
            {"restartCount": 4, "state": running(),
             "lastState": {"terminated": {"finishedAt": ago(20)}}}
        ]}),
    );
    assert_eq!(row(&p), ["test11", "0/1", "Running", "4 (20s ago)", "5m"]);
}

#[test]
fn init_container_failures() {
    let init = |state: Value| {
        pod(
            "init",
            json!({"initContainers": containers(2), "containers": containers(1)}),
            json!({"phase": "Pending",
                "initContainerStatuses": [{"name": "c0", "state": state, "restartCount": 1,
                    "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(30)}}}],
                "containerStatuses": [{"name": "c0", "state": {"waiting": {"reason": "PodInitializing"}}}]}),
        )
    };
    let status = |p: &Value| row(p)[2].clone();
    assert_eq!(
        status(&init(
            json!({"terminated": {"reason": "Error", "exitCode": 1}})
        )),
        "Init:Error"
    );
    assert_eq!(
        status(&init(json!({"terminated": {"exitCode": 2}}))),
        "Init:ExitCode:2"
    );
    assert_eq!(
        status(&init(json!({"terminated": {"exitCode": 137, "signal": 9}}))),
        "Init:Signal:9"
    );
    assert_eq!(
        status(&init(json!({"waiting": {"reason": "CrashLoopBackOff"}}))),
        "Init:CrashLoopBackOff"
    );
    assert_eq!(
        status(&init(json!({"waiting": {"reason": "PodInitializing"}}))),
        "Init:0/2"
    );
    assert_eq!(row(&init(json!({"running": {}})))[3], "1 (30s ago)");

    // All init containers done: the main containers' state shows.
    let p = pod(
        "initialized",
        json!({"initContainers": containers(1), "containers": containers(1)}),
        json!({"phase": "Pending",
            "initContainerStatuses": [{"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}],
            "containerStatuses": [{"state": {"waiting": {"reason": "PodInitializing"}}}]}),
    );
    assert_eq!(row(&p)[2], "PodInitializing");
}

#[test]
fn container_states_kubectl_shows() {
    let one = |state: Value, restarts: i64| {
        pod(
            "p",
            json!({}),
            json!({"phase": "Pending", "containerStatuses": [
                {"name": "app", "state": state, "restartCount": restarts, "ready": false,
                 "lastState": if restarts > 0 { json!({"terminated": {"exitCode": 1, "finishedAt": ago(3 * DAY)}}) } else { json!({}) }}
            ]}),
        )
    };
    let waiting = |reason: &str| json!({"waiting": {"reason": reason, "message": "…"}});
    assert_eq!(
        row(&one(waiting("ContainerCreating"), 0))[2],
        "ContainerCreating"
    );
    assert_eq!(row(&one(waiting("ErrImagePull"), 0))[2], "ErrImagePull");
    assert_eq!(
        row(&one(waiting("ImagePullBackOff"), 0))[2],
        "ImagePullBackOff"
    );
    let crash = one(waiting("CrashLoopBackOff"), 7);
    assert_eq!(row(&crash)[2..4], ["CrashLoopBackOff", "7 (3d ago)"]);
    assert_eq!(
        row(&one(
            json!({"terminated": {"reason": "OOMKilled", "exitCode": 137}}),
            0
        ))[2],
        "OOMKilled"
    );
    assert_eq!(
        row(&one(json!({"terminated": {"exitCode": 3}}), 0))[2],
        "ExitCode:3"
    );
    assert_eq!(
        row(&one(
            json!({"terminated": {"exitCode": 0, "signal": 15}}),
            0
        ))[2],
        "Signal:15"
    );
    // Restarts without a recorded termination time: just the count.
    let p = pod(
        "p",
        json!({}),
        json!({"phase": "Running", "containerStatuses": [{"restartCount": 2, "ready": true, "state": running()}]}),
    );
    assert_eq!(row(&p)[1..4], ["1/1", "Running", "2"]);
}

#[test]
fn restart_ages() {
    // One container restarted five days ago.
    let p = pod(
        "test12",
        json!({"containers": containers(1)}),
        json!({"phase": "Running", "containerStatuses": [
            {"ready": true, "restartCount": 3, "state": running(),
             "lastState": {"terminated": {"finishedAt": ago(5 * DAY)}}}
        ]}),
    );
    assert_eq!(row(&p), ["test12", "1/1", "Running", "3 (5d ago)", "5m"]);

    // The most recent restart of all containers is shown.
    let p = pod(
        "test14",
        json!({"containers": containers(2)}),
        json!({"phase": "Running", "containerStatuses": [
            {"ready": true, "restartCount": 6, "state": running(),
             "lastState": {"terminated": {"finishedAt": ago(5 * DAY)}}},
            {"ready": true, "restartCount": 3, "state": running(),
             "lastState": {"terminated": {"finishedAt": ago(20 * DAY)}}}
        ]}),
    );
    assert_eq!(row(&p), ["test14", "2/2", "Running", "9 (5d ago)", "5m"]);
}

#[test]
fn scheduling_gated_completed_failed_terminating() {
    let p = pod(
        "test15",
        json!({"containers": containers(2), "schedulingGates": [{"name": "example.com/gate"}]}),
        json!({"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}
        ]}),
    );
    assert_eq!(row(&p), ["test15", "0/2", "SchedulingGated", "0", "5m"]);

    let succeeded = pod(
        "test16",
        json!({}),
        json!({"phase": "Succeeded", "containerStatuses": [
            {"state": {"terminated": {"reason": "Completed", "exitCode": 0}}}
        ]}),
    );
    let t = table("pods", &[&succeeded], IncludeObject::None.into());
    assert_eq!(
        t["rows"][0]["conditions"],
        json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
                "message": "The pod has completed successfully."}])
    );
    assert_eq!(row(&succeeded), ["test16", "0/1", "Completed", "0", "5m"]);

    let failed = pod(
        "test17",
        json!({}),
        json!({"phase": "Failed", "containerStatuses": [
            {"state": {"terminated": {"reason": "Error", "exitCode": 1}}}
        ]}),
    );
    let t = table("pods", &[&failed], IncludeObject::None.into());
    assert_eq!(t["rows"][0]["conditions"][0]["reason"], "Failed");
    assert_eq!(t["rows"][0]["conditions"][0]["message"], "The pod failed.");
    assert_eq!(row(&failed), ["test17", "0/1", "Error", "0", "5m"]);

    // Deletion: terminal pods keep their status, others show Terminating.
    let mut done = succeeded.clone();
    done["metadata"]["deletionTimestamp"] = json!(ago(10));
    assert_eq!(row(&done)[2], "Completed");
    let mut deleting = pod(
        "test19",
        json!({}),
        json!({"phase": "Running", "containerStatuses": [{"state": running()}]}),
    );
    deleting["metadata"]["deletionTimestamp"] = json!(ago(10));
    assert_eq!(row(&deleting), ["test19", "0/1", "Terminating", "0", "5m"]);
    let mut pending = pod("test20", json!({}), json!({"phase": "Pending"}));
    pending["metadata"]["deletionTimestamp"] = json!(ago(10));
    assert_eq!(row(&pending)[2], "Terminating");

    // A pod on an unreachable node being deleted.
    let mut lost = pod(
        "lost",
        json!({}),
        json!({"phase": "Running", "reason": "NodeLost"}),
    );
    assert_eq!(row(&lost)[2], "NodeLost");
    lost["metadata"]["deletionTimestamp"] = json!(ago(10));
    assert_eq!(row(&lost)[2], "Unknown");

    // No status at all.
    let bare = pod("bare", json!({}), json!({}));
    assert_eq!(row(&bare), ["bare", "0/1", "", "0", "5m"]);
}

#[test]
fn restartable_init_containers() {
    let sidecars = json!([
        {"name": "restartable-init-1", "image": "envoy", "restartPolicy": "Always"},
        {"name": "restartable-init-2", "image": "envoy", "restartPolicy": "Always"}
    ]);
    // The first running but not started.
    let p = pod(
        "test1",
        json!({"initContainers": sidecars, "containers": containers(1)}),
        json!({"phase": "Pending",
            "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": false,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": {"waiting": {}}, "started": false}
            ],
            "containerStatuses": [{"state": {"waiting": {}}}],
            "conditions": [{"type": "Initialized", "status": "False"}]}),
    );
    assert_eq!(row(&p), ["test1", "0/3", "Init:0/2", "3 (10s ago)", "5m"]);

    // The first started, the second running but not started.
    let p = pod(
        "test1",
        json!({"initContainers": sidecars, "containers": containers(1)}),
        json!({"phase": "Pending",
            "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": true,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": running(), "started": false}
            ],
            "containerStatuses": [{"state": {"waiting": {}}}],
            "conditions": [{"type": "Initialized", "status": "False"}]}),
    );
    assert_eq!(row(&p), ["test1", "0/3", "Init:1/2", "3 (10s ago)", "5m"]);

    // Both started, the container running.
    let p = pod(
        "test2",
        json!({"initContainers": sidecars, "containers": containers(1)}),
        json!({"phase": "Running",
            "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3, "state": running(), "started": true,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2", "state": running(), "started": true}
            ],
            "containerStatuses": [
                {"ready": true, "restartCount": 4, "state": running(),
                 "lastState": {"terminated": {"finishedAt": ago(20)}}}
            ],
            "conditions": [{"type": "Initialized", "status": "True"}]}),
    );
    assert_eq!(row(&p), ["test2", "1/3", "Running", "7 (10s ago)", "5m"]);

    // Sidecars killed, the container completed.
    let p = pod(
        "test3",
        json!({"initContainers": sidecars, "containers": containers(1)}),
        json!({"phase": "Succeeded",
            "initContainerStatuses": [
                {"name": "restartable-init-1", "restartCount": 3,
                 "state": {"terminated": {"reason": "Error", "exitCode": 137}}, "started": false,
                 "lastState": {"terminated": {"finishedAt": ago(10)}}},
                {"name": "restartable-init-2",
                 "state": {"terminated": {"reason": "Error", "exitCode": 137}}, "started": false}
            ],
            "containerStatuses": [
                {"restartCount": 4, "state": {"terminated": {"reason": "Completed", "exitCode": 0}},
                 "lastState": {"terminated": {"finishedAt": ago(20)}}}
            ],
            "conditions": [{"type": "Initialized", "status": "True"}]}),
    );
    assert_eq!(row(&p), ["test3", "0/3", "Completed", "7 (10s ago)", "5m"]);

    // Statuses of containers the spec does not have.
    let p = pod(
        "test4",
        json!({"initContainers": [
                {"name": "init1", "image": "initimage"},
                {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}
            ],
            "containers": [{"name": "container1", "image": "containerimage"}]}),
        json!({"phase": "Running",
            "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
            "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]}),
    );
    assert_eq!(row(&p), ["test4", "0/2", "Init:0/2", "0", "5m"]);
}

#[test]
fn wide_columns() {
    let gates = json!([
        {"conditionType": "condition1"}, {"conditionType": "condition2"}, {"conditionType": "condition3"}
    ]);
    let p = pod(
        "test1",
        json!({"containers": containers(2), "nodeName": "test1", "readinessGates": gates}),
        json!({"phase": "podPhase",
            "conditions": [
                {"type": "condition1", "status": "False"},
                {"type": "condition2", "status": "True"}
            ],
            "podIP": "1.1.1.1",
            "podIPs": [{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}],
            "containerStatuses": [
                {"ready": true, "restartCount": 3, "state": running()},
                {"restartCount": 3}
            ],
            "nominatedNodeName": "node1"}),
    );
    assert_eq!(
        cells("pods", &p),
        vec![
            json!("test1"),
            json!("1/2"),
            json!("podPhase"),
            json!("6"),
            json!("5m"),
            json!("1.1.1.1"),
            json!("test1"),
            json!("node1"),
            json!("1/3")
        ]
    );
    // Only podIPs set.
    let p = pod("ips", json!({}), json!({"podIPs": [{"ip": "10.244.0.7"}]}));
    assert_eq!(cells("pods", &p)[5], "10.244.0.7");

    let p = pod(
        "test2",
        json!({"containers": containers(2)}),
        json!({"phase": "podPhase", "containerStatuses": [
            {"ready": true, "restartCount": 3, "state": running()},
            {"restartCount": 3, "state": {"waiting": {"reason": "ContainerWaitingReason"}}}
        ]}),
    );
    assert_eq!(
        cells("pods", &p)[5..],
        [
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn list_of_pods_and_ages() {
    let young = pod("young", json!({}), json!({"phase": "Running"}));
    let mut old = pod("old", json!({}), json!({"phase": "Running"}));
    old["metadata"]["creationTimestamp"] = json!(ago(400 * DAY));
    let mut unknown = pod("unknown", json!({}), json!({"phase": "Running"}));
    unknown["metadata"]
        .as_object_mut()
        .unwrap()
        .remove("creationTimestamp");
    let mut future = pod("future", json!({}), json!({"phase": "Running"}));
    future["metadata"]["creationTimestamp"] = json!(ago(-60));
    let t = table(
        "pods",
        &[&young, &old, &unknown, &future],
        IncludeObject::None.into(),
    );
    let ages: Vec<&Value> = t["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["cells"][4])
        .collect();
    assert_eq!(
        ages,
        [
            &json!("5m"),
            &json!("400d"),
            &json!("<unknown>"),
            &json!("<invalid>")
        ]
    );
}
