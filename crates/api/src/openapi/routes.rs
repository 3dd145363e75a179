//! The operations the API server serves, as upstream's endpoint installer
//! (`k8s.io/apiserver/pkg/endpoints/installer.go`) and the CRD OpenAPI builder describe
//! them: paths, methods, operation ids and tags, query parameters, request and response
//! bodies, `x-kubernetes-action` and `x-kubernetes-group-version-kind`. Rendered to
//! OpenAPI v3 or Swagger 2.0 by [`super::render`].

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::catalog::ResourceInfo;
use crate::schema::Schemas;

use crate::schema::names::{
    API_GROUP, API_GROUP_LIST, API_RESOURCE_LIST, API_VERSIONS, DELETE_OPTIONS, PATCH, STATUS,
    VERSION_INFO, WATCH_EVENT,
};

const PRETTY: &str = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget).";
const NAMESPACE: &str = "object name and auth scope, such as for teams and projects";
const DRY_RUN: &str = "When present, indicates that modifications should not be persisted. An invalid or unrecognized dryRun directive will result in an error response and no further processing of the request. Valid values are: - All: all dry run stages will be processed";
const FIELD_MANAGER: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint.";
const FIELD_MANAGER_PATCH: &str = "fieldManager is a name associated with the actor or entity that is making these changes. The value must be less than or 128 characters long, and only contain printable characters, as defined by https://golang.org/pkg/unicode/#IsPrint. This field is required for apply requests (application/apply-patch) but optional for non-apply patch types (JsonPatch, MergePatch, StrategicMergePatch).";
const FIELD_VALIDATION: &str = "fieldValidation instructs the server on how to handle objects in the request (POST/PUT/PATCH) containing unknown or duplicate fields. Valid values are: - Ignore: This will ignore any unknown fields that are silently dropped from the object, and will ignore all but the last duplicate field that the decoder encounters. This is the default behavior prior to v1.23. - Warn: This will send a warning via the standard warning response header for each unknown field that is dropped from the object, and for each duplicate field that is encountered. The request will still succeed if there are no other errors, and will only persist the last of any duplicate fields. This is the default in v1.23+ - Strict: This will fail the request with a BadRequest error if any unknown fields would be dropped from the object, or if any duplicate fields are present. The error returned from the server will contain all unknown and duplicate fields encountered.";
const FORCE: &str = "Force is going to \"force\" Apply requests. It means user will re-acquire conflicting fields owned by other people. Force flag must be unset for non-apply patch requests.";
const GRACE_PERIOD: &str = "The duration in seconds before the object should be deleted. Value must be non-negative integer. The value zero indicates delete immediately. If this value is nil, the default grace period for the specified type will be used. Defaults to a per object value if not specified. zero means delete immediately.";
const ORPHAN_DEPENDENTS: &str = "Deprecated: please use the PropagationPolicy, this field will be deprecated in 1.7. Should the dependent objects be orphaned. If true/false, the \"orphan\" finalizer will be added to/removed from the object's finalizers list. Either this field or PropagationPolicy may be set, but not both.";
const PROPAGATION_POLICY: &str = "Whether and how garbage collection will be performed. Either this field or OrphanDependents may be set, but not both. The default policy is decided by the existing finalizer set in the metadata.finalizers and the resource-specific default policy. Acceptable values are: 'Orphan' - orphan the dependents; 'Background' - allow the garbage collector to delete the dependents in the background; 'Foreground' - a cascading policy that deletes all dependents in the foreground.";
const IGNORE_STORE_READ_ERROR: &str = "if set to true, it will trigger an unsafe deletion of the resource in case the normal deletion flow fails with a corrupt object error. A resource is considered corrupt if it can not be retrieved from the underlying storage successfully because of a) its data can not be transformed e.g. decryption failure, or b) it fails to decode into an object. NOTE: unsafe deletion ignores finalizer constraints, skips precondition checks, and removes the object from the storage. WARNING: This may potentially break the cluster if the workload associated with the resource being unsafe-deleted relies on normal deletion flow. Use only if you REALLY know what you are doing. The default value is false, and the user must opt in to enable it";
const LABEL_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their labels. Defaults to everything.";
const FIELD_SELECTOR: &str =
    "A selector to restrict the list of returned objects by their fields. Defaults to everything.";
