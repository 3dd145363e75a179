//! `DefaultTolerationSeconds` (upstream's `plugin/pkg/admission/defaulttolerationseconds`):
//! new pods tolerate `node.kubernetes.io/not-ready` and `unreachable` `NoExecute` taints
//! for 300 seconds (`--default-not-ready-toleration-seconds`,
//! `--default-unreachable-toleration-seconds`) unless they already tolerate them.

use api::ApiError;
use serde_json::{Value, json};

use crate::{Attributes, Cluster, Operation, Plugin};

pub struct DefaultTolerationSeconds {
    pub not_ready_seconds: i64,
    pub unreachable_seconds: i64,
}

impl Default for DefaultTolerationSeconds {
    fn default() -> Self {
        DefaultTolerationSeconds {
            not_ready_seconds: 300,
            unreachable_seconds: 300,
        }
    }
}

/// Whether `t` already tolerates `key:NoExecute` (upstream's `ToleratesTaint` on an empty
/// value).
fn tolerates(t: &Value, key: &str) -> bool {
    let effect = t["effect"].as_str().unwrap_or_default();
    if !effect.is_empty() && effect != "NoExecute" {
        return false;
    }
    let tkey = t["key"].as_str().unwrap_or_default();
    if !tkey.is_empty() && tkey != key {
        return false;
    }
    match t["operator"].as_str().unwrap_or("Equal") {
        "Exists" => true,
        _ => t["value"].as_str().unwrap_or_default().is_empty() && !tkey.is_empty(),
    }
}

#[async_trait::async_trait]
impl Plugin for DefaultTolerationSeconds {
    fn name(&self) -> &'static str {
        "DefaultTolerationSeconds"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn mutating(&self) -> bool {
        true
    }
    async fn admit(&self, a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if !a.is_main("", "pods") {
            return Ok(());
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        let mut tolerations = pod["spec"]["tolerations"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for (key, secs) in [
            ("node.kubernetes.io/not-ready", self.not_ready_seconds),
            ("node.kubernetes.io/unreachable", self.unreachable_seconds),
        ] {
            if !tolerations.iter().any(|t| tolerates(t, key)) {
                tolerations.push(json!({
                    "key": key, "operator": "Exists", "effect": "NoExecute",
                    "tolerationSeconds": secs,
                }));
            }
        }
        if pod["spec"].is_object() {
            pod["spec"]["tolerations"] = Value::Array(tolerations);
        }
        Ok(())
    }
}
