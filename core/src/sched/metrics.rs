//! What a batch measured: latency percentiles, throughput, device busy
//! time (from the timeline), memory.

use serde::Serialize;
use std::collections::BTreeMap;
use std::time::Duration;

use super::batch::BatchRun;
use super::engine::Span;
use super::policy::Limits;
use crate::stage::Stage;

/// One stage under load against the same stage alone.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct StageLoad {
    /// The stage.
    pub stage: Stage,
    /// Whether it ran on a device.
    pub on_device: bool,
    /// Its time in the partition run alone before the batch.
    pub alone_s: f64,
    /// Median of its times in the batch.
    pub median_s: f64,
    /// Slowest of its times in the batch.
    pub max_s: f64,
    /// `median_s / alone_s`: how much the contention of the batch slowed it.
    pub inflation: f64,
}

/// A move of the policy's limits, `at_s` seconds into the batch.
#[derive(Serialize, Debug, Clone, PartialEq)]
pub struct LimitChange {
    /// Seconds since the batch started.
    pub at_s: f64,
    /// The limits from then on.
    pub limits: Limits,
}

/// One run of a batch under one policy, summarised.
#[derive(Serialize, Debug, Clone, Default, PartialEq)]
pub struct Summary {
    /// Policy name.
    pub policy: String,
    /// The curve of the proofs (`BLS12-381`, `BN254`; empty where not
    /// known).
    pub curve: String,
    /// Its settings, described.
    pub settings: String,
    /// Wall time of the batch.
    pub total_s: f64,
    /// Requests that completed.
    pub completed: u32,
    /// Requests that failed.
    pub failed: u32,
    /// Latency (submission → result) of completed requests.
    pub latency_avg_s: f64,
    /// Fastest request.
    pub latency_min_s: f64,
    /// Slowest request.
    pub latency_max_s: f64,
    /// 95th percentile (nearest rank).
    pub latency_p95_s: f64,
    /// Completed requests per minute.
    pub proofs_per_min: f64,
    /// Wall time per completed request.
    pub s_per_proof: f64,
    /// The most partition bytes the scheduler admitted at once (its
    /// estimate of host memory in flight, checked against the budget).
    pub admitted_peak_bytes: u64,
    /// The process's real peak resident memory (`VmHWM`; 0 where unknown),
    /// keys and caches included.
    pub process_peak_rss_bytes: u64,
    /// Time some device stage ran, per device / (wall time × devices).
    pub device_busy_pct: f64,
    /// Time some device stage ran, summed over devices, per proof request:
    /// what the devices alone need (partitions that overlap on a device
    /// under `device_lock=op` count once).
    pub device_floor_s_per_proof: f64,
    /// Busy time per device, in seconds (index = device).
    pub device_busy_s: Vec<f64>,
    /// Device out-of-memory errors that were retried.
    pub oom_retries: u32,
    /// Partitions whose device stages ran on the host after out-of-memory.
    pub oom_fallbacks: u32,
    /// Proofs verified.
    pub verified: u32,
    /// Each stage under load against alone (empty where no partition ran alone).
    pub stages: Vec<StageLoad>,
    /// What the devices need per proof request with no contention: the
    /// lone partition's device time × partitions ÷ devices.
    pub device_floor_alone_s_per_proof: f64,
    /// What the host needs per proof request: the lone partition's host
    /// CPU-seconds (witness, plus SpMV × its threads) × partitions ÷ cores.
    pub host_floor_s_per_proof: f64,
    /// Which floor is higher, so bounds the batch: `device` or `host`
    /// (empty where unknown).
    pub bound: String,
    /// `s_per_proof` ÷ the higher floor: 1 is as fast as the machine goes.
    pub s_per_proof_over_floor: f64,
    /// When the policy moved the limits of synthesis, SpMV and lookahead.
    pub limit_changes: Vec<LimitChange>,
}