const WATCH: &str = "Watch for changes to the described resources and return them as a stream of add, update, and remove notifications. Specify resourceVersion.";
const ALLOW_WATCH_BOOKMARKS: &str = "allowWatchBookmarks requests watch events with type \"BOOKMARK\". Servers that do not implement bookmarks may ignore this flag and bookmarks are sent at the server's discretion. Clients should not assume bookmarks are returned at any specific interval, nor may they assume the server will send any BOOKMARK event during a session. If this is not a watch, this field is ignored.";
const RESOURCE_VERSION: &str = "resourceVersion sets a constraint on what resource versions a request may be served from. See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const RESOURCE_VERSION_MATCH: &str = "resourceVersionMatch determines how resourceVersion is applied to list calls. It is highly recommended that resourceVersionMatch be set for list calls where resourceVersion is set See https://kubernetes.io/docs/reference/using-api/api-concepts/#resource-versions for details.\n\nDefaults to unset";
const TIMEOUT_SECONDS: &str = "Timeout for the list/watch call. This limits the duration of the call, regardless of any activity or inactivity.";
const LIMIT: &str = "limit is a maximum number of responses to return for a list call. If more items exist, the server will set the `continue` field on the list metadata to a value that can be used with the same initial query to retrieve the next set of results. Setting a limit may return fewer than the requested amount of items (up to zero items) in the event all requested objects are filtered out and clients should only use the presence of the continue field to determine whether more results are available. Servers may choose not to support the limit argument and will return all of the available results. If limit is specified and the continue field is empty, clients may assume that no more results are available. This field is not supported if watch is true.\n\nThe server guarantees that the objects returned when using continue will be identical to issuing a single list call without a limit - that is, no objects created, modified, or deleted after the first request is issued will be included in any subsequent continued requests. This is sometimes referred to as a consistent snapshot, and ensures that a client that is using limit to receive smaller chunks of a very large result can ensure they see all possible objects. If objects are updated during a chunked list the version of the object that was present at the time the first list result was calculated is returned.";
const CONTINUE: &str = "The continue option should be set when retrieving more results from the server. Since this value is server defined, clients may only use the continue value from a previous query result with identical query parameters (except for the value of continue) and the server may reject a continue value it does not recognize. If the specified continue value is no longer valid whether due to expiration (generally five to fifteen minutes) or a configuration change on the server, the server will respond with a 410 ResourceExpired error together with a continue token. If the client needs a consistent list, it must restart their list without the continue field. Otherwise, the client may send another list request with the token received with the 410 error, the server will respond with a list starting from the next key, but from the latest snapshot, which is inconsistent from the previous list results - objects that are created, modified, or deleted after the first list request will be included in the response, as long as their keys are after the \"next key\".\n\nThis field is not supported when watch is true. Clients may start a watch from the last resourceVersion value returned by the server and not miss any modifications.";
const SEND_INITIAL_EVENTS: &str = "`sendInitialEvents=true` may be set together with `watch=true`. In that case, the watch stream will begin with synthetic events to produce the current state of objects in the collection. Once all such events have been sent, a synthetic \"Bookmark\" event  will be sent. The bookmark will report the ResourceVersion (RV) corresponding to the set of objects, and be marked with `\"k8s.io/initial-events-end\": \"true\"` annotation. Afterwards, the watch stream will proceed as usual, sending watch events corresponding to changes (subsequent to the RV) to objects watched.\n\nWhen `sendInitialEvents` option is set, we require `resourceVersionMatch` option to also be set. The semantic of the watch request is as following: - `resourceVersionMatch` = NotOlderThan\n  is interpreted as \"data at least as new as the provided `resourceVersion`\"\n  and the bookmark event is send when the state is synced\n  to a `resourceVersion` at least as fresh as the one provided by the ListOptions.\n  If `resourceVersion` is unset, this is interpreted as \"consistent read\" and the\n  bookmark event is send when the state is synced at least to the moment\n  when request started being processed.\n- `resourceVersionMatch` set to any other value or unset\n  Invalid error is returned.\n\nDefaults to true if `resourceVersion=\"\"` or `resourceVersion=\"0\"` (for backward compatibility reasons) and to false otherwise.";

/// Media types of built-in resources' responses.
const PRODUCES: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
/// Media types of built-in resources' list and watch responses.
const PRODUCES_STREAMING: &[&str] = &[
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];
/// Media types of custom resources' responses.
const PRODUCES_CUSTOM: &[&str] = &["application/json", "application/yaml"];
const CONSUMES_ANY: &[&str] = &["*/*"];
const CONSUMES_CUSTOM: &[&str] = &["application/json", "application/yaml"];
/// Patch types of built-in resources.
pub(crate) const PATCH_TYPES: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
];
/// Patch types of custom resources (no strategic merge patch).
const PATCH_TYPES_CUSTOM: &[&str] = &[
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/apply-patch+yaml",
];

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Method {
    Get,
    Put,
    Post,
    Delete,
    Patch,
}

