//! `kubectl logs`: `POD|TYPE/NAME [CONTAINER]` or `-l SELECTOR`, one `pods/<name>/log`
//! request per container (the API server forwards it to the kubelet), streamed to
//! stdout; `-f` follows, several followed streams interleave by line.

use futures::StreamExt;
use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::pods;
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// POD or TYPE/NAME, and optionally the container.
    #[arg(num_args = 0..)]
    pub args: Vec<String>,
    /// Print the logs of this container.
    #[arg(short = 'c', long)]
    pub container: Option<String>,
    /// Specify if the logs should be streamed.
    #[arg(short = 'f', long)]
    pub follow: bool,
    /// If true, print the logs for the previous instance of the container in a pod if it
    /// exists.
    #[arg(short = 'p', long)]
    pub previous: bool,
    /// Lines of recent log file to display (-1: all, or 10 with a selector).
    #[arg(long, default_value_t = -1, allow_negative_numbers = true)]
    pub tail: i64,
    /// Only return logs newer than a relative duration like 5s, 2m, or 3h.
    #[arg(long)]
    pub since: Option<String>,
    /// Only return logs after a specific date (RFC3339).
    #[arg(long)]
    pub since_time: Option<String>,
    /// Include timestamps on each line in the log output.
    #[arg(long)]
    pub timestamps: bool,
    /// Maximum bytes of logs to return.
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    pub limit_bytes: i64,
    /// Get all containers' logs in the pod(s).
    #[arg(long)]
    pub all_containers: bool,
    /// Get logs from all pod(s). Sets prefix to true.
    #[arg(long)]
    pub all_pods: bool,
    /// Selector (label query) to filter on.
    #[arg(short = 'l', long)]
    pub selector: Option<String>,
    /// Prefix each log line with the log source (pod name and container name).
    #[arg(long)]
    pub prefix: bool,
    /// Maximum number of concurrent logs to follow when using by a selector.
    #[arg(long, default_value_t = 5)]
    pub max_log_requests: usize,
    /// If watching / following pod logs, allow for any errors that occur to be
    /// non-fatal.
    #[arg(long)]
    pub ignore_errors: bool,
    /// The length of time to wait until at least one pod is running.
    #[arg(long, default_value = "20s")]
    pub pod_running_timeout: String,
    /// If true, the API server skips verifying the kubelet's serving certificate.
    #[arg(long)]
    pub insecure_skip_tls_verify_backend: bool,
}

const USAGE: &str = "expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\nPOD or TYPE/NAME is a required argument for the logs command";

/// One log request: a pod's container.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub pod: String,
    pub container: String,
}

/// The query of a log request (upstream's `PodLogOptions` as parameters, keys sorted as
/// `url.Values.Encode` does).
pub fn log_query(a: &Args, container: &str, since: Option<i64>, tail: Option<i64>) -> String {
    let mut pairs: Vec<(&str, String)> = vec![("container", container.to_string())];
    if a.follow {
        pairs.push(("follow", "true".into()));
    }
    if a.insecure_skip_tls_verify_backend {
        pairs.push(("insecureSkipTLSVerifyBackend", "true".into()));
    }
    if a.limit_bytes != 0 {
        pairs.push(("limitBytes", a.limit_bytes.to_string()));
    }
    if a.previous {
        pairs.push(("previous", "true".into()));
    }
    if let Some(s) = since {
        pairs.push(("sinceSeconds", s.to_string()));
    }
    if let Some(t) = &a.since_time {
        pairs.push(("sinceTime", t.clone()));
    }
    if let Some(t) = tail {
        pairs.push(("tailLines", t.to_string()));
    }
    if a.timestamps {
        pairs.push(("timestamps", "true".into()));
    }
    let refs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
    crate::stream::query(&refs)
}

fn usage(msg: impl Into<String>) -> CliError {
    CliError::usage("kubectl logs", msg)
}

/// `--since-time` as kubectl's `ParseRFC3339` (RFC3339, with or without fractions):
/// normalised to RFC3339 with nanoseconds as the server expects.
pub fn parse_since_time(s: &str) -> Result<String> {
    s.parse::<jiff::Timestamp>()
        .map(|t| t.to_string())
        .map_err(|_| {
            CliError::msg(format!(
                "parsing time \"{s}\" as \"2006-01-02T15:04:05Z07:00\": cannot parse \"{s}\" as \"2006\""
            ))
        })
}

