//! `kubectl rollout status|history|undo|restart|pause|resume`, as kubectl's
//! `pkg/cmd/rollout` with `pkg/polymorphichelpers` (status viewers, history viewers,
//! rollbackers, restarter, pauser, resumer) for Deployments, DaemonSets and StatefulSets.
//! The decisions (status lines, history tables, which template to roll back to, the
//! patches) are pure functions of the objects; `run` only reads and writes them.

use std::collections::BTreeMap;
use std::io::Write;

use http::Method;
use serde_json::{Value, json};

use crate::cmd::watchutil::{
    self, DryRunMode, Event, Selection, Step, Target, controlled_by, fail_with, selector_string,
};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::transport::{Request, RestClient};

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// View rollout history.
    History(HistoryArgs),
    /// Mark the provided resource as paused.
    Pause(PatchArgs),
    /// Restart a resource.
    Restart(PatchArgs),
    /// Resume a paused resource.
    Resume(PatchArgs),
    /// Show the status of the rollout.
    Status(StatusArgs),
    /// Undo a previous rollout.
    Undo(UndoArgs),
}

#[derive(clap::Args, Debug)]
struct StatusArgs {
    resources: Vec<String>,
    /// Watch the status of the rollout until it's done.
    #[arg(short = 'w', long, default_value_t = true, num_args = 0..=1, require_equals = true, default_missing_value = "true", action = clap::ArgAction::Set)]
    watch: bool,
    /// Pin to a specific revision for showing its status. Defaults to 0 (last revision).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    revision: i64,
    /// The length of time to wait before ending watch, zero means never.
    #[arg(long, default_value = "0s")]
    timeout: String,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(short = 'f', long = "filename")]
    filename: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct HistoryArgs {
    resources: Vec<String>,
    /// See the details, including podTemplate of the revision specified.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    revision: i64,
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[arg(short = 'f', long = "filename")]
    filename: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct UndoArgs {
    resources: Vec<String>,
    /// The revision to rollback to. Default to 0 (last revision).
    #[arg(
        long = "to-revision",
        default_value_t = 0,
        allow_negative_numbers = true
    )]
    to_revision: i64,
    #[arg(long = "dry-run", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged")]
    dry_run: Option<String>,
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[arg(short = 'f', long = "filename")]
    filename: Vec<String>,
}

#[derive(clap::Args, Debug)]
struct PatchArgs {
    resources: Vec<String>,
    #[arg(long = "field-manager", default_value = "kubectl-rollout")]
    field_manager: String,
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[arg(short = 'f', long = "filename")]
    filename: Vec<String>,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match args.cmd {
        Sub::Status(a) => status(ctx, a).await,
        Sub::History(a) => history(ctx, a).await,
        Sub::Undo(a) => undo(ctx, a).await,
        Sub::Restart(a) => patch_cmd(ctx, a, Action::Restart).await,
        Sub::Pause(a) => patch_cmd(ctx, a, Action::Pause).await,
        Sub::Resume(a) => patch_cmd(ctx, a, Action::Resume).await,
    }
}

async fn targets(
    ctx: &Ctx,
    resources: &[String],
    selector: &Option<String>,
    files: &[String],
) -> Result<Vec<Target>> {
    let sel = Selection {
        selector: selector.clone(),
        files: files.to_vec(),
        ..Selection::default()
    };
    watchutil::resolve(ctx, resources, &sel, false, true).await
}

async fn no_resources(ctx: &Ctx) -> Result<()> {
    let ns = ctx.namespace().await?;
    let _ = writeln!(ctx.err(), "No resources found in {ns} namespace.");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// status

/// The kinds with a status viewer, history, rollbacker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workload {
    Deployment,
    DaemonSet,
    StatefulSet,
}

impl Workload {
    pub fn of(group: &str, kind: &str) -> Option<Workload> {
        match (group, kind) {
            ("apps" | "extensions", "Deployment") => Some(Workload::Deployment),
            ("apps" | "extensions", "DaemonSet") => Some(Workload::DaemonSet),
            ("apps", "StatefulSet") => Some(Workload::StatefulSet),
            _ => None,
        }
    }
}

fn i64_at(v: &Value, path: &[&str]) -> Option<i64> {
    let mut cur = v;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_i64()
}

fn num(v: &Value, path: &[&str]) -> i64 {
    i64_at(v, path).unwrap_or(0)
}

fn name_of(v: &Value) -> &str {
    v["metadata"]["name"].as_str().unwrap_or_default()
}

/// The revision annotation of a Deployment or ReplicaSet.
fn revision_of(v: &Value) -> Option<i64> {
    v["metadata"]["annotations"]["deployment.kubernetes.io/revision"]
        .as_str()
        .and_then(|s| s.parse().ok())
}

/// A status viewer's verdict: the line to print and whether the rollout is done, or the
/// error that ends the command.
pub fn status_line(kind: Workload, obj: &Value, revision: i64) -> Result<(String, bool), String> {
    match kind {
        Workload::Deployment => deployment_status(obj, revision),
        Workload::DaemonSet => daemonset_status(obj),
        Workload::StatefulSet => statefulset_status(obj),
    }
}

fn deployment_status(d: &Value, revision: i64) -> Result<(String, bool), String> {
    let name = name_of(d);
    if revision > 0 {
        let Some(current) = revision_of(d) else {
            return Err(format!(
                "cannot get the revision of deployment {}: strconv.ParseInt: parsing \"\": invalid syntax",
                api::gofmt::go_quote(name)
            ));
        };
        if revision != current {
            return Err(format!(
                "desired revision ({revision}) is different from the running revision ({current})"
            ));
        }
    }
    let generation = num(d, &["metadata", "generation"]);
    let observed = num(d, &["status", "observedGeneration"]);
    if generation > observed {
        return Ok((
            "Waiting for deployment spec update to be observed...\n".into(),
            false,
        ));
    }
    let q = api::gofmt::go_quote(name);
    let timed_out = d["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter().any(|c| {
            c["type"] == "Progressing" && c["reason"].as_str() == Some("ProgressDeadlineExceeded")
        })
    });
    if timed_out {
        return Err(format!("deployment {q} exceeded its progress deadline"));
    }
    let updated = num(d, &["status", "updatedReplicas"]);
    let replicas = num(d, &["status", "replicas"]);
    let available = num(d, &["status", "availableReplicas"]);
    if let Some(spec) = i64_at(d, &["spec", "replicas"])
        && updated < spec
    {
        return Ok((
            format!(
                "Waiting for deployment {q} rollout to finish: {updated} out of {spec} new replicas have been updated...\n"
            ),
            false,
        ));
    }
    if replicas > updated {
        return Ok((
            format!(
                "Waiting for deployment {q} rollout to finish: {} old replicas are pending termination...\n",
                replicas - updated
            ),
            false,
        ));
    }
    if available < updated {
        return Ok((
            format!(
                "Waiting for deployment {q} rollout to finish: {available} of {updated} updated replicas are available...\n"
            ),
            false,
        ));
    }
    Ok((format!("deployment {q} successfully rolled out\n"), true))
}

