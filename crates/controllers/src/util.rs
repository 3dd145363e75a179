//! Small helpers the controllers share: a poison-tolerant lock, an API error's message,
//! RFC 3339 times from milliseconds.

use std::sync::{Mutex, MutexGuard, PoisonError};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// Locks `m`, going on with the data of a poisoned lock (no critical section leaves it
/// half-written).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The message of an API error as the server wrote it (what upstream's events and
/// conditions quote), or the text of any other error.
pub(crate) fn api_message(e: &kube::Error) -> String {
    match e {
        kube::Error::Api(st) => st.message.clone(),
        other => other.to_string(),
    }
}

/// Whether an object may be claimed by the owner with uid `owner_uid` in `ns`: it is in
/// that namespace and has no controller, or that owner as its controller.
pub(crate) fn claimable(meta: &ObjectMeta, ns: &str, owner_uid: &str) -> bool {
    meta.namespace.as_deref() == Some(ns)
        && meta
            .owner_references
            .iter()
            .flatten()
            .find(|o| o.controller == Some(true))
            .is_none_or(|o| o.uid == owner_uid)
}

/// An RFC 3339 time (whole seconds, UTC) from milliseconds since the epoch.
pub fn rfc3339(ms: i64) -> String {
    jiff::Timestamp::from_millisecond(ms)
        .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
mod tests {
    use super::*;

    #[test]
    fn times_and_locks() {
        assert_eq!(rfc3339(1_709_287_620_500), "2024-03-01T10:07:00Z");
        let m = Mutex::new(1);
        *lock(&m) += 1;
        assert_eq!(*lock(&m), 2);
    }
}
