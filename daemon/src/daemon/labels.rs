//! The words for priorities and job states, in metrics, logs and the CLI.

use crate::proto::{JobState, Priority};

/// `low`, `normal`, `high`, `critical`.
pub fn priority_label(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::High => "high",
        Priority::Critical => "critical",
        Priority::Normal | Priority::Unspecified => "normal",
    }
}

/// `succeeded`, `failed`, `cancelled`, `queued`, `running`.
pub fn state_label(s: JobState) -> &'static str {
    match s {
        JobState::Succeeded => "succeeded",
        JobState::Failed => "failed",
        JobState::Cancelled => "cancelled",
        JobState::Running => "running",
        JobState::Queued | JobState::Unspecified => "queued",
    }
}
