//! Node identities and TLS bootstrapping: `certificates.k8s.io/v1` CertificateSigningRequest
//! strategies (requester fields set from the request's user, the `approval` and `status`
//! subresources), the bootstrap-token authenticator (upstream's
//! `--enable-bootstrap-token-auth`: `<id>.<secret>` tokens stored as
//! `kube-system/bootstrap-token-<id>` Secrets), the join token `DIR/token`, the component
//! kubeconfigs, and the CSR approver and signer (upstream's `csrapproving` and `csrsigning`
//! controllers): a kubelet client CSR from a requester allowed
//! `certificatesigningrequests/nodeclient` (bootstrap) or `/selfnodeclient` (renewal) is
//! approved, and approved client CSRs are signed by the client CA.
//!
//! The approver and signer run inside the API server process, over its registry, because
//! they hold the client CA's key (as k3s runs them); they move to the controller manager's
//! process when it exists, keeping the key local to the server host.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use admission::{Attributes, Cluster, Operation, Plugin};
use api::{ApiError, FieldError};
use auth::Authorizer;
use base64::Engine;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::Error;
use crate::authn::{AuthResult, Authenticator, UserInfo};
use crate::pki::Pki;
use crate::registry::{Cacher, Registry, WriteOptions};

const GROUP: &str = "certificates.k8s.io";
const PLURAL: &str = "certificatesigningrequests";
/// The signer of kubelet client certificates.
pub const KUBELET_CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client-kubelet";
/// The signer of other API client certificates.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// The group of every bootstrap-token user.
pub const BOOTSTRAPPERS: &str = "system:bootstrappers";
/// The extra group of the join token rkube creates.
pub const JOIN_GROUP: &str = "system:bootstrappers:rkube:default-node-token";
const B64: base64::engine::GeneralPurpose = base64::engine::general_purpose::STANDARD;

fn has_condition(obj: &Value, kind: &str) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|c| {
        c.iter()
            .any(|c| c["type"] == kind && c["status"] != "False")
    })
}

/// Fills the timestamps upstream's `populateConditionTimestamps` fills.
fn stamp_conditions(new: &mut Value, old: &Value, now: &str) {
    let old_conds = old["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for c in new["status"]["conditions"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        if c["lastUpdateTime"].as_str().is_none_or(str::is_empty) {
            c["lastUpdateTime"] = json!(now);
        }
        if c["lastTransitionTime"].as_str().is_none_or(str::is_empty) {
            let same = old_conds
                .iter()
                .find(|o| o["type"] == c["type"] && o["status"] == c["status"])
                .and_then(|o| o["lastTransitionTime"].as_str().map(str::to_string));
            c["lastTransitionTime"] = json!(same.unwrap_or_else(|| now.to_string()));
        }
        if c["status"].is_null() {
            c["status"] = json!("True");
        }
    }
}

/// `approval` updates change only `status.conditions`.
pub fn prepare_for_approval_update(new: &mut Value, old: &Value, now: &str) {
    let conditions = new["status"]["conditions"].clone();
    new["spec"] = old["spec"].clone();
    new["status"] = old["status"].clone();
    if !new["status"].is_object() {
        new["status"] = json!({});
    }
    new["status"]["conditions"] = conditions;
    stamp_conditions(new, old, now);
}

