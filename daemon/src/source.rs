//! What the scheduling engine asks of each daemon job: its key's provers,
//! its witnesses and fresh blinding. The engine's job seed is the daemon's
//! job id.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock};

use rand_chacha::ChaCha20Rng;
use zkpipe_core::r1cs::Witness;
use zkpipe_core::r1cs::circuit::CircuitSource;
use zkpipe_core::sched::JobRequest;
use zkpipe_core::sched::groth16_workload::{JobKey, JobSource, JobWitness};
use zkpipe_core::{Curve, Error, Fr, bn254};

use crate::keys::{KeyCircuit, LoadedKey, Proving};
use zkpipe_filecoin::FilecoinJob;

/// Where a job's witnesses come from.
#[derive(Debug)]
pub enum SpecInputs {
    /// A built-in circuit: partition p proves the witness of `seed + p`.
    Seed(u64),
    /// Witnesses sent with the job (circom), checked, one per partition.
    Witnesses(Vec<Witness>),
    /// BN254 assignments sent with the job (circom), checked, one per
    /// partition.
    Bn254(Vec<Arc<Vec<bn254::Fr>>>),
    /// A Filecoin request: each partition's witness is synthesised from its
    /// vanilla proof when the engine asks for it.
    Filecoin(Arc<dyn FilecoinJob>),
}

/// A job the engine runs: its key and inputs.
#[derive(Debug)]
pub struct Spec {
    /// The key, held loaded while the job runs.
    pub key: Arc<LoadedKey>,
    /// Its witnesses.
    pub inputs: SpecInputs,
}

impl Spec {
    /// The witness of partition `p`.
    ///
    /// # Errors
    /// Synthesis errors; [`Error::InvalidInput`] when the inputs do not fit
    /// the key's kind or `p` is past the job's witnesses.
    pub fn witness(&self, p: u32) -> Result<Witness, Error> {
        match self.job_witness(p)? {
            JobWitness::Bls12_381(w) => Ok(w),
            JobWitness::Bn254(_) => Err(Error::WrongCurve {
                what: format!("the witness of partition {p}"),
                found: Curve::Bn254,
                expected: Curve::Bls12_381,
            }),
        }
    }

    /// The witness of partition `p`, of the key's curve.
    ///
    /// # Errors
    /// As [`Spec::witness`].
    pub fn job_witness(&self, p: u32) -> Result<JobWitness, Error> {
        let missing = || Error::InvalidInput(format!("the job has no witness for partition {p}"));
        let w = match (&self.inputs, &self.key.circuit) {
            (SpecInputs::Seed(seed), KeyCircuit::Builtin(c)) => {
                c.witness(seed.wrapping_add(p as u64))
            }
            (SpecInputs::Witnesses(w), _) => w.get(p as usize).cloned().ok_or_else(missing),
            (SpecInputs::Bn254(w), _) => {
                return w
                    .get(p as usize)
                    .cloned()
                    .map(JobWitness::Bn254)
                    .ok_or_else(missing);
            }
            (SpecInputs::Filecoin(job), KeyCircuit::Filecoin(_)) => {
                let Proving::Bls12_381 { r1cs, .. } = &self.key.proving else {
                    return Err(Error::InvalidInput(format!(
                        "key {} is not a Filecoin key",
                        self.key.id
                    )));
                };
                let w = job.witness(p as usize)?;
                zkpipe_filecoin::job::check_satisfies(r1cs, &w, p as usize)?;
                Ok(w)
            }
            (SpecInputs::Seed(_), _) | (SpecInputs::Filecoin(_), _) => Err(Error::InvalidInput(
                format!("key {} does not take this kind of job inputs", self.key.id),
            )),
        };
        w.map(JobWitness::Bls12_381)
    }
}

/// The jobs the engine may ask about, by daemon job id.
pub struct Specs {
    specs: RwLock<HashMap<u64, Arc<Spec>>>,
    rng: Mutex<ChaCha20Rng>,
}

impl std::fmt::Debug for Specs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Specs").finish_non_exhaustive()
    }
}

impl Specs {
    /// An empty table whose blinding comes from the operating system's
    /// randomness (through a ChaCha20 stream seeded once).
    ///
    /// # Errors
    /// [`Error::Failed`] when `/dev/urandom` cannot be read.
    pub fn new() -> Result<Self, Error> {
        Ok(Specs {
            specs: RwLock::new(HashMap::new()),
            rng: Mutex::new(zkpipe_core::util::random::os_rng()?),
        })
    }

    /// Registers job `id` (before it is given to the engine).
    pub fn insert(&self, id: u64, spec: Arc<Spec>) {
        self.specs.write().unwrap().insert(id, spec);
    }

    /// Forgets job `id` (after the engine is done with it).
    pub fn remove(&self, id: u64) {
        self.specs.write().unwrap().remove(&id);
    }

    fn get(&self, job: &JobRequest) -> Result<Arc<Spec>, Error> {
        self.specs
            .read()
            .unwrap()
            .get(&job.seed)
            .cloned()
            .ok_or_else(|| Error::Failed(format!("job {} is not known to the daemon", job.seed)))
    }

    /// Fresh `r, s`.
    pub fn fresh_blinding(&self) -> (Fr, Fr) {
        let mut rng = self.rng.lock().unwrap();
        (Fr::random(&mut *rng), Fr::random(&mut *rng))
    }

    /// Fresh BN254 `r, s`.
    pub fn fresh_bn254_blinding(&self) -> (bn254::Fr, bn254::Fr) {
        let mut rng = self.rng.lock().unwrap();
        (bn254::Fr::random(&mut *rng), bn254::Fr::random(&mut *rng))
    }
}

/// The engine's view of [`Specs`].
#[derive(Debug, Clone)]
pub struct SpecSource(pub Arc<Specs>);

impl JobSource for SpecSource {
    fn key(&self, job: &JobRequest) -> Result<JobKey, Error> {
        Ok(self.0.get(job)?.key.job_key())
    }

    fn witness(&self, job: &JobRequest, partition: u32) -> Result<JobWitness, Error> {
        self.0.get(job)?.job_witness(partition)
    }

    fn blinding(&self, _job: &JobRequest, _partition: u32) -> (Fr, Fr) {
        self.0.fresh_blinding()
    }

    fn bn254_blinding(&self, _job: &JobRequest, _partition: u32) -> (bn254::Fr, bn254::Fr) {
        self.0.fresh_bn254_blinding()
    }
}
