//! A policy plugin whose `adjust` panics on its first call and asks for one
//! synthesis at a time on its second: the host must carry on past the
//! panic and keep asking.

use std::sync::atomic::{AtomicUsize, Ordering};
use zkpipe_core::Error;
use zkpipe_core::sched::policy_plugin::PolicyPlugin;
use zkpipe_core::sched::{Limits, Observation, Policy, Settings};

/// Panics, then answers once.
#[derive(Debug)]
pub struct Panicky {
    settings: Settings,
    calls: AtomicUsize,
}

impl Policy for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn adjust(&self, seen: &Observation<'_>) -> Option<Limits> {
        match self.calls.fetch_add(1, Ordering::Relaxed) {
            0 => panic!("adjust panics on its first call"),
            1 => Some(Limits {
                synthesis: 1,
                ..seen.limits
            }),
            _ => None,
        }
    }
}

impl PolicyPlugin for Panicky {
    fn create(settings: Settings) -> Result<Self, Error> {
        Ok(Panicky {
            settings,
            calls: AtomicUsize::new(0),
        })
    }
}

zkpipe_core::export_policy!(Panicky);
