//! `kubectl auth`: `whoami` (a SelfSubjectReview) and `can-i` (a SelfSubjectAccessReview,
//! or with `--list` a SelfSubjectRulesReview), printed and exiting as kubectl does.

use std::io::Write;

use serde_json::Value;

use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{Format, PrintFlags};
use crate::transport::Request;

#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    command: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Check whether an action is allowed.
    CanI(CanIArgs),
    /// Experimental: Check self subject attributes.
    Whoami(WhoamiArgs),
}

#[derive(clap::Args, Debug)]
struct CanIArgs {
    args: Vec<String>,
    /// If true, check the specified action in all namespaces.
    #[arg(short = 'A', long)]
    all_namespaces: bool,
    /// If true, suppress output and just return the exit code.
    #[arg(short = 'q', long)]
    quiet: bool,
    /// If true, prints all allowed actions.
    #[arg(long)]
    list: bool,
    /// If true, prints allowed actions without headers.
    #[arg(long)]
    no_headers: bool,
    /// SubResource such as pod/log or deployment/scale.
    #[arg(long)]
    subresource: Option<String>,
}

#[derive(clap::Args, Debug)]
struct WhoamiArgs {
    #[command(flatten)]
    print: PrintFlags,
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    match args.command {
        Sub::Whoami(a) => whoami(ctx, a).await,
        Sub::CanI(a) => can_i(ctx, a).await,
    }
}

fn warn(ctx: &Ctx, msg: &str) {
    let _ = writeln!(ctx.err(), "Warning: {msg}");
}

// ---------------------------------------------------------------------------------------
// whoami

/// The `ATTRIBUTE VALUE` table of a SelfSubjectReview.
pub fn whoami_table(review: &Value) -> String {
    let ui = &review["status"]["userInfo"];
    let mut rows = vec![("ATTRIBUTE".to_string(), "VALUE".to_string())];
    if let Some(u) = ui["username"].as_str().filter(|s| !s.is_empty()) {
        rows.push(("Username".into(), u.into()));
    }
    if let Some(u) = ui["uid"].as_str().filter(|s| !s.is_empty()) {
        rows.push(("UID".into(), u.into()));
    }
    let list = |v: &Value| {
        let items: Vec<&str> = v
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        format!("[{}]", items.join(" "))
    };
    if ui["groups"].as_array().is_some_and(|g| !g.is_empty()) {
        rows.push(("Groups".into(), list(&ui["groups"])));
    }
    if let Some(extra) = ui["extra"].as_object() {
        for (k, v) in extra {
            rows.push((format!("Extra: {k}"), list(v)));
        }
    }
    let w = rows.iter().map(|r| r.0.chars().count()).max().unwrap_or(0);
    rows.iter()
        .map(|(a, v)| format!("{a}{}{v}\n", " ".repeat((w + 3).max(6) - a.chars().count())))
        .collect()
}

async fn whoami(ctx: &Ctx, a: WhoamiArgs) -> Result<()> {
    let format = a.print.format(false)?;
    let client = ctx.client().await?;
    let mut review = None;
    for gv in ["v1", "v1beta1", "v1alpha1"] {
        let body = serde_json::json!({
            "kind": "SelfSubjectReview",
            "apiVersion": format!("authentication.k8s.io/{gv}"),
            "metadata": {"creationTimestamp": null},
            "status": {"userInfo": {}}
        });
        let resp = client
            .send(
                Request::new(
                    http::Method::POST,
                    format!("/apis/authentication.k8s.io/{gv}/selfsubjectreviews"),
                )
                .json(&body),
            )
            .await?;
        if resp.status == http::StatusCode::NOT_FOUND {
            continue;
        }
        review = Some(resp.json()?);
        break;
    }
    let Some(review) = review else {
        return Err(CliError::msg(
            "the selfsubjectreviews API is not enabled in the cluster\nenable APISelfSubjectReview feature gate and authentication.k8s.io/v1alpha1 API",
        ));
    };
    match format {
        Format::Default => {
            ctx.out().write_all(whoami_table(&review).as_bytes())?;
            Ok(())
        }
        _ => crate::output::print_object(ctx, &a.print, &review),
    }
}

// ---------------------------------------------------------------------------------------
// can-i

