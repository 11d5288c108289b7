//! Scheduling logic against a fake workload with scripted behaviour: order,
//! priority preemption at the queue, memory admission, out-of-memory retry,
//! failing and panicking stages.
//! Deterministic: progress is gated by channels, nothing measures time (the
//! only clocks are deadlines that turn a hang into a test failure).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use zkpipe_core::Error;
use zkpipe_core::Stage;
use zkpipe_core::plugin::{AccelError, ErrorCode};
use zkpipe_core::sched::engine::Recorder;
use zkpipe_core::sched::{
    Engine, JobHandle, JobOutcome, JobRequest, Settings, Timeline, Workload, builtin,
};

/// A call into the fake workload, for scripting failures and orderings.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum Call {
    Synthesize,
    DeviceWork,
    FallbackWork,
    CpuBG2,
    Assemble,
    /// Dropping the partition (the engine's dealloc).
    Drop,
}

/// A call on one partition: (call, job, partition).
type At = (Call, u64, u32);

/// What a scripted panic carries.
#[derive(Clone, Debug)]
enum Payload {
    /// `panic!("literal")`.
    Str(&'static str),
    /// `panic!("{formatted}")`.
    String(String),
    /// `panic_any` with a value that is not text.
    Number(u32),
}

#[derive(Default)]
struct Shared {
    log: Mutex<Vec<String>>,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    /// Device-stage out-of-memory errors still to inject, per (job, partition).
    ooms: Mutex<HashMap<(u64, u32), u32>>,
    on_device: AtomicUsize,
    max_on_device: AtomicUsize,
    /// Partitions that have entered device work, and its signal.
    arrivals: (Mutex<usize>, Condvar),
    /// Calls that panic.
    panics: Mutex<HashMap<At, Payload>>,
    /// Partitions whose B in G2 (`cpu_b_g2`) returns an error.
    g2_errors: Mutex<HashSet<(u64, u32)>>,
    /// A call that waits, before doing anything, until another has started.
    waits: Mutex<HashMap<At, At>>,
    /// Calls that have started, and its signal.
    started: (Mutex<HashSet<At>>, Condvar),
}

impl Shared {
    /// Marks `at` as started, waits if the script says so, and panics if
    /// the script says so.
    fn enter(&self, at: At) {
        let (started, cv) = &self.started;
        started.lock().unwrap().insert(at);
        cv.notify_all();
        let after = self.waits.lock().unwrap().get(&at).copied();
        if let Some(after) = after {
            // A guard against a hang, not a measurement: a wait that never
            // ends is logged and the test fails on it.
            let (_started, wait) = cv
                .wait_timeout_while(started.lock().unwrap(), Duration::from_secs(20), |s| {
                    !s.contains(&after)
                })
                .unwrap();
            if wait.timed_out() {
                self.log
                    .lock()
                    .unwrap()
                    .push(format!("{at:?} gave up waiting for {after:?}"));
            }
        }
        // Taken out first: panicking with the lock held would poison it.
        let payload = self.panics.lock().unwrap().get(&at).cloned();
        match payload {
            None => {}
            Some(Payload::Str(s)) => std::panic::panic_any(s),
            Some(Payload::String(s)) => panic!("{s}"),
            Some(Payload::Number(n)) => std::panic::panic_any(n),
        }
    }
}

/// (started, release) channels of a gated synthesis.
type Gate = (Mutex<Sender<()>>, Mutex<Receiver<()>>);

struct Fake {
    shared: Arc<Shared>,
    bytes: u64,
    /// (device bytes one partition needs, device memory).
    device: (u64, u64),
    /// Synthesis of job 0, partition 0 tells `started` and waits for `release`.
    gate: Option<Gate>,
    /// Device work waits for this many partitions to be on the device
    /// together (the first k, then the next k, …).
    meet: Option<usize>,
}

struct Part {
    shared: Arc<Shared>,
    job: u64,
    partition: u32,
}

impl Drop for Part {
    fn drop(&mut self) {
        self.shared.in_flight.fetch_sub(1, Ordering::SeqCst);
        self.shared.enter((Call::Drop, self.job, self.partition));
    }
}

fn span(rec: &mut Recorder<'_>, stage: Stage) {
    let t = Instant::now();
    rec(stage, t, t);
}

impl Workload for Fake {
    type Part = Part;
    type DeviceOut = bool;
    type G2Out = ();
    type Output = (u64, u32);

