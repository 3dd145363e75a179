//! The connect subresources, upstream's `rest.Connecter`s: `pods/log`, `pods/exec`,
//! `pods/attach`, `pods/portforward` and `nodes/proxy` are forwarded to the kubelet of the
//! pod's node (its InternalIP and `status.daemonEndpoints.kubeletEndpoint.Port`), over
//! TLS with the API server's kubelet client certificate; `pods/proxy` goes to the pod's
//! IP. Upgrades (SPDY, WebSocket with the legacy channel protocols) are spliced through
//! [`httpproxy`]; logs stream, and a kubelet's error answer to them becomes a `Status`.
//!
//! kubectl ≥ 1.30 speaks WebSocket first, which the runtime's streaming server does not
//! (it knows SPDY and the channel protocols up to v4), so the API server answers those
//! upgrades itself, as upstream does: exec/attach with `v5.channel.k8s.io` are
//! translated to SPDY `v4.channel.k8s.io` towards the kubelet
//! ([`httpproxy::translate`], upstream's `StreamTranslatorProxy`), and port-forward with
//! `SPDY/3.1+portforward.k8s.io` unwraps the SPDY tunnelled in WebSocket messages
//! ([`httpproxy::ws::tunnel`], upstream's `TunnelingHandler`). kubectl 1.27–1.29 use
//! SPDY, spliced end to end.
//!
//! The checks before forwarding are upstream's (`pkg/registry/core/pod/strategy.go`
//! `LogLocation`/`streamLocation`, `pkg/api/pod/util.go` container validation), with the
//! same messages.

use std::sync::Arc;
use std::time::Duration;

use api::ApiError;
use api::status::{FieldError, Reason};
use http::{Request, Response, StatusCode, Uri};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::Server;
use crate::http::{Body, Query, ReqBody};
use crate::registry::Resource;

/// How long dialing a kubelet may take.
const DIAL_TIMEOUT: Duration = Duration::from_secs(30);

/// Whether `sub` of `resource` is a connect subresource served here.
pub(crate) fn is_connect(resource: &str, sub: &str) -> bool {
    matches!(
        (resource, sub),
        ("pods", "log" | "exec" | "attach" | "portforward" | "proxy") | ("nodes", "proxy")
    )
}

fn bad_request(message: impl Into<String>) -> ApiError {
    ApiError::new(400, Reason::BadRequest, message)
}

/// Forwards a connect request.
pub(crate) async fn connect(
    server: &Arc<Server>,
    r: &Resource,
    ns: Option<&str>,
    name: &str,
    sub: &str,
    req: Request<ReqBody>,
    query: &Query,
) -> Result<Response<Body>, ApiError> {
    let obj = server.registry.get(r, ns, name).await?;
    let resource = r.info.plural.as_str();
    if resource == "nodes" {
        let (host, port) = kubelet_address(&obj, name)?;
        let rest = proxy_rest(req.uri(), "proxy");
        let target = with_query(&rest, req.uri().query());
        return forward(server, &host, port, true, target, req).await;
    }
    let namespace = ns.unwrap_or_default();
    let node = obj["spec"]["nodeName"].as_str().unwrap_or_default();
    if sub == "proxy" {
        return pod_proxy(server, &obj, name, req).await;
    }
    if node.is_empty() {
        return Err(bad_request(format!(
            "pod {name} does not have a host assigned"
        )));
    }
    let node_obj = server
        .registry
        .lookup("", "v1", "nodes")
        .ok_or_else(ApiError::path_not_found)?;
    let node_obj = match server.registry.get(&node_obj, None, node).await {
        Ok(n) => n,
        Err(e) if e.code == 404 => {
            return Err(bad_request(format!(
                "node {node} of pod {name} is not found"
            )));
        }
        Err(e) => return Err(e),
    };
    let (host, port) = kubelet_address(&node_obj, node)?;
    let target = match sub {
        "log" => {
            let container = pick_container(&obj, name, query.get("container"), true)?;
            let params = log_params(query)?;
            let mut path = format!("/containerLogs/{namespace}/{name}/{container}");
            if !params.is_empty() {
                path.push('?');
                path.push_str(&params);
            }
            path
        }
        "exec" | "attach" => {
            let phase = obj["status"]["phase"].as_str().unwrap_or_default();
            if phase == "Succeeded" || phase == "Failed" {
                return Err(bad_request(format!(
                    "cannot {sub} into a container in a completed pod; current phase is {phase}"
                )));
            }
            let container = pick_container(&obj, name, query.get("container"), false)?;
            let path = format!("/{sub}/{namespace}/{name}/{container}");
            let target = format!("{path}?{}", stream_params(query, sub == "exec")?);
            if httpproxy::ws::is_websocket(req.headers())
                && httpproxy::ws::subprotocols(req.headers())
                    .iter()
                    .any(|p| p == httpproxy::translate::V5)
            {
                let streams = httpproxy::translate::Streams {
                    stdin: query.flag("stdin")?,
                    stdout: query.flag("stdout")?,
                    stderr: query.flag("stderr")?,
                    tty: query.flag("tty")?,
                };
                return translate_v5(server, &host, port, target, streams, req).await;
            }
            target
        }
        "portforward" => {
            let path = format!("/portForward/{namespace}/{name}");
            let target = with_query(&path, req.uri().query());
            if httpproxy::ws::is_websocket(req.headers()) {
                let spdy = httpproxy::ws::tunnel_protocols(req.headers());
                if !spdy.is_empty() {
                    return tunnel_spdy(server, &host, port, target, &spdy, req).await;
                }
            }
            target
        }
        _ => return Err(ApiError::path_not_found()),
    };
    let resp = forward(server, &host, port, true, target, req).await?;
    if sub == "log" && !resp.status().is_success() {
        return Err(kubelet_error(resp).await);
    }
    Ok(resp)
}

