//! The controller runtime, as upstream's `client-go/util/workqueue` and
//! `pkg/controller` helpers: the pieces every controller of the controller manager and the
//! scheduler is built from.
//!
//! - [`workqueue::WorkQueue`]: a deduplicating queue of keys (an item is queued once
//!   however often it is added, and never handed to two workers at once), with delayed
//!   adds and per-item rate limiting ([`ratelimit`]).
//! - [`expectations::Expectations`]: upstream's `ControllerExpectations`, so a controller
//!   does not create or delete again while its cache has not caught up with what it did.

pub mod expectations;
pub mod ratelimit;
pub mod workqueue;
