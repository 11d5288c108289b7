//! The real workload: zkpipe's Groth16 prover, one [`Prover`] per device,
//! and a CPU backend sized by `gpu_threads` for B in G2 off the device.
//! Each job's key and inputs come from a [`JobSource`]: one key for a
//! benchmark batch ([`Groth16Workload::new`]), any number for a daemon.
//! A BN254 key ([`JobKey::Bn254`]) goes through the same stages on the
//! backend its source names (the [`bn254::prover`]).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::engine::{JobRequest, Recorder, Workload};
use crate::backend::lent_buffers::FrBuffer;
use crate::bn254;
use crate::groth16::{G1Sums, Proof, Prover};
use crate::r1cs::Witness;
use crate::stage::Stage;
use crate::types::{Fr, G2Projective};
use crate::{Backend, Error};

/// Makes the witness of partition `p` of a job with seed `seed`.
pub type WitnessFn = Arc<dyn Fn(u64, u32) -> Result<Witness, Error> + Send + Sync>;

/// One key's provers, one per device (its bases resident there).
pub type DeviceProvers = Arc<[Prover]>;

/// A job's key as the workload proves with it.
#[derive(Clone, Debug)]
pub enum JobKey {
    /// BLS12-381: one prover per device, bases resident there.
    Bls12_381(DeviceProvers),
    /// BN254: the key, proved on `backend`'s BN254 ops whichever device
    /// the engine picks.
    Bn254 {
        /// The proving key.
        key: Arc<bn254::prover::ProvingKey>,
        /// The backend that runs its ops.
        backend: Arc<Backend>,
        /// Its queries kept by `backend`, where it keeps them.
        resident: Option<Arc<bn254::prover::ResidentQueries>>,
    },
}

impl JobKey {
    /// The BLS12-381 provers.
    ///
    /// # Errors
    /// [`Error::WrongCurve`] for a BN254 key.
    pub fn provers(&self) -> Result<&DeviceProvers, Error> {
        match self {
            JobKey::Bls12_381(p) => Ok(p),
            JobKey::Bn254 { .. } => Err(Error::WrongCurve {
                what: "the job's key".into(),
                found: crate::Curve::Bn254,
                expected: crate::Curve::Bls12_381,
            }),
        }
    }
}

/// A partition's witness, of its key's curve.
#[derive(Clone, Debug)]
pub enum JobWitness {
    /// BLS12-381's.
    Bls12_381(Witness),
    /// BN254's: every signal, the constant one first.
    Bn254(Arc<Vec<bn254::Fr>>),
}

/// Where each job's key, witnesses and blinding come from.
///
/// Called by the engine's workers with no engine lock held; an
/// implementation must not call back into the engine while holding a lock
/// these calls take.
pub trait JobSource: Send + Sync {
    /// The job's key (BLS12-381: as many provers as the workload's devices).
    ///
    /// # Errors
    /// An unknown job, or a key that is no longer loaded.
    fn key(&self, job: &JobRequest) -> Result<JobKey, Error>;
    /// The witness of partition `partition` of `job`.
    ///
    /// # Errors
    /// Synthesis errors.
    fn witness(&self, job: &JobRequest, partition: u32) -> Result<JobWitness, Error>;
    /// `r, s` of a BLS12-381 partition.
    fn blinding(&self, job: &JobRequest, partition: u32) -> (Fr, Fr);
    /// `r, s` of a BN254 partition.
    fn bn254_blinding(&self, job: &JobRequest, partition: u32) -> (bn254::Fr, bn254::Fr);
}

/// One partition in flight.
pub struct Part {
    curve: CurvePart,
    /// The device its device stages ran on (`usize::MAX`: the host).
    device: AtomicUsize,
}

