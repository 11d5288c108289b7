//! A batch of proof requests through the engine: the Groth16 workload of a
//! circuit on every device of a backend, and the driver that keeps a number
//! of requests in flight and measures them. `zkpipe bench batch`, the tests
//! and a daemon's benchmarks all run batches through here.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::engine::{Engine, JobOutcome, JobRequest, Timeline};
use super::groth16_workload::{CurveProof, Groth16Workload, ProofOutput};
use super::metrics::{self, Summary};
use super::policy::{Limits, Policy};
use super::settings::{DeviceLock, Settings};
use crate::backend::loader::Registry;
use crate::groth16::{self, Parameters, PreparedVerifyingKey, ProverBuilder};
use crate::plugin::BackendConfig;
use crate::r1cs::R1cs;
use crate::r1cs::circuit::CircuitSource;
use crate::{Backend, Curve, Error, bn254};

/// The Groth16 workload of `circuit` on every device of `backend`: one
/// prover per device (its bases resident there; ops the backend does not
/// run go to a CPU backend from `registry`), and a CPU backend of
/// `settings.gpu_threads` threads for B in G2 off the device.
///
/// # Errors
/// [`Error::NoDevice`] for a backend with no usable device; errors of
/// [`ProverBuilder::build`]; creating the CPU backend.
pub fn groth16_workload(
    registry: &Registry,
    backend: Arc<Backend>,
    params: Arc<Parameters>,
    r1cs: Arc<R1cs>,
    circuit: Arc<dyn CircuitSource>,
    settings: &Settings,
) -> Result<Groth16Workload, Error> {
    let devices = backend.info().devices.len().max(1);
    let mut provers = Vec::with_capacity(devices);
    for d in 0..devices {
        // A partition's MSMs side by side only where partitions do not
        // share the device, and where five MSMs' scratch fits the budget.
        let mut prover = ProverBuilder::new(backend.clone())
            .device(d as u32)
            .cpu_fallback(registry)
            .msms_side_by_side(settings.device_lock == DeviceLock::Partition)
            .build(params.clone(), r1cs.clone())?;
        let budget = settings.device_memory_budget;
        if budget > 0 && prover.partition_device_bytes() > budget {
            prover.allow_msms_side_by_side(false);
        }
        provers.push(prover);
    }
    let cpu_config = BackendConfig {
        threads: Some(settings.gpu_threads as u32).into(),
        ext: Default::default(),
    };
    let cpu = Arc::new(registry.create("cpu", &cpu_config)?);
    let witness = Arc::new(move |seed: u64, p: u32| {
        circuit.witness(seed.wrapping_mul(1000).wrapping_add(p as u64))
    });
    Ok(Groth16Workload::new(provers, cpu, witness))
}

/// The workload of one BN254 key: every request proves `witness` under
/// `key` on `backend`'s BN254 ops (device 0, the key's queries kept there
/// where that is a GPU), B in G2 off the device on a CPU backend
/// of `settings.gpu_threads` threads from `registry`.
///
/// # Errors
/// [`Error::InvalidInput`] for a witness the key cannot take (its length,
/// its first value); uploading the queries; creating the CPU backend.
pub fn bn254_workload(
    registry: &Registry,
    backend: Arc<Backend>,
    key: Arc<bn254::prover::ProvingKey>,
    witness: Arc<Vec<bn254::Fr>>,
    settings: &Settings,
) -> Result<Groth16Workload, Error> {
    key.check_witness(&witness)?;
    let cpu_config = BackendConfig {
        threads: Some(settings.gpu_threads as u32).into(),
        ext: Default::default(),
    };
    let cpu = Arc::new(registry.create("cpu", &cpu_config)?);
    let resident = bn254::prover::ResidentQueries::keep_on_gpu(&backend, &key, 0)?;
    Ok(Groth16Workload::bn254(key, resident, witness, backend, cpu))
}

/// What a batch's proofs are checked against: the verifying key of its
/// curve.
#[derive(Debug)]
pub enum BatchVerifier {
    /// BLS12-381's, prepared.
    Bls12_381(Box<PreparedVerifyingKey>),
    /// BN254's.
    Bn254(Box<bn254::groth16::VerifyingKey>),
}

impl BatchVerifier {
    /// The curve of the proofs it checks.
    pub fn curve(&self) -> Curve {
        match self {
            BatchVerifier::Bls12_381(_) => Curve::Bls12_381,
            BatchVerifier::Bn254(_) => Curve::Bn254,
        }
    }