impl Summary {
    /// Adds what `run` says of contention: each stage's inflation, the
    /// floors and which one bounds the batch, the policy's moves.
    pub fn with_load(mut self, run: &BatchRun, requests: u32) -> Summary {
        self.limit_changes = run
            .limit_changes
            .iter()
            .map(|&(ms, limits)| LimitChange {
                at_s: ms / 1e3,
                limits,
            })
            .collect();
        if run.alone.is_empty() {
            return self;
        }
        self.stages = stage_loads(&run.alone, &run.timeline);
        let partitions = if requests == 0 {
            0.0
        } else {
            // Partitions per request, from the batch's own spans.
            let done = run
                .timeline
                .iter()
                .filter(|s| s.stage == Stage::Assemble)
                .count() as f64;
            done / (self.completed.max(1) as f64)
        };
        let alone_device: f64 = device_busy_s(&run.alone).values().sum();
        self.device_floor_alone_s_per_proof = alone_device * partitions / run.devices.max(1) as f64;
        let host_s = |stage| {
            run.alone
                .iter()
                .filter(|s| s.stage == stage && s.device.is_none())
                .map(|s| (s.end_ms - s.start_ms) / 1e3)
                .sum::<f64>()
        };
        let spmv_threads = run.settings.as_ref().map_or(1, |s| s.spmv_threads) as f64;
        let cpu_s = host_s(Stage::Witness) + host_s(Stage::Spmv) * spmv_threads;
        self.host_floor_s_per_proof = cpu_s * partitions / run.cores.max(1) as f64;
        let floor = self
            .device_floor_alone_s_per_proof
            .max(self.host_floor_s_per_proof);
        self.bound = bound(
            self.device_floor_alone_s_per_proof,
            self.host_floor_s_per_proof,
        )
        .into();
        if floor > 0.0 {
            self.s_per_proof_over_floor = self.s_per_proof / floor;
        }
        self
    }
}

/// Each stage of `batch` against its time in `alone`, in pipeline order
/// (stages that did not run alone are left out).
pub fn stage_loads(alone: &[Span], batch: &[Span]) -> Vec<StageLoad> {
    let mut out = vec![];
    for stage in Stage::ALL {
        for on_device in [false, true] {
            let times = |spans: &[Span]| {
                let mut t: Vec<f64> = spans
                    .iter()
                    .filter(|s| s.stage == stage && s.device.is_some() == on_device)
                    .map(|s| (s.end_ms - s.start_ms) / 1e3)
                    .collect();
                t.sort_by(f64::total_cmp);
                t
            };
            let (a, b) = (times(alone), times(batch));
            if a.is_empty() || b.is_empty() {
                continue;
            }
            let alone_s = a.iter().sum::<f64>() / a.len() as f64;
            let median_s = percentile(&b, 0.5);
            out.push(StageLoad {
                stage,
                on_device,
                alone_s,
                median_s,
                max_s: percentile(&b, 1.0),
                inflation: if alone_s > 0.0 {
                    median_s / alone_s
                } else {
                    0.0
                },
            });
        }
    }
    out
}

/// Which floor bounds the work: `device` where the device floor is at
/// least the host's, else `host` (a tie goes to the device: the host work
/// then hides behind it).
pub fn bound(device_floor_s: f64, host_floor_s: f64) -> &'static str {
    if device_floor_s >= host_floor_s {
        "device"
    } else {
        "host"
    }
}

/// Whether a span of another partition (another job's, or another
/// partition of the same job) overlaps `s` in time; spans that only touch
/// do not overlap. `dealloc` spans are left out: freeing memory takes
/// nothing the stages need, and it may run after its job has ended.
pub fn overlaps_another_partition<'a>(s: &Span, spans: impl IntoIterator<Item = &'a Span>) -> bool {
    spans.into_iter().any(|o| {
        o.stage != Stage::Dealloc
            && (o.job, o.partition) != (s.job, s.partition)
            && o.start_ms < s.end_ms
            && s.start_ms < o.end_ms
    })
}