/// `status` updates keep the approval conditions and may set the certificate only on an
/// approved request.
pub fn prepare_for_status_update(
    new: &mut Value,
    old: &Value,
    now: &str,
) -> Result<(), FieldError> {
    let kept: Vec<Value> = old["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] == "Approved" || c["type"] == "Denied")
        .cloned()
        .collect();
    let mut conditions: Vec<Value> = new["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["type"] != "Approved" && c["type"] != "Denied")
        .cloned()
        .collect();
    conditions.splice(0..0, kept);
    if new["status"].is_object() {
        new["status"]["conditions"] = json!(conditions);
    }
    stamp_conditions(new, old, now);
    let certificate = new["status"]["certificate"].as_str().unwrap_or_default();
    let old_certificate = old["status"]["certificate"].as_str().unwrap_or_default();
    if !certificate.is_empty() && certificate != old_certificate {
        if !has_condition(old, "Approved") {
            return Err(FieldError::invalid(
                "status.certificate",
                "<certificate data>",
                "certificate can only be set if an Approved condition is present",
            ));
        }
        if !old_certificate.is_empty() {
            return Err(FieldError::invalid(
                "status.certificate",
                "<certificate data>",
                "updates may not modify existing certificate content",
            ));
        }
    }
    Ok(())
}

/// The subject and SANs of a PEM certificate request, checking its signature.
fn parse_request(pem: &[u8]) -> Result<rcgen::CertificateSigningRequestParams, String> {
    let text =
        std::str::from_utf8(pem).map_err(|_| "PEM block type must be CERTIFICATE REQUEST")?;
    if !text.contains("-----BEGIN CERTIFICATE REQUEST-----") {
        return Err("PEM block type must be CERTIFICATE REQUEST".into());
    }
    rcgen::CertificateSigningRequestParams::from_pem(text).map_err(|e| e.to_string())
}

/// The common name and organizations of a request.
fn subject(req: &rcgen::CertificateSigningRequestParams) -> (String, Vec<String>) {
    let mut cn = String::new();
    let mut orgs = Vec::new();
    for (t, v) in req.params.distinguished_name.iter() {
        let s = dn_string(v);
        match t {
            rcgen::DnType::CommonName => cn = s,
            rcgen::DnType::OrganizationName => orgs.push(s),
            _ => {}
        }
    }
    (cn, orgs)
}

/// The subject common name of a PEM certificate request (for NodeRestriction).
pub fn common_name(pem: &[u8]) -> Result<String, String> {
    parse_request(pem).map(|req| subject(&req).0)
}

fn dn_string(v: &rcgen::DnValue) -> String {
    match v {
        rcgen::DnValue::Utf8String(s) => s.clone(),
        rcgen::DnValue::PrintableString(s) => s.as_str().to_string(),
        rcgen::DnValue::Ia5String(s) => s.as_str().to_string(),
        rcgen::DnValue::TeletexString(s) => s.as_str().to_string(),
        other => format!("{other:?}"),
    }
}

/// The internal admission step of CSRs: requester fields from the user, request checks.
pub struct CsrAdmission;

#[async_trait::async_trait]
impl Plugin for CsrAdmission {
    fn name(&self) -> &'static str {
        "CertificateSigningRequestStrategy"
    }
    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }
    fn mutating(&self) -> bool {
        true
    }
    async fn admit(&self, a: &mut Attributes, _cluster: &dyn Cluster) -> Result<(), ApiError> {
        if a.resource.group != GROUP || a.resource.kind != PLURAL || !a.subresource.is_empty() {
            return Ok(());
        }
        let user = a.user.clone();
        let Some(obj) = a.object.as_mut() else {
            return Ok(());
        };
        // Upstream's PrepareForCreate: who asked, never what the client claims.
        let spec = &mut obj["spec"];
        spec["username"] = json!(user.name);
        spec["uid"] = if user.uid.is_empty() {
            Value::Null
        } else {
            json!(user.uid)
        };
        spec["groups"] = json!(user.groups);
        spec["extra"] = if user.extra.is_empty() {
            Value::Null
        } else {
            json!(user.extra)
        };
        if let Some(m) = spec.as_object_mut() {
            m.retain(|_, v| !v.is_null());
        }
        obj["status"] = json!({});
        let mut errs = Vec::new();
        let request = B64
            .decode(obj["spec"]["request"].as_str().unwrap_or_default())
            .unwrap_or_default();
        if let Err(e) = parse_request(&request) {
            errs.push(FieldError::invalid("spec.request", "<request data>", e));
        }
        let signer = obj["spec"]["signerName"].as_str().unwrap_or_default();
        if signer.is_empty() {
            errs.push(FieldError::required("spec.signerName", ""));
        } else if signer.split('/').count() != 2 {
            errs.push(FieldError::invalid(
                "spec.signerName",
                signer,
                "must be a fully qualified domain and path of the form 'example.com/signer-name'",
            ));
        }
        if let Some(s) = obj["spec"]["expirationSeconds"].as_i64()
            && s < 600
        {
            errs.push(FieldError::invalid(
                "spec.expirationSeconds",
                s,
                "may not specify a duration less than 600 seconds (10 minutes)",
            ));
        }
        if obj["spec"]["usages"]
            .as_array()
            .is_none_or(|u| u.is_empty())
        {
            errs.push(FieldError::required("spec.usages", ""));
        }
        if errs.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(
                GROUP,
                "CertificateSigningRequest",
                api::meta::name(obj).unwrap_or_default(),
                &errs,
            ))
        }
    }
}

