//! Access control, coordination, scheduling, networking, storage and admission kinds:
//! role bindings, leases, priority classes, ingresses, network policies, storage and runtime
//! classes, webhook configurations, certificate signing requests.

use super::{AGE, Col, Ctx, NAME, Printer, Row, col, i, n, s, wide};
use crate::descriptions::*;
use crate::selector::format_label_selector;
use crate::time::human_duration;
use crate::value::{
    at, boolean, int, list, map_entry, name, object, opt_bool, opt_int, opt_string, string,
};
use serde_json::Value;
use std::collections::BTreeSet;

/// `rbac.SubjectsStrings`: users, groups and `namespace/name` service accounts.
fn subjects(obj: &Value) -> (String, String, String) {
    let mut users = Vec::new();
    let mut groups = Vec::new();
    let mut sas = Vec::new();
    for subject in list(obj, &["subjects"]) {
        let subject_name = string(subject, &["name"]);
        match string(subject, &["kind"]) {
            "ServiceAccount" => sas.push(format!(
                "{}/{subject_name}",
                string(subject, &["namespace"])
            )),
            "User" => users.push(subject_name.to_string()),
            "Group" => groups.push(subject_name.to_string()),
            _ => {}
        }
    }
    (users.join(", "), groups.join(", "), sas.join(", "))
}

fn binding_row(obj: &Value, ctx: &Ctx) -> Row {
    let (users, groups, sas) = subjects(obj);
    vec![
        s(name(obj)),
        s(format!(
            "{}/{}",
            string(obj, &["roleRef", "kind"]),
            string(obj, &["roleRef", "name"])
        )),
        s(ctx.age(obj)),
        s(users),
        s(groups),
        s(sas),
    ]
    .into()
}

const ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col("Role", "string", ROLE_BINDING_ROLE_REF),
    AGE,
    wide("Users", "string", "Users in the roleBinding"),
    wide("Groups", "string", "Groups in the roleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the roleBinding",
    ),
];

pub(crate) const ROLE_BINDING: Printer = Printer {
    columns: ROLE_BINDING_COLUMNS,
    row: binding_row,
};

const CLUSTER_ROLE_BINDING_COLUMNS: &[Col] = &[
    NAME,
    col("Role", "string", CLUSTER_ROLE_BINDING_ROLE_REF),
    AGE,
    wide("Users", "string", "Users in the clusterRoleBinding"),
    wide("Groups", "string", "Groups in the clusterRoleBinding"),
    wide(
        "ServiceAccounts",
        "string",
        "ServiceAccounts in the clusterRoleBinding",
    ),
];

pub(crate) const CLUSTER_ROLE_BINDING: Printer = Printer {
    columns: CLUSTER_ROLE_BINDING_COLUMNS,
    row: binding_row,
};

const LEASE_COLUMNS: &[Col] = &[
    NAME,
    col("Holder", "string", LEASE_SPEC_HOLDER_IDENTITY),
    AGE,
];

pub(crate) const LEASE: Printer = Printer {
    columns: LEASE_COLUMNS,
    row: lease_row,
};

fn lease_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        s(string(obj, &["spec", "holderIdentity"])),
        s(ctx.age(obj)),
    ]
    .into()
}

const PRIORITY_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col("Value", "integer", PRIORITY_CLASS_VALUE),
    col("Global-Default", "boolean", PRIORITY_CLASS_GLOBAL_DEFAULT),
    AGE,
    col(
        "PreemptionPolicy",
        "string",
        PRIORITY_CLASS_PREEMPTION_POLICY,
    ),
];

pub(crate) const PRIORITY_CLASS: Printer = Printer {
    columns: PRIORITY_CLASS_COLUMNS,
    row: priority_class_row,
};

