//! The controllers of the controller manager. Each reconciler is a pure function of the
//! cached state it needs, returning the actions to take (objects to create, delete,
//! adopt, release, the status to write), so its logic is tested without IO; the loops that
//! feed them from informers and carry the actions out through the API server come with the
//! rest of issue 5.

pub mod deployment;
pub mod gc;
pub mod informers;
pub mod namespace;
pub mod nodeipam;
pub mod nodelifecycle;
pub mod pods;
pub mod replicaset;
pub mod run;
