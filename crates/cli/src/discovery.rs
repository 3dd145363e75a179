//! Discovery as kubectl does it: aggregated discovery of `/api` and `/apis` when the server
//! serves it, else the legacy documents (`/api`, `/apis`, then each group-version), behind
//! client-go's disk cache (`<cache-dir>/discovery/<host_port>/servergroups.json` and
//! `<group>/<version>/serverresources.json`, valid for 6 hours, invalidated when a resource
//! type is not found). The files have client-go's format, so the real kubectl and we read
//! each other's cache.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Deserializer, Serialize};

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::transport::{Request, RestClient};

/// The `Accept` kubectl 1.33's discovery client sends for `/api` and `/apis`.
pub const ACCEPT_DISCOVERY: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";

/// kubectl's discovery cache lifetime (cli-runtime's `toDiscoveryClient`: 6 hours).
pub const DEFAULT_TTL: Duration = Duration::from_secs(6 * 3600);

fn null_as_default<'de, D, T>(d: D) -> std::result::Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// `metav1.APIResource`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResource {
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub singular_name: String,
    #[serde(default)]
    pub namespaced: bool,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub group: String,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub kind: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub verbs: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub short_names: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub categories: Vec<String>,
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "String::is_empty"
    )]
    pub storage_version_hash: String,
}

/// `metav1.APIResourceList` (one group-version's resources).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceList {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub api_version: String,
    pub group_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub resources: Vec<ApiResource>,
}

/// `metav1.GroupVersionForDiscovery`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupVersionForDiscovery {
    pub group_version: String,
    pub version: String,
}

/// `metav1.APIGroup` (the core group has the empty name).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroup {
    #[serde(default)]
    pub name: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub versions: Vec<GroupVersionForDiscovery>,
    #[serde(default)]
    pub preferred_version: GroupVersionForDiscovery,
}

/// `metav1.APIGroupList`, as `servergroups.json` holds it (the core group first).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApiGroupList {
    #[serde(default)]
    pub kind: String,
    #[serde(default)]
    pub api_version: String,
    #[serde(default, deserialize_with = "null_as_default")]
    pub groups: Vec<ApiGroup>,
}

/// What discovery found: the groups in the server's order and every group-version's
/// resources (client-go's `ServerGroupsAndResources`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Discovery {
    pub groups: Vec<ApiGroup>,
    /// Keyed by group-version (`v1`, `apps/v1`).
    pub resources: BTreeMap<String, ApiResourceList>,
}

/// `group/version` (or `version` for the core group).
pub fn group_version(group: &str, version: &str) -> String {
    if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    }
}

/// Splits `apps/v1` into (`apps`, `v1`) and `v1` into (``, `v1`).
pub fn split_group_version(gv: &str) -> (&str, &str) {
    match gv.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", gv),
    }
}

impl Discovery {
    /// The group-versions in discovery order: groups as served, each group's versions as
    /// listed (`ServerGroupsAndResources`).
    pub fn group_versions(&self) -> Vec<(String, String)> {
        self.groups
            .iter()
            .flat_map(|g| {
                g.versions
                    .iter()
                    .map(|v| (g.name.clone(), v.version.clone()))
            })
            .collect()
    }

    /// `api-versions`: every group-version, sorted as kubectl prints them.
    pub fn api_versions(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .groups
            .iter()
            .flat_map(|g| g.versions.iter().map(|v| v.group_version.clone()))
            .collect();
        v.sort();
        v
    }