fn priority_class_row(obj: &Value, ctx: &Ctx) -> Row {
    // `preemptionPolicy` is defaulted to PreemptLowerPriority.
    let policy = opt_string(obj, &["preemptionPolicy"]).unwrap_or("PreemptLowerPriority");
    vec![
        s(name(obj)),
        i(int(obj, &["value"])),
        Value::Bool(boolean(obj, &["globalDefault"])),
        s(ctx.age(obj)),
        s(policy),
    ]
    .into()
}

const INGRESS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Class",
        "string",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    col(
        "Hosts",
        "string",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    col(
        "Address",
        "string",
        "Address is a list containing ingress points for the load-balancer",
    ),
    col("Ports", "string", "Ports of TLS configurations that open"),
    AGE,
];

pub(crate) const INGRESS: Printer = Printer {
    columns: INGRESS_COLUMNS,
    row: ingress_row,
};

/// `formatHosts`: the first three hosts, `*` when none.
fn ingress_hosts(rules: &[Value]) -> String {
    const MAX: usize = 3;
    let mut hosts = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        let host = string(rule, &["host"]);
        if !more && !host.is_empty() {
            hosts.push(host);
        }
    }
    if hosts.is_empty() {
        return "*".to_string();
    }
    let joined = hosts.join(",");
    if more {
        format!("{joined} + {} more...", rules.len() - MAX)
    } else {
        joined
    }
}

fn ingress_row(obj: &Value, ctx: &Ctx) -> Row {
    let class = opt_string(obj, &["spec", "ingressClassName"]).unwrap_or("<none>");
    let address: BTreeSet<&str> = list(obj, &["status", "loadBalancer", "ingress"])
        .iter()
        .filter_map(|ing| {
            let ip = string(ing, &["ip"]);
            let host = string(ing, &["hostname"]);
            if !ip.is_empty() {
                Some(ip)
            } else if !host.is_empty() {
                Some(host)
            } else {
                None
            }
        })
        .collect();
    let ports = if list(obj, &["spec", "tls"]).is_empty() {
        "80"
    } else {
        "80, 443"
    };
    vec![
        s(name(obj)),
        s(class),
        s(ingress_hosts(list(obj, &["spec", "rules"]))),
        s(address.into_iter().collect::<Vec<_>>().join(",")),
        s(ports),
        s(ctx.age(obj)),
    ]
    .into()
}

const INGRESS_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Controller",
        "string",
        "Controller that is responsible for handling this class",
    ),
    col(
        "Parameters",
        "string",
        "A reference to a resource with additional parameters",
    ),
    AGE,
];

pub(crate) const INGRESS_CLASS: Printer = Printer {
    columns: INGRESS_CLASS_COLUMNS,
    row: ingress_class_row,
};

fn ingress_class_row(obj: &Value, ctx: &Ctx) -> Row {
    let parameters = match at(obj, &["spec", "parameters"]) {
        Some(p) if p.is_object() => {
            let mut out = string(p, &["kind"]).to_string();
            if let Some(group) = opt_string(p, &["apiGroup"]) {
                out.push('.');
                out.push_str(group);
            }
            out.push('/');
            out.push_str(string(p, &["name"]));
            out
        }
        _ => "<none>".to_string(),
    };
    vec![
        s(name(obj)),
        s(string(obj, &["spec", "controller"])),
        s(parameters),
        s(ctx.age(obj)),
    ]
    .into()
}

const NETWORK_POLICY_COLUMNS: &[Col] = &[
    NAME,
    col("Pod-Selector", "string", NETWORK_POLICY_SPEC_POD_SELECTOR),
    AGE,
];

pub(crate) const NETWORK_POLICY: Printer = Printer {
    columns: NETWORK_POLICY_COLUMNS,
    row: network_policy_row,
};

fn network_policy_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        s(format_label_selector(at(obj, &["spec", "podSelector"]))),
        s(ctx.age(obj)),
    ]
    .into()
}

