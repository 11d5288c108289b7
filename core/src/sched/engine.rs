//! Threads, queues and the timeline. The engine owns the pools; the
//! [`Policy`] decides. Per partition: `witness` → `spmv` (synthesis
//! workers) → `quotient` → `msm` [→ `msm_g2`] (device workers, holding the
//! device lock around device work only, or a device-memory reservation under
//! `device_lock=op`) → `msm_g2` on the CPU pool when it is
//! placed there → `assemble` → `dealloc`.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::policy::{Policy, Ticket};
use super::settings::{Dealloc, DeviceLock, G2Placement, Settings};
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

/// A submitted job's receipt.
#[derive(Debug)]
pub struct JobHandle<O> {
    /// Job id.
    pub id: u64,
    rx: mpsc::Receiver<JobOutcome<O>>,
}

impl<O> JobHandle<O> {
    /// Blocks until the job finishes.
    pub fn wait(self) -> JobOutcome<O> {
        self.rx.recv().expect("engine dropped a job")
    }
    /// The outcome if the job has finished.
    pub fn try_wait(&self) -> Option<JobOutcome<O>> {
        self.rx.try_recv().ok()
    }
}

struct JobState<O> {
    req: JobRequest,
    submitted: Instant,
    started: Option<Instant>,
    outputs: Vec<Option<O>>,
    remaining: u32,
    failed: Option<String>,
    oom_retries: u32,
    oom_fallbacks: u32,
    tx: mpsc::Sender<JobOutcome<O>>,
}

/// A partition that finished device work or B in G2, waiting for the other half.
struct Pending<W: Workload> {
    dev: Option<W::DeviceOut>,
    g2: Option<W::G2Out>,
}

struct State<W: Workload> {
    synth_queue: Vec<Ticket>,
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
    next_job: u64,
    next_seq: u64,
    shutdown: bool,
    paused: bool,
}

