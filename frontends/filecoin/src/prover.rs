//! [`FilecoinProver`]: Filecoin circuits proved by a zkpipe backend. Each circuit
//! shape (a filecoin-proofs parameter set) is recorded once into zkpipe's
//! R1CS cache, its parameters are read from Filecoin's parameter cache and
//! kept resident; every partition is synthesised witness-only and proved.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use zkpipe_core::groth16::{self, Parameters, PreparedVerifyingKey, Proof, Prover, StageTimes};
use zkpipe_core::r1cs::R1cs;
use zkpipe_core::r1cs::cache::R1csCache;
use zkpipe_core::util::progress::Progress;
use zkpipe_core::{Error, Stage};

use crate::job::FilecoinJob;
use crate::params::ParamSet;

/// Makes the prover for one key (the caller's backend, device and fallback).
pub type BuildProver = dyn Fn(Arc<Parameters>, Arc<R1cs>) -> Result<Prover, Error> + Send + Sync;

/// `r, s` of each partition's proof.
pub use zkpipe_core::util::random::Blinding;

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
    /// Constraints in one partition's circuit.
    pub constraints: usize,
}

impl Proved {
    /// The proofs as filecoin-proofs writes them: 192 bytes per partition.
    pub fn to_bytes(&self) -> Vec<u8> {
        self.proofs.iter().flat_map(|p| p.to_bytes()).collect()
    }

    /// A line per partition (its stages) and one for the whole `what`,
    /// which took `elapsed`.
    pub fn lines(&self, what: &str, elapsed: Duration) -> Vec<String> {
        let mut out: Vec<String> = (self.times.iter().enumerate())
            .map(|(k, times)| {
                format!(
                    "partition {k}: {:.1} ms ({}; {} constraints)",
                    times.total().as_secs_f64() * 1e3,
                    times.summary(),
                    self.constraints
                )
            })
            .collect();
        out.push(format!(
            "{what}: {} partition(s), verified, in {elapsed:.2?} (key load {:.2?})",
            self.proofs.len(),
            self.key_load,
        ));
        out
    }
}

/// Filecoin circuits on one backend, keys resident.
pub struct FilecoinProver {
    build: Box<BuildProver>,
    r1cs: R1csCache,
    resident: Mutex<HashMap<String, Arc<Resident>>>,
}

impl std::fmt::Debug for FilecoinProver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FilecoinProver")
            .field("r1cs", &self.r1cs)
            .field("resident", &self.resident_ids())
            .finish()
    }
}

impl FilecoinProver {
    /// An engine whose provers come from `build`, recording R1CS into `r1cs`.
    pub fn new(build: Box<BuildProver>, r1cs: R1csCache) -> FilecoinProver {
        FilecoinProver {
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

    /// The R1CS cache it records circuits into.
    pub fn r1cs_cache(&self) -> &R1csCache {
        &self.r1cs
    }

    /// Drops a resident key; whether it was resident.
    pub fn evict(&self, id: &str) -> bool {
        self.resident.lock().unwrap().remove(id).is_some()
    }

    /// Key `id` resident, loading it first if needed.
    ///
    /// # Errors
    /// Missing or mismatched parameters, synthesis, backend errors.
    pub fn key(
        &self,
        set: &ParamSet,
        progress: &dyn Progress,
    ) -> Result<(Arc<Resident>, Duration), Error> {
        let (id, sector_size) = (set.id.as_str(), set.sector_size);
        if let Some(r) = self.resident.lock().unwrap().get(id) {
            return Ok((r.clone(), Duration::ZERO));
        }
        let t = Instant::now();
        // The R1CS and the parameters are read side by side (2 KiB PoRep:
        // 602 MB and 1.1 GB), then checked against each other.
        let files = set.files();
        let (r1cs, params) = std::thread::scope(|s| {
            let params = s.spawn(|| files.read(sector_size));
            let r1cs = set.r1cs(&self.r1cs, progress);
            let params = params
                .join()
                .unwrap_or_else(|_| Err(Error::Failed("reading the parameters panicked".into())));
            (r1cs, params)
        });
        let (r1cs, params) = (r1cs?, params?);
        files.check(&params, &r1cs)?;
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

    /// Proves every partition of `job`, checks each proof against its
    /// public inputs and the whole with filecoin-proofs' verifier.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] when a vanilla proof does not make a
    /// circuit, does not satisfy it or the proof is rejected for the ids the
    /// request named; key and backend errors.
    pub fn prove(
        &self,
        job: &dyn FilecoinJob,
        blinding: Blinding,
        progress: &dyn Progress,
    ) -> Result<Proved, Error> {
        let (key, key_load) = self.key(job.param_set(), progress)?;
        let mut proofs = Vec::with_capacity(job.partitions());
        let mut times = Vec::with_capacity(job.partitions());
        for k in 0..job.partitions() {
            let t = Instant::now();
            // A key just made resident: its device's first use (tables,
            // buffers, kernels) is paid beside the first synthesis, which
            // runs on the host. A failed warm-up is met again by the proof.
            let warm = k == 0 && !key_load.is_zero();
            // The witness stage is the synthesis alone; a warm-up that
            // outlasts it shows in the command's wall time only.
            let (witness, synth) = std::thread::scope(|s| {
                let warming = warm.then(|| s.spawn(|| key.prover.warm_up()));
                let witness = job.witness(k);
                let synth = t.elapsed();
                if let Some(w) = warming {
                    let _ = w.join();
                }
                (witness, synth)
            });
            let witness = witness?;
            let (r, s) = blinding.get(k)?;
            // The prover checks the witness satisfies the circuit on its
            // own SpMV, before any device work.
            let (proof, mut st) = key.prover.prove(&witness, r, s).map_err(|e| match e {
                Error::InvalidInput(why) => Error::InvalidInput(format!(
                    "partition {k}: the vanilla proof does not fit the circuit ({why})"
                )),
                e => e,
            })?;
            st.stages.insert(0, (Stage::Witness, synth));
            st.wall += synth;
            if !groth16::verify(&key.pvk, &proof, witness.public_inputs())? {
                return Err(Error::Failed(format!(
                    "partition {k}: the proof does not verify against its public inputs"
                )));
            }
            proofs.push(proof);
            times.push(st);
        }
        let proved = Proved {
            proofs,
            times,
            key_load,
            constraints: key.prover.r1cs().num_constraints(),
        };
        job.check(&proved.to_bytes())?;
        Ok(proved)
    }
}
