//! Profiles from configuration: upstream's defaults, `KubeSchedulerConfiguration`
//! (`kubescheduler.config.k8s.io/v1`: profiles, multiPoint and per-point enable/disable,
//! weights, plugin args, `percentageOfNodesToScore`), and the older `Policy` file's
//! predicates and priorities mapped onto plugins.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::framework::{Plugin, Profile};
use crate::model::WhenUnsatisfiable;
use crate::plugins::{
    BalancedAllocation, ImageLocality, NodeAffinity, NodeName, NodePorts, NodeResourcesFit,
    NodeUnschedulable, ScoringStrategy, TaintToleration, shared,
};
use crate::queue::Backoff;
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
    load_config(text).map(|c| c.profiles)
}

/// What a `KubeSchedulerConfiguration` configures.
#[derive(Debug)]
pub struct Loaded {
    pub profiles: Vec<Profile>,
    /// `podInitialBackoffSeconds`, `podMaxBackoffSeconds` (upstream's 1 s and 10 s unless
    /// set).
    pub backoff: Backoff,
    /// The `leaderElection` section as written: component-base's, which the component
    /// reads with its flags.
    pub leader_election: Option<Value>,
}

/// A `KubeSchedulerConfiguration`'s profiles, back-off and leader election, the first two
/// checked.
pub fn load_config(text: &str) -> Result<Loaded, ConfigError> {
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
    let backoff = backoff(&v)?;
    let leader_election = v.get("leaderElection").cloned();
    let loaded = |profiles| {
        Ok(Loaded {
            profiles,
            backoff,
            leader_election,
        })
    };
    let profiles = v["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() {
        return loaded(vec![with_percentage(default_profile(), global_pct)]);
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
    loaded(out)
}

/// The back-off of a configuration document, checked as upstream's validation does.
fn backoff(v: &Value) -> Result<Backoff, ConfigError> {
    let seconds = |field: &str, default: Duration| match &v[field] {
        Value::Null => Ok(i64::try_from(default.as_secs()).unwrap_or(i64::MAX)),
        n => n
            .as_i64()
            .ok_or_else(|| ConfigError::Decode(format!("{field}: expected an integer, got {n}"))),
    };
    let initial = seconds("podInitialBackoffSeconds", crate::queue::INITIAL_BACKOFF)?;
    let max = seconds("podMaxBackoffSeconds", crate::queue::MAX_BACKOFF)?;
    if initial <= 0 {
        return Err(ConfigError::Invalid(format!(
            "podInitialBackoffSeconds: Invalid value: {initial}: must be greater than 0"
        )));
    }
    if max < initial {
        return Err(ConfigError::Invalid(format!(
            "podMaxBackoffSeconds: Invalid value: {max}: must be greater than or equal to PodInitialBackoffSeconds"
        )));
    }
    let duration = |secs: i64| Duration::from_secs(u64::try_from(secs).unwrap_or(0));
    Ok(Backoff {
        initial: duration(initial),
        max: duration(max),
    })
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
    let doc = policy_as_config(text)?;
    from_config(&doc.to_string())?
        .pop()
        .ok_or_else(|| ConfigError::Invalid("a policy makes one profile".into()))
}

/// The `KubeSchedulerConfiguration` an older `Policy` file amounts to: its predicates as
/// the filters and its priorities as the scores (each point's defaults disabled), the
/// priorities' scoring strategies as plugin args; what [`from_policy`] builds a profile
/// from and `/configz` shows.
pub fn policy_as_config(text: &str) -> Result<Value, ConfigError> {
    let v: Value = serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Decode(e.to_string()))?;
    if v["kind"] != "Policy" {
        return Err(ConfigError::Decode(format!(
            "no kind {:?} is registered for a policy file",
            v["kind"].as_str().unwrap_or_default()
        )));
    }
    let plugin = |name: &str, weight: Option<i64>| match weight {
        Some(w) => serde_json::json!({"name": name, "weight": w}),
        None => serde_json::json!({"name": name}),
    };
    let mut plugins = serde_json::Map::new();
    let mut plugin_config = Vec::new();
    if let Some(preds) = v["predicates"].as_array() {
        let mut enabled: Vec<Value> = Vec::new();
        for p in preds {
            let name = p["name"].as_str().unwrap_or_default();
            let names = predicate_plugins(name).ok_or_else(|| {
                ConfigError::Invalid(format!("predicate type not found for {name}"))
            })?;
            for n in names {
                if !enabled.iter().any(|e| e["name"] == *n) {
                    enabled.push(plugin(n, None));
                }
            }
        }
        plugins.insert(
            "filter".into(),
            serde_json::json!({"disabled": [{"name": "*"}], "enabled": enabled}),
        );
    }
    if let Some(prios) = v["priorities"].as_array() {
        let mut enabled: Vec<Value> = Vec::new();
        for p in prios {
            let name = p["name"].as_str().unwrap_or_default();
            let (n, strategy) = priority_plugin(name).ok_or_else(|| {
                ConfigError::Invalid(format!("priority type not found for {name}"))
            })?;
            let weight = p["weight"].as_i64().unwrap_or(1);
            match enabled.iter_mut().find(|e| e["name"] == n) {
                Some(e) => e["weight"] = weight.into(),
                None => enabled.push(plugin(n, Some(weight))),
            }
            if let Some(s) = strategy {
                plugin_config.retain(|c: &Value| c["name"] != n);
                plugin_config.push(serde_json::json!({
                    "name": n,
                    "args": {"scoringStrategy": {"type": s}},
                }));
            }
        }
        plugins.insert(
            "score".into(),
            serde_json::json!({"disabled": [{"name": "*"}], "enabled": enabled}),
        );
    }
    Ok(serde_json::json!({
        "apiVersion": V1,
        "kind": "KubeSchedulerConfiguration",
        "profiles": [{
            "schedulerName": "default-scheduler",
            "plugins": plugins,
            "pluginConfig": plugin_config,
        }],
    }))
}