/// A partition's key and witness, by curve.
enum CurvePart {
    Bls12_381 {
        provers: DeviceProvers,
        witness: Witness,
        /// `[A·w, B·w, C·w]`, taken by the quotient stage (never made where
        /// the prover runs SpMV on the device).
        abc: Mutex<Option<[FrBuffer; 3]>>,
    },
    Bn254 {
        key: Arc<bn254::prover::ProvingKey>,
        backend: Arc<Backend>,
        resident: Option<Arc<bn254::prover::ResidentQueries>>,
        witness: Arc<Vec<bn254::Fr>>,
    },
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Part");
        match &self.curve {
            CurvePart::Bls12_381 { witness, .. } => d.field("witness", witness),
            CurvePart::Bn254 { witness, .. } => d.field("bn254_signals", &witness.len()),
        };
        d.finish_non_exhaustive()
    }
}

/// What a partition's device stages give.
// One per partition, moved once: the size difference costs nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub enum DeviceSums {
    /// BLS12-381's G1 sums, and B in G2 when it ran with them.
    Bls12_381(G1Sums, Option<G2Projective>),
    /// BN254's.
    Bn254(bn254::prover::Sums),
}

/// B in G2, computed off the device.
#[derive(Debug)]
pub enum BG2 {
    /// BLS12-381's.
    Bls12_381(G2Projective),
    /// BN254's.
    Bn254(bn254::G2Projective),
}

/// Groth16 proofs of the jobs a [`JobSource`] describes.
pub struct Groth16Workload {
    source: Box<dyn JobSource>,
    devices: usize,
    cpu: Arc<Backend>,
    /// Host bytes of a partition when every job has the same key (else 0).
    partition_bytes: u64,
    /// Whether some job's SpMV runs on the host (known for one key;
    /// assumed for a source of many).
    host_spmv: bool,
}

impl std::fmt::Debug for Groth16Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Groth16Workload")
            .field("devices", &self.devices)
            .finish_non_exhaustive()
    }
}

/// Every job proves one BN254 key with one witness (a benchmark's
/// workload: the same proof, blinded afresh).
struct OneBn254Key {
    key: Arc<bn254::prover::ProvingKey>,
    backend: Arc<Backend>,
    resident: Option<Arc<bn254::prover::ResidentQueries>>,
    witness: Arc<Vec<bn254::Fr>>,
}

impl JobSource for OneBn254Key {
    fn key(&self, _job: &JobRequest) -> Result<JobKey, Error> {
        Ok(JobKey::Bn254 {
            key: self.key.clone(),
            backend: self.backend.clone(),
            resident: self.resident.clone(),
        })
    }
    fn witness(&self, _job: &JobRequest, _partition: u32) -> Result<JobWitness, Error> {
        Ok(JobWitness::Bn254(self.witness.clone()))
    }
    fn blinding(&self, job: &JobRequest, partition: u32) -> (Fr, Fr) {
        Groth16Workload::blinding(job, partition)
    }
    fn bn254_blinding(&self, job: &JobRequest, partition: u32) -> (bn254::Fr, bn254::Fr) {
        Groth16Workload::bn254_blinding(job, partition)
    }
}

/// Every job proves with the same key; witnesses from a seed function.
struct OneKey {
    provers: DeviceProvers,
    witness: WitnessFn,
}

impl JobSource for OneKey {
    fn key(&self, _job: &JobRequest) -> Result<JobKey, Error> {
        Ok(JobKey::Bls12_381(self.provers.clone()))
    }
    fn witness(&self, job: &JobRequest, partition: u32) -> Result<JobWitness, Error> {
        (self.witness)(job.seed, partition).map(JobWitness::Bls12_381)
    }
    fn blinding(&self, job: &JobRequest, partition: u32) -> (Fr, Fr) {
        Groth16Workload::blinding(job, partition)
    }
    fn bn254_blinding(&self, job: &JobRequest, partition: u32) -> (bn254::Fr, bn254::Fr) {
        Groth16Workload::bn254_blinding(job, partition)
    }
}

