//! Threads, queues and the timeline. The engine owns the pools; the
//! [`Policy`] decides. Per partition: `witness` (synthesis workers) →
//! `spmv` on the host where the workload has it (SpMV workers) →
//! `quotient` → `msm` [→ `msm_g2`] (device workers, holding the
//! device lock around device work only, or a device-memory reservation under
//! `device_lock=op`) → `msm_g2` on the CPU pool when it is
//! placed there → `assemble` → `dealloc`.
//!
//! Work is classed by what it contends for, each class with its own limit
//! (see [`Limits`], which a policy may move while the engine runs):
//! synthesis is compute-bound, one thread per partition, on niced threads;
//! host SpMV is bound by memory bandwidth and runs on a small pool of its
//! own, also niced; the device side's host work (gathers, copies into lent
//! memory) runs on a pool of `gpu_threads` at normal priority, so the work
//! that feeds the devices never starves the work they are waiting on. A
//! synthesis starts only while fewer than `lookahead` partitions wait for
//! the devices beyond the ones being synthesized (the host never piles up
//! memory far ahead of the devices).
//!
//! Failures end a partition as surely as success does. A workload call
//! that returns an error or panics (the panic is caught; the job's failure
//! says which stage panicked, with the panic's message when it is text)
//! fails the whole job; its other partitions stop at their next stage
//! boundary and the worker goes on with other work. Every partition that
//! was synthesized is freed exactly once through the dealloc mode, failed
//! or not (so its `dealloc` span is on the timeline), and its memory
//! admission is returned when that free is done; device load and device
//! reservations are returned as soon as its device stages end. Under
//! `b_g2=cpu-split` a partition ends when both halves (device stages, B in
//! G2) have ended, in either order and however each ended. A job ends —
//! `JobHandle::wait` returns — once all its partitions have ended, or when
//! the engine stops.

use std::any::Any;
use std::collections::{HashMap, VecDeque};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::policy::{Limits, Observation, Policy, Ticket};
use super::settings::{Dealloc, DeviceLock, G2Placement, MachineShape, Settings};
use crate::Error;
use crate::plugin::{AccelError, ErrorCode};
use crate::stage::Stage;

/// One proof request: P partitions sharing a key.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobRequest {
    /// Partitions to prove.
    pub partitions: u32,
    /// Higher runs first under a priority order.
    pub priority: i32,
    /// Seed of the job's inputs (the workload decides what it means).
    pub seed: u64,
}

/// Records one stage's span.
pub type Recorder<'a> = &'a mut dyn FnMut(Stage, Instant, Instant);

/// What the engine runs. Stage functions take the partition by shared
/// reference so that B in G2 can run beside the device work on the same
/// partition (the split placement).
///
/// An error or a panic in any of these calls, or in dropping a `Part`,
/// fails that partition's job only: the engine catches the panic, frees the
/// partition and goes on calling the workload for other jobs, so a panic
/// must leave the workload itself usable (as an error would).
pub trait Workload: Send + Sync + 'static {
    /// A partition's state between stages (the witness and what follows it).
    type Part: Send + Sync + 'static;
    /// Device-stage result (the G1 MSMs, and B in G2 when placed on the device).
    type DeviceOut: Send + 'static;
    /// B in G2, computed on the CPU pool.
    type G2Out: Send + 'static;
    /// A finished partition (a proof).
    type Output: Send + 'static;

    /// Number of devices.
    fn devices(&self) -> usize;
    /// Host bytes one partition holds while in flight (for admission).
    fn partition_bytes(&self) -> u64;
    /// Device bytes one partition's device stages need at their peak, on
    /// top of what stays resident (0: unknown). Under `device_lock=partition`
    /// device work is serialised per device, so this is checked against the
    /// device; under `op` the partitions on a device reserve it side by side.
    fn partition_device_bytes(&self) -> u64 {
        0
    }
    /// [`Workload::partition_bytes`] for one job, where jobs differ (a
    /// workload of several keys). Called once per job, at submission,
    /// without any engine lock held.
    fn job_partition_bytes(&self, _job: &JobRequest) -> u64 {
        self.partition_bytes()
    }
    /// [`Workload::partition_device_bytes`] for one job; called like
    /// [`Workload::job_partition_bytes`].
    fn job_partition_device_bytes(&self, _job: &JobRequest) -> u64 {
        self.partition_device_bytes()
    }
    /// Memory of `device` left for partitions, in bytes (0: unknown).
    fn device_memory(&self, _device: usize) -> u64 {
        0
    }
    /// `witness` and `spmv`.
    ///
    /// # Errors
    /// Synthesis errors.
    fn synthesize(
        &self,
        job: &JobRequest,
        partition: u32,
        rec: Recorder<'_>,
    ) -> Result<Self::Part, Error>;
    /// Whether partitions go through [`Workload::prepare`] between
    /// synthesis and the devices (the default: no).
    fn has_prepare(&self) -> bool {
        false
    }
    /// `spmv` on the host, between synthesis and the devices: bound by
    /// memory bandwidth, so the engine runs at most `spmv_workers` at once,
    /// on a pool of `spmv_threads` (rayon calls inside use it). Called only
    /// where [`Workload::has_prepare`] says so; a partition with nothing to
    /// prepare returns at once.
    ///
    /// # Errors
    /// As [`Workload::synthesize`].
    fn prepare(&self, _part: &Self::Part, _rec: Recorder<'_>) -> Result<(), Error> {
        Ok(())
    }
    /// `quotient` and `msm` on `device` (and `msm_g2` when `with_b_g2`), run
    /// while holding the device lock.
    ///
    /// # Errors
    /// Backend errors; `OUT_OF_MEMORY` makes the engine requeue the
    /// partition, and past `oom_retries` call [`Workload::fallback_work`].
    /// A retry must work: keep what the stages consume, or rebuild it.
    fn device_work(
        &self,
        part: &Self::Part,
        device: usize,
        with_b_g2: bool,
        rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error>;
    /// The device stages on the host instead, after the device ran out of
    /// memory (`oom_fallback`). The default has no fallback.
    ///
    /// # Errors
    /// Backend errors; [`Error::InvalidInput`] from the default.
    fn fallback_work(
        &self,
        _part: &Self::Part,
        _with_b_g2: bool,
        _rec: Recorder<'_>,
    ) -> Result<Self::DeviceOut, Error> {
        Err(Error::InvalidInput(
            "this workload has no host fallback for device work".into(),
        ))
    }
    /// `msm_g2` on the CPU pool.
    ///
    /// # Errors
    /// Backend errors.
    fn cpu_b_g2(&self, part: &Self::Part, rec: Recorder<'_>) -> Result<Self::G2Out, Error>;
    /// `assemble`.
    ///
    /// # Errors
    /// Backend errors.
    fn assemble(
        &self,
        job: &JobRequest,
        partition: u32,
        part: &Self::Part,
        dev: Self::DeviceOut,
        g2: Option<Self::G2Out>,
    ) -> Result<Self::Output, Error>;
}

/// One stage of one partition on one lane: the waterfall's bar.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct Span {
    /// Job id.
    pub job: u64,
    /// Partition index.
    pub partition: u32,
    /// The stage.
    pub stage: Stage,
    /// Worker lane (`synth-0`, `dev0-w1`, `cpu-g2-0`, `dealloc`).
    pub lane: String,
    /// Device index for device stages.
    pub device: Option<usize>,
    /// Start, ms since the engine started.
    pub start_ms: f64,
    /// End, ms since the engine started.
    pub end_ms: f64,
}

