//! `PodSecurity` (upstream's `k8s.io/pod-security-admission` as the in-tree plugin): the
//! Pod Security Standards of [`checks`], enforced, audited and warned about per namespace
//! from its labels (`pod-security.kubernetes.io/<mode>[-version]`), with defaults and
//! exemptions from a `PodSecurityConfiguration` in the admission configuration file.
//!
//! Pods are refused (403) when they violate the `enforce` level; `warn` adds a `Warning`
//! header, `audit` an annotation on the request's audit event. Workload resources
//! (Deployments, Jobs, …) are only warned and audited about, on their pod template.
//! Namespace labels are validated (422), and raising a namespace's `enforce` level warns
//! about the pods already there that would now be refused.

pub mod checks;

use std::collections::{BTreeMap, HashSet};

use api::ApiError;
use api::status::FieldError;
use api::status::GroupResource;
use serde_json::Value;

use self::checks::{Level, Violation};
use crate::chain::ConfigError;
use crate::{Attributes, Cluster, Operation, Plugin};

const LABEL_PREFIX: &str = "pod-security.kubernetes.io/";
const ANNOTATION_PREFIX: &str = "pod-security.kubernetes.io/";
const MODES: [&str; 3] = ["enforce", "audit", "warn"];

/// How many existing pods a namespace-label change checks at most (upstream's limit).
const MAX_EXISTING_PODS: usize = 3000;

/// A policy version: `latest` or `v1.<minor>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Version {
    Latest,
    Minor(u32),
}

impl Version {
    pub fn parse(s: &str) -> Option<Version> {
        if s == "latest" {
            return Some(Version::Latest);
        }
        let minor = s.strip_prefix("v1.")?;
        let ok = !minor.is_empty()
            && minor.bytes().all(|b| b.is_ascii_digit())
            && (minor == "0" || !minor.starts_with('0'));
        ok.then(|| minor.parse().ok().map(Version::Minor)).flatten()
    }

    /// The version the checks evaluate at.
    fn evaluated(self) -> u32 {
        match self {
            Version::Latest => checks::MAX_VERSION,
            Version::Minor(m) => m.min(checks::MAX_VERSION),
        }
    }
}

impl std::fmt::Display for Version {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Version::Latest => f.write_str("latest"),
            Version::Minor(m) => write!(f, "v1.{m}"),
        }
    }
}

/// A level at a version (`restricted:latest`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelVersion {
    pub level: Level,
    pub version: Version,
}

impl std::fmt::Display for LevelVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.level.as_str(), self.version)
    }
}

impl LevelVersion {
    const PRIVILEGED: LevelVersion = LevelVersion {
        level: Level::Privileged,
        version: Version::Latest,
    };

    fn evaluate(self, metadata: &Value, spec: &Value) -> Vec<Violation> {
        checks::evaluate(self.level, self.version.evaluated(), metadata, spec)
    }

    /// Whether two level-versions run the same checks.
    fn equivalent(self, other: LevelVersion) -> bool {
        self.level == other.level
            && (self.level == Level::Privileged
                || self.version.evaluated() == other.version.evaluated())
    }
}

/// The three modes of a namespace's policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub enforce: LevelVersion,
    pub audit: LevelVersion,
    pub warn: LevelVersion,
}

impl Policy {
    const PRIVILEGED: Policy = Policy {
        enforce: LevelVersion::PRIVILEGED,
        audit: LevelVersion::PRIVILEGED,
        warn: LevelVersion::PRIVILEGED,
    };

    fn mode(&self, mode: &str) -> LevelVersion {
        match mode {
            "enforce" => self.enforce,
            "audit" => self.audit,
            _ => self.warn,
        }
    }

    fn mode_mut(&mut self, mode: &str) -> &mut LevelVersion {
        match mode {
            "enforce" => &mut self.enforce,
            "audit" => &mut self.audit,
            _ => &mut self.warn,
        }
    }

