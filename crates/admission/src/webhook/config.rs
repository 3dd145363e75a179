//! Webhook configurations as the dispatchers read them (upstream's `WebhookAccessor` over
//! the merged, name-sorted configurations of `configuration/*_webhook_manager.go`), and
//! [`Source`], the parsed configurations cached by the configurations' resourceVersions.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use api::ApiError;
use api::selector::LabelSelector;
use base64::Engine;
use serde_json::Value;

use crate::Cluster;

const GROUP: &str = "admissionregistration.k8s.io";

/// One `rules[]` entry (`RuleWithOperations`), with the defaulted scope.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    /// `pods`, `pods/status`, `*`, `*/*`, `pods/*`, `*/status`.
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

/// `clientConfig` without its `caBundle`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Client {
    /// `clientConfig.url`.
    Url(String),
    /// `clientConfig.service`.
    Service {
        namespace: String,
        name: String,
        path: String,
        port: u16,
    },
}

/// One webhook of a configuration.
#[derive(Clone, Debug)]
pub struct Hook {
    /// Unique among the webhooks of one kind: `<configuration>/<name>/<n>` (upstream's
    /// accessor UID; `n` counts webhooks of the same name in the configuration).
    pub uid: String,
    pub name: String,
    /// The configuration's `metadata.name`.
    pub configuration: String,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore` (the default is `Fail`).
    pub ignore_failures: bool,
    /// `matchPolicy: Equivalent` (the default).
    pub equivalent: bool,
    /// The parsed `namespaceSelector` (an unparsable one is an error when the hook matches).
    pub namespace_selector: Result<LabelSelector, String>,
    pub object_selector: Result<LabelSelector, String>,
    /// `sideEffects` (`None`, `NoneOnDryRun`, `Some`, `Unknown`), if set.
    pub side_effects: Option<String>,
    /// `timeoutSeconds` (default 10).
    pub timeout: Duration,
    pub review_versions: Vec<String>,
    pub client: Client,
    /// The decoded `clientConfig.caBundle` (PEM); empty for the system's roots.
    pub ca_bundle: Vec<u8>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks only).
    pub reinvoke_if_needed: bool,
    /// The `matchConditions` expressions (CEL), in order.
    pub match_conditions: Vec<String>,
}

/// The strings of the list `v[key]` (non-strings skipped).
pub(crate) fn strings(v: &Value, key: &str) -> Vec<String> {
    v[key]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn str_of<'a>(v: &'a Value, key: &str) -> Option<&'a str> {
    v.get(key).and_then(Value::as_str)
}

/// A webhook selector: absent or `null` (never stored: defaulting sets `{}`) selects
/// everything, as the defaulted `{}` does.
fn selector(v: Option<&Value>) -> Result<LabelSelector, String> {
    match v {
        None | Some(Value::Null) => Ok(LabelSelector::everything()),
        Some(s) => LabelSelector::from_label_selector(s).map_err(|e| e.to_string()),
    }
}

fn hook(configuration: &str, uid: String, w: &Value) -> Hook {
    let cc = w.get("clientConfig").unwrap_or(&Value::Null);
    let client = match (
        str_of(cc, "url"),
        cc.get("service").filter(|s| !s.is_null()),
    ) {
        (Some(url), _) => Client::Url(url.to_string()),
        (None, Some(svc)) => Client::Service {
            namespace: str_of(svc, "namespace").unwrap_or_default().to_string(),
            name: str_of(svc, "name").unwrap_or_default().to_string(),
            path: str_of(svc, "path").unwrap_or_default().to_string(),
            port: svc
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        },
        (None, None) => Client::Url(String::new()),
    };
    let ca_bundle = str_of(cc, "caBundle")
        .and_then(|b| base64::engine::general_purpose::STANDARD.decode(b).ok())
        .unwrap_or_default();
    let rules = w
        .get("rules")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| Rule {
            operations: strings(r, "operations"),
            api_groups: strings(r, "apiGroups"),
            api_versions: strings(r, "apiVersions"),
            resources: strings(r, "resources"),
            scope: str_of(r, "scope").unwrap_or("*").to_string(),
        })
        .collect();
    Hook {
        uid,
        name: str_of(w, "name").unwrap_or_default().to_string(),
        configuration: configuration.to_string(),
        rules,
        ignore_failures: str_of(w, "failurePolicy") == Some("Ignore"),
        equivalent: str_of(w, "matchPolicy") != Some("Exact"),
        namespace_selector: selector(w.get("namespaceSelector")),
        object_selector: selector(w.get("objectSelector")),
        side_effects: str_of(w, "sideEffects").map(str::to_string),
        timeout: Duration::from_secs(
            w.get("timeoutSeconds")
                .and_then(Value::as_u64)
                .unwrap_or(10)
                .clamp(1, 30),
        ),
        review_versions: strings(w, "admissionReviewVersions"),
        client,
        ca_bundle,
        reinvoke_if_needed: str_of(w, "reinvocationPolicy") == Some("IfNeeded"),
        match_conditions: w
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("expression").and_then(Value::as_str))
            .map(str::to_string)
            .collect(),
    }
}

/// The webhooks of `configurations`, configurations sorted by name, webhooks in order.
pub fn hooks_of(configurations: &[impl std::borrow::Borrow<Value>]) -> Vec<Hook> {
    let mut sorted: Vec<&Value> = configurations.iter().map(|c| c.borrow()).collect();
    sorted.sort_by_key(|c| api::meta::name(c).unwrap_or_default().to_string());
    let mut out = Vec::new();
    for c in sorted {
        let cname = api::meta::name(c).unwrap_or_default();
        let mut seen: std::collections::HashMap<&str, usize> = std::collections::HashMap::new();
        for w in c
            .get("webhooks")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let name = str_of(w, "name").unwrap_or_default();
            let n = seen.entry(name).or_default();
            out.push(hook(cname, format!("{cname}/{name}/{n}"), w));
            *n += 1;
        }
    }
    out
}

/// The names and resourceVersions of the configurations the hooks were parsed from.
type Key = Vec<(String, String)>;

/// The webhooks of one configuration kind, re-parsed only when a configuration changed
/// (the names and resourceVersions of the listed configurations are the cache key).
pub struct Source {
    plural: &'static str,
    state: Mutex<Option<(Key, Arc<Vec<Hook>>)>>,
}

impl Source {
    /// The mutating (`mutatingwebhookconfigurations`) or validating webhooks.
    pub fn new(mutating: bool) -> Source {
        Source {
            plural: if mutating {
                "mutatingwebhookconfigurations"
            } else {
                "validatingwebhookconfigurations"
            },
            state: Mutex::new(None),
        }
    }

    /// The current webhooks.
    pub async fn hooks(&self, cluster: &dyn Cluster) -> Result<Arc<Vec<Hook>>, ApiError> {
        let configurations = cluster.list(GROUP, self.plural, "").await?;
        let mut key: Key = configurations
            .iter()
            .map(|c| {
                (
                    api::meta::name(c).unwrap_or_default().to_string(),
                    api::meta::resource_version(c)
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect();
        key.sort();
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, hooks)) = state.as_ref()
            && *k == key
        {
            return Ok(Arc::clone(hooks));
        }
        let hooks = Arc::new(hooks_of(&configurations));
        *state = Some((key, Arc::clone(&hooks)));
        Ok(hooks)
    }
}