impl Method {
    pub(crate) fn key(self) -> &'static str {
        match self {
            Method::Get => "get",
            Method::Put => "put",
            Method::Post => "post",
            Method::Delete => "delete",
            Method::Patch => "patch",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum In {
    Path,
    Query,
}

impl In {
    pub(crate) fn key(self) -> &'static str {
        match self {
            In::Path => "path",
            In::Query => "query",
        }
    }
}

/// A non-body parameter.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Param {
    pub name: &'static str,
    pub location: In,
    pub description: Cow<'static, str>,
    /// `string`, `integer` or `boolean`.
    pub ty: &'static str,
    pub required: bool,
}

impl Param {
    fn query(name: &'static str, ty: &'static str, description: &'static str) -> Param {
        Param {
            name,
            location: In::Query,
            description: Cow::Borrowed(description),
            ty,
            required: false,
        }
    }

    fn path(name: &'static str, description: Cow<'static, str>) -> Param {
        Param {
            name,
            location: In::Path,
            description,
            ty: "string",
            required: true,
        }
    }
}

/// A request body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Body {
    pub definition: String,
    pub required: bool,
    pub consumes: &'static [&'static str],
}

/// A response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Response {
    pub code: u16,
    pub description: &'static str,
    pub definition: Option<String>,
}

/// One operation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Operation {
    pub method: Method,
    pub operation_id: String,
    pub tag: String,
    pub description: String,
    pub action: Option<&'static str>,
    pub gvk: Option<(String, String, String)>,
    pub params: Vec<Param>,
    pub body: Option<Body>,
    pub responses: Vec<Response>,
    pub produces: &'static [&'static str],
}

/// The operations of one path, with the parameters every operation shares hoisted to the
/// path (as upstream's OpenAPI builders do), both sorted by name then location.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct PathItem {
    pub params: Vec<Param>,
    pub operations: Vec<Operation>,
}

/// Upstream's `ToValidOperationID`: letters, `_` and non-leading digits are kept; any other
/// character drops out and capitalizes the next kept one.
pub(crate) fn to_valid_operation_id(s: &str, capitalize_first: bool) -> String {
    let mut out = String::with_capacity(s.len());
    let mut capitalize = capitalize_first;
    for (i, c) in s.chars().enumerate() {
        if c.is_alphabetic() || c == '_' || (i != 0 && c.is_numeric()) {
            if capitalize {
                out.extend(c.to_uppercase());
                capitalize = false;
            } else {
                out.push(c);
            }
        } else {
            capitalize = true;
        }
    }
    out
}

/// Upstream's operation id and tag of an operation named `verb` + `rest` at `path`
/// (`patch`, `NamespacedDeployment`, `/apis/apps/v1/...` → `patchAppsV1NamespacedDeployment`,
/// `apps_v1`).
pub(crate) fn operation_id_and_tag(verb: &str, rest: &str, path: &str) -> (String, String) {
    let mut parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts.first() == Some(&"api") {
        parts.splice(0..1, ["apis", "core"]);
    }
    let mut prefix = verb.to_string();
    let tag = if parts.len() >= 2 && parts[0] == "apis" {
        let group = parts[1].strip_suffix(".k8s.io").unwrap_or(parts[1]);
        prefix.push_str(&to_valid_operation_id(group, !prefix.is_empty()));
        let mut t = to_valid_operation_id(group, false);
        if let Some(version) = parts.get(2) {
            prefix.push_str(&to_valid_operation_id(version, !prefix.is_empty()));
            t.push('_');
            t.push_str(&to_valid_operation_id(version, false));
        }
        t
    } else {
        to_valid_operation_id(parts.first().copied().unwrap_or_default(), false)
    };
    let id = format!(
        "{prefix}{}",
        to_valid_operation_id(rest, !prefix.is_empty())
    );
    (id, tag)
}

/// Upstream's `GetArticleForNoun` with single-space padding.
fn article(noun: &str) -> &'static str {
    if !noun.ends_with("ss") && noun.ends_with('s') {
        return " ";
    }
    match noun.chars().next().map(|c| c.to_ascii_lowercase()) {
        Some('a' | 'e' | 'i' | 'o' | 'u') => " an ",
        _ => " a ",
    }
}

