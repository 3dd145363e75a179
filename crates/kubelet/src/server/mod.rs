//! The kubelet API (HTTPS, port 10250), as upstream's `pkg/kubelet/server`: `/healthz`,
//! `/pods`, `/metrics`, `/containerLogs/<ns>/<pod>/<container>` (from the CRI log files,
//! see [`logs`]), and the streaming endpoints `/exec`, `/attach`, `/portForward`, which ask
//! the runtime for a streaming URL (CRI `Exec`/`Attach`/`PortForward`) and splice the
//! client's upgraded connection to it ([`httpproxy`]) — the API server forwards
//! `kubectl logs|exec|attach|port-forward|cp` here.
//!
//! TLS with a self-signed serving certificate (upstream's default without
//! `--tls-cert-file`) kept in `root_dir/pki`; callers authenticate with a client
//! certificate of the cluster's client CA or a bearer token, and are authorized with
//! `SubjectAccessReview`s ([`auth`]).

pub mod auth;
pub mod logs;

use std::convert::Infallible;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use cri::RuntimeService;
use cri::v1;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Frame, Incoming};
use k8s_openapi::api::core::v1::Pod;
use rustls::ServerConfig;

use crate::{Error, KubeletConfig};

use runtime::serving::Body;

/// What the kubelet API serves from.
#[derive(Clone)]
pub struct ServerDeps {
    pub config: Arc<KubeletConfig>,
    pub runtime: Arc<dyn RuntimeService>,
    /// The pods this kubelet runs (`/pods`).
    pub pods: Arc<dyn Fn() -> Vec<Pod> + Send + Sync>,
    /// The Prometheus text of the kubelet's metrics (`/metrics`).
    pub metrics: Arc<dyn Fn() -> String + Send + Sync>,
    /// Token and authorization reviews.
    pub reviewer: Arc<auth::Reviewer>,
}

/// The serving certificate and key in `dir` (`kubelet.crt`/`kubelet.key`), self-signed
/// for the node's name and IP, created when missing.
pub fn ensure_serving_cert(
    dir: &Path,
    node_name: &str,
    node_ip: std::net::IpAddr,
) -> Result<(PathBuf, PathBuf), Error> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| Error::Io { path, source }
    };
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let cert = dir.join("kubelet.crt");
    let key = dir.join("kubelet.key");
    if cert.exists() && key.exists() {
        return Ok((cert, key));
    }
    let (cert_pem, key_pem) = runtime::serving::self_signed(
        &[node_name.to_string()],
        &[node_ip],
        &format!("{node_name}@kubelet"),
    )
    .map_err(|e| Error::Other(format!("kubelet {e}")))?;
    std::fs::write(&cert, cert_pem).map_err(io(&cert))?;
    crate::bootstrap::write_private(&key, &key_pem)?;
    Ok((cert, key))
}

/// The TLS configuration: the serving certificate; client certificates of `client_ca`
/// are verified when offered (and optional: bearer tokens work too).
pub fn tls_config(
    cert: &Path,
    key: &Path,
    client_ca: Option<&Path>,
) -> Result<Arc<ServerConfig>, Error> {
    let read = |path: &Path| {
        std::fs::read(path).map_err(|source| Error::Io {
            path: path.to_path_buf(),
            source,
        })
    };
    let ca = client_ca.map(read).transpose()?;
    runtime::serving::tls_config(&read(cert)?, &read(key)?, ca.as_deref(), &[b"http/1.1"])
        .map_err(|e| Error::Other(format!("kubelet {e}")))
}

/// Serves the kubelet API on `listener` until `stop` turns true.
pub async fn serve(
    listener: tokio::net::TcpListener,
    tls: Arc<ServerConfig>,
    deps: ServerDeps,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let stopped = async move {
        let _ = stop.wait_for(|s| *s).await;
    };
    let tls = runtime::serving::fixed_tls(tls);
    use tracing::Instrument as _;
    runtime::serving::serve_tls(listener, tls, stopped, move |req, cert_user, addr| {
        let span = tracing::debug_span!(
            "kubelet_api",
            method = %req.method(),
            path = %req.uri().path(),
            peer = %addr
        );
        handle(deps.clone(), cert_user, req).instrument(span)
    })
    .await;
}