const STORAGE_CLASS_COLUMNS: &[Col] = &[
    NAME,
    col("Provisioner", "string", STORAGE_CLASS_PROVISIONER),
    col("ReclaimPolicy", "string", STORAGE_CLASS_RECLAIM_POLICY),
    col(
        "VolumeBindingMode",
        "string",
        STORAGE_CLASS_VOLUME_BINDING_MODE,
    ),
    col(
        "AllowVolumeExpansion",
        "string",
        STORAGE_CLASS_ALLOW_VOLUME_EXPANSION,
    ),
    AGE,
];

pub(crate) const STORAGE_CLASS: Printer = Printer {
    columns: STORAGE_CLASS_COLUMNS,
    row: storage_class_row,
};

fn storage_class_row(obj: &Value, ctx: &Ctx) -> Row {
    let annotations = object(obj, &["metadata", "annotations"]);
    let is_default = [
        "storageclass.kubernetes.io/is-default-class",
        "storageclass.beta.kubernetes.io/is-default-class",
    ]
    .iter()
    .any(|key| map_entry(annotations, key) == Some("true"));
    let mut class_name = name(obj).to_string();
    if is_default {
        class_name.push_str(" (default)");
    }
    vec![
        s(class_name),
        s(string(obj, &["provisioner"])),
        s(opt_string(obj, &["reclaimPolicy"]).unwrap_or("Delete")),
        s(opt_string(obj, &["volumeBindingMode"]).unwrap_or("Immediate")),
        Value::Bool(opt_bool(obj, &["allowVolumeExpansion"]).unwrap_or(false)),
        s(ctx.age(obj)),
    ]
    .into()
}

const RUNTIME_CLASS_COLUMNS: &[Col] = &[
    NAME,
    // Upstream looks the description up under a key ObjectMeta does not have.
    col("Handler", "string", ""),
    AGE,
];

pub(crate) const RUNTIME_CLASS: Printer = Printer {
    columns: RUNTIME_CLASS_COLUMNS,
    row: runtime_class_row,
};

fn runtime_class_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![s(name(obj)), s(string(obj, &["handler"])), s(ctx.age(obj))].into()
}