    fn devices(&self) -> usize {
        1
    }
    fn partition_bytes(&self) -> u64 {
        self.bytes
    }
    fn partition_device_bytes(&self) -> u64 {
        self.device.0
    }
    fn device_memory(&self, _device: usize) -> u64 {
        self.device.1
    }
    fn synthesize(
        &self,
        job: &JobRequest,
        partition: u32,
        mut rec: Recorder<'_>,
    ) -> Result<Part, Error> {
        let s = &self.shared;
        // Before counting the partition: a panic here leaves no partition.
        s.enter((Call::Synthesize, job.seed, partition));
        let now = s.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        s.max_in_flight.fetch_max(now, Ordering::SeqCst);
        s.log
            .lock()
            .unwrap()
            .push(format!("synth {}.{partition}", job.seed));
        if let (Some((started, release)), 0, 0) = (&self.gate, job.seed, partition) {
            started.lock().unwrap().send(()).unwrap();
            release.lock().unwrap().recv().unwrap();
        }
        span(&mut rec, Stage::Witness);
        span(&mut rec, Stage::Spmv);
        Ok(Part {
            shared: s.clone(),
            job: job.seed,
            partition,
        })
    }
    fn device_work(
        &self,
        part: &Part,
        _device: usize,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<bool, Error> {
        self.shared
            .enter((Call::DeviceWork, part.job, part.partition));
        if let Some(n) = self
            .shared
            .ooms
            .lock()
            .unwrap()
            .get_mut(&(part.job, part.partition))
            .filter(|n| **n > 0)
        {
            *n -= 1;
            return Err(Error::Backend {
                backend: "fake".into(),
                source: AccelError::new(ErrorCode::OUT_OF_MEMORY, "scripted OOM"),
            });
        }
        let s = &self.shared;
        let now = s.on_device.fetch_add(1, Ordering::SeqCst) + 1;
        s.max_on_device.fetch_max(now, Ordering::SeqCst);
        if let Some(k) = self.meet {
            let (count, cv) = &s.arrivals;
            let mut n = count.lock().unwrap();
            *n += 1;
            let until = n.div_ceil(k) * k;
            cv.notify_all();
            // A guard against a hang, not a measurement: a partition left
            // alone on the device is logged and the test fails on it.
            let (_n, wait) = cv
                .wait_timeout_while(n, Duration::from_secs(20), |n| *n < until)
                .unwrap();
            if wait.timed_out() {
                s.log.lock().unwrap().push("alone on the device".into());
            }
        }
        span(&mut rec, Stage::Quotient);
        span(&mut rec, Stage::Msm);
        if with_b_g2 {
            span(&mut rec, Stage::MsmG2);
        }
        s.on_device.fetch_sub(1, Ordering::SeqCst);
        Ok(with_b_g2)
    }
    fn fallback_work(
        &self,
        part: &Part,
        with_b_g2: bool,
        mut rec: Recorder<'_>,
    ) -> Result<bool, Error> {
        self.shared
            .enter((Call::FallbackWork, part.job, part.partition));
        self.shared
            .log
            .lock()
            .unwrap()
            .push(format!("host {}.{}", part.job, part.partition));
        span(&mut rec, Stage::Quotient);
        span(&mut rec, Stage::Msm);
        if with_b_g2 {
            span(&mut rec, Stage::MsmG2);
        }
        Ok(with_b_g2)
    }
    fn cpu_b_g2(&self, part: &Part, mut rec: Recorder<'_>) -> Result<(), Error> {
        let s = &self.shared;
        s.enter((Call::CpuBG2, part.job, part.partition));
        span(&mut rec, Stage::MsmG2);
        if s.g2_errors
            .lock()
            .unwrap()
            .contains(&(part.job, part.partition))
        {
            return Err(Error::Backend {
                backend: "fake".into(),
                source: AccelError::new(ErrorCode::INTERNAL, "scripted B-in-G2 failure"),
            });
        }
        Ok(())
    }
    fn assemble(
        &self,
        job: &JobRequest,
        partition: u32,
        part: &Part,
        on_device: bool,
        g2: Option<()>,
    ) -> Result<(u64, u32), Error> {
        self.shared
            .enter((Call::Assemble, part.job, part.partition));
        assert_eq!((job.seed, partition), (part.job, part.partition));
        assert!(on_device != g2.is_some(), "B in G2 computed exactly once");
        Ok((job.seed, partition))
    }
}

fn fake(bytes: u64) -> (Fake, Arc<Shared>) {
    let shared = Arc::new(Shared::default());
    (
        Fake {
            shared: shared.clone(),
            bytes,
            device: (0, 0),
            gate: None,
            meet: None,
        },
        shared,
    )
}

fn settings(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Job ids equal their seeds here (submission order), so logs read `job.partition`.
fn job(partitions: u32, priority: i32, id: u64) -> JobRequest {
    JobRequest {
        partitions,
        priority,
        seed: id,
    }
}

#[test]
fn every_policy_runs_every_stage_of_every_partition_once() {
    for name in ["serial", "pipelined", "split", "throttle", "priority"] {
        for dealloc in ["inline", "async", "serialized"] {
            let (w, shared) = fake(1);
            let policy = builtin(
                name,
                None,
                &settings(&[("dealloc", dealloc), ("memory_budget", "1000")]),
            )
            .unwrap();
            let engine = Engine::new(w, policy).unwrap();
            let handles: Vec<_> = (0..3).map(|j| engine.submit(job(3, 0, j))).collect();
            for (j, h) in handles.into_iter().enumerate() {
                let out = h.wait();
                assert_eq!(
                    out.result.unwrap(),
                    (0..3).map(|p| (j as u64, p)).collect::<Vec<_>>(),
                    "{name}/{dealloc}"
                );
            }
            engine_timeline_check(engine.shutdown(), 3, 3, name);
            assert_eq!(
                shared.in_flight.load(Ordering::SeqCst),
                0,
                "{name}/{dealloc}: partitions leaked"
            );
        }
    }
}

/// Every stage of every partition ran once. `tl` comes from
/// [`Engine::shutdown`], which waits for deallocs still running after the
/// jobs' results are out.
fn engine_timeline_check(tl: zkpipe_core::sched::Timeline, jobs: u64, parts: u32, name: &str) {
    for j in 0..jobs {
        for p in 0..parts {
            for stage in Stage::ALL {
                let n = tl
                    .iter()
                    .filter(|s| s.job == j && s.partition == p && s.stage == stage)
                    .count();
                assert_eq!(
                    n, 1,
                    "{name}: job {j} partition {p} stage {stage} ran {n} times"
                );
            }
        }
    }
}

/// Runs job 0 (4 partitions, normal priority) and, once its first partition
/// is being synthesized, job 1 (2 partitions, priority 10); returns the
/// synthesis order.
fn order_with_late_priority_job(policy: &str) -> Vec<String> {
    let (mut w, shared) = fake(1);
    let (started_tx, started_rx) = channel();
    let (release_tx, release_rx) = channel();
    w.gate = Some((Mutex::new(started_tx), Mutex::new(release_rx)));
    let p = builtin(
        policy,
        None,
        &settings(&[("partition_workers", "1"), ("gpu_workers_per_device", "1")]),
    )
    .unwrap();
    let engine = Engine::new(w, p).unwrap();
    let normal = engine.submit(job(4, 0, 0));
    started_rx.recv().unwrap();
    let urgent = engine.submit(job(2, 10, 1));
    release_tx.send(()).unwrap();
    assert!(urgent.wait().result.is_ok());
    assert!(normal.wait().result.is_ok());
    let log = shared.log.lock().unwrap().clone();
    log.into_iter().filter(|l| l.starts_with("synth")).collect()
}

#[test]
fn a_high_priority_job_goes_before_queued_normal_partitions() {
    // Running work is never interrupted (0.0 finishes first); queued work is overtaken.
    assert_eq!(
        order_with_late_priority_job("priority"),
        [
            "synth 0.0",
            "synth 1.0",
            "synth 1.1",
            "synth 0.1",
            "synth 0.2",
            "synth 0.3"
        ]
    );
    assert_eq!(
        order_with_late_priority_job("serial"),
        [
            "synth 0.0",
            "synth 0.1",
            "synth 0.2",
            "synth 0.3",
            "synth 1.0",
            "synth 1.1"
        ]
    );
}

#[test]
fn the_memory_budget_bounds_partitions_in_flight() {
    let (w, shared) = fake(100);
    let p = builtin(
        "pipelined",
        None,
        &settings(&[
            ("partition_workers", "4"),
            ("gpu_workers_per_device", "4"),
            ("memory_budget", "250"),
        ]),
    )
    .unwrap();
    let engine = Engine::new(w, p).unwrap();
    let hs: Vec<_> = (0..4).map(|j| engine.submit(job(4, 0, j))).collect();
    for h in hs {
        assert!(h.wait().result.is_ok());
    }
    let max = shared.max_in_flight.load(Ordering::SeqCst);
    assert!(
        (1..=2).contains(&max),
        "{max} partitions in flight under a budget for 2"
    );
}

#[test]
fn a_partition_larger_than_the_budget_fails_its_job_clearly() {
    let (w, _) = fake(100);
    let engine = Engine::new(
        w,
        builtin("serial", None, &settings(&[("memory_budget", "50")])).unwrap(),
    )
    .unwrap();
    let err = engine.submit(job(2, 0, 0)).wait().result.unwrap_err();
    assert!(err.contains("over the memory budget"), "{err}");
}

#[test]
fn device_out_of_memory_is_retried_then_fails_past_the_limit() {
    let (w, shared) = fake(1);
    shared.ooms.lock().unwrap().insert((0, 1), 2);
    shared.ooms.lock().unwrap().insert((1, 0), 5);
    let engine = Engine::new(
        w,
        builtin(
            "pipelined",
            None,
            &settings(&[("oom_retries", "3"), ("oom_fallback", "false")]),
        )
        .unwrap(),
    )
    .unwrap();
    let a = engine.submit(job(2, 0, 0));
    let b = engine.submit(job(2, 0, 1));
    let c = engine.submit(job(1, 0, 2));
    let a = a.wait();
    assert!(a.result.is_ok());
    assert_eq!(a.oom_retries, 2);
    let b = b.wait();
    assert!(b.result.unwrap_err().contains("scripted OOM"));
    assert!(c.wait().result.is_ok(), "other jobs carry on");
}

#[test]
fn device_out_of_memory_past_the_retries_falls_back_to_the_host() {
    let (w, shared) = fake(1);
    shared.ooms.lock().unwrap().insert((0, 1), 5);
    let engine = Engine::new(
        w,
        builtin("pipelined", None, &settings(&[("oom_retries", "2")])).unwrap(),
    )
    .unwrap();
    let out = engine.submit(job(2, 0, 0)).wait();
    assert_eq!(out.result.unwrap(), vec![(0, 0), (0, 1)]);
    assert_eq!((out.oom_retries, out.oom_fallbacks), (2, 1));
    let log = shared.log.lock().unwrap();
    assert_eq!(log.iter().filter(|l| l.starts_with("host")).count(), 1);
    assert!(log.contains(&"host 0.1".to_string()));
    // The fallback's stages are host time, not device time.
    let spans = engine.timeline();
    let host: Vec<_> = spans.iter().filter(|s| s.lane.ends_with("-host")).collect();
    assert!(!host.is_empty() && host.iter().all(|s| s.device.is_none()));
}

#[test]
fn a_partition_estimated_over_the_device_memory_never_touches_the_device() {
    for fallback in [true, false] {
        let (mut w, shared) = fake(1);
        w.device = (2000, 1000);
        let knobs = [("oom_fallback", if fallback { "true" } else { "false" })];
        let engine =
            Engine::new(w, builtin("pipelined", None, &settings(&knobs)).unwrap()).unwrap();
        let out = engine.submit(job(2, 0, 0)).wait();
        let log = shared.log.lock().unwrap();
        if fallback {
            assert_eq!(out.result.unwrap().len(), 2);
            assert_eq!((out.oom_retries, out.oom_fallbacks), (0, 2));
            assert_eq!(log.iter().filter(|l| l.starts_with("host")).count(), 2);
        } else {
            let err = out.result.unwrap_err();
            assert!(err.contains("device memory"), "{err}");
        }
        let device_spans = engine
            .timeline()
            .iter()
            .filter(|s| s.device.is_some())
            .count();
        assert_eq!(device_spans, 0, "no device stage ran");
    }
}

#[test]
fn device_workers_share_a_device_as_device_lock_says() {
    let knobs = |lock| settings(&[("gpu_workers_per_device", "4"), ("device_lock", lock)]);
    // The default, one partition's device stages at a time.
    let (mut w, shared) = fake(1);
    w.device = (400, 1000);
    let engine = Engine::new(w, builtin("pipelined", None, &knobs("partition")).unwrap()).unwrap();
    assert!(engine.submit(job(6, 0, 0)).wait().result.is_ok());
    assert_eq!(shared.max_on_device.load(Ordering::SeqCst), 1);
    // `op`: partitions overlap on the device, two at a time here (a third
    // would pass the device memory), meeting there in pairs.
    let (mut w, shared) = fake(1);
    (w.device, w.meet) = ((400, 1000), Some(2));
    let engine = Engine::new(w, builtin("pipelined", None, &knobs("op")).unwrap()).unwrap();
    assert!(engine.submit(job(6, 0, 0)).wait().result.is_ok());
    assert_eq!(shared.max_on_device.load(Ordering::SeqCst), 2);
    let log = shared.log.lock().unwrap();
    assert!(!log.iter().any(|l| l == "alone on the device"), "{log:?}");
}

#[test]
fn settings_parse_from_pairs_and_toml_and_reject_nonsense() {
    let mut s = Settings::default();
    s.set("b_g2", "cpu-split").unwrap();
    s.set("throttle", "true").unwrap();
    s.merge_toml("gpu_workers_per_device = 3\ndealloc = \"serialized\"\norder = \"priority\"")
        .unwrap();
    assert_eq!(s.gpu_workers_per_device, 3);
    assert!(s.describe().contains("b_g2=cpu-split") && s.describe().contains("dealloc=serialized"));
    assert!(s.set("gpu_workers_per_device", "0").is_err());
    assert!(
        s.set("bogus", "1")
            .unwrap_err()
            .to_string()
            .contains("unknown setting `bogus`")
    );
    assert!(s.set("b_g2", "moon").is_err());
    s.set("device_lock", "op").unwrap();
    assert!(s.describe().contains("device_lock=op"));
    assert!(s.set("device_lock", "stage").is_err());
    assert!(s.merge_toml("nope = 1").is_err());
    // A table with a bad key changes nothing, like a bad `set`.
    let before = s.clone();
    assert!(s.merge_toml("gpu_workers_per_device = 7\nzzz = 1").is_err());
    assert_eq!(s, before);
    assert!(builtin("fastest", None, &[]).is_err());
}

/// How long a test waits for the engine before calling it a hang.
const HANG: Duration = Duration::from_secs(20);

/// `handle.wait()`, failing the test instead of hanging when the job never ends.
fn wait_or_fail<O: Send + 'static>(handle: JobHandle<O>) -> JobOutcome<O> {
    let id = handle.id;
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(handle.wait());
    });
    match rx.recv_timeout(HANG) {
        Ok(outcome) => outcome,
        Err(RecvTimeoutError::Timeout) => {
            panic!("job {id} did not end within {HANG:?}: the engine hung")
        }
        Err(RecvTimeoutError::Disconnected) => panic!("JobHandle::wait panicked on job {id}"),
    }
}

