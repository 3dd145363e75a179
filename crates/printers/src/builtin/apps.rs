//! Workload controllers: deployments, replica sets, daemon sets, stateful sets,
//! replication controllers, controller revisions, pod templates, pod disruption budgets.

use super::{
    AGE, CONTAINERS, Col, Ctx, IMAGES, NAME, Printer, Row, col, container_cells, i, s, wide,
};
use crate::descriptions::*;
use crate::selector::{format_label_selector, format_labels, selector_string};
use crate::value::{at, int, list, name, object, opt_int, string};
use serde_json::Value;

/// `spec.replicas`, defaulted to 1 as the workload APIs default it.
fn replicas(obj: &Value) -> i64 {
    opt_int(obj, &["spec", "replicas"]).unwrap_or(1)
}

fn template_containers(obj: &Value) -> &[Value] {
    list(obj, &["spec", "template", "spec", "containers"])
}

const DEPLOYMENT_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    col("Up-to-date", "string", DEPLOYMENT_STATUS_UPDATED_REPLICAS),
    col("Available", "string", DEPLOYMENT_STATUS_AVAILABLE_REPLICAS),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", DEPLOYMENT_SPEC_SELECTOR),
];

pub(crate) const DEPLOYMENT: Printer = Printer {
    columns: DEPLOYMENT_COLUMNS,
    row: deployment_row,
};

fn deployment_row(obj: &Value, ctx: &Ctx) -> Row {
    let (names, images) = container_cells(template_containers(obj));
    let selector = selector_string(at(obj, &["spec", "selector"]))
        .unwrap_or_else(|()| "<invalid>".to_string());
    vec![
        s(name(obj)),
        s(format!(
            "{}/{}",
            int(obj, &["status", "readyReplicas"]),
            replicas(obj)
        )),
        i(int(obj, &["status", "updatedReplicas"])),
        i(int(obj, &["status", "availableReplicas"])),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(selector),
    ]
    .into()
}

const REPLICA_SET_COLUMNS: &[Col] = &[
    NAME,
    col("Desired", "integer", REPLICA_SET_SPEC_REPLICAS),
    col("Current", "integer", REPLICA_SET_STATUS_REPLICAS),
    col("Ready", "integer", REPLICA_SET_STATUS_READY_REPLICAS),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", REPLICA_SET_SPEC_SELECTOR),
];

pub(crate) const REPLICA_SET: Printer = Printer {
    columns: REPLICA_SET_COLUMNS,
    row: replica_set_row,
};

fn replica_set_row(obj: &Value, ctx: &Ctx) -> Row {
    let (names, images) = container_cells(template_containers(obj));
    vec![
        s(name(obj)),
        i(replicas(obj)),
        i(int(obj, &["status", "replicas"])),
        i(int(obj, &["status", "readyReplicas"])),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
    .into()
}

const REPLICATION_CONTROLLER_COLUMNS: &[Col] = &[
    NAME,
    col("Desired", "integer", REPLICATION_CONTROLLER_SPEC_REPLICAS),
    col("Current", "integer", REPLICATION_CONTROLLER_STATUS_REPLICAS),
    col(
        "Ready",
        "integer",
        REPLICATION_CONTROLLER_STATUS_READY_REPLICAS,
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", REPLICATION_CONTROLLER_SPEC_SELECTOR),
];

pub(crate) const REPLICATION_CONTROLLER: Printer = Printer {
    columns: REPLICATION_CONTROLLER_COLUMNS,
    row: replication_controller_row,
};

fn replication_controller_row(obj: &Value, ctx: &Ctx) -> Row {
    let (names, images) = container_cells(template_containers(obj));
    // An empty selector is defaulted to the template's labels.
    let selector = object(obj, &["spec", "selector"])
        .filter(|m| !m.is_empty())
        .or_else(|| object(obj, &["spec", "template", "metadata", "labels"]));
    vec![
        s(name(obj)),
        i(replicas(obj)),
        i(int(obj, &["status", "replicas"])),
        i(int(obj, &["status", "readyReplicas"])),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(format_labels(selector)),
    ]
    .into()
}

const DAEMON_SET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Desired",
        "integer",
        DAEMON_SET_STATUS_DESIRED_NUMBER_SCHEDULED,
    ),
    col(
        "Current",
        "integer",
        DAEMON_SET_STATUS_CURRENT_NUMBER_SCHEDULED,
    ),
    col("Ready", "integer", DAEMON_SET_STATUS_NUMBER_READY),
    col(
        "Up-to-date",
        "integer",
        DAEMON_SET_STATUS_UPDATED_NUMBER_SCHEDULED,
    ),
    col("Available", "integer", DAEMON_SET_STATUS_NUMBER_AVAILABLE),
    col("Node Selector", "string", POD_SPEC_NODE_SELECTOR),
    AGE,
    CONTAINERS,
    IMAGES,
    wide("Selector", "string", DAEMON_SET_SPEC_SELECTOR),
];

