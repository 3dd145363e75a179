//! `TokenRequest`: `POST .../serviceaccounts/<name>/token` issues a bound token for the
//! service account (upstream's `TokenREST.Create`).

use std::sync::Arc;

use admission::Operation;
use api::status::GroupResource;
use api::{ApiError, FieldError};
use serde_json::{Value, json};

use super::Tokens;
use super::jwt::{
    BoundToken, EXPIRATION_EXTENSION_SECONDS, WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS,
};
use crate::registry::{AdmissionWrite, FieldValidation, Registry, Resource, WriteOptions};

const GROUP: &str = "authentication.k8s.io";
const KIND: &str = "TokenRequest";
const API_VERSION: &str = "authentication.k8s.io/v1";

/// `spec.expirationSeconds` when the request has none (`SetDefaults_TokenRequestSpec`).
const DEFAULT_EXPIRATION_SECONDS: i64 = 60 * 60;
/// The shortest validity a token may be requested for.
const MIN_EXPIRATION_SECONDS: i64 = 10 * 60;

fn invalid(name: &str, errs: &[FieldError]) -> ApiError {
    ApiError::invalid(GROUP, KIND, name, errs)
}

/// Decodes the body as a `TokenRequest` (unknown fields per `fieldValidation`) and applies
/// upstream's defaulting.
fn decode(body: &Value, fv: FieldValidation) -> Result<(Value, Vec<String>), ApiError> {
    if let Some(kind) = body.get("kind").and_then(Value::as_str)
        && !kind.is_empty()
        && kind != KIND
    {
        return Err(ApiError::bad_request(format!(
            "the body of a token request must be a {KIND}, not a {kind}"
        )));
    }
    // The status is the server's (clients send `expirationTimestamp: null`).
    let mut body = body.clone();
    if let Some(m) = body.as_object_mut() {
        m.remove("status");
    }
    let decoded = match api::kinds::decode(GROUP, "v1", KIND, &body) {
        Some(Ok(d)) => d,
        Some(Err(e)) => return Err(ApiError::bad_request(e.to_string())),
        None => api::kinds::Decoded {
            object: body,
            unknown_fields: Vec::new(),
        },
    };
    let warnings = fv.unknown_fields(
        &decoded.unknown_fields,
        &format!("{KIND} in version \"v1\" cannot be handled as a {KIND}: "),
    )?;
    let mut req = decoded.object;
    if !req.is_object() {
        return Err(ApiError::bad_request(
            "the body of a token request must be an object",
        ));
    }
    if !req["spec"].is_object() {
        req["spec"] = json!({});
    }
    if req["spec"]["expirationSeconds"].is_null() {
        req["spec"]["expirationSeconds"] = json!(DEFAULT_EXPIRATION_SECONDS);
    }
    req["apiVersion"] = json!(API_VERSION);
    req["kind"] = json!(KIND);
    Ok((req, warnings))
}

