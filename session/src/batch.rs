//! A batch: many proof requests of a built-in circuit through the
//! scheduling engine under one policy, measured.

use std::sync::Arc;

use zkpipe_core::Error;
use zkpipe_core::groth16::PreparedVerifyingKey;
use zkpipe_core::sched::batch::{self, BatchSpec, Finished, Verify};
use zkpipe_core::sched::metrics::Summary;
use zkpipe_core::sched::{Engine, Policy, Span};

use crate::Session;
use crate::builtin::BuiltinRequest;
use crate::keys::{BuiltinKey, KeySource};

/// The workload of a batch.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    /// The circuit every request proves.
    pub builtin: BuiltinRequest,
    /// Partitions per request.
    pub partitions: u32,
    /// Requests.
    pub count: u32,
    /// Requests in flight at once.
    pub concurrency: u32,
    /// Random valid keys instead of a setup: timing only, nothing verified.
    pub synthetic: bool,
    /// Verify every proof (else the first partition of each request).
    pub verify_all: bool,
}

impl Session {
    /// Runs `request` under `policy` on every device of the session's
    /// backend, telling `each` about every request as it finishes; returns
    /// the summary and the timeline of spans.
    ///
    /// # Errors
    /// As [`BuiltinRequest::check_fits`] and [`KeySource::load`]; errors building the engine's workload.
    /// A request that fails is counted in the summary, not an error here.
    pub fn batch(
        &self,
        request: &BatchRequest,
        policy: Arc<dyn Policy>,
        each: &mut dyn FnMut(&Finished<'_>),
    ) -> Result<(Summary, Vec<Span>), Error> {
        request.builtin.check_fits()?;
        let loaded = BuiltinKey {
            request: request.builtin.clone(),
            user_dir: None,
            synthetic: request.synthetic,
        }
        .load(self.progress())?;
        let verify = match (loaded.synthetic, request.verify_all) {
            (true, _) => Verify::None,
            (false, true) => Verify::All,
            (false, false) => Verify::Sample,
        };
        let params = Arc::new(loaded.params);
        let workload = batch::groth16_workload(
            self.registry(),
            self.backend().clone(),
            params.clone(),
            Arc::new(loaded.r1cs),
            loaded.circuit,
            policy.settings(),
        )?;
        let engine = Engine::new(workload, policy.clone())?;
        let pvk = PreparedVerifyingKey::new(&params.vk);
        let spec = BatchSpec {
            count: request.count,
            partitions: request.partitions,
            concurrency: request.concurrency,
            verify,
        };
        let run = batch::run_batch(engine, &spec, &pvk, each)?;
        Ok((
            batch::summarize(policy.as_ref(), &run, request.count),
            run.timeline,
        ))
    }
}