/// The median (nearest rank, as [`percentile`]) of `values`, in any
/// order; 0 for none.
pub fn median(values: impl IntoIterator<Item = f64>) -> f64 {
    let mut v: Vec<f64> = values.into_iter().collect();
    v.sort_by(f64::total_cmp);
    percentile(&v, 0.5)
}

/// [`device_busy_s`] of the spans cut to the window from `from_ms` to
/// `to_ms`: the busy seconds of each device within it.
pub fn device_busy_between(spans: &[Span], from_ms: f64, to_ms: f64) -> BTreeMap<usize, f64> {
    let clipped: Vec<Span> = spans
        .iter()
        .filter(|s| s.device.is_some() && s.end_ms > from_ms && s.start_ms < to_ms)
        .map(|s| Span {
            start_ms: s.start_ms.max(from_ms),
            end_ms: s.end_ms.min(to_ms),
            ..s.clone()
        })
        .collect();
    device_busy_s(&clipped)
}

/// The `q` quantile (nearest rank) of sorted values; 0 for none.
pub fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * q.clamp(0.0, 1.0)).round() as usize]
}

/// Latency statistics of `latencies`: `(avg, min, max, p95)` in seconds.
pub fn latency_stats(latencies: &[Duration]) -> (f64, f64, f64, f64) {
    let mut l: Vec<f64> = latencies.iter().map(Duration::as_secs_f64).collect();
    l.sort_by(f64::total_cmp);
    let avg = if l.is_empty() {
        0.0
    } else {
        l.iter().sum::<f64>() / l.len() as f64
    };
    (
        avg,
        percentile(&l, 0.0),
        percentile(&l, 1.0),
        percentile(&l, 0.95),
    )
}

/// Seconds during which each device ran at least one device stage (the
/// union of its spans), by device index.
pub fn device_busy_s(spans: &[Span]) -> BTreeMap<usize, f64> {
    let mut by_device: BTreeMap<usize, Vec<(f64, f64)>> = BTreeMap::new();
    for s in spans {
        if let Some(d) = s.device {
            by_device.entry(d).or_default().push((s.start_ms, s.end_ms));
        }
    }
    by_device
        .into_iter()
        .map(|(d, mut v)| {
            v.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (mut lo, mut hi) = v[0];
            let mut ms = 0.0;
            for &(a, b) in &v[1..] {
                if a > hi {
                    ms += hi - lo;
                    lo = a;
                }
                hi = hi.max(b);
            }
            ms += hi - lo;
            (d, ms / 1e3)
        })
        .collect()
}

/// The process's peak resident memory so far (`VmHWM` in
/// `/proc/self/status`), 0 where unknown.
pub fn process_peak_rss_bytes() -> u64 {
    status_bytes("VmHWM:")
}

/// Restarts the peak that [`process_peak_rss_bytes`] reports from the
/// present resident size (Linux: `5` into `/proc/self/clear_refs`), so a
/// phase's own peak can be read; false where that is not possible.
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// The process's resident memory now and its peak so far, `(VmRSS,
/// VmHWM)`, read together: one read of `/proc/self/status` reports a peak
/// at least the resident size, which two reads a moment apart need not
/// (other threads allocate in between). 0 where unknown.
pub fn process_rss_and_peak_bytes() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    (
        field_bytes(&status, "VmRSS:"),
        field_bytes(&status, "VmHWM:"),
    )
}

/// A `kB` field of `/proc/self/status` in bytes, 0 where unknown.
fn status_bytes(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    field_bytes(&status, field)
}

fn field_bytes(status: &str, field: &str) -> u64 {
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |kib| kib * 1024)
}