    fn fully_privileged(&self) -> bool {
        MODES
            .iter()
            .all(|m| self.mode(m).level == Level::Privileged)
    }
}

fn label_errors_field(label: &str) -> String {
    format!("metadata.labels[{label}]")
}

/// Upstream's `PolicyToEvaluate`: the namespace's policy from its labels over `defaults`,
/// with the errors of invalid labels (an invalid enforce level fails closed to
/// `restricted`, invalid audit and warn levels open to `privileged`, invalid versions are
/// `latest`).
pub fn policy_from_labels(labels: &Value, defaults: &Policy) -> (Policy, Vec<FieldError>) {
    let mut policy = *defaults;
    let mut errs = Vec::new();
    let label = |key: &str| labels[key].as_str();
    for mode in MODES {
        let level_key = format!("{LABEL_PREFIX}{mode}");
        if let Some(v) = label(&level_key) {
            match Level::parse(v) {
                Some(l) => policy.mode_mut(mode).level = l,
                None => {
                    policy.mode_mut(mode).level = if mode == "enforce" {
                        Level::Restricted
                    } else {
                        Level::Privileged
                    };
                    errs.push(FieldError::invalid(
                        label_errors_field(&level_key),
                        v,
                        "must be one of privileged, baseline, restricted",
                    ));
                }
            }
        }
        let version_key = format!("{LABEL_PREFIX}{mode}-version");
        if let Some(v) = label(&version_key) {
            match Version::parse(v) {
                Some(ver) => policy.mode_mut(mode).version = ver,
                None => {
                    policy.mode_mut(mode).version = Version::Latest;
                    errs.push(FieldError::invalid(
                        label_errors_field(&version_key),
                        v,
                        "must be \"latest\" or \"v1.x\"",
                    ));
                }
            }
        }
    }
    // Warn defaults to a stricter enforce when the warn level is not labelled.
    let enforce_label_valid = label(&format!("{LABEL_PREFIX}enforce"))
        .and_then(Level::parse)
        .is_some();
    if label(&format!("{LABEL_PREFIX}warn")).is_none()
        && enforce_label_valid
        && policy.enforce.level > policy.warn.level
    {
        policy.warn.level = policy.enforce.level;
        if label(&format!("{LABEL_PREFIX}warn-version")).is_none() {
            policy.warn.version = policy.enforce.version;
        }
    }
    (policy, errs)
}

/// The `PodSecurityConfiguration` of the plugin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodSecurity {
    pub defaults: Policy,
    pub exempt_usernames: Vec<String>,
    pub exempt_namespaces: Vec<String>,
    pub exempt_runtime_classes: Vec<String>,
}

impl Default for PodSecurity {
    fn default() -> Self {
        PodSecurity {
            defaults: Policy::PRIVILEGED,
            exempt_usernames: Vec::new(),
            exempt_namespaces: Vec::new(),
            exempt_runtime_classes: Vec::new(),
        }
    }
}

fn config_error(reason: impl Into<String>) -> ConfigError {
    ConfigError::Plugin {
        name: "PodSecurity".into(),
        reason: reason.into(),
    }
}

fn string_list(v: &Value, field: &str) -> Result<Vec<String>, ConfigError> {
    let Some(items) = v.as_array() else {
        return if v.is_null() {
            Ok(Vec::new())
        } else {
            Err(config_error(format!("{field}: must be a list of strings")))
        };
    };
    let mut out: Vec<String> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let s = item
            .as_str()
            .ok_or_else(|| config_error(format!("{field}[{i}]: must be a string")))?;
        if out.iter().any(|o| o == s) {
            return Err(config_error(format!(
                "{field}[{i}]: Duplicate value: {s:?}"
            )));
        }
        out.push(s.to_string());
    }
    Ok(out)
}