fn text(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed_unsync());
    *r.status_mut() = status;
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

async fn handle(
    deps: ServerDeps,
    cert_user: Option<auth::User>,
    req: Request<Incoming>,
) -> Response<Body> {
    let path = req.uri().path().to_string();
    let user = match cert_user {
        Some(u) => Some(u),
        None => match runtime::serving::bearer(&req) {
            Some(t) => deps.reviewer.token(&t).await.ok().flatten(),
            None => None,
        },
    };
    let Some(user) = user else {
        return text(StatusCode::UNAUTHORIZED, "Unauthorized");
    };
    let (verb, sub) = auth::request_attributes(req.method(), &path);
    let attrs = runtime::serving::Attributes::Resource {
        verb,
        resource: "nodes",
        subresource: sub,
        name: deps.config.node_name.clone(),
    };
    if !deps.reviewer.authorize(&user, &attrs).await {
        return text(
            StatusCode::FORBIDDEN,
            format!(
                "Forbidden (user={}, verb={verb}, resource=nodes, subresource={sub})",
                user.name
            ),
        );
    }
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match segments.as_slice() {
        ["healthz", ..] => text(StatusCode::OK, "ok"),
        ["pods"] | ["pods", ""] => pods(&deps),
        ["metrics"] => {
            let mut r = text(StatusCode::OK, (deps.metrics)());
            r.headers_mut().insert(
                http::header::CONTENT_TYPE,
                http::HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
            );
            r
        }
        ["containerLogs", ns, pod, container] => {
            container_logs(&deps, ns, pod, container, req.uri().query()).await
        }
        [kind @ ("exec" | "attach"), ns, pod, container]
        | [kind @ ("exec" | "attach"), ns, pod, _, container] => {
            let (kind, ns, pod, container) = (
                *kind,
                ns.to_string(),
                pod.to_string(),
                container.to_string(),
            );
            stream(&deps, kind, &ns, &pod, Some(&container), req).await
        }
        ["portForward", ns, pod] | ["portForward", ns, pod, _] => {
            let (ns, pod) = (ns.to_string(), pod.to_string());
            stream(&deps, "portForward", &ns, &pod, None, req).await
        }
        _ => text(StatusCode::NOT_FOUND, "404 page not found"),
    }
}

fn pods(deps: &ServerDeps) -> Response<Body> {
    let list = serde_json::json!({
        "kind": "PodList",
        "apiVersion": "v1",
        "metadata": {},
        "items": (deps.pods)(),
    });
    let mut r = text(StatusCode::OK, list.to_string());
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    r
}

/// The containers of one pod's container name, newest first.
async fn containers_of(
    runtime: &dyn RuntimeService,
    ns: &str,
    pod: &str,
    container: Option<&str>,
) -> Result<Vec<v1::Container>, Error> {
    let mut labels = std::collections::HashMap::new();
    labels.insert("io.kubernetes.pod.namespace".to_string(), ns.to_string());
    labels.insert("io.kubernetes.pod.name".to_string(), pod.to_string());
    if let Some(c) = container {
        labels.insert("io.kubernetes.container.name".to_string(), c.to_string());
    }
    let mut list = runtime
        .list_containers(Some(v1::ContainerFilter {
            label_selector: labels,
            ..Default::default()
        }))
        .await?;
    list.sort_by(|a, b| {
        let attempt = |c: &v1::Container| c.metadata.as_ref().map_or(0, |m| m.attempt);
        attempt(b)
            .cmp(&attempt(a))
            .then(b.created_at.cmp(&a.created_at))
    });
    Ok(list)
}