fn title(s: &str) -> String {
    let mut chars = s.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn list_params() -> Vec<Param> {
    vec![
        Param::query("labelSelector", "string", LABEL_SELECTOR),
        Param::query("fieldSelector", "string", FIELD_SELECTOR),
        Param::query("watch", "boolean", WATCH),
        Param::query("allowWatchBookmarks", "boolean", ALLOW_WATCH_BOOKMARKS),
        Param::query("resourceVersion", "string", RESOURCE_VERSION),
        Param::query("resourceVersionMatch", "string", RESOURCE_VERSION_MATCH),
        Param::query("timeoutSeconds", "integer", TIMEOUT_SECONDS),
        Param::query("limit", "integer", LIMIT),
        Param::query("continue", "string", CONTINUE),
        Param::query("sendInitialEvents", "boolean", SEND_INITIAL_EVENTS),
    ]
}

fn delete_params() -> Vec<Param> {
    vec![
        Param::query("gracePeriodSeconds", "integer", GRACE_PERIOD),
        Param::query("orphanDependents", "boolean", ORPHAN_DEPENDENTS),
        Param::query("propagationPolicy", "string", PROPAGATION_POLICY),
        Param::query("dryRun", "string", DRY_RUN),
        Param::query(
            "ignoreStoreReadErrorWithClusterBreakingPotential",
            "boolean",
            IGNORE_STORE_READ_ERROR,
        ),
    ]
}

fn write_params(patch: bool) -> Vec<Param> {
    let mut out = vec![
        Param::query("dryRun", "string", DRY_RUN),
        Param::query(
            "fieldManager",
            "string",
            if patch {
                FIELD_MANAGER_PATCH
            } else {
                FIELD_MANAGER
            },
        ),
        Param::query("fieldValidation", "string", FIELD_VALIDATION),
    ];
    if patch {
        out.push(Param::query("force", "boolean", FORCE));
    }
    out
}

/// The URL prefix of a group version: `/api/v1` or `/apis/<group>/<version>`.
pub(crate) fn group_version_prefix(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("/api/{version}")
    } else {
        format!("/apis/{group}/{version}")
    }
}

/// What distinguishes one operation of a resource.
struct Head<'a> {
    method: Method,
    verb: &'a str,
    rest: &'a str,
    path: &'a str,
    description: String,
    action: &'static str,
    gvk: &'a (String, String, String),
}

fn operation(t: &Target<'_>, head: Head<'_>) -> Operation {
    let (operation_id, tag) = operation_id_and_tag(head.verb, head.rest, head.path);
    Operation {
        method: head.method,
        operation_id,
        tag,
        description: head.description,
        action: Some(head.action),
        gvk: Some(head.gvk.clone()),
        params: vec![Param::query("pretty", "string", PRETTY)],
        body: None,
        responses: Vec::new(),
        produces: if t.custom { PRODUCES_CUSTOM } else { PRODUCES },
    }
}

/// Collects operations by path.
#[derive(Default)]
pub(crate) struct Routes {
    raw: BTreeMap<String, Vec<Operation>>,
}

/// What one resource's operations reference.
struct Target<'a> {
    resource: &'a ResourceInfo,
    custom: bool,
    kind_def: String,
    list_def: Option<String>,
}

impl Routes {
    fn add(&mut self, path: String, op: Operation) {
        self.raw.entry(path).or_default().push(op);
    }

    /// The paths with their operations, shared parameters hoisted.
    pub(crate) fn finish(self) -> BTreeMap<String, PathItem> {
        self.raw
            .into_iter()
            .map(|(path, mut ops)| {
                ops.sort_by_key(|o| o.method);
                let mut common: Vec<Param> = match ops.first() {
                    Some(first) => first
                        .params
                        .iter()
                        .filter(|p| {
                            ops.iter().all(|o| {
                                o.params
                                    .iter()
                                    .any(|q| q.name == p.name && q.location == p.location)
                            })
                        })
                        .cloned()
                        .collect(),
                    None => Vec::new(),
                };
                for op in &mut ops {
                    op.params.retain(|p| {
                        !common
                            .iter()
                            .any(|c| c.name == p.name && c.location == p.location)
                    });
                    op.params
                        .sort_by(|a, b| (a.name, a.location).cmp(&(b.name, b.location)));
                }
                common.sort_by(|a, b| (a.name, a.location).cmp(&(b.name, b.location)));
                (
                    path,
                    PathItem {
                        params: common,
                        operations: ops,
                    },
                )
            })
            .collect()
    }

