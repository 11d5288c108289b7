//! The engine's error type (host side). Errors that cross the plugin seam are
//! [`crate::plugin::AccelError`] (code + message) and convert into [`Error::Backend`].

use crate::plugin::{AccelError, ErrorCode};
use std::path::PathBuf;

/// Everything that can go wrong in zkpipe outside a plugin.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Bytes that do not encode a value of the expected type.
    #[error("invalid encoding: {0}")]
    InvalidEncoding(String),
    /// A decoded point does not satisfy the curve equation.
    #[error("{0} is not on the curve")]
    NotOnCurve(String),
    /// A decoded point is on the curve but outside the prime-order subgroup.
    #[error("{0} is not in the prime-order subgroup")]
    NotInSubgroup(String),
    /// Caller-supplied arguments that cannot be used (sizes, settings).
    #[error("invalid input: {0}")]
    InvalidInput(String),
    /// A key, proof, file or request for another curve than the path it was
    /// given to.
    #[error("{what} is for {found}, not {expected}")]
    WrongCurve {
        /// What was given ("the verifying key", a file name, …).
        what: String,
        /// The curve it is for.
        found: crate::Curve,
        /// The curve the path serves.
        expected: crate::Curve,
    },
    /// A backend op failed; `code` says how (see [`ErrorCode`]).
    #[error("backend `{backend}`: {source}")]
    Backend {
        /// Name of the backend that reported the error.
        backend: String,
        /// The error as the plugin reported it.
        source: AccelError,
    },
    /// No loaded backend has this name.
    #[error("unknown backend `{name}`; loaded: [{loaded}]; searched: {searched}", loaded = .loaded.join(", "), searched = display_paths(.searched))]
    UnknownBackend {
        /// The name asked for.
        name: String,
        /// Names of the backends that did load.
        loaded: Vec<String>,
        /// Every folder the loader looked in.
        searched: Vec<PathBuf>,
    },
    /// A backend has no usable device of this index (no driver, no GPU, an
    /// index past its devices).
    #[error("backend `{backend}` cannot run on device {device}: {reason}")]
    NoDevice {
        /// The backend's name.
        backend: String,
        /// The device index asked for.
        device: u32,
        /// Why, in the backend's words where it gave any.
        reason: String,
    },
    /// Work that ran and failed: a proof that did not verify, requests
    /// that did not complete (not the caller's input).
    #[error("{0}")]
    Failed(String),
    /// A circuit failed to synthesize.
    #[error("circuit synthesis failed: {0}")]
    Synthesis(String),
    /// A cache file that cannot be used (corrupt, truncated, stale, other version).
    #[error("{path}: {reason}")]
    Cache {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// I/O on a file or folder.
    #[error("{path}: {source}")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl Error {
    /// The seam error code when this error came from a backend.
    pub fn code(&self) -> Option<ErrorCode> {
        match self {
            Error::Backend { source, .. } => Some(source.code),
            _ => None,
        }
    }

    /// Whether the caller's input is at fault: bytes that do not decode
    /// (malformed keys, proofs, public inputs, points off the curve or
    /// outside the subgroup), inputs that disagree or that the operation
    /// cannot take, or a named file that cannot be used as given (missing,
    /// unreadable, a folder, cut short). Otherwise the machine, a backend,
    /// a plugin, synthesis or a cache failed (a full disk among them).
    /// The CLI exits with 2 for the first kind and 1 for the second.
    pub fn blames_input(&self) -> bool {
        use std::io::ErrorKind;
        match self {
            Error::InvalidEncoding(_)
            | Error::NotOnCurve(_)
            | Error::NotInSubgroup(_)
            | Error::InvalidInput(_)
            | Error::WrongCurve { .. } => true,
            Error::Io { source, .. } => matches!(
                source.kind(),
                ErrorKind::NotFound
                    | ErrorKind::PermissionDenied
                    | ErrorKind::IsADirectory
                    | ErrorKind::NotADirectory
                    | ErrorKind::InvalidFilename
                    | ErrorKind::InvalidData
                    | ErrorKind::UnexpectedEof
            ),
            _ => false,
        }
    }
}

fn display_paths(paths: &[PathBuf]) -> String {
    if paths.is_empty() {
        return "(nothing)".into();
    }
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