impl PodSecurity {
    /// Parses and checks a `PodSecurityConfiguration` (`pod-security.admission.config.k8s.io`
    /// v1, v1beta1 or v1alpha1).
    pub fn from_config(config: Option<&Value>) -> Result<PodSecurity, ConfigError> {
        let Some(c) = config else {
            return Ok(PodSecurity::default());
        };
        let api_version = c["apiVersion"].as_str().unwrap_or_default();
        let known = ["v1", "v1beta1", "v1alpha1"]
            .iter()
            .any(|v| api_version == format!("pod-security.admission.config.k8s.io/{v}"));
        if !known || c["kind"] != "PodSecurityConfiguration" {
            return Err(config_error(format!(
                "expected pod-security.admission.config.k8s.io PodSecurityConfiguration, got \
                 {api_version}, Kind={}",
                c["kind"].as_str().unwrap_or_default()
            )));
        }
        let mut defaults = Policy::PRIVILEGED;
        for mode in MODES {
            if let Some(v) = c["defaults"][mode].as_str().filter(|s| !s.is_empty()) {
                defaults.mode_mut(mode).level = Level::parse(v).ok_or_else(|| {
                    config_error(format!(
                        "defaults.{mode}: Invalid value: {v:?}: must be one of privileged, \
                         baseline, restricted"
                    ))
                })?;
            }
            let key = format!("{mode}-version");
            if let Some(v) = c["defaults"][key.as_str()]
                .as_str()
                .filter(|s| !s.is_empty())
            {
                defaults.mode_mut(mode).version = Version::parse(v).ok_or_else(|| {
                    config_error(format!(
                        "defaults.{key}: Invalid value: {v:?}: must be \"latest\" or \"v1.x\""
                    ))
                })?;
            }
        }
        let ex = &c["exemptions"];
        let exempt_usernames = string_list(&ex["usernames"], "exemptions.usernames")?;
        if let Some(i) = exempt_usernames.iter().position(String::is_empty) {
            return Err(config_error(format!(
                "exemptions.usernames[{i}]: Invalid value: \"\": username must not be empty"
            )));
        }
        let exempt_namespaces = string_list(&ex["namespaces"], "exemptions.namespaces")?;
        for (i, n) in exempt_namespaces.iter().enumerate() {
            if let Some(e) = api::validation::names::is_dns1123_label(n).first() {
                return Err(config_error(format!(
                    "exemptions.namespaces[{i}]: Invalid value: {n:?}: {e}"
                )));
            }
        }
        let exempt_runtime_classes =
            string_list(&ex["runtimeClasses"], "exemptions.runtimeClasses")?;
        for (i, n) in exempt_runtime_classes.iter().enumerate() {
            if let Some(e) = api::validation::names::is_dns1123_subdomain(n).first() {
                return Err(config_error(format!(
                    "exemptions.runtimeClasses[{i}]: Invalid value: {n:?}: {e}"
                )));
            }
        }
        Ok(PodSecurity {
            defaults,
            exempt_usernames,
            exempt_namespaces,
            exempt_runtime_classes,
        })
    }

    fn exempt_namespace(&self, ns: &str) -> bool {
        !ns.is_empty() && self.exempt_namespaces.iter().any(|n| n == ns)
    }

    fn exempt_user(&self, user: &str) -> bool {
        !user.is_empty() && self.exempt_usernames.iter().any(|u| u == user)
    }

    fn exempt_runtime_class(&self, spec: &Value) -> bool {
        spec["runtimeClassName"]
            .as_str()
            .is_some_and(|rc| !rc.is_empty() && self.exempt_runtime_classes.iter().any(|e| e == rc))
    }

    /// The warning for an exempt namespace whose labels ask for a policy.
    fn exempt_namespace_warning(
        &self,
        ns: &str,
        labels: &Value,
        policy: &Policy,
    ) -> Option<String> {
        if policy.fully_privileged()
            || MODES
                .iter()
                .all(|m| policy.mode(m).equivalent(self.defaults.mode(m)))
        {
            return None;
        }
        let labelled = |m: &str| {
            labels[format!("{LABEL_PREFIX}{m}")].is_string()
                || labels[format!("{LABEL_PREFIX}{m}-version")].is_string()
        };
        let modes: Vec<String> = MODES
            .iter()
            .filter(|m| policy.mode(m).level != Level::Privileged && labelled(m))
            .map(|m| format!("{m}={}", policy.mode(m)))
            .collect();
        (!modes.is_empty()).then(|| {
            format!(
                "namespace {ns:?} is exempt from Pod Security, and the policy ({}) will be ignored",
                modes.join(", ")
            )
        })
    }