    /// client-go's `ServerPreferredResources`: each group-resource once, in its group's
    /// preferred version when it has one there, else in the first version listing it;
    /// (group, version, resource) triples in discovery order.
    pub fn preferred_resources(&self) -> Vec<(String, String, ApiResource)> {
        let mut chosen: Vec<(String, String, ApiResource)> = Vec::new();
        for g in &self.groups {
            for v in &g.versions {
                let gv = group_version(&g.name, &v.version);
                let Some(list) = self.resources.get(&gv) else {
                    continue;
                };
                for r in &list.resources {
                    if r.name.contains('/') {
                        continue;
                    }
                    let existing = chosen
                        .iter()
                        .position(|(cg, _, cr)| *cg == g.name && cr.name == r.name);
                    match existing {
                        Some(i) => {
                            if v.version == g.preferred_version.version {
                                chosen[i] = (g.name.clone(), v.version.clone(), r.clone());
                            }
                        }
                        None => chosen.push((g.name.clone(), v.version.clone(), r.clone())),
                    }
                }
            }
        }
        chosen
    }
}

/// Aggregated discovery (`apidiscovery.k8s.io/v2`/`v2beta1` `APIGroupDiscoveryList`) into
/// groups and resources, as client-go's `SplitGroupsAndResources` (stale versions are
/// left out).
pub fn split_aggregated(doc: &serde_json::Value) -> (Vec<ApiGroup>, Vec<ApiResourceList>) {
    let mut groups = Vec::new();
    let mut lists = Vec::new();
    let empty = Vec::new();
    let s = |v: &serde_json::Value, k: &str| {
        v.get(k)
            .and_then(|x| x.as_str())
            .unwrap_or_default()
            .to_string()
    };
    let strings = |v: &serde_json::Value, k: &str| -> Vec<String> {
        v.get(k)
            .and_then(|x| x.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    for item in doc
        .get("items")
        .and_then(|i| i.as_array())
        .unwrap_or(&empty)
    {
        let name = item
            .get("metadata")
            .map(|m| s(m, "name"))
            .unwrap_or_default();
        let mut group = ApiGroup {
            name: name.clone(),
            ..ApiGroup::default()
        };
        for v in item
            .get("versions")
            .and_then(|v| v.as_array())
            .unwrap_or(&empty)
        {
            let version = s(v, "version");
            if s(v, "freshness") == "Stale" {
                continue;
            }
            let gv = GroupVersionForDiscovery {
                group_version: group_version(&name, &version),
                version: version.clone(),
            };
            if group.preferred_version == GroupVersionForDiscovery::default() {
                group.preferred_version = gv.clone();
            }
            group.versions.push(gv.clone());
            let mut list = ApiResourceList {
                kind: "APIResourceList".into(),
                api_version: "v1".into(),
                group_version: gv.group_version.clone(),
                resources: Vec::new(),
            };
            for r in v
                .get("resources")
                .and_then(|r| r.as_array())
                .unwrap_or(&empty)
            {
                let Some(rk) = r.get("responseKind").filter(|k| !s(k, "kind").is_empty()) else {
                    continue;
                };
                let parent = ApiResource {
                    name: s(r, "resource"),
                    singular_name: s(r, "singularResource"),
                    namespaced: s(r, "scope") == "Namespaced",
                    group: s(rk, "group"),
                    version: s(rk, "version"),
                    kind: s(rk, "kind"),
                    verbs: strings(r, "verbs"),
                    short_names: strings(r, "shortNames"),
                    categories: strings(r, "categories"),
                    storage_version_hash: String::new(),
                };
                let subs: Vec<ApiResource> = r
                    .get("subresources")
                    .and_then(|x| x.as_array())
                    .unwrap_or(&empty)
                    .iter()
                    .filter_map(|sr| {
                        let k = sr
                            .get("responseKind")
                            .filter(|k| !s(k, "kind").is_empty())?;
                        Some(ApiResource {
                            name: format!("{}/{}", parent.name, s(sr, "subresource")),
                            singular_name: parent.singular_name.clone(),
                            namespaced: parent.namespaced,
                            group: s(k, "group"),
                            version: s(k, "version"),
                            kind: s(k, "kind"),
                            verbs: strings(sr, "verbs"),
                            ..ApiResource::default()
                        })
                    })
                    .collect();
                list.resources.push(parent);
                list.resources.extend(subs);
            }
            lists.push(list);
        }
        groups.push(group);
    }
    (groups, lists)
}

fn is_aggregated(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|ct| {
        ct.contains("g=apidiscovery.k8s.io") && ct.contains("as=APIGroupDiscoveryList")
    })
}

/// client-go's `computeDiscoverCacheDir`: the server URL without its scheme, every
/// character but word characters, `(`, `)`, `/` and `.` replaced by `_`.
pub fn host_cache_dir(parent: &Path, host: &str) -> PathBuf {
    let schemeless = host.replacen("https://", "", 1).replacen("http://", "", 1);
    let safe: String = schemeless
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '(' | ')' | '/' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let mut p = parent.to_path_buf();
    for part in safe.split('/').filter(|s| !s.is_empty() && *s != ".") {
        p.push(part);
    }
    p
}

/// kubectl's cache root: `--cache-dir`, else `$KUBECACHEDIR`, else `~/.kube/cache`.
pub fn cache_root(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag.filter(|p| !p.as_os_str().is_empty()) {
        return p.to_path_buf();
    }
    if let Some(d) = std::env::var_os("KUBECACHEDIR").filter(|d| !d.is_empty()) {
        return PathBuf::from(d);
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_default();
    home.join(".kube").join("cache")
}

/// A live discovery result as client-go's `GroupsAndMaybeResources` returns it: the
/// resources are there only when the server served aggregated discovery.
struct Live {
    groups: Vec<ApiGroup>,
    resources: Option<BTreeMap<String, ApiResourceList>>,
}

/// client-go's `CachedDiscoveryClient` over its memory-cached delegate, for one command
/// run.
pub struct DiscoveryClient<'a> {
    client: &'a RestClient,
    /// `<cache-dir>/discovery/<host_port>`.
    pub dir: PathBuf,
    pub ttl: Duration,
    /// Files this process wrote (used even after an invalidation).
    ours: HashSet<PathBuf>,
    invalidated: bool,
    /// Whether every cache file used was written by this process (then a miss is real and
    /// discovery is not retried).
    fresh: bool,
    live: Option<Live>,
}

impl<'a> DiscoveryClient<'a> {
    pub fn new(client: &'a RestClient, cache_root: &Path) -> Self {
        DiscoveryClient {
            client,
            dir: host_cache_dir(&cache_root.join("discovery"), &client.server),
            ttl: DEFAULT_TTL,
            ours: HashSet::new(),
            invalidated: false,
            fresh: true,
            live: None,
        }
    }

    /// The discovery client of a command: the kubeconfig's server under the cache root of
    /// `--cache-dir`.
    pub async fn for_ctx(ctx: &'a Ctx) -> Result<DiscoveryClient<'a>> {
        let client = ctx.client().await?;
        Ok(Self::new(
            client,
            &cache_root(ctx.global.cache_dir.as_deref()),
        ))
    }

    /// Whether every cache file used was ours (client-go's `Fresh`).
    pub fn fresh(&self) -> bool {
        self.fresh
    }

    /// Ignores every cache file not written from now on (client-go's `Invalidate`).
    pub fn invalidate(&mut self) {
        self.ours.clear();
        self.fresh = true;
        self.invalidated = true;
        self.live = None;
    }

    fn read_cached(&mut self, path: &Path) -> Option<Vec<u8>> {
        let ours = self.ours.contains(path);
        if self.invalidated && !ours {
            return None;
        }
        let meta = std::fs::metadata(path).ok()?;
        let modified = meta.modified().ok()?;
        if SystemTime::now() > modified + self.ttl {
            return None;
        }
        let bytes = std::fs::read(path).ok()?;
        self.fresh = self.fresh && ours;
        Some(bytes)
    }

    fn write_cached(&mut self, path: &Path, value: &impl Serialize) {
        if write_atomic(path, value).is_ok() {
            self.ours.insert(path.to_path_buf());
        }
    }

    async fn live(&mut self) -> Result<&Live> {
        if self.live.is_none() {
            let live = fetch_groups_and_maybe_resources(self.client).await?;
            self.live = Some(live);
        }
        self.live
            .as_ref()
            .ok_or_else(|| CliError::msg("discovery failed"))
    }

    /// `ServerGroups`: `servergroups.json` when valid, else from the server (written back).
    pub async fn server_groups(&mut self) -> Result<Vec<ApiGroup>> {
        let path = self.dir.join("servergroups.json");
        if let Some(bytes) = self.read_cached(&path)
            && let Ok(list) = serde_json::from_slice::<ApiGroupList>(&bytes)
        {
            return Ok(list.groups);
        }
        let groups = self.live().await?.groups.clone();
        if !groups.is_empty() {
            let list = ApiGroupList {
                kind: "APIGroupList".into(),
                api_version: "v1".into(),
                groups: groups.clone(),
            };
            self.write_cached(&path, &list);
        }
        Ok(groups)
    }

    /// `ServerResourcesForGroupVersion`: the cached file when valid, else from the
    /// aggregated document already fetched, else the legacy `/api/v1` or
    /// `/apis/<group>/<version>` (written back unless empty).
    pub async fn server_resources(&mut self, gv: &str) -> Result<ApiResourceList> {
        let path = self.dir.join(gv).join("serverresources.json");
        if let Some(bytes) = self.read_cached(&path)
            && let Ok(list) = serde_json::from_slice::<ApiResourceList>(&bytes)
        {
            return Ok(list);
        }
        let live = self.live().await?;
        let list = match &live.resources {
            Some(all) => all.get(gv).cloned().ok_or_else(|| {
                CliError::msg(format!(
                    "the server could not find the requested resource ({gv})"
                ))
            })?,
            None => fetch_resource_list(self.client, gv).await?,
        };
        if !list.resources.is_empty() {
            self.write_cached(&path, &list);
        }
        Ok(list)
    }

    /// `ServerGroupsAndResources`: the groups and every group-version's resources (a
    /// group-version that fails is left out, as kubectl warns and goes on).
    pub async fn discover(&mut self) -> Result<Discovery> {
        let groups = self.server_groups().await?;
        let mut resources = BTreeMap::new();
        let gvs: Vec<String> = groups
            .iter()
            .flat_map(|g| g.versions.iter().map(|v| v.group_version.clone()))
            .collect();
        // Cached and aggregated lists first; what is left is fetched in parallel.
        let mut missing = Vec::new();
        for gv in &gvs {
            let path = self.dir.join(gv).join("serverresources.json");
            if let Some(bytes) = self.read_cached(&path)
                && let Ok(list) = serde_json::from_slice::<ApiResourceList>(&bytes)
            {
                resources.insert(gv.clone(), list);
            } else {
                missing.push(gv.clone());
            }
        }
        if !missing.is_empty() {
            let live = self.live().await?;
            let mut fetched: Vec<(String, ApiResourceList)> = Vec::new();
            match &live.resources {
                Some(all) => {
                    for gv in &missing {
                        if let Some(l) = all.get(gv) {
                            fetched.push((gv.clone(), l.clone()));
                        }
                    }
                }
                None => {
                    let client = self.client;
                    let results = futures::future::join_all(
                        missing.iter().map(|gv| fetch_resource_list(client, gv)),
                    )
                    .await;
                    for (gv, r) in missing.iter().zip(results) {
                        if let Ok(l) = r {
                            fetched.push((gv.clone(), l));
                        }
                    }
                }
            }
            for (gv, list) in fetched {
                if !list.resources.is_empty() {
                    let path = self.dir.join(&gv).join("serverresources.json");
                    self.write_cached(&path, &list);
                }
                resources.insert(gv, list);
            }
        }
        Ok(Discovery { groups, resources })
    }
}

/// Writes `value` as JSON (one line, as Go's encoder) through a temporary file and a rename,
/// with client-go's modes (directories 0750, files 0660).
fn write_atomic(path: &Path, value: &impl Serialize) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    create_dirs(dir)?;
    let mut bytes = serde_json::to_vec(value).map_err(std::io::Error::other)?;
    bytes.push(b'\n');
    write_bytes_atomic(path, &bytes)
}

pub(crate) fn create_dirs(dir: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o750)
            .create(dir)
    }
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

