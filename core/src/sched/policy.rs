//! Scheduling policies: what runs next, where, and with which knobs.

use std::sync::Arc;

use super::engine::Span;
use super::settings::{Dealloc, G2Placement, JobOrder, Settings};
use crate::Error;

/// The limits of each class of work that a policy may move while the
/// engine runs (the threads stay; only this many may work at once).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Limits {
    /// Witness syntheses at once (compute-bound).
    pub synthesis: usize,
    /// Host SpMVs at once (bandwidth-bound).
    pub spmv: usize,
    /// Partitions synthesized ahead of the devices.
    pub lookahead: usize,
}

impl Limits {
    /// These limits as the engine applies them, whoever proposed them:
    /// synthesis and SpMV each between 1 and its ceiling (a class with no
    /// threads stays at 0), the lookahead, which has no threads behind it,
    /// between 1 and four times its knob.
    pub fn within(self, ceiling: Limits) -> Limits {
        let clamp = |v: usize, most: usize| v.clamp(most.min(1), most);
        Limits {
            synthesis: clamp(self.synthesis, ceiling.synthesis),
            spmv: clamp(self.spmv, ceiling.spmv),
            lookahead: self
                .lookahead
                .clamp(1, ceiling.lookahead.saturating_mul(4).max(1)),
        }
    }
}

/// What the engine shows a policy after a partition's device stages end.
#[derive(Debug)]
pub struct Observation<'a> {
    /// Milliseconds since the engine started (the spans' clock).
    pub now_ms: f64,
    /// The most recent spans, in completion order (a bounded window).
    pub recent: &'a [Span],
    /// The limits in force.
    pub limits: Limits,
    /// The most each limit can be: the threads the engine started.
    pub ceiling: Limits,
    /// Partitions synthesized and waiting for a host SpMV.
    pub waiting_spmv: usize,
    /// Partitions ready and waiting for a device.
    pub waiting_device: usize,
    /// Devices.
    pub devices: usize,
}

/// A partition waiting in a queue, as a policy sees it (FFI-safe: policy
/// plugins receive slices of these).
#[repr(C)]
#[derive(abi_stable::StableAbi, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ticket {
    /// Job id (submission order).
    pub job: u64,
    /// Partition index within the job.
    pub partition: u32,
    /// Partitions in the job.
    pub partitions: u32,
    /// Job priority: higher runs first under [`JobOrder::Priority`].
    pub priority: i32,
    /// Arrival sequence number (unique, increasing).
    pub seq: u64,
}

/// The decisions the engine delegates. Object-safe, so policies can be
/// built in, configured at run time, or loaded from a plugin.
pub trait Policy: Send + Sync {
    /// Name for reports.
    fn name(&self) -> &str;
    /// The knobs this policy runs with.
    fn settings(&self) -> &Settings;
    /// Index into `queue` (non-empty) of the partition to run next.
    fn pick(&self, queue: &[Ticket]) -> usize {
        let key = |t: &Ticket| match self.settings().order {
            JobOrder::Fifo => (0i64, 0u32, t.seq),
            JobOrder::Priority => (-(t.priority as i64), 0, t.seq),
            JobOrder::ShortestFirst => (0, t.partitions, t.seq),
        };
        (0..queue.len())
            .min_by_key(|&i| key(&queue[i]))
            .expect("pick on an empty queue")
    }
    /// Device for a partition, given each device's partitions in flight:
    /// the least loaded, ties taken in turn (by the ticket's arrival), so
    /// that devices that keep up with the host share the work instead of
    /// the first one taking all of it.
    fn place(&self, ticket: &Ticket, load: &[usize]) -> usize {
        let Some(&least) = load.iter().min() else {
            return 0;
        };
        let tied: Vec<usize> = (0..load.len()).filter(|&d| load[d] == least).collect();
        tied[(ticket.seq % tied.len() as u64) as usize]
    }
    /// Whether a partition needing `need` bytes may start with `in_use` of `budget` taken.
    fn admit(&self, need: u64, in_use: u64, budget: u64) -> bool {
        in_use + need <= budget
    }
    /// New limits for the classes of work, given what the engine saw; the
    /// engine calls it after each partition's device stages end, from that
    /// device worker, with no engine lock held. `None` keeps them (the
    /// default: the knobs stand); an answer is kept [`Limits::within`] the
    /// ceiling; a panic keeps the limits in force.
    fn adjust(&self, _seen: &Observation<'_>) -> Option<Limits> {
        None
    }
}

/// A built-in policy: a name and knobs.
#[derive(Clone, Debug)]
pub struct Builtin {
    name: String,
    settings: Settings,
}

impl Policy for Builtin {
    fn name(&self) -> &str {
        &self.name
    }
    fn settings(&self) -> &Settings {
        &self.settings
    }
}

/// Names of the built-in policies.
pub const BUILTINS: [&str; 6] = [
    "adaptive",
    "serial",
    "pipelined",
    "split",
    "throttle",
    "priority",
];

/// A built-in policy by name, with `overrides` (`key=value`) applied on top
/// of its preset.
///
/// - `adaptive`: `pipelined`, moving the limits of synthesis, SpMV and
///   lookahead while it runs from the stage times it sees (see
///   [`super::adaptive`]).
/// - `serial`: one synthesis worker, one device worker, B in G2 on the device.
/// - `pipelined`: two device workers per device; synthesis workers and
///   SpMV sized from the machine unless set.
/// - `split`: `pipelined`, with B in G2 on the CPU pool off the critical path.
/// - `throttle`: `split`, pausing synthesis while CPU MSMs run.
/// - `priority`: `pipelined`, high-priority jobs' partitions first.
///
/// # Errors
/// [`Error::InvalidInput`] for an unknown name or bad override.
pub fn builtin(
    name: &str,
    base: Option<Settings>,
    overrides: &[(String, String)],
) -> Result<Arc<dyn Policy>, Error> {
    let mut s = base.unwrap_or_default();
    match name {
        "serial" => {
            s.partition_workers = 1;
            s.gpu_workers_per_device = 1;
        }
        "adaptive" | "pipelined" | "split" | "throttle" | "priority" => {
            s.gpu_workers_per_device = s.gpu_workers_per_device.max(2);
        }
        _ => {
            return Err(Error::InvalidInput(format!(
                "unknown policy `{name}`; built-in: {}",
                BUILTINS.join(", ")
            )));
        }
    }
    match name {
        "split" => s.b_g2 = G2Placement::CpuSplit,
        "throttle" => {
            s.b_g2 = G2Placement::CpuSplit;
            s.throttle = true;
        }
        "priority" => s.order = JobOrder::Priority,
        _ => {}
    }
    if name == "serial" {
        s.dealloc = Dealloc::Inline;
    }
    for (k, v) in overrides {
        s.set(k, v)?;
    }
    s.validate()?;
    if name == "adaptive" {
        return Ok(Arc::new(super::adaptive::Adaptive::new(name, s)));
    }
    Ok(Arc::new(Builtin {
        name: name.to_string(),
        settings: s,
    }))
}
