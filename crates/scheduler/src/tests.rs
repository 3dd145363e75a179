#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use serde_json::{Value, json};

use crate::cache::Cache;
use crate::config::{default_profile, from_config, from_policy};
use crate::framework::{Algorithm, CycleState, Plugin, fit_error, num_feasible_nodes_to_find};
use crate::model::{NodeInfo, PodInfo};
use crate::plugins::{NodeAffinity, NodeResourcesFit, TaintToleration};
use crate::preemption::preempt;

fn node_json(name: &str, zone: &str, cpu: &str, pods: i64) -> Value {
    json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
            "topology.kubernetes.io/zone": zone}},
        "status": {"allocatable": {"cpu": cpu, "memory": "8Gi", "pods": pods.to_string()}}})
}

fn node(v: Value) -> Node {
    serde_json::from_value(v).unwrap()
}

fn pod_json(name: &str, labels: Value, cpu: &str) -> Value {
    json!({"metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
            "labels": labels},
        "spec": {"containers": [{"name": "c", "image": "web",
            "resources": {"requests": {"cpu": cpu, "memory": "100Mi"}}}]}})
}

fn pod(v: Value) -> PodInfo {
    PodInfo::from_pod(&serde_json::from_value::<Pod>(v).unwrap())
}

fn cluster(n: usize, zones: usize) -> Cache {
    let mut c = Cache::new();
    for i in 0..n {
        c.set_node(&node(node_json(
            &format!("n{i}"),
            &format!("z{}", i % zones.max(1)),
            "4",
            110,
        )));
    }
    c
}

fn bind(c: &mut Cache, mut p: PodInfo, node: &str) {
    p.node_name = node.into();
    c.set_pod(p);
}

fn info(c: &Cache, name: &str) -> NodeInfo {
    c.node(name).unwrap().clone()
}

#[test]
fn requests_sum_containers_and_take_the_largest_init_container() {
    let p = pod(json!({"metadata": {"name": "p"}, "spec": {
        "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "2"}}}],
        "containers": [{"name": "a", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}},
                       {"name": "b", "resources": {"requests": {"cpu": "700m"}}}],
        "overhead": {"cpu": "100m"},
    }}));
    assert_eq!(p.requests.milli_cpu, 2100);
    assert_eq!(p.requests.memory, 1 << 30);
    let empty = pod(json!({"metadata": {"name": "e"}, "spec": {"containers": [{"name": "a"}]}}));
    assert_eq!(empty.non_zero_cpu, 100);
    assert_eq!(empty.non_zero_memory, 200 * 1024 * 1024);
}

#[test]
fn resources_fit_with_upstreams_reasons() {
    let mut c = Cache::new();
    c.set_node(&node(node_json("n1", "a", "2", 2)));
    let fit = NodeResourcesFit::default();
    let st = CycleState::default();
    let one = pod(pod_json("one", json!({}), "1"));
    assert!(fit.filter(&one, &info(&c, "n1"), &c, &st).is_none());
    bind(&mut c, pod(pod_json("busy", json!({}), "1500m")), "n1");
    let f = fit.filter(&one, &info(&c, "n1"), &c, &st).unwrap();
    assert_eq!(f.reasons, ["Insufficient cpu"]);
    bind(&mut c, pod(pod_json("busy2", json!({}), "10m")), "n1");
    let small = pod(pod_json("small", json!({}), "600m"));
    let f = fit.filter(&small, &info(&c, "n1"), &c, &st).unwrap();
    assert_eq!(f.reasons, ["Too many pods", "Insufficient cpu"]);
}

#[test]
fn taints_and_node_affinity() {
    let mut c = Cache::new();
    let mut n = node_json("n1", "a", "2", 10);
    n["spec"] = json!({"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]});
    c.set_node(&node(n));
    let st = CycleState::default();
    let plain = pod(pod_json("p", json!({}), "1"));
    let f = TaintToleration
        .filter(&plain, &info(&c, "n1"), &c, &st)
        .unwrap();
    assert_eq!(f.reasons, ["node(s) had untolerated taint {dedicated: db}"]);
    assert!(f.unresolvable);
    let mut tol = pod_json("t", json!({}), "1");
    tol["spec"]["tolerations"] = json!([{"key": "dedicated", "operator": "Exists"}]);
    assert!(
        TaintToleration
            .filter(&pod(tol), &info(&c, "n1"), &c, &st)
            .is_none()
    );
    let mut sel = pod_json("s", json!({}), "1");
    sel["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
        {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["b"]}]}]}}});
    let f = NodeAffinity
        .filter(&pod(sel), &info(&c, "n1"), &c, &st)
        .unwrap();
    assert_eq!(
        f.reasons,
        ["node(s) didn't match Pod's node affinity/selector"]
    );
}

