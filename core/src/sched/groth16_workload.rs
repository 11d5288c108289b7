//! The real workload: zkpipe's Groth16 prover, one [`Prover`] per device,
//! and a CPU backend sized by `gpu_threads` for B in G2 off the device.
//! Each job's key and inputs come from a [`JobSource`]: one key for a
//! benchmark batch ([`Groth16Workload::new`]), any number for a daemon.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::engine::{JobRequest, Recorder, Workload};
use crate::backend::lent_buffers::FrBuffer;
use crate::groth16::{G1Sums, Proof, Prover};
use crate::r1cs::Witness;
use crate::stage::Stage;
use crate::types::{Fr, G2Projective};
use crate::{Backend, Error};

/// Makes the witness of partition `p` of a job with seed `seed`.
pub type WitnessFn = Arc<dyn Fn(u64, u32) -> Result<Witness, Error> + Send + Sync>;

/// One key's provers, one per device (its bases resident there).
pub type DeviceProvers = Arc<[Prover]>;

/// Where each job's key, witnesses and blinding come from.
///
/// Called by the engine's workers with no engine lock held; an
/// implementation must not call back into the engine while holding a lock
/// these calls take.
pub trait JobSource: Send + Sync {
    /// The provers of the job's key (as many as the workload's devices).
    ///
    /// # Errors
    /// An unknown job, or a key that is no longer loaded.
    fn provers(&self, job: &JobRequest) -> Result<DeviceProvers, Error>;
    /// The witness of partition `partition` of `job`.
    ///
    /// # Errors
    /// Synthesis errors.
    fn witness(&self, job: &JobRequest, partition: u32) -> Result<Witness, Error>;
    /// `r, s` of a partition.
    fn blinding(&self, job: &JobRequest, partition: u32) -> (Fr, Fr);
}

/// One partition in flight.
pub struct Part {
    provers: DeviceProvers,
    witness: Witness,
    /// `[A·w, B·w, C·w]`, taken by the quotient stage (never made where
    /// the prover runs SpMV on the device).
    abc: Mutex<Option<[FrBuffer; 3]>>,
    /// The device its device stages ran on (`usize::MAX`: the host).
    device: AtomicUsize,
}

impl std::fmt::Debug for Part {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Part")
            .field("witness", &self.witness)
            .finish_non_exhaustive()
    }
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

/// Every job proves with the same key; witnesses from a seed function.
struct OneKey {
    provers: DeviceProvers,
    witness: WitnessFn,
}

impl JobSource for OneKey {
    fn provers(&self, _job: &JobRequest) -> Result<DeviceProvers, Error> {
        Ok(self.provers.clone())
    }
    fn witness(&self, job: &JobRequest, partition: u32) -> Result<Witness, Error> {
        (self.witness)(job.seed, partition)
    }
    fn blinding(&self, job: &JobRequest, partition: u32) -> (Fr, Fr) {
        Groth16Workload::blinding(job, partition)
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
        let mut rng = crate::util::sample::rng(
            job.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ partition as u64,
        );
        (Fr::random(&mut rng), Fr::random(&mut rng))
    }