/// A job that has not ended, as [`Engine::jobs`] shows it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct JobView {
    /// Job id.
    pub id: u64,
    /// Its priority.
    pub priority: i32,
    /// Whether one of its stages has started.
    pub started: bool,
}

/// Everything that happened, in completion order.
pub type Timeline = Vec<Span>;

/// A finished job.
#[derive(Debug)]
pub struct JobOutcome<O> {
    /// Job id.
    pub job: u64,
    /// The partitions' outputs, in order, or why the job failed.
    pub result: Result<Vec<O>, String>,
    /// Submission → first stage start.
    pub queue: Duration,
    /// First stage start → last partition done.
    pub prove: Duration,
    /// Device out-of-memory errors that were retried.
    pub oom_retries: u32,
    /// Partitions whose device stages ran on the host after out-of-memory.
    pub oom_fallbacks: u32,
}

/// Why a job that had not ended when the engine stopped failed.
const SHUT_DOWN: &str = "the engine shut down before the job ended";

/// A submitted job's receipt.
#[derive(Debug)]
pub struct JobHandle<O> {
    /// Job id.
    pub id: u64,
    rx: mpsc::Receiver<JobOutcome<O>>,
}

impl<O> JobHandle<O> {
    /// Blocks until the job finishes: with its proofs, or failed (a stage
    /// failed or panicked, or the engine stopped first).
    pub fn wait(self) -> JobOutcome<O> {
        // The engine answers every job, at the latest when it stops; this
        // covers an engine that went away without answering.
        self.rx.recv().unwrap_or_else(|_| JobOutcome {
            job: self.id,
            result: Err(SHUT_DOWN.into()),
            queue: Duration::ZERO,
            prove: Duration::ZERO,
            oom_retries: 0,
            oom_fallbacks: 0,
        })
    }
    /// The outcome if the job has finished.
    pub fn try_wait(&self) -> Option<JobOutcome<O>> {
        self.rx.try_recv().ok()
    }
}

struct JobState<O> {
    req: JobRequest,
    /// Host bytes each partition is admitted with.
    part_bytes: u64,
    /// Device bytes each partition's device stages need.
    device_bytes: u64,
    submitted: Instant,
    started: Option<Instant>,
    outputs: Vec<Option<O>>,
    remaining: u32,
    failed: Option<String>,
    oom_retries: u32,
    oom_fallbacks: u32,
    tx: mpsc::Sender<JobOutcome<O>>,
}

/// How one half of a split partition ended.
enum HalfEnd<T> {
    /// With its output.
    Done(T),
    /// Without: it failed, or it was skipped because the job had failed.
    Failed,
}

/// A half of a split partition that has ended, and how.
enum Half<W: Workload> {
    /// The device stages, on this device.
    Device(usize, HalfEnd<W::DeviceOut>),
    /// B in G2 on the CPU pool.
    G2(HalfEnd<W::G2Out>),
}

/// A split partition one of whose halves has ended, waiting for the other.
struct Pending<W: Workload> {
    dev: Option<HalfEnd<W::DeviceOut>>,
    g2: Option<HalfEnd<W::G2Out>>,
}

impl<W: Workload> Default for Pending<W> {
    fn default() -> Self {
        Pending {
            dev: None,
            g2: None,
        }
    }
}

struct State<W: Workload> {
    synth_queue: Vec<Ticket>,
    /// Synthesized partitions waiting for a host SpMV.
    spmv_queue: Vec<(Ticket, Arc<W::Part>)>,
    /// Syntheses and host SpMVs running.
    synth_running: usize,
    spmv_running: usize,
    /// The limits in force (a policy may move them).
    limits: Limits,
    ready: Vec<(Ticket, usize, Arc<W::Part>, u32)>, // ticket, device, part, oom tries
    g2_queue: Vec<(Ticket, Arc<W::Part>)>,
    pending: HashMap<(u64, u32), Pending<W>>,
    mem_in_use: u64,
    mem_peak: u64,
    cpu_msm_running: usize,
    device_load: Vec<usize>,
    /// Device bytes reserved by partitions in their device stages (`device_lock=op`).
    device_reserved: Vec<u64>,
    jobs: HashMap<u64, JobState<W::Output>>,
    /// Bytes each admitted partition holds, returned when it is freed.
    admitted: HashMap<(u64, u32), u64>,
    next_job: u64,
    next_seq: u64,
    shutdown: bool,
    paused: bool,
}

struct Inner<W: Workload> {
    workload: W,
    policy: Arc<dyn Policy>,
    /// The policy's knobs, sized for this machine.
    settings: Settings,
    /// The most each limit can be (the threads started).
    ceiling: Limits,
    /// Where each class's rayon calls run.
    pools: Pools,
    /// The last spans recorded, for the policy's eyes.
    recent: Mutex<VecDeque<Span>>,
    /// When and to what the limits moved.
    limit_changes: Mutex<Vec<(f64, Limits)>>,
    /// Whether the synthesis limit is still to be sized from the first
    /// partition's stage times (`partition_workers` left at 0).
    size_synthesis: std::sync::atomic::AtomicBool,
    /// Host bytes partitions may hold at once (changed by `set_budget_bytes`).
    budget: AtomicU64,
    start: Instant,
    state: Mutex<State<W>>,
    cv: Condvar,
    device_locks: Vec<Mutex<()>>,
    timeline: Mutex<Timeline>,
    dealloc_tx: Mutex<Option<DeallocSender<W::Part>>>,
}

/// Held by a device worker around a partition's device stages.
enum DeviceHold<'a, W: Workload> {
    Lock(#[allow(dead_code)] MutexGuard<'a, ()>),
    Reserved {
        inner: &'a Inner<W>,
        device: usize,
        bytes: u64,
    },
}

