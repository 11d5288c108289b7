//! Stopping: the daemon refuses new jobs, then counts and cancels those
//! not ended (the server drives it on SIGTERM).

use std::sync::atomic::Ordering;

use super::Daemon;

impl Daemon {
    /// Stops taking jobs (Submit answers UNAVAILABLE).
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Jobs not ended.
    pub fn in_flight(&self) -> usize {
        let table = self.table.lock().unwrap();
        table.jobs.values().filter(|j| j.ended.is_none()).count()
    }

    /// Cancels every job not ended, with `why`.
    pub fn cancel_all(&self, why: &str) {
        let ids: Vec<u64> = {
            let table = self.table.lock().unwrap();
            table
                .jobs
                .iter()
                .filter(|(_, j)| j.ended.is_none())
                .map(|(&id, _)| id)
                .collect()
        };
        for id in ids {
            self.cancel(id, why);
        }
    }
}
