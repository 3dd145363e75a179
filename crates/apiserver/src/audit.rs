//! The audit log (`--audit-policy-file`, `--audit-log-path`), as upstream's
//! `k8s.io/apiserver/pkg/audit`: a `Policy` (`audit.k8s.io/v1`) decides per request the level
//! (`None`, `Metadata`, `Request`, `RequestResponse`) by its first matching rule, and the log
//! backend writes one `audit.k8s.io/v1` `Event` per stage (`RequestReceived`,
//! `ResponseStarted` for watches, `ResponseComplete`) as a JSON line, unless the stage is
//! omitted. Request bodies are recorded from `Request` on, response bodies at
//! `RequestResponse`; credentials are never logged (the `Authorization` header is not part of
//! an event).

use std::io::Write;
use std::path::Path;
use std::sync::Mutex;

use serde_json::{Map, Value, json};

use crate::Error;
use crate::authn::UserInfo;
use crate::requestinfo::RequestInfo;

/// Audit levels, ordered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    fn parse(s: &str) -> Result<Level, String> {
        match s {
            "None" => Ok(Level::None),
            "Metadata" => Ok(Level::Metadata),
            "Request" => Ok(Level::Request),
            "RequestResponse" => Ok(Level::RequestResponse),
            other => Err(format!("invalid audit level {other:?}")),
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

#[derive(Clone, Debug, Default)]
struct GroupResources {
    group: String,
    resources: Vec<String>,
    resource_names: Vec<String>,
}

#[derive(Clone, Debug)]
struct Rule {
    level: Level,
    users: Vec<String>,
    user_groups: Vec<String>,
    verbs: Vec<String>,
    resources: Vec<GroupResources>,
    namespaces: Vec<String>,
    non_resource_urls: Vec<String>,
    omit_stages: Option<Vec<String>>,
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

impl Rule {
    /// Upstream's `ruleMatches`.
    fn matches(&self, user: &UserInfo, info: &RequestInfo) -> bool {
        if !self.users.is_empty() && !self.users.contains(&user.name) {
            return false;
        }
        if !self.user_groups.is_empty() && !user.groups.iter().any(|g| self.user_groups.contains(g))
        {
            return false;
        }
        if !self.verbs.is_empty() && !self.verbs.contains(&info.verb) {
            return false;
        }
        if !self.namespaces.is_empty() || !self.resources.is_empty() {
            return info.is_resource_request && self.matches_resource(info);
        }
        if !self.non_resource_urls.is_empty() {
            return !info.is_resource_request && self.matches_url(&info.path);
        }
        true
    }

    fn matches_url(&self, path: &str) -> bool {
        self.non_resource_urls
            .iter()
            .any(|u| match u.strip_suffix('*') {
                Some(prefix) => path.starts_with(prefix),
                None => u == path,
            })
    }

    fn matches_resource(&self, info: &RequestInfo) -> bool {
        if !self.namespaces.is_empty() && !self.namespaces.contains(&info.namespace) {
            return false;
        }
        if self.resources.is_empty() {
            return true;
        }
        let combined = if info.subresource.is_empty() {
            info.resource.clone()
        } else {
            format!("{}/{}", info.resource, info.subresource)
        };
        self.resources.iter().any(|gr| {
            if gr.group != info.api_group {
                return false;
            }
            let resource_ok = gr.resources.is_empty()
                || gr.resources.iter().any(|r| {
                    r == "*"
                        || *r == combined
                        || (info.subresource.is_empty() && *r == info.resource)
                        || r.strip_prefix("*/") == Some(info.subresource.as_str())
                        || r.strip_suffix("/*") == Some(info.resource.as_str())
                });
            resource_ok && (gr.resource_names.is_empty() || gr.resource_names.contains(&info.name))
        })
    }
}

/// A parsed audit policy.
#[derive(Clone, Debug)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<String>,
    omit_managed_fields: bool,
}

impl Policy {
    /// Parses a `Policy` (JSON or YAML).
    pub fn parse(text: &str) -> Result<Policy, String> {
        let doc: Value = serde_yaml_ng::from_str(text).map_err(|e| e.to_string())?;
        if doc["kind"].as_str() != Some("Policy") {
            return Err("kind must be Policy".into());
        }
        let mut rules = Vec::new();
        for (i, r) in doc["rules"].as_array().into_iter().flatten().enumerate() {
            let level = Level::parse(r["level"].as_str().unwrap_or_default())
                .map_err(|e| format!("rules[{i}].level: {e}"))?;
            let resources = r["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|g| GroupResources {
                    group: g["group"].as_str().unwrap_or_default().to_string(),
                    resources: strings(&g["resources"]),
                    resource_names: strings(&g["resourceNames"]),
                })
                .collect::<Vec<_>>();
            let non_resource_urls = strings(&r["nonResourceURLs"]);
            if !non_resource_urls.is_empty()
                && (!resources.is_empty() || r.get("namespaces").is_some())
            {
                return Err(format!(
                    "rules[{i}]: rules cannot apply to both regular resources and non-resource URLs"
                ));
            }
            rules.push(Rule {
                level,
                users: strings(&r["users"]),
                user_groups: strings(&r["userGroups"]),
                verbs: strings(&r["verbs"]),
                resources,
                namespaces: strings(&r["namespaces"]),
                non_resource_urls,
                omit_stages: r.get("omitStages").map(strings),
            });
        }
        if rules.is_empty() {
            return Err("a policy must have at least one rule".into());
        }
        Ok(Policy {
            rules,
            omit_stages: strings(&doc["omitStages"]),
            omit_managed_fields: doc["omitManagedFields"].as_bool().unwrap_or(false),
        })
    }

    /// The level of a request and the stages omitted for it.
    pub fn evaluate(&self, user: &UserInfo, info: &RequestInfo) -> (Level, Vec<String>) {
        for r in &self.rules {
            if r.matches(user, info) {
                let mut omit = self.omit_stages.clone();
                omit.extend(r.omit_stages.clone().unwrap_or_default());
                return (r.level, omit);
            }
        }
        (Level::None, Vec::new())
    }
}

