//! `kubectl label` and `kubectl annotate`: the object is read, its map changed on the
//! client (`--overwrite` rules, `KEY-` removals), and the difference sent as a JSON merge
//! patch, as kubectl does (a `--resource-version` becomes the patch's precondition).

use std::io::Write;

use http::Method;
use serde_json::{Map, Value};

use crate::cmd::targets::{self, FileFlags, Selection, SelectorFlags};
use crate::ctx::Ctx;
use crate::error::{CliError, Result};
use crate::output::{DryRun, DryRunFlag, PrintFlags, print_operation};
use crate::transport::Request;
use crate::twoway::create_merge_patch;

/// Which metadata map a run edits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Which {
    Labels,
    Annotations,
}

impl Which {
    fn field(self) -> &'static str {
        match self {
            Which::Labels => "labels",
            Which::Annotations => "annotations",
        }
    }

    fn noun(self) -> &'static str {
        match self {
            Which::Labels => "label",
            Which::Annotations => "annotation",
        }
    }
}

#[derive(clap::Args, Debug)]
pub struct Args {
    /// (-f FILENAME | TYPE NAME) KEY_1=VAL_1 ... KEY_N=VAL_N.
    pub args: Vec<String>,
    /// If true, allow the values to be overwritten.
    #[arg(long)]
    pub overwrite: bool,
    /// If true, display the labels (annotations) of the resource.
    #[arg(long)]
    pub list: bool,
    /// If true, do not contact the API server but run locally.
    #[arg(long)]
    pub local: bool,
    /// Select all resources, in the namespace of the specified resource types.
    #[arg(long)]
    pub all: bool,
    /// If true, check the specified action in all namespaces.
    #[arg(short = 'A', long = "all-namespaces")]
    pub all_namespaces: bool,
    /// If non-empty, the update will only succeed if this is the current resource-version
    /// for the object. Only valid when specifying a single resource.
    #[arg(long = "resource-version")]
    pub resource_version: Option<String>,
    #[command(flatten)]
    pub files: FileFlags,
    #[command(flatten)]
    pub select: SelectorFlags,
    #[command(flatten)]
    pub dry_run: DryRunFlag,
    /// Name of the manager used to track field ownership.
    #[arg(long = "field-manager")]
    pub field_manager: Option<String>,
    #[command(flatten)]
    pub print: PrintFlags,
}

/// Parsed changes: new pairs (in argument order) and removals.
#[derive(Debug, Default, PartialEq)]
pub struct Changes {
    pub set: Vec<(String, String)>,
    pub remove: Vec<String>,
}

/// kubectl's `parseLabels` (pure).
pub fn parse_labels(spec: &[String]) -> Result<Changes> {
    let mut c = Changes::default();
    for s in spec {
        if s.contains('=') {
            let parts: Vec<&str> = s.split('=').collect();
            if parts.len() != 2 {
                return Err(CliError::msg(format!("invalid label spec: {s}")));
            }
            let errs = api::validation::names::is_valid_label_value(parts[1]);
            if !errs.is_empty() {
                return Err(CliError::msg(format!(
                    "invalid label value: {}: {}",
                    go_quote(s),
                    errs.join(";")
                )));
            }
            c.set.retain(|(k, _)| k != parts[0]);
            c.set.push((parts[0].to_string(), parts[1].to_string()));
        } else if let Some(k) = s.strip_suffix('-') {
            c.remove.push(k.to_string());
        } else {
            return Err(CliError::msg(format!("unknown label spec: {s}")));
        }
    }
    if c.remove.iter().any(|r| c.set.iter().any(|(k, _)| k == r)) {
        return Err(CliError::msg(
            "can not both modify and remove a label in the same command",
        ));
    }
    Ok(c)
}

/// kubectl's annotation parsing (`ParsePairs` and `validateAnnotations`) (pure).
pub fn parse_annotations(spec: &[String]) -> Result<Changes> {
    let (set, remove) = targets::parse_pairs(spec, "annotation", true)?;
    Ok(Changes { set, remove })
}

