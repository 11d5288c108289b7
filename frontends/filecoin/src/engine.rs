//! [`Engine`]: Filecoin circuits proved by a zkpipe backend. Each circuit
//! shape (a filecoin-proofs parameter set) is recorded once into zkpipe's
//! R1CS cache, its parameters are read from Filecoin's parameter cache and
//! kept resident; every partition is synthesised witness-only and proved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bellperson::Circuit;
use blstrs::Scalar;
use storage_proofs_core::compound_proof::{CircuitComponent, CompoundProof};
use storage_proofs_core::parameter_cache::{CacheableParameters, ParameterSetMetadata};
use storage_proofs_core::proof::ProofScheme;
use zkpipe_core::circuit::CircuitSource;
use zkpipe_core::groth16::{self, Parameters, PreparedVerifyingKey, Proof, Prover, StageTimes};
use zkpipe_core::progress::Progress;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::r1cs::{R1cs, Witness};
use zkpipe_core::{Error, Fr, Stage};

use crate::adapter;
use crate::params::ParamFiles;

/// Makes the prover for one key (the caller's backend, device and fallback).
pub type BuildProver = dyn Fn(Arc<Parameters>, Arc<R1cs>) -> Result<Prover, Error> + Send + Sync;

/// `r, s` of each partition's proof.
#[derive(Debug, Clone, Copy, Default)]
pub enum Blinding {
    /// Fresh from the OS (what a proof needs).
    #[default]
    Random,
    /// From a seed, partition `k` from `seed + k` (reproducible: tests and
    /// byte comparisons with bellperson).
    Seeded(u64),
}

impl Blinding {
    /// `(r, s)` for partition `k`.
    ///
    /// # Errors
    /// [`Error::Failed`] when the OS has no randomness to give.
    pub fn get(&self, k: usize) -> Result<(Fr, Fr), Error> {
        let mut rng = match self {
            Blinding::Seeded(seed) => zkpipe_core::sample::rng(seed.wrapping_add(k as u64)),
            Blinding::Random => {
                let mut b = [0u8; 8];
                getrandom::getrandom(&mut b)
                    .map_err(|e| Error::Failed(format!("OS randomness: {e}")))?;
                zkpipe_core::sample::rng(u64::from_le_bytes(b))
            }
        };
        Ok((Fr::random(&mut rng), Fr::random(&mut rng)))
    }
}

/// A key made resident: its parameter set, the files it came from, its prover.
#[derive(Debug)]
pub struct Resident {
    /// The filecoin-proofs cache identifier.
    pub id: String,
    /// Sector size the parameter set is for.
    pub sector_size: u64,
    /// Prover bound to the key.
    pub prover: Prover,
    /// The key's verifying key, prepared: every proof is checked with it.
    pub pvk: PreparedVerifyingKey,
    /// How long recording (or reading) the R1CS and reading the parameters took.
    pub load_time: Duration,
}

/// Proofs of one request's partitions, in partition order.
#[derive(Debug)]
pub struct Proved {
    /// One proof per partition.
    pub proofs: Vec<Proof>,
    /// Each partition's stage times (witness synthesis included).
    pub times: Vec<StageTimes>,
    /// Time spent making the key resident (zero when it already was).
    pub key_load: Duration,
}

impl Proved {
    /// The proofs as filecoin-proofs writes them: 192 bytes per partition.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }
}

/// What one compound proof is made from, as filecoin-proofs names it.
#[derive(Debug)]
pub struct CompoundInputs<'r, 'a, S: ProofScheme<'a>> {
    /// The public inputs the circuits are built with.
    pub pub_in: &'r S::PublicInputs,
    /// The public inputs its verifier uses, when they differ.
    pub verifier_in: Option<&'r S::PublicInputs>,
    /// One vanilla proof per partition.
    pub vanilla: &'r [S::Proof],
    /// The vanilla public parameters.
    pub pub_params: &'r S::PublicParams,
}

/// Filecoin circuits on one backend, keys resident.
pub struct Engine {
    build: Box<BuildProver>,
    r1cs: R1csCache,
    resident: Mutex<HashMap<String, Arc<Resident>>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("r1cs", &self.r1cs)
            .field("resident", &self.resident_ids())
            .finish()
    }
}

impl Engine {
    /// An engine whose provers come from `build`, recording R1CS into `r1cs`.
    pub fn new(build: Box<BuildProver>, r1cs: R1csCache) -> Engine {
        Engine {
            build,
            r1cs,
            resident: Mutex::new(HashMap::new()),
        }
    }

