//! The etcd backend over TLS with client certificates, against a real etcd that requires
//! them.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use bytes::Bytes;
use store::etcd::{EtcdBackend, EtcdOptions};
use store::{Backend, StoreError};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_certificates() {
    let etcd = tokio::task::spawn_blocking(testkit::Etcd::start_tls)
        .await
        .unwrap();
    let tls = etcd.tls.clone().unwrap();
    let mut opts = EtcdOptions::from_endpoints(&etcd.endpoint_list()).unwrap();
    opts.ca_file = Some(tls.ca_file.clone());
    opts.cert_file = Some(tls.client.cert_file.clone());
    opts.key_file = Some(tls.client.key_file.clone());
    let s = EtcdBackend::connect(opts.clone()).await.unwrap();
    let kv = s
        .create("/tls/a", Bytes::from_static(b"secure"), None)
        .await
        .unwrap();
    assert_eq!(s.get("/tls/a").await.unwrap().unwrap(), kv);

    // Without a client certificate the server refuses, and we say so at connect time.
    let mut no_cert = opts.clone();
    no_cert.cert_file = None;
    no_cert.key_file = None;
    match EtcdBackend::connect(no_cert).await {
        Err(StoreError::Unavailable(msg)) => assert!(msg.contains("etcd"), "{msg}"),
        Err(e) => panic!("unexpected {e}"),
        Ok(_) => panic!("etcd must refuse a client without a certificate"),
    }
    // A certificate without its key is a configuration error.
    let mut half = opts.clone();
    half.key_file = None;
    assert!(matches!(
        EtcdBackend::connect(half).await,
        Err(StoreError::Unavailable(msg)) if msg.contains("together")
    ));
    // A CA that does not exist.
    let mut bad_ca = opts;
    bad_ca.ca_file = Some("/nonexistent/ca.crt".into());
    assert!(EtcdBackend::connect(bad_ca).await.is_err());
    // Endpoints must be URLs.
    assert!(EtcdOptions::from_endpoints("127.0.0.1:2379").is_err());
    assert!(EtcdOptions::from_endpoints(" , ").is_err());
}
