//! The CLI's [`Progress`]: a bar with an ETA when stderr is a terminal,
//! else core's plain [`Lines`] (quiet for short phases, at most one line
//! per 10 %), so logs stay readable.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use zkpipe_core::util::progress::{Lines, Progress};

/// Draws progress on stderr.
pub struct CliProgress {
    /// The bar of the phase under way, on a terminal.
    bar: Option<Mutex<Option<ProgressBar>>>,
    lines: Lines<fn(&str)>,
}

fn to_stderr(line: &str) {
    eprintln!("{line}");
}

impl CliProgress {
    /// Bars when stderr is a terminal, else plain lines.
    pub fn new() -> Self {
        CliProgress {
            bar: std::io::stderr().is_terminal().then(|| Mutex::new(None)),
            lines: Lines::new(to_stderr),
        }
    }
}

impl Progress for CliProgress {
    fn note(&self, message: &str) {
        match self.bar.as_ref().and_then(|b| b.lock().unwrap().clone()) {
            Some(bar) => bar.suspend(|| eprintln!("{message}")),
            None => eprintln!("{message}"),
        }
    }

    fn begin(&self, what: &str, total: u64) {
        let Some(slot) = &self.bar else {
            return self.lines.begin(what, total);
        };
        let (bar, template) = match total {
            0 => (ProgressBar::new_spinner(), "{spinner} {msg} {elapsed}"),
            _ => (
                ProgressBar::new(total),
                "{msg} {bar:30} {percent:>3}% {elapsed} (ETA {eta})",
            ),
        };
        bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
        bar.set_message(what.to_string());
        bar.enable_steady_tick(std::time::Duration::from_millis(200));
        *slot.lock().unwrap() = Some(bar);
    }

    fn advance(&self, units: u64) {
        match &self.bar {
            Some(slot) => slot.lock().unwrap().iter().for_each(|b| b.inc(units)),
            None => self.lines.advance(units),
        }
    }

    fn end(&self) {
        match &self.bar {
            Some(slot) => slot
                .lock()
                .unwrap()
                .take()
                .iter()
                .for_each(|b| b.finish_and_clear()),
            None => self.lines.end(),
        }
    }
}
