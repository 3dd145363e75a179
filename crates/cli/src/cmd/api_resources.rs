//! `kubectl api-resources`: the server's preferred resources (discovery, past the cache
//! unless `--cached`), filtered and sorted as kubectl 1.33 does.

use std::io::Write;

use crate::ctx::Ctx;
use crate::discovery::{ApiResource, Discovery, DiscoveryClient, group_version};
use crate::error::{CliError, Result};
use crate::output::table::TextTable;

#[derive(clap::Args, Debug)]
pub struct Args {
    /// Limit to resources in the specified API group.
    #[arg(long = "api-group")]
    pub api_group: Option<String>,
    /// Use the cached list of resources if available.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub cached: Option<bool>,
    /// Limit to resources that belong to the specified categories.
    #[arg(long, value_delimiter = ',')]
    pub categories: Vec<String>,
    /// If false, non-namespaced resources will be returned, otherwise returning namespaced
    /// resources by default.
    #[arg(long, num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub namespaced: Option<bool>,
    /// When using the default or custom-column output format, don't print headers.
    #[arg(long = "no-headers", num_args = 0..=1, default_missing_value = "true", require_equals = true)]
    pub no_headers: Option<bool>,
    /// Output format. One of: (wide, name).
    #[arg(short = 'o', long = "output", default_value = "")]
    pub output: String,
    /// If non-empty, sort list of resources using specified field. The field can be either
    /// 'name' or 'kind'.
    #[arg(long = "sort-by", default_value = "")]
    pub sort_by: String,
    /// Limit to resources that support the specified verbs.
    #[arg(long, value_delimiter = ',')]
    pub verbs: Vec<String>,
    #[arg(hide = true)]
    pub rest: Vec<String>,
}

/// One row: the resource, its group and group-version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub group: String,
    pub group_version: String,
    pub resource: ApiResource,
}

/// The filters of the command line.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    pub api_group: Option<String>,
    pub namespaced: Option<bool>,
    pub verbs: Vec<String>,
    pub categories: Vec<String>,
}

/// The rows kubectl prints, in its order (group, or `name`/`kind`, then name; stable).
pub fn rows(d: &Discovery, f: &Filter, sort_by: &str) -> Vec<Row> {
    let mut out: Vec<Row> = d
        .preferred_resources()
        .into_iter()
        .filter(|(g, _, r)| {
            !r.verbs.is_empty()
                && f.api_group.as_ref().is_none_or(|ag| ag == g)
                && f.namespaced.is_none_or(|ns| ns == r.namespaced)
                && f.verbs.iter().all(|v| r.verbs.contains(v))
                && f.categories.iter().all(|c| r.categories.contains(c))
        })
        .map(|(g, v, r)| Row {
            group_version: group_version(&g, &v),
            group: g,
            resource: r,
        })
        .collect();
    out.sort_by(|a, b| {
        let (x, y) = match sort_by {
            "name" => (&a.resource.name, &b.resource.name),
            "kind" => (&a.resource.kind, &b.resource.kind),
            _ => (&a.group, &b.group),
        };
        x.cmp(y).then_with(|| a.resource.name.cmp(&b.resource.name))
    });
    out
}

/// The text kubectl prints for `rows` in `output` (``, `wide` or `name`).
pub fn render(rows: &[Row], output: &str, no_headers: bool) -> String {
    if output == "name" {
        return rows
            .iter()
            .map(|r| {
                if r.group.is_empty() {
                    format!("{}\n", r.resource.name)
                } else {
                    format!("{}.{}\n", r.resource.name, r.group)
                }
            })
            .collect();
    }
    let wide = output == "wide";
    let mut t = TextTable::default();
    if !no_headers {
        let mut h: Vec<String> = ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        if wide {
            h.push("VERBS".into());
            h.push("CATEGORIES".into());
        }
        t.push(h);
    }
    for r in rows {
        let mut row = vec![
            r.resource.name.clone(),
            r.resource.short_names.join(","),
            r.group_version.clone(),
            r.resource.namespaced.to_string(),
            r.resource.kind.clone(),
        ];
        if wide {
            row.push(r.resource.verbs.join(","));
            row.push(r.resource.categories.join(","));
        }
        t.push(row);
    }
    t.render()
}

