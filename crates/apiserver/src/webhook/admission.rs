//! [`admission::webhook::Transport`] over [`super::client`]: HTTPS with each webhook's
//! `caBundle` (or the system's roots), TLS configurations cached by bundle.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use admission::webhook::{Endpoint, Response, Transport};
use rustls::ClientConfig;

use super::client;

/// The admission webhooks' HTTPS client.
#[derive(Default)]
pub struct HttpsTransport {
    configs: Mutex<HashMap<Vec<u8>, Arc<ClientConfig>>>,
}

impl HttpsTransport {
    pub fn new() -> HttpsTransport {
        HttpsTransport::default()
    }

    fn config(&self, ca_bundle: &[u8]) -> Result<Arc<ClientConfig>, String> {
        let mut configs = self.configs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(c) = configs.get(ca_bundle) {
            return Ok(Arc::clone(c));
        }
        let roots = if ca_bundle.is_empty() {
            client::system_roots()
        } else {
            client::roots_from_pem(ca_bundle)?
        };
        let cfg = client::tls_config(roots, None)?;
        // Bundles change rarely; a bounded map is enough.
        if configs.len() >= 256 {
            configs.clear();
        }
        configs.insert(ca_bundle.to_vec(), Arc::clone(&cfg));
        Ok(cfg)
    }
}

#[async_trait::async_trait]
impl Transport for HttpsTransport {
    async fn post(
        &self,
        endpoint: &Endpoint,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Response, String> {
        let tls = self
            .config(&endpoint.ca_bundle)
            .map_err(|e| format!("could not get REST client: {e}"))?;
        let (status, body) = client::post(
            &tls,
            &endpoint.url,
            endpoint.connect.as_deref(),
            &[],
            body,
            timeout,
        )
        .await?;
        Ok(Response { status, body })
    }
}