/// Whether a request is a kubelet client certificate request (upstream's
/// `IsKubeletClientCSR`): CN `system:node:<name>`, O `system:nodes`, no SANs, client usages.
fn kubelet_client(obj: &Value, req: &rcgen::CertificateSigningRequestParams) -> Option<String> {
    if obj["spec"]["signerName"] != KUBELET_CLIENT_SIGNER {
        return None;
    }
    let (cn, orgs) = subject(req);
    let node = cn.strip_prefix("system:node:")?.to_string();
    if node.is_empty() || orgs != ["system:nodes"] || !req.params.subject_alt_names.is_empty() {
        return None;
    }
    let usages: Vec<&str> = obj["spec"]["usages"]
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let allowed = ["digital signature", "key encipherment", "client auth"];
    (usages.contains(&"client auth") && usages.iter().all(|u| allowed.contains(u))).then_some(cn)
}

/// Who asked for a certificate (`spec.username`, `uid`, `groups`, `extra`).
fn requester(obj: &Value) -> UserInfo {
    crate::registry::virtuals::user_of_spec(&obj["spec"], "username")
}

/// The approver's decision for one pending request: the condition to add, if any.
pub fn approval(obj: &Value, authz: &dyn Authorizer) -> Option<Value> {
    if has_condition(obj, "Approved") || has_condition(obj, "Denied") {
        return None;
    }
    let request = B64
        .decode(obj["spec"]["request"].as_str().unwrap_or_default())
        .ok()?;
    let req = parse_request(&request).ok()?;
    let cn = kubelet_client(obj, &req)?;
    let user = requester(obj);
    let sub = if user.name == cn {
        "selfnodeclient"
    } else {
        "nodeclient"
    };
    let attributes =
        auth::Attributes::resource(user, "create", GROUP, PLURAL).with_subresource(sub);
    if authz.authorize(&attributes).0 != auth::Decision::Allow {
        return None;
    }
    Some(json!({
        "type": "Approved",
        "status": "True",
        "reason": "AutoApproved",
        "message": "Auto approving kubelet client certificate after SubjectAccessReview.",
    }))
}

/// Signs an approved client request with the client CA: the PEM certificate.
pub fn sign(obj: &Value, pki: &Pki, max: Duration) -> Result<String, String> {
    let request = B64
        .decode(obj["spec"]["request"].as_str().unwrap_or_default())
        .map_err(|e| e.to_string())?;
    let mut req = parse_request(&request)?;
    let secs = obj["spec"]["expirationSeconds"]
        .as_u64()
        .map_or(max.as_secs(), |s| s.min(max.as_secs()));
    pki.sign_client_request(&mut req, secs)
        .map_err(|e| e.to_string())
}

fn system_options() -> WriteOptions {
    WriteOptions {
        user: UserInfo::new("system:kube-controller-manager", ["system:authenticated"]),
        user_agent: "rkube-apiserver/csr-controller".into(),
        dry_run: false,
        field_manager: Some("rkube-csr-controller".into()),
        field_validation: crate::registry::FieldValidation::Ignore,
        apply: false,
        include_uninitialized: true,
        warnings: Default::default(),
        audit_annotations: Default::default(),
    }
}

