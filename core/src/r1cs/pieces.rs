//! Witness-only synthesis of a circuit made of independent pieces, each on
//! its own thread.
//!
//! In witness mode constraints are ignored, so variable indices never
//! matter: a piece can synthesize into a constraint system of its own, and
//! the pieces' values, concatenated in order, are exactly what one
//! sequential synthesis allocates. A piece that needs variables an earlier
//! piece allocates (a hash's chaining state, the bits it reads) allocates
//! them again from values computed up front, as *carried* variables
//! ([`PieceCs::carried`]): they exist for its gadgets and are left out of
//! the witness.

use std::ops::Range;

use bellpepper_core::{ConstraintSystem, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar;
use rayon::prelude::*;

use super::record::{WitnessCs, synthesis};
use super::{Witness, fr};
use crate::Error;
use crate::types::Fr;

/// The values one piece allocated, in order, and which of them are carried.
///
/// Like every constraint system's, a piece's input 0 is the constant one;
/// it is never part of the piece's share (the witness has one, first).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WitnessPiece {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    carried_inputs: Vec<Range<usize>>,
    carried_aux: Vec<Range<usize>>,
}

impl WitnessPiece {
    /// A piece from its values: `inputs[0]` is the constant one.
    pub fn new(inputs: Vec<Scalar>, aux: Vec<Scalar>) -> Self {
        WitnessPiece {
            inputs,
            aux,
            carried_inputs: vec![],
            carried_aux: vec![],
        }
    }

    /// The inputs allocated, carried ones included (`[0]` is the one).
    pub fn inputs(&self) -> &[Scalar] {
        &self.inputs
    }

    /// The aux variables allocated, carried ones included.
    pub fn aux(&self) -> &[Scalar] {
        &self.aux
    }

    /// Marks inputs `r` as carried (left out of the witness).
    pub fn carry_inputs(&mut self, r: Range<usize>) {
        self.carried_inputs.push(r);
    }

    /// Marks aux variables `r` as carried.
    pub fn carry_aux(&mut self, r: Range<usize>) {
        self.carried_aux.push(r);
    }

    /// The witness of the pieces in order: the constant one, then each
    /// piece's inputs past its own one, and each piece's aux, carried
    /// variables left out.
    pub fn concat(pieces: &[WitnessPiece]) -> Witness {
        let input_runs: Vec<Vec<Range<usize>>> = pieces
            .iter()
            .map(|p| kept(p.inputs.len(), &p.carried_inputs, 1))
            .collect();
        let aux_runs: Vec<Vec<Range<usize>>> = pieces
            .iter()
            .map(|p| kept(p.aux.len(), &p.carried_aux, 0))
            .collect();
        let mut inputs = Vec::with_capacity(1 + input_runs.iter().map(|r| total(r)).sum::<usize>());
        inputs.push(Fr::one());
        for (p, runs) in pieces.iter().zip(&input_runs) {
            for r in runs {
                inputs.extend(p.inputs[r.clone()].iter().copied().map(fr));
            }
        }
        // The aux vector is the witness's bulk: each piece fills its own
        // stretch of it, in parallel, written once (no zeroing first).
        let n = aux_runs.iter().map(|r| total(r)).sum();
        let mut aux: Vec<Fr> = Vec::with_capacity(n);
        let mut rest = &mut aux.spare_capacity_mut()[..n];
        let mut jobs = Vec::with_capacity(pieces.len());
        for (p, runs) in pieces.iter().zip(&aux_runs) {
            let (mine, tail) = rest.split_at_mut(total(runs));
            jobs.push((p, runs, mine));
            rest = tail;
        }
        jobs.into_par_iter().for_each(|(p, runs, mut out)| {
            for r in runs {
                let (head, tail) = out.split_at_mut(r.len());
                for (o, s) in head.iter_mut().zip(&p.aux[r.clone()]) {
                    o.write(fr(*s));
                }
                out = tail;
            }
        });
        // SAFETY: the runs partition the first `n` slots and every slot of
        // every run was written above.
        unsafe { aux.set_len(n) };
        Witness { inputs, aux }
    }
}

fn total(runs: &[Range<usize>]) -> usize {
    runs.iter().map(|r| r.len()).sum()
}

/// The runs of `0..len` from `from` on outside the `carried` ranges, in order.
fn kept(len: usize, carried: &[Range<usize>], from: usize) -> Vec<Range<usize>> {
    let mut cut: Vec<Range<usize>> = carried
        .iter()
        .map(|r| r.start.min(len)..r.end.min(len))
        .filter(|r| !r.is_empty())
        .collect();
    cut.sort_by_key(|r| r.start);
    let mut runs = vec![];
    let mut at = from.min(len);
    for r in cut {
        if r.start > at {
            runs.push(at..r.start);
        }
        at = at.max(r.end);
    }
    if at < len {
        runs.push(at..len);
    }
    runs
}

/// A witness-only constraint system for one piece of a circuit.
#[derive(Debug)]
pub struct PieceCs {
    cs: WitnessCs,
    carrying: bool,
    carried_inputs: Vec<Range<usize>>,
    carried_aux: Vec<Range<usize>>,
}

impl Default for PieceCs {
    fn default() -> Self {
        Self::new()
    }
}

impl PieceCs {
    /// An empty piece (input 0, the constant one, only).
    pub fn new() -> Self {
        Self::with_capacity(1, 0)
    }

    /// An empty piece with room for `num_inputs` inputs (the one included)
    /// and `num_aux` aux variables.
    pub fn with_capacity(num_inputs: usize, num_aux: usize) -> Self {
        PieceCs {
            cs: WitnessCs::with_capacity(num_inputs, num_aux),
            carrying: false,
            carried_inputs: vec![],
            carried_aux: vec![],
        }
    }