const V1: &str = "kubescheduler.config.k8s.io/v1";

/// What upstream's defaulting makes of a `KubeSchedulerConfiguration` (`None`: no file),
/// as its `/configz` shows it: the file's settings, each profile's plugins with the
/// default multiPoint set merged in (a plugin the profile re-enables replaced in place,
/// new ones appended, disabled ones dropped), and every enabled plugin's args defaulted.
/// The connection and leader-election sections are the caller's (they come from flags).
pub fn effective_config(text: Option<&str>) -> Result<Value, ConfigError> {
    let (doc, backoff): (Value, Backoff) = match text {
        Some(t) => {
            // Checked as the scheduler reads it, so a file that would not start
            // never renders.
            let backoff = load_config(t)?.backoff;
            let doc = serde_yaml_ng::from_str(t).map_err(|e| ConfigError::Decode(e.to_string()))?;
            (doc, backoff)
        }
        None => (Value::Null, Backoff::default()),
    };
    let mut profiles: Vec<Value> = doc["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() {
        profiles.push(Value::Null);
    }
    let number = |field: &str, default: i64| doc[field].as_i64().unwrap_or(default);
    Ok(serde_json::json!({
        "apiVersion": V1,
        "kind": "KubeSchedulerConfiguration",
        "parallelism": number("parallelism", 16),
        "percentageOfNodesToScore": number("percentageOfNodesToScore", 0),
        "podInitialBackoffSeconds": backoff.initial.as_secs(),
        "podMaxBackoffSeconds": backoff.max.as_secs(),
        "enableProfiling": false,
        "enableContentionProfiling": false,
        "profiles": profiles.iter().map(render_profile).collect::<Vec<_>>(),
    }))
}

