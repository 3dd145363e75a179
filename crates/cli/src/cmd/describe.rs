//! `kubectl describe`: kubectl's describer text for the common kinds (Pod, Deployment,
//! ReplicaSet, Service, Node, Namespace, ConfigMap, Secret, Job, ServiceAccount) and the
//! generic describer for everything else (custom resources included), with the Events
//! section (events found by `involvedObject` field selectors, as kubectl), laid out through
//! Go's tabwriter with kubectl's describe settings (padding 2).

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::resource::{self, ListOptions, Target};

#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// (TYPE [NAME_PREFIX | -l label] | TYPE/NAME)
    pub args: Vec<String>,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long = "selector")]
    pub selector: Option<String>,
    /// If present, list the requested object(s) across all namespaces.
    #[arg(short = 'A', long)]
    pub all_namespaces: bool,
    /// If true, display events related to the described object.
    #[arg(
        long,
        default_value_t = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_missing_value = "true",
        require_equals = true
    )]
    pub show_events: bool,
    /// Return large lists in chunks rather than all at once.
    #[arg(long, default_value_t = 500)]
    pub chunk_size: i64,
}

pub async fn run(ctx: &Ctx, a: Args) -> Result<()> {
    if a.args.is_empty() {
        let _ = writeln!(
            ctx.err(),
            "You must specify the type of resource to describe. Use \"kubectl api-resources\" for a complete list of supported resources.\n"
        );
        return Err(CliError::usage(
            "kubectl describe",
            "Required resource not specified.",
        ));
    }
    resource::split_args(&a.args)?;
    let namespace = ctx.namespace().await?;
    let ns = if a.all_namespaces {
        None
    } else {
        Some(namespace.as_str())
    };
    let targets = resource::targets(ctx, &a.args, ns).await?;
    let opts = ListOptions {
        label_selector: a.selector.clone(),
        chunk_size: a.chunk_size,
        ..Default::default()
    };
    let mut objects: Vec<(Target, Value)> = Vec::new();
    // Objects found by name prefix print each followed by a blank line (kubectl's
    // `DescribeMatchingResources`), the others separated by two.
    let mut by_prefix = false;
    let mut errors: Vec<CliError> = Vec::new();
    let two_arg_form = a.args.len() == 2 && !a.args[0].contains('/');
    for t in &targets {
        match &t.name {
            Some(name) => match resource::get_object(ctx, t, None, &[]).await {
                Ok(v) => objects.push((t.clone(), v)),
                Err(e) if e.is_not_found() && two_arg_form => {
                    // kubectl's prefix matching: `describe pod ngin` matches `nginx-…`.
                    let list = resource::list(ctx, t, &opts).await?;
                    let matched: Vec<Value> = items(&list)
                        .into_iter()
                        .filter(|o| {
                            o.pointer("/metadata/name")
                                .and_then(Value::as_str)
                                .is_some_and(|n| n.starts_with(name.as_str()))
                        })
                        .collect();
                    if matched.is_empty() {
                        errors.push(e);
                    } else {
                        by_prefix = true;
                    }
                    for m in matched {
                        objects.push((t.clone(), m));
                    }
                }
                Err(e) => errors.push(e),
            },
            None => {
                let list = resource::list(ctx, t, &opts).await?;
                for o in items(&list) {
                    objects.push((t.clone(), o));
                }
            }
        }
    }
    if objects.is_empty() && errors.is_empty() {
        let msg = if a.all_namespaces || targets.iter().any(|t| !t.mapping.namespaced) {
            "No resources found".to_string()
        } else {
            format!("No resources found in {namespace} namespace.")
        };
        let _ = writeln!(ctx.err(), "{msg}");
        return Ok(());
    }
    let mut first = true;
    for (t, obj) in objects {
        let events = if a.show_events && !matches!(t.mapping.kind.as_str(), "Namespace" | "Secret")
        {
            Some(events_for(ctx, &t, &obj).await.unwrap_or_default())
        } else {
            None
        };
        let extra = extra_for(ctx, &t, &obj).await;
        let text = describe(
            &t.mapping.kind,
            &obj,
            events.as_deref(),
            &extra,
            jiff::Timestamp::now(),
        );
        let mut out = ctx.out();
        if by_prefix {
            writeln!(out, "{text}")?;
        } else if first {
            first = false;
            out.write_all(text.as_bytes())?;
        } else {
            write!(out, "\n\n{text}")?;
        }
    }
    let Some(last) = errors.pop() else {
        return Ok(());
    };
    for e in errors {
        let _ = writeln!(ctx.err(), "{e}");
    }
    Err(last)
}

fn items(list: &Value) -> Vec<Value> {
    let kind = list
        .get("kind")
        .and_then(Value::as_str)
        .and_then(|k| k.strip_suffix("List"))
        .unwrap_or_default()
        .to_string();
    let api_version = list.get("apiVersion").cloned().unwrap_or(Value::Null);
    list.get("items")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|i| {
            let mut i = i.clone();
            if let Some(m) = i.as_object_mut() {
                m.entry("kind").or_insert(Value::String(kind.clone()));
                m.entry("apiVersion").or_insert(api_version.clone());
            }
            i
        })
        .collect()
}

/// Events about an object (kubectl's `searchEvents`: field selectors on the involved
/// object's name, namespace, kind and uid), oldest first.
async fn events_for(ctx: &Ctx, t: &Target, obj: &Value) -> Result<Vec<Value>> {
    let meta = &obj["metadata"];
    let name = meta["name"].as_str().unwrap_or_default();
    let ns = meta["namespace"].as_str().unwrap_or_default();
    let uid = meta["uid"].as_str().unwrap_or_default();
    let mut sel = vec![format!("involvedObject.name={name}")];
    if !ns.is_empty() {
        sel.push(format!("involvedObject.namespace={ns}"));
    }
    sel.push(format!("involvedObject.kind={}", t.mapping.kind));
    if !uid.is_empty() {
        sel.push(format!("involvedObject.uid={uid}"));
    }
    let path = if ns.is_empty() {
        "/api/v1/events".to_string()
    } else {
        format!("/api/v1/namespaces/{ns}/events")
    };
    let url = format!(
        "{path}?fieldSelector={}&limit=500",
        resource::encode(&sel.join(","))
    );
    let list = ctx.client().await?.get_json(&url).await?;
    let mut evs: Vec<Value> = list["items"].as_array().cloned().unwrap_or_default();
    evs.sort_by_key(|e| event_time(e).map(|t| t.as_nanosecond()).unwrap_or(0));
    Ok(evs)
}

/// Related objects some describers print (a Deployment's ReplicaSets, a Service's
/// endpoints, a ServiceAccount's secrets…).
#[derive(Default)]
pub struct Extra {
    /// For Deployments: (old, new) replica set names.
    pub new_rs: Option<String>,
    pub old_rs: Vec<String>,
    /// For Services: their EndpointSlices.
    pub slices: Option<Vec<Value>>,
    /// For ReplicaSets and Jobs: pod phase counts (running, waiting, succeeded, failed).
    pub pod_status: Option<(usize, usize, usize, usize)>,
    /// For Nodes: the non-terminated pods (namespace, name, cpu req, cpu lim, mem req, mem lim, age).
    pub node_pods: Vec<Value>,
    /// For Nodes: the node's Lease.
    pub lease: Option<Value>,
}