/// `engine.shutdown()`, failing the test instead of hanging.
fn shutdown_or_fail(engine: Engine<Fake>) -> Timeline {
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        let _ = tx.send(engine.shutdown());
    });
    rx.recv_timeout(HANG)
        .unwrap_or_else(|_| panic!("Engine::shutdown did not return within {HANG:?}"))
}

/// Waits until every admitted partition byte is freed (an async dealloc
/// may still run after the last job's outcome is out).
fn assert_memory_released(engine: &Engine<Fake>, what: &str) {
    let deadline = Instant::now() + HANG;
    while engine.in_use_bytes() != 0 {
        assert!(
            Instant::now() < deadline,
            "{what}: {} bytes still admitted",
            engine.in_use_bytes()
        );
        std::thread::yield_now();
    }
}

/// Every partition that was synthesized (has a `witness` span) was freed
/// exactly once through the engine's dealloc, failed jobs included.
fn assert_each_partition_freed_once(tl: &Timeline, what: &str) {
    let count = |stage| {
        let mut n: HashMap<(u64, u32), usize> = HashMap::new();
        for s in tl.iter().filter(|s| s.stage == stage) {
            *n.entry((s.job, s.partition)).or_default() += 1;
        }
        n
    };
    let (synthesized, freed) = (count(Stage::Witness), count(Stage::Dealloc));
    assert!(!synthesized.is_empty(), "{what}: nothing ran");
    for (at, n) in &synthesized {
        assert_eq!(*n, 1, "{what}: {at:?} synthesized {n} times");
        assert_eq!(
            freed.get(at),
            Some(&1),
            "{what}: partition {at:?} freed {:?} times",
            freed.get(at)
        );
    }
    assert_eq!(freed.len(), synthesized.len(), "{what}: {freed:?}");
}