fn string_list(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Go's `GroupVersionKind.String()` of an `apiVersion` and a kind.
fn gvk_string(api_version: &str, kind: &str) -> String {
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    format!("{group}/{version}, Kind={kind}")
}

impl Tokens {
    /// Issues the token a `TokenRequest` asks for: the response object and its warnings.
    pub async fn request(
        &self,
        registry: &Registry,
        service_accounts: &Arc<Resource>,
        namespace: &str,
        name: &str,
        body: Value,
        opts: &WriteOptions,
    ) -> Result<(Value, Vec<String>), ApiError> {
        let (req, mut warnings) = decode(&body, opts.field_validation)?;
        // Mutating admission sees the decoded, defaulted request.
        let write = |object: Value| AdmissionWrite {
            operation: Operation::Create,
            subresource: Some("token"),
            namespace,
            name,
            object: Some(object),
            old_object: None,
        };
        let mut req = registry
            .admit(service_accounts, write(req.clone()), opts)
            .await?
            .unwrap_or(req);

        // The body's name and namespace, when set, must be the URL's.
        let meta_name = api::meta::name(&req).unwrap_or_default().to_string();
        if !meta_name.is_empty() && meta_name != name {
            return Err(invalid(
                name,
                &[FieldError::invalid(
                    "metadata.name",
                    meta_name,
                    "must match the service account name if specified",
                )],
            ));
        }
        let meta_namespace = api::meta::namespace(&req).unwrap_or_default().to_string();
        if !meta_namespace.is_empty() && meta_namespace != namespace {
            return Err(invalid(
                name,
                &[FieldError::invalid(
                    "metadata.namespace",
                    meta_namespace,
                    "must match the service account namespace if specified",
                )],
            ));
        }

        let sa = registry
            .get(service_accounts, Some(namespace), name)
            .await?;
        let sa_uid = api::meta::uid(&sa).unwrap_or_default().to_string();

        let mut audiences = string_list(&req["spec"]["audiences"]);
        if audiences.is_empty() {
            audiences = self.audiences().to_vec();
        }
        req["spec"]["audiences"] = json!(audiences);
        // Saved before the token is built: the returned expiration is never after `exp`.
        let now_ms = registry.clock.now_ms();
        {
            let m = api::meta::metadata_mut(&mut req);
            m.insert("name".into(), json!(name));
            m.insert("namespace".into(), json!(namespace));
            m.insert(
                "creationTimestamp".into(),
                json!(crate::registry::rfc3339(now_ms)),
            );
        }
        if let Some(m) = req.as_object_mut() {
            m.remove("status");
        }

        let requested = req["spec"]["expirationSeconds"].as_i64().unwrap_or(0);
        let mut errs = Vec::new();
        if requested < MIN_EXPIRATION_SECONDS {
            errs.push(FieldError::invalid(
                "spec.expirationSeconds",
                requested,
                "may not specify a duration less than 10 minutes",
            ));
        }
        if requested > 1 << 32 {
            errs.push(FieldError::too_long("spec.expirationSeconds", 1 << 32));
        }
        if !errs.is_empty() {
            return Err(invalid("", &errs));
        }
        registry
            .validate_admission(service_accounts, write(req.clone()), opts)
            .await?;

        let bound = self
            .bound_objects(registry, namespace, name, &req["spec"]["boundObjectRef"])
            .await?;

        let mut expiration = requested;
        if self.max_expiration_seconds > 0 && expiration > self.max_expiration_seconds {
            warnings.push(format!(
                "requested expiration of {expiration} seconds shortened to {} seconds",
                self.max_expiration_seconds
            ));
            expiration = self.max_expiration_seconds;
            req["spec"]["expirationSeconds"] = json!(expiration);
        }
        // The safe transition of projected tokens: a pod-bound token for the API server
        // asked for with kubelet's 1 h 7 s is valid a year, stale after the 1 h 7 s.
        let mut exp = expiration;
        let mut warn_after = 0;
        let for_api_server = audiences
            .iter()
            .all(|a| self.audiences().iter().any(|b| a == b));
        if self.extend_expiration
            && bound.pod.is_some()
            && expiration == WARN_ONLY_BOUND_TOKEN_EXPIRATION_SECONDS
            && for_api_server
        {
            warn_after = expiration;
            exp = EXPIRATION_EXTENSION_SECONDS;
        }

        let now = now_ms.div_euclid(1000);
        let id = uuid::Uuid::new_v4().to_string();
        let claims = BoundToken {
            issuer: self.issuer(),
            namespace,
            service_account: (name, &sa_uid),
            audiences: &audiences,
            now,
            expiration_seconds: exp,
            warn_after,
            pod: pair(&bound.pod),
            secret: pair(&bound.secret),
            node: pair(&bound.node),
            id: &id,
        }
        .claims();
        let token = self
            .sign(&claims)
            .map_err(|e| ApiError::internal(format!("failed to generate token: {e}")))?;
        req["status"] = json!({
            "token": token,
            "expirationTimestamp": crate::registry::rfc3339(now_ms + expiration * 1000),
        });
        tracing::debug!(
            namespace,
            service_account = name,
            jti = %id,
            "issued a service account token"
        );
        Ok((req, warnings))
    }

    /// The objects `spec.boundObjectRef` binds the token to, checked as upstream does.
    async fn bound_objects(
        &self,
        registry: &Registry,
        namespace: &str,
        sa_name: &str,
        reference: &Value,
    ) -> Result<Bound, ApiError> {
        let mut bound = Bound::default();
        if !reference.is_object() {
            return Ok(bound);
        }
        let api_version = reference["apiVersion"].as_str().unwrap_or_default();
        let kind = reference["kind"].as_str().unwrap_or_default();
        let ref_name = reference["name"].as_str().unwrap_or_default();
        let ref_uid = reference["uid"].as_str().unwrap_or_default();
        let group = api_version.rsplit_once('/').map_or("", |(g, _)| g);
        let resource = |plural: &str| {
            registry
                .lookup("", "v1", plural)
                .ok_or_else(|| ApiError::internal(format!("no {plural} resource")))
        };
        let uid = match (group, kind) {
            ("", "Pod") => {
                let pods = resource("pods")?;
                let pod = registry.get(&pods, Some(namespace), ref_name).await?;
                if pod["spec"]["serviceAccountName"]
                    .as_str()
                    .unwrap_or_default()
                    != sa_name
                {
                    return Err(ApiError::bad_request(format!(
                        "cannot bind token for serviceaccount {sa_name:?} to pod running with different serviceaccount name."
                    )));
                }
                let uid = api::meta::uid(&pod).unwrap_or_default().to_string();
                // The pod's node goes in the claims too (only its name when it is gone).
                if let Some(node_name) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty())
                {
                    let nodes = resource("nodes")?;
                    let node_uid = match registry.get(&nodes, None, node_name).await {
                        Ok(node) => api::meta::uid(&node).unwrap_or_default().to_string(),
                        Err(e) if e.code == 404 => String::new(),
                        Err(e) => return Err(e),
                    };
                    bound.node = Some((node_name.to_string(), node_uid));
                }
                bound.pod = Some((ref_name.to_string(), uid.clone()));
                uid
            }
            ("", "Node") => {
                let nodes = resource("nodes")?;
                let node = registry.get(&nodes, None, ref_name).await?;
                let uid = api::meta::uid(&node).unwrap_or_default().to_string();
                bound.node = Some((ref_name.to_string(), uid.clone()));
                uid
            }
            ("", "Secret") => {
                let secrets = resource("secrets")?;
                let secret = registry.get(&secrets, Some(namespace), ref_name).await?;
                let uid = api::meta::uid(&secret).unwrap_or_default().to_string();
                bound.secret = Some((ref_name.to_string(), uid.clone()));
                uid
            }
            _ => {
                return Err(ApiError::bad_request(format!(
                    "cannot bind token to object of type {}",
                    gvk_string(api_version, kind)
                )));
            }
        };
        if !ref_uid.is_empty() && ref_uid != uid {
            return Err(ApiError::conflict(
                GroupResource {
                    group,
                    resource: kind,
                },
                ref_name,
                &format!(
                    "the UID in the bound object reference ({ref_uid}) does not match the UID in record. The object might have been deleted and then recreated"
                ),
            ));
        }
        Ok(bound)
    }
}