fn check_annotation_conflicts(c: &Changes) -> Result<()> {
    let both: Vec<&str> = c
        .remove
        .iter()
        .filter(|r| c.set.iter().any(|(k, _)| k == *r))
        .map(String::as_str)
        .collect();
    if !both.is_empty() {
        return Err(CliError::msg(format!(
            "can not both modify and remove the following annotation(s) in the same command: {}",
            both.join(", ")
        )));
    }
    Ok(())
}

/// Go's `%q` of a string (enough for label specs).
fn go_quote(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| format!("\"{s}\""))
}

/// Applies the changes to an object's labels or annotations, with kubectl's `--overwrite`
/// check (pure).
pub fn apply_changes(
    obj: &mut Value,
    which: Which,
    changes: &Changes,
    overwrite: bool,
    resource_version: Option<&str>,
) -> Result<()> {
    let current = obj
        .pointer(&format!("/metadata/{}", which.field()))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if !overwrite {
        let mut conflicts = Vec::new();
        for (k, v) in &changes.set {
            if which == Which::Annotations && k == "kubernetes.io/change-cause" {
                continue;
            }
            if let Some(cur) = current.get(k).and_then(Value::as_str)
                && cur != v
            {
                conflicts.push((k.clone(), cur.to_string()));
            }
        }
        if !conflicts.is_empty() {
            return Err(match which {
                Which::Labels => CliError::msg(
                    conflicts
                        .iter()
                        .map(|(k, c)| {
                            format!("'{k}' already has a value ({c}), and --overwrite is false")
                        })
                        .collect::<Vec<_>>()
                        .join("\nerror: "),
                ),
                Which::Annotations => CliError::msg(format!(
                    "--overwrite is false but found the following declared annotation(s): {}",
                    conflicts
                        .iter()
                        .map(|(k, c)| format!("'{k}' already has a value ({c})"))
                        .collect::<Vec<_>>()
                        .join("; ")
                )),
            });
        }
    }
    let mut map: Map<String, Value> = current;
    for (k, v) in &changes.set {
        map.insert(k.clone(), Value::String(v.clone()));
    }
    for k in &changes.remove {
        map.remove(k);
    }
    if !obj["metadata"].is_object() {
        obj["metadata"] = Value::Object(Map::new());
    }
    obj["metadata"][which.field()] = Value::Object(map);
    if let Some(rv) = resource_version.filter(|r| !r.is_empty()) {
        obj["metadata"]["resourceVersion"] = Value::String(rv.to_string());
    }
    Ok(())
}

/// `labeled`, `unlabeled` or `not labeled`, as kubectl's `updateDataChangeMsg` (pure).
pub fn label_message(old: &Value, new: &Value, overwrite: bool) -> &'static str {
    let (o, n) = (old.to_string(), new.to_string());
    if o == n {
        "not labeled"
    } else if !overwrite && n.len() < o.len() {
        "unlabeled"
    } else {
        "labeled"
    }
}