fn render_profile(p: &Value) -> Value {
    let mut out = serde_json::Map::new();
    out.insert(
        "schedulerName".into(),
        p["schedulerName"]
            .as_str()
            .unwrap_or("default-scheduler")
            .into(),
    );
    if let Some(n) = p["percentageOfNodesToScore"].as_i64() {
        out.insert("percentageOfNodesToScore".into(), n.into());
    }
    let custom = &p["plugins"];
    let mut plugins = serde_json::Map::new();
    let multi = merged_multi_point(&custom["multiPoint"]);
    let mut enabled: Vec<String> = multi.iter().map(|(n, _)| n.clone()).collect();
    let mut multi_set = serde_json::Map::new();
    multi_set.insert("enabled".into(), rendered_plugins(&multi));
    let multi_disabled = names(&custom["multiPoint"], "disabled");
    if !multi_disabled.is_empty() {
        multi_set.insert("disabled".into(), unweighted(&multi_disabled));
    }
    plugins.insert("multiPoint".into(), Value::Object(multi_set));
    // PreEnqueue (SchedulingGates') comes first, as in upstream's `Plugins`.
    for point in std::iter::once(&"preEnqueue").chain(POINTS) {
        let mut set = serde_json::Map::new();
        let on = weighted(&custom[*point], "enabled");
        let off = names(&custom[*point], "disabled");
        enabled.extend(on.iter().map(|(n, _)| n.clone()));
        if !on.is_empty() {
            set.insert("enabled".into(), rendered_plugins(&on));
        }
        if !off.is_empty() {
            set.insert("disabled".into(), unweighted(&off));
        }
        plugins.insert((*point).into(), Value::Object(set));
    }
    out.insert("plugins".into(), Value::Object(plugins));
    // The profile's own args first, defaulted; then, by name, the defaults of every
    // enabled plugin that takes args and has none.
    let mut config: Vec<Value> = Vec::new();
    for c in p["pluginConfig"].as_array().into_iter().flatten() {
        let name = c["name"].as_str().unwrap_or_default();
        let args = match default_args(name) {
            Some(d) => defaulted(name, &c["args"], d),
            None => c["args"].clone(),
        };
        config.push(serde_json::json!({"name": name, "args": args}));
    }
    enabled.sort();
    enabled.dedup();
    for name in enabled {
        if config.iter().any(|c| c["name"] == name.as_str()) {
            continue;
        }
        if let Some(d) = default_args(&name) {
            config
                .push(serde_json::json!({"name": name, "args": defaulted(&name, &Value::Null, d)}));
        }
    }
    out.insert("pluginConfig".into(), Value::Array(config));
    Value::Object(out)
}

/// Upstream's default multiPoint set merged with a profile's (`mergePluginSet`).
fn merged_multi_point(custom: &Value) -> Vec<(String, Option<i64>)> {
    let disabled = names(custom, "disabled");
    let wanted = weighted(custom, "enabled");
    let mut used = vec![false; wanted.len()];
    let mut out = Vec::new();
    if !disabled.iter().any(|(n, _)| n == "*") {
        for (name, weight) in DEFAULTS {
            if disabled.iter().any(|(n, _)| n == name) {
                continue;
            }
            match wanted.iter().position(|(n, _)| n == name) {
                Some(i) => {
                    used[i] = true;
                    out.push(wanted[i].clone());
                }
                None => out.push(((*name).to_string(), Some(*weight))),
            }
        }
    }
    out.extend(
        wanted
            .iter()
            .zip(used)
            .filter(|(_, u)| !u)
            .map(|(p, _)| p.clone()),
    );
    out
}

/// A plugin set's list, with the weights given (`None`: unset).
fn weighted(v: &Value, field: &str) -> Vec<(String, Option<i64>)> {
    v[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|p| Some((p["name"].as_str()?.to_string(), p["weight"].as_i64())))
        .collect()
}

fn rendered_plugins(list: &[(String, Option<i64>)]) -> Value {
    list.iter()
        .map(|(name, weight)| serde_json::json!({"name": name, "weight": weight.unwrap_or(0)}))
        .collect()
}

fn unweighted(list: &[(String, i64)]) -> Value {
    list.iter()
        .map(|(name, _)| serde_json::json!({"name": name}))
        .collect()
}