/// One synthesis worker, one device worker (so one B-in-G2 worker): a
/// worker that died would stall every later job.
fn one_worker_each(extra: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut knobs = settings(&[("partition_workers", "1"), ("gpu_workers_per_device", "1")]);
    knobs.extend(settings(extra));
    knobs
}

/// Under `b_g2=cpu-split` a partition ends when both its device half and
/// its B-in-G2 half have ended. A failing B in G2 used to fail the job and
/// nothing more: when the device half had ended first, the partition waited
/// for the other half forever, and so did `JobHandle::wait`.
#[test]
fn a_failing_split_b_in_g2_fails_its_job_and_frees_the_partition_in_either_order() {
    for device_half_first in [true, false] {
        for dealloc in ["inline", "async", "serialized"] {
            let what = format!("device half first: {device_half_first}, dealloc={dealloc}");
            let (w, shared) = fake(10);
            shared.g2_errors.lock().unwrap().insert((0, 0));
            let (waiting, until) = if device_half_first {
                // The single device worker starts on 0.1 only after it ended
                // 0.0's device half.
                ((Call::CpuBG2, 0, 0), (Call::DeviceWork, 0, 1))
            } else {
                // The single B-in-G2 worker starts on job 1 only after it
                // handled 0.0's failure (and skipped 0.1 of the failed job).
                ((Call::DeviceWork, 0, 0), (Call::CpuBG2, 1, 0))
            };
            shared.waits.lock().unwrap().insert(waiting, until);
            let knobs = one_worker_each(&[("dealloc", dealloc)]);
            let engine = Engine::new(w, builtin("split", None, &knobs).unwrap()).unwrap();
            let failing = engine.submit(job(2, 0, 0));
            let healthy = engine.submit(job(1, 0, 1));

            let err = wait_or_fail(failing).result.unwrap_err();
            assert!(err.contains("scripted B-in-G2 failure"), "{what}: {err}");
            assert_eq!(wait_or_fail(healthy).result.unwrap(), [(1, 0)], "{what}");
            assert_memory_released(&engine, &what);
            let tl = shutdown_or_fail(engine);
            assert_eq!(shared.in_flight.load(Ordering::SeqCst), 0, "{what}");
            assert_each_partition_freed_once(&tl, &what);
            let log = shared.log.lock().unwrap();
            assert!(
                !log.iter().any(|l| l.contains("gave up")),
                "{what}: {log:?}"
            );
        }
    }
}

