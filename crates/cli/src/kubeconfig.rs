//! Loading the kubeconfig as kubectl does (client-go's `tools/clientcmd`): `--kubeconfig`
//! (only that file, which must exist), else `$KUBECONFIG`'s list (deduplicated, missing
//! files skipped, merged: the first file to define a cluster/user/context/extension name
//! wins that whole entry, `current-context` from the first file that sets one), else
//! `~/.kube/config`; relative paths resolved against the defining file's directory; then
//! choosing context, cluster and user with the flag overrides (`--context`, `--cluster`,
//! `--user`, `--server`, `--token`, …) and validating as `ConfirmUsable`; and writing back
//! (`ModifyConfig`): each changed entry into the file that defined it, else the default
//! file.
//!
//! kube-rs's `Kubeconfig::from_env` differs from client-go (a missing file in the list is an
//! error, an empty `current-context` counts as set, `kind`/`apiVersion` mismatches are
//! errors, duplicated paths are read twice), so the model and the rules are our own.

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::time::Duration;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::credentials::{Auth, ExecPlugin, Oidc};
use crate::ctx::GlobalFlags;
use crate::error::{CliError, Result};
use crate::klog::Logger;
use crate::transport::{Impersonate, RestClient, Settings};

/// kubectl's server when nothing is configured (`KUBERNETES_MASTER` or this).
pub const DEFAULT_SERVER: &str = "http://localhost:8080";

// ---------------------------------------------------------------------------------------
// The model (client-go's internal `clientcmdapi`, maps keyed by name).

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct Cluster {
    pub server: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub tls_server_name: String,
    #[serde(skip_serializing_if = "is_false")]
    pub insecure_skip_tls_verify: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub certificate_authority: String,
    #[serde(with = "b64", skip_serializing_if = "Vec::is_empty")]
    pub certificate_authority_data: Vec<u8>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub proxy_url: String,
    #[serde(skip_serializing_if = "is_false")]
    pub disable_compression: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case", default)]
pub struct AuthInfo {
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_certificate: String,
    #[serde(with = "b64", skip_serializing_if = "Vec::is_empty")]
    pub client_certificate_data: Vec<u8>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub client_key: String,
    #[serde(with = "b64", skip_serializing_if = "Vec::is_empty")]
    pub client_key_data: Vec<u8>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub token: String,
    #[serde(rename = "tokenFile", skip_serializing_if = "String::is_empty")]
    pub token_file: String,
    #[serde(rename = "as", skip_serializing_if = "String::is_empty")]
    pub impersonate: String,
    #[serde(rename = "as-uid", skip_serializing_if = "String::is_empty")]
    pub impersonate_uid: String,
    #[serde(rename = "as-groups", skip_serializing_if = "Vec::is_empty")]
    pub impersonate_groups: Vec<String>,
    #[serde(rename = "as-user-extra", skip_serializing_if = "BTreeMap::is_empty")]
    pub impersonate_user_extra: BTreeMap<String, Vec<String>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub username: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub password: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub auth_provider: Option<AuthProviderConfig>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exec: Option<ExecConfig>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct AuthProviderConfig {
    pub name: String,
    pub config: BTreeMap<String, String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ExecConfig {
    pub command: String,
    pub args: Option<Vec<String>>,
    pub env: Option<Vec<ExecEnvVar>>,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub api_version: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub install_hint: String,
    pub provide_cluster_info: bool,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub interactive_mode: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ExecEnvVar {
    pub name: String,
    pub value: String,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Context {
    pub cluster: String,
    pub user: String,
    #[serde(skip_serializing_if = "String::is_empty")]
    pub namespace: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct NamedExtension {
    pub name: String,
    pub extension: Value,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Preferences {
    #[serde(skip_serializing_if = "is_false")]
    pub colors: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub extensions: Vec<NamedExtension>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

/// Where each entry came from (client-go's `LocationOfOrigin`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Origins {
    pub clusters: BTreeMap<String, PathBuf>,
    pub users: BTreeMap<String, PathBuf>,
    pub contexts: BTreeMap<String, PathBuf>,
}

/// A kubeconfig (one file's, or the merged view).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Config {
    pub preferences: Preferences,
    pub clusters: BTreeMap<String, Cluster>,
    pub users: BTreeMap<String, AuthInfo>,
    pub contexts: BTreeMap<String, Context>,
    pub current_context: String,
    pub extensions: BTreeMap<String, Value>,
    pub origins: Origins,
}

/// The file format (`v1.Config`).
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct FileConfig {
    preferences: Option<Preferences>,
    clusters: Option<Vec<NamedEntry<Cluster>>>,
    users: Option<Vec<NamedUser>>,
    contexts: Option<Vec<NamedContext>>,
    #[serde(rename = "current-context")]
    current_context: Option<String>,
    extensions: Option<Vec<NamedExtension>>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NamedEntry<T> {
    name: String,
    cluster: T,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NamedUser {
    name: String,
    user: AuthInfo,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct NamedContext {
    name: String,
    context: Context,
}

mod b64 {
    use base64::Engine;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(v))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s: Option<String> = Option::deserialize(d)?;
        match s {
            None => Ok(Vec::new()),
            Some(s) => base64::engine::general_purpose::STANDARD
                .decode(s.trim())
                .map_err(|e| serde::de::Error::custom(format!("illegal base64 data: {e}"))),
        }
    }
}

/// Parses one kubeconfig document (an empty one is an empty config).
pub fn parse(text: &str) -> std::result::Result<Config, String> {
    if text.trim().is_empty() {
        return Ok(Config::default());
    }
    let value: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
    if value.is_null() {
        return Ok(Config::default());
    }
    let file: FileConfig = serde_json::from_value(value).map_err(|e| e.to_string())?;
    let mut c = Config {
        preferences: file.preferences.unwrap_or_default(),
        current_context: file.current_context.unwrap_or_default(),
        ..Config::default()
    };
    // Within a file a later duplicate replaces an earlier one (decoding into a map).
    for e in file.clusters.unwrap_or_default() {
        c.clusters.insert(e.name, e.cluster);
    }
    for e in file.users.unwrap_or_default() {
        c.users.insert(e.name, e.user);
    }
    for e in file.contexts.unwrap_or_default() {
        c.contexts.insert(e.name, e.context);
    }
    for e in file.extensions.unwrap_or_default() {
        c.extensions.insert(e.name, e.extension);
    }
    Ok(c)
}

/// `v1.Config` as kubectl prints and writes it (field order as upstream's structs).
#[derive(Serialize)]
struct V1Doc<'a> {
    kind: &'static str,
    #[serde(rename = "apiVersion")]
    api_version: &'static str,
    preferences: &'a Preferences,
    clusters: Option<Vec<V1Cluster<'a>>>,
    users: Option<Vec<V1User<'a>>>,
    contexts: Option<Vec<V1Context<'a>>>,
    #[serde(rename = "current-context")]
    current_context: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    extensions: Option<Vec<NamedExtension>>,
}

#[derive(Serialize)]
struct V1Cluster<'a> {
    name: &'a str,
    cluster: &'a Cluster,
}

#[derive(Serialize)]
struct V1User<'a> {
    name: &'a str,
    user: &'a AuthInfo,
}

#[derive(Serialize)]
struct V1Context<'a> {
    name: &'a str,
    context: &'a Context,
}

fn non_empty_vec<T>(v: Vec<T>) -> Option<Vec<T>> {
    (!v.is_empty()).then_some(v)
}

impl Config {
    fn v1(&self) -> V1Doc<'_> {
        V1Doc {
            kind: "Config",
            api_version: "v1",
            preferences: &self.preferences,
            clusters: non_empty_vec(
                self.clusters
                    .iter()
                    .map(|(name, cluster)| V1Cluster { name, cluster })
                    .collect(),
            ),
            users: non_empty_vec(
                self.users
                    .iter()
                    .map(|(name, user)| V1User { name, user })
                    .collect(),
            ),
            contexts: non_empty_vec(
                self.contexts
                    .iter()
                    .map(|(name, context)| V1Context { name, context })
                    .collect(),
            ),
            current_context: &self.current_context,
            extensions: non_empty_vec(
                self.extensions
                    .iter()
                    .map(|(name, extension)| NamedExtension {
                        name: name.clone(),
                        extension: extension.clone(),
                    })
                    .collect(),
            ),
        }
    }

    /// The `v1.Config` document kubectl writes and prints (entries sorted by name).
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self.v1()).unwrap_or(Value::Null)
    }

    /// `-o json`: upstream's field order, four-space indentation.
    pub fn to_json_text(&self) -> String {
        let mut buf = Vec::new();
        let fmt = serde_json::ser::PrettyFormatter::with_indent(b"    ");
        let mut ser = serde_json::Serializer::with_formatter(&mut buf, fmt);
        let _ = self.v1().serialize(&mut ser);
        let mut s = String::from_utf8_lossy(&buf).into_owned();
        s.push('\n');
        s
    }

    /// Whether nothing at all is configured.
    pub fn is_empty(&self) -> bool {
        self.clusters.is_empty()
            && self.users.is_empty()
            && self.contexts.is_empty()
            && self.current_context.is_empty()
            && self.extensions.is_empty()
    }
}