/// The audit log: a policy and a file (or stdout for `-`).
pub struct Auditor {
    policy: Policy,
    out: Mutex<Box<dyn Write + Send>>,
}

/// One request's audit record, built as the request goes.
pub struct Record {
    pub level: Level,
    omit: Vec<String>,
    event: Map<String, Value>,
}

fn now_micro() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

fn user_json(user: &UserInfo) -> Value {
    crate::registry::virtuals::user_info(user)
}

/// `--audit-log-maxsize` (MiB), `--audit-log-maxbackup`, `--audit-log-maxage` (days); 0
/// means no limit (and, for the size, no rotation), as upstream.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rotation {
    pub max_size_mb: u64,
    pub max_backups: usize,
    pub max_age_days: u64,
}

/// An append-only log file that is rotated as upstream's (lumberjack): when a write would
/// take it past the maximum size, it is renamed `<name>-<UTC timestamp>.<ext>` beside
/// itself, a new file is started, and the oldest backups beyond the count or age limits
/// are removed.
pub struct RotatingFile {
    path: std::path::PathBuf,
    rotation: Rotation,
    file: std::fs::File,
    size: u64,
}

impl RotatingFile {
    pub fn open(path: &Path, rotation: Rotation) -> std::io::Result<RotatingFile> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        let size = file.metadata()?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            rotation,
            file,
            size,
        })
    }

    fn stem_and_ext(&self) -> (String, String) {
        let name = self
            .path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        match name.rsplit_once('.') {
            Some((stem, ext)) if !stem.is_empty() => (stem.to_string(), format!(".{ext}")),
            _ => (name, String::new()),
        }
    }

    fn rotate(&mut self) -> std::io::Result<()> {
        let (stem, ext) = self.stem_and_ext();
        let stamp = jiff::Timestamp::now().strftime("%Y-%m-%dT%H-%M-%S%.3f");
        let mut backup = self.path.with_file_name(format!("{stem}-{stamp}{ext}"));
        // Two rotations in one millisecond: never overwrite a backup.
        let mut n = 1;
        while backup.exists() {
            backup = self.path.with_file_name(format!("{stem}-{stamp}.{n}{ext}"));
            n += 1;
        }
        std::fs::rename(&self.path, &backup)?;
        self.file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.size = 0;
        self.prune(&stem, &ext);
        Ok(())
    }

    /// Removes the backups beyond `max_backups` (oldest first) and older than
    /// `max_age_days`.
    fn prune(&self, stem: &str, ext: &str) {
        let dir = self
            .path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        let prefix = format!("{stem}-");
        let mut backups: Vec<(String, std::path::PathBuf, std::time::SystemTime)> = entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                let ok = name.starts_with(&prefix)
                    && name.ends_with(ext)
                    && name.len() > prefix.len() + ext.len();
                let modified = e.metadata().and_then(|m| m.modified()).ok()?;
                ok.then(|| (name, e.path(), modified))
            })
            .collect();
        // Newest first: the timestamps in the names sort as time does.
        backups.sort_by(|a, b| b.0.cmp(&a.0));
        let max_age = std::time::Duration::from_secs(self.rotation.max_age_days * 86_400);
        for (i, (_, path, modified)) in backups.iter().enumerate() {
            let too_many = self.rotation.max_backups > 0 && i >= self.rotation.max_backups;
            let too_old =
                self.rotation.max_age_days > 0 && modified.elapsed().is_ok_and(|age| age > max_age);
            if (too_many || too_old)
                && let Err(err) = std::fs::remove_file(path)
            {
                tracing::warn!(%err, path = %path.display(), "cannot remove an old audit log");
            }
        }
    }
}

