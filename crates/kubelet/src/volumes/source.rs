//! Where volume plugins read API objects from: ConfigMaps, Secrets and service-account
//! tokens (the `serviceaccounts/<name>/token` subresource). [`KubeSource`] asks the API
//! server; [`FakeSource`] answers from memory and counts the calls, for tests.

use std::collections::BTreeMap;
use std::sync::Mutex;

use async_trait::async_trait;
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::{ConfigMap, Secret, ServiceAccount};
use kube::Api;
use kube::api::PostParams;

use crate::Error;

/// The API objects volume plugins need.
#[async_trait]
pub trait ObjectSource: Send + Sync {
    /// The ConfigMap `namespace/name`; `None` when it does not exist.
    async fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>, Error>;
    /// The Secret `namespace/name`; `None` when it does not exist.
    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, Error>;
    /// `POST /api/v1/namespaces/<namespace>/serviceaccounts/<name>/token` (TokenRequest).
    async fn request_token(
        &self,
        namespace: &str,
        service_account: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, Error>;
}

/// [`ObjectSource`] over the API server.
#[derive(Clone)]
pub struct KubeSource {
    client: kube::Client,
}

impl KubeSource {
    pub fn new(client: kube::Client) -> Self {
        KubeSource { client }
    }
}

fn not_found(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 404)
}

#[async_trait]
impl ObjectSource for KubeSource {
    async fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>, Error> {
        let api: Api<ConfigMap> = Api::namespaced(self.client.clone(), namespace);
        match api.get(name).await {
            Ok(cm) => Ok(Some(cm)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(Error::Api(e)),
        }
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, Error> {
        let api: Api<Secret> = Api::namespaced(self.client.clone(), namespace);
        match api.get(name).await {
            Ok(s) => Ok(Some(s)),
            Err(e) if not_found(&e) => Ok(None),
            Err(e) => Err(Error::Api(e)),
        }
    }

    async fn request_token(
        &self,
        namespace: &str,
        service_account: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, Error> {
        let api: Api<ServiceAccount> = Api::namespaced(self.client.clone(), namespace);
        Ok(api
            .create_token_request(service_account, &PostParams::default(), request)
            .await?)
    }
}

/// What a [`FakeSource`] was asked.
#[derive(Debug, Clone, PartialEq)]
pub enum SourceCall {
    ConfigMap {
        namespace: String,
        name: String,
    },
    Secret {
        namespace: String,
        name: String,
    },
    Token {
        namespace: String,
        service_account: String,
        request: Box<TokenRequest>,
    },
}

/// An in-memory [`ObjectSource`]: objects keyed by `(namespace, name)`, tokens minted by a
/// function of the request, every call recorded.
#[derive(Default)]
pub struct FakeSource {
    config_maps: Mutex<BTreeMap<(String, String), ConfigMap>>,
    secrets: Mutex<BTreeMap<(String, String), Secret>>,
    /// How token requests are answered.
    token_responder: Mutex<Option<TokenResponder>>,
    calls: Mutex<Vec<SourceCall>>,
}

/// Answers a token request (namespace, service account, request) in a [`FakeSource`].
pub type TokenResponder =
    Box<dyn Fn(&str, &str, &TokenRequest) -> Result<TokenRequest, Error> + Send + Sync>;

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> (String, String) {
    (
        meta.namespace.clone().unwrap_or_default(),
        meta.name.clone().unwrap_or_default(),
    )
}

impl FakeSource {
    pub fn new() -> Self {
        Self::default()
    }

    /// Creates or replaces a ConfigMap (its namespace and name from its metadata).
    pub fn put_config_map(&self, cm: ConfigMap) {
        if let Ok(mut m) = self.config_maps.lock() {
            m.insert(key_of(&cm.metadata), cm);
        }
    }

    pub fn delete_config_map(&self, namespace: &str, name: &str) {
        if let Ok(mut m) = self.config_maps.lock() {
            m.remove(&(namespace.to_string(), name.to_string()));
        }
    }

    /// Creates or replaces a Secret.
    pub fn put_secret(&self, secret: Secret) {
        if let Ok(mut m) = self.secrets.lock() {
            m.insert(key_of(&secret.metadata), secret);
        }
    }

    /// How token requests are answered (without one, they fail).
    pub fn set_token_responder(&self, f: TokenResponder) {
        if let Ok(mut r) = self.token_responder.lock() {
            *r = Some(f);
        }
    }

    /// Every call so far, oldest first.
    pub fn calls(&self) -> Vec<SourceCall> {
        self.calls.lock().map(|c| c.clone()).unwrap_or_default()
    }

    pub fn clear_calls(&self) {
        if let Ok(mut c) = self.calls.lock() {
            c.clear();
        }
    }

    fn record(&self, call: SourceCall) {
        if let Ok(mut c) = self.calls.lock() {
            c.push(call);
        }
    }
}

#[async_trait]
impl ObjectSource for FakeSource {
    async fn config_map(&self, namespace: &str, name: &str) -> Result<Option<ConfigMap>, Error> {
        self.record(SourceCall::ConfigMap {
            namespace: namespace.into(),
            name: name.into(),
        });
        let m = self
            .config_maps
            .lock()
            .map_err(|_| Error::Other("fake source poisoned".into()))?;
        Ok(m.get(&(namespace.to_string(), name.to_string())).cloned())
    }

    async fn secret(&self, namespace: &str, name: &str) -> Result<Option<Secret>, Error> {
        self.record(SourceCall::Secret {
            namespace: namespace.into(),
            name: name.into(),
        });
        let m = self
            .secrets
            .lock()
            .map_err(|_| Error::Other("fake source poisoned".into()))?;
        Ok(m.get(&(namespace.to_string(), name.to_string())).cloned())
    }

    async fn request_token(
        &self,
        namespace: &str,
        service_account: &str,
        request: &TokenRequest,
    ) -> Result<TokenRequest, Error> {
        self.record(SourceCall::Token {
            namespace: namespace.into(),
            service_account: service_account.into(),
            request: Box::new(request.clone()),
        });
        let r = self
            .token_responder
            .lock()
            .map_err(|_| Error::Other("fake source poisoned".into()))?;
        match r.as_ref() {
            Some(f) => f(namespace, service_account, request),
            None => Err(Error::Other(format!(
                "serviceaccounts \"{service_account}\" not found"
            ))),
        }
    }
}