pub async fn run(ctx: &Ctx, args: Args) -> Result<()> {
    if !args.rest.is_empty() {
        return Err(CliError::usage(
            "kubectl api-resources",
            format!("unexpected arguments: [{}]", args.rest.join(" ")),
        ));
    }
    if !matches!(args.output.as_str(), "" | "wide" | "name") {
        return Err(CliError::msg(format!(
            "--output {} is not available",
            args.output
        )));
    }
    if !matches!(args.sort_by.as_str(), "" | "name" | "kind") {
        return Err(CliError::msg("--sort-by accepts only name or kind"));
    }
    let mut d = DiscoveryClient::for_ctx(ctx).await?;
    if !args.cached.unwrap_or(false) {
        d.invalidate();
    }
    // kubectl prints the header even when discovery failed, then the error.
    let discovery = match d.discover().await {
        Ok(d) => d,
        Err(e) => {
            let header = render(&[], &args.output, args.no_headers.unwrap_or(false));
            ctx.out().write_all(header.as_bytes())?;
            return Err(e);
        }
    };
    let filter = Filter {
        api_group: args.api_group,
        namespaced: args.namespaced,
        verbs: args.verbs,
        categories: args.categories,
    };
    let rows = rows(&discovery, &filter, &args.sort_by);
    let text = render(&rows, &args.output, args.no_headers.unwrap_or(false));
    ctx.out().write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;
    use crate::discovery::{ApiGroup, ApiResourceList, GroupVersionForDiscovery};
    use std::collections::BTreeMap;

    fn discovery() -> Discovery {
        let r = |name: &str, kind: &str, ns: bool, short: &[&str], verbs: &[&str]| ApiResource {
            name: name.into(),
            singular_name: kind.to_lowercase(),
            namespaced: ns,
            kind: kind.into(),
            verbs: verbs.iter().map(|s| s.to_string()).collect(),
            short_names: short.iter().map(|s| s.to_string()).collect(),
            categories: if kind == "Pod" {
                vec!["all".into()]
            } else {
                vec![]
            },
            ..ApiResource::default()
        };
        let all = ["create", "delete", "get", "list"];
        let mut resources = BTreeMap::new();
        resources.insert(
            "v1".to_string(),
            ApiResourceList {
                group_version: "v1".into(),
                resources: vec![
                    r("pods", "Pod", true, &["po"], &all),
                    r("pods/status", "Pod", true, &[], &["get"]),
                    r("bindings", "Binding", true, &[], &["create"]),
                    r("nodes", "Node", false, &["no"], &all),
                    r("nothing", "Nothing", false, &[], &[]),
                ],
                ..ApiResourceList::default()
            },
        );
        resources.insert(
            "apps/v1".to_string(),
            ApiResourceList {
                group_version: "apps/v1".into(),
                resources: vec![r("deployments", "Deployment", true, &["deploy"], &all)],
                ..ApiResourceList::default()
            },
        );
        let gv = |gv: &str, v: &str| GroupVersionForDiscovery {
            group_version: gv.into(),
            version: v.into(),
        };
        Discovery {
            groups: vec![
                ApiGroup {
                    name: "".into(),
                    versions: vec![gv("v1", "v1")],
                    preferred_version: gv("v1", "v1"),
                },
                ApiGroup {
                    name: "apps".into(),
                    versions: vec![gv("apps/v1", "v1")],
                    preferred_version: gv("apps/v1", "v1"),
                },
            ],
            resources,
        }
    }

    #[test]
    fn table_as_kubectl() {
        let rows = rows(&discovery(), &Filter::default(), "");
        assert_eq!(
            render(&rows, "", false),
            "NAME          SHORTNAMES   APIVERSION   NAMESPACED   KIND\n\
             bindings                   v1           true         Binding\n\
             nodes         no           v1           false        Node\n\
             pods          po           v1           true         Pod\n\
             deployments   deploy       apps/v1      true         Deployment\n"
        );
        assert_eq!(
            render(&rows, "name", false),
            "bindings\nnodes\npods\ndeployments.apps\n"
        );
        let wide = render(&rows, "wide", true);
        assert!(wide.starts_with("bindings      "), "{wide}");
        assert!(wide.contains("create,delete,get,list   all\n"), "{wide}");
    }

    #[test]
    fn filters_and_sorting() {
        let d = discovery();
        let names = |f: &Filter, s: &str| -> Vec<String> {
            rows(&d, f, s)
                .into_iter()
                .map(|r| r.resource.name)
                .collect()
        };
        assert_eq!(
            names(&Filter::default(), "kind"),
            vec!["bindings", "deployments", "nodes", "pods"]
        );
        let ns = Filter {
            namespaced: Some(false),
            ..Filter::default()
        };
        assert_eq!(names(&ns, ""), vec!["nodes"]);
        let group = Filter {
            api_group: Some("apps".into()),
            ..Filter::default()
        };
        assert_eq!(names(&group, ""), vec!["deployments"]);
        let core = Filter {
            api_group: Some(String::new()),
            verbs: vec!["list".into(), "get".into()],
            ..Filter::default()
        };
        assert_eq!(names(&core, "name"), vec!["nodes", "pods"]);
        let cat = Filter {
            categories: vec!["all".into()],
            ..Filter::default()
        };
        assert_eq!(names(&cat, ""), vec!["pods"]);
    }
}
