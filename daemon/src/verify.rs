//! Verify before return: every proof is checked against the key's
//! verifying key; a partition that fails is proved again on the CPU
//! reference backend, and only a proof that verifies is ever returned.

use std::sync::Arc;

use zkpipe_core::groth16::{self, ProverBuilder};
use zkpipe_core::sched::groth16_workload::{CurveProof, JobWitness, ProofOutput};
use zkpipe_core::{Backend, Error, bn254};

use crate::keys::{LoadedKey, Proving};
use crate::source::{Spec, Specs};

/// A partition whose device proof failed verification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BadProof {
    /// Partition index.
    pub partition: usize,
    /// The device that made it (`None`: the host).
    pub device: Option<usize>,
}

/// Whether `proof` verifies under `key`'s verifying key.
///
/// # Errors
/// A proof of the other curve; verification errors.
fn verifies(key: &LoadedKey, proof: &CurveProof) -> Result<bool, Error> {
    match (&key.proving, proof) {
        (
            Proving::Bls12_381 { pvk, .. },
            CurveProof::Bls12_381 {
                proof,
                public_inputs,
            },
        ) => groth16::verify(pvk, proof, public_inputs),
        (
            Proving::Bn254 { key, .. },
            CurveProof::Bn254 {
                proof,
                public_inputs,
            },
        ) => bn254::groth16::verify(&key.points.vk, proof, public_inputs),
        _ => Err(Error::Failed(format!(
            "a proof of another curve than key {}'s",
            key.id
        ))),
    }
}

/// The partitions of `proofs` that do not verify.
///
/// # Errors
/// Verification errors (a key or inputs of the wrong shape).
pub fn failing(spec: &Spec, proofs: &[ProofOutput]) -> Result<Vec<BadProof>, Error> {
    let mut bad = vec![];
    for (partition, p) in proofs.iter().enumerate() {
        if !verifies(&spec.key, &p.proof)? {
            bad.push(BadProof {
                partition,
                device: p.device,
            });
        }
    }
    Ok(bad)
}

fn failed_again(partition: usize) -> Error {
    Error::Failed(format!(
        "partition {partition} failed verification on the device and again on the CPU reference"
    ))
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
    specs: &Specs,
) -> Result<(), Error> {
    match &spec.key.proving {
        Proving::Bls12_381 { params, r1cs, .. } => {
            // One prover for every bad partition (building one uploads the bases).
            let prover = ProverBuilder::new(cpu.clone()).build(params.clone(), r1cs.clone())?;
            replace(spec, bad, proofs, |partition| {
                let witness = spec.witness(partition as u32)?;
                let (r, s) = specs.fresh_blinding();
                let (proof, _) = prover.prove(&witness, r, s)?;
                Ok(CurveProof::Bls12_381 {
                    proof,
                    public_inputs: witness.public_inputs().to_vec(),
                })
            })
        }
        Proving::Bn254 { key, .. } => replace(spec, bad, proofs, |partition| {
            let JobWitness::Bn254(witness) = spec.job_witness(partition as u32)? else {
                return Err(Error::Failed("a BLS12-381 witness for a BN254 key".into()));
            };
            let (r, s) = specs.fresh_bn254_blinding();
            // The prover checks its own proof: a failure is the witness's.
            let (proof, public_inputs) =
                bn254::prover::prove(cpu, key, &witness, r, s).map_err(|e| match e {
                    Error::InvalidInput(_) => failed_again(partition),
                    e => e,
                })?;
            Ok(CurveProof::Bn254 {
                proof,
                public_inputs,
            })
        }),
    }
}

/// Puts `prove_again`'s proof of each bad partition in `proofs`, once it
/// verifies.
fn replace(
    spec: &Spec,
    bad: &[BadProof],
    proofs: &mut [ProofOutput],
    prove_again: impl Fn(usize) -> Result<CurveProof, Error>,
) -> Result<(), Error> {
    for b in bad {
        let proof = prove_again(b.partition)?;
        if !verifies(&spec.key, &proof)? {
            return Err(failed_again(b.partition));
        }
        proofs[b.partition] = ProofOutput {
            proof,
            device: None,
        };
    }
    Ok(())
}
