//! The daemon's state and its operations, independent of gRPC: jobs from
//! submission to verified result, keys loaded and evicted, the engine that
//! runs partitions, device health, the recent timeline and the metrics.

use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::sync::watch;
use zkpipe_core::loader::{Registry, SearchPath};
use zkpipe_core::plugin::{BackendConfig, KeyValue};
use zkpipe_core::sched::groth16::{Groth16Workload, ProofOutput};
use zkpipe_core::sched::{DeviceLock, Engine, JobRequest, Policy, Settings, Span};
use zkpipe_core::{Backend, Error};

use crate::config::Config;
use crate::keys::{KeyCache, KeyCircuit, KeyId, KeyView, LoadedKey};
use crate::load::{self, Load};
use crate::metrics::Metrics;
use crate::proto::{self, JobState, Priority};
use crate::source::{Spec, SpecInputs, SpecSource, Specs};
use crate::verify;

/// Why a job was refused at submission.
#[derive(Debug)]
pub enum Refusal {
    /// The request id names another request (ALREADY_EXISTS).
    Conflict(String),
    /// Too many jobs (RESOURCE_EXHAUSTED).
    Busy(String),
    /// The job's key cannot fit the daemon's host budget, whatever else it
    /// evicts (RESOURCE_EXHAUSTED).
    TooLarge(String),
    /// The daemon is shutting down (UNAVAILABLE).
    Draining,
}

/// A job request, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewJob {
    /// Caller's idempotency id ("": none).
    pub request_id: String,
    /// The key.
    pub key: KeyId,
    /// Priority.
    pub priority: Priority,
    /// Partitions, 1 to [`MAX_PARTITIONS`].
    pub partitions: u32,
    /// What the partitions prove.
    pub inputs: JobInputs,
}

/// A job's inputs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobInputs {
    /// A built-in circuit: partition p proves the witness of seed + p.
    Seed(u64),
    /// A circom circuit: each partition's full assignment (wire values, as
    /// in a .wtns), checked against the circuit once its key is loaded.
    Circom(Arc<Vec<Vec<zkpipe_core::Fr>>>),
    /// A Filecoin request (cuzk's API): partitions synthesised from its
    /// vanilla proofs.
    Filecoin(FilecoinInputs),
}

/// A Filecoin request as a job's inputs: the same request only when it is
/// the same object (a retried cuzk request is parsed again and compared by
/// its request id alone).
#[derive(Clone, Debug)]
pub struct FilecoinInputs(pub Arc<dyn zkpipe_filecoin::FilecoinJob>);

impl PartialEq for FilecoinInputs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for FilecoinInputs {}

/// Most partitions in one job.
pub const MAX_PARTITIONS: u32 = 64;

/// A job as the table keeps it.
struct Job {
    spec: NewJob,
    submitted: Instant,
    engine_id: Option<u64>,
    state: JobState,
    result: Option<proto::JobResult>,
    ended: Option<Instant>,
    done: watch::Sender<bool>,
}

struct Table {
    jobs: HashMap<u64, Job>,
    by_request: HashMap<String, u64>,
    next_id: u64,
}

impl Default for Table {
    fn default() -> Self {
        Table {
            jobs: HashMap::new(),
            by_request: HashMap::new(),
            next_id: first_job_id(),
        }
    }
}

/// Job ids of one run start at its start time in milliseconds × 1,000, so
/// that an id from before a restart is never another client's job after
/// it (a run would need 1,000 jobs per millisecond to reach the next
/// run's first id); below 2^53 until the year 2255, so exact in JSON.
fn first_job_id() -> u64 {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    ms.saturating_mul(1000)
}

/// Health of one device the daemon uses.
#[derive(Clone, Debug, Default)]
struct Health {
    verify_failures: u64,
}

/// The latest spans, numbered.
#[derive(Default)]
struct Recent {
    spans: VecDeque<(u64, Span)>,
    next_seq: u64,
    dropped: u64,
}

/// Spans kept for the `Timeline` call.
const RECENT_SPANS: usize = 200_000;

/// The daemon.
pub struct Daemon {
    config: Config,
    started: Instant,
    backend: Arc<Backend>,
    cpu_reference: Arc<Backend>,
    devices: Vec<u32>,
    policy_name: String,
    host_budget: u64,
    engine: Engine<Groth16Workload>,
    /// Taken just before the engine started: the engine's clock, give or
    /// take the milliseconds its start took.
    engine_epoch: Instant,
    /// What bounds the daemon, from the spans [`Daemon::tick`] moves.
    load: Mutex<Load>,
    keys: KeyCache,
    specs: Arc<Specs>,
    table: Mutex<Table>,
    health: Mutex<Vec<Health>>,
    recent: Mutex<Recent>,
    draining: AtomicBool,
    /// Metrics, for the `Metrics` call and `/metrics`.
    pub metrics: Metrics,
}

