//! [`WitnessCs`]: values only.

use std::ops::Range;

use blstrs::Scalar;
use ff::Field;

use super::{Split, Synthesis, Terms};
use crate::Error;
use crate::r1cs::{Block, Witness, WitnessPiece, to_fr};

/// Computes values only: the per-proof synthesis. Carried variables and a
/// split are for circuits synthesised piece by piece.
#[derive(Debug)]
pub struct WitnessCs {
    pub(super) inputs: Vec<Scalar>,
    pub(super) aux: Vec<Scalar>,
    carrying: bool,
    carried_inputs: Vec<Range<usize>>,
    carried_aux: Vec<Range<usize>>,
    /// Looked for only by [`WitnessCs::split_at`]'s: otherwise names are
    /// never built.
    split: Option<Split>,
}

impl Default for WitnessCs {
    fn default() -> Self {
        Self::new()
    }
}

impl WitnessCs {
    /// An empty system (input 0, the constant one, only).
    pub fn new() -> Self {
        Self::with_capacity(1, 0)
    }

    /// An empty system with room for `num_inputs` inputs (the one
    /// included) and `num_aux` aux variables: growing the vectors costs
    /// copies of everything so far.
    pub fn with_capacity(num_inputs: usize, num_aux: usize) -> Self {
        let mut inputs = Vec::with_capacity(num_inputs.max(1));
        inputs.push(Scalar::ONE);
        WitnessCs {
            inputs,
            aux: Vec::with_capacity(num_aux),
            carrying: false,
            carried_inputs: vec![],
            carried_aux: vec![],
            split: None,
        }
    }

    /// An empty system for a circuit cut down to one block of its
    /// repeated part, which begins at the first top-level namespace whose
    /// name starts with `prefix` ([`WitnessCs::into_block`]).
    pub fn split_at(prefix: &str) -> Self {
        WitnessCs {
            split: Some(Split::new(prefix)),
            ..Self::new()
        }
    }

    /// Runs `f` with every variable it allocates marked carried: there for
    /// this piece's gadgets, left out of the witness (an earlier piece
    /// allocates it).
    pub fn carried<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let (i0, a0) = (self.inputs.len(), self.aux.len());
        let outer = std::mem::replace(&mut self.carrying, true);
        let r = f(self);
        self.carrying = outer;
        if !outer {
            self.carried_inputs.push(i0..self.inputs.len());
            self.carried_aux.push(a0..self.aux.len());
        }
        r
    }

    /// The values allocated, with the carried ones marked.
    pub fn finish(self) -> WitnessPiece {
        let mut piece = WitnessPiece::new(self.inputs, self.aux);
        for r in self.carried_inputs {
            piece.carry_inputs(r);
        }
        for r in self.carried_aux {
            piece.carry_aux(r);
        }
        piece
    }

    /// The witness: the values allocated, carried ones left out.
    pub fn into_witness(self) -> Witness {
        if self.carried_inputs.is_empty() && self.carried_aux.is_empty() {
            return Witness {
                inputs: to_fr(self.inputs),
                aux: to_fr(self.aux),
            };
        }
        WitnessPiece::concat(&[self.finish()])
    }

    /// The block this one-block circuit was synthesised with
    /// ([`WitnessCs::split_at`]), its shared part first.
    ///
    /// # Errors
    /// [`Error::Failed`] when the circuit has no namespace of the prefix,
    /// or the system was made without one.
    pub fn into_block(mut self) -> Result<Block, Error> {
        let start = match self.split.take() {
            Some(split) => split.at()?,
            None => {
                return Err(Error::Failed(
                    "a witness without a split has no block".into(),
                ));
            }
        };
        Ok(Block::new(self.finish(), start))
    }
}

impl Synthesis for WitnessCs {
    #[inline]
    fn aux<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        self.aux.push(value()?);
        Ok(self.aux.len() - 1)
    }

    #[inline]
    fn input<E>(&mut self, value: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        self.inputs.push(value()?);
        Ok(self.inputs.len() - 1)
    }

    #[inline]
    fn enforce<L: Terms>(&mut self, _: impl FnOnce() -> [L; 3]) {}

    #[inline]
    fn push_namespace<N: Into<String>>(&mut self, name: impl FnOnce() -> N) {
        if let Some(split) = &mut self.split {
            split.push(name, (self.inputs.len(), self.aux.len()));
        }
    }

    #[inline]
    fn pop_namespace(&mut self) {
        if let Some(split) = &mut self.split {
            split.pop();
        }
    }
}