    async fn validate_namespace(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
    ) -> Result<(), ApiError> {
        if !a.subresource.is_empty() {
            return Ok(());
        }
        let Some(ns) = &a.object else {
            return Ok(());
        };
        let name = api::meta::name(ns).unwrap_or(&a.name).to_string();
        let labels = &ns["metadata"]["labels"];
        let (policy, errs) = policy_from_labels(labels, &self.defaults);
        let invalid = || ApiError::invalid("", "Namespace", &name, &errs);
        match (a.operation, &a.old_object) {
            (Operation::Update, Some(old)) => {
                let (old_policy, old_errs) =
                    policy_from_labels(&old["metadata"]["labels"], &self.defaults);
                if !errs.is_empty() && errs != old_errs {
                    return Err(invalid());
                }
                let same_version_not_stricter = policy.enforce.version
                    == old_policy.enforce.version
                    && policy.enforce.level <= old_policy.enforce.level;
                if policy.enforce == old_policy.enforce
                    || policy.enforce.level == Level::Privileged
                    || same_version_not_stricter
                {
                    return Ok(());
                }
                if self.exempt_namespace(&name) {
                    if let Some(w) = self.exempt_namespace_warning(&name, labels, &policy) {
                        a.warnings.add(w);
                    }
                    return Ok(());
                }
                for w in self
                    .check_existing_pods(&name, policy.enforce, cluster)
                    .await
                {
                    a.warnings.add(w);
                }
                Ok(())
            }
            _ => {
                if !errs.is_empty() {
                    return Err(invalid());
                }
                if self.exempt_namespace(&name)
                    && let Some(w) = self.exempt_namespace_warning(&name, labels, &policy)
                {
                    a.warnings.add(w);
                }
                Ok(())
            }
        }
    }

    /// Upstream's `EvaluatePodsInNamespace`: warnings about the pods of `ns` the new
    /// `enforce` level would refuse, grouped by their reasons.
    async fn check_existing_pods(
        &self,
        ns: &str,
        enforce: LevelVersion,
        cluster: &dyn Cluster,
    ) -> Vec<String> {
        let Ok(pods) = cluster.list("", "pods", ns).await else {
            return vec!["failed to list pods while checking new PodSecurity enforce level".into()];
        };
        // One pod per controller first, so that one big workload does not hide the rest.
        let mut first = Vec::new();
        let mut rest = Vec::new();
        let mut seen = HashSet::new();
        for p in pods
            .iter()
            .filter(|p| !self.exempt_runtime_class(&p["spec"]))
        {
            let controller = p["metadata"]["ownerReferences"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|o| o["controller"] == true)
                .and_then(|o| o["uid"].as_str());
            match controller {
                Some(uid) if !seen.insert(uid.to_string()) => rest.push(p),
                _ => first.push(p),
            }
        }
        first.extend(rest);
        let total = first.len();
        first.truncate(MAX_EXISTING_PODS);
        let mut groups: BTreeMap<String, (String, usize)> = BTreeMap::new();
        for p in &first {
            let violations = enforce.evaluate(&p["metadata"], &p["spec"]);
            if violations.is_empty() {
                continue;
            }
            let name = api::meta::name(p).unwrap_or_default().to_string();
            let g = groups
                .entry(checks::reasons(&violations))
                .or_insert_with(|| (name.clone(), 0));
            if name < g.0 {
                g.0 = name;
            }
            g.1 += 1;
        }
        let mut warnings = Vec::new();
        if first.len() < total {
            warnings.push(format!(
                "new PodSecurity enforce level only checked against the first {} of {total} existing pods",
                first.len()
            ));
        }
        if !groups.is_empty() {
            warnings.push(format!(
                "existing pods in namespace {ns:?} violate the new PodSecurity enforce level {:?}",
                enforce.to_string()
            ));
        }
        let mut lines: Vec<String> = groups
            .into_iter()
            .map(|(reasons, (pod, count))| match count {
                1 => format!("{pod}: {reasons}"),
                2 => format!("{pod} (and 1 other pod): {reasons}"),
                n => format!("{pod} (and {} other pods): {reasons}", n - 1),
            })
            .collect();
        lines.sort();
        warnings.extend(lines);
        warnings
    }