    /// Whether `proof` verifies.
    ///
    /// # Errors
    /// [`Error::WrongCurve`] for a proof of the other curve; the
    /// verifier's errors.
    pub fn verify(&self, proof: &ProofOutput) -> Result<bool, Error> {
        match (self, &proof.proof) {
            (
                BatchVerifier::Bls12_381(pvk),
                CurveProof::Bls12_381 {
                    proof,
                    public_inputs,
                },
            ) => groth16::verify(pvk, proof, public_inputs),
            (
                BatchVerifier::Bn254(vk),
                CurveProof::Bn254 {
                    proof,
                    public_inputs,
                },
            ) => bn254::groth16::verify(vk, proof, public_inputs),
            (v, p) => Err(Error::WrongCurve {
                what: "a proof of the batch".into(),
                found: p.curve(),
                expected: v.curve(),
            }),
        }
    }
}

/// [`run_batch`]'s [`Error::Failed`] when a proof does not verify.
pub const PROOF_REJECTED: &str = "a proof from the batch failed to verify";

/// Which proofs of a batch are verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verify {
    /// None (synthetic keys: the proofs cannot verify).
    None,
    /// The first partition of each request.
    Sample,
    /// Every partition.
    All,
}

/// What to run.
#[derive(Debug, Clone, Copy)]
pub struct BatchSpec {
    /// Proof requests.
    pub count: u32,
    /// Partitions per request.
    pub partitions: u32,
    /// Requests in flight at once.
    pub concurrency: u32,
    /// Which proofs to verify.
    pub verify: Verify,
}

/// One request that finished, as [`run_batch`] reports it.
#[derive(Debug)]
pub struct Finished<'a> {
    /// Requests finished so far, this one included.
    pub done: u32,
    /// Submission → result.
    pub latency: Duration,
    /// The engine's outcome.
    pub outcome: &'a JobOutcome<ProofOutput>,
}

/// What a batch did.
#[derive(Debug, Default)]
pub struct BatchRun {
    /// Wall time.
    pub total: Duration,
    /// Latencies of the requests that completed.
    pub latencies: Vec<Duration>,
    /// Why each failed request failed.
    pub failures: Vec<String>,
    /// Proofs verified.
    pub verified: u32,
    /// Device out-of-memory errors retried.
    pub oom_retries: u32,
    /// Partitions whose device stages ran on the host after out-of-memory.
    pub oom_fallbacks: u32,
    /// The most partition bytes the scheduler admitted at once.
    pub admitted_peak_bytes: u64,
    /// Every stage of every partition (complete: the engine was shut down).
    pub timeline: Timeline,
    /// Devices of the workload.
    pub devices: usize,
    /// One partition run alone before the batch (not counted in it): each
    /// stage's time without contention, the measure of inflation. Empty
    /// where none ran.
    pub alone: Timeline,
    /// The knobs the engine ran with, sized for the machine (`None`: not
    /// known, e.g. a daemon's).
    pub settings: Option<Settings>,
    /// Cores of the machine that ran the batch.
    pub cores: usize,
    /// Each time the policy moved the limits: when (ms) and to what.
    pub limit_changes: Vec<(f64, Limits)>,
    /// The curve of its proofs (`None`: not known, e.g. a daemon's).
    pub curve: Option<Curve>,
}