/// One pass over the requests: approve, then sign.
async fn reconcile(registry: &Registry, authz: &dyn Authorizer, pki: &Pki) {
    let Some(r) = registry.lookup(GROUP, "v1", PLURAL) else {
        return;
    };
    let (items, _) = r
        .cacher
        .list(&|_| true, "/registry/certificatesigningrequests/");
    let opts = system_options();
    for o in items {
        let Some(obj) = o.value() else { continue };
        let name = o.name().to_string();
        if let Some(cond) = approval(&obj, authz) {
            let mut new = obj.clone();
            push_condition(&mut new, cond);
            match registry.write_at(&r, Some("approval"), new, &opts).await {
                Ok(_) => tracing::info!(csr = %name, "approved kubelet client certificate request"),
                Err(e) => tracing::debug!(csr = %name, error = %e.message, "approval failed"),
            }
            continue;
        }
        let signer = obj["spec"]["signerName"].as_str().unwrap_or_default();
        let signed = !obj["status"]["certificate"]
            .as_str()
            .unwrap_or_default()
            .is_empty();
        if signed
            || !has_condition(&obj, "Approved")
            || has_condition(&obj, "Failed")
            || !(signer == KUBELET_CLIENT_SIGNER || signer == CLIENT_SIGNER)
        {
            continue;
        }
        let mut new = obj.clone();
        match sign(&obj, pki, Duration::from_secs(365 * 24 * 3600)) {
            Ok(cert) => new["status"]["certificate"] = json!(B64.encode(cert)),
            Err(e) => push_condition(
                &mut new,
                json!({"type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": e}),
            ),
        }
        if let Err(e) = registry.write_at(&r, Some("status"), new, &opts).await {
            tracing::debug!(csr = %name, error = %e.message, "signing failed");
        }
    }
}