/// A kubelet's error answer to `containerLogs` as upstream's
/// `GenericHttpResponseChecker`: 400 → BadRequest and 500 → InternalError with the
/// kubelet's text as the message, anything else with its code.
async fn kubelet_error(resp: Response<Body>) -> ApiError {
    let status = resp.status();
    let bytes =
        match tokio::time::timeout(Duration::from_secs(10), resp.into_body().collect()).await {
            Ok(Ok(c)) => c.to_bytes(),
            _ => Default::default(),
        };
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX_ERROR_BODY)])
        .trim()
        .to_string();
    match status.as_u16() {
        400 => bad_request(text),
        500 => ApiError::internal(text),
        404 => ApiError::new(404, Reason::NotFound, text),
        401 => ApiError::new(401, Reason::Unauthorized, text),
        403 => ApiError::new(403, Reason::Forbidden, text),
        code => ApiError::new(code, Reason::InternalError, text),
    }
}

/// How much of a kubelet's error answer becomes the message (upstream's `maxReadLength`).
const MAX_ERROR_BODY: usize = 50_000;

/// The kubelet's side of a WebSocket request the API server answers itself: the
/// kubelet switched to SPDY (both upgrades still to be awaited), or its refusal.
enum KubeletUpgrade {
    Switched {
        client: hyper::upgrade::OnUpgrade,
        backend: hyper::upgrade::OnUpgrade,
        /// The protocol the kubelet chose (`X-Stream-Protocol-Version`).
        chosen: Option<String>,
        /// The client's `Sec-WebSocket-Key`.
        key: String,
    },
    Refused(Response<Body>),
}