const WEBHOOK_COLUMNS: &[Col] = &[
    NAME,
    col(
        "Webhooks",
        "integer",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

fn webhook_row(obj: &Value, ctx: &Ctx) -> Row {
    vec![
        s(name(obj)),
        n(list(obj, &["webhooks"]).len()),
        s(ctx.age(obj)),
    ]
    .into()
}

pub(crate) const MUTATING_WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: WEBHOOK_COLUMNS,
    row: webhook_row,
};

pub(crate) const VALIDATING_WEBHOOK_CONFIGURATION: Printer = Printer {
    columns: WEBHOOK_COLUMNS,
    row: webhook_row,
};

pub(crate) const VALIDATING_ADMISSION_POLICY: Printer = Printer {
    columns: &[
        NAME,
        col(
            "Validations",
            "integer",
            "Validations indicates the number of validation rules defined in this configuration",
        ),
        col(
            "ParamKind",
            "string",
            "ParamKind specifies the kind of resources used to parameterize this policy",
        ),
        AGE,
    ],
    row: validating_admission_policy_row,
};

fn validating_admission_policy_row(obj: &Value, ctx: &Ctx) -> Row {
    let pk = &obj["spec"]["paramKind"];
    let param_kind = if pk.is_object() {
        format!(
            "{}/{}",
            pk["apiVersion"].as_str().unwrap_or_default(),
            pk["kind"].as_str().unwrap_or_default()
        )
    } else {
        "<unset>".to_string()
    };
    vec![
        s(name(obj)),
        n(list(obj, &["spec", "validations"]).len()),
        s(param_kind),
        s(ctx.age(obj)),
    ]
    .into()
}

pub(crate) const VALIDATING_ADMISSION_POLICY_BINDING: Printer = Printer {
    columns: &[
        NAME,
        col(
            "PolicyName",
            "string",
            "PolicyName indicates the policy definition which the policy binding binded to",
        ),
        col(
            "ParamRef",
            "string",
            "ParamRef indicates the param resource which sets the configration param",
        ),
        AGE,
    ],
    row: validating_admission_policy_binding_row,
};

/// Go's `%v` of a `metav1.LabelSelector` (its generated `String()`).
fn go_label_selector(sel: &Value) -> String {
    let labels: Vec<String> = sel["matchLabels"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}: {},", v.as_str().unwrap_or_default()))
        .collect();
    let exprs: Vec<String> = sel["matchExpressions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|e| {
            let values: Vec<&str> = e["values"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            format!(
                "LabelSelectorRequirement{{Key:{},Operator:{},Values:[{}],}},",
                e["key"].as_str().unwrap_or_default(),
                e["operator"].as_str().unwrap_or_default(),
                values.join(" ")
            )
        })
        .collect();
    format!(
        "&LabelSelector{{MatchLabels:map[string]string{{{}}},MatchExpressions:[]LabelSelectorRequirement{{{}}},}}",
        labels.join(""),
        exprs.join("")
    )
}

fn validating_admission_policy_binding_row(obj: &Value, ctx: &Ctx) -> Row {
    let pr = &obj["spec"]["paramRef"];
    let name_ref = pr["name"].as_str().unwrap_or_default();
    let param_ref = if !pr.is_object() {
        "<unset>".to_string()
    } else if !name_ref.is_empty() {
        match pr["namespace"].as_str().filter(|n| !n.is_empty()) {
            Some(ns) => format!("{ns}/{name_ref}"),
            None => format!("*/{name_ref}"),
        }
    } else if pr["selector"].is_object() {
        go_label_selector(&pr["selector"])
    } else {
        "<unset>".to_string()
    };
    vec![
        s(name(obj)),
        s(string(obj, &["spec", "policyName"])),
        s(param_ref),
        s(ctx.age(obj)),
    ]
    .into()
}

const CERTIFICATE_SIGNING_REQUEST_COLUMNS: &[Col] = &[
    NAME,
    AGE,
    col(
        "SignerName",
        "string",
        CERTIFICATE_SIGNING_REQUEST_SPEC_SIGNER_NAME,
    ),
    col(
        "Requestor",
        "string",
        CERTIFICATE_SIGNING_REQUEST_SPEC_REQUEST,
    ),
    col(
        "RequestedDuration",
        "string",
        CERTIFICATE_SIGNING_REQUEST_SPEC_EXPIRATION_SECONDS,
    ),
    col(
        "Condition",
        "string",
        CERTIFICATE_SIGNING_REQUEST_STATUS_CONDITIONS,
    ),
];

pub(crate) const CERTIFICATE_SIGNING_REQUEST: Printer = Printer {
    columns: CERTIFICATE_SIGNING_REQUEST_COLUMNS,
    row: certificate_signing_request_row,
};

fn certificate_signing_request_row(obj: &Value, ctx: &Ctx) -> Row {
    let conditions = list(obj, &["status", "conditions"]);
    let has = |ty: &str| conditions.iter().any(|c| string(c, &["type"]) == ty);
    let mut status = if has("Denied") {
        "Denied"
    } else if has("Approved") {
        "Approved"
    } else {
        "Pending"
    }
    .to_string();
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !string(obj, &["status", "certificate"]).is_empty() {
        status.push_str(",Issued");
    }
    let signer = match string(obj, &["spec", "signerName"]) {
        "" => "<none>",
        other => other,
    };
    let duration = match opt_int(obj, &["spec", "expirationSeconds"]) {
        Some(secs) => human_duration(secs.saturating_mul(1_000_000_000)),
        None => "<none>".to_string(),
    };
    vec![
        s(name(obj)),
        s(ctx.age(obj)),
        s(signer),
        s(string(obj, &["spec", "username"])),
        s(duration),
        s(status),
    ]
    .into()
}