/// Appends a condition to `status.conditions`.
fn push_condition(obj: &mut Value, condition: Value) {
    if !obj["status"].is_object() {
        obj["status"] = json!({});
    }
    let mut conds = obj["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    conds.push(condition);
    obj["status"]["conditions"] = json!(conds);
}

/// Runs the approver and signer until the process ends.
pub async fn run(registry: Arc<Registry>, authz: Arc<auth::Union>, pki: Pki) {
    let Some(r) = registry.lookup(GROUP, "v1", PLURAL) else {
        return;
    };
    let mut changes = r.cacher.changes();
    loop {
        reconcile(&registry, authz.as_ref(), &pki).await;
        let _ = tokio::time::timeout(Duration::from_secs(10), changes.changed()).await;
    }
}

/// Upstream's bootstrap-token authenticator over the `kube-system` Secrets cache.
pub struct BootstrapTokens {
    pub secrets: Arc<Cacher>,
    pub clock: Arc<dyn store::Clock>,
}

/// Splits `<id>.<secret>` (`[a-z0-9]{6}.[a-z0-9]{16}`).
pub fn parse_token(token: &str) -> Option<(&str, &str)> {
    let (id, secret) = token.split_once('.')?;
    let ok = |s: &str, n: usize| {
        s.len() == n
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
    };
    (ok(id, 6) && ok(secret, 16)).then_some((id, secret))
}

impl Authenticator for BootstrapTokens {
    fn authenticate(&self, headers: &HeaderMap, _peer: &crate::handlers::Peer) -> AuthResult {
        let Some(token) = crate::authn::bearer_token(headers) else {
            return AuthResult::NoCredentials;
        };
        let Some((id, secret)) = parse_token(token) else {
            return AuthResult::NoCredentials;
        };
        let rejected = || AuthResult::Rejected("invalid bootstrap token".into());
        let Some(obj) = self
            .secrets
            .get(&format!(
                "/registry/secrets/kube-system/bootstrap-token-{id}"
            ))
            .and_then(|o| o.value())
        else {
            return rejected();
        };
        let field = |k: &str| {
            obj["data"][k]
                .as_str()
                .and_then(|v| B64.decode(v).ok())
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default()
        };
        if obj["type"] != "bootstrap.kubernetes.io/token"
            || field("token-id") != id
            || !crate::authn::constant_time_eq(field("token-secret").as_bytes(), secret.as_bytes())
            || field("usage-bootstrap-authentication") != "true"
            || api::meta::deletion_timestamp(&obj).is_some()
        {
            return rejected();
        }
        let expiration = field("expiration");
        if !expiration.is_empty() {
            let expired = expiration
                .parse::<jiff::Timestamp>()
                .map(|t| t.as_millisecond() <= self.clock.now_ms())
                .unwrap_or(true);
            if expired {
                return rejected();
            }
        }
        let mut groups = vec![BOOTSTRAPPERS.to_string()];
        for g in field("auth-extra-groups").split(',').map(str::trim) {
            if g.starts_with("system:bootstrappers:") && !groups.iter().any(|x| x == g) {
                groups.push(g.to_string());
            }
        }
        AuthResult::User(UserInfo::new(format!("system:bootstrap:{id}"), groups))
    }
}

fn random_token_part(n: usize) -> String {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let mut bytes = vec![0u8; n];
    rand::fill(&mut bytes[..]);
    bytes
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect()
}

/// The component kubeconfigs (`DIR/controller.kubeconfig`, `DIR/scheduler.kubeconfig`),
/// each with its own client certificate, created once.
pub fn ensure_component_kubeconfigs(pki: &Pki, data_dir: &Path, url: &str) -> Result<(), Error> {
    for (file, cn) in [
        ("controller.kubeconfig", "system:kube-controller-manager"),
        ("scheduler.kubeconfig", "system:kube-scheduler"),
    ] {
        let path = data_dir.join(file);
        let cert = pki.dir.join(format!(
            "client-{}.crt",
            file.trim_end_matches(".kubeconfig")
        ));
        let key = pki.dir.join(format!(
            "client-{}.key",
            file.trim_end_matches(".kubeconfig")
        ));
        let (c, k) = match (
            std::fs::read_to_string(&cert),
            std::fs::read_to_string(&key),
        ) {
            (Ok(c), Ok(k)) => (c, k),
            _ => {
                let (c, k) = pki.issue_client(cn, &[])?;
                std::fs::write(&cert, &c)
                    .map_err(|e| Error::Config(format!("{}: {e}", cert.display())))?;
                crate::pki::write_private_file(&key, &k)?;
                (c, k)
            }
        };
        pki.write_kubeconfig(&path, url, cn, &c, &k)?;
    }
    Ok(())
}

/// A client certificate of the client CA kept in the TLS directory as
/// `client-<file>.crt`/`.key`, issued on first use.
fn persistent_client_cert(
    pki: &Pki,
    file: &str,
    cn: &str,
    orgs: &[&str],
) -> Result<(String, String), Error> {
    let cert = pki.dir.join(format!("client-{file}.crt"));
    let key = pki.dir.join(format!("client-{file}.key"));
    if let (Ok(c), Ok(k)) = (
        std::fs::read_to_string(&cert),
        std::fs::read_to_string(&key),
    ) {
        return Ok((c, k));
    }
    let (c, k) = pki.issue_client(cn, orgs)?;
    std::fs::write(&cert, &c).map_err(|e| Error::Config(format!("{}: {e}", cert.display())))?;
    crate::pki::write_private_file(&key, &k)?;
    Ok((c, k))
}

/// The API server's client identity towards kubelets (upstream's
/// `--kubelet-client-certificate`): `kube-apiserver-kubelet-client` in `system:masters`,
/// as a TLS client that does not verify kubelets' self-signed serving certificates
/// (upstream's behaviour without `--kubelet-certificate-authority`).
pub fn kubelet_client_tls(pki: &Pki) -> Result<std::sync::Arc<rustls::ClientConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    let (c, k) = persistent_client_cert(
        pki,
        "kube-apiserver-kubelet-client",
        "kube-apiserver-kubelet-client",
        &["system:masters"],
    )?;
    let certs = rustls::pki_types::CertificateDer::pem_slice_iter(c.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Error::Config(format!("kubelet client certificate: {e}")))?;
    let key = rustls::pki_types::PrivateKeyDer::from_pem_slice(k.as_bytes())
        .map_err(|e| Error::Config(format!("kubelet client key: {e}")))?;
    httpproxy::insecure_tls(Some((certs, key))).map_err(|e| Error::Config(e.to_string()))
}

/// The kubeconfig of the server's own node agent: `system:node:<name>` in
/// `system:nodes`, signed by the client CA directly (the in-process agent needs no
/// bootstrap token), at `path`.
pub fn ensure_node_kubeconfig(
    pki: &Pki,
    path: &Path,
    url: &str,
    node_name: &str,
) -> Result<(), Error> {
    let cn = format!("{}{node_name}", auth::node::NODE_USER_PREFIX);
    let (c, k) = persistent_client_cert(
        pki,
        &format!("node-{node_name}"),
        &cn,
        &[auth::attributes::NODES_GROUP],
    )?;
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Config(format!("{}: {e}", dir.display())))?;
    }
    pki.write_kubeconfig(path, url, &cn, &c, &k)
}

