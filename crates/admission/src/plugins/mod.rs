//! The built-in plugins and [`builtin`], the factories of all of them.

pub mod lifecycle;
pub mod limitranger;
pub mod noderestriction;
pub mod nodetaint;
pub mod podsecurity;
pub mod priority;
pub mod pullimages;
pub mod quota;
pub mod serviceaccount;
pub mod tolerations;

use std::sync::Arc;

use api::ApiError;

use crate::chain::{Factory, Plugins, forbidden};
use crate::{Attributes, Cluster, Operation, Plugin};

/// `AlwaysAdmit`: admits everything (upstream deprecated it; kept for its name).
pub struct AlwaysAdmit;

#[async_trait::async_trait]
impl Plugin for AlwaysAdmit {
    fn name(&self) -> &'static str {
        "AlwaysAdmit"
    }
    fn handles(&self, _op: Operation) -> bool {
        true
    }
}

/// `AlwaysDeny`: refuses every write (for tests).
pub struct AlwaysDeny;

#[async_trait::async_trait]
impl Plugin for AlwaysDeny {
    fn name(&self) -> &'static str {
        "AlwaysDeny"
    }
    fn handles(&self, _op: Operation) -> bool {
        true
    }
    fn validating(&self) -> bool {
        true
    }
    async fn validate(&self, a: &Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        Err(forbidden(
            a,
            "admission control is denying all modifications",
        ))
    }
}

fn simple<P: Plugin + 'static>(make: fn() -> P) -> Factory {
    Box::new(move |_config| Ok(Arc::new(make()) as Arc<dyn Plugin>))
}

/// Every plugin implemented in this crate. The API server registers the ones that need
/// its own IO (webhooks) on top.
pub fn builtin() -> Plugins {
    let mut p = Plugins::new();
    p.register("AlwaysAdmit", simple(|| AlwaysAdmit));
    p.register("AlwaysDeny", simple(|| AlwaysDeny));
    p.register(
        "NamespaceLifecycle",
        simple(|| lifecycle::NamespaceLifecycle),
    );
    p.register("LimitRanger", simple(|| limitranger::LimitRanger));
    p.register("ResourceQuota", simple(|| quota::ResourceQuota));
    p.register("Priority", simple(|| priority::Priority));
    p.register("AlwaysPullImages", simple(|| pullimages::AlwaysPullImages));
    p.register(
        "NodeRestriction",
        simple(noderestriction::NodeRestriction::default),
    );
    p.register(
        "ServiceAccount",
        simple(serviceaccount::ServiceAccount::default),
    );
    p.register(
        "PodSecurity",
        Box::new(|config| {
            Ok(Arc::new(podsecurity::PodSecurity::from_config(config)?) as Arc<dyn Plugin>)
        }),
    );
    p.register(
        "ValidatingAdmissionPolicy",
        simple(crate::policy::validating::ValidatingAdmissionPolicy::default),
    );
    p.register(
        "TaintNodesByCondition",
        simple(|| nodetaint::TaintNodesByCondition),
    );
    p.register(
        "DefaultTolerationSeconds",
        simple(tolerations::DefaultTolerationSeconds::default),
    );
    p
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::chain::{Chain, ChainConfig};
    use crate::fake::FakeCluster;
    use crate::{Attributes, Gvk};
    use serde_json::json;

    pub(crate) fn pod_create(ns: &str, pod: serde_json::Value) -> Attributes {
        let name = api::meta::name(&pod).unwrap_or_default().to_string();
        Attributes {
            kind: Gvk {
                group: String::new(),
                version: "v1".into(),
                kind: "Pod".into(),
            },
            object: Some(pod),
            user: auth::UserInfo::new("alice", ["system:authenticated"]),
            ..Attributes::on(Operation::Create, "", "pods", ns, &name)
        }
    }

    #[tokio::test]
    async fn always_deny_refuses_with_upstreams_message() {
        let chain = Chain::build(
            &ChainConfig {
                enable: vec!["AlwaysDeny".into()],
                // (ServiceAccount would refuse the pod first: it has no account.)
                disable: vec!["ServiceAccount".into()],
                config_file: None,
            },
            &builtin(),
        )
        .unwrap();
        assert!(chain.names().contains(&"AlwaysDeny"));
        let a = pod_create("default", json!({"metadata": {"name": "p"}}));
        let cluster = FakeCluster::new();
        cluster.put("", "namespaces", json!({"metadata": {"name": "default"}}));
        let e = chain.validate(&a, &cluster).await.unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: admission control is denying all modifications"
        );
    }

    #[test]
    fn unknown_and_conflicting_flags_are_refused() {
        let e = Chain::build(
            &ChainConfig {
                enable: vec!["Nope".into()],
                ..Default::default()
            },
            &builtin(),
        )
        .unwrap_err();
        assert_eq!(
            e.to_string(),
            "enable-admission-plugins plugin \"Nope\" is unknown"
        );
        let e = Chain::build(
            &ChainConfig {
                enable: vec!["AlwaysDeny".into()],
                disable: vec!["AlwaysDeny".into()],
                config_file: None,
            },
            &builtin(),
        )
        .unwrap_err();
        assert!(
            e.to_string()
                .contains("is in enable-admission-plugins and disable")
        );
    }
}
