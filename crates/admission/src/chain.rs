//! The chain: which plugins run, in which order, with which configuration
//! (`--enable-admission-plugins`, `--disable-admission-plugins`,
//! `--admission-control-config-file`), and running them.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use api::ApiError;
use api::status::GroupResource;
use serde_json::Value;

use crate::{Attributes, Cluster, Plugin};

/// Every plugin name upstream knows, in upstream's fixed order (`AllOrderedPlugins`);
/// enabled plugins always run in this order, whatever the order of the flag.
pub const ORDERED: &[&str] = &[
    "AlwaysAdmit",
    "NamespaceAutoProvision",
    "NamespaceLifecycle",
    "NamespaceExists",
    "LimitPodHardAntiAffinityTopology",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "AlwaysPullImages",
    "ImagePolicyWebhook",
    "PodSecurity",
    "PodNodeSelector",
    "Priority",
    "DefaultTolerationSeconds",
    "PodTolerationRestriction",
    "EventRateLimit",
    "ExtendedResourceToleration",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "OwnerReferencesPermissionEnforcement",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "denyserviceexternalips",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
    "AlwaysDeny",
];

/// The plugins on when the flags say nothing: upstream 1.33's default-on set, plus
/// `NodeRestriction` (on in k3s and kubeadm clusters, and needed for node identities to
/// mean anything).
pub const DEFAULT_ON: &[&str] = &[
    "NamespaceLifecycle",
    "LimitRanger",
    "ServiceAccount",
    "NodeRestriction",
    "TaintNodesByCondition",
    "PodSecurity",
    "Priority",
    "DefaultTolerationSeconds",
    "DefaultStorageClass",
    "StorageObjectInUseProtection",
    "PersistentVolumeClaimResize",
    "RuntimeClass",
    "CertificateApproval",
    "CertificateSigning",
    "ClusterTrustBundleAttest",
    "CertificateSubjectRestriction",
    "DefaultIngressClass",
    "MutatingAdmissionWebhook",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionWebhook",
    "ResourceQuota",
];

/// A start-up error in the admission flags or configuration file.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{flag} plugin {name:?} is unknown")]
    Unknown { flag: &'static str, name: String },
    #[error("{0:?} is in enable-admission-plugins and disable-admission-plugins")]
    Both(String),
    #[error("--admission-control-config-file {path}: {reason}")]
    File { path: PathBuf, reason: String },
    #[error("admission plugin {name}: {reason}")]
    Plugin { name: String, reason: String },
}

/// The chain's flags.
#[derive(Clone, Debug, Default)]
pub struct ChainConfig {
    pub enable: Vec<String>,
    pub disable: Vec<String>,
    pub config_file: Option<PathBuf>,
}

/// Builds one plugin from its configuration (the `configuration` or `path` document of
/// the admission configuration file, when it has one).
pub type Factory =
    Box<dyn Fn(Option<&Value>) -> Result<Arc<dyn Plugin>, ConfigError> + Send + Sync>;

/// The plugins this server can build, by name.
#[derive(Default)]
pub struct Plugins {
    factories: HashMap<&'static str, Factory>,
}

impl Plugins {
    /// No plugins.
    pub fn new() -> Self {
        Plugins::default()
    }

    /// Registers (or replaces) the factory of `name`.
    pub fn register(&mut self, name: &'static str, factory: Factory) {
        self.factories.insert(name, factory);
    }

    /// Whether `name` can be built.
    pub fn has(&self, name: &str) -> bool {
        self.factories.contains_key(name)
    }
}

/// The enabled plugins, in order.
#[derive(Default)]
pub struct Chain {
    plugins: Vec<Arc<dyn Plugin>>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.plugins.iter().map(|p| p.name()))
            .finish()
    }
}

