//! The scheduler: pods without a node get one, as upstream's kube-scheduler places them.
//!
//! - [`model`]: the compact pod and node views the plugins read (parsed once per event);
//! - [`cache`]: nodes with their bound and assumed pods, and the per-topology-domain
//!   counters that keep spreading and inter-pod affinity incremental;
//! - [`framework`]: the plugin extension points, profiles, and one scheduling cycle as a
//!   pure function (`percentageOfNodesToScore`, weighted normalized scores);
//! - [`plugins`], [`topology`]: the default plugins with upstream's reasons and formulas;
//! - [`preemption`]: upstream's DefaultPreemption;
//! - [`queue`]: the active / back-off / unschedulable queue;
//! - [`config`]: profiles from `KubeSchedulerConfiguration` or an older `Policy` file;
//! - [`run`]: the loop over the API server (informers, binding, events, status);
//! - [`metrics`]: upstream's scheduler metrics for `/metrics`.

pub mod cache;
pub mod config;
pub mod framework;
pub mod metrics;
pub mod model;
pub mod plugins;
pub mod preemption;
pub mod queue;
pub mod run;
pub mod topology;

pub use framework::fit_error;

#[cfg(test)]
mod tests;
