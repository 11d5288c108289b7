//! Scheduling logic against a fake workload with scripted behaviour: order,
//! priority preemption at the queue, memory admission, out-of-memory retry.
//! Deterministic: progress is gated by channels, nothing measures time.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use zkpipe_core::Error;
use zkpipe_core::Stage;
use zkpipe_core::plugin::{AccelError, ErrorCode};
use zkpipe_core::sched::engine::Recorder;
use zkpipe_core::sched::{Engine, JobRequest, Settings, Workload, builtin};

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
    fn cpu_b_g2(&self, _part: &Part, mut rec: Recorder<'_>) -> Result<(), Error> {
        span(&mut rec, Stage::MsmG2);
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