impl<W: Workload> Drop for DeviceHold<'_, W> {
    fn drop(&mut self) {
        if let DeviceHold::Reserved {
            inner,
            device,
            bytes,
        } = self
        {
            // Also after a panic elsewhere: a second panic here would abort.
            let mut st = inner.state.lock().unwrap_or_else(PoisonError::into_inner);
            st.device_reserved[*device] -= *bytes;
            drop(st);
            inner.cv.notify_all();
        }
    }
}

/// Spans a policy sees (about the last hundred partitions' stages).
const RECENT_SPANS: usize = 512;

/// The rayon pools of the classes of work.
struct Pools {
    /// Synthesis (a circuit's witness may use rayon), niced.
    synthesis: rayon::ThreadPool,
    /// Host SpMV, niced.
    spmv: rayon::ThreadPool,
    /// The device side's host work, at normal priority.
    device: rayon::ThreadPool,
}

impl Pools {
    /// A worker's call runs on a thread of its class's pool (`install`),
    /// which takes part in the call's own rayon work: each pool has at
    /// least a thread per worker that may call into it at once.
    fn new(s: &Settings, cores: usize, device_workers: usize) -> Result<Self, Error> {
        let pool = |name: &'static str, threads: usize, nice: i32| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(move |i| format!("{name}-{i}"))
                .start_handler(move |_| lower_priority(nice))
                .build()
                .map_err(|e| Error::Failed(format!("starting the {name} pool: {e}")))
        };
        Ok(Pools {
            synthesis: pool(
                "synth-pool",
                cores.max(s.partition_workers),
                s.synthesis_nice,
            )?,
            spmv: pool(
                "spmv-pool",
                s.spmv_threads.max(s.spmv_workers),
                s.synthesis_nice,
            )?,
            device: pool("device-pool", s.gpu_threads.max(device_workers), 0)?,
        })
    }
}