pub async fn run(ctx: &Ctx, mut a: Args) -> Result<()> {
    let container_flag = a.container.is_some();
    let selector = a.selector.clone().filter(|s| !s.is_empty());
    let resource = match (a.args.len(), &selector) {
        (0, None) => return Err(usage(USAGE)),
        (0, Some(_)) => None,
        (1, Some(_)) => return Err(usage("only a selector (-l) or a POD name is allowed")),
        (1, None) => Some(a.args[0].clone()),
        (2, _) => {
            if container_flag {
                // Validate (after the object is fetched upstream; the outcome is the same).
                return Err(CliError::msg(
                    "only one of -c or an inline [CONTAINER] arg is allowed",
                ));
            }
            a.container = Some(a.args[1].clone());
            Some(a.args[0].clone())
        }
        _ => return Err(usage(USAGE)),
    };
    let all_pods = a.all_pods;
    let prefix = a.prefix || all_pods;
    let timeout = pods::parse_duration(&a.pod_running_timeout).map_err(|e| {
        usage(format!(
            "invalid argument \"{}\" for \"--pod-running-timeout\" flag: {e}",
            a.pod_running_timeout
        ))
    })?;
    if let Some(t) = &a.since_time {
        a.since_time = Some(parse_since_time(t)?);
    }
    let since = match &a.since {
        Some(s) => {
            let d = pods::parse_duration(s).map_err(|e| {
                usage(format!(
                    "invalid argument \"{s}\" for \"--since\" flag: {e}"
                ))
            })?;
            let secs = d.as_secs_f64().round() as i64;
            (secs != 0).then_some(secs)
        }
        None => None,
    };
    let tail = if selector.is_some() && a.tail == -1 {
        Some(10)
    } else if a.tail != -1 {
        Some(a.tail)
    } else {
        None
    };

    let ns = ctx.namespace().await?;
    // The object (or the selected pods), as upstream's Complete.
    let mut pod_list: Vec<Value> = Vec::new();
    let mut from_workload: Option<(Vec<Value>, usize)> = None;
    if let Some(arg) = &resource {
        let (m, name) = pods::resolve_arg(ctx, arg).await?;
        let obj = match pods::get_object(ctx, &ns, &m, &name).await {
            Ok(o) => o,
            Err(CliError::Api(s)) if s.code == 404 => {
                return Err(CliError::msg(format!(
                    "error from server (NotFound): {} in namespace \"{ns}\"",
                    s.message
                )));
            }
            Err(e) => return Err(e),
        };
        if m.resource == "pods" && m.group.is_empty() {
            pod_list.push(obj);
        } else {
            let sel = pods::selector_for(&obj).map_err(|e| {
                CliError::msg(format!("cannot get the logs from *v1.{}: {e}", m.kind))
            })?;
            let found = pods::list_pods(ctx, &ns, &sel, timeout, pods::by_logging).await?;
            let n = found.len();
            from_workload = Some((found, n));
        }
    } else if let Some(sel) = &selector {
        let client = ctx.client().await?;
        let path = format!(
            "/api/v1/namespaces/{ns}/pods?{}",
            crate::stream::query(&[("labelSelector", sel)])
        );
        let list = client.get_json(&path).await?;
        pod_list = list["items"].as_array().cloned().unwrap_or_default();
        if pod_list.is_empty() {
            let _ = writeln!(ctx.err(), "No resources found in {ns} namespace.");
        }
    }

    // Validate.
    if a.since_time.is_some() && a.since.is_some() {
        return Err(CliError::msg(
            "at most one of `sinceTime` or `sinceSeconds` may be specified",
        ));
    }
    if a.all_containers
        && let Some(c) = &a.container
    {
        return Err(CliError::msg(format!(
            "--all-containers=true should not be specified with container name {c}"
        )));
    }
    if a.limit_bytes < 0 {
        return Err(CliError::msg("--limit-bytes must be greater than 0"));
    }
    if tail.is_some_and(|t| t < -1) {
        return Err(CliError::msg("--tail must be greater than or equal to -1"));
    }

    if let Some((found, n)) = from_workload {
        if n > 1 && all_pods {
            pod_list = found;
        } else {
            if n > 1 {
                let name = found[0]["metadata"]["name"].as_str().unwrap_or_default();
                let _ = writeln!(ctx.err(), "Found {n} pods, using pod/{name}");
            }
            pod_list = found.into_iter().take(1).collect();
        }
    }
    let mut targets = Vec::new();
    for pod in &pod_list {
        targets.extend(targets_for(ctx, pod, &a, all_pods)?);
    }

    if a.follow && targets.len() > 1 && targets.len() > a.max_log_requests {
        return Err(CliError::msg(format!(
            "you are attempting to follow {} log streams, but maximum allowed concurrency is {}, use --max-log-requests to increase the limit",
            targets.len(),
            a.max_log_requests
        )));
    }
    let streams = targets.iter().map(|t| {
        let path = format!(
            "/api/v1/namespaces/{ns}/pods/{}/log?{}",
            t.pod,
            log_query(&a, &t.container, since, tail)
        );
        let prefix = prefix.then(|| format!("[pod/{}/{}] ", t.pod, t.container));
        consume(ctx, path, prefix, a.ignore_errors)
    });
    if a.follow && targets.len() > 1 {
        let results = futures::future::join_all(streams).await;
        for r in results {
            r?;
        }
        return Ok(());
    }
    for s in streams {
        s.await?;
    }
    Ok(())
}