#[test]
fn fit_error_reads_as_upstreams() {
    let r = |s: &str| vec![s.to_string()];
    assert_eq!(
        fit_error(
            3,
            &[
                r("Insufficient cpu"),
                r("node(s) were unschedulable"),
                r("Insufficient cpu")
            ]
        ),
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 Insufficient cpu."
    );
}

fn spread_replicaset(mut c: Cache) -> Vec<i32> {
    let sel = api::selector::LabelSelector::from_set([("app", "web"), ("pod-template-hash", "h")]);
    c.owner_selectors
        .controllers
        .insert(("ReplicaSet".into(), "default".into(), "web-h".into()), sel);
    let profile = default_profile();
    let mut algo = Algorithm::new(7);
    let mut placed = BTreeMap::new();
    for i in 0..6 {
        let mut p = pod_json(
            &format!("web-{i}"),
            json!({"app": "web", "pod-template-hash": "h"}),
            "100m",
        );
        p["metadata"]["ownerReferences"] = json!([{"apiVersion": "apps/v1", "kind": "ReplicaSet",
            "name": "web-h", "uid": "rs", "controller": true}]);
        let p = pod(p);
        let placement = algo.schedule(&profile, &p, &mut c).unwrap();
        *placed.entry(placement.node.clone()).or_insert(0) += 1;
        c.assume(
            Arc::new(PodInfo {
                node_name: placement.node.clone(),
                ..p
            }),
            &placement.node,
        );
    }
    placed.values().copied().collect()
}

#[test]
fn a_replicasets_pods_spread_one_per_node_by_default() {
    assert_eq!(spread_replicaset(cluster(3, 1)), [2, 2, 2]);
    // Nodes without a zone label (the zone default constraint does not apply).
    let mut c = Cache::new();
    for i in 0..3 {
        let mut n = node_json(&format!("n{i}"), "z", "32", 110);
        n["metadata"]["labels"] = json!({"kubernetes.io/hostname": format!("n{i}")});
        n["status"]["allocatable"]["memory"] = json!("256Gi");
        c.set_node(&node(n));
    }
    assert_eq!(spread_replicaset(c), [2, 2, 2]);
}

#[test]
fn hard_zone_spread_keeps_the_skew() {
    let mut c = cluster(4, 2);
    let profile = default_profile();
    let mut algo = Algorithm::new(1);
    let constrained = |name: &str| {
        let mut p = pod_json(name, json!({"app": "db"}), "100m");
        p["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1,
            "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "db"}}}]);
        pod(p)
    };
    // Two pods already in zone z0.
    bind(&mut c, constrained("a"), "n0");
    bind(&mut c, constrained("b"), "n2");
    let p = constrained("c");
    let placement = algo.schedule(&profile, &p, &mut c).unwrap();
    let zone = &c.node(&placement.node).unwrap().labels["topology.kubernetes.io/zone"];
    assert_eq!(zone, "z1");
    bind(&mut c, p, &placement.node);
    // z0 has 2, z1 has 1: with z1's nodes cordoned, z0 would make the skew 2.
    for n in ["n1", "n3"] {
        let mut v = node_json(n, "z1", "4", 110);
        v["spec"] = json!({"unschedulable": true});
        c.set_node(&node(v));
    }
    let diag = algo
        .schedule(&profile, &constrained("d"), &mut c)
        .unwrap_err();
    assert_eq!(
        diag.message(),
        "0/4 nodes are available: 2 node(s) didn't match pod topology spread constraints, 2 node(s) were unschedulable."
    );
}

#[test]
fn required_anti_affinity_places_one_per_node_then_fails() {
    let mut c = cluster(3, 1);
    let profile = default_profile();
    let mut algo = Algorithm::new(3);
    let anti = |name: &str| {
        let mut p = pod_json(name, json!({"app": "cache"}), "100m");
        p["spec"]["affinity"] = json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "cache"}}, "topologyKey": "kubernetes.io/hostname"}]}});
        pod(p)
    };
    let mut nodes = Vec::new();
    for i in 0..3 {
        let p = anti(&format!("c{i}"));
        let placement = algo.schedule(&profile, &p, &mut c).unwrap();
        nodes.push(placement.node.clone());
        bind(&mut c, p, &placement.node);
    }
    nodes.sort();
    assert_eq!(nodes, ["n0", "n1", "n2"]);
    let diag = algo.schedule(&profile, &anti("c3"), &mut c).unwrap_err();
    assert_eq!(
        diag.message(),
        "0/3 nodes are available: 3 node(s) didn't satisfy existing pods anti-affinity rules."
    );
    // A pod without terms is kept off by the bound pods' anti-affinity only if it matches.
    let other = pod(pod_json("x", json!({"app": "cache"}), "100m"));
    let diag = algo.schedule(&profile, &other, &mut c).unwrap_err();
    assert!(
        diag.message()
            .contains("3 node(s) didn't satisfy existing pods anti-affinity rules")
    );
}

