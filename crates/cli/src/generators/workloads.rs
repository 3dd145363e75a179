//! `create deployment|job|cronjob` and `create job --from=cronjob/<name>`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::{container, object_meta, random_suffix, string_map};

/// A container name from an image, as `create deployment` derives it: the last path
/// component without tag or digest; names with `_` or `.` get `-` and a random suffix.
pub fn container_name_for_image(image: &str) -> String {
    let mut name = image.rsplit('/').next().unwrap_or(image).to_string();
    if let Some((n, _)) = name.split_once(':') {
        name = n.to_string();
    }
    if let Some((n, _)) = name.split_once('@') {
        name = n.to_string();
    }
    if name.contains(['_', '.']) {
        name = format!("{}-{}", name.replace(['_', '.'], "-"), random_suffix(5));
    }
    name
}

/// `create deployment NAME --image=… [--replicas] [--port] [-- command]`; `port < 0`
/// means none.
pub fn deployment(
    name: &str,
    images: &[String],
    replicas: i32,
    port: i32,
    command: &[String],
) -> Value {
    let labels = BTreeMap::from([("app".to_string(), name.to_string())]);
    let mut containers: Vec<Value> = images
        .iter()
        .map(|image| container(&container_name_for_image(image), image, command))
        .collect();
    if port >= 0
        && let Some(c) = containers.first_mut()
    {
        c["ports"] = json!([{"containerPort": port}]);
    }
    json!({
        "kind": "Deployment",
        "apiVersion": "apps/v1",
        "metadata": object_meta(name, Some(&labels), None),
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": string_map(&labels)},
            "template": {
                "metadata": object_meta("", Some(&labels), None),
                "spec": {"containers": containers},
            },
            "strategy": {},
        },
        "status": {},
    })
}

/// `create job NAME --image=… [-- command]`.
pub fn job(name: &str, image: &str, command: &[String]) -> Value {
    json!({
        "kind": "Job",
        "apiVersion": "batch/v1",
        "metadata": object_meta(name, None, None),
        "spec": {
            "template": {
                "metadata": object_meta("", None, None),
                "spec": {
                    "containers": [container(name, image, command)],
                    "restartPolicy": "Never",
                },
            },
        },
        "status": {},
    })
}

/// `create cronjob NAME --image=… --schedule=… [--restart] [-- command]`.
pub fn cronjob(
    name: &str,
    image: &str,
    schedule: &str,
    restart: &str,
    command: &[String],
) -> Value {
    let restart = if restart.is_empty() {
        "OnFailure"
    } else {
        restart
    };
    json!({
        "kind": "CronJob",
        "apiVersion": "batch/v1",
        "metadata": object_meta(name, None, None),
        "spec": {
            "schedule": schedule,
            "jobTemplate": {
                "metadata": object_meta(name, None, None),
                "spec": {
                    "template": {
                        "metadata": object_meta("", None, None),
                        "spec": {
                            "containers": [container(name, image, command)],
                            "restartPolicy": restart,
                        },
                    },
                },
            },
        },
        "status": {},
    })
}

