//! The OpenAPI documents served at `/openapi/v2` and `/openapi/v3`.
//!
//! What kubectl reads (1.27–1.33):
//!
//! - `/openapi/v3` (index) and `/openapi/v3/<api/v1|apis/G/V>?hash=…` (JSON): `explain`
//!   (finds the kind of a resource through the `x-kubernetes-group-version-kind` of the
//!   operations on its paths, then the component schema carrying that GVK), the server-side
//!   field validation check (`QueryParamVerifierV3`: the PATCH operation of the kind must
//!   declare the `fieldValidation` query parameter, otherwise kubectl validates on the client
//!   against v2), and since 1.29 `apply`'s strategic merge patch (patch metadata from the
//!   component schemas; the PATCH request body must accept
//!   `application/strategic-merge-patch+json`).
//! - `/openapi/v2` with `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf`
//!   only (client-go's `OpenAPISchema` has no JSON fallback): kubectl 1.27 and 1.28 parse it
//!   before every `explain` and every validated `create`/`apply`/`replace`, and use it for
//!   `apply`/`diff` patches; later versions only as a fallback (`explain
//!   --output=plaintext-openapiv2`, kinds missing from v3).
//!
//! [`OpenApiDocs`] builds each document on first request and keeps its serialized bytes; the
//! schema tree itself is shared with [`crate::schema`]. A server builds a new `OpenApiDocs`
//! when the served resources change (custom resources); construction is cheap.

mod gnostic;
mod render;
pub(crate) mod routes;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, OnceLock};

use bytes::Bytes;
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha512};

use crate::catalog::ResourceInfo;
use crate::schema::Schemas;
use routes::{PathItem, Routes};

/// `Content-Type` of JSON documents.
pub const JSON: &str = "application/json";
/// The media type client-go requests `/openapi/v2` with.
pub const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The media type upstream answers protobuf `/openapi/v2` requests with (and also accepts).
pub const V2_PROTOBUF_RESPONSE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";
/// The title of the documents.
pub const TITLE: &str = "Kubernetes";
/// The `info.version` of the documents unless [`OpenApiDocs::with_version`] sets another
/// (what upstream's server publishes).
pub const DEFAULT_VERSION: &str = "unversioned";

/// A serialized document and its hash: upper-case hexadecimal SHA-512 of the JSON form, as
/// upstream computes it. It is the `hash` query parameter of `/openapi/v3` URLs and, quoted,
/// the `ETag`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub body: Bytes,
    pub hash: Arc<str>,
}

/// The encodings of `/openapi/v2`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum V2Encoding {
    Json,
    Protobuf,
}

/// One clause of an `Accept` header.
struct Clause<'a> {
    ty: &'a str,
    subtype: &'a str,
    q: f32,
}

fn parse_accept(accept: Option<&str>) -> Vec<Clause<'_>> {
    let accept = match accept.map(str::trim) {
        Some(a) if !a.is_empty() => a,
        _ => "*/*",
    };
    let mut clauses: Vec<Clause<'_>> = accept
        .split(',')
        .filter_map(|part| {
            let mut pieces = part.split(';');
            let media = pieces.next()?.trim();
            let (ty, subtype) = match media.split_once('/') {
                Some((t, s)) => (t.trim(), s.trim()),
                None if media == "*" => ("*", "*"),
                None => return None,
            };
            let mut q = 1.0f32;
            for param in pieces {
                if let Some((k, v)) = param.split_once('=')
                    && k.trim() == "q"
                {
                    q = v.trim().parse().unwrap_or(0.0);
                }
            }
            Some(Clause { ty, subtype, q })
        })
        .filter(|c| c.q > 0.0)
        .collect();
    // As goautoneg orders them: higher quality first, then specific before wildcards.
    clauses.sort_by(|a, b| {
        b.q.total_cmp(&a.q)
            .then_with(|| (a.ty == "*").cmp(&(b.ty == "*")))
            .then_with(|| (a.subtype == "*").cmp(&(b.subtype == "*")))
    });
    clauses
}

