//! Resource arguments → targets, as kubectl's resource builder reads them (`pods`,
//! `pods a b`, `pod/a`, `pods,svc`, `deploy/x svc/y`, `all`), and the fetches of `get`
//! and friends: one object, or a list with `-l`, `--field-selector`, `-A` and chunking.

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::mapper::{Mapper, Mapping};
use crate::transport::Request;

/// One thing to fetch: a resource, in a namespace (None: all namespaces, or
/// cluster-scoped), by name or the whole collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    pub mapping: Mapping,
    pub namespace: Option<String>,
    pub name: Option<String>,
}

impl Target {
    /// The path of the object, or of the collection.
    pub fn path(&self) -> String {
        let ns = self
            .namespace
            .as_deref()
            .filter(|_| self.mapping.namespaced);
        match &self.name {
            Some(n) => self.mapping.object_path(ns, n),
            None => self.mapping.collection_path(ns),
        }
    }
}

/// A resource argument before mapping: a type (`pods`, `deploy`, `all`) and maybe a name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RawArg {
    pub resource: String,
    pub name: Option<String>,
}

/// kubectl's message when no resource type is given.
pub fn no_type_message(verb: &str) -> String {
    format!(
        "You must specify the type of resource to {verb}. Use \"kubectl api-resources\" for a complete list of supported resources."
    )
}

/// Splits arguments as the builder's `ResourceTypeOrNameArgs` does (no mapping yet).
pub fn split_args(args: &[String]) -> Result<Vec<RawArg>> {
    let args = normalize_multiple(args);
    let slashes = args.iter().filter(|a| a.contains('/')).count();
    if slashes > 0 {
        if slashes != args.len() {
            return Err(CliError::msg(
                "there is no need to specify a resource type as a separate argument when passing arguments in resource/name form (e.g. 'kubectl get resource/<resource_name>' instead of 'kubectl get resource resource/<resource_name>'",
            ));
        }
        let mut out = Vec::new();
        for a in &args {
            let parts: Vec<&str> = a.split('/').collect();
            if parts.len() != 2 || parts[0].is_empty() || parts[1].is_empty() {
                return Err(CliError::msg(
                    "arguments in resource/name form must have a single resource and name",
                ));
            }
            out.push(RawArg {
                resource: parts[0].to_string(),
                name: Some(parts[1].to_string()),
            });
        }
        return Ok(out);
    }
    let Some(first) = args.first() else {
        return Ok(Vec::new());
    };
    let types: Vec<&str> = first.split(',').filter(|t| !t.is_empty()).collect();
    let names = &args[1..];
    let mut out = Vec::new();
    for t in types {
        if names.is_empty() {
            out.push(RawArg {
                resource: t.to_string(),
                name: None,
            });
        }
        for n in names {
            out.push(RawArg {
                resource: t.to_string(),
                name: Some(n.clone()),
            });
        }
    }
    Ok(out)
}

/// `pods,svc/x` is `pods/x svc/x` (the builder's `normalizeMultipleResourcesArgs`).
fn normalize_multiple(args: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for a in args {
        if let Some((types, name)) = a.split_once('/')
            && types.contains(',')
        {
            for t in types.split(',') {
                out.push(format!("{t}/{name}"));
            }
            continue;
        }
        out.push(a.clone());
    }
    out
}

/// The resources of the `all` category when discovery does not list categories, in
/// discovery's order.
const ALL_CATEGORY: &[&str] = &[
    "pods",
    "replicationcontrollers",
    "services",
    "daemonsets.apps",
    "deployments.apps",
    "replicasets.apps",
    "statefulsets.apps",
    "horizontalpodautoscalers.autoscaling",
    "cronjobs.batch",
    "jobs.batch",
];

/// Maps a type argument (expanding `all` and other categories).
pub fn resolve_type(mapper: &Mapper, resource: &str) -> Result<Vec<Mapping>> {
    if resource == "all" {
        let mut out = mapper.categories("all");
        if out.is_empty() {
            for r in ALL_CATEGORY {
                if let Ok(m) = mapper.resolve(r)
                    && !out.contains(&m)
                {
                    out.push(m);
                }
            }
        }
        return Ok(out);
    }
    match mapper.resolve(resource) {
        Ok(m) => Ok(vec![m]),
        Err(e) => {
            let cat = mapper.categories(resource);
            if cat.is_empty() { Err(e) } else { Ok(cat) }
        }
    }
}

