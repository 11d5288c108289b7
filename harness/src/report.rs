//! Timing a benchmark and printing its table: the machine, the backend
//! and device, one row per size.

use serde::Serialize;
use std::time::{Duration, Instant};
use zkpipe_core::{Backend, Error};

use crate::machine::{Machine, machine};

/// One size's timing.
#[derive(Serialize, Debug, Clone)]
pub struct Row {
    pub log_size: u32,
    pub n: usize,
    pub runs: u32,
    pub median_ms: f64,
    pub min_ms: f64,
    pub max_ms: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline_median_ms: Option<f64>,
    /// (backend − baseline) / baseline, in percent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overhead_pct: Option<f64>,
}

/// One op's timings on one backend and device, a row per size.
#[derive(Serialize, Debug)]
pub struct Report {
    pub machine: Machine,
    pub backend: String,
    pub backend_version: String,
    pub device: String,
    pub op: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub baseline: Option<&'static str>,
    pub rows: Vec<Row>,
}

/// Milliseconds, as the reports give them.
pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// One contender in a timing: a closure that runs the op once.
pub type Contender<'a> = &'a mut dyn FnMut() -> Result<(), Error>;

/// Runs every contender once to warm up, then `runs` rounds in which each
/// runs once more, interleaved so that machine drift hits all alike.
/// Returns each contender's sorted run times. Sizes whose warm-up takes
/// over 5 s get at most 3 rounds.
pub fn measure(runs: u32, contenders: &mut [Contender<'_>]) -> Result<Vec<Vec<Duration>>, Error> {
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

pub(crate) fn row(log_size: u32, times: &[Duration], baseline: Option<&[Duration]>) -> Row {
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

impl Report {
    /// A report of `op` on `be`'s `device`, with no rows yet.
    ///
    /// # Errors
    /// The backend's, when `device` is not one of its devices.
    pub fn new(
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

    /// The lines above the table: machine, backend, op, column names.
    pub fn header(&self) -> String {
        let mut h = format!(
            "{}\nbackend: {} {} on {}\nop: {}{}\n{:>5} {:>10} {:>12} {:>12} {:>12} {:>5}",
            self.machine,
            self.backend,
            self.backend_version,
            self.device,
            self.op,
            self.baseline
                .map(|b| format!(" (baseline: {b})"))
                .unwrap_or_default(),
            "log",
            "n",
            "median ms",
            "min ms",
            "max ms",
            "runs"
        );
        if self.baseline.is_some() {
            h += &format!(" {:>12} {:>9}", "baseline ms", "overhead");
        }
        h
    }
}

impl Row {
    /// The row as the table under [`Report::header`] prints it.
    pub fn line(&self) -> String {
        let mut l = format!(
            "{:>5} {:>10} {:>12.3} {:>12.3} {:>12.3} {:>5}",
            self.log_size, self.n, self.median_ms, self.min_ms, self.max_ms, self.runs
        );
        if let (Some(b), Some(o)) = (self.baseline_median_ms, self.overhead_pct) {
            l += &format!(" {b:>12.3} {o:>+8.1}%");
        }
        l
    }
}

/// Where a bench tells what it measured as it goes: the header once, then
/// each row as it completes.
pub trait Sink {
    /// Before the first size.
    fn header(&mut self, report: &Report);
    /// After each size.
    fn row(&mut self, row: &Row);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_warms_up_then_interleaves_the_contenders() {
        let order = std::cell::RefCell::new(Vec::new());
        let mut a = || {
            order.borrow_mut().push('a');
            Ok(())
        };
        let mut b = || {
            order.borrow_mut().push('b');
            Ok(())
        };
        let times = measure(2, &mut [&mut a, &mut b]).unwrap();
        assert_eq!(order.into_inner(), ['a', 'b', 'a', 'b', 'a', 'b']);
        assert_eq!(times.len(), 2);
        assert!(times.iter().all(|t| t.len() == 2 && t[0] <= t[1]));
    }

    #[test]
    fn a_row_gives_the_median_and_the_overhead_against_the_baseline() {
        let d = Duration::from_millis;
        let r = row(4, &[d(1), d(2), d(9)], Some(&[d(1), d(1), d(1)]));
        assert_eq!((r.n, r.runs), (16, 3));
        assert_eq!((r.median_ms, r.min_ms, r.max_ms), (2.0, 1.0, 9.0));
        assert_eq!(r.overhead_pct, Some(100.0));
        assert!(r.line().ends_with("+100.0%"), "{}", r.line());
    }
}
