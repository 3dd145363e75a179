//! Pods: `NAME READY STATUS RESTARTS AGE`, wide `IP NODE NOMINATED NODE READINESS GATES`,
//! with upstream's status logic (`printPod`).

use super::{AGE, Col, Ctx, NAME, Printer, Row, col, s, wide};
use crate::descriptions::{
    POD_SPEC_NODE_NAME, POD_SPEC_READINESS_GATES, POD_STATUS_NOMINATED_NODE_NAME, POD_STATUS_POD_IP,
};
use crate::time::{Nanos, ZERO, since, timestamp};
use crate::value::{at, boolean, int, is_present, list, name, opt_bool, string};
use serde_json::{Value, json};

const COLUMNS: &[Col] = &[
    NAME,
    col(
        "Ready",
        "string",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "string",
        "The aggregate status of the containers in this pod.",
    ),
    col(
        "Restarts",
        "string",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
    ),
    AGE,
    wide("IP", "string", POD_STATUS_POD_IP),
    wide("Node", "string", POD_SPEC_NODE_NAME),
    wide("Nominated Node", "string", POD_STATUS_NOMINATED_NODE_NAME),
    wide("Readiness Gates", "string", POD_SPEC_READINESS_GATES),
];

pub(crate) const POD: Printer = Printer {
    columns: COLUMNS,
    row: pod_row,
};

/// `node.NodeUnreachablePodReason`.
const NODE_UNREACHABLE_POD_REASON: &str = "NodeLost";

/// The init container of a status, by name (the last one of that name, as upstream's map).
fn init_container<'a>(init_containers: &'a [Value], name: &str) -> Option<&'a Value> {
    init_containers
        .iter()
        .rev()
        .find(|c| string(c, &["name"]) == name)
}

/// `podutil.IsRestartableInitContainer`: a sidecar (`restartPolicy: Always`).
fn is_restartable(container: Option<&Value>) -> bool {
    container.is_some_and(|c| string(c, &["restartPolicy"]) == "Always")
}

/// The fields of a container status the printer reads, looked up once.
struct ContainerStatus<'a> {
    name: &'a str,
    restart_count: i64,
    ready: bool,
    started: Option<bool>,
    /// `lastState.terminated.finishedAt`, when the container was terminated before.
    last_finished: Option<Nanos>,
    waiting: Option<&'a Value>,
    terminated: Option<&'a Value>,
    running: bool,
}

impl<'a> ContainerStatus<'a> {
    fn new(cs: &'a Value) -> Self {
        let obj = |v: Option<&'a Value>| v.filter(|v| v.is_object());
        let state = at(cs, &["state"]);
        let last_terminated = obj(at(cs, &["lastState", "terminated"]));
        ContainerStatus {
            name: string(cs, &["name"]),
            restart_count: int(cs, &["restartCount"]),
            ready: boolean(cs, &["ready"]),
            started: opt_bool(cs, &["started"]),
            last_finished: last_terminated.map(|t| timestamp(t.get("finishedAt"))),
            waiting: obj(state.and_then(|s| s.get("waiting"))),
            terminated: obj(state.and_then(|s| s.get("terminated"))),
            running: obj(state.and_then(|s| s.get("running"))).is_some(),
        }
    }

    fn waiting_reason(&self) -> &'a str {
        self.waiting.map_or("", |w| string(w, &["reason"]))
    }
}

/// What the pod's conditions say, in one pass: gated scheduling, whether the first
/// `Initialized` condition is true, whether any `Ready` condition is true.
struct Conditions {
    scheduling_gated: bool,
    initialized: bool,
    ready: bool,
}

fn read_conditions(conditions: &[Value]) -> Conditions {
    let mut c = Conditions {
        scheduling_gated: false,
        initialized: false,
        ready: false,
    };
    let mut seen_initialized = false;
    let is_true = |cond: &Value| string(cond, &["status"]) == "True";
    for cond in conditions {
        match string(cond, &["type"]) {
            "PodScheduled" if string(cond, &["reason"]) == "SchedulingGated" => {
                c.scheduling_gated = true;
            }
            "Initialized" if !seen_initialized => {
                seen_initialized = true;
                c.initialized = is_true(cond);
            }
            "Ready" if is_true(cond) => c.ready = true,
            _ => {}
        }
    }
    c
}

