//! What a job asks for once its request is validated, and why a job is
//! refused at submission: the daemon's side of the service's `Submit`.

use std::sync::Arc;

use crate::keys::KeyId;
use crate::proto::Priority;

/// Why a job was refused at submission.
#[derive(Debug)]
pub enum Refusal {
    /// The request id names another request (ALREADY_EXISTS).
    Conflict(String),
    /// Too many jobs (RESOURCE_EXHAUSTED).
    Busy(String),
    /// The job's key cannot fit the daemon's host budget, whatever else it
    /// evicts (RESOURCE_EXHAUSTED).
    TooLarge(String),
    /// The daemon is shutting down (UNAVAILABLE).
    Draining,
}

/// A job request, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    /// Caller's idempotency id ("": none).
    pub request_id: String,
    /// The key.
    pub key: KeyId,
    /// Priority.
    pub priority: Priority,
    /// Partitions, 1 to [`MAX_PARTITIONS`].
    pub partitions: u32,
    /// What the partitions prove.
    pub inputs: JobInputs,
}

impl NewJob {
    /// The curve its proofs are over: a circom job's witnesses name it;
    /// built-in circuits and Filecoin's are BLS12-381.
    pub fn curve(&self) -> zkpipe_core::Curve {
        match &self.inputs {
            JobInputs::Circom(w) if matches!(**w, CircomWitnesses::Bn254(_)) => {
                zkpipe_core::Curve::Bn254
            }
            _ => zkpipe_core::Curve::Bls12_381,
        }
    }
}

/// A job's inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobInputs {
    /// A built-in circuit: partition p proves the witness of seed + p.
    Seed(u64),
    /// A circom circuit: each partition's full assignment (wire values, as
    /// in a .wtns), checked against the circuit once its key is loaded.
    Circom(Arc<CircomWitnesses>),
    /// A Filecoin request (cuzk's API): partitions synthesised from its
    /// vanilla proofs.
    Filecoin(FilecoinInputs),
}

/// A circom job's full assignments, one per partition, all over one
/// curve's prime.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CircomWitnesses {
    /// BLS12-381's.
    Bls12_381(Vec<Vec<zkpipe_core::Fr>>),
    /// BN254's.
    Bn254(Vec<Vec<zkpipe_core::bn254::Fr>>),
}

impl CircomWitnesses {
    /// Their curve.
    pub fn curve(&self) -> zkpipe_core::Curve {
        match self {
            CircomWitnesses::Bls12_381(_) => zkpipe_core::Curve::Bls12_381,
            CircomWitnesses::Bn254(_) => zkpipe_core::Curve::Bn254,
        }
    }
}

/// A Filecoin request as a job's inputs: the same request only when it is
/// the same object (a retried cuzk request is parsed again and compared by
/// its request id alone).
#[derive(Clone, Debug)]
pub struct FilecoinInputs(pub Arc<dyn zkpipe_filecoin::FilecoinJob>);

impl PartialEq for FilecoinInputs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FilecoinInputs {}

/// Most partitions in one job.
pub const MAX_PARTITIONS: u32 = 64;