/// A panic inside any workload call fails that job with a message naming
/// the stage (and the panic's text), frees the partition and its device
/// slot, and the worker that caught it goes on serving other jobs. Before,
/// the panic ended the worker thread: its job and every later one waited
/// forever.
#[test]
fn a_panicking_workload_call_fails_only_its_job_and_every_worker_carries_on() {
    // (call that panics, where B in G2 runs, what the failure names)
    let cases = [
        (Call::Synthesize, "device", "witness/spmv"),
        (Call::DeviceWork, "device", "quotient/msm"),
        (Call::DeviceWork, "cpu-split", "quotient/msm"),
        (Call::FallbackWork, "device", "quotient/msm on the host"),
        (Call::CpuBG2, "cpu-inline", "msm_g2"),
        (Call::CpuBG2, "cpu-split", "msm_g2"),
        (Call::Assemble, "device", "assemble"),
        (Call::Assemble, "cpu-split", "assemble"),
        (Call::Drop, "device", "dealloc"),
        (Call::Drop, "cpu-split", "dealloc"),
    ];
    for (case, (call, b_g2, stage)) in cases.into_iter().enumerate() {
        for dealloc in ["inline", "async", "serialized"] {
            let what = format!("{call:?} panics, b_g2={b_g2}, dealloc={dealloc}");
            let (w, shared) = fake(10);
            // Job 1's partition 1 panics; the payload kinds take turns.
            let payload = match case % 3 {
                0 => Payload::Str("scripted panic"),
                1 => Payload::String(format!("scripted panic in {call:?}")),
                _ => Payload::Number(7),
            };
            shared
                .panics
                .lock()
                .unwrap()
                .insert((call, 1, 1), payload.clone());
            if call == Call::FallbackWork {
                shared.ooms.lock().unwrap().insert((1, 1), 1);
            }
            let mut knobs = vec![("b_g2", b_g2), ("dealloc", dealloc), ("oom_retries", "0")];
            if call == Call::Drop {
                // One partition admitted at a time: the next partition of
                // the job waits for the panicking drop, so the job is still
                // running when it happens, whatever the dealloc mode.
                knobs.push(("memory_budget", "10"));
            }
            let engine = Engine::new(
                w,
                builtin("pipelined", None, &one_worker_each(&knobs)).unwrap(),
            )
            .unwrap();
            let before = engine.submit(job(2, 0, 0));
            let panicking = engine.submit(job(3, 0, 1));
            let after = engine.submit(job(2, 0, 2));

            assert_eq!(
                wait_or_fail(before).result.unwrap(),
                [(0, 0), (0, 1)],
                "{what}"
            );
            let err = wait_or_fail(panicking).result.unwrap_err();
            assert!(
                err.contains(&format!("stage {stage} panicked")) && err.contains("partition 1"),
                "{what}: {err}"
            );
            match payload {
                Payload::Str(text) => assert!(err.ends_with(text), "{what}: {err}"),
                Payload::String(text) => assert!(err.ends_with(&text), "{what}: {err}"),
                Payload::Number(_) => assert!(!err.contains('7'), "{what}: {err}"),
            }
            assert_eq!(
                wait_or_fail(after).result.unwrap(),
                [(2, 0), (2, 1)],
                "{what}"
            );

            assert_memory_released(&engine, &what);
            let tl = shutdown_or_fail(engine);
            assert_eq!(shared.in_flight.load(Ordering::SeqCst), 0, "{what}");
            assert_each_partition_freed_once(&tl, &what);
            let log = shared.log.lock().unwrap();
            assert!(
                !log.iter().any(|l| l.contains("gave up")),
                "{what}: {log:?}"
            );
        }
    }
}

/// Stopping the engine answers the jobs it had not finished, as failed:
/// `wait` used to panic ("engine dropped a job") once the engine was gone.
#[test]
fn jobs_the_engine_stops_before_fail_instead_of_hanging_or_panicking() {
    let (mut w, shared) = fake(1);
    let (started_tx, started_rx) = channel();
    let (release_tx, release_rx) = channel();
    w.gate = Some((Mutex::new(started_tx), Mutex::new(release_rx)));
    let engine = Engine::new(w, builtin("serial", None, &[]).unwrap()).unwrap();
    let unfinished = engine.submit(job(2, 0, 0));
    started_rx.recv().unwrap();
    // Partition 0.1 stays queued: the job cannot end before the engine stops.
    engine.set_paused(true);
    release_tx.send(()).unwrap();
    shutdown_or_fail(engine);
    let err = wait_or_fail(unfinished).result.unwrap_err();
    assert!(
        err.contains("engine shut down before the job ended"),
        "{err}"
    );
    assert_eq!(
        shared.in_flight.load(Ordering::SeqCst),
        0,
        "partitions leaked"
    );
}
