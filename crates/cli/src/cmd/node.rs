//! `kubectl cordon`, `uncordon`, `drain` and `taint`, as kubectl's `pkg/cmd/drain` with
//! `pkg/drain` (the cordon helper, the pod filters, eviction with retries while a
//! PodDisruptionBudget refuses, deletion) and `pkg/cmd/taint`. The pod filters and the taint
//! arithmetic are pure functions; the commands around them read and patch.

use std::io::Write;
use std::time::{Duration, Instant};

use http::Method;
use serde_json::{Value, json};

use crate::cmd::watchutil::{
    self, DryRunMode, controller_of, fail_with, format_duration, plain_message,
};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::Mapping;
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct CordonArgs {
    nodes: Vec<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    /// Must be "none", "server", or "client".
    #[arg(long = "dry-run", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged")]
    dry_run: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct DrainArgs {
    nodes: Vec<String>,
    /// Continue even if there are pods that do not declare a controller.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    force: bool,
    /// Ignore DaemonSet-managed pods.
    #[arg(long = "ignore-daemonsets", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    ignore_daemonsets: bool,
    /// Continue even if there are pods using emptyDir.
    #[arg(long = "delete-emptydir-data", alias = "delete-local-data", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    delete_emptydir_data: bool,
    /// Period of time in seconds given to each pod to terminate gracefully. If negative,
    /// the default value specified in the pod will be used.
    #[arg(long = "grace-period", default_value_t = -1, allow_negative_numbers = true)]
    grace_period: i64,
    /// The length of time to wait before giving up, zero means infinite.
    #[arg(long, default_value = "0s")]
    timeout: String,
    /// Label selector to filter pods on the node.
    #[arg(long = "pod-selector", default_value = "")]
    pod_selector: String,
    /// Force drain to use delete, even if eviction is supported.
    #[arg(long = "disable-eviction", num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    disable_eviction: bool,
    /// If pod DeletionTimestamp older than N seconds, skip waiting for the pod.
    #[arg(long = "skip-wait-for-delete-timeout", default_value_t = 0)]
    skip_wait_for_delete_timeout: i64,
    #[arg(long = "chunk-size", default_value_t = 500)]
    chunk_size: i64,
    #[arg(long = "dry-run", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged")]
    dry_run: Option<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    selector: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct TaintArgs {
    /// `node NAME… KEY=VAL:EFFECT… KEY[:EFFECT]-…`
    args: Vec<String>,
    /// If true, allow taints to be overwritten.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    overwrite: bool,
    /// Select all nodes in the cluster.
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "true", default_value_t = false, action = clap::ArgAction::Set)]
    all: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    selector: Option<String>,
    #[arg(long = "dry-run", num_args = 0..=1, require_equals = true, default_missing_value = "unchanged")]
    dry_run: Option<String>,
    #[arg(short = 'o', long)]
    output: Option<String>,
    #[arg(long = "field-manager", default_value = "kubectl-taint")]
    field_manager: String,
    #[arg(long, num_args = 0..=1, require_equals = true, default_missing_value = "strict")]
    validate: Option<String>,
}