// ---------------------------------------------------------------------------------------
// Loading rules and merging.

/// Which files make the configuration (client-go's `ClientConfigLoadingRules`).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Rules {
    /// `--kubeconfig`.
    pub explicit: Option<PathBuf>,
    /// `$KUBECONFIG`'s files (deduplicated), else `~/.kube/config`.
    pub precedence: Vec<PathBuf>,
    /// Whether the precedence list came from `$KUBECONFIG`.
    pub from_env: bool,
}

impl Rules {
    /// The rules for `--kubeconfig`, `$KUBECONFIG` and `$HOME`.
    pub fn new(explicit: Option<&Path>, env: Option<OsString>, home: Option<PathBuf>) -> Rules {
        let explicit = explicit
            .filter(|p| !p.as_os_str().is_empty())
            .map(Path::to_path_buf);
        let env_files: Vec<PathBuf> = env
            .filter(|v| !v.is_empty())
            .map(|v| std::env::split_paths(&v).collect())
            .unwrap_or_default();
        if !env_files.is_empty() {
            let mut seen = Vec::new();
            for f in env_files {
                if !seen.contains(&f) {
                    seen.push(f);
                }
            }
            return Rules {
                explicit,
                precedence: seen,
                from_env: true,
            };
        }
        let home_file = home.unwrap_or_default().join(".kube").join("config");
        Rules {
            explicit,
            precedence: vec![home_file],
            from_env: false,
        }
    }

    /// The rules of this process.
    pub fn from_process(flags: &GlobalFlags) -> Rules {
        Rules::new(
            flags.kubeconfig.as_deref(),
            std::env::var_os("KUBECONFIG"),
            std::env::var_os("HOME").map(PathBuf::from),
        )
    }

    /// The files read, in order.
    pub fn files(&self) -> Vec<PathBuf> {
        match &self.explicit {
            Some(p) => vec![p.clone()],
            None => self.precedence.clone(),
        }
    }

    /// The file new entries go to (`PathOptions.GetDefaultFilename`): the explicit file;
    /// the only `$KUBECONFIG` file, else its first existing one, else its last;
    /// `~/.kube/config`.
    pub fn default_file(&self) -> PathBuf {
        if let Some(p) = &self.explicit {
            return p.clone();
        }
        if self.from_env && self.precedence.len() > 1 {
            if let Some(p) = self.precedence.iter().find(|p| p.exists()) {
                return p.clone();
            }
            return self.precedence.last().cloned().unwrap_or_default();
        }
        self.precedence.first().cloned().unwrap_or_default()
    }
}

fn not_found(path: &Path) -> CliError {
    CliError::msg(format!(
        "stat {}: no such file or directory",
        path.display()
    ))
}

/// Reads one file (`None` when it does not exist), its paths resolved against its
/// directory when `resolve`.
pub fn read_file(path: &Path, resolve: bool) -> Result<Option<Config>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(CliError::msg(format!(
                "error loading config file \"{}\": {e}",
                path.display()
            )));
        }
    };
    let mut c = parse(&text).map_err(|e| {
        CliError::msg(format!(
            "error loading config file \"{}\": {e}",
            path.display()
        ))
    })?;
    for k in c.clusters.keys() {
        c.origins.clusters.insert(k.clone(), path.to_path_buf());
    }
    for k in c.users.keys() {
        c.origins.users.insert(k.clone(), path.to_path_buf());
    }
    for k in c.contexts.keys() {
        c.origins.contexts.insert(k.clone(), path.to_path_buf());
    }
    if resolve {
        let base = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_default();
        resolve_paths(&mut c, &base);
    }
    Ok(Some(c))
}

fn resolve_one(p: &mut String, base: &Path) {
    if !p.is_empty() && !Path::new(p.as_str()).is_absolute() {
        *p = base.join(p.as_str()).to_string_lossy().into_owned();
    }
}

