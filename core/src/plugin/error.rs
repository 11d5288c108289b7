//! Errors crossing the seam: a code callers act on and a message for people.

use abi_stable::{
    StableAbi,
    std_types::{RResult, RString},
};
use std::fmt;

/// What kind of failure a backend reports. A `u32` rather than an enum so a
/// newer plugin's codes still read as *some* error on an older host.
#[repr(transparent)]
#[derive(StableAbi, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ErrorCode(pub u32);

impl ErrorCode {
    /// The backend does not implement this op (the caller may fall back).
    pub const UNSUPPORTED: ErrorCode = ErrorCode(1);
    /// Arguments the op cannot use (lengths, sizes, unknown handle, bad config).
    pub const INVALID_INPUT: ErrorCode = ErrorCode(2);
    /// Host or device memory ran out; retrying later may succeed.
    pub const OUT_OF_MEMORY: ErrorCode = ErrorCode(3);
    /// The device is missing, lost or its driver failed to start.
    pub const DEVICE_UNAVAILABLE: ErrorCode = ErrorCode(4);
    /// A bug or an unexpected failure inside the backend (including a caught panic).
    pub const INTERNAL: ErrorCode = ErrorCode(5);

    /// A short name for messages.
    pub fn name(self) -> &'static str {
        match self {
            Self::UNSUPPORTED => "unsupported",
            Self::INVALID_INPUT => "invalid input",
            Self::OUT_OF_MEMORY => "out of memory",
            Self::DEVICE_UNAVAILABLE => "device unavailable",
            Self::INTERNAL => "internal error",
            _ => "unknown error",
        }
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({})", self.name(), self.0)
    }
}

/// An error crossing the seam: a code the caller can act on and a message for people.
#[repr(C)]
#[derive(StableAbi, Clone, Debug, PartialEq, Eq)]
pub struct AccelError {
    /// What kind of failure.
    pub code: ErrorCode,
    /// What happened, in words.
    pub message: RString,
}

impl AccelError {
    /// An error with the given code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        AccelError {
            code,
            message: RString::from(message.into()),
        }
    }
    /// [`ErrorCode::UNSUPPORTED`] for the named op.
    pub fn unsupported(op: &str) -> Self {
        Self::new(
            ErrorCode::UNSUPPORTED,
            format!("{op} is not supported by this backend"),
        )
    }
    /// [`ErrorCode::INVALID_INPUT`].
    pub fn invalid_input(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::INVALID_INPUT, message)
    }
}

impl fmt::Display for AccelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code.name(), self.message)
    }
}

impl std::error::Error for AccelError {}

/// Result type of every op at the seam.
pub type AccelResult<T> = RResult<T, AccelError>;