    /// Makes the host buffers of `partitions` partitions in flight ahead
    /// of the first proofs of `job`'s key (see [`crate::backend::lent_buffers::BufferPool::reserve`]):
    /// their A·w, B·w, C·w, which every device's partitions take from the
    /// first prover's pool (the SpMV runs before a device is chosen).
    ///
    /// # Errors
    /// The job's key is not known.
    pub fn reserve_buffers(&self, job: &JobRequest, partitions: usize) -> Result<(), Error> {
        let provers = self.source.provers(job)?;
        if let Some(first) = provers.first() {
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
        part: &Part,
        prover: &Prover,
        host: Option<&Backend>,
        with_b_g2: bool,
        rec: &mut Recorder<'_>,
    ) -> Result<(G1Sums, Option<G2Projective>), Error> {
        // The quotient consumes A·w, B·w, C·w; a retry after a failure rebuilds them.
        let abc = part.abc.lock().unwrap().take();
        let w = &part.witness;
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
}

/// A proof and the public inputs it was made for.
#[derive(Clone, Debug)]
pub struct ProofOutput {
    /// The proof.
    pub proof: Proof,
    /// Its public inputs (without the leading one).
    pub public_inputs: Vec<Fr>,
    /// The device its device stages ran on (`None`: the host, after the
    /// device ran out of memory).
    pub device: Option<usize>,
}

fn timed<T>(rec: &mut Recorder<'_>, stage: Stage, f: impl FnOnce() -> T) -> T {
    let t0 = Instant::now();
    let out = f();
    rec(stage, t0, Instant::now());
    out
}

impl Workload for Groth16Workload {
    type Part = Part;
    type DeviceOut = (G1Sums, Option<G2Projective>);
    type G2Out = G2Projective;
    type Output = ProofOutput;

    fn devices(&self) -> usize {
        self.devices
    }

    fn partition_bytes(&self) -> u64 {
        self.partition_bytes
    }

    fn job_partition_bytes(&self, job: &JobRequest) -> u64 {
        self.source
            .provers(job)
            .ok()
            .and_then(|p| p.first().map(Prover::partition_bytes))
            .unwrap_or(self.partition_bytes)
    }

    fn job_partition_device_bytes(&self, job: &JobRequest) -> u64 {
        self.source
            .provers(job)
            .ok()
            .and_then(|p| p.first().map(Prover::partition_device_bytes))
            .unwrap_or(0)
    }

    fn device_memory(&self, device: usize) -> u64 {
        // Known for one key only: the device less that key's bases.
        let one = JobRequest {
            partitions: 1,
            priority: 0,
            seed: 0,
        };
        match self.partition_bytes {
            0 => 0,
            _ => self
                .source
                .provers(&one)
                .ok()
                .and_then(|p| p.get(device).map(Prover::device_memory))
                .unwrap_or(0),
        }
    }

    fn synthesize(
        &self,
        job: &JobRequest,
        partition: u32,
        mut rec: Recorder<'_>,
    ) -> Result<Part, Error> {
        let provers = self.source.provers(job)?;
        let first = provers
            .first()
            .ok_or_else(|| Error::InvalidInput("a key with no prover".into()))?;
        let witness = timed(&mut rec, Stage::Witness, || {
            self.source.witness(job, partition)
        })?;
        // The shape is checked here, where a bad witness fails its job
        // before it takes a place in the SpMV queue.
        first.r1cs().check_witness(&witness)?;
        Ok(Part {
            provers,
            witness,
            abc: Mutex::new(None),
            device: AtomicUsize::new(usize::MAX),
        })
    }

    fn has_prepare(&self) -> bool {
        self.host_spmv
    }

    fn prepare(&self, part: &Part, mut rec: Recorder<'_>) -> Result<(), Error> {
        // Where the device runs SpMV, a, b, c are made there, not here.
        if part.provers[0].device_spmv() {
            return Ok(());
        }
        let abc = timed(&mut rec, Stage::Spmv, || {
            part.provers[0].spmv(&part.witness)
        })?;
        *part.abc.lock().unwrap() = Some(abc);
        Ok(())
    }

    fn device_work(
        &self,
        part: &Part,
        device: usize,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        let prover = part.provers.get(device).ok_or_else(|| {
            Error::InvalidInput(format!("the key has no prover on device {device}"))
        })?;
        part.device.store(device, Ordering::Relaxed);
        self.device_stages(part, prover, None, with_b_g2, &mut rec)
    }

    fn fallback_work(
        &self,
        part: &Part,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        part.device.store(usize::MAX, Ordering::Relaxed);
        self.device_stages(part, &part.provers[0], Some(&self.cpu), with_b_g2, &mut rec)
    }

    fn cpu_b_g2(&self, part: &Part, mut rec: Recorder<'_>) -> Result<G2Projective, Error> {
        timed(&mut rec, Stage::MsmG2, || {
            part.provers[0].msm_b_g2_on(&self.cpu, &part.witness)
        })
    }

    fn assemble(
        &self,
        job: &JobRequest,
        partition: u32,
        part: &Part,
        dev: Self::DeviceOut,
        g2: Option<G2Projective>,
    ) -> Result<ProofOutput, Error> {
        let (g1, on_device) = dev;
        let b_g2 = on_device
            .or(g2)
            .ok_or_else(|| Error::InvalidInput("B in G2 was never computed".into()))?;
        let (r, s) = self.source.blinding(job, partition);
        let device = part.device.load(Ordering::Relaxed);
        Ok(ProofOutput {
            proof: part.provers[0].assemble(&g1, &b_g2, r, s),
            public_inputs: part.witness.public_inputs().to_vec(),
            device: (device != usize::MAX).then_some(device),
        })
    }
}