async fn container_logs(
    deps: &ServerDeps,
    ns: &str,
    pod: &str,
    container: &str,
    query: Option<&str>,
) -> Response<Body> {
    let opts = match logs::LogOptions::from_query(query, jiff::Timestamp::now()) {
        Ok(o) => o,
        Err(e) => return text(StatusCode::BAD_REQUEST, e),
    };
    let Some(the_pod) = (deps.pods)().into_iter().find(|p| {
        p.metadata.namespace.as_deref() == Some(ns) && p.metadata.name.as_deref() == Some(pod)
    }) else {
        return text(
            StatusCode::NOT_FOUND,
            format!("pod \"{pod}\" does not exist"),
        );
    };
    if !has_container_spec(&the_pod, container) {
        return text(
            StatusCode::NOT_FOUND,
            format!("container \"{container}\" not found in pod \"{pod}\""),
        );
    }
    let id = match logs::container_for_logs(&the_pod, container, opts.previous) {
        Ok(id) => id,
        Err(message) => return text(StatusCode::BAD_REQUEST, message),
    };
    let status = match deps.runtime.container_status(&id, false).await {
        Ok(s) => s.status,
        Err(e) => return text(StatusCode::BAD_REQUEST, e.to_string()),
    };
    let Some(status) = status else {
        return text(StatusCode::BAD_REQUEST, format!("container {id} not found"));
    };
    let mut path = PathBuf::from(&status.log_path);
    if path.is_relative() {
        let uid = the_pod.metadata.uid.clone().unwrap_or_default();
        path = deps
            .config
            .pod_log_dir
            .join(format!("{ns}_{pod}_{uid}"))
            .join(&status.log_path);
    }
    let running_id = id;
    let runtime = Arc::clone(&deps.runtime);
    let running: logs::StillRunning = Arc::new(move || {
        let runtime = Arc::clone(&runtime);
        let id = running_id.clone();
        Box::pin(async move {
            matches!(
                runtime.container_status(&id, false).await,
                Ok(v1::ContainerStatusResponse { status: Some(s), .. })
                    if s.state == v1::ContainerState::ContainerRunning as i32
            )
        })
    });
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(16);
    tokio::spawn(logs::stream_file(path, opts, running, tx));
    let stream = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, Infallible>(Frame::data(b)), rx))
    });
    let mut r = Response::new(StreamBody::new(stream).boxed_unsync());
    r.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain"),
    );
    r
}

/// Whether the pod has a container (app, init or ephemeral) of that name.
fn has_container_spec(pod: &Pod, name: &str) -> bool {
    let Some(spec) = pod.spec.as_ref() else {
        return false;
    };
    spec.containers.iter().any(|c| c.name == name)
        || spec
            .init_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
        || spec
            .ephemeral_containers
            .iter()
            .flatten()
            .any(|c| c.name == name)
}

/// The streaming query flags (`input`, `output`, `error`, `tty`) and commands.
fn stream_flags(query: Option<&str>) -> (bool, bool, bool, bool, Vec<String>) {
    let mut flags = (false, false, false, false, Vec::new());
    for (k, v) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        let on = v == "1" || v.eq_ignore_ascii_case("true");
        match &*k {
            "input" | "stdin" => flags.0 = on,
            "output" | "stdout" => flags.1 = on,
            "error" | "stderr" => flags.2 = on,
            "tty" => flags.3 = on,
            "command" => flags.4.push(v.into_owned()),
            _ => {}
        }
    }
    flags
}

