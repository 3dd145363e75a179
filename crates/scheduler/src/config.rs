//! Profiles from configuration: upstream's defaults, `KubeSchedulerConfiguration`
//! (`kubescheduler.config.k8s.io/v1`: profiles, multiPoint and per-point enable/disable,
//! weights, plugin args, `percentageOfNodesToScore`), and the older `Policy` file's
//! predicates and priorities mapped onto plugins.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::framework::{Plugin, Profile};
use crate::model::WhenUnsatisfiable;
use crate::plugins::{
    BalancedAllocation, ImageLocality, NodeAffinity, NodeName, NodePorts, NodeResourcesFit,
    NodeUnschedulable, ScoringStrategy, TaintToleration, shared,
};
use crate::topology::{Defaulting, InterPodAffinity, PodTopologySpread};

/// A configuration that cannot be used.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConfigError {
    #[error("couldn't decode the scheduler configuration: {0}")]
    Decode(String),
    #[error("{0}")]
    Invalid(String),
}

/// The extension points a configuration names.
const POINTS: &[&str] = &[
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
];

/// Known plugins and the points they implement (volume plugins are accepted and do
/// nothing: there is no volume scheduling yet).
fn points_of(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "PrioritySort" => &["queueSort"],
        "NodeUnschedulable" | "NodeName" => &["filter"],
        "NodePorts" => &["preFilter", "filter"],
        "TaintToleration" | "NodeAffinity" => &["filter", "preScore", "score"],
        "NodeResourcesFit" | "PodTopologySpread" | "InterPodAffinity" => {
            &["preFilter", "filter", "preScore", "score"]
        }
        "NodeResourcesBalancedAllocation" => &["preScore", "score"],
        "ImageLocality" => &["score"],
        "DefaultPreemption" => &["postFilter"],
        "DefaultBinder" => &["bind"],
        "VolumeBinding" | "VolumeRestrictions" | "VolumeZone" | "NodeVolumeLimits"
        | "EBSLimits" | "GCEPDLimits" | "AzureDiskLimits" | "SchedulingGates"
        | "DynamicResources" => &[],
        _ => return None,
    })
}

/// Upstream's default multiPoint plugins and score weights.
const DEFAULTS: &[(&str, i64)] = &[
    ("SchedulingGates", 0),
    ("PrioritySort", 0),
    ("NodeUnschedulable", 0),
    ("NodeName", 0),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", 0),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0),
    ("NodeVolumeLimits", 0),
    ("VolumeBinding", 0),
    ("VolumeZone", 0),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", 0),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
    ("DefaultBinder", 0),
];

/// Builds a plugin from its name and args.
fn instantiate(name: &str, args: Option<&Value>) -> Result<Option<Arc<dyn Plugin>>, ConfigError> {
    let null = Value::Null;
    let args = args.unwrap_or(&null);
    Ok(Some(match name {
        "NodeUnschedulable" => shared(NodeUnschedulable),
        "NodeName" => shared(NodeName),
        "TaintToleration" => shared(TaintToleration),
        "NodeAffinity" => shared(NodeAffinity),
        "NodePorts" => shared(NodePorts),
        "NodeResourcesFit" => shared(fit_from_args(args)?),
        "NodeResourcesBalancedAllocation" => {
            let mut p = BalancedAllocation::default();
            if let Some(list) = args["resources"].as_array() {
                p.resources = list
                    .iter()
                    .filter_map(|r| r["name"].as_str().map(str::to_string))
                    .collect();
            }
            shared(p)
        }
        "ImageLocality" => shared(ImageLocality),
        "PodTopologySpread" => shared(spread_from_args(args)?),
        "InterPodAffinity" => shared(InterPodAffinity),
        _ => return Ok(None),
    }))
}

