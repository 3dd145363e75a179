//! Container logs from the CRI log files (`kubectl logs`), as upstream's
//! `pkg/kubelet/kuberuntime/logs`: each line of a CRI log file is
//! `<RFC 3339 nano time> <stdout|stderr> <P|F> <content>`; `P` marks a partial line whose
//! content continues on the next line of the same stream. Options are upstream's
//! `PodLogOptions`: `tailLines`, `sinceSeconds`/`sinceTime`, `timestamps`, `limitBytes`,
//! `follow`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bytes::Bytes;
use jiff::Timestamp;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use tokio::sync::mpsc;

/// One parsed line of a CRI log file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriLine<'a> {
    pub time: Timestamp,
    /// The raw timestamp text, printed as-is with `timestamps=true`.
    pub time_text: &'a str,
    pub stream: &'a str,
    pub partial: bool,
    pub content: &'a [u8],
}

/// Parses one line (without its trailing newline).
pub fn parse_cri_line(line: &[u8]) -> Option<CriLine<'_>> {
    let mut parts = line.splitn(4, |b| *b == b' ');
    let time_text = std::str::from_utf8(parts.next()?).ok()?;
    let stream = std::str::from_utf8(parts.next()?).ok()?;
    let tag = parts.next()?;
    let content = parts.next().unwrap_or_default();
    let time = time_text.parse::<Timestamp>().ok()?;
    if stream != "stdout" && stream != "stderr" {
        return None;
    }
    let partial = tag.split(|b| *b == b':').next() == Some(b"P");
    Some(CriLine {
        time,
        time_text,
        stream,
        partial,
        content,
    })
}

/// The runtime id of the container whose log `kubectl logs` reads, from the pod's status
/// as upstream's `validateContainerLogStatus`: the running or terminated instance, the
/// last terminated one with `previous`, else upstream's reason why there is no log.
pub fn container_for_logs(
    pod: &k8s_openapi::api::core::v1::Pod,
    container: &str,
    previous: bool,
) -> Result<String, String> {
    let pod_name = pod.metadata.name.as_deref().unwrap_or_default();
    let status = pod.status.as_ref();
    let found = status.and_then(|s| {
        [
            s.container_statuses.as_ref(),
            s.init_container_statuses.as_ref(),
            s.ephemeral_container_statuses.as_ref(),
        ]
        .into_iter()
        .flatten()
        .flatten()
        .find(|c| c.name == container)
    });
    let Some(cs) = found else {
        return Err(format!(
            "container \"{container}\" in pod \"{pod_name}\" is not available"
        ));
    };
    let strip = |id: &str| id.split_once("://").map_or(id, |(_, i)| i).to_string();
    let last_terminated = cs
        .last_state
        .as_ref()
        .and_then(|s| s.terminated.as_ref())
        .and_then(|t| t.container_id.as_deref())
        .filter(|id| !id.is_empty());
    let state = cs.state.clone().unwrap_or_default();
    let terminated_message =
        || format!("container \"{container}\" in pod \"{pod_name}\" is terminated");
    if previous {
        return last_terminated.map(strip).ok_or_else(|| {
            format!("previous terminated container \"{container}\" in pod \"{pod_name}\" not found")
        });
    }
    if state.running.is_some() {
        return cs
            .container_id
            .as_deref()
            .filter(|id| !id.is_empty())
            .map(strip)
            .ok_or_else(terminated_message);
    }
    if let Some(t) = &state.terminated {
        return match t.container_id.as_deref().filter(|id| !id.is_empty()) {
            Some(id) => Ok(strip(id)),
            None => last_terminated.map(strip).ok_or_else(terminated_message),
        };
    }
    if cs
        .last_state
        .as_ref()
        .is_some_and(|s| s.terminated.is_some())
    {
        return last_terminated.map(strip).ok_or_else(terminated_message);
    }
    if let Some(w) = &state.waiting {
        let why = match w.reason.as_deref().unwrap_or_default() {
            "ErrImagePull" => "image can't be pulled".to_string(),
            "ImagePullBackOff" => "trying and failing to pull image".to_string(),
            other => other.to_string(),
        };
        return Err(format!(
            "container \"{container}\" in pod \"{pod_name}\" is waiting to start: {why}"
        ));
    }
    Err(format!(
        "container \"{container}\" in pod \"{pod_name}\" is waiting to start - no logs yet"
    ))
}

/// What the client asked for.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LogOptions {
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub tail_lines: Option<u64>,
    pub since: Option<Timestamp>,
    pub limit_bytes: Option<u64>,
}

