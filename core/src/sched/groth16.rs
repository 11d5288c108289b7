//! The real workload: zkpipe's Groth16 prover, one [`Prover`] per device,
//! and a CPU backend sized by `gpu_threads` for B in G2 off the device.

use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::engine::{JobRequest, Recorder, Workload};
use crate::groth16::{G1Sums, Proof, Prover};
use crate::r1cs::Witness;
use crate::stage::Stage;
use crate::types::{Fr, G2Projective};
use crate::{Backend, Error};

/// Makes the witness of partition `p` of a job with seed `seed`.
pub type WitnessFn = Arc<dyn Fn(u64, u32) -> Result<Witness, Error> + Send + Sync>;

/// One partition in flight.
#[derive(Debug)]
pub struct Part {
    witness: Witness,
    /// `[A·w, B·w, C·w]`, taken by the quotient stage.
    abc: Mutex<Option<[Vec<Fr>; 3]>>,
}

/// Groth16 proofs of one circuit shape and key.
pub struct Groth16Workload {
    provers: Vec<Prover>,
    cpu: Arc<Backend>,
    witness: WitnessFn,
    partition_bytes: u64,
}

impl std::fmt::Debug for Groth16Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Groth16Workload")
            .field("devices", &self.provers.len())
            .finish_non_exhaustive()
    }
}

impl Groth16Workload {
    /// `provers`: one per device (bases resident there); `cpu`: the backend
    /// that runs B in G2 when a policy places it on the CPU.
    pub fn new(provers: Vec<Prover>, cpu: Arc<Backend>, witness: WitnessFn) -> Self {
        let partition_bytes = provers.first().map_or(0, |p| p.partition_bytes());
        Groth16Workload {
            provers,
            cpu,
            witness,
            partition_bytes,
        }
    }

    /// `r, s` of a partition: derived from the job seed, so runs are reproducible.
    pub fn blinding(job: &JobRequest, partition: u32) -> (Fr, Fr) {
        let mut rng =
            crate::sample::rng(job.seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ partition as u64);
        (Fr::random(&mut rng), Fr::random(&mut rng))
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
        let abc = match abc {
            Some(abc) => abc,
            None => timed(rec, Stage::Spmv, || prover.spmv(&part.witness))?,
        };
        let w = &part.witness;
        let h = timed(rec, Stage::Quotient, || {
            prover.quotient_on(host, abc, &w.inputs)
        })?;
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
        self.provers.len()
    }

    fn partition_bytes(&self) -> u64 {
        self.partition_bytes
    }

    fn partition_device_bytes(&self) -> u64 {
        self.provers
            .first()
            .map_or(0, |p| p.partition_device_bytes())
    }

    fn device_memory(&self, device: usize) -> u64 {
        self.provers.get(device).map_or(0, |p| p.device_memory())
    }

    fn synthesize(
        &self,
        job: &JobRequest,
        partition: u32,
        mut rec: Recorder<'_>,
    ) -> Result<Part, Error> {
        let witness = timed(&mut rec, Stage::Witness, || {
            (self.witness)(job.seed, partition)
        })?;
        let abc = timed(&mut rec, Stage::Spmv, || self.provers[0].spmv(&witness))?;
        Ok(Part {
            witness,
            abc: Mutex::new(Some(abc)),
        })
    }

    fn device_work(
        &self,
        part: &Part,
        device: usize,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        self.device_stages(part, &self.provers[device], None, with_b_g2, &mut rec)
    }

    fn fallback_work(
        &self,
        part: &Part,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        self.device_stages(part, &self.provers[0], Some(&self.cpu), with_b_g2, &mut rec)
    }

    fn cpu_b_g2(&self, part: &Part, mut rec: Recorder<'_>) -> Result<G2Projective, Error> {
        timed(&mut rec, Stage::MsmG2, || {
            self.provers[0].msm_b_g2_on(&self.cpu, &part.witness)
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
        let (r, s) = Self::blinding(job, partition);
        Ok(ProofOutput {
            proof: self.provers[0].assemble(&g1, &b_g2, r, s),
            public_inputs: part.witness.public_inputs().to_vec(),
        })
    }
}
