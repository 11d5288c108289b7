//! bellperson 0.27's constraint-system traits (bellpepper-core 0.2), which
//! Filecoin's circuits are written against, driving zkpipe's recorder and
//! witness: the same variable order as bellperson's own prover and key
//! generator, so keys and proofs are interchangeable with its.

use bellpepper_core_02::{
    Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable,
};
use blstrs::Scalar;
use ff::Field;
use zkpipe_core::Error;
use zkpipe_core::r1cs::{Column, R1cs, R1csBuilder, Witness, WitnessPiece, fr};

/// Records `circuit`'s constraints. Values are never asked for, so the
/// blank circuits filecoin-proofs builds for key generation record too.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails.
pub fn record<C: Circuit<Scalar>>(circuit: C) -> Result<R1cs, Error> {
    let mut cs = RecordingCs(R1csBuilder::new());
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    Ok(cs.0.finish())
}

/// Runs `circuit` in witness-only mode: values only, no constraints.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails (a missing assignment).
pub fn witness<C: Circuit<Scalar>>(circuit: C) -> Result<Witness, Error> {
    let mut cs = WitnessCs::new(None);
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    Ok(Witness {
        inputs: cs.inputs.into_iter().map(fr).collect(),
        aux: cs.aux.into_iter().map(fr).collect(),
    })
}

/// The witness of a circuit cut down to one block of its repeated part (a
/// PoRep partition with one of its challenges): the part every block shares
/// comes first, the block from `start` on.
#[derive(Debug)]
pub struct Block {
    piece: WitnessPiece,
    /// Where the block begins: (inputs, aux) allocated before it.
    start: (usize, usize),
}

/// Runs a one-block `circuit` witness-only; its block begins at the first
/// top-level namespace whose name starts with `block`.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails; [`Error::Failed`] when it
/// has no such namespace.
pub fn witness_block<C: Circuit<Scalar>>(circuit: C, block: &str) -> Result<Block, Error> {
    let mut cs = WitnessCs::new(Some(block));
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    let start = cs.block_start.ok_or_else(|| {
        Error::Failed(format!("the circuit has no top-level namespace `{block}…`"))
    })?;
    Ok(Block {
        piece: WitnessPiece::new(cs.inputs, cs.aux),
        start,
    })
}