fn nodes_mapping() -> Mapping {
    Mapping {
        group: String::new(),
        version: "v1".into(),
        resource: "nodes".into(),
        kind: "Node".into(),
        namespaced: false,
    }
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

fn ns_of(v: &Value) -> String {
    v["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The nodes named, or selected by `-l` (kubectl's builder for `cordon`/`drain`).
async fn node_objects(
    ctx: &Ctx,
    names: &[String],
    selector: Option<&str>,
    verb: &str,
) -> Result<Vec<Value>> {
    if names.is_empty() && selector.is_none() {
        return Err(CliError::usage(
            format!("kubectl {verb}"),
            format!("USAGE: {verb} NODE [flags]"),
        ));
    }
    if !names.is_empty() && selector.is_some_and(|s| !s.is_empty()) {
        return Err(CliError::usage(
            format!("kubectl {verb}"),
            "error: cannot specify both a node name and a --selector option",
        ));
    }
    let client = ctx.client().await?;
    let m = nodes_mapping();
    if let Some(sel) = selector {
        let (items, _) = watchutil::list(ctx, &m, None, Some(sel), None).await?;
        return Ok(items);
    }
    let mut out = Vec::new();
    for n in names {
        let n = n
            .strip_prefix("node/")
            .or_else(|| n.strip_prefix("nodes/"))
            .unwrap_or(n);
        out.push(client.get_json(&m.object_path(None, n)).await?);
    }
    Ok(out)
}

/// Cordons (or uncordons) nodes, printing kubectl's lines; failures are printed and do not
/// fail the command (as kubectl's `RunCordonOrUncordon`).
async fn cordon_nodes(ctx: &Ctx, nodes: &[Value], desired: bool, dry: DryRunMode) -> Result<()> {
    let client = ctx.client().await?;
    let verb = if desired { "cordon" } else { "uncordon" };
    for node in nodes {
        let name = name_of(node);
        let current = node["spec"]["unschedulable"].as_bool().unwrap_or(false);
        if current == desired {
            let _ = writeln!(ctx.out(), "node/{name} already {verb}ed{}", dry.suffix());
            continue;
        }
        if dry != DryRunMode::Client {
            let patch = if desired {
                json!({"spec":{"unschedulable":true}})
            } else {
                json!({"spec":{"unschedulable":null}})
            };
            let q = if dry == DryRunMode::Server {
                "?dryRun=All"
            } else {
                ""
            };
            let res = client
                .send(
                    Request::new(Method::PATCH, format!("/api/v1/nodes/{name}{q}"))
                        .json(&patch)
                        .content_type("application/strategic-merge-patch+json"),
                )
                .await
                .and_then(|r| r.ok());
            if let Err(e) = res {
                let _ = writeln!(
                    ctx.err(),
                    "error: unable to {verb} node {}: {}",
                    api::gofmt::go_quote(&name),
                    plain_message(&e)
                );
                continue;
            }
        }
        let _ = writeln!(ctx.out(), "node/{name} {verb}ed{}", dry.suffix());
    }
    Ok(())
}

/// `cordon` (`unschedulable` true) or `uncordon` (false).
pub async fn cordon(ctx: &Ctx, args: CordonArgs, unschedulable: bool) -> Result<()> {
    let dry = DryRunMode::parse(args.dry_run.as_deref())?;
    let verb = if unschedulable { "cordon" } else { "uncordon" };
    let nodes = node_objects(ctx, &args.nodes, args.selector.as_deref(), verb).await?;
    cordon_nodes(ctx, &nodes, unschedulable, dry).await
}

// ---------------------------------------------------------------------------------------
// drain

const DAEMONSET_FATAL: &str = "DaemonSet-managed Pods (use --ignore-daemonsets to ignore)";
const DAEMONSET_WARNING: &str = "ignoring DaemonSet-managed Pods";
const LOCAL_STORAGE_FATAL: &str =
    "Pods with local storage (use --delete-emptydir-data to override)";
const LOCAL_STORAGE_WARNING: &str = "deleting Pods with local storage";
const UNMANAGED_FATAL: &str =
    "cannot delete Pods that declare no controller (use --force to override)";
const UNMANAGED_WARNING: &str = "deleting Pods that declare no controller";

/// A pod filter's verdict (upstream's `PodDeleteStatus`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    Okay,
    Skip,
    Warning { delete: bool, message: String },
    Error(String),
}

impl Verdict {
    fn deletes(&self) -> bool {
        matches!(self, Verdict::Okay | Verdict::Warning { delete: true, .. })
    }
}

/// The drain options the filters read.
#[derive(Debug, Clone, Default)]
pub struct DrainOptions {
    pub force: bool,
    pub ignore_daemonsets: bool,
    pub delete_emptydir_data: bool,
    pub skip_wait_for_delete_timeout: i64,
}

/// Reading a pod's DaemonSet: `Ok(())` when it exists, else whether it was not found and
/// the error message.
pub type DaemonSetRead = Result<(), (bool, String)>;

/// Looks up a pod's DaemonSet by namespace and name.
pub type DaemonSetLookup<'a> = &'a dyn Fn(&str, &str) -> DaemonSetRead;

fn finished(pod: &Value) -> bool {
    matches!(
        pod["status"]["phase"].as_str(),
        Some("Succeeded") | Some("Failed")
    )
}

/// upstream's filters in order (skip deleted, DaemonSet, mirror, local storage,
/// unreplicated): the first verdict that does not delete wins, else the last.
pub fn filter_pod(
    pod: &Value,
    o: &DrainOptions,
    ds_lookup: DaemonSetLookup<'_>,
    now: i64,
) -> Verdict {
    let filters: [&dyn Fn() -> Verdict; 5] = [
        &|| {
            if o.skip_wait_for_delete_timeout > 0
                && let Some(ts) = pod["metadata"]["deletionTimestamp"].as_str()
                && let Ok(t) = ts.parse::<jiff::Timestamp>()
                && now - t.as_second() > o.skip_wait_for_delete_timeout
            {
                return Verdict::Skip;
            }
            Verdict::Okay
        },
        &|| {
            let Some(c) = controller_of(pod) else {
                return Verdict::Okay;
            };
            if c["kind"].as_str() != Some("DaemonSet") || finished(pod) {
                return Verdict::Okay;
            }
            match ds_lookup(&ns_of(pod), c["name"].as_str().unwrap_or_default()) {
                Err((true, msg)) if o.force => Verdict::Warning {
                    delete: true,
                    message: msg,
                },
                Err((_, msg)) => Verdict::Error(msg),
                Ok(()) if !o.ignore_daemonsets => Verdict::Error(DAEMONSET_FATAL.into()),
                Ok(()) => Verdict::Warning {
                    delete: false,
                    message: DAEMONSET_WARNING.into(),
                },
            }
        },
        &|| {
            if pod["metadata"]["annotations"]["kubernetes.io/config.mirror"].is_string() {
                Verdict::Skip
            } else {
                Verdict::Okay
            }
        },
        &|| {
            let local = pod["spec"]["volumes"]
                .as_array()
                .is_some_and(|vs| vs.iter().any(|v| v.get("emptyDir").is_some()));
            if !local || finished(pod) {
                return Verdict::Okay;
            }
            if !o.delete_emptydir_data {
                return Verdict::Error(LOCAL_STORAGE_FATAL.into());
            }
            Verdict::Warning {
                delete: true,
                message: LOCAL_STORAGE_WARNING.into(),
            }
        },
        &|| {
            if finished(pod) || controller_of(pod).is_some() {
                return Verdict::Okay;
            }
            if o.force {
                Verdict::Warning {
                    delete: true,
                    message: UNMANAGED_WARNING.into(),
                }
            } else {
                Verdict::Error(UNMANAGED_FATAL.into())
            }
        },
    ];
    let mut verdict = Verdict::Okay;
    for f in filters {
        verdict = f();
        if !verdict.deletes() {
            break;
        }
    }
    verdict
}

/// The pods of a node sorted into what drain deletes, the warning line, and the errors
/// (`cannot delete <message>: ns/a, ns/b`), grouped by message in first-seen order.
pub fn sort_pods(pods: &[Value], verdicts: &[Verdict]) -> (Vec<Value>, String, Vec<String>) {
    let mut delete = Vec::new();
    let mut warnings: Vec<(String, Vec<String>)> = Vec::new();
    let mut errors: Vec<(String, Vec<String>)> = Vec::new();
    fn add(groups: &mut Vec<(String, Vec<String>)>, msg: &str, pod: String) {
        match groups.iter_mut().find(|(m, _)| m == msg) {
            Some((_, ps)) => ps.push(pod),
            None => groups.push((msg.to_string(), vec![pod])),
        }
    }
    for (pod, v) in pods.iter().zip(verdicts) {
        let id = format!("{}/{}", ns_of(pod), name_of(pod));
        if v.deletes() {
            delete.push(pod.clone());
        }
        match v {
            Verdict::Warning { message, .. } => add(&mut warnings, message, id),
            Verdict::Error(m) => add(
                &mut errors,
                if m.is_empty() { "unexpected error" } else { m },
                id,
            ),
            _ => {}
        }
    }
    let warning = warnings
        .iter()
        .map(|(m, ps)| format!("{m}: {}", ps.join(", ")))
        .collect::<Vec<_>>()
        .join("; ");
    let errors = errors
        .iter()
        .map(|(m, ps)| format!("cannot delete {m}: {}", ps.join(", ")))
        .collect();
    (delete, warning, errors)
}

/// kubectl's aggregate error text (`a`, or `[a, b]`).
fn aggregate(errs: &[String]) -> String {
    if errs.len() == 1 {
        errs[0].clone()
    } else {
        format!("[{}]", errs.join(", "))
    }
}

struct Drainer<'a> {
    ctx: &'a Ctx,
    args: &'a DrainArgs,
    opts: DrainOptions,
    dry: DryRunMode,
    timeout: Option<Duration>,
}

impl Drainer<'_> {
    /// The pods drain deletes on a node, the warning, and the errors.
    async fn pods_for_deletion(&self, node: &str) -> Result<(Vec<Value>, String, Vec<String>)> {
        let client = self.ctx.client().await?;
        let pods_mapping = Mapping {
            group: String::new(),
            version: "v1".into(),
            resource: "pods".into(),
            kind: "Pod".into(),
            namespaced: true,
        };
        let (pods, _) = watchutil::list(
            self.ctx,
            &pods_mapping,
            None,
            Some(&self.args.pod_selector),
            Some(&format!("spec.nodeName={node}")),
        )
        .await?;
        // Read the DaemonSets the pods name first (the filters are synchronous).
        let mut daemonsets: Vec<((String, String), DaemonSetRead)> = Vec::new();
        for pod in &pods {
            if let Some(c) = controller_of(pod)
                && c["kind"].as_str() == Some("DaemonSet")
            {
                let key = (
                    ns_of(pod),
                    c["name"].as_str().unwrap_or_default().to_string(),
                );
                if daemonsets.iter().any(|(k, _)| *k == key) {
                    continue;
                }
                let r = client
                    .get_json(&format!(
                        "/apis/apps/v1/namespaces/{}/daemonsets/{}",
                        key.0, key.1
                    ))
                    .await
                    .map(|_| ())
                    .map_err(|e| (e.is_not_found(), plain_message(&e)));
                daemonsets.push((key, r));
            }
        }
        let lookup = |ns: &str, name: &str| -> Result<(), (bool, String)> {
            daemonsets
                .iter()
                .find(|((n, m), _)| n == ns && m == name)
                .map(|(_, r)| r.clone())
                .unwrap_or(Ok(()))
        };
        let now = jiff::Timestamp::now().as_second();
        let verdicts: Vec<Verdict> = pods
            .iter()
            .map(|p| filter_pod(p, &self.opts, &lookup, now))
            .collect();
        Ok(sort_pods(&pods, &verdicts))
    }

    fn delete_options(&self) -> Value {
        let mut o = json!({});
        if self.args.grace_period >= 0 {
            o["gracePeriodSeconds"] = json!(self.args.grace_period);
        }
        if self.dry == DryRunMode::Server {
            o["dryRun"] = json!(["All"]);
        }
        o
    }

    fn global_timeout(&self) -> String {
        format_duration(
            self.timeout
                .unwrap_or(Duration::from_nanos(i64::MAX as u64)),
        )
    }

    /// Evicts one pod, retrying while a disruption budget refuses (429), then waits for it
    /// to go. `Ok` when it is gone.
    async fn evict_one(&self, pod: &Value, deadline: Option<Instant>) -> Result<(), String> {
        let client = self.ctx.client().await.map_err(|e| e.to_string())?;
        let (ns, name) = (ns_of(pod), name_of(pod));
        let uid = pod["metadata"]["uid"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let qname = api::gofmt::go_quote(&name);
        let qns = api::gofmt::go_quote(&ns);
        loop {
            let note = if self.dry == DryRunMode::Server {
                " (server dry run)"
            } else {
                ""
            };
            let _ = writeln!(self.ctx.out(), "evicting pod {ns}/{name}{note}");
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(format!(
                    "error when evicting pods/{qname} -n {qns}: global timeout reached: {}",
                    self.global_timeout()
                ));
            }
            let body = json!({
                "apiVersion": "policy/v1",
                "kind": "Eviction",
                "metadata": {"name": name, "namespace": ns},
                "deleteOptions": self.delete_options(),
            });
            let res = client
                .send(
                    Request::new(
                        Method::POST,
                        format!("/api/v1/namespaces/{ns}/pods/{name}/eviction"),
                    )
                    .json(&body),
                )
                .await
                .and_then(|r| r.ok());
            match res {
                Ok(_) => break,
                Err(e) if e.is_not_found() => return Ok(()),
                Err(e) if e.status_code() == Some(429) => {
                    let _ = writeln!(
                        self.ctx.err(),
                        "error when evicting pods/{qname} -n {qns} (will retry after 5s): {}",
                        plain_message(&e)
                    );
                    sleep_until(Duration::from_secs(5), deadline).await;
                }
                Err(e) if e.status_code() == Some(403) && namespace_terminating(&e) => {
                    if pod["metadata"]["deletionTimestamp"].is_string() {
                        break;
                    }
                    let _ = writeln!(
                        self.ctx.err(),
                        "error when evicting pod {qname} from terminating namespace {qns} (will retry after 5s): {}",
                        plain_message(&e)
                    );
                    sleep_until(Duration::from_secs(5), deadline).await;
                }
                Err(e) => {
                    return Err(format!(
                        "error when evicting pods/{qname} -n {qns}: {}",
                        plain_message(&e)
                    ));
                }
            }
        }
        if self.dry == DryRunMode::Server {
            return Ok(());
        }
        // Wait for the pod to go (or be replaced by another of the same name).
        loop {
            match client
                .get_json(&format!("/api/v1/namespaces/{ns}/pods/{name}"))
                .await
            {
                Err(e) if e.is_not_found() => break,
                Ok(p) if p["metadata"]["uid"].as_str() != Some(uid.as_str()) => break,
                Err(e) => {
                    let _ = writeln!(self.ctx.out(), "pod/{name} eviction failed");
                    return Err(format!(
                        "error when waiting for pod {qname} in namespace {qns} to terminate: {}",
                        plain_message(&e)
                    ));
                }
                Ok(p) => {
                    if skip_deleted(&p, self.opts.skip_wait_for_delete_timeout) {
                        let _ = writeln!(
                            self.ctx.out(),
                            "this pod was marked deleted more than {} seconds ago: {name}",
                            self.opts.skip_wait_for_delete_timeout
                        );
                        break;
                    }
                }
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(format!(
                    "error when waiting for pod {qname} in namespace {qns} to terminate: global timeout reached: {}",
                    self.global_timeout()
                ));
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
        let _ = writeln!(self.ctx.out(), "pod/{name} evicted");
        Ok(())
    }

    async fn delete_all(&self, pods: &[Value], deadline: Option<Instant>) -> Result<(), String> {
        let client = self.ctx.client().await.map_err(|e| e.to_string())?;
        let q = if self.dry == DryRunMode::Server {
            "?dryRun=All"
        } else {
            ""
        };
        for pod in pods {
            let (ns, name) = (ns_of(pod), name_of(pod));
            let res = client
                .send(
                    Request::new(
                        Method::DELETE,
                        format!("/api/v1/namespaces/{ns}/pods/{name}{q}"),
                    )
                    .json(&self.delete_options()),
                )
                .await
                .and_then(|r| r.ok());
            match res {
                Ok(_) => {}
                Err(e) if e.is_not_found() => {}
                Err(e) => return Err(plain_message(&e)),
            }
        }
        let mut pending: Vec<&Value> = pods.iter().collect();
        loop {
            let mut still = Vec::new();
            for pod in pending {
                let (ns, name) = (ns_of(pod), name_of(pod));
                let uid = pod["metadata"]["uid"].as_str();
                match client
                    .get_json(&format!("/api/v1/namespaces/{ns}/pods/{name}"))
                    .await
                {
                    Err(e) if e.is_not_found() => {
                        let _ = writeln!(self.ctx.out(), "pod/{name} deleted");
                    }
                    Ok(p) if p["metadata"]["uid"].as_str() != uid => {
                        let _ = writeln!(self.ctx.out(), "pod/{name} deleted");
                    }
                    Err(e) => {
                        let _ = writeln!(self.ctx.out(), "pod/{name} deletion failed");
                        return Err(plain_message(&e));
                    }
                    Ok(p) => {
                        if !skip_deleted(&p, self.opts.skip_wait_for_delete_timeout) {
                            still.push(pod);
                        }
                    }
                }
            }
            pending = still;
            if pending.is_empty() {
                return Ok(());
            }
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return Err("context deadline exceeded".into());
            }
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }

    /// Evicts (or deletes) the node's pods; `Err` is the text kubectl prints for the node.
    async fn drain_node(&self, node: &str) -> Result<(), Vec<String>> {
        let (pods, warning, errors) = self
            .pods_for_deletion(node)
            .await
            .map_err(|e| vec![plain_message(&e)])?;
        if !errors.is_empty() {
            return Err(errors);
        }
        if !warning.is_empty() {
            let _ = writeln!(self.ctx.err(), "Warning: {warning}");
        }
        if self.dry == DryRunMode::Client {
            for p in &pods {
                let _ = writeln!(
                    self.ctx.out(),
                    "evicting pod {}/{} (dry run)",
                    ns_of(p),
                    name_of(p)
                );
            }
            return Ok(());
        }
        if pods.is_empty() {
            return Ok(());
        }
        let deadline = self.timeout.map(|t| Instant::now() + t);
        let result = if self.args.disable_eviction {
            self.delete_all(&pods, deadline).await.map_err(|e| vec![e])
        } else {
            let results =
                futures::future::join_all(pods.iter().map(|p| self.evict_one(p, deadline))).await;
            let errs: Vec<String> = results.into_iter().filter_map(|r| r.err()).collect();
            if errs.is_empty() { Ok(()) } else { Err(errs) }
        };
        if let Err(e) = &result
            && let Ok((pending, _, _)) = self.pods_for_deletion(node).await
            && !pending.is_empty()
        {
            let mut err = self.ctx.err();
            let _ = writeln!(
                err,
                "There are pending pods in node {} when an error occurred: {}",
                api::gofmt::go_quote(node),
                aggregate(e)
            );
            for p in &pending {
                let _ = writeln!(err, "pod/{}", name_of(p));
            }
        }
        result
    }
}

fn namespace_terminating(e: &CliError) -> bool {
    match e {
        CliError::Api(s) => s.status["details"]["causes"]
            .as_array()
            .is_some_and(|cs| cs.iter().any(|c| c["reason"] == "NamespaceTerminating")),
        _ => false,
    }
}

fn skip_deleted(pod: &Value, timeout: i64) -> bool {
    timeout > 0
        && pod["metadata"]["deletionTimestamp"]
            .as_str()
            .and_then(|t| t.parse::<jiff::Timestamp>().ok())
            .is_some_and(|t| jiff::Timestamp::now().as_second() - t.as_second() > timeout)
}

async fn sleep_until(d: Duration, deadline: Option<Instant>) {
    let d = match deadline {
        Some(dl) => d.min(dl.saturating_duration_since(Instant::now())),
        None => d,
    };
    tokio::time::sleep(d).await;
}

pub async fn drain(ctx: &Ctx, args: DrainArgs) -> Result<()> {
    let dry = DryRunMode::parse(args.dry_run.as_deref())?;
    if args.nodes.is_empty() && args.selector.is_none() {
        return Err(CliError::usage(
            "kubectl drain",
            "USAGE: drain NODE [flags]",
        ));
    }
    if !args.pod_selector.is_empty()
        && api::selector::LabelSelector::parse(&args.pod_selector).is_err()
    {
        return Err(CliError::msg(
            "--pod-selector=<pod_selector> must be a valid label selector",
        ));
    }
    let timeout = watchutil::parse_signed_duration("drain", "timeout", &args.timeout)?
        .filter(|d| !d.is_zero());
    let nodes = node_objects(ctx, &args.nodes, args.selector.as_deref(), "drain").await?;
    cordon_nodes(ctx, &nodes, true, dry).await?;
    let drainer = Drainer {
        ctx,
        args: &args,
        opts: DrainOptions {
            force: args.force,
            ignore_daemonsets: args.ignore_daemonsets,
            delete_emptydir_data: args.delete_emptydir_data,
            skip_wait_for_delete_timeout: args.skip_wait_for_delete_timeout,
        },
        dry,
        timeout,
    };
    let mut fatal = Vec::new();
    let mut remaining = Vec::new();
    for node in &nodes {
        let name = name_of(node);
        match drainer.drain_node(&name).await {
            Ok(()) => {
                let _ = writeln!(ctx.out(), "node/{name} drained{}", dry.suffix());
            }
            Err(e) => {
                let _ = writeln!(
                    ctx.err(),
                    "error: unable to drain node {} due to error: {}, continuing command...",
                    api::gofmt::go_quote(&name),
                    aggregate(&e)
                );
                fatal.push(e);
                remaining.push(name);
            }
        }
    }
    if remaining.is_empty() {
        return Ok(());
    }
    {
        let mut err = ctx.err();
        let _ = writeln!(err, "There are pending nodes to be drained:");
        for n in &remaining {
            let _ = writeln!(err, " {n}");
        }
        // kubectl prints each node's aggregated error as is (no `error: ` prefix).
        for e in fatal.iter().flatten() {
            let _ = writeln!(err, "{e}");
        }
    }
    Err(CliError::Exit(1))
}

// ---------------------------------------------------------------------------------------
// taint

/// One taint (`key=value:Effect`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Taint {
    pub key: String,
    pub value: String,
    pub effect: String,
}

impl Taint {
    /// upstream's `Taint.ToString`.
    pub fn to_spec(&self) -> String {
        match (self.value.is_empty(), self.effect.is_empty()) {
            (true, true) => self.key.clone(),
            (true, false) => format!("{}:{}", self.key, self.effect),
            (false, true) => format!("{}={}:", self.key, self.value),
            (false, false) => format!("{}={}:{}", self.key, self.value, self.effect),
        }
    }

    fn from_json(v: &Value) -> Taint {
        Taint {
            key: v["key"].as_str().unwrap_or_default().into(),
            value: v["value"].as_str().unwrap_or_default().into(),
            effect: v["effect"].as_str().unwrap_or_default().into(),
        }
    }

    fn matches(&self, other: &Taint) -> bool {
        self.key == other.key && self.effect == other.effect
    }
}

fn parse_taint(spec: &str) -> Result<Taint, String> {
    let parts: Vec<&str> = spec.split(':').collect();
    let (key, value, effect) = match parts.as_slice() {
        [k] => (k.to_string(), String::new(), String::new()),
        [kv, effect] => {
            if !matches!(*effect, "NoSchedule" | "PreferNoSchedule" | "NoExecute") {
                return Err(format!(
                    "invalid taint effect: {effect}, unsupported taint effect"
                ));
            }
            let kv: Vec<&str> = kv.split('=').collect();
            if kv.len() > 2 {
                return Err(format!("invalid taint spec: {spec}"));
            }
            let value = kv.get(1).map(|v| v.to_string()).unwrap_or_default();
            if kv.len() == 2 {
                let errs = api::validation::is_valid_label_value(&value);
                if !errs.is_empty() {
                    return Err(format!("invalid taint spec: {spec}, {}", errs.join("; ")));
                }
            }
            (kv[0].to_string(), value, effect.to_string())
        }
        _ => return Err(format!("invalid taint spec: {spec}")),
    };
    let errs = api::validation::is_qualified_name(&key);
    if !errs.is_empty() {
        return Err(format!("invalid taint spec: {spec}, {}", errs.join("; ")));
    }
    Ok(Taint { key, value, effect })
}

/// Parses taint arguments into (to add, to remove), as kubectl's `parseTaints`.
pub fn parse_taints(specs: &[String]) -> Result<(Vec<Taint>, Vec<Taint>), String> {
    let mut add: Vec<Taint> = Vec::new();
    let mut remove = Vec::new();
    for s in specs {
        if let Some(r) = s.strip_suffix('-') {
            let t = parse_taint(r)?;
            remove.push(Taint {
                key: t.key,
                value: String::new(),
                effect: t.effect,
            });
        } else {
            let t = parse_taint(s)?;
            if t.effect.is_empty() {
                return Err(format!("invalid taint spec: {s}"));
            }
            if add.iter().any(|a| a.key == t.key && a.effect == t.effect) {
                return Err(format!(
                    "duplicated taints with the same key and effect: {{{} {} {} <nil>}}",
                    t.key, t.value, t.effect
                ));
            }
            add.push(t);
        }
    }
    Ok((add, remove))
}

/// The taints a node ends with and the operation word (`tainted`, `untainted`,
/// `modified`), or kubectl's error.
pub fn reorganize_taints(
    node_name: &str,
    old: &[Taint],
    overwrite: bool,
    add: &[Taint],
    remove: &[Taint],
) -> Result<(&'static str, Vec<Taint>), String> {
    if !overwrite {
        let exists: Vec<&str> = add
            .iter()
            .flat_map(|t| {
                old.iter()
                    .filter(move |o| o.key == t.key && o.effect == t.effect)
                    .map(move |_| t.key.as_str())
            })
            .collect();
        if !exists.is_empty() {
            return Err(format!(
                "node {node_name} already has {} taint(s) with same effect(s) and --overwrite is false",
                exists.join(",")
            ));
        }
    }
    let mut new: Vec<Taint> = add.to_vec();
    for o in old {
        if !new.iter().any(|t| t.matches(o)) {
            new.push(o.clone());
        }
    }
    let added = old.len() != new.len();
    let mut errors = Vec::new();
    let mut removed = false;
    for r in remove {
        let before = new.len();
        if r.effect.is_empty() {
            new.retain(|t| t.key != r.key);
        } else {
            new.retain(|t| !t.matches(r));
        }
        removed = new.len() != before;
        if !removed {
            errors.push(format!(
                "taint {} not found",
                api::gofmt::go_quote(&r.to_spec())
            ));
        }
    }
    if !errors.is_empty() {
        return Err(aggregate(&errors));
    }
    let op = if (added && removed) || overwrite {
        "modified"
    } else if added {
        "tainted"
    } else {
        "untainted"
    };
    Ok((op, new))
}

fn taints_json(taints: &[Taint]) -> Value {
    if taints.is_empty() {
        return Value::Null;
    }
    Value::Array(
        taints
            .iter()
            .map(|t| {
                let mut v = json!({"key": t.key, "effect": t.effect});
                if !t.value.is_empty() {
                    v["value"] = json!(t.value);
                }
                v
            })
            .collect(),
    )
}

pub async fn taint(ctx: &Ctx, args: TaintArgs) -> Result<()> {
    let dry = DryRunMode::parse(args.dry_run.as_deref())?;
    let mut resources = Vec::new();
    let mut taint_args = Vec::new();
    let mut met = false;
    for s in &args.args {
        let is_taint = s.contains('=') || s.contains(':') || s.ends_with('-');
        match (met, is_taint) {
            (_, true) => {
                met = true;
                taint_args.push(s.clone());
            }
            (false, false) => resources.push(s.clone()),
            (true, false) => {
                return Err(CliError::msg(format!(
                    "all resources must be specified before taint changes: {s}"
                )));
            }
        }
    }
    if resources.is_empty() {
        return Err(CliError::msg(
            "one or more resources must be specified as <resource> <name>",
        ));
    }
    if taint_args.is_empty() {
        return Err(CliError::msg("at least one taint update is required"));
    }
    let (add, remove) =
        parse_taints(&taint_args).map_err(|e| CliError::usage("kubectl taint", e))?;
    let resource_type = resources[0].to_lowercase();
    let mapping = ctx.mapper().await?.resolve(&resource_type)?;
    if mapping.kind != "Node" {
        return Err(CliError::msg(format!(
            "invalid resource type {resource_type}, only node types are supported"
        )));
    }
    let mut conflicts = Vec::new();
    for a in &add {
        for r in &remove {
            if a.key == r.key && (r.effect.is_empty() || a.effect == r.effect) {
                conflicts.push(format!("{}={}", r.key, r.effect));
            }
        }
    }
    if !conflicts.is_empty() {
        return Err(CliError::msg(format!(
            "can not both modify and remove the following taint(s) in the same command: {}",
            conflicts.join(", ")
        )));
    }
    let selector = args.selector.clone().filter(|s| !s.is_empty());
    if args.all && selector.is_some() {
        return Err(CliError::msg(
            "setting 'all' parameter with a non empty selector is prohibited",
        ));
    }
    if !args.all && selector.is_none() && resources.len() < 2 {
        return Err(CliError::msg(
            "at least one resource name must be specified since 'all' parameter is not set",
        ));
    }
    let client = ctx.client().await?;
    let nodes: Vec<Value> = if args.all || selector.is_some() {
        let (items, _) = watchutil::list(ctx, &mapping, None, selector.as_deref(), None).await?;
        items
    } else {
        let mut out = Vec::new();
        for n in &resources[1..] {
            out.push(client.get_json(&mapping.object_path(None, n)).await?);
        }
        out
    };
    let mut errors = Vec::new();
    for node in &nodes {
        let name = name_of(node);
        let old: Vec<Taint> = node["spec"]["taints"]
            .as_array()
            .map(|a| a.iter().map(Taint::from_json).collect())
            .unwrap_or_default();
        let (op, new) = match reorganize_taints(&name, &old, args.overwrite, &add, &remove) {
            Ok(x) => x,
            Err(e) => {
                errors.push(e);
                continue;
            }
        };
        // Keep the server's fields (timeAdded) of taints that stay as they were.
        let new_json = match taints_json(&new) {
            Value::Array(items) => Value::Array(
                items
                    .into_iter()
                    .zip(&new)
                    .map(|(v, t)| {
                        node["spec"]["taints"]
                            .as_array()
                            .and_then(|a| a.iter().find(|o| Taint::from_json(o) == *t))
                            .cloned()
                            .unwrap_or(v)
                    })
                    .collect(),
            ),
            other => other,
        };
        if dry != DryRunMode::Client {
            let mut path = format!(
                "/api/v1/nodes/{name}?fieldManager={}",
                watchutil::encode(&args.field_manager)
            );
            if dry == DryRunMode::Server {
                path.push_str("&dryRun=All");
            }
            let res = client
                .send(
                    Request::new(Method::PATCH, path)
                        .json(&json!({"spec": {"taints": new_json}}))
                        .content_type("application/strategic-merge-patch+json"),
                )
                .await?
                .ok();
            if let Err(e) = res {
                errors.push(e.to_string());
                continue;
            }
        }
        match args.output.as_deref() {
            Some("name") => {
                let _ = writeln!(ctx.out(), "node/{name}");
            }
            _ => {
                // kubectl's taint drops the dry-run suffix (its printer is rebuilt per
                // operation after the dry-run completion).
                let _ = writeln!(ctx.out(), "node/{name} {op}");
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

    fn t(k: &str, v: &str, e: &str) -> Taint {
        Taint {
            key: k.into(),
            value: v.into(),
            effect: e.into(),
        }
    }

    #[test]
    fn taint_parsing() {
        let (add, remove) = parse_taints(&[
            "k1=v1:NoSchedule".into(),
            "k2:PreferNoSchedule".into(),
            "k3-".into(),
            "k4:NoExecute-".into(),
        ])
        .unwrap();
        assert_eq!(
            add,
            vec![t("k1", "v1", "NoSchedule"), t("k2", "", "PreferNoSchedule")]
        );
        assert_eq!(remove, vec![t("k3", "", ""), t("k4", "", "NoExecute")]);
        assert_eq!(
            parse_taints(&["k=x:Bad".into()]).unwrap_err(),
            "invalid taint effect: Bad, unsupported taint effect"
        );
        assert!(
            parse_taints(&["k=x".into()])
                .unwrap_err()
                .starts_with("invalid taint spec: k=x, ")
        );
        assert!(parse_taints(&["a=b=c:NoSchedule".into()]).is_err());
        assert!(
            parse_taints(&["bad key:NoSchedule".into()])
                .unwrap_err()
                .starts_with("invalid taint spec: bad key:NoSchedule, ")
        );
    }

    #[test]
    fn taint_arithmetic() {
        let old = vec![t("k1", "v1", "NoSchedule")];
        assert_eq!(
            reorganize_taints("n", &old, false, &[t("k1", "v2", "NoSchedule")], &[]).unwrap_err(),
            "node n already has k1 taint(s) with same effect(s) and --overwrite is false"
        );
        let (op, new) =
            reorganize_taints("n", &old, true, &[t("k1", "v2", "NoSchedule")], &[]).unwrap();
        assert_eq!((op, new), ("modified", vec![t("k1", "v2", "NoSchedule")]));
        let (op, new) =
            reorganize_taints("n", &old, false, &[t("k2", "", "NoExecute")], &[]).unwrap();
        assert_eq!(op, "tainted");
        assert_eq!(
            new,
            vec![t("k2", "", "NoExecute"), t("k1", "v1", "NoSchedule")]
        );
        let (op, new) = reorganize_taints("n", &old, false, &[], &[t("k1", "", "")]).unwrap();
        assert_eq!((op, new.len()), ("untainted", 0));
        assert_eq!(
            reorganize_taints("n", &old, false, &[], &[t("k1", "", "NoExecute")]).unwrap_err(),
            "taint \"k1:NoExecute\" not found"
        );
    }

    fn pod(name: &str, owner: Option<&str>, empty_dir: bool, phase: &str) -> Value {
        let mut p = json!({"metadata":{"name":name,"namespace":"default"},
            "spec":{},"status":{"phase":phase}});
        if let Some(kind) = owner {
            p["metadata"]["ownerReferences"] =
                json!([{"kind":kind,"name":"owner","controller":true,"uid":"u"}]);
        }
        if empty_dir {
            p["spec"]["volumes"] = json!([{"name":"v","emptyDir":{}}]);
        }
        p
    }

    #[test]
    fn pod_filters() {
        let ok = |_: &str, _: &str| Ok(());
        let o = DrainOptions::default();
        assert_eq!(
            filter_pod(&pod("a", None, false, "Running"), &o, &ok, 0),
            Verdict::Error(UNMANAGED_FATAL.into())
        );
        assert_eq!(
            filter_pod(&pod("a", None, false, "Succeeded"), &o, &ok, 0),
            Verdict::Okay
        );
        assert_eq!(
            filter_pod(&pod("a", Some("ReplicaSet"), false, "Running"), &o, &ok, 0),
            Verdict::Okay
        );
        assert_eq!(
            filter_pod(&pod("a", Some("DaemonSet"), true, "Running"), &o, &ok, 0),
            Verdict::Error(DAEMONSET_FATAL.into())
        );
        let o2 = DrainOptions {
            ignore_daemonsets: true,
            force: true,
            ..DrainOptions::default()
        };
        assert_eq!(
            filter_pod(&pod("a", Some("DaemonSet"), true, "Running"), &o2, &ok, 0),
            Verdict::Warning {
                delete: false,
                message: DAEMONSET_WARNING.into()
            }
        );
        assert_eq!(
            filter_pod(&pod("a", Some("ReplicaSet"), true, "Running"), &o2, &ok, 0),
            Verdict::Error(LOCAL_STORAGE_FATAL.into())
        );
        let gone = |_: &str, _: &str| Err((true, "daemonsets.apps \"owner\" not found".into()));
        // The warning of a vanished DaemonSet is overwritten by the later filters' verdict,
        // as upstream's loop keeps only the last status.
        assert_eq!(
            filter_pod(
                &pod("a", Some("DaemonSet"), false, "Running"),
                &o2,
                &gone,
                0
            ),
            Verdict::Okay
        );
        let pods = vec![
            pod("a", None, false, "Running"),
            pod("b", None, false, "Running"),
            pod("c", Some("ReplicaSet"), false, "Running"),
        ];
        let verdicts: Vec<Verdict> = pods.iter().map(|p| filter_pod(p, &o, &ok, 0)).collect();
        let (del, warn, errs) = sort_pods(&pods, &verdicts);
        assert_eq!(del.len(), 1);
        assert_eq!(warn, "");
        assert_eq!(
            errs,
            vec![format!(
                "cannot delete {UNMANAGED_FATAL}: default/a, default/b"
            )]
        );
        let verdicts: Vec<Verdict> = pods.iter().map(|p| filter_pod(p, &o2, &ok, 0)).collect();
        let (del, warn, errs) = sort_pods(&pods, &verdicts);
        assert_eq!(del.len(), 3);
        assert_eq!(warn, format!("{UNMANAGED_WARNING}: default/a, default/b"));
        assert!(errs.is_empty());
    }
}