impl Groth16Workload {
    /// One key: `provers`, one per device (bases resident there); `cpu`:
    /// the backend that runs B in G2 when a policy places it on the CPU.
    pub fn new(provers: Vec<Prover>, cpu: Arc<Backend>, witness: WitnessFn) -> Self {
        let partition_bytes = provers.first().map_or(0, |p| p.partition_bytes());
        let host_spmv = !provers.first().is_some_and(Prover::device_spmv);
        Groth16Workload {
            host_spmv,
            devices: provers.len(),
            source: Box::new(OneKey {
                provers: provers.into(),
                witness,
            }),
            cpu,
            partition_bytes,
        }
    }

    /// Every job proves `witness` under the BN254 `key` on `backend`'s
    /// BN254 ops (one device; the key's queries kept there when
    /// `resident`); `cpu`: where B in G2 runs off the device.
    pub fn bn254(
        key: Arc<bn254::prover::ProvingKey>,
        resident: Option<Arc<bn254::prover::ResidentQueries>>,
        witness: Arc<Vec<bn254::Fr>>,
        backend: Arc<Backend>,
        cpu: Arc<Backend>,
    ) -> Self {
        let partition_bytes = key.partition_bytes();
        Groth16Workload {
            source: Box::new(OneBn254Key {
                key,
                backend,
                resident,
                witness,
            }),
            devices: 1,
            cpu,
            partition_bytes,
            host_spmv: true,
        }
    }

    /// Jobs of any key, on `devices` devices: `source` says which.
    pub fn with_source(source: Box<dyn JobSource>, devices: usize, cpu: Arc<Backend>) -> Self {
        Groth16Workload {
            source,
            devices,
            cpu,
            partition_bytes: 0,
            host_spmv: true,
        }
    }

    /// `r, s` of a partition: derived from the job seed, so runs are reproducible.
    pub fn blinding(job: &JobRequest, partition: u32) -> (Fr, Fr) {
        let mut rng = Self::blinding_rng(job, partition);
        (Fr::random(&mut rng), Fr::random(&mut rng))
    }

    /// BN254's `r, s` of a partition, derived like [`Self::blinding`].
    pub fn bn254_blinding(job: &JobRequest, partition: u32) -> (bn254::Fr, bn254::Fr) {
        let mut rng = Self::blinding_rng(job, partition);
        (bn254::Fr::random(&mut rng), bn254::Fr::random(&mut rng))
    }

    fn blinding_rng(job: &JobRequest, partition: u32) -> impl rand_core::RngCore {
        crate::util::sample::rng(job.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ partition as u64)
    }

    /// Makes the host buffers of `partitions` partitions in flight ahead
    /// of the first proofs of `job`'s key (see [`crate::backend::lent_buffers::BufferPool::reserve`]):
    /// their A·w, B·w, C·w, which every device's partitions take from the
    /// first prover's pool (the SpMV runs before a device is chosen).
    ///
    /// # Errors
    /// The job's key is not known.
    pub fn reserve_buffers(&self, job: &JobRequest, partitions: usize) -> Result<(), Error> {
        if let JobKey::Bls12_381(provers) = self.source.key(job)?
            && let Some(first) = provers.first()
        {
            first.reserve_buffers(partitions);
        }
        Ok(())
    }

    /// The backend B in G2 runs on off the device.
    pub fn cpu(&self) -> &Arc<Backend> {
        &self.cpu
    }
}

impl Groth16Workload {
    /// `quotient`, `msm` (and `msm_g2`) on the prover's backends, or all on `host`.
    fn device_stages(
        &self,
        abc: &Mutex<Option<[FrBuffer; 3]>>,
        w: &Witness,
        prover: &Prover,
        host: Option<&Backend>,
        with_b_g2: bool,
        rec: &mut Recorder<'_>,
    ) -> Result<(G1Sums, Option<G2Projective>), Error> {
        // The quotient consumes A·w, B·w, C·w; a retry after a failure rebuilds them.
        let abc = abc.lock().unwrap().take();
        let h = match abc {
            // SpMV and the quotient in one device call: its span is spmv's.
            None if host.is_none() && prover.device_spmv() => {
                timed(rec, Stage::Spmv, || prover.quotient_from_witness(w, true))?
            }
            abc => {
                let abc = match abc {
                    Some(abc) => abc,
                    None => timed(rec, Stage::Spmv, || prover.spmv(w))?,
                };
                timed(rec, Stage::Quotient, || prover.quotient_on(host, abc))?
            }
        };
        let Some(be) = host else {
            return prover.msm_stage(w, &h, with_b_g2, rec);
        };
        let g1 = timed(rec, Stage::Msm, || prover.msm_g1_on(host, w, &h))?;
        let g2 = if with_b_g2 {
            Some(timed(rec, Stage::MsmG2, || prover.msm_b_g2_on(be, w))?)
        } else {
            None
        };
        Ok((g1, g2))
    }