/// What a joining node needs before it trusts the server, published at every start:
/// `kube-public/cluster-info` with a kubeconfig holding the server CA and URL, signed
/// with the join token (upstream's bootstrap signer; `api::jws`), readable by the
/// token's holders (and `system:anonymous` when anonymous requests are enabled, as
/// kubeadm's `kubeadm:bootstrap-signer-clusterinfo`); and
/// `kube-system/extension-apiserver-authentication` with the client CA (`client-ca-file`,
/// as upstream's API server publishes it), readable by nodes so kubelets can verify the
/// API server's client certificate.
pub async fn publish_cluster_info(
    registry: &Registry,
    pki: &Pki,
    url: &str,
    token: &str,
    opts: &WriteOptions,
) -> Result<(), Error> {
    let Some((id, secret)) = parse_token(token) else {
        return Err(Error::Config("invalid join token".into()));
    };
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|e| Error::Config(format!("{}: {e}", p.display())))
    };
    let server_ca = read(&pki.server_ca_cert)?;
    let client_ca = read(&pki.client_ca_cert)?;
    let kubeconfig = serde_yaml_ng::to_string(&json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "", "cluster": {
            "certificate-authority-data": B64.encode(&server_ca),
            "server": url,
        }}],
        "contexts": null,
        "current-context": "",
        "preferences": {},
        "users": null,
    }))
    .map_err(|e| Error::Config(e.to_string()))?;
    let mut data = serde_json::Map::new();
    data.insert("kubeconfig".into(), json!(kubeconfig));
    data.insert(
        api::jws::signature_key(id),
        json!(api::jws::detached_signature(&kubeconfig, id, secret)),
    );
    let rbac = "rbac.authorization.k8s.io";
    let objects = [
        (
            "",
            "configmaps",
            "kube-public",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "cluster-info", "namespace": "kube-public"},
                "data": data}),
        ),
        (
            "",
            "configmaps",
            "kube-system",
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "extension-apiserver-authentication", "namespace": "kube-system"},
                "data": {"client-ca-file": client_ca}}),
        ),
        (
            rbac,
            "roles",
            "kube-public",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
                "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
                "rules": [{"apiGroups": [""], "resources": ["configmaps"],
                    "resourceNames": ["cluster-info"], "verbs": ["get"]}]}),
        ),
        (
            rbac,
            "rolebindings",
            "kube-public",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "kubeadm:bootstrap-signer-clusterinfo", "namespace": "kube-public"},
            "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "kubeadm:bootstrap-signer-clusterinfo"},
            "subjects": [
                {"apiGroup": rbac, "kind": "User", "name": "system:anonymous"},
                {"apiGroup": rbac, "kind": "Group", "name": JOIN_GROUP},
            ]}),
        ),
        (
            rbac,
            "rolebindings",
            "kube-system",
            json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "rkube:nodes-read-client-ca", "namespace": "kube-system"},
                "roleRef": {"apiGroup": rbac, "kind": "Role", "name": "extension-apiserver-authentication-reader"},
                "subjects": [{"apiGroup": rbac, "kind": "Group", "name": auth::attributes::NODES_GROUP}]}),
        ),
    ];
    for (group, plural, ns, obj) in objects {
        let Some(r) = registry.lookup(group, "v1", plural) else {
            continue;
        };
        let name = obj["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        let result = match registry.create(&r, Some(ns), obj.clone(), opts).await {
            Err(e) if e.code == 409 => registry
                .replace(&r, Some(ns), &name, None, obj, opts)
                .await
                .map(|_| ()),
            other => other.map(|_| ()),
        };
        if let Err(e) = result {
            tracing::warn!(error = %e.message, plural, %name, "cannot publish cluster information");
        }
    }
    Ok(())
}

