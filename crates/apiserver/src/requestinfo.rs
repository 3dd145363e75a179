//! What a request is about, derived from its method, path and query as upstream's
//! `RequestInfoFactory` does: resource requests (`/api/v1/namespaces/ns/pods/name/status`)
//! get a verb, group, version, namespace, resource, name and subresource; everything else
//! is a non-resource request.

use http::Method;

/// The parsed request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RequestInfo {
    pub is_resource_request: bool,
    /// The path as received.
    pub path: String,
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`
    /// for resources; the lower-case method for other paths.
    pub verb: String,
    /// `api` or `apis`.
    pub api_prefix: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
    /// Path segments after the API version (and namespace).
    pub parts: Vec<String>,
    /// The raw `fieldSelector` query parameter (for the Node authorizer).
    pub field_selector: String,
}

/// Subresources of a namespace that do not start a namespaced path
/// (`/api/v1/namespaces/foo/status` is the namespace foo's status).
const NAMESPACE_SUBRESOURCES: &[&str] = &["status", "finalize"];

/// Whether a boolean query parameter value means true, as upstream decodes query
/// parameters (`runtime.Convert_Slice_string_To_bool`): everything but `0` and `false` (in
/// any case) is true, the empty value included.
pub fn truthy(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

impl RequestInfo {
    /// Parses a request. `query` is the decoded query parameters.
    pub fn parse(method: &Method, path: &str, query: &[(String, String)]) -> RequestInfo {
        let mut info = RequestInfo {
            path: path.to_string(),
            verb: method.as_str().to_ascii_lowercase(),
            field_selector: query
                .iter()
                .find(|(k, _)| k == "fieldSelector")
                .map(|(_, v)| v.clone())
                .unwrap_or_default(),
            ..Default::default()
        };
        let trimmed = path.trim_matches('/');
        let mut parts: Vec<String> = if trimmed.is_empty() {
            Vec::new()
        } else {
            trimmed.split('/').map(str::to_string).collect()
        };
        if parts.len() < 3 {
            // Not a resource request: `/api`, `/apis`, `/apis/apps`, `/healthz`, ...
            return info;
        }
        match parts[0].as_str() {
            "api" => {
                info.api_prefix = parts.remove(0);
                info.api_version = parts.remove(0);
            }
            "apis" => {
                if parts.len() < 4 {
                    return info;
                }
                info.api_prefix = parts.remove(0);
                info.api_group = parts.remove(0);
                info.api_version = parts.remove(0);
            }
            _ => return info,
        }
        info.is_resource_request = true;

        // The deprecated `/watch/` path prefix.
        let mut legacy_watch = false;
        if parts.first().is_some_and(|p| p == "watch") {
            parts.remove(0);
            legacy_watch = true;
        }
        info.verb = match *method {
            Method::POST => "create",
            Method::GET | Method::HEAD => "get",
            Method::PUT => "update",
            Method::PATCH => "patch",
            Method::DELETE => "delete",
            _ => "",
        }
        .to_string();
        if legacy_watch {
            info.verb = "watch".to_string();
        }

        if parts.first().is_some_and(|p| p == "namespaces") && parts.len() > 1 {
            info.namespace = parts[1].clone();
            if parts.len() > 2 && !NAMESPACE_SUBRESOURCES.contains(&parts[2].as_str()) {
                parts.drain(..2);
            }
        }
        info.parts = parts.clone();
        match parts.len() {
            0 => {}
            1 => info.resource = parts[0].clone(),
            2 => {
                info.resource = parts[0].clone();
                info.name = parts[1].clone();
            }
            _ => {
                info.resource = parts[0].clone();
                info.name = parts[1].clone();
                info.subresource = parts[2].clone();
            }
        }

        if info.name.is_empty() && info.verb == "get" {
            let watch = query
                .iter()
                .find(|(k, _)| k == "watch")
                .is_some_and(|(_, v)| truthy(v));
            info.verb = if watch { "watch" } else { "list" }.to_string();
        }
        if info.name.is_empty() && info.verb == "delete" {
            info.verb = "deletecollection".to_string();
        }
        // A list or watch narrowed to one name by a field selector is about that name.
        if matches!(info.verb.as_str(), "list" | "watch")
            && let Some((_, sel)) = query.iter().find(|(k, _)| k == "fieldSelector")
        {
            for term in sel.split(',') {
                if let Some(name) = term
                    .strip_prefix("metadata.name=")
                    .or_else(|| term.strip_prefix("metadata.name=="))
                {
                    info.name = name.to_string();
                }
            }
        }
        info
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(method: Method, path: &str, query: &[(&str, &str)]) -> RequestInfo {
        let q: Vec<(String, String)> = query
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        RequestInfo::parse(&method, path, &q)
    }

    #[test]
    fn resource_requests() {
        let r = parse(Method::GET, "/api/v1/namespaces/default/pods/nginx", &[]);
        assert!(r.is_resource_request);
        assert_eq!(
            (
                r.verb.as_str(),
                r.namespace.as_str(),
                r.resource.as_str(),
                r.name.as_str()
            ),
            ("get", "default", "pods", "nginx")
        );
        let r = parse(
            Method::GET,
            "/apis/apps/v1/namespaces/default/deployments",
            &[],
        );
        assert_eq!(
            (r.api_group.as_str(), r.verb.as_str(), r.resource.as_str()),
            ("apps", "list", "deployments")
        );
        let r = parse(
            Method::GET,
            "/apis/apps/v1/deployments",
            &[("watch", "true")],
        );
        assert_eq!((r.verb.as_str(), r.namespace.as_str()), ("watch", ""));
        let r = parse(Method::GET, "/api/v1/watch/namespaces/ns/pods", &[]);
        assert_eq!(
            (r.verb.as_str(), r.resource.as_str(), r.namespace.as_str()),
            ("watch", "pods", "ns")
        );
        let r = parse(Method::PUT, "/api/v1/namespaces/ns/pods/p/status", &[]);
        assert_eq!(
            (r.verb.as_str(), r.subresource.as_str()),
            ("update", "status")
        );
        let r = parse(Method::DELETE, "/api/v1/namespaces/ns/configmaps", &[]);
        assert_eq!(r.verb, "deletecollection");
        let r = parse(Method::PUT, "/api/v1/namespaces/foo/finalize", &[]);
        assert_eq!(
            (
                r.resource.as_str(),
                r.name.as_str(),
                r.subresource.as_str(),
                r.namespace.as_str()
            ),
            ("namespaces", "foo", "finalize", "foo")
        );
        let r = parse(Method::GET, "/api/v1/namespaces/foo", &[]);
        assert_eq!(
            (r.resource.as_str(), r.name.as_str(), r.namespace.as_str()),
            ("namespaces", "foo", "foo")
        );
        let r = parse(Method::GET, "/api/v1/namespaces", &[]);
        assert_eq!(
            (r.resource.as_str(), r.verb.as_str()),
            ("namespaces", "list")
        );
        let r = parse(
            Method::GET,
            "/api/v1/pods",
            &[("fieldSelector", "metadata.name=x")],
        );
        assert_eq!(r.name, "x");
    }

    #[test]
    fn non_resource_requests() {
        for p in [
            "/",
            "/api",
            "/apis",
            "/apis/apps",
            "/healthz",
            "/openapi/v2",
            "/apis/apps/v1",
        ] {
            let r = parse(Method::GET, p, &[]);
            assert!(!r.is_resource_request, "{p}");
            assert_eq!(r.verb, "get");
        }
        let r = parse(Method::GET, "/api/v1", &[]);
        assert!(!r.is_resource_request);
    }
}
