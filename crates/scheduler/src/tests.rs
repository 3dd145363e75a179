#![allow(clippy::unwrap_used)]

use serde_json::json;

use super::*;

fn node(name: &str, cpu: &str, memory: &str, pods: i64) -> Value {
    json!({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "zone": "a"}},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": pods.to_string()}}})
}

fn pod(cpu: &str) -> Value {
    json!({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu, "memory": "1Gi"}}}]}})
}

fn info(node: &Value) -> NodeInfo<'_> {
    NodeInfo {
        node,
        pods: Vec::new(),
    }
}

#[test]
fn requests_sum_containers_and_take_the_largest_init_container() {
    let p = json!({"spec": {
        "initContainers": [{"resources": {"requests": {"cpu": "2"}}}],
        "containers": [{"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}, {"resources": {"requests": {"cpu": "700m"}}}],
        "overhead": {"cpu": "100m"},
    }});
    let r = pod_requests(&p);
    assert_eq!(r["cpu"], 2100);
    assert_eq!(r["memory"], 1 << 30);
}

#[test]
fn resources_fit_with_upstreams_reasons() {
    let n = node("n1", "2", "4Gi", 2);
    let busy = pod("1500m");
    let mut ni = info(&n);
    assert!(node_resources_fit(&pod("1"), &ni).is_empty());
    ni.pods.push(&busy);
    assert_eq!(node_resources_fit(&pod("1"), &ni), vec!["Insufficient cpu"]);
    ni.pods.push(&busy);
    assert_eq!(
        node_resources_fit(&pod("100m"), &ni),
        vec!["Too many pods", "Insufficient cpu"]
    );
}

#[test]
fn taints_affinity_ports_and_names() {
    let mut n = node("n1", "4", "8Gi", 110);
    n["spec"]["taints"] = json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
    let ni = info(&n);
    let p = pod("1");
    assert_eq!(
        taint_toleration(&p, &ni).unwrap(),
        "node(s) had untolerated taint {dedicated: gpu}"
    );
    let mut tolerant = p.clone();
    tolerant["spec"]["tolerations"] = json!([{"key": "dedicated", "operator": "Exists"}]);
    assert_eq!(taint_toleration(&tolerant, &ni), None);

    let mut selective = p.clone();
    selective["spec"]["nodeSelector"] = json!({"zone": "b"});
    assert_eq!(
        node_affinity(&selective, &ni).unwrap(),
        "node(s) didn't match Pod's node affinity/selector"
    );
    selective["spec"]["nodeSelector"] = json!({"zone": "a"});
    selective["spec"]["affinity"] = json!({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "NotIn", "values": ["a"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
    ]}}});
    assert_eq!(
        node_affinity(&selective, &ni),
        None,
        "the second term matches"
    );

    let mut named = p.clone();
    named["spec"]["nodeName"] = json!("n2");
    assert!(node_name(&named, &ni).is_some());

    let mut web = p.clone();
    web["spec"]["containers"][0]["ports"] = json!([{"containerPort": 80, "hostPort": 8080}]);
    let mut ni2 = info(&n);
    ni2.pods.push(&web);
    assert_eq!(
        node_ports(&web, &ni2).unwrap(),
        "node(s) didn't have free ports for the requested pod ports"
    );
    let mut udp = web.clone();
    udp["spec"]["containers"][0]["ports"][0]["protocol"] = json!("UDP");
    assert_eq!(node_ports(&udp, &ni2), None);

    let mut cordoned = node("n3", "4", "8Gi", 110);
    cordoned["spec"]["unschedulable"] = json!(true);
    assert_eq!(
        node_unschedulable(&p, &info(&cordoned)).unwrap(),
        "node(s) were unschedulable"
    );
}

#[test]
fn the_failed_scheduling_summary() {
    let reasons = vec![
        vec!["Insufficient cpu".to_string()],
        vec![
            "Insufficient cpu".to_string(),
            "Insufficient memory".to_string(),
        ],
        vec!["node(s) were unschedulable".to_string()],
    ];
    assert_eq!(
        fit_error(3, &reasons),
        "0/3 nodes are available: 1 Insufficient memory, 1 node(s) were unschedulable, 2 Insufficient cpu."
    );
    assert_eq!(fit_error(0, &[]), "0/0 nodes are available:.");
}

#[test]
fn scores_prefer_free_balanced_and_preferred_nodes() {
    let empty = node("empty", "4", "8Gi", 110);
    let full = node("full", "4", "8Gi", 110);
    let heavy = pod("3");
    let mut busy = info(&full);
    busy.pods.push(&heavy);
    let p = pod("500m");
    assert!(least_allocated(&p, &info(&empty)) > least_allocated(&p, &busy));
    assert!(balanced_allocation(&p, &info(&empty)) >= 0);

    let mut tainted = node("t", "4", "8Gi", 110);
    tainted["spec"]["taints"] = json!([{"key": "k", "effect": "PreferNoSchedule"}]);
    let mut raw = vec![
        intolerable_prefer_no_schedule(&p, &info(&empty)),
        intolerable_prefer_no_schedule(&p, &info(&tainted)),
    ];
    normalize(&mut raw, true);
    assert_eq!(raw, vec![100, 0]);

    let mut picky = p.clone();
    picky["spec"]["affinity"] = json!({"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 10, "preference": {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": ["empty"]}]}},
    ]}});
    let mut raw = vec![
        preferred_affinity(&picky, &info(&empty)),
        preferred_affinity(&picky, &info(&tainted)),
    ];
    normalize(&mut raw, false);
    assert_eq!(raw, vec![100, 0]);
    let mut zero = vec![0, 0];
    normalize(&mut zero, true);
    assert_eq!(zero, vec![100, 100]);
}
