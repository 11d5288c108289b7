//! Fault injection for testing what sits above a backend: `fault=corrupt:N`
//! makes every Nth G1 MSM (of either curve) return a wrong point (the
//! generator added), and `fault=fail:N` makes it fail with an internal error; `fault=r1cs-oom`
//! refuses every `upload_r1cs` as out of memory (a device too small for the
//! matrices). A daemon's
//! verify-before-return and a scheduler's failure paths are shown to work
//! against a backend that really misbehaves, not a mock.

use std::sync::atomic::{AtomicU64, Ordering};

use zkpipe_core::plugin::{AccelError, ErrorCode};
use zkpipe_core::{G1Projective, bn254};

/// A G1 result the `corrupt` fault moves: by the curve's generator.
pub trait Corruptible {
    /// The point plus the generator.
    fn corrupted(&self) -> Self;
}

impl Corruptible for G1Projective {
    fn corrupted(&self) -> Self {
        self.add(&G1Projective::generator())
    }
}

impl Corruptible for bn254::G1Projective {
    fn corrupted(&self) -> Self {
        self.add(&bn254::G1Affine::generator().to_projective())
    }
}

/// What goes wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Corrupt,
    Fail,
}

/// A fault every `every` G1 MSMs (none when `every` is 0), or matrices
/// refused.
#[derive(Debug, Default)]
pub struct Faults {
    kind: Option<Kind>,
    every: u64,
    calls: AtomicU64,
    r1cs_oom: bool,
}

impl Faults {
    /// Parses `corrupt:N` or `fail:N` (N ≥ 1), or `r1cs-oom`.
    ///
    /// # Errors
    /// An invalid-input error naming the accepted forms.
    pub fn parse(value: &str) -> Result<Self, AccelError> {
        let bad = || {
            AccelError::invalid_input(format!(
                "fault must be `corrupt:N` or `fail:N` with N from 1, or `r1cs-oom`, not `{value}`"
            ))
        };
        if value == "r1cs-oom" {
            return Ok(Faults {
                r1cs_oom: true,
                ..Default::default()
            });
        }
        let (kind, every) = value.split_once(':').ok_or_else(bad)?;
        let kind = match kind {
            "corrupt" => Kind::Corrupt,
            "fail" => Kind::Fail,
            _ => return Err(bad()),
        };
        let every = every
            .parse::<u64>()
            .ok()
            .filter(|&n| n >= 1)
            .ok_or_else(bad)?;
        Ok(Faults {
            kind: Some(kind),
            every,
            ..Default::default()
        })
    }

    /// Refuses matrices under `r1cs-oom`.
    ///
    /// # Errors
    /// An out-of-memory error naming the fault.
    pub fn r1cs(&self) -> Result<(), AccelError> {
        match self.r1cs_oom {
            true => Err(AccelError::new(
                ErrorCode::OUT_OF_MEMORY,
                "injected: no room for the matrices (fault=r1cs-oom)",
            )),
            false => Ok(()),
        }
    }

    /// Passes a G1 MSM result through: unchanged, except on every Nth call.
    ///
    /// # Errors
    /// The injected failure under `fail:N`.
    pub fn g1<P: Corruptible>(&self, result: P) -> Result<P, AccelError> {
        let Some(kind) = self.kind else {
            return Ok(result);
        };
        let call = self.calls.fetch_add(1, Ordering::Relaxed) + 1;
        if !call.is_multiple_of(self.every) {
            return Ok(result);
        }
        match kind {
            Kind::Corrupt => Ok(result.corrupted()),
            Kind::Fail => Err(AccelError::new(
                ErrorCode::INTERNAL,
                format!(
                    "injected fault on G1 MSM call {call} (fault=fail:{})",
                    self.every
                ),
            )),
        }
    }
}
