//! `admissionregistration.k8s.io/v1alpha1` `InitializerConfiguration` and
//! `metadata.initializers`: upstream's alpha initializers (Kubernetes 1.7–1.13), served again
//! as the seeds describe. `k8s-openapi` no longer has these types, so they are defined here.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Which initializers run on which resources.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InitializerConfiguration {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initializers: Option<Vec<Initializer>>,
}

/// One initializer and the resources it initializes.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Initializer {
    #[serde(default)]
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rules: Option<Vec<Rule>>,
}

/// Resources an initializer applies to (`*` matches everything in its list).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_groups: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_versions: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Vec<String>>,
}

fn listed(list: &Option<Vec<String>>, value: &str) -> bool {
    list.as_ref()
        .is_some_and(|l| l.iter().any(|x| x == "*" || x == value))
}

impl Rule {
    /// Whether the rule covers `group/version` `resource` (a plural, or
    /// `plural/subresource` for subresources).
    pub fn matches(&self, group: &str, version: &str, resource: &str) -> bool {
        listed(&self.api_groups, group)
            && listed(&self.api_versions, version)
            && listed(&self.resources, resource)
    }
}

/// The pending initializer names of an object (`metadata.initializers.pending[].name`).
pub fn pending(obj: &Value) -> Vec<String> {
    obj["metadata"]["initializers"]["pending"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|i| i["name"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Whether an object still waits for initializers (pending ones, or a result).
pub fn is_uninitialized(obj: &Value) -> bool {
    !pending(obj).is_empty()
}

/// The failure an initializer recorded (`metadata.initializers.result`, a `Status` with
/// `status: Failure`).
pub fn failure(obj: &Value) -> Option<&Value> {
    obj["metadata"]["initializers"]["result"]
        .as_object()
        .filter(|r| r.get("status").and_then(Value::as_str) == Some("Failure"))
        .map(|_| &obj["metadata"]["initializers"]["result"])
}

/// The names an initializer configuration's `initializers` must have: fully qualified (at
/// least three dot-separated DNS labels), as upstream validated them.
pub fn validate_name(name: &str) -> Option<String> {
    if name.split('.').count() < 3 {
        return Some(
            "should be a domain with at least three segments separated by dots".to_string(),
        );
    }
    let errs = crate::validation::is_dns1123_subdomain(name);
    (!errs.is_empty()).then(|| errs.join(", "))
}