/// Lowers the calling thread's priority by `nice` (Linux: a thread's own
/// niceness; elsewhere nothing). Raising niceness needs no privilege.
fn lower_priority(nice: i32) {
    #[cfg(target_os = "linux")]
    if nice > 0 {
        // SAFETY: gettid has no preconditions; setpriority only reads its
        // arguments, and a thread may always lower its own priority.
        unsafe {
            let tid = libc::syscall(libc::SYS_gettid) as libc::id_t;
            libc::setpriority(libc::PRIO_PROCESS, tid, nice);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// Where finished partitions go to be freed by the dealloc thread.
type DeallocSender<P> = mpsc::Sender<(Ticket, Arc<P>)>;

/// The scheduling engine over workload `W`.
pub struct Engine<W: Workload> {
    inner: Arc<Inner<W>>,
    threads: Vec<JoinHandle<()>>,
}

impl<W: Workload> std::fmt::Debug for Engine<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("policy", &self.inner.policy.name())
            .finish_non_exhaustive()
    }
}

impl<W: Workload> Engine<W> {
    /// Starts the worker threads the policy's settings ask for.
    ///
    /// # Errors
    /// [`Error::InvalidInput`] for invalid settings or a workload with no device.
    pub fn new(workload: W, policy: Arc<dyn Policy>) -> Result<Self, Error> {
        policy.settings().validate()?;
        let policy_workers_unset = policy.settings().partition_workers == 0;
        let devices = workload.devices();
        if devices == 0 {
            return Err(Error::InvalidInput("the workload has no device".into()));
        }
        let machine = MachineShape::this(devices);
        let settings = policy
            .settings()
            .sized_for(&machine, workload.partition_bytes());
        settings.validate()?;
        let spmv_workers = if workload.has_prepare() {
            settings.spmv_workers
        } else {
            0
        };
        let ceiling = Limits {
            synthesis: settings.partition_workers,
            spmv: spmv_workers,
            lookahead: settings.lookahead,
        };
        let pools = Pools::new(
            &settings,
            machine.cores.max(1),
            devices * settings.gpu_workers_per_device,
        )?;
        let inner = Arc::new(Inner {
            budget: AtomicU64::new(settings.budget_bytes()),
            start: Instant::now(),
            state: Mutex::new(State {
                synth_queue: vec![],
                spmv_queue: vec![],
                synth_running: 0,
                spmv_running: 0,
                limits: ceiling,
                ready: vec![],
                g2_queue: vec![],
                pending: HashMap::new(),
                mem_in_use: 0,
                mem_peak: 0,
                cpu_msm_running: 0,
                device_load: vec![0; devices],
                device_reserved: vec![0; devices],
                jobs: HashMap::new(),
                admitted: HashMap::new(),
                next_job: 0,
                next_seq: 0,
                shutdown: false,
                paused: false,
            }),
            cv: Condvar::new(),
            device_locks: (0..devices).map(|_| Mutex::new(())).collect(),
            timeline: Mutex::new(vec![]),
            dealloc_tx: Mutex::new(None),
            workload,
            policy,
            settings: settings.clone(),
            ceiling,
            pools,
            recent: Mutex::new(VecDeque::with_capacity(RECENT_SPANS)),
            limit_changes: Mutex::new(vec![]),
            size_synthesis: std::sync::atomic::AtomicBool::new(policy_workers_unset),
        });
        // Built first so that, should the system refuse a thread (a
        // process limit), dropping it stops the threads started so far.
        let mut engine = Engine {
            inner: inner.clone(),
            threads: Vec::new(),
        };
        let threads = &mut engine.threads;
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.clone())
                .spawn(f)
                .map_err(|e| Error::Failed(format!("starting engine thread {name}: {e}")))
        };
        for i in 0..settings.partition_workers {
            let inner = inner.clone();
            threads.push(spawn(
                format!("synth-{i}"),
                Box::new(move || inner.synthesis_worker(i)),
            )?);
        }
        for i in 0..spmv_workers {
            let inner = inner.clone();
            threads.push(spawn(
                format!("spmv-{i}"),
                Box::new(move || inner.spmv_worker(i)),
            )?);
        }
        for d in 0..devices {
            for k in 0..settings.gpu_workers_per_device {
                let inner = inner.clone();
                threads.push(spawn(
                    format!("dev{d}-w{k}"),
                    Box::new(move || inner.device_worker(d, k)),
                )?);
            }
        }
        if settings.b_g2 == G2Placement::CpuSplit {
            for i in 0..devices * settings.gpu_workers_per_device {
                let inner = inner.clone();
                threads.push(spawn(
                    format!("cpu-g2-{i}"),
                    Box::new(move || inner.g2_worker(i)),
                )?);
            }
        }
        if settings.dealloc != Dealloc::Inline {
            let (tx, rx) = mpsc::channel::<(Ticket, Arc<W::Part>)>();
            *inner.dealloc_tx.lock().unwrap() = Some(tx);
            let worker = inner.clone();
            threads.push(spawn(
                "dealloc".into(),
                Box::new(move || worker.dealloc_worker(rx)),
            )?);
        }
        Ok(engine)
    }

    /// Queues a job; it starts as soon as the policy lets it. Jobs are
    /// accepted while others run.
    pub fn submit(&self, req: JobRequest) -> JobHandle<W::Output> {
        let (tx, rx) = mpsc::channel();
        let part_bytes = self.inner.workload.job_partition_bytes(&req);
        let device_bytes = self.inner.workload.job_partition_device_bytes(&req);
        let mut st = self.inner.lock();
        let id = st.next_job;
        st.next_job += 1;
        if req.partitions == 0 {
            let _ = tx.send(JobOutcome {
                job: id,
                result: Ok(vec![]),
                queue: Duration::ZERO,
                prove: Duration::ZERO,
                oom_retries: 0,
                oom_fallbacks: 0,
            });
            return JobHandle { id, rx };
        }
        for p in 0..req.partitions {
            let seq = st.next_seq;
            st.next_seq += 1;
            st.synth_queue.push(Ticket {
                job: id,
                partition: p,
                partitions: req.partitions,
                priority: req.priority,
                seq,
            });
        }
        st.jobs.insert(
            id,
            JobState {
                req,
                part_bytes,
                device_bytes,
                submitted: Instant::now(),
                started: None,
                outputs: (0..req.partitions).map(|_| None).collect(),
                remaining: req.partitions,
                failed: None,
                oom_retries: 0,
                oom_fallbacks: 0,
                tx,
            },
        );
        drop(st);
        self.inner.cv.notify_all();
        JobHandle { id, rx }
    }

    /// Holds (or releases) the start of new stages: running stages finish,
    /// queued work waits. For maintenance, and for submitting several jobs
    /// that must be ordered by the policy rather than by arrival timing.
    pub fn set_paused(&self, paused: bool) {
        self.inner.lock().paused = paused;
        self.inner.cv.notify_all();
    }

    /// Stops the engine and returns its whole timeline: running stages
    /// finish, queued work is dropped (jobs not yet ended fail with "the
    /// engine shut down before the job ended"), and every dealloc already
    /// handed to the dealloc thread is done (and recorded) before this
    /// returns.
    pub fn shutdown(mut self) -> Timeline {
        self.stop();
        std::mem::take(&mut *self.inner.timeline.lock().unwrap())
    }

    fn stop(&mut self) {
        self.inner.lock().shutdown = true;
        self.inner.cv.notify_all();
        // Closing the channel ends the dealloc thread once it has freed
        // what was sent (it joins the frees it started).
        self.inner.dealloc_tx.lock().unwrap().take();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        // Every worker has stopped. Jobs that had not ended are answered
        // now so that no `wait` blocks for ever, and the partitions still
        // queued are dropped (a panicking drop must not escape `drop`).
        let mut st = self
            .inner
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut queued: Vec<Arc<W::Part>> = st.ready.drain(..).map(|r| r.2).collect();
        queued.extend(st.g2_queue.drain(..).map(|(_, part)| part));
        queued.extend(st.spmv_queue.drain(..).map(|(_, part)| part));
        st.pending.clear();
        st.synth_queue.clear();
        let jobs: Vec<(u64, JobState<W::Output>)> = st.jobs.drain().collect();
        drop(st);
        for part in queued {
            let _ = catch_unwind(AssertUnwindSafe(move || drop(part)));
        }
        let now = Instant::now();
        for (id, job) in jobs {
            let started = job.started.unwrap_or(now);
            let _ = job.tx.send(JobOutcome {
                job: id,
                result: Err(SHUT_DOWN.into()),
                queue: started.saturating_duration_since(job.submitted),
                prove: now.saturating_duration_since(started),
                oom_retries: job.oom_retries,
                oom_fallbacks: job.oom_fallbacks,
            });
        }
    }

    /// Every span recorded so far (deallocs may still be running: see
    /// [`Engine::shutdown`] for the complete timeline).
    pub fn timeline(&self) -> Timeline {
        self.inner.timeline.lock().unwrap().clone()
    }

    /// The policy in use.
    pub fn policy(&self) -> &dyn Policy {
        &*self.inner.policy
    }

    /// The knobs the engine runs with: the policy's, with the counts left
    /// at 0 sized for this machine.
    pub fn settings(&self) -> &Settings {
        &self.inner.settings
    }

    /// The limits in force now.
    pub fn limits(&self) -> Limits {
        self.inner.lock().limits
    }

    /// Each time the policy moved the limits: when (ms, the spans' clock)
    /// and to what.
    pub fn limit_changes(&self) -> Vec<(f64, Limits)> {
        self.inner.limit_changes.lock().unwrap().clone()
    }

    /// The memory budget in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.inner.budget.load(Ordering::Relaxed)
    }

    /// Changes the memory budget for partitions not yet admitted (a daemon
    /// gives partitions what its resident keys leave). Partitions already
    /// admitted keep their memory.
    pub fn set_budget_bytes(&self, bytes: u64) {
        self.inner.budget.store(bytes, Ordering::Relaxed);
        self.inner.cv.notify_all();
    }

    /// Cancels job `id`: its queued partitions are dropped, its running
    /// ones stop at their next stage boundary and are freed, and the job
    /// ends failed with `why`. Returns whether the job was still running
    /// (an ended or unknown job is left alone).
    pub fn cancel(&self, id: u64, why: &str) -> bool {
        let mut st = self.inner.lock();
        let live = st.jobs.get(&id).is_some_and(|j| j.failed.is_none());
        if live {
            self.inner.fail_job(&mut st, id, why.to_string());
        }
        drop(st);
        self.inner.cv.notify_all();
        live
    }

    /// The jobs that have not ended: id, priority, and whether any of its
    /// stages has started.
    pub fn jobs(&self) -> Vec<JobView> {
        let st = self.inner.lock();
        let mut jobs: Vec<JobView> = st
            .jobs
            .iter()
            .map(|(&id, j)| JobView {
                id,
                priority: j.req.priority,
                started: j.started.is_some(),
            })
            .collect();
        jobs.sort_by_key(|j| j.id);
        jobs
    }

    /// Takes the spans recorded so far, leaving the timeline empty: a
    /// long-running service drains it so that it does not grow for ever.
    pub fn take_timeline(&self) -> Timeline {
        std::mem::take(&mut *self.inner.timeline.lock().unwrap())
    }

    /// The most partition bytes admitted at once so far.
    pub fn peak_bytes(&self) -> u64 {
        self.inner.lock().mem_peak
    }

    /// Partition bytes admitted and not yet freed: 0 once every job has
    /// ended and every dealloc is done, failed jobs included.
    pub fn in_use_bytes(&self) -> u64 {
        self.inner.lock().mem_in_use
    }

    /// The workload.
    pub fn workload(&self) -> &W {
        &self.inner.workload
    }
}

