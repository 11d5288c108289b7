//! Verify before return: every proof is checked against the key's
//! verifying key; a partition that fails is proved again on the CPU
//! reference backend, and only a proof that verifies is ever returned.

use std::sync::Arc;

use zkpipe_core::groth16::{self, ProverBuilder};
use zkpipe_core::sched::groth16_workload::ProofOutput;
use zkpipe_core::{Backend, Error};

use crate::source::Spec;

/// A partition whose device proof failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadProof {
    /// Partition index.
    pub partition: usize,
    /// The device that made it (`None`: the host).
    pub device: Option<usize>,
}

/// The partitions of `proofs` that do not verify.
///
/// # Errors
/// Verification errors (a key or inputs of the wrong shape).
pub fn failing(spec: &Spec, proofs: &[ProofOutput]) -> Result<Vec<BadProof>, Error> {
    let mut bad = vec![];
    for (partition, p) in proofs.iter().enumerate() {
        if !groth16::verify(&spec.key.pvk, &p.proof, &p.public_inputs)? {
            bad.push(BadProof {
                partition,
                device: p.device,
            });
        }
    }
    Ok(bad)
}

/// Proves `bad`'s partitions again on `cpu` (the reference backend) with
/// fresh blinding, replacing them in `proofs` when they verify.
///
/// # Errors
/// [`Error::Failed`] when a recomputed proof does not verify either (the
/// key or the witness is wrong, not the device); proving errors.
pub fn recompute(
    spec: &Spec,
    cpu: &Arc<Backend>,
    bad: &[BadProof],
    proofs: &mut [ProofOutput],
    blinding: &dyn Fn() -> (zkpipe_core::Fr, zkpipe_core::Fr),
) -> Result<(), Error> {
    let key = &spec.key;
    let prover = ProverBuilder::new(cpu.clone()).build(key.params.clone(), key.r1cs.clone())?;
    for b in bad {
        let witness = spec.witness(b.partition as u32)?;
        let (r, s) = blinding();
        let (proof, _) = prover.prove(&witness, r, s)?;
        let public_inputs = witness.public_inputs().to_vec();
        if !groth16::verify(&key.pvk, &proof, &public_inputs)? {
            return Err(Error::Failed(format!(
                "partition {} failed verification on the device and again on the CPU reference",
                b.partition
            )));
        }
        proofs[b.partition] = ProofOutput {
            proof,
            public_inputs,
            device: None,
        };
    }
    Ok(())
}
