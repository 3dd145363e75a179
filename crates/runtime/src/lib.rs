//! The controller runtime, as upstream's `client-go/util/workqueue`, `client-go/tools/record`,
//! `client-go/tools/leaderelection` and `pkg/controller` helpers: the pieces every
//! controller of the controller manager and the scheduler is built from.
//!
//! - [`workqueue::WorkQueue`]: a deduplicating queue of keys (an item is queued once
//!   however often it is added, and never handed to two workers at once), with delayed
//!   adds and per-item rate limiting ([`ratelimit`]).
//! - [`expectations::Expectations`]: upstream's `ControllerExpectations`, so a controller
//!   does not create or delete again while its cache has not caught up with what it did.
//! - [`events::Recorder`]: upstream's event recorder, emitting core/v1 Events through the
//!   API server with upstream's correlation ([`events::Correlator`]: repeated events
//!   counted, similar ones aggregated, spam dropped).
//! - [`leaderelection::LeaderElector`]: upstream's leader election over a
//!   `coordination.k8s.io/v1` Lease, so one of several replicas runs the controllers; the
//!   decision is pure ([`leaderelection::decide`]), the Lease is read and written through
//!   [`leaderelection::LeaseClient`].
//! - [`connect::ClientSource`]: how a component makes its API clients, over HTTPS from a
//!   kubeconfig or through an in-process [`connect::Connector`] to an API server in the
//!   same process, with the same identity either way.
//! - [`leanmeta`]: object metadata decoded from watch streams without `managedFields`
//!   (which no controller, scheduler or simulated node reads), and
//!   [`leanmeta::LeanObject`], a metadata-only object of any resource.
//! - [`metrics`]: the Prometheus text format's pieces the components share, and the
//!   work queues' `workqueue_*` metrics under upstream's names.
//! - [`serving`]: a component's HTTPS endpoint with upstream's delegated authentication
//!   and authorization (client certificates, `TokenReview`s, `SubjectAccessReview`s):
//!   the kubelet API's, and the controller manager's and scheduler's `/healthz` and
//!   `/metrics`.

pub mod connect;
pub mod events;
pub mod expectations;
mod https;
pub mod leaderelection;
pub mod leanmeta;
pub mod metrics;
pub mod ratelimit;
pub mod restclient;
pub mod serving;
pub mod workqueue;

pub use connect::{ClientSource, Connector, Identity};

/// The runtime's errors: writing events through an [`events::Sink`], Leases through a
/// [`leaderelection::LeaseClient`].
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Error {
    /// The object is not there (404): an event to patch is gone.
    #[error("event {namespace}/{name} not found")]
    NotFound { namespace: String, name: String },
    /// The API server answered with an error status; writing again would not help.
    #[error("server rejected the request ({code} {reason}): {message}")]
    Rejected {
        code: u16,
        reason: String,
        message: String,
        /// The `details.causes[].reason` of the status (e.g. `NamespaceTerminating`).
        causes: Vec<String>,
    },
    /// The request could not be built; it would be built the same next time.
    #[error("cannot build the request: {0}")]
    Request(String),
    /// The server could not be reached or its answer not read; worth retrying.
    #[error("cannot reach the server: {0}")]
    Transport(String),
    /// A leader election configuration upstream rejects (e.g. a renew deadline not shorter
    /// than the lease duration).
    #[error("invalid leader election configuration: {0}")]
    InvalidConfig(String),
    /// A serving certificate, key or client CA that cannot be used.
    #[error("cannot serve: {0}")]
    Serving(String),
    /// A kubeconfig that cannot be read or used.
    #[error("kubeconfig {path}: {message}")]
    Kubeconfig { path: String, message: String },
    /// An identity the in-process transport cannot present (e.g. a certificate that is
    /// not PEM).
    #[error("in-process client: {0}")]
    InProcess(String),
}

/// A client of the API server from a kubeconfig file (its current context): what every
/// component (controller manager, scheduler, kubelet, simulated nodes) connects with.
/// It sends no `User-Agent`; components use [`client_for`].
pub async fn client_from(kubeconfig: &std::path::Path) -> Result<kube::Client, Error> {
    client_with(kubeconfig, None, |_| {}).await
}

/// As [`client_from`], for the component named `component` (e.g. `kubelet`): its requests
/// carry upstream's `User-Agent` form, [`user_agent`], whose name the API server records
/// as the field manager of what it writes.
pub async fn client_for(
    kubeconfig: &std::path::Path,
    component: &str,
) -> Result<kube::Client, Error> {
    ClientSource::kubeconfig(kubeconfig)
        .for_component(component)
        .client()
        .await
}

/// The `User-Agent` of an rkube component, in client-go's form
/// (`<component>/<version> (<os>/<arch>) kubernetes/<commit>`): the API server takes the
/// part before the first `/` as the field manager's name, as upstream's does.
pub fn user_agent(component: &str) -> String {
    api::platform::user_agent(component, &api::platform::git_version())
}

/// A client from the kubeconfig file's current context, after `adjust` changed its
/// configuration (e.g. its credentials), sending `user_agent` when given.
pub(crate) async fn client_with(
    kubeconfig: &std::path::Path,
    user_agent: Option<&str>,
    adjust: impl FnOnce(&mut kube::Config),
) -> Result<kube::Client, Error> {
    let fail = |e: &dyn std::fmt::Display| Error::Kubeconfig {
        path: kubeconfig.display().to_string(),
        message: e.to_string(),
    };
    let text = kube::config::Kubeconfig::read_from(kubeconfig).map_err(|e| fail(&e))?;
    let mut config = kube::Config::from_custom_kubeconfig(text, &Default::default())
        .await
        .map_err(|e| fail(&e))?;
    adjust(&mut config);
    if let Some(agent) = user_agent {
        let value = http::HeaderValue::from_str(agent).map_err(|e| fail(&e))?;
        config.headers.push((http::header::USER_AGENT, value));
    }
    https::client(config).map_err(|e| fail(&e))
}

impl Error {
    /// Whether writing again may succeed (upstream retries only transport failures).
    pub fn is_retryable(&self) -> bool {
        matches!(self, Error::Transport(_))
    }
}

impl From<kube::Error> for Error {
    /// An API status is a rejection (not retried); a request that cannot be built stays
    /// unbuildable; anything else is a transport failure, worth retrying.
    fn from(err: kube::Error) -> Self {
        match err {
            kube::Error::Api(status) => Error::Rejected {
                code: status.code,
                reason: status.reason.clone(),
                message: status.message.clone(),
                causes: status
                    .details
                    .iter()
                    .flat_map(|d| d.causes.iter().map(|c| c.reason.clone()))
                    .collect(),
            },
            e @ (kube::Error::BuildRequest(_) | kube::Error::HttpError(_)) => {
                Error::Request(e.to_string())
            }
            e => Error::Transport(e.to_string()),
        }
    }
}
