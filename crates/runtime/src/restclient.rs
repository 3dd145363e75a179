//! client-go's request metrics (`k8s.io/component-base/metrics/prometheus/restclient`),
//! recorded by a tower layer ([`RestClientLayer`]) under every client a component makes,
//! over HTTPS or in-process:
//!
//! - `rest_client_requests_total{code,host,method}`: one per request with its final HTTP
//!   status, `<error>` when no response came (client-go's `sanitize`);
//! - `rest_client_request_duration_seconds{host,verb}`: from the call to the end of the
//!   response body (client-go's `request()` measures until the body is read);
//! - `rest_client_request_size_bytes` and `rest_client_response_size_bytes{host,verb}`.
//!
//! As client-go's `Watch`, a watch counts its result only: its body is a stream whose
//! length and duration say nothing about the server. `verb` is the HTTP method, as
//! client-go's `Request.verb`; `host` is the server's `host:port`.
//!
//! As upstream's legacy registry, the series are process-wide: every client of the process
//! counts into them (`rkube server`'s in-process controller manager and scheduler share
//! them, as k3s's do) and [`render`] prints them all.

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, LazyLock, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Instant;

use bytes::Bytes;
use hyper::body::{Body, Frame, SizeHint};

use crate::metrics::{Histogram, header, label_value};

/// client-go's latency buckets (seconds).
const LATENCY_BUCKETS: [f64; 12] = [
    0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
];

/// client-go's size buckets: 64 bytes to 16 MiB.
const SIZE_BUCKETS: [f64; 11] = [
    64.0, 256.0, 512.0, 1024.0, 4096.0, 16384.0, 65536.0, 262144.0, 1048576.0, 4194304.0,
    16777216.0,
];

