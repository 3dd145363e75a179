//! HTTP plumbing: bodies, content negotiation, Status responses, query parameters.

use std::convert::Infallible;

use api::ApiError;
use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, Full, Limited};
use serde_json::Value;

/// The body of every response: a buffer, or a stream for watches.
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

/// Upstream's request body limit (3 MiB).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed_unsync()
}

pub fn empty() -> Body {
    full(Bytes::new())
}

/// A response with a JSON body.
pub fn json_response(status: StatusCode, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

pub fn json_value(status: StatusCode, v: &Value) -> Response<Body> {
    json_response(status, serde_json::to_vec(v).unwrap_or_default())
}

/// The `Status` response of an error.
pub fn error_response(e: &ApiError) -> Response<Body> {
    let status = StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut r = json_value(status, &e.to_status());
    if let Some(secs) = e.retry_after()
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

pub fn text_response(status: StatusCode, text: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(full(text.into()));
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r
}

/// Reads a request body, refusing more than `MAX_BODY_BYTES` with 413.
/// A request body as the handlers read it: the connection's stream, or bytes already read
/// (when the audit log records the request object).
pub type ReqBody = http_body_util::combinators::UnsyncBoxBody<Bytes, hyper::Error>;

/// A response body that runs `done` once, when it has been sent or dropped (the end of a
/// watch, for the audit log's `ResponseComplete`).
pub struct AuditedBody<F: FnOnce() + Send + 'static> {
    inner: Body,
    done: Option<F>,
}

impl<F: FnOnce() + Send + 'static> AuditedBody<F> {
    pub fn new(inner: Body, done: F) -> Self {
        AuditedBody {
            inner,
            done: Some(done),
        }
    }
}

impl<F: FnOnce() + Send + Unpin + 'static> hyper::body::Body for AuditedBody<F> {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }
}

impl<F: FnOnce() + Send + 'static> Drop for AuditedBody<F> {
    fn drop(&mut self) {
        if let Some(done) = self.done.take() {
            done();
        }
    }
}

/// The connection's body, streamed.
pub fn stream_body(body: hyper::body::Incoming) -> ReqBody {
    body.boxed_unsync()
}

/// A body already read.
pub fn bytes_body(bytes: Bytes) -> ReqBody {
    Full::new(bytes)
        .map_err(|never: Infallible| match never {})
        .boxed_unsync()
}

pub async fn read_body(body: ReqBody) -> Result<Bytes, ApiError> {
    match Limited::new(body, MAX_BODY_BYTES).collect().await {
        Ok(c) => Ok(c.to_bytes()),
        Err(e) => {
            if e.downcast_ref::<http_body_util::LengthLimitError>()
                .is_some()
            {
                Err(ApiError::too_large(MAX_BODY_BYTES))
            } else {
                Err(ApiError::bad_request(format!(
                    "error reading request body: {e}"
                )))
            }
        }
    }
}

/// Decoded query parameters, in order.
#[derive(Clone, Debug, Default)]
pub struct Query(pub Vec<(String, String)>);

impl Query {
    pub fn parse(q: Option<&str>) -> Query {
        Query(
            q.map(|q| {
                form_urlencoded::parse(q.as_bytes())
                    .map(|(k, v)| (k.into_owned(), v.into_owned()))
                    .collect()
            })
            .unwrap_or_default(),
        )
    }

    /// The last value of a parameter (as Go's `url.Values.Get` takes the first; upstream
    /// decodes into structs taking the first too).
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// A boolean parameter as upstream decodes it: absent is false, `0` and `false` (any
    /// case) are false, anything else is true. Never an error (the `Result` keeps callers
    /// uniform with [`Query::int`]).
    pub fn flag(&self, key: &str) -> Result<bool, ApiError> {
        Ok(self.get(key).is_some_and(crate::requestinfo::truthy))
    }

    pub fn int(&self, key: &str) -> Result<Option<i64>, ApiError> {
        match self.get(key) {
            None | Some("") => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value {v:?} for query parameter {key:?}: must be an integer"
                ))
            }),
        }
    }
}

/// What the client accepts, as far as the server distinguishes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Accept {
    Json,
    Yaml,
    /// `application/json;as=Table;v=v1;g=meta.k8s.io` (or v1beta1).
    Table,
    /// `application/json;as=PartialObjectMetadata(List);v=v1;g=meta.k8s.io`.
    PartialMetadata,
}

/// One media range of an `Accept` header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MediaRange {
    pub mime: String,
    pub params: Vec<(String, String)>,
}

impl MediaRange {
    pub fn param(&self, key: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }
}

/// Parses an `Accept` (or `Content-Type`) header into media ranges.
pub fn media_ranges(value: &str) -> Vec<MediaRange> {
    value
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';').map(str::trim);
            let mime = pieces.next()?.to_ascii_lowercase();
            if mime.is_empty() {
                return None;
            }
            let params = pieces
                .filter_map(|p| {
                    let (k, v) = p.split_once('=')?;
                    Some((
                        k.trim().to_ascii_lowercase(),
                        v.trim().trim_matches('"').to_string(),
                    ))
                })
                .collect();
            Some(MediaRange { mime, params })
        })
        .collect()
}