    /// `GET /api/` (core versions), `GET /apis/` (groups), `GET /version/`.
    pub(crate) fn add_root(&mut self, path: &str) {
        let (rest, definition, description, produces) = match path {
            "/api/" => (
                "APIVersions",
                API_VERSIONS,
                "get available API versions",
                PRODUCES,
            ),
            "/apis/" => (
                "APIVersions",
                API_GROUP_LIST,
                "get available API versions",
                PRODUCES,
            ),
            _ => (
                "CodeVersion",
                VERSION_INFO,
                "get the code version",
                &["application/json"][..],
            ),
        };
        let (operation_id, tag) = operation_id_and_tag("get", rest, path);
        self.add(
            path.to_string(),
            Operation {
                method: Method::Get,
                operation_id,
                tag,
                description: description.to_string(),
                action: None,
                gvk: None,
                params: Vec::new(),
                body: None,
                responses: vec![ok(definition)],
                produces,
            },
        );
    }

    /// `GET /apis/<group>/` (the group's discovery document).
    pub(crate) fn add_group(&mut self, group: &str) {
        let path = format!("/apis/{group}/");
        let (operation_id, tag) = operation_id_and_tag("get", "APIGroup", &path);
        self.add(
            path,
            Operation {
                method: Method::Get,
                operation_id,
                tag,
                description: "get information of a group".to_string(),
                action: None,
                gvk: None,
                params: Vec::new(),
                body: None,
                responses: vec![ok(API_GROUP)],
                produces: PRODUCES,
            },
        );
    }

    /// `GET /api/v1/` or `GET /apis/<group>/<version>/` (the resource list).
    pub(crate) fn add_group_version(&mut self, group: &str, version: &str) {
        let path = format!("{}/", group_version_prefix(group, version));
        let (operation_id, tag) = operation_id_and_tag("get", "APIResources", &path);
        self.add(
            path,
            Operation {
                method: Method::Get,
                operation_id,
                tag,
                description: "get available resources".to_string(),
                action: None,
                gvk: None,
                params: Vec::new(),
                body: None,
                responses: vec![ok(API_RESOURCE_LIST)],
                produces: PRODUCES,
            },
        );
    }

    /// Every operation of a resource and its subresources. Resources whose kind has no
    /// definition are skipped.
    pub(crate) fn add_resource(&mut self, resource: &ResourceInfo, schemas: &Schemas) {
        let Some(kind_def) =
            schemas.definition_for(&resource.group, &resource.version, &resource.kind)
        else {
            return;
        };
        let target = Target {
            resource,
            custom: schemas.is_custom(kind_def),
            kind_def: kind_def.to_string(),
            list_def: schemas
                .definition_for(&resource.group, &resource.version, &resource.list_kind())
                .map(str::to_string),
        };
        self.add_main(&target);
        // Connect subresources stream bytes, not objects of their kind: they have no
        // operations here (their `*Options` kinds have no definitions).
        for sub in resource.subresources.iter().filter(|s| !s.is_connect()) {
            let def = schemas
                .definition_for(&sub.group, &sub.version, &sub.kind)
                .map(str::to_string)
                .unwrap_or_else(|| target.kind_def.clone());
            let gvk = (sub.group.clone(), sub.version.clone(), sub.kind.clone());
            for verb in &sub.verbs {
                self.add_subresource_verb(&target, &sub.name, verb, &def, &gvk);
            }
        }
    }