/// Reads `--admission-control-config-file` (`apiserver.config.k8s.io/v1`
/// `AdmissionConfiguration`, JSON or YAML): each plugin's configuration, inline
/// (`configuration`) or from a file (`path`, relative to the configuration file).
pub fn read_config_file(path: &Path) -> Result<BTreeMap<String, Value>, ConfigError> {
    let err = |reason: String| ConfigError::File {
        path: path.to_path_buf(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
    let doc: Value = serde_yaml_ng::from_str(&text).map_err(|e| err(e.to_string()))?;
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    if kind != "AdmissionConfiguration" {
        return Err(err(format!(
            "unexpected kind {kind:?}, expected AdmissionConfiguration"
        )));
    }
    let mut out = BTreeMap::new();
    for p in doc
        .get("plugins")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let Some(name) = p.get("name").and_then(Value::as_str) else {
            return Err(err("a plugin entry has no name".into()));
        };
        let config = if let Some(c) = p.get("configuration").filter(|c| !c.is_null()) {
            c.clone()
        } else if let Some(file) = p.get("path").and_then(Value::as_str) {
            let file = path
                .parent()
                .map_or_else(|| PathBuf::from(file), |d| d.join(file));
            let text = std::fs::read_to_string(&file)
                .map_err(|e| err(format!("{}: {e}", file.display())))?;
            serde_yaml_ng::from_str(&text).map_err(|e| err(format!("{}: {e}", file.display())))?
        } else {
            continue;
        };
        out.insert(name.to_string(), config);
    }
    Ok(out)
}

impl Chain {
    /// A chain of exactly these plugins, in this order (for tests).
    pub fn of(plugins: Vec<Arc<dyn Plugin>>) -> Chain {
        Chain { plugins }
    }

    /// The chain the flags select, built from `available`. Names upstream knows but this
    /// server does not implement are accepted and skipped with a warning (their resources
    /// are not served meaningfully here); names nobody knows stop the start-up.
    pub fn build(config: &ChainConfig, available: &Plugins) -> Result<Chain, ConfigError> {
        for (flag, names) in [
            ("enable-admission-plugins", &config.enable),
            ("disable-admission-plugins", &config.disable),
        ] {
            if let Some(n) = names.iter().find(|n| !ORDERED.contains(&n.as_str())) {
                return Err(ConfigError::Unknown {
                    flag,
                    name: n.clone(),
                });
            }
        }
        if let Some(n) = config.enable.iter().find(|n| config.disable.contains(n)) {
            return Err(ConfigError::Both(n.clone()));
        }
        let configs = match &config.config_file {
            Some(p) => read_config_file(p)?,
            None => BTreeMap::new(),
        };
        let mut plugins = Vec::new();
        for name in ORDERED {
            let on = config.enable.iter().any(|n| n == name)
                || (DEFAULT_ON.contains(name) && !config.disable.iter().any(|n| n == name));
            if !on {
                continue;
            }
            match available.factories.get(name) {
                Some(f) => plugins.push(f(configs.get(*name))?),
                None => tracing::debug!(plugin = name, "admission plugin not implemented; skipped"),
            }
        }
        Ok(Chain { plugins })
    }

    /// Appends a plugin the server always runs (not selectable by flags): as the last
    /// mutating plugin it sees the object every other mutating plugin produced.
    pub fn push(&mut self, plugin: Arc<dyn Plugin>) {
        self.plugins.push(plugin);
    }

    /// The names of the plugins that run, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.plugins.iter().map(|p| p.name()).collect()
    }

    /// Runs every mutating plugin that handles the operation, in order.
    pub async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.mutating() && p.handles(a.operation) {
                p.admit(a, cluster).await.inspect_err(|e| {
                    tracing::debug!(plugin = p.name(), error = %e.message, "admission refused");
                })?;
            }
        }
        Ok(())
    }

    /// Runs every validating plugin that handles the operation, in order.
    pub async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        for p in &self.plugins {
            if p.validating() && p.handles(a.operation) {
                p.validate(a, cluster).await.inspect_err(|e| {
                    tracing::debug!(plugin = p.name(), error = %e.message, "admission refused");
                })?;
            }
        }
        Ok(())
    }
}

/// Upstream's `admission.NewForbidden`: a 403 on the request's name, else the object's name
/// or, before name generation, its `generateName` ("Unknown" without either).
pub fn forbidden(a: &Attributes, reason: impl std::fmt::Display) -> ApiError {
    let name = Some(a.name.as_str())
        .filter(|n| !n.is_empty())
        .or_else(|| {
            a.object.as_ref().and_then(|o| {
                api::meta::name(o)
                    .filter(|n| !n.is_empty())
                    .or_else(|| api::meta::generate_name(o).filter(|n| !n.is_empty()))
            })
        })
        .unwrap_or("Unknown")
        .to_string();
    ApiError::forbidden(
        GroupResource {
            group: &a.resource.group,
            resource: &a.resource.kind,
        },
        &name,
        &reason.to_string(),
    )
}