/// The requests for one pod (upstream's `logsForObjectWithClient` for a `*v1.Pod`).
fn targets_for(ctx: &Ctx, pod: &Value, a: &Args, all_pods: bool) -> Result<Vec<Target>> {
    let name = pod["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if a.all_containers {
        return Ok(pods::every_container(pod)
            .into_iter()
            .map(|c| Target {
                pod: name.clone(),
                container: c,
            })
            .collect());
    }
    let mut container = a.container.clone().filter(|c| !c.is_empty());
    if container.is_none()
        && let Some(def) = pod["metadata"]["annotations"][pods::DEFAULT_CONTAINER_ANNOTATION]
            .as_str()
            .filter(|s| !s.is_empty())
    {
        if pods::has_container(pod, def) {
            container = Some(def.to_string());
        } else {
            let _ = writeln!(
                ctx.err(),
                "Default container name \"{def}\" not found in pod {name}"
            );
        }
    }
    let container = match container {
        Some(c) => c,
        None => {
            let (c, notice) = pods::default_container(pod, None)?;
            if let Some(n) = notice
                && !all_pods
            {
                let _ = writeln!(ctx.err(), "{n}");
            }
            c
        }
    };
    if !pods::has_container(pod, &container) {
        return Err(CliError::msg(format!(
            "container {container} is not valid for pod {name}"
        )));
    }
    Ok(vec![Target {
        pod: name,
        container,
    }])
}

/// Splits `chunk` into whole lines (kept in `pending` until their newline arrives)
/// each with `prefix`.
pub fn prefix_lines(pending: &mut Vec<u8>, chunk: &[u8], prefix: &str) -> Vec<u8> {
    pending.extend_from_slice(chunk);
    let mut out = Vec::new();
    while let Some(i) = pending.iter().position(|&b| b == b'\n') {
        out.extend_from_slice(prefix.as_bytes());
        out.extend(pending.drain(..=i));
    }
    out
}

/// Streams one log request to stdout; with `--ignore-errors` a failure is printed there
/// (`error: …`) and the others go on, as kubectl 1.33 does.
async fn consume(
    ctx: &Ctx,
    path: String,
    prefix: Option<String>,
    ignore_errors: bool,
) -> Result<()> {
    match consume_once(ctx, &path, prefix.as_deref()).await {
        Err(e) if ignore_errors => {
            let text = e.to_string();
            let text = text.strip_prefix("error: ").unwrap_or(&text);
            let mut out = ctx.out();
            let _ = writeln!(out, "error: {text}");
            let _ = out.flush();
            Ok(())
        }
        other => other,
    }
}

/// Streams one log request to stdout a whole line at a time (as upstream's
/// `DefaultConsumeRequest`), so parallel streams never mix within a line.
async fn consume_once(ctx: &Ctx, path: &str, prefix: Option<&str>) -> Result<()> {
    let client = ctx.client().await?;
    let mut body = client.stream(Request::get(path).accept("*/*")).await?;
    let prefix = prefix.unwrap_or_default();
    let mut pending = Vec::new();
    while let Some(chunk) = body.next().await {
        let bytes = prefix_lines(&mut pending, &chunk?, prefix);
        if bytes.is_empty() {
            continue;
        }
        let mut out = ctx.out();
        out.write_all(&bytes)?;
        out.flush()?;
    }
    if !pending.is_empty() {
        let mut out = ctx.out();
        out.write_all(prefix.as_bytes())?;
        out.write_all(&pending)?;
        out.flush()?;
    }
    Ok(())
}

use std::io::Write;

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use clap::Parser;

    #[derive(Parser)]
    struct T {
        #[command(flatten)]
        a: Args,
    }

    fn args(v: &[&str]) -> Args {
        T::try_parse_from(std::iter::once("logs").chain(v.iter().copied()))
            .unwrap()
            .a
    }

    #[test]
    fn queries() {
        let a = args(&["p", "-f", "--timestamps", "--limit-bytes=6", "--previous"]);
        assert_eq!(
            log_query(&a, "c", Some(60), Some(2)),
            "container=c&follow=true&limitBytes=6&previous=true&sinceSeconds=60&tailLines=2&timestamps=true"
        );
        let a = args(&["p", "--tail=-1"]);
        assert_eq!(log_query(&a, "c", None, None), "container=c");
    }

    #[test]
    fn since_time() {
        assert_eq!(
            parse_since_time("2024-01-02T03:04:05Z").unwrap(),
            "2024-01-02T03:04:05Z"
        );
        assert_eq!(
            parse_since_time("2024-01-02T03:04:05.5+01:00").unwrap(),
            "2024-01-02T02:04:05.5Z"
        );
        assert!(parse_since_time("yesterday").is_err());
    }

    #[test]
    fn prefixes_whole_lines() {
        let mut pending = Vec::new();
        assert_eq!(prefix_lines(&mut pending, b"a\nb", "[x] "), b"[x] a\n");
        assert_eq!(prefix_lines(&mut pending, b"c\n", "[x] "), b"[x] bc\n");
        assert!(pending.is_empty());
    }
}