/// `create job NAME --from=cronjob/<cj>`: the CronJob's job template with the
/// `cronjob.kubernetes.io/instantiate: manual` annotation and the CronJob as controller.
pub fn job_from_cronjob(name: &str, cronjob: &Value) -> Value {
    let template = cronjob
        .pointer("/spec/jobTemplate")
        .cloned()
        .unwrap_or(json!({}));
    let mut annotations = serde_json::Map::new();
    annotations.insert("cronjob.kubernetes.io/instantiate".into(), json!("manual"));
    if let Some(a) = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
    {
        for (k, v) in a {
            annotations.insert(k.clone(), v.clone());
        }
    }
    let mut meta = json!({
        "name": name,
        "creationTimestamp": null,
        "annotations": annotations,
        "ownerReferences": [{
            "apiVersion": "batch/v1",
            "kind": "CronJob",
            "name": cronjob.pointer("/metadata/name").cloned().unwrap_or(json!("")),
            "uid": cronjob.pointer("/metadata/uid").cloned().unwrap_or(json!("")),
            "controller": true,
        }],
    });
    if let Some(l) = template
        .pointer("/metadata/labels")
        .filter(|l| l.as_object().is_some_and(|m| !m.is_empty()))
    {
        meta["labels"] = l.clone();
    }
    json!({
        "kind": "Job",
        "apiVersion": "batch/v1",
        "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
        "status": {},
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]
    use super::*;

    #[test]
    fn deployment_as_kubectl() {
        let d = deployment("nginx", &["nginx".into()], 3, -1, &[]);
        assert_eq!(
            d,
            json!({"kind": "Deployment", "apiVersion": "apps/v1",
              "metadata": {"name": "nginx", "creationTimestamp": null, "labels": {"app": "nginx"}},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "nginx"}},
                "template": {"metadata": {"creationTimestamp": null, "labels": {"app": "nginx"}},
                  "spec": {"containers": [{"name": "nginx", "image": "nginx", "resources": {}}]}},
                "strategy": {}},
              "status": {}})
        );
        let d = deployment(
            "d2",
            &["nginx:1.2".into(), "foo/bar_baz@sha256:00".into()],
            1,
            80,
            &[],
        );
        let cs = d["spec"]["template"]["spec"]["containers"]
            .as_array()
            .unwrap();
        assert_eq!(cs[0]["name"], "nginx");
        assert_eq!(cs[0]["ports"], json!([{"containerPort": 80}]));
        let second = cs[1]["name"].as_str().unwrap();
        assert!(
            second.starts_with("bar-baz-") && second.len() == 13,
            "{second}"
        );
        assert!(cs[1].get("ports").is_none());
    }

    #[test]
    fn jobs_as_kubectl() {
        assert_eq!(
            job("j", "busybox", &["sleep".into(), "1".into()]),
            json!({"kind": "Job", "apiVersion": "batch/v1",
              "metadata": {"name": "j", "creationTimestamp": null},
              "spec": {"template": {"metadata": {"creationTimestamp": null},
                "spec": {"containers": [{"name": "j", "image": "busybox", "command": ["sleep", "1"], "resources": {}}],
                         "restartPolicy": "Never"}}},
              "status": {}})
        );
        let cj = cronjob("cj", "busybox", "*/1 * * * *", "", &["date".into()]);
        assert_eq!(
            cj,
            json!({"kind": "CronJob", "apiVersion": "batch/v1",
              "metadata": {"name": "cj", "creationTimestamp": null},
              "spec": {"schedule": "*/1 * * * *", "jobTemplate": {
                "metadata": {"name": "cj", "creationTimestamp": null},
                "spec": {"template": {"metadata": {"creationTimestamp": null},
                  "spec": {"containers": [{"name": "cj", "image": "busybox", "command": ["date"], "resources": {}}],
                           "restartPolicy": "OnFailure"}}}}},
              "status": {}})
        );
        let mut live = cj.clone();
        live["metadata"]["uid"] = json!("u-1");
        live["spec"]["jobTemplate"]["metadata"]["labels"] = json!({"l": "v"});
        let j = job_from_cronjob("manual-1", &live);
        assert_eq!(
            j["metadata"]["annotations"],
            json!({"cronjob.kubernetes.io/instantiate": "manual"})
        );
        assert_eq!(j["metadata"]["labels"], json!({"l": "v"}));
        assert_eq!(
            j["metadata"]["ownerReferences"],
            json!([{"apiVersion": "batch/v1", "kind": "CronJob", "name": "cj", "uid": "u-1", "controller": true}])
        );
        assert_eq!(j["spec"]["template"]["spec"]["restartPolicy"], "OnFailure");
    }
}