    /// BN254's `quotient`, `msm` (and `msm_g2`) on `be`.
    fn bn254_stages(
        be: &Backend,
        key: &bn254::prover::ProvingKey,
        resident: Option<&bn254::prover::ResidentQueries>,
        w: &[bn254::Fr],
        with_b_g2: bool,
        rec: &mut Recorder<'_>,
    ) -> Result<bn254::prover::Sums, Error> {
        use bn254::prover;
        let h = timed(rec, Stage::Quotient, || {
            prover::quotient(be, key, resident, w)
        })?;
        let mut sums = timed(rec, Stage::Msm, || {
            prover::msms_g1(be, key, resident, w, &h, false)
        })?;
        if with_b_g2 {
            sums.b_g2 = Some(timed(rec, Stage::MsmG2, || {
                prover::msm_b_g2(be, key, resident, w)
            })?);
        }
        Ok(sums)
    }

    /// The device stages of `part`: on `device`'s prover, or on the host
    /// (`None`).
    fn stages(
        &self,
        part: &Part,
        device: Option<usize>,
        with_b_g2: bool,
        rec: &mut Recorder<'_>,
    ) -> Result<DeviceSums, Error> {
        part.device
            .store(device.unwrap_or(usize::MAX), Ordering::Relaxed);
        match &part.curve {
            CurvePart::Bls12_381 {
                provers,
                witness,
                abc,
            } => {
                let (prover, host) = match device {
                    Some(d) => (
                        provers.get(d).ok_or_else(|| {
                            Error::InvalidInput(format!("the key has no prover on device {d}"))
                        })?,
                        None,
                    ),
                    None => (&provers[0], Some(&*self.cpu)),
                };
                let (g1, g2) = self.device_stages(abc, witness, prover, host, with_b_g2, rec)?;
                Ok(DeviceSums::Bls12_381(g1, g2))
            }
            // BN254's backend is the key's, on the device or not.
            CurvePart::Bn254 {
                key,
                backend,
                resident,
                witness,
            } => Self::bn254_stages(backend, key, resident.as_deref(), witness, with_b_g2, rec)
                .map(DeviceSums::Bn254),
        }
    }
}

/// A proof of either curve and the public inputs it was made for.
#[derive(Clone, Debug)]
pub enum CurveProof {
    /// BLS12-381.
    Bls12_381 {
        /// The proof.
        proof: Proof,
        /// Its public inputs (without the leading one).
        public_inputs: Vec<Fr>,
    },
    /// BN254.
    Bn254 {
        /// The proof.
        proof: bn254::groth16::Proof,
        /// Its public signals (without the leading one).
        public_inputs: Vec<bn254::Fr>,
    },
}

impl CurveProof {
    /// Its curve.
    pub fn curve(&self) -> crate::Curve {
        match self {
            CurveProof::Bls12_381 { .. } => crate::Curve::Bls12_381,
            CurveProof::Bn254 { .. } => crate::Curve::Bn254,
        }
    }

