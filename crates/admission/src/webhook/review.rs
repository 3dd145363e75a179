//! The wire side of an admission webhook call (upstream's `webhook/request` and
//! `webhook/errors`): the `AdmissionReview` request, the checks on the response, and the
//! `Status` errors the dispatchers answer with.

use api::ApiError;
use base64::Engine;
use serde_json::{Map, Value, json};

use crate::Attributes;

/// The `AdmissionReview` versions this server sends, preferred first.
pub const VERSIONS: &[&str] = &["v1", "v1beta1"];

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn gvr(group: &str, version: &str, resource: &str) -> Value {
    json!({"group": group, "version": version, "resource": resource})
}

fn user_info(u: &auth::UserInfo) -> Value {
    let mut m = Map::new();
    if !u.name.is_empty() {
        m.insert("username".into(), json!(u.name));
    }
    if !u.uid.is_empty() {
        m.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

/// `CreateV1AdmissionReview` (or v1beta1): the request of call `uid` about `a`. The kind
/// and resource are the request's own (no equivalent resource is ever substituted).
pub fn request(uid: &str, version: &str, a: &Attributes) -> Value {
    let kind = gvk(&a.kind.group, &a.kind.version, &a.kind.kind);
    let resource = gvr(&a.resource.group, &a.resource.version, &a.resource.kind);
    let mut req = Map::new();
    req.insert("uid".into(), json!(uid));
    req.insert("kind".into(), kind.clone());
    req.insert("resource".into(), resource.clone());
    if !a.subresource.is_empty() {
        req.insert("subResource".into(), json!(a.subresource));
    }
    req.insert("requestKind".into(), kind);
    req.insert("requestResource".into(), resource);
    if !a.subresource.is_empty() {
        req.insert("requestSubResource".into(), json!(a.subresource));
    }
    if !a.name.is_empty() {
        req.insert("name".into(), json!(a.name));
    }
    if !a.namespace.is_empty() {
        req.insert("namespace".into(), json!(a.namespace));
    }
    req.insert("operation".into(), json!(a.operation.as_str()));
    req.insert("userInfo".into(), user_info(&a.user));
    req.insert("object".into(), a.object.clone().unwrap_or(Value::Null));
    req.insert(
        "oldObject".into(),
        a.old_object.clone().unwrap_or(Value::Null),
    );
    req.insert("dryRun".into(), json!(a.dry_run));
    req.insert("options".into(), a.options.clone().unwrap_or(Value::Null));
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": Value::Object(req),
    })
}

/// What a webhook answered (`request.AdmissionResponse`).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Answer {
    pub allowed: bool,
    /// The decoded `response.patch` (mutating webhooks only).
    pub patch: Vec<u8>,
    /// `JSONPatch`, or empty without a patch.
    pub patch_type: String,
    /// `response.status`.
    pub result: Option<Value>,
    pub warnings: Vec<String>,
    pub audit_annotations: Map<String, Value>,
}

/// Go's `GroupVersionKind.String()` of a decoded object.
fn gvk_string(v: &Value) -> String {
    let api_version = v.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    format!("{group}/{version}, Kind={kind}")
}