/// The v1 default args of a plugin that takes args.
fn default_args(name: &str) -> Option<Value> {
    let cpu_memory =
        serde_json::json!([{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]);
    Some(match name {
        "DefaultPreemption" => {
            serde_json::json!({"minCandidateNodesPercentage": 10, "minCandidateNodesAbsolute": 100})
        }
        "InterPodAffinity" => {
            serde_json::json!({"hardPodAffinityWeight": 1, "ignorePreferredTermsOfExistingPods": false})
        }
        "NodeAffinity" => serde_json::json!({}),
        "NodeResourcesBalancedAllocation" => serde_json::json!({"resources": cpu_memory}),
        "NodeResourcesFit" => {
            serde_json::json!({"scoringStrategy": {"type": "LeastAllocated", "resources": cpu_memory}})
        }
        "PodTopologySpread" => serde_json::json!({"defaultingType": "System"}),
        "VolumeBinding" => serde_json::json!({"bindTimeoutSeconds": 600}),
        _ => return None,
    })
}

/// `args` with `defaults` filled in where unset (resource lists as upstream's defaulting:
/// empty takes the default list, a weight of 0 becomes 1), typed as `<Plugin>Args`.
fn defaulted(name: &str, args: &Value, defaults: Value) -> Value {
    let mut out = args.as_object().cloned().unwrap_or_default();
    let Value::Object(defaults) = defaults else {
        return Value::Object(out);
    };
    for (k, v) in defaults {
        let slot = out.entry(k.clone()).or_insert(Value::Null);
        if slot.is_null() {
            *slot = v;
        } else if k == "scoringStrategy"
            && let (Some(s), Value::Object(d)) = (slot.as_object_mut(), v)
        {
            for (dk, dv) in d {
                let empty = s
                    .get(&dk)
                    .is_none_or(|x| x.is_null() || x.as_array().is_some_and(Vec::is_empty));
                if empty {
                    s.insert(dk, dv);
                }
            }
        }
    }
    let resources = match out.get_mut("scoringStrategy") {
        Some(s) => s.get_mut("resources"),
        None => out.get_mut("resources"),
    };
    for r in resources
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
    {
        if r["weight"].as_i64().unwrap_or(0) == 0 {
            r["weight"] = 1.into();
        }
    }
    out.insert("apiVersion".into(), V1.into());
    out.insert("kind".into(), format!("{name}Args").into());
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn plugin_names(list: &Value) -> Vec<(&str, i64)> {
        list.as_array()
            .unwrap()
            .iter()
            .map(|p| {
                (
                    p["name"].as_str().unwrap(),
                    p["weight"].as_i64().unwrap_or(-1),
                )
            })
            .collect()
    }

    #[test]
    fn without_a_file_the_effective_configuration_is_upstreams_defaults() {
        let c = effective_config(None).unwrap();
        assert_eq!(c["apiVersion"], "kubescheduler.config.k8s.io/v1");
        assert_eq!(c["kind"], "KubeSchedulerConfiguration");
        assert_eq!(c["podInitialBackoffSeconds"], 1);
        assert_eq!(c["podMaxBackoffSeconds"], 10);
        let profiles = c["profiles"].as_array().unwrap();
        assert_eq!(profiles.len(), 1);
        let p = &profiles[0];
        assert_eq!(p["schedulerName"], "default-scheduler");
        assert_eq!(
            plugin_names(&p["plugins"]["multiPoint"]["enabled"]),
            DEFAULTS.to_vec()
        );
        assert_eq!(p["plugins"]["filter"], serde_json::json!({}));
        assert_eq!(p["plugins"]["preEnqueue"], serde_json::json!({}));
        let configs: Vec<&str> = p["pluginConfig"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            configs,
            [
                "DefaultPreemption",
                "InterPodAffinity",
                "NodeAffinity",
                "NodeResourcesBalancedAllocation",
                "NodeResourcesFit",
                "PodTopologySpread",
                "VolumeBinding"
            ]
        );
        assert_eq!(
            p["pluginConfig"][4]["args"],
            serde_json::json!({
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "NodeResourcesFitArgs",
                "scoringStrategy": {"type": "LeastAllocated", "resources": [
                    {"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]},
            })
        );
    }

    #[test]
    fn a_profiles_plugins_and_args_are_merged_with_the_defaults() {
        let c = effective_config(Some(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
             percentageOfNodesToScore: 30\npodInitialBackoffSeconds: 2\nprofiles:\n- schedulerName: default-scheduler\n\
             - schedulerName: bin-packer\n  percentageOfNodesToScore: 50\n  plugins:\n    \
             multiPoint:\n      enabled:\n      - {name: TaintToleration, weight: 7}\n      \
             disabled:\n      - {name: ImageLocality}\n      - {name: InterPodAffinity}\n    \
             score:\n      disabled:\n      - {name: NodeResourcesBalancedAllocation}\n  \
             pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: MostAllocated}}\n",
        ))
        .unwrap();
        assert_eq!(c["percentageOfNodesToScore"], 30);
        assert_eq!(c["podInitialBackoffSeconds"], 2);
        assert_eq!(c["podMaxBackoffSeconds"], 10);
        let p = &c["profiles"][1];
        assert_eq!(p["schedulerName"], "bin-packer");
        assert_eq!(p["percentageOfNodesToScore"], 50);
        let multi = plugin_names(&p["plugins"]["multiPoint"]["enabled"]);
        // Replaced in place, the disabled ones gone.
        assert_eq!(multi[4], ("TaintToleration", 7));
        assert!(
            !multi
                .iter()
                .any(|(n, _)| *n == "ImageLocality" || *n == "InterPodAffinity")
        );
        assert_eq!(
            p["plugins"]["score"],
            serde_json::json!({"disabled": [{"name": "NodeResourcesBalancedAllocation"}]})
        );
        let args = &p["pluginConfig"][0];
        assert_eq!(args["name"], "NodeResourcesFit");
        assert_eq!(args["args"]["scoringStrategy"]["type"], "MostAllocated");
        assert_eq!(
            args["args"]["scoringStrategy"]["resources"][1],
            serde_json::json!({"name": "memory", "weight": 1})
        );
        assert!(
            !p["pluginConfig"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "InterPodAffinity"),
            "a disabled plugin gets no default args"
        );
        // A file the scheduler would refuse renders nothing.
        for (bad, message) in [
            (
                "podInitialBackoffSeconds: 0",
                "podInitialBackoffSeconds: Invalid value: 0: must be greater than 0",
            ),
            (
                "podInitialBackoffSeconds: 5\npodMaxBackoffSeconds: 2",
                "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
            ),
        ] {
            let text = format!(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n{bad}\n"
            );
            assert_eq!(
                from_config(&text).err(),
                Some(ConfigError::Invalid(message.into()))
            );
            assert!(effective_config(Some(&text)).is_err());
        }
        assert!(
            effective_config(Some(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
                 percentageOfNodesToScore: 300\n"
            ))
            .is_err()
        );
    }

    #[test]
    fn a_policy_renders_as_the_configuration_it_amounts_to() {
        let policy = r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "PodFitsResources"}, {"name": "GeneralPredicates"}],
            "priorities": [{"name": "MostRequestedPriority", "weight": 3}]}"#;
        let doc = policy_as_config(policy).unwrap();
        let p = &doc["profiles"][0];
        assert_eq!(
            p["plugins"]["filter"]["enabled"],
            serde_json::json!([{"name": "NodeResourcesFit"}, {"name": "NodeName"},
                {"name": "NodePorts"}, {"name": "NodeAffinity"}])
        );
        assert_eq!(
            p["plugins"]["score"],
            serde_json::json!({"disabled": [{"name": "*"}],
                "enabled": [{"name": "NodeResourcesFit", "weight": 3}]})
        );
        let rendered = effective_config(Some(&doc.to_string())).unwrap();
        assert_eq!(
            rendered["profiles"][0]["pluginConfig"][0]["args"]["scoringStrategy"]["type"],
            "MostAllocated"
        );
        assert!(matches!(
            policy_as_config(r#"{"kind": "Policy", "priorities": [{"name": "Nope"}]}"#),
            Err(ConfigError::Invalid(m)) if m == "priority type not found for Nope"
        ));
    }
}
