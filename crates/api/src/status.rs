//! API errors as upstream's `metav1.Status`, and field errors as upstream's
//! `k8s.io/apimachinery/pkg/util/validation/field` formats them.

use std::fmt;

use serde_json::{Value, json};

/// What is wrong with a field (upstream's `field.ErrorType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldErrorType {
    NotFound,
    Required,
    Duplicate,
    Invalid,
    NotSupported,
    Forbidden,
    TooLong,
    TooMany,
    Internal,
    TypeInvalid,
}

impl FieldErrorType {
    /// The text upstream prints ("Invalid value", "Required value", ...).
    pub fn text(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "Not found",
            FieldErrorType::Required => "Required value",
            FieldErrorType::Duplicate => "Duplicate value",
            FieldErrorType::Invalid => "Invalid value",
            FieldErrorType::NotSupported => "Unsupported value",
            FieldErrorType::Forbidden => "Forbidden",
            FieldErrorType::TooLong => "Too long",
            FieldErrorType::TooMany => "Too many",
            FieldErrorType::Internal => "Internal error",
            FieldErrorType::TypeInvalid => "Invalid value",
        }
    }

    /// The `StatusCause.reason` (`FieldValueInvalid`, ...).
    pub fn cause(self) -> &'static str {
        match self {
            FieldErrorType::NotFound => "FieldValueNotFound",
            FieldErrorType::Required => "FieldValueRequired",
            FieldErrorType::Duplicate => "FieldValueDuplicate",
            FieldErrorType::Invalid => "FieldValueInvalid",
            FieldErrorType::NotSupported => "FieldValueNotSupported",
            FieldErrorType::Forbidden => "FieldValueForbidden",
            FieldErrorType::TooLong => "FieldValueTooLong",
            FieldErrorType::TooMany => "FieldValueTooMany",
            FieldErrorType::Internal => "InternalError",
            FieldErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }
}

/// One invalid field.
#[derive(Clone, Debug, PartialEq)]
pub struct FieldError {
    pub kind: FieldErrorType,
    /// The path, as upstream writes it: `spec.template.spec.containers[0].image`.
    pub field: String,
    pub bad_value: Option<Value>,
    pub detail: String,
}

impl FieldError {
    fn new(
        kind: FieldErrorType,
        field: impl Into<String>,
        bad_value: Option<Value>,
        detail: impl Into<String>,
    ) -> Self {
        FieldError {
            kind,
            field: field.into(),
            bad_value,
            detail: detail.into(),
        }
    }