fn fit_from_args(args: &Value) -> Result<NodeResourcesFit, ConfigError> {
    let mut p = NodeResourcesFit::default();
    let strategy = &args["scoringStrategy"];
    if let Some(list) = strategy["resources"].as_array() {
        p.resources = list
            .iter()
            .filter_map(|r| {
                Some((
                    r["name"].as_str()?.to_string(),
                    r["weight"].as_i64().unwrap_or(1),
                ))
            })
            .collect();
    }
    p.strategy = match strategy["type"].as_str().unwrap_or("LeastAllocated") {
        "LeastAllocated" => ScoringStrategy::LeastAllocated,
        "MostAllocated" => ScoringStrategy::MostAllocated,
        "RequestedToCapacityRatio" => {
            let shape: Vec<(i64, i64)> = strategy["requestedToCapacityRatio"]["shape"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|p| {
                    (
                        p["utilization"].as_i64().unwrap_or(0),
                        p["score"].as_i64().unwrap_or(0),
                    )
                })
                .collect();
            if shape.is_empty() {
                return Err(ConfigError::Invalid(
                    "scoringStrategy.requestedToCapacityRatio.shape: Required value: at least one point must be specified".into(),
                ));
            }
            ScoringStrategy::RequestedToCapacityRatio(shape)
        }
        other => {
            return Err(ConfigError::Invalid(format!(
                "scoringStrategy.type: Unsupported value: {other:?}: supported values: \"LeastAllocated\", \"MostAllocated\", \"RequestedToCapacityRatio\""
            )));
        }
    };
    p.ignored = args["ignoredResources"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v.as_str().map(str::to_string))
        .collect();
    Ok(p)
}

fn spread_from_args(args: &Value) -> Result<PodTopologySpread, ConfigError> {
    match args["defaultingType"].as_str().unwrap_or("System") {
        "System" => {
            if args["defaultConstraints"]
                .as_array()
                .is_some_and(|a| !a.is_empty())
            {
                return Err(ConfigError::Invalid(
                    "defaultConstraints: Invalid value: when .defaultingType is \"System\", .defaultConstraints must be empty".into(),
                ));
            }
            Ok(PodTopologySpread::default())
        }
        "List" => {
            let list = args["defaultConstraints"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| {
                    (
                        i32::try_from(c["maxSkew"].as_i64().unwrap_or(1)).unwrap_or(1),
                        c["topologyKey"].as_str().unwrap_or_default().to_string(),
                        if c["whenUnsatisfiable"] == "DoNotSchedule" {
                            WhenUnsatisfiable::DoNotSchedule
                        } else {
                            WhenUnsatisfiable::ScheduleAnyway
                        },
                    )
                })
                .collect();
            Ok(PodTopologySpread {
                defaulting: Defaulting::List(list),
            })
        }
        other => Err(ConfigError::Invalid(format!(
            "defaultingType: Unsupported value: {other:?}: supported values: \"List\", \"System\""
        ))),
    }
}

/// The enabled plugins per point, with weights, before instantiation.
#[derive(Clone, Debug, Default)]
struct PluginSet {
    points: BTreeMap<&'static str, Vec<(String, i64)>>,
}

impl PluginSet {
    fn defaults() -> PluginSet {
        let mut set = PluginSet::default();
        for p in POINTS {
            set.points.insert(p, Vec::new());
        }
        for (name, weight) in DEFAULTS {
            set.enable_multi(name, *weight);
        }
        set
    }

    fn enable_multi(&mut self, name: &str, weight: i64) {
        for p in points_of(name).unwrap_or(&[]) {
            self.enable(p, name, weight);
        }
    }

    fn enable(&mut self, point: &str, name: &str, weight: i64) {
        let Some((_, list)) = self.points.iter_mut().find(|(p, _)| **p == point) else {
            return;
        };
        match list.iter_mut().find(|(n, _)| n == name) {
            Some(e) => {
                if weight != 0 {
                    e.1 = weight;
                }
            }
            None => list.push((name.to_string(), weight)),
        }
    }

    fn disable(&mut self, point: &str, name: &str) {
        if let Some(list) = self.points.get_mut(point) {
            list.retain(|(n, _)| name != "*" && n != name);
        }
    }

    fn has(&self, point: &str, name: &str) -> bool {
        self.points
            .get(point)
            .is_some_and(|l| l.iter().any(|(n, _)| n == name))
    }
}

fn names(v: &Value, field: &str) -> Vec<(String, i64)> {
    v[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| {
            Some((
                p["name"].as_str()?.to_string(),
                p["weight"].as_i64().unwrap_or(0),
            ))
        })
        .collect()
}

fn check_known(name: &str) -> Result<(), ConfigError> {
    if name == "*" || points_of(name).is_some() {
        Ok(())
    } else {
        Err(ConfigError::Invalid(format!(
            "initializing profiles: {name:?} does not exist"
        )))
    }
}

fn apply_plugins(set: &mut PluginSet, plugins: &Value) -> Result<(), ConfigError> {
    let multi = &plugins["multiPoint"];
    for (name, _) in names(multi, "disabled") {
        check_known(&name)?;
        for p in POINTS {
            set.disable(p, &name);
        }
    }
    for (name, weight) in names(multi, "enabled") {
        check_known(&name)?;
        set.enable_multi(&name, weight);
    }
    for point in POINTS {
        let v = &plugins[*point];
        for (name, _) in names(v, "disabled") {
            check_known(&name)?;
            set.disable(point, &name);
        }
        for (name, weight) in names(v, "enabled") {
            check_known(&name)?;
            set.enable(point, &name, weight);
        }
    }
    Ok(())
}

