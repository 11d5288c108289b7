//! [`CircuitSource`]: what the caches, the provers and the batch workload
//! need from a circuit front end (the built-in circuits; Filecoin's and
//! circom's later), so that they never name a circuit type.

use crate::Error;
use crate::r1cs::{R1cs, Witness};

/// One circuit at one size: its identity, its constraints, its witnesses.
pub trait CircuitSource: Send + Sync + std::fmt::Debug {
    /// The circuit's name (`sha256`).
    fn name(&self) -> &str;
    /// Its size, as the user gave it (`4`, `2x8`, `2^12`).
    fn size(&self) -> &str;
    /// What identifies the shape of its constraint system (name, size,
    /// code version): cached R1CS and keys are checked against it.
    fn shape_key(&self) -> String;
    /// Synthesizes the circuit, recording its constraints.
    ///
    /// # Errors
    /// [`Error::Synthesis`].
    fn record(&self) -> Result<R1cs, Error>;
    /// The witness of the instance drawn from `seed`.
    ///
    /// # Errors
    /// [`Error::Synthesis`].
    fn witness(&self, seed: u64) -> Result<Witness, Error>;
}
