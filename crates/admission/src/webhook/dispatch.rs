//! The two plugins: calling the matching webhooks (upstream's `mutating/dispatcher.go`
//! and `validating/dispatcher.go`).

use std::collections::HashSet;
use std::sync::Arc;

use api::ApiError;
use serde_json::Value;

use super::config::{Client, Hook, Source};
use super::matching::{NamespaceLabels, is_exempt, should_call};
use super::review::{self, Answer, calling_error, internal_error, rejection};
use super::{Endpoint, Transport};
use crate::{Attributes, Cluster, Operation, Plugin};

/// Why a call did not produce an answer.
enum CallError {
    /// `ErrCallingWebhook`: the webhook could not be called or answered nonsense; the
    /// webhook's `failurePolicy` decides.
    Calling(String),
    /// An error returned as is, whatever the failure policy.
    Status(ApiError),
}

/// `https://<service>.<namespace>.svc:<port><path>`, connected to an address of the
/// service's Endpoints, else its ClusterIP (or external name).
async fn resolve_service(
    cluster: &dyn Cluster,
    namespace: &str,
    name: &str,
    port: u16,
) -> Result<String, String> {
    let svc = cluster
        .get("", "services", namespace, name)
        .await
        .map_err(|e| e.message)?
        .ok_or_else(|| format!("service {name:?} not found"))?;
    let spec = &svc["spec"];
    let svc_port = spec["ports"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["port"].as_u64() == Some(u64::from(port)))
        .ok_or_else(|| format!("no service port {port} found for service {name:?}"))?;
    let port_name = svc_port["name"].as_str().unwrap_or("");
    if let Some(eps) = cluster
        .get("", "endpoints", namespace, name)
        .await
        .ok()
        .flatten()
    {
        for subset in eps["subsets"].as_array().into_iter().flatten() {
            let ep_port = subset["ports"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|p| p["name"].as_str().unwrap_or("") == port_name)
                .and_then(|p| p["port"].as_u64());
            let addr = subset["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .find_map(|a| a["ip"].as_str());
            if let (Some(ip), Some(p)) = (addr, ep_port) {
                return Ok(join_host_port(ip, p));
            }
        }
    }
    let ty = spec["type"].as_str().unwrap_or("ClusterIP");
    match ty {
        "ExternalName" => Ok(join_host_port(
            spec["externalName"].as_str().unwrap_or(""),
            u64::from(port),
        )),
        "ClusterIP" | "NodePort" | "LoadBalancer" => match spec["clusterIP"].as_str() {
            Some(ip) if !ip.is_empty() && ip != "None" => Ok(join_host_port(ip, u64::from(port))),
            _ => Err(r#"cannot route to service with ClusterIP "None""#.to_string()),
        },
        other => Err(format!("unsupported service type {other:?}")),
    }
}

fn join_host_port(host: &str, port: u64) -> String {
    if host.contains(':') {
        format!("[{host}]:{port}")
    } else {
        format!("{host}:{port}")
    }
}

/// Where `hook` is called: its URL with `?timeout=`, and for a service the resolved
/// address. The error is worded as Go's client words a dial failure.
async fn endpoint(hook: &Hook, cluster: &dyn Cluster) -> Result<Endpoint, String> {
    let timeout = format!("?timeout={}s", hook.timeout.as_secs());
    match &hook.client {
        Client::Url(url) => {
            let has_path = url
                .split_once("://")
                .is_some_and(|(_, rest)| rest.contains('/'));
            let url = if has_path {
                format!("{url}{timeout}")
            } else {
                format!("{url}/{timeout}")
            };
            Ok(Endpoint {
                url,
                connect: None,
                ca_bundle: hook.ca_bundle.clone(),
            })
        }
        Client::Service {
            namespace,
            name,
            path,
            port,
        } => {
            let path = if path.is_empty() { "/" } else { path };
            let url = format!("https://{name}.{namespace}.svc:{port}{path}{timeout}");
            let connect = resolve_service(cluster, namespace, name, *port)
                .await
                .map_err(|e| format!("Post {url:?}: {e}"))?;
            Ok(Endpoint {
                url,
                connect: Some(connect),
                ca_bundle: hook.ca_bundle.clone(),
            })
        }
    }
}

/// One call of `hook` about `a`: the checks before it, the request, the checks on the
/// answer.
async fn call(
    transport: &dyn Transport,
    hook: &Hook,
    a: &Attributes,
    cluster: &dyn Cluster,
    mutating: bool,
) -> Result<Answer, CallError> {
    let failed = |reason: String| CallError::Calling(calling_error(&hook.name, &reason));
    if a.dry_run {
        match hook.side_effects.as_deref() {
            None => return Err(failed("Webhook SideEffects is nil".into())),
            Some("None" | "NoneOnDryRun") => {}
            Some(_) => return Err(CallError::Status(review::dry_run_unsupported(&hook.name))),
        }
    }
    let Some(version) = hook
        .review_versions
        .iter()
        .find(|v| review::VERSIONS.contains(&v.as_str()))
    else {
        return Err(failed(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
        ));
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let body = serde_json::to_vec(&review::request(&uid, version, a))
        .map_err(|e| failed(format!("could not create admission objects: {e}")))?;
    let target = endpoint(hook, cluster)
        .await
        .map_err(|e| failed(format!("failed to call webhook: {e}")))?;
    let resp = transport
        .post(&target, body, hook.timeout)
        .await
        .map_err(|e| failed(format!("failed to call webhook: {e}")))?;
    if !(200..=206).contains(&resp.status) {
        return Err(failed(format!(
            "failed to call webhook: {}",
            review::unexpected_response(resp.status, &resp.body)
        )));
    }
    let answer: Value = serde_json::from_slice(&resp.body).map_err(|e| {
        failed(format!(
            "failed to call webhook: couldn't get version/kind; json parse error: {e}"
        ))
    })?;
    review::verify(&uid, version, mutating, &answer)
        .map_err(|e| failed(format!("received invalid webhook response: {e}")))
}

/// Passes a webhook's warnings to the client and its audit annotations (as
/// `<webhook name>/<key>`, upstream's naming) to the audit event.
fn record_answer(hook: &Hook, answer: &Answer, a: &Attributes) {
    for w in &answer.warnings {
        a.warnings.add(w.clone());
    }
    for (k, v) in &answer.audit_annotations {
        let key = format!("{}/{k}", hook.name);
        if !api::validation::names::is_qualified_name(&key).is_empty() {
            tracing::warn!(webhook = %hook.name, key = %k, "admission webhook audit annotation with an invalid key dropped");
            continue;
        }
        a.audit_annotations.add(
            key,
            v.as_str().map_or_else(|| v.to_string(), str::to_string),
        );
    }
}

/// `MutatingAdmissionWebhook`.
pub struct MutatingWebhook {
    source: Source,
    transport: Arc<dyn Transport>,
}

/// The reinvocation bookkeeping of one request (`webhookReinvokeContext`).
#[derive(Default)]
struct Reinvocation {
    /// `IfNeeded` webhooks invoked since the last change.
    previously_invoked: HashSet<String>,
    /// Webhooks to call again in the second round.
    reinvoke: HashSet<String>,
    /// Some webhook changed the object.
    should_reinvoke: bool,
}

impl Reinvocation {
    fn require_reinvoking_previously_invoked(&mut self) {
        self.reinvoke.extend(self.previously_invoked.drain());
    }
}

impl MutatingWebhook {
    pub fn new(transport: Arc<dyn Transport>) -> MutatingWebhook {
        MutatingWebhook {
            source: Source::new(true),
            transport,
        }
    }

    /// Calls a mutating webhook and applies its patch: whether the object changed.
    async fn call_and_patch(
        &self,
        hook: &Hook,
        a: &mut Attributes,
        cluster: &dyn Cluster,
    ) -> Result<bool, CallError> {
        let answer = call(self.transport.as_ref(), hook, a, cluster, true).await?;
        record_answer(hook, &answer, a);
        if !answer.allowed {
            return Err(CallError::Status(rejection(
                &hook.name,
                answer.result.as_ref(),
            )));
        }
        if answer.patch.is_empty() {
            return Ok(false);
        }
        let failed = |reason: String| CallError::Calling(calling_error(&hook.name, &reason));
        let ops: Value = serde_json::from_slice(&answer.patch).map_err(|e| {
            failed(format!(
                "received undecodable patch in webhook response: {e}"
            ))
        })?;
        let Some(list) = ops.as_array() else {
            return Err(failed(format!(
                "received undecodable patch in webhook response: json: cannot unmarshal {} into Go value of type jsonpatch.Patch",
                go_kind(&ops)
            )));
        };
        if list.is_empty() {
            return Ok(false);
        }
        let Some(object) = a.object.as_ref() else {
            return Err(CallError::Status(internal_error(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ))));
        };
        if answer.patch_type != "JSONPatch" {
            return Err(failed(format!(
                "unsupported patch type {:?}",
                answer.patch_type
            )));
        }
        let limits = patch::JsonPatchLimits {
            max_operations: usize::MAX,
            ..Default::default()
        };
        let patched = patch::json_patch_with_limits(object, &ops, limits)
            .map_err(|e| CallError::Status(internal_error(&e.to_string())))?;
        let patched = normalize(a, patched).map_err(CallError::Status)?;
        let changed = Some(&patched) != a.object.as_ref();
        a.object = Some(patched);
        Ok(changed)
    }

    async fn round(
        &self,
        round: usize,
        hooks: &[Hook],
        a: &mut Attributes,
        cluster: &dyn Cluster,
        ctx: &mut Reinvocation,
    ) -> Result<(), ApiError> {
        let mut namespace = NamespaceLabels::default();
        for hook in hooks {
            if !should_call(hook, a, cluster, &mut namespace).await? {
                continue;
            }
            // A webhook is never called for the first time in the second round.
            if round == 1 && !ctx.reinvoke.contains(&hook.uid) {
                continue;
            }
            let result = self.call_and_patch(hook, a, cluster).await;
            if matches!(result, Ok(true)) {
                ctx.require_reinvoking_previously_invoked();
                ctx.should_reinvoke = true;
            }
            if hook.reinvoke_if_needed {
                ctx.previously_invoked.insert(hook.uid.clone());
            }
            match result {
                Ok(_) => {}
                Err(CallError::Calling(msg)) if hook.ignore_failures => {
                    tracing::warn!(webhook = %hook.name, error = %msg, "failed calling webhook, failing open");
                }
                Err(CallError::Calling(msg)) => {
                    tracing::warn!(webhook = %hook.name, error = %msg, "failed calling webhook, failing closed");
                    return Err(internal_error(&msg));
                }
                Err(CallError::Status(e)) => return Err(e),
            }
        }
        Ok(())
    }
}

/// Go's name of a JSON value's kind in `json: cannot unmarshal <kind> into ...`.
fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
    }
}

