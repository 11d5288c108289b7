//! [`RecordingCs`]: the constraints as matrices.

use blstrs::Scalar;

use super::{Synthesis, Terms, WitnessCs};
use crate::r1cs::{R1cs, R1csBuilder, Witness};

/// Records the constraints, and the values where asked to.
#[derive(Debug)]
pub struct RecordingCs {
    builder: R1csBuilder,
    values: Option<WitnessCs>,
}

impl Default for RecordingCs {
    fn default() -> Self {
        Self::new()
    }
}

impl RecordingCs {
    /// Records constraints only. Values are never asked for, so the blank
    /// circuits key generation is given record too.
    pub fn new() -> Self {
        RecordingCs {
            builder: R1csBuilder::new(),
            values: None,
        }
    }

    /// Records constraints and values.
    pub fn with_values() -> Self {
        RecordingCs {
            builder: R1csBuilder::new(),
            values: Some(WitnessCs::new()),
        }
    }

    /// The recorded system, and the witness where values were kept.
    pub fn finish(self) -> (R1cs, Option<Witness>) {
        (
            self.builder.finish(),
            self.values.map(WitnessCs::into_witness),
        )
    }
}

impl Synthesis for RecordingCs {
    fn aux<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        if let Some(w) = &mut self.values {
            w.aux(value)?;
        }
        Ok(self.builder.alloc_aux())
    }

    fn input<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        if let Some(w) = &mut self.values {
            w.input(value)?;
        }
        Ok(self.builder.alloc_input())
    }

    fn enforce<L: Terms>(&mut self, abc: impl FnOnce() -> [L; 3]) {
        let [a, b, c] = abc();
        self.builder.enforce(a.terms(), b.terms(), c.terms());
    }
}