/// `VerifyAdmissionResponse`: the checks on a decoded `AdmissionReview` answer to call
/// `uid` sent as `version`. Errors are upstream's texts.
pub fn verify(uid: &str, version: &str, mutating: bool, review: &Value) -> Result<Answer, String> {
    let response = review
        .get("response")
        .filter(|r| r.is_object())
        .ok_or("webhook response was absent")?;
    let str_field = |k: &str| response.get(k).and_then(Value::as_str);
    let patch_b64 = str_field("patch").unwrap_or("");
    let patch = base64::engine::general_purpose::STANDARD
        .decode(patch_b64)
        .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?;
    let patch_type = response.get("patchType").filter(|p| !p.is_null());
    let mut answer = Answer {
        allowed: response
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        result: response.get("status").filter(|s| !s.is_null()).cloned(),
        warnings: response
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        audit_annotations: response
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default(),
        ..Answer::default()
    };
    if version == "v1beta1" {
        // v1beta1 answers were never checked for uid, kind or patch type.
        if mutating && !patch.is_empty() {
            answer.patch = patch;
            answer.patch_type = "JSONPatch".into();
        }
        return Ok(answer);
    }
    let got_uid = str_field("uid").unwrap_or("");
    if got_uid != uid {
        return Err(format!("expected response.uid={uid:?}, got {got_uid:?}"));
    }
    let got = gvk_string(review);
    let want = "admission.k8s.io/v1, Kind=AdmissionReview";
    if got != want {
        return Err(format!("expected webhook response of {want}, got {got}"));
    }
    if mutating {
        if !patch.is_empty() && patch_type.is_none() {
            return Err("webhook returned response.patch but not response.patchType".into());
        }
        if patch.is_empty() && patch_type.is_some() {
            return Err("webhook returned response.patchType but not response.patch".into());
        }
        if let Some(pt) = patch_type {
            let pt = pt.as_str().unwrap_or("");
            if pt.is_empty() {
                return Err(format!(
                    "webhook returned invalid response.patchType of {pt:?}"
                ));
            }
            answer.patch_type = pt.to_string();
        }
        answer.patch = patch;
    } else {
        if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    Ok(answer)
}

/// A `Status` sent as is, with upstream's `kind`, `apiVersion` and empty `metadata`.
fn status_error(code: u16, mut status: Map<String, Value>) -> ApiError {
    status.insert("kind".into(), json!("Status"));
    status.insert("apiVersion".into(), json!("v1"));
    status.insert("metadata".into(), json!({}));
    status.insert("code".into(), json!(code));
    ApiError::from_status(code, Value::Object(status))
}

/// `webhookerrors.ToStatusErr`: a webhook's refusal. The code is the webhook's, at least
/// 400; the message names the webhook; the webhook's reason and details are kept.
pub fn rejection(webhook: &str, result: Option<&Value>) -> ApiError {
    let mut status: Map<String, Value> = result
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let code = status
        .get("code")
        .and_then(Value::as_i64)
        .filter(|c| *c >= 400)
        .and_then(|c| u16::try_from(c).ok())
        .unwrap_or(400);
    let st = status.get("status").and_then(Value::as_str).unwrap_or("");
    if st.is_empty() || st == "Success" {
        status.insert("status".into(), json!("Failure"));
    }
    let denied_by = format!("admission webhook {webhook:?} denied the request");
    let message = status.get("message").and_then(Value::as_str).unwrap_or("");
    let reason = status.get("reason").and_then(Value::as_str).unwrap_or("");
    let message = if !message.is_empty() {
        format!("{denied_by}: {message}")
    } else if !reason.is_empty() {
        format!("{denied_by}: {reason}")
    } else {
        format!("{denied_by} without explanation")
    };
    status.insert("message".into(), json!(message));
    for empty in ["reason", "details"] {
        if status
            .get(empty)
            .is_some_and(|v| v.is_null() || v.as_str() == Some(""))
        {
            status.remove(empty);
        }
    }
    status_error(code, status)
}

/// `apierrors.NewInternalError(err)`: 500 with the error as the single cause.
pub fn internal_error(err: &str) -> ApiError {
    let mut status = Map::new();
    status.insert("status".into(), json!("Failure"));
    status.insert(
        "message".into(),
        json!(format!("Internal error occurred: {err}")),
    );
    status.insert("reason".into(), json!("InternalError"));
    status.insert("details".into(), json!({"causes": [{"message": err}]}));
    status_error(500, status)
}

/// `NewDryRunUnsupportedErr`: a dry-run request to a webhook that may have side effects.
pub fn dry_run_unsupported(webhook: &str) -> ApiError {
    ApiError::bad_request(format!(
        "admission webhook {webhook:?} does not support dry run"
    ))
}

/// `ErrCallingWebhook.Error()`: the webhook could not be called or answered nonsense.
pub fn calling_error(webhook: &str, reason: &str) -> String {
    format!("failed calling webhook {webhook:?}: {reason}")
}

/// The error client-go's REST client makes of a non-2xx answer without a `Status` body
/// (`NewGenericServerResponse`), or the `Status`'s message when the body is one.
pub fn unexpected_response(code: u16, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body)
        && v.get("kind").and_then(Value::as_str) == Some("Status")
        && let Some(m) = v.get("message").and_then(Value::as_str)
    {
        return m.to_string();
    }
    let text = String::from_utf8_lossy(body);
    let server_message = if text.trim().is_empty() {
        "unknown".to_string()
    } else {
        text.trim().chars().take(1024).collect()
    };
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 => server_message,
        406 | 415 => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        c if c >= 500 => format!(
            "an error on the server ({server_message:?}) has prevented the request from succeeding"
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}