fn daemonset_status(d: &Value) -> Result<(String, bool), String> {
    let q = api::gofmt::go_quote(name_of(d));
    let strategy = d["spec"]["updateStrategy"]["type"]
        .as_str()
        .unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    if num(d, &["metadata", "generation"]) > num(d, &["status", "observedGeneration"]) {
        return Ok((
            "Waiting for daemon set spec update to be observed...\n".into(),
            false,
        ));
    }
    let updated = num(d, &["status", "updatedNumberScheduled"]);
    let desired = num(d, &["status", "desiredNumberScheduled"]);
    let available = num(d, &["status", "numberAvailable"]);
    if updated < desired {
        return Ok((
            format!(
                "Waiting for daemon set {q} rollout to finish: {updated} out of {desired} new pods have been updated...\n"
            ),
            false,
        ));
    }
    if available < desired {
        return Ok((
            format!(
                "Waiting for daemon set {q} rollout to finish: {available} of {desired} updated pods are available...\n"
            ),
            false,
        ));
    }
    Ok((format!("daemon set {q} successfully rolled out\n"), true))
}

fn statefulset_status(s: &Value) -> Result<(String, bool), String> {
    let strategy = s["spec"]["updateStrategy"]["type"]
        .as_str()
        .unwrap_or("RollingUpdate");
    if strategy != "RollingUpdate" {
        return Err("rollout status is only available for RollingUpdate strategy type".into());
    }
    let observed = num(s, &["status", "observedGeneration"]);
    if observed == 0 || num(s, &["metadata", "generation"]) > observed {
        return Ok((
            "Waiting for statefulset spec update to be observed...\n".into(),
            false,
        ));
    }
    let spec = i64_at(s, &["spec", "replicas"]);
    let ready = num(s, &["status", "readyReplicas"]);
    if let Some(spec) = spec
        && ready < spec
    {
        return Ok((
            format!("Waiting for {} pods to be ready...\n", spec - ready),
            false,
        ));
    }
    let updated = num(s, &["status", "updatedReplicas"]);
    let rolling = &s["spec"]["updateStrategy"]["rollingUpdate"];
    if rolling.is_object() {
        if let (Some(spec), Some(partition)) = (spec, i64_at(rolling, &["partition"]))
            && updated < spec - partition
        {
            return Ok((
                format!(
                    "Waiting for partitioned roll out to finish: {updated} out of {} new pods have been updated...\n",
                    spec - partition
                ),
                false,
            ));
        }
        return Ok((
            format!("partitioned roll out complete: {updated} new pods have been updated...\n"),
            true,
        ));
    }
    let update_rev = s["status"]["updateRevision"].as_str().unwrap_or_default();
    let current_rev = s["status"]["currentRevision"].as_str().unwrap_or_default();
    if update_rev != current_rev {
        return Ok((
            format!(
                "waiting for statefulset rolling update to complete {updated} pods at revision {update_rev}...\n"
            ),
            false,
        ));
    }
    Ok((
        format!(
            "statefulset rolling update complete {} pods at revision {current_rev}...\n",
            num(s, &["status", "currentReplicas"])
        ),
        true,
    ))
}

async fn status(ctx: &Ctx, a: StatusArgs) -> Result<()> {
    if a.resources.is_empty() && a.filename.is_empty() {
        return Err(CliError::msg("required resource not specified"));
    }
    if a.revision < 0 {
        return Err(CliError::msg(format!(
            "revision must be a positive integer: {}",
            a.revision
        )));
    }
    let timeout = watchutil::parse_signed_duration("rollout status", "timeout", &a.timeout)?;
    let list = targets(ctx, &a.resources, &a.selector, &a.filename).await?;
    if list.is_empty() {
        return no_resources(ctx).await;
    }
    for t in &list {
        let Some(kind) = Workload::of(&t.mapping.group, &t.mapping.kind) else {
            return Err(CliError::msg(format!(
                "no status viewer has been implemented for {}",
                t.mapping.kind
            )));
        };
        let watch = a.watch;
        let revision = a.revision;
        let fut = watchutil::until_with_sync(
            ctx,
            t,
            |_| Ok(Step::Continue),
            |ev| match ev {
                Event::Added(o) | Event::Modified(o) => {
                    let (line, done) = status_line(kind, &o, revision).map_err(CliError::Msg)?;
                    let _ = write!(ctx.out(), "{line}");
                    let _ = ctx.out().flush();
                    if done || !watch {
                        Ok(Step::Done(()))
                    } else {
                        Ok(Step::Continue)
                    }
                }
                Event::Deleted(_) => Err(CliError::msg("object has been deleted")),
                Event::Error(_) => Ok(Step::Continue),
            },
        );
        match timeout.filter(|d| !d.is_zero()) {
            Some(d) => tokio::time::timeout(d, fut)
                .await
                .map_err(|_| CliError::msg("timed out waiting for the condition"))??,
            None => fut.await?,
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// history

/// One revision of a workload: its number, change cause, pod template, and the object it
/// came from (ReplicaSet or ControllerRevision).
#[derive(Debug, Clone)]
pub struct Revision {
    pub number: i64,
    pub change_cause: String,
    pub template: Value,
    pub source: Value,
}

const CHANGE_CAUSE: &str = "kubernetes.io/change-cause";

/// The revisions of a Deployment from its ReplicaSets (those it controls), by number.
pub fn deployment_revisions(
    replica_sets: &[Value],
    deployment_uid: &str,
) -> BTreeMap<i64, Revision> {
    let mut out = BTreeMap::new();
    for rs in replica_sets
        .iter()
        .filter(|rs| controlled_by(rs, deployment_uid))
    {
        let Some(n) = revision_of(rs) else { continue };
        out.insert(
            n,
            Revision {
                number: n,
                change_cause: rs["metadata"]["annotations"][CHANGE_CAUSE]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                template: rs["spec"]["template"].clone(),
                source: rs.clone(),
            },
        );
    }
    out
}

/// The revisions of a DaemonSet or StatefulSet from its ControllerRevisions.
pub fn controller_revisions(history: &[Value], owner_uid: &str) -> BTreeMap<i64, Revision> {
    let mut out = BTreeMap::new();
    for cr in history.iter().filter(|cr| controlled_by(cr, owner_uid)) {
        let n = cr["revision"].as_i64().unwrap_or(0);
        let mut template = cr["data"]["spec"]["template"].clone();
        if let Some(m) = template.as_object_mut() {
            m.remove("$patch");
        }
        out.insert(
            n,
            Revision {
                number: n,
                change_cause: cr["metadata"]["annotations"][CHANGE_CAUSE]
                    .as_str()
                    .unwrap_or_default()
                    .to_string(),
                template,
                source: cr.clone(),
            },
        );
    }
    out
}

/// The `REVISION  CHANGE-CAUSE` table (Go's tabwriter with padding 2).
pub fn history_table(revs: &BTreeMap<i64, Revision>) -> String {
    if revs.is_empty() {
        return "No rollout history found.".into();
    }
    let rows: Vec<(String, String)> = revs
        .values()
        .map(|r| {
            let cause = if r.change_cause.is_empty() {
                "<none>".to_string()
            } else {
                r.change_cause.clone()
            };
            (r.number.to_string(), cause)
        })
        .collect();
    let width = rows
        .iter()
        .map(|r| r.0.len())
        .chain(std::iter::once("REVISION".len()))
        .max()
        .unwrap_or(8)
        + 2;
    let mut out = format!("{:<width$}CHANGE-CAUSE\n", "REVISION");
    for (n, c) in rows {
        out.push_str(&format!("{n:<width$}{c}\n"));
    }
    out
}

fn str_map(v: &Value) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = v
        .as_object()
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
                .collect()
        })
        .unwrap_or_default();
    out.sort();
    out
}