pub(crate) fn write_bytes_atomic(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| std::io::Error::other("no parent directory"))?;
    let base = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let tmp = dir.join(format!(
        "{base}.{}{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or_default()
    ));
    std::fs::write(&tmp, bytes)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o660));
    }
    let r = std::fs::rename(&tmp, path);
    if r.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    r
}

/// One discovery document: (content type, JSON), or `None` for a 404.
async fn get_discovery_doc(
    client: &RestClient,
    path: &str,
    accept: &str,
) -> Result<Option<(Option<String>, serde_json::Value)>> {
    let resp = client.send(Request::get(path).accept(accept)).await?;
    if resp.status == http::StatusCode::NOT_FOUND {
        return Ok(None);
    }
    let ct = resp
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    let json = resp.json()?;
    Ok(Some((ct, json)))
}

/// client-go's `GroupsAndMaybeResources`: `/api` and `/apis` asking for aggregated
/// discovery; the resources come back only when both were aggregated.
async fn fetch_groups_and_maybe_resources(client: &RestClient) -> Result<Live> {
    let mut groups = Vec::new();
    let mut all: Option<BTreeMap<String, ApiResourceList>> = None;
    let mut legacy = false;
    // /api
    match get_discovery_doc(client, "/api?timeout=32s", ACCEPT_DISCOVERY).await? {
        Some((ct, doc)) if is_aggregated(ct.as_deref()) => {
            let (g, lists) = split_aggregated(&doc);
            groups.extend(g);
            let m = all.get_or_insert_with(BTreeMap::new);
            for l in lists {
                m.insert(l.group_version.clone(), l);
            }
        }
        Some((_, doc)) => {
            legacy = true;
            let versions: Vec<GroupVersionForDiscovery> = doc
                .get("versions")
                .and_then(|v| v.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str())
                        .map(|v| GroupVersionForDiscovery {
                            group_version: v.to_string(),
                            version: v.to_string(),
                        })
                        .collect()
                })
                .unwrap_or_default();
            if let Some(first) = versions.first().cloned() {
                groups.push(ApiGroup {
                    name: String::new(),
                    versions,
                    preferred_version: first,
                });
            }
        }
        None => {}
    }
    // /apis
    match get_discovery_doc(client, "/apis?timeout=32s", ACCEPT_DISCOVERY).await? {
        Some((ct, doc)) if is_aggregated(ct.as_deref()) => {
            let (g, lists) = split_aggregated(&doc);
            groups.extend(g);
            let m = all.get_or_insert_with(BTreeMap::new);
            for l in lists {
                m.insert(l.group_version.clone(), l);
            }
        }
        Some((_, doc)) => {
            legacy = true;
            let list: ApiGroupList = serde_json::from_value(doc)
                .map_err(|e| CliError::msg(format!("invalid discovery document: {e}")))?;
            groups.extend(list.groups);
        }
        None => {}
    }
    Ok(Live {
        groups,
        resources: if legacy { None } else { all },
    })
}