impl<W: Workload> Drop for Engine<W> {
    fn drop(&mut self) {
        self.stop();
    }
}

impl<W: Workload> Inner<W> {
    fn lock(&self) -> MutexGuard<'_, State<W>> {
        self.state.lock().unwrap()
    }

    fn ms(&self, t: Instant) -> f64 {
        t.saturating_duration_since(self.start).as_secs_f64() * 1e3
    }

    fn record(
        &self,
        t: &Ticket,
        stage: Stage,
        lane: &str,
        device: Option<usize>,
        start: Instant,
        end: Instant,
    ) {
        let span = Span {
            job: t.job,
            partition: t.partition,
            stage,
            lane: lane.to_string(),
            device,
            start_ms: self.ms(start),
            end_ms: self.ms(end),
        };
        {
            let mut recent = self.recent.lock().unwrap();
            if recent.len() == RECENT_SPANS {
                recent.pop_front();
            }
            recent.push_back(span.clone());
        }
        self.timeline.lock().unwrap().push(span);
    }

    /// Sizes the synthesis limit, once, from the first partition that ran
    /// through the devices, where `partition_workers` was left at 0: the
    /// syntheses that keep every device fed are its witness time × devices
    /// ÷ its device time; half as many again and one more cover what load
    /// adds. The machine's sizing (one per core) is the ceiling: a host
    /// 50× faster than the device then runs two syntheses, not sixteen
    /// that only fight over memory.
    fn size_synthesis_from(&self, ticket: &Ticket) {
        if !self.size_synthesis.load(Ordering::Relaxed) {
            return;
        }
        let mine: Vec<Span> = self
            .recent
            .lock()
            .unwrap()
            .iter()
            .filter(|s| s.job == ticket.job && s.partition == ticket.partition)
            .cloned()
            .collect();
        let witness_ms: f64 = mine
            .iter()
            .filter(|s| s.stage == Stage::Witness)
            .map(|s| s.end_ms - s.start_ms)
            .sum();
        let device_ms = super::metrics::device_busy_s(&mine).values().sum::<f64>() * 1e3;
        if witness_ms <= 0.0 || device_ms <= 0.0 {
            return; // a partition that fell back to the host, or failed: the next one
        }
        if !self.size_synthesis.swap(false, Ordering::Relaxed) {
            return;
        }
        let devices = self.device_locks.len() as f64;
        let need = (witness_ms * devices / device_ms * 1.5).ceil() as usize + 1;
        let mut st = self.lock();
        let next = Limits {
            synthesis: need.clamp(1, self.ceiling.synthesis),
            ..st.limits
        };
        if next != st.limits {
            st.limits = next;
            drop(st);
            self.limit_changes
                .lock()
                .unwrap()
                .push((self.ms(Instant::now()), next));
            self.cv.notify_all();
        }
    }

    /// Shows the policy what happened and takes the limits it answers,
    /// kept [`Limits::within`] the ceiling.
    fn adjust(&self) {
        let recent: Vec<Span> = self.recent.lock().unwrap().iter().cloned().collect();
        let (limits, waiting_spmv, waiting_device) = {
            let st = self.lock();
            (st.limits, st.spmv_queue.len(), st.ready.len())
        };
        let seen = Observation {
            now_ms: self.ms(Instant::now()),
            recent: &recent,
            limits,
            ceiling: self.ceiling,
            waiting_spmv,
            waiting_device,
            devices: self.device_locks.len(),
        };
        // A policy that panics keeps the limits it had.
        let Ok(Some(next)) = catch_unwind(AssertUnwindSafe(|| self.policy.adjust(&seen))) else {
            return;
        };
        let next = next.within(self.ceiling);
        if next != limits {
            self.lock().limits = next;
            self.limit_changes.lock().unwrap().push((seen.now_ms, next));
            self.cv.notify_all();
        }
    }

    /// Partitions synthesized or being synthesized that no device has taken yet.
    fn ahead(st: &State<W>) -> usize {
        st.synth_running + st.spmv_queue.len() + st.spmv_running + st.ready.len()
    }

    /// Returns a partition's memory admission.
    fn unadmit(&self, st: &mut State<W>, ticket: &Ticket) {
        let bytes = st
            .admitted
            .remove(&(ticket.job, ticket.partition))
            .unwrap_or(0);
        st.mem_in_use -= bytes;
    }

    fn job_failed(&self, st: &State<W>, job: u64) -> bool {
        st.jobs.get(&job).is_none_or(|j| j.failed.is_some())
    }

    fn synthesis_worker(self: &Arc<Self>, i: usize) {
        let lane = format!("synth-{i}");
        lower_priority(self.settings.synthesis_nice);
        loop {
            let mut st = self.lock();
            let ticket = loop {
                if st.shutdown {
                    return;
                }
                let throttled = self.settings.throttle && st.cpu_msm_running > 0;
                let room = st.synth_running < st.limits.synthesis
                    && Self::ahead(&st) < st.limits.synthesis + st.limits.lookahead;
                if !st.synth_queue.is_empty() && !throttled && !st.paused && room {
                    let idx = self.policy.pick(&st.synth_queue);
                    let t = st.synth_queue[idx];
                    let need = st.jobs.get(&t.job).map_or(0, |j| j.part_bytes);
                    let budget = self.budget.load(Ordering::Relaxed);
                    if self.policy.admit(need, st.mem_in_use, budget) {
                        st.synth_queue.remove(idx);
                        st.mem_in_use += need;
                        st.mem_peak = st.mem_peak.max(st.mem_in_use);
                        st.admitted.insert((t.job, t.partition), need);
                        break t;
                    }
                    if st.mem_in_use == 0 {
                        // Nothing in flight and still no room: it can never fit.
                        let msg = format!(
                            "a partition needs {need} bytes, over the memory budget of {budget} bytes"
                        );
                        self.fail_job(&mut st, t.job, msg);
                        continue;
                    }
                }
                st = self.cv.wait(st).unwrap();
            };
            if self.job_failed(&st, ticket.job) {
                self.unadmit(&mut st, &ticket);
                self.partition_done(&mut st, ticket, None);
                continue;
            }
            let req = st.jobs[&ticket.job].req;
            let job = st.jobs.get_mut(&ticket.job).unwrap();
            job.started.get_or_insert_with(Instant::now);
            st.synth_running += 1;
            drop(st);

            let mut rec = |stage, a, b| self.record(&ticket, stage, &lane, None, a, b);
            let result = self.pools.synthesis.install(|| {
                guarded("witness/spmv", &ticket, || {
                    self.workload.synthesize(&req, ticket.partition, &mut rec)
                })
            });
            let mut st = self.lock();
            st.synth_running -= 1;
            match result {
                Ok(part) if self.ceiling.spmv > 0 => st.spmv_queue.push((ticket, Arc::new(part))),
                Ok(part) => self.to_devices(&mut st, ticket, Arc::new(part)),
                Err(failure) => {
                    // No partition was made: only its admission to return.
                    self.unadmit(&mut st, &ticket);
                    self.fail_job(&mut st, ticket.job, failure.to_string());
                    self.partition_done(&mut st, ticket, None);
                }
            }
            drop(st);
            self.cv.notify_all();
        }
    }

    /// Places a partition whose host stages are done on a device (and its
    /// B in G2 on the CPU queue when split).
    fn to_devices(&self, st: &mut State<W>, ticket: Ticket, part: Arc<W::Part>) {
        let device = self.policy.place(&ticket, &st.device_load);
        st.device_load[device] += 1;
        if self.settings.b_g2 == G2Placement::CpuSplit {
            st.g2_queue.push((ticket, part.clone()));
        }
        st.ready.push((ticket, device, part, 0));
    }

    /// Runs host SpMVs: at most `limits.spmv` at once, and only while
    /// fewer than `limits.lookahead` partitions wait for the devices.
    fn spmv_worker(self: &Arc<Self>, i: usize) {
        let lane = format!("spmv-{i}");
        lower_priority(self.settings.synthesis_nice);
        loop {
            let mut st = self.lock();
            let (ticket, part) = loop {
                if st.shutdown {
                    return;
                }
                let room = st.spmv_running < st.limits.spmv
                    && st.ready.len() + st.spmv_running < st.limits.lookahead;
                if !st.spmv_queue.is_empty() && !st.paused && room {
                    let tickets: Vec<Ticket> = st.spmv_queue.iter().map(|x| x.0).collect();
                    break st.spmv_queue.remove(self.policy.pick(&tickets));
                }
                st = self.cv.wait(st).unwrap();
            };
            if self.job_failed(&st, ticket.job) {
                drop(st);
                self.discard(ticket, part);
                continue;
            }
            st.spmv_running += 1;
            drop(st);
            let mut rec = |stage, a, b| self.record(&ticket, stage, &lane, None, a, b);
            let result = self
                .pools
                .spmv
                .install(|| guarded("spmv", &ticket, || self.workload.prepare(&part, &mut rec)));
            let mut st = self.lock();
            st.spmv_running -= 1;
            match result {
                Ok(()) => {
                    self.to_devices(&mut st, ticket, part);
                    drop(st);
                }
                Err(failure) => {
                    self.fail_job(&mut st, ticket.job, failure.to_string());
                    drop(st);
                    self.discard(ticket, part);
                }
            }
            self.cv.notify_all();
        }
    }

    /// What `device_lock` asks a worker to hold around a partition's device
    /// stages: the device's lock, or a reservation of `need` bytes within
    /// `budget` (0: unlimited), waited for when other partitions hold it.
    fn hold_device(&self, device: usize, need: u64, budget: u64) -> DeviceHold<'_, W> {
        match self.settings.device_lock {
            // The lock guards no data, so a poisoned one is as good as any.
            DeviceLock::Partition => DeviceHold::Lock(
                self.device_locks[device]
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner),
            ),
            DeviceLock::Op => {
                let mut st = self.lock();
                while !st.shutdown
                    && st.device_reserved[device] > 0
                    && budget > 0
                    && st.device_reserved[device] + need > budget
                {
                    st = self.cv.wait(st).unwrap();
                }
                st.device_reserved[device] += need;
                DeviceHold::Reserved {
                    inner: self,
                    device,
                    bytes: need,
                }
            }
        }
    }

    fn device_worker(self: &Arc<Self>, device: usize, k: usize) {
        let lane = format!("dev{device}-w{k}");
        let on_device = self.settings.b_g2 == G2Placement::Device;
        let device_budget = match self.settings.device_memory_budget {
            0 => self.workload.device_memory(device),
            b => b,
        };
        loop {
            let mut st = self.lock();
            let (ticket, part, tries) = loop {
                if st.shutdown {
                    return;
                }
                let mine: Vec<usize> = (0..st.ready.len())
                    .filter(|&i| st.ready[i].1 == device)
                    .collect();
                if !mine.is_empty() {
                    let tickets: Vec<Ticket> = mine.iter().map(|&i| st.ready[i].0).collect();
                    let (t, _, p, tries) = st.ready.remove(mine[self.policy.pick(&tickets)]);
                    break (t, p, tries);
                }
                st = self.cv.wait(st).unwrap();
            };
            let failed = self.job_failed(&st, ticket.job);
            let need = st.jobs.get(&ticket.job).map_or(0, |j| j.device_bytes);
            let too_big = device_budget > 0 && need > device_budget;
            drop(st);
            if failed {
                self.leave_device(ticket, device, part);
                continue;
            }

            // A partition that cannot fit the device goes straight to the
            // out-of-memory path (fallback or failure) without trying.
            let tries = if too_big { u32::MAX } else { tries };
            let result = if too_big {
                Err(Failure::Error(Error::Backend {
                    backend: "scheduler".into(),
                    source: AccelError::new(
                        ErrorCode::OUT_OF_MEMORY,
                        format!(
                            "a partition needs about {} MiB of device memory; device {device} has {} MiB",
                            need >> 20,
                            device_budget >> 20
                        ),
                    ),
                }))
            } else {
                // The hold is released when this block ends, after a panic too
                // (it is caught inside), so the device lock is never poisoned.
                let _held = self.hold_device(device, need, device_budget);
                let mut rec = |stage, a, b| self.record(&ticket, stage, &lane, Some(device), a, b);
                self.pools.device.install(|| {
                    guarded("quotient/msm", &ticket, || {
                        self.workload
                            .device_work(&part, device, on_device, &mut rec)
                    })
                })
            };
            let out_of_memory = result.as_ref().is_err_and(Failure::is_out_of_memory);
            let result = if out_of_memory
                && tries >= self.settings.oom_retries
                && self.settings.oom_fallback
            {
                if let Some(j) = self.lock().jobs.get_mut(&ticket.job) {
                    j.oom_fallbacks += 1;
                }
                // On the host, outside the device lock; not device time.
                let host_lane = format!("{lane}-host");
                let mut rec = |stage, a, b| self.record(&ticket, stage, &host_lane, None, a, b);
                guarded("quotient/msm on the host", &ticket, || {
                    self.workload.fallback_work(&part, on_device, &mut rec)
                })
            } else {
                result
            };
            match result {
                Ok(dev) => match self.settings.b_g2 {
                    G2Placement::Device => self.finish(ticket, device, part, dev, None),
                    G2Placement::CpuInline => match self.run_cpu_g2(&ticket, &part, &lane) {
                        Ok(g2) => self.finish(ticket, device, part, dev, Some(g2)),
                        Err(failure) => self.fail_partition(ticket, device, part, failure),
                    },
                    G2Placement::CpuSplit => {
                        self.half_done(ticket, part, Half::Device(device, HalfEnd::Done(dev)));
                    }
                },
                Err(failure) if failure.is_out_of_memory() && tries < self.settings.oom_retries => {
                    let mut st = self.lock();
                    if let Some(j) = st.jobs.get_mut(&ticket.job) {
                        j.oom_retries += 1;
                    }
                    st.ready.push((ticket, device, part, tries + 1));
                    drop(st);
                    // Let other work (and its memory) finish before retrying.
                    std::thread::yield_now();
                    self.cv.notify_all();
                }
                Err(failure) => self.fail_partition(ticket, device, part, failure),
            }
            self.size_synthesis_from(&ticket);
            self.adjust();
        }
    }

    fn run_cpu_g2(&self, ticket: &Ticket, part: &W::Part, lane: &str) -> Result<W::G2Out, Failure> {
        self.lock().cpu_msm_running += 1;
        let mut rec = |stage, a, b| self.record(ticket, stage, lane, None, a, b);
        let r = guarded("msm_g2", ticket, || self.workload.cpu_b_g2(part, &mut rec));
        self.lock().cpu_msm_running -= 1;
        self.cv.notify_all();
        r
    }

    fn g2_worker(self: &Arc<Self>, i: usize) {
        let lane = format!("cpu-g2-{i}");
        loop {
            let mut st = self.lock();
            let (ticket, part) = loop {
                if st.shutdown {
                    return;
                }
                if !st.g2_queue.is_empty() && !st.paused {
                    let tickets: Vec<Ticket> = st.g2_queue.iter().map(|x| x.0).collect();
                    break st.g2_queue.remove(self.policy.pick(&tickets));
                }
                st = self.cv.wait(st).unwrap();
            };
            let failed = self.job_failed(&st, ticket.job);
            drop(st);
            let end = if failed {
                HalfEnd::Failed
            } else {
                match self.run_cpu_g2(&ticket, &part, &lane) {
                    Ok(g2) => HalfEnd::Done(g2),
                    Err(failure) => {
                        let mut st = self.lock();
                        self.fail_job(&mut st, ticket.job, failure.to_string());
                        HalfEnd::Failed
                    }
                }
            };
            self.half_done(ticket, part, Half::G2(end));
        }
    }

    /// One half of a split partition has ended. The partition ends when
    /// both have, whichever ends last: it is assembled when both produced
    /// their output and the job still stands, freed as failed otherwise.
    fn half_done(&self, ticket: Ticket, part: Arc<W::Part>, half: Half<W>) {
        let mut st = self.lock();
        let key = (ticket.job, ticket.partition);
        let entry = match half {
            Half::Device(device, end) => {
                // The device slot frees as soon as the device half ends.
                st.device_load[device] -= 1;
                let entry = st.pending.entry(key).or_default();
                entry.dev = Some(end);
                entry
            }
            Half::G2(end) => {
                let entry = st.pending.entry(key).or_default();
                entry.g2 = Some(end);
                entry
            }
        };
        if entry.dev.is_none() || entry.g2.is_none() {
            // The other half still holds the partition. Let go of this
            // handle before the other half can see this one ended, so that
            // its handle is the last one and its dealloc really frees.
            drop(part);
            drop(st);
            self.cv.notify_all();
            return;
        }
        let Pending { dev, g2 } = st.pending.remove(&key).unwrap();
        drop(st);
        self.cv.notify_all();
        match (dev, g2) {
            (Some(HalfEnd::Done(dev)), Some(HalfEnd::Done(g2))) => {
                self.finalize(ticket, part, dev, Some(g2));
            }
            _ => self.discard(ticket, part),
        }
    }

    fn finish(
        &self,
        ticket: Ticket,
        device: usize,
        part: Arc<W::Part>,
        dev: W::DeviceOut,
        g2: Option<W::G2Out>,
    ) {
        self.lock().device_load[device] -= 1;
        self.cv.notify_all();
        self.finalize(ticket, part, dev, g2);
    }

    /// Assembles a partition whose stages all succeeded, frees it and
    /// counts it done.
    fn finalize(
        &self,
        ticket: Ticket,
        part: Arc<W::Part>,
        dev: W::DeviceOut,
        g2: Option<W::G2Out>,
    ) {
        // The job's request, unless the job has already failed.
        let req = self
            .lock()
            .jobs
            .get(&ticket.job)
            .filter(|j| j.failed.is_none())
            .map(|j| j.req);
        let Some(req) = req else {
            return self.discard(ticket, part);
        };
        let lane = current_lane();
        let t0 = Instant::now();
        let out = guarded("assemble", &ticket, || {
            self.workload
                .assemble(&req, ticket.partition, &part, dev, g2)
        });
        self.record(&ticket, Stage::Assemble, &lane, None, t0, Instant::now());
        self.dealloc(ticket, part, &lane);
        let mut st = self.lock();
        match out {
            Ok(o) => self.partition_done(&mut st, ticket, Some(o)),
            Err(failure) => {
                self.fail_job(&mut st, ticket.job, failure.to_string());
                self.partition_done(&mut st, ticket, None);
            }
        }
        drop(st);
        self.cv.notify_all();
    }

    /// Ends a partition of a failed job: it is freed like a finished one
    /// (through the dealloc mode, with its `dealloc` span) and counted done.
    fn discard(&self, ticket: Ticket, part: Arc<W::Part>) {
        self.dealloc(ticket, part, &current_lane());
        let mut st = self.lock();
        self.partition_done(&mut st, ticket, None);
        drop(st);
        self.cv.notify_all();
    }

    /// Frees a partition as the dealloc mode says: here, or on the dealloc
    /// thread; here as well once that thread has stopped (engine shutdown).
    fn dealloc(&self, ticket: Ticket, part: Arc<W::Part>, lane: &str) {
        let part = if self.settings.dealloc == Dealloc::Inline {
            part
        } else {
            let unsent = match self.dealloc_tx.lock().unwrap().as_ref() {
                Some(tx) => tx.send((ticket, part)).err().map(|e| e.0.1),
                None => Some(part),
            };
            match unsent {
                None => return,
                Some(part) => part,
            }
        };
        self.free(ticket, part, lane);
    }

    /// Drops the engine's handle on a partition (the last handle: its
    /// memory goes now), records the `dealloc` span and returns the
    /// partition's admission. A panicking drop fails the job when the job
    /// has not ended yet; after that there is no one to tell but stderr.
    fn free(&self, ticket: Ticket, part: Arc<W::Part>, lane: &str) {
        let t0 = Instant::now();
        // AssertUnwindSafe: the handle is moved in and gone either way, and
        // the drop touches no engine state.
        let dropped = catch_unwind(AssertUnwindSafe(move || drop(part)));
        self.record(&ticket, Stage::Dealloc, lane, None, t0, Instant::now());
        let mut st = self.lock();
        if let Err(payload) = dropped {
            let why = panic_report("dealloc", &ticket, payload.as_ref());
            if st.jobs.contains_key(&ticket.job) {
                self.fail_job(&mut st, ticket.job, why);
            } else {
                eprintln!("zkpipe: job {} had already ended when {why}", ticket.job);
            }
        }
        // Returned after the job's failure is recorded: a partition
        // admitted in its place sees the job failed.
        self.unadmit(&mut st, &ticket);
        drop(st);
        self.cv.notify_all();
    }

    fn dealloc_worker(self: &Arc<Self>, rx: mpsc::Receiver<(Ticket, Arc<W::Part>)>) {
        let serialized = self.settings.dealloc == Dealloc::Serialized;
        let mut running: Vec<JoinHandle<()>> = Vec::new();
        for (ticket, part) in rx {
            if serialized {
                self.free(ticket, part, "dealloc");
                continue;
            }
            running.retain(|h| !h.is_finished());
            // The partition waits in a slot the thread empties, so that it
            // is still here to free if no thread can be started.
            let slot = Arc::new(Mutex::new(Some(part)));
            let work = {
                let (me, slot) = (self.clone(), slot.clone());
                move || {
                    let part = slot.lock().unwrap().take();
                    if let Some(part) = part {
                        me.free(ticket, part, "dealloc-async");
                    }
                }
            };
            match std::thread::Builder::new()
                .name("dealloc-async".into())
                .spawn(work)
            {
                Ok(handle) => running.push(handle),
                Err(_) => {
                    let part = slot.lock().unwrap().take();
                    if let Some(part) = part {
                        self.free(ticket, part, "dealloc");
                    }
                }
            }
        }
        running.into_iter().for_each(|h| drop(h.join()));
    }

    /// The device side of a partition gives up (its job has failed): frees
    /// the device slot and, unless B in G2 still runs beside it, the
    /// partition.
    fn leave_device(&self, ticket: Ticket, device: usize, part: Arc<W::Part>) {
        if self.settings.b_g2 == G2Placement::CpuSplit {
            self.half_done(ticket, part, Half::Device(device, HalfEnd::Failed));
        } else {
            self.lock().device_load[device] -= 1;
            self.discard(ticket, part);
        }
    }

    fn fail_partition(&self, ticket: Ticket, device: usize, part: Arc<W::Part>, why: Failure) {
        {
            let mut st = self.lock();
            self.fail_job(&mut st, ticket.job, why.to_string());
        }
        self.leave_device(ticket, device, part);
    }

    fn fail_job(&self, st: &mut State<W>, job: u64, why: String) {
        if let Some(j) = st.jobs.get_mut(&job) {
            j.failed.get_or_insert(why);
        }
        // Partitions not yet synthesized will never run.
        let dropped: Vec<Ticket> = st
            .synth_queue
            .iter()
            .filter(|t| t.job == job)
            .copied()
            .collect();
        st.synth_queue.retain(|t| t.job != job);
        for t in dropped {
            self.partition_done(st, t, None);
        }
    }

    /// Counts a partition as done (with its output, or none if the job failed);
    /// completes the job when it was the last.
    fn partition_done(&self, st: &mut State<W>, ticket: Ticket, out: Option<W::Output>) {
        let Some(job) = st.jobs.get_mut(&ticket.job) else {
            return;
        };
        job.outputs[ticket.partition as usize] = out;
        job.remaining -= 1;
        if job.remaining > 0 {
            return;
        }
        let job = st.jobs.remove(&ticket.job).unwrap();
        let now = Instant::now();
        let started = job.started.unwrap_or(now);
        let result = match job.failed {
            Some(why) => Err(why),
            None => Ok(job
                .outputs
                .into_iter()
                .map(|o| o.expect("every partition produced an output"))
                .collect()),
        };
        let _ = job.tx.send(JobOutcome {
            job: ticket.job,
            result,
            queue: started.saturating_duration_since(job.submitted),
            prove: now.saturating_duration_since(started),
            oom_retries: job.oom_retries,
            oom_fallbacks: job.oom_fallbacks,
        });
    }
}