fn negotiate<T: Copy>(accept: Option<&str>, offers: &[(&str, &str, T)]) -> Option<T> {
    for clause in parse_accept(accept) {
        for (ty, subtype, value) in offers {
            if (clause.ty == *ty || clause.ty == "*")
                && (clause.subtype == *subtype || clause.subtype == "*")
            {
                return Some(*value);
            }
        }
    }
    None
}

/// Picks the encoding of `/openapi/v2` for an `Accept` header (absent means `*/*`), as
/// upstream's handler does, with the `Content-Type` to answer with. `None`: answer 406.
pub fn negotiate_v2(accept: Option<&str>) -> Option<(V2Encoding, &'static str)> {
    negotiate(
        accept,
        &[
            ("application", "json", (V2Encoding::Json, JSON)),
            (
                "application",
                "com.github.proto-openapi.spec.v2@v1.0+protobuf",
                (V2Encoding::Protobuf, V2_PROTOBUF_RESPONSE),
            ),
            (
                "application",
                "com.github.proto-openapi.spec.v2.v1.0+protobuf",
                (V2Encoding::Protobuf, V2_PROTOBUF_RESPONSE),
            ),
        ],
    )
}

/// Whether an `Accept` header admits the JSON form of `/openapi/v3` documents (the only one
/// served; client-go asks for `application/json`). `false`: answer 406.
pub fn accepts_v3_json(accept: Option<&str>) -> bool {
    negotiate(accept, &[("application", "json", ())]).is_some()
}

/// Upper-case hexadecimal SHA-512.
pub fn content_hash(data: &[u8]) -> String {
    hex_upper(&Sha512::digest(data))
}

fn document(value: &Value) -> Document {
    let body = serde_json::to_vec(value).unwrap_or_default();
    let hash: Arc<str> = Arc::from(content_hash(&body));
    Document {
        body: Bytes::from(body),
        hash,
    }
}

/// Writes a document with `write` and returns it with its hash.
fn written(write: impl FnOnce(&mut Vec<u8>)) -> Document {
    let mut body = Vec::new();
    write(&mut body);
    let hash: Arc<str> = Arc::from(content_hash(&body));
    Document {
        body: Bytes::from(body),
        hash,
    }
}

/// The hash of the document `write` would write, computed without keeping it.
fn hashed(write: impl FnOnce(&mut Sha512)) -> Arc<str> {
    let mut hasher = Sha512::new();
    write(&mut hasher);
    Arc::from(hex_upper(&hasher.finalize()))
}

fn hex_upper(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(out, "{b:02X}");
    }
    out
}

/// The key of a `/openapi/v3/<path>` document: `apis/apps/v1` from `apis/apps/v1`,
/// `/apis/apps/v1/` or `/openapi/v3/apis/apps/v1`.
fn scope_key(path: &str) -> &str {
    let path = path.trim_start_matches('/');
    path.strip_prefix("openapi/v3/")
        .unwrap_or(path)
        .trim_end_matches('/')
}

/// What one `/openapi/v3/<path>` document holds.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Scope {
    /// `api`: `GET /api/`.
    CoreRoot,
    /// `apis`: `GET /apis/`.
    GroupsRoot,
    /// `version`: `GET /version/`.
    Version,
    /// `apis/<group>`: `GET /apis/<group>/`.
    Group(String),
    /// `api/v1`, `apis/<group>/<version>`: the resources of one group version.
    GroupVersion(String, String),
}

#[derive(Default)]
struct Cached {
    document: OnceLock<Document>,
    hash: OnceLock<Arc<str>>,
}

/// The `/openapi/v2` and `/openapi/v3` documents of a set of served resources.
pub struct OpenApiDocs {
    resources: Vec<ResourceInfo>,
    schemas: Arc<Schemas>,
    version: String,
    /// `api/v1`, `apis/apps/v1`, … → what the document holds.
    scopes: BTreeMap<String, Scope>,
    v3: BTreeMap<String, Cached>,
    v3_index: OnceLock<Document>,
    v2_json: OnceLock<Document>,
    v2_protobuf: OnceLock<Document>,
    v2_hash: OnceLock<Arc<str>>,
}