/// A patched built-in object decoded through its type (unknown fields dropped) and
/// defaulted again, as upstream decodes and defaults the patched versioned object;
/// custom resources stay as patched.
fn normalize(a: &Attributes, mut patched: Value) -> Result<Value, ApiError> {
    let k = &a.kind;
    if !api::kinds::is_builtin(&k.group, &k.version, &k.kind) {
        return Ok(patched);
    }
    // `metadata.initializers` is not in the typed ObjectMeta; it survives as it was.
    let initializers = patched
        .get_mut("metadata")
        .and_then(Value::as_object_mut)
        .and_then(|m| m.remove("initializers"));
    let decoded = match api::kinds::decode(&k.group, &k.version, &k.kind, &patched) {
        Some(Ok(d)) => d.object,
        Some(Err(e)) => return Err(internal_error(&e.to_string())),
        None => patched,
    };
    let mut object = decoded;
    api::kinds::apply_defaults(&k.group, &k.version, &k.kind, &mut object);
    if let Some(i) = initializers
        && let Some(m) = object.get_mut("metadata").and_then(Value::as_object_mut)
    {
        m.insert("initializers".into(), i);
    }
    Ok(object)
}

#[async_trait::async_trait]
impl Plugin for MutatingWebhook {
    fn name(&self) -> &'static str {
        "MutatingAdmissionWebhook"
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    fn mutating(&self) -> bool {
        true
    }

