//! An example scheduling policy plugin, and the template for writing one.
//!
//! `round-robin` serves jobs in turn: the next partition comes from the job
//! after the one served last (by job id, wrapping around), so a big job
//! cannot hold the workers while small ones wait — without priorities.
//!
//! To write a policy: implement [`Policy`] (only `name` and `settings` are
//! required; `pick`, `place` and `admit` have defaults) and [`PolicyPlugin`]
//! (the constructor, which receives the host's knobs), export it with
//! `zkpipe_core::export_policy!`, build the crate as a `cdylib`, and pass the
//! library's path to `zkpipe bench batch --policy`.

use std::sync::Mutex;
use zkpipe_core::Error;
use zkpipe_core::sched::plugin::PolicyPlugin;
use zkpipe_core::sched::{Policy, Settings, Ticket};

/// Serves jobs in turn.
#[derive(Debug)]
pub struct RoundRobin {
    settings: Settings,
    /// The job served last.
    last: Mutex<Option<u64>>,
}

impl Policy for RoundRobin {
    fn name(&self) -> &str {
        "round-robin"
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn pick(&self, queue: &[Ticket]) -> usize {
        let mut last = self.last.lock().unwrap();
        // Jobs after the last one served come first, in id order; then wrap.
        let key = |t: &Ticket| (last.is_some_and(|l| t.job <= l), t.job, t.seq);
        let i = (0..queue.len())
            .min_by_key(|&i| key(&queue[i]))
            .expect("non-empty queue");
        *last = Some(queue[i].job);
        i
    }
}

impl PolicyPlugin for RoundRobin {
    fn create(mut settings: Settings) -> Result<Self, Error> {
        // Preset: pipelined workers, like the built-in `pipelined`.
        settings.partition_workers = settings.partition_workers.max(2);
        settings.gpu_workers_per_device = settings.gpu_workers_per_device.max(2);
        Ok(RoundRobin {
            settings,
            last: Mutex::new(None),
        })
    }
}

zkpipe_core::export_policy!(RoundRobin);
