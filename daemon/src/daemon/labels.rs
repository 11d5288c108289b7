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

/// The priority a label names, in any case (the inverse of
/// [`priority_label`]).
///
/// # Errors
/// The labels it takes, for any other word.
pub fn priority_from_label(s: &str) -> Result<Priority, String> {
    [
        Priority::Low,
        Priority::Normal,
        Priority::High,
        Priority::Critical,
    ]
    .into_iter()
    .find(|p| s.eq_ignore_ascii_case(priority_label(*p)))
    .ok_or_else(|| format!("`{s}`: low, normal, high or critical"))
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
