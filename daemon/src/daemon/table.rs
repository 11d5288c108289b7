//! The jobs the daemon knows: each one's request, state and result, from
//! submission until its result expires; ids, idempotency and queue
//! positions.

use std::collections::HashMap;
use std::time::Instant;

use tokio::sync::watch;

use super::NewJob;
use crate::proto::{self, JobState};

/// A job as the table keeps it.
pub(super) struct Job {
    pub(super) spec: NewJob,
    pub(super) submitted: Instant,
    pub(super) engine_id: Option<u64>,
    pub(super) state: JobState,
    pub(super) result: Option<proto::JobResult>,
    pub(super) ended: Option<Instant>,
    pub(super) done: watch::Sender<bool>,
    /// Seconds per stage so far, summed over partitions, and of those the
    /// seconds on a device.
    pub(super) stage_s: [f64; zkpipe_core::stage::Stage::ALL.len()],
    pub(super) device_s: f64,
}

/// Every job the daemon knows, by id; ids by request id, for idempotency.
pub(super) struct Table {
    pub(super) jobs: HashMap<u64, Job>,
    pub(super) by_request: HashMap<String, u64>,
    pub(super) next_id: u64,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            jobs: HashMap::new(),
            by_request: HashMap::new(),
            next_id: first_job_id(),
        }
    }
}

/// Job ids of one run start at its start time in milliseconds × 1,000, so
/// that an id from before a restart is never another client's job after
/// it (a run would need 1,000 jobs per millisecond to reach the next
/// run's first id); below 2^53 until the year 2255, so exact in JSON.
fn first_job_id() -> u64 {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    ms.saturating_mul(1000)
}

/// Jobs not ended that will start before `id`: higher priority, or the
/// same and submitted earlier, and not yet running.
pub(super) fn queue_position(table: &Table, id: u64) -> u32 {
    let me = &table.jobs[&id];
    table
        .jobs
        .iter()
        .filter(|&(&other, j)| {
            other != id
                && j.ended.is_none()
                && (j.spec.priority as i32 > me.spec.priority as i32
                    || (j.spec.priority == me.spec.priority && other < id))
        })
        .count() as u32
}