fn labels_multiline(out: &mut String, title: &str, v: &Value) {
    out.push_str(&format!("{title}:\t"));
    let labels = str_map(v);
    if labels.is_empty() {
        out.push_str("<none>\n");
        return;
    }
    for (i, (k, v)) in labels.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        out.push_str(&format!("{k}={v}\n"));
    }
}

fn annotations_multiline(out: &mut String, title: &str, v: &Value) {
    out.push_str(&format!("{title}:\t"));
    let annotations: Vec<_> = str_map(v)
        .into_iter()
        .filter(|(k, _)| k != "kubectl.kubernetes.io/last-applied-configuration")
        .collect();
    if annotations.is_empty() {
        out.push_str("<none>\n");
        return;
    }
    for (i, (k, v)) in annotations.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let value = v.trim_end_matches('\n');
        if value.len() + k.len() + 2 > 140 || value.contains('\n') {
            out.push_str(&format!("{k}:\n"));
            for line in value.split('\n') {
                let short: String = if line.len() > 138 {
                    format!("{}...", &line[..line.floor_char_boundary(138)])
                } else {
                    line.to_string()
                };
                out.push_str(&format!("\t  {short}\n"));
            }
        } else {
            out.push_str(&format!("{k}: {value}\n"));
        }
    }
}