impl std::fmt::Debug for OpenApiDocs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenApiDocs")
            .field("resources", &self.resources.len())
            .field("paths", &self.scopes.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl OpenApiDocs {
    /// The documents of `resources` (built-in and custom), with kinds looked up in
    /// `schemas`. Nothing is built until a document is requested.
    pub fn new(resources: Vec<ResourceInfo>, schemas: Arc<Schemas>) -> OpenApiDocs {
        let mut scopes = BTreeMap::new();
        scopes.insert("api".to_string(), Scope::CoreRoot);
        scopes.insert("apis".to_string(), Scope::GroupsRoot);
        scopes.insert("version".to_string(), Scope::Version);
        for r in &resources {
            if r.group.is_empty() {
                scopes.insert(
                    format!("api/{}", r.version),
                    Scope::GroupVersion(String::new(), r.version.clone()),
                );
            } else {
                scopes.insert(format!("apis/{}", r.group), Scope::Group(r.group.clone()));
                scopes.insert(
                    format!("apis/{}/{}", r.group, r.version),
                    Scope::GroupVersion(r.group.clone(), r.version.clone()),
                );
            }
        }
        let v3 = scopes
            .keys()
            .map(|k| (k.clone(), Cached::default()))
            .collect();
        OpenApiDocs {
            resources,
            schemas,
            version: DEFAULT_VERSION.to_string(),
            scopes,
            v3,
            v3_index: OnceLock::new(),
            v2_json: OnceLock::new(),
            v2_protobuf: OnceLock::new(),
            v2_hash: OnceLock::new(),
        }
    }

    /// The built-in resources of [`crate::catalog::builtin`] with the built-in schemas.
    pub fn builtin() -> OpenApiDocs {
        OpenApiDocs::new(
            crate::catalog::builtin(),
            Arc::new(Schemas::with_custom_resources(&[])),
        )
    }

    /// Sets `info.version` of the documents (the server's version, e.g. `v1.33.1`).
    #[must_use]
    pub fn with_version(mut self, version: &str) -> OpenApiDocs {
        self.version = version.to_string();
        self
    }

    /// The schemas the documents are built from.
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// The paths of the `/openapi/v3` documents (`api`, `api/v1`, `apis/apps/v1`, …).
    pub fn v3_paths(&self) -> Vec<&str> {
        self.scopes.keys().map(String::as_str).collect()
    }

    fn routes_for(&self, scope: &Scope) -> BTreeMap<String, PathItem> {
        let mut routes = Routes::default();
        match scope {
            Scope::CoreRoot => routes.add_root("/api/"),
            Scope::GroupsRoot => routes.add_root("/apis/"),
            Scope::Version => routes.add_root("/version/"),
            Scope::Group(g) => routes.add_group(g),
            Scope::GroupVersion(g, v) => {
                routes.add_group_version(g, v);
                for r in self
                    .resources
                    .iter()
                    .filter(|r| r.group == *g && r.version == *v)
                {
                    routes.add_resource(r, &self.schemas);
                }
            }
        }
        routes.finish()
    }

    fn build_v3(&self, scope: &Scope) -> Document {
        let paths = self.routes_for(scope);
        written(|out| render::write_v3_document(out, &paths, &self.schemas, TITLE, &self.version))
    }

    fn hash_v3(&self, scope: &Scope) -> Arc<str> {
        let paths = self.routes_for(scope);
        hashed(|out| render::write_v3_document(out, &paths, &self.schemas, TITLE, &self.version))
    }

    /// The document at `/openapi/v3/<path>` (`apis/apps/v1`; a leading `/` or
    /// `/openapi/v3/` is ignored), or `None` when there is no such document.
    pub fn v3_group_version(&self, path: &str) -> Option<Document> {
        let key = scope_key(path);
        let scope = self.scopes.get(key)?;
        let cached = self.v3.get(key)?;
        let doc = cached.document.get_or_init(|| self.build_v3(scope));
        let _ = cached.hash.set(doc.hash.clone());
        Some(doc.clone())
    }

    /// The hash of the document at `/openapi/v3/<path>` (computed without keeping the
    /// document when it was not served yet).
    pub fn v3_hash(&self, path: &str) -> Option<Arc<str>> {
        let key = scope_key(path);
        let scope = self.scopes.get(key)?;
        let cached = self.v3.get(key)?;
        if let Some(doc) = cached.document.get() {
            return Some(doc.hash.clone());
        }
        Some(cached.hash.get_or_init(|| self.hash_v3(scope)).clone())
    }

    /// The `/openapi/v3` index: `{"paths": {"apis/apps/v1": {"serverRelativeURL":
    /// "/openapi/v3/apis/apps/v1?hash=<HASH>"}, …}}`.
    pub fn v3_index(&self) -> Document {
        self.v3_index
            .get_or_init(|| {
                let mut paths = Map::new();
                for key in self.scopes.keys() {
                    if let Some(hash) = self.v3_hash(key) {
                        paths.insert(
                            key.clone(),
                            json!({ "serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}") }),
                        );
                    }
                }
                document(&json!({ "paths": paths }))
            })
            .clone()
    }

    fn v2_paths(&self) -> BTreeMap<String, PathItem> {
        let mut routes = Routes::default();
        routes.add_root("/api/");
        routes.add_root("/apis/");
        routes.add_root("/version/");
        let mut groups = BTreeSet::new();
        let mut group_versions = BTreeSet::new();
        for r in &self.resources {
            if !r.group.is_empty() {
                groups.insert(r.group.clone());
            }
            group_versions.insert((r.group.clone(), r.version.clone()));
            routes.add_resource(r, &self.schemas);
        }
        for g in &groups {
            routes.add_group(g);
        }
        for (g, v) in &group_versions {
            routes.add_group_version(g, v);
        }
        routes.finish()
    }

    fn v2_hash(&self, paths: &BTreeMap<String, PathItem>) -> Arc<str> {
        if let Some(doc) = self.v2_json.get() {
            return doc.hash.clone();
        }
        self.v2_hash
            .get_or_init(|| {
                hashed(|out| {
                    render::write_v2_document(out, paths, &self.schemas, TITLE, &self.version)
                })
            })
            .clone()
    }

    /// `/openapi/v2` as JSON.
    pub fn v2_json(&self) -> Document {
        self.v2_json
            .get_or_init(|| {
                let paths = self.v2_paths();
                let doc = written(|out| {
                    render::write_v2_document(out, &paths, &self.schemas, TITLE, &self.version)
                });
                let _ = self.v2_hash.set(doc.hash.clone());
                doc
            })
            .clone()
    }

    /// `/openapi/v2` as protobuf (`openapi.v2.Document` of gnostic), what client-go
    /// requests. Its hash is that of the JSON form, as upstream's `ETag`.
    pub fn v2_protobuf(&self) -> Document {
        self.v2_protobuf
            .get_or_init(|| {
                let paths = self.v2_paths();
                let hash = self.v2_hash(&paths);
                let info = json!({ "title": TITLE, "version": self.version });
                let body =
                    gnostic::encode_parts(gnostic::Parts {
                        swagger: "2.0",
                        info: &info,
                        paths: &mut paths
                            .iter()
                            .map(|(p, item)| (p.clone(), render::v2_path_item(item))),
                        definitions: &mut self.schemas.names().into_iter().filter_map(|n| {
                            self.schemas.v2_definition(n).map(|d| (n.to_string(), d))
                        }),
                        security: &render::v2_security(),
                        security_definitions: &render::v2_security_definitions(),
                    });
                Document {
                    body: Bytes::from(body),
                    hash,
                }
            })
            .clone()
    }

    /// `/openapi/v2` in the given encoding.
    pub fn v2(&self, encoding: V2Encoding) -> Document {
        match encoding {
            V2Encoding::Json => self.v2_json(),
            V2Encoding::Protobuf => self.v2_protobuf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::gnostic::wire;
    use super::*;
    use crate::schema::GVK_EXTENSION;

    fn docs() -> &'static OpenApiDocs {
        static DOCS: std::sync::LazyLock<OpenApiDocs> =
            std::sync::LazyLock::new(OpenApiDocs::builtin);
        &DOCS
    }

    fn v3(path: &str) -> Value {
        let doc = docs().v3_group_version(path).unwrap();
        serde_json::from_slice(&doc.body).unwrap()
    }

    #[test]
    fn negotiation() {
        assert_eq!(negotiate_v2(None), Some((V2Encoding::Json, JSON)));
        assert_eq!(
            negotiate_v2(Some(V2_PROTOBUF)),
            Some((V2Encoding::Protobuf, V2_PROTOBUF_RESPONSE))
        );
        assert_eq!(
            negotiate_v2(Some(
                "application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
            )),
            Some((V2Encoding::Protobuf, V2_PROTOBUF_RESPONSE))
        );
        assert_eq!(negotiate_v2(Some("text/html")), None);
        assert_eq!(negotiate_v2(Some("*/*")), Some((V2Encoding::Json, JSON)));
        assert!(accepts_v3_json(Some("application/json")));
        assert!(accepts_v3_json(None));
        assert!(!accepts_v3_json(Some(
            "application/com.github.proto-openapi.spec.v3@v1.0+protobuf"
        )));
    }

    #[test]
    fn index_lists_group_versions_with_stable_hashes() {
        let index: Value = serde_json::from_slice(&docs().v3_index().body).unwrap();
        let paths = index["paths"].as_object().unwrap();
        for key in [
            "api/v1",
            "apis/apps/v1",
            "apis/batch/v1",
            "apis/apps",
            "api",
            "apis",
            "version",
        ] {
            assert!(paths.contains_key(key), "{key}");
        }
        let url = paths["apis/apps/v1"]["serverRelativeURL"].as_str().unwrap();
        let hash = url.split("hash=").nth(1).unwrap();
        assert_eq!(hash.len(), 128);
        let doc = docs().v3_group_version("apis/apps/v1").unwrap();
        assert_eq!(&*doc.hash, hash);
        assert_eq!(content_hash(&doc.body), hash);
        // A fresh builder yields the same bytes.
        let again = OpenApiDocs::builtin()
            .v3_group_version("/openapi/v3/apis/apps/v1")
            .unwrap();
        assert_eq!(again, doc);
        assert!(docs().v3_group_version("apis/nope/v1").is_none());
    }

    #[test]
    fn deployments_document() {
        let doc = v3("apis/apps/v1");
        assert_eq!(doc["openapi"], "3.0.0");
        assert_eq!(doc["info"]["title"], "Kubernetes");
        assert_eq!(
            doc["components"]["securitySchemes"]["BearerToken"]["type"],
            "apiKey"
        );
        let item = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        let patch = &item["patch"];
        assert_eq!(
            patch[GVK_EXTENSION],
            json!({"group": "apps", "kind": "Deployment", "version": "v1"})
        );
        assert_eq!(patch["x-kubernetes-action"], "patch");
        let names: Vec<&str> = patch["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        for n in ["fieldValidation", "dryRun", "fieldManager", "force"] {
            assert!(names.contains(&n), "{n}");
        }
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_some()
        );
        for method in ["post", "put"] {
            let op = if method == "post" {
                &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"][method]
            } else {
                &item[method]
            };
            assert!(
                op["parameters"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|p| p["name"] == "fieldValidation" && p["in"] == "query")
            );
        }
        let list = &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments"]["get"];
        assert_eq!(list[GVK_EXTENSION]["kind"], "Deployment");
        assert_eq!(
            list["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/io.k8s.api.apps.v1.DeploymentList"
        );
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        let deploy = &schemas["io.k8s.api.apps.v1.Deployment"];
        assert_eq!(
            deploy[GVK_EXTENSION],
            json!([{"group": "apps", "kind": "Deployment", "version": "v1"}])
        );
        assert!(schemas.contains_key("io.k8s.api.apps.v1.DeploymentStrategy"));
        assert!(schemas.contains_key("io.k8s.api.autoscaling.v1.Scale"));
        assert!(schemas.contains_key("io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions"));
        assert!(!schemas.contains_key("io.k8s.api.core.v1.Node"));
        // Every reference inside the document resolves inside it.
        let text = serde_json::to_string(&doc).unwrap();
        for piece in text.split("\"$ref\":\"#/components/schemas/").skip(1) {
            let name = &piece[..piece.find('"').unwrap()];
            assert!(schemas.contains_key(name), "dangling {name}");
        }
    }

    #[test]
    fn every_patch_operation_declares_field_validation() {
        for key in docs().v3_paths() {
            let doc = v3(key);
            for (path, item) in doc["paths"].as_object().unwrap() {
                if let Some(patch) = item.get("patch") {
                    let params = patch["parameters"].as_array().unwrap();
                    assert!(
                        params.iter().any(|p| p["name"] == "fieldValidation"),
                        "{path}"
                    );
                    assert!(patch.get(GVK_EXTENSION).is_some(), "{path}");
                }
            }
        }
    }

    #[test]
    fn core_document() {
        let doc = v3("api/v1");
        let paths = doc["paths"].as_object().unwrap();
        assert!(paths.contains_key("/api/v1/"));
        assert!(paths.contains_key("/api/v1/namespaces/{namespace}/pods/{name}/eviction"));
        assert!(paths.contains_key("/api/v1/namespaces/{name}/finalize"));
        let eviction = &paths["/api/v1/namespaces/{namespace}/pods/{name}/eviction"]["post"];
        assert_eq!(eviction["operationId"], "createCoreV1NamespacedPodEviction");
        assert_eq!(eviction[GVK_EXTENSION]["group"], "policy");
        let schemas = doc["components"]["schemas"].as_object().unwrap();
        assert!(schemas.contains_key("io.k8s.api.core.v1.Event"));
        assert_eq!(
            schemas["io.k8s.api.core.v1.Event"][GVK_EXTENSION],
            json!([{"group": "", "kind": "Event", "version": "v1"}])
        );
        let events = v3("apis/events.k8s.io/v1");
        assert_eq!(
            events["components"]["schemas"]["io.k8s.api.events.v1.Event"][GVK_EXTENSION],
            json!([{"group": "events.k8s.io", "kind": "Event", "version": "v1"}])
        );
        let root = v3("api");
        assert_eq!(
            root["paths"]["/api/"]["get"]["operationId"],
            "getCoreAPIVersions"
        );
        let version = v3("version");
        assert!(
            version["components"]["schemas"]
                .get("io.k8s.apimachinery.pkg.version.Info")
                .is_some()
        );
    }

    #[test]
    fn v2_json_is_kubectl_parsable() {
        let doc: Value = serde_json::from_slice(&docs().v2_json().body).unwrap();
        assert_eq!(doc["swagger"], "2.0");
        let defs = doc["definitions"].as_object().unwrap();
        let text = serde_json::to_string(&doc).unwrap();
        assert!(!text.contains("#/components/schemas/"));
        for piece in text.split("\"$ref\":\"#/definitions/").skip(1) {
            let name = &piece[..piece.find('"').unwrap()];
            assert!(defs.contains_key(name), "dangling {name}");
        }
        // What k8s.io/kube-openapi/pkg/util/proto rejects.
        fn check(path: &str, s: &Value) {
            let Some(obj) = s.as_object() else { return };
            if obj.contains_key("$ref") {
                assert!(
                    !obj.contains_key("type") && !obj.contains_key("properties"),
                    "{path}"
                );
                return;
            }
            for k in ["oneOf", "anyOf", "allOf", "nullable", "default"] {
                assert!(!obj.contains_key(k), "{path} has {k}");
            }
            match obj.get("type") {
                Some(Value::String(t)) if t == "array" => {
                    assert!(obj.get("items").is_some_and(Value::is_object), "{path}");
                }
                Some(Value::String(t)) => {
                    assert!(
                        ["object", "string", "integer", "number", "boolean"].contains(&t.as_str()),
                        "{path}: {t}"
                    );
                }
                Some(other) => panic!("{path}: type {other}"),
                None => {}
            }
            if let Some(props) = obj.get("properties").and_then(Value::as_object) {
                for (k, v) in props {
                    check(&format!("{path}.{k}"), v);
                }
            }
            if let Some(items) = obj.get("items") {
                check(&format!("{path}[]"), items);
            }
            if let Some(ap) = obj.get("additionalProperties") {
                check(&format!("{path}{{}}"), ap);
            }
        }
        for (name, def) in defs {
            check(name, def);
        }
        assert_eq!(
            defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["format"],
            "int-or-string"
        );
        let patch =
            &doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"];
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert!(
            patch["consumes"]
                .as_array()
                .unwrap()
                .contains(&json!("application/strategic-merge-patch+json"))
        );
    }

    #[test]
    fn v2_protobuf_has_definitions_and_paths() {
        let pb = docs().v2_protobuf();
        assert_eq!(pb.hash, docs().v2_json().hash);
        let body = &pb.body[..];
        assert_eq!(wire::string(body, 1), "2.0");
        let defs = wire::get(body, 9)[0];
        let deploy = wire::named(defs, 1, "io.k8s.api.apps.v1.Deployment").unwrap();
        let gvk = wire::named(deploy, 31, GVK_EXTENSION).unwrap();
        assert!(wire::string(gvk, 2).contains("\"kind\":\"Deployment\""));
        let paths = wire::get(body, 8)[0];
        let item = wire::named(
            paths,
            2,
            "/apis/apps/v1/namespaces/{namespace}/deployments/{name}",
        )
        .unwrap();
        let patch = wire::get(item, 8)[0];
        let found = wire::get(patch, 8).into_iter().any(|p| {
            wire::get(p, 1)
                .first()
                .and_then(|param| wire::get(param, 2).first().copied())
                .and_then(|nb| wire::get(nb, 3).first().copied())
                .is_some_and(|q| wire::string(q, 4) == "fieldValidation")
        });
        assert!(found);
    }

    #[test]
    fn custom_resources_are_published() {
        let crd = json!({
            "spec": {
                "group": "stable.example.com",
                "scope": "Namespaced",
                "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"cronSpec": {"type": "string"}}}}}}}]
            }
        });
        let versions = crate::schema::CustomResourceVersion::from_crd(&crd);
        let schemas = Arc::new(Schemas::with_custom_resources(&versions));
        let mut resources = crate::catalog::builtin();
        resources.push(ResourceInfo {
            group: "stable.example.com".into(),
            version: "v1".into(),
            kind: "CronTab".into(),
            plural: "crontabs".into(),
            singular: "crontab".into(),
            namespaced: true,
            short_names: vec![],
            categories: vec![],
            verbs: crate::catalog::STANDARD_VERBS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            subresources: vec![],
            storage_prefix: "/registry/stable.example.com/crontabs".into(),
            storage_version: "v1".into(),
        });
        let docs = OpenApiDocs::new(resources, schemas);
        let doc: Value = serde_json::from_slice(
            &docs
                .v3_group_version("apis/stable.example.com/v1")
                .unwrap()
                .body,
        )
        .unwrap();
        let patch = &doc["paths"]["/apis/stable.example.com/v1/namespaces/{namespace}/crontabs/{name}"]
            ["patch"];
        assert!(
            patch["requestBody"]["content"]
                .get("application/strategic-merge-patch+json")
                .is_none()
        );
        assert!(
            patch["parameters"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| p["name"] == "fieldValidation")
        );
        assert_eq!(
            patch["operationId"],
            "patchStableExampleComV1NamespacedCronTab"
        );
        assert!(
            doc["components"]["schemas"]
                .get("com.example.stable.v1.CronTab")
                .is_some()
        );
        assert!(
            doc["paths"]
                .get("/apis/stable.example.com/v1/watch/crontabs")
                .is_none()
        );
        let v2: Value = serde_json::from_slice(&docs.v2_json().body).unwrap();
        assert_eq!(
            v2["definitions"]["com.example.stable.v1.CronTab"]["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
    }
}
