//! The controllers of the controller manager. Each reconciler is a pure function of the
//! cached state it needs, returning the actions to take (objects to create, delete,
//! adopt, release, the status to write), so its logic is tested without IO; the loops that
//! feed them from informers and carry the actions out through the API server come with the
//! rest of issue 5.

pub mod cachedpod;
pub mod cronjob;
pub mod daemonset;
pub mod deployment;
pub mod disruption;
pub mod endpoints;
pub mod endpointslice;
pub mod gc;
pub mod gcloop;
pub mod history;
pub mod informers;
pub mod job;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod podgc;
pub mod pods;
pub mod replicaset;
pub mod resourcequota;
pub mod rootca;
pub mod run;
pub mod serviceaccounts;
pub mod services;
pub mod statefulset;
pub mod ttlafterfinished;
mod util;