/// The witness of the whole circuit from its blocks, in order: bellperson
/// allocates the shared part once, then each block's variables in turn, so
/// this is exactly what synthesising the whole circuit on one thread gives
/// (the shared part of every block after the first is carried:
/// [`WitnessPiece::concat`]). `None` when the blocks disagree on the shared
/// part (pieces of different vanilla proofs).
pub fn join(blocks: Vec<Block>) -> Option<Witness> {
    fn shared(b: &Block) -> (&[Scalar], &[Scalar]) {
        (&b.piece.inputs()[..b.start.0], &b.piece.aux()[..b.start.1])
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

/// What a circuit's R1CS holds, counted without recording it: its
/// constraints, variables and matrix entries, and the variables a key has
/// A and B query points for (bellperson's density).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Constraints (rows).
    pub constraints: u64,
    /// Public inputs, the constant one included.
    pub inputs: u64,
    /// Private variables.
    pub aux: u64,
    /// Entries of A, B and C together.
    pub nonzeros: u64,
    /// Aux variables that appear in A.
    pub a_aux: u64,
    /// Inputs that appear in B.
    pub b_inputs: u64,
    /// Aux variables that appear in B.
    pub b_aux: u64,
}

impl Counts {
    /// `self + times × other`, field by field.
    pub fn plus_times(self, other: Counts, times: u64) -> Counts {
        Counts {
            constraints: self.constraints + times * other.constraints,
            inputs: self.inputs + times * other.inputs,
            aux: self.aux + times * other.aux,
            nonzeros: self.nonzeros + times * other.nonzeros,
            a_aux: self.a_aux + times * other.a_aux,
            b_inputs: self.b_inputs + times * other.b_inputs,
            b_aux: self.b_aux + times * other.b_aux,
        }
    }
}

/// Counts a one-block `circuit` (see [`witness_block`]) split where its
/// block begins: `(shared part, block)`. A circuit of `k` such blocks counts
/// `shared.plus_times(block, k)`: each block's constraints reach the
/// shared variables as the first one's do. Values are never asked for.
///
/// # Errors
/// [`Error::Synthesis`] when the circuit fails; [`Error::Failed`] when it
/// has no such namespace.
pub fn count_block<C: Circuit<Scalar>>(circuit: C, block: &str) -> Result<(Counts, Counts), Error> {
    let mut cs = CountingCs {
        block,
        depth: 0,
        inputs: 1,
        aux: 0,
        at_block: None,
        constraints: [0; 2],
        nonzeros: [0; 2],
        a_aux: Vec::new(),
        b_aux: Vec::new(),
        b_inputs: vec![false],
    };
    circuit.synthesize(&mut cs).map_err(synthesis)?;
    let (start_inputs, start_aux) = cs.at_block.ok_or_else(|| {
        Error::Failed(format!("the circuit has no top-level namespace `{block}…`"))
    })?;
    let count = |v: &[bool], from: usize, to: usize| {
        v.get(from..to.min(v.len()))
            .map_or(0, |s| s.iter().filter(|&&b| b).count() as u64)
    };
    let (ai, aa) = (cs.inputs, cs.aux);
    let shared = Counts {
        constraints: cs.constraints[0],
        inputs: start_inputs as u64,
        aux: start_aux as u64,
        nonzeros: cs.nonzeros[0],
        a_aux: count(&cs.a_aux, 0, start_aux),
        b_inputs: count(&cs.b_inputs, 0, start_inputs),
        b_aux: count(&cs.b_aux, 0, start_aux),
    };
    let block = Counts {
        constraints: cs.constraints[1],
        inputs: (ai - start_inputs) as u64,
        aux: (aa - start_aux) as u64,
        nonzeros: cs.nonzeros[1],
        a_aux: count(&cs.a_aux, start_aux, aa),
        b_inputs: count(&cs.b_inputs, start_inputs, ai),
        b_aux: count(&cs.b_aux, start_aux, aa),
    };
    Ok((shared, block))
}

fn synthesis(e: SynthesisError) -> Error {
    Error::Synthesis(e.to_string())
}

fn terms(lc: &LinearCombination<Scalar>) -> impl Iterator<Item = (Column, &Scalar)> {
    lc.iter().map(|(var, coeff)| {
        let col = match var.get_unchecked() {
            Index::Input(i) => Column::Input(i),
            Index::Aux(i) => Column::Aux(i),
        };
        (col, coeff)
    })
}

struct RecordingCs(R1csBuilder);

impl ConstraintSystem<Scalar> for RecordingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Aux(self.0.alloc_aux())))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Input(self.0.alloc_input())))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        self.0.enforce(terms(&a), terms(&b), terms(&c));
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
}

/// Counts what [`RecordingCs`] would record, before and from the block on.
struct CountingCs<'a> {
    block: &'a str,
    depth: usize,
    inputs: usize,
    aux: usize,
    /// Inputs and aux allocated before the block.
    at_block: Option<(usize, usize)>,
    /// Before the block, and from it on.
    constraints: [u64; 2],
    nonzeros: [u64; 2],
    a_aux: Vec<bool>,
    b_aux: Vec<bool>,
    b_inputs: Vec<bool>,
}

impl CountingCs<'_> {
    fn part(&self) -> usize {
        usize::from(self.at_block.is_some())
    }
}

fn mark(v: &mut Vec<bool>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, false);
    }
    v[i] = true;
}