async fn extra_for(ctx: &Ctx, t: &Target, obj: &Value) -> Extra {
    let mut extra = Extra::default();
    let ns = obj["metadata"]["namespace"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let uid = obj["metadata"]["uid"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    let Ok(client) = ctx.client().await else {
        return extra;
    };
    match t.mapping.kind.as_str() {
        "Deployment" => {
            let url = format!("/apis/apps/v1/namespaces/{ns}/replicasets");
            if let Ok(list) = client.get_json(&url).await {
                let template_hash = obj.pointer("/spec/template").cloned();
                let mut owned: Vec<&Value> = list["items"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter(|rs| {
                        rs.pointer("/metadata/ownerReferences")
                            .and_then(Value::as_array)
                            .is_some_and(|o| {
                                o.iter()
                                    .any(|r| r["uid"] == uid.as_str() && r["controller"] == true)
                            })
                    })
                    .collect();
                owned.sort_by_key(|rs| {
                    rs.pointer("/metadata/creationTimestamp")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                });
                let revision = obj
                    .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                    .and_then(Value::as_str)
                    .map(str::to_string);
                for rs in owned {
                    let name = rs
                        .pointer("/metadata/name")
                        .and_then(Value::as_str)
                        .unwrap_or_default();
                    let rs_rev = rs
                        .pointer("/metadata/annotations/deployment.kubernetes.io~1revision")
                        .and_then(Value::as_str)
                        .map(str::to_string);
                    let same_template = template_hash.is_some() && rs_rev == revision;
                    let replicas = rs
                        .pointer("/status/replicas")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    let desc = format!(
                        "{name} ({replicas}/{} replicas created)",
                        rs.pointer("/spec/replicas")
                            .and_then(Value::as_i64)
                            .unwrap_or(0)
                    );
                    if same_template && extra.new_rs.is_none() {
                        extra.new_rs = Some(desc);
                    } else {
                        extra.old_rs.push(desc);
                    }
                }
            }
        }
        "Service" => {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            let url = format!(
                "/apis/discovery.k8s.io/v1/namespaces/{ns}/endpointslices?labelSelector={}",
                resource::encode(&format!("kubernetes.io/service-name={name}"))
            );
            if let Ok(list) = client.get_json(&url).await {
                extra.slices = list["items"].as_array().cloned();
            }
        }
        "ReplicaSet" | "Job" => {
            if let Ok(list) = client
                .get_json(&format!("/api/v1/namespaces/{ns}/pods"))
                .await
            {
                let mut counts = (0, 0, 0, 0);
                for p in list["items"].as_array().into_iter().flatten() {
                    let owned = p
                        .pointer("/metadata/ownerReferences")
                        .and_then(Value::as_array)
                        .is_some_and(|o| o.iter().any(|r| r["uid"] == uid.as_str()));
                    if !owned {
                        continue;
                    }
                    match p
                        .pointer("/status/phase")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                    {
                        "Running" => counts.0 += 1,
                        "Pending" => counts.1 += 1,
                        "Succeeded" => counts.2 += 1,
                        "Failed" => counts.3 += 1,
                        _ => {}
                    }
                }
                extra.pod_status = Some(counts);
            }
        }
        "Node" => {
            let name = obj["metadata"]["name"].as_str().unwrap_or_default();
            let url = format!(
                "/api/v1/pods?fieldSelector={}",
                resource::encode(&format!(
                    "spec.nodeName={name},status.phase!=Failed,status.phase!=Succeeded"
                ))
            );
            if let Ok(list) = client.get_json(&url).await {
                extra.node_pods = list["items"].as_array().cloned().unwrap_or_default();
            }
            extra.lease = client
                .get_json(&format!(
                    "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{name}"
                ))
                .await
                .ok();
        }
        _ => {}
    }
    extra
}

// ---- Go's tabwriter (text/tabwriter) ----

/// Lays out text as Go's `text/tabwriter` with `minwidth`, `padding` and space padding:
/// tab-terminated cells are aligned per column block (consecutive lines having that
/// column).
pub fn tabwrite(text: &str, minwidth: usize, padding: usize) -> String {
    let lines: Vec<Vec<&str>> = text
        .split_terminator('\n')
        .map(|l| l.split('\t').collect())
        .collect();
    let mut out = String::new();
    let mut widths: Vec<usize> = Vec::new();
    format_block(
        &lines,
        0,
        lines.len(),
        &mut widths,
        minwidth,
        padding,
        &mut out,
    );
    if !text.ends_with('\n') && !text.is_empty() {
        out.pop();
    }
    out
}

fn width(s: &str) -> usize {
    s.chars().count()
}

fn format_block(
    lines: &[Vec<&str>],
    line0: usize,
    line1: usize,
    widths: &mut Vec<usize>,
    minwidth: usize,
    padding: usize,
    out: &mut String,
) {
    let column = widths.len();
    let mut line0 = line0;
    let mut this = line0;
    while this < line1 {
        if column + 1 >= lines[this].len() {
            this += 1;
            continue;
        }
        write_lines(lines, line0, this, widths, out);
        line0 = this;
        let mut w = minwidth;
        while this < line1 && column + 1 < lines[this].len() {
            w = w.max(width(lines[this][column]) + padding);
            this += 1;
        }
        widths.push(w);
        format_block(lines, line0, this, widths, minwidth, padding, out);
        widths.pop();
        line0 = this;
    }
    write_lines(lines, line0, line1, widths, out);
}

fn write_lines(lines: &[Vec<&str>], from: usize, to: usize, widths: &[usize], out: &mut String) {
    for line in &lines[from..to] {
        for (j, cell) in line.iter().enumerate() {
            out.push_str(cell);
            if j < widths.len() && j + 1 < line.len() {
                for _ in width(cell)..widths[j] {
                    out.push(' ');
                }
            }
        }
        out.push('\n');
    }
}

// ---- the describers ----

/// kubectl's `PrefixWriter`: each level indents two spaces.
#[derive(Default)]
struct W {
    buf: String,
}

impl W {
    fn line(&mut self, level: usize, text: &str) {
        for _ in 0..level {
            self.buf.push_str("  ");
        }
        self.buf.push_str(text);
        self.buf.push('\n');
    }

    fn kv(&mut self, level: usize, key: &str, value: &str) {
        self.line(level, &format!("{key}:\t{value}"));
    }

    fn finish(self) -> String {
        tabwrite(&self.buf, 0, 2)
    }
}

fn s<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or_default()
}

fn or_none(x: &str) -> &str {
    if x.is_empty() { "<none>" } else { x }
}

/// The array at `ptr` (empty when absent or not an array).
fn arr<'a>(v: &'a Value, ptr: &str) -> Vec<&'a Value> {
    v.pointer(ptr)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .collect()
}

/// `"true"` when the field is JSON `true`, else `"false"`.
fn bool_text(v: &Value) -> &'static str {
    if *v == true { "true" } else { "false" }
}

/// `Controlled By:` from the controller owner reference, when there is one.
fn controlled_by(w: &mut W, obj: &Value) {
    if let Some(owner) = arr(obj, "/metadata/ownerReferences")
        .into_iter()
        .find(|r| r["controller"] == true)
    {
        w.kv(
            0,
            "Controlled By",
            &format!("{}/{}", s(owner, "/kind"), s(owner, "/name")),
        );
    }
}

/// `"<port>/<protocol>, …"` for the `key` (containerPort or hostPort) of each port.
fn port_list(ports: &[&Value], key: &str) -> String {
    ports
        .iter()
        .map(|p| {
            format!(
                "{}/{}",
                p[key].as_i64().unwrap_or(0),
                p["protocol"].as_str().unwrap_or("TCP")
            )
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn mounts(w: &mut W, c: &Value) {
    let mounts = arr(c, "/volumeMounts");
    if mounts.is_empty() {
        w.kv(2, "Mounts", "<none>");
    } else {
        w.line(2, "Mounts:");
        for m in mounts {
            let flags = if m["readOnly"] == true { "ro" } else { "rw" };
            w.line(
                3,
                &format!("{} from {} ({flags})", s(m, "/mountPath"), s(m, "/name")),
            );
        }
    }
}

/// `Volumes:` of a pod spec holder (a pod or a pod template), titled at `level`.
fn volumes(w: &mut W, level: usize, holder: &Value) {
    let vols = arr(holder, "/spec/volumes");
    if vols.is_empty() {
        w.kv(level, "Volumes", "<none>");
    } else {
        w.line(level, "Volumes:");
        for v in vols {
            w.line(level + 1, &format!("{}:", s(v, "/name")));
            volume(w, v);
        }
    }
}

fn labels_multiline(w: &mut W, level: usize, title: &str, map: Option<&Value>, sep: &str) {
    let entries: Vec<(String, String)> = map
        .and_then(Value::as_object)
        .map(|m| {
            let mut v: Vec<(String, String)> = m
                .iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str()
                            .map(str::to_string)
                            .unwrap_or_else(|| v.to_string()),
                    )
                })
                .collect();
            v.sort();
            v
        })
        .unwrap_or_default();
    if entries.is_empty() {
        w.kv(level, title, "<none>");
        return;
    }
    for (i, (k, v)) in entries.iter().enumerate() {
        let text = format!("{k}{sep}{v}");
        if i == 0 {
            w.kv(level, title, &text);
        } else {
            w.line(level, &format!("\t{text}"));
        }
    }
}