impl Write for RotatingFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let max = self.rotation.max_size_mb.saturating_mul(1024 * 1024);
        if max > 0 && self.size > 0 && self.size + buf.len() as u64 > max {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl Auditor {
    /// Opens the log (appending, rotated by `rotation`) with the policy file.
    pub fn open(policy: &Path, log: &Path, rotation: Rotation) -> Result<Auditor, Error> {
        let text = std::fs::read_to_string(policy)
            .map_err(|e| Error::Config(format!("--audit-policy-file {}: {e}", policy.display())))?;
        let policy = Policy::parse(&text)
            .map_err(|e| Error::Config(format!("--audit-policy-file {}: {e}", policy.display())))?;
        let out: Box<dyn Write + Send> =
            if log.as_os_str() == "-" {
                Box::new(std::io::stdout())
            } else {
                Box::new(RotatingFile::open(log, rotation).map_err(|e| {
                    Error::Config(format!("--audit-log-path {}: {e}", log.display()))
                })?)
            };
        Ok(Auditor {
            policy,
            out: Mutex::new(out),
        })
    }

    /// Starts the record of a request (`None` when its level is `None`).
    pub fn start(
        &self,
        info: &RequestInfo,
        uri: &str,
        user: &UserInfo,
        impersonator: Option<&UserInfo>,
        source_ip: &str,
        user_agent: &str,
    ) -> Option<Record> {
        // Impersonated requests are audited by the impersonated user's policy, as upstream
        // evaluates the policy after impersonation.
        let (level, omit) = self.policy.evaluate(user, info);
        if level == Level::None {
            return None;
        }
        let mut e = Map::new();
        e.insert("kind".into(), json!("Event"));
        e.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
        e.insert("level".into(), json!(level.as_str()));
        e.insert("auditID".into(), json!(uuid::Uuid::new_v4().to_string()));
        e.insert("requestURI".into(), json!(uri));
        e.insert("verb".into(), json!(info.verb));
        match impersonator {
            Some(real) => {
                e.insert("user".into(), user_json(real));
                e.insert("impersonatedUser".into(), user_json(user));
            }
            None => {
                e.insert("user".into(), user_json(user));
            }
        }
        e.insert("sourceIPs".into(), json!([source_ip]));
        if !user_agent.is_empty() {
            e.insert("userAgent".into(), json!(user_agent));
        }
        if info.is_resource_request {
            let mut o = Map::new();
            o.insert("resource".into(), json!(info.resource));
            for (k, v) in [
                ("namespace", &info.namespace),
                ("name", &info.name),
                ("apiGroup", &info.api_group),
                ("apiVersion", &info.api_version),
                ("subresource", &info.subresource),
            ] {
                if !v.is_empty() {
                    o.insert(k.into(), json!(v));
                }
            }
            e.insert("objectRef".into(), Value::Object(o));
        }
        e.insert("requestReceivedTimestamp".into(), json!(now_micro()));
        let record = Record {
            level,
            omit,
            event: e,
        };
        self.emit(&record, "RequestReceived");
        Some(record)
    }

    /// Records the authorization decision (`authorization.k8s.io/decision` and `/reason`).
    pub fn authorized(record: &mut Record, allowed: bool, reason: &str) {
        let ann = record
            .event
            .entry("annotations")
            .or_insert_with(|| json!({}));
        ann["authorization.k8s.io/decision"] = json!(if allowed { "allow" } else { "forbid" });
        ann["authorization.k8s.io/reason"] = json!(reason);
    }

    /// Adds admission plugins' annotations (a key already there keeps its value).
    pub fn annotate(record: &mut Record, annotations: std::collections::BTreeMap<String, String>) {
        let ann = record
            .event
            .entry("annotations")
            .or_insert_with(|| json!({}));
        if let Some(map) = ann.as_object_mut() {
            for (k, v) in annotations {
                map.entry(k).or_insert(Value::String(v));
            }
        }
    }

    /// Records the request object (level `Request` and above).
    pub fn request_object(&self, record: &mut Record, object: Value) {
        if record.level >= Level::Request {
            record
                .event
                .insert("requestObject".into(), self.strip(object));
        }
    }

    fn strip(&self, mut object: Value) -> Value {
        if self.policy.omit_managed_fields
            && let Some(m) = object["metadata"].as_object_mut()
        {
            m.remove("managedFields");
        }
        object
    }

    /// A watch started streaming.
    pub fn response_started(&self, record: &Record, code: u16) {
        let mut r = Record {
            level: record.level,
            omit: record.omit.clone(),
            event: record.event.clone(),
        };
        r.event.insert(
            "responseStatus".into(),
            json!({"metadata": {}, "code": code}),
        );
        self.emit(&r, "ResponseStarted");
    }

    /// The response is complete: its code, status and (at `RequestResponse`) object.
    pub fn complete(&self, mut record: Record, code: u16, body: Option<Value>) {
        let mut status = json!({"metadata": {}, "code": code});
        if let Some(b) = &body
            && b["kind"] == "Status"
        {
            for k in ["status", "message", "reason", "details"] {
                if let Some(v) = b.get(k).filter(|v| !v.is_null()) {
                    status[k] = v.clone();
                }
            }
        }
        record.event.insert("responseStatus".into(), status);
        if record.level >= Level::RequestResponse
            && let Some(b) = body
        {
            record.event.insert("responseObject".into(), self.strip(b));
        }
        self.emit(&record, "ResponseComplete");
    }

    fn emit(&self, record: &Record, stage: &str) {
        if record.omit.iter().any(|s| s == stage) {
            return;
        }
        let mut e = record.event.clone();
        e.insert("stage".into(), json!(stage));
        e.insert("stageTimestamp".into(), json!(now_micro()));
        let mut line = match serde_json::to_vec(&Value::Object(e)) {
            Ok(l) => l,
            Err(err) => {
                tracing::error!(%err, "cannot encode an audit event");
                return;
            }
        };
        line.push(b'\n');
        let mut out = match self.out.lock() {
            Ok(o) => o,
            Err(p) => p.into_inner(),
        };
        if let Err(err) = out.write_all(&line).and_then(|()| out.flush()) {
            tracing::error!(%err, "cannot write the audit log");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn logs_rotate_and_old_ones_go() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("audit.log");
        let rotation = Rotation {
            max_size_mb: 1,
            max_backups: 2,
            max_age_days: 0,
        };
        let mut f = RotatingFile::open(&path, rotation).unwrap();
        let chunk = vec![b'x'; 300 * 1024];
        for _ in 0..14 {
            f.write_all(&chunk).unwrap();
        }
        f.flush().unwrap();
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        // 14 chunks of 300 KiB, three to a file: four rotations, two backups kept.
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(names.contains(&"audit.log".to_string()));
        assert!(
            names
                .iter()
                .filter(|n| *n != "audit.log")
                .all(|n| n.starts_with("audit-") && n.ends_with(".log")),
            "{names:?}"
        );
        for n in &names {
            let len = std::fs::metadata(dir.path().join(n)).unwrap().len();
            assert!(len <= 1024 * 1024, "{n}: {len}");
        }
        // Without a size, nothing rotates.
        let other = dir.path().join("plain");
        let mut f = RotatingFile::open(&other, Rotation::default()).unwrap();
        for _ in 0..5 {
            f.write_all(&chunk).unwrap();
        }
        assert_eq!(std::fs::metadata(&other).unwrap().len(), 5 * 300 * 1024);
    }

    const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
  - level: None
    users: ["system:kube-proxy"]
  - level: None
    nonResourceURLs: ["/healthz*", "/version"]
  - level: Metadata
    resources:
      - group: ""
        resources: ["secrets", "configmaps"]
  - level: RequestResponse
    verbs: ["create", "update", "patch", "delete"]
    namespaces: ["audited"]
  - level: Request
    userGroups: ["dev"]
  - level: Metadata
"#;

    fn info(method: &str, path: &str) -> RequestInfo {
        RequestInfo::parse(&method.parse().unwrap(), path, &[])
    }

    #[test]
    fn first_matching_rule_decides() {
        let p = Policy::parse(POLICY).unwrap();
        let alice = UserInfo::new("alice", ["system:authenticated"]);
        let dev = UserInfo::new("bob", ["dev"]);
        let proxy = UserInfo::new("system:kube-proxy", Vec::<String>::new());
        let cases = [
            (&proxy, "GET", "/api/v1/pods", Level::None),
            (&alice, "GET", "/healthz/ready", Level::None),
            (
                &alice,
                "GET",
                "/api/v1/namespaces/x/secrets/s",
                Level::Metadata,
            ),
            (
                &dev,
                "POST",
                "/api/v1/namespaces/x/configmaps",
                Level::Metadata,
            ),
            (
                &alice,
                "POST",
                "/api/v1/namespaces/audited/pods",
                Level::RequestResponse,
            ),
            (
                &alice,
                "GET",
                "/api/v1/namespaces/audited/pods",
                Level::Metadata,
            ),
            (&dev, "GET", "/apis/apps/v1/deployments", Level::Request),
            (&alice, "GET", "/api", Level::Metadata),
        ];
        for (user, method, path, want) in cases {
            let (level, omit) = p.evaluate(user, &info(method, path));
            assert_eq!(level, want, "{method} {path} as {}", user.name);
            if level != Level::None {
                assert_eq!(omit, vec!["RequestReceived".to_string()]);
            }
        }
        assert!(Policy::parse("kind: Policy\nrules: []").is_err());
        assert!(Policy::parse("kind: Policy\nrules:\n- level: Loud").is_err());
    }
}