#[test]
fn required_affinity_follows_the_matching_pod() {
    let mut c = cluster(3, 3);
    let profile = default_profile();
    let mut algo = Algorithm::new(5);
    bind(
        &mut c,
        pod(pod_json("db", json!({"app": "db"}), "100m")),
        "n2",
    );
    for i in 0..3 {
        let mut p = pod_json(&format!("web{i}"), json!({"app": "web"}), "100m");
        p["spec"]["affinity"] = json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "topology.kubernetes.io/zone"}]}});
        let placement = algo.schedule(&profile, &pod(p), &mut c).unwrap();
        assert_eq!(placement.node, "n2");
    }
}

#[test]
fn counts_follow_nodes_relabelled_removed_and_keys_added_later() {
    let mut c = cluster(4, 2);
    for (i, n) in ["n0", "n1", "n2", "n3", "n3"].iter().enumerate() {
        bind(
            &mut c,
            pod(pod_json(&format!("p{i}"), json!({"app": "a"}), "10m")),
            n,
        );
    }
    let sel = api::selector::LabelSelector::from_set([("app", "a")]);
    let ns = crate::model::Namespaces::List(vec!["default".into()]);
    let zone = c.counter(&ns, &sel, "topology.kubernetes.io/zone");
    assert_eq!(
        c.counts_by_domain(zone),
        BTreeMap::from([("z0".into(), 2), ("z1".into(), 3)])
    );
    assert_eq!(c.count_in(zone, "z1"), 3);
    assert_eq!(c.count_in(zone, "nowhere"), 0);
    // A key counted only after the nodes exist: every node gets its domain.
    let host = c.counter(&ns, &sel, "kubernetes.io/hostname");
    let on = |c: &Cache, id: usize, n: &str| c.count_on(id, c.node(n).unwrap());
    assert_eq!(on(&c, host, "n3"), Some(2));
    assert_eq!(on(&c, zone, "n3"), Some(3));
    // n3 moves to a new zone z7: the counters are recounted there.
    c.set_node(&node(node_json("n3", "z7", "4", 110)));
    let zone = c.counter(&ns, &sel, "topology.kubernetes.io/zone");
    let host = c.counter(&ns, &sel, "kubernetes.io/hostname");
    assert_eq!(
        c.counts_by_domain(zone),
        BTreeMap::from([("z0".into(), 2), ("z1".into(), 1), ("z7".into(), 2)])
    );
    assert_eq!(on(&c, zone, "n3"), Some(2));
    assert_eq!(on(&c, zone, "n1"), Some(1));
    // A node without the zone label has no count for it (not a count of 0).
    let mut bare = node_json("n4", "z0", "4", 110);
    bare["metadata"]["labels"] = json!({"kubernetes.io/hostname": "n4"});
    c.set_node(&node(bare));
    assert_eq!(on(&c, zone, "n4"), None);
    assert_eq!(on(&c, host, "n4"), Some(0));
    // Removing a node with pods keeps the others' domains right (slots move).
    c.remove_node("n0");
    let zone = c.counter(&ns, &sel, "topology.kubernetes.io/zone");
    let host = c.counter(&ns, &sel, "kubernetes.io/hostname");
    assert_eq!(on(&c, zone, "n4"), None);
    assert_eq!(on(&c, host, "n4"), Some(0));
    assert_eq!(on(&c, zone, "n2"), Some(1));
    assert_eq!(on(&c, host, "n3"), Some(2));
    assert_eq!(c.node_count(), 4);
}

