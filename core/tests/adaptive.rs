//! The `adaptive` policy on a workload whose syntheses share a fixed
//! throughput (memory bandwidth) and whose device stages slow down with
//! the syntheses running beside them, as a GPU's copies do when synthesis
//! threads take the host's bandwidth: more than two syntheses at once buy
//! nothing and cost the device. The policy must find fewer syntheses,
//! keep the device stages near their time alone, and cost next to nothing
//! in throughput (a timing test on a shared machine: the margin is wide).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use zkpipe_core::Error;
use zkpipe_core::sched::engine::Recorder;
use zkpipe_core::sched::{Engine, JobRequest, Policy, Workload, builtin};
use zkpipe_core::stage::Stage;

/// A synthesis takes `SYNTH` × (syntheses running) ÷ 2, at least `SYNTH`:
/// two at once use all the host has. A device stage takes `DEVICE` ×
/// (1 + ½ per synthesis running beyond two).
struct Contended {
    synthesizing: AtomicUsize,
}

const SYNTH: Duration = Duration::from_millis(40);
const DEVICE: Duration = Duration::from_millis(10);

fn timed(rec: &mut Recorder<'_>, stage: Stage, d: Duration) {
    let t = Instant::now();
    std::thread::sleep(d);
    rec(stage, t, Instant::now());
}

impl Workload for Contended {
    type Part = ();
    type DeviceOut = ();
    type G2Out = ();
    type Output = ();

    fn devices(&self) -> usize {
        1
    }
    fn partition_bytes(&self) -> u64 {
        0
    }
    fn synthesize(&self, _: &JobRequest, _: u32, mut rec: Recorder<'_>) -> Result<(), Error> {
        let k = self.synthesizing.fetch_add(1, Ordering::SeqCst) as u32 + 1;
        timed(&mut rec, Stage::Witness, SYNTH * k.max(2) / 2);
        self.synthesizing.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
    fn device_work(&self, _: &(), _: usize, _: bool, mut rec: Recorder<'_>) -> Result<(), Error> {
        let beside = self.synthesizing.load(Ordering::SeqCst).saturating_sub(2) as u32;
        timed(&mut rec, Stage::Quotient, DEVICE + DEVICE * beside / 2);
        Ok(())
    }
    fn cpu_b_g2(&self, _: &(), _: Recorder<'_>) -> Result<(), Error> {
        Ok(())
    }
    fn assemble(&self, _: &JobRequest, _: u32, _: &(), _: (), _: Option<()>) -> Result<(), Error> {
        Ok(())
    }
}

/// What one run of 48 partitions (after one alone) measured.
struct Run {
    /// Wall seconds per partition.
    per_partition: f64,
    /// Median device stage, in ms, after the first twelve partitions of
    /// the batch (the policy's time to look) while syntheses still ran.
    late_device_ms: f64,
    /// The synthesis limit at the end.
    limit: usize,
    /// Times the policy moved the limits.
    moves: usize,
}

fn run(policy: Arc<dyn Policy>) -> Run {
    let engine = Engine::new(
        Contended {
            synthesizing: AtomicUsize::new(0),
        },
        policy,
    )
    .unwrap();
    let one = |partitions| JobRequest {
        partitions,
        priority: 0,
        seed: 0,
    };
    engine.submit(one(1)).wait().result.unwrap();
    let t0 = Instant::now();
    let jobs: Vec<_> = (0..6).map(|_| engine.submit(one(8))).collect();
    for j in jobs {
        j.wait().result.unwrap();
    }
    let per_partition = t0.elapsed().as_secs_f64() / 48.0;
    let (limit, moves) = (engine.limits().synthesis, engine.limit_changes().len());
    let spans = engine.shutdown();
    let synthesis_end = spans
        .iter()
        .filter(|s| s.stage == Stage::Witness)
        .map(|s| s.end_ms)
        .fold(0.0, f64::max);
    let mut late: Vec<f64> = spans
        .iter()
        .filter(|s| s.stage == Stage::Quotient)
        .skip(13)
        .filter(|s| s.start_ms < synthesis_end)
        .map(|s| s.end_ms - s.start_ms)
        .collect();
    late.sort_by(f64::total_cmp);
    Run {
        per_partition,
        late_device_ms: late.get(late.len() / 2).copied().unwrap_or(0.0),
        limit,
        moves,
    }
}

#[test]
fn the_adaptive_policy_backs_off_the_syntheses_that_slow_the_device() {
    // A lookahead deeper than the batch, so that the host never waits for
    // the device and all eight syntheses run beside every device stage
    // (a shallow one already holds the syntheses back to the device's pace).
    let eight = [
        ("partition_workers".to_string(), "8".to_string()),
        ("lookahead".to_string(), "64".to_string()),
    ];
    let fixed = run(builtin("pipelined", None, &eight).unwrap());
    let adaptive = run(builtin("adaptive", None, &eight).unwrap());
    assert_eq!(
        (fixed.limit, fixed.moves),
        (8, 0),
        "a fixed policy never moves"
    );
    assert!(
        adaptive.moves > 0 && adaptive.limit <= 4,
        "limit {} after {} moves",
        adaptive.limit,
        adaptive.moves
    );
    // Eight syntheses make a device stage 40 ms; four or fewer, 20 ms or
    // less. A loaded machine oversleeps both runs alike, so the gap is
    // judged, not the adaptive run's own time.
    assert!(
        fixed.late_device_ms > 30.0 && fixed.late_device_ms - adaptive.late_device_ms > 12.0,
        "device stage late in the run: adaptive {:.1} ms, fixed {:.1} ms",
        adaptive.late_device_ms,
        fixed.late_device_ms
    );
    assert!(
        adaptive.per_partition < fixed.per_partition * 1.25,
        "adaptive {:.1} ms per partition, fixed 8 workers {:.1} ms",
        adaptive.per_partition * 1e3,
        fixed.per_partition * 1e3
    );
}

#[test]
fn the_first_partition_s_stage_times_size_the_syntheses_left_to_the_engine() {
    // Witness 40 ms, device 10 ms alone: four syntheses keep the device
    // fed; half as many again and one more is seven, at most one per core.
    let engine = Engine::new(
        Contended {
            synthesizing: AtomicUsize::new(0),
        },
        builtin("pipelined", None, &[]).unwrap(),
    )
    .unwrap();
    let cores = zkpipe_core::util::machine::cores();
    assert_eq!(
        engine.limits().synthesis,
        cores,
        "sized from the machine first"
    );
    let one = JobRequest {
        partitions: 1,
        priority: 0,
        seed: 0,
    };
    engine.submit(one).wait().result.unwrap();
    assert_eq!(engine.limits().synthesis, 7.min(cores));
    assert_eq!(engine.limit_changes().len(), usize::from(cores > 7));
    // Set by hand, the count stands.
    let two = [("partition_workers".to_string(), "2".to_string())];
    let engine = Engine::new(
        Contended {
            synthesizing: AtomicUsize::new(0),
        },
        builtin("pipelined", None, &two).unwrap(),
    )
    .unwrap();
    engine.submit(one).wait().result.unwrap();
    assert_eq!(engine.limits().synthesis, 2);
}
