//! Who may call the kubelet API, as upstream's kubelet (`pkg/kubelet/server/auth.go`,
//! webhook authentication and authorization): a client certificate signed by the client
//! CA, else a bearer token checked with a `TokenReview`; then a `SubjectAccessReview` for
//! the `nodes/<subresource>` the path maps to ([`runtime::serving::Reviewer`], with
//! upstream's caches).

pub use runtime::serving::{Reviewer, User, user_from_cert};

/// The authorization attributes of a kubelet API request: verb and `nodes` subresource.
pub fn request_attributes(method: &http::Method, path: &str) -> (&'static str, &'static str) {
    let verb = match *method {
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "get",
    };
    let first = path.trim_start_matches('/').split('/').next().unwrap_or("");
    let sub = match first {
        "stats" => "stats",
        "metrics" => "metrics",
        "logs" => "log",
        "spec" => "spec",
        "checkpoint" => "checkpoint",
        "configz" => "configz",
        "healthz" => "healthz",
        "pods" => "pods",
        _ => "proxy",
    };
    (verb, sub)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

    use super::*;

    #[test]
    fn attributes_as_upstream() {
        use http::Method;
        assert_eq!(
            request_attributes(&Method::GET, "/metrics"),
            ("get", "metrics")
        );
        assert_eq!(
            request_attributes(&Method::GET, "/containerLogs/ns/p/c"),
            ("get", "proxy")
        );
        assert_eq!(
            request_attributes(&Method::POST, "/exec/ns/p/c"),
            ("create", "proxy")
        );
        assert_eq!(
            request_attributes(&Method::GET, "/stats/summary"),
            ("get", "stats")
        );
        assert_eq!(request_attributes(&Method::GET, "/pods"), ("get", "pods"));
        assert_eq!(request_attributes(&Method::GET, "/logs/"), ("get", "log"));
    }
}