/// `TIMELINE,<offset_ms>,<event>,<job>,<detail>` lines, in time order.
pub fn timeline_lines(spans: &[Span]) -> Vec<String> {
    let mut events: Vec<(f64, String)> = Vec::with_capacity(2 * spans.len());
    for s in spans {
        let detail = format!("p{} {}", s.partition, s.lane);
        events.push((s.start_ms, format!("{}_start,{},{detail}", s.stage, s.job)));
        events.push((s.end_ms, format!("{}_end,{},{detail}", s.stage, s.job)));
    }
    events.sort_by(|a, b| a.0.total_cmp(&b.0));
    events
        .into_iter()
        .map(|(t, e)| format!("TIMELINE,{t:.3},{e}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Stage;

    fn span(device: Option<usize>, start_ms: f64, end_ms: f64) -> Span {
        Span {
            job: 0,
            partition: 0,
            stage: Stage::Msm,
            lane: "dev0-w0".into(),
            device,
            start_ms,
            end_ms,
        }
    }

    #[test]
    fn device_time_counts_overlapping_stages_once_per_device() {
        let spans = [
            span(Some(0), 0.0, 100.0),
            span(Some(0), 50.0, 150.0), // overlaps the first: +50
            span(Some(0), 200.0, 250.0),
            span(Some(1), 0.0, 100.0), // another device counts apart
            span(None, 0.0, 1000.0),   // host stages do not count
        ];
        let busy = device_busy_s(&spans);
        assert!((busy[&0] - 0.2).abs() < 1e-12);
        assert!((busy[&1] - 0.1).abs() < 1e-12);
        assert!(device_busy_s(&[]).is_empty());
    }

    fn part(job: u64, partition: u32, stage: Stage, start_ms: f64, end_ms: f64) -> Span {
        Span {
            job,
            partition,
            stage,
            ..span(None, start_ms, end_ms)
        }
    }

    #[test]
    fn only_another_partitions_overlapping_span_makes_a_span_loaded() {
        let s = part(1, 0, Stage::Witness, 100.0, 200.0);
        // Its own partition's stages and spans that only touch it do not count.
        let alone = [
            s.clone(),
            part(1, 0, Stage::Msm, 150.0, 300.0),
            part(2, 0, Stage::Witness, 0.0, 100.0),
            part(2, 0, Stage::Witness, 200.0, 250.0),
            part(3, 0, Stage::Dealloc, 120.0, 180.0),
        ];
        assert!(!overlaps_another_partition(&s, &alone));
        // Another partition of the same job does, as does another job's.
        assert!(overlaps_another_partition(
            &s,
            &[part(1, 1, Stage::Spmv, 199.0, 210.0)]
        ));
        assert!(overlaps_another_partition(
            &s,
            &[part(2, 0, Stage::Msm, 0.0, 1000.0)]
        ));
    }

    #[test]
    fn busy_time_in_a_window_is_cut_at_its_edges() {
        let spans = [
            span(Some(0), 0.0, 100.0),   // 50 of it inside
            span(Some(0), 120.0, 130.0), // inside
            span(Some(1), 140.0, 400.0), // 60 of it inside
            span(Some(1), 500.0, 600.0), // after
            span(None, 60.0, 190.0),     // host
        ];
        let busy = device_busy_between(&spans, 50.0, 200.0);
        assert!((busy[&0] - 0.06).abs() < 1e-12);
        assert!((busy[&1] - 0.06).abs() < 1e-12);
        assert_eq!(busy.len(), 2);
    }

    #[test]
    fn the_higher_floor_bounds_and_a_tie_goes_to_the_device() {
        assert_eq!(bound(1.0, 0.5), "device");
        assert_eq!(bound(0.5, 1.0), "host");
        assert_eq!(bound(0.5, 0.5), "device");
        assert_eq!(median([3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median([]), 0.0);
    }

    #[test]
    fn percentiles_take_the_nearest_rank() {
        let l: Vec<Duration> = [3, 1, 2, 4].map(Duration::from_secs).into();
        let (avg, min, max, p95) = latency_stats(&l);
        assert_eq!((avg, min, max, p95), (2.5, 1.0, 4.0, 4.0));
        assert_eq!(latency_stats(&[]), (0.0, 0.0, 0.0, 0.0));
    }
}