/// client-go's `ResolveLocalPaths` for one file's entries.
pub fn resolve_paths(c: &mut Config, base: &Path) {
    for cl in c.clusters.values_mut() {
        resolve_one(&mut cl.certificate_authority, base);
    }
    for u in c.users.values_mut() {
        resolve_one(&mut u.client_certificate, base);
        resolve_one(&mut u.client_key, base);
        resolve_one(&mut u.token_file, base);
        if let Some(e) = &mut u.exec
            && e.command.contains('/')
        {
            resolve_one(&mut e.command, base);
        }
    }
}

/// Makes `p` relative to `base` when it needs no `..` (client-go's
/// `RelativizePathWithNoBacksteps`).
fn relativize_one(p: &mut String, base: &Path) {
    if p.is_empty() {
        return;
    }
    if let Ok(rest) = Path::new(p.as_str()).strip_prefix(base) {
        *p = rest.to_string_lossy().into_owned();
    }
}

/// Merges files in precedence order with client-go's rules: the first file to define a
/// name keeps the whole entry, the first non-empty `current-context` wins, preferences
/// field by field from the first file setting them.
pub fn merge(files: Vec<Config>) -> Config {
    let mut out = Config::default();
    for f in files {
        for (k, v) in f.clusters {
            if !out.clusters.contains_key(&k) {
                if let Some(o) = f.origins.clusters.get(&k) {
                    out.origins.clusters.insert(k.clone(), o.clone());
                }
                out.clusters.insert(k, v);
            }
        }
        for (k, v) in f.users {
            if !out.users.contains_key(&k) {
                if let Some(o) = f.origins.users.get(&k) {
                    out.origins.users.insert(k.clone(), o.clone());
                }
                out.users.insert(k, v);
            }
        }
        for (k, v) in f.contexts {
            if !out.contexts.contains_key(&k) {
                if let Some(o) = f.origins.contexts.get(&k) {
                    out.origins.contexts.insert(k.clone(), o.clone());
                }
                out.contexts.insert(k, v);
            }
        }
        for (k, v) in f.extensions {
            out.extensions.entry(k).or_insert(v);
        }
        if out.current_context.is_empty() {
            out.current_context = f.current_context;
        }
        if !out.preferences.colors {
            out.preferences.colors = f.preferences.colors;
        }
        if out.preferences.extensions.is_empty() {
            out.preferences.extensions = f.preferences.extensions;
        }
    }
    out
}

/// Loads the merged configuration of `rules` (paths resolved). The explicit file must
/// exist; missing files of the list are skipped (with klog's note at `-v=1`).
pub fn load_rules(rules: &Rules, log: &Logger) -> Result<Config> {
    load_rules_opts(rules, log, true)
}

/// [`load_rules`], with relative paths left as written when `!resolve` (the `config`
/// commands show and write them so).
pub fn load_rules_opts(rules: &Rules, log: &Logger, resolve: bool) -> Result<Config> {
    let mut configs = Vec::new();
    let mut missing = Vec::new();
    if let Some(p) = &rules.explicit
        && !p.exists()
    {
        return Err(not_found(p));
    }
    for f in rules.files() {
        if f.as_os_str().is_empty() {
            continue;
        }
        match read_file(&f, resolve)? {
            Some(c) => {
                log.infoln(
                    6,
                    "loader.go:402",
                    &format!("Config loaded from file:  {}", f.display()),
                );
                configs.push(c)
            }
            None => missing.push(f.display().to_string()),
        }
    }
    if rules.from_env && configs.is_empty() && !missing.is_empty() {
        log.infoln(
            1,
            "loader.go:140",
            &format!("Config not found: {}", missing.join(", ")),
        );
    }
    Ok(merge(configs))
}

/// The merged kubeconfig the flags select.
pub fn load(flags: &GlobalFlags) -> Result<Config> {
    load_rules(
        &Rules::from_process(flags),
        &Logger::stderr(flags.verbosity),
    )
}

// ---------------------------------------------------------------------------------------
// Choosing context, cluster and user (client-go's `DirectClientConfig`).

/// The flag overrides (kubectl's `ConfigFlags` → `ConfigOverrides`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Overrides {
    pub context: Option<String>,
    pub cluster_name: Option<String>,
    pub user_name: Option<String>,
    pub namespace: Option<String>,
    pub server: Option<String>,
    pub tls_server_name: Option<String>,
    pub certificate_authority: Option<String>,
    pub insecure_skip_tls_verify: bool,
    pub client_certificate: Option<String>,
    pub client_key: Option<String>,
    pub token: Option<String>,
    pub username: Option<String>,
    pub password: Option<String>,
    pub impersonate: Option<String>,
    pub impersonate_uid: Option<String>,
    pub impersonate_groups: Vec<String>,
    pub timeout: Option<String>,
    /// `ClusterDefaults.Server` (`http://localhost:8080`).
    pub default_server: String,
}

fn non_empty(o: &Option<String>) -> Option<&str> {
    o.as_deref().filter(|s| !s.is_empty())
}

impl Overrides {
    pub fn from_flags(f: &GlobalFlags) -> Overrides {
        let s = |p: &Option<PathBuf>| p.as_ref().map(|p| p.to_string_lossy().into_owned());
        Overrides {
            context: f.context.clone(),
            cluster_name: f.cluster.clone(),
            user_name: f.user.clone(),
            namespace: f.namespace.clone(),
            server: f.server.clone(),
            tls_server_name: f.tls_server_name.clone(),
            certificate_authority: s(&f.certificate_authority),
            insecure_skip_tls_verify: f.insecure_skip_tls_verify,
            client_certificate: s(&f.client_certificate),
            client_key: s(&f.client_key),
            token: f.token.clone(),
            username: f.username.clone(),
            password: f.password.clone(),
            impersonate: f.as_user.clone(),
            impersonate_uid: f.as_uid.clone(),
            impersonate_groups: f.as_group.clone(),
            timeout: f.request_timeout.clone(),
            default_server: std::env::var("KUBERNETES_MASTER")
                .ok()
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| DEFAULT_SERVER.to_string()),
        }
    }
}

/// The chosen context, cluster and user, merged with the overrides.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selected {
    pub context_name: String,
    pub context: Context,
    pub cluster_name: String,
    pub cluster: Cluster,
    pub user_name: String,
    pub user: AuthInfo,
    /// The namespace (`-n`, else the context's; empty when neither).
    pub namespace: String,
    pub timeout: Option<Duration>,
}

/// A configuration problem, printed as kubectl prints it.
#[derive(Debug, Clone, PartialEq)]
pub enum ConfigError {
    /// `ConfirmUsable`'s findings (context not found, cluster without server, …).
    Invalid(Vec<String>),
    /// One plain error (`auth info "x" does not exist`, a bad timeout).
    Plain(String),
}

