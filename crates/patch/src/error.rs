//! The errors of all three patch formats, with the HTTP status upstream's API server answers
//! each with (`k8s.io/apiserver/pkg/endpoints/handlers/patch.go`).

use api::status::Reason;
use serde_json::{Value, json};

/// Why a patch could not be applied. Messages are upstream's, word for word, where upstream
/// has a specific one; each variant documents the response upstream's API server sends.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PatchError {
    /// A patch nests deeper than [`crate::MAX_DEPTH`] levels, or a JSON patch operation
    /// would make the document do so. Upstream has no such limit below Go's JSON decoder's
    /// 10000 levels; we answer 400 BadRequest, as upstream answers patches it cannot decode.
    #[error("the patch nests deeper than {limit} levels")]
    TooDeep {
        /// The limit ([`crate::MAX_DEPTH`]).
        limit: usize,
    },

    /// A JSON patch that does not decode as a list of operations, with Go's decoder's
    /// message (`json: cannot unmarshal object into Go value of type jsonpatch.Patch`).
    /// 400 BadRequest.
    #[error("{0}")]
    JsonPatchDecode(String),

    /// A JSON patch with more operations than upstream allows. 413 RequestEntityTooLarge,
    /// message `Request entity too large: <this message>`.
    #[error("The allowed maximum operations in a JSON patch is {max}, got {count}")]
    TooManyOperations {
        /// The limit (10000).
        max: usize,
        /// The number of operations in the patch.
        count: usize,
    },

    /// A JSON patch operation that does not apply (a missing path, a failed `test`, a bad
    /// array index, ...), with evanphx/json-patch's message. 422 Invalid; upstream's Status
    /// message is then the fixed `the server rejected our request due to an error in our
    /// request` and `details` is `{}` (see [`PatchError::to_status`]).
    #[error("{0}")]
    JsonPatchApply(String),

    /// A JSON merge patch that is `null`, a string, a number or a boolean. 400 BadRequest.
    #[error("Invalid JSON Patch")]
    InvalidMergePatch,

    /// A JSON merge patch applied to `null`. Upstream returns this error as is: 500 with
    /// reason `""` (never happens for stored objects).
    #[error("Invalid JSON Document")]
    InvalidMergeDocument,

    /// A strategic merge patch body that is not a JSON object, with the decoder's message.
    /// 400 BadRequest.
    #[error("json: cannot unmarshal {found} into Go value of type map[string]interface {{}}")]
    StrategicPatchNotObject {
        /// Go's name of what was found: `array`, `string`, `number`, `bool`.
        found: &'static str,
    },

    /// The document a strategic merge patch is applied to is not an object
    /// (`mergepatch.ErrBadJSONDoc`). 400 BadRequest.
    #[error("invalid JSON document")]
    BadJsonDoc,

    /// A bad `$deleteFromPrimitiveList` directive (`mergepatch.ErrBadPatchFormatForPrimitiveList`).
    /// 400 BadRequest.
    #[error("invalid patch format of primitive list")]
    BadPatchFormatForPrimitiveList,

    /// A bad `$retainKeys` directive, or patch content outside its list
    /// (`mergepatch.ErrBadPatchFormatForRetainKeys`). 400 BadRequest.
    #[error("invalid patch format of retainKeys")]
    BadPatchFormatForRetainKeys,

    /// A bad `$setElementOrder` directive (`mergepatch.ErrBadPatchFormatForSetElementOrderList`).
    /// 400 BadRequest.
    #[error("invalid patch format of setElementOrder list")]
    BadPatchFormatForSetElementOrderList,

    /// A list of lists met while merging (`mergepatch.ErrNoListOfLists`). 422 Invalid, with
    /// the fixed message and empty `details` of [`PatchError::JsonPatchApply`].
    #[error("lists of lists are not supported")]
    NoListOfLists,

    /// Any other failure of a strategic merge patch, with upstream's message (`map: ...
    /// does not contain declared merge key: name`, `unknown patch type: ...`, `unable to find
    /// api field in struct ...`, ...). Upstream returns these errors as they are, which its
    /// API server answers with 500, reason `""` and the error text as message.
    #[error("{0}")]
    StrategicMerge(String),

    /// An input on which upstream's implementation crashes (a Go runtime panic, e.g.
    /// comparing two maps, or a `null` as the first item of a merged list). Upstream's API
    /// server then answers 500 without a Status; we refuse the patch with 500 and the panic's
    /// text instead.
    #[error("{0}")]
    UpstreamPanic(String),
}

impl PatchError {
    /// The HTTP status code upstream answers this error with.
    pub fn status_code(&self) -> u16 {
        match self {
            PatchError::TooDeep { .. }
            | PatchError::JsonPatchDecode(_)
            | PatchError::InvalidMergePatch
            | PatchError::StrategicPatchNotObject { .. }
            | PatchError::BadJsonDoc
            | PatchError::BadPatchFormatForPrimitiveList
            | PatchError::BadPatchFormatForRetainKeys
            | PatchError::BadPatchFormatForSetElementOrderList => 400,
            PatchError::TooManyOperations { .. } => 413,
            PatchError::JsonPatchApply(_) | PatchError::NoListOfLists => 422,
            PatchError::InvalidMergeDocument
            | PatchError::StrategicMerge(_)
            | PatchError::UpstreamPanic(_) => 500,
        }
    }

    /// The `reason` of upstream's Status; `None` where upstream's is empty (errors that are
    /// not API statuses, answered with 500).
    pub fn reason(&self) -> Option<Reason> {
        match self.status_code() {
            400 => Some(Reason::BadRequest),
            413 => Some(Reason::RequestEntityTooLarge),
            422 => Some(Reason::Invalid),
            _ => None,
        }
    }

    /// The `message` of upstream's Status.
    pub fn status_message(&self) -> String {
        match self.status_code() {
            413 => format!("Request entity too large: {self}"),
            422 => "the server rejected our request due to an error in our request".to_string(),
            _ => self.to_string(),
        }
    }

    /// The `Status` object upstream's API server answers with, as JSON.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.status_message(),
        });
        if let Some(obj) = status.as_object_mut() {
            if let Some(reason) = self.reason() {
                obj.insert("reason".into(), json!(reason.as_str()));
            }
            if self.status_code() == 422 {
                obj.insert("details".into(), json!({}));
            }
            obj.insert("code".into(), json!(self.status_code()));
        }
        status
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let e = PatchError::BadPatchFormatForRetainKeys;
        assert_eq!(
            e.to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "invalid patch format of retainKeys", "reason": "BadRequest",
                   "code": 400})
        );
        let e = PatchError::JsonPatchApply("testing value /a failed: test failed".into());
        assert_eq!(
            e.to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "the server rejected our request due to an error in our request",
                   "reason": "Invalid", "details": {}, "code": 422})
        );
        let e = PatchError::StrategicMerge(
            "map: map[image:x] does not contain declared merge key: name".into(),
        );
        assert_eq!(
            e.to_status(),
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "message": "map: map[image:x] does not contain declared merge key: name",
                   "code": 500})
        );
        let e = PatchError::TooManyOperations {
            max: 10000,
            count: 10001,
        };
        assert_eq!(e.status_code(), 413);
        assert_eq!(
            e.status_message(),
            "Request entity too large: The allowed maximum operations in a JSON patch is 10000, got 10001"
        );
        assert_eq!(PatchError::NoListOfLists.status_code(), 422);
        assert_eq!(
            PatchError::StrategicPatchNotObject { found: "array" }.to_string(),
            "json: cannot unmarshal array into Go value of type map[string]interface {}"
        );
    }
}
