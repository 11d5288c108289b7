//! The `adaptive` policy: the hand-tuning of a proving daemon, made
//! automatic. It watches the engine's own stage times and moves the
//! limits of the classes of work while the engine runs:
//!
//! - devices busy (idle less than [`IDLE`] of the time) whose stages take
//!   longer than they do alone (inflation over [`INFLATED`]) are losing
//!   their host side to the work that feeds them; devices busy with
//!   partitions waiting for them while the witness inflates are fed by
//!   more syntheses than they need. Either way: a quarter fewer syntheses
//!   at once, and the count that did it becomes a roof that growth stays
//!   under;
//! - devices idle more than [`IDLE`] of the time with no partition waiting
//!   for them: more SpMVs if partitions wait for one, else more syntheses.
//!
//! A device stage's inflation matters only where the devices bound the
//! batch: on a host-bound batch fewer syntheses would cost more than the
//! devices gain.
//!
//! A stage's time alone is the fastest the policy has seen it take (a
//! batch's first partition runs alone). Each decision looks only at the
//! spans that ended since the last move, and waits for enough of them.

use std::collections::HashMap;
use std::sync::Mutex;

use super::engine::Span;
use super::metrics::device_busy_s;
use super::policy::{Limits, Observation, Policy};
use super::settings::Settings;
use crate::stage::Stage;

/// Time under load over time alone past which a stage counts as inflated.
pub const INFLATED: f64 = 1.3;
/// Share of the time the devices may idle, with nothing waiting for them,
/// before the host side is grown.
pub const IDLE: f64 = 0.15;

/// The `adaptive` policy (see the module's documentation).
#[derive(Debug)]
pub struct Adaptive {
    name: String,
    settings: Settings,
    tuning: Mutex<Tuning>,
}

#[derive(Debug, Default)]
struct Tuning {
    /// The fastest each stage has run, by (stage, on a device), in ms.
    alone: HashMap<(Stage, bool), f64>,
    /// Device stages that ended since the last move.
    since_move: usize,
    /// When the limits last moved (ms, the spans' clock).
    last_move_ms: f64,
    /// A synthesis count that inflated the device stages: growth stays under it.
    roof: Option<usize>,
}

impl Adaptive {
    /// The policy, starting from `settings` (counts left at 0 are sized
    /// for the machine by the engine: those are where it starts).
    pub fn new(name: &str, settings: Settings) -> Self {
        Adaptive {
            name: name.to_string(),
            settings,
            tuning: Mutex::new(Tuning::default()),
        }
    }
}