const KNOWN_RESOURCE_VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
    "use",
    "bind",
    "impersonate",
    "*",
    "approve",
    "sign",
    "escalate",
    "attest",
];
const KNOWN_NON_RESOURCE_VERBS: &[&str] = &[
    "get", "put", "post", "head", "options", "delete", "patch", "*",
];

/// `schema.ParseResourceArg`'s group/resource part: `deployments.apps` → ("apps",
/// "deployments"); a `resource.version.group` form yields its group too.
pub fn split_resource_group(arg: &str) -> (String, String) {
    let lower = arg.to_lowercase();
    match lower.split_once('.') {
        Some((r, g)) => (g.to_string(), r.to_string()),
        None => (String::new(), lower),
    }
}

async fn can_i(ctx: &Ctx, a: CanIArgs) -> Result<()> {
    if a.list {
        if !a.args.is_empty() {
            return Err(CliError::msg(
                "list option must be specified with no arguments",
            ));
        }
        if a.quiet || a.all_namespaces || a.subresource.is_some() {
            return Err(CliError::msg(
                "list option can't be specified with neither quiet, all-namespaces nor subresource options",
            ));
        }
        return can_i_list(ctx, a.no_headers).await;
    }
    if a.args.len() != 2 {
        return Err(CliError::msg(
            "you must specify two arguments: verb resource or verb resource/resourceName.\nSee 'kubectl auth can-i -h' for help and examples.",
        ));
    }
    let verb = a.args[0].clone();
    let target = a.args[1].clone();
    let mut attrs = serde_json::Map::new();
    let non_resource = target.starts_with('/');
    let mut namespaced = true;
    let (mut group, mut resource, mut name) = (String::new(), String::new(), String::new());
    if !non_resource {
        let (res_arg, n) = match target.split_once('/') {
            Some((r, n)) => (r.to_string(), n.to_string()),
            None => (target.clone(), String::new()),
        };
        name = n;
        if res_arg == "*" {
            resource = "*".into();
        } else {
            let mapper = ctx.mapper().await?;
            match mapper.resolve(&res_arg.to_lowercase()) {
                Ok(m) => {
                    group = m.group.clone();
                    resource = m.resource.clone();
                    namespaced = m.namespaced;
                }
                Err(_) => {
                    let (g, r) = split_resource_group(&res_arg);
                    if g.is_empty() {
                        warn(
                            ctx,
                            &format!("the server doesn't have a resource type '{r}'\n"),
                        );
                    } else {
                        warn(
                            ctx,
                            &format!(
                                "the server doesn't have a resource type '{r}' in group '{g}'\n"
                            ),
                        );
                    }
                    resource = res_arg.clone();
                }
            }
        }
    }
    let namespace = if a.all_namespaces {
        String::new()
    } else {
        ctx.namespace().await?
    };
    if non_resource {
        if a.subresource.is_some() {
            return Err(CliError::msg(
                "--subresource can not be used with NonResourceURL",
            ));
        }
        if !KNOWN_NON_RESOURCE_VERBS.contains(&verb.as_str()) {
            warn(ctx, &format!("verb '{verb}' is not a known verb\n"));
        }
        attrs.insert("verb".into(), verb.clone().into());
        attrs.insert("path".into(), target.clone().into());
    } else {
        if !a.all_namespaces && !namespaced && !resource.is_empty() {
            if group.is_empty() {
                warn(
                    ctx,
                    &format!("resource '{resource}' is not namespace scoped\n"),
                );
            } else {
                warn(
                    ctx,
                    &format!("resource '{resource}' is not namespace scoped in group '{group}'\n"),
                );
            }
        }
        if !KNOWN_RESOURCE_VERBS.contains(&verb.as_str()) {
            warn(ctx, &format!("verb '{verb}' is not a known verb\n"));
        }
        for (k, v) in [
            ("namespace", &namespace),
            ("verb", &verb),
            ("group", &group),
            ("resource", &resource),
            ("subresource", &a.subresource.clone().unwrap_or_default()),
            ("name", &name),
        ] {
            if !v.is_empty() {
                attrs.insert(k.into(), v.clone().into());
            }
        }
    }
    if a.no_headers {
        return Err(CliError::msg(
            "--no-headers cannot be set without --list specified",
        ));
    }
    let spec_key = if non_resource {
        "nonResourceAttributes"
    } else {
        "resourceAttributes"
    };
    let body = serde_json::json!({
        "kind": "SelfSubjectAccessReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": { spec_key: attrs },
        "status": {"allowed": false}
    });
    let client = ctx.client().await?;
    let review = client
        .send(
            Request::new(
                http::Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
            )
            .json(&body),
        )
        .await?
        .json()?;
    let status = &review["status"];
    let allowed = status["allowed"].as_bool().unwrap_or(false);
    if !a.quiet {
        let mut line = if allowed {
            "yes".to_string()
        } else {
            "no".to_string()
        };
        if !allowed {
            for k in ["reason", "evaluationError"] {
                if let Some(s) = status[k].as_str().filter(|s| !s.is_empty()) {
                    line.push_str(&format!(" - {s}"));
                }
            }
        }
        writeln!(ctx.out(), "{line}")?;
    }
    if allowed {
        Ok(())
    } else {
        Err(CliError::Exit(1))
    }
}