    /// The proof's bytes (BLS12-381: bellperson's 192 compressed bytes;
    /// BN254: Ethereum's 256, [`bn254::groth16::Proof::to_bytes`]) and its
    /// public inputs in decimal.
    pub fn encoded(&self) -> (Vec<u8>, Vec<String>) {
        match self {
            CurveProof::Bls12_381 {
                proof,
                public_inputs,
            } => (
                proof.to_bytes().to_vec(),
                public_inputs
                    .iter()
                    .map(crate::util::decimal::fr_to_decimal)
                    .collect(),
            ),
            CurveProof::Bn254 {
                proof,
                public_inputs,
            } => (
                proof.to_bytes().to_vec(),
                public_inputs.iter().map(bn254::Fr::to_decimal).collect(),
            ),
        }
    }
}

/// A proof and the device it was made on.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    /// The proof and its public inputs.
    pub proof: CurveProof,
    /// The device its device stages ran on (`None`: the host, after the
    /// device ran out of memory).
    pub device: Option<usize>,
}

impl ProofOutput {
    /// The BLS12-381 proof and its public inputs.
    ///
    /// # Errors
    /// [`Error::WrongCurve`] for a BN254 proof.
    pub fn bls12_381(&self) -> Result<(&Proof, &[Fr]), Error> {
        match &self.proof {
            CurveProof::Bls12_381 {
                proof,
                public_inputs,
            } => Ok((proof, public_inputs)),
            CurveProof::Bn254 { .. } => Err(Error::WrongCurve {
                what: "the proof".into(),
                found: crate::Curve::Bn254,
                expected: crate::Curve::Bls12_381,
            }),
        }
    }
}

fn timed<T>(rec: &mut Recorder<'_>, stage: Stage, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    rec(stage, t0, Instant::now());
    out
}

impl Workload for Groth16Workload {
    type Part = Part;
    type DeviceOut = DeviceSums;
    type G2Out = BG2;
    type Output = ProofOutput;

    fn devices(&self) -> usize {
        self.devices
    }

    fn partition_bytes(&self) -> u64 {
        self.partition_bytes
    }

    fn job_partition_bytes(&self, job: &JobRequest) -> u64 {
        match self.source.key(job) {
            Ok(JobKey::Bls12_381(p)) => p
                .first()
                .map_or(self.partition_bytes, Prover::partition_bytes),
            Ok(JobKey::Bn254 { key, .. }) => key.partition_bytes(),
            Err(_) => self.partition_bytes,
        }
    }

    fn job_partition_device_bytes(&self, job: &JobRequest) -> u64 {
        match self.source.key(job) {
            Ok(JobKey::Bls12_381(p)) => p.first().map_or(0, Prover::partition_device_bytes),
            _ => 0,
        }
    }

    fn device_memory(&self, device: usize) -> u64 {
        // Known for one key only: the device less that key's bases.
        let one = JobRequest {
            partitions: 1,
            priority: 0,
            seed: 0,
        };
        match (self.partition_bytes, self.source.key(&one)) {
            (0, _) => 0,
            (_, Ok(JobKey::Bls12_381(p))) => p.get(device).map_or(0, Prover::device_memory),
            _ => 0,
        }
    }

    fn synthesize(
        &self,
        job: &JobRequest,
        partition: u32,
        mut rec: Recorder<'_>,
    ) -> Result<Part, Error> {
        let key = self.source.key(job)?;
        let witness = timed(&mut rec, Stage::Witness, || {
            self.source.witness(job, partition)
        })?;
        // The shape is checked here, where a bad witness fails its job
        // before it takes a place in the SpMV queue.
        let curve = match (key, witness) {
            (JobKey::Bls12_381(provers), JobWitness::Bls12_381(witness)) => {
                let first = provers
                    .first()
                    .ok_or_else(|| Error::InvalidInput("a key with no prover".into()))?;
                first.r1cs().check_witness(&witness)?;
                CurvePart::Bls12_381 {
                    provers,
                    witness,
                    abc: Mutex::new(None),
                }
            }
            (
                JobKey::Bn254 {
                    key,
                    backend,
                    resident,
                },
                JobWitness::Bn254(witness),
            ) => {
                key.check_witness(&witness)?;
                CurvePart::Bn254 {
                    key,
                    backend,
                    resident,
                    witness,
                }
            }
            (key, _) => {
                let (found, expected) = match key {
                    JobKey::Bls12_381(_) => (crate::Curve::Bn254, crate::Curve::Bls12_381),
                    JobKey::Bn254 { .. } => (crate::Curve::Bls12_381, crate::Curve::Bn254),
                };
                return Err(Error::WrongCurve {
                    what: format!("the witness of partition {partition}"),
                    found,
                    expected,
                });
            }
        };
        Ok(Part {
            curve,
            device: AtomicUsize::new(usize::MAX),
        })
    }

