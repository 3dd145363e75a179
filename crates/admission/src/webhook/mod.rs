//! Dynamic admission webhooks: the `MutatingAdmissionWebhook` and
//! `ValidatingAdmissionWebhook` plugins (upstream's `admission/plugin/webhook`).
//!
//! The plugins read the `admissionregistration.k8s.io/v1` webhook configurations through
//! [`Cluster::list`](crate::Cluster::list) ([`config::Source`] re-parses them only when a
//! resourceVersion changed), pick the webhooks whose rules, namespace selector and object
//! selector match the request ([`matching`]), and POST an `AdmissionReview`
//! ([`review`]) through a [`Transport`] (the API server's HTTPS client; a fake in tests).
//!
//! As upstream: configurations are taken in name order; webhook and admission-policy
//! configurations are never sent to webhooks; `failurePolicy` decides whether a webhook
//! that cannot be called (transport error, timeout, non-2xx, malformed answer) fails the
//! request (`Internal error occurred: failed calling webhook "x": ...`) or is skipped;
//! dry-run requests reach only webhooks with `sideEffects: None` or `NoneOnDryRun`
//! (others refuse with 400 `admission webhook "x" does not support dry run`); a refusal is
//! `admission webhook "x" denied the request: <message>` with the webhook's code (400
//! when it gives none below 400). Mutating webhooks run in order and their `JSONPatch`es
//! are applied one after another (the result re-decoded and re-defaulted for built-in
//! kinds); with `reinvocationPolicy: IfNeeded` a webhook runs a second time when a later
//! webhook changed the object. Validating webhooks run concurrently.
//!
//! The answers' warnings reach the client as `Warning` headers, their audit annotations
//! the request's audit event as `<webhook name>/<key>`.
//!
//! A service reference is resolved through the cluster: to an address of the service's
//! Endpoints when it has one (no kube-proxy needed), else to its ClusterIP; the TLS name
//! is `<service>.<namespace>.svc`, as upstream's.
//!
//! `matchConditions` are CEL (`object`, `oldObject`, `request`; no `authorizer`): all true
//! calls the webhook. Not done: `matchPolicy: Equivalent` has no other version to match (rkube serves each
//! built-in resource in one version); the upstream chain-wide reinvocation of
//! in-tree plugins is reduced to the webhooks' own second round.

pub mod config;
mod dispatch;
pub mod matching;
pub mod review;

use std::time::Duration;

pub use dispatch::{MutatingWebhook, ValidatingWebhook};

/// Where one call goes, as the plugin resolved it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    /// The URL, with upstream's `?timeout=<n>s` (also how errors print it). Its host is the
    /// TLS server name.
    pub url: String,
    /// `host:port` to connect to instead of the URL's host (a resolved service).
    pub connect: Option<String>,
    /// PEM CA certificates to trust (`caBundle`); empty: the system's roots.
    pub ca_bundle: Vec<u8>,
}

/// An HTTP answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub status: u16,
    pub body: Vec<u8>,
}

/// Posts JSON to webhooks. An `Err` is a failure to get any HTTP answer within
/// `timeout`, worded as Go's HTTP client words it (`Post "<url>": dial tcp ...: connect:
/// connection refused`, `Post "<url>": context deadline exceeded`).
#[async_trait::async_trait]
pub trait Transport: Send + Sync {
    async fn post(
        &self,
        endpoint: &Endpoint,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<Response, String>;
}

#[cfg(test)]
mod tests;
