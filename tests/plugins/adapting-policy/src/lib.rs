//! A policy plugin that adapts: after its first coherent observation it
//! runs one synthesis at a time, and asks for an SpMV limit of 0 and an
//! endless lookahead, which the host must keep within the engine's ceiling.

use std::sync::atomic::{AtomicBool, Ordering};
use zkpipe_core::Error;
use zkpipe_core::sched::policy_plugin::PolicyPlugin;
use zkpipe_core::sched::{Limits, Observation, Policy, Settings};
use zkpipe_core::stage::Stage;

/// Answers once, after an observation that crossed the seam whole.
#[derive(Debug)]
pub struct Adapting {
    settings: Settings,
    answered: AtomicBool,
}

/// Whether `seen` is what the engine shows after a partition's device
/// stages: nothing moved yet, a witness on the host, a stage on a device,
/// every span over by now.
fn whole(seen: &Observation<'_>) -> bool {
    seen.limits == seen.ceiling
        && seen.devices >= 1
        && seen
            .recent
            .iter()
            .any(|s| s.stage == Stage::Witness && s.device.is_none())
        && seen
            .recent
            .iter()
            .any(|s| s.device.is_some_and(|d| d < seen.devices) && !s.lane.is_empty())
        && seen
            .recent
            .iter()
            .all(|s| s.start_ms <= s.end_ms && s.end_ms <= seen.now_ms)
}

impl Policy for Adapting {
    fn name(&self) -> &str {
        "adapting"
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn adjust(&self, seen: &Observation<'_>) -> Option<Limits> {
        if !whole(seen) || self.answered.swap(true, Ordering::Relaxed) {
            return None;
        }
        Some(Limits {
            synthesis: 1,
            spmv: 0,
            lookahead: usize::MAX,
        })
    }
}

impl PolicyPlugin for Adapting {
    fn create(settings: Settings) -> Result<Self, Error> {
        Ok(Adapting {
            settings,
            answered: AtomicBool::new(false),
        })
    }
}

zkpipe_core::export_policy!(Adapting);
