//! `TaintNodesByCondition` (upstream's `plugin/pkg/admission/nodetaint`): a new Node is
//! created with the `node.kubernetes.io/not-ready:NoSchedule` taint, so nothing is
//! scheduled to it before its kubelet reports Ready (the node lifecycle controller then
//! removes the taint).

use api::ApiError;
use serde_json::{Value, json};

use crate::{Attributes, Cluster, Operation, Plugin};

pub const NOT_READY_TAINT: &str = "node.kubernetes.io/not-ready";

pub struct TaintNodesByCondition;

/// Adds the not-ready taint unless a taint with its key and effect is there.
fn add_not_ready_taint(node: &mut Value) {
    let Some(spec) = node
        .as_object_mut()
        .map(|n| n.entry("spec").or_insert_with(|| json!({})))
    else {
        return;
    };
    if !spec.is_object() {
        *spec = json!({});
    }
    let taints = &mut spec["taints"];
    if !taints.is_array() {
        *taints = json!([]);
    }
    let Some(list) = taints.as_array_mut() else {
        return;
    };
    if list
        .iter()
        .any(|t| t["key"] == NOT_READY_TAINT && t["effect"] == "NoSchedule")
    {
        return;
    }
    list.push(json!({"key": NOT_READY_TAINT, "effect": "NoSchedule"}));
}

#[async_trait::async_trait]
impl Plugin for TaintNodesByCondition {
    fn name(&self) -> &'static str {
        "TaintNodesByCondition"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn mutating(&self) -> bool {
        true
    }
    async fn admit(&self, a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.is_main("", "nodes")
            && let Some(node) = a.object.as_mut()
        {
            add_not_ready_taint(node);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn taints_new_nodes_once() {
        let mut node = json!({"metadata": {"name": "n"}});
        add_not_ready_taint(&mut node);
        assert_eq!(
            node["spec"]["taints"],
            json!([{"key": NOT_READY_TAINT, "effect": "NoSchedule"}])
        );
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 1);
        // Another effect of the same key is another taint.
        let mut node = json!({"spec": {"taints": [{"key": NOT_READY_TAINT, "effect": "NoExecute"}, {"key": "a", "value": "b", "effect": "NoSchedule"}]}});
        add_not_ready_taint(&mut node);
        assert_eq!(node["spec"]["taints"].as_array().unwrap().len(), 3);
        assert_eq!(node["spec"]["taints"][2]["effect"], "NoSchedule");
    }
}