fn pair(p: &Option<(String, String)>) -> Option<(&str, &str)> {
    p.as_ref().map(|(n, u)| (n.as_str(), u.as_str()))
}

/// `(name, uid)` of the objects a token is bound to.
#[derive(Default)]
struct Bound {
    pod: Option<(String, String)>,
    secret: Option<(String, String)>,
    node: Option<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_kind() {
        let (req, warnings) =
            decode(&json!({"spec": {"audiences": null}, "status": {"token": "", "expirationTimestamp": null}}), FieldValidation::Warn).unwrap();
        assert!(warnings.is_empty());
        assert_eq!(req["spec"]["expirationSeconds"], 3600);
        assert_eq!(req["kind"], "TokenRequest");
        assert_eq!(req["apiVersion"], "authentication.k8s.io/v1");
        let (req, _) = decode(
            &json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 700, "audiences": ["a"]}}),
            FieldValidation::Strict,
        )
        .unwrap();
        assert_eq!(req["spec"]["expirationSeconds"], 700);
        assert_eq!(req["spec"]["audiences"], json!(["a"]));
        assert_eq!(
            decode(&json!({"kind": "Pod"}), FieldValidation::Warn)
                .unwrap_err()
                .code,
            400
        );
        let (_, warnings) = decode(&json!({"spec": {"bogus": 1}}), FieldValidation::Warn).unwrap();
        assert_eq!(warnings, vec!["unknown field \"spec.bogus\""]);
        assert_eq!(
            decode(&json!({"spec": {"bogus": 1}}), FieldValidation::Strict)
                .unwrap_err()
                .code,
            400
        );
    }

    #[test]
    fn gvk_strings() {
        assert_eq!(gvk_string("v1", "ConfigMap"), "/v1, Kind=ConfigMap");
        assert_eq!(
            gvk_string("apps/v1", "Deployment"),
            "apps/v1, Kind=Deployment"
        );
    }
}
