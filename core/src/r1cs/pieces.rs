//! Witness-only synthesis of a circuit made of independent pieces, each on
//! its own thread.
//!
//! In witness mode constraints are ignored, so variable indices never
//! matter: a piece can synthesize into a constraint system of its own, and
//! the pieces' values, concatenated in order, are exactly what one
//! sequential synthesis allocates. A piece that needs variables an earlier
//! piece allocates (a hash's chaining state, the bits it reads) allocates
//! them again from values computed up front, as *carried* variables
//! ([`WitnessCs::carried`]): they exist for its gadgets and are left out of
//! the witness.
//!
//! A circuit whose blocks repeat after a shared part (a PoRep partition's
//! challenges) is cut the other way: each block synthesises with the
//! shared part ([`WitnessCs::split_at`]), and [`Block::join`] keeps the
//! shared part once.

use std::ops::Range;

use bellpepper_core::SynthesisError;
use blstrs::Scalar;
use rayon::prelude::*;

use super::record::synthesis;
use super::{Witness, WitnessCs, fr};
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

/// Synthesizes each of `pieces` into its own [`WitnessCs`] with
/// `synthesize`, on the current rayon pool, and concatenates them in order
/// ([`WitnessPiece::concat`]): the witness of the whole circuit when the
/// pieces, run one after the other, allocate what it allocates.
///
/// # Errors
/// [`Error::Synthesis`] when a piece fails (the first in order).
pub fn witness_in_pieces<P, F>(pieces: Vec<P>, synthesize: F) -> Result<Witness, Error>
where
    P: Send,
    F: Fn(P, &mut WitnessCs) -> Result<(), SynthesisError> + Sync,
{
    let done = pieces
        .into_par_iter()
        .map(|p| {
            let mut cs = WitnessCs::new();
            synthesize(p, &mut cs).map_err(synthesis)?;
            Ok(cs.finish())
        })
        .collect::<Result<Vec<_>, Error>>()?;
    Ok(WitnessPiece::concat(&done))
}

/// The witness of a circuit cut down to one block of its repeated part:
/// the part every block shares comes first, the block from `start` on.
#[derive(Debug)]
pub struct Block {
    piece: WitnessPiece,
    /// Where the block begins: (inputs, aux) allocated before it.
    start: (usize, usize),
}

impl Block {
    pub(crate) fn new(piece: WitnessPiece, start: (usize, usize)) -> Self {
        Block { piece, start }
    }

    /// The witness of the whole circuit from its blocks, in order: the
    /// shared part once, then each block's variables in turn, which is
    /// what synthesising the whole circuit on one thread allocates (the
    /// shared part of every block after the first is carried). `None`
    /// when the blocks disagree on the shared part.
    pub fn join(blocks: Vec<Block>) -> Option<Witness> {
        fn shared(b: &Block) -> (&[Scalar], &[Scalar]) {
            (&b.piece.inputs[..b.start.0], &b.piece.aux[..b.start.1])
        }
        let first = blocks.first()?;
        if blocks.iter().any(|b| shared(b) != shared(first)) {
            return None;
        }
        let pieces: Vec<WitnessPiece> = blocks
            .into_iter()
            .enumerate()
            .map(|(k, mut b)| {
                if k > 0 {
                    b.piece.carry_inputs(0..b.start.0);
                    b.piece.carry_aux(0..b.start.1);
                }
                b.piece
            })
            .collect();
        Some(WitnessPiece::concat(&pieces))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bellpepper_core::{Circuit, ConstraintSystem};
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

    fn s(v: u64) -> Scalar {
        Scalar::from(v)
    }

    /// A block of `shared` (2 inputs after the one, 3 aux) then its own.
    fn block(shared: u64, own: u64) -> Block {
        let inputs = vec![Scalar::ONE, s(shared), s(shared + 1), s(own)];
        let aux = vec![
            s(shared + 10),
            s(shared + 11),
            s(shared + 12),
            s(own + 20),
            s(own + 21),
        ];
        Block::new(WitnessPiece::new(inputs, aux), (3, 3))
    }

    #[test]
    fn blocks_join_into_the_shared_part_then_each_block() {
        let w = Block::join(vec![block(100, 1), block(100, 2), block(100, 3)]).unwrap();
        let f = |v: &[u64]| v.iter().map(|&v| fr(s(v))).collect::<Vec<_>>();
        assert_eq!(
            w.inputs,
            [vec![fr(Scalar::ONE)], f(&[100, 101, 1, 2, 3])].concat()
        );
        assert_eq!(w.aux, f(&[110, 111, 112, 21, 22, 22, 23, 23, 24]));
    }

    #[test]
    fn blocks_of_different_shared_parts_do_not_join() {
        assert!(Block::join(vec![block(100, 1), block(200, 2)]).is_none());
        assert!(Block::join(vec![]).is_none());
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