pub(crate) const DAEMON_SET: Printer = Printer {
    columns: DAEMON_SET_COLUMNS,
    row: daemon_set_row,
};

fn daemon_set_row(obj: &Value, ctx: &Ctx) -> Row {
    let (names, images) = container_cells(template_containers(obj));
    vec![
        s(name(obj)),
        i(int(obj, &["status", "desiredNumberScheduled"])),
        i(int(obj, &["status", "currentNumberScheduled"])),
        i(int(obj, &["status", "numberReady"])),
        i(int(obj, &["status", "updatedNumberScheduled"])),
        i(int(obj, &["status", "numberAvailable"])),
        s(format_labels(object(
            obj,
            &["spec", "template", "spec", "nodeSelector"],
        ))),
        s(ctx.age(obj)),
        s(names),
        s(images),
        s(format_label_selector(at(obj, &["spec", "selector"]))),
    ]
    .into()
}

const STATEFUL_SET_COLUMNS: &[Col] = &[
    NAME,
    col("Ready", "string", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

pub(crate) const STATEFUL_SET: Printer = Printer {
    columns: STATEFUL_SET_COLUMNS,
    row: stateful_set_row,
};

fn stateful_set_row(obj: &Value, ctx: &Ctx) -> Row {
    let (names, images) = container_cells(template_containers(obj));
    vec![
        s(name(obj)),
        s(format!(
            "{}/{}",
            int(obj, &["status", "readyReplicas"]),
            replicas(obj)
        )),
        s(ctx.age(obj)),
        s(names),
        s(images),
    ]
    .into()
}

const CONTROLLER_REVISION_COLUMNS: &[Col] = &[
    NAME,
    col("Controller", "string", "Controller of the object"),
    col("Revision", "string", CONTROLLER_REVISION_REVISION),
    AGE,
];

pub(crate) const CONTROLLER_REVISION: Printer = Printer {
    columns: CONTROLLER_REVISION_COLUMNS,
    row: controller_revision_row,
};

fn controller_revision_row(obj: &Value, ctx: &Ctx) -> Row {
    let controller = list(obj, &["metadata", "ownerReferences"])
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true));
    let controller_name = match controller {
        None => "<none>".to_string(),
        Some(r) => {
            let ref_name = string(r, &["name"]);
            let kind = string(r, &["kind"]);
            let api_version = string(r, &["apiVersion"]);
            let group = match api_version.split_once('/') {
                Some((g, _)) => g,
                None => "",
            };
            if group.is_empty() && kind.is_empty() {
                ref_name.to_string()
            } else if group.is_empty() {
                format!("{}/{ref_name}", kind.to_lowercase())
            } else {
                format!(
                    "{}.{}/{ref_name}",
                    kind.to_lowercase(),
                    group.to_lowercase()
                )
            }
        }
    };
    vec![
        s(name(obj)),
        s(controller_name),
        i(int(obj, &["revision"])),
        s(ctx.age(obj)),
    ]
    .into()
}

const POD_TEMPLATE_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Containers",
        "string",
        "Names of each container in the template.",
    ),
    col(
        "Images",
        "string",
        "Images referenced by each container in the template.",
    ),
    col("Pod Labels", "string", "The labels for the pod template."),
];

pub(crate) const POD_TEMPLATE: Printer = Printer {
    columns: POD_TEMPLATE_COLUMNS,
    row: pod_template_row,
};

fn pod_template_row(obj: &Value, _ctx: &Ctx) -> Row {
    let (names, images) = container_cells(list(obj, &["template", "spec", "containers"]));
    vec![
        s(name(obj)),
        s(names),
        s(images),
        s(format_labels(object(
            obj,
            &["template", "metadata", "labels"],
        ))),
    ]
    .into()
}

const POD_DISRUPTION_BUDGET_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Min Available",
        "string",
        "The minimum number of pods that must be available.",
    ),
    col(
        "Max Unavailable",
        "string",
        "The maximum number of pods that may be unavailable.",
    ),
    col(
        "Allowed Disruptions",
        "integer",
        "Calculated number of pods that may be disrupted at this time.",
    ),
    AGE,
];

pub(crate) const POD_DISRUPTION_BUDGET: Printer = Printer {
    columns: POD_DISRUPTION_BUDGET_COLUMNS,
    row: pod_disruption_budget_row,
};

/// An `IntOrString` field as `IntOrString.String()`, `N/A` when unset.
fn int_or_string(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.as_i64().map_or_else(|| n.to_string(), |i| i.to_string()),
        _ => "N/A".to_string(),
    }
}

fn pod_disruption_budget_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        s(int_or_string(at(obj, &["spec", "minAvailable"]))),
        s(int_or_string(at(obj, &["spec", "maxUnavailable"]))),
        i(int(obj, &["status", "disruptionsAllowed"])),
        s(ctx.age(obj)),
    ]
    .into()
}