/// One policy rule of `--list`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub groups: Vec<String>,
    pub resources: Vec<String>,
    pub names: Vec<String>,
    pub urls: Vec<String>,
}

impl Rule {
    /// The generated protobuf `String()` upstream sorts by.
    fn sort_key(&self) -> String {
        let l = |v: &[String]| format!("[{}]", v.join(" "));
        format!(
            "&PolicyRule{{Verbs:{},APIGroups:{},Resources:{},ResourceNames:{},NonResourceURLs:{},}}",
            l(&self.verbs),
            l(&self.groups),
            l(&self.resources),
            l(&self.names),
            l(&self.urls)
        )
    }
}

/// `rbacutil.BreakdownRule` + `CompactRules` + sort: the rows of `can-i --list`.
pub fn compact_rules(rules: &[Rule]) -> Vec<Rule> {
    let mut broken = Vec::new();
    for r in rules {
        for g in &r.groups {
            for res in &r.resources {
                if r.names.is_empty() {
                    broken.push(Rule {
                        verbs: r.verbs.clone(),
                        groups: vec![g.clone()],
                        resources: vec![res.clone()],
                        ..Rule::default()
                    });
                } else {
                    for n in &r.names {
                        broken.push(Rule {
                            verbs: r.verbs.clone(),
                            groups: vec![g.clone()],
                            resources: vec![res.clone()],
                            names: vec![n.clone()],
                            ..Rule::default()
                        });
                    }
                }
            }
        }
        for u in &r.urls {
            broken.push(Rule {
                verbs: r.verbs.clone(),
                urls: vec![u.clone()],
                ..Rule::default()
            });
        }
    }
    let mut compacted: Vec<Rule> = Vec::new();
    let mut simple: Vec<Rule> = Vec::new();
    for r in broken {
        let is_simple = !r.verbs.is_empty()
            && r.resources.len() == 1
            && r.groups.len() == 1
            && r.names.len() <= 1
            && r.urls.is_empty();
        if is_simple {
            if let Some(e) = simple
                .iter_mut()
                .find(|e| e.groups == r.groups && e.resources == r.resources && e.names == r.names)
            {
                e.verbs.extend(r.verbs);
            } else {
                simple.push(r);
            }
        } else {
            compacted.push(r);
        }
    }
    compacted.extend(simple);
    compacted.sort_by_key(Rule::sort_key);
    compacted
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// The `--list` table.
pub fn rules_table(rules: &[Rule], headers: bool) -> String {
    let mut rows: Vec<[String; 4]> = Vec::new();
    if headers {
        rows.push([
            "Resources".into(),
            "Non-Resource URLs".into(),
            "Resource Names".into(),
            "Verbs".into(),
        ]);
    }
    let l = |v: &[String]| format!("[{}]", v.join(" "));
    for r in rules {
        let combined = match r.resources.first() {
            None => String::new(),
            Some(res) => {
                let (base, sub) = match res.split_once('/') {
                    Some((b, s)) => (b.to_string(), Some(s.to_string())),
                    None => (res.clone(), None),
                };
                let mut c = base;
                if let Some(g) = r.groups.first().filter(|g| !g.is_empty()) {
                    c = format!("{c}.{g}");
                }
                if let Some(s) = sub {
                    c = format!("{c}/{s}");
                }
                c
            }
        };
        rows.push([combined, l(&r.urls), l(&r.names), l(&r.verbs)]);
    }
    let mut widths = [0usize; 4];
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            widths[i] = widths[i].max(c.chars().count());
        }
    }
    let mut out = String::new();
    for r in &rows {
        for (i, c) in r.iter().enumerate() {
            out.push_str(c);
            if i < 3 {
                // Go's tabwriter as kubectl sets it up: padding 3, minimum width 6.
                out.push_str(&" ".repeat((widths[i] + 3).max(6) - c.chars().count()));
            }
        }
        out.push('\n');
    }
    out
}

