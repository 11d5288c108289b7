//! [`FilecoinJob`]: one Filecoin proof request made ready to prove — its
//! parameter set, and per partition the witness synthesised from the
//! vanilla proof — independent of who proves it (the CLI's [`FilecoinProver`] or
//! the daemon's scheduler).
//!
//! [`FilecoinProver`]: crate::FilecoinProver

use std::marker::PhantomData;

use bellperson::Circuit;
use blstrs::Scalar;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::{CacheableParameters, ParameterSetMetadata};
use storage_proofs_core::proof::ProofScheme;
use zkpipe_core::r1cs::{R1cs, Witness, fr};
use zkpipe_core::{Error, Fr};

use rayon::prelude::*;

use crate::adapter;
use crate::params::ParamSet;

/// Checks a whole proof (all partitions' bytes) the way its verifier will.
pub type FinalCheck = Box<dyn Fn(&[u8]) -> Result<(), Error> + Send + Sync>;

/// A Filecoin proof request, ready to prove partition by partition.
pub trait FilecoinJob: Send + Sync + std::fmt::Debug {
    /// The key it is proved with.
    fn param_set(&self) -> &ParamSet;
    /// How many partitions (192-byte proofs) it makes.
    fn partitions(&self) -> usize;
    /// Partition `k`'s witness, its public inputs checked against those its
    /// verifier derives (so a vanilla proof for other randomness, another
    /// sector or another replica is refused before any proving).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for a vanilla proof that does not make a
    /// circuit or whose public inputs are not the verifier's.
    fn witness(&self, k: usize) -> Result<Witness, Error>;
    /// Partition `k`'s witness synthesised on one thread, as bellperson
    /// does: the reference [`witness`](Self::witness) (which may split the
    /// work across threads) must equal.
    ///
    /// # Errors
    /// As [`witness`](Self::witness).
    fn witness_serial(&self, k: usize) -> Result<Witness, Error>;
    /// Checks the concatenated proofs with filecoin-proofs' own verifier
    /// (for the ids the request named).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when it rejects them.
    fn check(&self, proof: &[u8]) -> Result<(), Error>;
}

/// Checks partition `k`'s witness against `r1cs` (the circuit its key was
/// made for): a vanilla proof that does not prove what it claims is refused
/// before any device work, naming the partition. The daemon runs it on its
/// synthesis threads, so a bad job fails before it waits for a device (the
/// prover checks again on its own SpMV).
///
/// # Errors
/// [`Error::InvalidInput`] naming the first constraint the witness fails.
pub fn check_satisfies(r1cs: &R1cs, w: &Witness, k: usize) -> Result<(), Error> {
    match r1cs.first_unsatisfied(w)? {
        None => Ok(()),
        Some(row) => Err(Error::InvalidInput(format!(
            "partition {k}: the vanilla proof does not satisfy the circuit (constraint {row})"
        ))),
    }
}

/// How a partition's synthesis is spread over threads: its vanilla proof cut
/// into pieces, each making the partition's circuit with one block of its
/// repeated part (a PoRep challenge), the blocks then joined in order.
pub(crate) struct Split<S: ProofScheme<'static>> {
    /// One piece per block, in order.
    pub pieces: fn(&S::Proof) -> Vec<S::Proof>,
    /// The name prefix of the top-level namespace each block starts with.
    pub block: &'static str,
}

/// A compound proof `P` of scheme `S` with circuit `C`, as filecoin-proofs'
/// `circuit_proofs` builds it with bellperson.
pub(crate) struct CompoundJob<S: ProofScheme<'static>, C, P> {
    pub set: ParamSet,
    /// Synthesis spread over threads, for circuits whose blocks are
    /// independent (PoRep's challenges); `None`: one thread.
    pub split: Option<Split<S>>,
    pub pub_in: S::PublicInputs,
    /// The public inputs its verifier uses, when they differ (WinningPoSt's
    /// verifier lists the sector once per challenge).
    pub verifier_in: Option<S::PublicInputs>,
    pub vanilla: Vec<S::Proof>,
    pub pub_params: S::PublicParams,
    pub check: FinalCheck,
    pub _circuit: PhantomData<fn() -> (C, P)>,
}

impl<S: ProofScheme<'static>, C, P> std::fmt::Debug for CompoundJob<S, C, P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompoundJob")
            .field("set", &self.set)
            .field("partitions", &self.vanilla.len())
            .finish()
    }
}