impl LogOptions {
    /// From the kubelet's `containerLogs` query string, relative to `now`.
    pub fn from_query(query: Option<&str>, now: Timestamp) -> Result<LogOptions, String> {
        let mut o = LogOptions::default();
        for (k, v) in query.map(form_pairs).unwrap_or_default() {
            let flag = || v.is_empty() || v == "true" || v == "1";
            match k.as_str() {
                "follow" => o.follow = flag(),
                "previous" => o.previous = flag(),
                "timestamps" => o.timestamps = flag(),
                "tailLines" => {
                    o.tail_lines = Some(v.parse().map_err(|_| format!("invalid tailLines {v:?}"))?)
                }
                "limitBytes" => {
                    o.limit_bytes =
                        Some(v.parse().map_err(|_| format!("invalid limitBytes {v:?}"))?)
                }
                "sinceSeconds" => {
                    let s: i64 = v
                        .parse()
                        .map_err(|_| format!("invalid sinceSeconds {v:?}"))?;
                    o.since = now.checked_sub(jiff::SignedDuration::from_secs(s)).ok();
                }
                "sinceTime" => {
                    o.since = Some(v.parse().map_err(|_| format!("invalid sinceTime {v:?}"))?)
                }
                _ => {}
            }
        }
        Ok(o)
    }
}

