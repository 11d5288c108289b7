//! What bounds a running daemon, from the engine's stage spans: each
//! stage's time alone and under load (its inflation), the devices' busy
//! share, the device and host floors and which one is higher — what
//! `zkpipe bench batch` reports of a batch, kept up to date for a service.
//!
//! **Alone or under load.** A span is *alone* when no stage span of
//! another partition overlaps it (another job's, or another partition of
//! the same job; `dealloc` spans are left out), else *under load*. A span
//! arrives when its stage ends, so one that looks alone may still be
//! overlapped by a stage running then: it waits until a span overlapping
//! it arrives (under load) or every job that had started a stage when it
//! arrived has ended, one tick later (alone: the spans those jobs recorded
//! have all arrived by then). Per (key, stage, device or host), the
//! baseline is the median of the latest [`ALONE_SAMPLES`] times alone and
//! the inflation the median of the latest [`LOADED_SAMPLES`] times under
//! load ÷ the baseline; none until both exist.
//!
//! **The window.** Busy ratios, floors and the bound look at the spans
//! that ended in the last [`WINDOW_S`] seconds: the device floor is the
//! devices' busy seconds (each device's union of spans, cut to the
//! window) per partition completed (`assemble` spans) ÷ devices; the host
//! floor the witness and host SpMV CPU-seconds (SpMV × its pool's
//! threads) per partition ÷ cores. A span's CPU-seconds are its stage's
//! baseline where there is one — what it needs without contention, as
//! `bench batch` counts — and its own wall time where not (an
//! over-estimate under contention).

use std::collections::{BTreeMap, HashSet, VecDeque};

use zkpipe_core::Stage;
use zkpipe_core::sched::Span;
use zkpipe_core::sched::metrics::{bound, device_busy_between, median, overlaps_another_partition};

/// Seconds of spans the busy ratios, floors and bound look back over.
pub const WINDOW_S: f64 = 60.0;
/// Times alone kept per stage: the baseline is their median.
pub const ALONE_SAMPLES: usize = 16;
/// Times under load kept per stage: the inflation is their median ÷ the baseline.
pub const LOADED_SAMPLES: usize = 64;
/// Most spans kept for the overlap test and the window, whatever their age.
const MAX_SEEN: usize = 200_000;
/// Most spans waiting to be settled: past it the oldest are dropped
/// unjudged (a job that runs for hours with nothing overlapping).
const MAX_PENDING: usize = 20_000;

/// A stage of one key's partitions, on a device or on the host.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StageKey {
    /// The key's name (`circuit size`).
    pub key: String,
    /// The stage.
    pub stage: Stage,
    /// Whether it ran on a device.
    pub on_device: bool,
}

/// One stage's time alone against under load.
#[derive(Clone, Debug, PartialEq)]
pub struct StageReport {
    /// Which stage.
    pub stage: StageKey,
    /// Median of its latest times alone, in seconds.
    pub alone_s: f64,
    /// Median of its latest times under load (`None`: none yet).
    pub median_s: Option<f64>,
    /// `median_s / alone_s`.
    pub inflation: Option<f64>,
    /// Times under load the median is taken over.
    pub samples: usize,
}

/// What bounds the daemon now.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// Stages with a time alone, by key then pipeline order.
    pub stages: Vec<StageReport>,
    /// The window the rest looks at, in seconds (shorter than
    /// [`WINDOW_S`] in the engine's first minute).
    pub window_s: f64,
    /// Partitions completed in the window.
    pub partitions: u32,
    /// Share of the window each device (engine index) ran a device stage, 0 to 1.
    pub device_busy_ratio: Vec<f64>,
    /// Device-busy seconds per partition ÷ devices (`None`: no partition completed).
    pub device_floor_s: Option<f64>,
    /// Host CPU-seconds per partition ÷ cores (`None`: no partition completed).
    pub host_floor_s: Option<f64>,
    /// `device` or `host`: the higher floor (`None` while the floors are unknown).
    pub bound: Option<&'static str>,
}