/// Asks the kubelet to switch `target` to SPDY with `protocols` in place of the
/// client's WebSocket upgrade (upstream's `createSPDYRequest`: the WebSocket headers
/// dropped, `POST`, `Upgrade: SPDY/3.1`, one `X-Stream-Protocol-Version` per protocol).
async fn spdy_to_kubelet(
    server: &Arc<Server>,
    host: &str,
    port: u16,
    target: String,
    protocols: &[String],
    mut req: Request<ReqBody>,
) -> Result<KubeletUpgrade, ApiError> {
    let key = req
        .headers()
        .get(http::header::SEC_WEBSOCKET_KEY)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
        .ok_or_else(|| bad_request("unable to upgrade: missing Sec-WebSocket-Key"))?;
    let tls = server.kubelet_tls.as_ref().ok_or_else(|| {
        ApiError::new(
            500,
            Reason::InternalError,
            "the API server has no kubelet client identity",
        )
    })?;
    let io = httpproxy::dial(host, port, Some(tls), DIAL_TIMEOUT)
        .await
        .map_err(|e| unavailable(&e.to_string()))?;
    let client = hyper::upgrade::on(&mut req);
    let mut headers = httpproxy::forwarded_headers(req.headers(), false);
    for h in [
        http::header::SEC_WEBSOCKET_PROTOCOL,
        http::header::SEC_WEBSOCKET_KEY,
        http::header::SEC_WEBSOCKET_VERSION,
        http::header::SEC_WEBSOCKET_EXTENSIONS,
        http::header::CONTENT_LENGTH,
    ] {
        headers.remove(h);
    }
    headers.remove("x-stream-protocol-version");
    let mut builder = Request::builder().method("POST").uri(target);
    for (k, v) in headers.iter() {
        builder = builder.header(k, v);
    }
    for p in protocols {
        builder = builder.header("X-Stream-Protocol-Version", p.as_str());
    }
    let out = builder
        .header(http::header::HOST, authority(host, port))
        .header(http::header::CONNECTION, "Upgrade")
        .header(http::header::UPGRADE, "SPDY/3.1")
        .body(httpproxy::empty())
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let mut resp = httpproxy::roundtrip(io, out, None)
        .await
        .map_err(|e| unavailable(&e.to_string()))?;
    if resp.status() != StatusCode::SWITCHING_PROTOCOLS {
        let (parts, body) = resp.into_parts();
        let body = httpproxy::streaming_body(body).boxed_unsync();
        return Ok(KubeletUpgrade::Refused(Response::from_parts(parts, body)));
    }
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_ascii_lowercase)
            .unwrap_or_default()
    };
    if !header("connection").contains("upgrade") || !header("upgrade").contains("spdy/3.1") {
        return Err(ApiError::internal(
            "unable to upgrade: missing upgrade headers in response",
        ));
    }
    let chosen = resp
        .headers()
        .get("x-stream-protocol-version")
        .and_then(|v| v.to_str().ok())
        .map(|p| p.trim().to_string())
        .filter(|p| !p.is_empty());
    let backend = hyper::upgrade::on(&mut resp);
    Ok(KubeletUpgrade::Switched {
        client,
        backend,
        chosen,
        key,
    })
}