    fn has_prepare(&self) -> bool {
        self.host_spmv
    }

    fn prepare(&self, part: &Part, mut rec: Recorder<'_>) -> Result<(), Error> {
        let CurvePart::Bls12_381 {
            provers,
            witness,
            abc,
        } = &part.curve
        else {
            // BN254's A·w and B·w are made with its quotient.
            return Ok(());
        };
        // Where the device runs SpMV, a, b, c are made there, not here.
        if provers[0].device_spmv() {
            return Ok(());
        }
        let made = timed(&mut rec, Stage::Spmv, || provers[0].spmv(witness))?;
        *abc.lock().unwrap() = Some(made);
        Ok(())
    }

    fn device_work(
        &self,
        part: &Part,
        device: usize,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        self.stages(part, Some(device), with_b_g2, &mut rec)
    }

    fn fallback_work(
        &self,
        part: &Part,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        self.stages(part, None, with_b_g2, &mut rec)
    }

    fn cpu_b_g2(&self, part: &Part, mut rec: Recorder<'_>) -> Result<BG2, Error> {
        timed(&mut rec, Stage::MsmG2, || match &part.curve {
            CurvePart::Bls12_381 {
                provers, witness, ..
            } => provers[0]
                .msm_b_g2_on(&self.cpu, witness)
                .map(BG2::Bls12_381),
            CurvePart::Bn254 { key, witness, .. } => {
                // Off the device: the host's copy of the bases.
                bn254::prover::msm_b_g2(&self.cpu, key, None, witness).map(BG2::Bn254)
            }
        })
    }

    fn assemble(
        &self,
        job: &JobRequest,
        partition: u32,
        part: &Part,
        dev: Self::DeviceOut,
        g2: Option<BG2>,
    ) -> Result<ProofOutput, Error> {
        let missing = || Error::InvalidInput("B in G2 was never computed".into());
        let device = part.device.load(Ordering::Relaxed);
        let proof = match (&part.curve, dev, g2) {
            (
                CurvePart::Bls12_381 {
                    provers, witness, ..
                },
                DeviceSums::Bls12_381(g1, on_device),
                g2,
            ) => {
                let b_g2 = match (on_device, g2) {
                    (Some(b), _) | (None, Some(BG2::Bls12_381(b))) => b,
                    _ => return Err(missing()),
                };
                let (r, s) = self.source.blinding(job, partition);
                CurveProof::Bls12_381 {
                    proof: provers[0].assemble(&g1, &b_g2, r, s),
                    public_inputs: witness.public_inputs().to_vec(),
                }
            }
            (CurvePart::Bn254 { key, witness, .. }, DeviceSums::Bn254(sums), g2) => {
                let b_g2 = match (sums.b_g2, g2) {
                    (Some(b), _) | (None, Some(BG2::Bn254(b))) => b,
                    _ => return Err(missing()),
                };
                let (r, s) = self.source.bn254_blinding(job, partition);
                CurveProof::Bn254 {
                    proof: bn254::prover::assemble(key, &sums, &b_g2, r, s),
                    public_inputs: key.public(witness).to_vec(),
                }
            }
            _ => {
                return Err(Error::Failed(
                    "a partition's stages gave sums of another curve".into(),
                ));
            }
        };
        Ok(ProofOutput {
            proof,
            device: (device != usize::MAX).then_some(device),
        })
    }
}