async fn stream(
    deps: &ServerDeps,
    kind: &str,
    ns: &str,
    pod: &str,
    container: Option<&str>,
    mut req: Request<Incoming>,
) -> Response<Body> {
    let fail = |code: StatusCode, m: String| text(code, m);
    let url = match kind {
        "portForward" => {
            let sandboxes = match deps
                .runtime
                .list_pod_sandbox(Some(v1::PodSandboxFilter {
                    label_selector: [
                        ("io.kubernetes.pod.namespace".to_string(), ns.to_string()),
                        ("io.kubernetes.pod.name".to_string(), pod.to_string()),
                    ]
                    .into_iter()
                    .collect(),
                    state: Some(v1::PodSandboxStateValue {
                        state: v1::PodSandboxState::SandboxReady as i32,
                    }),
                    ..Default::default()
                }))
                .await
            {
                Ok(s) => s,
                Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            };
            let Some(sandbox) = sandboxes.iter().max_by_key(|s| s.created_at) else {
                return fail(
                    StatusCode::NOT_FOUND,
                    format!("pod not found (\"{pod}_{ns}\")"),
                );
            };
            deps.runtime
                .port_forward(v1::PortForwardRequest {
                    pod_sandbox_id: sandbox.id.clone(),
                    port: Vec::new(),
                })
                .await
                .map(|r| r.url)
        }
        _ => {
            let list = match containers_of(deps.runtime.as_ref(), ns, pod, container).await {
                Ok(l) => l,
                Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
            };
            let running = list
                .iter()
                .find(|c| c.state == v1::ContainerState::ContainerRunning as i32);
            let Some(c) = running else {
                return fail(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "container {} is not valid for pod {pod}",
                        container.unwrap_or_default()
                    ),
                );
            };
            let (stdin, stdout, stderr, tty, cmd) = stream_flags(req.uri().query());
            if kind == "exec" {
                deps.runtime
                    .exec(v1::ExecRequest {
                        container_id: c.id.clone(),
                        cmd,
                        tty,
                        stdin,
                        stdout,
                        stderr: stderr && !tty,
                    })
                    .await
                    .map(|r| r.url)
            } else {
                deps.runtime
                    .attach(v1::AttachRequest {
                        container_id: c.id.clone(),
                        stdin,
                        tty,
                        stdout,
                        stderr: stderr && !tty,
                    })
                    .await
                    .map(|r| r.url)
            }
        }
    };
    let url = match url {
        Ok(u) => u,
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let Ok(uri) = url.parse::<http::Uri>() else {
        return fail(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("runtime streaming URL {url:?} is invalid"),
        );
    };
    let host = uri
        .host()
        .unwrap_or("127.0.0.1")
        .trim_matches(['[', ']'])
        .to_string();
    let port = uri.port_u16().unwrap_or(80);
    let io = match httpproxy::dial(&host, port, None, Duration::from_secs(10)).await {
        Ok(io) => io,
        Err(e) => return fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    };
    let upgrade = httpproxy::is_upgrade(req.headers());
    let client_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));
    let (parts, body) = req.into_parts();
    let mut builder = Request::builder()
        .method(parts.method.clone())
        .uri(uri.path_and_query().map_or("/", |p| p.as_str()));
    for (k, v) in httpproxy::forwarded_headers(&parts.headers, upgrade).iter() {
        builder = builder.header(k, v);
    }
    builder = builder.header(http::header::HOST, format!("{host}:{port}"));
    let Ok(out) = builder.body(body) else {
        return fail(StatusCode::INTERNAL_SERVER_ERROR, "bad request".into());
    };
    match httpproxy::roundtrip(io, out, client_upgrade).await {
        Ok(resp) => {
            let (parts, body) = resp.into_parts();
            if parts.status == StatusCode::SWITCHING_PROTOCOLS {
                return Response::from_parts(parts, Full::new(Bytes::new()).boxed_unsync());
            }
            Response::from_parts(parts, httpproxy::streaming_body(body).boxed_unsync())
        }
        Err(e) => fail(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn stream_flags_from_query() {
        let (i, o, e, t, cmd) =
            stream_flags(Some("output=1&error=1&command=cat&command=%2Fetc%2Fhosts"));
        assert!(!i && o && e && !t);
        assert_eq!(cmd, ["cat", "/etc/hosts"]);
    }

    #[test]
    fn self_signed_cert_is_reused() {
        let dir = tempfile::tempdir().unwrap();
        let ip = "10.0.0.1".parse().unwrap();
        let (c, k) = ensure_serving_cert(dir.path(), "n1", ip).unwrap();
        let first = std::fs::read(&c).unwrap();
        ensure_serving_cert(dir.path(), "n1", ip).unwrap();
        assert_eq!(std::fs::read(&c).unwrap(), first);
        tls_config(&c, &k, None).unwrap();
    }
}