impl ConfigError {
    /// kubectl's text (`checkErr`): a lone context-not-found or several problems as
    /// `Error in configuration: …`, one other problem as `error: …`.
    pub fn message(&self) -> String {
        match self {
            ConfigError::Plain(m) => format!("error: {m}"),
            ConfigError::Invalid(errs) if errs.len() == 1 => {
                if errs[0].starts_with("context was not found") {
                    format!("Error in configuration: {}", errs[0])
                } else {
                    format!("error: {}", errs[0])
                }
            }
            ConfigError::Invalid(errs) => {
                let mut s = "Error in configuration: ".to_string();
                for e in errs {
                    s.push_str(&format!("\n* {e}"));
                }
                s
            }
        }
    }
}

impl From<ConfigError> for CliError {
    fn from(e: ConfigError) -> Self {
        let m = e.message();
        match m.strip_prefix("error: ") {
            Some(rest) => CliError::Msg(rest.to_string()),
            None => CliError::Transport(m),
        }
    }
}

/// kubectl's `--request-timeout` (`ParseTimeout`): `0` none, a bare integer in seconds,
/// else a Go duration.
pub fn parse_timeout(s: &str) -> std::result::Result<Option<Duration>, String> {
    let bad = || {
        "Invalid timeout value. Timeout must be a single integer in seconds, or an integer followed by a corresponding time unit (e.g. 1s | 2m | 3h)".to_string()
    };
    let s = s.trim();
    if s.is_empty() || s == "0" {
        return Ok(None);
    }
    if let Ok(n) = s.parse::<u64>() {
        return Ok(Some(Duration::from_secs(n)));
    }
    let d = parse_go_duration(s).ok_or_else(bad)?;
    Ok((!d.is_zero()).then_some(d))
}

/// Go's `time.ParseDuration` for non-negative values (`-0` included among the negatives).
pub fn parse_go_duration(s: &str) -> Option<Duration> {
    if s.starts_with('-') {
        return None;
    }
    match crate::duration::parse_go_duration(s).ok()? {
        (false, d) => Some(d),
        (true, _) => None,
    }
}

/// Chooses context, cluster and user for `overrides` and validates them as client-go's
/// `ConfirmUsable` and `ClientConfig` do (no file IO except checking that referenced
/// certificate files exist).
pub fn select(config: &Config, o: &Overrides) -> std::result::Result<Selected, ConfigError> {
    let explicit_context = non_empty(&o.context).map(str::to_string);
    let context_name = explicit_context
        .clone()
        .unwrap_or_else(|| config.current_context.clone());
    let context_found = config.contexts.get(&context_name);
    let mut context = context_found.cloned().unwrap_or_default();
    if let Some(c) = non_empty(&o.cluster_name) {
        context.cluster = c.to_string();
    }
    if let Some(u) = non_empty(&o.user_name) {
        context.user = u.to_string();
    }
    if let Some(n) = non_empty(&o.namespace) {
        context.namespace = n.to_string();
    }

    // The user.
    let user_required = non_empty(&o.user_name).is_some();
    let user_name = context.user.clone();
    let user_found = config.users.get(&user_name);
    let mut user = user_found.cloned().unwrap_or_default();
    if let Some(t) = non_empty(&o.token) {
        user.token = t.to_string();
    }
    if let Some(u) = non_empty(&o.username) {
        user.username = u.to_string();
    }
    if let Some(p) = non_empty(&o.password) {
        user.password = p.to_string();
    }
    if let Some(a) = non_empty(&o.impersonate) {
        user.impersonate = a.to_string();
    }
    if let Some(a) = non_empty(&o.impersonate_uid) {
        user.impersonate_uid = a.to_string();
    }
    if !o.impersonate_groups.is_empty() {
        user.impersonate_groups = o.impersonate_groups.clone();
    }
    if let Some(k) = non_empty(&o.client_key) {
        user.client_key = k.to_string();
        user.client_key_data.clear();
    }
    if let Some(c) = non_empty(&o.client_certificate) {
        user.client_certificate = c.to_string();
        user.client_certificate_data.clear();
    }

    // The cluster.
    let cluster_required = non_empty(&o.cluster_name).is_some();
    let cluster_name = context.cluster.clone();
    let cluster_found = config.clusters.get(&cluster_name);
    let mut cluster = Cluster {
        server: o.default_server.clone(),
        ..Cluster::default()
    };
    if let Some(c) = cluster_found {
        merge_cluster(&mut cluster, c);
    }
    if let Some(s) = non_empty(&o.server) {
        cluster.server = s.to_string();
    }
    if o.insecure_skip_tls_verify || non_empty(&o.certificate_authority).is_some() {
        cluster.insecure_skip_tls_verify = o.insecure_skip_tls_verify;
        cluster.certificate_authority = o.certificate_authority.clone().unwrap_or_default();
        cluster.certificate_authority_data.clear();
    }
    if non_empty(&o.tls_server_name).is_some() || non_empty(&o.server).is_some() {
        cluster.tls_server_name = o.tls_server_name.clone().unwrap_or_default();
    }

    // ConfirmUsable.
    let mut errs = Vec::new();
    if !context_name.is_empty() && context_found.is_none() {
        errs.push(format!(
            "context was not found for specified context: {context_name}"
        ));
    }
    let user_for_validation = if user_required && user_found.is_none() {
        AuthInfo::default()
    } else {
        user.clone()
    };
    errs.extend(validate_auth_info(&user_name, &user_for_validation));
    if cluster_required && cluster_found.is_none() {
        errs.push(format!("no server found for cluster {cluster_name:?}"));
    } else {
        errs.extend(validate_cluster(&cluster_name, &cluster));
    }
    if !errs.is_empty() {
        return Err(ConfigError::Invalid(errs));
    }
    if user_required && user_found.is_none() {
        return Err(ConfigError::Plain(format!(
            "auth info {user_name:?} does not exist"
        )));
    }
    if explicit_context.is_some() && context_found.is_none() {
        return Err(ConfigError::Plain(format!(
            "context {context_name:?} does not exist"
        )));
    }
    let timeout = match &o.timeout {
        Some(t) => parse_timeout(t).map_err(ConfigError::Plain)?,
        None => None,
    };
    Ok(Selected {
        namespace: context.namespace.clone(),
        context_name,
        context,
        cluster_name,
        cluster,
        user_name,
        user,
        timeout,
    })
}

/// `merge(dst, src)` for clusters: non-empty fields of `src` win.
fn merge_cluster(dst: &mut Cluster, src: &Cluster) {
    if !src.server.is_empty() {
        dst.server = src.server.clone();
    }
    if !src.tls_server_name.is_empty() {
        dst.tls_server_name = src.tls_server_name.clone();
    }
    if src.insecure_skip_tls_verify {
        dst.insecure_skip_tls_verify = true;
    }
    if !src.certificate_authority.is_empty() {
        dst.certificate_authority = src.certificate_authority.clone();
    }
    if !src.certificate_authority_data.is_empty() {
        dst.certificate_authority_data = src.certificate_authority_data.clone();
    }
    if !src.proxy_url.is_empty() {
        dst.proxy_url = src.proxy_url.clone();
    }
    if src.disable_compression {
        dst.disable_compression = true;
    }
    if !src.extensions.is_empty() {
        dst.extensions = src.extensions.clone();
    }
}