/// Spans that arrived at one tick and look alone so far.
#[derive(Debug)]
struct Pending {
    spans: Vec<(String, Span)>,
    /// Engine jobs in flight when they arrived: the spans are alone if
    /// nothing overlaps them once all of these have ended.
    waits_on: Vec<u64>,
    /// Those jobs had ended at the last tick: settled at the next one.
    ready: bool,
}

#[derive(Debug, Default)]
struct Samples {
    alone: VecDeque<f64>,
    loaded: VecDeque<f64>,
}

fn push(ring: &mut VecDeque<f64>, cap: usize, v: f64) {
    if ring.len() == cap {
        ring.pop_front();
    }
    ring.push_back(v);
}

/// The daemon's record of its spans, fed once a tick.
#[derive(Debug)]
pub struct Load {
    devices: usize,
    cores: usize,
    spmv_threads: usize,
    /// Spans of the window and those that may overlap a pending one, with
    /// their key's name ("" where the job was not known).
    seen: Vec<(String, Span)>,
    longest_ms: f64,
    pending: Vec<Pending>,
    stages: BTreeMap<StageKey, Samples>,
}

impl Load {
    /// An empty record for an engine with `devices` devices on a host of
    /// `cores` cores whose SpMV pool has `spmv_threads` threads.
    pub fn new(devices: usize, cores: usize, spmv_threads: usize) -> Load {
        Load {
            devices: devices.max(1),
            cores: cores.max(1),
            spmv_threads: spmv_threads.max(1),
            seen: vec![],
            longest_ms: 0.0,
            pending: vec![],
            stages: BTreeMap::new(),
        }
    }

    /// Takes the spans the engine recorded since the last call (engine job
    /// ids, each with its key's name, "" where unknown), the engine's jobs
    /// that have started a stage, read *after* taking the spans, and the
    /// engine's clock now.
    pub fn add(&mut self, spans: Vec<(String, Span)>, in_flight: &HashSet<u64>, now_ms: f64) {
        let spans: Vec<(String, Span)> = spans
            .into_iter()
            .filter(|(_, s)| s.stage != Stage::Dealloc)
            .collect();
        for (_, s) in &spans {
            self.longest_ms = self.longest_ms.max(s.end_ms - s.start_ms);
        }
        self.seen.extend(spans.iter().cloned());
        let mut pending = std::mem::take(&mut self.pending);
        if !spans.is_empty() {
            pending.push(Pending {
                spans,
                waits_on: in_flight.iter().copied().collect(),
                ready: false,
            });
        }
        for mut p in pending {
            let (loaded, alone): (Vec<_>, Vec<_>) = p.spans.into_iter().partition(|(_, s)| {
                overlaps_another_partition(s, self.seen.iter().map(|(_, o)| o))
            });
            // Overlapped: under load whatever comes later.
            for (key, s) in loaded {
                self.record(key, &s, false);
            }
            if p.ready {
                // Their jobs had all ended at the last tick: every span
                // that could overlap them has arrived.
                for (key, s) in alone {
                    self.record(key, &s, true);
                }
            } else if !alone.is_empty() {
                p.spans = alone;
                p.ready = p.waits_on.iter().all(|j| !in_flight.contains(j));
                self.pending.push(p);
            }
        }
        let mut over = self.pending.iter().map(|p| p.spans.len()).sum::<usize>();
        while over > MAX_PENDING {
            let dropped = self.pending.remove(0).spans.len();
            over -= dropped;
        }
        self.prune(now_ms);
    }

    fn record(&mut self, key: String, s: &Span, alone: bool) {
        if key.is_empty() {
            return;
        }
        let samples = self
            .stages
            .entry(StageKey {
                key,
                stage: s.stage,
                on_device: s.device.is_some(),
            })
            .or_default();
        let secs = (s.end_ms - s.start_ms).max(0.0) / 1e3;
        if alone {
            push(&mut samples.alone, ALONE_SAMPLES, secs);
        } else {
            push(&mut samples.loaded, LOADED_SAMPLES, secs);
        }
    }