#[test]
fn counters_stay_equal_to_a_recount() {
    let mut c = cluster(5, 2);
    let sel = api::selector::LabelSelector::from_set([("app", "a")]);
    let ns = crate::model::Namespaces::List(vec!["default".into()]);
    let id = c.counter(&ns, &sel, "topology.kubernetes.io/zone");
    let mut live: Vec<(String, String)> = Vec::new();
    let mut seed = 42u64;
    for step in 0..400 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let r = (seed >> 33) as usize;
        if r.is_multiple_of(3) && !live.is_empty() {
            let (uid, _) = live.swap_remove(r % live.len());
            c.remove_pod(&uid);
        } else {
            let app = if r.is_multiple_of(2) { "a" } else { "b" };
            let name = format!("p{step}");
            let node = format!("n{}", r % 5);
            let p = pod(pod_json(&name, json!({"app": app}), "10m"));
            live.push((p.uid.clone(), node.clone()));
            bind(&mut c, p, &node);
        }
    }
    let mut expect: BTreeMap<String, u32> = BTreeMap::new();
    for (p, node) in c.pods() {
        if p.labels.get("app") == Some("a") {
            let zone = c.node(node).unwrap().labels["topology.kubernetes.io/zone"].clone();
            *expect.entry(zone).or_default() += 1;
        }
    }
    assert_eq!(c.counts_by_domain(id), expect);
}

#[test]
fn counters_built_late_count_the_cached_pods_and_differ_by_selector_value() {
    let mut c = cluster(3, 1);
    let p0 = pod(pod_json("p0", json!({"app": "a"}), "10m"));
    let uid0 = p0.uid.clone();
    bind(&mut c, p0, "n0");
    bind(
        &mut c,
        pod(pod_json("p1", json!({"app": "b"}), "10m")),
        "n1",
    );
    c.remove_pod(&uid0);
    let ns = crate::model::Namespaces::List(vec!["default".into()]);
    let zone = "topology.kubernetes.io/zone";
    let a = api::selector::LabelSelector::from_set([("app", "a")]);
    let b = api::selector::LabelSelector::from_set([("app", "b")]);
    // No cached pod carries app=a any more: its counter starts empty, then follows.
    let ca = c.counter(&ns, &a, zone);
    assert_eq!(c.counter_at(ca).total, 0);
    let cb = c.counter(&ns, &b, zone);
    assert_eq!(c.counter_at(cb).total, 1);
    // Everything and nothing print alike but are different counters.
    let all = c.counter(&ns, &api::selector::LabelSelector::everything(), zone);
    let none = c.counter(&ns, &api::selector::LabelSelector::nothing(), zone);
    assert_ne!(all, none);
    assert_eq!((c.counter_at(all).total, c.counter_at(none).total), (1, 0));
    bind(
        &mut c,
        pod(pod_json("p2", json!({"app": "a"}), "10m")),
        "n2",
    );
    assert_eq!(c.counter(&ns, &a, zone), ca);
    assert_eq!(c.counter_at(ca).total, 1);
    assert_eq!(c.counter_at(all).total, 2);
    let other_ns = crate::model::Namespaces::List(vec!["other".into()]);
    assert_ne!(c.counter(&other_ns, &a, zone), ca);
    assert_ne!(c.counter(&ns, &a, "kubernetes.io/hostname"), ca);
}

#[test]
fn percentage_of_nodes_to_score_as_upstream() {
    assert_eq!(num_feasible_nodes_to_find(0, 50), 50);
    assert_eq!(num_feasible_nodes_to_find(0, 1000), 420);
    assert_eq!(num_feasible_nodes_to_find(0, 5000), 500);
    assert_eq!(num_feasible_nodes_to_find(0, 10000), 500);
    assert_eq!(num_feasible_nodes_to_find(10, 500), 100);
    assert_eq!(num_feasible_nodes_to_find(100, 5000), 5000);
    let mut c = cluster(1000, 1);
    let mut algo = Algorithm::new(9);
    let placement = algo
        .schedule(
            &default_profile(),
            &pod(pod_json("p", json!({}), "1")),
            &mut c,
        )
        .unwrap();
    assert_eq!(placement.feasible, 420);
}

