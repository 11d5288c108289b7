//! The engine's spans: [`Daemon::tick`] moves them into the load, the
//! metrics and the recent timeline the `Timeline` call reads.

use std::collections::{HashMap, HashSet, VecDeque};
use std::time::Duration;

use zkpipe_core::sched::Span;
use zkpipe_core::stage::Stage;

use super::Daemon;
use crate::proto;

/// The latest spans, numbered.
#[derive(Default)]
pub(super) struct Recent {
    spans: VecDeque<(u64, Span)>,
    next_seq: u64,
    dropped: u64,
}

/// Spans kept for the `Timeline` call.
const RECENT_SPANS: usize = 200_000;

impl Daemon {
    /// Moves the engine's new spans into the metrics and the recent
    /// timeline, and forgets ended jobs past their time to live.
    pub fn tick(&self) {
        let _one_at_a_time = self.ticking.lock().unwrap_or_else(|e| e.into_inner());
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
        // Each job's seconds per stage, and on a device.
        let mut per_job: HashMap<u64, ([f64; Stage::ALL.len()], f64)> = HashMap::new();
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
                let seconds = (s.end_ms - s.start_ms).max(0.0) / 1e3;
                let job = per_job.entry(s.job).or_default();
                job.0[Stage::ALL.iter().position(|&x| x == s.stage).unwrap_or(0)] += seconds;
                job.1 += if s.device.is_some() { seconds } else { 0.0 };
                tracing::debug!(
                    target: "zkpipe::stage",
                    job = s.job,
                    partition = s.partition,
                    stage = %s.stage,
                    lane = %s.lane,
                    device = s.device,
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
        for (id, (stages, device_s)) in per_job {
            if let Some(j) = table.jobs.get_mut(&id) {
                j.stage_s.iter_mut().zip(stages).for_each(|(t, s)| *t += s);
                j.device_s += device_s;
            }
        }
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
}
