//! zkpipe's fleet queue: many proving nodes share one job queue in
//! PostgreSQL (or anything that speaks its protocol and `SKIP LOCKED`).
//!
//! - [`Queue`] is the handle: [`Queue::submit`] (idempotent on a request
//!   id), [`Queue::claim`] (highest priority, oldest, only what the node can
//!   run, with key affinity), [`Queue::heartbeat`] (renews leases),
//!   [`Queue::complete`] / [`Queue::fail`] (checked against the lease, so a
//!   job is completed once), [`Queue::maintain`] (expired leases, jobs no
//!   node can run), [`Queue::cancel`], [`Queue::await_job`] (`LISTEN`/
//!   `NOTIFY`; [`Queue::await_job_with`] bounds and reports database
//!   outages) and [`Queue::status`].
//! - [`redact_url`] hides a URL's password wherever it is shown; the
//!   password may instead come from [`QueueConfig::password_file`] or
//!   `$PGPASSWORD`.
//! - [`run_node`] is a whole node: give it a [`JobRunner`] (what to do with
//!   a claimed job) and it claims, runs, writes back, heartbeats and rides
//!   out database restarts.
//! - [`schema`] holds the versioned migrations.
//!
//! The protocol and the reasoning behind it are in `docs/fleet.md`.

mod backoff;
mod error;
mod node;
mod payload;
mod queue;
pub mod schema;
mod secret;
#[cfg(feature = "testing")]
pub mod testing;
mod tls;
mod types;

pub use backoff::Backoff;
pub use error::{Error, Result};
pub use node::{JobFailure, JobOutput, JobRunner, NodeOptions, run_node};
pub use payload::check_payload_dir;
pub use queue::{Queue, WaitEvent};
pub use secret::{MAX_PASSWORD_FILE, read_password_file, redact_url, redact_urls_in};
pub use types::{
    ClaimedJob, FailOutcome, JobRecord, JobState, Lease, Maintenance, NewJob, NodeInfo, NodeStatus,
    Payload, QueueConfig, Status, Submitted,
};