    fn add_main(&mut self, t: &Target<'_>) {
        let r = t.resource;
        let kind = r.kind.as_str();
        let gvk = (r.group.clone(), r.version.clone(), r.kind.clone());
        let prefix = group_version_prefix(&r.group, &r.version);
        let ns_segment = if r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let namespaced = if r.namespaced { "Namespaced" } else { "" };
        let collection = format!("{prefix}{ns_segment}/{}", r.plural);
        let item = format!("{collection}/{{name}}");
        let watch_collection = format!("{prefix}/watch{ns_segment}/{}", r.plural);
        let watch_item = format!("{watch_collection}/{{name}}");
        let can = |verb: &str| r.has_verb(verb);
        let watches = can("watch") && !t.custom;

        if can("list")
            && let Some(list_def) = &t.list_def
        {
            let description = if can("watch") {
                format!("list or watch objects of kind {kind}")
            } else {
                format!("list objects of kind {kind}")
            };
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Get,
                    verb: "list",
                    rest: &rest,
                    path: &collection,
                    description: description.clone(),
                    action: "list",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, false));
            op.params.extend(list_params());
            op.responses = vec![ok(list_def)];
            op.produces = if t.custom {
                PRODUCES_CUSTOM
            } else {
                PRODUCES_STREAMING
            };
            self.add(collection.clone(), op);
            if r.namespaced {
                let all = format!("{prefix}/{}", r.plural);
                let rest = format!("{kind}ForAllNamespaces");
                let mut op = operation(
                    t,
                    Head {
                        method: Method::Get,
                        verb: "list",
                        rest: &rest,
                        path: &all,
                        description,
                        action: "list",
                        gvk: &gvk,
                    },
                );
                op.params.extend(list_params());
                op.responses = vec![ok(list_def)];
                op.produces = if t.custom {
                    PRODUCES_CUSTOM
                } else {
                    PRODUCES_STREAMING
                };
                self.add(all, op);
            }
            if watches {
                let rest = format!("{namespaced}{kind}List");
                let mut op = operation(
                    t,
                    Head {
                        method: Method::Get,
                        verb: "watch",
                        rest: &rest,
                        path: &watch_collection,
                        description: format!(
                            "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
                        ),
                        action: "watchlist",
                        gvk: &gvk,
                    },
                );
                op.params.extend(self_scope(r, false));
                op.params.extend(list_params());
                op.responses = vec![ok(WATCH_EVENT)];
                op.produces = PRODUCES_STREAMING;
                self.add(watch_collection.clone(), op);
                if r.namespaced {
                    let all = format!("{prefix}/watch/{}", r.plural);
                    let rest = format!("{kind}ListForAllNamespaces");
                    let mut op = operation(
                        t,
                        Head {
                            method: Method::Get,
                            verb: "watch",
                            rest: &rest,
                            path: &all,
                            description: format!(
                                "watch individual changes to a list of {kind}. deprecated: use the 'watch' parameter with a list operation instead."
                            ),
                            action: "watchlist",
                            gvk: &gvk,
                        },
                    );
                    op.params.extend(list_params());
                    op.responses = vec![ok(WATCH_EVENT)];
                    op.produces = PRODUCES_STREAMING;
                    self.add(all, op);
                }
            }
        }
        if can("create") {
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Post,
                    verb: "create",
                    rest: &rest,
                    path: &collection,
                    description: format!("create{}{kind}", article(kind)),
                    action: "post",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, false));
            op.params.extend(write_params(false));
            op.body = Some(Body {
                definition: t.kind_def.clone(),
                required: true,
                consumes: if t.custom {
                    CONSUMES_CUSTOM
                } else {
                    CONSUMES_ANY
                },
            });
            op.responses = vec![
                ok(&t.kind_def),
                response(201, "Created", &t.kind_def),
                response(202, "Accepted", &t.kind_def),
            ];
            self.add(collection.clone(), op);
        }
        if can("deletecollection") {
            // Upstream's operation-id logic splits "deletecollection…" at the verb "delete".
            let rest = format!("Collection{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Delete,
                    verb: "delete",
                    rest: &rest,
                    path: &collection,
                    description: format!("delete collection of {kind}"),
                    action: "deletecollection",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, false));
            if t.custom {
                op.params.extend(list_params());
            } else {
                op.params.extend(delete_params());
                op.params.extend(
                    list_params()
                        .into_iter()
                        .filter(|p| p.name != "watch" && p.name != "allowWatchBookmarks"),
                );
                op.body = Some(Body {
                    definition: DELETE_OPTIONS.to_string(),
                    required: false,
                    consumes: CONSUMES_ANY,
                });
            }
            op.responses = vec![ok(STATUS)];
            self.add(collection.clone(), op);
        }
        if can("get") {
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Get,
                    verb: "read",
                    rest: &rest,
                    path: &item,
                    description: format!("read the specified {kind}"),
                    action: "get",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, true));
            op.responses = vec![ok(&t.kind_def)];
            self.add(item.clone(), op);
        }
        if can("update") {
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Put,
                    verb: "replace",
                    rest: &rest,
                    path: &item,
                    description: format!("replace the specified {kind}"),
                    action: "put",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, true));
            op.params.extend(write_params(false));
            op.body = Some(Body {
                definition: t.kind_def.clone(),
                required: true,
                consumes: if t.custom {
                    CONSUMES_CUSTOM
                } else {
                    CONSUMES_ANY
                },
            });
            op.responses = vec![ok(&t.kind_def), response(201, "Created", &t.kind_def)];
            self.add(item.clone(), op);
        }
        if can("patch") {
            let op = Self::patch_operation(
                t,
                &item,
                format!("{namespaced}{kind}"),
                format!("partially update the specified {kind}"),
                &t.kind_def,
                &gvk,
            );
            self.add(item.clone(), op);
        }
        if can("delete") {
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Delete,
                    verb: "delete",
                    rest: &rest,
                    path: &item,
                    description: format!("delete{}{kind}", article(kind)),
                    action: "delete",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, true));
            op.params.extend(delete_params());
            op.body = Some(Body {
                definition: DELETE_OPTIONS.to_string(),
                required: false,
                consumes: if t.custom {
                    CONSUMES_CUSTOM
                } else {
                    CONSUMES_ANY
                },
            });
            op.responses = vec![ok(STATUS), response(202, "Accepted", STATUS)];
            self.add(item.clone(), op);
        }
        if watches && can("get") {
            let rest = format!("{namespaced}{kind}");
            let mut op = operation(
                t,
                Head {
                    method: Method::Get,
                    verb: "watch",
                    rest: &rest,
                    path: &watch_item,
                    description: format!(
                        "watch changes to an object of kind {kind}. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
                    ),
                    action: "watch",
                    gvk: &gvk,
                },
            );
            op.params.extend(self_scope(r, true));
            op.params.extend(list_params());
            op.responses = vec![ok(WATCH_EVENT)];
            op.produces = PRODUCES_STREAMING;
            self.add(watch_item, op);
        }
    }

    fn patch_operation(
        t: &Target<'_>,
        path: &str,
        rest: String,
        description: String,
        definition: &str,
        gvk: &(String, String, String),
    ) -> Operation {
        let mut op = operation(
            t,
            Head {
                method: Method::Patch,
                verb: "patch",
                rest: &rest,
                path,
                description,
                action: "patch",
                gvk,
            },
        );
        op.params.extend(self_scope(t.resource, true));
        op.params.extend(write_params(true));
        op.body = Some(Body {
            definition: PATCH.to_string(),
            required: true,
            consumes: if t.custom {
                PATCH_TYPES_CUSTOM
            } else {
                PATCH_TYPES
            },
        });
        op.responses = if t.custom {
            vec![ok(definition)]
        } else {
            vec![ok(definition), response(201, "Created", definition)]
        };
        op
    }

    fn add_subresource_verb(
        &mut self,
        t: &Target<'_>,
        sub: &str,
        verb: &str,
        definition: &str,
        gvk: &(String, String, String),
    ) {
        let r = t.resource;
        let kind = r.kind.as_str();
        let prefix = group_version_prefix(&r.group, &r.version);
        let ns_segment = if r.namespaced {
            "/namespaces/{namespace}"
        } else {
            ""
        };
        let namespaced = if r.namespaced { "Namespaced" } else { "" };
        let path = format!("{prefix}{ns_segment}/{}/{{name}}/{sub}", r.plural);
        let rest = format!("{namespaced}{kind}{}", title(sub));
        let op = match verb {
            "get" => {
                let mut op = operation(
                    t,
                    Head {
                        method: Method::Get,
                        verb: "read",
                        rest: &rest,
                        path: &path,
                        description: format!("read {sub} of the specified {kind}"),
                        action: "get",
                        gvk,
                    },
                );
                op.params.extend(self_scope(r, true));
                op.responses = vec![ok(definition)];
                op
            }
            "update" => {
                let mut op = operation(
                    t,
                    Head {
                        method: Method::Put,
                        verb: "replace",
                        rest: &rest,
                        path: &path,
                        description: format!("replace {sub} of the specified {kind}"),
                        action: "put",
                        gvk,
                    },
                );
                op.params.extend(self_scope(r, true));
                op.params.extend(write_params(false));
                op.body = Some(Body {
                    definition: definition.to_string(),
                    required: true,
                    consumes: if t.custom {
                        CONSUMES_CUSTOM
                    } else {
                        CONSUMES_ANY
                    },
                });
                op.responses = vec![ok(definition), response(201, "Created", definition)];
                op
            }
            "patch" => Self::patch_operation(
                t,
                &path,
                rest,
                format!("partially update {sub} of the specified {kind}"),
                definition,
                gvk,
            ),
            "create" => {
                let mut op = operation(
                    t,
                    Head {
                        method: Method::Post,
                        verb: "create",
                        rest: &rest,
                        path: &path,
                        description: format!("create {sub} of{}{kind}", article(kind)),
                        action: "post",
                        gvk,
                    },
                );
                op.params.extend(self_scope(r, true));
                op.params.extend(write_params(false));
                op.body = Some(Body {
                    definition: definition.to_string(),
                    required: true,
                    consumes: CONSUMES_ANY,
                });
                op.responses = vec![
                    ok(definition),
                    response(201, "Created", definition),
                    response(202, "Accepted", definition),
                ];
                op
            }
            _ => return,
        };
        self.add(path, op);
    }
}