/// The current worker's lane name, for spans recorded outside its loop.
fn current_lane() -> String {
    std::thread::current()
        .name()
        .unwrap_or("finalize")
        .to_string()
}

/// Why a workload call gave no output.
#[derive(Debug)]
enum Failure {
    /// It returned an error.
    Error(Error),
    /// It panicked: what [`panic_report`] made of it.
    Panic(String),
}

impl Failure {
    fn is_out_of_memory(&self) -> bool {
        matches!(self, Failure::Error(e) if e.code() == Some(ErrorCode::OUT_OF_MEMORY))
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Error(e) => e.fmt(f),
            Failure::Panic(why) => f.write_str(why),
        }
    }
}

/// Runs one workload call for `ticket`'s partition; a panic becomes a
/// [`Failure::Panic`] naming `stage` instead of ending the worker thread.
///
/// `AssertUnwindSafe` holds because a panic leaves no engine state half
/// updated: workload calls run with no engine lock held, the closures only
/// borrow the workload and the partition shared (and the recorder, which
/// pushes whole spans under the timeline's own lock), and the counters a
/// call is bracketed by (CPU MSMs running, device load and reservation) are
/// settled by the caller after the call returns either way. The partition
/// whose call panicked is never used again, only freed; the workload itself
/// goes on serving other partitions, as it does after an error.
fn guarded<T>(
    stage: &str,
    ticket: &Ticket,
    call: impl FnOnce() -> Result<T, Error>,
) -> Result<T, Failure> {
    match catch_unwind(AssertUnwindSafe(call)) {
        Ok(result) => result.map_err(Failure::Error),
        Err(payload) => Err(Failure::Panic(panic_report(
            stage,
            ticket,
            payload.as_ref(),
        ))),
    }
}

/// `stage <stage> panicked on partition <p>[: <message>]`, with the panic's
/// message when it is text (`panic!` gives a `&str` or a `String`).
fn panic_report(stage: &str, ticket: &Ticket, payload: &(dyn Any + Send)) -> String {
    let what = format!("stage {stage} panicked on partition {}", ticket.partition);
    let message = payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str));
    match message {
        Some(message) => format!("{what}: {message}"),
        None => what,
    }
}