/// Median of `v` (0 for none).
fn median(mut v: Vec<f64>) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The largest inflation among the stages of `spans` on a device (or on
/// the host), against the fastest each has run; stages under a
/// millisecond alone are left out (their noise is their size).
fn inflation(spans: &[&Span], alone: &HashMap<(Stage, bool), f64>, on_device: bool) -> f64 {
    let mut by_stage: HashMap<Stage, Vec<f64>> = HashMap::new();
    for s in spans.iter().filter(|s| s.device.is_some() == on_device) {
        by_stage
            .entry(s.stage)
            .or_default()
            .push(s.end_ms - s.start_ms);
    }
    by_stage
        .into_iter()
        .filter_map(|(stage, times)| {
            let base = *alone.get(&(stage, on_device))?;
            (base >= 1.0).then(|| median(times) / base)
        })
        .fold(1.0, f64::max)
}

impl Policy for Adaptive {
    fn name(&self) -> &str {
        &self.name
    }

    fn settings(&self) -> &Settings {
        &self.settings
    }

    fn adjust(&self, seen: &Observation<'_>) -> Option<Limits> {
        let mut t = self.tuning.lock().unwrap_or_else(|e| e.into_inner());

        for s in seen.recent {
            let key = (s.stage, s.device.is_some());
            let ms = s.end_ms - s.start_ms;
            let best = t.alone.entry(key).or_insert(ms);
            *best = best.min(ms);
        }
        t.since_move += 1;
        let window = (2 * seen.devices).max(4);
        if t.since_move < window {
            return None;
        }
        let fresh: Vec<&Span> = seen
            .recent
            .iter()
            .filter(|s| s.start_ms >= t.last_move_ms && s.end_ms <= seen.now_ms)
            .collect();
        let span_ms = seen.now_ms - t.last_move_ms;
        if span_ms <= 0.0 {
            return None;
        }
        let owned: Vec<Span> = fresh.iter().map(|s| (*s).clone()).collect();
        let busy = device_busy_s(&owned).values().sum::<f64>() * 1e3
            / (span_ms * seen.devices.max(1) as f64);
        let device_inflation = inflation(&fresh, &t.alone, true);
        let witness: Vec<&Span> = fresh
            .iter()
            .copied()
            .filter(|s| s.stage == Stage::Witness)
            .collect();
        let witness_inflation = inflation(&witness, &t.alone, false);
        let device_bound = busy >= 1.0 - IDLE;
        let surplus = witness_inflation > INFLATED && seen.waiting_device > 0;
        let mut next = seen.limits;
        if device_bound && (device_inflation > INFLATED || surplus) && next.synthesis > 1 {
            t.roof = Some(next.synthesis);
            next.synthesis -= (next.synthesis / 4).max(1);
        } else if !device_bound && seen.waiting_device == 0 {
            if seen.waiting_spmv > 0 && next.spmv < seen.ceiling.spmv {
                next.spmv += 1;
            } else {
                let most = t.roof.map_or(seen.ceiling.synthesis, |r| r - 1);
                next.synthesis = (next.synthesis + (next.synthesis / 4).max(1)).min(most);
            }
        }
        if next == seen.limits {
            return None;
        }
        t.since_move = 0;
        t.last_move_ms = seen.now_ms;
        Some(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn span(stage: Stage, device: Option<usize>, start_ms: f64, end_ms: f64) -> Span {
        Span {
            job: 0,
            partition: 0,
            stage,
            lane: String::new(),
            device,
            start_ms,
            end_ms,
        }
    }

    const LIMITS: Limits = Limits {
        synthesis: 16,
        spmv: 2,
        lookahead: 2,
    };

    fn observe<'a>(recent: &'a [Span], now_ms: f64, waiting_spmv: usize) -> Observation<'a> {
        Observation {
            now_ms,
            recent,
            limits: LIMITS,
            ceiling: LIMITS,
            waiting_spmv,
            waiting_device: 0,
            devices: 1,
        }
    }

    /// Device stages of 10 ms alone at first, then `quotient_ms` each, one
    /// every `gap_ms`: the policy's answer once it has seen enough.
    fn answer(quotient_ms: f64, gap_ms: f64, waiting_spmv: usize) -> Option<Limits> {
        let p = Adaptive::new("adaptive", Settings::default());
        let mut spans = vec![span(Stage::Quotient, Some(0), 0.0, 10.0)];
        let mut out = None;
        for i in 1..=4 {
            let start = i as f64 * gap_ms;
            spans.push(span(Stage::Quotient, Some(0), start, start + quotient_ms));
            out = p.adjust(&observe(&spans, start + gap_ms, waiting_spmv));
        }
        out
    }

    #[test]
    fn inflated_stages_of_busy_devices_cut_the_syntheses_by_a_quarter() {
        let next = answer(30.0, 30.0, 0).expect("a move");
        assert_eq!(next.synthesis, 12);
        assert_eq!((next.spmv, next.lookahead), (2, 2));
        // Devices idle a quarter of the time: the host bounds the batch,
        // and fewer syntheses would cost more than the devices gain.
        assert_eq!(answer(30.0, 40.0, 0), None);
    }

    #[test]
    fn busy_devices_with_a_backlog_and_an_inflated_witness_cut_the_syntheses() {
        let p = Adaptive::new("adaptive", Settings::default());
        let mut spans = vec![span(Stage::Witness, None, 0.0, 10.0)];
        let mut next = None;
        for i in 0..4 {
            let s = i as f64 * 10.0;
            spans.push(span(Stage::Witness, None, s, s + 40.0));
            spans.push(span(Stage::Msm, Some(0), s, s + 10.0));
            let mut seen = observe(&spans, s + 10.0, 0);
            seen.waiting_device = 3;
            next = p.adjust(&seen);
        }
        assert_eq!(next.expect("a move").synthesis, 12);
    }

    #[test]
    fn idle_devices_grow_the_stage_that_holds_them_up() {
        // 10 ms of device work every 100 ms: idle 90 %, stages not inflated.
        // Partitions waiting for SpMV: more SpMV; none: more synthesis
        // (here at its ceiling already: nothing to move).
        assert_eq!(answer(10.0, 100.0, 3), None, "SpMV at its ceiling");
        let p = Adaptive::new("adaptive", Settings::default());
        let spans = [span(Stage::Quotient, Some(0), 0.0, 10.0)];
        let mut seen = observe(&spans, 100.0, 0);
        seen.limits.synthesis = 8;
        let mut next = None;
        for _ in 0..4 {
            next = p.adjust(&seen);
        }
        assert_eq!(next.expect("a move").synthesis, 10);
    }

    #[test]
    fn a_busy_device_with_stages_at_their_speed_is_left_alone() {
        assert_eq!(answer(10.0, 10.5, 0), None);
    }

    #[test]
    fn growth_stays_under_the_count_that_inflated_the_device() {
        let p = Adaptive::new("adaptive", Settings::default());
        let mut spans = vec![span(Stage::Msm, Some(0), 0.0, 10.0)];
        let mut limits = LIMITS;
        // Inflated on busy devices: 16 → 12, roof 16.
        for i in 1..=4 {
            let s = i as f64 * 30.0;
            spans.push(span(Stage::Msm, Some(0), s, s + 30.0));
            let mut seen = observe(&spans, s + 30.0, 0);
            seen.limits = limits;
            if let Some(next) = p.adjust(&seen) {
                limits = next;
            }
        }
        assert_eq!(limits.synthesis, 12);
        // Then idle devices, fast stages: growth to 15, never 16.
        for round in 0..10 {
            let s = 1000.0 + round as f64 * 1000.0;
            for k in 0..4 {
                let t = s + k as f64 * 200.0;
                spans.push(span(Stage::Msm, Some(0), t, t + 10.0));
                let mut seen = observe(&spans, t + 200.0, 0);
                seen.limits = limits;
                if let Some(next) = p.adjust(&seen) {
                    limits = next;
                }
            }
        }
        assert_eq!(limits.synthesis, 15);
    }
}