fn build(
    scheduler_name: &str,
    set: &PluginSet,
    args: &BTreeMap<String, Value>,
    percentage: i32,
) -> Result<Profile, ConfigError> {
    let mut cache: BTreeMap<String, Arc<dyn Plugin>> = BTreeMap::new();
    let mut get = |name: &str| -> Result<Option<Arc<dyn Plugin>>, ConfigError> {
        if let Some(p) = cache.get(name) {
            return Ok(Some(Arc::clone(p)));
        }
        let p = instantiate(name, args.get(name))?;
        if let Some(p) = &p {
            cache.insert(name.to_string(), Arc::clone(p));
        }
        Ok(p)
    };
    let mut filter = Vec::new();
    for (n, _) in set.points.get("filter").into_iter().flatten() {
        if let Some(p) = get(n)? {
            filter.push(p);
        }
    }
    let mut score = Vec::new();
    for (n, w) in set.points.get("score").into_iter().flatten() {
        if let Some(p) = get(n)? {
            score.push((p, if *w == 0 { 1 } else { *w }));
        }
    }
    if set.points.get("bind").is_none_or(Vec::is_empty) {
        return Err(ConfigError::Invalid(format!(
            "profiles[{scheduler_name}].plugins.bind: Invalid value: at least one bind plugin is needed"
        )));
    }
    Ok(Profile {
        scheduler_name: scheduler_name.to_string(),
        pre_filter: filter.clone(),
        pre_score: score.iter().map(|(p, _)| Arc::clone(p)).collect(),
        filter,
        score,
        reserve: Vec::new(),
        permit: Vec::new(),
        pre_bind: Vec::new(),
        preemption: set.has("postFilter", "DefaultPreemption"),
        percentage_of_nodes_to_score: percentage,
    })
}

/// The default profile (`default-scheduler`, upstream's default plugins).
pub fn default_profile() -> Profile {
    match build(
        "default-scheduler",
        &PluginSet::defaults(),
        &BTreeMap::new(),
        0,
    ) {
        Ok(p) => p,
        Err(_) => unreachable_default(),
    }
}

fn unreachable_default() -> Profile {
    Profile {
        scheduler_name: "default-scheduler".into(),
        pre_filter: Vec::new(),
        filter: Vec::new(),
        pre_score: Vec::new(),
        score: Vec::new(),
        reserve: Vec::new(),
        permit: Vec::new(),
        pre_bind: Vec::new(),
        preemption: true,
        percentage_of_nodes_to_score: 0,
    }
}

/// Profiles from a `KubeSchedulerConfiguration` (YAML or JSON).
pub fn from_config(text: &str) -> Result<Vec<Profile>, ConfigError> {
    let v: Value = serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Decode(e.to_string()))?;
    let kind = v["kind"].as_str().unwrap_or_default();
    let api_version = v["apiVersion"].as_str().unwrap_or_default();
    if kind != "KubeSchedulerConfiguration" {
        return Err(ConfigError::Decode(format!(
            "no kind {kind:?} is registered for version {api_version:?}"
        )));
    }
    if !matches!(
        api_version,
        "kubescheduler.config.k8s.io/v1" | "kubescheduler.config.k8s.io/v1beta3"
    ) {
        return Err(ConfigError::Decode(format!(
            "no kind \"KubeSchedulerConfiguration\" is registered for version {api_version:?}"
        )));
    }
    let global_pct = percentage(&v["percentageOfNodesToScore"])?;
    let profiles = v["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() {
        return Ok(vec![with_percentage(default_profile(), global_pct)]);
    }
    let mut out: Vec<Profile> = Vec::new();
    for p in &profiles {
        let name = p["schedulerName"]
            .as_str()
            .unwrap_or("default-scheduler")
            .to_string();
        if out.iter().any(|o| o.scheduler_name == name) {
            return Err(ConfigError::Invalid(format!(
                "profiles[].schedulerName: Duplicate value: {name:?}"
            )));
        }
        let mut set = PluginSet::defaults();
        apply_plugins(&mut set, &p["plugins"])?;
        let mut args = BTreeMap::new();
        for c in p["pluginConfig"].as_array().into_iter().flatten() {
            let n = c["name"].as_str().unwrap_or_default();
            check_known(n)?;
            args.insert(n.to_string(), c["args"].clone());
        }
        let pct = match percentage(&p["percentageOfNodesToScore"])? {
            0 => global_pct,
            n => n,
        };
        out.push(build(&name, &set, &args, pct)?);
    }
    Ok(out)
}