    pub fn required(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Required, field, None, detail)
    }

    pub fn invalid(
        field: impl Into<String>,
        value: impl Into<Value>,
        detail: impl Into<String>,
    ) -> Self {
        Self::new(FieldErrorType::Invalid, field, Some(value.into()), detail)
    }

    pub fn forbidden(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Forbidden, field, None, detail)
    }

    pub fn duplicate(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::Duplicate, field, Some(value.into()), "")
    }

    pub fn not_found(field: impl Into<String>, value: impl Into<Value>) -> Self {
        Self::new(FieldErrorType::NotFound, field, Some(value.into()), "")
    }

    pub fn too_long(field: impl Into<String>, max: usize) -> Self {
        Self::new(
            FieldErrorType::TooLong,
            field,
            None,
            format!("may not be more than {max} bytes"),
        )
    }

    pub fn too_many(field: impl Into<String>, actual: usize, max: usize) -> Self {
        Self::new(
            FieldErrorType::TooMany,
            field,
            Some(Value::from(actual)),
            format!("must have at most {max} items"),
        )
    }

    pub fn internal(field: impl Into<String>, detail: impl Into<String>) -> Self {
        Self::new(FieldErrorType::Internal, field, None, detail)
    }

    /// `Unsupported value: "x": supported values: "a", "b"`.
    pub fn not_supported(
        field: impl Into<String>,
        value: impl Into<Value>,
        valid: &[&str],
    ) -> Self {
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|v| format!("{v:?}")).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(
            FieldErrorType::NotSupported,
            field,
            Some(value.into()),
            detail,
        )
    }

    /// The message without the field (upstream's `ErrorBody`).
    pub fn body(&self) -> String {
        let mut s = match self.kind {
            FieldErrorType::Required
            | FieldErrorType::Forbidden
            | FieldErrorType::TooLong
            | FieldErrorType::Internal => self.kind.text().to_string(),
            _ => format!(
                "{}: {}",
                self.kind.text(),
                self.bad_value
                    .as_ref()
                    .map_or_else(|| "null".to_string(), format_value)
            ),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

/// Values as Go's `%#v`/`%q` print them in field errors: strings quoted, numbers bare.
fn format_value(v: &Value) -> String {
    match v {
        Value::Null => "null".to_string(),
        Value::String(s) => format!("{s:?}"),
        Value::Number(n) => n.to_string(),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// Joins field errors as upstream's aggregate does: one alone, several as `[a, b]`.
pub fn aggregate(errs: &[FieldError]) -> String {
    match errs {
        [one] => one.to_string(),
        many => {
            let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!("[{}]", parts.join(", "))
        }
    }
}

/// `StatusReason` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    BadRequest,
    Unauthorized,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    AlreadyExists,
    Conflict,
    Gone,
    Expired,
    RequestEntityTooLarge,
    UnsupportedMediaType,
    Invalid,
    TooManyRequests,
    InternalError,
    ServiceUnavailable,
    Timeout,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::BadRequest => "BadRequest",
            Reason::Unauthorized => "Unauthorized",
            Reason::Forbidden => "Forbidden",
            Reason::NotFound => "NotFound",
            Reason::MethodNotAllowed => "MethodNotAllowed",
            Reason::NotAcceptable => "NotAcceptable",
            Reason::AlreadyExists => "AlreadyExists",
            Reason::Conflict => "Conflict",
            Reason::Gone => "Gone",
            Reason::Expired => "Expired",
            Reason::RequestEntityTooLarge => "RequestEntityTooLarge",
            Reason::UnsupportedMediaType => "UnsupportedMediaType",
            Reason::Invalid => "Invalid",
            Reason::TooManyRequests => "TooManyRequests",
            Reason::InternalError => "InternalError",
            Reason::ServiceUnavailable => "ServiceUnavailable",
            Reason::Timeout => "Timeout",
        }
    }
}

/// One cause in `details.causes`.
#[derive(Clone, Debug, PartialEq)]
pub struct Cause {
    pub reason: String,
    pub message: String,
    pub field: String,
}

/// A failed API call, rendered as a `Status` object. Small (the rarely used parts are
/// boxed), so `Result<T, ApiError>` stays cheap on every request path.
#[derive(Clone, Debug, PartialEq)]
pub struct ApiError {
    pub code: u16,
    pub reason: Reason,
    pub message: String,
    details: Option<Box<Details>>,
}

/// The optional parts of an [`ApiError`].
#[derive(Clone, Debug, Default, PartialEq)]
struct Details {
    name: Option<String>,
    group: Option<String>,
    /// `details.kind`: the resource (plural) for most errors, the kind for Invalid.
    kind: Option<String>,
    causes: Vec<Cause>,
    retry_after_seconds: Option<u32>,
    /// A complete `Status` body to send as is (for errors whose upstream shape the fields
    /// above cannot express, e.g. an empty reason or `"details": {}`).
    raw: Option<Value>,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ApiError {}

/// The resource an error is about: plural and group, for messages and details.
#[derive(Clone, Copy, Debug)]
pub struct GroupResource<'a> {
    pub group: &'a str,
    pub resource: &'a str,
}

impl GroupResource<'_> {
    fn qualified(&self) -> String {
        if self.group.is_empty() {
            self.resource.to_string()
        } else {
            format!("{}.{}", self.resource, self.group)
        }
    }
}