fn form_pairs(q: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(q.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

/// Appends one line as the client sees it.
fn render(out: &mut Vec<u8>, line: &CriLine<'_>, timestamps: bool, at_line_start: bool) {
    if timestamps && at_line_start {
        out.extend_from_slice(line.time_text.as_bytes());
        out.push(b' ');
    }
    out.extend_from_slice(line.content);
    if !line.partial {
        out.push(b'\n');
    }
}

/// The start offset of the last `n` complete log lines (counting a partial line with its
/// continuation as one) of `data`.
pub fn tail_offset(data: &[u8], n: u64) -> usize {
    if n == 0 {
        return data.len();
    }
    let mut count = 0u64;
    let mut end = data.len();
    // Ignore an unterminated last line (still being written).
    if let Some(last_nl) = data.iter().rposition(|b| *b == b'\n') {
        end = last_nl + 1;
    }
    let mut pos = end;
    while pos > 0 {
        let line_end = pos - 1; // the '\n'
        let start = data[..line_end]
            .iter()
            .rposition(|b| *b == b'\n')
            .map_or(0, |i| i + 1);
        let full = parse_cri_line(&data[start..line_end]).is_none_or(|l| !l.partial);
        if full {
            if count == n {
                return pos;
            }
            count += 1;
        }
        pos = start;
    }
    0
}

/// Renders complete lines of `data` with the options; returns the rendered bytes and how
/// many input bytes were consumed (complete lines only).
pub fn render_chunk(data: &[u8], opts: &LogOptions, at_line_start: &mut bool) -> (Vec<u8>, usize) {
    let mut out = Vec::new();
    let mut consumed = 0;
    while let Some(nl) = data[consumed..].iter().position(|b| *b == b'\n') {
        let raw = &data[consumed..consumed + nl];
        consumed += nl + 1;
        let Some(line) = parse_cri_line(raw) else {
            continue;
        };
        if opts.since.is_some_and(|s| line.time < s) {
            continue;
        }
        render(&mut out, &line, opts.timestamps, *at_line_start);
        *at_line_start = !line.partial;
    }
    (out, consumed)
}

/// Whether the container is still running (followed logs end when it stops).
pub type StillRunning =
    std::sync::Arc<dyn Fn() -> futures::future::BoxFuture<'static, bool> + Send + Sync>;

/// Streams a log file into `tx` as upstream's `ReadLogs` does: the tail, then (with
/// `follow`) new lines as they are written until the container stops.
pub async fn stream_file(
    path: PathBuf,
    opts: LogOptions,
    running: StillRunning,
    tx: mpsc::Sender<Bytes>,
) {
    let mut file = match tokio::fs::File::open(&path).await {
        Ok(f) => f,
        Err(e) => {
            tracing::debug!(path = %path.display(), error = %e, "cannot open log file");
            return;
        }
    };
    let mut data = Vec::new();
    if file.read_to_end(&mut data).await.is_err() {
        return;
    }
    let start = opts.tail_lines.map_or(0, |n| tail_offset(&data, n));
    let mut at_line_start = true;
    let mut sent: u64 = 0;
    let limit = opts.limit_bytes.unwrap_or(u64::MAX);
    let (chunk, used) = render_chunk(&data[start..], &opts, &mut at_line_start);
    let mut pending: Vec<u8> = data[start + used..].to_vec();
    let mut offset = data.len() as u64;
    if !send_limited(&tx, chunk, &mut sent, limit).await || !opts.follow {
        return;
    }
    let mut idle_checks = 0u32;
    loop {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if tx.is_closed() {
            return;
        }
        let grown = match tokio::fs::metadata(&path).await {
            Ok(m) if m.len() > offset => true,
            Ok(m) if m.len() < offset => {
                // Rotated or truncated: start over from the beginning of the new file.
                offset = 0;
                pending.clear();
                match tokio::fs::File::open(&path).await {
                    Ok(f) => file = f,
                    Err(_) => return,
                }
                true
            }
            Ok(_) => false,
            Err(_) => return,
        };
        if grown {
            idle_checks = 0;
            if file.seek(std::io::SeekFrom::Start(offset)).await.is_err() {
                return;
            }
            let mut more = Vec::new();
            if file.read_to_end(&mut more).await.is_err() {
                return;
            }
            offset += more.len() as u64;
            pending.extend_from_slice(&more);
            let (chunk, used) = render_chunk(&pending, &opts, &mut at_line_start);
            pending.drain(..used);
            if !send_limited(&tx, chunk, &mut sent, limit).await {
                return;
            }
        } else {
            idle_checks += 1;
            // Every second without new output, see whether the container still runs.
            if idle_checks.is_multiple_of(5) && !(running)().await {
                return;
            }
        }
    }
}

/// Sends `chunk` within the byte limit; false when the stream should end.
async fn send_limited(
    tx: &mpsc::Sender<Bytes>,
    mut chunk: Vec<u8>,
    sent: &mut u64,
    limit: u64,
) -> bool {
    if chunk.is_empty() {
        return *sent < limit;
    }
    let room = limit.saturating_sub(*sent);
    if (chunk.len() as u64) > room {
        chunk.truncate(usize::try_from(room).unwrap_or(usize::MAX));
    }
    *sent += chunk.len() as u64;
    if tx.send(Bytes::from(chunk)).await.is_err() {
        return false;
    }
    *sent < limit
}

/// A log file's path under the pod's log directory: `<dir>/<container>/<attempt>.log`.
pub fn container_log_path(pod_log_dir: &Path, container: &str, attempt: u32) -> PathBuf {
    pod_log_dir.join(container).join(format!("{attempt}.log"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    const LOG: &[u8] = b"2024-01-01T00:00:00.000000001Z stdout F one\n\
2024-01-01T00:00:01.000000000Z stderr F two\n\
2024-01-01T00:00:02.000000000Z stdout P thr\n\
2024-01-01T00:00:02.500000000Z stdout F ee\n\
2024-01-01T00:00:03.000000000Z stdout F four\n";

    #[test]
    fn parses_cri_lines() {
        let l = parse_cri_line(b"2024-01-01T00:00:00.5Z stdout F hello world").unwrap();
        assert_eq!(l.stream, "stdout");
        assert!(!l.partial);
        assert_eq!(l.content, b"hello world");
        assert!(parse_cri_line(b"garbage").is_none());
        let p = parse_cri_line(b"2024-01-01T00:00:00Z stderr P x").unwrap();
        assert!(p.partial);
        let empty = parse_cri_line(b"2024-01-01T00:00:00Z stdout F").unwrap();
        assert_eq!(empty.content, b"");
    }

    #[test]
    fn renders_whole_file_and_partials() {
        let mut start = true;
        let (out, used) = render_chunk(LOG, &LogOptions::default(), &mut start);
        assert_eq!(used, LOG.len());
        assert_eq!(out, b"one\ntwo\nthree\nfour\n");
    }

    #[test]
    fn tail_counts_joined_partials_as_one() {
        let off = tail_offset(LOG, 2);
        let mut start = true;
        let (out, _) = render_chunk(&LOG[off..], &LogOptions::default(), &mut start);
        assert_eq!(out, b"three\nfour\n");
        assert_eq!(tail_offset(LOG, 0), LOG.len());
        assert_eq!(tail_offset(LOG, 100), 0);
    }

    #[test]
    fn since_and_timestamps() {
        let opts = LogOptions {
            since: Some("2024-01-01T00:00:01Z".parse().unwrap()),
            timestamps: true,
            ..Default::default()
        };
        let mut start = true;
        let (out, _) = render_chunk(LOG, &opts, &mut start);
        let text = String::from_utf8(out).unwrap();
        assert!(
            text.starts_with("2024-01-01T00:00:01.000000000Z two\n"),
            "{text}"
        );
        assert!(
            text.contains("2024-01-01T00:00:02.000000000Z three\n"),
            "{text}"
        );
    }

    #[test]
    fn query_options() {
        let now: Timestamp = "2024-01-01T00:01:00Z".parse().unwrap();
        let o = LogOptions::from_query(
            Some("follow=true&tailLines=5&sinceSeconds=30&timestamps=true&limitBytes=10"),
            now,
        )
        .unwrap();
        assert!(o.follow && o.timestamps);
        assert_eq!(o.tail_lines, Some(5));
        assert_eq!(o.limit_bytes, Some(10));
        assert_eq!(o.since, Some("2024-01-01T00:00:30Z".parse().unwrap()));
        let o = LogOptions::from_query(Some("sinceTime=2024-01-01T00%3A00%3A05Z"), now).unwrap();
        assert_eq!(o.since, Some("2024-01-01T00:00:05Z".parse().unwrap()));
        assert!(LogOptions::from_query(Some("tailLines=x"), now).is_err());
    }

    #[test]
    fn log_container_chosen_from_status_as_upstream() {
        let pod = |statuses: serde_json::Value| -> k8s_openapi::api::core::v1::Pod {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "p"},
                "status": {"containerStatuses": statuses},
            }))
            .unwrap()
        };
        let base = |state: serde_json::Value, last: serde_json::Value| {
            serde_json::json!([{"name": "c", "image": "i", "imageID": "", "ready": false,
                "restartCount": 1, "containerID": "containerd://cur", "state": state, "lastState": last}])
        };
        let running = pod(base(
            serde_json::json!({"running": {}}),
            serde_json::json!({"terminated": {"exitCode": 1, "containerID": "containerd://old"}}),
        ));
        assert_eq!(container_for_logs(&running, "c", false).unwrap(), "cur");
        assert_eq!(container_for_logs(&running, "c", true).unwrap(), "old");
        assert_eq!(
            container_for_logs(&running, "x", false).unwrap_err(),
            "container \"x\" in pod \"p\" is not available"
        );
        let fresh = pod(base(
            serde_json::json!({"running": {}}),
            serde_json::json!({}),
        ));
        assert_eq!(
            container_for_logs(&fresh, "c", true).unwrap_err(),
            "previous terminated container \"c\" in pod \"p\" not found"
        );
        // Crash-looping: waiting with the last run's log.
        let backoff = pod(base(
            serde_json::json!({"waiting": {"reason": "CrashLoopBackOff"}}),
            serde_json::json!({"terminated": {"exitCode": 1, "containerID": "containerd://old"}}),
        ));
        assert_eq!(container_for_logs(&backoff, "c", false).unwrap(), "old");
        let pulling = pod(base(
            serde_json::json!({"waiting": {"reason": "ImagePullBackOff"}}),
            serde_json::json!({}),
        ));
        assert_eq!(
            container_for_logs(&pulling, "c", false).unwrap_err(),
            "container \"c\" in pod \"p\" is waiting to start: trying and failing to pull image"
        );
        let creating = pod(base(
            serde_json::json!({"waiting": {"reason": "ContainerCreating"}}),
            serde_json::json!({}),
        ));
        assert_eq!(
            container_for_logs(&creating, "c", false).unwrap_err(),
            "container \"c\" in pod \"p\" is waiting to start: ContainerCreating"
        );
    }

    #[tokio::test]
    async fn streams_with_limit_and_follow_end() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("0.log");
        std::fs::write(&path, LOG).unwrap();
        let (tx, mut rx) = mpsc::channel(16);
        let opts = LogOptions {
            limit_bytes: Some(6),
            ..Default::default()
        };
        let running: StillRunning = std::sync::Arc::new(|| Box::pin(async { false }));
        stream_file(path.clone(), opts, running.clone(), tx).await;
        let mut got = Vec::new();
        while let Some(b) = rx.recv().await {
            got.extend_from_slice(&b);
        }
        assert_eq!(got, b"one\ntw");

        // Following a stopped container: the existing lines, then the end.
        let (tx, mut rx) = mpsc::channel(16);
        let opts = LogOptions {
            follow: true,
            tail_lines: Some(1),
            ..Default::default()
        };
        tokio::time::timeout(
            Duration::from_secs(10),
            stream_file(path, opts, running, tx),
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        while let Some(b) = rx.recv().await {
            got.extend_from_slice(&b);
        }
        assert_eq!(got, b"four\n");
    }
}
