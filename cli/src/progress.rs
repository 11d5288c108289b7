//! The CLI's [`Progress`]: a bar with an ETA when stderr is a terminal,
//! plain lines (every 10 %) otherwise, so logs stay readable.

use indicatif::{ProgressBar, ProgressStyle};
use std::io::IsTerminal;
use std::sync::Mutex;
use std::time::Instant;
use zkpipe_core::util::progress::Progress;

/// Draws progress on stderr.
#[derive(Debug)]
pub struct CliProgress {
    terminal: bool,
    state: Mutex<Option<Work>>,
}

#[derive(Debug)]
struct Work {
    what: String,
    total: u64,
    done: u64,
    /// Tenths of the total reported so far (plain lines).
    reported: u64,
    started: Instant,
    bar: Option<ProgressBar>,
}

impl CliProgress {
    /// Bars when stderr is a terminal, else plain lines.
    pub fn new() -> Self {
        CliProgress {
            terminal: std::io::stderr().is_terminal(),
            state: Mutex::new(None),
        }
    }
}

impl Progress for CliProgress {
    fn note(&self, message: &str) {
        match self
            .state
            .lock()
            .unwrap()
            .as_ref()
            .and_then(|w| w.bar.as_ref())
        {
            Some(bar) => bar.suspend(|| eprintln!("{message}")),
            None => eprintln!("{message}"),
        }
    }

    fn begin(&self, what: &str, total: u64) {
        let bar = if self.terminal {
            let bar = if total == 0 {
                ProgressBar::new_spinner()
            } else {
                ProgressBar::new(total)
            };
            let template = if total == 0 {
                "{spinner} {msg} {elapsed}"
            } else {
                "{msg} {bar:30} {percent:>3}% {elapsed} (ETA {eta})"
            };
            bar.set_style(ProgressStyle::with_template(template).expect("valid template"));
            bar.set_message(what.to_string());
            bar.enable_steady_tick(std::time::Duration::from_millis(200));
            Some(bar)
        } else {
            eprintln!("{what} …");
            None
        };
        *self.state.lock().unwrap() = Some(Work {
            what: what.to_string(),
            total,
            done: 0,
            reported: 0,
            started: Instant::now(),
            bar,
        });
    }

    fn advance(&self, units: u64) {
        let mut state = self.state.lock().unwrap();
        let Some(w) = state.as_mut() else { return };
        w.done = w.done.saturating_add(units);
        if let Some(bar) = &w.bar {
            bar.inc(units);
            return;
        }
        if let Some(tenths) = (w.done.min(w.total) * 10).checked_div(w.total)
            && tenths > w.reported
            && tenths < 10
        {
            w.reported = tenths;
            let elapsed = w.started.elapsed().as_secs_f64();
            let eta = elapsed * (w.total - w.done.min(w.total)) as f64 / w.done.max(1) as f64;
            eprintln!(
                "{}: {}% after {elapsed:.0} s, about {eta:.0} s left",
                w.what,
                tenths * 10
            );
        }
    }

    fn end(&self) {
        let Some(w) = self.state.lock().unwrap().take() else {
            return;
        };
        match w.bar {
            Some(bar) => bar.finish_and_clear(),
            None => eprintln!("{}: done in {:.1?}", w.what, w.started.elapsed()),
        }
    }
}
