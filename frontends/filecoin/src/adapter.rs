//! bellperson 0.27's constraint-system traits (bellpepper-core 0.2), which
//! Filecoin's circuits are written against, driving zkpipe's constraint
//! systems (they implement that version's trait too): the same variable
//! order as bellperson's own prover and key generator, so keys and proofs
//! are interchangeable with its.

use bellpepper_core_02::{Circuit, SynthesisError};
use blstrs::Scalar;
use zkpipe_core::Error;
use zkpipe_core::r1cs::{CountingCs, R1cs, RecordingCs, Witness, WitnessCs};

pub use zkpipe_core::r1cs::{Block, Counts};

/// Records `circuit`'s constraints. Values are never asked for, so the
/// blank circuits filecoin-proofs builds for key generation record too.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails.
pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<R1cs, Error> {
    let mut cs = RecordingCs::new();
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    Ok(cs.finish().0)
}

/// Runs `circuit` in witness-only mode: values only, no constraints.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails (a missing assignment).
pub fn witness<C: Circuit<Scalar>>(circuit: C) -> Result<Witness, Error> {
    let mut cs = WitnessCs::new();
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    Ok(cs.into_witness())
}

/// Runs a one-block `circuit` (a PoRep partition with one of its
/// challenges) witness-only; its block begins at the first top-level
/// namespace whose name starts with `block`.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails; [`Error::Failed`] when it
/// has no such namespace.
pub fn witness_block<C: Circuit<Scalar>>(circuit: C, block: &str) -> Result<Block, Error> {
    let mut cs = WitnessCs::split_at(block);
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    cs.into_block()
}

/// The witness of the whole circuit from its blocks, in order: bellperson
/// allocates the shared part once, then each block's variables in turn, so
/// this is exactly what synthesising the whole circuit on one thread gives.
/// `None` when the blocks disagree on the shared part (pieces of different
/// vanilla proofs). See [`Block::join`].
pub fn join(blocks: Vec<Block>) -> Option<Witness> {
    Block::join(blocks)
}

/// Counts a one-block `circuit` (see [`witness_block`]) split where its
/// block begins: `(shared part, block)`. A circuit of `k` such blocks counts
/// `shared.plus_times(block, k)`: each block's constraints reach the
/// shared variables as the first one's do. Values are never asked for.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails; [`Error::Failed`] when it
/// has no such namespace.
pub fn count_block<C: Circuit<Scalar>>(circuit: C, block: &str) -> Result<(Counts, Counts), Error> {
    let mut cs = CountingCs::split_at(block);
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    cs.finish()
}

fn synthesis(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}