impl ApiError {
    pub fn new(code: u16, reason: Reason, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    fn details_mut(&mut self) -> &mut Details {
        self.details.get_or_insert_with(Box::default)
    }

    /// An error answered with exactly this `Status` body and HTTP code.
    pub fn from_status(code: u16, status: Value) -> Self {
        let message = status["message"].as_str().unwrap_or_default().to_string();
        let mut e = Self::new(code, Reason::InternalError, message);
        e.details_mut().raw = Some(status);
        e
    }

    fn about(mut self, gr: GroupResource<'_>, name: &str) -> Self {
        let d = self.details_mut();
        d.group = Some(gr.group.to_string());
        d.kind = Some(gr.resource.to_string());
        if !name.is_empty() {
            d.name = Some(name.to_string());
        }
        self
    }

    /// `details.kind` (the resource or, for Invalid, the kind).
    pub fn kind(&self) -> Option<&str> {
        self.details.as_ref()?.kind.as_deref()
    }

    /// `details.causes`.
    pub fn causes(&self) -> &[Cause] {
        self.details.as_ref().map_or(&[], |d| d.causes.as_slice())
    }

    /// Adds a cause to `details.causes`.
    pub fn push_cause(&mut self, cause: Cause) {
        self.details_mut().causes.push(cause);
    }

    /// `details.retryAfterSeconds` (also sent as `Retry-After`).
    pub fn retry_after(&self) -> Option<u32> {
        self.details.as_ref()?.retry_after_seconds
    }

    fn with_retry_after(mut self, secs: u32) -> Self {
        self.details_mut().retry_after_seconds = Some(secs);
        self
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, Reason::BadRequest, message)
    }

    pub fn unauthorized() -> Self {
        Self::new(401, Reason::Unauthorized, "Unauthorized")
    }

    /// `pods "x" is forbidden: <reason>`, or `pods is forbidden: ...` without a name.
    pub fn forbidden(gr: GroupResource<'_>, name: &str, reason: &str) -> Self {
        let what = if name.is_empty() {
            gr.qualified()
        } else {
            format!("{} {name:?}", gr.qualified())
        };
        Self::new(
            403,
            Reason::Forbidden,
            format!("{what} is forbidden: {reason}"),
        )
        .about(gr, name)
    }

    pub fn not_found(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(
            404,
            Reason::NotFound,
            format!("{} {name:?} not found", gr.qualified()),
        )
        .about(gr, name)
    }

    /// 404 for a URL that names no resource.
    pub fn path_not_found() -> Self {
        Self::new(
            404,
            Reason::NotFound,
            "the server could not find the requested resource",
        )
    }

    pub fn already_exists(gr: GroupResource<'_>, name: &str) -> Self {
        Self::new(
            409,
            Reason::AlreadyExists,
            format!("{} {name:?} already exists", gr.qualified()),
        )
        .about(gr, name)
    }

    /// The optimistic-concurrency conflict.
    pub fn conflict(gr: GroupResource<'_>, name: &str, why: &str) -> Self {
        Self::new(
            409,
            Reason::Conflict,
            format!(
                "Operation cannot be fulfilled on {} {name:?}: {why}",
                gr.qualified()
            ),
        )
        .about(gr, name)
    }

    /// The standard reason for a stale resourceVersion.
    pub const MODIFIED: &'static str = "the object has been modified; please apply your changes to the latest version and try again";

    /// 422 with field causes: `Deployment.apps "x" is invalid: ...`.
    pub fn invalid(group: &str, kind: &str, name: &str, errs: &[FieldError]) -> Self {
        let qualified_kind = if group.is_empty() {
            kind.to_string()
        } else {
            format!("{kind}.{group}")
        };
        let mut e = Self::new(
            422,
            Reason::Invalid,
            format!("{qualified_kind} {name:?} is invalid: {}", aggregate(errs)),
        );
        let d = e.details_mut();
        d.group = Some(group.to_string());
        d.kind = Some(kind.to_string());
        if !name.is_empty() {
            d.name = Some(name.to_string());
        }
        d.causes = errs
            .iter()
            .map(|fe| Cause {
                reason: fe.kind.cause().to_string(),
                message: fe.body(),
                field: fe.field.clone(),
            })
            .collect();
        e
    }

    pub fn method_not_supported(gr: GroupResource<'_>, verb: &str) -> Self {
        Self::new(
            405,
            Reason::MethodNotAllowed,
            format!(
                "{verb} is not supported on resources of kind {:?}",
                gr.qualified()
            ),
        )
        .about(gr, "")
    }

    pub fn not_acceptable(accepted: &str) -> Self {
        Self::new(
            406,
            Reason::NotAcceptable,
            format!("only the following media types are accepted: {accepted}"),
        )
    }

