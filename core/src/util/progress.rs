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
