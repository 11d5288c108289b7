//! The scheduling engine: many proof requests, each of P partitions sharing
//! a key, run through per-partition stages on worker pools, under a
//! [`Policy`] that decides order, placement and the knobs a proving daemon
//! is tuned with (see the seeds: workers per GPU, CPU pool size, where B in
//! G2 runs, dealloc mode, a synthesis throttle, memory admission).
//!
//! - [`settings`]: the knobs, settable as `key=value` or from TOML.
//! - [`policy`]: the [`Policy`] trait and the built-in policies.
//! - [`adaptive`]: the policy that moves the limits while it runs.
//! - [`engine`]: threads, queues and the timeline, over any [`Workload`].
//! - [`groth16_workload`]: the real workload — zkpipe's Groth16 prover on a backend.
//! - [`policy_plugin`]: policies as plugins (`cdylib`s loaded at run time).
//! - [`batch`]: a batch of requests on every device of a backend, measured.
//! - [`metrics`]: what a batch measured (latency, throughput, device busy).

pub mod adaptive;
pub mod batch;
pub mod engine;
pub mod groth16_workload;
pub mod metrics;
pub mod policy;
pub mod policy_plugin;
pub mod settings;

pub use engine::{Engine, JobHandle, JobOutcome, JobRequest, JobView, Span, Timeline, Workload};
pub use policy::{Limits, Observation, Policy, Ticket, builtin};
pub use settings::{Dealloc, DeviceLock, G2Placement, JobOrder, MachineShape, Settings};