/// Picks the response form for an object request. Protobuf-only clients get 406.
pub fn negotiate(headers: &HeaderMap) -> Result<Accept, ApiError> {
    let Some(accept) = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|s| !s.trim().is_empty())
    else {
        return Ok(Accept::Json);
    };
    for r in media_ranges(accept) {
        let json_like = matches!(
            r.mime.as_str(),
            "application/json" | "*/*" | "application/*"
        );
        if r.mime == "application/json" && r.param("g") == Some("meta.k8s.io") {
            match r.param("as") {
                Some("Table") if matches!(r.param("v"), Some("v1" | "v1beta1")) => {
                    return Ok(Accept::Table);
                }
                Some("PartialObjectMetadata" | "PartialObjectMetadataList")
                    if matches!(r.param("v"), Some("v1" | "v1beta1")) =>
                {
                    return Ok(Accept::PartialMetadata);
                }
                _ => continue,
            }
        }
        if r.param("as").is_some() {
            continue;
        }
        if json_like {
            return Ok(Accept::Json);
        }
        if matches!(
            r.mime.as_str(),
            "application/yaml" | "application/x-yaml" | "text/yaml"
        ) {
            return Ok(Accept::Yaml);
        }
    }
    Err(ApiError::not_acceptable(
        "application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

/// Request body formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ContentType {
    Json,
    Yaml,
    /// `application/vnd.kubernetes.protobuf` (typed clients since client-go 1.32).
    Protobuf,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
}

pub fn content_type(headers: &HeaderMap) -> Result<ContentType, ApiError> {
    let raw = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("application/json");
    let mime = media_ranges(raw)
        .into_iter()
        .next()
        .map(|m| m.mime)
        .unwrap_or_else(|| "application/json".to_string());
    Ok(match mime.as_str() {
        "application/json" | "*/*" => ContentType::Json,
        "application/yaml" | "application/x-yaml" | "text/yaml" => ContentType::Yaml,
        "application/vnd.kubernetes.protobuf" => ContentType::Protobuf,
        "application/json-patch+json" => ContentType::JsonPatch,
        "application/merge-patch+json" => ContentType::MergePatch,
        "application/strategic-merge-patch+json" => ContentType::StrategicMergePatch,
        "application/apply-patch+yaml" | "application/apply-patch+cbor" => ContentType::ApplyPatch,
        _ => {
            return Err(ApiError::unsupported_media_type(
                raw,
                "application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ));
        }
    })
}

/// Decodes a JSON, YAML or Kubernetes protobuf body into a value. Only a single document
/// is accepted. `expected` is the (apiVersion, kind) the URL implies, used when a protobuf
/// envelope leaves them empty.
pub fn decode_body(
    bytes: &[u8],
    ct: ContentType,
    expected: Option<(&str, &str)>,
) -> Result<Value, ApiError> {
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Err(ApiError::bad_request("the request body is empty"));
    }
    match ct {
        ContentType::Protobuf => {
            let (api_version, kind) = expected.unwrap_or(("", ""));
            kubeproto::decode_with_defaults(bytes, api_version, kind).map_err(|e| {
                if e.is_unsupported_kind() {
                    ApiError::unsupported_media_type(
                        "application/vnd.kubernetes.protobuf",
                        "application/json, application/yaml",
                    )
                } else {
                    ApiError::bad_request(format!("error decoding protobuf body: {e}"))
                }
            })
        }
        ContentType::Yaml | ContentType::ApplyPatch => {
            let text = std::str::from_utf8(bytes)
                .map_err(|_| ApiError::bad_request("the request body is not valid UTF-8"))?;
            serde_yaml_ng::from_str::<Value>(text)
                .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))
        }
        _ => serde_json::from_slice::<Value>(bytes).map_err(|e| {
            ApiError::bad_request(format!("couldn't get version/kind; json parse error: {e}"))
        }),
    }
}

/// Serializes a value for the negotiated form.
pub fn encode(v: &Value, accept: Accept) -> (Bytes, &'static str) {
    match accept {
        Accept::Yaml => (
            Bytes::from(serde_yaml_ng::to_string(v).unwrap_or_default()),
            "application/yaml",
        ),
        _ => (
            Bytes::from(serde_json::to_vec(v).unwrap_or_default()),
            "application/json",
        ),
    }
}

pub fn with_content_type(mut r: Response<Body>, ct: &'static str) -> Response<Body> {
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    r
}

/// Adds `Warning: 299 - "..."` headers.
pub fn add_warnings(r: &mut Response<Body>, warnings: &[String]) {
    for w in warnings {
        let escaped = w.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(accept: &str) -> HeaderMap {
        let mut m = HeaderMap::new();
        m.insert(header::ACCEPT, HeaderValue::from_str(accept).unwrap());
        m
    }

    #[test]
    fn negotiation() {
        assert_eq!(
            negotiate(&h("application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json")).unwrap(),
            Accept::Table
        );
        assert_eq!(
            negotiate(&h("application/json, */*")).unwrap(),
            Accept::Json
        );
        assert_eq!(negotiate(&h("application/yaml")).unwrap(), Accept::Yaml);
        assert_eq!(
            negotiate(&h("application/vnd.kubernetes.protobuf, */*")).unwrap(),
            Accept::Json
        );
        assert_eq!(
            negotiate(&h("application/vnd.kubernetes.protobuf"))
                .unwrap_err()
                .code,
            406
        );
        assert_eq!(negotiate(&HeaderMap::new()).unwrap(), Accept::Json);
        assert_eq!(
            negotiate(&h(
                "application/json;as=Table;v=v2;g=meta.k8s.io, application/json"
            ))
            .unwrap(),
            Accept::Json
        );
    }

    #[test]
    fn bodies() {
        assert_eq!(
            decode_body(b"  ", ContentType::Json, None)
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            decode_body(b"{bad", ContentType::Json, None)
                .unwrap_err()
                .code,
            400
        );
        assert_eq!(
            decode_body(b"a: 1\nb: [x]", ContentType::Yaml, None).unwrap(),
            serde_json::json!({"a": 1, "b": ["x"]})
        );
        assert_eq!(
            decode_body(b"a: [", ContentType::Yaml, None)
                .unwrap_err()
                .code,
            400
        );
    }
}
