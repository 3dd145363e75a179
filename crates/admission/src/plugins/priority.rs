//! `Priority` (upstream's `plugin/pkg/admission/priority`): a new pod's `priority` and
//! `preemptionPolicy` come from its PriorityClass (or the global default class, or 0), and
//! may not be set to anything else by hand; updates keep them. At most one PriorityClass is
//! the global default.

use std::sync::Arc;

use api::ApiError;
use serde_json::{Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

const GROUP: &str = "scheduling.k8s.io";
const PLURAL: &str = "priorityclasses";

/// The classes the API server creates at start (`SystemPriorityClasses`): name, value,
/// description.
pub const SYSTEM_CLASSES: &[(&str, i64, &str)] = &[
    (
        "system-node-critical",
        2_000_001_000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    (
        "system-cluster-critical",
        2_000_000_000,
        "Used for system critical pods that must run in the cluster, but can be moved to another node if necessary.",
    ),
];

/// A system class as the API server stores it.
pub fn system_class(name: &str, value: i64, description: &str) -> Value {
    json!({
        "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
        "metadata": {"name": name},
        "value": value,
        "description": description,
        "preemptionPolicy": "PreemptLowerPriority",
    })
}

pub struct Priority;

/// The global default class: the one with the lowest value if several claim it.
async fn default_class(cluster: &dyn Cluster) -> Result<Option<Arc<Value>>, ApiError> {
    let classes = cluster.list(GROUP, PLURAL, "").await?;
    Ok(classes
        .into_iter()
        .filter(|c| c["globalDefault"].as_bool() == Some(true))
        .min_by_key(|c| c["value"].as_i64().unwrap_or_default()))
}

impl Priority {
    async fn admit_pod(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.operation == Operation::Update {
            let old_spec = a
                .old_object
                .as_ref()
                .map(|o| o["spec"].clone())
                .unwrap_or_default();
            if let Some(spec) = a.object.as_mut().and_then(|p| p.get_mut("spec")) {
                for key in ["priority", "preemptionPolicy"] {
                    if let Some(v) = old_spec.get(key).filter(|v| !v.is_null()) {
                        spec[key] = v.clone();
                    }
                }
            }
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let class_name = pod["spec"]["priorityClassName"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let (name, value, policy) = if class_name.is_empty() {
            match default_class(cluster).await? {
                Some(c) => (
                    api::meta::name(&c).unwrap_or_default().to_string(),
                    c["value"].as_i64().unwrap_or_default(),
                    c["preemptionPolicy"].as_str().map(str::to_string),
                ),
                None => (String::new(), 0, None),
            }
        } else {
            match cluster.get(GROUP, PLURAL, "", &class_name).await? {
                Some(c) => (
                    class_name.clone(),
                    c["value"].as_i64().unwrap_or_default(),
                    c["preemptionPolicy"].as_str().map(str::to_string),
                ),
                None => {
                    return Err(forbidden(
                        a,
                        format!("no PriorityClass with name {class_name} was found"),
                    ));
                }
            }
        };
        if let Some(given) = pod["spec"]["priority"].as_i64()
            && given != value
        {
            return Err(forbidden(
                a,
                format!(
                    "the integer value of priority ({given}) must not be provided in pod spec; priority admission controller computed {value} from the given PriorityClass name"
                ),
            ));
        }
        if let Some(policy) = &policy
            && let Some(given) = pod["spec"]["preemptionPolicy"].as_str()
            && given != policy
        {
            return Err(forbidden(
                a,
                format!(
                    "the string value of PreemptionPolicy ({given}) must not be provided in pod spec; priority admission controller computed {policy} from the given PriorityClass name"
                ),
            ));
        }
        if let Some(spec) = a.object.as_mut().and_then(|p| p.get_mut("spec")) {
            if !name.is_empty() {
                spec["priorityClassName"] = json!(name);
            }
            spec["priority"] = json!(value);
            if let Some(policy) = policy {
                spec["preemptionPolicy"] = json!(policy);
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Plugin for Priority {
    fn name(&self) -> &'static str {
        "Priority"
    }
    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }
    fn mutating(&self) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if !a.is_main("", "pods") || !a.object.as_ref().is_some_and(|p| p["spec"].is_object()) {
            return Ok(());
        }
        self.admit_pod(a, cluster).await
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if !a.is_main(GROUP, PLURAL) {
            return Ok(());
        }
        let Some(pc) = a.object.as_ref() else {
            return Ok(());
        };
        if pc["globalDefault"].as_bool() != Some(true) {
            return Ok(());
        }
        if let Some(current) = default_class(cluster).await? {
            let current_name = api::meta::name(&current).unwrap_or_default();
            if a.operation == Operation::Create || current_name != a.name {
                return Err(forbidden(
                    a,
                    format!(
                        "PriorityClass {current_name} is already marked as default. Only one default can exist"
                    ),
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Gvk;
    use crate::fake::FakeCluster;
    use crate::plugins::tests::pod_create;

    fn cluster() -> FakeCluster {
        let c = FakeCluster::new();
        c.put(
            GROUP,
            PLURAL,
            json!({"metadata": {"name": "high"}, "value": 1000}),
        );
        c.put(
            GROUP,
            PLURAL,
            json!({"metadata": {"name": "never"}, "value": 10, "preemptionPolicy": "Never"}),
        );
        c
    }

    async fn admit(c: &FakeCluster, spec: Value) -> Result<Value, ApiError> {
        let mut a = pod_create("ns", json!({"metadata": {"name": "p"}, "spec": spec}));
        Priority.admit(&mut a, c).await?;
        Ok(a.object.unwrap_or_default()["spec"].clone())
    }

    #[tokio::test]
    async fn class_value_default_and_refusals() {
        let c = cluster();
        let spec = admit(&c, json!({"priorityClassName": "high"}))
            .await
            .unwrap();
        assert_eq!(spec["priority"], 1000);
        let spec = admit(&c, json!({"priorityClassName": "never"}))
            .await
            .unwrap();
        assert_eq!(
            (spec["priority"].clone(), spec["preemptionPolicy"].clone()),
            (json!(10), json!("Never"))
        );
        // No class and no default: priority 0, no class name.
        let spec = admit(&c, json!({})).await.unwrap();
        assert_eq!(spec["priority"], 0);
        assert!(spec["priorityClassName"].is_null());
        // A global default applies.
        c.put(
            GROUP,
            PLURAL,
            json!({"metadata": {"name": "dflt"}, "value": 7, "globalDefault": true}),
        );
        let spec = admit(&c, json!({})).await.unwrap();
        assert_eq!(
            (spec["priority"].clone(), spec["priorityClassName"].clone()),
            (json!(7), json!("dflt"))
        );

        let e = admit(&c, json!({"priorityClassName": "nope"}))
            .await
            .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: no PriorityClass with name nope was found"
        );
        let e = admit(&c, json!({"priorityClassName": "high", "priority": 5}))
            .await
            .unwrap_err();
        assert!(e.message.ends_with("the integer value of priority (5) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name"), "{}", e.message);
        let e = admit(
            &c,
            json!({"priorityClassName": "never", "preemptionPolicy": "PreemptLowerPriority"}),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("computed Never"), "{}", e.message);
    }

    #[tokio::test]
    async fn updates_keep_priority() {
        let c = cluster();
        let mut a = pod_create(
            "ns",
            json!({"metadata": {"name": "p"}, "spec": {"priority": 1}}),
        );
        a.operation = Operation::Update;
        a.old_object = Some(json!({"spec": {"priority": 1000, "preemptionPolicy": "Never"}}));
        Priority.admit(&mut a, &c).await.unwrap();
        let spec = &a.object.unwrap()["spec"];
        assert_eq!(
            (spec["priority"].clone(), spec["preemptionPolicy"].clone()),
            (json!(1000), json!("Never"))
        );
    }

    #[tokio::test]
    async fn only_one_global_default() {
        let c = cluster();
        c.put(
            GROUP,
            PLURAL,
            json!({"metadata": {"name": "dflt"}, "value": 7, "globalDefault": true}),
        );
        let mut a = pod_create(
            "",
            json!({"metadata": {"name": "second"}, "value": 1, "globalDefault": true}),
        );
        a.resource = Gvk {
            group: GROUP.into(),
            version: "v1".into(),
            kind: PLURAL.into(),
        };
        let e = Priority.validate(&a, &c).await.unwrap_err();
        assert!(
            e.message.ends_with(
                "PriorityClass dflt is already marked as default. Only one default can exist"
            ),
            "{}",
            e.message
        );
        // Updating the default itself is fine.
        a.operation = Operation::Update;
        a.name = "dflt".into();
        Priority.validate(&a, &c).await.unwrap();
    }
}