/// `(host, verb)`: the labels of the histograms, in the text format's order.
type VerbKey = (Arc<str>, &'static str);

/// The process's series.
#[derive(Default)]
struct Series {
    /// `(code, host, method)` → requests; `None` is `<error>`.
    results: BTreeMap<(Option<u16>, Arc<str>, &'static str), u64>,
    latency: BTreeMap<VerbKey, Histogram>,
    request_size: BTreeMap<VerbKey, Histogram>,
    response_size: BTreeMap<VerbKey, Histogram>,
}

static SERIES: LazyLock<Mutex<Series>> = LazyLock::new(Mutex::default);

fn series() -> MutexGuard<'static, Series> {
    SERIES
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The method as a label: the standard ones by name, anything else as `other` (a label
/// must not take unbounded values).
fn verb(method: &http::Method) -> &'static str {
    match *method {
        http::Method::GET => "GET",
        http::Method::POST => "POST",
        http::Method::PUT => "PUT",
        http::Method::PATCH => "PATCH",
        http::Method::DELETE => "DELETE",
        http::Method::HEAD => "HEAD",
        http::Method::OPTIONS => "OPTIONS",
        _ => "other",
    }
}

/// Whether the request is a watch (`?watch=true|1`, or the legacy `/watch/` paths).
fn is_watch(uri: &http::Uri) -> bool {
    let query = uri.query().unwrap_or_default();
    form_urlencoded::parse(query.as_bytes()).any(|(k, v)| k == "watch" && (v == "true" || v == "1"))
        || uri.path().contains("/watch/")
}

/// One request's labels.
#[derive(Clone)]
struct Labels {
    host: Arc<str>,
    verb: &'static str,
}

impl Labels {
    fn key(&self) -> VerbKey {
        (Arc::clone(&self.host), self.verb)
    }

    fn result(&self, code: Option<u16>) {
        *series()
            .results
            .entry((code, Arc::clone(&self.host), self.verb))
            .or_default() += 1;
    }

    fn request_size(&self, bytes: u64) {
        series()
            .request_size
            .entry(self.key())
            .or_default()
            .observe(&SIZE_BUCKETS, bytes as f64);
    }

    /// The end of a request that is not a watch: its duration and response size.
    fn finished(&self, started: Instant, response_bytes: Option<u64>) {
        let mut s = series();
        s.latency
            .entry(self.key())
            .or_default()
            .observe(&LATENCY_BUCKETS, started.elapsed().as_secs_f64());
        if let Some(bytes) = response_bytes {
            s.response_size
                .entry(self.key())
                .or_default()
                .observe(&SIZE_BUCKETS, bytes as f64);
        }
    }
}

/// Records the metrics of the requests of one client, to the server at `host`
/// (`host:port`, as client-go labels them).
#[derive(Clone, Debug)]
pub struct RestClientLayer {
    host: Arc<str>,
}

impl RestClientLayer {
    pub fn new(host: &str) -> RestClientLayer {
        RestClientLayer {
            host: Arc::from(if host.is_empty() { "none" } else { host }),
        }
    }

    /// The layer for the server at `uri` (its `host:port`; the scheme's port when none).
    pub fn for_uri(uri: &http::Uri) -> RestClientLayer {
        let host = uri.host().unwrap_or_default();
        // An IPv6 host keeps its brackets.
        match uri.port_u16().or(match uri.scheme_str() {
            Some("https") => Some(443),
            Some("http") => Some(80),
            _ => None,
        }) {
            Some(port) if !host.is_empty() => Self::new(&format!("{host}:{port}")),
            _ => Self::new(host),
        }
    }
}

impl RestClientLayer {
    /// `inner` with its requests recorded (the [`tower::Layer`], for callers without tower).
    pub fn over<S>(&self, inner: S) -> RestClient<S> {
        tower::Layer::layer(self, inner)
    }
}

impl<S> tower::Layer<S> for RestClientLayer {
    type Service = RestClient<S>;

    fn layer(&self, inner: S) -> RestClient<S> {
        RestClient {
            inner,
            host: Arc::clone(&self.host),
        }
    }
}

/// The service [`RestClientLayer`] makes.
#[derive(Clone, Debug)]
pub struct RestClient<S> {
    inner: S,
    host: Arc<str>,
}

type Answer<B, E> =
    Pin<Box<dyn Future<Output = Result<http::Response<MeasuredBody<B>>, E>> + Send>>;

impl<S, ReqB, ResB> tower::Service<http::Request<ReqB>> for RestClient<S>
where
    S: tower::Service<http::Request<ReqB>, Response = http::Response<ResB>>,
    S::Future: Send + 'static,
    ReqB: Body,
{
    type Response = http::Response<MeasuredBody<ResB>>;
    type Error = S::Error;
    type Future = Answer<ResB, S::Error>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: http::Request<ReqB>) -> Self::Future {
        let labels = Labels {
            host: Arc::clone(&self.host),
            verb: verb(req.method()),
        };
        let watch = is_watch(req.uri());
        if !watch && let Some(bytes) = req.body().size_hint().exact() {
            labels.request_size(bytes);
        }
        let started = Instant::now();
        let answer = self.inner.call(req);
        Box::pin(async move {
            match answer.await {
                Ok(response) => {
                    labels.result(Some(response.status().as_u16()));
                    let pending = (!watch).then_some(Pending {
                        labels,
                        started,
                        bytes: 0,
                    });
                    Ok(response.map(|inner| MeasuredBody { inner, pending }))
                }
                Err(e) => {
                    labels.result(None);
                    if !watch {
                        labels.finished(started, None);
                    }
                    Err(e)
                }
            }
        })
    }
}

/// A request whose body is still being read.
struct Pending {
    labels: Labels,
    started: Instant,
    bytes: u64,
}

/// A response body that records its request's duration and size once read (or dropped
/// unread, as client-go's deferred observation).
pub struct MeasuredBody<B> {
    inner: B,
    pending: Option<Pending>,
}

impl<B> MeasuredBody<B> {
    fn finish(&mut self, complete: bool) {
        if let Some(p) = self.pending.take() {
            p.labels.finished(p.started, complete.then_some(p.bytes));
        }
    }
}

impl<B> Drop for MeasuredBody<B> {
    fn drop(&mut self) {
        self.finish(false);
    }
}

impl<B> Body for MeasuredBody<B>
where
    B: Body<Data = Bytes> + Unpin,
{
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(p), Some(data)) = (self.pending.as_mut(), frame.data_ref()) {
                    p.bytes += data.len() as u64;
                }
            }
            Poll::Ready(None) => self.finish(true),
            Poll::Ready(Some(Err(_))) => self.finish(false),
            Poll::Pending => {}
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The series in the Prometheus text format.
pub fn render() -> String {
    let s = series();
    let mut out = String::new();
    let verb_labels =
        |(host, verb): &VerbKey| format!("host=\"{}\",verb=\"{verb}\"", label_value(host));
    let histograms = [
        (
            "rest_client_request_duration_seconds",
            "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
            &s.latency,
            &LATENCY_BUCKETS[..],
        ),
        (
            "rest_client_request_size_bytes",
            "[ALPHA] Request size in bytes. Broken down by verb and host.",
            &s.request_size,
            &SIZE_BUCKETS[..],
        ),
        (
            "rest_client_response_size_bytes",
            "[ALPHA] Response size in bytes. Broken down by verb and host.",
            &s.response_size,
            &SIZE_BUCKETS[..],
        ),
    ];
    for (name, help, series, buckets) in histograms {
        if series.is_empty() {
            continue;
        }
        header(&mut out, name, "histogram", help);
        for (key, h) in series {
            h.render(&mut out, name, &verb_labels(key), buckets);
        }
    }
    if !s.results.is_empty() {
        header(
            &mut out,
            "rest_client_requests_total",
            "counter",
            "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
        );
        // The text format orders a metric's series by their label values.
        let mut lines: Vec<(String, u64)> = s
            .results
            .iter()
            .map(|((code, host, method), n)| {
                let code = code.map_or_else(|| "<error>".to_string(), |c| c.to_string());
                (
                    format!(
                        "rest_client_requests_total{{code=\"{code}\",host=\"{}\",method=\"{method}\"}}",
                        label_value(host)
                    ),
                    *n,
                )
            })
            .collect();
        lines.sort();
        for (line, n) in lines {
            out.push_str(&format!("{line} {n}\n"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use http_body_util::{BodyExt as _, Full};
    use tower::{Service as _, ServiceExt as _};

    type Answer = Result<http::Response<Full<Bytes>>, &'static str>;

    /// A server answering `status` with `body`, or failing when `status` is 0.
    fn server(
        status: u16,
        body: &'static str,
    ) -> impl tower::Service<
        http::Request<Full<Bytes>>,
        Response = http::Response<Full<Bytes>>,
        Error = &'static str,
        Future = std::future::Ready<Answer>,
    > + Clone {
        tower::service_fn(move |_req: http::Request<Full<Bytes>>| {
            std::future::ready(if status == 0 {
                Err("connection refused")
            } else {
                Ok(http::Response::builder()
                    .status(status)
                    .body(Full::new(Bytes::from_static(body.as_bytes())))
                    .unwrap())
            })
        })
    }

    fn request(method: &str, uri: &str, body: &'static str) -> http::Request<Full<Bytes>> {
        http::Request::builder()
            .method(method)
            .uri(uri)
            .body(Full::new(Bytes::from_static(body.as_bytes())))
            .unwrap()
    }

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[tokio::test]
    async fn requests_are_counted_timed_and_sized_as_client_gos() {
        // A host of its own: the series are process-wide and other tests count too.
        let layer = RestClientLayer::for_uri(&"https://10.9.8.7:6443".parse().unwrap());
        let mut ok = tower::Layer::layer(&layer, server(201, "0123456789"));
        let mut refused = tower::Layer::layer(&layer, server(0, ""));
        let mut missing = tower::Layer::layer(&layer, server(404, "{}"));

        let answer = ok
            .ready()
            .await
            .unwrap()
            .call(request(
                "POST",
                "/api/v1/namespaces/default/pods",
                "{\"a\":1}",
            ))
            .await
            .unwrap();
        // Not finished until the body is read.
        assert!(!render().contains(
            "rest_client_request_duration_seconds_count{host=\"10.9.8.7:6443\",verb=\"POST\"}"
        ));
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(body.len(), 10);
        assert!(
            refused
                .ready()
                .await
                .unwrap()
                .call(request("GET", "/api/v1/pods", ""))
                .await
                .is_err()
        );
        // A watch: its result only.
        let watch = missing
            .ready()
            .await
            .unwrap()
            .call(request(
                "GET",
                "/api/v1/pods?watch=true&resourceVersion=5",
                "",
            ))
            .await
            .unwrap();
        drop(watch);
        // A body dropped unread still times its request.
        drop(
            missing
                .ready()
                .await
                .unwrap()
                .call(request("DELETE", "/api/v1/namespaces/default/pods/a", ""))
                .await
                .unwrap(),
        );

        let text = render();
        let host = "host=\"10.9.8.7:6443\"";
        for (series, value) in [
            (
                format!("rest_client_requests_total{{code=\"201\",{host},method=\"POST\"}}"),
                "1",
            ),
            (
                format!("rest_client_requests_total{{code=\"404\",{host},method=\"GET\"}}"),
                "1",
            ),
            (
                format!("rest_client_requests_total{{code=\"404\",{host},method=\"DELETE\"}}"),
                "1",
            ),
            (
                format!("rest_client_requests_total{{code=\"<error>\",{host},method=\"GET\"}}"),
                "1",
            ),
            (
                format!("rest_client_request_duration_seconds_count{{{host},verb=\"POST\"}}"),
                "1",
            ),
            (
                format!("rest_client_request_duration_seconds_count{{{host},verb=\"DELETE\"}}"),
                "1",
            ),
            // The refused GET is timed; the watch is not.
            (
                format!("rest_client_request_duration_seconds_count{{{host},verb=\"GET\"}}"),
                "1",
            ),
            (
                format!("rest_client_request_size_bytes_sum{{{host},verb=\"POST\"}}"),
                "7",
            ),
            (
                format!("rest_client_response_size_bytes_sum{{{host},verb=\"POST\"}}"),
                "10",
            ),
            (
                format!("rest_client_response_size_bytes_bucket{{{host},verb=\"POST\",le=\"64\"}}"),
                "1",
            ),
        ] {
            let found = line(&text, &format!("{series} "));
            assert_eq!(found, Some(format!("{series} {value}").as_str()), "{text}");
        }
        // Neither the refused GET nor the unread DELETE has a response size.
        assert!(
            line(
                &text,
                &format!("rest_client_response_size_bytes_count{{{host},verb=\"GET\"}}")
            )
            .is_none()
        );
        assert!(
            line(
                &text,
                &format!("rest_client_response_size_bytes_count{{{host},verb=\"DELETE\"}}")
            )
            .is_none()
        );
        for name in [
            "rest_client_requests_total counter",
            "rest_client_request_duration_seconds histogram",
            "rest_client_request_size_bytes histogram",
            "rest_client_response_size_bytes histogram",
        ] {
            assert!(text.contains(&format!("# TYPE {name}\n")), "{name}");
        }
    }

    #[test]
    fn hosts_and_watches() {
        let host = |uri: &str| {
            RestClientLayer::for_uri(&uri.parse().unwrap())
                .host
                .to_string()
        };
        assert_eq!(host("https://127.0.0.1:6443"), "127.0.0.1:6443");
        assert_eq!(host("https://api.example"), "api.example:443");
        assert_eq!(host("https://[::1]:6443"), "[::1]:6443");
        assert_eq!(host("/relative"), "none");
        let watch = |uri: &str| is_watch(&uri.parse().unwrap());
        assert!(watch("/api/v1/pods?watch=true"));
        assert!(watch("/api/v1/pods?resourceVersion=1&watch=1"));
        assert!(watch("/api/v1/watch/pods"));
        assert!(!watch("/api/v1/pods?watch=false"));
        assert!(!watch("/api/v1/namespaces/watchers/pods"));
    }
}