fn annotations(w: &mut W, obj: &Value) {
    // kubectl leaves out the last-applied configuration.
    let mut a = obj.pointer("/metadata/annotations").cloned();
    if let Some(m) = a.as_mut().and_then(Value::as_object_mut) {
        m.remove("kubectl.kubernetes.io/last-applied-configuration");
    }
    let mut entries: Vec<(String, String)> = a
        .as_ref()
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_string()))
        .collect();
    entries.sort();
    if entries.is_empty() {
        w.kv(0, "Annotations", "<none>");
        return;
    }
    const MAX: usize = 140;
    let mut text = String::from("Annotations:\t");
    for (i, (k, v)) in entries.iter().enumerate() {
        if i != 0 {
            text.push('\t');
        }
        let v = v.strip_suffix('\n').unwrap_or(v);
        if v.len() + k.len() + 2 > MAX || v.contains('\n') {
            text.push_str(&format!("{k}:\n"));
            for line in v.split('\n') {
                let short = if line.len() > MAX - 2 {
                    let mut cut = MAX - 2;
                    while !line.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    format!("{}...", &line[..cut])
                } else {
                    line.to_string()
                };
                text.push_str(&format!("\t  {short}\n"));
            }
        } else {
            text.push_str(&format!("{k}: {v}\n"));
        }
    }
    w.buf.push_str(&text);
}

/// The endpoints of a Service port as kubectl lists them from EndpointSlices: at most
/// three `ip:port`, then `+ N more...`; `<none>` when there are none.
fn format_slices(slices: &[Value], port_name: &str) -> String {
    const MAX: usize = 3;
    let mut list: Vec<String> = Vec::new();
    let mut count = 0usize;
    for sl in slices {
        let endpoints: Vec<&Value> = sl["endpoints"].as_array().into_iter().flatten().collect();
        let ports: Vec<&Value> = sl["ports"].as_array().into_iter().flatten().collect();
        let first_addr = |e: &Value| {
            e["addresses"]
                .as_array()
                .and_then(|a| a.first())
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string()
        };
        if ports.is_empty() {
            for e in &endpoints {
                if list.len() < MAX {
                    list.push(first_addr(e));
                }
                count += 1;
            }
            continue;
        }
        for p in ports {
            if p["name"].as_str().unwrap_or_default() != port_name {
                continue;
            }
            for e in &endpoints {
                if list.len() < MAX {
                    let addr = first_addr(e);
                    let host = if addr.contains(':') {
                        format!("[{addr}]")
                    } else {
                        addr
                    };
                    list.push(format!("{host}:{}", p["port"].as_i64().unwrap_or(0)));
                }
                count += 1;
            }
        }
    }
    if list.is_empty() {
        return "<none>".into();
    }
    let joined = list.join(",");
    if count > MAX {
        format!("{joined} + {} more...", count - MAX)
    } else {
        joined
    }
}

fn labels(w: &mut W, obj: &Value) {
    labels_multiline(w, 0, "Labels", obj.pointer("/metadata/labels"), "=");
}

/// Go's `time.Time.Format(time.RFC1123Z)`: `Mon, 02 Jan 2006 15:04:05 -0700`.
fn rfc1123z(ts: &str) -> String {
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => {
            let z = t.to_zoned(jiff::tz::TimeZone::system());
            z.strftime("%a, %d %b %Y %H:%M:%S %z").to_string()
        }
        Err(_) => ts.to_string(),
    }
}

