//! `AlwaysPullImages` (upstream's `plugin/pkg/admission/alwayspullimages`, off by default):
//! every container of a new pod, or of an update that brings a new image, pulls its image
//! always, so a pod can only use an image its pull secrets grant, never one cached on the
//! node for another tenant.

use api::ApiError;
use api::status::FieldError;
use serde_json::{Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

const KINDS: [&str; 3] = ["initContainers", "containers", "ephemeralContainers"];

pub struct AlwaysPullImages;

fn images(pod: &Value) -> impl Iterator<Item = &str> {
    KINDS
        .iter()
        .flat_map(move |k| pod["spec"][*k].as_array().into_iter().flatten())
        .map(|c| c["image"].as_str().unwrap_or_default())
}

/// Upstream's `shouldIgnore`: not a pod, a subresource, or an update whose images were all
/// in the pod already.
fn ignored(a: &Attributes) -> bool {
    if !a.is_main("", "pods") {
        return true;
    }
    match (a.operation, &a.object, &a.old_object) {
        (Operation::Update, Some(new), Some(old)) => {
            let old: Vec<&str> = images(old).collect();
            images(new).all(|i| old.contains(&i))
        }
        _ => false,
    }
}

#[async_trait::async_trait]
impl Plugin for AlwaysPullImages {
    fn name(&self) -> &'static str {
        "AlwaysPullImages"
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

    async fn admit(&self, a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if ignored(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        for kind in KINDS {
            for c in pod["spec"][kind].as_array_mut().into_iter().flatten() {
                if c.is_object() {
                    c["imagePullPolicy"] = json!("Always");
                }
            }
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if ignored(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let mut errs = Vec::new();
        for kind in KINDS {
            for (i, c) in pod["spec"][kind]
                .as_array()
                .into_iter()
                .flatten()
                .enumerate()
            {
                let policy = c["imagePullPolicy"].as_str().unwrap_or_default();
                if policy != "Always" {
                    errs.push(FieldError::not_supported(
                        format!("spec.{kind}[{i}].imagePullPolicy"),
                        policy,
                        &["Always"],
                    ));
                }
            }
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(forbidden(a, api::status::aggregate(&errs)))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCluster;
    use crate::plugins::tests::pod_create;

    #[tokio::test]
    async fn new_pods_and_new_images_pull_always() {
        let c = FakeCluster::new();
        let pod = json!({"metadata": {"name": "p"}, "spec": {
            "initContainers": [{"name": "i", "image": "a", "imagePullPolicy": "Never"}],
            "containers": [{"name": "c", "image": "b", "imagePullPolicy": "IfNotPresent"}],
        }});
        let mut a = pod_create("ns", pod.clone());
        let e = AlwaysPullImages.validate(&a, &c).await.unwrap_err();
        assert!(e.message.ends_with("[spec.initContainers[0].imagePullPolicy: Unsupported value: \"Never\": supported values: \"Always\", spec.containers[0].imagePullPolicy: Unsupported value: \"IfNotPresent\": supported values: \"Always\"]"), "{}", e.message);
        AlwaysPullImages.admit(&mut a, &c).await.unwrap();
        AlwaysPullImages.validate(&a, &c).await.unwrap();
        let out = a.object.clone().unwrap();
        assert_eq!(
            out["spec"]["initContainers"][0]["imagePullPolicy"],
            "Always"
        );
        assert_eq!(out["spec"]["containers"][0]["imagePullPolicy"], "Always");

        // An update with the same images is left alone; a new image is not.
        let mut u = pod_create("ns", pod.clone());
        u.operation = Operation::Update;
        u.old_object = Some(pod.clone());
        AlwaysPullImages.admit(&mut u, &c).await.unwrap();
        assert_eq!(
            u.object.as_ref().unwrap()["spec"]["containers"][0]["imagePullPolicy"],
            "IfNotPresent"
        );
        let mut newer = pod;
        newer["spec"]["containers"][0]["image"] = json!("b2");
        u.object = Some(newer);
        AlwaysPullImages.admit(&mut u, &c).await.unwrap();
        assert_eq!(
            u.object.unwrap()["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }
}