    /// Exemptions by namespace and user: the audit annotation when exempt.
    fn exempt(&self, a: &Attributes) -> bool {
        let why = if self.exempt_namespace(&a.namespace) {
            "namespace"
        } else if self.exempt_user(&a.user.name) {
            "user"
        } else {
            return false;
        };
        a.audit_annotations
            .add(format!("{ANNOTATION_PREFIX}exempt"), why);
        true
    }

    async fn validate_pod(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        const IGNORED: &[&str] = &[
            "exec",
            "attach",
            "binding",
            "eviction",
            "log",
            "portforward",
            "proxy",
            "status",
        ];
        if IGNORED.contains(&a.subresource.as_str()) || self.exempt(a) {
            return Ok(());
        }
        let ns = cluster
            .get("", "namespaces", "", &a.namespace)
            .await
            .ok()
            .flatten()
            .ok_or_else(|| {
                ApiError::internal(format!("failed to lookup namespace {:?}", a.namespace))
            })?;
        let (policy, errs) = policy_from_labels(&ns["metadata"]["labels"], &self.defaults);
        if errs.is_empty() && policy.fully_privileged() {
            a.audit_annotations.add(
                format!("{ANNOTATION_PREFIX}enforce-policy"),
                LevelVersion::PRIVILEGED.to_string(),
            );
            return Ok(());
        }
        let Some(pod) = &a.object else {
            return Ok(());
        };
        if a.operation == Operation::Update
            && let Some(old) = &a.old_object
            && !significant_pod_update(pod, old)
        {
            return Ok(());
        }
        self.evaluate(a, &policy, &errs, &pod["metadata"], &pod["spec"], true)
    }

    async fn validate_controller(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
    ) -> Result<(), ApiError> {
        if !a.subresource.is_empty() || self.exempt(a) {
            return Ok(());
        }
        let ns = match cluster.get("", "namespaces", "", &a.namespace).await {
            Ok(Some(ns)) => ns,
            other => {
                let why = match other {
                    Err(e) => e.message,
                    _ => format!("namespaces {:?} not found", a.namespace),
                };
                a.audit_annotations.add(
                    format!("{ANNOTATION_PREFIX}error"),
                    format!("failed to lookup namespace {:?}: {why}", a.namespace),
                );
                return Ok(());
            }
        };
        let (policy, errs) = policy_from_labels(&ns["metadata"]["labels"], &self.defaults);
        if errs.is_empty()
            && policy.warn.level == Level::Privileged
            && policy.audit.level == Level::Privileged
        {
            return Ok(());
        }
        let Some(object) = &a.object else {
            return Ok(());
        };
        let template = match a.resource.kind.as_str() {
            "podtemplates" => &object["template"],
            "cronjobs" => &object["spec"]["jobTemplate"]["spec"]["template"],
            _ => &object["spec"]["template"],
        };
        if !template.is_object() {
            return Ok(());
        }
        self.evaluate(
            a,
            &policy,
            &errs,
            &template["metadata"],
            &template["spec"],
            false,
        )
    }