#[test]
fn preemption_evicts_the_fewest_lowest_priority_pods() {
    let mut c = Cache::new();
    c.set_node(&node(node_json("n1", "a", "2", 10)));
    c.set_node(&node(node_json("n2", "a", "2", 10)));
    let with_priority = |name: &str, cpu: &str, prio: i32| {
        let mut p = pod_json(name, json!({}), cpu);
        p["spec"]["priority"] = json!(prio);
        pod(p)
    };
    bind(&mut c, with_priority("low1", "1", 1), "n1");
    bind(&mut c, with_priority("low2", "1", 1), "n1");
    bind(&mut c, with_priority("mid", "2", 5), "n2");
    let profile = default_profile();
    let mut algo = Algorithm::new(1);
    let high = with_priority("high", "1", 10);
    let diag = algo.schedule(&profile, &high, &mut c).unwrap_err();
    assert_eq!(
        diag.message(),
        "0/2 nodes are available: 2 Insufficient cpu."
    );
    let p = preempt(&profile, &high, &c, &diag).unwrap();
    assert_eq!(p.node, "n1");
    assert_eq!(p.victims.len(), 1);
    let mut never = with_priority("never", "1", 10);
    never.preempt_never = true;
    assert_eq!(
        preempt(&profile, &never, &c, &diag).unwrap_err(),
        "preemption: not eligible due to preemptionPolicy=Never."
    );
    let lowest = with_priority("lowest", "1", 0);
    let diag = algo.schedule(&profile, &lowest, &mut c).unwrap_err();
    let mut d = diag.clone();
    d.post_filter = Some(preempt(&profile, &lowest, &c, &diag).unwrap_err());
    assert_eq!(
        d.message(),
        "0/2 nodes are available: 2 Insufficient cpu. preemption: 0/2 nodes are available: 2 No preemption victims found for incoming pod."
    );
}

#[test]
fn preemption_spares_pods_protected_by_a_disruption_budget() {
    let mut c = Cache::new();
    c.set_node(&node(node_json("n1", "a", "1", 10)));
    c.set_node(&node(node_json("n2", "a", "1", 10)));
    let low = |name: &str, app: &str| {
        let mut p = pod_json(name, json!({"app": app}), "1");
        p["spec"]["priority"] = json!(1);
        pod(p)
    };
    // Same priorities everywhere; n1's pod is protected by a budget with no disruption
    // left, so n2 is chosen.
    bind(&mut c, low("guarded", "db"), "n1");
    bind(&mut c, low("free", "web"), "n2");
    let pdb: k8s_openapi::api::policy::v1::PodDisruptionBudget = serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": "default", "uid": "pdb-1"},
        "spec": {"selector": {"matchLabels": {"app": "db"}}, "minAvailable": 1},
        "status": {"disruptionsAllowed": 0, "currentHealthy": 1, "desiredHealthy": 1,
            "expectedPods": 1}}))
    .unwrap();
    c.set_pdb("default/db".into(), crate::cache::Pdb::from_api(&pdb));
    let mut high = pod_json("high", json!({}), "1");
    high["spec"]["priority"] = json!(10);
    let high = pod(high);
    let profile = default_profile();
    let mut algo = Algorithm::new(1);
    for _ in 0..4 {
        let diag = algo.schedule(&profile, &high, &mut c).unwrap_err();
        let p = preempt(&profile, &high, &c, &diag).unwrap();
        assert_eq!(p.node, "n2");
        assert_eq!(p.victims[0].name, "free");
    }
    // With a disruption allowed, either node will do (no violation anywhere).
    let mut pdb = pdb;
    pdb.status.as_mut().unwrap().disruptions_allowed = 1;
    c.set_pdb("default/db".into(), crate::cache::Pdb::from_api(&pdb));
    let pods: Vec<Arc<PodInfo>> = c.node("n1").unwrap().pods.clone();
    let pdbs: Vec<&crate::cache::Pdb> = c.pdbs().collect();
    let (violating, others) = crate::preemption::split_by_pdb_violation(&pods, &pdbs);
    assert!(violating.is_empty());
    assert_eq!(others.len(), 1);
    c.retain_pdbs(&std::collections::HashSet::new());
    assert_eq!(c.pdbs().count(), 0);
}