/// Arguments → targets (namespace unset; see [`with_namespace`]).
pub fn parse_args(mapper: &Mapper, args: &[String]) -> Result<Vec<Target>> {
    let mut out = Vec::new();
    for raw in split_args(args)? {
        for mapping in resolve_type(mapper, &raw.resource)? {
            out.push(Target {
                mapping,
                namespace: None,
                name: raw.name.clone(),
            });
        }
    }
    Ok(out)
}

/// [`parse_args`] with the command's mapper, re-discovering once when a type is unknown
/// (a CRD created since the cache was written) and printing kubectl's short-name
/// warnings; namespaced targets get `namespace` (None: all namespaces).
pub async fn targets(ctx: &Ctx, args: &[String], namespace: Option<&str>) -> Result<Vec<Target>> {
    let raws = split_args(args)?;
    let mapper = ctx.mapper().await?;
    let mut out = Vec::new();
    for raw in raws {
        let mappings = match resolve_type(mapper, &raw.resource) {
            Ok(m) => m,
            Err(_) => vec![mapper.resolve_fresh(ctx, &raw.resource).await?],
        };
        for mapping in mappings {
            out.push(Target {
                mapping,
                namespace: None,
                name: raw.name.clone(),
            });
        }
    }
    with_namespace(&mut out, namespace);
    Ok(out)
}

/// Sets the namespace of namespaced targets (`None` for all namespaces).
pub fn with_namespace(targets: &mut [Target], namespace: Option<&str>) {
    for t in targets {
        t.namespace = if t.mapping.namespaced {
            namespace.map(str::to_string)
        } else {
            None
        };
    }
}

/// Whether several resource types were named (`pods,svc`, `all`, `pod/a svc/b`).
pub fn multiple_types(targets: &[Target]) -> bool {
    targets
        .windows(2)
        .any(|w| w[0].mapping.group_resource() != w[1].mapping.group_resource())
}

/// Percent-encodes a query value.
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// What to list.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    /// `limit` per request (0: all at once), following `continue` tokens.
    pub chunk_size: i64,
    /// `Accept` (e.g. the Table types); JSON when None.
    pub accept: Option<String>,
    /// Extra query (`includeObject=Object`).
    pub extra_query: Vec<(String, String)>,
}

impl ListOptions {
    /// The query string (`?labelSelector=…&fieldSelector=…&limit=…&continue=…`, or empty).
    pub fn query(&self, cont: Option<&str>) -> String {
        let mut q: Vec<String> = Vec::new();
        if let Some(l) = self.label_selector.as_deref().filter(|s| !s.is_empty()) {
            q.push(format!("labelSelector={}", encode(l)));
        }
        if let Some(f) = self.field_selector.as_deref().filter(|s| !s.is_empty()) {
            q.push(format!("fieldSelector={}", encode(f)));
        }
        if self.chunk_size > 0 {
            q.push(format!("limit={}", self.chunk_size));
        }
        if let Some(c) = cont {
            q.push(format!("continue={}", encode(c)));
        }
        for (k, v) in &self.extra_query {
            q.push(format!("{k}={}", encode(v)));
        }
        if q.is_empty() {
            String::new()
        } else {
            format!("?{}", q.join("&"))
        }
    }
}

/// GETs one object (`accept` e.g. the Table types).
pub async fn get_object(
    ctx: &Ctx,
    target: &Target,
    accept: Option<&str>,
    extra_query: &[(String, String)],
) -> Result<Value> {
    let mut path = target.path();
    if !extra_query.is_empty() {
        let q: Vec<String> = extra_query
            .iter()
            .map(|(k, v)| format!("{k}={}", encode(v)))
            .collect();
        path = format!("{path}?{}", q.join("&"));
    }
    let mut req = Request::get(path);
    if let Some(a) = accept {
        req = req.accept(a);
    }
    ctx.client().await?.send(req).await?.json()
}