fn ports(c: &Value, field: &str) -> String {
    c["ports"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    format!(
                        "{}/{}",
                        p[field].as_i64().unwrap_or(0),
                        p["protocol"].as_str().unwrap_or("TCP")
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

fn quantity_str(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn describe_containers(out: &mut String, label: &str, containers: &[Value]) {
    let none = if containers.is_empty() { " <none>" } else { "" };
    out.push_str(&format!("  {label}:{none}\n"));
    for c in containers {
        out.push_str(&format!("   {}:\n", c["name"].as_str().unwrap_or_default()));
        out.push_str(&format!(
            "    Image:\t{}\n",
            c["image"].as_str().unwrap_or_default()
        ));
        let p = ports(c, "containerPort");
        if p.contains(',') {
            out.push_str(&format!("    Ports:\t{p}\n"));
        } else {
            out.push_str(&format!(
                "    Port:\t{}\n",
                if p.is_empty() { "<none>" } else { &p }
            ));
        }
        let hp = ports(c, "hostPort");
        if hp.contains(',') {
            out.push_str(&format!("    Host Ports:\t{hp}\n"));
        } else {
            out.push_str(&format!(
                "    Host Port:\t{}\n",
                if hp.is_empty() { "<none>" } else { &hp }
            ));
        }
        for (field, title) in [("command", "Command"), ("args", "Args")] {
            if let Some(items) = c[field].as_array().filter(|a| !a.is_empty()) {
                out.push_str(&format!("    {title}:\n"));
                for item in items {
                    for line in item.as_str().unwrap_or_default().split('\n') {
                        out.push_str(&format!("      {line}\n"));
                    }
                }
            }
        }
        for (field, title) in [("limits", "Limits"), ("requests", "Requests")] {
            let res = &c["resources"][field];
            if let Some(m) = res.as_object().filter(|m| !m.is_empty()) {
                out.push_str(&format!("    {title}:\n"));
                let mut keys: Vec<_> = m.keys().collect();
                keys.sort();
                for k in keys {
                    out.push_str(&format!("      {k}:\t{}\n", quantity_str(&m[k])));
                }
            }
        }
        let env = c["env"].as_array().cloned().unwrap_or_default();
        out.push_str(if env.is_empty() {
            "    Environment:\t<none>\n"
        } else {
            "    Environment:\n"
        });
        for e in &env {
            let name = e["name"].as_str().unwrap_or_default();
            let vf = &e["valueFrom"];
            if vf.is_null() {
                for (i, line) in e["value"]
                    .as_str()
                    .unwrap_or_default()
                    .split('\n')
                    .enumerate()
                {
                    if i == 0 {
                        out.push_str(&format!("      {name}:\t{line}\n"));
                    } else {
                        out.push_str(&format!("      \t{line}\n"));
                    }
                }
            } else if vf["fieldRef"].is_object() {
                out.push_str(&format!(
                    "      {name}:\t ({}:{})\n",
                    vf["fieldRef"]["apiVersion"].as_str().unwrap_or_default(),
                    vf["fieldRef"]["fieldPath"].as_str().unwrap_or_default()
                ));
            } else if vf["resourceFieldRef"].is_object() {
                out.push_str(&format!(
                    "      {name}:\t ({})\n",
                    vf["resourceFieldRef"]["resource"]
                        .as_str()
                        .unwrap_or_default()
                ));
            } else if vf["secretKeyRef"].is_object() {
                let r = &vf["secretKeyRef"];
                out.push_str(&format!(
                    "      {name}:\t<set to the key '{}' in secret '{}'>\tOptional: {}\n",
                    r["key"].as_str().unwrap_or_default(),
                    r["name"].as_str().unwrap_or_default(),
                    r["optional"].as_bool().unwrap_or(false)
                ));
            } else if vf["configMapKeyRef"].is_object() {
                let r = &vf["configMapKeyRef"];
                out.push_str(&format!(
                    "      {name}:\t<set to the key '{}' of config map '{}'>\tOptional: {}\n",
                    r["key"].as_str().unwrap_or_default(),
                    r["name"].as_str().unwrap_or_default(),
                    r["optional"].as_bool().unwrap_or(false)
                ));
            }
        }
        let mut mounts = c["volumeMounts"].as_array().cloned().unwrap_or_default();
        out.push_str(if mounts.is_empty() {
            "    Mounts:\t<none>\n"
        } else {
            "    Mounts:\n"
        });
        mounts.sort_by(|a, b| {
            a["mountPath"]
                .as_str()
                .unwrap_or_default()
                .cmp(b["mountPath"].as_str().unwrap_or_default())
        });
        for m in &mounts {
            let mut flags = vec![if m["readOnly"].as_bool() == Some(true) {
                "ro".to_string()
            } else {
                "rw".to_string()
            }];
            if let Some(sp) = m["subPath"].as_str().filter(|s| !s.is_empty()) {
                flags.push(format!("path={}", api::gofmt::go_quote(sp)));
            }
            out.push_str(&format!(
                "      {} from {} ({})\n",
                m["mountPath"].as_str().unwrap_or_default(),
                m["name"].as_str().unwrap_or_default(),
                flags.join(",")
            ));
        }
    }
}

fn describe_volumes(out: &mut String, volumes: &[Value]) {
    if volumes.is_empty() {
        out.push_str("  Volumes:\t<none>\n");
        return;
    }
    out.push_str("  Volumes:\n");
    for v in volumes {
        out.push_str(&format!("   {}:\n", v["name"].as_str().unwrap_or_default()));
        let obj = v.as_object();
        if let Some(ed) = obj.and_then(|o| o.get("emptyDir")) {
            out.push_str(
                "    Type:\tEmptyDir (a temporary directory that shares a pod's lifetime)\n",
            );
            out.push_str(&format!(
                "    Medium:\t{}\n",
                ed["medium"].as_str().unwrap_or_default()
            ));
            out.push_str(&format!(
                "    SizeLimit:\t{}\n",
                ed["sizeLimit"]
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| "<unset>".into())
            ));
        } else if let Some(cm) = obj.and_then(|o| o.get("configMap")) {
            out.push_str("    Type:\tConfigMap (a volume populated by a ConfigMap)\n");
            out.push_str(&format!(
                "    Name:\t{}\n    Optional:\t{}\n",
                cm["name"].as_str().unwrap_or_default(),
                cm["optional"].as_bool().unwrap_or(false)
            ));
        } else if let Some(s) = obj.and_then(|o| o.get("secret")) {
            out.push_str("    Type:\tSecret (a volume populated by a Secret)\n");
            out.push_str(&format!(
                "    SecretName:\t{}\n    Optional:\t{}\n",
                s["secretName"].as_str().unwrap_or_default(),
                s["optional"].as_bool().unwrap_or(false)
            ));
        } else if let Some(kind) = obj.and_then(|o| o.keys().find(|k| *k != "name")) {
            out.push_str(&format!("    Type:\t{kind}\n"));
        }
    }
}

fn tolerations_multiline(out: &mut String, v: &Value) {
    out.push_str("  Tolerations:\t");
    let mut ts = v.as_array().cloned().unwrap_or_default();
    if ts.is_empty() {
        out.push_str("<none>\n");
        return;
    }
    ts.sort_by(|a, b| {
        a["key"]
            .as_str()
            .unwrap_or_default()
            .cmp(b["key"].as_str().unwrap_or_default())
    });
    for (i, t) in ts.iter().enumerate() {
        if i > 0 {
            out.push('\t');
        }
        let key = t["key"].as_str().unwrap_or_default();
        let value = t["value"].as_str().unwrap_or_default();
        let effect = t["effect"].as_str().unwrap_or_default();
        out.push_str(key);
        if !value.is_empty() {
            out.push_str(&format!("={value}"));
        }
        if !effect.is_empty() {
            out.push_str(&format!(":{effect}"));
        }
        if t["operator"] == "Exists" && value.is_empty() {
            if !key.is_empty() || !effect.is_empty() {
                out.push_str(" op=Exists");
            } else {
                out.push_str("op=Exists");
            }
        }
        if let Some(s) = t["tolerationSeconds"].as_i64() {
            out.push_str(&format!(" for {s}s"));
        }
        out.push('\n');
    }
}

/// kubectl's `DescribePodTemplate` (the text `rollout history --revision=N` prints).
pub fn describe_pod_template(t: &Value) -> String {
    let mut out = String::from("Pod Template:\n");
    labels_multiline(&mut out, "  Labels", &t["metadata"]["labels"]);
    if t["metadata"]["annotations"]
        .as_object()
        .is_some_and(|m| !m.is_empty())
    {
        annotations_multiline(&mut out, "  Annotations", &t["metadata"]["annotations"]);
    }
    let spec = &t["spec"];
    if let Some(sa) = spec["serviceAccountName"]
        .as_str()
        .filter(|s| !s.is_empty())
    {
        out.push_str(&format!("  Service Account:\t{sa}\n"));
    }
    if let Some(init) = spec["initContainers"].as_array().filter(|a| !a.is_empty()) {
        describe_containers(&mut out, "Init Containers", init);
    }
    describe_containers(
        &mut out,
        "Containers",
        &spec["containers"].as_array().cloned().unwrap_or_default(),
    );
    describe_volumes(
        &mut out,
        &spec["volumes"].as_array().cloned().unwrap_or_default(),
    );
    if let Some(pc) = spec["priorityClassName"].as_str().filter(|s| !s.is_empty()) {
        out.push_str(&format!("  Priority Class Name:\t{pc}\n"));
    }
    labels_multiline(&mut out, "  Node-Selectors", &spec["nodeSelector"]);
    tolerations_multiline(&mut out, &spec["tolerations"]);
    out
}

/// The revisions of a workload, read from the server.
async fn read_history(
    ctx: &Ctx,
    kind: Workload,
    t: &Target,
) -> Result<(Value, BTreeMap<i64, Revision>)> {
    let client = ctx.client().await?;
    let ns = t.namespace.as_deref().unwrap_or("default");
    let (plural, label) = match kind {
        Workload::Deployment => ("deployments", "Deployment"),
        Workload::DaemonSet => ("daemonsets", "DaemonSet"),
        Workload::StatefulSet => ("statefulsets", "Statefulset"),
    };
    let obj = client
        .get_json(&format!(
            "/apis/apps/v1/namespaces/{ns}/{plural}/{}",
            t.name
        ))
        .await
        .map_err(failed(format!("failed to retrieve {label} {}", t.name)))?;
    let uid = obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let selector = selector_string(&obj["spec"]["selector"]);
    let sel_q = watchutil::encode(&selector);
    let revs = match kind {
        Workload::Deployment => {
            let list = client
                .get_json(&format!(
                    "/apis/apps/v1/namespaces/{ns}/replicasets?labelSelector={sel_q}"
                ))
                .await
                .map_err(failed(format!(
                    "failed to retrieve replica sets from deployment {}",
                    t.name
                )))?;
            deployment_revisions(list["items"].as_array().map_or(&[][..], |v| v), &uid)
        }
        _ => {
            let list = client
                .get_json(&format!(
                    "/apis/apps/v1/namespaces/{ns}/controllerrevisions?labelSelector={sel_q}"
                ))
                .await
                .map_err(failed(format!(
                    "unable to find history controlled by {label} {}",
                    t.name
                )))?;
            controller_revisions(list["items"].as_array().map_or(&[][..], |v| v), &uid)
        }
    };
    Ok((obj, revs))
}

/// A failure as `error: <what>: <the server's message>`.
fn failed(what: String) -> impl FnOnce(CliError) -> CliError {
    move |e| CliError::msg(format!("{what}: {}", watchutil::plain_message(&e)))
}

/// `rollout undo`'s PATCH back to a revision: `rolled back`, or why it failed.
async fn restore(
    client: &RestClient,
    path: String,
    patch: &Value,
    content_type: &str,
    revision: i64,
) -> Result<String> {
    client
        .send(
            Request::new(Method::PATCH, path)
                .json(patch)
                .content_type(content_type),
        )
        .await?
        .ok()
        .map_err(failed(format!("failed restoring revision {revision}")))?;
    Ok("rolled back".into())
}

fn skipped(revision: i64) -> String {
    format!("skipped rollback (current template already matches revision {revision})")
}

fn no_visitor(prefix: &str, kind: &str) -> CliError {
    CliError::msg(format!(
        "{prefix} for {}, no visitor method exists for {{ {kind}}}",
        api::gofmt::go_quote(kind)
    ))
}

async fn history(ctx: &Ctx, a: HistoryArgs) -> Result<()> {
    if a.resources.is_empty() && a.filename.is_empty() {
        return Err(CliError::msg("required resource not specified"));
    }
    if a.revision < 0 {
        return Err(CliError::msg(format!(
            "revision must be a positive integer: {}",
            a.revision
        )));
    }
    let list = targets(ctx, &a.resources, &a.selector, &a.filename).await?;
    if list.is_empty() {
        return no_resources(ctx).await;
    }
    for t in &list {
        let Some(kind) = Workload::of(&t.mapping.group, &t.mapping.kind) else {
            return Err(no_visitor("error retrieving history", &t.mapping.kind));
        };
        let (owner, revs) = read_history(ctx, kind, t).await?;
        if let Some(fmt) = a.output.as_deref() {
            // A Deployment's history is its ReplicaSets; a DaemonSet's or StatefulSet's is
            // the object with each revision's template applied (upstream's `GetHistory`).
            let object = |r: &Revision| -> Value {
                if kind == Workload::Deployment {
                    r.source.clone()
                } else {
                    let mut o = owner.clone();
                    o["spec"]["template"] = r.template.clone();
                    o
                }
            };
            let objects: Vec<Value> = if a.revision > 0 {
                match revs.get(&a.revision) {
                    Some(r) => vec![object(r)],
                    None => return Err(CliError::msg("unable to find the specified revision")),
                }
            } else {
                revs.values().map(object).collect()
            };
            for o in &objects {
                print_object(ctx, fmt, o)?;
            }
            continue;
        }
        let text = if a.revision > 0 {
            match revs.get(&a.revision) {
                Some(r) => describe_pod_template(&r.template),
                None if revs.is_empty() => "No rollout history found.".into(),
                None => return Err(CliError::msg("unable to find the specified revision")),
            }
        } else {
            history_table(&revs)
        };
        let with = if a.revision > 0 {
            format!("with revision #{}", a.revision)
        } else {
            String::new()
        };
        let _ = writeln!(ctx.out(), "{} {with}\n{text}", t.kind_name());
    }
    Ok(())
}

/// Prints an object in an `-o` format this module supports (`name`, `json`, `yaml`).
fn print_object(ctx: &Ctx, fmt: &str, obj: &Value) -> Result<()> {
    let text = match fmt {
        "json" => {
            let mut s =
                serde_json::to_string_pretty(obj).map_err(|e| CliError::msg(e.to_string()))?;
            s.push('\n');
            s
        }
        "yaml" => serde_yaml_ng::to_string(obj).map_err(|e| CliError::msg(e.to_string()))?,
        "name" => {
            let kind = obj["kind"].as_str().unwrap_or_default().to_lowercase();
            let group = obj["apiVersion"]
                .as_str()
                .and_then(|v| v.split_once('/').map(|(g, _)| g.to_string()))
                .map(|g| format!(".{g}"))
                .unwrap_or_default();
            format!("{kind}{group}/{}\n", name_of(obj))
        }
        other => {
            return Err(CliError::msg(format!(
                "unable to match a printer suitable for the output format \"{other}\", allowed formats are: json,name,yaml"
            )));
        }
    };
    let _ = write!(ctx.out(), "{text}");
    Ok(())
}

// ---------------------------------------------------------------------------------------
// undo

/// The revision a Deployment rolls back to: `to` itself, or the one before the latest.
pub fn deployment_rollback_target<'a>(
    revs: &'a BTreeMap<i64, Revision>,
    to: i64,
    name: &str,
) -> Result<&'a Revision, String> {
    if to > 0 {
        return revs
            .get(&to)
            .ok_or_else(|| format!("unable to find specified revision {to} in history"));
    }
    let mut it = revs.values().rev();
    let _latest = it.next();
    it.next().ok_or_else(|| {
        format!(
            "no rollout history found for deployment {}",
            api::gofmt::go_quote(name)
        )
    })
}

fn without_hash(template: &Value) -> Value {
    let mut t = template.clone();
    if let Some(labels) = t["metadata"]["labels"].as_object_mut() {
        labels.remove("pod-template-hash");
    }
    normalize(&mut t);
    t
}

/// Drops empty maps and lists (Go's semantic equality treats nil and empty alike).
fn normalize(v: &mut Value) {
    match v {
        Value::Object(m) => {
            for x in m.values_mut() {
                normalize(x);
            }
            m.retain(|_, x| match x {
                Value::Object(o) => !o.is_empty(),
                Value::Array(a) => !a.is_empty(),
                Value::Null => false,
                _ => true,
            });
        }
        Value::Array(a) => a.iter_mut().for_each(normalize),
        _ => {}
    }
}

/// Whether two pod templates are equal but for the `pod-template-hash` label.
pub fn equal_ignore_hash(a: &Value, b: &Value) -> bool {
    without_hash(a) == without_hash(b)
}

const ANNOTATIONS_TO_SKIP: &[&str] = &[
    "kubectl.kubernetes.io/last-applied-configuration",
    "deployment.kubernetes.io/revision",
    "deployment.kubernetes.io/revision-history",
    "deployment.kubernetes.io/desired-replicas",
    "deployment.kubernetes.io/max-replicas",
    "deprecated.deployment.rollback.to",
];

/// The JSON patch that rolls a Deployment back to a ReplicaSet's template (the template
/// without its hash label; the Deployment's own bookkeeping annotations, plus the
/// ReplicaSet's others).
pub fn deployment_rollback_patch(deployment: &Value, rs: &Value) -> Value {
    let mut template = rs["spec"]["template"].clone();
    if let Some(labels) = template["metadata"]["labels"].as_object_mut() {
        labels.remove("pod-template-hash");
    }
    let mut annotations = serde_json::Map::new();
    if let Some(m) = deployment["metadata"]["annotations"].as_object() {
        for (k, v) in m {
            if ANNOTATIONS_TO_SKIP.contains(&k.as_str()) {
                annotations.insert(k.clone(), v.clone());
            }
        }
    }
    if let Some(m) = rs["metadata"]["annotations"].as_object() {
        for (k, v) in m {
            if !ANNOTATIONS_TO_SKIP.contains(&k.as_str()) {
                annotations.insert(k.clone(), v.clone());
            }
        }
    }
    json!([
        {"op": "replace", "path": "/spec/template", "value": template},
        {"op": "replace", "path": "/metadata/annotations", "value": annotations},
    ])
}

async fn undo(ctx: &Ctx, a: UndoArgs) -> Result<()> {
    let dry = DryRunMode::parse(a.dry_run.as_deref())?;
    if a.resources.is_empty() && a.filename.is_empty() {
        return Err(CliError::msg("required resource not specified"));
    }
    let list = targets(ctx, &a.resources, &a.selector, &a.filename).await?;
    let client = ctx.client().await?;
    for t in &list {
        let Some(kind) = Workload::of(&t.mapping.group, &t.mapping.kind) else {
            return Err(no_visitor("error retrieving rollbacker", &t.mapping.kind));
        };
        if a.to_revision < 0 {
            return Err(CliError::msg(format!(
                "unable to find specified revision {} in history",
                a.to_revision
            )));
        }
        let (obj, revs) = read_history(ctx, kind, t).await?;
        let ns = t.namespace.as_deref().unwrap_or("default");
        let dry_q = if dry == DryRunMode::Server {
            "?dryRun=All"
        } else {
            ""
        };
        let result = match kind {
            Workload::Deployment => {
                let target = deployment_rollback_target(&revs, a.to_revision, &t.name)
                    .map_err(CliError::Msg)?;
                if dry == DryRunMode::Client {
                    describe_pod_template(&target.template)
                } else {
                    if obj["spec"]["paused"].as_bool() == Some(true) {
                        return Err(CliError::msg(
                            "you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again",
                        ));
                    }
                    if equal_ignore_hash(&target.template, &obj["spec"]["template"]) {
                        skipped(a.to_revision)
                    } else {
                        let patch = deployment_rollback_patch(&obj, &target.source);
                        let path = format!(
                            "/apis/apps/v1/namespaces/{ns}/deployments/{}{dry_q}",
                            t.name
                        );
                        let ct = "application/json-patch+json";
                        restore(client, path, &patch, ct, a.to_revision).await?
                    }
                }
            }
            Workload::DaemonSet | Workload::StatefulSet => {
                if a.to_revision == 0 && revs.len() <= 1 {
                    return Err(CliError::msg("no last revision to roll back to"));
                }
                let target = if a.to_revision == 0 {
                    revs.values().rev().nth(1)
                } else {
                    revs.get(&a.to_revision)
                };
                let Some(target) = target else {
                    return Err(CliError::msg(format!(
                        "unable to find specified revision {} in history",
                        a.to_revision
                    )));
                };
                if dry == DryRunMode::Client {
                    format!(
                        "will roll back to {}",
                        describe_pod_template(&target.template)
                    )
                } else if controller_revision_matches(&obj, &target.source) {
                    skipped(a.to_revision)
                } else {
                    let plural = if kind == Workload::DaemonSet {
                        "daemonsets"
                    } else {
                        "statefulsets"
                    };
                    let path = format!("/apis/apps/v1/namespaces/{ns}/{plural}/{}{dry_q}", t.name);
                    let ct = "application/strategic-merge-patch+json";
                    restore(client, path, &target.source["data"], ct, a.to_revision).await?
                }
            }
        };
        let _ = writeln!(ctx.out(), "{} {result}{}", t.kind_name(), dry.suffix());
    }
    Ok(())
}

/// Whether a DaemonSet's or StatefulSet's current template is the one a ControllerRevision
/// records.
pub fn controller_revision_matches(obj: &Value, cr: &Value) -> bool {
    let mut recorded = cr["data"]["spec"]["template"].clone();
    if let Some(m) = recorded.as_object_mut() {
        m.remove("$patch");
    }
    let mut a = obj["spec"]["template"].clone();
    normalize(&mut a);
    normalize(&mut recorded);
    a == recorded
}

// ---------------------------------------------------------------------------------------
// restart, pause, resume

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    Restart,
    Pause,
    Resume,
}

