//! Backends for the integration tests, each with whatever keeps it alive.

#![allow(dead_code)]

use std::sync::Arc;

use store::Backend;
use store::etcd::{EtcdBackend, EtcdOptions};
use store::memory::MemoryBackend;
use store::sqlite::SqliteBackend;

pub struct Harness {
    pub backend: Arc<dyn Backend>,
    pub kind: Kind,
    _dir: Option<tempfile::TempDir>,
    _etcd: Option<testkit::Etcd>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Sqlite,
    Etcd,
    EtcdCluster,
}

impl Harness {
    pub async fn new(kind: Kind) -> Harness {
        if std::env::var_os("RUST_LOG").is_some() {
            let _ = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
                .with_test_writer()
                .try_init();
        }
        match kind {
            Kind::Memory => Harness {
                backend: Arc::new(MemoryBackend::new()),
                kind,
                _dir: None,
                _etcd: None,
            },
            Kind::Sqlite => {
                let dir = tempfile::tempdir().expect("tempdir");
                let backend =
                    SqliteBackend::open(dir.path().join("db/state.db")).expect("open sqlite");
                Harness {
                    backend: Arc::new(backend),
                    kind,
                    _dir: Some(dir),
                    _etcd: None,
                }
            }
            Kind::Etcd | Kind::EtcdCluster => {
                let n = if kind == Kind::Etcd { 1 } else { 3 };
                let etcd = tokio::task::spawn_blocking(move || testkit::Etcd::start_cluster(n))
                    .await
                    .expect("start etcd");
                let opts = EtcdOptions::from_endpoints(&etcd.endpoint_list()).expect("endpoints");
                let backend = EtcdBackend::connect(opts).await.expect("connect etcd");
                Harness {
                    backend: Arc::new(backend),
                    kind,
                    _dir: None,
                    _etcd: Some(etcd),
                }
            }
        }
    }
}