    /// Upstream's `EvaluatePod`: enforce (when `enforce`), then audit, then warn.
    fn evaluate(
        &self,
        a: &Attributes,
        policy: &Policy,
        errs: &[FieldError],
        metadata: &Value,
        spec: &Value,
        enforce: bool,
    ) -> Result<(), ApiError> {
        if self.exempt_runtime_class(spec) {
            a.audit_annotations
                .add(format!("{ANNOTATION_PREFIX}exempt"), "runtimeClass");
            return Ok(());
        }
        if !errs.is_empty() {
            let messages: Vec<String> = errs.iter().map(ToString::to_string).collect();
            a.audit_annotations.add(
                format!("{ANNOTATION_PREFIX}error"),
                format!("Failed to parse policy: {}", aggregate(&messages)),
            );
        }
        let mut cache: Vec<(LevelVersion, Vec<Violation>)> = Vec::new();
        let mut result = |lv: LevelVersion| -> Vec<Violation> {
            if let Some((_, v)) = cache.iter().find(|(l, _)| l.equivalent(lv)) {
                return v.clone();
            }
            let v = lv.evaluate(metadata, spec);
            cache.push((lv, v.clone()));
            v
        };
        let mut refusal = None;
        if enforce {
            a.audit_annotations.add(
                format!("{ANNOTATION_PREFIX}enforce-policy"),
                policy.enforce.to_string(),
            );
            let v = result(policy.enforce);
            if !v.is_empty() {
                refusal = Some(ApiError::forbidden(
                    GroupResource {
                        group: "",
                        resource: "pods",
                    },
                    &a.name,
                    &format!(
                        "violates PodSecurity {:?}: {}",
                        policy.enforce.to_string(),
                        checks::details(&v)
                    ),
                ));
            }
        }
        let v = result(policy.audit);
        if !v.is_empty() {
            a.audit_annotations.add(
                format!("{ANNOTATION_PREFIX}audit-violations"),
                format!(
                    "would violate PodSecurity {:?}: {}",
                    policy.audit.to_string(),
                    checks::details(&v)
                ),
            );
        }
        if let Some(e) = refusal {
            return Err(e);
        }
        let v = result(policy.warn);
        if !v.is_empty() {
            a.warnings.add(format!(
                "would violate PodSecurity {:?}: {}",
                policy.warn.to_string(),
                checks::details(&v)
            ));
        }
        Ok(())
    }
}

/// Go's `utilerrors.NewAggregate(...).Error()`.
fn aggregate(messages: &[String]) -> String {
    match messages {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// Upstream's `isSignificantPodUpdate`: only image or container-count changes (and new
/// or changed ephemeral containers) are evaluated again.
fn significant_pod_update(new: &Value, old: &Value) -> bool {
    let list = |p: &Value, k: &str| p["spec"][k].as_array().cloned().unwrap_or_default();
    for k in ["initContainers", "containers"] {
        let (n, o) = (list(new, k), list(old, k));
        if n.len() != o.len() || n.iter().zip(&o).any(|(a, b)| a["image"] != b["image"]) {
            return true;
        }
    }
    let old_ephemeral = list(old, "ephemeralContainers");
    list(new, "ephemeralContainers").iter().any(|c| {
        !old_ephemeral
            .iter()
            .any(|o| o["name"] == c["name"] && o["image"] == c["image"])
    })
}

/// The workload resources whose pod templates are checked (warn and audit only).
const CONTROLLERS: &[(&str, &str)] = &[
    ("", "replicationcontrollers"),
    ("", "podtemplates"),
    ("apps", "replicasets"),
    ("apps", "deployments"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
];

#[async_trait::async_trait]
impl Plugin for PodSecurity {
    fn name(&self) -> &'static str {
        "PodSecurity"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.is("", "namespaces") {
            self.validate_namespace(a, cluster).await
        } else if a.is("", "pods") {
            self.validate_pod(a, cluster).await
        } else if CONTROLLERS.iter().any(|(g, r)| a.is(g, r)) {
            self.validate_controller(a, cluster).await
        } else {
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests;