#[test]
fn room_freed_for_a_nominated_pod_is_kept_for_it() {
    let mut c = Cache::new();
    c.set_node(&node(node_json("n1", "a", "2", 10)));
    let with_priority = |name: &str, cpu: &str, prio: i32| {
        let mut p = pod_json(name, json!({}), cpu);
        p["spec"]["priority"] = json!(prio);
        pod(p)
    };
    let profile = default_profile();
    let mut algo = Algorithm::new(1);
    // `high` waits for the 2 CPUs its preemption is freeing on n1.
    let high = Arc::new(with_priority("high", "2", 10));
    c.nominate(Arc::clone(&high), "n1");
    // A pod of lower priority may not take that room...
    let low = with_priority("low", "1", 1);
    assert_eq!(
        algo.schedule(&profile, &low, &mut c).unwrap_err().message(),
        "0/1 nodes are available: 1 Insufficient cpu."
    );
    // ...one of higher priority may, and so may the nominated pod itself.
    let higher = with_priority("higher", "1", 20);
    assert_eq!(algo.schedule(&profile, &higher, &mut c).unwrap().node, "n1");
    assert_eq!(algo.schedule(&profile, &high, &mut c).unwrap().node, "n1");
    // Once the nomination is gone (bound or deleted), the room is free again.
    c.clear_nomination(&high.uid);
    assert!(c.nominated_on("n1").is_empty());
    assert_eq!(algo.schedule(&profile, &low, &mut c).unwrap().node, "n1");
}

#[test]
fn configuration_profiles_plugins_and_weights() {
    let profiles = from_config(
        r#"
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
percentageOfNodesToScore: 30
profiles:
- schedulerName: default-scheduler
- schedulerName: bin-packer
  plugins:
    score:
      disabled: [{name: NodeResourcesBalancedAllocation}, {name: PodTopologySpread}]
      enabled: [{name: NodeResourcesFit, weight: 5}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
"#,
    )
    .unwrap();
    assert_eq!(profiles.len(), 2);
    assert_eq!(profiles[0].percentage_of_nodes_to_score, 30);
    let packer = &profiles[1];
    assert_eq!(packer.scheduler_name, "bin-packer");
    let scores: Vec<(&str, i64)> = packer.score.iter().map(|(p, w)| (p.name(), *w)).collect();
    assert!(scores.contains(&("NodeResourcesFit", 5)));
    assert!(!scores.iter().any(|(n, _)| *n == "PodTopologySpread"));
    // MostAllocated packs: the busier node wins.
    let mut c = cluster(2, 1);
    bind(&mut c, pod(pod_json("busy", json!({}), "2")), "n1");
    let mut algo = Algorithm::new(2);
    let placement = algo
        .schedule(packer, &pod(pod_json("p", json!({}), "1")), &mut c)
        .unwrap();
    assert_eq!(placement.node, "n1");
    let default = algo
        .schedule(&profiles[0], &pod(pod_json("q", json!({}), "1")), &mut c)
        .unwrap();
    assert_eq!(default.node, "n0");

    assert!(
        from_config("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]")
            .unwrap_err()
            .to_string()
            .contains("\"Nope\" does not exist")
    );
    assert!(from_config("kind: Other").is_err());
    assert!(from_config("{").is_err());
}

#[test]
fn a_policy_file_maps_predicates_and_priorities_onto_plugins() {
    let p = from_policy(
        r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "PodFitsResources"}, {"name": "HostName"}],
            "priorities": [{"name": "MostRequestedPriority", "weight": 3}]}"#,
    )
    .unwrap();
    let filters: Vec<&str> = p.filter.iter().map(|p| p.name()).collect();
    assert_eq!(filters, ["NodeResourcesFit", "NodeName"]);
    let scores: Vec<(&str, i64)> = p.score.iter().map(|(p, w)| (p.name(), *w)).collect();
    assert_eq!(scores, [("NodeResourcesFit", 3)]);
    assert!(from_policy(r#"{"kind": "Policy", "predicates": [{"name": "Bogus"}]}"#).is_err());
}

#[test]
fn image_locality_prefers_nodes_holding_the_image() {
    let mut c = Cache::new();
    for (name, images) in [
        ("n0", json!([])),
        (
            "n1",
            json!([{"names": ["docker.io/library/web:latest"], "sizeBytes": 500_000_000}]),
        ),
    ] {
        let mut n = node_json(name, "z", "4", 110);
        n["status"]["images"] = images;
        c.set_node(&node(n));
    }
    let p = pod(pod_json("p", json!({}), "100m"));
    let mut st = CycleState::default();
    let plugin = crate::plugins::ImageLocality;
    plugin.pre_score(&p, &mut c, &[], &mut st);
    let with = plugin.score(&p, &info(&c, "n1"), &c, &st);
    let without = plugin.score(&p, &info(&c, "n0"), &c, &st);
    assert!(with > without, "{with} > {without}");
    assert_eq!(without, 0);
}

/// Upstream's `balanced_allocation_test.go` cases: 1 − the standard deviation of the
/// requested fractions (the two-resource shortcut, more resources, a resource the node
/// lacks, fractions capped at 1).
#[test]
fn balanced_allocation_scores_as_upstream() {
    let mut c = Cache::new();
    for (name, cpu, memory) in [("n1", "4", "10000"), ("n2", "6", "10000"), ("n3", "2", "0")] {
        let mut n = node_json(name, "z", cpu, 110);
        n["status"]["allocatable"]["memory"] = json!(memory);
        n["status"]["allocatable"]["ephemeral-storage"] = json!("8000");
        c.set_node(&node(n));
    }
    let p = pod(
        json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "a",
        "resources": {"requests": {"cpu": "3", "memory": "5000", "ephemeral-storage": "2000"}}}]}}),
    );
    let st = CycleState::default();
    let score = |plugin: &crate::plugins::BalancedAllocation, n: &str| {
        plugin.score(&p, &info(&c, n), &c, &st)
    };
    let cpu_memory = crate::plugins::BalancedAllocation::default();
    // cpu 3/4, memory 5000/10000: std (0.75 − 0.5) / 2.
    assert_eq!(score(&cpu_memory, "n1"), 87);
    assert_eq!(score(&cpu_memory, "n2"), 100);
    // No memory allocatable: one fraction left, no deviation; cpu 3/2 is capped at 1.
    assert_eq!(score(&cpu_memory, "n3"), 100);
    let three = crate::plugins::BalancedAllocation {
        resources: vec!["cpu".into(), "memory".into(), "ephemeral-storage".into()],
    };
    // 0.75, 0.5, 0.25: mean 0.5, std sqrt(0.125 / 3).
    assert_eq!(score(&three, "n1"), 79);
    // n3: cpu 1 (capped) and storage 0.25, memory skipped: std 0.375.
    assert_eq!(score(&three, "n3"), 62);
}

