//! `ServiceAccount` (upstream's `plugin/pkg/admission/serviceaccount`): every new pod runs
//! as a service account that exists (`default` unless it names one), gets the
//! `kube-api-access-<random>` projected volume (a bound token, the cluster CA and its
//! namespace) mounted read-only at `/var/run/secrets/kubernetes.io/serviceaccount` in every
//! container unless automounting is off, and inherits the account's `imagePullSecrets`
//! when it has none. Mirror pods (the kubelet's static pods) may reference no service
//! account, secret, config map or token projection. With the account annotation
//! `kubernetes.io/enforce-mountable-secrets: "true"`, pods may only use the secrets the
//! account lists.

use std::sync::Arc;
use std::time::Duration;

use api::ApiError;
use api::status::GroupResource;
use serde_json::{Value, json};

use crate::chain::forbidden;
use crate::{Attributes, Cluster, Operation, Plugin};

/// The account a pod without one runs as.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";
/// Where the token volume is mounted.
pub const TOKEN_MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// The prefix of the generated volume's name.
pub const VOLUME_PREFIX: &str = "kube-api-access-";
/// The lifetime asked for the projected token (upstream's
/// `WarnOnlyBoundTokenExpirationSeconds`: one hour and seven seconds).
pub const TOKEN_EXPIRATION_SECONDS: i64 = 3607;
/// The config map with the cluster's CA bundle (published in every namespace).
pub const ROOT_CA_CONFIG_MAP: &str = "kube-root-ca.crt";
const MIRROR_ANNOTATION: &str = "kubernetes.io/config.mirror";
const ENFORCE_ANNOTATION: &str = "kubernetes.io/enforce-mountable-secrets";

pub struct ServiceAccount {
    /// Lookups of the `default` account retry this many times (the ServiceAccount
    /// controller creates it just after the namespace); others are looked up once.
    pub default_attempts: u32,
    /// The pause between lookups (plus up to as much again of jitter).
    pub retry_interval: Duration,
}

impl Default for ServiceAccount {
    fn default() -> Self {
        ServiceAccount {
            default_attempts: 10,
            retry_interval: Duration::from_millis(100),
        }
    }
}

