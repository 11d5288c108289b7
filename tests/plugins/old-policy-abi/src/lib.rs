//! A policy plugin that claims the policy ABI before this one: the loader
//! must refuse it, saying so.

use zkpipe_core::Error;
use zkpipe_core::sched::policy_plugin::{POLICY_ABI_VERSION, PolicyPlugin};
use zkpipe_core::sched::{Policy, Settings};

/// The default decisions.
#[derive(Debug)]
pub struct OldPolicyAbi(Settings);

impl Policy for OldPolicyAbi {
    fn name(&self) -> &str {
        "old-policy-abi"
    }

    fn settings(&self) -> &Settings {
        &self.0
    }
}

impl PolicyPlugin for OldPolicyAbi {
    fn create(settings: Settings) -> Result<Self, Error> {
        Ok(OldPolicyAbi(settings))
    }
}

zkpipe_core::export_policy!(OldPolicyAbi, abi_version = POLICY_ABI_VERSION - 1);