fn percentage(v: &Value) -> Result<i32, ConfigError> {
    match v.as_i64() {
        None => Ok(0),
        Some(n) if (0..=100).contains(&n) => Ok(i32::try_from(n).unwrap_or(0)),
        Some(n) => Err(ConfigError::Invalid(format!(
            "percentageOfNodesToScore: Invalid value: {n}: not in valid range [0-100]"
        ))),
    }
}

fn with_percentage(mut p: Profile, pct: i32) -> Profile {
    p.percentage_of_nodes_to_score = pct;
    p
}

/// A legacy predicate's plugins.
fn predicate_plugins(name: &str) -> Option<&'static [&'static str]> {
    Some(match name {
        "PodFitsResources" => &["NodeResourcesFit"],
        "PodFitsHostPorts" => &["NodePorts"],
        "HostName" => &["NodeName"],
        "MatchNodeSelector" => &["NodeAffinity"],
        "PodToleratesNodeTaints" => &["TaintToleration"],
        "CheckNodeUnschedulable" => &["NodeUnschedulable"],
        "MatchInterPodAffinity" => &["InterPodAffinity"],
        "EvenPodsSpread" => &["PodTopologySpread"],
        "GeneralPredicates" => &["NodeResourcesFit", "NodeName", "NodePorts", "NodeAffinity"],
        "NoVolumeZoneConflict"
        | "NoDiskConflict"
        | "MaxCSIVolumeCountPred"
        | "CheckVolumeBinding"
        | "MaxEBSVolumeCount"
        | "MaxGCEPDVolumeCount"
        | "MaxAzureDiskVolumeCount"
        | "CheckNodeMemoryPressure"
        | "CheckNodeDiskPressure"
        | "CheckNodePIDPressure"
        | "CheckNodeCondition" => &[],
        _ => return None,
    })
}

/// A legacy priority's plugin.
fn priority_plugin(name: &str) -> Option<(&'static str, Option<&'static str>)> {
    Some(match name {
        "LeastRequestedPriority" => ("NodeResourcesFit", Some("LeastAllocated")),
        "MostRequestedPriority" => ("NodeResourcesFit", Some("MostAllocated")),
        "BalancedResourceAllocation" => ("NodeResourcesBalancedAllocation", None),
        "SelectorSpreadPriority" | "EvenPodsSpreadPriority" => ("PodTopologySpread", None),
        "InterPodAffinityPriority" => ("InterPodAffinity", None),
        "NodeAffinityPriority" => ("NodeAffinity", None),
        "TaintTolerationPriority" => ("TaintToleration", None),
        "ImageLocalityPriority" => ("ImageLocality", None),
        _ => return None,
    })
}

/// The default profile shaped by an older `Policy` file (`--policy-config-file`):
/// `predicates` choose the filters, `priorities` the scores and their weights.
pub fn from_policy(text: &str) -> Result<Profile, ConfigError> {
    let v: Value = serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Decode(e.to_string()))?;
    if v["kind"] != "Policy" {
        return Err(ConfigError::Decode(format!(
            "no kind {:?} is registered for a policy file",
            v["kind"].as_str().unwrap_or_default()
        )));
    }
    let mut set = PluginSet::defaults();
    let mut args = BTreeMap::new();
    if let Some(preds) = v["predicates"].as_array() {
        set.disable("filter", "*");
        for p in preds {
            let name = p["name"].as_str().unwrap_or_default();
            let plugins = predicate_plugins(name).ok_or_else(|| {
                ConfigError::Invalid(format!("predicate type not found for {name}"))
            })?;
            for pl in plugins {
                set.enable("filter", pl, 0);
            }
        }
    }
    if let Some(prios) = v["priorities"].as_array() {
        set.disable("score", "*");
        for p in prios {
            let name = p["name"].as_str().unwrap_or_default();
            let (plugin, strategy) = priority_plugin(name).ok_or_else(|| {
                ConfigError::Invalid(format!("priority type not found for {name}"))
            })?;
            let weight = p["weight"].as_i64().unwrap_or(1);
            set.enable("score", plugin, weight);
            if let Some(s) = strategy {
                args.insert(
                    plugin.to_string(),
                    serde_json::json!({"scoringStrategy": {"type": s}}),
                );
            }
        }
    }
    build("default-scheduler", &set, &args, 0)
}