impl std::fmt::Debug for Daemon {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Daemon")
            .field("backend", &self.backend.name())
            .finish_non_exhaustive()
    }
}

fn key_values(items: &[String]) -> Vec<(String, String)> {
    items
        .iter()
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

impl Daemon {
    /// Loads the backend and policy the config names and starts the engine.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for an unknown backend, device or policy, or
    /// bad knobs; [`Error::NoDevice`]; backend errors.
    pub fn start(config: Config) -> Result<Arc<Daemon>, Error> {
        config.validate()?;
        let plugin_dir = (!config.devices.plugin_dir.is_empty())
            .then(|| std::path::PathBuf::from(&config.devices.plugin_dir));
        let registry = Arc::new(Registry::load(&SearchPath::standard(plugin_dir.as_deref())));
        for f in &registry.failures {
            tracing::warn!(path = %f.path.display(), reason = %f.reason, "skipped a plugin");
        }
        let ext = key_values(&config.devices.backend_opts)
            .into_iter()
            .map(|(k, v)| KeyValue {
                key: k.as_str().into(),
                value: v.as_str().into(),
            })
            .collect();
        let backend = Arc::new(
            registry.create(
                &config.devices.backend,
                &BackendConfig {
                    threads: (config.devices.threads > 0)
                        .then_some(config.devices.threads as u32)
                        .into(),
                    ext,
                },
            )?,
        );
        let available = backend.info().devices.len() as u32;
        let devices: Vec<u32> = if config.devices.devices.is_empty() {
            (0..available).collect()
        } else {
            config.devices.devices.clone()
        };
        if devices.is_empty() {
            return Err(Error::NoDevice {
                backend: backend.name().to_string(),
                device: 0,
                reason: "the backend reports no device".into(),
            });
        }
        for &d in &devices {
            if d >= available {
                return Err(Error::InvalidInput(format!(
                    "devices.devices: backend {} has {available} device(s), numbered from 0; there is no device {d}",
                    backend.name()
                )));
            }
        }
        let gpu_threads = match config.devices.gpu_threads {
            0 => zkpipe_core::machine::cores(),
            t => t,
        };
        let host_budget = match config.host_budget() {
            0 => zkpipe_core::machine::available_memory_bytes().unwrap_or(8 << 30) / 10 * 8,
            b => b,
        };
        let base = Settings {
            gpu_workers_per_device: config.devices.gpu_workers_per_device,
            gpu_threads,
            memory_budget: host_budget,
            device_memory_budget: config.device_budget(),
            ..Settings::default()
        };
        let knobs = key_values(&config.scheduler.knobs);
        let name = &config.scheduler.policy;
        let policy: Arc<dyn Policy> = zkpipe_session::policy::resolve(name, base, &knobs)?;
        // The builtin presets raise worker counts; the config's own word wins.
        let settings = policy.settings().clone();
        let cpu = Arc::new(registry.create(
            "cpu",
            &BackendConfig {
                threads: Some(settings.gpu_threads as u32).into(),
                ext: Default::default(),
            },
        )?);
        let cpu_reference = Arc::new(registry.create("cpu", &BackendConfig::default())?);
        let specs = Arc::new(Specs::new()?);
        let workload =
            Groth16Workload::with_source(Box::new(SpecSource(specs.clone())), devices.len(), cpu);
        let policy_name = policy.name().to_string();
        let engine_epoch = Instant::now();
        let engine = Engine::new(workload, policy)?;
        let load = Load::new(
            devices.len(),
            zkpipe_core::machine::cores(),
            engine.settings().spmv_threads,
        );
        let keys_dir = if config.keys.dir.is_empty() {
            zkpipe_core::cache::default_dir()
        } else {
            std::path::PathBuf::from(&config.keys.dir)
        };
        let circom_dir = (!config.keys.circom_dir.is_empty())
            .then(|| std::path::PathBuf::from(&config.keys.circom_dir));
        let keys = KeyCache::new(
            keys_dir,
            circom_dir,
            registry.clone(),
            backend.clone(),
            devices.clone(),
            settings.device_lock == DeviceLock::Partition,
            config.keys.synthetic,
            host_budget,
        );
        let daemon = Arc::new(Daemon {
            started: Instant::now(),
            health: Mutex::new(vec![Health::default(); devices.len()]),
            backend,
            cpu_reference,
            devices,
            policy_name,
            host_budget,
            engine,
            engine_epoch,
            load: Mutex::new(load),
            keys,
            specs,
            table: Mutex::new(Table::default()),
            recent: Mutex::new(Recent::default()),
            draining: AtomicBool::new(false),
            metrics: Metrics::new(),
            config,
        });
        daemon.update_budget();
        Ok(daemon)
    }

    /// The configuration it runs with.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Partitions get what resident keys leave of the host budget.
    fn update_budget(&self) {
        let keys = self.keys.resident_bytes();
        self.engine
            .set_budget_bytes(self.host_budget.saturating_sub(keys));
    }

    /// Queues a job; it runs once its key is loaded.
    ///
    /// # Errors
    /// A [`Refusal`] saying why it was not queued.
    pub fn submit(self: &Arc<Self>, job: NewJob) -> Result<proto::SubmitReply, Refusal> {
        if self.draining.load(Ordering::Relaxed) {
            return Err(Refusal::Draining);
        }
        self.keys.admit(&job.key).map_err(Refusal::TooLarge)?;
        let mut table = self.table.lock().unwrap();
        if !job.request_id.is_empty()
            && let Some(&id) = table.by_request.get(&job.request_id)
        {
            let first = &table.jobs[&id];
            if first.spec != job {
                return Err(Refusal::Conflict(format!(
                    "request id `{}` was used for job {id}, with another request",
                    job.request_id
                )));
            }
            let position = queue_position(&table, id);
            return Ok(proto::SubmitReply {
                job_id: id,
                queue_position: position,
                duplicate: true,
            });
        }
        let active = table.jobs.values().filter(|j| j.ended.is_none()).count();
        if active >= self.config.daemon.max_jobs {
            return Err(Refusal::Busy(format!(
                "{active} jobs are queued or running, the limit (daemon.max_jobs)"
            )));
        }
        let id = table.next_id;
        table.next_id += 1;
        if !job.request_id.is_empty() {
            table.by_request.insert(job.request_id.clone(), id);
        }
        let (done, _) = watch::channel(false);
        self.metrics
            .submitted
            .with_label_values(&[priority_label(job.priority)])
            .inc();
        table.jobs.insert(
            id,
            Job {
                spec: job,
                submitted: Instant::now(),
                engine_id: None,
                state: JobState::Queued,
                result: None,
                ended: None,
                done,
            },
        );
        let position = queue_position(&table, id);
        drop(table);
        let me = self.clone();
        let span = tracing::info_span!("job", id);
        tokio::spawn(tracing::Instrument::instrument(me.run(id), span));
        Ok(proto::SubmitReply {
            job_id: id,
            queue_position: position,
            duplicate: false,
        })
    }

    /// A job from key load to verified result.
    async fn run(self: Arc<Self>, id: u64) {
        let Some(job) = self.spec_of(id) else { return };
        let key = match self.acquire_key(job.key.clone()).await {
            Ok(key) => key,
            Err(e) => {
                tracing::warn!(error = %e, "key load failed");
                self.finish(
                    id,
                    JobState::Failed,
                    vec![],
                    format!("loading key {}: {e}", job.key),
                    false,
                );
                return;
            }
        };
        let inputs = match self.spec_inputs(&key, &job.inputs).await {
            Ok(inputs) => inputs,
            Err(e) => {
                self.keys.release(&job.key);
                let at_fault = matches!(e, Error::InvalidInput(_));
                self.finish_with(id, JobState::Failed, vec![], e.to_string(), false, at_fault);
                return;
            }
        };
        let spec = Arc::new(Spec {
            key: key.clone(),
            inputs,
        });
        self.specs.insert(id, spec.clone());
        let handle = {
            // Cancelled while its key loaded: it never reaches the engine.
            if self.ended(id) {
                self.specs.remove(id);
                self.keys.release(&job.key);
                return;
            }
            let handle = self.engine.submit(JobRequest {
                partitions: job.partitions,
                priority: job.priority as i32,
                seed: id,
            });
            let mut table = self.table.lock().unwrap();
            if let Some(j) = table.jobs.get_mut(&id) {
                j.engine_id = Some(handle.id);
            }
            handle
        };
        // A cancel between the check above and recording the engine id.
        if self.ended(id) {
            self.engine.cancel(handle.id, "cancelled by the client");
        }
        let outcome = tokio::task::spawn_blocking(move || handle.wait()).await;
        self.specs.remove(id);
        let outcome = match outcome {
            Ok(o) => o,
            Err(e) => {
                self.keys.release(&job.key);
                self.finish(
                    id,
                    JobState::Failed,
                    vec![],
                    format!("engine wait: {e}"),
                    false,
                );
                return;
            }
        };
        let mut verify_s = 0.0;
        let (state, proofs, error, recomputed) = match outcome.result {
            Ok(proofs) => {
                let me = self.clone();
                let t = Instant::now();
                let checked = tokio::task::spawn_blocking(move || me.check(&spec, proofs))
                    .await
                    .unwrap_or_else(|e| Err(Error::Failed(format!("verify task: {e}"))));
                verify_s = t.elapsed().as_secs_f64();
                match checked {
                    Ok((proofs, recomputed)) => {
                        (JobState::Succeeded, proofs, String::new(), recomputed)
                    }
                    Err(e) => (JobState::Failed, vec![], e.to_string(), false),
                }
            }
            Err(why) if self.ended(id) => (JobState::Cancelled, vec![], why, false),
            Err(why) => (JobState::Failed, vec![], why, false),
        };
        self.keys.release(&job.key);
        let (queue_s, prove_s) = (outcome.queue.as_secs_f64(), outcome.prove.as_secs_f64());
        self.finish(id, state, proofs, error, recomputed);
        if let Some(j) = self.table.lock().unwrap().jobs.get_mut(&id)
            && let Some(r) = j.result.as_mut()
        {
            r.queue_s = queue_s;
            r.prove_s = prove_s;
            r.verify_s = verify_s;
        }
    }

    /// The job's inputs as the engine takes them: circom assignments split
    /// into witnesses and checked against every constraint (on a blocking
    /// thread: a large circuit takes a while).
    async fn spec_inputs(
        &self,
        key: &Arc<LoadedKey>,
        inputs: &JobInputs,
    ) -> Result<SpecInputs, Error> {
        let values = match inputs {
            JobInputs::Seed(seed) => return Ok(SpecInputs::Seed(*seed)),
            JobInputs::Filecoin(f) => return Ok(SpecInputs::Filecoin(f.0.clone())),
            JobInputs::Circom(values) => values.clone(),
        };
        let KeyCircuit::Circom(circuit) = &key.circuit else {
            return Err(Error::InvalidInput(format!(
                "key {} is a built-in circuit: it takes a seed, not witnesses",
                key.id
            )));
        };
        let circuit = circuit.clone();
        let key_name = format!("key {}", key.id);
        tokio::task::spawn_blocking(move || {
            let mut out = Vec::with_capacity(values.len());
            for (i, v) in values.iter().enumerate() {
                let name = format!("witness {i}");
                let w = zkpipe_circom::witness_for(v.clone(), &circuit, &name, &key_name)?;
                if let Some(row) = circuit.r1cs.first_unsatisfied(&w)? {
                    return Err(Error::InvalidInput(format!(
                        "{name} does not satisfy {key_name}: constraint {row} fails"
                    )));
                }
                out.push(w);
            }
            Ok(SpecInputs::Witnesses(out))
        })
        .await
        .unwrap_or_else(|e| Err(Error::Failed(format!("witness check task: {e}"))))
    }

    /// Verifies every proof (unless turned off); a failing partition is
    /// proved again on the CPU reference and its device flagged.
    fn check(
        &self,
        spec: &Spec,
        mut proofs: Vec<ProofOutput>,
    ) -> Result<(Vec<ProofOutput>, bool), Error> {
        if !self.config.daemon.verify_before_return {
            return Ok((proofs, false));
        }
        let bad = verify::failing(spec, &proofs)?;
        if bad.is_empty() {
            return Ok((proofs, false));
        }
        for b in &bad {
            let label = b.device.map_or("host".to_string(), |d| d.to_string());
            self.metrics
                .verify_failures
                .with_label_values(&[&label])
                .inc();
            if let Some(d) = b.device {
                if let Some(h) = self.health.lock().unwrap().get_mut(d) {
                    h.verify_failures += 1;
                }
                self.metrics
                    .device_flagged
                    .with_label_values(&[&label])
                    .set(1);
            }
            tracing::error!(
                partition = b.partition,
                device = %label,
                "a proof from the device failed verification; proving it again on the CPU reference"
            );
        }
        let fresh = || self.specs.fresh_blinding();
        verify::recompute(spec, &self.cpu_reference, &bad, &mut proofs, &fresh)?;
        Ok((proofs, true))
    }

    fn spec_of(&self, id: u64) -> Option<NewJob> {
        self.table
            .lock()
            .unwrap()
            .jobs
            .get(&id)
            .map(|j| j.spec.clone())
    }

    fn ended(&self, id: u64) -> bool {
        self.table
            .lock()
            .unwrap()
            .jobs
            .get(&id)
            .is_none_or(|j| j.ended.is_some())
    }

    /// Records how a job ended (once: a later call is ignored) and wakes its waiters.
    fn finish(
        &self,
        id: u64,
        state: JobState,
        proofs: Vec<ProofOutput>,
        error: String,
        recomputed: bool,
    ) {
        self.finish_with(id, state, proofs, error, recomputed, false);
    }

    /// [`Daemon::finish`], saying whether the job's inputs are at fault.
    fn finish_with(
        &self,
        id: u64,
        state: JobState,
        proofs: Vec<ProofOutput>,
        error: String,
        recomputed: bool,
        inputs_at_fault: bool,
    ) {
        let mut table = self.table.lock().unwrap();
        let Some(job) = table.jobs.get_mut(&id) else {
            return;
        };
        if job.ended.is_some() {
            return;
        }
        let now = Instant::now();
        job.ended = Some(now);
        job.state = state;
        let priority = priority_label(job.spec.priority);
        self.metrics
            .ended
            .with_label_values(&[state_label(state), priority])
            .inc();
        if state == JobState::Succeeded {
            self.metrics
                .latency
                .with_label_values(&[priority])
                .observe(now.duration_since(job.submitted).as_secs_f64());
        }
        job.result = Some(proto::JobResult {
            job_id: id,
            state: state as i32,
            proofs: proofs
                .iter()
                .map(|p| proto::PartitionProof {
                    proof: p.proof.to_bytes().to_vec(),
                    public_inputs: p
                        .public_inputs
                        .iter()
                        .map(zkpipe_core::groth16::fr_to_decimal)
                        .collect(),
                })
                .collect(),
            error,
            verified: state == JobState::Succeeded && self.config.daemon.verify_before_return,
            recomputed_on_cpu: recomputed,
            inputs_at_fault,
            ..Default::default()
        });
        tracing::info!(job = id, state = state_label(state), "job ended");
        // Stored even with no one waiting yet (`send` would drop it then).
        job.done.send_replace(true);
    }

    /// Waits up to `timeout` (`None`: no limit) for job `id` to end.
    ///
    /// # Errors
    /// `None` for an unknown (or expired) job.
    pub async fn await_job(&self, id: u64, timeout: Option<Duration>) -> Option<proto::JobResult> {
        let mut rx = self.table.lock().unwrap().jobs.get(&id)?.done.subscribe();
        let wait = rx.wait_for(|done| *done);
        match timeout {
            Some(t) => {
                let _ = tokio::time::timeout(t, wait).await;
            }
            None => {
                let _ = wait.await;
            }
        }
        self.result(id)
    }

    /// The job's result if it ended, else its state.
    pub fn result(&self, id: u64) -> Option<proto::JobResult> {
        let table = self.table.lock().unwrap();
        let job = table.jobs.get(&id)?;
        if let Some(r) = &job.result {
            return Some(r.clone());
        }
        let running = job
            .engine_id
            .is_some_and(|e| self.engine.jobs().iter().any(|v| v.id == e && v.started));
        Some(proto::JobResult {
            job_id: id,
            state: if running {
                JobState::Running
            } else {
                JobState::Queued
            } as i32,
            ..Default::default()
        })
    }

    /// Cancels a job: queued, it is removed; running, it stops at the
    /// next stage boundary. Returns its state after the call.
    pub fn cancel(&self, id: u64, why: &str) -> Option<JobState> {
        let engine_id = {
            let table = self.table.lock().unwrap();
            let job = table.jobs.get(&id)?;
            if job.ended.is_some() {
                return Some(job.state);
            }
            job.engine_id
        };
        match engine_id {
            // Its outcome comes back failed; `run` records it as cancelled.
            Some(e) => {
                self.mark_cancelled(id, why);
                self.engine.cancel(e, why);
            }
            // Still loading its key: ended now; `run` sees it and stops.
            None => self.finish(id, JobState::Cancelled, vec![], why.to_string(), false),
        }
        Some(JobState::Cancelled)
    }

    /// Ends a job as cancelled now; the engine's outcome is then ignored.
    fn mark_cancelled(&self, id: u64, why: &str) {
        self.finish(id, JobState::Cancelled, vec![], why.to_string(), false);
    }

    /// The key with one more user, loaded now if it is not (off the async
    /// threads: loading may set up keys), with its metrics and the budget
    /// it leaves partitions updated.
    async fn acquire_key(self: &Arc<Self>, id: KeyId) -> Result<Arc<LoadedKey>, Error> {
        let me = self.clone();
        let (key, report) = tokio::task::spawn_blocking(move || {
            me.keys.acquire(&id, &zkpipe_core::progress::Silent)
        })
        .await
        .unwrap_or_else(|e| Err(Error::Failed(format!("key load task: {e}"))))?;
        if report.loaded {
            self.metrics.key_loads.inc();
            self.metrics
                .key_load_seconds
                .with_label_values(&[&key.id.circuit])
                .observe(key.load_s);
            tracing::info!(key = %key.id, load_s = key.load_s, "key loaded");
        }
        for k in &report.evicted {
            self.metrics.key_evictions.inc();
            tracing::info!(key = %k, "key evicted to make room");
        }
        self.update_budget();
        Ok(key)
    }

    /// Makes Filecoin parameter set `set` loadable by jobs and preloads.
    pub fn register_filecoin(&self, set: &zkpipe_filecoin::params::ParamSet) -> KeyId {
        self.keys.register_filecoin(set)
    }

    /// Loads keys ahead of jobs.
    pub async fn preload(self: &Arc<Self>, ids: Vec<KeyId>) -> Vec<(KeyId, Result<(), Error>)> {
        let mut out = vec![];
        for id in ids {
            let r = match self.keys.admit(&id) {
                Err(why) => Err(Error::InvalidInput(why)),
                Ok(()) => self
                    .acquire_key(id.clone())
                    .await
                    .map(|key| self.keys.release(&key.id)),
            };
            out.push((id, r));
        }
        out
    }

    /// The keys loaded now.
    pub fn resident_keys(&self) -> Vec<KeyId> {
        self.keys.list().into_iter().map(|k| k.id).collect()
    }

    /// Evicts keys no job uses.
    pub fn evict(&self, ids: Vec<KeyId>) -> Vec<(KeyId, Result<(), Error>)> {
        let out = ids
            .into_iter()
            .map(|id| {
                let r = match self.keys.evict(&id) {
                    Ok(true) => {
                        self.metrics.key_evictions.inc();
                        Ok(())
                    }
                    Ok(false) => Err(Error::InvalidInput(format!("key {id} is not loaded"))),
                    Err(e) => Err(e),
                };
                (id, r)
            })
            .collect();
        self.update_budget();
        out
    }

    /// The `Status` reply.
    pub fn status(&self) -> proto::StatusReply {
        let busy = self.metrics_busy();
        let report = self.load_report();
        let health = self.health.lock().unwrap().clone();
        let devices = self
            .devices
            .iter()
            .enumerate()
            .map(|(i, &d)| {
                let info = self.backend.device_info(d).ok();
                proto::Device {
                    index: d,
                    name: info.as_ref().map_or(String::new(), |i| i.name.to_string()),
                    memory_bytes: info.as_ref().map_or(0, |i| i.memory_bytes),
                    verify_failures: health[i].verify_failures,
                    flagged: health[i].verify_failures > 0,
                    busy_s: busy.get(i).copied().unwrap_or(0.0),
                    busy_ratio: report.device_busy_ratio.get(i).copied().unwrap_or(0.0),
                }
            })
            .collect();
        let keys = self.keys.list();
        let (queues, in_flight) = self.queues();
        proto::StatusReply {
            version: env!("CARGO_PKG_VERSION").to_string(),
            backend: self.backend.name().to_string(),
            policy: self.policy_name.clone(),
            uptime_s: self.started.elapsed().as_secs_f64(),
            devices,
            keys: keys.iter().map(key_view).collect(),
            queues,
            jobs_in_flight: in_flight,
            host_budget_bytes: self.host_budget,
            keys_bytes: keys.iter().map(|k| k.host_bytes).sum(),
            partitions_bytes: self.engine.in_use_bytes(),
            draining: self.draining.load(Ordering::Relaxed),
            settings: self.engine.policy().settings().describe(),
            load: Some(load_view(&report)),
        }
    }

    /// What bounds the daemon now.
    fn load_report(&self) -> load::Report {
        let now_ms = self.engine_epoch.elapsed().as_secs_f64() * 1e3;
        self.load.lock().unwrap().report(now_ms)
    }

    fn metrics_busy(&self) -> Vec<f64> {
        (0..self.devices.len())
            .map(|i| {
                self.metrics
                    .device_busy
                    .with_label_values(&[&i.to_string()])
                    .get()
            })
            .collect()
    }

    /// Jobs queued and running per priority, and all not ended.
    fn queues(&self) -> (Vec<proto::Queue>, u32) {
        let started: std::collections::HashSet<u64> = self
            .engine
            .jobs()
            .into_iter()
            .filter(|v| v.started)
            .map(|v| v.id)
            .collect();
        let table = self.table.lock().unwrap();
        let mut queues: Vec<proto::Queue> = [
            Priority::Critical,
            Priority::High,
            Priority::Normal,
            Priority::Low,
        ]
        .into_iter()
        .map(|p| proto::Queue {
            priority: p as i32,
            queued: 0,
            running: 0,
        })
        .collect();
        let mut in_flight = 0;
        for job in table.jobs.values().filter(|j| j.ended.is_none()) {
            in_flight += 1;
            let q = queues
                .iter_mut()
                .find(|q| q.priority == job.spec.priority as i32);
            if let Some(q) = q {
                if job.engine_id.is_some_and(|e| started.contains(&e)) {
                    q.running += 1;
                } else {
                    q.queued += 1;
                }
            }
        }
        (queues, in_flight)
    }

    /// The Prometheus text, with the gauges set now.
    pub fn metrics_text(&self) -> String {
        let (queues, _) = self.queues();
        for q in queues {
            let p = Priority::try_from(q.priority).unwrap_or(Priority::Normal);
            let label = priority_label(p);
            self.metrics
                .jobs
                .with_label_values(&["queued", label])
                .set(q.queued as i64);
            self.metrics
                .jobs
                .with_label_values(&["running", label])
                .set(q.running as i64);
        }
        let m = &self.metrics.memory;
        m.with_label_values(&["keys"])
            .set(self.keys.resident_bytes() as i64);
        m.with_label_values(&["partitions"])
            .set(self.engine.in_use_bytes() as i64);
        m.with_label_values(&["budget"])
            .set(self.host_budget as i64);
        self.metrics
            .uptime
            .set(self.started.elapsed().as_secs_f64());
        // Held through the encoding: another scrape's reset of the load
        // gauges cannot empty them midway through this one.
        let load = self.load.lock().unwrap();
        let now_ms = self.engine_epoch.elapsed().as_secs_f64() * 1e3;
        self.metrics.set_load(&load.report(now_ms));
        let text = self.metrics.text();
        drop(load);
        text
    }

    /// Moves the engine's new spans into the metrics and the recent
    /// timeline, and forgets ended jobs past their time to live.
    pub fn tick(&self) {
        let spans = self.engine.take_timeline();
        // Read after the take: a span not taken yet that started before
        // the take belongs to one of these jobs (see `load`).
        let in_flight: HashSet<u64> = self
            .engine
            .jobs()
            .into_iter()
            .filter(|j| j.started)
            .map(|j| j.id)
            .collect();
        let now_ms = self.engine_epoch.elapsed().as_secs_f64() * 1e3;
        let to_daemon: HashMap<u64, (u64, String)> = if spans.is_empty() {
            HashMap::new()
        } else {
            let table = self.table.lock().unwrap();
            table
                .jobs
                .iter()
                .filter_map(|(&id, j)| j.engine_id.map(|e| (e, (id, j.spec.key.to_string()))))
                .collect()
        };
        let keyed = spans
            .iter()
            .map(|s| {
                let key = to_daemon
                    .get(&s.job)
                    .map_or(String::new(), |(_, k)| k.clone());
                (key, s.clone())
            })
            .collect();
        self.load.lock().unwrap().add(keyed, &in_flight, now_ms);
        if !spans.is_empty() {
            for (device, s) in zkpipe_core::sched::metrics::device_busy_s(&spans) {
                self.metrics
                    .device_busy
                    .with_label_values(&[&device.to_string()])
                    .inc_by(s.max(0.0));
            }
            let mut recent = self.recent.lock().unwrap();
            for mut s in spans {
                self.metrics
                    .stage
                    .with_label_values(&[&s.stage.to_string()])
                    .observe((s.end_ms - s.start_ms).max(0.0) / 1e3);
                s.job = to_daemon.get(&s.job).map_or(u64::MAX, |(id, _)| *id);
                tracing::debug!(
                    target: "zkpipe::stage",
                    job = s.job,
                    partition = s.partition,
                    stage = %s.stage,
                    lane = %s.lane,
                    device = ?s.device,
                    ms = s.end_ms - s.start_ms,
                    "stage"
                );
                let seq = recent.next_seq;
                recent.next_seq += 1;
                recent.spans.push_back((seq, s));
                if recent.spans.len() > RECENT_SPANS {
                    recent.spans.pop_front();
                    recent.dropped += 1;
                }
            }
        }
        let ttl = Duration::from_secs(self.config.daemon.result_ttl_s);
        let mut table = self.table.lock().unwrap();
        let expired: Vec<u64> = table
            .jobs
            .iter()
            .filter(|(_, j)| j.ended.is_some_and(|t| t.elapsed() > ttl))
            .map(|(&id, _)| id)
            .collect();
        for id in expired {
            if let Some(j) = table.jobs.remove(&id)
                && !j.spec.request_id.is_empty()
            {
                table.by_request.remove(&j.spec.request_id);
            }
        }
    }

    /// Spans numbered from `from_seq` on (at most 100,000 per call).
    pub fn timeline(&self, from_seq: u64) -> proto::TimelineReply {
        let recent = self.recent.lock().unwrap();
        let spans = recent
            .spans
            .iter()
            .filter(|(seq, _)| *seq >= from_seq)
            .take(100_000)
            .map(|(seq, s)| proto::Span {
                seq: *seq,
                job_id: s.job,
                partition: s.partition,
                stage: s.stage.to_string(),
                lane: s.lane.clone(),
                device: s.device.map_or(-1, |d| d as i32),
                start_ms: s.start_ms,
                end_ms: s.end_ms,
            })
            .collect();
        proto::TimelineReply {
            spans,
            dropped: recent.dropped,
            next_seq: recent.next_seq,
        }
    }

    /// Stops taking jobs (Submit answers UNAVAILABLE).
    pub fn start_draining(&self) {
        self.draining.store(true, Ordering::Relaxed);
    }

    /// Jobs not ended.
    pub fn in_flight(&self) -> usize {
        let table = self.table.lock().unwrap();
        table.jobs.values().filter(|j| j.ended.is_none()).count()
    }

    /// Cancels every job not ended, with `why`.
    pub fn cancel_all(&self, why: &str) {
        let ids: Vec<u64> = {
            let table = self.table.lock().unwrap();
            table
                .jobs
                .iter()
                .filter(|(_, j)| j.ended.is_none())
                .map(|(&id, _)| id)
                .collect()
        };
        for id in ids {
            self.cancel(id, why);
        }
    }
}

/// Jobs not ended that will start before `id`: higher priority, or the
/// same and submitted earlier, and not yet running.
fn queue_position(table: &Table, id: u64) -> u32 {
    let me = &table.jobs[&id];
    table
        .jobs
        .iter()
        .filter(|&(&other, j)| {
            other != id
                && j.ended.is_none()
                && (j.spec.priority as i32 > me.spec.priority as i32
                    || (j.spec.priority == me.spec.priority && other < id))
        })
        .count() as u32
}

fn load_view(r: &load::Report) -> proto::Load {
    proto::Load {
        window_s: r.window_s,
        partitions: r.partitions,
        device_floor_s: r.device_floor_s.unwrap_or(0.0),
        host_floor_s: r.host_floor_s.unwrap_or(0.0),
        bound: r.bound.unwrap_or("").to_string(),
        stages: r
            .stages
            .iter()
            .map(|s| proto::StageLoad {
                key: s.stage.key.clone(),
                stage: s.stage.stage.to_string(),
                on_device: s.stage.on_device,
                alone_s: s.alone_s,
                median_s: s.median_s.unwrap_or(0.0),
                inflation: s.inflation.unwrap_or(0.0),
                samples: s.samples as u32,
            })
            .collect(),
    }
}

fn key_view(k: &KeyView) -> proto::LoadedKey {
    proto::LoadedKey {
        key: Some(proto::KeyId {
            circuit: k.id.circuit.clone(),
            size: k.id.size.clone(),
        }),
        host_bytes: k.host_bytes,
        refcount: k.refcount,
        idle_s: k.idle_s,
        load_s: k.load_s,
    }
}

/// `low`, `normal`, `high`, `critical`.
pub fn priority_label(p: Priority) -> &'static str {
    match p {
        Priority::Low => "low",
        Priority::High => "high",
        Priority::Critical => "critical",
        Priority::Normal | Priority::Unspecified => "normal",
    }
}

/// `succeeded`, `failed`, `cancelled`, `queued`, `running`.
pub fn state_label(s: JobState) -> &'static str {
    match s {
        JobState::Succeeded => "succeeded",
        JobState::Failed => "failed",
        JobState::Cancelled => "cancelled",
        JobState::Running => "running",
        JobState::Queued | JobState::Unspecified => "queued",
    }
}