/// Runs one partition alone on `engine` (its stage times are the batch's
/// measure of inflation, and it warms the devices up), then `spec`
/// (keeping `spec.concurrency` requests in flight), verifies proofs with
/// `verifier` as `spec.verify` says, calls `on_finished` per request, then
/// shuts the engine down.
///
/// # Errors
/// [`Error::Failed`] when a proof fails to verify (a wrong proof is
/// never counted as a success).
pub fn run_batch(
    engine: Engine<Groth16Workload>,
    spec: &BatchSpec,
    verifier: &BatchVerifier,
    on_finished: &mut dyn FnMut(&Finished<'_>),
) -> Result<BatchRun, Error> {
    let one = JobRequest {
        partitions: 1,
        priority: 0,
        seed: 0,
    };
    // Host buffers for every partition that can hold them at once: SpMVs
    // running, partitions waiting for a device, partitions on one.
    let set = engine.settings();
    let holding = set.spmv_workers
        + set.lookahead
        + super::engine::Workload::devices(engine.workload()) * set.gpu_workers_per_device;
    engine.workload().reserve_buffers(&one, holding)?;
    let alone = engine.submit(one).wait();
    let mut run = BatchRun {
        devices: super::engine::Workload::devices(engine.workload()),
        settings: Some(engine.settings().clone()),
        cores: crate::util::machine::cores(),
        curve: Some(verifier.curve()),
        ..Default::default()
    };
    // Its dealloc may still be running: wait for its span.
    let deadline = Instant::now() + Duration::from_secs(60);
    while !engine
        .timeline()
        .iter()
        .any(|s| s.stage == crate::stage::Stage::Dealloc)
        && Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(1));
    }
    let alone_spans = engine.take_timeline();
    // A lone partition that failed measured nothing; the batch shows why.
    if alone.result.is_ok() {
        run.alone = alone_spans;
    }
    let t0 = Instant::now();
    let mut in_flight = VecDeque::new();
    let mut submitted_at = HashMap::new();
    let (mut next, mut done) = (0u32, 0u32);
    while done < spec.count {
        while next < spec.count && in_flight.len() < spec.concurrency.max(1) as usize {
            let h = engine.submit(JobRequest {
                partitions: spec.partitions,
                priority: 0,
                seed: next as u64 + 1,
            });
            submitted_at.insert(h.id, Instant::now());
            in_flight.push_back(h);
            next += 1;
        }
        // Take whichever request finishes first.
        let outcome = 'found: loop {
            for i in 0..in_flight.len() {
                if let Some(o) = in_flight[i].try_wait() {
                    in_flight.remove(i);
                    break 'found o;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        };
        done += 1;
        let latency = submitted_at[&outcome.job].elapsed();
        run.oom_retries += outcome.oom_retries;
        run.oom_fallbacks += outcome.oom_fallbacks;
        match &outcome.result {
            Ok(proofs) => {
                run.latencies.push(latency);
                run.verified += verify(verifier, proofs, spec.verify)?;
            }
            Err(why) => run.failures.push(why.clone()),
        }
        on_finished(&Finished {
            done,
            latency,
            outcome: &outcome,
        });
    }
    run.total = t0.elapsed();
    run.admitted_peak_bytes = engine.peak_bytes();
    run.limit_changes = engine.limit_changes();
    // The batch's clock starts at its first request, after the lone partition.
    let offset_ms = run.alone.iter().map(|s| s.end_ms).fold(0.0, f64::max);
    for change in &mut run.limit_changes {
        change.0 -= offset_ms;
    }
    run.timeline = engine.shutdown();
    for span in &mut run.timeline {
        span.start_ms -= offset_ms;
        span.end_ms -= offset_ms;
    }
    Ok(run)
}

fn verify(verifier: &BatchVerifier, proofs: &[ProofOutput], which: Verify) -> Result<u32, Error> {
    let n = match which {
        Verify::None => 0,
        Verify::Sample => proofs.len().min(1),
        Verify::All => proofs.len(),
    };
    for p in &proofs[..n] {
        if !verifier.verify(p)? {
            return Err(Error::Failed(PROOF_REJECTED.into()));
        }
    }
    Ok(n as u32)
}

/// The run summarised for one policy.
pub fn summarize(policy: &dyn Policy, run: &BatchRun, requests: u32) -> Summary {
    let settings = run.settings.as_ref().unwrap_or(policy.settings());
    summarize_as(policy.name(), settings.describe(), run, requests)
}

/// The run summarised under a policy known by name and knobs only (one
/// that ran elsewhere, in a daemon).
pub fn summarize_as(policy: &str, settings: String, run: &BatchRun, requests: u32) -> Summary {
    let (avg, min, max, p95) = metrics::latency_stats(&run.latencies);
    let completed = run.latencies.len() as u32;
    let busy = metrics::device_busy_s(&run.timeline);
    let device_time: f64 = busy.values().sum();
    let total = run.total.as_secs_f64();
    let devices = run.devices.max(1);
    Summary {
        policy: policy.to_string(),
        settings,
        total_s: total,
        completed,
        failed: run.failures.len() as u32,
        latency_avg_s: avg,
        latency_min_s: min,
        latency_max_s: max,
        latency_p95_s: p95,
        proofs_per_min: if total > 0.0 {
            completed as f64 / total * 60.0
        } else {
            0.0
        },
        s_per_proof: if completed == 0 {
            0.0
        } else {
            total / completed as f64
        },
        admitted_peak_bytes: run.admitted_peak_bytes,
        process_peak_rss_bytes: metrics::process_peak_rss_bytes(),
        device_busy_pct: if total > 0.0 {
            device_time / (total * devices as f64) * 100.0
        } else {
            0.0
        },
        device_floor_s_per_proof: device_time / (requests as f64).max(1.0),
        device_busy_s: (0..devices)
            .map(|d| busy.get(&d).copied().unwrap_or(0.0))
            .collect(),
        oom_retries: run.oom_retries,
        oom_fallbacks: run.oom_fallbacks,
        verified: run.verified,
        curve: run.curve.map_or("", Curve::name).to_string(),
        ..Default::default()
    }
    .with_load(run, requests)
}