impl ConstraintSystem<Scalar> for CountingCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LB: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
        LC: FnOnce(LinearCombination<Scalar>) -> LinearCombination<Scalar>,
    {
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        let part = self.part();
        self.constraints[part] += 1;
        self.nonzeros[part] += (a.iter().count() + b.iter().count() + c.iter().count()) as u64;
        for (var, _) in a.iter() {
            if let Index::Aux(i) = var.get_unchecked() {
                mark(&mut self.a_aux, i);
            }
        }
        for (var, _) in b.iter() {
            match var.get_unchecked() {
                Index::Aux(i) => mark(&mut self.b_aux, i),
                Index::Input(i) => mark(&mut self.b_inputs, i),
            }
        }
    }

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0 && self.at_block.is_none() && name().into().starts_with(self.block) {
            self.at_block = Some((self.inputs, self.aux));
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

/// Computes values only; the gadgets that synthesise faster when they know
/// it (neptune's Poseidon) use the bulk methods.
struct WitnessCs<'a> {
    inputs: Vec<Scalar>,
    aux: Vec<Scalar>,
    /// Namespace nesting: only top-level names are looked at (naming costs
    /// a `format!` in most gadgets).
    depth: usize,
    /// The name prefix of the block to find, and where it began.
    block: Option<&'a str>,
    block_start: Option<(usize, usize)>,
}

impl<'a> WitnessCs<'a> {
    fn new(block: Option<&'a str>) -> Self {
        WitnessCs {
            inputs: vec![Scalar::ONE],
            aux: vec![],
            depth: 0,
            block,
            block_start: None,
        }
    }
}

impl ConstraintSystem<Scalar> for WitnessCs<'_> {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Scalar, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
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

    fn push_namespace<NR, N>(&mut self, name: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
        if self.depth == 0
            && self.block_start.is_none()
            && let Some(block) = self.block
            && name().into().starts_with(block)
        {
            self.block_start = Some((self.inputs.len(), self.aux.len()));
        }
        self.depth += 1;
    }

    fn pop_namespace(&mut self) {
        self.depth = self.depth.saturating_sub(1);
    }

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }

    fn is_witness_generator(&self) -> bool {
        true
    }

    fn extend_inputs(&mut self, new_inputs: &[Scalar]) {
        self.inputs.extend_from_slice(new_inputs);
    }

    fn extend_aux(&mut self, new_aux: &[Scalar]) {
        self.aux.extend_from_slice(new_aux);
    }

    fn allocate_empty(&mut self, aux_n: usize, inputs_n: usize) -> (&mut [Scalar], &mut [Scalar]) {
        let (a0, i0) = (self.aux.len(), self.inputs.len());
        self.aux.resize(a0 + aux_n, Scalar::ZERO);
        self.inputs.resize(i0 + inputs_n, Scalar::ZERO);
        (&mut self.aux[a0..], &mut self.inputs[i0..])
    }

    fn allocate_empty_inputs(&mut self, n: usize) -> &mut [Scalar] {
        let i0 = self.inputs.len();
        self.inputs.resize(i0 + n, Scalar::ZERO);
        &mut self.inputs[i0..]
    }

    fn allocate_empty_aux(&mut self, n: usize) -> &mut [Scalar] {
        let a0 = self.aux.len();
        self.aux.resize(a0 + n, Scalar::ZERO);
        &mut self.aux[a0..]
    }

    fn inputs_slice(&self) -> &[Scalar] {
        &self.inputs
    }

    fn aux_slice(&self) -> &[Scalar] {
        &self.aux
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        Block {
            piece: WitnessPiece::new(inputs, aux),
            start: (3, 3),
        }
    }

    #[test]
    fn blocks_join_into_the_shared_part_then_each_block() {
        let w = join(vec![block(100, 1), block(100, 2), block(100, 3)]).unwrap();
        let f = |v: &[u64]| v.iter().map(|&v| fr(s(v))).collect::<Vec<_>>();
        assert_eq!(
            w.inputs,
            [vec![fr(Scalar::ONE)], f(&[100, 101, 1, 2, 3])].concat()
        );
        assert_eq!(w.aux, f(&[110, 111, 112, 21, 22, 22, 23, 23, 24]));
    }

    #[test]
    fn blocks_of_different_shared_parts_do_not_join() {
        assert!(join(vec![block(100, 1), block(200, 2)]).is_none());
        assert!(join(vec![]).is_none());
    }
}