    /// Identifiers of the resident keys.
    pub fn resident_ids(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.resident.lock().unwrap().keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Drops a resident key; whether it was resident.
    pub fn evict(&self, id: &str) -> bool {
        self.resident.lock().unwrap().remove(id).is_some()
    }

    /// The R1CS of parameter set `id` (blank circuit from `blank`), from the
    /// cache or recorded now.
    ///
    /// # Errors
    /// Synthesis and cache errors.
    pub fn r1cs(
        &self,
        id: &str,
        blank: &(dyn Fn() -> Result<R1cs, Error> + Send + Sync),
        progress: &dyn Progress,
    ) -> Result<R1cs, Error> {
        self.r1cs.get_or_record(&Shape { id, blank }, progress)
    }

    /// Key `id` resident, loading it first if needed.
    ///
    /// # Errors
    /// Missing or mismatched parameters, synthesis, backend errors.
    pub fn key(
        &self,
        id: &str,
        sector_size: u64,
        blank: &(dyn Fn() -> Result<R1cs, Error> + Send + Sync),
        progress: &dyn Progress,
    ) -> Result<(Arc<Resident>, Duration), Error> {
        if let Some(r) = self.resident.lock().unwrap().get(id) {
            return Ok((r.clone(), Duration::ZERO));
        }
        let t = Instant::now();
        let r1cs = self.r1cs(id, blank, progress)?;
        let params = ParamFiles::of(id).load(sector_size, &r1cs)?;
        let pvk = PreparedVerifyingKey::new(&params.vk);
        let prover = (self.build)(Arc::new(params), Arc::new(r1cs))?;
        let resident = Arc::new(Resident {
            id: id.to_string(),
            sector_size,
            prover,
            pvk,
            load_time: t.elapsed(),
        });
        self.resident
            .lock()
            .unwrap()
            .insert(id.to_string(), resident.clone());
        let load_time = resident.load_time;
        Ok((resident, load_time))
    }

    /// Proves every partition of a compound proof `P` from its vanilla
    /// proofs, as filecoin-proofs' `circuit_proofs` does with bellperson,
    /// and checks each proof against the public inputs its verifier derives
    /// from `verifier_in` (`pub_in` when `None`; WinningPoSt's verifier
    /// lists the sector once per challenge).
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when a vanilla proof does not make a
    /// circuit or its witness does not satisfy it; key and backend errors.
    pub fn prove_compound<'a, S, C, P>(
        &self,
        sector_size: u64,
        inputs: CompoundInputs<'_, 'a, S>,
        blinding: Blinding,
        progress: &dyn Progress,
    ) -> Result<Proved, Error>
    where
        S: ProofScheme<'a>,
        S::Proof: Sync + Send,
        S::PublicParams: ParameterSetMetadata + Sync + Send,
        S::PublicInputs: Clone + Sync,
        C: Circuit<Scalar> + CircuitComponent + Send,
        P: CompoundProof<'a, S, C>,
    {
        let CompoundInputs {
            pub_in,
            verifier_in,
            vanilla,
            pub_params,
        } = inputs;
        if vanilla.is_empty() {
            return Err(Error::InvalidInput("no vanilla proofs to prove".into()));
        }
        let id = <P as CacheableParameters<C, S::PublicParams>>::cache_identifier(pub_params);
        let blank = || adapter::record(P::blank_circuit(pub_params));
        let (key, key_load) = self.key(&id, sector_size, &blank, progress)?;
        let mut proofs = Vec::with_capacity(vanilla.len());
        let mut times = Vec::with_capacity(vanilla.len());
        for (k, vp) in vanilla.iter().enumerate() {
            let t = Instant::now();
            // filecoin-proofs indexes vanilla proofs without checking their
            // shape: a malformed one panics inside it, which is its input's fault.
            let witness = catch(k, || {
                let circuit = P::circuit(pub_in, Default::default(), vp, pub_params, Some(k))
                    .map_err(|e| Error::InvalidInput(format!("partition {k}: {e:#}")))?;
                adapter::witness(circuit)
            })?;
            let inputs = catch(k, || {
                P::generate_public_inputs(verifier_in.unwrap_or(pub_in), pub_params, Some(k))
                    .map_err(|e| Error::InvalidInput(format!("partition {k}: {e:#}")))
            })?;
            let synth = t.elapsed();
            check_satisfied(&key.prover, &witness, k)?;
            let (r, s) = blinding.get(k)?;
            let (proof, mut st) = key.prover.prove(&witness, r, s)?;
            st.stages.insert(0, (Stage::Witness, synth));
            st.wall += synth;
            let inputs: Vec<Fr> = inputs.into_iter().map(zkpipe_core::r1cs::fr).collect();
            if !groth16::verify(&key.pvk, &proof, &inputs)? {
                return Err(Error::Failed(format!(
                    "partition {k}: the proof does not verify against its public inputs"
                )));
            }
            proofs.push(proof);
            times.push(st);
        }
        Ok(Proved {
            proofs,
            times,
            key_load,
        })
    }
}

/// A witness that does not satisfy the circuit comes from a vanilla proof
/// that does not prove what it claims: refused before any device work,
/// naming the partition.
fn catch<T>(k: usize, f: impl FnOnce() -> Result<T, Error>) -> Result<T, Error> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|p| {
        let why = p
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| p.downcast_ref::<&str>().copied())
            .unwrap_or("no message");
        Err(Error::InvalidInput(format!(
            "partition {k}: filecoin-proofs could not build the circuit from this vanilla proof ({why})"
        )))
    })
}

fn check_satisfied(prover: &Prover, w: &Witness, k: usize) -> Result<(), Error> {
    match prover.r1cs().first_unsatisfied(w)? {
        None => Ok(()),
        Some(row) => Err(Error::InvalidInput(format!(
            "partition {k}: the vanilla proof does not satisfy the circuit (constraint {row})"
        ))),
    }
}

/// A parameter set as the R1CS cache sees it.
struct Shape<'s> {
    id: &'s str,
    blank: &'s (dyn Fn() -> Result<R1cs, Error> + Send + Sync),
}

impl std::fmt::Debug for Shape<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shape").field("id", &self.id).finish()
    }
}

impl CircuitSource for Shape<'_> {
    fn name(&self) -> &str {
        "filecoin"
    }
    fn size(&self) -> &str {
        self.id
    }
    fn shape_key(&self) -> String {
        format!("filecoin-proofs 19.1 {}", self.id)
    }
    fn record(&self) -> Result<R1cs, Error> {
        (self.blank)()
    }
    fn witness(&self, _seed: u64) -> Result<Witness, Error> {
        Err(Error::InvalidInput(
            "Filecoin circuits take their witnesses from vanilla proofs, not from a seed".into(),
        ))
    }
}