/// The legacy resource list of one group-version.
async fn fetch_resource_list(client: &RestClient, gv: &str) -> Result<ApiResourceList> {
    let path = if gv.contains('/') {
        format!("/apis/{gv}?timeout=32s")
    } else {
        format!("/api/{gv}?timeout=32s")
    };
    let doc = client
        .send(Request::get(path).accept("application/json"))
        .await?
        .json()?;
    serde_json::from_value(doc)
        .map_err(|e| CliError::msg(format!("invalid discovery document for {gv}: {e}")))
}

/// client-go's HTTP cache (`<cache-dir>/http`, the disk cache behind kubectl's discovery
/// and OpenAPI requests): one file per URL named by the SHA-256 of the URL, holding the
/// SHA-256 of the response followed by the response as Go's `httputil.DumpResponse` writes
/// it (status line, headers, body). Same format both ways, so kubectl and we share entries.
pub struct HttpCache {
    pub dir: PathBuf,
}

/// A cached response.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CachedResponse {
    pub status: u16,
    /// Header names lowercased, in file order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl CachedResponse {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn sha256(bytes: &[u8]) -> [u8; 32] {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).into()
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Go's `http.CanonicalHeaderKey` (`etag` → `Etag`, `x-varied-accept` → `X-Varied-Accept`).
fn canonical_header(name: &str) -> String {
    name.split('-')
        .map(|part| {
            let mut c = part.chars();
            match c.next() {
                Some(f) => f.to_ascii_uppercase().to_string() + &c.as_str().to_ascii_lowercase(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join("-")
}

/// A response as `httputil.DumpResponse` writes it (headers sorted, `Content-Length`).
pub fn dump_response(
    status: u16,
    reason: &str,
    headers: &[(String, String)],
    body: &[u8],
) -> Vec<u8> {
    let mut hs: Vec<(String, String)> = headers
        .iter()
        .filter(|(k, _)| {
            !k.eq_ignore_ascii_case("content-length")
                && !k.eq_ignore_ascii_case("transfer-encoding")
        })
        .map(|(k, v)| (canonical_header(k), v.clone()))
        .collect();
    hs.push(("Content-Length".into(), body.len().to_string()));
    hs.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = format!("HTTP/1.1 {status} {reason}\r\n").into_bytes();
    for (k, v) in hs {
        out.extend_from_slice(format!("{k}: {v}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(body);
    out
}

/// Parses a dumped response (a chunked body is decoded).
pub fn parse_response(bytes: &[u8]) -> Option<CachedResponse> {
    let split = bytes.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&bytes[..split]).ok()?;
    let rest = &bytes[split + 4..];
    let mut lines = head.split("\r\n");
    let status: u16 = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.eq_ignore_ascii_case("chunked"));
    let body = if chunked {
        let mut body = Vec::new();
        let mut at = rest;
        loop {
            let eol = at.windows(2).position(|w| w == b"\r\n")?;
            let size_text = std::str::from_utf8(&at[..eol]).ok()?;
            let size = usize::from_str_radix(size_text.split(';').next()?.trim(), 16).ok()?;
            at = &at[eol + 2..];
            if size == 0 {
                break;
            }
            body.extend_from_slice(at.get(..size)?);
            at = at.get(size + 2..)?;
        }
        body
    } else {
        let len = headers
            .iter()
            .find(|(k, _)| k == "content-length")
            .and_then(|(_, v)| v.parse::<usize>().ok())
            .unwrap_or(rest.len())
            .min(rest.len());
        rest[..len].to_vec()
    };
    Some(CachedResponse {
        status,
        headers,
        body,
    })
}

impl HttpCache {
    pub fn new(cache_root: &Path) -> Self {
        HttpCache {
            dir: cache_root.join("http"),
        }
    }

    fn file(&self, url: &str) -> PathBuf {
        self.dir.join(hex(&sha256(url.as_bytes())))
    }

    /// The entry of `url` when present and intact.
    pub fn get(&self, url: &str) -> Option<CachedResponse> {
        let bytes = std::fs::read(self.file(url)).ok()?;
        if bytes.len() < 32 || sha256(&bytes[32..]) != bytes[..32] {
            return None;
        }
        parse_response(&bytes[32..])
    }

    /// Stores a response for `url` (errors ignored, as client-go does).
    pub fn set(&self, url: &str, dumped: &[u8]) {
        if create_dirs(&self.dir).is_err() {
            return;
        }
        let mut bytes = sha256(dumped).to_vec();
        bytes.extend_from_slice(dumped);
        let _ = write_bytes_atomic(&self.file(url), &bytes);
    }

    /// GET `path` through the cache: a content-addressed URL (`?hash=H`) whose cached entry
    /// carries the ETag `H` is answered from disk without a request; anything else is
    /// fetched and its answer stored (with `X-Varied-Accept` when it varies on `Accept`).
    pub async fn fetch(&self, client: &RestClient, path: &str, accept: &str) -> Result<Vec<u8>> {
        let url = format!("{}{path}", client.server);
        if let Some(hash) = query_param(path, "hash")
            && let Some(entry) = self.get(&url)
            && entry.status == 200
            && entry.header("etag").map(|e| e.trim_matches('"')) == Some(hash)
            && vary_matches(&entry, accept)
        {
            return Ok(entry.body);
        }
        let resp = client.send(Request::get(path).accept(accept)).await?.ok()?;
        let cache_control = resp
            .headers
            .get(http::header::CACHE_CONTROL)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        if !cache_control.contains("no-store") {
            let mut headers: Vec<(String, String)> = resp
                .headers
                .iter()
                .filter_map(|(k, v)| Some((k.as_str().to_string(), v.to_str().ok()?.to_string())))
                .collect();
            let varies = resp
                .headers
                .get_all(http::header::VARY)
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .any(|v| v.trim().eq_ignore_ascii_case("accept"));
            if varies {
                headers.push(("X-Varied-Accept".into(), accept.to_string()));
            }
            let dumped = dump_response(
                resp.status.as_u16(),
                resp.status.canonical_reason().unwrap_or_default(),
                &headers,
                &resp.body,
            );
            self.set(&url, &dumped);
        }
        Ok(resp.body.to_vec())
    }
}

fn vary_matches(entry: &CachedResponse, accept: &str) -> bool {
    let varies = entry.header("vary").is_some_and(|v| {
        v.split(',')
            .any(|v| v.trim().eq_ignore_ascii_case("accept"))
    });
    !varies || entry.header("x-varied-accept") == Some(accept)
}

fn query_param<'a>(path: &'a str, name: &str) -> Option<&'a str> {
    let (_, query) = path.split_once('?')?;
    query.split('&').find_map(|kv| {
        let (k, v) = kv.split_once('=')?;
        (k == name).then_some(v)
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use serde_json::json;

    #[test]
    fn cache_dir_names() {
        let p = Path::new("/h/.kube/cache/discovery");
        assert_eq!(
            host_cache_dir(p, "https://127.0.0.1:6443"),
            PathBuf::from("/h/.kube/cache/discovery/127.0.0.1_6443")
        );
        assert_eq!(
            host_cache_dir(p, "https://my-host.example.com:443/prefix/"),
            PathBuf::from("/h/.kube/cache/discovery/my_host.example.com_443/prefix")
        );
        assert_eq!(
            host_cache_dir(p, "http://[::1]:8080"),
            PathBuf::from("/h/.kube/cache/discovery/___1__8080")
        );
    }

    #[test]
    fn aggregated_split() {
        let doc = json!({
            "kind": "APIGroupDiscoveryList",
            "items": [{
                "metadata": {"name": "apps"},
                "versions": [
                    {"version": "v1", "freshness": "Current", "resources": [{
                        "resource": "deployments",
                        "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"},
                        "scope": "Namespaced",
                        "singularResource": "deployment",
                        "verbs": ["get", "list"],
                        "shortNames": ["deploy"],
                        "categories": ["all"],
                        "subresources": [{
                            "subresource": "scale",
                            "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                            "verbs": ["get"]
                        }]
                    }]},
                    {"version": "v1beta1", "freshness": "Stale", "resources": []}
                ]
            }]
        });
        let (groups, lists) = split_aggregated(&doc);
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].versions.len(), 1);
        assert_eq!(groups[0].preferred_version.group_version, "apps/v1");
        assert_eq!(lists[0].resources.len(), 2);
        assert_eq!(lists[0].resources[1].name, "deployments/scale");
        assert_eq!(lists[0].resources[1].group, "autoscaling");
        assert_eq!(lists[0].resources[1].singular_name, "deployment");
        let json = serde_json::to_value(&lists[0]).unwrap();
        assert_eq!(json["resources"][0]["shortNames"][0], "deploy");
        assert!(json["resources"][1].get("shortNames").is_none());
    }

    #[test]
    fn reads_kubectl_files() {
        let groups: ApiGroupList = serde_json::from_str(
            r#"{"kind":"APIGroupList","apiVersion":"v1","groups":[{"name":"","versions":[{"groupVersion":"v1","version":"v1"}],"preferredVersion":{"groupVersion":"v1","version":"v1"}}]}"#,
        )
        .unwrap();
        assert_eq!(groups.groups[0].name, "");
        let list: ApiResourceList = serde_json::from_str(
            r#"{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"v1","resources":[{"name":"bindings","singularName":"binding","namespaced":true,"version":"v1","kind":"Binding","verbs":["create"]},{"name":"x","singularName":"","namespaced":false,"kind":"X","verbs":null}]}"#,
        )
        .unwrap();
        assert_eq!(list.resources[1].verbs, Vec::<String>::new());
    }

    #[test]
    fn preferred_resources_pick_the_preferred_version() {
        let r = |name: &str| ApiResource {
            name: name.into(),
            kind: "K".into(),
            ..ApiResource::default()
        };
        let mut resources = BTreeMap::new();
        resources.insert(
            "autoscaling/v2".to_string(),
            ApiResourceList {
                group_version: "autoscaling/v2".into(),
                resources: vec![r("horizontalpodautoscalers")],
                ..ApiResourceList::default()
            },
        );
        resources.insert(
            "autoscaling/v1".to_string(),
            ApiResourceList {
                group_version: "autoscaling/v1".into(),
                resources: vec![r("horizontalpodautoscalers"), r("other")],
                ..ApiResourceList::default()
            },
        );
        let gv = |v: &str| GroupVersionForDiscovery {
            group_version: format!("autoscaling/{v}"),
            version: v.into(),
        };
        let d = Discovery {
            groups: vec![ApiGroup {
                name: "autoscaling".into(),
                versions: vec![gv("v2"), gv("v1")],
                preferred_version: gv("v2"),
            }],
            resources,
        };
        let p = d.preferred_resources();
        assert_eq!(p.len(), 2);
        assert_eq!(p[0].1, "v2");
        assert_eq!(p[1].1, "v1");
        assert_eq!(d.api_versions(), vec!["autoscaling/v1", "autoscaling/v2"]);
    }

    #[test]
    fn http_cache_entries_as_client_go() {
        let dir = tempfile::tempdir().unwrap();
        let cache = HttpCache::new(dir.path());
        let dumped = dump_response(
            200,
            "OK",
            &[
                ("etag".into(), "\"ABC\"".into()),
                ("content-type".into(), "application/json".into()),
                ("vary".into(), "Accept".into()),
                ("X-Varied-Accept".into(), "application/json".into()),
            ],
            b"{\"a\":1}",
        );
        let text = String::from_utf8(dumped.clone()).unwrap();
        assert_eq!(
            text,
            "HTTP/1.1 200 OK\r\nContent-Length: 7\r\nContent-Type: application/json\r\nEtag: \"ABC\"\r\nVary: Accept\r\nX-Varied-Accept: application/json\r\n\r\n{\"a\":1}"
        );
        let url = "https://127.0.0.1:6443/openapi/v3/api/v1?hash=ABC&timeout=32s";
        cache.set(url, &dumped);
        let name = hex(&sha256(url.as_bytes()));
        assert!(dir.path().join("http").join(&name).exists());
        let entry = cache.get(url).unwrap();
        assert_eq!(entry.body, b"{\"a\":1}");
        assert_eq!(entry.header("ETag"), Some("\"ABC\""));
        assert!(vary_matches(&entry, "application/json"));
        assert!(!vary_matches(&entry, "*/*"));
        assert_eq!(query_param("/x?hash=ABC&timeout=32s", "hash"), Some("ABC"));
        // A corrupted entry is a miss.
        std::fs::write(dir.path().join("http").join(&name), b"garbage").unwrap();
        assert!(cache.get(url).is_none());
        // Chunked bodies (Go dumps responses of unknown length so).
        let chunked = b"HTTP/2.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n";
        assert_eq!(parse_response(chunked).unwrap().body, b"abcde");
    }
}