/// The `101` completing the client's WebSocket handshake with `protocol`.
fn websocket_accepted(key: &str, protocol: Option<&str>) -> Result<Response<Body>, ApiError> {
    let mut answer = Response::builder()
        .status(StatusCode::SWITCHING_PROTOCOLS)
        .header(http::header::CONNECTION, "Upgrade")
        .header(http::header::UPGRADE, "websocket")
        .header(
            http::header::SEC_WEBSOCKET_ACCEPT,
            httpproxy::ws::accept_key(key),
        );
    if let Some(p) = protocol {
        answer = answer.header(http::header::SEC_WEBSOCKET_PROTOCOL, p);
    }
    answer
        .body(crate::http::empty())
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// `kubectl port-forward` ≥ 1.30: SPDY tunnelled in WebSocket binary messages
/// (subprotocol `SPDY/3.1+portforward.k8s.io`), as upstream's `TunnelingHandler`. The
/// kubelet is asked for a plain SPDY upgrade with the tunnelled protocols; on its `101`
/// the client gets the WebSocket handshake naming the protocol the kubelet chose, and
/// [`httpproxy::ws::tunnel`] moves the bytes; any other answer is passed through.
async fn tunnel_spdy(
    server: &Arc<Server>,
    host: &str,
    port: u16,
    target: String,
    spdy: &[String],
    req: Request<ReqBody>,
) -> Result<Response<Body>, ApiError> {
    let (client, backend, chosen, key) =
        match spdy_to_kubelet(server, host, port, target, spdy, req).await? {
            KubeletUpgrade::Refused(r) => return Ok(r),
            KubeletUpgrade::Switched {
                client,
                backend,
                chosen,
                key,
            } => (client, backend, chosen, key),
        };
    tokio::spawn(async move {
        match futures::future::try_join(client, backend).await {
            Ok((client, backend)) => {
                httpproxy::ws::tunnel(TokioIo::new(client), TokioIo::new(backend)).await;
            }
            Err(e) => tracing::debug!(error = %e, "port-forward tunnel upgrade failed"),
        }
    });
    let protocol = chosen.map(|p| format!("{}{p}", httpproxy::ws::SPDY_TUNNEL_PREFIX));
    websocket_accepted(&key, protocol.as_deref())
}

/// `kubectl exec|attach` ≥ 1.30 (`v5.channel.k8s.io`), as upstream's
/// `StreamTranslatorProxy`: SPDY `v4.channel.k8s.io` towards the kubelet (which splices
/// it to the runtime), [`httpproxy::translate`] between the two. A kubelet refusing the
/// upgrade is passed through (kubectl then falls back to SPDY and sees the same error).
async fn translate_v5(
    server: &Arc<Server>,
    host: &str,
    port: u16,
    target: String,
    streams: httpproxy::translate::Streams,
    req: Request<ReqBody>,
) -> Result<Response<Body>, ApiError> {
    let v4 = [httpproxy::translate::V4.to_string()];
    let (client, backend, key) = match spdy_to_kubelet(server, host, port, target, &v4, req).await?
    {
        KubeletUpgrade::Refused(r) => return Ok(r),
        KubeletUpgrade::Switched {
            client,
            backend,
            key,
            ..
        } => (client, backend, key),
    };
    tokio::spawn(async move {
        match futures::future::try_join(client, backend).await {
            Ok((client, backend)) => {
                httpproxy::translate::run(TokioIo::new(client), TokioIo::new(backend), streams)
                    .await;
            }
            Err(e) => tracing::debug!(error = %e, "exec translation upgrade failed"),
        }
    });
    websocket_accepted(&key, Some(httpproxy::translate::V5))
}

fn authority(host: &str, port: u16) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// `/api/v1/pods/<ns>/<name>/proxy[/rest]`: the pod's IP, port from `name:port` or
/// `scheme:name:port`.
async fn pod_proxy(
    server: &Arc<Server>,
    pod: &Value,
    name_with_port: &str,
    req: Request<ReqBody>,
) -> Result<Response<Body>, ApiError> {
    let ip = pod["status"]["podIP"].as_str().unwrap_or_default();
    if ip.is_empty() {
        return Err(ApiError::new(
            503,
            Reason::ServiceUnavailable,
            format!("address not allowed: pod {} has no IP", pod_name(pod)),
        ));
    }
    let port = match name_with_port.rsplit_once(':') {
        Some((_, p)) => p
            .parse::<u16>()
            .map_err(|_| bad_request(format!("invalid port {p:?}")))?,
        None => 80,
    };
    let rest = proxy_rest(req.uri(), "proxy");
    let target = with_query(&rest, req.uri().query());
    forward(server, ip, port, false, target, req).await
}

fn pod_name(pod: &Value) -> &str {
    pod["metadata"]["name"].as_str().unwrap_or_default()
}

/// The part of the path after `/<sub>` (at least `/`).
fn proxy_rest(uri: &Uri, sub: &str) -> String {
    let path = uri.path();
    let marker = format!("/{sub}");
    match path.find(&format!("{marker}/")) {
        Some(i) => path[i + marker.len()..].to_string(),
        None => "/".to_string(),
    }
}

fn with_query(path: &str, query: Option<&str>) -> String {
    match query {
        Some(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path.to_string(),
    }
}

/// The kubelet's address: the node's InternalIP (then Hostname, ExternalIP) and its
/// daemon endpoint port.
fn kubelet_address(node: &Value, name: &str) -> Result<(String, u16), ApiError> {
    let addresses = node["status"]["addresses"].as_array();
    let pick = |ty: &str| {
        addresses.and_then(|a| {
            a.iter()
                .find(|x| x["type"] == ty)
                .and_then(|x| x["address"].as_str())
                .map(str::to_string)
        })
    };
    let host = pick("InternalIP")
        .or_else(|| pick("Hostname"))
        .or_else(|| pick("ExternalIP"))
        .ok_or_else(|| {
            ApiError::new(
                500,
                Reason::InternalError,
                format!("no preferred addresses found; known addresses: [] for node {name}"),
            )
        })?;
    let port = node["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]
        .as_u64()
        .and_then(|p| u16::try_from(p).ok())
        .filter(|p| *p > 0)
        .unwrap_or(10250);
    Ok((host, port))
}

/// Upstream's container choice for a pod's log/exec/attach: the named container (app,
/// init or ephemeral), or the only one.
fn pick_container(
    pod: &Value,
    pod_name: &str,
    named: Option<&str>,
    for_logs: bool,
) -> Result<String, ApiError> {
    let names = |field: &str| -> Vec<String> {
        pod["spec"][field]
            .as_array()
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c["name"].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = names("containers");
    let init = names("initContainers");
    let ephemeral = names("ephemeralContainers");
    match named.filter(|n| !n.is_empty()) {
        Some(n) => {
            if containers
                .iter()
                .chain(&init)
                .chain(&ephemeral)
                .any(|c| c == n)
            {
                Ok(n.to_string())
            } else {
                Err(bad_request(format!(
                    "container {n} is not valid for pod {pod_name}"
                )))
            }
        }
        None if containers.len() == 1 => Ok(containers[0].clone()),
        None => {
            let mut message = format!(
                "a container name must be specified for pod {pod_name}, choose one of: [{}]",
                containers.join(" ")
            );
            if !init.is_empty() {
                message.push_str(&format!(
                    " or one of the init containers: [{}]",
                    init.join(" ")
                ));
            }
            if !ephemeral.is_empty() && for_logs {
                message.push_str(&format!(
                    " or one of the ephemeral containers: [{}]",
                    ephemeral.join(" ")
                ));
            }
            Err(bad_request(message))
        }
    }
}

/// The kubelet's `containerLogs` query from `PodLogOptions`, validated as upstream.
fn log_params(query: &Query) -> Result<String, ApiError> {
    let mut out = form_urlencoded::Serializer::new(String::new());
    let invalid = |field: &str, value: i64, why: &str| {
        ApiError::invalid(
            "",
            "PodLogOptions",
            "",
            &[FieldError::invalid(field, value, why)],
        )
    };
    for flag in ["follow", "previous", "timestamps"] {
        if query.flag(flag)? {
            out.append_pair(flag, "true");
        }
    }
    if let Some(n) = query.int("tailLines")? {
        if n < 0 {
            return Err(invalid(
                "tailLines",
                n,
                "must be greater than or equal to 0",
            ));
        }
        out.append_pair("tailLines", &n.to_string());
    }
    if let Some(n) = query.int("limitBytes")? {
        if n < 1 {
            return Err(invalid("limitBytes", n, "must be greater than 0"));
        }
        out.append_pair("limitBytes", &n.to_string());
    }
    let since_seconds = query.int("sinceSeconds")?;
    let since_time = query.get("sinceTime").filter(|s| !s.is_empty());
    if since_seconds.is_some() && since_time.is_some() {
        return Err(ApiError::invalid(
            "",
            "PodLogOptions",
            "",
            &[FieldError::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )],
        ));
    }
    if let Some(n) = since_seconds {
        if n < 1 {
            return Err(invalid("sinceSeconds", n, "must be greater than 0"));
        }
        out.append_pair("sinceSeconds", &n.to_string());
    }
    if let Some(t) = since_time {
        if t.parse::<jiff::Timestamp>().is_err() {
            return Err(bad_request(format!(
                "parsing time {t:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse"
            )));
        }
        out.append_pair("sinceTime", t);
    }
    Ok(out.finish())
}

/// The kubelet's streaming query from `PodExecOptions`/`PodAttachOptions`, as upstream's
/// `streamParams`: `input`, `output`, `error`, `tty` and each `command`; at least one
/// stream is required.
fn stream_params(query: &Query, exec: bool) -> Result<String, ApiError> {
    let mut out = form_urlencoded::Serializer::new(String::new());
    let (stdin, stdout, stderr, tty) = (
        query.flag("stdin")?,
        query.flag("stdout")?,
        query.flag("stderr")?,
        query.flag("tty")?,
    );
    if !(stdin || stdout || stderr) {
        return Err(bad_request(
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    for (on, key) in [
        (stdin, "input"),
        (stdout, "output"),
        (stderr, "error"),
        (tty, "tty"),
    ] {
        if on {
            out.append_pair(key, "1");
        }
    }
    if exec {
        let commands = query.all("command");
        if commands.is_empty() {
            return Err(ApiError::invalid(
                "",
                "PodExecOptions",
                "",
                &[FieldError::required("command", "")],
            ));
        }
        for c in commands {
            out.append_pair("command", c);
        }
    }
    Ok(out.finish())
}

/// Sends the request to `host:port` (TLS with the kubelet client identity when `tls`)
/// and streams the answer back; an upgrade is spliced.
async fn forward(
    server: &Arc<Server>,
    host: &str,
    port: u16,
    tls: bool,
    target: String,
    mut req: Request<ReqBody>,
) -> Result<Response<Body>, ApiError> {
    let upgrade = httpproxy::is_upgrade(req.headers());
    let tls_config = if tls {
        Some(server.kubelet_tls.as_ref().ok_or_else(|| {
            ApiError::new(
                500,
                Reason::InternalError,
                "the API server has no kubelet client identity",
            )
        })?)
    } else {
        None
    };
    let io = httpproxy::dial(host, port, tls_config, DIAL_TIMEOUT)
        .await
        .map_err(|e| unavailable(&e.to_string()))?;
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let mut builder = Request::builder().method(parts.method.clone()).uri(target);
    for (k, v) in httpproxy::forwarded_headers(&parts.headers, upgrade).iter() {
        builder = builder.header(k, v);
    }
    builder = builder.header(http::header::HOST, authority(host, port));
    let out = builder
        .body(body.map_err(|e| -> Box<dyn std::error::Error + Send + Sync> { Box::new(e) }))
        .map_err(|e| ApiError::internal(e.to_string()))?;
    let resp = httpproxy::roundtrip(io, out, client_upgrade)
        .await
        .map_err(|e| unavailable(&e.to_string()))?;
    let (parts, body) = resp.into_parts();
    if parts.status == StatusCode::SWITCHING_PROTOCOLS {
        return Ok(Response::from_parts(parts, crate::http::empty()));
    }
    let body = httpproxy::streaming_body(body).boxed_unsync();
    Ok(Response::from_parts(parts, body))
}

fn unavailable(message: &str) -> ApiError {
    ApiError::new(500, Reason::InternalError, message.to_string())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;
    use serde_json::json;

    #[test]
    fn container_choice_as_upstream() {
        let pod = json!({"spec": {
            "containers": [{"name": "a"}, {"name": "b"}],
            "initContainers": [{"name": "i"}],
        }});
        assert_eq!(pick_container(&pod, "p", Some("b"), true).unwrap(), "b");
        assert_eq!(pick_container(&pod, "p", Some("i"), true).unwrap(), "i");
        let e = pick_container(&pod, "p", None, true).unwrap_err();
        assert_eq!(
            e.message,
            "a container name must be specified for pod p, choose one of: [a b] or one of the init containers: [i]"
        );
        let e = pick_container(&pod, "p", Some("z"), true).unwrap_err();
        assert_eq!(e.message, "container z is not valid for pod p");
        let one = json!({"spec": {"containers": [{"name": "only"}]}});
        assert_eq!(pick_container(&one, "p", None, false).unwrap(), "only");
    }

    #[test]
    fn kubelet_address_prefers_internal_ip() {
        let node = json!({"status": {
            "addresses": [{"type": "Hostname", "address": "h"}, {"type": "InternalIP", "address": "10.0.0.5"}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10251}},
        }});
        assert_eq!(
            kubelet_address(&node, "n").unwrap(),
            ("10.0.0.5".into(), 10251)
        );
        let bare = json!({"status": {"addresses": [{"type": "Hostname", "address": "h"}]}});
        assert_eq!(kubelet_address(&bare, "n").unwrap(), ("h".into(), 10250));
        assert!(kubelet_address(&json!({}), "n").is_err());
    }

    #[test]
    fn log_options_validated() {
        let q = Query::parse(Some("follow=true&tailLines=10&container=x"));
        assert_eq!(log_params(&q).unwrap(), "follow=true&tailLines=10");
        assert!(log_params(&Query::parse(Some("tailLines=-1"))).is_err());
        assert!(log_params(&Query::parse(Some("sinceSeconds=0"))).is_err());
        assert!(
            log_params(&Query::parse(Some(
                "sinceSeconds=5&sinceTime=2024-01-01T00:00:00Z"
            )))
            .is_err()
        );
    }

    #[test]
    fn exec_params_renamed_for_the_kubelet() {
        let q = Query::parse(Some(
            "command=cat&command=%2Fetc%2Fresolv.conf&container=c&stdout=true&stderr=true",
        ));
        assert_eq!(
            stream_params(&q, true).unwrap(),
            "output=1&error=1&command=cat&command=%2Fetc%2Fresolv.conf"
        );
        assert!(stream_params(&Query::parse(Some("command=x")), true).is_err());
        assert!(stream_params(&Query::parse(Some("stdout=true")), true).is_err());
        assert_eq!(
            stream_params(&Query::parse(Some("stdin=true&tty=true")), false).unwrap(),
            "input=1&tty=1"
        );
    }

    #[test]
    fn proxy_paths() {
        let uri: Uri = "/api/v1/nodes/n/proxy/metrics/cadvisor?x=1"
            .parse()
            .unwrap();
        assert_eq!(proxy_rest(&uri, "proxy"), "/metrics/cadvisor");
        let uri: Uri = "/api/v1/nodes/n/proxy".parse().unwrap();
        assert_eq!(proxy_rest(&uri, "proxy"), "/");
        assert!(is_connect("pods", "log"));
        assert!(!is_connect("pods", "status"));
    }
}