/// Lists a collection, following `continue` tokens; the chunks' `items` (or a Table's
/// `rows`) are concatenated into the first answer, whose metadata is the last chunk's.
pub async fn list(ctx: &Ctx, target: &Target, opts: &ListOptions) -> Result<Value> {
    let base = Target {
        name: None,
        ..target.clone()
    }
    .path();
    let client = ctx.client().await?;
    let mut cont: Option<String> = None;
    let mut merged: Option<Value> = None;
    loop {
        let mut req = Request::get(format!("{base}{}", opts.query(cont.as_deref())));
        if let Some(a) = &opts.accept {
            req = req.accept(a.clone());
        }
        let page = client
            .send(req)
            .await?
            .json()
            .map_err(|e| list_error(e, &target.mapping, opts))?;
        let next = page
            .pointer("/metadata/continue")
            .and_then(Value::as_str)
            .filter(|c| !c.is_empty())
            .map(str::to_string);
        merged = Some(match merged {
            None => page,
            Some(mut acc) => {
                for key in ["items", "rows"] {
                    if let (Some(a), Some(b)) = (
                        acc.get_mut(key).and_then(Value::as_array_mut),
                        page.get(key).and_then(Value::as_array),
                    ) {
                        a.extend(b.iter().cloned());
                    }
                }
                if let (Some(m), Some(pm)) = (acc.get_mut("metadata"), page.get("metadata")) {
                    *m = pm.clone();
                }
                acc
            }
        });
        match next {
            Some(c) if opts.chunk_size > 0 => cont = Some(c),
            _ => break,
        }
    }
    Ok(merged.unwrap_or(Value::Null))
}

/// kubectl's builder rewords BadRequest and NotFound failures of a list (keeping them
/// server errors): `Unable to list "/v1, Resource=pods": …`, or with selectors
/// `Unable to find "/v1, Resource=pods" that match label selector "…", field selector "…": …`.
fn list_error(e: CliError, m: &Mapping, opts: &ListOptions) -> CliError {
    let CliError::Api(mut st) = e else {
        return e;
    };
    if st.code != 400 && st.code != 404 {
        return CliError::Api(st);
    }
    let gvr = format!("{}/{}, Resource={}", m.group, m.version, m.resource);
    let label = opts.label_selector.clone().unwrap_or_default();
    let field = opts.field_selector.clone().unwrap_or_default();
    st.message = if label.is_empty() && field.is_empty() {
        format!("Unable to list {gvr:?}: {}", st.message)
    } else {
        format!(
            "Unable to find {gvr:?} that match label selector {label:?}, field selector {field:?}: {}",
            st.message
        )
    };
    CliError::Api(st)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    fn raw(r: &str, n: Option<&str>) -> RawArg {
        RawArg {
            resource: r.into(),
            name: n.map(Into::into),
        }
    }

    #[test]
    fn splits() {
        assert_eq!(split_args(&s(&["pods"])).unwrap(), vec![raw("pods", None)]);
        assert_eq!(
            split_args(&s(&["pods", "a", "b"])).unwrap(),
            vec![raw("pods", Some("a")), raw("pods", Some("b"))]
        );
        assert_eq!(
            split_args(&s(&["pods,svc"])).unwrap(),
            vec![raw("pods", None), raw("svc", None)]
        );
        assert_eq!(
            split_args(&s(&["deploy/x", "svc/y"])).unwrap(),
            vec![raw("deploy", Some("x")), raw("svc", Some("y"))]
        );
        assert_eq!(
            split_args(&s(&["pods,svc/x"])).unwrap(),
            vec![raw("pods", Some("x")), raw("svc", Some("x"))]
        );
        let e = split_args(&s(&["pods", "pod/x"])).unwrap_err().to_string();
        assert!(e.starts_with("error: there is no need to specify a resource type as a separate argument when passing arguments in resource/name form"), "{e}");
        assert!(split_args(&s(&["pod/x/y"])).is_err());
        assert_eq!(split_args(&s(&["pods,svc", "x"])).unwrap().len(), 2);
    }

    #[test]
    fn queries() {
        let o = ListOptions {
            label_selector: Some("app in (a,b)".into()),
            chunk_size: 500,
            ..Default::default()
        };
        assert_eq!(
            o.query(Some("tok=")),
            "?labelSelector=app%20in%20%28a%2Cb%29&limit=500&continue=tok%3D"
        );
    }
}
