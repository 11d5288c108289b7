//! An example scheduling policy plugin, and the template for writing one.
//!
//! `round-robin` serves jobs in turn: the queued partition with the lowest
//! index within its job goes first (ties by arrival), so every job gets its
//! first partition through before any job gets its second — a big job
//! cannot hold the workers while small ones wait, without priorities. The
//! rule is stateless, so it means the same on every queue the engine asks
//! about (synthesis, device, CPU pool).
//!
//! To write a policy: implement [`Policy`] (only `name` and `settings` are
//! required; `pick`, `place`, `admit` and `adjust` have defaults) and [`PolicyPlugin`]
//! (the constructor, which receives the host's knobs), export it with
//! `zkpipe_core::export_policy!`, build the crate as a `cdylib`, and pass the
//! library's path to `zkpipe bench batch --policy`.

use zkpipe_core::Error;
use zkpipe_core::sched::policy_plugin::PolicyPlugin;
use zkpipe_core::sched::{Policy, Settings, Ticket};

/// Serves jobs in turn.
#[derive(Debug)]
pub struct RoundRobin {
    settings: Settings,
}

impl Policy for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn pick(&self, queue: &[Ticket]) -> usize {
        (0..queue.len())
            .min_by_key(|&i| (queue[i].partition, queue[i].seq))
            .expect("non-empty queue")
    }
}

impl PolicyPlugin for RoundRobin {
    fn create(mut settings: Settings) -> Result<Self, Error> {
        // Preset: pipelined workers, like the built-in `pipelined`.
        settings.partition_workers = settings.partition_workers.max(2);
        settings.gpu_workers_per_device = settings.gpu_workers_per_device.max(2);
        Ok(RoundRobin { settings })
    }
}

zkpipe_core::export_policy!(RoundRobin);