async fn can_i_list(ctx: &Ctx, no_headers: bool) -> Result<()> {
    let namespace = ctx.namespace().await?;
    let client = ctx.client().await?;
    let body = serde_json::json!({
        "kind": "SelfSubjectRulesReview",
        "apiVersion": "authorization.k8s.io/v1",
        "metadata": {"creationTimestamp": null},
        "spec": {"namespace": namespace},
        "status": {"resourceRules": null, "nonResourceRules": null, "incomplete": false}
    });
    let review = client
        .send(
            Request::new(
                http::Method::POST,
                "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
            )
            .json(&body),
        )
        .await?
        .json()?;
    let status = &review["status"];
    if status["incomplete"].as_bool() == Some(true) {
        warn(
            ctx,
            &format!(
                "the list may be incomplete: {}",
                status["evaluationError"].as_str().unwrap_or_default()
            ),
        );
    }
    let mut rules = Vec::new();
    for r in status["resourceRules"].as_array().into_iter().flatten() {
        rules.push(Rule {
            verbs: strings(&r["verbs"]),
            groups: strings(&r["apiGroups"]),
            resources: strings(&r["resources"]),
            names: strings(&r["resourceNames"]),
            urls: Vec::new(),
        });
    }
    for r in status["nonResourceRules"].as_array().into_iter().flatten() {
        rules.push(Rule {
            verbs: strings(&r["verbs"]),
            urls: strings(&r["nonResourceURLs"]),
            ..Rule::default()
        });
    }
    let text = rules_table(&compact_rules(&rules), !no_headers);
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whoami_rows() {
        let r = serde_json::json!({"status": {"userInfo": {"username": "admin", "groups": ["system:masters", "system:authenticated"], "extra": {"k": ["v"]}}}});
        assert_eq!(
            whoami_table(&r),
            "ATTRIBUTE   VALUE\nUsername    admin\nGroups      [system:masters system:authenticated]\nExtra: k    [v]\n"
        );
    }

    #[test]
    fn list_rules_compacted_and_sorted() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        let rules = vec![
            Rule {
                verbs: s(&["get"]),
                urls: s(&["/api", "/api/*"]),
                ..Rule::default()
            },
            Rule {
                verbs: s(&["create"]),
                groups: s(&["authorization.k8s.io"]),
                resources: s(&["selfsubjectaccessreviews"]),
                ..Rule::default()
            },
            Rule {
                verbs: s(&["create"]),
                groups: s(&["authentication.k8s.io"]),
                resources: s(&["selfsubjectreviews"]),
                ..Rule::default()
            },
            Rule {
                verbs: s(&["list"]),
                groups: s(&[""]),
                resources: s(&["pods", "pods/log"]),
                ..Rule::default()
            },
            Rule {
                verbs: s(&["get"]),
                groups: s(&[""]),
                resources: s(&["pods"]),
                ..Rule::default()
            },
        ];
        let table = rules_table(&compact_rules(&rules), true);
        assert_eq!(
            table,
            "Resources                                       Non-Resource URLs   Resource Names   Verbs\n\
             selfsubjectreviews.authentication.k8s.io        []                  []               [create]\n\
             selfsubjectaccessreviews.authorization.k8s.io   []                  []               [create]\n\
             \x20                                               [/api/*]            []               [get]\n\
             \x20                                               [/api]              []               [get]\n\
             pods                                            []                  []               [list get]\n\
             pods/log                                        []                  []               [list]\n"
        );
    }

    #[test]
    fn resource_group_split() {
        assert_eq!(
            split_resource_group("Foo.Bar"),
            ("bar".into(), "foo".into())
        );
        assert_eq!(split_resource_group("pods"), ("".into(), "pods".into()));
    }
}