/// What an action does to one object: the strategic merge patch to send, or nothing (the
/// object is already as asked), or the error kubectl reports for it.
#[derive(Debug, Clone, PartialEq)]
pub enum PatchPlan {
    Patch(Value),
    Unchanged,
    Error(String),
}

/// upstream's `ObjectRestarter`/`ObjectPauser`/`ObjectResumer` followed by the two-way
/// merge patch of the change. `now` is the RFC 3339 time for `restartedAt`.
pub fn plan(action: Action, group: &str, kind: &str, obj: &Value, now: &str) -> PatchPlan {
    let workload = Workload::of(group, kind);
    let paused = obj["spec"]["paused"].as_bool() == Some(true);
    match action {
        Action::Restart => {
            if workload.is_none() {
                return PatchPlan::Error("restarting is not supported".into());
            }
            if workload == Some(Workload::Deployment) && paused {
                return PatchPlan::Error(
                    "can't restart paused deployment (run rollout resume first)".into(),
                );
            }
            let current =
                obj["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"]
                    .as_str();
            if current == Some(now) {
                return PatchPlan::Unchanged;
            }
            PatchPlan::Patch(json!({"spec":{"template":{"metadata":{"annotations":{
                "kubectl.kubernetes.io/restartedAt": now}}}}}))
        }
        Action::Pause => {
            if workload != Some(Workload::Deployment) {
                return PatchPlan::Error("pausing is not supported".into());
            }
            if paused {
                return PatchPlan::Error("is already paused".into());
            }
            PatchPlan::Patch(json!({"spec":{"paused":true}}))
        }
        Action::Resume => {
            if workload != Some(Workload::Deployment) {
                return PatchPlan::Error("resuming is not supported".into());
            }
            if !paused {
                return PatchPlan::Error("is not paused".into());
            }
            PatchPlan::Patch(json!({"spec":{"paused":null}}))
        }
    }
}