fn validate_cluster(name: &str, c: &Cluster) -> Vec<String> {
    let mut errs = Vec::new();
    if *c == Cluster::default() {
        return vec!["cluster has no server defined".into()];
    }
    if c.server.is_empty() {
        if name.is_empty() {
            errs.push("default cluster has no server defined".into());
        } else {
            errs.push(format!("no server found for cluster {name:?}"));
        }
    }
    if !c.certificate_authority.is_empty() && !c.certificate_authority_data.is_empty() {
        errs.push(format!("certificate-authority-data and certificate-authority are both specified for {name}. certificate-authority-data will override."));
    }
    if !c.certificate_authority.is_empty()
        && let Err(e) = std::fs::metadata(&c.certificate_authority)
    {
        errs.push(format!(
            "unable to read certificate-authority {} for {name} due to {}",
            c.certificate_authority,
            go_open_error(&c.certificate_authority, &e)
        ));
    }
    errs
}

fn go_open_error(path: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => format!("open {path}: no such file or directory"),
        std::io::ErrorKind::PermissionDenied => format!("open {path}: permission denied"),
        _ => format!("open {path}: {e}"),
    }
}

fn validate_auth_info(name: &str, a: &AuthInfo) -> Vec<String> {
    let mut errs = Vec::new();
    let mut methods = Vec::new();
    if !a.token.is_empty() {
        methods.push("token");
    }
    if !a.username.is_empty() || !a.password.is_empty() {
        methods.push("basicAuth");
    }
    if !a.client_certificate.is_empty() || !a.client_certificate_data.is_empty() {
        if !a.client_certificate.is_empty() && !a.client_certificate_data.is_empty() {
            errs.push(format!("client-cert-data and client-cert are both specified for {name}. client-cert-data will override."));
        }
        if !a.client_key.is_empty() && !a.client_key_data.is_empty() {
            errs.push(format!("client-key-data and client-key are both specified for {name}; client-key-data will override"));
        }
        if a.client_key.is_empty() && a.client_key_data.is_empty() {
            errs.push(format!("client-key-data or client-key must be specified for {name} to use the clientCert authentication method."));
        }
        if !a.client_certificate.is_empty()
            && let Err(e) = std::fs::metadata(&a.client_certificate)
        {
            errs.push(format!(
                "unable to read client-cert {} for {name} due to {}",
                a.client_certificate,
                go_open_error(&a.client_certificate, &e)
            ));
        }
        if !a.client_key.is_empty()
            && let Err(e) = std::fs::metadata(&a.client_key)
        {
            errs.push(format!(
                "unable to read client-key {} for {name} due to {}",
                a.client_key,
                go_open_error(&a.client_key, &e)
            ));
        }
    }
    if let Some(exec) = &a.exec {
        if a.auth_provider.is_some() {
            errs.push(format!(
                "authProvider cannot be provided in combination with an exec plugin for {name}"
            ));
        }
        if exec.command.is_empty() {
            errs.push(format!(
                "command must be specified for {name} to use exec authentication plugin"
            ));
        }
        if exec.api_version.is_empty() {
            errs.push(format!(
                "apiVersion must be specified for {name} to use exec authentication plugin"
            ));
        }
        for v in exec.env.iter().flatten() {
            if v.name.is_empty() {
                errs.push(format!("env variable name must be specified for {name} to use exec authentication plugin"));
            }
        }
        match exec.interactive_mode.as_str() {
            "" => {
                // v1 requires it; older versions default to IfAvailable.
                if !matches!(
                    exec.api_version.as_str(),
                    "client.authentication.k8s.io/v1beta1"
                        | "client.authentication.k8s.io/v1alpha1"
                ) {
                    errs.push(format!("interactiveMode must be specified for {name} to use exec authentication plugin"));
                }
            }
            "Never" | "IfAvailable" | "Always" => {}
            other => errs.push(format!("invalid interactiveMode for {name}: {other:?}")),
        }
    }
    if methods.len() > 1 {
        errs.push(format!(
            "more than one authentication method found for {name}; found [{}], only one is allowed",
            methods.join(" ")
        ));
    }
    if (!a.impersonate_uid.is_empty()
        || !a.impersonate_groups.is_empty()
        || !a.impersonate_user_extra.is_empty())
        && a.impersonate.is_empty()
    {
        errs.push(format!(
            "requesting uid, groups or user-extra for {name} without impersonating a user"
        ));
    }
    errs
}

// ---------------------------------------------------------------------------------------
// Building the client.

/// A client with what the kubeconfig said besides.
pub struct Loaded {
    pub client: RestClient,
    /// The current context's namespace.
    pub namespace: Option<String>,
}

fn read_bytes(path: &str) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| CliError::msg(go_open_error(path, &e)))
}