/// The projected volume every automounting pod gets (`TokenVolumeSource`).
pub fn token_volume(name: &str) -> Value {
    // Built once: a copy of a finished tree is several times cheaper than the macro's
    // build, and every pod created gets one.
    static VOLUME: std::sync::LazyLock<Value> = std::sync::LazyLock::new(|| {
        json!({
            "name": "",
            "projected": {
                "sources": [
                    {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
                    {"configMap": {"name": ROOT_CA_CONFIG_MAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                    {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
                ],
                "defaultMode": 420,
            },
        })
    });
    let mut volume = VOLUME.clone();
    volume["name"] = Value::String(name.to_string());
    volume
}

fn is_mirror(pod: &Value) -> bool {
    pod["metadata"]["annotations"]
        .get(MIRROR_ANNOTATION)
        .is_some()
}

fn service_account_name(pod: &Value) -> &str {
    pod["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or_default()
}

/// Pod's choice first, then the account's, then yes (`shouldAutomount`).
fn should_automount(sa: &Value, pod: &Value) -> bool {
    pod["spec"]["automountServiceAccountToken"]
        .as_bool()
        .or_else(|| sa["automountServiceAccountToken"].as_bool())
        .unwrap_or(true)
}

fn enforces_mountable_secrets(sa: &Value) -> bool {
    sa["metadata"]["annotations"][ENFORCE_ANNOTATION]
        .as_str()
        .is_some_and(|v| matches!(v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
}

fn names(list: &Value) -> Vec<&str> {
    list.as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["name"].as_str())
        .collect()
}

/// Adds the token volume and its mounts (`mountServiceAccountToken`); `suffix` is the
/// random part of a new volume's name.
pub fn mount_token(pod: &mut Value, suffix: &[u8]) {
    let existing = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|v| v["name"].as_str())
        .find(|n| n.starts_with(VOLUME_PREFIX))
        .map(str::to_string);
    let volume_name = existing
        .clone()
        .unwrap_or_else(|| api::meta::generated_name(VOLUME_PREFIX, suffix));
    let mount = json!({"name": volume_name, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH});
    let mut needs_volume = false;
    for kind in ["initContainers", "containers"] {
        let Some(containers) = pod["spec"][kind].as_array_mut() else {
            continue;
        };
        for c in containers {
            let mounted = c["volumeMounts"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|m| m["mountPath"].as_str() == Some(TOKEN_MOUNT_PATH));
            if mounted || !c.is_object() {
                continue;
            }
            match c["volumeMounts"].as_array_mut() {
                Some(mounts) => mounts.push(mount.clone()),
                None => c["volumeMounts"] = Value::Array(vec![mount.clone()]),
            }
            needs_volume = true;
        }
    }
    if needs_volume && existing.is_none() {
        let volume = token_volume(&volume_name);
        match pod["spec"]["volumes"].as_array_mut() {
            Some(volumes) => volumes.push(volume),
            None => pod["spec"]["volumes"] = Value::Array(vec![volume]),
        }
    }
}

/// The first reference to a secret the account does not list (`limitSecretReferences`).
fn unlisted_secret(sa: &Value, pod: &Value, ephemeral_only: bool) -> Option<String> {
    let sa_name = api::meta::name(sa).unwrap_or_default();
    let mountable = names(&sa["secrets"]);
    let spec = &pod["spec"];
    if !ephemeral_only {
        for v in spec["volumes"].as_array().into_iter().flatten() {
            if let Some(secret) = v["secret"]["secretName"].as_str()
                && !mountable.contains(&secret)
            {
                return Some(format!(
                    "volume with secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
                ));
            }
        }
    }
    let kinds: &[(&str, &str)] = if ephemeral_only {
        &[("ephemeralContainers", "ephemeral container")]
    } else {
        &[
            ("initContainers", "init container"),
            ("containers", "container"),
        ]
    };
    for (key, what) in kinds {
        for c in spec[*key].as_array().into_iter().flatten() {
            let cname = c["name"].as_str().unwrap_or_default();
            for e in c["env"].as_array().into_iter().flatten() {
                if let Some(secret) = e["valueFrom"]["secretKeyRef"]["name"].as_str()
                    && !mountable.contains(&secret)
                {
                    let env = e["name"].as_str().unwrap_or_default();
                    return Some(format!(
                        "{what} {cname} with envVar {env} referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
                    ));
                }
            }
            for e in c["envFrom"].as_array().into_iter().flatten() {
                if let Some(secret) = e["secretRef"]["name"].as_str()
                    && !mountable.contains(&secret)
                {
                    return Some(format!(
                        "{what} {cname} with envFrom referencing secret.secretName=\"{secret}\" is not allowed because service account {sa_name} does not reference that secret"
                    ));
                }
            }
        }
    }
    if !ephemeral_only {
        let pull = names(&sa["imagePullSecrets"]);
        for (i, name) in names(&spec["imagePullSecrets"]).iter().enumerate() {
            if !pull.contains(name) {
                return Some(format!(
                    "imagePullSecrets[{i}].name=\"{name}\" is not allowed because service account {sa_name} does not reference that imagePullSecret"
                ));
            }
        }
    }
    None
}

/// Why a mirror pod is refused, if it is.
fn mirror_violation(pod: &Value) -> Option<&'static str> {
    if !service_account_name(pod).is_empty() {
        return Some("a mirror pod may not reference service accounts");
    }
    let refs = auth::node::pod_refs(pod);
    if !refs.secrets.is_empty() {
        return Some("a mirror pod may not reference secrets");
    }
    if !refs.config_maps.is_empty() {
        return Some("a mirror pod may not reference configmaps");
    }
    let projects_token = pod["spec"]["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|v| v["projected"]["sources"].as_array().into_iter().flatten())
        .any(|s| s.get("serviceAccountToken").is_some_and(|t| !t.is_null()));
    projects_token.then_some("a mirror pod may not use ServiceAccountToken volume projections")
}

impl ServiceAccount {
    /// The account, looked up again a few times when it is the `default` one and not there
    /// yet (`getServiceAccount`).
    async fn account(
        &self,
        a: &Attributes,
        cluster: &dyn Cluster,
        name: &str,
    ) -> Result<Arc<Value>, ApiError> {
        let attempts = if name == DEFAULT_SERVICE_ACCOUNT {
            self.default_attempts.max(1)
        } else {
            1
        };
        let jitter = self
            .retry_interval
            .mul_f64(f64::from(uuid::Uuid::new_v4().as_bytes()[0]) / 255.0);
        for attempt in 0..attempts {
            if attempt > 0 {
                tokio::time::sleep(self.retry_interval + jitter).await;
            }
            match cluster.get("", "serviceaccounts", &a.namespace, name).await {
                Ok(Some(sa)) => return Ok(sa),
                Ok(None) => {}
                Err(e) => return Err(lookup_error(a, name, &e.message)),
            }
        }
        let not_found = ApiError::not_found(
            GroupResource {
                group: "",
                resource: "serviceaccount",
            },
            name,
        );
        Err(lookup_error(a, name, &not_found.message))
    }
}

fn lookup_error(a: &Attributes, name: &str, why: &str) -> ApiError {
    forbidden(
        a,
        format!(
            "error looking up service account {}/{name}: {why}",
            a.namespace
        ),
    )
}

/// Upstream's `shouldIgnore`: pods and their `ephemeralcontainers` only.
fn ignored(a: &Attributes) -> bool {
    !a.is("", "pods") || !matches!(a.subresource.as_str(), "" | "ephemeralcontainers")
}

#[async_trait::async_trait]
impl Plugin for ServiceAccount {
    fn name(&self) -> &'static str {
        "ServiceAccount"
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
        if ignored(a) || a.operation != Operation::Create {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        if is_mirror(pod) || !pod["spec"].is_object() {
            return Ok(());
        }
        let name = match service_account_name(pod) {
            "" => DEFAULT_SERVICE_ACCOUNT.to_string(),
            n => n.to_string(),
        };
        let sa = self.account(a, cluster, &name).await?;
        let Some(pod) = a.object.as_mut() else {
            return Ok(());
        };
        pod["spec"]["serviceAccountName"] = json!(name);
        if should_automount(&sa, pod) {
            mount_token(pod, uuid::Uuid::new_v4().as_bytes());
        }
        let has_pull_secrets = pod["spec"]["imagePullSecrets"]
            .as_array()
            .is_some_and(|l| !l.is_empty());
        if !has_pull_secrets
            && let Some(list) = sa["imagePullSecrets"].as_array()
            && !list.is_empty()
        {
            pod["spec"]["imagePullSecrets"] = Value::Array(list.clone());
        }
        Ok(())
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if ignored(a) {
            return Ok(());
        }
        let Some(pod) = a.object.as_ref() else {
            return Ok(());
        };
        let ephemeral = a.operation == Operation::Update && a.subresource == "ephemeralcontainers";
        if ephemeral {
            let name = service_account_name(pod);
            if name.is_empty() {
                return Ok(());
            }
            let sa = self.account(a, cluster, name).await?;
            if enforces_mountable_secrets(&sa)
                && let Some(why) = unlisted_secret(&sa, pod, true)
            {
                return Err(forbidden(a, &why));
            }
            return Ok(());
        }
        if a.operation != Operation::Create {
            return Ok(());
        }
        if is_mirror(pod) {
            return match mirror_violation(pod) {
                Some(why) => Err(forbidden(a, why)),
                None => Ok(()),
            };
        }
        let name = service_account_name(pod);
        if name.is_empty() {
            return Err(forbidden(
                a,
                format!(
                    "no service account specified for pod {}/{}",
                    a.namespace, a.name
                ),
            ));
        }
        let sa = self.account(a, cluster, name).await?;
        if enforces_mountable_secrets(&sa)
            && let Some(why) = unlisted_secret(&sa, pod, false)
        {
            return Err(forbidden(a, &why));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fake::FakeCluster;
    use crate::plugins::tests::pod_create;

    fn plugin() -> ServiceAccount {
        ServiceAccount {
            default_attempts: 2,
            retry_interval: Duration::from_millis(1),
        }
    }

    fn cluster_with(sa: Value) -> FakeCluster {
        let c = FakeCluster::new();
        c.put("", "serviceaccounts", sa);
        c
    }

    fn pod(spec: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns"}, "spec": spec})
    }

    async fn admit(p: &ServiceAccount, c: &FakeCluster, pod: Value) -> Result<Value, ApiError> {
        let mut a = pod_create("ns", pod);
        p.admit(&mut a, c).await?;
        p.validate(&a, c).await?;
        Ok(a.object.unwrap_or_default())
    }

    #[tokio::test]
    async fn default_account_token_volume_and_mounts() {
        let c = cluster_with(json!({"metadata": {"name": "default", "namespace": "ns"}}));
        let out = admit(
            &plugin(),
            &c,
            pod(json!({
                "initContainers": [{"name": "i", "image": "x"}],
                "containers": [
                    {"name": "a", "image": "x", "volumeMounts": [{"name": "d", "mountPath": "/d"}]},
                    {"name": "b", "image": "x", "volumeMounts": [{"name": "own", "mountPath": TOKEN_MOUNT_PATH}]},
                ],
            })),
        )
        .await
        .unwrap();
        assert_eq!(out["spec"]["serviceAccountName"], "default");
        let volumes = out["spec"]["volumes"].as_array().unwrap();
        assert_eq!(volumes.len(), 1);
        let vname = volumes[0]["name"].as_str().unwrap();
        assert!(vname.starts_with(VOLUME_PREFIX) && vname.len() == VOLUME_PREFIX.len() + 5);
        assert_eq!(volumes[0], token_volume(vname));
        let mounts = |k: &str, i: usize| out["spec"][k][i]["volumeMounts"].clone();
        assert_eq!(
            mounts("initContainers", 0),
            json!([{"name": vname, "readOnly": true, "mountPath": TOKEN_MOUNT_PATH}])
        );
        assert_eq!(mounts("containers", 0).as_array().unwrap().len(), 2);
        assert_eq!(
            mounts("containers", 1),
            json!([{"name": "own", "mountPath": TOKEN_MOUNT_PATH}])
        );
    }

    #[tokio::test]
    async fn automount_choices_and_pull_secrets() {
        let c = cluster_with(json!({
            "metadata": {"name": "robot", "namespace": "ns"},
            "automountServiceAccountToken": false,
            "imagePullSecrets": [{"name": "regcred"}],
        }));
        let p = plugin();
        let spec =
            json!({"serviceAccountName": "robot", "containers": [{"name": "a", "image": "x"}]});
        let out = admit(&p, &c, pod(spec.clone())).await.unwrap();
        assert!(out["spec"]["volumes"].is_null());
        assert_eq!(
            out["spec"]["imagePullSecrets"],
            json!([{"name": "regcred"}])
        );
        // The pod's own choice wins over the account's, and its own pull secrets stay.
        let mut spec2 = spec;
        spec2["automountServiceAccountToken"] = json!(true);
        spec2["imagePullSecrets"] = json!([{"name": "mine"}]);
        let out = admit(&p, &c, pod(spec2)).await.unwrap();
        assert_eq!(out["spec"]["volumes"].as_array().unwrap().len(), 1);
        assert_eq!(out["spec"]["imagePullSecrets"], json!([{"name": "mine"}]));
    }

    #[tokio::test]
    async fn missing_account_is_forbidden_with_upstreams_message() {
        let c = FakeCluster::new();
        let e = admit(
            &plugin(),
            &c,
            pod(json!({"containers": [{"name": "a", "image": "x"}]})),
        )
        .await
        .unwrap_err();
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: error looking up service account ns/default: serviceaccount \"default\" not found"
        );
    }

    #[tokio::test]
    async fn mirror_pods_reference_nothing() {
        let c = FakeCluster::new();
        let p = plugin();
        let mirror = |spec: Value| json!({"metadata": {"name": "p", "annotations": {MIRROR_ANNOTATION: "x"}}, "spec": spec});
        let ok = admit(
            &p,
            &c,
            mirror(json!({"containers": [{"name": "a", "image": "x"}]})),
        )
        .await
        .unwrap();
        assert!(ok["spec"]["serviceAccountName"].is_null());
        for (spec, why) in [
            (
                json!({"serviceAccountName": "x", "containers": []}),
                "service accounts",
            ),
            (
                json!({"volumes": [{"name": "s", "secret": {"secretName": "s"}}]}),
                "secrets",
            ),
            (
                json!({"containers": [{"name": "a", "envFrom": [{"configMapRef": {"name": "c"}}]}]}),
                "configmaps",
            ),
            (
                json!({"volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]}),
                "ServiceAccountToken",
            ),
        ] {
            let e = admit(&p, &c, mirror(spec)).await.unwrap_err();
            assert!(e.message.contains(why), "{}", e.message);
        }
    }

    #[tokio::test]
    async fn enforced_mountable_secrets() {
        let c = cluster_with(json!({
            "metadata": {"name": "default", "namespace": "ns",
                         "annotations": {ENFORCE_ANNOTATION: "true"}},
            "secrets": [{"name": "ok"}],
        }));
        let p = plugin();
        let allowed = pod(json!({
            "containers": [{"name": "a", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "ok", "key": "k"}}}]}],
            "volumes": [{"name": "v", "secret": {"secretName": "ok"}}],
        }));
        admit(&p, &c, allowed).await.unwrap();
        let e = admit(
            &p,
            &c,
            pod(json!({"containers": [{"name": "a", "env": [{"name": "E", "valueFrom": {"secretKeyRef": {"name": "no", "key": "k"}}}]}]})),
        )
        .await
        .unwrap_err();
        assert_eq!(
            e.message,
            "pods \"p\" is forbidden: container a with envVar E referencing secret.secretName=\"no\" is not allowed because service account default does not reference that secret"
        );
        let e = admit(
            &p,
            &c,
            pod(json!({"containers": [], "imagePullSecrets": [{"name": "pull"}]})),
        )
        .await
        .unwrap_err();
        assert!(e.message.contains("imagePullSecrets[0].name=\"pull\""));
    }
}
