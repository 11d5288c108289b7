//! Timing a benchmark and printing its table: the machine, the backend
//! and device, one row per size.

use serde::Serialize;
use std::io::Write;
use std::time::{Duration, Instant};
use zkpipe_core::{Backend, Error};

use crate::host::{Machine, machine};

#[derive(Serialize)]
pub(super) struct Row {
    pub(super) log_size: u32,
    pub(super) n: usize,
    pub(super) runs: u32,
    pub(super) median_ms: f64,
    pub(super) min_ms: f64,
    pub(super) max_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) baseline_median_ms: Option<f64>,
    /// (backend − baseline) / baseline, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) overhead_pct: Option<f64>,
}

#[derive(Serialize)]
pub(super) struct Report {
    pub(super) machine: Machine,
    pub(super) backend: String,
    pub(super) backend_version: String,
    pub(super) device: String,
    pub(super) op: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(super) baseline: Option<&'static str>,
    pub(super) rows: Vec<Row>,
}

pub(super) fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One contender in a timing: a closure that runs the op once.
pub(super) type Contender<'a> = &'a mut dyn FnMut() -> Result<(), Error>;

/// Runs every contender once to warm up, then `runs` rounds in which each
/// runs once more, interleaved so that machine drift hits all alike.
/// Returns each contender's sorted run times. Sizes whose warm-up takes
/// over 5 s get at most 3 rounds.
pub(super) fn measure(
    runs: u32,
    contenders: &mut [Contender<'_>],
) -> Result<Vec<Vec<Duration>>, Error> {
    let t = Instant::now();
    for f in contenders.iter_mut() {
        f()?;
    }
    let runs = if t.elapsed() > Duration::from_secs(5) {
        runs.min(3)
    } else {
        runs
    };
    let mut times = vec![Vec::with_capacity(runs as usize); contenders.len()];
    for _ in 0..runs {
        for (f, ts) in contenders.iter_mut().zip(&mut times) {
            let t = Instant::now();
            f()?;
            ts.push(t.elapsed());
        }
    }
    times.iter_mut().for_each(|t| t.sort());
    Ok(times)
}

pub(super) fn row(log_size: u32, times: &[Duration], baseline: Option<&[Duration]>) -> Row {
    let median = |t: &[Duration]| ms(t[t.len() / 2]);
    let baseline_median_ms = baseline.map(median);
    Row {
        log_size,
        n: 1 << log_size,
        runs: times.len() as u32,
        median_ms: median(times),
        min_ms: ms(times[0]),
        max_ms: ms(*times.last().unwrap()),
        baseline_median_ms,
        overhead_pct: baseline_median_ms.map(|b| (median(times) - b) / b * 100.0),
    }
}

/// Prints rows as they complete (big sizes take minutes on a CPU).
pub(super) struct Printer {
    pub(super) json: bool,
    pub(super) header_done: bool,
}

impl Printer {
    pub(super) fn header(&mut self, r: &Report) {
        if self.json || self.header_done {
            return;
        }
        self.header_done = true;
        println!("{}", r.machine);
        println!(
            "backend: {} {} on {}",
            r.backend, r.backend_version, r.device
        );
        println!(
            "op: {}{}",
            r.op,
            r.baseline
                .map(|b| format!(" (baseline: {b})"))
                .unwrap_or_default()
        );
        print!(
            "{:>5} {:>10} {:>12} {:>12} {:>12} {:>5}",
            "log", "n", "median ms", "min ms", "max ms", "runs"
        );
        if r.baseline.is_some() {
            print!(" {:>12} {:>9}", "baseline ms", "overhead");
        }
        println!();
    }
    pub(super) fn row(&self, r: &Row) {
        if self.json {
            return;
        }
        print!(
            "{:>5} {:>10} {:>12.3} {:>12.3} {:>12.3} {:>5}",
            r.log_size, r.n, r.median_ms, r.min_ms, r.max_ms, r.runs
        );
        if let (Some(b), Some(o)) = (r.baseline_median_ms, r.overhead_pct) {
            print!(" {b:>12.3} {o:>+8.1}%");
        }
        println!();
        let _ = std::io::stdout().flush();
    }
}

pub(super) fn report_for(
    be: &Backend,
    device: u32,
    op: String,
    baseline: Option<&'static str>,
) -> Result<Report, Error> {
    let info = be.info();
    let dev = be.device_info(device)?;
    Ok(Report {
        machine: machine(),
        backend: be.name().to_string(),
        backend_version: info.version.to_string(),
        device: format!(
            "device {}: {} ({} compute units)",
            dev.id, dev.name, dev.compute_units
        ),
        op,
        baseline,
        rows: vec![],
    })
}
