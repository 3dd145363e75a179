//! What every command gets: the global flags, the output streams, and the lazily built
//! API client and REST mapper (a command that needs neither, like `config view`, never
//! loads credentials or touches the network).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::OnceCell;

use crate::error::{CliError, Result};
use crate::mapper::Mapper;
use crate::transport::RestClient;

/// kubectl's global flags (`kubectl options`).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct GlobalFlags {
    /// Path to the kubeconfig file to use for CLI requests.
    #[arg(long, global = true)]
    pub kubeconfig: Option<PathBuf>,
    /// The name of the kubeconfig context to use.
    #[arg(long, global = true)]
    pub context: Option<String>,
    /// The name of the kubeconfig cluster to use.
    #[arg(long, global = true)]
    pub cluster: Option<String>,
    /// The name of the kubeconfig user to use.
    #[arg(long, global = true)]
    pub user: Option<String>,
    /// If present, the namespace scope for this CLI request.
    #[arg(short = 'n', long, global = true)]
    pub namespace: Option<String>,
    /// The address and port of the Kubernetes API server.
    #[arg(short = 's', long, global = true)]
    pub server: Option<String>,
    /// Bearer token for authentication to the API server.
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// Username for basic authentication to the API server.
    #[arg(long, global = true)]
    pub username: Option<String>,
    /// Password for basic authentication to the API server.
    #[arg(long, global = true)]
    pub password: Option<String>,
    /// Path to a client certificate file for TLS.
    #[arg(long, global = true)]
    pub client_certificate: Option<PathBuf>,
    /// Path to a client key file for TLS.
    #[arg(long, global = true)]
    pub client_key: Option<PathBuf>,
    /// Path to a cert file for the certificate authority.
    #[arg(long, global = true)]
    pub certificate_authority: Option<PathBuf>,
    /// If true, the server's certificate will not be checked for validity.
    #[arg(
        long,
        global = true,
        action = clap::ArgAction::Set,
        num_args = 0..=1,
        default_value_t = false,
        default_missing_value = "true",
        require_equals = true
    )]
    pub insecure_skip_tls_verify: bool,
    /// Server name to use for server certificate validation.
    #[arg(long, global = true)]
    pub tls_server_name: Option<String>,
    /// Username to impersonate for the operation.
    #[arg(long = "as", global = true)]
    pub as_user: Option<String>,
    /// Group to impersonate for the operation (repeatable).
    #[arg(long = "as-group", global = true)]
    pub as_group: Vec<String>,
    /// UID to impersonate for the operation.
    #[arg(long = "as-uid", global = true)]
    pub as_uid: Option<String>,
    /// The length of time to wait before giving up on a single server request
    /// ("0" means no timeout).
    #[arg(long, global = true)]
    pub request_timeout: Option<String>,
    /// Default cache directory.
    #[arg(long, global = true)]
    pub cache_dir: Option<PathBuf>,
    /// Number for the log level verbosity (6: requests, 7: headers, 8: bodies, 9: curl).
    #[arg(short = 'v', long = "v", global = true, default_value_t = 0)]
    pub verbosity: u8,
}

/// The process's streams, swappable in tests.
pub struct Io {
    pub out: Mutex<Box<dyn Write + Send>>,
    pub err: Mutex<Box<dyn Write + Send>>,
    pub input: Mutex<Box<dyn Read + Send>>,
}

impl Io {
    pub fn std() -> Self {
        Io {
            out: Mutex::new(Box::new(std::io::stdout())),
            err: Mutex::new(Box::new(std::io::stderr())),
            input: Mutex::new(Box::new(std::io::stdin())),
        }
    }
}

/// One command run's context.
pub struct Ctx {
    pub global: GlobalFlags,
    pub io: Io,
    client: OnceCell<RestClient>,
    mapper: OnceCell<Mapper>,
    /// The namespace of the kubeconfig's current context, when it was loaded.
    context_namespace: OnceCell<Option<String>>,
}

fn lock<T: ?Sized>(m: &Mutex<Box<T>>) -> MutexGuard<'_, Box<T>> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Ctx {
    pub fn new(global: GlobalFlags, io: Io) -> Self {
        Ctx {
            global,
            io,
            client: OnceCell::new(),
            mapper: OnceCell::new(),
            context_namespace: OnceCell::new(),
        }
    }

    /// Standard output (never hold it across an `.await`).
    pub fn out(&self) -> MutexGuard<'_, Box<dyn Write + Send>> {
        lock(&self.io.out)
    }

    /// Standard error (never hold it across an `.await`).
    pub fn err(&self) -> MutexGuard<'_, Box<dyn Write + Send>> {
        lock(&self.io.err)
    }

    /// Reads all of standard input.
    pub fn read_stdin(&self) -> Result<Vec<u8>> {
        let mut buf = Vec::new();
        lock(&self.io.input).read_to_end(&mut buf)?;
        Ok(buf)
    }

    /// The API client, built from the kubeconfig and the flags on first use.
    pub async fn client(&self) -> Result<&RestClient> {
        self.client
            .get_or_try_init(|| async {
                let loaded = crate::kubeconfig::client_for(&self.global).await?;
                let _ = self.context_namespace.set(loaded.namespace.clone());
                Ok::<_, CliError>(loaded.client)
            })
            .await
    }

    /// The REST mapper (discovery, through the disk cache), loaded on first use.
    pub async fn mapper(&self) -> Result<&Mapper> {
        self.mapper
            .get_or_try_init(|| async { Mapper::load(self).await })
            .await
    }

    /// The namespace of this request: `-n`, else the kubeconfig context's, else `default`.
    pub async fn namespace(&self) -> Result<String> {
        if let Some(ns) = &self.global.namespace {
            return Ok(ns.clone());
        }
        self.client().await?;
        Ok(self
            .context_namespace
            .get()
            .cloned()
            .flatten()
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| "default".to_string()))
    }

    /// Whether `-n` was given explicitly (kubectl refuses some namespace mismatches only
    /// then).
    pub fn namespace_explicit(&self) -> bool {
        self.global.namespace.is_some()
    }
}