impl<S, C, P> FilecoinJob for CompoundJob<S, C, P>
where
    S: ProofScheme<'static>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync + Send,
    C: Circuit<Scalar> + CircuitComponent + Send,
    P: CompoundProof<'static, S, C> + CacheableParameters<C, S::PublicParams>,
{
    fn param_set(&self) -> &ParamSet {
        &self.set
    }

    fn partitions(&self) -> usize {
        self.vanilla.len()
    }

    fn witness(&self, k: usize) -> Result<Witness, Error> {
        self.synthesize(k, true)
    }

    fn witness_serial(&self, k: usize) -> Result<Witness, Error> {
        self.synthesize(k, false)
    }

    fn check(&self, proof: &[u8]) -> Result<(), Error> {
        (self.check)(proof)
    }
}

impl<S, C, P> CompoundJob<S, C, P>
where
    S: ProofScheme<'static>,
    S::Proof: Sync + Send,
    S::PublicParams: ParameterSetMetadata + Sync + Send,
    S::PublicInputs: Clone + Sync + Send,
    C: Circuit<Scalar> + CircuitComponent + Send,
    P: CompoundProof<'static, S, C> + CacheableParameters<C, S::PublicParams>,
{
    fn synthesize(&self, k: usize, parallel: bool) -> Result<Witness, Error> {
        let vp = self.vanilla.get(k).ok_or_else(|| {
            Error::InvalidInput(format!("partition {k}: the job has {}", self.vanilla.len()))
        })?;
        let bad = |e: anyhow::Error| Error::InvalidInput(format!("partition {k}: {e:#}"));
        let circuit = |vp: &S::Proof| {
            P::circuit(
                &self.pub_in,
                Default::default(),
                vp,
                &self.pub_params,
                Some(k),
            )
            .map_err(bad)
        };
        // filecoin-proofs indexes vanilla proofs without checking their
        // shape: a malformed one panics inside it, which is its input's fault.
        let split = self.split.as_ref().filter(|_| parallel);
        let pieces = split.map(|s| (s.pieces)(vp)).unwrap_or_default();
        let witness = match split {
            Some(split) if pieces.len() > 1 => {
                let blocks = pieces
                    .par_iter()
                    .map(|piece| catch(k, || adapter::witness_block(circuit(piece)?, split.block)))
                    .collect::<Result<Vec<_>, Error>>()?;
                adapter::join(blocks).ok_or_else(|| {
                    Error::InvalidInput(format!(
                        "partition {k}: its vanilla proofs disagree on what they share (the \
                         sector's commitments): they are not all of one sector"
                    ))
                })?
            }
            _ => catch(k, || adapter::witness(circuit(vp)?))?,
        };
        let verifier_in = self.verifier_in.as_ref().unwrap_or(&self.pub_in);
        let expected = catch(k, || {
            P::generate_public_inputs(verifier_in, &self.pub_params, Some(k)).map_err(bad)
        })?;
        let expected: Vec<Fr> = expected.into_iter().map(fr).collect();
        if witness.public_inputs() != expected.as_slice() {
            return Err(Error::InvalidInput(format!(
                "partition {k}: the vanilla proof does not prove this challenge (its public \
                 inputs are not the verifier's: other randomness, sector, replica or prover?)"
            )));
        }
        Ok(witness)
    }
}

/// Decodes vanilla proof `i` (bincode, as filecoin-proofs serialises it),
/// refusing one over `max` bytes; never reads or allocates past the bytes
/// given. `kind` names what it should be, for the error.
pub(crate) fn decode_vanilla<T: serde::de::DeserializeOwned>(
    bytes: &[u8],
    i: usize,
    max: usize,
    kind: &str,
) -> Result<T, Error> {
    use bincode::Options;
    if bytes.len() > max {
        return Err(Error::InvalidInput(format!(
            "vanilla proof {i}: {} bytes, over the {max} limit",
            bytes.len()
        )));
    }
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_limit(bytes.len() as u64)
        .deserialize(bytes)
        .map_err(|e| {
            Error::InvalidInput(format!(
                "vanilla proof {i}: not a {kind} for this sector size ({e})"
            ))
        })
}

thread_local! {
    /// Set while this thread runs filecoin-proofs under [`catch`].
    static CATCHING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Runs `f`, turning a panic inside filecoin-proofs into an input error.
/// The panic is the input's fault and is reported as such, so the panic
/// hook stays quiet for it (on this thread only: other panics still print).
fn catch<T>(k: usize, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    static QUIET_HOOK: std::sync::Once = std::sync::Once::new();
    QUIET_HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !CATCHING.with(std::cell::Cell::get) {
                previous(info);
            }
        }));
    });
    CATCHING.with(|c| c.set(true));
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    CATCHING.with(|c| c.set(false));
    caught.unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::InvalidInput(format!(
            "partition {k}: the vanilla proof does not fit this request: filecoin-proofs could not \
             build the circuit from it ({why})"
        )))
    })
}
