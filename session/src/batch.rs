//! A batch: many proof requests of one circuit through the scheduling
//! engine under one policy, measured.

use std::path::PathBuf;
use std::sync::Arc;

use zkpipe_core::Error;
use zkpipe_core::groth16::PreparedVerifyingKey;
use zkpipe_core::sched::batch::{self, BatchSpec, BatchVerifier, Finished, Verify};
use zkpipe_core::sched::groth16_workload::Groth16Workload;
use zkpipe_core::sched::metrics::Summary;
use zkpipe_core::sched::{Engine, Policy, Span};

use crate::Session;
use crate::builtin::BuiltinRequest;
use crate::keys::{BuiltinKey, KeySource};

/// What every request of a batch proves.
#[derive(Debug, Clone)]
pub enum BatchCircuit {
    /// A built-in circuit (BLS12-381), a new witness per partition.
    Builtin(BuiltinRequest),
    /// A snarkjs BN254 zkey and one witness of its circuit, which every
    /// partition proves (blinded afresh).
    Bn254Zkey {
        /// The zkey.
        zkey: PathBuf,
        /// The witness (`.wtns`).
        wtns: PathBuf,
    },
}

/// The workload of a batch.
#[derive(Debug, Clone)]
pub struct BatchRequest {
    /// The circuit every request proves.
    pub circuit: BatchCircuit,
    /// Partitions per request.
    pub partitions: u32,
    /// Requests.
    pub count: u32,
    /// Requests in flight at once.
    pub concurrency: u32,
    /// Random valid keys instead of a setup: timing only, nothing verified
    /// (built-in circuits only).
    pub synthetic: bool,
    /// Verify every proof (else the first partition of each request).
    pub verify_all: bool,
}

impl BatchRequest {
    fn verify(&self, synthetic: bool) -> Verify {
        match (synthetic, self.verify_all) {
            (true, _) => Verify::None,
            (false, true) => Verify::All,
            (false, false) => Verify::Sample,
        }
    }
}

impl Session {
    /// Runs `request` under `policy` on every device of the session's
    /// backend (one device for BN254), telling `each` about every request
    /// as it finishes; returns the summary and the timeline of spans.
    ///
    /// # Errors
    /// As [`BuiltinRequest::check_fits`] and [`KeySource::load`]; for a
    /// zkey, files that are missing, malformed or of BLS12-381, a witness
    /// the key cannot take or whose proofs do not verify (exit 2); errors
    /// building the engine's workload. A request that fails is counted in
    /// the summary, not an error here.
    pub fn batch(
        &self,
        request: &BatchRequest,
        policy: Arc<dyn Policy>,
        each: &mut dyn FnMut(&Finished<'_>),
    ) -> Result<(Summary, Vec<Span>), Error> {
        match &request.circuit {
            BatchCircuit::Builtin(builtin) => {
                builtin.check_fits()?;
                let loaded = BuiltinKey {
                    request: builtin.clone(),
                    user_dir: None,
                    synthetic: request.synthetic,
                }
                .load(self.progress())?;
                let params = Arc::new(loaded.params);
                let workload = batch::groth16_workload(
                    self.registry(),
                    self.backend().clone(),
                    params.clone(),
                    Arc::new(loaded.r1cs),
                    loaded.circuit,
                    policy.settings(),
                )?;
                let verifier =
                    BatchVerifier::Bls12_381(Box::new(PreparedVerifyingKey::new(&params.vk)));
                let verify = request.verify(loaded.synthetic);
                run(workload, &verifier, verify, request, policy, each)
            }
            BatchCircuit::Bn254Zkey { zkey, wtns } => {
                if request.synthetic {
                    return Err(Error::InvalidInput(
                        "synthetic keys are for built-in circuits; a zkey is a key already".into(),
                    ));
                }
                let (key, witness) = self.load_bn254_pair(zkey, wtns)?;
                let verifier = BatchVerifier::Bn254(Box::new(key.points.vk.clone()));
                let workload = batch::bn254_workload(
                    self.registry(),
                    self.backend().clone(),
                    Arc::new(key),
                    Arc::new(witness),
                    policy.settings(),
                )?;
                let verify = request.verify(false);
                run(workload, &verifier, verify, request, policy, each).map_err(|e| match e {
                    // The prover checks no constraint: a proof that does
                    // not verify says the witness is not the circuit's.
                    Error::Failed(why) if why == batch::PROOF_REJECTED => {
                        Error::InvalidInput(format!(
                            "{}: a proof does not verify against {}: the witness does not \
                             satisfy the key's circuit (a witness of another circuit or input?)",
                            wtns.display(),
                            zkey.display()
                        ))
                    }
                    e => e,
                })
            }
        }
    }
}

fn run(
    workload: Groth16Workload,
    verifier: &BatchVerifier,
    verify: Verify,
    request: &BatchRequest,
    policy: Arc<dyn Policy>,
    each: &mut dyn FnMut(&Finished<'_>),
) -> Result<(Summary, Vec<Span>), Error> {
    let engine = Engine::new(workload, policy.clone())?;
    let spec = BatchSpec {
        count: request.count,
        partitions: request.partitions,
        concurrency: request.concurrency,
        verify,
    };
    let run = batch::run_batch(engine, &spec, verifier, each)?;
    Ok((
        batch::summarize(policy.as_ref(), &run, request.count),
        run.timeline,
    ))
}