struct Inner<W: Workload> {
    workload: W,
    policy: Arc<dyn Policy>,
    settings: Settings,
    budget: u64,
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
        let settings = policy.settings().clone();
        settings.validate()?;
        let devices = workload.devices();
        if devices == 0 {
            return Err(Error::InvalidInput("the workload has no device".into()));
        }
        let inner = Arc::new(Inner {
            budget: settings.budget_bytes(),
            start: Instant::now(),
            state: Mutex::new(State {
                synth_queue: vec![],
                ready: vec![],
                g2_queue: vec![],
                pending: HashMap::new(),
                mem_in_use: 0,
                mem_peak: 0,
                cpu_msm_running: 0,
                device_load: vec![0; devices],
                device_reserved: vec![0; devices],
                jobs: HashMap::new(),
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
        });
        let mut threads = Vec::new();
        let spawn = |name: String, f: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name)
                .spawn(f)
                .expect("spawn engine thread")
        };
        for i in 0..settings.partition_workers {
            let inner = inner.clone();
            threads.push(spawn(
                format!("synth-{i}"),
                Box::new(move || inner.synthesis_worker(i)),
            ));
        }
        for d in 0..devices {
            for k in 0..settings.gpu_workers_per_device {
                let inner = inner.clone();
                threads.push(spawn(
                    format!("dev{d}-w{k}"),
                    Box::new(move || inner.device_worker(d, k)),
                ));
            }
        }
        if settings.b_g2 == G2Placement::CpuSplit {
            for i in 0..devices * settings.gpu_workers_per_device {
                let inner = inner.clone();
                threads.push(spawn(
                    format!("cpu-g2-{i}"),
                    Box::new(move || inner.g2_worker(i)),
                ));
            }
        }
        if settings.dealloc != Dealloc::Inline {
            let (tx, rx) = mpsc::channel::<(Ticket, Arc<W::Part>)>();
            *inner.dealloc_tx.lock().unwrap() = Some(tx);
            let worker = inner.clone();
            threads.push(spawn(
                "dealloc".into(),
                Box::new(move || worker.dealloc_worker(rx)),
            ));
        }
        Ok(Engine { inner, threads })
    }

    /// Queues a job; it starts as soon as the policy lets it. Jobs are
    /// accepted while others run.
    pub fn submit(&self, req: JobRequest) -> JobHandle<W::Output> {
        let (tx, rx) = mpsc::channel();
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
    /// finish, queued work is dropped, and every dealloc already handed to
    /// the dealloc thread is done (and recorded) before this returns.
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

    /// The memory budget in bytes.
    pub fn budget_bytes(&self) -> u64 {
        self.inner.budget
    }

    /// The most partition bytes admitted at once so far.
    pub fn peak_bytes(&self) -> u64 {
        self.inner.lock().mem_peak
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
        self.timeline.lock().unwrap().push(span);
    }

    fn job_failed(&self, st: &State<W>, job: u64) -> bool {
        st.jobs.get(&job).is_none_or(|j| j.failed.is_some())
    }

    fn synthesis_worker(self: &Arc<Self>, i: usize) {
        let lane = format!("synth-{i}");
        let need = self.workload.partition_bytes();
        loop {
            let mut st = self.lock();
            let ticket = loop {
                if st.shutdown {
                    return;
                }
                let throttled = self.settings.throttle && st.cpu_msm_running > 0;
                if !st.synth_queue.is_empty() && !throttled && !st.paused {
                    let idx = self.policy.pick(&st.synth_queue);
                    let t = st.synth_queue[idx];
                    if self.policy.admit(need, st.mem_in_use, self.budget) {
                        st.synth_queue.remove(idx);
                        st.mem_in_use += need;
                        st.mem_peak = st.mem_peak.max(st.mem_in_use);
                        break t;
                    }
                    if st.mem_in_use == 0 {
                        // Nothing in flight and still no room: it can never fit.
                        let msg = format!(
                            "a partition needs {need} bytes, over the memory budget of {} bytes",
                            self.budget
                        );
                        self.fail_job(&mut st, t.job, msg);
                        continue;
                    }
                }
                st = self.cv.wait(st).unwrap();
            };
            if self.job_failed(&st, ticket.job) {
                st.mem_in_use -= need;
                self.partition_done(&mut st, ticket, None);
                continue;
            }
            let req = st.jobs[&ticket.job].req;
            let job = st.jobs.get_mut(&ticket.job).unwrap();
            job.started.get_or_insert_with(Instant::now);
            drop(st);

            let mut rec = |stage, a, b| self.record(&ticket, stage, &lane, None, a, b);
            let result = self.workload.synthesize(&req, ticket.partition, &mut rec);
            let mut st = self.lock();
            match result {
                Ok(part) => {
                    let part = Arc::new(part);
                    let device = self.policy.place(&ticket, &st.device_load);
                    st.device_load[device] += 1;
                    if self.settings.b_g2 == G2Placement::CpuSplit {
                        st.g2_queue.push((ticket, part.clone()));
                    }
                    st.ready.push((ticket, device, part, 0));
                }
                Err(e) => {
                    st.mem_in_use -= need;
                    self.fail_job(&mut st, ticket.job, e.to_string());
                    self.partition_done(&mut st, ticket, None);
                }
            }
            drop(st);
            self.cv.notify_all();
        }
    }

    /// What `device_lock` asks a worker to hold around a partition's device
    /// stages: the device's lock, or a reservation of `need` bytes within
    /// `budget` (0: unlimited), waited for when other partitions hold it.
    fn hold_device(&self, device: usize, need: u64, budget: u64) -> DeviceHold<'_, W> {
        match self.settings.device_lock {
            DeviceLock::Partition => DeviceHold::Lock(self.device_locks[device].lock().unwrap()),
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
        let need = self.workload.partition_device_bytes();
        let too_big = device_budget > 0 && need > device_budget;
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
            drop(st);
            if failed {
                self.abandon(ticket, device);
                continue;
            }

            // A partition that cannot fit the device goes straight to the
            // out-of-memory path (fallback or failure) without trying.
            let tries = if too_big { u32::MAX } else { tries };
            let result = if too_big {
                Err(Error::Backend {
                    backend: "scheduler".into(),
                    source: AccelError::new(
                        ErrorCode::OUT_OF_MEMORY,
                        format!(
                            "a partition needs about {} MiB of device memory; device {device} has {} MiB",
                            need >> 20,
                            device_budget >> 20
                        ),
                    ),
                })
            } else {
                let _held = self.hold_device(device, need, device_budget);
                let mut rec = |stage, a, b| self.record(&ticket, stage, &lane, Some(device), a, b);
                self.workload
                    .device_work(&part, device, on_device, &mut rec)
            };
            let out_of_memory =
                matches!(&result, Err(e) if e.code() == Some(ErrorCode::OUT_OF_MEMORY));
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
                self.workload.fallback_work(&part, on_device, &mut rec)
            } else {
                result
            };
            match result {
                Ok(dev) => match self.settings.b_g2 {
                    G2Placement::Device => self.finish(ticket, device, part, Some(dev), None),
                    G2Placement::CpuInline => {
                        let g2 = self.run_cpu_g2(&ticket, &part, &lane);
                        match g2 {
                            Ok(g2) => self.finish(ticket, device, part, Some(dev), Some(g2)),
                            Err(e) => self.fail_partition(ticket, device, e),
                        }
                    }
                    G2Placement::CpuSplit => self.half_done(ticket, device, part, Some(dev), None),
                },
                Err(e)
                    if e.code() == Some(ErrorCode::OUT_OF_MEMORY)
                        && tries < self.settings.oom_retries =>
                {
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
                Err(e) => self.fail_partition(ticket, device, e),
            }
        }
    }

    fn run_cpu_g2(&self, ticket: &Ticket, part: &W::Part, lane: &str) -> Result<W::G2Out, Error> {
        self.lock().cpu_msm_running += 1;
        let mut rec = |stage, a, b| self.record(ticket, stage, lane, None, a, b);
        let r = self.workload.cpu_b_g2(part, &mut rec);
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
            if failed {
                continue; // the device side releases the partition
            }
            let device = None;
            match self.run_cpu_g2(&ticket, &part, &lane) {
                Ok(g2) => self.half_done(ticket, usize::MAX, part, device, Some(g2)),
                Err(e) => {
                    let mut st = self.lock();
                    self.fail_job(&mut st, ticket.job, e.to_string());
                }
            }
        }
    }

    /// One half of a split partition is done; the second half finalizes.
    fn half_done(
        &self,
        ticket: Ticket,
        device: usize,
        part: Arc<W::Part>,
        dev: Option<W::DeviceOut>,
        g2: Option<W::G2Out>,
    ) {
        let mut st = self.lock();
        let key = (ticket.job, ticket.partition);
        if dev.is_some() {
            // The device slot frees as soon as device work is done.
            st.device_load[device] -= 1;
        }
        let entry = st.pending.entry(key).or_insert(Pending {
            dev: None,
            g2: None,
        });
        if dev.is_some() {
            entry.dev = dev;
        }
        if g2.is_some() {
            entry.g2 = g2;
        }
        let entry = st.pending.get(&key).unwrap();
        if entry.dev.is_some() && (entry.g2.is_some() || self.job_failed(&st, ticket.job)) {
            let Pending { dev, g2 } = st.pending.remove(&key).unwrap();
            drop(st);
            self.finalize(ticket, part, dev.unwrap(), g2);
        }
    }

    fn finish(
        &self,
        ticket: Ticket,
        device: usize,
        part: Arc<W::Part>,
        dev: Option<W::DeviceOut>,
        g2: Option<W::G2Out>,
    ) {
        self.lock().device_load[device] -= 1;
        self.finalize(ticket, part, dev.expect("device output"), g2);
    }

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
        let lane = std::thread::current()
            .name()
            .unwrap_or("finalize")
            .to_string();
        let out = match req {
            Some(req) => {
                let t0 = Instant::now();
                let r = self
                    .workload
                    .assemble(&req, ticket.partition, &part, dev, g2);
                self.record(&ticket, Stage::Assemble, &lane, None, t0, Instant::now());
                r
            }
            None => Err(Error::InvalidInput("job failed".into())),
        };
        self.dealloc(ticket, part, &lane);
        let mut st = self.lock();
        match out {
            Ok(o) => self.partition_done(&mut st, ticket, Some(o)),
            Err(e) => {
                self.fail_job(&mut st, ticket.job, e.to_string());
                self.partition_done(&mut st, ticket, None);
            }
        }
    }

    fn dealloc(&self, ticket: Ticket, part: Arc<W::Part>, lane: &str) {
        if self.settings.dealloc == Dealloc::Inline {
            let t0 = Instant::now();
            drop(part);
            self.record(&ticket, Stage::Dealloc, lane, None, t0, Instant::now());
            self.release_memory();
        } else if let Some(tx) = self.dealloc_tx.lock().unwrap().as_ref() {
            let _ = tx.send((ticket, part));
        }
    }

    fn dealloc_worker(self: &Arc<Self>, rx: mpsc::Receiver<(Ticket, Arc<W::Part>)>) {
        let serialized = self.settings.dealloc == Dealloc::Serialized;
        let mut running: Vec<JoinHandle<()>> = Vec::new();
        for (ticket, part) in rx {
            let me = self.clone();
            let work = move || {
                let t0 = Instant::now();
                drop(part);
                me.record(
                    &ticket,
                    Stage::Dealloc,
                    if serialized {
                        "dealloc"
                    } else {
                        "dealloc-async"
                    },
                    None,
                    t0,
                    Instant::now(),
                );
                me.release_memory();
            };
            if serialized {
                work();
            } else {
                running.retain(|h| !h.is_finished());
                running.push(std::thread::spawn(work));
            }
        }
        running.into_iter().for_each(|h| drop(h.join()));
    }

    fn release_memory(&self) {
        self.lock().mem_in_use -= self.workload.partition_bytes();
        self.cv.notify_all();
    }

    fn abandon(&self, ticket: Ticket, device: usize) {
        let mut st = self.lock();
        st.device_load[device] -= 1;
        st.pending.remove(&(ticket.job, ticket.partition));
        st.mem_in_use -= self.workload.partition_bytes();
        self.partition_done(&mut st, ticket, None);
        drop(st);
        self.cv.notify_all();
    }

    fn fail_partition(&self, ticket: Ticket, device: usize, e: Error) {
        {
            let mut st = self.lock();
            self.fail_job(&mut st, ticket.job, e.to_string());
        }
        self.abandon(ticket, device);
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