fn event_time(e: &Value) -> Option<jiff::Timestamp> {
    [
        "/lastTimestamp",
        "/eventTime",
        "/firstTimestamp",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .find_map(|p| e.pointer(p).and_then(Value::as_str))
    .and_then(|t| t.parse().ok())
}

fn since(t: Option<jiff::Timestamp>, now: jiff::Timestamp) -> String {
    match t {
        Some(t) => {
            let d = now.as_nanosecond() - t.as_nanosecond();
            printers::human_duration(i64::try_from(d).unwrap_or(i64::MAX))
        }
        None => "<unknown>".into(),
    }
}

fn describe_events(w: &mut W, events: &[Value], now: jiff::Timestamp) {
    if events.is_empty() {
        w.kv(0, "Events", "<none>");
        return;
    }
    w.line(0, "Events:");
    w.line(1, "Type\tReason\tAge\tFrom\tMessage");
    w.line(1, "----\t------\t----\t----\t-------");
    for e in events {
        let count = e["count"].as_i64().unwrap_or(0);
        let age = if count > 1 {
            let first = e
                .pointer("/firstTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok());
            format!(
                "{} (x{count} over {})",
                since(event_time(e), now),
                since(first, now)
            )
        } else {
            let first = ["/firstTimestamp", "/eventTime"]
                .iter()
                .find_map(|p| e.pointer(p).and_then(Value::as_str))
                .and_then(|t| t.parse().ok());
            since(first, now)
        };
        let from = [s(e, "/source/component"), s(e, "/reportingComponent")]
            .into_iter()
            .find(|x| !x.is_empty())
            .unwrap_or_default();
        w.line(
            1,
            &format!(
                "{}\t{}\t{}\t{}\t{}",
                s(e, "/type"),
                s(e, "/reason"),
                age,
                from,
                s(e, "/message").trim()
            ),
        );
    }
}

/// The describer text of one object.
pub fn describe(
    kind: &str,
    obj: &Value,
    events: Option<&[Value]>,
    extra: &Extra,
    now: jiff::Timestamp,
) -> String {
    let mut w = W::default();
    match kind {
        "Pod" => pod(&mut w, obj),
        "Deployment" => deployment(&mut w, obj, extra),
        "ReplicaSet" => replica_set(&mut w, obj, extra),
        "Service" => service(&mut w, obj, extra),
        "Namespace" => namespace(&mut w, obj),
        "ConfigMap" => config_map(&mut w, obj),
        "Secret" => secret(&mut w, obj),
        "ServiceAccount" => service_account(&mut w, obj),
        "Job" => job(&mut w, obj, extra),
        "Node" => node(&mut w, obj, extra),
        _ => generic(&mut w, obj),
    }
    if let Some(evs) = events {
        describe_events(&mut w, evs, now);
    }
    w.finish()
}

fn header(w: &mut W, obj: &Value, with_ns: bool) {
    w.kv(0, "Name", s(obj, "/metadata/name"));
    if with_ns {
        w.kv(0, "Namespace", s(obj, "/metadata/namespace"));
    }
}

// The generic describer.

/// fatih/camelcase's split.
fn camel_split(s: &str) -> Vec<String> {
    #[derive(PartialEq, Clone, Copy)]
    enum C {
        Lower,
        Upper,
        Digit,
        Other,
    }
    let class = |c: char| {
        if c.is_lowercase() {
            C::Lower
        } else if c.is_uppercase() {
            C::Upper
        } else if c.is_numeric() {
            C::Digit
        } else {
            C::Other
        }
    };
    let mut runs: Vec<Vec<char>> = Vec::new();
    let mut last: Option<C> = None;
    for c in s.chars() {
        let k = class(c);
        if Some(k) == last {
            if let Some(r) = runs.last_mut() {
                r.push(c);
            }
        } else {
            runs.push(vec![c]);
        }
        last = Some(k);
    }
    for i in 0..runs.len().saturating_sub(1) {
        let a_upper = runs[i].first().is_some_and(|c| c.is_uppercase());
        let b_lower = runs[i + 1].first().is_some_and(|c| c.is_lowercase());
        if a_upper
            && b_lower
            && let Some(c) = runs[i].pop()
        {
            runs[i + 1].insert(0, c);
        }
    }
    runs.into_iter()
        .filter(|r| !r.is_empty())
        .map(|r| r.into_iter().collect())
        .collect()
}

/// kubectl's `smartLabelFor`: `apiVersion` → `API Version`.
pub fn smart_label(field: &str) -> String {
    if field.chars().any(|c| !c.is_alphabetic() && c != '-') {
        return field.to_string();
    }
    let acronyms = ["API", "URL", "UID", "OSB", "GUID"];
    camel_split(field)
        .into_iter()
        .filter(|p| p != "_")
        .map(|p| {
            let up = p.to_uppercase();
            if acronyms.contains(&up.as_str()) {
                up
            } else {
                let mut cs = p.chars();
                match cs.next() {
                    Some(f) => f.to_uppercase().collect::<String>() + cs.as_str(),
                    None => String::new(),
                }
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn leaf(v: &Value) -> String {
    crate::output::table::go_sprint(v)
}

fn unstructured(w: &mut W, level: usize, content: &Value, prefix: &str, skip: &[&str]) {
    match content {
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                unstructured(w, level, child, &format!("{prefix}[{i}]"), skip);
            }
        }
        Value::Object(m) => {
            for (key, value) in m {
                let path = format!("{prefix}.{key}");
                if skip.contains(&path.as_str()) {
                    continue;
                }
                match value {
                    Value::Object(_) => {
                        w.line(level, &format!("{}:", smart_label(key)));
                        unstructured(w, level + 1, value, &path, skip);
                    }
                    Value::Array(items) => {
                        w.line(level, &format!("{}:", smart_label(key)));
                        for child in items {
                            match child {
                                Value::String(t) => w.line(level + 1, t),
                                other => unstructured(w, level + 1, other, &path, skip),
                            }
                        }
                    }
                    other => w.line(level, &format!("{}:\t{}", smart_label(key), leaf(other))),
                }
            }
        }
        _ => {}
    }
}

fn generic(w: &mut W, obj: &Value) {
    header(w, obj, true);
    labels(w, obj);
    annotations(w, obj);
    unstructured(
        w,
        0,
        obj,
        "",
        &[
            ".metadata.managedFields",
            ".metadata.name",
            ".metadata.namespace",
            ".metadata.labels",
            ".metadata.annotations",
        ],
    );
}

// Pods.

fn container_state(w: &mut W, level: usize, title: &str, st: &Value) {
    let Some((state, detail)) = st.as_object().and_then(|m| m.iter().next()) else {
        w.kv(level, title, "Waiting");
        return;
    };
    match state.as_str() {
        "running" => {
            w.kv(level, title, "Running");
            w.kv(level + 1, "Started", &rfc1123z(s(detail, "/startedAt")));
        }
        "waiting" => {
            w.kv(level, title, "Waiting");
            if !s(detail, "/reason").is_empty() {
                w.kv(level + 1, "Reason", s(detail, "/reason"));
            }
        }
        "terminated" => {
            w.kv(level, title, "Terminated");
            if !s(detail, "/reason").is_empty() {
                w.kv(level + 1, "Reason", s(detail, "/reason"));
            }
            if !s(detail, "/message").is_empty() {
                w.kv(level + 1, "Message", s(detail, "/message"));
            }
            w.kv(
                level + 1,
                "Exit Code",
                &detail["exitCode"].as_i64().unwrap_or(0).to_string(),
            );
            if let Some(sig) = detail["signal"].as_i64().filter(|x| *x > 0) {
                w.kv(level + 1, "Signal", &sig.to_string());
            }
            w.kv(level + 1, "Started", &rfc1123z(s(detail, "/startedAt")));
            w.kv(level + 1, "Finished", &rfc1123z(s(detail, "/finishedAt")));
        }
        _ => w.kv(level, title, "Waiting"),
    }
}

fn resources(w: &mut W, level: usize, c: &Value) {
    for (title, key) in [("Limits", "limits"), ("Requests", "requests")] {
        if let Some(m) = c
            .pointer(&format!("/resources/{key}"))
            .and_then(Value::as_object)
            && !m.is_empty()
        {
            w.line(level, &format!("{title}:"));
            for (k, v) in m {
                w.kv(level + 1, k, v.as_str().unwrap_or_default());
            }
        }
    }
}

fn env(w: &mut W, level: usize, c: &Value, pod: Option<&Value>) {
    let envs = c["env"].as_array().cloned().unwrap_or_default();
    if envs.is_empty() {
        w.kv(level, "Environment", "<none>");
        return;
    }
    w.line(level, "Environment:");
    for e in envs {
        let name = s(&e, "/name");
        if let Some(v) = e.get("value").and_then(Value::as_str) {
            w.kv(level + 1, name, v);
        } else if let Some(from) = e.get("valueFrom") {
            let text = if let Some(r) = from.get("fieldRef") {
                let value = pod
                    .map(|p| field_value(p, s(r, "/fieldPath")))
                    .unwrap_or_default();
                let version = match s(r, "/apiVersion") {
                    "" => "v1",
                    v => v,
                };
                format!("{value} ({version}:{})", s(r, "/fieldPath"))
            } else if let Some(r) = from.get("secretKeyRef") {
                format!(
                    "<set to the key '{}' in secret '{}'>",
                    s(r, "/key"),
                    s(r, "/name")
                )
            } else if let Some(r) = from.get("configMapKeyRef") {
                format!(
                    "<set to the key '{}' of config map '{}'>",
                    s(r, "/key"),
                    s(r, "/name")
                )
            } else {
                String::new()
            };
            w.kv(level + 1, name, &text);
        } else {
            w.kv(level + 1, name, "");
        }
    }
}

fn containers(w: &mut W, title: &str, list: &[Value], statuses: &[Value], pod: &Value) {
    w.line(0, &format!("{title}:"));
    for c in list {
        let name = s(c, "/name");
        let st = statuses.iter().find(|x| s(x, "/name") == name);
        w.line(1, &format!("{name}:"));
        if let Some(st) = st {
            w.kv(2, "Container ID", s(st, "/containerID"));
        }
        w.kv(2, "Image", s(c, "/image"));
        if let Some(st) = st {
            w.kv(2, "Image ID", s(st, "/imageID"));
        }
        let ports = arr(c, "/ports");
        if ports.is_empty() {
            w.kv(2, "Port", "<none>");
            w.kv(2, "Host Port", "<none>");
        } else {
            let many = ports.len() > 1;
            w.kv(
                2,
                if many { "Ports" } else { "Port" },
                &port_list(&ports, "containerPort"),
            );
            w.kv(
                2,
                if many { "Host Ports" } else { "Host Port" },
                &port_list(&ports, "hostPort"),
            );
        }
        if let Some(cmd) = c["command"].as_array() {
            w.line(2, "Command:");
            for x in cmd {
                w.line(3, x.as_str().unwrap_or_default());
            }
        }
        if let Some(args) = c["args"].as_array() {
            w.line(2, "Args:");
            for x in args {
                w.line(3, x.as_str().unwrap_or_default());
            }
        }
        if let Some(st) = st {
            container_state(w, 2, "State", &st["state"]);
            if st["lastState"].as_object().is_some_and(|m| !m.is_empty()) {
                container_state(w, 2, "Last State", &st["lastState"]);
            }
            w.kv(
                2,
                "Ready",
                if st["ready"] == true { "True" } else { "False" },
            );
            w.kv(
                2,
                "Restart Count",
                &st["restartCount"].as_i64().unwrap_or(0).to_string(),
            );
        }
        resources(w, 2, c);
        env(w, 2, c, Some(pod));
        mounts(w, c);
    }
}

/// The value of a downward-API field path on a pod (kubectl resolves them in describe).
fn field_value(pod: &Value, path: &str) -> String {
    let bracket = |prefix: &str, map: &str| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(
            s(
                pod,
                &format!(
                    "/metadata/{map}/{}",
                    key.replace('~', "~0").replace('/', "~1")
                ),
            )
            .to_string(),
        )
    };
    if let Some(v) = bracket("metadata.labels['", "labels") {
        return v;
    }
    if let Some(v) = bracket("metadata.annotations['", "annotations") {
        return v;
    }
    let ptr = match path {
        "metadata.name" => "/metadata/name",
        "metadata.namespace" => "/metadata/namespace",
        "metadata.uid" => "/metadata/uid",
        "spec.nodeName" => "/spec/nodeName",
        "spec.serviceAccountName" => "/spec/serviceAccountName",
        "status.hostIP" => "/status/hostIP",
        "status.podIP" => "/status/podIP",
        _ => return String::new(),
    };
    s(pod, ptr).to_string()
}

fn qos(pod: &Value) -> String {
    let q = s(pod, "/status/qosClass");
    if !q.is_empty() {
        return q.to_string();
    }
    "BestEffort".into()
}

fn pod(w: &mut W, p: &Value) {
    header(w, p, true);
    w.kv(
        0,
        "Priority",
        &p.pointer("/spec/priority")
            .and_then(Value::as_i64)
            .unwrap_or(0)
            .to_string(),
    );
    if !s(p, "/spec/priorityClassName").is_empty() {
        w.kv(0, "Priority Class Name", s(p, "/spec/priorityClassName"));
    }
    if !s(p, "/spec/runtimeClassName").is_empty() {
        w.kv(0, "Runtime Class Name", s(p, "/spec/runtimeClassName"));
    }
    w.kv(0, "Service Account", s(p, "/spec/serviceAccountName"));
    let node = s(p, "/spec/nodeName");
    if node.is_empty() {
        w.kv(0, "Node", "<none>");
    } else {
        w.kv(0, "Node", &format!("{node}/{}", s(p, "/status/hostIP")));
    }
    if !s(p, "/status/startTime").is_empty() {
        w.kv(0, "Start Time", &rfc1123z(s(p, "/status/startTime")));
    }
    labels(w, p);
    annotations(w, p);
    if !s(p, "/metadata/deletionTimestamp").is_empty() {
        w.kv(0, "Status", "Terminating");
    } else {
        w.kv(0, "Status", s(p, "/status/phase"));
    }
    if !s(p, "/status/reason").is_empty() {
        w.kv(0, "Reason", s(p, "/status/reason"));
    }
    if !s(p, "/status/message").is_empty() {
        w.kv(0, "Message", s(p, "/status/message"));
    }
    w.kv(0, "IP", s(p, "/status/podIP"));
    let ips: Vec<&Value> = arr(p, "/status/podIPs");
    if ips.is_empty() {
        w.kv(0, "IPs", "<none>");
    } else {
        w.line(0, "IPs:");
        for ip in ips {
            w.kv(1, "IP", s(ip, "/ip"));
        }
    }
    controlled_by(w, p);
    let empty = Vec::new();
    let init: &Vec<Value> = p
        .pointer("/spec/initContainers")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    if !init.is_empty() {
        let st = p
            .pointer("/status/initContainerStatuses")
            .and_then(Value::as_array)
            .unwrap_or(&empty);
        containers(w, "Init Containers", init, st, p);
    }
    let cs = p
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let st = p
        .pointer("/status/containerStatuses")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    containers(w, "Containers", cs, st, p);
    let conds: Vec<&Value> = arr(p, "/status/conditions");
    if !conds.is_empty() {
        w.line(0, "Conditions:");
        w.line(1, "Type\tStatus");
        for c in conds {
            w.line(1, &format!("{} \t{} ", s(c, "/type"), s(c, "/status")));
        }
    }
    volumes(w, 0, p);
    w.kv(0, "QoS Class", &qos(p));
    labels_multiline(w, 0, "Node-Selectors", p.pointer("/spec/nodeSelector"), "=");
    tolerations(w, p.pointer("/spec/tolerations"));
}

fn volume(w: &mut W, v: &Value) {
    if let Some(pr) = v.get("projected") {
        w.kv(
            2,
            "Type",
            "Projected (a volume that contains injected data from multiple sources)",
        );
        for src in pr["sources"].as_array().into_iter().flatten() {
            if let Some(t) = src.get("serviceAccountToken") {
                w.kv(
                    2,
                    "TokenExpirationSeconds",
                    &t["expirationSeconds"].as_i64().unwrap_or(3600).to_string(),
                );
            }
            if let Some(c) = src.get("configMap") {
                w.kv(2, "ConfigMapName", s(c, "/name"));
                w.kv(2, "Optional", bool_text(&c["optional"]));
            }
            if src.get("downwardAPI").is_some() {
                w.kv(2, "DownwardAPI", "true");
            }
        }
    } else if let Some(e) = v.get("emptyDir") {
        w.kv(
            2,
            "Type",
            "EmptyDir (a temporary directory that shares a pod's lifetime)",
        );
        w.kv(2, "Medium", s(e, "/medium"));
        w.kv(2, "SizeLimit", or_unset(s(e, "/sizeLimit")));
    } else if let Some(c) = v.get("configMap") {
        w.kv(2, "Type", "ConfigMap (a volume populated by a ConfigMap)");
        w.kv(2, "Name", s(c, "/name"));
        w.kv(2, "Optional", bool_text(&c["optional"]));
    } else if let Some(c) = v.get("secret") {
        w.kv(2, "Type", "Secret (a volume populated by a Secret)");
        w.kv(2, "SecretName", s(c, "/secretName"));
        w.kv(2, "Optional", bool_text(&c["optional"]));
    } else if let Some(h) = v.get("hostPath") {
        w.kv(2, "Type", "HostPath (bare host directory volume)");
        w.kv(2, "Path", s(h, "/path"));
        w.kv(2, "HostPathType", s(h, "/type"));
    } else if let Some(c) = v.get("persistentVolumeClaim") {
        w.kv(
            2,
            "Type",
            "PersistentVolumeClaim (a reference to a PersistentVolumeClaim in the same namespace)",
        );
        w.kv(2, "ClaimName", s(c, "/claimName"));
        w.kv(2, "ReadOnly", bool_text(&c["readOnly"]));
    } else {
        w.kv(2, "Type", "<unknown>");
    }
}

fn or_unset(x: &str) -> &str {
    if x.is_empty() { "<unset>" } else { x }
}

fn tolerations(w: &mut W, t: Option<&Value>) {
    let list: Vec<&Value> = t.and_then(Value::as_array).into_iter().flatten().collect();
    if list.is_empty() {
        w.kv(0, "Tolerations", "<none>");
        return;
    }
    for (i, t) in list.iter().enumerate() {
        let mut text = s(t, "/key").to_string();
        if !s(t, "/value").is_empty() {
            text.push('=');
            text.push_str(s(t, "/value"));
        }
        if !s(t, "/effect").is_empty() {
            text.push(':');
            text.push_str(s(t, "/effect"));
        }
        if s(t, "/operator") == "Exists" && s(t, "/value").is_empty() {
            if s(t, "/key").is_empty() {
                text = "op=Exists".into();
            } else {
                text.push_str(" op=Exists");
            }
        }
        if let Some(secs) = t["tolerationSeconds"].as_i64() {
            text.push_str(&format!(" for {secs}s"));
        }
        if i == 0 {
            w.kv(0, "Tolerations", &text);
        } else {
            w.line(0, &format!("\t{text}"));
        }
    }
}

fn pod_template(w: &mut W, t: &Value) {
    w.line(0, "Pod Template:");
    labels_multiline(w, 1, "Labels", t.pointer("/metadata/labels"), "=");
    if t.pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|m| !m.is_empty())
    {
        labels_multiline(
            w,
            1,
            "Annotations",
            t.pointer("/metadata/annotations"),
            ": ",
        );
    }
    if !s(t, "/spec/serviceAccountName").is_empty() {
        w.kv(1, "Service Account", s(t, "/spec/serviceAccountName"));
    }
    let empty = Vec::new();
    let cs = t
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    w.line(1, "Containers:");
    for c in cs {
        w.line(1, &format!(" {}:", s(c, "/name")));
        w.kv(2, "Image", s(c, "/image"));
        let ports = arr(c, "/ports");
        if ports.is_empty() {
            w.kv(2, "Port", "<none>");
            w.kv(2, "Host Port", "<none>");
        } else {
            w.kv(2, "Port", &port_list(&ports, "containerPort"));
            w.kv(2, "Host Port", &port_list(&ports, "hostPort"));
        }
        resources(w, 2, c);
        env(w, 2, c, None);
        mounts(w, c);
    }
    volumes(w, 1, t);
    labels_multiline(w, 1, "Node-Selectors", t.pointer("/spec/nodeSelector"), "=");
    let tl: Vec<&Value> = arr(t, "/spec/tolerations");
    if tl.is_empty() {
        w.kv(1, "Tolerations", "<none>");
    }
}

fn selector_text(sel: Option<&Value>) -> String {
    let Some(sel) = sel else {
        return "<none>".into();
    };
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let vals: Vec<&str> = e["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let key = s(e, "/key");
        parts.push(match s(e, "/operator") {
            "In" => format!("{key} in ({})", vals.join(",")),
            "NotIn" => format!("{key} notin ({})", vals.join(",")),
            "Exists" => key.to_string(),
            "DoesNotExist" => format!("!{key}"),
            other => format!("{key} {other}"),
        });
    }
    parts.sort();
    if parts.is_empty() {
        "<none>".into()
    } else {
        parts.join(",")
    }
}

fn int(v: &Value, p: &str) -> i64 {
    v.pointer(p).and_then(Value::as_i64).unwrap_or(0)
}

fn conditions_table(w: &mut W, obj: &Value, with_reason: bool) {
    let conds: Vec<&Value> = arr(obj, "/status/conditions");
    if conds.is_empty() {
        return;
    }
    w.line(0, "Conditions:");
    if with_reason {
        w.line(1, "Type\tStatus\tReason");
        w.line(1, "----\t------\t------");
        for c in conds {
            w.line(
                1,
                &format!(
                    "{}\t{}\t{}",
                    s(c, "/type"),
                    s(c, "/status"),
                    s(c, "/reason")
                ),
            );
        }
    } else {
        w.line(1, "Type\tStatus");
        for c in conds {
            w.line(1, &format!("{}\t{}", s(c, "/type"), s(c, "/status")));
        }
    }
}

fn deployment(w: &mut W, d: &Value, extra: &Extra) {
    header(w, d, true);
    w.kv(
        0,
        "CreationTimestamp",
        &rfc1123z(s(d, "/metadata/creationTimestamp")),
    );
    labels(w, d);
    annotations(w, d);
    w.kv(0, "Selector", &selector_text(d.pointer("/spec/selector")));
    w.kv(
        0,
        "Replicas",
        &format!(
            "{} desired | {} updated | {} total | {} available | {} unavailable",
            int(d, "/spec/replicas"),
            int(d, "/status/updatedReplicas"),
            int(d, "/status/replicas"),
            int(d, "/status/availableReplicas"),
            int(d, "/status/unavailableReplicas")
        ),
    );
    let strategy = s(d, "/spec/strategy/type");
    w.kv(0, "StrategyType", strategy);
    w.kv(
        0,
        "MinReadySeconds",
        &int(d, "/spec/minReadySeconds").to_string(),
    );
    if strategy == "RollingUpdate" {
        let ru = d
            .pointer("/spec/strategy/rollingUpdate")
            .cloned()
            .unwrap_or(Value::Null);
        w.kv(
            0,
            "RollingUpdateStrategy",
            &format!(
                "{} max unavailable, {} max surge",
                leaf(ru.get("maxUnavailable").unwrap_or(&Value::Null)),
                leaf(ru.get("maxSurge").unwrap_or(&Value::Null))
            ),
        );
    }
    pod_template(w, d.pointer("/spec/template").unwrap_or(&Value::Null));
    conditions_table(w, d, true);
    w.kv(
        0,
        "OldReplicaSets",
        if extra.old_rs.is_empty() {
            "<none>"
        } else {
            ""
        },
    );
    if !extra.old_rs.is_empty() {
        // Replace the empty value written above with the list.
        w.buf.truncate(w.buf.len() - "OldReplicaSets:\t\n".len());
        w.kv(0, "OldReplicaSets", &extra.old_rs.join(", "));
    }
    w.kv(
        0,
        "NewReplicaSet",
        extra.new_rs.as_deref().unwrap_or("<none>"),
    );
}

fn replica_set(w: &mut W, rs: &Value, extra: &Extra) {
    header(w, rs, true);
    w.kv(0, "Selector", &selector_text(rs.pointer("/spec/selector")));
    labels(w, rs);
    annotations(w, rs);
    controlled_by(w, rs);
    w.kv(
        0,
        "Replicas",
        &format!(
            "{} current / {} desired",
            int(rs, "/status/replicas"),
            int(rs, "/spec/replicas")
        ),
    );
    let (r, wt, su, f) = extra.pod_status.unwrap_or_default();
    w.kv(
        0,
        "Pods Status",
        &format!("{r} Running / {wt} Waiting / {su} Succeeded / {f} Failed"),
    );
    pod_template(w, rs.pointer("/spec/template").unwrap_or(&Value::Null));
    conditions_table(w, rs, true);
}

fn job(w: &mut W, j: &Value, extra: &Extra) {
    header(w, j, true);
    w.kv(0, "Selector", &selector_text(j.pointer("/spec/selector")));
    labels(w, j);
    annotations(w, j);
    w.kv(0, "Parallelism", &int(j, "/spec/parallelism").to_string());
    w.kv(
        0,
        "Completions",
        &j.pointer("/spec/completions")
            .and_then(Value::as_i64)
            .map_or("<unset>".to_string(), |c| c.to_string()),
    );
    w.kv(0, "Completion Mode", or_unset(s(j, "/spec/completionMode")));
    w.kv(
        0,
        "Suspend",
        bool_text(j.pointer("/spec/suspend").unwrap_or(&Value::Null)),
    );
    w.kv(
        0,
        "Backoff Limit",
        &int(j, "/spec/backoffLimit").to_string(),
    );
    if !s(j, "/status/startTime").is_empty() {
        w.kv(0, "Start Time", &rfc1123z(s(j, "/status/startTime")));
    }
    if !s(j, "/status/completionTime").is_empty() {
        w.kv(0, "Completed At", &rfc1123z(s(j, "/status/completionTime")));
    }
    let (r, _wt, su, f) = extra.pod_status.unwrap_or_default();
    w.kv(
        0,
        "Pods Statuses",
        &format!(
            "{} Active ({} Ready) / {su} Succeeded / {f} Failed",
            int(j, "/status/active").max(i64::try_from(r).unwrap_or(0)),
            int(j, "/status/ready")
        ),
    );
    pod_template(w, j.pointer("/spec/template").unwrap_or(&Value::Null));
}

fn service(w: &mut W, svc: &Value, extra: &Extra) {
    header(w, svc, true);
    labels(w, svc);
    annotations(w, svc);
    let sel: Vec<String> = svc
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    let mut sel = sel;
    sel.sort();
    w.kv(0, "Selector", or_none(&sel.join(",")));
    let ty = s(svc, "/spec/type");
    w.kv(0, "Type", ty);
    let families: Vec<&str> = svc
        .pointer("/spec/ipFamilies")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .collect();
    w.kv(
        0,
        "IP Family Policy",
        or_none(s(svc, "/spec/ipFamilyPolicy")),
    );
    w.kv(0, "IP Families", or_none(&families.join(",")));
    let ip = s(svc, "/spec/clusterIP");
    if !ip.is_empty() {
        w.kv(0, "IP", ip);
        let ips: Vec<&str> = svc
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        w.kv(0, "IPs", or_none(&ips.join(",")));
    }
    if ty == "ExternalName" {
        w.kv(0, "External Name", s(svc, "/spec/externalName"));
    }
    for p in svc
        .pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let name = or_unset(s(p, "/name"));
        w.kv(
            0,
            "Port",
            &format!(
                "{name}  {}/{}",
                int(p, "/port"),
                p["protocol"].as_str().unwrap_or("TCP")
            ),
        );
        let tp = match &p["targetPort"] {
            Value::Number(n) => n.to_string(),
            Value::String(x) => x.clone(),
            _ => int(p, "/port").to_string(),
        };
        w.kv(
            0,
            "TargetPort",
            &format!("{tp}/{}", p["protocol"].as_str().unwrap_or("TCP")),
        );
        if let Some(np) = p["nodePort"].as_i64().filter(|x| *x != 0) {
            w.kv(
                0,
                "NodePort",
                &format!("{name}  {np}/{}", p["protocol"].as_str().unwrap_or("TCP")),
            );
        }
        if ty != "ExternalName" {
            w.kv(
                0,
                "Endpoints",
                &format_slices(extra.slices.as_deref().unwrap_or_default(), s(p, "/name")),
            );
        }
    }
    w.kv(0, "Session Affinity", s(svc, "/spec/sessionAffinity"));
    if !s(svc, "/spec/internalTrafficPolicy").is_empty() {
        w.kv(
            0,
            "Internal Traffic Policy",
            s(svc, "/spec/internalTrafficPolicy"),
        );
    }
    if !s(svc, "/spec/externalTrafficPolicy").is_empty() {
        w.kv(
            0,
            "External Traffic Policy",
            s(svc, "/spec/externalTrafficPolicy"),
        );
    }
}

fn namespace(w: &mut W, ns: &Value) {
    header(w, ns, false);
    labels(w, ns);
    annotations(w, ns);
    w.kv(0, "Status", s(ns, "/status/phase"));
    w.line(0, "");
    w.line(0, "No resource quota.");
    w.line(0, "");
    w.line(0, "No LimitRange resource.");
}

fn config_map(w: &mut W, cm: &Value) {
    header(w, cm, true);
    labels(w, cm);
    annotations(w, cm);
    w.line(0, "");
    w.line(0, "Data");
    w.line(0, "====");
    for (k, v) in cm
        .get("data")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
    {
        w.line(0, &format!("{k}:"));
        w.line(0, "----");
        w.line(0, v.as_str().unwrap_or_default());
        w.line(0, "");
    }
    w.line(0, "");
    w.line(0, "BinaryData");
    w.line(0, "====");
    byte_counts(w, cm.get("binaryData"));
    w.line(0, "");
}

/// `key:\t<n> bytes` for each base64 value of a data map (secret data, binaryData).
fn byte_counts(w: &mut W, data: Option<&Value>) {
    use base64::Engine;
    for (k, v) in data.and_then(Value::as_object).into_iter().flatten() {
        let n = base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .map(|b| b.len())
            .unwrap_or(0);
        w.kv(0, k, &format!("{n} bytes"));
    }
}

fn secret(w: &mut W, sec: &Value) {
    header(w, sec, true);
    labels(w, sec);
    annotations(w, sec);
    w.line(0, "");
    w.kv(0, "Type", s(sec, "/type"));
    w.line(0, "");
    w.line(0, "Data");
    w.line(0, "====");
    byte_counts(w, sec.get("data"));
}

fn service_account(w: &mut W, sa: &Value) {
    header(w, sa, true);
    labels(w, sa);
    annotations(w, sa);
    let names = |ptr: &str| {
        arr(sa, ptr)
            .into_iter()
            .map(|x| s(x, "/name"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    w.kv(
        0,
        "Image pull secrets",
        or_none(&names("/imagePullSecrets")),
    );
    w.kv(0, "Mountable secrets", or_none(&names("/secrets")));
    w.kv(0, "Tokens", "<none>");
}

fn node(w: &mut W, n: &Value, extra: &Extra) {
    header(w, n, false);
    let roles: Vec<String> = n
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .filter_map(|(k, _)| {
            k.strip_prefix("node-role.kubernetes.io/")
                .map(str::to_string)
        })
        .collect();
    w.kv(0, "Roles", if roles.is_empty() { "<none>" } else { "" });
    if !roles.is_empty() {
        w.buf.truncate(w.buf.len() - "Roles:\t\n".len());
        w.kv(0, "Roles", &roles.join(","));
    }
    labels(w, n);
    annotations(w, n);
    w.kv(
        0,
        "CreationTimestamp",
        &rfc1123z(s(n, "/metadata/creationTimestamp")),
    );
    let taints: Vec<String> = n
        .pointer("/spec/taints")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|t| {
            let v = s(t, "/value");
            if v.is_empty() {
                format!("{}:{}", s(t, "/key"), s(t, "/effect"))
            } else {
                format!("{}={v}:{}", s(t, "/key"), s(t, "/effect"))
            }
        })
        .collect();
    if taints.is_empty() {
        w.kv(0, "Taints", "<none>");
    } else {
        for (i, t) in taints.iter().enumerate() {
            if i == 0 {
                w.kv(0, "Taints", t);
            } else {
                w.line(0, &format!("\t{t}"));
            }
        }
    }
    w.kv(
        0,
        "Unschedulable",
        if n.pointer("/spec/unschedulable") == Some(&Value::Bool(true)) {
            "true"
        } else {
            "false"
        },
    );
    if let Some(lease) = &extra.lease {
        w.line(0, "Lease:");
        w.kv(
            1,
            "HolderIdentity",
            or_unset(s(lease, "/spec/holderIdentity")),
        );
        let t = |p: &str| {
            let v = s(lease, p);
            if v.is_empty() {
                "<unset>".to_string()
            } else {
                rfc1123z(v)
            }
        };
        w.kv(1, "AcquireTime", &t("/spec/acquireTime"));
        w.kv(1, "RenewTime", &t("/spec/renewTime"));
    }
    let conds: Vec<&Value> = arr(n, "/status/conditions");
    if !conds.is_empty() {
        w.line(0, "Conditions:");
        w.line(
            1,
            "Type\tStatus\tLastHeartbeatTime\tLastTransitionTime\tReason\tMessage",
        );
        w.line(
            1,
            "----\t------\t-----------------\t------------------\t------\t-------",
        );
        for c in conds {
            w.line(
                1,
                &format!(
                    "{} \t{} \t{} \t{} \t{} \t{}",
                    s(c, "/type"),
                    s(c, "/status"),
                    rfc1123z(s(c, "/lastHeartbeatTime")),
                    rfc1123z(s(c, "/lastTransitionTime")),
                    s(c, "/reason"),
                    s(c, "/message")
                ),
            );
        }
    }
    w.line(0, "Addresses:");
    for a in n
        .pointer("/status/addresses")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        w.kv(1, s(a, "/type"), s(a, "/address"));
    }
    for (title, key) in [("Capacity", "capacity"), ("Allocatable", "allocatable")] {
        if let Some(m) = n
            .pointer(&format!("/status/{key}"))
            .and_then(Value::as_object)
        {
            w.line(0, &format!("{title}:"));
            for (k, v) in m {
                w.kv(1, k, v.as_str().unwrap_or_default());
            }
        }
    }
    w.line(0, "System Info:");
    let info = n
        .pointer("/status/nodeInfo")
        .cloned()
        .unwrap_or(Value::Null);
    for (label, key) in [
        ("Machine ID", "machineID"),
        ("System UUID", "systemUUID"),
        ("Boot ID", "bootID"),
        ("Kernel Version", "kernelVersion"),
        ("OS Image", "osImage"),
        ("Operating System", "operatingSystem"),
        ("Architecture", "architecture"),
        ("Container Runtime Version", "containerRuntimeVersion"),
        ("Kubelet Version", "kubeletVersion"),
        ("Kube-Proxy Version", "kubeProxyVersion"),
    ] {
        w.kv(1, label, s(&info, &format!("/{key}")));
    }
    if !s(n, "/spec/podCIDR").is_empty() {
        w.kv(0, "PodCIDR", s(n, "/spec/podCIDR"));
        let cidrs: Vec<&str> = n
            .pointer("/spec/podCIDRs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        w.kv(0, "PodCIDRs", &cidrs.join(","));
    }
    if !s(n, "/spec/providerID").is_empty() {
        w.kv(0, "ProviderID", s(n, "/spec/providerID"));
    }
    w.kv(
        0,
        "Non-terminated Pods",
        &format!("({} in total)", extra.node_pods.len()),
    );
    w.line(
        1,
        "Namespace\tName\t\tCPU Requests\tCPU Limits\tMemory Requests\tMemory Limits\tAge",
    );
    w.line(
        1,
        "---------\t----\t\t------------\t----------\t---------------\t-------------\t---",
    );
    let alloc = |k: &str| q(s(n, &format!("/status/allocatable/{k}")));
    let pct = |used: &Quantity, total: &Quantity, milli: bool| -> i64 {
        let (u, t) = if milli {
            (used.milli_value(), total.milli_value())
        } else {
            (used.value(), total.value())
        };
        if t == 0 {
            0
        } else {
            (u as f64 / t as f64 * 100.0) as i64
        }
    };
    let fmt = |used: &Quantity, total: &Quantity, milli: bool| {
        format!("{} ({}%)", used.canonical(), pct(used, total, milli))
    };
    let (cpu_alloc, mem_alloc, eph_alloc) =
        (alloc("cpu"), alloc("memory"), alloc("ephemeral-storage"));
    let mut totals: [Quantity; 6] = std::array::from_fn(|_| Quantity::zero());
    for p in &extra.node_pods {
        let (req, lim) = pod_requests_limits(p);
        let get = |m: &std::collections::BTreeMap<String, Quantity>, k: &str| {
            m.get(k).cloned().unwrap_or_else(Quantity::zero)
        };
        let vals = [
            get(&req, "cpu"),
            get(&lim, "cpu"),
            get(&req, "memory"),
            get(&lim, "memory"),
            get(&req, "ephemeral-storage"),
            get(&lim, "ephemeral-storage"),
        ];
        let age = since(
            p.pointer("/metadata/creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse().ok()),
            jiff::Timestamp::now(),
        );
        w.line(
            1,
            &format!(
                "{}\t{}\t\t{}\t{}\t{}\t{}\t{age}",
                s(p, "/metadata/namespace"),
                s(p, "/metadata/name"),
                fmt(&vals[0], &cpu_alloc, true),
                fmt(&vals[1], &cpu_alloc, true),
                fmt(&vals[2], &mem_alloc, false),
                fmt(&vals[3], &mem_alloc, false),
            ),
        );
        for (t, v) in totals.iter_mut().zip(vals.iter()) {
            *t = t.add(v);
        }
    }
    w.line(0, "Allocated resources:");
    w.line(
        1,
        "(Total limits may be over 100 percent, i.e., overcommitted.)",
    );
    w.line(1, "Resource\tRequests\tLimits");
    w.line(1, "--------\t--------\t------");
    for (name, i, total, milli) in [
        ("cpu", 0, &cpu_alloc, true),
        ("memory", 2, &mem_alloc, false),
        ("ephemeral-storage", 4, &eph_alloc, false),
    ] {
        w.line(
            1,
            &format!(
                "{name}\t{}\t{}",
                fmt(&totals[i], total, milli),
                fmt(&totals[i + 1], total, milli)
            ),
        );
    }
}

use api::kinds::validate::quantity::Quantity;

fn q(text: &str) -> Quantity {
    Quantity::parse(text).unwrap_or_else(|_| Quantity::zero())
}

type ResourceMap = std::collections::BTreeMap<String, Quantity>;

/// A pod's requests and limits as kubectl's `resourcehelper` sums them: the containers'
/// sum, at least each init container's, plus the pod overhead.
fn pod_requests_limits(p: &Value) -> (ResourceMap, ResourceMap) {
    let sum = |key: &str| {
        let mut total = ResourceMap::new();
        let list = |path: &str| -> Vec<(String, Quantity)> {
            p.pointer(path)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .flat_map(|c| {
                    c.pointer(&format!("/resources/{key}"))
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .map(|(k, v)| (k.clone(), q(v.as_str().unwrap_or_default())))
                        .collect::<Vec<_>>()
                })
                .collect()
        };
        for (k, v) in list("/spec/containers") {
            let e = total.entry(k).or_insert_with(Quantity::zero);
            *e = e.add(&v);
        }
        for (k, v) in list("/spec/initContainers") {
            let e = total.entry(k).or_insert_with(Quantity::zero);
            if v > *e {
                *e = v;
            }
        }
        for (k, v) in p
            .pointer("/spec/overhead")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            let e = total.entry(k.clone()).or_insert_with(Quantity::zero);
            *e = e.add(&q(v.as_str().unwrap_or_default()));
        }
        total
    };
    (sum("requests"), sum("limits"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn go_tabwriter_blocks() {
        let text = "Name:\tx\nNamespace:\tdefault\nContainers:\n  a:\n    Image:\tnginx\n    Restart Count:\t0\n";
        assert_eq!(
            tabwrite(text, 0, 2),
            "Name:       x\nNamespace:  default\nContainers:\n  a:\n    Image:          nginx\n    Restart Count:  0\n"
        );
        // Nested columns: a block per column.
        assert_eq!(
            tabwrite("a\tb\tc\naa\tbbbb\tc\n", 0, 1),
            "a  b    c\naa bbbb c\n"
        );
    }

    #[test]
    fn labels_smart() {
        assert_eq!(smart_label("apiVersion"), "API Version");
        assert_eq!(smart_label("creationTimestamp"), "Creation Timestamp");
        assert_eq!(smart_label("uid"), "UID");
        assert_eq!(smart_label("podIP"), "Pod IP");
        assert_eq!(smart_label("a.b"), "a.b");
    }

    #[test]
    fn generic_and_events() {
        let obj = json!({
            "apiVersion": "example.com/v1", "kind": "Foo",
            "metadata": {"name": "x", "namespace": "default", "uid": "u", "labels": {"a": "1", "b": "2"}, "managedFields": []},
            "spec": {"size": 3, "items": ["p", "q"]}
        });
        let now: jiff::Timestamp = "2024-01-01T00:10:00Z".parse().unwrap();
        let ev = json!({"type": "Normal", "reason": "Made", "message": "made it ", "count": 3,
            "firstTimestamp": "2024-01-01T00:00:00Z", "lastTimestamp": "2024-01-01T00:09:00Z",
            "source": {"component": "ctrl"}});
        let text = describe("Foo", &obj, Some(&[ev]), &Extra::default(), now);
        assert_eq!(
            text,
            "Name:         x\nNamespace:    default\nLabels:       a=1\n              b=2\nAnnotations:  <none>\nAPI Version:  example.com/v1\nKind:         Foo\nMetadata:\n  UID:  u\nSpec:\n  Items:\n    p\n    q\n  Size:  3\nEvents:\n  Type    Reason  Age                From  Message\n  ----    ------  ----               ----  -------\n  Normal  Made    60s (x3 over 10m)  ctrl  made it\n"
        );
        let none = describe("Foo", &obj, Some(&[]), &Extra::default(), now);
        assert!(none.ends_with("  Size:  3\nEvents:  <none>\n"), "{none}");
    }
}