    async fn admit(&self, a: &mut Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if is_exempt(a) {
            return Ok(());
        }
        let hooks = self.source.hooks(cluster).await?;
        if hooks.is_empty() {
            return Ok(());
        }
        let mut ctx = Reinvocation::default();
        self.round(0, &hooks, a, cluster, &mut ctx).await?;
        if ctx.should_reinvoke && !ctx.reinvoke.is_empty() {
            self.round(1, &hooks, a, cluster, &mut ctx).await?;
        }
        Ok(())
    }
}

/// `ValidatingAdmissionWebhook`.
pub struct ValidatingWebhook {
    source: Source,
    transport: Arc<dyn Transport>,
}

impl ValidatingWebhook {
    pub fn new(transport: Arc<dyn Transport>) -> ValidatingWebhook {
        ValidatingWebhook {
            source: Source::new(false),
            transport,
        }
    }
}

#[async_trait::async_trait]
impl Plugin for ValidatingWebhook {
    fn name(&self) -> &'static str {
        "ValidatingAdmissionWebhook"
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    fn validating(&self) -> bool {
        true
    }

    async fn validate(&self, a: &Attributes, cluster: &dyn Cluster) -> Result<(), ApiError> {
        if is_exempt(a) {
            return Ok(());
        }
        let hooks = self.source.hooks(cluster).await?;
        let mut namespace = NamespaceLabels::default();
        let mut relevant = Vec::new();
        for hook in hooks.iter() {
            if should_call(hook, a, cluster, &mut namespace).await? {
                relevant.push(hook);
            }
        }
        let calls = relevant.iter().map(|hook| async move {
            (
                *hook,
                call(self.transport.as_ref(), hook, a, cluster, false).await,
            )
        });
        let mut first_error = None;
        for (hook, result) in futures::future::join_all(calls).await {
            let err = match result {
                Ok(answer) => {
                    record_answer(hook, &answer, a);
                    if answer.allowed {
                        continue;
                    }
                    rejection(&hook.name, answer.result.as_ref())
                }
                Err(CallError::Calling(msg)) if hook.ignore_failures => {
                    tracing::warn!(webhook = %hook.name, error = %msg, "failed calling webhook, failing open");
                    continue;
                }
                Err(CallError::Calling(msg)) => {
                    tracing::warn!(webhook = %hook.name, error = %msg, "failed calling webhook, failing closed");
                    internal_error(&msg)
                }
                Err(CallError::Status(e)) => e,
            };
            tracing::debug!(webhook = %hook.name, error = %err.message, "rejected by webhook");
            first_error.get_or_insert(err);
        }
        first_error.map_or(Ok(()), Err)
    }
}