    /// Runs `f` with every variable it allocates marked carried: there for
    /// this piece's gadgets, left out of the witness (an earlier piece
    /// allocates it).
    pub fn carried<R>(&mut self, f: impl FnOnce(&mut Self) -> R) -> R {
        let (i0, a0) = (self.cs.inputs.len(), self.cs.aux.len());
        let outer = std::mem::replace(&mut self.carrying, true);
        let r = f(self);
        self.carrying = outer;
        if !outer {
            self.carried_inputs.push(i0..self.cs.inputs.len());
            self.carried_aux.push(a0..self.cs.aux.len());
        }
        r
    }

    /// The values allocated, with the carried ones marked.
    pub fn finish(self) -> WitnessPiece {
        WitnessPiece {
            inputs: self.cs.inputs,
            aux: self.cs.aux,
            carried_inputs: self.carried_inputs,
            carried_aux: self.carried_aux,
        }
    }
}

/// Synthesizes each of `pieces` into its own [`PieceCs`] with
/// `synthesize`, on the current rayon pool, and concatenates them in order
/// ([`WitnessPiece::concat`]): the witness of the whole circuit when the
/// pieces, run one after the other, allocate what it allocates.
///
/// # Errors
/// [`Error::Synthesis`] when a piece fails (the first in order).
pub fn witness_in_pieces<P, F>(pieces: Vec<P>, synthesize: F) -> Result<Witness, Error>
where
    P: Send,
    F: Fn(P, &mut PieceCs) -> Result<(), SynthesisError> + Sync,
{
    let done = pieces
        .into_par_iter()
        .map(|p| {
            let mut cs = PieceCs::new();
            synthesize(p, &mut cs).map_err(synthesis)?;
            Ok(cs.finish())
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(WitnessPiece::concat(&done))
}

impl ConstraintSystem<Scalar> for PieceCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.cs.alloc(a, f)
    }

    fn alloc_input<F, A, AR>(&mut self, a: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.cs.alloc_input(a, f)
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.cs.extend_inputs(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.cs.extend_aux(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        self.cs.allocate_empty(aux_n, inputs_n)
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        self.cs.allocate_empty_inputs(n)
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        self.cs.allocate_empty_aux(n)
    }

    fn inputs_slice(&self) -> &[Scalar] {
        self.cs.inputs_slice()
    }

    fn aux_slice(&self) -> &[Scalar] {
        self.cs.aux_slice()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::Circuit;
    use ff::Field;

    /// Allocates `n` aux values `start, start + 1, …` and one input.
    fn run(cs: &mut impl ConstraintSystem<Scalar>, start: u64, n: u64) {
        for k in 0..n {
            cs.alloc(|| "x", || Ok(Scalar::from(start + k))).unwrap();
        }
        cs.alloc_input(|| "in", || Ok(Scalar::from(1000 + start)))
            .unwrap();
    }

    struct Whole;
    impl Circuit<Scalar> for Whole {
        fn synthesize<CS: ConstraintSystem<Scalar>>(
            self,
            cs: &mut CS,
        ) -> Result<(), SynthesisError> {
            for (s, n) in [(0, 3), (3, 0), (3, 5), (8, 1)] {
                run(cs, s, n);
            }
            Ok(())
        }
    }

    #[test]
    fn pieces_concatenate_to_the_sequential_witness() {
        let whole = Witness::generate(Whole).unwrap();
        let parts = witness_in_pieces(vec![(0, 3), (3, 0), (3, 5), (8, 1)], |(s, n), cs| {
            // Carried values before, between and after the piece's own.
            cs.carried(|cs| run(cs, 7777, 2));
            for k in 0..n {
                cs.alloc(|| "x", || Ok(Scalar::from(s + k)))?;
                cs.carried(|cs| cs.alloc(|| "c", || Ok(Scalar::from(9999))))?;
            }
            cs.alloc_input(|| "in", || Ok(Scalar::from(1000 + s)))?;
            cs.carried(|cs| cs.carried(|cs| run(cs, 5555, 1)));
            Ok(())
        })
        .unwrap();
        assert_eq!(parts, whole);
        assert_eq!(whole.aux.len(), 9);
        assert_eq!(whole.inputs.len(), 5);
    }

    #[test]
    fn a_missing_carry_changes_the_witness() {
        let whole = Witness::generate(Whole).unwrap();
        let parts = witness_in_pieces(vec![(0, 3), (3, 0), (3, 5), (8, 1)], |(s, n), cs| {
            run(cs, 7777, 1);
            run(cs, s, n);
            Ok(())
        })
        .unwrap();
        assert_ne!(parts, whole);
    }

    #[test]
    fn a_failing_piece_fails_the_witness() {
        let r = witness_in_pieces(vec![0, 1, 2], |p, cs| {
            cs.alloc(
                || "x",
                || {
                    if p == 1 {
                        Err(SynthesisError::AssignmentMissing)
                    } else {
                        Ok(Scalar::ONE)
                    }
                },
            )?;
            Ok(())
        });
        assert!(matches!(r, Err(Error::Synthesis(_))));
    }

    #[test]
    fn kept_runs() {
        assert_eq!(kept(10, &[], 0), vec![0..10]);
        assert_eq!(kept(10, &[], 1), vec![1..10]);
        assert_eq!(kept(10, &[5..7, 0..2, 6..8], 0), vec![2..5, 8..10]);
        assert_eq!(kept(10, &[3..30, 4..5], 1), [1..3, 3..3][..1]);
        assert_eq!(kept(0, &[0..1, 0..0], 1), []);
    }
}
