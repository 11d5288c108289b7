//! [`CountingCs`]: what recording would hold, counted.

use blstrs::Scalar;

use super::{Split, Synthesis, Terms};
use crate::Error;
use crate::r1cs::Column;

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

/// Counts what [`RecordingCs`](super::RecordingCs) would record, before a
/// split and from it on. Values are never asked for.
#[derive(Debug)]
pub struct CountingCs {
    split: Split,
    inputs: usize,
    aux: usize,
    /// Before the split, and from it on.
    constraints: [u64; 2],
    nonzeros: [u64; 2],
    a_aux: Vec<bool>,
    b_aux: Vec<bool>,
    b_inputs: Vec<bool>,
}

impl CountingCs {
    /// Counts a one-block circuit split where its block begins: at the
    /// first top-level namespace whose name starts with `prefix`.
    pub fn split_at(prefix: &str) -> Self {
        CountingCs {
            split: Split::new(prefix),
            inputs: 1,
            aux: 0,
            constraints: [0; 2],
            nonzeros: [0; 2],
            a_aux: Vec::new(),
            b_aux: Vec::new(),
            b_inputs: vec![false],
        }
    }

    /// `(shared part, block)`. A circuit of `k` such blocks counts
    /// `shared.plus_times(block, k)`: each block's constraints reach the
    /// shared variables as the first one's do.
    ///
    /// # Errors
    /// [`Error::Failed`] when the circuit has no namespace of the prefix.
    pub fn finish(self) -> Result<(Counts, Counts), Error> {
        let (start_inputs, start_aux) = self.split.at()?;
        let count = |v: &[bool], from: usize, to: usize| {
            v.get(from..to.min(v.len()))
                .map_or(0, |s| s.iter().filter(|&&b| b).count() as u64)
        };
        let (ai, aa) = (self.inputs, self.aux);
        let shared = Counts {
            constraints: self.constraints[0],
            inputs: start_inputs as u64,
            aux: start_aux as u64,
            nonzeros: self.nonzeros[0],
            a_aux: count(&self.a_aux, 0, start_aux),
            b_inputs: count(&self.b_inputs, 0, start_inputs),
            b_aux: count(&self.b_aux, 0, start_aux),
        };
        let block = Counts {
            constraints: self.constraints[1],
            inputs: (ai - start_inputs) as u64,
            aux: (aa - start_aux) as u64,
            nonzeros: self.nonzeros[1],
            a_aux: count(&self.a_aux, start_aux, aa),
            b_inputs: count(&self.b_inputs, start_inputs, ai),
            b_aux: count(&self.b_aux, start_aux, aa),
        };
        Ok((shared, block))
    }
}

/// Inline: the front ends call it, across crates, for every term of A and B.
#[inline]
fn mark(v: &mut Vec<bool>, i: usize) {
    if v.len() <= i {
        v.resize(i + 1, false);
    }
    v[i] = true;
}

impl Synthesis for CountingCs {
    fn aux<E>(&mut self, _: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        self.aux += 1;
        Ok(self.aux - 1)
    }

    fn input<E>(&mut self, _: impl FnOnce() -> Result<Scalar, E>) -> Result<usize, E> {
        self.inputs += 1;
        Ok(self.inputs - 1)
    }

    fn enforce<L: Terms>(&mut self, abc: impl FnOnce() -> [L; 3]) {
        let [a, b, c] = abc();
        let part = usize::from(self.split.passed());
        self.constraints[part] += 1;
        self.nonzeros[part] += (a.terms().count() + b.terms().count() + c.terms().count()) as u64;
        for (col, _) in a.terms() {
            if let Column::Aux(i) = col {
                mark(&mut self.a_aux, i);
            }
        }
        for (col, _) in b.terms() {
            match col {
                Column::Aux(i) => mark(&mut self.b_aux, i),
                Column::Input(i) => mark(&mut self.b_inputs, i),
            }
        }
    }

    fn push_namespace<N: Into<String>>(&mut self, name: impl FnOnce() -> N) {
        self.split.push(name, (self.inputs, self.aux));
    }

    fn pop_namespace(&mut self) {
        self.split.pop();
    }
}