fn self_scope(r: &ResourceInfo, with_name: bool) -> Vec<Param> {
    let mut p = Vec::new();
    if r.namespaced {
        p.push(Param::path("namespace", Cow::Borrowed(NAMESPACE)));
    }
    if with_name {
        p.push(Param::path(
            "name",
            Cow::Owned(format!("name of the {}", r.kind)),
        ));
    }
    p
}

fn ok(definition: &str) -> Response {
    response(200, "OK", definition)
}

fn response(code: u16, description: &'static str, definition: &str) -> Response {
    Response {
        code,
        description,
        definition: Some(definition.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog;

    #[test]
    fn operation_ids_follow_upstream() {
        assert_eq!(
            operation_id_and_tag(
                "patch",
                "NamespacedDeployment",
                "/apis/apps/v1/namespaces/{namespace}/deployments/{name}"
            ),
            (
                "patchAppsV1NamespacedDeployment".to_string(),
                "apps_v1".to_string()
            )
        );
        assert_eq!(
            operation_id_and_tag(
                "list",
                "ClusterRole",
                "/apis/rbac.authorization.k8s.io/v1/clusterroles"
            ),
            (
                "listRbacAuthorizationV1ClusterRole".to_string(),
                "rbacAuthorization_v1".to_string()
            )
        );
        assert_eq!(
            operation_id_and_tag(
                "read",
                "NamespacedPod",
                "/api/v1/namespaces/{namespace}/pods/{name}"
            ),
            ("readCoreV1NamespacedPod".to_string(), "core_v1".to_string())
        );
        assert_eq!(
            operation_id_and_tag("get", "APIGroup", "/apis/apps/"),
            ("getAppsAPIGroup".to_string(), "apps".to_string())
        );
        assert_eq!(
            operation_id_and_tag("get", "CodeVersion", "/version/"),
            ("getCodeVersion".to_string(), "version".to_string())
        );
        assert_eq!(
            operation_id_and_tag("list", "CronTab", "/apis/stable.example.com/v1/crontabs"),
            (
                "listStableExampleComV1CronTab".to_string(),
                "stableExampleCom_v1".to_string()
            )
        );
        assert_eq!(
            operation_id_and_tag(
                "delete",
                "CollectionNamespacedControllerRevision",
                "/apis/apps/v1/namespaces/{namespace}/controllerrevisions"
            )
            .0,
            "deleteAppsV1CollectionNamespacedControllerRevision"
        );
        assert_eq!(article("Eviction"), " an ");
        assert_eq!(article("Endpoints"), " ");
        assert_eq!(article("Pod"), " a ");
        assert_eq!(article("Class"), " a ");
    }

    #[test]
    fn deployment_routes() {
        let schemas = crate::schema::builtin();
        let mut routes = Routes::default();
        for r in catalog::builtin()
            .iter()
            .filter(|r| r.plural == "deployments")
        {
            routes.add_resource(r, schemas);
        }
        let paths = routes.finish();
        let item = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"];
        let common: Vec<&str> = item.params.iter().map(|p| p.name).collect();
        assert_eq!(common, ["name", "namespace", "pretty"]);
        let patch = item
            .operations
            .iter()
            .find(|o| o.method == Method::Patch)
            .unwrap();
        let names: Vec<&str> = patch.params.iter().map(|p| p.name).collect();
        assert_eq!(
            names,
            ["dryRun", "fieldManager", "fieldValidation", "force"]
        );
        assert_eq!(patch.operation_id, "patchAppsV1NamespacedDeployment");
        assert_eq!(patch.body.as_ref().unwrap().consumes, PATCH_TYPES);
        let scale = &paths["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"];
        let scale_patch = scale
            .operations
            .iter()
            .find(|o| o.method == Method::Patch)
            .unwrap();
        assert_eq!(
            scale_patch.gvk,
            Some(("autoscaling".into(), "v1".into(), "Scale".into()))
        );
        assert_eq!(
            scale_patch.operation_id,
            "patchAppsV1NamespacedDeploymentScale"
        );
        assert!(paths.contains_key("/apis/apps/v1/deployments"));
        assert!(paths.contains_key("/apis/apps/v1/watch/deployments"));
        assert!(
            paths.contains_key("/apis/apps/v1/watch/namespaces/{namespace}/deployments/{name}")
        );
        let all = &paths["/apis/apps/v1/watch/deployments"];
        assert!(
            all.operations[0].params.is_empty(),
            "single operation: all hoisted"
        );
        assert!(all.params.iter().any(|p| p.name == "watch"));
    }
}