/// The transport settings for a selection (client-go's `ClientConfig`).
pub fn settings_for(sel: &Selected, rules: &Rules, verbosity: u8) -> Result<Settings> {
    let c = &sel.cluster;
    let u = &sel.user;
    let ca = if !c.certificate_authority_data.is_empty() {
        Some(c.certificate_authority_data.clone())
    } else if !c.certificate_authority.is_empty() {
        Some(read_bytes(&c.certificate_authority)?)
    } else {
        None
    };
    let client_cert = if !u.client_certificate.is_empty() || !u.client_certificate_data.is_empty() {
        let cert = if !u.client_certificate_data.is_empty() {
            u.client_certificate_data.clone()
        } else {
            read_bytes(&u.client_certificate)?
        };
        let key = if !u.client_key_data.is_empty() {
            u.client_key_data.clone()
        } else {
            read_bytes(&u.client_key)?
        };
        Some((cert, key))
    } else {
        None
    };
    let auth = if !u.token.is_empty() {
        Auth::Bearer(u.token.clone())
    } else if !u.token_file.is_empty() {
        let t = std::fs::read_to_string(&u.token_file)
            .map_err(|e| CliError::msg(go_open_error(&u.token_file, &e)))?;
        Auth::Bearer(t.trim().to_string())
    } else if !u.username.is_empty() || !u.password.is_empty() {
        Auth::Basic(u.username.clone(), u.password.clone())
    } else if let Some(exec) = &u.exec {
        Auth::Exec(std::sync::Arc::new(ExecPlugin::new(
            exec.clone(),
            exec.provide_cluster_info.then(|| exec_cluster_info(c)),
        )))
    } else if let Some(ap) = &u.auth_provider {
        match ap.name.as_str() {
            "oidc" => Auth::Oidc(std::sync::Arc::new(Oidc::new(
                ap.config.clone(),
                sel.user_name.clone(),
                rules.clone(),
            ))),
            "gcp" => {
                return Err(CliError::msg(
                    "The gcp auth plugin has been removed.\nPlease use the \"gke-gcloud-auth-plugin\" kubectl/client-go credential plugin instead.\nSee https://cloud.google.com/blog/products/containers-kubernetes/kubectl-auth-changes-in-gke for further details",
                ));
            }
            "azure" => {
                return Err(CliError::msg(
                    "The azure auth plugin has been removed.\nPlease use the https://github.com/Azure/kubelogin kubectl/client-go credential plugin instead.\nSee https://go.microsoft.com/fwlink/?linkid=2248008 for further details",
                ));
            }
            other => {
                return Err(CliError::msg(format!(
                    "no Auth Provider found for name {other:?}"
                )));
            }
        }
    } else {
        Auth::None
    };
    Ok(Settings {
        server: c.server.clone(),
        ca,
        insecure: c.insecure_skip_tls_verify,
        tls_server_name: (!c.tls_server_name.is_empty()).then(|| c.tls_server_name.clone()),
        client_cert,
        auth,
        impersonate: Impersonate {
            user: u.impersonate.clone(),
            uid: u.impersonate_uid.clone(),
            groups: u.impersonate_groups.clone(),
            extra: u.impersonate_user_extra.clone(),
        },
        timeout: sel.timeout,
        verbosity,
    })
}

/// `ExecCredential.spec.cluster` for `provideClusterInfo`.
fn exec_cluster_info(c: &Cluster) -> Value {
    let mut v = serde_json::json!({ "server": c.server, "config": null });
    if let Value::Object(m) = &mut v {
        if !c.tls_server_name.is_empty() {
            m.insert("tls-server-name".into(), c.tls_server_name.clone().into());
        }
        if c.insecure_skip_tls_verify {
            m.insert("insecure-skip-tls-verify".into(), true.into());
        }
        let ca = if !c.certificate_authority_data.is_empty() {
            c.certificate_authority_data.clone()
        } else if !c.certificate_authority.is_empty() {
            std::fs::read(&c.certificate_authority).unwrap_or_default()
        } else {
            Vec::new()
        };
        if !ca.is_empty() {
            m.insert(
                "certificate-authority-data".into(),
                base64::engine::general_purpose::STANDARD.encode(ca).into(),
            );
        }
        if let Some(e) = c
            .extensions
            .iter()
            .find(|e| e.name == "client.authentication.k8s.io/exec")
        {
            m.insert("config".into(), e.extension.clone());
        }
    }
    v
}

/// Loads, selects and validates for the flags: the selection and the rules used.
pub fn selected_for(flags: &GlobalFlags) -> Result<(Selected, Rules)> {
    let rules = Rules::from_process(flags);
    let log = Logger::stderr(flags.verbosity);
    let config = load_rules(&rules, &log)?;
    let sel = select(&config, &Overrides::from_flags(flags))?;
    Ok((sel, rules))
}

/// Builds the API client for the flags.
pub async fn client_for(flags: &GlobalFlags) -> Result<Loaded> {
    let (sel, rules) = selected_for(flags)?;
    let settings = settings_for(&sel, &rules, flags.verbosity)?;
    let client = RestClient::new(settings, Logger::stderr(flags.verbosity))?;
    Ok(Loaded {
        client,
        namespace: (!sel.namespace.is_empty()).then(|| sel.namespace.clone()),
    })
}

// ---------------------------------------------------------------------------------------
// Writing (client-go's `ModifyConfig`).

/// Serializes a config as kubectl writes a kubeconfig file.
pub fn to_file_text(c: &Config) -> String {
    crate::output::yaml::to_yaml(&c.to_json())
}

fn write_file(path: &Path, c: &Config) -> Result<()> {
    if let Some(dir) = path.parent()
        && !dir.as_os_str().is_empty()
        && !dir.exists()
    {
        std::fs::create_dir_all(dir)?;
    }
    let text = to_file_text(c);
    std::fs::write(path, text)
        .map_err(|e| CliError::msg(format!("open {}: {e}", path.display())))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600));
    }
    Ok(())
}

fn file_config(path: &Path) -> Result<Config> {
    Ok(read_file(path, false)?.unwrap_or_default())
}

/// Relativizes an entry's paths against its destination file's directory.
fn relativize_cluster(c: &mut Cluster, dest: &Path) {
    if let Some(base) = std::path::absolute(dest)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        relativize_one(&mut c.certificate_authority, &base);
    }
}

fn relativize_user(u: &mut AuthInfo, dest: &Path) {
    if let Some(base) = std::path::absolute(dest)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
    {
        relativize_one(&mut u.client_certificate, &base);
        relativize_one(&mut u.client_key, &base);
        relativize_one(&mut u.token_file, &base);
    }
}

/// Writes the difference between `start` (as loaded by `rules`) and `new` back to the
/// files: each changed or new entry to the file that defined it, else `rules`' default
/// file; a removed entry from its file; `current-context` as `writeCurrentContext`.
pub fn modify(rules: &Rules, start: &Config, new: &Config, relativize: bool) -> Result<()> {
    if start == new {
        return Ok(());
    }
    if start.current_context != new.current_context {
        write_current_context(rules, &new.current_context)?;
    }
    if start.preferences != new.preferences {
        let file = rules.default_file();
        let mut c = file_config(&file)?;
        c.preferences = new.preferences.clone();
        write_file(&file, &c)?;
    }
    let dest = |origin: Option<&PathBuf>| origin.cloned().unwrap_or_else(|| rules.default_file());
    for (k, v) in &new.clusters {
        if start.clusters.get(k) != Some(v) {
            let file = dest(new.origins.clusters.get(k));
            let mut c = file_config(&file)?;
            let mut v = v.clone();
            if relativize {
                relativize_cluster(&mut v, &file);
            }
            c.clusters.insert(k.clone(), v);
            write_file(&file, &c)?;
        }
    }
    for (k, v) in &new.contexts {
        if start.contexts.get(k) != Some(v) {
            let file = dest(new.origins.contexts.get(k));
            let mut c = file_config(&file)?;
            c.contexts.insert(k.clone(), v.clone());
            write_file(&file, &c)?;
        }
    }
    for (k, v) in &new.users {
        if start.users.get(k) != Some(v) {
            let file = dest(new.origins.users.get(k));
            let mut c = file_config(&file)?;
            let mut v = v.clone();
            if relativize {
                relativize_user(&mut v, &file);
            }
            c.users.insert(k.clone(), v);
            write_file(&file, &c)?;
        }
    }
    for k in start.clusters.keys() {
        if !new.clusters.contains_key(k) {
            let file = dest(start.origins.clusters.get(k));
            let mut c = file_config(&file)?;
            c.clusters.remove(k);
            write_file(&file, &c)?;
        }
    }
    for k in start.contexts.keys() {
        if !new.contexts.contains_key(k) {
            let file = dest(start.origins.contexts.get(k));
            let mut c = file_config(&file)?;
            c.contexts.remove(k);
            write_file(&file, &c)?;
        }
    }
    for k in start.users.keys() {
        if !new.users.contains_key(k) {
            let file = dest(start.origins.users.get(k));
            let mut c = file_config(&file)?;
            c.users.remove(k);
            write_file(&file, &c)?;
        }
    }
    Ok(())
}

