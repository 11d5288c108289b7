//! How long work reports itself. The library never prints: it tells a
//! [`Progress`], and each front end draws it (the CLI: a bar with an ETA on
//! a terminal, plain lines otherwise; a daemon: its log).

/// Where long work (setup, recording, a batch) reports notes and progress.
pub trait Progress: Sync {
    /// A one-line message worth telling a user (e.g. a broken cache entry
    /// moved aside, waiting for another process).
    fn note(&self, message: &str);
    /// Work named `what`, of `total` units, begins.
    fn begin(&self, _what: &str, _total: u64) {}
    /// `units` more are done.
    fn advance(&self, _units: u64) {}
    /// The work begun last is done.
    fn end(&self) {}
}

/// Reports nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Silent;

impl Progress for Silent {
    fn note(&self, _message: &str) {}
}

/// Phases shorter than this print nothing in [`Lines`].
pub const QUIET_UNDER: std::time::Duration = std::time::Duration::from_secs(2);

/// Progress as plain lines through `sink` (a log, a non-terminal stderr):
/// a phase says nothing until it has run [`QUIET_UNDER`], then names
/// itself, then at most one line per 10 % and one when it ends. Notes pass
/// through. [`Lines::now`] tells where the current phase is (a status
/// reply).
pub struct Lines<S: Fn(&str) + Sync> {
    sink: S,
    phase: std::sync::Mutex<Option<Phase>>,
}

/// Where a phase stands.
#[derive(Clone, Debug, PartialEq)]
pub struct Phase {
    pub what: String,
    /// Units done, of `total` (0: unknown).
    pub done: u64,
    pub total: u64,
    pub started: std::time::Instant,
    /// Tenths told so far; `None` before the phase named itself.
    told: Option<u64>,
}

impl<S: Fn(&str) + Sync> std::fmt::Debug for Lines<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lines").field("phase", &self.now()).finish()
    }
}

impl<S: Fn(&str) + Sync> Lines<S> {
    /// Lines through `sink`.
    pub fn new(sink: S) -> Self {
        Lines {
            sink,
            phase: std::sync::Mutex::new(None),
        }
    }

    /// The phase under way, if any.
    pub fn now(&self) -> Option<Phase> {
        self.phase.lock().unwrap().clone()
    }
}

impl<S: Fn(&str) + Sync> Progress for Lines<S> {
    fn note(&self, message: &str) {
        (self.sink)(message);
    }

    fn begin(&self, what: &str, total: u64) {
        *self.phase.lock().unwrap() = Some(Phase {
            what: what.to_string(),
            done: 0,
            total,
            started: std::time::Instant::now(),
            told: None,
        });
    }

    fn advance(&self, units: u64) {
        let mut phase = self.phase.lock().unwrap();
        let Some(p) = phase.as_mut() else { return };
        p.done = p.done.saturating_add(units);
        let elapsed = p.started.elapsed();
        if elapsed < QUIET_UNDER {
            return;
        }
        let tenths = (p.done.min(p.total) * 10).checked_div(p.total).unwrap_or(0);
        match p.told {
            None => (self.sink)(&format!("{} …", p.what)),
            Some(told) if tenths > told && tenths < 10 => {
                let s = elapsed.as_secs_f64();
                let left = s * (p.total - p.done.min(p.total)) as f64 / p.done.max(1) as f64;
                (self.sink)(&format!(
                    "{}: {}% after {s:.0} s, about {left:.0} s left",
                    p.what,
                    tenths * 10
                ));
            }
            Some(_) => return,
        }
        p.told = Some(tenths);
    }

    fn end(&self) {
        let Some(p) = self.phase.lock().unwrap().take() else {
            return;
        };
        if p.started.elapsed() >= QUIET_UNDER {
            (self.sink)(&format!("{}: done in {:.1?}", p.what, p.started.elapsed()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    /// A phase of `total` units advanced one at a time, its clock moved
    /// `elapsed` back: the lines it printed.
    fn run(total: u64, elapsed: std::time::Duration) -> Vec<String> {
        let lines = Mutex::new(Vec::new());
        let p = Lines::new(|l: &str| lines.lock().unwrap().push(l.to_string()));
        p.begin("setup", total);
        p.phase.lock().unwrap().as_mut().unwrap().started -= elapsed;
        (0..total).for_each(|_| p.advance(1));
        assert_eq!(p.now().map(|ph| ph.done), Some(total));
        p.end();
        lines.into_inner().unwrap()
    }

    #[test]
    fn a_short_phase_prints_nothing() {
        assert!(run(1000, std::time::Duration::ZERO).is_empty());
    }

    #[test]
    fn a_long_phase_names_itself_then_at_most_one_line_per_tenth() {
        let lines = run(1000, std::time::Duration::from_secs(5));
        assert_eq!(lines[0], "setup …");
        assert!(lines[1].starts_with("setup: 10% after 5 s"), "{lines:?}");
        assert!(
            lines.last().unwrap().starts_with("setup: done in 5."),
            "{lines:?}"
        );
        assert_eq!(lines.len(), 1 + 9 + 1, "{lines:?}");
    }
}