pub async fn run(ctx: &Ctx, args: Args, which: Which) -> Result<()> {
    let dry_run = args.dry_run.resolve(ctx)?;
    let (resources, pairs) = targets::resources_and_pairs(&args.args, which.noun())?;
    let changes = match which {
        Which::Labels => parse_labels(&pairs)?,
        Which::Annotations => parse_annotations(&pairs)?,
    };
    if args.list && args.print.output.as_deref().is_some_and(|o| !o.is_empty()) {
        return Err(CliError::msg(
            "--list and --output may not be specified together",
        ));
    }
    if args.all && args.select.label().is_some() {
        return Err(CliError::msg(
            "cannot set --all and --selector at the same time",
        ));
    }
    if args.all && args.select.field().is_some() {
        return Err(CliError::msg(
            "cannot set --all and --field-selector at the same time",
        ));
    }
    let no_files = args.files.filenames.is_empty();
    let example = match which {
        Which::Labels => "pod.yaml or --filename=pod.json",
        Which::Annotations => "rsrc.yaml or --filename=rsrc.json",
    };
    if args.local {
        if dry_run == DryRun::Server {
            return Err(CliError::msg(
                "cannot specify --local and --dry-run=server - did you mean --dry-run=client?",
            ));
        }
        if !resources.is_empty() {
            return Err(CliError::msg(format!(
                "can only use local files by -f {example} when --local=true is set"
            )));
        }
        if no_files {
            return Err(CliError::msg(format!(
                "one or more files must be specified as -f {example}"
            )));
        }
    } else if resources.is_empty() && no_files {
        return Err(CliError::msg(
            "one or more resources must be specified as <resource> <name> or <resource>/<name>",
        ));
    }
    if changes.set.is_empty() && changes.remove.is_empty() && !args.list {
        return Err(CliError::msg(format!(
            "at least one {} update is required",
            which.noun()
        )));
    }
    if which == Which::Annotations {
        check_annotation_conflicts(&changes)?;
    }
    // Validate the output format before any request.
    args.print.format(false)?;

    type Items = Vec<(Option<crate::cmd::targets::Target>, Value)>;
    let (mut items, mut errors, single): (Items, Vec<CliError>, bool) = if args.local {
        let docs = targets::read_documents(ctx, &args.files)?;
        let single = docs.len() == 1;
        (
            docs.into_iter().map(|(_, d)| (None, d)).collect(),
            Vec::new(),
            single,
        )
    } else {
        let sel = Selection {
            args: &resources,
            files: Some(&args.files),
            selector: args.select.selector.as_deref(),
            field_selector: args.select.field_selector.as_deref(),
            all: args.all,
            all_namespaces: args.all_namespaces,
            fetch: true,
            require_names: !args.all,
        };
        let found = targets::find(ctx, &sel).await?;
        let single = found.single || (found.targets.len() == 1 && !args.files.filenames.is_empty());
        (
            found
                .targets
                .into_iter()
                .filter_map(|t| {
                    let obj = t.object.clone()?;
                    Some((Some(t), obj))
                })
                .collect(),
            found.errors,
            single,
        )
    };
    let rv = args.resource_version.as_deref().filter(|r| !r.is_empty());
    if !single && rv.is_some() {
        return Err(CliError::msg(
            "--resource-version may only be used with a single resource",
        ));
    }
    let field_manager = args.field_manager.clone().unwrap_or_else(|| match which {
        Which::Labels => "kubectl-label".into(),
        Which::Annotations => "kubectl-annotate".into(),
    });

    for (target, mut obj) in items.drain(..) {
        let result = async {
            if rv.is_some() {
                obj["metadata"]["resourceVersion"] = Value::String(String::new());
            }
            let old = obj.clone();
            let local = dry_run == DryRun::Client || args.local || args.list;
            if !local && which == Which::Labels {
                let current = obj["metadata"]["labels"]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let mut out = ctx.out();
                for k in &changes.remove {
                    if !current.contains_key(k) {
                        let _ = writeln!(out, "label {} not found.", go_quote(k));
                    }
                }
            }
            apply_changes(&mut obj, which, &changes, args.overwrite, rv)?;
            let message = match which {
                Which::Labels => label_message(&old, &obj, args.overwrite),
                Which::Annotations => "annotated",
            };
            let mut output_obj = obj.clone();
            if !local && let Some(t) = &target {
                let patch = create_merge_patch(&old, &obj);
                let path = format!(
                    "{}?fieldManager={}{}",
                    t.path(),
                    targets::query_escape(&field_manager),
                    dry_run.query()
                );
                let req = Request::new(Method::PATCH, path)
                    .json(&patch)
                    .content_type("application/merge-patch+json");
                output_obj = ctx.client().await?.send(req).await?.json()?;
            }
            if args.list {
                let map = output_obj["metadata"][which.field()]
                    .as_object()
                    .cloned()
                    .unwrap_or_default();
                let mut out = ctx.out();
                let indent = if single { "" } else { " " };
                if !single {
                    let api_version = obj["apiVersion"].as_str().unwrap_or_default();
                    let group = api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
                    let _ = writeln!(
                        out,
                        "Listing {} for {}.{}/{}:",
                        which.field(),
                        obj["kind"].as_str().unwrap_or_default(),
                        group,
                        obj["metadata"]["name"].as_str().unwrap_or_default()
                    );
                }
                for (k, v) in map {
                    let _ = writeln!(out, "{indent}{k}={}", v.as_str().unwrap_or_default());
                }
                return Ok(());
            }
            let shown = match which {
                Which::Labels => &obj,
                Which::Annotations => &output_obj,
            };
            print_operation(ctx, &args.print, shown, message, dry_run)
        }
        .await;
        if let Err(e) = result {
            errors.push(e);
        }
    }
    targets::finish(ctx, errors)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn s(v: &[&str]) -> Vec<String> {
        v.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn label_specs() {
        let c = parse_labels(&s(&["a=b", "c-"])).unwrap();
        assert_eq!(c.set, vec![("a".to_string(), "b".to_string())]);
        assert_eq!(c.remove, s(&["c"]));
        assert_eq!(
            parse_labels(&s(&["a=b=c"])).unwrap_err().to_string(),
            "error: invalid label spec: a=b=c"
        );
        assert!(
            parse_labels(&s(&["a=b c"]))
                .unwrap_err()
                .to_string()
                .starts_with("error: invalid label value: \"a=b c\": a valid label must be")
        );
        assert_eq!(
            parse_labels(&s(&["a=b", "a-"])).unwrap_err().to_string(),
            "error: can not both modify and remove a label in the same command"
        );
    }

    #[test]
    fn overwrite_rules_and_messages() {
        let obj = json!({"metadata":{"name":"x","labels":{"a":"b"}}});
        let set = |k: &str, v: &str| Changes {
            set: vec![(k.into(), v.into())],
            remove: vec![],
        };
        let mut o = obj.clone();
        let e = apply_changes(&mut o, Which::Labels, &set("a", "c"), false, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "error: 'a' already has a value (b), and --overwrite is false"
        );
        let mut o = obj.clone();
        apply_changes(&mut o, Which::Labels, &set("a", "b"), false, None).unwrap();
        assert_eq!(label_message(&obj, &o, false), "not labeled");
        let mut o = obj.clone();
        apply_changes(&mut o, Which::Labels, &set("a", "c"), true, None).unwrap();
        assert_eq!(label_message(&obj, &o, true), "labeled");
        let mut o = obj.clone();
        let rm = Changes {
            set: vec![],
            remove: vec!["a".into()],
        };
        apply_changes(&mut o, Which::Labels, &rm, false, None).unwrap();
        assert_eq!(label_message(&obj, &o, false), "unlabeled");
        assert_eq!(
            create_merge_patch(&obj, &o),
            json!({"metadata":{"labels":{"a":null}}})
        );
        let mut o = json!({"metadata":{"annotations":{"x":"y"}}});
        let e = apply_changes(&mut o, Which::Annotations, &set("x", "z"), false, None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "error: --overwrite is false but found the following declared annotation(s): 'x' already has a value (y)"
        );
    }

    #[test]
    fn resource_version_is_a_precondition() {
        let mut old = json!({"metadata":{"name":"x","resourceVersion":""}});
        let mut new = old.clone();
        apply_changes(
            &mut new,
            Which::Labels,
            &Changes {
                set: vec![("a".into(), "b".into())],
                remove: vec![],
            },
            false,
            Some("7"),
        )
        .unwrap();
        old["metadata"]["resourceVersion"] = json!("");
        assert_eq!(
            create_merge_patch(&old, &new),
            json!({"metadata":{"labels":{"a":"b"},"resourceVersion":"7"}})
        );
    }

    #[test]
    fn annotation_conflicts() {
        let c = parse_annotations(&s(&["a=1", "a-"])).unwrap();
        assert_eq!(
            check_annotation_conflicts(&c).unwrap_err().to_string(),
            "error: can not both modify and remove the following annotation(s) in the same command: a"
        );
    }
}