/// client-go's `writeCurrentContext`.
fn write_current_context(rules: &Rules, name: &str) -> Result<()> {
    if let Some(file) = &rules.explicit {
        let mut c = file_config(file)?;
        c.current_context = name.to_string();
        return write_file(file, &c);
    }
    if !name.is_empty() {
        let file = rules.default_file();
        let mut c = file_config(&file)?;
        c.current_context = name.to_string();
        return write_file(&file, &c);
    }
    for file in rules.files() {
        if file.exists() {
            let mut c = file_config(&file)?;
            if !c.current_context.is_empty() {
                c.current_context = name.to_string();
                return write_file(&file, &c);
            }
        }
    }
    Err(CliError::msg("no config found to write context"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(yaml: &str, origin: &str) -> Config {
        let mut c = parse(yaml).unwrap();
        for k in c.clusters.keys() {
            c.origins.clusters.insert(k.clone(), origin.into());
        }
        for k in c.users.keys() {
            c.origins.users.insert(k.clone(), origin.into());
        }
        for k in c.contexts.keys() {
            c.origins.contexts.insert(k.clone(), origin.into());
        }
        c
    }

    const A: &str = r#"
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: shared
  cluster: {server: "https://a:1", certificate-authority: ca.crt}
- name: only-a
  cluster: {server: "https://a:2"}
users:
- name: red-user
  user: {token: a-token}
contexts:
- name: a
  context: {cluster: shared, user: red-user, namespace: ns-a}
"#;

    const B: &str = r#"
current-context: b
clusters:
- name: shared
  cluster: {server: "https://b:1", insecure-skip-tls-verify: true}
- name: only-b
  cluster: {server: "https://b:2"}
users:
- name: red-user
  user: {username: b, password: p}
contexts:
- name: b
  context: {cluster: only-b, user: red-user}
"#;

    #[test]
    fn first_file_wins_whole_entries() {
        let m = merge(vec![cfg(A, "/a"), cfg(B, "/b")]);
        assert_eq!(m.current_context, "a");
        let shared = &m.clusters["shared"];
        assert_eq!(shared.server, "https://a:1");
        // Non-conflicting fields of the second file's entry are discarded.
        assert!(!shared.insecure_skip_tls_verify);
        assert_eq!(m.users["red-user"].token, "a-token");
        assert!(m.users["red-user"].username.is_empty());
        assert_eq!(m.clusters.len(), 3);
        assert_eq!(m.contexts.len(), 2);
        assert_eq!(m.origins.clusters["shared"], PathBuf::from("/a"));
        assert_eq!(m.origins.clusters["only-b"], PathBuf::from("/b"));
    }

    #[test]
    fn current_context_from_first_file_setting_it() {
        let empty = cfg("clusters: []\ncurrent-context: \"\"\n", "/e");
        let m = merge(vec![empty, cfg(B, "/b"), cfg(A, "/a")]);
        assert_eq!(m.current_context, "b");
    }

    #[test]
    fn rules_from_env_and_home() {
        let r = Rules::new(None, Some("/x:/y:/x::/z".into()), Some("/home/u".into()));
        assert_eq!(
            r.precedence,
            vec![
                PathBuf::from("/x"),
                PathBuf::from("/y"),
                PathBuf::from(""),
                PathBuf::from("/z")
            ]
        );
        assert!(r.from_env);
        let r = Rules::new(None, Some("".into()), Some("/home/u".into()));
        assert_eq!(r.precedence, vec![PathBuf::from("/home/u/.kube/config")]);
        let r = Rules::new(Some(Path::new("/k")), Some("/x".into()), None);
        assert_eq!(r.files(), vec![PathBuf::from("/k")]);
        assert_eq!(r.default_file(), PathBuf::from("/k"));
    }

    #[test]
    fn default_file_of_a_list() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        let env: OsString = std::env::join_paths([&a, &b]).unwrap();
        let r = Rules::new(None, Some(env.clone()), None);
        // None exists: the last.
        assert_eq!(r.default_file(), b);
        std::fs::write(&b, "").unwrap();
        assert_eq!(r.default_file(), b);
        std::fs::write(&a, "").unwrap();
        assert_eq!(r.default_file(), a);
        // One file: that one.
        let r = Rules::new(None, Some(b.clone().into_os_string()), None);
        assert_eq!(r.default_file(), b);
    }

    #[test]
    fn load_skips_missing_files_and_resolves_paths() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.yaml");
        std::fs::write(&a, A).unwrap();
        let missing = dir.path().join("missing");
        let env = std::env::join_paths([&missing, &a]).unwrap();
        let r = Rules::new(None, Some(env), None);
        let log = Logger::new(0, std::sync::Arc::new(|_: &str| {}));
        let c = load_rules(&r, &log).unwrap();
        assert_eq!(c.current_context, "a");
        assert_eq!(
            c.clusters["shared"].certificate_authority,
            dir.path().join("ca.crt").to_string_lossy()
        );
        // An explicit file must exist.
        let r = Rules::new(Some(&missing), None, None);
        let e = load_rules(&r, &log).unwrap_err().to_string();
        assert_eq!(
            e,
            format!(
                "error: stat {}: no such file or directory",
                missing.display()
            )
        );
        // A bad file is an error naming it.
        std::fs::write(&missing, "clusters: [").unwrap();
        let e = load_rules(&r, &log).unwrap_err().to_string();
        assert!(e.contains("error loading config file"), "{e}");
    }

    fn over() -> Overrides {
        Overrides {
            default_server: DEFAULT_SERVER.into(),
            ..Overrides::default()
        }
    }

    #[test]
    fn select_current_context() {
        let c = merge(vec![cfg(A, "/a"), cfg(B, "/b")]);
        let s = select(&c, &over()).unwrap_err();
        // ca.crt does not exist (relative, unresolved here).
        assert!(
            s.message()
                .contains("unable to read certificate-authority ca.crt"),
            "{}",
            s.message()
        );
        let mut c2 = c.clone();
        c2.clusters
            .get_mut("shared")
            .unwrap()
            .certificate_authority
            .clear();
        let s = select(&c2, &over()).unwrap();
        assert_eq!(s.cluster.server, "https://a:1");
        assert_eq!(s.namespace, "ns-a");
        assert_eq!(s.user.token, "a-token");
    }

    #[test]
    fn flag_overrides_take_precedence() {
        let c = merge(vec![cfg(B, "/b")]);
        let mut o = over();
        o.context = Some("b".into());
        o.server = Some("https://override:9".into());
        o.namespace = Some("n1".into());
        o.username = Some("flag-user".into());
        let s = select(&c, &o).unwrap();
        assert_eq!(s.cluster.server, "https://override:9");
        assert_eq!(s.namespace, "n1");
        assert_eq!(s.user.username, "flag-user");
        assert_eq!(s.user.password, "p");
        // --token with basic auth in the file: two methods.
        o.token = Some("t".into());
        let e = select(&c, &o).unwrap_err();
        assert_eq!(
            e.message(),
            "error: more than one authentication method found for red-user; found [token basicAuth], only one is allowed"
        );
        // --insecure-skip-tls-verify and --certificate-authority replace the file's.
        let mut o = over();
        o.context = Some("b".into());
        o.cluster_name = Some("shared".into());
        o.certificate_authority = Some("/etc/hosts".into());
        let s = select(&c, &o).unwrap();
        assert!(!s.cluster.insecure_skip_tls_verify);
        assert_eq!(s.cluster.certificate_authority, "/etc/hosts");
    }

    #[test]
    fn missing_names() {
        let c = merge(vec![cfg(B, "/b")]);
        let mut o = over();
        o.context = Some("nope".into());
        assert_eq!(
            select(&c, &o).unwrap_err().message(),
            "Error in configuration: context was not found for specified context: nope"
        );
        let mut o = over();
        o.user_name = Some("nope".into());
        assert_eq!(
            select(&c, &o).unwrap_err().message(),
            "error: auth info \"nope\" does not exist"
        );
        let mut o = over();
        o.cluster_name = Some("nope".into());
        assert_eq!(
            select(&c, &o).unwrap_err().message(),
            "error: no server found for cluster \"nope\""
        );
    }

    #[test]
    fn empty_config_uses_localhost_8080() {
        let s = select(&Config::default(), &over()).unwrap();
        assert_eq!(s.cluster.server, "http://localhost:8080");
        assert_eq!(s.namespace, "");
    }

    #[test]
    fn exec_v1_needs_interactive_mode() {
        let c = parse(
            "users:\n- name: u\n  user:\n    exec: {command: x, apiVersion: client.authentication.k8s.io/v1}\ncontexts:\n- name: c\n  context: {cluster: k, user: u}\nclusters:\n- name: k\n  cluster: {server: https://s}\ncurrent-context: c\n",
        )
        .unwrap();
        assert_eq!(
            select(&c, &over()).unwrap_err().message(),
            "error: interactiveMode must be specified for u to use exec authentication plugin"
        );
    }

    #[test]
    fn timeouts() {
        assert_eq!(parse_timeout("0").unwrap(), None);
        assert_eq!(parse_timeout("5").unwrap(), Some(Duration::from_secs(5)));
        assert_eq!(
            parse_timeout("1m30s").unwrap(),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            parse_timeout("500ms").unwrap(),
            Some(Duration::from_millis(500))
        );
        assert!(parse_timeout("-1s").is_err());
        assert!(parse_timeout("abc").is_err());
    }

    #[test]
    fn serialization_as_kubectl() {
        let c = parse(A).unwrap();
        let v = c.to_json();
        assert_eq!(v["clusters"][0]["name"], "only-a");
        assert_eq!(
            v["clusters"][1]["cluster"]["certificate-authority"],
            "ca.crt"
        );
        assert!(
            v["clusters"][1]["cluster"]
                .get("insecure-skip-tls-verify")
                .is_none()
        );
        assert_eq!(v["contexts"][0]["context"]["namespace"], "ns-a");
        assert_eq!(
            v["users"][0]["user"],
            serde_json::json!({"token": "a-token"})
        );
        assert_eq!(v["preferences"], serde_json::json!({}));
        let empty = Config::default().to_json();
        assert_eq!(empty["clusters"], Value::Null);
        assert_eq!(empty["current-context"], "");
        // Round trip through the file format.
        let back = parse(&serde_json::to_string(&v).unwrap()).unwrap();
        assert_eq!(back.clusters, c.clusters);
        assert_eq!(back.users, c.users);
        assert_eq!(back.contexts, c.contexts);
    }

    #[test]
    fn exec_serialization_keeps_null_args() {
        let c =
            parse("users:\n- name: u\n  user:\n    exec: {command: x, apiVersion: v}\n").unwrap();
        let v = c.to_json();
        assert_eq!(
            v["users"][0]["user"]["exec"],
            serde_json::json!({"command": "x", "args": null, "env": null, "apiVersion": "v", "provideClusterInfo": false})
        );
    }

    #[test]
    fn modify_writes_to_the_defining_file() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a");
        let b = dir.path().join("b");
        std::fs::write(&a, "current-context: x\n").unwrap();
        std::fs::write(&b, B).unwrap();
        let env = std::env::join_paths([&a, &b]).unwrap();
        let rules = Rules::new(None, Some(env), None);
        let log = Logger::new(0, std::sync::Arc::new(|_: &str| {}));
        let start = load_rules(&rules, &log).unwrap();
        let mut new = start.clone();
        new.contexts.get_mut("b").unwrap().namespace = "changed".into();
        new.contexts.insert("fresh".into(), Context::default());
        new.current_context = "b".into();
        modify(&rules, &start, &new, false).unwrap();
        let fa = file_config(&a).unwrap();
        let fb = file_config(&b).unwrap();
        assert_eq!(fb.contexts["b"].namespace, "changed");
        assert!(fa.contexts.contains_key("fresh"));
        assert!(!fb.contexts.contains_key("fresh"));
        assert_eq!(fa.current_context, "b");
        assert_eq!(fb.current_context, "b");
        // Deleting removes from the defining file.
        let start = load_rules(&rules, &log).unwrap();
        let mut new = start.clone();
        new.clusters.remove("only-b");
        modify(&rules, &start, &new, false).unwrap();
        assert!(!file_config(&b).unwrap().clusters.contains_key("only-b"));
    }
}