/// The join token (`DIR/token`, `<id>.<secret>`), created once, and its bootstrap Secret
/// plus the bindings that let its holders request node certificates, made sure at every
/// start.
pub async fn ensure_join_token(
    registry: &Registry,
    data_dir: &Path,
    opts: &WriteOptions,
) -> Result<String, Error> {
    let path = data_dir.join("token");
    let token = match std::fs::read_to_string(&path) {
        Ok(t) if parse_token(t.trim()).is_some() => t.trim().to_string(),
        _ => {
            let t = format!("{}.{}", random_token_part(6), random_token_part(16));
            crate::pki::write_private_file(&path, &format!("{t}\n"))?;
            t
        }
    };
    let Some((id, secret)) = parse_token(&token) else {
        return Err(Error::Config("invalid join token".into()));
    };
    let enc = |s: &str| B64.encode(s);
    let secret_obj = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "type": "bootstrap.kubernetes.io/token",
        "data": {
            "description": enc("The rkube node join token (DIR/token)."),
            "token-id": enc(id),
            "token-secret": enc(secret),
            "usage-bootstrap-authentication": enc("true"),
            "usage-bootstrap-signing": enc("true"),
            "auth-extra-groups": enc(JOIN_GROUP),
        },
    });
    let crb = |name: &str, role: &str, group: &str| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group}],
        })
    };
    let objects = [
        ("", "v1", "secrets", Some("kube-system"), secret_obj),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            None,
            crb(
                "rkube:kubelet-bootstrap",
                "system:node-bootstrapper",
                JOIN_GROUP,
            ),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            None,
            crb(
                "rkube:node-autoapprove-bootstrap",
                "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
                JOIN_GROUP,
            ),
        ),
        (
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            None,
            crb(
                "rkube:node-autoapprove-certificate-rotation",
                "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
                "system:nodes",
            ),
        ),
    ];
    for (group, version, plural, ns, obj) in objects {
        let Some(r) = registry.lookup(group, version, plural) else {
            continue;
        };
        match registry.create(&r, ns, obj, opts).await {
            Ok(_) => {}
            Err(e) if e.code == 409 => {}
            Err(e) => {
                tracing::warn!(error = %e.message, plural, "cannot create a node-join object")
            }
        }
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_parse_as_upstream() {
        assert_eq!(
            parse_token("abcdef.0123456789abcdef"),
            Some(("abcdef", "0123456789abcdef"))
        );
        assert!(parse_token("ABCDEF.0123456789abcdef").is_none());
        assert!(parse_token("abcdef.0123456789abcde").is_none());
        assert!(parse_token("abcdef0123456789abcdef").is_none());
        assert!(parse_token("eyJhbGciOi.x.y").is_none());
        let t = format!("{}.{}", random_token_part(6), random_token_part(16));
        assert!(parse_token(&t).is_some());
    }

    #[test]
    fn approval_keeps_only_conditions() {
        let old = json!({"spec": {"request": "x", "usages": ["client auth"]}, "status": {"certificate": "Y2VydA=="}});
        let mut new = json!({"spec": {"request": "changed"}, "status": {"certificate": "", "conditions": [{"type": "Approved", "reason": "Ok"}]}});
        prepare_for_approval_update(&mut new, &old, "2026-01-01T00:00:00Z");
        assert_eq!(new["spec"]["request"], "x");
        assert_eq!(new["status"]["certificate"], "Y2VydA==");
        assert_eq!(new["status"]["conditions"][0]["status"], "True");
        assert_eq!(
            new["status"]["conditions"][0]["lastUpdateTime"],
            "2026-01-01T00:00:00Z"
        );
    }

    #[test]
    fn certificates_need_approval() {
        let old = json!({"spec": {}, "status": {}});
        let mut new = json!({"spec": {}, "status": {"certificate": "Y2VydA=="}});
        let e = prepare_for_status_update(&mut new, &old, "now").unwrap_err();
        assert!(e.to_string().contains("Approved condition"), "{e}");
        let old =
            json!({"spec": {}, "status": {"conditions": [{"type": "Approved", "status": "True"}]}});
        let mut new = json!({"spec": {}, "status": {"certificate": "Y2VydA==", "conditions": []}});
        prepare_for_status_update(&mut new, &old, "now").unwrap();
        assert_eq!(
            new["status"]["conditions"][0]["type"], "Approved",
            "approval kept"
        );
    }
}