    /// Forgets spans that ended before the window and before every pending
    /// span started; a span arriving later overlaps none of them unless it
    /// ran longer than any before it by more than the window.
    fn prune(&mut self, now_ms: f64) {
        let pending_from = self
            .pending
            .iter()
            .flat_map(|p| p.spans.iter().map(|(_, s)| s.start_ms))
            .fold(f64::INFINITY, f64::min);
        let cutoff = (now_ms - WINDOW_S * 1e3 - self.longest_ms).min(pending_from);
        self.seen.retain(|(_, s)| s.end_ms >= cutoff);
        if self.seen.len() > MAX_SEEN {
            let extra = self.seen.len() - MAX_SEEN;
            self.seen.drain(..extra);
        }
    }

    /// The baseline of a stage: the median of its latest times alone.
    fn alone_s(&self, key: &StageKey) -> Option<f64> {
        let s = self.stages.get(key)?;
        (!s.alone.is_empty()).then(|| median(s.alone.iter().copied()))
    }

    /// What bounds the daemon, as of `now_ms` on the engine's clock.
    pub fn report(&self, now_ms: f64) -> Report {
        let stages = self
            .stages
            .iter()
            .filter_map(|(k, s)| {
                let alone_s = self.alone_s(k)?;
                let median_s = (!s.loaded.is_empty()).then(|| median(s.loaded.iter().copied()));
                Some(StageReport {
                    stage: k.clone(),
                    alone_s,
                    median_s,
                    inflation: median_s.filter(|_| alone_s > 0.0).map(|m| m / alone_s),
                    samples: s.loaded.len(),
                })
            })
            .collect();
        let from_ms = now_ms - WINDOW_S * 1e3;
        let window_s = (now_ms / 1e3).clamp(1e-3, WINDOW_S);
        let recent: Vec<&(String, Span)> = self
            .seen
            .iter()
            .filter(|(_, s)| s.end_ms > from_ms && s.end_ms <= now_ms)
            .collect();
        let spans: Vec<Span> = recent.iter().map(|(_, s)| s.clone()).collect();
        let busy = device_busy_between(&spans, from_ms, now_ms);
        let device_busy_ratio = (0..self.devices)
            .map(|d| (busy.get(&d).copied().unwrap_or(0.0) / window_s).clamp(0.0, 1.0))
            .collect();
        let partitions = spans.iter().filter(|s| s.stage == Stage::Assemble).count() as u32;
        let mut report = Report {
            stages,
            window_s,
            partitions,
            device_busy_ratio,
            ..Report::default()
        };
        if partitions == 0 {
            return report;
        }
        let per_partition = |s: f64| s / partitions as f64;
        let device_s: f64 = busy.values().sum();
        let host_cpu_s: f64 = recent
            .iter()
            .filter(|(_, s)| s.device.is_none() && matches!(s.stage, Stage::Witness | Stage::Spmv))
            .map(|(key, s)| {
                let stage = StageKey {
                    key: key.clone(),
                    stage: s.stage,
                    on_device: false,
                };
                let secs = self
                    .alone_s(&stage)
                    .unwrap_or((s.end_ms - s.start_ms).max(0.0) / 1e3);
                let threads = if s.stage == Stage::Spmv {
                    self.spmv_threads
                } else {
                    1
                };
                secs * threads as f64
            })
            .sum();
        let device_floor = per_partition(device_s) / self.devices as f64;
        let host_floor = per_partition(host_cpu_s) / self.cores as f64;
        report.device_floor_s = Some(device_floor);
        report.host_floor_s = Some(host_floor);
        report.bound = Some(bound(device_floor, host_floor));
        report
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(job: u64, stage: Stage, device: Option<usize>, start_ms: f64, end_ms: f64) -> Span {
        Span {
            job,
            partition: 0,
            stage,
            lane: String::new(),
            device,
            start_ms,
            end_ms,
        }
    }

    fn k(s: Span) -> (String, Span) {
        ("sq 64".into(), s)
    }

    fn jobs(ids: &[u64]) -> HashSet<u64> {
        ids.iter().copied().collect()
    }

    fn stage(r: &Report, stage: Stage) -> &StageReport {
        r.stages.iter().find(|s| s.stage.stage == stage).unwrap()
    }

    #[test]
    fn a_span_looking_alone_waits_for_the_jobs_in_flight_to_end() {
        let mut load = Load::new(1, 2, 1);
        // Job 1's witness ends while job 2 is in flight: alone so far.
        load.add(
            vec![k(span(1, Stage::Witness, None, 0.0, 100.0))],
            &jobs(&[1, 2]),
            110.0,
        );
        // Job 1 ends, job 2 goes on: a stage of job 2 may have overlapped.
        load.add(vec![], &jobs(&[2]), 200.0);
        assert!(load.report(200.0).stages.is_empty(), "judged too early");
        // Job 2 ends: its spans may still be on their way until the next tick.
        load.add(vec![], &jobs(&[]), 300.0);
        assert!(load.report(300.0).stages.is_empty(), "judged too early");
        load.add(vec![], &jobs(&[]), 400.0);
        let r = load.report(400.0);
        let w = stage(&r, Stage::Witness);
        assert!((w.alone_s - 0.1).abs() < 1e-12);
        assert_eq!((w.median_s, w.inflation, w.samples), (None, None, 0));
        assert!(load.pending.is_empty());
    }

    #[test]
    fn an_overlapping_span_settles_a_waiting_one_at_once() {
        let mut load = Load::new(1, 2, 1);
        load.add(
            vec![k(span(1, Stage::Witness, None, 0.0, 100.0))],
            &jobs(&[]),
            110.0,
        );
        load.add(vec![], &jobs(&[]), 200.0);
        // Job 3's witness looks alone until job 4's arrives, overlapping
        // it: both are under load then, though job 4 is still in flight.
        load.add(
            vec![k(span(3, Stage::Witness, None, 500.0, 600.0))],
            &jobs(&[3, 4]),
            610.0,
        );
        load.add(
            vec![k(span(4, Stage::Witness, None, 550.0, 900.0))],
            &jobs(&[4]),
            950.0,
        );
        assert!(load.pending.is_empty());
        // 0.1 s and 0.35 s under load: median 0.35 s (nearest rank), 3.5×.
        let r = load.report(950.0);
        let w = stage(&r, Stage::Witness);
        assert!((w.alone_s - 0.1).abs() < 1e-12);
        assert_eq!(w.samples, 2);
        assert!((w.inflation.unwrap() - 3.5).abs() < 1e-9, "{w:?}");
    }

    #[test]
    fn spans_of_unknown_jobs_count_as_load_but_get_no_samples() {
        let mut load = Load::new(1, 1, 1);
        load.add(
            vec![
                ("".into(), span(1, Stage::Witness, None, 0.0, 100.0)),
                k(span(2, Stage::Witness, None, 200.0, 300.0)),
                k(span(3, Stage::Witness, None, 50.0, 60.0)),
            ],
            &jobs(&[]),
            310.0,
        );
        load.add(vec![], &jobs(&[]), 320.0);
        let r = load.report(320.0);
        assert_eq!(r.stages.len(), 1);
        let w = stage(&r, Stage::Witness);
        // Job 2 ran alone; job 3 overlapped the unknown job 1.
        assert!((w.alone_s - 0.1).abs() < 1e-12);
        assert_eq!(w.samples, 1);
        assert!((w.inflation.unwrap() - 0.1).abs() < 1e-9);
    }

    #[test]
    fn the_window_gives_busy_ratios_floors_and_the_bound() {
        // Two devices, four cores, SpMV on two threads.
        let mut load = Load::new(2, 4, 2);
        let now = 100_000.0;
        let mut spans = vec![];
        // Before the window: left out (though it would raise every figure).
        spans.push(k(span(9, Stage::Msm, Some(0), 0.0, 30_000.0)));
        spans.push(k(span(9, Stage::Assemble, None, 30_000.0, 30_001.0)));
        // Four partitions in the window, two on each device: 2 s witness,
        // 0.5 s host SpMV and 1 s of device stages each.
        for p in 0..4u64 {
            let t = 50_000.0 + p as f64 * 10_000.0;
            spans.push(k(span(p, Stage::Witness, None, t, t + 2000.0)));
            spans.push(k(span(p, Stage::Spmv, None, t + 2000.0, t + 2500.0)));
            spans.push(k(span(
                p,
                Stage::Msm,
                Some(p as usize % 2),
                t + 2500.0,
                t + 3500.0,
            )));
            spans.push(k(span(p, Stage::Assemble, None, t + 3500.0, t + 3501.0)));
        }
        load.add(spans, &jobs(&[]), now);
        let r = load.report(now);
        assert_eq!(r.partitions, 4);
        assert_eq!(r.window_s, WINDOW_S);
        for ratio in &r.device_busy_ratio {
            assert!((ratio - 2.0 / 60.0).abs() < 1e-9, "{r:?}");
        }
        // Device: 4 s busy / 4 partitions / 2 devices. Host: (2 + 0.5 × 2)
        // CPU-s per partition / 4 cores.
        assert!((r.device_floor_s.unwrap() - 0.5).abs() < 1e-9);
        assert!((r.host_floor_s.unwrap() - 0.75).abs() < 1e-9);
        assert_eq!(r.bound, Some("host"));
        // Once judged, the witnesses' baseline (2 s) stands for their CPU
        // time: the same here, as they ran alone.
        load.add(vec![], &jobs(&[]), now);
        assert!((load.report(now).host_floor_s.unwrap() - 0.75).abs() < 1e-9);
        // A minute later nothing is in the window: no floors, no bound, idle devices.
        let later = load.report(now + 61_000.0);
        assert_eq!((later.partitions, later.bound), (0, None));
        assert_eq!(later.device_busy_ratio, vec![0.0, 0.0]);
        assert_eq!(later.host_floor_s, None);
    }

    #[test]
    fn the_host_floor_counts_a_baseline_not_the_contended_wall_time() {
        let mut load = Load::new(1, 1, 1);
        // A lone partition: 1 s witness, 0.5 s on the device.
        load.add(
            vec![
                k(span(1, Stage::Witness, None, 0.0, 1000.0)),
                k(span(1, Stage::Msm, Some(0), 1000.0, 1500.0)),
                k(span(1, Stage::Assemble, None, 1500.0, 1501.0)),
            ],
            &jobs(&[]),
            1600.0,
        );
        load.add(vec![], &jobs(&[]), 1700.0);
        let w = stage(&load.report(1700.0), Stage::Witness).clone();
        assert_eq!((w.median_s, w.inflation, w.samples), (None, None, 0));
        // Two witnesses fighting over the one core: 2 s each on the wall.
        load.add(
            vec![
                k(span(2, Stage::Witness, None, 2000.0, 4000.0)),
                k(span(3, Stage::Witness, None, 2000.0, 4000.0)),
                k(span(2, Stage::Msm, Some(0), 4000.0, 4500.0)),
                k(span(2, Stage::Assemble, None, 4500.0, 4501.0)),
                k(span(3, Stage::Msm, Some(0), 4500.0, 5000.0)),
                k(span(3, Stage::Assemble, None, 5000.0, 5001.0)),
            ],
            &jobs(&[]),
            5100.0,
        );
        load.add(vec![], &jobs(&[]), 5200.0);
        let r = load.report(5200.0);
        // 3 partitions: 3 s of witness CPU (the baseline each), 1.5 s of device.
        assert!((r.host_floor_s.unwrap() - 1.0).abs() < 1e-9, "{r:?}");
        assert!((r.device_floor_s.unwrap() - 0.5).abs() < 1e-9, "{r:?}");
        assert_eq!(r.bound, Some("host"));
        assert!((stage(&r, Stage::Witness).inflation.unwrap() - 2.0).abs() < 1e-9);
    }
}