/// Go's `time.Now().Format(time.RFC3339)` in the local zone.
fn rfc3339_now() -> String {
    let now = jiff::Zoned::now();
    let offset = now.offset().seconds();
    if offset == 0 {
        now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    } else {
        now.strftime("%Y-%m-%dT%H:%M:%S%:z").to_string()
    }
}

async fn patch_cmd(ctx: &Ctx, a: PatchArgs, action: Action) -> Result<()> {
    if a.resources.is_empty() && a.filename.is_empty() {
        return Err(CliError::msg("required resource not specified"));
    }
    let list = targets(ctx, &a.resources, &a.selector, &a.filename).await?;
    if list.is_empty() {
        return no_resources(ctx).await;
    }
    let client = ctx.client().await?;
    let now = rfc3339_now();
    let mut errors = Vec::new();
    for t in &list {
        let quoted = api::gofmt::go_quote(&t.name);
        match plan(action, &t.mapping.group, &t.mapping.kind, &t.object, &now) {
            PatchPlan::Error(e) => {
                errors.push(format!(
                    "error: {} {quoted} {e}",
                    t.mapping.group_resource()
                ));
            }
            PatchPlan::Unchanged => match action {
                Action::Restart => errors.push(format!(
                    "failed to create patch for {}: if restart has already been triggered within the past second, please wait before attempting to trigger another",
                    t.name
                )),
                Action::Pause => {
                    let _ = writeln!(ctx.out(), "{} already paused", t.kind_name());
                }
                Action::Resume => {
                    let _ = writeln!(ctx.out(), "{} already resumed", t.kind_name());
                }
            },
            PatchPlan::Patch(p) => {
                let path = format!(
                    "{}?fieldManager={}",
                    t.path(),
                    watchutil::encode(&a.field_manager)
                );
                let resp = client
                    .send(
                        Request::new(Method::PATCH, path)
                            .json(&p)
                            .content_type("application/strategic-merge-patch+json"),
                    )
                    .await?;
                match resp.json() {
                    Ok(obj) => {
                        let op = match action {
                            Action::Restart => "restarted",
                            Action::Pause => "paused",
                            Action::Resume => "resumed",
                        };
                        match a.output.as_deref() {
                            Some(fmt) if fmt != "name" => print_object(ctx, fmt, &obj)?,
                            Some(_) => {
                                let _ = writeln!(ctx.out(), "{}", t.kind_name());
                            }
                            None => {
                                let _ = writeln!(ctx.out(), "{} {op}", t.kind_name());
                            }
                        }
                    }
                    Err(e) => errors.push(format!(
                        "failed to patch: {}",
                        watchutil::plain_message(&e)
                    )),
                }
            }
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(fail_with(ctx, &errors))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deploy(generation: i64, status: Value) -> Value {
        json!({"metadata":{"name":"nginx","generation":generation,
            "annotations":{"deployment.kubernetes.io/revision":"3"}},
            "spec":{"replicas":3},"status":status})
    }

    #[test]
    fn deployment_status_lines() {
        let d = deploy(2, json!({"observedGeneration":1}));
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap(),
            (
                "Waiting for deployment spec update to be observed...\n".into(),
                false
            )
        );
        let d = deploy(
            2,
            json!({"observedGeneration":2,"updatedReplicas":1,"replicas":3}),
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap().0,
            "Waiting for deployment \"nginx\" rollout to finish: 1 out of 3 new replicas have been updated...\n"
        );
        let d = deploy(
            2,
            json!({"observedGeneration":2,"updatedReplicas":3,"replicas":4}),
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap().0,
            "Waiting for deployment \"nginx\" rollout to finish: 1 old replicas are pending termination...\n"
        );
        let d = deploy(
            2,
            json!({"observedGeneration":2,"updatedReplicas":3,"replicas":3,"availableReplicas":1}),
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap().0,
            "Waiting for deployment \"nginx\" rollout to finish: 1 of 3 updated replicas are available...\n"
        );
        let d = deploy(
            2,
            json!({"observedGeneration":2,"updatedReplicas":3,"replicas":3,"availableReplicas":3}),
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap(),
            (
                "deployment \"nginx\" successfully rolled out\n".into(),
                true
            )
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 2).unwrap_err(),
            "desired revision (2) is different from the running revision (3)"
        );
        let d = deploy(
            2,
            json!({"observedGeneration":2,"conditions":[{"type":"Progressing","status":"False","reason":"ProgressDeadlineExceeded"}]}),
        );
        assert_eq!(
            status_line(Workload::Deployment, &d, 0).unwrap_err(),
            "deployment \"nginx\" exceeded its progress deadline"
        );
    }

    #[test]
    fn daemonset_and_statefulset_status_lines() {
        let ds = json!({"metadata":{"name":"ds","generation":1},"spec":{},
            "status":{"observedGeneration":1,"updatedNumberScheduled":1,"desiredNumberScheduled":3}});
        assert_eq!(
            status_line(Workload::DaemonSet, &ds, 0).unwrap().0,
            "Waiting for daemon set \"ds\" rollout to finish: 1 out of 3 new pods have been updated...\n"
        );
        let ds = json!({"metadata":{"name":"ds"},"spec":{"updateStrategy":{"type":"OnDelete"}}});
        assert_eq!(
            status_line(Workload::DaemonSet, &ds, 0).unwrap_err(),
            "rollout status is only available for RollingUpdate strategy type"
        );
        let sts = json!({"metadata":{"name":"web","generation":1},
            "spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}},
            "status":{"observedGeneration":1,"readyReplicas":1}});
        assert_eq!(
            status_line(Workload::StatefulSet, &sts, 0).unwrap().0,
            "Waiting for 2 pods to be ready...\n"
        );
        let sts = json!({"metadata":{"name":"web","generation":1},
            "spec":{"replicas":3,"updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"partition":0}}},
            "status":{"observedGeneration":1,"readyReplicas":3,"updatedReplicas":3}});
        assert_eq!(
            status_line(Workload::StatefulSet, &sts, 0).unwrap(),
            (
                "partitioned roll out complete: 3 new pods have been updated...\n".into(),
                true
            )
        );
        let sts = json!({"metadata":{"name":"web","generation":1},
            "spec":{"replicas":1,"updateStrategy":{"type":"RollingUpdate"}},
            "status":{"observedGeneration":1,"readyReplicas":1,"currentReplicas":1,
                "currentRevision":"web-1","updateRevision":"web-1"}});
        assert_eq!(
            status_line(Workload::StatefulSet, &sts, 0).unwrap(),
            (
                "statefulset rolling update complete 1 pods at revision web-1...\n".into(),
                true
            )
        );
    }

    fn rs(rev: &str, owner: &str, image: &str) -> Value {
        json!({"metadata":{"name":format!("nginx-{rev}"),
            "annotations":{"deployment.kubernetes.io/revision":rev},
            "ownerReferences":[{"uid":owner,"controller":true}]},
            "spec":{"template":{"metadata":{"labels":{"app":"nginx","pod-template-hash":rev}},
                "spec":{"containers":[{"name":"nginx","image":image}]}}}})
    }

    #[test]
    fn history_and_rollback_target() {
        let rss = vec![
            rs("1", "u", "nginx"),
            rs("2", "u", "nginx:1.25"),
            rs("9", "other", "x"),
        ];
        let revs = deployment_revisions(&rss, "u");
        assert_eq!(revs.keys().copied().collect::<Vec<_>>(), vec![1, 2]);
        assert_eq!(
            history_table(&revs),
            "REVISION  CHANGE-CAUSE\n1         <none>\n2         <none>\n"
        );
        assert_eq!(history_table(&BTreeMap::new()), "No rollout history found.");
        assert_eq!(
            deployment_rollback_target(&revs, 0, "nginx")
                .unwrap()
                .number,
            1
        );
        assert_eq!(
            deployment_rollback_target(&revs, 2, "nginx")
                .unwrap()
                .number,
            2
        );
        assert_eq!(
            deployment_rollback_target(&revs, 7, "nginx").unwrap_err(),
            "unable to find specified revision 7 in history"
        );
        let one = deployment_revisions(&rss[..1], "u");
        assert_eq!(
            deployment_rollback_target(&one, 0, "nginx").unwrap_err(),
            "no rollout history found for deployment \"nginx\""
        );
    }

    #[test]
    fn rollback_patch_and_equality() {
        let d = json!({"metadata":{"annotations":{"deployment.kubernetes.io/revision":"2","other":"x"}},
            "spec":{"template":{"metadata":{"labels":{"app":"nginx"}},
                "spec":{"containers":[{"name":"nginx","image":"nginx"}]}}}});
        let r = rs("1", "u", "nginx");
        assert!(equal_ignore_hash(
            &r["spec"]["template"],
            &d["spec"]["template"]
        ));
        let r2 = rs("2", "u", "nginx:1.25");
        assert!(!equal_ignore_hash(
            &r2["spec"]["template"],
            &d["spec"]["template"]
        ));
        let p = deployment_rollback_patch(&d, &r2);
        assert_eq!(p[0]["value"]["metadata"]["labels"], json!({"app":"nginx"}));
        assert_eq!(
            p[1]["value"],
            json!({"deployment.kubernetes.io/revision":"2"})
        );
    }

    #[test]
    fn pod_template_text() {
        let t = json!({"metadata":{"labels":{"app":"nginx","pod-template-hash":"69f5446b4"}},
            "spec":{"containers":[{"name":"nginx","image":"nginx:1.25"}]}});
        assert_eq!(
            describe_pod_template(&t),
            "Pod Template:\n  Labels:\tapp=nginx\n\tpod-template-hash=69f5446b4\n  Containers:\n   nginx:\n    Image:\tnginx:1.25\n    Port:\t<none>\n    Host Port:\t<none>\n    Environment:\t<none>\n    Mounts:\t<none>\n  Volumes:\t<none>\n  Node-Selectors:\t<none>\n  Tolerations:\t<none>\n"
        );
    }

    #[test]
    fn plans() {
        let d = json!({"spec":{"paused":true}});
        assert_eq!(
            plan(Action::Pause, "apps", "Deployment", &d, "t"),
            PatchPlan::Error("is already paused".into())
        );
        assert_eq!(
            plan(Action::Restart, "apps", "Deployment", &d, "t"),
            PatchPlan::Error("can't restart paused deployment (run rollout resume first)".into())
        );
        assert_eq!(
            plan(Action::Resume, "apps", "Deployment", &d, "t"),
            PatchPlan::Patch(json!({"spec":{"paused":null}}))
        );
        assert_eq!(
            plan(Action::Pause, "", "Service", &d, "t"),
            PatchPlan::Error("pausing is not supported".into())
        );
        let d = json!({"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":"t"}}}}});
        assert_eq!(
            plan(Action::Restart, "apps", "StatefulSet", &d, "t"),
            PatchPlan::Unchanged
        );
        assert_eq!(
            plan(Action::Resume, "apps", "Deployment", &d, "t"),
            PatchPlan::Error("is not paused".into())
        );
        assert!(rfc3339_now().len() >= 20);
    }
}