fn pod_row(pod: &Value, ctx: &Ctx) -> Row {
    let status = at(pod, &["status"]).unwrap_or(&Value::Null);
    let spec = at(pod, &["spec"]).unwrap_or(&Value::Null);
    let containers = list(spec, &["containers"]);
    let init_containers = list(spec, &["initContainers"]);
    let conditions = list(status, &["conditions"]);
    let cond = read_conditions(conditions);

    let mut restarts: i64 = 0;
    let mut restartable_restarts: i64 = 0;
    let mut total = containers.len();
    let mut ready = 0usize;
    let mut last_restart: Nanos = ZERO;
    let mut last_restartable_restart: Nanos = ZERO;

    let phase = string(status, &["phase"]);
    let status_reason = string(status, &["reason"]);
    let mut reason = if status_reason.is_empty() {
        phase.to_string()
    } else {
        status_reason.to_string()
    };
    if cond.scheduling_gated {
        reason = "SchedulingGated".to_string();
    }

    let row_conditions = match phase {
        "Succeeded" => Some(json!([{
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }])),
        "Failed" => Some(json!([{
            "type": "Completed",
            "status": "True",
            "reason": "Failed",
            "message": "The pod failed.",
        }])),
        _ => None,
    };

    total += init_containers
        .iter()
        .filter(|c| is_restartable(Some(c)))
        .count();

    let mut initializing = false;
    for (index, raw) in list(status, &["initContainerStatuses"]).iter().enumerate() {
        let cs = ContainerStatus::new(raw);
        restarts += cs.restart_count;
        if let Some(t) = cs.last_finished
            && last_restart < t
        {
            last_restart = t;
        }
        let restartable = is_restartable(init_container(init_containers, cs.name));
        if restartable {
            restartable_restarts += cs.restart_count;
            if let Some(t) = cs.last_finished
                && last_restartable_restart < t
            {
                last_restartable_restart = t;
            }
        }
        let exit_code = cs.terminated.map_or(0, |t| int(t, &["exitCode"]));
        if cs.terminated.is_some() && exit_code == 0 {
            continue;
        }
        if restartable && cs.started == Some(true) {
            if cs.ready {
                ready += 1;
            }
            continue;
        }
        let waiting_reason = cs.waiting_reason();
        if let Some(term) = cs.terminated {
            let term_reason = string(term, &["reason"]);
            reason = if term_reason.is_empty() {
                let signal = int(term, &["signal"]);
                if signal != 0 {
                    format!("Init:Signal:{signal}")
                } else {
                    format!("Init:ExitCode:{exit_code}")
                }
            } else {
                format!("Init:{term_reason}")
            };
        } else if cs.waiting.is_some()
            && !waiting_reason.is_empty()
            && waiting_reason != "PodInitializing"
        {
            reason = format!("Init:{waiting_reason}");
        } else {
            reason = format!("Init:{index}/{}", init_containers.len());
        }
        initializing = true;
        break;
    }

    if !initializing || cond.initialized {
        restarts = restartable_restarts;
        last_restart = last_restartable_restart;
        let mut has_running = false;
        for raw in list(status, &["containerStatuses"]).iter().rev() {
            let cs = ContainerStatus::new(raw);
            restarts += cs.restart_count;
            if let Some(t) = cs.last_finished
                && last_restart < t
            {
                last_restart = t;
            }
            let waiting_reason = cs.waiting_reason();
            if cs.waiting.is_some() && !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(term) = cs.terminated {
                let term_reason = string(term, &["reason"]);
                reason = if !term_reason.is_empty() {
                    term_reason.to_string()
                } else {
                    let signal = int(term, &["signal"]);
                    if signal != 0 {
                        format!("Signal:{signal}")
                    } else {
                        format!("ExitCode:{}", int(term, &["exitCode"]))
                    }
                };
            } else if cs.ready && cs.running {
                has_running = true;
                ready += 1;
            }
        }
        if reason == "Completed" && has_running {
            reason = if cond.ready {
                "Running".to_string()
            } else {
                "NotReady".to_string()
            };
        }
    }

    let deleting = is_present(pod, &["metadata", "deletionTimestamp"]);
    if deleting && status_reason == NODE_UNREACHABLE_POD_REASON {
        reason = "Unknown".to_string();
    } else if deleting && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".to_string();
    }

    let restarts_cell = if restarts != 0 && last_restart != ZERO {
        format!("{restarts} ({} ago)", since(ctx.now, last_restart))
    } else {
        restarts.to_string()
    };

    // The v1 → internal conversion makes `podIP` the first of `podIPs`.
    let pod_ip = match string(status, &["podIP"]) {
        "" => list(status, &["podIPs"])
            .first()
            .map_or("", |ip| string(ip, &["ip"])),
        ip => ip,
    };
    let or_none = |v: &str| {
        if v.is_empty() {
            "<none>".to_string()
        } else {
            v.to_string()
        }
    };
    let gates = list(spec, &["readinessGates"]);
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let true_conditions = gates
            .iter()
            .filter(|gate| {
                let ty = string(gate, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| string(c, &["type"]) == ty)
                    .is_some_and(|c| string(c, &["status"]) == "True")
            })
            .count();
        format!("{true_conditions}/{}", gates.len())
    };

    Row {
        cells: vec![
            s(name(pod)),
            s(format!("{ready}/{total}")),
            s(reason),
            s(restarts_cell),
            s(ctx.age(pod)),
            s(or_none(pod_ip)),
            s(or_none(string(spec, &["nodeName"]))),
            s(or_none(string(status, &["nominatedNodeName"]))),
            s(readiness_gates),
        ],
        conditions: row_conditions,
    }
}
