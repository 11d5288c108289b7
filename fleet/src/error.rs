//! The one error type of the queue.

use std::path::PathBuf;

/// What went wrong in a [`Queue`](crate::Queue) call.
///
/// [`Error::is_transient`] tells the errors worth retrying (the database
/// went away, is restarting, or a serialization conflict) from those that
/// will fail again (bad input, a lost lease, a conflicting request id).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The connection string is not a `postgres://` URL tokio-postgres accepts.
    #[error("bad queue URL: {0}")]
    InvalidUrl(String),
    /// A caller's argument was refused before reaching the database.
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// No connection to the database, or it was lost mid-call. Retry later.
    #[error("queue database unavailable: {0}")]
    Unavailable(String),
    /// The database answered with an error that retrying will not fix (a
    /// wrong password among them). Shown with the server's message and
    /// SQLSTATE.
    #[error("queue database error: {}", describe(.0))]
    Database(#[source] tokio_postgres::Error),
    /// A transient database error (deadlock, serialization failure,
    /// shutdown in progress). Retry later.
    #[error("queue database busy: {}", describe(.0))]
    Busy(#[source] tokio_postgres::Error),
    /// The database schema is newer than this build knows.
    #[error("queue schema: {0}")]
    Schema(String),
    /// `submit` with a request id already used for a different request.
    #[error("request id {request_id:?} is already job {job_id} with a different request")]
    RequestIdConflict {
        /// The request id given.
        request_id: String,
        /// The job that holds it.
        job_id: i64,
    },
    /// A payload above the inline limit with no spill folder configured, or
    /// above the hard limit.
    #[error("payload of {len} bytes is over the limit of {limit} bytes{hint}")]
    PayloadTooLarge {
        /// The payload's size.
        len: u64,
        /// The limit it broke.
        limit: u64,
        /// What to configure to allow it, if anything.
        hint: &'static str,
    },
    /// The job is no longer leased by this node at this attempt: its lease
    /// expired and was taken back, it was cancelled, or it already ended.
    /// Its result was not written.
    #[error("job {job_id}: lease lost (expired and requeued, cancelled or already ended)")]
    LeaseLost {
        /// The job.
        job_id: i64,
    },
    /// No job with this id.
    #[error("no job {0}")]
    NotFound(i64),
    /// A wait ran out before the job ended.
    #[error("job {0} did not end within the timeout")]
    Timeout(i64),
    /// Reading or writing a spilled payload failed.
    #[error("payload file {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// A spilled payload file does not match the digest in its job row.
    #[error("payload file {0}: contents do not match the job's digest")]
    PayloadCorrupt(PathBuf),
}

impl Error {
    /// Whether retrying the same call later may succeed.
    #[must_use]
    pub fn is_transient(&self) -> bool {
        matches!(self, Error::Unavailable(_) | Error::Busy(_))
    }

    /// Sorts a tokio-postgres error into a lost connection, a transient
    /// server condition, or a plain failure.
    pub(crate) fn from_pg(e: tokio_postgres::Error) -> Self {
        if e.is_closed() {
            return Error::Unavailable(describe(&e));
        }
        match e.code() {
            // No SQLSTATE: I/O, protocol or connect failure.
            None => Error::Unavailable(describe(&e)),
            Some(code) => {
                let c = code.code();
                // 08: connection exception; 57P0x: shutdown, crash, starting up;
                // 53: insufficient resources (too many connections).
                if c.starts_with("08") || c.starts_with("57P") || c.starts_with("53") {
                    Error::Unavailable(describe(&e))
                } else if c == "40001" || c == "40P01" || c == "55P03" {
                    Error::Busy(e)
                } else {
                    Error::Database(e)
                }
            }
        }
    }

    /// Whether the connection this error came from must be dropped.
    pub(crate) fn breaks_connection(&self) -> bool {
        matches!(self, Error::Unavailable(_))
    }
}

/// The error on one line: what the server said and its SQLSTATE (e.g.
/// `password authentication failed for user "x" (28P01)`) with any detail
/// and hint, else the client's error and its causes. tokio-postgres's own
/// text for a server error is only "db error".
pub(crate) fn describe(e: &tokio_postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        let mut s = format!("{} ({})", db.message(), db.code().code());
        if let Some(detail) = db.detail() {
            s.push_str("; detail: ");
            s.push_str(detail);
        }
        if let Some(hint) = db.hint() {
            s.push_str("; hint: ");
            s.push_str(hint);
        }
        return s;
    }
    let mut s = e.to_string();
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        let c = c.to_string();
        if !s.contains(&c) {
            s.push_str(": ");
            s.push_str(&c);
        }
        cause = c_source(cause);
    }
    s
}

fn c_source<'a>(
    e: Option<&'a (dyn std::error::Error + 'static)>,
) -> Option<&'a (dyn std::error::Error + 'static)> {
    e.and_then(std::error::Error::source)
}

/// Shorthand for this crate's results.
pub type Result<T, E = Error> = std::result::Result<T, E>;