    pub fn unsupported_media_type(content_type: &str, supported: &str) -> Self {
        Self::new(
            415,
            Reason::UnsupportedMediaType,
            format!(
                "the body of the request was in an unknown format - accepted media types include: {supported}; got {content_type:?}"
            ),
        )
    }

    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            Reason::RequestEntityTooLarge,
            format!("Request entity too large: limit is {limit}"),
        )
    }

    /// 410 for a watch or list from a compacted resourceVersion.
    pub fn gone(message: impl Into<String>) -> Self {
        Self::new(410, Reason::Expired, message)
    }

    pub fn internal(message: impl fmt::Display) -> Self {
        Self::new(
            500,
            Reason::InternalError,
            format!("Internal error occurred: {message}"),
        )
    }

    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, Reason::ServiceUnavailable, message).with_retry_after(1)
    }

    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(504, Reason::Timeout, message).with_retry_after(1)
    }

    pub fn too_many_requests(message: impl Into<String>) -> Self {
        Self::new(429, Reason::TooManyRequests, message).with_retry_after(1)
    }

    /// The `Status` object as JSON.
    pub fn to_status(&self) -> Value {
        let d = self.details.as_deref();
        if let Some(raw) = d.and_then(|d| d.raw.as_ref()) {
            return raw.clone();
        }
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason.as_str(),
            "code": self.code,
        });
        let mut details = serde_json::Map::new();
        let empty = Details::default();
        let d = d.unwrap_or(&empty);
        if let Some(n) = &d.name {
            details.insert("name".into(), json!(n));
        }
        if let Some(g) = &d.group {
            details.insert("group".into(), json!(g));
        }
        if let Some(k) = &d.kind {
            details.insert("kind".into(), json!(k));
        }
        if !d.causes.is_empty() {
            details.insert(
                "causes".into(),
                Value::Array(
                    d.causes
                        .iter()
                        .map(
                            |c| json!({"reason": c.reason, "message": c.message, "field": c.field}),
                        )
                        .collect(),
                ),
            );
        }
        if let Some(r) = d.retry_after_seconds {
            details.insert("retryAfterSeconds".into(), json!(r));
        }
        if !details.is_empty() {
            status["details"] = Value::Object(details);
        }
        status
    }
}

/// The `Status` a successful delete of a collection or an object returns when no object is
/// returned.
pub fn success_status(name: &str, group: &str, kind: &str, uid: Option<&str>) -> Value {
    let mut details = json!({"name": name, "group": group, "kind": kind});
    if let Some(uid) = uid {
        details["uid"] = json!(uid);
    }
    json!({
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "details": details,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_error_messages_match_upstream() {
        let e = FieldError::invalid(
            "metadata.name",
            "Foo",
            "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters",
        );
        assert_eq!(
            e.to_string(),
            "metadata.name: Invalid value: \"Foo\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters"
        );
        assert_eq!(
            FieldError::required("spec.selector", "").to_string(),
            "spec.selector: Required value"
        );
        assert_eq!(
            FieldError::not_supported("spec.restartPolicy", "Sometimes", &["Always", "Never"])
                .to_string(),
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"Never\""
        );
        assert_eq!(
            FieldError::invalid("spec.replicas", -1, "must be greater than or equal to 0")
                .to_string(),
            "spec.replicas: Invalid value: -1: must be greater than or equal to 0"
        );
    }

    #[test]
    fn invalid_status() {
        let errs = [
            FieldError::required("spec.selector", ""),
            FieldError::required("spec.template.metadata.labels", ""),
        ];
        let e = ApiError::invalid("apps", "Deployment", "web", &errs);
        assert_eq!(e.code, 422);
        assert_eq!(
            e.message,
            "Deployment.apps \"web\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: Required value]"
        );
        let s = e.to_status();
        assert_eq!(s["details"]["causes"][0]["reason"], "FieldValueRequired");
        assert_eq!(s["details"]["causes"][0]["field"], "spec.selector");
        assert_eq!(s["details"]["kind"], "Deployment");
    }

    #[test]
    fn not_found_status() {
        let e = ApiError::not_found(
            GroupResource {
                group: "apps",
                resource: "deployments",
            },
            "web",
        );
        assert_eq!(e.message, "deployments.apps \"web\" not found");
        let s = e.to_status();
        assert_eq!(s["code"], 404);
        assert_eq!(s["reason"], "NotFound");
        assert_eq!(s["details"]["kind"], "deployments");
        let c = ApiError::conflict(
            GroupResource {
                group: "",
                resource: "pods",
            },
            "p",
            ApiError::MODIFIED,
        );
        assert_eq!(
            c.message,
            "Operation cannot be fulfilled on pods \"p\": the object has been modified; please apply your changes to the latest version and try again"
        );
    }
}