/// Every default Score plugin scores the feasible nodes at once (reading its cycle state
/// once) exactly as node by node: with images some nodes hold, spread and affinity terms
/// matching bound pods, and with none of those.
#[test]
fn scoring_all_nodes_at_once_matches_scoring_each() {
    let mut c = Cache::new();
    for i in 0..6 {
        let mut n = node_json(&format!("n{i}"), &format!("z{}", i % 2), "4", 110);
        if i % 3 == 0 {
            n["status"]["images"] =
                json!([{"names": ["docker.io/library/web:latest"], "sizeBytes": 300_000_000}]);
        }
        c.set_node(&node(n));
    }
    for i in 0..4 {
        let p = pod(pod_json(&format!("db-{i}"), json!({"app": "db"}), "500m"));
        bind(&mut c, p, &format!("n{}", i % 3));
    }
    let mut rich = pod_json("web", json!({"app": "web"}), "200m");
    rich["spec"]["topologySpreadConstraints"] = json!([{"maxSkew": 1,
        "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
        "labelSelector": {"matchLabels": {"app": "db"}}}]);
    rich["spec"]["affinity"] = json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 5, "podAffinityTerm": {"topologyKey": "kubernetes.io/hostname",
            "labelSelector": {"matchLabels": {"app": "db"}}}}]}});
    let mut plain = pod_json("other", json!({"app": "other"}), "100m");
    plain["spec"]["containers"][0]["image"] = json!("nowhere:1");
    let profile = default_profile();
    for p in [pod(rich), pod(plain)] {
        let feasible: Vec<usize> = (0..c.node_slots().len()).collect();
        let mut state = CycleState::default();
        for pre in &profile.pre_filter {
            pre.pre_filter(&p, &mut c, &mut state).unwrap();
        }
        for pre in &profile.pre_score {
            pre.pre_score(&p, &mut c, &feasible, &mut state);
        }
        for (plugin, _) in &profile.score {
            let mut at_once = vec![i64::MIN; feasible.len()];
            plugin.score_all(&p, &feasible, &c, &state, &mut at_once);
            let each: Vec<i64> = feasible
                .iter()
                .map(|&i| plugin.score(&p, &c.node_slots()[i], &c, &state))
                .collect();
            assert_eq!(at_once, each, "{} for {}", plugin.name(), p.name);
        }
    }
}
